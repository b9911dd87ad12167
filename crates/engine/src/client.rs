//! A client (test system): a group of worker OS threads running one plan,
//! and the collector that merges their snapshots.
//!
//! The controller of a suite runs many clients in one process (each with
//! its own threads, source address and seed) or, later, in remote agents;
//! both see the same surface: start at an instant, stop, a stream of
//! per-second summaries, and the final merged statistics.

use crate::event_loop::{shared_for, Shared};
use crate::h2::protocol::Http2;
use crate::h3::protocol::Http3;
use crate::http1::Http1;
use crate::plan::{ClientPlan, PlanError};
use crate::stats::{ConnCounters, Counters, LatencySummary, LoopLoad, Snapshot, Stats};
use hdrhistogram::Histogram;
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Errors starting a client.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error(transparent)]
    Plan(#[from] PlanError),
    #[error("cannot start a worker thread: {0}")]
    Spawn(std::io::Error),
}

/// One second of a client's run, all worker threads merged.
///
/// Serde (as [`ClientReport`]): a remote agent sends its seconds as these
/// very types, so a field added here reaches the controller unchanged.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Second {
    /// 0 = the first second after the start.
    pub second: u32,
    pub counters: Counters,
    pub conn: ConnCounters,
    pub latency: LatencySummary,
    /// The second's HDR latency histogram (successful requests, every
    /// class): the delta a controller merges with other clients' so that
    /// a mix's per-second percentiles are true merged ones, not the
    /// slowest client's. Present in the stream ([`Client::next_second`]);
    /// `None` in [`ClientReport::seconds`], which keeps the summaries only
    /// (a histogram of the engine's range is ~190 KB).
    #[serde(with = "crate::wire::option")]
    pub histogram: Option<Histogram<u64>>,
    /// The client's own CPU and event-loop lag in the second.
    pub load: LoopLoad,
}

impl Second {
    /// Second `second` of every worker thread's merged `stats`, with its
    /// histogram.
    fn of(second: u32, stats: &Stats) -> Second {
        let t = stats.total();
        Second {
            second,
            counters: t.counters,
            conn: stats.conn,
            latency: LatencySummary::of(&t.latency),
            histogram: Some(t.latency),
            load: stats.load,
        }
    }
}

/// What a client measured over its whole run.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct ClientReport {
    /// Per class, over the measurement window (the whole run when the
    /// window is the whole run).
    pub stats: Stats,
    /// Per-second series, in order, of every completion (ramps included).
    pub seconds: Vec<Second>,
    /// Requests unfinished when the run ended.
    pub in_flight: u64,
    /// CPU used by the worker threads.
    pub cpu_user: Duration,
    pub cpu_system: Duration,
    /// From the start to the moment the last worker thread stopped.
    pub elapsed: Duration,
    /// The first failed TLS handshake, in words: what failed and what to
    /// try (`None` when every handshake succeeded).
    pub tls_error: Option<String>,
    /// A flow's first failed check per step, by step name, in words.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub check_failures: std::collections::BTreeMap<String, String>,
    /// Virtual users that got at least one response (the others waited
    /// to arrive all run: see the engine's arrival slots).
    pub users_arrived: u64,
    /// Virtual users still waiting to connect when the run ended.
    pub users_waiting: u64,
    /// Open loop: the most connections this client had open at the same
    /// time, all its OS threads together, over the whole run (0 in a
    /// closed loop, which does not track it). Exact to a loop turn: each
    /// thread adds its change once a turn, after its sends.
    pub peak_connections: u64,
    /// Worker threads that ended without their last report (a panic): their
    /// figures are missing from this report. Always 0 unless benchlab has a
    /// bug; the run still ends on time and says so.
    pub threads_lost: usize,
    /// HTTP/2: the server's SETTINGS as its first connection received them
    /// (`None` for HTTP/1, or when no connection got that far).
    pub h2_settings: Option<crate::h2::conn::PeerSettings>,
    /// When the client's first request began (UTC ns of the wall clock of
    /// the host it ran on; a remote agent's driver puts it on the
    /// controller's clock): `None` when it sent none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_send_unix_ns: Option<i64>,
    /// How far `first_send_unix_ns` may be off the controller's clock: half
    /// the round trip of the clock check that corrected it (0 in the
    /// controller's own process).
    #[serde(default)]
    pub first_send_uncertainty_ns: u64,
}

