#!/usr/bin/env bash
# How fast 64 agents register with one controller, and how together they
# start a mix: the 64-agent test (crates/agent/tests/skew.rs: 64 agents in
# this one process on loopback, each with its own certificate, a TLS
# handshake and a clock check each; one mix of 2 s, one user per client
# against a small keep-alive server) built with optimisations and run
# REPEATS times. Each run prints the registration time, the mix's start
# spread with the clocks' uncertainty, how late plain threads of the same
# process woke at the same instant (the machine's own noise) and the worst
# clock check's round trip.
#
# Usage: bench/agents-start.sh [-h]
#   Environment (defaults in brackets):
#     REPEATS [3]   runs
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; }
case ${1:-} in
  -h|--help) usage; exit 0 ;;
  '') ;;
  *) echo "agents-start: unknown argument '$1' (try --help)" >&2; exit 2 ;;
esac

cargo test --release --locked -q -p benchlab-agent --test skew --no-run 2>/dev/null
date -u +"%Y-%m-%d %H:%M UTC, $(nproc) CPUs, $(uname -r), load average $(cut -d' ' -f1-3 /proc/loadavg)"
for _ in $(seq "${REPEATS:-3}"); do
  cargo test --release --locked -q -p benchlab-agent --test skew -- --nocapture 2>&1 | grep 'agents registered'
done
