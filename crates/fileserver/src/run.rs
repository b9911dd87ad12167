//! Running one mix of a file suite: every user (client × thread) on its
//! own OS thread with its own connection (a file-system root, or an SMB
//! session), its workspace prepared before the mix, all started at the
//! same instant (each after its random delay), operations counted only
//! when they complete inside the measurement window.

use crate::backend::{FileBackend, LocalBackend};
use crate::diskmix::{DiskMix, DiskMixUser};
use crate::error::FileError;
use crate::loadfile::{Loadfile, OpKind};
use crate::stats::FileStats;
use crate::status::Status;
use benchlab_input::start::Started;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
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
    /// A suite's or a flag's target; a bad one is the user's input.
    pub fn parse(t: &str) -> Result<FileTarget, FileError> {
        if let Some(p) = t.strip_prefix("file://") {
            if !p.starts_with('/') {
                return Err(FileError::Input(format!(
                    "target `{}`: expected file:///ABSOLUTE/PATH",
                    crate::smb::redact(t)
                )));
            }
            return Ok(FileTarget::Local(PathBuf::from(p)));
        }
        if t.starts_with("smb://") {
            return crate::smb::SmbUrl::parse(t).map(|u| FileTarget::Smb(u.with_default_password()));
        }
        Err(FileError::Input(format!(
            "target `{}`: expected file:///PATH or smb://[USER[:PASS]@]HOST[:PORT]/SHARE",
            crate::smb::redact(t)
        )))
    }

    /// A new connection for one user; a refusal means the mix cannot run.
    pub fn connect(&self) -> Result<Box<dyn FileBackend>, FileError> {
        match self {
            FileTarget::Local(p) => {
                if !p.is_dir() {
                    return Err(FileError::Run(format!("file://{}: not a directory", p.display())));
                }
                Ok(Box::new(LocalBackend::new(p)?))
            }
            FileTarget::Smb(u) if u.client == crate::smb::Client::Benchlab => {
                Ok(Box::new(crate::smb2_backend::Smb2Backend::connect(u)?))
            }
            FileTarget::Smb(u) => Ok(Box::new(crate::smb::SmbBackend::connect(u)?)),
        }
    }
}

/// One mix's plan (a suite's mix, resolved).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
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

/// What one mix measured (serde: an agent sends its share, see
/// [`crate::wire`]).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct FileMixMeasure {
    pub total: FileStats,
    /// Per client (test system), its users merged.
    pub clients: Vec<FileStats>,
    /// Seconds the rates divide by: the window, or less when every user
    /// ended its loadfile passes before the window's end.
    pub window: f64,
    /// Bytes written to fill the workspaces before the mix (not counted).
    pub prepared_bytes: u64,
    /// Stopped before its end (Ctrl-C).
    pub partial: bool,
    /// What the users' SMB sessions negotiated (benchlab's SMB2 client).
    #[serde(default)]
    pub smb: Option<benchlab_results::SmbNegotiated>,
}

/// What users add to as they go (in-window operations only), per second
/// of the window in which each completed — the second its per-second data
/// counts it in — read for the live progress display.
#[derive(Debug, Default)]
pub struct LiveCounters {
    /// Per second of the window (index 0: its first): operations, errors,
    /// bytes. As long as the window has seconds, never longer.
    seconds: std::sync::Mutex<Vec<[u64; 3]>>,
}

/// The most seconds a window's live counts keep (a day): a user process's
/// tick naming a later second is a broken peer, not a second to allocate.
const LIVE_SECONDS_MAX: usize = 86_400;

impl LiveCounters {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<[u64; 3]>> {
        self.seconds.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn add(&self, second: usize, error: bool, bytes: u64) {
        self.add_counts(second, 1, u64::from(error), bytes);
    }

    /// Adds counts to second `second` of the window (a user process's,
    /// since its last tick).
    pub(crate) fn add_counts(&self, second: usize, operations: u64, errors: u64, bytes: u64) {
        if second >= LIVE_SECONDS_MAX {
            return;
        }
        let mut s = self.lock();
        if s.len() <= second {
            s.resize(second + 1, [0; 3]);
        }
        let c = &mut s[second];
        c[0] += operations;
        c[1] += errors;
        c[2] += bytes;
    }

