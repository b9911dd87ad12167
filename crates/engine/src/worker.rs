//! The hot loop: one epoll event loop per OS thread, driving many closed-loop
//! virtual users, each a small state machine around at most one connection.
//!
//! Written by hand on `mio` (a thin epoll wrapper) instead of tokio + hyper,
//! as wrk and h2load are written on bare epoll: oha, built on tokio and
//! hyper, spends 1.65× the CPU per request of the bare-syscall floor
//! (`bench/floor/`), and wrk 1.33×. What the loop does per request
//! is what the floor does — one `write`, one `read` (keep-alive), plus
//! `socket`, `connect`, `epoll_ctl`, a read of EOF and `close` for a new
//! connection — and in user space only framing, two clock reads and one HDR
//! record. In steady state it allocates nothing, takes no lock and sends no
//! cross-thread message: statistics are per thread and leave it once a
//! second as a [`Snapshot`].
//!
//! Which system calls deliver readiness or data is the reactor's business
//! (`reactor.rs`: mio's edge-triggered epoll by default; level-triggered
//! epoll and io_uring for measurement); this loop is the same for all.
//!
//! Edge-triggered readiness (mio's mode) is used without draining sockets to
//! `EAGAIN`: a response is read until it is complete, and any later data or
//! FIN raises a new edge. A read that fills the whole buffer, or an event
//! carrying a FIN, is followed by another read, so nothing is missed.

use crate::parse::{Feed, FrameError, ResponseParser};
use crate::plan::{parts_len, ClientPlan, Expect, Load, OpenLoop, Requests, Scheme, Stop, Variant};
use crate::reactor::{next_generation, Backend, Ev, IoConfig, Reactor};
use crate::rng::SplitMix64;
use crate::schedule::{Schedule, Timer, TIMER};
use crate::stats::{ConnectionKind, ErrorKind, Snapshot, Stats, ThreadEnd};
use crate::tls::{server_name, TlsConfigs};
use mio::net::TcpStream;
use rustls::pki_types::ServerName;
use rustls::ClientConnection;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::{Duration, Instant};
use xxhash_rust::xxh3::Xxh3;

/// What all worker threads of one client share, read-only but for the stop
/// flag and the request budget.
#[derive(Debug)]
pub(crate) struct Shared {
    pub plan: ClientPlan,
    pub requests: Requests,
    pub tls: Option<TlsConfigs>,
    pub server_names: Vec<Option<ServerName<'static>>>,
    /// Cumulative URL weights for the weighted pick.
    pub cumulative: Vec<f64>,
    pub stop: AtomicBool,
    /// Requests still to be started, for `Stop::Requests`.
    pub budget: AtomicU64,
    pub start: Instant,
    /// The first TLS handshake failure of the run, in words (what failed,
    /// what to try): the counts say how many, this says why.
    pub tls_error: std::sync::OnceLock<String>,
    /// Open loop: connections open now, all OS threads together (each
    /// thread adds the change of its own count once per loop turn), and
    /// the most there were at once.
    pub open_connections: AtomicU64,
    pub peak_connections: AtomicU64,
    /// HTTP/2: the first SETTINGS a server sent in this run.
    pub h2_settings: std::sync::OnceLock<crate::h2::conn::PeerSettings>,
}

impl Shared {
    /// The URL a request goes to: the weighted pick over the cumulative
    /// weights, one draw of `rng` (none when there is one URL), shared by
    /// the HTTP/1 and HTTP/2 loops so both draw the same sequence.
    #[inline]
    pub fn pick_url(&self, rng: &mut SplitMix64) -> usize {
        let cumulative = &self.cumulative;
        if cumulative.len() == 1 {
            return 0;
        }
        let total = cumulative[cumulative.len() - 1];
        let pick = rng.unit() * total;
        cumulative.partition_point(|&c| c <= pick).min(cumulative.len() - 1)
    }

    /// Takes up to `chunk` requests from the shared budget.
    pub(crate) fn reserve(&self, chunk: u64) -> u64 {
        let mut cur = self.budget.load(Ordering::Relaxed);
        loop {
            if cur == 0 {
                return 0;
            }
            let take = chunk.min(cur);
            match self
                .budget
                .compare_exchange_weak(cur, cur - take, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return take,
                Err(now) => cur = now,
            }
        }
    }
}

/// A connection: plain TCP or TLS over TCP.
enum Sock {
    Plain(TcpStream),
    Tls(Box<TlsSock>),
}

impl Sock {
    fn fd(&self) -> RawFd {
        match self {
            Sock::Plain(tcp) => tcp.as_raw_fd(),
            Sock::Tls(t) => t.tcp.as_raw_fd(),
        }
    }
}

struct TlsSock {
    tcp: TcpStream,
    conn: ClientConnection,
}

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
    /// its first connect (see [`Worker::arrivals`]). Nothing is sent yet,
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
    /// The reactor reports this connection's writability (a connect or a
    /// write waits); only level-triggered epoll needs it kept in step.
    out_armed: bool,
    /// io_uring: which of this slot's connections is current (stale
    /// completions of an earlier one are ignored), whether its multishot
    /// receive is armed, and the request's scatter list for `SENDMSG`.
    generation: u32,
    recv_armed: bool,
    msg: SendMsg,
    parser: ResponseParser,
    hasher: Option<Box<Xxh3>>,
}

/// Per-thread state of the event loop.
pub(crate) struct Worker {
    shared: Arc<Shared>,
    index: usize,
    reactor: Reactor,
    io: IoConfig,
    vus: Vec<Vu>,
    buf: Box<[u8]>,
    /// Everything that completed in the current second (ramps included),
    /// for the per-second series; sent and reset once a second.
    second: Stats,
    /// The thread's CPU and loop lag, charged to each second.
    cpu: crate::stats::LoopMeter,
    /// What completed inside the measurement window: the run's totals,
    /// sent once, when the thread stops.
    window: Stats,
    /// Whether the loop's current turn is inside the measurement window
    /// (for connection events, which need no exact instant).
    window_open: bool,
    rng: SplitMix64,
    think: BinaryHeap<Reverse<(Instant, u32)>>,
    /// Virtual users whose next request starts on the next loop turn.
    /// Deferring through this queue, rather than starting at once, keeps a
    /// failure that happens synchronously (a refused connect on loopback)
    /// from recursing, and bounds the work of one loop turn.
    ready: Vec<u32>,
    ready_now: Vec<u32>,
    budget: u64,
    budget_chunk: u64,
    done_vus: usize,
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
    users_arrived: u64,
    next_source: usize,
    /// Open loop: the schedule, and the request slots not in flight —
    /// those holding an idle connection (reused first, most recent on
    /// top) and those without one. A closed loop has none of these.
    schedule: Option<Schedule>,
    /// Open loop: a timerfd that wakes the loop at the next send's
    /// intended time to the microsecond; `epoll_wait`'s timeout has
    /// millisecond resolution (rounded up), which would make every send
    /// about half a millisecond late and add that to every latency.
    timer: Option<Timer>,
    idle: Vec<u32>,
    free: Vec<u32>,
    /// Open loop: slots in `idle` whose connection the server closed (they
    /// hold none now). Every slot is free, idle or busy, and a busy one
    /// always holds a connection between loop turns, so this thread's open
    /// connections are `slots − free − idle_closed`.
    idle_closed: u32,
    /// This thread's open connections as last added to
    /// `Shared::open_connections`.
    published: u64,
    tx: Sender<Snapshot>,
}

