//! HTTP/1.0 and 1.1 on the server side: request heads (parsed by `httparse`,
//! which does no allocation and is the parser hyper uses), request targets,
//! the routes of the reference server, and response heads.
//!
//! Only what a static-file and SPICE server needs: GET and HEAD, keep-alive
//! by the rules of RFC 9112 §9.3 (HTTP/1.1 persistent unless
//! `Connection: close`; HTTP/1.0 only with `Connection: keep-alive`),
//! `Content-Length` request bodies skipped, chunked request bodies refused.

use std::borrow::Cow;
use std::mem::MaybeUninit;

/// Most header fields a request may carry (browsers send 10–20).
pub(crate) const MAX_HEADERS: usize = 64;

/// Largest request head accepted; a longer one is answered 431 and closed.
pub(crate) const MAX_HEAD_BYTES: usize = 64 * 1024;

/// Request methods the server tells apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Method {
    Get,
    Head,
    /// Anything else: answered 405.
    Other,
}

/// A parsed request head. It borrows the connection's read buffer.
#[derive(Debug)]
pub(crate) struct Head<'h, 'b> {
    pub(crate) method: Method,
    /// The method as sent, for the access log.
    pub(crate) method_str: &'b str,
    /// The request target as sent (`/a.html?x=1`), for routing and the log.
    pub(crate) target: &'b str,
    /// HTTP/1.`minor`: 0 or 1.
    pub(crate) minor: u8,
    /// Whether the connection stays open after the response.
    pub(crate) keep_alive: bool,
    /// Bytes of request body that follow the head (skipped unread).
    pub(crate) content_length: u64,
    /// A `Transfer-Encoding` was sent: the body length is unknown to us.
    pub(crate) transfer_encoding: bool,
    /// `Host` field lines sent (saturating): RFC 9112 §3.2 wants exactly
    /// one in HTTP/1.1 and at most one in HTTP/1.0 ([`Head::host_error`]).
    pub(crate) hosts: u8,
    /// All header fields, for the ad rotation program's "environment".
    pub(crate) headers: &'h [httparse::Header<'b>],
    /// Length of the head in bytes (request line to the empty line).
    pub(crate) len: usize,
}

impl Head<'_, '_> {
    /// Why the head's `Host` fields make it a bad request (RFC 9112 §3.2: a
    /// server answers 400 to an HTTP/1.1 request without `Host` and to any
    /// request with more than one), or `None` when they are fine.
    pub(crate) fn host_error(&self) -> Option<&'static str> {
        match (self.minor, self.hosts) {
            (_, 2..) => Some("more than one Host header field (RFC 9112 section 3.2)"),
            (1, 0) => Some("an HTTP/1.1 request needs a Host header field (RFC 9112 section 3.2)"),
            _ => None,
        }
    }
}

/// Why a request head was refused; each maps to a status and a reason text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HeadError {
    /// Not HTTP/1.x syntax: 400.
    Malformed,
    /// More than `MAX_HEADERS` fields, or a head over `MAX_HEAD_BYTES`: 431.
    TooLarge,
    /// `Content-Length` unparsable or given twice with different values: 400.
    BadContentLength,
}

impl HeadError {
    pub(crate) fn status(self) -> Status {
        match self {
            HeadError::Malformed | HeadError::BadContentLength => Status::BadRequest,
            HeadError::TooLarge => Status::HeaderTooLarge,
        }
    }
}

