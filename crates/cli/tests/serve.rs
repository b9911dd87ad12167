//! `benchlab serve`, the real binary, on 127.0.0.1:0 in a temp dir: raw
//! bytes over std `TcpStream`s, and `benchlab http` as its load.

mod common;

use common::Serve;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

const A_HTML: &[u8] = b"<html><body>served by benchlab serve</body></html>\n";

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_benchlab")
}

/// A temp dir holding `www/` (the root) with hand-made files.
fn docroot() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("www/d")).unwrap();
    std::fs::write(dir.path().join("www/a.html"), A_HTML).unwrap();
    let big: Vec<u8> = (0u32..200_000)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 11) as u8)
        .collect();
    std::fs::write(dir.path().join("www/d/big.bin"), big).unwrap();
    dir
}

/// Sends `raw` and reads until the server closes: the whole wire reply.
fn exchange(addr: SocketAddr, raw: &str) -> Vec<u8> {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(raw.as_bytes()).unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).unwrap();
    out
}

fn split(reply: &[u8]) -> (String, &[u8]) {
    let i = reply
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a response head")
        + 4;
    (String::from_utf8(reply[..i].to_vec()).unwrap(), &reply[i..])
}

#[test]
fn serves_files_byte_identical_with_keep_alive_and_http10_close() {
    let dir = docroot();
    let serve = Serve::start(&dir.path().join("www"), &[]);
    let big = std::fs::read(dir.path().join("www/d/big.bin")).unwrap();

    // Three requests on one connection, the last asking to close.
    let reply = exchange(
        serve.addr,
        "GET /a.html HTTP/1.1\r\nHost: t\r\n\r\nGET /d/big.bin HTTP/1.1\r\nHost: t\r\n\r\n\
         GET /spice/inproc/adrot/a.html?zone=1 HTTP/1.1\r\nHost: t\r\nCookie: u=1\r\nConnection: close\r\n\r\n",
    );
    let (h1, rest) = split(&reply);
    assert!(h1.starts_with("HTTP/1.1 200 OK\r\n") && h1.contains(&format!("Content-Length: {}\r\n", A_HTML.len())));
    assert_eq!(&rest[..A_HTML.len()], A_HTML);
    let (h2, rest) = split(&rest[A_HTML.len()..]);
    assert!(h2.contains("Content-Length: 200000\r\n"), "{h2}");
    assert!(rest[..big.len()] == big[..], "big.bin differs");
    let (h3, rest) = split(&rest[big.len()..]);
    assert!(h3.contains("Connection: close\r\n"), "{h3}");
    assert_eq!(rest, A_HTML, "the adrot body, then the server's close");

    // HTTP/1.0 without keep-alive: the server closes after one response.
    let reply = exchange(serve.addr, "GET /a.html HTTP/1.0\r\n\r\n");
    let (head, body) = split(&reply);
    assert!(
        head.starts_with("HTTP/1.0 200 OK\r\n") && head.contains("Connection: close\r\n"),
        "{head}"
    );
    assert_eq!(body, A_HTML);

    let (head, _) = split(&exchange(serve.addr, "GET /nope.html HTTP/1.0\r\n\r\n"));
    assert!(head.starts_with("HTTP/1.0 404 Not Found\r\n"), "{head}");
    let (head, _) = split(&exchange(serve.addr, "GET /d/../../secret HTTP/1.1\r\nHost: t\r\n\r\n"));
    assert!(head.starts_with("HTTP/1.1 400 Bad Request\r\n"), "{head}");
}

