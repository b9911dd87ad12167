//! Suites: an ordered list of mixes of rising load, their shared parameters
//! (WebBench's names), the workloads and the target.
//!
//! Every mix parameter has a default in `[defaults]` (or benchlab's own,
//! below) and any mix may override any of them, the workload and the target
//! included. Consecutive mixes with the same workload and target form a
//! *phase*, charted against load on its own.

use crate::error::{FlagError, ModelError, Source};
use crate::files::{is_file_target, FileWorkloadRef};
use crate::input::excerpt;
use crate::workload::{RawWorkload, Workload};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;
use toml::Spanned;

/// The parameters of one mix (WebBench's, seed 002 and 004), resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct MixParams {
    /// Each client starts after a random wait of at most this.
    pub delay: Duration,
    pub ramp_up: Duration,
    pub ramp_down: Duration,
    /// The whole mix, ramps included.
    pub length: Duration,
    pub think_time: Duration,
    pub threads_per_client: u32,
    /// An open-loop mix (`rate = R` instead of threads): the mix's
    /// requests per second, shared evenly by its clients. `None`: a closed
    /// loop of `threads_per_client` users per client.
    pub rate: Option<f64>,
    /// How an open-loop mix spaces its sends.
    pub arrival: Arrival,
    /// Requests in flight at most, per client, in an open-loop mix.
    pub max_in_flight: u32,
    /// Size of each read from a socket.
    pub receive_buffer: usize,
    pub http10_percent: u8,
    pub http10_keepalive: bool,
    pub persistent_percent: u8,
    /// `None` = unlimited.
    pub requests_per_connection: Option<(u32, u32)>,
    /// `http = "2"`: the mix speaks HTTP/2 (docs/connections.md, "HTTP/2"),
    /// each client's users on ⌈threads ÷ streams_per_connection⌉
    /// connections; `false`: HTTP/1 by the keys above.
    pub http2: bool,
    /// `http = "3"`: HTTP/3 over QUIC instead (docs/http3.md); `http2`
    /// is then true too, as the connections and streams are HTTP/2's.
    pub http3: bool,
    /// HTTP/2: concurrent streams per connection at most.
    pub streams_per_connection: u32,
    /// Each virtual user's first connection is opened before the mix's
    /// start (closed-loop HTTP/1 over `http://` only): the start sends
    /// requests, not handshakes (docs/counting.md, "Start spread").
    pub preconnect: bool,
    /// Total time for one request (not scaled by `--time-scale`).
    pub timeout: Duration,
    /// Name of the workload (a key of the suite's workloads).
    pub workload: String,
    /// Base URL.
    pub target: String,
}

/// How an open-loop mix spaces its sends (docs/counting.md, "Open loop").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrival {
    /// Exactly 1/rate apart.
    Constant,
    /// A seeded Poisson process of the rate.
    Poisson,
}

impl Arrival {
    pub fn name(self) -> &'static str {
        match self {
            Arrival::Constant => "constant",
            Arrival::Poisson => "poisson",
        }
    }
}

/// The highest `rate` a mix may ask for (the engine's limit per client).
pub const MAX_RATE: f64 = 10_000_000.0;

/// The lowest `rate` a mix or `benchlab http --rate` may ask for: one
/// request in 1,000 s. The engine turns the k-th send of a thread into
/// `k × threads ÷ rate` seconds; at this rate that stays far inside a
/// `Duration` (a rate of 1e-19 overflowed it and panicked the workers).
pub const MIN_RATE: f64 = 0.001;

/// The shortest measurement window a mix may leave between its ramps: a
/// window of nanoseconds gave nonsense (client CPU 363 % of a core), while
/// a fraction of a second is a fair smoke test (rates are per second of
/// the window, however long; a window under a second has no whole second
/// for compare's noise, which then says so). `--time-scale` may shrink a
/// window below it on purpose (a quick try).
pub const MIN_WINDOW: Duration = Duration::from_millis(100);

/// A rate as a message shows it: `1e-300`, not three hundred zeros.
pub fn rate_text(r: f64) -> String {
    if r != 0.0 && r.is_finite() && !(1e-3..1e9).contains(&r.abs()) {
        format!("{r:e}")
    } else {
        format!("{r}")
    }
}

/// The rate range in words, for messages.
pub fn rate_range() -> String {
    // MAX_RATE, written for people.
    format!("from {MIN_RATE} to 10,000,000")
}

/// One mix: a load level.
#[derive(Debug, Clone, PartialEq)]
pub struct Mix {
    /// 1-based, as in reports.
    pub number: usize,
    pub clients: u32,
    pub params: MixParams,
    /// Index into [`Suite::phases`].
    pub phase: usize,
}

impl Mix {
    /// Total threads (virtual users) of the mix; 0 for an open loop.
    pub fn threads(&self) -> u64 {
        match self.params.rate {
            Some(_) => 0,
            None => self.clients as u64 * self.params.threads_per_client as u64,
        }
    }

    /// Request slots of one client: its threads, or its cap on requests in
    /// flight in an open loop (each may hold a connection).
    pub fn slots_per_client(&self) -> u32 {
        match self.params.rate {
            Some(_) => self.params.max_in_flight,
            None => self.params.threads_per_client,
        }
    }

    /// The measurement window, from the mix's start.
    pub fn window(&self) -> (Duration, Duration) {
        (
            self.params.ramp_up,
            self.params.length.saturating_sub(self.params.ramp_down),
        )
    }
}