const SWEEP_MAX: Duration = Duration::from_millis(10);

impl Worker {
    pub(crate) fn new(shared: Arc<Shared>, index: usize, vus: u32, tx: Sender<Snapshot>) -> io::Result<Worker> {
        let plan = &shared.plan;
        let now = Instant::now();
        let checksum = plan.urls.iter().any(|u| matches!(u.expect, Expect::Checksum { .. }));
        let open = match plan.load {
            Load::Open(o) => Some(o),
            Load::Closed => None,
        };
        let vus = (0..vus)
            .map(|_| Vu {
                state: State::Thinking,
                sock: None,
                conn_left: 0,
                conn_served: 0,
                http10: false,
                keepalive: true,
                reconnect_pending: false,
                connected: false,
                // An open loop's connections follow its schedule, which
                // paces them; arrival slots pace closed-loop users only.
                arriving: open.is_none(),
                holds_slot: false,
                arrived: false,
                url: 0,
                variant: Variant::Http11,
                start: now,
                intended: None,
                deadline: now,
                written: 0,
                out_armed: false,
                generation: 0,
                recv_armed: false,
                msg: SendMsg::new(),
                parser: ResponseParser::new(),
                hasher: checksum.then(|| Box::new(Xxh3::new())),
            })
            .collect::<Vec<_>>();
        let threads = plan.os_threads as u64;
        let budget_chunk = match plan.stop {
            Stop::Requests(n) => (n / (threads * 16)).clamp(1, 64),
            Stop::After(_) => 0,
        };
        let io = IoConfig::get().map_err(io::Error::other)?;
        if io.backend == Backend::Uring && plan.urls.iter().any(|u| u.target.scheme == Scheme::Https) {
            return Err(io::Error::other(
                "BENCHLAB_IO=uring drives http:// URLs only (rustls reads and writes its own socket); unset it for https",
            ));
        }
        Ok(Worker {
            reactor: Reactor::new(io, plan.receive_buffer)?,
            io,
            buf: vec![0u8; plan.receive_buffer].into_boxed_slice(),
            second: if open.is_some() {
                Stats::open_loop(plan.classes.len())
            } else {
                Stats::new(plan.classes.len())
            },
            cpu: crate::stats::LoopMeter::default(),
            window: if open.is_some() {
                Stats::open_loop(plan.classes.len())
            } else {
                Stats::new(plan.classes.len())
            },
            window_open: false,
            rng: SplitMix64::new(plan.seed ^ (index as u64 + 1).wrapping_mul(0xA076_1D64_78BD_642F)),
            think: BinaryHeap::with_capacity(vus.len() + 1),
            ready: Vec::with_capacity(vus.len()),
            ready_now: Vec::with_capacity(vus.len()),
            budget: 0,
            budget_chunk,
            done_vus: 0,
            arrivals: 0,
            arrival_limit: arrival_limit(plan.os_threads),
            arrival_queue: std::collections::VecDeque::new(),
            users_arrived: 0,
            next_source: index,
            schedule: None,
            timer: None,
            idle: Vec::new(),
            idle_closed: 0,
            published: 0,
            // Popped from the end: slot 0 first.
            free: if open.is_some() {
                (0..vus.len() as u32).rev().collect()
            } else {
                Vec::new()
            },
            vus,
            shared,
            index,
            tx,
        })
    }

    /// Runs until the plan's stop condition or the stop flag, then sends
    /// the last snapshot.
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
        self.cpu.start();

