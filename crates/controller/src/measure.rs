//! From what the engine counted to the result types of `benchlab-results`:
//! the one place that knows both, so the results crate (and the report
//! that reads it) need not depend on the engine.

use benchlab_engine::{ClassStats, ConnCounters, Counters, ErrorKind, KindShare, LatencySummary, OpenLoop};
use benchlab_results::{round, Errors, Figures, KindFigures, Latency, OpenLoopResult, RequestKinds};

/// A latency summary as results show it (the mean to 0.1 µs).
pub fn latency_of(s: LatencySummary) -> Latency {
    Latency {
        mean: (s.mean * 10.0).round() / 10.0,
        p50: s.p50,
        p90: s.p90,
        p99: s.p99,
        p999: s.p999,
        max: s.max,
    }
}

/// Errors by kind, every kind present.
pub fn errors_of(c: &Counters) -> Errors {
    ErrorKind::ALL
        .iter()
        .map(|k| (k.name().to_string(), c.error(*k)))
        .collect()
}

/// Requests by connection kind, every kind present.
pub fn request_kinds(shares: &[KindShare]) -> RequestKinds {
    shares
        .iter()
        .map(|s| {
            (
                s.kind.name().to_string(),
                KindFigures {
                    requests: s.requests,
                    percent: round(s.percent, 3),
                    configured_percent: round(s.configured_percent, 3),
                },
            )
        })
        .collect()
}

/// [`Figures`] of a span of requests counted by the engine.
pub trait FiguresOf {
    /// The counts of `s` and their rates over `window_s` seconds.
    fn of(s: &ClassStats, window_s: f64) -> Figures;
}

/// `n` per second of a `window_s`-second window, to 2 decimals (0 for an
/// empty window): every rate of a mix's figures.
pub(crate) fn per_sec(n: u64, window_s: f64) -> f64 {
    if window_s > 0.0 {
        round(n as f64 / window_s, 2)
    } else {
        0.0
    }
}

impl FiguresOf for Figures {
    fn of(s: &ClassStats, window_s: f64) -> Figures {
        let c = &s.counters;
        let per = |n: u64| per_sec(n, window_s);
        Figures {
            requests: c.requests,
            requests_per_sec: per(c.requests),
            bytes: c.bytes,
            bytes_per_sec: per(c.bytes),
            mbit_per_sec: if window_s > 0.0 {
                round(c.bytes as f64 * 8.0 / 1e6 / window_s, 3)
            } else {
                0.0
            },
            body_bytes: c.body_bytes,
            error_bytes: c.error_bytes,
            bytes_sent: c.bytes_sent,
            errors: errors_of(c),
            errors_total: c.errors_total(),
            latency_us: latency_of(LatencySummary::of(&s.latency)),
            error_latency_us: latency_of(LatencySummary::of(&s.error_latency)),
        }
    }
}

/// An [`OpenLoopResult`] from the engine's counts.
pub trait OpenLoopOf {
    /// The open loop as measured: what was asked (`rate` for all clients
    /// together, `arrival`, `max_in_flight` per client) and what the
    /// counters and the as-sent histogram of the window say, and
    /// `client_peaks`, each client's most connections open at once.
    fn measure(
        rate: f64,
        arrival: &str,
        max_in_flight: u32,
        conn: &ConnCounters,
        total: &ClassStats,
        window_s: f64,
        client_peaks: &[u64],
    ) -> OpenLoopResult;
}

impl OpenLoopOf for OpenLoopResult {
    fn measure(
        rate: f64,
        arrival: &str,
        max_in_flight: u32,
        conn: &ConnCounters,
        total: &ClassStats,
        window_s: f64,
        client_peaks: &[u64],
    ) -> OpenLoopResult {
        OpenLoopResult {
            rate,
            arrival: arrival.to_string(),
            max_in_flight,
            sends: conn.sends,
            sends_per_sec: if window_s > 0.0 {
                round(conn.sends as f64 / window_s, 1)
            } else {
                0.0
            },
            late_sends: conn.late_sends,
            late_tolerance_us: OpenLoop::LATE_TOLERANCE.as_micros() as u64,
            max_in_flight_hit: conn.in_flight_waits,
            unsent: conn.unsent,
            latency_as_sent_us: latency_of(
                total
                    .latency_as_sent
                    .as_ref()
                    .map(LatencySummary::of)
                    .unwrap_or_default(),
            ),
            peak_connections: client_peaks.iter().sum(),
            peak_connections_upper_bound: client_peaks.len() > 1,
            client_peak_connections: client_peaks.to_vec(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_results_name_the_engines_error_kinds_in_its_order() {
        let engine: Vec<&str> = ErrorKind::ALL.iter().map(|k| k.name()).collect();
        assert_eq!(engine, benchlab_results::ERROR_KINDS);
        let errors = errors_of(&Counters::default());
        assert_eq!(errors.len(), ErrorKind::COUNT);
    }
}
