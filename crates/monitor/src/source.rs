//! Where the controller gets a host's samples from: a [`MonitorSource`]
//! answers "what did this host do between these two instants".
//!
//! Every source is a [`SampleStore`] filled by something: [`LocalMonitor`]
//! fills one from a thread sampling this machine (or a node_exporter)
//! every interval; a remote monitor's session fills one with the JSON
//! samples it receives ([`SampleStore::push_json`]). The controller only
//! reads windows, so it does not care which.

use crate::node_exporter::NodeExporter;
use crate::sampler::{Sampler, Watch};
use crate::{HostSample, MonitorError};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A monitored host, as the controller sees it.
pub trait MonitorSource: Send + Sync + std::fmt::Debug {
    /// The host's name.
    fn host(&self) -> String;
    /// Where the samples come from, in words (`local`, `node_exporter URL`,
    /// a remote monitor's address).
    fn source(&self) -> String;
    /// The samples whose span ended inside `[from, to]`, in order.
    fn window(&self, from: SystemTime, to: SystemTime) -> Vec<HostSample>;
    /// The first error that stopped sampling, if one did.
    fn error(&self) -> Option<String> {
        None
    }
}

/// The most samples a store keeps: a day of seconds, about 50 MB at most.
const KEEP: usize = 86_400;

/// A bounded, shared buffer of one host's samples.
#[derive(Debug)]
pub struct SampleStore {
    host: String,
    source: String,
    samples: Mutex<VecDeque<HostSample>>,
    error: Mutex<Option<String>>,
}

impl SampleStore {
    pub fn new(host: &str, source: &str) -> SampleStore {
        SampleStore {
            host: host.to_string(),
            source: source.to_string(),
            samples: Mutex::new(VecDeque::new()),
            error: Mutex::new(None),
        }
    }

    /// Adds a sample (the oldest goes past [`KEEP`]).
    pub fn push(&self, sample: HostSample) {
        let mut q = self.samples.lock().unwrap_or_else(|e| e.into_inner());
        if q.len() >= KEEP {
            q.pop_front();
        }
        q.push_back(sample);
    }

    /// Adds a sample received as JSON (a remote monitor's message).
    pub fn push_json(&self, bytes: &[u8]) -> Result<(), MonitorError> {
        let mut sample: HostSample = serde_json::from_slice(bytes)?;
        // A peer's list is kept to what a local sample holds: a window's
        // mean ranks these lists against each other.
        sample.top_processes.truncate(crate::TOP_PROCESSES);
        self.push(sample);
        Ok(())
    }

    /// Records why sampling stopped.
    pub fn fail(&self, why: String) {
        let mut e = self.error.lock().unwrap_or_else(|e| e.into_inner());
        e.get_or_insert(why);
    }

    /// Every sample held, in order.
    pub fn all(&self) -> Vec<HostSample> {
        self.samples
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .cloned()
            .collect()
    }
}

fn unix_ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

impl MonitorSource for SampleStore {
    fn host(&self) -> String {
        self.host.clone()
    }

    fn source(&self) -> String {
        self.source.clone()
    }

    fn window(&self, from: SystemTime, to: SystemTime) -> Vec<HostSample> {
        let (from, to) = (unix_ms(from), unix_ms(to));
        self.samples
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .filter(|s| s.unix_ms >= from && s.unix_ms <= to)
            .cloned()
            .collect()
    }

