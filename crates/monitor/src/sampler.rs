//! Reading this machine: /proc and /sys through the `procfs` crate, except
//! the three things it does not cover — the `intr` total of /proc/stat,
//! `TcpExt` of /proc/net/netstat, and NIC link speeds in /sys — which are
//! a line or a number each.

use crate::raw::{rates, CpuCounters, DiskCounters, NicCounters, OtherProcess, ProcessCounters, Raw};
use crate::{HostSample, MemorySample, MonitorError};
use procfs::{Current, CurrentSI};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The server process to watch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Watch {
    /// Only the host.
    Nothing,
    /// One process by PID.
    Pid(i32),
    /// Every process whose name (`comm`, as `ps` shows it) is this one,
    /// summed: nginx's master and its workers, Apache's children.
    Name(String),
    /// The threads of process `pid` named `name`: a server that runs inside
    /// the load generator's own process (`benchlab demo`'s reference
    /// server, threads `benchlab-serve`) without the generator's threads.
    Threads { pid: i32, name: String },
}

/// Samples this machine: [`Sampler::sample`] gives the rates since the
/// previous call (or since [`Sampler::new`]).
#[derive(Debug)]
pub struct Sampler {
    host: String,
    watch: Watch,
    ticks: f64,
    prev: Raw,
}

impl Sampler {
    /// Takes the first reading of this machine, named `host` in samples.
    pub fn new(host: &str, watch: Watch) -> Result<Sampler, MonitorError> {
        let ticks = procfs::ticks_per_second().max(1) as f64;
        let prev = read(&watch, ticks)?;
        Ok(Sampler {
            host: host.to_string(),
            watch,
            ticks,
            prev,
        })
    }

    /// The machine since the last reading.
    pub fn sample(&mut self) -> Result<HostSample, MonitorError> {
        let now = read(&self.watch, self.ticks)?;
        let s = rates(&self.host, &self.prev, &now);
        self.prev = now;
        Ok(s)
    }
}

/// This machine's name (`/proc/sys/kernel/hostname`), or `localhost`.
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "localhost".to_string())
}

