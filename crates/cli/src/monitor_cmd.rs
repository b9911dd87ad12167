//! Server monitoring: `benchlab monitor` (this machine, a line a second)
//! and the flags with which `benchlab run` samples hosts during a run
//! (`--monitor-local`, `--node-exporter`), whose seconds and verdict go
//! into every mix of results.json.

use crate::{CliError, Outcome};
use benchlab_monitor::{HostSample, LocalMonitor, MonitorSource, Sampler, Watch};
use clap::Args;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How `benchlab run` watches the hosts of a run.
#[derive(Debug, Args, Default, Clone)]
pub struct MonitorArgs {
    /// Sample this machine every second during the run (CPU per core,
    /// context switches, NICs, disks, memory): for a server on this
    /// machine, or to see the load generator's own host.
    #[arg(long)]
    pub monitor_local: bool,
    /// --monitor-local: also watch this server process (its CPU, threads,
    /// open files); its CPUs are the ones the verdict judges.
    #[arg(
        long,
        value_name = "PID",
        requires = "monitor_local",
        conflicts_with = "monitor_process"
    )]
    pub monitor_pid: Option<i32>,
    /// --monitor-local: also watch every process of this name, summed (e.g.
    /// nginx: master and workers).
    #[arg(long, value_name = "NAME", requires = "monitor_local")]
    pub monitor_process: Option<String>,
    /// Read a host from a Prometheus node_exporter instead
    /// (http://HOST:9100/metrics), every second; repeatable.
    #[arg(long = "node-exporter", value_name = "URL")]
    pub node_exporters: Vec<String>,
}

/// The running monitors of a run: the sampling threads stop when dropped.
#[derive(Debug, Default)]
pub struct Monitors {
    _threads: Vec<LocalMonitor>,
    pub sources: Vec<Arc<dyn MonitorSource>>,
}

impl MonitorArgs {
    /// What to watch on this machine.
    pub fn watch(&self) -> Watch {
        match (&self.monitor_pid, &self.monitor_process) {
            (Some(pid), _) => Watch::Pid(*pid),
            (None, Some(name)) => Watch::Name(name.clone()),
            (None, None) => Watch::Nothing,
        }
    }

    /// Starts the monitors asked for; the watched PID must exist.
    pub fn start(&self) -> Result<Monitors, CliError> {
        let mut m = Monitors::default();
        if self.monitor_local {
            if let Some(pid) = self.monitor_pid {
                if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
                    return Err(CliError::Usage(format!("--monitor-pid {pid}: no such process")));
                }
            }
            m.add(LocalMonitor::this_machine(self.watch(), Duration::from_secs(1)).map_err(cannot)?);
        }
        for url in &self.node_exporters {
            m.add(
                LocalMonitor::node_exporter(url, Duration::from_secs(1)).map_err(|e| match e {
                    benchlab_monitor::MonitorError::NodeExporter { .. } if !url.starts_with("http://") => {
                        CliError::Usage(format!("--node-exporter {url}: {e}"))
                    }
                    e => CliError::CannotRun(format!("--node-exporter {url}: {e}")),
                })?,
            );
        }
        Ok(m)
    }
}

impl Monitors {
    /// Adds a local monitor (this machine, or a node_exporter read from here).
    pub fn add(&mut self, l: LocalMonitor) {
        self.sources.push(l.store());
        self._threads.push(l);
    }
}

/// A server monitor connected to this controller (`benchlab monitor
/// --controller`), read as a [`MonitorSource`]: its samples arrive as the
/// JSON of [`HostSample`], stamped by the monitor's own clock.
#[derive(Clone)]
struct RemoteMonitor {
    monitors: benchlab_agent::RemoteMonitors,
    host: String,
    /// Why a payload could not be read, the first time it happened.
    bad: Arc<std::sync::Mutex<Option<String>>>,
}

impl std::fmt::Debug for RemoteMonitor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteMonitor")
            .field("host", &self.host)
            .finish_non_exhaustive()
    }
}

impl MonitorSource for RemoteMonitor {
    fn host(&self) -> String {
        self.host.clone()
    }

    fn source(&self) -> String {
        "remote monitor (benchlab monitor --controller)".into()
    }

