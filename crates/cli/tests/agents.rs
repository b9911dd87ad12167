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
    // Agent 0 states its index in the environment, as on Kubernetes;
    // agent 1 with --index; the others take it from their certificates.
    let env: Vec<(&str, &str)> = match i {
        0 => vec![("JOB_COMPLETION_INDEX", "0")],
        1 => {
            args.extend(["--index", &index]);
            Vec::new()
        }
        _ => Vec::new(),
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
        // How together its clients began, on the controller's clock (each
        // agent's first send corrected by its offset, known to half its
        // clock check's round trip), and the run said so.
        let spread = &m["start_spread"];
        assert_eq!(u(spread, "/clients"), clients, "{spread}");
        let (min, max) = (
            spread["min_us"].as_i64().expect("min"),
            spread["max_us"].as_i64().expect("max"),
        );
        assert_eq!(spread["spread_us"].as_i64(), Some(max - min));
        assert!(u(spread, "/latest_client") >= 1 && u(spread, "/latest_client") <= clients);
        let line = format!(
            "mix {}: start spread {} µs over {clients} clients",
            m["mix"],
            benchlab_format::group(&spread["spread_us"].to_string())
        );
        assert!(text(&out).contains(&line), "no `{line}` in:\n{}", text(&out));
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

/// A mix with `preconnect = true` on two agents: the setting travels in
/// the plan, the mix's parameters in results.json say so, the connections
/// counted are those nginx saw, and nginx's log holds every counted
/// request, plus at most those in flight.
#[test]
fn two_agents_run_a_preconnected_mix_counted_against_nginx() {
    let nginx = Nginx::start(NginxOpts::default());
    let work = tempfile::tempdir().expect("tempdir");
    let lab = work.path().join("certs");
    certs(&lab, 2);
    let path = suite(work.path(), &nginx.url(""), "2s", &[2]);
    let text_of = std::fs::read_to_string(&path).expect("suite");
    std::fs::write(
        &path,
        text_of.replace("timeout = \"5s\"\n", "timeout = \"5s\"\npreconnect = true\n"),
    )
    .expect("suite");
    let out_dir = work.path().join("results");
    let port = free_port();
    let ctl = controller(&path, port, &lab, &out_dir, 2, &[]);
    let agents: Vec<Proc> = (0..2).map(|i| agent(&lab, port, i, &[])).collect();
    let out = ctl.wait_output();
    assert!(out.status.success(), "controller failed:\n{}", text(&out));
    for a in agents {
        let o = a.wait_output();
        assert!(o.status.success(), "{}", text(&o));
    }
    let r = read_json(&out_dir.join("results.json"));
    assert_schema_valid(&r);
    let m = &r["mixes"][0];
    assert_eq!(m["params"]["preconnect"], true, "{m}");
    assert_eq!(u(m, "/errors_total"), 0);
    assert_eq!(u(&m["start_spread"], "/clients"), 2);
    let (counted, in_flight) = (u(m, "/requests"), u(m, "/in_flight"));
    let lines = nginx.access_log_lines_at_least(counted as usize + 1);
    let logged = lines.len() as u64 - 1;
    assert!(
        logged >= counted && logged <= counted + in_flight,
        "nginx logged {logged}, the agents counted {counted} (+ {in_flight} in flight)"
    );
    let mut connections: Vec<(String, u64)> = lines[1..]
        .iter()
        .map(|l| (l.remote_addr.clone(), l.connection))
        .collect();
    connections.sort();
    connections.dedup();
    // nginx closes a connection after its 1,000th request: as many as it
    // saw (a preconnected one is counted at its first request, as any).
    assert_eq!(u(m, "/connections_opened"), connections.len() as u64, "{m}");
    assert_eq!(u(m, "/users_arrived"), 4);
}

/// A flow workload on two agents: each agent compiles the flow the
/// controller sent (its feeder travels with it: a flow compiled from the
/// controller's copy reads no file, see `benchlab_flow::FlowSource`), users are numbered across the agents (a feeder's
/// `index` rows are theirs alone), and every step is counted against nginx.
#[test]
fn two_agents_walk_a_flow_with_its_feeder_counted_against_nginx() {
    let nginx = Nginx::start(NginxOpts::default());
    let work = tempfile::tempdir().expect("tempdir");
    let lab = work.path().join("certs");
    certs(&lab, 2);
    let data = work.path().join("data");
    std::fs::create_dir(&data).expect("data dir");
    std::fs::write(data.join("users.csv"), "u\nuser-0\nuser-1\nuser-2\nuser-3\n").expect("feeder");
    let suite = work.path().join("flow.toml");
    std::fs::write(
        &suite,
        format!(
            r#"name = "agents-flow"
target = "{}"
seed = 5
[defaults]
length = "2s"
ramp_up = "0s"
ramp_down = "0s"
threads_per_client = 2
timeout = "5s"
[workloads.session]
[workloads.session.flow]
feeders = [{{ file = "data/users.csv", mode = "index" }}]
steps = [
  {{ name = "login", method = "POST", url = "/flow/login?u={{{{u}}}}", check = {{ status = 303 }} }},
  {{ name = "cart", method = "POST", url = "/flow/cart?u={{{{u}}}}", body = "{{}}", check = {{ json = {{ "/sid" = "s-{{{{u}}}}" }} }} }},
]
[[mix]]
clients = 2
"#,
            nginx.url("")
        ),
    )
    .expect("suite");
    let out_dir = work.path().join("results");
    let port = free_port();
    let ctl = controller(&suite, port, &lab, &out_dir, 2, &[]);
    let agents: Vec<Proc> = (0..2).map(|i| agent(&lab, port, i, &[])).collect();
    let out = ctl.wait_output();
    assert!(out.status.success(), "controller failed:\n{}", text(&out));
    drop(agents);
    let r = read_json(&out_dir.join("results.json"));
    assert_schema_valid(&r);
    let m = &r["mixes"][0];
    assert_eq!(u(m, "/errors_total"), 0, "{m}");
    assert!(u(m, "/flows/completed") > 0, "{m}");
    let lines = nginx.access_log_lines();
    let mut users: Vec<&str> = lines
        .iter()
        .filter_map(|l| l.request.split("u=").nth(1))
        .map(|rest| rest.split(' ').next().unwrap_or(""))
        .collect();
    users.sort();
    users.dedup();
    assert_eq!(users, ["user-0", "user-1", "user-2", "user-3"]);
    // Each user's requests came from its own agent's address, cookie and all.
    for l in lines.iter().filter(|l| l.path().starts_with("/flow/cart")) {
        let user = l
            .request
            .split("u=")
            .nth(1)
            .and_then(|r| r.split(' ').next())
            .unwrap_or("");
        assert_eq!(l.cookie, format!("sid=s-{user}"), "{l:?}");
        let agent = if matches!(user, "user-0" | "user-1") {
            "127.0.0.1"
        } else {
            "127.0.0.2"
        };
        assert_eq!(l.remote_addr, agent, "{l:?}");
    }
    for (step, path) in [("login", "/flow/login"), ("cart", "/flow/cart")] {
        let c = m["classes"]
            .as_array()
            .and_then(|cs| cs.iter().find(|c| c["name"] == step))
            .expect("step class");
        let logged = lines.iter().filter(|l| l.path().starts_with(path)).count() as u64;
        let ended = u(c, "/requests") + u(c, "/errors_total");
        assert!(
            logged >= ended && logged <= ended + u(m, "/in_flight"),
            "{step}: {logged} vs {ended}"
        );
    }
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
    // Without --os-threads-per-client, each agent gives its one client the
    // worker threads of its own CPUs (up to the client's 2 users), not the
    // controller's cores ÷ 2 clients.
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let workers = std::fs::read_dir(format!("/proc/{}/task", a0.pid()))
        .expect("agent 0's threads")
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|comm| comm.starts_with("benchlab-worke"))
        .count();
    assert_eq!(workers, cpus.min(2), "agent 0's worker threads");
    // SAFETY: kill(2) on a pid this test started and still holds; no memory is touched.
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
    // SAFETY: kill(2) on a pid this test started and still holds; no memory is touched.
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
        agent_says.contains("speaks control protocol version 999, this controller speaks version 3"),
        "{agent_says}"
    );
    let out = ctl.wait_output();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("speaks control protocol version 999, this controller speaks version 3"),
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
    // SAFETY: kill(2) on a pid this test started and still holds; no memory is touched.
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
    // SAFETY: kill(2) on a pid this test started and still holds; no memory is touched.
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

