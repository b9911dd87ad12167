//! The HTTP/2 event loop of one OS thread: a few connections, each
//! carrying many streams, and the closed-loop virtual users mapped onto
//! those streams (user j of the client on connection j mod C).
//!
//! It is its own loop beside HTTP/1's (`worker.rs`) rather than more states
//! in it: an HTTP/1 user owns a connection, an HTTP/2 connection owns many
//! users, and the two would share little but the socket calls, which are
//! shared (`worker::connect`, the TLS helpers). It waits on the same
//! `Reactor` as HTTP/1 (`BENCHLAB_IO`: mio's edge-triggered epoll, or
//! level-triggered epoll; io_uring is refused by name) and keeps the same
//! open-loop schedule (`schedule.rs`): a user is then a request slot, one
//! stream, and the schedule's sends take free ones.
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
use crate::plan::{Expect, Load, OpenLoop, Scheme, Stop};
use crate::reactor::{Backend, Ev, IoConfig, Reactor};
use crate::rng::SplitMix64;
use crate::schedule::{Schedule, Timer, TIMER};
use crate::stats::{ErrorKind, Snapshot, Stats, ThreadEnd};
use crate::worker::{bump, connect, connect_error_kind, Shared};
use mio::net::TcpStream;
use rustls::ClientConnection;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::io::{self, Read, Write};
use std::sync::atomic::Ordering;
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::{Duration, Instant};

enum Sock {
    Plain(TcpStream),
    Tls(Box<(TcpStream, ClientConnection)>),
}

impl Sock {
    fn fd(&self) -> std::os::fd::RawFd {
        use std::os::fd::AsRawFd;
        match self {
            Sock::Plain(t) => t.as_raw_fd(),
            Sock::Tls(b) => b.0.as_raw_fd(),
        }
    }
}

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
}

