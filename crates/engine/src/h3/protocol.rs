//! HTTP/3 on the event loop (`event_loop.rs`), in HTTP/2's shape
//! (`h2/protocol.rs`): a few connections per OS thread, each carrying
//! many request streams, the users mapped onto those streams (user j of
//! the client on connection j mod C); in an open loop a user is a request
//! slot, one stream. A connection is a UDP socket of its own, registered
//! with the loop's reactor, a quinn-proto endpoint and its one client
//! connection; the QUIC timers (loss detection, ACK delay, idle) are run
//! from the loop's sweep, at most 10 ms late.

use super::frame::{self, Bad, Response};
use super::qpack;
use crate::event_loop::{Core, EventLoop, Protocol, Shared};
use crate::plan::Scheme;
use crate::reactor::{Backend, Ev};
use crate::request::RequestSpec;
use crate::stats::{ErrorKind, QuicCounters, Snapshot};
use crate::streams::{StreamUsers, UState, User};
use bytes::BytesMut;
use quinn_proto::{
    ClientConfig, ConnectionError, ConnectionHandle, DatagramEvent, Dir, Endpoint, EndpointConfig, Event, ReadError,
    StreamEvent, StreamId, VarInt,
};
use quinn_udp::{RecvMeta, UdpSocketState};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use std::cell::Cell;
use std::io;
use std::io::IoSliceMut;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::Instant;

/// Datagrams read from one connection's socket in one loop turn at most
/// (a flooding server must not keep the loop from its deadline).
const READS_PER_TURN: u32 = 64;

/// The largest UDP datagram benchlab reads, and the most one GRO read
/// holds (the kernel coalesces up to 64 KiB).
const MAX_DATAGRAM: usize = 65_536;

/// Datagrams one GSO send carries at most: quinn's own default batch (10)
/// — enough to halve the sends of a busy connection, small enough that a
/// batch does not burst past what pacing meant.
const GSO_SEGMENTS: usize = 10;

/// Per-stream and per-connection receive windows: QUIC's flow control
/// bounds what a server may send ahead of benchlab's reads.
const STREAM_WINDOW: u32 = 8 << 20;
const CONNECTION_WINDOW: u32 = 64 << 20;

/// H3_NO_ERROR, and H3_REQUEST_CANCELLED for a stream given up.
const H3_NO_ERROR: u32 = 0x100;
const H3_REQUEST_CANCELLED: u32 = 0x10c;

/// The client's control stream: its type (0x00) and an empty SETTINGS:
/// QPACK_MAX_TABLE_CAPACITY and QPACK_BLOCKED_STREAMS stay 0 (RFC 9204
/// §5), so servers encode with the static table and literals only.
pub(crate) const CONTROL: [u8; 3] = [0x00, 0x04, 0x00];

/// A request kind's method, header fields and body.
type RequestKind = (String, Vec<(String, String)>, Option<Vec<u8>>);

/// A request stream in flight.
struct Stream {
    id: StreamId,
    user: u32,
    response: Response,
    /// The request's HEADERS and DATA frames, made when the stream opens
    /// (from the URL table's arena: nothing is kept per URL), and how
    /// many of their bytes QUIC has taken so far.
    request: Vec<u8>,
    written: usize,
}

/// A live QUIC connection.
struct Link {
    sock: UdpSocket,
    /// The socket's UDP offloads (quinn-udp: GSO sends, GRO reads, ECN),
    /// probed when the socket is made; GSO turns itself off if the
    /// kernel or the interface refuses it.
    udp: UdpSocketState,
    endpoint: Endpoint,
    handle: ConnectionHandle,
    conn: quinn_proto::Connection,
    slot: u32,
    connect_start: Instant,
    /// The handshake completed (streams may open).
    open: bool,
    /// Counted in `connections_opened` (its first datagram left).
    counted: bool,
    /// Streams it may still open (requests per connection).
    left: u32,
    streams: Vec<Stream>,
    /// The stack's figures as last added to the counters.
    reported: quinn_proto::ConnectionStats,
    /// The connection's next timer, as of its last send.
    timer: Option<Instant>,
    /// Streams have opened on it (a close with none in flight after
    /// that is an idle close, re-opened quietly).
    served: bool,
    /// It resumed a session whose ticket allows early data: requests go
    /// out in 0-RTT packets before the handshake completes.
    early: bool,
    /// The server's certificate was checked in its handshake (a full
    /// handshake; a resumed one checks none).
    verified: bool,
}