/// Handle to set a running client's stop flag from anywhere (a Ctrl-C
/// handler, the controller).
#[derive(Debug, Clone)]
pub struct Stopper(Vec<Arc<Shared>>);

impl Stopper {
    pub fn stop(&self) {
        for s in &self.0 {
            s.stop.store(true, Ordering::Relaxed);
        }
    }
}

/// A running client.
#[derive(Debug)]
pub struct Client {
    shared: Arc<Shared>,
    /// A client of several protocols: the other protocols' users' state
    /// (their own plans and URL picks; `shared` is then the first
    /// protocol's: HTTP/1's where it has HTTP/1 classes).
    others: Vec<Arc<Shared>>,
    threads: Vec<JoinHandle<()>>,
    rx: Receiver<Snapshot>,
    collector: Collector,
}

impl Client {
    /// Validates `plan` and starts its worker threads; load begins at
    /// `start_at` (which may be in the future, for a common start).
    pub fn start(plan: ClientPlan, start_at: Instant) -> Result<Client, EngineError> {
        if plan
            .http2
            .is_some_and(|h| plan.urls.kind_examples().any(|u| !h.speaks(u.class)))
        {
            return Client::start_mixed(plan, start_at);
        }
        let mut os_threads = plan.os_threads.min(plan.slots() as usize).max(1);
        if let Some(h2) = plan.http2 {
            // HTTP/2 spreads connections, not users, over the threads.
            os_threads = os_threads.min(h2.connections as usize).max(1);
        }
        let vus = plan.slots();
        let classes = plan.classes.len();
        let mut plan = plan;
        plan.os_threads = os_threads;
        let shared = Arc::new(shared_for(plan, start_at)?);
        let (tx, rx) = mpsc::channel();
        let mut threads = Vec::with_capacity(os_threads);
        for t in 0..os_threads {
            // Spread virtual users evenly: the first `vus % n` threads get one more.
            let share = vus / os_threads as u32 + u32::from((t as u32) < vus % os_threads as u32);
            let name = format!("benchlab-worker-{t}");
            let h = if shared.plan.http2.is_some_and(|h| h.h3) {
                let worker = Http3::new(Arc::clone(&shared), t, tx.clone()).map_err(EngineError::Spawn)?;
                std::thread::Builder::new().name(name).spawn(move || worker.run())
            } else if shared.plan.http2.is_some() {
                let worker = Http2::new(Arc::clone(&shared), t, tx.clone()).map_err(EngineError::Spawn)?;
                std::thread::Builder::new().name(name).spawn(move || worker.run())
            } else {
                let worker = Http1::new(Arc::clone(&shared), t, share, tx.clone()).map_err(EngineError::Spawn)?;
                std::thread::Builder::new().name(name).spawn(move || worker.run())
            }
            .map_err(EngineError::Spawn)?;
            threads.push(h);
        }
        Ok(Client {
            shared,
            others: Vec::new(),
            threads,
            rx,
            collector: Collector::new(classes, os_threads),
        })
    }

