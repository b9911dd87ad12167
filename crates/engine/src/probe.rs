//! One blocking request, framed by the same parser as the hot loop: the
//! check before a run ("is this URL what the run expects?") and the way a
//! run learns each URL's body size and checksum for validation.

use crate::parse::{Feed, ResponseParser};
use crate::plan::{PlanError, Scheme, Target, TlsOptions};
use crate::request::RequestSpec;
use crate::stats::ErrorKind;
use crate::tls::{server_name, TlsConfigs};
use std::io::{self, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};
use xxhash_rust::xxh3::Xxh3;

/// What one probe request returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeResponse {
    pub status: u16,
    /// Wire bytes (head + framed body).
    pub bytes: u64,
    pub body_bytes: u64,
    /// XXH3-64 of the decoded body.
    pub xxh3: u64,
    pub latency: Duration,
}

/// Why a probe failed, with the canonical error kind.
#[derive(Debug, thiserror::Error)]
#[error("{kind}: {message}")]
pub struct ProbeError {
    pub kind: ErrorKind,
    pub message: String,
}

pub(crate) fn perr(kind: ErrorKind, message: impl Into<String>) -> ProbeError {
    ProbeError {
        kind,
        message: message.into(),
    }
}

/// Sends one `GET` (HTTP/1.1, `Connection: close`) for `target` with the
/// extra `headers`, and reads the whole response within `timeout`.
pub fn probe(
    target: &Target,
    headers: &[(String, String)],
    tls: &TlsOptions,
    timeout: Duration,
) -> Result<ProbeResponse, ProbeError> {
    probe_from(target, None, headers, tls, timeout)
}

/// The blocking connection a probe (HTTP/1 or HTTP/2) speaks over: a
/// refused or timed-out connect is the probe's error, named as the load
/// would count it; reads and writes time out after `timeout`.
pub(crate) fn probe_connection(
    target: &Target,
    source: Option<IpAddr>,
    timeout: Duration,
) -> Result<std::net::TcpStream, ProbeError> {
    let tcp = connect_from(target.addr, source, timeout)?.map_err(|e| match e.kind() {
        io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => perr(
            ErrorKind::ConnectTimeout,
            format!("no connection to {} within {timeout:?}", target.addr),
        ),
        _ => perr(
            ErrorKind::ConnectRefused,
            format!("cannot connect to {}: {e}", target.addr),
        ),
    })?;
    let _ = tcp.set_read_timeout(Some(timeout));
    let _ = tcp.set_write_timeout(Some(timeout));
    let _ = tcp.set_nodelay(true);
    Ok(tcp)
}

/// [`probe`] from the local address `source` (the kernel's choice when
/// `None`): the preflight of a run with source addresses uses them, as its
/// load will.
pub fn probe_from(
    target: &Target,
    source: Option<IpAddr>,
    headers: &[(String, String)],
    tls: &TlsOptions,
    timeout: Duration,
) -> Result<ProbeResponse, ProbeError> {
    probe_request(target, source, headers, &RequestSpec::default(), tls, timeout)
}

