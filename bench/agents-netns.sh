#!/usr/bin/env bash
# 64 `benchlab agent` processes, each on a host of its own (a network
# namespace with its own address), register with one controller and start
# one mix together (issue 27). As root: a hub namespace holds a bridge
# (198.18.0.1/24, RFC 2544's benchmarking range: nothing else is routed
# there), the controller and the target (`benchlab serve`); each agent's
# namespace hangs on the bridge by a veth pair, with address
# 198.18.0.(11+I). Certificates for mutual TLS are made with `benchlab lab
# certs` in a temp dir. Each round runs one mix of AGENTS clients, one per
# agent, each with USERS users thinking THINK between requests for DUR (a
# small load each), and prints:
#   - registration: from launching the first agent process to the last
#     agent registered (process starts, TLS handshakes and clock checks of
#     all of them), and from the first registration to the last;
#   - the mix's start spread from results.json (docs/counting.md, "Start
#     spread") with the clocks' uncertainty and the worst clock check's
#     round trip;
#   - the machine's own noise at that instant: AGENTS plain threads of a
#     small C program (the probe) sleep to the start instant the controller
#     announces ("mix 1: 64 clients start at …") and note how late they
#     woke, as bench/agents-start.sh's test does in one process;
#   - requests and responses (errors), summed over the clients.
# Everything it makes (namespaces with their links, processes, the temp
# dir) is removed on exit, Ctrl-C included; every wait is bounded.
#
# Usage: sudo bench/agents-netns.sh [-h]
#   Environment (defaults in brackets):
#     AGENTS [64]     agents (1-240), one namespace each
#     REPEATS [3]     rounds, each with a fresh controller and agents
#     DUR [2s]        the mix's length
#     USERS [1]       virtual users per client
#     THINK [200ms]   think time between a user's requests
#     PRECONNECT [0]  1: the mix says `preconnect = true` (each user's
#                     connection opened before the start); both: rounds
#                     alternate, without it first, each line says which
#     BENCHLAB [target/release/benchlab]  the binary (build it with
#                     `cargo build --release -p benchlab`)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; }
case ${1:-} in
  -h|--help) usage; exit 0 ;;
  '') ;;
  *) echo "agents-netns: unknown argument '$1' (try --help)" >&2; exit 2 ;;
esac

AGENTS=${AGENTS:-64}
REPEATS=${REPEATS:-3}
DUR=${DUR:-2s}
USERS=${USERS:-1}
THINK=${THINK:-200ms}
PRECONNECT=${PRECONNECT:-0}
BENCHLAB=${BENCHLAB:-$ROOT/target/release/benchlab}

die() { echo "agents-netns: $*" >&2; exit 2; }
[[ $AGENTS =~ ^[0-9]+$ ]] && ((AGENTS >= 1 && AGENTS <= 240)) || die "AGENTS must be 1-240 (addresses 198.18.0.11-250), not '$AGENTS'"
[[ $REPEATS =~ ^[0-9]+$ ]] && ((REPEATS >= 1 && REPEATS <= 100)) || die "REPEATS must be 1-100, not '$REPEATS'"
[[ $PRECONNECT =~ ^(0|1|both)$ ]] || die "PRECONNECT must be 0, 1 or both, not '$PRECONNECT'"
[[ $USERS =~ ^[0-9]+$ ]] && ((USERS >= 1)) || die "USERS must be a whole number ≥ 1, not '$USERS'"
[ "$(id -u)" -eq 0 ] || die "network namespaces need root"
command -v ip >/dev/null || die "ip (Debian package iproute2) is needed"
command -v cc >/dev/null || die "cc (Debian package gcc) is needed for the wake-up probe"
command -v jq >/dev/null || die "jq is needed to read results.json"
[ -x "$BENCHLAB" ] || die "no benchlab binary at $BENCHLAB: cargo build --release -p benchlab, or set BENCHLAB"

TMP=$(mktemp -d /tmp/agents-netns.XXXXXX)
PREFIX="blns-$$-"
HUB="${PREFIX}hub"
namespaces=()
pids=()

cleanup() {
  local p ns
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  # Deleting a namespace deletes the veth ends in it, and with them their
  # peers on the bridge.
  for ns in "${namespaces[@]}"; do ip netns del "$ns" 2>/dev/null || true; done
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The probe: timestamps each line of the controller's stderr (for the
# registration times) and, at a line announcing a mix's start instant,
# puts N threads to sleep until it (absolute, on the realtime clock) and
# prints how late they woke.
cat >"$TMP/probe.c" <<'EOF'
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static struct timespec target;
static long *late_ns;
static int threads;
static int mix;

static void *sleeper(void *arg) {
  long i = (long)arg;
  struct timespec now;
  while (clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &target, NULL) != 0) {}
  clock_gettime(CLOCK_REALTIME, &now);
  late_ns[i] = (now.tv_sec - target.tv_sec) * 1000000000L + (now.tv_nsec - target.tv_nsec);
  return NULL;
}

