//! Live metrics of a run (docs/metrics.md): the controller's merged
//! per-second snapshots — every client's, in-process or on agents — kept as
//! counters and gauges, and given out three ways:
//!
//! - [`Exporter::render_openmetrics`]: OpenMetrics text for a scrape of
//!   `/metrics` (`--metrics-listen`, and `--web`'s server);
//! - `--prometheus-remote-write URL` ([`remote_write`]): the same series as
//!   a Prometheus remote-write request (protobuf, snappy), once a second;
//! - `--otlp URL` ([`otlp`]): the same as OTLP metrics over HTTP/protobuf
//!   (`/v1/metrics`), once a second.
//!
//! The measurement never waits for an exporter: the observer's calls take
//! one short lock to add a second's counts, a scrape copies the state under
//! that lock and formats outside it, and each push target has its own
//! thread fed through a queue of one sample (newest wins): a slow or dead
//! receiver makes seconds skipped (counted), never a stalled run, and since
//! every series is cumulative a skipped push loses resolution, not totals.

use benchlab_results::resources::HostSample;
use benchlab_results::{MixResult, SecondResult};
use buckets::Buckets;
use hdrhistogram::Histogram;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

pub mod buckets;
pub mod openmetrics;
pub mod otlp;
pub mod push;
pub mod remote_write;
pub mod series;

pub use push::{PushKind, PushTarget, TargetError};

/// What the run's requests are: HTTP requests (web suites, `benchlab
/// http`) or file-server operations (file suites). Every series carries it
/// as `kind`, so a dashboard never adds operations to requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Http,
    File,
}

impl Kind {
    pub fn label(self) -> &'static str {
        match self {
            Kind::Http => "http",
            Kind::File => "file",
        }
    }
}

/// Which mix a series belongs to: its number, its run under `--repeat`
/// (1 without) and its phase.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct MixKey {
    pub mix: usize,
    pub run: u32,
    pub phase: String,
}

/// Seconds of the measurement window, or of the ramps around it (which
/// results.json does not count).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Window {
    Measured,
    Ramp,
}

impl Window {
    pub fn label(self) -> &'static str {
        match self {
            Window::Measured => "measured",
            Window::Ramp => "ramp",
        }
    }
}

/// Cumulative counts of one mix in one window.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Counts {
    pub requests: u64,
    pub errors: u64,
    pub bytes: u64,
    pub connections_opened: u64,
    pub cpu_user_s: f64,
    pub cpu_system_s: f64,
}

/// The last merged second of a mix: its percentiles and loop lag.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Last {
    pub second: u32,
    pub p50_us: u64,
    pub p99_us: u64,
    pub loop_lag_max_us: u64,
    /// Requests sent and not yet answered at the second's end, every
    /// client's (`None`: the second's source does not say, file suites).
    pub in_flight: Option<u64>,
}

/// Everything the exporters give out, copied whole for each scrape or push.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub suite: String,
    pub kind: Kind,
    /// The mix now running (none between mixes and after the run).
    pub current: Option<MixKey>,
    pub counts: BTreeMap<(MixKey, Window), Counts>,
    /// The request duration's buckets, from the measured seconds' merged
    /// HDR histograms (ramps are not counted, as in results.json): each
    /// count equals the window's `requests` (seconds whose merge had no
    /// histogram add nothing; docs/metrics.md).
    pub buckets: BTreeMap<(MixKey, Window), Buckets>,
    /// Each finished mix's figures as results.json has them (its measured
    /// window's totals; no CPU).
    pub results: BTreeMap<MixKey, Counts>,
    pub last: BTreeMap<MixKey, Last>,
    /// Failed requests by `error.type` (docs/counting.md's kinds), each
    /// mix's measured window, filled in when the mix ends.
    pub errors_by_type: BTreeMap<(MixKey, String), u64>,
    /// Requests unfinished when each mix ended (results.json `in_flight`).
    pub unfinished: BTreeMap<MixKey, u64>,
    /// Each monitored host's CPU busy share (0–1) over each mix's window,
    /// and its role, filled in when the mix ends.
    pub host_cpu: BTreeMap<(MixKey, String), (String, f64)>,
    pub seconds_merged: u64,
    pub mixes_finished: u64,
    /// The run has ended: these are its final figures.
    pub finished: bool,
    /// Push failures per target (`remote_write`, `otlp`).
    pub push_failures: BTreeMap<&'static str, u64>,
    /// When the exporter started (the start of every cumulative series).
    pub start: SystemTime,
    /// The monitored hosts' latest second (`--monitor-local`,
    /// `--node-exporter`, remote monitors), read at each scrape or push.
    pub hosts_now: Vec<HostSample>,
}

