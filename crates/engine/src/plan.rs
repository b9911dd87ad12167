//! What one client (test system) is asked to do: the load plan.
//!
//! A plan is plain data, checked once by [`ClientPlan::validate`] before any
//! thread starts; the hot loop then only reads it. Requests are serialised
//! here, once, into the four byte strings a URL can need (HTTP/1.1 or 1.0,
//! keeping the connection or closing it), so the loop never formats.

use crate::stats::ConnectionKind;
pub use crate::urls::UrlTable;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::time::Duration;

/// The longest duration a plan may hold (timeout, think time, start delay,
/// run length): a week, as the model's limit. Each is added to an `Instant`
/// in the hot loop, and a huge one would overflow it and panic there.
pub const MAX_DURATION: Duration = Duration::from_secs(7 * 24 * 3600);

/// Errors in a plan or a URL: a user's bad input, reported before the run.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PlanError {
    #[error("`{url}` is not a URL benchlab can load: {why}")]
    BadUrl { url: String, why: String },
    #[error("cannot resolve `{host}`: {why}")]
    Resolve { host: String, why: String },
    #[error("{0}")]
    Invalid(String),
}

/// URL scheme.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    Http,
    Https,
}

/// A URL to load, resolved once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The URL as the user wrote it (without any `@weight`).
    pub url: String,
    pub scheme: Scheme,
    /// Host name for TLS SNI and certificate checks.
    pub host: String,
    /// `Host` header value (host, plus `:port` when not the default).
    pub authority: String,
    /// Path and query, as sent on the request line.
    pub path: String,
    pub addr: SocketAddr,
}

impl Target {
    /// Parses and resolves an `http://` or `https://` URL.
    pub fn parse(url: &str) -> Result<Target, PlanError> {
        let (scheme, host, port, authority, path) = parse_url(url)?;
        Ok(Target {
            url: url.to_string(),
            scheme,
            addr: resolve(&host, port)?,
            host,
            authority,
            path,
        })
    }
}

/// An `http://` or `https://` URL's parts: scheme, host, port, `Host`
/// header value and path (with its query); nothing resolved.
pub(crate) fn parse_url(url: &str) -> Result<(Scheme, String, u16, String, String), PlanError> {
    let bad = |why: &str| PlanError::BadUrl {
        url: url.to_string(),
        why: why.to_string(),
    };
    // `localhost:8080/a` parses as a URL of scheme `localhost`: say
    // what is missing instead of calling `localhost` a scheme.
    if !url.contains("://") {
        return Err(bad(&format!(
            "http:// is missing: expected http://{url} (or https://{url} for TLS)"
        )));
    }
    let u = url::Url::parse(url).map_err(|e| bad(&format!("{e} (expected http://HOST[:PORT]/PATH)")))?;
    let scheme = match u.scheme() {
        "http" => Scheme::Http,
        "https" => Scheme::Https,
        s => return Err(bad(&format!("scheme `{s}` is not http or https"))),
    };
    if !u.username().is_empty() || u.password().is_some() {
        return Err(bad(
            "user names and passwords in URLs are not supported; use -H 'Authorization: ...'",
        ));
    }
    let host = match u.host() {
        Some(url::Host::Domain(d)) => d.to_string(),
        Some(url::Host::Ipv4(a)) => a.to_string(),
        Some(url::Host::Ipv6(a)) => a.to_string(),
        None => return Err(bad("no host")),
    };
    let port = u.port_or_known_default().ok_or_else(|| bad("no port"))?;
    let authority = match (u.port(), u.host()) {
        (Some(p), Some(url::Host::Ipv6(a))) => format!("[{a}]:{p}"),
        (None, Some(url::Host::Ipv6(a))) => format!("[{a}]"),
        (Some(p), _) => format!("{host}:{p}"),
        (None, _) => host.clone(),
    };
    let mut path = u.path().to_string();
    if let Some(q) = u.query() {
        path.push('?');
        path.push_str(q);
    }
    Ok((scheme, host, port, authority, path))
}

/// The address of `host`, IPv4 first.
pub(crate) fn resolve(host: &str, port: u16) -> Result<SocketAddr, PlanError> {
    (host, port)
        .to_socket_addrs()
        .map_err(|e| PlanError::Resolve {
            host: host.to_string(),
            why: e.to_string(),
        })?
        .min_by_key(|a| a.is_ipv6()) // prefer IPv4, as curl and wrk do
        .ok_or_else(|| PlanError::Resolve {
            host: host.to_string(),
            why: "no addresses".into(),
        })
}

