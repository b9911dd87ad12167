#!/usr/bin/env bash
# benchlab serve vs nginx, one core each: requests/s on a 4096-byte file.
# The reference server must never be the bottleneck of benchlab's own tests:
# the target is serve ÷ nginx ≥ 0.5 with one worker each.
#
# Both servers are pinned to SERVER_CPUS (one worker: `worker_processes 1`,
# `benchlab serve --workers 1`) and loaded by `benchlab http --os-threads 1`
# (and wrk, when WRK=1) pinned to CLIENT_CPUS; runs are interleaved, the
# starting server alternating each round, so drift spreads over both.
#
# Usage: bench/serve-vs-nginx.sh [-h]
#   Environment (defaults in brackets):
#     DUR [5]              seconds per run
#     REPEATS [3]          runs per server and scenario
#     CONNS [64]           connections (benchlab --threads, wrk -c)
#     SCENARIOS ["keepalive close"]  keepalive: HTTP/1.1 persistent;
#                          close: HTTP/1.0, a new connection per request
#     CLIENT_CPUS [0]      taskset list for the load generator
#     SERVER_CPUS [1]      taskset list for both servers
#     WRK [0]              1: also load each server with wrk -t1 (keepalive only)
#     SERVE_ARGS []        extra `benchlab serve` flags, e.g. "--cache-max-file 0"
#     BENCHLAB [target/release/benchlab]
#     NGINX [nginx on PATH, else /usr/sbin/nginx]
#     OUT_DIR [bench/out]  the report (serve-vs-nginx-STAMP.txt) and run logs
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; }
case ${1:-} in
  -h|--help) usage; exit 0 ;;
  "") ;;
  *) echo "serve-vs-nginx: unknown argument '$1' (try --help)" >&2; exit 2 ;;
esac

DUR=${DUR:-5}
REPEATS=${REPEATS:-3}
CONNS=${CONNS:-64}
SCENARIOS=${SCENARIOS:-keepalive close}
CLIENT_CPUS=${CLIENT_CPUS:-0}
SERVER_CPUS=${SERVER_CPUS:-1}
WRK=${WRK:-0}
SERVE_ARGS=${SERVE_ARGS:-}
BENCHLAB=${BENCHLAB:-target/release/benchlab}
OUT_DIR=${OUT_DIR:-bench/out}
if [[ -z ${NGINX:-} ]]; then NGINX=$(command -v nginx || echo /usr/sbin/nginx); fi
# nginx reads an environment variable NGINX of its own (inherited sockets):
# keep ours out of its environment.
export -n NGINX

