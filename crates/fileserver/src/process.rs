//! Users as processes of their own (SMB targets): the mix's process
//! starts one child per user (`benchlab __file-user`, set with
//! [`set_user_command`]), hands it its job on stdin as one JSON line, and
//! the child answers `ready` once connected and prepared, starts at the
//! common instant the parent sends (CLOCK_MONOTONIC nanoseconds, the same
//! clock in every process of the machine), and writes back what it
//! measured, histograms included, as one JSON line.

use crate::run::{
    drive_user, prepare_user, report_seconds, FileMixPlan, FileTarget, FileWorkload, LiveCounters, LiveSecond,
    UserOutcome,
};
use crate::stats::{FileStats, OpStats};
use base64::Engine;
use hdrhistogram::serialization::{Serializer, V2Serializer};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

static USER_COMMAND: OnceLock<Vec<OsString>> = OnceLock::new();

/// The program and arguments that run one user (`benchlab __file-user`);
/// set once by the binary before an smb:// suite runs.
pub fn set_user_command(cmd: Vec<OsString>) {
    let _ = USER_COMMAND.set(cmd);
}

#[derive(Debug, Serialize, Deserialize)]
struct Job {
    target: String,
    /// "disk_mix" or "loadfile".
    kind: String,
    path: PathBuf,
    loops: Option<u32>,
    user: u32,
    seed: u64,
    delay_ns: u64,
    ramp_up_ns: u64,
    ramp_down_ns: u64,
    length_ns: u64,
    think_ns: u64,
}

#[derive(Debug, Serialize, Deserialize)]
struct WireOp {
    count: u64,
    errors: u64,
    #[serde(default)]
    not_sent: u64,
    /// V2-serialised HDR histogram, base64.
    latency: String,
}

#[derive(Debug, Serialize, Deserialize)]
struct WireOutcome {
    ops: Vec<WireOp>,
    bytes_read: u64,
    bytes_written: u64,
    errors: BTreeMap<String, u64>,
    loops: u64,
    prepared: u64,
    finished_ns: Option<u64>,
    #[serde(default)]
    seconds: Vec<crate::stats::SecondStats>,
    /// The process's user and system CPU µs over the mix.
    #[serde(default)]
    cpu_us: [u64; 2],
}

/// CLOCK_MONOTONIC now, in nanoseconds (what `Instant` reads on Linux).
fn mono_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a timespec to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn instant_of(ns: u64) -> Instant {
    let (now, now_ns) = (Instant::now(), mono_ns());
    if ns >= now_ns {
        now + Duration::from_nanos(ns - now_ns)
    } else {
        now - Duration::from_nanos(now_ns - ns)
    }
}

fn ns_of(t: Instant) -> u64 {
    let (now, now_ns) = (Instant::now(), mono_ns());
    if t >= now {
        now_ns + (t - now).as_nanos() as u64
    } else {
        now_ns.saturating_sub((now - t).as_nanos() as u64)
    }
}

fn encode(st: &FileStats, prepared: u64, finished: Option<Instant>, cpu_us: [u64; 2]) -> Result<String, String> {
    let mut ops = Vec::new();
    for o in &st.ops {
        let mut buf = Vec::new();
        V2Serializer::new()
            .serialize(&o.latency, &mut buf)
            .map_err(|e| format!("{e:?}"))?;
        ops.push(WireOp {
            count: o.count,
            errors: o.errors,
            not_sent: o.not_sent,
            latency: base64::engine::general_purpose::STANDARD.encode(buf),
        });
    }
    serde_json::to_string(&WireOutcome {
        ops,
        bytes_read: st.bytes_read,
        bytes_written: st.bytes_written,
        errors: st.errors.clone(),
        loops: st.loops,
        prepared,
        finished_ns: finished.map(ns_of),
        seconds: st.seconds.clone(),
        cpu_us,
    })
    .map_err(|e| e.to_string())
}

