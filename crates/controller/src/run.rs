//! Running a suite: mix after mix, every participating client started at
//! the same instant (each after its random delay), only the measurement
//! window counted, all clients stopped at the mix's end, results written
//! as each mix ends.

use crate::driver::{ClientDriver, LocalClient};
use crate::machine::CpuTicks;
use crate::peak::{PeakSearch, SearchLimits, Step};
use crate::results::*;
use benchlab_engine::{
    probe_from, share_warning, sys, Arrival, ClassPlan, ClassStats, ClientPlan, ClientReport, ConnCounters,
    ConnectionPolicy, Expect, Load, OpenLoop, SplitMix64, Stats, Stop, Target, TlsOptions, UrlPlan,
};
use benchlab_model::{ClassKind, Mix, Suite, Validate};
use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

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
    #[error("cannot start a client: {0}")]
    Engine(#[from] benchlab_engine::EngineError),
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
}

/// What the caller sees while a suite runs (progress display).
pub trait Observer {
    fn mix_started(&mut self, _mix: &Mix, _phase: &str) {}
    /// With `repeat` above 1: run `repeat` of `of` of the mix starts (called
    /// before its `mix_started`; `mix_finished` follows each run).
    fn repeat_started(&mut self, _mix: &Mix, _repeat: u32, _of: u32) {}
    /// A second of the mix completed on every client (merged).
    fn second(&mut self, _mix: &Mix, _second: u32, _requests: u64, _errors: u64, _bytes: u64) {}
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
    /// Shared by every client of every mix of the phase.
    urls: Arc<[UrlPlan]>,
    classes: Vec<ClassPlan>,
    /// Per class: name, kind, SPI, percent, drawn from a file set.
    class_info: Vec<(String, ClassKind, Option<String>, f64, bool)>,
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
    // Parse each distinct base URL once (resolving its host), then reuse
    // its address for every URL of the class.
    let mut bases: BTreeMap<String, Target> = BTreeMap::new();
    for (ci, c) in w.classes.iter().enumerate() {
        let resolved = c.resolve(target, filesets).map_err(ControllerError::Input)?;
        classes.push(ClassPlan { name: c.name.clone() });
        let from_fileset = matches!(c.source, benchlab_model::UrlSource::Fileset(_));
        class_info.push((c.name.clone(), c.kind, c.spi.clone(), c.percent, from_fileset));
        for r in resolved {
            let t = target_for(&r.url, &mut bases)?;
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
            urls.push(UrlPlan {
                target: t,
                weight: c.percent / 100.0 * r.weight,
                class: ci,
                expect_status: c.expect_status,
                expect,
            });
        }
    }
    Ok(PhasePlan {
        urls: urls.into(),
        classes,
        class_info,
    })
}