/// HTTP/3's per-thread state.
pub(crate) struct Http3 {
    shared: Arc<Shared>,
    buf: Box<[u8]>,
    out: Vec<u8>,
    streams: StreamUsers,
    links: Vec<Option<Link>>,
    free_links: Vec<usize>,
    /// Each request kind's method, fields and body (0: a plain GET, k: the
    /// plan's `requests[k − 1]`); a stream's frames are made from its URL
    /// and its kind as it opens.
    kinds: Vec<RequestKind>,
    /// QUIC's client configurations: full handshakes only, and one that
    /// resumes sessions and sends 0-RTT (`--tls-resumption`'s share of the
    /// new connections).
    client: Option<(ClientConfig, ClientConfig)>,
    /// Why QUIC cannot be set up for these URLs (http://, no TLS 1.3):
    /// every request fails with `tls` and the run says why once.
    unusable: Option<String>,
    unread: Vec<usize>,
    checksum: bool,
    live: u64,
}

/// The QUIC client configuration: the run's TLS settings (verification,
/// `--insecure`, `--ca-file`) with ALPN `h3`; TLS 1.3 only, as QUIC is.
pub(crate) fn client_config(
    tls: &rustls::ClientConfig,
    verifier: &Arc<dyn ServerCertVerifier>,
    early_data: bool,
) -> Result<ClientConfig, String> {
    let mut c = tls.clone();
    c.alpn_protocols = vec![b"h3".to_vec()];
    c.enable_early_data = early_data;
    c.dangerous()
        .set_certificate_verifier(Arc::new(NotingVerifier(Arc::clone(verifier))));
    let quic = quinn_proto::crypto::rustls::QuicClientConfig::try_from(c)
        .map_err(|e| format!("QUIC needs TLS 1.3's AES-128-GCM suite: {e}"))?;
    let mut cfg = ClientConfig::new(Arc::new(quic));
    let mut t = quinn_proto::TransportConfig::default();
    // The server's control and QPACK streams, and a few more it may open.
    t.max_concurrent_uni_streams(16u32.into());
    // Benchlab opens every bidirectional stream; the server none.
    t.max_concurrent_bidi_streams(0u32.into());
    t.stream_receive_window(STREAM_WINDOW.into());
    t.receive_window(CONNECTION_WINDOW.into());
    t.send_window(u64::from(CONNECTION_WINDOW));
    cfg.transport_config(Arc::new(t));
    Ok(cfg)
}

thread_local! {
    /// Server certificates checked on this thread so far: a connection
    /// whose handshake data raised it made a full handshake; one that
    /// completed without is a resumption (TLS 1.3 checks no certificate
    /// then). quinn-proto does not say which, and its TLS session is its
    /// own; the check runs inside `handle_event` of that one connection,
    /// on this thread, so the count attributes it exactly.
    static VERIFIED: Cell<u64> = const { Cell::new(0) };
}

/// The run's certificate check, counting its calls in [`VERIFIED`].
#[derive(Debug)]
struct NotingVerifier(Arc<dyn ServerCertVerifier>);

impl ServerCertVerifier for NotingVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        VERIFIED.with(|v| v.set(v.get() + 1));
        self.0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// The kind a lost connection's streams fail with.
pub(crate) fn lost_kind(reason: &ConnectionError, open: bool, q: &mut QuicCounters) -> ErrorKind {
    match reason {
        ConnectionError::VersionMismatch => ErrorKind::VersionNegotiation,
        ConnectionError::ConnectionClosed(c) => {
            let code = u64::from(c.error_code);
            q.transport_close_codes[QuicCounters::code_index(code, 0)] += 1;
            // A TLS alert in the handshake (crypto error 0x1xx).
            if !open && (0x100..0x200).contains(&code) {
                ErrorKind::Tls
            } else {
                ErrorKind::QuicClose
            }
        }
        ConnectionError::ApplicationClosed(c) => {
            q.h3_close_codes[QuicCounters::code_index(c.error_code.into_inner(), 0x100)] += 1;
            ErrorKind::QuicClose
        }
        ConnectionError::Reset => ErrorKind::Reset,
        ConnectionError::TimedOut if !open => ErrorKind::HandshakeTimeout,
        ConnectionError::TimedOut => ErrorKind::Timeout,
        // benchlab's side found the server at fault (a certificate it does
        // not trust in the handshake, a protocol violation after it).
        ConnectionError::TransportError(_) if !open => ErrorKind::Tls,
        ConnectionError::TransportError(_) => ErrorKind::Framing,
        ConnectionError::LocallyClosed | ConnectionError::CidsExhausted => ErrorKind::Reset,
    }
}

