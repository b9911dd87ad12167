#!/usr/bin/env bash
# Access-log parse rate of `benchlab workload from-log` on one core: the
# issue asks for a 1 GB plain Combined log at >= 200 MB/s; gzip is reported
# apart (inflate, not the parser, bounds it). Generates a synthetic log
# (crates/logs/examples/gen_log.rs: Zipf alpha 1.3 over 6,400 URLs, ~190-byte
# lines, some POST/HEAD/404/500/304), times the command pinned with taskset,
# then gzips a slice of the log and times that. The log is in the page cache
# (just written), so this measures parsing, not the disk. Files go to
# $TMP_DIR and are deleted on exit.
#
# Usage: bench/log-parse.sh [-h]
#   Environment (defaults in brackets):
#     SIZE_MB [1000]     plain log size, MB (10^6 bytes)
#     GZIP_MB [200]      size of the slice gzipped for the gzip run (0: skip)
#     REPEATS [3]        timed runs of each; the best and the median are shown
#     CPU [0]            taskset CPU for the timed runs
#     TMP_DIR [/tmp]     where the log, its gzip and the workload go
#     BUILD [1]          0: use the binaries as built
#     BENCHLAB [target/release/benchlab]
#     GEN [target/release/examples/gen_log]
#     OUT_DIR [bench/out] the dated result file
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; }
case "${1:-}" in
    -h | --help) usage; exit 0 ;;
    "") ;;
    *) usage >&2; exit 2 ;;
esac

SIZE_MB=${SIZE_MB:-1000}
GZIP_MB=${GZIP_MB:-200}
REPEATS=${REPEATS:-3}
CPU=${CPU:-0}
TMP_DIR=${TMP_DIR:-/tmp}
BUILD=${BUILD:-1}
BENCHLAB=${BENCHLAB:-target/release/benchlab}
GEN=${GEN:-target/release/examples/gen_log}
OUT_DIR=${OUT_DIR:-bench/out}

if [[ $BUILD == 1 ]]; then
    cargo build --release -q -p benchlab
    cargo build --release -q -p benchlab-logs --example gen_log
fi
for bin in "$BENCHLAB" "$GEN"; do
    [[ -x $bin ]] || { echo "log-parse: $bin is not built (BUILD=1 builds it)" >&2; exit 1; }
done
command -v taskset >/dev/null || { echo "log-parse: taskset (util-linux) is needed" >&2; exit 1; }

WORK=$(mktemp -d "$TMP_DIR/benchlab-log-parse.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
LOG=$WORK/access.log
mkdir -p "$OUT_DIR"
RESULT=$OUT_DIR/log-parse-$(date -u +%Y%m%d-%H%M%S).txt

say() { echo "$*" | tee -a "$RESULT"; }

# Times one run of from-log on $1; prints "seconds tool-line".
time_one() {
    local start end err
    err=$WORK/stderr
    start=$(date +%s%N)
    taskset -c "$CPU" "$BENCHLAB" workload from-log "$1" --cover 94% --out "$WORK/workload.toml" \
        >"$WORK/report" 2>"$err"
    end=$(date +%s%N)
    echo "$(( end - start )) $(grep -m1 '^parsed' "$err" || true)"
}

# Runs $REPEATS timed runs on $1 ($2 bytes of text, $3 bytes of file) and
# prints the best and median rates over the whole command's wall time.
bench() {
    local file=$1 text=$2 size=$3 label=$4 ns line
    local -a times=()
    for ((i = 1; i <= REPEATS; i++)); do
        read -r ns line < <(time_one "$file")
        times+=("$ns")
        say "  run $i: $(awk -v n="$ns" 'BEGIN { printf "%.2f s", n / 1e9 }')   benchlab says: $line"
    done
    sorted=$(printf '%s\n' "${times[@]}" | sort -n)
    best=$(head -1 <<<"$sorted")
    median=$(sed -n "$(( (REPEATS + 1) / 2 ))p" <<<"$sorted")
    awk -v b="$best" -v m="$median" -v t="$text" -v f="$size" -v l="$label" 'BEGIN {
        printf "%s: best %.1f MB/s, median %.1f MB/s of log text", l, t * 1e3 / b, t * 1e3 / m
        if (f != t) printf " (best %.1f MB/s of gzip)", f * 1e3 / b
        printf "\n"
    }' | tee -a "$RESULT"
}

say "benchlab log-parse $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname)"
say "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg)"
say "binary: $BENCHLAB ($(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet 2>/dev/null || echo '+dirty'))"
say ""

"$GEN" "$LOG" $(( SIZE_MB * 1000000 )) 2>&1 | tee -a "$RESULT"
LOG_BYTES=$(stat -c %s "$LOG")
say "plain: $LOG_BYTES bytes, taskset -c $CPU $BENCHLAB workload from-log LOG --cover 94% --out W"
bench "$LOG" "$LOG_BYTES" "$LOG_BYTES" "plain"
say "report of the last run:"
sed 's/^/  | /' "$WORK/report" | head -14 | tee -a "$RESULT"
say ""

if (( GZIP_MB > 0 )); then
    rm -f "$LOG"
    SLICE=$WORK/slice.log
    # The same generator and seed: the start of the plain log, whole lines.
    "$GEN" "$SLICE" $(( GZIP_MB * 1000000 )) 2>&1 | tee -a "$RESULT"
    TEXT_BYTES=$(stat -c %s "$SLICE")
    gzip -6 -c "$SLICE" > "$SLICE.gz"
    rm -f "$SLICE"
    GZ_BYTES=$(stat -c %s "$SLICE.gz")
    say "gzip (-6): $TEXT_BYTES bytes of text in $GZ_BYTES bytes of gzip"
    bench "$SLICE.gz" "$TEXT_BYTES" "$GZ_BYTES" "gzip"
fi
say "result: $RESULT"
