//! Serde for the latency histograms, so a client's seconds and report can
//! cross a process boundary (remote agents) as the same types the
//! controller merges in-process.
//!
//! A histogram travels in HDR's standard V2 serialisation (base64 text in
//! human-readable formats such as JSON, raw bytes otherwise). Decoding
//! accepts only the engine's own bounds (1 µs .. one hour, 3 significant
//! digits): adding histograms of other bounds could fail or resize, and a
//! peer that sends other bounds is not a benchlab client.

use crate::stats::LATENCY_MAX_US;
use hdrhistogram::serialization::{Deserializer as HdrDeserializer, Serializer as _, V2Serializer};
use hdrhistogram::Histogram;
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serializer};

/// The V2 bytes of `h`.
pub fn histogram_bytes(h: &Histogram<u64>) -> Vec<u8> {
    let mut buf = Vec::new();
    // Serialising into a Vec cannot fail for a histogram of our bounds.
    let _ = V2Serializer::new().serialize(h, &mut buf);
    buf
}

/// Histogram bytes from a peer (an agent's seconds and reports) that are
/// not one of the engine's histograms.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HistogramBytesError {
    #[error("not a V2 latency histogram of benchlab's bounds (1 us to 1 h, 3 digits)")]
    NotOurs,
    #[error("bad histogram: {0}")]
    Decode(String),
}

impl benchlab_input::Classify for HistogramBytesError {
    /// A peer's bad data: the run cannot use it.
    fn exit_class(&self) -> benchlab_input::ExitClass {
        benchlab_input::ExitClass::CannotRun
    }
}

/// The histogram of V2 `bytes`, checked to have the engine's bounds.
pub fn histogram_of_bytes(bytes: &[u8]) -> Result<Histogram<u64>, HistogramBytesError> {
    // Read the header before the deserializer allocates: a crafted
    // header could ask for a histogram, or a payload buffer, of any size.
    let header = benchlab_input::hdr::v2_header(bytes, LATENCY_MAX_US).map_err(|_| HistogramBytesError::NotOurs)?;
    if header.significant_digits != 3 || header.highest != LATENCY_MAX_US {
        return Err(HistogramBytesError::NotOurs);
    }
    // The header's bounds are ours, so the histogram is one of ours: adding
    // it to another cannot fail (copying it into a fresh one to be sure
    // doubled the controller's cost per second received).
    HdrDeserializer::new()
        .deserialize(&mut &bytes[..])
        .map_err(|e| HistogramBytesError::Decode(format!("{e:?}")))
}

pub(crate) fn serialize<S: Serializer>(h: &Histogram<u64>, s: S) -> Result<S::Ok, S::Error> {
    let bytes = histogram_bytes(h);
    if s.is_human_readable() {
        use base64::Engine as _;
        s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(bytes))
    } else {
        s.serialize_bytes(&bytes)
    }
}

pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Histogram<u64>, D::Error> {
    let bytes = if d.is_human_readable() {
        use base64::Engine as _;
        let text = String::deserialize(d)?;
        base64::engine::general_purpose::STANDARD
            .decode(text)
            .map_err(D::Error::custom)?
    } else {
        Vec::<u8>::deserialize(d)?
    };
    histogram_of_bytes(&bytes).map_err(D::Error::custom)
}

/// The same for an optional histogram.
pub(crate) mod option {
    use super::*;
    use serde::Serialize;

    pub(crate) fn serialize<S: Serializer>(h: &Option<Histogram<u64>>, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Wrap<'a>(#[serde(serialize_with = "super::serialize")] &'a Histogram<u64>);
        h.as_ref().map(Wrap).serialize(s)
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Histogram<u64>>, D::Error> {
        #[derive(Deserialize)]
        struct Wrap(#[serde(deserialize_with = "super::deserialize")] Histogram<u64>);
        Ok(Option::<Wrap>::deserialize(d)?.map(|w| w.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::new_latency_histogram;
    use crate::{ClientReport, Second};

    #[test]
    fn a_second_and_a_report_cross_as_json_unchanged() {
        let mut h = new_latency_histogram();
        for v in [1, 17, 250, 9_999, 3_000_000] {
            h.record(v).unwrap();
        }
        let mut stats = crate::Stats::open_loop(2);
        stats.classes[1].latency.add(&h).unwrap();
        stats.classes[1].counters.requests = 5;
        let second = Second {
            second: 3,
            counters: stats.classes[1].counters.clone(),
            conn: Default::default(),
            latency: crate::LatencySummary::of(&h),
            histogram: Some(h.clone()),
            load: crate::LoopLoad {
                cpu_user_us: 1_200,
                cpu_system_us: 300,
                loop_lag_max_us: 45,
                in_flight: 7,
            },
        };
        let back: Second = serde_json::from_slice(&serde_json::to_vec(&second).unwrap()).unwrap();
        assert_eq!(back, second);
        let report = ClientReport {
            stats,
            seconds: vec![second],
            in_flight: 2,
            cpu_user: std::time::Duration::from_micros(1500),
            cpu_system: Default::default(),
            elapsed: std::time::Duration::from_secs(4),
            tls_error: Some("x".into()),
            check_failures: Default::default(),
            users_arrived: 1,
            users_waiting: 0,
            peak_connections: 9,
            threads_lost: 0,
            first_send_unix_ns: Some(1_764_000_000_123_456_789),
            first_send_uncertainty_ns: 0,
            h2_settings: Some(crate::h2::conn::PeerSettings {
                max_concurrent_streams: Some(100),
                ..Default::default()
            }),
        };
        let back: ClientReport = serde_json::from_slice(&serde_json::to_vec(&report).unwrap()).unwrap();
        assert_eq!(back.stats.classes[1].latency, h);
        assert_eq!(back.stats.classes[0].latency_as_sent.as_ref().map(|h| h.len()), Some(0));
        assert_eq!(back.seconds, report.seconds);
        // An agent's HTTP/2 client reports the server's SETTINGS too.
        assert_eq!(back.h2_settings, report.h2_settings);
        // And when its first request began, for the start spread.
        assert_eq!(back.first_send_unix_ns, report.first_send_unix_ns);
        assert_eq!(
            (back.in_flight, back.cpu_user, back.peak_connections),
            (2, report.cpu_user, 9)
        );
    }

    #[test]
    fn histograms_of_other_bounds_or_garbage_are_refused() {
        let other: Histogram<u64> = Histogram::new_with_bounds(1, 1000, 2).unwrap();
        assert!(histogram_of_bytes(&histogram_bytes(&other)).is_err());
        assert!(histogram_of_bytes(b"").is_err());
        let mut h = new_latency_histogram();
        h.record(123_456).unwrap();
        let mut cut = histogram_bytes(&h);
        cut.truncate(cut.len() - 1);
        assert!(histogram_of_bytes(&cut).is_err());
        // A header of ours whose payload length the bytes do not hold is
        // refused by the header check, before the deserializer would size
        // a 4 GiB buffer by it (it used to get that far: a Decode error).
        let mut long = histogram_bytes(&h);
        long[4..8].copy_from_slice(&u32::MAX.to_be_bytes());
        assert_eq!(histogram_of_bytes(&long).unwrap_err(), HistogramBytesError::NotOurs);
    }
}
