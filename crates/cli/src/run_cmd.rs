//! `benchlab run SUITE.toml` and `benchlab check SUITE.toml`.

use crate::live::{Feed, WebArgs};
use crate::output::{mbytes_per_sec, plural, requests_per_sec, share, thousands};
use crate::{CliError, Outcome};
// `benchlab http` reads these from here too.
use crate::run_lab::{cold_cache_evictor, lab_target};
pub(crate) use crate::run_lab::{lab_disclosure, pin_clients};
use benchlab_controller::peak::SearchLimits;
use benchlab_controller::{
    prepare, run_prepared, run_prepared_search, MixResult, Observer, Prepared, Results, RunOptions, SecondResult,
};
use benchlab_engine::TlsOptions;
use benchlab_model::{Class, ClassKind, Mix, Suite, UrlSource};
use benchlab_report::{generator_notes, write_reports, ReportOptions, Run};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The suite file (TOML; see docs/running.md, "Suite format").
    suite: PathBuf,
    /// Base URL of the server under test; replaces the suite's `target`
    /// (mixes and workloads that name their own target keep it).
    #[arg(long, value_name = "URL")]
    target: Option<String>,
    /// Run against the server `benchlab lab up SERVER` started: its URL is
    /// the target, and its disclosure (version, effective configuration,
    /// profile, CPU set) goes into results.json and the report. Without
    /// --lab, a target equal to a lab server's URL is disclosed as well.
    #[arg(long, value_name = "SERVER", conflicts_with = "target")]
    lab: Option<String>,
    /// Pin the load generator's worker threads to these CPUs (e.g. 1 or
    /// 2-3), disclosed in results.json; refused when they share a CPU with
    /// the lab server's `lab up --cpus`, unless --allow-shared-cpus.
    #[arg(long, value_name = "LIST")]
    client_cpus: Option<String>,
    /// Run even when --client-cpus shares CPUs with the lab server's.
    #[arg(long, requires = "client_cpus")]
    allow_shared_cpus: bool,
    /// Drop the page cache before each mix, so the server reads its files
    /// from the disk as after a reboot: as root `sync; echo 3 >
    /// /proc/sys/vm/drop_caches`; otherwise (with --lab) the lab server is
    /// moved into a memory cgroup whose pages, and the file set's, are
    /// evicted before each mix.
    #[arg(long)]
    cold_cache: bool,
    /// Results directory [default: results/SUITE-YYYYmmdd-HHMMSS].
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Multiply delay, ramps, length and think time (not timeouts) by this,
    /// 0.001 to 1000, e.g. 0.05 to try a suite in minutes.
    #[arg(long, default_value = "1", value_name = "F", value_parser = crate::args::time_scale)]
    time_scale: f64,
    /// Directory of a file set the workloads name, NAME=DIR (repeatable).
    #[arg(long = "fileset", value_parser = fileset_arg, value_name = "NAME=DIR")]
    filesets: Vec<(String, PathBuf)>,
    /// Run only this phase (repeatable; a workload's name selects its
    /// phases). Only the file sets these phases need are asked for.
    #[arg(long = "phase", value_name = "NAME")]
    phases: Vec<String>,
    /// Base URL of one phase, PHASE=URL (repeatable): e.g. the CGI phases
    /// of ct-1999 on another server than its static files. Wins over the
    /// suite and over --target.
    #[arg(long = "phase-target", value_parser = phase_target_arg, value_name = "PHASE=URL")]
    phase_targets: Vec<(String, String)>,
    /// File suites: the password of an smb://USER@HOST/SHARE target, the
    /// first line of FILE (or set BENCHLAB_SMB_PASSWORD), so it is never on
    /// the command line.
    #[arg(long, value_name = "FILE")]
    smb_password_file: Option<PathBuf>,
    /// Skip the check of each URL before the run.
    #[arg(long)]
    no_preflight: bool,
    /// Accept any TLS certificate.
    #[arg(long)]
    insecure: bool,
    /// Trust the CA certificates in this PEM file as well.
    #[arg(long, value_name = "FILE")]
    ca_file: Option<PathBuf>,
    /// Worker OS threads per client [default: cores ÷ clients; with
    /// --agents, each agent's usable CPUs ÷ --clients-per-agent].
    #[arg(long, value_name = "N")]
    os_threads_per_client: Option<usize>,
    /// Run each mix N times back to back (each --find-peak step too): the
    /// mix shows its median run by requests/s, and results.json keeps every
    /// run's figures and their spread, the noise `benchlab compare` weighs.
    #[arg(long, default_value_t = 1, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
    repeat: u32,
    #[command(flatten)]
    peak: PeakArgs,
    /// --find-peak: threads per client of every phase's first load
    /// [default: the phase's first mix's threads per client]; its clients
    /// and other settings stay the first mix's.
    #[arg(long, value_name = "N", requires = "find_peak")]
    peak_start_threads: Option<u32>,

    #[command(flatten)]
    monitor: Box<crate::monitor_cmd::MonitorArgs>,

    #[command(flatten)]
    web: WebArgs,
    #[command(flatten)]
    metrics: crate::metrics_cmd::MetricsArgs,
    #[command(flatten)]
    agents: crate::agent_cmd::AgentRunArgs,
    #[command(flatten)]
    gates: crate::gate::GateArgs,
    #[command(flatten)]
    history: crate::history_cmd::RecordArgs,
    /// The flags given on the command line (clap's ids, defaults not
    /// included), filled in by `main` from clap's matches: a file suite
    /// refuses, by name, every flag that does not apply to it.
    #[arg(skip)]
    pub given: Vec<(String, String)>,
}

/// `--find-peak` and its rules (docs/running.md, "Automatic peak search").
#[derive(Debug, Args)]
pub struct PeakArgs {
    /// Search for the peak instead of running the suite's mixes: per phase,
    /// its first mix's threads per client doubled until requests/s stops
    /// rising or a limit is broken, then bisected around the knee.
    #[arg(long)]
    pub find_peak: bool,
    /// --find-peak: a load rises when its requests/s is above the best
    /// before it by more than this; two loads in a row that do not rise
    /// stop the growth.
    #[arg(long, value_parser = crate::args::percent_f64, default_value = "5", value_name = "PCT", requires = "find_peak")]
    pub peak_tolerance: f64,
    /// --find-peak: p99 latency limit; a load over it stops the growth and
    /// does not count towards the useful peak.
    #[arg(long, value_parser = crate::args::duration, default_value = "1s", value_name = "DUR", requires = "find_peak")]
    pub peak_max_p99: Duration,
    /// --find-peak: error limit (failed ÷ completed requests); a load over
    /// it stops the growth and does not count towards the useful peak.
    #[arg(long, value_parser = crate::args::percent_f64, default_value = "1", value_name = "PCT", requires = "find_peak")]
    pub peak_max_error_rate: f64,
    /// --find-peak: the highest load (threads per client for `run`, virtual
    /// users for `http`) the search may run.
    #[arg(
        long = "peak-max-threads",
        default_value_t = 4096,
        value_name = "N",
        requires = "find_peak"
    )]
    pub peak_max_threads: u32,
    /// --find-peak: bisection steps at most once growing stops.
    #[arg(
        long = "peak-bisect-steps",
        default_value_t = 3,
        value_name = "N",
        requires = "find_peak"
    )]
    pub peak_bisect_steps: u32,
}

