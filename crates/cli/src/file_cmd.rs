//! `benchlab run` of a file suite (workloads `disk_mix = …` or
//! `loadfile = …`, targets `file:///PATH` or `smb://…`): the same mixes,
//! ramps and think time as a web suite, run by crates/fileserver; this
//! module only shows progress, the summary table and where results went,
//! and writes the one report (crates/report) of its results.

use crate::output::{plural, thousands};
use crate::{CliError, Outcome};
use benchlab_fileserver::results::peak;
use benchlab_fileserver::smb::{redact, SmbUrl};
use benchlab_fileserver::suite::{load_workloads, run_file_suite, FileObserver};
use benchlab_fileserver::FileWorkload;
use benchlab_format::{mbit_per_sec, mbytes_per_sec, requests_per_sec};
use benchlab_model::{Mix, Suite};
use benchlab_results::{MixResult, Results};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Whether `suite` runs file workloads (then [`run`] runs it).
pub fn is_file_suite(suite: &Suite) -> bool {
    !suite.file_workloads.is_empty()
}

/// `benchlab check`'s lines for the suite's file workloads, each read
/// and checked (an error names the workload file or loadfile and line).
pub fn check_lines(suite: &Suite) -> Result<Vec<String>, CliError> {
    let workloads = load_workloads(suite).map_err(CliError::Usage)?;
    Ok(workloads
        .iter()
        .map(|(name, w)| match w {
            FileWorkload::DiskMix(m) => format!(
                "  workload {name}: disk mix `{}` ({}), workspace {} bytes per user, file sizes median {} / p90 {} bytes",
                benchlab_model::input::excerpt(&m.name),
                m.path.display(),
                thousands(m.workspace),
                thousands(m.median),
                thousands(m.p90)
            ),
            FileWorkload::Loadfile(l, loops) => format!(
                "  workload {name}: loadfile {} ({} operations a pass{})",
                l.path.display(),
                thousands(l.lines.len() as u64),
                loops.map(|n| format!(", {n} passes per user")).unwrap_or_default()
            ),
        })
        .collect())
}

/// The progress display: a line per mix; on a terminal, while a mix runs,
/// a bar with each second's Mbit/s, operations/s and errors, as web suites
/// show requests/s.
struct Progress {
    tty: bool,
    bar: Option<indicatif::ProgressBar>,
    /// Bytes each user of a disk-mix workload writes to fill its workspace
    /// before the mix's clock starts, by workload name.
    fills: BTreeMap<String, u64>,
}

impl FileObserver for Progress {
    fn mix_started(&mut self, mix: &Mix, phase: &str) {
        let msg = format!(
            "mix {} ({phase}): {} × {}",
            mix.number,
            plural(mix.clients.into(), "client", "clients"),
            plural(mix.params.threads_per_client.into(), "thread", "threads"),
        );
        let length = humantime::format_duration(Duration::from_millis(mix.params.length.as_millis() as u64));
        // A disk mix fills every user's workspace before its clock starts,
        // which takes a while on a big workspace: say so, rather than show
        // a bar standing at 0.
        let fill = self.fills.get(&mix.params.workload).map(|bytes| {
            format!(
                "filling workspaces ({} per user) first",
                plural(*bytes, "byte", "bytes")
            )
        });
        if self.tty {
            let bar = indicatif::ProgressBar::new(mix.params.length.as_secs().max(1));
            // The mix's own seconds (position), not the time since it was
            // started: the fill is not part of the mix.
            bar.set_style(
                indicatif::ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len} s {prefix}")
                    .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
            );
            bar.set_message(msg);
            bar.set_prefix(match &fill {
                Some(f) => format!("{f}, then the ramp-up …"),
                None => "ramp-up …".to_string(),
            });
            bar.enable_steady_tick(Duration::from_millis(200));
            self.bar = Some(bar);
        } else {
            match fill {
                Some(f) => eprintln!("{msg}, {length}: {f} …"),
                None => eprintln!("{msg}, {length} …"),
            }
        }
    }
    fn repeat_started(&mut self, mix: &Mix, repeat: u32, of: u32) {
        eprintln!("mix {}: run {repeat} of {of}", mix.number);
    }
    fn second(&mut self, mix: &Mix, s: &benchlab_fileserver::run::LiveSecond) {
        if let Some(b) = &self.bar {
            // Seconds count from the window's start, after the ramp-up.
            b.set_position(mix.params.ramp_up.as_secs() + s.second);
            b.set_prefix(format!(
                "{} Mbit/s, {} ops/s, {}",
                mbit_per_sec(s.bytes as f64 * 8.0 / 1e6),
                thousands(s.operations),
                plural(s.errors, "error", "errors")
            ));
        }
    }
    fn mix_finished(&mut self, r: &MixResult) {
        if let Some(b) = self.bar.take() {
            b.finish_and_clear();
        }
        eprintln!(
            "mix {}: {} Mbit/s, {} operations/s, {}",
            r.mix,
            mbit_per_sec(r.figures.mbit_per_sec),
            requests_per_sec(r.figures.requests_per_sec),
            plural(r.figures.errors_total, "error", "errors")
        );
    }
}