/// Parses `url`, reusing the resolved address of an already seen origin.
fn target_for(url: &str, bases: &mut BTreeMap<String, Target>) -> Result<Target, ControllerError> {
    let origin_end = url
        .find("://")
        .and_then(|i| url[i + 3..].find('/').map(|j| i + 3 + j))
        .unwrap_or(url.len());
    let origin = &url[..origin_end];
    let path = if origin_end < url.len() {
        &url[origin_end..]
    } else {
        "/"
    };
    if let Some(base) = bases.get(origin) {
        let mut t = base.clone();
        t.url = url.to_string();
        t.path = path.to_string();
        return Ok(t);
    }
    // A host that does not resolve is a run that cannot be made (the
    // network's or resolver's state), not a mistake in the suite.
    let t = Target::parse(url).map_err(|e| match e {
        benchlab_engine::PlanError::Resolve { .. } => ControllerError::Target(e.to_string()),
        _ => ControllerError::Input(e.to_string()),
    })?;
    bases.insert(origin.to_string(), t.clone());
    Ok(t)
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
    observer: &mut dyn Observer,
) -> Result<(), ControllerError> {
    let mut checked = 0;
    for (class, info) in plan.class_info.iter().enumerate() {
        for i in preflight_sample(&plan.urls, class, info.4) {
            let u = &plan.urls[i];
            checked += 1;
            let r = probe_from(&u.target, source, &[], tls, Duration::from_secs(10)).map_err(|e| {
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
                preflight(plan, client_address(suite, plan, 0), &opts.tls, observer)
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
    let text = std::fs::read_to_string(&suite.path).unwrap_or_default();
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
    let p = &mix.params;
    let clients = mix.clients as usize;
    let os_threads = opts
        .os_threads_per_client
        .unwrap_or_else(|| (sys::usable_cpus() / clients).max(1))
        .max(1);
    let loopback = phase.urls.first().is_some_and(|u| is_loopback(&u.target));
    let mut rng = SplitMix64::new(suite.seed ^ (mix.number as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let mut drivers: Vec<Box<dyn ClientDriver>> = Vec::with_capacity(clients);
    let mut delays = Vec::with_capacity(clients);
    let mut addresses = Vec::with_capacity(clients);
    sys::check_capacity(
        mix.clients as u64 * mix.slots_per_client() as u64,
        if suite.client_addresses && loopback { clients } else { 0 },
    )
    .map_err(ControllerError::Target)?;
    // This thread merges the clients' seconds while they run: its CPU is
    // the generator's too.
    let controller_cpu0 = sys::cpu_time(true);
    let machine0 = CpuTicks::now();
    // Every client starts at the same instant (after its own delay); give
    // the threads time to be created first.
    let start_at = Instant::now() + Duration::from_millis(100 + 2 * clients as u64);
    for c in 0..clients {
        let delay = if p.delay.is_zero() {
            Duration::ZERO
        } else {
            Duration::from_nanos(rng.below(p.delay.as_nanos() as u64 + 1))
        };
        let address = client_address(suite, phase, c);
        let mut plan = ClientPlan::new(Arc::clone(&phase.urls), phase.classes.clone());
        plan.virtual_users = p.threads_per_client;
        if let Some(rate) = p.rate {
            // The mix's rate, shared evenly by its clients.
            plan.load = Load::Open(OpenLoop {
                rate: rate / clients as f64,
                arrival: match p.arrival {
                    benchlab_model::Arrival::Constant => Arrival::Constant,
                    benchlab_model::Arrival::Poisson => Arrival::Poisson,
                },
                max_in_flight: p.max_in_flight,
            });
        }
        plan.os_threads = os_threads;
        plan.stop = Stop::After(p.length);
        plan.window = mix.window();
        plan.start_delay = delay;
        plan.think_time = p.think_time;
        plan.timeout = p.timeout;
        plan.connection = ConnectionPolicy {
            http10_percent: p.http10_percent,
            http10_keepalive: p.http10_keepalive,
            persistent_percent: p.persistent_percent,
            requests_per_connection: p.requests_per_connection,
        };
        plan.receive_buffer = p.receive_buffer;
        plan.source_addresses = address.into_iter().collect();
        plan.tls = opts.tls.clone();
        plan.seed = rng.next_u64();
        let mut d: Box<dyn ClientDriver> = Box::new(LocalClient::default());
        d.start(plan, start_at)?;
        drivers.push(d);
        delays.push(delay);
        addresses.push(address);
    }

    // Merge seconds across clients as they arrive; report a second once
    // every client that is still running has delivered it.
    let mut seconds: BTreeMap<u32, (u64, u64, u64, usize)> = BTreeMap::new();
    let mut stopped = false;
    let mut partial = false;
    loop {
        if stop.load(Ordering::Relaxed) && !stopped {
            for d in &mut drivers {
                d.stop();
            }
            stopped = true;
            partial = true;
        }
        let mut all_done = true;
        for d in &mut drivers {
            while let Some(s) = d.next_second(Duration::from_millis(if clients > 8 { 5 } else { 50 })) {
                let e = seconds.entry(s.second).or_default();
                e.0 += s.counters.requests;
                e.1 += s.counters.errors_total();
                e.2 += s.counters.bytes;
                e.3 += 1;
            }
            all_done &= d.is_finished();
        }
        while let Some((&sec, &(req, err, bytes, n))) = seconds.iter().next() {
            if n < clients && !all_done {
                break;
            }
            observer.second(mix, sec, req, err, bytes);
            seconds.remove(&sec);
        }
        if all_done {
            break;
        }
    }
    let reports: Vec<ClientReport> = drivers.iter_mut().filter_map(|d| d.finish()).collect();
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
    let mut result = mix_result(mix, phase_name, phase, &reports, &delays, &addresses, partial);
    result.client_cpu = generator_cpu(&reports, controller_cpu, cores).with_machine(machine_busy, co_located);
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

/// The generator's CPU over a mix: the CPU time of every client's worker
/// threads (each measured over its own life, which is the mix) plus the
/// controller thread's, over the mix's wall time (start to the last worker's
/// stop). Thread times, not the process's: `benchlab demo` runs the server
/// under test in this same process, and its CPU is not the generator's.
fn generator_cpu(reports: &[ClientReport], controller: (Duration, Duration), cores: usize) -> ClientCpu {
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

fn mix_result(
    mix: &Mix,
    phase_name: &str,
    phase: &PhasePlan,
    reports: &[ClientReport],
    delays: &[Duration],
    addresses: &[Option<IpAddr>],
    partial: bool,
) -> MixResult {
    let p = &mix.params;
    let (from, until) = mix.window();
    // The window measured: to its end, or to the stop of a partial mix.
    let elapsed = reports.iter().map(|r| r.elapsed).max().unwrap_or_default();
    let window_s = (until.min(elapsed).saturating_sub(from)).as_secs_f64();
    let mut merged = Stats::new(phase.classes.len());
    let mut client_data = Vec::with_capacity(reports.len());
    let mut in_flight = 0;
    let mut cpu = Duration::ZERO;
    for (i, r) in reports.iter().enumerate() {
        merged.add(&r.stats);
        in_flight += r.in_flight;
        cpu += r.cpu_user + r.cpu_system;
        let t = r.stats.total();
        let connect_only = t.counters.error(benchlab_engine::ErrorKind::ConnectRefused)
            + t.counters.error(benchlab_engine::ErrorKind::ConnectTimeout);
        let taken_out = t.counters.requests == 0 && connect_only > 0 && connect_only == t.counters.errors_total();
        client_data.push(ClientResult {
            client: i as u32 + 1,
            address: addresses.get(i).copied().flatten().map(|a| a.to_string()),
            figures: Figures::of(&t, window_s),
            connections_opened: r.stats.conn.connections_opened,
            in_flight: r.in_flight,
            delay_s: round(delays.get(i).copied().unwrap_or_default().as_secs_f64(), 3),
            taken_out,
            cpu_s: round((r.cpu_user + r.cpu_system).as_secs_f64(), 3),
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
    // Per-second series: every client's seconds, merged by index.
    let mut per_second: BTreeMap<u32, Counters2> = BTreeMap::new();
    for r in reports {
        for s in &r.seconds {
            let e = per_second.entry(s.second).or_default();
            e.add(&s.counters, &s.conn);
            // Percentiles of different clients cannot be added, so the
            // per-second series keeps the slowest client's (the mix's
            // totals use the exactly merged histograms).
            e.p50 = e.p50.max(s.latency.p50);
            e.p99 = e.p99.max(s.latency.p99);
        }
    }
    let per_second = per_second
        .into_iter()
        .map(|(sec, c)| {
            let t0 = Duration::from_secs(sec as u64);
            SecondResult {
                second: sec + 1,
                in_window: t0 >= from && t0 + Duration::from_secs(1) <= until,
                requests: c.requests,
                errors: c.errors,
                bytes: c.bytes,
                connections_opened: c.conn,
                latency_p50_us: c.p50,
                latency_p99_us: c.p99,
            }
        })
        .collect();
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
    let mut warnings: Vec<String> = share_warning(&shares, "the mix's `requests_per_connection`")
        .into_iter()
        .collect();
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

/// Counters of one second, merged over clients.
#[derive(Debug, Default)]
struct Counters2 {
    requests: u64,
    errors: u64,
    bytes: u64,
    conn: u64,
    p50: u64,
    p99: u64,
}

impl Counters2 {
    fn add(&mut self, c: &benchlab_engine::Counters, conn: &ConnCounters) {
        self.requests += c.requests;
        self.errors += c.errors_total();
        self.bytes += c.bytes;
        self.conn += conn.connections_opened;
    }
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