impl PeakArgs {
    /// The search's limits, or `None` without --find-peak.
    pub fn limits(&self) -> Result<Option<SearchLimits>, CliError> {
        if !self.find_peak {
            return Ok(None);
        }
        if self.peak_max_threads == 0 {
            return Err(CliError::Usage("--peak-max-threads must be at least 1".into()));
        }
        Ok(Some(SearchLimits {
            tolerance: self.peak_tolerance / 100.0,
            max_p99_us: u64::try_from(self.peak_max_p99.as_micros()).unwrap_or(u64::MAX),
            max_error_share: self.peak_max_error_rate / 100.0,
            max_load: u64::from(self.peak_max_threads),
            bisect_steps: self.peak_bisect_steps,
        }))
    }
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The suite file to validate.
    suite: PathBuf,
    /// Also resolve file-set classes against NAME=DIR: per class the URLs
    /// kept, their share of the set's requests and the expected mean
    /// response size.
    #[arg(long = "fileset", value_parser = fileset_arg, value_name = "NAME=DIR")]
    filesets: Vec<(String, PathBuf)>,
    /// Check only this phase (repeatable; a workload's name selects its
    /// phases): only the file sets these phases need are named.
    #[arg(long = "phase", value_name = "NAME")]
    phases: Vec<String>,
}

fn fileset_arg(s: &str) -> Result<(String, PathBuf), String> {
    let (n, d) = s
        .split_once('=')
        .ok_or_else(|| format!("`{s}`: expected NAME=DIR, e.g. specweb99=/srv/fileset"))?;
    if n.is_empty() || d.is_empty() {
        return Err(format!("`{s}`: expected NAME=DIR"));
    }
    Ok((n.to_string(), PathBuf::from(d)))
}

/// `PHASE=URL`; whether the URL fits the phase (http(s):// for a web
/// workload, file:// or smb:// for a file workload) is checked against the
/// suite (`Suite::retarget_phase`).
fn phase_target_arg(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((n, u))
            if !n.is_empty()
                && (u.starts_with("http://") || u.starts_with("https://") || benchlab_model::is_file_target(u)) =>
        {
            Ok((n.to_string(), u.to_string()))
        }
        _ => Err(format!(
            "`{s}`: expected PHASE=URL, e.g. cgi=http://127.0.0.1:8081 (or files=file:///srv/share for a file workload)"
        )),
    }
}

fn load(path: &std::path::Path) -> Result<Suite, CliError> {
    Suite::from_file(path).map_err(|e| CliError::Usage(e.to_string()))
}

/// Checks the `--fileset NAME=DIR` flags against the suite, before anything
/// runs: every NAME is a file set the suite draws from, every DIR holds a
/// manifest. Returns the file-set directories (the flags over the suite's
/// `[filesets]`) and the file sets the selected phases need that have none,
/// each with the phases that need it.
#[allow(clippy::type_complexity)]
fn fileset_dirs(
    suite: &Suite,
    given: &[(String, PathBuf)],
) -> Result<(BTreeMap<String, PathBuf>, Vec<(String, Vec<String>)>), CliError> {
    let mut known: Vec<&str> = suite.workloads.values().flat_map(|w| w.filesets()).collect();
    known.sort();
    known.dedup();
    let mut problems = Vec::new();
    for (name, dir) in given {
        let flag = format!("--fileset {name}={}", dir.display());
        if !known.contains(&name.as_str()) {
            problems.push(format!(
                "{flag}: suite `{}` draws from no file set `{name}`: expected {}",
                suite.name,
                if known.is_empty() {
                    "no --fileset (the suite lists its URLs)".to_string()
                } else {
                    format!("one of {}", known.join(", "))
                }
            ));
        } else if !dir.is_dir() {
            problems.push(format!(
                "{flag}: {} is not a directory: expected the --out of `benchlab fileset generate`",
                dir.display()
            ));
        } else if !dir.join(benchlab_fileset::MANIFEST_FILE).is_file() {
            problems.push(format!(
                "{flag}: {} has no `manifest`: expected the --out of `benchlab fileset generate`",
                dir.display()
            ));
        }
    }
    if !problems.is_empty() {
        return Err(CliError::Usage(problems.join("\n")));
    }
    let mut dirs = suite.filesets.clone();
    dirs.extend(given.iter().cloned());
    let missing = suite
        .filesets_needed()
        .into_iter()
        .filter(|(name, _)| !dirs.contains_key(name))
        .collect();
    Ok((dirs, missing))
}

/// What one class requests, resolved against its file set: URLs kept, their
/// share of the file set's requests, the expected mean response (body bytes,
/// by the class's own request weights).
fn class_summary(c: &Class, target: &str, dirs: &BTreeMap<String, PathBuf>) -> Result<String, CliError> {
    // Summed a URL at a time: a URL file's million URLs are not listed.
    let (mut n, mut share, mut mean, mut sized) = (0u64, 0.0, 0.0, true);
    c.resolve_each(target, dirs, |u| {
        n += 1;
        share += u.population_share.unwrap_or(0.0);
        mean += u.weight * u.size.unwrap_or(0) as f64;
        sized &= u.size.is_some();
        Ok::<(), benchlab_model::ResolveError>(())
    })
    .map_err(|e| CliError::of("", e))?;
    let mut line = plural(n, "URL", "URLs");
    if let UrlSource::Fileset(f) = &c.source {
        line.push_str(&format!(
            " carrying {:.2} % of file set `{}`'s requests",
            share * 100.0,
            f.name
        ));
    }
    if sized {
        line.push_str(&format!(
            ", expected mean response {} bytes",
            thousands(mean.round() as u64)
        ));
    } else {
        line.push_str(", response sizes not known");
    }
    Ok(line)
}

