#!/usr/bin/env bash
# dbench vs benchlab on the same loadfile, client count and local path:
# throughput (MB/s of bytes read + written) and operation counts per kind,
# side by side, the median of REPEATS runs each, interleaved (the one that
# goes first alternates) so that a busy machine's drift spreads over both.
# The two should agree within 10 %; where they do not, the printed note
# says why. Then, where smbd is installed, benchlab alone on
# the same loadfile against Samba (started here unprivileged on a loopback
# high port): Debian's dbench 4.00 has no SMB backend (only its fileio
# `dbench` and the `tbench` network test), so there is no peer figure.
#
# Usage: bench/dbench-vs-benchlab.sh [-h]
#   Environment (defaults in brackets):
#     CLIENTS [2]          clients (dbench's NPROCS, benchlab's `clients`)
#     DUR [10]             seconds each run (dbench -t; benchlab's mix length)
#     REPEATS [3]          runs of each
#     DBENCH_ARGS [--no-resolve]  more dbench flags; --no-resolve turns off
#                          its name-resolution simulation (a stat or a
#                          directory read per path it opens), which
#                          benchlab does not do
#     LOADFILE [/usr/share/dbench/client.txt]
#     DIR [a temp dir]     the local path both run in (dbench -D, file://)
#     SMB [1]              0: skip the Samba run
#     BENCHLAB [target/release/benchlab, else target/debug/benchlab]
#     OUT_DIR [bench/out]  the report (dbench-vs-benchlab-STAMP.txt) and logs
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; }
case ${1:-} in
  -h|--help) usage; exit 0 ;;
  "") ;;
  *) echo "dbench-vs-benchlab: unknown argument '$1' (try --help)" >&2; exit 2 ;;
esac

CLIENTS=${CLIENTS:-2}
DUR=${DUR:-10}
REPEATS=${REPEATS:-3}
DBENCH_ARGS=${DBENCH_ARGS---no-resolve}
LOADFILE=${LOADFILE:-/usr/share/dbench/client.txt}
SMB=${SMB:-1}
OUT_DIR=${OUT_DIR:-bench/out}
if [ -z "${BENCHLAB:-}" ]; then
  BENCHLAB=target/release/benchlab
  [ -x "$BENCHLAB" ] || BENCHLAB=target/debug/benchlab
fi
command -v dbench >/dev/null || { echo "dbench-vs-benchlab: dbench is not installed (apt-get install dbench)" >&2; exit 1; }
[ -x "$BENCHLAB" ] || { echo "dbench-vs-benchlab: no $BENCHLAB (cargo build --release -p benchlab)" >&2; exit 1; }
[ -r "$LOADFILE" ] || { echo "dbench-vs-benchlab: cannot read $LOADFILE" >&2; exit 1; }

mkdir -p "$OUT_DIR"
STAMP=$(date -u +%Y%m%d-%H%M%S)
REPORT="$OUT_DIR/dbench-vs-benchlab-$STAMP.txt"
WORK=$(mktemp -d)
# shellcheck source=lib/smbd.sh
. "$ROOT/bench/lib/smbd.sh"
cleanup() {
  smbd_stop
  rm -rf "$WORK"
}
trap cleanup EXIT
DIR=${DIR:-$WORK/fs}
mkdir -p "$DIR"
LOADFILE=$(cd "$(dirname "$LOADFILE")" && pwd)/$(basename "$LOADFILE")

suite() { # TARGET → a one-mix suite replaying the loadfile for DUR seconds
  cat > "$WORK/suite.toml" <<TOML
name = "dbench-loadfile"
target = "$1"
[workloads.loadfile]
loadfile = "$LOADFILE"
[defaults]
ramp_up = "0s"
ramp_down = "0s"
length = "${DUR}s"
[[mix]]
clients = $CLIENTS
TOML
}

run_dbench() { # N
  echo "dbench $CLIENTS clients, $DUR s, $LOADFILE, in $DIR (run $1)" >&2
  # shellcheck disable=SC2086 # DBENCH_ARGS is words
  dbench $DBENCH_ARGS -c "$LOADFILE" -D "$DIR" -t "$DUR" "$CLIENTS" > "$OUT_DIR/dbench-$STAMP-$1.log" 2>&1
  rm -rf "${DIR:?}"/clients
}
run_benchlab() { # N
  echo "benchlab $CLIENTS clients, $DUR s, file://$DIR (run $1)" >&2
  suite "file://$DIR"
  "$BENCHLAB" run "$WORK/suite.toml" --out "$WORK/local-$1" > "$WORK/benchlab.log" 2>&1
  cp "$WORK/local-$1/results.json" "$OUT_DIR/benchlab-local-$STAMP-$1.json"
  rm -rf "${DIR:?}"/clients
}
for r in $(seq "$REPEATS"); do
  if [ $((r % 2)) = 1 ]; then run_dbench "$r"; run_benchlab "$r"; else run_benchlab "$r"; run_dbench "$r"; fi
done