/// Consecutive mixes sharing a workload and a target.
#[derive(Debug, Clone, PartialEq)]
pub struct Phase {
    pub name: String,
    pub workload: String,
    pub target: String,
    /// Indexes into [`Suite::mixes`].
    pub mixes: Vec<usize>,
}

/// A suite, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Suite {
    pub name: String,
    pub description: String,
    pub path: PathBuf,
    /// The suite's target (base URL); mixes may name their own.
    pub target: String,
    pub max_clients: Option<u32>,
    /// Price of the system under test in dollars, for price/performance.
    pub price: Option<f64>,
    pub seed: u64,
    /// Give each in-process client its own loopback address (127.0.0.N)
    /// when the target is on loopback, so the server sees distinct systems.
    pub client_addresses: bool,
    /// Named file-set directories (relative paths are to the suite file).
    pub filesets: BTreeMap<String, PathBuf>,
    /// What the suite needs of the target, for people (e.g. endpoints).
    pub requires: Vec<String>,
    pub workloads: BTreeMap<String, Workload>,
    /// File-server workloads (`disk_mix = "…"` or `loadfile = "…"`), whose
    /// mixes target `file://` or `smb://` (crates/fileserver runs them).
    pub file_workloads: BTreeMap<String, FileWorkloadRef>,
    pub mixes: Vec<Mix>,
    pub phases: Vec<Phase>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSuite {
    name: Option<String>,
    description: Option<String>,
    target: Option<String>,
    max_clients: Option<Spanned<u32>>,
    price: Option<Spanned<f64>>,
    seed: Option<u64>,
    client_addresses: Option<bool>,
    #[serde(default)]
    filesets: BTreeMap<String, String>,
    #[serde(default)]
    requires: Vec<String>,
    #[serde(default)]
    defaults: RawParams,
    #[serde(default)]
    workloads: BTreeMap<String, Spanned<RawWorkloadRef>>,
    #[serde(rename = "mix", default)]
    mixes: Vec<Spanned<RawParams>>,
}

/// A workload in the suite: inline classes, or `file = "..."`; `target`
/// gives the mixes that run it their base URL (a phase's own server).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawWorkloadRef {
    pub(crate) file: Option<String>,
    pub(crate) target: Option<Spanned<String>>,
    pub(crate) name: Option<String>,
    pub(crate) description: Option<String>,
    #[serde(rename = "class", default)]
    pub(crate) classes: Vec<Spanned<crate::workload::RawClass>>,
    /// A file-server disk-mix workload file (file servers).
    pub(crate) disk_mix: Option<String>,
    /// A dbench loadfile to replay (file servers).
    pub(crate) loadfile: Option<String>,
    /// Loadfile passes per user, after which it stops (file servers).
    pub(crate) loops: Option<Spanned<u32>>,
    /// A flow: the steps each virtual user walks (docs/flows.md).
    pub(crate) flow: Option<benchlab_flow::FlowSpec>,
}

/// Parameters of `[defaults]` and of each `[[mix]]` (a mix also has
/// `clients`). One struct rather than a flattened one: serde's `flatten`
/// loses the positions that error messages need.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawParams {
    clients: Option<Spanned<u32>>,
    delay: Option<Spanned<String>>,
    ramp_up: Option<Spanned<String>>,
    ramp_down: Option<Spanned<String>>,
    length: Option<Spanned<String>>,
    think_time: Option<Spanned<String>>,
    threads_per_client: Option<Spanned<u32>>,
    rate: Option<Spanned<f64>>,
    arrival: Option<Spanned<String>>,
    max_in_flight: Option<Spanned<u32>>,
    receive_buffer: Option<Spanned<usize>>,
    http10_percent: Option<Spanned<u8>>,
    http10_keepalive: Option<bool>,
    persistent_percent: Option<Spanned<u8>>,
    requests_per_connection: Option<Spanned<toml::Value>>,
    http: Option<Spanned<String>>,
    streams_per_connection: Option<Spanned<u32>>,
    preconnect: Option<Spanned<bool>>,
    timeout: Option<Spanned<String>>,
    workload: Option<Spanned<String>>,
    target: Option<Spanned<String>>,
}

/// benchlab's defaults where neither the mix nor `[defaults]` says.
fn builtin(target: &str) -> MixParams {
    MixParams {
        delay: Duration::ZERO,
        ramp_up: Duration::from_secs(30),
        ramp_down: Duration::from_secs(30),
        length: Duration::from_secs(300),
        think_time: Duration::ZERO,
        threads_per_client: 1,
        rate: None,
        arrival: Arrival::Constant,
        max_in_flight: 1000,
        receive_buffer: 64 * 1024,
        http10_percent: 0,
        http10_keepalive: false,
        persistent_percent: 100,
        requests_per_connection: None,
        http2: false,
        http3: false,
        streams_per_connection: 1,
        preconnect: false,
        timeout: Duration::from_secs(5),
        workload: String::new(),
        target: target.to_string(),
    }
}

fn duration(src: &Source, s: &Spanned<String>, what: &str) -> Result<Duration, ModelError> {
    crate::duration::parse_duration(s.get_ref()).map_err(|e| src.error_at(s.span().start, format!("{what} {e}")))
}

