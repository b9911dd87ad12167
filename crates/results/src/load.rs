//! The one loader of results files: `report`, `compare` and `reproduce`
//! read every results file through [`load`], whatever wrote it. It reads
//! the `schema` field and upgrades what older benchlab versions wrote to
//! [`Results`] (`benchlab.results/1`):
//!
//! - `benchlab.file-results/1`: a file suite's results before file suites
//!   wrote `benchlab.results/1` (mixes of `FileMixResult`);
//! - `benchlab.http/1`: `benchlab http --json` before it printed a one-mix
//!   [`Results`];
//! - `benchlab.http-peak/1`: `benchlab http --find-peak --json`, its steps
//!   becoming the mixes of one searched phase.
//!
//! The old types live here only as private deserialisation structs. What
//! an old file did not record (the mix's latency percentiles of a file
//! suite, histograms) stays zero or empty, and each upgraded mix says so in
//! its `warnings`.

use crate::{
    ClassResult, ClientCpu, ClientResult, Environment, Errors, Figures, Histograms, HttpCommand, HttpCommandClient,
    KindFigures, Latency, MixFiles, MixHttp2, MixResult, OpenLoopResult, ParamsResult, PhaseResult, PhaseSearchResult,
    Range, RepeatFigures, Repeats, Results, SearchStepResult, SecondResult, StepKind, SuiteInfo, RESULTS_SCHEMA,
};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A results file that cannot be read as [`Results`]; `file` is set by
/// [`load`] (absent for [`parse`] and [`upgrade`] of text or a value).
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("{0}")]
    Read(#[from] benchlab_input::InputError),
    #[error("{}not JSON: {source}", place(.file))]
    NotJson {
        file: Option<PathBuf>,
        source: serde_json::Error,
    },
    #[error("{}does not match {schema}: {source}", place(.file))]
    Mismatch {
        file: Option<PathBuf>,
        schema: String,
        source: serde_json::Error,
    },
    #[error("{}schema is {schema:?}: this benchlab reads {known}", place(.file))]
    UnknownSchema {
        file: Option<PathBuf>,
        schema: String,
        known: String,
    },
}

fn place(file: &Option<PathBuf>) -> String {
    file.as_ref().map(|f| format!("{}: ", f.display())).unwrap_or_default()
}

impl LoadError {
    fn in_file(mut self, path: &Path) -> LoadError {
        match &mut self {
            LoadError::Read(_) => {}
            LoadError::NotJson { file, .. }
            | LoadError::Mismatch { file, .. }
            | LoadError::UnknownSchema { file, .. } => *file = Some(path.to_path_buf()),
        }
        self
    }
}

impl benchlab_input::Classify for LoadError {
    /// A run's results that cannot be read leave the command nothing to
    /// work on: it cannot run (exit 1), as before the loader was typed.
    fn exit_class(&self) -> benchlab_input::ExitClass {
        benchlab_input::ExitClass::CannotRun
    }
}

/// The schema of a file suite's results.json before version 0.2.
pub const FILE_RESULTS_1: &str = "benchlab.file-results/1";
/// `benchlab http --json` before it printed [`Results`].
pub const HTTP_1: &str = "benchlab.http/1";
/// `benchlab http --find-peak --json` before it printed [`Results`].
pub const HTTP_PEAK_1: &str = "benchlab.http-peak/1";

/// Reads a results file (at most [`crate::MAX_RESULTS_BYTES`]) of any
/// schema this benchlab knows, upgraded to [`Results`]. The error names the
/// file and what was expected.
pub fn load(file: &Path) -> Result<Results, LoadError> {
    let text = benchlab_input::read_bounded_text(file, "results.json", crate::MAX_RESULTS_BYTES)?;
    parse(&text).map_err(|e| e.in_file(file))
}

/// [`load`] of a file's text.
pub fn parse(text: &str) -> Result<Results, LoadError> {
    let v: serde_json::Value =
        serde_json::from_str(text).map_err(|source| LoadError::NotJson { file: None, source })?;
    upgrade(v)
}

