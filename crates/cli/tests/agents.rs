//! Many test systems on one machine: a controller (`benchlab run --agents
//! N`) and `benchlab agent` processes dialling in over mutual TLS, against
//! a real nginx. Each client loads from its own loopback address
//! (127.0.0.k), so nginx's log tells the agents apart.

mod common;

use common::servers::{Nginx, NginxOpts};
use common::{benchlab_bin, free_port, run_benchlab, s};
use serde_json::Value;
use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A child killed (and reaped) when dropped, so a failing test leaves no
/// agent or controller behind.
struct Proc(Option<Child>);

impl Proc {
    fn wait_output(mut self) -> Output {
        self.0.take().expect("child").wait_with_output().expect("wait")
    }
    fn pid(&self) -> i32 {
        self.0.as_ref().expect("child").id() as i32
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

fn spawn(args: &[&str], env: &[(&str, &str)]) -> Proc {
    let mut c = Command::new(benchlab_bin());
    c.args(args).stdout(Stdio::piped()).stderr(Stdio::piped());
    for (k, v) in env {
        c.env(k, v);
    }
    Proc(Some(c.spawn().expect("spawn benchlab")))
}

fn certs(dir: &Path, agents: u32) {
    let out = run_benchlab(&["lab", "certs", "--out", s(dir), "--agents", &agents.to_string()]);
    common::assert_success("lab certs", &out);
}

/// `benchlab agent` number `i` of the lab in `certs`, for the controller on
/// `port`.
fn agent(certs: &Path, port: u16, i: u32, extra: &[&str]) -> Proc {
    let cert = certs.join(format!("agent-{i}.pem"));
    let key = certs.join(format!("agent-{i}.key"));
    let controller = format!("127.0.0.1:{port}");
    let index = i.to_string();
    let mut args = vec![
        "agent",
        "--controller",
        &controller,
        "--cert",
        s(&cert),
        "--key",
        s(&key),
        "--ca",
    ];
    let ca = certs.join("ca.pem");
    args.push(s(&ca));
    // Agent 0 takes its index from the environment, as on Kubernetes.
    let env: Vec<(&str, &str)> = if i == 0 {
        vec![("JOB_COMPLETION_INDEX", "0")]
    } else {
        args.extend(["--index", &index]);
        Vec::new()
    };
    args.extend_from_slice(extra);
    spawn(&args, &env)
}

fn suite(dir: &Path, target: &str, length: &str, mixes: &[u32]) -> PathBuf {
    let mut t = format!(
        "name = \"agents\"\ntarget = \"{target}\"\nseed = 5\n\n[defaults]\nlength = \"{length}\"\n\
         ramp_up = \"0s\"\nramp_down = \"0s\"\nthreads_per_client = 2\npersistent_percent = 100\ntimeout = \"5s\"\n\n\
         [workloads.one]\n[[workloads.one.class]]\nname = \"page\"\npercent = 100\n\
         [[workloads.one.class.url]]\npath = \"/4k.html\"\nsize = 4096\n"
    );
    for c in mixes {
        t.push_str(&format!("\n[[mix]]\nclients = {c}\n"));
    }
    let p = dir.join("suite.toml");
    std::fs::write(&p, t).expect("write suite");
    p
}

fn controller(suite: &Path, port: u16, certs: &Path, out: &Path, agents: u32, extra: &[&str]) -> Proc {
    let listen = format!("127.0.0.1:{port}");
    let n = agents.to_string();
    let mut args = vec![
        "run",
        s(suite),
        "--agents",
        &n,
        "--listen",
        &listen,
        "--tls-dir",
        s(certs),
        "--out",
        s(out),
    ];
    args.extend_from_slice(extra);
    spawn(&args, &[])
}

fn u(v: &Value, p: &str) -> u64 {
    v.pointer(p)
        .and_then(Value::as_u64)
        .unwrap_or_else(|| panic!("no integer at {p} in {v}"))
}

fn read_json(p: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(p).expect("read results.json")).expect("JSON")
}

fn text(o: &Output) -> String {
    format!(
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn assert_schema_valid(r: &Value) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/results.schema.json");
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(&path).expect("schema")).expect("JSON");
    let v = jsonschema::validator_for(&schema).expect("schema");
    let errors: Vec<String> = v
        .iter_errors(r)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "results.json vs the schema:\n{}", errors.join("\n"));
}