fn percent(src: &Source, p: &Spanned<u8>, what: &str) -> Result<u8, ModelError> {
    let v = *p.get_ref();
    if v > 100 {
        return Err(src.error_at(
            p.span().start,
            format!("{what} {v}: expected a percentage from 0 to 100"),
        ));
    }
    Ok(v)
}

/// `4`, `"4"`, `"2..6"`, `[2, 6]` or `"unlimited"`.
fn per_connection(src: &Source, v: &Spanned<toml::Value>) -> Result<Option<(u32, u32)>, ModelError> {
    let at = v.span().start;
    let bad = || {
        src.error_at(
            at,
            "requests_per_connection: expected N, \"MIN..MAX\", [MIN, MAX] (whole numbers, 1 ≤ MIN ≤ MAX) or \"unlimited\"",
        )
    };
    let num = |x: &toml::Value| {
        x.as_integer()
            .filter(|n| *n >= 1 && *n <= u32::MAX as i64)
            .map(|n| n as u32)
    };
    let (min, max) = match v.get_ref() {
        toml::Value::Integer(_) => {
            let n = num(v.get_ref()).ok_or_else(bad)?;
            (n, n)
        }
        toml::Value::Array(a) if a.len() == 2 => (num(&a[0]).ok_or_else(bad)?, num(&a[1]).ok_or_else(bad)?),
        toml::Value::String(s) if s == "unlimited" => return Ok(None),
        toml::Value::String(s) => {
            let parse = |x: &str| x.trim().parse::<u32>().ok().filter(|n| *n >= 1);
            match s.split_once("..") {
                Some((a, b)) => (parse(a).ok_or_else(bad)?, parse(b).ok_or_else(bad)?),
                None => {
                    let n = parse(s).ok_or_else(bad)?;
                    (n, n)
                }
            }
        }
        _ => return Err(bad()),
    };
    if min > max {
        return Err(bad());
    }
    Ok(Some((min, max)))
}

fn is_base_url(t: &str) -> bool {
    t.starts_with("http://") || t.starts_with("https://")
}

/// Applies the parameters given in `raw` over `p`.
fn apply(src: &Source, raw: &RawParams, p: &mut MixParams) -> Result<(), ModelError> {
    if let Some(v) = &raw.delay {
        p.delay = duration(src, v, "delay")?;
    }
    if let Some(v) = &raw.ramp_up {
        p.ramp_up = duration(src, v, "ramp_up")?;
    }
    if let Some(v) = &raw.ramp_down {
        p.ramp_down = duration(src, v, "ramp_down")?;
    }
    if let Some(v) = &raw.length {
        p.length = duration(src, v, "length")?;
        if p.length.is_zero() {
            return Err(src.error_at(
                v.span().start,
                "length is zero: expected the mix's whole length, e.g. \"300s\"",
            ));
        }
    }
    if let Some(v) = &raw.think_time {
        p.think_time = duration(src, v, "think_time")?;
    }
    if let Some(v) = &raw.timeout {
        p.timeout = duration(src, v, "timeout")?;
        if p.timeout.is_zero() {
            return Err(src.error_at(v.span().start, "timeout is zero: expected e.g. \"5s\""));
        }
    }
    if let Some(v) = &raw.threads_per_client {
        if *v.get_ref() == 0 {
            return Err(src.error_at(v.span().start, "threads_per_client is 0: expected at least 1"));
        }
        p.threads_per_client = *v.get_ref();
    }
    if let Some(v) = &raw.rate {
        let r = *v.get_ref();
        if !(MIN_RATE..=MAX_RATE).contains(&r) {
            return Err(src.error_at(
                v.span().start,
                format!("rate {}: expected requests per second {}", rate_text(r), rate_range()),
            ));
        }
        p.rate = Some(r);
    }
    if let Some(v) = &raw.arrival {
        p.arrival = match v.get_ref().as_str() {
            "constant" => Arrival::Constant,
            "poisson" => Arrival::Poisson,
            other => {
                return Err(src.error_at(
                    v.span().start,
                    format!("arrival `{}`: expected \"constant\" or \"poisson\"", excerpt(other)),
                ))
            }
        };
    }
    if let Some(v) = &raw.max_in_flight {
        if *v.get_ref() == 0 {
            return Err(src.error_at(v.span().start, "max_in_flight is 0: expected at least 1"));
        }
        p.max_in_flight = *v.get_ref();
    }
    if let Some(v) = &raw.receive_buffer {
        if *v.get_ref() < 64 {
            return Err(src.error_at(v.span().start, "receive_buffer: expected at least 64 bytes"));
        }
        p.receive_buffer = *v.get_ref();
    }
    if let Some(v) = &raw.http10_percent {
        p.http10_percent = percent(src, v, "http10_percent")?;
    }
    if let Some(v) = raw.http10_keepalive {
        p.http10_keepalive = v;
    }
    if let Some(v) = &raw.persistent_percent {
        p.persistent_percent = percent(src, v, "persistent_percent")?;
    }
    if let Some(v) = &raw.requests_per_connection {
        p.requests_per_connection = per_connection(src, v)?;
    }
    if let Some(v) = &raw.http {
        p.http3 = v.get_ref() == "3";
        p.http2 = match v.get_ref().as_str() {
            "1.1" | "1" => false,
            "2" | "3" => true,
            other => {
                return Err(src.error_at(
                    v.span().start,
                    format!(
                        "http `{}`: expected \"1.1\", \"2\" or \"3\" (HTTP/1.0 is http10_percent)",
                        excerpt(other)
                    ),
                ))
            }
        };
    }
    if let Some(v) = &raw.streams_per_connection {
        if *v.get_ref() == 0 {
            return Err(src.error_at(v.span().start, "streams_per_connection is 0: expected at least 1"));
        }
        p.streams_per_connection = *v.get_ref();
    }
    if let Some(v) = &raw.preconnect {
        p.preconnect = *v.get_ref();
    }
    if p.http2 && p.http10_percent > 0 {
        let at = raw.http.as_ref().map_or(0, |v| v.span().start);
        return Err(src.error_at(
            at,
            "http = \"2\" with http10_percent above 0: an HTTP/2 mix has no HTTP/1.0 share",
        ));
    }
    if let Some(v) = &raw.workload {
        p.workload = v.get_ref().clone();
    }
    if let Some(v) = &raw.target {
        p.target = v.get_ref().clone();
    }
    Ok(())
}

