#!/usr/bin/env bash
# Memory against URLs (issue 27): peak RSS of `benchlab run` for a mix of
# N URLs, for a ct-1m-like file set (its manifest only: paths, sizes,
# checksums, equal weights) and for a `workload from-log` workload of N
# distinct URLs (a URL file above 10,000), with the bytes per URL over the
# 1-URL run and the time to load the workload (`benchlab check`, which
# reads and resolves every URL, as a run does before its load).
#
# The run loads 127.0.0.1 on a port nothing listens on for 1 s with one
# user: the load engine's own memory is the same for every N, so the
# difference is the URLs'. --no-preflight: nothing is served.
#
#   cargo build --release -p benchlab && bench/url-memory.sh
#   COUNTS="1 1000 10000" bench/url-memory.sh     # quicker
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BENCHLAB:-target/release/benchlab}
COUNTS=${COUNTS:-"1 1000 10000 100000 1000000"}
[[ -x $BIN ]] || { echo "no $BIN: cargo build --release -p benchlab" >&2; exit 2; }
[[ -x /usr/bin/time ]] || { echo "needs /usr/bin/time (Debian package time)" >&2; exit 2; }
mkdir -p bench/out
OUT=bench/out/url-memory-$(date -u +%Y%m%d-%H%M%S).tsv
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
# A port with nothing on it: bound and released.
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

suite() { # suite FILE WORKLOAD_TOML
    cat >"$1" <<EOF
name = "url-memory"
target = "http://127.0.0.1:$PORT"
[defaults]
length = "1s"
ramp_up = "0s"
ramp_down = "0s"
threads_per_client = 1
timeout = "1s"
[workloads.w]
file = "$2"
[[mix]]
clients = 1
EOF
}

rss_kb() { # rss_kb CMD...: the command's peak RSS in KiB
    /usr/bin/time -f '%M' -o "$WORK/time" "$@" >/dev/null 2>&1 || true
    tail -1 "$WORK/time"
}

secs() { # secs CMD...: wall seconds
    local t0 t1
    t0=$(date +%s.%N)
    "$@" >/dev/null 2>&1 || true
    t1=$(date +%s.%N)
    awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }'
}

printf 'kind\turls\tpeak_rss_kib\tload_s\n' | tee "$OUT"
for n in $COUNTS; do
    # ct-1m-like: the manifest of N pages of ct-1m's layout.
    d=$WORK/ct-$n
    mkdir -p "$d/set"
    awk -v n="$n" 'BEGIN {
        print "# benchlab-manifest 1"
        for (i = 0; i < n; i++)
            printf "/d%04d/p%06d.html\t4096\t%016x\tpage\t1.0000000000\n", int(i / 1000), i, i * 2654435761 % 4294967296
    }' >"$d/set/manifest"
    cat >"$d/w.toml" <<EOF
[[class]]
name = "page"
percent = 100
validate = "checksum"
[class.fileset]
name = "ct"
EOF
    suite "$d/suite.toml" w.toml
    rss=$(rss_kb "$BIN" run "$d/suite.toml" --fileset "ct=$d/set" --no-preflight --out "$d/res")
    load=$(secs "$BIN" check "$d/suite.toml" --fileset "ct=$d/set")
    printf 'ct-1m-like\t%s\t%s\t%s\n' "$n" "$rss" "$load" | tee -a "$OUT"

    # from-log: a Combined log of N distinct URLs, URL i asked (i % 2) + 1 times.
    d=$WORK/log-$n
    mkdir -p "$d"
    awk -v n="$n" 'BEGIN {
        for (i = 0; i < n; i++)
            for (k = 0; k <= i % 2; k++)
                printf "10.0.0.1 - - [10/Oct/2000:13:55:36 -0700] \"GET /static/img/%03d/photo-%07d.jpg?v=2 HTTP/1.1\" 200 %d \"-\" \"bench\"\n", i % 997, i, 1000 + i % 5000
    }' >"$d/access.log"
    "$BIN" workload from-log "$d/access.log" --out "$d/w.toml" >/dev/null 2>&1
    suite "$d/suite.toml" w.toml
    rss=$(rss_kb "$BIN" run "$d/suite.toml" --no-preflight --out "$d/res")
    load=$(secs "$BIN" check "$d/suite.toml")
    printf 'from-log\t%s\t%s\t%s\n' "$n" "$rss" "$load" | tee -a "$OUT"
    rm -rf "$d" "$WORK/ct-$n"
done

echo
echo "bytes per URL: (peak RSS(N) - peak RSS(1)) / (N - 1)"
awk -F'\t' 'NR > 1 {
    if ($2 == 1) base[$1] = $3
    else printf "%-10s %8d URLs  %7.1f MiB  %6.1f bytes/URL  load %s s\n", $1, $2, $3 / 1024, ($3 - base[$1]) * 1024 / ($2 - 1), $4
}' "$OUT"
echo "table: $OUT"
