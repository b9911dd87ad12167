//! Requests beyond GET (issue "Beyond GET"): `benchlab http -X`, `--data`,
//! `--data-binary`, `--chunked`, `-H`, `--basic-auth`, `--bearer`, against
//! nginx, counted exactly against its log: every request's method and
//! status, and benchlab's `bytes_sent` equal to the sum of nginx's
//! `$request_length` (request line, headers and body as nginx read them;
//! docs/counting.md, "Bytes sent").

mod common;

use common::servers::{Nginx, NginxOpts};
use common::{http_json, run_benchlab, u};

fn nginx() -> Nginx {
    Nginx::start(NginxOpts {
        keepalive_requests: 100_000,
        ..NginxOpts::default()
    })
}

/// Runs `benchlab http --json -n N ARGS URL/echo` and checks the run's
/// requests against nginx's log: N answered, each with `method` and 200,
/// and `bytes_sent` the sum of their `$request_length`. The preflight's
/// request (the log's first line) is the same request, closed after.
fn exact(server: &Nginx, method: &str, args: &[&str]) -> serde_json::Value {
    let url = server.url("/echo");
    let mut all = vec!["-n", "40", "-t", "4", "--os-threads", "1"];
    all.extend_from_slice(args);
    all.push(&url);
    let v = http_json(&all);
    assert_eq!(u(&v, "/requests"), 40, "{v}");
    assert_eq!(u(&v, "/errors_total"), 0, "{v}");
    let lines = server.access_log_lines_at_least(41);
    assert_eq!(lines.len(), 41, "the preflight's request and 40");
    assert!(
        lines.iter().all(|l| l.method() == method && l.status == 200),
        "{lines:?}"
    );
    let logged: u64 = lines[1..].iter().map(|l| l.request_length).sum();
    assert_eq!(
        u(&v, "/bytes_sent"),
        logged,
        "bytes_sent against nginx's $request_length: {v}"
    );
    v
}

#[test]
fn post_bodies_of_0_1k_and_1m_bytes_are_sent_exactly() {
    let work = tempfile::tempdir().expect("tempdir");
    for (size, chunked) in [
        (0usize, false),
        (1024, false),
        (1 << 20, false),
        (1024, true),
        (1 << 20, true),
    ] {
        let server = nginx();
        let body = work.path().join(format!("body-{size}"));
        std::fs::write(&body, vec![b'x'; size]).expect("write body");
        let at = format!("@{}", body.display());
        let mut args = vec!["--data-binary", at.as_str()];
        if chunked {
            args.push("--chunked");
        }
        let v = exact(&server, "POST", &args);
        // Each request carries its body: bytes_sent is at least the bodies.
        assert!(
            u(&v, "/bytes_sent") >= 40 * size as u64,
            "{size} B, chunked {chunked}: {v}"
        );
    }
}

#[test]
fn put_delete_and_headers_are_sent_as_asked() {
    let server = nginx();
    let v = exact(
        &server,
        "PUT",
        &[
            "-X",
            "PUT",
            "--data",
            "{\"a\":1}",
            "-H",
            "Content-Type: application/json",
        ],
    );
    assert!(u(&v, "/bytes_sent") > 40 * 7);
    let server = nginx();
    exact(&server, "DELETE", &["-X", "DELETE"]);
}

#[test]
fn expect_100_continue_sends_the_body_when_the_server_says_so() {
    let server = nginx();
    let work = tempfile::tempdir().expect("tempdir");
    let body = work.path().join("body");
    std::fs::write(&body, vec![b'y'; 4096]).expect("write body");
    let at = format!("@{}", body.display());
    exact(&server, "POST", &["--data-binary", &at, "-H", "Expect: 100-continue"]);
}

#[test]
fn credentials_never_reach_the_output() {
    let server = nginx();
    let url = server.url("/echo");
    for args in [vec!["--basic-auth", "alice:SECRETPW"], vec!["--bearer", "SECRETPW"]] {
        let mut all = vec!["http", "-n", "5", "-t", "1"];
        all.extend_from_slice(&args);
        all.push(&url);
        let out = run_benchlab(&all);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let mut json = all.clone();
        json.insert(1, "--json");
        let out_json = run_benchlab(&json);
        for text in [&out.stdout, &out.stderr, &out_json.stdout, &out_json.stderr] {
            assert!(!String::from_utf8_lossy(text).contains("SECRETPW"));
        }
    }
    // A value given wrong is refused without quoting it.
    let out = run_benchlab(&["http", "--basic-auth", "SECRETPW", &url]);
    assert_eq!(out.status.code(), Some(2));
    assert!(!String::from_utf8_lossy(&out.stderr).contains("SECRETPW"));
}

