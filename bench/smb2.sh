#!/usr/bin/env bash
# benchlab's own SMB2 client (`?client=benchlab`) against Samba's
# libsmbclient, on one unprivileged smbd (started here on a loopback high
# port, temp config, one share, a passdb user so sessions have a key):
#   1. client CPU per operation — the users' user+system CPU over the mix
#      (results.json's client_cpu.us_per_request: the benchlab client's
#      user threads, or libsmbclient's user processes) ÷ the operations
#      answered — on the NetBench 1999 disk mix and on dbench's client.txt
#      replay, same users and target, and benchlab ÷ libsmbclient;
#   2. the cost of signing (each algorithm) and of encryption (each
#      cipher) per operation on the client.txt replay, against the same
#      client unsigned and unsealed;
#   3. operations/s side by side: both clients on client.txt, dbench on the
#      share's directory (Debian's dbench 4.00 has no SMB backend: its local
#      backend, the same loadfile) and smbtorture's smb2.bench.* (package
#      samba-testsuite; their own operations, not the loadfile's).
# Every configuration runs once a round, the rounds interleaved (each
# starts one configuration later); the figures are medians of the rounds,
# a ratio the median of the per-round ratios. Release build. Each
# configuration's negotiated dialect, signing and cipher (results.json's
# files.smb) is printed with it.
#
# Usage: bench/smb2.sh [-h]
#   Environment (defaults in brackets):
#     USERS [10]        users (clients of one thread each): SMB sessions
#     DUR [2]           seconds each run (the mix's length, no ramps)
#     REPEATS [2]       rounds (the defaults take about 2.5 minutes)
#     CLIENT_OPTS []    more options for benchlab's client, joined to its
#                       target with & (e.g. the event-loop driver's)
#     LOADFILE [/usr/share/dbench/client.txt]
#     CRYPTO [1]        0: skip the signing and encryption table
#     PEERS [1]         0: skip dbench and smbtorture
#     BENCHLAB [target/release/benchlab]
#     OUT_DIR [bench/out]  the report (smb2-STAMP.txt) and per-run rows
#                          (smb2-STAMP.tsv)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; }
case ${1:-} in
  -h|--help) usage; exit 0 ;;
  "") ;;
  *) echo "smb2: unknown argument '$1' (try --help)" >&2; exit 2 ;;
esac
USERS=${USERS:-10}
DUR=${DUR:-2}
REPEATS=${REPEATS:-2}
CLIENT_OPTS=${CLIENT_OPTS:-}
LOADFILE=${LOADFILE:-/usr/share/dbench/client.txt}
CRYPTO=${CRYPTO:-1}
PEERS=${PEERS:-1}
OUT_DIR=${OUT_DIR:-bench/out}
BENCHLAB=${BENCHLAB:-target/release/benchlab}
[ -x /usr/sbin/smbd ] || { echo "smb2: smbd is not installed (apt-get install samba)" >&2; exit 1; }
[ -x "$BENCHLAB" ] || { echo "smb2: no $BENCHLAB (cargo build --release -p benchlab)" >&2; exit 1; }
[ -r "$LOADFILE" ] || { echo "smb2: cannot read $LOADFILE (apt-get install dbench)" >&2; exit 1; }
LOADFILE=$(cd "$(dirname "$LOADFILE")" && pwd)/$(basename "$LOADFILE")
mkdir -p "$OUT_DIR"
STAMP=$(date -u +%Y%m%d-%H%M%S)
REPORT="$OUT_DIR/smb2-$STAMP.txt"
ROWS="$OUT_DIR/smb2-$STAMP.tsv"
WORK=$(mktemp -d)
# shellcheck source=lib/smbd.sh
. "$ROOT/bench/lib/smbd.sh"
cleanup() {
  smbd_stop
  rm -rf "$WORK"
}
trap cleanup EXIT

# --- smbd ------------------------------------------------------------------
smbd_start "$WORK/smb" user
ME=$(id -un)
PASS=benchlab-smb2
smbd_user "$PASS"
# The password reaches benchlab through its environment, never a command
# line or a file of the report.
export BENCHLAB_SMB_PASSWORD=$PASS
BASE="smb://$ME@127.0.0.1:$PORT/bench"

