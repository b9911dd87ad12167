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
//! was dropped for the same reason, `h2/protocol.rs`); `quiche` is
//! sans-IO too but builds BoringSSL with cmake: on this shared 2-core
//! machine its build was not done within the 10 minutes allowed for it,
//! so it was not measured. Measured before choosing (throwaway probe on
//! quinn-proto 0.11 and this module's framing, 1 QUIC connection, a 4 KiB
//! file from Caddy 2.6.2 over loopback, 10,000 GETs, 2 rounds each, every
//! response's status and size exact and Caddy's access log one line per
//! request): client CPU per request 56.6 and 60.0 µs with 1 stream, 27.3
//! and 28.2 µs with 10 streams; h2load 1.52 over HTTP/2 (TLS) against the
//! same Caddy and file took 59 µs (1 stream) and 27 µs (10 streams).

pub mod frame;
mod probe;
pub use probe::probe_h3_request;
pub(crate) mod protocol;
pub mod qpack;