/// `benchlab check`: parse, validate, and say what would run.
pub fn check(a: CheckArgs) -> Result<Outcome, CliError> {
    let mut suite = load(&a.suite)?;
    suite.select_phases(&a.phases).map_err(|e| CliError::of("", e))?;
    let (dirs, _) = fileset_dirs(&suite, &a.filesets)?;
    // File workloads (disk mixes, loadfiles) read and checked too.
    let file_lines = crate::file_cmd::check_lines(&suite)?;
    // Each class of each selected phase whose URLs can be resolved now,
    // resolved before anything is printed (a bad `top` is an error).
    let mut classes = Vec::new();
    for p in &suite.phases {
        let Some(w) = suite.workloads.get(&p.workload) else {
            continue;
        };
        if let Some(flow) = &w.flow {
            let steps: Vec<String> = flow
                .steps
                .iter()
                .map(|(name, target)| match target {
                    Some(t) => format!("{name} ({t})"),
                    None => name.clone(),
                })
                .collect();
            classes.push(format!(
                "  phase {} flow: {}: {}; {} read",
                p.name,
                plural(steps.len() as u64, "step", "steps"),
                steps.join(", "),
                plural(flow.source.files.len() as u64, "file", "files")
            ));
            continue;
        }
        for c in &w.classes {
            let resolvable = match &c.source {
                UrlSource::Fileset(f) => dirs.contains_key(&f.name),
                UrlSource::List(_) | UrlSource::File(_) => true,
            };
            if resolvable {
                classes.push(format!(
                    "  phase {} class {} ({} %): {}",
                    p.name,
                    c.name,
                    c.percent,
                    class_summary(c, &p.target, &dirs)?
                ));
            }
        }
    }
    println!(
        "{}: suite `{}` is valid: {} in {}, {} in all",
        a.suite.display(),
        suite.name,
        plural(suite.mixes.len() as u64, "mix", "mixes"),
        plural(suite.phases.len() as u64, "phase", "phases"),
        humantime::format_duration(suite.total_length())
    );
    for p in &suite.phases {
        let mixes: Vec<String> = p
            .mixes
            .iter()
            .map(|&i| {
                let m = &suite.mixes[i];
                match m.params.rate {
                    Some(r) => format!("{}×{}/s", m.clients, benchlab_format::rate(r)),
                    None => format!("{}×{}", m.clients, m.params.threads_per_client),
                }
            })
            .collect();
        println!(
            "  phase {}: {} — clients×threads (or ×rate) {}",
            p.name,
            benchlab_fileserver::smb::redact(&p.target),
            mixes.join(", ")
        );
    }
    for (name, phases) in suite.filesets_needed() {
        match dirs.get(&name) {
            Some(dir) => println!("  file set {name}: {}", dir.display()),
            None => println!(
                "  file set {name}: needed at run time by phase {} (--fileset {name}=DIR, made by `benchlab fileset generate`)",
                phases.join(", ")
            ),
        }
    }
    for line in classes {
        println!("{line}");
    }
    for line in file_lines {
        println!("{line}");
    }
    if a.phases.is_empty() {
        for r in &suite.requires {
            println!("  requires: {r}");
        }
    } else {
        // The suite's `requires` is one text for all its phases: naming the
        // file sets and programs of phases not selected would send people
        // to prepare what this run never touches. Say what the selected
        // phases themselves draw on instead.
        for (r, phases) in selected_requires(&suite) {
            println!("  requires: {r} (phase {})", phases.join(", "));
        }
        if !suite.requires.is_empty() {
            println!(
                "  (the suite's own `requires` cover all its phases: `benchlab check` without --phase lists them)"
            );
        }
    }
    Ok(Outcome::Completed)
}

/// What the phases left after [`Suite::select_phases`] need of their
/// targets, from their classes: each file set (where it is served) and each
/// dynamic class's program (SPI and path), each with the phases that need
/// it, in the suite's order.
fn selected_requires(suite: &Suite) -> Vec<(String, Vec<String>)> {
    let mut needs: Vec<(String, Vec<String>)> = Vec::new();
    let mut need = |what: String, phase: &str| match needs.iter_mut().find(|(w, _)| *w == what) {
        Some((_, phases)) => {
            if !phases.iter().any(|p| p == phase) {
                phases.push(phase.to_string());
            }
        }
        None => needs.push((what, vec![phase.to_string()])),
    };
    for p in &suite.phases {
        let Some(w) = suite.workloads.get(&p.workload) else {
            continue;
        };
        for c in &w.classes {
            let base = c.target.as_deref().unwrap_or(&p.target).trim_end_matches('/');
            let spi = c.spi.as_deref().map(|s| format!(" (SPI {s})")).unwrap_or_default();
            match (&c.source, c.kind) {
                (UrlSource::Fileset(f), ClassKind::Dynamic) => need(
                    format!(
                        "a program at {base}{}/…{spi} answering for file set `{}`",
                        f.prefix.trim_end_matches('/'),
                        f.name
                    ),
                    &p.name,
                ),
                (UrlSource::Fileset(f), _) => need(
                    format!(
                        "file set `{}` served at {base}{}/",
                        f.name,
                        f.prefix.trim_end_matches('/')
                    ),
                    &p.name,
                ),
                (UrlSource::List(urls), ClassKind::Dynamic) => {
                    if let Some(u) = urls.first() {
                        let url = if u.path.starts_with("http://") || u.path.starts_with("https://") {
                            u.path.clone()
                        } else {
                            format!("{base}{}", u.path)
                        };
                        let more = match urls.len() - 1 {
                            0 => String::new(),
                            n => format!(
                                " and {} of class {}",
                                plural(n as u64, "other URL", "other URLs"),
                                c.name
                            ),
                        };
                        need(format!("a program at {url}{spi}{more}"), &p.name);
                    }
                }
                // Listed static URLs are the class itself: `check` shows them
                // above, and the preflight asks for each.
                (UrlSource::List(_) | UrlSource::File(_), _) => {}
            }
        }
    }
    needs
}

/// Shows a progress bar per mix (a line per mix when not on a terminal).
pub(crate) struct Progress {
    bar: Option<ProgressBar>,
    tty: bool,
    window: (Duration, Duration),
    /// `(run, of)` of the mix now running under `--repeat`.
    repeat: Option<(u32, u32)>,
    /// Where the report goes, rewritten after every mix so a long run can be
    /// watched in a browser.
    report_dir: PathBuf,
    /// The last report error, shown once at the end (a report problem never
    /// stops a run).
    pub(crate) report_error: Option<String>,
}

impl Progress {
    pub(crate) fn new(report_dir: PathBuf) -> Progress {
        Progress {
            bar: None,
            tty: std::io::stderr().is_terminal(),
            window: (Duration::ZERO, Duration::ZERO),
            repeat: None,
            report_dir,
            report_error: None,
        }
    }
}

