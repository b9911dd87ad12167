//! The one event loop of an OS thread, whatever the protocol: the users
//! (request slots) and their think-time heap, the request budget, the stop
//! flag and the plan's end, the open-loop schedule and its timer, the
//! per-second snapshots with the thread's CPU and loop lag, and the
//! measurement window. A [`Protocol`] (HTTP/1 in `http1.rs`, HTTP/2 in
//! `h2/protocol.rs`) starts a user's request, handles its connections'
//! readiness, sweeps its timeouts and says what is in flight; the
//! [`Core`] it is handed counts what ends, by the one set of rules
//! (docs/counting.md).
//!
//! Why one loop generic over a trait rather than a loop per protocol: the
//! skeleton (when to stop, when a second ends, which requests the window
//! counts, how the schedule's sends find a slot) is where the protocols
//! must agree exactly, so it is written once; the protocol is a type
//! parameter, not a trait object, so each loop is compiled for its
//! protocol and the hot path (a response's end, the next request's start)
//! has no indirect call in it.

use crate::plan::{ClientPlan, Expect, Load, OpenLoop, Scheme, Stop};
use crate::prepared::Requests;
use crate::reactor::{Ev, IoConfig, Reactor};
use crate::rng::SplitMix64;
use crate::schedule::{Schedule, Timer, TIMER};
use crate::stats::{ConnCounters, ErrorKind, LatencyTally, LoopMeter, Snapshot, Stats, ThreadEnd};
use crate::tls::{server_name, TlsConfigs};
use rustls::pki_types::ServerName;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// What all worker threads of one client share, read-only but for the stop
/// flag and the request budget.
#[derive(Debug)]
pub(crate) struct Shared {
    pub plan: ClientPlan,
    pub requests: Requests,
    pub tls: Option<TlsConfigs>,
    /// Per origin (`UrlRef::origin`): its TLS server name, for https.
    pub server_names: Vec<Option<ServerName<'static>>>,
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
    /// A flow's first failed check per step (class), in words: the
    /// `check_failed` counts say how many, this says why.
    pub check_failures: std::sync::Mutex<Vec<Option<String>>>,
    /// When the client's first request of the run began, on this host's
    /// wall clock (UTC ns; `i64::MAX` until one has): the earliest of its
    /// OS threads' firsts. The controller compares it with the start it
    /// asked for (docs/counting.md, "Start spread").
    pub first_send_ns: AtomicI64,
}

impl Shared {
    /// The URL a request goes to: the weighted pick of the URL table (an
    /// alias table), one draw of `rng` (none when there is one URL).
    #[inline]
    pub fn pick_url(&self, rng: &mut SplitMix64) -> usize {
        self.plan.urls.pick(rng)
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

    /// Keeps the run's first TLS failure in words (only the first is
    /// explained, so a run of failing handshakes costs nothing more).
    /// Keeps the first reason a check of step `class` failed (a failure
    /// is rare next to a request, so a lock is fine here).
    pub(crate) fn note_check_failure(&self, class: usize, reason: String) {
        if let Ok(mut first) = self.check_failures.lock() {
            if let Some(slot @ None) = first.get_mut(class) {
                *slot = Some(reason);
            }
        }
    }

    pub(crate) fn note_tls_error(&self, explain: impl FnOnce() -> String) {
        if self.tls_error.get().is_none() {
            let _ = self.tls_error.set(explain());
        }
    }
}

/// A protocol's side of the event loop: everything about connections and
/// requests; the [`Core`] it is handed does the rest.
///
/// A *user* is a closed-loop virtual user, or in an open loop a request
/// slot (at most one request in flight each), numbered `0..users()` on
/// this thread.
pub(crate) trait Protocol {
    /// The users of this thread.
    fn users(&self) -> usize;

    /// User `u`'s think time ended, or it was queued to go on (`Core::rest`
    /// or an arrival slot freed): start its next request if it is still
    /// between requests (it may have ended since).
    fn resume(&mut self, core: &mut Core, u: u32);

    /// Open loop: a user with no request, to send the schedule's next on
    /// (one holding an idle connection first, where the protocol keeps
    /// them).
    fn take_slot(&mut self) -> Option<u32>;

    /// Open loop: whether [`Protocol::take_slot`] would give one.
    fn has_free_slot(&self) -> bool;

    /// Open loop: sends user `u`'s next request, which the schedule meant
    /// for `intended` (its latency counts from there).
    fn send(&mut self, core: &mut Core, u: u32, intended: Instant);

    /// A readiness event or completion for one of the protocol's tokens
    /// (the timer's is the loop's own).
    fn event(&mut self, core: &mut Core, ev: Ev);

    /// Whether work is left for the next turn without waiting for an event
    /// (reads cut short by the per-turn limit).
    fn pending(&self) -> bool {
        false
    }

    /// After a turn's events: that work.
    fn after_events(&mut self, _core: &mut Core) {}

    /// Fails or ends what is past its deadline.
    fn sweep(&mut self, core: &mut Core, now: Instant);

    /// The protocol's own next timer (HTTP/3: QUIC's loss detection,
    /// pacing and ACK delay), which the loop wakes for and then runs
    /// [`Protocol::timers`]; `None`: the sweep is soon enough.
    fn next_timer(&self) -> Option<Instant> {
        None
    }