    /// Every second's counts so far.
    pub(crate) fn snapshot(&self) -> Vec<[u64; 3]> {
        self.lock().clone()
    }
}

/// One second of a mix as it runs, for the progress display: what users
/// completed in it, all of them summed.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LiveSecond {
    /// 1-based, from the start of the measurement window.
    pub second: u64,
    pub operations: u64,
    pub errors: u64,
    /// Bytes read and written.
    pub bytes: u64,
}

/// How long after a second of the window ends it is handed on: its last
/// operations' counts have reached `live` by then (a user process ticks
/// ten times a second).
const LIVE_GRACE: Duration = Duration::from_millis(250);

/// Calls `on_second` with each second of the window once it has ended,
/// from what the users added to `live` for it, until `done()`; then with
/// the seconds left (a part of one at the window's end, users that ended
/// early). Each second holds what the mix's per-second data counts in it;
/// counts that came for a second already handed on (a late tick) go into
/// the next one, so the seconds always sum to the mix.
pub(crate) fn report_seconds(
    live: &LiveCounters,
    plan: &FileMixPlan,
    t0: Instant,
    done: &dyn Fn() -> bool,
    on_second: &mut dyn FnMut(LiveSecond),
) {
    let (from, to) = (t0 + plan.ramp_up, t0 + plan.length - plan.ramp_down);
    // Per second handed on: what it held then.
    let mut handed: Vec<[u64; 3]> = Vec::new();
    let mut late = [0u64; 3];
    let mut hand_on = |all: &[[u64; 3]], handed: &mut Vec<[u64; 3]>| {
        let k = handed.len();
        // What came late for seconds already handed on.
        for (i, h) in handed.iter_mut().enumerate() {
            let now = all.get(i).copied().unwrap_or_default();
            for j in 0..3 {
                late[j] += now[j].saturating_sub(h[j]);
            }
            *h = now;
        }
        let c = all.get(k).copied().unwrap_or_default();
        on_second(LiveSecond {
            second: k as u64 + 1,
            operations: c[0] + late[0],
            errors: c[1] + late[1],
            bytes: c[2] + late[2],
        });
        late = [0; 3];
        handed.push(c);
    };
    let next = |handed: &Vec<[u64; 3]>| from + Duration::from_secs(handed.len() as u64 + 1) + LIVE_GRACE;
    while !done() {
        let now = Instant::now();
        let due = next(&handed);
        if now >= due && due <= to + Duration::from_millis(999) + LIVE_GRACE {
            hand_on(&live.snapshot(), &mut handed);
            continue;
        }
        std::thread::sleep(due.saturating_duration_since(now).min(Duration::from_millis(20)));
    }
    let all = live.snapshot();
    let moved = |handed: &Vec<[u64; 3]>| {
        handed
            .iter()
            .enumerate()
            .any(|(i, h)| all.get(i).copied().unwrap_or_default() != *h)
    };
    while handed.len() < all.len() || moved(&handed) {
        hand_on(&all, &mut handed);
    }
}

/// A user made ready for the mix: its workspace filled (disk mix).
pub(crate) enum UserState<'a> {
    DiskMix(DiskMixUser<'a>),
    Loadfile(crate::replay::LoadfileUser<'a>, Option<u32>),
}

/// Prepares user `user` (1-based) before the mix; the bytes it wrote.
pub(crate) fn prepare_user<'a>(
    workload: &'a FileWorkload,
    b: &mut dyn FileBackend,
    user: u32,
    seed: u64,
) -> Result<(UserState<'a>, u64), String> {
    match workload {
        FileWorkload::DiskMix(m) => {
            let mut du = DiskMixUser::new(m, user, seed);
            let n = du.fill(b)?;
            Ok((UserState::DiskMix(du), n))
        }
        FileWorkload::Loadfile(l, loops) => Ok((
            UserState::Loadfile(crate::replay::LoadfileUser::new(l, user), *loops),
            0,
        )),
    }
}

