//! HTTP/1 on the event loop (`event_loop.rs`): many closed-loop virtual
//! users per OS thread, each a small state machine around at most one
//! connection.
//!
//! Written by hand on `mio` (a thin epoll wrapper) instead of tokio + hyper,
//! as wrk and h2load are written on bare epoll: oha, built on tokio and
//! hyper, spends 1.65× the CPU per request of the bare-syscall floor
//! (`bench/floor/`), and wrk 1.33×. What the loop does per request
//! is what the floor does — one `write`, one `read` (keep-alive), plus
//! `socket`, `connect`, `epoll_ctl`, a read of EOF and `close` for a new
//! connection — and in user space only framing, the request's parts
//! joined into one buffer, one clock read (keep-alive: a response's end is
//! the next request's start) and the HDR records of the second and the
//! window. In steady state it allocates nothing, takes no lock and sends no
//! cross-thread message: statistics are per thread and leave it once a
//! second as a [`Snapshot`](crate::stats::Snapshot).
//!
//! Which system calls deliver readiness or data is the reactor's business
//! (`reactor.rs`: mio's edge-triggered epoll by default; level-triggered
//! epoll and io_uring for measurement); this protocol is the same for all.
//!
//! Edge-triggered readiness (mio's mode) is used without draining sockets to
//! `EAGAIN`: a response is read until it is complete, and any later data or
//! FIN raises a new edge. A read that fills the whole buffer, or an event
//! carrying a FIN, is followed by another read, so nothing is missed.

use crate::event_loop::{check_response, Core, Measured, Protocol, Shared};
use crate::flow::FlowVu;
use crate::parse::{Feed, FrameError, HeadMemo, ResponseParser};
use crate::plan::{Load, Scheme};
use crate::prepared::{head_len, parts_len, Parts, Variant};
use crate::reactor::{next_generation, Backend, Ev};
use crate::sock::{self, connect, connect_error_kind, is_closed_error, Handshake, ReadOutcome, SendMsg, Sock, TlsSock};
use crate::stats::{ConnectionKind, ErrorKind};
use rustls::client::UnbufferedClientConnection;
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::time::{Duration, Instant};
use xxhash_rust::xxh3::Xxh3;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Waiting for think time to pass (possibly holding an idle connection).
    Thinking,
    Connecting,
    Handshaking,
    Writing,
    Reading,
    /// The response is complete and counted; waiting for the server's FIN
    /// so the server, not the client, holds TIME_WAIT (as real browsers and
    /// the floor do), then the next request starts.
    Draining,
    /// Arriving: waiting for one of the OS thread's arrival slots before
    /// its first connect (see [`Http1::arrivals`]). Nothing is sent yet,
    /// so no clock runs.
    Arriving,
    /// No more requests for this virtual user.
    Done,
}

/// One closed-loop virtual user (WebBench's worker thread).
struct Vu {
    state: State,
    sock: Option<Sock>,
    /// Requests this connection may still carry, the current one included;
    /// `u32::MAX` = unlimited.
    conn_left: u32,
    /// Requests completed on this connection (0 = the connection is new, so
    /// a close before any byte is an error, not an idle close).
    conn_served: u32,
    /// The connection was opened before the start (`preconnect`) and held
    /// idle: closed before any byte of its first response, it is a server's
    /// idle close (a reconnect), as on a reused connection.
    held: bool,
    http10: bool,
    keepalive: bool,
    /// The next connection opened re-opens one the server closed while idle.
    reconnect_pending: bool,
    /// The current connection is established (its first bytes were
    /// written); counted in `connections_opened` then, so refused connects
    /// are errors, not opened connections.
    connected: bool,
    url: u32,
    variant: Variant,
    /// The next connect is an arrival (the user's first, or the first
    /// after a failed request) and must take an arrival slot.
    arriving: bool,
    /// This user holds an arrival slot until its current request ends.
    holds_slot: bool,
    /// This user has had a response (counted once in `users_arrived`).
    arrived: bool,
    /// Latency start (connect start or first byte written).
    start: Instant,
    /// Open loop: when the schedule meant this request to be sent; its
    /// latency counts from here (`start` gives the as-sent latency).
    intended: Option<Instant>,
    deadline: Instant,
    written: usize,
    /// The request's body waits for the server's `100 Continue` (its
    /// head is written first; see [`CONTINUE_WAIT`]).
    continue_wait: bool,
    /// The current request's length, and its head's (all but the body),
    /// set once when it starts.
    len: usize,
    head: usize,
    /// The reactor reports this connection's writability (a connect or a
    /// write waits); only level-triggered epoll needs it kept in step.
    out_armed: bool,
    /// io_uring: which of this slot's connections is current (stale
    /// completions of an earlier one are ignored), and whether its
    /// multishot receive is armed (its `SENDMSG` scatter list is in
    /// [`Http1::msgs`]).
    generation: u32,
    recv_armed: bool,
    parser: ResponseParser,
    hasher: Option<Box<Xxh3>>,
    /// A flow workload's user (docs/flows.md): its requests are rendered
    /// per step instead of prepared per URL.
    flow: Option<Box<FlowVu>>,
}

impl Vu {
    /// The connection has carried a request or was held idle before the
    /// start: a close before any byte of a response is the server's idle
    /// close, not a failed connect.
    #[inline]
    fn reused(&self) -> bool {
        self.conn_served > 0 || self.held
    }

    /// Where the current write stops: with `Expect: 100-continue` at the
    /// head's end until the server's `100 Continue` (or `CONTINUE_WAIT`),
    /// else at the request's end.
    #[inline]
    fn write_end(&self) -> usize {
        if self.continue_wait {
            self.head
        } else {
            self.len
        }
    }
}

/// A request joined whole in `Http1::send_buf`: which one, and its
/// lengths.
#[derive(Debug, Clone, Copy)]
struct Joined {
    url: u32,
    variant: Variant,
    len: usize,
    head: usize,
}

