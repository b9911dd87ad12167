//! HTTP/2 on the event loop (`event_loop.rs`): a few connections per OS
//! thread, each carrying many streams, and the closed-loop virtual users
//! mapped onto those streams (user j of the client on connection j mod C).
//!
//! It is a protocol of its own beside HTTP/1's (`http1.rs`) rather than
//! more states in it: an HTTP/1 user owns a connection, an HTTP/2
//! connection owns many users. What they share is the loop (users, think
//! time, budget, stop, the open-loop schedule, seconds, CPU and lag), the
//! socket layer (`sock.rs`) and the response check. It waits on the same
//! `Reactor` (`BENCHLAB_IO`: mio's edge-triggered epoll, level-triggered
//! epoll, or io_uring for h2c); in an open loop a user is a
//! request slot, one stream, and the schedule's sends take free ones.
//!
//! Why a framing of benchlab's own and not the `h2` crate on a
//! current-thread tokio runtime per OS thread: counting needs each stream's
//! frame bytes, 9-byte headers and padding included (docs/counting.md,
//! "HTTP/2"), and `h2` hands out bodies and heads, never frames, so it
//! could not count `bytes` exactly; and this loop already reaches the
//! target. Measured with `SCENARIOS=h2 TOOLS="benchlab h2load" DUR=3
//! CONNS=8 STREAMS=10 bench/vs-peers.sh` (nginx 1.22, one worker, h2c,
//! 4 KiB; client and server on one CPU each of a shared 2-core machine),
//! two runs of 5 and 7 interleaved rounds: client CPU per request 10.29
//! and 11.94 µs against h2load's 11.57 and 12.45 (0.88× and 0.96×, medians
//! of per-round ratios), requests/s 15,184 and 21,530 against 17,469 and
//! 17,340 (per-round ratios' medians 0.91× and 1.04×; the server was the
//! bottleneck, and the machine's noise spans ±40 % between rounds). A
//! throwaway client on the `h2` crate (0.4, one current-thread tokio
//! runtime, the same 8 × 10 streams and 1 GiB windows, not shipped), run
//! in 7 rounds interleaved with benchlab against the same nginx: 13.77 µs
//! of CPU per request (median) against benchlab's 12.0, per-round ratio
//! benchlab ÷ h2 0.93: no faster, and it could not count.

use super::conn::{Conn, Ended, Outcome, MAX_CONTROL_QUEUED};
use super::hpack;
use crate::event_loop::{Core, EventLoop, Protocol, Shared};
use crate::plan::Scheme;
use crate::reactor::{next_generation, Backend, Ev};
use crate::request::RequestSpec;
use crate::sock::{self, connect, connect_error_kind, Handshake, ReadOutcome, SendMsg, Sock, TlsSock};
use crate::stats::{ErrorKind, Snapshot};
use crate::streams::{StreamUsers, UState};
use rustls::client::UnbufferedClientConnection;
use std::io;
use std::sync::atomic::Ordering;
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::Instant;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LinkState {
    Connecting,
    Handshaking,
    Open,
}

/// A live connection and its protocol state.
struct Link {
    sock: Sock,
    conn: Conn,
    state: LinkState,
    slot: u32,
    /// When its connect started: the latency start of the streams that
    /// waited for it.
    connect_start: Instant,
    /// Counted in `connections_opened` (at its first successful write).
    counted: bool,
    /// Streams it may still open (requests per connection).
    left: u32,
    /// The reactor reports its writability (a connect, or bytes waiting
    /// unsent); only level-triggered epoll needs it kept in step.
    out_armed: bool,
    /// io_uring: which of its index's connections this is (completions of
    /// an earlier one are stale), and whether its multishot receive is
    /// armed.
    generation: u32,
    recv_armed: bool,
}

/// io_uring: what a connection index sends with. The kernel reads `buf`
/// while the `SENDMSG` is in flight, so a connection's queued frames are
/// copied here (one copy a flush) and left alone until the completion;
/// kept per index, boxed, for the whole run, so that neither a new
/// connection on the index nor the vector's growth moves or frees bytes
/// a send still reads.
struct Outbox {
    msg: SendMsg,
    buf: Vec<u8>,
    /// Bytes of `buf` the kernel has taken.
    sent: usize,
    /// A send is in flight, of connection `generation`.
    busy: bool,
    generation: u32,
}

