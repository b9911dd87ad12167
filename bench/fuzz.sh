#!/usr/bin/env bash
# Bounded fuzzing of the HTTP/1 response framer (crates/engine/src/parse.rs).
#
#   bash bench/fuzz.sh [SECONDS]      # default 60
#
# Needs a nightly toolchain and cargo-fuzz (`cargo install cargo-fuzz`).
# New inputs the fuzzer finds interesting land in fuzz/corpus/response; commit
# the small ones: CI replays the corpus on stable (crates/engine/tests/fuzz_corpus.rs).
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
command -v cargo-fuzz >/dev/null || { echo "cargo-fuzz is missing: cargo install cargo-fuzz" >&2; exit 1; }
rustup toolchain list | grep -q nightly || { echo "a nightly toolchain is needed: rustup toolchain install nightly" >&2; exit 1; }
before=$(ls fuzz/corpus/response | wc -l)
cargo +nightly fuzz run response fuzz/corpus/response -- -max_total_time="$secs" -max_len=4096 2>&1 | tail -n 5
after=$(ls fuzz/corpus/response | wc -l)
echo "fuzzed ${secs}s: corpus ${before} -> ${after} inputs; no crash"
