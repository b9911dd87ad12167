//! How a suite is run (everything not in the suite file), what stops it,
//! and what the caller sees while it runs.

use crate::driver::{ClientPool, DriverError, InProcess};
use benchlab_engine::TlsOptions;
use benchlab_model::Mix;
use benchlab_monitor::MonitorSource;
use benchlab_results::*;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

/// Errors that stop a suite before or between mixes.
#[derive(Debug, thiserror::Error)]
pub enum ControllerError {
    /// The target is not what the suite expects (preflight), or a URL or
    /// file set cannot be resolved.
    #[error("{0}")]
    Target(String),
    /// The suite's input is wrong (a workload, a file set, a `top`, a URL):
    /// the user's to fix, found before any request.
    #[error("{0}")]
    Input(String),
    #[error("cannot write results to {dir}: {source}")]
    Write {
        dir: String,
        #[source]
        source: std::io::Error,
    },
    /// Every remote agent a mix needs was lost before it: the run stops
    /// (the mixes before it are kept) rather than run a mix without
    /// clients.
    #[error("the run stops before mix {mix}: {why}")]
    ClientsLost { mix: usize, why: String },
    /// A client could not start (the mix's other clients were stopped).
    #[error("cannot start client {client}: {source}")]
    Driver {
        /// 1-based, as in reports.
        client: usize,
        #[source]
        source: DriverError,
    },
    /// This machine cannot hold the mix (descriptors, ports, a source
    /// address it does not have).
    #[error("{0}")]
    Capacity(#[from] benchlab_engine::sys::CapacityError),
    /// A file phase's target or workload (its class is the file error's).
    #[error("{0}")]
    File(#[from] benchlab_fileserver::FileError),
}

impl benchlab_input::Classify for ControllerError {
    fn exit_class(&self) -> benchlab_input::ExitClass {
        match self {
            ControllerError::Input(_) => benchlab_input::ExitClass::Usage,
            ControllerError::File(e) => e.exit_class(),
            _ => benchlab_input::ExitClass::CannotRun,
        }
    }
}

/// How to run a suite (everything not in the suite file).
#[derive(Debug, Clone)]
pub struct RunOptions {
    pub out: PathBuf,
    /// File-set directories by name (`--fileset NAME=DIR`), over the suite's.
    pub filesets: BTreeMap<String, PathBuf>,
    /// Worker OS threads per client; default: cores ÷ clients, at least 1.
    pub os_threads_per_client: Option<usize>,
    pub preflight: bool,
    pub tls: TlsOptions,
    pub time_scale: f64,
    pub command: Vec<String>,
    /// Runs of each mix, back to back (`run --repeat N`), at least 1: the
    /// mix keeps the median run and every run's figures, so `benchlab
    /// compare` sees the run-to-run noise.
    pub repeat: u32,
    /// Where the clients run: chosen by the run, in this process by
    /// default ([`InProcess`]), or remote agents.
    pub clients: Arc<dyn ClientPool>,
    /// CPUs the load generator's worker threads are pinned to
    /// (`--client-cpus`), disclosed in results.json; empty: not pinned.
    pub client_cpus: Vec<usize>,
    /// The server under test as `benchlab lab up` disclosed it, stored in
    /// results.json when the run targets a lab server.
    pub server: Option<benchlab_results::ServerDisclosure>,
    /// Drop the page cache before each mix (`--cold-cache`): the server
    /// then reads its files from the disk, as after a reboot.
    pub cold_cache: bool,
    /// Monitored hosts (`--monitor-local`, `--node-exporter`, remote
    /// monitors): each mix stores their seconds of its window, and the
    /// first one is taken as the server's host for the mix's verdict.
    pub monitors: Vec<Arc<dyn MonitorSource>>,
    /// How: None drops the whole page cache (root); an evictor makes it
    /// cold another way (a memory cgroup, without root).
    pub cache_evictor: Option<Arc<dyn CacheEvictor>>,
}

/// The page cache could not be made cold before a mix (`--cold-cache`):
/// the run stops, as a mix on a warm cache would not be the one asked for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ColdCacheError(pub String);

impl benchlab_input::Classify for ColdCacheError {
    fn exit_class(&self) -> benchlab_input::ExitClass {
        benchlab_input::ExitClass::CannotRun
    }
}

/// Makes the server's page cache cold without root (see
/// `benchlab_lab::cache`).
pub trait CacheEvictor: std::fmt::Debug + Send + Sync {
    /// Evicts; returns a line for the progress display.
    fn evict(&self) -> Result<String, ColdCacheError>;
    /// How, for results.json's `environment.cold_cache_method`.
    fn describe(&self) -> String;
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            out: PathBuf::from("results"),
            filesets: BTreeMap::new(),
            os_threads_per_client: None,
            preflight: true,
            tls: TlsOptions::default(),
            time_scale: 1.0,
            command: Vec::new(),
            repeat: 1,
            clients: Arc::new(InProcess::default()),
            client_cpus: Vec::new(),
            server: None,
            cold_cache: false,
            monitors: Vec::new(),
            cache_evictor: None,
        }
    }
}

/// What the merge of a second knows beyond its results.json row, for the
/// live metrics (docs/metrics.md).
#[derive(Debug, Clone, Copy, Default)]
pub struct MergedSecond<'a> {
    /// The HDR histogram of the second's successful requests, every
    /// client's summed: it holds exactly the second's `requests`. `None`
    /// when a client sent only its percentiles (then it would hold fewer).
    pub latency: Option<&'a hdrhistogram::Histogram<u64>>,
    /// Requests sent and not yet answered at the second's end, every
    /// client's (0 from agents that predate it).
    pub in_flight: u64,
}

/// What the caller sees while a suite runs (progress display).
pub trait Observer {
    fn mix_started(&mut self, _mix: &Mix, _phase: &str) {}
    /// With `repeat` above 1: run `repeat` of `of` of the mix starts (called
    /// before its `mix_started`; `mix_finished` follows each run).
    fn repeat_started(&mut self, _mix: &Mix, _repeat: u32, _of: u32) {}
    /// A second of the mix completed on every running client, merged: its
    /// counts summed, its percentiles from the merged histograms.
    fn second(&mut self, _mix: &Mix, _second: &SecondResult) {}
    /// The same second with what only the live metrics use (the merged
    /// histogram, the requests in flight); the controller calls this one.
    /// By default: [`Observer::second`].
    fn second_merged(&mut self, mix: &Mix, second: &SecondResult, _merged: &MergedSecond<'_>) {
        self.second(mix, second)
    }
    fn mix_finished(&mut self, _result: &MixResult) {}
    /// The results directory was rewritten (after every mix, and at the end).
    fn results_written(&mut self, _results: &Results) {}
    fn note(&mut self, _message: &str) {}
}

/// An observer that shows nothing.
#[derive(Debug, Default)]
pub struct Quiet;
impl Observer for Quiet {}
