//! OpenMetrics text (the `application/openmetrics-text` exposition format,
//! version 1.0.0): what a Prometheus scrape of `/metrics` reads.

use crate::buckets::BOUNDS_US;
use crate::series::{families, prom_label, Type, Value};
use crate::Snapshot;
use std::fmt::Write as _;

/// The content type of [`render`]'s text.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// A label value escaped as OpenMetrics wants: `\`, `"` and line feeds.
fn escape(v: &str) -> String {
    let mut o = String::with_capacity(v.len());
    for ch in v.chars() {
        match ch {
            '\\' => o.push_str("\\\\"),
            '"' => o.push_str("\\\""),
            '\n' => o.push_str("\\n"),
            c => o.push(c),
        }
    }
    o
}

fn labels(l: &[(&'static str, String)], extra: Option<(&str, String)>) -> String {
    let mut parts: Vec<String> = l
        .iter()
        .map(|(k, v)| format!("{}=\"{}\"", prom_label(k), escape(v)))
        .collect();
    if let Some((k, v)) = extra {
        parts.push(format!("{k}=\"{v}\""));
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!("{{{}}}", parts.join(","))
    }
}

/// A number as OpenMetrics writes it (integers without a fraction).
fn number(x: f64) -> String {
    if x.is_finite() && x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        format!("{x}")
    }
}

/// A bucket's bound in seconds as OpenMetrics' canonical `le` wants it:
/// a float, with `.0` on whole numbers (`1.0`, `0.00001`).
pub(crate) fn le(us: u64) -> String {
    if us.is_multiple_of(1_000_000) {
        format!("{}.0", us / 1_000_000)
    } else {
        format!("{}", us as f64 / 1e6)
    }
}

/// The whole exposition of `s`, ending with `# EOF`.
pub fn render(s: &Snapshot) -> String {
    let mut o = String::new();
    for f in families(s) {
        let kind = match f.kind {
            Type::Counter => "counter",
            Type::Gauge => "gauge",
            Type::Summary => "summary",
            Type::Histogram => "histogram",
        };
        let _ = writeln!(o, "# TYPE {} {kind}", f.prom);
        if !f.unit.is_empty() {
            let _ = writeln!(o, "# UNIT {} {}", f.prom, f.unit);
        }
        let _ = writeln!(o, "# HELP {} {}", f.prom, f.help);
        for p in &f.points {
            match &p.value {
                Value::Number(x) => {
                    let suffix = if f.kind == Type::Counter { "_total" } else { "" };
                    let _ = writeln!(o, "{}{suffix}{} {}", f.prom, labels(&p.labels, None), number(*x));
                }
                Value::Summary { quantiles, count } => {
                    for (q, v) in quantiles {
                        let _ = writeln!(
                            o,
                            "{}{} {}",
                            f.prom,
                            labels(&p.labels, Some(("quantile", number(*q)))),
                            number(*v)
                        );
                    }
                    let _ = writeln!(o, "{}_count{} {count}", f.prom, labels(&p.labels, None));
                }
                Value::Histogram(b) => {
                    // The point's labels once, `le` after them on each line.
                    let l = labels(&p.labels, None);
                    let open = l.strip_suffix('}').map_or("{".to_string(), |x| format!("{x},"));
                    for (i, n) in b.cumulative().iter().enumerate() {
                        let le = BOUNDS_US.get(i).map_or("+Inf".to_string(), |&us| le(us));
                        let _ = writeln!(o, "{}_bucket{open}le=\"{le}\"}} {n}", f.prom);
                    }
                    let _ = writeln!(o, "{}_count{l} {}", f.prom, b.count);
                    let _ = writeln!(o, "{}_sum{l} {}", f.prom, b.sum_s);
                }
            }
        }
    }
    o.push_str("# EOF\n");
    o
}

#[cfg(test)]
mod tests {
    use crate::tests::sample;
    use crate::MixEnd;

    #[test]
    fn the_text_has_every_family_with_exact_values() {
        let e = sample();
        let text = e.render_openmetrics();
        let mix = r#"kind="http",phase="static \"a\"",mix="1",run="1""#;
        for line in [
            "# TYPE benchlab_requests counter".to_string(),
            format!("benchlab_requests_total{{{mix},window=\"measured\"}} 300"),
            format!("benchlab_requests_total{{{mix},window=\"ramp\"}} 10"),
            format!("benchlab_errors_total{{{mix},window=\"measured\"}} 2"),
            "# UNIT benchlab_received_bytes bytes".to_string(),
            format!("benchlab_received_bytes_total{{{mix},window=\"measured\"}} 30000"),
            format!("benchlab_client_cpu_seconds_total{{{mix},window=\"measured\",cpu_mode=\"system\"}} 1"),
            "# TYPE http_client_request_duration_seconds summary".to_string(),
            format!("http_client_request_duration_seconds{{{mix},quantile=\"0.99\"}} 0.009"),
            format!("http_client_request_duration_seconds_count{{{mix}}} 310"),
            "benchlab_mix_current 1".to_string(),
            "# TYPE benchlab_http_client_request_duration_seconds histogram".to_string(),
            "# UNIT benchlab_http_client_request_duration_seconds seconds".to_string(),
            format!(
                "benchlab_http_client_request_duration_seconds_bucket{{{mix},window=\"measured\",le=\"0.0001\"}} 0"
            ),
            format!(
                "benchlab_http_client_request_duration_seconds_bucket{{{mix},window=\"measured\",le=\"0.0002\"}} 100"
            ),
            format!(
                "benchlab_http_client_request_duration_seconds_bucket{{{mix},window=\"measured\",le=\"0.002\"}} 100"
            ),
            format!(
                "benchlab_http_client_request_duration_seconds_bucket{{{mix},window=\"measured\",le=\"0.005\"}} 298"
            ),
            format!(
                "benchlab_http_client_request_duration_seconds_bucket{{{mix},window=\"measured\",le=\"0.02\"}} 298"
            ),
            format!(
                "benchlab_http_client_request_duration_seconds_bucket{{{mix},window=\"measured\",le=\"0.05\"}} 300"
            ),
            format!("benchlab_http_client_request_duration_seconds_bucket{{{mix},window=\"measured\",le=\"1.0\"}} 300"),
            format!(
                "benchlab_http_client_request_duration_seconds_bucket{{{mix},window=\"measured\",le=\"60.0\"}} 300"
            ),
            format!(
                "benchlab_http_client_request_duration_seconds_bucket{{{mix},window=\"measured\",le=\"+Inf\"}} 300"
            ),
            format!("benchlab_http_client_request_duration_seconds_count{{{mix},window=\"measured\"}} 300"),
            "# TYPE benchlab_requests_in_flight gauge".to_string(),
            format!("benchlab_requests_in_flight{{{mix}}} 4"),
            "benchlab_run_finished 0".to_string(),
            "benchlab_seconds_merged_total 3".to_string(),
        ] {
            assert!(text.lines().any(|l| l == line), "no line `{line}` in:\n{text}");
        }
        assert!(text.ends_with("# EOF\n"));
        assert!(
            !text.lines().any(
                |l| l.starts_with("benchlab_http_client_request_duration_seconds") && l.contains("window=\"ramp\"")
            ),
            "no ramp histogram: {text}"
        );
        // The sum: 100 × 150 µs + 198 × 3 ms + 2 × 30 ms (HDR's middles).
        let sum = text
            .lines()
            .find_map(|l| {
                l.strip_prefix(&format!(
                    "benchlab_http_client_request_duration_seconds_sum{{{mix},window=\"measured\"}} "
                ))
            })
            .and_then(|v| v.parse::<f64>().ok())
            .expect("a _sum");
        assert!((sum - 0.669).abs() < 0.001, "{sum}");
        // Every bucket line is cumulative, in order of its bound.
        let measured: Vec<u64> = text
            .lines()
            .filter(|l| {
                l.starts_with("benchlab_http_client_request_duration_seconds_bucket{") && l.contains("measured")
            })
            .filter_map(|l| l.rsplit(' ').next()?.parse().ok())
            .collect();
        assert_eq!(measured.len(), crate::buckets::BOUNDS_US.len() + 1);
        assert!(measured.windows(2).all(|w| w[0] <= w[1]), "{measured:?}");
        e.mix_finished(&MixEnd {
            requests: 301,
            errors: 2,
            errors_by_type: [("status".to_string(), 2)].into_iter().collect(),
            host_cpu: [("web1".to_string(), ("server".to_string(), 0.5))]
                .into_iter()
                .collect(),
            ..MixEnd::default()
        });
        let text = e.render_openmetrics();
        for line in [
            format!("benchlab_result_requests_total{{{mix}}} 301"),
            format!("benchlab_result_errors_total{{{mix}}} 2"),
            format!("benchlab_result_errors_by_type_total{{{mix},error_type=\"status\"}} 2"),
            // The live counter stays the seconds' sum.
            format!("benchlab_requests_total{{{mix},window=\"measured\"}} 300"),
            format!("benchlab_requests_in_flight{{{mix}}} 0"),
        ] {
            assert!(text.lines().any(|l| l == line), "no line `{line}` in:\n{text}");
        }
        assert!(text.contains("benchlab_mix_current 0\n"), "{text}");
        assert!(
            text.contains(&format!(
                "benchlab_mix_host_cpu_utilization_ratio{{{mix},host_name=\"web1\",role=\"server\"}} 0.5\n"
            )),
            "{text}"
        );
    }

    #[test]
    fn the_monitored_hosts_latest_second_is_read_at_each_scrape() {
        use benchlab_results::resources::{CpuShares, HostSample, MemorySample, NicSample};
        let e = sample();
        assert!(!e.render_openmetrics().contains("system_cpu_utilization_ratio{"));
        e.watch_hosts(std::sync::Arc::new(|| {
            vec![HostSample {
                host: "web1".into(),
                cpu: CpuShares {
                    user: 30.0,
                    system: 15.0,
                    iowait: 5.0,
                    idle: 50.0,
                    ..CpuShares::default()
                },
                memory: MemorySample {
                    total_bytes: 8_000,
                    used_bytes: 3_000,
                    page_cache_bytes: 1_000,
                },
                nics: vec![NicSample {
                    name: "eth0".into(),
                    rx_bytes_per_sec: 1_500.0,
                    tx_bytes_per_sec: 90_000.0,
                    ..NicSample::default()
                }],
                run_queue: 3.0,
                ..HostSample::default()
            }]
        }));
        let text = e.render_openmetrics();
        for line in [
            "system_cpu_utilization_ratio{host_name=\"web1\"} 0.45",
            "system_memory_usage_bytes{host_name=\"web1\",system_memory_state=\"used\"} 3000",
            "benchlab_host_network_rate_bytes_per_second{host_name=\"web1\",network_interface_name=\"eth0\",network_io_direction=\"transmit\"} 90000",
            "benchlab_host_run_queue{host_name=\"web1\"} 3",
        ] {
            assert!(text.lines().any(|l| l == line), "no line `{line}` in:\n{text}");
        }
    }
}