SMB_JSON=
if [ "$SMB" = 1 ] && [ -x /usr/sbin/smbd ]; then
  smbd_start "$WORK/smb" guest
  ME=$(id -un)
  echo "benchlab $CLIENTS clients, $DUR s, smb://127.0.0.1:$PORT/bench (Samba $(/usr/sbin/smbd -V | awk '{print $2}'))" >&2
  suite "smb://127.0.0.1:$PORT/bench"
  "$BENCHLAB" run "$WORK/suite.toml" --out "$WORK/smb-out" > "$WORK/benchlab-smb.log" 2>&1
  cp "$WORK/smb-out/results.json" "$OUT_DIR/benchlab-smb-$STAMP.json"
  SMB_JSON="$OUT_DIR/benchlab-smb-$STAMP.json"
fi

python3 - "$OUT_DIR" "$STAMP" "$REPEATS" "$DUR" "$CLIENTS" "$SMB_JSON" <<'PY' | tee "$REPORT"
import json, re, statistics, sys
out, stamp, repeats, dur, clients, smb = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), sys.argv[5], sys.argv[6]
med = statistics.median
# dbench's names for the loadfile's operations.
names = {"NTCreateX": "NTCreateX", "Close": "Close", "Rename": "Rename", "Unlink": "Unlink",
         "Qpathinfo": "QUERY_PATH_INFORMATION", "Qfileinfo": "QUERY_FILE_INFORMATION",
         "Qfsinfo": "QUERY_FS_INFORMATION", "Sfileinfo": "SET_FILE_INFORMATION", "Find": "FIND_FIRST",
         "WriteX": "WriteX", "ReadX": "ReadX", "LockX": "LockX", "UnlockX": "UnlockX", "Flush": "Flush",
         "Deltree": "Deltree", "Mkdir": "Mkdir"}
def dbench_run(path):
    text = open(path).read()
    counts = {}
    for m in re.finditer(r"^\s*(\w+)\s+(\d+)\s+[\d.]+\s+[\d.]+\s*$", text, re.M):
        if m.group(1) in names:
            counts[names[m.group(1)]] = int(m.group(2))
    tp = re.search(r"Throughput ([\d.]+) MB/sec", text)
    return (float(tp.group(1)) if tp else float("nan")), counts
dbs = [dbench_run(f"{out}/dbench-{stamp}-{r}.log") for r in range(1, repeats + 1)]
bls = [json.load(open(f"{out}/benchlab-local-{stamp}-{r}.json"))["mixes"][0] for r in range(1, repeats + 1)]
db_mb = med(d[0] for d in dbs)
bl_mb = med(b["bytes_per_s"] / 1e6 for b in bls)
kinds = sorted({k for _, c in dbs for k in c} | {o["operation"] for b in bls for o in b["by_operation"]},
               key=lambda k: -dbs[0][1].get(k, 0))
def bl_rate(b, k):
    return next((o["count"] for o in b["by_operation"] if o["operation"] == k), 0) / b["window_s"]
print(f"dbench vs benchlab: {clients} clients, {dur:g} s, same loadfile and local path, median of {repeats} runs each")
print(f"{'':28} {'dbench':>12} {'benchlab':>12} {'ratio':>7}")
def row(name, a, b):
    ratio = b / a if a else float("nan")
    print(f"{name:28} {a:>12,.1f} {b:>12,.1f} {ratio:>7.3f}")
row("throughput MB/s", db_mb, bl_mb)
row("operations/s", med(sum(c.values()) / dur for _, c in dbs), med(b["operations_per_s"] for b in bls))
for k in kinds:
    row(f"  {k} /s", med(c.get(k, 0) / dur for _, c in dbs), med(bl_rate(b, k) for b in bls))
print("each run, MB/s: dbench " + ", ".join(f"{d[0]:.1f}" for d in dbs)
      + "; benchlab " + ", ".join(f"{b['bytes_per_s'] / 1e6:.1f}" for b in bls))
print(f"benchlab errors: {sum(b['errors'] for b in bls)}")
ratio = bl_mb / db_mb if db_mb else float("nan")
if abs(ratio - 1) <= 0.10:
    print(f"agree within 10 % (benchlab/dbench = {ratio:.3f})")
else:
    print(f"differ by {abs(ratio - 1) * 100:.0f} % (benchlab/dbench = {ratio:.3f}). The operation mix is the "
          "same (every kind's ratio is the throughput's). Measured (bench/runs/2026-11-23-dbench-overhead-2core.txt): "
          "dbench makes 1.34 more system calls per operation (a kill(parent, 0) before each, more stats); where the "
          "client is CPU-bound (tmpfs) that is the gap (1.48x the CPU per operation); on a disk, Flush (fsync; "
          "fdatasync in benchlab) and creating opens take 60-80 % of each operation's time and swing 2-6x between "
          "runs on a shared disk: compare each run's figures")
if smb:
    s = json.load(open(smb))["mixes"][0]
    print(f"benchlab against Samba (no dbench peer: Debian's dbench has no SMB backend): "
          f"{s['bytes_per_s'] / 1e6:,.1f} MB/s, {s['operations_per_s']:,.0f} operations/s, "
          f"{s['errors']} errors {s['errors_by_status'] or ''}")
PY
echo "report: $REPORT" >&2