/// Parses one request head from the start of `buf`. `Ok(None)`: incomplete,
/// read more.
pub(crate) fn parse_head<'h, 'b>(
    buf: &'b [u8],
    headers: &'h mut [MaybeUninit<httparse::Header<'b>>; MAX_HEADERS],
) -> Result<Option<Head<'h, 'b>>, HeadError> {
    let mut req = httparse::Request::new(&mut []);
    let len = match req.parse_with_uninit_headers(buf, headers) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => {
            return if buf.len() > MAX_HEAD_BYTES {
                Err(HeadError::TooLarge)
            } else {
                Ok(None)
            };
        }
        Err(httparse::Error::TooManyHeaders) => return Err(HeadError::TooLarge),
        Err(_) => return Err(HeadError::Malformed),
    };
    let (Some(method_str), Some(target), Some(minor)) = (req.method, req.path, req.version) else {
        return Err(HeadError::Malformed);
    };
    let method = match method_str {
        "GET" => Method::Get,
        "HEAD" => Method::Head,
        _ => Method::Other,
    };
    let mut close = false;
    let mut keep_alive_token = false;
    let mut content_length: Option<u64> = None;
    let mut transfer_encoding = false;
    let mut hosts = 0u8;
    for h in req.headers.iter() {
        if h.name.eq_ignore_ascii_case("connection") {
            for token in h.value.split(|&c| c == b',') {
                let token = token.trim_ascii();
                close |= token.eq_ignore_ascii_case(b"close");
                keep_alive_token |= token.eq_ignore_ascii_case(b"keep-alive");
            }
        } else if h.name.eq_ignore_ascii_case("content-length") {
            let v = parse_decimal(h.value.trim_ascii()).ok_or(HeadError::BadContentLength)?;
            if content_length.is_some_and(|old| old != v) {
                return Err(HeadError::BadContentLength);
            }
            content_length = Some(v);
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            transfer_encoding = true;
        } else if h.name.eq_ignore_ascii_case("host") {
            hosts = hosts.saturating_add(1);
        }
    }
    let keep_alive = !close && (minor == 1 || keep_alive_token);
    Ok(Some(Head {
        method,
        method_str,
        target,
        minor,
        keep_alive,
        content_length: content_length.unwrap_or(0),
        transfer_encoding,
        hosts,
        headers: req.headers,
        len,
    }))
}

/// A non-empty run of ASCII digits as a u64 (no sign, no overflow).
pub(crate) fn parse_decimal(s: &[u8]) -> Option<u64> {
    if s.is_empty() || s.len() > 19 || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(s.iter().fold(0u64, |n, &d| n * 10 + u64::from(d - b'0')))
}

/// Splits a request target into its path and query. Accepts origin-form
/// (`/a?q`) and absolute-form (`http://host/a?q`, which proxies send).
pub(crate) fn split_target(target: &str) -> Result<(&str, Option<&str>), &'static str> {
    let origin = if target.starts_with('/') {
        target
    } else if let Some(rest) = target
        .strip_prefix("http://")
        .or_else(|| target.strip_prefix("https://"))
    {
        match rest.find('/') {
            Some(i) => &rest[i..],
            None => "/",
        }
    } else {
        return Err("the request target must be a path starting with '/'");
    };
    Ok(match origin.split_once('?') {
        Some((path, query)) => (path, Some(query)),
        None => (origin, None),
    })
}

/// Percent-decodes a path and checks that it stays inside the document root:
/// no `..` segment (also when written `%2e%2e`), no control characters (they
/// would break the tab-separated session log and the access log), valid UTF-8.
/// Borrows when there is nothing to decode, so the usual request allocates
/// nothing.
pub(crate) fn decode_path(path: &str) -> Result<Cow<'_, str>, &'static str> {
    let decoded: Cow<'_, str> = if path.contains('%') {
        let bytes = path.as_bytes();
        let mut out = Vec::with_capacity(bytes.len());
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i] == b'%' {
                let hex = |c: u8| (c as char).to_digit(16);
                match (
                    bytes.get(i + 1).and_then(|&c| hex(c)),
                    bytes.get(i + 2).and_then(|&c| hex(c)),
                ) {
                    (Some(hi), Some(lo)) => out.push((hi * 16 + lo) as u8),
                    _ => return Err("bad percent-escape in the path (expected %XX with two hex digits)"),
                }
                i += 3;
            } else {
                out.push(bytes[i]);
                i += 1;
            }
        }
        Cow::Owned(String::from_utf8(out).map_err(|_| "the percent-decoded path is not UTF-8")?)
    } else {
        Cow::Borrowed(path)
    };
    if decoded.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return Err("control characters in the path");
    }
    if decoded.split('/').any(|seg| seg == "..") {
        return Err("'..' in the path: requests must stay inside the document root");
    }
    Ok(decoded)
}

