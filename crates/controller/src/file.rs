//! File mixes on the suite loop: a phase whose workload is a file workload
//! (a disk mix or a dbench loadfile, target `file://` or `smb://`) runs its
//! mixes through `benchlab_fileserver`, and each mix comes back as the same
//! [`MixResult`] a web mix gives — with the generator's CPU, the monitored
//! hosts' seconds and the verdict attached here exactly as for web mixes —
//! so phases, `--repeat`, the observer (`--web`, the progress display),
//! Ctrl-C, `--find-peak`, `--cold-cache` and the results writer are the
//! suite loop's own.

use crate::options::{ControllerError, Observer, RunOptions};
use crate::verdict::mix_resources;
use benchlab_engine::sys;
use benchlab_fileserver::{FileMixPlan, FileTarget, FileWorkload};
use benchlab_model::{Mix, Suite};
use benchlab_results::resources::GeneratorCores;
use benchlab_results::{ClientCpu, MixResult, SecondResult};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

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
        FileTarget::parse(target).map_err(ControllerError::Input)?;
        let workload = benchlab_fileserver::suite::load_workload(w).map_err(ControllerError::Input)?;
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

/// This process's CPU and its waited-for children's (the `smb://` user
/// processes), user and system.
fn process_cpu() -> (Duration, Duration) {
    let child = {
        // SAFETY: rusage is plain integers, for which all-zero bytes are valid.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: getrusage writes into the struct we own and borrow mutably.
        let rc = unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) };
        let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, (t.tv_usec as u32) * 1000);
        if rc == 0 {
            (tv(ru.ru_utime), tv(ru.ru_stime))
        } else {
            (Duration::ZERO, Duration::ZERO)
        }
    };
    let own = sys::cpu_time(false);
    (own.0 + child.0, own.1 + child.1)
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
    let target = FileTarget::parse(&mix.params.target).map_err(ControllerError::Input)?;
    let plan = plan_of(suite, mix);
    // A disk mix fills every user's workspace before the mix's clock
    // starts, which takes a while on a big workspace: say so.
    if let FileWorkload::DiskMix(d) = &phase.workload {
        observer.note(&format!(
            "mix {}: filling workspaces ({}) first",
            mix.number,
            benchlab_format::plural(d.workspace, "byte per user", "bytes per user")
        ));
    }
    let cpu0 = process_cpu();
    let wall0 = Instant::now();
    let (m, started) = benchlab_fileserver::run_mix_timed(&phase.workload, &target, &plan, stop, &mut |s| {
        observer.second(mix, &live_second(&s))
    })
    .map_err(|e| ControllerError::Target(format!("mix {}: {e}", mix.number)))?;
    let wall = wall0.elapsed();
    let cpu = {
        let c = process_cpu();
        (c.0.saturating_sub(cpu0.0), c.1.saturating_sub(cpu0.1))
    };
    let users = mix.clients * mix.params.threads_per_client;
    let mut result = benchlab_fileserver::unified_mix_result(mix, phase_name, users, &m);
    let completed = m.total.operations();
    // A user is one OS thread (or process): the cores it may use are at
    // most its users, within this process's CPUs.
    let cores = (users as usize).min(sys::usable_cpus()).max(1);
    let co_located = co_located(&target);
    result.client_cpu_s = benchlab_results::round((cpu.0 + cpu.1).as_secs_f64(), 3);
    result.client_cpu = ClientCpu::measure(cpu.0, cpu.1, wall, cores, completed).with_machine(None, co_located);
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
