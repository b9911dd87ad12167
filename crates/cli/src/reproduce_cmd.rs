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
    /// The experiment: keepalive, cpus, servers, spi or cold-cache (--list
    /// describes each).
    #[arg(value_name = "NAME", required_unless_present = "list")]
    name: Option<String>,
    /// Describe each experiment and exit.
    #[arg(long)]
    list: bool,
    /// The lab server under test: nginx, apache-event, apache-prefork,
    /// lighttpd or benchlab (keepalive, cpus, cold-cache).
    #[arg(long, default_value = "nginx", value_name = "SERVER")]
    server: String,
    /// The lab servers compared, comma-separated (servers, spi)
    /// [default: nginx,apache-event,apache-prefork,lighttpd,benchlab].
    #[arg(long, value_name = "LIST")]
    servers: Option<String>,
    /// The SPIs compared, comma-separated (spi): each server runs those it
    /// has [default: every SPI of each server].
    #[arg(long, value_name = "LIST")]
    spis: Option<String>,
    /// Multiply each mix's ramps and length by this (0.05 to try it in
    /// seconds).
    #[arg(long, default_value = "1", value_name = "F", value_parser = crate::args::time_scale)]
    time_scale: f64,
    /// Where the file set, the suites, each side's results and the report
    /// go [default: results/reproduce-NAME-YYYYmmdd-HHMMSS].
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

/// One experiment: its name, what the seed found, and the file set it
/// serves (`fileset generate` arguments).
struct Experiment {
    name: &'static str,
    about: &'static str,
    fileset: &'static [&'static str],
}

const SPECWEB99: &[&str] = &["specweb99", "--dirs", "1"];

const EXPERIMENTS: &[Experiment] = &[
    Experiment {
        name: "keepalive",
        about: "HTTP/1.0 without keep-alive (a connection per request) vs HTTP/1.1 persistent connections, \
                one server, the same file set and load. The 1999 c't and Mindcraft tests found persistent \
                HTTP/1.1 changed results about 3x.",
        fileset: SPECWEB99,
    },
    Experiment {
        name: "cpus",
        about: "One server pinned to 1 CPU, then to 2 (`lab up --cpus`), the load generator on another CPU \
                where the machine has one. Mindcraft (1999) disabled processors to compare 1 and 4; c't \
                compared 1, 2 and 4.",
        fileset: SPECWEB99,
    },
    Experiment {
        name: "servers",
        about: "nginx vs Apache (event and prefork MPMs) vs lighttpd vs benchlab serve on the mindcraft-1998 \
                workload (70 % static, 28 % ad rotation, 2 % session log over the seed's 704 most requested \
                URLs; HTTP/1.1, 4 requests per connection), each server's dynamic pages through its fastest \
                SPI (FastCGI; benchlab's in-process). The seeds' headline question: Mindcraft (1999) put \
                NT/IIS at 3.8x Linux/Apache 1.3.4; c't found them level on static pages. --servers picks \
                a subset.",
        fileset: &["mindcraft-1998", "--seed", "1"],
    },
    Experiment {
        name: "spi",
        about: "Static files vs each SPICE SPI under each server that has it (nginx, Apache, lighttpd: cgi-c, \
                cgi-script, cgi-perl, fastcgi, php-fpm, node, and shtml under nginx and Apache; benchlab: inproc), \
                ad rotation (shtml: its include program) returning the static files' bytes, so an SPI's \
                rate / the static rate is its efficiency. The report gives seed 001's tables: request and \
                latency efficiency at the peak and at the highest load, and each phase's useful peak, per \
                server and SPI, with each server's and application server's version and configuration. The \
                1999 SPI study (seed 001) measured the same ratio for CGI, NSAPI, ISAPI, servlets. --servers \
                and --spis pick subsets.",
        fileset: SPECWEB99,
    },
    Experiment {
        name: "cold-cache",
        about: "The ct-10k file set (10,000 pages of 4,096 bytes, requested uniformly, HTTP/1.0) with the \
                page cache emptied before each mix (`run --cold-cache`: drop_caches as root, else the lab \
                server's memory cgroup) vs every file read beforehand (warm). c't (1999) rebooted between \
                runs to start cold.",
        fileset: &["ct-10k"],
    },
];

/// A side of an experiment: its label, server, suite and constraints.
struct Side {
    label: String,
    server: String,
    /// The suite file's text.
    suite: String,
    server_cpus: Option<&'static str>,
    client_cpus: Option<&'static str>,
    /// `run --cold-cache`.
    cold_cache: bool,
    /// Every file of the set read just before the run.
    warm: bool,
}