/// Where a request goes: a static file, or one of the in-process SPICE
/// programs (docs/spice.md, "URL layout"), each naming a file path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Route<'a> {
    Static(&'a str),
    AdRotation(&'a str),
    Session(&'a str),
    /// The slow back end: wait this many milliseconds, then answer.
    Sleep(&'a str, u64),
}

/// The SPI name of this server's in-process SPICE programs.
pub(crate) const SPICE_PREFIX: &str = "/spice/inproc/";

/// Default wait of `/spice/inproc/sleep/…` (c't 1999: "sleep 3 s").
pub(crate) const DEFAULT_SLEEP_MS: u64 = 3000;

/// Longest wait `?ms=` may ask for (10 minutes), so a typo cannot park a
/// connection for days.
pub(crate) const MAX_SLEEP_MS: u64 = 600_000;

/// Maps a decoded path (and the raw query) to a route. The file path of a
/// SPICE URL keeps its leading `/`: `/spice/inproc/adrot/d/a.html` names
/// `/d/a.html`.
pub(crate) fn route<'a>(path: &'a str, query: Option<&str>) -> Result<Route<'a>, &'static str> {
    let Some(rest) = path.strip_prefix(SPICE_PREFIX) else {
        return Ok(Route::Static(path));
    };
    let (program, file) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    match program {
        "adrot" => Ok(Route::AdRotation(file)),
        "session" => Ok(Route::Session(file)),
        "sleep" => Ok(Route::Sleep(file, sleep_ms(query)?)),
        // Not a program of ours: an ordinary path (most likely a 404).
        _ => Ok(Route::Static(path)),
    }
}

/// The `ms=` parameter of a sleep URL, or the default.
fn sleep_ms(query: Option<&str>) -> Result<u64, &'static str> {
    let Some(query) = query else {
        return Ok(DEFAULT_SLEEP_MS);
    };
    match query.split('&').find_map(|kv| kv.strip_prefix("ms=")) {
        None => Ok(DEFAULT_SLEEP_MS),
        Some(v) => match parse_decimal(v.as_bytes()) {
            Some(ms) if ms <= MAX_SLEEP_MS => Ok(ms),
            _ => Err("?ms= must be a whole number of milliseconds from 0 to 600000"),
        },
    }
}

/// Response statuses the server sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Status {
    Ok,
    BadRequest,
    Forbidden,
    NotFound,
    MethodNotAllowed,
    RequestTimeout,
    HeaderTooLarge,
    Internal,
    NotImplemented,
}

impl Status {
    pub(crate) fn code(self) -> u16 {
        match self {
            Status::Ok => 200,
            Status::BadRequest => 400,
            Status::Forbidden => 403,
            Status::NotFound => 404,
            Status::MethodNotAllowed => 405,
            Status::RequestTimeout => 408,
            Status::HeaderTooLarge => 431,
            Status::Internal => 500,
            Status::NotImplemented => 501,
        }
    }

