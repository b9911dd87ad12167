//! The result of `benchlab http`: the human summary, and `--json`'s
//! one-mix `benchlab.results/1` (the schema every run writes; see
//! [`results_of`]), both from the same struct, so both always agree.
//!
//! Field names and meanings are those of docs/counting.md; the
//! docs/http.md documents each one.

use crate::args::HttpMode;
use benchlab_engine::{sys, ClassStats, ClientPlan, ClientReport, Counters, ErrorKind, LatencySummary, Load, Stop};
use serde::Serialize;
use std::fmt::Write as _;
use std::time::Duration;

/// Writes to stdout for the `print!`/`println!` of this binary (main.rs),
/// flushed at once so a closed pipe shows here and not at exit. A reader
/// that has gone (`EPIPE`) ends the process quietly with
/// [`benchlab_results::exit::CLOSED_STDOUT`] (141, a shell's status for a
/// process killed by SIGPIPE); any other failure to write is said on stderr
/// and exits 1. SIGPIPE itself stays ignored, as Rust sets it, because the
/// engine's sockets must see a server's reset as an error to count, never
/// as a signal that kills the run.
pub fn print_stdout(args: std::fmt::Arguments<'_>, newline: bool) {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    let written = out
        .write_fmt(args)
        .and_then(|()| if newline { out.write_all(b"\n") } else { Ok(()) })
        .and_then(|()| out.flush());
    if let Err(e) = written {
        stdout_failed(&e);
    }
}

/// Ends the process after a failed write to stdout: quietly with 141 for a
/// closed pipe, else with a message and 1.
pub fn stdout_failed(e: &std::io::Error) -> ! {
    use benchlab_results::exit;
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        std::process::exit(exit::CLOSED_STDOUT.into());
    }
    eprintln!("benchlab: cannot write to standard output: {e}");
    std::process::exit(exit::CANNOT_RUN.into());
}

/// `benchlab http`'s results: the run (`HttpResult`, or the peak search's
/// steps) as a one-phase `benchlab.results/1` — the one mix of a run, or a
/// mix per load of `--find-peak` with the phase's search result — through
/// the loader's own upgrade of what `benchlab.http/1` and
/// `benchlab.http-peak/1` held, so no figure is lost on the way and
/// `report` and `compare` read it as they read a suite's results.
/// Dated now.
pub fn results_of<T: Serialize>(old_shape: &T) -> Result<benchlab_results::Results, String> {
    let mut r = serde_json::to_value(old_shape)
        .map_err(|e| e.to_string())
        .and_then(|v| benchlab_results::load::upgrade(v).map_err(|e| e.to_string()))?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0);
    let ran: f64 = r.mixes.iter().map(|m| m.params.length_s).sum();
    r.environment.started_unix = (now - ran).max(0.0) as u64;
    r.environment.cores = sys::usable_cpus();
    Ok(r)
}

/// `--json`'s document.
pub fn json_text(r: &benchlab_results::Results) -> String {
    serde_json::to_string_pretty(r).unwrap_or_default()
}

/// Latency figures in microseconds: the same type as in results.json.
pub use benchlab_controller::Latency;
use benchlab_controller::{arrival_warning, latency_of, request_kinds, OpenLoopOf, OpenLoopResult, RequestKinds};
use benchlab_engine::{share_warning, ConnectionKind};

/// The load generator's own CPU use: the same type as a mix's in results.json.
pub use benchlab_controller::ClientCpu;

/// Counters of one class (one URL for `benchlab http`).
#[derive(Debug, Clone, Serialize)]
pub struct ClassResult {
    pub name: String,
    pub requests: u64,
    pub requests_per_sec: f64,
    pub errors: ErrorCounts,
    pub errors_total: u64,
    pub bytes: u64,
    pub body_bytes: u64,
    pub error_bytes: u64,
    pub latency_us: Latency,
}

/// One second of the run.
#[derive(Debug, Clone, Serialize)]
pub struct SecondResult {
    /// 1 = the first second.
    pub second: u32,
    pub requests: u64,
    pub errors: u64,
    pub bytes: u64,
    pub body_bytes: u64,
    pub connections_opened: u64,
    pub latency_p50_us: u64,
    pub latency_p99_us: u64,
}

