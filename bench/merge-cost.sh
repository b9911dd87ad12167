#!/usr/bin/env bash
# What merging the clients' per-second snapshots costs the controller:
# CLIENTS fake clients replay MIX_SECONDS recorded seconds each (their HDR
# deltas V2-serialised, as a remote client will send them; decoded and added
# by the controller's own driving loop, `drive_mix`); prints the controller
# thread's CPU per second of mix, as a share of one core. Then the curve
# against the number of agents (`wire_cost curve`): synthetic agents'
# seconds in the real wire format (protobuf envelope, the Second's JSON,
# its base64 V2 histogram) decoded and merged by `drive_mix` for AGENTS
# agents each, with the bytes per agent-second and a bar chart.
#
# Usage: bench/merge-cost.sh [-h]
#   Environment (defaults in brackets):
#     CLIENTS [64]       clients (agents) merged
#     MIX_SECONDS [60]   seconds of mix replayed
#     SAMPLES [20000]    requests a second per client (the histogram's fill)
#     AGENTS ["1 10 64 256 1000"]  the curve's agent counts
#     CURVE_SECONDS [10] seconds of mix per point of the curve
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
cargo build --release --locked -q -p benchlab-agent --example wire_cost
date -u +"%Y-%m-%d %H:%M UTC, $(nproc) CPUs, $(uname -r)"
target/release/examples/merge_cost "${CLIENTS:-64}" "${MIX_SECONDS:-60}" "${SAMPLES:-20000}"
# shellcheck disable=SC2086 # the agent counts are words on purpose
target/release/examples/wire_cost curve "${CURVE_SECONDS:-10}" "${SAMPLES:-20000}" ${AGENTS:-1 10 64 256 1000}
