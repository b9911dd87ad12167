//! The preflight request over HTTP/3: one request stream on one QUIC
//! connection, driven by a blocking loop over the same framing the event
//! loop uses, so that the preflight's byte counts are the run's.

use super::frame::{self, Response};
use super::protocol::{client_config, lost_kind, CONTROL};
use super::qpack;
use crate::plan::{PlanError, Scheme, Target, TlsOptions};
use crate::probe::{perr, ProbeError, ProbeResponse};
use crate::request::RequestSpec;
use crate::stats::{ErrorKind, QuicCounters};
use crate::tls::TlsConfigs;
use bytes::BytesMut;
use quinn_proto::{DatagramEvent, Dir, Endpoint, EndpointConfig, Event, ReadError, StreamEvent};
use std::io;
use std::net::{IpAddr, UdpSocket};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Sends `request` for `target` over HTTP/3 and reads the whole response.
pub fn probe_h3_request(
    request: &RequestSpec,
    target: &Target,
    source: Option<IpAddr>,
    headers: &[(String, String)],
    tls: &TlsOptions,
    timeout: Duration,
) -> Result<ProbeResponse, ProbeError> {
    let start = Instant::now();
    let deadline = start + timeout;
    if target.scheme != Scheme::Https {
        return Err(perr(
            ErrorKind::Tls,
            "HTTP/3 runs over QUIC, which is always encrypted: use an https:// URL",
        ));
    }
    let cfgs = TlsConfigs::new(tls).map_err(|e: PlanError| perr(ErrorKind::Tls, e.to_string()))?;
    let client = client_config(&cfgs.full, &cfgs.verifier, false).map_err(|e| perr(ErrorKind::Tls, e))?;
    let remote = target.addr;
    let local = super::protocol::local_addr(source, remote);
    let sock = UdpSocket::bind(local).map_err(|e| perr(ErrorKind::Bind, format!("binding {local}: {e}")))?;
    sock.connect(remote)
        .map_err(|e| perr(ErrorKind::ConnectRefused, format!("{remote}: {e}")))?;
    let mut endpoint = Endpoint::new(Arc::new(EndpointConfig::default()), None, true, None);
    let (handle, mut conn) = endpoint
        .connect(Instant::now(), client, remote, target.host.trim_matches(['[', ']']))
        .map_err(|e| perr(ErrorKind::Tls, format!("QUIC connect: {e}")))?;
    let fields = request.h2_fields(headers);
    let section = qpack::request_section(&request.method, target.scheme, &target.authority, &target.path, &fields);
    let bytes = frame::request(&section, request.body.as_deref());
    let mut written = 0;
    let mut stream = None;
    let mut response = Response::new(true);
    let mut out = Vec::with_capacity(65_536);
    let mut buf = vec![0u8; 65_536];
    let mut open = false;
    loop {
        let now = Instant::now();
        while let Some(t) = conn.poll_transmit(now, 1, &mut out) {
            match sock.send(&out[..t.size]) {
                Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
                    return Err(perr(
                        ErrorKind::ConnectRefused,
                        format!("nothing answers on UDP {remote} (does the server serve HTTP/3 there?)"),
                    ))
                }
                _ => out.clear(),
            }
        }
        if now >= deadline {
            let kind = if open {
                ErrorKind::Timeout
            } else {
                ErrorKind::HandshakeTimeout
            };
            let what = if open {
                format!("no whole response within {timeout:?}")
            } else {
                format!("no QUIC handshake with UDP {remote} within {timeout:?} (does the server serve HTTP/3 there?)")
            };
            return Err(perr(kind, what));
        }
        let wait = conn
            .poll_timeout()
            .map_or(deadline, |t| t.min(deadline))
            .saturating_duration_since(now)
            .max(Duration::from_micros(100));
        sock.set_read_timeout(Some(wait))
            .map_err(|e| perr(ErrorKind::Reset, e.to_string()))?;
        match sock.recv_from(&mut buf) {
            Ok((n, from)) => {
                let mut resp = Vec::new();
                match endpoint.handle(Instant::now(), from, None, None, BytesMut::from(&buf[..n]), &mut resp) {
                    Some(DatagramEvent::ConnectionEvent(_, ev)) => conn.handle_event(ev),
                    Some(DatagramEvent::Response(t)) => {
                        let _ = sock.send(&resp[..t.size]);
                    }
                    _ => {}
                }
            }
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
                return Err(perr(
                    ErrorKind::ConnectRefused,
                    format!("nothing answers on UDP {remote} (does the server serve HTTP/3 there?)"),
                ))
            }
            Err(_) => conn.handle_timeout(Instant::now()),
        }
        while let Some(ev) = conn.poll_endpoint_events() {
            if let Some(ce) = endpoint.handle_event(handle, ev) {
                conn.handle_event(ce);
            }
        }
        while let Some(ev) = conn.poll() {
            match ev {
                Event::Connected => {
                    open = true;
                    if let Some(id) = conn.streams().open(Dir::Uni) {
                        let _ = conn.send_stream(id).write(&CONTROL);
                    }
                }
                Event::ConnectionLost { reason } => {
                    let kind = lost_kind(&reason, open, &mut QuicCounters::default());
                    return Err(perr(kind, format!("the QUIC connection was lost: {reason}")));
                }
                Event::Stream(StreamEvent::Opened { dir: Dir::Uni }) => {
                    while let Some(id) = conn.streams().accept(Dir::Uni) {
                        let mut rs = conn.recv_stream(id);
                        if let Ok(mut c) = rs.read(true) {
                            while let Ok(Some(_)) = c.next(usize::MAX) {}
                            let _ = c.finalize();
                        };
                    }
                }
                Event::Stream(StreamEvent::Readable { id }) => {
                    let mut rs = conn.recv_stream(id);
                    let Ok(mut chunks) = rs.read(true) else { continue };
                    let mut fin = false;
                    let mut failed = None;
                    loop {
                        match chunks.next(usize::MAX) {
                            Ok(Some(c)) if Some(id) == stream => {
                                if response.receive(&c.bytes).is_err() {
                                    failed =
                                        Some(perr(ErrorKind::Framing, "the response's HTTP/3 frames are malformed"));
                                    break;
                                }
                            }
                            Ok(Some(_)) => {}
                            Ok(None) => {
                                fin = true;
                                break;
                            }
                            Err(ReadError::Blocked) => break,
                            Err(ReadError::Reset(code)) => {
                                failed = Some(perr(
                                    ErrorKind::StreamReset,
                                    format!(
                                        "the server reset the stream (RESET_STREAM, error code {:#x})",
                                        code.into_inner()
                                    ),
                                ));
                                break;
                            }
                        }
                    }
                    let _ = chunks.finalize();
                    if let Some(e) = failed.filter(|_| Some(id) == stream) {
                        return Err(e);
                    }
                    if fin && Some(id) == stream {
                        response
                            .finish()
                            .map_err(|_| perr(ErrorKind::Framing, "the response stream ended inside a frame"))?;
                        return Ok(ProbeResponse {
                            status: response.status.unwrap_or(0),
                            bytes: response.bytes,
                            body_bytes: response.body,
                            xxh3: response.hasher.as_ref().map_or(0, |h| h.digest()),
                            latency: start.elapsed(),
                        });
                    }
                }
                _ => {}
            }
        }
        if open && stream.is_none() {
            stream = conn.streams().open(Dir::Bi);
        }
        if let Some(id) = stream {
            if written < bytes.len() {
                let mut s = conn.send_stream(id);
                if let Ok(n) = s.write(&bytes[written..]) {
                    written += n;
                }
                if written == bytes.len() {
                    let _ = s.finish();
                }
            }
        }
    }
}
