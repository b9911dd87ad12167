#!/usr/bin/env bash
# Generation speed of the largest file set: `benchlab fileset generate ct-1m`
# (1,000,000 pages of 4,096 bytes, 4.1 GB, 1,000 directories) with the
# release binary, then a verify of the same tree; prints files/s and MB/s
# (MB = 10^6 bytes) of both, and deletes the tree.
#
# Usage: bench/fileset-speed.sh [-h]
#   Environment (defaults in brackets):
#     OUT [a new directory under $TMPDIR or /tmp]  where to write; must not
#                        exist or be empty; it is deleted afterwards
#     KIND [ct-1m]       any `fileset generate` kind, e.g. ct-10k for a quick try
#     SEED [1]
#     VERIFY [1]         0: skip the verify pass
#     RAYON_NUM_THREADS  threads that write [the number of cores]
#     BENCHLAB [target/release/benchlab, brought up to date by cargo first]
#
# Needs ~4.2 GB of free space and ~1,001,000 free inodes for ct-1m. The
# figures depend on the file system and on how much of the tree still sits
# in the page cache (a verify right after generating reads from memory).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; }
case ${1:-} in
  -h|--help) usage; exit 0 ;;
  '') ;;
  *) echo "fileset-speed: unknown argument '$1' (try --help)" >&2; exit 2 ;;
esac

KIND=${KIND:-ct-1m}
SEED=${SEED:-1}
VERIFY=${VERIFY:-1}
if [[ -z ${BENCHLAB:-} ]]; then
  cargo build --release -p benchlab >&2
  BENCHLAB=target/release/benchlab
fi

if [[ -n ${OUT:-} ]]; then
  if [[ -e $OUT && -n $(ls -A "$OUT") ]]; then
    echo "fileset-speed: OUT=$OUT is not empty; refusing to write into (and delete) it" >&2
    exit 2
  fi
else
  OUT=$(mktemp -d "${TMPDIR:-/tmp}/benchlab-fileset.XXXXXX")
fi
# One `rm -rf` walks a million files on one core (8 minutes on ext4 here);
# deleting the page directories in parallel takes a fraction of that.
cleanup() {
  local t0=$SECONDS
  if [[ -d $OUT ]]; then
    find "$OUT" -mindepth 1 -maxdepth 1 -type d -print0 | xargs -0 -r -P "$(nproc)" -n 16 rm -rf --
    rm -rf -- "$OUT"
  fi
  echo "deleted $OUT in $((SECONDS - t0)) s" >&2
}
trap cleanup EXIT

echo "machine: $(nproc) cores, $(uname -sr), file system $(df -PT "$(dirname "$OUT")" | awk 'NR==2 {print $2}')"
echo "benchlab $("$BENCHLAB" --version | awk '{print $2}'), kind $KIND, seed $SEED, out $OUT"
# The last line of `generate` is its summary with files/s and MB/s.
"$BENCHLAB" fileset generate "$KIND" --seed "$SEED" --out "$OUT"
if [[ $VERIFY == 1 ]]; then
  "$BENCHLAB" fileset verify "$OUT"
fi
