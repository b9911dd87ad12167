//! What limited a mix: the resources of the machines involved, second by
//! second, and the verdict drawn from them.
//!
//! A monitored host (the server under test, or the machine the load ran
//! on) gives one [`HostSample`] a second: its CPUs split by where the time
//! went, context switches, interrupts, run queue, memory, every NIC and
//! disk, and the watched server process. Counters are turned into rates
//! when sampled, so a sample stands alone: it travels as one JSON object
//! (a remote monitor sends exactly that), and a mix's average is the
//! field-by-field mean of its seconds ([`HostSample::mean`]).
//!
//! [`verdict`] names the resource that limited a mix — the server's CPU,
//! a NIC, a disk, the load generator, or none of them (then the server
//! software or its back end) — with its evidence in words, as seed 002's
//! "What are the bottlenecks?" did by hand with perfmon and vmstat.

use crate::{round, ClientCpu, CLIENT_BOUND_SHARE};
use serde::{Deserialize, Serialize};

/// Where a set of CPUs spent their time over a span, each a percentage of
/// that time (of all the set's cores together: 100 = every core all the
/// time). `nice` is counted in `user`, guest time is already inside it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CpuShares {
    pub user: f64,
    pub system: f64,
    pub iowait: f64,
    pub irq: f64,
    pub softirq: f64,
    /// Taken by the hypervisor for other guests.
    pub steal: f64,
    pub idle: f64,
}

impl CpuShares {
    /// Busy: everything but idle and iowait (a CPU waiting for a disk could
    /// run something else).
    /// 0 when no time was measured (all shares zero), not 100.
    pub fn busy(&self) -> f64 {
        let measured = self.user + self.system + self.iowait + self.irq + self.softirq + self.steal + self.idle;
        if measured <= 0.0 {
            return 0.0;
        }
        (100.0 - self.idle - self.iowait).clamp(0.0, 100.0)
    }

    /// Time in the kernel on behalf of processes and interrupts: system,
    /// irq and softirq (seed 002's "privileged time").
    pub fn kernel(&self) -> f64 {
        self.system + self.irq + self.softirq
    }

    /// The shares of time deltas in any one unit (clock ticks, seconds):
    /// user, nice, system, idle, iowait, irq, softirq, steal; all zero for
    /// no time.
    #[allow(clippy::too_many_arguments)]
    pub fn of_times(
        user: f64,
        nice: f64,
        system: f64,
        idle: f64,
        iowait: f64,
        irq: f64,
        softirq: f64,
        steal: f64,
    ) -> Self {
        let total = user + nice + system + idle + iowait + irq + softirq + steal;
        if total <= 0.0 {
            return CpuShares::default();
        }
        let p = |t: f64| round(t * 100.0 / total, 2);
        CpuShares {
            user: p(user + nice),
            system: p(system),
            iowait: p(iowait),
            irq: p(irq),
            softirq: p(softirq),
            steal: p(steal),
            idle: p(idle),
        }
    }

    /// The mean of several sets' shares (equal weights: cores of one host).
    pub fn mean<'a>(all: impl IntoIterator<Item = &'a CpuShares>) -> CpuShares {
        Self::weighted_mean(all.into_iter().map(|c| (c, 1.0)))
    }

    /// The mean of several spans' shares, each weighing its length (seconds
    /// of a window: a short catch-up span counts for what it covers).
    pub fn weighted_mean<'a>(all: impl IntoIterator<Item = (&'a CpuShares, f64)>) -> CpuShares {
        let mut m = CpuShares::default();
        let mut n = 0.0;
        for (c, w) in all {
            m.user += c.user * w;
            m.system += c.system * w;
            m.iowait += c.iowait * w;
            m.irq += c.irq * w;
            m.softirq += c.softirq * w;
            m.steal += c.steal * w;
            m.idle += c.idle * w;
            n += w;
        }
        if n > 0.0 {
            for v in [
                &mut m.user,
                &mut m.system,
                &mut m.iowait,
                &mut m.irq,
                &mut m.softirq,
                &mut m.steal,
                &mut m.idle,
            ] {
                *v = round(*v / n, 2);
            }
        }
        m
    }
}

/// Memory of a host, bytes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MemorySample {
    pub total_bytes: u64,
    /// Total less free, buffers, page cache and reclaimable slab: what
    /// processes and the kernel hold.
    pub used_bytes: u64,
    /// File pages in memory (`Cached`): files a server sends from memory.
    pub page_cache_bytes: u64,
}

/// One network interface over a second.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NicSample {
    pub name: String,
    pub rx_bytes_per_sec: f64,
    pub tx_bytes_per_sec: f64,
    pub rx_packets_per_sec: f64,
    pub tx_packets_per_sec: f64,
    /// Link speed in Mbit/s (`/sys/class/net/NAME/speed`); null where the
    /// interface has none (loopback, virtual interfaces) or it is unknown.
    pub speed_mbit: Option<u64>,
}

impl NicSample {
    /// The busier direction in Mbit/s (10⁶ bits): a full-duplex link is
    /// full when either direction is.
    pub fn mbit_per_sec(&self) -> f64 {
        self.rx_bytes_per_sec.max(self.tx_bytes_per_sec) * 8.0 / 1e6
    }

    /// Both directions together, bytes per second: what the NIC carried.
    pub fn bytes_per_sec(&self) -> f64 {
        self.rx_bytes_per_sec + self.tx_bytes_per_sec
    }

    /// The busier direction as a percentage of the link speed, when known.
    pub fn link_percent(&self) -> Option<f64> {
        self.speed_mbit
            .filter(|&s| s > 0)
            .map(|s| self.mbit_per_sec() * 100.0 / s as f64)
    }
}

/// One block device over a second.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DiskSample {
    pub name: String,
    pub reads_per_sec: f64,
    pub writes_per_sec: f64,
    pub read_bytes_per_sec: f64,
    pub write_bytes_per_sec: f64,
    /// Share of the second with I/O in flight (`%util` of iostat), 0–100.
    pub busy_percent: f64,
}