fn decode(line: &str) -> UserOutcome {
    let w: WireOutcome = serde_json::from_str(line).map_err(|e| format!("a user process answered `{line}`: {e}"))?;
    let mut st = FileStats::default();
    if w.ops.len() != st.ops.len() {
        return Err("a user process answered another number of operation kinds".into());
    }
    for (o, wo) in st.ops.iter_mut().zip(w.ops) {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(wo.latency)
            .map_err(|e| e.to_string())?;
        *o = OpStats {
            count: wo.count,
            errors: wo.errors,
            latency: crate::stats::latency_of_v2(&bytes)?,
            not_sent: wo.not_sent,
        };
    }
    st.bytes_read = w.bytes_read;
    st.bytes_written = w.bytes_written;
    st.errors = w.errors;
    st.loops = w.loops;
    st.seconds = w.seconds;
    Ok((st, w.prepared, w.finished_ns.map(instant_of), w.cpu_us))
}

struct UserProc {
    child: Child,
    out: BufReader<std::process::ChildStdout>,
}

impl Drop for UserProc {
    fn drop(&mut self) {
        // A user that did not finish (an error elsewhere) is not left behind.
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

fn read_line(p: &mut UserProc) -> Result<String, String> {
    let mut l = String::new();
    p.out.read_line(&mut l).map_err(|e| e.to_string())?;
    Ok(l.trim_end().to_string())
}

/// Runs every user of the mix as a process of its own.
#[allow(clippy::too_many_arguments)]
pub(crate) fn run_users(
    workload: &FileWorkload,
    target: &FileTarget,
    plan: &FileMixPlan,
    delays: &[Duration],
    first_user: u32,
    start: Instant,
    stop: &AtomicBool,
    on_second: &mut dyn FnMut(LiveSecond),
) -> Result<(Instant, Vec<UserOutcome>), String> {
    let cmd = USER_COMMAND.get().ok_or(
        "smb:// users run as processes of their own, and no user command was set (run it through `benchlab run`)",
    )?;
    let (kind, path, loops) = match workload {
        FileWorkload::DiskMix(m) => ("disk_mix", m.path.clone(), None),
        FileWorkload::Loadfile(l, loops) => ("loadfile", l.path.clone(), *loops),
    };
    let FileTarget::Smb(url) = target else {
        return Err("users as processes are for smb:// targets".into());
    };
    let mut procs = Vec::new();
    for (u, d) in delays.iter().enumerate() {
        let job = Job {
            // The password goes on the user's stdin, never its command line.
            target: url.with_password(),
            kind: kind.into(),
            path: path.clone(),
            loops,
            user: first_user + u as u32 + 1,
            seed: plan.seed,
            delay_ns: d.as_nanos() as u64,
            ramp_up_ns: plan.ramp_up.as_nanos() as u64,
            ramp_down_ns: plan.ramp_down.as_nanos() as u64,
            length_ns: plan.length.as_nanos() as u64,
            think_ns: plan.think_time.as_nanos() as u64,
        };
        let mut child = Command::new(&cmd[0])
            .args(&cmd[1..])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start a user process ({:?}): {e}", cmd[0]))?;
        let mut stdin = child.stdin.take().ok_or("no stdin to a user process")?;
        let out = BufReader::new(child.stdout.take().ok_or("no stdout from a user process")?);
        let line = serde_json::to_string(&job).map_err(|e| e.to_string())? + "\n";
        stdin.write_all(line.as_bytes()).map_err(|e| e.to_string())?;
        // The child keeps its stdin for the start line.
        child.stdin = Some(stdin);
        procs.push(UserProc { child, out });
    }
    for p in &mut procs {
        let l = read_line(p)?;
        if l != "ready" {
            return Err(l.strip_prefix("error ").map(str::to_string).unwrap_or_else(|| {
                format!(
                    "a user process ended before it was ready{}",
                    if l.is_empty() { String::new() } else { format!(": {l}") }
                )
            }));
        }
    }
    let t0 = start.max(Instant::now() + Duration::from_millis(50));
    let go = format!("go {}\n", ns_of(t0));
    for p in &mut procs {
        if let Some(s) = p.child.stdin.as_mut() {
            s.write_all(go.as_bytes()).map_err(|e| e.to_string())?;
            let _ = s.flush();
        }
    }
    // A reader per user: its `tick` lines (counts so far) go to the live
    // counters as they come, its last line is its outcome.
    let live = LiveCounters::default();
    let lasts: Vec<Result<String, String>> = std::thread::scope(|s| {
        let live = &live;
        let handles: Vec<_> = procs
            .iter_mut()
            .map(|p| {
                s.spawn(move || -> Result<String, String> {
                    // Per second: what this user reported for it so far.
                    let mut seen: std::collections::BTreeMap<u64, [u64; 3]> = Default::default();
                    loop {
                        let l = read_line(p)?;
                        let Some(counts) = l.strip_prefix("tick ") else {
                            return Ok(l);
                        };
                        let n: Vec<u64> = counts.split(' ').filter_map(|x| x.parse().ok()).collect();
                        if let [second, ops, errors, bytes] = n[..] {
                            let s = seen.entry(second).or_default();
                            live.add_counts(
                                second as usize,
                                ops.saturating_sub(s[0]),
                                errors.saturating_sub(s[1]),
                                bytes.saturating_sub(s[2]),
                            );
                            *s = [ops.max(s[0]), errors.max(s[1]), bytes.max(s[2])];
                        }
                    }
                })
            })
            .collect();
        report_seconds(live, plan, t0, &|| handles.iter().all(|h| h.is_finished()), on_second);
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("a user process's reader panicked".into()))
            })
            .collect()
    });
    let mut outcomes = Vec::new();
    for l in lasts {
        let l = l?;
        if l.is_empty() && stop.load(std::sync::atomic::Ordering::Relaxed) {
            // Ctrl-C reached the user too: nothing to count from it.
            outcomes.push(Ok((FileStats::default(), 0, None, [0; 2])));
            continue;
        }
        outcomes.push(decode(&l));
    }
    Ok((t0, outcomes))
}

