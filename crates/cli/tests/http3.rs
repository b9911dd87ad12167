//! `--http 3` and `http = "3"` (docs/http3.md): counted exactly against
//! Caddy's JSON access log and against a test server on quinn-proto with
//! its own request log; misbehaving servers (a stream reset, a
//! CONNECTION_CLOSE mid-run, 10 % of datagrams lost in a relay, a server
//! that goes silent, one that never answers, one that speaks another QUIC
//! version) each counted in its own bucket; flags that cannot apply are
//! refused by name.

mod common;
#[path = "common/h3.rs"]
mod h3;

use common::{http_json, run_benchlab, s, u};
use h3::{Caddy, H3Server, Mode, Relay, BODY, LARGE, LARGE_FRAMES};
use serde_json::Value;
use std::net::UdpSocket;

const SIZE: u64 = 4096;

/// A docroot with `/4k.bin` of [`SIZE`] bytes.
fn docroot(dir: &std::path::Path) -> std::path::PathBuf {
    let www = dir.join("www");
    std::fs::create_dir_all(&www).expect("docroot");
    let body: Vec<u8> = (0..SIZE).map(|i| (i % 251) as u8).collect();
    std::fs::write(www.join("4k.bin"), body).expect("4k.bin");
    www
}

fn bench(args: &[&str]) -> Value {
    let mut all = vec!["--os-threads", "1", "--timeout", "5s"];
    all.extend_from_slice(args);
    http_json(&all)
}

/// Caddy logs one line per request stream, `proto` HTTP/3.0, and the
/// bodies it logs are the run's body bytes; the certificate is checked
/// against Caddy's own CA (`--ca-file`).
#[test]
fn caddy_counts_exactly_over_http3() {
    let dir = tempfile::tempdir().expect("tempdir");
    let www = docroot(dir.path());
    let caddy = Caddy::start(dir.path(), &www);
    let ca = caddy.ca();
    let url = caddy.url("/4k.bin");
    let v = bench(&[
        "--http",
        "3",
        "--ca-file",
        s(&ca),
        "--connections",
        "2",
        "--streams",
        "4",
        "-n",
        "400",
        &url,
    ]);
    assert_eq!(u(&v, "/requests"), 400, "{v}");
    assert_eq!(u(&v, "/errors_total"), 0, "{v}");
    assert_eq!(u(&v, "/body_bytes"), 400 * SIZE, "{v}");
    assert_eq!(u(&v, "/connections_opened"), 2, "{v}");
    assert_eq!(u(&v, "/http2/streams_opened"), 400, "{v}");
    assert_eq!(u(&v, "/http2/quic/handshakes"), 2, "{v}");
    assert!(
        u(&v, "/http2/quic/datagrams_sent") > 0 && u(&v, "/http2/quic/udp_bytes_received") > 400 * SIZE,
        "{v}"
    );
    // Every response's frames: more than its body, counted per request.
    assert!(u(&v, "/bytes") > 400 * SIZE, "{v}");
    let lines = caddy.log_lines_at_least(401);
    assert_eq!(lines.len(), 401, "log lines = requests + the preflight");
    assert!(
        lines
            .iter()
            .all(|l| l.proto == "HTTP/3.0" && l.status == 200 && l.uri == "/4k.bin"),
        "{lines:?}"
    );
    let body: u64 = lines[1..].iter().map(|l| l.size).sum();
    assert_eq!(body, u(&v, "/body_bytes"));
}

/// The test server logs what it answered; each response is exactly 1,008
/// bytes of frames (HEADERS 5, DATA 3 + 1,000), so `bytes` is known.
#[test]
fn test_server_counts_frame_bytes_exactly() {
    let server = H3Server::start(Mode::Normal);
    let v = bench(&[
        "--http",
        "3",
        "--insecure",
        "--connections",
        "1",
        "--streams",
        "5",
        "-n",
        "300",
        &server.url("/x"),
    ]);
    assert_eq!(u(&v, "/requests"), 300, "{v}");
    assert_eq!(u(&v, "/errors_total"), 0, "{v}");
    assert_eq!(u(&v, "/body_bytes"), 300 * BODY as u64, "{v}");
    assert_eq!(u(&v, "/bytes"), 300 * 1008, "{v}");
    let log = server.log();
    assert_eq!(log.len(), 301, "log lines = requests + the preflight");
    assert!(log.iter().all(|l| l.status == 200), "{log:?}");
}