        if let Err(e) = self.reactor.start() {
            // Nothing was sent: the run reports no requests, and why.
            eprintln!("benchlab: worker {}: cannot start io_uring: {e}", self.index);
            self.vus.iter_mut().for_each(|v| v.state = State::Done);
            self.done_vus = self.vus.len();
        }
        let begin = start + plan.start_delay;
        let now = Instant::now();
        if now < begin {
            std::thread::sleep(begin - now);
        }
        let now = Instant::now();
        self.window_open = self.in_window(now);
        if let Load::Open(o) = plan.load {
            // The schedule starts at the client's begin instant, not at
            // this thread's wake-up: a late start shows as late sends.
            self.schedule = Some(Schedule::new(o, begin, plan.os_threads, self.index, plan.seed));
            // Without a timer the loop still runs, on epoll's coarser timeout.
            self.timer = Timer::new()
                .and_then(|t| self.reactor.register_readable(t.fd(), TIMER).map(|()| t))
                .ok();
        } else if plan.ramp_up.is_zero() {
            for i in 0..self.vus.len() {
                self.start_request(i);
            }
        } else {
            // Users start evenly over the ramp-up, those of all OS threads
            // interleaved: user j of thread t is the client's user
            // j × threads + t.
            let threads = plan.os_threads as u128;
            let total = plan.virtual_users.max(1) as u128;
            let ramp = plan.ramp_up.as_nanos();
            for j in 0..self.vus.len() {
                let k = j as u128 * threads + self.index as u128;
                let at = now + Duration::from_nanos((ramp * k / total) as u64);
                self.think.push(Reverse((at, j as u32)));
            }
        }
        let mut next_sweep = Instant::now() + sweep_every;
        loop {
            let now = Instant::now();
            if shared.stop.load(Ordering::Relaxed) || end.is_some_and(|e| now >= e) {
                break;
            }
            self.window_open = self.in_window(now);
            if self.done_vus == self.vus.len() {
                break;
            }
            if self.schedule.is_some() {
                self.dispatch(now, end);
            }
            while let Some(Reverse((at, vu))) = self.think.peek().copied() {
                if at > now {
                    break;
                }
                self.think.pop();
                if self.vus[vu as usize].state == State::Thinking {
                    self.start_request(vu as usize);
                }
            }
            std::mem::swap(&mut self.ready, &mut self.ready_now);
            for k in 0..self.ready_now.len() {
                let vu = self.ready_now[k] as usize;
                if self.vus[vu].state == State::Arriving {
                    // Its request was chosen before it waited for a slot.
                    self.open(vu);
                } else {
                    self.start_request(vu);
                }
            }
            self.ready_now.clear();
            if now >= next_sweep {
                self.sweep(now);
                next_sweep = now + sweep_every;
            }
            if now >= next_snapshot {
                self.tick(now - next_snapshot);
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
            let mut timeout = if self.ready.is_empty() {
                wake.saturating_duration_since(now)
            } else {
                Duration::ZERO
            };
            if let Some(s) = &self.schedule {
                // With every slot busy, a completion (an event) wakes us.
                if (!self.idle.is_empty() || !self.free.is_empty()) && s.next < wake {
                    let until = s.next.saturating_duration_since(now);
                    match &self.timer {
                        Some(t) if until > Duration::ZERO && timeout > Duration::ZERO => {
                            t.arm(until);
                            // The timer wakes the poll; its own timeout
                            // only backs the timer up.
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
            events.each(|ev| match ev {
                Ev::Ready(ev) => {
                    if ev.token == TIMER {
                        if let Some(t) = &self.timer {
                            t.clear();
                        }
                        return;
                    }
                    self.on_event(ev.token, ev.readable, ev.writable, ev.closed);
                }
                Ev::Recv {
                    token,
                    generation,
                    res,
                    buffer,
                    more,
                } => self.on_recv(token, generation, res, buffer, more),
                Ev::Sent { token, generation, res } => self.on_sent(token, generation, res),
            });
        }
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
        let users_waiting = self.vus.iter().filter(|v| v.state == State::Arriving).count() as u64;
        self.tick(Duration::ZERO);
        let (cpu_user, cpu_system) = self.cpu.total();
        // Close every connection before reporting, so the caller may count
        // on the sockets being gone once the last snapshot arrives (an
        // io_uring receive holds its socket open until cancelled).
        if let Some(u) = self.reactor.uring() {
            u.cancel_all();
        }
        for v in &mut self.vus {
            v.sock = None;
        }
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

    /// Charges the second with the thread's CPU since the last tick and
    /// with `lag`, how late this tick ran (one `getrusage` a second).
    fn tick(&mut self, lag: Duration) {
        self.cpu.tick(&mut self.second.load, lag);
    }

    fn send_snapshot(&mut self, second: u32, last: Option<ThreadEnd>) {
        let snap = Snapshot {
            thread: self.index,
            second,
            stats: self.second.clone(),
            last,
        };
        self.second.reset();
        // The collector may be gone when the caller dropped it: nothing to do.
        let _ = self.tx.send(snap);
    }

    /// Open loop: sends what is due, then adds the change in this thread's
    /// open connections to the client's count and its peak. Once a loop
    /// turn, after the sends: connections are opened only here, so the
    /// count after them is this turn's highest.
    fn dispatch(&mut self, now: Instant, end: Option<Instant>) {
        self.send_due(now, end);
        let open = (self.vus.len() - self.free.len()) as u64 - u64::from(self.idle_closed);
        if open != self.published {
            let shared = &self.shared;
            let all = if open > self.published {
                shared
                    .open_connections
                    .fetch_add(open - self.published, Ordering::Relaxed)
                    + (open - self.published)
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
    }

    /// Open loop: sends every request whose intended time has come, each on
    /// an idle connection if one is open, else on a new one, while request
    /// slots are free; the rest wait for a slot (counted once each).
    fn send_due(&mut self, now: Instant, end: Option<Instant>) {
        loop {
            let Some(s) = self.schedule.as_mut() else { return };
            let intended = s.next;
            if intended > now || end.is_some_and(|e| intended >= e) {
                return;
            }
            let from_idle = self.idle.pop();
            if from_idle.is_some_and(|i| self.vus[i as usize].sock.is_none()) {
                self.idle_closed -= 1;
            }
            let Some(i) = from_idle.or_else(|| self.free.pop()) else {
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
            self.vus[i as usize].intended = Some(intended);
            self.start_request(i as usize);
        }
    }

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

    /// Times out requests past their deadline.
    fn sweep(&mut self, now: Instant) {
        for i in 0..self.vus.len() {
            let v = &self.vus[i];
            if now < v.deadline {
                continue;
            }
            match v.state {
                State::Connecting => self.fail(i, ErrorKind::ConnectTimeout),
                State::Handshaking | State::Writing | State::Reading => self.fail(i, ErrorKind::Timeout),
                State::Draining => {
                    self.close(i);
                    self.next(i);
                }
                State::Thinking | State::Arriving | State::Done => {}
            }
        }
    }

    /// Whether a completion at `now` falls in the measurement window.
    #[inline]
    fn in_window(&self, now: Instant) -> bool {
        let t = now.saturating_duration_since(self.shared.start);
        let (from, until) = self.shared.plan.window;
        t >= from && t < until
    }

    /// Starts the next request of virtual user `i` (or retires it).
    fn start_request(&mut self, i: usize) {
        if self.budget_chunk > 0 {
            if self.budget == 0 {
                self.budget = self.shared.reserve(self.budget_chunk);
            }
            if self.budget == 0 {
                self.close(i);
                let v = &mut self.vus[i];
                v.state = State::Done;
                self.done_vus += 1;
                return;
            }
            self.budget -= 1;
        }
        let url = self.shared.pick_url(&mut self.rng);
        let v = &mut self.vus[i];
        v.url = url as u32;
        v.parser.reset();
        if let Some(h) = v.hasher.as_deref_mut() {
            h.reset();
        }
        if v.sock.is_some() {
            let now = Instant::now();
            v.start = now;
            v.deadline = now + self.shared.plan.timeout;
            self.begin_write(i);
        } else {
            self.open(i);
        }
    }

    /// Opens a new connection for virtual user `i` and draws its HTTP
    /// version and length (docs/connections.md, "Per-connection draws").
    fn open(&mut self, i: usize) {
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
        let plan = &self.shared.plan;
        let policy = plan.connection;
        let http10 = self.rng.percent(policy.http10_percent);
        let persistent = if http10 {
            policy.http10_keepalive
        } else {
            self.rng.percent(policy.persistent_percent)
        };
        let conn_left = if !persistent {
            1
        } else {
            match policy.requests_per_connection {
                None => u32::MAX,
                Some((min, max)) => min + self.rng.below((max - min) as u64 + 1) as u32,
            }
        };
        let url = self.vus[i].url as usize;
        let target = &plan.urls[url].target;
        let source = if plan.source_addresses.is_empty() {
            None
        } else {
            self.next_source = (self.next_source + 1) % plan.source_addresses.len();
            Some(plan.source_addresses[self.next_source])
        };
        let now = Instant::now();
        let v = &mut self.vus[i];
        v.http10 = http10;
        v.keepalive = persistent;
        v.conn_left = conn_left;
        v.conn_served = 0;
        v.start = now;
        v.deadline = now + plan.timeout;
        v.state = State::Connecting;
        v.connected = false;
        if std::mem::take(&mut v.reconnect_pending) {
            bump(&mut self.second, &mut self.window, self.window_open, |c| {
                c.reconnects += 1
            });
        }
        match connect(target.addr, source, self.io.busy_poll_us) {
            Ok(tcp) => {
                let v = &mut self.vus[i];
                let registered = if let Some(u) = self.reactor.uring() {
                    // The receive waits for the connect like any data.
                    v.generation = next_generation(v.generation);
                    v.recv_armed = u.recv(tcp.as_raw_fd(), i, v.generation).is_ok();
                    v.recv_armed
                } else {
                    v.out_armed = true;
                    self.reactor.register(tcp.as_raw_fd(), i, true).is_ok()
                };
                if !registered {
                    self.fail(i, ErrorKind::ConnectRefused);
                    return;
                }
                let sock = if target.scheme == Scheme::Https {
                    // TLS writes the handshake's last flight and the request
                    // separately; without TCP_NODELAY, Nagle holds the request
                    // until the server's delayed ACK (40 ms). Plain HTTP sends
                    // each request in one write and does not need it.
                    let _ = tcp.set_nodelay(true);
                    match self.new_tls(url) {
                        Ok(conn) => Sock::Tls(Box::new(TlsSock { tcp, conn })),
                        Err(()) => {
                            self.fail(i, ErrorKind::Tls);
                            return;
                        }
                    }
                } else {
                    Sock::Plain(tcp)
                };
                let plain = matches!(sock, Sock::Plain(_));
                self.vus[i].sock = Some(sock);
                if plain {
                    // On loopback and fast links the handshake is often done
                    // by now: writing at once saves a wake-up per connection.
                    // If it is not, the write says EAGAIN and the writable
                    // edge of the finished connect resumes it.
                    self.begin_write(i);
                }
            }
            Err(kind) => self.fail(i, kind),
        }
    }

    fn new_tls(&mut self, url: usize) -> Result<ClientConnection, ()> {
        let (Some(tls), Some(name)) = (&self.shared.tls, &self.shared.server_names[url]) else {
            return Err(());
        };
        let cfg = if self.rng.percent(self.shared.plan.tls.resumption_percent) {
            &tls.resuming
        } else {
            &tls.full
        };
        ClientConnection::new(Arc::clone(cfg), name.clone()).map_err(|_| ())
    }

    /// Chooses the request variant for the current request on this
    /// connection and writes it.
    fn begin_write(&mut self, i: usize) {
        let v = &mut self.vus[i];
        let last = v.conn_left == 1;
        v.variant = match (v.http10, last || !v.keepalive) {
            (false, false) => Variant::Http11,
            (false, true) => Variant::Http11Close,
            (true, false) => Variant::Http10KeepAlive,
            (true, true) => Variant::Http10,
        };
        v.written = 0;
        v.state = State::Writing;
        self.write_more(i);
    }

    fn on_event(&mut self, i: usize, readable: bool, writable: bool, closed: bool) {
        let Some(v) = self.vus.get(i) else { return };
        match v.state {
            State::Connecting => {
                if writable || closed {
                    if matches!(v.sock, Some(Sock::Tls(_))) {
                        self.vus[i].state = State::Handshaking;
                        self.handshake(i);
                    } else {
                        self.begin_write(i);
                    }
                }
            }
            State::Handshaking => self.handshake(i),
            State::Writing => {
                if writable || closed {
                    self.write_more(i);
                }
            }
            State::Reading => {
                if readable || closed {
                    self.read_response(i, closed);
                }
            }
            State::Draining => self.drain(i),
            State::Thinking => {
                // Level-triggered, bytes nobody asked for on an idle
                // connection would be reported on every turn: the
                // connection's framing is lost anyway, so it is dropped
                // as if the server had closed it. (Edge-triggered, they
                // stay and fail the next request as framing.)
                let stray = readable && self.reactor.tracks_writes();
                if (closed || stray) && v.sock.is_some() {
                    self.closed_while_idle(i);
                }
            }
            State::Arriving | State::Done => {}
        }
    }

    /// Asks the reactor for connection `i`'s writability, or stops asking
    /// (an `epoll_ctl` only when that changes, and only level-triggered).
    #[inline]
    fn want_write(&mut self, i: usize, write: bool) {
        if !self.reactor.tracks_writes() {
            return;
        }
        let v = &mut self.vus[i];
        if v.out_armed == write {
            return;
        }
        let Some(sock) = v.sock.as_ref() else { return };
        if self.reactor.want_write(sock.fd(), i, write).is_ok() {
            v.out_armed = write;
        }
    }

    /// Keeps the run's first TLS failure in words (only the first is
    /// explained, so a run of failing handshakes costs nothing more).
    fn note_tls_error(&self, explain: impl FnOnce() -> String) {
        if self.shared.tls_error.get().is_none() {
            let _ = self.shared.tls_error.set(explain());
        }
    }

    /// Drives a TLS handshake as far as the socket allows.
    fn handshake(&mut self, i: usize) {
        let v = &mut self.vus[i];
        let Some(Sock::Tls(t)) = v.sock.as_mut() else {
            return self.fail(i, ErrorKind::Tls);
        };
        loop {
            while t.conn.wants_write() {
                match t.conn.write_tls(&mut t.tcp) {
                    Ok(_) => {
                        if !v.connected {
                            v.connected = true;
                            bump(&mut self.second, &mut self.window, self.window_open, |c| {
                                c.connections_opened += 1
                            });
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => return self.want_write(i, true),
                    Err(e) => return self.fail(i, connect_error_kind(&e, true)),
                }
            }
            if !t.conn.is_handshaking() {
                break;
            }
            match t.conn.read_tls(&mut t.tcp) {
                Ok(0) => {
                    self.note_tls_error(|| crate::tls::CLOSED_IN_HANDSHAKE.to_string());
                    return self.fail(i, ErrorKind::Tls);
                }
                Ok(_) => {
                    if let Err(e) = t.conn.process_new_packets() {
                        // Send the alert rustls queued, best effort.
                        let _ = t.conn.write_tls(&mut t.tcp);
                        let host = &self.shared.plan.urls[v.url as usize].target.host;
                        let tls = &self.shared.plan.tls;
                        self.note_tls_error(|| crate::tls::explain(&e, host, tls));
                        return self.fail(i, ErrorKind::Tls);
                    }
                }
                // Waiting for the server: a level-triggered EPOLLOUT
                // would report the idle socket writable at once, forever.
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return self.want_write(i, false),
                Err(e) => return self.fail(i, connect_error_kind(&e, true)),
            }
        }
        match t.conn.handshake_kind() {
            Some(rustls::HandshakeKind::Resumed) => bump(&mut self.second, &mut self.window, self.window_open, |c| {
                c.tls_resumptions += 1
            }),
            _ => bump(&mut self.second, &mut self.window, self.window_open, |c| {
                c.tls_full_handshakes += 1
            }),
        }
        self.begin_write(i);
    }

    /// Writes (the rest of) the current request.
    fn write_more(&mut self, i: usize) {
        let reused = self.vus[i].conn_served > 0;
        let v = &mut self.vus[i];
        let parts = self
            .shared
            .requests
            .parts(&self.shared.plan.urls, v.url as usize, v.variant);
        let total = parts_len(&parts);
        let Some(sock) = v.sock.as_mut() else {
            return self.fail(i, ErrorKind::Reset);
        };
        if let (Some(u), Sock::Plain(tcp)) = (self.reactor.uring(), &*sock) {
            // Queued; the next loop turn's io_uring_enter sends it, and
            // its completion (`on_sent`) moves the user on.
            let mut slices = [io::IoSlice::new(&[]); 3];
            let n = unwritten(&parts, v.written, &mut slices);
            v.msg.set(&slices[..n]);
            v.state = State::Writing;
            if u.send(tcp.as_raw_fd(), i, v.generation, v.msg.header()).is_err() {
                self.fail(i, ErrorKind::Reset);
            }
            return;
        }
        let result: io::Result<bool> = match sock {
            Sock::Plain(tcp) => loop {
                let mut slices = [io::IoSlice::new(&[]); 3];
                let n = unwritten(&parts, v.written, &mut slices);
                match tcp.write_vectored(&slices[..n]) {
                    Ok(n) => {
                        if !v.connected {
                            v.connected = true;
                            bump(&mut self.second, &mut self.window, self.window_open, |c| {
                                c.connections_opened += 1
                            });
                        }
                        v.written += n;
                        if v.written == total {
                            break Ok(true);
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break Ok(false),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => break Err(e),
                }
            },
            Sock::Tls(t) => {
                if v.written < total {
                    // rustls buffers the plaintext; it leaves as records below.
                    let mut w = t.conn.writer();
                    if let Err(e) = parts.iter().try_for_each(|p| w.write_all(p)) {
                        break_tls(e)
                    } else {
                        v.written = total;
                        flush_tls(t)
                    }
                } else {
                    flush_tls(t)
                }
            }
        };
        match result {
            Ok(true) => {
                v.state = State::Reading;
                self.want_write(i, false);
            }
            Ok(false) => {
                v.state = State::Writing;
                self.want_write(i, true);
            }
            Err(e) => {
                let tls = matches!(sock, Sock::Tls(_));
                self.write_failed(i, e, reused, tls);
            }
        }
    }

    /// A write of the current request failed.
    fn write_failed(&mut self, i: usize, e: io::Error, reused: bool, tls: bool) {
        let v = &self.vus[i];
        if reused && is_closed_error(&e) {
            self.reconnect(i);
        } else {
            let kind = if v.conn_served == 0 && v.written == 0 {
                connect_error_kind(&e, tls)
            } else if tls && e.kind() == io::ErrorKind::InvalidData {
                ErrorKind::Tls
            } else {
                ErrorKind::Reset
            };
            self.fail(i, kind);
        }
    }

    /// io_uring: a `SENDMSG` of the current request completed.
    fn on_sent(&mut self, i: usize, generation: u32, res: i32) {
        let Some(v) = self.vus.get_mut(i) else { return };
        if v.generation != generation || v.state != State::Writing || v.sock.is_none() {
            return; // a closed connection's, or the response came first
        }
        if res < 0 {
            let reused = v.conn_served > 0;
            return self.write_failed(i, io::Error::from_raw_os_error(-res), reused, false);
        }
        if !v.connected {
            v.connected = true;
            bump(&mut self.second, &mut self.window, self.window_open, |c| {
                c.connections_opened += 1
            });
        }
        v.written += res as usize;
        let parts = self
            .shared
            .requests
            .parts(&self.shared.plan.urls, v.url as usize, v.variant);
        if v.written >= parts_len(&parts) {
            v.state = State::Reading;
        } else {
            self.write_more(i);
        }
    }

    /// io_uring: a completion of connection `i`'s multishot receive. The
    /// bytes are fed from the provided buffer itself, which goes back to
    /// the kernel afterwards.
    fn on_recv(&mut self, i: usize, generation: u32, res: i32, buffer: Option<u16>, more: bool) {
        let data = match (buffer, self.reactor.uring()) {
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
        self.received(i, generation, res, data, more);
        if let (Some(b), Some(u)) = (buffer, self.reactor.uring()) {
            u.recycle(b);
        }
    }

    fn received(&mut self, i: usize, generation: u32, res: i32, data: &[u8], more: bool) {
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
            (State::Reading | State::Writing | State::Connecting, r) if r > 0 => match feed(v, data) {
                Fed::More => v.state = State::Reading,
                Fed::Done => self.complete(i, false),
                Fed::Fail(kind) => self.fail(i, kind),
            },
            (State::Reading | State::Writing | State::Connecting, 0) => self.read_eof(i),
            // Before the first byte left, an error is the connect's (as
            // the first write's is for the epoll backends).
            (State::Writing | State::Connecting, r) if !v.connected => {
                self.fail(i, connect_error_kind(&io::Error::from_raw_os_error(-r), false))
            }
            (State::Reading | State::Writing | State::Connecting, r) => {
                self.read_failed(i, io::Error::from_raw_os_error(-r))
            }
            // Stray bytes after a close are ignored, as `drain` does.
            (State::Draining, r) if r > 0 => {}
            (State::Draining, _) => {
                self.close(i);
                self.next(i);
            }
            // Closed while idle, or bytes nobody asked for (see on_event).
            (State::Thinking, _) => self.closed_while_idle(i),
            (State::Handshaking | State::Arriving | State::Done, _) => {}
        }
        let v = &mut self.vus[i];
        if !v.recv_armed && v.generation == generation && (res > 0 || res == -libc::ENOBUFS) {
            if let (Some(sock), Some(u)) = (v.sock.as_ref(), self.reactor.uring()) {
                v.recv_armed = u.recv(sock.fd(), i, generation).is_ok();
            }
        }
    }

    /// The server closed idle keep-alive connection `i` (or sent bytes
    /// nobody asked for): drop it and reconnect at its next request. Every
    /// backend comes here, so an open loop's count of open connections
    /// (`slots − free − idle_closed`) stays exact whichever noticed it.
    fn closed_while_idle(&mut self, i: usize) {
        self.close(i);
        self.vus[i].reconnect_pending = true;
        // An open loop's slot stays in `idle` without its socket.
        if self.schedule.is_some() {
            self.idle_closed += 1;
        }
    }

    /// Drops connection `i`'s socket (closing it), first cancelling an
    /// io_uring receive that would hold it open, and submitting entries
    /// still queued: an entry names its socket by descriptor number, and
    /// once closed, that number may be the next connection's.
    fn close(&mut self, i: usize) {
        let v = &mut self.vus[i];
        if v.sock.is_none() {
            return;
        }
        if let Some(u) = self.reactor.uring() {
            if std::mem::take(&mut v.recv_armed) {
                let _ = u.cancel_recv(i, v.generation);
            }
            u.submit_queued();
        }
        v.sock = None;
    }

    /// The server closed a reused keep-alive connection before any byte of
    /// the response: open a new one and send the same request again.
    fn reconnect(&mut self, i: usize) {
        self.close(i);
        let v = &mut self.vus[i];
        v.reconnect_pending = true;
        v.parser.reset();
        if let Some(h) = v.hasher.as_deref_mut() {
            h.reset();
        }
        self.open(i);
    }

    /// Reads what the socket has of the response.
    fn read_response(&mut self, i: usize, closed: bool) {
        loop {
            let v = &mut self.vus[i];
            let Some(sock) = v.sock.as_mut() else { return };
            let read = match sock {
                Sock::Plain(tcp) => match tcp.read(&mut self.buf) {
                    Ok(0) => ReadOutcome::Eof,
                    Ok(n) => ReadOutcome::Data(n),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => ReadOutcome::Error(e),
                },
                Sock::Tls(t) => tls_read(t, &mut self.buf),
            };
            match read {
                ReadOutcome::Data(n) => match feed(v, &self.buf[..n]) {
                    Fed::More => {
                        if n < self.buf.len() && !closed && matches!(v.sock, Some(Sock::Plain(_))) {
                            return;
                        }
                    }
                    Fed::Done => return self.complete(i, closed),
                    Fed::Fail(kind) => return self.fail(i, kind),
                },
                ReadOutcome::WouldBlock => return,
                ReadOutcome::Eof => return self.read_eof(i),
                ReadOutcome::Error(e) => return self.read_failed(i, e),
            }
        }
    }

    /// The server closed the connection while a response was awaited.
    fn read_eof(&mut self, i: usize) {
        let v = &mut self.vus[i];
        let reused = v.conn_served > 0;
        match v.parser.on_eof() {
            Ok(()) => self.complete(i, true),
            Err(FrameError::ClosedBeforeResponse) if reused => self.reconnect(i),
            Err(e) => self.fail(i, frame_error_kind(e)),
        }
    }

    /// Reading the response failed.
    fn read_failed(&mut self, i: usize, e: io::Error) {
        let v = &self.vus[i];
        if v.conn_served > 0 && !v.parser.started() && is_closed_error(&e) {
            return self.reconnect(i);
        }
        let kind = if e.kind() == io::ErrorKind::InvalidData {
            ErrorKind::Tls
        } else {
            ErrorKind::Reset
        };
        self.fail(i, kind)
    }

    /// A response is complete: validate, count, and go on.
    fn complete(&mut self, i: usize, eof_seen: bool) {
        self.release_slot(i);
        let now = Instant::now();
        let counted = self.in_window(now);
        let v = &mut self.vus[i];
        let u = &self.shared.plan.urls[v.url as usize];
        let head = *v.parser.head();
        // From the intended send in an open loop (what a user of a server
        // that stalls waits), from the actual send otherwise.
        let as_sent = now - v.start;
        let latency = v.intended.map_or(as_sent, |t| now - t);
        let wire = v.parser.wire_bytes();
        let body = v.parser.body_bytes();
        let verdict = if head.status != u.expect_status {
            Err(ErrorKind::Status)
        } else {
            match u.expect {
                Expect::Status => Ok(()),
                Expect::Size(size) if body == size => Ok(()),
                Expect::Checksum { size, xxh3 }
                    if body == size && v.hasher.as_deref().is_some_and(|h| h.digest() == xxh3) =>
                {
                    Ok(())
                }
                _ => Err(ErrorKind::WrongBody),
            }
        };
        let record = |class: &mut crate::stats::ClassStats| match verdict {
            Ok(()) => {
                class.record_success(latency, wire, body);
                class.record_as_sent(as_sent);
            }
            Err(kind) => class.record_error(kind, latency, wire),
        };
        record(&mut self.second.classes[u.class]);
        let kind = ConnectionKind::of(v.http10, v.keepalive) as usize;
        self.second.conn.requests_by_kind[kind] += 1;
        if counted {
            record(&mut self.window.classes[u.class]);
            self.window.conn.requests_by_kind[kind] += 1;
        }
        if !std::mem::replace(&mut v.arrived, true) {
            self.users_arrived += 1;
        }
        v.conn_served += 1;
        if v.conn_left != u32::MAX {
            v.conn_left -= 1;
        }
        let sent_close = matches!(v.variant, Variant::Http11Close | Variant::Http10);
        let reusable = !eof_seen && !sent_close && head.persistent() && v.conn_left > 0;
        if reusable {
            self.next_now(i);
        } else if eof_seen {
            self.close(i);
            self.next(i);
        } else {
            // Wait (briefly) for the server's close; see `State::Draining`.
            v.state = State::Draining;
            v.deadline = now + self.shared.plan.timeout.min(Duration::from_millis(500));
            self.drain(i);
        }
    }

    /// Reads until the server's FIN on a connection that is ending.
    fn drain(&mut self, i: usize) {
        if self.reactor.uring().is_some() {
            return; // the receive's completions bring the FIN
        }
        loop {
            let v = &mut self.vus[i];
            let Some(sock) = v.sock.as_mut() else {
                return self.next(i);
            };
            let r = match sock {
                Sock::Plain(tcp) => match tcp.read(&mut self.buf) {
                    Ok(0) => ReadOutcome::Eof,
                    Ok(n) => ReadOutcome::Data(n),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => ReadOutcome::WouldBlock,
                    Err(e) => ReadOutcome::Error(e),
                },
                Sock::Tls(t) => tls_read(t, &mut self.buf),
            };
            match r {
                ReadOutcome::WouldBlock => return,
                ReadOutcome::Data(_) => continue, // stray bytes after a close: ignored
                ReadOutcome::Eof | ReadOutcome::Error(_) => {
                    self.close(i);
                    return self.next(i);
                }
            }
        }
    }

    /// Frees user `i`'s arrival slot, if it holds one, for the next user
    /// waiting (who connects on the next loop turn).
    fn release_slot(&mut self, i: usize) {
        if !std::mem::take(&mut self.vus[i].holds_slot) {
            return;
        }
        self.arrivals -= 1;
        if let Some(next) = self.arrival_queue.pop_front() {
            self.ready.push(next);
        }
    }

    /// After a request ended (counted or not): think, then the next one.
    fn next(&mut self, i: usize) {
        if self.schedule.is_some() {
            return self.release(i);
        }
        let think = self.shared.plan.think_time;
        self.vus[i].state = State::Thinking;
        if think.is_zero() {
            self.ready.push(i as u32);
        } else {
            let at = Instant::now() + think;
            self.think.push(Reverse((at, i as u32)));
        }
    }

    /// After a successful or counted response on a path that cannot recurse
    /// (no failure led here): with no think time, send the next request at
    /// once, as wrk and the floor do, instead of after the whole event batch
    /// — the server gets its next request a batch earlier.
    fn next_now(&mut self, i: usize) {
        if self.schedule.is_some() {
            return self.release(i);
        }
        let think = self.shared.plan.think_time;
        self.vus[i].state = State::Thinking;
        if think.is_zero() {
            self.start_request(i);
        } else {
            let at = Instant::now() + think;
            self.think.push(Reverse((at, i as u32)));
        }
    }

    /// The current request failed: count it, drop the connection, go on.
    fn fail(&mut self, i: usize, kind: ErrorKind) {
        self.release_slot(i);
        // Its next connect arrives anew, as a user who gave up and comes
        // back: failures that come together (a server's stall) must not
        // return together. (An open loop's schedule paces its connects.)
        self.vus[i].arriving = self.schedule.is_none();
        let now = Instant::now();
        let counted = self.in_window(now);
        let v = &mut self.vus[i];
        let class = self.shared.plan.urls[v.url as usize].class;
        let as_sent = now - v.start;
        let (latency, bytes) = (v.intended.map_or(as_sent, |t| now - t), v.parser.wire_bytes());
        self.second.classes[class].record_error(kind, latency, bytes);
        let conn_kind = ConnectionKind::of(v.http10, v.keepalive) as usize;
        self.second.conn.requests_by_kind[conn_kind] += 1;
        if counted {
            self.window.classes[class].record_error(kind, latency, bytes);
            self.window.conn.requests_by_kind[conn_kind] += 1;
        }
        self.close(i);
        self.next(i);
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
fn feed(v: &mut Vu, data: &[u8]) -> Fed {
    match v.parser.feed(data, v.hasher.as_deref_mut()) {
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

/// A `msghdr` and its scatter list, for an io_uring `SENDMSG` of the
/// current request (pointing into the plan's request bytes).
struct SendMsg {
    hdr: libc::msghdr,
    iov: [libc::iovec; 3],
}

// SAFETY: the pointers are to the plan's request bytes (shared, immutable,
// alive as long as the worker) and to this value's own array; a slot moves
// to its worker thread once, before use.
unsafe impl Send for SendMsg {}

impl SendMsg {
    fn new() -> SendMsg {
        SendMsg {
            // SAFETY: an all-zero msghdr is a valid empty one.
            hdr: unsafe { std::mem::zeroed() },
            iov: [libc::iovec {
                iov_base: std::ptr::null_mut(),
                iov_len: 0,
            }; 3],
        }
    }

    fn set(&mut self, slices: &[io::IoSlice<'_>]) {
        for (k, s) in slices.iter().enumerate() {
            self.iov[k] = libc::iovec {
                iov_base: s.as_ptr() as *mut libc::c_void,
                iov_len: s.len(),
            };
        }
        self.hdr.msg_iov = self.iov.as_mut_ptr();
        self.hdr.msg_iovlen = slices.len() as _;
    }

    fn header(&self) -> *const libc::msghdr {
        &self.hdr
    }
}

enum ReadOutcome {
    Data(usize),
    WouldBlock,
    Eof,
    Error(io::Error),
}

/// Reads decrypted bytes from a TLS connection into `buf`.
fn tls_read(t: &mut TlsSock, buf: &mut [u8]) -> ReadOutcome {
    loop {
        match t.conn.reader().read(buf) {
            Ok(0) => return ReadOutcome::Eof, // close_notify
            Ok(n) => return ReadOutcome::Data(n),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            // TCP closed without close_notify: most servers do that.
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return ReadOutcome::Eof,
            Err(e) => return ReadOutcome::Error(e),
        }
        match t.conn.read_tls(&mut t.tcp) {
            Ok(0) => return ReadOutcome::Eof,
            Ok(_) => {
                if let Err(e) = t.conn.process_new_packets() {
                    let _ = t.conn.write_tls(&mut t.tcp);
                    return ReadOutcome::Error(io::Error::new(io::ErrorKind::InvalidData, e));
                }
                // Post-handshake messages (session tickets) may want a reply.
                while t.conn.wants_write() {
                    if t.conn.write_tls(&mut t.tcp).is_err() {
                        break;
                    }
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return ReadOutcome::WouldBlock,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return ReadOutcome::Error(e),
        }
    }
}

/// Sends buffered TLS records; `Ok(true)` when all left.
fn flush_tls(t: &mut TlsSock) -> io::Result<bool> {
    while t.conn.wants_write() {
        match t.conn.write_tls(&mut t.tcp) {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

fn break_tls(e: io::Error) -> io::Result<bool> {
    Err(io::Error::new(io::ErrorKind::InvalidData, e))
}

/// Fills `out` with the parts of a request not yet written (`written`
/// bytes are); returns how many slices are in use.
#[inline]
fn unwritten<'a>(parts: &[&'a [u8]; 3], mut written: usize, out: &mut [io::IoSlice<'a>; 3]) -> usize {
    let mut n = 0;
    for p in parts {
        if written >= p.len() {
            written -= p.len();
            continue;
        }
        out[n] = io::IoSlice::new(&p[written..]);
        written = 0;
        n += 1;
    }
    n
}

/// Counts a connection event in the second's counters and, when the window
/// is open, in the run's.
#[inline]
pub(crate) fn bump(second: &mut Stats, window: &mut Stats, window_open: bool, f: fn(&mut crate::stats::ConnCounters)) {
    f(&mut second.conn);
    if window_open {
        f(&mut window.conn);
    }
}

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

/// Opens a non-blocking TCP connection (connect in progress).
pub(crate) fn connect(
    addr: SocketAddr,
    source: Option<std::net::IpAddr>,
    busy_poll_us: u32,
) -> Result<TcpStream, ErrorKind> {
    use socket2::{Domain, Protocol, Socket, Type};
    let sock = Socket::new(
        Domain::for_address(addr),
        Type::STREAM.nonblocking(),
        Some(Protocol::TCP),
    )
    .map_err(|_| ErrorKind::ConnectRefused)?;
    if let Some(ip) = source {
        // Let connect() pick the port, so each (source, destination) pair
        // has the whole ephemeral range (IP_BIND_ADDRESS_NO_PORT).
        set_bind_address_no_port(&sock);
        // A source address this machine cannot bind is the client's
        // failure, never the server's refusal.
        sock.bind(&SocketAddr::new(ip, 0).into()).map_err(|_| ErrorKind::Bind)?;
    }
    if busy_poll_us > 0 {
        // Best effort, as the epoll side (see reactor.rs).
        let _ = crate::reactor::set_socket_busy_poll(sock.as_raw_fd(), busy_poll_us);
    }
    match sock.connect(&addr.into()) {
        Ok(()) => {}
        Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {}
        Err(e) => return Err(connect_error_kind(&e, false)),
    }
    Ok(TcpStream::from_std(sock.into()))
}

/// `IP_BIND_ADDRESS_NO_PORT`: bind the address now, the port at connect.
fn set_bind_address_no_port(sock: &socket2::Socket) {
    use std::os::fd::AsRawFd;
    let one: libc::c_int = 1;
    // SAFETY: setsockopt on a socket we own with a pointer to a live c_int.
    unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::IPPROTO_IP,
            libc::IP_BIND_ADDRESS_NO_PORT,
            &one as *const libc::c_int as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
}

/// Maps an error seen while connecting (or on a connection's first write).
pub(crate) fn connect_error_kind(e: &io::Error, tls: bool) -> ErrorKind {
    match e.kind() {
        io::ErrorKind::ConnectionRefused => ErrorKind::ConnectRefused,
        io::ErrorKind::TimedOut => ErrorKind::ConnectTimeout,
        io::ErrorKind::ConnectionReset | io::ErrorKind::BrokenPipe | io::ErrorKind::UnexpectedEof => ErrorKind::Reset,
        io::ErrorKind::InvalidData if tls => ErrorKind::Tls,
        _ => match e.raw_os_error() {
            Some(libc::ENETUNREACH | libc::EHOSTUNREACH) => ErrorKind::ConnectRefused,
            // With IP_BIND_ADDRESS_NO_PORT the local port is picked at
            // connect: EADDRNOTAVAIL there means no free local port (or
            // source address) on the client's side.
            Some(libc::EADDRNOTAVAIL) => ErrorKind::Bind,
            _ => ErrorKind::Reset,
        },
    }
}

/// Errors that mean "the server had closed this connection".
fn is_closed_error(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionReset | io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionAborted
    )
}

pub(crate) fn frame_error_kind(e: FrameError) -> ErrorKind {
    match e {
        FrameError::Framing => ErrorKind::Framing,
        FrameError::HeaderTooLarge => ErrorKind::HeaderTooLarge,
        FrameError::ShortBody => ErrorKind::ShortBody,
        FrameError::ClosedBeforeResponse => ErrorKind::Reset,
    }
}

/// Builds the shared state for a plan (TLS configs, server names, weights).
pub(crate) fn shared_for(plan: ClientPlan, start: Instant) -> Result<Shared, crate::plan::PlanError> {
    plan.validate()?;
    let needs_tls = plan.urls.iter().any(|u| u.target.scheme == Scheme::Https);
    let tls = if needs_tls {
        Some(TlsConfigs::new(&plan.tls)?)
    } else {
        None
    };
    let server_names = plan
        .urls
        .iter()
        .map(|u| {
            if u.target.scheme == Scheme::Https {
                server_name(&u.target.host).map(Some)
            } else {
                Ok(None)
            }
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut acc = 0f64;
    let cumulative = plan
        .urls
        .iter()
        .map(|u| {
            acc += u.weight;
            acc
        })
        .collect();
    let budget = match plan.stop {
        Stop::Requests(n) => n,
        Stop::After(_) => 0,
    };
    Ok(Shared {
        requests: Requests::build(&plan),
        tls,
        server_names,
        cumulative,
        stop: AtomicBool::new(false),
        budget: AtomicU64::new(budget),
        start,
        tls_error: std::sync::OnceLock::new(),
        open_connections: AtomicU64::new(0),
        peak_connections: AtomicU64::new(0),
        h2_settings: std::sync::OnceLock::new(),
        plan,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unbindable_source_is_a_bind_error() {
        // Nothing needs to listen: the bind fails before any connect.
        let target: SocketAddr = "127.0.0.1:9".parse().unwrap();
        let away = "192.0.2.1".parse().unwrap(); // TEST-NET-1: on no machine
        assert_eq!(connect(target, Some(away), 0).err(), Some(ErrorKind::Bind));
        let no_port = io::Error::from_raw_os_error(libc::EADDRNOTAVAIL);
        assert_eq!(connect_error_kind(&no_port, false), ErrorKind::Bind);
        let refused = io::Error::from_raw_os_error(libc::ECONNREFUSED);
        assert_eq!(connect_error_kind(&refused, false), ErrorKind::ConnectRefused);
    }
}
