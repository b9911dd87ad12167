//! The one list of metric families every exporter gives out, from a
//! [`Snapshot`]: OpenMetrics, remote write and OTLP render this list, so
//! they carry the same series (names per docs/metrics.md: OpenTelemetry's
//! dotted names, and Prometheus' by the usual translation — dots to
//! underscores, the unit and `_total` appended).

use crate::{Kind, MixKey, Snapshot, Window};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Type {
    /// Monotonic and cumulative since the exporter's start.
    Counter,
    Gauge,
    /// Quantiles of the last merged second, and a cumulative count.
    Summary,
    /// Cumulative buckets of fixed bounds ([`crate::buckets::BOUNDS_US`]),
    /// count and sum.
    Histogram,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Number(f64),
    Summary { quantiles: Vec<(f64, f64)>, count: u64 },
    Histogram(crate::buckets::Buckets),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// OpenTelemetry attribute keys (`error.type`); Prometheus label names
    /// are the same with dots as underscores.
    pub labels: Vec<(&'static str, String)>,
    pub value: Value,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Family {
    /// The OpenTelemetry name (`http.client.request.duration`).
    pub otel: &'static str,
    /// The OpenMetrics family name (`http_client_request_duration_seconds`),
    /// without `_total`.
    pub prom: &'static str,
    /// OpenMetrics unit (`seconds`, `bytes`; empty for none).
    pub unit: &'static str,
    /// UCUM unit for OTLP (`s`, `By`, `{request}`).
    pub otel_unit: &'static str,
    pub help: &'static str,
    pub kind: Type,
    pub points: Vec<Point>,
}

/// A Prometheus label name of an OpenTelemetry attribute key.
pub fn prom_label(key: &str) -> String {
    key.replace('.', "_")
}

fn mix_labels(kind: Kind, k: &MixKey) -> Vec<(&'static str, String)> {
    vec![
        ("kind", kind.label().to_string()),
        ("phase", k.phase.clone()),
        ("mix", k.mix.to_string()),
        ("run", k.run.to_string()),
    ]
}

fn with(mut l: Vec<(&'static str, String)>, key: &'static str, value: &str) -> Vec<(&'static str, String)> {
    l.push((key, value.to_string()));
    l
}

/// Every family of `s`, in a fixed order.
pub fn families(s: &Snapshot) -> Vec<Family> {
    let kind = s.kind;
    let counter = |otel, prom, unit, otel_unit, help, f: &dyn Fn(&crate::Counts) -> f64| Family {
        otel,
        prom,
        unit,
        otel_unit,
        help,
        kind: Type::Counter,
        points: s
            .counts
            .iter()
            .map(|((k, w), c)| Point {
                labels: with(mix_labels(kind, k), "window", w.label()),
                value: Value::Number(f(c)),
            })
            .collect(),
    };
    let result = |otel, prom, unit, otel_unit, help, f: &dyn Fn(&crate::Counts) -> f64| Family {
        otel,
        prom,
        unit,
        otel_unit,
        help,
        kind: Type::Counter,
        points: s
            .results
            .iter()
            .map(|(k, c)| Point {
                labels: mix_labels(kind, k),
                value: Value::Number(f(c)),
            })
            .collect(),
    };
    let mut out = vec![
        Family {
            otel: "benchlab.run.info",
            prom: "benchlab_run_info",
            unit: "",
            otel_unit: "1",
            help: "The run: its suite and what it counts (kind http: HTTP requests; kind file: file-server operations)",
            kind: Type::Gauge,
            points: vec![Point {
                labels: vec![
                    ("suite", s.suite.clone()),
                    ("kind", kind.label().to_string()),
                    ("version", env!("CARGO_PKG_VERSION").to_string()),
                ],
                value: Value::Number(1.0),
            }],
        },
        Family {
            otel: "benchlab.run.finished",
            prom: "benchlab_run_finished",
            unit: "",
            otel_unit: "1",
            help: "Whether the run has ended (1: every series holds its final figure)",
            kind: Type::Gauge,
            points: vec![Point {
                labels: Vec::new(),
                value: Value::Number(if s.finished { 1.0 } else { 0.0 }),
            }],
        },
        Family {
            otel: "benchlab.mix.current",
            prom: "benchlab_mix_current",
            unit: "",
            otel_unit: "1",
            help: "The number of the mix now running; 0 between mixes and after the run",
            kind: Type::Gauge,
            points: vec![Point {
                labels: Vec::new(),
                value: Value::Number(s.current.as_ref().map_or(0.0, |k| k.mix as f64)),
            }],
        },
        counter(
            "benchlab.requests",
            "benchlab_requests",
            "",
            "{request}",
            "Successful requests (kind file: operations), second by second: the sum of results.json's per_second",
            &|c| c.requests as f64,
        ),
        counter(
            "benchlab.errors",
            "benchlab_errors",
            "",
            "{request}",
            "Failed requests (kind file: operations), second by second: the sum of results.json's per_second",
            &|c| c.errors as f64,
        ),
        result(
            "benchlab.result.requests",
            "benchlab_result_requests",
            "",
            "{request}",
            "A finished mix's successful requests as results.json counts them (its measured window), set when the mix ends",
            &|c| c.requests as f64,
        ),
        result(
            "benchlab.result.errors",
            "benchlab_result_errors",
            "",
            "{request}",
            "A finished mix's failed requests as results.json counts them (errors_total), set when the mix ends",
            &|c| c.errors as f64,
        ),
        result(
            "benchlab.result.received",
            "benchlab_result_received_bytes",
            "bytes",
            "By",
            "A finished mix's bytes of successful requests as results.json counts them, set when the mix ends",
            &|c| c.bytes as f64,
        ),
        result(
            "benchlab.result.connections.opened",
            "benchlab_result_connections_opened",
            "",
            "{connection}",
            "A finished mix's connections established as results.json counts them, set when the mix ends",
            &|c| c.connections_opened as f64,
        ),
        Family {
            otel: "benchlab.result.errors.by_type",
            prom: "benchlab_result_errors_by_type",
            unit: "",
            otel_unit: "{request}",
            help: "Failed requests of each mix's measured window by error.type (docs/counting.md), set when the mix ends",
            kind: Type::Counter,
            points: s
                .errors_by_type
                .iter()
                .map(|((k, t), n)| Point {
                    labels: with(mix_labels(kind, k), "error.type", t),
                    value: Value::Number(*n as f64),
                })
                .collect(),
        },
        counter(
            "benchlab.received",
            "benchlab_received_bytes",
            "bytes",
            "By",
            "Bytes received for successful requests, as on the wire (docs/counting.md, bytes)",
            &|c| c.bytes as f64,
        ),
        counter(
            "benchlab.connections.opened",
            "benchlab_connections_opened",
            "",
            "{connection}",
            "Connections established",
            &|c| c.connections_opened as f64,
        ),
    ];
    let mut cpu = counter(
        "benchlab.client.cpu.time",
        "benchlab_client_cpu_seconds",
        "seconds",
        "s",
        "CPU time of the clients' worker threads (every client, on agents too), by cpu.mode",
        &|c| c.cpu_user_s,
    );
    cpu.points = s
        .counts
        .iter()
        .flat_map(|((k, w), c)| {
            let l = with(mix_labels(kind, k), "window", w.label());
            [
                Point {
                    labels: with(l.clone(), "cpu.mode", "user"),
                    value: Value::Number(c.cpu_user_s),
                },
                Point {
                    labels: with(l, "cpu.mode", "system"),
                    value: Value::Number(c.cpu_system_s),
                },
            ]
        })
        .collect();
    out.push(cpu);
    if kind == Kind::Http {
        out.push(Family {
            otel: "http.client.request.duration",
            prom: "benchlab_http_client_request_duration_seconds",
            unit: "seconds",
            otel_unit: "s",
            help: "Latency of successful requests in the measurement window (every client's HDR histograms, merged each second) in fixed buckets, 10 us to 60 s; count: the successful requests of the window's merged seconds",
            kind: Type::Histogram,
            points: s
                .buckets
                .iter()
                .map(|((k, w), b)| Point {
                    labels: with(mix_labels(kind, k), "window", w.label()),
                    value: Value::Histogram(*b),
                })
                .collect(),
        });
    }
    let (otel, prom, help) = match kind {
        Kind::Http => (
            // OpenTelemetry's name is the histogram's.
            "benchlab.http.client.request.duration.last_second",
            "http_client_request_duration_seconds",
            "Latency of successful requests: quantiles of the last merged second (every client's histograms merged); count: requests, ramps included",
        ),
        Kind::File => (
            "benchlab.file.operation.duration",
            "benchlab_file_operation_duration_seconds",
            "Latency of successful file operations: quantiles of the last merged second; count: operations, ramps included",
        ),
    };
    out.push(Family {
        otel,
        prom,
        unit: "seconds",
        otel_unit: "s",
        help,
        kind: Type::Summary,
        points: s
            .last
            .iter()
            .map(|(k, last)| {
                let count = [Window::Measured, Window::Ramp]
                    .iter()
                    .filter_map(|w| s.counts.get(&(k.clone(), *w)))
                    .map(|c| c.requests)
                    .sum();
                Point {
                    labels: mix_labels(kind, k),
                    value: Value::Summary {
                        quantiles: vec![(0.5, last.p50_us as f64 / 1e6), (0.99, last.p99_us as f64 / 1e6)],
                        count,
                    },
                }
            })
            .collect(),
    });
    out.push(Family {
        otel: "benchlab.loop.lag",
        prom: "benchlab_loop_lag_seconds",
        unit: "seconds",
        otel_unit: "s",
        help: "How late the clients' event loops ran their once-a-second tick in the last merged second, at most",
        kind: Type::Gauge,
        points: s
            .last
            .iter()
            .map(|(k, last)| Point {
                labels: mix_labels(kind, k),
                value: Value::Number(last.loop_lag_max_us as f64 / 1e6),
            })
            .collect(),
    });
    out.push(Family {
        otel: "http.client.active_requests",
        prom: "benchlab_requests_in_flight",
        unit: "",
        otel_unit: "{request}",
        help: "Requests sent and not yet answered at the end of the last merged second, every client's; 0 once the mix has ended",
        kind: Type::Gauge,
        points: s
            .last
            .iter()
            .filter_map(|(k, last)| {
                Some(Point {
                    labels: mix_labels(kind, k),
                    value: Value::Number(last.in_flight? as f64),
                })
            })
            .collect(),
    });
    out.push(Family {
        otel: "benchlab.requests.unfinished",
        prom: "benchlab_requests_unfinished",
        unit: "",
        otel_unit: "{request}",
        help: "Requests sent but unfinished when the mix ended (results.json in_flight), set when the mix ends",
        kind: Type::Gauge,
        points: s
            .unfinished
            .iter()
            .map(|(k, n)| Point {
                labels: mix_labels(kind, k),
                value: Value::Number(*n as f64),
            })
            .collect(),
    });
    out.push(Family {
        otel: "benchlab.mix.host.cpu.utilization",
        prom: "benchlab_mix_host_cpu_utilization_ratio",
        unit: "ratio",
        otel_unit: "1",
        help: "Busy share of a monitored host's CPUs (0 to 1) over each mix's measured window, from the monitors, set when the mix ends",
        kind: Type::Gauge,
        points: s
            .host_cpu
            .iter()
            .map(|((k, host), (role, busy))| Point {
                labels: with(with(mix_labels(kind, k), "host.name", host), "role", role),
                value: Value::Number(*busy),
            })
            .collect(),
    });
    let host = |h: &benchlab_results::resources::HostSample| vec![("host.name", h.host.clone())];
    let gauge = |otel, prom, unit, otel_unit, help, points: Vec<Point>| Family {
        otel,
        prom,
        unit,
        otel_unit,
        help,
        kind: Type::Gauge,
        points,
    };
    out.push(gauge(
        "system.cpu.utilization",
        "system_cpu_utilization_ratio",
        "ratio",
        "1",
        "Busy share of a monitored host's CPUs (0 to 1) in its latest second",
        s.hosts_now
            .iter()
            .map(|h| Point {
                labels: host(h),
                value: Value::Number(h.cpu.busy() / 100.0),
            })
            .collect(),
    ));
    out.push(gauge(
        "system.memory.usage",
        "system_memory_usage_bytes",
        "bytes",
        "By",
        "Memory a monitored host's processes and kernel hold (state used) and its page cache (state cached), latest second",
        s.hosts_now
            .iter()
            .flat_map(|h| {
                [
                    Point {
                        labels: with(host(h), "system.memory.state", "used"),
                        value: Value::Number(h.memory.used_bytes as f64),
                    },
                    Point {
                        labels: with(host(h), "system.memory.state", "cached"),
                        value: Value::Number(h.memory.page_cache_bytes as f64),
                    },
                ]
            })
            .collect(),
    ));
    out.push(gauge(
        "benchlab.host.network.rate",
        "benchlab_host_network_rate_bytes_per_second",
        "bytes_per_second",
        "By/s",
        "Bytes a second through a monitored host's network interfaces, by direction, latest second",
        s.hosts_now
            .iter()
            .flat_map(|h| {
                h.nics.iter().flat_map(move |n| {
                    let l = with(host(h), "network.interface.name", &n.name);
                    [
                        Point {
                            labels: with(l.clone(), "network.io.direction", "receive"),
                            value: Value::Number(n.rx_bytes_per_sec),
                        },
                        Point {
                            labels: with(l, "network.io.direction", "transmit"),
                            value: Value::Number(n.tx_bytes_per_sec),
                        },
                    ]
                })
            })
            .collect(),
    ));
    out.push(gauge(
        "benchlab.host.run_queue",
        "benchlab_host_run_queue",
        "",
        "{thread}",
        "Runnable tasks on a monitored host at the end of its latest second",
        s.hosts_now
            .iter()
            .map(|h| Point {
                labels: host(h),
                value: Value::Number(h.run_queue),
            })
            .collect(),
    ));
    out.push(Family {
        otel: "benchlab.seconds.merged",
        prom: "benchlab_seconds_merged",
        unit: "",
        otel_unit: "{second}",
        help: "Seconds merged from every client so far, ramps included",
        kind: Type::Counter,
        points: vec![Point {
            labels: Vec::new(),
            value: Value::Number(s.seconds_merged as f64),
        }],
    });
    out.push(Family {
        otel: "benchlab.export.failures",
        prom: "benchlab_export_failures",
        unit: "",
        otel_unit: "{push}",
        help: "Pushes that failed, by exporter (remote_write, otlp)",
        kind: Type::Counter,
        points: ["remote_write", "otlp"]
            .iter()
            .map(|e| Point {
                labels: vec![("exporter", e.to_string())],
                value: Value::Number(s.push_failures.get(e).copied().unwrap_or(0) as f64),
            })
            .collect(),
    });
    out
}