/// A connection slot: the users that share it and its current connection
/// (an older one may still be finishing its streams).
struct Slot {
    current: Option<usize>,
    /// Users waiting for a stream, oldest first.
    queue: VecDeque<u32>,
    /// The last connection was closed while idle: the next one re-opens it.
    reconnect_pending: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum UState {
    Thinking,
    Queued,
    Streaming,
    Done,
}

struct User {
    state: UState,
    slot: u32,
    url: u32,
    link: usize,
    queued_at: Instant,
    start: Instant,
    deadline: Instant,
    /// This request was already refused by a GOAWAY once and sent again.
    retried: bool,
    arrived: bool,
    /// Open loop: when the schedule meant this request to be sent; its
    /// latency counts from here (`start` gives the as-sent latency).
    intended: Option<Instant>,
}

pub(crate) struct H2Worker {
    shared: Arc<Shared>,
    index: usize,
    /// The thread number its snapshots carry (`index`, or after the HTTP/1
    /// loops of a mixed client).
    report_as: usize,
    /// The same readiness source as HTTP/1's (`BENCHLAB_IO`: mio's
    /// edge-triggered epoll or level-triggered epoll; io_uring is refused,
    /// see [`H2Worker::new`]).
    reactor: Reactor,
    buf: Box<[u8]>,
    second: Stats,
    window: Stats,
    /// The thread's CPU and loop lag, charged to each second.
    cpu: crate::stats::LoopMeter,
    window_open: bool,
    users: Vec<User>,
    slots: Vec<Slot>,
    links: Vec<Option<Link>>,
    free_links: Vec<usize>,
    /// Each URL's request header block (see `hpack.rs`).
    blocks: Vec<Vec<u8>>,
    tls: Option<Arc<rustls::ClientConfig>>,
    tls_resuming: Option<Arc<rustls::ClientConfig>>,
    think: BinaryHeap<Reverse<(Instant, u32)>>,
    ready: Vec<u32>,
    /// Connections whose socket had more to read when their turn's reads
    /// ran out (see [`READS_PER_TURN`]): read again next turn, as mio
    /// will not say so again (edge-triggered).
    unread: Vec<usize>,
    ended: Vec<Ended>,
    rng: SplitMix64,
    budget: u64,
    budget_chunk: u64,
    done_users: usize,
    users_arrived: u64,
    next_source: usize,
    checksum: bool,
    /// Open loop: the schedule, its timer (as HTTP/1's: `epoll_wait`'s
    /// millisecond timeout would make every send late), and the users
    /// — request slots here, one stream each — with no request, the next
    /// to take one on top. A closed loop has none of these.
    schedule: Option<Schedule>,
    timer: Option<Timer>,
    free: Vec<u32>,
    /// Connections open now (from the socket's creation to its close), and
    /// as last added to `Shared::open_connections` (open loop: the
    /// client's `peak_connections`, as HTTP/1's `dispatch` keeps it).
    live: u64,
    published: u64,
    tx: Sender<Snapshot>,
}

/// With ALPN `h2` (RFC 9113 §3.2): the server must pick it.
fn with_alpn(cfg: &Arc<rustls::ClientConfig>) -> Arc<rustls::ClientConfig> {
    let mut c = (**cfg).clone();
    c.alpn_protocols = vec![b"h2".to_vec()];
    Arc::new(c)
}

/// The connections thread `index` of `threads` drives, as a range of the
/// client's connection numbers, and the users on each.
pub(crate) fn thread_share(connections: u32, users: u32, threads: usize, index: usize) -> (u32, Vec<u32>) {
    let n = threads as u32;
    let t = index as u32;
    let mine = connections / n + u32::from(t < connections % n);
    let first = t * (connections / n) + t.min(connections % n);
    let per = (first..first + mine)
        .map(|k| users / connections + u32::from(k < users % connections))
        .collect();
    (first, per)
}

const SWEEP_MAX: Duration = Duration::from_millis(10);
/// Reads of one connection in one loop turn at most: a server sending
/// without pause (a flood of frames benchlab ignores) must not keep the
/// loop from its deadline, the stop flag (Ctrl-C) and the other
/// connections.
const READS_PER_TURN: u32 = 64;

impl H2Worker {
    pub(crate) fn new(shared: Arc<Shared>, index: usize, tx: Sender<Snapshot>) -> io::Result<H2Worker> {
        let plan = &shared.plan;
        let h2 = plan.http2.unwrap_or_default();
        // In an open loop the users are request slots: the cap on streams
        // in flight (`ClientPlan::slots`), spread over the connections.
        let (_, per_conn) = thread_share(h2.connections, plan.slots(), plan.os_threads, index);
        let open = matches!(plan.load, Load::Open(_));
        let now = Instant::now();
        let mut users = Vec::new();
        for (slot, &n) in per_conn.iter().enumerate() {
            for _ in 0..n {
                users.push(User {
                    state: UState::Thinking,
                    slot: slot as u32,
                    url: 0,
                    link: usize::MAX,
                    queued_at: now,
                    start: now,
                    deadline: now,
                    retried: false,
                    arrived: false,
                    intended: None,
                });
            }
        }
        let slots = per_conn
            .iter()
            .map(|_| Slot {
                current: None,
                queue: VecDeque::new(),
                reconnect_pending: false,
            })
            .collect();
        let blocks = plan
            .urls
            .iter()
            .map(|u| hpack::request_block(u.target.scheme, &u.target.authority, &u.target.path, &plan.headers))
            .collect();
        let threads = plan.os_threads as u64;
        let budget_chunk = match plan.stop {
            Stop::Requests(n) => (n / (threads * 16)).clamp(1, 64),
            Stop::After(_) => 0,
        };
        let free_users = users.len() as u32;
        let io = IoConfig::get().map_err(io::Error::other)?;
        if io.backend == Backend::Uring {
            // Its receives land in provided buffers and its sends are
            // SENDMSG entries, driven by the HTTP/1 loop's per-connection
            // states; this loop reads and writes its sockets itself.
            return Err(io::Error::other(
                "BENCHLAB_IO=uring drives HTTP/1 only: unset it (or set mio or epoll-lt) for --http 2 and http = \"2\"",
            ));
        }
        let (tls, tls_resuming) = match &shared.tls {
            Some(t) => (Some(with_alpn(&t.full)), Some(with_alpn(&t.resuming))),
            None => (None, None),
        };
        Ok(H2Worker {
            reactor: Reactor::new(io, plan.receive_buffer)?,
            buf: vec![0u8; plan.receive_buffer.max(16 * 1024)].into_boxed_slice(),
            second: if open {
                Stats::open_loop(plan.classes.len())
            } else {
                Stats::new(plan.classes.len())
            },
            window: if open {
                Stats::open_loop(plan.classes.len())
            } else {
                Stats::new(plan.classes.len())
            },
            cpu: crate::stats::LoopMeter::default(),
            window_open: false,
            users,
            slots,
            links: Vec::new(),
            free_links: Vec::new(),
            blocks,
            tls,
            tls_resuming,
            think: BinaryHeap::new(),
            ready: Vec::new(),
            unread: Vec::new(),
            ended: Vec::new(),
            rng: SplitMix64::new(plan.seed ^ (index as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15)),
            budget: 0,
            budget_chunk,
            done_users: 0,
            users_arrived: 0,
            next_source: index,
            checksum: plan.urls.iter().any(|u| matches!(u.expect, Expect::Checksum { .. })),
            schedule: None,
            timer: None,
            // Popped from the end: user 0 (on the thread's first
            // connection) first, so a low rate keeps to few connections.
            free: if open {
                (0..free_users).rev().collect()
            } else {
                Vec::new()
            },
            live: 0,
            published: 0,
            tx,
            shared,
            index,
            report_as: index,
        })
    }

    /// Snapshots carry thread number `n` (a mixed client's collector counts
    /// the HTTP/1 loops first).
    pub(crate) fn reporting_as(mut self, n: usize) -> H2Worker {
        self.report_as = n;
        self
    }

    fn h2(&self) -> crate::plan::H2Plan {
        self.shared.plan.http2.unwrap_or_default()
    }