/// Every fifth request stream reset by the server: a `stream_reset`
/// error each, by its HTTP/3 code.
#[test]
fn a_stream_reset_is_counted_by_code() {
    let server = H3Server::start(Mode::ResetEvery(5));
    let v = bench(&[
        "--http",
        "3",
        "--insecure",
        "--no-preflight",
        "--connections",
        "1",
        "-n",
        "100",
        &server.url("/x"),
    ]);
    // `requests` are the answered ones; the failed are `errors`.
    assert_eq!(u(&v, "/requests"), 80, "{v}");
    assert_eq!(u(&v, "/errors/stream_reset"), 20, "{v}");
    assert_eq!(u(&v, "/errors_total"), 20, "{v}");
    assert_eq!(u(&v, "/http2/stream_resets/H3_REQUEST_REJECTED"), 20, "{v}");
    assert_eq!(server.log().iter().filter(|l| l.status == 0).count(), 20);
}

/// The server closes each connection (CONNECTION_CLOSE, H3_INTERNAL_ERROR)
/// on its 31st request: that request fails as `quic_close`, the next goes
/// on a new connection. 100 requests: 97 answered, 3 closed.
#[test]
fn a_connection_close_mid_run_fails_the_streams_in_flight() {
    let server = H3Server::start(Mode::CloseAfter(30));
    let v = bench(&[
        "--http",
        "3",
        "--insecure",
        "--no-preflight",
        "--connections",
        "1",
        "-n",
        "100",
        &server.url("/x"),
    ]);
    assert_eq!(u(&v, "/requests"), 97, "{v}");
    assert_eq!(u(&v, "/errors/quic_close"), 3, "{v}");
    assert_eq!(u(&v, "/errors_total"), 3, "{v}");
    assert_eq!(u(&v, "/connections_opened"), 4, "{v}");
    assert_eq!(u(&v, "/http2/quic/connection_closes/H3_INTERNAL_ERROR"), 3, "{v}");
    let log = server.log();
    assert_eq!(log.iter().filter(|l| l.status == 200).count(), 97, "{log:?}");
}

/// A relay that drops every tenth datagram, both ways: every request
/// still completes once (the server logs each once), and the lost packets
/// are counted.
#[test]
fn ten_percent_loss_is_recovered_and_counted() {
    let server = H3Server::start(Mode::Normal);
    let relay = Relay::start(server.port, 10);
    let url = format!("https://localhost:{}/x", relay.port);
    let v = bench(&[
        "--http",
        "3",
        "--insecure",
        "--connections",
        "1",
        "--streams",
        "4",
        "-n",
        "200",
        &url,
    ]);
    assert_eq!(u(&v, "/requests"), 200, "{v}");
    assert_eq!(u(&v, "/errors_total"), 0, "{v}");
    assert_eq!(u(&v, "/bytes"), 200 * 1008, "{v}");
    assert_eq!(server.log().len(), 201, "each request reached the server once");
    assert!(relay.dropped() > 0);
    assert!(u(&v, "/http2/quic/packets_lost") > 0, "{v}");
}

/// A server that answers five requests and then goes silent (no answer,
/// no ACK): the requests after time out, and the run ends on time.
#[test]
fn a_silent_server_times_out_and_the_run_ends() {
    let server = H3Server::start(Mode::SilentAfter(5));
    let v = http_json(&[
        "--os-threads",
        "1",
        "--http",
        "3",
        "--insecure",
        "--no-preflight",
        "--connections",
        "1",
        "--timeout",
        "1s",
        "-d",
        "3s",
        &server.url("/x"),
    ]);
    let timeouts = u(&v, "/errors/timeout");
    assert!(timeouts >= 1, "{v}");
    assert_eq!(u(&v, "/errors_total"), timeouts, "{v}");
    assert_eq!(u(&v, "/requests"), 5, "{v}");
}

