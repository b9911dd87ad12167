//! A file suite's results in the one results schema of every run
//! (`benchlab_results::Results`, docs/counting.md "File suites"): each mix
//! a [`MixResult`] whose operations are its requests, bytes read plus
//! written its bytes, one class per operation kind with its own HDR
//! histogram, errors by the NT status that came back, and what only file
//! servers have in [`MixFiles`]. The report, the workbook and `compare`
//! are the web suites' (crates/report), leading with Mbit/s.

use crate::loadfile::OpKind;
use crate::run::FileMixMeasure;
use crate::stats::FileStats;
use benchlab_model::{Mix, Suite};
use benchlab_results::load::{errors_by_got, file_protocol};
use benchlab_results::{
    histogram_b64, ClassResult, ClientCpu, ClientResult, Environment, Figures, Histograms, Latency, MixFiles,
    MixResult, ParamsResult, PhaseResult, Results, SecondResult, SuiteInfo, RESULTS_SCHEMA,
};
use hdrhistogram::Histogram;

fn rate(n: u64, s: f64) -> f64 {
    if s > 0.0 {
        n as f64 / s
    } else {
        0.0
    }
}

fn mbit(bytes: u64, s: f64) -> f64 {
    rate(bytes, s) * 8.0 / 1e6
}

fn latency(h: &Histogram<u64>) -> Latency {
    if h.is_empty() {
        return Latency::default();
    }
    Latency {
        mean: benchlab_results::round(h.mean(), 1),
        p50: h.value_at_quantile(0.5),
        p90: h.value_at_quantile(0.9),
        p99: h.value_at_quantile(0.99),
        p999: h.value_at_quantile(0.999),
        max: h.max(),
    }
}

/// The figures of `ops` operations moving `bytes` over `window` seconds.
fn figures(ops: u64, bytes: u64, errors_total: u64, w: f64) -> Figures {
    Figures {
        requests: ops,
        requests_per_sec: rate(ops, w),
        bytes,
        bytes_per_sec: rate(bytes, w),
        mbit_per_sec: mbit(bytes, w),
        // A file operation's payload is its bytes: no headers apart.
        body_bytes: bytes,
        error_bytes: 0,
        bytes_sent: 0,
        errors: Default::default(),
        errors_total,
        latency_us: Latency::default(),
        error_latency_us: Latency::default(),
    }
}

