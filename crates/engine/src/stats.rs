//! What a client counts, exactly as docs/counting.md's "The counted fields"
//! defines it, and how counts from many OS threads and seconds are merged.
//!
//! Each worker OS thread owns one [`ThreadStats`]; nothing in it is shared,
//! so recording a request is a few adds and one HDR `record` — no lock, no
//! atomic, no allocation. Once a second the thread sends a copy to the
//! collector and resets it ([`Snapshot`]); adding snapshots is exact
//! (histograms add bucket by bucket), so totals never depend on how the work
//! was split over threads or seconds.

use hdrhistogram::Histogram;
use std::fmt;
use std::time::Duration;

/// The canonical error kinds (docs/counting.md, "Error kinds"), in their
/// documented order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ErrorKind {
    /// The server refused the TCP connection.
    ConnectRefused,
    /// The TCP connection was not established within the request timeout.
    ConnectTimeout,
    /// The connection was reset (RST), or closed before any response byte.
    Reset,
    /// The request did not complete within the timeout.
    Timeout,
    /// The response's status was not the expected one.
    Status,
    /// The response could not be framed (bad status line, header, length,
    /// chunk syntax, a head cut short, bytes after the response).
    Framing,
    /// The connection closed before the body was complete.
    ShortBody,
    /// The body's size or checksum differs from what is expected.
    WrongBody,
    /// The response head was over 64 KiB.
    HeaderTooLarge,
    /// The TLS handshake or record layer failed.
    Tls,
    /// The client could not bind its source address (or find a free local
    /// port for it): a failure of the load generator, not of the server.
    Bind,
    /// HTTP/2: the server reset the stream (RST_STREAM); the codes are
    /// counted in [`ConnCounters::stream_reset_codes`].
    StreamReset,
    /// HTTP/2: the server's GOAWAY refused the stream, and refused it
    /// again on the new connection it was retried on.
    GoAway,
    /// HTTP/2: flow control broke (the server sent beyond benchlab's
    /// window, or set a window over 2³¹ − 1).
    FlowControl,
    /// The request's body could not be sent completely: the connection
    /// failed, or the server answered, after the head and before the
    /// body's last byte.
    BodyIncomplete,
    /// A flow step's check failed, or its capture found nothing
    /// (docs/flows.md): counted for the step; the user's flow is abandoned.
    CheckFailed,
    /// HTTP/3: the server closed the QUIC connection (CONNECTION_CLOSE)
    /// while the request was in flight; the codes are counted in
    /// [`QuicCounters`].
    QuicClose,
    /// HTTP/3: the QUIC handshake did not finish within the request
    /// timeout (the server never answered, or stopped answering).
    HandshakeTimeout,
    /// HTTP/3: the server speaks no QUIC version benchlab does (a Version
    /// Negotiation packet without QUIC v1).
    VersionNegotiation,
}

impl ErrorKind {
    /// Number of kinds.
    pub const COUNT: usize = 19;
    /// All kinds, in the documented order.
    pub const ALL: [ErrorKind; Self::COUNT] = [
        ErrorKind::ConnectRefused,
        ErrorKind::ConnectTimeout,
        ErrorKind::Reset,
        ErrorKind::Timeout,
        ErrorKind::Status,
        ErrorKind::Framing,
        ErrorKind::ShortBody,
        ErrorKind::WrongBody,
        ErrorKind::HeaderTooLarge,
        ErrorKind::Tls,
        ErrorKind::Bind,
        ErrorKind::StreamReset,
        ErrorKind::GoAway,
        ErrorKind::FlowControl,
        ErrorKind::BodyIncomplete,
        ErrorKind::CheckFailed,
        ErrorKind::QuicClose,
        ErrorKind::HandshakeTimeout,
        ErrorKind::VersionNegotiation,
    ];

