//! The engine's experimental I/O backends and switches (`BENCHLAB_IO`,
//! `BENCHLAB_BUSY_POLL`; see bench/README.md) count
//! exactly what the default does: fixed-count runs against nginx, each
//! backend's `requests`, connections and bytes equal to nginx's access log,
//! for keep-alive, a connection per request, and connections ended by
//! `Connection: close` after a drawn number of requests.
//!
//! (The whole `real_servers` suite also passes with `BENCHLAB_IO=uring` or
//! `epoll-lt` in the environment, but for its TLS tests under `uring`,
//! which that backend refuses by design.)

mod common;

use common::servers::{Nginx, NginxLogLine, NginxOpts, SIZE_4K};
use common::{benchlab_bin, u};
use serde_json::Value;
use std::collections::BTreeMap;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Every backend and switch, as environment settings.
const VARIANTS: &[&[(&str, &str)]] = &[
    &[("BENCHLAB_IO", "mio")],
    &[("BENCHLAB_IO", "epoll-lt")],
    &[("BENCHLAB_IO", "uring")],
    &[("BENCHLAB_IO", "epoll-lt"), ("BENCHLAB_BUSY_POLL", "50")],
    &[("BENCHLAB_IO", "mio"), ("BENCHLAB_BUSY_POLL", "50")],
];