impl Observer for Progress {
    fn mix_started(&mut self, mix: &Mix, phase: &str) {
        self.window = mix.window();
        let len = mix.params.length.as_secs().max(1);
        let load = match mix.params.rate {
            Some(r) => format!(
                "open loop at {} requests/s ({} arrivals)",
                benchlab_format::rate(r),
                mix.params.arrival.name()
            ),
            None => plural(mix.params.threads_per_client.into(), "thread", "threads"),
        };
        let msg = format!(
            "mix {} ({phase}): {} × {load}{}",
            mix.number,
            plural(mix.clients.into(), "client", "clients"),
            self.repeat
                .map(|(r, of)| format!(", run {r} of {of}"))
                .unwrap_or_default()
        );
        if self.tty {
            let bar = ProgressBar::new(len);
            bar.set_style(
                ProgressStyle::with_template("{msg} [{bar:30}] {elapsed}/{duration} {prefix}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            bar.set_message(msg);
            self.bar = Some(bar);
        } else {
            eprintln!("{msg}, {}", humantime::format_duration(mix.params.length));
        }
    }

    fn repeat_started(&mut self, _mix: &Mix, repeat: u32, of: u32) {
        self.repeat = Some((repeat, of));
    }

    fn second(&mut self, _mix: &Mix, s: &SecondResult) {
        let (second, requests, errors) = (s.second, s.requests, s.errors);
        if let Some(b) = &self.bar {
            // `second` counts from 1; `t` is when it began.
            let t = Duration::from_secs(u64::from(second.saturating_sub(1)));
            let phase = if t < self.window.0 {
                "ramp-up"
            } else if t >= self.window.1 {
                "ramp-down"
            } else {
                "measuring"
            };
            b.set_position(u64::from(second));
            b.set_prefix(format!(
                "{} req/s, {}, {phase}",
                thousands(requests),
                plural(errors, "error", "errors")
            ));
        }
    }

    fn mix_finished(&mut self, r: &MixResult) {
        if let Some(b) = self.bar.take() {
            b.finish_and_clear();
        }
        let cpu = &r.client_cpu;
        // A search's mixes are renumbered in load order as they come, so
        // its progress names the step, not a number that will change.
        let mut name = match &r.search {
            Some(st) => format!("search step {} ({})", st.step, search_kind(st.kind)),
            None => format!("mix {}", r.mix),
        };
        if let Some((run, of)) = self.repeat.take() {
            name.push_str(&format!(" run {run} of {of}"));
        }
        let load = match &r.open_loop {
            Some(o) => format!(
                "{} of {} sent late{}, as-sent p99 {} µs, {} {} connections open at once",
                thousands(o.late_sends),
                thousands(o.sends),
                if o.unsent > 0 {
                    format!(" ({} due never sent)", thousands(o.unsent))
                } else {
                    String::new()
                },
                thousands(o.latency_as_sent_us.p99),
                // Summed over clients that may peak at different moments.
                if o.peak_connections_upper_bound {
                    "at most"
                } else {
                    "peak"
                },
                thousands(o.peak_connections)
            ),
            None => plural(r.threads, "thread", "threads"),
        };
        // A file mix leads with Mbit/s and counts operations, as its
        // summary and report do; a web mix with requests/s.
        let rates = match r.kind() {
            benchlab_results::RunKind::File => format!(
                "{} Mbit/s, {} operations/s",
                benchlab_format::mbit_per_sec(r.figures.mbit_per_sec),
                requests_per_sec(r.figures.requests_per_sec)
            ),
            benchlab_results::RunKind::Web => format!(
                "{} req/s, {} MB/s",
                requests_per_sec(r.figures.requests_per_sec),
                mbytes_per_sec(r.figures.bytes_per_sec)
            ),
        };
        eprintln!(
            "{name}: {load}, {rates}, p99 {} µs, {}, client CPU {} of {}{}{}",
            thousands(r.figures.latency_us.p99),
            plural(r.figures.errors_total, "error", "errors"),
            share(cpu.utilisation),
            plural(cpu.cores as u64, "core", "cores"),
            if cpu.client_bound {
                " CLIENT-BOUND"
            } else if cpu.co_located_saturated {
                " CO-LOCATED"
            } else {
                ""
            },
            if r.partial { " (partial)" } else { "" }
        );
        if let Some(f) = &r.flows {
            eprintln!(
                "  flows: {} completed ({}/s), {} abandoned{}",
                thousands(f.completed),
                requests_per_sec(f.completed_per_sec),
                thousands(f.abandoned),
                f.check_failures
                    .iter()
                    .next()
                    .map(|(step, why)| format!("; step {step}: {why}"))
                    .unwrap_or_default()
            );
        }
    }

    fn results_written(&mut self, results: &Results) {
        if results.mixes.is_empty() {
            return;
        }
        let label = self
            .report_dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| results.suite.name.clone());
        let run = Run {
            label,
            dir: self.report_dir.clone(),
            results: results.clone(),
        };
        self.report_error = write_reports(&[run], &self.report_dir, &ReportOptions::default())
            .err()
            .map(|e| e.to_string());
    }

    fn note(&mut self, message: &str) {
        eprintln!("{message}");
    }
}

/// Prints where the reports are (or why they could not be written).
fn print_report_paths(out: &std::path::Path, progress: &Progress) {
    match &progress.report_error {
        None => {
            println!("report:  {}", out.join("report.html").display());
            println!("         {}", out.join("report.xlsx").display());
        }
        Some(e) => eprintln!("benchlab: the report could not be written: {e}"),
    }
}

/// `benchlab run`.
pub fn run(a: RunArgs) -> Result<Outcome, CliError> {
    let mut suite = load(&a.suite)?;
    // File suites (disk mixes, loadfiles) run on the same suite loop, their
    // mixes by crates/fileserver; only their targets and inputs differ.
    let file_suite = crate::file_cmd::is_file_suite(&suite);
    if file_suite {
        crate::file_cmd::refuse_flags_for_file_suite(&suite, &a.given)?;
        crate::file_cmd::prepare(
            &mut suite,
            a.target.as_deref(),
            &a.phase_targets,
            &a.phases,
            a.smb_password_file.as_deref(),
        )?;
    } else if a.smb_password_file.is_some() {
        return Err(CliError::Usage(
            "--smb-password-file is for file suites' smb:// targets; this suite runs web workloads".into(),
        ));
    }
    let search = a.peak.limits()?;
    if let (Some(n), Some(l)) = (a.peak_start_threads, &search) {
        if n == 0 || u64::from(n) > l.max_load {
            return Err(CliError::Usage(format!(
                "--peak-start-threads {n}: expected 1 to --peak-max-threads ({})",
                l.max_load
            )));
        }
    }
    crate::live::check(&a.web)?;
    crate::metrics_cmd::check(&a.metrics)?;
    if let Some(t) = a.target.as_ref().filter(|_| !file_suite) {
        if !t.contains("://") {
            return Err(CliError::Usage(format!(
                "--target `{t}`: http:// is missing: expected http://{t} (or https://{t} for TLS)"
            )));
        }
        if !(t.starts_with("http://") || t.starts_with("https://")) {
            return Err(CliError::Usage(format!(
                "--target `{t}`: expected an http:// or https:// base URL"
            )));
        }
        suite.retarget(t);
    }
    if let Some(name) = &a.lab {
        suite.retarget(&lab_target(name)?);
    }
    for (phase, url) in a.phase_targets.iter().filter(|_| !file_suite) {
        suite.retarget_phase(phase, url).map_err(|e| CliError::of("", e))?;
    }
    // A moved target must not leave an absolute URL on the old host: the
    // load would go where the banner does not say (docs/design.md).
    if !file_suite && (a.target.is_some() || a.lab.is_some() || !a.phase_targets.is_empty()) {
        suite.check_url_hosts().map_err(|e| {
            CliError::Usage(format!(
                "{e}; the target was moved by --target, --lab or --phase-target"
            ))
        })?;
    }
    if !file_suite {
        suite.select_phases(&a.phases).map_err(|e| CliError::of("", e))?;
    }
    // The search grows virtual users; an open-loop mix has none to grow.
    if search.is_some() {
        if let Some(m) = suite.mixes.iter().find(|m| m.params.rate.is_some()) {
            return Err(CliError::Usage(format!(
                "--find-peak: mix {} is an open loop (`rate = …`); the peak search grows threads, so it needs closed-loop mixes",
                m.number
            )));
        }
    }
    // A threshold on a phase or mix this run cannot have is a typo, found
    // before the run rather than reported as never measured after it.
    let phase_names: Vec<String> = suite.phases.iter().map(|p| p.name.clone()).collect();
    for t in &a.gates.thresholds {
        t.check_scope(&phase_names, search.is_none().then_some(suite.mixes.len()))
            .map_err(|e| CliError::Usage(format!("--threshold {e}")))?;
    }
    a.gates.check(a.gates.thresholds.len())?;
    if a.time_scale != 1.0 {
        suite.scale_time(a.time_scale).map_err(|e| CliError::of("", e))?;
    }
    if let Some(path) = &a.ca_file {
        // Read with its bound: a wrong file is refused before any request.
        benchlab_engine::read_pem(path)
            .map_err(|e| CliError::Usage(format!("--ca-file {}: cannot read: {e}", path.display())))?;
    }
    // Every input of the selected phases, before the banner and before any
    // request: a run never stops at phase 3 for a file set missing from the
    // start.
    let (dirs, missing) = fileset_dirs(&suite, &a.filesets)?;
    if !missing.is_empty() {
        let list: Vec<String> = missing
            .iter()
            .map(|(name, phases)| format!("--fileset {name}=DIR (phase {})", phases.join(", ")))
            .collect();
        return Err(CliError::Usage(format!(
            "the {} need file sets that were not given: {}; make them with `benchlab fileset generate`{}",
            if a.phases.is_empty() {
                "suite's phases"
            } else {
                "selected phases"
            },
            list.join(", "),
            if a.phases.is_empty() && suite.phases.len() > 1 {
                " (or run a subset with --phase NAME)"
            } else {
                ""
            }
        )));
    }
    let out = a
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("results/{}-{}", suite.name, crate::output::stamp())));
    let opts = RunOptions {
        out: out.clone(),
        filesets: dirs,
        os_threads_per_client: a.os_threads_per_client,
        preflight: !a.no_preflight,
        tls: TlsOptions {
            insecure: a.insecure,
            ca_file: a.ca_file.clone(),
            ..TlsOptions::default()
        },
        time_scale: a.time_scale,
        // A --db postgres:// URL's password is not recorded.
        command: benchlab_history::redact_args(std::env::args()),
        repeat: a.repeat,
        server: lab_disclosure(&suite.target, a.lab.is_some())?,
        ..RunOptions::default()
    };
    // A file server is no lab server: only root can empty its page cache
    // (the whole machine's: a file:// target's, a Samba's on this host).
    if a.cold_cache && file_suite && !benchlab_lab::cache::is_root() {
        return Err(CliError::Usage(
            "--cold-cache for a file suite drops the whole machine's page cache, which needs root: run as root \
             (the lab's memory-cgroup eviction is for its web servers)"
                .into(),
        ));
    }
    let cache_evictor = if a.cold_cache {
        cold_cache_evictor(opts.server.as_ref())?
    } else {
        None
    };
    let client_cpus = pin_clients(a.client_cpus.as_deref(), a.allow_shared_cpus, opts.server.as_ref())?;
    // Started after the pinning, so the sampling thread stays off the
    // server's cores as the generator does.
    let monitors = a.monitor.start()?;
    let opts = RunOptions {
        cold_cache: a.cold_cache,
        cache_evictor,
        client_cpus,
        monitors: monitors.sources.clone(),
        ..opts
    };
    // Remote clients (and monitors): every one registered before the
    // first request.
    let max_clients = suite.mixes.iter().map(|m| m.clients as usize).max().unwrap_or(0);
    let remote = a.agents.pool(max_clients, a.os_threads_per_client.is_some())?;
    // Remote monitors (`benchlab monitor --controller`) watch the server's
    // host: they come first, as the host the verdict judges.
    let opts = match &remote {
        Some(pool) => RunOptions {
            monitors: crate::monitor_cmd::remote_sources(&pool.monitors())
                .into_iter()
                .chain(opts.monitors.iter().cloned())
                .collect(),
            ..opts
        },
        None => opts,
    };
    let opts = match remote.as_ref().filter(|_| a.agents.agents.is_some()) {
        Some(pool) => RunOptions {
            clients: Arc::clone(pool) as Arc<dyn benchlab_controller::ClientPool>,
            ..opts
        },
        None => opts,
    };
    let prepared = prepare(&suite, &opts).map_err(|e| CliError::of("", e))?;
    let mut targets: Vec<&str> = suite.phases.iter().map(|p| p.target.as_str()).collect();
    targets.dedup();
    let selected = if a.phases.is_empty() {
        String::new()
    } else {
        let names: Vec<&str> = suite.phases.iter().map(|p| p.name.as_str()).collect();
        format!(" (phase {})", names.join(", "))
    };
    if let Some(l) = &search {
        let starts: Vec<String> = suite
            .phases
            .iter()
            .filter_map(|p| p.mixes.first().map(|&i| (p, &suite.mixes[i])))
            .map(|(p, m)| {
                let threads = a.peak_start_threads.unwrap_or(m.params.threads_per_client);
                format!("{} from {}×{threads}", p.name, m.clients)
            })
            .collect();
        eprintln!(
            "benchlab run --find-peak: suite `{}`{selected}, clients×threads {} (threads doubled, then bisected; \
             stops when requests/s rises less than {} % twice, p99 > {} ms, errors > {} % or {} threads per client), \
             mixes of {} against {} → {}",
            suite.name,
            starts.join(", "),
            l.tolerance * 100.0,
            l.max_p99_us as f64 / 1000.0,
            l.max_error_share * 100.0,
            l.max_load,
            humantime::format_duration(Duration::from_millis(
                suite.mixes.first().map_or(0, |m| m.params.length.as_millis() as u64)
            )),
            benchlab_fileserver::smb::redact(&targets.join(", ")),
            out.display()
        );
    } else {
        let repeats = if a.repeat > 1 {
            format!(" (each run {} times back to back)", a.repeat)
        } else {
            String::new()
        };
        eprintln!(
            "benchlab run: suite `{}`{selected}, {}{repeats}, {} against {} → {}",
            suite.name,
            plural(suite.mixes.len() as u64, "mix", "mixes"),
            humantime::format_duration(Duration::from_secs(
                suite.total_length().as_secs() * u64::from(a.repeat)
            )),
            benchlab_fileserver::smb::redact(&targets.join(", ")),
            out.display()
        );
    }
    // --record: a database that cannot be used stops the run before its load.
    let history = a.history.open()?;
    let started = std::time::SystemTime::now();
    let outcome = execute_prepared(
        prepared,
        &suite,
        &opts,
        search.as_ref().map(|l| (l, a.peak_start_threads)),
        &a.web,
        &a.gates,
        &a.metrics,
    );
    let outcome = crate::history_cmd::record_after_run(history, &opts.out, started, outcome);
    if let Some(why) = remote.as_ref().and_then(|p| p.aborted()) {
        return Err(CliError::CannotRun(format!("the run stopped: {why}")));
    }
    outcome
}