/// `--monitors M` without agents: the clients run in this process, and
/// the run waits for the monitors, naming how many came.
#[test]
fn a_run_waits_for_its_monitors() {
    let work = tempfile::tempdir().expect("tempdir");
    let lab = work.path().join("certs");
    certs(&lab, 0);
    let path = suite(work.path(), "http://127.0.0.1:9", "1s", &[1]);
    let listen = format!("127.0.0.1:{}", free_port());
    let out = run_benchlab(&[
        "run",
        s(&path),
        "--monitors",
        "1",
        "--listen",
        &listen,
        "--tls-dir",
        s(&lab),
        "--agent-timeout",
        "1s",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("waiting for 1 monitor (up to"), "{stderr}");
    assert!(stderr.contains("after 1 s: 0 of 1 monitors registered"), "{stderr}");
}

/// An nginx in namespace `ns` on `addr:8080`, logging each request's
/// client address and status.
fn nginx_in(ns: &str, dir: &Path, addr: &str) -> Proc {
    let www = dir.join("www");
    std::fs::create_dir_all(&www).expect("mkdir");
    std::fs::write(www.join("4k.html"), vec![b'x'; 4096]).expect("write");
    let p = |n: &str| dir.join(n).display().to_string();
    let conf = format!(
        "user root;\ndaemon off;\nmaster_process off;\nworker_processes 1;\npid {pid};\nerror_log {err} warn;\n\
         events {{ worker_connections 1024; }}\nhttp {{\n  log_format lab \"$remote_addr\\t$status\";\n  \
         access_log {log} lab;\n  client_body_temp_path {tmp};\n  proxy_temp_path {tmp};\n  fastcgi_temp_path {tmp};\n  \
         uwsgi_temp_path {tmp};\n  scgi_temp_path {tmp};\n  server {{ listen 8080; root {www}; }}\n}}\n",
        pid = p("nginx.pid"),
        err = p("error.log"),
        log = p("access.log"),
        tmp = p("tmp"),
        www = www.display()
    );
    std::fs::write(dir.join("nginx.conf"), conf).expect("write nginx.conf");
    let child = Command::new("ip")
        .args(["netns", "exec", ns, "nginx", "-p"])
        .arg(dir)
        .arg("-c")
        .arg(dir.join("nginx.conf"))
        .arg("-e")
        .arg(dir.join("error.log"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start nginx");
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect((addr, 8080)).is_err() {
        assert!(
            Instant::now() < deadline,
            "nginx in {ns} does not listen on {addr}:8080"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    Proc(Some(child))
}

/// A delaying proxy inside namespace `ns` (its threads enter it with
/// setns, so their sockets live there): accepts on `listen`, forwards to
/// `upstream`, and holds each chunk from the client `delay` before passing
/// it on, so every request through it takes `delay` longer. The kernel
/// here has no netem; this stands in for a slow network path. Stops
/// accepting when `stop` is set.
fn delaying_proxy(
    ns: &str,
    listen: std::net::SocketAddr,
    upstream: std::net::SocketAddr,
    delay: Duration,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) {
    use std::io::{Read, Write};
    use std::os::fd::AsRawFd;
    let netns = std::fs::File::open(format!("/var/run/netns/{ns}")).expect("open the namespace");
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        // SAFETY: setns(2) on a namespace file this thread holds open; it changes only this thread's namespace.
        let entered = unsafe { libc::setns(netns.as_raw_fd(), libc::CLONE_NEWNET) };
        assert_eq!(entered, 0, "setns: {}", std::io::Error::last_os_error());
        let listener = std::net::TcpListener::bind(listen).expect("proxy bind");
        listener.set_nonblocking(true).expect("nonblocking");
        ready_tx.send(()).expect("ready");
        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
            let Ok((mut client, _)) = listener.accept() else {
                std::thread::sleep(Duration::from_millis(5));
                continue;
            };
            // Threads made here are in the namespace too.
            std::thread::spawn(move || {
                client.set_nonblocking(false).expect("blocking");
                let Ok(mut server) = std::net::TcpStream::connect(upstream) else {
                    return;
                };
                let _ = client.set_nodelay(true);
                let _ = server.set_nodelay(true);
                let (mut c2, mut s2) = (client.try_clone().expect("clone"), server.try_clone().expect("clone"));
                std::thread::spawn(move || {
                    let _ = std::io::copy(&mut s2, &mut c2);
                    let _ = c2.shutdown(std::net::Shutdown::Write);
                });
                let mut buf = [0u8; 16384];
                while let Ok(n) = client.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    std::thread::sleep(delay);
                    if server.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
                let _ = server.shutdown(std::net::Shutdown::Write);
            });
        }
    });
    ready_rx
        .recv_timeout(Duration::from_secs(10))
        .expect("the proxy listens");
}

/// Four agents, each on a host of its own (a network namespace with its own
/// address in 198.18.0.0/15), and a real nginx on a fifth: a 3-mix suite
/// runs across them; nginx sees the four addresses and the counted
/// requests; one agent killed mid-mix is dropped and the rest is intact;
/// one agent reaches the server through a delaying proxy, and its client's
/// latency shows the delay.
/// Needs root and `ip netns`; skipped, saying why, without them.
#[test]
fn four_agents_on_their_own_hosts_in_network_namespaces() {
    // SAFETY: geteuid(2) has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: network namespaces need root");
        return;
    }
    common::require("nginx");
    let agents_at = ["198.18.0.11", "198.18.0.12", "198.18.0.13", "198.18.0.14"];
    let server_at = "198.18.0.100";
    let mut hosts = agents_at.to_vec();
    hosts.push(server_at);
    let net = match common::netns::Lab::make("bl", &hosts) {
        Ok(l) => l,
        Err(why) => {
            eprintln!("skipped: cannot make network namespaces ({why})");
            return;
        }
    };
    let work = tempfile::tempdir().expect("tempdir");
    let server_dir = work.path().join("nginx");
    std::fs::create_dir_all(server_dir.join("tmp")).expect("mkdir");
    let nginx = nginx_in(&net.namespaces[4], &server_dir, server_at);
    // Agent 2's path to the server is slow: on its host the server's
    // address is a local one where a delaying proxy listens, forwarding to
    // the server's second address.
    let server_nic = format!("blp{}4", std::process::id() % 10_000);
    common::netns::ip(&[
        "netns",
        "exec",
        &net.namespaces[4],
        "ip",
        "addr",
        "add",
        "198.18.0.101/24",
        "dev",
        &server_nic,
    ])
    .expect("second server address");
    common::netns::ip(&[
        "netns",
        "exec",
        &net.namespaces[2],
        "ip",
        "addr",
        "add",
        "198.18.0.100/32",
        "dev",
        "lo",
    ])
    .expect("local server address on agent 2");
    let proxy_stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let delay = Duration::from_millis(30);
    delaying_proxy(
        &net.namespaces[2],
        "198.18.0.100:8080".parse().unwrap(),
        "198.18.0.101:8080".parse().unwrap(),
        delay,
        std::sync::Arc::clone(&proxy_stop),
    );
    let lab = work.path().join("certs");
    let out = run_benchlab(&[
        "lab",
        "certs",
        "--out",
        s(&lab),
        "--agents",
        "4",
        "--controller-name",
        "198.18.0.1",
    ]);
    common::assert_success("lab certs", &out);
    // Each client loads from its agent's own address.
    let path = suite(work.path(), &format!("http://{server_at}:8080"), "3s", &[2, 4, 4]);
    let text_of = std::fs::read_to_string(&path).expect("suite");
    std::fs::write(&path, format!("client_addresses = false\n{text_of}")).expect("suite");
    let out_dir = work.path().join("results");
    let port = free_port();
    let listen = format!("198.18.0.1:{port}");
    let ctl = spawn(
        &[
            "run",
            s(&path),
            "--agents",
            "4",
            "--listen",
            &listen,
            "--tls-dir",
            s(&lab),
            "--out",
            s(&out_dir),
        ],
        &[],
    );
    let mut agents: Vec<Proc> = (0..4)
        .map(|i| {
            let (cert, key) = (lab.join(format!("agent-{i}.pem")), lab.join(format!("agent-{i}.key")));
            let mut c = Command::new("ip");
            c.args([
                "netns",
                "exec",
                &net.namespaces[i],
                benchlab_bin(),
                "agent",
                "--controller",
                &listen,
            ])
            .arg("--cert")
            .arg(&cert)
            .arg("--key")
            .arg(&key)
            .arg("--ca")
            .arg(lab.join("ca.pem"))
            .args(["--index", &i.to_string()])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
            Proc(Some(c.spawn().expect("spawn agent")))
        })
        .collect();
    // Kill agent 3 once mix 3 is under way: after its client's requests of
    // mix 2 and a little more.
    let log = server_dir.join("access.log");
    let from = |addr: &str| {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.starts_with(&format!("{addr}\t")))
            .count()
    };
    let deadline = Instant::now() + Duration::from_secs(120);
    while !out_dir.join("results.json").exists()
        || read_json(&out_dir.join("results.json"))["mixes"]
            .as_array()
            .map_or(0, Vec::len)
            < 2
    {
        assert!(Instant::now() < deadline, "mix 2 never ended");
        std::thread::sleep(Duration::from_millis(50));
    }
    let before = from(agents_at[3]);
    while from(agents_at[3]) == before {
        assert!(Instant::now() < deadline, "agent 3 sent nothing in mix 3");
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: kill(2) on a pid this test started and still holds; no memory is touched.
    unsafe { libc::kill(agents[3].pid(), libc::SIGKILL) };
    let out = ctl.wait_output();
    assert!(out.status.success(), "controller:\n{}", text(&out));
    for a in agents.drain(..3) {
        let o = a.wait_output();
        assert!(o.status.success(), "{}", text(&o));
    }
    drop(nginx);
    let r = read_json(&out_dir.join("results.json"));
    assert_schema_valid(&r);
    assert_eq!(r["complete"], true);
    let mixes = r["mixes"].as_array().expect("mixes");
    assert_eq!(mixes.len(), 3);
    // Per agent: what it counted in the mixes' windows (no ramps: the
    // whole mix), and the mixes it ran.
    let mut counted = [0u64; 4];
    let mut in_flight = [0u64; 4];
    let mut ran = [0u64; 4];
    for m in mixes {
        for (k, c) in m["client_data"].as_array().expect("rows").iter().enumerate() {
            counted[k] += u(c, "/requests") + u(c, "/errors_total");
            in_flight[k] += u(c, "/in_flight");
            ran[k] += 1;
        }
    }
    let m3 = &mixes[2]["client_data"];
    assert!(m3[3]["lost"].is_string(), "{}", m3[3]);
    for k in 0..3 {
        assert!(m3[k].get("lost").is_none(), "{}", m3[k]);
        // nginx logged every request counted from this host; besides, the
        // requests cut off when each mix stopped (in flight), and at most
        // one a virtual user (2 a client) completed between the window's
        // end and the moment it saw the stop.
        let logged = from(agents_at[k]) as u64;
        assert!(
            logged >= counted[k] && logged <= counted[k] + in_flight[k] + 2 * ran[k],
            "{}: nginx logged {logged}, counted {} (+ {} in flight) in {} mixes",
            agents_at[k],
            counted[k],
            in_flight[k],
            ran[k]
        );
    }
    // Agent 2's client (client 3 of mixes 2 and 3) waited the proxy's
    // delay on every request; the others did not.
    proxy_stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let delay_us = delay.as_micros() as u64;
    for m in &mixes[1..] {
        let rows = &m["client_data"];
        assert!(u(&rows[2], "/latency_us/p50") >= delay_us, "{}", rows[2]);
        for k in [0, 1] {
            assert!(u(&rows[k], "/latency_us/p50") < delay_us, "{}", rows[k]);
        }
    }
    // The lost agent's requests reached nginx from its own address; its
    // mixes before the loss are counted too.
    assert!(from(agents_at[3]) as u64 >= counted[3]);
    // The controller's own requests: the preflight only.
    assert_eq!(from("198.18.0.1"), 1);
    let agents = r["environment"]["agents"].as_array().expect("agents");
    for (k, a) in agents.iter().enumerate() {
        assert_eq!(a["peer"].as_str().and_then(|p| p.split(':').next()), Some(agents_at[k]));
    }
    assert!(agents[3]["lost"].is_string());
}

/// `benchlab http --agents N …` on the controller at `port`.
fn http_controller(url: &str, port: u16, certs: &Path, agents: u32, extra: &[&str]) -> Proc {
    let listen = format!("127.0.0.1:{port}");
    let n = agents.to_string();
    let mut args = vec!["http", url, "--agents", &n, "--listen", &listen, "--tls-dir", s(certs)];
    args.extend_from_slice(extra);
    spawn(&args, &[])
}

fn http_json(o: &Output) -> Value {
    assert!(o.status.success(), "benchlab http --agents:\n{}", text(o));
    common::http_mix(&o.stdout)
}

/// `http --agents 2 -n 400`: the 400 requests are split 200 + 200 over the
/// two agents' clients, each from its own address, and nginx logged
/// exactly those (plus the controller's one preflight request).
#[test]
fn http_across_two_agents_runs_exactly_the_requests_asked_for() {
    let nginx = Nginx::start(NginxOpts::default());
    let work = tempfile::tempdir().expect("tempdir");
    let lab = work.path().join("certs");
    certs(&lab, 2);
    let port = free_port();
    let url = nginx.url("/4k.html");
    let ctl = http_controller(&url, port, &lab, 2, &["-n", "400", "--threads", "5", "--json"]);
    let agents: Vec<Proc> = (0..2).map(|i| agent(&lab, port, i, &[])).collect();
    let r = http_json(&ctl.wait_output());
    for a in agents {
        assert!(a.wait_output().status.success());
    }
    assert_eq!(u(&r, "/requests"), 400, "{r}");
    assert_eq!(u(&r, "/errors_total"), 0);
    assert_eq!(u(&r, "/in_flight"), 0);
    assert_eq!(u(&r, "/threads"), 5);
    let rows = r["client_data"].as_array().expect("client_data");
    assert_eq!(rows.len(), 2);
    let per_client: Vec<u64> = rows.iter().map(|c| u(c, "/requests")).collect();
    assert_eq!(per_client, [200, 200]);
    // 5 users split 3 + 2, each client on its own agent and address.
    let placed = r["http_command"]["clients"].as_array().expect("http_command.clients");
    let users: Vec<u64> = placed.iter().map(|c| u(c, "/threads")).collect();
    assert_eq!(users, [3, 2]);
    for (i, (c, p)) in rows.iter().zip(placed).enumerate() {
        assert_eq!(u(c, "/client"), i as u64 + 1);
        assert_eq!(u(p, "/client"), i as u64 + 1);
        assert_eq!(u(p, "/agent"), i as u64);
        assert_eq!(c["address"], format!("127.0.0.{}", i + 1));
    }
    for field in ["/bytes", "/connections_opened"] {
        let sum: u64 = rows.iter().map(|c| u(c, field)).sum();
        assert_eq!(u(&r, field), sum, "{field}");
    }
    // Both clients' first sends, on the controller's clock.
    let spread = &r["start_spread"];
    assert_eq!(u(spread, "/clients"), 2, "{r}");
    let (min, max) = (
        spread["min_us"].as_i64().expect("min"),
        spread["max_us"].as_i64().expect("max"),
    );
    assert_eq!(spread["spread_us"].as_i64(), Some(max - min));
    let lines = nginx.access_log_lines_at_least(401);
    let from = |a: &str| lines.iter().filter(|l| l.remote_addr == a).count() as u64;
    assert_eq!(lines.len(), 401, "400 requests and the preflight");
    assert_eq!(from("127.0.0.1"), 200 + 1, "client 1 and the preflight");
    assert_eq!(from("127.0.0.2"), 200);
    assert!(lines.iter().all(|l| l.status == 200));
}

/// A timed `http --agents` run: the totals are the sum of the clients',
/// and its merged percentiles (of the clients' histograms added) lie
/// between the clients' own. Two clients per agent, and the terminal
/// summary has a line per client.
#[test]
fn http_across_agents_merges_the_clients_histograms() {
    let nginx = Nginx::start(NginxOpts::default());
    let work = tempfile::tempdir().expect("tempdir");
    let lab = work.path().join("certs");
    certs(&lab, 1);
    let url = nginx.url("/4k.html");
    let port = free_port();
    let extra = ["-d", "2s", "--threads", "4", "--clients-per-agent", "2", "--json"];
    let ctl = http_controller(&url, port, &lab, 1, &extra);
    let a0 = agent(&lab, port, 0, &[]);
    let r = http_json(&ctl.wait_output());
    assert!(a0.wait_output().status.success());
    let rows = r["client_data"].as_array().expect("client_data");
    assert_eq!(rows.len(), 2);
    let placed = r["http_command"]["clients"].as_array().expect("http_command.clients");
    assert!(placed.iter().all(|c| u(c, "/agent") == 0), "{r}");
    for field in ["/requests", "/errors_total", "/bytes", "/in_flight"] {
        let sum: u64 = rows.iter().map(|c| u(c, field)).sum();
        assert_eq!(u(&r, field), sum, "{field}");
    }
    assert!(rows.iter().all(|c| u(c, "/requests") > 0));
    for p in ["/latency_us/p50", "/latency_us/p99"] {
        let own: Vec<u64> = rows.iter().map(|c| u(c, p)).collect();
        let merged = u(&r, p);
        assert!(
            merged >= *own.iter().min().expect("a client") && merged <= *own.iter().max().expect("a client"),
            "{p}: merged {merged}, the clients' {own:?}"
        );
    }

    // The terminal summary: a line per client, saying where it ran.
    let port = free_port();
    let ctl = http_controller(
        &url,
        port,
        &lab,
        1,
        &["-n", "20", "--threads", "2", "--clients-per-agent", "2"],
    );
    let a0 = agent(&lab, port, 0, &[]);
    let o = ctl.wait_output();
    assert!(o.status.success(), "{}", text(&o));
    assert!(a0.wait_output().status.success());
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("client 1 on agent 0 ("), "{stdout}");
    assert!(stdout.contains("from 127.0.0.2): 1 user,"), "{stdout}");
    assert!(
        stdout.contains("  start spread ") && stdout.contains(" µs over 2 clients ("),
        "{stdout}"
    );
}