impl Http3 {
    /// The HTTP/3 protocol of one OS thread, and its loop's core.
    pub(crate) fn new(shared: Arc<Shared>, index: usize, tx: Sender<Snapshot>) -> io::Result<EventLoop<Http3>> {
        let core = Core::new(Arc::clone(&shared), index, 0xD1B5_4A32_D192_ED03, tx)?;
        if core.io.backend == Backend::Uring {
            return Err(io::Error::other(
                "BENCHLAB_IO=uring drives TCP connections only; HTTP/3 runs on mio's epoll: unset it",
            ));
        }
        let plan = &shared.plan;
        let h = plan.http2.unwrap_or_default();
        let streams = StreamUsers::new(&shared, h.connections, index);
        let plain = RequestSpec::default();
        let kinds = std::iter::once(&plain)
            .chain(plan.requests.iter())
            .map(|r| (r.method.clone(), r.h2_fields(&plan.headers), r.body.clone()))
            .collect();
        let (client, unusable) = if plan.urls.origins().iter().any(|o| o.scheme != Scheme::Https) {
            (
                None,
                Some("HTTP/3 runs over QUIC, which is always encrypted: use an https:// URL".to_string()),
            )
        } else {
            let both = shared.tls.as_ref().map(|t| {
                Ok::<_, String>((
                    client_config(&t.full, &t.verifier, false)?,
                    client_config(&t.resuming, &t.verifier, true)?,
                ))
            });
            match both {
                Some(Ok(c)) => (Some(c), None),
                Some(Err(e)) => (None, Some(e)),
                None => (None, Some("no TLS configuration".to_string())),
            }
        };
        let protocol = Http3 {
            buf: vec![0u8; MAX_DATAGRAM].into_boxed_slice(),
            out: Vec::with_capacity(MAX_DATAGRAM),
            streams,
            links: Vec::new(),
            free_links: Vec::new(),
            kinds,
            client,
            unusable,
            unread: Vec::new(),
            checksum: plan.urls.any_checksum(),
            live: 0,
            shared: Arc::clone(&shared),
        };
        Ok(EventLoop { core, protocol })
    }

    fn streams_per_link(&self) -> usize {
        self.shared.plan.http2.unwrap_or_default().streams as usize
    }
}

impl Protocol for Http3 {
    fn users(&self) -> usize {
        self.streams.users.len()
    }

    fn resume(&mut self, core: &mut Core, u: u32) {
        if self.streams.users[u as usize].state == UState::Thinking {
            self.start_request(core, u as usize);
        }
    }

    fn take_slot(&mut self) -> Option<u32> {
        self.streams.free.pop()
    }

    fn has_free_slot(&self) -> bool {
        !self.streams.free.is_empty()
    }

    fn send(&mut self, core: &mut Core, u: u32, intended: Instant) {
        self.streams.users[u as usize].intended = Some(intended);
        self.start_request(core, u as usize);
    }

    fn event(&mut self, core: &mut Core, ev: Ev) {
        if let Ev::Ready(ev) = ev {
            if ev.readable || ev.closed {
                self.receive(core, ev.token);
            }
        }
    }

    fn pending(&self) -> bool {
        !self.unread.is_empty()
    }

    fn after_events(&mut self, core: &mut Core) {
        for l in std::mem::take(&mut self.unread) {
            if self.links.get(l).is_some_and(Option::is_some) {
                self.receive(core, l);
            }
        }
    }

    fn sweep(&mut self, core: &mut Core, now: Instant) {
        self.timers(core, now);
        for l in 0..self.links.len() {
            self.report(core, l);
        }
        self.sweep_users(core, now);
    }

    fn next_timer(&self) -> Option<Instant> {
        self.links.iter().flatten().filter_map(|k| k.timer).min()
    }

    fn timers(&mut self, core: &mut Core, now: Instant) {
        for l in 0..self.links.len() {
            let Some(link) = self.links[l].as_mut() else { continue };
            if link.timer.is_some_and(|t| t <= now) {
                link.conn.handle_timeout(now);
                self.drive(core, l);
            }
        }
    }

    fn open_connections(&self) -> u64 {
        self.live
    }

    fn in_flight(&self) -> (u64, u64) {
        self.streams.in_flight()
    }

    fn close_all(&mut self, core: &mut Core) {
        // Each server hears the close (a CONNECTION_CLOSE with
        // H3_NO_ERROR) rather than waiting out its idle timeout.
        for l in 0..self.links.len() {
            if let Some(link) = self.links[l].as_mut() {
                link.conn
                    .close(Instant::now(), VarInt::from_u32(H3_NO_ERROR), bytes::Bytes::new());
                self.transmit(core, l);
                self.report(core, l);
            }
        }
        self.links.clear();
    }
}

impl Http3 {
    fn start_request(&mut self, core: &mut Core, u: usize) {
        self.streams.queue_next(core, &self.shared, u);
        if self.streams.users[u].state == UState::Queued {
            self.service(core, self.streams.users[u].slot as usize);
        }
    }

