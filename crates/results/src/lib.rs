//! # benchlab-results
//!
//! The stable, machine-readable side of benchlab (as `nextest-metadata` is
//! nextest's): the types of `results.json`, the CSV writers, and the exit
//! codes, for the report and for outside tools, without the load engine,
//! its sockets or its TLS. The controller fills these types from what its
//! clients measured.
//!
//! Every run writes one schema, web or file suite, `run` or `http --json`;
//! [`load::load`] reads it and upgrades what older versions wrote.
//!
//! The results directory of a suite run: `results.json` (schema
//! `benchlab.results/1`), `summary.csv` (WebBench's summary report, a row
//! per mix) and `clients.csv` (WebBench's client data report, a row per
//! mix × client). All three are rewritten atomically (write to a temporary
//! file, then rename) after every mix, so a crash or Ctrl-C never loses a
//! finished mix.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

pub mod gate;
pub mod load;
pub mod noise;
pub mod resources;

pub const RESULTS_SCHEMA: &str = "benchlab.results/1";

/// The kinds of failed request, by their names in JSON and CSV, in the
/// order of docs/counting.md (the engine's `ErrorKind::ALL`; a test in the
/// controller keeps the two the same).
pub const ERROR_KINDS: [&str; 19] = [
    "connect_refused",
    "connect_timeout",
    "reset",
    "timeout",
    "status",
    "framing",
    "short_body",
    "wrong_body",
    "header_too_large",
    "tls",
    "bind",
    "stream_reset",
    "goaway",
    "flow_control",
    "body_incomplete",
    "check_failed",
    "quic_close",
    "handshake_timeout",
    "version_negotiation",
];

/// How the search came to run a load.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StepKind {
    /// The starting load or a doubling.
    Grow,
    /// A load between two run ones, around the knee.
    Bisect,
}

impl StepKind {
    /// As in results.json and summary.csv: `grow` or `bisect`.
    pub fn name(self) -> &'static str {
        match self {
            StepKind::Grow => "grow",
            StepKind::Bisect => "bisect",
        }
    }
}

/// The largest `results.json` that `report`, `compare` and `reproduce`
/// read: a long suite with per-second figures is a few MiB; a wrong path
/// (a log, `/dev/zero`) is refused at this size, not read whole.
pub const MAX_RESULTS_BYTES: u64 = 256 << 20;

/// The exit codes of `benchlab`, documented in docs/http.md and docs/reports.md: what a script
/// or CI job may rely on.
pub mod exit {
    /// The command completed (whatever the server did).
    pub const COMPLETED: u8 = 0;
    /// The run could not be done (preflight failed, a system limit, an
    /// unwritable directory).
    pub const CANNOT_RUN: u8 = 1;
    /// Bad input from the user (a flag, a suite, a workload).
    pub const USAGE: u8 = 2;
    /// A `--threshold` (or `http`'s `--max-*`) was breached, also in a run
    /// stopped by Ctrl-C, or `compare` found a regression beyond
    /// `--max-regression`.
    pub const BREACHED: u8 = 3;
    /// Ctrl-C stopped the run; what was measured is kept.
    pub const INTERRUPTED: u8 = 130;
    /// Standard output was closed by its reader (`benchlab compare A B |
    /// head -1`): benchlab stops quietly with the status a process killed
    /// by SIGPIPE has in a shell (128 + 13), as `cat` and `git` do.
    pub const CLOSED_STDOUT: u8 = 141;
}

/// Latency in microseconds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Latency {
    pub mean: f64,
    pub p50: u64,
    pub p90: u64,
    pub p99: u64,
    pub p999: u64,
    pub max: u64,
}

/// Errors by kind, every canonical kind present, in the order of
/// docs/counting.md.
pub type Errors = BTreeMap<String, u64>;

/// Requests of one connection kind (HTTP version × persistence) in a mix
/// or a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct KindFigures {
    /// Completed requests (successful and failed) on connections of the kind.
    pub requests: u64,
    /// Their share of all completed requests, percent.
    pub percent: f64,
    /// The share of connections drawn of this kind, percent (the mix's or
    /// the flags' HTTP/1.0 and persistence percentages).
    pub configured_percent: f64,
}

/// Requests by connection kind: `http10_close`, `http10_keepalive`,
/// `http11_persistent`, `http11_close`, every kind present.
pub type RequestKinds = BTreeMap<String, KindFigures>;

/// Counts and rates of a span of requests (a mix, a client, a class).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Figures {
    pub requests: u64,
    pub requests_per_sec: f64,
    pub bytes: u64,
    pub bytes_per_sec: f64,
    /// Wire throughput in Mbit/s (10⁶ bits).
    pub mbit_per_sec: f64,
    pub body_bytes: u64,
    pub error_bytes: u64,
    /// Request bytes written, of every request that ended in the window
    /// (a success or not): request line, headers and body as written;
    /// HTTP/2, the stream's HEADERS and DATA frames (docs/counting.md).
    #[serde(default)]
    pub bytes_sent: u64,
    pub errors: Errors,
    pub errors_total: u64,
    pub latency_us: Latency,
    pub error_latency_us: Latency,
}

pub fn round(x: f64, digits: i32) -> f64 {
    let f = 10f64.powi(digits);
    (x * f).round() / f
}

/// The share of its cores above which a load generator counts as saturated
/// (client-bound): past it, more load mostly measures the generator's own
/// limit, and a peak can move between identical runs.
pub const CLIENT_BOUND_SHARE: f64 = 0.9;

/// The load generator's own CPU use over a mix (or a `benchlab http` run):
/// how much of the cores it may use it took, so a saturated or co-located
/// generator is seen instead of being mistaken for the server's limit.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ClientCpu {
    /// User CPU seconds of the load's threads.
    pub user_s: f64,
    /// System (kernel) CPU seconds of the load's threads.
    pub system_s: f64,
    /// Cores the load could use: min(its OS threads, the CPUs this process
    /// may run on — its affinity mask, sched_getaffinity — and cgroup quota).
    pub cores: usize,
    /// (user + system) ÷ (wall time × cores), 0–1.
    pub utilisation: f64,
    /// CPU microseconds per completed request (successful or failed).
    pub us_per_request: f64,
    /// Utilisation above [`CLIENT_BOUND_SHARE`]: the generator was
    /// saturated, so the figures may be its limit, not the server's.
    pub client_bound: bool,
    /// Share (0–1) of the CPUs this process may run on that were busy over
    /// the span, by any process (`/proc/stat`); null where it cannot be read.
    #[serde(default)]
    pub machine_busy: Option<f64>,
    /// The target is on this machine (a loopback address) and those CPUs
    /// were more than [`CLIENT_BOUND_SHARE`] busy: the generator and the
    /// server competed for them, so either may have set the figures, even
    /// when the generator itself used less than its cores.
    #[serde(default)]
    pub co_located_saturated: bool,
}

impl ClientCpu {
    /// The figures of `user` + `system` CPU over `wall` on `cores` cores for
    /// `completed` requests, classified against [`CLIENT_BOUND_SHARE`].
    pub fn measure(user: Duration, system: Duration, wall: Duration, cores: usize, completed: u64) -> ClientCpu {
        Self::measure_with(user, system, wall, cores, completed, CLIENT_BOUND_SHARE)
    }