/// HTTP/2's per-thread state: its connections, their slots and users.
pub(crate) struct Http2 {
    shared: Arc<Shared>,
    buf: Box<[u8]>,
    streams: StreamUsers,
    links: Vec<Option<Link>>,
    free_links: Vec<usize>,
    /// Per request kind (0: a plain GET, k: the plan's `requests[k − 1]`):
    /// its method and header fields, and its body, sent as DATA. A
    /// request's header block (`hpack.rs`) is made as it is sent, into
    /// `block`: nothing is held per URL (issue 27).
    kinds: Vec<(String, Vec<(String, String)>)>,
    bodies: Vec<Option<Arc<[u8]>>>,
    block: Vec<u8>,
    tls: Option<Arc<rustls::ClientConfig>>,
    tls_resuming: Option<Arc<rustls::ClientConfig>>,
    /// Connections whose socket had more to read when their turn's reads
    /// ran out (see [`READS_PER_TURN`]): read again next turn, as mio
    /// will not say so again (edge-triggered).
    unread: Vec<usize>,
    unread_now: Vec<usize>,
    ended: Vec<Ended>,
    checksum: bool,
    /// Connections open now (from the socket's creation to its close):
    /// open loop, the client's `peak_connections`.
    live: u64,
    /// `BENCHLAB_IO=uring` (h2c only): receives are multishot receives into
    /// the ring's buffers, sends `SENDMSG` entries from each index's
    /// [`Outbox`].
    uring: bool,
    // Boxed on purpose: a send in flight holds pointers to its outbox's
    // `msghdr` (and its iovec array), which must not move when the vector
    // grows.
    #[allow(clippy::vec_box)]
    outboxes: Vec<Box<Outbox>>,
}

/// With ALPN `h2` (RFC 9113 §3.2): the server must pick it.
fn with_alpn(cfg: &Arc<rustls::ClientConfig>) -> Arc<rustls::ClientConfig> {
    let mut c = (**cfg).clone();
    c.alpn_protocols = vec![b"h2".to_vec()];
    Arc::new(c)
}

/// What a connection's failed write or read counts as: a reset once it
/// was established (its first bytes left), else the connect's failure.
fn socket_failure(established: bool, e: &io::Error) -> ErrorKind {
    if established {
        ErrorKind::Reset
    } else {
        connect_error_kind(e, false)
    }
}

/// Reads of one connection in one loop turn at most: a server sending
/// without pause (a flood of frames benchlab ignores) must not keep the
/// loop from its deadline, the stop flag (Ctrl-C) and the other
/// connections.
const READS_PER_TURN: u32 = 64;

impl Http2 {
    /// The HTTP/2 protocol of one OS thread, and its loop's core.
    pub(crate) fn new(shared: Arc<Shared>, index: usize, tx: Sender<Snapshot>) -> io::Result<EventLoop<Http2>> {
        let core = Core::new(Arc::clone(&shared), index, 0x9E37_79B9_7F4A_7C15, tx)?;
        let plan = &shared.plan;
        let h2 = plan.http2.unwrap_or_default();
        // In an open loop the users are request slots: the cap on streams
        // in flight (`ClientPlan::slots`), spread over the connections.
        let streams = StreamUsers::new(&shared, h2.connections, index);
        let plain = RequestSpec::default();
        let specs = std::iter::once(&plain).chain(&plan.requests);
        let kinds = specs
            .clone()
            .map(|r| (r.method.clone(), r.h2_fields(&plan.headers)))
            .collect();
        let bodies = std::iter::once(None)
            .chain(plan.requests.iter().map(|r| r.body.as_deref().map(Arc::from)))
            .collect();
        // Room for the longest block up front, so sending never grows it.
        let longest_path = (0..plan.urls.len()).map(|i| plan.urls.path(i).len()).max().unwrap_or(0);
        let fields: usize = specs
            .map(|r| {
                r.h2_fields(&plan.headers)
                    .iter()
                    .map(|(n, v)| n.len() + v.len() + 10)
                    .sum::<usize>()
            })
            .max()
            .unwrap_or(0);
        let authority = plan.urls.origins().iter().map(|o| o.authority.len()).max().unwrap_or(0);
        let block = Vec::with_capacity(64 + longest_path + authority + fields);
        let uring = core.io.backend == Backend::Uring;
        if uring && plan.urls.origins().iter().any(|o| o.scheme == Scheme::Https) {
            return Err(io::Error::other(
                "BENCHLAB_IO=uring drives http:// URLs only (rustls reads and writes its own socket); unset it for https",
            ));
        }
        let (tls, tls_resuming) = match &shared.tls {
            Some(t) => (Some(with_alpn(&t.full)), Some(with_alpn(&t.resuming))),
            None => (None, None),
        };
        let protocol = Http2 {
            buf: vec![0u8; plan.receive_buffer.max(16 * 1024)].into_boxed_slice(),
            streams,
            links: Vec::new(),
            free_links: Vec::new(),
            kinds,
            bodies,
            block,
            tls,
            tls_resuming,
            unread: Vec::new(),
            unread_now: Vec::new(),
            ended: Vec::new(),
            checksum: plan.urls.any_checksum(),
            live: 0,
            uring,
            outboxes: Vec::new(),
            shared: Arc::clone(&shared),
        };
        Ok(EventLoop { core, protocol })
    }

