//! HPACK (RFC 7541) for benchlab's requests and the servers' responses.
//!
//! Requests are encoded by hand, once per URL before the run: the static
//! table's `:method GET`, `:scheme`, and literals *without indexing* for
//! `:path`, `:authority`, `user-agent` and any `-H` header. Without
//! indexing the encoder keeps no dynamic table, so one byte string per URL
//! serves every stream of every connection and the loop only copies it
//! (nghttp2's dynamic table makes h2load's repeated requests some 20 bytes
//! shorter; at a few hundred bytes of response per request that is noise,
//! and the encoding stays free of per-connection state).
//!
//! Responses are decoded with `httlib-hpack` (Huffman by `httlib-huffman`'s
//! flattened 5-bit tables): decoding needs the dynamic table the server
//! fills, and is no place to save lines. `loona-hpack`, the maintained fork
//! of hpack-rs, was measured first and dropped: it builds a HashMap of the
//! whole Huffman code for every Huffman-coded string (nginx sends two a
//! response, `date` and `content-length`) and looks codes up bit by bit, so
//! 80 % of the client's CPU went there (perf), 126 µs a request against
//! nginx over h2c where HTTP/1 costs benchlab 10 µs.

use crate::plan::Scheme;

/// Appends an HPACK integer with an `n`-bit prefix, the bits above the
/// prefix taken from `first` (RFC 7541 §5.1).
pub fn put_int(out: &mut Vec<u8>, n: u8, first: u8, mut value: usize) {
    let max = (1usize << n) - 1;
    if value < max {
        out.push(first | value as u8);
        return;
    }
    out.push(first | max as u8);
    value -= max;
    while value >= 128 {
        out.push((value % 128) as u8 | 0x80);
        value /= 128;
    }
    out.push(value as u8);
}

/// Appends a string literal, not Huffman-coded.
fn put_str(out: &mut Vec<u8>, s: &[u8]) {
    put_int(out, 7, 0, s.len());
    out.extend_from_slice(s);
}

/// Static table indices (RFC 7541 Appendix A).
const AUTHORITY: usize = 1;
const METHOD: usize = 2;
const PATH: usize = 4;
const USER_AGENT: usize = 58;

/// Headers HTTP/2 forbids (RFC 9113 §8.2.2), and `host`, which becomes
/// `:authority`; HTTP/3 forbids the same (RFC 9114 §4.2).
pub(crate) fn connection_specific(name: &str) -> bool {
    [
        "connection",
        "keep-alive",
        "proxy-connection",
        "transfer-encoding",
        "upgrade",
        "host",
    ]
    .iter()
    .any(|n| name.eq_ignore_ascii_case(n))
}

/// A GET request's header block.
pub fn request_block(scheme: Scheme, authority: &str, path: &str, headers: &[(String, String)]) -> Vec<u8> {
    method_block("GET", scheme, authority, path, headers)
}

/// A request's header block: `method` and the client's `headers` (a
/// request's own headers come last, replacing the client's of the same
/// name: the caller merges them).
pub fn method_block(
    method: &str,
    scheme: Scheme,
    authority: &str,
    path: &str,
    headers: &[(String, String)],
) -> Vec<u8> {
    let mut out = Vec::with_capacity(64 + path.len() + authority.len());
    method_block_into(&mut out, method, scheme, authority, path, headers);
    out
}