    /// Runs the timers due at `now`.
    fn timers(&mut self, _core: &mut Core, _now: Instant) {}

    /// Connections open now (open loop: the client's count and peak).
    fn open_connections(&self) -> u64;

    /// At the end: requests in flight, and users waiting to send (nothing
    /// sent: an arrival slot or a stream not yet theirs).
    fn in_flight(&self) -> (u64, u64);

    /// Closes every connection before the last snapshot, so the caller may
    /// count on the sockets being gone once it arrives.
    fn close_all(&mut self, core: &mut Core);

    /// Opens the users' first connections before the start, until `until`
    /// (the plan's `preconnect`; only HTTP/1 takes it, the others' plans
    /// refuse it).
    fn preconnect(&mut self, _core: &mut Core, _until: Instant) {}
}

/// The loop's state that every protocol shares, and the counting rules.
pub(crate) struct Core {
    pub shared: Arc<Shared>,
    pub index: usize,
    /// The thread number its snapshots carry (`index`, or after the HTTP/1
    /// loops of a mixed client).
    pub report_as: usize,
    pub reactor: Reactor,
    pub io: IoConfig,
    /// Everything that completed in the current second (ramps included),
    /// for the per-second series; sent and reset once a second.
    pub second: Stats,
    /// The second's successful latencies, a tally a class, added to
    /// `second`'s histograms when the second folds or is sent
    /// (`settle_second`): the request loop's record is an increment.
    tallies: Vec<LatencyTally>,
    /// What completed inside the measurement window: the run's totals,
    /// sent once, when the thread stops.
    pub window: Stats,
    /// The thread's CPU and loop lag, charged to each second.
    cpu: LoopMeter,
    /// Whether the loop's current turn is inside the measurement window
    /// (for connection events, which need no exact instant).
    pub window_open: bool,
    /// Every request recorded in `second`'s classes since its last reset
    /// ended inside the window, and none of them is in `window`'s yet:
    /// they are added there in one step (`fold_second`) when the second
    /// ends, instead of a second HDR record and set of counters a
    /// request. The first request of a second that ends outside the
    /// window adds what came before it and turns this off until the next
    /// second. A second folds only when the one before had
    /// [`FOLD_MIN`] requests a class (the first second does not).
    folding: bool,
    pub rng: SplitMix64,
    think: BinaryHeap<Reverse<(Instant, u32)>>,
    /// Users whose next request starts on the next loop turn. Deferring
    /// through this queue, rather than starting at once, keeps a failure
    /// that happens synchronously (a refused connect on loopback) from
    /// recursing, and bounds the work of one loop turn.
    ready: Vec<u32>,
    ready_now: Vec<u32>,
    budget: u64,
    budget_chunk: u64,
    /// Users with no more requests to make.
    done_users: usize,
    /// Users that have had a response (each counted once).
    users_arrived: u64,
    next_source: usize,
    /// Open loop: the schedule. A closed loop has none.
    pub schedule: Option<Schedule>,
    /// Open loop: a timerfd that wakes the loop at the next send's
    /// intended time to the microsecond; `epoll_wait`'s timeout has
    /// millisecond resolution (rounded up), which would make every send
    /// about half a millisecond late and add that to every latency.
    timer: Option<Timer>,
    /// This thread's open connections as last added to
    /// `Shared::open_connections`.
    published: u64,
    /// Whether this thread has begun a request yet (its first is noted in
    /// `Shared::first_send_ns`, once).
    sent_first: bool,
    /// The run's end (`Stop::After`). A request that ends after it, in the
    /// loop turn that notices the end, was unfinished at the end: it is
    /// counted in flight, not as an outcome, and no request starts after
    /// it (docs/counting.md, `in_flight`).
    end: Option<Instant>,
    /// The plan's window, cut at the run's end.
    window_span: (Duration, Duration),
    /// The same as instants, for a compare a completion, not a subtraction.
    window_at: WindowAt,
    /// A request has ended after `end` (`ended_late` of them).
    past_end: bool,
    ended_late: u64,
    tx: Sender<Snapshot>,
}

const SWEEP_MAX: Duration = Duration::from_millis(10);

/// The window `[from, until)` after `start`, as instants: whether `now -
/// start` (saturating) lies in it is then two compares.
#[derive(Debug, Clone, Copy)]
struct WindowAt {
    /// `None`: open from any instant (`from` is zero).
    opens: Option<Instant>,
    /// `None`: never closes (`until` past what an `Instant` holds).
    closes: Option<Instant>,
}

impl WindowAt {
    fn new(start: Instant, (from, until): (Duration, Duration)) -> WindowAt {
        let closes = start.checked_add(until);
        if from.is_zero() {
            return WindowAt { opens: None, closes };
        }
        match start.checked_add(from) {
            Some(opens) => WindowAt {
                opens: Some(opens),
                closes,
            },
            // Opens past any instant: never.
            None => WindowAt {
                opens: Some(start),
                closes: Some(start),
            },
        }
    }