impl Suite {
    /// Reads and checks a suite file (and the workload files it names).
    pub fn from_file(path: &Path) -> Result<Suite, ModelError> {
        let src = Source::read_bounded(path, "suite", crate::input::MAX_SUITE_BYTES)?;
        let raw: RawSuite = src.parse()?;
        let dir = path.parent().unwrap_or(Path::new("."));

        let mut workloads = BTreeMap::new();
        // Base URLs of workloads that name their own (`[workloads.X] target`).
        let mut workload_targets: BTreeMap<String, String> = BTreeMap::new();
        let mut file_workloads: BTreeMap<String, FileWorkloadRef> = BTreeMap::new();
        for (key, w) in raw.workloads {
            let at = w.span().start;
            let w = w.into_inner();
            if let Some(f) = crate::files::file_workload(
                &src,
                &key,
                at,
                crate::files::FileKeys {
                    disk_mix: &w.disk_mix,
                    loadfile: &w.loadfile,
                    loops: &w.loops,
                    target: &w.target,
                },
                dir,
            )? {
                if w.file.is_some() || !w.classes.is_empty() {
                    return Err(src.error_at(
                        at,
                        format!(
                            "workload `{key}` has `{}` and web classes: expected one of them",
                            f.kind.key()
                        ),
                    ));
                }
                if let Some(t) = &w.target {
                    workload_targets.insert(key.clone(), t.get_ref().clone());
                }
                file_workloads.insert(key, f);
                continue;
            }
            if w.flow.is_some() && (w.file.is_some() || !w.classes.is_empty()) {
                return Err(src.error_at(
                    at,
                    format!("workload `{key}` has a `flow` and classes: expected one of them (a flow's steps are its classes)"),
                ));
            }
            if let Some(t) = &w.target {
                if !is_base_url(t.get_ref()) {
                    return Err(src.error_at(
                        t.span().start,
                        format!(
                            "workload `{key}`: target `{}`: expected an http:// or https:// base URL",
                            t.get_ref()
                        ),
                    ));
                }
                workload_targets.insert(key.clone(), t.get_ref().clone());
            }
            if let Some(flow) = w.flow {
                let workload = crate::workload::flow_workload(&src, &key, at, flow, w.name, w.description, dir)?;
                workloads.insert(key, workload);
                continue;
            }
            let workload = match w.file {
                Some(file) => {
                    if !w.classes.is_empty() {
                        return Err(src.error_at(
                            at,
                            format!("workload `{key}` has both `file` and inline classes: expected one of them"),
                        ));
                    }
                    let p = dir.join(&file);
                    let wsrc =
                        Source::read_bounded(&p, "workload", crate::input::MAX_WORKLOAD_BYTES).map_err(
                            |e| match e.line {
                                // A problem inside the workload file: its own place.
                                Some(_) => src.error_at(at, format!("workload `{key}`: {e}")),
                                None => src.error_at(
                                    at,
                                    format!("workload `{}`: file `{}`: {}", excerpt(&key), excerpt(&file), e.message),
                                ),
                            },
                        )?;
                    let rw: RawWorkload = wsrc.parse()?;
                    Workload::check(rw, &wsrc, &key, wsrc.text.len())?
                }
                None => {
                    let rw = RawWorkload {
                        name: w.name.or(Some(key.clone())),
                        description: w.description,
                        classes: w.classes,
                    };
                    Workload::check(rw, &src, &key, at)?
                }
            };
            workloads.insert(key, workload);
        }
        if workloads.is_empty() && file_workloads.is_empty() {
            return Err(
                src.error_at_end("no workload: expected a [workloads.NAME] table (inline classes or file = \"...\")")
            );
        }

        let target = raw
            .target
            .clone()
            .unwrap_or_else(|| "http://127.0.0.1:8080".to_string());
        let mut defaults = builtin(&target);
        if let Some(c) = &raw.defaults.clients {
            return Err(src.error_at(c.span().start, "`clients` belongs in each [[mix]], not in [defaults]"));
        }
        if let Some(r) = &raw.defaults.rate {
            return Err(src.error_at(
                r.span().start,
                "`rate` belongs in each [[mix]] that runs an open loop, not in [defaults]",
            ));
        }
        apply(&src, &raw.defaults, &mut defaults)?;
        if defaults.workload.is_empty() && workloads.len() + file_workloads.len() == 1 {
            defaults.workload = workloads
                .keys()
                .chain(file_workloads.keys())
                .next()
                .cloned()
                .unwrap_or_default();
        }
        let max_clients = raw.max_clients.as_ref().map(|m| *m.get_ref());
        let price = match &raw.price {
            Some(p) if !(p.get_ref().is_finite() && *p.get_ref() > 0.0) => {
                return Err(src.error_at(
                    p.span().start,
                    format!("price {}: expected dollars above 0", p.get_ref()),
                ))
            }
            Some(p) => Some(*p.get_ref()),
            None => None,
        };
        if raw.mixes.is_empty() {
            return Err(src.error_at(
                src.text.len(),
                "no [[mix]]: expected at least one mix with `clients = N`",
            ));
        }
        let mut mixes: Vec<Mix> = Vec::new();
        let mut phases: Vec<Phase> = Vec::new();
        for (i, m) in raw.mixes.iter().enumerate() {
            let at = m.span().start;
            let m = m.get_ref();
            let mut p = defaults.clone();
            apply(&src, m, &mut p)?;
            // A workload's own target is more specific than [defaults]'s;
            // the mix's own is more specific still.
            if m.target.is_none() {
                if let Some(t) = workload_targets.get(&p.workload) {
                    p.target = t.clone();
                }
            }
            if let (Some(r), Some(t)) = (&m.rate, &m.threads_per_client) {
                return Err(src.error_at(
                    t.span().start.min(r.span().start),
                    format!(
                        "mix {}: both `rate` and `threads_per_client`: expected one (`rate` runs an open loop, threads a closed one)",
                        i + 1
                    ),
                ));
            }
            if let Some(r) = &m.rate {
                if !p.think_time.is_zero() {
                    return Err(src.error_at(
                        r.span().start,
                        format!(
                            "mix {}: `rate` with think_time {}: an open loop has no think time; set think_time = \"0s\" in this mix",
                            i + 1,
                            humantime::format_duration(p.think_time)
                        ),
                    ));
                }
            }
            let Some(clients_spanned) = &m.clients else {
                return Err(src.error_at(at, format!("mix {}: no `clients`: expected `clients = N`", i + 1)));
            };
            let clients = *clients_spanned.get_ref();
            if clients == 0 {
                return Err(src.error_at(
                    clients_spanned.span().start,
                    format!("mix {}: clients = 0: expected at least 1", i + 1),
                ));
            }
            if let Some(max) = max_clients {
                if clients > max {
                    return Err(src.error_at(
                        clients_spanned.span().start,
                        format!("mix {}: {clients} clients, but max_clients is {max}", i + 1),
                    ));
                }
            }
            let window = p.length.saturating_sub(p.ramp_up + p.ramp_down);
            if window < MIN_WINDOW {
                return Err(src.error_at(
                    at,
                    format!(
                        "mix {}: ramp_up {} + ramp_down {} leave {} of measurement in length {}: \
                         expected a measurement window of at least {}",
                        i + 1,
                        humantime::format_duration(p.ramp_up),
                        humantime::format_duration(p.ramp_down),
                        humantime::format_duration(window),
                        humantime::format_duration(p.length),
                        humantime::format_duration(MIN_WINDOW)
                    ),
                ));
            }
            if p.delay > p.ramp_up {
                return Err(src.error_at(
                    at,
                    format!(
                        "mix {}: delay {} is longer than ramp_up {}: expected each client's start to fall within ramp-up",
                        i + 1,
                        humantime::format_duration(p.delay),
                        humantime::format_duration(p.ramp_up)
                    ),
                ));
            }
            if p.workload.is_empty() {
                return Err(src.error_at(
                    at,
                    format!(
                        "mix {}: no workload: the suite has several, expected `workload = \"NAME\"` in the mix or in [defaults]",
                        i + 1
                    ),
                ));
            }
            if workloads.get(&p.workload).is_some_and(|w| w.flow.is_some()) {
                // A flow's users walk their steps one request at a time over
                // HTTP/1 (docs/flows.md): these cannot apply.
                if let Some(r) = &m.rate {
                    return Err(src.error_at(
                        r.span().start,
                        format!(
                            "mix {}: `rate` with the flow workload `{}`: a flow's users walk their steps in a closed loop; \
                             use threads_per_client and the steps' think times",
                            i + 1,
                            p.workload
                        ),
                    ));
                }
                if p.http2 {
                    return Err(src.error_at(
                        at,
                        format!(
                            "mix {}: `http = \"2\"` with the flow workload `{}`: flows run over HTTP/1.1 for now",
                            i + 1,
                            p.workload
                        ),
                    ));
                }
            }
            if p.preconnect {
                // What `preconnect` opens: each closed-loop HTTP/1 user's
                // one plain connection (docs/counting.md, "Start spread").
                let at = m.preconnect.as_ref().map_or(at, |v| v.span().start);
                let why = if file_workloads.contains_key(&p.workload) {
                    Some("a file workload's users open their connections themselves")
                } else if workloads.get(&p.workload).is_some_and(|w| w.flow.is_some()) {
                    Some("a flow's users connect to each step's origin as they walk")
                } else if p.rate.is_some() {
                    Some("an open loop's connections follow its schedule")
                } else if p.http2 {
                    Some("it opens HTTP/1 connections only")
                } else if p.target.starts_with("https://") {
                    Some("it opens plain http:// connections only (a TLS handshake is not done before the start)")
                } else {
                    None
                };
                if let Some(why) = why {
                    return Err(src.error_at(at, format!("mix {}: `preconnect = true` cannot apply: {why}", i + 1)));
                }
            }
            if !workloads.contains_key(&p.workload) && !file_workloads.contains_key(&p.workload) {
                let known: Vec<&str> = workloads
                    .keys()
                    .chain(file_workloads.keys())
                    .map(String::as_str)
                    .collect();
                return Err(src.error_at(
                    m.workload.as_ref().map(|w| w.span().start).unwrap_or(at),
                    format!(
                        "mix {}: unknown workload `{}`: expected one of {}",
                        i + 1,
                        excerpt(&p.workload),
                        known.join(", ")
                    ),
                ));
            }
            if let Some(f) = file_workloads.get(&p.workload) {
                if !is_file_target(&p.target) {
                    return Err(src.error_at(
                        m.target.as_ref().map(|t| t.span().start).unwrap_or(at),
                        format!(
                            "mix {}: target `{}` of {} workload `{}`: expected file:///PATH or smb://[USER[:PASS]@]HOST[:PORT]/SHARE",
                            i + 1,
                            p.target,
                            f.kind.key(),
                            p.workload
                        ),
                    ));
                }
            } else if !is_base_url(&p.target) {
                return Err(src.error_at(
                    m.target.as_ref().map(|t| t.span().start).unwrap_or(at),
                    format!(
                        "mix {}: target `{}`: expected an http:// or https:// base URL",
                        i + 1,
                        excerpt(&p.target)
                    ),
                ));
            }
            let phase = match phases.last() {
                Some(ph) if ph.workload == p.workload && ph.target == p.target => phases.len() - 1,
                _ => {
                    phases.push(Phase {
                        name: p.workload.clone(),
                        workload: p.workload.clone(),
                        target: p.target.clone(),
                        mixes: Vec::new(),
                    });
                    phases.len() - 1
                }
            };
            phases[phase].mixes.push(i);
            mixes.push(Mix {
                number: i + 1,
                clients,
                params: p,
                phase,
            });
        }
        // Phases of the same workload against different targets get the
        // target in their name, so each name is unique.
        let mut count: BTreeMap<String, usize> = BTreeMap::new();
        for p in &phases {
            *count.entry(p.workload.clone()).or_default() += 1;
        }
        for p in &mut phases {
            if count[&p.workload] > 1 {
                p.name = format!("{} @ {}", p.workload, p.target);
            }
        }
        let filesets = raw
            .filesets
            .into_iter()
            .map(|(k, v)| {
                let p = PathBuf::from(&v);
                (k, if p.is_absolute() { p } else { dir.join(p) })
            })
            .collect();
        let suite = Suite {
            name: raw.name.unwrap_or_else(|| {
                path.file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default()
            }),
            description: raw.description.unwrap_or_default(),
            path: path.to_path_buf(),
            target,
            max_clients,
            price,
            seed: raw.seed.unwrap_or(1),
            client_addresses: raw.client_addresses.unwrap_or(true),
            filesets,
            requires: raw.requires,
            workloads,
            file_workloads,
            mixes,
            phases,
        };
        suite.check_url_hosts()?;
        Ok(suite)
    }

