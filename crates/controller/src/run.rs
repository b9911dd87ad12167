//! Running a suite: mix after mix, every participating client started at
//! the same instant (each after its random delay), only the measurement
//! window counted, all clients stopped at the mix's end, results written
//! as each mix ends.

use crate::driver::{ClientDriver, ClientPool, DriverError, InProcess};
use crate::machine::CpuTicks;
use crate::measure::{request_kinds, FiguresOf, OpenLoopOf};
use crate::peak::{PeakSearch, SearchLimits, Step};
use crate::plan::{ClientPlan, UrlList, UrlSpec};
use benchlab_engine::{
    probe_from, share_warning, sys, Arrival, ClassPlan, ClassStats, ClientReport, ConnCounters, ConnectionPolicy,
    Expect, Load, OpenLoop, Second, Stats, Stop, Target, TlsOptions, UrlPlan,
};
use benchlab_model::{ClassKind, Mix, Suite, Validate};
use benchlab_monitor::MonitorSource;
use benchlab_results::resources::*;
use benchlab_results::*;
use benchlab_rng::SplitMix64;
use hdrhistogram::Histogram;
use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

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

/// Makes the server's page cache cold without root (see
/// `benchlab_lab::cache`).
pub trait CacheEvictor: std::fmt::Debug + Send + Sync {
    /// Evicts; returns a line for the progress display.
    fn evict(&self) -> Result<String, String>;
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

/// What the caller sees while a suite runs (progress display).
pub trait Observer {
    fn mix_started(&mut self, _mix: &Mix, _phase: &str) {}
    /// With `repeat` above 1: run `repeat` of `of` of the mix starts (called
    /// before its `mix_started`; `mix_finished` follows each run).
    fn repeat_started(&mut self, _mix: &Mix, _repeat: u32, _of: u32) {}
    /// A second of the mix completed on every running client, merged: its
    /// counts summed, its percentiles from the merged histograms.
    fn second(&mut self, _mix: &Mix, _second: &SecondResult) {}
    fn mix_finished(&mut self, _result: &MixResult) {}
    /// The results directory was rewritten (after every mix, and at the end).
    fn results_written(&mut self, _results: &Results) {}
    fn note(&mut self, _message: &str) {}
}

/// An observer that shows nothing.
#[derive(Debug, Default)]
pub struct Quiet;
impl Observer for Quiet {}

/// A phase's URLs, resolved once and shared by its mixes.
struct PhasePlan {
    /// As sent to the clients, once per phase.
    list: Arc<UrlList>,
    /// Resolved here, for the preflight and the source-address checks.
    urls: Arc<[UrlPlan]>,
    classes: Vec<ClassPlan>,
    /// Per class: name, kind, SPI, percent, drawn from a file set.
    class_info: Vec<(String, ClassKind, Option<String>, f64, bool)>,
    /// Classes that say `http = "2"` (bit i: class i).
    h2_classes: u64,
}

fn resolve_phase(
    suite: &Suite,
    workload: &str,
    target: &str,
    filesets: &BTreeMap<String, PathBuf>,
) -> Result<PhasePlan, ControllerError> {
    let w = suite
        .workloads
        .get(workload)
        .ok_or_else(|| ControllerError::Input(format!("unknown workload `{workload}`")))?;
    let mut urls = Vec::new();
    let mut classes = Vec::new();
    let mut class_info = Vec::new();
    let mut h2_classes = 0u64;
    for (ci, c) in w.classes.iter().enumerate() {
        if c.http2 {
            if ci >= 64 {
                return Err(ControllerError::Input(format!(
                    "class {}: `http = \"2\"` is supported on the first 64 classes of a workload",
                    c.name
                )));
            }
            h2_classes |= 1 << ci;
        }
        let resolved = c.resolve(target, filesets).map_err(ControllerError::Input)?;
        classes.push(ClassPlan { name: c.name.clone() });
        let from_fileset = matches!(c.source, benchlab_model::UrlSource::Fileset(_));
        class_info.push((c.name.clone(), c.kind, c.spi.clone(), c.percent, from_fileset));
        for r in resolved {
            let validate = c.validate.unwrap_or(if r.size.is_some() {
                Validate::Size
            } else {
                Validate::Status
            });
            let expect = match (validate, r.size, r.xxh3) {
                (Validate::Checksum, Some(size), Some(xxh3)) => Expect::Checksum { size, xxh3 },
                (Validate::Size | Validate::Checksum, Some(size), _) => Expect::Size(size),
                _ => Expect::Status,
            };
            urls.push(UrlSpec {
                url: r.url,
                weight: c.percent / 100.0 * r.weight,
                class: ci,
                expect_status: c.expect_status,
                expect,
            });
        }
    }
    let list = UrlList::new(classes.clone(), urls);
    // A host that does not resolve is a run that cannot be made (the
    // network's or resolver's state), not a mistake in the suite.
    let urls = list.resolve().map_err(|e| match e {
        benchlab_engine::PlanError::Resolve { .. } => ControllerError::Target(e.to_string()),
        _ => ControllerError::Input(e.to_string()),
    })?;
    Ok(PhasePlan {
        list: Arc::new(list),
        urls,
        classes,
        class_info,
        h2_classes,
    })
}

/// URLs of a class the preflight requests: every listed URL (up to 1,000),
/// and for a file-set class 16 spread evenly over the manifest (first and
/// last included), so a server missing part of a large set is caught.
fn preflight_sample(urls: &[UrlPlan], class: usize, from_fileset: bool) -> Vec<usize> {
    let idx: Vec<usize> = (0..urls.len()).filter(|&i| urls[i].class == class).collect();
    let want = if from_fileset { 16 } else { 1000 };
    if idx.len() <= want {
        return idx;
    }
    let mut pick: Vec<usize> = (0..want).map(|k| idx[k * (idx.len() - 1) / (want - 1)]).collect();
    pick.dedup();
    pick
}

/// One request per URL of the phase (a sample of a file-set class),
/// checking status, size and checksum before any load.
fn preflight(
    plan: &PhasePlan,
    source: Option<IpAddr>,
    tls: &TlsOptions,
    http2: bool,
    observer: &mut dyn Observer,
) -> Result<(), ControllerError> {
    let mut checked = 0;
    for (class, info) in plan.class_info.iter().enumerate() {
        for i in preflight_sample(&plan.urls, class, info.4) {
            let u = &plan.urls[i];
            checked += 1;
            // Over HTTP/2 when every mix of the phase speaks it, or the
            // class does: an h2c listener answers nothing else.
            let r = if http2 || (class < 64 && plan.h2_classes & (1 << class) != 0) {
                benchlab_engine::h2::probe_h2(&u.target, source, &[], tls, Duration::from_secs(10))
            } else {
                probe_from(&u.target, source, &[], tls, Duration::from_secs(10))
            };
            let r = r.map_err(|e| {
                // A TLS failure says what to try itself.
                let advice = if e.kind == benchlab_engine::ErrorKind::Tls {
                    ""
                } else {
                    "; is the target running and is it what the suite expects?"
                };
                ControllerError::Target(format!("preflight: GET {} failed: {e}{advice}", u.target.url))
            })?;
            if r.status != u.expect_status {
                // nginx answers a plain request on its TLS port with 400.
                let tls_port = if r.status == 400 && u.target.scheme == benchlab_engine::Scheme::Http {
                    "; a 400 to http:// can mean that the port speaks TLS: try https://"
                } else {
                    ""
                };
                return Err(ControllerError::Target(format!(
                    "preflight: GET {} returned status {}, expected {} — the target does not serve what the suite expects \
                     (wrong --target, file set not installed, or SPICE endpoint missing){tls_port}",
                    u.target.url, r.status, u.expect_status
                )));
            }
            match u.expect {
                Expect::Size(size) | Expect::Checksum { size, .. } if size != r.body_bytes => {
                    return Err(ControllerError::Target(format!(
                        "preflight: GET {} returned {} body bytes, the workload expects {size} — \
                         is the target serving the same file set?",
                        u.target.url, r.body_bytes
                    )));
                }
                Expect::Checksum { xxh3, .. } if xxh3 != r.xxh3 => {
                    return Err(ControllerError::Target(format!(
                        "preflight: GET {}: the body's checksum differs from the manifest's — is the target serving \
                         the same file set (same seed)?",
                        u.target.url
                    )));
                }
                _ => {}
            }
        }
    }
    observer.note(&format!(
        "preflight: {} checked",
        benchlab_format::plural(checked, "URL", "URLs")
    ));
    Ok(())
}

fn environment(target: &str, opts: &RunOptions) -> Environment {
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .map(|s| s.trim().to_string())
            .unwrap_or_default()
    };
    let cpu = read("/proc/cpuinfo")
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
        .unwrap_or_default();
    Environment {
        benchlab_version: env!("CARGO_PKG_VERSION").to_string(),
        host: read("/proc/sys/kernel/hostname"),
        kernel: read("/proc/sys/kernel/osrelease"),
        cpu,
        cores: sys::usable_cpus(),
        target: target.to_string(),
        started_unix: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0),
        command: opts.command.clone(),
        time_scale: opts.time_scale,
        host_facts: Some(benchlab_results::HostFacts::gather()),
        client_cpus: opts.client_cpus.clone(),
        server: opts.server.clone(),
        cold_cache: opts.cold_cache,
        agents: opts.clients.agents(),
        cold_cache_method: opts.cold_cache.then(|| match &opts.cache_evictor {
            Some(e) => e.describe(),
            None => "sync; echo 3 > /proc/sys/vm/drop_caches (the whole machine's page cache, dentries and inodes)"
                .to_owned(),
        }),
    }
}