    #[inline]
    fn contains(&self, now: Instant) -> bool {
        self.opens.is_none_or(|o| now >= o) && self.closes.is_none_or(|c| now < c)
    }
}

/// Requests a class must have had in a second (on average over the
/// classes that had any) for the next second's to be folded into the
/// window once (`Core::folding`) rather than recorded there one by one:
/// adding a class's latency histogram walks its 23,552 buckets, the cost
/// of about 2,000 records, so below this rate folding costs more than it
/// saves.
const FOLD_MIN: u64 = 8192;

impl Core {
    /// The core of thread `index`; `salt` keeps the protocols' random
    /// sequences apart.
    pub(crate) fn new(shared: Arc<Shared>, index: usize, salt: u64, tx: Sender<Snapshot>) -> io::Result<Core> {
        let plan = &shared.plan;
        let open = matches!(plan.load, Load::Open(_));
        let stats = || {
            if open {
                Stats::open_loop(plan.classes.len())
            } else {
                Stats::new(plan.classes.len())
            }
        };
        let threads = plan.os_threads as u64;
        let budget_chunk = match plan.stop {
            Stop::Requests(n) => (n / (threads * 16)).clamp(1, 64),
            Stop::After(_) => 0,
        };
        let io = IoConfig::get().map_err(io::Error::other)?;
        let window_span = match plan.stop {
            Stop::After(d) => (plan.window.0, plan.window.1.min(d)),
            Stop::Requests(_) => plan.window,
        };
        Ok(Core {
            reactor: Reactor::new(io, plan.receive_buffer)?,
            io,
            second: stats(),
            tallies: (0..plan.classes.len()).map(|_| LatencyTally::default()).collect(),
            window: stats(),
            cpu: LoopMeter::default(),
            window_open: false,
            folding: false,
            rng: SplitMix64::new(plan.seed ^ (index as u64 + 1).wrapping_mul(salt)),
            think: BinaryHeap::new(),
            ready: Vec::new(),
            ready_now: Vec::new(),
            budget: 0,
            budget_chunk,
            done_users: 0,
            users_arrived: 0,
            next_source: index,
            schedule: None,
            timer: None,
            published: 0,
            sent_first: false,
            end: match plan.stop {
                Stop::After(d) => Some(shared.start + d),
                Stop::Requests(_) => None,
            },
            window_span,
            window_at: WindowAt::new(shared.start, window_span),
            past_end: false,
            ended_late: 0,
            index,
            report_as: index,
            tx,
            shared,
        })
    }

    /// Counts a connection event in the second's counters and, when the
    /// window is open, in the run's.
    #[inline]
    pub(crate) fn bump(&mut self, f: fn(&mut ConnCounters)) {
        f(&mut self.second.conn);
        if self.window_open {
            f(&mut self.window.conn);
        }
    }

    /// Whether a completion at `now` falls in the measurement window.
    #[inline]
    pub(crate) fn in_window(&self, now: Instant) -> bool {
        self.window_at.contains(now)
    }

    /// Takes one request from the budget (`Stop::Requests`); `false` when
    /// it is spent, and the user, which the caller then retires, is done.
    #[inline]
    pub(crate) fn take_request(&mut self) -> bool {
        if self.past_end {
            self.done_users += 1;
            return false;
        }
        if self.budget_chunk > 0 {
            if self.budget == 0 {
                self.budget = self.shared.reserve(self.budget_chunk);
            }
            if self.budget == 0 {
                self.done_users += 1;
                return false;
            }
            self.budget -= 1;
        }
        // Once per thread and run: the hot path pays one predictable branch.
        if !self.sent_first {
            self.note_first_send();
        }
        true
    }