    fn h2(&self) -> crate::plan::H2Plan {
        self.shared.plan.http2.unwrap_or_default()
    }
}

impl Protocol for Http2 {
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
        match ev {
            Ev::Ready(ev) => self.on_event(core, ev.token, ev.readable || ev.closed, ev.writable || ev.closed),
            Ev::Recv {
                token,
                generation,
                res,
                buffer,
                more,
            } => self.on_recv(core, token, generation, res, buffer, more),
            Ev::Sent { token, generation, res } => self.on_sent(core, token, generation, res),
        }
    }

    fn pending(&self) -> bool {
        !self.unread.is_empty()
    }

    fn after_events(&mut self, core: &mut Core) {
        std::mem::swap(&mut self.unread, &mut self.unread_now);
        for k in 0..self.unread_now.len() {
            let l = self.unread_now[k];
            // Its slot may have been closed, or reused by a new
            // connection, since: only an open one is read.
            if self.links[l].as_ref().is_some_and(|k| k.state == LinkState::Open) {
                self.read(core, l);
            }
        }
        self.unread_now.clear();
    }

    fn sweep(&mut self, core: &mut Core, now: Instant) {
        self.sweep_users(core, now);
    }

    fn open_connections(&self) -> u64 {
        self.live
    }

    fn in_flight(&self) -> (u64, u64) {
        self.streams.in_flight()
    }

    fn close_all(&mut self, core: &mut Core) {
        // An io_uring receive holds its socket open until cancelled.
        if let Some(u) = core.reactor.uring() {
            u.cancel_all();
        }
        self.links.clear();
    }
}

impl Http2 {
    /// Picks user `u`'s next URL and queues it for a stream on its slot,
    /// opening one (or a connection) if it can.
    fn start_request(&mut self, core: &mut Core, u: usize) {
        self.streams.queue_next(core, &self.shared, u);
        if self.streams.users[u].state == UState::Queued {
            self.service(core, self.streams.users[u].slot as usize);
        }
    }

    /// Opens streams for the slot's waiting users while its connection and
    /// the server allow, or a connection when it has none.
    fn service(&mut self, core: &mut Core, slot: usize) {
        if self.streams.slots[slot].queue.is_empty() {
            return;
        }
        let Some(l) = self.streams.slots[slot].current else {
            return self.open_link(core, slot);
        };
        let streams = self.h2().streams;
        let now = Instant::now();
        let timeout = self.shared.plan.timeout;
        let mut opened = 0u64;
        {
            let Some(link) = self.links[l].as_mut() else { return };
            if link.state != LinkState::Open || !link.conn.got_settings {
                return;
            }
            while link.left > 0 && link.conn.can_open(streams) {
                let Some(u) = self.streams.slots[slot].queue.pop_front() else {
                    break;
                };
                let user = &mut self.streams.users[u as usize];
                let url = self.shared.plan.urls.get(user.url as usize);
                let (method, fields) = &self.kinds[url.request as usize];
                let t = url.target;
                hpack::method_block_into(&mut self.block, method, t.scheme, &t.authority, url.path, fields);
                link.conn.open_with(
                    u,
                    &self.block,
                    self.checksum,
                    self.bodies[url.request as usize].as_ref(),
                );
                link.left -= 1;
                opened += 1;
                // Latency from the first HEADERS byte written, or from the
                // connect for the streams that waited for the connection.
                user.start = if user.queued_at <= link.connect_start {
                    link.connect_start
                } else {
                    now
                };
                user.deadline = user.start + timeout;
                user.state = UState::Streaming;
                user.link = l;
            }
            if link.left == 0 {
                // Spent: finishes its streams; the next request opens anew.
                self.streams.slots[slot].current = None;
            }
        }
        if opened > 0 {
            core.second.conn.h2_streams += opened;
            if core.window_open {
                core.window.conn.h2_streams += opened;
            }
            self.flush(core, l);
        }
        if self.streams.slots[slot].current.is_none() && !self.streams.slots[slot].queue.is_empty() {
            self.open_link(core, slot);
        }
    }