    /// Scales delay, ramps, length and think time (not timeouts), as
    /// `--time-scale` asks, so a suite can be tried in minutes. The factor
    /// and every scaled duration are checked (the suite is left as it was
    /// on error); the message names the flag, the mix and the parameter.
    pub fn scale_time(&mut self, factor: f64) -> Result<(), FlagError> {
        use crate::duration::{check_duration, check_time_scale, scale_duration};
        let refuse = |reason: String| FlagError {
            flag: "--time-scale",
            value: factor.to_string(),
            reason,
        };
        check_time_scale(factor).map_err(|e| refuse(e.to_string()))?;
        let mut scaled = self.mixes.clone();
        for m in &mut scaled {
            let n = m.number;
            let p = &mut m.params;
            for (what, d) in [
                ("delay", &mut p.delay),
                ("ramp_up", &mut p.ramp_up),
                ("ramp_down", &mut p.ramp_down),
                ("length", &mut p.length),
                ("think_time", &mut p.think_time),
            ] {
                let s = scale_duration(*d, factor)
                    .filter(|s| check_duration(*s).is_ok())
                    .ok_or_else(|| {
                        refuse(format!(
                            "mix {n}'s {what} {} would become {:.0} s, too long: \
                             expected every scaled duration {}",
                            humantime::format_duration(*d),
                            d.as_secs_f64() * factor,
                            crate::duration::duration_range()
                        ))
                    })?;
                *d = s;
            }
            // Rounding to nanoseconds must not close the window that the
            // unscaled suite had (ramps shorter than the mix).
            if p.ramp_up + p.ramp_down >= p.length || p.length.is_zero() {
                return Err(refuse(format!(
                    "mix {n}'s measurement window vanishes ({} long, ramps {} + {}): \
                     expected a larger scale",
                    humantime::format_duration(p.length),
                    humantime::format_duration(p.ramp_up),
                    humantime::format_duration(p.ramp_down)
                )));
            }
        }
        self.mixes = scaled;
        Ok(())
    }