    /// The thread's first request begins now: the client's first send is
    /// the earliest of its threads'. The wall clock, not the monotonic
    /// one: the controller compares it with clients on other hosts.
    #[cold]
    fn note_first_send(&mut self) {
        self.sent_first = true;
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX));
        self.shared.first_send_ns.fetch_min(now, Ordering::Relaxed);
    }

    /// The next source address of the plan's, in turn (none: the kernel's).
    pub(crate) fn next_source(&mut self) -> Option<std::net::IpAddr> {
        let sources = &self.shared.plan.source_addresses;
        if sources.is_empty() {
            return None;
        }
        self.next_source = (self.next_source + 1) % sources.len();
        Some(sources[self.next_source])
    }

    /// A user's first response (counted once per user).
    #[inline]
    pub(crate) fn arrived(&mut self, first: bool) {
        if first {
            self.users_arrived += 1;
        }
    }

    /// After user `u`'s request ended, in a closed loop: its think time,
    /// or with none the next loop turn.
    #[inline]
    pub(crate) fn rest(&mut self, u: u32) {
        self.rest_for(u, self.shared.plan.think_time);
    }

    /// The user rests `think` (a flow step's own think time).
    pub(crate) fn rest_for(&mut self, u: u32, think: Duration) {
        if think.is_zero() {
            self.ready.push(u);
        } else {
            self.think.push(Reverse((Instant::now() + think, u)));
        }
    }

    /// After a response on a path that cannot recurse, in a closed loop:
    /// `true` with no think time, when the next request may start at once,
    /// as wrk and the floor do, instead of after the whole event batch;
    /// otherwise the user rests ([`Core::rest`]).
    #[inline]
    pub(crate) fn go_on_now(&mut self, u: u32) -> bool {
        if self.shared.plan.think_time.is_zero() {
            return true;
        }
        self.rest(u);
        false
    }

    /// Room for `users` resting at once, taken now: a heap grown by
    /// doubling holds up to twice what it needs (24 bytes a user), and
    /// would reallocate in the loop.
    pub(crate) fn reserve_users(&mut self, users: usize) {
        self.think.reserve_exact(users);
    }

    /// Queues user `u` for the next loop turn.
    #[inline]
    pub(crate) fn defer(&mut self, u: u32) {
        self.ready.push(u);
    }

    /// Counts a request that ended with a response whose check gave
    /// `verdict`, in class `class`; `true` when it ended in the window.
    #[inline]
    pub(crate) fn record_response(
        &mut self,
        class: usize,
        verdict: Result<(), ErrorKind>,
        e: Measured,
        now: Instant,
    ) -> bool {
        let counted = self.counted(now);
        if self.past_end {
            self.ended_late += 1;
            return false;
        }
        let c = &mut self.second.classes[class];
        match verdict {
            Ok(()) => {
                c.count_success(e.wire, e.body, e.sent);
                self.tallies[class].record(&mut c.latency, e.latency.as_micros() as u64);
                c.record_as_sent(e.as_sent);
            }
            Err(kind) => c.record_error(kind, e.latency, e.wire, e.sent),
        }
        if counted && !self.folding {
            let c = &mut self.window.classes[class];
            match verdict {
                Ok(()) => {
                    c.record_success(e.latency, e.wire, e.body, e.sent);
                    c.record_as_sent(e.as_sent);
                }
                Err(kind) => c.record_error(kind, e.latency, e.wire, e.sent),
            }
        }
        counted
    }

    /// Adds the tallied latencies to the second's histograms; before
    /// anything reads them.
    fn settle_second(&mut self) {
        for (t, c) in self.tallies.iter_mut().zip(&mut self.second.classes) {
            t.settle(&mut c.latency);
        }
    }

    /// Whether a request ending at `now` counts in the window; the first
    /// that does not ends the second's folding (see `Core::folding`).
    #[inline]
    fn counted(&mut self, now: Instant) -> bool {
        let counted = self.in_window(now);
        if !counted {
            // The window never outlasts the run, so only here can a
            // request have ended after the run's end (once past, always).
            self.past_end |= self.end.is_some_and(|e| now >= e);
            if self.folding {
                self.fold_second();
                self.folding = false;
            }
        }
        counted
    }

    /// Adds the second's class records to the window's (exact: counters
    /// and histograms add bucket by bucket) while they are all the
    /// window's; done once a second, and before the window leaves.
    fn fold_second(&mut self) {
        self.settle_second();
        if !self.folding {
            return;
        }
        for (w, s) in self.window.classes.iter_mut().zip(&self.second.classes) {
            if s.counters != crate::stats::Counters::default() {
                w.add(s);
            }
        }
    }

    /// Counts a request that failed with `kind`, `bytes` received and
    /// `sent` written; `true` when it ended in the window.
    #[inline]
    pub(crate) fn record_error(
        &mut self,
        class: usize,
        kind: ErrorKind,
        latency: Duration,
        bytes: u64,
        sent: u64,
        now: Instant,
    ) -> bool {
        let counted = self.counted(now);
        if self.past_end {
            self.ended_late += 1;
            return false;
        }
        self.second.classes[class].record_error(kind, latency, bytes, sent);
        if counted && !self.folding {
            self.window.classes[class].record_error(kind, latency, bytes, sent);
        }
        counted
    }

    /// Charges the second with the thread's CPU since the last tick and
    /// with `lag`, how late this tick ran (one `getrusage` a second).
    fn tick(&mut self, lag: Duration) {
        self.cpu.tick(&mut self.second.load, lag);
    }

    /// The run's window, the last second's folded records included (the
    /// last snapshot does not add them again).
    fn take_window(&mut self) -> Stats {
        self.fold_second();
        self.folding = false;
        std::mem::replace(&mut self.window, Stats::new(0))
    }

    /// `in_flight`: the protocol's requests unanswered at the second's end.
    fn send_snapshot(&mut self, second: u32, in_flight: u64, last: Option<ThreadEnd>) {
        self.fold_second();
        // The next second starts empty (nothing in it is outside the
        // window); it folds if this one had the requests to make it pay.
        let (mut requests, mut classes) = (0, 0);
        for c in &self.second.classes {
            let n = c.counters.requests + c.counters.errors_total();
            if n > 0 {
                requests += n;
                classes += 1;
            }
        }
        self.folding = classes > 0 && requests >= FOLD_MIN * classes;
        self.second.load.in_flight = in_flight;
        let snap = Snapshot {
            thread: self.report_as,
            second,
            stats: self.second.clone(),
            last,
        };
        self.second.reset();
        // The collector may be gone when the caller dropped it: nothing to do.
        let _ = self.tx.send(snap);
    }

    /// Open loop: adds the change in this thread's open connections to the
    /// client's count and its peak. Once a loop turn, after the sends:
    /// connections are opened there, so the count after them is this
    /// turn's highest.
    fn publish_connections(&mut self, open: u64) {
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
}