fn read(watch: &Watch, ticks: f64) -> Result<Raw, MonitorError> {
    let mut r = Raw::now();
    let k = procfs::KernelStats::current().map_err(|e| MonitorError::proc("/proc/stat", e))?;
    r.cpus = k
        .cpu_time
        .iter()
        .map(|c| CpuCounters {
            user: c.user as f64,
            nice: c.nice as f64,
            system: c.system as f64,
            idle: c.idle as f64,
            iowait: c.iowait.unwrap_or(0) as f64,
            irq: c.irq.unwrap_or(0) as f64,
            softirq: c.softirq.unwrap_or(0) as f64,
            steal: c.steal.unwrap_or(0) as f64,
        })
        .collect();
    r.context_switches = k.ctxt as f64;
    r.run_queue = f64::from(k.procs_running.unwrap_or(0));
    r.interrupts = std::fs::read_to_string("/proc/stat")
        .ok()
        .and_then(|s| interrupts_total(&s))
        .unwrap_or(0.0);
    if let Ok(m) = procfs::Meminfo::current() {
        let cache = m.cached + m.buffers + m.s_reclaimable.unwrap_or(0);
        r.memory = MemorySample {
            total_bytes: m.mem_total,
            used_bytes: m.mem_total.saturating_sub(m.mem_free + cache),
            page_cache_bytes: m.cached,
        };
    }
    if let Ok(devs) = procfs::net::dev_status() {
        for (name, d) in devs {
            let speed_mbit = link_speed(&name);
            r.nics.insert(
                name,
                NicCounters {
                    rx_bytes: d.recv_bytes as f64,
                    tx_bytes: d.sent_bytes as f64,
                    rx_packets: d.recv_packets as f64,
                    tx_packets: d.sent_packets as f64,
                    speed_mbit,
                },
            );
        }
    }
    if let Ok(disks) = procfs::diskstats() {
        for d in disks.into_iter().filter(|d| is_whole_disk(&d.name)) {
            r.disks.insert(
                d.name.clone(),
                DiskCounters {
                    reads: d.reads as f64,
                    writes: d.writes as f64,
                    // Sectors of /proc/diskstats are always 512 bytes.
                    read_bytes: d.sectors_read as f64 * 512.0,
                    write_bytes: d.sectors_written as f64 * 512.0,
                    io_seconds: d.time_in_progress as f64 / 1000.0,
                },
            );
        }
    }
    if let Some((overflows, drops)) = std::fs::read_to_string("/proc/net/netstat")
        .ok()
        .and_then(|s| listen_counters(&s))
    {
        r.listen_overflows = overflows;
        r.listen_drops = drops;
    }
    // One pass over /proc: every process's name and CPU time, for a watch
    // by name and for the busiest other processes.
    let all: Vec<(i32, OtherProcess)> = match procfs::process::all_processes() {
        Ok(ps) => ps
            .filter_map(Result::ok)
            .take(MAX_PROCESSES)
            .filter_map(|p| {
                let st = p.stat().ok()?;
                let cpu = (st.utime + st.stime) as f64 / ticks;
                Some((
                    p.pid,
                    OtherProcess {
                        name: st.comm,
                        started: st.starttime,
                        cpu,
                    },
                ))
            })
            .collect(),
        Err(e) if matches!(watch, Watch::Name(_)) => return Err(MonitorError::proc("/proc", e)),
        Err(_) => Vec::new(),
    };
    r.process = match watch {
        Watch::Nothing => None,
        Watch::Pid(pid) => Some(processes(&pid.to_string(), [*pid].into_iter(), ticks)),
        Watch::Name(name) => {
            let comm = comm_of(name);
            let pids = all.iter().filter(|(_, p)| p.name == comm).map(|(pid, _)| *pid);
            Some(processes(name, pids, ticks))
        }
        Watch::Threads { pid, name } => Some(threads(*pid, name, ticks)),
    };
    // The busiest others leave out the server (whatever its watch) and this
    // process (the load generator, or the monitor itself).
    let mut mine: BTreeSet<i32> = r.process.iter().flat_map(|p| p.pids.keys().copied()).collect();
    mine.insert(std::process::id() as i32);
    if let Watch::Threads { pid, .. } = watch {
        mine.insert(*pid);
    }
    r.others = all.into_iter().filter(|(pid, _)| !mine.contains(pid)).collect();
    Ok(r)
}

/// Processes read per reading at most: the scan of /proc stays bounded on
/// a host with very many (a busy host's busiest are rarely past it).
const MAX_PROCESSES: usize = 16_384;

/// Threads of the watched processes whose context switches are read per
/// reading at most (each is a /proc/PID/task/TID/status).
const MAX_THREADS: usize = 16_384;

/// The counters of `pids` together (those that vanished while read are
/// left out: they ended): CPU per process, context switches per thread.
fn processes(name: &str, pids: impl Iterator<Item = i32>, ticks: f64) -> ProcessCounters {
    let mut c = ProcessCounters {
        name: name.to_string(),
        ..ProcessCounters::default()
    };
    let mut cpus = BTreeSet::new();
    for pid in pids {
        let Ok(p) = procfs::process::Process::new(pid) else {
            continue;
        };
        let Ok(stat) = p.stat() else { continue };
        // The process's stat counts all its threads' CPU (those that ended
        // too); its status's switches are the main thread's alone, so each
        // thread's are read.
        c.pids.insert(pid, cpu_of(&stat, ticks));
        if let Ok(status) = p.status() {
            add_cpus(&status, &mut cpus);
        }
        for t in p.tasks().into_iter().flatten().filter_map(Result::ok) {
            if c.switches.len() >= MAX_THREADS {
                break;
            }
            if let Ok(status) = t.status() {
                c.switches.insert(t.tid, switches_of(&status));
            }
        }
        c.threads += stat.num_threads.max(0) as u64;
        c.open_files += p.fd_count().unwrap_or(0) as u64;
    }
    c.cpus = cpus.into_iter().collect();
    c
}

