//! Every flag of `benchlab run` against a file suite either works or is
//! refused by name before anything runs — never silently ignored (a user
//! who asked for `--agents 2` and got a local run was told nothing).
//!
//! The flags are walked from clap's own list (`run --help`), so a flag added
//! to `run` later is covered without touching this file.

mod common;

use common::run_benchlab;
use std::path::Path;

/// The flags a file suite takes today (crates/cli/src/run_cmd.rs,
/// `FILE_SUITE_FLAGS`); the others must be refused.
const APPLIES: &[&str] = &[
    "target",
    "out",
    "time-scale",
    "phase",
    "phase-target",
    "repeat",
    "smb-password-file",
    "threshold",
    "junit",
    // The suite loop's own (tests/file_suite_lab.rs).
    "monitor-local",
    "monitor-pid",
    "monitor-process",
    "node-exporter",
    "monitors",
    "listen",
    "tls-dir",
    "web",
    "web-allow-remote",
    "web-linger",
    "client-cpus",
    "allow-shared-cpus",
    "cold-cache",
    "find-peak",
    "peak-tolerance",
    "peak-max-p99",
    "peak-max-error-rate",
    "peak-max-threads",
    "peak-bisect-steps",
    "peak-start-threads",
    "agents",
    "clients-per-agent",
    "agent-timeout",
    "abort-on-lost-agent",
    // The history records any run (tests/history.rs).
    "record",
    "db",
    // Live metrics: operations labelled kind="file" (tests/metrics.rs).
    "metrics-listen",
    "metrics-allow-remote",
    "prometheus-remote-write",
    "otlp",
];

const LOADFILE: &str = "Mkdir \"\\clients\" NT_STATUS_OK\n\
NTCreateX \"\\clients\\client1\\a.txt\" 0x40 0x2 1 NT_STATUS_OK\n\
WriteX 1 0 100 100 NT_STATUS_OK\n\
Close 1 NT_STATUS_OK\n\
Unlink \"\\clients\\client1\\a.txt\" 0x6 NT_STATUS_OK\n";

/// A one-mix loadfile suite of a second against `dir/root`.
fn suite(dir: &Path) -> std::path::PathBuf {
    let root = dir.join("root");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(dir.join("load.txt"), LOADFILE).unwrap();
    let s = format!(
        "name = \"files\"\ntarget = \"file://{}\"\n[workloads.lf]\nloadfile = \"load.txt\"\nloops = 2\n\
         [defaults]\nramp_up = \"0s\"\nramp_down = \"0s\"\nlength = \"2s\"\n[[mix]]\nclients = 1\n",
        root.display()
    );
    let p = dir.join("suite.toml");
    std::fs::write(&p, s).unwrap();
    p
}

/// `run --help`'s flags: (long name, value name when it takes one).
fn run_flags() -> Vec<(String, Option<String>)> {
    let o = run_benchlab(&["run", "--help"]);
    assert!(o.status.success());
    let help = String::from_utf8_lossy(&o.stdout).into_owned();
    let mut flags = Vec::new();
    for line in help.lines() {
        // Flags start at clap's option indent; deeper lines are the
        // wrapped descriptions, which may start with a flag's name too.
        let t = line.trim_start();
        if line.len() - t.len() > 6 {
            continue;
        }
        let t = match t.strip_prefix('-') {
            Some(rest) if !rest.starts_with('-') => match rest.split_once(", ") {
                Some((_, long)) => long,
                None => continue,
            },
            _ => t,
        };
        let Some(rest) = t.strip_prefix("--") else { continue };
        let name: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
            .collect();
        let after = &rest[name.len()..];
        let value = after
            .trim_start()
            .strip_prefix('<')
            .and_then(|v| v.split_once('>'))
            .map(|(v, _)| v.to_string());
        if name == "help" || flags.iter().any(|(n, _)| *n == name) {
            continue;
        }
        flags.push((name, value));
    }
    assert!(
        flags.len() > 20,
        "expected run's many flags, parsed {flags:?} from\n{help}"
    );
    flags
}

/// A value clap accepts for a flag of `run`, by its value name.
fn value_for(flag: &str, value: &str, dir: &Path) -> String {
    match (flag, value) {
        ("node-exporter", _) => "http://127.0.0.1:9/metrics".into(),
        ("monitor-process", _) => "nginx".into(),
        ("lab", _) => "nginx".into(),
        ("fileset", _) => format!("x={}", dir.display()),
        (_, "DUR") => "1s".into(),
        (_, "PCT") => "5".into(),
        (_, "ADDR") | (_, "ADDR:PORT") => "127.0.0.1:9".into(),
        (_, "DIR") => dir.join("some-dir").display().to_string(),
        (_, "FILE") => dir.join("load.txt").display().to_string(),
        (_, "LIST") => "0".into(),
        _ => "1".into(),
    }
}

