//! One access-log line, parsed by hand.
//!
//! Common Log Format: `host ident authuser [date] "request" status bytes`;
//! Combined adds `"referer" "agent"`. Only the fields a workload needs are
//! located (method, request target, status, bytes) and they are borrowed from
//! the line: no allocation, no regex, a handful of `memchr` calls per line,
//! which is what lets a plain log parse at hundreds of MB/s on one core.
//!
//! What comes after the size (referer, agent, or the extra fields of the many
//! `LogFormat` variants such as `%D` or a vhost) is not inspected, so those
//! variants parse too. A `vhost:port` prefix before the host is fine as well:
//! the parser skips to the `[date]`.

use memchr::{memchr, memrchr};

/// The fields of one log line that a workload needs, borrowed from the line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry<'a> {
    /// The request method (`GET`, `POST`, …). When the request field has no
    /// space this is the whole field: Apache's `-` for a connection that
    /// sent no request line, or the junk a TLS handshake leaves on a plain
    /// HTTP port. Such lines are well-formed log lines, reported as non-GET.
    pub method: &'a [u8],
    /// The request target as logged: the logger's backslash escapes (`\"`,
    /// `\\`, `\xhh`) are still in it; see [`unescape`]. Empty when the request
    /// field has no space.
    pub target: &'a [u8],
    /// The three-digit status.
    pub status: u16,
    /// Body bytes; `None` for `-` (Apache's `%b` writes `-` for no body).
    pub bytes: Option<u64>,
}

/// Why a line is not a CLF/Combined line. Counted and sampled, never fatal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Malformed {
    /// A blank line.
    Empty,
    /// No `host … [date]` before the request.
    NoDate,
    /// The `[date]` is not followed by ` "`.
    NoRequest,
    /// The request field's quote is never closed by a `"` followed by a
    /// status.
    NoStatus,
    /// The size after the status is neither digits nor `-`.
    BadSize,
    /// A successful `GET` without a URL.
    NoUrl,
    /// The line is longer than the read buffer (1 MiB): skipped unread.
    TooLong,
}

impl Malformed {
    /// A short description for reports.
    pub fn describe(self) -> &'static str {
        match self {
            Malformed::Empty => "blank line",
            Malformed::NoDate => "no `host ... [date]`",
            Malformed::NoRequest => "no quoted request after the date",
            Malformed::NoStatus => "request not closed by a quote and a 3-digit status",
            Malformed::BadSize => "size is neither digits nor '-'",
            Malformed::NoUrl => "GET without a URL",
            Malformed::TooLong => "line longer than 1 MiB",
        }
    }
}

/// Parses one line (without its `\n`; a trailing `\r` is ignored).
pub fn parse_line(line: &[u8]) -> Result<Entry<'_>, Malformed> {
    let line = match line.last() {
        Some(b'\r') => &line[..line.len() - 1],
        _ => line,
    };
    if line.is_empty() {
        return Err(Malformed::Empty);
    }
    // `host ident authuser [`: the host must be there, so `[` cannot be first
    // and must follow a space.
    let open = memchr(b'[', line).ok_or(Malformed::NoDate)?;
    if open < 2 || line[open - 1] != b' ' {
        return Err(Malformed::NoDate);
    }
    let close = memchr(b']', &line[open + 1..]).ok_or(Malformed::NoDate)? + open + 1;
    if line.get(close + 1..close + 3) != Some(b" \"") {
        return Err(Malformed::NoRequest);
    }
    let req_start = close + 3;

    // The request ends at the first quote that is not backslash-escaped and
    // is followed by ` NNN` and a space or the end of the line. Checking the
    // status too makes the parser lenient with loggers that did not escape a
    // quote inside the request (Apache 1.3, some proxies).
    let mut from = req_start;
    let (req_end, status, after_status) = loop {
        let q = memchr(b'"', &line[from..]).ok_or(Malformed::NoStatus)? + from;
        from = q + 1;
        if is_escaped(&line[req_start..q]) {
            continue;
        }
        if let Some(status) = status_at(line, q + 1) {
            break (q, status, q + 5);
        }
    };

    // The size: `-` or digits, up to the next space or the end of the line.
    if line.get(after_status) != Some(&b' ') {
        return Err(Malformed::BadSize);
    }
    let size_start = after_status + 1;
    let size_end = memchr(b' ', &line[size_start..]).map_or(line.len(), |i| i + size_start);
    let bytes = parse_size(&line[size_start..size_end]).ok_or(Malformed::BadSize)?;

    let (method, target) = split_request(&line[req_start..req_end]);
    Ok(Entry {
        method,
        target,
        status,
        bytes,
    })
}

