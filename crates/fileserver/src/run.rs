//! Running one mix of a file suite: every user (client × thread) on its
//! own OS thread with its own connection (a file-system root, or an SMB
//! session), its workspace prepared before the mix, all started at the
//! same instant (each after its random delay), operations counted only
//! when they complete inside the measurement window.

use crate::backend::{FileBackend, LocalBackend};
use crate::diskmix::{DiskMix, DiskMixUser, Rng};
use crate::loadfile::{Loadfile, OpKind};
use crate::stats::FileStats;
use crate::status::Status;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

/// What a file suite's workload replays.
#[derive(Debug, Clone)]
pub enum FileWorkload {
    DiskMix(Arc<DiskMix>),
    /// A loadfile and the passes each user makes (`None`: until the end).
    Loadfile(Arc<Loadfile>, Option<u32>),
}

/// Where operations go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileTarget {
    /// `file:///PATH`
    Local(PathBuf),
    /// `smb://…`
    Smb(crate::smb::SmbUrl),
}

impl FileTarget {
    pub fn parse(t: &str) -> Result<FileTarget, String> {
        if let Some(p) = t.strip_prefix("file://") {
            if !p.starts_with('/') {
                return Err(format!("target `{t}`: expected file:///ABSOLUTE/PATH"));
            }
            return Ok(FileTarget::Local(PathBuf::from(p)));
        }
        if t.starts_with("smb://") {
            return crate::smb::SmbUrl::parse(t).map(FileTarget::Smb);
        }
        Err(format!(
            "target `{t}`: expected file:///PATH or smb://[USER[:PASS]@]HOST[:PORT]/SHARE"
        ))
    }

    /// A new connection for one user.
    pub fn connect(&self) -> Result<Box<dyn FileBackend>, String> {
        match self {
            FileTarget::Local(p) => {
                if !p.is_dir() {
                    return Err(format!("file://{}: not a directory", p.display()));
                }
                Ok(Box::new(LocalBackend::new(p)))
            }
            FileTarget::Smb(u) => Ok(Box::new(crate::smb::SmbBackend::connect(u)?)),
        }
    }
}

/// One mix's plan (a suite's mix, resolved).
#[derive(Debug, Clone)]
pub struct FileMixPlan {
    pub clients: u32,
    pub threads_per_client: u32,
    pub delay: Duration,
    pub ramp_up: Duration,
    pub ramp_down: Duration,
    pub length: Duration,
    pub think_time: Duration,
    pub seed: u64,
}

/// What one mix measured.
#[derive(Debug, Clone)]
pub struct FileMixMeasure {
    pub total: FileStats,
    /// Per client (test system), its users merged.
    pub clients: Vec<FileStats>,
    /// Seconds the rates divide by: the window, or less when every user
    /// ended its loadfile passes before the window's end.
    pub window: f64,
    /// Bytes written to fill the workspaces before the mix (not counted).
    pub prepared_bytes: u64,
}