/// How a response is checked beyond its framing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Expect {
    /// Expected status only.
    Status,
    /// Expected status and exact decoded body size.
    Size(u64),
    /// Expected status, body size, and XXH3-64 of the body.
    Checksum { size: u64, xxh3: u64 },
}

/// One URL of the plan with its share and what its responses must be.
#[derive(Debug, Clone)]
pub struct UrlPlan {
    pub target: Target,
    /// Relative weight for the pick (> 0): a URL's share of requests is its
    /// weight over the sum (class percentages and Zipf popularity fold in).
    pub weight: f64,
    /// Index into [`ClientPlan::classes`].
    pub class: usize,
    pub expect_status: u16,
    pub expect: Expect,
    /// The request sent: 0 a plain GET, k the plan's `requests[k − 1]`
    /// (method, headers, body; see `request.rs`).
    pub request: u32,
}

impl UrlPlan {
    /// A plain GET of `target` whose responses must be 200 (framing and
    /// status checked), weight 1 in class 0: one URL of a plan with one.
    pub fn get(target: Target) -> UrlPlan {
        UrlPlan {
            target,
            weight: 1.0,
            class: 0,
            expect_status: 200,
            expect: Expect::Status,
            request: 0,
        }
    }
}

/// Which HTTP version and connection behaviour each new connection draws
/// (docs/connections.md; percentages are per connection, as in WebBench).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ConnectionPolicy {
    /// Share of connections that speak HTTP/1.0, in percent.
    pub http10_percent: u8,
    /// Whether HTTP/1.0 connections ask for keep-alive.
    pub http10_keepalive: bool,
    /// Share of HTTP/1.1 connections that are persistent (the rest carry one
    /// request with `Connection: close`), in percent.
    pub persistent_percent: u8,
    /// Requests per persistent connection, drawn uniformly in min..=max when
    /// the connection opens; `None` = unlimited (the server decides).
    pub requests_per_connection: Option<(u32, u32)>,
}

impl Default for ConnectionPolicy {
    /// The defaults of docs/connections.md: HTTP/1.1, 100 % persistent,
    /// unlimited requests.
    fn default() -> Self {
        ConnectionPolicy {
            http10_percent: 0,
            http10_keepalive: false,
            persistent_percent: 100,
            requests_per_connection: None,
        }
    }
}

impl ConnectionPolicy {
    /// The share of connections of each [`ConnectionKind`] this policy
    /// draws, in percent. These are per connection: requests follow them
    /// only when every connection carries the same number of requests.
    pub fn configured_shares(&self) -> [f64; ConnectionKind::COUNT] {
        let h10 = f64::from(self.http10_percent) / 100.0;
        let persistent = f64::from(self.persistent_percent) / 100.0;
        let mut s = [0.0; ConnectionKind::COUNT];
        let http10_kind = ConnectionKind::of(true, self.http10_keepalive);
        s[http10_kind as usize] = h10 * 100.0;
        s[ConnectionKind::Http11Persistent as usize] = (1.0 - h10) * persistent * 100.0;
        s[ConnectionKind::Http11Close as usize] = (1.0 - h10) * (1.0 - persistent) * 100.0;
        s
    }

    /// Observed shares of requests by kind (0 when none completed) next to
    /// the configured shares, in `ConnectionKind::ALL`'s order.
    pub fn request_shares(&self, requests_by_kind: &[u64; ConnectionKind::COUNT]) -> Vec<KindShare> {
        let total = requests_by_kind.iter().sum::<u64>().max(1);
        let configured = self.configured_shares();
        ConnectionKind::ALL
            .iter()
            .map(|&kind| KindShare {
                kind,
                requests: requests_by_kind[kind as usize],
                percent: requests_by_kind[kind as usize] as f64 * 100.0 / total as f64,
                configured_percent: configured[kind as usize],
            })
            .collect()
    }
}

/// Requests of one [`ConnectionKind`]: how many, their observed share and
/// the share the connection policy draws.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KindShare {
    pub kind: ConnectionKind,
    pub requests: u64,
    pub percent: f64,
    pub configured_percent: f64,
}

impl KindShare {
    /// Points by which the observed share may differ from the configured
    /// one before benchlab warns.
    pub const TOLERANCE_POINTS: f64 = 5.0;

    pub fn off(&self) -> bool {
        (self.percent - self.configured_percent).abs() > Self::TOLERANCE_POINTS
    }
}