    /// The name used in JSON, CSV and reports.
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::ConnectRefused => "connect_refused",
            ErrorKind::ConnectTimeout => "connect_timeout",
            ErrorKind::Reset => "reset",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Status => "status",
            ErrorKind::Framing => "framing",
            ErrorKind::ShortBody => "short_body",
            ErrorKind::WrongBody => "wrong_body",
            ErrorKind::HeaderTooLarge => "header_too_large",
            ErrorKind::Tls => "tls",
            ErrorKind::Bind => "bind",
            ErrorKind::StreamReset => "stream_reset",
            ErrorKind::GoAway => "goaway",
            ErrorKind::FlowControl => "flow_control",
            ErrorKind::BodyIncomplete => "body_incomplete",
            ErrorKind::CheckFailed => "check_failed",
            ErrorKind::QuicClose => "quic_close",
            ErrorKind::HandshakeTimeout => "handshake_timeout",
            ErrorKind::VersionNegotiation => "version_negotiation",
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Highest latency the histograms hold: one hour, in microseconds. Larger
/// values saturate to it (a request cannot last longer than its timeout).
pub const LATENCY_MAX_US: u64 = 3_600_000_000;

/// A latency histogram: microseconds, 3 significant digits (docs/counting.md).
pub fn new_latency_histogram() -> Histogram<u64> {
    // Bounds are constants that hdrhistogram accepts.
    Histogram::new_with_bounds(1, LATENCY_MAX_US, 3).expect("valid constant histogram bounds")
}

/// The latency histogram's bucket layout, as hdrhistogram lays out
/// `new_latency_histogram`'s bounds (lowest 1 µs, 3 significant figures):
/// 2^11 sub-buckets in the first bucket, the upper 2^10 of them in each
/// one after it. `latency_tally_matches_the_histogram` holds it to the
/// crate's own indexing.
const SUB_BUCKET_BITS: u32 = 11;
const HALF_BUCKET_BITS: u32 = SUB_BUCKET_BITS - 1;

/// The bucket `us` falls in (hdrhistogram's `index_for`, unit magnitude 0).
#[inline]
fn bucket_of(us: u64) -> usize {
    let bucket = (64 - SUB_BUCKET_BITS) - (us | ((1 << SUB_BUCKET_BITS) - 1)).leading_zeros();
    let sub = (us >> bucket) as usize;
    ((bucket as usize + 1) << HALF_BUCKET_BITS) + sub - (1 << HALF_BUCKET_BITS)
}

/// The lowest value of bucket `i`: recorded in its stead, it lands in the
/// same bucket, and a histogram's figures (counts, min, max, mean,
/// quantiles) are its buckets'.
fn bucket_floor(i: usize) -> u64 {
    let half = 1usize << HALF_BUCKET_BITS;
    let bucket = (i >> HALF_BUCKET_BITS) as i64 - 1;
    let sub = (i & (half - 1)) + half;
    if bucket < 0 {
        (sub - half) as u64
    } else {
        (sub as u64) << bucket
    }
}

/// How many buckets a latency histogram has (asked of one once).
fn latency_buckets() -> usize {
    static BUCKETS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *BUCKETS.get_or_init(|| new_latency_histogram().distinct_values())
}

/// One class's successful latencies of the current second, counted in the
/// latency histogram's own buckets and added to it in one pass
/// (`settle`), before anything reads the histogram.
///
/// Written by hand because it is the request loop: an HDR record
/// (`saturating_record`) costs about 105 instructions (bounds checks,
/// min/max and total kept at each record), a bucket's increment here
/// about 15. The result is the same histogram, bucket for bucket
/// (`latency_tally_matches_the_histogram`). Counts are 16-bit, so a
/// class's tally is 46 KiB, allocated with the loop (the request loop
/// allocates nothing); a bucket that fills is added to the histogram at
/// once.
#[derive(Debug)]
pub(crate) struct LatencyTally {
    counts: Vec<u16>,
    /// Buckets outside `lo..hi` are zero.
    lo: usize,
    hi: usize,
}

impl Default for LatencyTally {
    fn default() -> Self {
        LatencyTally {
            counts: vec![0; latency_buckets()],
            lo: usize::MAX,
            hi: 0,
        }
    }
}

impl LatencyTally {
    /// Counts `us`, as `h.saturating_record(us)` would (`h`, a latency
    /// histogram, is the one the tally settles into).
    #[inline]
    pub(crate) fn record(&mut self, h: &mut Histogram<u64>, us: u64) {
        let i = bucket_of(us);
        // Past the histogram's last bucket, the histogram saturates it.
        let Some(c) = self.counts.get_mut(i) else {
            return h.saturating_record(us);
        };
        if *c == u16::MAX {
            // In range, so the record cannot fail.
            let _ = h.record_n(bucket_floor(i), u64::from(u16::MAX));
            *c = 0;
        }
        *c += 1;
        self.lo = self.lo.min(i);
        self.hi = self.hi.max(i + 1);
    }

