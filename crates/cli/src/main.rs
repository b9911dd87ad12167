//! `benchlab`: the command line. It parses flags into the engine's plan,
//! runs it, and presents the result; every number comes from the engine.

// Every `print!`/`println!` of this binary goes through
// `output::print_stdout` instead of std's macros, which panic (exit 101 with
// a backtrace) when stdout's reader has gone (`| head -1`). Defined before
// the modules so that they shadow std's in all of them.
macro_rules! print {
    ($($arg:tt)*) => { $crate::output::print_stdout(format_args!($($arg)*), false) };
}
macro_rules! println {
    () => { $crate::output::print_stdout(format_args!(""), true) };
    ($($arg:tt)*) => { $crate::output::print_stdout(format_args!($($arg)*), true) };
}

mod agent_cmd;
mod args;
mod demo_cmd;
mod file_cmd;
mod fileset_cmd;
mod gate;
mod history_cmd;
mod http;
mod kube_cmd;
mod lab_cmd;
mod live;
mod metrics_cmd;
mod monitor_cmd;
mod output;
mod report_cmd;
mod reproduce_cmd;
mod run_cmd;
mod run_lab;
mod serve_cmd;
mod workload_cmd;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use std::process::ExitCode;

/// benchlab — an open benchmark lab for web servers and file servers.
#[derive(Debug, Parser)]
#[command(name = "benchlab", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// The embedded default: a file set, benchlab's reference server, the
    /// `demo` suite (about a minute) and its results, with nothing to set up.
    Demo(demo_cmd::DemoArgs),
    /// Run a suite: mix after mix of rising load; writes a results directory
    /// (results.json, summary.csv, clients.csv) after every mix.
    Run(Box<run_cmd::RunArgs>),
    /// Validate a suite file without running it.
    Check(run_cmd::CheckArgs),
    /// Load one or more URLs with closed-loop virtual users and report
    /// requests/s, bytes/s, latency and errors (a one-off run, like wrk).
    Http(Box<http::HttpArgs>),
    /// Serve a directory and the in-process SPICE programs: benchlab's
    /// reference web server (the demo's target).
    Serve(serve_cmd::ServeArgs),
    /// Generate a document tree with its manifest (SPECweb99-like, the c't
    /// sets, or N pages), or verify a tree against its manifest.
    Fileset(fileset_cmd::FilesetArgs),
    /// The test lab: start a server under test (nginx, Apache, lighttpd,
    /// benchlab serve) from a generated configuration, and stop it again.
    Lab(lab_cmd::LabArgs),
    /// Run one of the seeds' experiments end to end (keepalive, cpus,
    /// servers, spi, cold-cache) on lab servers and write one side-by-side
    /// report; --list describes them.
    Reproduce(reproduce_cmd::ReproduceArgs),
    /// Sample this machine every second (CPU per core, context switches,
    /// NICs, disks, memory, a server process) and print a line per sample.
    Monitor(monitor_cmd::MonitorCmdArgs),
    /// Make workload files (from a real server's access log).
    Workload(workload_cmd::WorkloadArgs),
    /// Write report.html (charts, analysis, summary and client data reports,
    /// configuration) and report.xlsx from one or several results directories.
    Report(report_cmd::ReportArgs),
    /// Compare two results directories: ratios per mix, and exit 3 when NEW
    /// is worse than BASE beyond --max-regression (a CI regression check).
    Compare(report_cmd::CompareArgs),
    /// The history database of recorded runs (SQLite, or PostgreSQL with
    /// --db postgres://…): add a results directory, list, show, and the
    /// trend of a suite over its runs.
    History(history_cmd::HistoryArgs),
    /// Run clients for a controller elsewhere (`run --agents N`): dial
    /// out to it over mutual TLS and take its orders; never listens.
    Agent(agent_cmd::AgentArgs),
    /// One user of an smb:// file suite, as a process of its own (started
    /// by `benchlab run`; its job comes on stdin).
    #[command(name = "__file-user", hide = true)]
    FileUser,
}

/// How a command ended, mapped to the process exit code.
#[derive(Debug)]
pub enum Outcome {
    /// The run completed (whatever the server did): exit 0.
    Completed,
    /// A `--threshold` (or `http`'s `--max-*`) was breached, also in a
    /// run stopped by Ctrl-C: exit 3.
    Breached,
    /// Ctrl-C stopped the run; what was measured is kept: exit 130.
    Interrupted,
}

/// Errors a command reports before or instead of a result.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// Bad input from the user: exit 2.
    #[error("{0}")]
    Usage(String),
    /// The run could not be done (preflight failed, system limits): exit 1.
    #[error("{0}")]
    CannotRun(String),
}