/// Says which observed request shares differ from the configured ones by
/// more than [`KindShare::TOLERANCE_POINTS`] and why; `None` when all are
/// close. `setting` names the knob that bounds requests per connection
/// where the caller runs (a flag or a suite key).
pub fn share_warning(shares: &[KindShare], setting: &str) -> Option<String> {
    if shares.iter().all(|s| s.requests == 0) {
        return None;
    }
    let off: Vec<String> = shares
        .iter()
        .filter(|s| s.off())
        .map(|s| {
            format!(
                "{} {:.2} % of requests (configured {:.0} % of connections)",
                s.kind.label(),
                s.percent,
                s.configured_percent
            )
        })
        .collect();
    if off.is_empty() {
        return None;
    }
    Some(format!(
        "requests by connection kind differ from the configured shares by more than {:.0} points: {}. \
         HTTP version and persistence are drawn per connection (WebBench's rule), and a persistent \
         connection carries many requests while a closing one carries one, so persistent connections \
         take most requests. To bring request shares near the configured ones, bound the requests per \
         persistent connection with {setting}",
        KindShare::TOLERANCE_POINTS,
        off.join(", ")
    ))
}

/// TLS options for `https://` targets.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TlsOptions {
    /// Accept any server certificate (self-signed test servers).
    pub insecure: bool,
    /// Share of new connections that offer to resume a session, in percent.
    pub resumption_percent: u8,
    /// Extra trusted CA certificates, PEM file.
    pub ca_file: Option<std::path::PathBuf>,
}

/// When a run ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Stop {
    /// After this long from the start; requests then unfinished are
    /// reported as in flight.
    After(Duration),
    /// After exactly this many requests completed (successful or failed).
    Requests(u64),
}

/// How requests are started: the load model of a client (as oha's
/// `QueryLimit` separates a closed loop of N users from a rate).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Load {
    /// [`ClientPlan::virtual_users`] closed-loop users: each sends its
    /// next request when the previous one ended (and its think time
    /// passed), so a slow server slows the load down.
    Closed,
    /// Requests sent on a schedule whatever the server does
    /// (docs/counting.md, "Open loop").
    Open(OpenLoop),
}

/// An open-loop schedule: `rate` requests a second, spaced by `arrival`,
/// with at most `max_in_flight` outstanding.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct OpenLoop {
    /// Requests per second over the whole client (its OS threads share it).
    pub rate: f64,
    pub arrival: Arrival,
    /// Requests outstanding at most (connecting, writing or reading); a
    /// scheduled send finding them all busy waits, and is counted.
    pub max_in_flight: u32,
}

impl OpenLoop {
    /// The highest rate a plan may ask for: a request every 100 ns.
    pub const MAX_RATE: f64 = 10_000_000.0;
    /// How much later than intended a send may leave and still be on time:
    /// the event loop wakes on a microsecond timer (timerfd), but a loaded
    /// machine adds scheduling noise of about a millisecond.
    pub const LATE_TOLERANCE: Duration = Duration::from_millis(2);
}

/// How an open loop spaces its sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Arrival {
    /// Exactly 1/rate apart.
    Constant,
    /// A Poisson process: exponential gaps of mean 1/rate, drawn from the
    /// plan's seed (the same seed gives the same schedule).
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

/// A request class: requests are counted and timed per class.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ClassPlan {
    pub name: String,
}

