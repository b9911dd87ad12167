//! Users of `smb://…?client=benchlab` on event loops: thousands of users
//! in one process, on as many OS threads as the machine has usable CPUs
//! (what the HTTP engine's clients share between them), each user an SMB
//! session on its own TCP connection (TCP_NODELAY), as a NetBench client.
//!
//! A user is the threaded runner's user, unchanged — its workspace fill
//! ([`prepare_user`]) and its disk mix or loadfile ([`drive_user_with`],
//! the same accounting of latency, counts, statuses, seconds, think time
//! and window) over the same backend ([`Smb2Backend`], the sans-IO SMB2
//! machine) — run as a coroutine with a small stack of its own. Where a
//! thread would block (a socket with nothing to read or no room to write,
//! a start delay, a think time), the coroutine hands its thread back to
//! the loop, which resumes it when mio says its socket is ready or its
//! time has come. Nothing of the protocol or of the accounting is here.
//!
//! Ends on time: a user whose request is still unanswered
//! [`ABANDON_AFTER`] past the mix's end is resumed with the connection
//! taken as lost, so the operation ends outside the window and is not
//! counted — as a thread user's answer arriving after the window is not.
//! A request unanswered for [`ANSWER_TIMEOUT`] ends the same way (a
//! blocking socket's read timeout).

use crate::backend::FileBackend;
use crate::run::{
    cpu_us, drive_user_with, prepare_user, report_seconds, FileMixPlan, FileWorkload, LiveCounters, LiveSecond, Tally,
    UserOutcome,
};
use crate::smb::SmbUrl;
use crate::smb2_backend::{Smb2Backend, Transport};
use crate::stats::FileStats;
use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult, Yielder};
use mio::{Events, Interest, Poll, Token};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::io::{self, Read, Write};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier, OnceLock};
use std::time::{Duration, Instant};

/// Each user's coroutine stack (virtual; only the pages a user touches
/// are memory). Its deepest path is the session setup's NTLMv2 and a
/// debug build's formatting.
const STACK_BYTES: usize = 256 * 1024;

/// How long after the mix's end a user may still wait for an answer (its
/// last operations and its logoff) before its connection counts as lost.
pub const ABANDON_AFTER: Duration = Duration::from_secs(2);

/// How long a request waits for its answer before its connection counts
/// as lost (the blocking client's read timeout).
pub const ANSWER_TIMEOUT: Duration = Duration::from_secs(30);

/// The longest the loop sleeps in one poll: how soon it sees Ctrl-C.
const POLL_MAX: Duration = Duration::from_millis(50);

/// What a user's coroutine waits for when it hands its thread back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Suspend {
    /// Its socket (readable or writable).
    Io,
    /// An instant (a start delay, a think time).
    Until(Instant),
    /// The mix's common start (it is prepared, or failed).
    Prepared,
}

/// What the loop resumes a user with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Resume {
    Go,
    /// Waiting for an instant (thinking), its socket became readable: the
    /// server sent something unasked (a break).
    Readable,
    /// The connection is taken as lost (see the module's note).
    Abandon,
    /// The mix's clock starts at this instant.
    Start(Instant),
}

/// What a user's coroutine ends with: the bytes its workspace fill wrote
/// and when it ended its passes (its counts are in its client's tally).
type UserEnd = Result<(u64, Option<Instant>), String>;

type User = Coroutine<Resume, Suspend, UserEnd>;

/// The counts the users of one client on one loop share (see [`Tally`]).
struct Shared2(Rc<RefCell<FileStats>>);

impl Tally for Shared2 {
    fn tally(&mut self, f: &mut dyn FnMut(&mut FileStats)) {
        // Borrowed only while `f` runs, which never suspends.
        f(&mut self.0.borrow_mut())
    }
}

/// A user's socket as its coroutine sees it: reads and writes look
/// blocking; underneath, the coroutine waits in the loop.
struct LoopStream<'y> {
    sock: mio::net::TcpStream,
    yielder: &'y Yielder<Resume, Suspend>,
    abandoned: bool,
}

// SAFETY: a LoopStream is made inside its user's coroutine and dropped
// there; a coroutine never moves between threads (the loop that made it
// resumes it), so the yielder it borrows is only ever used on one thread.
// `FileBackend` asks for `Send` because thread users move their backend
// into their thread; this one never moves.
unsafe impl Send for LoopStream<'_> {}