    /// As [`ClientCpu::measure`], flagged above `threshold` (0–1) instead.
    pub fn measure_with(
        user: Duration,
        system: Duration,
        wall: Duration,
        cores: usize,
        completed: u64,
        threshold: f64,
    ) -> ClientCpu {
        let cores = cores.max(1);
        let (user, system) = (user.as_secs_f64(), system.as_secs_f64());
        let utilisation = if wall.is_zero() {
            0.0
        } else {
            (user + system) / (wall.as_secs_f64() * cores as f64)
        };
        ClientCpu {
            user_s: round(user, 3),
            system_s: round(system, 3),
            cores,
            utilisation: round(utilisation, 3),
            us_per_request: if completed == 0 {
                0.0
            } else {
                round((user + system) * 1e6 / completed as f64, 2)
            },
            client_bound: is_client_bound(utilisation, threshold),
            machine_busy: None,
            co_located_saturated: false,
        }
    }

    /// Adds how busy the machine was (`busy`, 0–1, all processes) and
    /// whether the target is on this machine, flagging a co-located mix on
    /// a saturated machine above [`CLIENT_BOUND_SHARE`].
    pub fn with_machine(self, busy: Option<f64>, co_located: bool) -> ClientCpu {
        self.with_machine_threshold(busy, co_located, CLIENT_BOUND_SHARE)
    }

    /// As [`ClientCpu::with_machine`], flagged above `threshold` instead.
    pub fn with_machine_threshold(self, busy: Option<f64>, co_located: bool, threshold: f64) -> ClientCpu {
        ClientCpu {
            machine_busy: busy.map(|b| round(b, 3)),
            co_located_saturated: co_located && busy.is_some_and(|b| b > threshold),
            ..self
        }
    }
}

/// Whether a generator that used `utilisation` (0–1) of its cores was
/// saturated, judged against `threshold` (0–1; [`CLIENT_BOUND_SHARE`]).
pub fn is_client_bound(utilisation: f64, threshold: f64) -> bool {
    utilisation > threshold
}

/// One client (test system) in one mix: WebBench's client data report row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ClientResult {
    /// 1-based.
    pub client: u32,
    /// Local address its connections came from, when it had its own.
    pub address: Option<String>,
    #[serde(flatten)]
    pub figures: Figures,
    pub connections_opened: u64,
    pub in_flight: u64,
    /// Seconds after the mix's start at which its load began.
    pub delay_s: f64,
    /// Taken out of the mix: it could not connect at all (its errors are
    /// still counted, WebBench's rule), or it was lost.
    pub taken_out: bool,
    /// Why the client was lost mid-mix (stopped answering before its
    /// report): its figures are those of the seconds it sent inside the
    /// window, kept apart — none is in the mix's totals. Absent when it
    /// reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost: Option<String>,
    pub cpu_s: f64,
    /// Its worst event-loop lag over the mix (see
    /// [`SecondResult::loop_lag_max_us`]), microseconds.
    #[serde(default)]
    pub loop_lag_max_us: u64,
    /// Its own CPU and event-loop lag second by second (every second of
    /// the mix, ramps included).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub seconds: Vec<ClientSecond>,
}

/// One client's own load in one second of a mix.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ClientSecond {
    /// Seconds since the mix's start, from 1.
    pub second: u32,
    /// CPU seconds of its worker threads in the second (1.0 = one core).
    pub cpu_user_s: f64,
    pub cpu_system_s: f64,
    /// How late its event loops ran their 1-second tick, at most, µs.
    pub loop_lag_max_us: u64,
}

/// One class in one mix.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ClassResult {
    pub name: String,
    pub kind: String,
    pub spi: Option<String>,
    /// Configured share of requests, percent.
    pub percent: f64,
    /// Observed share of completed requests (successful + failed), percent.
    pub observed_percent: f64,
    #[serde(flatten)]
    pub figures: Figures,
}

/// One second of a mix, all clients merged, ramps included.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SecondResult {
    /// Seconds since the mix's start, from 1.
    pub second: u32,
    /// Whether the second lies inside the measurement window.
    pub in_window: bool,
    pub requests: u64,
    pub errors: u64,
    pub bytes: u64,
    pub connections_opened: u64,
    pub latency_p50_us: u64,
    pub latency_p99_us: u64,
    /// CPU seconds the clients' worker threads used in the second, user
    /// and system, all clients summed (1.0 = one core all second).
    #[serde(default)]
    pub client_cpu_user_s: f64,
    #[serde(default)]
    pub client_cpu_system_s: f64,
    /// How late, at most over every client's worker threads, an event
    /// loop ran its once-a-second tick, microseconds: a loop that cannot
    /// keep up (or is not scheduled) runs it late.
    #[serde(default)]
    pub loop_lag_max_us: u64,
}

/// Merged HDR histograms in the standard V2 serialisation, base64.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Histograms {
    /// Successful requests; in an open loop from each one's intended send
    /// time (corrected for coordinated omission).
    pub latency_us: String,
    pub error_latency_us: String,
    /// Per class name.
    pub classes: BTreeMap<String, String>,
    /// Open loop only: successful requests from their actual send (the
    /// figures of `open_loop.latency_as_sent_us`), all clients merged
    /// bucket by bucket. Absent for a closed loop, where it is `latency_us`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_as_sent_us: Option<String>,
    /// Open loop only: the as-sent histogram per class name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub classes_as_sent: BTreeMap<String, String>,
}

/// The parameters a mix ran with (the configuration disclosure).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ParamsResult {
    pub delay_s: f64,
    pub ramp_up_s: f64,
    pub ramp_down_s: f64,
    pub length_s: f64,
    pub think_time_s: f64,
    pub threads_per_client: u32,
    pub receive_buffer: usize,
    pub http10_percent: u8,
    pub http10_keepalive: bool,
    pub persistent_percent: u8,
    /// `[min, max]`, or null for unlimited.
    pub requests_per_connection: Option<[u32; 2]>,
    pub timeout_s: f64,
    pub workload: String,
    pub target: String,
    /// Each virtual user's first connection was opened before the start
    /// (`preconnect`): first requests' latencies have no connect
    /// (docs/counting.md, "Start spread"). Absent: false.
    #[serde(default, skip_serializing_if = "is_false")]
    pub preconnect: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// One mix: WebBench's summary report row, and everything behind it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MixResult {
    pub mix: usize,
    pub phase: String,
    pub clients: u32,
    /// Clients that took part (not taken out).
    pub clients_participating: u32,
    pub threads: u64,
    /// Measured less than its window: stopped early (Ctrl-C), or seconds of
    /// the window missing (every client lost, the controller stopped).
    pub partial: bool,
    /// Seconds of the measurement window actually measured.
    pub window_s: f64,
    #[serde(flatten)]
    pub figures: Figures,
    pub reconnects: u64,
    pub in_flight: u64,
    pub connections_opened: u64,
    pub tls_full_handshakes: u64,
    pub tls_resumptions: u64,
    /// CPU the clients' worker threads used (user + system), seconds.
    pub client_cpu_s: f64,
    /// The load generator's CPU over the mix (every client's worker threads
    /// and the controller's own thread) as a share of the cores it may use,
    /// and whether that made the mix client-bound. Absent (zeros) in
    /// results written before it was recorded.
    #[serde(default)]
    pub client_cpu: ClientCpu,
    pub params: ParamsResult,
    pub client_data: Vec<ClientResult>,
    pub classes: Vec<ClassResult>,
    pub per_second: Vec<SecondResult>,
    pub histograms: Histograms,
    /// Virtual users that got at least one response; fewer than `threads`
    /// when the target accepted connections slower than users arrived.
    #[serde(default)]
    pub users_arrived: u64,
    /// Virtual users still waiting to connect when the mix ended.
    #[serde(default)]
    pub users_waiting: u64,
    /// Requests by HTTP version and connection kind, next to the shares
    /// the mix configures.
    #[serde(default)]
    pub request_kinds: RequestKinds,
    /// What benchlab warned about this mix (request shares far from the
    /// configured ones, users that never arrived, late sends).
    #[serde(default)]
    pub warnings: Vec<String>,
    /// An open-loop mix (`rate = R`): its schedule and how it was kept;
    /// absent for a closed loop. `latency_us` then counts from each
    /// request's intended send time (docs/counting.md, "Open loop").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_loop: Option<OpenLoopResult>,
    /// Set when `--find-peak` chose this mix's load: the order in which the
    /// search ran it and why. Absent for a suite's own mixes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search: Option<SearchStepResult>,
    /// `run --repeat N`: every run of this mix (back to back) and their
    /// spread. The mix's own figures, series and histograms are those of
    /// the median repeat. Absent when the mix ran once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeats: Option<Repeats>,
    /// What the monitored hosts did over the mix's window (`--monitor-local`,
    /// `--node-exporter`, a remote monitor) and the verdict on what limited
    /// it. Absent when nothing was monitored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<resources::MixResources>,
    /// A mix with HTTP/2 (`http = "2"` on the mix or some classes): its
    /// connections, streams, HTTP/2 classes and what they met; absent when
    /// every class spoke HTTP/1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http2: Option<MixHttp2>,
    /// A file suite's mix (`file://` or `smb://`): what only file-server
    /// operations have (bytes read and written apart, errors by NT status,
    /// loadfile passes, operations not sent). Absent for a web mix.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub files: Option<MixFiles>,
    /// `benchlab http` only: what its flags set that a suite's mix has no
    /// field for. Absent in a suite's results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_command: Option<HttpCommand>,
    /// A flow workload's mix: its users' walks through the flow (the
    /// steps are its classes). Absent for other workloads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flows: Option<MixFlows>,
    /// When the mix's clients began against when they were asked to
    /// (docs/counting.md, "Start spread"). Absent in results written
    /// before it was measured, and when no client sent a request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_spread: Option<StartSpread>,
}