/// Everything one client does in one run (one mix), as plain data: what a
/// controller sends an agent and what a results file records. It is the one
/// definition of a client's settings — the controller's plan for the wire
/// (`benchlab_controller::ClientPlan`) carries it as is, with its URL list
/// named by id, and the engine's [`ClientPlan`] adds only the resolved URLs
/// — so a field added here travels to remote agents without another copy
/// to keep in step.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ClientSettings {
    /// Closed-loop virtual users (WebBench's worker threads); unused by an
    /// open loop.
    pub virtual_users: u32,
    /// Closed loop (the users above) or open loop (a rate).
    pub load: Load,
    /// Event-loop OS threads the virtual users are spread over.
    pub os_threads: usize,
    pub stop: Stop,
    /// Only completions in `[from, until)` (offsets from the start) are
    /// counted: the measurement window between ramp-up and ramp-down.
    pub window: (Duration, Duration),
    /// The client's virtual users begin this long after the start (its
    /// random WebBench delay); the window and `Stop::After` still count
    /// from the start, the mix's common instant.
    pub start_delay: Duration,
    pub think_time: Duration,
    /// Virtual users start evenly over this span after `start_delay`
    /// (zero: all at once, paced only by the arrival slots).
    pub ramp_up: Duration,
    /// Total time allowed for one request, connect included.
    pub timeout: Duration,
    pub connection: ConnectionPolicy,
    /// Size of each read from a socket (WebBench's receive buffer).
    pub receive_buffer: usize,
    /// Extra request headers, `Name: value` each.
    pub headers: Vec<(String, String)>,
    /// Local addresses to bind connections to, round robin; empty = any.
    pub source_addresses: Vec<IpAddr>,
    pub tls: TlsOptions,
    /// Seed for URL, version and connection-length draws.
    pub seed: u64,
    /// HTTP/2 instead of HTTP/1 (docs/connections.md, "HTTP/2"); `None`:
    /// HTTP/1 by `connection`.
    #[serde(default)]
    pub http2: Option<H2Plan>,
    /// The number of this client's first virtual user in its mix (a flow's
    /// users are numbered across clients: a feeder's `index` mode gives
    /// user k row k).
    #[serde(default)]
    pub first_user: u64,
    /// Each virtual user's first connection is opened before the start,
    /// so the start sends requests, not handshakes (docs/counting.md,
    /// "Start spread"). Closed-loop HTTP/1 over `http://` only.
    #[serde(default)]
    pub preconnect: bool,
}

impl ClientSettings {
    /// How much earlier than otherwise the start must be given for
    /// `preconnect` to open every user's connection before it: the connects
    /// are started one after another (tens of µs each), then waited for
    /// together (a round trip). Zero without `preconnect`.
    pub fn preconnect_lead(&self) -> Duration {
        if self.preconnect {
            Duration::from_millis(50) + Duration::from_micros(20) * self.virtual_users
        } else {
            Duration::ZERO
        }
    }
}

impl Default for ClientSettings {
    /// The documented defaults (docs/connections.md, docs/counting.md)
    /// and a 10 s run.
    fn default() -> Self {
        ClientSettings {
            virtual_users: 10,
            load: Load::Closed,
            os_threads: 1,
            stop: Stop::After(Duration::from_secs(10)),
            window: (Duration::ZERO, Duration::MAX),
            start_delay: Duration::ZERO,
            think_time: Duration::ZERO,
            ramp_up: Duration::ZERO,
            timeout: Duration::from_secs(5),
            connection: ConnectionPolicy::default(),
            receive_buffer: 64 * 1024,
            headers: Vec::new(),
            source_addresses: Vec::new(),
            tls: TlsOptions::default(),
            seed: 1,
            http2: None,
            first_user: 0,
            preconnect: false,
        }
    }
}

/// A client's [`ClientSettings`] with its URLs resolved: the form the event
/// loops run. It dereferences to its settings (`plan.virtual_users`), so
/// the hot loop reads one struct and the settings stay single-sourced.
#[derive(Debug, Clone)]
pub struct ClientPlan {
    /// Shared, so the clients of a mix hold one copy of a large URL list;
    /// compact (`urls.rs`: ≤ 64 bytes a URL).
    pub urls: std::sync::Arc<UrlTable>,
    pub classes: Vec<ClassPlan>,
    /// The requests other than a plain GET that the URLs name
    /// ([`UrlPlan::request`]).
    pub requests: Vec<crate::request::RequestSpec>,
    /// A flow workload's compiled flow: each virtual user walks it, and
    /// URL k (class k) is its step k (docs/flows.md).
    pub flow: Option<std::sync::Arc<benchlab_flow::Flow>>,
    /// Everything else: plain, serialisable data.
    pub settings: ClientSettings,
}

impl std::ops::Deref for ClientPlan {
    type Target = ClientSettings;
    fn deref(&self) -> &ClientSettings {
        &self.settings
    }
}

impl std::ops::DerefMut for ClientPlan {
    fn deref_mut(&mut self) -> &mut ClientSettings {
        &mut self.settings
    }
}