static int cmp(const void *a, const void *b) {
  long x = *(const long *)a, y = *(const long *)b;
  return (x > y) - (x < y);
}

/* Joins the sleepers off the reading thread, so the controller's lines
   keep being read (and timestamped) meanwhile. */
static void *reaper(void *arg) {
  pthread_t *t = arg;
  for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
  qsort(late_ns, threads, sizeof *late_ns, cmp);
  printf("probe: mix %d: %d plain threads woke up to %ld us late (median %ld us)\n", mix, threads,
         late_ns[threads - 1] / 1000, late_ns[threads / 2] / 1000);
  fflush(stdout);
  return NULL;
}

int main(int argc, char **argv) {
  threads = argc > 1 ? atoi(argv[1]) : 64;
  if (threads < 1 || threads > 1000) return 2;
  late_ns = calloc(threads, sizeof *late_ns);
  pthread_t *t = calloc(threads, sizeof *t), reap;
  int probing = 0;
  char line[4096];
  while (fgets(line, sizeof line, stdin)) {
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    printf("%ld.%06ld %s", (long)now.tv_sec, now.tv_nsec / 1000, line);
    fflush(stdout);
    long sec, usec;
    char *at = strstr(line, " start at ");
    if (!probing && at && sscanf(line, "mix %d:", &mix) == 1 && sscanf(at, " start at %ld.%6ld", &sec, &usec) == 2) {
      target.tv_sec = sec;
      target.tv_nsec = usec * 1000;
      for (long i = 0; i < threads; i++) pthread_create(&t[i], NULL, sleeper, (void *)i);
      pthread_create(&reap, NULL, reaper, t);
      probing = 1;
    }
  }
  if (probing) pthread_join(reap, NULL);
  return 0;
}
EOF
cc -O2 -pthread -o "$TMP/probe" "$TMP/probe.c"

# The hub: bridge, controller and server.
ip netns add "$HUB"
namespaces+=("$HUB")
ip -n "$HUB" link set lo up
ip -n "$HUB" link add br0 type bridge
ip -n "$HUB" addr add 198.18.0.1/24 dev br0
ip -n "$HUB" link set br0 up
for ((i = 0; i < AGENTS; i++)); do
  ns="${PREFIX}$i"
  ip netns add "$ns"
  namespaces+=("$ns")
  ip -n "$HUB" link add "v$i" type veth peer name eth0 netns "$ns"
  ip -n "$HUB" link set "v$i" master br0 up
  ip -n "$ns" addr add "198.18.0.$((11 + i))/24" dev eth0
  ip -n "$ns" link set eth0 up
  ip -n "$ns" link set lo up
done

mkdir -p "$TMP/www"
head -c 4096 /dev/zero | tr '\0' x >"$TMP/www/4k.html"
ip netns exec "$HUB" "$BENCHLAB" serve --root "$TMP/www" --listen 198.18.0.1:8080 >"$TMP/serve.log" 2>&1 &
pids+=($!)
for ((t = 0; ; t++)); do
  ip netns exec "$HUB" bash -c 'exec 3<>/dev/tcp/198.18.0.1/8080' 2>/dev/null && break
  ((t < 100)) || die "benchlab serve does not listen on 198.18.0.1:8080: $(cat "$TMP/serve.log")"
  sleep 0.1
done
# From an agent's namespace too: the bridge forwards.
ip netns exec "${PREFIX}$((AGENTS - 1))" bash -c 'exec 3<>/dev/tcp/198.18.0.1/8080' \
  || die "198.18.0.1:8080 cannot be reached from agent $((AGENTS - 1))'s namespace"

"$BENCHLAB" lab certs --out "$TMP/certs" --agents "$AGENTS" --controller-name 198.18.0.1 >/dev/null 2>&1

cat >"$TMP/suite.toml" <<EOF
name = "agents-netns"
target = "http://198.18.0.1:8080"
seed = 5
# Each client loads from its agent's own address.
client_addresses = false

[defaults]
length = "$DUR"
ramp_up = "0s"
ramp_down = "0s"
threads_per_client = $USERS
think_time = "$THINK"
persistent_percent = 100
timeout = "5s"

[workloads.one]
[[workloads.one.class]]
name = "page"
percent = 100
[[workloads.one.class.url]]
path = "/4k.html"
size = 4096

