//! HTTP/3 (RFC 9114) over QUIC v1 (RFC 9000) for `--http 3` and suites'
//! `http = "3"`: the QUIC transport is quinn-proto's, driven from the
//! engine's own event loop and UDP sockets; the HTTP/3 framing and QPACK
//! (static table only) are benchlab's, so that each request stream's
//! frame bytes are counted exactly (docs/counting.md, "HTTP/3").
//!
//! Why quinn-proto: it is sans-IO (datagrams in, datagrams and timers
//! out), so it runs inside the one mio loop per OS thread as HTTP/1 and
//! HTTP/2 do, on rustls with ring, which benchlab already uses; the
//! HTTP/3 layer on top is small (a request stream is HEADERS then DATA,
//! and a client that announces no QPACK dynamic table needs only the
//! static one). The alternatives: `quinn` + `h3` + `h3-quinn` are async
//! and would need a tokio runtime inside each loop, and hand out bodies,
//! never frames, so `bytes` could not be counted (HTTP/2's `h2` crate
//! was dropped for the same reason, `h2/protocol.rs`), and so would
//! quiche's own `h3` (it builds BoringSSL with cmake: 4 min 15 s here).
//! Measured before choosing, with throwaway probes outside the repository
//! (1 QUIC connection, a 4 KiB file from Caddy 2.6.2 over loopback, 10,000
//! GETs a round, rounds interleaved, every response's status and size
//! exact; Caddy's access log one line per request): client CPU per
//! request, quinn-proto 0.11 with this module's framing 57.2 and 56.5 µs
//! with 1 stream, 26.7 and 27.3 µs with 10 streams; quiche 0.24 with
//! quiche::h3 72.2 and 69.0 µs, 36.1 and 35.8 µs. h2load 1.52 over
//! HTTP/2 (TLS) against the same Caddy and file: 59 µs (1 stream), 27 µs
//! (10 streams). Debian's h2load is built without ngtcp2: with
//! `--npn-list=h3` every request fails.

pub mod frame;
mod probe;
pub use probe::probe_h3_request;
pub(crate) mod protocol;
pub mod qpack;
