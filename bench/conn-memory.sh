#!/usr/bin/env bash
# What users cost the client: peak RSS and client CPU per request of
# `benchlab http` against users, keep-alive, plain and TLS, against one local
# nginx (a 4096-byte file), with think time so nginx copes; and HTTP/2
# streams on few connections. See bench/README.md, "Cost curves".
#
# Usage: bench/conn-memory.sh [-h]
#   Environment (defaults in brackets):
#     USERS ["10 100 1000 4000 18000"]  virtual users per run (--threads)
#     MODES ["plain tls"]   plain (http://) and/or tls (https://, full handshakes)
#     THINK [5s]            think time between a response and the next request
#     DUR [12]              seconds per plain and HTTP/2 run
#     TLS_DUR [40]          seconds per TLS run (full handshakes arrive slower)
#     NGINX_WORKERS [2]     nginx worker_processes
#     H2 ["100x100"]        HTTP/2 runs, CONNECTIONSxSTREAMS each (h2c); empty: none
#     SOURCES [127.0.0.1-127.0.0.8]  --source-addresses, spread over 127.0.0.0/8
#     BENCHLAB [target/release/benchlab]
#     NGINX [nginx on PATH, else /usr/sbin/nginx]
#     OUT_DIR [bench/out]   the TSV and each run's output
# Per-connection KiB = (RSS(N) − RSS(first N)) / (opened(N) − opened(first N)),
# RSS the largest sampled in the run and opened the connections it opened
# (the users that arrived: a server slower to accept leaves some waiting,
# which benchlab reports). The process's
# descriptor limit (ulimit -n) bounds the users (the hard limit is raised to
# at most it); nginx gets the same limit. Where a run's users need more
# descriptors than one process may hold (users > ulimit -n − 1000), they are
# split evenly over as many benchlab processes as it takes, run at once: the
# RSS, CPU and counts are those processes' sums, and the per-connection
# figure subtracts each process's share of the first run (procs column).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
if [[ ${1:-} == -h || ${1:-} == --help ]]; then
  sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
  exit 0
