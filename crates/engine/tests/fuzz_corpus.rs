//! Replays the fuzz corpus (`fuzz/corpus/response`) on stable Rust: every
//! input the fuzzer kept must still frame without panicking, and identically
//! whether fed whole or byte by byte.

use benchlab_engine::parse::{Feed, ResponseParser};
use std::path::Path;

fn frame(data: &[u8], split: usize) -> Option<(usize, u64, u64)> {
    let mut p = ResponseParser::new();
    let mut off = 0;
    for piece in data.chunks(split.max(1)) {
        match p.feed(piece, None) {
            Ok(Feed::NeedMore) => off += piece.len(),
            Ok(Feed::Done { consumed }) => return Some((off + consumed, p.wire_bytes(), p.body_bytes())),
            Err(_) => return None,
        }
    }
    None
}

#[test]
fn corpus_replays() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/response");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).expect("fuzz corpus directory") {
        let data = std::fs::read(entry.expect("corpus entry").path()).expect("corpus file");
        let Some((_, body)) = data.split_first() else { continue };
        let whole = frame(body, body.len());
        let bytewise = frame(body, 1);
        if whole.is_some() && bytewise.is_some() {
            assert_eq!(whole, bytewise);
        }
        n += 1;
    }
    assert!(n >= 6, "the corpus holds at least the seed inputs, found {n}");
}
