//! `benchlab http --http 2` against real servers, counted exactly
//! (docs/counting.md, "HTTP/2"): nginx on an h2c listener (`listen …
//! http2`) and a TLS one (`listen … ssl http2`), Apache httpd's mod_http2
//! and h2o. Each run is `--requests N`, so nothing is in flight at the end
//! and the server's log holds exactly N lines plus the preflight's one; the
//! bodies benchlab counted are the bytes the server logged as sent; the
//! connections benchlab opened are those the server saw.

mod common;

use common::servers::{H2Server, Nginx, NginxOpts, SIZE_4K};
use common::{http_json, u};
use serde_json::Value;
use std::collections::BTreeSet;

/// One OS thread: with two, one thread may take the whole `-n` budget
/// before the other's first connection is up, and the connections the
/// server sees would depend on the machine's load.
fn bench(args: &[&str]) -> Value {
    let mut all = vec!["--os-threads", "1"];
    all.extend_from_slice(args);
    let v = http_json(&all);
    assert_eq!(u(&v, "/in_flight"), 0, "{v}");
    v
}

fn nginx(tls: bool, keepalive_requests: u32) -> Nginx {
    Nginx::start(NginxOpts {
        tls,
        http2: true,
        keepalive_requests,
        ..NginxOpts::default()
    })
}

/// Checks a `-n n` run of `/4k.html` against nginx's log: n + 1 lines (the
/// preflight's first), all HTTP/2.0, Σ body bytes = benchlab's + the
/// preflight's, and `connections` connections besides the preflight's.
fn assert_nginx_counts(server: &Nginx, v: &Value, n: u64, connections: u64) {
    assert_eq!(u(v, "/requests"), n, "{v}");
    assert_eq!(u(v, "/errors_total"), 0, "{v}");
    assert_eq!(u(v, "/body_bytes"), n * SIZE_4K, "{v}");
    let lines = server.access_log_lines_at_least(n as usize + 1);
    assert_eq!(lines.len() as u64, n + 1, "log lines = requests + the preflight");
    assert!(lines.iter().all(|l| l.version() == "HTTP/2.0" && l.status == 200));
    let body: u64 = lines[1..].iter().map(|l| l.body_bytes_sent).sum();
    assert_eq!(body, u(v, "/body_bytes"));
    let conns: BTreeSet<u64> = lines[1..].iter().map(|l| l.connection).collect();
    assert_eq!(conns.len() as u64, connections, "connections the server saw");
    assert_eq!(u(v, "/connections_opened"), connections, "{v}");
    // Frame bytes: at least the 9-byte DATA and HEADERS frame headers and
    // the body for each request; HPACK-compressed heads are small.
    let bytes = u(v, "/bytes");
    assert!(bytes >= n * (SIZE_4K + 18) && bytes < n * (SIZE_4K + 200), "{bytes}");
}

#[test]
fn nginx_h2c_streams_on_few_connections_exact() {
    let server = nginx(false, 10_000);
    let url = server.url("/4k.html");
    let v = bench(&[
        "--http",
        "2",
        "--connections",
        "3",
        "--streams",
        "8",
        "-n",
        "1200",
        &url,
    ]);
    assert_eq!(u(&v, "/threads"), 24, "users = connections × streams");
    assert_nginx_counts(&server, &v, 1200, 3);
}

#[test]
fn nginx_tls_h2_exact() {
    let server = nginx(true, 10_000);
    let url = server.url("/4k.html");
    let v = bench(&[
        "--http",
        "2",
        "--insecure",
        "--connections",
        "2",
        "--streams",
        "5",
        "-n",
        "500",
        &url,
    ]);
    assert_nginx_counts(&server, &v, 500, 2);
    assert_eq!(u(&v, "/tls_full_handshakes"), 2, "{v}");
}

/// `--requests-per-connection 1`: a new connection for every request, as
/// HTTP/1.0 without keep-alive does (h2load cannot do this).
#[test]
fn nginx_h2c_a_connection_per_request() {
    let server = nginx(false, 10_000);
    let url = server.url("/4k.html");
    let v = bench(&[
        "--http",
        "2",
        "--connections",
        "2",
        "--streams",
        "4",
        "--requests-per-connection",
        "1",
        "-n",
        "200",
        &url,
    ]);
    assert_nginx_counts(&server, &v, 200, 200);
}