    /// Opens request streams for the slot's waiting users while its
    /// connection, `--streams` and the server's stream limit allow, or a
    /// connection when it has none.
    fn service(&mut self, core: &mut Core, slot: usize) {
        if self.streams.slots[slot].queue.is_empty() {
            return;
        }
        let Some(l) = self.streams.slots[slot].current else {
            return self.open_link(core, slot);
        };
        let most = self.streams_per_link();
        let now = Instant::now();
        let timeout = self.shared.plan.timeout;
        let mut opened = 0u64;
        {
            let Some(link) = self.links[l].as_mut() else { return };
            if !link.open && !link.early {
                return;
            }
            while link.left > 0 && link.streams.len() < most && !self.streams.slots[slot].queue.is_empty() {
                let Some(id) = link.conn.streams().open(Dir::Bi) else {
                    break; // the server's MAX_STREAMS: more when it grants them
                };
                let Some(u) = self.streams.slots[slot].queue.pop_front() else {
                    break;
                };
                let user = &mut self.streams.users[u as usize];
                let url = self.shared.plan.urls.get(user.url as usize);
                let (method, fields, body) = &self.kinds[url.request as usize];
                let t = url.target;
                let section = qpack::request_section(method, t.scheme, &t.authority, url.path, fields);
                link.streams.push(Stream {
                    id,
                    user: u,
                    response: Response::new(self.checksum),
                    request: frame::request(&section, body.as_deref()),
                    written: 0,
                });
                link.left -= 1;
                link.served = true;
                opened += 1;
                user.start = if user.queued_at <= link.connect_start {
                    link.connect_start
                } else {
                    now
                };
                user.deadline = user.start + timeout;
                user.state = UState::Streaming;
                user.link = l;
                user.sent = 0;
                let k = link.streams.len() - 1;
                write_request(link, k, user);
            }
            if link.left == 0 {
                self.streams.slots[slot].current = None;
            }
        }
        if opened > 0 {
            core.second.conn.h2_streams += opened;
            if core.window_open {
                core.window.conn.h2_streams += opened;
            }
            self.transmit(core, l);
        }
        if self.streams.slots[slot].current.is_none() && !self.streams.slots[slot].queue.is_empty() {
            self.open_link(core, slot);
        }
    }

    fn open_link(&mut self, core: &mut Core, slot: usize) {
        let Some(&u) = self.streams.slots[slot].queue.front() else {
            return;
        };
        let Some((full, resuming)) = &self.client else {
            let why = self.unusable.clone().unwrap_or_default();
            self.shared.note_tls_error(|| why);
            return self.fail_queue(core, slot, ErrorKind::Tls);
        };
        let plan = &self.shared.plan;
        let client = if core.rng.percent(plan.tls.resumption_percent) {
            resuming.clone()
        } else {
            full.clone()
        };
        let url = self.streams.users[u as usize].url as usize;
        let target = plan.urls.origin(url);
        let remote: SocketAddr = target.addr;
        if std::mem::take(&mut self.streams.slots[slot].reconnect_pending) {
            core.bump(|c| c.reconnects += 1);
        }
        let left = match plan.connection.requests_per_connection {
            None => u32::MAX,
            Some((min, max)) => min + core.rng.below((max - min) as u64 + 1) as u32,
        };
        let local = local_addr(core.next_source(), remote);
        let sock = match UdpSocket::bind(local) {
            Ok(s) => s,
            Err(_) => return self.fail_queue(core, slot, ErrorKind::Bind),
        };
        if core.io.busy_poll_us > 0 {
            // BENCHLAB_IO's busy polling, as for TCP sockets (sock.rs).
            let _ = crate::reactor::set_socket_busy_poll(sock.as_raw_fd(), core.io.busy_poll_us);
        }
        if sock.set_nonblocking(true).is_err() || sock.connect(remote).is_err() {
            return self.fail_queue(core, slot, ErrorKind::ConnectRefused);
        }
        let Ok(udp) = UdpSocketState::new((&sock).into()) else {
            return self.fail_queue(core, slot, ErrorKind::Bind);
        };
        let mut endpoint = Endpoint::new(Arc::new(EndpointConfig::default()), None, true, None);
        let host = &target.host;
        let (handle, conn) = match endpoint.connect(Instant::now(), client, remote, host.trim_matches(['[', ']'])) {
            Ok(c) => c,
            Err(e) => {
                let why = format!("QUIC connect to {host}: {e}");
                self.shared.note_tls_error(|| why);
                return self.fail_queue(core, slot, ErrorKind::Tls);
            }
        };
        let l = match self.free_links.pop() {
            Some(l) => l,
            None => {
                self.links.push(None);
                self.links.len() - 1
            }
        };
        if core.reactor.register(sock.as_raw_fd(), l, false).is_err() {
            self.free_links.push(l);
            return self.fail_queue(core, slot, ErrorKind::ConnectRefused);
        }
        self.links[l] = Some(Link {
            sock,
            udp,
            endpoint,
            handle,
            conn,
            slot: slot as u32,
            connect_start: Instant::now(),
            open: false,
            counted: false,
            left,
            streams: Vec::new(),
            reported: quinn_proto::ConnectionStats::default(),
            timer: None,
            served: false,
            early: false,
            verified: false,
        });
        self.live += 1;
        self.streams.slots[slot].current = Some(l);
        if let Some(link) = self.links[l].as_mut() {
            if link.conn.has_0rtt() {
                // 0-RTT: the control stream and the slot's requests go
                // out with the first flight.
                link.early = true;
                open_control_stream(link);
                self.service(core, slot);
            }
        }
        self.transmit(core, l);
    }

