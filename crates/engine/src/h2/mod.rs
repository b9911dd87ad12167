//! HTTP/2 (RFC 9113) for `--http 2` and suites' `http = "2"`: framing of
//! benchlab's own inside an event loop like HTTP/1's, so that each stream's
//! frame bytes are counted exactly (docs/counting.md, "HTTP/2").

pub mod conn;
pub mod frame;
pub mod hpack;
mod probe;
pub use probe::{probe_h2, probe_h2_request};
pub(crate) mod protocol;

/// Feeds `data`, as a server's bytes, to a connection that opened three
/// streams (ids 1, 3, 5), in reads of `split` bytes; returns how each stream
/// ended and how the connection failed, if it did. The fuzz target and the
/// corpus replay test check that the read size changes nothing.
pub fn replay(data: &[u8], split: usize) -> (Vec<conn::Ended>, Option<conn::ConnFail>) {
    let mut c = conn::Conn::new(1 << 16);
    let mut ended = Vec::new();
    for user in 0..3 {
        c.open(user, &[0x82], true);
    }
    for piece in data.chunks(split.max(1)) {
        if let Err(f) = c.receive(piece, &mut ended) {
            return (ended, Some(f));
        }
    }
    (ended, None)
}
