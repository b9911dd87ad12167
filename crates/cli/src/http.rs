//! `benchlab http`: flags → a one-client plan → preflight → run, as one
//! client through the controller's client seam (`drive_mix`) → result.

pub use crate::args::HttpMode;
use crate::args::{self, WeightedUrl};
use crate::output;
use crate::{CliError, Outcome};
use benchlab_controller::peak::{PeakSearch, SearchLimits, Step, StepKind};
use benchlab_controller::plan::{ClientPlan as DataPlan, UrlList};
use benchlab_controller::{drive_mix, ClientCpu, ClientEnd, ClientPool, HttpRun, InProcess};
use benchlab_engine::{
    sys, Arrival, ClassPlan, ClientPlan, ConnectionPolicy, Expect, H2Plan, Load, OpenLoop, PlanError, Scheme, Stop,
    Target, TlsOptions, UrlPlan,
};
use benchlab_results::{PhaseSearchResult, SearchStepResult};
use clap::{Args, ValueEnum};
use std::io::IsTerminal;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

/// How an open loop (`--rate`) spaces its sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ArrivalArg {
    /// Exactly 1/R apart.
    Constant,
    /// A Poisson process of rate R (exponential gaps), drawn from --seed.
    Poisson,
}

/// What each response is checked against besides its framing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Validate {
    /// Expected status only (for pages whose size varies).
    Status,
    /// Status and exact body size (learned by the preflight request).
    Size,
    /// Status, size and XXH3 checksum of the body (learned by the preflight).
    Checksum,
}

#[derive(Debug, Args)]
#[command(after_help = "\
--threads counts virtual users, WebBench's \"worker threads\": closed-loop \
users that each send a request, wait for the whole response, and send the \
next. They are not OS threads (wrk's -t): thousands of them run on \
--os-threads event loops. wrk -t4 -c400 corresponds to --threads 400 \
--os-threads 4.

--rate R replaces the users with an open loop: R requests a second leave on \
a schedule whatever the server does, latency counts from each intended send \
time (a stall is not hidden), and the latency as sent is shown beside it \
(wrk2's -R).

Exit status: 0 the run completed (whatever the server did); 1 the run could \
not be done (preflight failed, system limits); 2 bad usage; 3 a --threshold \
(or --max-*) was breached, also when Ctrl-C stopped the run; 130 Ctrl-C \
stopped the run (what it measured is printed, `partial`).")]
// --find-peak's flag group is `run`'s too, whose help speaks of a suite's
// mixes; `http` grows its own virtual users, and says so.
#[command(mut_arg("find_peak", |a| a.help(
    "Search for the peak instead of one run: the virtual users of --threads (the first load) doubled until \
     requests/s stops rising or a limit is broken, then bisected around the knee; each load runs its ramp-up, \
     then --step-duration"
)))]
pub struct HttpArgs {
    /// URLs to load, `URL` or `URL@WEIGHT`; picked uniformly unless weighted.
    #[arg(required = true, value_name = "URL[@WEIGHT]", value_parser = args::weighted_url)]
    urls: Vec<WeightedUrl>,

    /// Virtual users (WebBench worker threads), not OS threads.
    #[arg(short = 't', long, default_value_t = 10, value_name = "N")]
    threads: u32,

    /// Open loop: send R requests a second on a schedule, whatever the
    /// server does, and count latency from each intended send time
    /// (instead of --threads closed-loop users).
    #[arg(long, value_name = "R", conflicts_with_all = ["threads", "requests", "ramp_up", "find_peak"])]
    rate: Option<f64>,

    /// How --rate spaces its sends.
    #[arg(long, value_enum, default_value = "constant", requires = "rate")]
    arrival: ArrivalArg,

    /// With --rate: requests outstanding at most; a send due while all are
    /// busy waits (and is reported).
    #[arg(long, default_value_t = 1000, value_name = "N", requires = "rate")]
    max_in_flight: u32,

    /// Event-loop OS threads the virtual users run on [default: the number of cores].
    #[arg(long, value_name = "N")]
    os_threads: Option<usize>,

    /// Pin the event-loop threads to these CPUs (e.g. 1 or 2-3); refused
    /// when they share a CPU with the `lab up --cpus` of the lab server the
    /// URLs name, unless --allow-shared-cpus.
    #[arg(long, value_name = "LIST")]
    client_cpus: Option<String>,

    /// Run even when --client-cpus shares CPUs with the lab server's.
    #[arg(long, requires = "client_cpus")]
    allow_shared_cpus: bool,

    /// How long to run [default: 10s]. (`-d` is the duration, as wrk's; a
    /// request body is --data.)
    #[arg(short = 'd', long, value_parser = args::run_duration, conflicts_with = "requests", value_name = "DUR")]
    duration: Option<Duration>,

    /// Run exactly N requests (successful or failed), then stop.
    #[arg(short = 'n', long, value_name = "N")]
    requests: Option<u64>,

    /// Start the virtual users evenly over this span before --duration;
    /// what completes during it is not counted (a suite's ramp-up rule).
    #[arg(long, value_parser = args::duration, conflicts_with = "requests", value_name = "DUR")]
    ramp_up: Option<Duration>,

    /// Wait between a response and the next request of a virtual user.
    #[arg(long, value_parser = args::duration, default_value = "0s", value_name = "DUR")]
    think_time: Duration,

    /// Total time allowed for one request, connect included.
    #[arg(long, value_parser = args::duration, default_value = "5s", value_name = "DUR")]
    timeout: Duration,

    /// HTTP version and connection behaviour.
    #[arg(long, value_enum, default_value = "1.1")]
    http: HttpMode,

    /// Requests per persistent connection, N or MIN..MAX, drawn per
    /// connection; the last says `Connection: close` [default: unlimited].
    #[arg(long, value_parser = args::range, value_name = "MIN[..MAX]")]
    requests_per_connection: Option<(u32, u32)>,

    /// --http 2 and 3: connections of the run; the virtual users are
    /// --connections × --streams [default: --threads ÷ --streams, rounded up].
    #[arg(long, value_name = "C", conflicts_with = "threads")]
    connections: Option<u32>,

    /// --http 2 and 3: concurrent streams per connection at most (h2load's
    /// -m); the server's SETTINGS_MAX_CONCURRENT_STREAMS (HTTP/3: QUIC's
    /// MAX_STREAMS) may lower it.
    #[arg(long, default_value_t = 1, value_name = "S")]
    streams: u32,