    pub(crate) fn reason(self) -> &'static str {
        match self {
            Status::Ok => "OK",
            Status::BadRequest => "Bad Request",
            Status::Forbidden => "Forbidden",
            Status::NotFound => "Not Found",
            Status::MethodNotAllowed => "Method Not Allowed",
            Status::RequestTimeout => "Request Timeout",
            Status::HeaderTooLarge => "Request Header Fields Too Large",
            Status::Internal => "Internal Server Error",
            Status::NotImplemented => "Not Implemented",
        }
    }

    /// The status line's tail (and, for 405, the `Allow` field it requires).
    fn line(self) -> &'static [u8] {
        match self {
            Status::Ok => b"200 OK\r\n",
            Status::BadRequest => b"400 Bad Request\r\n",
            Status::Forbidden => b"403 Forbidden\r\n",
            Status::NotFound => b"404 Not Found\r\n",
            Status::MethodNotAllowed => b"405 Method Not Allowed\r\nAllow: GET, HEAD\r\n",
            Status::RequestTimeout => b"408 Request Timeout\r\n",
            Status::HeaderTooLarge => b"431 Request Header Fields Too Large\r\n",
            Status::Internal => b"500 Internal Server Error\r\n",
            Status::NotImplemented => b"501 Not Implemented\r\n",
        }
    }
}

/// Appends a response head. `fields` holds the entity's `Content-Type` and
/// `Content-Length` lines (pre-formatted per cached file), `extra` any other
/// whole field lines; the `Connection` field is sent only where the default
/// of the version does not hold.
pub(crate) fn push_head(out: &mut Vec<u8>, minor: u8, status: Status, keep_alive: bool, fields: &[u8], extra: &[u8]) {
    out.extend_from_slice(if minor == 0 { b"HTTP/1.0 " } else { b"HTTP/1.1 " });
    out.extend_from_slice(status.line());
    out.extend_from_slice(b"Server: benchlab\r\nDate: ");
    out.extend_from_slice(&crate::dates::now().http);
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(fields);
    out.extend_from_slice(extra);
    if !keep_alive {
        out.extend_from_slice(b"Connection: close\r\n");
    } else if minor == 0 {
        out.extend_from_slice(b"Connection: keep-alive\r\n");
    }
    out.extend_from_slice(b"\r\n");
}

/// `Content-Type: …\r\nContent-Length: …\r\n` for an entity.
pub(crate) fn entity_fields(content_type: &str, len: u64) -> Vec<u8> {
    format!("Content-Type: {content_type}\r\nContent-Length: {len}\r\n").into_bytes()
}

/// Appends a whole error response with a one-line text body naming the status
/// and, where useful, what was wrong. Returns the body length.
pub(crate) fn push_error(out: &mut Vec<u8>, minor: u8, status: Status, keep_alive: bool, why: &str) -> u64 {
    let body = if why.is_empty() {
        format!("{} {}\n", status.code(), status.reason())
    } else {
        format!("{} {}: {why}\n", status.code(), status.reason())
    };
    push_head(
        out,
        minor,
        status,
        keep_alive,
        &entity_fields("text/plain; charset=utf-8", body.len() as u64),
        b"",
    );
    out.extend_from_slice(body.as_bytes());
    body.len() as u64
}

