//! Captures: a value from a response into a variable that later steps use.
//! A capture is a spec string, its kind before the first `:`:
//!
//! - `header:NAME` — the first response header of that name (any case);
//! - `cookie:NAME` — the value of the first Set-Cookie of that name in the
//!   response (the cookie jar keeps it too);
//! - `json:POINTER` — an RFC 6901 JSON pointer over the body (`json:/cart/id`;
//!   `~1` for a `/` in a key, `~0` for `~`); a string is captured without
//!   its quotes, a number, boolean or null as its JSON text, an array or
//!   object as compact JSON;
//! - `regex:PATTERN` — the first match of the pattern over the body (Rust
//!   `regex` syntax): its group 1 if it has groups, else the whole match;
//!   `regex[N]:PATTERN` takes group N.
//!
//! Bodies are looked at up to [`MAX_CAPTURE_BODY`] bytes.

use regex::bytes::{Regex, RegexBuilder};
use std::fmt;

/// The most bytes of a body that captures and checks look at: a larger
/// body is cut there (a JSON body then fails to parse, a regex finds no
/// match past it).
pub const MAX_CAPTURE_BODY: usize = 1 << 20;

/// The most bytes a compiled capture or check regex may take.
const REGEX_SIZE_LIMIT: usize = 1 << 20;

/// Where a capture takes its value.
#[derive(Debug, Clone)]
pub enum Source {
    /// A header name, lower case.
    Header(Box<str>),
    /// A cookie name.
    Cookie(Box<[u8]>),
    /// An RFC 6901 pointer.
    Json(Box<str>),
    Regex {
        regex: Regex,
        group: usize,
    },
}

impl Source {
    /// True when the capture reads the body.
    pub fn needs_body(&self) -> bool {
        matches!(self, Source::Json(_) | Source::Regex { .. })
    }
}

/// A capture spec that cannot be used, at a byte offset of the spec.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaptureError {
    pub offset: usize,
    pub message: String,
}

impl fmt::Display for CaptureError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at byte {}: {}", self.offset, self.message)
    }
}

impl std::error::Error for CaptureError {}

fn cerr(offset: usize, message: impl Into<String>) -> CaptureError {
    CaptureError {
        offset,
        message: message.into(),
    }
}