    /// Adds the counts to `h` and empties the tally.
    pub(crate) fn settle(&mut self, h: &mut Histogram<u64>) {
        if self.lo >= self.hi {
            return;
        }
        for (i, c) in self.counts[self.lo..self.hi].iter_mut().enumerate() {
            if *c != 0 {
                let _ = h.record_n(bucket_floor(self.lo + i), u64::from(std::mem::take(c)));
            }
        }
        self.lo = usize::MAX;
        self.hi = 0;
    }
}

/// Counters of one class (or of a whole client, once merged).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Counters {
    /// Successful requests completed inside the measurement window.
    pub requests: u64,
    /// Failed requests by [`ErrorKind`] (index = position in `ErrorKind::ALL`).
    pub errors: [u64; ErrorKind::COUNT],
    /// Wire bytes of successful responses (status line, headers, framed body,
    /// 1xx responses; TLS plaintext).
    pub bytes: u64,
    /// Decoded body bytes of successful responses.
    pub body_bytes: u64,
    /// Bytes received for failed requests.
    pub error_bytes: u64,
    /// Request bytes written, of every request that ended (a success or
    /// not): request line, headers and body as written (HTTP/2: the
    /// stream's HEADERS and DATA frames).
    #[serde(default)]
    pub bytes_sent: u64,
}

impl Counters {
    pub fn errors_total(&self) -> u64 {
        self.errors.iter().sum()
    }

    pub fn error(&self, kind: ErrorKind) -> u64 {
        self.errors[kind as usize]
    }

    pub fn add(&mut self, o: &Counters) {
        self.requests += o.requests;
        for (a, b) in self.errors.iter_mut().zip(o.errors.iter()) {
            *a += b;
        }
        self.bytes += o.bytes;
        self.body_bytes += o.body_bytes;
        self.error_bytes += o.error_bytes;
        self.bytes_sent += o.bytes_sent;
    }
}

/// Counters and latency histograms of one request class.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct ClassStats {
    pub counters: Counters,
    /// Latency of successful requests, µs.
    #[serde(with = "crate::wire")]
    pub latency: Histogram<u64>,
    /// Latency of failed requests, µs.
    #[serde(with = "crate::wire")]
    pub error_latency: Histogram<u64>,
    /// Open loop only: latency of successful requests from when each was
    /// actually sent (connect start or first byte written), while
    /// `latency` counts from when it was meant to be sent. `None` in a
    /// closed loop, where the two are the same.
    #[serde(with = "crate::wire::option")]
    pub latency_as_sent: Option<Histogram<u64>>,
}

impl Default for ClassStats {
    fn default() -> Self {
        ClassStats {
            counters: Counters::default(),
            latency: new_latency_histogram(),
            error_latency: new_latency_histogram(),
            latency_as_sent: None,
        }
    }
}

impl ClassStats {
    #[inline]
    pub(crate) fn record_success(&mut self, latency: Duration, bytes: u64, body_bytes: u64, sent: u64) {
        self.count_success(bytes, body_bytes, sent);
        self.latency.saturating_record(latency.as_micros() as u64);
    }

    /// A success's counters, its latency recorded elsewhere (a
    /// [`LatencyTally`] of this class).
    #[inline]
    pub(crate) fn count_success(&mut self, bytes: u64, body_bytes: u64, sent: u64) {
        self.counters.requests += 1;
        self.counters.bytes_sent += sent;
        self.counters.bytes += bytes;
        self.counters.body_bytes += body_bytes;
    }

    /// An open-loop request's latency from its actual send.
    #[inline]
    pub(crate) fn record_as_sent(&mut self, latency: Duration) {
        if let Some(h) = self.latency_as_sent.as_mut() {
            h.saturating_record(latency.as_micros() as u64);
        }
    }

