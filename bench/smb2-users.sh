#!/usr/bin/env bash
# Memory and threads of benchlab's own SMB2 client (smb://, users on event
# loops) at few and at many users, release build, against one
# unprivileged smbd started here (loopback high port, temp config, one
# guest share): for each user count, one `benchlab run` of a small disk
# mix (each user its workspace of 4 KB, a think time between operations
# so smbd's thousand processes keep up), and of that process:
#   - peak RSS: the kernel's ru_maxrss of the process (wait4), exact;
#   - threads: the most /proc/PID/status said, sampled every 20 ms;
#   - operations/s, errors and not sent (results.json), client CPU µs an
#     operation (client_cpu.us_per_request);
#   - RSS per user: (peak RSS at the count − peak RSS at the smallest
#     count) ÷ the users between them, per round.
# The counts run once a round, the rounds interleaved (each starts one
# count later); figures are medians of the rounds. The issue's goal:
# 1,000 users on 2 cores against Samba, RSS ≤ 256 MB.
#
# Usage: bench/smb2-users.sh [-h]
#   Environment (defaults in brackets):
#     USERS ["10 1000"]  the user counts (clients of THREADS users each
#                        where the count divides by it, else clients of 1)
#     THREADS [10]       users (threads) a client: a client's counts are
#                        kept per client and event loop, so RSS grows
#                        with the clients as well as with the users
#     DUR [5]            seconds of each mix (ramp-up 1 s, ramp-down 0.5 s)
#     THINK [200ms]      think time between a user's operations
#     REPEATS [3]        rounds
#     BENCHLAB [target/release/benchlab]
#     OUT_DIR [bench/out]  the report (smb2-users-STAMP.txt) and per-run
#                          rows (smb2-users-STAMP.tsv)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; }
case ${1:-} in
  -h|--help) usage; exit 0 ;;
  "") ;;
  *) echo "smb2-users: unknown argument '$1' (try --help)" >&2; exit 2 ;;
esac
USERS=${USERS:-10 1000}
DUR=${DUR:-5}
THINK=${THINK:-200ms}
REPEATS=${REPEATS:-3}
THREADS=${THREADS:-10}
case $THREADS in ''|*[!0-9]*|0) echo "smb2-users: THREADS: expected a count above 0, got '$THREADS'" >&2; exit 2 ;; esac
OUT_DIR=${OUT_DIR:-bench/out}
BENCHLAB=${BENCHLAB:-target/release/benchlab}
[ -x /usr/sbin/smbd ] || { echo "smb2-users: smbd is not installed (apt-get install samba)" >&2; exit 1; }
[ -x "$BENCHLAB" ] || { echo "smb2-users: no $BENCHLAB (cargo build --release -p benchlab)" >&2; exit 1; }
for n in $USERS; do
  case $n in ''|*[!0-9]*|0) echo "smb2-users: USERS: expected counts above 0, got '$n'" >&2; exit 2 ;; esac
done
# A socket per user, and smbd a process (and its descriptors) per user.
ulimit -n 20000 2>/dev/null || true
mkdir -p "$OUT_DIR"
STAMP=$(date -u +%Y%m%d-%H%M%S)
REPORT="$OUT_DIR/smb2-users-$STAMP.txt"
ROWS="$OUT_DIR/smb2-users-$STAMP.tsv"
WORK=$(mktemp -d)
# shellcheck source=lib/smbd.sh
. "$ROOT/bench/lib/smbd.sh"
cleanup() {
  smbd_stop
  rm -rf "$WORK"
}
trap cleanup EXIT

# --- smbd ------------------------------------------------------------------
smbd_start "$WORK/smb" guest
TARGET="smb://127.0.0.1:$PORT/bench"

# The 1,000-user test's disk mix (crates/cli/tests/smb2.rs): a small
# workspace a user, every kind of operation.
cat > "$WORK/mix.toml" <<'TOML'
name = "tiny"
workspace = "4KB"
read_size = "1KiB"
write_size = "1KiB"
[file_size]
median = "1KB"
p90 = "2KB"
min = "512"
max = "2KB"
[operations]
write = 20
read = 20
open = 10
query_path = 20
query_file = 10
find = 5
create = 2
delete = 2
rename = 2
lock = 4
flush = 5
TOML

suite() { # USERS → $WORK/suite.toml
  local clients=$1 threads=1
  if [ $(($1 % THREADS)) = 0 ]; then clients=$(($1 / THREADS)); threads=$THREADS; fi
  cat > "$WORK/suite.toml" <<TOML
name = "smb2-users"
target = "$TARGET"
seed = 23
[workloads.w]
disk_mix = "$WORK/mix.toml"
[defaults]
ramp_up = "1s"
ramp_down = "500ms"
length = "${DUR}s"
think_time = "$THINK"
[[mix]]
clients = $clients
threads_per_client = $threads
TOML
}

