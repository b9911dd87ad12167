//! Fuzzes the flow template parser and renderer: any text as a template in
//! a URL, a header and a body; the properties are
//! `benchlab_flow::fuzz::template`'s (replayed on stable by
//! crates/flow/tests/fuzz_corpus.rs).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| benchlab_flow::fuzz::template(input));
