//! `benchlab run --web 127.0.0.1:PORT`: the live view, read by headless
//! Chromium while the run goes on. The target is a server whose requests
//! sleep 10 ms on a pool far larger than the load, so a mix's seconds come
//! at the pace of the clock whatever the machine does. The test:
//!
//! - loads the live page twice during the run (`--dump-dom` after the
//!   page's script ran) and sees the per-second chart grow: more points the
//!   second time, each point's requests equal to the second's in the final
//!   results.json, and the page updated by its own polling (it starts
//!   empty and fills only from `/live.json`);
//! - saves a screenshot of the live view (`target/live-view-screenshot.png`)
//!   for a person to look at;
//! - once the run has ended (`--web-linger` keeps serving), reads `/` and
//!   gets report.html byte for byte, as written to the results directory;
//! - is read-only (a POST gets 405), and `--web` on a non-loopback address
//!   is refused before any load (exit 2) unless `--web-allow-remote`.
//!
//! Waits are for events (a second merged, the run ended), each with a
//! generous deadline; nothing asserts on elapsed time.

mod common;
#[path = "support/pool_server.rs"]
#[allow(dead_code)]
mod pool_server;

use common::{free_port, run_benchlab, s, wait_for_port};
use serde_json::Value;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// `(status, body)` of one request to `127.0.0.1:port`.
fn http(port: u16, method: &str, path: &str) -> (u16, Vec<u8>) {
    let mut c = TcpStream::connect(("127.0.0.1", port)).expect("connect to the live view");
    c.set_read_timeout(Some(Duration::from_secs(30))).expect("timeout");
    write!(
        c,
        "{method} {path} HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n"
    )
    .expect("send");
    let mut all = Vec::new();
    c.read_to_end(&mut all).expect("read the answer");
    let end = all
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a head in the answer");
    let head = String::from_utf8_lossy(&all[..end]);
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|x| x.parse().ok())
        .unwrap_or_else(|| panic!("no status in {head}"));
    (status, all[end + 4..].to_vec())
}

fn snapshot(port: u16) -> Value {
    let (status, body) = http(port, "GET", "/live.json");
    assert_eq!(status, 200);
    serde_json::from_slice(&body).expect("live.json is JSON")
}

/// Polls `/live.json` until `done` says so; panics after two minutes
/// (a deadline for a broken run, not a timing assertion).
fn wait_until(port: u16, what: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let v = snapshot(port);
        if done(&v) {
            return v;
        }
        assert!(Instant::now() < deadline, "{what} never happened: {v}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn chromium() -> PathBuf {
    let names = ["chromium", "chromium-browser", "google-chrome", "google-chrome-stable"];
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .flat_map(|d| names.iter().map(move |n| d.join(n)))
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!(
                "Chromium is not installed: run `bash scripts/test.sh` or `apt-get install -y chromium`; this test does \
                 not skip"
            )
        })
}

