//! HTTP/2 (RFC 9113) for `--http 2` and suites' `http = "2"`: framing of
//! benchlab's own inside an event loop like HTTP/1's, so that each stream's
//! frame bytes are counted exactly (docs/counting.md, "HTTP/2").

pub mod conn;
pub mod frame;
pub mod hpack;
mod probe;
pub use probe::probe_h2;
pub(crate) mod worker;
