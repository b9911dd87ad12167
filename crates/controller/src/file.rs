//! File mixes on the suite loop: a phase whose workload is a file workload
//! (a disk mix or a dbench loadfile, target `file://` or `smb://`) runs its
//! mixes through `benchlab_fileserver`, and each mix comes back as the same
//! [`MixResult`] a web mix gives — with the generator's CPU, the monitored
//! hosts' seconds and the verdict attached here exactly as for web mixes —
//! so phases, `--repeat`, the observer (`--web`, the progress display),
//! Ctrl-C, `--find-peak`, `--cold-cache` and the results writer are the
//! suite loop's own. Its users run in this process, or — when the run's
//! clients are remote agents — on the agents, one [`FileClientDriver`]
//! per client, their counts merged here exactly.

use crate::driver::{DriverError, FileClientDriver};
use crate::options::{ControllerError, Observer, RunOptions};
use crate::verdict::mix_resources;
use benchlab_engine::sys;
use benchlab_fileserver::run::LiveSecond;
use benchlab_fileserver::stats::FileStats;
use benchlab_fileserver::{FileMixMeasure, FileMixPlan, FileOrder, FileTarget, FileWorkload, MixRun, Part};
use benchlab_model::{Mix, Suite};
use benchlab_results::resources::GeneratorCores;
use benchlab_results::{ClientCpu, MixResult, SecondResult};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime};

/// A file phase: its workload, read and checked once before any mix.
#[derive(Debug, Clone)]
pub(crate) struct FilePhase {
    pub workload: FileWorkload,
}

/// The file phase of workload `workload` of `suite`, if it is a file
/// workload: read and checked now (an error names the file and line).
pub(crate) fn resolve(suite: &Suite, workload: &str, target: &str) -> Option<Result<FilePhase, ControllerError>> {
    let w = suite.file_workloads.get(workload)?;
    Some((|| {
        FileTarget::parse(target)?;
        let workload = benchlab_fileserver::suite::load_workload(w)?;
        Ok(FilePhase { workload })
    })())
}

/// The fileserver's plan of one mix: the suite's seed and the mix's number
/// give the users' delays and random choices, as for web clients.
pub(crate) fn plan_of(suite: &Suite, mix: &Mix) -> FileMixPlan {
    let p = &mix.params;
    FileMixPlan {
        clients: mix.clients,
        threads_per_client: p.threads_per_client,
        delay: p.delay,
        ramp_up: p.ramp_up,
        ramp_down: p.ramp_down,
        length: p.length,
        think_time: p.think_time,
        seed: suite.seed ^ (mix.number as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15),
    }
}

/// Whether the file server shares this machine with the load: a local
/// path, or an SMB server on a loopback address.
pub(crate) fn co_located(target: &FileTarget) -> bool {
    match target {
        FileTarget::Local(_) => true,
        FileTarget::Smb(u) => {
            u.host == "localhost" || u.host.parse::<std::net::IpAddr>().is_ok_and(|a| a.is_loopback())
        }
    }
}