fn is_loopback(t: &Target) -> bool {
    t.addr.ip().is_loopback()
}

/// A suite's phases resolved to URLs (every file set read), before any
/// request: what [`run_prepared`] loads.
pub struct Prepared {
    phases: Vec<PhasePlan>,
}

/// Resolves the URLs of every phase of `suite` (its file sets with
/// `opts.filesets` over the suite's own) without a request. Every problem of
/// every phase is reported at once, one per line, so a run never stops at
/// phase 3 for an input that was missing from the start.
pub fn prepare(suite: &Suite, opts: &RunOptions) -> Result<Prepared, ControllerError> {
    let mut filesets = suite.filesets.clone();
    filesets.extend(opts.filesets.clone());
    let mut phases = Vec::with_capacity(suite.phases.len());
    let mut problems: Vec<String> = Vec::new();
    // Only hosts that did not resolve: the run cannot be made, though the
    // suite is right (exit 1, not a usage error).
    let mut only_unreachable = true;
    for p in &suite.phases {
        match resolve_phase(suite, &p.workload, &p.target, &filesets) {
            Ok(plan) => phases.push(plan),
            Err(e) => {
                only_unreachable &= matches!(e, ControllerError::Target(_));
                let e = format!("phase {}: {e}", p.name);
                if !problems.contains(&e) {
                    problems.push(e);
                }
            }
        }
    }
    if !problems.is_empty() {
        let all = problems.join("\n");
        return Err(if only_unreachable {
            ControllerError::Target(all)
        } else {
            ControllerError::Input(all)
        });
    }
    Ok(Prepared { phases })
}

/// Directories of `--out` this run made, removed again if the run ends
/// before its first mix, so a refused run leaves nothing behind.
struct OutDir {
    created: Vec<PathBuf>,
}

impl OutDir {
    fn create(dir: &std::path::Path) -> std::io::Result<OutDir> {
        let mut missing = Vec::new();
        let mut d = Some(dir);
        while let Some(p) = d.filter(|p| !p.as_os_str().is_empty() && !p.exists()) {
            missing.push(p.to_path_buf());
            d = p.parent();
        }
        std::fs::create_dir_all(dir)?;
        Ok(OutDir { created: missing })
    }

    /// Removes the directories made (deepest first), only while empty.
    fn discard(self) {
        for d in &self.created {
            let _ = std::fs::remove_dir(d);
        }
    }
}

/// The local address client `c` (0-based) loads from: with the suite's
/// `client_addresses` and a loopback target, 127.0.0.(c + 1) for the first
/// 254 clients; otherwise the kernel's choice.
fn client_address(suite: &Suite, phase: &PhasePlan, c: usize) -> Option<IpAddr> {
    let loopback = phase.urls.first().is_some_and(|u| is_loopback(&u.target));
    (suite.client_addresses && loopback && c < 254).then(|| IpAddr::V4(Ipv4Addr::new(127, 0, 0, (c + 1) as u8)))
}

/// Binds every client address a phase's mixes will load from, so one this
/// machine lacks stops the run before any load, naming it.
fn check_client_addresses(suite: &Suite, phase_index: usize, phase: &PhasePlan) -> Result<(), ControllerError> {
    let clients = suite
        .mixes
        .iter()
        .filter(|m| m.phase == phase_index)
        .map(|m| m.clients as usize)
        .max()
        .unwrap_or(0);
    let sources: Vec<IpAddr> = (0..clients).filter_map(|c| client_address(suite, phase, c)).collect();
    let targets: Vec<_> = phase.urls.iter().map(|u| u.target.addr).collect();
    sys::check_source_addresses(&sources, &targets).map_err(ControllerError::Target)
}

/// Runs every mix of `suite`; returns the results (also written to
/// `opts.out` after each mix). `stop` (Ctrl-C) ends the current mix early
/// (kept, marked partial) and skips the rest.
pub fn run_suite(
    suite: &Suite,
    opts: &RunOptions,
    stop: &Arc<AtomicBool>,
    observer: &mut dyn Observer,
) -> Result<Results, ControllerError> {
    let prepared = prepare(suite, opts)?;
    run_prepared(prepared, suite, opts, stop, observer)
}

/// [`run_suite`] with the phases already resolved by [`prepare`]. Every
/// phase is preflighted before the first mix; nothing is written to
/// `opts.out` until a mix has run: a run refused before its first mix
/// leaves no results directory.
pub fn run_prepared(
    prepared: Prepared,
    suite: &Suite,
    opts: &RunOptions,
    stop: &Arc<AtomicBool>,
    observer: &mut dyn Observer,
) -> Result<Results, ControllerError> {
    run_inner(prepared, suite, opts, None, stop, observer)
}

/// [`run_prepared`] with `--find-peak`: per phase, the phase's first mix is
/// run at the loads [`PeakSearch`] picks (from `start_threads` per client,
/// or the mix's own threads per client without it; its clients kept),
/// instead of the suite's mixes. Each phase's
/// mixes are kept in load order (renumbered after every mix), each marked
/// with the step that ran it, and the phase's result says why growing
/// stopped and where the peak and the useful peak are.
pub fn run_prepared_search(
    prepared: Prepared,
    suite: &Suite,
    opts: &RunOptions,
    limits: &SearchLimits,
    start_threads: Option<u32>,
    stop: &Arc<AtomicBool>,
    observer: &mut dyn Observer,
) -> Result<Results, ControllerError> {
    run_inner(prepared, suite, opts, Some((limits, start_threads)), stop, observer)
}