/// [`probe_from`] with the request the run will send (method, its own
/// headers, body), so the preflight learns what the run's responses are.
pub fn probe_request(
    target: &Target,
    source: Option<IpAddr>,
    headers: &[(String, String)],
    request: &RequestSpec,
    tls: &TlsOptions,
    timeout: Duration,
) -> Result<ProbeResponse, ProbeError> {
    let start = Instant::now();
    let tcp = probe_connection(target, source, timeout)?;
    // The run's own request, closed after its response.
    let tail = request.http1_tail(headers, &target.authority, "1.1", Some("close"));
    let mut req = format!("{} {}{tail}", request.method, target.path).into_bytes();
    req.extend_from_slice(&request.framed_body());

    let mut stream: Box<dyn ReadWrite> = match target.scheme {
        Scheme::Http => Box::new(tcp),
        Scheme::Https => {
            let cfgs = TlsConfigs::new(tls).map_err(|e: PlanError| perr(ErrorKind::Tls, e.to_string()))?;
            let name = server_name(&target.host).map_err(|e| perr(ErrorKind::Tls, e.to_string()))?;
            let mut conn = rustls::ClientConnection::new(Arc::clone(&cfgs.full), name)
                .map_err(|e| perr(ErrorKind::Tls, e.to_string()))?;
            // The handshake first, on its own, so that its failure is told
            // as one (what failed, what to try) and not as a failed write.
            let mut tcp = tcp;
            while conn.is_handshaking() {
                conn.complete_io(&mut tcp).map_err(|e| tls_failure(e, target, tls))?;
            }
            Box::new(rustls::StreamOwned::new(conn, tcp))
        }
    };
    stream.write_all(&req).map_err(|e| io_kind(e, "sending the request"))?;
    let mut parser = ResponseParser::new();
    let mut hasher = Xxh3::new();
    let mut buf = vec![0u8; 64 * 1024];
    // The first bytes, to tell a TLS server answering http:// apart.
    let mut first: Option<[u8; 2]> = None;
    loop {
        if start.elapsed() > timeout {
            return Err(perr(
                ErrorKind::Timeout,
                format!("no whole response within {timeout:?}"),
            ));
        }
        let n = match stream.read(&mut buf) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => 0,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(io_kind(e, "reading the response")),
        };
        if n == 0 {
            parser.on_eof().map_err(|e| {
                perr(
                    crate::http1::frame_error_kind(e),
                    format!(
                        "the connection closed after {} bytes of the response",
                        parser.wire_bytes()
                    ),
                )
            })?;
            break;
        }
        if first.is_none() && n >= 2 {
            first = Some([buf[0], buf[1]]);
        }
        match parser.feed(&buf[..n], Some(&mut hasher)) {
            Ok(Feed::NeedMore) => {}
            Ok(Feed::Done { .. }) => break,
            // A TLS record (handshake 0x16 or alert 0x15, version 3.x) where
            // an HTTP status line belongs: the port speaks TLS.
            Err(e) if target.scheme == Scheme::Http && matches!(first, Some([0x15 | 0x16, 0x03])) => {
                return Err(perr(
                    crate::http1::frame_error_kind(e),
                    "the server answered in TLS, not plain HTTP: use https:// instead of http://",
                ))
            }
            Err(e) => {
                return Err(perr(
                    crate::http1::frame_error_kind(e),
                    format!(
                        "the response cannot be framed ({e:?}) after {} bytes",
                        parser.wire_bytes()
                    ),
                ))
            }
        }
    }
    Ok(ProbeResponse {
        status: parser.head().status,
        bytes: parser.wire_bytes(),
        body_bytes: parser.body_bytes(),
        xxh3: hasher.digest(),
        latency: start.elapsed(),
    })
}

/// Connects within `timeout`, bound to `source` when given. A failed bind
/// is the outer error (kind `bind`); the connect's own result is inside.
fn connect_from(
    addr: SocketAddr,
    source: Option<IpAddr>,
    timeout: Duration,
) -> Result<io::Result<TcpStream>, ProbeError> {
    let Some(ip) = source else {
        return Ok(TcpStream::connect_timeout(&addr, timeout));
    };
    use socket2::{Domain, Socket, Type};
    let sock = Socket::new(Domain::for_address(addr), Type::STREAM, None)
        .and_then(|s| s.bind(&SocketAddr::new(ip, 0).into()).map(|()| s))
        .map_err(|e| perr(ErrorKind::Bind, format!("cannot bind source address {ip}: {e}")))?;
    Ok(sock.connect_timeout(&addr.into(), timeout).map(|()| sock.into()))
}

trait ReadWrite: Read + Write {}
impl<T: Read + Write> ReadWrite for T {}

/// A failed TLS handshake, told in words (see [`crate::tls::explain`]).
pub(crate) fn tls_failure(e: io::Error, target: &Target, opts: &TlsOptions) -> ProbeError {
    if let Some(m) = crate::tls::explain_io(&e, &target.host, opts) {
        return perr(ErrorKind::Tls, m);
    }
    match e.kind() {
        io::ErrorKind::UnexpectedEof | io::ErrorKind::ConnectionReset | io::ErrorKind::ConnectionAborted => {
            perr(ErrorKind::Tls, format!("{}: {e}", crate::tls::CLOSED_IN_HANDSHAKE))
        }
        _ => io_kind(e, "during the TLS handshake"),
    }
}

pub(crate) fn io_kind(e: io::Error, doing: &str) -> ProbeError {
    let kind = match e.kind() {
        io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => ErrorKind::Timeout,
        io::ErrorKind::InvalidData => ErrorKind::Tls,
        io::ErrorKind::ConnectionRefused => ErrorKind::ConnectRefused,
        _ => ErrorKind::Reset,
    };
    perr(kind, format!("{doing}: {e}"))
}
