#!/usr/bin/env bash
# Bounded fuzzing with libFuzzer, each target for SECONDS.
#
#   bash bench/fuzz.sh [SECONDS] [TARGET…]    # default 60, the HTTP/1 response framer
#   bash bench/fuzz.sh 60 smb2_response spnego ntlmssp_challenge   # the SMB2 decoders
#
# Targets are fuzz/fuzz_targets/*.rs: response (crates/engine/src/parse.rs),
# smb2_response (every SMB2 response decoder), spnego (the SPNEGO reader)
# and ntlmssp_challenge (NTLMSSP's CHALLENGE and the AUTHENTICATE built from it).
# Needs a nightly toolchain and cargo-fuzz (`cargo install cargo-fuzz`).
# New inputs the fuzzer finds interesting land in fuzz/corpus/TARGET; commit
# the small ones: CI replays the corpora on stable (crates/engine/tests/fuzz_corpus.rs,
# crates/smb2/tests/fuzz_corpus.rs; crates/smb2/tests/fuzz_mutations.rs mutates them).
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(response)
command -v cargo-fuzz >/dev/null || { echo "cargo-fuzz is missing: cargo install cargo-fuzz" >&2; exit 1; }
rustup toolchain list | grep -q nightly || { echo "a nightly toolchain is needed: rustup toolchain install nightly" >&2; exit 1; }
for t in "${targets[@]}"; do
  [ -f "fuzz/fuzz_targets/$t.rs" ] || { echo "no fuzz target $t (fuzz/fuzz_targets/$t.rs)" >&2; exit 2; }
  mkdir -p "fuzz/corpus/$t"
  before=$(ls "fuzz/corpus/$t" | wc -l)
  cargo +nightly fuzz run "$t" "fuzz/corpus/$t" -- -max_total_time="$secs" -max_len=4096 2>&1 | tail -n 5
  after=$(ls "fuzz/corpus/$t" | wc -l)
  echo "$t: fuzzed ${secs}s: corpus ${before} -> ${after} inputs; no crash"
done