/// `benchlab http --json`.
#[derive(Debug, Clone, Serialize)]
pub struct HttpResult {
    pub schema: &'static str,
    pub benchlab_version: &'static str,
    pub urls: Vec<String>,
    /// `closed` (--threads users) or `open` (--rate).
    pub mode: &'static str,
    /// Closed-loop users; 0 in an open loop.
    pub threads: u32,
    pub os_threads: usize,
    /// Seconds over which requests were counted (start to the last worker's stop).
    pub duration_s: f64,
    /// Ctrl-C stopped the run before its end: the figures cover what ran
    /// (as a suite's mix stopped the same way), and the exit status is 130.
    pub partial: bool,
    pub requests: u64,
    pub requests_per_sec: f64,
    pub errors: ErrorCounts,
    pub errors_total: u64,
    pub reconnects: u64,
    pub in_flight: u64,
    pub bytes: u64,
    pub body_bytes: u64,
    pub error_bytes: u64,
    pub bytes_per_sec: f64,
    pub body_bytes_per_sec: f64,
    pub connections_opened: u64,
    pub tls_full_handshakes: u64,
    pub tls_resumptions: u64,
    pub latency_us: Latency,
    pub error_latency_us: Latency,
    pub client_cpu: ClientCpu,
    /// CPUs the load generator was pinned to (`--client-cpus`), as
    /// results.json's `environment.client_cpus`; empty: not pinned.
    pub client_cpus: Vec<usize>,
    pub classes: Vec<ClassResult>,
    pub per_second: Vec<SecondResult>,
    /// Seconds at the start over which users started, not counted.
    pub ramp_up_s: f64,
    /// Virtual users that got at least one response.
    pub users_arrived: u64,
    /// Virtual users still waiting to connect when the run ended.
    pub users_waiting: u64,
    /// Requests by HTTP version and connection kind next to the shares
    /// the flags configure (as in results.json's mixes).
    pub request_kinds: RequestKinds,
    /// Open loop only (absent in a closed loop): the schedule and how it
    /// was kept. `latency_us` then counts from intended send times.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub open_loop: Option<OpenLoopResult>,
    /// `--http 2` only (absent for HTTP/1): connections, streams, the
    /// server's SETTINGS and the HTTP/2 counts of docs/counting.md.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http2: Option<Http2Result>,
    /// What benchlab warned about (also printed on stderr).
    pub warnings: Vec<String>,
    /// With --agents: each client, where it ran and what it did (absent
    /// when the run's one client ran in this process).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub clients: Vec<HttpClientResult>,
    /// The merged HDR histograms (total, failed, per URL), for `--json`'s
    /// mix: `report` draws the response-time distribution from them and
    /// reads percentiles of several runs from them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub histograms: Option<benchlab_results::Histograms>,
}

/// What an HTTP/2 run used and met.
#[derive(Debug, Clone, Serialize)]
pub struct Http2Result {
    /// Connections and concurrent streams per connection configured.
    pub connections: u32,
    pub streams: u32,
    /// Flow-control window benchlab granted per stream and connection.
    pub window: u32,
    /// The server's SETTINGS (as its first connection received them);
    /// `null` when no connection got that far.
    pub server_settings: Option<benchlab_engine::h2::conn::PeerSettings>,
    /// Streams opened (requests sent), GOAWAY frames received.
    pub streams_opened: u64,
    pub goaways: u64,
    /// Connection-level frame bytes received (SETTINGS, PING,
    /// WINDOW_UPDATE, GOAWAY...), not in `bytes`.
    pub connection_frame_bytes: u64,
    /// RST_STREAM frames that ended a request, by error code name
    /// (non-zero codes only).
    pub stream_resets: std::collections::BTreeMap<String, u64>,
}

use benchlab_results::h2_code_name;

/// Errors by kind with every canonical kind present (zeros included), in
/// the order of docs/counting.md, so consumers never meet a missing key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ErrorCounts(pub [u64; ErrorKind::COUNT]);

impl ErrorCounts {
    pub fn get(&self, kind: ErrorKind) -> u64 {
        self.0[kind as usize]
    }