/// How together a mix's clients began: each client's first request, on the
/// controller's clock (a remote agent's corrected by its measured clock
/// offset), less the start it was given (the mix's start plus the client's
/// own delay). docs/counting.md, "Start spread".
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StartSpread {
    /// Clients that sent a request (a lost one, or one that sent none,
    /// has no first send).
    pub clients: u32,
    /// The earliest and the latest client, microseconds after its start
    /// (negative: before it).
    pub min_us: i64,
    pub max_us: i64,
    /// `max_us` − `min_us`: how far apart the clients began.
    pub spread_us: u64,
    /// The latest client (1-based).
    pub latest_client: u32,
    /// How far a client's first send may be off the controller's clock:
    /// the largest half round trip of the clock checks that corrected them
    /// (0 when every client ran in the controller's process). The true
    /// spread lies within `spread_us` ± 2 × this.
    pub clock_uncertainty_us: u64,
}

impl StartSpread {
    /// In words, for the run's output and the report: `start spread
    /// 150 µs over 3 clients (-30 to 120 µs after their start, the latest
    /// client 1; clocks known to ±251 µs)`, every number grouped by
    /// thousands as the rest of the report's are (`1,158 µs`).
    pub fn summary(&self) -> String {
        use benchlab_format::group;
        let clocks = if self.clock_uncertainty_us == 0 {
            "one clock".to_string()
        } else {
            format!("clocks known to ±{} µs", group(&self.clock_uncertainty_us.to_string()))
        };
        format!(
            "start spread {} µs over {} client{} ({} to {} µs after their start, the latest client {}; {clocks})",
            group(&self.spread_us.to_string()),
            group(&self.clients.to_string()),
            if self.clients == 1 { "" } else { "s" },
            group(&self.min_us.to_string()),
            group(&self.max_us.to_string()),
            group(&self.latest_client.to_string())
        )
    }
}

/// How a mix's virtual users walked their flow (docs/flows.md).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MixFlows {
    /// Flows walked to the end inside the window (counted when the user
    /// starts its next pass).
    pub completed: u64,
    pub completed_per_sec: f64,
    /// Flows abandoned inside the window at a failed step: a check or a
    /// capture (`check_failed`), or the step's request itself failed. The
    /// user starts over.
    pub abandoned: u64,
    /// Each step whose check failed: the first failure, in words.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub check_failures: BTreeMap<String, String>,
}

/// What a run measured: HTTP requests to web servers, or operations of a
/// file server (docs/counting.md, "File suites").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunKind {
    Web,
    File,
}

impl MixResult {
    /// `File` for a file suite's mix (it has [`MixResult::files`]).
    pub fn kind(&self) -> RunKind {
        if self.files.is_some() {
            RunKind::File
        } else {
            RunKind::Web
        }
    }

    /// The figure a mix is ranked and compared by: Mbit/s for a file mix
    /// (NetBench's lead figure: an operation may move 1 byte or 64 KiB),
    /// requests/s for a web mix.
    pub fn lead_rate(&self) -> f64 {
        match self.kind() {
            RunKind::File => self.figures.mbit_per_sec,
            RunKind::Web => self.figures.requests_per_sec,
        }
    }

    /// The protocol class `class` spoke in this mix: `HTTP/2` (`HTTP/3`
    /// when the mix ran over QUIC) for the classes of `http2.classes`, else
    /// `HTTP/1` (1.0 or 1.1 by the mix's `http10_percent`).
    pub fn class_protocol(&self, class: &str) -> &'static str {
        match &self.http2 {
            Some(h) if h.h3_classes.iter().any(|c| c == class) => "HTTP/3",
            Some(h) if h.classes.iter().any(|c| c == class) && h.quic.is_some() && h.h3_classes.is_empty() => "HTTP/3",
            Some(h) if h.classes.iter().any(|c| c == class) => "HTTP/2",
            _ => "HTTP/1",
        }
    }
}

/// What a file suite's mix has beyond the figures every mix has
/// (docs/counting.md, "File suites"): its operations are the mix's
/// `requests`, `bytes` = bytes read + bytes written.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MixFiles {
    /// `file` (a local or mounted path) or `smb`.
    pub protocol: String,
    /// Users: clients × threads per client, each its own workspace.
    pub users: u32,
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub read_mbit_per_sec: f64,
    pub write_mbit_per_sec: f64,
    /// Operations the client could not send over the target's protocol
    /// (over smb://: LockX, UnlockX, Flush): in no figure, not errors.
    pub not_sent: u64,
    /// `not_sent` by operation name (only those with some).
    #[serde(default)]
    pub not_sent_by_operation: BTreeMap<String, u64>,
    /// "OPERATION: expected X, got Y" → count (the figures' `errors` are
    /// by the status that came back).
    pub errors_by_status: BTreeMap<String, u64>,
    /// Whole loadfile passes completed in the window (0 for a disk mix).
    pub loops: u64,
    /// Bytes written to fill the workspaces before the mix (not counted).
    pub prepared_bytes: u64,
    /// Lowest client's Mbit/s over the highest's (1 = all alike).
    pub fairness: f64,
    /// Bytes written in each second of `per_second` (the rest of its
    /// `bytes` were read).
    #[serde(default)]
    pub seconds_bytes_written: Vec<u64>,
    /// Bytes written by each client of `client_data`, in its order.
    #[serde(default)]
    pub clients_bytes_written: Vec<u64>,
    /// Bytes on the wire (every SMB2 frame of the operations counted,
    /// NetBIOS headers, signatures and transform headers included), sent
    /// and received; absent where the client cannot see its wire
    /// (libsmbclient, file://).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wire_bytes_sent: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wire_bytes_received: Option<u64>,
    /// Lease and oplock breaks the client acknowledged during the
    /// operations counted (`?leases=on`); absent where the client cannot
    /// see its wire.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_breaks: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oplock_breaks: Option<u64>,
    /// What benchlab's own SMB2 client (`?client=benchlab`) negotiated
    /// with the server; absent for file:// and libsmbclient.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub smb: Option<SmbNegotiated>,
}

