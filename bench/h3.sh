#!/usr/bin/env bash
# Client CPU per request over HTTP/3 (benchlab --http 3) against a local
# Caddy, beside HTTP/2 (TLS) and HTTP/1.1 keep-alive (TLS) on the same file
# and the same requests in flight, rounds interleaved; prints each run and
# the medians, and the median of the per-round HTTP/3 ÷ HTTP/2 ratios
# (issue 24's goal: at most 2). The CPU is benchlab's own figure
# (`client_cpu.us_per_request`: its worker threads' user + system time over
# the counted window, per request). h2load is run over h3 only when the
# installed build speaks it (Debian's is built without ngtcp2: it does not).
#
# Usage: bench/h3.sh [-h]
#   Environment (defaults in brackets):
#     DUR [3]            seconds per run
#     REPEATS [5]        rounds; each runs HTTP/1.1, HTTP/2 and HTTP/3 once
#     CONNS [2]          connections for HTTP/2 and 3
#     STREAMS [10]       streams per connection; HTTP/1.1 gets CONNS × STREAMS
#                        keep-alive connections, the same requests in flight
#     SIZE [4096]        bytes of the file
#     CLIENT_CPUS [0]    taskset list for benchlab
#     SERVER_CPUS [1]    taskset list for Caddy
#     BENCHLAB [target/release/benchlab]
#     CADDY [caddy on PATH]
#     OUT_DIR [bench/out] the TSV of the runs
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; }
case ${1:-} in
  -h|--help) usage; exit 0 ;;
  "") ;;
  *) echo "h3: unknown argument '$1' (try --help)" >&2; exit 2 ;;
esac

DUR=${DUR:-3}
REPEATS=${REPEATS:-5}
CONNS=${CONNS:-2}
STREAMS=${STREAMS:-10}
SIZE=${SIZE:-4096}
CLIENT_CPUS=${CLIENT_CPUS:-0}
SERVER_CPUS=${SERVER_CPUS:-1}
BENCHLAB=${BENCHLAB:-target/release/benchlab}
CADDY=${CADDY:-$(command -v caddy || true)}
OUT_DIR=${OUT_DIR:-bench/out}

die() { echo "h3: $*" >&2; exit 1; }
for v in DUR REPEATS CONNS STREAMS SIZE; do
  [[ ${!v} =~ ^[0-9]+$ ]] && (( ${!v} >= 1 )) || die "$v must be a whole number of at least 1, got '${!v}'"
done
[[ -x $BENCHLAB ]] || die "no benchlab at $BENCHLAB: cargo build --release -p benchlab (or set BENCHLAB)"
[[ -n $CADDY && -x $CADDY ]] || die "caddy is not installed (apt-get install caddy), or set CADDY"
command -v python3 >/dev/null || die "python3 is needed (parsing, medians)"

TMP=$(mktemp -d)
CADDY_PID=
cleanup() {
  if [[ -n $CADDY_PID ]]; then kill "$CADDY_PID" 2>/dev/null || true; wait "$CADDY_PID" 2>/dev/null || true; fi
  rm -rf "$TMP"
}
trap cleanup EXIT

mkdir -p "$TMP/www" "$OUT_DIR"
head -c "$SIZE" /dev/urandom >"$TMP/www/file"
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat >"$TMP/Caddyfile" <<EOF
{
	admin off
	skip_install_trust
	auto_https disable_redirects
	servers {
		protocols h1 h2 h3
	}
}
https://localhost:$PORT {
	bind 127.0.0.1
	tls internal
	root * $TMP/www
	file_server
}
EOF
HOME=$TMP XDG_DATA_HOME=$TMP/data XDG_CONFIG_HOME=$TMP/config \
  taskset -c "$SERVER_CPUS" "$CADDY" run --config "$TMP/Caddyfile" --adapter caddyfile >"$TMP/caddy.log" 2>&1 &
