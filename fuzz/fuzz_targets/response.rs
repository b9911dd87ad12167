//! Fuzzes the HTTP/1 response framer: arbitrary bytes, fed in reads whose
//! sizes the input's first byte chooses, must never panic, never claim to
//! have consumed more than it was given, and must frame the same way
//! whatever the read size.
#![no_main]

use benchlab_engine::parse::{Feed, ResponseParser};
use libfuzzer_sys::fuzz_target;

fn run(data: &[u8], split: usize) -> (Result<Option<usize>, ()>, u64, u64) {
    let mut p = ResponseParser::new();
    let mut off = 0;
    for piece in data.chunks(split) {
        match p.feed(piece, None) {
            Ok(Feed::NeedMore) => off += piece.len(),
            Ok(Feed::Done { consumed }) => {
                assert!(consumed <= piece.len());
                return (Ok(Some(off + consumed)), p.wire_bytes(), p.body_bytes());
            }
            Err(_) => return (Err(()), 0, 0),
        }
    }
    let _ = p.on_eof();
    (Ok(None), p.wire_bytes(), p.body_bytes())
}

fuzz_target!(|input: &[u8]| {
    let Some((&first, data)) = input.split_first() else { return };
    let split = (first as usize % 64) + 1;
    let whole = run(data, data.len().max(1));
    let pieces = run(data, split);
    // A complete response is found at the same place whatever the reads.
    if let (Ok(Some(a)), Ok(Some(b))) = (whole.0, pieces.0) {
        assert_eq!(a, b);
        assert_eq!(whole.1, pieces.1);
        assert_eq!(whole.2, pieces.2);
    }
});
