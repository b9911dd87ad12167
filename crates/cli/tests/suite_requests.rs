//! A suite's classes and URLs say `method`, `headers`, `body` /
//! `body_file` and `chunked` (docs/running.md, "Requests beyond GET"): run
//! against nginx, each class's requests are logged with its method, and
//! each class's `bytes_sent` is its requests times the request's length as
//! nginx read it (`$request_length`); mistakes are refused at `check` with
//! the file and line.

mod common;

use common::servers::{Nginx, NginxOpts};
use common::{run_benchlab, run_suite, s, u};

fn suite_text(target: &str, class_extra: &str) -> String {
    format!(
        r#"name = "requests"
target = "{target}"
seed = 4

[defaults]
length = "1s"
ramp_up = "0s"
ramp_down = "0s"
timeout = "5s"
threads_per_client = 4

[workloads.shop]
[[workloads.shop.class]]
name = "add"
percent = 50
method = "POST"
headers = {{ "Content-Type" = "application/json", "X-Bench" = "add" }}
body = '{{"item":1,"qty":2}}'
{class_extra}
[[workloads.shop.class.url]]
path = "/echo"

[[workloads.shop.class]]
name = "upload"
percent = 50
[[workloads.shop.class.url]]
path = "/echo"
method = "PUT"
body_file = "body.bin"
chunked = true
headers = {{ "X-Bench" = "upload" }}

[[mix]]
clients = 1
"#
    )
}

#[test]
fn classes_and_urls_send_their_method_headers_and_body_exactly() {
    let server = Nginx::start(NginxOpts {
        keepalive_requests: 100_000,
        ..NginxOpts::default()
    });
    let work = tempfile::tempdir().expect("tempdir");
    std::fs::write(work.path().join("body.bin"), vec![b'z'; 3000]).expect("body");
    let suite = work.path().join("suite.toml");
    std::fs::write(&suite, suite_text(&server.url(""), "")).expect("suite");
    let results = run_suite(&suite, &work.path().join("out"), &[]);
    let mix = &results["mixes"][0];
    assert_eq!(u(mix, "/errors_total"), 0, "{mix}");
    let lines = server.access_log_lines();
    for (class, method, tag) in [("add", "POST", "add"), ("upload", "PUT", "upload")] {
        let c = mix["classes"]
            .as_array()
            .and_then(|cs| cs.iter().find(|c| c["name"] == class))
            .unwrap_or_else(|| panic!("no class {class}: {mix}"));
        // The preflight's request (with `Connection: close`) aside; a
        // request cut at the mix's end is logged 499.
        let mine: Vec<_> = lines
            .iter()
            .filter(|l| l.x_bench == tag && l.connection_header != "close")
            .collect();
        let wrong = mine
            .iter()
            .filter(|l| l.method() != method || !matches!(l.status, 200 | 499))
            .count();
        assert_eq!(wrong, 0, "{class}: lines of another method or status");
        // Every request of the class is the same bytes: nginx read each
        // at the same length, and the class sent that many per request.
        let length = mine[0].request_length;
        assert!(
            mine.iter().all(|l| l.request_length == length),
            "{class}: lengths differ"
        );
        assert!(u(c, "/requests") > 0, "{c}");
        assert_eq!(u(c, "/bytes_sent"), u(c, "/requests") * length, "{class}: {c}");
        assert!(mine.len() as u64 >= u(c, "/requests"));
    }
    // The upload's body went chunked: 3000 bytes and their framing.
    let upload = lines.iter().find(|l| l.x_bench == "upload").expect("an upload");
    assert!(upload.request_length > 3000 + "bb8\r\n\r\n0\r\n\r\n".len() as u64);
}

#[test]
fn request_mistakes_are_refused_at_check_with_their_line() {
    let work = tempfile::tempdir().expect("tempdir");
    std::fs::write(work.path().join("body.bin"), b"x").expect("body");
    for (extra, says) in [
        ("body_file = \"other.bin\"", "both body and body_file"),
        ("bodyy = \"x\"", "unknown field `bodyy`"),
        ("chunked = \"yes\"", "invalid type"),
    ] {
        let suite = work.path().join("bad.toml");
        std::fs::write(&suite, suite_text("http://127.0.0.1:9", extra)).expect("suite");
        let out = run_benchlab(&["check", s(&suite)]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{extra}: {err}");
        assert!(err.contains(says) && err.contains("bad.toml:"), "{extra}: {err}");
    }
    let suite = work.path().join("bad.toml");
    std::fs::write(
        &suite,
        suite_text("http://127.0.0.1:9", "").replace("method = \"POST\"", "method = \"PO ST\""),
    )
    .expect("suite");
    let out = run_benchlab(&["check", s(&suite)]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("method `PO ST`") && err.contains("bad.toml:16"), "{err}");
}