impl Snapshot {
    fn new(suite: &str, kind: Kind) -> Snapshot {
        Snapshot {
            suite: suite.to_string(),
            kind,
            current: None,
            counts: BTreeMap::new(),
            buckets: BTreeMap::new(),
            results: BTreeMap::new(),
            last: BTreeMap::new(),
            errors_by_type: BTreeMap::new(),
            unfinished: BTreeMap::new(),
            host_cpu: BTreeMap::new(),
            seconds_merged: 0,
            mixes_finished: 0,
            finished: false,
            push_failures: BTreeMap::new(),
            start: SystemTime::now(),
            hosts_now: Vec::new(),
        }
    }

    /// The sum of `f` over every mix's series of `window`.
    pub fn total(&self, window: Window, f: impl Fn(&Counts) -> u64) -> u64 {
        self.counts
            .iter()
            .filter(|((_, w), _)| *w == window)
            .map(|(_, c)| f(c))
            .sum()
    }
}

/// The final figures of a mix as results.json has them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MixEnd {
    pub requests: u64,
    pub errors: u64,
    pub bytes: u64,
    pub connections_opened: u64,
    pub in_flight: u64,
    pub errors_by_type: BTreeMap<String, u64>,
    /// Per monitored host: its role and its CPUs' busy share (0–1) over
    /// the window (results.json `resources`).
    pub host_cpu: BTreeMap<String, (String, f64)>,
}

impl MixEnd {
    pub fn of(r: &MixResult) -> MixEnd {
        use benchlab_results::resources::HostRole;
        let host_cpu = r
            .resources
            .iter()
            .flat_map(|res| &res.hosts)
            .filter_map(|h| {
                let role = match h.role {
                    HostRole::Server => "server",
                    HostRole::ServerAndClient => "server_and_client",
                };
                let avg = h.average.as_ref()?;
                Some((h.host.clone(), (role.to_string(), avg.cpu.busy() / 100.0)))
            })
            .collect();
        MixEnd {
            host_cpu,
            requests: r.figures.requests,
            errors: r.figures.errors_total,
            bytes: r.figures.bytes,
            connections_opened: r.connections_opened,
            in_flight: r.in_flight,
            errors_by_type: r.figures.errors.clone(),
        }
    }
}

/// What gives the monitored hosts' latest samples (the CLI wraps the run's
/// monitor sources; this crate does not depend on the monitors).
pub type HostFeed = Arc<dyn Fn() -> Vec<HostSample> + Send + Sync>;

struct Shared {
    state: Mutex<Snapshot>,
    hosts: Mutex<Option<HostFeed>>,
    /// Scrapes served since the run ended (`finish` waits for one).
    scrapes_after_finish: Mutex<u64>,
    scraped: Condvar,
    pushers: Mutex<Vec<push::Pusher>>,
    ticker_started: AtomicU64,
}

/// The live metrics of one run; cheap to clone (one shared state).
#[derive(Clone)]
pub struct Exporter {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Exporter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Exporter").finish_non_exhaustive()
    }
}