    pub(crate) fn run(mut self) {
        let shared = Arc::clone(&self.shared);
        let plan = &shared.plan;
        let start = shared.start;
        let end = match plan.stop {
            Stop::After(d) => Some(start + d),
            Stop::Requests(_) => None,
        };
        let sweep_every = (plan.timeout / 20).clamp(Duration::from_millis(1), SWEEP_MAX);
        let mut events = self.reactor.events(1024);
        let mut second: u32 = 0;
        let mut next_snapshot = start + Duration::from_secs(1);
        let begin = start + plan.start_delay;
        let now = Instant::now();
        if now < begin {
            std::thread::sleep(begin - now);
        }
        let now = Instant::now();
        self.cpu.start();
        self.window_open = self.in_window(now);
        if let Load::Open(o) = plan.load {
            // The schedule starts at the client's begin instant, as HTTP/1's.
            self.schedule = Some(Schedule::new(o, begin, plan.os_threads, self.index, plan.seed));
            // Without a timer the loop still runs, on epoll's coarser timeout.
            self.timer = Timer::new()
                .and_then(|t| self.reactor.register_readable(t.fd(), TIMER).map(|()| t))
                .ok();
        } else {
            let threads = plan.os_threads as u128;
            let total = plan.virtual_users.max(1) as u128;
            let ramp = plan.ramp_up.as_nanos();
            for j in 0..self.users.len() {
                let k = j as u128 * threads + self.index as u128;
                let at = now + Duration::from_nanos((ramp * k / total) as u64);
                self.think.push(Reverse((at, j as u32)));
            }
        }
        let mut next_sweep = now + sweep_every;
        loop {
            let now = Instant::now();
            if shared.stop.load(Ordering::Relaxed) || end.is_some_and(|e| now >= e) {
                break;
            }
            self.window_open = self.in_window(now);
            if self.done_users == self.users.len() {
                break;
            }
            if self.schedule.is_some() {
                self.send_due(now, end);
                self.publish_connections();
            }
            while let Some(Reverse((at, u))) = self.think.peek().copied() {
                if at > now {
                    break;
                }
                self.think.pop();
                if self.users[u as usize].state == UState::Thinking {
                    self.start_request(u as usize);
                }
            }
            for u in std::mem::take(&mut self.ready) {
                if self.users[u as usize].state == UState::Thinking {
                    self.start_request(u as usize);
                }
            }
            if now >= next_sweep {
                self.sweep(now);
                next_sweep = now + sweep_every;
            }
            if now >= next_snapshot {
                self.cpu.tick(&mut self.second.load, now - next_snapshot);
                self.send_snapshot(second, None);
                second += 1;
                next_snapshot += Duration::from_secs(1);
                continue;
            }
            let mut wake = next_sweep.min(next_snapshot);
            if let Some(e) = end {
                wake = wake.min(e);
            }
            if let Some(Reverse((at, _))) = self.think.peek() {
                wake = wake.min(*at);
            }
            let mut timeout = if self.ready.is_empty() && self.unread.is_empty() {
                wake.saturating_duration_since(now)
            } else {
                Duration::ZERO
            };
            if let Some(s) = &self.schedule {
                // With every user busy, a completion (an event) wakes us.
                if !self.free.is_empty() && s.next < wake {
                    let until = s.next.saturating_duration_since(now);
                    match &self.timer {
                        Some(t) if until > Duration::ZERO && timeout > Duration::ZERO => {
                            t.arm(until);
                            timeout = timeout.min(until + Duration::from_millis(1));
                        }
                        _ => timeout = timeout.min(until),
                    }
                }
            }
            if let Err(e) = self.reactor.wait(&mut events, timeout) {
                if e.kind() != io::ErrorKind::Interrupted {
                    break;
                }
            }
            events.each(|ev| {
                let Ev::Ready(ev) = ev else { return };
                if ev.token == TIMER {
                    if let Some(t) = &self.timer {
                        t.clear();
                    }
                    return;
                }
                self.on_event(ev.token, ev.readable || ev.closed, ev.writable || ev.closed);
            });
            if !self.unread.is_empty() {
                for l in std::mem::take(&mut self.unread) {
                    // Its slot may have been closed, or reused by a new
                    // connection, since: only an open one is read.
                    if self.links[l].as_ref().is_some_and(|k| k.state == LinkState::Open) {
                        self.read(l);
                    }
                }
            }
        }
        // A stream open is a request in flight; a user queued for a stream
        // (its connection not up yet, or every stream it allows busy) has
        // sent nothing: it is waiting, as an HTTP/1 user waiting to connect.
        let in_flight = self.users.iter().filter(|u| u.state == UState::Streaming).count() as u64;
        let users_waiting = self.users.iter().filter(|u| u.state == UState::Queued).count() as u64;
        self.cpu.tick(&mut self.second.load, Duration::ZERO);
        let (cpu_user, cpu_system) = self.cpu.total();
        self.links.clear();
        let window = std::mem::replace(&mut self.window, Stats::new(0));
        self.send_snapshot(
            second,
            Some(ThreadEnd {
                in_flight,
                cpu_user,
                cpu_system,
                elapsed: start.elapsed(),
                users_arrived: self.users_arrived,
                users_waiting,
                window,
            }),
        );
    }