impl CliError {
    /// Any crate's error as the command's error, its exit class as the
    /// error type says (`benchlab_model::input::Classify`), its message
    /// after `context` (`"lab: "`, or empty).
    pub fn of<E: benchlab_model::input::Classify>(context: &str, e: E) -> CliError {
        match e.exit_class() {
            benchlab_model::input::ExitClass::Usage => CliError::Usage(format!("{context}{e}")),
            benchlab_model::input::ExitClass::CannotRun => CliError::CannotRun(format!("{context}{e}")),
        }
    }
}

fn main() -> ExitCode {
    let matches = Cli::command().get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    let result = match cli.command {
        Command::Http(a) => http::run(*a),
        Command::Serve(a) => serve_cmd::run(a),
        Command::Fileset(a) => fileset_cmd::run(a),
        Command::Demo(a) => demo_cmd::run(a),
        Command::Run(mut a) => {
            a.given = given_flags(&matches, "run");
            run_cmd::run(*a)
        }
        Command::Check(a) => run_cmd::check(a),
        Command::Workload(a) => workload_cmd::run(a),
        Command::Lab(a) => lab_cmd::run(a),
        Command::Agent(a) => agent_cmd::run(a),
        Command::Monitor(a) => monitor_cmd::run(a),
        Command::Reproduce(a) => reproduce_cmd::run(a),
        Command::Report(a) => report_cmd::report(a),
        Command::Compare(a) => report_cmd::compare(a),
        Command::History(a) => history_cmd::run(a),
        Command::FileUser => return ExitCode::from(benchlab_fileserver::process::user_main() as u8),
    };
    if let Err(e) = &result {
        match e {
            // An smb:// target's password never reaches the terminal.
            CliError::Usage(m) => eprintln!("benchlab: error: {}", benchlab_fileserver::smb::redact(m)),
            CliError::CannotRun(m) => eprintln!("benchlab: {}", benchlab_fileserver::smb::redact(m)),
        }
    }
    ExitCode::from(process_exit_code(&result))
}

/// The flags given on `sub`'s command line, as (clap id, `--long` name),
/// defaults and positional arguments left out: what a command checks
/// against the flags that apply to its case.
fn given_flags(matches: &clap::ArgMatches, sub: &str) -> Vec<(String, String)> {
    let Some(m) = matches.subcommand_matches(sub) else {
        return Vec::new();
    };
    let cmd = Cli::command();
    let Some(sc) = cmd.find_subcommand(sub) else {
        return Vec::new();
    };
    m.ids()
        .filter(|id| m.value_source(id.as_str()) == Some(clap::parser::ValueSource::CommandLine))
        .filter_map(|id| {
            let arg = sc.get_arguments().find(|a| a.get_id() == id)?;
            let long = arg.get_long()?;
            Some((id.to_string(), format!("--{long}")))
        })
        .collect()
}

/// The documented exit code of a command's end (`benchlab_results::exit`).
fn process_exit_code(result: &Result<Outcome, CliError>) -> u8 {
    use benchlab_results::exit;
    match result {
        Ok(Outcome::Completed) => exit::COMPLETED,
        Ok(Outcome::Breached) => exit::BREACHED,
        Ok(Outcome::Interrupted) => exit::INTERRUPTED,
        Err(CliError::Usage(_)) => exit::USAGE,
        Err(CliError::CannotRun(_)) => exit::CANNOT_RUN,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use benchlab_model::input::ExitClass;

    /// A crate's error class and the documented exit code agree, and
    /// `CliError::of` keeps the class a crate's error type gives.
    #[test]
    fn crate_errors_keep_their_exit_class() {
        assert_eq!(ExitClass::Usage.code(), benchlab_results::exit::USAGE);
        assert_eq!(ExitClass::CannotRun.code(), benchlab_results::exit::CANNOT_RUN);
        let bad_scale = benchlab_model::check_time_scale(0.0).unwrap_err();
        let e = CliError::of("", bad_scale);
        assert_eq!(process_exit_code(&Err(e)), benchlab_results::exit::USAGE);
        let no_server = benchlab_lab::Error::Start("nginx did not start".into());
        let e = CliError::of("lab: ", no_server);
        assert!(
            matches!(&e, CliError::CannotRun(m) if m == "lab: nginx did not start"),
            "{e:?}"
        );
        let bad_cpus = benchlab_lab::process::parse_cpu_set("--client-cpus", "x").unwrap_err();
        assert!(matches!(CliError::of("", bad_cpus), CliError::Usage(m) if m.starts_with("--client-cpus")));
    }
}