printf 'round\tusers\tpeak_rss_kb\tthreads\toperations\tops_per_s\terrors\tnot_sent\tcpu_us_per_op\twall_s\tload1\n' > "$ROWS"
run_count() { # ROUND USERS
  echo "round $1: $2 users, $THREADS a client ($DUR s, think $THINK)" >&2
  suite "$2"
  rm -rf "$WORK/out" "$S/share/clients"
  python3 - "$BENCHLAB" "$WORK/suite.toml" "$WORK/out" "$WORK/run.log" "$1" "$2" >> "$ROWS" <<'PY'
import json, os, subprocess, sys, time
exe, suite, out, log, rnd, users = sys.argv[1:7]
t0 = time.monotonic()
with open(log, "w") as lf:
    p = subprocess.Popen([exe, "run", suite, "--out", out], stdout=lf, stderr=subprocess.STDOUT)
threads = 0
while True:
    try:
        with open(f"/proc/{p.pid}/status") as f:
            for line in f:
                if line.startswith("Threads:"):
                    threads = max(threads, int(line.split()[1]))
    except OSError:
        pass
    # Reaped here (wait4) so its rusage is the process's own.
    pid, status, ru = os.wait4(p.pid, os.WNOHANG)
    if pid:
        break
    time.sleep(0.02)
wall = time.monotonic() - t0
if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
    sys.stderr.write(open(log).read()[-3000:])
    sys.exit(f"benchlab run failed ({users} users)")
m = json.load(open(os.path.join(out, "results.json")))["mixes"][0]
load1 = open("/proc/loadavg").read().split()[0]
print("\t".join(str(x) for x in [rnd, users, ru.ru_maxrss, threads, m["requests"], round(m["requests_per_sec"], 1),
      m["errors_total"], m["files"]["not_sent"], round(m["client_cpu"]["us_per_request"], 2), round(wall, 1), load1]))
PY
}

COUNTS=($USERS)
N=${#COUNTS[@]}
for r in $(seq "$REPEATS"); do
  for i in $(seq 0 $((N - 1))); do
    run_count "$r" "${COUNTS[$(((i + r - 1) % N))]}"
  done
done

python3 - "$ROWS" "$DUR" "$THINK" "$REPEATS" "$(/usr/sbin/smbd -V)" "$(nproc)" "$BENCHLAB" "$THREADS" <<'PY' | tee "$REPORT"
import csv, statistics, sys
rows_path, dur, think, repeats, smbd, cpus, exe, threads = sys.argv[1:9]
rows = list(csv.DictReader(open(rows_path), delimiter="\t"))
med = statistics.median
counts = sorted({int(r["users"]) for r in rows})
def of(n): return [r for r in rows if int(r["users"]) == n]
def m(n, k): return med(float(r[k]) for r in of(n))
base = counts[0]
print(f"SMB2 client users bench: {exe}, {threads} users a client, {dur} s mixes (ramp-up 1 s, ramp-down 0.5 s), think {think},")
print(f"{repeats} interleaved rounds, medians; {cpus} CPUs; server {smbd} on loopback")
loads = [float(r["load1"]) for r in rows]
print(f"load average (1 min) at the runs' ends: {min(loads):.1f}-{max(loads):.1f}")
print()
print(f"{'users':>6} {'peak RSS MB':>12} {'threads':>8} {'operations':>11} {'ops/s':>9} {'errors':>7} {'not sent':>9} {'µs CPU/op':>10} {'KiB/user':>9}")
for n in counts:
    per_user = ""
    if n != base:
        by = {r["round"]: float(r["peak_rss_kb"]) for r in of(base)}
        v = [(float(r["peak_rss_kb"]) - by[r["round"]]) / (n - base) for r in of(n) if r["round"] in by]
        per_user = f"{med(v):.1f}" if v else ""
    print(f"{n:>6} {m(n, 'peak_rss_kb') / 1024:>12.1f} {m(n, 'threads'):>8.0f} {m(n, 'operations'):>11,.0f} "
          f"{m(n, 'ops_per_s'):>9,.0f} {m(n, 'errors'):>7.0f} {m(n, 'not_sent'):>9.0f} {m(n, 'cpu_us_per_op'):>10.1f} {per_user:>9}")
print()
print("per round (peak RSS MB):")
for n in counts:
    print(f"  {n:>5} users: " + ", ".join(f"{float(r['peak_rss_kb']) / 1024:.1f}" for r in of(n)))
PY
echo "report: $REPORT (rows: $ROWS)" >&2
