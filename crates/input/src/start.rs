//! Waiting for a mix's start instant: the one wait that web clients (the
//! engine's event loops) and file clients (their users) make before their
//! first request, so every client of a mix leaves together.
//!
//! A plain `sleep` to the instant wakes when the kernel's timer and the
//! scheduler get round to it: on a busy machine milliseconds late, and
//! differently late for each thread (bench/agents-start.sh measures it).
//! So the wait sleeps to [`SPIN_MARGIN`] before the instant, then stays
//! runnable, yielding the CPU in a loop until it: a thread that is running
//! when the instant comes leaves within microseconds of it. At most as
//! many threads of the process stay runnable so as it has CPUs; the
//! others sleep to the instant itself, as before: with more waiting
//! threads than cores (64 clients on 2 cores) the runnable ones only take
//! the CPU from those whose instant it is (bench/agents-start.sh measured
//! the spread grow so). It always yields, never spins alone, for the same
//! reason. The busy part is bounded by the margin (2 ms of one core per
//! CPU per mix start, at most), and nothing is disclosed beyond the start
//! spread that measures it (docs/counting.md, "Start spread").

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// How long before the start a waiting thread stops sleeping and stays
/// on the CPU (yielding): more than a timer's usual lateness on a loaded
/// machine, little enough that the spinning costs nothing a run notices.
pub const SPIN_MARGIN: Duration = Duration::from_millis(2);

/// The longest single sleep, so that `stop` is seen within it.
const SLEEP_SLICE: Duration = Duration::from_millis(50);

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

/// Returns at `t` (or at once when `t` has passed), or early when `stop`
/// is set: sleeps to `t` − [`SPIN_MARGIN`], then yields until `t` (or,
/// with a runnable thread per CPU already, sleeps on to `t`).
pub fn wait_until(t: Instant, stop: &AtomicBool) {
    let mut runnable: Option<Runnable> = None;
    loop {
        let now = Instant::now();
        if now >= t || stop.load(Ordering::Relaxed) {
            return;
        }
        let left = t - now;
        if left > SPIN_MARGIN {
            std::thread::sleep((left - SPIN_MARGIN).min(SLEEP_SLICE));
            continue;
        }
        if runnable.is_none() {
            if RUNNABLE.fetch_add(1, Ordering::Relaxed) < cpus() {
                runnable = Some(Runnable);
            } else {
                RUNNABLE.fetch_sub(1, Ordering::Relaxed);
                std::thread::sleep(left.min(SLEEP_SLICE));
                continue;
            }
        }
        std::thread::yield_now();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_returns_at_the_instant_not_before_and_at_once_when_stopped_or_past() {
        let never = AtomicBool::new(false);
        let t = Instant::now() + Duration::from_millis(30);
        wait_until(t, &never);
        assert!(Instant::now() >= t);
        let past = Instant::now();
        wait_until(past - Duration::from_millis(5), &never);
        let stopped = AtomicBool::new(true);
        let far = Instant::now() + Duration::from_secs(3600);
        wait_until(far, &stopped);
        assert!(Instant::now() < far);
    }
}
