//! `benchlab demo`: the embedded default. A small file set in a temporary
//! directory, benchlab's own reference server on a free loopback port with
//! its in-process SPICE programs, the `demo` suite (about a minute), the
//! results directory and the reports — with nothing to install or start.

use crate::output::plural;
use crate::output::stamp;
use crate::run_cmd::execute;
use crate::{CliError, Outcome};
use benchlab_controller::RunOptions;
use benchlab_engine::TlsOptions;
use benchlab_fileset::{generate, Kind, Spec};
use benchlab_model::Suite;
use clap::Args;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;

/// The demo suite, compiled in so the demo needs no file of the repository.
const DEMO_SUITE: &str = include_str!("../../../suites/demo.toml");

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Results directory [default: results/demo-YYYYmmdd-HHMMSS].
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Multiply the suite's durations by this, 0.001 to 1000 (0.25: a quarter-minute demo).
    #[arg(long, default_value = "1", value_name = "F", value_parser = crate::args::time_scale)]
    time_scale: f64,
    /// Worker threads of the reference server (the rest of the cores load it).
    #[arg(long, default_value_t = 1, value_name = "N")]
    server_workers: usize,
    /// Do not sample this machine during the demo (by default the demo
    /// watches its host and its reference server's threads, and the
    /// report says what limited each mix).
    #[arg(long)]
    no_monitor: bool,
    #[command(flatten)]
    web: crate::live::WebArgs,
}

pub fn run(a: DemoArgs) -> Result<Outcome, CliError> {
    crate::live::check(&a.web)?;
    let cannot = |what: &str, e: &dyn std::fmt::Display| CliError::CannotRun(format!("demo: {what}: {e}"));
    let tmp = tempfile::Builder::new()
        .prefix("benchlab-demo-")
        .tempdir()
        .map_err(|e| cannot("cannot make a temporary directory", &e))?;
    let fileset = tmp.path().join("fileset");

    // 1. The file set: a SPECweb99-like tree of two directories (72 files,
    //    10 MB), the same bytes on every machine.
    let spec = Spec::new(Kind::Specweb99 { dirs: 2 }, 1).map_err(|e| cannot("file set", &e))?;
    let made = generate(&spec, &fileset, &mut |_, _| {}).map_err(|e| cannot("file set", &e))?;
    eprintln!(
        "demo: file set specweb99 (2 directories): {}, {} MB in {}",
        plural(made.files, "file", "files"),
        benchlab_format::fixed(made.bytes as f64 / 1e6, 1),
        fileset.display()
    );

    // 2. The reference server, with the in-process SPICE programs.
    let mut config = benchlab_server::Config::new(&fileset);
    config.listen = SocketAddr::from(([127, 0, 0, 1], 0));
    config.workers = a.server_workers.max(1);
    config.session_log = Some(tmp.path().join("spice-session.log"));
    let server = benchlab_server::Server::bind(config)
        .map_err(|e| cannot("reference server", &e))?
        .spawn()
        .map_err(|e| cannot("reference server", &e))?;
    let target = format!("http://{}", server.local_addr());
    eprintln!(
        "demo: benchlab serve on {target} ({})",
        plural(a.server_workers.max(1) as u64, "worker thread", "worker threads")
    );

    // 3. The demo suite against it.
    let suite_path = tmp.path().join("demo.toml");
    std::fs::write(&suite_path, DEMO_SUITE).map_err(|e| cannot("suite", &e))?;
    let mut suite = Suite::from_file(&suite_path).map_err(|e| CliError::CannotRun(e.to_string()))?;
    suite.retarget(&target);
    if a.time_scale != 1.0 {
        suite.scale_time(a.time_scale).map_err(|e| CliError::of("", e))?;
    }
    let out = a
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("results/demo-{}", stamp())));
    // The reference server runs in this process: watch its threads
    // (`benchlab-serve`), not the load generator's.
    let mut monitors = crate::monitor_cmd::Monitors::default();
    if !a.no_monitor {
        let watch = benchlab_monitor::Watch::Threads {
            pid: std::process::id() as i32,
            name: "benchlab-serve".into(),
        };
        match benchlab_monitor::LocalMonitor::this_machine(watch, std::time::Duration::from_secs(1)) {
            Ok(m) => monitors.add(m),
            Err(e) => eprintln!("demo: cannot monitor this machine ({e}); running without"),
        }
    }
    let opts = RunOptions {
        out: out.clone(),
        monitors: monitors.sources.clone(),
        filesets: BTreeMap::from([("demo".to_string(), fileset.clone())]),
        os_threads_per_client: None,
        preflight: true,
        tls: TlsOptions::default(),
        time_scale: a.time_scale,
        command: std::env::args().collect(),
        repeat: 1,
        ..RunOptions::default()
    };
    let outcome = execute(&suite, &opts, &a.web);
    let _ = server.shutdown();
    outcome
}