/// nginx ends a connection after `keepalive_requests` streams with a
/// GOAWAY: streams it refused are sent again on a new connection and
/// counted as reconnects, never as errors or extra requests.
#[test]
fn nginx_goaway_after_keepalive_requests_is_a_reconnect() {
    let server = nginx(false, 100);
    let url = server.url("/4k.html");
    let v = bench(&[
        "--http",
        "2",
        "--connections",
        "1",
        "--streams",
        "10",
        "-n",
        "1000",
        &url,
    ]);
    assert_eq!(u(&v, "/requests"), 1000, "{v}");
    assert_eq!(u(&v, "/errors_total"), 0, "{v}");
    let lines = server.access_log_lines_at_least(1001);
    assert_eq!(lines.len(), 1001);
    let conns: BTreeSet<u64> = lines[1..].iter().map(|l| l.connection).collect();
    assert_eq!(conns.len(), 10, "100 streams per connection");
    assert_eq!(u(&v, "/connections_opened"), 10, "{v}");
}

fn assert_h2_log(server: &H2Server, v: &Value, n: u64, protocol: &str) {
    assert_eq!(u(v, "/requests"), n, "{v}");
    assert_eq!(u(v, "/errors_total"), 0, "{v}");
    let lines = server.log_lines_at_least(n as usize + 1);
    assert_eq!(lines.len() as u64, n + 1, "log lines = requests + the preflight");
    assert!(
        lines.iter().all(|l| l.protocol == protocol && l.status == 200),
        "{lines:?}"
    );
    let body: u64 = lines[1..].iter().map(|l| l.body_bytes).sum();
    assert_eq!(body, u(v, "/body_bytes"));
    assert_eq!(body, n * SIZE_4K);
}

#[test]
fn apache_mod_http2_h2c_exact() {
    let server = H2Server::apache();
    let url = format!("http://127.0.0.1:{}/4k.html", server.h2c);
    let v = bench(&["--http", "2", "--connections", "2", "--streams", "5", "-n", "400", &url]);
    assert_h2_log(&server, &v, 400, "HTTP/2.0");
    assert_eq!(u(&v, "/connections_opened"), 2, "{v}");
}

#[test]
fn h2o_h2c_and_tls_exact() {
    let server = H2Server::h2o();
    let url = format!("http://127.0.0.1:{}/4k.html", server.h2c);
    let v = bench(&["--http", "2", "--connections", "2", "--streams", "5", "-n", "300", &url]);
    assert_h2_log(&server, &v, 300, "HTTP/2");
    assert_eq!(u(&v, "/connections_opened"), 2, "{v}");
    drop(server);
    let server = H2Server::h2o();
    let Some(tls) = server.tls else {
        panic!("h2o has a TLS port")
    };
    let url = format!("https://localhost:{tls}/4k.html");
    let v = bench(&[
        "--http",
        "2",
        "--insecure",
        "--connections",
        "3",
        "--streams",
        "4",
        "-n",
        "300",
        &url,
    ]);
    assert_h2_log(&server, &v, 300, "HTTP/2");
    assert_eq!(u(&v, "/connections_opened"), 3, "{v}");
}

/// Writes `toml` as a suite in `dir`, runs it (`--insecure`: the TLS
/// listener's certificate is self-signed) and returns its results.json.
fn run_suite(dir: &std::path::Path, toml: &str) -> Value {
    let suite = dir.join("suite.toml");
    std::fs::write(&suite, toml).expect("write suite");
    let out_dir = dir.join("out");
    let out = common::run_benchlab(&[
        "run",
        suite.to_str().expect("utf-8"),
        "--insecure",
        "--out",
        out_dir.to_str().expect("utf-8"),
    ]);
    common::assert_success("benchlab run", &out);
    serde_json::from_str(&std::fs::read_to_string(out_dir.join("results.json")).expect("results.json")).expect("JSON")
}