    fn window(&self, from: std::time::SystemTime, to: std::time::SystemTime) -> Vec<HostSample> {
        let ms = |t: std::time::SystemTime| {
            t.duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as u64)
        };
        let (from, to) = (ms(from), ms(to));
        self.monitors
            .samples(&self.host)
            .into_iter()
            .filter_map(|(_, json)| match serde_json::from_slice::<HostSample>(&json) {
                Ok(s) => Some(s),
                Err(e) => {
                    let mut bad = self.bad.lock().unwrap_or_else(|p| p.into_inner());
                    bad.get_or_insert_with(|| format!("a sample from {} is not a host sample: {e}", self.host));
                    None
                }
            })
            .filter(|s| s.unix_ms >= from && s.unix_ms <= to)
            .collect()
    }

    fn error(&self) -> Option<String> {
        self.bad.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// The monitors registered with a controller, one source per host.
pub fn remote_sources(monitors: &benchlab_agent::RemoteMonitors) -> Vec<Arc<dyn MonitorSource>> {
    monitors
        .hosts()
        .into_iter()
        .map(|host| {
            Arc::new(RemoteMonitor {
                monitors: monitors.clone(),
                host,
                bad: Arc::default(),
            }) as Arc<dyn MonitorSource>
        })
        .collect()
}

fn cannot(e: benchlab_monitor::MonitorError) -> CliError {
    CliError::CannotRun(format!("monitor: {e}"))
}

#[derive(Debug, Args)]
pub struct MonitorCmdArgs {
    /// Watch this server process as well.
    #[arg(long, value_name = "PID", conflicts_with = "process_name")]
    pid: Option<i32>,
    /// Watch every process of this name, summed (nginx: master and workers).
    #[arg(long, value_name = "NAME")]
    process_name: Option<String>,
    /// Time between samples.
    #[arg(long, default_value = "1s", value_parser = crate::args::duration, value_name = "DUR")]
    interval: Duration,
    /// Stop after this many samples [default: until Ctrl-C].
    #[arg(long, value_name = "N")]
    count: Option<u64>,
    /// Print each sample as one JSON object a line (the form a remote
    /// monitor sends) instead of the table.
    #[arg(long)]
    json: bool,
    /// Send the samples to a controller instead of printing them:
    /// HOST:PORT of `benchlab run … --agents N --monitors M --listen ADDR`.
    /// Ends when the run does.
    #[arg(long, value_name = "HOST:PORT", requires_all = ["cert", "key", "ca"])]
    controller: Option<String>,
    /// This monitor's certificate (`lab certs` writes monitor.pem).
    #[arg(long, value_name = "FILE")]
    cert: Option<std::path::PathBuf>,
    /// Its private key (monitor.key).
    #[arg(long, value_name = "FILE")]
    key: Option<std::path::PathBuf>,
    /// The lab's CA certificate (ca.pem).
    #[arg(long, value_name = "FILE")]
    ca: Option<std::path::PathBuf>,
    /// The name the controller's certificate must carry [default: HOST].
    #[arg(long, value_name = "NAME")]
    server_name: Option<String>,
    /// How long to keep trying to reach the controller.
    #[arg(long, value_name = "DUR", default_value = "60s", value_parser = crate::args::duration)]
    connect_timeout: Duration,
}

/// `benchlab monitor --controller`: samples on a thread, sent as JSON over
/// the monitor's session until the controller ends it.
fn send_to_controller(
    a: &MonitorCmdArgs,
    controller: &str,
    host: &str,
    mut sampler: Sampler,
) -> Result<Outcome, CliError> {
    let (Some(cert), Some(key), Some(ca)) = (&a.cert, &a.key, &a.ca) else {
        return Err(CliError::Usage("--controller needs --cert, --key and --ca".into()));
    };
    let tls = benchlab_agent::TlsFiles::read(ca, cert, key).map_err(|e| CliError::Usage(e.to_string()))?;
    let peer = benchlab_agent::PeerOptions {
        controller: controller.to_string(),
        server_name: a.server_name.clone(),
        tls,
        connect_timeout: a.connect_timeout,
    };
    let (tx, rx) = std::sync::mpsc::channel();
    let interval = a.interval;
    let count = a.count;
    let sampling = std::thread::spawn(move || -> Option<String> {
        let mut next = Instant::now() + interval;
        let mut n = 0u64;
        while count.is_none_or(|c| n < c) {
            let now = Instant::now();
            if now < next {
                std::thread::sleep(next - now);
            }
            next += interval;
            let sample = match sampler.sample() {
                Ok(s) => s,
                Err(e) => return Some(e.to_string()),
            };
            let json = serde_json::to_vec(&sample).unwrap_or_default();
            // The session closed the channel: the run is over.
            if tx.send((std::time::SystemTime::now(), json)).is_err() {
                return None;
            }
            n += 1;
        }
        None
    });
    eprintln!("benchlab monitor: {host}: sending samples to {controller}");
    let session = benchlab_agent::monitor_session(&peer, host, rx);
    match session {
        Ok(()) => {
            eprintln!("benchlab monitor: the controller ended the session");
            Ok(Outcome::Completed)
        }
        Err(e) => {
            // A sampling error ends the channel early; say that rather than
            // what the session made of it.
            if sampling.is_finished() {
                if let Ok(Some(why)) = sampling.join() {
                    return Err(CliError::CannotRun(format!("monitor: {why}")));
                }
            }
            Err(if e.exit_code() == 2 {
                CliError::Usage(format!("monitor: {e}"))
            } else {
                CliError::CannotRun(format!("monitor: {e}"))
            })
        }
    }
}

/// `benchlab monitor`: samples this machine and prints a line per interval.
pub fn run(a: MonitorCmdArgs) -> Result<Outcome, CliError> {
    if a.interval < Duration::from_millis(100) {
        return Err(CliError::Usage(format!(
            "--interval {}: expected at least 100ms",
            humantime::format_duration(a.interval)
        )));
    }
    let watch = match (a.pid, a.process_name.clone()) {
        (Some(pid), _) => {
            if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
                return Err(CliError::Usage(format!("--pid {pid}: no such process")));
            }
            Watch::Pid(pid)
        }
        (None, Some(n)) => Watch::Name(n),
        (None, None) => Watch::Nothing,
    };
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "localhost".into());
    let mut sampler = Sampler::new(&host, watch).map_err(cannot)?;
    if let Some(controller) = &a.controller {
        return send_to_controller(&a, controller, &host, sampler);
    }
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    let _ = ctrlc::set_handler(move || s.store(true, Ordering::Relaxed));
    let mut next = Instant::now() + a.interval;
    let mut n = 0u64;
    while !stop.load(Ordering::Relaxed) && a.count.is_none_or(|c| n < c) {
        let now = Instant::now();
        if now < next {
            std::thread::sleep((next - now).min(Duration::from_millis(50)));
            continue;
        }
        next += a.interval;
        let sample = sampler.sample().map_err(cannot)?;
        if a.json {
            println!(
                "{}",
                serde_json::to_string(&sample).map_err(|e| CliError::CannotRun(e.to_string()))?
            );
        } else {
            if n.is_multiple_of(20) {
                println!("{}", header(&sample));
            }
            println!("{}", line(&sample));
        }
        n += 1;
    }
    Ok(if stop.load(Ordering::Relaxed) {
        Outcome::Interrupted
    } else {
        Outcome::Completed
    })
}