/// A header or cookie name: RFC 9110's token characters.
pub fn is_token(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// Checks an RFC 6901 pointer: empty, or `/`-separated tokens where `~` is
/// followed by `0` or `1`. The error is the offset of the bad byte.
pub fn check_pointer(pointer: &str) -> Result<(), (usize, String)> {
    if !pointer.is_empty() && !pointer.starts_with('/') {
        return Err((0, "a JSON pointer starts with `/` (RFC 6901), e.g. `/cart/id`".into()));
    }
    let b = pointer.as_bytes();
    for (i, &c) in b.iter().enumerate() {
        if c == b'~' && !matches!(b.get(i + 1), Some(b'0' | b'1')) {
            return Err((i, "`~` in a JSON pointer is `~0` (a `~`) or `~1` (a `/`)".into()));
        }
    }
    Ok(())
}

/// Compiles a user's regex with a size bound.
pub fn compile_regex(pattern: &str) -> Result<Regex, String> {
    RegexBuilder::new(pattern)
        .size_limit(REGEX_SIZE_LIMIT)
        .dfa_size_limit(REGEX_SIZE_LIMIT)
        .build()
        .map_err(|e| e.to_string().lines().last().unwrap_or("invalid").trim().to_string())
}

/// Parses a capture spec (`header:X-Token`, `cookie:session`,
/// `json:/cart/id`, `regex:name="csrf" value="([^"]+)"`, `regex[2]:…`).
pub fn parse(spec: &str) -> Result<Source, CaptureError> {
    let Some(colon) = spec.find(':') else {
        return Err(cerr(
            0,
            "expected KIND:WHAT, the kind one of header, cookie, json, regex (e.g. `header:X-Token`)",
        ));
    };
    let (kind, what) = (&spec[..colon], &spec[colon + 1..]);
    let at = colon + 1;
    match kind {
        "header" | "cookie" => {
            if !is_token(what) {
                return Err(cerr(
                    at,
                    format!(
                        "`{}` is no {kind} name: expected letters, digits and !#$%&'*+-.^_`|~",
                        benchlab_input::excerpt(what)
                    ),
                ));
            }
            Ok(if kind == "header" {
                Source::Header(what.to_ascii_lowercase().into())
            } else {
                Source::Cookie(what.as_bytes().into())
            })
        }
        "json" => {
            check_pointer(what).map_err(|(i, m)| cerr(at + i, m))?;
            Ok(Source::Json(what.into()))
        }
        _ if kind == "regex" || (kind.starts_with("regex[") && kind.ends_with(']')) => {
            let group = if kind == "regex" {
                None
            } else {
                Some(
                    kind[6..kind.len() - 1]
                        .parse::<usize>()
                        .map_err(|_| cerr(6, "expected a group number in `regex[N]:`, e.g. `regex[2]:(a)(b)`"))?,
                )
            };
            let regex = compile_regex(what).map_err(|e| cerr(at, format!("invalid regex: {e}")))?;
            let groups = regex.captures_len() - 1;
            let group = match group {
                Some(n) if n > groups => {
                    return Err(cerr(6, format!("group {n}, but the regex has {groups} group(s)")));
                }
                Some(n) => n,
                None => usize::from(groups > 0),
            };
            Ok(Source::Regex { regex, group })
        }
        _ => Err(cerr(
            0,
            format!(
                "unknown capture kind `{}`: expected header, cookie, json or regex",
                benchlab_input::excerpt(kind)
            ),
        )),
    }
}

/// Appends the text of a JSON value as a capture takes it.
pub fn json_text(value: &serde_json::Value, out: &mut Vec<u8>) {
    match value {
        serde_json::Value::String(s) => out.extend_from_slice(s.as_bytes()),
        other => {
            // Writing JSON into a Vec cannot fail.
            let _ = serde_json::to_writer(&mut *out, other);
        }
    }
}

/// The body capture `source` finds, appended to `out`; false when none.
/// `json` is the parsed body where the step has JSON rules.
pub fn from_body(source: &Source, body: &[u8], json: Option<&serde_json::Value>, out: &mut Vec<u8>) -> bool {
    let body = &body[..body.len().min(MAX_CAPTURE_BODY)];
    match source {
        Source::Json(pointer) => match json.and_then(|j| j.pointer(pointer)) {
            Some(v) => {
                json_text(v, out);
                true
            }
            None => false,
        },
        Source::Regex { regex, group } => match regex.captures(body).and_then(|c| c.get(*group)) {
            Some(m) => {
                out.extend_from_slice(m.as_bytes());
                true
            }
            None => false,
        },
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_specs() {
        assert!(matches!(parse("header:X-Token").unwrap(), Source::Header(h) if &*h == "x-token"));
        assert!(matches!(parse("cookie:session").unwrap(), Source::Cookie(c) if &*c == b"session"));
        assert!(matches!(parse("json:/cart/id").unwrap(), Source::Json(p) if &*p == "/cart/id"));
        assert!(matches!(parse("json:").unwrap(), Source::Json(p) if p.is_empty()));
        assert!(matches!(
            parse("regex:name=\"csrf\" value=\"([^\"]+)\"").unwrap(),
            Source::Regex { group: 1, .. }
        ));
        assert!(matches!(
            parse("regex:id=\\d+").unwrap(),
            Source::Regex { group: 0, .. }
        ));
        assert!(matches!(
            parse("regex[2]:(a)(b)").unwrap(),
            Source::Regex { group: 2, .. }
        ));
        assert!(matches!(
            parse("regex[0]:(a)(b)").unwrap(),
            Source::Regex { group: 0, .. }
        ));
    }

    #[test]
    fn errors_name_the_position() {
        let cases: &[(&str, usize, &str)] = &[
            ("X-Token", 0, "expected KIND:WHAT"),
            ("body:x", 0, "unknown capture kind `body`"),
            ("header:", 7, "no header name"),
            ("header:X Token", 7, "no header name"),
            ("cookie:a;b", 7, "no cookie name"),
            ("json:cart", 5, "starts with `/`"),
            ("json:/a~2", 7, "`~0`"),
            ("regex:(", 6, "invalid regex"),
            ("regex[3]:(a)", 6, "has 1 group"),
            ("regex[x]:(a)", 6, "group number"),
            ("regex:a{100000}{100000}", 6, "invalid regex"),
        ];
        for (spec, offset, msg) in cases {
            let e = parse(spec).unwrap_err();
            assert_eq!(e.offset, *offset, "{spec:?}: {e}");
            assert!(e.message.contains(msg), "{spec:?}: {e}");
        }
    }

    #[test]
    fn body_captures() {
        let body = br#"{"cart": {"id": "c-17", "n": 2, "items": [1, 2], "a/b": true, "m~n": null}}"#;
        let json: serde_json::Value = serde_json::from_slice(body).unwrap();
        let cases: &[(&str, Option<&str>)] = &[
            ("json:/cart/id", Some("c-17")),
            ("json:/cart/n", Some("2")),
            ("json:/cart/items", Some("[1,2]")),
            ("json:/cart/items/1", Some("2")),
            ("json:/cart/a~1b", Some("true")),
            ("json:/cart/m~0n", Some("null")),
            ("json:/cart/none", None),
            ("regex:\"id\": \"([^\"]+)\"", Some("c-17")),
            ("regex:\"n\": \\d", Some("\"n\": 2")),
            ("regex[2]:(\\d), (\\d)", Some("2")),
            ("regex:nomatch(x)", None),
        ];
        for (spec, want) in cases {
            let mut out = b"old".to_vec();
            out.clear();
            let found = from_body(&parse(spec).unwrap(), body, Some(&json), &mut out);
            assert_eq!(
                found.then(|| String::from_utf8(out).unwrap()).as_deref(),
                *want,
                "{spec}"
            );
        }
    }

    #[test]
    fn bodies_are_cut_at_the_bound() {
        let mut body = vec![b'x'; MAX_CAPTURE_BODY];
        body.extend_from_slice(b"token=abc");
        let mut out = Vec::new();
        assert!(!from_body(&parse("regex:token=(\\w+)").unwrap(), &body, None, &mut out));
        body.drain(..10);
        assert!(from_body(&parse("regex:token=(\\w+)").unwrap(), &body, None, &mut out));
        assert_eq!(out, b"abc");
    }
}