    fn send_snapshot(&mut self, second: u32, last: Option<ThreadEnd>) {
        let snap = Snapshot {
            thread: self.report_as,
            second,
            stats: self.second.clone(),
            last,
        };
        self.second.reset();
        let _ = self.tx.send(snap);
    }

    #[inline]
    fn in_window(&self, now: Instant) -> bool {
        let t = now.saturating_duration_since(self.shared.start);
        let (from, until) = self.shared.plan.window;
        t >= from && t < until
    }

    /// Open loop: sends every request whose intended time has come, each
    /// by a free user (a stream slot), while there is one; the rest wait
    /// for one (counted once each), as HTTP/1's `send_due`.
    fn send_due(&mut self, now: Instant, end: Option<Instant>) {
        loop {
            let Some(s) = self.schedule.as_mut() else { return };
            let intended = s.next;
            if intended > now || end.is_some_and(|e| intended >= e) {
                return;
            }
            let Some(u) = self.free.pop() else {
                if !std::mem::replace(&mut s.waited, true) {
                    bump(&mut self.second, &mut self.window, self.window_open, |c| {
                        c.in_flight_waits += 1
                    });
                }
                return;
            };
            s.advance();
            let late = now.saturating_duration_since(intended) > OpenLoop::LATE_TOLERANCE;
            bump(&mut self.second, &mut self.window, self.window_open, |c| c.sends += 1);
            if late {
                bump(&mut self.second, &mut self.window, self.window_open, |c| {
                    c.late_sends += 1
                });
            }
            self.users[u as usize].intended = Some(intended);
            self.start_request(u as usize);
        }
    }

    /// Open loop: adds the change in this thread's open connections to the
    /// client's count and its peak, once a loop turn after the sends
    /// (where connections are opened), as HTTP/1's `dispatch`.
    fn publish_connections(&mut self) {
        let open = self.live;
        if open == self.published {
            return;
        }
        let shared = &self.shared;
        let all = if open > self.published {
            let more = open - self.published;
            shared.open_connections.fetch_add(more, Ordering::Relaxed) + more
        } else {
            let gone = self.published - open;
            shared
                .open_connections
                .fetch_sub(gone, Ordering::Relaxed)
                .saturating_sub(gone)
        };
        shared.peak_connections.fetch_max(all, Ordering::Relaxed);
        self.published = open;
    }

    /// Picks user `u`'s next URL and queues it for a stream on its slot,
    /// opening one (or a connection) if it can.
    fn start_request(&mut self, u: usize) {
        self.start_request_deferred(u);
        if self.users[u].state == UState::Queued {
            self.service(self.users[u].slot as usize);
        }
    }

    /// Opens streams for the slot's waiting users while its connection and
    /// the server allow, or a connection when it has none.
    fn service(&mut self, slot: usize) {
        if self.slots[slot].queue.is_empty() {
            return;
        }
        let Some(l) = self.slots[slot].current else {
            return self.open_link(slot);
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
                let Some(u) = self.slots[slot].queue.pop_front() else {
                    break;
                };
                let user = &mut self.users[u as usize];
                let block = &self.blocks[user.url as usize];
                link.conn.open(u, block, self.checksum);
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
                self.slots[slot].current = None;
            }
        }
        if opened > 0 {
            self.second.conn.h2_streams += opened;
            if self.window_open {
                self.window.conn.h2_streams += opened;
            }
            self.flush(l);
        }
        if self.slots[slot].current.is_none() && !self.slots[slot].queue.is_empty() {
            self.open_link(slot);
        }
    }