/// `Content-Type` by file extension; unknown ones are
/// `application/octet-stream`, as nginx's default.
pub(crate) fn content_type(path: &str) -> &'static str {
    let name = path.rsplit('/').next().unwrap_or(path);
    let ext = match name.rsplit_once('.') {
        Some((_, ext)) => ext,
        None => return "application/octet-stream",
    };
    const TYPES: &[(&str, &str)] = &[
        ("html", "text/html"),
        ("htm", "text/html"),
        ("shtml", "text/html"),
        ("css", "text/css"),
        ("js", "application/javascript"),
        ("mjs", "application/javascript"),
        ("json", "application/json"),
        ("txt", "text/plain"),
        ("xml", "text/xml"),
        ("csv", "text/csv"),
        ("gif", "image/gif"),
        ("jpg", "image/jpeg"),
        ("jpeg", "image/jpeg"),
        ("png", "image/png"),
        ("webp", "image/webp"),
        ("svg", "image/svg+xml"),
        ("ico", "image/x-icon"),
        ("pdf", "application/pdf"),
        ("wasm", "application/wasm"),
        ("zip", "application/zip"),
        ("gz", "application/gzip"),
        ("woff", "font/woff"),
        ("woff2", "font/woff2"),
        ("mp4", "video/mp4"),
    ];
    TYPES
        .iter()
        .find(|(e, _)| e.eq_ignore_ascii_case(ext))
        .map_or("application/octet-stream", |&(_, t)| t)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Method, target, minor version, keep-alive, Content-Length, head length.
    type Summary = (Method, String, u8, bool, u64, usize);

    fn parse(raw: &[u8]) -> Result<Option<Summary>, HeadError> {
        let mut hb = [const { MaybeUninit::uninit() }; MAX_HEADERS];
        parse_head(raw, &mut hb).map(|o| {
            o.map(|h| {
                (
                    h.method,
                    h.target.to_string(),
                    h.minor,
                    h.keep_alive,
                    h.content_length,
                    h.len,
                )
            })
        })
    }

    #[test]
    fn keep_alive_rules_of_both_versions() {
        let ka = |raw: &[u8]| parse(raw).unwrap().unwrap().3;
        assert!(ka(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"));
        assert!(!ka(b"GET / HTTP/1.1\r\nConnection: close\r\n\r\n"));
        assert!(!ka(b"GET / HTTP/1.1\r\nConnection: Upgrade, Close\r\n\r\n"));
        assert!(!ka(b"GET / HTTP/1.0\r\n\r\n"));
        assert!(ka(b"GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n"));
        assert!(!ka(b"GET / HTTP/1.0\r\nConnection: keep-alive, close\r\n\r\n"));
    }

    #[test]
    fn host_fields_follow_rfc_9112() {
        let host_error = |raw: &[u8]| {
            let mut hb = [const { MaybeUninit::uninit() }; MAX_HEADERS];
            parse_head(raw, &mut hb).unwrap().unwrap().host_error()
        };
        assert_eq!(host_error(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"), None);
        assert_eq!(host_error(b"GET / HTTP/1.0\r\n\r\n"), None);
        assert_eq!(host_error(b"GET / HTTP/1.0\r\nhost: x\r\n\r\n"), None);
        assert!(host_error(b"GET / HTTP/1.1\r\n\r\n").unwrap().contains("needs a Host"));
        for two in [
            &b"GET / HTTP/1.1\r\nHost: x\r\nHOST: y\r\n\r\n"[..],
            b"GET / HTTP/1.0\r\nHost: x\r\nHost: x\r\n\r\n",
        ] {
            assert!(host_error(two).unwrap().contains("more than one Host"));
        }
    }

    #[test]
    fn partial_complete_and_garbage() {
        assert_eq!(parse(b"GET /a HTTP/1.1\r\nHost: x\r\n").unwrap(), None);
        let (m, t, minor, _, cl, len) = parse(b"HEAD /a?b HTTP/1.0\r\nContent-Length: 3\r\n\r\nxyzGET")
            .unwrap()
            .unwrap();
        assert_eq!((m, t.as_str(), minor, cl, len), (Method::Head, "/a?b", 0, 3, 41));
        assert_eq!(
            parse(b"\x16\x03\x01\x02\x00garbage\r\n\r\n").unwrap_err(),
            HeadError::Malformed
        );
        assert_eq!(parse(b"GET / HTTP/2.0\r\n\r\n").unwrap_err(), HeadError::Malformed);
        assert_eq!(
            parse(b"GET / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n").unwrap_err(),
            HeadError::BadContentLength
        );
        assert_eq!(
            parse(b"GET / HTTP/1.1\r\nContent-Length: -1\r\n\r\n").unwrap_err(),
            HeadError::BadContentLength
        );
        assert_eq!(parse(b"DELETE / HTTP/1.1\r\n\r\n").unwrap().unwrap().0, Method::Other);
    }

    #[test]
    fn oversized_heads_are_too_large() {
        let mut many = b"GET / HTTP/1.1\r\n".to_vec();
        for i in 0..=MAX_HEADERS {
            many.extend_from_slice(format!("X-{i}: y\r\n").as_bytes());
        }
        many.extend_from_slice(b"\r\n");
        assert_eq!(parse(&many).unwrap_err(), HeadError::TooLarge);
        let mut long = b"GET / HTTP/1.1\r\nX: ".to_vec();
        long.resize(MAX_HEAD_BYTES + 1, b'a');
        assert_eq!(parse(&long).unwrap_err(), HeadError::TooLarge);
    }

    #[test]
    fn targets_and_traversal() {
        assert_eq!(split_target("/a.html?x=1&y").unwrap(), ("/a.html", Some("x=1&y")));
        assert_eq!(split_target("http://h:80/d/a?q").unwrap(), ("/d/a", Some("q")));
        assert_eq!(split_target("http://h").unwrap(), ("/", None));
        assert!(split_target("*").is_err());
        assert_eq!(decode_path("/a%20b.html").unwrap(), "/a b.html");
        assert!(matches!(decode_path("/plain").unwrap(), Cow::Borrowed(_)));
        for bad in [
            "/../etc/passwd",
            "/a/../../b",
            "/%2e%2e/x",
            "/%2E%2e",
            "/a/..",
            "/%0a",
            "/%zz",
            "/%c3",
        ] {
            assert!(decode_path(bad).is_err(), "{bad} must be refused");
        }
        // Dots that are not a whole segment are ordinary names.
        assert_eq!(decode_path("/a..b/.x/..y").unwrap(), "/a..b/.x/..y");
    }

    #[test]
    fn spice_routes() {
        assert_eq!(route("/a.html", None).unwrap(), Route::Static("/a.html"));
        assert_eq!(
            route("/spice/inproc/adrot/d/a.html", Some("u=1")).unwrap(),
            Route::AdRotation("/d/a.html")
        );
        assert_eq!(
            route("/spice/inproc/session/a.html", None).unwrap(),
            Route::Session("/a.html")
        );
        assert_eq!(
            route("/spice/inproc/sleep/a.html", None).unwrap(),
            Route::Sleep("/a.html", 3000)
        );
        assert_eq!(
            route("/spice/inproc/sleep/a.html", Some("x=2&ms=300")).unwrap(),
            Route::Sleep("/a.html", 300)
        );
        assert!(route("/spice/inproc/sleep/a.html", Some("ms=abc")).is_err());
        assert!(route("/spice/inproc/sleep/a.html", Some("ms=600001")).is_err());
        assert_eq!(
            route("/spice/cgi-c/adrot/a.html", None).unwrap(),
            Route::Static("/spice/cgi-c/adrot/a.html")
        );
        assert_eq!(route("/spice/inproc/adrot", None).unwrap(), Route::AdRotation("/"));
    }

    #[test]
    fn response_heads() {
        let mut out = Vec::new();
        push_head(
            &mut out,
            0,
            Status::Ok,
            false,
            &entity_fields("text/html", 5),
            b"X-Ad: 7\r\n",
        );
        let s = String::from_utf8(out).unwrap();
        assert!(s.starts_with("HTTP/1.0 200 OK\r\nServer: benchlab\r\nDate: "), "{s}");
        assert!(
            s.ends_with("\r\nContent-Type: text/html\r\nContent-Length: 5\r\nX-Ad: 7\r\nConnection: close\r\n\r\n"),
            "{s}"
        );
        let mut out = Vec::new();
        push_head(&mut out, 1, Status::Ok, true, b"", b"");
        assert!(!String::from_utf8(out).unwrap().contains("Connection"));
        let mut out = Vec::new();
        let n = push_error(&mut out, 1, Status::NotFound, true, "");
        assert!(out.ends_with(b"\r\n\r\n404 Not Found\n"));
        assert_eq!(n, 14);
    }

    #[test]
    fn content_types() {
        assert_eq!(content_type("/d/a.HTML"), "text/html");
        assert_eq!(content_type("/d.x/noext"), "application/octet-stream");
        assert_eq!(content_type("/class0_1"), "application/octet-stream");
        assert_eq!(content_type("/p.png"), "image/png");
    }
}