    /// Refuses an absolute URL (`http://HOST/p`) of a mix's workload that
    /// is not on the host the mix runs against (the mix's target, or the
    /// class's own `target`): a suite sends only to its targets, and its
    /// banner names them. Run at loading and again after `--target` or
    /// `--phase-target` moved a phase, so no URL is left pointing at the old
    /// host. The error is at the URL's line and names both hosts.
    pub fn check_url_hosts(&self) -> Result<(), ModelError> {
        use crate::workload::{origin, UrlSource};
        let mut checked: Vec<(&str, &str)> = Vec::new();
        for m in &self.mixes {
            let key = (m.params.workload.as_str(), m.params.target.as_str());
            if checked.contains(&key) {
                continue;
            }
            checked.push(key);
            let Some(w) = self.workloads.get(&m.params.workload) else {
                continue;
            };
            let mix_origin = origin(&m.params.target);
            for c in w.classes.iter().filter(|c| c.target.is_none()) {
                let UrlSource::List(list) = &c.source else { continue };
                for u in list {
                    let Some(place) = &u.place else { continue };
                    let here = origin(&u.path);
                    if here.is_some() && here == mix_origin {
                        continue;
                    }
                    let host = here.map_or_else(|| "no host".to_string(), |(_, h, p)| format!("{h}:{p}"));
                    let path = u.path.find("://").map_or("/", |i| {
                        let rest = &u.path[i + 3..];
                        rest.find(['/', '?']).map_or("/", |j| &rest[j..])
                    });
                    return Err(place.error(format!(
                        "URL `{}` of workload `{}` is on {host}, but mix {} runs against `{}`: expected a path \
                         such as `{}` (a workload's URLs are paths on the target), or `target = \"…\"` on class `{}`",
                        crate::input::excerpt(&u.path),
                        w.name,
                        m.number,
                        crate::input::excerpt(&m.params.target),
                        crate::input::excerpt(path),
                        c.name
                    )));
                }
            }
        }
        Ok(())
    }

