//! Live metrics (docs/metrics.md) read by real receivers, their figures
//! against the run's own results:
//!
//! - a real Prometheus (`/usr/bin/prometheus`, Debian's `prometheus`)
//!   started on a loopback port with a temp config and storage, scraping
//!   `benchlab run --metrics-listen` every second: after the run, its query
//!   API's totals of requests and errors equal results.json's (a suite of
//!   two mixes against `benchlab serve`, one class of which gets 404s),
//!   and `--monitor-local`'s host CPU per mix and live;
//! - the same Prometheus as a remote-write receiver
//!   (`--web.enable-remote-write-receiver`) of `--prometheus-remote-write`:
//!   the same figures;
//! - OTLP (`benchlab http --otlp`) received by a tiny HTTP server in this
//!   test and decoded by a protobuf reader written here (not the
//!   exporter's prost types): the totals equal `--json`'s;
//! - with two agents (`run --agents 2` on loopback), the controller pushes
//!   the merged view: the same totals;
//! - the request duration histogram: scraped, remote-written and pushed
//!   (one `http` run with all three), its `_count` and `+Inf` bucket
//!   equal the JSON's per-second requests, its buckets are cumulative,
//!   and Prometheus's `histogram_quantile(0.99, …)` lies in the bucket
//!   that holds the JSON's p99; the agents' merged histogram likewise;
//! - the in-flight gauge reads the four users waiting on a sleeping
//!   server during the run, and 0 after it;
//! - a file suite's operations are labelled `kind="file"`;
//! - `--web`'s server answers `/metrics` (it answered 404);
//! - a listen address that is not loopback, and an https:// push URL, are
//!   refused by name before any load (exit 2).
//!
//! Without /usr/bin/prometheus the Prometheus tests say so loudly and
//! return, unless CI is set (`CI=true`): there they fail.

mod common;

use common::{free_port, run_benchlab, s, wait_for_port, Serve};
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const PROMETHEUS: &str = "/usr/bin/prometheus";

/// Whether the Prometheus tests can run: a missing binary fails in CI and
/// is skipped, loudly, elsewhere.
fn have_prometheus() -> bool {
    if Path::new(PROMETHEUS).is_file() {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "{PROMETHEUS} is missing: scripts/test.sh installs Debian's `prometheus`; in CI this test does not skip"
    );
    eprintln!(
        "SKIPPED: {PROMETHEUS} is missing (install Debian's `prometheus`, or run `bash scripts/test.sh`); the \
         Prometheus scrape and remote-write checks did not run"
    );
    false
}

