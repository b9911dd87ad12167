#!/usr/bin/env bash
# What merging the clients' per-second snapshots costs the controller:
# CLIENTS fake clients replay MIX_SECONDS recorded seconds each (their HDR
# deltas V2-serialised, as a remote client will send them; decoded and added
# by the controller's own driving loop, `drive_mix`); prints the controller
# thread's CPU per second of mix, as a share of one core.
#
# Usage: bench/merge-cost.sh [-h]
#   Environment (defaults in brackets):
#     CLIENTS [64]       clients (agents) merged
#     MIX_SECONDS [60]   seconds of mix replayed
#     SAMPLES [20000]    requests a second per client (the histogram's fill)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; }
case ${1:-} in
  -h|--help) usage; exit 0 ;;
  '') ;;
  *) echo "merge-cost: unknown argument '$1' (try --help)" >&2; exit 2 ;;
esac

cargo build --release --locked -q -p benchlab-controller --example merge_cost
date -u +"%Y-%m-%d %H:%M UTC, $(nproc) CPUs, $(uname -r)"
target/release/examples/merge_cost "${CLIENTS:-64}" "${MIX_SECONDS:-60}" "${SAMPLES:-20000}"