    /// Replaces the target of every mix whose target is the suite's default
    /// (`--target`): mixes that name their own target keep it.
    pub fn retarget(&mut self, new: &str) {
        let default_target = std::mem::replace(&mut self.target, new.to_string());
        for m in &mut self.mixes {
            if m.params.target == default_target {
                m.params.target = new.to_string();
            }
        }
        for p in &mut self.phases {
            if p.target == default_target {
                p.target = new.to_string();
            }
        }
    }

    /// Gives the phases named `name` (a phase's or a workload's name) and
    /// their mixes the base URL `target` (`--phase-target NAME=URL`).
    pub fn retarget_phase(&mut self, name: &str, target: &str) -> Result<(), FlagError> {
        let refuse = |reason: String| FlagError {
            flag: "--phase-target",
            value: format!("{name}={target}"),
            reason,
        };
        let hits: Vec<usize> = (0..self.phases.len())
            .filter(|&i| self.phases[i].name == name || self.phases[i].workload == name)
            .collect();
        if hits.is_empty() {
            let known: Vec<&str> = self.phases.iter().map(|p| p.name.as_str()).collect();
            return Err(refuse(format!(
                "suite `{}` has no phase `{name}`: expected one of {}",
                self.name,
                known.join(", ")
            )));
        }
        // A file workload's phase takes file:// or smb://, a web one http(s)://.
        for &i in &hits {
            let file = self.file_workloads.contains_key(&self.phases[i].workload);
            if file && !is_file_target(target) {
                return Err(refuse(format!(
                    "phase {} runs a file workload: expected file:///PATH or smb://HOST/SHARE",
                    self.phases[i].name
                )));
            }
            if !file && !is_base_url(target) {
                return Err(refuse("expected an http:// or https:// base URL".into()));
            }
        }
        for i in hits {
            self.phases[i].target = target.to_string();
            for &m in &self.phases[i].mixes {
                self.mixes[m].params.target = target.to_string();
            }
        }
        Ok(())
    }

    /// Keeps only the phases named (`--phase`; a workload's name selects
    /// every phase of that workload) and their mixes, which keep their
    /// numbers from the suite file. An empty list keeps everything. Refuses
    /// every name that is no phase, listing the phases there are.
    pub fn select_phases(&mut self, names: &[String]) -> Result<(), FlagError> {
        if names.is_empty() {
            return Ok(());
        }
        let selected = |p: &Phase| names.iter().any(|n| *n == p.name || *n == p.workload);
        let unknown: Vec<&str> = names
            .iter()
            .filter(|n| !self.phases.iter().any(|p| **n == p.name || **n == p.workload))
            .map(String::as_str)
            .collect();
        if !unknown.is_empty() {
            let known: Vec<&str> = self.phases.iter().map(|p| p.name.as_str()).collect();
            return Err(FlagError {
                flag: "--phase",
                value: unknown.join(", --phase "),
                reason: format!("suite `{}` has no such phase: expected {}", self.name, known.join(", ")),
            });
        }
        let keep: Vec<bool> = self.phases.iter().map(selected).collect();
        let mut renumber = vec![usize::MAX; self.phases.len()];
        let mut phases = Vec::new();
        for (i, mut p) in std::mem::take(&mut self.phases).into_iter().enumerate() {
            if keep[i] {
                renumber[i] = phases.len();
                p.mixes.clear();
                phases.push(p);
            }
        }
        self.mixes.retain(|m| keep[m.phase]);
        for (i, m) in self.mixes.iter_mut().enumerate() {
            m.phase = renumber[m.phase];
            phases[m.phase].mixes.push(i);
        }
        self.phases = phases;
        Ok(())
    }