/// How an HTTP/2 client uses its connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct H2Plan {
    /// Connections of the client; its virtual users are spread over them
    /// (user j on connection j mod C).
    pub connections: u32,
    /// Concurrent streams per connection at most (the server's
    /// SETTINGS_MAX_CONCURRENT_STREAMS may lower it).
    pub streams: u32,
    /// Flow-control window benchlab grants per stream and per connection,
    /// in bytes (h2load's default is 2³⁰ − 1).
    pub window: u32,
    /// The classes (bit i: class i) whose URLs speak HTTP/2; 0: every
    /// class. With some classes left out the client is a mixed one: its
    /// users are split between the two protocols in proportion to the URL
    /// weights of each, a user speaking one protocol for the whole run (as
    /// a browser does with a site), and each protocol gets event loops of
    /// its own (`Client::start`).
    #[serde(default)]
    pub classes: u64,
    /// HTTP/3 over QUIC instead of HTTP/2 (`--http 3`, `http = "3"`):
    /// the same connections, streams and classes, each connection a UDP
    /// socket and a QUIC connection (docs/http3.md). The window is
    /// HTTP/2's only.
    #[serde(default)]
    pub h3: bool,
    /// With `h3` false: the classes (bit i: class i) among `classes` that
    /// speak HTTP/3 instead of HTTP/2 — a client of both multiplexed
    /// protocols, each on event loops of its own (`Client::start`); 0:
    /// none.
    #[serde(default)]
    pub h3_classes: u64,
}

impl H2Plan {
    pub const DEFAULT_WINDOW: u32 = (1 << 30) - 1;
}

impl Default for H2Plan {
    /// One connection with one stream and h2load's window.
    fn default() -> Self {
        H2Plan {
            connections: 1,
            streams: 1,
            window: H2Plan::DEFAULT_WINDOW,
            classes: 0,
            h3: false,
            h3_classes: 0,
        }
    }
}

impl H2Plan {
    /// Of `users` users loading `urls`, those that speak HTTP/2: all of
    /// them, or in a mixed client the HTTP/2 URLs' share of the weights,
    /// rounded, at least one user of each protocol.
    pub fn users(&self, urls: &UrlTable, users: u32) -> u32 {
        let (mut h2, mut all) = (0.0, 0.0);
        for c in 0..urls.classes() {
            all += urls.class_weight(c);
            if self.speaks(c) {
                h2 += urls.class_weight(c);
            }
        }
        if h2 >= all || users < 2 {
            return users;
        }
        ((f64::from(users) * h2 / all).round() as u32).clamp(1, users - 1)
    }

    /// Whether the URLs of `class` speak HTTP/2.
    pub fn speaks(&self, class: usize) -> bool {
        self.classes == 0 || (class < 64 && self.classes & (1 << class) != 0)
    }
}

impl ClientPlan {
    /// A plan for `urls` with the documented defaults (docs/connections.md,
    /// docs/counting.md) and a 10 s run.
    pub fn new(urls: impl Into<UrlTable>, classes: Vec<ClassPlan>) -> Self {
        ClientPlan {
            urls: std::sync::Arc::new(urls.into()),
            classes,
            requests: Vec::new(),
            flow: None,
            settings: ClientSettings::default(),
        }
    }

    /// Request slots the client's OS threads share: its virtual users in a
    /// closed loop, the cap on requests in flight in an open one.
    pub fn slots(&self) -> u32 {
        match self.load {
            Load::Closed => self.virtual_users,
            Load::Open(o) => o.max_in_flight,
        }
    }

