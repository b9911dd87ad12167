//! Reading this machine: /proc and /sys through the `procfs` crate, except
//! the three things it does not cover — the `intr` total of /proc/stat,
//! `TcpExt` of /proc/net/netstat, and NIC link speeds in /sys — which are
//! a line or a number each.

use crate::raw::{rates, CpuCounters, DiskCounters, NicCounters, ProcessCounters, Raw};
use crate::{HostSample, MemorySample, MonitorError};
use procfs::{Current, CurrentSI};
use std::collections::BTreeMap;
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
    r.process = match watch {
        Watch::Nothing => None,
        Watch::Pid(pid) => Some(processes(&pid.to_string(), [*pid].into_iter(), ticks)),
        Watch::Name(name) => {
            let comm = comm_of(name);
            let pids: Vec<i32> = procfs::process::all_processes()
                .map_err(|e| MonitorError::proc("/proc", e))?
                .filter_map(Result::ok)
                .filter(|p| p.stat().is_ok_and(|s| s.comm == comm))
                .map(|p| p.pid)
                .collect();
            Some(processes(name, pids.into_iter(), ticks))
        }
        Watch::Threads { pid, name } => Some(threads(*pid, name, ticks)),
    };
    Ok(r)
}

/// The counters of `pids` together (those that vanished while read are
/// left out: they ended).
fn processes(name: &str, pids: impl Iterator<Item = i32>, ticks: f64) -> ProcessCounters {
    let mut c = ProcessCounters {
        name: name.to_string(),
        ..ProcessCounters::default()
    };
    let mut cpus = std::collections::BTreeSet::new();
    for pid in pids {
        let Ok(p) = procfs::process::Process::new(pid) else {
            continue;
        };
        let Ok(stat) = p.stat() else { continue };
        c.pids.insert(pid, task(&stat, p.status().ok(), ticks, &mut cpus));
        c.threads += stat.num_threads.max(0) as u64;
        c.open_files += p.fd_count().unwrap_or(0) as u64;
    }
    c.cpus = cpus.into_iter().collect();
    c
}

/// One task's (a process's or a thread's) CPU seconds and context
/// switches; adds the CPUs it may run on to `cpus`.
fn task(
    stat: &procfs::process::Stat,
    status: Option<procfs::process::Status>,
    ticks: f64,
    cpus: &mut std::collections::BTreeSet<u32>,
) -> (f64, f64, f64) {
    let ctx = status.as_ref().map_or(0, |s| {
        s.voluntary_ctxt_switches.unwrap_or(0) + s.nonvoluntary_ctxt_switches.unwrap_or(0)
    });
    for (a, b) in status.and_then(|s| s.cpus_allowed_list).unwrap_or_default() {
        cpus.extend(a..=b.min(a + 4096));
    }
    (stat.utime as f64 / ticks, stat.stime as f64 / ticks, ctx as f64)
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
    let mut cpus = std::collections::BTreeSet::new();
    for t in p.tasks().into_iter().flatten().filter_map(Result::ok) {
        let Ok(stat) = t.stat() else { continue };
        if stat.comm != name {
            continue;
        }
        c.pids.insert(t.tid, task(&stat, t.status().ok(), ticks, &mut cpus));
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