/// Runs a prepared suite with a progress display, prints the summary table,
/// the results and report paths; Ctrl-C ends the current mix (kept, marked
/// partial) and the run, which then exits 130.
pub(crate) fn execute(suite: &Suite, opts: &RunOptions, web: &WebArgs) -> Result<Outcome, CliError> {
    let prepared = prepare(suite, opts).map_err(|e| CliError::CannotRun(e.to_string()))?;
    execute_prepared(
        prepared,
        suite,
        opts,
        None,
        web,
        &crate::gate::GateArgs::default(),
        &crate::metrics_cmd::MetricsArgs::default(),
    )
}

fn execute_prepared(
    prepared: Prepared,
    suite: &Suite,
    opts: &RunOptions,
    search: Option<(&SearchLimits, Option<u32>)>,
    web: &WebArgs,
    gates: &crate::gate::GateArgs,
    metrics_args: &crate::metrics_cmd::MetricsArgs,
) -> Result<Outcome, CliError> {
    // Listening comes before any load: a taken port stops the run at once.
    // A file suite's operations are labelled `kind="file"`.
    let kind = if crate::file_cmd::is_file_suite(suite) {
        benchlab_metrics::Kind::File
    } else {
        benchlab_metrics::Kind::Http
    };
    let metrics = crate::metrics_cmd::start(metrics_args, &suite.name, kind, web.web.is_some())?;
    if let Some(m) = &metrics {
        crate::metrics_cmd::watch_hosts(&m.exporter, &opts.monitors);
    }
    let live = crate::live::start(
        web,
        &suite.name,
        // A file suite's smb://USER:PASS@ is shown with `***`.
        &benchlab_fileserver::smb::redact(&suite.target),
        &opts.out,
        search.is_none().then_some(suite.mixes.len()),
        opts.repeat.max(1),
        metrics.as_ref().map(|m| m.exporter.clone()),
    )?;
    if let Some(l) = &live {
        eprintln!("live view: {}", l.url());
    }
    let stop = Arc::new(AtomicBool::new(false));
    let s2 = Arc::clone(&stop);
    crate::agent_cmd::on_ctrl_c(move || s2.store(true, Ordering::Relaxed));
    let mut progress = Progress::new(opts.out.clone());
    let run = |observer: &mut dyn Observer| match search {
        Some((limits, start)) => run_prepared_search(prepared, suite, opts, limits, start, &stop, observer),
        None => run_prepared(prepared, suite, opts, &stop, observer),
    };
    let results = {
        let mut feed;
        let observer: &mut dyn Observer = match &live {
            Some(l) => {
                feed = Feed::new(&mut progress, l.clone());
                &mut feed
            }
            None => &mut progress,
        };
        match &metrics {
            Some(m) => run(&mut crate::metrics_cmd::Feed::new(observer, m.exporter.clone())),
            None => run(observer),
        }
    };
    if let Some(l) = &live {
        l.finish();
    }
    if let Some(m) = &metrics {
        // A run that failed or was stopped does not wait for a scrape.
        m.finish(stop.load(Ordering::Relaxed) || results.is_err());
    }
    let mut results = results.map_err(|e| CliError::CannotRun(e.to_string()))?;
    if results.mixes.is_empty() {
        eprintln!("interrupted before the first mix: nothing written");
        return Ok(Outcome::Interrupted);
    }
    if !gates.thresholds.is_empty() {
        // Kept with the figures they judge: results.json and the report
        // say what the gate decided, a partial run's too.
        crate::gate::evaluate(&gates.thresholds, &mut results);
        benchlab_results::write_results(&opts.out, &results)
            .map_err(|e| CliError::CannotRun(format!("{}: cannot write results: {e}", opts.out.display())))?;
        progress.results_written(&results);
    }
    if let Some(path) = &gates.junit {
        let name = format!("benchlab run {}", results.suite.name);
        crate::gate::write_junit(path, &name, &crate::gate::cases(&results.thresholds))?;
    }
    let breached = crate::gate::breached(&results.thresholds);
    // A file suite's table leads with Mbit/s (read and written apart), as
    // its report does; a web suite's with requests/s.
    match results.kind() {
        benchlab_results::RunKind::File => print!("{}", crate::file_cmd::summary_table(&results)),
        benchlab_results::RunKind::Web => print!("{}", summary_table(&results)),
    }
    print!("{}", crate::gate::lines(&results.thresholds));
    println!("results: {}", opts.out.display());
    print_report_paths(&opts.out, &progress);
    if stop.load(Ordering::Relaxed) {
        eprintln!(
            "interrupted: the finished mixes and the partial one are in {}",
            opts.out.display()
        );
        // A breach measured before Ctrl-C is never hidden: exit 3 wins
        // over 130 (docs/running.md, "Thresholds and JUnit").
        return Ok(if breached {
            Outcome::Breached
        } else {
            Outcome::Interrupted
        });
    }
    if let Some(l) = live.as_ref().filter(|_| web.web_linger) {
        eprintln!("live view: the final report stays at {} until Ctrl-C", l.url());
        while !stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    Ok(if breached {
        Outcome::Breached
    } else {
        Outcome::Completed
    })
}

/// The terminal summary: a row per mix (client-bound mixes marked), the
/// peak of each phase and what a client-bound mix means.
pub fn summary_table(r: &Results) -> String {
    use std::fmt::Write as _;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "\n{:>4}  {:<16} {:>7} {:>8} {:>12} {:>9} {:>9} {:>9} {:>8} {:>10}",
        "mix", "phase", "clients", "threads", "requests/s", "MB/s", "p50 µs", "p99 µs", "errors", "client CPU"
    );
    for m in &r.mixes {
        let f = &m.figures;
        let _ = writeln!(
            o,
            "{:>4}  {:<16} {:>7} {:>8} {:>12} {:>9} {:>9} {:>9} {:>8} {:>10}{}{}{}",
            m.mix,
            truncate(&m.phase, 16),
            thousands(m.clients_participating.into()),
            thousands(m.threads),
            requests_per_sec(f.requests_per_sec),
            mbytes_per_sec(f.bytes_per_sec),
            thousands(f.latency_us.p50),
            thousands(f.latency_us.p99),
            thousands(f.errors_total),
            share(m.client_cpu.utilisation),
            if m.client_cpu.client_bound {
                "  CLIENT-BOUND"
            } else if m.client_cpu.co_located_saturated {
                "  CO-LOCATED"
            } else {
                ""
            },
            if m.partial { "  partial" } else { "" },
            m.search
                .as_ref()
                .map(|s| format!("  search step {} ({})", s.step, search_kind(s.kind)))
                .unwrap_or_default()
        );
    }
    for p in &r.phases {
        let peak = r
            .mixes
            .iter()
            .filter(|m| m.phase == p.name)
            .max_by(|a, b| a.figures.requests_per_sec.total_cmp(&b.figures.requests_per_sec));
        if let Some(m) = peak {
            let _ = writeln!(
                o,
                "peak ({}): {} requests/s, {} MB/s at mix {} ({}, {}){}",
                p.name,
                requests_per_sec(m.figures.requests_per_sec),
                mbytes_per_sec(m.figures.bytes_per_sec),
                m.mix,
                plural(m.threads, "thread", "threads"),
                plural(m.clients_participating.into(), "client", "clients"),
                if m.client_cpu.client_bound {
                    ", client-bound"
                } else if m.client_cpu.co_located_saturated {
                    ", co-located on a saturated machine"
                } else {
                    ""
                }
            );
        }
    }
    for p in &r.phases {
        let Some(s) = &p.search else { continue };
        let at = |mix: Option<usize>, rate: Option<f64>| match (mix, rate) {
            (Some(m), Some(rate)) => {
                let mix = r.mixes.iter().find(|x| x.mix == m);
                let cpu = mix.map(|x| &x.client_cpu);
                format!(
                    "{} requests/s at mix {m} ({}){}",
                    requests_per_sec(rate),
                    plural(mix.map_or(0, |x| x.threads), "thread", "threads"),
                    if cpu.is_some_and(|c| c.client_bound) {
                        ", client-bound"
                    } else if cpu.is_some_and(|c| c.co_located_saturated) {
                        ", co-located on a saturated machine"
                    } else {
                        ""
                    }
                )
            }
            _ => "none".to_string(),
        };
        let _ = writeln!(
            o,
            "peak search ({}): {}; peak {}; useful peak (p99 ≤ {} ms, errors ≤ {} %) {}",
            p.name,
            if s.stopped.is_empty() {
                "interrupted"
            } else {
                &s.stopped
            },
            at(s.peak_mix, s.peak_requests_per_sec),
            s.max_p99_us as f64 / 1000.0,
            s.max_error_percent,
            at(s.useful_peak_mix, s.useful_peak_requests_per_sec)
        );
    }
    // `--repeat`: how far each mix's runs spread (the table shows the median run).
    for m in &r.mixes {
        let Some(rep) = &m.repeats else { continue };
        let (q, p) = (&rep.requests_per_sec, &rep.latency_p99_us);
        let _ = writeln!(
            o,
            "mix {}: {} runs, median run {}: requests/s {} / {} / {}, p99 {} / {} / {} µs (min / median / max)",
            m.mix,
            rep.runs.len(),
            rep.median_repeat,
            requests_per_sec(q.min),
            requests_per_sec(q.median),
            requests_per_sec(q.max),
            thousands(p.min.round() as u64),
            thousands(p.median.round() as u64),
            thousands(p.max.round() as u64)
        );
    }
    // Only the warnings: a clean run's table says nothing more.
    for note in generator_notes(r).into_iter().filter(|n| !n.starts_with("No mix")) {
        let _ = writeln!(o, "{note}");
    }
    o
}

