//! HTTP/2 with everything HTTP/1 has: the open loop (`--rate`) with both
//! histograms and a stall injected by stopping nginx (SIGSTOP) for 2 s,
//! `users_waiting`, the `BENCHLAB_IO` backends, `--find-peak` and a suite
//! mix with `http = "2"` and a rate — against the real binary and nginx's
//! h2c listener, counted against nginx's access log where it can be exact
//! (docs/counting.md, "Open loop" and "HTTP/2").

mod common;

use common::servers::{Nginx, NginxOpts, SIZE_4K};
use common::{benchlab_bin, http_json, run_benchlab, u};
use serde_json::Value;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

fn h2c() -> Nginx {
    Nginx::start(NginxOpts {
        http2: true,
        // One connection may carry every stream of a test.
        keepalive_requests: 100_000,
        ..NginxOpts::default()
    })
}

fn signal(pid: u32, sig: &str) {
    let ok = Command::new("kill")
        .args([&format!("-{sig}"), &pid.to_string()])
        .status()
        .expect("run kill");
    assert!(ok.success(), "kill -{sig} {pid}");
}

/// Every send the schedule made either ended (a response or an error) or
/// was in flight at the end; nginx logged each answered one, plus the
/// preflight's request.
fn assert_sends_accounted(server: &Nginx, r: &Value) {
    let sends = u(r, "/open_loop/sends");
    let done = u(r, "/requests") + u(r, "/errors_total");
    assert_eq!(sends, done + u(r, "/in_flight"), "{r}");
    assert_eq!(u(r, "/http2/streams_opened"), sends, "one stream per send: {r}");
    let lines = server.access_log_lines_at_least(u(r, "/requests") as usize + 1);
    let logged = lines.len() as u64 - 1;
    // A stream in flight at the end may have been answered after benchlab
    // stopped reading: the log holds it, benchlab does not count it.
    assert!(
        logged >= u(r, "/requests") && logged <= done + u(r, "/in_flight"),
        "nginx logged {logged}: {r}"
    );
    assert!(lines
        .iter()
        .skip(1)
        .all(|l| l.version() == "HTTP/2.0" && l.status == 200));
}

/// `--http 2 --rate 200 -d 2s` on one OS thread: the constant schedule
/// makes exactly 400 sends (k/200 s for k = 0…399), each a stream, all
/// answered, or due and never sent (a client late at the end) — the sends,
/// requests and nginx's log agree.
#[test]
fn h2_rate_sends_its_schedule_exactly() {
    let server = h2c();
    let url = server.url("/4k.html");
    let r = http_json(&[
        "--http",
        "2",
        "--rate",
        "200",
        "--max-in-flight",
        "20",
        "--streams",
        "10",
        "--os-threads",
        "1",
        "-d",
        "2s",
        &url,
    ]);
    assert_eq!(r["http_command"]["mode"], "open", "{r}");
    // A client that ran late at the end counts its last sends unsent.
    let sends = u(&r, "/open_loop/sends");
    assert_eq!(sends + u(&r, "/open_loop/unsent"), 400, "{r}");
    assert!(sends >= 360, "{r}");
    assert_eq!(u(&r, "/errors_total"), 0, "{r}");
    assert_sends_accounted(&server, &r);
    assert_eq!(u(&r, "/body_bytes"), u(&r, "/requests") * SIZE_4K, "{r}");
    // 20 streams in flight at most over 10 streams a connection: 2
    // connections; a server this fast needs only the first, unless a
    // stall of 50 ms (a loaded machine) held 10 streams at once.
    assert_eq!(u(&r, "/http2/connections"), 2, "{r}");
    let opened = u(&r, "/connections_opened");
    assert!((1..=2).contains(&opened), "{r}");
    assert_eq!(u(&r, "/open_loop/peak_connections"), opened, "{r}");
    assert!(r["open_loop"]["latency_as_sent_us"]["p50"].as_u64().is_some(), "{r}");
    assert_eq!(u(&r, "/users_waiting"), 0, "{r}");
}