/// A results document of any known schema as [`Results`].
pub fn upgrade(v: serde_json::Value) -> Result<Results, LoadError> {
    let schema = v.get("schema").and_then(|s| s.as_str()).unwrap_or("").to_string();
    let known = [RESULTS_SCHEMA, FILE_RESULTS_1, HTTP_1, HTTP_PEAK_1];
    let bad = |source: serde_json::Error| LoadError::Mismatch {
        file: None,
        schema: schema.clone(),
        source,
    };
    match schema.as_str() {
        RESULTS_SCHEMA => serde_json::from_value(v).map_err(bad),
        FILE_RESULTS_1 => Ok(from_file_results(serde_json::from_value(v).map_err(bad)?)),
        HTTP_1 => Ok(from_http(serde_json::from_value(v).map_err(bad)?)),
        HTTP_PEAK_1 => Ok(from_http_peak(serde_json::from_value(v).map_err(bad)?)),
        _ => Err(LoadError::UnknownSchema {
            file: None,
            schema: schema.clone(),
            known: known.map(|k| format!("{k:?}")).join(", "),
        }),
    }
}

fn rate(n: u64, s: f64) -> f64 {
    if s > 0.0 {
        n as f64 / s
    } else {
        0.0
    }
}

fn suite_info(name: &str, description: &str) -> SuiteInfo {
    SuiteInfo {
        name: name.to_string(),
        description: description.to_string(),
        file: String::new(),
        seed: 0,
        max_clients: None,
        price: None,
        text: String::new(),
    }
}

fn environment(
    version: &str,
    target: &str,
    started: u64,
    command: Vec<String>,
    client_cpus: Vec<usize>,
) -> Environment {
    Environment {
        benchlab_version: version.to_string(),
        host: String::new(),
        kernel: String::new(),
        cpu: String::new(),
        cores: 0,
        target: target.to_string(),
        started_unix: started,
        command,
        time_scale: 1.0,
        host_facts: None,
        client_cpus,
        server: None,
        cold_cache: false,
        cold_cache_method: None,
        agents: Vec::new(),
    }
}

fn params(workload: &str, target: &str, length_s: f64, ramp_up_s: f64, threads_per_client: u32) -> ParamsResult {
    ParamsResult {
        delay_s: 0.0,
        ramp_up_s,
        ramp_down_s: 0.0,
        length_s,
        think_time_s: 0.0,
        threads_per_client,
        receive_buffer: 0,
        http10_percent: 0,
        http10_keepalive: false,
        persistent_percent: 0,
        requests_per_connection: None,
        timeout_s: 0.0,
        workload: workload.to_string(),
        target: target.to_string(),
        preconnect: false,
    }
}

/// Phases in the order their first mix appears.
fn phases(mixes: &[MixResult]) -> Vec<PhaseResult> {
    let mut out: Vec<PhaseResult> = Vec::new();
    for m in mixes {
        match out.iter_mut().find(|p| p.name == m.phase) {
            Some(p) => p.mixes.push(m.mix),
            None => out.push(PhaseResult {
                name: m.phase.clone(),
                workload: m.params.workload.clone(),
                target: m.params.target.clone(),
                mixes: vec![m.mix],
                search: None,
            }),
        }
    }
    out
}

// ---------------------------------------------------------------------------
// benchlab.file-results/1

#[derive(Deserialize)]
struct OldFileResults {
    suite: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    started: u64,
    #[serde(default)]
    command: Vec<String>,
    mixes: Vec<OldFileMix>,
    #[serde(default)]
    interrupted: bool,
}

#[derive(Deserialize)]
struct OldLatency {
    mean: f64,
    p50: u64,
    p90: u64,
    p99: u64,
    max: u64,
}

#[derive(Deserialize)]
struct OldOp {
    operation: String,
    count: u64,
    errors: u64,
    #[serde(default)]
    not_sent: u64,
    per_second: f64,
    latency_us: OldLatency,
}

#[derive(Deserialize)]
struct OldFileSecond {
    second: u64,
    operations: u64,
    errors: u64,
    bytes_read: u64,
    bytes_written: u64,
}

