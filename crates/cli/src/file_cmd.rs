//! `benchlab run` of a file suite (workloads `disk_mix = …` or
//! `loadfile = …`, targets `file:///PATH` or `smb://…`): the same mixes,
//! ramps and think time as a web suite, run by the controller's one suite
//! loop over crates/fileserver; this module readies the suite and checks
//! its workloads.

use crate::output::{plural, thousands};
use crate::CliError;
use benchlab_fileserver::results::peak;
use benchlab_fileserver::smb::{redact, SmbUrl};
use benchlab_fileserver::suite::load_workloads;
use benchlab_fileserver::FileWorkload;
use benchlab_format::{mbit_per_sec, mbytes_per_sec, requests_per_sec};
use benchlab_model::Suite;
use benchlab_results::Results;

/// Whether `suite` runs file workloads (then [`run`] runs it).
pub fn is_file_suite(suite: &Suite) -> bool {
    !suite.file_workloads.is_empty()
}

/// `benchlab check`'s lines for the suite's file workloads, each read
/// and checked (an error names the workload file or loadfile and line).
pub fn check_lines(suite: &Suite) -> Result<Vec<String>, CliError> {
    let workloads = load_workloads(suite).map_err(|e| CliError::of("", e))?;
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

/// Readies a file suite (already loaded) for the controller's suite loop,
/// which runs it as it runs web suites: its targets moved (`--target`,
/// `--phase-target`), its phases selected, the SMB password set, and every
/// workload file, loadfile and mix target checked before anything runs.
pub fn prepare(
    suite: &mut Suite,
    target: Option<&str>,
    phase_targets: &[(String, String)],
    phases: &[String],
    smb_password_file: Option<&std::path::Path>,
) -> Result<(), CliError> {
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
        benchlab_fileserver::smb::set_password(password_for(suite, f)?);
    }
    // Every workload file and loadfile checked before anything runs.
    load_workloads(suite).map_err(|e| CliError::of("", e))?;
    // And every mix's target: a bad `smb://…?encrypt=bogus` in mix 3 is
    // the user's input, refused now (exit 2), not after mixes 1 and 2 ran.
    for mix in &suite.mixes {
        match benchlab_fileserver::FileTarget::parse(&mix.params.target) {
            Err(e) => return Err(CliError::of("", e.context(format_args!("mix {}", mix.number)))),
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
    // smb:// users run as processes of their own: this binary again.
    let exe =
        std::env::current_exe().map_err(|e| CliError::CannotRun(format!("cannot find benchlab's own binary: {e}")))?;
    benchlab_fileserver::process::set_user_command(vec![exe.into_os_string(), "__file-user".into()]);
    Ok(())
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
    // What benchlab's SMB2 client negotiated: once when every mix agrees.
    let negotiated: Vec<_> = r
        .mixes
        .iter()
        .filter_map(|m| Some((m.mix, m.files.as_ref()?.smb.as_ref()?)))
        .collect();
    match negotiated.first() {
        Some((_, first)) if negotiated.iter().all(|(_, n)| n == first) => {
            s += &format!("smb negotiated: {}\n", first.describe());
        }
        _ => {
            for (mix, n) in &negotiated {
                s += &format!("mix {mix} smb negotiated: {}\n", n.describe());
            }
        }
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

/// The `run` flags a file suite (disk mixes, loadfiles) takes today; every
/// other flag given is refused by name rather than silently ignored. The
/// list is of clap's ids (the fields of `run_cmd::RunArgs`), so a flag added to
/// `run` is refused for file suites until someone makes it apply.
pub(crate) const FILE_SUITE_FLAGS: &[&str] = &[
    "suite",
    "target",
    "out",
    "time_scale",
    "phases",
    "phase_targets",
    "repeat",
    "smb_password_file",
    // CI gates judge the results, a file suite's too (Mbit/s, errors, p99).
    "thresholds",
    "junit",
    // The history records any results (docs/history.md).
    "record",
    "db",
    // The controller's suite loop runs file mixes too (issue 20): its
    // monitors and verdict, live view, pinning, cold cache and peak search.
    "monitor_local",
    "monitor_pid",
    "monitor_process",
    "node_exporters",
    "monitors",
    "listen",
    "tls_dir",
    "web",
    "web_allow_remote",
    "web_linger",
    // Live metrics label a file suite's operations `kind="file"`.
    "metrics_listen",
    "metrics_allow_remote",
    "prometheus_remote_write",
    "otlp",
    "client_cpus",
    "allow_shared_cpus",
    "cold_cache",
    "find_peak",
    "peak_tolerance",
    "peak_max_p99",
    "peak_max_error_rate",
    "peak_max_threads",
    "peak_bisect_steps",
    "peak_start_threads",
    // Agents run a file mix's clients, each user in its own workspace on
    // the one share (the target must be reachable from the agents).
    "agents",
    "clients_per_agent",
    "agent_timeout",
    "abort_on_lost_agent",
];

/// Refuses the flags of `given` (clap id, flag as typed) that do not apply
/// to a file suite, naming each, before anything runs.
pub(crate) fn refuse_flags_for_file_suite(suite: &Suite, given: &[(String, String)]) -> Result<(), CliError> {
    let refused: Vec<&str> = given
        .iter()
        .filter(|(id, _)| !FILE_SUITE_FLAGS.contains(&id.as_str()))
        .map(|(_, flag)| flag.as_str())
        .collect();
    if refused.is_empty() {
        return Ok(());
    }
    Err(CliError::Usage(format!(
        "{} {} not apply to suite `{}`: its workloads are file workloads (disk mixes, loadfiles), \
         which have no URLs, TLS, file sets or engine threads, and no lab server \
         (docs/fileservers.md lists the flags they take)",
        refused.join(", "),
        if refused.len() == 1 { "does" } else { "do" },
        suite.name
    )))
}