    /// Non-zero kinds, in order.
    pub fn nonzero(&self) -> impl Iterator<Item = (ErrorKind, u64)> + '_ {
        ErrorKind::ALL
            .iter()
            .map(|k| (*k, self.get(*k)))
            .filter(|(_, n)| *n > 0)
    }
}

impl Serialize for ErrorCounts {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(ErrorKind::COUNT))?;
        for k in ErrorKind::ALL {
            m.serialize_entry(k.name(), &self.get(k))?;
        }
        m.end()
    }
}

fn errors_map(c: &Counters) -> ErrorCounts {
    ErrorCounts(c.errors)
}

fn rate(n: u64, secs: f64) -> f64 {
    if secs > 0.0 {
        ((n as f64 / secs) * 10.0).round() / 10.0
    } else {
        0.0
    }
}

impl HttpResult {
    /// `report`: the run's one client's, or its clients' merged
    /// ([`merge_reports`]); `peaks`: each client's most connections open.
    pub fn new(
        plan: &ClientPlan,
        report: &ClientReport,
        peaks: &[u64],
        os_threads: usize,
        cpu0: (Duration, Duration),
        cpu1: (Duration, Duration),
        wall: Duration,
    ) -> HttpResult {
        let total: ClassStats = report.stats.total();
        let c = &total.counters;
        let secs = match plan.stop {
            // The counted window starts after the ramp-up.
            Stop::After(d) => report.elapsed.min(d).saturating_sub(plan.window.0).as_secs_f64(),
            Stop::Requests(_) => report.elapsed.as_secs_f64(),
        };
        let user = cpu1.0.saturating_sub(cpu0.0);
        let system = cpu1.1.saturating_sub(cpu0.1);
        let cores = os_threads.min(sys::usable_cpus()).max(1);
        let done = c.requests + c.errors_total();
        let shares = plan.connection.request_shares(&report.stats.conn.requests_by_kind);
        let mut warnings: Vec<String> = share_warning(
            &shares,
            "--requests-per-connection N (1 makes request shares the configured ones)",
        )
        .into_iter()
        .collect();
        let conn = &report.stats.conn;
        let open_loop = match plan.load {
            Load::Closed => None,
            Load::Open(o) => Some(OpenLoopResult::measure(
                o.rate,
                o.arrival.name(),
                o.max_in_flight,
                conn,
                &total,
                secs,
                // One client: its peak is exact; several: each one's.
                peaks,
            )),
        };
        warnings.extend(
            open_loop
                .as_ref()
                .and_then(|o| o.late_warning("--rate", "--max-in-flight")),
        );
        warnings.extend(arrival_warning(
            report.users_waiting,
            plan.virtual_users as u64,
            "use --ramp-up, or fewer --threads",
        ));
        let classes = plan
            .classes
            .iter()
            .zip(report.stats.classes.iter())
            .map(|(p, s)| ClassResult {
                name: p.name.clone(),
                requests: s.counters.requests,
                requests_per_sec: rate(s.counters.requests, secs),
                errors: errors_map(&s.counters),
                errors_total: s.counters.errors_total(),
                bytes: s.counters.bytes,
                body_bytes: s.counters.body_bytes,
                error_bytes: s.counters.error_bytes,
                latency_us: latency_of(LatencySummary::of(&s.latency)),
            })
            .collect();
        let per_second = report
            .seconds
            .iter()
            .map(|s| SecondResult {
                second: s.second + 1,
                requests: s.counters.requests,
                errors: s.counters.errors_total(),
                bytes: s.counters.bytes,
                body_bytes: s.counters.body_bytes,
                connections_opened: s.conn.connections_opened,
                latency_p50_us: s.latency.p50,
                latency_p99_us: s.latency.p99,
            })
            .collect();
        HttpResult {
            schema: "benchlab.http/1",
            benchlab_version: env!("CARGO_PKG_VERSION"),
            urls: plan.urls.iter().map(|u| u.target.url.clone()).collect(),
            mode: if open_loop.is_some() { "open" } else { "closed" },
            threads: if open_loop.is_some() { 0 } else { plan.virtual_users },
            os_threads,
            duration_s: (secs * 1000.0).round() / 1000.0,
            partial: false,
            requests: c.requests,
            requests_per_sec: rate(c.requests, secs),
            errors: errors_map(c),
            errors_total: c.errors_total(),
            reconnects: report.stats.conn.reconnects,
            in_flight: report.in_flight,
            bytes: c.bytes,
            body_bytes: c.body_bytes,
            error_bytes: c.error_bytes,
            bytes_per_sec: rate(c.bytes, secs),
            body_bytes_per_sec: rate(c.body_bytes, secs),
            connections_opened: report.stats.conn.connections_opened,
            tls_full_handshakes: report.stats.conn.tls_full_handshakes,
            tls_resumptions: report.stats.conn.tls_resumptions,
            latency_us: latency_of(LatencySummary::of(&total.latency)),
            error_latency_us: latency_of(LatencySummary::of(&total.error_latency)),
            client_cpu: ClientCpu::measure(user, system, wall, cores, done),
            client_cpus: Vec::new(),
            classes,
            per_second,
            ramp_up_s: plan.ramp_up.as_secs_f64(),
            users_arrived: report.users_arrived,
            users_waiting: report.users_waiting,
            request_kinds: request_kinds(&shares),
            open_loop,
            http2: plan.http2.map(|h| Http2Result {
                connections: h.connections,
                streams: h.streams,
                window: h.window,
                server_settings: report.h2_settings,
                streams_opened: conn.h2_streams,
                goaways: conn.h2_goaways,
                connection_frame_bytes: conn.h2_connection_bytes,
                stream_resets: conn
                    .stream_reset_codes
                    .iter()
                    .enumerate()
                    .filter(|(_, n)| **n > 0)
                    .map(|(code, n)| (h2_code_name(code).to_string(), *n))
                    .collect(),
            }),
            warnings,
            clients: Vec::new(),
            histograms: Some(benchlab_results::Histograms {
                latency_us: benchlab_results::histogram_b64(&total.latency),
                error_latency_us: benchlab_results::histogram_b64(&total.error_latency),
                classes: plan
                    .classes
                    .iter()
                    .zip(report.stats.classes.iter())
                    .map(|(p, s)| (p.name.clone(), benchlab_results::histogram_b64(&s.latency)))
                    .collect(),
                latency_as_sent_us: None,
                classes_as_sent: Default::default(),
            }),
        }
    }
}

