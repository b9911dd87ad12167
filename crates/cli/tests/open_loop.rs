//! `benchlab http --rate`: the open loop against `benchlab serve`, the real
//! binaries, with a stall injected by stopping the server (SIGSTOP) for 2 s.
//! Assertions are on counts and shares that a loaded machine cannot break;
//! docs/counting.md, "Open loop", says what is counted.

mod common;

use common::{http_json, run_benchlab, u, Serve};
use std::process::{Command, Stdio};
use std::time::Duration;

fn site() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir(dir.path().join("www")).expect("mkdir www");
    std::fs::write(dir.path().join("www/a.txt"), b"open loop\n").expect("write a.txt");
    dir
}

fn signal(pid: u32, sig: &str) {
    let ok = Command::new("kill")
        .args([&format!("-{sig}"), &pid.to_string()])
        .status()
        .expect("run kill");
    assert!(ok.success(), "kill -{sig} {pid}");
}

#[test]
fn keeps_the_rate_when_the_server_keeps_up() {
    let dir = site();
    let serve = Serve::start(&dir.path().join("www"), &[]);
    let r = http_json(&["--rate", "400", "-d", "3s", &serve.url("/a.txt")]);
    assert_eq!(r["http_command"]["mode"], "open");
    assert_eq!(r["open_loop"]["arrival"], "constant");
    assert_eq!(u(&r, "/threads"), 0);
    // 3 s at 400/s: 1,200 intended sends, all before the end; those a
    // client late at the end did not send are counted apart.
    let sends = u(&r, "/open_loop/sends");
    assert!((1188..=1200).contains(&sends), "sends {sends}: {r}");
    assert_eq!(sends + u(&r, "/open_loop/unsent"), 1200, "{r}");
    let done = u(&r, "/requests") + u(&r, "/errors_total");
    assert!((1188..=1200).contains(&done), "completed {done}: {r}");
    assert_eq!(u(&r, "/errors_total"), 0, "{r}");
    let per_sec = r["requests_per_sec"].as_f64().expect("requests_per_sec");
    assert!((per_sec - 400.0).abs() <= 4.0, "achieved {per_sec}/s, asked 400/s");
    let sends_per_sec = r["open_loop"]["sends_per_sec"].as_f64().expect("sends_per_sec");
    assert!(
        (sends_per_sec - 400.0).abs() <= 4.0,
        "sent {sends_per_sec}/s, asked 400/s"
    );
    assert_eq!(u(&r, "/open_loop/max_in_flight_hit"), 0, "{r}");
    assert_eq!(u(&r, "/open_loop/late_tolerance_us"), 2000);
    // A fast server needs few connections: idle ones are reused.
    assert!(u(&r, "/connections_opened") < 100, "{r}");
    assert!(r["open_loop"]["latency_as_sent_us"]["p50"].as_u64().is_some(), "{r}");

    // Poisson arrivals: the same mean rate, seeded.
    let p = http_json(&[
        "--rate",
        "400",
        "--arrival",
        "poisson",
        "-d",
        "3s",
        &serve.url("/a.txt"),
    ]);
    assert_eq!(p["open_loop"]["arrival"], "poisson");
    let sends = u(&p, "/open_loop/sends");
    // 1,200 expected; a Poisson count's standard deviation is √1200 ≈ 35.
    assert!((1050..=1350).contains(&sends), "poisson sends {sends}");
}

#[test]
fn a_stall_shows_in_the_corrected_latency_but_not_the_as_sent() {
    let dir = site();
    let serve = Serve::start(&dir.path().join("www"), &[]);
    let pid = serve.child.id();
    // 200/s for 6 s with at most 4 requests outstanding: while the server
    // is stopped, 4 requests hang and the other sends wait for them.
    let child = Command::new(common::benchlab_bin())
        .args([
            "http",
            "--json",
            "--rate",
            "200",
            "--max-in-flight",
            "4",
            "--os-threads",
            "1",
        ])
        .args(["-d", "6s", "--timeout", "10s", &serve.url("/a.txt")])
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
    let r = common::http_mix(&out.stdout);
    let done = u(&r, "/requests");
    assert_eq!(u(&r, "/errors_total"), 0, "{r}");
    // The 2 s stall lies inside the 6 s run: every request meant to be sent
    // in its first half second completed after it ended, at least 1.5 s
    // late — 100 of at most 1,200 requests, far above 1 % — so the
    // corrected p99 is at least 1.5 s.
    assert!(done >= 600, "{r}");
    let p99 = u(&r, "/latency_us/p99");
    assert!(p99 >= 1_500_000, "corrected p99 {p99} µs: {r}");
    // As sent, only the 4 requests caught in flight took the stall (0.7 %
    // of 600 at the least): the sends that waited went out after it, to a
    // server that answered at once. A closed loop sees this.
    let as_sent = u(&r, "/open_loop/latency_as_sent_us/p99");
    assert!(as_sent < 1_000_000, "as-sent p99 {as_sent} µs: {r}");
    assert!(u(&r, "/open_loop/latency_as_sent_us/max") >= 1_500_000, "{r}");
    // The 4 requests caught by the stall held 4 connections open at once,
    // and the cap allowed no more.
    assert_eq!(u(&r, "/open_loop/peak_connections"), 4, "{r}");
    assert_eq!(
        r["open_loop"]["peak_connections_upper_bound"], false,
        "one client's peak is exact: {r}"
    );
    // About 400 sends fell behind, and the cap was what held them: many
    // found every slot busy when they came due (those due while a burst
    // was going out after the stall found a slot and are late only).
    assert!(u(&r, "/open_loop/late_sends") >= 300, "{r}");
    assert!(u(&r, "/open_loop/max_in_flight_hit") >= 100, "{r}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("sends left more than 2 ms after their intended time"),
        "{err}"
    );
}