    #[inline]
    pub(crate) fn record_error(&mut self, kind: ErrorKind, latency: Duration, bytes: u64, sent: u64) {
        self.counters.errors[kind as usize] += 1;
        self.counters.bytes_sent += sent;
        self.counters.error_bytes += bytes;
        self.error_latency.saturating_record(latency.as_micros() as u64);
    }

    /// Adds another class's counts (exact: histograms add bucket by bucket).
    pub fn add(&mut self, o: &ClassStats) {
        self.counters.add(&o.counters);
        // Both histograms have the same bounds, so adding cannot fail.
        let _ = self.latency.add(&o.latency);
        let _ = self.error_latency.add(&o.error_latency);
        if let Some(h) = &o.latency_as_sent {
            let _ = self.latency_as_sent.get_or_insert_with(new_latency_histogram).add(h);
        }
    }

    fn reset(&mut self) {
        self.counters = Counters::default();
        self.latency.reset();
        self.error_latency.reset();
        if let Some(h) = self.latency_as_sent.as_mut() {
            h.reset();
        }
    }
}

/// How a request travelled: its HTTP version and the kind of connection
/// it went on, as drawn when the connection opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ConnectionKind {
    /// HTTP/1.0 without keep-alive: one request, then the server closes.
    Http10Close,
    /// HTTP/1.0 with `Connection: keep-alive`.
    Http10KeepAlive,
    /// HTTP/1.1 on a persistent connection (its last request, when the
    /// connection's length is bounded, says `Connection: close`).
    Http11Persistent,
    /// HTTP/1.1 on a connection that carries one request with
    /// `Connection: close`.
    Http11Close,
}

impl ConnectionKind {
    pub const COUNT: usize = 4;
    pub const ALL: [ConnectionKind; Self::COUNT] = [
        ConnectionKind::Http10Close,
        ConnectionKind::Http10KeepAlive,
        ConnectionKind::Http11Persistent,
        ConnectionKind::Http11Close,
    ];

    /// The kind of a connection drawn as HTTP/1.0 or not, persistent or not.
    pub fn of(http10: bool, persistent: bool) -> ConnectionKind {
        match (http10, persistent) {
            (true, false) => ConnectionKind::Http10Close,
            (true, true) => ConnectionKind::Http10KeepAlive,
            (false, true) => ConnectionKind::Http11Persistent,
            (false, false) => ConnectionKind::Http11Close,
        }
    }

    /// The name used in JSON.
    pub fn name(self) -> &'static str {
        match self {
            ConnectionKind::Http10Close => "http10_close",
            ConnectionKind::Http10KeepAlive => "http10_keepalive",
            ConnectionKind::Http11Persistent => "http11_persistent",
            ConnectionKind::Http11Close => "http11_close",
        }
    }

    /// The name in words, for the terminal.
    pub fn label(self) -> &'static str {
        match self {
            ConnectionKind::Http10Close => "HTTP/1.0 close",
            ConnectionKind::Http10KeepAlive => "HTTP/1.0 keep-alive",
            ConnectionKind::Http11Persistent => "HTTP/1.1 persistent",
            ConnectionKind::Http11Close => "HTTP/1.1 close",
        }
    }
}