fn run_inner(
    prepared: Prepared,
    suite: &Suite,
    opts: &RunOptions,
    search: Option<(&SearchLimits, Option<u32>)>,
    stop: &Arc<AtomicBool>,
    observer: &mut dyn Observer,
) -> Result<Results, ControllerError> {
    let phases = prepared.phases;
    // Check every phase before the first mix, so a wrong target stops the
    // run in seconds, not after an hour of mixes; every phase's problem is
    // reported, not only the first.
    // Every client address a phase loads from is bound first (one this
    // machine lacks is named), and the preflight comes from the first
    // client's address, as its load will.
    let mut problems = Vec::new();
    for (i, (plan, p)) in phases.iter().zip(&suite.phases).enumerate() {
        let checked = check_client_addresses(suite, i, plan).and_then(|()| {
            if opts.preflight {
                let http2 = !p.mixes.is_empty() && p.mixes.iter().all(|&m| suite.mixes[m].params.http2);
                preflight(plan, client_address(suite, plan, 0), &opts.tls, http2, observer)
            } else {
                Ok(())
            }
        });
        if let Err(e) = checked {
            problems.push(if suite.phases.len() > 1 {
                format!("phase {}: {e}", p.name)
            } else {
                e.to_string()
            });
        }
    }
    if !problems.is_empty() {
        return Err(ControllerError::Target(problems.join("\n")));
    }
    // Each phase's URL list goes to the clients once, before any mix.
    for plan in &phases {
        opts.clients
            .load_urls(&plan.list)
            .map_err(|e| ControllerError::Target(format!("cannot hand the URL list to the clients: {e}")))?;
    }
    // The suite's text, recorded in results.json as it was run (read
    // with the suite's own bound: it was parsed from this file already).
    let text = benchlab_model::input::read_bounded_text(&suite.path, "suite", benchlab_model::input::MAX_SUITE_BYTES)
        .unwrap_or_default();
    let mut results = Results {
        schema: RESULTS_SCHEMA.to_string(),
        suite: SuiteInfo {
            name: suite.name.clone(),
            description: suite.description.clone(),
            file: suite.path.display().to_string(),
            seed: suite.seed,
            max_clients: suite.max_clients,
            price: suite.price,
            text,
        },
        environment: environment(&suite.target, opts),
        phases: suite
            .phases
            .iter()
            .map(|p| PhaseResult {
                name: p.name.clone(),
                workload: p.workload.clone(),
                target: p.target.clone(),
                mixes: if search.is_some() {
                    Vec::new()
                } else {
                    p.mixes.iter().map(|&i| suite.mixes[i].number).collect()
                },
                search: None,
            })
            .collect(),
        mixes: Vec::new(),
        complete: false,
    };
    let write = |r: &Results| {
        // Remote agents' clock checks grow mix by mix.
        let agents = opts.clients.agents();
        let with_agents;
        let r = if agents.is_empty() {
            r
        } else {
            with_agents = Results {
                environment: Environment {
                    agents,
                    ..r.environment.clone()
                },
                ..r.clone()
            };
            &with_agents
        };
        write_results(&opts.out, r).map_err(|source| ControllerError::Write {
            dir: opts.out.display().to_string(),
            source,
        })
    };
    // Made now (an unwritable --out is refused before any load), written
    // after the first mix.
    let out_dir = OutDir::create(&opts.out).map_err(|source| ControllerError::Write {
        dir: opts.out.display().to_string(),
        source,
    })?;
    let mut out_dir = Some(out_dir);

    if let Some((limits, start_threads)) = search {
        let mut searched = 0;
        for (pi, phase) in suite.phases.iter().enumerate() {
            let Some(&first) = phase.mixes.first() else {
                continue;
            };
            if stop.load(Ordering::Relaxed) {
                break;
            }
            let base = &suite.mixes[first];
            let from = results.mixes.len();
            let start = start_threads.unwrap_or(base.params.threads_per_client);
            let mut peak = PeakSearch::new(u64::from(start), limits.clone());
            let mut step = 0;
            while let Some((load, kind)) = peak.next_load() {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                let mut mix = base.clone();
                mix.number = results.mixes.len() + 1;
                mix.params.threads_per_client = u32::try_from(load).unwrap_or(u32::MAX);
                // A load this system cannot hold ends the growth, not the
                // run: the loads below it are measured.
                let loopback = phases[pi].urls.first().is_some_and(|u| is_loopback(&u.target));
                let own = if suite.client_addresses && loopback {
                    mix.clients as usize
                } else {
                    0
                };
                if let Err(why) = sys::check_capacity(mix.threads(), own) {
                    observer.note(&format!("peak search ({}): {why}", phase.name));
                    peak.stop_growing(format!("{} threads per client cannot be run here", load));
                    continue;
                }
                step += 1;
                let step = Some(SearchStepResult { step, kind });
                let result = match run_repeats(suite, &mix, &phase.name, &phases[pi], opts, step, stop, observer) {
                    Ok(r) => r,
                    Err(e) => {
                        if let Some(d) = out_dir.take() {
                            d.discard();
                        }
                        return Err(e);
                    }
                };
                let f = &result.figures;
                peak.record(Step::of(
                    load,
                    f.requests_per_sec,
                    f.latency_us.p99,
                    f.requests,
                    f.errors_total,
                ));
                let partial = result.partial;
                results.mixes.push(result);
                in_load_order(&mut results.mixes, from);
                results.phases[pi].mixes = results.mixes[from..].iter().map(|m| m.mix).collect();
                results.phases[pi].search = Some(search_result(&peak, start, limits, &results.mixes[from..]));
                out_dir = None;
                write(&results)?;
                observer.results_written(&results);
                if partial {
                    break;
                }
            }
            if !stop.load(Ordering::Relaxed) {
                searched += 1;
            }
        }
        if let Some(d) = out_dir {
            d.discard();
            return Ok(results);
        }
        let phases_to_search = suite.phases.iter().filter(|p| !p.mixes.is_empty()).count();
        results.complete = searched == phases_to_search && results.mixes.iter().all(|m| all_runs(m, opts));
        write(&results)?;
        observer.results_written(&results);
        return Ok(results);
    }
    for mix in &suite.mixes {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let phase = &suite.phases[mix.phase];
        let result = match run_repeats(suite, mix, &phase.name, &phases[mix.phase], opts, None, stop, observer) {
            Ok(r) => r,
            Err(e) => {
                if let Some(d) = out_dir.take() {
                    d.discard();
                }
                return Err(e);
            }
        };
        results.mixes.push(result);
        out_dir = None;
        write(&results)?;
        observer.results_written(&results);
    }
    if let Some(d) = out_dir {
        // Stopped (Ctrl-C) before the first mix: nothing to keep.
        d.discard();
        return Ok(results);
    }
    results.complete = results.mixes.len() == suite.mixes.len() && results.mixes.iter().all(|m| all_runs(m, opts));
    write(&results)?;
    observer.results_written(&results);
    Ok(results)
}

/// A mix ran to its end as often as `--repeat` asked.
fn all_runs(m: &MixResult, opts: &RunOptions) -> bool {
    !m.partial && m.repeats.as_ref().map_or(1, |r| r.runs.len()) >= opts.repeat.max(1) as usize
}

/// Runs `mix` `opts.repeat` times back to back (each run told to the
/// observer, marked with the search `step` that chose it) and folds the
/// runs into one result: the median run by requests/s, with every run's
/// figures. Back to back keeps the suite's rising load (the server never
/// drops from an overloaded mix to a light one and measures its recovery)
/// and lets `--find-peak` decide each step on the median. A stop (Ctrl-C)
/// ends the repeats; a partial run is kept only when no run of the mix
/// finished.
#[allow(clippy::too_many_arguments)]
fn run_repeats(
    suite: &Suite,
    mix: &Mix,
    phase_name: &str,
    phase: &PhasePlan,
    opts: &RunOptions,
    step: Option<SearchStepResult>,
    stop: &Arc<AtomicBool>,
    observer: &mut dyn Observer,
) -> Result<MixResult, ControllerError> {
    let of = opts.repeat.max(1);
    let mut runs = Vec::with_capacity(of as usize);
    for repeat in 1..=of {
        if repeat > 1 && stop.load(Ordering::Relaxed) {
            break;
        }
        if of > 1 {
            observer.repeat_started(mix, repeat, of);
        }
        if opts.cold_cache {
            let note = match &opts.cache_evictor {
                Some(e) => e.evict(),
                None => drop_page_cache().map(|()| "cold cache: page cache dropped".to_owned()),
            }
            .map_err(|e| ControllerError::Target(format!("--cold-cache: {e}")))?;
            observer.note(&note);
        }
        observer.mix_started(mix, phase_name);
        let mut result = run_mix(suite, mix, phase_name, phase, opts, stop, observer)?;
        result.search = step.clone();
        observer.mix_finished(&result);
        if result.partial && !runs.is_empty() {
            break;
        }
        let partial = result.partial;
        runs.push(result);
        if partial {
            break;
        }
    }
    fold_repeats(runs).ok_or_else(|| ControllerError::Input("a mix ran no time".into()))
}

/// Writes dirty pages out, then drops the clean ones, the dentries and the
/// inodes (`sync; echo 3 > /proc/sys/vm/drop_caches`): what the server
/// serves next comes from the disk. Needs root.
pub fn drop_page_cache() -> Result<(), String> {
    // SAFETY: sync(2) takes no arguments and cannot fail.
    unsafe { libc::sync() };
    std::fs::write("/proc/sys/vm/drop_caches", "3\n").map_err(|e| {
        format!("cannot drop the page cache (/proc/sys/vm/drop_caches: {e}); it needs root (and a writable /proc/sys)")
    })
}

/// Sorts the mixes from index `from` on (one phase's search) by load, the
/// earlier step first on equal loads, and renumbers them from `from + 1`.
fn in_load_order(mixes: &mut [MixResult], from: usize) {
    let phase = &mut mixes[from..];
    phase.sort_by_key(|m| (m.threads, m.search.as_ref().map_or(0, |s| s.step)));
    for (i, m) in phase.iter_mut().enumerate() {
        m.mix = from + i + 1;
    }
}

/// What a phase's search found, its steps mapped to the mixes (`mixes`: the
/// phase's, each with its step).
fn search_result(peak: &PeakSearch, start: u32, limits: &SearchLimits, mixes: &[MixResult]) -> PhaseSearchResult {
    let mix_of = |i: usize| {
        mixes
            .iter()
            .find(|m| m.search.as_ref().is_some_and(|s| s.step as usize == i + 1))
            .map(|m| (m.mix, m.figures.requests_per_sec))
    };
    let peak_mix = peak.peak().and_then(mix_of);
    let useful = peak.useful_peak().and_then(mix_of);
    PhaseSearchResult {
        start_threads_per_client: u64::from(start),
        tolerance_percent: round(limits.tolerance * 100.0, 3),
        max_p99_us: limits.max_p99_us,
        max_error_percent: round(limits.max_error_share * 100.0, 3),
        max_threads_per_client: limits.max_load,
        stopped: peak.stop_reason().unwrap_or_default().to_string(),
        peak_mix: peak_mix.map(|p| p.0),
        peak_requests_per_sec: peak_mix.map(|p| p.1),
        useful_peak_mix: useful.map(|p| p.0),
        useful_peak_requests_per_sec: useful.map(|p| p.1),
    }
}