/// One client of `http --agents`: where it ran and what it did (the
/// figures of a suite's `client_data` row).
#[derive(Debug, Clone, Serialize)]
pub struct HttpClientResult {
    /// 1-based.
    pub client: u32,
    /// The agent that ran it (0-based index) and its host name.
    pub agent: u32,
    pub host: String,
    /// Local address its connections came from, when it had its own.
    pub address: Option<String>,
    /// Its share of the virtual users (closed loop) or of the rate (open).
    pub threads: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
    #[serde(flatten)]
    pub figures: benchlab_controller::Figures,
    pub connections_opened: u64,
    pub in_flight: u64,
    /// Why it was lost mid-run: its figures are then those of the seconds
    /// it sent, apart from the run's totals.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lost: Option<String>,
}

/// The rows of `http --agents`'s clients, in client order (`window_s`:
/// the run's counted seconds, for the rates).
pub fn client_rows(
    plans: &[ClientPlan],
    driven: &benchlab_controller::Driven,
    agents: &[benchlab_controller::AgentResult],
    window_s: f64,
) -> Vec<HttpClientResult> {
    use benchlab_controller::{ClientEnd, Figures, FiguresOf};
    driven
        .clients
        .iter()
        .zip(plans)
        .enumerate()
        .map(|(i, (end, plan))| {
            let agent = agents.iter().find(|a| a.clients.contains(&(i + 1)));
            let (figures, connections_opened, in_flight, lost) = match end {
                ClientEnd::Finished(r) => (
                    Figures::of(&r.stats.total(), window_s),
                    r.stats.conn.connections_opened,
                    r.in_flight,
                    None,
                ),
                ClientEnd::Lost {
                    why,
                    window,
                    conn,
                    seconds,
                } => (
                    Figures::of(window, f64::from(*seconds)),
                    conn.connections_opened,
                    0,
                    Some(why.clone()),
                ),
            };
            HttpClientResult {
                client: i as u32 + 1,
                agent: agent.map_or(0, |a| a.index),
                host: agent.map(|a| a.host.clone()).unwrap_or_default(),
                address: plan.source_addresses.first().map(|a| a.to_string()),
                threads: match plan.load {
                    Load::Closed => plan.virtual_users,
                    Load::Open(_) => 0,
                },
                rate: match plan.load {
                    Load::Closed => None,
                    Load::Open(o) => Some(o.rate),
                },
                figures,
                connections_opened,
                in_flight,
                lost,
            }
        })
        .collect()
}

