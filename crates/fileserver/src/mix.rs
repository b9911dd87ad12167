//! Running one mix of a file suite: every user prepared, then all started
//! at one instant — as threads of this process (`file://`) or as processes
//! of their own (`smb://`, [`crate::process`]) — and their counts added.
//! The users' side (what a user does, the live seconds) is [`crate::run`];
//! this module only chooses how users run, so neither of those two modules
//! needs the other's.

use crate::diskmix::Rng;
use crate::error::FileError;
use crate::run::{
    cpu_us, drive_user, prepare_user, report_seconds, FileMixMeasure, FileMixPlan, FileTarget, FileWorkload,
    LiveCounters, LiveSecond, UserOutcome,
};
use crate::stats::FileStats;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant, SystemTime};

/// Runs one mix. `stop` (Ctrl-C) ends it early; what was measured stays.
///
/// Users of a `file://` target are threads of this process; users of an
/// `smb://…?client=benchlab` one run on event loops
/// ([`crate::smb2_loop`]), a few OS threads for thousands of users. Users of a libsmbclient `smb://` target
/// are processes of their own (see [`crate::process`]):
/// libsmbclient's contexts are not safe to drive from several threads of
/// one process (measured: smbd-negotiation state mixed up between
/// threads, an abort), and a global lock around every call would make
/// 32 clients one.
///
/// `on_second` sees each second of the window as it ends: thread users
/// (file://) add to shared counters, user processes (smb://) report theirs
/// on their stdout ten times a second.
pub fn run_mix(
    workload: &FileWorkload,
    target: &FileTarget,
    plan: &FileMixPlan,
    stop: &AtomicBool,
    on_second: &mut dyn FnMut(LiveSecond),
) -> Result<FileMixMeasure, FileError> {
    run_mix_timed(workload, target, plan, stop, on_second).map(|r| r.measure)
}

/// A mix run: what it measured, when its clock started, and the CPU its
/// users took driving it.
#[derive(Debug, Clone)]
pub struct MixRun {
    pub measure: FileMixMeasure,
    /// The wall-clock instant of the users' common start (the window
    /// begins a ramp-up later).
    pub started: SystemTime,
    /// User and system CPU of every user, from its start to its end (its
    /// workspace fill excluded), µs: the load generator's own CPU.
    pub cpu_us: [u64; 2],
}

/// [`run_mix`], with the wall-clock instant the mix's clock started (what
/// the controller reads the monitored hosts' seconds against) and the
/// users' CPU.
pub fn run_mix_timed(
    workload: &FileWorkload,
    target: &FileTarget,
    plan: &FileMixPlan,
    stop: &AtomicBool,
    on_second: &mut dyn FnMut(LiveSecond),
) -> Result<MixRun, FileError> {
    let part = Part {
        first_client: 0,
        clients: plan.clients,
        start_at: None,
    };
    run_mix_part(workload, target, plan, &part, stop, on_second)
}

/// The clients of a mix one process runs: all of them, or an agent's share.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Part {
    /// The first client's number, 0-based over the whole mix: its users
    /// are users `first_client × threads_per_client + 1` on, so every
    /// user keeps its own `\clients\clientN` workspace wherever it runs.
    pub first_client: u32,
    pub clients: u32,
    /// The wall-clock instant the users start at (every agent's at once);
    /// `None`: as soon as every user is prepared. A user still preparing
    /// then starts when it is ready.
    pub start_at: Option<SystemTime>,
}

impl Part {
    fn start(&self) -> Instant {
        let soon = Instant::now() + Duration::from_millis(20);
        match self.start_at.and_then(|at| at.duration_since(SystemTime::now()).ok()) {
            Some(ahead) => soon.max(Instant::now() + ahead),
            None => soon,
        }
    }
}

/// [`run_mix_timed`] of the clients `part` names; the measure's `clients`
/// are those.
pub fn run_mix_part(
    workload: &FileWorkload,
    target: &FileTarget,
    plan: &FileMixPlan,
    part: &Part,
    stop: &AtomicBool,
    on_second: &mut dyn FnMut(LiveSecond),
) -> Result<MixRun, FileError> {
    run_part(workload, target, plan, part, stop, on_second).map_err(FileError::Run)
}