    /// A client of classes of several protocols (HTTP/1 with HTTP/2 or
    /// HTTP/3, or HTTP/2 with HTTP/3, or all three): its users split
    /// between the protocols by the URL weights of each (at least one user
    /// each), a user keeping its protocol all run; each protocol runs on
    /// event loops of its own (at least one each), all reporting to one
    /// collector, so the client's figures are one as for any client.
    fn start_mixed(plan: ClientPlan, start_at: Instant) -> Result<Client, EngineError> {
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        enum Proto {
            H1,
            H2,
            H3,
        }
        plan.validate()?;
        let Some(h2) = plan.http2 else {
            return Err(PlanError::Invalid("no HTTP/2 classes".into()).into());
        };
        let proto_of = |c: usize| {
            if !h2.speaks(c) {
                Proto::H1
            } else if h2.h3 || (c < 64 && h2.h3_classes & (1 << c) != 0) {
                Proto::H3
            } else {
                Proto::H2
            }
        };
        let weight = |urls: &crate::plan::UrlTable| (0..urls.classes()).map(|c| urls.class_weight(c)).sum::<f64>();
        let mut groups = Vec::new();
        for p in [Proto::H1, Proto::H2, Proto::H3] {
            if plan.urls.iter().any(|u| proto_of(u.class) == p) {
                let urls = plan.urls.filter_classes(|c| proto_of(c) == p)?;
                let w = weight(&urls);
                groups.push((p, urls, w));
            }
        }
        // A closed loop's users, or an open loop's request slots (the cap
        // on requests in flight; `validate` asks for 2 at least), split
        // by the URL weights.
        let users = plan.slots();
        if (users as usize) < groups.len() {
            return Err(PlanError::Invalid(format!(
                "classes of {} protocols in one client need at least {} users (one for each)",
                groups.len(),
                groups.len()
            ))
            .into());
        }
        let weights: Vec<f64> = groups.iter().map(|g| g.2).collect();
        let total: f64 = weights.iter().sum();
        let counts = split_by_weight(users, &weights);
        let threads = split_by_weight(plan.os_threads.max(groups.len()) as u32, &weights);
        let (mut shared_all, mut plans) = (Vec::new(), Vec::new());
        // An open loop's schedule is split by the same weights: each
        // protocol's loops send their share of the rate, on a schedule of
        // their own (seeded apart, so two Poisson streams do not draw the
        // same gaps), and hold their share of the cap on requests in
        // flight. The sum of independent Poisson streams is the client's
        // Poisson stream; constant ones interleave. The first protocol
        // takes what the others leave, so the shares add up exactly.
        let mut rates: Vec<f64> = match plan.load {
            crate::plan::Load::Open(o) => weights.iter().map(|w| o.rate * w / total).collect(),
            crate::plan::Load::Closed => vec![0.0; weights.len()],
        };
        if let crate::plan::Load::Open(o) = plan.load {
            rates[0] = o.rate - rates[1..].iter().sum::<f64>();
        }
        for (k, (proto, urls, _)) in groups.into_iter().enumerate() {
            let mut p = plan.clone();
            if let crate::plan::Load::Open(o) = p.load {
                p.load = crate::plan::Load::Open(crate::plan::OpenLoop {
                    rate: rates[k],
                    max_in_flight: counts[k],
                    ..o
                });
                p.seed = p.seed.wrapping_add((k as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
            } else {
                p.virtual_users = counts[k];
            }
            p.urls = Arc::new(urls);
            p.http2 = match proto {
                Proto::H1 => None,
                Proto::H2 | Proto::H3 => Some(crate::plan::H2Plan {
                    connections: p.slots().div_ceil(h2.streams),
                    h3: proto == Proto::H3,
                    h3_classes: 0,
                    ..h2
                }),
            };
            let cap = match p.http2 {
                Some(m) => m.connections as usize,
                None => p.slots() as usize,
            };
            p.os_threads = (threads[k] as usize).min(cap).max(1);
            plans.push((proto, p.os_threads, p.slots()));
            shared_all.push(Arc::new(shared_for(p, start_at)?));
        }
        let classes = plan.classes.len();
        let (tx, rx) = mpsc::channel();
        let mut workers = Vec::new();
        let mut first = 0;
        for ((proto, n, vus), shared) in plans.into_iter().zip(&shared_all) {
            for t in 0..n {
                // Reported as threads first.., after the groups before.
                let spawned = match proto {
                    Proto::H1 => {
                        let share = vus / n as u32 + u32::from((t as u32) < vus % n as u32);
                        let worker = Http1::new(Arc::clone(shared), t, share, tx.clone())
                            .map_err(EngineError::Spawn)?
                            .reporting_as(first + t);
                        std::thread::Builder::new()
                            .name(format!("benchlab-worker-{t}"))
                            .spawn(move || worker.run())
                    }
                    Proto::H2 => {
                        let worker = Http2::new(Arc::clone(shared), t, tx.clone())
                            .map_err(EngineError::Spawn)?
                            .reporting_as(first + t);
                        std::thread::Builder::new()
                            .name(format!("benchlab-h2-{t}"))
                            .spawn(move || worker.run())
                    }
                    Proto::H3 => {
                        let worker = Http3::new(Arc::clone(shared), t, tx.clone())
                            .map_err(EngineError::Spawn)?
                            .reporting_as(first + t);
                        std::thread::Builder::new()
                            .name(format!("benchlab-h3-{t}"))
                            .spawn(move || worker.run())
                    }
                };
                workers.push(spawned.map_err(EngineError::Spawn)?);
            }
            first += n;
        }
        let mut shared_all = shared_all.into_iter();
        let Some(shared) = shared_all.next() else {
            return Err(PlanError::Invalid("no URLs".into()).into());
        };
        Ok(Client {
            shared,
            others: shared_all.collect(),
            threads: workers,
            rx,
            collector: Collector::new(classes, first),
        })
    }

    /// Asks every worker thread to stop at its next loop turn.
    pub fn stop(&self) {
        self.stopper().stop();
    }

    pub fn stopper(&self) -> Stopper {
        Stopper(std::iter::once(&self.shared).chain(&self.others).cloned().collect())
    }

    /// Waits up to `timeout` for the next completed second; `None` when
    /// none completed in time or the run is over.
    pub fn next_second(&mut self, timeout: Duration) -> Option<Second> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(s) = self.collector.pop_second() {
                return Some(s);
            }
            if self.collector.finished() {
                return None;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(snap) => self.collector.add(snap),
                Err(RecvTimeoutError::Timeout) => return None,
                // Every worker thread is gone, some without their last
                // report (a panic): the run is over all the same, so the
                // caller's loop ends instead of waiting for them forever.
                Err(RecvTimeoutError::Disconnected) => self.collector.abandon(),
            }
        }
    }

