//! QPACK (RFC 9204) for benchlab's requests and the servers' responses,
//! static table only: benchlab announces SETTINGS_QPACK_MAX_TABLE_CAPACITY
//! 0 (the default), so a server may not insert into a dynamic table, and a
//! field section that refers to one is the server's error.
//!
//! Requests are encoded once per URL before the run, as HTTP/2's HPACK
//! blocks are (`h2/hpack.rs`): the static table's `:method`, `:scheme` and
//! `:path /`, literals with a static name reference for `:path`,
//! `:authority` and `user-agent`, literal names for the rest; never
//! Huffman-coded. Responses are decoded only as far as the check needs:
//! `:status` (a static entry, or a literal value, Huffman-coded or not);
//! every other field is skipped by its length.

use crate::h2::hpack::put_int;
use crate::plan::Scheme;

/// Static table indices (RFC 9204 Appendix A).
const AUTHORITY: usize = 0;
const PATH_ROOT: usize = 1;
const METHOD_CONNECT: usize = 15;
const METHOD_GET: usize = 17;
const METHOD_POST: usize = 20;
const SCHEME_HTTP: usize = 22;
const SCHEME_HTTPS: usize = 23;
const USER_AGENT: usize = 95;

/// The static entries named `:status`, with their values.
fn static_status(index: u64) -> Option<Option<u16>> {
    let s = match index {
        24 => 103,
        25 => 200,
        26 => 304,
        27 => 404,
        28 => 503,
        63 => 100,
        64 => 204,
        65 => 206,
        66 => 302,
        67 => 400,
        68 => 403,
        69 => 421,
        70 => 425,
        71 => 500,
        _ => return None,
    };
    Some(Some(s))
}

fn put_str(out: &mut Vec<u8>, n: u8, first: u8, s: &[u8]) {
    put_int(out, n, first, s.len());
    out.extend_from_slice(s);
}

/// A literal with a static name reference, its value not Huffman-coded.
fn put_named(out: &mut Vec<u8>, index: usize, value: &[u8]) {
    put_int(out, 4, 0x50, index);
    put_str(out, 7, 0, value);
}

/// A request's encoded field section (the HEADERS frame's payload):
/// `method` and the client's `headers` (merged by the caller as for HTTP/2).
pub fn request_section(
    method: &str,
    scheme: Scheme,
    authority: &str,
    path: &str,
    headers: &[(String, String)],
) -> Vec<u8> {
    let mut out = Vec::with_capacity(64 + path.len() + authority.len());
    // Required Insert Count 0, Delta Base 0: no dynamic table.
    out.extend_from_slice(&[0, 0]);
    let indexed = |out: &mut Vec<u8>, i: usize| put_int(out, 6, 0xC0, i);
    match method {
        "GET" => indexed(&mut out, METHOD_GET),
        "POST" => indexed(&mut out, METHOD_POST),
        other => put_named(&mut out, METHOD_CONNECT, other.as_bytes()),
    }
    indexed(
        &mut out,
        match scheme {
            Scheme::Http => SCHEME_HTTP,
            Scheme::Https => SCHEME_HTTPS,
        },
    );
    if path == "/" {
        indexed(&mut out, PATH_ROOT);
    } else {
        put_named(&mut out, PATH_ROOT, path.as_bytes());
    }
    let host = headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("host"))
        .map_or(authority, |(_, v)| v.as_str());
    put_named(&mut out, AUTHORITY, host.as_bytes());
    if !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("user-agent")) {
        put_named(
            &mut out,
            USER_AGENT,
            concat!("benchlab/", env!("CARGO_PKG_VERSION")).as_bytes(),
        );
    }
    for (n, v) in headers {
        // The same headers HTTP/3 forbids (RFC 9114 §4.2).
        if crate::h2::hpack::connection_specific(n) {
            continue;
        }
        put_str(&mut out, 3, 0x20, n.to_ascii_lowercase().as_bytes());
        put_str(&mut out, 7, 0, v.as_bytes());
    }
    out
}

/// Why a response's field section could not be decoded (the stream fails
/// as `framing`: RFC 9204's QPACK_DECOMPRESSION_FAILED).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BadSection;

/// Reads a prefixed integer (RFC 9204 §4.1.1, as HPACK's) at `*at`.
fn int(block: &[u8], at: &mut usize, n: u8) -> Result<u64, BadSection> {
    let first = *block.get(*at).ok_or(BadSection)?;
    *at += 1;
    let max = (1u64 << n) - 1;
    let mut v = u64::from(first) & max;
    if v < max {
        return Ok(v);
    }
    let mut shift = 0;
    loop {
        let b = *block.get(*at).ok_or(BadSection)?;
        *at += 1;
        // Past 2^62 no length or index in a bounded block means anything.
        if shift > 56 {
            return Err(BadSection);
        }
        v += u64::from(b & 0x7f) << shift;
        shift += 7;
        if b & 0x80 == 0 {
            return Ok(v);
        }
    }
}