/// A task's (a process's or a thread's) user and system CPU seconds.
fn cpu_of(stat: &procfs::process::Stat, ticks: f64) -> (f64, f64) {
    (stat.utime as f64 / ticks, stat.stime as f64 / ticks)
}

/// One task's context switches, voluntary and involuntary.
fn switches_of(status: &procfs::process::Status) -> f64 {
    (status.voluntary_ctxt_switches.unwrap_or(0) + status.nonvoluntary_ctxt_switches.unwrap_or(0)) as f64
}

/// Adds the CPUs a task may run on (its affinity) to `cpus`.
fn add_cpus(status: &procfs::process::Status, cpus: &mut BTreeSet<u32>) {
    for &(a, b) in status.cpus_allowed_list.iter().flatten() {
        cpus.extend(a..=b.min(a + 4096));
    }
}

/// The counters of the threads of `pid` named `name`, keyed by thread id;
/// open files are the whole process's (threads share them).
fn threads(pid: i32, name: &str, ticks: f64) -> ProcessCounters {
    let mut c = ProcessCounters {
        name: name.to_string(),
        of_threads: true,
        ..ProcessCounters::default()
    };
    let Ok(p) = procfs::process::Process::new(pid) else {
        return c;
    };
    let mut cpus = BTreeSet::new();
    for t in p.tasks().into_iter().flatten().filter_map(Result::ok).take(MAX_THREADS) {
        let Ok(stat) = t.stat() else { continue };
        if stat.comm != name {
            continue;
        }
        c.pids.insert(t.tid, cpu_of(&stat, ticks));
        if let Ok(status) = t.status() {
            c.switches.insert(t.tid, switches_of(&status));
            add_cpus(&status, &mut cpus);
        }
        c.threads += 1;
    }
    c.open_files = p.fd_count().unwrap_or(0) as u64;
    c.cpus = cpus.into_iter().collect();
    c
}

/// A process name as the kernel keeps it (`comm`): its first 15 bytes
/// (TASK_COMM_LEN), cut at a character boundary, so that a longer name
/// asked for still matches.
fn comm_of(name: &str) -> String {
    let mut end = 0;
    for (i, c) in name.char_indices() {
        if i + c.len_utf8() > 15 {
            break;
        }
        end = i + c.len_utf8();
    }
    name[..end].to_string()
}

/// Block devices that are whole disks (listed in /sys/block), not their
/// partitions, nor loop or RAM devices (not disks a server reads).
fn is_whole_disk(name: &str) -> bool {
    !name.starts_with("loop") && !name.starts_with("ram") && Path::new("/sys/block").join(name).exists()
}

/// Link speed of a NIC in Mbit/s; `None` where /sys gives none (loopback,
/// virtual interfaces answer EINVAL or -1).
fn link_speed(nic: &str) -> Option<u64> {
    std::fs::read_to_string(Path::new("/sys/class/net").join(nic).join("speed"))
        .ok()?
        .trim()
        .parse::<i64>()
        .ok()
        .filter(|&s| s > 0)
        .map(|s| s as u64)
}

/// The `intr` line's first number (all interrupts since boot): the one
/// /proc/stat figure `procfs::KernelStats` leaves out.
fn interrupts_total(stat: &str) -> Option<f64> {
    stat.lines()
        .find_map(|l| l.strip_prefix("intr "))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|n| n.parse().ok())
}