    /// Whether every worker thread has stopped.
    pub fn is_finished(&self) -> bool {
        self.collector.finished()
    }

    /// Waits for the workers to stop and returns the merged report.
    pub fn finish(mut self) -> ClientReport {
        while !self.collector.finished() {
            match self.rx.recv() {
                Ok(snap) => self.collector.add(snap),
                Err(_) => self.collector.abandon(),
            }
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        let collector = std::mem::replace(&mut self.collector, Collector::new(0, 0));
        let mut report = collector.into_report();
        let all: Vec<&Arc<Shared>> = std::iter::once(&self.shared).chain(&self.others).collect();
        report.tls_error = all.iter().find_map(|s| s.tls_error.get().cloned());
        if let Ok(first) = self.shared.check_failures.lock() {
            let names = &self.shared.plan.classes;
            report.check_failures = first
                .iter()
                .zip(names)
                .filter_map(|(r, c)| Some((c.name.clone(), r.clone()?)))
                .collect();
        }
        report.peak_connections = self.shared.peak_connections.load(Ordering::Relaxed);
        report.h2_settings = all.iter().find_map(|s| s.h2_settings.get().copied());
        report.first_send_unix_ns = all
            .iter()
            .map(|s| s.first_send_ns.load(Ordering::Relaxed))
            .min()
            .filter(|&ns| ns != i64::MAX);
        report
    }
}

/// A client dropped without [`Client::finish`] (a mix abandoned because
/// another client failed to start, a panic) stops its worker threads: load
/// never outlives the handle that could end it. The threads are not joined
/// here; each ends at its next loop turn.
impl Drop for Client {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Merges worker snapshots into totals and a per-second series.
#[derive(Debug)]
struct Collector {
    threads: usize,
    total: Stats,
    /// Seconds not yet reported by every thread: (merged stats, reports).
    pending: BTreeMap<u32, (Stats, usize)>,
    ready: Vec<Second>,
    emitted: usize,
    ended: usize,
    in_flight: u64,
    cpu_user: Duration,
    cpu_system: Duration,
    elapsed: Duration,
    users_arrived: u64,
    users_waiting: u64,
    /// Worker threads that ended without their last report (see `abandon`).
    threads_lost: usize,
    /// Per thread: the last second it will report (known once it ended).
    last_second: Vec<Option<u32>>,
}

impl Collector {
    fn new(classes: usize, threads: usize) -> Collector {
        Collector {
            threads,
            total: Stats::new(classes),
            pending: BTreeMap::new(),
            ready: Vec::new(),
            emitted: 0,
            ended: 0,
            in_flight: 0,
            cpu_user: Duration::ZERO,
            cpu_system: Duration::ZERO,
            elapsed: Duration::ZERO,
            users_arrived: 0,
            users_waiting: 0,
            last_second: vec![None; threads],
            threads_lost: 0,
        }
    }

