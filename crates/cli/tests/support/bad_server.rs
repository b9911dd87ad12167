//! A deliberately misbehaving HTTP/1 server for benchlab's error-bucket tests.
//!
//! Plain `std::net` and one thread per connection; it listens on
//! `127.0.0.1:0` and stops accepting when dropped (a shutdown flag plus a
//! self-connect that unblocks `accept`). Requests are read by scanning for
//! `\r\n\r\n`; the path (query string ignored) picks one misbehaviour:
//!
//! | path | what the server does |
//! | --- | --- |
//! | `/ok` | 200, `Content-Length: 1000`, keep-alive; closes after a request that asks for it |
//! | `/truncated` | head says 1000 body bytes, sends 500, then a clean close (FIN) |
//! | `/reset` | head and 300 of 1000 body bytes, then a reset (RST, `SO_LINGER` 0) |
//! | `/garbage` | `xyzzy garbage\r\n\r\n`, then waits for the client to close |
//! | `/partial-head` | part of a status line and header, then FIN |
//! | `/close-now` | reads the request and closes (FIN) without a byte of answer |
//! | `/rst-now` | reads the request and resets (RST) without a byte of answer |
//! | `/silent` | reads the request and never answers (the client must time out) |
//! | `/close-second` | like `/ok` for a connection's first request; FIN on its second, no answer |
//! | `/rst-second` | like `/close-second`, but RST |
//! | `/reset-second` | like `/ok` first; on the second, head and 300 body bytes, then RST |
//! | `/bad-chunk` | chunked response whose chunk size is `zz` |
//! | `/conflicting-length` | two different `Content-Length` fields |
//! | `/drip` | head (`Content-Length: 100`), then one body byte every 200 ms |
//! | `/500` | `500 Internal Server Error` with a 50-byte body, keep-alive |
//! | `/chunked` | chunked body of 1000 bytes with chunk extensions and a trailer |
//! | `/interim` | `100 Continue`, then a 200 with `Content-Length: 10` |
//! | `/close-idle` | 200 with 100 bytes, keep-alive, but closes (FIN) after 50 ms idle |
//! | `/rst-idle` | as `/close-idle`, but the idle close is a reset (RST) |
//! | `/http10-eof` | `HTTP/1.0 200 OK` without `Content-Length`: 777 bytes, then close |
//! | `/huge-head` | a response head of about 80 KB (over benchlab's 64 KiB limit) |
//! | `/vary` | 1000 body bytes, then 999, then 1000 … (one sequence for the whole server) |
//!
//! Every response is built by a public function here, so tests know its exact
//! length on the wire. Anything else gets a 404.
#![allow(dead_code)]

use std::collections::HashMap;
use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::Duration;

/// Body length of `/ok` and `/truncated`, `/reset` (as announced).
pub const OK_BODY_LEN: usize = 1000;
/// Body bytes `/truncated` really sends before its clean close.
pub const TRUNCATED_SENT: usize = 500;
/// Body bytes `/reset` sends before its reset.
pub const RESET_SENT: usize = 300;
/// What `/garbage` answers.
pub const GARBAGE: &[u8] = b"xyzzy garbage\r\n\r\n";
/// What `/partial-head` sends before its clean close.
pub const PARTIAL_HEAD: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Le";
/// What `/bad-chunk` answers: a chunk size that is not hex.
pub const BAD_CHUNK: &[u8] = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n";
/// What `/conflicting-length` answers: two different `Content-Length`s.
pub const CONFLICTING_LENGTH: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\nContent-Length: 20\r\n\r\n0123456789";
/// Announced body length of `/drip`.
pub const DRIP_BODY_LEN: usize = 100;
/// Pause between two bytes of `/drip`.
pub const DRIP_EVERY: Duration = Duration::from_millis(200);
/// Body length of `/500`.
pub const STATUS_500_BODY_LEN: usize = 50;
/// Decoded body length of `/chunked`.
pub const CHUNKED_BODY_LEN: usize = 1000;
/// Body length of the final response of `/interim`.
pub const INTERIM_BODY_LEN: usize = 10;
/// Body length of `/close-idle` and `/rst-idle`.
pub const IDLE_BODY_LEN: usize = 100;
/// How long `/close-idle` and `/rst-idle` keep an idle connection open.
pub const IDLE_CLOSE_AFTER: Duration = Duration::from_millis(50);
/// Body length of `/http10-eof`.
pub const HTTP10_BODY_LEN: usize = 777;
/// Body lengths `/vary` alternates between, the first one first.
pub const VARY_LENS: [usize; 2] = [1000, 999];

