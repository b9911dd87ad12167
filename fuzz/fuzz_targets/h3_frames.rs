//! Fuzzes the HTTP/3 response-stream decoder (`h3/frame.rs`, `h3/qpack.rs`):
//! arbitrary server bytes on a request stream, fed in reads whose sizes the
//! input's first byte chooses, must never panic, and must give the same
//! status, body and frame bytes, or fail the same way, whatever the read
//! size.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    let Some((&first, data)) = input.split_first() else { return };
    let split = (first as usize % 64) + 1;
    let whole = benchlab_engine::h3::frame::replay(data, data.len().max(1));
    let pieces = benchlab_engine::h3::frame::replay(data, split);
    assert_eq!(whole, pieces);
});