/// Drives a prepared user from `t0` (plus its delay) to the mix's end;
/// what it measured in the window, and when it ended its passes (a
/// loadfile with `loops`).
pub(crate) fn drive_user(
    state: &mut UserState<'_>,
    b: &mut dyn FileBackend,
    plan: &FileMixPlan,
    delay: Duration,
    t0: Instant,
    stop: &AtomicBool,
    live: Option<&LiveCounters>,
) -> (FileStats, Option<Instant>) {
    let mut st = FileStats::default();
    // The start (the first wait) lands as close to its instant as the
    // machine allows, and hands out its guard (the thread may run
    // real-time until the first send is noted); a think time is the
    // backend's (an SMB2 session takes a break that comes meanwhile, the
    // others sleep).
    let mut first = true;
    let fin = drive_user_with(state, b, plan, delay, t0, stop, live, &mut st, &mut |b, t| {
        if std::mem::take(&mut first) {
            Some(benchlab_input::start::wait_until(t, stop))
        } else {
            b.think_until(t, stop);
            None
        }
    });
    (st, fin)
}

/// Where a user's counts go: its own [`FileStats`] (a thread user), or
/// one that the users of a client on one event loop share — a user's
/// histograms are hundreds of kilobytes, a thousand users' would be the
/// process's memory.
pub(crate) trait Tally {
    fn tally(&mut self, f: &mut dyn FnMut(&mut FileStats));
}

impl Tally for FileStats {
    fn tally(&mut self, f: &mut dyn FnMut(&mut FileStats)) {
        f(self)
    }
}

