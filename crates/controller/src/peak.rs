//! Automatic peak search (`--find-peak`): which load to run next, from the
//! loads already run. Pure (no I/O), so `benchlab run` (threads per client
//! of a suite's mix) and `benchlab http` (virtual users) share it, and it is
//! tested without a server.
//!
//! The search grows the load by doubling until requests/s stops rising or a
//! limit is broken, then bisects between the highest load below the knee and
//! the lowest load at or past it. Rules (docs/running.md, "Automatic peak search"):
//!
//! - a step *rises* when its rate is above the best rate before it by more
//!   than `tolerance` (a fraction);
//! - growing stops after two steps in a row that do not rise, at the first
//!   step whose p99 or error share breaks its limit, or at `max_load`;
//! - the knee: the lowest load whose rate is within `tolerance` of the best
//!   rate seen, or that broke a limit; the bisection halves the interval
//!   between it and the highest load below it, at most `bisect_steps` times,
//!   until the two are adjacent loads.

/// How the search grows, stops and bisects.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchLimits {
    /// A step rises when its rate is above the best before it by more than
    /// this fraction (0.05: 5 %).
    pub tolerance: f64,
    /// p99 latency limit, microseconds.
    pub max_p99_us: u64,
    /// Highest error share (failed ÷ completed), 0–1.
    pub max_error_share: f64,
    /// The highest load the search may run.
    pub max_load: u64,
    /// Bisection steps at most after growing stops.
    pub bisect_steps: u32,
}

impl Default for SearchLimits {
    /// The report's useful-peak limits (p99 1 s, errors 1 %), 5 % tolerance.
    fn default() -> Self {
        SearchLimits {
            tolerance: 0.05,
            max_p99_us: 1_000_000,
            max_error_share: 0.01,
            max_load: 4096,
            bisect_steps: 3,
        }
    }
}

/// One load the search ran and what it measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub load: u64,
    /// Successful requests per second in the measurement window.
    pub rate: f64,
    pub p99_us: u64,
    /// Failed ÷ (successful + failed), 0–1.
    pub error_share: f64,
}

impl Step {
    /// A load's figures: `requests` successful and `errors` failed
    /// requests in its window.
    pub fn of(load: u64, rate: f64, p99_us: u64, requests: u64, errors: u64) -> Step {
        let done = requests + errors;
        Step {
            load,
            rate,
            p99_us,
            error_share: if done == 0 { 0.0 } else { errors as f64 / done as f64 },
        }
    }
}

/// How the search came to run a load (a result type, so it lives with
/// the results).
pub use benchlab_results::StepKind;

/// The search's state: the steps run and whether growing has stopped.
#[derive(Debug, Clone)]
pub struct PeakSearch {
    limits: SearchLimits,
    start: u64,
    steps: Vec<Step>,
    /// Why growing stopped, once it has.
    stopped: Option<String>,
    bisected: u32,
}

impl PeakSearch {
    /// A search starting at `start` (at least 1).
    pub fn new(start: u64, limits: SearchLimits) -> PeakSearch {
        PeakSearch {
            start: start.clamp(1, limits.max_load.max(1)),
            limits,
            steps: Vec::new(),
            stopped: None,
            bisected: 0,
        }
    }

    pub fn steps(&self) -> &[Step] {
        &self.steps
    }

    /// Why growing stopped (`None` while it grows).
    pub fn stop_reason(&self) -> Option<&str> {
        self.stopped.as_deref()
    }

    /// Whether a step broke the p99 or the error limit.
    pub fn breaks_limits(&self, s: &Step) -> bool {
        s.p99_us > self.limits.max_p99_us || s.error_share > self.limits.max_error_share
    }

    /// Records what the last load returned by [`PeakSearch::next_load`] measured.
    pub fn record(&mut self, step: Step) {
        let best_before = self.best_rate();
        self.steps.push(step.clone());
        if self.stopped.is_some() {
            return;
        }
        let l = &self.limits;
        if step.p99_us > l.max_p99_us {
            self.stopped = Some(format!(
                "p99 {} ms over the limit of {} ms at {}",
                fmt_ms(step.p99_us),
                fmt_ms(l.max_p99_us),
                step.load
            ));
        } else if step.error_share > l.max_error_share {
            self.stopped = Some(format!(
                "errors {:.2} % over the limit of {:.2} % at {}",
                step.error_share * 100.0,
                l.max_error_share * 100.0,
                step.load
            ));
        } else if self.flat_run() >= 2 {
            self.stopped = Some(format!(
                "requests/s stopped rising (two loads in a row not more than {} % above the best before them, {} \
                 requests/s)",
                benchlab_format::fixed(l.tolerance * 100.0, 1),
                benchlab_format::requests_per_sec(best_before)
            ));
        } else if step.load >= l.max_load {
            self.stopped = Some(format!("reached the highest load allowed, {}", l.max_load));
        }
    }

