//! `benchlab reproduce NAME`: one of the seeds' experiments end to end on
//! this host — a file set, the server under test from the lab, the suite
//! run once per side, one side-by-side report — by running benchlab's own
//! commands (`fileset generate`, `lab up`, `run`, `report`, `lab down`) as
//! a user would, so each step is the documented one and its output shows.

use crate::{CliError, Outcome};
use benchlab_results::Results;
use clap::Args;
use std::path::{Path, PathBuf};
use std::process::Command;

#[derive(Debug, Args)]
pub struct ReproduceArgs {
    /// The experiment (see --list).
    #[arg(value_name = "NAME", required_unless_present = "list")]
    name: Option<String>,
    /// Describe each experiment and exit.
    #[arg(long)]
    list: bool,
    /// The lab server under test: nginx, apache-event, apache-prefork,
    /// lighttpd or benchlab.
    #[arg(long, default_value = "nginx", value_name = "SERVER")]
    server: String,
    /// Multiply each mix's ramps and length by this (0.05 to try it in
    /// seconds).
    #[arg(long, default_value = "1", value_name = "F", value_parser = crate::args::time_scale)]
    time_scale: f64,
    /// Where the file set, the suites, each side's results and the report
    /// go [default: results/reproduce-NAME-YYYYmmdd-HHMMSS].
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

/// One experiment: its name, what the seed found, and its sides.
struct Experiment {
    name: &'static str,
    about: &'static str,
}

const EXPERIMENTS: &[Experiment] = &[
    Experiment {
        name: "keepalive",
        about: "HTTP/1.0 without keep-alive (a connection per request) vs HTTP/1.1 persistent connections, \
                one server, the same file set and load. The 1999 c't and Mindcraft tests found persistent \
                HTTP/1.1 changed results about 3x.",
    },
    Experiment {
        name: "cpus",
        about: "One server pinned to 1 CPU, then to 2 (`lab up --cpus`), the load generator on another CPU \
                where the machine has one. Mindcraft (1999) disabled processors to compare 1 and 4; c't \
                compared 1, 2 and 4.",
    },
];

/// A side of an experiment: its label, suite settings and lab CPU sets.
struct Side {
    label: &'static str,
    /// Lines added to the suite's `[defaults]`.
    defaults: &'static str,
    server_cpus: Option<&'static str>,
    client_cpus: Option<&'static str>,
}

fn sides(name: &str, online: usize) -> Vec<Side> {
    match name {
        "keepalive" => vec![
            Side {
                label: "http10",
                defaults: "http10_percent = 100\nhttp10_keepalive = false\n",
                server_cpus: None,
                client_cpus: None,
            },
            Side {
                label: "http11",
                defaults: "persistent_percent = 100\n",
                server_cpus: None,
                client_cpus: None,
            },
        ],
        _ => {
            // With 3 CPUs or more the client keeps a core of its own at
            // both sizes; on 2 it has CPU 1 beside 1 server CPU and shares
            // at 2 (the report's configuration section says so).
            let (one_client, two_client) = match online {
                0..=1 => (None, None),
                2 => (Some("1"), None),
                _ => (Some("2"), Some("2")),
            };
            vec![
                Side {
                    label: "1cpu",
                    defaults: "",
                    server_cpus: Some("0"),
                    client_cpus: one_client,
                },
                Side {
                    label: "2cpus",
                    defaults: "",
                    server_cpus: (online >= 2).then_some("0,1"),
                    client_cpus: two_client,
                },
            ]
        }
    }
}

/// The suite both sides run: 3 loads of 20 s, the specweb99 file set.
fn suite(name: &str, side: &Side) -> String {
    format!(
        "name = \"reproduce-{name}-{label}\"\n\
         description = \"benchlab reproduce {name}: {label}\"\n\
         target = \"http://127.0.0.1:9\"\n\
         seed = 1\n\n\
         [defaults]\n\
         ramp_up = \"3s\"\n\
         ramp_down = \"2s\"\n\
         length = \"20s\"\n\
         timeout = \"10s\"\n\
         {defaults}\n\
         [workloads.static]\n\
         [[workloads.static.class]]\n\
         name = \"static\"\n\
         percent = 100\n\
         [workloads.static.class.fileset]\n\
         name = \"specweb99\"\n\n\
         [[mix]]\nclients = 1\nthreads_per_client = 2\n\
         [[mix]]\nclients = 1\nthreads_per_client = 8\n\
         [[mix]]\nclients = 1\nthreads_per_client = 32\n",
        label = side.label,
        defaults = side.defaults
    )
}

/// Runs this benchlab with `args`, its output shown; an error names the step.
fn benchlab(step: &str, args: &[&str]) -> Result<std::process::Output, CliError> {
    let exe = std::env::current_exe().map_err(|e| CliError::CannotRun(format!("reproduce: {e}")))?;
    eprintln!("reproduce: benchlab {}", args.join(" "));
    let out = Command::new(exe)
        .args(args)
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|e| CliError::CannotRun(format!("reproduce: {step}: {e}")))?;
    if !out.status.success() {
        return Err(CliError::CannotRun(format!(
            "reproduce: {step} failed ({}); see its messages above",
            out.status
        )));
    }
    Ok(out)
}