impl Exporter {
    pub fn new(suite: &str, kind: Kind) -> Exporter {
        Exporter {
            shared: Arc::new(Shared {
                state: Mutex::new(Snapshot::new(suite, kind)),
                hosts: Mutex::new(None),
                scrapes_after_finish: Mutex::new(0),
                scraped: Condvar::new(),
                pushers: Mutex::new(Vec::new()),
                ticker_started: AtomicU64::new(0),
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Snapshot> {
        // A panic while holding the lock leaves a readable state.
        self.shared.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A copy of the state now, with the monitored hosts' latest second.
    pub fn snapshot(&self) -> Snapshot {
        // Read outside the state's lock: the feed takes the monitors' own.
        let feed = self.shared.hosts.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let hosts = feed.map(|f| f()).unwrap_or_default();
        let mut s = self.lock().clone();
        s.hosts_now = hosts;
        s
    }

    /// From now on every scrape and push carries the hosts `feed` gives.
    pub fn watch_hosts(&self, feed: HostFeed) {
        *self.shared.hosts.lock().unwrap_or_else(|p| p.into_inner()) = Some(feed);
    }

    /// A mix (or one run of it under `--repeat`) starts.
    pub fn mix_started(&self, mix: usize, run: u32, phase: &str) {
        self.lock().current = Some(MixKey {
            mix,
            run,
            phase: phase.to_string(),
        });
    }

    /// One merged second of the current mix, without its histogram and
    /// in-flight requests (file suites).
    pub fn second(&self, s: &SecondResult) {
        self.second_merged(s, None, None);
    }

    /// One merged second of the current mix with `latency`, the sum of
    /// every client's HDR histogram of it (microseconds), and the requests
    /// in flight at its end.
    pub fn second_merged(&self, s: &SecondResult, latency: Option<&Histogram<u64>>, in_flight: Option<u64>) {
        // Counted outside the lock: a scrape never waits for it. Only the
        // measured window's: each bucket is a series in every scrape and
        // push, and results.json's percentiles leave the ramps out too.
        let buckets = latency.filter(|_| s.in_window).map(Buckets::of);
        let mut st = self.lock();
        let Some(key) = st.current.clone() else {
            return;
        };
        let window = if s.in_window { Window::Measured } else { Window::Ramp };
        let c = st.counts.entry((key.clone(), window)).or_default();
        c.requests += s.requests;
        c.errors += s.errors;
        c.bytes += s.bytes;
        c.connections_opened += s.connections_opened;
        c.cpu_user_s += s.client_cpu_user_s;
        c.cpu_system_s += s.client_cpu_system_s;
        if let Some(b) = &buckets {
            st.buckets.entry((key.clone(), window)).or_default().add(b);
        }
        st.last.insert(
            key,
            Last {
                second: s.second,
                p50_us: s.latency_p50_us,
                p99_us: s.latency_p99_us,
                loop_lag_max_us: s.loop_lag_max_us,
                in_flight,
            },
        );
        st.seconds_merged += 1;
    }

    /// The current mix ended with these final figures. Its measured-window
    /// figures as results.json has them go to the `benchlab_result_*`
    /// counters, set once (from 0): the live counters stay the sums of the
    /// merged seconds, which differ from the window's totals by a few
    /// requests either way (the engine cuts the two apart), and a counter
    /// must never go down.
    pub fn mix_finished(&self, end: &MixEnd) {
        let mut st = self.lock();
        let Some(key) = st.current.take() else {
            return;
        };
        st.results.insert(
            key.clone(),
            Counts {
                requests: end.requests,
                errors: end.errors,
                bytes: end.bytes,
                connections_opened: end.connections_opened,
                ..Counts::default()
            },
        );
        for (kind, n) in &end.errors_by_type {
            st.errors_by_type.insert((key.clone(), kind.clone()), *n);
        }
        for (host, v) in &end.host_cpu {
            st.host_cpu.insert((key.clone(), host.clone()), v.clone());
        }
        // Its requests are over (the unfinished ones are counted apart).
        if let Some(last) = st.last.get_mut(&key) {
            last.in_flight = last.in_flight.map(|_| 0);
        }
        st.unfinished.insert(key, end.in_flight);
        st.mixes_finished += 1;
    }

    /// OpenMetrics text of the state now.
    pub fn render_openmetrics(&self) -> String {
        self.render_scrape().0
    }

    /// OpenMetrics text for a scrape of `/metrics`, and whether it holds
    /// the final figures: once its answer has been sent, the server calls
    /// [`Exporter::final_scrape_served`] (so `finish` lets the process end
    /// only after the bytes left).
    pub fn render_scrape(&self) -> (String, bool) {
        let snap = self.snapshot();
        (openmetrics::render(&snap), snap.finished)
    }

    /// A scrape of the final figures has been answered.
    pub fn final_scrape_served(&self) {
        let mut n = self
            .shared
            .scrapes_after_finish
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        *n += 1;
        self.shared.scraped.notify_all();
    }

    /// Starts pushing to `target` once a second from now on (its own
    /// thread; the first call also starts the one-second ticker).
    pub fn push_to(&self, target: PushTarget) -> Result<(), TargetError> {
        let pusher = push::Pusher::start(target)?;
        self.shared
            .pushers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(pusher);
        if self.shared.ticker_started.swap(1, Ordering::Relaxed) == 0 {
            let weak = Arc::downgrade(&self.shared);
            let spawned = std::thread::Builder::new()
                .name("benchlab-metrics-tick".into())
                .spawn(move || tick(weak));
            if let Err(e) = spawned {
                return Err(TargetError(format!("cannot start the metrics thread: {e}")));
            }
        }
        Ok(())
    }

    /// The run has ended: the final state is pushed to every target (each
    /// within its timeout), and with `scrape_wait` the call waits until a
    /// scrape has read the final figures, at most that long. Returns what
    /// to tell the user: a line per target that failed (how often, and the
    /// first reason), and one when no scrape came.
    pub fn finish(&self, scrape_wait: Option<Duration>) -> Vec<String> {
        {
            let mut st = self.lock();
            st.finished = true;
            st.current = None;
        }
        let mut lines = Vec::new();
        let pushers: Vec<push::Pusher> =
            std::mem::take(&mut *self.shared.pushers.lock().unwrap_or_else(|p| p.into_inner()));
        let last = self.snapshot();
        for p in pushers {
            if let Some(line) = p.finish(&last) {
                lines.push(line);
            }
        }
        if let Some(wait) = scrape_wait {
            let deadline = Instant::now() + wait;
            let mut n = self
                .shared
                .scrapes_after_finish
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            while *n == 0 {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    lines.push(format!(
                        "no scrape read /metrics in the {} after the run: the final figures were not scraped",
                        fmt_duration(wait)
                    ));
                    break;
                }
                n = match self.shared.scraped.wait_timeout(n, left) {
                    Ok((g, _)) => g,
                    Err(p) => p.into_inner().0,
                };
            }
        }
        lines
    }

    fn count_failure(&self, target: &'static str) {
        *self.lock().push_failures.entry(target).or_default() += 1;
    }
}

fn fmt_duration(d: Duration) -> String {
    format!("{} s", d.as_secs_f64())
}

/// Once a second (on the wall clock's second, like the merged seconds):
/// a copy of the state to every push target. Ends with the exporter.
fn tick(shared: std::sync::Weak<Shared>) {
    loop {
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
        let to_next = Duration::from_secs(1).saturating_sub(Duration::from_nanos(u64::from(now.subsec_nanos())));
        std::thread::sleep(to_next.max(Duration::from_millis(10)));
        let Some(shared) = shared.upgrade() else {
            return;
        };
        let exporter = Exporter { shared };
        let snap = exporter.snapshot();
        if snap.finished {
            return;
        }
        let pushers = exporter.shared.pushers.lock().unwrap_or_else(|p| p.into_inner());
        let mut failed = Vec::new();
        for p in pushers.iter() {
            // Failures of the sends since the last tick.
            for _ in 0..p.take_new_failures() {
                failed.push(p.kind.series_label());
            }
            p.offer(snap.clone());
        }
        drop(pushers);
        for f in failed {
            exporter.count_failure(f);
        }
    }
}

/// Nanoseconds since the Unix epoch (OTLP's times).
pub(crate) fn unix_nanos(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn second(n: u32, in_window: bool, requests: u64, errors: u64) -> SecondResult {
        SecondResult {
            second: n,
            in_window,
            requests,
            errors,
            bytes: requests * 100,
            connections_opened: 1,
            latency_p50_us: 1500,
            latency_p99_us: 9000,
            client_cpu_user_s: 0.25,
            client_cpu_system_s: 0.5,
            loop_lag_max_us: 300,
        }
    }

    /// An HDR histogram of the engine's bounds with `n` requests of each
    /// `(n, µs)`.
    pub(crate) fn latencies(values: &[(u64, u64)]) -> Histogram<u64> {
        let mut h = Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("bounds");
        for &(n, us) in values {
            h.record_n(us, n).expect("in range");
        }
        h
    }

    /// A mix of a ramp second and two measured ones, then its end: 10
    /// ramp requests of 150 µs; 100 of 150 µs, then 198 of 3 ms and 2 of
    /// 30 ms measured; 4 requests in flight at each second's end.
    pub(crate) fn sample() -> Exporter {
        let e = Exporter::new("demo", Kind::Http);
        e.mix_started(1, 1, "static \"a\"");
        e.second_merged(&second(1, false, 10, 1), Some(&latencies(&[(10, 150)])), Some(4));
        e.second_merged(&second(2, true, 100, 2), Some(&latencies(&[(100, 150)])), Some(4));
        e.second_merged(
            &second(3, true, 200, 0),
            Some(&latencies(&[(198, 3_000), (2, 30_000)])),
            Some(4),
        );
        e
    }

    #[test]
    fn the_buckets_count_the_merged_seconds_requests_and_in_flight_ends_at_0() {
        let e = sample();
        let s = e.snapshot();
        let key = s.current.clone().expect("a mix runs");
        let measured = s.buckets[&(key.clone(), Window::Measured)];
        assert_eq!(measured.count, s.total(Window::Measured, |c| c.requests));
        assert_eq!(measured.count, 300);
        assert!(
            !s.buckets.contains_key(&(key.clone(), Window::Ramp)),
            "ramps are not counted"
        );
        assert_eq!(s.last[&key].in_flight, Some(4));
        // A second without a histogram (a file suite's) adds no bucket.
        e.second(&second(4, true, 7, 0));
        let s = e.snapshot();
        assert_eq!(s.buckets[&(key.clone(), Window::Measured)].count, 300);
        assert_eq!(s.last[&key].in_flight, None);
        e.second_merged(&second(5, true, 0, 0), None, Some(3));
        e.mix_finished(&MixEnd::default());
        assert_eq!(e.snapshot().last[&key].in_flight, Some(0), "the mix is over");
    }

    #[test]
    fn seconds_add_up_by_window_and_the_end_sets_the_result_figures() {
        let e = sample();
        let s = e.snapshot();
        assert_eq!(s.total(Window::Ramp, |c| c.requests), 10);
        assert_eq!(s.total(Window::Measured, |c| c.requests), 300);
        assert_eq!(s.total(Window::Measured, |c| c.errors), 2);
        assert_eq!(s.seconds_merged, 3);
        let key = s.current.clone().expect("a mix runs");
        assert_eq!(s.last[&key].second, 3);
        let mut by_type = BTreeMap::new();
        by_type.insert("status".to_string(), 2);
        by_type.insert("reset".to_string(), 1);
        e.mix_finished(&MixEnd {
            requests: 303,
            errors: 3,
            bytes: 30_300,
            connections_opened: 2,
            in_flight: 4,
            errors_by_type: by_type,
            host_cpu: [("web1".to_string(), ("server".to_string(), 0.75))]
                .into_iter()
                .collect(),
        });
        let s = e.snapshot();
        assert_eq!(s.current, None);
        assert_eq!(s.results[&key].requests, 303);
        assert_eq!(s.results[&key].errors, 3);
        // The live counters keep the seconds' sums: they never go down.
        assert_eq!(s.total(Window::Measured, |c| c.requests), 300);
        assert_eq!(s.total(Window::Ramp, |c| c.requests), 10);
        assert_eq!(s.errors_by_type[&(key.clone(), "reset".to_string())], 1);
        assert_eq!(s.unfinished[&key], 4);
        assert_eq!(
            s.host_cpu[&(key.clone(), "web1".to_string())],
            ("server".to_string(), 0.75)
        );
        // A second with no mix running (between mixes) counts nowhere.
        e.second(&second(9, true, 5, 0));
        assert_eq!(e.snapshot().total(Window::Measured, |c| c.requests), 300);
    }

    #[test]
    fn finish_waits_for_a_scrape_of_the_final_figures() {
        let e = sample();
        let scraper = e.clone();
        let t = std::thread::spawn(move || {
            // Scrapes until one has seen the run finished.
            loop {
                let (text, finished) = scraper.render_scrape();
                assert_eq!(finished, text.contains("\nbenchlab_run_finished 1\n"));
                if finished {
                    scraper.final_scrape_served();
                    return;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        });
        // Generous: the scraper polls every 5 ms.
        let lines = e.finish(Some(Duration::from_secs(60)));
        assert!(lines.is_empty(), "{lines:?}");
        t.join().expect("the scraper");
        // Nobody scrapes: it says so after the wait.
        let lonely = sample();
        let lines = lonely.finish(Some(Duration::from_millis(10)));
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(lines[0].contains("no scrape"), "{lines:?}");
    }
}