    /// Steps at the end that did not rise above the best before them.
    fn flat_run(&self) -> usize {
        let mut n = 0;
        for i in (0..self.steps.len()).rev() {
            let best = self.steps[..i].iter().map(|s| s.rate).fold(f64::NEG_INFINITY, f64::max);
            if i > 0 && self.steps[i].rate <= best * (1.0 + self.limits.tolerance) {
                n += 1;
            } else {
                break;
            }
        }
        n
    }

    fn best_rate(&self) -> f64 {
        self.steps.iter().map(|s| s.rate).fold(0.0, f64::max)
    }

    /// Stops growing for a reason of the caller's (a load the system cannot
    /// hold); the bisection goes on below it.
    pub fn stop_growing(&mut self, reason: String) {
        self.stopped.get_or_insert(reason);
    }

    /// The next load to run, or `None` when the search is over.
    pub fn next_load(&mut self) -> Option<(u64, StepKind)> {
        let Some(last) = self.steps.last() else {
            return Some((self.start, StepKind::Grow));
        };
        if self.stopped.is_none() {
            return Some(((last.load * 2).min(self.limits.max_load), StepKind::Grow));
        }
        if self.bisected >= self.limits.bisect_steps {
            return None;
        }
        let (lo, hi) = self.knee()?;
        if hi <= lo + 1 {
            return None;
        }
        let mid = lo + (hi - lo) / 2;
        if self.steps.iter().any(|s| s.load == mid) {
            return None;
        }
        self.bisected += 1;
        Some((mid, StepKind::Bisect))
    }

    /// `(lo, hi)`: the lowest load that reached the plateau (within the
    /// tolerance of the best rate) or broke a limit, and the highest load
    /// run below it; `None` when nothing was run below it.
    pub fn knee(&self) -> Option<(u64, u64)> {
        let best = self.best_rate();
        let hi = self
            .steps
            .iter()
            .filter(|s| s.rate >= best * (1.0 - self.limits.tolerance) || self.breaks_limits(s))
            .map(|s| s.load)
            .min()?;
        let lo = self.steps.iter().map(|s| s.load).filter(|&l| l < hi).max()?;
        Some((lo, hi))
    }

    /// Index (into [`PeakSearch::steps`]) of the highest rate; the lowest
    /// load on ties.
    pub fn peak(&self) -> Option<usize> {
        self.best_of(|_| true)
    }

    /// Index of the highest rate among the steps within both limits.
    pub fn useful_peak(&self) -> Option<usize> {
        self.best_of(|s| !self.breaks_limits(s) && s.rate > 0.0)
    }

    fn best_of(&self, keep: impl Fn(&Step) -> bool) -> Option<usize> {
        let mut best: Option<usize> = None;
        for (i, s) in self.steps.iter().enumerate() {
            if !keep(s) {
                continue;
            }
            best = match best {
                Some(b) => {
                    let o = &self.steps[b];
                    if s.rate > o.rate || (s.rate == o.rate && s.load < o.load) {
                        Some(i)
                    } else {
                        Some(b)
                    }
                }
                None => Some(i),
            };
        }
        best
    }
}