/// Several clients' reports as one: every count summed, histograms added
/// (so percentiles are those of all requests), each second's counts summed
/// with the percentiles of its merged histogram from `seconds` (the
/// controller's merge of the streamed seconds).
pub fn merge_reports(reports: &[&ClientReport], seconds: &[benchlab_controller::SecondResult]) -> ClientReport {
    use std::collections::BTreeMap;
    let classes = reports.first().map_or(0, |r| r.stats.classes.len());
    let mut stats = benchlab_engine::Stats::new(classes);
    let mut by_second: BTreeMap<u32, benchlab_engine::Second> = BTreeMap::new();
    let mut m = ClientReport {
        stats: benchlab_engine::Stats::new(classes),
        seconds: Vec::new(),
        in_flight: 0,
        cpu_user: Duration::ZERO,
        cpu_system: Duration::ZERO,
        elapsed: Duration::ZERO,
        tls_error: None,
        users_arrived: 0,
        users_waiting: 0,
        peak_connections: 0,
        threads_lost: 0,
        h2_settings: None,
    };
    for r in reports {
        stats.add(&r.stats);
        for s in &r.seconds {
            match by_second.entry(s.second) {
                std::collections::btree_map::Entry::Vacant(v) => {
                    v.insert(s.clone());
                }
                std::collections::btree_map::Entry::Occupied(mut o) => {
                    let t = o.get_mut();
                    t.counters.add(&s.counters);
                    t.conn.add(&s.conn);
                    t.load.add(&s.load);
                }
            }
        }
        m.in_flight += r.in_flight;
        m.cpu_user += r.cpu_user;
        m.cpu_system += r.cpu_system;
        m.elapsed = m.elapsed.max(r.elapsed);
        if m.tls_error.is_none() {
            m.tls_error.clone_from(&r.tls_error);
        }
        m.h2_settings = m.h2_settings.or(r.h2_settings);
        m.users_arrived += r.users_arrived;
        m.users_waiting += r.users_waiting;
        // At most: the clients' peaks need not coincide.
        m.peak_connections += r.peak_connections;
        m.threads_lost += r.threads_lost;
    }
    m.stats = stats;
    m.seconds = by_second
        .into_values()
        .map(|mut s| {
            // The controller numbers seconds from 1.
            if let Some(merged) = seconds.iter().find(|x| x.second == s.second + 1) {
                s.latency.p50 = merged.latency_p50_us;
                s.latency.p99 = merged.latency_p99_us;
            }
            s.histogram = None;
            s
        })
        .collect();
    m
}

/// Numbers for people: the one formatter of the terminal, HTML and XLSX.
pub use benchlab_format::{mbit_per_sec, mbytes_per_sec, mean_us, plural, requests_per_sec, seconds, share, thousands};