    fn open_link(&mut self, core: &mut Core, slot: usize) {
        let Some(&u) = self.streams.slots[slot].queue.front() else {
            return;
        };
        let plan = &self.shared.plan;
        let url = self.streams.users[u as usize].url as usize;
        let target = plan.urls.origin(url);
        let source = core.next_source();
        if std::mem::take(&mut self.streams.slots[slot].reconnect_pending) {
            core.bump(|c| c.reconnects += 1);
        }
        let left = match plan.connection.requests_per_connection {
            None => u32::MAX,
            Some((min, max)) => min + core.rng.below((max - min) as u64 + 1) as u32,
        };
        let window = self.h2().window;
        let tcp = match connect(target.addr, source, core.io.busy_poll_us) {
            Ok(t) => t,
            Err(kind) => return self.fail_queue(core, slot, kind),
        };
        let _ = tcp.set_nodelay(true);
        let sock = if target.scheme == Scheme::Https {
            let cfg = if core.rng.percent(plan.tls.resumption_percent) {
                self.tls_resuming.as_ref()
            } else {
                self.tls.as_ref()
            };
            let conn = match (cfg, &self.shared.server_names[plan.urls.origin_index(url)]) {
                (Some(cfg), Some(name)) => UnbufferedClientConnection::new(Arc::clone(cfg), name.clone()).ok(),
                _ => None,
            };
            match conn {
                Some(conn) => Sock::Tls(Box::new(TlsSock::new(tcp, conn))),
                None => return self.fail_queue(core, slot, ErrorKind::Tls),
            }
        } else {
            Sock::Plain(tcp)
        };
        let l = self.free_index();
        let link = Link {
            sock,
            conn: Conn::new(window),
            state: LinkState::Connecting,
            slot: slot as u32,
            connect_start: Instant::now(),
            counted: false,
            left,
            out_armed: true,
            generation: 0,
            recv_armed: false,
        };
        let mut link = link;
        let registered = if let Some(u) = core.reactor.uring() {
            // The receive waits for the connect like any data; the first
            // SENDMSG waits for it too.
            let ob = &mut self.outboxes[l];
            link.generation = next_generation(ob.generation);
            ob.generation = link.generation;
            link.recv_armed = u.recv(link.sock.fd(), l, link.generation).is_ok();
            link.recv_armed
        } else {
            core.reactor.register(link.sock.fd(), l, true).is_ok()
        };
        if !registered {
            self.free_links.push(l);
            return self.fail_queue(core, slot, ErrorKind::ConnectRefused);
        }
        self.links[l] = Some(link);
        self.live += 1;
        self.streams.slots[slot].current = Some(l);
        if matches!(self.links[l].as_ref().map(|k| &k.sock), Some(Sock::Plain(_))) {
            // On loopback the connect is often done already.
            self.connected(core, l);
        }
    }

    /// Every user waiting on `slot` fails with `kind` (its connection could
    /// not be made); each tries again on the next loop turn.
    fn fail_queue(&mut self, core: &mut Core, slot: usize, kind: ErrorKind) {
        while let Some(u) = self.streams.slots[slot].queue.pop_front() {
            self.streams.fail(core, &self.shared, u as usize, kind, 0);
        }
    }

    fn on_event(&mut self, core: &mut Core, l: usize, readable: bool, writable: bool) {
        let Some(link) = self.links.get(l).and_then(|k| k.as_ref()) else {
            return;
        };
        match link.state {
            LinkState::Connecting => {
                if writable || readable {
                    self.connected(core, l);
                }
            }
            LinkState::Handshaking => self.handshake(core, l),
            LinkState::Open => {
                if writable {
                    self.flush(core, l);
                    // Streams held back while bytes waited unsent
                    // (`conn::MAX_UNSENT_TO_OPEN`) may open now.
                    if let Some(slot) = self.links[l].as_ref().map(|k| k.slot as usize) {
                        self.service(core, slot);
                    }
                }
                if readable {
                    self.read(core, l);
                }
            }
        }
    }

    /// The TCP connect finished (or seems to): handshake, or start HTTP/2.
    fn connected(&mut self, core: &mut Core, l: usize) {
        let Some(link) = self.links[l].as_mut() else { return };
        if matches!(link.sock, Sock::Tls(_)) {
            link.state = LinkState::Handshaking;
            self.handshake(core, l);
        } else {
            link.state = LinkState::Open;
            self.flush(core, l);
        }
    }