/// What an SMB session negotiated (docs/counting.md, "File suites"): the
/// users' common value of each field, or the values they differed on
/// joined by ", " in their order of first appearance.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SmbNegotiated {
    /// `2.0.2`, `2.1`, `3.0`, `3.0.2` or `3.1.1`.
    pub dialect: String,
    /// What requests after the session setup are signed with:
    /// `hmac-sha256`, `aes-cmac`, `aes-gmac`, or `none` (unsigned, or
    /// sealed: a sealed message carries no signature).
    pub signing: String,
    /// What requests are sealed with: `aes-128-ccm`, `aes-128-gcm`,
    /// `aes-256-ccm`, `aes-256-gcm`, or `none`.
    pub cipher: String,
}

impl SmbNegotiated {
    /// `a` and `b` as one: each field the same, or both values joined.
    pub fn merge(a: Option<SmbNegotiated>, b: Option<&SmbNegotiated>) -> Option<SmbNegotiated> {
        fn join(x: &mut String, y: &str) {
            if !x.split(", ").any(|v| v == y) {
                x.push_str(", ");
                x.push_str(y);
            }
        }
        match (a, b) {
            (Some(mut a), Some(b)) => {
                join(&mut a.dialect, &b.dialect);
                join(&mut a.signing, &b.signing);
                join(&mut a.cipher, &b.cipher);
                Some(a)
            }
            (a, b) => a.or_else(|| b.cloned()),
        }
    }

    /// `dialect 3.1.1, signing aes-gmac, cipher none`, as the terminal and
    /// the report show it.
    pub fn describe(&self) -> String {
        format!(
            "dialect {}, signing {}, cipher {}",
            self.dialect, self.signing, self.cipher
        )
    }
}

/// What `benchlab http`'s flags set that a suite's mix has no field for.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct HttpCommand {
    /// The URLs, in the order given (the classes are named after them).
    pub urls: Vec<String>,
    /// `closed` (--threads users) or `open` (--rate).
    pub mode: String,
    /// Event-loop OS threads the users ran on.
    pub os_threads: usize,
    /// Body bytes of successful responses per second of the window.
    pub body_bytes_per_sec: f64,
    /// Body bytes of each second of `per_second`, in its order.
    #[serde(default)]
    pub seconds_body_bytes: Vec<u64>,
    /// `--http 2`: the flow-control window granted per stream and
    /// connection, and the server's SETTINGS as its first connection got
    /// them (null when none got that far).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub h2_window: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub h2_server_settings: Option<serde_json::Value>,
    /// `--agents`: the agent (0-based index) and host of each client of
    /// `client_data`, in its order, with its share of the users or rate.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clients: Vec<HttpCommandClient>,
}

/// Where one client of `benchlab http --agents` ran, and its share.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct HttpCommandClient {
    pub client: u32,
    pub agent: u32,
    pub host: String,
    pub threads: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
}

/// What an HTTP/2 mix used and met (docs/counting.md, "HTTP/2").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MixHttp2 {
    /// Connections configured, all clients together.
    pub connections: u64,
    /// The classes that spoke HTTP/2 (every class of an `http = "2"` mix;
    /// those saying `http = "2"` in a mix of both protocols, whose clients
    /// split their users between the protocols by the classes' shares).
    pub classes: Vec<String>,
    /// Concurrent streams per connection at most (the server's SETTINGS
    /// may lower it).
    pub streams_per_connection: u32,
    /// Streams opened inside the window (a request sent again after a
    /// GOAWAY opens two).
    pub streams_opened: u64,
    /// GOAWAY frames received.
    pub goaways: u64,
    /// Connection-level frame bytes received, in no request's `bytes`.
    pub connection_frame_bytes: u64,
    /// RST_STREAM frames that ended a request, by error code name
    /// (HTTP/3: RESET_STREAM, by HTTP/3 code name).
    pub stream_resets: BTreeMap<String, u64>,
    /// HTTP/3: the mix ran over QUIC, and what the transport did
    /// (docs/counting.md, "HTTP/3"); absent for HTTP/2.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quic: Option<MixQuic>,
    /// A mix of HTTP/2 and HTTP/3 classes: those of `classes` that spoke
    /// HTTP/3 (the others HTTP/2); empty when all of them spoke the one
    /// protocol `quic` says.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub h3_classes: Vec<String>,
}

/// HTTP/3: a mix's QUIC transport figures inside the window, as the QUIC
/// stack reports them, apart from the requests' `bytes`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MixQuic {
    pub datagrams_sent: u64,
    pub datagrams_received: u64,
    /// UDP payload bytes: QUIC packets, headers, ACKs and all.
    pub udp_bytes_sent: u64,
    pub udp_bytes_received: u64,
    /// Packets benchlab sent that the stack declared lost; their frames
    /// went again in new packets, so this is also the count of
    /// retransmissions, and `bytes_lost` the most they carried.
    pub packets_lost: u64,
    pub bytes_lost: u64,
    pub congestion_events: u64,
    /// Handshakes completed and their mean time, µs.
    pub handshakes: u64,
    pub handshake_mean_us: f64,
    /// CONNECTION_CLOSE frames received, by code name (transport codes,
    /// and HTTP/3's `H3_*` application codes).
    pub connection_closes: BTreeMap<String, u64>,
    /// UDP offloads the client used: sends that carried several datagrams
    /// (GSO) and reads that returned several (GRO); 0 where the client's
    /// kernel lacks them or no batch formed.
    #[serde(default)]
    pub gso_sends: u64,
    #[serde(default)]
    pub gro_reads: u64,
    /// Resumed connections (`--tls-resumption`) that sent their first
    /// requests as 0-RTT early data, by whether the server accepted it (a
    /// rejected one sent them again after the handshake).
    #[serde(default)]
    pub zero_rtt_accepted: u64,
    #[serde(default)]
    pub zero_rtt_rejected: u64,
}

/// The name of a QUIC transport error code (RFC 9000 §20.1) by its index
/// in the engine's counters; 17: `OTHER` (crypto errors included).
pub fn quic_code_name(index: usize) -> &'static str {
    const NAMES: [&str; 18] = [
        "NO_ERROR",
        "INTERNAL_ERROR",
        "CONNECTION_REFUSED",
        "FLOW_CONTROL_ERROR",
        "STREAM_LIMIT_ERROR",
        "STREAM_STATE_ERROR",
        "FINAL_SIZE_ERROR",
        "FRAME_ENCODING_ERROR",
        "TRANSPORT_PARAMETER_ERROR",
        "CONNECTION_ID_LIMIT_ERROR",
        "PROTOCOL_VIOLATION",
        "INVALID_TOKEN",
        "APPLICATION_ERROR",
        "CRYPTO_BUFFER_EXCEEDED",
        "KEY_UPDATE_ERROR",
        "AEAD_LIMIT_REACHED",
        "NO_VIABLE_PATH",
        "OTHER",
    ];
    NAMES[index.min(17)]
}

