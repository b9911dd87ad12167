//! The open loop's clock, shared by every protocol's event loop: the
//! schedule of intended send times (`--rate`, `--arrival`) and the timerfd
//! that wakes a loop at the next one to the microsecond (docs/counting.md,
//! "Open loop and coordinated omission"). What a loop does when a send
//! comes due — take a free request slot, or count the wait — is the
//! loop's; when sends are due is this module's.

use crate::plan::{Arrival, OpenLoop};
use crate::rng::SplitMix64;
use std::io;
use std::ops::Range;
use std::os::fd::{AsRawFd, RawFd};
use std::time::{Duration, Instant};

/// A non-blocking `CLOCK_MONOTONIC` timerfd registered with the poll.
pub(crate) struct Timer(std::os::fd::OwnedFd);

/// The poll token of the open loop's timer (no slot or connection has this
/// index; io_uring's reactor keeps its low half, `u32::MAX`, for it).
pub(crate) const TIMER: usize = usize::MAX;

impl Timer {
    /// A disarmed timer; the caller registers [`Timer::fd`] with its poll.
    pub(crate) fn new() -> io::Result<Timer> {
        use std::os::fd::FromRawFd;
        // SAFETY: timerfd_create returns a new descriptor we then own, or -1.
        let fd = unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_NONBLOCK | libc::TFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fd is a valid descriptor nothing else owns.
        Ok(Timer(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) }))
    }

    pub(crate) fn fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }

    /// Fires once, `after` from now (at least 1 ns: zero would disarm it).
    pub(crate) fn arm(&self, after: Duration) {
        let after = after.max(Duration::from_nanos(1));
        let spec = libc::itimerspec {
            it_interval: libc::timespec { tv_sec: 0, tv_nsec: 0 },
            it_value: libc::timespec {
                tv_sec: after.as_secs() as libc::time_t,
                tv_nsec: after.subsec_nanos() as libc::c_long,
            },
        };
        // SAFETY: a valid timerfd and a live itimerspec; the old value is not asked for.
        unsafe { libc::timerfd_settime(self.0.as_raw_fd(), 0, &spec, std::ptr::null_mut()) };
    }

    /// Reads the expiration count, so the next expiry raises a new edge.
    pub(crate) fn clear(&self) {
        let mut n = 0u64;
        // SAFETY: reads 8 bytes into a live u64 from a descriptor we own.
        unsafe { libc::read(self.0.as_raw_fd(), &mut n as *mut u64 as *mut libc::c_void, 8) };
    }
}

/// An OS thread's share of an open-loop schedule: the intended time of its
/// next send. Sends are taken from it only when a request slot is free, so
/// sends that wait (behind the cap on requests in flight) cost no memory:
/// the schedule simply stays behind the clock.
pub(crate) struct Schedule {
    /// The next send's intended time.
    pub(crate) next: Instant,
    begin: Instant,
    arrival: Arrival,
    rate: f64,
    /// Constant arrivals: sends taken so far by this thread, and the
    /// spacing of the client's sends; thread t of n takes sends t, t+n, …
    /// of the client's sequence, so the threads interleave exactly.
    taken: u64,
    threads: u64,
    index: u64,
    /// Poisson arrivals: this thread's own draws and offset from `begin`.
    rng: SplitMix64,
    at_secs: f64,
    /// The send at `next` already found every slot busy (counted once).
    pub(crate) waited: bool,
}

impl Schedule {
    pub(crate) fn new(o: OpenLoop, begin: Instant, threads: usize, index: usize, seed: u64) -> Schedule {
        let mut s = Schedule {
            next: begin,
            begin,
            arrival: o.arrival,
            rate: o.rate,
            taken: 0,
            threads: threads as u64,
            index: index as u64,
            // Apart from the URL draws' stream, so that changing the
            // arrival process leaves the URL sequence alone.
            rng: SplitMix64::new(seed ^ 0x0A11_4A1C_5EED ^ (index as u64 + 1).wrapping_mul(0x9FB2_1C65_1E98_DF25)),
            at_secs: 0.0,
            waited: false,
        };
        s.next = s.at(0);
        s
    }