fn run_mix(
    suite: &Suite,
    mix: &Mix,
    phase_name: &str,
    phase: &PhasePlan,
    opts: &RunOptions,
    stop: &Arc<AtomicBool>,
    observer: &mut dyn Observer,
) -> Result<MixResult, ControllerError> {
    let clients = mix.clients as usize;
    let os_threads = opts
        .os_threads_per_client
        .unwrap_or_else(|| (sys::usable_cpus() / clients).max(1))
        .max(1);
    let loopback = phase.urls.first().is_some_and(|u| is_loopback(&u.target));
    sys::check_capacity(
        mix.clients as u64 * mix.slots_per_client() as u64,
        if suite.client_addresses && loopback { clients } else { 0 },
    )
    .map_err(ControllerError::Target)?;
    let plans = client_plans(suite, mix, phase, opts, os_threads);
    // This thread merges the clients' seconds while they run: its CPU is
    // the generator's too.
    let controller_cpu0 = sys::cpu_time(true);
    let machine0 = CpuTicks::now();
    opts.clients
        .clients_left(clients)
        .map_err(|e| ControllerError::ClientsLost {
            mix: mix.number,
            why: e.to_string(),
        })?;
    // Every client starts at the same wall-clock instant (after its own
    // delay); give the threads time to be created first.
    let lead = opts
        .clients
        .before_mix()
        .map_err(|source| ControllerError::Driver { client: 1, source })?;
    let start_at = SystemTime::now() + Duration::from_millis(100 + 2 * clients as u64) + lead;
    let driven = drive_mix(&*opts.clients, &plans, mix.window(), start_at, stop, &mut |s| {
        observer.second(mix, s)
    })?;
    let reports: Vec<&ClientReport> = driven.reports().collect();
    // The counts say how many handshakes failed; this says why.
    if let Some(why) = reports.iter().find_map(|r| r.tls_error.as_deref()) {
        observer.note(&format!("mix {}: TLS handshakes failed; the first: {why}", mix.number));
    }
    let lost: usize = reports.iter().map(|r| r.threads_lost).sum();
    if lost > 0 {
        observer.note(&format!(
            "mix {}: {} ended abnormally (a benchlab bug, please report it); its figures are missing from this mix",
            mix.number,
            benchlab_format::plural(lost as u64, "worker thread", "worker threads")
        ));
    }
    let controller_cpu = {
        let (u, s) = sys::cpu_time(true);
        (u.saturating_sub(controller_cpu0.0), s.saturating_sub(controller_cpu0.1))
    };
    // The cores the generator may use: each client's OS threads (never more
    // than its virtual users), within the CPUs this process may run on.
    let cores = (clients * os_threads.min(mix.slots_per_client() as usize))
        .min(sys::usable_cpus())
        .max(1);
    let machine_busy = machine0.zip(CpuTicks::now()).and_then(|(a, b)| a.busy_share(b));
    // A server on this machine (any loopback URL) shares its CPUs.
    let co_located = phase.urls.iter().any(|u| is_loopback(&u.target));
    let mut result = mix_result(mix, phase_name, phase, &plans, &driven);
    result.client_cpu = generator_cpu(&reports, controller_cpu, cores).with_machine(machine_busy, co_located);
    if !opts.monitors.is_empty() {
        let generator = GeneratorCores {
            cpus: opts.client_cpus.iter().map(|&c| c as u32).collect(),
            busy_percent: machine_busy.map(|b| b * 100.0),
        };
        let from = start_at + mix.window().0;
        let resources = mix_resources(&opts.monitors, from, &result, co_located, &generator);
        for h in &resources.hosts {
            if h.seconds.is_empty() {
                observer.note(&format!(
                    "mix {}: no sample of {} ({}) inside the window",
                    mix.number, h.host, h.source
                ));
            }
        }
        for m in opts.monitors.iter() {
            if let Some(e) = m.error() {
                observer.note(&format!("mix {}: monitoring {}: {e}", mix.number, m.host()));
            }
        }
        observer.note(&format!("mix {}: {}", mix.number, resources.verdict.summary));
        result.resources = Some(resources);
    }
    // A mix of connection kinds: show the shares it got.
    let kinds: Vec<String> = benchlab_engine::ConnectionKind::ALL
        .iter()
        .filter_map(|k| result.request_kinds.get(k.name()).map(|f| (k, f)))
        .filter(|(_, f)| f.requests > 0 || f.configured_percent > 0.0)
        .map(|(k, f)| {
            format!(
                "{} {:.2} % (configured {:.0} %)",
                k.label(),
                f.percent,
                f.configured_percent
            )
        })
        .collect();
    if kinds.len() > 1 {
        observer.note(&format!(
            "mix {}: requests by connection kind: {}",
            mix.number,
            kinds.join(", ")
        ));
    }
    for w in &result.warnings {
        observer.note(&format!("warning: mix {}: {w}", mix.number));
    }
    Ok(result)
}

/// The monitored hosts' seconds of a mix's window (from `from`, the wall
/// clock of its start, for the window measured) and the verdict on what
/// limited the mix. A sample covers the second before its time stamp, so
/// the window's seconds are those stamped from half a second after its
/// start to half a second after its end; the call waits (at most 2.5 s)
/// for the sample that closes the window.
fn mix_resources(
    monitors: &[Arc<dyn MonitorSource>],
    from: SystemTime,
    result: &MixResult,
    one_box: bool,
    generator: &GeneratorCores,
) -> MixResources {
    let to = from + Duration::from_secs_f64(result.window_s.max(0.0));
    let half = Duration::from_millis(500);
    let done = result.figures.requests + result.figures.errors_total;
    let hosts: Vec<HostResources> = monitors
        .iter()
        .map(|m| {
            let waited = std::time::Instant::now();
            while m.window(to, to + Duration::from_secs(3600)).is_empty()
                && m.error().is_none()
                && waited.elapsed() < Duration::from_millis(2500)
            {
                std::thread::sleep(Duration::from_millis(50));
            }
            let seconds = m.window(from + half, to + half);
            let average = HostSample::mean(&seconds);
            let context_switches_per_request = average
                .as_ref()
                .filter(|_| done > 0 && result.window_s > 0.0)
                .map(|a| round(a.context_switches_per_sec * result.window_s / done as f64, 3));
            HostResources {
                host: m.host(),
                role: if one_box {
                    HostRole::ServerAndClient
                } else {
                    HostRole::Server
                },
                source: m.source(),
                seconds,
                average,
                context_switches_per_request,
            }
        })
        .collect();
    let verdict = verdict(
        hosts.first().and_then(|h| h.average.as_ref()),
        one_box,
        &result.client_cpu,
        generator,
    );
    MixResources { hosts, verdict }
}

/// Every client's plan for `mix`, in client-number order: its random
/// WebBench delay and its seed drawn from the suite's seed and the mix's
/// number (the same suite gives the same delays), its source address.
fn client_plans(suite: &Suite, mix: &Mix, phase: &PhasePlan, opts: &RunOptions, os_threads: usize) -> Vec<ClientPlan> {
    let p = &mix.params;
    let clients = mix.clients as usize;
    let mut rng = SplitMix64::new(suite.seed ^ (mix.number as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    (0..clients)
        .map(|c| {
            let start_delay = if p.delay.is_zero() {
                Duration::ZERO
            } else {
                Duration::from_nanos(rng.below(p.delay.as_nanos() as u64 + 1))
            };
            let load = match p.rate {
                // The mix's rate, shared evenly by its clients.
                Some(rate) => Load::Open(OpenLoop {
                    rate: rate / clients as f64,
                    arrival: match p.arrival {
                        benchlab_model::Arrival::Constant => Arrival::Constant,
                        benchlab_model::Arrival::Poisson => Arrival::Poisson,
                    },
                    max_in_flight: p.max_in_flight,
                }),
                None => Load::Closed,
            };
            ClientPlan {
                urls: phase.list.id.clone(),
                settings: benchlab_engine::ClientSettings {
                    virtual_users: p.threads_per_client,
                    load,
                    os_threads,
                    stop: Stop::After(p.length),
                    window: mix.window(),
                    start_delay,
                    think_time: p.think_time,
                    ramp_up: Duration::ZERO,
                    timeout: p.timeout,
                    connection: ConnectionPolicy {
                        http10_percent: p.http10_percent,
                        http10_keepalive: p.http10_keepalive,
                        persistent_percent: p.persistent_percent,
                        requests_per_connection: p.requests_per_connection,
                    },
                    receive_buffer: p.receive_buffer,
                    headers: Vec::new(),
                    source_addresses: client_address(suite, phase, c).into_iter().collect(),
                    tls: opts.tls.clone(),
                    seed: rng.next_u64(),
                    // A mix's `http = "2"` makes every class HTTP/2; otherwise
                    // the classes that say so are (the client splits its users).
                    http2: (p.http2 || phase.h2_classes != 0).then(|| benchlab_engine::H2Plan {
                        connections: mix.slots_per_client().div_ceil(p.streams_per_connection),
                        streams: p.streams_per_connection,
                        window: benchlab_engine::H2Plan::DEFAULT_WINDOW,
                        classes: if p.http2 { 0 } else { phase.h2_classes },
                    }),
                },
            }
        })
        .collect()
}

/// How one client of a mix ended.
#[derive(Debug)]
pub enum ClientEnd {
    /// It ran to the end (or was stopped) and reported.
    Finished(ClientReport),
    /// It was lost mid-mix: `window` holds the seconds it sent inside the
    /// measurement window (`seconds` of them), kept apart from the mix.
    Lost {
        /// What happened, in words.
        why: String,
        window: Box<ClassStats>,
        conn: ConnCounters,
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
            ClientEnd::Finished(r) => Some(r),
            ClientEnd::Lost { .. } => None,
        })
    }
}

/// One client's seconds inside the window, summed: its figures if it is
/// lost. The histogram grows with the latencies seen (a full-range one is
/// ~190 KB, kept per client).
struct Apart {
    counters: benchlab_engine::Counters,
    conn: ConnCounters,
    latency: Histogram<u64>,
    seconds: u32,
}

impl Apart {
    fn new() -> Apart {
        Apart {
            counters: Default::default(),
            conn: Default::default(),
            latency: Histogram::new(3).expect("3 significant digits is valid"),
            seconds: 0,
        }
    }