/// Runs one file mix in this process (its users as threads, or as
/// processes of their own for `smb://`), and makes it the mix's result.
pub(crate) fn run_mix(
    suite: &Suite,
    mix: &Mix,
    phase_name: &str,
    phase: &FilePhase,
    opts: &RunOptions,
    stop: &AtomicBool,
    observer: &mut dyn Observer,
) -> Result<MixResult, ControllerError> {
    let target = FileTarget::parse(&mix.params.target)?;
    let plan = plan_of(suite, mix);
    // A disk mix fills every user's workspace before the mix's clock
    // starts, which takes a while on a big workspace: say so.
    if let FileWorkload::DiskMix(d) = &phase.workload {
        let length = mix.params.length;
        observer.note(&format!(
            "mix {} ({phase_name}): {} × {}, {}: filling workspaces ({}) first …",
            mix.number,
            benchlab_format::plural(mix.clients.into(), "client", "clients"),
            benchlab_format::plural(mix.params.threads_per_client.into(), "thread", "threads"),
            if length.subsec_millis() == 0 {
                format!("{}s", length.as_secs())
            } else {
                format!("{}ms", length.as_millis())
            },
            benchlab_format::plural(d.workspace, "byte per user", "bytes per user")
        ));
    }
    let wall0 = Instant::now();
    let remote = opts.clients.file_driver(0).is_some();
    let (run, lost, uncertainty) = if remote {
        run_remote(mix, phase, &target, &plan, opts, stop, observer)?
    } else {
        let run = benchlab_fileserver::run_mix_timed(&phase.workload, &target, &plan, stop, &mut |s| {
            observer.second(mix, &live_second(&s))
        })
        .map_err(|e| ControllerError::Target(format!("mix {}: {e}", mix.number)))?;
        (run, Vec::new(), Vec::new())
    };
    let wall = wall0.elapsed();
    let (m, started) = (&run.measure, run.started);
    // The users' own CPU (threads, or processes for smb://; on agents,
    // theirs): the load generator's, as a web mix's client threads are.
    let cpu = (
        Duration::from_micros(run.cpu_us[0]),
        Duration::from_micros(run.cpu_us[1]),
    );
    let users = mix.clients * mix.params.threads_per_client;
    let mut result = benchlab_fileserver::results::mix_result(mix, phase_name, users, m);
    // How together the clients' first operations left, as for a web mix
    // (a user's drawn delay is already taken off its first send).
    result.start_spread = crate::skew::spread_of(
        started,
        m.clients.iter().enumerate().filter_map(|(c, s)| {
            let u = uncertainty.get(c).copied().unwrap_or(0);
            Some((c as u32 + 1, s.first_send_unix_ns?, Duration::ZERO, u))
        }),
    );
    if let Some(s) = result.start_spread.as_ref().filter(|_| remote) {
        observer.note(&format!("mix {}: {}", mix.number, s.summary()));
    }
    // A lost agent's clients keep their numbers, out of the mix (their
    // counts never came: only their seconds, in the live series).
    for (c, why) in lost.iter().enumerate() {
        let (Some(why), Some(row)) = (why, result.client_data.get_mut(c)) else {
            continue;
        };
        row.lost = Some(why.clone());
        row.taken_out = true;
        result.warnings.push(format!(
            "client {} was lost ({why}): it is out of the mix, and its counts are not in the mix's",
            c + 1
        ));
    }
    result.clients_participating = result.client_data.iter().filter(|c| !c.taken_out).count() as u32;
    let completed = m.total.operations();
    // A user is one OS thread (or process): the cores it may use are at
    // most its users, within this process's CPUs.
    let cores = (users as usize).min(sys::usable_cpus()).max(1);
    let co_located = co_located(&target);
    result.client_cpu_s = benchlab_results::round((cpu.0 + cpu.1).as_secs_f64(), 3);
    // The server shares the users' machine only when they run here.
    result.client_cpu =
        ClientCpu::measure(cpu.0, cpu.1, wall, cores, completed).with_machine(None, co_located && !remote);
    if !opts.monitors.is_empty() {
        let generator = GeneratorCores {
            cpus: opts.client_cpus.iter().map(|&c| c as u32).collect(),
            busy_percent: None,
        };
        let from = started + mix.params.ramp_up;
        let resources = mix_resources(&opts.monitors, from, &result, co_located, &generator);
        for h in &resources.hosts {
            if h.seconds.is_empty() {
                observer.note(&format!(
                    "mix {}: no sample of {} ({}) inside the window",
                    mix.number, h.host, h.source
                ));
            }
        }
        observer.note(&format!("mix {}: {}", mix.number, resources.verdict.summary));
        result.resources = Some(resources);
    }
    for w in &result.warnings {
        observer.note(&format!("warning: mix {}: {w}", mix.number));
    }
    Ok(result)
}

/// A remote file mix's run, per client why it was lost (`None`: it
/// reported), and per client how far its first send may be off the
/// controller's clock (ns).
type RemoteRun = (MixRun, Vec<Option<String>>, Vec<u64>);