    /// Why `preconnect` cannot apply to this plan, if it is set and
    /// cannot: it opens each closed-loop HTTP/1 user's one plain
    /// connection before the start (`Http1::preconnect`).
    pub fn preconnect_refusal(&self) -> Option<&'static str> {
        if !self.preconnect {
            return None;
        }
        let https = self.urls.origins().iter().any(|o| o.scheme == Scheme::Https);
        preconnect_refusal(&self.load, self.http2.is_some(), self.flow.is_some(), https)
    }

    /// Checks the plan; every error names what was expected.
    pub fn validate(&self) -> Result<(), PlanError> {
        let bad = |s: String| Err(PlanError::Invalid(s));
        if self.urls.is_empty() {
            return bad("no URL to load".into());
        }
        if self.virtual_users == 0 {
            return bad("the number of threads (virtual users) must be at least 1".into());
        }
        if self.os_threads == 0 {
            return bad("the number of OS threads must be at least 1".into());
        }
        if let Load::Open(o) = self.load {
            if !(o.rate > 0.0 && o.rate <= OpenLoop::MAX_RATE) {
                // MAX_RATE, written for people.
                return bad(format!(
                    "rate {}: expected requests per second above 0 and at most 10,000,000",
                    o.rate
                ));
            }
            if o.max_in_flight == 0 {
                return bad("the cap on requests in flight must be at least 1".into());
            }
            if matches!(self.stop, Stop::Requests(_)) {
                return bad("an open loop (a rate) runs for a duration, not a number of requests".into());
            }
            if !self.think_time.is_zero() || !self.ramp_up.is_zero() {
                return bad("an open loop (a rate) has no think time and no ramp-up of users".into());
            }
        }
        if self.receive_buffer < 64 {
            return bad(format!(
                "receive buffer {} is too small: expected at least 64 bytes",
                self.receive_buffer
            ));
        }
        if self.timeout.is_zero() {
            return bad("the request timeout must be above zero".into());
        }
        let c = &self.connection;
        if c.http10_percent > 100 || c.persistent_percent > 100 || self.tls.resumption_percent > 100 {
            return bad("percentages must be between 0 and 100".into());
        }
        if let Some((min, max)) = c.requests_per_connection {
            if min == 0 || min > max {
                return bad(format!(
                    "requests per connection {min}..{max}: expected 1 <= MIN <= MAX"
                ));
            }
        }
        if let Some(w) = self.urls.bad_weight() {
            return bad(w.to_string());
        }
        // Class and request are per kind: checking the kinds checks every URL.
        if let Some(u) = self.urls.kind_examples().find(|u| u.class >= self.classes.len()) {
            return bad(format!("{}: class index {} out of range", u.url(), u.class));
        }
        if let Some(u) = self
            .urls
            .kind_examples()
            .find(|u| u.request as usize > self.requests.len())
        {
            return bad(format!("{}: request {} out of range", u.url(), u.request));
        }
        crate::request::check_headers(&self.headers).map_err(|e| PlanError::Invalid(e.0))?;
        if let Some((n, _)) = self
            .headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("content-length") || n.eq_ignore_ascii_case("transfer-encoding"))
        {
            return bad(format!(
                "header `{n}`: benchlab frames request bodies itself (Content-Length from the body, or chunked); drop the header"
            ));
        }
        for r in &self.requests {
            r.validate().map_err(|e| PlanError::Invalid(e.0))?;
        }
        if let Some(why) = self.preconnect_refusal() {
            return bad(format!("preconnect cannot apply: {why}"));
        }
        if let Some(h2) = self.http2 {
            if h2.connections == 0 || h2.streams == 0 {
                return bad("HTTP/2 needs at least 1 connection and 1 stream per connection".into());
            }
            if h2.window == 0 || h2.window > crate::h2::frame::MAX_WINDOW {
                return bad(format!("HTTP/2 window {}: expected 1 to 2147483647 bytes", h2.window));
            }
            if self.connection.http10_percent > 0 {
                return bad("HTTP/2 and a share of HTTP/1.0 connections cannot be mixed in one client".into());
            }
            if let Some(u) = self
                .urls
                .kind_examples()
                .find(|u| h2.speaks(u.class) && u.request > 0 && self.requests[u.request as usize - 1].chunked)
            {
                // HTTP/2 frames a body in DATA frames; it has no chunked coding.
                return bad(format!(
                    "{}: chunked is HTTP/1.1's framing; over HTTP/2 a body goes in DATA frames: drop chunked",
                    u.url()
                ));
            }
            // A connection carries streams of one origin: its users' URLs
            // must all name it.
            let mut h2_urls = self.urls.kind_examples().filter(|u| h2.speaks(u.class));
            let Some(first) = h2_urls.next() else {
                return bad("HTTP/2 is asked for classes that have no URL".into());
            };
            let mixed = self.urls.kind_examples().any(|u| !h2.speaks(u.class));
            if let (true, Load::Open(o)) = (mixed, self.load) {
                if o.max_in_flight < 2 {
                    return bad(
                        "an open loop over HTTP/1 and HTTP/2 classes needs at least 2 requests in flight (one of each protocol)".into(),
                    );
                }
            }
            if mixed && matches!(self.stop, Stop::Requests(_)) {
                return bad(
                    "a client of HTTP/1 and HTTP/2 classes runs for a duration, not a number of requests".into(),
                );
            }
            if let Some(other) = h2_urls.find(|u| {
                let (a, b) = (u.target, first.target);
                a.scheme != b.scheme || a.addr != b.addr || a.authority != b.authority
            }) {
                return bad(format!(
                    "HTTP/2 runs load one origin: {} and {} differ in scheme, host or port",
                    first.url(),
                    other.url()
                ));
            }
        }
        if let Stop::Requests(0) = self.stop {
            return bad("--requests must be at least 1".into());
        }
        let run_length = match self.stop {
            Stop::After(d) => d,
            Stop::Requests(_) => Duration::ZERO,
        };
        for (what, d) in [
            ("the run length", run_length),
            ("the request timeout", self.timeout),
            ("the think time", self.think_time),
            ("the start delay", self.start_delay),
        ] {
            if d > MAX_DURATION {
                return bad(format!(
                    "{what} {} s is too long: expected at most {} s (7 days)",
                    d.as_secs(),
                    MAX_DURATION.as_secs()
                ));
            }
        }
        Ok(())
    }
}