impl Side {
    fn new(label: &str, server: &str, suite: String) -> Side {
        Side {
            label: label.to_owned(),
            server: server.to_owned(),
            suite,
            server_cpus: None,
            client_cpus: None,
            cold_cache: false,
            warm: false,
        }
    }
}

/// A suite's head: name, description, target (replaced by `--lab`), the
/// defaults every experiment shares plus `defaults`.
fn head(name: &str, label: &str, defaults: &str) -> String {
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
         {defaults}\n"
    )
}

/// keepalive's and cpus's suite: 3 loads of 20 s, the specweb99 file set.
fn static_suite(name: &str, label: &str, defaults: &str) -> String {
    head(name, label, defaults)
        + "[workloads.static]\n\
           [[workloads.static.class]]\n\
           name = \"static\"\n\
           percent = 100\n\
           [workloads.static.class.fileset]\n\
           name = \"specweb99\"\n\n\
           [[mix]]\nclients = 1\nthreads_per_client = 2\n\
           [[mix]]\nclients = 1\nthreads_per_client = 8\n\
           [[mix]]\nclients = 1\nthreads_per_client = 32\n"
}

/// The SPI a server's dynamic pages go through in `servers`: its fastest
/// (in-process for benchlab, FastCGI for the others).
fn fastest_spi(server: benchlab_lab::ServerKind) -> &'static str {
    if server.spis().contains(&"inproc") {
        "inproc"
    } else {
        "fastcgi"
    }
}

/// servers' suite: suites/mindcraft-1998.toml's workload and connection
/// settings through `spi`, at 1, 4 and 16 clients of 2 threads.
fn mindcraft_suite(label: &str, spi: &str) -> String {
    let mut s = head(
        "servers",
        label,
        "threads_per_client = 2\nreceive_buffer = 4096\nhttp10_percent = 0\npersistent_percent = 100\n\
         requests_per_connection = 4\n",
    );
    s.push_str("[workloads.mindcraft]\n");
    for (class, percent, prefix) in [
        ("static", 70, String::new()),
        ("adrot", 28, format!("prefix = \"/spice/{spi}/adrot\"\n")),
        ("session", 2, format!("prefix = \"/spice/{spi}/session\"\n")),
    ] {
        let dynamic = if prefix.is_empty() {
            String::new()
        } else {
            format!("kind = \"dynamic\"\nspi = \"{spi}\"\n")
        };
        s.push_str(&format!(
            "[[workloads.mindcraft.class]]\nname = \"{class}\"\npercent = {percent}\n{dynamic}\
             [workloads.mindcraft.class.fileset]\nname = \"mindcraft-1998\"\ntop = 704\n{prefix}\n"
        ));
    }
    for clients in [1, 4, 16] {
        s.push_str(&format!("[[mix]]\nclients = {clients}\n"));
    }
    s
}

/// spi's suite for one server: a phase of static files, then one per SPI
/// of `spis` (ad rotation of the same files, or the SPI's first program
/// where it has no ad rotation: shtml's include), each at 1 client of 2 and
/// of 8 threads.
fn spi_suite(server: benchlab_lab::ServerKind, spis: &[&str]) -> String {
    let mut s = head(
        "spi",
        server.name(),
        "receive_buffer = 4096\npersistent_percent = 100\nrequests_per_connection = 4\n",
    );
    let mut phases = vec!["static"];
    phases.extend(spis);
    for phase in &phases {
        let dynamic = if *phase == "static" {
            String::new()
        } else {
            format!("kind = \"dynamic\"\nspi = \"{phase}\"\n")
        };
        let prefix = if *phase == "static" {
            String::new()
        } else {
            let programs = benchlab_lab::spi_programs(phase);
            let program = if programs.contains(&"adrot") {
                "adrot"
            } else {
                programs[0]
            };
            format!("prefix = \"/spice/{phase}/{program}\"\n")
        };
        s.push_str(&format!(
            "[workloads.{phase}]\n[[workloads.{phase}.class]]\nname = \"{phase}\"\npercent = 100\n{dynamic}\
             [workloads.{phase}.class.fileset]\nname = \"specweb99\"\n{prefix}\n"
        ));
    }
    for phase in &phases {
        for threads in [2, 8] {
            s.push_str(&format!(
                "[[mix]]\nclients = 1\nthreads_per_client = {threads}\nworkload = \"{phase}\"\n"
            ));
        }
    }
    s
}

