#!/usr/bin/env bash
# User-space instructions a keep-alive request, counted by callgrind: the
# deterministic figure for the client's own work above the floor (a busy
# machine moves CPU time, not instruction counts). See bench/README.md,
# "Keep-alive CPU against the floor".
#
# Usage: bench/floor/callgrind.sh [BENCHLAB...]
#   Each binary (default target/release/benchlab) runs `http --json
#   --threads 64 --os-threads 1 -n N` under callgrind against one nginx
#   worker serving a 4096-byte file, for N = FEW and N = MANY; the
#   instructions a request are (Ir(MANY) − Ir(FEW)) ÷ (MANY − FEW), which
#   leaves out start-up and teardown. Then the top functions of the MANY
#   run, inclusive, per request.
#   Environment: FEW [4000], MANY [16000], TOP [25], OUT_DIR [bench/out],
#   NGINX [nginx on PATH, else /usr/sbin/nginx]
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
FEW=${FEW:-4000}
MANY=${MANY:-16000}
TOP=${TOP:-25}
OUT_DIR=${OUT_DIR:-bench/out}
if [[ -z ${NGINX:-} ]]; then NGINX=$(command -v nginx || echo /usr/sbin/nginx); fi
export -n NGINX
die() { echo "callgrind.sh: $*" >&2; exit 1; }
[[ $FEW =~ ^[0-9]+$ && $MANY =~ ^[0-9]+$ ]] && (( MANY > FEW )) || die "FEW and MANY must be whole numbers, MANY > FEW"
command -v valgrind >/dev/null || die "valgrind not found (apt-get install -y valgrind)"
command -v callgrind_annotate >/dev/null || die "callgrind_annotate not found (package valgrind)"
[[ -x $NGINX ]] || die "nginx not found at '$NGINX' (set NGINX=)"
BINS=("$@")
[[ ${#BINS[@]} -gt 0 ]] || BINS=(target/release/benchlab)
for b in "${BINS[@]}"; do [[ -x $b ]] || die "no benchlab binary at '$b' (cargo build --release -p benchlab)"; done

TMP=$(mktemp -d)
NGINX_PID=
cleanup() {
  if [[ -n $NGINX_PID ]]; then kill "$NGINX_PID" 2>/dev/null || true; wait "$NGINX_PID" 2>/dev/null || true; fi
  rm -rf "$TMP"
}
trap cleanup EXIT
mkdir -p "$TMP/www" "$TMP/logs" "$TMP/tmp" "$OUT_DIR"
head -c 4096 /dev/zero | tr '\0' 'x' >"$TMP/www/4k.html"
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
USER_LINE=
if [[ $(id -u) == 0 ]]; then USER_LINE="user root;"; fi
cat >"$TMP/nginx.conf" <<EOF
$USER_LINE
worker_processes 1;
daemon off;
pid $TMP/nginx.pid;
error_log $TMP/logs/error.log warn;
events { worker_connections 1024; }
http {
  default_type application/octet-stream;
  access_log off;
  keepalive_requests 1000000;
  client_body_temp_path $TMP/tmp/body;
  proxy_temp_path $TMP/tmp/proxy;
  fastcgi_temp_path $TMP/tmp/fastcgi;
  uwsgi_temp_path $TMP/tmp/uwsgi;
  scgi_temp_path $TMP/tmp/scgi;
  server { listen 127.0.0.1:$PORT; root $TMP/www; }
}
EOF
"$NGINX" -p "$TMP/" -c "$TMP/nginx.conf" -e "$TMP/logs/error.log" >"$TMP/logs/stdout.log" 2>&1 &
NGINX_PID=$!
for _ in $(seq 50); do
  if python3 -c "import socket; socket.create_connection(('127.0.0.1',$PORT),1)" 2>/dev/null; then break; fi
  sleep 0.1
done
URL=http://127.0.0.1:$PORT/4k.html

total_ir() { callgrind_annotate "$1" 2>/dev/null | sed -n 's/^\([0-9,]*\) (100.0%).*PROGRAM TOTALS.*/\1/p' | tr -d ,; }
# Inclusive instructions of the request's own path (HTTP/1's event
# handler: the read, the parse, the count and the next request's write).
# (awk reads to the end: an early exit would stop callgrind_annotate with
# SIGPIPE, which pipefail and set -e make the script's end.)
loop_ir() { callgrind_annotate --inclusive=yes "$1" 2>/dev/null | awk '/Http1::on_event \[/ && !done { gsub(",", "", $1); print $1; done = 1 }'; }

for b in "${BINS[@]}"; do
  name=$(basename "$b")
  declare -A IR=() LOOP=()
  for n in "$FEW" "$MANY"; do
    out=$OUT_DIR/callgrind.$name.$n
    valgrind --tool=callgrind --callgrind-out-file="$out" "$b" http --json --threads 64 --os-threads 1 \
      -n "$n" "$URL" >"$TMP/run.json" 2>"$TMP/valgrind.err" || die "$b -n $n failed: $(tail -3 "$TMP/valgrind.err")"
    ok=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sum(m.get("requests", 0) for m in d["mixes"]), sum(m.get("errors_total", 0) for m in d["mixes"]))' "$TMP/run.json" 2>/dev/null || echo "? ?")
    IR[$n]=$(total_ir "$out")
    LOOP[$n]=$(loop_ir "$out")
    echo "$b -n $n: ${IR[$n]} instructions; requests, errors: $ok"
  done
  echo "$b: $(( (IR[$MANY] - IR[$FEW]) / (MANY - FEW) )) user-space instructions a request"
  # The whole process's figure also holds the once-a-second work (the
  # snapshots' histogram copies), which grows with the run's length under
  # callgrind, so it moves by a few hundred from run to run; the request's
  # own path does not.
  if [[ -n ${LOOP[$FEW]:-} && -n ${LOOP[$MANY]:-} ]]; then
    echo "$b: $(( (LOOP[$MANY] - LOOP[$FEW]) / (MANY - FEW) )) instructions a request in Http1::on_event (the request's own path)"
  fi
  echo "top functions of the -n $MANY run, inclusive, per request:"
  callgrind_annotate --inclusive=yes "$OUT_DIR/callgrind.$name.$MANY" 2>/dev/null \
    | awk -v n="$MANY" -v top="$TOP" '/^[0-9,]+ \(/ && !/PROGRAM TOTALS/ { gsub(",", "", $1); c++; if (c <= top) { $2=""; printf "%8.0f %s\n", $1 / n, $0 } }' \
    | sed 's/^\( *[0-9]*\) [0-9]* */\1  /'
  unset IR LOOP
done