/// `http --agents 2` with one agent: after --agent-timeout the run stops,
/// naming the missing agent, and sends no load.
#[test]
fn http_with_a_missing_agent_names_it_after_the_timeout() {
    let nginx = Nginx::start(NginxOpts::default());
    let work = tempfile::tempdir().expect("tempdir");
    let lab = work.path().join("certs");
    certs(&lab, 2);
    let port = free_port();
    let ctl = http_controller(
        &nginx.url("/4k.html"),
        port,
        &lab,
        2,
        &["--agent-timeout", "2s", "-n", "10"],
    );
    let a0 = agent(&lab, port, 0, &[]);
    let o = ctl.wait_output();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains("1 of 2 agents registered; missing agent indexes: 1"),
        "{stderr}"
    );
    drop(a0);
    // The preflight's request only.
    assert_eq!(nginx.access_log_lines().len(), 1);
    // Fewer users than clients is refused before anything is sent.
    let listen = format!("127.0.0.1:{port}");
    let o = run_benchlab(&[
        "http",
        &nginx.url("/4k.html"),
        "--agents",
        "3",
        "--threads",
        "2",
        "--listen",
        &listen,
        "--tls-dir",
        s(&lab),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("--threads 2 is split over 3 clients"),
        "{}",
        text(&o)
    );
    assert_eq!(nginx.access_log_lines().len(), 1);
}

