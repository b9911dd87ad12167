//! A host's counters at one instant, as read (from /proc or from a
//! node_exporter), and the rates between two readings.
//!
//! Counters are kept as f64 in the source's own unit (clock ticks or
//! seconds for CPU time): CPU shares are ratios of time, so the unit
//! cancels; everything else is a count or bytes.

use crate::{CpuShares, DiskSample, HostSample, MemorySample, NicSample, ProcessSample, TopProcess, TOP_PROCESSES};
use benchlab_results::round;
use std::collections::BTreeMap;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// Time of one CPU by where it went, cumulative.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CpuCounters {
    pub user: f64,
    pub nice: f64,
    pub system: f64,
    pub idle: f64,
    pub iowait: f64,
    pub irq: f64,
    pub softirq: f64,
    pub steal: f64,
}

/// One NIC's cumulative counters.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NicCounters {
    pub rx_bytes: f64,
    pub tx_bytes: f64,
    pub rx_packets: f64,
    pub tx_packets: f64,
    pub speed_mbit: Option<u64>,
}

/// One disk's cumulative counters.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DiskCounters {
    pub reads: f64,
    pub writes: f64,
    pub read_bytes: f64,
    pub write_bytes: f64,
    /// Seconds with I/O in flight.
    pub io_seconds: f64,
}

/// The watched processes: CPU seconds per PID and context switches per
/// thread (a PID or thread first seen in a reading counts whole: it was
/// born inside the span).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProcessCounters {
    pub name: String,
    /// PID (a thread id for `of_threads`) → (user s, system s).
    pub pids: BTreeMap<i32, (f64, f64)>,
    /// Thread id → its context switches (voluntary + involuntary), every
    /// thread of the watched processes: /proc/PID/status counts the main
    /// thread's only. A thread that ended is gone with its switches.
    pub switches: BTreeMap<i32, f64>,
    pub threads: u64,
    pub open_files: u64,
    pub cpus: Vec<u32>,
    /// `pids` are thread ids of one process.
    pub of_threads: bool,
}

/// A process that is neither watched nor benchlab's own, as read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OtherProcess {
    /// Its name (`comm`; a kernel worker's changes with its work).
    pub name: String,
    /// When it started (clock ticks since boot): a PID reused by another
    /// process starts at another time.
    pub started: u64,
    /// CPU seconds, user and system.
    pub cpu: f64,
}

/// Everything read at one instant.
#[derive(Debug, Clone)]
pub struct Raw {
    pub at: SystemTime,
    pub mono: Instant,
    pub cpus: Vec<CpuCounters>,
    pub context_switches: f64,
    pub interrupts: f64,
    pub run_queue: f64,
    pub memory: MemorySample,
    pub nics: BTreeMap<String, NicCounters>,
    pub disks: BTreeMap<String, DiskCounters>,
    pub listen_overflows: f64,
    pub listen_drops: f64,
    pub process: Option<ProcessCounters>,
    /// Every other process (not watched, not benchlab's own), by PID: the
    /// busiest become [`HostSample::top_processes`]. Empty where the source
    /// lists none.
    pub others: BTreeMap<i32, OtherProcess>,
}

impl Raw {
    /// An empty reading taken now.
    pub fn now() -> Raw {
        Raw {
            at: SystemTime::now(),
            mono: Instant::now(),
            cpus: Vec::new(),
            context_switches: 0.0,
            interrupts: 0.0,
            run_queue: 0.0,
            memory: MemorySample::default(),
            nics: BTreeMap::new(),
            disks: BTreeMap::new(),
            listen_overflows: 0.0,
            listen_drops: 0.0,
            process: None,
            others: BTreeMap::new(),
        }
    }
}