impl DiskSample {
    pub fn ops_per_sec(&self) -> f64 {
        self.reads_per_sec + self.writes_per_sec
    }
}

/// The watched server process (every process of its name together, e.g.
/// nginx's master and workers) over a second.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ProcessSample {
    /// The name or PID asked for (`--process-name`, `--pid`).
    pub name: String,
    /// Processes found (0: none ran this second); threads, for a watch of
    /// a process's threads (`of_threads`).
    pub processes: u32,
    /// The watch is of some threads of one process (a server running
    /// inside benchlab's own process), not of whole processes.
    #[serde(default)]
    pub of_threads: bool,
    /// CPU seconds per second in user mode (1.0 = one core all second).
    pub cpu_user: f64,
    /// CPU seconds per second in the kernel on its behalf.
    pub cpu_system: f64,
    pub threads: u64,
    pub open_files: u64,
    /// Context switches of all its threads per second (voluntary: waits
    /// for I/O; involuntary: preempted), summed over the threads alive at
    /// each reading: a thread that ended inside a span takes its last
    /// switches with it.
    pub context_switches_per_sec: f64,
    /// CPUs its processes may run on (their affinity), ascending: the
    /// cores whose load [`verdict`] judges the server by.
    pub cpus: Vec<u32>,
}

/// A process by the CPU it used over a span: the host's busiest processes
/// besides the watched server and benchlab's own, so that a verdict can
/// name what else kept a busy machine busy (another tenant, a build).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TopProcess {
    pub pid: i32,
    /// Its name (`comm`, as `ps` shows it).
    pub name: String,
    /// CPU seconds per second, user and system (1.0 is one core).
    pub cpu: f64,
}

/// How many of the busiest other processes a sample keeps.
pub const TOP_PROCESSES: usize = 5;

/// One second of a monitored host: counters turned into rates over the
/// span since the previous sample, levels as read at its end.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct HostSample {
    /// The host's name (its hostname, or what the user called it).
    pub host: String,
    /// When the span ended: milliseconds since the Unix epoch.
    pub unix_ms: u64,
    /// Length of the span the rates cover, seconds (about 1).
    pub interval_s: f64,
    /// All CPUs together.
    pub cpu: CpuShares,
    /// Each CPU, by number (`cpu0` first).
    pub per_core: Vec<CpuShares>,
    pub context_switches_per_sec: f64,
    pub interrupts_per_sec: f64,
    /// Runnable tasks at the end of the span (`procs_running`).
    pub run_queue: f64,
    pub memory: MemorySample,
    pub nics: Vec<NicSample>,
    pub disks: Vec<DiskSample>,
    /// TCP connections dropped because a listen queue was full (`TcpExt
    /// ListenOverflows`), per second, host-wide.
    pub listen_overflows_per_sec: f64,
    /// SYNs dropped at a listen socket for any reason (`ListenDrops`).
    pub listen_drops_per_sec: f64,
    /// The watched server process; absent when none was asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process: Option<ProcessSample>,
    /// The busiest processes other than the watched server and benchlab's
    /// own, most CPU first, at most [`TOP_PROCESSES`] (a local monitor
    /// only: a node_exporter does not list processes).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub top_processes: Vec<TopProcess>,
}

impl HostSample {
    /// The busy share (0–100) of the listed CPUs, or of all when `cpus` is
    /// empty or names none this host has.
    pub fn busy_of(&self, cpus: &[u32]) -> f64 {
        self.cpu_of(cpus).busy()
    }

    /// The shares of the listed CPUs (all when `cpus` is empty or names
    /// none this host has).
    pub fn cpu_of(&self, cpus: &[u32]) -> CpuShares {
        let picked: Vec<&CpuShares> = cpus.iter().filter_map(|&c| self.per_core.get(c as usize)).collect();
        if picked.is_empty() {
            self.cpu.clone()
        } else {
            CpuShares::mean(picked)
        }
    }

    /// The NIC that carried the load: the one with the most bytes, both
    /// directions together (`lo` for a loopback run); `None` when no NIC
    /// carried any. The report's network figures and the verdict name it.
    pub fn load_nic(&self) -> Option<&NicSample> {
        self.nics
            .iter()
            .filter(|n| n.bytes_per_sec() > 0.0)
            .fold(None, |best: Option<&NicSample>, n| match best {
                Some(b) if b.bytes_per_sec() >= n.bytes_per_sec() => Some(b),
                _ => Some(n),
            })
    }