/// `benchlab agent` with the certificate and key files `cert` (e.g.
/// `agent-1`) claiming index `index`, for the controller on `port`.
fn agent_with_cert(certs: &Path, port: u16, cert: &str, index: u32) -> Proc {
    let (pem, key, ca) = (
        certs.join(format!("{cert}.pem")),
        certs.join(format!("{cert}.key")),
        certs.join("ca.pem"),
    );
    let controller = format!("127.0.0.1:{port}");
    let index = index.to_string();
    let args = [
        "agent",
        "--controller",
        &controller,
        "--cert",
        s(&pem),
        "--key",
        s(&key),
        "--ca",
        s(&ca),
        "--index",
        &index,
    ];
    spawn(&args, &[])
}

/// A certificate registers only in its own role: agent 1's certificate
/// claiming index 0, and the monitor's used by an agent, are refused,
/// both sides naming what the certificate says and what the Hello says.
#[test]
fn a_certificate_registers_only_as_the_agent_it_was_made_for() {
    let work = tempfile::tempdir().expect("tempdir");
    let lab = work.path().join("certs");
    certs(&lab, 2);
    let port = free_port();
    let ctl = http_controller(
        "http://127.0.0.1:9/",
        port,
        &lab,
        2,
        &["--agent-timeout", "4s", "--no-preflight"],
    );
    let wrong_index = agent_with_cert(&lab, port, "agent-1", 0).wait_output();
    let monitor_as_agent = agent_with_cert(&lab, port, "monitor", 1).wait_output();
    let out = ctl.wait_output();
    // An agent's index is its certificate's: --index that disagrees is
    // refused by the agent itself, naming both, before it dials.
    assert_eq!(wrong_index.status.code(), Some(2), "{}", text(&wrong_index));
    assert!(
        String::from_utf8_lossy(&wrong_index.stderr).contains(&format!(
            "--index says agent index 0, but {} is the certificate of agent 1",
            lab.join("agent-1.pem").display()
        )),
        "{}",
        text(&wrong_index)
    );
    // The monitor's certificate used by an agent: the controller refuses it.
    let says = "has the certificate of monitor, but its Hello says agent index 1; use agent-1.pem";
    let o = &monitor_as_agent;
    assert_eq!(o.status.code(), Some(2), "{}", text(o));
    assert!(String::from_utf8_lossy(&o.stderr).contains(says), "{}", text(o));
    assert!(String::from_utf8_lossy(&out.stderr).contains(says), "{}", text(&out));
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("0 of 2 agents registered; missing agent indexes: 0, 1"),
        "{}",
        text(&out)
    );
}