    fn fail_queue(&mut self, core: &mut Core, slot: usize, kind: ErrorKind) {
        while let Some(u) = self.streams.slots[slot].queue.pop_front() {
            self.streams.fail(core, &self.shared, u as usize, kind, 0);
        }
    }

    /// Sends what the connection has to send. A datagram the socket will
    /// not take now is dropped: QUIC counts it lost and sends its frames
    /// again, as it would for one lost on the path.
    fn transmit(&mut self, core: &mut Core, l: usize) {
        let Some(link) = self.links[l].as_mut() else { return };
        let now = Instant::now();
        let mut failed = None;
        let mut gso_sends = 0;
        loop {
            self.out.clear();
            let segments = link.udp.max_gso_segments().min(GSO_SEGMENTS);
            let Some(t) = link.conn.poll_transmit(now, segments, &mut self.out) else {
                break;
            };
            let tx = quinn_udp::Transmit {
                destination: t.destination,
                ecn: t.ecn.and_then(|e| quinn_udp::EcnCodepoint::from_bits(e as u8)),
                contents: &self.out[..t.size],
                segment_size: t.segment_size,
                src_ip: None,
            };
            match link.udp.try_send((&link.sock).into(), &tx) {
                Ok(()) => {
                    if t.segment_size.is_some_and(|s| t.size > s) {
                        gso_sends += 1;
                    }
                    if !link.counted {
                        link.counted = true;
                        core.bump(|c| c.connections_opened += 1);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock || e.kind() == io::ErrorKind::Interrupted => {}
                // GSO refused by the kernel or the interface: quinn-udp
                // has turned it off for this socket; the batch is lost
                // as a full buffer's would be, and QUIC sends it again.
                Err(e) if t.segment_size.is_some() && matches!(e.raw_os_error(), Some(libc::EIO | libc::EINVAL)) => {}
                // An ICMP port unreachable from an earlier datagram: no
                // server on that port.
                Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
                    failed = Some(ErrorKind::ConnectRefused);
                    break;
                }
                Err(_) => {
                    failed = Some(ErrorKind::Reset);
                    break;
                }
            }
        }
        link.timer = link.conn.poll_timeout();
        if gso_sends > 0 {
            core.second.conn.quic.gso_sends += gso_sends;
            if core.window_open {
                core.window.conn.quic.gso_sends += gso_sends;
            }
        }
        if let Some(kind) = failed {
            self.break_link(core, l, kind);
        }
    }

    /// Reads the socket's datagrams into the connection, then drives it.
    fn receive(&mut self, core: &mut Core, l: usize) {
        let mut refused = false;
        let mut gro_reads = 0;
        {
            let Some(link) = self.links.get_mut(l).and_then(|k| k.as_mut()) else {
                return;
            };
            let mut reads = 0;
            loop {
                reads += 1;
                if reads > READS_PER_TURN {
                    if !self.unread.contains(&l) {
                        self.unread.push(l);
                    }
                    break;
                }
                if self.shared.stop.load(Ordering::Relaxed) {
                    break;
                }
                // One read: a datagram, or with GRO several of `stride`
                // bytes each (the last may be shorter), handed to QUIC
                // one by one.
                let mut meta = [RecvMeta::default()];
                let read = link
                    .udp
                    .recv((&link.sock).into(), &mut [IoSliceMut::new(&mut self.buf)], &mut meta);
                match read {
                    Ok(_) => {}
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
                        refused = true;
                        break;
                    }
                    Err(_) => break,
                }
                let m = &meta[0];
                let (len, stride) = (m.len.min(self.buf.len()), m.stride.max(1));
                if len > stride {
                    gro_reads += 1;
                }
                let ecn = m.ecn.and_then(|e| quinn_proto::EcnCodepoint::from_bits(e as u8));
                let now = Instant::now();
                for datagram in self.buf[..len].chunks(stride) {
                    self.out.clear();
                    let data = BytesMut::from(datagram);
                    match link.endpoint.handle(now, m.addr, m.dst_ip, ecn, data, &mut self.out) {
                        Some(DatagramEvent::ConnectionEvent(_, ev)) => {
                            let checked = VERIFIED.with(Cell::get);
                            link.conn.handle_event(ev);
                            link.verified |= VERIFIED.with(Cell::get) != checked;
                        }
                        Some(DatagramEvent::Response(t)) => {
                            let _ = link.sock.send(&self.out[..t.size]);
                        }
                        Some(DatagramEvent::NewConnection(_)) | None => {}
                    }
                }
            }
        }
        if gro_reads > 0 {
            core.second.conn.quic.gro_reads += gro_reads;
            if core.window_open {
                core.window.conn.quic.gro_reads += gro_reads;
            }
        }
        if refused {
            let open = self.links[l].as_ref().is_some_and(|k| k.open);
            return self.break_link(
                core,
                l,
                if open {
                    ErrorKind::Reset
                } else {
                    ErrorKind::ConnectRefused
                },
            );
        }
        self.drive(core, l);
    }