/// HTTP/1's per-thread state: its users and their connections.
pub(crate) struct Http1 {
    shared: Arc<Shared>,
    vus: Vec<Vu>,
    /// io_uring only: each user's request scatter list for `SENDMSG`,
    /// never resized (an entry must not move while its send is in
    /// flight); empty with epoll, so a user costs its `Vu` alone.
    msgs: Vec<SendMsg>,
    buf: Box<[u8]>,
    /// Where a small request's parts are joined for one `write` (see
    /// `write_more`).
    send_buf: Box<[u8]>,
    /// The request `send_buf` holds whole, when it does: the next request
    /// of the same URL and variant is written from there as it is
    /// (`write_joined`).
    joined: Option<Joined>,
    /// The last response head this OS thread parsed (`HeadMemo`): most
    /// heads of a run are the one before, byte for byte.
    memo: HeadMemo,
    /// Arrival slots in use. A user arrives (its first connect, or the
    /// first after a failure) holding a slot until that first request
    /// ends, and at most `arrival_limit` do so at once per OS thread; the
    /// others wait, in order, in `arrival_queue`. Without this, 10,000
    /// users connect in the same millisecond: a server's accept queue
    /// (listen backlog 511 in nginx and Apache) overflows, the kernel
    /// drops SYNs and handshake ACKs, and users wait for TCP retransmits
    /// (1 s, 3 s, 7 s) — past their timeout — while the queue sits empty
    /// between retransmits; their reconnects then arrive together again. A
    /// slot is held until the request's response (not merely until the
    /// connect), because the connect completes when the kernel queues the
    /// connection, before the server accepts it: holding it to the
    /// response bounds the connections queued unaccepted to the slots.
    /// Users that have arrived connect freely (HTTP/1.0 connection per
    /// request, reconnects): their pace is already the server's.
    arrivals: usize,
    arrival_limit: usize,
    arrival_queue: std::collections::VecDeque<u32>,
    /// Open loop: the request slots not in flight — those holding an idle
    /// connection (reused first, most recent on top) and those without
    /// one. A closed loop has none of these.
    idle: Vec<u32>,
    free: Vec<u32>,
    /// Open loop: slots in `idle` whose connection the server closed (they
    /// hold none now). Every slot is free, idle or busy, and a busy one
    /// always holds a connection between loop turns, so this thread's open
    /// connections are `slots − free − idle_closed`.
    idle_closed: u32,
    /// Whether the loop is an open loop (`Core::schedule` is set once the
    /// run begins; this is known from the plan at once).
    open: bool,
    /// The URLs go to more than one origin (address and scheme): a kept
    /// connection is reused only for a request to its own origin.
    origins: bool,
}

impl Http1 {
    /// The HTTP/1 protocol of one OS thread with `vus` users, and its loop's
    /// core.
    pub(crate) fn new(
        shared: Arc<Shared>,
        index: usize,
        vus: u32,
        tx: std::sync::mpsc::Sender<crate::stats::Snapshot>,
    ) -> io::Result<crate::event_loop::EventLoop<Http1>> {
        let mut core = Core::new(Arc::clone(&shared), index, 0xA076_1D64_78BD_642F, tx)?;
        let plan = &shared.plan;
        if !matches!(plan.load, Load::Open(_)) {
            core.reserve_users(vus as usize);
        }
        let now = Instant::now();
        let checksum = plan.urls.any_checksum();
        let open = matches!(plan.load, Load::Open(_));
        // This thread's first user: the threads before it hold
        // `slots / n` users each, and the first `slots % n` one more.
        let (slots, n) = (plan.slots() as u64, plan.os_threads.max(1) as u64);
        let t = index as u64;
        let first = plan.first_user + t * (slots / n) + t.min(slots % n);
        let vus = (0..vus)
            .map(|k| Vu {
                state: State::Thinking,
                sock: None,
                conn_left: 0,
                conn_served: 0,
                held: false,
                http10: false,
                keepalive: true,
                reconnect_pending: false,
                connected: false,
                // An open loop's connections follow its schedule, which
                // paces them; arrival slots pace closed-loop users only.
                arriving: !open,
                holds_slot: false,
                arrived: false,
                url: 0,
                variant: Variant::Http11,
                start: now,
                intended: None,
                deadline: now,
                written: 0,
                continue_wait: false,
                len: 0,
                head: 0,
                out_armed: false,
                generation: 0,
                recv_armed: false,
                parser: ResponseParser::new(),
                hasher: checksum.then(|| Box::new(Xxh3::new())),
                flow: plan.flow.as_ref().map(|f| {
                    let t = plan.urls.origin(0);
                    Box::new(FlowVu::new(
                        Arc::clone(f),
                        first + k as u64,
                        plan.seed,
                        &t.authority,
                        t.scheme == Scheme::Https,
                    ))
                }),
            })
            .collect::<Vec<_>>();
        let all = plan.urls.origins();
        let origins = all.iter().any(|o| (o.addr, o.scheme) != (all[0].addr, all[0].scheme));
        if core.io.backend == Backend::Uring && all.iter().any(|o| o.scheme == Scheme::Https) {
            return Err(io::Error::other(
                "BENCHLAB_IO=uring drives http:// URLs only (rustls reads and writes its own socket); unset it for https",
            ));
        }
        let msgs = if core.io.backend == Backend::Uring {
            (0..vus.len()).map(|_| SendMsg::new()).collect()
        } else {
            Vec::new()
        };
        let protocol = Http1 {
            msgs,
            buf: vec![0u8; plan.receive_buffer].into_boxed_slice(),
            send_buf: vec![0u8; SEND_JOIN_MAX].into_boxed_slice(),
            joined: None,
            memo: HeadMemo::default(),
            arrivals: 0,
            arrival_limit: arrival_limit(plan.os_threads),
            arrival_queue: std::collections::VecDeque::new(),
            idle: Vec::new(),
            idle_closed: 0,
            // Popped from the end: slot 0 first.
            free: if open {
                (0..vus.len() as u32).rev().collect()
            } else {
                Vec::new()
            },
            open,
            origins,
            vus,
            shared: Arc::clone(&shared),
        };
        Ok(crate::event_loop::EventLoop { core, protocol })
    }
}

impl Protocol for Http1 {
    fn users(&self) -> usize {
        self.vus.len()
    }

    #[inline]
    fn resume(&mut self, core: &mut Core, u: u32) {
        let i = u as usize;
        match self.vus[i].state {
            // Its request was chosen before it waited for a slot.
            State::Arriving => self.open(core, i),
            State::Thinking => self.start_request(core, i, None),
            _ => {}
        }
    }

    fn take_slot(&mut self) -> Option<u32> {
        let from_idle = self.idle.pop();
        if from_idle.is_some_and(|i| self.vus[i as usize].sock.is_none()) {
            self.idle_closed -= 1;
        }
        from_idle.or_else(|| self.free.pop())
    }

    fn has_free_slot(&self) -> bool {
        !self.idle.is_empty() || !self.free.is_empty()
    }

    fn send(&mut self, core: &mut Core, u: u32, intended: Instant) {
        self.vus[u as usize].intended = Some(intended);
        self.start_request(core, u as usize, None);
    }

