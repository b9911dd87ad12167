//! Fuzzes the suite parser and `--time-scale`: the input's first line is a
//! time scale (any text), the rest a suite file. Reading, checking and
//! scaling must never panic; a suite that is accepted holds only durations
//! within the limit and a measurement window in every mix, before scaling
//! and after; a refused scale leaves the suite as it was.
#![no_main]

use benchlab_model::{Suite, MAX_DURATION};
use libfuzzer_sys::fuzz_target;

fn holds(suite: &Suite) {
    for m in &suite.mixes {
        let p = &m.params;
        for d in [p.delay, p.ramp_up, p.ramp_down, p.length, p.think_time, p.timeout] {
            assert!(d <= MAX_DURATION, "mix {}: {d:?} above the limit", m.number);
        }
        assert!(p.ramp_up + p.ramp_down < p.length, "mix {}: no window", m.number);
        let _ = m.window();
    }
    let _ = suite.total_length();
}

fuzz_target!(|input: &[u8]| {
    let (scale, text) = match input.iter().position(|&b| b == b'\n') {
        Some(i) => (&input[..i], &input[i + 1..]),
        None => (&input[..0], input),
    };
    // One file per fuzzing process, rewritten for every input: the parser
    // reads files (and the workload files a suite names, relative to it).
    let path = std::env::temp_dir().join(format!("benchlab-fuzz-suite-{}.toml", std::process::id()));
    if std::fs::write(&path, text).is_err() {
        return;
    }
    let Ok(mut suite) = Suite::from_file(&path) else { return };
    holds(&suite);
    let Some(factor) = std::str::from_utf8(scale)
        .ok()
        .and_then(|s| s.trim().parse::<f64>().ok())
    else {
        return;
    };
    let before = suite.clone();
    match suite.scale_time(factor) {
        Ok(()) => holds(&suite),
        Err(e) => {
            assert!(e.starts_with("--time-scale "), "{e}");
            assert_eq!(suite, before);
        }
    }
});
