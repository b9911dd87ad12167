//! Waiting for a mix's start instant: the one wait that web clients (the
//! engine's event loops) and file clients (their users) make before their
//! first request, so every client of a mix leaves together.
//!
//! A plain `sleep` to the instant wakes when the kernel's timer and the
//! scheduler get round to it: on a busy machine milliseconds late, and
//! differently late for each thread (bench/agents-start.sh measures it).
//! A normal (SCHED_OTHER) thread that wakes waits for whatever holds the
//! CPU; with 64 clients waking at once on 2 cores, the last waits for the
//! other 63 (bench/agents-netns.sh measured plain threads 2–6 ms late).
//! So the wait sleeps to [`SPIN_MARGIN`] before the instant, then:
//!
//! - where the thread may take the real-time policy (root, CAP_SYS_NICE,
//!   or RLIMIT_RTPRIO ≥ 1 — it simply tries), it takes SCHED_FIFO at the
//!   lowest priority (1) and sleeps to the instant itself: a real-time
//!   thread that wakes takes the CPU from any normal thread at once, so
//!   the instant's lateness is the timer's, not the queue's. It keeps the
//!   policy only until its first request is taken — the [`Started`] guard
//!   that [`wait_until`] returns puts the thread back on the policy and
//!   priority it had when it is dropped, so no early or forgotten return
//!   leaves a thread real-time — and it never spins or yields while
//!   real-time: a real-time thread that stays runnable starves every
//!   normal thread of its CPU. A thread that is real-time already (run
//!   under `chrt`) keeps its policy and sleeps to the instant too;
//! - where it may not (EPERM), it stays runnable, yielding the CPU in a
//!   loop until the instant: a thread that is running when the instant
//!   comes leaves within microseconds of it. At most as many threads of
//!   the process stay runnable so as it has CPUs; the others sleep to the
//!   instant itself: with more waiting threads than cores (64 clients on
//!   2 cores) the runnable ones only take the CPU from those whose
//!   instant it is (bench/agents-start.sh measured the spread grow so).
//!   It always yields, never spins alone, for the same reason. The busy
//!   part is bounded by the margin (2 ms of one core per CPU per mix
//!   start, at most).
//!
//! Nothing is disclosed beyond the start spread that measures it
//! (docs/counting.md, "Start spread"). The policy is a thread's own
//! (`sched_setscheduler(0, …)` is the calling thread on Linux); on other
//! systems the wait never takes it.

use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// How long before the start a waiting thread stops sleeping in slices
/// and takes the real-time policy (or, not permitted, stays on the CPU,
/// yielding): more than a timer's usual lateness on a loaded machine,
/// little enough that the spinning costs nothing a run notices.
pub const SPIN_MARGIN: Duration = Duration::from_millis(2);

/// The longest single sleep, so that `stop` is seen within it.
const SLEEP_SLICE: Duration = Duration::from_millis(50);

/// The SCHED_FIFO priority a waiter takes: the lowest, enough to come
/// before every normal thread, below every real-time thread the system
/// has (the kernel's own included).
const FIFO_PRIORITY: i32 = 1;

/// Threads of this process in their runnable stretch now.
static RUNNABLE: AtomicUsize = AtomicUsize::new(0);

/// The CPUs this process may use (once).
fn cpus() -> usize {
    static CPUS: OnceLock<usize> = OnceLock::new();
    *CPUS.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Leaves the runnable stretch however the wait ends.
struct Runnable;

impl Drop for Runnable {
    fn drop(&mut self) {
        RUNNABLE.fetch_sub(1, Ordering::Relaxed);
    }
}

/// What [`wait_until`] leaves its thread with: while it lives, the thread
/// may run real-time (SCHED_FIFO), so that its first request leaves ahead
/// of the machine's normal threads; dropped, the thread is back on the
/// policy and priority it had. Hold it until the first request is taken
/// (noted as the first send), then drop it. It belongs to the thread that
/// waited (not `Send`): only that thread's policy is changed.
#[must_use = "drop it right after the first request is taken: until then the thread may be real-time"]
pub struct Started {
    /// The policy to go back to, when the wait took SCHED_FIFO.
    restore: Option<Policy>,
    _thread: PhantomData<*const ()>,
}

impl Started {
    /// Whether the wait took SCHED_FIFO, which the thread has until this
    /// is dropped.
    pub fn real_time(&self) -> bool {
        self.restore.is_some()
    }
}

impl Drop for Started {
    fn drop(&mut self) {
        if let Some(p) = self.restore.take() {
            // Lowering a thread's own policy needs no permission; should it
            // fail, there is nothing better to do than go on.
            let _ = thread_policy(Some(p));
        }
    }
}

/// A scheduling policy (with SCHED_RESET_ON_FORK as the kernel reports
/// it) and its static priority (0 for the normal policies).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Policy {
    policy: i32,
    priority: i32,
}