/// A connection silent this long is dropped, so no thread outlives a test.
const READ_LIMIT: Duration = Duration::from_secs(10);
/// A request head larger than this ends the connection.
const MAX_REQUEST_HEAD: usize = 64 * 1024;

/// Deterministic body bytes: `abc…z` repeated.
pub fn body(len: usize) -> Vec<u8> {
    (0..len).map(|i| b'a' + (i % 26) as u8).collect()
}

fn with_body(head: &str, len: usize) -> Vec<u8> {
    let mut v = head.as_bytes().to_vec();
    v.extend_from_slice(&body(len));
    v
}

/// `/ok`: `close` adds `Connection: close` (the server closes after it),
/// `keep_alive` adds `Connection: keep-alive` (answer to an HTTP/1.0
/// keep-alive request).
pub fn ok_response(close: bool, keep_alive: bool) -> Vec<u8> {
    let mut head = format!("HTTP/1.1 200 OK\r\nContent-Length: {OK_BODY_LEN}\r\n");
    if close {
        head.push_str("Connection: close\r\n");
    } else if keep_alive {
        head.push_str("Connection: keep-alive\r\n");
    }
    head.push_str("\r\n");
    with_body(&head, OK_BODY_LEN)
}

/// What `/truncated` sends: a head for 1000 bytes and 500 of them.
pub fn truncated_sent() -> Vec<u8> {
    with_body(
        &format!("HTTP/1.1 200 OK\r\nContent-Length: {OK_BODY_LEN}\r\n\r\n"),
        TRUNCATED_SENT,
    )
}

/// What `/reset` sends before the reset: a head for 1000 bytes and 300.
pub fn reset_sent() -> Vec<u8> {
    with_body(
        &format!("HTTP/1.1 200 OK\r\nContent-Length: {OK_BODY_LEN}\r\n\r\n"),
        RESET_SENT,
    )
}

/// The head of `/drip`; its body then comes one byte at a time.
pub fn drip_head() -> Vec<u8> {
    format!("HTTP/1.1 200 OK\r\nContent-Length: {DRIP_BODY_LEN}\r\n\r\n").into_bytes()
}

/// `/500`.
pub fn status_500_response() -> Vec<u8> {
    with_body(
        &format!("HTTP/1.1 500 Internal Server Error\r\nContent-Length: {STATUS_500_BODY_LEN}\r\n\r\n"),
        STATUS_500_BODY_LEN,
    )
}

/// `/chunked`: 5 + 10 + 256 + 729 = 1000 body bytes, with chunk extensions
/// (one quoted), an upper-case hex size, a size with leading zeros, and a
/// trailer field.
pub fn chunked_response() -> Vec<u8> {
    let b = body(CHUNKED_BODY_LEN);
    let mut v = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    let chunks: [(&str, std::ops::Range<usize>); 4] = [
        ("5;name=val", 0..5),
        ("A", 5..15),
        ("00000100", 15..271),
        ("2d9;a=1;b=\"x y\"", 271..1000),
    ];
    for (line, range) in chunks {
        v.extend_from_slice(line.as_bytes());
        v.extend_from_slice(b"\r\n");
        v.extend_from_slice(&b[range]);
        v.extend_from_slice(b"\r\n");
    }
    v.extend_from_slice(b"0\r\nX-T: 1\r\n\r\n");
    v
}

/// `/interim`: a `100 Continue` interim response, then the real one.
pub fn interim_response() -> Vec<u8> {
    with_body(
        &format!("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: {INTERIM_BODY_LEN}\r\n\r\n"),
        INTERIM_BODY_LEN,
    )
}