die() { echo "serve-vs-nginx: $*" >&2; exit 1; }
for v in DUR REPEATS CONNS; do
  [[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "$v must be a whole number ≥ 1, got '${!v}'"
done
for s in $SCENARIOS; do
  [[ $s == keepalive || $s == close ]] || die "SCENARIOS: '$s' is not keepalive or close"
done
[[ -x $BENCHLAB ]] || die "benchlab binary '$BENCHLAB' not found: cargo build --release -p benchlab, or set BENCHLAB="
[[ -x $NGINX ]] || die "nginx not found at '$NGINX' (apt-get install nginx-light, or set NGINX=)"
command -v taskset >/dev/null || die "taskset not found (util-linux)"
command -v python3 >/dev/null || die "python3 not found (reads benchlab's JSON)"
taskset -c "$CLIENT_CPUS" true 2>/dev/null || die "CLIENT_CPUS='$CLIENT_CPUS' is not a usable CPU list ($(nproc) CPUs)"
taskset -c "$SERVER_CPUS" true 2>/dev/null || die "SERVER_CPUS='$SERVER_CPUS' is not a usable CPU list ($(nproc) CPUs)"
if [[ $WRK == 1 ]] && ! command -v wrk >/dev/null; then echo "serve-vs-nginx: wrk not found; WRK=0" >&2; WRK=0; fi
BENCHLAB=$(cd "$(dirname "$BENCHLAB")" && pwd)/$(basename "$BENCHLAB")

TMP=$(mktemp -d)
NGINX_PID=
SERVE_PID=
cleanup() {
  [[ -n $NGINX_PID ]] && kill "$NGINX_PID" 2>/dev/null && wait "$NGINX_PID" 2>/dev/null
  [[ -n $SERVE_PID ]] && kill "$SERVE_PID" 2>/dev/null && wait "$SERVE_PID" 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mkdir -p "$TMP/www" "$TMP/logs" "$TMP/tmp" "$OUT_DIR"
head -c 4096 /dev/zero | tr '\0' 'x' >"$TMP/www/4k.html"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# ------------------------------------------------------------------ nginx
NGINX_PORT=$(free_port)
USER_LINE=
if [[ $(id -u) == 0 ]]; then USER_LINE="user root;"; fi
NGINX_ERR_FLAG=()
if "$NGINX" -h 2>&1 | grep -q -- '-e filename'; then NGINX_ERR_FLAG=(-e "$TMP/logs/nginx-error.log"); fi
cat >"$TMP/nginx.conf" <<EOF
$USER_LINE
worker_processes 1;
daemon off;
pid $TMP/nginx.pid;
error_log $TMP/logs/nginx-error.log warn;
events { worker_connections 16384; }
http {
  types { text/html html; }
  default_type application/octet-stream;
  access_log off;
  keepalive_requests 1000000;
  keepalive_timeout 75s;
  client_body_temp_path $TMP/tmp/body;
  proxy_temp_path $TMP/tmp/proxy;
  fastcgi_temp_path $TMP/tmp/fastcgi;
  uwsgi_temp_path $TMP/tmp/uwsgi;
  scgi_temp_path $TMP/tmp/scgi;
  server {
    listen 127.0.0.1:$NGINX_PORT;
    root $TMP/www;
  }
}
EOF
taskset -c "$SERVER_CPUS" "$NGINX" -p "$TMP/" -c "$TMP/nginx.conf" "${NGINX_ERR_FLAG[@]}" >"$TMP/logs/nginx.out" 2>&1 &
NGINX_PID=$!

# ------------------------------------------------------------------ benchlab serve
# shellcheck disable=SC2086 # SERVE_ARGS is a list of flags
taskset -c "$SERVER_CPUS" "$BENCHLAB" serve --workers 1 --root "$TMP/www" --listen 127.0.0.1:0 \
  --session-log "$TMP/session.log" $SERVE_ARGS >"$TMP/logs/serve.out" 2>"$TMP/logs/serve.err" &
SERVE_PID=$!

SERVE_URL=
for _ in $(seq 100); do
  SERVE_URL=$(sed -n 's|^listening on \(http://.*/\)$|\1|p' "$TMP/logs/serve.out")
  [[ -n $SERVE_URL ]] && break
  kill -0 "$SERVE_PID" 2>/dev/null || { cat "$TMP/logs/serve.err" >&2; die "benchlab serve did not start"; }
  sleep 0.05
done
[[ -n $SERVE_URL ]] || die "benchlab serve printed no address"
declare -A URL=([nginx]="http://127.0.0.1:$NGINX_PORT/4k.html" [serve]="${SERVE_URL}4k.html")
declare -A PID=([nginx]="" [serve]="$SERVE_PID")

for name in nginx serve; do
  ok=
  for _ in $(seq 100); do
    if python3 - "${URL[$name]}" <<'PY' 2>/dev/null; then ok=1; break; fi
import sys, urllib.request
with urllib.request.urlopen(sys.argv[1], timeout=1) as r:
    assert r.status == 200 and len(r.read()) == 4096
PY
    sleep 0.05
  done
  [[ -n $ok ]] || { cat "$TMP/logs/"* >&2; die "$name does not serve ${URL[$name]} (status 200, 4096 bytes)"; }
done
# nginx's worker is the master's child; its CPU time is what serving cost.
PID[nginx]=$(pgrep -P "$NGINX_PID" | head -n1)
[[ -n ${PID[nginx]} ]] || die "no nginx worker process found"

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
TICK=$(getconf CLK_TCK)

STAMP=$(date +%Y%m%d-%H%M%S)
REPORT=$OUT_DIR/serve-vs-nginx-$STAMP.txt
LOGS=$OUT_DIR/serve-vs-nginx-$STAMP.logs
mkdir -p "$LOGS"
{
  echo "benchlab serve vs nginx — requests/s on one core ($(date -Is))"
  echo "kernel:  $(uname -r)   CPUs: $(nproc)   CPU: $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')"
  echo "load:    $(uptime | sed 's/.*load average/load average/')  (before the runs)"
  echo "servers: $("$NGINX" -v 2>&1 | head -n1) worker_processes 1; benchlab serve --workers 1 ${SERVE_ARGS}; both on CPUs $SERVER_CPUS"
  echo "client:  benchlab http --threads $CONNS --os-threads 1 --duration ${DUR}s on CPUs $CLIENT_CPUS$([[ $WRK == 1 ]] && echo "; wrk -t1 -c$CONNS -d${DUR}s")"
  echo "file:    4096 bytes; $REPEATS repeats, interleaved"
  echo
  printf '%-9s %-6s %-8s %3s %10s %7s %12s %15s %11s\n' scenario server tool run 'req/s' errors 'server CPU%' 'server µs/req' 'client CPU%'
} | tee "$REPORT"

# One run: prints "req/s errors server_cpu_pct server_us_per_request client_cpu_pct".
run_one() { # scenario server tool round
  local scenario=$1 name=$2 tool=$3 round=$4 url=${URL[$2]} log="$LOGS/$1-$2-$3-$4"
  local before after
  before=$(cpu_ticks "${PID[$name]}")
  if [[ $tool == benchlab ]]; then
    local mode=1.1
    [[ $scenario == close ]] && mode=1.0
    timeout $((DUR + 30)) taskset -c "$CLIENT_CPUS" "$BENCHLAB" http --json --threads "$CONNS" --os-threads 1 \
      --duration "${DUR}s" --http "$mode" "$url" >"$log.json" 2>"$log.err" || true
    after=$(cpu_ticks "${PID[$name]}")
    python3 - "$log.json" "$before" "$after" "$TICK" "$DUR" <<'PY'
import json, sys
path, before, after, tick, dur = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
try:
    r = json.load(open(path))
except Exception:
    print("0 -1 0 0 0"); sys.exit()
cpu_s = (after - before) / tick
us = 1e6 * cpu_s / r["requests"] if r["requests"] else 0
print(f'{r["requests_per_sec"]:.0f} {r["errors_total"]} {100 * cpu_s / dur:.0f} {us:.1f} '
      f'{100 * r["client_cpu"]["utilisation"]:.0f}')
PY
  else
    timeout $((DUR + 30)) taskset -c "$CLIENT_CPUS" wrk -t1 -c"$CONNS" -d"${DUR}s" "$url" >"$log.wrk" 2>&1 || true
    after=$(cpu_ticks "${PID[$name]}")
    awk -v b="$before" -v a="$after" -v t="$TICK" -v d="$DUR" '
      /Requests\/sec/ {rps=$2} /Socket errors/ {err=1} /Non-2xx/ {err=1}
      END {cpu = (a - b) / t; printf "%.0f %d %.0f %.1f -\n", rps, (err ? 1 : 0), 100 * cpu / d, (rps > 0 ? 1e6 * cpu / (rps * d) : 0)}' "$log.wrk"
  fi
}

declare -A RESULTS=() US=()
for scenario in $SCENARIOS; do
  tools=benchlab
  [[ $WRK == 1 && $scenario == keepalive ]] && tools="benchlab wrk"
  for round in $(seq "$REPEATS"); do
    order="nginx serve"
    (( round % 2 == 0 )) && order="serve nginx"
    for tool in $tools; do
      for name in $order; do
        read -r rps errs scpu us ccpu < <(run_one "$scenario" "$name" "$tool" "$round")
        printf '%-9s %-6s %-8s %3s %10s %7s %12s %15s %11s\n' "$scenario" "$name" "$tool" "$round" "$rps" "$errs" "$scpu" \
          "$us" "$ccpu" | tee -a "$REPORT"
        RESULTS[$scenario.$tool.$name]+="$rps "
        US[$scenario.$tool.$name]+="$us "
      done
    done
  done
done

median() { tr ' ' '\n' | grep -v '^$' | sort -n | awk '{v[NR]=$1} END {if (NR == 0) print 0; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
{
  echo
  printf '%-9s %-8s %12s %12s %14s %14s %14s %16s\n' scenario tool 'nginx req/s' 'serve req/s' 'serve ÷ nginx' \
    'nginx µs/req' 'serve µs/req' 'nginx ÷ serve'
  for scenario in $SCENARIOS; do
    for tool in benchlab wrk; do
      [[ -n ${RESULTS[$scenario.$tool.nginx]:-} ]] || continue
      n=$(median <<<"${RESULTS[$scenario.$tool.nginx]}")
      s=$(median <<<"${RESULTS[$scenario.$tool.serve]}")
      ratio=$(awk -v s="$s" -v n="$n" 'BEGIN {if (n > 0) printf "%.2f", s / n; else print "n/a"}')
      nu=$(median <<<"${US[$scenario.$tool.nginx]}")
      su=$(median <<<"${US[$scenario.$tool.serve]}")
      uratio=$(awk -v s="$su" -v n="$nu" 'BEGIN {if (s > 0) printf "%.2f", n / s; else print "n/a"}')
      printf '%-9s %-8s %12.0f %12.0f %14s %14.1f %14.1f %16s\n' "$scenario" "$tool" "$n" "$s" "$ratio" "$nu" "$su" "$uratio"
    done
  done
  echo "(medians of $REPEATS; target: serve ÷ nginx ≥ 0.50 in req/s. Server µs/req = the server's CPU"
  echo " time (user + system, /proc) per request: nginx ÷ serve ≥ 0.50 is the same target, less"
  echo " sensitive to other load on the machine. A server CPU% well under 100 means the client, or"
  echo " the machine, not that server, limited the run.)"
  echo "load:    $(uptime | sed 's/.*load average/load average/')  (after the runs)"
} | tee -a "$REPORT"
echo "report: $REPORT"