    fn error(&self) -> Option<String> {
        self.error.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// A thread sampling a host every interval into a [`SampleStore`]; stops
/// when dropped.
#[derive(Debug)]
pub struct LocalMonitor {
    store: Arc<SampleStore>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

/// Something that gives a host's sample when asked: [`Sampler`] or
/// [`NodeExporter`].
trait Sample: Send + 'static {
    fn next(&mut self) -> Result<HostSample, MonitorError>;
}

impl Sample for Sampler {
    fn next(&mut self) -> Result<HostSample, MonitorError> {
        self.sample()
    }
}

impl Sample for NodeExporter {
    fn next(&mut self) -> Result<HostSample, MonitorError> {
        self.sample()
    }
}

impl LocalMonitor {
    /// Samples this machine (named by its hostname), watching `watch`,
    /// every `interval`.
    pub fn this_machine(watch: Watch, interval: Duration) -> Result<LocalMonitor, MonitorError> {
        let host = crate::sampler::hostname();
        let sampler = Sampler::new(&host, watch)?;
        Ok(Self::spawn(&host, "local", sampler, interval))
    }

    /// Samples a node_exporter's /metrics every `interval`.
    pub fn node_exporter(url: &str, interval: Duration) -> Result<LocalMonitor, MonitorError> {
        let n = NodeExporter::new(url)?;
        let host = n.host().to_string();
        Ok(Self::spawn(&host, &format!("node_exporter {url}"), n, interval))
    }

    fn spawn(host: &str, source: &str, mut sampler: impl Sample, interval: Duration) -> LocalMonitor {
        let store = Arc::new(SampleStore::new(host, source));
        let stop = Arc::new(AtomicBool::new(false));
        let (s, st) = (store.clone(), stop.clone());
        let thread = std::thread::Builder::new()
            .name("benchlab-monitor".into())
            .spawn(move || {
                // Ticks on a fixed schedule, so a slow read does not drift
                // the series; the stop flag is checked every 50 ms.
                let mut next = std::time::Instant::now() + interval;
                while !st.load(Ordering::Relaxed) {
                    let now = std::time::Instant::now();
                    if now < next {
                        std::thread::sleep((next - now).min(Duration::from_millis(50)));
                        continue;
                    }
                    next += interval;
                    match sampler.next() {
                        Ok(sample) => s.push(sample),
                        Err(e) => s.fail(e.to_string()),
                    }
                }
            })
            .ok();
        if thread.is_none() {
            store.fail("cannot start the monitor thread".into());
        }
        LocalMonitor { store, stop, thread }
    }

    /// The store the thread fills.
    pub fn store(&self) -> Arc<SampleStore> {
        self.store.clone()
    }
}

impl Drop for LocalMonitor {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64) -> HostSample {
        HostSample {
            unix_ms: ms,
            ..HostSample::default()
        }
    }

    #[test]
    fn a_window_holds_the_samples_that_ended_inside_it() {
        let s = SampleStore::new("h", "test");
        for ms in [1000, 2000, 3000, 4000] {
            s.push(at(ms));
        }
        let w = s.window(
            UNIX_EPOCH + Duration::from_millis(2000),
            UNIX_EPOCH + Duration::from_millis(3500),
        );
        assert_eq!(w.iter().map(|s| s.unix_ms).collect::<Vec<_>>(), vec![2000, 3000]);
        s.push_json(br#"{"host":"h","unix_ms":5000,"interval_s":1.0,"cpu":{"user":1.0,"system":0.0,"iowait":0.0,"irq":0.0,"softirq":0.0,"steal":0.0,"idle":99.0},"per_core":[],"context_switches_per_sec":0.0,"interrupts_per_sec":0.0,"run_queue":1.0,"memory":{"total_bytes":1,"used_bytes":1,"page_cache_bytes":0},"nics":[],"disks":[],"listen_overflows_per_sec":0.0,"listen_drops_per_sec":0.0}"#)
            .expect("valid sample");
        assert_eq!(s.all().len(), 5);
        assert!(s.push_json(b"{").is_err());
        // A peer listing more busiest processes than a sample holds: cut.
        let mut many = at(6000);
        many.top_processes = (0..50)
            .map(|pid| crate::TopProcess {
                pid,
                name: "p".into(),
                cpu: 0.5,
            })
            .collect();
        s.push_json(&serde_json::to_vec(&many).expect("JSON"))
            .expect("valid sample");
        assert_eq!(s.all()[5].top_processes.len(), crate::TOP_PROCESSES);
    }

    #[test]
    fn the_local_monitor_samples_on_its_own() {
        let m = LocalMonitor::this_machine(Watch::Nothing, Duration::from_millis(100)).expect("local");
        let store = m.store();
        let t0 = std::time::Instant::now();
        while store.all().len() < 3 && t0.elapsed() < Duration::from_secs(60) {
            std::thread::sleep(Duration::from_millis(20));
        }
        drop(m);
        assert!(store.all().len() >= 3, "{:?}", store.error());
        assert!(store.error().is_none());
    }
}