/// [`method_block`] into `out` (cleared first): a request's block made as
/// it is sent, into one reused buffer, allocates nothing once the buffer
/// has grown — no block is held per URL (issue 27).
pub fn method_block_into(
    out: &mut Vec<u8>,
    method: &str,
    scheme: Scheme,
    authority: &str,
    path: &str,
    headers: &[(String, String)],
) {
    out.clear();
    match method {
        "GET" => out.push(0x82),  // :method GET (static index 2)
        "POST" => out.push(0x83), // :method POST (static index 3)
        other => {
            put_int(out, 4, 0, METHOD);
            put_str(out, other.as_bytes());
        }
    }
    out.push(match scheme {
        Scheme::Http => 0x86,
        Scheme::Https => 0x87,
    });
    if path == "/" {
        out.push(0x84);
    } else {
        put_int(out, 4, 0, PATH);
        put_str(out, path.as_bytes());
    }
    let host = headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("host"))
        .map_or(authority, |(_, v)| v.as_str());
    put_int(out, 4, 0, AUTHORITY);
    put_str(out, host.as_bytes());
    if !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("user-agent")) {
        put_int(out, 4, 0, USER_AGENT);
        put_str(out, concat!("benchlab/", env!("CARGO_PKG_VERSION")).as_bytes());
    }
    for (n, v) in headers {
        if connection_specific(n) {
            continue;
        }
        out.push(0);
        put_int(out, 7, 0, n.len());
        out.extend(n.bytes().map(|b| b.to_ascii_lowercase()));
        put_str(out, v.as_bytes());
    }
}

/// What a response's header block says that benchlab checks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ResponseHead {
    pub status: Option<u16>,
    pub content_length: Option<u64>,
    /// Decoded size by RFC 9113's measure (name + value + 32 per field).
    pub list_size: usize,
}

/// A connection's response-header decoder, with buffers kept between
/// blocks.
#[derive(Default)]
pub struct Decoder {
    inner: httlib_hpack::Decoder<'static>,
    buf: Vec<u8>,
    fields: Vec<(Vec<u8>, Vec<u8>, u8)>,
}

/// A header block that is not valid HPACK (a COMPRESSION_ERROR: the
/// connection cannot go on).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BadBlock;

/// Reads an HPACK integer with an `n`-bit prefix at `at`; `None` when it
/// runs past the block or beyond 2²⁸ (no header needs more).
fn int_at(block: &[u8], at: &mut usize, n: u8) -> Option<u64> {
    let max = (1u64 << n) - 1;
    let mut value = u64::from(*block.get(*at)?) & max;
    *at += 1;
    if value < max {
        return Some(value);
    }
    for shift in [0, 7, 14, 21] {
        let b = *block.get(*at)?;
        *at += 1;
        value += u64::from(b & 0x7F) << shift;
        if b & 0x80 == 0 {
            return Some(value);
        }
    }
    None
}

/// Skips a string literal at `at`; `None` when it runs past the block.
fn skip_str(block: &[u8], at: &mut usize) -> Option<()> {
    let len = int_at(block, at, 7)? as usize;
    *at = at.checked_add(len).filter(|&end| end <= block.len())?;
    Some(())
}

/// Whether every representation of `block` lies inside it (RFC 7541 §6):
/// the checks httlib-hpack leaves out. It indexes past the end of a block
/// cut inside an integer or a string, and so panicked on inputs the fuzzer
/// found (`fuzz/fuzz_targets/h2_frames.rs`); a server's bytes must never
/// bring benchlab down.
fn well_formed(block: &[u8]) -> bool {
    let mut at = 0;
    while at < block.len() {
        let b = block[at];
        let ok = if b & 0x80 != 0 {
            int_at(block, &mut at, 7).is_some_and(|i| i > 0)
        } else if b & 0x20 != 0 && b & 0x40 == 0 {
            int_at(block, &mut at, 5).is_some()
        } else {
            let prefix = if b & 0x40 != 0 { 6 } else { 4 };
            match int_at(block, &mut at, prefix) {
                Some(0) => skip_str(block, &mut at)
                    .and_then(|()| skip_str(block, &mut at))
                    .is_some(),
                Some(_) => skip_str(block, &mut at).is_some(),
                None => false,
            }
        };
        if !ok {
            return false;
        }
    }
    true
}