/// `/close-idle` and `/rst-idle`: an ordinary keep-alive response.
pub fn idle_response() -> Vec<u8> {
    with_body(
        &format!("HTTP/1.1 200 OK\r\nContent-Length: {IDLE_BODY_LEN}\r\n\r\n"),
        IDLE_BODY_LEN,
    )
}

/// `/http10-eof`: framed by the close of the connection.
pub fn http10_eof_response() -> Vec<u8> {
    with_body("HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\n", HTTP10_BODY_LEN)
}

/// `/huge-head`: 800 header fields of 100 bytes each, then a 10-byte body.
pub fn huge_head_response() -> Vec<u8> {
    let mut head = String::from("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n");
    for i in 0..800 {
        // "X-Filler-0000: " is 15 bytes, the value 83, CRLF 2: 100 bytes.
        head.push_str(&format!("X-Filler-{i:04}: {}\r\n", "v".repeat(83)));
    }
    head.push_str("\r\n");
    with_body(&head, 10)
}

/// `/vary`: the response with a body of `len` bytes.
pub fn vary_response(len: usize) -> Vec<u8> {
    with_body(&format!("HTTP/1.1 200 OK\r\nContent-Length: {len}\r\n\r\n"), len)
}

fn not_found() -> Vec<u8> {
    b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n".to_vec()
}

/// What the server saw, for tests that check connection behaviour.
#[derive(Default)]
struct Shared {
    stop: AtomicBool,
    connections: AtomicU64,
    close_requests: AtomicU64,
    requests: Mutex<HashMap<String, u64>>,
    vary_next: AtomicU64,
}

/// The running server; dropping it stops it.
pub struct BadServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept: Option<JoinHandle<()>>,
}

impl BadServer {
    /// Binds `127.0.0.1:0` and starts accepting.
    pub fn start() -> BadServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local_addr");
        let shared = Arc::new(Shared::default());
        let sh = Arc::clone(&shared);
        let accept = thread::Builder::new()
            .name("bad-server-accept".into())
            .spawn(move || {
                for conn in listener.incoming() {
                    if sh.stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(stream) = conn else { continue };
                    sh.connections.fetch_add(1, Ordering::SeqCst);
                    let sh = Arc::clone(&sh);
                    let _ = thread::Builder::new()
                        .name("bad-server-conn".into())
                        .spawn(move || serve(stream, &sh));
                }
            })
            .expect("spawn accept thread");
        BadServer {
            addr,
            shared,
            accept: Some(accept),
        }
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// `http://127.0.0.1:PORT` + `path`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    /// TCP connections accepted so far.
    pub fn connections(&self) -> u64 {
        self.shared.connections.load(Ordering::SeqCst)
    }

    /// Requests seen so far on `path`.
    pub fn requests(&self, path: &str) -> u64 {
        let map = self.shared.requests.lock().unwrap();
        map.get(path).copied().unwrap_or(0)
    }

    /// Requests seen so far that asked to close the connection
    /// (`Connection: close`, or HTTP/1.0 without `keep-alive`).
    pub fn close_requests(&self) -> u64 {
        self.shared.close_requests.load(Ordering::SeqCst)
    }
}

impl Drop for BadServer {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        // Unblock `accept`; the loop sees the flag and ends.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
    }
}

struct Request {
    path: String,
    http10: bool,
    wants_close: bool,
}

/// What to do with the connection after a response.
enum Next {
    KeepAlive,
    /// Clean close (FIN), after the client has closed or 2 s passed.
    Close,
    /// Close (FIN, or RST when `reset`) unless a request starts within
    /// [`IDLE_CLOSE_AFTER`].
    CloseWhenIdle {
        reset: bool,
    },
    /// The handler already ended the connection.
    Gone,
}