/// Three agents run a two-mix suite; the controller's merged counts are
/// the sum of the agents' and what nginx logged from their addresses.
#[test]
fn three_agents_run_a_suite_counted_against_nginx() {
    let nginx = Nginx::start(NginxOpts::default());
    let work = tempfile::tempdir().expect("tempdir");
    let lab = work.path().join("certs");
    certs(&lab, 3);
    for key in ["ca.key", "controller.key", "agent-2.key", "monitor.key"] {
        let mode = std::fs::metadata(lab.join(key)).expect(key).permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{key}");
    }
    let suite = suite(work.path(), &nginx.url(""), "2s", &[2, 3]);
    let out_dir = work.path().join("results");
    let port = free_port();
    let ctl = controller(&suite, port, &lab, &out_dir, 3, &[]);
    let agents: Vec<Proc> = (0..3).map(|i| agent(&lab, port, i, &[])).collect();
    let out = ctl.wait_output();
    assert!(out.status.success(), "controller failed:\n{}", text(&out));
    for (i, a) in agents.into_iter().enumerate() {
        let o = a.wait_output();
        assert!(o.status.success(), "agent {i}:\n{}", text(&o));
        assert!(
            String::from_utf8_lossy(&o.stderr).contains("the controller ended the session"),
            "{}",
            text(&o)
        );
    }
    let r = read_json(&out_dir.join("results.json"));
    assert_schema_valid(&r);
    assert_eq!(r["complete"], true);
    // Each agent: its index, its client, a clock check at registration and
    // before each mix.
    let agents = r["environment"]["agents"].as_array().expect("agents");
    assert_eq!(agents.len(), 3);
    for (i, a) in agents.iter().enumerate() {
        assert_eq!(u(a, "/index"), i as u64);
        assert_eq!(a["clients"], serde_json::json!([i + 1]));
        let clock: Vec<&str> = a["clock"]
            .as_array()
            .expect("clock")
            .iter()
            .map(|c| c["at"].as_str().unwrap_or(""))
            .collect();
        assert_eq!(clock, ["registration", "mix 1", "mix 2"]);
        assert!(a.get("lost").is_none(), "{a}");
    }
    let mut counted = 0;
    let mut by_address: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for (m, clients) in r["mixes"].as_array().expect("mixes").iter().zip([2u64, 3]) {
        let rows = m["client_data"].as_array().expect("client_data");
        assert_eq!(rows.len() as u64, clients);
        // The merged mix is exactly the sum of its clients (agents).
        for field in [
            "/requests",
            "/errors_total",
            "/bytes",
            "/in_flight",
            "/connections_opened",
        ] {
            let sum: u64 = rows.iter().map(|c| u(c, field)).sum();
            assert_eq!(u(m, field), sum, "mix {}: {field}", m["mix"]);
        }
        for (k, c) in rows.iter().enumerate() {
            assert_eq!(c["address"], format!("127.0.0.{}", k + 1));
            assert_eq!(c["taken_out"], false);
            assert!(u(c, "/requests") > 0);
            let e = by_address.entry(format!("127.0.0.{}", k + 1)).or_default();
            e.1 += u(c, "/in_flight");
        }
        assert_eq!(u(m, "/errors_total"), 0);
        // Every completion of the mix, second by second (ramps included).
        let seconds: u64 = m["per_second"]
            .as_array()
            .expect("per_second")
            .iter()
            .map(|s| u(s, "/requests") + u(s, "/errors"))
            .sum();
        assert!(seconds >= u(m, "/requests"));
        counted += seconds;
        by_address.entry("all".into()).or_default().1 += u(m, "/in_flight");
    }
    // nginx logged every completion, plus at most the requests cut off when
    // each mix stopped, plus the controller's preflight (from 127.0.0.1).
    let in_flight = by_address["all"].1;
    let lines = nginx.access_log_lines_at_least(counted as usize);
    let preflight = 1;
    let logged = lines.len() as u64 - preflight;
    assert!(
        logged >= counted && logged <= counted + in_flight,
        "nginx logged {logged}, the agents counted {counted} (+ {in_flight} in flight)"
    );
    let mut addrs: Vec<&str> = lines.iter().map(|l| l.remote_addr.as_str()).collect();
    addrs.sort();
    addrs.dedup();
    assert_eq!(addrs, ["127.0.0.1", "127.0.0.2", "127.0.0.3"]);
    assert!(lines.iter().all(|l| l.status == 200));
}