/// Why `preconnect` cannot apply to a plan of this load, protocol, flow
/// and scheme: what [`ClientPlan::preconnect_refusal`] decides, asked
/// from the parts before the plan is built (a command refuses the flag
/// before its preflight sends anything).
pub fn preconnect_refusal(load: &Load, http2: bool, flow: bool, https: bool) -> Option<&'static str> {
    if matches!(load, Load::Open(_)) {
        Some("an open loop's connections follow its schedule")
    } else if http2 {
        Some("it opens HTTP/1 connections only")
    } else if flow {
        Some("a flow's users connect to each step's origin as they walk")
    } else if https {
        Some("it opens plain http:// connections only (a TLS handshake is not done before the start)")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(url: &str) -> ClientPlan {
        let t = Target::parse(url).unwrap();
        ClientPlan::new(vec![UrlPlan::get(t)], vec![ClassPlan { name: "all".into() }])
    }

    #[test]
    fn parses_urls() {
        let t = Target::parse("http://127.0.0.1:8080/a/b?x=1").unwrap();
        assert_eq!(t.authority, "127.0.0.1:8080");
        assert_eq!(t.path, "/a/b?x=1");
        assert_eq!(t.addr, "127.0.0.1:8080".parse().unwrap());
        let t = Target::parse("https://localhost/").unwrap();
        assert_eq!(t.scheme, Scheme::Https);
        assert_eq!(t.authority, "localhost");
        assert_eq!(t.addr.port(), 443);
        assert!(Target::parse("ftp://x/").is_err());
        assert!(Target::parse("not a url").is_err());
        assert!(Target::parse("http://u:p@127.0.0.1/").is_err());
        assert_eq!(
            Target::parse("localhost:8080/a").unwrap_err().to_string(),
            "`localhost:8080/a` is not a URL benchlab can load: http:// is missing: \
             expected http://localhost:8080/a (or https://localhost:8080/a for TLS)"
        );
        assert!(matches!(
            Target::parse("http://nosuch.invalid/"),
            Err(PlanError::Resolve { host, .. }) if host == "nosuch.invalid"
        ));
    }

    #[test]
    fn shares_by_connection_kind() {
        let policy = ConnectionPolicy {
            http10_percent: 30,
            http10_keepalive: false,
            persistent_percent: 100,
            requests_per_connection: None,
        };
        assert_eq!(policy.configured_shares(), [30.0, 0.0, 70.0, 0.0]);
        // The run: 2 HTTP/1.0 requests of 5,000.
        let shares = policy.request_shares(&[2, 0, 4998, 0]);
        assert_eq!(shares[0].requests, 2);
        assert!((shares[0].percent - 0.04).abs() < 1e-9);
        let w = share_warning(&shares, "--requests-per-connection").unwrap();
        assert!(
            w.contains("HTTP/1.0 close 0.04 % of requests (configured 30 % of connections)"),
            "{w}"
        );
        assert!(w.contains("HTTP/1.1 persistent 99.96 %"), "{w}");
        assert!(w.contains("--requests-per-connection"), "{w}");
        // Within 5 points: no warning.
        assert_eq!(share_warning(&policy.request_shares(&[27, 0, 73, 0]), "x"), None);
        let none = policy.request_shares(&[0; 4]);
        assert_eq!(none.iter().map(|s| s.percent).sum::<f64>(), 0.0);
        assert_eq!(share_warning(&none, "x"), None);
        let mixed = ConnectionPolicy {
            http10_percent: 20,
            http10_keepalive: true,
            persistent_percent: 50,
            requests_per_connection: Some((1, 1)),
        };
        assert_eq!(mixed.configured_shares(), [0.0, 20.0, 40.0, 40.0]);
    }

    #[test]
    fn validates() {
        let mut p = plan("http://127.0.0.1/");
        assert!(p.validate().is_ok());
        p.connection.requests_per_connection = Some((5, 2));
        assert!(p.validate().is_err());
        p.connection.requests_per_connection = None;
        p.headers.push(("Bad\r\nName".into(), "v".into()));
        assert!(p.validate().is_err());
    }

    #[test]
    fn http2_plans_name_one_origin() {
        let mut p = plan("http://127.0.0.1:81/a");
        p.http2 = Some(H2Plan {
            connections: 1,
            streams: 4,
            window: H2Plan::DEFAULT_WINDOW,
            classes: 0,
            h3: false,
            h3_classes: 0,
        });
        assert!(p.validate().is_ok());
        let mut urls = p.urls.to_plans();
        urls.push(UrlPlan {
            target: Target::parse("http://127.0.0.1:82/b").unwrap(),
            ..urls[0].clone()
        });
        p.urls = std::sync::Arc::new(urls.into());
        let e = p.validate().unwrap_err().to_string();
        assert!(e.contains("HTTP/2 runs load one origin"), "{e}");
        // Class 1 over HTTP/2 at a quarter of the weight: 2 of 8 users;
        // never none of either protocol.
        let h2 = H2Plan {
            classes: 1 << 1,
            ..H2Plan::default()
        };
        let mut urls = p.urls.to_plans();
        urls[0].weight = 3.0;
        urls[1].class = 1;
        assert!(h2.speaks(1) && !h2.speaks(0) && H2Plan::default().speaks(0));
        assert_eq!(h2.users(&UrlTable::from(urls.clone()), 8), 2);
        assert_eq!(h2.users(&UrlTable::from(urls.clone()), 2), 1);
        urls[1].weight = 0.001;
        assert_eq!(h2.users(&UrlTable::from(urls.clone()), 100), 1);
        p.http2 = Some(H2Plan {
            connections: 0,
            streams: 4,
            window: 1,
            classes: 0,
            h3: false,
            h3_classes: 0,
        });
        assert!(p.validate().is_err());
    }

    #[test]
    fn validates_open_loops() {
        let mut p = plan("http://127.0.0.1/");
        let open = OpenLoop {
            rate: 100.0,
            arrival: Arrival::Poisson,
            max_in_flight: 50,
        };
        p.load = Load::Open(open);
        assert!(p.validate().is_ok());
        assert_eq!(p.slots(), 50);
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY, 2e7] {
            p.load = Load::Open(OpenLoop { rate: bad, ..open });
            let e = p.validate().unwrap_err().to_string();
            assert!(e.contains("expected requests per second above 0"), "{bad}: {e}");
        }
        p.load = Load::Open(OpenLoop {
            max_in_flight: 0,
            ..open
        });
        assert!(p.validate().is_err());
        p.load = Load::Open(open);
        p.stop = Stop::Requests(10);
        assert!(p.validate().unwrap_err().to_string().contains("runs for a duration"));
        p.stop = Stop::After(Duration::from_secs(1));
        p.think_time = Duration::from_millis(5);
        assert!(p.validate().unwrap_err().to_string().contains("no think time"));
        // HTTP/2 runs an open loop too, and one split with HTTP/1 classes
        // in one client, given a request in flight for each protocol.
        p.think_time = Duration::ZERO;
        p.http2 = Some(H2Plan::default());
        assert!(p.validate().is_ok());
        let mut urls = p.urls.to_plans();
        urls.push(UrlPlan {
            class: 1,
            ..urls[0].clone()
        });
        p.urls = std::sync::Arc::new(urls.into());
        p.classes.push(ClassPlan { name: "h2".into() });
        p.http2 = Some(H2Plan {
            classes: 0b10,
            ..H2Plan::default()
        });
        assert!(p.validate().is_ok());
        p.load = Load::Open(OpenLoop {
            max_in_flight: 1,
            ..open
        });
        assert!(p
            .validate()
            .unwrap_err()
            .to_string()
            .contains("HTTP/1 and HTTP/2 classes needs at least 2 requests in flight"));
    }

    #[test]
    fn refuses_durations_that_would_overflow_an_instant() {
        let mut p = plan("http://127.0.0.1/");
        p.stop = Stop::After(MAX_DURATION);
        p.think_time = MAX_DURATION;
        assert!(p.validate().is_ok());
        p.stop = Stop::After(Duration::from_secs(u64::MAX));
        assert_eq!(
            p.validate().unwrap_err().to_string(),
            format!(
                "the run length {} s is too long: expected at most 604800 s (7 days)",
                u64::MAX
            )
        );
        p.stop = Stop::Requests(5);
        p.timeout = MAX_DURATION + Duration::from_nanos(1);
        assert!(p.validate().unwrap_err().to_string().contains("the request timeout"));
    }
}