    /// The intended time of this thread's `k`-th send from now on.
    fn at(&mut self, k: u64) -> Instant {
        match self.arrival {
            Arrival::Constant => {
                let n = k * self.threads + self.index;
                self.begin + Duration::from_secs_f64(n as f64 / self.rate)
            }
            Arrival::Poisson => {
                // The threads' processes are independent, each at rate/n:
                // their union is a Poisson process at the client's rate.
                let per_thread = self.rate / self.threads as f64;
                let u = self.rng.unit();
                self.at_secs += -(1.0 - u).ln() / per_thread;
                self.begin + Duration::from_secs_f64(self.at_secs)
            }
        }
    }

    pub(crate) fn advance(&mut self) {
        self.taken += 1;
        self.next = self.at(self.taken);
        self.waited = false;
    }

    /// Takes every send meant before `until` from the schedule and says
    /// how many of them were meant for `window` (the open loop's `unsent`
    /// at the end). Constant arrivals are counted by a search over the very
    /// times [`at`](Self::at) gives, so a client that sent nothing through
    /// a long stall at a high rate costs a few dozen steps, not one a send;
    /// Poisson ones must be drawn, one by one, to be the schedule's.
    pub(crate) fn take_due(&mut self, window: Range<Instant>, until: Instant) -> u64 {
        let counted = match self.arrival {
            Arrival::Constant => {
                let end = window.end.min(until);
                let from = self.first_at(window.start.min(end));
                let to = self.first_at(end);
                self.taken = self.first_at(until);
                self.next = self.at(self.taken);
                to - from
            }
            Arrival::Poisson => {
                let mut n = 0;
                while self.next < until {
                    n += u64::from(window.contains(&self.next));
                    self.advance();
                }
                n
            }
        };
        self.waited = false;
        counted
    }