    /// Hands the connection's endpoint events over, acts on its events
    /// (handshake done, streams readable, the connection lost), and sends.
    fn drive(&mut self, core: &mut Core, l: usize) {
        let mut lost = None;
        let mut connected = false;
        let mut readable: Vec<StreamId> = Vec::new();
        let mut writable = false;
        let mut available = false;
        {
            let Some(link) = self.links[l].as_mut() else { return };
            while let Some(ev) = link.conn.poll_endpoint_events() {
                if let Some(ce) = link.endpoint.handle_event(link.handle, ev) {
                    link.conn.handle_event(ce);
                }
            }
            while let Some(ev) = link.conn.poll() {
                match ev {
                    Event::Connected => connected = true,
                    Event::ConnectionLost { reason } => {
                        lost = Some(reason);
                        break;
                    }
                    Event::Stream(StreamEvent::Readable { id }) => readable.push(id),
                    Event::Stream(StreamEvent::Writable { .. }) => writable = true,
                    Event::Stream(StreamEvent::Available { dir: Dir::Bi }) => available = true,
                    Event::Stream(StreamEvent::Opened { dir: Dir::Uni }) => {
                        // The server's control and QPACK streams: read and
                        // dropped (benchlab needs none of its settings).
                        while let Some(id) = link.conn.streams().accept(Dir::Uni) {
                            readable.push(id);
                        }
                    }
                    _ => {}
                }
            }
        }
        if connected {
            self.connected(core, l);
        }
        for id in readable {
            self.read_stream(core, l, id);
        }
        if writable {
            if let Some(link) = self.links[l].as_mut() {
                for k in 0..link.streams.len() {
                    let s = &link.streams[k];
                    let user = &mut self.streams.users[s.user as usize];
                    write_request(link, k, user);
                }
            }
        }
        if let Some(reason) = lost {
            let kind = {
                let Some(link) = self.links[l].as_ref() else { return };
                let open = link.open;
                let idle = link.streams.is_empty();
                let mut q = QuicCounters::default();
                let kind = lost_kind(&reason, open, &mut q);
                add_quic(core, &q);
                if kind == ErrorKind::Tls {
                    let host = self.shared.plan.urls.origin(0).host.clone();
                    self.shared
                        .note_tls_error(|| format!("QUIC handshake with {host} failed: {reason}"));
                }
                // An idle connection the server closed (its idle timeout):
                // the next request opens a new one, as HTTP/1's reconnect.
                if idle
                    && open
                    && matches!(
                        reason,
                        ConnectionError::TimedOut | ConnectionError::ApplicationClosed(_)
                    )
                {
                    ErrorKind::Reset
                } else {
                    kind
                }
            };
            return self.break_link(core, l, kind);
        }
        let slot = self.links[l].as_ref().map(|k| k.slot as usize);
        if let Some(slot) = slot {
            if available || connected {
                self.service(core, slot);
            }
        }
        self.transmit(core, l);
        self.retire_if_done(core, l);
    }

    /// The handshake completed: the control stream, then the slot's
    /// waiting requests.
    fn connected(&mut self, core: &mut Core, l: usize) {
        let Some(link) = self.links[l].as_mut() else { return };
        link.open = true;
        let took = link.connect_start.elapsed().as_micros() as u64;
        let resumed = !link.verified;
        let early = link.early.then(|| link.conn.accepted_0rtt());
        core.bump(|c| c.quic.handshakes += 1);
        if resumed {
            core.bump(|c| c.tls_resumptions += 1);
        } else {
            core.bump(|c| c.tls_full_handshakes += 1);
        }
        match early {
            Some(true) => core.bump(|c| c.quic.zero_rtt_accepted += 1),
            Some(false) => core.bump(|c| c.quic.zero_rtt_rejected += 1),
            None => {}
        }
        core.second.conn.quic.handshake_us += took;
        if core.window_open {
            core.window.conn.quic.handshake_us += took;
        }
        match early {
            Some(true) => {}
            None => open_control_stream(link),
            Some(false) => {
                // The server refused the early data: quinn-proto has
                // forgotten every stream sent in it. The control stream
                // goes again, and the requests wait at the head of the
                // slot's queue for new streams (their latency still runs
                // from the connect; their bytes count once).
                link.early = false;
                open_control_stream(link);
                let streams = std::mem::take(&mut link.streams);
                link.left += streams.len() as u32;
                let slot = link.slot as usize;
                for s in streams.iter().rev() {
                    let user = &mut self.streams.users[s.user as usize];
                    user.state = UState::Queued;
                    user.sent = 0;
                    user.link = usize::MAX;
                    self.streams.slots[slot].queue.push_front(s.user);
                }
            }
        }
    }