#[test]
fn a_body_where_it_cannot_go_is_refused_by_name() {
    let server = nginx();
    let url = server.url("/echo");
    let refused = |args: &[&str], says: &str| {
        let mut all = vec!["http"];
        all.extend_from_slice(args);
        all.push(&url);
        let out = run_benchlab(&all);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    };
    // curl's `-d` is benchlab's duration (wrk's): the message says so.
    refused(&["-d", "@body.json"], "--data");
    refused(&["--data", "x", "--chunked", "--http", "2"], "DATA frames");
    refused(&["--chunked"], "--chunked");
    refused(&["-X", "PO ST"], "method");
    refused(&["--data", "x", "-H", "Content-Length: 1"], "content-length");
}

/// HTTP/2 sends the method and the headers asked for (HPACK: `:method`
/// and literal fields), each request's HEADERS frame counted in
/// `bytes_sent`: the same block each time, so a whole multiple of 40.
#[test]
fn http2_sends_the_method_and_headers() {
    let server = Nginx::start(NginxOpts {
        http2: true,
        keepalive_requests: 100_000,
        ..NginxOpts::default()
    });
    let url = server.url("/any");
    let v = http_json(&[
        "-n",
        "40",
        "-t",
        "4",
        "--http",
        "2",
        "-X",
        "DELETE",
        "-H",
        "X-Bench: h2",
        &url,
    ]);
    assert_eq!(u(&v, "/requests"), 40, "{v}");
    assert_eq!(u(&v, "/errors_total"), 0, "{v}");
    let lines = server.access_log_lines_at_least(41);
    assert!(
        lines
            .iter()
            .all(|l| l.method() == "DELETE" && l.version() == "HTTP/2.0" && l.x_bench == "h2" && l.status == 200),
        "{lines:?}"
    );
    let sent = u(&v, "/bytes_sent");
    assert!(sent > 40 * 9 && sent.is_multiple_of(40), "{sent}");
}

/// A body over HTTP/2 goes in DATA frames as the server's windows allow
/// (512 KiB is past nginx's initial 64 KiB window: its WINDOW_UPDATEs let
/// the rest go), to nginx's WebDAV PUT, which reads every byte: every
/// request answered (204, the file replaced), and each request's frames
/// counted in `bytes_sent` — the body, a 9-byte header per DATA frame (as
/// many as the windows and the server's frame size made), and the HEADERS
/// frame. A server that answers before the body's end (nginx's `return`)
/// leaves each request `body_incomplete`.
#[test]
fn http2_sends_bodies_in_data_frames() {
    let work = tempfile::tempdir().expect("tempdir");
    for size in [1024u64, 512 * 1024] {
        let server = Nginx::start(NginxOpts {
            http2: true,
            keepalive_requests: 100_000,
            ..NginxOpts::default()
        });
        let body = work.path().join(format!("body-{size}"));
        std::fs::write(&body, vec![b'q'; size as usize]).expect("write body");
        let at = format!("@{}", body.display());
        let url = server.url("/put.bin");
        // The first PUT creates the file (201); the run's replace it.
        http_json(&[
            "-n",
            "1",
            "--http",
            "2",
            "-X",
            "PUT",
            "--data",
            "x",
            "--expect-status",
            "201",
            &url,
        ]);
        let v = http_json(&[
            "-n",
            "40",
            "-t",
            "4",
            "--http",
            "2",
            "-X",
            "PUT",
            "--data-binary",
            &at,
            "--expect-status",
            "204",
            &url,
        ]);
        assert_eq!(u(&v, "/requests"), 40, "{size}: {v}");
        assert_eq!(u(&v, "/errors_total"), 0, "{size}: {v}");
        let lines = server.access_log_lines_at_least(43);
        let wrong = lines[2..]
            .iter()
            .filter(|l| l.method() != "PUT" || l.status != 204)
            .count();
        assert_eq!(wrong, 0, "{size}: lines of another method or status");
        let sent = u(&v, "/bytes_sent");
        // At least the body, one DATA frame header and a HEADERS frame;
        // at most a frame header per 1 KiB of body more.
        let least = 40 * (size + 9 + 9 + 10);
        let most = 40 * (size + 9 * size.div_ceil(1024) + 9 + 200);
        assert!(
            (least..=most).contains(&sent),
            "{size}: bytes_sent {sent} not in {least}..={most}"
        );
        if size > 1024 {
            let early = server.url("/any");
            let v = http_json(&[
                "-n",
                "8",
                "-t",
                "2",
                "--http",
                "2",
                "--no-preflight",
                "--data-binary",
                &at,
                &early,
            ]);
            assert_eq!(u(&v, "/errors/body_incomplete"), 8, "{v}");
        }
    }
}

