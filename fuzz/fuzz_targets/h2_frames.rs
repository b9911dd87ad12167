//! Fuzzes the HTTP/2 frame decoder and connection state (`h2/frame.rs`,
//! `h2/conn.rs`): arbitrary server bytes, after benchlab opened three
//! streams, fed in reads whose sizes the input's first byte chooses, must
//! never panic, and must end the same streams with the same counts, and
//! fail the same way, whatever the read size.
#![no_main]

use benchlab_engine::h2::conn::Conn;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    let Some((&first, data)) = input.split_first() else { return };
    let split = (first as usize % 64) + 1;
    let whole = benchlab_engine::h2::replay(data, data.len().max(1));
    let pieces = benchlab_engine::h2::replay(data, split);
    assert_eq!(whole, pieces);
    let _ = Conn::new(65_535);
});
