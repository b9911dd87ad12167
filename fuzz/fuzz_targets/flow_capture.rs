//! Fuzzes the capture spec parser, body captures and the cookie jar's
//! Set-Cookie parsing: a spec line, response headers, a body; the
//! properties are `benchlab_flow::fuzz::capture`'s (replayed on stable by
//! crates/flow/tests/fuzz_corpus.rs).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| benchlab_flow::fuzz::capture(input));