/// Connection-level counters (a connection carries requests of any class).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ConnCounters {
    pub connections_opened: u64,
    /// Keep-alive connections the server closed while idle, re-opened
    /// without losing any byte of a response.
    pub reconnects: u64,
    pub tls_full_handshakes: u64,
    pub tls_resumptions: u64,
    /// Completed requests (successful and failed) by [`ConnectionKind`]
    /// (index = position in `ConnectionKind::ALL`).
    pub requests_by_kind: [u64; ConnectionKind::COUNT],
    /// Open loop: requests the schedule sent (counted when sent).
    pub sends: u64,
    /// Open loop: sends that left more than `OpenLoop::LATE_TOLERANCE`
    /// after their intended time.
    pub late_sends: u64,
    /// Open loop: sends that found every request slot busy (the cap on
    /// requests in flight) and had to wait for one.
    pub in_flight_waits: u64,
    /// Open loop: sends whose intended time fell in the window but which
    /// had not left when the run ended (the client fell behind, or every
    /// request slot stayed busy): with `sends`, the schedule's count.
    #[serde(default)]
    pub unsent: u64,
    /// HTTP/2: streams opened (requests sent).
    pub h2_streams: u64,
    /// HTTP/2: connection-level frame bytes received (SETTINGS, PING,
    /// WINDOW_UPDATE, GOAWAY, PRIORITY, frames of streams already ended),
    /// counted apart from any request's `bytes`.
    pub h2_connection_bytes: u64,
    /// HTTP/2: GOAWAY frames received.
    pub h2_goaways: u64,
    /// HTTP/2: RST_STREAM frames that ended a request, by error code
    /// (index = code, 0x0–0xd; index 14 holds codes beyond).
    pub stream_reset_codes: [u64; 15],
    /// Flows: flows walked to their last step's response, and flows
    /// abandoned at a failed step (a check, a capture, or the request
    /// itself); counted when it happens.
    #[serde(default)]
    pub flows_completed: u64,
    #[serde(default)]
    pub flows_abandoned: u64,
    /// `preconnect`: users whose first connection was up by the start
    /// (counted in the window whenever it opens: it is the start's figure).
    #[serde(default)]
    pub preconnected: u64,
    /// HTTP/3: the QUIC transport's own figures.
    #[serde(default)]
    pub quic: QuicCounters,
}

/// HTTP/3: what the QUIC connections did below the requests, as the QUIC
/// stack (quinn-proto) reports it: a mix's figures, apart from any
/// request's `bytes` (docs/counting.md, "HTTP/3").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct QuicCounters {
    pub datagrams_sent: u64,
    pub datagrams_received: u64,
    /// UDP payload bytes (QUIC packets, headers and all).
    pub udp_bytes_sent: u64,
    pub udp_bytes_received: u64,
    /// Packets benchlab sent that the stack declared lost; their frames
    /// went again in new packets (QUIC never resends a packet as it was),
    /// so these are the retransmissions' count, and `bytes_lost` the
    /// most they carried.
    pub packets_lost: u64,
    pub bytes_lost: u64,
    pub congestion_events: u64,
    /// Handshakes completed, and their time summed (from the first
    /// Initial to the handshake's confirmation), in microseconds.
    pub handshakes: u64,
    pub handshake_us: u64,
    /// CONNECTION_CLOSE received, by code: transport codes 0x0–0x10
    /// (index 17: any other, crypto errors 0x100–0x1ff included), and
    /// HTTP/3's application codes 0x100–0x110 (index = code − 0x100;
    /// index 17: any other).
    pub transport_close_codes: [u64; 18],
    pub h3_close_codes: [u64; 18],
    /// Request streams the server reset (RESET_STREAM), by HTTP/3 code
    /// as `h3_close_codes`.
    pub h3_reset_codes: [u64; 18],
    /// UDP offloads used: sends that carried several datagrams (GSO) and
    /// reads that returned several (GRO). Both stay 0 where the kernel
    /// lacks them, or when a connection never had two datagrams queued.
    pub gso_sends: u64,
    pub gro_reads: u64,
    /// Resumed connections that sent requests in 0-RTT, by whether the
    /// server took the early data (a refused one sends them again).
    pub zero_rtt_accepted: u64,
    pub zero_rtt_rejected: u64,
}

impl QuicCounters {
    /// A code's index in the `*_codes` arrays (`base` 0x0 for transport
    /// codes, 0x100 for HTTP/3's).
    pub fn code_index(code: u64, base: u64) -> usize {
        match code.checked_sub(base) {
            Some(k) if k <= 0x10 => k as usize,
            _ => 17,
        }
    }