fn serve(mut s: TcpStream, sh: &Shared) {
    let _ = s.set_nodelay(true);
    let _ = s.set_read_timeout(Some(READ_LIMIT));
    let mut buf = Vec::with_capacity(4096);
    let mut served = 0u64;
    loop {
        let Some(req) = read_request(&mut s, &mut buf) else {
            return;
        };
        *sh.requests.lock().unwrap().entry(req.path.clone()).or_default() += 1;
        if req.wants_close {
            sh.close_requests.fetch_add(1, Ordering::SeqCst);
        }
        served += 1;
        let next = match respond(&mut s, &req, served, sh) {
            Ok(next) => next,
            Err(_) => return,
        };
        let next = match next {
            Next::KeepAlive | Next::CloseWhenIdle { .. } if req.wants_close => Next::Close,
            n => n,
        };
        match next {
            Next::KeepAlive => {}
            Next::Close => return close_clean(s),
            Next::Gone => return,
            Next::CloseWhenIdle { reset } => {
                if buf.is_empty() && !request_starts_within(&s, IDLE_CLOSE_AFTER) {
                    if reset {
                        return close_reset(s);
                    }
                    return; // drop: FIN (nothing unread, so no RST)
                }
                let _ = s.set_read_timeout(Some(READ_LIMIT));
            }
        }
    }
}

/// Whether the first byte of another request arrives within `wait`.
fn request_starts_within(s: &TcpStream, wait: Duration) -> bool {
    let _ = s.set_read_timeout(Some(wait));
    let mut one = [0u8; 1];
    matches!(s.peek(&mut one), Ok(n) if n > 0)
}

/// Answers `req`, the `nth` request (from 1) of this connection.
fn respond(s: &mut TcpStream, req: &Request, nth: u64, sh: &Shared) -> std::io::Result<Next> {
    Ok(match req.path.as_str() {
        "/ok" => {
            s.write_all(&ok_response(req.wants_close, req.http10))?;
            Next::KeepAlive
        }
        "/truncated" => {
            s.write_all(&truncated_sent())?;
            Next::Close
        }
        "/reset" => {
            s.write_all(&reset_sent())?;
            // Let the client read what was sent before the reset hits it.
            thread::sleep(Duration::from_millis(50));
            // `serve` drops the stream on `Gone`: with linger 0, a RST.
            linger_zero(s);
            Next::Gone
        }
        "/garbage" => {
            s.write_all(GARBAGE)?;
            Next::KeepAlive
        }
        "/partial-head" => {
            s.write_all(PARTIAL_HEAD)?;
            Next::Close
        }
        "/close-now" => Next::Close,
        "/rst-now" => {
            linger_zero(s);
            Next::Gone
        }
        "/silent" => Next::KeepAlive, // and wait for the next request
        "/close-second" | "/rst-second" | "/reset-second" if nth >= 2 => match req.path.as_str() {
            "/close-second" => Next::Close,
            "/rst-second" => {
                linger_zero(s);
                Next::Gone
            }
            _ => {
                s.write_all(&reset_sent())?;
                thread::sleep(Duration::from_millis(50));
                linger_zero(s);
                Next::Gone
            }
        },
        "/close-second" | "/rst-second" | "/reset-second" => {
            s.write_all(&ok_response(req.wants_close, req.http10))?;
            Next::KeepAlive
        }
        "/bad-chunk" => {
            s.write_all(BAD_CHUNK)?;
            Next::KeepAlive
        }
        "/conflicting-length" => {
            s.write_all(CONFLICTING_LENGTH)?;
            Next::KeepAlive
        }
        "/drip" => {
            s.write_all(&drip_head())?;
            for _ in 0..DRIP_BODY_LEN {
                if sh.stop.load(Ordering::SeqCst) {
                    return Ok(Next::Gone);
                }
                thread::sleep(DRIP_EVERY);
                s.write_all(b"d")?;
            }
            Next::KeepAlive
        }
        "/500" => {
            s.write_all(&status_500_response())?;
            Next::KeepAlive
        }
        "/chunked" => {
            s.write_all(&chunked_response())?;
            Next::KeepAlive
        }
        "/interim" => {
            // Two writes, so the interim response can arrive on its own.
            let all = interim_response();
            let split = b"HTTP/1.1 100 Continue\r\n\r\n".len();
            s.write_all(&all[..split])?;
            s.write_all(&all[split..])?;
            Next::KeepAlive
        }
        "/close-idle" => {
            s.write_all(&idle_response())?;
            Next::CloseWhenIdle { reset: false }
        }
        "/rst-idle" => {
            s.write_all(&idle_response())?;
            Next::CloseWhenIdle { reset: true }
        }
        "/http10-eof" => {
            s.write_all(&http10_eof_response())?;
            Next::Close
        }
        "/huge-head" => {
            s.write_all(&huge_head_response())?;
            Next::KeepAlive
        }
        "/vary" => {
            let n = sh.vary_next.fetch_add(1, Ordering::SeqCst) as usize;
            s.write_all(&vary_response(VARY_LENS[n % 2]))?;
            Next::KeepAlive
        }
        _ => {
            s.write_all(&not_found())?;
            Next::KeepAlive
        }
    })
}