    fn add(&mut self, snap: Snapshot) {
        let entry = self
            .pending
            .entry(snap.second)
            .or_insert_with(|| (Stats::new(snap.stats.classes.len()), 0));
        entry.0.add(&snap.stats);
        entry.1 += 1;
        if let Some(end) = snap.last {
            self.total.add(&end.window);
            self.ended += 1;
            self.in_flight += end.in_flight;
            self.cpu_user += end.cpu_user;
            self.cpu_system += end.cpu_system;
            self.elapsed = self.elapsed.max(end.elapsed);
            self.users_arrived += end.users_arrived;
            self.users_waiting += end.users_waiting;
            if let Some(slot) = self.last_second.get_mut(snap.thread) {
                *slot = Some(snap.second);
            }
        }
        self.release();
    }

    /// Moves seconds that every thread has reported (or can no longer
    /// report, having ended earlier) into `ready`.
    fn release(&mut self) {
        while let Some((&sec, &(_, reports))) = self.pending.iter().next() {
            let expected = self
                .last_second
                .iter()
                .filter(|l| l.is_none_or(|last| last >= sec))
                .count();
            if reports < expected {
                break;
            }
            let Some((stats, _)) = self.pending.remove(&sec) else {
                break;
            };
            self.ready.push(Second::of(sec, &stats));
        }
    }

    /// Every worker thread has gone (the channel is closed): threads that
    /// never sent their last report ended abnormally. Counts them, stops
    /// waiting for them and releases the seconds the others reported.
    fn abandon(&mut self) {
        if self.ended >= self.threads {
            return;
        }
        self.threads_lost = self.threads - self.ended;
        self.ended = self.threads;
        for last in self.last_second.iter_mut().filter(|l| l.is_none()) {
            // Expect no second from a lost thread beyond those it sent.
            *last = Some(0);
        }
        while let Some((sec, (stats, _))) = self.pending.pop_first() {
            self.ready.push(Second::of(sec, &stats));
        }
    }

    fn pop_second(&mut self) -> Option<Second> {
        if self.emitted < self.ready.len() {
            self.emitted += 1;
            // The histogram leaves with the second: the series kept for
            // the report holds summaries only.
            let kept = &mut self.ready[self.emitted - 1];
            let histogram = kept.histogram.take();
            Some(Second {
                histogram,
                ..kept.clone()
            })
        } else {
            None
        }
    }

    fn finished(&self) -> bool {
        self.ended == self.threads
    }