    pub fn add(&mut self, o: &QuicCounters) {
        self.datagrams_sent += o.datagrams_sent;
        self.datagrams_received += o.datagrams_received;
        self.udp_bytes_sent += o.udp_bytes_sent;
        self.udp_bytes_received += o.udp_bytes_received;
        self.packets_lost += o.packets_lost;
        self.bytes_lost += o.bytes_lost;
        self.congestion_events += o.congestion_events;
        self.handshakes += o.handshakes;
        self.handshake_us += o.handshake_us;
        self.gso_sends += o.gso_sends;
        self.gro_reads += o.gro_reads;
        self.zero_rtt_accepted += o.zero_rtt_accepted;
        self.zero_rtt_rejected += o.zero_rtt_rejected;
        let add = |a: &mut [u64; 18], b: &[u64; 18]| a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
        add(&mut self.transport_close_codes, &o.transport_close_codes);
        add(&mut self.h3_close_codes, &o.h3_close_codes);
        add(&mut self.h3_reset_codes, &o.h3_reset_codes);
    }
}

impl ConnCounters {
    pub fn add(&mut self, o: &ConnCounters) {
        for (a, b) in self.requests_by_kind.iter_mut().zip(o.requests_by_kind.iter()) {
            *a += b;
        }
        self.connections_opened += o.connections_opened;
        self.reconnects += o.reconnects;
        self.tls_full_handshakes += o.tls_full_handshakes;
        self.tls_resumptions += o.tls_resumptions;
        self.sends += o.sends;
        self.late_sends += o.late_sends;
        self.in_flight_waits += o.in_flight_waits;
        self.unsent += o.unsent;
        self.h2_streams += o.h2_streams;
        self.h2_connection_bytes += o.h2_connection_bytes;
        self.h2_goaways += o.h2_goaways;
        self.flows_completed += o.flows_completed;
        self.flows_abandoned += o.flows_abandoned;
        self.preconnected += o.preconnected;
        self.quic.add(&o.quic);
        for (a, b) in self.stream_reset_codes.iter_mut().zip(o.stream_reset_codes.iter()) {
            *a += b;
        }
    }
}

/// What running the load cost the client itself over a span: its worker
/// threads' CPU (`getrusage(RUSAGE_THREAD)`, summed over threads) and how
/// late their event loops ran the once-a-second tick (the most of any
/// thread). A loop that is starved of CPU or busy for long turns runs its
/// tick late, so a generator near its limit shows here before its figures
/// are mistaken for the server's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct LoopLoad {
    pub cpu_user_us: u64,
    pub cpu_system_us: u64,
    pub loop_lag_max_us: u64,
    /// Requests sent (or being connected) and not yet answered when the
    /// second ended: a gauge, summed over threads and clients (over
    /// seconds it means nothing). 0 from agents that predate it.
    pub in_flight: u64,
}

impl LoopLoad {
    /// CPU adds up over threads and seconds; lag is the worst seen;
    /// in-flight requests add up over threads.
    pub fn add(&mut self, o: &LoopLoad) {
        self.cpu_user_us += o.cpu_user_us;
        self.cpu_system_us += o.cpu_system_us;
        self.loop_lag_max_us = self.loop_lag_max_us.max(o.loop_lag_max_us);
        self.in_flight += o.in_flight;
    }
}

/// A loop's own CPU and lag, charged to each second's [`LoopLoad`]: the
/// one meter of the HTTP/1 and HTTP/2 event loops, so both report the
/// client's load the same way (one `getrusage` a second).
#[derive(Debug, Default)]
pub(crate) struct LoopMeter {
    /// The thread's CPU time (user, system) at the last tick.
    mark: (Duration, Duration),
}

impl LoopMeter {
    /// Starts counting from the thread's CPU time now.
    pub(crate) fn start(&mut self) {
        self.mark = crate::sys::cpu_time(true);
    }

    /// Charges `load` with the thread's CPU since the last tick and with
    /// `lag`, how late this tick ran.
    pub(crate) fn tick(&mut self, load: &mut LoopLoad, lag: Duration) {
        let now = crate::sys::cpu_time(true);
        load.cpu_user_us += now.0.saturating_sub(self.mark.0).as_micros() as u64;
        load.cpu_system_us += now.1.saturating_sub(self.mark.1).as_micros() as u64;
        load.loop_lag_max_us = load.loop_lag_max_us.max(lag.as_micros() as u64);
        self.mark = now;
    }

    /// The thread's CPU time (user, system) at the last tick.
    pub(crate) fn total(&self) -> (Duration, Duration) {
        self.mark
    }
}