/// `(status, body)` of one GET to `127.0.0.1:port`.
fn get(port: u16, path: &str) -> (u16, String) {
    let mut c = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    c.set_read_timeout(Some(Duration::from_secs(30))).expect("timeout");
    write!(c, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").expect("send");
    let mut all = Vec::new();
    c.read_to_end(&mut all).expect("read the answer");
    let text = String::from_utf8_lossy(&all).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.split_whitespace().nth(1).and_then(|x| x.parse().ok()).unwrap_or(0);
    (status, body.to_string())
}

/// A Prometheus on a free loopback port with its config and storage in a
/// temp dir; stopped (with its process group) when dropped.
struct Prometheus {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Prometheus {
    /// `scrape`: the port of a `/metrics` to scrape every second, if any.
    fn start(scrape: Option<u16>, remote_write: bool) -> Prometheus {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut config = "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n".to_string();
        if let Some(p) = scrape {
            config.push_str(&format!(
                "scrape_configs:\n  - job_name: benchlab\n    static_configs:\n      - targets: ['127.0.0.1:{p}']\n"
            ));
        }
        let file = dir.path().join("prometheus.yml");
        std::fs::write(&file, config).expect("write the config");
        let port = free_port();
        let mut cmd = Command::new(PROMETHEUS);
        cmd.arg(format!("--config.file={}", s(&file)))
            .arg(format!("--storage.tsdb.path={}", s(&dir.path().join("data"))))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"));
        if remote_write {
            cmd.arg("--web.enable-remote-write-receiver");
        }
        let log = std::fs::File::create(dir.path().join("prometheus.log")).expect("log");
        let child = cmd
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .process_group(0)
            .spawn()
            .expect("start prometheus");
        let p = Prometheus { child, port, _dir: dir };
        // A deadline for a broken start, not a timing assertion.
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if TcpStream::connect(("127.0.0.1", port)).is_ok() && get(port, "/-/ready").0 == 200 {
                return p;
            }
            assert!(Instant::now() < deadline, "prometheus did not get ready: {}", p.log());
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Waits until the scrape loop has tried its target once (it fails:
    /// nothing listens yet), so scrapes come every second from the run's
    /// start: Prometheus hands new targets to the scrape loop up to 5 s
    /// after its start.
    fn wait_for_first_scrape(&self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let (_, body) = get(self.port, "/api/v1/targets");
            let v: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
            let tried = v["data"]["activeTargets"]
                .as_array()
                .is_some_and(|t| t.iter().any(|t| t["health"] != "unknown"));
            if tried {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "prometheus never scraped: {body}\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self._dir.path().join("prometheus.log")).unwrap_or_default()
    }

    /// Waits until the final figures of job `job` (`""`: remote-written)
    /// are queryable: benchlab stops waiting once it has sent the final
    /// scrape, which Prometheus stores a moment later (on a busy machine,
    /// after the test's first query once).
    fn wait_for_final(&self, job: &str) {
        let deadline = Instant::now() + Duration::from_secs(60);
        let query = format!("count(last_over_time(benchlab_run_finished{{job=\"{job}\"}}[10m]) == 1)");
        while self.vector(&query).is_empty() {
            assert!(Instant::now() < deadline, "{query}: never\n{}", self.log());
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The value of an instant query that returns one sample.
    fn scalar(&self, query: &str) -> f64 {
        let q: String = query
            .bytes()
            .map(|b| match b {
                b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' | b'.' | b'-' => (b as char).to_string(),
                _ => format!("%{b:02X}"),
            })
            .collect();
        let (status, body) = get(self.port, &format!("/api/v1/query?query={q}"));
        assert_eq!(status, 200, "{query}: {body}");
        let v: Value = serde_json::from_str(&body).expect("JSON");
        let result = v["data"]["result"].as_array().unwrap_or_else(|| panic!("{query}: {v}"));
        assert_eq!(
            result.len(),
            1,
            "{query}: one sample expected in {v}\nprometheus log:\n{}",
            self.log()
        );
        result[0]["value"][1]
            .as_str()
            .and_then(|x| x.parse().ok())
            .unwrap_or_else(|| panic!("{query}: no value in {v}"))
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        common::stop_group(&mut self.child);
    }
}

/// A suite of two short mixes against `target`: 9 in 10 requests for a
/// file that exists, 1 in 10 for one that does not (status errors; the
/// runs skip the preflight, which would refuse that URL).
fn suite(dir: &Path, target: &str) -> std::path::PathBuf {
    let p = dir.join("metrics.toml");
    std::fs::write(
        &p,
        format!(
            "name = \"metrics\"\ntarget = \"{target}\"\nseed = 7\n\n[defaults]\nlength = \"2s\"\nramp_up = \
             \"1s\"\nramp_down = \"0s\"\ntimeout = \"5s\"\n\n[workloads.one]\n[[workloads.one.class]]\nname = \
             \"ok\"\npercent = 90\n[[workloads.one.class.url]]\npath = \"/a.txt\"\nsize = 1000\n\
             [[workloads.one.class]]\nname = \"missing\"\npercent = 10\n[[workloads.one.class.url]]\npath = \
             \"/missing.txt\"\nsize = 1000\n\n[[mix]]\nclients = 1\nthreads_per_client = 2\n\n[[mix]]\nclients = \
             1\nthreads_per_client = 3\n"
        ),
    )
    .expect("write the suite");
    p
}

fn docroot(dir: &Path) -> std::path::PathBuf {
    let www = dir.join("www");
    std::fs::create_dir_all(&www).expect("mkdir");
    std::fs::write(www.join("a.txt"), vec![b'a'; 1000]).expect("write");
    www
}

/// What results.json counts, over every mix.
struct Totals {
    requests: u64,
    errors: u64,
    status: u64,
    /// The sums of the per-second series (every second, ramps included).
    seconds_requests: u64,
    seconds_errors: u64,
    /// The same over the measurement window's seconds (`in_window`).
    measured_seconds_requests: u64,
}

fn totals_of(mixes: &[Value]) -> Totals {
    let sum = |p: &str| mixes.iter().map(|m| common::u(m, p)).sum::<u64>();
    let seconds = |f: &str| -> u64 {
        mixes
            .iter()
            .flat_map(|m| m["per_second"].as_array().expect("per_second").iter())
            .map(|s| common::u(s, f))
            .sum()
    };
    Totals {
        requests: sum("/requests"),
        errors: sum("/errors_total"),
        // A file suite's errors are NT statuses: no `status` kind.
        status: mixes
            .iter()
            .map(|m| m.pointer("/errors/status").and_then(Value::as_u64).unwrap_or(0))
            .sum(),
        seconds_requests: seconds("/requests"),
        measured_seconds_requests: mixes
            .iter()
            .flat_map(|m| m["per_second"].as_array().expect("per_second").iter())
            .filter(|s| s["in_window"].as_bool() == Some(true))
            .map(|s| common::u(s, "/requests"))
            .sum(),
        seconds_errors: seconds("/errors"),
    }
}

/// results.json's two mixes, summed.
fn totals(out: &Path) -> Totals {
    let text = std::fs::read_to_string(out.join("results.json")).expect("results.json");
    let r: Value = serde_json::from_str(&text).expect("JSON");
    let mixes = r["mixes"].as_array().expect("mixes");
    assert_eq!(mixes.len(), 2, "two mixes");
    totals_of(mixes)
}

fn assert_ran(what: &str, o: &std::process::Output) {
    common::assert_success(what, o);
}

#[test]
fn prometheus_scraping_the_run_gets_results_json_totals() {
    if !have_prometheus() {
        return;
    }
    let d = tempfile::tempdir().expect("tempdir");
    let serve = Serve::start(&docroot(d.path()), &["--workers", "1"]);
    let metrics_port = free_port();
    let prom = Prometheus::start(Some(metrics_port), false);
    prom.wait_for_first_scrape();
    let out = d.path().join("out");
    let o = run_benchlab(&[
        "run",
        s(&suite(d.path(), &serve.url(""))),
        "--out",
        s(&out),
        "--no-preflight",
        "--monitor-local",
        "--metrics-listen",
        &format!("127.0.0.1:{metrics_port}"),
    ]);
    assert_ran("benchlab run --metrics-listen", &o);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        !stderr.contains("no scrape"),
        "the final figures were scraped: {stderr}"
    );
    let t = totals(&out);
    assert!(t.requests > 0 && t.errors > 0, "both kinds of outcome");
    prom.wait_for_final("benchlab");
    let last = |m: &str| prom.scalar(&format!("sum(last_over_time({m}[10m]))"));
    assert_eq!(
        last(r#"benchlab_result_requests_total{job="benchlab"}"#),
        t.requests as f64
    );
    assert_eq!(last(r#"benchlab_result_errors_total{job="benchlab"}"#), t.errors as f64);
    assert_eq!(
        last(r#"benchlab_result_errors_by_type_total{error_type="status"}"#),
        t.status as f64
    );
    // The live counters: every merged second, as results.json's series.
    assert_eq!(
        last(r#"benchlab_requests_total{job="benchlab"}"#),
        t.seconds_requests as f64
    );
    assert_eq!(
        last(r#"benchlab_errors_total{job="benchlab"}"#),
        t.seconds_errors as f64
    );
    assert_eq!(last(r#"benchlab_run_finished"#), 1.0);
    // --monitor-local: this host's CPU over each of the two mixes, and
    // second by second.
    assert_eq!(
        prom.scalar(r#"count(last_over_time(benchlab_mix_host_cpu_utilization_ratio{role="server_and_client"}[10m]))"#),
        2.0
    );
    assert_eq!(
        prom.scalar("count(last_over_time(system_cpu_utilization_ratio[10m]))"),
        1.0
    );
    // Scraped during the run too, not only at its end.
    assert_eq!(prom.scalar("min_over_time(benchlab_run_finished[10m])"), 0.0);
}

#[test]
fn prometheus_receiving_remote_write_gets_results_json_totals() {
    if !have_prometheus() {
        return;
    }
    let d = tempfile::tempdir().expect("tempdir");
    let serve = Serve::start(&docroot(d.path()), &["--workers", "1"]);
    let prom = Prometheus::start(None, true);
    let out = d.path().join("out");
    let o = run_benchlab(&[
        "run",
        s(&suite(d.path(), &serve.url(""))),
        "--out",
        s(&out),
        "--no-preflight",
        "--prometheus-remote-write",
        &format!("http://127.0.0.1:{}/api/v1/write", prom.port),
    ]);
    assert_ran("benchlab run --prometheus-remote-write", &o);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        !stderr.contains("pushes failed"),
        "{stderr}\nprometheus log:\n{}",
        prom.log()
    );
    let t = totals(&out);
    prom.wait_for_final("");
    let last = |m: &str| prom.scalar(&format!("sum(last_over_time({m}[10m]))"));
    assert_eq!(last("benchlab_result_requests_total"), t.requests as f64);
    assert_eq!(last("benchlab_result_errors_total"), t.errors as f64);
    assert_eq!(
        last(r#"benchlab_result_errors_by_type_total{error_type="status"}"#),
        t.status as f64
    );
    assert_eq!(last("benchlab_requests_total"), t.seconds_requests as f64);
    assert_eq!(last("benchlab_errors_total"), t.seconds_errors as f64);
    // Pushed during the run too, not only at its end.
    assert_eq!(prom.scalar("min_over_time(benchlab_run_finished[10m])"), 0.0);
}

/// A protobuf reader written for this test, apart from the exporter's
/// prost types: the fields of one message as (field number, value).
#[derive(Debug, Clone)]
enum Field {
    Varint,
    Fixed64(u64),
    Bytes(Vec<u8>),
    Fixed32,
}

fn varint(b: &[u8], i: &mut usize) -> u64 {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = b[*i];
        *i += 1;
        v |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            break;
        }
    }
    v
}

fn fields(b: &[u8]) -> Vec<(u64, Field)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let key = varint(b, &mut i);
        let f = match key & 7 {
            0 => {
                varint(b, &mut i);
                Field::Varint
            }
            1 => {
                let v = u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
                i += 8;
                Field::Fixed64(v)
            }
            2 => {
                let n = varint(b, &mut i) as usize;
                let v = b[i..i + n].to_vec();
                i += n;
                Field::Bytes(v)
            }
            5 => {
                i += 4;
                Field::Fixed32
            }
            w => panic!("wire type {w} in an OTLP message"),
        };
        out.push((key >> 3, f));
    }
    out
}

fn sub(b: &[u8], number: u64) -> Vec<Vec<u8>> {
    fields(b)
        .into_iter()
        .filter_map(|(n, f)| match (n == number, f) {
            (true, Field::Bytes(v)) => Some(v),
            _ => None,
        })
        .collect()
}

fn string(b: &[u8], number: u64) -> String {
    sub(b, number)
        .first()
        .map(|v| String::from_utf8_lossy(v).into_owned())
        .unwrap_or_default()
}

/// Each metric of `want` is in `sums` with exactly its value.
fn assert_sums(sums: &std::collections::BTreeMap<String, f64>, want: &[(&str, u64)]) {
    for (metric, value) in want {
        assert_eq!(sums.get(*metric).copied(), Some(*value as f64), "{metric}: {sums:?}");
    }
}

/// Sums, per OTLP metric name, of the data points whose attributes hold
/// `key=value`: ExportMetricsServiceRequest.resource_metrics (1) →
/// scope_metrics (2) → metrics (2) → name (1), sum (7) or gauge (5) →
/// data_points (1) → attributes (7: key 1, value 2 → string_value 1) and
/// as_double (4, fixed64).
fn otlp_sums(body: &[u8], key: &str, value: &str) -> std::collections::BTreeMap<String, f64> {
    let mut out = std::collections::BTreeMap::new();
    for rm in sub(body, 1) {
        for sm in sub(&rm, 2) {
            for m in sub(&sm, 2) {
                let name = string(&m, 1);
                for data in sub(&m, 7).into_iter().chain(sub(&m, 5)) {
                    for p in sub(&data, 1) {
                        let attrs: Vec<(String, String)> = sub(&p, 7)
                            .iter()
                            .map(|kv| {
                                (
                                    string(kv, 1),
                                    sub(kv, 2).first().map(|v| string(v, 1)).unwrap_or_default(),
                                )
                            })
                            .collect();
                        if !attrs.iter().any(|(k, v)| k == key && v == value) {
                            continue;
                        }
                        let x = fields(&p)
                            .into_iter()
                            .find_map(|(n, f)| match (n, f) {
                                (4, Field::Fixed64(v)) => Some(f64::from_bits(v)),
                                _ => None,
                            })
                            .unwrap_or(0.0);
                        *out.entry(name.clone()).or_insert(0.0) += x;
                    }
                }
            }
        }
    }
    out
}

/// What the receiver got: each POST's path and body.
type Received = Arc<Mutex<Vec<(String, Vec<u8>)>>>;

/// A tiny OTLP/HTTP receiver: every POST's path and body kept, answered 200.
fn otlp_receiver() -> (u16, Received) {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = l.local_addr().expect("addr").port();
    let got = Arc::new(Mutex::new(Vec::new()));
    let keep = Arc::clone(&got);
    std::thread::spawn(move || {
        for c in l.incoming() {
            let Ok(c) = c else { continue };
            let _ = c.set_read_timeout(Some(Duration::from_secs(10)));
            let mut r = BufReader::new(c);
            let mut line = String::new();
            if r.read_line(&mut line).is_err() {
                continue;
            }
            let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
            let mut length = 0usize;
            loop {
                let mut h = String::new();
                if r.read_line(&mut h).is_err() || h.trim().is_empty() {
                    break;
                }
                if let Some((k, v)) = h.split_once(':') {
                    if k.eq_ignore_ascii_case("content-length") {
                        length = v.trim().parse().unwrap_or(0);
                    }
                }
            }
            let mut body = vec![0u8; length];
            if r.read_exact(&mut body).is_err() {
                continue;
            }
            keep.lock().expect("lock").push((path, body));
            let _ = r
                .get_mut()
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\nContent-Length: 0\r\n\r\n");
        }
    });
    (port, got)
}

#[test]
fn otlp_pushed_by_http_decodes_to_the_json_totals() {
    let d = tempfile::tempdir().expect("tempdir");
    let serve = Serve::start(&docroot(d.path()), &["--workers", "1"]);
    let (port, got) = otlp_receiver();
    // Two URLs, one of which 404s: status errors beside the successes.
    let o = run_benchlab(&[
        "http",
        "--json",
        "-t",
        "2",
        "-d",
        "3s",
        "--no-preflight",
        "--validate",
        "status",
        "--otlp",
        &format!("http://127.0.0.1:{port}"),
        &serve.url("/a.txt@9"),
        &serve.url("/missing.txt@1"),
    ]);
    assert_ran("benchlab http --otlp", &o);
    let mix = common::http_mix(&o.stdout);
    let t = totals_of(std::slice::from_ref(&mix));
    assert!(t.requests > 0 && t.errors > 0, "both kinds of outcome");
    let got = got.lock().expect("lock").clone();
    assert!(
        got.len() >= 2,
        "pushed during the run and at its end: {} pushes",
        got.len()
    );
    assert!(got.iter().all(|(p, _)| p == "/v1/metrics"), "OTLP/HTTP's path");
    let body = &got[got.len() - 1].1;
    // The results' counters and the live ones: every merged second, as
    // the JSON's series.
    assert_sums(
        &otlp_sums(body, "kind", "http"),
        &[
            ("benchlab.result.requests", t.requests),
            ("benchlab.result.errors", t.errors),
            ("benchlab.requests", t.seconds_requests),
            ("benchlab.errors", t.seconds_errors),
        ],
    );
    assert_sums(
        &otlp_sums(body, "error.type", "status"),
        &[("benchlab.result.errors.by_type", t.status)],
    );
}

#[test]
fn a_file_suite_pushes_operations_labelled_as_such() {
    let d = tempfile::tempdir().expect("tempdir");
    let root = d.path().join("root");
    std::fs::create_dir_all(&root).expect("mkdir");
    std::fs::write(
        d.path().join("load.txt"),
        "Mkdir \"\\clients\" NT_STATUS_OK\nNTCreateX \"\\clients\\client1\\a.txt\" 0x40 0x2 1 NT_STATUS_OK\n\
         WriteX 1 0 100 100 NT_STATUS_OK\nClose 1 NT_STATUS_OK\nUnlink \"\\clients\\client1\\a.txt\" 0x6 \
         NT_STATUS_OK\n",
    )
    .expect("write the loadfile");
    let suite = d.path().join("files.toml");
    std::fs::write(
        &suite,
        format!(
            "name = \"files\"\ntarget = \"file://{}\"\n[workloads.lf]\nloadfile = \"load.txt\"\n[defaults]\n\
             ramp_up = \"0s\"\nramp_down = \"0s\"\nlength = \"2s\"\n[[mix]]\nclients = 1\n",
            root.display()
        ),
    )
    .expect("write the suite");
    let (port, got) = otlp_receiver();
    let out = d.path().join("out");
    let o = run_benchlab(&[
        "run",
        s(&suite),
        "--out",
        s(&out),
        "--otlp",
        &format!("http://127.0.0.1:{port}/v1/metrics"),
    ]);
    assert_ran("benchlab run (file suite) --otlp", &o);
    let text = std::fs::read_to_string(out.join("results.json")).expect("results.json");
    let r: Value = serde_json::from_str(&text).expect("JSON");
    let t = totals_of(r["mixes"].as_array().expect("mixes"));
    assert!(t.requests > 0, "{text}");
    let got = got.lock().expect("lock").clone();
    let body = &got.last().expect("at least the final push").1;
    // Every series says kind=file, with results.json's operations.
    assert_sums(
        &otlp_sums(body, "kind", "file"),
        &[
            ("benchlab.result.requests", t.requests),
            ("benchlab.requests", t.seconds_requests),
        ],
    );
    assert!(otlp_sums(body, "kind", "http").is_empty(), "no series says http");
}

#[test]
fn with_agents_the_controller_exports_the_merged_view() {
    let d = tempfile::tempdir().expect("tempdir");
    let serve = Serve::start(&docroot(d.path()), &["--workers", "1"]);
    let certs = d.path().join("certs");
    common::assert_success(
        "lab certs",
        &run_benchlab(&["lab", "certs", "--out", s(&certs), "--agents", "2"]),
    );
    let (otlp_port, got) = otlp_receiver();
    let port = free_port();
    let out = d.path().join("out");
    let suite = suite(d.path(), &serve.url(""));
    let controller = Command::new(common::benchlab_bin())
        .args([
            "run",
            s(&suite),
            "--agents",
            "2",
            "--listen",
            &format!("127.0.0.1:{port}"),
        ])
        .args(["--tls-dir", s(&certs), "--out", s(&out), "--no-preflight"])
        .args(["--otlp", &format!("http://127.0.0.1:{otlp_port}")])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the controller");
    // Killed if the test fails before they end.
    let agents: Vec<Running> = (0..2)
        .map(|i| {
            Running(
                Command::new(common::benchlab_bin())
                    .args([
                        "agent",
                        "--controller",
                        &format!("127.0.0.1:{port}"),
                        "--index",
                        &i.to_string(),
                    ])
                    .arg("--cert")
                    .arg(certs.join(format!("agent-{i}.pem")))
                    .arg("--key")
                    .arg(certs.join(format!("agent-{i}.key")))
                    .arg("--ca")
                    .arg(certs.join("ca.pem"))
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .expect("start an agent"),
            )
        })
        .collect();
    let o = controller.wait_with_output().expect("the controller");
    drop(agents);
    assert_ran("benchlab run --agents 2 --otlp", &o);
    let t = totals(&out);
    let r: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).expect("results.json")).expect("JSON");
    assert_eq!(
        r["environment"]["agents"].as_array().map(Vec::len),
        Some(2),
        "ran on agents"
    );
    let got = got.lock().expect("lock").clone();
    assert_sums(
        &otlp_sums(&got.last().expect("the final push").1, "kind", "http"),
        &[
            ("benchlab.result.requests", t.requests),
            ("benchlab.result.errors", t.errors),
            ("benchlab.requests", t.seconds_requests),
        ],
    );
    // The agents' histograms, merged: their buckets count the requests
    // of the measured seconds (the suite ramps up for 1 s first).
    let points = otlp_histogram_counts(&got.last().expect("the final push").1);
    assert!(points.iter().all(|(count, buckets)| count == buckets), "{points:?}");
    assert_eq!(points.iter().map(|p| p.0).sum::<u64>(), t.measured_seconds_requests);
    assert!(
        t.measured_seconds_requests < t.seconds_requests,
        "the ramp's are left out"
    );
}

/// A process stopped when dropped (also when a test fails).
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn the_live_view_serves_metrics() {
    let d = tempfile::tempdir().expect("tempdir");
    let serve = Serve::start(&docroot(d.path()), &["--workers", "1"]);
    let out = d.path().join("out");
    let port = free_port();
    let mut run = Command::new(common::benchlab_bin())
        .args([
            "run",
            s(&suite(d.path(), &serve.url(""))),
            "--out",
            s(&out),
            "--no-preflight",
        ])
        .args(["--web", &format!("127.0.0.1:{port}"), "--web-linger"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start benchlab run");
    wait_for_port(port, Duration::from_secs(60));
    // A deadline for a broken run, not a timing assertion.
    let deadline = Instant::now() + Duration::from_secs(120);
    let text = loop {
        let (status, body) = get(port, "/metrics");
        assert_eq!(status, 200, "{body}");
        if body.contains("\nbenchlab_run_finished 1\n") {
            break body;
        }
        assert!(Instant::now() < deadline, "the run never ended: {body}");
        std::thread::sleep(Duration::from_millis(200));
    };
    let _ = Command::new("kill").args(["-INT", &run.id().to_string()]).status();
    let _ = run.wait();
    let t = totals(&out);
    let sum = |name: &str| -> u64 {
        text.lines()
            .filter(|l| l.starts_with(&format!("{name}{{")))
            .map(|l| {
                l.rsplit(' ')
                    .next()
                    .and_then(|v| v.parse::<u64>().ok())
                    .expect("a count")
            })
            .sum()
    };
    assert_eq!(sum("benchlab_result_requests_total"), t.requests);
    assert_eq!(sum("benchlab_result_errors_total"), t.errors);
    assert_eq!(sum("benchlab_requests_total"), t.seconds_requests);
    assert_eq!(sum("benchlab_errors_total"), t.seconds_errors);
    assert!(text.ends_with("# EOF\n"));
}

#[test]
fn flags_that_cannot_apply_are_refused_before_any_load() {
    // Nothing listens at port 1: a refusal must come before any request.
    let o = run_benchlab(&["http", "--metrics-listen", "0.0.0.0:0", "http://127.0.0.1:1/"]);
    assert_eq!(o.status.code(), Some(2), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--metrics-listen 0.0.0.0:0: not a loopback address"));
    let o = run_benchlab(&["http", "--otlp", "https://127.0.0.1:4318/", "http://127.0.0.1:1/"]);
    assert_eq!(o.status.code(), Some(2), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--otlp `https://127.0.0.1:4318/`: only http://"));
}

/// Every `/metrics` text a scrape of `port` read, in order, until one
/// held the final figures (the run waits for that scrape).
fn scrape_until_finished(port: u16) -> Vec<String> {
    wait_for_port(port, Duration::from_secs(60));
    let mut texts = Vec::new();
    // A deadline for a broken run, not a timing assertion.
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let (status, body) = get(port, "/metrics");
        assert_eq!(status, 200, "{body}");
        let finished = body.contains("\nbenchlab_run_finished 1\n");
        texts.push(body);
        if finished {
            return texts;
        }
        assert!(Instant::now() < deadline, "the run never ended");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The value of the one `name{…}` line of an OpenMetrics text, if any.
fn one_value(text: &str, name: &str) -> Option<f64> {
    let values: Vec<f64> = text
        .lines()
        .filter(|l| l.starts_with(&format!("{name}{{")))
        .filter_map(|l| l.rsplit(' ').next()?.parse().ok())
        .collect();
    assert!(values.len() <= 1, "one {name} line: {text}");
    values.first().copied()
}

#[test]
fn the_in_flight_gauge_reads_every_waiting_user_during_the_run_and_0_after() {
    let d = tempfile::tempdir().expect("tempdir");
    let serve = Serve::start(&docroot(d.path()), &[]);
    let port = free_port();
    // Four users in a closed loop, each waiting 4 s for its first answer
    // (within the 5 s timeout) in a run of 3 s: at every second's end all
    // four are in flight.
    let run = Running(
        Command::new(common::benchlab_bin())
            .args(["http", "-t", "4", "-d", "3s", "--no-preflight"])
            .args(["--metrics-listen", &format!("127.0.0.1:{port}")])
            .arg(serve.url("/spice/inproc/sleep/a.txt?ms=4000"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start benchlab http"),
    );
    let texts = scrape_until_finished(port);
    drop(run);
    let during: Vec<f64> = texts
        .iter()
        .filter(|t| t.contains("\nbenchlab_mix_current 1\n"))
        .filter_map(|t| one_value(t, "benchlab_requests_in_flight"))
        .collect();
    let mut seen = during.clone();
    seen.dedup();
    // The last, partial second ends after the users were stopped: 0.
    assert!(seen == [4.0] || seen == [4.0, 0.0], "{during:?}");
    let last = texts.last().expect("a scrape");
    assert_eq!(one_value(last, "benchlab_requests_in_flight"), Some(0.0), "{last}");
    assert_eq!(one_value(last, "benchlab_requests_unfinished"), Some(4.0), "{last}");
}

impl Prometheus {
    /// Every sample of an instant query: its labels and value.
    fn vector(&self, query: &str) -> Vec<(serde_json::Map<String, Value>, f64)> {
        let q: String = query
            .bytes()
            .map(|b| match b {
                b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' | b'.' | b'-' => (b as char).to_string(),
                _ => format!("%{b:02X}"),
            })
            .collect();
        let (status, body) = get(self.port, &format!("/api/v1/query?query={q}"));
        assert_eq!(status, 200, "{query}: {body}");
        let v: Value = serde_json::from_str(&body).expect("JSON");
        v["data"]["result"]
            .as_array()
            .unwrap_or_else(|| panic!("{query}: {v}"))
            .iter()
            .map(|r| {
                let labels = r["metric"].as_object().cloned().unwrap_or_default();
                let x = r["value"][1].as_str().and_then(|x| x.parse().ok()).expect("a value");
                (labels, x)
            })
            .collect()
    }
}

/// The duration histograms of an OTLP body: per data point of
/// `http.client.request.duration` (metric field 9 → data_points 1), its
/// count (4, fixed64) and the sum of its bucket_counts (6, packed fixed64).
fn otlp_histogram_counts(body: &[u8]) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    for rm in sub(body, 1) {
        for sm in sub(&rm, 2) {
            for m in sub(&sm, 2) {
                if string(&m, 1) != "http.client.request.duration" {
                    continue;
                }
                for h in sub(&m, 9) {
                    for p in sub(&h, 1) {
                        let count = fields(&p)
                            .into_iter()
                            .find_map(|(n, f)| match (n, f) {
                                (4, Field::Fixed64(v)) => Some(v),
                                _ => None,
                            })
                            .unwrap_or(0);
                        let buckets: u64 = sub(&p, 6)
                            .iter()
                            .flat_map(|packed| packed.chunks(8))
                            .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
                            .sum();
                        out.push((count, buckets));
                    }
                }
            }
        }
    }
    out
}

/// The buckets' bounds (seconds) as docs/metrics.md lists them.
const BOUNDS_S: [f64; 21] = [
    0.00001, 0.00002, 0.00005, 0.0001, 0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0,
    5.0, 10.0, 20.0, 60.0,
];

#[test]
fn the_duration_histogram_counts_the_json_requests_scraped_written_and_pushed() {
    if !have_prometheus() {
        return;
    }
    let d = tempfile::tempdir().expect("tempdir");
    let serve = Serve::start(&docroot(d.path()), &[]);
    let metrics_port = free_port();
    let prom = Prometheus::start(Some(metrics_port), true);
    prom.wait_for_first_scrape();
    let (otlp_port, got) = otlp_receiver();
    // Every request waits 30 ms in the server: the p99 lies well inside
    // the 20–50 ms bucket.
    let o = run_benchlab(&[
        "http",
        "--json",
        "-t",
        "4",
        "-d",
        "3s",
        "--no-preflight",
        "--metrics-listen",
        &format!("127.0.0.1:{metrics_port}"),
        "--prometheus-remote-write",
        &format!("http://127.0.0.1:{}/api/v1/write", prom.port),
        "--otlp",
        &format!("http://127.0.0.1:{otlp_port}"),
        &serve.url("/spice/inproc/sleep/a.txt?ms=30"),
    ]);
    assert_ran("benchlab http with all three exporters", &o);
    let mix = common::http_mix(&o.stdout);
    let t = totals_of(std::slice::from_ref(&mix));
    assert!(t.measured_seconds_requests > 0, "{mix}");
    let name = "benchlab_http_client_request_duration_seconds";
    // Scraped (job="benchlab") and remote-written (no job): the count and
    // the +Inf bucket are the requests of the JSON's measured seconds,
    // exactly.
    for job in ["benchlab", ""] {
        prom.wait_for_final(job);
        let last = |m: &str| prom.scalar(&format!("sum(last_over_time({m}[10m]))"));
        assert_eq!(
            last(&format!("{name}_count{{job=\"{job}\"}}")),
            t.measured_seconds_requests as f64,
            "job {job:?}"
        );
        assert_eq!(
            last(&format!("{name}_bucket{{job=\"{job}\",le=\"+Inf\"}}")),
            t.measured_seconds_requests as f64,
            "job {job:?}"
        );
        // Cumulative: each bucket holds at least the one below it.
        let mut buckets: Vec<(f64, f64)> = prom
            .vector(&format!(
                "sum by (le) (last_over_time({name}_bucket{{job=\"{job}\",window=\"measured\"}}[10m]))"
            ))
            .into_iter()
            .map(|(l, x)| {
                let le = l["le"].as_str().expect("le");
                (
                    if le == "+Inf" {
                        f64::INFINITY
                    } else {
                        le.parse().expect("a bound")
                    },
                    x,
                )
            })
            .collect();
        buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
        assert_eq!(buckets.len(), BOUNDS_S.len() + 1, "{buckets:?}");
        assert!(buckets.windows(2).all(|w| w[0].1 <= w[1].1), "{buckets:?}");
        // Prometheus's p99 from the buckets lies in the bucket that holds
        // results.json's.
        let p99_s = common::u(&mix, "/latency_us/p99") as f64 / 1e6;
        let upper = BOUNDS_S.iter().position(|&b| p99_s <= b).expect("p99 under 60 s");
        let lower = if upper == 0 { 0.0 } else { BOUNDS_S[upper - 1] };
        let q = prom.scalar(&format!(
            "histogram_quantile(0.99, sum by (le) (last_over_time({name}_bucket{{job=\"{job}\",window=\"measured\"}}[10m])))"
        ));
        assert!(
            lower < q && q <= BOUNDS_S[upper],
            "job {job:?}: histogram_quantile {q} s, results.json's p99 {p99_s} s in ({lower}, {}]",
            BOUNDS_S[upper]
        );
    }
    // OTLP: the same count in its histogram's data points, each point's
    // buckets adding up to its count.
    let got = got.lock().expect("lock").clone();
    let points = otlp_histogram_counts(&got.last().expect("the final push").1);
    assert!(!points.is_empty(), "a histogram in the push");
    assert!(points.iter().all(|(count, buckets)| count == buckets), "{points:?}");
    assert_eq!(points.iter().map(|p| p.0).sum::<u64>(), t.measured_seconds_requests);
}