/// Decodes a header block with the connection's decoder.
pub fn decode(decoder: &mut Decoder, block: &[u8]) -> Result<ResponseHead, BadBlock> {
    if !well_formed(block) {
        return Err(BadBlock);
    }
    let mut head = ResponseHead::default();
    let mut bad = false;
    decoder.buf.clear();
    decoder.buf.extend_from_slice(block);
    decoder.fields.clear();
    decoder
        .inner
        .decode(&mut decoder.buf, &mut decoder.fields)
        .map_err(|_| BadBlock)?;
    for (name, value, _) in &decoder.fields {
        head.list_size += name.len() + value.len() + 32;
        if &name[..] == b":status" {
            head.status = std::str::from_utf8(value).ok().and_then(|s| s.parse().ok());
            bad |= head.status.is_none();
        } else if &name[..] == b"content-length" {
            head.content_length = std::str::from_utf8(value).ok().and_then(|s| s.parse().ok());
            bad |= head.content_length.is_none();
        }
    }
    if bad {
        // A status or length that is not a number: the response is
        // malformed, which the caller counts as framing.
        head.status = head.status.or(Some(0));
    }
    Ok(head)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_follow_rfc_7541_examples() {
        let mut v = Vec::new();
        put_int(&mut v, 5, 0, 10);
        assert_eq!(v, [10]);
        v.clear();
        put_int(&mut v, 5, 0, 1337);
        assert_eq!(v, [31, 154, 10]);
        v.clear();
        put_int(&mut v, 8, 0, 42);
        assert_eq!(v, [42]);
    }

    #[test]
    fn a_decoder_reads_back_the_request() {
        let headers = vec![
            ("X-Test".to_string(), "a b".to_string()),
            ("Connection".to_string(), "close".to_string()),
        ];
        let long_path = format!("/{}", "p".repeat(300));
        for path in ["/", "/index.html?x=1", long_path.as_str()] {
            let block = request_block(Scheme::Https, "example.org:8443", path, &headers);
            let mut fields = Vec::new();
            httlib_hpack::Decoder::default()
                .decode(&mut block.clone(), &mut fields)
                .unwrap();
            let got: Vec<(String, String)> = fields
                .into_iter()
                .map(|(n, v, _)| (String::from_utf8(n).unwrap(), String::from_utf8(v).unwrap()))
                .collect();
            let ua = concat!("benchlab/", env!("CARGO_PKG_VERSION"));
            assert_eq!(
                got,
                [
                    (":method", "GET"),
                    (":scheme", "https"),
                    (":path", path),
                    (":authority", "example.org:8443"),
                    ("user-agent", ua),
                    ("x-test", "a b"),
                ]
                .map(|(a, b)| (a.to_string(), b.to_string()))
            );
        }
    }

    #[test]
    fn decodes_huffman_coded_responses() {
        // RFC 7541 C.6.1: a response with Huffman-coded literals.
        let block: Vec<u8> = [
            "488264025885aec3771a4b6196d07abe941054d444a8200595040b8166e082a62d1bff6e919d29ad171863c78f0b97c8e9ae82ae43d3",
        ]
        .concat()
        .as_bytes()
        .chunks(2)
        .map(|h| u8::from_str_radix(std::str::from_utf8(h).unwrap(), 16).unwrap())
        .collect();
        let mut d = Decoder::default();
        // Cut anywhere, the block is refused, never a panic.
        for cut in 1..block.len() {
            let _ = decode(&mut Decoder::default(), &block[..cut]);
        }
        assert!(decode(&mut d, &[0x40, 0x05, b'a']).is_err(), "a name cut short");
        assert!(decode(&mut d, &[0x1F]).is_err(), "an integer cut short");
        assert!(decode(&mut d, &[0x80]).is_err(), "index 0");
        let head = decode(&mut d, &block).unwrap();
        assert_eq!(head.status, Some(302));
        assert_eq!(head.content_length, None);
        assert!(decode(&mut d, &[0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]).is_err());
    }
}