#[test]
fn a_slow_server_makes_sends_late() {
    let dir = site();
    let serve = Serve::start(&dir.path().join("www"), &[]);
    // 200 ms per request with 5 outstanding: at most 25/s, asked 100/s.
    let r = http_json(&[
        "--rate",
        "100",
        "--max-in-flight",
        "5",
        "-d",
        "2s",
        &serve.url("/spice/inproc/sleep/a.txt?ms=200"),
    ]);
    let sends = u(&r, "/open_loop/sends");
    assert!(sends <= 60, "sends {sends}: at most 5 + 2 s × 25/s could leave: {r}");
    assert!(u(&r, "/open_loop/late_sends") + 5 >= sends, "{r}");
    assert!(u(&r, "/open_loop/max_in_flight_hit") >= 10, "{r}");
    // Each of the 5 request slots opened one keep-alive connection when it
    // was first needed and kept it; all 5 were busy at once.
    assert_eq!(u(&r, "/connections_opened"), 5, "{r}");
    assert_eq!(u(&r, "/open_loop/peak_connections"), 5, "{r}");
    assert_eq!(r["open_loop"]["client_peak_connections"], serde_json::json!([5]), "{r}");
    // The cap being hit is said, naming it.
    let warnings = r["warnings"].to_string();
    assert!(
        warnings.contains("waited") && warnings.contains("--max-in-flight 5 requests outstanding"),
        "{warnings}"
    );
    // Latency from the intended times grows with the backlog; as sent it
    // stays near the server's 200 ms.
    assert!(
        u(&r, "/latency_us/max") > u(&r, "/open_loop/latency_as_sent_us/max"),
        "{r}"
    );
    assert!(u(&r, "/open_loop/latency_as_sent_us/p50") < 1_000_000, "{r}");
}