/// Runs a file suite (already loaded, `--time-scale` applied).
pub fn run(
    suite: &Suite,
    out: Option<PathBuf>,
    target: Option<&str>,
    phase_targets: &[(String, String)],
    phases: &[String],
    repeat: u32,
    smb_password_file: Option<&std::path::Path>,
) -> Result<Outcome, CliError> {
    let mut suite = suite.clone();
    if !suite.workloads.is_empty() {
        return Err(CliError::Usage(format!(
            "suite `{}` has web and file workloads: expected a suite of one kind (run them as two suites)",
            suite.name
        )));
    }
    if let Some(t) = target {
        if !benchlab_model::is_file_target(t) {
            return Err(CliError::Usage(format!(
                "--target `{}`: a file suite expects file:///PATH or smb://[USER[:PASS]@]HOST[:PORT]/SHARE",
                redact(t)
            )));
        }
        suite.retarget(t);
    }
    for (phase, url) in phase_targets {
        suite.retarget_phase(phase, url).map_err(|e| CliError::of("", e))?;
    }
    suite.select_phases(phases).map_err(|e| CliError::of("", e))?;
    if let Some(f) = smb_password_file {
        benchlab_fileserver::smb::set_password(password_for(&suite, f)?);
    }
    // Every workload file and loadfile checked before anything runs.
    let workloads = load_workloads(&suite).map_err(CliError::Usage)?;
    // And every mix's target: a bad `smb://…?encrypt=bogus` in mix 3 is
    // the user's input, refused now (exit 2), not after mixes 1 and 2 ran.
    for mix in &suite.mixes {
        match benchlab_fileserver::FileTarget::parse(&mix.params.target) {
            Err(e) => return Err(CliError::Usage(format!("mix {}: {e}", mix.number))),
            Ok(benchlab_fileserver::FileTarget::Local(p)) if !p.is_dir() => {
                return Err(CliError::Usage(format!(
                    "mix {}: target file://{}: no such directory: expected an existing directory (local or mounted)",
                    mix.number,
                    p.display()
                )))
            }
            Ok(_) => {}
        }
    }
    let out = out.unwrap_or_else(|| PathBuf::from(format!("results/{}-{}", suite.name, crate::output::stamp())));
    let mut targets: Vec<&str> = suite.phases.iter().map(|p| p.target.as_str()).collect();
    targets.dedup();
    eprintln!(
        "benchlab run: file suite `{}`, {} mix{}, {} against {} → {}",
        suite.name,
        suite.mixes.len(),
        if suite.mixes.len() == 1 { "" } else { "es" },
        humantime::format_duration(Duration::from_secs(suite.total_length().as_secs())),
        redact(&targets.join(", ")),
        out.display()
    );
    // smb:// users run as processes of their own: this binary again.
    let exe =
        std::env::current_exe().map_err(|e| CliError::CannotRun(format!("cannot find benchlab's own binary: {e}")))?;
    benchlab_fileserver::process::set_user_command(vec![exe.into_os_string(), "__file-user".into()]);
    let stop = Arc::new(AtomicBool::new(false));
    let s2 = stop.clone();
    let _ = ctrlc::set_handler(move || s2.store(true, Ordering::Relaxed));
    let r = run_file_suite(
        &suite,
        &workloads,
        &out,
        std::env::args().collect(),
        repeat,
        &stop,
        &mut Progress {
            tty: std::io::IsTerminal::is_terminal(&std::io::stderr()),
            bar: None,
            fills: workloads
                .iter()
                .filter_map(|(name, w)| match w {
                    FileWorkload::DiskMix(m) => Some((name.clone(), m.workspace)),
                    FileWorkload::Loadfile(..) => None,
                })
                .collect(),
        },
    )
    .map_err(CliError::CannotRun)?;
    print!("{}", summary_table(&r));
    println!("results: {}", out.join("results.json").display());
    // The one report of every run (crates/report), leading with Mbit/s.
    let run = benchlab_report::Run {
        label: out
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| r.suite.name.clone()),
        dir: out.clone(),
        results: r.clone(),
    };
    match benchlab_report::write_reports(&[run], &out, &benchlab_report::ReportOptions::default()) {
        Ok(files) => {
            for (i, f) in files.iter().enumerate() {
                println!("{}{}", if i == 0 { "report:  " } else { "         " }, f.display());
            }
        }
        Err(e) => eprintln!("benchlab: the report could not be written: {e}"),
    }
    Ok(if !r.complete {
        Outcome::Interrupted
    } else {
        Outcome::Completed
    })
}