    /// File sets the phases draw from (after [`Suite::select_phases`], only
    /// the selected phases'), each with the phases that need it.
    pub fn filesets_needed(&self) -> BTreeMap<String, Vec<String>> {
        let mut needed: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for p in &self.phases {
            if let Some(w) = self.workloads.get(&p.workload) {
                for f in w.filesets() {
                    let phases = needed.entry(f.to_string()).or_default();
                    if !phases.contains(&p.name) {
                        phases.push(p.name.clone());
                    }
                }
            }
        }
        needed
    }

    /// Total run time of all mixes (ramps included).
    pub fn total_length(&self) -> Duration {
        self.mixes.iter().map(|m| m.params.length).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::origin;

    #[test]
    fn origins_compare_scheme_host_and_port() {
        assert_eq!(origin("http://H.example/x"), origin("HTTP://h.example:80"));
        assert_eq!(origin("https://u:p@h:443?q"), Some(("https", "h".to_string(), 443)));
        assert_eq!(origin("http://[::1]:8080/a"), Some(("http", "[::1]".to_string(), 8080)));
        assert_ne!(origin("http://h:8080/"), origin("https://h:8080/"));
        assert_ne!(origin("http://h:8080/"), origin("http://h:8081/"));
        assert_eq!(origin("/a"), None);
        assert_eq!(origin("http:///a"), None);
        assert_eq!(origin("http://h:99999/"), None);
    }

    /// A URL on the suite's target is fine until `--target` moves the
    /// target away from it; a class's own target keeps its URLs.
    #[test]
    fn absolute_urls_follow_no_retarget() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("s.toml");
        std::fs::write(
            &p,
            "name = \"s\"\ntarget = \"http://127.0.0.1:8080\"\n[defaults]\nlength = \"3s\"\nramp_up = \"1s\"\nramp_down = \"0s\"\n\
             [workloads.w]\n[[workloads.w.class]]\nname = \"a\"\npercent = 50\n\
             [[workloads.w.class.url]]\npath = \"http://127.0.0.1:8080/a\"\n\
             [[workloads.w.class]]\nname = \"b\"\npercent = 50\ntarget = \"https://127.0.0.1:8443\"\n\
             [[workloads.w.class.url]]\npath = \"https://127.0.0.1:8443/b\"\n[[mix]]\nclients = 1\n",
        )
        .expect("write suite");
        let mut suite = Suite::from_file(&p).expect("suite as written");
        suite.retarget("http://127.0.0.1:9090");
        let e = suite.check_url_hosts().expect_err("a URL left on the old host");
        assert_eq!((e.line, e.column), (Some(11), Some(1)));
        assert!(
            e.message.starts_with(
                "URL `http://127.0.0.1:8080/a` of workload `w` is on 127.0.0.1:8080, but mix 1 runs against `http://127.0.0.1:9090`"
            ),
            "{}",
            e.message
        );
        suite.retarget("http://127.0.0.1:8080");
        assert!(suite.check_url_hosts().is_ok());
    }

    /// `preconnect` is a closed-loop HTTP/1 mix's over http://; anywhere
    /// else it is refused at its key, saying why.
    #[test]
    fn preconnect_applies_to_closed_loop_plain_http_only() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("s.toml");
        let suite = |target: &str, mix: &str| {
            std::fs::write(
                &p,
                format!(
                    "name = \"s\"\ntarget = \"{target}\"\n[defaults]\nlength = \"3s\"\nramp_up = \"1s\"\nramp_down = \"0s\"\n\
                     [workloads.w]\n[[workloads.w.class]]\nname = \"a\"\npercent = 100\n\
                     [[workloads.w.class.url]]\npath = \"/a\"\n[[mix]]\nclients = 1\n{mix}"
                ),
            )
            .expect("write suite");
            Suite::from_file(&p)
        };
        let ok = suite("http://127.0.0.1:8080", "preconnect = true\n").expect("a plain closed loop");
        assert!(ok.mixes[0].params.preconnect);
        assert!(
            !suite("http://127.0.0.1:8080", "").expect("suite").mixes[0]
                .params
                .preconnect
        );
        for (target, mix, why) in [
            (
                "http://127.0.0.1:8080",
                "preconnect = true\nrate = 10.0\n",
                "an open loop's connections follow its schedule",
            ),
            (
                "http://127.0.0.1:8080",
                "preconnect = true\nhttp = \"2\"\n",
                "HTTP/1 connections only",
            ),
            (
                "https://127.0.0.1:8443",
                "preconnect = true\n",
                "plain http:// connections only",
            ),
        ] {
            let e = suite(target, mix).expect_err(mix);
            assert_eq!(e.line, Some(15), "{mix}: {}", e.message);
            assert!(
                e.message.starts_with("mix 1: `preconnect = true` cannot apply: ") && e.message.contains(why),
                "{}",
                e.message
            );
        }
    }

    #[test]
    fn rates_show_briefly() {
        assert_eq!(rate_text(1e-300), "1e-300");
        assert_eq!(rate_text(0.5), "0.5");
        assert_eq!(rate_text(20_000_000.0), "20000000");
        assert_eq!(rate_text(0.0), "0");
    }
}