    /// Constant arrivals: the first send from `taken` on meant at or after
    /// `t` (the times only grow with the index).
    fn first_at(&mut self, t: Instant) -> u64 {
        let (mut lo, mut hi) = (self.taken, self.taken);
        let mut step = 1;
        while self.at(hi) < t {
            lo = hi + 1;
            hi += step;
            step *= 2;
        }
        // at(lo - 1) < t (or lo = taken) and at(hi) >= t.
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.at(mid) < t {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schedule(arrival: Arrival, rate: f64, threads: usize, index: usize, seed: u64) -> Schedule {
        let o = OpenLoop {
            rate,
            arrival,
            max_in_flight: 1,
        };
        let begin = Instant::now();
        Schedule::new(o, begin, threads, index, seed)
    }

    /// Offsets from `begin` of the first `n` sends, in nanoseconds.
    fn offsets(s: &mut Schedule, n: usize) -> Vec<u128> {
        (0..n)
            .map(|_| {
                let at = (s.next - s.begin).as_nanos();
                s.advance();
                at
            })
            .collect()
    }

    #[test]
    fn constant_arrivals_interleave_the_threads_exactly() {
        // 1,000/s over 2 threads: thread 0 at 0, 2, 4 ms…, thread 1 at 1, 3, 5 ms….
        let t0 = offsets(&mut schedule(Arrival::Constant, 1000.0, 2, 0, 1), 3);
        let t1 = offsets(&mut schedule(Arrival::Constant, 1000.0, 2, 1, 1), 3);
        assert_eq!(t0, [0, 2_000_000, 4_000_000]);
        assert_eq!(t1, [1_000_000, 3_000_000, 5_000_000]);
        // No drift over a long run: the millionth send is exactly on time.
        let mut s = schedule(Arrival::Constant, 1000.0, 1, 0, 1);
        s.taken = 999_999;
        s.advance();
        assert_eq!((s.next - s.begin).as_nanos(), 1_000_000_000_000);
    }

    /// `take_due` counts what stepping through the schedule counts, for
    /// either arrival, and leaves the schedule where stepping leaves it; a
    /// constant schedule's count over a minute at 10,000,000/s is found by
    /// search, at once.
    #[test]
    fn the_sends_taken_at_the_end_are_those_stepped_through() {
        let ms = |n: u64| Duration::from_millis(n);
        for arrival in [Arrival::Constant, Arrival::Poisson] {
            for (rate, threads, index, sent) in
                [(200.0, 1, 0, 0), (200.0, 1, 0, 399), (333.0, 3, 2, 17), (7.0, 2, 1, 1)]
            {
                for (from, to, until) in [
                    (0, 2000, 2000),
                    (500, 1500, 2000),
                    (0, 2000, 1000),
                    (1500, 2000, 900),
                    (0, 0, 2000),
                ] {
                    let mut a = schedule(arrival, rate, threads, index, 3);
                    for _ in 0..sent {
                        a.advance();
                    }
                    let o = OpenLoop {
                        rate,
                        arrival,
                        max_in_flight: 1,
                    };
                    let mut b = Schedule::new(o, a.begin, threads, index, 3);
                    for _ in 0..sent {
                        b.advance();
                    }
                    let (window, end) = ((a.begin + ms(from))..(a.begin + ms(to)), a.begin + ms(until));
                    let mut stepped = 0;
                    while b.next < end {
                        stepped += u64::from(b.next >= window.start && b.next < window.end);
                        b.advance();
                    }
                    let case =
                        format!("{arrival:?} {rate}/s {index} of {threads}, {sent} sent, [{from}, {to}) until {until}");
                    assert_eq!(a.take_due(window, end), stepped, "{case}");
                    assert_eq!((a.taken, a.next), (b.taken, b.next), "{case}");
                }
            }
        }
        let mut s = schedule(Arrival::Constant, 10_000_000.0, 1, 0, 1);
        let minute = s.begin + Duration::from_secs(60);
        assert_eq!(s.take_due(s.begin..minute, minute), 600_000_000);
    }

    #[test]
    fn poisson_arrivals_are_seeded_and_keep_the_mean_rate() {
        let a = offsets(&mut schedule(Arrival::Poisson, 500.0, 1, 0, 7), 50_000);
        let b = offsets(&mut schedule(Arrival::Poisson, 500.0, 1, 0, 7), 50_000);
        assert_eq!(a, b, "the same seed gives the same schedule");
        let c = offsets(&mut schedule(Arrival::Poisson, 500.0, 1, 0, 8), 50_000);
        assert_ne!(a, c);
        assert!(a.windows(2).all(|w| w[0] <= w[1]));
        // 50,000 gaps of mean 2 ms: 100 s, within 2 % (the sum's relative
        // standard deviation is 1/√50,000 ≈ 0.45 %).
        let secs = a[a.len() - 1] as f64 / 1e9;
        assert!((secs - 100.0).abs() < 2.0, "{secs}");
        // Exponential gaps: about e⁻¹ of them longer than the mean.
        let long = a.windows(2).filter(|w| w[1] - w[0] > 2_000_000).count() as f64 / 49_999.0;
        assert!((long - (-1f64).exp()).abs() < 0.02, "{long}");
        // Two threads at half the rate each: the same rate together.
        let t0 = offsets(&mut schedule(Arrival::Poisson, 500.0, 2, 0, 7), 25_000);
        let t1 = offsets(&mut schedule(Arrival::Poisson, 500.0, 2, 1, 7), 25_000);
        assert_ne!(t0, t1, "each thread draws its own gaps");
        let secs = t0[t0.len() - 1] as f64 / 1e9;
        assert!((secs - 100.0).abs() < 3.0, "{secs}");
    }
}