    /// The mean of `samples` over their window (a mix's average), field by
    /// field, each sample weighing its span (`interval_s`): a 0.002 s
    /// catch-up sample counts for 0.002 s, not for a second. Rates and
    /// levels averaged, NICs and disks matched by name, the process's CPU
    /// list taken from the last sample, the busiest other processes
    /// re-ranked by their CPU over the window. `None` for no samples.
    pub fn mean(samples: &[HostSample]) -> Option<HostSample> {
        let last = samples.last()?;
        // Spans of old results (or hand-made samples) may be missing: equal
        // weights then.
        let weights: Vec<f64> = if samples.iter().all(|s| s.interval_s > 0.0) {
            samples.iter().map(|s| s.interval_s).collect()
        } else {
            vec![1.0; samples.len()]
        };
        let total: f64 = weights.iter().sum();
        let weighted = || samples.iter().zip(weights.iter().copied());
        let avg = |f: &dyn Fn(&HostSample) -> f64| round(weighted().map(|(s, w)| f(s) * w).sum::<f64>() / total, 3);
        let cores = samples.iter().map(|s| s.per_core.len()).min().unwrap_or(0);
        let per_core = (0..cores)
            .map(|i| CpuShares::weighted_mean(weighted().map(|(s, w)| (&s.per_core[i], w))))
            .collect();
        let nics = last
            .nics
            .iter()
            .map(|nic| {
                let of = |f: &dyn Fn(&NicSample) -> f64| {
                    round(
                        weighted()
                            .filter_map(|(s, w)| s.nics.iter().find(|x| x.name == nic.name).map(|x| f(x) * w))
                            .sum::<f64>()
                            / total,
                        1,
                    )
                };
                NicSample {
                    name: nic.name.clone(),
                    rx_bytes_per_sec: of(&|x| x.rx_bytes_per_sec),
                    tx_bytes_per_sec: of(&|x| x.tx_bytes_per_sec),
                    rx_packets_per_sec: of(&|x| x.rx_packets_per_sec),
                    tx_packets_per_sec: of(&|x| x.tx_packets_per_sec),
                    speed_mbit: nic.speed_mbit,
                }
            })
            .collect();
        let disks = last
            .disks
            .iter()
            .map(|disk| {
                let of = |f: &dyn Fn(&DiskSample) -> f64| {
                    round(
                        weighted()
                            .filter_map(|(s, w)| s.disks.iter().find(|x| x.name == disk.name).map(|x| f(x) * w))
                            .sum::<f64>()
                            / total,
                        2,
                    )
                };
                DiskSample {
                    name: disk.name.clone(),
                    reads_per_sec: of(&|x| x.reads_per_sec),
                    writes_per_sec: of(&|x| x.writes_per_sec),
                    read_bytes_per_sec: of(&|x| x.read_bytes_per_sec),
                    write_bytes_per_sec: of(&|x| x.write_bytes_per_sec),
                    busy_percent: of(&|x| x.busy_percent),
                }
            })
            .collect();
        let process = last.process.as_ref().map(|p| {
            let procs: Vec<(&ProcessSample, f64)> = weighted()
                .filter_map(|(s, w)| s.process.as_ref().map(|p| (p, w)))
                .collect();
            let k: f64 = procs.iter().map(|(_, w)| w).sum();
            let k = if k > 0.0 { k } else { 1.0 };
            let of = |f: &dyn Fn(&ProcessSample) -> f64| round(procs.iter().map(|(p, w)| f(p) * w).sum::<f64>() / k, 4);
            ProcessSample {
                name: p.name.clone(),
                processes: procs.iter().map(|(p, _)| p.processes).max().unwrap_or(0),
                of_threads: p.of_threads,
                cpu_user: of(&|p| p.cpu_user),
                cpu_system: of(&|p| p.cpu_system),
                threads: of(&|p| p.threads as f64).round() as u64,
                open_files: of(&|p| p.open_files as f64).round() as u64,
                context_switches_per_sec: of(&|p| p.context_switches_per_sec),
                cpus: p.cpus.clone(),
            }
        });
        // A process counts for the spans it was among a sample's busiest
        // (outside them it used less than the sample's last one listed).
        let mut others: Vec<TopProcess> = Vec::new();
        for (s, w) in weighted() {
            for t in &s.top_processes {
                match others.iter_mut().find(|o| o.pid == t.pid && o.name == t.name) {
                    Some(o) => o.cpu += t.cpu * w,
                    None => others.push(TopProcess {
                        cpu: t.cpu * w,
                        ..t.clone()
                    }),
                }
            }
        }
        for o in &mut others {
            o.cpu = round(o.cpu / total, 4);
        }
        others.sort_by(|a, b| b.cpu.total_cmp(&a.cpu).then(a.pid.cmp(&b.pid)));
        others.truncate(TOP_PROCESSES);
        Some(HostSample {
            host: last.host.clone(),
            unix_ms: last.unix_ms,
            interval_s: round(samples.iter().map(|s| s.interval_s).sum::<f64>(), 3),
            cpu: CpuShares::weighted_mean(weighted().map(|(s, w)| (&s.cpu, w))),
            per_core,
            context_switches_per_sec: avg(&|s| s.context_switches_per_sec),
            interrupts_per_sec: avg(&|s| s.interrupts_per_sec),
            run_queue: avg(&|s| s.run_queue),
            memory: MemorySample {
                total_bytes: last.memory.total_bytes,
                used_bytes: avg(&|s| s.memory.used_bytes as f64) as u64,
                page_cache_bytes: avg(&|s| s.memory.page_cache_bytes as f64) as u64,
            },
            nics,
            disks,
            listen_overflows_per_sec: avg(&|s| s.listen_overflows_per_sec),
            listen_drops_per_sec: avg(&|s| s.listen_drops_per_sec),
            process,
            top_processes: others,
        })
    }
}

/// What a monitored host is to the mix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum HostRole {
    /// The server under test runs there.
    Server,
    /// The server under test and the load generator both run there (one
    /// box): they share its cores.
    ServerAndClient,
}

/// One monitored host over one mix.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct HostResources {
    pub host: String,
    pub role: HostRole,
    /// Where the samples came from: `local` (this process read /proc),
    /// `node_exporter URL`, or a remote monitor's address.
    pub source: String,
    /// The mix's measurement-window seconds, in order.
    pub seconds: Vec<HostSample>,
    /// Their mean; absent when no second was sampled.
    pub average: Option<HostSample>,
    /// Context switches per completed request over the window, host-wide
    /// (seed 002's CGI finding: a process per request costs many).
    pub context_switches_per_request: Option<f64>,
}

/// The resource that limited a mix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Limit {
    /// The load generator was saturated (its cores busy): the mix measured
    /// the client, not the server.
    Client,
    /// The server's CPUs were busy.
    ServerCpu,
    /// One box: the server and the load generator ran on the same cores
    /// and those were saturated — either may have set the figures.
    SharedCores,
    /// A NIC of the server ran near its link speed.
    Network,
    /// A disk of the server was busy nearly all the time.
    Disk,
    /// Nothing monitored was saturated: the server software (its workers,
    /// locks, queues) or its back end set the pace.
    Software,
    /// Nothing was monitored, so nothing can be said.
    Unknown,
}