impl LoopStream<'_> {
    fn wait(&mut self) -> io::Result<()> {
        if !self.abandoned && self.yielder.suspend(Suspend::Io) == Resume::Go {
            return Ok(());
        }
        self.abandoned = true;
        Err(io::Error::new(
            io::ErrorKind::TimedOut,
            "no answer before the mix's end (or in 30 s)",
        ))
    }
}

impl LoopStream<'_> {
    /// `io` until it does not block: between tries the user waits in the
    /// loop for its socket.
    fn retry<T>(&mut self, mut io: impl FnMut(&mut mio::net::TcpStream) -> io::Result<T>) -> io::Result<T> {
        loop {
            if self.abandoned {
                self.wait()?;
            }
            match io(&mut self.sock) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.wait()?,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                r => return r,
            }
        }
    }
}

impl Read for LoopStream<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.retry(|s| s.read(buf))
    }
}

impl Write for LoopStream<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.retry(|s| s.write(buf))
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Transport for LoopStream<'_> {
    fn has_data(&mut self) -> bool {
        let mut b = [0u8; 1];
        matches!(self.sock.peek(&mut b), Ok(n) if n > 0)
    }
}

/// What every loop thread shares with the mix's thread.
struct Shared {
    workload: FileWorkload,
    url: SmbUrl,
    plan: FileMixPlan,
    live: LiveCounters,
    /// Mirrors the caller's stop (Ctrl-C), or a user's failure before the
    /// start: users read it.
    stop: AtomicBool,
    prepared: Barrier,
    go: Barrier,
    start: OnceLock<Instant>,
    /// What the users' sessions negotiated, merged as each connects.
    negotiated: std::sync::Mutex<Option<benchlab_results::SmbNegotiated>>,
}

/// The threads the users run on: the usable CPUs (what the HTTP engine's
/// clients share), never more than the users.
pub fn loop_threads(users: usize) -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(users)
        .max(1)
}

/// The event loop (of `threads`) that user `i` of `users`, in clients of
/// `per_client`, runs on. A client's counts are kept per loop it has users
/// on (a latency histogram per operation kind, ~100 KiB each once used),
/// so where there are clients enough to share the loops out evenly each
/// client's users run on one loop: client c on loop c mod threads. That
/// is when the clients divide among the loops, or are at least four a
/// loop (the busiest loop then has at most a quarter more than the mean).
/// Otherwise (a few large clients) user i runs on loop i mod threads, so
/// one client of a thousand users still uses every core.
fn loop_of(i: usize, per_client: usize, users: usize, threads: usize) -> usize {
    let clients = users.div_ceil(per_client);
    if clients >= threads && (clients.is_multiple_of(threads) || clients >= 4 * threads) {
        (i / per_client) % threads
    } else {
        i % threads
    }
}