/// cold-cache's suite: c't's 10,000 pages, uniformly, HTTP/1.0 as c't ran
/// them, at 1 client of 4 and of 16 threads.
fn ct10k_suite(label: &str) -> String {
    head("cold-cache", label, "receive_buffer = 4096\nhttp10_percent = 100\n")
        + "[workloads.pages-10k]\n\
           [[workloads.pages-10k.class]]\n\
           name = \"page\"\n\
           percent = 100\n\
           [workloads.pages-10k.class.fileset]\n\
           name = \"ct-10k\"\n\
           classes = [\"ct-10k\"]\n\
           popularity = \"uniform\"\n\n\
           [[mix]]\nclients = 1\nthreads_per_client = 4\n\
           [[mix]]\nclients = 1\nthreads_per_client = 16\n"
}

/// The servers spi runs and the SPIs each runs: of `servers`, each with
/// those of its SPIs that `wanted` names (all of them without `--spis`),
/// in the server's order. A server with none of them is left out, and said
/// so on stderr.
fn spi_plan(
    servers: &[benchlab_lab::ServerKind],
    wanted: Option<&[String]>,
) -> Result<Vec<(benchlab_lab::ServerKind, Vec<&'static str>)>, CliError> {
    let mut plan = Vec::new();
    for &k in servers {
        let spis: Vec<&'static str> = k
            .spis()
            .iter()
            .copied()
            .filter(|s| wanted.is_none_or(|w| w.iter().any(|x| x == s)))
            .collect();
        if spis.is_empty() {
            eprintln!(
                "reproduce: {} has none of --spis (its SPIs: {}); left out",
                k.name(),
                k.spis().join(", ")
            );
        } else {
            plan.push((k, spis));
        }
    }
    if plan.is_empty() {
        return Err(CliError::Usage(format!(
            "--spis: none of the servers ({}) has any of them",
            servers.iter().map(|k| k.name()).collect::<Vec<_>>().join(", ")
        )));
    }
    Ok(plan)
}

/// `--spis LIST`: SPI names that some lab server has.
fn spi_list(list: &str) -> Result<Vec<String>, CliError> {
    let mut known: Vec<&str> = Vec::new();
    for k in benchlab_lab::ServerKind::ALL {
        for s in k.spis() {
            if !known.contains(s) {
                known.push(s);
            }
        }
    }
    let mut out: Vec<String> = Vec::new();
    for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        if !known.contains(&name) {
            return Err(CliError::Usage(format!(
                "--spis: unknown SPI {name:?} (expected some of: {})",
                known.join(", ")
            )));
        }
        if !out.iter().any(|o| o == name) {
            out.push(name.to_owned());
        }
    }
    if out.is_empty() {
        return Err(CliError::Usage(format!(
            "--spis {list:?}: expected SPI names, comma-separated ({})",
            known.join(", ")
        )));
    }
    Ok(out)
}

fn sides(
    name: &str,
    server: &str,
    servers: &[benchlab_lab::ServerKind],
    plan: &[(benchlab_lab::ServerKind, Vec<&'static str>)],
    online: usize,
) -> Vec<Side> {
    match name {
        "keepalive" => vec![
            Side::new(
                "http10",
                server,
                static_suite(name, "http10", "http10_percent = 100\nhttp10_keepalive = false\n"),
            ),
            Side::new(
                "http11",
                server,
                static_suite(name, "http11", "persistent_percent = 100\n"),
            ),
        ],
        "cpus" => {
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
                    server_cpus: Some("0"),
                    client_cpus: one_client,
                    ..Side::new("1cpu", server, static_suite(name, "1cpu", ""))
                },
                Side {
                    server_cpus: (online >= 2).then_some("0,1"),
                    client_cpus: two_client,
                    ..Side::new("2cpus", server, static_suite(name, "2cpus", ""))
                },
            ]
        }
        "servers" => servers
            .iter()
            .map(|k| Side::new(k.name(), k.name(), mindcraft_suite(k.name(), fastest_spi(*k))))
            .collect(),
        "spi" => plan
            .iter()
            .map(|(k, spis)| Side::new(k.name(), k.name(), spi_suite(*k, spis)))
            .collect(),
        _ => vec![
            Side {
                cold_cache: true,
                ..Side::new("cold", server, ct10k_suite("cold"))
            },
            Side {
                warm: true,
                ..Side::new("warm", server, ct10k_suite("warm"))
            },
        ],
    }
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

/// Reads every file under `root` once, so the run finds them in the page
/// cache (cold-cache's warm side).
fn warm(root: &Path) -> Result<u64, CliError> {
    let mut stack = vec![root.to_owned()];
    let mut files = 0;
    while let Some(d) = stack.pop() {
        let entries =
            std::fs::read_dir(&d).map_err(|e| CliError::CannotRun(format!("reproduce: read {}: {e}", d.display())))?;
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(mut f) = std::fs::File::open(&p) {
                std::io::copy(&mut f, &mut std::io::sink())
                    .map_err(|e| CliError::CannotRun(format!("reproduce: read {}: {e}", p.display())))?;
                files += 1;
            }
        }
    }
    Ok(files)
}