fn run_part(
    workload: &FileWorkload,
    target: &FileTarget,
    plan: &FileMixPlan,
    part: &Part,
    stop: &AtomicBool,
    on_second: &mut dyn FnMut(LiveSecond),
) -> Result<MixRun, String> {
    let all_users = plan.clients * plan.threads_per_client;
    let mut delay_rng = Rng::new(plan.seed ^ 0xD1B5_4A32_D192_ED03);
    // Drawn for every user of the mix, so a user's delay is the same
    // whichever process runs it.
    let all_delays: Vec<Duration> = (0..all_users)
        .map(|_| {
            if plan.delay.is_zero() {
                Duration::ZERO
            } else {
                Duration::from_nanos(delay_rng.below(plan.delay.as_nanos() as u64 + 1))
            }
        })
        .collect();
    let first_user = part.first_client * plan.threads_per_client;
    let delays = all_delays
        .get(first_user as usize..((part.first_client + part.clients) * plan.threads_per_client) as usize)
        .ok_or_else(|| format!("clients {}.. are not clients of the mix", part.first_client + 1))?;
    let mut smb = None;
    // Outcomes, each named by a user (0-based in the part) of the client it counts for.
    let (t0, outcomes): (Instant, Vec<(usize, UserOutcome)>) = match target {
        // libsmbclient's users need processes of their own.
        FileTarget::Smb(u) if u.client == crate::smb::Client::Libsmbclient => crate::process::run_users(
            workload,
            target,
            plan,
            delays,
            first_user,
            part.start(),
            stop,
            on_second,
        )
        .map(|(t0, o)| (t0, o.into_iter().enumerate().collect()))?,
        // benchlab's own SMB2 client: users on event loops, a few OS
        // threads for thousands of users (crate::smb2_loop).
        FileTarget::Smb(u) => crate::smb2_loop::run_users(
            workload,
            u,
            plan,
            delays,
            first_user,
            || part.start(),
            stop,
            on_second,
            &mut smb,
        )?,
        FileTarget::Local(_) => run_threads(
            workload, target, plan, delays, first_user, part, stop, on_second, &mut smb,
        )
        .map(|(t0, o)| (t0, o.into_iter().enumerate().collect()))?,
    };
    let mut total = FileStats::default();
    // A client's first outcome is moved in, not copied: with one outcome a
    // client (its users on one event loop) its counts are held once.
    let mut clients: Vec<Option<FileStats>> = (0..part.clients).map(|_| None).collect();
    let mut prepared_bytes = 0;
    let mut last_finish: Option<Instant> = Some(t0);
    let mut cpu_us = [0u64; 2];
    for (u, r) in outcomes {
        let (st, prep, fin, cpu) = r?;
        prepared_bytes += prep;
        cpu_us = [cpu_us[0] + cpu[0], cpu_us[1] + cpu[1]];
        total.merge(&st);
        match &mut clients[u / plan.threads_per_client as usize] {
            Some(c) => c.merge(&st),
            empty => *empty = Some(st),
        }
        last_finish = match (last_finish, fin) {
            (Some(a), Some(b)) => Some(a.max(b)),
            _ => None,
        };
    }
    let full = (plan.length - plan.ramp_down - plan.ramp_up).as_secs_f64();
    // Stopped early (Ctrl-C): the window ends where the users stopped.
    let partial = stop.load(Ordering::Relaxed);
    if partial {
        last_finish = Some(Instant::now());
    }
    let window = match last_finish {
        Some(f) => (f.saturating_duration_since(t0 + plan.ramp_up).as_secs_f64()).clamp(1e-6, full),
        None => full,
    };
    let started = SystemTime::now() - Instant::now().saturating_duration_since(t0);
    Ok(MixRun {
        measure: FileMixMeasure {
            total,
            clients: clients.into_iter().map(Option::unwrap_or_default).collect(),
            window,
            prepared_bytes,
            partial,
            smb,
        },
        started,
        cpu_us,
    })
}

/// Every user a thread of this process, with its own connection.
#[allow(clippy::too_many_arguments)]
fn run_threads(
    workload: &FileWorkload,
    target: &FileTarget,
    plan: &FileMixPlan,
    delays: &[Duration],
    first_user: u32,
    part: &Part,
    stop: &AtomicBool,
    on_second: &mut dyn FnMut(LiveSecond),
    smb: &mut Option<benchlab_results::SmbNegotiated>,
) -> Result<(Instant, Vec<UserOutcome>), String> {
    let users = delays.len();
    let live = LiveCounters::default();
    // Connect every user before the mix starts: a failure here stops the
    // run with nothing counted.
    let mut conns = Vec::with_capacity(users);
    for _ in 0..users {
        conns.push(target.connect()?);
    }
    for c in &conns {
        *smb = benchlab_results::SmbNegotiated::merge(smb.take(), c.negotiated().as_ref());
    }
    // Two gates: every user prepared, then the common start is set.
    let prepared = Arc::new(Barrier::new(users + 1));
    let go = Arc::new(Barrier::new(users + 1));
    let start_cell: Arc<std::sync::OnceLock<Instant>> = Arc::new(std::sync::OnceLock::new());
    let outcomes = std::thread::scope(|s| {
        let mut handles = Vec::new();
        for (u, mut b) in conns.into_iter().enumerate() {
            let (prepared, go, start_cell, delay) = (prepared.clone(), go.clone(), start_cell.clone(), delays[u]);
            let live = &live;
            handles.push(s.spawn(move || -> UserOutcome {
                let prep = prepare_user(workload, b.as_mut(), first_user + u as u32 + 1, plan.seed);
                prepared.wait();
                go.wait();
                let (mut state, bytes) = prep?;
                let t0 = *start_cell.get().ok_or("the mix's start was not set")?;
                let cpu0 = cpu_us(libc::RUSAGE_THREAD);
                let (st, fin) = drive_user(&mut state, b.as_mut(), plan, delay, t0, stop, Some(live));
                let cpu1 = cpu_us(libc::RUSAGE_THREAD);
                Ok((st, bytes, fin, [cpu1[0] - cpu0[0], cpu1[1] - cpu0[1]]))
            }));
        }
        prepared.wait();
        let t0 = part.start();
        let _ = start_cell.set(t0);
        go.wait();
        report_seconds(&live, plan, t0, &|| handles.iter().all(|h| h.is_finished()), on_second);
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("a file-suite user thread panicked".to_string()))
            })
            .collect::<Vec<_>>()
    });
    let t0 = *start_cell.get().ok_or("the mix's start was not set")?;
    Ok((t0, outcomes))
}
