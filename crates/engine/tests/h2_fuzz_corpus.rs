//! Replays the HTTP/2 fuzz corpus (`fuzz/corpus/h2_frames`) on stable Rust:
//! every input the fuzzer kept must decode without panicking, and end the
//! same streams the same way whether fed whole or in small reads.

use std::path::Path;

#[test]
fn h2_corpus_replays() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/h2_frames");
    let mut n = 0;
    let mut completed = 0;
    for entry in std::fs::read_dir(&dir).expect("fuzz corpus directory") {
        let data = std::fs::read(entry.expect("corpus entry").path()).expect("corpus file");
        let Some((&first, body)) = data.split_first() else {
            continue;
        };
        let whole = benchlab_engine::h2::replay(body, body.len());
        for split in [1, (first as usize % 64) + 1] {
            assert_eq!(benchlab_engine::h2::replay(body, split), whole, "split {split}");
        }
        completed += whole.0.len();
        n += 1;
    }
    assert!(n >= 9, "the corpus holds at least the seed inputs, found {n}");
    assert!(completed > 0, "some seed ends a stream");
}