    fn into_report(mut self) -> ClientReport {
        self.release();
        for s in &mut self.ready {
            s.histogram = None;
        }
        ClientReport {
            stats: self.total,
            seconds: self.ready,
            in_flight: self.in_flight,
            cpu_user: self.cpu_user,
            cpu_system: self.cpu_system,
            elapsed: self.elapsed,
            tls_error: None,
            check_failures: Default::default(),
            users_arrived: self.users_arrived,
            users_waiting: self.users_waiting,
            peak_connections: 0,
            threads_lost: self.threads_lost,
            h2_settings: None,
            first_send_unix_ns: None,
            first_send_uncertainty_ns: 0,
        }
    }
}

/// `n` split by `weights` (each at least 1; `n` ≥ their number): every
/// part but the first rounded to its share, the first what is left.
fn split_by_weight(n: u32, weights: &[f64]) -> Vec<u32> {
    let total: f64 = weights.iter().sum();
    let k = weights.len() as u32;
    let mut parts: Vec<u32> = weights
        .iter()
        .map(|w| {
            if total > 0.0 {
                ((f64::from(n) * w / total).round() as u32).clamp(1, n.saturating_sub(k - 1).max(1))
            } else {
                1
            }
        })
        .collect();
    let rest: u32 = parts[1..].iter().sum();
    parts[0] = n.saturating_sub(rest).max(1);
    // Too many after rounding: take from the largest of the others.
    while parts.iter().sum::<u32>() > n {
        let Some(i) = (1..parts.len()).filter(|&i| parts[i] > 1).max_by_key(|&i| parts[i]) else {
            break;
        };
        parts[i] -= 1;
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap(thread: usize, second: u32, requests: u64) -> Snapshot {
        let mut stats = Stats::new(1);
        stats.classes[0].counters.requests = requests;
        Snapshot {
            thread,
            second,
            stats,
            last: None,
        }
    }

    /// A worker thread that dies without its last report (a panic) must not
    /// leave the client waiting forever: once every thread is gone the
    /// collector releases what the others sent and counts the lost one.
    #[test]
    fn a_lost_worker_thread_ends_the_run_and_is_counted() {
        let mut c = Collector::new(1, 2);
        c.add(snap(0, 0, 5));
        c.add(snap(1, 0, 7));
        c.add(snap(0, 1, 3));
        assert_eq!(c.pop_second().map(|s| s.counters.requests), Some(12));
        // Thread 1 died before second 1; thread 0 never ended either.
        assert!(c.pop_second().is_none(), "second 1 waits for thread 1");
        assert!(!c.finished());
        c.abandon();
        assert!(c.finished());
        assert_eq!(c.threads_lost, 2);
        assert_eq!(c.pop_second().map(|s| s.counters.requests), Some(3));
        assert_eq!(c.into_report().threads_lost, 2);
    }

    #[test]
    fn users_split_by_weight_at_least_one_each_summing_exactly() {
        assert_eq!(split_by_weight(10, &[1.0, 1.0]), vec![5, 5]);
        assert_eq!(split_by_weight(2, &[99.0, 1.0]), vec![1, 1]);
        assert_eq!(split_by_weight(2, &[1.0, 99.0]), vec![1, 1]);
        assert_eq!(split_by_weight(6, &[34.0, 33.0, 33.0]), vec![2, 2, 2]);
        assert_eq!(split_by_weight(3, &[98.0, 1.0, 1.0]), vec![1, 1, 1]);
        assert_eq!(split_by_weight(3, &[1.0, 1.0, 98.0]), vec![1, 1, 1]);
        for n in 3..50 {
            for w in [[1.0, 2.0, 3.0], [90.0, 5.0, 5.0], [1.0, 1.0, 98.0]] {
                let parts = split_by_weight(n, &w);
                assert_eq!(parts.iter().sum::<u32>(), n, "{n} {w:?} {parts:?}");
                assert!(parts.iter().all(|&p| p >= 1), "{n} {w:?} {parts:?}");
            }
        }
    }
}