/// The open loop's point, for HTTP/2: a 2 s stall of the server shows in
/// the corrected p99 (from the intended send), not in the as-sent one.
#[test]
fn h2_stall_shows_in_the_corrected_latency_but_not_the_as_sent() {
    let server = h2c();
    let pid = server.pid();
    // 200/s for 6 s with at most 4 streams outstanding: while nginx is
    // stopped, 4 streams hang and the other sends wait for them.
    let child = Command::new(benchlab_bin())
        .args(["http", "--json", "--http", "2", "--rate", "200"])
        .args(["--max-in-flight", "4", "--streams", "4", "--os-threads", "1"])
        .args(["-d", "6s", "--timeout", "10s", &server.url("/4k.html")])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start benchlab http");
    std::thread::sleep(Duration::from_millis(1500));
    signal(pid, "STOP");
    std::thread::sleep(Duration::from_secs(2));
    signal(pid, "CONT");
    let out = child.wait_with_output().expect("benchlab http");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let r: Value = common::http_mix(&out.stdout);
    assert_eq!(u(&r, "/errors_total"), 0, "{r}");
    assert!(u(&r, "/requests") >= 600, "{r}");
    // Every request meant for the stall's first half second completed
    // after it ended, at least 1.5 s late: 100 of at most 1,200, far above
    // 1 %.
    let p99 = u(&r, "/latency_us/p99");
    assert!(p99 >= 1_500_000, "corrected p99 {p99} µs: {r}");
    // As sent, only the 4 streams caught by the stall took it; the sends
    // that waited went out after it, to a server that answered at once.
    let as_sent = u(&r, "/open_loop/latency_as_sent_us/p99");
    assert!(as_sent < 1_000_000, "as-sent p99 {as_sent} µs: {r}");
    assert!(u(&r, "/open_loop/latency_as_sent_us/max") >= 1_500_000, "{r}");
    assert!(u(&r, "/open_loop/late_sends") >= 300, "{r}");
    assert!(u(&r, "/open_loop/max_in_flight_hit") >= 100, "{r}");
    // The 4 streams share one connection (4 streams each).
    assert_eq!(u(&r, "/open_loop/peak_connections"), 1, "{r}");
    assert_sends_accounted(&server, &r);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("sends left more than 2 ms after their intended time"),
        "{err}"
    );
}

/// Users whose connection never comes up (a listener that accepts in the
/// kernel and never speaks) sent nothing: at the end they are waiting, not
/// in flight. (Before, HTTP/2 reported them in flight and 0 waiting.)
#[test]
fn h2_users_waiting_for_a_connection_are_waiting_not_in_flight() {
    let silent = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/", silent.local_addr().expect("addr"));
    let r = http_json(&[
        "--http",
        "2",
        "--no-preflight",
        "-t",
        "4",
        "--streams",
        "2",
        "--os-threads",
        "1",
        "-d",
        "500ms",
        "--timeout",
        "30s",
        &url,
    ]);
    assert_eq!(u(&r, "/users_waiting"), 4, "{r}");
    assert_eq!(u(&r, "/in_flight"), 0, "{r}");
    assert_eq!(u(&r, "/requests"), 0, "{r}");
    assert_eq!(u(&r, "/users_arrived"), 0, "{r}");
}

/// A `-n` run of 600 streams over 2 connections, its counts exact against
/// nginx's log.
fn exact_run(io: &str, server: &Nginx) -> Output {
    Command::new(benchlab_bin())
        .args([
            "http",
            "--json",
            "--http",
            "2",
            "-n",
            "600",
            "-t",
            "8",
            "--streams",
            "4",
        ])
        .args(["--os-threads", "1", &server.url("/4k.html")])
        .env("BENCHLAB_IO", io)
        .output()
        .expect("run benchlab")
}