/// A fast server at a low rate needs about one connection: each response
/// is back long before the next send, so the idle connection is reused.
/// The terminal says how many were opened and how many were open at once.
#[test]
fn a_fast_server_at_a_low_rate_needs_few_connections() {
    let dir = site();
    let serve = Serve::start(&dir.path().join("www"), &[]);
    let out = run_benchlab(&[
        "http",
        "--rate",
        "20",
        "--os-threads",
        "1",
        "-d",
        "2s",
        &serve.url("/a.txt"),
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("connections "))
        .unwrap_or_else(|| panic!("no connections line:\n{text}"));
    // "connections  N opened, at most M open at once, …"
    let number_before = |word: &str| -> u64 {
        let head = line.split(word).next().unwrap_or("");
        let n = head.split_whitespace().last().unwrap_or("");
        n.replace(',', "")
            .parse()
            .unwrap_or_else(|_| panic!("no number before {word:?} in {line:?}"))
    };
    let opened = number_before(" opened");
    let peak = number_before(" open at once");
    // 40 sends 50 ms apart: a response slower than 50 ms (a busy machine)
    // opens a second connection, but never more than a few.
    assert!((1..=opened).contains(&peak), "{line}");
    assert!(peak <= 3, "{line}");
}

/// A server that closes idle keep-alive connections after 20 ms, sent to
/// every 200 ms by two OS threads in turn: each send finds its thread's
/// idle connection closed and opens a new one, so connections are opened
/// one after another and never more than one is open. A count that took
/// each thread's closed idle connection for an open one would see one per
/// thread at once: 2.
#[test]
fn connections_the_server_closed_while_idle_are_not_counted_open() {
    let dir = site();
    let serve = Serve::start(&dir.path().join("www"), &["--keepalive-timeout", "20ms"]);
    let r = http_json(&["--rate", "5", "--os-threads", "2", "-d", "2s", &serve.url("/a.txt")]);
    assert_eq!(u(&r, "/errors_total"), 0, "{r}");
    // 10 sends, 5 per thread; every one after a thread's first re-opens
    // a connection the server closed.
    assert_eq!(u(&r, "/open_loop/sends"), 10, "{r}");
    assert_eq!(u(&r, "/connections_opened"), 10, "{r}");
    assert_eq!(u(&r, "/reconnects"), 8, "{r}");
    assert_eq!(u(&r, "/open_loop/peak_connections"), 1, "{r}");
}

#[test]
fn bad_open_loop_flags_are_usage_errors() {
    for (args, says) in [
        (vec!["--rate", "0"], "--rate 0: expected requests per second from 0.001"),
        (vec!["--rate", "abc"], "invalid value 'abc' for '--rate <R>'"),
        (vec!["--rate", "10", "--threads", "5"], "cannot be used with"),
        (vec!["--arrival", "poisson"], "--rate"),
        (
            vec!["--rate", "10", "--max-in-flight", "0"],
            "--max-in-flight must be at least 1",
        ),
        (
            vec!["--rate", "10", "--think-time", "1s"],
            "an open loop (--rate) has none",
        ),
        (vec!["--rate", "10", "-n", "5"], "cannot be used with"),
        (vec!["--rate", "10", "--find-peak"], "cannot be used with"),
    ] {
        let mut all = vec!["http"];
        all.extend(args.iter());
        all.push("http://127.0.0.1:9/");
        let out = run_benchlab(&all);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

/// Two mixes of 3 s (window 2 s): a closed loop, then an open loop at 300
/// requests/s shared by 2 clients, Poisson in the second.
const SUITE: &str = r#"
name = "open"
description = "an open-loop mix"
seed = 3

[defaults]
ramp_up = "500ms"
ramp_down = "500ms"
length = "3s"
threads_per_client = 2
max_in_flight = 50

[workloads.w]
[[workloads.w.class]]
name = "a"
percent = 100
[[workloads.w.class.url]]
path = "/a.txt"

[[mix]]
clients = 1
[[mix]]
clients = 2
rate = 300
[[mix]]
clients = 2
rate = 300
arrival = "poisson"
"#;

#[test]
fn a_suite_mix_runs_an_open_loop_at_its_rate() {
    let dir = site();
    let serve = Serve::start(&dir.path().join("www"), &[]);
    let suite = dir.path().join("open.toml");
    std::fs::write(&suite, SUITE).expect("write the suite");
    let res = dir.path().join("results");
    let out = run_benchlab(&[
        "run",
        suite.to_str().expect("UTF-8"),
        "--target",
        &format!("http://{}", serve.addr),
        "--out",
        res.to_str().expect("UTF-8"),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("mix 2 (w): 2 clients × open loop at 300 requests/s (constant arrivals)"),
        "{stderr}"
    );
    assert!(
        stderr.contains("mix 2: ")
            && stderr.contains(" sent late, as-sent p99 ")
            && stderr.contains(" connections open at once"),
        "{stderr}"
    );
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(res.join("results.json")).expect("results.json")).expect("JSON");
    let mixes = json["mixes"].as_array().expect("mixes");
    assert!(mixes[0].get("open_loop").is_none(), "a closed mix has no open_loop");
    assert_eq!(u(&mixes[0], "/threads"), 2);
    let m = &mixes[1];
    assert_eq!(u(m, "/threads"), 0);
    assert_eq!(m["open_loop"]["arrival"], "constant");
    assert_eq!(m["open_loop"]["rate"].as_f64(), Some(300.0));
    assert_eq!(u(m, "/open_loop/max_in_flight"), 50);
    // The window is 2 s: 600 intended sends in it, all clients together.
    let sends = u(m, "/open_loop/sends");
    assert!((594..=606).contains(&sends), "sends {sends}: {m}");
    let done = u(m, "/requests") + u(m, "/errors_total");
    assert!((588..=606).contains(&done), "completed {done}");
    assert!(m["open_loop"]["latency_as_sent_us"]["p50"].as_u64().is_some());
    // Two clients: the mix's peak is the sum of theirs, an upper bound.
    let peaks: Vec<u64> = m["open_loop"]["client_peak_connections"]
        .as_array()
        .expect("client_peak_connections")
        .iter()
        .map(|p| p.as_u64().expect("a count"))
        .collect();
    assert_eq!(peaks.len(), 2, "{m}");
    assert!(peaks.iter().all(|&p| (1..=50).contains(&p)), "{peaks:?}");
    assert_eq!(u(m, "/open_loop/peak_connections"), peaks.iter().sum::<u64>());
    assert_eq!(m["open_loop"]["peak_connections_upper_bound"], true);
    // The as-sent histograms are kept beside the corrected ones, for the
    // mix and per class; a closed mix has none.
    for mix in &mixes[1..] {
        let h = &mix["histograms"];
        assert!(h["latency_as_sent_us"].as_str().is_some_and(|b| !b.is_empty()), "{h}");
        assert!(h["classes_as_sent"]["a"].as_str().is_some_and(|b| !b.is_empty()), "{h}");
    }
    let closed = &mixes[0]["histograms"];
    assert!(closed.get("latency_as_sent_us").is_none() && closed.get("classes_as_sent").is_none());
    let p = &mixes[2];
    assert_eq!(p["open_loop"]["arrival"], "poisson");
    // 600 expected, standard deviation √600 ≈ 24.
    let sends = u(p, "/open_loop/sends");
    assert!((500..=700).contains(&sends), "poisson sends {sends}");

    // results.json still matches its schema.
    let schema: serde_json::Value = serde_json::from_slice(
        &std::fs::read(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/results.schema.json"))
            .expect("schema"),
    )
    .expect("schema JSON");
    let validator = jsonschema::validator_for(&schema).expect("schema compiles");
    let errors: Vec<String> = validator.iter_errors(&json).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?}");
}