    fn count_opened(&mut self, core: &mut Core, l: usize) {
        if let Some(link) = self.links[l].as_mut() {
            if !std::mem::replace(&mut link.counted, true) {
                core.bump(|c| c.connections_opened += 1);
            }
        }
    }

    fn handshake(&mut self, core: &mut Core, l: usize) {
        self.handshake_inner(core, l);
        self.sync_write(core, l);
    }

    /// Level-triggered epoll: asks for writability exactly while the
    /// connection waits to write (a connect, or bytes unsent), so that a
    /// writable socket does not wake the loop every turn.
    fn sync_write(&mut self, core: &mut Core, l: usize) {
        if !core.reactor.tracks_writes() {
            return;
        }
        let Some(link) = self.links[l].as_mut() else { return };
        let want = match link.state {
            LinkState::Connecting => true,
            _ => !link.conn.unsent().is_empty() || matches!(&link.sock, Sock::Tls(b) if b.wants_write()),
        };
        if want != link.out_armed && core.reactor.want_write(link.sock.fd(), l, want).is_ok() {
            link.out_armed = want;
        }
    }

    fn handshake_inner(&mut self, core: &mut Core, l: usize) {
        let Some(link) = self.links[l].as_mut() else { return };
        let slot = link.slot as usize;
        let Sock::Tls(t) = &mut link.sock else { return };
        let mut wrote = false;
        let step = sock::handshake(t, &mut wrote);
        if wrote {
            self.count_opened(core, l);
        }
        let (kind, error) = match step {
            Handshake::Done { .. } => (None, None),
            // The socket is asked for writability while rustls has bytes
            // to send (`sync_write`), for readability always.
            Handshake::WantWrite | Handshake::WantRead => return,
            Handshake::Closed => (Some(ErrorKind::Tls), None),
            Handshake::Rejected(e) => (Some(ErrorKind::Tls), Some(e)),
            Handshake::Failed(e) => (Some(connect_error_kind(&e, true)), None),
        };
        if let Some(kind) = kind {
            if kind == ErrorKind::Tls {
                let url = self.streams.slots[slot]
                    .queue
                    .front()
                    .map_or(0, |&u| self.streams.users[u as usize].url as usize);
                let host = &self.shared.plan.urls.origin(url).host;
                let opts = &self.shared.plan.tls;
                self.shared.note_tls_error(|| match &error {
                    Some(e) => crate::tls::explain(e, host, opts),
                    None => crate::tls::CLOSED_IN_HANDSHAKE.to_string(),
                });
            }
            return self.break_link(core, l, kind);
        }
        let Some(link) = self.links[l].as_mut() else { return };
        let Sock::Tls(b) = &link.sock else { return };
        let resumed = matches!(b.conn.handshake_kind(), Some(rustls::HandshakeKind::Resumed));
        let h2 = b.conn.alpn_protocol() == Some(b"h2");
        if resumed {
            core.bump(|c| c.tls_resumptions += 1);
        } else {
            core.bump(|c| c.tls_full_handshakes += 1);
        }
        if !h2 {
            self.shared.note_tls_error(|| {
                "the server did not choose HTTP/2 in the TLS handshake (ALPN `h2`): enable HTTP/2 on its TLS listener, or run with --http 1.1".to_string()
            });
            return self.break_link(core, l, ErrorKind::Tls);
        }
        link.state = LinkState::Open;
        self.flush(core, l);
        self.read(core, l);
    }

    /// Writes what the connection has queued, as far as the socket takes
    /// it, and asks for writability while some waits.
    fn flush(&mut self, core: &mut Core, l: usize) {
        self.flush_inner(core, l);
        self.sync_write(core, l);
    }

    fn flush_inner(&mut self, core: &mut Core, l: usize) {
        if self.uring {
            return self.flush_uring(core, l);
        }
        let Some(link) = self.links[l].as_mut() else { return };
        if link.state != LinkState::Open {
            return;
        }
        let mut progress = false;
        let result: io::Result<()> = (|| {
            match &mut link.sock {
                Sock::Plain(tcp) => {
                    while !link.conn.unsent().is_empty() {
                        match crate::sock::send_raw(tcp, link.conn.unsent()) {
                            Ok(n) => {
                                link.conn.wrote(n);
                                progress = true;
                            }
                            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                            Err(e) => return Err(e),
                        }
                    }
                }
                Sock::Tls(t) => loop {
                    // Records the socket did not take go first; then the
                    // frames, a record at a time.
                    if !t.flush()? {
                        return Ok(());
                    }
                    if link.conn.unsent().is_empty() {
                        break;
                    }
                    let n = t.write(&[io::IoSlice::new(link.conn.unsent())])?;
                    link.conn.wrote(n);
                    progress = true;
                },
            }
            Ok(())
        })();
        if progress {
            self.count_opened(core, l);
        }
        if let Err(e) = result {
            let kind = socket_failure(self.links[l].as_ref().is_some_and(|k| k.counted), &e);
            self.break_link(core, l, kind);
        }
    }