/// `BENCHLAB_IO` applies to HTTP/2 as to HTTP/1: level-triggered epoll
/// and io_uring (multishot receives, SENDMSG from a per-connection
/// outbox) each run it exactly (requests = responses = nginx's log lines,
/// body bytes = nginx's); io_uring over TLS is refused by name, as for
/// HTTP/1.
#[test]
fn h2_on_each_io_backend_exactly() {
    let server = h2c();
    let mut logged = 0;
    for io in ["epoll-lt", "uring"] {
        let out = exact_run(io, &server);
        assert!(out.status.success(), "{io}: {}", String::from_utf8_lossy(&out.stderr));
        let r: Value = common::http_mix(&out.stdout);
        assert_eq!(u(&r, "/requests"), 600, "{io}: {r}");
        assert_eq!(u(&r, "/errors_total"), 0, "{io}: {r}");
        assert_eq!(u(&r, "/in_flight"), 0, "{io}: {r}");
        assert_eq!(u(&r, "/http2/streams_opened"), 600, "{io}: {r}");
        assert_eq!(u(&r, "/connections_opened"), 2, "{io}: {r}");
        // 600 requests and the preflight's.
        logged += 601;
        let lines = server.access_log_lines_at_least(logged);
        assert_eq!(lines.len(), logged, "{io}");
        let body: u64 = lines[logged - 600..].iter().map(|l| l.body_bytes_sent).sum();
        assert_eq!(body, u(&r, "/body_bytes"), "{io}");
        assert!(lines[logged - 600..]
            .iter()
            .all(|l| l.version() == "HTTP/2.0" && l.status == 200));
    }
    let tls = Nginx::start(NginxOpts {
        tls: true,
        http2: true,
        ..NginxOpts::default()
    });
    let out = Command::new(benchlab_bin())
        .args(["http", "--http", "2", "-n", "5", "--insecure", &tls.url("/4k.html")])
        .env("BENCHLAB_IO", "uring")
        .output()
        .expect("run benchlab");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("BENCHLAB_IO=uring drives http:// URLs only"), "{err}");
    // Only the preflight's request reached the server.
    assert_eq!(tls.access_log_lines_at_least(1).len(), 1);
}