/// `--smb-password-file FILE`'s password (its first line), for the
/// suite's `smb://USER@…` targets; refused where no target can use it
/// (file://, a guest) or a target has a password of its own.
fn password_for(suite: &Suite, file: &std::path::Path) -> Result<String, CliError> {
    let flag = "--smb-password-file";
    let mut users = 0;
    for m in &suite.mixes {
        let Ok(u) = SmbUrl::parse(&m.params.target) else {
            continue;
        };
        if u.password.is_some() {
            return Err(CliError::Usage(format!(
                "{flag}: target `{u}` has a password of its own: expected smb://USER@HOST/SHARE with {flag}"
            )));
        }
        users += usize::from(u.user.is_some());
    }
    if users == 0 {
        return Err(CliError::Usage(format!(
            "{flag}: no target of this run is smb://USER@HOST/SHARE (file:// targets and SMB guests have no \
             password): expected a user in the smb:// target"
        )));
    }
    let text = benchlab_model::input::read_bounded_text(file, "password file", 1 << 20)
        .map_err(|e| CliError::Usage(format!("{flag}: {e}")))?;
    let password = text.lines().next().unwrap_or_default().to_string();
    if password.is_empty() {
        return Err(CliError::Usage(format!(
            "{flag}: {} is empty: expected the SMB password on its first line",
            file.display()
        )));
    }
    Ok(password)
}

/// The terminal table: one line per mix, then the peak; numbers as web
/// suites write them (crates/format: separators, each quantity's decimals).
pub fn summary_table(r: &Results) -> String {
    let mut s = format!(
        "{:>4} {:>7} {:>10} {:>10} {:>10} {:>12} {:>8} {:>7}\n",
        "mix", "clients", "Mbit/s", "read MB/s", "write MB/s", "ops/s", "errors", "loops"
    );
    for m in &r.mixes {
        let f = m.files.clone().unwrap_or_default();
        s += &format!(
            "{:>4} {:>7} {:>10} {:>10} {:>10} {:>12} {:>8} {:>7}\n",
            m.mix,
            thousands(m.clients.into()),
            mbit_per_sec(m.figures.mbit_per_sec),
            mbytes_per_sec(f.bytes_read as f64 / m.window_s),
            mbytes_per_sec(f.bytes_written as f64 / m.window_s),
            requests_per_sec(m.figures.requests_per_sec),
            thousands(m.figures.errors_total),
            thousands(f.loops)
        );
    }
    for m in r.mixes.iter().filter(|m| m.partial) {
        s += &format!(
            "mix {} stopped early (Ctrl-C): its rates are of the {} s it ran\n",
            m.mix,
            benchlab_format::seconds(m.window_s)
        );
    }
    if let Some(p) = &peak(&r.mixes) {
        s += &format!(
            "peak: mix {} ({}), {} Mbit/s",
            p.mix,
            plural(p.clients.into(), "client", "clients"),
            mbit_per_sec(p.mbit_per_s)
        );
        if !p.past_peak.is_empty() {
            let shape: Vec<String> = p
                .past_peak
                .iter()
                .map(|(m, pct)| format!("mix {m} {}", benchlab_format::percent(*pct)))
                .collect();
            s += &format!("; past the peak: {}", shape.join(", "));
        }
        s += "\n";
    }
    s
}
