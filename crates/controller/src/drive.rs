//! Driving one mix's clients: all started at one wall-clock instant, their
//! seconds merged as they come, a lost client's figures kept apart.

use crate::driver::{ClientDriver, ClientPool};
use crate::options::*;
use crate::plan::ClientPlan;
use benchlab_engine::{ClassStats, ClientReport, ConnCounters, Second};
use benchlab_results::*;
use hdrhistogram::Histogram;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

/// How one client of a mix ended.
#[derive(Debug)]
pub enum ClientEnd {
    /// It ran to the end (or was stopped) and reported.
    Finished(Box<ClientReport>),
    /// It was lost mid-mix: `window` holds the seconds it sent inside the
    /// measurement window (`seconds` of them), kept apart from the mix.
    Lost {
        /// What happened, in words.
        why: String,
        window: Box<ClassStats>,
        conn: Box<ConnCounters>,
        seconds: u32,
    },
}

/// What a mix's clients did.
#[derive(Debug)]
pub struct Driven {
    /// In client-number order: a lost client keeps its place.
    pub clients: Vec<ClientEnd>,
    /// The merged per-second series, as the observer saw it.
    pub seconds: Vec<SecondResult>,
    /// Stopped early (Ctrl-C).
    pub partial: bool,
}

impl Driven {
    /// The reports of the clients that finished.
    pub fn reports(&self) -> impl Iterator<Item = &ClientReport> {
        self.clients.iter().filter_map(|c| match c {
            ClientEnd::Finished(r) => Some(&**r),
            ClientEnd::Lost { .. } => None,
        })
    }
}

/// One client's seconds inside the window, summed: its figures if it is
/// lost. The histogram grows with the latencies seen (a full-range one is
/// ~190 KB, kept per client).
pub(crate) struct Apart {
    counters: benchlab_engine::Counters,
    conn: ConnCounters,
    latency: Histogram<u64>,
    seconds: u32,
}

impl Apart {
    pub(crate) fn new() -> Apart {
        Apart {
            counters: Default::default(),
            conn: Default::default(),
            latency: Histogram::new(3).expect("3 significant digits is valid"),
            seconds: 0,
        }
    }

    pub(crate) fn add(&mut self, s: &Second, window: (Duration, Duration)) {
        if !in_window(s.second, window) {
            return;
        }
        self.counters.add(&s.counters);
        self.conn.add(&s.conn);
        if let Some(h) = &s.histogram {
            let _ = self.latency.add(h);
        }
        self.seconds += 1;
    }

    pub(crate) fn into_end(self, why: String) -> ClientEnd {
        let mut window = ClassStats {
            counters: self.counters,
            ..ClassStats::default()
        };
        // The full-range histogram holds every value the growing one does.
        let _ = window.latency.add(&self.latency);
        ClientEnd::Lost {
            why,
            window: Box::new(window),
            conn: Box::new(self.conn),
            seconds: self.seconds,
        }
    }
}

/// Whether second `second` (0-based) lies wholly inside `window`.
pub(crate) fn in_window(second: u32, (from, until): (Duration, Duration)) -> bool {
    let t0 = Duration::from_secs(u64::from(second));
    t0 >= from && t0 + Duration::from_secs(1) <= until
}

/// Merges the clients' seconds as they arrive: a second is complete once
/// every client has sent it or has finished (or was lost); its counts are
/// summed and its percentiles read from the sum of the clients' histograms,
/// so they are those of every request of that second.
pub(crate) struct SecondMerger {
    window: (Duration, Duration),
    /// Per client: the last second it sent, and whether it has finished.
    sent: Vec<Option<u32>>,
    finished: Vec<bool>,
    pending: BTreeMap<u32, Merging>,
    done: Vec<SecondResult>,
}

#[derive(Default)]
pub(crate) struct Merging {
    requests: u64,
    errors: u64,
    bytes: u64,
    conn: u64,
    latency: Option<Histogram<u64>>,
    /// From a client that sent only its summary: the slowest one's.
    summary_p50: u64,
    summary_p99: u64,
    /// A client sent only its summary: `latency` lacks its requests.
    summary_only: bool,
    /// The clients' own CPU and worst loop lag.
    load: benchlab_engine::LoopLoad,
}

impl SecondMerger {
    pub(crate) fn new(clients: usize, window: (Duration, Duration)) -> SecondMerger {
        SecondMerger {
            window,
            sent: vec![None; clients],
            finished: vec![false; clients],
            pending: BTreeMap::new(),
            done: Vec::new(),
        }
    }

    pub(crate) fn add(&mut self, client: usize, s: Second) {
        self.sent[client] = Some(self.sent[client].map_or(s.second, |l| l.max(s.second)));
        let m = self.pending.entry(s.second).or_default();
        m.requests += s.counters.requests;
        m.errors += s.counters.errors_total();
        m.bytes += s.counters.bytes;
        m.conn += s.conn.connections_opened;
        m.load.add(&s.load);
        match (s.histogram, &mut m.latency) {
            (Some(h), None) => m.latency = Some(h),
            // Histograms of the engine's bounds add without loss.
            (Some(h), Some(sum)) => {
                let _ = sum.add(&h);
            }
            (None, _) => {
                m.summary_only = true;
                m.summary_p50 = m.summary_p50.max(s.latency.p50);
                m.summary_p99 = m.summary_p99.max(s.latency.p99);
            }
        }
    }