/// The verdict of a mix: what limited it and why benchlab says so.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Verdict {
    pub limit: Limit,
    /// One sentence: the limit and its main evidence.
    pub summary: String,
    /// Every figure weighed, in words ("server CPU 97 % busy, 75 % in
    /// system time", "NIC eth0 at 73 % of 100 Mbit/s").
    pub evidence: Vec<String>,
    /// The load generator was saturated: its own threads used more than
    /// [`CLIENT_BOUND_SHARE`] of its cores, or its cores were that busy
    /// with any work. The limit is then the client's unless the server's
    /// CPUs were saturated too (the summary then says both).
    #[serde(default)]
    pub client_saturated: bool,
}

/// A mix's resources: every monitored host, and the verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MixResources {
    pub hosts: Vec<HostResources>,
    pub verdict: Verdict,
}

/// Busy share (percent) of a resource above which it counts as saturated;
/// the same bar as the load generator's [`CLIENT_BOUND_SHARE`].
pub const SATURATED_PERCENT: f64 = CLIENT_BOUND_SHARE * 100.0;

/// What the verdict knows of the load generator beyond its own CPU: the
/// busy share of the cores it ran on, by every process, as the local
/// monitor saw them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GeneratorCores {
    /// The CPUs the generator's threads could run on (empty: unknown).
    pub cpus: Vec<u32>,
    /// Their busy share over the window, percent, all processes.
    pub busy_percent: Option<f64>,
}

/// Names what limited a mix from the server host's average (`server`,
/// `None` when not monitored), whether the generator runs on that same
/// host (`one_box`), the generator's own CPU and its cores' load.
///
/// In order: a saturated generator (its own threads above
/// [`CLIENT_BOUND_SHARE`] of its cores, or its cores that busy with other
/// work) makes the mix the client's measurement, whatever the server did;
/// then the server's CPUs (those the watched process may run on, else
/// all), a NIC with a known speed, a disk; else the software.
pub fn verdict(server: Option<&HostSample>, one_box: bool, client: &ClientCpu, generator: &GeneratorCores) -> Verdict {
    let mut evidence = Vec::new();
    let own = client.utilisation * 100.0;
    let cores_busy = generator.busy_percent.unwrap_or(own).max(own);
    let client_saturated = client.client_bound || cores_busy > SATURATED_PERCENT;
    if client.cores > 0 {
        let mut e = format!(
            "load generator {} % of its {} ({} % busy by every process)",
            pct(own),
            cores(client.cores),
            pct(cores_busy)
        );
        if generator.busy_percent.is_none() {
            e = format!("load generator {} % of its {}", pct(own), cores(client.cores));
        }
        evidence.push(e);
    }
    let Some(s) = server else {
        let (limit, summary) = if client_saturated {
            (Limit::Client, client_summary(cores_busy))
        } else {
            (
                Limit::Unknown,
                "the server was not monitored: run with --monitor-local or a monitor".to_string(),
            )
        };
        return Verdict {
            limit,
            summary,
            evidence,
            client_saturated,
        };
    };
    let server_cpus: Vec<u32> = s.process.as_ref().map(|p| p.cpus.clone()).unwrap_or_default();
    let cpu = s.cpu_of(&server_cpus);
    let which = if server_cpus.is_empty() || server_cpus.len() >= s.per_core.len() {
        "server CPU".to_string()
    } else {
        format!("server CPU (cores {})", list(&server_cpus))
    };
    let cpu_words = format!(
        "{which} {} % busy, {} % in system time",
        pct(cpu.busy()),
        pct(cpu.kernel())
    );
    evidence.push(cpu_words.clone());
    if let Some(p) = &s.process {
        evidence.push(format!(
            "{} ({} {}): {} % of a core in user, {} % in system, {} threads, {} open files",
            p.name,
            p.processes,
            match (p.of_threads, p.processes == 1) {
                (true, true) => "thread",
                (true, false) => "threads",
                (false, true) => "process",
                (false, false) => "processes",
            },
            pct(p.cpu_user * 100.0),
            pct(p.cpu_system * 100.0),
            p.threads,
            p.open_files
        ));
    }
    if s.listen_overflows_per_sec > 0.0 {
        evidence.push(format!(
            "listen queue overflowed {} times a second: connections waited or were dropped",
            benchlab_format::fixed(s.listen_overflows_per_sec, 1)
        ));
    }
    let mut nic_full: Option<String> = None;
    // The NIC that carried the load first, and said to be (the report's
    // network figures show the same one); a full link on any NIC counts.
    let load_nic = s.load_nic().map(|n| n.name.as_str());
    let nics = s
        .nics
        .iter()
        .filter(|n| Some(n.name.as_str()) == load_nic)
        .chain(s.nics.iter().filter(|n| Some(n.name.as_str()) != load_nic));
    for nic in nics {
        let carried = Some(nic.name.as_str()) == load_nic;
        match nic.link_percent() {
            Some(p) => {
                let words = format!(
                    "NIC {} at {} % of {} Mbit/s",
                    nic.name,
                    pct(p),
                    nic.speed_mbit.unwrap_or(0)
                );
                if p > SATURATED_PERCENT && nic_full.is_none() {
                    nic_full = Some(words.clone());
                }
                evidence.push(if carried {
                    format!("{words}, the NIC that carried the load")
                } else {
                    words
                });
            }
            None if nic.mbit_per_sec() >= 1.0 || carried => evidence.push(format!(
                "NIC {} carried {}{} Mbit/s (link speed unknown)",
                nic.name,
                if carried { "the load: " } else { "" },
                benchlab_format::mbit_per_sec(nic.mbit_per_sec())
            )),
            None => {}
        }
    }
    let mut disk_full: Option<String> = None;
    for d in s.disks.iter().filter(|d| d.ops_per_sec() > 0.0) {
        let words = format!(
            "disk {} {} % busy, {} operations/s",
            d.name,
            pct(d.busy_percent),
            benchlab_format::fixed(d.ops_per_sec(), 0)
        );
        if d.busy_percent > SATURATED_PERCENT && disk_full.is_none() {
            disk_full = Some(words.clone());
        }
        evidence.push(words);
    }
    if one_box {
        evidence.push(format!(
            "client and server share the cores of {} ({}): either may have set the figures",
            s.host,
            cores(s.per_core.len())
        ));
    }
    let server_busy = cpu.busy() > SATURATED_PERCENT;
    // Busy time that neither the watched server nor the generator used
    // (another tenant, a build) would otherwise read as the server's: the
    // busiest other processes are named where it mattered.
    let judged = server_cpus.iter().filter(|&&c| (c as usize) < s.per_core.len()).count();
    let judged = if judged == 0 { s.per_core.len() } else { judged };
    let busy_cores = cpu.busy() / 100.0 * judged as f64;
    let client_used = if one_box && overlap(&server_cpus, &generator.cpus) {
        client.utilisation * client.cores as f64
    } else {
        0.0
    };
    let others = s
        .process
        .as_ref()
        .filter(|_| judged > 0)
        .map(|p| (busy_cores - p.cpu_user - p.cpu_system - client_used).max(0.0));
    let tenant = others.is_none_or(|o| o >= 0.1 && o > 0.25 * busy_cores);
    let name_others =
        !s.top_processes.is_empty() && ((server_busy && tenant) || (client_saturated && !client.client_bound));
    // Said in the summary after the limit: "; other processes used …".
    let mut others_words = String::new();
    if name_others {
        let busiest = if s.process.is_some() {
            "the busiest processes besides the watched server and benchlab"
        } else {
            "the busiest processes besides benchlab"
        };
        others_words = match others {
            Some(o) => {
                evidence.push(format!(
                    "other processes used {} of the {} busy cores the server ran on",
                    benchlab_format::fixed(o, 1),
                    benchlab_format::fixed(busy_cores, 1)
                ));
                format!(
                    "; other processes used {} of those cores: {}",
                    benchlab_format::fixed(o, 1),
                    top_words(&s.top_processes, 3)
                )
            }
            None => format!("; {busiest}: {}", top_words(&s.top_processes, 3)),
        };
        evidence.push(format!(
            "{busiest}, by CPU over the window: {}",
            top_words(&s.top_processes, TOP_PROCESSES)
        ));
    }
    // The generator's own threads filling its cores is unambiguous; its
    // cores filled by other work is, unless the server's are full too (a
    // CPU-bound server on its own cores leaves a pinned generator idle, so
    // other load on the generator's cores is then not what limited it).
    let (limit, summary) = if client.client_bound || (client_saturated && !server_busy) {
        let mut w = client_summary(cores_busy);
        if one_box {
            w.push_str("; client and server share the cores");
        }
        w.push_str(&others_words);
        (Limit::Client, w)
    } else if server_busy && client_saturated && one_box && overlap(&server_cpus, &generator.cpus) {
        (
            Limit::SharedCores,
            format!(
                "client and server share the cores, {} % busy: either may have set the figures ({cpu_words}); run the \
                 load from another machine{others_words}",
                pct(cores_busy.max(cpu.busy()))
            ),
        )
    } else if server_busy {
        let mut w = format!("CPU-bound: {cpu_words}");
        if client_saturated {
            w.push_str(&format!(
                "; the load generator's cores were also {} % busy: either may have set the figures",
                pct(cores_busy)
            ));
        }
        w.push_str(&others_words);
        (Limit::ServerCpu, w)
    } else if let Some(w) = nic_full {
        (Limit::Network, format!("network-bound: {w}"))
    } else if let Some(w) = disk_full {
        (Limit::Disk, format!("disk-bound: {w}"))
    } else {
        (
            Limit::Software,
            "neither saturated: the server software or the back end is the limit".to_string(),
        )
    };
    Verdict {
        limit,
        summary,
        evidence,
        client_saturated,
    }
}