    fn open_link(&mut self, slot: usize) {
        let Some(&u) = self.slots[slot].queue.front() else {
            return;
        };
        let plan = &self.shared.plan;
        let url = self.users[u as usize].url as usize;
        let target = &plan.urls[url].target;
        let source = if plan.source_addresses.is_empty() {
            None
        } else {
            self.next_source = (self.next_source + 1) % plan.source_addresses.len();
            Some(plan.source_addresses[self.next_source])
        };
        if std::mem::take(&mut self.slots[slot].reconnect_pending) {
            bump(&mut self.second, &mut self.window, self.window_open, |c| {
                c.reconnects += 1
            });
        }
        let left = match plan.connection.requests_per_connection {
            None => u32::MAX,
            Some((min, max)) => min + self.rng.below((max - min) as u64 + 1) as u32,
        };
        let window = self.h2().window;
        let tcp = match connect(target.addr, source, 0) {
            Ok(t) => t,
            Err(kind) => return self.fail_queue(slot, kind),
        };
        let _ = tcp.set_nodelay(true);
        let sock = if target.scheme == Scheme::Https {
            let cfg = if self.rng.percent(plan.tls.resumption_percent) {
                self.tls_resuming.as_ref()
            } else {
                self.tls.as_ref()
            };
            let conn = match (cfg, &self.shared.server_names[url]) {
                (Some(cfg), Some(name)) => ClientConnection::new(Arc::clone(cfg), name.clone()).ok(),
                _ => None,
            };
            match conn {
                Some(c) => Sock::Tls(Box::new((tcp, c))),
                None => return self.fail_queue(slot, ErrorKind::Tls),
            }
        } else {
            Sock::Plain(tcp)
        };
        let l = self.free_links.pop().unwrap_or_else(|| {
            self.links.push(None);
            self.links.len() - 1
        });
        let link = Link {
            sock,
            conn: Conn::new(window),
            state: LinkState::Connecting,
            slot: slot as u32,
            connect_start: Instant::now(),
            counted: false,
            left,
            out_armed: true,
        };
        if self.reactor.register(link.sock.fd(), l, true).is_err() {
            self.free_links.push(l);
            return self.fail_queue(slot, ErrorKind::ConnectRefused);
        }
        self.links[l] = Some(link);
        self.live += 1;
        self.slots[slot].current = Some(l);
        if matches!(self.links[l].as_ref().map(|k| &k.sock), Some(Sock::Plain(_))) {
            // On loopback the connect is often done already.
            self.connected(l);
        }
    }

    /// Every user waiting on `slot` fails with `kind` (its connection could
    /// not be made); each tries again on the next loop turn.
    fn fail_queue(&mut self, slot: usize, kind: ErrorKind) {
        while let Some(u) = self.slots[slot].queue.pop_front() {
            self.fail(u as usize, kind, 0);
        }
    }

    fn on_event(&mut self, l: usize, readable: bool, writable: bool) {
        let Some(link) = self.links.get(l).and_then(|k| k.as_ref()) else {
            return;
        };
        match link.state {
            LinkState::Connecting => {
                if writable || readable {
                    self.connected(l);
                }
            }
            LinkState::Handshaking => self.handshake(l),
            LinkState::Open => {
                if writable {
                    self.flush(l);
                    // Streams held back while bytes waited unsent
                    // (`conn::MAX_UNSENT_TO_OPEN`) may open now.
                    if let Some(slot) = self.links[l].as_ref().map(|k| k.slot as usize) {
                        self.service(slot);
                    }
                }
                if readable {
                    self.read(l);
                }
            }
        }
    }

    /// The TCP connect finished (or seems to): handshake, or start HTTP/2.
    fn connected(&mut self, l: usize) {
        let Some(link) = self.links[l].as_mut() else { return };
        if matches!(link.sock, Sock::Tls(_)) {
            link.state = LinkState::Handshaking;
            self.handshake(l);
        } else {
            link.state = LinkState::Open;
            self.flush(l);
        }
    }

    fn count_opened(&mut self, l: usize) {
        if let Some(link) = self.links[l].as_mut() {
            if !std::mem::replace(&mut link.counted, true) {
                bump(&mut self.second, &mut self.window, self.window_open, |c| {
                    c.connections_opened += 1
                });
            }
        }
    }

    fn note_tls_error(&self, explain: impl FnOnce() -> String) {
        if self.shared.tls_error.get().is_none() {
            let _ = self.shared.tls_error.set(explain());
        }
    }

    fn handshake(&mut self, l: usize) {
        self.handshake_inner(l);
        self.sync_write(l);
    }

    /// Level-triggered epoll: asks for writability exactly while the
    /// connection waits to write (a connect, or bytes unsent), so that a
    /// writable socket does not wake the loop every turn.
    fn sync_write(&mut self, l: usize) {
        if !self.reactor.tracks_writes() {
            return;
        }
        let Some(link) = self.links[l].as_mut() else { return };
        let want = match link.state {
            LinkState::Connecting => true,
            _ => !link.conn.unsent().is_empty() || matches!(&link.sock, Sock::Tls(b) if b.1.wants_write()),
        };
        if want != link.out_armed && self.reactor.want_write(link.sock.fd(), l, want).is_ok() {
            link.out_armed = want;
        }
    }

