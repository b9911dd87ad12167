//! Durations and the time scale, bounded.
//!
//! A duration a user writes (a suite's `length`, `benchlab http -d`) ends up
//! added to an `Instant`; one of 10¹² years overflows it and panics inside a
//! worker thread, and `--time-scale 1e20` made `Duration::from_secs_f64`
//! panic. So every duration is checked against [`MAX_DURATION`] when it is
//! read, the scale against [`TIME_SCALE_MIN`]..=[`TIME_SCALE_MAX`], and a
//! scaled duration again, each with a message that names the range.

use std::time::Duration;

/// The longest duration benchlab accepts anywhere: a week. Longer than any
/// benchmark or soak run, and far from where `Instant` arithmetic overflows.
pub const MAX_DURATION: Duration = Duration::from_secs(7 * 24 * 3600);

/// The smallest `--time-scale`: a 300 s mix becomes 0.3 s.
pub const TIME_SCALE_MIN: f64 = 0.001;

/// The largest `--time-scale`: a 300 s mix becomes 3.5 days.
pub const TIME_SCALE_MAX: f64 = 1000.0;

/// The allowed range in words, for messages.
pub fn duration_range() -> String {
    format!("from 0s to {}", humantime::format_duration(MAX_DURATION))
}

/// A duration or time scale the model refuses; the caller adds where it
/// came from (a flag, or a file and line).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DurationError {
    /// Not a duration at all (humantime's reason).
    #[error(
        "`{input}`: {reason}; expected a duration such as \"30s\", \"500ms\" or \"5m\" ({})",
        duration_range()
    )]
    Syntax { input: String, reason: String },
    /// A duration above [`MAX_DURATION`]; `input` is the text the
    /// user wrote, when there was one.
    #[error("{}is {}, too long: expected a duration {}",
        input.as_ref().map(|i| format!("`{i}` ")).unwrap_or_default(),
        humantime::format_duration(*found),
        duration_range())]
    TooLong {
        input: Option<String>,
        found: std::time::Duration,
    },
    /// A `--time-scale` factor out of range.
    #[error(
        "expected a number from {} to {} (0.05 runs a 5-minute mix in 15 s)",
        TIME_SCALE_MIN,
        TIME_SCALE_MAX
    )]
    TimeScale { factor: f64 },
}

impl benchlab_input::Classify for DurationError {
    fn exit_class(&self) -> benchlab_input::ExitClass {
        benchlab_input::ExitClass::Usage
    }
}

/// Parses a duration such as `10s`, `500ms`, `1m30s` (humantime's syntax)
/// and checks it against [`MAX_DURATION`]. The error says what was found
/// and what was expected; the caller adds where (flag or file:line).
pub fn parse_duration(s: &str) -> Result<Duration, DurationError> {
    let d = humantime::parse_duration(s.trim()).map_err(|e| DurationError::Syntax {
        input: s.to_string(),
        reason: e.to_string(),
    })?;
    check_duration(d).map_err(|_| DurationError::TooLong {
        input: Some(s.to_string()),
        found: d,
    })?;
    Ok(d)
}

/// `Err` (saying by how much) when `d` is above [`MAX_DURATION`].
pub fn check_duration(d: Duration) -> Result<(), DurationError> {
    if d > MAX_DURATION {
        return Err(DurationError::TooLong { input: None, found: d });
    }
    Ok(())
}

/// Checks a `--time-scale` factor: finite, within
/// [`TIME_SCALE_MIN`]..=[`TIME_SCALE_MAX`]; the caller names the value as
/// the user wrote it.
pub fn check_time_scale(factor: f64) -> Result<(), DurationError> {
    if !(TIME_SCALE_MIN..=TIME_SCALE_MAX).contains(&factor) {
        return Err(DurationError::TimeScale { factor });
    }
    Ok(())
}

/// `d × factor`, or `None` when the result is not a duration at all (the
/// factor is not finite or below zero, or the product overflows). Never
/// panics, unlike `Duration::from_secs_f64` and `Duration::mul_f64`.
pub fn scale_duration(d: Duration, factor: f64) -> Option<Duration> {
    let secs = d.as_secs_f64() * factor;
    Duration::try_from_secs_f64(secs).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_bounds() {
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration(" 7days "), Ok(MAX_DURATION));
        assert_eq!(parse_duration("0s"), Ok(Duration::ZERO));
        assert_eq!(
            parse_duration("8days").unwrap_err().to_string(),
            "`8days` is 8days, too long: expected a duration from 0s to 7days"
        );
        // Fits a u64 of seconds but overflows an Instant: refused.
        assert!(parse_duration("600000000years")
            .unwrap_err()
            .to_string()
            .contains("too long"));
        assert!(parse_duration("99999999999999999999999s")
            .unwrap_err()
            .to_string()
            .contains("(from 0s to 7days)"));
        assert!(parse_duration("ten").is_err());
        assert!(parse_duration("").is_err());
    }

    #[test]
    fn time_scales() {
        assert!(check_time_scale(1.0).is_ok());
        assert!(check_time_scale(TIME_SCALE_MIN).is_ok());
        assert!(check_time_scale(TIME_SCALE_MAX).is_ok());
        for bad in [0.0, -1.0, 1e20, f64::NAN, f64::INFINITY, 0.0009, 1000.5] {
            let e = check_time_scale(bad).unwrap_err().to_string();
            assert!(e.contains("expected a number from 0.001 to 1000"), "{bad}: {e}");
        }
        assert_eq!(
            scale_duration(Duration::from_secs(300), 0.5),
            Some(Duration::from_secs(150))
        );
        assert_eq!(scale_duration(MAX_DURATION, 1e300), None);
        assert_eq!(scale_duration(Duration::from_secs(1), f64::NAN), None);
        assert_eq!(scale_duration(Duration::from_secs(1), -1.0), None);
    }
}