/// `--servers LIST`, every lab server by default.
fn server_list(list: Option<&str>) -> Result<Vec<benchlab_lab::ServerKind>, CliError> {
    let Some(list) = list else {
        return Ok(benchlab_lab::ServerKind::ALL.to_vec());
    };
    let mut out = Vec::new();
    for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let k = benchlab_lab::ServerKind::parse(name).map_err(|e| CliError::Usage(format!("--servers: {e}")))?;
        if !out.contains(&k) {
            out.push(k);
        }
    }
    if out.is_empty() {
        return Err(CliError::Usage(format!(
            "--servers {list:?}: expected server names, comma-separated ({})",
            benchlab_lab::names()
        )));
    }
    Ok(out)
}

/// The peak requests/s of each phase of a side's results, in order.
fn phase_peaks(results: &Results) -> Vec<(String, f64)> {
    results
        .phases
        .iter()
        .map(|p| {
            let peak = p
                .mixes
                .iter()
                .filter_map(|&m| results.mixes.get(m.wrapping_sub(1)))
                .map(|m| m.figures.requests_per_sec)
                .fold(0.0, f64::max);
            (p.name.clone(), peak)
        })
        .collect()
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
    let Some(experiment) = EXPERIMENTS.iter().find(|e| e.name == name) else {
        let names: Vec<&str> = EXPERIMENTS.iter().map(|e| e.name).collect();
        return Err(CliError::Usage(format!(
            "unknown experiment {name:?} (expected one of: {}; see `benchlab reproduce --list`)",
            names.join(", ")
        )));
    };
    let server = benchlab_lab::ServerKind::parse(&a.server).map_err(|e| CliError::Usage(format!("--server: {e}")))?;
    let multi = matches!(name, "servers" | "spi");
    if a.servers.is_some() && !multi {
        return Err(CliError::Usage(format!(
            "--servers is for the servers and spi experiments; {name} runs one server (--server)"
        )));
    }
    if a.spis.is_some() && name != "spi" {
        return Err(CliError::Usage(format!(
            "--spis is for the spi experiment; {name} picks its SPI itself"
        )));
    }
    let servers = server_list(a.servers.as_deref())?;
    let plan = if name == "spi" {
        let wanted = a.spis.as_deref().map(spi_list).transpose()?;
        spi_plan(&servers, wanted.as_deref())?
    } else {
        Vec::new()
    };
    let servers: Vec<benchlab_lab::ServerKind> = if name == "spi" {
        plan.iter().map(|(k, _)| *k).collect()
    } else {
        servers
    };
    // Every side starts its server with `lab up`, which refuses one that is
    // already up: say so now, before minutes of file set generation.
    let wanted: Vec<benchlab_lab::ServerKind> = if multi { servers.clone() } else { vec![server] };
    let up: Vec<String> = benchlab_lab::status(&benchlab_lab::default_base())
        .into_iter()
        .filter(|(lab, _)| wanted.contains(&lab.server))
        .map(|(lab, _)| format!("{} ({})", lab.server.name(), lab.url))
        .collect();
    if !up.is_empty() {
        return Err(CliError::CannotRun(format!(
            "reproduce {name}: already up in the lab: {}; each side starts its server with its own \
             configuration: stop it first (`benchlab lab down NAME`)",
            up.join(", ")
        )));
    }
    let out = a
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("results/reproduce-{name}-{}", crate::output::stamp())));
    std::fs::create_dir_all(&out)
        .map_err(|e| CliError::CannotRun(format!("reproduce: create {}: {e}", out.display())))?;
    let kind = experiment.fileset[0];
    // specweb99's dir keeps the name earlier versions gave it.
    let fileset = if kind == "specweb99" {
        out.join("fileset")
    } else {
        out.join(format!("fileset-{kind}"))
    };
    if !fileset.join("manifest").exists() {
        let mut args = vec!["fileset", "generate"];
        args.extend(experiment.fileset);
        args.extend(["--out", text(&fileset)]);
        benchlab("fileset generate", &args)?;
    }
    let online = std::thread::available_parallelism().map_or(1, |n| n.get());
    let scale = a.time_scale.to_string();
    let fileset_arg = format!("{kind}={}", fileset.display());
    let mut dirs = Vec::new();
    let mut peaks: Vec<(String, Vec<(String, f64)>)> = Vec::new();
    for side in sides(name, &a.server, &servers, &plan, online) {
        let suite_path = out.join(format!("{}.toml", side.label));
        std::fs::write(&suite_path, &side.suite)
            .map_err(|e| CliError::CannotRun(format!("reproduce: write {}: {e}", suite_path.display())))?;
        let mut up = vec!["lab", "up", side.server.as_str(), "--root", text(&fileset)];
        if let Some(c) = side.server_cpus {
            up.extend(["--cpus", c]);
        }
        benchlab("lab up", &up)?;
        let down = LabDown(side.server.clone());
        let dir = out.join(&side.label);
        let mut run = vec![
            "run",
            text(&suite_path),
            "--lab",
            side.server.as_str(),
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
        if side.cold_cache {
            run.push("--cold-cache");
        }
        if side.warm {
            let files = warm(&fileset)?;
            eprintln!("reproduce: warm: read all {files} files of {}", fileset.display());
        }
        benchlab(&format!("run ({})", side.label), &run)?;
        drop(down);
        let results: Results =
            benchlab_results::load::load(&dir.join("results.json")).map_err(|e| CliError::of("reproduce: ", e))?;
        peaks.push((side.label.clone(), phase_peaks(&results)));
        dirs.push(dir);
    }
    let report = out.join("report");
    let mut args = vec!["report"];
    args.extend(dirs.iter().map(|d| text(d)));
    args.extend(["--out", text(&report)]);
    benchlab("report", &args)?;
    let on = if multi {
        servers.iter().map(|k| k.name()).collect::<Vec<_>>().join(", ")
    } else {
        a.server.clone()
    };
    print!("experiment {name} on {on}\n{}", summary(name, &peaks));
    println!("report: {}", report.join("report.html").display());
    Ok(Outcome::Completed)
}