/// What a request that ended with a response measured.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Measured {
    /// From the intended send (open loop) or the actual one.
    pub latency: Duration,
    /// From the actual send.
    pub as_sent: Duration,
    /// Response bytes on the wire, and of the decoded body.
    pub wire: u64,
    pub body: u64,
    /// Request bytes written.
    pub sent: u64,
}

/// The response check, one for every protocol: the status the URL expects,
/// then its size or checksum (`UrlTable::expectation`). `digest` is asked
/// only when the size is right.
#[inline]
pub(crate) fn check_response(
    expect_status: u16,
    expect: Expect,
    status: u16,
    body: u64,
    digest: impl FnOnce() -> Option<u64>,
) -> Result<(), ErrorKind> {
    if status != expect_status {
        return Err(ErrorKind::Status);
    }
    match expect {
        Expect::Status => Ok(()),
        Expect::Size(size) if body == size => Ok(()),
        Expect::Checksum { size, xxh3 } if body == size && digest() == Some(xxh3) => Ok(()),
        _ => Err(ErrorKind::WrongBody),
    }
}

/// One OS thread's event loop over protocol `P`.
pub(crate) struct EventLoop<P: Protocol> {
    pub core: Core,
    pub protocol: P,
}

impl<P: Protocol> EventLoop<P> {
    /// Snapshots carry thread number `n` (a mixed client's collector counts
    /// the HTTP/1 loops first).
    pub(crate) fn reporting_as(mut self, n: usize) -> Self {
        self.core.report_as = n;
        self
    }