    /// Reads everything the socket has (mio is edge-triggered) and hands it
    /// to the connection.
    fn read(&mut self, core: &mut Core, l: usize) {
        let mut eof = false;
        let mut broken: Option<ErrorKind> = None;
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
            if self.links[l]
                .as_ref()
                .is_some_and(|k| k.conn.control_queued() >= MAX_CONTROL_QUEUED / 2)
            {
                // Answers pile up: write them before reading on, so a
                // server that reads is not taken for a flood.
                self.flush(core, l);
            }
            let Some(link) = self.links[l].as_mut() else { return };
            let r = match link.sock.read(&mut self.buf) {
                ReadOutcome::Data(n) => Ok(n),
                ReadOutcome::WouldBlock => break,
                ReadOutcome::Eof => Err(None),
                ReadOutcome::Error(e) => Err(Some(sock::read_error_kind(&e))),
            };
            match r {
                Ok(n) => {
                    let res = link.conn.receive(&self.buf[..n], &mut self.ended);
                    if let Err(f) = res {
                        broken = Some(f.kind);
                        break;
                    }
                }
                Err(None) => {
                    eof = true;
                    break;
                }
                Err(Some(k)) => {
                    broken = Some(k);
                    break;
                }
            }
        }
        self.after_receive(core, l);
        if let Some(kind) = broken {
            self.flush(core, l);
            return self.break_link(core, l, kind);
        }
        if eof {
            return self.break_link(core, l, ErrorKind::Reset);
        }
        self.flush(core, l);
    }

    /// Counts what the connection took in, ends the streams that ended,
    /// and opens new ones where room was made.
    fn after_receive(&mut self, core: &mut Core, l: usize) {
        let Some(link) = self.links[l].as_mut() else { return };
        let conn_bytes = std::mem::take(&mut link.conn.conn_bytes);
        if link.conn.got_settings && self.shared.h2_settings.get().is_none() {
            let _ = self.shared.h2_settings.set(link.conn.peer);
        }
        let slot = link.slot as usize;
        let goaway = link.conn.goaway.is_some();
        core.second.conn.h2_connection_bytes += conn_bytes;
        if core.window_open {
            core.window.conn.h2_connection_bytes += conn_bytes;
        }
        if goaway && self.streams.slots[slot].current == Some(l) {
            // No new streams on it; the refused ones go to a new one.
            self.streams.slots[slot].current = None;
            core.bump(|c| c.h2_goaways += 1);
        }
        self.end_streams(core);
        self.service(core, slot);
        self.retire_if_done(core, l);
    }

    fn end_streams(&mut self, core: &mut Core) {
        while let Some(e) = self.ended.pop() {
            let u = e.user as usize;
            // Every send of the request counts, one refused by a GOAWAY
            // and sent again included.
            self.streams.users[u].sent += e.sent;
            match e.outcome {
                Outcome::Done { status, body, xxh3 } => {
                    self.streams
                        .complete(core, &self.shared, u, status, e.bytes, body, xxh3)
                }
                Outcome::Reset(code) => {
                    let i = (code as usize).min(14);
                    core.second.conn.stream_reset_codes[i] += 1;
                    if core.in_window(Instant::now()) {
                        core.window.conn.stream_reset_codes[i] += 1;
                    }
                    self.streams
                        .fail(core, &self.shared, u, ErrorKind::StreamReset, e.bytes);
                }
                Outcome::Refused => {
                    let user = &mut self.streams.users[u];
                    if user.retried {
                        self.streams.fail(core, &self.shared, u, ErrorKind::GoAway, e.bytes);
                    } else {
                        // Sent again, once, on a new connection: a
                        // reconnect, as an idle close is for HTTP/1.
                        user.retried = true;
                        user.state = UState::Queued;
                        user.queued_at = Instant::now();
                        let slot = user.slot as usize;
                        self.streams.slots[slot].queue.push_front(u as u32);
                        // One per stream sent again, as HTTP/1 counts one
                        // per request re-sent after an idle close.
                        core.bump(|c| c.reconnects += 1);
                    }
                }
                Outcome::Failed(kind) => self.streams.fail(core, &self.shared, u, kind, e.bytes),
            }
        }
    }

    /// A connection index that is free, and (io_uring) whose outbox no
    /// send still reads.
    fn free_index(&mut self) -> usize {
        if let Some(k) = self
            .free_links
            .iter()
            .rposition(|&l| !self.uring || !self.outboxes[l].busy)
        {
            return self.free_links.swap_remove(k);
        }
        self.links.push(None);
        if self.uring {
            self.outboxes.push(Box::new(Outbox {
                msg: SendMsg::new(),
                buf: Vec::new(),
                sent: 0,
                busy: false,
                generation: 0,
            }));
        }
        self.links.len() - 1
    }

    /// io_uring: queues a `SENDMSG` of what the connection has to send,
    /// unless one is in flight (its completion sends the rest).
    fn flush_uring(&mut self, core: &mut Core, l: usize) {
        let Some(link) = self.links[l].as_mut() else { return };
        let ob = &mut self.outboxes[l];
        if ob.busy || link.conn.unsent().is_empty() {
            return;
        }
        let Some(u) = core.reactor.uring() else { return };
        ob.buf.clear();
        ob.buf.extend_from_slice(link.conn.unsent());
        let n = ob.buf.len();
        link.conn.wrote(n);
        ob.sent = 0;
        ob.busy = true;
        ob.msg.set(&[io::IoSlice::new(&ob.buf)]);
        if u.send(link.sock.fd(), l, link.generation, ob.msg.header()).is_err() {
            ob.busy = false;
            self.break_link(core, l, ErrorKind::Reset);
        }
    }

    /// io_uring: a `SENDMSG` of connection `l`'s outbox completed.
    fn on_sent(&mut self, core: &mut Core, l: usize, generation: u32, res: i32) {
        let Some(ob) = self.outboxes.get_mut(l) else { return };
        if ob.generation != generation {
            return;
        }
        ob.busy = false;
        let current = self.links[l].as_ref().is_some_and(|k| k.generation == generation);
        if !current {
            return; // a closed connection's
        }
        if res < 0 {
            let e = io::Error::from_raw_os_error(-res);
            let kind = socket_failure(self.links[l].as_ref().is_some_and(|k| k.counted), &e);
            return self.break_link(core, l, kind);
        }
        self.count_opened(core, l);
        let ob = &mut self.outboxes[l];
        ob.sent += res as usize;
        if ob.sent < ob.buf.len() {
            // The rest of the same bytes, from where the kernel stopped.
            let Some(link) = self.links[l].as_ref() else { return };
            let Some(u) = core.reactor.uring() else { return };
            ob.busy = true;
            ob.msg.set(&[io::IoSlice::new(&ob.buf[ob.sent..])]);
            if u.send(link.sock.fd(), l, generation, ob.msg.header()).is_err() {
                ob.busy = false;
                self.break_link(core, l, ErrorKind::Reset);
            }
            return;
        }
        self.flush(core, l);
        // Streams held back while bytes waited unsent may open now.
        if let Some(slot) = self.links[l].as_ref().map(|k| k.slot as usize) {
            self.service(core, slot);
        }
    }

    /// io_uring: a completion of connection `l`'s multishot receive; the
    /// bytes are handed to the connection from the ring's buffer, which
    /// goes back to the kernel afterwards.
    fn on_recv(&mut self, core: &mut Core, l: usize, generation: u32, res: i32, buffer: Option<u16>, more: bool) {
        let (ptr, len) = match (buffer, core.reactor.uring()) {
            (Some(b), Some(u)) if res > 0 => u.data(b, res as usize),
            _ => (std::ptr::null(), 0),
        };
        let data: &[u8] = if len == 0 {
            &[]
        } else {
            // SAFETY: the buffer is the kernel's again only after recycle,
            // below; the mapping outlives the worker's loop.
            unsafe { std::slice::from_raw_parts(ptr, len) }
        };
        self.received(core, l, generation, res, data, more);
        if let (Some(b), Some(u)) = (buffer, core.reactor.uring()) {
            u.recycle(b);
        }
    }

    fn received(&mut self, core: &mut Core, l: usize, generation: u32, res: i32, data: &[u8], more: bool) {
        let Some(link) = self.links.get_mut(l).and_then(|k| k.as_mut()) else {
            return;
        };
        if link.generation != generation {
            return; // a closed connection's
        }
        if !more {
            link.recv_armed = false;
        }
        if res == -libc::ECANCELED {
            return;
        }
        if res > 0 {
            if link.state == LinkState::Connecting {
                link.state = LinkState::Open;
            }
            if let Err(f) = link.conn.receive(data, &mut self.ended) {
                self.after_receive(core, l);
                self.flush(core, l);
                return self.break_link(core, l, f.kind);
            }
            self.after_receive(core, l);
            self.flush(core, l);
        } else if res == 0 {
            self.after_receive(core, l);
            return self.break_link(core, l, ErrorKind::Reset);
        } else if res != -libc::ENOBUFS {
            let e = io::Error::from_raw_os_error(-res);
            let kind = socket_failure(link.counted, &e);
            return self.break_link(core, l, kind);
        }
        // Out of buffers, or a receive that ended: armed again.
        if let Some(link) = self.links[l].as_mut() {
            if !link.recv_armed && link.generation == generation {
                if let Some(u) = core.reactor.uring() {
                    link.recv_armed = u.recv(link.sock.fd(), l, generation).is_ok();
                }
            }
        }
    }

    /// Closes a connection that will open no more streams and has none.
    fn retire_if_done(&mut self, core: &mut Core, l: usize) {
        let Some(link) = self.links[l].as_ref() else { return };
        let slot = link.slot as usize;
        if self.streams.slots[slot].current != Some(l) && link.conn.active() == 0 {
            self.close_link(core, l);
        }
    }

    fn close_link(&mut self, core: &mut Core, l: usize) {
        if let Some(link) = self.links[l].take() {
            self.live -= 1;
            if let Some(u) = core.reactor.uring() {
                // Cancel the receive that would hold the socket open, and
                // submit what is queued: an entry names its socket by
                // descriptor, which the next connection may reuse.
                if link.recv_armed {
                    let _ = u.cancel_recv(l, link.generation);
                }
                u.submit_queued();
            }
            // Closing the socket (dropping the link) takes it out of the
            // poll set.
            let slot = link.slot as usize;
            if self.streams.slots[slot].current == Some(l) {
                self.streams.slots[slot].current = None;
            }
            self.free_links.push(l);
        }
    }

    /// The connection failed or the server closed it: its streams end with
    /// `kind`; users waiting on it get a new connection.
    fn break_link(&mut self, core: &mut Core, l: usize, kind: ErrorKind) {
        let Some(link) = self.links[l].as_mut() else { return };
        let slot = link.slot as usize;
        let idle = link.conn.active() == 0;
        let served = link.conn.opened > 0;
        let open = link.state == LinkState::Open;
        link.conn.end_all(&mut self.ended, kind);
        let was_current = self.streams.slots[slot].current == Some(l);
        self.close_link(core, l);
        self.end_streams(core);
        if was_current && !self.streams.slots[slot].queue.is_empty() {
            if idle && served && open && kind == ErrorKind::Reset {
                // Closed while idle (a server's keep-alive limit): the
                // waiting users go on a new connection, as HTTP/1's
                // reconnect.
                self.streams.slots[slot].reconnect_pending = true;
                self.open_link(core, slot);
            } else if !open || (!served && kind != ErrorKind::Reset) {
                // The connection itself failed, or broke the protocol
                // before it carried a stream: its waiting users' requests
                // fail with it (another connection to the same server
                // would only do the same).
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
                    let (bytes, sent) = self.links[l]
                        .as_mut()
                        .and_then(|k| k.conn.cancel(u as u32))
                        .unwrap_or((0, 0));
                    self.streams.users[u].sent += sent;
                    self.streams.fail(core, &self.shared, u, ErrorKind::Timeout, bytes);
                    self.flush(core, l);
                    self.retire_if_done(core, l);
                    if let Some(slot) = self.links[l].as_ref().map(|k| k.slot as usize) {
                        self.service(core, slot);
                    }
                }
                UState::Queued => {
                    let slot = user.slot as usize;
                    let connecting = self.streams.slots[slot]
                        .current
                        .and_then(|l| self.links[l].as_ref())
                        .is_some_and(|k| k.state == LinkState::Connecting);
                    self.streams.slots[slot].queue.retain(|&q| q as usize != u);
                    let kind = if connecting {
                        ErrorKind::ConnectTimeout
                    } else {
                        ErrorKind::Timeout
                    };
                    self.streams.fail(core, &self.shared, u, kind, 0);
                    // A connection that never came up is given up with it.
                    if self.streams.slots[slot].queue.is_empty() {
                        if let Some(l) = self.streams.slots[slot].current {
                            if self.links[l].as_ref().is_some_and(|k| k.state != LinkState::Open) {
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
