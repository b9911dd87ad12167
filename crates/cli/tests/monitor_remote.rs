//! A server monitor on the server's host (`benchlab monitor --controller`)
//! sends its samples to the controller over the lab's mutual TLS; the
//! run's mixes carry that host's seconds and judge the run by them.

mod common;

use common::servers::{Nginx, NginxOpts};
use common::{benchlab_bin, free_port, run_benchlab, s};
use serde_json::Value;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};

/// A child killed (and reaped) when dropped.
struct Proc(Option<Child>);

impl Proc {
    fn spawn(args: &[&str]) -> Proc {
        Proc(Some(
            Command::new(benchlab_bin())
                .args(args)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn benchlab"),
        ))
    }
    fn wait_output(mut self) -> Output {
        self.0.take().expect("child").wait_with_output().expect("wait")
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn text(o: &Output) -> String {
    format!(
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn suite(dir: &Path, target: &str) -> String {
    let t = format!(
        "name = \"remote-monitor\"\ntarget = \"{target}\"\nseed = 5\n\n[defaults]\nlength = \"3s\"\n\
         ramp_up = \"0s\"\nramp_down = \"0s\"\nthreads_per_client = 2\npersistent_percent = 100\n\
         timeout = \"5s\"\n\n[workloads.one]\n[[workloads.one.class]]\nname = \"page\"\npercent = 100\n\
         [[workloads.one.class.url]]\npath = \"/4k.html\"\nsize = 4096\n\n[[mix]]\nclients = 1\n"
    );
    let p = dir.join("suite.toml");
    std::fs::write(&p, t).expect("write suite");
    p.display().to_string()
}

/// Runs the one-mix suite against a fresh nginx with a controller that
/// waits for one remote monitor (watching nginx's PID) and, with
/// `agent`, one agent; checks every process ended cleanly and returns
/// results.json's first mix.
fn run_with_remote_monitor(agent: bool) -> Value {
    let nginx = Nginx::start(NginxOpts::default());
    let work = tempfile::tempdir().expect("tempdir");
    let certs = work.path().join("certs");
    let out = run_benchlab(&["lab", "certs", "--out", s(&certs), "--agents", "1"]);
    common::assert_success("lab certs", &out);
    let suite = suite(work.path(), &nginx.url(""));
    let results = work.path().join("results");
    let listen = format!("127.0.0.1:{}", free_port());
    let pem = |n: &str| certs.join(n).display().to_string();
    let mut run = vec![
        "run",
        &suite,
        "--monitors",
        "1",
        "--listen",
        &listen,
        "--tls-dir",
        s(&certs),
        "--out",
        s(&results),
    ];
    if agent {
        run.extend(["--agents", "1"]);
    }
    let controller = Proc::spawn(&run);
    let pid = nginx.pid().to_string();
    let (monitor_pem, monitor_key, ca) = (pem("monitor.pem"), pem("monitor.key"), pem("ca.pem"));
    let monitor = Proc::spawn(&[
        "monitor",
        "--controller",
        &listen,
        "--cert",
        &monitor_pem,
        "--key",
        &monitor_key,
        "--ca",
        &ca,
        "--pid",
        &pid,
    ]);
    let (agent_pem, agent_key) = (pem("agent-0.pem"), pem("agent-0.key"));
    let agent = agent.then(|| {
        Proc::spawn(&[
            "agent",
            "--controller",
            &listen,
            "--index",
            "0",
            "--cert",
            &agent_pem,
            "--key",
            &agent_key,
            "--ca",
            &ca,
        ])
    });
    let out = controller.wait_output();
    assert!(out.status.success(), "controller:\n{}", text(&out));
    if let Some(agent) = agent {
        let o = agent.wait_output();
        assert!(o.status.success(), "agent:\n{}", text(&o));
    }
    let o = monitor.wait_output();
    assert!(o.status.success(), "monitor:\n{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("the controller ended the session"),
        "{}",
        text(&o)
    );
    let r: Value =
        serde_json::from_str(&std::fs::read_to_string(results.join("results.json")).expect("results")).expect("JSON");
    r["mixes"][0].clone()
}

#[test]
fn a_remote_monitor_feeds_the_mixes_resources() {
    let mix = run_with_remote_monitor(true);
    let host = &mix["resources"]["hosts"][0];
    assert!(
        host["source"].as_str().is_some_and(|s| s.starts_with("remote monitor")),
        "{host}"
    );
    let seconds = host["seconds"].as_array().expect("seconds");
    assert!(
        (2..=4).contains(&seconds.len()),
        "a 3 s window: {} seconds",
        seconds.len()
    );
    // The watched nginx worked during the window, as its host's monitor saw.
    let avg = &host["average"];
    let cpu = avg["process"]["cpu_user"].as_f64().expect("user") + avg["process"]["cpu_system"].as_f64().expect("sys");
    assert!(cpu > 0.0, "{avg}");
    assert!(mix["resources"]["verdict"]["limit"].is_string());
}

/// `--monitors` without agents: the clients run in the controller's
/// process and the remote monitor still feeds every mix.
#[test]
fn a_remote_monitor_without_agents() {
    let mix = run_with_remote_monitor(false);
    let host = &mix["resources"]["hosts"][0];
    assert!(
        host["source"].as_str().is_some_and(|s| s.starts_with("remote monitor")),
        "{host}"
    );
    assert!(!host["seconds"].as_array().expect("seconds").is_empty());
}