/// [`drive_user`], waiting (its start delay, think time) with `pause`,
/// which returns at the instant given or when `stop` is set: a thread
/// sleeps, an event loop's user gives its thread to the others. What the
/// first pause returns (a thread's start guard, which may keep it
/// real-time) is dropped as soon as the first send is noted.
#[allow(clippy::too_many_arguments)]
pub(crate) fn drive_user_with(
    state: &mut UserState<'_>,
    b: &mut dyn FileBackend,
    plan: &FileMixPlan,
    delay: Duration,
    t0: Instant,
    stop: &AtomicBool,
    live: Option<&LiveCounters>,
    tally: &mut dyn Tally,
    pause: &mut dyn FnMut(&mut dyn FileBackend, Instant) -> Option<Started>,
) -> Option<Instant> {
    let (from, to, end) = (t0 + plan.ramp_up, t0 + plan.length - plan.ramp_down, t0 + plan.length);
    let started = pause(b, t0 + delay);
    // The start spread's figure: when the first operation leaves, less
    // the user's own drawn delay (docs/counting.md, "Start spread").
    tally.tally(&mut |st| st.note_first_send(delay));
    // Noted: the thread's own scheduling policy again.
    drop(started);
    // The wire bytes of each operation: what the connection's meter grew
    // by since the last one ended (its preparation's are not counted).
    let meter = b.wire_meter();
    let mut seen = meter.as_ref().map(|m| m.get()).unwrap_or_default();
    let mut record = |kind: OpKind, expect: Status, got: Status, us: u64, bytes: u64| {
        let now = Instant::now();
        let wire = meter.as_ref().map(|m| {
            let w = m.get();
            let d: [u64; 4] = std::array::from_fn(|i| w[i] - seen[i]);
            seen = w;
            d
        });
        if now >= from && now <= to {
            let (read, written) = match kind {
                OpKind::ReadX => (bytes, 0),
                OpKind::WriteX => (0, bytes),
                _ => (0, 0),
            };
            tally.tally(&mut |st| {
                st.record(kind, us, &expect, &got);
                st.bytes_read += read;
                st.bytes_written += written;
                if let Some(d) = wire {
                    let w = st.wire.get_or_insert([0; 4]);
                    *w = std::array::from_fn(|i| w[i] + d[i]);
                }
                if got != Status::NotSent {
                    st.record_second((now - from).as_secs() as usize, expect != got, read, written);
                }
            });
            if got != Status::NotSent {
                let second = (now - from).as_secs() as usize;
                if let Some(l) = live {
                    l.add(second, expect != got, read + written);
                }
            }
        }
    };
    let mut passes = 0u32;
    let mut loops_in_window = 0;
    let mut finished_at = None;
    while Instant::now() < end && !stop.load(Ordering::Relaxed) {
        match state {
            UserState::DiskMix(du) => du.step(b, &mut record),
            UserState::Loadfile(lu, loops) => {
                if lu.step(b, &mut record) {
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
        }
        if !plan.think_time.is_zero() {
            drop(pause(b, (Instant::now() + plan.think_time).min(end)));
        }
    }
    if let UserState::DiskMix(du) = state {
        du.finish(b);
    }
    tally.tally(&mut |st| st.loops += loops_in_window);
    finished_at
}

/// What one user brings back: its counts, the bytes its workspace fill
/// wrote, when it ended its passes, and the CPU it used driving the mix
/// (user and system µs).
pub(crate) type UserOutcome = Result<(FileStats, u64, Option<Instant>, [u64; 2]), String>;

/// User and system CPU µs of the calling thread (`who`: RUSAGE_THREAD) or
/// process (RUSAGE_SELF).
pub(crate) fn cpu_us(who: libc::c_int) -> [u64; 2] {
    // SAFETY: rusage is plain integers, for which all-zero bytes are valid.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes into the struct we own and borrow mutably.
    if unsafe { libc::getrusage(who, &mut ru) } != 0 {
        return [0; 2];
    }
    let us = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    [us(ru.ru_utime), us(ru.ru_stime)]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mix::run_mix;

    /// The live seconds of a file:// mix add up exactly to what the mix
    /// counted, and so do its per-second data.
    #[test]
    fn live_seconds_and_per_second_data_sum_to_the_mix() {
        let dir = tempfile::tempdir().unwrap();
        let lf = dir.path().join("load.txt");
        std::fs::write(
            &lf,
            "NTCreateX \"\\\\a.txt\" 0x40 0x2 1 NT_STATUS_OK\nWriteX 1 0 512 512 NT_STATUS_OK\n\
             ReadX 1 0 512 512 NT_STATUS_OK\nClose 1 NT_STATUS_OK\n",
        )
        .unwrap();
        let root = dir.path().join("root");
        std::fs::create_dir_all(&root).unwrap();
        let workload = FileWorkload::Loadfile(Arc::new(Loadfile::read(&lf).unwrap()), None);
        let plan = FileMixPlan {
            clients: 2,
            threads_per_client: 1,
            delay: Duration::ZERO,
            ramp_up: Duration::from_millis(200),
            ramp_down: Duration::from_millis(100),
            length: Duration::from_millis(1_800),
            think_time: Duration::from_millis(2),
            seed: 1,
        };
        let mut seen = Vec::new();
        let m = run_mix(
            &workload,
            &FileTarget::Local(root),
            &plan,
            &AtomicBool::new(false),
            &mut |s| seen.push(s),
        )
        .unwrap();
        assert!(m.total.operations() > 0);
        let live_ops: u64 = seen.iter().map(|s| s.operations).sum();
        let live_bytes: u64 = seen.iter().map(|s| s.bytes).sum();
        assert_eq!(live_ops, m.total.operations());
        assert_eq!(live_bytes, m.total.bytes_read + m.total.bytes_written);
        let numbers: Vec<u64> = seen.iter().map(|s| s.second).collect();
        assert_eq!(numbers, (1..=seen.len() as u64).collect::<Vec<_>>());
        let per_second_ops: u64 = m.total.seconds.iter().map(|s| s.operations).sum();
        let per_second_read: u64 = m.total.seconds.iter().map(|s| s.bytes_read).sum();
        assert_eq!(per_second_ops, m.total.operations());
        assert_eq!(per_second_read, m.total.bytes_read);
        // A 1.5 s window: two seconds, the second one a half.
        assert_eq!(m.total.seconds.len(), 2);
        // Each live second is the mix's own second: an operation is in the
        // second it completed in, live as in the results.
        let live: Vec<(u64, u64)> = seen.iter().map(|s| (s.operations, s.bytes)).collect();
        let kept: Vec<(u64, u64)> = m
            .total
            .seconds
            .iter()
            .map(|s| (s.operations, s.bytes_read + s.bytes_written))
            .collect();
        assert_eq!(live, kept);
    }
}