/// The table's column names (the process columns only when one is watched).
fn header(s: &HostSample) -> String {
    let mut h = format!(
        "{:>5} {:>5} {:>5} {:>5} {:>9} {:>9} {:>4} {:>9} {:>9} {:>8}",
        "busy%", "usr%", "sys%", "iow%", "ctxsw/s", "intr/s", "runq", "net Mb/s", "disk op/s", "mem MB"
    );
    if let Some(p) = &s.process {
        h.push_str(&format!(
            " | {}: {:>5} {:>5} {:>5} {:>5} {:>6}",
            p.name,
            if p.of_threads { "thrds" } else { "procs" },
            "usr%",
            "sys%",
            "thr",
            "files"
        ));
    }
    h
}

fn line(s: &HostSample) -> String {
    let net: f64 = s.nics.iter().filter(|n| n.name != "lo").map(|n| n.mbit_per_sec()).sum();
    let lo: f64 = s.nics.iter().filter(|n| n.name == "lo").map(|n| n.mbit_per_sec()).sum();
    let disk: f64 = s.disks.iter().map(|d| d.ops_per_sec()).sum();
    let mut l = format!(
        "{:>5.1} {:>5.1} {:>5.1} {:>5.1} {:>9.0} {:>9.0} {:>4.0} {:>9} {:>9.0} {:>8}",
        s.cpu.busy(),
        s.cpu.user,
        s.cpu.kernel(),
        s.cpu.iowait,
        s.context_switches_per_sec,
        s.interrupts_per_sec,
        s.run_queue,
        if lo > 0.0 {
            format!("{net:.1}+lo{lo:.0}")
        } else {
            format!("{net:.1}")
        },
        disk,
        s.memory.used_bytes / 1_000_000
    );
    if let Some(p) = &s.process {
        // Under the header's columns: the name's width, then the figures.
        l.push_str(&format!(
            " | {:w$}  {:>5} {:>5.1} {:>5.1} {:>5} {:>6}",
            "",
            p.processes,
            p.cpu_user * 100.0,
            p.cpu_system * 100.0,
            p.threads,
            p.open_files,
            w = p.name.chars().count()
        ));
    }
    l
}