/// One line saying what the run will do.
pub fn describe(plan: &ClientPlan, mode: HttpMode) -> String {
    let c = plan.connection;
    let conn = match mode {
        HttpMode::Http2 => {
            let h2 = plan.http2.unwrap_or_default();
            let tls = plan
                .urls
                .iter()
                .any(|u| u.target.scheme == benchlab_engine::Scheme::Https);
            format!(
                "HTTP/2 ({}), {} × {} at most",
                if tls { "TLS, ALPN h2" } else { "h2c, prior knowledge" },
                plural(h2.connections.into(), "connection", "connections"),
                plural(h2.streams.into(), "stream", "streams")
            )
        }
        HttpMode::Http10 if c.http10_percent == 100 => "HTTP/1.0, a connection per request".to_string(),
        HttpMode::Http10KeepAlive if c.http10_percent == 100 => "HTTP/1.0 keep-alive".to_string(),
        _ => {
            let mut s = format!("HTTP/1.1, {} % persistent", c.persistent_percent);
            if c.http10_percent > 0 {
                s += &format!(", {} % HTTP/1.0", c.http10_percent);
            }
            s
        }
    };
    let per_conn = match c.requests_per_connection {
        None => String::new(),
        Some((a, b)) if a == b => format!(", {} per connection", plural(a.into(), "request", "requests")),
        Some((a, b)) => format!(
            ", {}..{} requests per connection",
            thousands(a.into()),
            thousands(b.into())
        ),
    };
    let stop = match plan.stop {
        Stop::After(d) if !plan.ramp_up.is_zero() => format!(
            "for {} after a {} ramp-up (not counted)",
            humantime::format_duration(d.saturating_sub(plan.ramp_up)),
            humantime::format_duration(plan.ramp_up)
        ),
        Stop::After(d) => format!("for {}", humantime::format_duration(d)),
        Stop::Requests(n) => format!("for {} requests", thousands(n)),
    };
    let load = match plan.load {
        Load::Closed => plural(
            plan.virtual_users.into(),
            "thread (virtual user)",
            "threads (virtual users)",
        ),
        Load::Open(o) => format!(
            "open loop at {} requests/s ({} arrivals, at most {} in flight)",
            benchlab_format::rate(o.rate),
            o.arrival.name(),
            thousands(o.max_in_flight.into())
        ),
    };
    format!(
        "benchlab http: {}, {load} on {}, {conn}{per_conn}, {stop}",
        plural(plan.urls.len() as u64, "URL", "URLs"),
        plural(
            plan.os_threads.min(plan.slots() as usize) as u64,
            "OS thread",
            "OS threads"
        )
    )
}