/// A mix's result from what it measured (docs/counting.md, "File suites"):
/// an operation is a request, `bytes` are bytes read + written.
pub fn mix_result(mix: &Mix, phase: &str, users: u32, m: &FileMixMeasure) -> MixResult {
    let t = &m.total;
    let w = m.window;
    let p = &mix.params;
    // Shown and stored: never a password (issue 21).
    let target = crate::smb::redact(&p.target);
    let mut all =
        Histogram::<u64>::new_with_bounds(1, crate::stats::LATENCY_MAX_US, 3).expect("valid constant histogram bounds");
    let mut class_histograms = std::collections::BTreeMap::new();
    let operations = t.operations();
    let classes: Vec<ClassResult> = OpKind::ALL
        .iter()
        .zip(&t.ops)
        .filter(|(_, o)| o.count > 0)
        .map(|(k, o)| {
            // Same bounds on both sides: the add cannot fail.
            let _ = all.add(&o.latency);
            class_histograms.insert(k.name().to_string(), histogram_b64(&o.latency));
            let bytes = match k {
                OpKind::ReadX => t.bytes_read,
                OpKind::WriteX => t.bytes_written,
                _ => 0,
            };
            let share = if operations > 0 {
                o.count as f64 * 100.0 / operations as f64
            } else {
                0.0
            };
            ClassResult {
                name: k.name().to_string(),
                kind: "file".into(),
                spi: None,
                // A loadfile fixes an order, not shares: the configured
                // share is the one observed.
                percent: share,
                observed_percent: share,
                figures: Figures {
                    errors: errors_by_got(&t.errors, Some(k.name())),
                    latency_us: latency(&o.latency),
                    ..figures(o.count, bytes, o.errors, w)
                },
            }
        })
        .collect();
    let client_data: Vec<ClientResult> = m
        .clients
        .iter()
        .enumerate()
        .map(|(i, c): (usize, &FileStats)| ClientResult {
            client: i as u32 + 1,
            address: None,
            figures: Figures {
                errors: errors_by_got(&c.errors, None),
                ..figures(c.operations(), c.bytes_read + c.bytes_written, c.error_count(), w)
            },
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
    let hi = client_data.iter().map(|c| c.figures.mbit_per_sec).fold(0.0, f64::max);
    let lo = client_data
        .iter()
        .map(|c| c.figures.mbit_per_sec)
        .fold(f64::INFINITY, f64::min);
    let ramp_up_s = p.ramp_up.as_secs_f64();
    MixResult {
        mix: mix.number,
        phase: phase.to_string(),
        clients: mix.clients,
        clients_participating: mix.clients,
        threads: users.into(),
        partial: m.partial,
        window_s: w,
        figures: Figures {
            errors: errors_by_got(&t.errors, None),
            latency_us: latency(&all),
            ..figures(operations, t.bytes_read + t.bytes_written, t.error_count(), w)
        },
        reconnects: 0,
        in_flight: 0,
        connections_opened: users.into(),
        tls_full_handshakes: 0,
        tls_resumptions: 0,
        client_cpu_s: 0.0,
        client_cpu: ClientCpu::default(),
        params: ParamsResult {
            delay_s: p.delay.as_secs_f64(),
            ramp_up_s,
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
            target: target.clone(),
            preconnect: false,
        },
        client_data,
        classes,
        // The window's seconds only, numbered from its start (a file mix
        // measures nothing in its ramps); the last may be a part of one.
        per_second: t
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
            .collect(),
        histograms: Histograms {
            latency_us: histogram_b64(&all),
            error_latency_us: String::new(),
            classes: class_histograms,
            latency_as_sent_us: None,
            classes_as_sent: Default::default(),
        },
        users_arrived: users.into(),
        users_waiting: 0,
        request_kinds: Default::default(),
        warnings: Vec::new(),
        open_loop: None,
        search: None,
        repeats: None,
        resources: None,
        http2: None,
        files: Some(MixFiles {
            protocol: file_protocol(&target).into(),
            users,
            bytes_read: t.bytes_read,
            bytes_written: t.bytes_written,
            read_mbit_per_sec: mbit(t.bytes_read, w),
            write_mbit_per_sec: mbit(t.bytes_written, w),
            not_sent: t.not_sent(),
            not_sent_by_operation: OpKind::ALL
                .iter()
                .zip(&t.ops)
                .filter(|(_, o)| o.not_sent > 0)
                .map(|(k, o)| (k.name().to_string(), o.not_sent))
                .collect(),
            errors_by_status: t.errors.clone(),
            loops: t.loops,
            prepared_bytes: m.prepared_bytes,
            fairness: if hi > 0.0 { lo / hi } else { 1.0 },
            seconds_bytes_written: t.seconds.iter().map(|s| s.bytes_written).collect(),
            clients_bytes_written: m.clients.iter().map(|c| c.bytes_written).collect(),
            smb: m.smb.clone(),
            wire_bytes_sent: t.wire.map(|w| w[0]),
            wire_bytes_received: t.wire.map(|w| w[1]),
            lease_breaks: t.wire.map(|w| w[2]),
            oplock_breaks: t.wire.map(|w| w[3]),
        }),
        http_command: None,
        flows: None,
        start_spread: None,
    }
}

/// A file suite's results before its first mix: the suite, the machine,
/// its phases (mixes are added as they finish).
pub fn results(suite: &Suite, command: &[String], started: u64) -> Results {
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .map(|s| s.trim().to_string())
            .unwrap_or_default()
    };
    let cpu = read("/proc/cpuinfo")
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
        .unwrap_or_default();
    // The suite's text for the disclosure, every smb:// password as `***`.
    let text = crate::smb::redact(
        &benchlab_model::input::read_bounded_text(&suite.path, "suite", benchlab_model::input::MAX_SUITE_BYTES)
            .unwrap_or_default(),
    );
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    Results {
        schema: RESULTS_SCHEMA.into(),
        suite: SuiteInfo {
            name: suite.name.clone(),
            description: suite.description.clone(),
            file: suite.path.display().to_string(),
            seed: suite.seed,
            max_clients: suite.max_clients,
            price: suite.price,
            text,
        },
        environment: Environment {
            benchlab_version: env!("CARGO_PKG_VERSION").to_string(),
            host: read("/proc/sys/kernel/hostname"),
            kernel: read("/proc/sys/kernel/osrelease"),
            cpu,
            cores,
            target: crate::smb::redact(&suite.target),
            started_unix: started,
            // The command line may hold smb://USER:PASS@ (--target):
            // stored with the password as `***`.
            command: command.iter().map(|a| crate::smb::redact(a)).collect(),
            time_scale: 1.0,
            host_facts: Some(benchlab_results::HostFacts::gather()),
            client_cpus: Vec::new(),
            server: None,
            cold_cache: false,
            cold_cache_method: None,
            agents: Vec::new(),
        },
        phases: suite
            .phases
            .iter()
            .map(|p| PhaseResult {
                name: p.name.clone(),
                workload: p.workload.clone(),
                target: crate::smb::redact(&p.target),
                mixes: p.mixes.iter().map(|&i| suite.mixes[i].number).collect(),
                search: None,
            })
            .collect(),
        mixes: Vec::new(),
        complete: false,
        thresholds: Vec::new(),
    }
}

/// The mix of most Mbit/s and how the mixes after it compare, for the
/// terminal's summary (the report states its own peak analysis).
#[derive(Debug, Clone, PartialEq)]
pub struct Peak {
    pub mix: usize,
    pub clients: u32,
    pub mbit_per_s: f64,
    /// Per later mix of the same phase: its Mbit/s as a percentage of the
    /// peak's ("held" near 100, "fell" well below).
    pub past_peak: Vec<(usize, f64)>,
}

/// The peak mix (most Mbit/s) and the shape of its phase past it.
pub fn peak(mixes: &[MixResult]) -> Option<Peak> {
    let mbit = |m: &MixResult| m.figures.mbit_per_sec;
    let best = mixes
        .iter()
        .max_by(|a, b| mbit(a).total_cmp(&mbit(b)).then(b.mix.cmp(&a.mix)))?;
    Some(Peak {
        mix: best.mix,
        clients: best.clients,
        mbit_per_s: mbit(best),
        past_peak: mixes
            .iter()
            .filter(|m| m.mix > best.mix && m.phase == best.phase)
            .map(|m| {
                let pct = if mbit(best) > 0.0 {
                    mbit(m) / mbit(best) * 100.0
                } else {
                    0.0
                };
                (m.mix, pct)
            })
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::Status;
    use benchlab_model::{Arrival, MixParams};
    use std::time::Duration;

    fn mix(number: usize, clients: u32, target: &str) -> Mix {
        Mix {
            number,
            clients,
            phase: 0,
            params: MixParams {
                delay: Duration::ZERO,
                ramp_up: Duration::from_secs(1),
                ramp_down: Duration::from_secs(1),
                length: Duration::from_secs(4),
                think_time: Duration::ZERO,
                threads_per_client: 2,
                rate: None,
                arrival: Arrival::Constant,
                max_in_flight: 1,
                receive_buffer: 65536,
                http10_percent: 0,
                http10_keepalive: false,
                persistent_percent: 100,
                requests_per_connection: None,
                http2: false,
                http3: false,
                streams_per_connection: 1,
                preconnect: false,
                timeout: Duration::from_secs(10),
                workload: "lf".into(),
                target: target.into(),
            },
        }
    }

    /// Client 1: 3 ReadX of 1000 bytes (one answered other than
    /// expected), 1 WriteX of 500, 1 LockX not sent; client 2: 1 WriteX of
    /// 1500. Over a 2 s window.
    fn measure() -> FileMixMeasure {
        let mut c1 = FileStats::default();
        for us in [100, 200, 300] {
            c1.record(OpKind::ReadX, us, &Status::Ok, &Status::Ok);
        }
        c1.record(OpKind::ReadX, 400, &Status::Ok, &Status::ObjectNameNotFound);
        c1.record(OpKind::WriteX, 50, &Status::Ok, &Status::Ok);
        c1.record(OpKind::LockX, 0, &Status::Ok, &Status::NotSent);
        c1.bytes_read = 3000;
        c1.bytes_written = 500;
        c1.record_second(0, false, 3000, 0);
        c1.record_second(0, true, 0, 0);
        c1.record_second(1, false, 0, 500);
        let mut c2 = FileStats::default();
        c2.record(OpKind::WriteX, 60, &Status::Ok, &Status::Ok);
        c2.bytes_written = 1500;
        c2.record_second(1, false, 0, 1500);
        let mut total = FileStats::default();
        total.merge(&c1);
        total.merge(&c2);
        FileMixMeasure {
            total,
            clients: vec![c1, c2],
            window: 2.0,
            prepared_bytes: 7,
            partial: false,
            smb: None,
        }
    }

    /// The mapping of docs/counting.md, "File suites", value by value.
    #[test]
    fn a_file_mix_is_a_mix_result_of_operations() {
        let m = mix_result(&mix(3, 2, "smb://u:secret@h/s"), "p", 4, &measure());
        assert_eq!((m.mix, m.phase.as_str(), m.clients, m.threads), (3, "p", 2, 4));
        let f = &m.figures;
        // 6 operations done; the LockX not sent is in none of them.
        assert_eq!((f.requests, f.errors_total, f.bytes), (6, 1, 5000));
        assert_eq!(
            (f.requests_per_sec, f.bytes_per_sec, f.mbit_per_sec),
            (3.0, 2500.0, 0.02)
        );
        assert_eq!(f.errors.get("NT_STATUS_OBJECT_NAME_NOT_FOUND"), Some(&1));
        assert_eq!((f.latency_us.p50, f.latency_us.max), (100, 400));
        let names: Vec<&str> = m.classes.iter().map(|c| c.name.as_str()).collect();
        // In the order of the dbench format's kinds; only those done.
        assert_eq!(names, ["ReadX", "WriteX"]);
        let read = m.classes.iter().find(|c| c.name == "ReadX").expect("ReadX");
        assert_eq!(
            (read.kind.as_str(), read.figures.requests, read.figures.bytes),
            ("file", 4, 3000)
        );
        assert_eq!(read.figures.errors_total, 1);
        let write = m.classes.iter().find(|c| c.name == "WriteX").expect("WriteX");
        assert_eq!((write.figures.requests, write.figures.bytes), (2, 2000));
        assert_eq!(write.figures.latency_us.max, 60);
        assert_eq!(m.histograms.classes.len(), 2);
        assert!(!m.histograms.latency_us.is_empty());
        let x = m.files.as_ref().expect("files");
        assert_eq!(
            (x.protocol.as_str(), x.users, x.bytes_read, x.bytes_written),
            ("smb", 4, 3000, 2000)
        );
        assert_eq!((x.not_sent, x.not_sent_by_operation.get("LockX")), (1, Some(&1)));
        assert_eq!((x.prepared_bytes, x.loops), (7, 0));
        assert_eq!(x.errors_by_status.values().sum::<u64>(), 1);
        // Client 1 moved 3500 bytes, client 2 1500: 0.006 over 0.014 Mbit/s.
        assert_eq!(x.clients_bytes_written, vec![500, 1500]);
        assert!((x.fairness - 1500.0 / 3500.0).abs() < 1e-9, "{}", x.fairness);
        let seconds: Vec<(u64, u64, u64)> = m.per_second.iter().map(|s| (s.requests, s.errors, s.bytes)).collect();
        assert_eq!(seconds, vec![(2, 1, 3000), (2, 0, 2000)]);
        assert_eq!(x.seconds_bytes_written, vec![0, 2000]);
        let clients: Vec<(u64, u64)> = m
            .client_data
            .iter()
            .map(|c| (c.figures.requests, c.figures.bytes))
            .collect();
        assert_eq!(clients, vec![(5, 3500), (1, 1500)]);
        // Never a password.
        assert_eq!(m.params.target, "smb://u:***@h/s");
        assert_eq!(m.kind(), benchlab_results::RunKind::File);
        assert_eq!(m.lead_rate(), 0.02);
    }

    /// A web mix's JSON has no `files` key: web results are unchanged.
    #[test]
    fn only_file_mixes_carry_the_files_block() {
        let mut m = mix_result(&mix(1, 1, "file:///x"), "p", 2, &measure());
        assert!(serde_json::to_value(&m).expect("json").get("files").is_some());
        m.files = None;
        assert!(serde_json::to_value(&m).expect("json").get("files").is_none());
    }

    #[test]
    fn the_peak_and_the_shape_past_it() {
        let at = |n: usize, mbit: f64| {
            let mut m = mix_result(&mix(n, n as u32, "file:///x"), "p", 1, &measure());
            m.figures.mbit_per_sec = mbit;
            m
        };
        let p = peak(&[at(1, 10.0), at(2, 40.0), at(3, 30.0), at(4, 20.0)]).expect("peak");
        assert_eq!((p.mix, p.clients), (2, 2));
        assert_eq!(p.past_peak, vec![(3, 75.0), (4, 50.0)]);
    }
}