/// `--find-peak --http 2` grows the users, and the connections with them
/// (a stream each): 2, 4, 8 users over 4 streams a connection are 1, 1
/// and 2 connections.
#[test]
fn h2_find_peak_grows_users_and_connections() {
    let server = h2c();
    let url = server.url("/4k.html");
    let out = run_benchlab(&[
        "http",
        "--json",
        "--http",
        "2",
        "--streams",
        "4",
        "--find-peak",
        "-t",
        "2",
        "--peak-max-threads",
        "8",
        "--step-duration",
        "200ms",
        "--os-threads",
        "1",
        &url,
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let r: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(r["schema"], "benchlab.results/1", "{r}");
    // A mix per load of the search, each with its step.
    let steps = r["mixes"].as_array().expect("mixes");
    assert!(steps.len() >= 3, "{r}");
    for s in steps {
        let threads = u(s, "/threads");
        assert_eq!(u(s, "/http2/connections"), threads.div_ceil(4), "{s}");
        assert!(u(s, "/requests") > 0, "{s}");
        assert_eq!(u(s, "/errors_total"), 0, "{s}");
    }
    // The search doubles from 2 up to its limit (steps are listed in load
    // order; the grown ones by step number).
    let mut grown: Vec<(u64, u64)> = steps
        .iter()
        .filter(|s| s["search"]["kind"] == "grow")
        .map(|s| (u(s, "/search/step"), u(s, "/threads")))
        .collect();
    grown.sort_unstable();
    let grown: Vec<u64> = grown.into_iter().map(|(_, t)| t).collect();
    assert_eq!(grown, [2, 4, 8], "{r}");
    // --connections would fix what the search grows: refused by name.
    let out = run_benchlab(&["http", "--http", "2", "--connections", "2", "--find-peak", &url]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("drop --connections"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A suite mix with `http = "2"` and a rate runs an open loop of streams:
/// the mix's sends are its schedule's, all answered.
#[test]
fn h2_suite_mix_runs_an_open_loop_at_its_rate() {
    let server = h2c();
    let work = tempfile::tempdir().expect("tempdir");
    let suite = work.path().join("suite.toml");
    std::fs::write(
        &suite,
        format!(
            r#"name = "h2-rate"
target = "{}"
seed = 3

[defaults]
length = "2s"
ramp_up = "0s"
ramp_down = "0s"
timeout = "5s"

[workloads.one]
[[workloads.one.class]]
name = "page"
percent = 100
[[workloads.one.class.url]]
path = "/4k.html"
size = 4096

[[mix]]
clients = 1
http = "2"
rate = 100
max_in_flight = 8
streams_per_connection = 4
"#,
            server.url("")
        ),
    )
    .expect("write suite");
    let out_dir = work.path().join("out");
    let out = run_benchlab(&["run", common::s(&suite), "--out", common::s(&out_dir)]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let results: Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("results.json")).expect("results.json"))
            .expect("JSON");
    let mix = &results["mixes"][0];
    // 8 streams in flight at most, 4 a connection: 2 connections.
    assert_eq!(u(mix, "/http2/connections"), 2, "{mix}");
    assert_eq!(u(mix, "/errors_total"), 0, "{mix}");
    // 100/s over the 2 s window: 200 sends meant, all in it.
    let requests = u(mix, "/requests");
    assert!((195..=200).contains(&requests), "{mix}");
    let lines = server.access_log_lines_at_least(requests as usize + 1);
    assert!(lines.iter().all(|l| l.status == 200));
}

/// A child killed (and reaped) when dropped, so a failing test leaves no
/// agent or controller behind.
struct Proc(Option<std::process::Child>);

impl Proc {
    fn spawn(args: &[&str]) -> Proc {
        let c = Command::new(benchlab_bin())
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn benchlab");
        Proc(Some(c))
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

/// `http --http 2 --agents 2 -n 400`: the engine's HTTP/2 plan travels to
/// each agent with its share of the requests and connections; nginx logged
/// exactly the 400 streams (plus the controller's preflight), each agent's
/// from its own loopback address.
#[test]
fn h2_across_two_agents_runs_exactly_the_requests_asked_for() {
    let server = h2c();
    let work = tempfile::tempdir().expect("tempdir");
    let lab = work.path().join("certs");
    let certs = run_benchlab(&["lab", "certs", "--out", common::s(&lab), "--agents", "2"]);
    common::assert_success("lab certs", &certs);
    let port = common::free_port();
    let listen = format!("127.0.0.1:{port}");
    let url = server.url("/4k.html");
    let ctl = Proc::spawn(&[
        "http",
        &url,
        "--http",
        "2",
        "--streams",
        "4",
        "-t",
        "8",
        "-n",
        "400",
        "--json",
        "--agents",
        "2",
        "--listen",
        &listen,
        "--tls-dir",
        common::s(&lab),
    ]);
    let agents: Vec<Proc> = (0..2)
        .map(|i| {
            let (cert, key) = (lab.join(format!("agent-{i}.pem")), lab.join(format!("agent-{i}.key")));
            let index = i.to_string();
            Proc::spawn(&[
                "agent",
                "--controller",
                &listen,
                "--cert",
                common::s(&cert),
                "--key",
                common::s(&key),
                "--ca",
                common::s(&lab.join("ca.pem")),
                "--index",
                &index,
            ])
        })
        .collect();
    let out = ctl.wait_output();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    for a in agents {
        let o = a.wait_output();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let r: Value = common::http_mix(&out.stdout);
    assert_eq!(u(&r, "/requests"), 400, "{r}");
    assert_eq!(u(&r, "/errors_total"), 0, "{r}");
    assert_eq!(u(&r, "/in_flight"), 0, "{r}");
    assert_eq!(u(&r, "/body_bytes"), 400 * SIZE_4K, "{r}");
    // 8 users over 4 streams a connection: 2 connections, one per client.
    assert_eq!(u(&r, "/connections_opened"), 2, "{r}");
    let lines = server.access_log_lines_at_least(401);
    assert_eq!(lines.len(), 401, "400 streams and the preflight's request");
    assert!(lines[1..].iter().all(|l| l.version() == "HTTP/2.0" && l.status == 200));
    // Each client's 200 requests came from its own address.
    let mut by_addr = std::collections::BTreeMap::new();
    for l in &lines[1..] {
        *by_addr.entry(l.remote_addr.clone()).or_insert(0u64) += 1;
    }
    assert_eq!(by_addr.values().copied().collect::<Vec<_>>(), [200, 200], "{by_addr:?}");
}
