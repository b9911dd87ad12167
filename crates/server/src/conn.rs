//! One client connection: read, answer every complete request in the read
//! buffer in order (pipelining), write the answers in one `write`, repeat.
//!
//! The steady state of a keep-alive connection serving a cached file is one
//! `read` and one `write` per request (several requests per pair when
//! pipelined) and no allocation: the request is parsed in place, the path is
//! borrowed unless percent-escaped, and the response is built in a buffer the
//! connection keeps.
//!
//! A request head must arrive whole within the header timeout of its first
//! byte, or the connection gets 408 and is closed: the idle timer below is
//! re-armed by every read, so a client trickling a head a byte at a time
//! (slowloris) would otherwise hold the connection for ever. The head's
//! timer exists only while part of a head waits in the buffer, which a
//! client that sends each request in one piece never sees.
//!
//! Idle connections are closed after the keep-alive timeout. The timer is
//! re-armed only when its deadline has drifted by more than an eighth of the
//! timeout (at most a second): re-arming takes a lock in tokio's timer, which
//! a per-read `tokio::time::timeout` would pay on every request.

use crate::access_log::{format_line, RequestLine};
use crate::files::{Found, Missing};
use crate::http::{self, Head, HeadError, Method, Route, Status, MAX_HEADERS};
use crate::shop;
use crate::spice::AdEnv;
use crate::Shared;
use std::fs::File;
use std::io::{self, Write as _};
use std::mem::MaybeUninit;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt, Interest};
use tokio::net::TcpStream;
use tokio::time::{Instant, Sleep};

/// Free space ensured in the read buffer before each read.
const READ_RESERVE: usize = 8 * 1024;

/// Pipelined responses are written once this many bytes are waiting, so a
/// client that pipelines hundreds of requests does not grow the buffer
/// without bound.
const FLUSH_AT: usize = 64 * 1024;

/// Largest `sendfile` call, so one large file does not hold the worker
/// thread for long.
const SENDFILE_CHUNK: usize = 1 << 20;

/// What the connection does after a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Next {
    /// Keep reading requests.
    Continue,
    /// Send what is buffered, then close (the client asked, or HTTP/1.0).
    Close,
    /// Send the error response, then close without reading the rest of the
    /// request: drain input for a moment first, so the close does not become
    /// a reset that destroys the response before the client read it.
    CloseAfterError,
    /// The connection broke: drop it.
    Abort,
}

/// Counts requests being answered, so a graceful shutdown can wait for them.
struct Active<'a>(&'a AtomicUsize);

impl<'a> Active<'a> {
    fn new(n: &'a AtomicUsize) -> Active<'a> {
        n.fetch_add(1, Ordering::Relaxed);
        Active(n)
    }
}

impl Drop for Active<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Release);
    }
}

struct Conn {
    stream: TcpStream,
    peer: SocketAddr,
    shared: Arc<Shared>,
    /// Responses waiting to be written.
    wbuf: Vec<u8>,
    /// Scratch space for one access log line.
    logline: Vec<u8>,
    idle: Duration,
    slop: Duration,
    deadline: Instant,
    timer: Pin<Box<Sleep>>,
}