/// Nothing answers on the UDP port: the request fails as
/// `handshake_timeout`; the preflight says what to check.
#[test]
fn no_answer_is_a_handshake_timeout() {
    let silent = UdpSocket::bind("127.0.0.1:0").expect("bind");
    let url = format!("https://localhost:{}/x", silent.local_addr().expect("addr").port());
    let v = http_json(&[
        "--http",
        "3",
        "--insecure",
        "--no-preflight",
        "--connections",
        "1",
        "--timeout",
        "1s",
        "-n",
        "1",
        &url,
    ]);
    assert_eq!(u(&v, "/errors_total"), 1, "{v}");
    assert_eq!(u(&v, "/errors/handshake_timeout"), 1, "{v}");
    let out = run_benchlab(&["http", "--http", "3", "--insecure", "--timeout", "1s", "-n", "1", &url]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("no QUIC handshake") && err.contains("HTTP/3"), "{err}");
}

/// A server that answers the Initial with a Version Negotiation packet
/// offering only a version benchlab does not speak.
#[test]
fn a_version_negotiation_is_its_own_error() {
    let server = UdpSocket::bind("127.0.0.1:0").expect("bind");
    let port = server.local_addr().expect("addr").port();
    let t = std::thread::spawn(move || {
        let mut buf = [0u8; 2048];
        server
            .set_read_timeout(Some(std::time::Duration::from_secs(10)))
            .expect("timeout");
        // Answers every Initial (the client may send it again).
        while let Ok((n, from)) = server.recv_from(&mut buf) {
            if n < 7 || buf[0] & 0x80 == 0 {
                continue;
            }
            // Long header: flags, version (4), DCID length and DCID, SCID
            // length and SCID; the answer swaps the two IDs.
            let dcid = &buf[6..6 + buf[5] as usize];
            let at = 6 + dcid.len();
            let scid = &buf[at + 1..at + 1 + buf[at] as usize];
            let mut vn = vec![0x80, 0, 0, 0, 0, scid.len() as u8];
            vn.extend_from_slice(scid);
            vn.push(dcid.len() as u8);
            vn.extend_from_slice(dcid);
            vn.extend_from_slice(&[0x1a, 0x2a, 0x3a, 0x4a]);
            let _ = server.send_to(&vn, from);
            if buf[0] == 0xff {
                break;
            }
        }
    });
    let url = format!("https://localhost:{port}/x");
    let v = http_json(&[
        "--http",
        "3",
        "--insecure",
        "--no-preflight",
        "--connections",
        "1",
        "--timeout",
        "2s",
        "-n",
        "1",
        &url,
    ]);
    assert_eq!(u(&v, "/errors_total"), 1, "{v}");
    assert_eq!(u(&v, "/errors/version_negotiation"), 1, "{v}");
    // The responder ends at its read timeout.
    drop(t);
}

/// What cannot apply to HTTP/3 is refused by name.
#[test]
fn flags_that_cannot_apply_are_refused() {
    for (args, name) in [
        (vec!["--h2-window", "1000"], "--h2-window"),
        (vec!["--chunked", "--data", "x"], "--chunked"),
        (vec!["--receive-buffer", "4096"], "--receive-buffer"),
    ] {
        let mut all = vec!["http", "--http", "3"];
        all.extend_from_slice(&args);
        all.push("https://localhost:9/");
        let out = run_benchlab(&all);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(name), "{args:?}: {err}");
    }
    // Cleartext: QUIC is always encrypted.
    let out = run_benchlab(&["http", "--http", "3", "-n", "1", "http://127.0.0.1:9/"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("https://"), "{err}");
}

