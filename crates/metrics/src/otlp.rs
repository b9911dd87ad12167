//! OTLP metrics over HTTP/protobuf (`POST /v1/metrics`, an
//! `ExportMetricsServiceRequest`): the same families as OpenMetrics, by
//! their OpenTelemetry names, counters as cumulative monotonic sums.
//!
//! The dozen messages needed are written here with prost's derive, their
//! field numbers from opentelemetry-proto's `metrics/v1/metrics.proto`,
//! `common/v1/common.proto` and `resource/v1/resource.proto`, instead of the
//! `opentelemetry-proto` crate: that crate brings the OpenTelemetry SDK's
//! types, serde and tonic's generated services for every signal, where the
//! exporter needs only these messages (and the tests decode them with a
//! decoder of their own).

use crate::series::{families, Type, Value};
use crate::{unix_nanos, Snapshot};
use prost::Message;
use std::time::SystemTime;

#[derive(Clone, PartialEq, prost::Message)]
pub struct ExportMetricsServiceRequest {
    #[prost(message, repeated, tag = "1")]
    pub resource_metrics: Vec<ResourceMetrics>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ResourceMetrics {
    #[prost(message, optional, tag = "1")]
    pub resource: Option<Resource>,
    #[prost(message, repeated, tag = "2")]
    pub scope_metrics: Vec<ScopeMetrics>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Resource {
    #[prost(message, repeated, tag = "1")]
    pub attributes: Vec<KeyValue>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ScopeMetrics {
    #[prost(message, optional, tag = "1")]
    pub scope: Option<InstrumentationScope>,
    #[prost(message, repeated, tag = "2")]
    pub metrics: Vec<Metric>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct InstrumentationScope {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub version: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct KeyValue {
    #[prost(string, tag = "1")]
    pub key: String,
    #[prost(message, optional, tag = "2")]
    pub value: Option<AnyValue>,
}

/// Only its string form is used.
#[derive(Clone, PartialEq, prost::Message)]
pub struct AnyValue {
    #[prost(string, tag = "1")]
    pub string_value: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Metric {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub description: String,
    #[prost(string, tag = "3")]
    pub unit: String,
    #[prost(oneof = "Data", tags = "5, 7, 9, 11")]
    pub data: Option<Data>,
}

#[derive(Clone, PartialEq, prost::Oneof)]
pub enum Data {
    #[prost(message, tag = "5")]
    Gauge(Gauge),
    #[prost(message, tag = "7")]
    Sum(Sum),
    #[prost(message, tag = "9")]
    Histogram(Histogram),
    #[prost(message, tag = "11")]
    Summary(Summary),
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Gauge {
    #[prost(message, repeated, tag = "1")]
    pub data_points: Vec<NumberDataPoint>,
}

/// `AggregationTemporality.AGGREGATION_TEMPORALITY_CUMULATIVE`.
pub const CUMULATIVE: i32 = 2;

#[derive(Clone, PartialEq, prost::Message)]
pub struct Sum {
    #[prost(message, repeated, tag = "1")]
    pub data_points: Vec<NumberDataPoint>,
    #[prost(int32, tag = "2")]
    pub aggregation_temporality: i32,
    #[prost(bool, tag = "3")]
    pub is_monotonic: bool,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct NumberDataPoint {
    #[prost(message, repeated, tag = "7")]
    pub attributes: Vec<KeyValue>,
    #[prost(fixed64, tag = "2")]
    pub start_time_unix_nano: u64,
    #[prost(fixed64, tag = "3")]
    pub time_unix_nano: u64,
    #[prost(double, tag = "4")]
    pub as_double: f64,
}

/// An explicit-bounds histogram (cumulative temporality).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Histogram {
    #[prost(message, repeated, tag = "1")]
    pub data_points: Vec<HistogramDataPoint>,
    #[prost(int32, tag = "2")]
    pub aggregation_temporality: i32,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct HistogramDataPoint {
    #[prost(message, repeated, tag = "9")]
    pub attributes: Vec<KeyValue>,
    #[prost(fixed64, tag = "2")]
    pub start_time_unix_nano: u64,
    #[prost(fixed64, tag = "3")]
    pub time_unix_nano: u64,
    #[prost(fixed64, tag = "4")]
    pub count: u64,
    #[prost(double, optional, tag = "5")]
    pub sum: Option<f64>,
    /// Per bucket, not cumulative: one more than `explicit_bounds`.
    #[prost(fixed64, repeated, tag = "6")]
    pub bucket_counts: Vec<u64>,
    #[prost(double, repeated, tag = "7")]
    pub explicit_bounds: Vec<f64>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Summary {
    #[prost(message, repeated, tag = "1")]
    pub data_points: Vec<SummaryDataPoint>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct SummaryDataPoint {
    #[prost(message, repeated, tag = "7")]
    pub attributes: Vec<KeyValue>,
    #[prost(fixed64, tag = "2")]
    pub start_time_unix_nano: u64,
    #[prost(fixed64, tag = "3")]
    pub time_unix_nano: u64,
    #[prost(fixed64, tag = "4")]
    pub count: u64,
    #[prost(double, tag = "5")]
    pub sum: f64,
    #[prost(message, repeated, tag = "6")]
    pub quantile_values: Vec<ValueAtQuantile>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ValueAtQuantile {
    #[prost(double, tag = "1")]
    pub quantile: f64,
    #[prost(double, tag = "2")]
    pub value: f64,
}

/// Headers of an OTLP/HTTP protobuf request.
pub const HEADERS: &[(&str, &str)] = &[("Content-Type", "application/x-protobuf")];

fn kv(key: &str, value: &str) -> KeyValue {
    KeyValue {
        key: key.to_string(),
        value: Some(AnyValue {
            string_value: value.to_string(),
        }),
    }
}

/// The export request of `s` at `now`. Summaries carry no sum (the merged
/// seconds give percentiles and counts only): `sum` is 0.
pub fn request(s: &Snapshot, now: SystemTime) -> ExportMetricsServiceRequest {
    let start = unix_nanos(s.start);
    let time = unix_nanos(now);
    let bounds = crate::buckets::bounds_s();
    let attrs = |l: &[(&'static str, String)]| l.iter().map(|(k, v)| kv(k, v)).collect::<Vec<_>>();
    let number = |l: &[(&'static str, String)], x: f64| NumberDataPoint {
        attributes: attrs(l),
        start_time_unix_nano: start,
        time_unix_nano: time,
        as_double: x,
    };
    let metrics = families(s)
        .into_iter()
        .map(|f| {
            let data = match f.kind {
                Type::Counter => Data::Sum(Sum {
                    data_points: f
                        .points
                        .iter()
                        .filter_map(|p| match p.value {
                            Value::Number(x) => Some(number(&p.labels, x)),
                            Value::Summary { .. } | Value::Histogram(_) => None,
                        })
                        .collect(),
                    aggregation_temporality: CUMULATIVE,
                    is_monotonic: true,
                }),
                Type::Gauge => Data::Gauge(Gauge {
                    data_points: f
                        .points
                        .iter()
                        .filter_map(|p| match p.value {
                            Value::Number(x) => Some(number(&p.labels, x)),
                            Value::Summary { .. } | Value::Histogram(_) => None,
                        })
                        .collect(),
                }),
                Type::Summary => Data::Summary(Summary {
                    data_points: f
                        .points
                        .iter()
                        .filter_map(|p| match &p.value {
                            Value::Summary { quantiles, count } => Some(SummaryDataPoint {
                                attributes: attrs(&p.labels),
                                start_time_unix_nano: start,
                                time_unix_nano: time,
                                count: *count,
                                sum: 0.0,
                                quantile_values: quantiles
                                    .iter()
                                    .map(|&(quantile, value)| ValueAtQuantile { quantile, value })
                                    .collect(),
                            }),
                            Value::Number(_) | Value::Histogram(_) => None,
                        })
                        .collect(),
                }),
                Type::Histogram => Data::Histogram(Histogram {
                    data_points: f
                        .points
                        .iter()
                        .filter_map(|p| match &p.value {
                            Value::Histogram(b) => Some(HistogramDataPoint {
                                attributes: attrs(&p.labels),
                                start_time_unix_nano: start,
                                time_unix_nano: time,
                                count: b.count,
                                sum: Some(b.sum_s),
                                bucket_counts: b.counts.to_vec(),
                                explicit_bounds: bounds.clone(),
                            }),
                            _ => None,
                        })
                        .collect(),
                    aggregation_temporality: CUMULATIVE,
                }),
            };
            Metric {
                name: f.otel.to_string(),
                description: f.help.to_string(),
                unit: f.otel_unit.to_string(),
                data: Some(data),
            }
        })
        .collect();
    ExportMetricsServiceRequest {
        resource_metrics: vec![ResourceMetrics {
            resource: Some(Resource {
                attributes: vec![
                    kv("service.name", "benchlab"),
                    kv("service.version", env!("CARGO_PKG_VERSION")),
                ],
            }),
            scope_metrics: vec![ScopeMetrics {
                scope: Some(InstrumentationScope {
                    name: "benchlab".into(),
                    version: env!("CARGO_PKG_VERSION").into(),
                }),
                metrics,
            }],
        }],
    }
}

pub fn body(s: &Snapshot, now: SystemTime) -> Vec<u8> {
    request(s, now).encode_to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::sample;

    #[test]
    fn counters_are_cumulative_monotonic_sums_by_otel_name() {
        let s = sample().snapshot();
        let r = ExportMetricsServiceRequest::decode(body(&s, SystemTime::now()).as_slice()).expect("decodes");
        let metrics = &r.resource_metrics[0].scope_metrics[0].metrics;
        let m = metrics
            .iter()
            .find(|m| m.name == "benchlab.requests")
            .expect("benchlab.requests");
        let Some(Data::Sum(sum)) = &m.data else {
            panic!("not a sum: {m:?}")
        };
        assert_eq!(sum.aggregation_temporality, CUMULATIVE);
        assert!(sum.is_monotonic);
        let measured: f64 = sum
            .data_points
            .iter()
            .filter(|p| p.attributes.contains(&kv("window", "measured")))
            .map(|p| p.as_double)
            .sum();
        assert_eq!(measured, 300.0);
        let d = metrics
            .iter()
            .find(|m| m.name == "http.client.request.duration")
            .expect("the duration");
        assert_eq!(d.unit, "s");
        let Some(Data::Histogram(h)) = &d.data else {
            panic!("not a histogram: {d:?}")
        };
        assert_eq!(h.aggregation_temporality, CUMULATIVE);
        let p = h
            .data_points
            .iter()
            .find(|p| p.attributes.contains(&kv("window", "measured")))
            .expect("the measured window's");
        assert_eq!(p.count, 300);
        assert_eq!(p.bucket_counts.iter().sum::<u64>(), 300);
        assert_eq!(p.bucket_counts.len(), p.explicit_bounds.len() + 1);
        assert_eq!(p.explicit_bounds[3], 0.0001);
        assert_eq!(
            (p.bucket_counts[4], p.bucket_counts[8], p.bucket_counts[11]),
            (100, 198, 2)
        );
        let d = metrics
            .iter()
            .find(|m| m.name == "benchlab.http.client.request.duration.last_second")
            .expect("the last second's quantiles");
        let Some(Data::Summary(sm)) = &d.data else {
            panic!("not a summary: {d:?}")
        };
        assert_eq!(sm.data_points[0].count, 310);
        let g = metrics
            .iter()
            .find(|m| m.name == "http.client.active_requests")
            .expect("in flight");
        let Some(Data::Gauge(g)) = &g.data else {
            panic!("not a gauge: {g:?}")
        };
        assert_eq!(g.data_points[0].as_double, 4.0);
        assert_eq!(
            sm.data_points[0].quantile_values[1],
            ValueAtQuantile {
                quantile: 0.99,
                value: 0.009
            }
        );
    }
}