/// Runs the users (their delays; user numbers from `first_user + 1`) on
/// event loops; the mix's start and the outcomes, each named by a user
/// of the client it counts for (one outcome per client and loop: its
/// users' counts together).
#[allow(clippy::too_many_arguments)]
pub(crate) fn run_users(
    workload: &FileWorkload,
    url: &SmbUrl,
    plan: &FileMixPlan,
    delays: &[Duration],
    first_user: u32,
    start: impl FnOnce() -> Instant,
    stop: &AtomicBool,
    on_second: &mut dyn FnMut(LiveSecond),
    smb: &mut Option<benchlab_results::SmbNegotiated>,
) -> Result<(Instant, Vec<(usize, UserOutcome)>), String> {
    let users = delays.len();
    let threads = loop_threads(users);
    // Every connection made before the mix: one refused stops the run
    // with nothing counted.
    let mut socks = Vec::with_capacity(users);
    for _ in 0..users {
        let s = std::net::TcpStream::connect((url.host.as_str(), url.port))
            .and_then(|s| {
                // Every request waits for its answer: Nagle's algorithm
                // would hold each small one for the delayed ACK.
                s.set_nodelay(true)?;
                s.set_nonblocking(true)?;
                Ok(s)
            })
            .map_err(|e| {
                format!(
                    "{url}: cannot reach the share with benchlab's SMB2 client: connect: {e} (is the server running?)"
                )
            })?;
        socks.push(s);
    }
    let shared = Arc::new(Shared {
        workload: workload.clone(),
        url: url.clone(),
        plan: plan.clone(),
        live: LiveCounters::default(),
        stop: AtomicBool::new(stop.load(Ordering::Relaxed)),
        prepared: Barrier::new(threads + 1),
        go: Barrier::new(threads + 1),
        start: OnceLock::new(),
        negotiated: std::sync::Mutex::new(None),
    });
    let mut per_thread: Vec<Vec<(usize, std::net::TcpStream)>> = (0..threads).map(|_| Vec::new()).collect();
    for (i, s) in socks.into_iter().enumerate() {
        per_thread[loop_of(i, plan.threads_per_client.max(1) as usize, users, threads)].push((i, s));
    }
    let outcomes = std::thread::scope(|sc| {
        let handles: Vec<_> = per_thread
            .into_iter()
            .map(|mine| {
                let shared = shared.clone();
                sc.spawn(move || run_loop(&shared, mine, delays, first_user))
            })
            .collect();
        shared.prepared.wait();
        let t0 = start();
        let _ = shared.start.set(t0);
        shared.go.wait();
        let done = || handles.iter().all(|h| h.is_finished());
        report_seconds(
            &shared.live,
            plan,
            t0,
            &|| {
                if stop.load(Ordering::Relaxed) {
                    shared.stop.store(true, Ordering::Relaxed);
                }
                done()
            },
            on_second,
        );
        let mut all: Vec<(usize, UserOutcome)> = Vec::with_capacity(users);
        for h in handles {
            match h.join() {
                Ok(Ok(v)) => all.extend(v),
                Ok(Err(e)) => return Err(e),
                Err(_) => return Err("a file-suite event-loop thread panicked".to_string()),
            }
        }
        all.sort_by_key(|(i, _)| *i);
        Ok(all)
    })?;
    let t0 = *shared.start.get().ok_or("the mix's start was not set")?;
    if let Ok(mut n) = shared.negotiated.lock() {
        *smb = benchlab_results::SmbNegotiated::merge(smb.take(), n.take().as_ref());
    }
    Ok((t0, outcomes))
}

/// One user's place in its loop.
struct Slot {
    user: User,
    index: usize,
    waiting: Suspend,
    /// When it began waiting for its socket.
    since: Instant,
    outcome: Option<UserEnd>,
}

impl Slot {
    /// Resumes the user; records what it waits for next, or its outcome.
    fn resume(&mut self, r: Resume) {
        if self.outcome.is_some() {
            return;
        }
        match self.user.resume(r) {
            CoroutineResult::Yield(w) => {
                // Each wait for the socket is timed from its own start.
                if w == Suspend::Io {
                    self.since = Instant::now();
                }
                self.waiting = w;
            }
            CoroutineResult::Return(o) => self.outcome = Some(o),
        }
    }
}

/// A user as a coroutine: its session, its preparation, then (resumed
/// with the start) its mix.
fn user(
    shared: Arc<Shared>,
    sock: mio::net::TcpStream,
    number: u32,
    delay: Duration,
    tally: Rc<RefCell<FileStats>>,
) -> io::Result<User> {
    let stack = DefaultStack::new(STACK_BYTES)?;
    Ok(Coroutine::with_stack(
        stack,
        move |y: &Yielder<Resume, Suspend>, _: Resume| -> UserEnd {
            let stream = LoopStream {
                sock,
                yielder: y,
                abandoned: false,
            };
            let s = &*shared;
            let mut b = Smb2Backend::over(stream, &s.url).map_err(|e| {
            format!("{}: cannot reach the share with benchlab's SMB2 client: {e} (is the server running, the share and the user right?)", s.url)
        });
            if let (Ok(b), Ok(mut n)) = (&b, s.negotiated.lock()) {
                *n = benchlab_results::SmbNegotiated::merge(n.take(), FileBackend::negotiated(b).as_ref());
            }
            let prep = match &mut b {
                Ok(b) => prepare_user(&s.workload, b, number, s.plan.seed),
                Err(e) => Err(e.clone()),
            };
            let Resume::Start(t0) = y.suspend(Suspend::Prepared) else {
                return Err("the mix did not start".into());
            };
            let mut b = b?;
            let (mut state, bytes) = prep?;
            // The start too waits in the loop's poll, not in
            // `benchlab_input::start::wait_until`: the loop thread serves
            // every user on it, so no user's wait changes its scheduling.
            let mut pause = |b: &mut dyn FileBackend, t: Instant| {
                // What came behind the last answer, already read from the
                // socket's edge, first; then whatever wakes it meanwhile.
                b.between_operations();
                while Instant::now() < t && !s.stop.load(Ordering::Relaxed) {
                    if y.suspend(Suspend::Until(t)) == Resume::Readable {
                        b.between_operations();
                    }
                }
                None
            };
            let fin = drive_user_with(
                &mut state,
                &mut b,
                &s.plan,
                delay,
                t0,
                &s.stop,
                Some(&s.live),
                &mut Shared2(tally),
                &mut pause,
            );
            Ok((bytes, fin))
        },
    ))
}