/// The name of an HTTP/3 error code (RFC 9114 §8.1) by its index in the
/// engine's counters (code − 0x100); 17: `H3_OTHER`.
pub fn h3_code_name(index: usize) -> &'static str {
    const NAMES: [&str; 18] = [
        "H3_NO_ERROR",
        "H3_GENERAL_PROTOCOL_ERROR",
        "H3_INTERNAL_ERROR",
        "H3_STREAM_CREATION_ERROR",
        "H3_CLOSED_CRITICAL_STREAM",
        "H3_FRAME_UNEXPECTED",
        "H3_FRAME_ERROR",
        "H3_EXCESSIVE_LOAD",
        "H3_ID_ERROR",
        "H3_SETTINGS_ERROR",
        "H3_MISSING_SETTINGS",
        "H3_REQUEST_REJECTED",
        "H3_REQUEST_CANCELLED",
        "H3_REQUEST_INCOMPLETE",
        "H3_MESSAGE_ERROR",
        "H3_CONNECT_ERROR",
        "H3_VERSION_FALLBACK",
        "H3_OTHER",
    ];
    NAMES[index.min(17)]
}

/// The name of an HTTP/2 error code (RFC 9113 §7); 14 and above: `OTHER`.
pub fn h2_code_name(code: usize) -> &'static str {
    const NAMES: [&str; 15] = [
        "NO_ERROR",
        "PROTOCOL_ERROR",
        "INTERNAL_ERROR",
        "FLOW_CONTROL_ERROR",
        "SETTINGS_TIMEOUT",
        "STREAM_CLOSED",
        "FRAME_SIZE_ERROR",
        "REFUSED_STREAM",
        "CANCEL",
        "COMPRESSION_ERROR",
        "CONNECT_ERROR",
        "ENHANCE_YOUR_CALM",
        "INADEQUATE_SECURITY",
        "HTTP_1_1_REQUIRED",
        "OTHER",
    ];
    NAMES[code.min(14)]
}

/// One run of a mix under `run --repeat N`: the figures `benchlab compare`
/// takes the run-to-run noise from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RepeatFigures {
    /// 1-based, in the order run.
    pub repeat: u32,
    pub window_s: f64,
    pub requests: u64,
    pub requests_per_sec: f64,
    pub bytes_per_sec: f64,
    pub errors_total: u64,
    pub latency_us: Latency,
}

impl RepeatFigures {
    pub fn of(repeat: u32, m: &MixResult) -> RepeatFigures {
        RepeatFigures {
            repeat,
            window_s: m.window_s,
            requests: m.figures.requests,
            requests_per_sec: m.figures.requests_per_sec,
            bytes_per_sec: m.figures.bytes_per_sec,
            errors_total: m.figures.errors_total,
            latency_us: m.figures.latency_us.clone(),
        }
    }
}

/// Lowest, median and highest of one figure over a mix's repeats.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Range {
    pub min: f64,
    pub median: f64,
    pub max: f64,
}

impl Range {
    /// `None` for no values; the median of an even count is the mean of the
    /// two middle values.
    pub fn of(values: &[f64]) -> Option<Range> {
        let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        Some(Range {
            min: v[0],
            median,
            max: v[n - 1],
        })
    }
}

/// The runs of a mix under `run --repeat N`, and how far they spread.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Repeats {
    /// The repeat whose figures the mix shows: the median by its lead
    /// figure (requests/s; Mbit/s for a file mix, see [`MixResult::lead_rate`])
    /// (the lower of the two middle ones for an even count).
    pub median_repeat: u32,
    /// Every run, in the order run.
    pub runs: Vec<RepeatFigures>,
    pub requests_per_sec: Range,
    pub latency_p50_us: Range,
    pub latency_p99_us: Range,
}

/// Folds the runs of one mix (`run --repeat N`, in the order run) into one
/// result: the median repeat by requests/s, with every repeat's figures and
/// their spread. A single run is returned as it is.
pub fn fold_repeats(mut runs: Vec<MixResult>) -> Option<MixResult> {
    if runs.len() <= 1 {
        return runs.pop();
    }
    let runs_figures: Vec<RepeatFigures> = runs
        .iter()
        .enumerate()
        .map(|(i, m)| RepeatFigures::of(i as u32 + 1, m))
        .collect();
    let mut order: Vec<usize> = (0..runs.len()).collect();
    // The median by the mix's lead figure: Mbit/s for a file mix.
    order.sort_by(|&a, &b| runs[a].lead_rate().total_cmp(&runs[b].lead_rate()).then(a.cmp(&b)));
    let median = order[(order.len() - 1) / 2];
    let pick =
        |f: fn(&RepeatFigures) -> f64| Range::of(&runs_figures.iter().map(f).collect::<Vec<_>>()).unwrap_or_default();
    let spread = Repeats {
        median_repeat: median as u32 + 1,
        requests_per_sec: pick(|r| r.requests_per_sec),
        latency_p50_us: pick(|r| r.latency_us.p50 as f64),
        latency_p99_us: pick(|r| r.latency_us.p99 as f64),
        runs: runs_figures,
    };
    let mut m = runs.swap_remove(median);
    m.repeats = Some(spread);
    Some(m)
}

/// The open loop of a mix: asked for, and done.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct OpenLoopResult {
    /// Requests per second the mix asked for, all clients together.
    pub rate: f64,
    /// `constant` or `poisson`.
    pub arrival: String,
    /// Requests in flight at most, per client.
    pub max_in_flight: u32,
    /// Requests the schedules sent inside the window, and their rate.
    pub sends: u64,
    pub sends_per_sec: f64,
    /// Sends inside the window that left more than `late_tolerance_us`
    /// after their intended time.
    pub late_sends: u64,
    pub late_tolerance_us: u64,
    /// Sends that found `max_in_flight` requests outstanding and waited.
    pub max_in_flight_hit: u64,
    /// Sends whose intended time fell inside the window but which had not
    /// left when the run ended: the client ran behind at the end, or every
    /// request slot stayed busy. `sends + unsent` is the schedule's count.
    #[serde(default)]
    pub unsent: u64,
    /// Latency of successful requests from their actual send, next to the
    /// mix's `latency_us` from their intended send.
    pub latency_as_sent_us: Latency,
    /// The most connections open at the same time, over the whole run
    /// (ramps included). One client's is exact to a loop turn of its event
    /// loops; a mix of several clients reports the sum of their peaks,
    /// which is an upper bound (clients may peak at different moments):
    /// `peak_connections_upper_bound` says which.
    #[serde(default)]
    pub peak_connections: u64,
    /// `peak_connections` is the sum of several clients' peaks (an upper
    /// bound), not one client's exact peak.
    #[serde(default)]
    pub peak_connections_upper_bound: bool,
    /// Each client's exact peak, in the order of `client_data` (client 1
    /// first).
    #[serde(default)]
    pub client_peak_connections: Vec<u64>,
}