/// Runs benchlab under `env`; killed after two minutes (every run here
/// lasts seconds), so an engine that never ends fails the test instead of
/// hanging it.
fn run(env: &[(&str, &str)], args: &[&str]) -> std::process::Output {
    let mut cmd = Command::new(benchlab_bin());
    for k in ["BENCHLAB_IO", "BENCHLAB_BUSY_POLL"] {
        cmd.env_remove(k);
    }
    let mut child = cmd
        .envs(env.iter().copied())
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run benchlab");
    let deadline = Instant::now() + Duration::from_secs(120);
    while child.try_wait().expect("wait for benchlab").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("{env:?} benchlab {args:?} did not end in 120 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("benchlab's output")
}

/// `benchlab http --json ARGS` under `env`, which must exit 0.
fn bench(env: &[(&str, &str)], args: &[&str]) -> Value {
    let mut all = vec!["http", "--json"];
    all.extend_from_slice(args);
    let out = run(env, &all);
    assert!(
        out.status.success(),
        "{env:?} benchlab {all:?} failed ({}):\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    common::http_mix(&out.stdout)
}

/// The counted run's log lines (the preflight's one line dropped).
fn run_lines(nginx: &Nginx, n: usize) -> Vec<NginxLogLine> {
    let all = nginx.access_log_lines_at_least(1 + n);
    assert_eq!(all.len(), 1 + n, "nginx logged {} lines, expected 1 + {n}", all.len());
    all[1..].to_vec()
}

/// Requests, connections and bytes of `v` equal nginx's log of the run.
fn assert_matches_log(env: &[(&str, &str)], v: &Value, lines: &[NginxLogLine], n: u64) {
    let mut conns: BTreeMap<u64, u64> = BTreeMap::new();
    for l in lines {
        *conns.entry(l.connection).or_default() += 1;
    }
    let bytes: u64 = lines.iter().map(|l| l.bytes_sent).sum();
    let body: u64 = lines.iter().map(|l| l.body_bytes_sent).sum();
    assert!(lines.iter().all(|l| l.status == 200), "{env:?}: non-200 in the log");
    assert_eq!(u(v, "/requests"), n, "{env:?}: {v}");
    assert_eq!(u(v, "/errors_total"), 0, "{env:?}: {v}");
    assert_eq!(u(v, "/in_flight"), 0, "{env:?}: {v}");
    assert_eq!(u(v, "/reconnects"), 0, "{env:?}: {v}");
    assert_eq!(u(v, "/connections_opened"), conns.len() as u64, "{env:?}: {v}");
    assert_eq!(u(v, "/bytes"), bytes, "{env:?}: bytes != nginx's $bytes_sent");
    assert_eq!(
        u(v, "/body_bytes"),
        body,
        "{env:?}: body_bytes != nginx's $body_bytes_sent"
    );
    assert_eq!(body, n * SIZE_4K, "{env:?}");
}

#[test]
fn every_backend_counts_keepalive_exactly() {
    for env in VARIANTS {
        let nginx = Nginx::start(NginxOpts::default());
        let url = nginx.url("/4k.html");
        let v = bench(env, &["--requests", "600", "--threads", "8", "--os-threads", "2", &url]);
        let lines = run_lines(&nginx, 600);
        assert_matches_log(env, &v, &lines, 600);
        assert_eq!(u(&v, "/connections_opened"), 8, "{env:?}: one connection a user");
    }
}

#[test]
fn every_backend_counts_a_connection_per_request_exactly() {
    for env in VARIANTS {
        let nginx = Nginx::start(NginxOpts::default());
        let url = nginx.url("/4k.html");
        let v = bench(env, &["--http", "1.0", "--requests", "200", "--threads", "4", &url]);
        let lines = run_lines(&nginx, 200);
        assert_matches_log(env, &v, &lines, 200);
        assert_eq!(u(&v, "/connections_opened"), 200, "{env:?}");
    }
}

/// 2 to 5 requests a connection, the last saying `Connection: close`: the
/// client waits for the server's close (draining) before going on.
#[test]
fn every_backend_counts_closing_connections_exactly() {
    for env in VARIANTS {
        let nginx = Nginx::start(NginxOpts::default());
        let url = nginx.url("/4k.html");
        let args = [
            "--requests",
            "300",
            "--threads",
            "6",
            "--requests-per-connection",
            "2..5",
            &url,
        ];
        let v = bench(env, &args);
        let lines = run_lines(&nginx, 300);
        assert_matches_log(env, &v, &lines, 300);
        let closes = lines
            .iter()
            .filter(|l| l.connection_header.eq_ignore_ascii_case("close"))
            .count() as u64;
        assert!(closes > 0, "{env:?}: no connection was closed");
    }
}

/// An idle keep-alive connection the server closes is noticed and reopened
/// (a reconnect, no error) by every backend.
#[test]
fn every_backend_notices_an_idle_close() {
    for env in VARIANTS {
        let nginx = Nginx::start(NginxOpts {
            keepalive_timeout: "200ms".to_owned(),
            ..NginxOpts::default()
        });
        let url = nginx.url("/4k.html");
        let v = bench(
            env,
            &["--requests", "3", "--threads", "1", "--think-time", "500ms", &url],
        );
        let lines = run_lines(&nginx, 3);
        assert_eq!(u(&v, "/requests"), 3, "{env:?}: {v}");
        assert_eq!(u(&v, "/errors_total"), 0, "{env:?}: {v}");
        assert_eq!(u(&v, "/connections_opened"), 3, "{env:?}: {v}");
        assert_eq!(u(&v, "/reconnects"), 2, "{env:?}: {v}");
        let bytes: u64 = lines.iter().map(|l| l.bytes_sent).sum();
        assert_eq!(u(&v, "/bytes"), bytes, "{env:?}");
    }
}

/// An open loop whose idle connections the server closes: every backend
/// reopens them, counts each as a reconnect, and keeps its count of open
/// connections right (the io_uring backend once underflowed it here and
/// its worker threads died).
#[test]
fn every_backend_keeps_an_open_loop_through_idle_closes() {
    for env in VARIANTS {
        let nginx = Nginx::start(NginxOpts {
            keepalive_timeout: "100ms".to_owned(),
            ..NginxOpts::default()
        });
        let url = nginx.url("/4k.html");
        // 6 sends, 3 per OS thread, 1 s apart: each after a thread's first
        // finds its connection closed by the server.
        let v = bench(env, &["--rate", "2", "--os-threads", "2", "-d", "3s", &url]);
        let lines = run_lines(&nginx, 6);
        assert_eq!(u(&v, "/open_loop/sends"), 6, "{env:?}: {v}");
        assert_eq!(u(&v, "/requests"), 6, "{env:?}: {v}");
        assert_eq!(u(&v, "/errors_total"), 0, "{env:?}: {v}");
        assert_eq!(u(&v, "/connections_opened"), 6, "{env:?}: {v}");
        assert_eq!(u(&v, "/reconnects"), 4, "{env:?}: {v}");
        assert_eq!(u(&v, "/open_loop/peak_connections"), 1, "{env:?}: {v}");
        let bytes: u64 = lines.iter().map(|l| l.bytes_sent).sum();
        assert_eq!(u(&v, "/bytes"), bytes, "{env:?}");
    }
}

/// Nothing listens: every request is a connect_refused error.
#[test]
fn every_backend_counts_refused_connects() {
    let url = format!("http://127.0.0.1:{}/4k.html", common::free_port());
    for env in VARIANTS {
        let v = bench(env, &["--no-preflight", "--requests", "10", "--threads", "2", &url]);
        assert_eq!(u(&v, "/requests"), 0, "{env:?}: {v}");
        assert_eq!(u(&v, "/errors/connect_refused"), 10, "{env:?}: {v}");
        assert_eq!(u(&v, "/errors_total"), 10, "{env:?}: {v}");
    }
}

#[test]
fn a_bad_setting_or_uring_with_https_is_refused_clearly() {
    let nginx = Nginx::start(NginxOpts::default());
    let url = nginx.url("/4k.html");
    let out = run(&[("BENCHLAB_IO", "kqueue")], &["http", "--requests", "1", &url]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("BENCHLAB_IO='kqueue': expected mio, epoll-lt or uring"),
        "{err}"
    );
    let out = run(&[("BENCHLAB_BUSY_POLL", "lots")], &["http", "--requests", "1", &url]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("BENCHLAB_BUSY_POLL='lots'"), "{err}");

    let tls = Nginx::start(NginxOpts {
        tls: true,
        ..NginxOpts::default()
    });
    let url = tls.url("/4k.html");
    let out = run(
        &[("BENCHLAB_IO", "uring")],
        &["http", "--insecure", "--requests", "1", &url],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("BENCHLAB_IO=uring drives http:// URLs only"), "{err}");
}
