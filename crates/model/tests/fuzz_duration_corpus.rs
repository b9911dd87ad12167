//! Replays the duration fuzz corpus (`fuzz/corpus/duration`) on stable
//! Rust, with the fuzz target's checks: line 1 is a duration as a user
//! writes it, line 2 a time scale. Nothing panics; an accepted duration is
//! humantime's reading and within the limit; a refused one that humantime
//! reads is above it; an accepted scale of it is a duration.

use benchlab_model::{check_time_scale, parse_duration, scale_duration, MAX_DURATION, TIME_SCALE_MAX};
use std::path::Path;

#[test]
fn duration_corpus_replays() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/duration");
    let (mut n, mut refused) = (0, 0);
    for entry in std::fs::read_dir(&dir).expect("fuzz corpus directory") {
        let input = entry.expect("corpus entry").path();
        let data = std::fs::read(&input).expect("corpus file");
        n += 1;
        let Ok(text) = std::str::from_utf8(&data) else { continue };
        let mut lines = text.splitn(2, '\n');
        let dur = lines.next().unwrap_or("");
        let scale = lines.next().unwrap_or("1");
        let parsed = parse_duration(dur);
        match (&parsed, humantime::parse_duration(dur.trim())) {
            (Ok(d), Ok(h)) => assert_eq!(*d, h, "{}", input.display()),
            (Ok(d), Err(_)) => panic!("{}: accepted {dur:?} as {d:?}", input.display()),
            (Err(e), Ok(h)) => {
                assert!(h > MAX_DURATION, "{}: refused {dur:?} ({h:?}): {e}", input.display());
                assert!(e.to_string().contains("expected a duration from 0s to 7days"), "{e}");
                refused += 1;
            }
            (Err(e), Err(_)) => {
                assert!(e.to_string().contains("(from 0s to 7days)"), "{e}");
                refused += 1;
            }
        }
        let Ok(factor) = scale.trim().parse::<f64>() else {
            continue;
        };
        let d = parsed.unwrap_or(MAX_DURATION);
        let scaled = scale_duration(d, factor);
        if check_time_scale(factor).is_ok() {
            let s = scaled.expect("an accepted scale of an accepted duration is a duration");
            assert!(s.as_secs_f64() <= MAX_DURATION.as_secs_f64() * TIME_SCALE_MAX * (1.0 + 1e-9));
        }
    }
    assert!(n >= 13, "the corpus holds at least the 13 seeds, found {n}");
    assert!(refused >= 5, "{refused} refused");
}