/// Everything one client counted over some span of time.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Stats {
    /// One entry per class of the plan, in the plan's order.
    pub classes: Vec<ClassStats>,
    pub conn: ConnCounters,
    /// The client's own CPU and loop lag (filled once a second, so only the
    /// per-second series carry it).
    pub load: LoopLoad,
}

impl Stats {
    pub fn new(classes: usize) -> Self {
        Stats {
            classes: (0..classes).map(|_| ClassStats::default()).collect(),
            conn: ConnCounters::default(),
            load: LoopLoad::default(),
        }
    }

    /// Counters for an open loop: each class keeps the as-sent histogram too.
    pub(crate) fn open_loop(classes: usize) -> Self {
        let mut s = Stats::new(classes);
        for c in &mut s.classes {
            c.latency_as_sent = Some(new_latency_histogram());
        }
        s
    }

    /// All classes merged into one.
    pub fn total(&self) -> ClassStats {
        let mut t = ClassStats::default();
        for c in &self.classes {
            t.add(c);
        }
        t
    }

    pub fn add(&mut self, o: &Stats) {
        for (a, b) in self.classes.iter_mut().zip(o.classes.iter()) {
            a.add(b);
        }
        self.conn.add(&o.conn);
        self.load.add(&o.load);
    }

    pub(crate) fn reset(&mut self) {
        for c in &mut self.classes {
            c.reset();
        }
        self.conn = ConnCounters::default();
        self.load = LoopLoad::default();
    }
}

/// One second (or the last part of one) of one worker thread's counts:
/// every completion of that second, ramps included.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// Index of the worker OS thread within the client.
    pub thread: usize,
    /// Second of the run it covers: 0 is the first second after the start.
    pub second: u32,
    pub stats: Stats,
    /// Set on the thread's last snapshot.
    pub last: Option<ThreadEnd>,
}

/// What a worker thread reports once, when it stops.
#[derive(Debug, Clone)]
pub struct ThreadEnd {
    /// Everything that completed inside the measurement window.
    pub window: Stats,
    /// Requests sent (or being connected) but unfinished when the run ended.
    pub in_flight: u64,
    /// CPU time this OS thread used (user, system).
    pub cpu_user: Duration,
    pub cpu_system: Duration,
    /// When the thread stopped, from the client's start.
    pub elapsed: Duration,
    /// Virtual users that got at least one response.
    pub users_arrived: u64,
    /// Virtual users still waiting for an arrival slot when the run ended.
    pub users_waiting: u64,
}

/// Latency summary in microseconds, as the JSON schema names it.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LatencySummary {
    pub mean: f64,
    pub p50: u64,
    pub p90: u64,
    pub p99: u64,
    pub p999: u64,
    pub max: u64,
}