/// True when the quote right after `before` is escaped: preceded by an odd
/// number of backslashes (`\\"` is an escaped backslash, then the quote).
fn is_escaped(before: &[u8]) -> bool {
    before.iter().rev().take_while(|&&b| b == b'\\').count() % 2 == 1
}

/// The status at `line[at..]` if it reads ` NNN` followed by a space or the
/// end of the line.
fn status_at(line: &[u8], at: usize) -> Option<u16> {
    let s = line.get(at..at + 4)?;
    if s[0] != b' ' || !s[1..].iter().all(u8::is_ascii_digit) {
        return None;
    }
    match line.get(at + 4) {
        None | Some(b' ') => {}
        Some(_) => return None,
    }
    Some(s[1..].iter().fold(0u16, |n, &d| n * 10 + u16::from(d - b'0')))
}

/// `-` → `Some(None)`; digits → `Some(Some(n))`; anything else (or an
/// overflowing number) → `None`.
fn parse_size(s: &[u8]) -> Option<Option<u64>> {
    if s == b"-" {
        return Some(None);
    }
    if s.is_empty() || s.len() > 19 {
        return None;
    }
    let mut n = 0u64;
    for &d in s {
        if !d.is_ascii_digit() {
            return None;
        }
        n = n * 10 + u64::from(d - b'0');
    }
    Some(Some(n))
}

/// `METHOD SP TARGET [SP PROTOCOL]`. The protocol is only cut off when the
/// last word starts with `HTTP/`, so HTTP/0.9 requests (`GET /x`) keep their
/// whole target.
fn split_request(req: &[u8]) -> (&[u8], &[u8]) {
    let Some(sp) = memchr(b' ', req) else {
        return (req, &[]);
    };
    let method = &req[..sp];
    let mut target = &req[sp + 1..];
    if let Some(last) = memrchr(b' ', target) {
        if target[last + 1..].starts_with(b"HTTP/") {
            target = &target[..last];
        }
    }
    (method, target)
}

/// Undoes the escapes Apache (`\"`, `\\`, `\n`, `\xhh`, …) and nginx
/// (`\xhh`) write into the request field, so the workload asks for what the
/// client asked for. Unknown escapes are kept as they are. `out` is cleared
/// first; it is a scratch buffer reused across lines.
pub fn unescape(s: &[u8], out: &mut Vec<u8>) {
    out.clear();
    let mut i = 0;
    while i < s.len() {
        let Some(off) = memchr(b'\\', &s[i..]) else {
            out.extend_from_slice(&s[i..]);
            break;
        };
        out.extend_from_slice(&s[i..i + off]);
        i += off;
        let (byte, len) = match s.get(i + 1) {
            Some(b'"') => (b'"', 2),
            Some(b'\\') => (b'\\', 2),
            Some(b'n') => (b'\n', 2),
            Some(b'r') => (b'\r', 2),
            Some(b't') => (b'\t', 2),
            Some(b'b') => (0x08, 2),
            Some(b'v') => (0x0b, 2),
            Some(b'x') => match (s.get(i + 2).and_then(hex), s.get(i + 3).and_then(hex)) {
                (Some(h), Some(l)) => (h << 4 | l, 4),
                _ => (b'\\', 1),
            },
            _ => (b'\\', 1),
        };
        out.push(byte);
        i += len;
    }
}