/// A suite whose first mix says `http = "2"` and whose second is HTTP/1.1,
/// against one nginx TLS listener that speaks both (ALPN): the HTTP/2 mix's
/// results name its connections and streams; the requests of both mixes
/// are nginx's log lines, each in its protocol.
#[test]
fn a_suite_mixes_an_http2_mix_and_an_http1_mix() {
    let server = nginx(true, 10_000);
    let work = tempfile::tempdir().expect("tempdir");
    let results = run_suite(
        work.path(),
        &format!(
            r#"name = "h2-and-h1"
target = "{}"
seed = 5

[defaults]
length = "2s"
ramp_up = "0.5s"
ramp_down = "0.5s"
threads_per_client = 8
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
streams_per_connection = 4

[[mix]]
clients = 1
"#,
            server.url("")
        ),
    );
    let h2 = &results["mixes"][0];
    assert_eq!(u(h2, "/http2/connections"), 2, "8 users ÷ 4 streams: {h2}");
    assert_eq!(u(h2, "/http2/streams_per_connection"), 4);
    // Streams are counted when opened in the window, requests when they end
    // in it: at most the 8 users' streams open as the window opens differ.
    assert!(u(h2, "/http2/streams_opened") + 8 >= u(h2, "/requests"), "{h2}");
    assert!(u(h2, "/requests") > 0 && u(h2, "/errors_total") == 0, "{h2}");
    // The HTTP/2 loop meters its own CPU each second, as the HTTP/1 loop
    // does (both charge one LoopMeter): no second reads 0.
    let seconds = h2["per_second"].as_array().expect("per_second");
    assert!(seconds.len() >= 2, "{h2}");
    for s in seconds {
        let cpu = s["client_cpu_user_s"].as_f64().unwrap_or(0.0) + s["client_cpu_system_s"].as_f64().unwrap_or(0.0);
        assert!(cpu > 0.0, "an HTTP/2 second without client CPU: {s}");
    }
    let h1 = &results["mixes"][1];
    assert!(h1.get("http2").is_none(), "an HTTP/1 mix has no http2 section");
    assert!(u(h1, "/requests") > 0 && u(h1, "/errors_total") == 0, "{h1}");
    // Every request the server logged is one of the mixes' (counted inside
    // their windows or not) or the preflight's: both protocols appear.
    let lines = server.access_log_lines();
    let h2_lines = lines.iter().filter(|l| l.version() == "HTTP/2.0").count() as u64;
    let h1_lines = lines.iter().filter(|l| l.version() == "HTTP/1.1").count() as u64;
    assert!(h2_lines >= u(h2, "/requests"), "{h2_lines}");
    assert!(h1_lines > u(h1, "/requests"), "{h1_lines} (the preflight is HTTP/1.1)");
    assert_eq!(h2_lines + h1_lines, lines.len() as u64);
    // The report names each mix's protocol.
    let html = std::fs::read_to_string(work.path().join("out").join("report.html")).expect("report.html");
    assert!(
        html.contains("HTTP/2, 2 conn. × 4 streams"),
        "no HTTP/2 mix in the report"
    );
    assert!(html.contains("<td>HTTP/1</td>"), "no HTTP/1 mix in the report");
}

/// A workload of an HTTP/2 class (`/4k.html`) and an HTTP/1 class
/// (`/1k.html`), 50 % each.
const CLASSES_OF_BOTH: &str = r#"
[workloads.one]
[[workloads.one.class]]
name = "h2page"
percent = 50
http = "2"
[[workloads.one.class.url]]
path = "/4k.html"
size = 4096

[[workloads.one.class]]
name = "h1page"
percent = 50
[[workloads.one.class.url]]
path = "/1k.html"
size = 1024
"#;