/// Stops the lab server when dropped, so a failed step leaves none running.
struct LabDown(String);

impl Drop for LabDown {
    fn drop(&mut self) {
        if let Err(e) = benchlab("lab down", &["lab", "down", &self.0, "--grace", "5s"]) {
            eprintln!("benchlab: warning: {e}; stop it with `benchlab lab down {}`", self.0);
        }
    }
}

fn text(p: &Path) -> &str {
    p.to_str().unwrap_or_default()
}

pub fn run(a: ReproduceArgs) -> Result<Outcome, CliError> {
    if a.list {
        for e in EXPERIMENTS {
            println!(
                "{}\n    {}\n",
                e.name,
                e.about.split_whitespace().collect::<Vec<_>>().join(" ")
            );
        }
        return Ok(Outcome::Completed);
    }
    let name = a.name.as_deref().unwrap_or_default();
    if !EXPERIMENTS.iter().any(|e| e.name == name) {
        let names: Vec<&str> = EXPERIMENTS.iter().map(|e| e.name).collect();
        return Err(CliError::Usage(format!(
            "unknown experiment {name:?} (expected one of: {}; see `benchlab reproduce --list`)",
            names.join(", ")
        )));
    }
    benchlab_lab::ServerKind::parse(&a.server).map_err(|e| CliError::Usage(format!("--server: {e}")))?;
    let out = a
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("results/reproduce-{name}-{}", crate::run_cmd::stamp())));
    std::fs::create_dir_all(&out)
        .map_err(|e| CliError::CannotRun(format!("reproduce: create {}: {e}", out.display())))?;
    let fileset = out.join("fileset");
    if !fileset.join("manifest").exists() {
        benchlab(
            "fileset generate",
            &[
                "fileset",
                "generate",
                "specweb99",
                "--dirs",
                "1",
                "--out",
                text(&fileset),
            ],
        )?;
    }
    let online = std::thread::available_parallelism().map_or(1, |n| n.get());
    let scale = a.time_scale.to_string();
    let fileset_arg = format!("specweb99={}", fileset.display());
    let mut dirs = Vec::new();
    let mut rates = Vec::new();
    for side in sides(name, online) {
        let suite_path = out.join(format!("{}.toml", side.label));
        std::fs::write(&suite_path, suite(name, &side))
            .map_err(|e| CliError::CannotRun(format!("reproduce: write {}: {e}", suite_path.display())))?;
        let mut up = vec!["lab", "up", a.server.as_str(), "--root", text(&fileset)];
        if let Some(c) = side.server_cpus {
            up.extend(["--cpus", c]);
        }
        benchlab("lab up", &up)?;
        let down = LabDown(a.server.clone());
        let dir = out.join(side.label);
        let mut run = vec![
            "run",
            text(&suite_path),
            "--lab",
            a.server.as_str(),
            "--fileset",
            fileset_arg.as_str(),
            "--time-scale",
            scale.as_str(),
            "--out",
            text(&dir),
        ];
        if let Some(c) = side.client_cpus {
            run.extend(["--client-cpus", c]);
        }
        benchlab(&format!("run ({})", side.label), &run)?;
        drop(down);
        let results: Results = std::fs::read(dir.join("results.json"))
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .ok_or_else(|| CliError::CannotRun(format!("reproduce: {}: no results.json", dir.display())))?;
        let peak = results
            .mixes
            .iter()
            .map(|m| m.figures.requests_per_sec)
            .fold(0.0, f64::max);
        rates.push((side.label, peak));
        dirs.push(dir);
    }
    let report = out.join("report");
    let mut args = vec!["report"];
    args.extend(dirs.iter().map(|d| text(d)));
    args.extend(["--out", text(&report)]);
    benchlab("report", &args)?;
    println!("experiment {name} on {}", a.server);
    for (label, peak) in &rates {
        println!("  {label:<8} peak {} requests/s", benchlab_format::rate(*peak));
    }
    if let [(a_label, a_rate), (b_label, b_rate)] = rates.as_slice() {
        if *a_rate > 0.0 {
            println!("  {b_label} ÷ {a_label}: {:.2}×", b_rate / a_rate);
        }
    }
    println!("report: {}", report.join("report.html").display());
    Ok(Outcome::Completed)
}