/// Headless Chromium on `url` with `extra` flags (a fresh profile); its
/// stdout. The page's timers run for 2.5 s of virtual time first, so its
/// polling has answered.
fn chromium_on(url: &str, extra: &[&str]) -> String {
    let profile = tempfile::tempdir().expect("profile dir");
    let out = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--no-first-run",
            "--virtual-time-budget=2500",
        ])
        .arg(format!("--user-data-dir={}", s(profile.path())))
        .args(extra)
        .arg(url)
        .stdin(Stdio::null())
        .output()
        .expect("run chromium");
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The chart's points in a dumped DOM: `(mix, run, second, requests, p99)` of
/// every `<circle>` of the live chart.
fn points(dom: &str) -> Vec<(u64, u64, u64, u64, u64)> {
    let start = dom.find(r#"id="live-chart""#).expect("the live chart in the DOM");
    let chart = &dom[start..start + dom[start..].find("</svg>").expect("end of the chart")];
    let attr = |tag: &str, name: &str| -> u64 {
        let key = format!(r#"{name}=""#);
        let i = tag.find(&key).unwrap_or_else(|| panic!("no {name} in {tag}")) + key.len();
        tag[i..i + tag[i..].find('"').expect("closing quote")]
            .parse()
            .unwrap_or_else(|_| panic!("{name} is not a number in {tag}"))
    };
    chart
        .match_indices("<circle")
        .map(|(i, _)| {
            let tag = &chart[i..i + chart[i..].find('>').expect("end of tag")];
            (
                attr(tag, "data-mix"),
                attr(tag, "data-run"),
                attr(tag, "data-second"),
                attr(tag, "data-requests"),
                attr(tag, "data-p99"),
            )
        })
        .collect()
}

fn suite(dir: &Path, url: &str) -> PathBuf {
    let p = dir.join("live.toml");
    std::fs::write(
        &p,
        pool_server::suite_toml(
            "live",
            url,
            3,
            "length = \"5s\"\nramp_up = \"1s\"\nramp_down = \"0s\"\ntimeout = \"5s\"",
            &[
                "threads_per_client = 2",
                "threads_per_client = 4",
                "threads_per_client = 8",
            ],
        ),
    )
    .expect("write suite");
    p
}

/// The run, stopped (SIGINT) if the test fails before it ends.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn the_live_view_grows_during_the_run_and_ends_as_the_report() {
    let server = pool_server::PoolServer::start(256, Duration::from_millis(10));
    let dir = tempfile::tempdir().expect("tempdir");
    let suite = suite(dir.path(), &server.url());
    let out = dir.path().join("out");
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let log = std::fs::File::create(dir.path().join("run.log")).expect("log file");
    let mut run = Running(
        Command::new(common::benchlab_bin())
            .args(["run", s(&suite), "--out", s(&out), "--web", &addr, "--web-linger"])
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .expect("start benchlab run"),
    );
    wait_for_port(port, Duration::from_secs(60));
    // `/live` is the live page during the run and after it (`/` becomes
    // the report), so a slow browser start cannot miss it.
    let url = format!("http://{addr}/live");

    // First read: some seconds of the first mixes.
    let first_json = wait_until(port, "a second merged", |v| {
        v["seconds"].as_array().is_some_and(|s| s.len() >= 2)
    });
    assert_eq!(first_json["state"], "running", "{first_json}");
    let dom1 = chromium_on(&url, &["--dump-dom"]);
    let p1 = points(&dom1);
    assert!(!p1.is_empty(), "no point on the live chart:\n{dom1}");
    assert!(dom1.contains(r#"data-updates=""#), "the page never polled");
    assert!(dom1.contains(&format!(r#"data-points="{}""#, p1.len())), "{dom1}");

    // Second read, once more seconds have come: more points, the first ones kept.
    wait_until(port, "more seconds", |v| {
        v["seconds"].as_array().is_some_and(|s| s.len() >= p1.len() + 2)
    });
    let shot = Path::new(env!("CARGO_TARGET_TMPDIR")).join("../live-view-screenshot.png");
    let shot_arg = format!("--screenshot={}", s(&shot));
    let dom2 = chromium_on(&url, &["--dump-dom"]);
    let _ = chromium_on(&url, &[&shot_arg, "--window-size=1150,900"]);
    let p2 = points(&dom2);
    assert!(
        p2.len() > p1.len(),
        "the chart did not grow: {} then {} points",
        p1.len(),
        p2.len()
    );
    assert_eq!(&p2[..p1.len()], &p1[..], "the first points changed");
    assert!(shot.is_file(), "no screenshot at {}", shot.display());

    // Read-only.
    assert_eq!(http(port, "POST", "/").0, 405);
    assert_eq!(http(port, "DELETE", "/live.json").0, 405);

    // The end: `/` is report.html as written, byte for byte.
    let last = wait_until(port, "the end of the run", |v| v["state"] == "done");
    let report = std::fs::read(out.join("report.html")).expect("report.html");
    let (status, page) = http(port, "GET", "/");
    assert_eq!(status, 200);
    assert!(page == report, "/ after the run is not report.html");
    // And a browser at that address shows the report.
    let dom = chromium_on(&format!("http://{addr}/"), &["--dump-dom"]);
    assert!(dom.contains("benchlab report") && !dom.contains("live-chart"), "{dom}");

    // Every point the live view plotted is the second results.json keeps.
    let results: Value =
        serde_json::from_slice(&std::fs::read(out.join("results.json")).expect("results.json")).expect("JSON");
    let mixes = results["mixes"].as_array().expect("mixes");
    assert_eq!(mixes.len(), 3);
    let seconds = last["seconds"].as_array().expect("seconds");
    for (mix, _, second, requests, p99) in p2.iter().copied() {
        let m = &mixes[mix as usize - 1];
        let kept = m["per_second"]
            .as_array()
            .and_then(|ps| ps.iter().find(|p| p["second"].as_u64() == Some(second)))
            .unwrap_or_else(|| panic!("mix {mix} has no second {second} in results.json"));
        assert_eq!(kept["requests"].as_u64(), Some(requests), "mix {mix} second {second}");
        // The merged per-second p99 is drawn as results.json keeps it.
        assert_eq!(kept["latency_p99_us"].as_u64(), Some(p99), "mix {mix} second {second}");
    }
    let total: usize = mixes
        .iter()
        .map(|m| m["per_second"].as_array().map_or(0, Vec::len))
        .sum();
    assert_eq!(seconds.len(), total, "the live series is every second of every mix");
    // `?since=K`: only the seconds from the K-th on, as a polling page asks.
    let (_, body) = http(port, "GET", "/live.json?since=2");
    let tail: Value = serde_json::from_slice(&body).expect("JSON");
    assert_eq!(tail["since"], 2);
    assert_eq!(tail["seconds"].as_array().map(Vec::len), Some(total - 2));
    assert_eq!(tail["seconds"][0], seconds[2]);

    // Ctrl-C ends the lingering server; the run itself completed: exit 0.
    let pid = run.0.id().to_string();
    let st = Command::new("kill").args(["-INT", &pid]).status().expect("kill -INT");
    assert!(st.success());
    let status = run.0.wait().expect("wait benchlab");
    assert_eq!(
        status.code(),
        Some(0),
        "{}",
        std::fs::read_to_string(dir.path().join("run.log")).unwrap_or_default()
    );
}

#[test]
fn a_non_loopback_address_is_refused_unless_allowed() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Nothing listens on port 9: the refusal comes before any request.
    let suite = suite(dir.path(), "http://127.0.0.1:9");
    let o = run_benchlab(&[
        "run",
        s(&suite),
        "--web",
        "0.0.0.0:8080",
        "--out",
        s(&dir.path().join("o")),
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--web 0.0.0.0:8080: not a loopback address") && err.contains("--web-allow-remote"),
        "{err}"
    );
    assert!(!dir.path().join("o").exists());
    // --web-linger without --web is a usage error too.
    let o = run_benchlab(&["run", s(&suite), "--web-linger"]);
    assert_eq!(o.status.code(), Some(2));
}

/// `demo --web` serves the same view: port 0 picks a free port, printed.
#[test]
fn demo_has_the_live_view_too() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("demo");
    let o = run_benchlab(&["demo", "--web", "127.0.0.1:0", "--time-scale", "0.05", "--out", s(&out)]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("live view: http://127.0.0.1:"), "{err}");
    assert!(!err.contains("live view: http://127.0.0.1:0/"), "{err}");
    assert!(out.join("report.html").is_file());
}