/// Whether two CPU lists share a CPU (an empty list is every CPU).
fn overlap(a: &[u32], b: &[u32]) -> bool {
    a.is_empty() || b.is_empty() || a.iter().any(|c| b.contains(c))
}

fn client_summary(busy: f64) -> String {
    format!(
        "load generator saturated ({} % of its cores): this mix measured the client, not the server",
        pct(busy)
    )
}

/// `stress (pid 4242) 98 % of a core, make (pid 77) 40 % of a core`: the
/// first `n` of `top`. A process names itself (any bytes but NUL, up to
/// 15, or a peer's longer), and the summary reaches the terminal: control
/// characters become `?`, a name is cut at 32 characters.
fn top_words(top: &[TopProcess], n: usize) -> String {
    top.iter()
        .take(n)
        .map(|t| {
            let name: String = t
                .name
                .chars()
                .take(32)
                .map(|c| if c.is_control() { '?' } else { c })
                .collect();
            format!("{name} (pid {}) {} % of a core", t.pid, pct(t.cpu * 100.0))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn pct(x: f64) -> String {
    format!("{:.0}", x.clamp(0.0, 1000.0))
}

fn cores(n: usize) -> String {
    if n == 1 {
        "1 core".to_string()
    } else {
        format!("{n} cores")
    }
}

fn list(cpus: &[u32]) -> String {
    cpus.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shares(busy_user: f64, busy_system: f64) -> CpuShares {
        CpuShares {
            user: busy_user,
            system: busy_system,
            idle: 100.0 - busy_user - busy_system,
            ..CpuShares::default()
        }
    }

    fn host(cores: &[CpuShares]) -> HostSample {
        HostSample {
            host: "srv".into(),
            interval_s: 1.0,
            cpu: CpuShares::mean(cores),
            per_core: cores.to_vec(),
            ..HostSample::default()
        }
    }

    fn client(utilisation: f64, cores: usize) -> ClientCpu {
        ClientCpu {
            cores,
            utilisation,
            client_bound: utilisation > CLIENT_BOUND_SHARE,
            ..ClientCpu::default()
        }
    }

    #[test]
    fn busy_server_cpu_is_cpu_bound_with_its_split() {
        let s = host(&[shares(22.0, 75.0), shares(22.0, 75.0)]);
        let v = verdict(Some(&s), false, &client(0.3, 2), &GeneratorCores::default());
        assert_eq!(v.limit, Limit::ServerCpu);
        assert!(
            v.summary.contains("server CPU 97 % busy, 75 % in system time"),
            "{}",
            v.summary
        );
    }

    #[test]
    fn the_server_is_judged_by_its_own_cores() {
        // Core 0 (the server's) full, core 1 idle: the host is 50 % busy
        // but the server had no room.
        let mut s = host(&[shares(60.0, 39.0), shares(1.0, 1.0)]);
        s.process = Some(ProcessSample {
            name: "nginx".into(),
            processes: 2,
            cpus: vec![0],
            ..ProcessSample::default()
        });
        let v = verdict(Some(&s), false, &client(0.2, 1), &GeneratorCores::default());
        assert_eq!(v.limit, Limit::ServerCpu, "{v:?}");
        assert!(v.summary.contains("cores 0"), "{}", v.summary);
        if let Some(p) = s.process.as_mut() {
            p.cpus = vec![1];
        }
        assert_eq!(
            verdict(Some(&s), false, &client(0.2, 1), &GeneratorCores::default()).limit,
            Limit::Software
        );
    }

    #[test]
    fn thresholds_are_strictly_above_ninety_percent() {
        let at = host(&[shares(45.0, 45.0)]);
        assert_eq!(
            verdict(Some(&at), false, &client(0.9, 1), &GeneratorCores::default()).limit,
            Limit::Software
        );
        let above = host(&[shares(45.0, 45.5)]);
        assert_eq!(
            verdict(Some(&above), false, &client(0.1, 1), &GeneratorCores::default()).limit,
            Limit::ServerCpu
        );
        assert_eq!(
            verdict(Some(&at), false, &client(0.91, 1), &GeneratorCores::default()).limit,
            Limit::Client
        );
    }

    #[test]
    fn a_saturated_generator_wins_over_a_busy_server() {
        let s = host(&[shares(50.0, 49.0)]);
        let v = verdict(Some(&s), true, &client(0.96, 2), &GeneratorCores::default());
        assert_eq!(v.limit, Limit::Client);
        assert!(
            v.summary.starts_with(
                "load generator saturated (96 % of its cores): this mix measured the client, not the server"
            ),
            "{}",
            v.summary
        );
        assert!(v.summary.contains("share the cores"), "{}", v.summary);
    }

    #[test]
    fn a_generator_on_busy_cores_is_saturated_even_when_its_own_share_is_low() {
        // Pinned to a core a burner also wants: it gets half, the core is full.
        let s = host(&[shares(10.0, 10.0), shares(50.0, 49.0)]);
        let g = GeneratorCores {
            cpus: vec![1],
            busy_percent: Some(99.0),
        };
        let v = verdict(Some(&s), false, &client(0.45, 1), &g);
        assert_eq!(v.limit, Limit::Client);
        assert!(v.summary.contains("(99 % of its cores)"), "{}", v.summary);
        let room = GeneratorCores {
            cpus: vec![1],
            busy_percent: Some(40.0),
        };
        assert_eq!(verdict(Some(&s), false, &client(0.35, 1), &room).limit, Limit::Software);
    }

    #[test]
    fn both_sides_busy_names_the_server_and_says_the_generator_was_busy_too() {
        // Server core 0 full (a burner beside it), generator core 1 full of
        // other work while the generator itself used little.
        let mut s = host(&[shares(50.0, 49.0), shares(90.0, 8.0)]);
        s.process = Some(ProcessSample {
            name: "nginx".into(),
            processes: 1,
            cpus: vec![0],
            ..ProcessSample::default()
        });
        let g = GeneratorCores {
            cpus: vec![1],
            busy_percent: Some(98.0),
        };
        let v = verdict(Some(&s), false, &client(0.3, 1), &g);
        assert_eq!(v.limit, Limit::ServerCpu);
        assert!(v.client_saturated);
        assert!(
            v.summary.contains("the load generator's cores were also 98 % busy"),
            "{}",
            v.summary
        );
    }

    #[test]
    fn one_box_with_its_cores_full_says_they_are_shared() {
        let s = host(&[shares(60.0, 39.0), shares(60.0, 39.0)]);
        let g = GeneratorCores {
            cpus: vec![],
            busy_percent: Some(99.0),
        };
        let v = verdict(Some(&s), true, &client(0.3, 2), &g);
        assert_eq!(v.limit, Limit::SharedCores);
        assert!(
            v.summary.starts_with("client and server share the cores, 99 % busy"),
            "{}",
            v.summary
        );
        // Pinned apart on one box, a full server core is the server's.
        let mut s = host(&[shares(60.0, 39.0), shares(60.0, 39.0)]);
        s.process = Some(ProcessSample {
            cpus: vec![0],
            ..ProcessSample::default()
        });
        let g = GeneratorCores {
            cpus: vec![1],
            busy_percent: Some(99.0),
        };
        assert_eq!(verdict(Some(&s), true, &client(0.3, 1), &g).limit, Limit::ServerCpu);
    }

    #[test]
    fn a_full_link_is_network_bound_and_unknown_speeds_only_inform() {
        let mut s = host(&[shares(10.0, 10.0)]);
        s.nics = vec![
            NicSample {
                name: "eth0".into(),
                tx_bytes_per_sec: 9_125_000.0, // 73 Mbit/s
                speed_mbit: Some(100),
                ..NicSample::default()
            },
            NicSample {
                name: "lo".into(),
                tx_bytes_per_sec: 1e9,
                ..NicSample::default()
            },
        ];
        let v = verdict(Some(&s), false, &client(0.1, 1), &GeneratorCores::default());
        assert_eq!(v.limit, Limit::Software);
        assert!(
            v.evidence.iter().any(|e| e == "NIC eth0 at 73 % of 100 Mbit/s"),
            "{:?}",
            v.evidence
        );
        assert!(v.evidence.iter().any(|e| e.contains("lo carried")), "{:?}", v.evidence);
        s.nics[0].tx_bytes_per_sec = 12_000_000.0; // 96 Mbit/s
        let v = verdict(Some(&s), false, &client(0.1, 1), &GeneratorCores::default());
        assert_eq!(v.limit, Limit::Network);
        assert_eq!(v.summary, "network-bound: NIC eth0 at 96 % of 100 Mbit/s");
    }

    #[test]
    fn a_busy_disk_is_disk_bound() {
        let mut s = host(&[shares(5.0, 5.0)]);
        s.disks = vec![DiskSample {
            name: "sda".into(),
            reads_per_sec: 180.0,
            busy_percent: 98.0,
            ..DiskSample::default()
        }];
        let v = verdict(Some(&s), false, &client(0.1, 1), &GeneratorCores::default());
        assert_eq!(v.limit, Limit::Disk);
        assert!(v.summary.contains("sda 98 % busy, 180 operations/s"), "{}", v.summary);
    }

    #[test]
    fn neither_saturated_names_the_software_and_one_box_is_said() {
        let s = host(&[shares(30.0, 20.0), shares(30.0, 20.0)]);
        let v = verdict(Some(&s), true, &client(0.4, 2), &GeneratorCores::default());
        assert_eq!(v.limit, Limit::Software);
        assert_eq!(
            v.summary,
            "neither saturated: the server software or the back end is the limit"
        );
        assert!(v
            .evidence
            .iter()
            .any(|e| e.contains("client and server share the cores of srv (2 cores)")));
    }

    #[test]
    fn nothing_monitored_says_so() {
        let v = verdict(None, false, &client(0.2, 1), &GeneratorCores::default());
        assert_eq!(v.limit, Limit::Unknown);
    }

    #[test]
    fn means_average_rates_and_match_devices_by_name() {
        let mut a = host(&[shares(10.0, 10.0)]);
        a.context_switches_per_sec = 100.0;
        a.nics = vec![NicSample {
            name: "eth0".into(),
            rx_bytes_per_sec: 10.0,
            ..NicSample::default()
        }];
        let mut b = host(&[shares(30.0, 10.0)]);
        b.context_switches_per_sec = 300.0;
        b.nics = vec![NicSample {
            name: "eth0".into(),
            rx_bytes_per_sec: 30.0,
            ..NicSample::default()
        }];
        let m = HostSample::mean(&[a, b]).expect("two samples");
        assert_eq!(m.context_switches_per_sec, 200.0);
        assert_eq!(m.cpu.user, 20.0);
        assert_eq!(m.per_core[0].busy(), 30.0);
        assert_eq!(m.nics[0].rx_bytes_per_sec, 20.0);
        assert_eq!(m.interval_s, 2.0);
        assert!(HostSample::mean(&[]).is_none());
    }

    #[test]
    fn a_short_catch_up_sample_weighs_its_span_not_a_second() {
        // Two full seconds at 1,000 switches/s and 10 % busy, then a 0.002 s
        // catch-up span that happened to see 500,000/s and a full CPU.
        let mut full = host(&[shares(5.0, 5.0)]);
        full.context_switches_per_sec = 1000.0;
        full.process = Some(ProcessSample {
            cpu_user: 0.1,
            context_switches_per_sec: 100.0,
            ..ProcessSample::default()
        });
        full.nics = vec![NicSample {
            name: "lo".into(),
            rx_bytes_per_sec: 1000.0,
            ..NicSample::default()
        }];
        let mut short = host(&[shares(50.0, 50.0)]);
        short.interval_s = 0.002;
        short.context_switches_per_sec = 500_000.0;
        short.process = Some(ProcessSample {
            cpu_user: 1.0,
            context_switches_per_sec: 100_100.0,
            ..ProcessSample::default()
        });
        short.nics = vec![NicSample {
            name: "lo".into(),
            rx_bytes_per_sec: 1_001_000.0,
            ..NicSample::default()
        }];
        let m = HostSample::mean(&[full.clone(), full, short]).expect("three samples");
        // (2 × 1,000 + 0.002 × 500,000) ÷ 2.002 = 1,498.5; unweighted 167,333.
        assert_eq!(m.context_switches_per_sec, 1498.501);
        // (2 × 10 + 0.002 × 100) ÷ 2.002 = 10.09 % busy; unweighted 40 %.
        assert_eq!(round(m.cpu.busy(), 2), 10.09);
        assert_eq!(round(m.per_core[0].busy(), 2), 10.09);
        assert_eq!(m.nics[0].rx_bytes_per_sec, 1999.0);
        let p = m.process.expect("watched");
        assert_eq!((p.cpu_user, p.context_switches_per_sec), (0.1009, 199.9001));
        assert_eq!(m.interval_s, 2.002);
    }

    #[test]
    fn the_load_nic_is_the_one_with_the_most_bytes_and_the_verdict_says_so() {
        let mut s = host(&[shares(10.0, 10.0)]);
        s.nics = vec![
            NicSample {
                name: "eth0".into(),
                rx_bytes_per_sec: 40_000.0,
                tx_bytes_per_sec: 35_000.0, // 0.6 Mbit/s
                speed_mbit: Some(1000),
                ..NicSample::default()
            },
            NicSample {
                name: "lo".into(),
                rx_bytes_per_sec: 1_027_250_000.0, // 8,218 Mbit/s
                tx_bytes_per_sec: 1_027_250_000.0,
                ..NicSample::default()
            },
        ];
        assert_eq!(s.load_nic().map(|n| n.name.as_str()), Some("lo"));
        let v = verdict(Some(&s), true, &client(0.3, 1), &GeneratorCores::default());
        assert_eq!(
            v.evidence.iter().filter(|e| e.starts_with("NIC ")).collect::<Vec<_>>(),
            [
                "NIC lo carried the load: 8,218.0 Mbit/s (link speed unknown)",
                "NIC eth0 at 0 % of 1000 Mbit/s"
            ],
            "{:?}",
            v.evidence
        );
        // A remote client's run: eth0 carried it.
        s.nics[1].rx_bytes_per_sec = 10.0;
        s.nics[1].tx_bytes_per_sec = 10.0;
        assert_eq!(s.load_nic().map(|n| n.name.as_str()), Some("eth0"));
        let v = verdict(Some(&s), false, &client(0.3, 1), &GeneratorCores::default());
        assert!(
            v.evidence
                .iter()
                .any(|e| e == "NIC eth0 at 0 % of 1000 Mbit/s, the NIC that carried the load"),
            "{:?}",
            v.evidence
        );
        s.nics.clear();
        assert_eq!(s.load_nic(), None);
    }

    fn top(name: &str, pid: i32, cpu: f64) -> TopProcess {
        TopProcess {
            pid,
            name: name.into(),
            cpu,
        }
    }

    #[test]
    fn a_machine_busy_with_neither_names_the_busiest_other_processes() {
        // Two cores 98 % busy; nginx used 0.3 of a core, the generator is
        // elsewhere: 1.66 cores went to other work.
        let mut s = host(&[shares(60.0, 38.0), shares(60.0, 38.0)]);
        s.process = Some(ProcessSample {
            name: "nginx".into(),
            processes: 2,
            cpu_user: 0.2,
            cpu_system: 0.1,
            ..ProcessSample::default()
        });
        s.top_processes = vec![top("stress-ng", 4242, 1.5), top("make", 77, 0.1)];
        let v = verdict(Some(&s), false, &client(0.2, 1), &GeneratorCores::default());
        assert_eq!(v.limit, Limit::ServerCpu);
        assert!(
            v.summary.ends_with(
                "; other processes used 1.7 of those cores: stress-ng (pid 4242) 150 % of a core, make (pid 77) 10 % \
                 of a core"
            ),
            "{}",
            v.summary
        );
        assert!(
            v.evidence
                .iter()
                .any(|e| e == "other processes used 1.7 of the 2.0 busy cores the server ran on"),
            "{:?}",
            v.evidence
        );
        assert!(
            v.evidence.iter().any(|e| e
                == "the busiest processes besides the watched server and benchlab, by CPU over the window: stress-ng \
                    (pid 4242) 150 % of a core, make (pid 77) 10 % of a core"),
            "{:?}",
            v.evidence
        );
        // A name with a terminal escape in it is shown without it.
        s.top_processes[1].name = "make\u{1b}[2J".into();
        let v = verdict(Some(&s), false, &client(0.2, 1), &GeneratorCores::default());
        assert!(v.summary.ends_with("make?[2J (pid 77) 10 % of a core"), "{}", v.summary);
        // The server itself used the cores: nothing else is named.
        if let Some(p) = s.process.as_mut() {
            p.cpu_user = 1.5;
            p.cpu_system = 0.4;
        }
        let v = verdict(Some(&s), false, &client(0.2, 1), &GeneratorCores::default());
        assert_eq!(v.limit, Limit::ServerCpu);
        assert!(!v.summary.contains("other processes"), "{}", v.summary);
        assert!(
            !v.evidence.iter().any(|e| e.contains("busiest processes")),
            "{:?}",
            v.evidence
        );
        // One box: the generator's own CPU counts as accounted for too.
        if let Some(p) = s.process.as_mut() {
            p.cpu_user = 0.6;
            p.cpu_system = 0.3;
        }
        let v = verdict(Some(&s), true, &client(0.9, 1), &GeneratorCores::default());
        assert!(!v.summary.contains("other processes"), "{}", v.summary);
        // An idle machine names nobody.
        let mut idle = host(&[shares(10.0, 5.0)]);
        idle.top_processes = vec![top("cron", 1, 0.01)];
        let v = verdict(Some(&idle), false, &client(0.2, 1), &GeneratorCores::default());
        assert!(!v.evidence.iter().any(|e| e.contains("busiest")), "{:?}", v.evidence);
    }

    #[test]
    fn the_busiest_others_of_a_window_are_ranked_by_their_cpu_over_it() {
        let mut a = host(&[shares(10.0, 10.0)]);
        a.top_processes = vec![top("make", 7, 1.0), top("cc1", 8, 0.5)];
        let mut b = host(&[shares(10.0, 10.0)]);
        b.top_processes = vec![top("cc1", 8, 2.0), top("cc1", 9, 0.2)];
        let m = HostSample::mean(&[a, b]).expect("two samples");
        assert_eq!(
            m.top_processes,
            [top("cc1", 8, 1.25), top("make", 7, 0.5), top("cc1", 9, 0.1)]
        );
    }

    #[test]
    fn shares_of_times_fold_nice_into_user() {
        let c = CpuShares::of_times(10.0, 10.0, 30.0, 40.0, 10.0, 0.0, 0.0, 0.0);
        assert_eq!((c.user, c.system, c.idle, c.iowait), (20.0, 30.0, 40.0, 10.0));
        assert_eq!(c.busy(), 50.0);
        assert_eq!(
            CpuShares::of_times(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0),
            CpuShares::default()
        );
    }
}