# --- configurations: name, workload, target ---------------------------------
join() { local a=$1 b=$2; if [ -n "$b" ]; then echo "$a&$b"; else echo "$a"; fi; }
BL="$BASE?$(join client=benchlab "$CLIENT_OPTS")"
# benchlab's client is smb://'s default: libsmbclient is named.
LIB="$BASE?client=libsmbclient"
CONFIGS=(
  "lib-disk|disk|$LIB"
  "benchlab-disk|disk|$BL"
  "lib-ct|ct|$LIB"
  "benchlab-ct|ct|$BL"
)
if [ "$CRYPTO" = 1 ]; then
  for a in hmac-sha256 aes-cmac aes-gmac; do CONFIGS+=("sign-$a|ct|$BL&sign=required&signing=$a"); done
  for c in aes-128-ccm aes-128-gcm aes-256-ccm aes-256-gcm; do CONFIGS+=("seal-$c|ct|$BL&encrypt=require&cipher=$c"); done
fi

suite() { # WORKLOAD TARGET → $WORK/suite.toml
  local w
  case $1 in
    disk) w="disk_mix = \"$ROOT/suites/workloads/netbench-1999-disk-mix.toml\"" ;;
    ct) w="loadfile = \"$LOADFILE\"" ;;
  esac
  cat > "$WORK/suite.toml" <<TOML
name = "smb2-bench"
target = "$2"
seed = 23
[workloads.w]
$w
[defaults]
ramp_up = "0s"
ramp_down = "0s"
length = "${DUR}s"
[[mix]]
clients = $USERS
TOML
}

printf 'round\tconfig\toperations\tops_per_s\terrors\tnot_sent\tcpu_us_per_op\tnegotiated\n' > "$ROWS"
run_config() { # ROUND NAME WORKLOAD TARGET
  echo "round $1: $2 ($USERS users, $DUR s)" >&2
  suite "$3" "$4"
  rm -rf "$WORK/out" "$S/share/clients"
  if ! "$BENCHLAB" run "$WORK/suite.toml" --out "$WORK/out" > "$WORK/run.log" 2>&1; then
    echo "smb2: $2 failed:" >&2; tail -20 "$WORK/run.log" >&2; exit 1
  fi
  python3 - "$WORK/out/results.json" "$1" "$2" >> "$ROWS" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))["mixes"][0]
n = m["files"].get("smb")
neg = f"{n['dialect']}/{n['signing']}/{n['cipher']}" if n else "libsmbclient"
print("\t".join(str(x) for x in [sys.argv[2], sys.argv[3], m["requests"], round(m["requests_per_sec"], 1),
      m["errors_total"], m["files"]["not_sent"], round(m["client_cpu"]["us_per_request"], 2), neg]))
PY
}

run_dbench() { # ROUND
  echo "round $1: dbench (local backend on the share's directory)" >&2
  rm -rf "$S/share/clients"
  dbench -c "$LOADFILE" -D "$S/share" -t "$DUR" "$USERS" > "$WORK/dbench.log" 2>&1 || true
  python3 - "$WORK/dbench.log" "$1" "$DUR" >> "$ROWS" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
ops = sum(int(m.group(2)) for m in re.finditer(r"^\s*(\w+)\s+(\d+)\s+[\d.]+\s+[\d.]+\s*$", text, re.M))
print("\t".join(str(x) for x in [sys.argv[2], "dbench-local", ops, round(ops / float(sys.argv[3]), 1), 0, 0, "", "local"]))
PY
  rm -rf "$S/share/clients"
}

TORTURE=()
if [ "$PEERS" = 1 ] && command -v smbtorture > /dev/null; then
  TORTURE=(smb2.bench.echo smb2.bench.path-contention-shared)
fi
run_torture() { # ROUND TEST
  echo "round $1: smbtorture $2" >&2
  smbtorture "//127.0.0.1/bench" -p "$PORT" -U "$ME%$PASS" --option=torture:timelimit="$DUR" \
    --option=torture:nprocs="$USERS" --option=torture:progress=no "$2" > "$WORK/torture.log" 2>&1 || true
  python3 - "$WORK/torture.log" "$1" "$2" >> "$ROWS" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
# The tests' last summary line: "N second: echo[num/s=R,…]", or
# open[num/s=R,…] close[num/s=R,…]: an operation is each of them.
lines = [l for l in re.split(r"[\r\n]", text) if "num/s=" in l]
rate = sum(int(x) for x in re.findall(r"num/s=(\d+)", lines[-1])) if lines else float("nan")
print("\t".join(str(x) for x in [sys.argv[2], "smbtorture-" + sys.argv[3], "", rate, 0, 0, "", "smbtorture"]))
PY
  cp "$WORK/torture.log" "$WORK/torture-$2-$1.log"
}