impl OpenLoopResult {
    /// Says when the schedule was not kept: more than 1 % of sends late or
    /// never sent (a stray late send is the machine's noise, not a missed
    /// schedule), or any send that waited for the in-flight cap. `rate_setting` and
    /// `cap_setting` name the knobs where the caller runs (a flag or a
    /// suite key).
    pub fn late_warning(&self, rate_setting: &str, cap_setting: &str) -> Option<String> {
        // A send that never left is a late one too (its latency unknown).
        if (self.late_sends + self.unsent) * 100 <= self.sends + self.unsent && self.max_in_flight_hit == 0 {
            return None;
        }
        let cap = if self.max_in_flight_hit > 0 {
            format!(
                "; {} found {cap_setting} {} requests outstanding and waited",
                benchlab_format::thousands(self.max_in_flight_hit),
                benchlab_format::thousands(self.max_in_flight.into())
            )
        } else {
            String::new()
        };
        let unsent = if self.unsent > 0 {
            format!(
                "; {} more came due in the window and never left",
                benchlab_format::thousands(self.unsent)
            )
        } else {
            String::new()
        };
        Some(format!(
            "{} of {} sends left more than {} ms after their intended time: the schedule of {rate_setting} {} was \
             not kept{cap}{unsent} (latency still counts from the intended times)",
            benchlab_format::thousands(self.late_sends),
            benchlab_format::thousands(self.sends),
            self.late_tolerance_us / 1000,
            benchlab_format::rate(self.rate)
        ))
    }
}

/// How the peak search came to run a mix.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SearchStepResult {
    /// 1-based order in which the search of the phase ran it (mixes are
    /// listed in load order, so this differs after a bisection).
    pub step: u32,
    /// `grow` (the start or a doubling) or `bisect` (around the knee).
    pub kind: StepKind,
}

/// A phase's peak search (`--find-peak`): its rules and what it found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PhaseSearchResult {
    /// Threads per client of the search's first load: `--peak-start-threads`,
    /// or the phase's first mix's.
    #[serde(default)]
    pub start_threads_per_client: u64,
    /// A load rises when its requests/s is above the best before it by more
    /// than this, percent.
    pub tolerance_percent: f64,
    /// p99 latency limit, microseconds.
    pub max_p99_us: u64,
    /// Error limit: failed ÷ completed requests, percent.
    pub max_error_percent: f64,
    /// Highest threads per client the search may run.
    pub max_threads_per_client: u64,
    /// Why growing stopped (empty when the run was interrupted first).
    pub stopped: String,
    /// The mix (number, in load order) with the highest requests/s.
    pub peak_mix: Option<usize>,
    pub peak_requests_per_sec: Option<f64>,
    /// The mix with the highest requests/s within both limits.
    pub useful_peak_mix: Option<usize>,
    pub useful_peak_requests_per_sec: Option<f64>,
}

/// The machine and software that ran the suite.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Environment {
    pub benchlab_version: String,
    pub host: String,
    pub kernel: String,
    pub cpu: String,
    pub cores: usize,
    pub target: String,
    /// Seconds since the Unix epoch when the run started.
    pub started_unix: u64,
    pub command: Vec<String>,
    pub time_scale: f64,
    /// The host facts a result depends on (kernel tunables, CPU model and
    /// count, memory), read when the run started. Absent in results of
    /// older benchlab versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_facts: Option<HostFacts>,
    /// CPUs the load generator's worker threads were pinned to
    /// (`--client-cpus`); empty: not pinned.
    #[serde(default)]
    pub client_cpus: Vec<usize>,
    /// The server under test as `benchlab lab up` started it, when the run
    /// targeted a lab server (`--lab SERVER`, or a target URL equal to a
    /// lab server's): its version, effective configuration, profile and
    /// CPU set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<ServerDisclosure>,
    /// The page cache was dropped before each mix (`--cold-cache`).
    #[serde(default)]
    pub cold_cache: bool,
    /// With `cold_cache`: how (drop_caches as root, or the lab server's
    /// memory cgroup without root).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cold_cache_method: Option<String>,
    /// Remote agents that ran the clients (`run --agents N`), by index;
    /// empty when every client ran in the controller's process.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agents: Vec<AgentResult>,
}

/// A remote agent as the controller saw it: where it connected from,
/// which clients it ran, and its clock against the controller's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AgentResult {
    /// The agent's index (0-based; `--index` or `JOB_COMPLETION_INDEX`).
    pub index: u32,
    /// The address it connected from, as the controller saw it.
    pub peer: String,
    /// Its host name, as it said.
    pub host: String,
    /// The clients it ran (1-based, as in reports).
    pub clients: Vec<usize>,
    /// Every clock check, in order: at registration, then before each mix.
    pub clock: Vec<ClockCheck>,
    /// Why it was lost, when it was (the connection closed, or 3 s of
    /// silence); it then ran no further mix unless it came back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost: Option<String>,
}

/// One clock check of an agent: the NTP-style exchange with the smallest
/// round trip of several.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ClockCheck {
    /// `registration`, or `mix N` (N counts the mixes the agents ran,
    /// from 1).
    pub at: String,
    /// The agent's clock minus the controller's, microseconds; the
    /// controller adds it to each start time it sends the agent.
    pub offset_us: i64,
    /// The round trip of the sample used, microseconds (the offset is
    /// exact to within half of it).
    pub rtt_us: u64,
}

/// The host facts that change what a server can do: the kernel's network
/// and file tunables, CPU model and count, memory.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct HostFacts {
    /// `/proc/sys` values by sysctl name (`net.core.somaxconn`,
    /// `net.ipv4.ip_local_port_range`, `net.ipv4.tcp_tw_reuse`,
    /// `net.ipv4.tcp_max_syn_backlog`, `fs.file-max`), whitespace folded to
    /// one space; empty where unreadable.
    pub kernel_tunables: BTreeMap<String, String>,
    pub kernel: String,
    pub cpu_model: String,
    /// CPUs this process may run on.
    pub cpus_online: usize,
    /// `MemTotal` of `/proc/meminfo`, bytes.
    pub memory_bytes: u64,
}

/// The sysctls [`HostFacts`] records.
pub const KERNEL_TUNABLES: [&str; 5] = [
    "net.core.somaxconn",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.tcp_tw_reuse",
    "net.ipv4.tcp_max_syn_backlog",
    "fs.file-max",
];

impl HostFacts {
    /// Reads this host's facts from `/proc` (empty or zero where a file is
    /// unreadable: a missing fact is disclosed as missing, not an error).
    pub fn gather() -> HostFacts {
        let read = |p: &str| {
            std::fs::read_to_string(p)
                .map(|s| s.split_whitespace().collect::<Vec<_>>().join(" "))
                .unwrap_or_default()
        };
        let kernel_tunables = KERNEL_TUNABLES
            .iter()
            .map(|k| (k.to_string(), read(&format!("/proc/sys/{}", k.replace('.', "/")))))
            .collect();
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu_model = cpuinfo
            .lines()
            .find_map(|l| {
                l.strip_prefix("model name")
                    .and_then(|r| r.split_once(':'))
                    .map(|(_, m)| m.trim().to_owned())
            })
            .unwrap_or_default();
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let mem_kb = meminfo
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|r| r.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .unwrap_or(0);
        HostFacts {
            kernel_tunables,
            kernel: read("/proc/sys/kernel/osrelease"),
            cpu_model,
            cpus_online: std::thread::available_parallelism().map_or(0, |n| n.get()),
            memory_bytes: mem_kb * 1024,
        }
    }
}

/// One piece of a server's effective configuration, as a command printed
/// it (`nginx -T`, `apache2 -S`, `apache2 -M`, `lighttpd -p`) or a file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EffectiveConfiguration {
    /// The command or file it came from.
    pub source: String,
    pub text: String,
}