    pub(crate) fn finished(&mut self, client: usize) {
        self.finished[client] = true;
    }

    /// The seconds completed since the last call, in order.
    #[cfg(test)]
    pub(crate) fn release(&mut self) -> &[SecondResult] {
        let from = self.release_with(&mut |_, _| {});
        &self.done[from..]
    }

    /// Hands each second completed since the last call to `f` with its
    /// merged histogram and in-flight requests, in order; returns where
    /// they start in `done`.
    pub(crate) fn release_with(&mut self, f: &mut dyn FnMut(&SecondResult, &MergedSecond<'_>)) -> usize {
        let from = self.done.len();
        while let Some((&sec, _)) = self.pending.first_key_value() {
            let complete = self
                .sent
                .iter()
                .zip(&self.finished)
                .all(|(sent, &finished)| finished || sent.is_some_and(|l| l >= sec));
            if !complete {
                break;
            }
            let Some(m) = self.pending.remove(&sec) else {
                break;
            };
            let q = |p: f64| {
                m.latency
                    .as_ref()
                    .filter(|h| !h.is_empty())
                    .map_or(0, |h| h.value_at_quantile(p))
            };
            self.done.push(SecondResult {
                second: sec + 1,
                in_window: in_window(sec, self.window),
                requests: m.requests,
                errors: m.errors,
                bytes: m.bytes,
                connections_opened: m.conn,
                latency_p50_us: q(0.50).max(m.summary_p50),
                latency_p99_us: q(0.99).max(m.summary_p99),
                client_cpu_user_s: round(m.load.cpu_user_us as f64 / 1e6, 4),
                client_cpu_system_s: round(m.load.cpu_system_us as f64 / 1e6, 4),
                loop_lag_max_us: m.load.loop_lag_max_us,
            });
            let merged = MergedSecond {
                latency: m.latency.as_ref().filter(|_| !m.summary_only),
                in_flight: m.load.in_flight,
            };
            if let Some(s) = self.done.last() {
                f(s, &merged);
            }
        }
        from
    }
}

/// Starts every client of a mix at `start_at` (wall clock), merges their
/// seconds as they come (each complete one handed to `on_second`), stops
/// them all when `stop` is set, and collects how each ended. If a client
/// fails to start, every client already started is stopped and waited for,
/// and the mix fails naming it. The plans' URL list must have been given
/// to `pool` ([`ClientPool::load_urls`]). `benchlab http` drives its one
/// client through it too.
pub fn drive_mix(
    pool: &dyn ClientPool,
    plans: &[ClientPlan],
    window: (Duration, Duration),
    start_at: SystemTime,
    stop: &AtomicBool,
    on_second: &mut dyn FnMut(&SecondResult, &MergedSecond<'_>),
) -> Result<Driven, ControllerError> {
    let clients = plans.len();
    let mut drivers: Vec<Box<ClientDriver>> = Vec::with_capacity(clients);
    for (c, plan) in plans.iter().enumerate() {
        let mut d = pool.driver(c);
        if let Err(source) = d.start(plan.clone(), start_at) {
            for d in &mut drivers {
                d.stop();
            }
            for d in &mut drivers {
                let _ = d.finish();
            }
            return Err(ControllerError::Driver { client: c + 1, source });
        }
        drivers.push(d);
    }
    // Every order is out: now their answers (the barrier).
    crate::driver::all_started(&mut drivers).map_err(|(client, source)| ControllerError::Driver { client, source })?;
    let mut merger = SecondMerger::new(clients, window);
    let mut apart: Vec<Apart> = (0..clients).map(|_| Apart::new()).collect();
    let mut partial = false;
    let wait = Duration::from_millis(if clients > 8 { 5 } else { 50 });
    loop {
        // A stop asked for by the user (Ctrl-C) or by the pool (a lost
        // remote agent under --abort-on-lost-agent): the mix is partial.
        if (stop.load(Ordering::Relaxed) || pool.stop_requested()) && !partial {
            for d in &mut drivers {
                d.stop();
            }
            partial = true;
        }
        let mut all_done = true;
        for (c, d) in drivers.iter_mut().enumerate() {
            while let Some(s) = d.next_second(wait) {
                apart[c].add(&s, window);
                merger.add(c, s);
            }
            if d.is_finished() {
                merger.finished(c);
            } else {
                all_done = false;
            }
        }
        merger.release_with(on_second);
        if all_done {
            break;
        }
    }
    let clients = drivers
        .iter_mut()
        .zip(apart)
        .map(|(d, apart)| match d.finish() {
            Ok(r) => ClientEnd::Finished(Box::new(r)),
            Err(lost) => apart.into_end(lost.why),
        })
        .collect();
    Ok(Driven {
        clients,
        seconds: merger.done,
        partial,
    })
}
