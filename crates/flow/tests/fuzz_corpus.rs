//! Replays the fuzz corpora of the flow parsers (`fuzz/corpus/flow_template`,
//! `fuzz/corpus/flow_capture`) on stable Rust, through the very properties
//! the fuzz targets check (`benchlab_flow::fuzz`).

use std::path::Path;

fn replay(corpus: &str, check: fn(&[u8]), seeds: usize) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(corpus);
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).expect("fuzz corpus directory") {
        let path = entry.expect("corpus entry").path();
        let data = std::fs::read(&path).expect("corpus file");
        let result = std::panic::catch_unwind(|| check(&data));
        assert!(result.is_ok(), "{} fails its property", path.display());
        n += 1;
    }
    assert!(
        n >= seeds,
        "the corpus holds at least the {seeds} seed inputs, found {n}"
    );
}

#[test]
fn template_corpus_replays() {
    replay("flow_template", benchlab_flow::fuzz::template, 7);
}

#[test]
fn capture_corpus_replays() {
    replay("flow_capture", benchlab_flow::fuzz::capture, 8);
}
