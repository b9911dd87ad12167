//! The command line's first hour (issue 21): a suite never sends to a host
//! that is not its target, inputs are read with a bound and quoted briefly,
//! a closed stdout ends benchlab quietly, `http` stopped by Ctrl-C exits 130
//! with `"partial": true`, and rates and windows out of range are refused
//! by name. Each runs the real binary.

mod common;

use common::{run_benchlab, s, Serve};
use std::io::{BufRead, BufReader, Read};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn write(dir: &Path, name: &str, content: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, content).expect("write test file");
    p
}

/// Exit 2 with one short message: the bound on what a message quotes.
fn assert_usage_error_short(what: &str, out: &Output, phrases: &[&str]) {
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{what}: exit {}:\n{err}", out.status);
    assert!(
        err.len() < 2048,
        "{what}: {} bytes on stderr:\n{}",
        err.len(),
        &err[..2048.min(err.len())]
    );
    assert!(!err.contains("panicked"), "{what}: {err}");
    for p in phrases {
        assert!(err.contains(p), "{what}: no `{p}` in:\n{err}");
    }
}

/// A listener that counts the connections it accepts, until dropped.
struct Counter {
    port: u16,
    accepted: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

impl Counter {
    fn start() -> Counter {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind");
        l.set_nonblocking(true).expect("nonblocking");
        let port = l.local_addr().expect("addr").port();
        let accepted = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (a, st) = (Arc::clone(&accepted), Arc::clone(&stop));
        std::thread::spawn(move || {
            while !st.load(Ordering::Relaxed) {
                match l.accept() {
                    Ok(_) => {
                        a.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        Counter { port, accepted, stop }
    }

    /// Connections accepted so far, after a last look at the backlog.
    fn count(&self) -> u64 {
        std::thread::sleep(Duration::from_millis(50));
        self.accepted.load(Ordering::Relaxed)
    }
}

impl Drop for Counter {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn suite_with_url(target: &str, url: &str) -> String {
    format!(
        "name = \"abs\"\ntarget = \"{target}\"\n\n[defaults]\nlength = \"3s\"\nramp_up = \"1s\"\nramp_down = \"0s\"\n\n\
         [workloads.w]\n[[workloads.w.class]]\nname = \"a\"\npercent = 100\n\
         [[workloads.w.class.url]]\npath = \"/a.html\"\n[[workloads.w.class.url]]\npath = \"{url}\"\n\n\
         [[mix]]\nclients = 1\n"
    )
}

/// `run --target NEW` of a suite whose workload has an absolute URL on its
/// old target is refused before any request: neither host sees a
/// connection, and the message names the URL's line, the URL and both hosts.
#[test]
fn retargeting_refuses_absolute_urls_on_the_old_host() {
    let dir = tempfile::tempdir().expect("tempdir");
    let old = Counter::start();
    let new = Counter::start();
    let old_url = format!("http://127.0.0.1:{}/b.html", old.port);
    let suite = write(
        dir.path(),
        "abs.toml",
        &suite_with_url(&format!("http://127.0.0.1:{}", old.port), &old_url),
    );
    // As written, the URL is on the suite's target: the suite is fine.
    let out = run_benchlab(&["check", s(&suite)]);
    assert!(out.status.success(), "check: {}", text(&out.stderr));

    let new_target = format!("http://127.0.0.1:{}", new.port);
    let out = run_benchlab(&[
        "run",
        s(&suite),
        "--target",
        &new_target,
        "--out",
        s(&dir.path().join("results")),
    ]);
    let expect_line = format!(
        "abs.toml:15:1: URL `{old_url}` of workload `w` is on 127.0.0.1:{}",
        old.port
    );
    let expect_new = format!("but mix 1 runs against `{new_target}`");
    assert_usage_error_short(
        "run --target",
        &out,
        &[
            &expect_line,
            &expect_new,
            "expected a path such as `/b.html`",
            "--target",
        ],
    );
    assert_eq!(old.count(), 0, "the old host got connections");
    assert_eq!(new.count(), 0, "the new host got connections");
    assert!(!dir.path().join("results").exists());

    // A URL on a host the suite never names is refused at loading.
    let suite = write(
        dir.path(),
        "other.toml",
        &suite_with_url(&new_target, &format!("http://127.0.0.1:{}/b.html", old.port)),
    );
    let out = run_benchlab(&["check", s(&suite)]);
    assert_usage_error_short("check", &out, &["other.toml:15:1:", "but mix 1 runs against"]);
}

/// A proxy's log (absolute URLs, `*`, CONNECT) makes a workload of paths
/// only, with the count of reduced URLs in the summary; the workload then
/// runs on any target.
#[test]
fn from_log_reduces_proxy_style_lines_to_paths() {
    let dir = tempfile::tempdir().expect("tempdir");
    let line = |target: &str, method: &str| {
        format!("10.0.0.1 - - [10/Oct/2000:13:55:36 -0700] \"{method} {target} HTTP/1.1\" 200 100\n")
    };
    let mut log = String::new();
    for _ in 0..3 {
        log.push_str(&line("http://other.example:8080/p?q=1", "GET"));
    }
    log.push_str(&line("https://third.example/p?q=1", "GET"));
    log.push_str(&line("/p?q=1", "GET"));
    log.push_str(&line("HTTP://other.example", "GET"));
    log.push_str(&line("/index.html", "GET"));
    log.push_str(&line("*", "GET"));
    log.push_str(&line("*", "OPTIONS"));
    log.push_str(&line("other.example:443", "CONNECT"));
    let log_path = write(dir.path(), "proxy.log", &log);
    let out_path = dir.path().join("w.toml");
    let out = run_benchlab(&["workload", "from-log", s(&log_path), "--out", s(&out_path)]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("5 absolute URLs reduced to their paths"), "{stdout}");
    assert!(stdout.contains("GET, not a URL                  1"), "{stdout}");
    assert!(stdout.contains("successful GET                  7"), "{stdout}");
    let toml = std::fs::read_to_string(&out_path).expect("read workload");
    let paths: Vec<&str> = toml.lines().filter_map(|l| l.strip_prefix("path = ")).collect();
    assert_eq!(paths, ["\"/p?q=1\"", "\"/\"", "\"/index.html\""], "{toml}");
    let weights: Vec<&str> = toml.lines().filter_map(|l| l.strip_prefix("weight = ")).collect();
    assert_eq!(weights, ["5", "1", "1"], "{toml}");
    assert!(!toml.contains("other.example") || toml.starts_with('#'));
    assert!(
        toml.contains("# 5 absolute URLs reduced to their paths; 1 skipped"),
        "{toml}"
    );
}

/// `/dev/zero` as an access log, as a suite's workload file and a suite
/// with a 1 MB key: each exits 2 at once with a message of a few lines.
#[test]
fn endless_and_huge_inputs_are_refused_briefly() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = run_benchlab(&[
        "workload",
        "from-log",
        "/dev/zero",
        "--out",
        s(&dir.path().join("w.toml")),
    ]);
    assert_usage_error_short("from-log /dev/zero", &out, &["/dev/zero", "expected an access log"]);

    let suite = write(
        dir.path(),
        "zero.toml",
        "name = \"z\"\n[workloads.w]\nfile = \"/dev/zero\"\n[[mix]]\nclients = 1\n",
    );
    let out = run_benchlab(&["check", s(&suite)]);
    assert_usage_error_short(
        "file = /dev/zero",
        &out,
        &["zero.toml:2:1:", "workload `w`", "larger than"],
    );

    let key = "k".repeat(1 << 20);
    let suite = write(dir.path(), "key.toml", &format!("name = \"big\"\n{key} = 1\n"));
    let out = run_benchlab(&["check", s(&suite)]);
    assert_usage_error_short("a 1 MB key", &out, &["key.toml:2:1:", "(1048576 characters)"]);
}

/// A reader that stops after one line: benchlab ends quietly with 141
/// (a shell's status for SIGPIPE), never a panic (exit 101).
#[test]
fn a_closed_stdout_ends_quietly() {
    // `monitor` prints a line a sample: the second one meets the closed pipe.
    let mut child = Command::new(common::benchlab_bin())
        .args(["monitor", "--interval", "100ms", "--count", "100"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start benchlab monitor");
    let mut first = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut first)
        .expect("read a line");
    assert!(!first.is_empty());
    let mut err = String::new();
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut err)
        .expect("stderr");
    let status = child.wait().expect("wait");
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(status.code(), Some(141), "monitor | head -1: {status}\n{err}");

    // `from-log --out -` writes a workload larger than a pipe's buffer.
    let dir = tempfile::tempdir().expect("tempdir");
    let mut log = String::new();
    for i in 0..5000 {
        log.push_str(&format!("h - - [d] \"GET /page/{i}.html HTTP/1.1\" 200 {i}\n"));
    }
    let log_path = write(dir.path(), "big.log", &log);
    let mut child = Command::new(common::benchlab_bin())
        .args(["workload", "from-log", s(&log_path), "--out", "-"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start from-log");
    let mut first = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut first)
        .expect("read a line");
    assert!(first.starts_with("# benchlab workload"), "{first}");
    let mut err = String::new();
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut err)
        .expect("stderr");
    let status = child.wait().expect("wait");
    assert!(!err.contains("panicked") && !err.contains("Broken pipe"), "{err}");
    assert_eq!(status.code(), Some(141), "from-log --out - | head -1: {status}\n{err}");
}

/// `http -d 20s` stopped by SIGINT after about a second: exit 130, and
/// `--json` says `"partial": true` with what was measured.
#[test]
fn http_interrupted_exits_130_with_partial() {
    let root = tempfile::tempdir().expect("tempdir");
    write(root.path(), "a.html", "hello\n");
    let server = Serve::start(root.path(), &[]);
    let url = server.url("/a.html");
    let mut child = Command::new(common::benchlab_bin())
        .args(["http", "--json", "-t", "2", "-d", "20s", &url])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start benchlab http");
    std::thread::sleep(Duration::from_millis(1500));
    let pid = child.id().to_string();
    let kill = Command::new("kill").args(["-INT", &pid]).status().expect("kill");
    assert!(kill.success());
    let mut stdout = String::new();
    child
        .stdout
        .take()
        .expect("stdout")
        .read_to_string(&mut stdout)
        .expect("stdout");
    let mut err = String::new();
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut err)
        .expect("stderr");
    let status = child.wait().expect("wait");
    assert_eq!(status.code(), Some(130), "{status}\n{err}");
    let v = common::http_mix(stdout.as_bytes());
    assert_eq!(v["partial"], serde_json::Value::Bool(true), "{stdout}");
    assert!(common::u(&v, "/requests") > 0, "{stdout}");
    assert!(v["window_s"].as_f64().unwrap_or(99.0) < 19.0, "{stdout}");
}

/// Rates and windows out of range, refused by the flag's name before any
/// request (a listener sees no connection).
#[test]
fn http_rates_and_durations_out_of_range_are_refused() {
    let target = Counter::start();
    let url = format!("http://127.0.0.1:{}/", target.port);
    for (args, phrase) in [
        (
            vec!["--rate", "1e-19", "-d", "2s"],
            "--rate 1e-19: expected requests per second from 0.001 to 10,000,000",
        ),
        (
            vec!["--rate", "2e7", "-d", "2s"],
            "--rate 20000000: expected requests per second from 0.001 to 10,000,000",
        ),
        (vec!["-d", "1ns"], "--duration 1ns: expected at least 100ms"),
        (vec!["-d", "99ms"], "--duration 99ms: expected at least 100ms"),
        (
            vec!["--find-peak", "--step-duration", "50ms"],
            "--step-duration 50ms: expected at least 100ms",
        ),
    ] {
        let mut all = vec!["http"];
        all.extend(args.iter().copied());
        all.push(&url);
        let out = run_benchlab(&all);
        assert_usage_error_short(&format!("{all:?}"), &out, &[phrase]);
    }
    assert_eq!(target.count(), 0);
}

/// `--ca-file /dev/zero` is refused at the PEM bound before any request.
#[test]
fn an_endless_ca_file_is_refused_at_its_bound() {
    let target = Counter::start();
    let url = format!("https://127.0.0.1:{}/", target.port);
    let out = run_benchlab(&["http", "--ca-file", "/dev/zero", "-d", "1s", &url]);
    assert_usage_error_short(
        "--ca-file /dev/zero",
        &out,
        &[
            "/dev/zero",
            "larger than 4 MiB, the most benchlab reads for a certificate or key",
        ],
    );
    assert_eq!(target.count(), 0);
}

/// `benchlab compare A B | head -1` with a reader already gone: exit 141
/// and no panic (it was 101 with a backtrace).
#[test]
fn compare_into_a_closed_pipe_ends_quietly() {
    let root = tempfile::tempdir().expect("tempdir");
    write(root.path(), "a.html", "hello\n");
    let server = Serve::start(root.path(), &[]);
    let dir = tempfile::tempdir().expect("tempdir");
    let suite = write(
        dir.path(),
        "tiny.toml",
        &format!(
            "name = \"tiny\"\ntarget = \"{}\"\n[defaults]\nlength = \"2s\"\nramp_up = \"0.5s\"\nramp_down = \"0.5s\"\n\
             [workloads.w]\n[[workloads.w.class]]\nname = \"a\"\npercent = 100\n[[workloads.w.class.url]]\npath = \"/a.html\"\n\
             [[mix]]\nclients = 1\n",
            server.url("")
        ),
    );
    let results = dir.path().join("results");
    let out = run_benchlab(&["run", s(&suite), "--out", s(&results)]);
    common::assert_success("benchlab run tiny", &out);
    let mut child = Command::new(common::benchlab_bin())
        .args(["compare", s(&results), s(&results)])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start compare");
    // The reader is gone before compare writes its first line.
    drop(child.stdout.take());
    let mut err = String::new();
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut err)
        .expect("stderr");
    let status = child.wait().expect("wait");
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(status.code(), Some(141), "compare | head -1: {status}\n{err}");
}