/// The flags clap says are missing ("the following required arguments
/// were not provided: --listen <ADDR:PORT> …").
fn missing_required(stderr: &str) -> Vec<String> {
    let Some((_, after)) = stderr.split_once("were not provided:") else {
        return Vec::new();
    };
    after
        .lines()
        .map(str::trim)
        .skip_while(|l| l.is_empty())
        .take_while(|l| l.starts_with("--"))
        .map(|l| {
            l.split_whitespace()
                .next()
                .unwrap_or_default()
                .trim_start_matches("--")
                .to_string()
        })
        .collect()
}

#[test]
fn every_run_flag_works_for_a_file_suite_or_is_refused_by_name() {
    let d = tempfile::tempdir().unwrap();
    let s = suite(d.path());
    let flags = run_flags();
    let value_of = |name: &str| flags.iter().find(|(n, _)| n == name).and_then(|(_, v)| v.clone());
    let mut refused = 0;
    for (flag, value) in &flags {
        if APPLIES.contains(&flag.as_str()) {
            continue;
        }
        let out = d.path().join(format!("out-{flag}"));
        let mut given = vec![flag.clone()];
        let mut tries = 0;
        let o = loop {
            let mut args: Vec<String> = vec![
                "run".into(),
                s.display().to_string(),
                "--out".into(),
                out.display().to_string(),
            ];
            for g in &given {
                args.push(format!("--{g}"));
                if let Some(v) = if g == flag { value.clone() } else { value_of(g) } {
                    args.push(value_for(g, &v, d.path()));
                }
            }
            let argv: Vec<&str> = args.iter().map(String::as_str).collect();
            let o = run_benchlab(&argv);
            let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
            let more = missing_required(&stderr);
            tries += 1;
            if more.is_empty() || tries > 4 {
                break (o, args);
            }
            given.extend(more);
        };
        let (o, args) = o;
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(
            o.status.code(),
            Some(2),
            "{args:?}: expected exit 2 (refused), got {}:\n{stderr}",
            o.status
        );
        assert!(
            stderr.contains(&format!("--{flag}")) && stderr.contains("not apply to suite `files`"),
            "{args:?}: the refusal must name --{flag}:\n{stderr}"
        );
        assert!(!stderr.contains("panicked"), "{stderr}");
        assert!(!out.exists(), "{args:?}: refused, yet a results directory was written");
        refused += 1;
    }
    assert!(refused >= 6, "only {refused} flags walked");
}

#[test]
fn the_flags_that_apply_to_a_file_suite_run_it() {
    let d = tempfile::tempdir().unwrap();
    let s = suite(d.path());
    let root = format!("file://{}", d.path().join("root").display());
    let out = d.path().join("out");
    let o = run_benchlab(&[
        "run",
        s.to_str().unwrap(),
        "--target",
        &root,
        "--out",
        out.to_str().unwrap(),
        "--time-scale",
        "1",
        "--phase",
        "lf",
        "--phase-target",
        &format!("lf={root}"),
        "--repeat",
        "1",
        "--threshold",
        "errors<1000",
        "--threshold",
        "phase:lf:peak_mbit>=0",
    ]);
    assert!(
        o.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    // 5 operations a pass, 2 passes, 1 user: each a request.
    assert_eq!(r["mixes"][0]["requests"], 10, "{}", r["mixes"][0]);
    // Thresholds judge a file suite's figures too.
    let t = &r["thresholds"];
    assert_eq!(t[0]["observed"].as_f64(), r["mixes"][0]["errors_total"].as_f64(), "{t}");
    assert_eq!(t[0]["status"], "pass", "{t}");
    assert_eq!(t[1]["observed"].as_f64(), r["mixes"][0]["mbit_per_sec"].as_f64(), "{t}");
    assert_eq!(t[1]["scope"], "phase:lf", "{t}");
}

#[test]
fn a_bad_target_in_a_later_mix_is_refused_before_the_first_mix_runs() {
    let d = tempfile::tempdir().unwrap();
    let s = suite(d.path());
    let text = std::fs::read_to_string(&s).unwrap()
        + "[[mix]]\nclients = 1\ntarget = \"smb://127.0.0.1:9/share?encrypt=bogus\"\n";
    std::fs::write(&s, text).unwrap();
    let out = d.path().join("out");
    let o = run_benchlab(&["run", s.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("mix 2") && stderr.contains("encrypt=bogus"), "{stderr}");
    assert!(!out.join("results.json").exists(), "mix 1 ran before the refusal");
}