    fn add(&mut self, s: &Second, window: (Duration, Duration)) {
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

    fn into_end(self, why: String) -> ClientEnd {
        let mut window = ClassStats {
            counters: self.counters,
            ..ClassStats::default()
        };
        // The full-range histogram holds every value the growing one does.
        let _ = window.latency.add(&self.latency);
        ClientEnd::Lost {
            why,
            window: Box::new(window),
            conn: self.conn,
            seconds: self.seconds,
        }
    }
}

/// Whether second `second` (0-based) lies wholly inside `window`.
fn in_window(second: u32, (from, until): (Duration, Duration)) -> bool {
    let t0 = Duration::from_secs(u64::from(second));
    t0 >= from && t0 + Duration::from_secs(1) <= until
}

/// Merges the clients' seconds as they arrive: a second is complete once
/// every client has sent it or has finished (or was lost); its counts are
/// summed and its percentiles read from the sum of the clients' histograms,
/// so they are those of every request of that second.
struct SecondMerger {
    window: (Duration, Duration),
    /// Per client: the last second it sent, and whether it has finished.
    sent: Vec<Option<u32>>,
    finished: Vec<bool>,
    pending: BTreeMap<u32, Merging>,
    done: Vec<SecondResult>,
}

#[derive(Default)]
struct Merging {
    requests: u64,
    errors: u64,
    bytes: u64,
    conn: u64,
    latency: Option<Histogram<u64>>,
    /// From a client that sent only its summary: the slowest one's.
    summary_p50: u64,
    summary_p99: u64,
    /// The clients' own CPU and worst loop lag.
    load: benchlab_engine::LoopLoad,
}

impl SecondMerger {
    fn new(clients: usize, window: (Duration, Duration)) -> SecondMerger {
        SecondMerger {
            window,
            sent: vec![None; clients],
            finished: vec![false; clients],
            pending: BTreeMap::new(),
            done: Vec::new(),
        }
    }

    fn add(&mut self, client: usize, s: Second) {
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
                m.summary_p50 = m.summary_p50.max(s.latency.p50);
                m.summary_p99 = m.summary_p99.max(s.latency.p99);
            }
        }
    }

    fn finished(&mut self, client: usize) {
        self.finished[client] = true;
    }

    /// The seconds completed since the last call, in order.
    fn release(&mut self) -> &[SecondResult] {
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
        }
        &self.done[from..]
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
    on_second: &mut dyn FnMut(&SecondResult),
) -> Result<Driven, ControllerError> {
    let clients = plans.len();
    let mut drivers: Vec<Box<dyn ClientDriver>> = Vec::with_capacity(clients);
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
        for s in merger.release() {
            on_second(s);
        }
        if all_done {
            break;
        }
    }
    let clients = drivers
        .iter_mut()
        .zip(apart)
        .map(|(d, apart)| match d.finish() {
            Ok(r) => ClientEnd::Finished(r),
            Err(lost) => apart.into_end(lost.why),
        })
        .collect();
    Ok(Driven {
        clients,
        seconds: merger.done,
        partial,
    })
}

/// The generator's CPU over a mix: the CPU time of every client's worker
/// threads (each measured over its own life, which is the mix) plus the
/// controller thread's, over the mix's wall time (start to the last worker's
/// stop). Thread times, not the process's: `benchlab demo` runs the server
/// under test in this same process, and its CPU is not the generator's.
fn generator_cpu(reports: &[&ClientReport], controller: (Duration, Duration), cores: usize) -> ClientCpu {
    let (mut user, mut system) = controller;
    let mut completed = 0;
    for r in reports {
        user += r.cpu_user;
        system += r.cpu_system;
        // Every completion of the mix, ramps included, as the CPU is.
        completed += r
            .seconds
            .iter()
            .map(|s| s.counters.requests + s.counters.errors_total())
            .sum::<u64>();
    }
    let wall = reports.iter().map(|r| r.elapsed).max().unwrap_or_default();
    ClientCpu::measure(user, system, wall, cores, completed)
}

/// Whether a mix measured less than its window: its clients stopped early
/// (every one lost, the controller stopped or suspended), or seconds of
/// the window never came from any client. Such a mix is `partial`: its
/// figures hold, over the shorter time, but it is not the whole mix. A
/// tenth of a second is the slack of a client's own stop.
fn window_cut(window_s: f64, (from, until): (Duration, Duration), seconds: &[SecondResult]) -> bool {
    let planned = until.saturating_sub(from);
    let whole_seconds = (0..=until.as_secs() as u32)
        .filter(|&s| in_window(s, (from, until)))
        .count();
    let in_window = seconds.iter().filter(|s| s.in_window).count();
    window_s + 0.1 < planned.as_secs_f64() || in_window < whole_seconds
}

/// A mix's result from how its clients ended (`plans`: theirs, in client
/// order). A lost client keeps its number and its row, marked out of the
/// mix; its figures are those of the seconds it sent inside the window,
/// and none of them is in the mix's totals, classes or histograms.
fn mix_result(mix: &Mix, phase_name: &str, phase: &PhasePlan, plans: &[ClientPlan], driven: &Driven) -> MixResult {
    let p = &mix.params;
    let (from, until) = mix.window();
    let reports: Vec<&ClientReport> = driven.reports().collect();
    // The window measured: to its end, or to the stop of a partial mix.
    let elapsed = reports.iter().map(|r| r.elapsed).max().unwrap_or_default();
    let window_s = (until.min(elapsed).saturating_sub(from)).as_secs_f64();
    let partial = driven.partial || window_cut(window_s, (from, until), &driven.seconds);
    let mut merged = Stats::new(phase.classes.len());
    let mut client_data = Vec::with_capacity(driven.clients.len());
    let mut in_flight = 0;
    let mut cpu = Duration::ZERO;
    let mut warnings: Vec<String> = Vec::new();
    for (i, end) in driven.clients.iter().enumerate() {
        let plan = plans.get(i);
        let address = plan
            .and_then(|p| p.settings.source_addresses.first())
            .map(|a| a.to_string());
        let delay_s = round(plan.map_or(0.0, |p| p.settings.start_delay.as_secs_f64()), 3);
        let r = match end {
            ClientEnd::Finished(r) => r,
            ClientEnd::Lost {
                why,
                window,
                conn,
                seconds,
            } => {
                warnings.push(format!(
                    "client {} was lost ({why}): it is out of the mix; its figures, from the {} it sent inside \
                     the window, are kept apart in its own row and are not in the mix's",
                    i + 1,
                    benchlab_format::plural(u64::from(*seconds), "second", "seconds")
                ));
                client_data.push(ClientResult {
                    client: i as u32 + 1,
                    address,
                    figures: Figures::of(window, f64::from(*seconds)),
                    connections_opened: conn.connections_opened,
                    in_flight: 0,
                    delay_s,
                    taken_out: true,
                    lost: Some(why.clone()),
                    cpu_s: 0.0,
                    loop_lag_max_us: 0,
                    seconds: Vec::new(),
                });
                continue;
            }
        };
        merged.add(&r.stats);
        in_flight += r.in_flight;
        cpu += r.cpu_user + r.cpu_system;
        let t = r.stats.total();
        let connect_only = t.counters.error(benchlab_engine::ErrorKind::ConnectRefused)
            + t.counters.error(benchlab_engine::ErrorKind::ConnectTimeout);
        let taken_out = t.counters.requests == 0 && connect_only > 0 && connect_only == t.counters.errors_total();
        client_data.push(ClientResult {
            client: i as u32 + 1,
            address,
            figures: Figures::of(&t, window_s),
            connections_opened: r.stats.conn.connections_opened,
            in_flight: r.in_flight,
            delay_s,
            taken_out,
            lost: None,
            cpu_s: round((r.cpu_user + r.cpu_system).as_secs_f64(), 3),
            loop_lag_max_us: r.seconds.iter().map(|s| s.load.loop_lag_max_us).max().unwrap_or(0),
            seconds: r
                .seconds
                .iter()
                .map(|s| ClientSecond {
                    second: s.second + 1,
                    cpu_user_s: round(s.load.cpu_user_us as f64 / 1e6, 4),
                    cpu_system_s: round(s.load.cpu_system_us as f64 / 1e6, 4),
                    loop_lag_max_us: s.load.loop_lag_max_us,
                })
                .collect(),
        });
    }
    let total: ClassStats = merged.total();
    let done_all = total.counters.requests + total.counters.errors_total();
    let classes = merged
        .classes
        .iter()
        .zip(phase.class_info.iter())
        .map(|(s, (name, kind, spi, percent, _))| {
            let done = s.counters.requests + s.counters.errors_total();
            ClassResult {
                name: name.clone(),
                kind: kind.name().to_string(),
                spi: spi.clone(),
                percent: *percent,
                observed_percent: if done_all == 0 {
                    0.0
                } else {
                    round(done as f64 * 100.0 / done_all as f64, 3)
                },
                figures: Figures::of(s, window_s),
            }
        })
        .collect();
    // Per-second series: merged as the clients sent their seconds (a lost
    // client's up to its loss), percentiles from the merged histograms.
    let per_second = driven.seconds.clone();
    let histograms = histograms(&merged, &phase.classes);
    let conn: ConnCounters = merged.conn;
    let policy = ConnectionPolicy {
        http10_percent: p.http10_percent,
        http10_keepalive: p.http10_keepalive,
        persistent_percent: p.persistent_percent,
        requests_per_connection: p.requests_per_connection,
    };
    let shares = policy.request_shares(&conn.requests_by_kind);
    let users_arrived = reports.iter().map(|r| r.users_arrived).sum();
    let users_waiting = reports.iter().map(|r| r.users_waiting).sum();
    warnings.extend(share_warning(&shares, "the mix's `requests_per_connection`"));
    warnings.extend(arrival_warning(
        users_waiting,
        mix.threads(),
        "start users over a longer ramp-up",
    ));
    let peaks: Vec<u64> = reports.iter().map(|r| r.peak_connections).collect();
    let open_loop = p
        .rate
        .map(|rate| OpenLoopResult::measure(rate, p.arrival.name(), p.max_in_flight, &conn, &total, window_s, &peaks));
    warnings.extend(open_loop.as_ref().and_then(|o| o.late_warning("rate", "max_in_flight")));
    MixResult {
        mix: mix.number,
        phase: phase_name.to_string(),
        clients: mix.clients,
        clients_participating: client_data.iter().filter(|c| !c.taken_out).count() as u32,
        threads: mix.threads(),
        partial,
        window_s: round(window_s, 3),
        figures: Figures::of(&total, window_s),
        reconnects: conn.reconnects,
        in_flight,
        connections_opened: conn.connections_opened,
        tls_full_handshakes: conn.tls_full_handshakes,
        tls_resumptions: conn.tls_resumptions,
        client_cpu_s: round(cpu.as_secs_f64(), 3),
        client_cpu: ClientCpu::default(),
        http2: (p.http2 || phase.h2_classes != 0).then(|| benchlab_results::MixHttp2 {
            connections: {
                let h2 = benchlab_engine::H2Plan {
                    classes: if p.http2 { 0 } else { phase.h2_classes },
                    ..Default::default()
                };
                let users = h2.users(&phase.urls, mix.slots_per_client());
                u64::from(users.div_ceil(p.streams_per_connection)) * u64::from(mix.clients)
            },
            classes: phase
                .classes
                .iter()
                .enumerate()
                .filter(|(i, _)| p.http2 || (*i < 64 && phase.h2_classes & (1 << i) != 0))
                .map(|(_, c)| c.name.clone())
                .collect(),
            streams_per_connection: p.streams_per_connection,
            streams_opened: conn.h2_streams,
            goaways: conn.h2_goaways,
            connection_frame_bytes: conn.h2_connection_bytes,
            stream_resets: conn
                .stream_reset_codes
                .iter()
                .enumerate()
                .filter(|(_, n)| **n > 0)
                .map(|(code, n)| (benchlab_results::h2_code_name(code).to_string(), *n))
                .collect(),
        }),
        params: ParamsResult {
            delay_s: p.delay.as_secs_f64(),
            ramp_up_s: p.ramp_up.as_secs_f64(),
            ramp_down_s: p.ramp_down.as_secs_f64(),
            length_s: p.length.as_secs_f64(),
            think_time_s: p.think_time.as_secs_f64(),
            threads_per_client: p.threads_per_client,
            receive_buffer: p.receive_buffer,
            http10_percent: p.http10_percent,
            http10_keepalive: p.http10_keepalive,
            persistent_percent: p.persistent_percent,
            requests_per_connection: p.requests_per_connection.map(|(a, b)| [a, b]),
            timeout_s: p.timeout.as_secs_f64(),
            workload: p.workload.clone(),
            target: p.target.clone(),
        },
        client_data,
        classes,
        per_second,
        histograms,
        users_arrived,
        users_waiting,
        request_kinds: request_kinds(&shares),
        warnings,
        open_loop,
        search: None,
        repeats: None,
        resources: None,
    }
}