    /// --http 2: flow-control window granted per stream and per
    /// connection, in bytes [default: 2^30 - 1, as h2load's].
    #[arg(long = "h2-window", value_name = "BYTES")]
    h2_window: Option<u32>,

    /// Open each virtual user's first connection before the start, so the
    /// start sends requests, not handshakes; a first request's latency then
    /// has no connect (closed-loop HTTP/1 over http:// only).
    #[arg(long)]
    preconnect: bool,

    /// Share of HTTP/1.1 connections that are persistent; the others carry
    /// one request with `Connection: close`.
    #[arg(long, value_parser = args::percent, default_value = "100", value_name = "P")]
    persistent_percent: u8,

    /// Share of connections that use HTTP/1.0 (WebBench's "% HTTP 1.0")
    /// [default: 0, or 100 with --http 1.0 / 1.0-keepalive].
    #[arg(long, value_parser = args::percent, value_name = "P")]
    http10_percent: Option<u8>,

    /// Size of each read from a socket (WebBench's receive buffer).
    #[arg(long, default_value_t = 65536, value_name = "BYTES")]
    receive_buffer: usize,

    /// Extra request header, 'Name: value' (repeatable).
    #[arg(short = 'H', long = "header", value_parser = args::header, value_name = "HEADER")]
    headers: Vec<(String, String)>,

    /// Request method, as curl's -X [default: GET, or POST with a body].
    #[arg(short = 'X', long, value_name = "METHOD")]
    method: Option<String>,

    /// Request body: TEXT, or @FILE (as curl's -d and --data, a file's
    /// line breaks are dropped); sent with Content-Length.
    #[arg(long, value_name = "TEXT|@FILE", conflicts_with = "data_binary")]
    data: Option<String>,

    /// Request body, exactly as given: TEXT or @FILE (curl's --data-binary).
    #[arg(long, value_name = "TEXT|@FILE")]
    data_binary: Option<String>,

    /// Send the body with Transfer-Encoding: chunked instead of
    /// Content-Length (HTTP/1.1).
    #[arg(long)]
    chunked: bool,

    /// Authorization: Basic for USER:PASSWORD. The password never reaches
    /// the results, the report or the terminal.
    #[arg(long, value_name = "USER:PASSWORD", conflicts_with = "bearer")]
    basic_auth: Option<String>,

    /// Authorization: Bearer TOKEN (kept out of results and the terminal).
    #[arg(long, value_name = "TOKEN")]
    bearer: Option<String>,

    /// Local addresses to spread connections over: FIRST-LAST or A,B,C.
    #[arg(long, value_parser = args::addresses, value_name = "ADDRS")]
    source_addresses: Option<args::Addresses>,

    /// Status a successful response must have.
    #[arg(long, default_value_t = 200, value_name = "CODE")]
    expect_status: u16,

    /// What each response is checked against.
    #[arg(long, value_enum, default_value = "size")]
    validate: Validate,

    /// Skip the one request per URL that checks status and size first.
    #[arg(long)]
    no_preflight: bool,

    /// Accept any TLS certificate (self-signed test servers).
    #[arg(long)]
    insecure: bool,

    /// Trust the CA certificates in this PEM file as well.
    #[arg(long, value_name = "FILE")]
    ca_file: Option<std::path::PathBuf>,

    /// Share of new TLS connections that offer to resume a session.
    #[arg(long, value_parser = args::percent, default_value = "0", value_name = "P")]
    tls_resumption: u8,

    /// Print the result as JSON (schema benchlab.http/1, see docs/http.md).
    #[arg(long)]
    json: bool,

    /// Exit 3 when errors exceed this share of completed requests (the
    /// threshold `errors<=PCT%`).
    #[arg(long, value_parser = args::percent_f64, value_name = "PCT")]
    max_error_rate: Option<f64>,

    /// Exit 3 when the p99 latency exceeds this (the threshold `p99<=DUR`).
    #[arg(long, value_parser = args::duration, value_name = "DUR")]
    max_p99: Option<Duration>,

    #[command(flatten)]
    gates: crate::gate::GateArgs,

    /// Seed of the URL and connection draws (a run is reproducible).
    #[arg(long, default_value_t = 1)]
    seed: u64,

    #[command(flatten)]
    peak: crate::run_cmd::PeakArgs,

    /// --find-peak: how long each load is counted, after its --ramp-up
    /// (default 0.5 s with --find-peak: users start over it, not counted).
    #[arg(long, value_parser = args::duration, default_value = "3s", value_name = "DUR", requires = "find_peak")]
    step_duration: Duration,

    #[command(flatten)]
    agents: crate::agent_cmd::AgentRunArgs,

    #[command(flatten)]
    metrics: crate::metrics_cmd::MetricsArgs,
}

/// The request `-X`, `--data`, `--data-binary`, `--chunked`,
/// `--basic-auth` and `--bearer` ask for, and the client's headers with
/// the credentials added (so every request carries them).
fn request_of(a: &HttpArgs) -> Result<(benchlab_engine::RequestSpec, Vec<(String, String)>), CliError> {
    use base64::Engine;
    let body = |flag: &str, v: &str, binary: bool| -> Result<Vec<u8>, CliError> {
        let Some(path) = v.strip_prefix('@') else {
            return Ok(v.as_bytes().to_vec());
        };
        let bytes = benchlab_model::input::read_bounded(
            std::path::Path::new(path),
            "a request body",
            benchlab_engine::MAX_BODY_BYTES,
        )
        .map_err(|e| CliError::Usage(format!("{flag} @{path}: cannot read: {e}")))?;
        // curl's -d @FILE drops the file's line breaks; --data-binary keeps them.
        Ok(if binary {
            bytes
        } else {
            bytes.into_iter().filter(|b| *b != b'\r' && *b != b'\n').collect()
        })
    };
    let data = match (&a.data, &a.data_binary) {
        (Some(v), _) => Some(body("--data", v, false)?),
        (None, Some(v)) => Some(body("--data-binary", v, true)?),
        (None, None) => None,
    };
    let method = match &a.method {
        Some(m) => m.clone(),
        None if data.is_some() => "POST".to_string(),
        None => "GET".to_string(),
    };
    if matches!(a.http, HttpMode::Http2 | HttpMode::Http3) && a.chunked {
        return Err(CliError::Usage(
            "--chunked is HTTP/1.1's framing; over --http 2 or 3 a body goes in DATA frames: drop --chunked".into(),
        ));
    }
    if a.chunked && data.is_none() {
        return Err(CliError::Usage(
            "--chunked frames a request body: give one with --data or --data-binary".into(),
        ));
    }
    if a.chunked && matches!(a.http, HttpMode::Http10 | HttpMode::Http10KeepAlive) {
        return Err(CliError::Usage(
            "--chunked is HTTP/1.1's framing: not with --http 1.0".into(),
        ));
    }
    let mut headers = a.headers.clone();
    let auth = match (&a.basic_auth, &a.bearer) {
        (Some(up), _) => {
            if !up.contains(':') {
                // The value is a secret: not quoted.
                return Err(CliError::Usage("--basic-auth: expected USER:PASSWORD".into()));
            }
            Some(format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(up)
            ))
        }
        (None, Some(token)) => Some(format!("Bearer {token}")),
        (None, None) => None,
    };
    if let Some(value) = auth {
        if headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("authorization")) {
            return Err(CliError::Usage(
                "--basic-auth/--bearer and -H 'Authorization: …' both set the Authorization header: give one".into(),
            ));
        }
        if value.contains(['\r', '\n']) {
            return Err(CliError::Usage("--bearer: the token cannot hold line breaks".into()));
        }
        headers.push(("Authorization".into(), value));
    }
    for framing in ["content-length", "transfer-encoding"] {
        if headers.iter().any(|(n, _)| n.eq_ignore_ascii_case(framing)) {
            return Err(CliError::Usage(format!(
                "-H {framing}: benchlab frames the body itself (Content-Length from --data, or --chunked); drop the header"
            )));
        }
    }
    let request = benchlab_engine::RequestSpec {
        method,
        headers: Vec::new(),
        body: data,
        chunked: a.chunked,
    };
    request.validate().map_err(|e| CliError::Usage(e.to_string()))?;
    Ok((request, headers))
}