#[test]
fn session_counter_and_lines_are_exact_under_benchlab_http() {
    let dir = docroot();
    let log = dir.path().join("session.log");
    let serve = Serve::start(&dir.path().join("www"), &["--session-log", log.to_str().unwrap()]);
    let out = Command::new(bin())
        .args([
            "http",
            "--json",
            "--no-preflight",
            "--requests",
            "200",
            "--threads",
            "16",
        ])
        .arg(serve.url("/spice/inproc/session/a.html"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "benchlab http failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let result = common::http_mix(&out.stdout);
    assert_eq!(result["requests"], 200, "{result}");
    assert_eq!(result["errors_total"], 0, "{result}");
    assert_eq!(result["body_bytes"], 200 * A_HTML.len() as u64);

    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "000000000200");
    assert_eq!(lines.len(), 201);
    let pid = serve.child.id().to_string();
    for line in &lines[1..] {
        let f: Vec<&str> = line.split('\t').collect();
        assert_eq!(f.len(), 3, "{line:?}");
        assert!(
            f[0].len() == 20 && f[0].as_bytes()[10] == b'T' && f[0].ends_with('Z'),
            "{line:?}"
        );
        assert_eq!((f[1], f[2]), (pid.as_str(), "/a.html"), "{line:?}");
    }
    // The default session log is beside the root, not in it: here it was
    // given, so none was made there.
    assert!(!dir.path().join("spice-session.log").exists());
}

#[test]
fn sleep_waits_without_blocking_other_connections() {
    let dir = docroot();
    let serve = Serve::start(&dir.path().join("www"), &["--workers", "1"]);
    let addr = serve.addr;
    let slow = std::thread::spawn(move || {
        let t0 = Instant::now();
        let reply = exchange(addr, "GET /spice/inproc/sleep/a.html?ms=300 HTTP/1.0\r\n\r\n");
        (t0.elapsed(), Instant::now(), reply)
    });
    std::thread::sleep(Duration::from_millis(50));
    let fast = exchange(addr, "GET /a.html HTTP/1.0\r\n\r\n");
    let fast_done = Instant::now();
    let (slow_took, slow_done, slow_reply) = slow.join().unwrap();
    assert_eq!(split(&fast).1, A_HTML);
    assert_eq!(split(&slow_reply).1, A_HTML);
    assert!(
        slow_took >= Duration::from_millis(300),
        "?ms=300 answered after {slow_took:?}"
    );
    // Asked 50 ms after the sleeping one, answered before it: the sleep did
    // not hold the only worker thread.
    assert!(fast_done < slow_done, "the static request waited for the sleeping one");
}

#[test]
fn access_log_has_one_clf_line_per_request_and_ctrl_c_flushes_it() {
    let dir = docroot();
    let log: PathBuf = dir.path().join("access.log");
    let serve = Serve::start(&dir.path().join("www"), &["--access-log", log.to_str().unwrap()]);
    let out = Command::new(bin())
        .args([
            "http",
            "--json",
            "--no-preflight",
            "--requests",
            "50",
            "--threads",
            "4",
            "--http",
            "1.0",
        ])
        .arg(serve.url("/a.html"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "benchlab http failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    exchange(serve.addr, "GET /missing HTTP/1.0\r\n\r\n");
    assert_eq!(serve.stop_with("INT"), 0);

    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    // 50 requests of the run, then the 404.
    assert_eq!(lines.len(), 51, "{text}");
    let ok = format!("\"GET /a.html HTTP/1.0\" 200 {}", A_HTML.len());
    assert_eq!(lines.iter().filter(|l| l.ends_with(&ok)).count(), 50, "{text}");
    assert!(lines[50].ends_with("\"GET /missing HTTP/1.0\" 404 14"), "{}", lines[50]);
    for l in &lines {
        assert!(
            l.starts_with("127.0.0.1 - - [") && l[15..].find(" +0000] \"") == Some(20),
            "{l}"
        );
    }
}

#[test]
fn bad_flags_exit_2_naming_the_flag() {
    let dir = docroot();
    let out = Command::new(bin())
        .args(["serve", "--root"])
        .arg(dir.path().join("absent"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--root") && err.contains("absent"), "{err}");

    let out = Command::new(bin())
        .args(["serve", "--listen", "localhost", "--root"])
        .arg(dir.path().join("www"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--listen") && err.contains("IP:PORT"), "{err}");
}

#[test]
fn sigterm_also_stops_gracefully_and_flushes_the_access_log() {
    let dir = docroot();
    let log = dir.path().join("access.log");
    let serve = Serve::start(&dir.path().join("www"), &["--access-log", log.to_str().unwrap()]);
    let reply = exchange(serve.addr, "GET /a.html HTTP/1.0\r\n\r\n");
    assert_eq!(split(&reply).1, A_HTML);
    assert_eq!(serve.stop_with("TERM"), 0);
    let text = std::fs::read_to_string(&log).unwrap();
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(
        text.ends_with(&format!("\"GET /a.html HTTP/1.0\" 200 {}\n", A_HTML.len())),
        "{text}"
    );
}

/// `--header-timeout` and `--follow-outside-symlinks` reach the server: a
/// head trickled past the timeout gets 408, a link out of the root 403 by
/// default and its file with the flag; a zero timeout is refused by name.
#[test]
fn header_timeout_and_outside_symlink_flags_reach_the_server() {
    let dir = docroot();
    std::fs::write(dir.path().join("secret.txt"), b"outside").unwrap();
    std::os::unix::fs::symlink(dir.path().join("secret.txt"), dir.path().join("www/link.html")).unwrap();
    let www = dir.path().join("www");
    let serve = Serve::start(&www, &["--header-timeout", "300ms"]);
    let reply = exchange(
        serve.addr,
        "GET /link.html HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
    );
    let (head, body) = split(&reply);
    assert!(head.starts_with("HTTP/1.1 403 Forbidden\r\n"), "{head}");
    assert!(!String::from_utf8_lossy(body).contains("outside"));
    // Without Host: 400.
    let (head, _) = split(&exchange(serve.addr, "GET /a.html HTTP/1.1\r\n\r\n"));
    assert!(head.starts_with("HTTP/1.1 400 Bad Request\r\n"), "{head}");

    let mut s = TcpStream::connect(serve.addr).unwrap();
    s.write_all(b"GET /a.html HTTP/1.1\r\nHost: t\r\nX-Slow: ").unwrap();
    let mut reply = Vec::new();
    for _ in 0..200 {
        if s.write_all(b"a").is_err() {
            break;
        }
        s.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
        let mut b = [0u8; 512];
        match s.read(&mut b) {
            Ok(0) => break,
            Ok(n) => reply.extend_from_slice(&b[..n]),
            Err(_) => {}
        }
    }
    let reply = String::from_utf8_lossy(&reply);
    assert!(reply.starts_with("HTTP/1.1 408 Request Timeout\r\n"), "{reply:?}");
    drop(serve);

    let serve = Serve::start(&www, &["--follow-outside-symlinks"]);
    let reply = exchange(serve.addr, "GET /link.html HTTP/1.0\r\n\r\n");
    let (head, body) = split(&reply);
    assert!(head.starts_with("HTTP/1.0 200 OK\r\n"), "{head}");
    assert_eq!(body, b"outside");

    let out = Command::new(bin())
        .args(["serve", "--header-timeout", "0s", "--root"])
        .arg(&www)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--header-timeout") && err.contains("above 0"), "{err}");
}