/// `TcpExt: ListenOverflows` and `ListenDrops` of /proc/net/netstat (a
/// header line of names, then a line of values): procfs reads /proc/net/snmp
/// but not this file.
fn listen_counters(netstat: &str) -> Option<(f64, f64)> {
    let mut lines = netstat.lines().filter(|l| l.starts_with("TcpExt:"));
    let names: Vec<&str> = lines.next()?.split_whitespace().collect();
    let values: Vec<&str> = lines.next()?.split_whitespace().collect();
    let map: BTreeMap<&str, f64> = names
        .into_iter()
        .zip(values)
        .skip(1)
        .filter_map(|(n, v)| Some((n, v.parse().ok()?)))
        .collect();
    Some((*map.get("ListenOverflows")?, *map.get("ListenDrops")?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_names_match_as_the_kernel_keeps_them() {
        assert_eq!(comm_of("nginx"), "nginx");
        assert_eq!(comm_of("a-very-long-process-name"), "a-very-long-pro");
        assert_eq!(comm_of("ééééééééé"), "ééééééé");
    }

    #[test]
    fn parses_the_lines_procfs_leaves_out() {
        assert_eq!(interrupts_total("cpu 1 2\nintr 12345 0 1 2\nctxt 9\n"), Some(12345.0));
        assert_eq!(interrupts_total("cpu 1 2\n"), None);
        let netstat = "TcpExt: SyncookiesSent ListenOverflows ListenDrops\nTcpExt: 0 17 19\nIpExt: A\nIpExt: 1\n";
        assert_eq!(listen_counters(netstat), Some((17.0, 19.0)));
        assert_eq!(listen_counters("IpExt: A\nIpExt: 1\n"), None);
    }

    #[test]
    fn watches_processes_by_name_and_threads_by_name() {
        let comm = std::fs::read_to_string("/proc/self/comm").expect("comm");
        let mut s = Sampler::new("here", Watch::Name(comm.trim().to_string())).expect("/proc");
        let p = s.sample().expect("sample").process.expect("watched");
        assert!(p.processes >= 1 && !p.of_threads, "{p:?}");
        // A thread of this process by its name, spinning: its CPU only.
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let st = stop.clone();
        let spin = std::thread::Builder::new()
            .name("mon-test-spin".into())
            .spawn(move || {
                let mut x = 0u64;
                while !st.load(std::sync::atomic::Ordering::Relaxed) {
                    x = std::hint::black_box(x.wrapping_add(1));
                }
            })
            .expect("spawn");
        let watch = Watch::Threads {
            pid: std::process::id() as i32,
            name: "mon-test-spin".into(),
        };
        let mut s = Sampler::new("here", watch).expect("/proc");
        std::thread::sleep(std::time::Duration::from_millis(300));
        let p = s.sample().expect("sample").process.expect("watched");
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        spin.join().expect("join");
        assert_eq!((p.processes, p.threads, p.of_threads), (1, 1, true), "{p:?}");
        assert!(p.cpu_user + p.cpu_system > 0.0, "the spinning thread used CPU: {p:?}");
    }

    /// A child process killed and reaped on drop (a failed assertion
    /// leaves nothing running).
    struct Child(std::process::Child);

    impl Drop for Child {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }

    /// `python3 -c PROGRAM` with its stdin a pipe kept open.
    fn python(program: &str) -> Child {
        Child(
            std::process::Command::new("python3")
                .args(["-c", program])
                .stdin(std::process::Stdio::piped())
                .spawn()
                .expect("python3 (scripts/test.sh installs it)"),
        )
    }

    /// Context switches of a task, from its status file.
    fn switches_at(path: &str) -> f64 {
        let status = std::fs::read_to_string(path).unwrap_or_default();
        status
            .lines()
            .filter(|l| l.starts_with("voluntary_ctxt_switches:") || l.starts_with("nonvoluntary_ctxt_switches:"))
            .filter_map(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
            .sum()
    }

    /// The switches of every thread of `pid`, summed, and of its main thread.
    fn switches_of_tasks(pid: i32) -> (f64, f64) {
        let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).expect("task dir");
        let all = tasks
            .filter_map(Result::ok)
            .map(|t| switches_at(&format!("{}/status", t.path().display())))
            .sum();
        (all, switches_at(&format!("/proc/{pid}/status")))
    }

    #[test]
    fn a_watched_process_counts_the_switches_of_all_its_threads() {
        // Four threads sleeping 1 ms at a time switch thousands of times a
        // second; the main thread waits on stdin and hardly switches at all.
        let child = python(
            "import sys, threading, time\n\
             def nap():\n    while True: time.sleep(0.001)\n\
             for _ in range(4): threading.Thread(target=nap, daemon=True).start()\n\
             sys.stdin.read()\n",
        );
        let pid = child.0.id() as i32;
        let started = std::time::Instant::now();
        while std::fs::read_dir(format!("/proc/{pid}/task")).map_or(0, |d| d.count()) < 5 {
            assert!(
                started.elapsed() < std::time::Duration::from_secs(20),
                "the threads never started"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let mut s = Sampler::new("here", Watch::Pid(pid)).expect("/proc");
        let (all0, main0) = switches_of_tasks(pid);
        std::thread::sleep(std::time::Duration::from_millis(500));
        let (all1, main1) = switches_of_tasks(pid);
        let h = s.sample().expect("sample");
        let p = h.process.expect("watched");
        // The monitor's span holds this one: at least the threads' sum
        // (less the rounding of a rate and a span), far above the main
        // thread's alone.
        let counted = p.context_switches_per_sec * h.interval_s;
        let (all, main) = (all1 - all0, main1 - main0);
        assert!(all > 100.0, "the threads slept: {all} switches");
        assert!(
            counted >= all * 0.99,
            "{counted} switches counted, {all} over the threads"
        );
        assert!(
            counted > main * 10.0 + 50.0,
            "{counted} switches counted, {main} of the main thread"
        );
        assert_eq!(p.threads, 5, "{p:?}");
    }

    #[test]
    fn the_busiest_other_processes_leave_out_the_watched_and_this_one() {
        let burner = python("while True: pass\n");
        let pid = burner.0.id() as i32;
        let ticks = procfs::ticks_per_second().max(1) as f64;
        let started = std::time::Instant::now();
        let cpu = || {
            read(&Watch::Nothing, ticks)
                .expect("/proc")
                .others
                .get(&pid)
                .map_or(0.0, |p| p.cpu)
        };
        while cpu() < 0.05 {
            assert!(
                started.elapsed() < std::time::Duration::from_secs(30),
                "the burner never ran"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let r = read(&Watch::Nothing, ticks).expect("/proc");
        let me = std::process::id() as i32;
        assert!(
            r.others.get(&pid).is_some_and(|p| p.name.starts_with("python3")),
            "{:?}",
            r.others.get(&pid)
        );
        assert!(!r.others.contains_key(&me));
        let r = read(&Watch::Pid(pid), ticks).expect("/proc");
        assert!(!r.others.contains_key(&pid) && !r.others.contains_key(&me));
        assert!(r.process.is_some_and(|p| p.pids.contains_key(&pid)));
    }

    #[test]
    fn samples_this_machine_and_a_process_by_pid() {
        let me = std::process::id() as i32;
        let mut s = Sampler::new("here", Watch::Pid(me)).expect("/proc is readable");
        let start = std::time::Instant::now();
        let mut x = 0u64;
        while start.elapsed() < std::time::Duration::from_millis(200) {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        let h = s.sample().expect("second reading");
        assert_eq!(h.host, "here");
        assert!(!h.per_core.is_empty());
        assert!(h.memory.total_bytes > 0);
        assert!(h.nics.iter().any(|n| n.name == "lo"), "{:?}", h.nics);
        let p = h.process.expect("watched");
        assert_eq!(p.processes, 1);
        assert!(p.threads >= 1 && p.open_files >= 1);
        assert!(!p.cpus.is_empty());
        // A JSON round trip gives the same sample (what a remote monitor sends).
        let h2 = s.sample().expect("third reading");
        let back: HostSample = serde_json::from_slice(&serde_json::to_vec(&h2).expect("json")).expect("parse");
        assert_eq!(back, h2);
    }
}