/// Builds the plan, checks the target and the system, runs, prints.
pub fn run(a: HttpArgs) -> Result<Outcome, CliError> {
    let usage = CliError::Usage;
    let search = a.peak.limits()?;
    crate::metrics_cmd::check(&a.metrics)?;
    // Before the preflight: a refused CPU set sends no request.
    let client_cpus = if a.client_cpus.is_some() {
        // The lab server the URLs name, for the overlap check.
        let server = a
            .urls
            .iter()
            .find_map(|u| crate::run_cmd::lab_disclosure(&u.url, false).ok().flatten());
        crate::run_cmd::pin_clients(a.client_cpus.as_deref(), a.allow_shared_cpus, server.as_ref())?
    } else {
        Vec::new()
    };
    if search.is_some() {
        let conflicting = [
            (a.requests.is_some(), "--requests"),
            (a.duration.is_some(), "--duration (each load runs --step-duration)"),
            (a.max_p99.is_some(), "--max-p99 (the search's limit is --peak-max-p99)"),
            (
                a.max_error_rate.is_some(),
                "--max-error-rate (the search's limit is --peak-max-error-rate)",
            ),
        ];
        if let Some((_, flag)) = conflicting.iter().find(|(given, _)| *given) {
            return Err(usage(format!("--find-peak cannot be combined with {flag}")));
        }
        if a.step_duration.is_zero() {
            return Err(usage("--step-duration must be above zero".into()));
        }
        if a.step_duration < benchlab_model::MIN_WINDOW {
            return Err(usage(short_window("--step-duration", a.step_duration)));
        }
    }
    if a.threads == 0 {
        return Err(usage("--threads must be at least 1".into()));
    }
    // The old --max-* flags are spellings of thresholds: one mechanism.
    let mut thresholds = a.gates.thresholds.clone();
    thresholds.extend(a.max_p99.map(benchlab_report::gates::Threshold::max_p99));
    thresholds.extend(a.max_error_rate.map(benchlab_report::gates::Threshold::max_error_rate));
    for t in &a.gates.thresholds {
        t.check_scope(
            &[benchlab_results::load::HTTP_PHASE.to_string()],
            search.is_none().then_some(1),
        )
        .map_err(|e| usage(format!("--threshold {e}")))?;
    }
    a.gates.check(thresholds.len())?;
    let h3 = a.http == HttpMode::Http3;
    if h3 && a.h2_window.is_some() {
        return Err(usage(
            "--h2-window is HTTP/2's flow-control window; HTTP/3 uses QUIC's own (docs/http3.md): drop it".into(),
        ));
    }
    if h3 && a.receive_buffer != 65536 {
        return Err(usage(
            "--receive-buffer sizes reads from a TCP socket; over --http 3 each read is one UDP datagram: drop it"
                .into(),
        ));
    }
    let http2 = if matches!(a.http, HttpMode::Http2 | HttpMode::Http3) {
        if a.streams == 0 || a.connections == Some(0) {
            return Err(usage("--connections and --streams must be at least 1".into()));
        }
        if search.is_some() && a.connections.is_some() {
            // The search grows the users; --connections fixes the streams.
            return Err(usage(
                "--find-peak grows the users, and --connections fixes the streams they may use: drop --connections"
                    .into(),
            ));
        }
        if a.http10_percent.is_some_and(|p| p > 0) {
            return Err(usage(
                "--http10-percent applies to HTTP/1 runs, not --http 2 or 3".into(),
            ));
        }
        let window = a.h2_window.unwrap_or(H2Plan::DEFAULT_WINDOW);
        if window == 0 || window > i32::MAX as u32 {
            return Err(usage(format!("--h2-window {window}: expected 1 to 2147483647 bytes")));
        }
        // The streams in flight at most: the users, or an open loop's cap.
        let streams_wanted = if a.rate.is_some() { a.max_in_flight } else { a.threads };
        Some(H2Plan {
            connections: a.connections.unwrap_or(streams_wanted.div_ceil(a.streams)),
            streams: a.streams,
            window,
            classes: 0,
            h3,
            h3_classes: 0,
        })
    } else {
        if a.connections.is_some() || a.h2_window.is_some() || a.streams != 1 {
            return Err(usage(
                "--connections and --streams apply to --http 2 and 3, --h2-window to --http 2".into(),
            ));
        }
        None
    };
    // With --connections, the users are the streams they allow.
    let users = match (http2, a.connections) {
        (Some(h2), Some(c)) => c.saturating_mul(h2.streams),
        _ => a.threads,
    };
    // With --agents the load runs on N×K clients elsewhere; what only
    // makes sense in this process is refused before anything is sent.
    let clients = a.agents.clients();
    if a.agents.agents.is_some() {
        if search.is_some() {
            return Err(usage(
                "--find-peak runs its loads in this process; it cannot be combined with --agents".into(),
            ));
        }
        if a.client_cpus.is_some() {
            return Err(usage(
                "--client-cpus pins this process's threads; with --agents the load runs on the agents".into(),
            ));
        }
    }
    if a.agents.monitors > 0 {
        return Err(usage(
            "--monitors applies to `benchlab run`, not to `benchlab http`".into(),
        ));
    }
    // Each client gets a share of the load: a share of zero would be a
    // client with nothing to do. (Zero for the one client in this process
    // is refused below with the flag's own words.)
    let too_few = |flag: &str, n: u64| {
        (clients > 1 && n < clients as u64).then(|| {
            usage(format!(
                "{flag} {n} is split over {clients} clients (--agents × --clients-per-agent): give at least {clients}"
            ))
        })
    };
    let split_checks = [
        (a.rate.is_none(), "--threads", u64::from(a.threads)),
        (a.rate.is_some(), "--max-in-flight", u64::from(a.max_in_flight)),
        (a.requests.is_some(), "--requests", a.requests.unwrap_or(0)),
        (
            http2.is_some(),
            "--connections (HTTP/2 and 3)",
            http2.map_or(0, |h| u64::from(h.connections)),
        ),
    ];
    for (applies, flag, n) in split_checks {
        if let Some(e) = applies.then(|| too_few(flag, n)).flatten() {
            return Err(e);
        }
    }
    let load = match a.rate {
        None => Load::Closed,
        // The model's range (MIN_RATE keeps the engine's schedule inside a
        // Duration; 1e-19 panicked the workers), and the engine's maximum.
        Some(r) if !(benchlab_model::MIN_RATE..=OpenLoop::MAX_RATE.min(benchlab_model::MAX_RATE)).contains(&r) => {
            return Err(usage(format!(
                "--rate {}: expected requests per second {}",
                benchlab_model::rate_text(r),
                benchlab_model::rate_range()
            )))
        }
        Some(_) if a.max_in_flight == 0 => return Err(usage("--max-in-flight must be at least 1".into())),
        Some(_) if !a.think_time.is_zero() => {
            return Err(usage(
                "--think-time applies to --threads users; an open loop (--rate) has none".into(),
            ))
        }
        Some(rate) => Load::Open(OpenLoop {
            rate,
            arrival: match a.arrival {
                ArrivalArg::Constant => Arrival::Constant,
                ArrivalArg::Poisson => Arrival::Poisson,
            },
            max_in_flight: a.max_in_flight,
        }),
    };
    if a.requests == Some(0) {
        return Err(usage("--requests must be at least 1".into()));
    }
    if a.receive_buffer < 64 {
        return Err(usage(format!(
            "--receive-buffer {}: expected at least 64 bytes",
            a.receive_buffer
        )));
    }
    if a.timeout.is_zero() {
        return Err(usage("--timeout must be above zero".into()));
    }
    let stop = match (a.requests, a.duration) {
        (Some(n), _) => Stop::Requests(n),
        (None, Some(d)) if d.is_zero() => return Err(usage("--duration must be above zero".into())),
        (None, Some(d)) if d < benchlab_model::MIN_WINDOW => return Err(usage(short_window("--duration", d))),
        (None, Some(d)) => Stop::After(d),
        (None, None) => Stop::After(Duration::from_secs(10)),
    };
    if let Some(path) = &a.ca_file {
        // Read once here, with its bound, so a wrong file is a usage error
        // before any connection (the engine reads it again at TLS setup).
        benchlab_engine::read_pem(path)
            .map_err(|e| usage(format!("--ca-file {}: cannot read: {e}", path.display())))?;
    }
    // The ramp-up comes before the counted --duration.
    let ramp_up = a.ramp_up.unwrap_or_default();
    let stop = match stop {
        Stop::After(d) => Stop::After(d.saturating_add(ramp_up)),
        s => s,
    };
    let tls = TlsOptions {
        insecure: a.insecure,
        resumption_percent: a.tls_resumption,
        ca_file: a.ca_file.clone(),
    };

    let (request, headers) = request_of(&a)?;
    let request_kind = u32::from(!request.is_plain_get());
    let mut urls = Vec::with_capacity(a.urls.len());
    let mut classes = Vec::with_capacity(a.urls.len());
    for (i, w) in a.urls.iter().enumerate() {
        // A URL written wrong is bad usage (exit 2); a host that does not
        // resolve is a run that cannot be done (exit 1), with the
        // resolver's own words.
        let target = Target::parse(&w.url).map_err(|e| match e {
            PlanError::Resolve { .. } => CliError::CannotRun(format!("{e} (in {})", w.url)),
            _ => usage(e.to_string()),
        })?;
        classes.push(ClassPlan { name: w.url.clone() });
        urls.push(UrlPlan {
            target,
            weight: w.weight as f64,
            class: i,
            expect_status: a.expect_status,
            expect: Expect::Status,
            request: request_kind,
        });
    }

    // Before the preflight: a flag that cannot apply sends no request.
    if a.preconnect {
        let https = urls.iter().any(|u| u.target.scheme == benchlab_engine::Scheme::Https);
        if let Some(why) = benchlab_engine::preconnect_refusal(&load, http2.is_some(), false, https) {
            return Err(usage(format!("--preconnect cannot apply: {why}")));
        }
    }
    let source_addresses = a.source_addresses.clone().map(|x| x.0).unwrap_or_default();
    let slots = match load {
        Load::Closed => users,
        Load::Open(o) => o.max_in_flight,
    };
    // Limits and addresses of this machine: with --agents the load (and
    // its sockets) are the agents'.
    if a.agents.agents.is_none() {
        sys::check_capacity(slots as u64, source_addresses.len()).map_err(|e| CliError::of("", e))?;
        let targets: Vec<_> = urls.iter().map(|u| u.target.addr).collect();
        sys::check_source_addresses(&source_addresses, &targets).map_err(|e| CliError::of("", e))?;
    }

    if a.no_preflight {
        if a.validate != Validate::Status && !a.json {
            eprintln!(
                "note: --no-preflight: body sizes are not known, so responses are checked for status and framing only"
            );
        }
    } else {
        for (i, u) in urls.iter_mut().enumerate() {
            // From the load's own source addresses, in turn.
            let source = (!source_addresses.is_empty()).then(|| source_addresses[i % source_addresses.len()]);
            let r = if h3 {
                benchlab_engine::h3::probe_h3_request(&request, &u.target, source, &headers, &tls, a.timeout)
            } else if http2.is_some() {
                benchlab_engine::h2::probe_h2_request(&request, &u.target, source, &headers, &tls, a.timeout)
            } else {
                benchlab_engine::probe_request(&u.target, source, &headers, &request, &tls, a.timeout)
            };
            let r = r.map_err(|e| {
                // A TLS failure says what to try itself.
                let advice = if e.kind == benchlab_engine::ErrorKind::Tls {
                    ""
                } else {
                    "\n(the run would measure only errors; check the URL and that the server runs, or pass --no-preflight)"
                };
                CliError::CannotRun(format!("preflight: {} {} failed: {e}{advice}", request.method, u.target.url))
            })?;
            if r.status != a.expect_status {
                // nginx answers a plain request on its TLS port with 400.
                let tls_port = if r.status == 400 && u.target.scheme == Scheme::Http {
                    "; a 400 to http:// can mean that the port speaks TLS: try https://"
                } else {
                    ""
                };
                return Err(CliError::CannotRun(format!(
                    "preflight: {} {} returned status {}, expected {} (set --expect-status, or --no-preflight to load it anyway){tls_port}",
                    request.method, u.target.url, r.status, a.expect_status
                )));
            }
            u.expect = match a.validate {
                Validate::Status => Expect::Status,
                Validate::Size => Expect::Size(r.body_bytes),
                Validate::Checksum => Expect::Checksum {
                    size: r.body_bytes,
                    xxh3: r.xxh3,
                },
            };
            if !a.json {
                eprintln!(
                    "preflight: {} → {}, {} ({} on the wire) in {} ms",
                    u.target.url,
                    r.status,
                    output::plural(r.body_bytes, "body byte", "body bytes"),
                    output::thousands(r.bytes),
                    benchlab_format::fixed(r.latency.as_secs_f64() * 1e3, 1)
                );
            }
        }
    }

    let (http10_percent, http10_keepalive) = match a.http {
        HttpMode::Http10 => (a.http10_percent.unwrap_or(100), false),
        HttpMode::Http10KeepAlive => (a.http10_percent.unwrap_or(100), true),
        HttpMode::Http11 | HttpMode::Http2 | HttpMode::Http3 => (a.http10_percent.unwrap_or(0), false),
    };
    let mut plan = ClientPlan::new(urls, classes);
    if !request.is_plain_get() {
        plan.requests = vec![request];
    }
    plan.virtual_users = users;
    plan.http2 = http2;
    plan.load = load;
    // After pinning: the default counts only the CPUs pinned to.
    plan.os_threads = a.os_threads.unwrap_or_else(sys::usable_cpus).max(1);
    plan.stop = stop;
    plan.think_time = a.think_time;
    plan.ramp_up = ramp_up;
    plan.window = (ramp_up, Duration::MAX);
    plan.timeout = a.timeout;
    plan.connection = ConnectionPolicy {
        http10_percent,
        http10_keepalive,
        persistent_percent: a.persistent_percent,
        requests_per_connection: a.requests_per_connection,
    };
    plan.receive_buffer = a.receive_buffer;
    plan.headers = headers;
    plan.source_addresses = source_addresses;
    plan.tls = tls;
    plan.seed = a.seed;
    plan.preconnect = a.preconnect;
    plan.validate().map_err(|e| usage(e.to_string()))?;
    let os_threads = plan.os_threads.min(plan.slots() as usize);
    let description = output::describe(&plan, a.http);

    // A search says its own schedule (the description's length is not it).
    if !a.json && search.is_none() {
        eprintln!("{description}");
    }
    // Listening comes before any load: a taken port stops the run at once.
    let metrics = crate::metrics_cmd::start(&a.metrics, "http", benchlab_metrics::Kind::Http, false)?;
    let exporter = metrics.as_ref().map(|m| &m.exporter);
    let interrupt = Arc::new(Interrupt::default());
    let i2 = Arc::clone(&interrupt);
    // Ctrl-C stops the load (and a search); what was measured is still
    // reported.
    crate::agent_cmd::on_ctrl_c(move || i2.stop());
    if let Some(limits) = search {
        let outcome = find_peak(
            &a,
            plan,
            &limits,
            ramp_up,
            &interrupt,
            &client_cpus,
            (&thresholds, exporter),
        );
        if let Some(m) = &metrics {
            m.finish(interrupt.is_stopped());
        }
        return outcome;
    }
    let live = !a.json && std::io::stderr().is_terminal();
    // After the preflight: a target that does not answer keeps no agent
    // waiting. Agents size their clients' threads unless --os-threads.
    let remote = a.agents.pool(clients, a.os_threads.is_some())?;
    let pool: Arc<dyn ClientPool> = match &remote {
        Some(p) => Arc::clone(p) as Arc<dyn ClientPool>,
        None => Arc::new(InProcess::default()),
    };
    let (mix, notes) = run_once(
        pool.as_ref(),
        &plan,
        clients,
        os_threads,
        live,
        &interrupt,
        (exporter, 1),
    )?;
    // As `run`: a stopped run keeps what it measured, says so, exits 130.
    let partial = mix.partial;
    let mut results = output::dated(benchlab_controller::http_results(vec![mix], client_cpus));
    crate::gate::evaluate(&thresholds, &mut results);
    let gate_lines = crate::gate::lines(&results.thresholds);
    let Some(m) = results.mixes.first() else {
        return Err(CliError::CannotRun("no mix was measured".into()));
    };
    if a.json {
        println!("{}", output::json_text(&results));
        // On stderr, so --json output stays one document.
        eprint!("{gate_lines}");
    } else {
        print!("{}{gate_lines}", output::human(m));
    }
    if let Some(metrics) = &metrics {
        metrics.finish(partial);
    }
    let agents_of = m
        .http_command
        .as_ref()
        .map(|c| c.clients.as_slice())
        .unwrap_or_default();
    for (c, at) in m.client_data.iter().zip(agents_of) {
        if let Some(why) = &c.lost {
            eprintln!(
                "benchlab: warning: client {} (agent {}) was lost ({why}): its figures are apart, not in the totals",
                c.client, at.agent
            );
        }
    }
    if notes.threads_lost > 0 {
        eprintln!(
            "benchlab: {} ended abnormally (a benchlab bug, please report it); its figures are missing",
            benchlab_format::plural(notes.threads_lost as u64, "worker thread", "worker threads")
        );
    }
    if let Some(why) = &notes.tls_error {
        eprintln!(
            "benchlab: {} failed; the first: {why}",
            benchlab_format::plural(
                m.figures
                    .errors
                    .get(benchlab_engine::ErrorKind::Tls.name())
                    .copied()
                    .unwrap_or(0),
                "TLS handshake",
                "TLS handshakes"
            )
        );
    }
    // On stderr in both modes, so --json output stays one document.
    for w in &m.warnings {
        eprintln!("benchlab: warning: {w}");
    }
    if let Some(path) = &a.gates.junit {
        crate::gate::write_junit(path, "benchlab http", &crate::gate::cases(&results.thresholds))?;
    }
    Ok(ending(crate::gate::breached(&results.thresholds), partial))
}