impl LatencySummary {
    pub fn of(h: &Histogram<u64>) -> Self {
        if h.is_empty() {
            return LatencySummary::default();
        }
        LatencySummary {
            mean: h.mean(),
            p50: h.value_at_quantile(0.50),
            p90: h.value_at_quantile(0.90),
            p99: h.value_at_quantile(0.99),
            p999: h.value_at_quantile(0.999),
            max: h.max(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The same values recorded through a tally and straight into a
    /// histogram give the same histogram: every bucket's count, and the
    /// figures read from it.
    fn assert_tally_agrees(values: &[u64]) {
        let (mut direct, mut tallied) = (new_latency_histogram(), new_latency_histogram());
        let mut tally = LatencyTally::default();
        for &v in values {
            direct.saturating_record(v);
            tally.record(&mut tallied, v);
        }
        tally.settle(&mut tallied);
        assert_eq!(direct, tallied);
        assert_eq!(direct.len(), tallied.len());
        assert_eq!(
            (direct.min(), direct.min_nz(), direct.max()),
            (tallied.min(), tallied.min_nz(), tallied.max())
        );
        assert_eq!(direct.mean(), tallied.mean());
        for q in [0.0, 0.5, 0.9, 0.99, 0.999, 1.0] {
            assert_eq!(direct.value_at_quantile(q), tallied.value_at_quantile(q));
        }
        let (d, t): (Vec<_>, Vec<_>) = (
            direct
                .iter_recorded()
                .map(|v| (v.value_iterated_to(), v.count_at_value()))
                .collect(),
            tallied
                .iter_recorded()
                .map(|v| (v.value_iterated_to(), v.count_at_value()))
                .collect(),
        );
        assert_eq!(d, t);
    }

    #[test]
    fn latency_tally_matches_the_histogram() {
        let h = new_latency_histogram();
        // Each value's bucket, and each bucket's lowest value, are the
        // crate's own, over every value of the first buckets and the edges
        // of every bucket to the last.
        for v in 0..70_000u64 {
            assert_eq!(bucket_floor(bucket_of(v)), h.lowest_equivalent(v), "{v}");
        }
        for i in 0..h.distinct_values() {
            let lo = bucket_floor(i);
            let hi = h.highest_equivalent(lo);
            assert_eq!((bucket_of(lo), bucket_of(hi)), (i, i), "bucket {i}: {lo}..={hi}");
            assert_eq!(h.lowest_equivalent(hi), lo);
        }
        assert!(bucket_of(LATENCY_MAX_US) < h.distinct_values());
        // Whole histograms: small, large, past the last bucket, zero, and
        // one bucket filled past a tally's 16 bits.
        let mut values: Vec<u64> = (0..5_000).chain([0, 1, 2047, 2048, 4095, 4096, 123_456_789]).collect();
        values.extend([
            LATENCY_MAX_US - 1,
            LATENCY_MAX_US,
            LATENCY_MAX_US + 1,
            LATENCY_MAX_US * 2,
            u64::MAX,
        ]);
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            values.push(x >> (x % 64));
        }
        assert_tally_agrees(&values);
        assert_tally_agrees(&vec![250; 200_000]);
        assert_tally_agrees(&[]);
    }

    #[test]
    fn a_tally_settles_once_and_counts_again_from_empty() {
        let mut h = new_latency_histogram();
        let mut tally = LatencyTally::default();
        tally.record(&mut h, 100);
        tally.record(&mut h, 5_000);
        tally.settle(&mut h);
        tally.settle(&mut h);
        assert_eq!(h.len(), 2);
        tally.record(&mut h, 100);
        tally.settle(&mut h);
        assert_eq!((h.len(), h.count_at(100)), (3, 2));
    }

    #[test]
    fn merging_is_exact() {
        let mut a = ClassStats::default();
        let mut b = ClassStats::default();
        for i in 1..=1000u64 {
            a.record_success(Duration::from_micros(i), 10, 5, 1);
            b.record_success(Duration::from_micros(i * 3), 10, 5, 1);
        }
        b.record_error(ErrorKind::Reset, Duration::from_micros(7), 3, 1);
        let mut all = ClassStats::default();
        for i in 1..=1000u64 {
            all.record_success(Duration::from_micros(i), 10, 5, 1);
            all.record_success(Duration::from_micros(i * 3), 10, 5, 1);
        }
        a.add(&b);
        assert_eq!(a.counters.requests, 2000);
        assert_eq!(a.counters.bytes, 20000);
        assert_eq!(a.counters.error(ErrorKind::Reset), 1);
        assert_eq!(a.counters.error_bytes, 3);
        assert_eq!(LatencySummary::of(&a.latency), LatencySummary::of(&all.latency));
    }

    #[test]
    fn quic_codes_have_their_index() {
        assert_eq!(QuicCounters::code_index(0x0, 0), 0);
        assert_eq!(QuicCounters::code_index(0x10, 0), 16);
        assert_eq!(QuicCounters::code_index(0x128, 0), 17);
        assert_eq!(QuicCounters::code_index(0x10c, 0x100), 12);
        assert_eq!(QuicCounters::code_index(0x3, 0x100), 17);
        assert_eq!(QuicCounters::code_index(u64::MAX, 0x100), 17);
    }

    #[test]
    fn names_are_canonical() {
        let names: Vec<_> = ErrorKind::ALL.iter().map(|k| k.name()).collect();
        assert_eq!(
            names,
            [
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
                "version_negotiation"
            ]
        );
        for (i, k) in ErrorKind::ALL.iter().enumerate() {
            assert_eq!(*k as usize, i);
        }
    }
}