CADDY_PID=$!
CA=$TMP/data/caddy/pki/authorities/local/root.crt
for _ in $(seq 100); do
  [[ -f $CA ]] && (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break
  sleep 0.1
done
[[ -f $CA ]] || die "Caddy did not start: $(tail -5 "$TMP/caddy.log")"
URL=https://localhost:$PORT/file

if command -v h2load >/dev/null; then
  if h2load --npn-list=h3 -n 1 "$URL" 2>&1 | grep -q '1 succeeded'; then
    H2LOAD_H3=yes
    echo "h2load speaks h3: it runs beside benchlab's HTTP/3"
  else
    H2LOAD_H3=
    echo "h2load $(h2load --version | awk '{print $2}'): this build does not speak h3 (built without ngtcp2): not run"
  fi
fi

TSV=$OUT_DIR/h3-$(date -u +%Y%m%d-%H%M%S).tsv
printf 'round\tprotocol\trequests\terrors\treq_per_s\tus_per_req\n' >"$TSV"
USERS=$((CONNS * STREAMS))
run() { # round name args…
  local round=$1 name=$2; shift 2
  taskset -c "$CLIENT_CPUS" "$BENCHLAB" http --json --no-preflight --os-threads 1 --ca-file "$CA" -d "${DUR}s" "$@" "$URL" \
    >"$TMP/out.json" 2>"$TMP/err" || die "$name failed: $(tail -3 "$TMP/err")"
  python3 - "$TMP/out.json" "$round" "$name" >>"$TSV" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))["mixes"][0]
print(sys.argv[2], sys.argv[3], m["requests"], m["errors_total"], m["requests_per_sec"],
      m["client_cpu"]["us_per_request"], sep="\t")
PY
  tail -1 "$TSV"
}
run_h2load_h3() { # round
  local out user sys n
  out=$( { /usr/bin/time -f '%U %S' taskset -c "$CLIENT_CPUS" h2load --npn-list=h3 -D "$DUR" -c "$CONNS" -m "$STREAMS" "$URL" ; } 2>&1 )
  read -r user sys < <(tail -1 <<<"$out")
  n=$(grep -oP 'requests: \d+ total, \d+ started, \K\d+(?= done)' <<<"$out" || echo 0)
  python3 -c 'import sys; r,u,s,n=sys.argv[1],float(sys.argv[2]),float(sys.argv[3]),int(sys.argv[4]); print(r,"h2load-h3",n,0,round(n/float(sys.argv[5]),1),round((u+s)*1e6/n,2) if n else 0,sep="\t")' \
    "$1" "$user" "$sys" "$n" "$DUR" | tee -a "$TSV"
}

echo "benchlab $("$BENCHLAB" --version 2>/dev/null | head -1), Caddy $("$CADDY" version | awk '{print $1}'), ${SIZE}-byte file, $DUR s runs, $REPEATS rounds; HTTP/2 and 3: $CONNS × $STREAMS streams, HTTP/1.1: $USERS keep-alive connections; client CPUs $CLIENT_CPUS, server CPUs $SERVER_CPUS"
printf 'round\tprotocol\trequests\terrors\treq_per_s\tus_per_req\n'
for r in $(seq "$REPEATS"); do
  run "$r" http1.1 --threads "$USERS"
  run "$r" http2 --http 2 --connections "$CONNS" --streams "$STREAMS"
  run "$r" http3 --http 3 --connections "$CONNS" --streams "$STREAMS"
  if [[ -n ${H2LOAD_H3:-} ]]; then run_h2load_h3 "$r"; fi
done

python3 - "$TSV" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
by = {}
for r in rows:
    by.setdefault(r["protocol"], []).append(r)
print("\nmedians:")
for p, rs in by.items():
    us = statistics.median(float(r["us_per_req"]) for r in rs)
    rps = statistics.median(float(r["req_per_s"]) for r in rs)
    print(f"  {p:10} {us:8.2f} µs/request  {rps:10.1f} requests/s  errors {sum(int(r['errors']) for r in rs)}")
rounds = {}
for r in rows:
    rounds.setdefault(r["round"], {})[r["protocol"]] = float(r["us_per_req"])
ratios = [v["http3"] / v["http2"] for v in rounds.values() if v.get("http2") and "http3" in v]
if ratios:
    m = statistics.median(ratios)
    print(f"HTTP/3 ÷ HTTP/2 client CPU per request, median of {len(ratios)} rounds: {m:.2f} (goal: at most 2) {'met' if m <= 2 else 'NOT met'}")
print(f"runs: {sys.argv[1]}")
PY
