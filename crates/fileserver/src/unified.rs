//! A file mix's measure as the lab's one result row ([`MixResult`]), so
//! file suites go through the controller's suite loop, writer, report and
//! compare as web suites do.
//!
//! Minimal on purpose: operations are the row's requests, bytes read and
//! written its bytes, each operation kind a class, and per client and per
//! second what the users counted. The full mapping (the `files` block,
//! errors by status) is `results::mix_result`'s, which replaces this one.

use crate::loadfile::OpKind;
use crate::run::FileMixMeasure;
use crate::stats::FileStats;
use benchlab_model::Mix;
use benchlab_results::{
    histogram_b64, round, ClassResult, ClientCpu, ClientResult, Figures, Histograms, Latency, MixResult, ParamsResult,
    RequestKinds, SecondResult,
};
use hdrhistogram::Histogram;
use std::collections::BTreeMap;

fn rate(n: u64, window: f64) -> f64 {
    if window > 0.0 {
        round(n as f64 / window, 3)
    } else {
        0.0
    }
}

fn latency(h: &Histogram<u64>) -> Latency {
    if h.is_empty() {
        return Latency::default();
    }
    Latency {
        mean: round(h.mean(), 3),
        p50: h.value_at_quantile(0.50),
        p90: h.value_at_quantile(0.90),
        p99: h.value_at_quantile(0.99),
        p999: h.value_at_quantile(0.999),
        max: h.max(),
    }
}

/// Every operation's latency of `s`, all kinds in one histogram.
fn all_latency(s: &FileStats) -> Histogram<u64> {
    let mut h = Histogram::new_with_bounds(1, crate::stats::LATENCY_MAX_US, 3).expect("valid constant bounds");
    for o in &s.ops {
        let _ = h.add(&o.latency);
    }
    h
}

/// Figures of operations `ops` (errors `errors` of them), `bytes` moved,
/// over `window` seconds. Every operation done is a request, one that
/// ended otherwise than expected an error too (as `results::mix_result`
/// counts them).
fn figures(ops: u64, errors: u64, bytes: u64, lat: &Histogram<u64>, window: f64) -> Figures {
    let done = ops;
    let mut by_kind = BTreeMap::new();
    by_kind.insert("status".to_string(), errors);
    Figures {
        requests: done,
        requests_per_sec: rate(done, window),
        bytes,
        bytes_per_sec: rate(bytes, window),
        mbit_per_sec: if window > 0.0 {
            round(bytes as f64 * 8.0 / 1e6 / window, 3)
        } else {
            0.0
        },
        body_bytes: bytes,
        error_bytes: 0,
        errors: by_kind,
        errors_total: errors,
        latency_us: latency(lat),
        error_latency_us: Latency::default(),
    }
}

fn stats_figures(s: &FileStats, window: f64) -> Figures {
    figures(
        s.operations(),
        s.error_count(),
        s.bytes_read + s.bytes_written,
        &all_latency(s),
        window,
    )
}

/// The mix's row: `users` is clients × threads per client.
pub fn mix_result(mix: &Mix, phase: &str, users: u32, m: &FileMixMeasure) -> MixResult {
    let p = &mix.params;
    let t = &m.total;
    let w = m.window;
    let total_ops = t.operations();
    let classes = OpKind::ALL
        .iter()
        .zip(&t.ops)
        .filter(|(_, o)| o.count > 0)
        .map(|(k, o)| ClassResult {
            name: k.name().to_string(),
            kind: "file".to_string(),
            spi: None,
            percent: 0.0,
            observed_percent: if total_ops == 0 {
                0.0
            } else {
                round(o.count as f64 * 100.0 / total_ops as f64, 3)
            },
            figures: {
                let (read, written) = match k {
                    OpKind::ReadX => (t.bytes_read, 0),
                    OpKind::WriteX => (0, t.bytes_written),
                    _ => (0, 0),
                };
                figures(o.count, o.errors, read + written, &o.latency, w)
            },
        })
        .collect();
    let client_data = m
        .clients
        .iter()
        .enumerate()
        .map(|(i, c)| ClientResult {
            client: i as u32 + 1,
            address: None,
            figures: stats_figures(c, w),
            connections_opened: u64::from(p.threads_per_client),
            in_flight: 0,
            delay_s: 0.0,
            taken_out: false,
            lost: None,
            cpu_s: 0.0,
            loop_lag_max_us: 0,
            seconds: Vec::new(),
        })
        .collect();
    // The window's seconds only, numbered from its start (a file mix
    // measures nothing in its ramps); the last may be a part of one.
    let per_second = t
        .seconds
        .iter()
        .enumerate()
        .map(|(i, s)| SecondResult {
            second: i as u32 + 1,
            in_window: true,
            requests: s.operations,
            errors: s.errors,
            bytes: s.bytes_read + s.bytes_written,
            connections_opened: 0,
            latency_p50_us: 0,
            latency_p99_us: 0,
            client_cpu_user_s: 0.0,
            client_cpu_system_s: 0.0,
            loop_lag_max_us: 0,
        })
        .collect();
    let all = all_latency(t);
    MixResult {
        mix: mix.number,
        phase: phase.to_string(),
        clients: mix.clients,
        clients_participating: mix.clients,
        threads: u64::from(users),
        partial: m.partial,
        window_s: round(w, 3),
        figures: stats_figures(t, w),
        reconnects: 0,
        in_flight: 0,
        connections_opened: u64::from(users),
        tls_full_handshakes: 0,
        tls_resumptions: 0,
        client_cpu_s: 0.0,
        client_cpu: ClientCpu::default(),
        params: ParamsResult {
            delay_s: p.delay.as_secs_f64(),
            ramp_up_s: p.ramp_up.as_secs_f64(),
            ramp_down_s: p.ramp_down.as_secs_f64(),
            length_s: p.length.as_secs_f64(),
            think_time_s: p.think_time.as_secs_f64(),
            threads_per_client: p.threads_per_client,
            receive_buffer: 0,
            http10_percent: 0,
            http10_keepalive: false,
            persistent_percent: 100,
            requests_per_connection: None,
            timeout_s: p.timeout.as_secs_f64(),
            workload: p.workload.clone(),
            // Stored: never a password.
            target: crate::smb::redact(&p.target),
        },
        client_data,
        classes,
        per_second,
        histograms: Histograms {
            latency_us: histogram_b64(&all),
            error_latency_us: String::new(),
            classes: OpKind::ALL
                .iter()
                .zip(&t.ops)
                .filter(|(_, o)| o.count > 0)
                .map(|(k, o)| (k.name().to_string(), histogram_b64(&o.latency)))
                .collect(),
            latency_as_sent_us: None,
            classes_as_sent: BTreeMap::new(),
        },
        users_arrived: u64::from(users),
        users_waiting: 0,
        request_kinds: RequestKinds::default(),
        warnings: Vec::new(),
        open_loop: None,
        search: None,
        repeats: None,
        resources: None,
        http2: None,
    }
}
