//! Fuzzes duration parsing and scaling: the input's first line is a
//! duration as a user writes it (flag or suite), the second a time scale.
//! Nothing may panic; an accepted duration is within the limit and equal to
//! humantime's reading; scaling by an accepted factor gives a duration.
#![no_main]

use benchlab_model::{check_time_scale, parse_duration, scale_duration, MAX_DURATION, TIME_SCALE_MAX};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    let Ok(text) = std::str::from_utf8(input) else { return };
    let mut lines = text.splitn(2, '\n');
    let dur = lines.next().unwrap_or("");
    let scale = lines.next().unwrap_or("1");
    let parsed = parse_duration(dur);
    match (&parsed, humantime::parse_duration(dur.trim())) {
        (Ok(d), Ok(h)) => assert_eq!(*d, h),
        (Ok(d), Err(_)) => panic!("accepted {dur:?} as {d:?} though humantime refuses it"),
        (Err(e), Ok(h)) => assert!(h > MAX_DURATION, "refused {dur:?} ({h:?}): {e}"),
        (Err(_), Err(_)) => {}
    }
    let Ok(factor) = scale.trim().parse::<f64>() else {
        return;
    };
    let d = parsed.unwrap_or(MAX_DURATION);
    let scaled = scale_duration(d, factor);
    if check_time_scale(factor).is_ok() {
        let s = scaled.expect("an accepted scale of an accepted duration is a duration");
        assert!(s.as_secs_f64() <= MAX_DURATION.as_secs_f64() * TIME_SCALE_MAX * (1.0 + 1e-9));
    }
});
