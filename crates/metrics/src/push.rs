//! Pushing the series once a second: `--prometheus-remote-write URL` and
//! `--otlp URL`, each target on a thread of its own behind a queue of one
//! sample (newest wins), over a small HTTP/1.1 client of its own (a POST
//! with `Connection: close`, every read and write with a timeout, the
//! answer read to at most [`MAX_ANSWER_BYTES`]). A failure is counted and
//! told once, when the run ends; it never stops the run.

use crate::{otlp, remote_write, Snapshot};
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Connect, write and read timeout of one push.
pub const TIMEOUT: Duration = Duration::from_secs(2);
/// How much of a receiver's answer is read (its status line and a few
/// words of an error are all that is used).
pub const MAX_ANSWER_BYTES: u64 = 16 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PushKind {
    RemoteWrite,
    Otlp,
}

impl PushKind {
    /// The flag that asks for it, for messages.
    pub fn flag(self) -> &'static str {
        match self {
            PushKind::RemoteWrite => "--prometheus-remote-write",
            PushKind::Otlp => "--otlp",
        }
    }

    /// The `exporter` label of `benchlab_export_failures_total`.
    pub fn series_label(self) -> &'static str {
        match self {
            PushKind::RemoteWrite => "remote_write",
            PushKind::Otlp => "otlp",
        }
    }
}

/// A refused push URL, or a pusher that could not start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetError(pub String);

impl std::fmt::Display for TargetError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TargetError {}

/// Where one exporter pushes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushTarget {
    pub kind: PushKind,
    /// The URL as shown in messages (it has no credentials: they are refused).
    pub url: String,
    host: String,
    port: u16,
    /// Path and query of the POST.
    path: String,
}

impl PushTarget {
    /// Checks a push URL: `http://HOST[:PORT]/PATH`. An OTLP URL with no
    /// path gets OTLP/HTTP's `/v1/metrics`. `https://` and credentials in
    /// the URL are refused by name (this client speaks plain HTTP and
    /// sends no authentication; a local collector or agent can forward).
    pub fn parse(kind: PushKind, s: &str) -> Result<PushTarget, TargetError> {
        let flag = kind.flag();
        let u = url::Url::parse(s).map_err(|e| {
            // Quoted up to its query or credentials, which may hold a token.
            let shown = s.split(['?', '@']).next().unwrap_or("");
            TargetError(format!(
                "{flag} `{}`: not a URL ({e}): expected http://HOST:PORT/PATH",
                benchlab_input::excerpt(shown)
            ))
        })?;
        if !u.username().is_empty() || u.password().is_some() {
            // The URL is not repeated: it holds a password.
            return Err(TargetError(format!(
                "{flag}: the URL carries credentials (USER:PASSWORD@), which benchlab does not send; push to a \
                 collector or agent on this machine that authenticates for it"
            )));
        }
        // Messages quote the URL without its query (it may hold a token).
        let mut bare = u.clone();
        bare.set_query(None);
        bare.set_fragment(None);
        if u.scheme() != "http" {
            return Err(TargetError(format!(
                "{flag} `{bare}`: only http:// is supported (no TLS in the exporter): push to a collector or agent on \
                 this machine that forwards over TLS"
            )));
        }
        let host = u
            .host_str()
            .ok_or_else(|| TargetError(format!("{flag} `{bare}`: no host: expected http://HOST:PORT/PATH")))?
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        let port = u.port_or_known_default().unwrap_or(80);
        let mut path = u.path().to_string();
        if kind == PushKind::Otlp && (path.is_empty() || path == "/") {
            path = "/v1/metrics".into();
        }
        if let Some(q) = u.query() {
            path = format!("{path}?{q}");
        }
        let mut shown = bare;
        shown.set_path(path.split('?').next().unwrap_or("/"));
        Ok(PushTarget {
            kind,
            url: shown.to_string(),
            host,
            port,
            path,
        })
    }