/// The child's side: job on stdin, `ready`, the start line, the outcome.
/// Returns the process exit code.
pub fn user_main() -> i32 {
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let say = |s: &str| {
        let mut o = std::io::stdout().lock();
        let _ = writeln!(o, "{s}");
        let _ = o.flush();
    };
    let mut line = String::new();
    if input.read_line(&mut line).is_err() {
        return 2;
    }
    let job: Job = match serde_json::from_str(line.trim()) {
        Ok(j) => j,
        Err(e) => {
            say(&format!("error bad job: {e}"));
            return 2;
        }
    };
    let prepared = (|| -> Result<_, String> {
        let workload = match job.kind.as_str() {
            "disk_mix" => FileWorkload::DiskMix(Arc::new(
                crate::diskmix::DiskMix::read(&job.path).map_err(|e| e.to_string())?,
            )),
            _ => FileWorkload::Loadfile(
                Arc::new(crate::loadfile::Loadfile::read(&job.path).map_err(|e| e.to_string())?),
                job.loops,
            ),
        };
        let target = FileTarget::parse(&job.target)?;
        let b = target.connect()?;
        Ok((workload, b))
    })();
    let (workload, mut b) = match prepared {
        Ok(x) => x,
        Err(e) => {
            say(&format!("error {e}"));
            return 1;
        }
    };
    let (mut state, bytes) = match prepare_user(&workload, b.as_mut(), job.user, job.seed) {
        Ok(x) => x,
        Err(e) => {
            say(&format!("error {e}"));
            return 1;
        }
    };
    say("ready");
    line.clear();
    if input.read_line(&mut line).is_err() {
        return 1;
    }
    let Some(t0) = line.trim().strip_prefix("go ").and_then(|n| n.parse::<u64>().ok()) else {
        return 1;
    };
    let plan = FileMixPlan {
        clients: 1,
        threads_per_client: 1,
        delay: Duration::ZERO,
        ramp_up: Duration::from_nanos(job.ramp_up_ns),
        ramp_down: Duration::from_nanos(job.ramp_down_ns),
        length: Duration::from_nanos(job.length_ns),
        think_time: Duration::from_nanos(job.think_ns),
        seed: job.seed,
    };
    let stop = AtomicBool::new(false);
    // Ten times a second, the counts so far (when they changed), for the
    // parent's live display; the outcome line comes after the last one.
    let live = LiveCounters::default();
    let done = AtomicBool::new(false);
    let ((st, fin), cpu) = std::thread::scope(|s| {
        let ticker = s.spawn(|| {
            // Per second of the window: its counts so far (`tick SECOND
            // OPS ERRORS BYTES`, 0-based), when they changed.
            let mut last: Vec<[u64; 3]> = Vec::new();
            let tick = |last: &mut Vec<[u64; 3]>| {
                let now = live.snapshot();
                for (i, c) in now.iter().enumerate() {
                    if last.get(i) != Some(c) {
                        say(&format!("tick {i} {} {} {}", c[0], c[1], c[2]));
                    }
                }
                *last = now;
            };
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(100));
                tick(&mut last);
            }
            // What came after the last tick: every count reaches the parent.
            tick(&mut last);
        });
        let cpu0 = crate::run::cpu_us(libc::RUSAGE_SELF);
        let r = drive_user(
            &mut state,
            b.as_mut(),
            &plan,
            Duration::from_nanos(job.delay_ns),
            instant_of(t0),
            &stop,
            Some(&live),
        );
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        let _ = ticker.join();
        let cpu1 = crate::run::cpu_us(libc::RUSAGE_SELF);
        (r, [cpu1[0].saturating_sub(cpu0[0]), cpu1[1].saturating_sub(cpu0[1])])
    });
    drop(state);
    drop(b);
    match encode(&st, bytes, fin, cpu) {
        Ok(l) => {
            say(&l);
            0
        }
        Err(e) => {
            say(&format!("error {e}"));
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::loadfile::OpKind;
    use crate::status::Status;

    #[test]
    fn an_outcome_crosses_the_pipe_exactly() {
        let mut st = FileStats::default();
        for us in [3, 70, 70, 900, 12_000] {
            st.record(OpKind::WriteX, us, &Status::Ok, &Status::Ok);
        }
        st.record(OpKind::Flush, 5, &Status::Ok, &Status::NotSupported);
        st.record(OpKind::LockX, 5, &Status::Ok, &Status::NotSent);
        st.bytes_read = 7;
        st.bytes_written = 1 << 40;
        st.loops = 3;
        st.record_second(0, false, 7, 0);
        st.record_second(2, true, 0, 9);
        let fin = Instant::now() + Duration::from_millis(5);
        let (back, prepared, f, cpu) = decode(&encode(&st, 99, Some(fin), [5, 6]).unwrap()).unwrap();
        assert_eq!((prepared, cpu), (99, [5, 6]));
        let drift = f.unwrap().max(fin) - f.unwrap().min(fin);
        assert!(drift < Duration::from_millis(1), "{drift:?}");
        assert_eq!((back.bytes_read, back.bytes_written, back.loops), (7, 1 << 40, 3));
        assert_eq!(back.errors, st.errors);
        assert_eq!(back.seconds, st.seconds);
        for (a, b) in back.ops.iter().zip(&st.ops) {
            assert_eq!((a.count, a.errors, a.not_sent), (b.count, b.errors, b.not_sent));
            assert_eq!(a.latency, b.latency);
        }
        assert!(decode("not json").is_err());
    }
}