fn hex(b: &u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(line: &str) -> Entry<'_> {
        match parse_line(line.as_bytes()) {
            Ok(e) => e,
            Err(m) => panic!("{line}: {m:?}"),
        }
    }

    #[test]
    fn common() {
        let e = ok(r#"127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET /apache_pb.gif HTTP/1.0" 200 2326"#);
        assert_eq!(e.method, b"GET");
        assert_eq!(e.target, b"/apache_pb.gif");
        assert_eq!(e.status, 200);
        assert_eq!(e.bytes, Some(2326));
    }

    #[test]
    fn combined_with_crlf() {
        let e = ok(
            "10.1.2.3 - - [10/Oct/2000:13:55:36 -0700] \"GET /a/b.html?x=1&y=2 HTTP/1.1\" 304 - \
             \"http://www.example.com/start.html\" \"Mozilla/4.08 [en] (Win98; I ;Nav)\"\r",
        );
        assert_eq!(e.target, b"/a/b.html?x=1&y=2");
        assert_eq!(e.status, 304);
        assert_eq!(e.bytes, None);
    }

    #[test]
    fn dash_size_is_none() {
        let e = ok(r#"h - - [d] "GET / HTTP/1.1" 200 -"#);
        assert_eq!((e.target, e.status, e.bytes), (&b"/"[..], 200, None));
    }

    #[test]
    fn escaped_quotes_in_request() {
        let e = ok(r#"h - - [d] "GET /q?s=\"a b\" HTTP/1.1" 200 10 "-" "agent \"x\"""#);
        assert_eq!(e.target, br#"/q?s=\"a b\""#);
        assert_eq!(e.bytes, Some(10));
        let mut out = Vec::new();
        unescape(e.target, &mut out);
        assert_eq!(out, br#"/q?s="a b""#);
        // An escaped backslash right before the closing quote.
        let e = ok(r#"h - - [d] "GET /x\\" 200 1"#);
        assert_eq!(e.target, br"/x\\");
        unescape(e.target, &mut out);
        assert_eq!(out, br"/x\");
    }

    #[test]
    fn unescaped_quote_inside_request() {
        let e = ok(r#"h - - [d] "GET /a"b HTTP/1.0" 200 5"#);
        assert_eq!(e.target, br#"/a"b"#);
    }

    #[test]
    fn unescape_hex_and_unknown() {
        let mut out = Vec::new();
        unescape(br"/a\x22b\x0\q\", &mut out);
        assert_eq!(out, br#"/a"b\x0\q\"#);
    }

    #[test]
    fn http09_and_no_request_line() {
        let e = ok(r#"h - - [d] "GET /old.html" 200 7"#);
        assert_eq!(e.target, b"/old.html");
        let e = ok(r#"h - - [d] "-" 408 -"#);
        assert_eq!((e.method, e.target, e.status), (&b"-"[..], &b""[..], 408));
        // A space inside a target that is not followed by a protocol stays.
        let e = ok(r#"h - - [d] "GET /a b" 200 7"#);
        assert_eq!(e.target, b"/a b");
    }

    #[test]
    fn vhost_prefix_and_extra_fields() {
        let e = ok(r#"www.example.com:80 1.2.3.4 - - [d] "POST /form HTTP/1.1" 201 0 "-" "ua" 1234"#);
        assert_eq!((e.method, e.status, e.bytes), (&b"POST"[..], 201, Some(0)));
    }

    #[test]
    fn bad_lines() {
        let cases: [(&str, Malformed); 10] = [
            ("", Malformed::Empty),
            ("\r", Malformed::Empty),
            ("garbage without brackets", Malformed::NoDate),
            (r#"[d] "GET / HTTP/1.0" 200 1"#, Malformed::NoDate),
            (r#"h - - [d "GET / HTTP/1.0" 200 1"#, Malformed::NoDate),
            (r#"h - - [d] GET / HTTP/1.0 200 1"#, Malformed::NoRequest),
            (r#"h - - [d] "GET / HTTP/1.0 200 1"#, Malformed::NoStatus),
            (r#"h - - [d] "GET / HTTP/1.0" 20 1"#, Malformed::NoStatus),
            (r#"h - - [d] "GET / HTTP/1.0" 200"#, Malformed::BadSize),
            (r#"h - - [d] "GET / HTTP/1.0" 200 12k"#, Malformed::BadSize),
        ];
        for (line, want) in cases {
            assert_eq!(parse_line(line.as_bytes()), Err(want), "{line:?}");
        }
        assert_eq!(
            parse_line(br#"h - - [d] "GET / HTTP/1.0" 200 99999999999999999999"#),
            Err(Malformed::BadSize)
        );
    }
}