fn fmt_ms(us: u64) -> String {
    format!("{:.1}", us as f64 / 1000.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs a search against a closed-loop model of `k` workers of `t_ms`
    /// each: rate = min(load, k) × 1000 ÷ t_ms; p99 grows with the queue.
    fn simulate(k: u64, t_ms: f64, limits: SearchLimits, start: u64) -> PeakSearch {
        let mut s = PeakSearch::new(start, limits);
        let mut n = 0;
        while let Some((load, _)) = s.next_load() {
            n += 1;
            assert!(n < 40, "the search does not end");
            let rate = load.min(k) as f64 * 1000.0 / t_ms;
            let p99 = (t_ms * 1000.0 * (load as f64 / k as f64).max(1.0)) as u64;
            s.record(Step {
                load,
                rate,
                p99_us: p99,
                error_share: 0.0,
            });
        }
        s
    }

    #[test]
    fn finds_the_knee_of_a_fixed_pool() {
        let s = simulate(10, 25.0, SearchLimits::default(), 1);
        let loads: Vec<u64> = s.steps().iter().map(|x| x.load).collect();
        // 1, 2, 4, 8 rise; 16 rises (400 → 400? no: 320 → 400); 32, 64 flat;
        // then bisection between 8 and 16: 12, 10, 9.
        assert_eq!(loads, [1, 2, 4, 8, 16, 32, 64, 12, 10, 9]);
        assert!(
            s.stop_reason().unwrap_or("").contains("stopped rising"),
            "{:?}",
            s.stop_reason()
        );
        let peak = &s.steps()[s.peak().expect("a peak")];
        assert_eq!((peak.load, peak.rate), (10, 400.0));
        assert_eq!(s.knee(), Some((9, 10)));
        assert_eq!(s.useful_peak(), s.peak());
    }

    #[test]
    fn stops_at_the_latency_limit_and_the_useful_peak_keeps_within_it() {
        let limits = SearchLimits {
            max_p99_us: 60_000,
            ..SearchLimits::default()
        };
        let s = simulate(4, 20.0, limits, 1);
        let loads: Vec<u64> = s.steps().iter().map(|x| x.load).collect();
        // 1, 2, 4 rise; 8 is flat; 16: p99 80 ms breaks the limit; the
        // knee is at 4 (reached the plateau), below it 2: bisect at 3.
        assert_eq!(loads, [1, 2, 4, 8, 16, 3]);
        assert!(
            s.stop_reason().unwrap_or("").starts_with("p99 80.0 ms over"),
            "{:?}",
            s.stop_reason()
        );
        let useful = &s.steps()[s.useful_peak().expect("a useful peak")];
        assert_eq!(useful.load, 4);
        // Errors over the limit stop growing too.
        let mut e = PeakSearch::new(2, SearchLimits::default());
        assert_eq!(e.next_load(), Some((2, StepKind::Grow)));
        e.record(Step {
            load: 2,
            rate: 100.0,
            p99_us: 1,
            error_share: 0.0,
        });
        assert_eq!(e.next_load(), Some((4, StepKind::Grow)));
        e.record(Step {
            load: 4,
            rate: 150.0,
            p99_us: 1,
            error_share: 0.5,
        });
        assert!(e.stop_reason().unwrap_or("").starts_with("errors 50.00 % over"));
        assert_eq!(e.next_load(), Some((3, StepKind::Bisect)));
        e.record(Step {
            load: 3,
            rate: 140.0,
            p99_us: 1,
            error_share: 0.0,
        });
        assert_eq!(e.next_load(), None);
        assert_eq!(e.steps()[e.peak().expect("peak")].load, 4);
        assert_eq!(e.steps()[e.useful_peak().expect("useful")].load, 3);
    }

    #[test]
    fn a_load_the_system_cannot_hold_stops_the_growth() {
        let mut s = PeakSearch::new(4, SearchLimits::default());
        assert_eq!(s.next_load(), Some((4, StepKind::Grow)));
        s.record(Step {
            load: 4,
            rate: 100.0,
            p99_us: 1,
            error_share: 0.0,
        });
        assert_eq!(s.next_load(), Some((8, StepKind::Grow)));
        // 8 cannot be run: not recorded, growing stops, nothing to bisect.
        s.stop_growing("too many".into());
        assert_eq!(s.stop_reason(), Some("too many"));
        assert_eq!(s.next_load(), None);
    }

    #[test]
    fn stops_at_the_highest_load_and_bisects_nothing_when_the_first_load_is_the_peak() {
        let limits = SearchLimits {
            max_load: 8,
            ..SearchLimits::default()
        };
        let s = simulate(100, 10.0, limits, 3);
        let loads: Vec<u64> = s.steps().iter().map(|x| x.load).collect();
        // 8 still rose: the knee lies between 6 and 8.
        assert_eq!(loads, [3, 6, 8, 7]);
        assert!(s.stop_reason().unwrap_or("").contains("highest load"));
        // Flat from the start: no load below the knee, nothing to bisect.
        let s = simulate(1, 10.0, SearchLimits::default(), 4);
        let loads: Vec<u64> = s.steps().iter().map(|x| x.load).collect();
        assert_eq!(loads, [4, 8, 16]);
        assert_eq!(s.knee(), None);
    }
}