/// The lines after the heading: each side's peak and the comparison.
fn summary(name: &str, peaks: &[(String, Vec<(String, f64)>)]) -> String {
    let rate = benchlab_format::rate;
    let side_peak = |phases: &[(String, f64)]| phases.iter().map(|p| p.1).fold(0.0, f64::max);
    let mut s = String::new();
    if name == "spi" {
        // Per server: each phase's peak, an SPI's as a share of static.
        for (label, phases) in peaks {
            let static_rate = phases.iter().find(|p| p.0 == "static").map_or(0.0, |p| p.1);
            let cells: Vec<String> = phases
                .iter()
                .map(|(phase, r)| {
                    if phase == "static" || static_rate <= 0.0 {
                        format!("{phase} {}", rate(*r))
                    } else {
                        format!("{phase} {} ({:.1} %)", rate(*r), r / static_rate * 100.0)
                    }
                })
                .collect();
            s.push_str(&format!("  {label:<15} {}\n", cells.join(", ")));
        }
        s.push_str("  (peak requests/s per phase; an SPI's % of its server's static rate is its efficiency)\n");
        return s;
    }
    for (label, phases) in peaks {
        s.push_str(&format!("  {label:<15} peak {} requests/s\n", rate(side_peak(phases))));
    }
    match peaks {
        [(a_label, a), (b_label, b)] if side_peak(a) > 0.0 => {
            s.push_str(&format!(
                "  {b_label} ÷ {a_label}: {:.2}×\n",
                side_peak(b) / side_peak(a)
            ));
        }
        [(first, a), rest @ ..] if side_peak(a) > 0.0 && !rest.is_empty() => {
            for (label, b) in rest {
                s.push_str(&format!("  {label} ÷ {first}: {:.2}×\n", side_peak(b) / side_peak(a)));
            }
        }
        _ => {}
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `reproduce --help` names every experiment, however many there are.
    #[test]
    fn the_help_names_every_experiment() {
        let cmd = ReproduceArgs::augment_args(clap::Command::new("reproduce"));
        let name = cmd.get_arguments().find(|a| a.get_id() == "name").unwrap();
        let help = name.get_help().unwrap().to_string();
        for e in EXPERIMENTS {
            assert!(help.contains(e.name), "{} missing from {help:?}", e.name);
        }
    }
}