/// Runs a file mix's clients on the pool's remote agents, one order per
/// client (its users, global numbers), all starting at one wall-clock
/// instant; merges their seconds as they come (a second is handed on once
/// every running client sent it) and their measures at the end: counts
/// add, histograms add. Returns the merged measure, the start, per client
/// why it was lost (`None`: it reported), and per client how far its
/// first send may be off the controller's clock.
fn run_remote(
    mix: &Mix,
    phase: &FilePhase,
    target: &FileTarget,
    plan: &FileMixPlan,
    opts: &RunOptions,
    stop: &AtomicBool,
    observer: &mut dyn Observer,
) -> Result<RemoteRun, ControllerError> {
    let clients = mix.clients as usize;
    let pool = &opts.clients;
    pool.clients_left(clients).map_err(|e| ControllerError::ClientsLost {
        mix: mix.number,
        why: e.to_string(),
    })?;
    let lead = pool
        .before_mix()
        .map_err(|source| ControllerError::Driver { client: 1, source })?;
    let start_at = SystemTime::now() + Duration::from_millis(300 + 2 * clients as u64) + lead;
    // The target as the users connect (a password included; the order
    // travels over the agents' mutual TLS only).
    let target = match target {
        FileTarget::Local(p) => format!("file://{}", p.display()),
        FileTarget::Smb(u) => u.with_password(),
    };
    let mut drivers: Vec<Box<FileClientDriver>> = Vec::with_capacity(clients);
    for c in 0..clients {
        let part = Part {
            first_client: c as u32,
            clients: 1,
            start_at: Some(start_at),
        };
        let order = FileOrder::new(&phase.workload, &target, plan, part)?;
        let started = pool
            .file_driver(c)
            .ok_or_else(|| DriverError::Remote("the pool has no remote clients".into()))
            .and_then(|mut d| d.start(order, start_at).map(|()| d));
        match started {
            Ok(d) => drivers.push(d),
            Err(source) => {
                for d in &mut drivers {
                    d.stop();
                }
                for d in &mut drivers {
                    let _ = d.finish();
                }
                return Err(ControllerError::Driver { client: c + 1, source });
            }
        }
    }
    // Every order is out: now their answers (the barrier).
    crate::driver::all_started(&mut drivers).map_err(|(client, source)| ControllerError::Driver { client, source })?;
    // Per client: the last second it sent; seconds summed until every
    // running client has sent them.
    let mut sent: Vec<u64> = vec![0; clients];
    let mut done = vec![false; clients];
    let mut pending: std::collections::BTreeMap<u64, LiveSecond> = Default::default();
    let mut stopped = false;
    loop {
        if (stop.load(Ordering::Relaxed) || pool.stop_requested()) && !stopped {
            for d in &mut drivers {
                d.stop();
            }
            stopped = true;
        }
        for (c, d) in drivers.iter_mut().enumerate() {
            while let Some(s) = d.next_second(Duration::from_millis(20)) {
                sent[c] = sent[c].max(s.second);
                let p = pending.entry(s.second).or_insert(LiveSecond {
                    second: s.second,
                    operations: 0,
                    errors: 0,
                    bytes: 0,
                });
                p.operations += s.operations;
                p.errors += s.errors;
                p.bytes += s.bytes;
            }
            done[c] = d.is_finished();
        }
        let all_done = done.iter().all(|&d| d);
        while let Some((&second, _)) = pending.first_key_value() {
            let complete = all_done || (0..clients).all(|c| done[c] || sent[c] >= second);
            if !complete {
                break;
            }
            if let Some(s) = pending.remove(&second) {
                observer.second(mix, &live_second(&s));
            }
        }
        if all_done {
            break;
        }
    }
    let mut total = FileStats::default();
    let mut per_client = vec![FileStats::default(); clients];
    let mut lost = vec![None; clients];
    let mut uncertainty = vec![0u64; clients];
    let (mut window, mut prepared_bytes, mut partial) = (0.0f64, 0, stopped);
    let mut cpu_us = [0u64; 2];
    let mut smb = None;
    for (c, d) in drivers.iter_mut().enumerate() {
        match d.finish() {
            Ok(end) => {
                cpu_us = [cpu_us[0] + end.cpu_us[0], cpu_us[1] + end.cpu_us[1]];
                uncertainty[c] = end.first_send_uncertainty_ns;
                let m = end.measure;
                total.merge(&m.total);
                per_client[c] = m.total;
                window = window.max(m.window);
                prepared_bytes += m.prepared_bytes;
                partial |= m.partial;
                smb = benchlab_results::SmbNegotiated::merge(smb, m.smb.as_ref());
            }
            Err(l) => lost[c] = Some(l.why),
        }
    }
    // No client reported (the target unreachable from every agent, say):
    // the run stops here, naming why, rather than keep a mix that measured
    // nothing and reads as the server's collapse.
    if !stopped && lost.iter().all(Option::is_some) {
        let why = lost.iter().flatten().next().cloned().unwrap_or_default();
        return Err(ControllerError::ClientsLost {
            mix: mix.number,
            why: format!("no client of the mix reported; client 1: {why}"),
        });
    }
    let full = (plan.length - plan.ramp_down - plan.ramp_up).as_secs_f64();
    let measure = FileMixMeasure {
        total,
        clients: per_client,
        window: window.min(full),
        prepared_bytes,
        partial,
        smb,
    };
    Ok((
        MixRun {
            measure,
            started: start_at,
            cpu_us,
        },
        lost,
        uncertainty,
    ))
}

/// A second of a running file mix as the observer sees a web one's: its
/// operations are its requests (those that failed its errors too), and
/// seconds count from the window's start, as the mix's result keeps them.
pub(crate) fn live_second(s: &benchlab_fileserver::run::LiveSecond) -> SecondResult {
    SecondResult {
        second: s.second as u32,
        in_window: true,
        requests: s.operations,
        errors: s.errors,
        bytes: s.bytes,
        connections_opened: 0,
        latency_p50_us: 0,
        latency_p99_us: 0,
        client_cpu_user_s: 0.0,
        client_cpu_system_s: 0.0,
        loop_lag_max_us: 0,
    }
}