/// Bodies over TLS: each request is encrypted a record (16 KiB) at a time
/// from the OS thread's buffers, and what the socket does not take waits
/// in the connection until it is writable (crates/engine/src/sock.rs). 1
/// MiB PUTs over HTTP/1 and 512 KiB ones over HTTP/2 all complete, and
/// over HTTP/1 bytes_sent is the sum of nginx's `$request_length`, as in
/// plain HTTP.
#[test]
fn bodies_over_tls_are_sent_exactly() {
    let work = tempfile::tempdir().expect("tempdir");
    let body = work.path().join("body");
    for (http2, size) in [(false, 1usize << 20), (true, 512 * 1024)] {
        let server = Nginx::start(NginxOpts {
            tls: true,
            http2,
            keepalive_requests: 100_000,
            ..NginxOpts::default()
        });
        std::fs::write(&body, vec![b't'; size]).expect("write body");
        let at = format!("@{}", body.display());
        let url = server.url("/put.bin");
        let version = if http2 { "2" } else { "1.1" };
        // The first PUT creates the file (201); the run's replace it.
        http_json(&[
            "-n",
            "1",
            "--insecure",
            "--http",
            version,
            "-X",
            "PUT",
            "--data",
            "x",
            "--expect-status",
            "201",
            &url,
        ]);
        let v = http_json(&[
            "-n",
            "40",
            "-t",
            "4",
            "--insecure",
            "--http",
            version,
            "-X",
            "PUT",
            "--data-binary",
            &at,
            "--expect-status",
            "204",
            &url,
        ]);
        assert_eq!(u(&v, "/requests"), 40, "HTTP/{version}: {v}");
        assert_eq!(u(&v, "/errors_total"), 0, "HTTP/{version}: {v}");
        // The first run's preflight and PUT, the second's preflight, and
        // its 40.
        let lines = server.access_log_lines_at_least(43);
        assert_eq!(lines.len(), 43, "HTTP/{version}");
        let wrong = lines[2..]
            .iter()
            .filter(|l| l.method() != "PUT" || l.status != 204)
            .count();
        assert_eq!(wrong, 0, "HTTP/{version}: lines of another method or status");
        assert!(u(&v, "/bytes_sent") >= 40 * size as u64, "HTTP/{version}: {v}");
        if !http2 {
            let logged: u64 = lines[3..].iter().map(|l| l.request_length).sum();
            assert_eq!(
                u(&v, "/bytes_sent"),
                logged,
                "bytes_sent against nginx's $request_length: {v}"
            );
        }
    }
}

/// The README's POST example, run as written (its body file a real one,
/// its URL nginx's `/echo`, `-n 20` to keep the test short): every request
/// is a POST with the body nginx read.
#[test]
fn readme_post_example_runs_as_written() {
    let readme = std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md"))
        .expect("read README.md");
    let line = readme
        .lines()
        .find(|l| l.starts_with("benchlab http ") && l.contains("-X POST"))
        .expect("the README's POST example");
    let command = line.split('#').next().unwrap_or(line);
    let work = tempfile::tempdir().expect("tempdir");
    std::fs::write(work.path().join("body.json"), "{\"item\": 1}\n").expect("write body");
    let server = nginx();
    let url = server.url("/echo");
    let at = format!("@{}", work.path().join("body.json").display());
    // Split as a shell would: the quoted header is one word.
    let mut args: Vec<String> = Vec::new();
    let mut rest = command.trim();
    while !rest.is_empty() {
        let (word, after) = match rest.strip_prefix('\'') {
            Some(q) => q.split_once('\'').expect("a closing quote"),
            None => rest.split_once(' ').unwrap_or((rest, "")),
        };
        args.push(word.to_string());
        rest = after.trim_start();
    }
    assert_eq!(&args[..2], ["benchlab", "http"], "{line}");
    let args: Vec<String> = args[2..]
        .iter()
        .map(|a| match a.as_str() {
            "URL" => url.clone(),
            "@body.json" => at.clone(),
            _ => a.clone(),
        })
        .collect();
    let mut all: Vec<&str> = vec!["-n", "20"];
    all.extend(args.iter().map(String::as_str));
    let v = http_json(&all);
    assert_eq!(u(&v, "/requests"), 20, "{v}");
    let lines = server.access_log_lines_at_least(21);
    assert!(lines.iter().all(|l| l.method() == "POST" && l.status == 200));
    let logged: u64 = lines[1..].iter().map(|l| l.request_length).sum();
    assert_eq!(u(&v, "/bytes_sent"), logged, "{v}");
}