[[mix]]
clients = $AGENTS
EOF
# The same mix with its users connected before the start.
sed 's/^timeout = "5s"$/timeout = "5s"\npreconnect = true/' "$TMP/suite.toml" >"$TMP/suite-preconnect.toml"
grep -q '^preconnect = true$' "$TMP/suite-preconnect.toml" || die "could not write the preconnect suite"

echo "$(date -u +"%Y-%m-%d %H:%M UTC"), $(nproc) CPUs, $(uname -r), $BENCHLAB ($("$BENCHLAB" --version 2>/dev/null || echo '?'))"
echo "$AGENTS agents in network namespaces, one client each: $USERS user(s), think $THINK, $DUR"
for ((k = 1; k <= REPEATS; k++)); do
  out="$TMP/round-$k"
  mkdir -p "$out"
  port=$((7000 + k))
  load=$(cut -d' ' -f1-3 /proc/loadavg)
  case $PRECONNECT in
    1) pre=1 ;;
    both) pre=$(((k + 1) % 2)) ;;
    *) pre=0 ;;
  esac
  if ((pre)); then suite="$TMP/suite-preconnect.toml" how="preconnect"; else suite="$TMP/suite.toml" how="connect at the start"; fi
  timeout -k 5 120 ip netns exec "$HUB" "$BENCHLAB" run "$suite" --agents "$AGENTS" \
    --listen "198.18.0.1:$port" --tls-dir "$TMP/certs" --agent-timeout 60s --out "$out/results" \
    >"$out/controller.out" 2> >("$TMP/probe" "$AGENTS" >"$out/controller.log") &
  ctl=$!
  pids+=("$ctl")
  for ((t = 0; ; t++)); do
    grep -q 'listening on' "$out/controller.log" 2>/dev/null && break
    ((t < 300)) || die "round $k: the controller does not listen: $(cat "$out/controller.log")"
    sleep 0.1
  done
  launched=$EPOCHREALTIME
  agent_pids=()
  for ((i = 0; i < AGENTS; i++)); do
    timeout -k 5 120 ip netns exec "${PREFIX}$i" "$BENCHLAB" agent --controller "198.18.0.1:$port" \
      --ca "$TMP/certs/ca.pem" --cert "$TMP/certs/agent-$i.pem" --key "$TMP/certs/agent-$i.key" \
      >"$out/agent-$i.log" 2>&1 &
    agent_pids+=($!)
    pids+=($!)
  done
  status=0
  wait "$ctl" || status=$?
  failed=0
  for p in "${agent_pids[@]}"; do wait "$p" || failed=$((failed + 1)); done
  # The probe writes its last line after the controller's stderr closes.
  for ((t = 0; t < 50; t++)); do grep -q '^probe:' "$out/controller.log" && break; sleep 0.1; done
  if [ "$status" -ne 0 ] || [ ! -f "$out/results/results.json" ]; then
    echo "round $k: the controller exited $status; its log:" >&2
    tail -20 "$out/controller.log" >&2
    exit 1
  fi
  r="$out/results/results.json"
  regs=$(grep -E 'benchlab controller: agent [0-9]+ registered' "$out/controller.log" | cut -d' ' -f1)
  nregs=$(wc -l <<<"$regs")
  first=$(sort -n <<<"$regs" | head -1)
  last=$(sort -n <<<"$regs" | tail -1)
  ms() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.0f", (b - a) * 1000 }'; }
  ahead=$(grep -oE 'start at [0-9.]+ \(Unix time, this clock\), in [0-9]+ ms' "$out/controller.log" | grep -oE '[0-9]+ ms$' || echo '? ms')
  probe=$(grep '^probe:' "$out/controller.log" | sed 's/^probe: mix 1: //' || echo 'no probe figure')
  spread=$(jq -r '.mixes[0].start_spread | "start spread \(.spread_us) µs over \(.clients) clients (\(.min_us) to \(.max_us) µs after the start, the latest client \(.latest_client); clocks known to ±\(.clock_uncertainty_us) µs)"' "$r")
  rtt=$(jq '[.environment.agents[].clock[].rtt_us] | max' "$r")
  counts=$(jq -r '.mixes[0] | "\([.client_data[].requests] | add) requests, \([.client_data[].errors_total] | add) errors"' "$r")
  echo "round $k, $how (load average $load): $nregs agents registered $(ms "$launched" "$last") ms after the first was launched" \
    "(first $(ms "$launched" "$first") ms, first to last $(ms "$first" "$last") ms); mix 1 announced $ahead ahead;" \
    "$spread; $probe; worst clock-check round trip $rtt µs; $counts; agents that failed: $failed"
done