/// Waits (bounded) for `child` to exit; kills it and fails if it does not.
fn exits_within(mut p: Proc, limit: Duration, what: &str) -> Output {
    let deadline = Instant::now() + limit;
    loop {
        let done = p.0.as_mut().expect("child").try_wait().expect("try_wait").is_some();
        if done {
            return p.wait_output();
        }
        assert!(Instant::now() < deadline, "{what} still runs after {limit:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The only agent, killed in mix 1 of three: no mix runs without clients.
/// The run stops before mix 2, exit 1, naming the agent; mix 1 is kept,
/// its client lost and its window cut (partial); the run is not complete.
#[test]
fn a_run_whose_only_agent_is_lost_stops_before_the_next_mix() {
    let nginx = Nginx::start(NginxOpts::default());
    let work = tempfile::tempdir().expect("tempdir");
    let lab = work.path().join("certs");
    certs(&lab, 1);
    let path = suite(work.path(), &nginx.url(""), "4s", &[1, 1, 1]);
    let out_dir = work.path().join("results");
    let port = free_port();
    let ctl = controller(&path, port, &lab, &out_dir, 1, &[]);
    let a0 = agent(&lab, port, 0, &[]);
    wait_for_load_from(&nginx, "127.0.0.1");
    // SAFETY: kill(2) on a pid this test started and still holds; no memory is touched.
    unsafe { libc::kill(a0.pid(), libc::SIGKILL) };
    let out = ctl.wait_output();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("the run stops before mix 2: no client is left to run the mix: every agent it needs was lost (agent 0 (host "),
        "{stderr}"
    );
    assert!(stderr.contains("waiting for 1 agent (up to"), "{stderr}");
    let r = read_json(&out_dir.join("results.json"));
    assert_schema_valid(&r);
    assert_eq!(r["complete"], false);
    assert_eq!(r["mixes"].as_array().map(Vec::len), Some(1), "{}", r["mixes"]);
    let m = &r["mixes"][0];
    assert_eq!(m["partial"], true, "{m}");
    assert!(m["client_data"][0]["lost"].is_string(), "{}", m["client_data"][0]);
}

/// Two agents, both killed in mix 1: the same stop, naming both.
#[test]
fn a_run_whose_agents_are_all_lost_stops_naming_them() {
    let nginx = Nginx::start(NginxOpts::default());
    let work = tempfile::tempdir().expect("tempdir");
    let lab = work.path().join("certs");
    certs(&lab, 2);
    let path = suite(work.path(), &nginx.url(""), "4s", &[2, 2, 2]);
    let out_dir = work.path().join("results");
    let port = free_port();
    let ctl = controller(&path, port, &lab, &out_dir, 2, &[]);
    let a0 = agent(&lab, port, 0, &[]);
    let a1 = agent(&lab, port, 1, &[]);
    wait_for_load_from(&nginx, "127.0.0.1");
    wait_for_load_from(&nginx, "127.0.0.2");
    // SAFETY: a system call with valid arguments owned by this test.
    unsafe {
        libc::kill(a0.pid(), libc::SIGKILL);
        libc::kill(a1.pid(), libc::SIGKILL);
    }
    let out = ctl.wait_output();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("the run stops before mix 2: no client is left"),
        "{stderr}"
    );
    assert!(
        stderr.contains("(agent 0 (host ") && stderr.contains("; agent 1 (host "),
        "{stderr}"
    );
    let r = read_json(&out_dir.join("results.json"));
    assert_eq!(r["complete"], false);
    assert_eq!(r["mixes"].as_array().map(Vec::len), Some(1));
    let rows = r["mixes"][0]["client_data"].as_array().expect("client_data");
    assert!(rows.iter().all(|c| c["lost"].is_string()), "{rows:?}");
    // The report says the mix lost its clients and is partial, and does
    // not read it as the server's collapse.
    let report_dir = work.path().join("report");
    let o = run_benchlab(&["report", s(&out_dir), "--out", s(&report_dir)]);
    common::assert_success("benchlab report", &o);
    let html = std::fs::read_to_string(report_dir.join("report.html")).expect("report.html");
    assert!(
        html.contains("Mix 1: client(s) 1, 2 were lost (their agent gone)")
            && html.contains("never read as a collapse"),
        "no lost-clients note in the report"
    );
    assert!(
        html.contains("Mix 1 is partial: measured over 0 s"),
        "no partial note in the report"
    );
}

/// Ctrl-C while the controller waits for its agents: it stops at once,
/// exit 130, writing nothing.
#[test]
fn ctrl_c_while_waiting_for_agents_exits_130() {
    let work = tempfile::tempdir().expect("tempdir");
    let lab = work.path().join("certs");
    certs(&lab, 1);
    let path = suite(work.path(), "http://127.0.0.1:9", "1s", &[1]);
    let out_dir = work.path().join("results");
    let port = free_port();
    let ctl = controller(
        &path,
        port,
        &lab,
        &out_dir,
        1,
        &["--no-preflight", "--agent-timeout", "10m"],
    );
    // Listening means waiting (the Ctrl-C hook follows within
    // microseconds; a moment more for it).
    let deadline = Instant::now() + Duration::from_secs(60);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "the controller never listened");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(500));
    // SAFETY: kill(2) on a pid this test started and still holds; no memory is touched.
    unsafe { libc::kill(ctl.pid(), libc::SIGINT) };
    let out = exits_within(ctl, Duration::from_secs(60), "the controller after Ctrl-C");
    assert_eq!(out.status.code(), Some(130), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("interrupted while waiting for agents and monitors: 0 of 1 agent registered"),
        "{}",
        text(&out)
    );
    assert!(!out_dir.exists());
}