/// One loop thread: its users' sessions and preparations, the common
/// start, their mix; each user's outcome by its index.
fn run_loop(
    shared: &Arc<Shared>,
    mine: Vec<(usize, std::net::TcpStream)>,
    delays: &[Duration],
    first_user: u32,
) -> Result<Vec<(usize, UserOutcome)>, String> {
    let per_client = shared.plan.threads_per_client.max(1) as usize;
    // Per client (by its index in the part): the users' shared counts.
    let mut tallies: BTreeMap<usize, Rc<RefCell<FileStats>>> = BTreeMap::new();
    let made = (|| -> io::Result<(Poll, Vec<Slot>)> {
        let poll = Poll::new()?;
        let mut slots = Vec::with_capacity(mine.len());
        for (k, (i, s)) in mine.into_iter().enumerate() {
            let mut sock = mio::net::TcpStream::from_std(s);
            poll.registry()
                .register(&mut sock, Token(k), Interest::READABLE | Interest::WRITABLE)?;
            let tally = tallies.entry(i / per_client).or_default().clone();
            let u = user(shared.clone(), sock, first_user + i as u32 + 1, delays[i], tally)?;
            slots.push(Slot {
                user: u,
                index: i,
                waiting: Suspend::Io,
                since: Instant::now(),
                outcome: None,
            });
        }
        Ok((poll, slots))
    })();
    let (mut poll, mut slots) = match made {
        Ok(v) => v,
        Err(e) => {
            // The other loops wait at the gates: pass them, stopped.
            shared.stop.store(true, Ordering::Relaxed);
            shared.prepared.wait();
            shared.go.wait();
            return Err(format!("the SMB2 event loop: {e}"));
        }
    };
    let mut events = Events::with_capacity(1024);
    for s in &mut slots {
        s.resume(Resume::Go);
    }
    // Sessions and workspaces, until every user is prepared (or failed).
    spin(&mut poll, &mut events, &mut slots, shared, None, |s| {
        s.outcome.is_some() || s.waiting == Suspend::Prepared
    });
    if slots.iter().any(|s| matches!(s.outcome, Some(Err(_)))) {
        // A user could not start: the mix stops at once.
        shared.stop.store(true, Ordering::Relaxed);
    }
    shared.prepared.wait();
    shared.go.wait();
    let t0 = *shared.start.get().ok_or("the mix's start was not set")?;
    let cpu0 = cpu_us(libc::RUSAGE_THREAD);
    for s in &mut slots {
        s.resume(Resume::Start(t0));
    }
    let abandon_at = t0 + shared.plan.length + ABANDON_AFTER;
    spin(&mut poll, &mut events, &mut slots, shared, Some(abandon_at), |s| {
        s.outcome.is_some()
    });
    let cpu1 = cpu_us(libc::RUSAGE_THREAD);
    // One outcome per client: its users' counts (already together), the
    // bytes they prepared, and when the last ended its passes (none if
    // one did not); named by the client's first user here.
    let mut ends: BTreeMap<usize, ClientEnd> = BTreeMap::new();
    for s in slots {
        let e = ends.entry(s.index / per_client).or_insert(ClientEnd {
            first: s.index,
            prepared: 0,
            all_finished: true,
            latest: None,
            error: None,
        });
        e.first = e.first.min(s.index);
        match s.outcome {
            Some(Ok((bytes, fin))) => {
                e.prepared += bytes;
                e.all_finished &= fin.is_some();
                e.latest = e.latest.max(fin);
            }
            Some(Err(why)) => e.error = e.error.take().or(Some(why)),
            None => e.error = Some("a file-suite user did not end".to_string()),
        }
    }
    let mut out = Vec::with_capacity(ends.len());
    for (k, (client, e)) in ends.into_iter().enumerate() {
        let st = tallies.remove(&client).map(|t| t.take()).unwrap_or_default();
        // The loop thread's CPU is its users' together: given to its first client.
        let cpu = if k == 0 {
            [cpu1[0] - cpu0[0], cpu1[1] - cpu0[1]]
        } else {
            [0, 0]
        };
        let outcome = match e.error {
            Some(why) => Err(why),
            None => Ok((st, e.prepared, e.latest.filter(|_| e.all_finished), cpu)),
        };
        out.push((e.first, outcome));
    }
    Ok(out)
}