#[derive(Deserialize)]
struct OldFileRepeat {
    mbit_per_s: f64,
    operations_per_s: f64,
}

#[derive(Deserialize)]
struct OldFileClient {
    client: u32,
    operations: u64,
    bytes_read: u64,
    bytes_written: u64,
    mbit_per_s: f64,
    errors: u64,
}

#[derive(Deserialize)]
struct OldFileMix {
    mix: usize,
    phase: String,
    workload: String,
    target: String,
    clients: u32,
    users: u32,
    window_s: f64,
    operations: u64,
    operations_per_s: f64,
    bytes_read: u64,
    bytes_written: u64,
    bytes_per_s: f64,
    mbit_per_s: f64,
    read_mbit_per_s: f64,
    write_mbit_per_s: f64,
    errors: u64,
    #[serde(default)]
    not_sent: u64,
    errors_by_status: BTreeMap<String, u64>,
    loops: u64,
    prepared_bytes: u64,
    by_operation: Vec<OldOp>,
    per_client: Vec<OldFileClient>,
    #[serde(default)]
    per_second: Vec<OldFileSecond>,
    #[serde(default)]
    repeats: Vec<OldFileRepeat>,
    fairness: f64,
    partial: bool,
}

/// The status that came back, from "OPERATION: expected X, got Y".
pub fn status_got(key: &str) -> &str {
    key.rsplit_once(", got ").map_or(key, |(_, got)| got)
}

/// Errors keyed "OPERATION: expected X, got Y" as the figures' errors: by
/// the status that came back, of the operation `only` (all with `None`).
pub fn errors_by_got(by_status: &BTreeMap<String, u64>, only: Option<&str>) -> Errors {
    let mut out = Errors::new();
    for (k, n) in by_status {
        let op = k.split_once(':').map_or("", |(op, _)| op);
        if only.is_none_or(|o| o == op) {
            *out.entry(status_got(k).to_string()).or_default() += n;
        }
    }
    out
}

/// `file` or `smb`, from a file suite's target.
pub fn file_protocol(target: &str) -> &'static str {
    if target.starts_with("smb://") {
        "smb"
    } else {
        "file"
    }
}

const NOT_RECORDED: &str = "upgraded from benchlab.file-results/1, which recorded latency per operation only: the \
                            mix's p50/p90/p99 are not known (0), its mean and max are exact";

fn from_file_results(r: OldFileResults) -> Results {
    let mixes: Vec<MixResult> = r.mixes.into_iter().map(from_file_mix).collect();
    let target = mixes.first().map(|m| m.params.target.clone()).unwrap_or_default();
    Results {
        schema: RESULTS_SCHEMA.into(),
        suite: suite_info(&r.suite, &r.description),
        environment: environment("", &target, r.started, r.command, Vec::new()),
        phases: phases(&mixes),
        mixes,
        complete: !r.interrupted,
        thresholds: Vec::new(),
    }
}