/// HTTP/1 and HTTP/3 classes in one mix against Caddy: the class that says
/// `http = "3"` goes over QUIC, the other over HTTP/1.1, and Caddy logs
/// each class's requests in its protocol.
#[test]
fn http1_and_http3_classes_in_one_mix() {
    let dir = tempfile::tempdir().expect("tempdir");
    let www = docroot(dir.path());
    std::fs::write(www.join("1k.bin"), vec![b'a'; 1024]).expect("1k.bin");
    let caddy = Caddy::start(dir.path(), &www);
    let suite = dir.path().join("suite.toml");
    std::fs::write(
        &suite,
        format!(
            r#"name = "h1-and-h3"
target = "{}"
seed = 3

[defaults]
length = "2s"
ramp_up = "0s"
ramp_down = "0s"
threads_per_client = 4
timeout = "5s"

[workloads.one]
[[workloads.one.class]]
name = "h3page"
percent = 50
http = "3"
[[workloads.one.class.url]]
path = "/4k.bin"
size = 4096

[[workloads.one.class]]
name = "h1page"
percent = 50
[[workloads.one.class.url]]
path = "/1k.bin"
size = 1024

[[mix]]
clients = 1
"#,
            caddy.url("")
        ),
    )
    .expect("suite");
    let out = dir.path().join("out");
    let results = common::run_suite(&suite, &out, &["--ca-file", s(&caddy.ca())]);
    let mix = &results["mixes"][0];
    assert_eq!(mix["http2"]["classes"], serde_json::json!(["h3page"]), "{mix}");
    assert!(mix["http2"]["quic"]["handshakes"].as_u64().unwrap_or(0) >= 1, "{mix}");
    let class = |name: &str| {
        mix["classes"]
            .as_array()
            .and_then(|cs| cs.iter().find(|c| c["name"] == name))
            .cloned()
            .unwrap_or_else(|| panic!("no class {name} in {mix}"))
    };
    let (h3c, h1c) = (class("h3page"), class("h1page"));
    assert_eq!(u(&h3c, "/errors_total") + u(&h1c, "/errors_total"), 0, "{mix}");
    let lines = caddy.log_lines_at_least(2);
    let h3_lines = lines.iter().filter(|l| l.uri == "/4k.bin").collect::<Vec<_>>();
    let h1_lines = lines.iter().filter(|l| l.uri == "/1k.bin").collect::<Vec<_>>();
    assert!(h3_lines.iter().all(|l| l.proto == "HTTP/3.0"), "{h3_lines:?}");
    assert!(h1_lines.iter().all(|l| l.proto == "HTTP/1.1"), "{h1_lines:?}");
    // Every request the window counted is in the log (and the preflight's
    // and the ramps' too).
    assert!(
        h3_lines.len() as u64 > u(&h3c, "/requests") && u(&h3c, "/requests") > 0,
        "{mix}"
    );
    assert!(
        h1_lines.len() as u64 > u(&h1c, "/requests") && u(&h1c, "/requests") > 0,
        "{mix}"
    );
    // The report names the mix's and each class's protocol.
    let html = std::fs::read_to_string(out.join("report.html")).expect("report.html");
    assert!(
        html.contains("HTTP/3, 2 conn. × 1 streams"),
        "no HTTP/3 mix in the report"
    );
    assert!(
        html.contains("<td>HTTP/3</td>") && html.contains("<td>HTTP/1</td>"),
        "class protocols"
    );
}

/// An open loop over HTTP/3: a user is a request slot, one stream; every
/// send is a request the server logged (the preflight besides), and the
/// sends with those due but never sent are the schedule's.
#[test]
fn open_loop_sends_are_streams() {
    let server = H3Server::start(Mode::Normal);
    let r = http_json(&[
        "--http",
        "3",
        "--insecure",
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
        &server.url("/x"),
    ]);
    assert_eq!(r["http_command"]["mode"], "open", "{r}");
    // The schedule's 400 (k/200 s for k = 0…399): a client that ran late
    // at the end left its last ones unsent, and counts them so.
    let sends = u(&r, "/open_loop/sends");
    assert_eq!(sends + u(&r, "/open_loop/unsent"), 400, "{r}");
    assert!(sends >= 360, "{r}");
    assert_eq!(u(&r, "/errors_total"), 0, "{r}");
    // Every send ended in the window or was still in flight at its end.
    assert_eq!(u(&r, "/requests") + u(&r, "/in_flight"), sends, "{r}");
    assert_eq!(u(&r, "/body_bytes"), u(&r, "/requests") * BODY as u64, "{r}");
    assert_eq!(u(&r, "/http2/connections"), 2, "{r}");
    assert!(
        server.log().len() as u64 > u(&r, "/requests"),
        "the preflight's and every request's"
    );
}