/// Serves one accepted connection until the client closes it, it idles past
/// the keep-alive timeout, or a response ends it.
pub(crate) async fn serve(stream: TcpStream, peer: SocketAddr, shared: Arc<Shared>) {
    // Responses go out in one write each, but a streamed file's head and body
    // are two: without NODELAY, Nagle would hold the body behind the head.
    let _ = stream.set_nodelay(true);
    let idle = shared.keepalive_timeout;
    let deadline = Instant::now() + idle;
    let mut conn = Conn {
        stream,
        peer,
        shared,
        wbuf: Vec::with_capacity(16 * 1024),
        logline: Vec::new(),
        idle,
        slop: (idle / 8).min(Duration::from_secs(1)),
        deadline,
        timer: Box::pin(tokio::time::sleep_until(deadline)),
    };
    // A second handle on the shared state, so the in-flight guard does not
    // borrow `conn` across `respond`.
    let shared = Arc::clone(&conn.shared);
    let mut rbuf: Vec<u8> = Vec::with_capacity(READ_RESERVE);
    let mut start = 0usize;
    // Bytes of a request body still to be skipped.
    let mut skip = 0u64;
    // When the head whose first bytes are in the buffer must be complete.
    let mut head_due: Option<Instant> = None;
    loop {
        // Answer every complete request in the buffer, in order.
        loop {
            if skip > 0 {
                let n = skip.min((rbuf.len() - start) as u64);
                start += n as usize;
                skip -= n;
                if skip > 0 {
                    break;
                }
            }
            if start == rbuf.len() {
                break;
            }
            let mut headers = [const { MaybeUninit::uninit() }; MAX_HEADERS];
            let next = match http::parse_head(&rbuf[start..], &mut headers) {
                Ok(Some(head)) => {
                    // The shop reads its request bodies (up to its bound);
                    // every other body is skipped unread.
                    let body_len = if shop::is_shop(head.target) && head.content_length <= shop::MAX_BODY {
                        head.content_length as usize
                    } else {
                        0
                    };
                    if rbuf.len() - start < head.len + body_len {
                        head_due.get_or_insert_with(|| Instant::now() + shared.header_timeout);
                        break;
                    }
                    head_due = None;
                    let _active = Active::new(&shared.in_flight);
                    let body = &rbuf[start + head.len..start + head.len + body_len];
                    let next = conn.respond(&head, body).await;
                    start += head.len;
                    skip = head.content_length;
                    next
                }
                Ok(None) => {
                    head_due.get_or_insert_with(|| Instant::now() + shared.header_timeout);
                    break;
                }
                Err(e) => {
                    let why = match e {
                        HeadError::Malformed => "not an HTTP/1.0 or HTTP/1.1 request",
                        HeadError::TooLarge => "request head over 64 KiB or over 64 header fields",
                        HeadError::BadContentLength => "bad Content-Length",
                    };
                    conn.error(None, 1, e.status(), why)
                }
            };
            match next {
                Next::Continue if conn.wbuf.len() >= FLUSH_AT => {
                    if conn.flush().await.is_err() {
                        return;
                    }
                }
                Next::Continue => {}
                Next::Close => {
                    let _ = conn.flush().await;
                    return;
                }
                Next::CloseAfterError => {
                    if conn.flush().await.is_ok() {
                        conn.linger().await;
                    }
                    return;
                }
                Next::Abort => return,
            }
        }
        if !conn.wbuf.is_empty() && conn.flush().await.is_err() {
            return;
        }
        if start == rbuf.len() {
            rbuf.clear();
        } else if start > 0 {
            rbuf.drain(..start);
        }
        start = 0;
        if rbuf.capacity() - rbuf.len() < READ_RESERVE / 2 {
            rbuf.reserve(READ_RESERVE);
        }
        match conn.read(&mut rbuf, head_due).await {
            Ok(0) => return,
            Ok(_) => {}
            Err(_) if head_due.is_some_and(|due| Instant::now() >= due) => {
                conn.error(
                    None,
                    1,
                    Status::RequestTimeout,
                    "the request head did not arrive whole within the header timeout",
                );
                if conn.flush().await.is_ok() {
                    conn.linger().await;
                }
                return;
            }
            Err(_) => return,
        }
    }
}

impl Conn {
    /// Moves the idle deadline to `idle` from now, unless it is already
    /// close to that (see the module comment).
    fn arm_timer(&mut self) {
        let want = Instant::now() + self.idle;
        if want > self.deadline + self.slop {
            self.deadline = want;
            self.timer.as_mut().reset(want);
        }
    }

    /// Reads more bytes, until the idle timeout or, with part of a request
    /// head waiting, `head_due`.
    async fn read(&mut self, rbuf: &mut Vec<u8>, head_due: Option<Instant>) -> io::Result<usize> {
        self.arm_timer();
        match head_due {
            None => tokio::select! {
                biased;
                r = self.stream.read_buf(rbuf) => r,
                () = &mut self.timer => Err(io::ErrorKind::TimedOut.into()),
            },
            Some(due) => tokio::select! {
                biased;
                r = self.stream.read_buf(rbuf) => r,
                () = &mut self.timer => Err(io::ErrorKind::TimedOut.into()),
                () = tokio::time::sleep_until(due) => Err(io::ErrorKind::TimedOut.into()),
            },
        }
    }

    /// Writes the buffered responses.
    async fn flush(&mut self) -> io::Result<()> {
        self.arm_timer();
        let r = tokio::select! {
            biased;
            r = self.stream.write_all(&self.wbuf) => r,
            () = &mut self.timer => Err(io::ErrorKind::TimedOut.into()),
        };
        self.wbuf.clear();
        r
    }

    /// After an error response: stop sending, read and discard what the
    /// client still sends (up to 1 s or 256 KiB), then close.
    async fn linger(&mut self) {
        let _ = self.stream.shutdown().await;
        let mut sink = [0u8; 4096];
        let mut left = 256 * 1024usize;
        let until = Instant::now() + Duration::from_secs(1);
        while left > 0 {
            match tokio::time::timeout_at(until, self.stream.read(&mut sink)).await {
                Ok(Ok(n)) if n > 0 => left = left.saturating_sub(n),
                _ => return,
            }
        }
    }