/// What the calling thread got when the last stretch began.
enum Raised {
    /// SCHED_FIFO, from this policy (restored by [`Started`]).
    Now(Policy),
    /// Nothing: it runs real-time already (under `chrt`), so it sleeps
    /// and keeps its own policy.
    Already,
    /// Nothing: not permitted (or not Linux); it yields to the instant.
    Refused,
}

/// The calling thread's policy and priority; with `to`, then sets `to`.
/// `None` when the policy could not be read or `to` could not be set (EPERM:
/// neither root, CAP_SYS_NICE nor RLIMIT_RTPRIO allows it).
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn thread_policy(to: Option<Policy>) -> Option<Policy> {
    // SAFETY: takes no pointer; pid 0 is the calling thread.
    let policy = unsafe { libc::sched_getscheduler(0) };
    let mut param = libc::sched_param { sched_priority: 0 };
    // SAFETY: `param` is ours, alive and writable for the call; pid 0 is
    // the calling thread.
    if policy < 0 || unsafe { libc::sched_getparam(0, &mut param) } != 0 {
        return None;
    }
    if let Some(to) = to {
        let p = libc::sched_param {
            sched_priority: to.priority,
        };
        // SAFETY: `p` is ours and alive for the call, which only reads it;
        // pid 0 is the calling thread (on Linux a thread, not the process).
        if unsafe { libc::sched_setscheduler(0, to.policy, &p) } != 0 {
            return None;
        }
    }
    Some(Policy {
        policy,
        priority: param.sched_priority,
    })
}

#[cfg(not(target_os = "linux"))]
fn thread_policy(_to: Option<Policy>) -> Option<Policy> {
    None
}

/// Takes SCHED_FIFO for the calling thread if it runs a normal policy and
/// may.
#[cfg(target_os = "linux")]
fn raise() -> Raised {
    let Some(was) = thread_policy(None) else {
        return Raised::Refused;
    };
    if !matches!(
        was.policy & !libc::SCHED_RESET_ON_FORK,
        libc::SCHED_OTHER | libc::SCHED_BATCH | libc::SCHED_IDLE
    ) {
        return Raised::Already;
    }
    let fifo = Policy {
        policy: libc::SCHED_FIFO,
        priority: FIFO_PRIORITY,
    };
    match thread_policy(Some(fifo)) {
        Some(_) => Raised::Now(was),
        None => Raised::Refused,
    }
}

#[cfg(not(target_os = "linux"))]
fn raise() -> Raised {
    Raised::Refused
}

/// Returns at `t` (or at once when `t` has passed), or early when `stop`
/// is set: sleeps to `t` − [`SPIN_MARGIN`], then takes SCHED_FIFO and
/// sleeps to `t`, or, not permitted, yields until `t` (with a runnable
/// thread per CPU already, sleeps on to `t`). Drop what it returns right
/// after the first request is taken.
pub fn wait_until(t: Instant, stop: &AtomicBool) -> Started {
    wait(t, stop, true)
}