fi
[[ $# -eq 0 ]] || { echo "conn-memory: unknown argument '$1' (try --help)" >&2; exit 2; }

USERS=${USERS:-10 100 1000 4000 18000}
MODES=${MODES:-plain tls}
THINK=${THINK:-5s}
DUR=${DUR:-12}
TLS_DUR=${TLS_DUR:-40}
NGINX_WORKERS=${NGINX_WORKERS:-2}
H2=${H2-100x100}
SOURCES=${SOURCES:-127.0.0.1-127.0.0.8}
BENCHLAB=${BENCHLAB:-target/release/benchlab}
OUT_DIR=${OUT_DIR:-bench/out}
if [[ -z ${NGINX:-} ]]; then NGINX=$(command -v nginx || echo /usr/sbin/nginx); fi
# nginx reads an environment variable NGINX of its own (inherited sockets):
# keep ours out of its environment.
export -n NGINX

die() { echo "conn-memory: $*" >&2; exit 1; }
[[ -x $BENCHLAB ]] || die "no benchlab at '$BENCHLAB' (cargo build --release -p benchlab)"
[[ -x $NGINX ]] || die "no nginx at '$NGINX' (apt-get install nginx-light)"
command -v openssl >/dev/null || die "openssl is needed (the TLS port's certificate)"
command -v python3 >/dev/null || die "python3 is needed (rusage, JSON)"
for v in DUR TLS_DUR NGINX_WORKERS; do [[ ${!v} =~ ^[0-9]+$ ]] || die "$v must be a whole number, got '${!v}'"; done
for n in $USERS; do [[ $n =~ ^[0-9]+$ ]] || die "USERS: '$n' is not a number"; done
for m in $MODES; do case $m in plain|tls) ;; *) die "MODES: '$m' (plain tls)" ;; esac; done
for h in $H2; do [[ $h =~ ^[0-9]+x[0-9]+$ ]] || die "H2: '$h' is not CONNECTIONSxSTREAMS"; done

ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
FDS=$(ulimit -n)
mkdir -p "$OUT_DIR"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/conn-memory.XXXXXX")
NGINX_PID=
cleanup() {
  local rc=$?
  if [[ -n $NGINX_PID ]] && kill -0 "$NGINX_PID" 2>/dev/null; then
    kill -TERM "$NGINX_PID" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$NGINX_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$NGINX_PID" 2>/dev/null || true
    wait "$NGINX_PID" 2>/dev/null || true
  fi
  rm -rf "$TMP"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# run: one benchlab; its RSS (the largest VmRSS sampled every 0.2 s), its
# CPU from wait4's rusage, and its JSON's counts:
# "rss_kib user_s sys_s requests errors opened exit".
cat >"$TMP/run.py" <<'PY'
import json, os, sys, time
out, cmd = sys.argv[1], sys.argv[2:]
pid = os.fork()
if pid == 0:
    fd = os.open(out + ".json", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, 1)
    fd = os.open(out + ".log", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, 2)
    os.execv(cmd[0], cmd)
rss = 0
while True:
    done, status, ru = os.wait4(pid, os.WNOHANG)
    if done:
        break
    try:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith("VmRSS:"):
                rss = max(rss, int(line.split()[1]))
    except OSError:
        pass
    time.sleep(0.2)
ok = errs = opened = -1
try:
    doc = json.load(open(out + ".json"))
    ok = sum(m.get("requests", 0) for m in doc["mixes"])
    errs = sum(m.get("errors_total", 0) for m in doc["mixes"])
    opened = sum(m.get("connections_opened", 0) for m in doc["mixes"])
except (ValueError, KeyError, TypeError, OSError):
    pass
print(rss, f"{ru.ru_utime:.3f}", f"{ru.ru_stime:.3f}", ok, errs, opened, os.waitstatus_to_exitcode(status))
PY

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
TLS_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
H2_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
mkdir -p "$TMP/www" "$TMP/logs"
# nginx's workers (nobody, when started as root) read the file.
chmod 755 "$TMP" "$TMP/www"
head -c 4096 /dev/zero | tr '\0' x >"$TMP/www/f"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj /CN=localhost \
  -keyout "$TMP/key.pem" -out "$TMP/cert.pem" 2>/dev/null
cat >"$TMP/nginx.conf" <<EOF
worker_processes $NGINX_WORKERS;
worker_rlimit_nofile $FDS;
error_log $TMP/logs/error.log warn;
pid $TMP/nginx.pid;
daemon off;
events { worker_connections $((FDS - 100)); multi_accept on; }
http {
  access_log off;
  client_body_temp_path $TMP/logs; proxy_temp_path $TMP/logs; fastcgi_temp_path $TMP/logs;
  uwsgi_temp_path $TMP/logs; scgi_temp_path $TMP/logs;
  keepalive_timeout 300s; keepalive_requests 1000000;
  http2_max_concurrent_streams 1000;
  server {
    listen 127.0.0.1:$PORT backlog=4096 reuseport;
    listen 127.0.0.1:$TLS_PORT ssl backlog=4096 reuseport;
    listen 127.0.0.1:$H2_PORT http2 backlog=4096;
    ssl_certificate $TMP/cert.pem; ssl_certificate_key $TMP/key.pem;
    root $TMP/www;
  }
}
EOF
"$NGINX" -p "$TMP" -c "$TMP/nginx.conf" &
NGINX_PID=$!
up=
for _ in $(seq 50); do
  kill -0 "$NGINX_PID" 2>/dev/null || break
  python3 -c "import socket; socket.create_connection(('127.0.0.1',$PORT),timeout=1)" 2>/dev/null && { up=1; break; }
  sleep 0.1
done
[[ -n $up ]] || die "nginx did not start: $(tail -3 "$TMP/logs/error.log" 2>/dev/null)"
TSV=$OUT_DIR/conn-memory.tsv
echo -e "case\tusers\tprocs\trss_kib\tcpu_s\trequests\terrors\topened\tcpu_us_per_request\texit" >"$TSV"
# Users one benchlab process can hold: its descriptors, less a margin for
# its own files (more users are split over processes, above).
PER_PROC=$((FDS - 1000))
one() { # case users seconds args... (the args hold --threads USERS)
  local name=$1 users=$2 secs=$3; shift 3
  local procs=$(((users + PER_PROC - 1) / PER_PROC)) p share args a
  local rss=0 us=0 ss=0 ok=0 errs=0 opened=0 rc=0 r u s o e n c pids=()
  for ((p = 0; p < procs; p++)); do
    # An even split; the first processes take the remainder.
    share=$((users / procs + (p < users % procs ? 1 : 0)))
    args=()
    for a in "$@"; do
      [[ $a == "$users" && ${#args[@]} -gt 0 && ${args[-1]} == --threads ]] && a=$share
      args+=("$a")
    done
    python3 "$TMP/run.py" "$OUT_DIR/conn-memory.$name.$users.$p" "$BENCHLAB" http --json --no-preflight \
      --os-threads 1 --duration "${secs}s" "${args[@]}" >"$TMP/one.$p" &
    pids+=($!)
  done
  wait "${pids[@]}" # not nginx
  for ((p = 0; p < procs; p++)); do
    read -r r u s o e n c <"$TMP/one.$p"
    rss=$((rss + r)) ok=$((ok + o)) errs=$((errs + e)) opened=$((opened + n))
    us=$(python3 -c "print($us + $u)") ss=$(python3 -c "print($ss + $s)")
    ((c > rc)) && rc=$c
  done
  local cpu per
  cpu=$(python3 -c "print(f'{$us+$ss:.3f}')")
  per=$(python3 -c "print(f'{($us+$ss)*1e6/$ok:.1f}' if $ok > 0 else '-')")
  echo -e "$name\t$users\t$procs\t$rss\t$cpu\t$ok\t$errs\t$opened\t$per\t$rc" >>"$TSV"
  printf '%-6s %6s users %2s proc %6s opened  %8s KiB RSS  %7s s CPU  %8s requests  %4s errors  %7s µs/request\n' \
    "$name" "$users" "$procs" "$opened" "$rss" "$cpu" "$ok" "$errs" "$per"
}

for m in $MODES; do
  url=http://127.0.0.1:$PORT/f tls=() secs=$DUR
  [[ $m == tls ]] && url=https://127.0.0.1:$TLS_PORT/f tls=(--insecure) secs=$TLS_DUR
  for n in $USERS; do
    one "$m" "$n" "$secs" "${tls[@]}" --threads "$n" --think-time "$THINK" --timeout 30s \
      --source-addresses "$SOURCES" "$url"
  done
done
for h in $H2; do
  c=${h%x*} s=${h#*x}
  one "h2" "$((c * s))" "$DUR" --http 2 --connections "$c" --streams "$s" --think-time "$THINK" \
    --timeout 30s "http://127.0.0.1:$H2_PORT/f"
done

# Per connection: against the first run of each case.
python3 - "$TSV" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
print("\nper connection, against each case's first run: (RSS(N) - RSS(N0)) / (opened(N) - opened(N0))")
base = {}
for r in rows:
    n, rss, procs = int(r["opened"]), int(r["rss_kib"]), int(r["procs"])
    if n < 0:
        continue
    # The first run's figures are per process: each process of a split run
    # carries one such share.
    b = base.setdefault(r["case"], (n / procs, rss / procs))
    if n > procs * b[0]:
        per = (rss - procs * b[1]) / (n - procs * b[0])
        print(f"  {r['case']:6} {r['users']:>6} users, {procs} process(es), {n:>6} opened: {per:.2f} KiB")
PY
echo "TSV: $TSV"
