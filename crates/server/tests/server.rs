//! The reference server in-process on 127.0.0.1:0, spoken to in raw bytes
//! over std `TcpStream`s, so every assertion is about what goes on the wire.

use benchlab_server::{Config, Error, RunningServer, Server};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

const A_HTML: &[u8] = b"<html><body>benchlab a.html \xe2\x9c\x93</body></html>\n";

/// A document root with hand-made files: small, a directory index, one too
/// large for the cache (so it goes out with sendfile), one empty.
fn docroot() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("www");
    std::fs::create_dir_all(root.join("d")).unwrap();
    std::fs::write(root.join("a.html"), A_HTML).unwrap();
    std::fs::write(root.join("d/index.html"), b"index of d\n").unwrap();
    std::fs::write(root.join("empty.txt"), b"").unwrap();
    std::fs::write(root.join("big.bin"), big()).unwrap();
    dir
}

/// 300,000 bytes of a non-repeating pattern: a misplaced chunk would show.
fn big() -> Vec<u8> {
    (0u32..300_000)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect()
}

fn start(dir: &Path, tweak: impl FnOnce(&mut Config)) -> RunningServer {
    let mut config = Config::new(dir.join("www"));
    config.listen = "127.0.0.1:0".parse().unwrap();
    config.workers = 2;
    config.cache_max_file = 4096;
    tweak(&mut config);
    Server::bind(config).unwrap().spawn().unwrap()
}

fn connect(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s
}

/// One response read off a connection: status line and fields, and body.
#[derive(Debug)]
struct Response {
    head: String,
    body: Vec<u8>,
}

impl Response {
    fn status(&self) -> u16 {
        self.head[9..12].parse().unwrap()
    }

    fn field(&self, name: &str) -> Option<&str> {
        self.head.lines().skip(1).find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.eq_ignore_ascii_case(name).then(|| v.trim())
        })
    }
}