    /// Reads what stream `id` has; a request stream's end ends its request.
    fn read_stream(&mut self, core: &mut Core, l: usize, id: StreamId) {
        enum End {
            Fin,
            Reset(u64),
            Bad(Bad),
        }
        let Some(link) = self.links[l].as_mut() else { return };
        let k = link.streams.iter().position(|s| s.id == id);
        let mut end = None;
        {
            let mut rs = link.conn.recv_stream(id);
            let Ok(mut chunks) = rs.read(true) else { return };
            loop {
                match chunks.next(usize::MAX) {
                    Ok(Some(c)) => {
                        if let Some(k) = k {
                            if let Err(b) = link.streams[k].response.receive(&c.bytes) {
                                end = Some(End::Bad(b));
                                break;
                            }
                        }
                    }
                    Ok(None) => {
                        end = Some(End::Fin);
                        break;
                    }
                    Err(ReadError::Blocked) => break,
                    Err(ReadError::Reset(code)) => {
                        end = Some(End::Reset(code.into_inner()));
                        break;
                    }
                }
            }
            let _ = chunks.finalize();
        }
        let (Some(k), Some(end)) = (k, end) else { return };
        let s = link.streams.swap_remove(k);
        let u = s.user as usize;
        let bytes = s.response.bytes;
        match end {
            End::Fin => match s.response.finish() {
                Ok(()) => {
                    let xxh3 = s.response.hasher.map(|h| h.digest());
                    let status = s.response.status.unwrap_or(0);
                    self.streams
                        .complete(core, &self.shared, u, status, bytes, s.response.body, xxh3);
                }
                Err(_) => self.streams.fail(core, &self.shared, u, ErrorKind::Framing, bytes),
            },
            End::Reset(code) => {
                let i = QuicCounters::code_index(code, 0x100);
                let mut q = QuicCounters::default();
                q.h3_reset_codes[i] = 1;
                add_quic(core, &q);
                self.streams.fail(core, &self.shared, u, ErrorKind::StreamReset, bytes);
            }
            End::Bad(b) => {
                // The stream is given up; the connection stays.
                let _ = link.conn.recv_stream(id).stop(VarInt::from_u32(H3_REQUEST_CANCELLED));
                let kind = match b {
                    Bad::Framing => ErrorKind::Framing,
                    Bad::TooLarge => ErrorKind::HeaderTooLarge,
                };
                self.streams.fail(core, &self.shared, u, kind, bytes);
            }
        }
        if let Some(slot) = self.links[l].as_ref().map(|k| k.slot as usize) {
            self.service(core, slot);
        }
    }

    /// Adds what the QUIC stack counted since the last time to the
    /// second's (and the window's) counters.
    fn report(&mut self, core: &mut Core, l: usize) {
        let Some(link) = self.links[l].as_mut() else { return };
        let now = link.conn.stats();
        let was = std::mem::replace(&mut link.reported, now);
        // Saturating: a path's figures start again from zero if the path
        // changes (benchlab never migrates, but a server may move).
        let q = QuicCounters {
            datagrams_sent: now.udp_tx.datagrams.saturating_sub(was.udp_tx.datagrams),
            datagrams_received: now.udp_rx.datagrams.saturating_sub(was.udp_rx.datagrams),
            udp_bytes_sent: now.udp_tx.bytes.saturating_sub(was.udp_tx.bytes),
            udp_bytes_received: now.udp_rx.bytes.saturating_sub(was.udp_rx.bytes),
            packets_lost: now.path.lost_packets.saturating_sub(was.path.lost_packets),
            bytes_lost: now.path.lost_bytes.saturating_sub(was.path.lost_bytes),
            congestion_events: now.path.congestion_events.saturating_sub(was.path.congestion_events),
            ..QuicCounters::default()
        };
        add_quic(core, &q);
    }

    fn retire_if_done(&mut self, core: &mut Core, l: usize) {
        let Some(link) = self.links[l].as_ref() else { return };
        let slot = link.slot as usize;
        if self.streams.slots[slot].current != Some(l) && link.streams.is_empty() && link.open {
            if let Some(link) = self.links[l].as_mut() {
                link.conn
                    .close(Instant::now(), VarInt::from_u32(H3_NO_ERROR), bytes::Bytes::new());
            }
            self.transmit(core, l);
            self.close_link(core, l);
        }
    }

    fn close_link(&mut self, core: &mut Core, l: usize) {
        self.report(core, l);
        if let Some(link) = self.links[l].take() {
            self.live -= 1;
            let slot = link.slot as usize;
            if self.streams.slots[slot].current == Some(l) {
                self.streams.slots[slot].current = None;
            }
            self.unread.retain(|&k| k != l);
            self.free_links.push(l);
        }
    }

