//! The preflight request over HTTP/2: one stream on one blocking
//! connection, through the same [`Conn`] the event loop drives, so that the
//! preflight's byte counts are the run's.

use super::conn::{Conn, Ended, Outcome};
use super::hpack;
use crate::plan::{PlanError, Scheme, Target, TlsOptions};
use crate::probe::{io_kind, perr, probe_connection, tls_failure, ProbeError, ProbeResponse};
use crate::request::RequestSpec;
use crate::stats::ErrorKind;
use crate::tls::{server_name, TlsConfigs};
use std::io::{self, Read, Write};
use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

trait ReadWrite: Read + Write {}
impl<T: Read + Write> ReadWrite for T {}

/// Sends one `GET` for `target` over HTTP/2 (TLS with ALPN `h2`, or
/// cleartext with prior knowledge) and reads the whole response.
pub fn probe_h2(
    target: &Target,
    source: Option<IpAddr>,
    headers: &[(String, String)],
    tls: &TlsOptions,
    timeout: Duration,
) -> Result<ProbeResponse, ProbeError> {
    probe_h2_request(&RequestSpec::default(), target, source, headers, tls, timeout)
}

/// [`probe_h2`] with the request the run sends: its method, its own
/// headers (over `headers` of the same name) and its body as DATA.
pub fn probe_h2_request(
    request: &RequestSpec,
    target: &Target,
    source: Option<IpAddr>,
    headers: &[(String, String)],
    tls: &TlsOptions,
    timeout: Duration,
) -> Result<ProbeResponse, ProbeError> {
    let start = Instant::now();
    let tcp = probe_connection(target, source, timeout)?;
    let mut stream: Box<dyn ReadWrite> = match target.scheme {
        Scheme::Http => Box::new(tcp),
        Scheme::Https => {
            let cfgs = TlsConfigs::new(tls).map_err(|e: PlanError| perr(ErrorKind::Tls, e.to_string()))?;
            let mut cfg = (*cfgs.full).clone();
            cfg.alpn_protocols = vec![b"h2".to_vec()];
            let name = server_name(&target.host).map_err(|e| perr(ErrorKind::Tls, e.to_string()))?;
            let mut conn =
                rustls::ClientConnection::new(Arc::new(cfg), name).map_err(|e| perr(ErrorKind::Tls, e.to_string()))?;
            let mut tcp = tcp;
            while conn.is_handshaking() {
                conn.complete_io(&mut tcp).map_err(|e| tls_failure(e, target, tls))?;
            }
            if conn.alpn_protocol() != Some(b"h2") {
                return Err(perr(
                    ErrorKind::Tls,
                    "the server did not choose HTTP/2 in the TLS handshake (ALPN `h2`): enable HTTP/2 on its \
                     TLS listener, or run with --http 1.1",
                ));
            }
            Box::new(rustls::StreamOwned::new(conn, tcp))
        }
    };
    let mut conn = Conn::new(crate::plan::H2Plan::DEFAULT_WINDOW);
    let mut ended: Vec<Ended> = Vec::new();
    let fields = request.h2_fields(headers);
    let block = hpack::method_block(&request.method, target.scheme, &target.authority, &target.path, &fields);
    let body: Option<std::sync::Arc<[u8]>> = request.body.as_deref().map(std::sync::Arc::from);
    let mut opened = false;
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        if conn.got_settings && !opened {
            conn.open_with(0, &block, true, body.as_ref());
            opened = true;
        }
        if !conn.unsent().is_empty() {
            stream
                .write_all(conn.unsent())
                .map_err(|e| io_kind(e, "sending the request"))?;
            conn.wrote(conn.unsent().len());
        }
        if let Some(e) = ended.pop() {
            return match e.outcome {
                Outcome::Done { status, body, xxh3 } => Ok(ProbeResponse {
                    status,
                    bytes: e.bytes,
                    body_bytes: body,
                    xxh3: xxh3.unwrap_or(0),
                    latency: start.elapsed(),
                }),
                Outcome::Reset(code) => Err(perr(
                    ErrorKind::StreamReset,
                    format!("the server reset the stream (RST_STREAM, error code {code})"),
                )),
                Outcome::Refused => Err(perr(ErrorKind::GoAway, "the server refused the stream (GOAWAY)")),
                Outcome::Failed(kind) => Err(perr(kind, "the response's stream failed")),
            };
        }
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
            let advice = if !conn.got_settings && target.scheme == Scheme::Http {
                " before its SETTINGS: does the port speak HTTP/2 without TLS (h2c)? try https:// or --http 1.1"
            } else {
                ""
            };
            return Err(perr(
                ErrorKind::Reset,
                format!("the server closed the connection{advice}"),
            ));
        }
        if let Err(f) = conn.receive(&buf[..n], &mut ended) {
            let advice = if !conn.got_settings {
                " (the port may not speak HTTP/2: try --http 1.1, or https:// for TLS)"
            } else {
                ""
            };
            return Err(perr(f.kind, format!("{}{advice}", f.why)));
        }
    }
}