    fn handshake_inner(&mut self, l: usize) {
        let Some(link) = self.links[l].as_mut() else { return };
        let slot = link.slot as usize;
        let Sock::Tls(b) = &mut link.sock else { return };
        let (tcp, tls) = &mut **b;
        let mut wrote = false;
        // What failed: the kind, and the rustls error to explain.
        let failed: Option<(ErrorKind, Option<rustls::Error>)> = 'hs: loop {
            while tls.wants_write() {
                match tls.write_tls(tcp) {
                    Ok(_) => wrote = true,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) => break 'hs Some((connect_error_kind(&e, true), None)),
                }
            }
            if !tls.is_handshaking() {
                break None;
            }
            match tls.read_tls(tcp) {
                Ok(0) => break Some((ErrorKind::Tls, None)),
                Ok(_) => {
                    if let Err(e) = tls.process_new_packets() {
                        let _ = tls.write_tls(tcp);
                        break Some((ErrorKind::Tls, Some(e)));
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if wrote {
                        self.count_opened(l);
                    }
                    return;
                }
                Err(e) => break Some((connect_error_kind(&e, true), None)),
            }
        };
        if wrote {
            self.count_opened(l);
        }
        if let Some((kind, error)) = failed {
            if kind == ErrorKind::Tls {
                let url = self.slots[slot]
                    .queue
                    .front()
                    .map_or(0, |&u| self.users[u as usize].url as usize);
                let host = &self.shared.plan.urls[url].target.host;
                let opts = &self.shared.plan.tls;
                self.note_tls_error(|| match &error {
                    Some(e) => crate::tls::explain(e, host, opts),
                    None => crate::tls::CLOSED_IN_HANDSHAKE.to_string(),
                });
            }
            return self.break_link(l, kind);
        }
        let Some(link) = self.links[l].as_mut() else { return };
        let Sock::Tls(b) = &link.sock else { return };
        let resumed = matches!(b.1.handshake_kind(), Some(rustls::HandshakeKind::Resumed));
        let h2 = b.1.alpn_protocol() == Some(b"h2");
        if resumed {
            bump(&mut self.second, &mut self.window, self.window_open, |c| {
                c.tls_resumptions += 1
            });
        } else {
            bump(&mut self.second, &mut self.window, self.window_open, |c| {
                c.tls_full_handshakes += 1
            });
        }
        if !h2 {
            self.note_tls_error(|| {
                "the server did not choose HTTP/2 in the TLS handshake (ALPN `h2`): enable HTTP/2 on its TLS listener, or run with --http 1.1".to_string()
            });
            return self.break_link(l, ErrorKind::Tls);
        }
        link.state = LinkState::Open;
        self.flush(l);
        self.read(l);
    }

    /// Writes what the connection has queued, as far as the socket takes
    /// it, and asks for writability while some waits.
    fn flush(&mut self, l: usize) {
        self.flush_inner(l);
        self.sync_write(l);
    }

    fn flush_inner(&mut self, l: usize) {
        let Some(link) = self.links[l].as_mut() else { return };
        if link.state != LinkState::Open {
            return;
        }
        let mut progress = false;
        let result: io::Result<()> = (|| {
            match &mut link.sock {
                Sock::Plain(tcp) => {
                    while !link.conn.unsent().is_empty() {
                        match tcp.write(link.conn.unsent()) {
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
                Sock::Tls(b) => {
                    let (tcp, tls) = &mut **b;
                    // rustls takes plaintext up to its buffer limit; what it
                    // did not take goes after its records are written.
                    loop {
                        while !link.conn.unsent().is_empty() {
                            let n = tls.writer().write(link.conn.unsent())?;
                            if n == 0 {
                                break;
                            }
                            link.conn.wrote(n);
                        }
                        if !tls.wants_write() {
                            break;
                        }
                        while tls.wants_write() {
                            match tls.write_tls(tcp) {
                                Ok(_) => progress = true,
                                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                                Err(e) => return Err(e),
                            }
                        }
                    }
                }
            }
            Ok(())
        })();
        if progress {
            self.count_opened(l);
        }
        if let Err(e) = result {
            let counted = self.links[l].as_ref().is_some_and(|k| k.counted);
            let kind = if counted {
                ErrorKind::Reset
            } else {
                connect_error_kind(&e, false)
            };
            self.break_link(l, kind);
        }
    }

    /// Reads everything the socket has (mio is edge-triggered) and hands it
    /// to the connection.
    fn read(&mut self, l: usize) {
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
                self.flush(l);
            }
            let Some(link) = self.links[l].as_mut() else { return };
            let r = match &mut link.sock {
                Sock::Plain(tcp) => match tcp.read(&mut self.buf) {
                    Ok(0) => Err(None),
                    Ok(n) => Ok(n),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(_) => Err(Some(ErrorKind::Reset)),
                },
                Sock::Tls(b) => tls_read(b, &mut self.buf),
            };
            match r {
                Ok(0) => break,
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
        self.after_receive(l);
        if let Some(kind) = broken {
            self.flush(l);
            return self.break_link(l, kind);
        }
        if eof {
            return self.break_link(l, ErrorKind::Reset);
        }
        self.flush(l);
    }

    /// Counts what the connection took in, ends the streams that ended,
    /// and opens new ones where room was made.
    fn after_receive(&mut self, l: usize) {
        let Some(link) = self.links[l].as_mut() else { return };
        let conn_bytes = std::mem::take(&mut link.conn.conn_bytes);
        if link.conn.got_settings && self.shared.h2_settings.get().is_none() {
            let _ = self.shared.h2_settings.set(link.conn.peer);
        }
        let slot = link.slot as usize;
        let goaway = link.conn.goaway.is_some();
        self.second.conn.h2_connection_bytes += conn_bytes;
        if self.window_open {
            self.window.conn.h2_connection_bytes += conn_bytes;
        }
        if goaway && self.slots[slot].current == Some(l) {
            // No new streams on it; the refused ones go to a new one.
            self.slots[slot].current = None;
            bump(&mut self.second, &mut self.window, self.window_open, |c| {
                c.h2_goaways += 1
            });
        }
        self.end_streams();
        self.service(slot);
        self.retire_if_done(l);
    }

    fn end_streams(&mut self) {
        while let Some(e) = self.ended.pop() {
            let u = e.user as usize;
            match e.outcome {
                Outcome::Done { status, body, xxh3 } => self.complete(u, status, e.bytes, body, xxh3),
                Outcome::Reset(code) => {
                    let i = (code as usize).min(14);
                    self.second.conn.stream_reset_codes[i] += 1;
                    if self.in_window(Instant::now()) {
                        self.window.conn.stream_reset_codes[i] += 1;
                    }
                    self.fail(u, ErrorKind::StreamReset, e.bytes);
                }
                Outcome::Refused => {
                    let user = &mut self.users[u];
                    if user.retried {
                        self.fail(u, ErrorKind::GoAway, e.bytes);
                    } else {
                        // Sent again, once, on a new connection: a
                        // reconnect, as an idle close is for HTTP/1.
                        user.retried = true;
                        user.state = UState::Queued;
                        user.queued_at = Instant::now();
                        let slot = user.slot as usize;
                        self.slots[slot].queue.push_front(u as u32);
                        // One per stream sent again, as HTTP/1 counts one
                        // per request re-sent after an idle close.
                        bump(&mut self.second, &mut self.window, self.window_open, |c| {
                            c.reconnects += 1
                        });
                    }
                }
                Outcome::Failed(kind) => self.fail(u, kind, e.bytes),
            }
        }
    }

    /// Closes a connection that will open no more streams and has none.
    fn retire_if_done(&mut self, l: usize) {
        let Some(link) = self.links[l].as_ref() else { return };
        let slot = link.slot as usize;
        if self.slots[slot].current != Some(l) && link.conn.active() == 0 {
            self.close_link(l);
        }
    }

    fn close_link(&mut self, l: usize) {
        if let Some(link) = self.links[l].take() {
            self.live -= 1;
            // Closing the socket (dropping the link) takes it out of the
            // poll set.
            let slot = link.slot as usize;
            if self.slots[slot].current == Some(l) {
                self.slots[slot].current = None;
            }
            self.free_links.push(l);
        }
    }

    /// The connection failed or the server closed it: its streams end with
    /// `kind`; users waiting on it get a new connection.
    fn break_link(&mut self, l: usize, kind: ErrorKind) {
        let Some(link) = self.links[l].as_mut() else { return };
        let slot = link.slot as usize;
        let idle = link.conn.active() == 0;
        let served = link.conn.opened > 0;
        let open = link.state == LinkState::Open;
        link.conn.end_all(&mut self.ended, kind);
        let was_current = self.slots[slot].current == Some(l);
        self.close_link(l);
        self.end_streams();
        if was_current && !self.slots[slot].queue.is_empty() {
            if idle && served && open && kind == ErrorKind::Reset {
                // Closed while idle (a server's keep-alive limit): the
                // waiting users go on a new connection, as HTTP/1's
                // reconnect.
                self.slots[slot].reconnect_pending = true;
                self.open_link(slot);
            } else if !open || (!served && kind != ErrorKind::Reset) {
                // The connection itself failed, or broke the protocol
                // before it carried a stream: its waiting users' requests
                // fail with it (another connection to the same server
                // would only do the same).
                self.fail_queue(slot, kind);
            } else {
                self.open_link(slot);
            }
        } else if idle && served && was_current {
            self.slots[slot].reconnect_pending = true;
        }
    }

    fn sweep(&mut self, now: Instant) {
        for u in 0..self.users.len() {
            let user = &self.users[u];
            if now < user.deadline {
                continue;
            }
            match user.state {
                UState::Streaming => {
                    let l = user.link;
                    let bytes = self.links[l]
                        .as_mut()
                        .and_then(|k| k.conn.cancel(u as u32))
                        .unwrap_or(0);
                    self.fail(u, ErrorKind::Timeout, bytes);
                    self.flush(l);
                    self.retire_if_done(l);
                    if let Some(slot) = self.links[l].as_ref().map(|k| k.slot as usize) {
                        self.service(slot);
                    }
                }
                UState::Queued => {
                    let slot = user.slot as usize;
                    let connecting = self.slots[slot]
                        .current
                        .and_then(|l| self.links[l].as_ref())
                        .is_some_and(|k| k.state == LinkState::Connecting);
                    self.slots[slot].queue.retain(|&q| q as usize != u);
                    let kind = if connecting {
                        ErrorKind::ConnectTimeout
                    } else {
                        ErrorKind::Timeout
                    };
                    self.fail(u, kind, 0);
                    // A connection that never came up is given up with it.
                    if self.slots[slot].queue.is_empty() {
                        if let Some(l) = self.slots[slot].current {
                            if self.links[l].as_ref().is_some_and(|k| k.state != LinkState::Open) {
                                self.close_link(l);
                            }
                        }
                    }
                }
                UState::Thinking | UState::Done => {}
            }
        }
    }

    fn complete(&mut self, u: usize, status: u16, bytes: u64, body: u64, xxh3: Option<u64>) {
        let now = Instant::now();
        let counted = self.in_window(now);
        let user = &mut self.users[u];
        let url = &self.shared.plan.urls[user.url as usize];
        // From the intended send in an open loop, from the HEADERS (or
        // the connect) otherwise; see docs/counting.md.
        let as_sent = now - user.start;
        let latency = user.intended.map_or(as_sent, |t| now - t);
        let verdict = if status != url.expect_status {
            Err(ErrorKind::Status)
        } else {
            match url.expect {
                Expect::Status => Ok(()),
                Expect::Size(size) if body == size => Ok(()),
                Expect::Checksum { size, xxh3: want } if body == size && xxh3 == Some(want) => Ok(()),
                _ => Err(ErrorKind::WrongBody),
            }
        };
        let record = |class: &mut crate::stats::ClassStats| match verdict {
            Ok(()) => {
                class.record_success(latency, bytes, body);
                class.record_as_sent(as_sent);
            }
            Err(kind) => class.record_error(kind, latency, bytes),
        };
        record(&mut self.second.classes[url.class]);
        if counted {
            record(&mut self.window.classes[url.class]);
        }
        if !std::mem::replace(&mut user.arrived, true) {
            self.users_arrived += 1;
        }
        self.next(u, true);
    }

    fn fail(&mut self, u: usize, kind: ErrorKind, bytes: u64) {
        let now = Instant::now();
        let user = &self.users[u];
        let class = self.shared.plan.urls[user.url as usize].class;
        let latency = user.intended.map_or(now - user.start, |t| now - t);
        self.second.classes[class].record_error(kind, latency, bytes);
        if self.in_window(now) {
            self.window.classes[class].record_error(kind, latency, bytes);
        }
        self.next(u, false);
    }

    /// After a request ended: think, then the next one. A success with no
    /// think time starts the next at once (its stream is free now); a
    /// failure waits for the next loop turn, so that a failure found while
    /// opening a connection cannot recurse.
    fn next(&mut self, u: usize, at_once: bool) {
        let think = self.shared.plan.think_time;
        self.users[u].state = UState::Thinking;
        self.users[u].link = usize::MAX;
        if self.schedule.is_some() {
            // Open loop: the slot is free for the schedule's next send.
            self.users[u].intended = None;
            self.free.push(u as u32);
            return;
        }
        if !think.is_zero() {
            self.think.push(Reverse((Instant::now() + think, u as u32)));
        } else if at_once {
            // Queued now; its stream opens when the caller services the slot.
            self.start_request_deferred(u);
        } else {
            self.ready.push(u as u32);
        }
    }

    /// Queues user `u`'s next request without servicing the slot (the
    /// caller is inside a pass over the connection and services it after).
    fn start_request_deferred(&mut self, u: usize) {
        if self.budget_chunk > 0 {
            if self.budget == 0 {
                self.budget = self.shared.reserve(self.budget_chunk);
            }
            if self.budget == 0 {
                self.users[u].state = UState::Done;
                self.done_users += 1;
                return;
            }
            self.budget -= 1;
        }
        let url = self.shared.pick_url(&mut self.rng);
        let now = Instant::now();
        let user = &mut self.users[u];
        user.url = url as u32;
        user.retried = false;
        user.state = UState::Queued;
        user.queued_at = now;
        user.start = now;
        user.deadline = now + self.shared.plan.timeout;
        let slot = user.slot as usize;
        self.slots[slot].queue.push_back(u as u32);
    }
}

/// Reads decrypted bytes; `Err(None)` at the end of the connection.
fn tls_read(b: &mut (TcpStream, ClientConnection), buf: &mut [u8]) -> Result<usize, Option<ErrorKind>> {
    let (tcp, tls) = b;
    loop {
        match tls.reader().read(buf) {
            Ok(0) => return Err(None),
            Ok(n) => return Ok(n),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Err(None),
            Err(_) => return Err(Some(ErrorKind::Tls)),
        }
        match tls.read_tls(tcp) {
            Ok(0) => return Err(None),
            Ok(_) => {
                if tls.process_new_packets().is_err() {
                    let _ = tls.write_tls(tcp);
                    return Err(Some(ErrorKind::Tls));
                }
                while tls.wants_write() {
                    if tls.write_tls(tcp).is_err() {
                        break;
                    }
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(0),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return Err(Some(ErrorKind::Reset)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_and_users_spread_over_threads_exactly() {
        // 5 connections, 12 users, 2 threads: 3 + 2 connections.
        let (first, per) = thread_share(5, 12, 2, 0);
        assert_eq!((first, per.clone()), (0, vec![3, 3, 2]));
        let (first, per) = thread_share(5, 12, 2, 1);
        assert_eq!((first, per), (3, vec![2, 2]));
    }
}