/// The human summary.
pub fn human(r: &HttpResult) -> String {
    let mut o = String::new();
    if r.partial {
        let _ = writeln!(o, "  partial: stopped by Ctrl-C after {} s", seconds(r.duration_s));
    }
    let _ = writeln!(
        o,
        "  requests     {:>14}  {:>12} req/s  in {} s",
        thousands(r.requests),
        requests_per_sec(r.requests_per_sec),
        seconds(r.duration_s)
    );
    let _ = writeln!(
        o,
        "  throughput   {:>11} MB/s  ({} Mbit/s); bodies {} MB/s",
        mbytes_per_sec(r.bytes_per_sec),
        mbit_per_sec(r.bytes_per_sec * 8.0 / 1e6),
        mbytes_per_sec(r.body_bytes_per_sec)
    );
    let l = &r.latency_us;
    let _ = writeln!(
        o,
        "  latency µs   mean {}  p50 {}  p90 {}  p99 {}  p99.9 {}  max {}",
        mean_us(l.mean),
        thousands(l.p50),
        thousands(l.p90),
        thousands(l.p99),
        thousands(l.p999),
        thousands(l.max)
    );
    if let Some(ol) = &r.open_loop {
        let l = &ol.latency_as_sent_us;
        let _ = writeln!(
            o,
            "  as sent µs   mean {}  p50 {}  p90 {}  p99 {}  p99.9 {}  max {}  (latency above: from intended send times)",
            mean_us(l.mean),
            thousands(l.p50),
            thousands(l.p90),
            thousands(l.p99),
            thousands(l.p999),
            thousands(l.max)
        );
        let _ = writeln!(
            o,
            "  open loop    --rate {} {}: {} sent ({} /s), {} late (> {} ms), {} waited for --max-in-flight {}",
            benchlab_format::rate(ol.rate),
            ol.arrival,
            thousands(ol.sends),
            requests_per_sec(ol.sends_per_sec),
            thousands(ol.late_sends),
            ol.late_tolerance_us / 1000,
            thousands(ol.max_in_flight_hit),
            thousands(ol.max_in_flight.into())
        );
    }
    if r.errors_total == 0 {
        let _ = writeln!(o, "  errors       0");
    } else {
        let kinds: Vec<String> = r
            .errors
            .nonzero()
            .map(|(k, n)| format!("{k} {}", thousands(n)))
            .collect();
        let _ = writeln!(
            o,
            "  errors       {}  ({}); {} received for them",
            thousands(r.errors_total),
            kinds.join(", "),
            plural(r.error_bytes, "byte", "bytes")
        );
        if r.errors.get(ErrorKind::WrongBody) > 0 {
            let _ = writeln!(
                o,
                "               wrong_body: size/checksum differs from the preflight response; pages whose size varies need --validate status"
            );
        }
    }
    let kinds: Vec<String> = ConnectionKind::ALL
        .iter()
        .filter_map(|k| r.request_kinds.get(k.name()).map(|f| (k, f)))
        .filter(|(_, f)| f.requests > 0 || f.configured_percent > 0.0)
        .map(|(k, f)| {
            format!(
                "{} {} ({:.2} %, configured {:.0} %)",
                k.label(),
                thousands(f.requests),
                f.percent,
                f.configured_percent
            )
        })
        .collect();
    match &r.http2 {
        Some(h) => {
            let server = match &h.server_settings {
                Some(s) => format!(
                    "; server: {} concurrent streams, window {}, frames up to {}",
                    s.max_concurrent_streams
                        .map_or("unlimited".to_string(), |n| thousands(n.into())),
                    thousands(s.initial_window_size.into()),
                    thousands(s.max_frame_size.into())
                ),
                None => String::new(),
            };
            let resets: Vec<String> = h
                .stream_resets
                .iter()
                .map(|(k, n)| format!("{k} {}", thousands(*n)))
                .collect();
            let _ = writeln!(
                o,
                "  HTTP/2       {} × {}, {} opened, {}, {} connection-level frame bytes{server}{}",
                plural(h.connections.into(), "connection", "connections"),
                plural(h.streams.into(), "stream", "streams"),
                plural(h.streams_opened, "stream", "streams"),
                plural(h.goaways, "GOAWAY", "GOAWAYs"),
                thousands(h.connection_frame_bytes),
                if resets.is_empty() {
                    String::new()
                } else {
                    format!("; stream resets: {}", resets.join(", "))
                }
            );
        }
        None => {
            let _ = writeln!(o, "  HTTP         {}", kinds.join("; "));
        }
    }
    if r.users_waiting > 0 {
        let _ = writeln!(
            o,
            "  users        {} of {} got a response; {} still waiting to connect at the end",
            thousands(r.users_arrived),
            thousands(r.threads as u64),
            thousands(r.users_waiting)
        );
    }
    let _ = writeln!(
        o,
        "  connections  {} opened{}, {} after idle closes, {} in flight at the end",
        thousands(r.connections_opened),
        match &r.open_loop {
            Some(ol) => format!(", at most {} open at once", thousands(ol.peak_connections)),
            None => String::new(),
        },
        plural(r.reconnects, "reconnect", "reconnects"),
        plural(r.in_flight, "request", "requests")
    );
    if r.tls_full_handshakes + r.tls_resumptions > 0 {
        let _ = writeln!(
            o,
            "  TLS          {}, {}",
            plural(r.tls_full_handshakes, "full handshake", "full handshakes"),
            plural(r.tls_resumptions, "resumption", "resumptions")
        );
    }
    let cpu = &r.client_cpu;
    let _ = writeln!(
        o,
        "  client CPU   {} s user + {} s system = {} of {}, {} µs per request{}",
        seconds(cpu.user_s),
        seconds(cpu.system_s),
        share(cpu.utilisation),
        plural(cpu.cores as u64, "core", "cores"),
        mean_us(cpu.us_per_request),
        if cpu.client_bound {
            "\n  CLIENT-BOUND: the load generator was saturated, so this measured benchlab, not the server; \
             use more --os-threads or cores, or more client machines"
        } else {
            ""
        }
    );
    if let (true, Some(busy)) = (cpu.co_located_saturated && !cpu.client_bound, cpu.machine_busy) {
        let _ = writeln!(
            o,
            "  CO-LOCATED: the server is on this machine and its CPUs were {} busy: benchlab and the server \
             competed for them, so either may have set these figures; run the load from another machine",
            share(busy)
        );
    }
    if r.classes.len() > 1 {
        let _ = writeln!(o, "  per URL:");
        for c in &r.classes {
            let _ = writeln!(
                o,
                "    {:>10} req  {:>10} req/s  p50 {:>7} µs  p99 {:>7} µs  errors {}  {}",
                thousands(c.requests),
                requests_per_sec(c.requests_per_sec),
                thousands(c.latency_us.p50),
                thousands(c.latency_us.p99),
                thousands(c.errors_total),
                c.name
            );
        }
    }
    if !r.clients.is_empty() {
        let _ = writeln!(o, "  per client:");
        for c in &r.clients {
            let load = match c.rate {
                Some(rate) => format!("{} req/s sent", benchlab_format::rate(rate)),
                None => plural(c.threads.into(), "user", "users"),
            };
            let _ = writeln!(
                o,
                "    client {} on agent {} ({}{}): {}, {:>10} req  {:>10} req/s  p50 {:>7} µs  p99 {:>7} µs  errors {}{}",
                c.client,
                c.agent,
                if c.host.is_empty() { "?" } else { &c.host },
                c.address.as_ref().map_or(String::new(), |a| format!(", from {a}")),
                load,
                thousands(c.figures.requests),
                requests_per_sec(c.figures.requests_per_sec),
                thousands(c.figures.latency_us.p50),
                thousands(c.figures.latency_us.p99),
                thousands(c.figures.errors_total),
                c.lost.as_ref().map_or(String::new(), |w| format!("  LOST: {w}"))
            );
        }
    }
    o
}