/// How a run of `http` ends: a breach is never hidden by Ctrl-C (exit 3
/// wins over 130), as `run`'s.
fn ending(breached: bool, interrupted: bool) -> Outcome {
    if breached {
        Outcome::Breached
    } else if interrupted {
        Outcome::Interrupted
    } else {
        Outcome::Completed
    }
}

/// The message for a counted span below the model's shortest window.
fn short_window(flag: &str, d: Duration) -> String {
    format!(
        "{flag} {}: expected at least {} (the per-second figures and the CPU shares count whole seconds)",
        humantime::format_duration(d),
        humantime::format_duration(benchlab_model::MIN_WINDOW)
    )
}

/// Ctrl-C: stops the load that runs now and the search.
#[derive(Default)]
struct Interrupt {
    stopped: std::sync::atomic::AtomicBool,
}

impl Interrupt {
    fn stop(&self) {
        self.stopped.store(true, std::sync::atomic::Ordering::Relaxed);
    }

    fn is_stopped(&self) -> bool {
        self.stopped.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// What a run said besides its mix: worker threads that ended abnormally
/// and the first TLS failure, for the terminal.
struct RunNotes {
    threads_lost: usize,
    tls_error: Option<String>,
}

/// Runs `plan` once through the controller's client seam (the plan as
/// data, a wall-clock start, the same driving loop as a suite's mixes),
/// split over `clients` clients of `pool`, and folds what they measured
/// into its mix as the controller folds a suite's (`http_mix`: the
/// generator's CPU and the machine's included). `live`: a line per second
/// on stderr. `metrics`: the live metrics' exporter, if any, and the
/// number this load has there (`mix`: 1, or the search's step).
fn run_once(
    pool: &dyn ClientPool,
    plan: &ClientPlan,
    clients: usize,
    os_threads: usize,
    live: bool,
    interrupt: &Interrupt,
    metrics: (Option<&benchlab_metrics::Exporter>, usize),
) -> Result<(benchlab_results::MixResult, RunNotes), CliError> {
    let (exporter, mix) = metrics;
    if let Some(e) = exporter {
        e.mix_started(mix, 1, benchlab_results::load::HTTP_PHASE);
    }
    let cannot = |e: &dyn std::fmt::Display| CliError::CannotRun(e.to_string());
    let urls = Arc::new(UrlList::of_engine(&plan.urls, &plan.classes, &plan.requests));
    pool.load_urls(&urls).map_err(|e| cannot(&e))?;
    let plans = client_plans(plan, clients);
    let data: Vec<DataPlan> = plans.iter().map(|p| DataPlan::of_engine(p, urls.id.clone())).collect();
    let cpu0 = sys::cpu_time(false);
    let machine0 = benchlab_controller::machine::CpuTicks::now();
    let started = Instant::now();
    // A remote pool checks every agent's clock and says how far ahead the
    // start must be for every order to arrive in time.
    let ahead = pool.before_mix().map_err(|e| cannot(&e))? + plan.preconnect_lead();
    let start_at = SystemTime::now() + ahead;
    let driven = drive_mix(
        pool,
        &data,
        plan.window,
        start_at,
        &interrupt.stopped,
        &mut |s, merged| {
            if let Some(e) = exporter {
                e.second_merged(s, merged.latency, Some(merged.in_flight));
            }
            if live {
                eprint!(
                    "\r  {:>4}s  {:>12} req/s  {:>9} MB/s  p50 {} µs  errors {}   ",
                    s.second,
                    output::thousands(s.requests),
                    output::mbytes_per_sec(s.bytes as f64),
                    output::thousands(s.latency_p50_us),
                    output::thousands(s.errors)
                );
            }
        },
    )
    .map_err(|e| cannot(&e))?;
    if live {
        eprintln!();
    }
    let reports: Vec<&benchlab_engine::ClientReport> = driven.reports().collect();
    match driven.clients.as_slice() {
        [ClientEnd::Lost { why, .. }] => return Err(CliError::CannotRun(format!("the client was lost: {why}"))),
        [] => return Err(CliError::CannotRun("no client ran".into())),
        _ if reports.is_empty() => {
            return Err(CliError::CannotRun(
                "every client was lost; nothing was measured (see the lines above)".into(),
            ))
        }
        _ => {}
    }
    let cpu1 = sys::cpu_time(false);
    let machine_busy = machine0
        .zip(benchlab_controller::machine::CpuTicks::now())
        .and_then(|(a, b)| a.busy_share(b));
    let wall = started.elapsed();
    // Every completion, ramp-up included, as the CPU is.
    let done: u64 = reports
        .iter()
        .map(|r| {
            let t = r.stats.total();
            t.counters.requests + t.counters.errors_total()
        })
        .sum();
    let remote = remote_clients(pool);
    let agents = pool.agents();
    let client_cpu = if remote {
        // The load's CPU is the agents' worker threads', not this process's.
        let user = reports.iter().map(|r| r.cpu_user).sum();
        let system = reports.iter().map(|r| r.cpu_system).sum();
        let cores: usize = plans.iter().map(|p| p.os_threads.min(p.slots() as usize)).sum();
        ClientCpu::measure(user, system, wall, cores.min(sys::usable_cpus()).max(1), done)
    } else {
        let cores = os_threads.min(sys::usable_cpus()).max(1);
        let cpu = ClientCpu::measure(
            cpu1.0.saturating_sub(cpu0.0),
            cpu1.1.saturating_sub(cpu0.1),
            wall,
            cores,
            done,
        );
        // A server on this machine (a loopback URL) shares its CPUs.
        let co_located = plan.urls.iter().any(|u| u.target.addr.ip().is_loopback());
        cpu.with_machine(machine_busy, co_located)
    };
    let notes = RunNotes {
        threads_lost: reports.iter().map(|r| r.threads_lost).sum(),
        tls_error: reports.iter().find_map(|r| r.tls_error.clone()),
    };
    let mut result = benchlab_controller::http_mix(&HttpRun {
        number: 1,
        plan,
        clients: &data,
        driven: &driven,
        partial: interrupt.is_stopped(),
        client_cpu,
        os_threads: if remote {
            plans.iter().map(|p| p.os_threads.min(p.slots() as usize)).sum()
        } else {
            os_threads
        },
        agents: remote.then_some(agents.as_slice()),
    });
    result.start_spread = benchlab_controller::start_spread(start_at, &data, &driven);
    if let Some(e) = exporter {
        e.mix_finished(&benchlab_metrics::MixEnd::of(&result));
    }
    Ok((result, notes))
}

/// Whether the pool's clients run on agents (they list themselves).
fn remote_clients(pool: &dyn ClientPool) -> bool {
    !pool.agents().is_empty()
}

/// `clients` shares of `total`, as equal as whole numbers allow, summing
/// to it exactly: the first `total % clients` get one more.
fn split(total: u64, clients: usize) -> Vec<u64> {
    let n = clients.max(1) as u64;
    (0..n).map(|c| total / n + u64::from(c < total % n)).collect()
}

/// Each client's plan: the run's plan with its share of the virtual users
/// (or of the open loop's rate and in-flight bound) and of `--requests`,
/// its own seed, and on a loopback target its own source address
/// 127.0.0.(c + 1), as a suite's clients have, so the server's log tells
/// them apart. One client: the plan itself.
fn client_plans(plan: &ClientPlan, clients: usize) -> Vec<ClientPlan> {
    if clients <= 1 {
        return vec![plan.clone()];
    }
    let users = split(plan.virtual_users.into(), clients);
    let requests = match plan.stop {
        Stop::Requests(n) => Some(split(n, clients)),
        Stop::After(_) => None,
    };
    let in_flight = match plan.load {
        Load::Open(o) => split(o.max_in_flight.into(), clients),
        Load::Closed => Vec::new(),
    };
    // HTTP/2: each client opens its share of the connections.
    let connections = plan.http2.map(|h| split(h.connections.into(), clients));
    let loopback = plan.urls.origins().first().is_some_and(|o| o.addr.ip().is_loopback());
    (0..clients)
        .map(|c| {
            let mut p = plan.clone();
            p.virtual_users = u32::try_from(users[c]).unwrap_or(u32::MAX);
            if let Some(r) = &requests {
                p.stop = Stop::Requests(r[c]);
            }
            if let Load::Open(o) = &mut p.load {
                o.rate /= clients as f64;
                o.max_in_flight = u32::try_from(in_flight[c]).unwrap_or(u32::MAX);
            }
            if let (Some(h2), Some(n)) = (&mut p.http2, &connections) {
                h2.connections = u32::try_from(n[c]).unwrap_or(u32::MAX);
            }
            // Client 0 keeps the run's seed; the others draw their own.
            p.seed = plan.seed.wrapping_add((c as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
            if p.source_addresses.is_empty() && loopback && c < 254 {
                p.source_addresses = vec![std::net::IpAddr::V4(std::net::Ipv4Addr::new(127, 0, 0, c as u8 + 1))];
            }
            p
        })
        .collect()
}

/// `http --find-peak`: the plan run at the loads [`PeakSearch`] picks, each
/// for its ramp-up (users started, not counted) and --step-duration; a line
/// per load as it ends, then the loads in load order and the peaks.
fn find_peak(
    a: &HttpArgs,
    plan: ClientPlan,
    limits: &SearchLimits,
    ramp_up: Duration,
    interrupt: &Interrupt,
    client_cpus: &[usize],
    // What judges and exports each step: the thresholds and the live
    // metrics' exporter.
    (thresholds, exporter): (
        &[benchlab_report::gates::Threshold],
        Option<&benchlab_metrics::Exporter>,
    ),
) -> Result<Outcome, CliError> {
    // Short steps need users started before the count begins.
    let ramp_up = if a.ramp_up.is_some() {
        ramp_up
    } else {
        Duration::from_millis(500)
    };
    if !a.json {
        let d = output::describe(&plan, a.http);
        // The description up to its length: URLs, users, threads, HTTP.
        let what = d.rsplit_once(", for ").map_or(d.as_str(), |(w, _)| w);
        eprintln!(
            "{what}; --find-peak: from {} virtual users, doubled, then bisected around the knee; each load {} \
             ramp-up (not counted) + {} counted; stops when requests/s rises less than {} % twice, p99 > {} ms, \
             errors > {} % or at {} virtual users",
            a.threads,
            humantime::format_duration(ramp_up),
            humantime::format_duration(a.step_duration),
            limits.tolerance * 100.0,
            limits.max_p99_us as f64 / 1000.0,
            limits.max_error_share * 100.0,
            limits.max_load
        );
    }
    let mut search = PeakSearch::new(u64::from(a.threads), limits.clone());
    let mut steps: Vec<benchlab_results::MixResult> = Vec::new();
    let os_threads_max = plan.os_threads;
    while let Some((load, kind)) = search.next_load() {
        if interrupt.is_stopped() {
            break;
        }
        let mut p = plan.clone();
        p.virtual_users = u32::try_from(load).unwrap_or(u32::MAX);
        let users = p.virtual_users;
        if let Some(h2) = &mut p.http2 {
            // HTTP/2: the connections grow with the users, a stream each.
            h2.connections = users.div_ceil(h2.streams);
        }
        p.stop = Stop::After(a.step_duration.saturating_add(ramp_up));
        p.ramp_up = ramp_up;
        p.window = (ramp_up, Duration::MAX);
        // A load this system cannot hold ends the growth, not the search.
        if let Err(why) = sys::check_capacity(load, p.source_addresses.len()) {
            eprintln!("benchlab: peak search: {why}");
            search.stop_growing(format!("{load} virtual users cannot be run here"));
            continue;
        }
        let os_threads = os_threads_max.min(p.virtual_users as usize);
        let step = steps.len() + 1;
        let (mut result, _) = run_once(
            &InProcess::default(),
            &p,
            1,
            os_threads,
            false,
            interrupt,
            (exporter, step),
        )?;
        let f = &result.figures;
        search.record(Step::of(
            load,
            f.requests_per_sec,
            f.latency_us.p99,
            f.requests,
            f.errors_total,
        ));
        let step = step as u32;
        if !a.json {
            eprintln!(
                "search step {step} ({}): {} → {} req/s, p99 {} µs, {}",
                crate::run_cmd::search_kind(kind),
                output::plural(load, "virtual user", "virtual users"),
                output::requests_per_sec(f.requests_per_sec),
                output::thousands(f.latency_us.p99),
                output::plural(f.errors_total, "error", "errors")
            );
        }
        for w in &result.warnings {
            eprintln!("benchlab: warning: {} virtual users: {w}", load);
        }
        result.search = Some(SearchStepResult { step, kind });
        steps.push(result);
    }
    // The loads in load order, each a mix numbered so.
    steps.sort_by_key(|m| (m.threads, m.search.as_ref().map_or(0, |s| s.step)));
    for (i, m) in steps.iter_mut().enumerate() {
        m.mix = i + 1;
    }
    let mix_of = |i: Option<usize>| {
        i.and_then(|i| steps.iter().find(|m| m.threads == search.steps()[i].load))
            .map(|m| (m.mix, m.figures.requests_per_sec))
    };
    let (peak, useful) = (mix_of(search.peak()), mix_of(search.useful_peak()));
    let phase_search = PhaseSearchResult {
        start_threads_per_client: u64::from(a.threads),
        tolerance_percent: limits.tolerance * 100.0,
        max_p99_us: limits.max_p99_us,
        max_error_percent: limits.max_error_share * 100.0,
        max_threads_per_client: limits.max_load,
        stopped: search.stop_reason().unwrap_or_default().to_string(),
        peak_mix: peak.map(|p| p.0),
        peak_requests_per_sec: peak.map(|p| p.1),
        useful_peak_mix: useful.map(|p| p.0),
        useful_peak_requests_per_sec: useful.map(|p| p.1),
    };
    let mut results = output::dated(benchlab_controller::http_results(steps, client_cpus.to_vec()));
    for ph in &mut results.phases {
        ph.search = Some(phase_search.clone());
    }
    crate::gate::evaluate(thresholds, &mut results);
    let gate_lines = crate::gate::lines(&results.thresholds);
    if a.json {
        println!("{}", output::json_text(&results));
        eprint!("{gate_lines}");
    } else {
        print!("{}{gate_lines}", peak_table(&results));
    }
    if let Some(path) = &a.gates.junit {
        crate::gate::write_junit(path, "benchlab http", &crate::gate::cases(&results.thresholds))?;
    }
    Ok(ending(
        crate::gate::breached(&results.thresholds),
        interrupt.is_stopped(),
    ))
}

/// The loads of a search in load order, then why it stopped and its peaks.
fn peak_table(r: &benchlab_results::Results) -> String {
    use std::fmt::Write as _;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "\n{:>8} {:>12} {:>9} {:>9} {:>9} {:>8}  search",
        "threads", "requests/s", "MB/s", "p50 µs", "p99 µs", "errors"
    );
    for m in &r.mixes {
        let x = &m.figures;
        let (step, kind) = m.search.as_ref().map_or((0, StepKind::Grow), |s| (s.step, s.kind));
        let _ = writeln!(
            o,
            "{:>8} {:>12} {:>9} {:>9} {:>9} {:>8}  step {} ({})",
            output::thousands(m.threads),
            output::requests_per_sec(x.requests_per_sec),
            output::mbytes_per_sec(x.bytes_per_sec),
            output::thousands(x.latency_us.p50),
            output::thousands(x.latency_us.p99),
            output::thousands(x.errors_total),
            step,
            crate::run_cmd::search_kind(kind)
        );
    }
    let Some(s) = r.phases.first().and_then(|p| p.search.as_ref()) else {
        return o;
    };
    let at = |mix: Option<usize>, rate: Option<f64>| match (mix.and_then(|n| r.mixes.get(n - 1)), rate) {
        (Some(m), Some(rate)) => format!(
            "{} requests/s at {}",
            output::requests_per_sec(rate),
            output::plural(m.threads, "virtual user", "virtual users")
        ),
        _ => "none".into(),
    };
    let _ = writeln!(
        o,
        "peak search: {}; peak {}; useful peak (p99 ≤ {} ms, errors ≤ {} %) {}",
        if s.stopped.is_empty() {
            "interrupted"
        } else {
            &s.stopped
        },
        at(s.peak_mix, s.peak_requests_per_sec),
        s.max_p99_us as f64 / 1000.0,
        s.max_error_percent,
        at(s.useful_peak_mix, s.useful_peak_requests_per_sec)
    );
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_are_as_even_as_whole_numbers_allow_and_sum_exactly() {
        assert_eq!(split(5, 2), [3, 2]);
        assert_eq!(split(400, 8), [50; 8]);
        assert_eq!(split(7, 3), [3, 2, 2]);
        assert_eq!(split(3, 1), [3]);
        for (total, clients) in [(1_000_003, 7), (64, 64), (65, 64)] {
            assert_eq!(split(total, clients).iter().sum::<u64>(), total);
        }
    }

    #[test]
    fn each_client_plan_gets_its_share_its_seed_and_its_own_loopback_address() {
        let target = Target::parse("http://127.0.0.1:8080/a.html").expect("a URL");
        let url = UrlPlan::get(target);
        let mut plan = ClientPlan::new(vec![url], vec![ClassPlan { name: "a".into() }]);
        plan.virtual_users = 5;
        plan.stop = Stop::Requests(401);
        plan.seed = 9;
        let plans = client_plans(&plan, 2);
        assert_eq!(plans.iter().map(|p| p.virtual_users).collect::<Vec<_>>(), [3, 2]);
        assert!(matches!(plans[0].stop, Stop::Requests(201)) && matches!(plans[1].stop, Stop::Requests(200)));
        assert_eq!(plans[0].seed, 9);
        assert_ne!(plans[1].seed, 9);
        assert_eq!(
            plans[1].source_addresses,
            ["127.0.0.2".parse::<std::net::IpAddr>().expect("an address")]
        );
        // One client: the plan itself.
        assert!(client_plans(&plan, 1)[0].source_addresses.is_empty());
        plan.load = Load::Open(OpenLoop {
            rate: 300.0,
            arrival: Arrival::Constant,
            max_in_flight: 10,
        });
        let open: Vec<(f64, u32)> = client_plans(&plan, 3)
            .iter()
            .map(|p| match p.load {
                Load::Open(o) => (o.rate, o.max_in_flight),
                Load::Closed => (0.0, 0),
            })
            .collect();
        assert_eq!(open, [(100.0, 4), (100.0, 3), (100.0, 3)]);
        // HTTP/2: the connections are shared out as the users are.
        plan.http2 = Some(benchlab_engine::H2Plan {
            connections: 5,
            ..Default::default()
        });
        let conns: Vec<u32> = client_plans(&plan, 2)
            .iter()
            .map(|p| p.http2.map_or(0, |h| h.connections))
            .collect();
        assert_eq!(conns, [3, 2]);
    }
}