/// An agent with a certificate of another lab's CA: the controller logs
/// the refusal (who, why); the agent says why and exits 1 at once instead
/// of retrying until its --connect-timeout.
#[test]
fn an_agent_of_another_ca_is_refused_at_once_both_sides_saying_why() {
    let work = tempfile::tempdir().expect("tempdir");
    let lab = work.path().join("certs");
    let other = work.path().join("other");
    certs(&lab, 1);
    certs(&other, 1);
    let port = free_port();
    let ctl = http_controller(
        "http://127.0.0.1:9/",
        port,
        &lab,
        1,
        &["--agent-timeout", "5s", "--no-preflight"],
    );
    let controller_at = format!("127.0.0.1:{port}");
    let (pem, key, ca) = (other.join("agent-0.pem"), other.join("agent-0.key"), lab.join("ca.pem"));
    let a = spawn(
        &[
            "agent",
            "--controller",
            &controller_at,
            "--cert",
            s(&pem),
            "--key",
            s(&key),
            "--ca",
            s(&ca),
            "--connect-timeout",
            "10m",
        ],
        &[],
    );
    let o = exits_within(a, Duration::from_secs(60), "an agent of another CA");
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains(
            "the controller refused this certificate: its signature does not verify: it is signed by another lab's CA"
        ),
        "{}",
        text(&o)
    );
    let out = ctl.wait_output();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("benchlab controller: refused: the peer at 127.0.0.1:")
            && stderr
                .contains(": its certificate is refused: its signature does not verify (signed by another lab's CA"),
        "{stderr}"
    );
}