/// [`wait_until`]; `may_raise` false: as if SCHED_FIFO were not permitted.
fn wait(t: Instant, stop: &AtomicBool, may_raise: bool) -> Started {
    let mut started = Started {
        restore: None,
        _thread: PhantomData,
    };
    let mut tried = !may_raise;
    // Sleep to the instant itself (real-time, or no CPU left for another
    // runnable waiter), rather than yield.
    let mut sleep_on = false;
    let mut runnable: Option<Runnable> = None;
    loop {
        let now = Instant::now();
        if now >= t || stop.load(Ordering::Relaxed) {
            return started;
        }
        let left = t - now;
        if left > SPIN_MARGIN {
            std::thread::sleep((left - SPIN_MARGIN).min(SLEEP_SLICE));
            continue;
        }
        if !tried {
            tried = true;
            match raise() {
                Raised::Now(was) => {
                    started.restore = Some(was);
                    sleep_on = true;
                }
                Raised::Already => sleep_on = true,
                Raised::Refused => {}
            }
        }
        if !sleep_on && runnable.is_none() {
            if RUNNABLE.fetch_add(1, Ordering::Relaxed) < cpus() {
                runnable = Some(Runnable);
            } else {
                RUNNABLE.fetch_sub(1, Ordering::Relaxed);
                sleep_on = true;
            }
        }
        if sleep_on {
            // Real-time, never a yield-spin: it would hold the CPU from
            // every normal thread.
            std::thread::sleep(left.min(SLEEP_SLICE));
        } else {
            std::thread::yield_now();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `f` on a thread of its own, so no policy a failed assertion
    /// might leave touches the test harness's threads.
    fn on_own_thread(f: impl FnOnce() + Send + 'static) {
        std::thread::spawn(f).join().unwrap();
    }

    #[cfg(target_os = "linux")]
    /// Whether a thread of this process may take SCHED_FIFO (asked on a
    /// throw-away thread).
    fn fifo_permitted() -> bool {
        std::thread::spawn(|| matches!(raise(), Raised::Now(_))).join().unwrap()
    }

    #[test]
    fn it_returns_at_the_instant_not_before_and_at_once_when_stopped_or_past() {
        on_own_thread(|| {
            let never = AtomicBool::new(false);
            for may_raise in [true, false] {
                let t = Instant::now() + Duration::from_millis(30);
                drop(wait(t, &never, may_raise));
                assert!(Instant::now() >= t);
            }
            let past = Instant::now();
            let g = wait_until(past - Duration::from_millis(5), &never);
            // Nothing to wait for: the policy was not touched.
            assert!(!g.real_time());
            let stopped = AtomicBool::new(true);
            let far = Instant::now() + Duration::from_secs(3600);
            let g = wait_until(far, &stopped);
            assert!(Instant::now() < far);
            assert!(!g.real_time());
        });
    }

    /// Where permitted (root, CAP_SYS_NICE, RLIMIT_RTPRIO), the thread is
    /// SCHED_FIFO from the wait's return until the guard is dropped, then
    /// on its own policy again; where not, it is never changed.
    #[test]
    #[cfg(target_os = "linux")]
    fn the_guard_holds_real_time_until_dropped_and_restores_the_policy() {
        let permitted = fifo_permitted();
        on_own_thread(move || {
            let before = thread_policy(None).expect("sched_getscheduler");
            assert_eq!(before.policy & !libc::SCHED_RESET_ON_FORK, libc::SCHED_OTHER);
            let never = AtomicBool::new(false);
            let fifo = Policy {
                policy: libc::SCHED_FIFO,
                priority: FIFO_PRIORITY,
            };
            let mut raised = 0;
            for _ in 0..20 {
                // Inside the margin already, so the last stretch begins at
                // the first look: a sleep to the margin may wake past the
                // instant on a busy machine, and then nothing is raised.
                let t = Instant::now() + Duration::from_millis(1);
                let g = wait_until(t, &never);
                assert!(Instant::now() >= t);
                let inside = thread_policy(None).unwrap();
                if g.real_time() {
                    raised += 1;
                    assert_eq!(inside, fifo);
                } else {
                    assert_eq!(inside, before);
                }
                drop(g);
                assert_eq!(thread_policy(None).unwrap(), before);
            }
            assert_eq!(raised > 0, permitted, "raised {raised} times of 20");
            // Not permitted (as the fallback runs): never real-time.
            let t = Instant::now() + Duration::from_millis(10);
            let g = wait(t, &never, false);
            assert!(Instant::now() >= t);
            assert!(!g.real_time());
            assert_eq!(thread_policy(None).unwrap(), before);
            drop(g);
            assert_eq!(thread_policy(None).unwrap(), before);
        });
    }

    /// A thread that runs real-time already keeps its own policy and
    /// priority through the wait and after.
    #[test]
    #[cfg(target_os = "linux")]
    fn a_real_time_thread_keeps_its_own_policy() {
        if !fifo_permitted() {
            return;
        }
        on_own_thread(|| {
            let own = Policy {
                policy: libc::SCHED_FIFO,
                priority: 2,
            };
            thread_policy(Some(own)).unwrap();
            let t = Instant::now() + Duration::from_millis(10);
            let g = wait_until(t, &AtomicBool::new(false));
            assert!(Instant::now() >= t);
            assert!(!g.real_time());
            assert_eq!(thread_policy(None).unwrap(), own);
            drop(g);
            assert_eq!(thread_policy(None).unwrap(), own);
        });
    }
}
