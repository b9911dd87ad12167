//! Running a suite: mix after mix, every participating client started at
//! the same instant (each after its random delay), only the measurement
//! window counted, all clients stopped at the mix's end, results written
//! as each mix ends.

use crate::aggregate::*;
use crate::drive::*;
use crate::environment::*;
use crate::machine::CpuTicks;
use crate::options::*;
use crate::peak::{PeakSearch, SearchLimits, Step};
use crate::phase::*;
use crate::plan::ClientPlan;
use crate::verdict::mix_resources;
use benchlab_engine::{sys, Arrival, ClientReport, ConnectionPolicy, Load, OpenLoop, Stop};
use benchlab_model::{Mix, Suite};
use benchlab_results::resources::*;
use benchlab_results::*;
use benchlab_rng::SplitMix64;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

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
            // A file phase's target was checked when it was resolved.
            if opts.preflight && plan.file.is_none() {
                let http2 = !p.mixes.is_empty() && p.mixes.iter().all(|&m| suite.mixes[m].params.http2);
                let http3 = !p.mixes.is_empty() && p.mixes.iter().all(|&m| suite.mixes[m].params.http3);
                preflight(plan, client_address(suite, plan, 0), &opts.tls, http2, http3, observer)
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
    for plan in phases.iter().filter(|p| p.file.is_none()) {
        opts.clients
            .load_urls(&plan.list)
            .map_err(|e| ControllerError::Target(format!("cannot hand the URL list to the clients: {e}")))?;
    }
    // The suite's text, recorded in results.json as it was run (read
    // with the suite's own bound: it was parsed from this file already).
    let text = benchlab_model::input::read_bounded_text(&suite.path, "suite", benchlab_model::input::MAX_SUITE_BYTES)
        .unwrap_or_default();
    // A file suite's smb://USER:PASS@ targets are stored with `***`.
    let redact = benchlab_fileserver::smb::redact;
    let text = redact(&text);
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
        environment: Environment {
            command: opts.command.iter().map(|a| redact(a)).collect(),
            ..environment(&redact(&suite.target), opts)
        },
        phases: suite
            .phases
            .iter()
            .map(|p| PhaseResult {
                name: p.name.clone(),
                workload: p.workload.clone(),
                target: redact(&p.target),
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
        thresholds: Vec::new(),
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
                let loopback = phases[pi].urls.origins().first().is_some_and(is_loopback);
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
                // A file phase grows while its Mbit/s rises (docs/running.md);
                // its requests are every operation, failed ones included.
                let (rate, ok) = if phases[pi].file.is_some() {
                    (f.mbit_per_sec, f.requests.saturating_sub(f.errors_total))
                } else {
                    (f.requests_per_sec, f.requests)
                };
                peak.record(Step::of(load, rate, f.latency_us.p99, ok, f.errors_total));
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
        let mut result = match &phase.file {
            Some(file) => crate::file::run_mix(suite, mix, phase_name, file, opts, stop, observer)?,
            None => run_mix(suite, mix, phase_name, phase, opts, stop, observer)?,
        };
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
pub fn drop_page_cache() -> Result<(), ColdCacheError> {
    // SAFETY: sync(2) takes no arguments and cannot fail.
    unsafe { libc::sync() };
    std::fs::write("/proc/sys/vm/drop_caches", "3\n").map_err(|e| {
        ColdCacheError(format!(
            "cannot drop the page cache (/proc/sys/vm/drop_caches: {e}); it needs root (and a writable /proc/sys)"
        ))
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
    let loopback = phase.urls.origins().first().is_some_and(is_loopback);
    sys::check_capacity(
        mix.clients as u64 * mix.slots_per_client() as u64,
        if suite.client_addresses && loopback { clients } else { 0 },
    )?;
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
    let preconnect = plans
        .iter()
        .map(|p| p.settings.preconnect_lead())
        .max()
        .unwrap_or_default();
    let start_at = SystemTime::now() + Duration::from_millis(100 + 2 * clients as u64) + lead + preconnect;
    // With agents, the start instant ahead of time: a program beside the
    // run (bench/agents-netns.sh's probe) can wake at it and show how late
    // this machine wakes any thread then, next to the spread.
    if !opts.clients.agents().is_empty() {
        let unix = start_at.duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        let ahead = start_at.duration_since(SystemTime::now()).unwrap_or_default();
        observer.note(&format!(
            "mix {}: {} start at {}.{:06} (Unix time, this clock), in {} ms",
            mix.number,
            benchlab_format::plural(clients as u64, "client", "clients"),
            unix.as_secs(),
            unix.subsec_micros(),
            ahead.as_millis()
        ));
    }
    let driven = drive_mix(
        &*opts.clients,
        &plans,
        mix.window(),
        start_at,
        stop,
        &mut |s, merged| observer.second_merged(mix, s, merged),
    )?;
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
    let co_located = phase.urls.origins().iter().any(is_loopback);
    let mut result = mix_result(mix, phase_name, phase, &plans, &driven);
    result.start_spread = crate::skew::start_spread(start_at, &plans, &driven);
    // With agents, how together they began is worth a line (in one process
    // it is the threads' wake-up, in the results only).
    if let Some(s) = result
        .start_spread
        .as_ref()
        .filter(|_| !opts.clients.agents().is_empty())
    {
        observer.note(&format!("mix {}: {}", mix.number, s.summary()));
    }
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
                    first_user: c as u64 * u64::from(p.threads_per_client),
                    preconnect: p.preconnect,
                    // A mix's `http = "2"` makes every class HTTP/2; otherwise
                    // the classes that say so are (the client splits its users).
                    http2: (p.http2 || phase.h2_classes != 0).then(|| benchlab_engine::H2Plan {
                        connections: mix.slots_per_client().div_ceil(p.streams_per_connection),
                        streams: p.streams_per_connection,
                        window: benchlab_engine::H2Plan::DEFAULT_WINDOW,
                        classes: if p.http2 { 0 } else { phase.h2_classes },
                        // HTTP/3 for every multiplexed class, or for some
                        // of them beside HTTP/2 ones (the client splits).
                        h3: p.http3 || (!p.http2 && phase.h3_classes != 0 && phase.h3_classes == phase.h2_classes),
                        h3_classes: if p.http2 || phase.h3_classes == phase.h2_classes {
                            0
                        } else {
                            phase.h3_classes
                        },
                    }),
                },
            }
        })
        .collect()
}