    /// The connection failed or the server closed it: its streams end with
    /// `kind`; users waiting on it get a new connection (or fail with it,
    /// when the connection itself could not be made).
    fn break_link(&mut self, core: &mut Core, l: usize, kind: ErrorKind) {
        let Some(link) = self.links[l].as_mut() else { return };
        let slot = link.slot as usize;
        let streams = std::mem::take(&mut link.streams);
        let idle = streams.is_empty();
        let served = link.served;
        let open = link.open;
        let was_current = self.streams.slots[slot].current == Some(l);
        self.close_link(core, l);
        for s in streams {
            self.streams
                .fail(core, &self.shared, s.user as usize, kind, s.response.bytes);
        }
        if was_current && !self.streams.slots[slot].queue.is_empty() {
            if idle && served && open && kind == ErrorKind::Reset {
                self.streams.slots[slot].reconnect_pending = true;
                self.open_link(core, slot);
            } else if !open || !served {
                self.fail_queue(core, slot, kind);
            } else {
                self.open_link(core, slot);
            }
        } else if idle && served && was_current {
            self.streams.slots[slot].reconnect_pending = true;
        }
    }

    fn sweep_users(&mut self, core: &mut Core, now: Instant) {
        for u in 0..self.streams.users.len() {
            let user = &self.streams.users[u];
            if now < user.deadline {
                continue;
            }
            match user.state {
                UState::Streaming => {
                    let l = user.link;
                    let mut bytes = 0;
                    // A 0-RTT request whose handshake never finished.
                    let mut kind = ErrorKind::Timeout;
                    if let Some(link) = self.links.get_mut(l).and_then(|k| k.as_mut()) {
                        if !link.open {
                            kind = ErrorKind::HandshakeTimeout;
                        }
                        if let Some(k) = link.streams.iter().position(|s| s.user == u as u32) {
                            let s = link.streams.swap_remove(k);
                            bytes = s.response.bytes;
                            // Given up: the server may stop sending it.
                            let code = VarInt::from_u32(H3_REQUEST_CANCELLED);
                            let _ = link.conn.recv_stream(s.id).stop(code);
                            let _ = link.conn.send_stream(s.id).reset(code);
                        }
                    }
                    self.streams.fail(core, &self.shared, u, kind, bytes);
                    if self.links.get(l).is_some_and(Option::is_some) {
                        self.transmit(core, l);
                        self.retire_if_done(core, l);
                    }
                    if let Some(slot) = self.links.get(l).and_then(|k| k.as_ref()).map(|k| k.slot as usize) {
                        self.service(core, slot);
                    }
                }
                UState::Queued => {
                    let slot = user.slot as usize;
                    let handshaking = self.streams.slots[slot]
                        .current
                        .and_then(|l| self.links[l].as_ref())
                        .is_some_and(|k| !k.open);
                    self.streams.slots[slot].queue.retain(|&q| q as usize != u);
                    let kind = if handshaking {
                        ErrorKind::HandshakeTimeout
                    } else {
                        ErrorKind::Timeout
                    };
                    self.streams.fail(core, &self.shared, u, kind, 0);
                    if self.streams.slots[slot].queue.is_empty() {
                        if let Some(l) = self.streams.slots[slot].current {
                            if self.links[l].as_ref().is_some_and(|k| !k.open) {
                                self.close_link(core, l);
                            }
                        }
                    }
                }
                UState::Thinking | UState::Done => {}
            }
        }
    }
}

/// Adds QUIC figures to the second's counters and, when the window is
/// open, to the run's.
fn add_quic(core: &mut Core, q: &QuicCounters) {
    core.second.conn.quic.add(q);
    if core.window_open {
        core.window.conn.quic.add(q);
    }
}

/// Writes what QUIC's flow control takes of stream `k`'s request, and
/// ends the stream (FIN) once all of it is written.
fn write_request(link: &mut Link, k: usize, user: &mut User) {
    let s = &mut link.streams[k];
    let request = &s.request[..];
    if s.written >= request.len() {
        return;
    }
    let mut send = link.conn.send_stream(s.id);
    while s.written < request.len() {
        match send.write(&request[s.written..]) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                s.written += n;
                user.sent += n as u64;
            }
        }
    }
    if s.written == request.len() {
        let _ = send.finish();
    }
}

/// Opens the client's control stream (its SETTINGS) on `link`.
fn open_control_stream(link: &mut Link) {
    if let Some(id) = link.conn.streams().open(Dir::Uni) {
        let _ = link.conn.send_stream(id).write(&CONTROL);
    }
}

/// The address a connection's UDP socket binds: the source address given
/// (`--source-addresses`), else any address of the remote's family; the
/// port is the kernel's.
pub(crate) fn local_addr(source: Option<std::net::IpAddr>, remote: SocketAddr) -> SocketAddr {
    match (source, remote) {
        (Some(ip), _) => SocketAddr::new(ip, 0),
        (None, SocketAddr::V4(_)) => (std::net::Ipv4Addr::UNSPECIFIED, 0).into(),
        (None, SocketAddr::V6(_)) => (std::net::Ipv6Addr::UNSPECIFIED, 0).into(),
    }
}