    fn log(&mut self, request: Option<RequestLine<'_>>, status: Status, body_bytes: u64) {
        self.log_code(request, status.code(), body_bytes);
    }

    fn log_code(&mut self, request: Option<RequestLine<'_>>, status: u16, body_bytes: u64) {
        if let Some(log) = &self.shared.access_log {
            format_line(&mut self.logline, self.peer.ip(), request, status, body_bytes);
            log.write(&self.logline);
        }
    }

    /// Whether the connection stays open after this response: the client
    /// wants it and the server is not shutting down (then responses say
    /// `Connection: close`, so clients do not lose a request to the close).
    fn keep_alive(&self, head: &Head<'_, '_>) -> bool {
        head.keep_alive && !self.shared.stopping.load(Ordering::Relaxed)
    }

    /// Buffers an error response that ends the connection.
    fn error(&mut self, request: Option<RequestLine<'_>>, minor: u8, status: Status, why: &str) -> Next {
        let n = http::push_error(&mut self.wbuf, minor, status, false, why);
        self.log(request, status, n);
        Next::CloseAfterError
    }

    /// Answers one request.
    async fn respond(&mut self, head: &Head<'_, '_>, body: &[u8]) -> Next {
        let request = Some(RequestLine {
            method: head.method_str,
            target: head.target,
            minor: head.minor,
        });
        let minor = head.minor;
        if let Some(why) = head.host_error() {
            return self.error(request, minor, Status::BadRequest, why);
        }
        if shop::is_shop(head.target) && !head.transfer_encoding {
            return self.shop(head, request, body);
        }
        if head.method == Method::Other {
            return self.error(request, minor, Status::MethodNotAllowed, "only GET and HEAD are served");
        }
        if head.transfer_encoding {
            return self.error(
                request,
                minor,
                Status::NotImplemented,
                "request bodies with Transfer-Encoding",
            );
        }
        let (path, query) = match http::split_target(head.target) {
            Ok(t) => t,
            Err(why) => return self.error(request, minor, Status::BadRequest, why),
        };
        let decoded = match http::decode_path(path) {
            Ok(p) => p,
            Err(why) => return self.error(request, minor, Status::BadRequest, why),
        };
        let route = match http::route(&decoded, query) {
            Ok(r) => r,
            Err(why) => return self.error(request, minor, Status::BadRequest, why),
        };
        // `X-Ad: N\r\n` for ad rotation: at most 11 bytes.
        let mut extra = [0u8; 16];
        let mut extra_len = 0;
        let file = match route {
            Route::Static(file) => file,
            Route::AdRotation(file) => {
                let mut w = &mut extra[..];
                let _ = write!(w, "X-Ad: {}\r\n", AdEnv::read(head, query).ad_id());
                extra_len = 16 - w.len();
                file
            }
            Route::Session(file) => {
                // Answers before this one are not held up by the lock.
                if !self.wbuf.is_empty() && self.flush().await.is_err() {
                    return Next::Abort;
                }
                if let Err(e) = self.record_session(file).await {
                    report_session_error(&e);
                    let keep_alive = self.keep_alive(head);
                    let n = http::push_error(&mut self.wbuf, minor, Status::Internal, keep_alive, "session log");
                    self.log(request, Status::Internal, n);
                    return if keep_alive { Next::Continue } else { Next::Close };
                }
                file
            }
            Route::Sleep(file, ms) => {
                if !self.wbuf.is_empty() && self.flush().await.is_err() {
                    return Next::Abort;
                }
                tokio::time::sleep(Duration::from_millis(ms)).await;
                file
            }
        };
        self.send_file(head, request, file, &extra[..extra_len]).await
    }

    /// Answers a request under `/shop/` (docs/shop.md): the shop's lock is
    /// held for a map lookup or two, never across an await.
    fn shop(&mut self, head: &Head<'_, '_>, request: Option<RequestLine<'_>>, body: &[u8]) -> Next {
        let field = |name: &str| {
            head.headers
                .iter()
                .find(|h| h.name.eq_ignore_ascii_case(name))
                .and_then(|h| std::str::from_utf8(h.value).ok())
        };
        let reply = if head.content_length > shop::MAX_BODY {
            shop::Reply::too_large()
        } else {
            self.shared.shop.handle(&shop::Request {
                method: head.method_str,
                path: head.target.split('?').next().unwrap_or(""),
                cookie: field("cookie"),
                csrf_token: field("x-csrf-token"),
                content_type: field("content-type"),
                body,
            })
        };
        let keep_alive = self.keep_alive(head);
        let _ = write!(
            self.wbuf,
            "HTTP/1.{} {} {}\r\nServer: benchlab\r\nDate: ",
            head.minor,
            reply.status,
            reply.reason()
        );
        self.wbuf.extend_from_slice(&crate::dates::now().http);
        let _ = write!(
            self.wbuf,
            "\r\nContent-Type: {}\r\nContent-Length: {}\r\n{}",
            reply.content_type,
            reply.body.len(),
            reply.fields
        );
        if !keep_alive {
            self.wbuf.extend_from_slice(b"Connection: close\r\n");
        } else if head.minor == 0 {
            self.wbuf.extend_from_slice(b"Connection: keep-alive\r\n");
        }
        self.wbuf.extend_from_slice(b"\r\n");
        self.wbuf.extend_from_slice(reply.body.as_bytes());
        self.log_code(request, reply.status, reply.body.len() as u64);
        if keep_alive {
            Next::Continue
        } else {
            Next::Close
        }
    }