/// Reads one request head (ending in `\r\n\r\n`) from `buf` + the socket;
/// bytes after it stay in `buf`. `None` on close, error, or a huge head.
fn read_request(s: &mut TcpStream, buf: &mut Vec<u8>) -> Option<Request> {
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head: Vec<u8> = buf.drain(..end + 4).collect();
            return parse_request(&head);
        }
        if buf.len() > MAX_REQUEST_HEAD {
            return None;
        }
        match s.read(&mut chunk) {
            Ok(0) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
}

fn parse_request(head: &[u8]) -> Option<Request> {
    let text = String::from_utf8_lossy(head);
    let mut lines = text.split("\r\n");
    let mut parts = lines.next()?.split(' ');
    let _method = parts.next()?;
    let target = parts.next()?;
    let version = parts.next().unwrap_or("HTTP/1.0");
    let path = target.split('?').next().unwrap_or(target).to_string();
    let mut close = false;
    let mut keep_alive = false;
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        if name.trim().eq_ignore_ascii_case("connection") {
            for token in value.split(',') {
                let t = token.trim();
                close |= t.eq_ignore_ascii_case("close");
                keep_alive |= t.eq_ignore_ascii_case("keep-alive");
            }
        }
    }
    let http10 = version == "HTTP/1.0";
    let wants_close = close || (http10 && !keep_alive);
    Some(Request {
        path,
        http10,
        wants_close,
    })
}

/// Clean close: FIN now, then wait (at most 2 s) for the client to close,
/// so that nothing unread turns the close into a reset.
fn close_clean(mut s: TcpStream) {
    let _ = s.shutdown(Shutdown::Write);
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    let mut sink = [0u8; 4096];
    while let Ok(n) = s.read(&mut sink) {
        if n == 0 {
            break;
        }
    }
}

/// Abortive close: `SO_LINGER` {on, 0 s}, then close, which sends a RST.
fn close_reset(s: TcpStream) {
    linger_zero(&s);
    drop(s);
}

#[cfg(unix)]
fn linger_zero(s: &TcpStream) {
    use std::os::raw::{c_int, c_void};
    use std::os::unix::io::AsRawFd;

    #[repr(C)]
    struct Linger {
        l_onoff: c_int,
        l_linger: c_int,
    }
    extern "C" {
        fn setsockopt(socket: c_int, level: c_int, name: c_int, value: *const c_void, len: u32) -> c_int;
    }
    #[cfg(any(target_os = "macos", target_os = "ios", target_os = "freebsd"))]
    const SOL_SOCKET: c_int = 0xffff;
    #[cfg(any(target_os = "macos", target_os = "ios", target_os = "freebsd"))]
    const SO_LINGER: c_int = 0x0080;
    #[cfg(not(any(target_os = "macos", target_os = "ios", target_os = "freebsd")))]
    const SOL_SOCKET: c_int = 1;
    #[cfg(not(any(target_os = "macos", target_os = "ios", target_os = "freebsd")))]
    const SO_LINGER: c_int = 13;

    let linger = Linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: a valid socket descriptor, a pointer to a live `struct linger`
    // and its exact size; setsockopt only reads it.
    let rc = unsafe {
        setsockopt(
            s.as_raw_fd(),
            SOL_SOCKET,
            SO_LINGER,
            (&linger as *const Linger).cast(),
            std::mem::size_of::<Linger>() as u32,
        )
    };
    assert_eq!(rc, 0, "setsockopt(SO_LINGER): {}", std::io::Error::last_os_error());
}