    fn body(&self, s: &Snapshot, now: SystemTime, last_ms: &mut i64) -> Result<Vec<u8>, String> {
        match self.kind {
            PushKind::RemoteWrite => {
                // Samples of a series must move forward in time: two pushes
                // in one millisecond (the final one) get distinct stamps.
                let ms = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64);
                let ms = ms.max(*last_ms + 1);
                *last_ms = ms;
                remote_write::body(s, ms)
            }
            PushKind::Otlp => Ok(otlp::body(s, now)),
        }
    }

    fn headers(&self) -> &'static [(&'static str, &'static str)] {
        match self.kind {
            PushKind::RemoteWrite => remote_write::HEADERS,
            PushKind::Otlp => otlp::HEADERS,
        }
    }

    /// One POST of `body`; an answer other than 2xx is an error, with its
    /// status and the start of its text.
    pub fn post(&self, body: &[u8]) -> Result<(), String> {
        let addr = (self.host.as_str(), self.port)
            .to_socket_addrs()
            .map_err(|e| format!("cannot resolve {}: {e}", self.host))?
            .next()
            .ok_or_else(|| format!("{} has no address", self.host))?;
        let mut c = TcpStream::connect_timeout(&addr, TIMEOUT).map_err(|e| format!("connect to {addr}: {e}"))?;
        c.set_write_timeout(Some(TIMEOUT)).map_err(|e| e.to_string())?;
        c.set_read_timeout(Some(TIMEOUT)).map_err(|e| e.to_string())?;
        let host = if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        };
        let mut head = format!(
            "POST {} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: benchlab/{}\r\nContent-Length: {}\r\nConnection: close\r\n",
            self.path,
            env!("CARGO_PKG_VERSION"),
            body.len()
        );
        for (k, v) in self.headers() {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str("\r\n");
        c.write_all(head.as_bytes())
            .and_then(|_| c.write_all(body))
            .map_err(|e| format!("send: {e}"))?;
        let mut answer = Vec::new();
        // Connection: close: the answer ends at the receiver's close (or at
        // the bound; a timeout after a complete head still tells the status).
        let read = (&mut c).take(MAX_ANSWER_BYTES).read_to_end(&mut answer);
        if answer.is_empty() {
            return Err(match read {
                Err(e) => format!("no answer: {e}"),
                Ok(_) => "the receiver closed the connection without an answer".into(),
            });
        }
        let text = String::from_utf8_lossy(&answer);
        let status_line = text.lines().next().unwrap_or("");
        let code: u16 = status_line
            .split_whitespace()
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        if (200..300).contains(&code) {
            return Ok(());
        }
        let said = text.split_once("\r\n\r\n").map_or("", |(_, b)| b.trim());
        Err(format!(
            "answered `{}`{}",
            benchlab_input::excerpt(status_line),
            if said.is_empty() {
                String::new()
            } else {
                format!(": {}", benchlab_input::excerpt(said))
            }
        ))
    }
}

#[derive(Default)]
struct SlotState {
    /// The sample waiting to go (the queue of one).
    next: Option<Snapshot>,
    finishing: bool,
    done: bool,
    sent: u64,
    failed: u64,
    failed_counted: u64,
    skipped: u64,
    first_error: Option<String>,
}

#[derive(Default)]
struct Slot {
    state: Mutex<SlotState>,
    changed: Condvar,
}

impl Slot {
    fn lock(&self) -> MutexGuard<'_, SlotState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// One push target's thread and its queue.
pub(crate) struct Pusher {
    pub kind: PushKind,
    target: PushTarget,
    slot: Arc<Slot>,
}

impl Pusher {
    pub(crate) fn start(target: PushTarget) -> Result<Pusher, crate::TargetError> {
        let slot = Arc::new(Slot::default());
        let (t, s) = (target.clone(), Arc::clone(&slot));
        std::thread::Builder::new()
            .name(format!("benchlab-{}", target.kind.series_label()))
            .spawn(move || send_loop(&t, &s))
            .map_err(|e| TargetError(format!("{}: cannot start its thread: {e}", target.kind.flag())))?;
        Ok(Pusher {
            kind: target.kind,
            target,
            slot,
        })
    }

    /// Queues `s`, replacing a sample still waiting (counted as skipped).
    pub(crate) fn offer(&self, s: Snapshot) {
        let mut st = self.slot.lock();
        if st.finishing {
            return;
        }
        if st.next.replace(s).is_some() {
            st.skipped += 1;
        }
        self.slot.changed.notify_all();
    }

    /// Failures since the last call (for the failures series).
    pub(crate) fn take_new_failures(&self) -> u64 {
        let mut st = self.slot.lock();
        let n = st.failed - st.failed_counted;
        st.failed_counted = st.failed;
        n
    }