/// A server under test started by `benchlab lab up`, as disclosed: the
/// state dir's `disclosure.json`, with where it ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ServerDisclosure {
    /// The lab's name for it: `nginx`, `apache-event`, `apache-prefork`,
    /// `lighttpd` or `benchlab`.
    pub server: String,
    /// What the server says its version is (`nginx -v`, `apache2 -v`, ...).
    pub version: String,
    /// The URL it served.
    #[serde(default)]
    pub url: String,
    /// CPUs the server and its helpers were pinned to; empty: not pinned.
    pub cpus: Vec<usize>,
    /// The profile (its tuning) as TOML.
    pub profile: String,
    /// Its full effective configuration, as the server prints it.
    pub effective_configuration: Vec<EffectiveConfiguration>,
    /// The listen backlog asked for and what the kernel granted (absent for
    /// a server without the setting: benchlab serve).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub listen_backlog: Option<ListenBacklog>,
}

/// A listen socket's backlog: the kernel silently caps what `listen(2)`
/// asks for at `net.core.somaxconn`, so a disclosed backlog says both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ListenBacklog {
    /// What the server's configuration asks for (profile `backlog`, or
    /// `lab up --backlog`).
    pub requested: u32,
    /// `net.core.somaxconn` when the server started; None when unreadable.
    pub somaxconn: Option<u32>,
    /// The queue the kernel gives: the smaller of the two.
    pub effective: u32,
}

impl ListenBacklog {
    pub fn new(requested: u32, somaxconn: Option<u32>) -> ListenBacklog {
        ListenBacklog {
            requested,
            somaxconn,
            effective: somaxconn.map_or(requested, |m| requested.min(m)),
        }
    }

    /// `511 (net.core.somaxconn 4096 does not cap it)` or `8192 asked, capped
    /// to 4096 by net.core.somaxconn`.
    pub fn text(&self) -> String {
        match self.somaxconn {
            Some(m) if self.requested > m => format!(
                "{} asked, capped to {} by net.core.somaxconn",
                self.requested, self.effective
            ),
            Some(m) => format!("{} (net.core.somaxconn {m} does not cap it)", self.requested),
            None => format!(
                "{} (net.core.somaxconn unreadable: the kernel may cap it)",
                self.requested
            ),
        }
    }
}

/// The suite as run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SuiteInfo {
    pub name: String,
    pub description: String,
    pub file: String,
    pub seed: u64,
    pub max_clients: Option<u32>,
    /// Price of the system under test in dollars (the suite's `price`), for
    /// price/performance; `--price` of `benchlab report` overrides it.
    #[serde(default)]
    pub price: Option<f64>,
    /// The suite file's text, for the configuration disclosure.
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PhaseResult {
    pub name: String,
    pub workload: String,
    pub target: String,
    /// Mix numbers (1-based).
    pub mixes: Vec<usize>,
    /// Set when `--find-peak` chose the phase's mixes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search: Option<PhaseSearchResult>,
}

/// `results.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Results {
    pub schema: String,
    pub suite: SuiteInfo,
    pub environment: Environment,
    pub phases: Vec<PhaseResult>,
    pub mixes: Vec<MixResult>,
    /// Every mix of the suite ran to its end.
    pub complete: bool,
    /// `--threshold` (and `http`'s `--max-*`) as evaluated on these
    /// results, in the order given; absent when none was given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thresholds: Vec<gate::ThresholdResult>,
}

impl Results {
    /// `File` when its mixes are a file suite's (any has
    /// [`MixResult::files`]), else `Web`: the report then leads with
    /// Mbit/s, as NetBench did.
    pub fn kind(&self) -> RunKind {
        if self.mixes.iter().any(|m| m.files.is_some()) {
            RunKind::File
        } else {
            RunKind::Web
        }
    }
}

/// Unix seconds as a UTC calendar time `(year, month, day, hour, minute,
/// second)` — Howard Hinnant's `civil_from_days` — so results can be dated
/// (the report's start time, default directory names) without a date crate.
pub fn utc_civil(unix: u64) -> (i64, u32, u32, u32, u32, u32) {
    let (days, secs) = ((unix / 86_400) as i64, unix % 86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (
        y,
        m,
        d,
        (secs / 3600) as u32,
        (secs / 60 % 60) as u32,
        (secs % 60) as u32,
    )
}

/// Writes `bytes` to `path` atomically (temporary file + rename).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// WebBench's summary report: one row per mix.
pub fn summary_csv(r: &Results) -> String {
    let mut o = String::from(
        "mix,phase,clients,clients_participating,threads,partial,window_s,requests,requests_per_sec,bytes_per_sec,mbytes_per_sec,mbit_per_sec,\
         latency_mean_us,latency_p50_us,latency_p90_us,latency_p99_us,latency_p999_us,latency_max_us,errors_total",
    );
    for k in ERROR_KINDS {
        let _ = write!(o, ",errors_{k}");
    }
    o.push_str(",reconnects,in_flight,connections_opened,client_cpu_percent,client_bound,search_step,search_kind\n");
    for m in &r.mixes {
        let f = &m.figures;
        let _ = write!(
            o,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            m.mix,
            csv_field(&m.phase),
            m.clients,
            m.clients_participating,
            m.threads,
            m.partial,
            m.window_s,
            f.requests,
            f.requests_per_sec,
            f.bytes_per_sec,
            round(f.bytes_per_sec / 1e6, 3),
            f.mbit_per_sec,
            f.latency_us.mean,
            f.latency_us.p50,
            f.latency_us.p90,
            f.latency_us.p99,
            f.latency_us.p999,
            f.latency_us.max,
            f.errors_total
        );
        for k in ERROR_KINDS {
            let _ = write!(o, ",{}", f.errors.get(k).copied().unwrap_or(0));
        }
        // Empty for a suite's own mixes; `--find-peak`'s order and kind.
        let (step, kind) = match &m.search {
            Some(s) => (s.step.to_string(), s.kind.name()),
            None => (String::new(), ""),
        };
        let _ = writeln!(
            o,
            ",{},{},{},{},{},{step},{kind}",
            m.reconnects,
            m.in_flight,
            m.connections_opened,
            round(m.client_cpu.utilisation * 100.0, 1),
            m.client_cpu.client_bound
        );
    }
    o
}

/// WebBench's client data report: one row per mix × client.
pub fn clients_csv(r: &Results) -> String {
    let mut o = String::from(
        "mix,client,address,taken_out,requests,requests_per_sec,bytes,bytes_per_sec,latency_mean_us,latency_p50_us,latency_p99_us,errors_total,connections_opened,in_flight,delay_s\n",
    );
    for m in &r.mixes {
        for c in &m.client_data {
            let f = &c.figures;
            let _ = writeln!(
                o,
                "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
                m.mix,
                c.client,
                c.address.as_deref().unwrap_or(""),
                c.taken_out,
                f.requests,
                f.requests_per_sec,
                f.bytes,
                f.bytes_per_sec,
                f.latency_us.mean,
                f.latency_us.p50,
                f.latency_us.p99,
                f.errors_total,
                c.connections_opened,
                c.in_flight,
                c.delay_s
            );
        }
    }
    o
}

/// Writes the three files of a results directory.
pub fn write_results(dir: &Path, r: &Results) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let json = serde_json::to_vec_pretty(r).map_err(std::io::Error::other)?;
    write_atomic(&dir.join("results.json"), &json)?;
    write_atomic(&dir.join("summary.csv"), summary_csv(r).as_bytes())?;
    write_atomic(&dir.join("clients.csv"), clients_csv(r).as_bytes())
}