fn shares(a: &CpuCounters, b: &CpuCounters) -> CpuShares {
    // A counter that went backwards (a CPU brought back online) counts 0.
    let d = |x: f64, y: f64| (y - x).max(0.0);
    CpuShares::of_times(
        d(a.user, b.user),
        d(a.nice, b.nice),
        d(a.system, b.system),
        d(a.idle, b.idle),
        d(a.iowait, b.iowait),
        d(a.irq, b.irq),
        d(a.softirq, b.softirq),
        d(a.steal, b.steal),
    )
}

/// The sample of host `host` from `prev` to `now`: counters as rates per
/// second of the span between the two readings.
pub fn rates(host: &str, prev: &Raw, now: &Raw) -> HostSample {
    let span = now.mono.saturating_duration_since(prev.mono).as_secs_f64().max(1e-3);
    let rate = |a: f64, b: f64| round((b - a).max(0.0) / span, 2);
    let per_core: Vec<CpuShares> = prev.cpus.iter().zip(&now.cpus).map(|(a, b)| shares(a, b)).collect();
    let sum = |c: &[CpuCounters]| {
        c.iter().fold(CpuCounters::default(), |mut s, x| {
            s.user += x.user;
            s.nice += x.nice;
            s.system += x.system;
            s.idle += x.idle;
            s.iowait += x.iowait;
            s.irq += x.irq;
            s.softirq += x.softirq;
            s.steal += x.steal;
            s
        })
    };
    let nics = now
        .nics
        .iter()
        .filter_map(|(name, b)| {
            let a = prev.nics.get(name)?;
            Some(NicSample {
                name: name.clone(),
                rx_bytes_per_sec: rate(a.rx_bytes, b.rx_bytes),
                tx_bytes_per_sec: rate(a.tx_bytes, b.tx_bytes),
                rx_packets_per_sec: rate(a.rx_packets, b.rx_packets),
                tx_packets_per_sec: rate(a.tx_packets, b.tx_packets),
                speed_mbit: b.speed_mbit,
            })
        })
        .collect();
    let disks = now
        .disks
        .iter()
        .filter_map(|(name, b)| {
            let a = prev.disks.get(name)?;
            Some(DiskSample {
                name: name.clone(),
                reads_per_sec: rate(a.reads, b.reads),
                writes_per_sec: rate(a.writes, b.writes),
                read_bytes_per_sec: rate(a.read_bytes, b.read_bytes),
                write_bytes_per_sec: rate(a.write_bytes, b.write_bytes),
                busy_percent: round(((b.io_seconds - a.io_seconds).max(0.0) / span * 100.0).min(100.0), 2),
            })
        })
        .collect();
    let process = now.process.as_ref().map(|p| {
        let (mut user, mut system, mut ctx) = (0.0, 0.0, 0.0);
        let before = prev.process.as_ref();
        for (pid, &(u, s)) in &p.pids {
            // A process born inside the span: everything it used is new.
            let (u0, s0) = before.and_then(|q| q.pids.get(pid)).copied().unwrap_or((0.0, 0.0));
            user += (u - u0).max(0.0);
            system += (s - s0).max(0.0);
        }
        for (tid, &c) in &p.switches {
            let c0 = before.and_then(|q| q.switches.get(tid)).copied().unwrap_or(0.0);
            ctx += (c - c0).max(0.0);
        }
        ProcessSample {
            name: p.name.clone(),
            processes: p.pids.len() as u32,
            of_threads: p.of_threads,
            cpu_user: round(user / span, 4),
            cpu_system: round(system / span, 4),
            threads: p.threads,
            open_files: p.open_files,
            context_switches_per_sec: round(ctx / span, 2),
            cpus: p.cpus.clone(),
        }
    });
    // The busiest other processes: a PID reused by a process that started
    // since counts from zero, like one born inside the span (not one whose
    // name changed: a kernel worker renames itself with its work).
    let mut top: Vec<TopProcess> = now
        .others
        .iter()
        .map(|(&pid, p)| {
            let cpu0 = prev
                .others
                .get(&pid)
                .filter(|q| q.started == p.started)
                .map_or(0.0, |q| q.cpu);
            TopProcess {
                pid,
                name: p.name.clone(),
                cpu: round((p.cpu - cpu0).max(0.0) / span, 4),
            }
        })
        .filter(|t| t.cpu >= 0.01)
        .collect();
    top.sort_by(|a, b| b.cpu.total_cmp(&a.cpu).then(a.pid.cmp(&b.pid)));
    top.truncate(TOP_PROCESSES);
    HostSample {
        host: host.to_string(),
        unix_ms: now.at.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64),
        interval_s: round(span, 3),
        cpu: shares(&sum(&prev.cpus), &sum(&now.cpus)),
        per_core,
        context_switches_per_sec: rate(prev.context_switches, now.context_switches),
        interrupts_per_sec: rate(prev.interrupts, now.interrupts),
        run_queue: now.run_queue,
        memory: now.memory.clone(),
        nics,
        disks,
        listen_overflows_per_sec: rate(prev.listen_overflows, now.listen_overflows),
        listen_drops_per_sec: rate(prev.listen_drops, now.listen_drops),
        process,
        top_processes: top,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn rates_over_the_span_and_new_processes_count_whole() {
        let mut a = Raw::now();
        a.cpus = vec![CpuCounters {
            user: 100.0,
            idle: 100.0,
            ..CpuCounters::default()
        }];
        a.context_switches = 1000.0;
        a.process = Some(ProcessCounters {
            name: "nginx".into(),
            pids: [(1, (1.0, 1.0))].into(),
            switches: [(1, 10.0), (3, 50.0)].into(),
            ..ProcessCounters::default()
        });
        let mut b = a.clone();
        b.mono = a.mono + Duration::from_secs(2);
        b.cpus[0].user = 150.0;
        b.cpus[0].system = 30.0;
        b.cpus[0].idle = 120.0;
        b.context_switches = 3000.0;
        b.process = Some(ProcessCounters {
            name: "nginx".into(),
            pids: [(1, (2.0, 1.5)), (2, (0.5, 0.5))].into(),
            // Threads 1 and 3 of process 1 were there before, 2 is new.
            switches: [(1, 30.0), (2, 10.0), (3, 70.0)].into(),
            ..ProcessCounters::default()
        });
        let other = |name: &str, started: u64, cpu: f64| OtherProcess {
            name: name.into(),
            started,
            cpu,
        };
        a.others = [
            (10, other("stress", 100, 5.0)),
            (11, other("make", 100, 1.0)),
            (14, other("kworker/0:1-events", 1, 30.0)),
        ]
        .into();
        b.others = [
            (10, other("stress", 100, 7.0)),
            (11, other("sh", 200, 0.5)),
            (12, other("cc1", 200, 0.3)),
            (13, other("idle", 200, 0.0)),
            (14, other("kworker/0:1-mm_percpu_wq", 1, 30.2)),
        ]
        .into();
        let s = rates("h", &a, &b);
        let top: Vec<(i32, &str, f64)> = s
            .top_processes
            .iter()
            .map(|t| (t.pid, t.name.as_str(), t.cpu))
            .collect();
        // PID 11 is another process now (it started since): counted whole;
        // the kernel worker renamed itself but is the same process.
        assert_eq!(
            top,
            [
                (10, "stress", 1.0),
                (11, "sh", 0.25),
                (12, "cc1", 0.15),
                (14, "kworker/0:1-mm_percpu_wq", 0.1)
            ]
        );
        assert_eq!(s.interval_s, 2.0);
        assert_eq!(s.context_switches_per_sec, 1000.0);
        assert_eq!((s.cpu.user, s.cpu.system, s.cpu.idle), (50.0, 30.0, 20.0));
        let p = s.process.expect("watched");
        assert_eq!(
            (p.processes, p.cpu_user, p.cpu_system, p.context_switches_per_sec),
            (2, 0.75, 0.5, 25.0)
        );
    }
}