pub(crate) fn search_kind(k: benchlab_controller::peak::StepKind) -> &'static str {
    k.name()
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        s.chars().take(n - 1).chain(std::iter::once('…')).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A results.json of `n` mixes of one phase, mix `bound` client-bound.
    fn results(n: usize, bound: Option<usize>) -> Results {
        let latency = json!({"mean": 1603.84, "p50": 1200, "p90": 2000, "p99": 12500, "p999": 20000, "max": 31000});
        let mixes: Vec<serde_json::Value> = (1..=n)
            .map(|i| {
                json!({
                    "mix": i, "phase": "static", "clients": i, "clients_participating": i, "threads": i,
                    "partial": false, "window_s": 10.0, "requests": 1_203_060 * i as u64,
                    "requests_per_sec": 120_306.0 * i as f64, "bytes": 1_000_000, "bytes_per_sec": 282_434_000.0,
                    "mbit_per_sec": 2259.47, "body_bytes": 900_000, "error_bytes": 0,
                    "errors": {"timeout": 1200}, "errors_total": 1200,
                    "latency_us": latency, "error_latency_us": latency,
                    "reconnects": 0, "in_flight": 1, "connections_opened": 1, "tls_full_handshakes": 0,
                    "tls_resumptions": 0, "client_cpu_s": 1.9,
                    "client_cpu": {"user_s": 0.5, "system_s": 1.4, "cores": 2,
                        "utilisation": if bound == Some(i) { 0.95 } else { 0.5 },
                        "us_per_request": 1.5, "client_bound": bound == Some(i)},
                    "params": {"delay_s": 0.0, "ramp_up_s": 1.0, "ramp_down_s": 1.0, "length_s": 12.0,
                        "think_time_s": 0.0, "threads_per_client": 1, "receive_buffer": 65536,
                        "http10_percent": 0, "http10_keepalive": false, "persistent_percent": 100,
                        "requests_per_connection": null, "timeout_s": 5.0, "workload": "w", "target": "http://127.0.0.1:8080"},
                    "client_data": [], "classes": [], "per_second": [],
                    "histograms": {"latency_us": "", "error_latency_us": "", "classes": {}}
                })
            })
            .collect();
        serde_json::from_value(json!({
            "schema": "benchlab.results/1",
            "suite": {"name": "s", "description": "", "file": "s.toml", "seed": 1, "max_clients": null, "text": ""},
            "environment": {"benchlab_version": "0", "host": "h", "kernel": "k", "cpu": "c", "cores": 2,
                "target": "http://127.0.0.1:8080", "started_unix": 0, "command": [], "time_scale": 1.0},
            "phases": [{"name": "static", "workload": "w", "target": "http://127.0.0.1:8080", "mixes": (1..=n).collect::<Vec<_>>()}],
            "mixes": mixes,
            "complete": true
        }))
        .expect("a results.json fixture")
    }

    #[test]
    fn summary_table_groups_thousands_and_counts_in_words() {
        let t = summary_table(&results(2, None));
        assert!(t.contains("120,306.0"), "{t}");
        assert!(t.contains("282.43"), "{t}");
        assert!(t.contains("12,500"), "{t}");
        assert!(t.contains("1,200"), "{t}");
        assert!(t.contains("50.0 %"), "{t}");
        assert!(
            t.contains("peak (static): 240,612.0 requests/s, 282.43 MB/s at mix 2 (2 threads, 2 clients)"),
            "{t}"
        );
        assert!(!t.contains("CLIENT-BOUND"), "{t}");
        let one = summary_table(&results(1, None));
        assert!(one.contains("at mix 1 (1 thread, 1 client)"), "{one}");
    }

    #[test]
    fn summary_table_shows_the_spread_of_repeated_mixes() {
        let mut r = results(2, None);
        let runs: Vec<MixResult> = [118_000.0, 120_306.0, 125_000.5]
            .iter()
            .map(|&rate| {
                let mut m = r.mixes[1].clone();
                m.figures.requests_per_sec = rate;
                m
            })
            .collect();
        r.mixes[1] = benchlab_controller::fold_repeats(runs).expect("folded");
        let t = summary_table(&r);
        assert!(
            t.contains(
                "mix 2: 3 runs, median run 2: requests/s 118,000.0 / 120,306.0 / 125,000.5, p99 12,500 / 12,500 / \
                 12,500 µs (min / median / max)"
            ),
            "{t}"
        );
        assert!(!t.contains("mix 1: "), "{t}");
    }

    #[test]
    fn summary_table_marks_a_client_bound_mix() {
        let t = summary_table(&results(3, Some(2)));
        let row = t
            .lines()
            .find(|l| l.trim_start().starts_with("2 "))
            .expect("row of mix 2");
        assert!(row.contains("95.0 %") && row.ends_with("CLIENT-BOUND"), "{row}");
        let row1 = t
            .lines()
            .find(|l| l.trim_start().starts_with("1 "))
            .expect("row of mix 1");
        assert!(!row1.contains("CLIENT-BOUND"), "{row1}");
        assert!(
            t.contains("CLIENT-BOUND: mix 2: the load generator used more than 90.0 % of the CPU cores"),
            "{t}"
        );
        let mut r = results(3, Some(2));
        r.mixes[0].client_cpu.machine_busy = Some(0.99);
        r.mixes[0].client_cpu.co_located_saturated = true;
        let t = summary_table(&r);
        let row1 = t
            .lines()
            .find(|l| l.trim_start().starts_with("1 "))
            .expect("row of mix 1");
        assert!(row1.ends_with("CO-LOCATED"), "{row1}");
        assert!(
            t.contains("CO-LOCATED: mix 1: the server ran on the load generator's machine"),
            "{t}"
        );
        let t = summary_table(&results(3, Some(3)));
        assert!(t.contains("at mix 3 (3 threads, 3 clients), client-bound"), "{t}");
    }

    #[test]
    fn summary_table_marks_the_search_mixes_and_says_how_it_ended() {
        use benchlab_controller::peak::StepKind;
        use benchlab_controller::{PhaseSearchResult, SearchStepResult};
        let mut r = results(3, Some(3));
        for (m, (step, kind)) in
            r.mixes
                .iter_mut()
                .zip([(1, StepKind::Grow), (3, StepKind::Bisect), (2, StepKind::Grow)])
        {
            m.search = Some(SearchStepResult { step, kind });
        }
        r.phases[0].search = Some(PhaseSearchResult {
            start_threads_per_client: 1,
            tolerance_percent: 5.0,
            max_p99_us: 1_000_000,
            max_error_percent: 1.0,
            max_threads_per_client: 4096,
            stopped: "requests/s stopped rising".into(),
            peak_mix: Some(3),
            peak_requests_per_sec: Some(360_918.0),
            useful_peak_mix: None,
            useful_peak_requests_per_sec: None,
        });
        let t = summary_table(&r);
        let row = |n: &str| {
            t.lines()
                .find(|l| l.trim_start().starts_with(n))
                .unwrap_or_else(|| panic!("no row {n} in {t}"))
                .to_string()
        };
        assert!(row("1 ").ends_with("  search step 1 (grow)"), "{t}");
        assert!(row("2 ").ends_with("  search step 3 (bisect)"), "{t}");
        assert!(row("3 ").ends_with("CLIENT-BOUND  search step 2 (grow)"), "{t}");
        assert!(
            t.contains(
                "peak search (static): requests/s stopped rising; peak 360,918.0 requests/s at mix 3 (3 threads), \
                 client-bound; useful peak (p99 ≤ 1000 ms, errors ≤ 1 %) none"
            ),
            "{t}"
        );
        // Without a search: no marks, no search line.
        let plain = summary_table(&results(2, None));
        assert!(!plain.contains("search"), "{plain}");
    }
}
