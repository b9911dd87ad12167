//! Prometheus remote write (version 1.0: `prometheus.WriteRequest`,
//! protobuf, snappy block compression): every series of the snapshot with
//! one sample at the push's time. The few messages are written here with
//! prost's derive instead of generated from Prometheus' .proto files (which
//! pull in gogoproto): four messages, their field numbers from
//! prompb/types.proto and remote.proto.

use crate::buckets::BOUNDS_US;
use crate::openmetrics::le;
use crate::series::{families, prom_label, Type, Value};
use crate::Snapshot;
use prost::Message;

#[derive(Clone, PartialEq, prost::Message)]
pub struct WriteRequest {
    #[prost(message, repeated, tag = "1")]
    pub timeseries: Vec<TimeSeries>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct TimeSeries {
    /// Sorted by name, `__name__` first.
    #[prost(message, repeated, tag = "1")]
    pub labels: Vec<Label>,
    #[prost(message, repeated, tag = "2")]
    pub samples: Vec<Sample>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Label {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub value: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Sample {
    #[prost(double, tag = "1")]
    pub value: f64,
    /// Milliseconds since the Unix epoch.
    #[prost(int64, tag = "2")]
    pub timestamp: i64,
}

/// Headers a remote-write receiver expects beside the body.
pub const HEADERS: &[(&str, &str)] = &[
    ("Content-Type", "application/x-protobuf"),
    ("Content-Encoding", "snappy"),
    ("X-Prometheus-Remote-Write-Version", "0.1.0"),
];

fn series(
    name: String,
    labels: &[(&'static str, String)],
    extra: Option<(&str, String)>,
    value: f64,
    ts: i64,
) -> TimeSeries {
    let mut l: Vec<Label> = Vec::with_capacity(labels.len() + 2);
    l.extend(labels.iter().map(|(k, v)| Label {
        name: prom_label(k),
        value: v.clone(),
    }));
    if let Some((k, v)) = extra {
        l.push(Label {
            name: k.to_string(),
            value: v,
        });
    }
    l.push(Label {
        name: "__name__".into(),
        value: name,
    });
    l.sort_by(|a, b| a.name.cmp(&b.name));
    TimeSeries {
        labels: l,
        samples: vec![Sample { value, timestamp: ts }],
    }
}

/// The write request of `s` at `timestamp_ms`: the series OpenMetrics
/// gives, by the same names (`_total`, `_count`, `quantile`, `_bucket`
/// with `le`, `_sum`).
pub fn request(s: &Snapshot, timestamp_ms: i64) -> WriteRequest {
    build(s, timestamp_ms, None)
}

/// [`request`]; with `encoded`, the bucket series go there instead,
/// already encoded as `WriteRequest.timeseries` fields.
fn build(s: &Snapshot, timestamp_ms: i64, mut encoded: Option<&mut Vec<u8>>) -> WriteRequest {
    let mut out = Vec::new();
    for f in families(s) {
        for p in &f.points {
            match &p.value {
                Value::Number(x) => {
                    let name = if f.kind == Type::Counter {
                        format!("{}_total", f.prom)
                    } else {
                        f.prom.to_string()
                    };
                    out.push(series(name, &p.labels, None, *x, timestamp_ms));
                }
                Value::Summary { quantiles, count } => {
                    for (q, v) in quantiles {
                        out.push(series(
                            f.prom.to_string(),
                            &p.labels,
                            Some(("quantile", q.to_string())),
                            *v,
                            timestamp_ms,
                        ));
                    }
                    out.push(series(
                        format!("{}_count", f.prom),
                        &p.labels,
                        None,
                        *count as f64,
                        timestamp_ms,
                    ));
                }
                // Classic buckets, which every receiver takes: Prometheus
                // 2.42 stores remote write's native histograms only with
                // --enable-feature=native-histograms.
                Value::Histogram(b) => {
                    // The bucket series differ in `le` only: their labels
                    // are sorted once, `le` at its place.
                    let first = series(
                        format!("{}_bucket", f.prom),
                        &p.labels,
                        Some(("le", String::new())),
                        0.0,
                        timestamp_ms,
                    );
                    let at = first.labels.iter().position(|l| l.name == "le").unwrap_or(0);
                    let les = b
                        .cumulative()
                        .into_iter()
                        .enumerate()
                        .map(|(i, n)| (BOUNDS_US.get(i).map_or("+Inf".to_string(), |&us| le(us)), n));
                    match encoded.as_deref_mut() {
                        Some(buf) => encode_buckets(buf, &first, at, les),
                        None => {
                            for (le, n) in les {
                                let mut t = first.clone();
                                t.labels[at].value = le;
                                t.samples[0].value = n as f64;
                                out.push(t);
                            }
                        }
                    }
                    out.push(series(
                        format!("{}_count", f.prom),
                        &p.labels,
                        None,
                        b.count as f64,
                        timestamp_ms,
                    ));
                    out.push(series(
                        format!("{}_sum", f.prom),
                        &p.labels,
                        None,
                        b.sum_s,
                        timestamp_ms,
                    ));
                }
            }
        }
    }
    WriteRequest { timeseries: out }
}

/// Appends a histogram's bucket series to `buf` as encoded
/// `WriteRequest.timeseries` fields: `first`'s labels (sorted, `le` at
/// `at`) encoded once, each series only its `le` and sample. Protobuf
/// merges repeated fields across concatenated encodings, so these bytes
/// after a `WriteRequest`'s are the same request with these series: a
/// push's cost is mostly its bucket series, which would otherwise each
/// clone every label.
fn encode_buckets(buf: &mut Vec<u8>, first: &TimeSeries, at: usize, les: impl Iterator<Item = (String, u64)>) {
    use prost::encoding::{encode_key, encode_varint, message, WireType};
    let mut before = Vec::new();
    for l in &first.labels[..at] {
        message::encode(1, l, &mut before);
    }
    let mut after = Vec::new();
    for l in first.labels.iter().skip(at + 1) {
        message::encode(1, l, &mut after);
    }
    let mut one = Vec::new();
    for (value, n) in les {
        one.clear();
        one.extend_from_slice(&before);
        message::encode(
            1,
            &Label {
                name: "le".into(),
                value,
            },
            &mut one,
        );
        one.extend_from_slice(&after);
        message::encode(
            2,
            &Sample {
                value: n as f64,
                timestamp: first.samples.first().map_or(0, |s| s.timestamp),
            },
            &mut one,
        );
        encode_key(1, WireType::LengthDelimited, buf);
        encode_varint(one.len() as u64, buf);
        buf.extend_from_slice(&one);
    }
}

/// The request's body: protobuf, then snappy's block format (not framed),
/// as the protocol says.
pub fn body(s: &Snapshot, timestamp_ms: i64) -> Result<Vec<u8>, String> {
    let mut buckets = Vec::new();
    let mut raw = build(s, timestamp_ms, Some(&mut buckets)).encode_to_vec();
    raw.extend_from_slice(&buckets);
    snap::raw::Encoder::new()
        .compress_vec(&raw)
        .map_err(|e| format!("snappy: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::sample;

    #[test]
    fn the_body_decodes_back_to_the_openmetrics_series() {
        let s = sample().snapshot();
        let body = body(&s, 1_700_000_000_123).expect("encodes");
        let raw = snap::raw::Decoder::new().decompress_vec(&body).expect("snappy");
        let w = WriteRequest::decode(raw.as_slice()).expect("protobuf");
        let find = |name: &str, window: &str| {
            w.timeseries
                .iter()
                .find(|t| {
                    t.labels.iter().any(|l| l.name == "__name__" && l.value == name)
                        && t.labels.iter().any(|l| l.name == "window" && l.value == window)
                })
                .unwrap_or_else(|| panic!("no {name} {window} in {w:?}"))
        };
        let t = find("benchlab_requests_total", "measured");
        assert_eq!(
            t.samples,
            vec![Sample {
                value: 300.0,
                timestamp: 1_700_000_000_123
            }]
        );
        assert_eq!(t.labels[0].name, "__name__");
        let names: Vec<&str> = t.labels.iter().map(|l| l.name.as_str()).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        assert_eq!(names, sorted, "labels sorted by name");
        assert_eq!(find("benchlab_errors_total", "measured").samples[0].value, 2.0);
        assert_eq!(find("benchlab_requests_total", "ramp").samples[0].value, 10.0);
        assert!(w
            .timeseries
            .iter()
            .any(|t| t.labels.iter().any(|l| l.name == "quantile" && l.value == "0.99")));
        // The duration's classic buckets: +Inf and _count are the requests.
        let bucket = |le: &str| {
            w.timeseries
                .iter()
                .find(|t| {
                    t.labels.iter().any(|l| {
                        l.name == "__name__" && l.value == "benchlab_http_client_request_duration_seconds_bucket"
                    }) && t.labels.iter().any(|l| l.name == "window" && l.value == "measured")
                        && t.labels.iter().any(|l| l.name == "le" && l.value == le)
                })
                .unwrap_or_else(|| panic!("no bucket le={le}"))
                .samples[0]
                .value
        };
        // The hand-encoded bucket series decode to request()'s own.
        let mut want = request(&s, 1_700_000_000_123).timeseries;
        let mut got = w.timeseries.clone();
        let key = |t: &TimeSeries| format!("{:?}", t.labels);
        want.sort_by_key(key);
        got.sort_by_key(key);
        assert_eq!(got, want);
        assert_eq!(bucket("0.0002"), 100.0);
        assert_eq!(bucket("0.005"), 298.0);
        assert_eq!(bucket("+Inf"), 300.0);
        assert_eq!(
            find("benchlab_http_client_request_duration_seconds_count", "measured").samples[0].value,
            300.0
        );
    }
}