/// Runs one mix. `stop` (Ctrl-C) ends it early; what was measured stays.
pub fn run_mix(
    workload: &FileWorkload,
    target: &FileTarget,
    plan: &FileMixPlan,
    stop: &AtomicBool,
) -> Result<FileMixMeasure, String> {
    let users = plan.clients * plan.threads_per_client;
    // Connect and prepare every user before the mix starts: a failure here
    // stops the run with nothing counted.
    let mut conns = Vec::with_capacity(users as usize);
    for _ in 0..users {
        conns.push(target.connect()?);
    }
    // Two gates: every user prepared, then the common start is set.
    let barrier = Arc::new(Barrier::new(users as usize + 1));
    let go = Arc::new(Barrier::new(users as usize + 1));
    let start_cell: Arc<std::sync::OnceLock<Instant>> = Arc::new(std::sync::OnceLock::new());
    let mut delay_rng = Rng::new(plan.seed ^ 0xD1B5_4A32_D192_ED03);
    let results = std::thread::scope(|s| {
        let mut handles = Vec::new();
        for (u, mut b) in conns.into_iter().enumerate() {
            let user = u as u32 + 1;
            let delay = if plan.delay.is_zero() {
                Duration::ZERO
            } else {
                Duration::from_nanos(delay_rng.below(plan.delay.as_nanos() as u64 + 1))
            };
            let barrier = barrier.clone();
            let go = go.clone();
            let start_cell = start_cell.clone();
            handles.push(s.spawn(move || -> Result<(FileStats, u64, Option<Instant>), String> {
                let mut prepared = 0;
                let mut mix_user = None;
                let mut lf_user = None;
                let prep = match workload {
                    FileWorkload::DiskMix(m) => {
                        let mut du = DiskMixUser::new(m, user, plan.seed);
                        let r = du.fill(b.as_mut());
                        mix_user = Some(du);
                        r.map(|n| prepared = n)
                    }
                    FileWorkload::Loadfile(l, _) => {
                        lf_user = Some(crate::replay::LoadfileUser::new(l, user));
                        Ok(())
                    }
                };
                barrier.wait();
                go.wait();
                prep?;
                let t0 = *start_cell.get().expect("the start is set before the barrier opens");
                let (from, to, end) = (t0 + plan.ramp_up, t0 + plan.length - plan.ramp_down, t0 + plan.length);
                sleep_until(t0 + delay, stop);
                let mut st = FileStats::default();
                let mut record = |kind: OpKind, expect: Status, got: Status, us: u64, bytes: u64| {
                    let now = Instant::now();
                    if now >= from && now <= to {
                        st.record(kind, us, &expect, &got);
                        match kind {
                            OpKind::ReadX => st.bytes_read += bytes,
                            OpKind::WriteX => st.bytes_written += bytes,
                            _ => {}
                        }
                    }
                };
                let mut passes = 0u32;
                let mut loops_in_window = 0;
                let mut finished_at = None;
                while Instant::now() < end && !stop.load(Ordering::Relaxed) {
                    if let Some(du) = &mut mix_user {
                        du.step(b.as_mut(), &mut record);
                    } else if let (Some(lu), FileWorkload::Loadfile(_, loops)) = (&mut lf_user, workload) {
                        if lu.step(b.as_mut(), &mut record) {
                            passes += 1;
                            let now = Instant::now();
                            if now >= from && now <= to {
                                loops_in_window += 1;
                            }
                            if loops.is_some_and(|l| passes >= l) {
                                finished_at = Some(now);
                                break;
                            }
                        }
                    }
                    if !plan.think_time.is_zero() {
                        sleep_until((Instant::now() + plan.think_time).min(end), stop);
                    }
                }
                if let Some(du) = &mut mix_user {
                    du.finish(b.as_mut());
                }
                st.loops = loops_in_window;
                Ok((st, prepared, finished_at))
            }));
        }
        // Every user prepared: one start for all, a moment ahead so the
        // threads are waiting on it.
        barrier.wait();
        let _ = start_cell.set(Instant::now() + Duration::from_millis(20));
        go.wait();
        handles.into_iter().map(|h| h.join()).collect::<Vec<_>>()
    });
    let t0 = *start_cell.get().expect("set above");
    let mut total = FileStats::default();
    let mut clients = vec![FileStats::default(); plan.clients as usize];
    let mut prepared_bytes = 0;
    let mut last_finish: Option<Instant> = Some(t0);
    for (u, r) in results.into_iter().enumerate() {
        let (st, prep, fin) = r.map_err(|_| "a file-suite user thread panicked".to_string())??;
        prepared_bytes += prep;
        total.merge(&st);
        clients[u / plan.threads_per_client as usize].merge(&st);
        last_finish = match (last_finish, fin) {
            (Some(a), Some(b)) => Some(a.max(b)),
            _ => None,
        };
    }
    let full = (plan.length - plan.ramp_down - plan.ramp_up).as_secs_f64();
    let window = match last_finish {
        Some(f) => (f.saturating_duration_since(t0 + plan.ramp_up).as_secs_f64()).clamp(1e-6, full),
        None => full,
    };
    Ok(FileMixMeasure {
        total,
        clients,
        window,
        prepared_bytes,
    })
}

fn sleep_until(t: Instant, stop: &AtomicBool) {
    loop {
        let now = Instant::now();
        if now >= t || stop.load(Ordering::Relaxed) {
            return;
        }
        std::thread::sleep((t - now).min(Duration::from_millis(50)));
    }
}