    /// Pushes `last` (the final figures) after whatever is being sent, and
    /// waits for the thread, at most long enough for two pushes. The line
    /// to tell the user, if any push failed or was skipped.
    pub(crate) fn finish(self, last: &Snapshot) -> Option<String> {
        let mut st = self.slot.lock();
        st.next = Some(last.clone());
        st.finishing = true;
        self.slot.changed.notify_all();
        let deadline = Instant::now() + 2 * (2 * TIMEOUT) + Duration::from_secs(1);
        while !st.done {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            st = match self.slot.changed.wait_timeout(st, left) {
                Ok((g, _)) => g,
                Err(p) => p.into_inner().0,
            };
        }
        let flag = self.kind.flag();
        let url = &self.target.url;
        let total = st.sent + st.failed;
        let mut parts = Vec::new();
        if st.failed > 0 {
            parts.push(format!(
                "{} of {total} pushes failed; the first: {}",
                st.failed,
                st.first_error.as_deref().unwrap_or("?")
            ));
        }
        if !st.done {
            parts.push("the final push did not end in time".into());
        }
        if st.skipped > 0 {
            parts.push(format!(
                "{} seconds were not pushed (the receiver was slower than one push a second)",
                st.skipped
            ));
        }
        (!parts.is_empty()).then(|| format!("{flag} {url}: {}", parts.join("; ")))
    }
}

fn send_loop(target: &PushTarget, slot: &Slot) {
    let mut last_ms = 0i64;
    loop {
        let (snap, last) = {
            let mut st = slot.lock();
            while st.next.is_none() && !st.finishing {
                st = match slot.changed.wait(st) {
                    Ok(g) => g,
                    Err(p) => p.into_inner(),
                };
            }
            match st.next.take() {
                Some(s) => (s, st.finishing),
                None => {
                    st.done = true;
                    slot.changed.notify_all();
                    return;
                }
            }
        };
        let result = target
            .body(&snap, SystemTime::now(), &mut last_ms)
            .and_then(|b| target.post(&b));
        let mut st = slot.lock();
        match result {
            Ok(()) => st.sent += 1,
            Err(e) => {
                st.failed += 1;
                st.first_error.get_or_insert(e);
            }
        }
        if last && st.next.is_none() {
            st.done = true;
            slot.changed.notify_all();
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_checked_and_otlp_gets_its_path() {
        let t = PushTarget::parse(PushKind::Otlp, "http://127.0.0.1:4318").expect("valid");
        assert_eq!(t.path, "/v1/metrics");
        assert_eq!(t.url, "http://127.0.0.1:4318/v1/metrics");
        let t = PushTarget::parse(PushKind::RemoteWrite, "http://localhost:9090/api/v1/write").expect("valid");
        assert_eq!(
            (t.host.as_str(), t.port, t.path.as_str()),
            ("localhost", 9090, "/api/v1/write")
        );
        let t = PushTarget::parse(PushKind::Otlp, "http://127.0.0.1:4318/v1/metrics?token=s3cret").expect("valid");
        assert_eq!(t.path, "/v1/metrics?token=s3cret", "sent as given");
        assert_eq!(t.url, "http://127.0.0.1:4318/v1/metrics", "shown without its query");
        let e = PushTarget::parse(PushKind::RemoteWrite, "https://m.example/api/v1/write").unwrap_err();
        assert!(
            e.0.starts_with("--prometheus-remote-write `https://m.example/api/v1/write`: only http://"),
            "{e}"
        );
        let e = PushTarget::parse(PushKind::Otlp, "http://u:s3cret@127.0.0.1:4318/").unwrap_err();
        assert!(e.0.contains("credentials") && !e.0.contains("s3cret"), "{e}");
        let e = PushTarget::parse(PushKind::Otlp, "127.0.0.1:4318").unwrap_err();
        assert!(e.0.starts_with("--otlp `127.0.0.1:4318`:"), "{e}");
        let e = PushTarget::parse(PushKind::Otlp, "collector:4318/v1/metrics?token=s3cret").unwrap_err();
        assert!(!e.0.contains("s3cret"), "{e}");
    }

    #[test]
    fn a_dead_receiver_is_counted_and_told_once() {
        // A port nothing listens on: bind, note it, close.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let t = PushTarget::parse(PushKind::Otlp, &format!("http://127.0.0.1:{port}/")).expect("valid");
        let p = Pusher::start(t).expect("starts");
        let s = crate::tests::sample().snapshot();
        let line = p.finish(&s).expect("a line about the failure");
        assert!(
            line.starts_with(&format!(
                "--otlp http://127.0.0.1:{port}/v1/metrics: 1 of 1 pushes failed; the first: connect to"
            )),
            "{line}"
        );
    }

    #[test]
    fn an_error_answer_is_quoted() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = l.local_addr().expect("addr").port();
        let server = std::thread::spawn(move || {
            let (mut c, _) = l.accept().expect("accept");
            let mut buf = [0u8; 65536];
            let _ = c.read(&mut buf);
            let _ = c.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 14\r\n\r\nout of order\r\n");
        });
        let t =
            PushTarget::parse(PushKind::RemoteWrite, &format!("http://127.0.0.1:{port}/api/v1/write")).expect("valid");
        let e = t.post(b"x").unwrap_err();
        assert_eq!(e, "answered `HTTP/1.1 400 Bad Request`: out of order");
        server.join().expect("server");
    }
}