/// An agent the controller drops while the run goes on (silent for 3 s:
/// stopped with SIGSTOP) exits 1 saying so, although its own silence
/// limit ran out while it was stopped; the other agent, there to the end,
/// exits 0 and its session's end is logged as the run's end, not a loss.
#[test]
fn an_agent_dropped_by_the_controller_exits_1_and_the_runs_end_is_no_loss() {
    let nginx = Nginx::start(NginxOpts::default());
    let work = tempfile::tempdir().expect("tempdir");
    let lab = work.path().join("certs");
    certs(&lab, 2);
    let path = suite(work.path(), &nginx.url(""), "8s", &[2]);
    let out_dir = work.path().join("results");
    let port = free_port();
    let ctl = controller(&path, port, &lab, &out_dir, 2, &[]);
    let a0 = agent(&lab, port, 0, &[]);
    let a1 = agent(&lab, port, 1, &[]);
    wait_for_load_from(&nginx, "127.0.0.2");
    // SAFETY: kill(2) on a pid this test started and still holds; no memory is touched.
    unsafe { libc::kill(a1.pid(), libc::SIGSTOP) };
    // Past the controller's 3 s (checked once a second), with room for a
    // busy machine; past the agent's own 5 s too, so its silence check
    // fires on resuming, and it still reads why it was dropped first.
    std::thread::sleep(Duration::from_millis(6500));
    // SAFETY: kill(2) on a pid this test started and still holds; no memory is touched.
    unsafe { libc::kill(a1.pid(), libc::SIGCONT) };
    let o1 = a1.wait_output();
    assert_eq!(o1.status.code(), Some(1), "{}", text(&o1));
    assert!(
        String::from_utf8_lossy(&o1.stderr).contains("the controller dropped agent 1: silent for 3 s"),
        "{}",
        text(&o1)
    );
    let out = ctl.wait_output();
    assert!(out.status.success(), "{}", text(&out));
    let o0 = a0.wait_output();
    assert!(o0.status.success(), "{}", text(&o0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("agent 1 (") && stderr.contains("lost: silent for 3 s"),
        "{stderr}"
    );
    assert!(
        stderr.contains("agent 0 (") && stderr.contains("): session ended with the run"),
        "{stderr}"
    );
    assert!(
        !stderr.lines().any(|l| l.contains("agent 0 (") && l.contains(") lost:")),
        "agent 0 logged as lost:\n{stderr}"
    );
}

/// A workload whose URLs are in a URL file (`url_file`, the form
/// `workload from-log` writes for a large log) run by two agents: the
/// controller sends them the compact URL list (one arena of paths, not a
/// list of strings) and says its size on the wire; each agent's client
/// loads exactly the file's URLs, sizes checked, and the merged counts are
/// the clients' sum and what nginx logged.
#[test]
fn two_agents_run_a_url_file_sent_as_a_compact_list() {
    let nginx = Nginx::start(NginxOpts::default());
    let work = tempfile::tempdir().expect("tempdir");
    let lab = work.path().join("certs");
    certs(&lab, 2);
    let urls = work.path().join("w.urls");
    std::fs::write(
        &urls,
        format!(
            "{}\n3\t4096\t/4k.html\n1\t1024\t/1k.html\n",
            benchlab_model::URL_FILE_HEADER
        ),
    )
    .expect("write URL file");
    std::fs::write(
        work.path().join("w.toml"),
        "name = \"w\"\n[[class]]\nname = \"static\"\npercent = 100\nurl_file = \"w.urls\"\n",
    )
    .expect("write workload");
    let suite = work.path().join("suite.toml");
    std::fs::write(
        &suite,
        format!(
            "name = \"url-file\"\ntarget = \"{}\"\nseed = 5\n\n[defaults]\nlength = \"2s\"\nramp_up = \"0s\"\n\
             ramp_down = \"0s\"\nthreads_per_client = 2\ntimeout = \"5s\"\n\n[workloads.w]\nfile = \"w.toml\"\n\n\
             [[mix]]\nclients = 2\n",
            nginx.url("")
        ),
    )
    .expect("write suite");
    let out_dir = work.path().join("results");
    let port = free_port();
    let ctl = controller(&suite, port, &lab, &out_dir, 2, &[]);
    let agents: Vec<Proc> = (0..2).map(|i| agent(&lab, port, i, &[])).collect();
    let out = ctl.wait_output();
    assert!(out.status.success(), "controller failed:\n{}", text(&out));
    for a in agents {
        assert!(a.wait_output().status.success());
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let wire = stderr
        .lines()
        .find(|l| l.contains("URL list xxh3:"))
        .unwrap_or_else(|| panic!("no URL list size in:\n{}", text(&out)));
    assert!(
        wire.contains(": 2 URLs, ") && wire.contains(" bytes on the wire ("),
        "{wire}"
    );
    let r = read_json(&out_dir.join("results.json"));
    assert_eq!(r["complete"], true);
    let m = &r["mixes"][0];
    let rows = m["client_data"].as_array().expect("client_data");
    assert_eq!(rows.len(), 2);
    for field in ["/requests", "/errors_total", "/bytes", "/in_flight"] {
        let sum: u64 = rows.iter().map(|c| u(c, field)).sum();
        assert_eq!(u(m, field), sum, "{field}");
    }
    assert!(rows.iter().all(|c| u(c, "/requests") > 0), "{m}");
    // Sizes from the URL file were checked on every response.
    assert_eq!(u(m, "/errors_total"), 0, "{m}");
    let counted: u64 = m["per_second"]
        .as_array()
        .expect("per_second")
        .iter()
        .map(|s| u(s, "/requests") + u(s, "/errors"))
        .sum();
    // nginx logged every completion, at most the requests cut off at the
    // end, and the preflight's one request per URL.
    let lines = nginx.access_log_lines_at_least(counted as usize + 2);
    let logged = lines.len() as u64 - 2;
    assert!(
        logged >= counted && logged <= counted + u(m, "/in_flight"),
        "nginx logged {logged}, the agents counted {counted}"
    );
    let mut paths: Vec<&str> = lines
        .iter()
        .map(|l| l.request.split(' ').nth(1).unwrap_or(""))
        .collect();
    paths.sort();
    paths.dedup();
    assert_eq!(paths, ["/1k.html", "/4k.html"]);
    assert!(lines.iter().all(|l| l.status == 200));
}

/// A URL list of over 4 MiB on the wire (100,000 long paths: gRPC's
/// default limit on a message) reaches the agents whole: they run it, no
/// error, every request on one of its URLs.
#[test]
fn a_url_list_of_many_megabytes_reaches_the_agents() {
    let nginx = Nginx::start(NginxOpts::default());
    let work = tempfile::tempdir().expect("tempdir");
    let lab = work.path().join("certs");
    certs(&lab, 2);
    let mut urls = format!("{}\n", benchlab_model::URL_FILE_HEADER);
    for i in 0..100_000 {
        urls.push_str(&format!("1\t-\t/missing/{i:07}/{}\n", "x".repeat(48)));
    }
    std::fs::write(work.path().join("w.urls"), &urls).expect("write URL file");
    // nginx has none of them: each answers 404, which the class expects.
    std::fs::write(
        work.path().join("w.toml"),
        "name = \"w\"\n[[class]]\nname = \"gone\"\npercent = 100\nexpect_status = 404\nurl_file = \"w.urls\"\n",
    )
    .expect("write workload");
    let suite = work.path().join("suite.toml");
    std::fs::write(
        &suite,
        format!(
            "name = \"big-list\"\ntarget = \"{}\"\n\n[defaults]\nlength = \"1s\"\nramp_up = \"0s\"\n\
             ramp_down = \"0s\"\nthreads_per_client = 1\ntimeout = \"5s\"\n\n[workloads.w]\nfile = \"w.toml\"\n\n\
             [[mix]]\nclients = 2\n",
            nginx.url("")
        ),
    )
    .expect("write suite");
    let out_dir = work.path().join("results");
    let port = free_port();
    let ctl = controller(&suite, port, &lab, &out_dir, 2, &["--no-preflight"]);
    let agents: Vec<Proc> = (0..2).map(|i| agent(&lab, port, i, &[])).collect();
    let out = ctl.wait_output();
    assert!(out.status.success(), "controller failed:\n{}", text(&out));
    for a in agents {
        let o = a.wait_output();
        assert!(o.status.success(), "agent:\n{}", text(&o));
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let wire: u64 = stderr
        .lines()
        .find_map(|l| l.split(": 100000 URLs, ").nth(1)?.split(' ').next()?.parse().ok())
        .unwrap_or_else(|| panic!("no URL list size in:\n{}", text(&out)));
    assert!(wire > 4 << 20, "{wire} bytes: not past gRPC's default limit");
    let r = read_json(&out_dir.join("results.json"));
    assert_eq!(r["complete"], true);
    let m = &r["mixes"][0];
    let rows = m["client_data"].as_array().expect("client_data");
    assert!(rows.iter().all(|c| u(c, "/requests") > 0), "{m}");
    assert_eq!(u(m, "/errors_total"), 0, "{m}");
    let lines = nginx.access_log_lines_at_least(u(m, "/requests") as usize);
    assert!(lines
        .iter()
        .all(|l| l.status == 404 && l.request.starts_with("GET /missing/")));
}