/// Without `--insecure`, the test server's self-signed certificate is
/// refused: the request is `tls`, and the preflight says why.
#[test]
fn an_untrusted_certificate_is_a_tls_error() {
    let server = H3Server::start(Mode::Normal);
    let v = http_json(&[
        "--http",
        "3",
        "--no-preflight",
        "--connections",
        "1",
        "-n",
        "1",
        &server.url("/x"),
    ]);
    assert_eq!(u(&v, "/errors/tls"), 1, "{v}");
    assert_eq!(u(&v, "/errors_total"), 1, "{v}");
    assert!(server.log().is_empty());
    let out = run_benchlab(&["http", "--http", "3", "-n", "1", &server.url("/x")]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("tls") && err.contains("certificate"), "{err}");
}

/// `http --http 3 --agents 2`: the plan (HTTP/2's with `h3`) travels to
/// two agents, each client runs its 200 requests over QUIC from its own
/// address, and the server logged exactly those and the preflight.
#[test]
fn http3_runs_on_agents() {
    let server = H3Server::start(Mode::Normal);
    let work = tempfile::tempdir().expect("tempdir");
    let certs = work.path().join("certs");
    common::assert_success(
        "lab certs",
        &run_benchlab(&["lab", "certs", "--out", s(&certs), "--agents", "2"]),
    );
    let port = common::free_port();
    let listen = format!("127.0.0.1:{port}");
    let url = server.url("/x");
    let bin = common::benchlab_bin();
    let ctl = std::process::Command::new(bin)
        .args([
            "http",
            &url,
            "--http",
            "3",
            "--insecure",
            "--connections",
            "2",
            "--streams",
            "2",
            "-n",
            "400",
        ])
        .args(["--agents", "2", "--listen", &listen, "--tls-dir", s(&certs), "--json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("controller");
    let agents: Vec<_> = (0..2)
        .map(|i| {
            std::process::Command::new(bin)
                .args(["agent", "--controller", &listen])
                .arg("--cert")
                .arg(certs.join(format!("agent-{i}.pem")))
                .arg("--key")
                .arg(certs.join(format!("agent-{i}.key")))
                .arg("--ca")
                .arg(certs.join("ca.pem"))
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .expect("agent")
        })
        .collect();
    let out = ctl.wait_with_output().expect("controller output");
    for mut a in agents {
        assert!(a.wait().expect("agent").success());
    }
    common::assert_success("http --http 3 --agents 2", &out);
    let r = common::http_mix(&out.stdout);
    assert_eq!(u(&r, "/requests"), 400, "{r}");
    assert_eq!(u(&r, "/errors_total"), 0, "{r}");
    let per_client: Vec<u64> = r["client_data"]
        .as_array()
        .expect("client_data")
        .iter()
        .map(|c| u(c, "/requests"))
        .collect();
    assert_eq!(per_client, [200, 200], "{r}");
    assert_eq!(u(&r, "/http2/quic/handshakes"), 2, "one connection per client: {r}");
    assert_eq!(server.log().len(), 401, "400 requests and the preflight");
}

/// One workload of HTTP/1.1, HTTP/2 and HTTP/3 classes, as a browser's
/// traffic to one site: the client splits its users between the three
/// protocols (each on event loops of its own) and Caddy logs each class's
/// requests in its protocol; the mix's figures are one.
#[test]
fn http1_http2_and_http3_classes_in_one_workload() {
    let dir = tempfile::tempdir().expect("tempdir");
    let www = docroot(dir.path());
    std::fs::write(www.join("1k.bin"), vec![b'a'; 1024]).expect("1k.bin");
    std::fs::write(www.join("2k.bin"), vec![b'b'; 2048]).expect("2k.bin");
    let caddy = Caddy::start(dir.path(), &www);
    let suite = dir.path().join("suite.toml");
    std::fs::write(
        &suite,
        format!(
            r#"name = "one-two-three"
target = "{}"
seed = 5

[defaults]
length = "2s"
ramp_up = "0s"
ramp_down = "0s"
threads_per_client = 6
timeout = "5s"

[workloads.one]
[[workloads.one.class]]
name = "h1page"
percent = 34
[[workloads.one.class.url]]
path = "/1k.bin"
size = 1024

[[workloads.one.class]]
name = "h2page"
percent = 33
http = "2"
[[workloads.one.class.url]]
path = "/2k.bin"
size = 2048

[[workloads.one.class]]
name = "h3page"
percent = 33
http = "3"
[[workloads.one.class.url]]
path = "/4k.bin"
size = 4096

[[mix]]
clients = 1
"#,
            caddy.url("")
        ),
    )
    .expect("suite");
    let out = dir.path().join("out");
    let results = common::run_suite(&suite, &out, &["--ca-file", s(&caddy.ca())]);
    let mix = &results["mixes"][0];
    assert_eq!(
        mix["http2"]["classes"],
        serde_json::json!(["h2page", "h3page"]),
        "{mix}"
    );
    assert!(mix["http2"]["quic"]["handshakes"].as_u64().unwrap_or(0) >= 1, "{mix}");
    let lines = caddy.log_lines_at_least(3);
    for (name, path, proto) in [
        ("h1page", "/1k.bin", "HTTP/1.1"),
        ("h2page", "/2k.bin", "HTTP/2.0"),
        ("h3page", "/4k.bin", "HTTP/3.0"),
    ] {
        let class = mix["classes"]
            .as_array()
            .and_then(|cs| cs.iter().find(|c| c["name"] == name))
            .cloned()
            .unwrap_or_else(|| panic!("no class {name} in {mix}"));
        assert_eq!(u(&class, "/errors_total"), 0, "{name}: {mix}");
        let logged: Vec<_> = lines.iter().filter(|l| l.uri == path).collect();
        assert!(logged.iter().all(|l| l.proto == proto), "{name}: {logged:?}");
        // Every request the window counted is in the log, with the
        // preflight's.
        let requests = u(&class, "/requests");
        assert!(requests > 0 && logged.len() as u64 > requests, "{name}: {mix}");
    }
    let html = std::fs::read_to_string(out.join("report.html")).expect("report.html");
    assert!(
        html.contains("<td>HTTP/3</td>") && html.contains("<td>HTTP/2</td>") && html.contains("<td>HTTP/1</td>"),
        "class protocols"
    );
}

/// `--requests-per-connection 10`: each QUIC connection carries ten
/// streams, then closes (H3_NO_ERROR) and the next opens.
#[test]
fn requests_per_connection_bounds_each_quic_connection() {
    let server = H3Server::start(Mode::Normal);
    let v = bench(&[
        "--http",
        "3",
        "--insecure",
        "--connections",
        "1",
        "--requests-per-connection",
        "10",
        "-n",
        "50",
        &server.url("/x"),
    ]);
    assert_eq!(u(&v, "/requests"), 50, "{v}");
    assert_eq!(u(&v, "/errors_total"), 0, "{v}");
    assert_eq!(u(&v, "/connections_opened"), 5, "{v}");
    assert_eq!(u(&v, "/http2/quic/handshakes"), 5, "{v}");
    assert_eq!(server.log().len(), 51, "50 requests and the preflight");
}

/// A whole mix over HTTP/3 (`http = "3"` on the mix) in a suite: every
/// class over QUIC, the streams per connection the suite's.
#[test]
fn a_suite_mix_over_http3() {
    let server = H3Server::start(Mode::Normal);
    let dir = tempfile::tempdir().expect("tempdir");
    let suite = dir.path().join("suite.toml");
    std::fs::write(
        &suite,
        format!(
            r#"name = "all-h3"
target = "{}"

[defaults]
length = "1s"
ramp_up = "0s"
ramp_down = "0s"
threads_per_client = 4
streams_per_connection = 2
http = "3"
timeout = "5s"

[workloads.one]
[[workloads.one.class]]
name = "x"
percent = 100
[[workloads.one.class.url]]
path = "/x"
size = {BODY}

[[mix]]
clients = 1
"#,
            server.url("")
        ),
    )
    .expect("suite");
    let results = common::run_suite(&suite, &dir.path().join("out"), &["--insecure"]);
    let mix = &results["mixes"][0];
    assert_eq!(u(mix, "/errors_total"), 0, "{mix}");
    assert!(u(mix, "/requests") > 0, "{mix}");
    assert_eq!(u(mix, "/http2/connections"), 2, "4 users over 2 streams each: {mix}");
    assert_eq!(u(mix, "/http2/quic/handshakes"), 2, "{mix}");
    assert_eq!(u(mix, "/body_bytes"), u(mix, "/requests") * BODY as u64, "{mix}");
    // The server answered every counted request (and the preflight's and
    // those of no window).
    assert!(server.log().len() as u64 > u(mix, "/requests"), "{mix}");
}

/// UDP offloads are used and disclosed (docs/http3.md): a 256 KiB upload
/// on one stream leaves as bursts of full datagrams, which go out in GSO
/// sends (Linux has had UDP GSO since 4.18, and loopback takes it), and
/// the request and frame bytes count as they would without.
#[test]
fn a_large_upload_leaves_in_gso_batches() {
    let server = H3Server::start(Mode::Normal);
    let dir = tempfile::tempdir().expect("tempdir");
    let body = dir.path().join("body.bin");
    std::fs::write(&body, vec![b'u'; 256 * 1024]).expect("body");
    let data = format!("@{}", body.display());
    let v = bench(&[
        "--http",
        "3",
        "--insecure",
        "--connections",
        "1",
        "--streams",
        "1",
        "-n",
        "10",
        "-X",
        "POST",
        "--data",
        &data,
        &server.url("/x"),
    ]);
    assert_eq!(u(&v, "/requests"), 10, "{v}");
    assert_eq!(u(&v, "/errors_total"), 0, "{v}");
    assert_eq!(u(&v, "/body_bytes"), 10 * BODY as u64, "{v}");
    assert!(u(&v, "/bytes_sent") > 10 * 256 * 1024, "{v}");
    assert!(u(&v, "/http2/quic/gso_sends") > 0, "no GSO send: {v}");
    let log = server.log();
    assert_eq!(log.len(), 11, "log lines = requests + the preflight");
}

/// GRO reads are used and disclosed: a server that sends its 256 KiB
/// answers in GSO batches reaches a client socket with UDP_GRO (Linux 5.0
/// and later) as coalesced reads, split back into datagrams for QUIC; the
/// frame and body bytes count exactly as without.
#[test]
fn a_large_download_arrives_in_gro_reads() {
    let server = H3Server::start(Mode::Large);
    let v = bench(&[
        "--http",
        "3",
        "--insecure",
        "--connections",
        "1",
        "--streams",
        "1",
        "-n",
        "10",
        &server.url("/big"),
    ]);
    assert_eq!(u(&v, "/requests"), 10, "{v}");
    assert_eq!(u(&v, "/errors_total"), 0, "{v}");
    assert_eq!(u(&v, "/body_bytes"), 10 * LARGE as u64, "{v}");
    assert_eq!(u(&v, "/bytes"), 10 * LARGE_FRAMES, "{v}");
    assert!(u(&v, "/http2/quic/gro_reads") > 0, "no GRO read: {v}");
    assert!(
        u(&v, "/http2/quic/datagrams_received") > u(&v, "/http2/quic/gro_reads"),
        "{v}"
    );
    let log = server.log();
    assert_eq!(log.len(), 11, "log lines = requests + the preflight");
}

/// 50 requests of one user over HTTP/3, 5 a connection, every new
/// connection offering to resume (`--tls-resumption 100`): all answered,
/// each once, on 10 connections.
fn resuming_run(server: &H3Server) -> Value {
    let v = bench(&[
        "--http",
        "3",
        "--insecure",
        "--connections",
        "1",
        "--streams",
        "1",
        "--requests-per-connection",
        "5",
        "--tls-resumption",
        "100",
        "-n",
        "50",
        &server.url("/x"),
    ]);
    assert_eq!(u(&v, "/requests"), 50, "{v}");
    assert_eq!(u(&v, "/errors_total"), 0, "{v}");
    assert_eq!(u(&v, "/bytes"), 50 * 1008, "{v}");
    assert_eq!(u(&v, "/connections_opened"), 10, "{v}");
    v
}

/// `--tls-resumption` over HTTP/3: a resuming connection sends its first
/// request as 0-RTT early data; full handshakes, resumptions and 0-RTT are
/// counted apart, each request once. One user, 5 requests a connection: the
/// first connection is a full handshake, the 9 after it resume with the
/// tickets the one before received, and the server takes their early data.
#[test]
fn resumed_connections_send_0rtt_and_count_apart() {
    let server = H3Server::start(Mode::Normal);
    let v = resuming_run(&server);
    assert_eq!(u(&v, "/tls_full_handshakes"), 1, "{v}");
    assert_eq!(u(&v, "/tls_resumptions"), 9, "{v}");
    assert_eq!(u(&v, "/http2/quic/zero_rtt_accepted"), 9, "{v}");
    assert_eq!(u(&v, "/http2/quic/zero_rtt_rejected"), 0, "{v}");
    assert_eq!(server.log().len(), 51, "log lines = requests + the preflight");
}

/// A server that refuses the resumption (it forgot the session) refuses
/// its 0-RTT data too: each such connection counts a full handshake and a
/// rejected 0-RTT, and its requests go again on new streams — each answered
/// and counted once, nothing lost.
#[test]
fn refused_early_data_is_sent_again() {
    let server = H3Server::start(Mode::ForgetSessions);
    let v = resuming_run(&server);
    assert_eq!(u(&v, "/tls_full_handshakes"), 10, "{v}");
    assert_eq!(u(&v, "/tls_resumptions"), 0, "{v}");
    assert_eq!(u(&v, "/http2/quic/zero_rtt_accepted"), 0, "{v}");
    assert_eq!(u(&v, "/http2/quic/zero_rtt_rejected"), 9, "{v}");
    assert_eq!(server.log().len(), 51, "log lines = requests + the preflight");
}

/// `--find-peak` over HTTP/3: a mix per load of the search, each with its
/// QUIC connections (users ÷ streams) and no error; the search doubles the
/// users from 2 up to its limit, as for HTTP/1 and HTTP/2.
#[test]
fn find_peak_runs_over_http3() {
    let server = H3Server::start(Mode::Normal);
    let out = run_benchlab(&[
        "http",
        "--json",
        "--http",
        "3",
        "--insecure",
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
        &server.url("/x"),
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let r: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let steps = r["mixes"].as_array().expect("mixes");
    assert!(steps.len() >= 3, "{r}");
    for s in steps {
        let threads = u(s, "/threads");
        assert_eq!(u(s, "/http2/connections"), threads.div_ceil(4), "{s}");
        assert!(u(s, "/requests") > 0, "{s}");
        assert_eq!(u(s, "/errors_total"), 0, "{s}");
        // The handshakes fall in the ramp-up; the window sees QUIC traffic.
        assert!(u(s, "/http2/quic/datagrams_received") > 0, "{s}");
    }
    let mut grown: Vec<(u64, u64)> = steps
        .iter()
        .filter(|s| s["search"]["kind"] == "grow")
        .map(|s| (u(s, "/search/step"), u(s, "/threads")))
        .collect();
    grown.sort_unstable();
    let grown: Vec<u64> = grown.into_iter().map(|(_, t)| t).collect();
    assert_eq!(grown, [2, 4, 8], "{r}");
}