/// HTTP/1 and HTTP/2 classes in one mix, as browsers' traffic mixes them:
/// the class that says `http = "2"` goes over HTTP/2, the other over
/// HTTP/1.1, each client's users split between the two by the classes'
/// shares; nginx logs each class's requests in its protocol.
#[test]
fn http1_and_http2_classes_in_one_mix() {
    let server = nginx(true, 10_000);
    let work = tempfile::tempdir().expect("tempdir");
    let results = run_suite(
        work.path(),
        &format!(
            r#"name = "classes-of-both"
target = "{}"
seed = 6

[defaults]
length = "2s"
ramp_up = "0.5s"
ramp_down = "0.5s"
threads_per_client = 8
streams_per_connection = 2
timeout = "5s"

{CLASSES_OF_BOTH}
[[mix]]
clients = 1
"#,
            server.url("")
        ),
    );
    let mix = &results["mixes"][0];
    assert_eq!(mix["http2"]["classes"], serde_json::json!(["h2page"]), "{mix}");
    assert_eq!(u(mix, "/http2/connections"), 2, "4 HTTP/2 users ÷ 2 streams: {mix}");
    assert_eq!(u(mix, "/errors_total"), 0, "{mix}");
    let class = |name: &str| {
        mix["classes"]
            .as_array()
            .and_then(|cs| cs.iter().find(|c| c["name"] == name))
            .unwrap_or_else(|| panic!("no class {name}"))
            .clone()
    };
    let (h2c, h1c) = (class("h2page"), class("h1page"));
    assert!(u(&h2c, "/requests") > 0 && u(&h1c, "/requests") > 0, "{mix}");
    // Each class's requests are in nginx's log under its protocol (the log
    // also holds the ramps' requests and the preflight's).
    let lines = server.access_log_lines();
    let h2_4k = lines
        .iter()
        .filter(|l| l.version() == "HTTP/2.0" && l.path() == "/4k.html")
        .count() as u64;
    let h1_1k = lines
        .iter()
        .filter(|l| l.version() == "HTTP/1.1" && l.path() == "/1k.html")
        .count() as u64;
    assert!(h2_4k >= u(&h2c, "/requests"), "{h2_4k}");
    assert!(h1_1k >= u(&h1c, "/requests"), "{h1_1k}");
    assert_eq!(
        lines
            .iter()
            .filter(|l| (l.version() == "HTTP/2.0") != (l.path() == "/4k.html"))
            .count(),
        0,
        "a class went over the other protocol"
    );
    // The report's class table names each class's protocol.
    let html = std::fs::read_to_string(work.path().join("out").join("report.html")).expect("report.html");
    for (class, protocol) in [("h2page", "HTTP/2"), ("h1page", "HTTP/1")] {
        assert!(
            html.contains(&format!("<td>{class}</td><td>static</td><td></td><td>{protocol}</td>")),
            "the class table does not say {class} spoke {protocol}"
        );
    }
}

/// The same mix of an HTTP/2 class and an HTTP/1 class, at a rate: the
/// client's schedule is split by the classes' weights (50/50 here), each
/// protocol sending its share on a constant schedule of its own, so each
/// class gets half the sends and nginx logged each under its protocol.
#[test]
fn http1_and_http2_classes_in_one_mix_at_a_rate() {
    let server = nginx(true, 10_000);
    let work = tempfile::tempdir().expect("tempdir");
    let results = run_suite(
        work.path(),
        &format!(
            r#"name = "classes-of-both-at-a-rate"
target = "{}"
seed = 6

[defaults]
length = "2s"
ramp_up = "0s"
ramp_down = "0s"
streams_per_connection = 4
timeout = "5s"

{CLASSES_OF_BOTH}
[[mix]]
clients = 1
rate = 200
max_in_flight = 16
"#,
            server.url("")
        ),
    );
    let mix = &results["mixes"][0];
    assert_eq!(u(mix, "/errors_total"), 0, "{mix}");
    let class = |name: &str| {
        mix["classes"]
            .as_array()
            .and_then(|cs| cs.iter().find(|c| c["name"] == name))
            .map(|c| u(c, "/requests"))
            .unwrap_or_else(|| panic!("no class {name}"))
    };
    // 100/s each over the 2 s window: 200 sends meant per protocol; a
    // request still in flight at the window's end is not counted.
    let (h2, h1) = (class("h2page"), class("h1page"));
    assert!((190..=200).contains(&h2), "HTTP/2 class: {h2}: {mix}");
    assert!((190..=200).contains(&h1), "HTTP/1 class: {h1}: {mix}");
    let lines = server.access_log_lines_at_least((h1 + h2) as usize);
    let logged = |version: &str, path: &str| {
        lines
            .iter()
            .filter(|l| l.version() == version && l.path() == path)
            .count() as u64
    };
    assert!(logged("HTTP/2.0", "/4k.html") >= h2);
    assert!(logged("HTTP/1.1", "/1k.html") >= h1);
}
