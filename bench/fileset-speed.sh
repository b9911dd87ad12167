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
#     COUNT, SIZE [100000, 4096]  KIND=custom's pages (ct-1m's layout)
#     SEED [1]
#     VERIFY [1]         0: skip the verify pass
#     RAYON_NUM_THREADS  threads that write [the number of cores]
#     FS [host]          host: write into OUT on the file system it is on;
#                        fresh: a new ext4 made in a sparse image file under
#                        $TMPDIR (so on the same disk) and loop-mounted at
#                        OUT (root only), unmounted and deleted afterwards
#     MKFS_OPTS [-N INODES]  FS=fresh: mkfs.ext4's options (the inode count
#                        is added when not given), e.g. "-O ^has_journal"
#     MOUNT_OPTS [loop]  FS=fresh: mount's -o options (loop is added)
#     BENCHLAB [target/release/benchlab, brought up to date by cargo first]
#
# Needs ~4.2 GB of free space and ~1,001,000 free inodes for ct-1m. The
# figures depend on the file system and on how much of the tree still sits
# in the page cache (a verify right after generating reads from memory).
# Beside files/s it prints the generator's CPU (user and system) per file,
# which a busy machine changes far less than the wall-clock rate.
#
# The file system's recent past matters as much as the generator: ext4
# without a journal (the development VM's root) checks, for every new
# inode, whether each free inode it passes was deleted in the last 60 s
# (360 s while its inode-table block waits for writeback), so a generation
# started right after deleting a large tree (this script's own cleanup, a
# CI run's temp dirs) spent 70 % of its time in the kernel's
# `recently_deleted` and ran 10-30x slower (perf, 2026-11-26). Since the
# generator marks a new tree root `+T` (its directories spread over the
# disk's block groups, not packed beside the root) that costs up to 4x, not
# 10-30x (bench/README.md). FS=fresh measures the generator on a file
# system with no such past.
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
# `custom` takes its count and size from COUNT and SIZE (ct-1m's layout).
KIND_ARGS=()
[[ $KIND == custom ]] && KIND_ARGS=(--count "${COUNT:-100000}" --size "${SIZE:-4096}")
SEED=${SEED:-1}
VERIFY=${VERIFY:-1}
if [[ -z ${BENCHLAB:-} ]]; then
  cargo build --release -p benchlab >&2
  BENCHLAB=target/release/benchlab
fi

FS=${FS:-host}
case $FS in
  host|fresh) ;;
  *) echo "fileset-speed: FS=$FS: expected host or fresh" >&2; exit 2 ;;
esac

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
IMAGE=
cleanup() {
  local t0=$SECONDS
  if [[ -n $IMAGE ]]; then
    umount "$OUT" 2>/dev/null || true
    rm -f -- "$IMAGE"
    rmdir -- "$OUT" 2>/dev/null || true
  elif [[ -d $OUT ]]; then
    [[ -d $OUT/set ]] && find "$OUT/set" -mindepth 1 -maxdepth 1 -type d -print0 | xargs -0 -r -P "$(nproc)" -n 16 rm -rf --
    rm -rf -- "$OUT"
  fi
  echo "deleted $OUT in $((SECONDS - t0)) s" >&2
}
trap cleanup EXIT

if [[ $FS == fresh ]]; then
  if [[ $(id -u) != 0 ]]; then
    echo "fileset-speed: FS=fresh mounts a loop device: run as root" >&2
    exit 2
  fi
  # Room for the set plus a quarter, and an inode per file and directory.
  IMAGE=$(mktemp "${TMPDIR:-/tmp}/benchlab-fileset-image.XXXXXX")
  case $KIND in
    ct-1m|ct-1999) bytes=4096000000; inodes=1100000 ;;
    custom) bytes=$(( ${COUNT:-100000} * (${SIZE:-4096} + 4095) / 4096 * 4096 )); inodes=$(( ${COUNT:-100000} * 11 / 10 + 10000 )) ;;
    *) bytes=1000000000; inodes=200000 ;;
  esac
  truncate -s $((bytes + bytes / 4 + 500000000)) "$IMAGE"
  mkfs=${MKFS_OPTS:-}
  [[ " $mkfs " == *" -N "* ]] || mkfs="-N $inodes${mkfs:+ $mkfs}"
  # shellcheck disable=SC2086 # options are words
  mkfs.ext4 -q -F $mkfs "$IMAGE"
  mkdir -p "$OUT"
  mount -o "loop${MOUNT_OPTS:+,$MOUNT_OPTS}" "$IMAGE" "$OUT"
  echo "file system: mkfs.ext4 $mkfs; mount -o loop${MOUNT_OPTS:+,$MOUNT_OPTS}; features: $(dumpe2fs -h "$IMAGE" 2>/dev/null | sed -n 's/^Filesystem features: *//p')"
fi
# A new file system's root holds lost+found: generate into a directory of
# its own there (and the same on the host, for one code path).
SET=$OUT/set

echo "machine: $(nproc) cores, $(uname -sr), file system $(df -PT "$OUT" | awk 'NR==2 {print $2}') ($FS), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "benchlab $("$BENCHLAB" --version | awk '{print $2}'), kind $KIND, seed $SEED, out $OUT"
# The last line of `generate` is its summary with files/s and MB/s; the
# CPU line is the generator's user and system time (wait4, via time).
# The whole box's busy time over the run too (/proc/stat): the kernel's
# writeback (flusher, journal, loop device) runs outside the generator,
# and so does everyone else's work on a shared machine: an upper bound.
busy() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9 }' /proc/stat; }
b0=$(busy)
/usr/bin/time -f "cpu: %U s user, %S s system" -o "$OUT.cpu" \
  "$BENCHLAB" fileset generate "$KIND" "${KIND_ARGS[@]}" --seed "$SEED" --out "$SET"
b1=$(busy)
files=$(grep -vc '^#' "$SET/manifest")
awk -v files="$files" '{ u = $2; s = $5; printf "%s; %.1f us of CPU per file (%.1f user, %.1f system)\n", $0, (u + s) * 1e6 / files, u * 1e6 / files, s * 1e6 / files }' "$OUT.cpu"
awk -v files="$files" -v j=$((b1 - b0)) -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "box: %.1f us of all CPUs busy per file (the generator, the kernel'"'"'s writeback and anything else running)\n", j / hz * 1e6 / files }'
rm -f -- "$OUT.cpu"
# A tree root that `generate` creates gets `chattr +T` where the file
# system keeps inode flags (docs/filesets.md, "Where the directories go"):
# show whether it did.
flags=$(lsattr -d "$SET" 2>/dev/null | awk '{print $1}')
echo "tree root's inode flags: ${flags:-none (the file system keeps none)}"
if [[ $VERIFY == 1 ]]; then
  "$BENCHLAB" fileset verify "$SET"
fi