/// How a client's users on one loop ended, as they are added up.
struct ClientEnd {
    /// Its first user's index (names the outcome).
    first: usize,
    prepared: u64,
    /// Whether every user ended its passes (a loadfile's `loops`), and
    /// the last one's end.
    all_finished: bool,
    latest: Option<Instant>,
    error: Option<String>,
}

/// Runs the loop until every slot is `settled`: resumes a user when its
/// socket is ready or its instant has come (Ctrl-C: at once), and takes
/// a user's connection as lost when its answer is overdue.
fn spin(
    poll: &mut Poll,
    events: &mut Events,
    slots: &mut [Slot],
    shared: &Shared,
    abandon_at: Option<Instant>,
    settled: impl Fn(&Slot) -> bool,
) {
    while !slots.iter().all(&settled) {
        let now = Instant::now();
        let next = slots
            .iter()
            .filter(|s| s.outcome.is_none())
            .filter_map(|s| match s.waiting {
                Suspend::Until(t) => Some(t),
                Suspend::Io => Some(s.since + ANSWER_TIMEOUT),
                Suspend::Prepared => None,
            })
            .chain(abandon_at)
            .min()
            .unwrap_or(now + POLL_MAX);
        let timeout = next.saturating_duration_since(now).min(POLL_MAX);
        if let Err(e) = poll.poll(events, Some(timeout)) {
            if e.kind() != io::ErrorKind::Interrupted {
                // A loop that cannot poll cannot hear answers: its users'
                // connections count as lost.
                for s in slots.iter_mut().filter(|s| s.waiting == Suspend::Io) {
                    s.resume(Resume::Abandon);
                }
            }
            continue;
        }
        for ev in events.iter() {
            if let Some(s) = slots.get_mut(ev.token().0) {
                match s.waiting {
                    Suspend::Io => s.resume(Resume::Go),
                    Suspend::Until(_) if ev.is_readable() => s.resume(Resume::Readable),
                    _ => {}
                }
            }
        }
        let now = Instant::now();
        let stopped = shared.stop.load(Ordering::Relaxed);
        let overdue = abandon_at.is_some_and(|t| now >= t);
        for s in slots.iter_mut() {
            match s.waiting {
                Suspend::Until(t) if now >= t || stopped => s.resume(Resume::Go),
                Suspend::Io if overdue || now >= s.since + ANSWER_TIMEOUT => s.resume(Resume::Abandon),
                _ => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::loop_of;

    /// Users per loop, and the loops each client's users run on.
    fn spread(users: usize, per_client: usize, threads: usize) -> (Vec<usize>, usize) {
        let mut per_loop = vec![0; threads];
        let mut loops_of_client = vec![std::collections::BTreeSet::new(); users.div_ceil(per_client)];
        for i in 0..users {
            let l = loop_of(i, per_client, users, threads);
            per_loop[l] += 1;
            loops_of_client[i / per_client].insert(l);
        }
        (per_loop, loops_of_client.iter().map(|s| s.len()).max().unwrap_or(0))
    }

    #[test]
    fn a_clients_users_share_one_loop_where_the_clients_share_the_loops_evenly() {
        // 1,000 users as 100 clients of 10: one loop a client, 500 a loop.
        assert_eq!(spread(1000, 10, 2), (vec![500, 500], 1));
        // On 16 loops: 6 or 7 clients a loop, one loop each.
        let (per_loop, loops) = spread(1000, 10, 16);
        assert_eq!(loops, 1);
        assert_eq!((per_loop.iter().min(), per_loop.iter().max()), (Some(&60), Some(&70)));
        // One client of 1,000, or 3 clients on 2 loops: every loop, by user.
        assert_eq!(spread(1000, 1000, 2), (vec![500, 500], 2));
        assert_eq!(spread(30, 10, 2), (vec![15, 15], 2));
        // Clients of one user are spread as before.
        assert_eq!(spread(7, 1, 2), (vec![4, 3], 1));
    }
}