    #[inline]
    fn event(&mut self, core: &mut Core, ev: Ev) {
        match ev {
            Ev::Ready(ev) => self.on_event(core, ev.token, ev.readable, ev.writable, ev.closed),
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

    /// Times out requests past their deadline.
    fn sweep(&mut self, core: &mut Core, now: Instant) {
        for i in 0..self.vus.len() {
            let v = &self.vus[i];
            if now < v.deadline {
                continue;
            }
            match v.state {
                State::Connecting => self.fail(core, i, ErrorKind::ConnectTimeout),
                State::Reading if v.continue_wait && now < v.start + self.shared.plan.timeout => {
                    // No `100 Continue` in time: the body goes anyway, as
                    // curl does after its wait.
                    self.send_body(core, i)
                }
                State::Handshaking | State::Writing | State::Reading => self.fail(core, i, ErrorKind::Timeout),
                State::Draining => {
                    self.close(core, i);
                    self.next(core, i);
                }
                State::Thinking | State::Arriving | State::Done => {}
            }
        }
    }

    fn open_connections(&self) -> u64 {
        (self.vus.len() - self.free.len()) as u64 - u64::from(self.idle_closed)
    }

    fn in_flight(&self) -> (u64, u64) {
        let in_flight = self
            .vus
            .iter()
            .filter(|v| {
                matches!(
                    v.state,
                    State::Connecting | State::Handshaking | State::Writing | State::Reading
                )
            })
            .count() as u64;
        let waiting = self.vus.iter().filter(|v| v.state == State::Arriving).count() as u64;
        (in_flight, waiting)
    }

    fn preconnect(&mut self, core: &mut Core, until: Instant) {
        Http1::preconnect(self, core, until);
    }

    fn close_all(&mut self, core: &mut Core) {
        // An io_uring receive holds its socket open until cancelled.
        if let Some(u) = core.reactor.uring() {
            u.cancel_all();
        }
        for v in &mut self.vus {
            v.sock = None;
        }
    }
}

impl Http1 {
    /// Open loop: slot `i`'s request ended; it waits for the schedule,
    /// keeping its connection if it has one.
    fn release(&mut self, i: usize) {
        let v = &mut self.vus[i];
        v.state = State::Thinking;
        v.intended = None;
        if v.sock.is_some() {
            self.idle.push(i as u32);
        } else {
            self.free.push(i as u32);
        }
    }

    /// Starts the next request of virtual user `i` (or retires it).
    /// `now`, where the caller has just read the clock (the previous
    /// response's end, when the next request follows it at once), is the
    /// request's start on a kept connection: one clock read a keep-alive
    /// request instead of two, and what lies between the two instants is
    /// this thread's bookkeeping of the response (well under a microsecond,
    /// below the histograms' resolution).
    #[inline]
    fn start_request(&mut self, core: &mut Core, i: usize, now: Option<Instant>) {
        // A flow's user renders its next step (the step is its URL); one
        // whose feeder ran out is done.
        let step = match self.vus[i].flow.as_deref_mut() {
            None => None,
            Some(f) => {
                let step = f.next();
                // A pass that ended is counted as the next begins (or as
                // the user finds its feeder used up).
                let (completed, _) = f.uncounted();
                if completed > 0 {
                    core.second.conn.flows_completed += completed;
                    if core.in_window(Instant::now()) {
                        core.window.conn.flows_completed += completed;
                    }
                }
                if step.is_none() {
                    self.close(core, i);
                    self.vus[i].state = State::Done;
                    return;
                }
                step
            }
        };
        if !core.take_request() {
            self.close(core, i);
            self.vus[i].state = State::Done;
            return;
        }
        let url = match step {
            Some(step) => step,
            None => self.shared.pick_url(&mut core.rng),
        };
        if self.origins && self.vus[i].sock.is_some() {
            // A kept connection goes to its own origin only.
            let urls = &self.shared.plan.urls;
            let (a, b) = (urls.origin(self.vus[i].url as usize), urls.origin(url));
            if (a.addr, a.scheme) != (b.addr, b.scheme) {
                self.close(core, i);
            }
        }
        let v = &mut self.vus[i];
        v.url = url as u32;
        v.parser.reset();
        if let Some(h) = v.hasher.as_deref_mut() {
            h.reset();
        }
        if v.sock.is_some() {
            let now = now.unwrap_or_else(Instant::now);
            v.start = now;
            v.deadline = now + self.shared.plan.timeout;
            self.begin_write(core, i);
        } else {
            self.open(core, i);
        }
    }

    /// Opens a new connection for virtual user `i` and draws its HTTP
    /// version and length (docs/connections.md, "Per-connection draws").
    fn open(&mut self, core: &mut Core, i: usize) {
        if self.vus[i].arriving {
            if self.arrivals >= self.arrival_limit {
                // One called from the queue whose slot was taken meanwhile
                // keeps its place at the front.
                if self.vus[i].state == State::Arriving {
                    self.arrival_queue.push_front(i as u32);
                } else {
                    self.vus[i].state = State::Arriving;
                    self.arrival_queue.push_back(i as u32);
                }
                return;
            }
            self.arrivals += 1;
            let v = &mut self.vus[i];
            v.arriving = false;
            v.holds_slot = true;
        }
        self.draw_connection(core, i);
        let url = self.vus[i].url as usize;
        let target = self.shared.plan.urls.origin(url);
        let source = core.next_source();
        let now = Instant::now();
        let v = &mut self.vus[i];
        v.start = now;
        v.deadline = now + self.shared.plan.timeout;
        v.state = State::Connecting;
        v.connected = false;
        if std::mem::take(&mut v.reconnect_pending) {
            core.bump(|c| c.reconnects += 1);
        }
        match connect(target.addr, source, core.io.busy_poll_us) {
            Ok(tcp) => {
                if !Self::register(core, &mut self.vus[i], i, &tcp, true) {
                    self.fail(core, i, ErrorKind::ConnectRefused);
                    return;
                }
                let sock = if target.scheme == Scheme::Https {
                    // TLS writes the handshake's last flight and the request
                    // separately; without TCP_NODELAY, Nagle holds the request
                    // until the server's delayed ACK (40 ms). Plain HTTP sends
                    // each request in one write and does not need it.
                    let _ = tcp.set_nodelay(true);
                    match self.new_tls(core, url) {
                        Ok(conn) => Sock::Tls(Box::new(TlsSock::new(tcp, conn))),
                        Err(()) => {
                            self.fail(core, i, ErrorKind::Tls);
                            return;
                        }
                    }
                } else {
                    Sock::Plain(tcp)
                };
                let plain = !sock.is_tls();
                self.vus[i].sock = Some(sock);
                if plain {
                    // On loopback and fast links the handshake is often done
                    // by now: writing at once saves a wake-up per connection.
                    // If it is not, the write says EAGAIN and the writable
                    // edge of the finished connect resumes it.
                    self.begin_write(core, i);
                }
            }
            Err(kind) => self.fail(core, i, kind),
        }
    }

    /// Draws user `i`'s next connection's HTTP version and length
    /// (docs/connections.md, "Per-connection draws").
    fn draw_connection(&mut self, core: &mut Core, i: usize) {
        let policy = self.shared.plan.connection;
        let http10 = core.rng.percent(policy.http10_percent);
        let persistent = if http10 {
            policy.http10_keepalive
        } else {
            core.rng.percent(policy.persistent_percent)
        };
        let conn_left = if !persistent {
            1
        } else {
            match policy.requests_per_connection {
                None => u32::MAX,
                Some((min, max)) => min + core.rng.below((max - min) as u64 + 1) as u32,
            }
        };
        let v = &mut self.vus[i];
        v.http10 = http10;
        v.keepalive = persistent;
        v.conn_left = conn_left;
        v.conn_served = 0;
        v.held = false;
    }

    /// Registers user `i`'s (`v`'s) new connection `tcp` with the reactor;
    /// `write`: its writability is wanted (a connect in progress).
    fn register(core: &mut Core, v: &mut Vu, i: usize, tcp: &mio::net::TcpStream, write: bool) -> bool {
        if let Some(u) = core.reactor.uring() {
            // The receive waits for the connect like any data.
            v.generation = next_generation(v.generation);
            v.recv_armed = u.recv(tcp.as_raw_fd(), i, v.generation).is_ok();
            v.recv_armed
        } else {
            v.out_armed = write;
            core.reactor.register(tcp.as_raw_fd(), i, write).is_ok()
        }
    }

    /// Opens every user's first connection before the start (a plan's
    /// `preconnect`; docs/counting.md, "Start spread"): all connects are
    /// started, then waited for until `until`, the client's start. A
    /// connection up by then is the user's, idle, as a kept one: its first
    /// request is written on it at the start, so the start costs a write,
    /// not a handshake, and that request's latency has no connect. A user
    /// whose connect failed or had not finished by `until` connects at its
    /// first request, as without `preconnect` (a failure is counted then).
    /// Plain `http://` only, closed loop only (refused at the plan).
    pub(crate) fn preconnect(&mut self, core: &mut Core, until: Instant) {
        if self.open {
            return;
        }
        let mut pending = Vec::with_capacity(self.vus.len());
        for i in 0..self.vus.len() {
            if Instant::now() >= until {
                break;
            }
            let target = self.shared.plan.urls.origin(self.vus[i].url as usize);
            if target.scheme != Scheme::Http {
                continue;
            }
            if let Ok(tcp) = connect(target.addr, core.next_source(), core.io.busy_poll_us) {
                pending.push((i, tcp));
            }
        }
        // A connect on loopback is done within its system call; elsewhere
        // it waits a round trip. The rest are waited for together, on a
        // poll of their own (the reactor's may be io_uring), each checked
        // when it reports writable: connected, or failed.
        let Ok(mut poll) = mio::Poll::new() else { return };
        let mut waiting = Vec::with_capacity(pending.len());
        for (k, (i, mut tcp)) in pending.into_iter().enumerate() {
            if tcp.peer_addr().is_ok() {
                self.hold(core, i, tcp);
            } else if poll
                .registry()
                .register(&mut tcp, mio::Token(k), mio::Interest::WRITABLE)
                .is_ok()
            {
                waiting.push(Some((i, tcp)));
            } else {
                waiting.push(None);
            }
        }
        let mut left = waiting.iter().filter(|w| w.is_some()).count();
        let mut events = mio::Events::with_capacity(1024);
        while left > 0 {
            let now = Instant::now();
            if now >= until {
                break;
            }
            match poll.poll(&mut events, Some(until - now)) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            }
            for ev in events.iter() {
                let Some((i, mut tcp)) = waiting.get_mut(ev.token().0).and_then(Option::take) else {
                    continue;
                };
                left -= 1;
                let _ = poll.registry().deregister(&mut tcp);
                // Refused (or any failure): dropped; the user connects at
                // its first request, which counts what happens then.
                if tcp.peer_addr().is_ok() {
                    self.hold(core, i, tcp);
                }
            }
        }
    }

    /// User `i` holds `tcp`, connected before the start, idle.
    fn hold(&mut self, core: &mut Core, i: usize, tcp: mio::net::TcpStream) {
        self.draw_connection(core, i);
        if !Self::register(core, &mut self.vus[i], i, &tcp, false) {
            return;
        }
        let v = &mut self.vus[i];
        v.sock = Some(Sock::Plain(tcp));
        v.held = true;
        v.connected = false;
        // Its first request takes no arrival slot: it connects no more.
        v.arriving = false;
        v.state = State::Thinking;
        core.second.conn.preconnected += 1;
        core.window.conn.preconnected += 1;
    }

    fn new_tls(&mut self, core: &mut Core, url: usize) -> Result<UnbufferedClientConnection, ()> {
        let (Some(tls), Some(name)) = (
            &self.shared.tls,
            &self.shared.server_names[self.shared.plan.urls.origin_index(url)],
        ) else {
            return Err(());
        };
        let cfg = if core.rng.percent(self.shared.plan.tls.resumption_percent) {
            &tls.resuming
        } else {
            &tls.full
        };
        UnbufferedClientConnection::new(Arc::clone(cfg), name.clone()).map_err(|_| ())
    }

    /// Chooses the request variant for the current request on this
    /// connection and writes it.
    #[inline]
    fn begin_write(&mut self, core: &mut Core, i: usize) {
        let v = &mut self.vus[i];
        let last = v.conn_left == 1;
        v.variant = match (v.http10, last || !v.keepalive) {
            (false, false) => Variant::Http11,
            (false, true) => Variant::Http11Close,
            (true, false) => Variant::Http10KeepAlive,
            (true, true) => Variant::Http10,
        };
        v.written = 0;
        let (urls, url) = (&self.shared.plan.urls, v.url as usize);
        if let Some(f) = v.flow.as_deref_mut() {
            f.render_head(&self.shared.plan.headers, &urls.origin(url).authority, v.variant);
        }
        v.continue_wait = v.flow.is_none() && self.shared.requests.expects_continue(urls, url);
        v.state = State::Writing;
        self.write_from(core, i, true);
    }

    fn on_event(&mut self, core: &mut Core, i: usize, readable: bool, writable: bool, closed: bool) {
        let Some(v) = self.vus.get(i) else { return };
        match v.state {
            State::Connecting => {
                if writable || closed {
                    if v.sock.as_ref().is_some_and(Sock::is_tls) {
                        self.vus[i].state = State::Handshaking;
                        self.handshake(core, i);
                    } else {
                        self.begin_write(core, i);
                    }
                }
            }
            State::Handshaking => self.handshake(core, i),
            State::Writing => {
                if writable || closed {
                    self.write_more(core, i);
                }
            }
            State::Reading => {
                if readable || closed {
                    self.read_response(core, i, closed);
                }
            }
            State::Draining => self.drain(core, i),
            State::Thinking => {
                // Level-triggered, bytes nobody asked for on an idle
                // connection would be reported on every turn: the
                // connection's framing is lost anyway, so it is dropped
                // as if the server had closed it. (Edge-triggered, they
                // stay and fail the next request as framing.)
                let stray = readable && core.reactor.tracks_writes();
                if (closed || stray) && v.sock.is_some() {
                    self.closed_while_idle(core, i);
                }
            }
            State::Arriving | State::Done => {}
        }
    }

    /// Asks the reactor for connection `i`'s writability, or stops asking
    /// (an `epoll_ctl` only when that changes, and only level-triggered).
    #[inline]
    fn want_write(&mut self, core: &mut Core, i: usize, write: bool) {
        if !core.reactor.tracks_writes() {
            return;
        }
        let v = &mut self.vus[i];
        if v.out_armed == write {
            return;
        }
        let Some(sock) = v.sock.as_ref() else { return };
        if core.reactor.want_write(sock.fd(), i, write).is_ok() {
            v.out_armed = write;
        }
    }

    /// Counts connection `i` opened at its first bytes written.
    #[inline]
    fn established(&mut self, core: &mut Core, i: usize) {
        let v = &mut self.vus[i];
        if !v.connected {
            v.connected = true;
            core.bump(|c| c.connections_opened += 1);
        }
    }

    /// Drives a TLS handshake as far as the socket allows.
    fn handshake(&mut self, core: &mut Core, i: usize) {
        let v = &mut self.vus[i];
        let Some(Sock::Tls(t)) = v.sock.as_mut() else {
            return self.fail(core, i, ErrorKind::Tls);
        };
        let mut wrote = false;
        let step = sock::handshake(t, &mut wrote);
        if wrote {
            self.established(core, i);
        }
        match step {
            Handshake::Done { resumed } => {
                if resumed {
                    core.bump(|c| c.tls_resumptions += 1);
                } else {
                    core.bump(|c| c.tls_full_handshakes += 1);
                }
                self.begin_write(core, i);
            }
            Handshake::WantWrite => self.want_write(core, i, true),
            // Waiting for the server: a level-triggered EPOLLOUT
            // would report the idle socket writable at once, forever.
            Handshake::WantRead => self.want_write(core, i, false),
            Handshake::Closed => {
                self.shared
                    .note_tls_error(|| crate::tls::CLOSED_IN_HANDSHAKE.to_string());
                self.fail(core, i, ErrorKind::Tls)
            }
            Handshake::Rejected(e) => {
                let host = &self.shared.plan.urls.origin(self.vus[i].url as usize).host;
                let tls = &self.shared.plan.tls;
                self.shared.note_tls_error(|| crate::tls::explain(&e, host, tls));
                self.fail(core, i, ErrorKind::Tls)
            }
            Handshake::Failed(e) => self.fail(core, i, connect_error_kind(&e, true)),
        }
    }

    /// Writes (the rest of) the current request.
    fn write_more(&mut self, core: &mut Core, i: usize) {
        self.write_from(core, i, false);
    }

    /// `write_more`; `first` (from `begin_write`): the request's lengths
    /// are taken from the parts found here, so a request looks its parts
    /// up once, not once to size it and again to write it.
    #[inline]
    fn write_from(&mut self, core: &mut Core, i: usize, first: bool) {
        if first && self.write_joined(core, i) {
            return;
        }
        let reused = self.vus[i].reused();
        let v = &mut self.vus[i];
        let parts = match v.flow.as_deref() {
            Some(f) => f.parts(),
            None => self
                .shared
                .requests
                .parts(&self.shared.plan.urls, v.url as usize, v.variant),
        };
        if first {
            v.len = parts_len(&parts);
            v.head = head_len(&parts);
        }
        let total = v.write_end();
        let Some(sock) = v.sock.as_mut() else {
            return self.fail(core, i, ErrorKind::Reset);
        };
        if let (Some(u), Sock::Plain(tcp)) = (core.reactor.uring(), &*sock) {
            // Queued; the next loop turn's io_uring_enter sends it, and
            // its completion (`on_sent`) moves the user on.
            let mut slices = [io::IoSlice::new(&[]); 4];
            let n = unwritten(&parts, v.written, total, &mut slices);
            let msg = &mut self.msgs[i];
            msg.set(&slices[..n]);
            v.state = State::Writing;
            if u.send(tcp.as_raw_fd(), i, v.generation, msg.header()).is_err() {
                self.fail(core, i, ErrorKind::Reset);
            }
            return;
        }
        let result: io::Result<bool> = match sock {
            Sock::Plain(tcp) => loop {
                let mut slices = [io::IoSlice::new(&[]); 4];
                let n = unwritten(&parts, v.written, total, &mut slices);
                let left = total - v.written;
                // A request of several parts that fits the thread's send
                // buffer is copied there and goes in one `write`: the copy
                // of a few hundred bytes costs less than `writev`'s import
                // of the scatter list (measured on loopback TCP: 3-part
                // writev 1,030 ns, copy + write 880 ns a call).
                let sent = if n == 1 {
                    sock::send_raw(tcp, &slices[0])
                } else if left <= self.send_buf.len() {
                    let mut at = 0;
                    for s in &slices[..n] {
                        self.send_buf[at..at + s.len()].copy_from_slice(s);
                        at += s.len();
                    }
                    // The buffer holds this request whole only from its
                    // start to its end (a flow's requests are its own).
                    let whole = v.written == 0 && total == v.len && v.flow.is_none();
                    self.joined = whole.then_some(Joined {
                        url: v.url,
                        variant: v.variant,
                        len: v.len,
                        head: v.head,
                    });
                    sock::send_raw(tcp, &self.send_buf[..at])
                } else {
                    tcp.write_vectored(&slices[..n])
                };
                if let Some(done) = sent_some(core, &mut v.written, &mut v.connected, sent, total) {
                    break done;
                }
            },
            Sock::Tls(t) => loop {
                // Records left from the last call go first; then the
                // request, a record at a time.
                match t.flush() {
                    Ok(true) if v.written >= total => break Ok(true),
                    Ok(true) => {}
                    other => break other,
                }
                let mut slices = [io::IoSlice::new(&[]); 4];
                let n = unwritten(&parts, v.written, total, &mut slices);
                match t.write(&slices[..n]) {
                    Ok(n) => v.written += n,
                    Err(e) => break Err(e),
                }
            },
        };
        let tls = sock.is_tls();
        self.wrote(core, i, result, reused, tls);
    }

    /// `write_from`'s first write of a request that `send_buf` holds whole
    /// already (the same URL and variant as the last request joined
    /// there, as a run of one URL sends again and again): one `write` from
    /// the buffer, without looking the parts up, cutting and copying them
    /// again. `false` when it does not apply (TLS, io_uring, a flow, a
    /// different request), for `write_from` to do.
    #[inline]
    fn write_joined(&mut self, core: &mut Core, i: usize) -> bool {
        let Some(j) = self.joined else { return false };
        let reused = self.vus[i].reused();
        let v = &mut self.vus[i];
        if j.url != v.url || j.variant != v.variant || v.flow.is_some() || core.reactor.uring().is_some() {
            return false;
        }
        if !matches!(v.sock, Some(Sock::Plain(_))) {
            return false;
        }
        v.len = j.len;
        v.head = j.head;
        let total = v.write_end();
        let Some(Sock::Plain(tcp)) = v.sock.as_mut() else {
            return false;
        };
        let result = loop {
            let sent = sock::send_raw(tcp, &self.send_buf[v.written..total]);
            if let Some(done) = sent_some(core, &mut v.written, &mut v.connected, sent, total) {
                break done;
            }
        };
        self.wrote(core, i, result, reused, false);
        true
    }

    /// After a write of user `i`'s request: `Ok(true)` all of it is out,
    /// `Ok(false)` the socket is full.
    #[inline]
    fn wrote(&mut self, core: &mut Core, i: usize, result: io::Result<bool>, reused: bool, tls: bool) {
        let v = &mut self.vus[i];
        match result {
            Ok(true) => {
                v.state = State::Reading;
                if v.continue_wait {
                    v.deadline = v.deadline.min(Instant::now() + CONTINUE_WAIT);
                }
                self.want_write(core, i, false);
            }
            Ok(false) => {
                v.state = State::Writing;
                self.want_write(core, i, true);
            }
            Err(e) => self.write_failed(core, i, e, reused, tls),
        }
    }

    /// The server said `100 Continue` (or did not in time): the body goes.
    fn send_body(&mut self, core: &mut Core, i: usize) {
        let v = &mut self.vus[i];
        v.continue_wait = false;
        v.deadline = v.start + self.shared.plan.timeout;
        v.state = State::Writing;
        self.write_more(core, i);
    }

    /// A write of the current request failed.
    fn write_failed(&mut self, core: &mut Core, i: usize, e: io::Error, reused: bool, tls: bool) {
        let v = &self.vus[i];
        if reused && is_closed_error(&e) {
            self.reconnect(core, i);
        } else {
            let kind = if v.conn_served == 0 && v.written == 0 {
                connect_error_kind(&e, tls)
            } else if tls && e.kind() == io::ErrorKind::InvalidData {
                ErrorKind::Tls
            } else if v.written >= v.head && v.written < v.len {
                ErrorKind::BodyIncomplete
            } else {
                ErrorKind::Reset
            };
            self.fail(core, i, kind);
        }
    }

    /// io_uring: a `SENDMSG` of the current request completed.
    fn on_sent(&mut self, core: &mut Core, i: usize, generation: u32, res: i32) {
        let Some(v) = self.vus.get_mut(i) else { return };
        if v.generation != generation || v.state != State::Writing || v.sock.is_none() {
            return; // a closed connection's, or the response came first
        }
        if res < 0 {
            let reused = v.reused();
            return self.write_failed(core, i, io::Error::from_raw_os_error(-res), reused, false);
        }
        self.established(core, i);
        let v = &mut self.vus[i];
        v.written += res as usize;
        if v.written >= v.write_end() {
            v.state = State::Reading;
            if v.continue_wait {
                v.deadline = v.deadline.min(Instant::now() + CONTINUE_WAIT);
            }
        } else {
            self.write_more(core, i);
        }
    }

    /// io_uring: a completion of connection `i`'s multishot receive. The
    /// bytes are fed from the provided buffer itself, which goes back to
    /// the kernel afterwards.
    fn on_recv(&mut self, core: &mut Core, i: usize, generation: u32, res: i32, buffer: Option<u16>, more: bool) {
        let data = match (buffer, core.reactor.uring()) {
            (Some(b), Some(u)) if res > 0 => u.data(b, res as usize),
            _ => (std::ptr::null(), 0),
        };
        let data: &[u8] = if data.1 == 0 {
            &[]
        } else {
            // SAFETY: the buffer is the kernel's again only after recycle,
            // below; the mapping outlives the worker's loop.
            unsafe { std::slice::from_raw_parts(data.0, data.1) }
        };
        self.received(core, i, generation, res, data, more);
        if let (Some(b), Some(u)) = (buffer, core.reactor.uring()) {
            u.recycle(b);
        }
    }

    fn received(&mut self, core: &mut Core, i: usize, generation: u32, res: i32, data: &[u8], more: bool) {
        let Some(v) = self.vus.get_mut(i) else { return };
        if v.generation != generation || v.sock.is_none() {
            return; // a closed connection's
        }
        if !more {
            v.recv_armed = false;
        }
        match (v.state, res) {
            (_, r) if r == -libc::ECANCELED => {}
            // Out of buffers: it stopped; re-armed below.
            (_, r) if r == -libc::ENOBUFS => {}
            (State::Reading | State::Writing | State::Connecting, r) if r > 0 => match feed(v, data, &mut self.memo) {
                Fed::More if v.continue_wait && v.parser.interim() > 0 && v.state == State::Reading => {
                    self.send_body(core, i)
                }
                Fed::More => v.state = State::Reading,
                Fed::Done => self.complete(core, i, false),
                Fed::Fail(kind) => self.fail(core, i, kind),
            },
            (State::Reading | State::Writing | State::Connecting, 0) => self.read_eof(core, i),
            // Before the first byte left, an error is the connect's (as
            // the first write's is for the epoll backends).
            (State::Writing | State::Connecting, r) if !v.connected => {
                self.fail(core, i, connect_error_kind(&io::Error::from_raw_os_error(-r), false))
            }
            (State::Reading | State::Writing | State::Connecting, r) => {
                self.read_failed(core, i, io::Error::from_raw_os_error(-r))
            }
            // Stray bytes after a close are ignored, as `drain` does.
            (State::Draining, r) if r > 0 => {}
            (State::Draining, _) => {
                self.close(core, i);
                self.next(core, i);
            }
            // Closed while idle, or bytes nobody asked for (see on_event).
            (State::Thinking, _) => self.closed_while_idle(core, i),
            (State::Handshaking | State::Arriving | State::Done, _) => {}
        }
        let v = &mut self.vus[i];
        if !v.recv_armed && v.generation == generation && (res > 0 || res == -libc::ENOBUFS) {
            if let (Some(sock), Some(u)) = (v.sock.as_ref(), core.reactor.uring()) {
                v.recv_armed = u.recv(sock.fd(), i, generation).is_ok();
            }
        }
    }

    /// The server closed idle keep-alive connection `i` (or sent bytes
    /// nobody asked for): drop it and reconnect at its next request. Every
    /// backend comes here, so an open loop's count of open connections
    /// (`slots − free − idle_closed`) stays exact whichever noticed it.
    fn closed_while_idle(&mut self, core: &mut Core, i: usize) {
        self.close(core, i);
        self.vus[i].reconnect_pending = true;
        // An open loop's slot stays in `idle` without its socket.
        if self.open {
            self.idle_closed += 1;
        }
    }

    /// Drops connection `i`'s socket (closing it), first cancelling an
    /// io_uring receive that would hold it open, and submitting entries
    /// still queued: an entry names its socket by descriptor number, and
    /// once closed, that number may be the next connection's.
    fn close(&mut self, core: &mut Core, i: usize) {
        let v = &mut self.vus[i];
        if v.sock.is_none() {
            return;
        }
        if let Some(u) = core.reactor.uring() {
            if std::mem::take(&mut v.recv_armed) {
                let _ = u.cancel_recv(i, v.generation);
            }
            u.submit_queued();
        }
        v.sock = None;
    }

    /// The server closed a reused keep-alive connection before any byte of
    /// the response: open a new one and send the same request again.
    fn reconnect(&mut self, core: &mut Core, i: usize) {
        self.close(core, i);
        let v = &mut self.vus[i];
        v.reconnect_pending = true;
        v.parser.reset();
        if let Some(h) = v.hasher.as_deref_mut() {
            h.reset();
        }
        self.open(core, i);
    }

    /// Reads what the socket has of the response.
    #[inline]
    fn read_response(&mut self, core: &mut Core, i: usize, closed: bool) {
        loop {
            let v = &mut self.vus[i];
            let Some(sock) = v.sock.as_mut() else { return };
            match sock.read(&mut self.buf) {
                ReadOutcome::Data(n) => match feed(v, &self.buf[..n], &mut self.memo) {
                    Fed::More => {
                        if v.continue_wait && v.parser.interim() > 0 {
                            return self.send_body(core, i);
                        }
                        if n < self.buf.len() && !closed && matches!(v.sock, Some(Sock::Plain(_))) {
                            return;
                        }
                    }
                    Fed::Done => return self.complete(core, i, closed),
                    Fed::Fail(kind) => return self.fail(core, i, kind),
                },
                ReadOutcome::WouldBlock => return,
                ReadOutcome::Eof => return self.read_eof(core, i),
                ReadOutcome::Error(e) => return self.read_failed(core, i, e),
            }
        }
    }

    /// The server closed the connection while a response was awaited.
    fn read_eof(&mut self, core: &mut Core, i: usize) {
        let v = &mut self.vus[i];
        let reused = v.reused();
        match v.parser.on_eof() {
            Ok(()) => self.complete(core, i, true),
            Err(FrameError::ClosedBeforeResponse) if reused => self.reconnect(core, i),
            Err(e) => self.fail(core, i, frame_error_kind(e)),
        }
    }

    /// Reading the response failed.
    fn read_failed(&mut self, core: &mut Core, i: usize, e: io::Error) {
        let v = &self.vus[i];
        if v.reused() && !v.parser.started() && is_closed_error(&e) {
            return self.reconnect(core, i);
        }
        self.fail(core, i, sock::read_error_kind(&e))
    }

    /// A response is complete: validate, count, and go on.
    #[inline]
    fn complete(&mut self, core: &mut Core, i: usize, eof_seen: bool) {
        self.release_slot(core, i);
        let now = Instant::now();
        let v = &mut self.vus[i];
        let (class, expect_status, expect) = self.shared.plan.urls.expectation(v.url as usize);
        let head = *v.parser.head();
        // From the intended send in an open loop (what a user of a server
        // that stalls waits), from the actual send otherwise.
        let as_sent = now - v.start;
        let latency = v.intended.map_or(as_sent, |t| now - t);
        let wire = v.parser.wire_bytes();
        let body = v.parser.body_bytes();
        let hasher = v.hasher.as_deref();
        let unsent = v.written < v.len;
        // A final answer to `Expect: 100-continue` before the body is the
        // server's refusal of the body, judged by its status; any other
        // answer before the body's last byte left the request short.
        let verdict = if unsent && !v.continue_wait {
            Err(ErrorKind::BodyIncomplete)
        } else if let Some(f) = v.flow.as_deref_mut() {
            // A flow's step is judged by its own checks and captures
            // (status included); a failure abandons the user's flow.
            match f.judge(head.status) {
                Ok(()) => Ok(()),
                Err(reason) => {
                    self.shared.note_check_failure(class, reason);
                    Err(ErrorKind::CheckFailed)
                }
            }
        } else {
            check_response(expect_status, expect, head.status, body, || hasher.map(|h| h.digest()))
        };
        if unsent && !v.continue_wait {
            if let Some(f) = v.flow.as_deref_mut() {
                f.abandon();
            }
        }
        if let Some(f) = v.flow.as_deref_mut() {
            let (_, abandoned) = f.uncounted();
            if abandoned > 0 {
                core.second.conn.flows_abandoned += abandoned;
                if core.in_window(now) {
                    core.window.conn.flows_abandoned += abandoned;
                }
            }
        }
        let ended = Measured {
            latency,
            as_sent,
            wire,
            body,
            sent: v.written as u64,
        };
        let counted = core.record_response(class, verdict, ended, now);
        let kind = ConnectionKind::of(v.http10, v.keepalive) as usize;
        core.second.conn.requests_by_kind[kind] += 1;
        if counted {
            core.window.conn.requests_by_kind[kind] += 1;
        }
        core.arrived(!std::mem::replace(&mut v.arrived, true));
        v.conn_served += 1;
        if v.conn_left != u32::MAX {
            v.conn_left -= 1;
        }
        let sent_close = matches!(v.variant, Variant::Http11Close | Variant::Http10);
        // A body not sent leaves the connection's framing unknown.
        let reusable = !eof_seen && !sent_close && !unsent && head.persistent() && v.conn_left > 0;
        if reusable {
            self.next_now(core, i, now);
        } else if eof_seen {
            self.close(core, i);
            self.next(core, i);
        } else {
            // Wait (briefly) for the server's close; see `State::Draining`.
            v.state = State::Draining;
            v.deadline = now + self.shared.plan.timeout.min(Duration::from_millis(500));
            self.drain(core, i);
        }
    }

    /// Reads until the server's FIN on a connection that is ending.
    fn drain(&mut self, core: &mut Core, i: usize) {
        if core.reactor.uring().is_some() {
            return; // the receive's completions bring the FIN
        }
        loop {
            let v = &mut self.vus[i];
            let Some(sock) = v.sock.as_mut() else {
                return self.next(core, i);
            };
            match sock.read(&mut self.buf) {
                ReadOutcome::WouldBlock => return,
                ReadOutcome::Data(_) => continue, // stray bytes after a close: ignored
                ReadOutcome::Eof | ReadOutcome::Error(_) => {
                    self.close(core, i);
                    return self.next(core, i);
                }
            }
        }
    }

    /// Frees user `i`'s arrival slot, if it holds one, for the next user
    /// waiting (who connects on the next loop turn).
    #[inline]
    fn release_slot(&mut self, core: &mut Core, i: usize) {
        if !std::mem::take(&mut self.vus[i].holds_slot) {
            return;
        }
        self.arrivals -= 1;
        if let Some(next) = self.arrival_queue.pop_front() {
            core.defer(next);
        }
    }

    /// After a request ended (counted or not): think, then the next one.
    fn next(&mut self, core: &mut Core, i: usize) {
        if self.open {
            return self.release(i);
        }
        self.vus[i].state = State::Thinking;
        match self.vus[i].flow.as_deref() {
            Some(f) => core.rest_for(i as u32, f.think),
            None => core.rest(i as u32),
        }
    }

    /// After a successful or counted response on a path that cannot recurse
    /// (no failure led here): with no think time, send the next request at
    /// once, as wrk and the floor do, instead of after the whole event batch
    /// — the server gets its next request a batch earlier.
    #[inline]
    fn next_now(&mut self, core: &mut Core, i: usize, now: Instant) {
        if self.open {
            return self.release(i);
        }
        self.vus[i].state = State::Thinking;
        if let Some(f) = self.vus[i].flow.as_deref() {
            // A flow step's own think time, not the plan's (docs/flows.md).
            if f.think.is_zero() {
                self.start_request(core, i, Some(now));
            } else {
                core.rest_for(i as u32, f.think);
            }
            return;
        }
        if core.go_on_now(i as u32) {
            self.start_request(core, i, Some(now));
        }
    }

    /// The current request failed: count it, drop the connection, go on.
    fn fail(&mut self, core: &mut Core, i: usize, kind: ErrorKind) {
        self.release_slot(core, i);
        // Its next connect arrives anew, as a user who gave up and comes
        // back: failures that come together (a server's stall) must not
        // return together. (An open loop's schedule paces its connects.)
        self.vus[i].arriving = !self.open;
        let now = Instant::now();
        let v = &mut self.vus[i];
        if let Some(f) = v.flow.as_deref_mut() {
            f.abandon();
            let (_, abandoned) = f.uncounted();
            core.second.conn.flows_abandoned += abandoned;
            if core.in_window(now) {
                core.window.conn.flows_abandoned += abandoned;
            }
        }
        let class = self.shared.plan.urls.class(v.url as usize);
        let as_sent = now - v.start;
        let (latency, bytes) = (v.intended.map_or(as_sent, |t| now - t), v.parser.wire_bytes());
        let counted = core.record_error(class, kind, latency, bytes, v.written as u64, now);
        let conn_kind = ConnectionKind::of(v.http10, v.keepalive) as usize;
        core.second.conn.requests_by_kind[conn_kind] += 1;
        if counted {
            core.window.conn.requests_by_kind[conn_kind] += 1;
        }
        self.close(core, i);
        self.next(core, i);
    }
}

/// What a chunk of response bytes did to the parser.
enum Fed {
    More,
    Done,
    Fail(ErrorKind),
}

/// Feeds response bytes to user `v`'s parser (the one framing path of
/// every backend).
#[inline]
fn feed(v: &mut Vu, data: &[u8], memo: &mut HeadMemo) -> Fed {
    if let Some(f) = v.flow.as_deref_mut() {
        f.keep(data);
    }
    match v.parser.feed_with(data, v.hasher.as_deref_mut(), Some(memo)) {
        Ok(Feed::NeedMore) => Fed::More,
        Ok(Feed::Done { consumed }) => {
            if consumed < data.len() {
                v.parser.add_stray(data.len() - consumed);
                return Fed::Fail(ErrorKind::Framing);
            }
            Fed::Done
        }
        Err(e) => Fed::Fail(frame_error_kind(e)),
    }
}

/// Fills `out` with the parts of a request not yet written (`written`
/// bytes are), up to byte `end`; returns how many slices are in use.
#[inline]
fn unwritten<'a>(parts: &Parts<'a>, mut written: usize, end: usize, out: &mut [io::IoSlice<'a>; 4]) -> usize {
    let mut n = 0;
    let mut left = end.saturating_sub(written);
    for p in parts {
        if left == 0 {
            break;
        }
        if written >= p.len() {
            written -= p.len();
            continue;
        }
        let take = (p.len() - written).min(left);
        out[n] = io::IoSlice::new(&p[written..written + take]);
        left -= take;
        written = 0;
        n += 1;
    }
    n
}

/// One plain write of a request: the bytes it took are `written` (the
/// connection counted opened at its first); `Some` ends the writing —
/// `Ok(true)` all `total` bytes are out, `Ok(false)` the socket is full, or
/// the error — and `None` writes again (interrupted, or more to go).
#[inline]
fn sent_some(
    core: &mut Core,
    written: &mut usize,
    connected: &mut bool,
    sent: io::Result<usize>,
    total: usize,
) -> Option<io::Result<bool>> {
    match sent {
        Ok(n) => {
            if !*connected {
                *connected = true;
                core.bump(|c| c.connections_opened += 1);
            }
            *written += n;
            (*written == total).then_some(Ok(true))
        }
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => Some(Ok(false)),
        Err(e) if e.kind() == io::ErrorKind::Interrupted => None,
        Err(e) => Some(Err(e)),
    }
}

/// Largest request (what is left of it) joined into one buffer for one
/// `write` instead of a `writev` of its parts: a GET's head is a few
/// hundred bytes; a large body goes by `writev` without a copy.
const SEND_JOIN_MAX: usize = 4096;

/// With `Expect: 100-continue`, how long the body waits for the server's
/// `100 Continue` before it goes anyway (curl's default).
const CONTINUE_WAIT: Duration = Duration::from_secs(1);

/// Users of one client arriving at once: a quarter of the listen backlog
/// of 511 that nginx and Apache use by default, so a few clients, or users
/// reconnecting meanwhile, still fit in the server's accept queue. More
/// would not arrive faster where the server is the limit: arrivals then
/// come at the rate the server accepts, and a deeper queue only makes each
/// arriving user wait longer in it (measured against nginx on 2 cores,
/// default `multi_accept off`: 16, 64 and 256 slots per client got 0.9k,
/// 1.5k and 2.1k of 10,000 users in within 10 s, with no timeout in one
/// run each, and 149 in another run with 256). On an idle loopback server
/// one slot's round trip is well under a millisecond, so 128 slots still
/// let 100,000 users a second in. A window that grows while arrivals are
/// prompt and halves on a retransmit or a slow first response (as TCP's)
/// got every user in against nginx with `multi_accept on`, but overshot
/// against the default: 0.1–0.3 % timeouts.
///
/// The wait for a slot is no request's latency: nothing was sent. Each
/// request's clocks (latency and timeout) start at its connect, as the
/// docs define latency; users still waiting at the end are reported.
const ARRIVALS_PER_CLIENT: usize = 128;

/// Arrival slots per OS thread: the client's share, at least 8.
fn arrival_limit(os_threads: usize) -> usize {
    (ARRIVALS_PER_CLIENT / os_threads.max(1)).max(8)
}

pub(crate) fn frame_error_kind(e: FrameError) -> ErrorKind {
    match e {
        FrameError::Framing => ErrorKind::Framing,
        FrameError::HeaderTooLarge => ErrorKind::HeaderTooLarge,
        FrameError::ShortBody => ErrorKind::ShortBody,
        FrameError::ClosedBeforeResponse => ErrorKind::Reset,
    }
}