/// Reads exactly one response (framed by Content-Length, which the server
/// always sends), leaving any following bytes in `pending`.
fn read_response(s: &mut TcpStream, pending: &mut Vec<u8>, head_request: bool) -> Response {
    let mut chunk = [0u8; 65536];
    let head_end = loop {
        if let Some(i) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let n = s.read(&mut chunk).unwrap();
        assert!(
            n > 0,
            "connection closed inside a response head: {:?}",
            String::from_utf8_lossy(pending)
        );
        pending.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8(pending[..head_end].to_vec()).unwrap();
    pending.drain(..head_end);
    let mut resp = Response { head, body: Vec::new() };
    let len: usize = resp.field("content-length").expect("Content-Length").parse().unwrap();
    let len = if head_request { 0 } else { len };
    while pending.len() < len {
        let n = s.read(&mut chunk).unwrap();
        assert!(n > 0, "connection closed inside a body");
        pending.extend_from_slice(&chunk[..n]);
    }
    resp.body = pending.drain(..len).collect();
    resp
}

fn request(s: &mut TcpStream, raw: &str) -> Response {
    s.write_all(raw.as_bytes()).unwrap();
    let mut pending = Vec::new();
    let r = read_response(s, &mut pending, raw.starts_with("HEAD"));
    assert!(pending.is_empty(), "bytes after the response: {pending:?}");
    r
}

fn get(path: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n")
}

/// Whether the server closed the connection (EOF within the read timeout).
fn closed(s: &mut TcpStream) -> bool {
    let mut b = [0u8; 1];
    matches!(s.read(&mut b), Ok(0))
}

#[test]
fn static_files_are_byte_identical_on_one_keep_alive_connection() {
    let dir = docroot();
    let server = start(dir.path(), |_| {});
    let mut s = connect(server.local_addr());
    for round in 0..2 {
        // The second round is served from the cache (and big.bin again by sendfile).
        let r = request(&mut s, &get("/a.html"));
        assert_eq!((r.status(), r.body.as_slice()), (200, A_HTML), "round {round}");
        assert!(r.head.starts_with("HTTP/1.1 200 OK\r\n"));
        assert_eq!(r.field("content-type"), Some("text/html"));
        assert_eq!(r.field("connection"), None);
        let r = request(&mut s, &get("/big.bin"));
        assert_eq!(r.status(), 200);
        assert!(r.body == big(), "big.bin differs");
        assert_eq!(r.field("content-type"), Some("application/octet-stream"));
        let r = request(&mut s, &get("/d/"));
        assert_eq!(r.body, b"index of d\n");
        let r = request(&mut s, &get("/empty.txt"));
        assert_eq!((r.status(), r.field("content-length")), (200, Some("0")));
        let r = request(&mut s, "HEAD /a.html HTTP/1.1\r\nHost: t\r\n\r\n");
        assert_eq!(
            (r.status(), r.field("content-length")),
            (200, Some(A_HTML.len().to_string().as_str()))
        );
        assert!(r.body.is_empty());
    }
    // A GET carrying a body: the body is skipped, the connection stays usable.
    let r = request(
        &mut s,
        "GET /a.html HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello",
    );
    assert_eq!(r.body, A_HTML);
    let r = request(&mut s, &get("/a.html"));
    assert_eq!(r.body, A_HTML);
    server.shutdown().unwrap();
}

#[test]
fn pipelined_requests_are_answered_in_order() {
    let dir = docroot();
    let server = start(dir.path(), |_| {});
    let mut s = connect(server.local_addr());
    let mut batch = String::new();
    for p in ["/a.html", "/nope", "/big.bin", "/d/", "/spice/inproc/adrot/a.html"] {
        batch.push_str(&get(p));
    }
    batch.push_str("GET /spice/inproc/sleep/a.html?ms=0 HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    // Sent in two pieces that split a request line, as a slow client might.
    let (x, y) = batch.as_bytes().split_at(37);
    s.write_all(x).unwrap();
    std::thread::sleep(Duration::from_millis(20));
    s.write_all(y).unwrap();
    let mut pending = Vec::new();
    let bodies: Vec<(u16, Vec<u8>)> = (0..6)
        .map(|_| {
            let r = read_response(&mut s, &mut pending, false);
            (r.status(), r.body)
        })
        .collect();
    assert_eq!(bodies[0], (200, A_HTML.to_vec()));
    assert_eq!(bodies[1].0, 404);
    assert_eq!(bodies[2], (200, big()));
    assert_eq!(bodies[3], (200, b"index of d\n".to_vec()));
    assert_eq!(bodies[4], (200, A_HTML.to_vec()));
    assert_eq!(bodies[5], (200, A_HTML.to_vec()));
    assert!(pending.is_empty());
    assert!(closed(&mut s), "Connection: close must end the connection");
}

#[test]
fn http10_closes_unless_keep_alive_is_asked() {
    let dir = docroot();
    let server = start(dir.path(), |_| {});
    let mut s = connect(server.local_addr());
    let r = request(&mut s, "GET /a.html HTTP/1.0\r\n\r\n");
    assert!(r.head.starts_with("HTTP/1.0 200 OK\r\n"), "{}", r.head);
    assert_eq!(r.field("connection"), Some("close"));
    assert_eq!(r.body, A_HTML);
    assert!(closed(&mut s));

    let mut s = connect(server.local_addr());
    for _ in 0..3 {
        let r = request(&mut s, "GET /a.html HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
        assert_eq!(r.field("connection"), Some("keep-alive"));
        assert_eq!(r.body, A_HTML);
    }
    let r = request(&mut s, "GET /a.html HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    assert_eq!(r.field("connection"), Some("close"));
    assert!(closed(&mut s));
}

#[test]
fn errors_missing_traversal_methods_and_garbage() {
    let dir = docroot();
    std::fs::write(dir.path().join("secret.txt"), b"outside the root").unwrap();
    let server = start(dir.path(), |_| {});
    let addr = server.local_addr();

    // 404 keeps the connection.
    let mut s = connect(addr);
    let r = request(&mut s, &get("/missing.html"));
    assert_eq!((r.status(), r.body.as_slice()), (404, &b"404 Not Found\n"[..]));
    assert_eq!(request(&mut s, &get("/spice/inproc/adrot/missing.html")).status(), 404);
    assert_eq!(request(&mut s, &get("/a.html/x")).status(), 404);
    assert_eq!(request(&mut s, &get("/a.html")).body, A_HTML);

    // Traversal, however spelled, is refused and the connection closed.
    for path in [
        "/../secret.txt",
        "/d/../../secret.txt",
        "/%2e%2e/secret.txt",
        "/spice/inproc/session/../../secret.txt",
    ] {
        let mut s = connect(addr);
        let r = request(&mut s, &get(path));
        assert_eq!(r.status(), 400, "{path}");
        assert!(!String::from_utf8_lossy(&r.body).contains("outside"), "{path}");
        assert!(closed(&mut s), "{path}");
    }

    let mut s = connect(addr);
    let r = request(
        &mut s,
        "POST /a.html HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\nhi",
    );
    assert_eq!((r.status(), r.field("allow")), (405, Some("GET, HEAD")));
    assert!(closed(&mut s));

    let mut s = connect(addr);
    s.write_all(b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03 not http\r\n\r\n")
        .unwrap();
    let r = read_response(&mut s, &mut Vec::new(), false);
    assert_eq!(r.status(), 400);
    assert!(closed(&mut s));

    let mut s = connect(addr);
    let r = request(
        &mut s,
        "GET /spice/inproc/sleep/a.html?ms=soon HTTP/1.1\r\nHost: t\r\n\r\n",
    );
    assert_eq!(r.status(), 400);
    assert!(String::from_utf8_lossy(&r.body).contains("ms="), "{:?}", r.body);

    let mut s = connect(addr);
    let r = request(
        &mut s,
        "GET /a.html HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    );
    assert_eq!(r.status(), 501);
}

#[test]
fn spice_programs_return_exactly_the_static_bytes() {
    let dir = docroot();
    let server = start(dir.path(), |_| {});
    let mut s = connect(server.local_addr());
    let statik = request(&mut s, &get("/a.html"));
    let adrot = request(
        &mut s,
        "GET /spice/inproc/adrot/a.html?zone=top&n=3 HTTP/1.1\r\nHost: t\r\nCookie: uid=42; seen=1,2\r\nUser-Agent: t/1\r\n\r\n",
    );
    let session = request(&mut s, &get("/spice/inproc/session/a.html"));
    let sleep = request(&mut s, &get("/spice/inproc/sleep/a.html?ms=1"));
    let big_session = request(&mut s, &get("/spice/inproc/session/big.bin"));
    for r in [&statik, &adrot, &session, &sleep] {
        assert_eq!((r.status(), r.body.as_slice()), (200, A_HTML));
        assert_eq!(r.field("content-type"), statik.field("content-type"));
    }
    // The ad every SPI's program picks: FNV-1a 32 of QUERY_STRING, HTTP_COOKIE
    // and HTTP_USER_AGENT joined by newlines, modulo 100.
    let mut h: u32 = 2_166_136_261;
    for b in "zone=top&n=3\nuid=42; seen=1,2\nt/1".bytes() {
        h = (h ^ u32::from(b)).wrapping_mul(16_777_619);
    }
    assert_eq!(adrot.field("x-ad"), Some((h % 100).to_string().as_str()));
    assert_eq!(statik.field("x-ad"), None);
    assert!(big_session.body == big());
    let log = std::fs::read_to_string(dir.path().join("spice-session.log")).unwrap();
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines[0], "000000000002");
    assert_eq!(lines.len(), 3);
    assert!(
        lines[1].ends_with(&format!("\t{}\t/a.html", std::process::id())),
        "{}",
        lines[1]
    );
    assert!(lines[2].ends_with("\t/big.bin"), "{}", lines[2]);
}

#[test]
fn session_counter_is_exact_under_concurrency() {
    let dir = docroot();
    let log = dir.path().join("logs/session.log");
    std::fs::create_dir(dir.path().join("logs")).unwrap();
    let server = start(dir.path(), |c| c.session_log = Some(log.clone()));
    let addr = server.local_addr();
    let threads: Vec<_> = (0..10)
        .map(|_| {
            std::thread::spawn(move || {
                let mut s = connect(addr);
                for _ in 0..20 {
                    let r = request(&mut s, &get("/spice/inproc/session/a.html"));
                    assert_eq!(r.body, A_HTML);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let text = std::fs::read_to_string(&log).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("000000000200"));
    assert_eq!(
        lines
            .filter(|l| l.split('\t').count() == 3 && l.ends_with("\t/a.html"))
            .count(),
        200
    );
    assert_eq!(text.lines().count(), 201);
}

#[test]
fn a_sleeping_request_does_not_hold_up_others() {
    let dir = docroot();
    // One worker thread: a blocking sleep would stall every connection.
    let server = start(dir.path(), |c| c.workers = 1);
    let addr = server.local_addr();
    let slow = std::thread::spawn(move || {
        let mut s = connect(addr);
        let t0 = Instant::now();
        let r = request(&mut s, &get("/spice/inproc/sleep/a.html?ms=300"));
        (t0.elapsed(), Instant::now(), r.body)
    });
    std::thread::sleep(Duration::from_millis(50));
    let mut s = connect(addr);
    let r = request(&mut s, &get("/a.html"));
    let fast_done = Instant::now();
    let (slow_took, slow_done, slow_body) = slow.join().unwrap();
    assert_eq!(r.body, A_HTML);
    assert_eq!(slow_body, A_HTML);
    assert!(
        slow_took >= Duration::from_millis(300),
        "sleep ms=300 took {slow_took:?}"
    );
    // Asked 50 ms after the sleeping one, answered before it: the sleep did
    // not hold the only worker thread.
    assert!(fast_done < slow_done, "the static request waited for the sleeping one");
}

#[test]
fn idle_keep_alive_connections_are_closed_after_the_timeout() {
    let dir = docroot();
    let server = start(dir.path(), |c| c.keepalive_timeout = Duration::from_millis(200));
    let mut s = connect(server.local_addr());
    assert_eq!(request(&mut s, &get("/a.html")).body, A_HTML);
    let t0 = Instant::now();
    assert!(closed(&mut s));
    let waited = t0.elapsed();
    assert!(
        waited >= Duration::from_millis(150) && waited < Duration::from_secs(2),
        "closed after {waited:?}"
    );
}

#[test]
fn access_log_has_one_clf_line_per_request_after_shutdown() {
    let dir = docroot();
    let log = dir.path().join("access.log");
    let server = start(dir.path(), |c| c.access_log = Some(log.clone()));
    let mut s = connect(server.local_addr());
    request(&mut s, &get("/a.html"));
    request(&mut s, &get("/nope"));
    request(&mut s, "HEAD /a.html HTTP/1.1\r\nHost: t\r\n\r\n");
    request(&mut s, &get("/spice/inproc/adrot/a.html?x=\"1\""));
    request(&mut s, "GET /big.bin HTTP/1.0\r\n\r\n");
    server.shutdown().unwrap();
    let text = std::fs::read_to_string(&log).unwrap();
    let tails: Vec<&str> = text.lines().map(|l| &l[l.find("] \"").unwrap() + 2..]).collect();
    let n = A_HTML.len();
    assert_eq!(
        tails,
        [
            format!("\"GET /a.html HTTP/1.1\" 200 {n}"),
            "\"GET /nope HTTP/1.1\" 404 14".to_string(),
            "\"HEAD /a.html HTTP/1.1\" 200 -".to_string(),
            format!("\"GET /spice/inproc/adrot/a.html?x=\\x221\\x22 HTTP/1.1\" 200 {n}"),
            "\"GET /big.bin HTTP/1.0\" 200 300000".to_string(),
        ]
    );
    for line in text.lines() {
        assert!(line.starts_with("127.0.0.1 - - ["), "{line}");
        assert_eq!(&line[15 + 20..15 + 27], " +0000]", "{line}");
    }
}

#[test]
fn bind_errors_name_the_flag_and_the_problem() {
    let dir = docroot();
    let err = Server::bind(Config::new(dir.path().join("absent"))).unwrap_err();
    assert!(matches!(err, Error::Root { .. }) && err.is_input_error());
    assert!(err.to_string().starts_with("--root "), "{err}");

    let mut c = Config::new(dir.path().join("www"));
    c.session_log = Some(dir.path().join("no/such/dir/s.log"));
    let err = Server::bind(c).unwrap_err();
    assert!(
        err.to_string().starts_with("--session-log ") && err.to_string().contains("does not exist"),
        "{err}"
    );

    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let mut c = Config::new(dir.path().join("www"));
    c.listen = taken.local_addr().unwrap();
    let err = Server::bind(c).unwrap_err();
    assert!(!err.is_input_error());
    assert!(
        err.to_string().starts_with("--listen 127.0.0.1:") && err.to_string().contains("another port"),
        "{err}"
    );
}

#[test]
fn shutdown_lets_requests_in_flight_finish_then_refuses_connections() {
    let dir = docroot();
    let server = start(dir.path(), |_| {});
    let addr = server.local_addr();
    let slow = std::thread::spawn(move || {
        let mut s = connect(addr);
        let r = request(&mut s, &get("/spice/inproc/sleep/a.html?ms=300"));
        (r, closed(&mut s))
    });
    std::thread::sleep(Duration::from_millis(100));
    let t0 = Instant::now();
    server.shutdown().unwrap();
    assert!(
        t0.elapsed() >= Duration::from_millis(150),
        "shutdown did not wait for the sleeping request"
    );
    let (r, was_closed) = slow.join().unwrap();
    assert_eq!((r.status(), r.body.as_slice()), (200, A_HTML));
    assert_eq!(
        r.field("connection"),
        Some("close"),
        "a response during shutdown must announce the close"
    );
    assert!(was_closed);
    assert!(TcpStream::connect(addr).is_err(), "still accepting after shutdown");
}

/// RFC 9112 §3.2: an HTTP/1.1 request without `Host`, or any request with
/// two, is answered 400 and closed, and the access log counts it as 400;
/// HTTP/1.0 without `Host` is served.
#[test]
fn a_missing_or_second_host_field_is_a_bad_request() {
    let dir = docroot();
    let log = dir.path().join("access.log");
    let server = start(dir.path(), |c| c.access_log = Some(log.clone()));
    let addr = server.local_addr();
    for raw in [
        "GET /a.html HTTP/1.1\r\n\r\n",
        "GET /a.html HTTP/1.1\r\nHost: t\r\nhost: u\r\n\r\n",
        "GET /a.html HTTP/1.0\r\nHost: t\r\nHost: t\r\n\r\n",
    ] {
        let mut s = connect(addr);
        let r = request(&mut s, raw);
        assert_eq!(r.status(), 400, "{raw:?}: {}", r.head);
        assert!(
            String::from_utf8_lossy(&r.body).contains("Host"),
            "{raw:?}: {:?}",
            r.body
        );
        assert!(closed(&mut s), "{raw:?}");
    }
    let mut s = connect(addr);
    let r = request(&mut s, "GET /a.html HTTP/1.0\r\n\r\n");
    assert_eq!((r.status(), r.body.as_slice()), (200, A_HTML));
    server.shutdown().unwrap();
    let text = std::fs::read_to_string(&log).unwrap();
    let statuses: Vec<&str> = text.lines().map(|l| l.rsplit(' ').nth(1).unwrap_or_default()).collect();
    assert_eq!(statuses, ["400", "400", "400", "200"], "{text}");
    assert!(text.contains("\"GET /a.html HTTP/1.1\" 400 "), "{text}");
}

/// A symbolic link in the root that leads outside it is answered 403 (its
/// target never on the wire) unless `follow_outside_symlinks`; a link that
/// stays inside the root is followed.
#[test]
fn files_behind_links_out_of_the_root_are_forbidden_by_default() {
    let dir = docroot();
    std::fs::write(dir.path().join("secret.txt"), b"outside the root").unwrap();
    let www = dir.path().join("www");
    std::os::unix::fs::symlink(dir.path().join("secret.txt"), www.join("secret.html")).unwrap();
    std::os::unix::fs::symlink("../..", www.join("d/up")).unwrap();
    std::os::unix::fs::symlink("a.html", www.join("alias.html")).unwrap();
    let server = start(dir.path(), |_| {});
    let mut s = connect(server.local_addr());
    for path in ["/secret.html", "/d/up/secret.txt", "/spice/inproc/adrot/secret.html"] {
        let r = request(&mut s, &get(path));
        assert_eq!(r.status(), 403, "{path}");
        assert!(!String::from_utf8_lossy(&r.body).contains("outside"), "{path}");
    }
    assert_eq!(request(&mut s, &get("/alias.html")).body, A_HTML);
    server.shutdown().unwrap();

    let server = start(dir.path(), |c| c.follow_outside_symlinks = true);
    let mut s = connect(server.local_addr());
    assert_eq!(request(&mut s, &get("/secret.html")).body, b"outside the root");
    assert_eq!(request(&mut s, &get("/d/up/secret.txt")).body, b"outside the root");
}

/// A client that sends its request head a few bytes at a time (slowloris)
/// gets 408 and a closed connection once the header timeout has passed
/// since the head's first byte, however often bytes arrive; a keep-alive
/// connection idle between requests is not cut off by it.
#[test]
fn a_request_head_trickled_past_the_header_timeout_is_cut_off() {
    let dir = docroot();
    let log = dir.path().join("access.log");
    let server = start(dir.path(), |c| {
        c.header_timeout = Duration::from_millis(400);
        c.keepalive_timeout = Duration::from_secs(30);
        c.access_log = Some(log.clone());
    });
    let mut s = connect(server.local_addr());
    let t0 = Instant::now();
    s.write_all(b"GET /a.html HTTP/1.1\r\nHost: t\r\nX-Slow: ").unwrap();
    // One byte of a header value every 50 ms, each re-arming an idle timer,
    // for up to 200 bytes (10 s; far from any size limit): the server must
    // close long before the end.
    let mut sent = 0;
    while sent < 200 && s.write_all(b"a").is_ok() {
        sent += 1;
        s.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
        let mut b = [0u8; 512];
        match s.read(&mut b) {
            Ok(n) if n > 0 => {
                let head = String::from_utf8_lossy(&b[..n]).into_owned();
                assert!(head.starts_with("HTTP/1.1 408 Request Timeout\r\n"), "{head}");
                break;
            }
            Ok(_) => panic!("closed without a response"),
            Err(_) => {}
        }
    }
    assert!(sent < 200, "the trickled head was never cut off");
    assert!(
        t0.elapsed() >= Duration::from_millis(350),
        "cut off after {:?}",
        t0.elapsed()
    );
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    assert!(closed(&mut s));

    // Idle between two requests for longer than the header timeout: fine.
    let mut s = connect(server.local_addr());
    assert_eq!(request(&mut s, &get("/a.html")).body, A_HTML);
    std::thread::sleep(Duration::from_millis(700));
    assert_eq!(request(&mut s, &get("/a.html")).body, A_HTML);
    server.shutdown().unwrap();
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        text.lines().next().is_some_and(|l| l.ends_with("\"-\" 408 85")),
        "{text}"
    );
}