/// Waits until nginx has logged a request from `addr`.
fn wait_for_load_from(nginx: &Nginx, addr: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !nginx.access_log_lines().iter().any(|l| l.remote_addr == addr) {
        assert!(Instant::now() < deadline, "no request from {addr}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// An agent killed mid-mix: the run completes, its client keeps its number
/// and is marked lost, the other client's figures are intact.
#[test]
fn an_agent_killed_mid_mix_is_dropped_and_the_run_completes() {
    let nginx = Nginx::start(NginxOpts::default());
    let work = tempfile::tempdir().expect("tempdir");
    let lab = work.path().join("certs");
    certs(&lab, 2);
    let suite = suite(work.path(), &nginx.url(""), "6s", &[2]);
    let out_dir = work.path().join("results");
    let port = free_port();
    let ctl = controller(&suite, port, &lab, &out_dir, 2, &[]);
    let a0 = agent(&lab, port, 0, &[]);
    let a1 = agent(&lab, port, 1, &[]);
    wait_for_load_from(&nginx, "127.0.0.2");
    unsafe { libc::kill(a1.pid(), libc::SIGKILL) };
    let out = ctl.wait_output();
    assert!(out.status.success(), "controller:\n{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("agent 1 (") && stderr.contains("lost"), "{stderr}");
    assert!(a0.wait_output().status.success());
    let r = read_json(&out_dir.join("results.json"));
    assert_schema_valid(&r);
    let m = &r["mixes"][0];
    let rows = m["client_data"].as_array().expect("client_data");
    assert_eq!(rows.len(), 2);
    assert_eq!(u(&rows[1], "/client"), 2);
    assert_eq!(rows[1]["taken_out"], true);
    assert!(
        rows[1]["lost"].as_str().is_some_and(|w| w.contains("agent 1")),
        "{}",
        rows[1]
    );
    assert!(rows[0].get("lost").is_none());
    assert!(u(&rows[0], "/requests") > 0);
    // The lost client's figures are apart: the mix is client 1's alone.
    assert_eq!(u(m, "/requests"), u(&rows[0], "/requests"));
    assert_eq!(u(m, "/clients_participating"), 1);
    assert!(
        r["environment"]["agents"][1]["lost"].is_string(),
        "{}",
        r["environment"]["agents"]
    );
}

/// A controller killed mid-mix: the agent stops its load by itself and
/// exits non-zero.
#[test]
fn an_agent_that_loses_its_controller_stops_its_load() {
    let nginx = Nginx::start(NginxOpts::default());
    let work = tempfile::tempdir().expect("tempdir");
    let lab = work.path().join("certs");
    certs(&lab, 1);
    let suite = suite(work.path(), &nginx.url(""), "30s", &[1]);
    let port = free_port();
    let ctl = controller(&suite, port, &lab, &work.path().join("results"), 1, &[]);
    let a0 = agent(&lab, port, 0, &[]);
    wait_for_load_from(&nginx, "127.0.0.1");
    std::thread::sleep(Duration::from_millis(300));
    unsafe { libc::kill(ctl.pid(), libc::SIGKILL) };
    let o = a0.wait_output();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("lost the controller"),
        "{}",
        text(&o)
    );
    // Its load stopped with it: nothing more reaches nginx.
    let before = nginx.access_log_lines().len();
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(nginx.access_log_lines().len(), before);
    drop(ctl);
}

/// An agent of another protocol version is refused, both sides naming
/// both versions; the controller then says which agent is missing.
#[test]
fn a_mismatched_agent_is_refused_and_named_missing() {
    let work = tempfile::tempdir().expect("tempdir");
    let lab = work.path().join("certs");
    certs(&lab, 2);
    let suite = suite(work.path(), "http://127.0.0.1:9", "1s", &[1]);
    let port = free_port();
    let ctl = controller(
        &suite,
        port,
        &lab,
        &work.path().join("results"),
        2,
        &["--agent-timeout", "3s"],
    );
    let a0 = agent(&lab, port, 0, &["--protocol-version", "999"]);
    let o = a0.wait_output();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let agent_says = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(
        agent_says.contains("speaks control protocol version 999, this controller speaks version 1"),
        "{agent_says}"
    );
    let out = ctl.wait_output();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("speaks control protocol version 999, this controller speaks version 1"),
        "{stderr}"
    );
    assert!(
        stderr.contains("0 of 2 agents registered; missing agent indexes: 0, 1"),
        "{stderr}"
    );
}

/// An agent lost in mix 1 that comes back rejoins as the same client at
/// mix 2: once, with a new clock check.
#[test]
fn a_restarted_agent_rejoins_as_the_same_client_at_the_next_mix() {
    let nginx = Nginx::start(NginxOpts::default());
    let work = tempfile::tempdir().expect("tempdir");
    let lab = work.path().join("certs");
    certs(&lab, 2);
    let path = suite(work.path(), &nginx.url(""), "5s", &[2, 2]);
    let out_dir = work.path().join("results");
    let port = free_port();
    let ctl = controller(&path, port, &lab, &out_dir, 2, &[]);
    let a0 = agent(&lab, port, 0, &[]);
    let a1 = agent(&lab, port, 1, &[]);
    wait_for_load_from(&nginx, "127.0.0.2");
    unsafe { libc::kill(a1.pid(), libc::SIGKILL) };
    drop(a1);
    // The controller sees the closed connection at once; the new process
    // registers well before mix 1's 5 s are over.
    std::thread::sleep(Duration::from_millis(500));
    let again = agent(&lab, port, 1, &[]);
    let out = ctl.wait_output();
    assert!(out.status.success(), "controller:\n{}", text(&out));
    assert!(a0.wait_output().status.success());
    assert!(again.wait_output().status.success());
    let r = read_json(&out_dir.join("results.json"));
    let m1 = &r["mixes"][0]["client_data"][1];
    let m2 = &r["mixes"][1]["client_data"][1];
    assert!(m1["lost"].is_string(), "{m1}");
    assert!(m2.get("lost").is_none(), "{m2}");
    assert!(u(m2, "/requests") > 0);
    assert_eq!(u(&r["mixes"][1], "/clients_participating"), 2);
    let clock: Vec<&str> = r["environment"]["agents"][1]["clock"]
        .as_array()
        .expect("clock")
        .iter()
        .map(|c| c["at"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(clock, ["registration", "mix 1", "registration", "mix 2"]);
}

/// `--abort-on-lost-agent`: the first loss stops the run, naming the agent.
#[test]
fn abort_on_lost_agent_stops_the_run() {
    let nginx = Nginx::start(NginxOpts::default());
    let work = tempfile::tempdir().expect("tempdir");
    let lab = work.path().join("certs");
    certs(&lab, 2);
    let path = suite(work.path(), &nginx.url(""), "20s", &[2, 2]);
    let out_dir = work.path().join("results");
    let port = free_port();
    let ctl = controller(&path, port, &lab, &out_dir, 2, &["--abort-on-lost-agent"]);
    let a0 = agent(&lab, port, 0, &[]);
    let a1 = agent(&lab, port, 1, &[]);
    wait_for_load_from(&nginx, "127.0.0.2");
    unsafe { libc::kill(a1.pid(), libc::SIGKILL) };
    let out = ctl.wait_output();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("agent 1 was lost") && stderr.contains("--abort-on-lost-agent is set"),
        "{stderr}"
    );
    assert!(a0.wait_output().status.success());
    let r = read_json(&out_dir.join("results.json"));
    assert_eq!(r["mixes"].as_array().map(Vec::len), Some(1));
    assert_eq!(r["mixes"][0]["partial"], true);
    assert_eq!(r["complete"], false);
}