    /// The session program's steps run in a blocking task: they wait for a
    /// file lock, which must not stall the worker thread's other connections.
    async fn record_session(&self, file: &str) -> io::Result<u64> {
        let log = Arc::clone(&self.shared.session_log);
        let file = file.to_owned();
        tokio::task::spawn_blocking(move || log.record(&file))
            .await
            .map_err(io::Error::other)?
    }

    /// Answers with `file`; `extra` are further header field lines.
    async fn send_file(
        &mut self,
        head: &Head<'_, '_>,
        request: Option<RequestLine<'_>>,
        file: &str,
        extra: &[u8],
    ) -> Next {
        let (minor, keep_alive) = (head.minor, self.keep_alive(head));
        let after = if keep_alive { Next::Continue } else { Next::Close };
        let get = head.method == Method::Get;
        match self.shared.files.lookup(file) {
            Ok(Found::Cached(c)) => {
                http::push_head(&mut self.wbuf, minor, Status::Ok, keep_alive, &c.fields, extra);
                let body = if get { c.body.len() as u64 } else { 0 };
                if get {
                    self.wbuf.extend_from_slice(&c.body);
                }
                self.log(request, Status::Ok, body);
                after
            }
            Ok(Found::Stream { file, len, fields }) => {
                http::push_head(&mut self.wbuf, minor, Status::Ok, keep_alive, &fields, extra);
                self.log(request, Status::Ok, if get { len } else { 0 });
                if !get || len == 0 {
                    return after;
                }
                if self.flush().await.is_err() {
                    return Next::Abort;
                }
                self.arm_timer();
                let sent = tokio::select! {
                    biased;
                    r = sendfile(&self.stream, &file, len) => r,
                    () = &mut self.timer => Err(io::ErrorKind::TimedOut.into()),
                };
                // A short or failed body cannot be repaired: the framing
                // promised `len` bytes.
                if sent.is_err() {
                    Next::Abort
                } else {
                    after
                }
            }
            Err(missing) => {
                let (status, why) = match &missing {
                    Missing::NotFound => (Status::NotFound, ""),
                    Missing::Forbidden => (Status::Forbidden, ""),
                    Missing::Io(e) => {
                        report_io_error(file, e);
                        (Status::Internal, "cannot read the file")
                    }
                };
                let n = http::push_error(&mut self.wbuf, minor, status, keep_alive, why);
                self.log(request, status, n);
                after
            }
        }
    }
}

/// Sends `len` bytes of `file` from its start with `sendfile(2)`: the kernel
/// copies page cache to socket, the body never enters user space.
async fn sendfile(stream: &TcpStream, file: &File, len: u64) -> io::Result<()> {
    let (out_fd, in_fd) = (stream.as_raw_fd(), file.as_raw_fd());
    let mut offset: libc::off_t = 0;
    while (offset as u64) < len {
        let want = (len - offset as u64).min(SENDFILE_CHUNK as u64) as usize;
        stream.writable().await?;
        let r = stream.try_io(Interest::WRITABLE, || {
            // SAFETY: both descriptors stay open for the call (`stream` and
            // `file` are borrowed), and `offset` is a valid, exclusive pointer.
            let n = unsafe { libc::sendfile(out_fd, in_fd, &mut offset, want) };
            if n < 0 {
                Err(io::Error::last_os_error())
            } else {
                Ok(n as usize)
            }
        });
        match r {
            Ok(0) => {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the file shrank while being sent",
                ))
            }
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

fn report_session_error(e: &io::Error) {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| eprintln!("benchlab serve: session request failed (answered 500): {e}"));
}

fn report_io_error(file: &str, e: &io::Error) {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| eprintln!("benchlab serve: cannot read {file} (answered 500): {e}"));
}