N=${#CONFIGS[@]}
for r in $(seq "$REPEATS"); do
  for i in $(seq 0 $((N - 1))); do
    IFS='|' read -r name workload target <<< "${CONFIGS[$(((i + r - 1) % N))]}"
    run_config "$r" "$name" "$workload" "$target"
  done
  if [ "$PEERS" = 1 ]; then
    run_dbench "$r"
    for t in "${TORTURE[@]}"; do run_torture "$r" "$t"; done
  fi
done

python3 - "$ROWS" "$USERS" "$DUR" "$REPEATS" "$CLIENT_OPTS" "$(/usr/sbin/smbd -V)" "$(dpkg-query -W -f '${Version}' libsmbclient 2>/dev/null || echo '?')" \
  "$(nproc)" <<'PY' | tee "$REPORT"
import csv, statistics, sys
rows_path, users, dur, repeats, opts, smbd, libver, cpus = sys.argv[1:9]
rows = list(csv.DictReader(open(rows_path), delimiter="\t"))
med = statistics.median
def runs(c): return [r for r in rows if r["config"] == c]
def m(c, k):
    v = [float(r[k]) for r in runs(c) if r[k] not in ("", "nan")]
    return med(v) if v else float("nan")
def ratio(a, b, k="cpu_us_per_op"):
    # Per round, then the median.
    by = {r["round"]: float(r[k]) for r in runs(b) if r[k]}
    v = [float(r[k]) / by[r["round"]] for r in runs(a) if r[k] and by.get(r["round"])]
    return med(v) if v else float("nan")
def neg(c):
    return ", ".join(sorted({r["negotiated"] for r in runs(c)}))
print(f"SMB2 client bench: {users} users, {dur} s a run, {repeats} interleaved rounds, medians; {cpus} CPUs")
print(f"server {smbd} on loopback; libsmbclient {libver}; benchlab client options: {opts or '(none)'}")
print()
print("1. Client CPU per operation (users' user+system CPU ÷ operations answered)")
print(f"{'workload':22} {'libsmbclient µs':>16} {'benchlab µs':>12} {'ratio':>7} {'lib ops/s':>10} {'bl ops/s':>10} {'lib err/not sent':>17} {'bl err/not sent':>16}")
for w, name in [("disk", "NetBench disk mix"), ("ct", "client.txt")]:
    a, b = f"lib-{w}", f"benchlab-{w}"
    if not runs(a):
        continue
    es = lambda c: f"{m(c, 'errors'):.0f}/{m(c, 'not_sent'):.0f}"
    print(f"{name:22} {m(a, 'cpu_us_per_op'):>16.1f} {m(b, 'cpu_us_per_op'):>12.1f} {ratio(b, a):>7.2f} "
          f"{m(a, 'ops_per_s'):>10,.0f} {m(b, 'ops_per_s'):>10,.0f} {es(a):>17} {es(b):>16}")
print(f"  benchlab negotiated: {neg('benchlab-ct')}")
crypto = [r["config"] for r in rows if r["config"].startswith(("sign-", "seal-"))]
if crypto:
    print()
    print("2. Cost of signing and encryption per operation (benchlab client, client.txt)")
    print(f"{'configuration':20} {'µs/op':>8} {'+µs/op':>8} {'× none':>7} {'ops/s':>9} {'errors':>7}  negotiated (dialect/signing/cipher)")
    base = m("benchlab-ct", "cpu_us_per_op")
    print(f"{'none':20} {base:>8.1f} {0:>8.1f} {1:>7.2f} {m('benchlab-ct', 'ops_per_s'):>9,.0f} {m('benchlab-ct', 'errors'):>7.0f}  {neg('benchlab-ct')}")
    for c in dict.fromkeys(crypto):
        v = m(c, "cpu_us_per_op")
        print(f"{c:20} {v:>8.1f} {v - base:>8.1f} {ratio(c, 'benchlab-ct'):>7.2f} {m(c, 'ops_per_s'):>9,.0f} {m(c, 'errors'):>7.0f}  {neg(c)}")
peers = [c for c in dict.fromkeys(r["config"] for r in rows) if c.startswith(("dbench", "smbtorture"))]
print()
print("3. Operations/s side by side")
print(f"  benchlab client, client.txt over SMB: {m('benchlab-ct', 'ops_per_s'):,.0f}")
if runs("lib-ct"):
    print(f"  libsmbclient, client.txt over SMB (LockX, UnlockX, Flush not sent): {m('lib-ct', 'ops_per_s'):,.0f}")
for c in peers:
    what = {"dbench-local": "dbench 4.00, client.txt, local backend on the share's directory (no SMB: Debian's dbench has no SMB backend)"}.get(c, c + " (its own operations, over SMB)")
    print(f"  {what}: {m(c, 'ops_per_s'):,.0f}")
PY
echo "report: $REPORT (rows: $ROWS)" >&2