/// Serialises a histogram (V2, base64) for `results.json`.
pub fn histogram_b64(h: &hdrhistogram::Histogram<u64>) -> String {
    use hdrhistogram::serialization::{Serializer, V2Serializer};
    let mut buf = Vec::new();
    if V2Serializer::new().serialize(h, &mut buf).is_err() {
        return String::new();
    }
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(&buf)
}

#[cfg(test)]
mod tests {

    #[test]
    fn smb_negotiated_merges_to_the_common_value_or_the_values_joined() {
        let n = |d: &str, s: &str, c: &str| SmbNegotiated {
            dialect: d.into(),
            signing: s.into(),
            cipher: c.into(),
        };
        let a = n("3.1.1", "aes-gmac", "none");
        assert_eq!(SmbNegotiated::merge(None, None), None);
        assert_eq!(SmbNegotiated::merge(None, Some(&a)), Some(a.clone()));
        assert_eq!(SmbNegotiated::merge(Some(a.clone()), Some(&a)), Some(a.clone()));
        let b = SmbNegotiated::merge(Some(a.clone()), Some(&n("3.0", "aes-cmac", "none")));
        let b = SmbNegotiated::merge(b, Some(&a));
        assert_eq!(b, Some(n("3.1.1, 3.0", "aes-gmac, aes-cmac", "none")));
        assert_eq!(a.describe(), "dialect 3.1.1, signing aes-gmac, cipher none");
    }

    use super::*;

    /// The start spread's words group their numbers as the report's
    /// tables do: a spread over a millisecond read `1158` in one report.
    #[test]
    fn the_start_spread_groups_its_numbers() {
        let s = StartSpread {
            clients: 2,
            min_us: -1_500,
            max_us: 1_158,
            spread_us: 2_658,
            latest_client: 2,
            clock_uncertainty_us: 1_204,
        };
        assert_eq!(
            s.summary(),
            "start spread 2,658 µs over 2 clients (-1,500 to 1,158 µs after their start, \
             the latest client 2; clocks known to ±1,204 µs)"
        );
    }

    #[test]
    fn civil_dates() {
        assert_eq!(utc_civil(0), (1970, 1, 1, 0, 0, 0));
        assert_eq!(utc_civil(951_782_400), (2000, 2, 29, 0, 0, 0));
        assert_eq!(utc_civil(1_795_370_651), (2026, 11, 22, 18, 4, 11));
    }

    #[test]
    fn client_bound_above_the_threshold() {
        let s = Duration::from_secs;
        // 1.8 s of CPU in 1 s on 2 cores: 90 %, not above 90 %.
        let at = ClientCpu::measure(s(1), Duration::from_millis(800), s(1), 2, 1000);
        assert_eq!(at.utilisation, 0.9);
        assert!(!at.client_bound);
        assert_eq!(at.us_per_request, 1800.0);
        let above = ClientCpu::measure(s(1), Duration::from_millis(850), s(1), 2, 1000);
        assert!(above.client_bound);
        // A forced threshold flags a light load.
        let light = ClientCpu::measure_with(Duration::from_millis(10), Duration::ZERO, s(1), 4, 0, 0.001);
        assert!(light.client_bound);
        assert_eq!(light.us_per_request, 0.0);
        assert!(!is_client_bound(0.5, CLIENT_BOUND_SHARE));
        assert!(is_client_bound(0.95, CLIENT_BOUND_SHARE));
        // Co-located: only a busy machine with the server on it is flagged.
        let half = ClientCpu::measure(s(1), s(0), s(1), 2, 10);
        assert!(!half.client_bound);
        assert!(half.clone().with_machine(Some(0.97), true).co_located_saturated);
        assert!(!half.clone().with_machine(Some(0.97), false).co_located_saturated);
        assert!(!half.clone().with_machine(Some(0.85), true).co_located_saturated);
        assert!(!half.clone().with_machine(None, true).co_located_saturated);
        assert!(
            half.clone()
                .with_machine_threshold(Some(0.5), true, 0.4)
                .co_located_saturated
        );
        assert_eq!(half.with_machine(Some(0.96789), true).machine_busy, Some(0.968));
        // No wall time, no cores: no division by zero.
        let none = ClientCpu::measure(s(0), s(0), s(0), 0, 0);
        assert_eq!((none.cores, none.utilisation, none.client_bound), (1, 0.0, false));
    }

    #[test]
    fn repeats_fold_into_the_median_run() {
        let run = |rate: f64, p99: u64| -> MixResult {
            let mut m: MixResult = serde_json::from_value(serde_json::json!({
                "mix": 2, "phase": "p", "clients": 1, "clients_participating": 1, "threads": 4,
                "partial": false, "window_s": 1.0, "requests": rate as u64, "requests_per_sec": rate,
                "bytes": 0, "bytes_per_sec": 0.0, "mbit_per_sec": 0.0, "body_bytes": 0, "error_bytes": 0,
                "errors": {}, "errors_total": 0,
                "latency_us": {"mean": 1.0, "p50": 1, "p90": 1, "p99": p99, "p999": 1, "max": 1},
                "error_latency_us": {"mean": 0.0, "p50": 0, "p90": 0, "p99": 0, "p999": 0, "max": 0},
                "reconnects": 0, "in_flight": 0, "connections_opened": 1, "tls_full_handshakes": 0,
                "tls_resumptions": 0, "client_cpu_s": 0.0,
                "params": {"delay_s": 0.0, "ramp_up_s": 0.0, "ramp_down_s": 0.0, "length_s": 1.0,
                    "think_time_s": 0.0, "threads_per_client": 4, "receive_buffer": 65536,
                    "http10_percent": 0, "http10_keepalive": false, "persistent_percent": 100,
                    "requests_per_connection": null, "timeout_s": 5.0, "workload": "w", "target": "t"},
                "client_data": [], "classes": [], "per_second": [],
                "histograms": {"latency_us": "", "error_latency_us": "", "classes": {}}
            }))
            .expect("a mix");
            m.figures.requests_per_sec = rate;
            m
        };
        let one = fold_repeats(vec![run(10.0, 5)]).expect("one run");
        assert!(one.repeats.is_none());
        let m = fold_repeats(vec![run(30.0, 7), run(10.0, 9), run(20.0, 8)]).expect("three runs");
        let r = m.repeats.as_ref().expect("repeats");
        // The median by requests/s is the third run: its figures are the mix's.
        assert_eq!(
            (r.median_repeat, m.figures.requests_per_sec, m.figures.latency_us.p99),
            (3, 20.0, 8)
        );
        assert_eq!(r.runs.iter().map(|x| x.repeat).collect::<Vec<_>>(), [1, 2, 3]);
        assert_eq!(
            r.requests_per_sec,
            Range {
                min: 10.0,
                median: 20.0,
                max: 30.0
            }
        );
        assert_eq!(
            r.latency_p99_us,
            Range {
                min: 7.0,
                median: 8.0,
                max: 9.0
            }
        );
        // An even count shows the lower middle run; the median figure is the mean of the two.
        let m = fold_repeats(vec![run(40.0, 1), run(10.0, 1)]).expect("two runs");
        let r = m.repeats.as_ref().expect("repeats");
        assert_eq!((r.median_repeat, r.requests_per_sec.median), (2, 25.0));
        assert!(fold_repeats(Vec::new()).is_none());
    }

    #[test]
    fn csv_quotes() {
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("x"), "x");
    }
}