/// `YYYYmmdd-HHMMSS` in UTC, for default results directories.
pub(crate) fn stamp() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (y, m, d, h, mi, sec) = benchlab_controller::utc_civil(secs);
    format!("{y:04}{m:02}{d:02}-{h:02}{mi:02}{sec:02}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use benchlab_engine::{ClassPlan, OpenLoop, Target, UrlPlan};
    use std::sync::Arc;

    fn plan(urls: usize, users: u32, os_threads: usize) -> ClientPlan {
        let target = Target::parse("http://127.0.0.1:8080/a").expect("a URL");
        let urls: Vec<UrlPlan> = (0..urls)
            .map(|_| UrlPlan {
                target: target.clone(),
                weight: 1.0,
                class: 0,
                expect_status: 200,
                expect: benchlab_engine::Expect::Status,
            })
            .collect();
        let mut p = ClientPlan::new(Arc::from(urls), vec![ClassPlan { name: "a".into() }]);
        p.virtual_users = users;
        p.os_threads = os_threads;
        p.stop = Stop::Requests(1500);
        p
    }

    #[test]
    fn rates_are_written_with_separators() {
        assert_eq!(benchlab_format::rate(2000.0), "2,000");
        assert_eq!(benchlab_format::rate(0.5), "0.5");
        assert_eq!(benchlab_format::rate(1234.25), "1,234.25");
        let mut p = plan(1, 10, 2);
        p.stop = Stop::After(Duration::from_secs(3));
        p.load = Load::Open(OpenLoop {
            rate: 12_000.0,
            arrival: benchlab_engine::Arrival::Poisson,
            max_in_flight: 1500,
        });
        let d = describe(&p, HttpMode::Http11);
        assert!(
            d.contains(
                "1 URL, open loop at 12,000 requests/s (poisson arrivals, at most 1,500 in flight) on 2 OS threads,"
            ),
            "{d}"
        );
    }

    #[test]
    fn description_counts_in_the_singular_and_plural() {
        let one = describe(&plan(1, 1, 4), HttpMode::Http11);
        assert!(one.contains("1 URL, 1 thread (virtual user) on 1 OS thread,"), "{one}");
        assert!(one.contains("for 1,500 requests"), "{one}");
        assert!(!one.contains("(s)"), "{one}");
        let many = describe(&plan(2, 1200, 2), HttpMode::Http11);
        assert!(
            many.contains("2 URLs, 1,200 threads (virtual users) on 2 OS threads,"),
            "{many}"
        );
    }
}
