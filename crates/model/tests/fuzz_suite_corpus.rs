//! Replays the suite fuzz corpus (`fuzz/corpus/suite`) on stable Rust, with
//! the fuzz target's checks: line 1 of each input is a `--time-scale`, the
//! rest a suite file. Reading, checking and scaling never panic (the seeds
//! hold `--time-scale 1e20`, ramps that overflowed when added, durations
//! that overflow an `Instant`); an accepted suite's durations are within
//! the limit with a window in every mix, before and after scaling; a
//! refused scale names the flag and leaves the suite as it was.

use benchlab_model::Suite;
use std::path::Path;
use std::time::Duration;

/// The limit, written out so that this test also runs against a model
/// without the constant (and fails there on the seeds, as it should).
const WEEK: Duration = Duration::from_secs(7 * 24 * 3600);

fn holds(suite: &Suite, input: &Path) {
    for m in &suite.mixes {
        let p = &m.params;
        for d in [p.delay, p.ramp_up, p.ramp_down, p.length, p.think_time, p.timeout] {
            assert!(
                d <= WEEK,
                "{}: mix {}: {d:?} is above a week",
                input.display(),
                m.number
            );
        }
        assert!(
            p.ramp_up + p.ramp_down < p.length,
            "{}: mix {} has no measurement window",
            input.display(),
            m.number
        );
    }
    let _ = suite.total_length();
}

#[test]
fn suite_corpus_replays() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/suite");
    let work = tempfile::tempdir().expect("tempdir");
    let path = work.path().join("suite.toml");
    let (mut n, mut accepted, mut scaled, mut refused) = (0, 0, 0, 0);
    let mut entries: Vec<_> = std::fs::read_dir(&dir)
        .expect("fuzz corpus directory")
        .map(|e| e.expect("corpus entry").path())
        .collect();
    entries.sort();
    for input in entries {
        let data = std::fs::read(&input).expect("corpus file");
        let (scale, text) = match data.iter().position(|&b| b == b'\n') {
            Some(i) => (&data[..i], &data[i + 1..]),
            None => (&data[..0], &data[..]),
        };
        std::fs::write(&path, text).expect("write suite");
        n += 1;
        let Ok(mut suite) = Suite::from_file(&path) else {
            continue;
        };
        accepted += 1;
        holds(&suite, &input);
        let Some(factor) = std::str::from_utf8(scale)
            .ok()
            .and_then(|s| s.trim().parse::<f64>().ok())
        else {
            continue;
        };
        let before = suite.clone();
        // `let _`: the result's type is whatever scale_time returns.
        #[allow(clippy::let_unit_value)]
        let result = suite.scale_time(factor);
        if suite == before && factor != 1.0 {
            let message = format!("{result:?}");
            assert!(message.contains("--time-scale"), "{}: {message}", input.display());
            refused += 1;
        } else {
            holds(&suite, &input);
            scaled += 1;
        }
    }
    assert!(n >= 26, "the corpus holds at least the 26 seeds, found {n}");
    assert!(
        accepted >= 10 && scaled >= 3 && refused >= 6,
        "{accepted} accepted, {scaled} scaled, {refused} refused"
    );
}