    /// Runs until the plan's stop condition or the stop flag, then sends
    /// the last snapshot.
    pub(crate) fn run(self) {
        let EventLoop { mut core, mut protocol } = self;
        let p = &mut protocol;
        let shared = Arc::clone(&core.shared);
        let plan = &shared.plan;
        let start = shared.start;
        let end = core.end;
        let sweep_every = (plan.timeout / 20).clamp(Duration::from_millis(1), SWEEP_MAX);
        let mut events = core.reactor.events(1024);
        let mut second: u32 = 0;
        let mut next_snapshot = start + Duration::from_secs(1);
        core.cpu.start();
        let mut done_at_start = false;
        if let Err(e) = core.reactor.start() {
            // Nothing was sent: the run reports no requests, and why.
            eprintln!("benchlab: worker {}: cannot start io_uring: {e}", core.index);
            done_at_start = true;
        }
        let begin = start + plan.start_delay;
        if plan.preconnect && !done_at_start {
            p.preconnect(&mut core, begin);
        }
        // To the instant itself, not a timer's late wake-up (start spread);
        // the thread may run real-time until its first request is taken.
        let started = benchlab_input::start::wait_until(begin, &AtomicBool::new(false));
        let now = Instant::now();
        core.window_open = core.in_window(now);
        let users = p.users();
        match plan.load {
            _ if done_at_start => drop(started),
            Load::Open(o) => {
                // The first request leaves on the schedule, later: the
                // thread's own policy again at once.
                drop(started);
                // The schedule starts at the client's begin instant, not at
                // this thread's wake-up: a late start shows as late sends.
                core.schedule = Some(Schedule::new(o, begin, plan.os_threads, core.index, plan.seed));
                // Without a timer the loop still runs, on epoll's coarser timeout.
                core.timer = Timer::new()
                    .and_then(|t| core.reactor.register_readable(t.fd(), TIMER).map(|()| t))
                    .ok();
            }
            Load::Closed if plan.ramp_up.is_zero() => {
                let mut started = Some(started);
                for u in 0..users {
                    p.resume(&mut core, u as u32);
                    // The first user's resume took the thread's first
                    // request (`take_request` noted the first send): back
                    // to the thread's own policy for the rest.
                    drop(started.take());
                }
            }
            Load::Closed => {
                // Users start over the ramp-up, later.
                drop(started);
                // Users start evenly over the ramp-up, those of all OS
                // threads interleaved: user j of thread t is the client's
                // user j × threads + t.
                let threads = plan.os_threads as u128;
                let total = plan.virtual_users.max(1) as u128;
                let ramp = plan.ramp_up.as_nanos();
                for j in 0..users {
                    let k = j as u128 * threads + core.index as u128;
                    let at = now + Duration::from_nanos((ramp * k / total) as u64);
                    core.think.push(Reverse((at, j as u32)));
                }
            }
        }
        let mut next_sweep = Instant::now() + sweep_every;
        loop {
            let now = Instant::now();
            if done_at_start || shared.stop.load(Ordering::Relaxed) || end.is_some_and(|e| now >= e) {
                break;
            }
            core.window_open = core.in_window(now);
            if core.done_users == users {
                break;
            }
            if core.schedule.is_some() {
                send_due(&mut core, p, now, end);
                core.publish_connections(p.open_connections());
            }
            while let Some(Reverse((at, u))) = core.think.peek().copied() {
                if at > now {
                    break;
                }
                core.think.pop();
                p.resume(&mut core, u);
            }
            std::mem::swap(&mut core.ready, &mut core.ready_now);
            for k in 0..core.ready_now.len() {
                let u = core.ready_now[k];
                p.resume(&mut core, u);
            }
            core.ready_now.clear();
            if p.next_timer().is_some_and(|t| t <= now) {
                p.timers(&mut core, now);
            }
            if now >= next_sweep {
                p.sweep(&mut core, now);
                next_sweep = now + sweep_every;
            }
            if now >= next_snapshot {
                core.tick(now - next_snapshot);
                core.send_snapshot(second, p.in_flight().0, None);
                second += 1;
                next_snapshot += Duration::from_secs(1);
                continue;
            }
            let mut wake = next_sweep.min(next_snapshot);
            if let Some(e) = end {
                wake = wake.min(e);
            }
            if let Some(Reverse((at, _))) = core.think.peek() {
                wake = wake.min(*at);
            }
            if let Some(t) = p.next_timer() {
                wake = wake.min(t);
            }
            let mut timeout = if core.ready.is_empty() && !p.pending() {
                wake.saturating_duration_since(now)
            } else {
                Duration::ZERO
            };
            if let Some(s) = &core.schedule {
                // With every slot busy, a completion (an event) wakes us.
                if s.next < wake && p.has_free_slot() {
                    let until = s.next.saturating_duration_since(now);
                    match &core.timer {
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
            if let Err(e) = core.reactor.wait(&mut events, timeout) {
                if e.kind() != io::ErrorKind::Interrupted {
                    break;
                }
            }
            events.each(|ev| {
                if let Ev::Ready(r) = &ev {
                    if r.token == TIMER {
                        if let Some(t) = &core.timer {
                            t.clear();
                        }
                        return;
                    }
                }
                p.event(&mut core, ev);
            });
            if p.pending() {
                p.after_events(&mut core);
            }
        }
        // The earlier of the mix's end and a stop (Ctrl-C, a controller).
        let stopped = Instant::now();
        count_unsent(&mut core, end.map_or(stopped, |e| e.min(stopped)));
        let (in_flight, users_waiting) = p.in_flight();
        let in_flight = in_flight + core.ended_late;
        core.tick(Duration::ZERO);
        let (cpu_user, cpu_system) = core.cpu.total();
        p.close_all(&mut core);
        let window = core.take_window();
        let users_arrived = core.users_arrived;
        // Every connection is closed: nothing is in flight any more.
        core.send_snapshot(
            second,
            0,
            Some(ThreadEnd {
                in_flight,
                cpu_user,
                cpu_system,
                elapsed: start.elapsed(),
                users_arrived,
                users_waiting,
                window,
            }),
        );
    }
}

/// Open loop: sends every request whose intended time has come, each by a
/// user the protocol has free, while there is one; the rest wait for one
/// (counted once each).
fn send_due<P: Protocol>(core: &mut Core, p: &mut P, now: Instant, end: Option<Instant>) {
    loop {
        let Some(s) = core.schedule.as_mut() else { return };
        let intended = s.next;
        if intended > now || end.is_some_and(|e| intended >= e) {
            return;
        }
        let Some(u) = p.take_slot() else {
            if !std::mem::replace(&mut s.waited, true) {
                core.bump(|c| c.in_flight_waits += 1);
            }
            return;
        };
        s.advance();
        let late = now.saturating_duration_since(intended) > OpenLoop::LATE_TOLERANCE;
        core.bump(|c| c.sends += 1);
        if late {
            core.bump(|c| c.late_sends += 1);
        }
        p.send(core, u, intended);
    }
}

/// Open loop: counts the sends that came due before `until` and never
/// left — the client ran late at the end, or every slot stayed busy — where
/// their intended time falls in the window (sends are counted where they
/// leave, and leave no later than their intended time's loop turn). With
/// `sends`, the schedule's own count: a late client is not a shorter one.
fn count_unsent(core: &mut Core, until: Instant) {
    let start = core.shared.start;
    let (from, to) = core.window_span;
    // A window without an end (`Duration::MAX`) ends, for this, at `until`
    // (`take_due` counts nothing after it anyway).
    let window = (start + from)..start.checked_add(to).unwrap_or(until);
    let Some(s) = core.schedule.as_mut() else { return };
    let unsent = s.take_due(window, until);
    core.second.conn.unsent += unsent;
    core.window.conn.unsent += unsent;
}

/// Builds the shared state for a plan (TLS configs, server names, requests).
pub(crate) fn shared_for(plan: ClientPlan, start: Instant) -> Result<Shared, crate::plan::PlanError> {
    plan.validate()?;
    let needs_tls = plan.urls.origins().iter().any(|o| o.scheme == Scheme::Https);
    let tls = if needs_tls {
        Some(TlsConfigs::new(&plan.tls)?)
    } else {
        None
    };
    let server_names = plan
        .urls
        .origins()
        .iter()
        .map(|o| {
            if o.scheme == Scheme::Https {
                server_name(&o.host).map(Some)
            } else {
                Ok(None)
            }
        })
        .collect::<Result<Vec<_>, _>>()?;
    let budget = match plan.stop {
        Stop::Requests(n) => n,
        Stop::After(_) => 0,
    };
    Ok(Shared {
        requests: Requests::build(&plan),
        tls,
        server_names,
        stop: AtomicBool::new(false),
        budget: AtomicU64::new(budget),
        start,
        tls_error: std::sync::OnceLock::new(),
        open_connections: AtomicU64::new(0),
        peak_connections: AtomicU64::new(0),
        h2_settings: std::sync::OnceLock::new(),
        check_failures: std::sync::Mutex::new(vec![None; plan.classes.len()]),
        first_send_ns: AtomicI64::new(i64::MAX),
        plan,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{ClassPlan, Target, UrlPlan};
    use crate::stats::ClassStats;
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::cell::Cell;

    /// Counts the allocations of the thread that makes them (tests run
    /// side by side), for the hot path's "allocates nothing".
    struct Counting;

    thread_local! {
        static ALLOCS: Cell<u64> = const { Cell::new(0) };
    }

    fn allocations() -> u64 {
        ALLOCS.try_with(Cell::get).unwrap_or(0)
    }

    // SAFETY: forwards to the system allocator, only counting calls.
    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, l: Layout) -> *mut u8 {
            let _ = ALLOCS.try_with(|a| a.set(a.get() + 1));
            // SAFETY: the caller's layout contract is passed on unchanged.
            unsafe { System.alloc(l) }
        }
        unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
            // SAFETY: `p` came from `System` with layout `l` (alloc above).
            unsafe { System.dealloc(p, l) }
        }
        unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
            let _ = ALLOCS.try_with(|a| a.set(a.get() + 1));
            // SAFETY: as for dealloc; the caller's size contract passes on.
            unsafe { System.realloc(p, l, n) }
        }
    }

    #[global_allocator]
    static GLOBAL: Counting = Counting;

    /// A plan of one URL (nothing listens there: nothing is sent) and
    /// these classes.
    fn plan_of(classes: &[&str]) -> ClientPlan {
        let urls = vec![UrlPlan::get(Target::parse("http://127.0.0.1:9/").expect("url"))];
        ClientPlan::new(urls, classes.iter().map(|c| ClassPlan { name: (*c).into() }).collect())
    }

    /// `WindowAt`'s two compares say what the subtraction they replace
    /// said, before, in and after every kind of window.
    #[test]
    fn the_window_as_instants_is_the_window_as_offsets() {
        let start = Instant::now() + Duration::from_secs(10);
        let ms = Duration::from_millis;
        let windows = [
            (Duration::ZERO, Duration::MAX),
            (Duration::ZERO, ms(500)),
            (ms(200), ms(800)),
            (ms(200), Duration::MAX),
            (ms(300), ms(300)),
            (ms(800), ms(200)),
            (Duration::MAX, Duration::MAX),
        ];
        for w in windows {
            let at = WindowAt::new(start, w);
            for k in -2000i64..2000 {
                let d = Duration::from_micros(k.unsigned_abs() * 500);
                let now = if k < 0 { start - d } else { start + d };
                let t = now.saturating_duration_since(start);
                assert_eq!(at.contains(now), t >= w.0 && t < w.1, "{w:?} at {k} × 0.5 ms");
            }
        }
    }

    /// Folding a second's records into the window (`Core::folding`) gives
    /// the window exactly what recording each request there gives: with
    /// seconds busy enough to fold and quiet ones that do not, a window
    /// that opens and closes inside a second, and errors among the
    /// successes.
    #[test]
    fn folded_window_is_exact() {
        let mut plan = plan_of(&["x", "y"]);
        plan.window = (Duration::from_millis(1500), Duration::from_millis(3500));
        let start = Instant::now();
        let shared = Arc::new(shared_for(plan, start).expect("plan"));
        let (tx, rx) = std::sync::mpsc::channel();
        let mut core = Core::new(shared, 0, 1, tx).expect("core");
        let mut want = [ClassStats::default(), ClassStats::default()];
        let mut folded_seconds = 0;
        // Allocations made while recording (a second left mid-way folds
        // then): none, as the rest of the hot loop (tests/no_alloc.rs).
        let mut recording_allocations = 0;
        // Each second folds when the one before had FOLD_MIN requests a
        // class: 1 (left at once: it starts outside the window), 2 (whole),
        // 3 (until the window closes halfway) and 4 (left at once); 5 not
        // (4 was quiet).
        let seconds = [
            (0u64, 20_000u64),
            (1, 20_000),
            (2, 20_000),
            (3, 20_000),
            (4, 100),
            (5, 20_000),
        ];
        for (second, n) in seconds {
            folded_seconds += u32::from(core.folding);
            for k in 0..n {
                let now = start + Duration::from_secs(second) + Duration::from_nanos(k * 999_000_000 / n);
                let latency = Duration::from_micros(50 + k % 3000);
                let class = (k % 2) as usize;
                let before = allocations();
                let counted = if k % 97 == 0 {
                    let c = core.record_error(class, ErrorKind::Timeout, latency, 7, 80, now);
                    if c {
                        want[class].record_error(ErrorKind::Timeout, latency, 7, 80);
                    }
                    c
                } else {
                    let e = Measured {
                        latency,
                        as_sent: latency,
                        wire: 4336,
                        body: 4096,
                        sent: 80,
                    };
                    let c = core.record_response(class, Ok(()), e, now);
                    if c {
                        want[class].record_success(latency, 4336, 4096, 80);
                    }
                    c
                };
                recording_allocations += allocations() - before;
                assert_eq!(counted, core.in_window(now));
            }
            let before = allocations();
            core.send_snapshot(second as u32, 0, None);
            // The count works: a snapshot's copy of the histograms allocates.
            assert!(allocations() > before);
        }
        let window = core.take_window();
        assert_eq!(folded_seconds, 4);
        assert_eq!(recording_allocations, 0);
        for (got, want) in window.classes.iter().zip(&want) {
            assert_eq!(got.counters, want.counters);
            assert!(got.counters.requests > 10_000);
            assert_eq!(got.latency, want.latency);
            assert_eq!(got.error_latency, want.error_latency);
        }
        // The per-second series is untouched: every request, once.
        let all: u64 = rx
            .try_iter()
            .map(|s| {
                s.stats
                    .classes
                    .iter()
                    .map(|c| c.counters.requests + c.counters.errors_total())
                    .sum::<u64>()
            })
            .sum();
        assert_eq!(all, seconds.iter().map(|s| s.1).sum::<u64>());
    }

    /// A request that ends after the run's end (in the loop turn that
    /// notices it) was unfinished at the end: it is in flight, not a
    /// success or an error, even where the window never closes (`benchlab
    /// http`'s); and no request starts after it.
    #[test]
    fn a_request_ended_after_the_runs_end_is_in_flight_and_none_starts() {
        let mut plan = plan_of(&["x"]);
        plan.stop = Stop::After(Duration::from_secs(2));
        plan.window = (Duration::ZERO, Duration::MAX);
        let start = Instant::now();
        let shared = Arc::new(shared_for(plan, start).expect("plan"));
        let (tx, _rx) = std::sync::mpsc::channel();
        let mut core = Core::new(shared, 0, 1, tx).expect("core");
        let e = Measured {
            latency: Duration::from_micros(80),
            as_sent: Duration::from_micros(80),
            wire: 100,
            body: 10,
            sent: 40,
        };
        let before_end = start + Duration::from_millis(1999);
        assert!(core.take_request());
        assert!(core.record_response(0, Ok(()), e, before_end));
        assert!(core.take_request());
        let after_end = start + Duration::from_secs(2);
        assert!(!core.record_response(0, Ok(()), e, after_end));
        assert!(!core.record_error(0, ErrorKind::Timeout, e.latency, 0, 40, after_end));
        assert_eq!(core.ended_late, 2);
        assert!(!core.take_request(), "a request started after the end");
        let c = &core.second.classes[0].counters;
        assert_eq!((c.requests, c.errors_total()), (1, 0));
        let w = core.take_window();
        assert_eq!(
            (w.classes[0].counters.requests, w.classes[0].counters.errors_total()),
            (1, 0)
        );
    }

    /// Sends due before the end that never left are counted where their
    /// intended time falls in the window, so that with `sends` they make
    /// the schedule's count: 2 s at 200/s is 400, however late the client
    /// ran at the end; a stop (Ctrl-C) counts only what came due before it.
    #[test]
    fn sends_due_but_never_sent_make_up_the_schedule() {
        let rate = OpenLoop {
            rate: 200.0,
            arrival: crate::Arrival::Constant,
            max_in_flight: 20,
        };
        let core_for = |window: (Duration, Duration)| {
            let mut plan = plan_of(&["x"]);
            plan.stop = Stop::After(Duration::from_secs(2));
            plan.window = window;
            let start = Instant::now();
            let shared = Arc::new(shared_for(plan, start).expect("plan"));
            let (tx, _rx) = std::sync::mpsc::channel();
            let mut core = Core::new(shared, 0, 1, tx).expect("core");
            core.schedule = Some(Schedule::new(rate, start, 1, 0, 1));
            (core, start)
        };
        let end = |start: Instant| start + Duration::from_secs(2);
        // 399 sends left; the 400th, due at 1.995 s, did not.
        let (mut core, start) = core_for((Duration::ZERO, Duration::MAX));
        for _ in 0..399 {
            core.schedule.as_mut().expect("schedule").advance();
        }
        count_unsent(&mut core, end(start));
        assert_eq!(core.take_window().conn.unsent, 1);
        // A stop at 1 s, nothing sent: 200 came due.
        let (mut core, start) = core_for((Duration::ZERO, Duration::MAX));
        count_unsent(&mut core, start + Duration::from_secs(1));
        assert_eq!(core.take_window().conn.unsent, 200);
        // Only those meant for the window [0.5 s, 1.5 s) count.
        let (mut core, start) = core_for((Duration::from_millis(500), Duration::from_millis(1500)));
        count_unsent(&mut core, end(start));
        assert_eq!(core.second.conn.unsent, 200);
        assert_eq!(core.take_window().conn.unsent, 200);
    }
}