/// A mix's histograms from its clients' merged counts (`classes`: the
/// phase's, in order). The as-sent ones exist only where the clients kept
/// them (an open loop).
fn histograms(merged: &Stats, classes: &[ClassPlan]) -> Histograms {
    let total = merged.total();
    let per_class = |h: fn(&ClassStats) -> Option<&hdrhistogram::Histogram<u64>>| {
        merged
            .classes
            .iter()
            .zip(classes)
            .filter_map(|(s, c)| h(s).map(|h| (c.name.clone(), histogram_b64(h))))
            .collect()
    };
    Histograms {
        latency_us: histogram_b64(&total.latency),
        error_latency_us: histogram_b64(&total.error_latency),
        classes: per_class(|s| Some(&s.latency)),
        latency_as_sent_us: total.latency_as_sent.as_ref().map(histogram_b64),
        classes_as_sent: per_class(|s| s.latency_as_sent.as_ref()),
    }
}

/// Says when some virtual users were still waiting to connect at the end:
/// the engine lets a few hundred users per client connect at once, each
/// holding its slot until its first response, so the target accepted new
/// connections slower than the users came and the figures are those of
/// fewer users than asked for. `remedy` is the caller's own advice.
pub fn arrival_warning(waiting: u64, users: u64, remedy: &str) -> Option<String> {
    (waiting > 0).then(|| {
        format!(
            "{} of {} virtual users were still waiting to connect when the run ended: the target \
             accepted new connections slower than they arrived (a few hundred per client connect at once, each \
             until its first response), so the figures are those of fewer users. The target's accept loop is \
             the limit (for nginx: `multi_accept on`, more workers); or {remedy}",
            benchlab_format::thousands(waiting),
            benchlab_format::thousands(users)
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use benchlab_engine::new_latency_histogram;

    fn decode(b64: &str) -> hdrhistogram::Histogram<u64> {
        use base64::Engine as _;
        let bytes = base64::engine::general_purpose::STANDARD.decode(b64).expect("base64");
        hdrhistogram::serialization::Deserializer::new()
            .deserialize(&mut bytes.as_slice())
            .expect("a V2 histogram")
    }

    /// One client's open-loop counts of two classes: as-sent latencies
    /// `values` in class 0 and `values × 10` in class 1.
    fn client(values: std::ops::RangeInclusive<u64>) -> Stats {
        let mut s = Stats::new(2);
        for (k, class) in s.classes.iter_mut().enumerate() {
            let mut h = new_latency_histogram();
            for v in values.clone() {
                h.record(v * 10u64.pow(k as u32)).expect("in range");
                class.latency.record(v * 1000).expect("in range");
            }
            class.latency_as_sent = Some(h);
        }
        s
    }

    #[test]
    fn the_as_sent_histograms_merge_clients_exactly() {
        let classes = [ClassPlan { name: "a".into() }, ClassPlan { name: "b".into() }];
        // Merged as mix_result merges its clients' reports.
        let mut merged = Stats::new(2);
        merged.add(&client(1..=1000));
        merged.add(&client(3000..=3500));
        let h = histograms(&merged, &classes);
        let all = decode(h.latency_as_sent_us.as_deref().expect("an open loop keeps it"));
        let mut want = new_latency_histogram();
        for v in (1..=1000).chain(3000..=3500) {
            want.record(v).expect("in range");
            want.record(v * 10).expect("in range");
        }
        assert_eq!(all.len(), 2 * 1501);
        assert_eq!(
            all, want,
            "the mix's as-sent histogram is every client's, bucket by bucket"
        );
        assert_eq!(h.classes_as_sent.keys().collect::<Vec<_>>(), ["a", "b"]);
        let b = decode(&h.classes_as_sent["b"]);
        assert_eq!((b.len(), b.min(), b.max()), (1501, 10, b.highest_equivalent(35_000)));
        // The corrected one is a different histogram.
        assert_eq!(decode(&h.latency_us).min(), 1000);
        // A closed loop keeps no as-sent histogram: none is written.
        let mut closed = Stats::new(2);
        closed.classes[0].latency.record(7).expect("in range");
        let h = histograms(&closed, &classes);
        assert!(h.latency_as_sent_us.is_none() && h.classes_as_sent.is_empty());
        let json = serde_json::to_value(&h).expect("JSON");
        assert!(json.get("latency_as_sent_us").is_none() && json.get("classes_as_sent").is_none());
    }
}

/// The controller driven through fake clients: no sockets, no threads,
/// every number known in advance.
#[cfg(test)]
mod fake_clients {
    use super::*;
    use crate::driver::ClientLost;
    use benchlab_engine::{new_latency_histogram, Counters, ErrorKind, LatencySummary};
    use benchlab_model::MixParams;
    use std::collections::VecDeque;
    use std::sync::Mutex;

    /// One completed second: `requests` successes with the given latencies
    /// (µs), `errors` connection refusals.
    fn second(n: u32, latencies: &[u64], refused: u64) -> Second {
        let mut h = new_latency_histogram();
        for &v in latencies {
            h.record(v).expect("in range");
        }
        let mut counters = Counters {
            requests: latencies.len() as u64,
            bytes: 100 * latencies.len() as u64,
            ..Counters::default()
        };
        counters.errors[ErrorKind::ConnectRefused as usize] = refused;
        let conn = ConnCounters {
            connections_opened: latencies.len() as u64,
            ..ConnCounters::default()
        };
        Second {
            second: n,
            counters,
            conn,
            latency: LatencySummary::of(&h),
            histogram: Some(h),
            load: Default::default(),
        }
    }

    /// The report of a client that sent `seconds`: its window (1 s to 3 s,
    /// the mix below) summed, as the engine counts it.
    fn report(seconds: &[Second]) -> ClientReport {
        let mut stats = Stats::new(1);
        for s in seconds.iter().filter(|s| in_window(s.second, WINDOW)) {
            stats.classes[0].counters.add(&s.counters);
            stats.classes[0]
                .latency
                .add(s.histogram.as_ref().expect("a histogram"))
                .expect("same bounds");
            stats.conn.add(&s.conn);
        }
        ClientReport {
            stats,
            seconds: seconds
                .iter()
                .cloned()
                .map(|s| Second { histogram: None, ..s })
                .collect(),
            in_flight: 0,
            cpu_user: Duration::from_millis(10),
            cpu_system: Duration::from_millis(5),
            elapsed: Duration::from_secs(seconds.len() as u64),
            tls_error: None,
            users_arrived: 1,
            users_waiting: 0,
            peak_connections: 0,
            h2_settings: None,
            threads_lost: 0,
        }
    }

    const WINDOW: (Duration, Duration) = (Duration::from_secs(1), Duration::from_secs(3));

    /// What a fake client will do.
    #[derive(Debug, Clone)]
    struct Script {
        seconds: Vec<Second>,
        /// Lost after its seconds, with this reason.
        lost: Option<&'static str>,
        refuse_start: bool,
    }

    impl Script {
        fn runs(seconds: Vec<Second>) -> Script {
            Script {
                seconds,
                lost: None,
                refuse_start: false,
            }
        }
    }

    #[derive(Debug, Default)]
    struct FakePool {
        scripts: Vec<Script>,
        /// What the drivers were asked, in order: `start 1`, `stop 2` …
        log: Arc<Mutex<Vec<String>>>,
    }

    impl FakePool {
        fn log(&self) -> Vec<String> {
            self.log.lock().expect("log").clone()
        }
    }

    struct FakeDriver {
        client: usize,
        script: Script,
        queue: VecDeque<Second>,
        stopped: bool,
        log: Arc<Mutex<Vec<String>>>,
    }

    impl FakeDriver {
        fn note(&self, what: &str) {
            self.log
                .lock()
                .expect("log")
                .push(format!("{what} {}", self.client + 1));
        }
    }

    impl ClientPool for FakePool {
        fn load_urls(&self, _urls: &Arc<UrlList>) -> Result<(), DriverError> {
            Ok(())
        }

        fn driver(&self, client: usize) -> Box<dyn ClientDriver> {
            let script = self.scripts[client].clone();
            Box::new(FakeDriver {
                client,
                queue: script.seconds.iter().cloned().collect(),
                script,
                stopped: false,
                log: Arc::clone(&self.log),
            })
        }
    }

    impl ClientDriver for FakeDriver {
        fn start(&mut self, _plan: ClientPlan, _start_at: SystemTime) -> Result<(), DriverError> {
            if self.script.refuse_start {
                self.note("refused");
                return Err(DriverError::UnknownUrls("xxh3:0".into()));
            }
            self.note("start");
            Ok(())
        }

        fn stop(&mut self) {
            self.note("stop");
            // A stopped client sends no more seconds.
            self.stopped = true;
            self.queue.clear();
        }

        fn next_second(&mut self, _timeout: Duration) -> Option<Second> {
            self.queue.pop_front()
        }

        fn is_finished(&self) -> bool {
            self.queue.is_empty()
        }

        fn finish(&mut self) -> Result<ClientReport, ClientLost> {
            self.note("finish");
            match self.script.lost {
                Some(why) => Err(ClientLost { why: why.into() }),
                None => {
                    let sent = if self.stopped { 0 } else { self.script.seconds.len() };
                    Ok(report(&self.script.seconds[..sent]))
                }
            }
        }
    }

    fn mix(clients: u32) -> Mix {
        Mix {
            number: 1,
            clients,
            phase: 0,
            params: MixParams {
                delay: Duration::from_millis(500),
                ramp_up: WINDOW.0,
                ramp_down: Duration::from_secs(1),
                length: Duration::from_secs(4),
                think_time: Duration::ZERO,
                threads_per_client: 2,
                rate: None,
                arrival: benchlab_model::Arrival::Constant,
                max_in_flight: 1,
                receive_buffer: 4096,
                http10_percent: 0,
                http10_keepalive: false,
                persistent_percent: 100,
                requests_per_connection: None,
                http2: false,
                streams_per_connection: 1,
                timeout: Duration::from_secs(5),
                workload: "w".into(),
                target: "http://127.0.0.1:1".into(),
            },
        }
    }

    fn phase() -> PhasePlan {
        let classes = vec![ClassPlan { name: "static".into() }];
        PhasePlan {
            list: Arc::new(UrlList::new(classes.clone(), Vec::new())),
            urls: Vec::new().into(),
            classes,
            class_info: vec![("static".into(), ClassKind::Static, None, 100.0, false)],
            h2_classes: 0,
        }
    }

    /// Plans with delays 0.1 s × client number, so a row's delay says
    /// which client it is.
    fn plans(n: usize) -> Vec<ClientPlan> {
        let suite_plan = |c: usize| ClientPlan {
            urls: phase().list.id.clone(),
            settings: benchlab_engine::ClientSettings {
                virtual_users: 2,
                load: Load::Closed,
                os_threads: 1,
                stop: Stop::After(Duration::from_secs(4)),
                window: WINDOW,
                start_delay: Duration::from_millis(100 * (c as u64 + 1)),
                think_time: Duration::ZERO,
                ramp_up: Duration::ZERO,
                timeout: Duration::from_secs(5),
                connection: ConnectionPolicy::default(),
                receive_buffer: 4096,
                headers: Vec::new(),
                source_addresses: vec![IpAddr::V4(Ipv4Addr::new(127, 0, 0, c as u8 + 1))],
                tls: TlsOptions::default(),
                seed: c as u64,
                http2: None,
            },
        };
        (0..n).map(suite_plan).collect()
    }

    /// Runs the fake clients through a mix; returns the result and the
    /// seconds the observer saw.
    fn run(pool: &FakePool, stop: bool) -> Result<(MixResult, Vec<SecondResult>), ControllerError> {
        let n = pool.scripts.len();
        let plans = plans(n);
        let mut seen = Vec::new();
        let driven = drive_mix(
            pool,
            &plans,
            WINDOW,
            SystemTime::now(),
            &AtomicBool::new(stop),
            &mut |s| seen.push(s.clone()),
        )?;
        Ok((mix_result(&mix(n as u32), "p", &phase(), &plans, &driven), seen))
    }

    fn range(from: u64, to: u64) -> Vec<u64> {
        (from..=to).collect()
    }

    #[test]
    fn seconds_merge_counts_exactly_and_percentiles_over_every_request() {
        // Client 1 is fast (1..100 µs), client 2 slow (1,000..1,099 µs)
        // and half as busy: the slowest client's p50 would be 1,049 µs.
        let fast = |n| second(n, &range(1, 100), 0);
        let slow = |n| second(n, &range(1000, 1049), 0);
        let pool = FakePool {
            scripts: vec![
                Script::runs((0..4).map(fast).collect()),
                Script::runs((0..4).map(slow).collect()),
            ],
            ..FakePool::default()
        };
        let (r, seen) = run(&pool, false).expect("runs");
        assert_eq!(r.per_second, seen, "the result keeps what the observer saw");
        assert_eq!(r.per_second.len(), 4);
        let mut all = new_latency_histogram();
        for v in range(1, 100).into_iter().chain(range(1000, 1049)) {
            all.record(v).expect("in range");
        }
        for (i, s) in r.per_second.iter().enumerate() {
            assert_eq!(s.second, i as u32 + 1);
            assert_eq!(
                (s.requests, s.errors, s.bytes, s.connections_opened),
                (150, 0, 15_000, 150)
            );
            assert_eq!(s.in_window, i == 1 || i == 2, "window 1 s to 3 s");
            // One histogram fed every sample of the second.
            assert_eq!(s.latency_p50_us, all.value_at_quantile(0.50));
            assert_eq!(s.latency_p99_us, all.value_at_quantile(0.99));
        }
        assert_eq!(
            r.per_second[0].latency_p50_us, 75,
            "the 75th of 150 samples, not the slow client's 1,024"
        );
        assert_eq!(r.per_second[0].latency_p99_us, 1048);
        // The window's totals: seconds 2 and 3 of both clients.
        assert_eq!(r.figures.requests, 300);
        assert_eq!(r.window_s, 2.0);
        assert_eq!(r.figures.requests_per_sec, 150.0);
        assert_eq!(r.figures.latency_us.p99, all.value_at_quantile(0.99));
        assert_eq!(r.clients_participating, 2);
        assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    }

    #[test]
    fn a_second_waits_for_every_running_client_but_not_a_finished_one() {
        let mut m = SecondMerger::new(2, WINDOW);
        m.add(0, second(0, &[10], 0));
        m.add(0, second(1, &[10], 0));
        assert!(m.release().is_empty(), "client 2 has not sent second 1 yet");
        m.add(1, second(0, &[30], 0));
        let got: Vec<(u32, u64, u64)> = m
            .release()
            .iter()
            .map(|s| (s.second, s.requests, s.latency_p99_us))
            .collect();
        assert_eq!(got, [(1, 2, 30)]);
        m.finished(1);
        let got: Vec<(u32, u64)> = m.release().iter().map(|s| (s.second, s.requests)).collect();
        assert_eq!(got, [(2, 1)], "a finished client holds back no second");
        assert!(m.release().is_empty(), "each second is handed out once");
    }

    #[test]
    fn a_mix_keeps_its_windows_monitored_seconds_and_the_clients_own_load() {
        let loaded = |n: u32, cpu_us: u64, lag_us: u64| {
            let mut s = second(n, &[100; 10], 0);
            s.load = benchlab_engine::LoopLoad {
                cpu_user_us: cpu_us,
                cpu_system_us: cpu_us / 2,
                loop_lag_max_us: lag_us,
            };
            s
        };
        let pool = FakePool {
            scripts: vec![
                Script::runs((0..4).map(|n| loaded(n, 1000, 10 * u64::from(n))).collect()),
                Script::runs((0..4).map(|n| loaded(n, 3000, 5)).collect()),
            ],
            ..FakePool::default()
        };
        let (r, _) = run(&pool, false).expect("runs");
        // The clients' own CPU adds up per second, the lag is the worst.
        let cpu: Vec<(f64, f64, u64)> = r
            .per_second
            .iter()
            .map(|s| (s.client_cpu_user_s, s.client_cpu_system_s, s.loop_lag_max_us))
            .collect();
        assert_eq!(
            cpu,
            [
                (0.004, 0.002, 5),
                (0.004, 0.002, 10),
                (0.004, 0.002, 20),
                (0.004, 0.002, 30)
            ]
        );
        assert_eq!(r.client_data[0].loop_lag_max_us, 30);
        assert_eq!(r.client_data[0].seconds.len(), 4);
        assert_eq!(r.client_data[1].seconds[0].cpu_user_s, 0.003);

        // A host sampled every second; the window (2 s, from `from`) keeps
        // the two samples stamped half a second or more inside it.
        let store = Arc::new(benchlab_monitor::SampleStore::new("srv", "test"));
        let base_ms = 1_000_000u64;
        for k in 0..6u64 {
            store.push(HostSample {
                host: "srv".into(),
                unix_ms: base_ms + k * 1000 + 20,
                interval_s: 1.0,
                context_switches_per_sec: 100.0 * (k + 1) as f64,
                ..HostSample::default()
            });
        }
        let from = UNIX_EPOCH + Duration::from_millis(base_ms);
        let monitors: Vec<Arc<dyn MonitorSource>> = vec![store];
        let res = mix_resources(&monitors, from, &r, true, &GeneratorCores::default());
        let h = &res.hosts[0];
        assert_eq!(
            h.seconds.iter().map(|s| s.unix_ms).collect::<Vec<_>>(),
            [base_ms + 1020, base_ms + 2020]
        );
        assert_eq!(h.role, HostRole::ServerAndClient);
        let avg = h.average.as_ref().expect("an average");
        assert_eq!(avg.context_switches_per_sec, 250.0);
        // 250 a second over the 2 s window, 40 requests in it.
        assert_eq!(r.window_s, 2.0);
        assert_eq!(r.figures.requests, 40);
        assert_eq!(h.context_switches_per_request, Some(12.5));
        assert_eq!(res.verdict.limit, Limit::Software);
    }

    #[test]
    fn a_mix_whose_every_client_was_lost_mid_window_is_partial() {
        let pool = FakePool {
            scripts: vec![Script {
                // Seconds 0 and 1 of a window of seconds 1 and 2.
                seconds: vec![second(0, &[200; 7], 0), second(1, &[300; 5], 0)],
                lost: Some("the connection closed"),
                refuse_start: false,
            }],
            ..FakePool::default()
        };
        let (r, _) = run(&pool, false).expect("the mix ends");
        assert!(r.partial, "a window cut short is partial");
        assert_eq!(r.window_s, 0.0);
        // The whole window measured: not partial.
        let pool = FakePool {
            scripts: vec![Script::runs((0..4).map(|n| second(n, &[100; 10], 0)).collect())],
            ..FakePool::default()
        };
        let (r, _) = run(&pool, false).expect("the mix ends");
        assert!(!r.partial);
        assert_eq!(r.window_s, 2.0);
    }

    #[test]
    fn a_client_lost_mid_mix_keeps_its_number_and_its_figures_apart() {
        let pool = FakePool {
            scripts: vec![
                Script::runs((0..4).map(|n| second(n, &[100; 10], 0)).collect()),
                // Sends seconds 1 and 2 (one inside the window), then is lost.
                Script {
                    seconds: vec![second(0, &[200; 7], 0), second(1, &[300; 5], 0)],
                    lost: Some("silent for 3 s"),
                    refuse_start: false,
                },
                Script::runs((0..4).map(|n| second(n, &[400; 20], 0)).collect()),
            ],
            ..FakePool::default()
        };
        let (r, _) = run(&pool, false).expect("the mix completes without it");
        let rows: Vec<(u32, Option<&str>, f64, bool, u64)> = r
            .client_data
            .iter()
            .map(|c| {
                (
                    c.client,
                    c.address.as_deref(),
                    c.delay_s,
                    c.taken_out,
                    c.figures.requests,
                )
            })
            .collect();
        assert_eq!(
            rows,
            [
                (1, Some("127.0.0.1"), 0.1, false, 20),
                (2, Some("127.0.0.2"), 0.2, true, 5),
                (3, Some("127.0.0.3"), 0.3, false, 40),
            ],
            "client 3 is still client 3, with its own delay and address"
        );
        let lost = &r.client_data[1];
        assert_eq!(lost.lost.as_deref(), Some("silent for 3 s"));
        assert_eq!(
            lost.figures.requests_per_sec, 5.0,
            "over the one second it sent in the window"
        );
        assert_eq!(lost.figures.latency_us.p50, 300);
        assert_eq!(r.client_data[0].lost, None);
        // The mix's totals are the two others' only.
        assert_eq!(r.figures.requests, 60);
        assert_eq!(r.figures.latency_us.max, 400);
        assert_eq!(r.clients_participating, 2);
        assert_eq!(r.clients, 3);
        assert!(
            r.warnings
                .iter()
                .any(|w| w.starts_with("client 2 was lost (silent for 3 s)")),
            "{:?}",
            r.warnings
        );
        // Its seconds up to the loss are in the series; after it, the others'.
        let reqs: Vec<u64> = r.per_second.iter().map(|s| s.requests).collect();
        assert_eq!(reqs, [37, 35, 30, 30]);
        assert_eq!(pool.log().iter().filter(|l| l.starts_with("finish")).count(), 3);
    }

    #[test]
    fn a_client_that_cannot_connect_is_taken_out_but_its_errors_count() {
        let pool = FakePool {
            scripts: vec![
                Script::runs((0..4).map(|n| second(n, &[100; 10], 0)).collect()),
                Script::runs((0..4).map(|n| second(n, &[], 3)).collect()),
            ],
            ..FakePool::default()
        };
        let (r, _) = run(&pool, false).expect("runs");
        let out = &r.client_data[1];
        assert!(out.taken_out && out.lost.is_none());
        assert_eq!((out.figures.requests, out.figures.errors_total), (0, 6));
        assert_eq!((r.figures.requests, r.figures.errors_total), (20, 6), "WebBench's rule");
        assert_eq!(r.clients_participating, 1);
        let errors: Vec<u64> = r.per_second.iter().map(|s| s.errors).collect();
        assert_eq!(errors, [3, 3, 3, 3]);
    }

    #[test]
    fn a_stopped_mix_is_partial_and_every_client_is_stopped() {
        let pool = FakePool {
            scripts: vec![
                Script::runs((0..4).map(|n| second(n, &[100; 10], 0)).collect()),
                Script::runs((0..4).map(|n| second(n, &[100; 10], 0)).collect()),
            ],
            ..FakePool::default()
        };
        let (r, seen) = run(&pool, true).expect("runs");
        assert!(r.partial);
        assert!(seen.is_empty(), "stopped before any second");
        assert_eq!(r.client_data.len(), 2, "both keep their rows");
        assert_eq!(
            pool.log(),
            ["start 1", "start 2", "stop 1", "stop 2", "finish 1", "finish 2"]
        );
    }

    #[test]
    fn a_client_that_fails_to_start_stops_every_client_already_started() {
        let ok = Script::runs(vec![second(0, &[100], 0)]);
        let pool = FakePool {
            scripts: vec![
                ok.clone(),
                ok.clone(),
                Script {
                    refuse_start: true,
                    ..ok.clone()
                },
                ok,
            ],
            ..FakePool::default()
        };
        let e = run(&pool, false).expect_err("the mix cannot run");
        assert!(matches!(e, ControllerError::Driver { client: 3, .. }), "{e}");
        assert!(e.to_string().starts_with("cannot start client 3: "), "{e}");
        assert_eq!(
            pool.log(),
            [
                "start 1",
                "start 2",
                "refused 3",
                "stop 1",
                "stop 2",
                "finish 1",
                "finish 2"
            ],
            "client 4 is never started"
        );
    }
}