fn from_file_mix(m: OldFileMix) -> MixResult {
    let w = m.window_s;
    let bytes = m.bytes_read + m.bytes_written;
    let counted: u64 = m.by_operation.iter().map(|o| o.count).sum();
    let mean = if counted > 0 {
        m.by_operation
            .iter()
            .map(|o| o.latency_us.mean * o.count as f64)
            .sum::<f64>()
            / counted as f64
    } else {
        0.0
    };
    let classes = m
        .by_operation
        .iter()
        .filter(|o| o.count > 0)
        .map(|o| {
            let share = if m.operations > 0 {
                o.count as f64 * 100.0 / m.operations as f64
            } else {
                0.0
            };
            let op_bytes = match o.operation.as_str() {
                "ReadX" => m.bytes_read,
                "WriteX" => m.bytes_written,
                _ => 0,
            };
            ClassResult {
                name: o.operation.clone(),
                kind: "file".into(),
                spi: None,
                percent: share,
                observed_percent: share,
                figures: Figures {
                    requests: o.count,
                    requests_per_sec: o.per_second,
                    bytes: op_bytes,
                    bytes_per_sec: rate(op_bytes, w),
                    mbit_per_sec: rate(op_bytes, w) * 8.0 / 1e6,
                    body_bytes: op_bytes,
                    error_bytes: 0,
                    bytes_sent: 0,
                    errors: errors_by_got(&m.errors_by_status, Some(&o.operation)),
                    errors_total: o.errors,
                    latency_us: Latency {
                        mean: o.latency_us.mean,
                        p50: o.latency_us.p50,
                        p90: o.latency_us.p90,
                        p99: o.latency_us.p99,
                        p999: 0,
                        max: o.latency_us.max,
                    },
                    error_latency_us: Latency::default(),
                },
            }
        })
        .collect();
    let repeats = (m.repeats.len() >= 2).then(|| {
        let runs: Vec<RepeatFigures> = m
            .repeats
            .iter()
            .enumerate()
            .map(|(i, r)| RepeatFigures {
                repeat: i as u32 + 1,
                window_s: w,
                requests: 0,
                requests_per_sec: r.operations_per_s,
                bytes_per_sec: r.mbit_per_s * 1e6 / 8.0,
                errors_total: 0,
                latency_us: Latency::default(),
            })
            .collect();
        let mut order: Vec<usize> = (0..runs.len()).collect();
        order.sort_by(|&a, &b| runs[a].bytes_per_sec.total_cmp(&runs[b].bytes_per_sec).then(a.cmp(&b)));
        let rps: Vec<f64> = runs.iter().map(|r| r.requests_per_sec).collect();
        Repeats {
            median_repeat: order[(order.len() - 1) / 2] as u32 + 1,
            requests_per_sec: Range::of(&rps).unwrap_or_default(),
            latency_p50_us: Range::default(),
            latency_p99_us: Range::default(),
            runs,
        }
    });
    let target = m.target.clone();
    MixResult {
        mix: m.mix,
        phase: m.phase.clone(),
        clients: m.clients,
        clients_participating: m.clients,
        threads: m.users.into(),
        partial: m.partial,
        window_s: w,
        figures: Figures {
            requests: m.operations,
            requests_per_sec: m.operations_per_s,
            bytes,
            bytes_per_sec: m.bytes_per_s,
            mbit_per_sec: m.mbit_per_s,
            body_bytes: bytes,
            error_bytes: 0,
            bytes_sent: 0,
            errors: errors_by_got(&m.errors_by_status, None),
            errors_total: m.errors,
            latency_us: Latency {
                mean,
                max: m.by_operation.iter().map(|o| o.latency_us.max).max().unwrap_or(0),
                ..Latency::default()
            },
            error_latency_us: Latency::default(),
        },
        reconnects: 0,
        in_flight: 0,
        connections_opened: m.users.into(),
        tls_full_handshakes: 0,
        tls_resumptions: 0,
        client_cpu_s: 0.0,
        client_cpu: ClientCpu::default(),
        params: params(&m.workload, &target, w, 0.0, m.users / m.clients.max(1)),
        client_data: m
            .per_client
            .iter()
            .map(|c| {
                let b = c.bytes_read + c.bytes_written;
                ClientResult {
                    client: c.client,
                    address: None,
                    figures: Figures {
                        requests: c.operations,
                        requests_per_sec: rate(c.operations, w),
                        bytes: b,
                        bytes_per_sec: rate(b, w),
                        mbit_per_sec: c.mbit_per_s,
                        body_bytes: b,
                        errors_total: c.errors,
                        ..Figures::default()
                    },
                    connections_opened: 0,
                    in_flight: 0,
                    delay_s: 0.0,
                    taken_out: false,
                    lost: None,
                    cpu_s: 0.0,
                    loop_lag_max_us: 0,
                    seconds: Vec::new(),
                }
            })
            .collect(),
        classes,
        per_second: m
            .per_second
            .iter()
            .map(|s| SecondResult {
                second: s.second as u32,
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
        histograms: Histograms::default(),
        users_arrived: m.users.into(),
        users_waiting: 0,
        request_kinds: BTreeMap::new(),
        warnings: vec![NOT_RECORDED.to_string()],
        open_loop: None,
        search: None,
        repeats,
        resources: None,
        http2: None,
        files: Some(MixFiles {
            protocol: file_protocol(&target).into(),
            users: m.users,
            bytes_read: m.bytes_read,
            bytes_written: m.bytes_written,
            read_mbit_per_sec: m.read_mbit_per_s,
            write_mbit_per_sec: m.write_mbit_per_s,
            not_sent: m.not_sent,
            not_sent_by_operation: m
                .by_operation
                .iter()
                .filter(|o| o.not_sent > 0)
                .map(|o| (o.operation.clone(), o.not_sent))
                .collect(),
            errors_by_status: m.errors_by_status,
            loops: m.loops,
            prepared_bytes: m.prepared_bytes,
            fairness: m.fairness,
            seconds_bytes_written: m.per_second.iter().map(|s| s.bytes_written).collect(),
            clients_bytes_written: m.per_client.iter().map(|c| c.bytes_written).collect(),
            smb: None,
            // Results of the old file-suite format had no wire counts.
            wire_bytes_sent: None,
            wire_bytes_received: None,
            lease_breaks: None,
            oplock_breaks: None,
        }),
        http_command: None,
        flows: None,
        start_spread: None,
    }
}

// ---------------------------------------------------------------------------
// benchlab.http/1 and benchlab.http-peak/1

#[derive(Deserialize)]
struct OldHttpClass {
    name: String,
    requests: u64,
    requests_per_sec: f64,
    errors: Errors,
    errors_total: u64,
    bytes: u64,
    body_bytes: u64,
    error_bytes: u64,
    latency_us: Latency,
}

#[derive(Deserialize)]
struct OldHttpSecond {
    second: u32,
    requests: u64,
    errors: u64,
    bytes: u64,
    #[serde(default)]
    body_bytes: u64,
    connections_opened: u64,
    latency_p50_us: u64,
    latency_p99_us: u64,
}

#[derive(Deserialize)]
struct OldHttp2 {
    connections: u64,
    streams: u32,
    window: u32,
    server_settings: Option<serde_json::Value>,
    streams_opened: u64,
    goaways: u64,
    connection_frame_bytes: u64,
    stream_resets: BTreeMap<String, u64>,
}

#[derive(Deserialize)]
struct OldHttpClient {
    client: u32,
    agent: u32,
    host: String,
    address: Option<String>,
    threads: u32,
    #[serde(default)]
    rate: Option<f64>,
    #[serde(flatten)]
    figures: Figures,
    connections_opened: u64,
    in_flight: u64,
    #[serde(default)]
    lost: Option<String>,
}

#[derive(Deserialize)]
struct OldHttp {
    #[serde(default)]
    benchlab_version: String,
    urls: Vec<String>,
    mode: String,
    threads: u32,
    os_threads: usize,
    duration_s: f64,
    #[serde(default)]
    partial: bool,
    requests: u64,
    requests_per_sec: f64,
    errors: Errors,
    errors_total: u64,
    reconnects: u64,
    in_flight: u64,
    bytes: u64,
    body_bytes: u64,
    error_bytes: u64,
    bytes_per_sec: f64,
    body_bytes_per_sec: f64,
    connections_opened: u64,
    tls_full_handshakes: u64,
    tls_resumptions: u64,
    latency_us: Latency,
    error_latency_us: Latency,
    client_cpu: ClientCpu,
    #[serde(default)]
    client_cpus: Vec<usize>,
    classes: Vec<OldHttpClass>,
    per_second: Vec<OldHttpSecond>,
    #[serde(default)]
    ramp_up_s: f64,
    #[serde(default)]
    users_arrived: u64,
    #[serde(default)]
    users_waiting: u64,
    #[serde(default)]
    request_kinds: BTreeMap<String, KindFigures>,
    #[serde(flatten)]
    open_loop: Option<OpenLoopResult>,
    #[serde(default)]
    http2: Option<OldHttp2>,
    #[serde(default)]
    warnings: Vec<String>,
    #[serde(default)]
    clients: Vec<OldHttpClient>,
    /// Not in `benchlab.http/1` files: what `benchlab http --json` adds
    /// when it prints its result through [`upgrade`].
    #[serde(default)]
    histograms: Option<Histograms>,
}

#[derive(Deserialize)]
struct OldPeakStep {
    step: u32,
    kind: StepKind,
    #[serde(flatten)]
    result: OldHttp,
}

#[derive(Deserialize)]
struct OldHttpPeak {
    tolerance_percent: f64,
    max_p99_us: u64,
    max_error_percent: f64,
    max_threads: u64,
    #[serde(default)]
    stopped: String,
    peak_threads: Option<u64>,
    peak_requests_per_sec: Option<f64>,
    useful_peak_threads: Option<u64>,
    useful_peak_requests_per_sec: Option<f64>,
    steps: Vec<OldPeakStep>,
}

/// The phase of a `benchlab http` run.
pub const HTTP_PHASE: &str = "http";

/// `benchlab http`'s results of `mixes` (one, or a mix per load of a peak
/// search): one phase, `http`, complete unless a mix is partial.
pub fn http_results(version: &str, urls: &[String], client_cpus: Vec<usize>, mixes: Vec<MixResult>) -> Results {
    let target = urls.join(" ");
    let complete = !mixes.iter().any(|m| m.partial);
    Results {
        schema: RESULTS_SCHEMA.into(),
        suite: suite_info("http", "benchlab http"),
        environment: environment(version, &target, 0, Vec::new(), client_cpus),
        phases: phases(&mixes),
        mixes,
        complete,
        thresholds: Vec::new(),
    }
}

fn from_http(r: OldHttp) -> Results {
    let (version, urls, cpus) = (r.benchlab_version.clone(), r.urls.clone(), r.client_cpus.clone());
    http_results(&version, &urls, cpus, vec![http_mix(1, r)])
}

fn from_http_peak(p: OldHttpPeak) -> Results {
    let first = p
        .steps
        .first()
        .map(|s| (s.result.benchlab_version.clone(), s.result.urls.clone()));
    let (version, urls) = first.unwrap_or_default();
    let cpus = p
        .steps
        .first()
        .map(|s| s.result.client_cpus.clone())
        .unwrap_or_default();
    // Steps are listed in load order; each becomes a mix, numbered so.
    let loads: Vec<u64> = p.steps.iter().map(|s| s.result.threads.into()).collect();
    let mix_of = |threads: Option<u64>| threads.and_then(|t| loads.iter().position(|l| *l == t)).map(|i| i + 1);
    let search = PhaseSearchResult {
        start_threads_per_client: p
            .steps
            .iter()
            .find(|s| s.step == 1)
            .map_or(0, |s| s.result.threads.into()),
        tolerance_percent: p.tolerance_percent,
        max_p99_us: p.max_p99_us,
        max_error_percent: p.max_error_percent,
        max_threads_per_client: p.max_threads,
        stopped: p.stopped.clone(),
        peak_mix: mix_of(p.peak_threads),
        peak_requests_per_sec: p.peak_requests_per_sec,
        useful_peak_mix: mix_of(p.useful_peak_threads),
        useful_peak_requests_per_sec: p.useful_peak_requests_per_sec,
    };
    let mixes: Vec<MixResult> = p
        .steps
        .into_iter()
        .enumerate()
        .map(|(i, s)| {
            let mut m = http_mix(i + 1, s.result);
            m.search = Some(SearchStepResult {
                step: s.step,
                kind: s.kind,
            });
            m
        })
        .collect();
    let mut r = http_results(&version, &urls, cpus, mixes);
    for ph in &mut r.phases {
        ph.search = Some(search.clone());
    }
    r
}

fn http_mix(number: usize, r: OldHttp) -> MixResult {
    let w = r.duration_s;
    let closed = r.mode != "open";
    let clients = r.clients.len().max(1) as u32;
    let target = r.urls.join(" ");
    let class_names: Vec<String> = r.classes.iter().map(|c| c.name.clone()).collect();
    let done = r.requests + r.errors_total;
    MixResult {
        mix: number,
        phase: HTTP_PHASE.into(),
        clients,
        clients_participating: clients - r.clients.iter().filter(|c| c.lost.is_some()).count() as u32,
        threads: r.threads.into(),
        partial: r.partial,
        window_s: w,
        figures: Figures {
            requests: r.requests,
            requests_per_sec: r.requests_per_sec,
            bytes: r.bytes,
            bytes_per_sec: r.bytes_per_sec,
            mbit_per_sec: r.bytes_per_sec * 8.0 / 1e6,
            body_bytes: r.body_bytes,
            error_bytes: r.error_bytes,
            bytes_sent: 0,
            errors: r.errors,
            errors_total: r.errors_total,
            latency_us: r.latency_us,
            error_latency_us: r.error_latency_us,
        },
        reconnects: r.reconnects,
        in_flight: r.in_flight,
        connections_opened: r.connections_opened,
        tls_full_handshakes: r.tls_full_handshakes,
        tls_resumptions: r.tls_resumptions,
        client_cpu_s: r.client_cpu.user_s + r.client_cpu.system_s,
        client_cpu: r.client_cpu,
        params: params(
            "urls",
            &target,
            w + r.ramp_up_s,
            r.ramp_up_s,
            if closed { r.threads / clients } else { 0 },
        ),
        client_data: r
            .clients
            .iter()
            .map(|c| ClientResult {
                client: c.client,
                address: c.address.clone(),
                figures: c.figures.clone(),
                connections_opened: c.connections_opened,
                in_flight: c.in_flight,
                delay_s: 0.0,
                taken_out: c.lost.is_some(),
                lost: c.lost.clone(),
                cpu_s: 0.0,
                loop_lag_max_us: 0,
                seconds: Vec::new(),
            })
            .collect(),
        classes: r
            .classes
            .into_iter()
            .map(|c| {
                let share = if done > 0 {
                    (c.requests + c.errors_total) as f64 * 100.0 / done as f64
                } else {
                    0.0
                };
                ClassResult {
                    name: c.name,
                    kind: "url".into(),
                    spi: None,
                    percent: 100.0 / class_names.len().max(1) as f64,
                    observed_percent: share,
                    figures: Figures {
                        requests: c.requests,
                        requests_per_sec: c.requests_per_sec,
                        bytes: c.bytes,
                        bytes_per_sec: rate(c.bytes, w),
                        mbit_per_sec: rate(c.bytes, w) * 8.0 / 1e6,
                        body_bytes: c.body_bytes,
                        error_bytes: c.error_bytes,
                        bytes_sent: 0,
                        errors: c.errors,
                        errors_total: c.errors_total,
                        latency_us: c.latency_us,
                        error_latency_us: Latency::default(),
                    },
                }
            })
            .collect(),
        per_second: r
            .per_second
            .iter()
            .map(|s| SecondResult {
                second: s.second,
                // The seconds of --ramp-up are shown, not counted.
                in_window: f64::from(s.second.saturating_sub(1)) + 1e-9 >= r.ramp_up_s,
                requests: s.requests,
                errors: s.errors,
                bytes: s.bytes,
                connections_opened: s.connections_opened,
                latency_p50_us: s.latency_p50_us,
                latency_p99_us: s.latency_p99_us,
                client_cpu_user_s: 0.0,
                client_cpu_system_s: 0.0,
                loop_lag_max_us: 0,
            })
            .collect(),
        histograms: r.histograms.clone().unwrap_or_default(),
        users_arrived: r.users_arrived,
        users_waiting: r.users_waiting,
        request_kinds: r.request_kinds,
        warnings: r.warnings,
        open_loop: r.open_loop,
        search: None,
        repeats: None,
        resources: None,
        http2: r.http2.as_ref().map(|h| MixHttp2 {
            connections: h.connections,
            classes: class_names.clone(),
            streams_per_connection: h.streams,
            streams_opened: h.streams_opened,
            goaways: h.goaways,
            connection_frame_bytes: h.connection_frame_bytes,
            stream_resets: h.stream_resets.clone(),
            quic: None,
            h3_classes: Vec::new(),
        }),
        files: None,
        http_command: Some(HttpCommand {
            urls: r.urls,
            mode: r.mode,
            os_threads: r.os_threads,
            body_bytes_per_sec: r.body_bytes_per_sec,
            seconds_body_bytes: r.per_second.iter().map(|s| s.body_bytes).collect(),
            h2_window: r.http2.as_ref().map(|h| h.window),
            h2_server_settings: r.http2.and_then(|h| h.server_settings),
            clients: r
                .clients
                .iter()
                .map(|c| HttpCommandClient {
                    client: c.client,
                    agent: c.agent,
                    host: c.host.clone(),
                    threads: c.threads,
                    rate: c.rate,
                })
                .collect(),
        }),
        flows: None,
        start_spread: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> Results {
        let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name);
        load(&p).unwrap_or_else(|e| panic!("{e}"))
    }

    /// A file suite's results as benchlab wrote them before 0.2 load as
    /// `Results`, every count in its place.
    #[test]
    fn file_results_1_upgrade_with_their_counts() {
        let r = fixture("file-results-1-base.json");
        assert_eq!(r.schema, RESULTS_SCHEMA);
        assert_eq!(r.kind(), crate::RunKind::File);
        assert_eq!(r.mixes.len(), 2);
        let m = &r.mixes[1];
        let f = m.files.as_ref().expect("files");
        // The fixture's mix 2: 838 operations, 84 errors, 84 loops.
        assert_eq!((m.figures.requests, m.figures.errors_total, f.loops), (838, 84, 84));
        assert_eq!(m.figures.bytes, f.bytes_read + f.bytes_written);
        assert_eq!(
            m.figures.errors.get("NT_STATUS_OBJECT_NAME_NOT_FOUND"),
            Some(&m.figures.errors_total)
        );
        let ops: u64 = m.classes.iter().map(|c| c.figures.requests).sum();
        assert_eq!(ops, m.figures.requests);
        let per_second: u64 = m.per_second.iter().map(|s| s.requests).sum();
        assert_eq!(per_second, m.figures.requests);
        assert_eq!(r.phases.len(), 1);
        assert_eq!(r.phases[0].mixes, vec![1, 2]);
        assert!(r.complete);
    }

    #[test]
    fn http_1_upgrades_to_one_mix() {
        let r = fixture("http-1.json");
        assert_eq!(r.kind(), crate::RunKind::Web);
        assert_eq!(r.mixes.len(), 1);
        let m = &r.mixes[0];
        assert_eq!((m.figures.requests, m.figures.bytes), (20_103, 23_098_952));
        assert_eq!(m.classes.len(), 2);
        let h = m.http_command.as_ref().expect("http_command");
        assert_eq!((h.mode.as_str(), h.os_threads), ("closed", 1));
        assert_eq!(h.body_bytes_per_sec, 20_546_744.0);
    }

    #[test]
    fn http_peak_1_upgrades_to_a_searched_phase() {
        let r = fixture("http-peak-1.json");
        let search = r.phases[0].search.as_ref().expect("search");
        assert_eq!(search.peak_requests_per_sec, Some(24_060.0));
        let peak = search.peak_mix.expect("peak mix");
        assert_eq!(r.mixes[peak - 1].figures.requests_per_sec, 24_060.0);
        assert!(r.mixes.iter().all(|m| m.search.is_some()));
    }

    #[test]
    fn an_unknown_schema_is_refused_naming_the_known_ones() {
        let e = parse(r#"{"schema": "benchlab.results/9"}"#)
            .expect_err("refused")
            .to_string();
        assert!(e.contains("benchlab.results/9") && e.contains(FILE_RESULTS_1), "{e}");
        assert!(parse("{").expect_err("refused").to_string().contains("not JSON"));
        let dir = tempfile_dir();
        let file = dir.join("results.json");
        std::fs::write(&file, r#"{"schema": "x"}"#).expect("written");
        let e = load(&file).expect_err("refused").to_string();
        assert!(e.starts_with(&format!("{}: schema is \"x\"", file.display())), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    fn tempfile_dir() -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("benchlab-load-test-{}", std::process::id()));
        std::fs::create_dir_all(&d).expect("temp dir");
        d
    }
}
