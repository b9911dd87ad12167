//! Replays the HTTP/3 fuzz corpus (`fuzz/corpus/h3_frames`) on stable Rust:
//! every input must decode without panicking, and give the same result
//! whether fed whole or in small reads; and arbitrary inputs (proptest)
//! the same.

use proptest::prelude::*;
use std::path::Path;

#[test]
fn h3_corpus_replays() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/h3_frames");
    let mut n = 0;
    let mut completed = 0;
    for entry in std::fs::read_dir(&dir).expect("fuzz corpus directory") {
        let data = std::fs::read(entry.expect("corpus entry").path()).expect("corpus file");
        let Some((&first, body)) = data.split_first() else {
            continue;
        };
        let whole = benchlab_engine::h3::frame::replay(body, body.len().max(1));
        for split in [1, (first as usize % 64) + 1] {
            assert_eq!(benchlab_engine::h3::frame::replay(body, split), whole, "split {split}");
        }
        completed += usize::from(whole.is_ok());
        n += 1;
    }
    assert!(n >= 10, "the corpus holds at least the seed inputs, found {n}");
    assert!(completed >= 5, "the seeds' complete responses decode");
}

proptest! {
    #[test]
    fn any_bytes_decode_the_same_in_any_split(data in proptest::collection::vec(any::<u8>(), 0..512), split in 1usize..64) {
        let whole = benchlab_engine::h3::frame::replay(&data, data.len().max(1));
        prop_assert_eq!(benchlab_engine::h3::frame::replay(&data, split), whole);
    }

    /// Well-formed frames around random field sections: the QPACK decoder
    /// meets arbitrary bytes.
    #[test]
    fn any_field_section_decodes_the_same(section in proptest::collection::vec(any::<u8>(), 0..64), split in 1usize..16) {
        let mut data = Vec::new();
        benchlab_engine::h3::frame::put_frame(&mut data, benchlab_engine::h3::frame::HEADERS, &section);
        benchlab_engine::h3::frame::put_frame(&mut data, benchlab_engine::h3::frame::DATA, b"body");
        let whole = benchlab_engine::h3::frame::replay(&data, data.len());
        prop_assert_eq!(benchlab_engine::h3::frame::replay(&data, split), whole);
    }
}