/// A string literal whose length has an `n`-bit prefix and whose Huffman
/// flag is the bit above it; returns its bytes (decoded if Huffman-coded
/// and `want`, else empty).
fn string(block: &[u8], at: &mut usize, n: u8, want: bool, out: &mut Vec<u8>) -> Result<(), BadSection> {
    let huffman = block.get(*at).ok_or(BadSection)? & (1 << n) != 0;
    let len = int(block, at, n)? as usize;
    let end = at.checked_add(len).filter(|&e| e <= block.len()).ok_or(BadSection)?;
    let raw = &block[*at..end];
    *at = end;
    out.clear();
    if want {
        if huffman {
            httlib_huffman::decode(raw, out, httlib_huffman::DecoderSpeed::FiveBits).map_err(|_| BadSection)?;
        } else {
            out.extend_from_slice(raw);
        }
    }
    Ok(())
}

fn parse_status(v: &[u8]) -> Result<u16, BadSection> {
    if v.len() != 3 || !v.iter().all(u8::is_ascii_digit) {
        return Err(BadSection);
    }
    Ok(v.iter().fold(0u16, |a, &d| a * 10 + u16::from(d - b'0')))
}

/// The `:status` of a response's field section (`None`: it has none,
/// which the caller counts as framing); `scratch` holds decoded strings.
pub fn decode_status(block: &[u8], scratch: &mut Vec<u8>) -> Result<Option<u16>, BadSection> {
    let mut at = 0;
    // Required Insert Count: with no dynamic table allowed, only 0.
    if int(block, &mut at, 8)? != 0 {
        return Err(BadSection);
    }
    int(block, &mut at, 7)?;
    let mut status = None;
    while at < block.len() {
        let b = block[at];
        if b & 0x80 != 0 {
            // Indexed field line; T (0x40) must say static.
            if b & 0x40 == 0 {
                return Err(BadSection);
            }
            let i = int(block, &mut at, 6)?;
            if i > 98 {
                return Err(BadSection);
            }
            if let Some(s) = static_status(i) {
                status = s;
            }
        } else if b & 0x40 != 0 {
            // Literal with name reference; T (0x10) must say static.
            if b & 0x10 == 0 {
                return Err(BadSection);
            }
            let i = int(block, &mut at, 4)?;
            if i > 98 {
                return Err(BadSection);
            }
            let is_status = static_status(i).is_some();
            string(block, &mut at, 7, is_status, scratch)?;
            if is_status {
                status = Some(parse_status(scratch)?);
            }
        } else if b & 0x20 != 0 {
            // Literal with literal name.
            string(block, &mut at, 3, true, scratch)?;
            let is_status = scratch.as_slice() == b":status";
            string(block, &mut at, 7, is_status, scratch)?;
            if is_status {
                status = Some(parse_status(scratch)?);
            }
        } else {
            // Post-base references: the dynamic table, which there is none of.
            return Err(BadSection);
        }
    }
    Ok(status)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_from_the_static_table_and_literals() {
        let mut s = Vec::new();
        // Indexed :status 200, then a literal date by name reference 6.
        assert_eq!(decode_status(&[0, 0, 0xC0 | 25, 0x56, 1, b'x'], &mut s), Ok(Some(200)));
        // :status by name reference 24 with the literal value "301".
        assert_eq!(
            decode_status(&[0, 0, 0x5F, 9, 3, b'3', b'0', b'1'], &mut s),
            Ok(Some(301))
        );
        // A literal name ":status".
        let mut b = vec![0, 0, 0x27, 0];
        b.extend_from_slice(b":status");
        b.extend_from_slice(&[3, b'4', b'2', b'9']);
        assert_eq!(decode_status(&b, &mut s), Ok(Some(429)));
        // Huffman-coded "404" (RFC 7541's code: '4' = 011010, '0' = 00000).
        assert_eq!(
            decode_status(&[0, 0, 0x5F, 9, 0x83, 0x68, 0x0D, 0x7F], &mut s),
            Ok(Some(404))
        );
        assert_eq!(decode_status(&[0, 0, 0x56, 1, b'x'], &mut s), Ok(None));
    }

    #[test]
    fn dynamic_references_and_cut_sections_are_refused() {
        let mut s = Vec::new();
        assert_eq!(decode_status(&[1, 0, 0xC0 | 25], &mut s), Err(BadSection));
        assert_eq!(decode_status(&[0, 0, 0x80], &mut s), Err(BadSection));
        assert_eq!(decode_status(&[0, 0, 0x10], &mut s), Err(BadSection));
        assert_eq!(decode_status(&[0, 0, 0x5F, 9, 3, b'3'], &mut s), Err(BadSection));
        assert_eq!(
            decode_status(
                &[0, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF],
                &mut s
            ),
            Err(BadSection)
        );
        assert_eq!(decode_status(&[0], &mut s), Err(BadSection));
    }

    #[test]
    fn requests_encode_the_static_entries() {
        let b = request_section("GET", Scheme::Https, "a:1", "/", &[("user-agent".into(), "u".into())]);
        assert_eq!(&b[..5], &[0, 0, 0xC0 | 17, 0xC0 | 23, 0xC0 | 1]);
        assert_eq!(&b[5..10], &[0x50, 3, b'a', b':', b'1']);
        // user-agent the client's own: a literal name.
        assert_eq!(
            &b[10..],
            &[0x27, 3, b'u', b's', b'e', b'r', b'-', b'a', b'g', b'e', b'n', b't', 1, b'u']
        );
    }
}
