//! Agents on hosts of their own start one mix together (issue 27): N
//! `benchlab agent` processes, each in a network namespace with its own
//! address in 198.18.0.0/24, register with a controller over mutual TLS,
//! and the mix's start spread in results.json puts every client's first
//! send on the controller's clock. bench/agents-netns.sh runs the same with
//! 64 agents and prints the figures; this test asserts what holds on any
//! machine, busy or not: every agent registered from its own address,
//! every client's first send is in the spread, none began before its start
//! (the start and the first send are corrected by the same offset), the
//! uncertainty is the clock checks' own, the server's log matches the
//! counts, and no namespace is left. Needs root and `ip netns`; skipped,
//! saying why, without them.

mod common;

use common::{benchlab_bin, free_port, run_benchlab, s, u, Serve};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};

const AGENTS: usize = 8;

/// A child killed (and reaped) when dropped, so a failing test leaves no
/// agent or controller behind.
struct Proc(Option<Child>);

impl Proc {
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

/// `benchlab serve` of `root` on the bridge's address (a port of its
/// choosing, read from its first line), logging each request's client
/// address.
fn serve_on_bridge(root: &Path, log: &Path) -> Serve {
    let mut child = Command::new(benchlab_bin())
        .args([
            "serve",
            "--listen",
            "198.18.0.1:0",
            "--root",
            s(root),
            "--access-log",
            s(log),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .expect("start benchlab serve");
    let mut first = String::new();
    if let Some(out) = child.stdout.take() {
        let _ = BufReader::new(out).read_line(&mut first);
    }
    let addr = first
        .trim()
        .strip_prefix("listening on http://")
        .and_then(|a| a.strip_suffix('/'))
        .and_then(|a| a.parse().ok());
    let Some(addr) = addr else {
        common::stop_group(&mut child);
        panic!("benchlab serve did not start on the bridge: {first:?}");
    };
    Serve { child, addr }
}

#[test]
fn agents_in_network_namespaces_start_a_mix_with_its_spread_measured() {
    // SAFETY: geteuid(2) has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: network namespaces need root");
        return;
    }
    let agents_at: Vec<String> = (0..AGENTS).map(|i| format!("198.18.0.{}", 11 + i)).collect();
    let hosts: Vec<&str> = agents_at.iter().map(String::as_str).collect();
    let net = match common::netns::Lab::make("bn", &hosts) {
        Ok(l) => l,
        Err(why) => {
            eprintln!("skipped: cannot make network namespaces ({why})");
            return;
        }
    };
    let namespaces = net.namespaces.clone();
    let bridge = net.bridge().to_string();
    let work = tempfile::tempdir().expect("tempdir");
    let www = work.path().join("www");
    std::fs::create_dir_all(&www).expect("mkdir");
    std::fs::write(www.join("4k.html"), vec![b'x'; 4096]).expect("write");
    let access_log = work.path().join("access.log");
    let server = serve_on_bridge(&www, &access_log);

    let lab = work.path().join("certs");
    let n = AGENTS.to_string();
    let out = run_benchlab(&[
        "lab",
        "certs",
        "--out",
        s(&lab),
        "--agents",
        &n,
        "--controller-name",
        "198.18.0.1",
    ]);
    common::assert_success("lab certs", &out);
    // One client per agent, two users each thinking between requests: a
    // small load, loaded from the agent's own address.
    let suite = work.path().join("suite.toml");
    std::fs::write(
        &suite,
        format!(
            "name = \"agents-netns\"\ntarget = \"http://{}\"\nseed = 5\nclient_addresses = false\n\n[defaults]\n\
             length = \"2s\"\nramp_up = \"0s\"\nramp_down = \"0s\"\nthreads_per_client = 2\nthink_time = \"100ms\"\n\
             persistent_percent = 100\ntimeout = \"5s\"\n\n[workloads.one]\n[[workloads.one.class]]\nname = \"page\"\n\
             percent = 100\n[[workloads.one.class.url]]\npath = \"/4k.html\"\nsize = 4096\n\n[[mix]]\nclients = {AGENTS}\n",
            server.addr
        ),
    )
    .expect("write suite");
    let results = work.path().join("results");
    let listen = format!("198.18.0.1:{}", free_port());
    let ctl = Proc(Some(
        Command::new(benchlab_bin())
            .args([
                "run",
                s(&suite),
                "--agents",
                &n,
                "--listen",
                &listen,
                "--tls-dir",
                s(&lab),
            ])
            .args(["--out", s(&results)])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the controller"),
    ));
    let agents: Vec<Proc> = namespaces
        .iter()
        .enumerate()
        .map(|(i, ns)| {
            let mut c = Command::new("ip");
            c.args(["netns", "exec", ns, benchlab_bin(), "agent", "--controller", &listen])
                .arg("--ca")
                .arg(lab.join("ca.pem"))
                .arg("--cert")
                .arg(lab.join(format!("agent-{i}.pem")))
                .arg("--key")
                .arg(lab.join(format!("agent-{i}.key")))
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            Proc(Some(c.spawn().expect("start an agent")))
        })
        .collect();
    // The controller gives up on missing agents after its --agent-timeout
    // (60 s), so this wait is bounded.
    let out = ctl.wait_output();
    assert!(out.status.success(), "controller:\n{}", text(&out));
    for (i, a) in agents.into_iter().enumerate() {
        let o = a.wait_output();
        assert!(o.status.success(), "agent {i}:\n{}", text(&o));
    }
    let served = server.stop_with("TERM");
    assert_eq!(served, 0, "benchlab serve's exit");
    let stderr = String::from_utf8_lossy(&out.stderr);

    // Every agent registered, each from its own host's address.
    for (i, addr) in agents_at.iter().enumerate() {
        assert!(
            stderr.contains(&format!("agent {i} registered from {addr}:")),
            "agent {i} from {addr}:\n{stderr}"
        );
    }
    // The start instant was announced before it came.
    assert!(
        stderr.contains(&format!("mix 1: {AGENTS} clients start at ")),
        "{stderr}"
    );

    let r: Value = serde_json::from_str(&std::fs::read_to_string(results.join("results.json")).expect("results.json"))
        .expect("JSON");
    assert_eq!(r["complete"], true);
    let mix = &r["mixes"][0];
    let rows = mix["client_data"].as_array().expect("client_data");
    assert_eq!(rows.len(), AGENTS);

    // Every client's first send is in the spread.
    let spread = &mix["start_spread"];
    assert_eq!(u(spread, "/clients"), AGENTS as u64, "{spread}");
    let (min, max) = (
        spread["min_us"].as_i64().expect("min_us"),
        spread["max_us"].as_i64().expect("max_us"),
    );
    assert_eq!(u(spread, "/spread_us"), max.abs_diff(min), "{spread}");
    // The start went to each agent with the offset that puts its first send
    // back on the controller's clock, so however far the offset is off, no
    // client can have begun before its start.
    assert!(min >= 0, "a client began {} µs before its start: {spread}", -min);
    let latest = u(spread, "/latest_client");
    assert!((1..=AGENTS as u64).contains(&latest), "{spread}");
    // The uncertainty is half the round trip of the worst clock check made
    // before the mix (rtt_us is that round trip in whole µs, rounded down;
    // the uncertainty is half of it in ns rounded up, then µs rounded up).
    let env_agents = r["environment"]["agents"].as_array().expect("environment.agents");
    assert_eq!(env_agents.len(), AGENTS);
    let mut worst_rtt = 0;
    for (i, a) in env_agents.iter().enumerate() {
        assert_eq!(u(a, "/index"), i as u64, "{a}");
        let checks = a["clock"].as_array().expect("clock checks");
        let at: Vec<&str> = checks.iter().map(|c| c["at"].as_str().expect("at")).collect();
        assert_eq!(at, ["registration", "mix 1"], "agent {i}");
        worst_rtt = worst_rtt.max(u(&checks[1], "/rtt_us"));
    }
    let uncertainty = u(spread, "/clock_uncertainty_us");
    assert!(
        uncertainty >= worst_rtt.div_ceil(2) && uncertainty <= (worst_rtt + 1).div_ceil(2),
        "clocks known to ±{uncertainty} µs, but the worst check before the mix took {worst_rtt} µs"
    );

    // What the clients counted is what the server logged from their
    // addresses: every counted request logged, and at most the ones still
    // in flight at the mix's end logged beyond them.
    let log = std::fs::read_to_string(&access_log).expect("access log");
    let mut total = 0;
    for (i, row) in rows.iter().enumerate() {
        let (requests, errors, in_flight) = (u(row, "/requests"), u(row, "/errors_total"), u(row, "/in_flight"));
        assert_eq!(errors, 0, "client {}: {row}", i + 1);
        assert!(requests > 0, "client {}: {row}", i + 1);
        let from = format!("{} ", agents_at[i]);
        let logged = log.lines().filter(|l| l.starts_with(&from)).count() as u64;
        assert!(
            logged >= requests && logged <= requests + in_flight,
            "client {} on {}: the server logged {logged}, the client counted {requests} (+ {in_flight} in flight)",
            i + 1,
            agents_at[i]
        );
        total += requests;
    }
    assert_eq!(u(mix, "/requests"), total);
    // The preflight came from the controller, on the bridge.
    assert_eq!(log.lines().filter(|l| l.starts_with("198.18.0.1 ")).count(), 1);

    // Nothing of the namespaces is left.
    drop(net);
    let list = Command::new("ip")
        .args(["netns", "list"])
        .output()
        .expect("ip netns list");
    let list = String::from_utf8_lossy(&list.stdout);
    for ns in &namespaces {
        assert!(
            !list.lines().any(|l| l.split_whitespace().next() == Some(ns)),
            "{ns} is left:\n{list}"
        );
    }
    let links = Command::new("ip")
        .args(["-o", "link", "show"])
        .output()
        .expect("ip link");
    let links = String::from_utf8_lossy(&links.stdout);
    assert!(
        !links.contains(&format!(" {bridge}:")),
        "the bridge {bridge} is left:\n{links}"
    );
}
