//! The properties the fuzz targets check (`fuzz/fuzz_targets/flow_*.rs`),
//! here so the stable-toolchain corpus replay (`tests/fuzz_corpus.rs`)
//! checks the very same ones. Each panics when a property fails.

use crate::capture::{self, Source};
use crate::cookie::{self, CookieJar, MAX_COOKIES};
use crate::template::{Context, Template, VarTable, Vars};

/// The input as a template in each context: parsing never panics; an
/// accepted template resolves against its own names, renders its literal
/// text with empty values, and with values renders exactly the literal
/// bytes plus each value as its context writes it.
pub fn template(input: &[u8]) {
    let Ok(text) = std::str::from_utf8(input) else { return };
    for ctx in [Context::Raw, Context::Url, Context::Header] {
        let Ok(mut t) = Template::parse(text, ctx) else {
            continue;
        };
        let mut table = VarTable::new();
        for (name, offset) in t.variables() {
            assert!(
                text[offset..].starts_with("{{"),
                "variable {name} at {offset} is no `{{{{`"
            );
            table.define(name);
        }
        let names: Vec<String> = t.variables().map(|(n, _)| n.to_string()).collect();
        t.resolve(&table)
            .expect("a template resolves against its own variables");
        let mut out = Vec::new();
        t.render(&Vars::new(table.len()), &mut out);
        assert_eq!(out, t.literal(), "empty values render the literal text");
        let mut vars = Vars::new(table.len());
        for i in 0..table.len() {
            vars.set(i as u16, b"a b\r\n/");
        }
        out.clear();
        t.render(&vars, &mut out);
        let per_value = match ctx {
            Context::Raw => 6,
            Context::Url => 14, // a%20b%0D%0A%2F
            Context::Header => 4,
        };
        assert_eq!(out.len(), t.literal().len() + per_value * names.len(), "{ctx:?}");
        if ctx == Context::Header {
            let crlf = |b: &[u8]| b.iter().filter(|&&c| c == b'\r' || c == b'\n').count();
            assert_eq!(crlf(&out), crlf(t.literal()), "a value adds no CR or LF to a header");
        }
    }
}

/// The input's first line is a capture spec, then response headers
/// (`Name: value` lines) up to an empty line, then the body. Parsing never
/// panics; a capture's value is what it says (a regex's a part of the
/// body); the cookie jar takes every Set-Cookie within its bounds.
pub fn capture(input: &[u8]) {
    let mut parts = input.splitn(2, |&b| b == b'\n');
    let spec = parts.next().unwrap_or(&[]);
    let rest = parts.next().unwrap_or(&[]);
    let (head, body) = match rest.windows(2).position(|w| w == b"\n\n") {
        Some(i) => (&rest[..i], &rest[i + 2..]),
        None => (rest, &[][..]),
    };
    let mut jar = CookieJar::new();
    for line in head.split(|&b| b == b'\n') {
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            continue;
        };
        let (name, value) = (&line[..colon], &line[colon + 1..]);
        if name.eq_ignore_ascii_case(b"set-cookie") {
            let _ = cookie::parse_date(value);
            jar.set(value, "shop.example", b"/a/b", true, 1_700_000_000);
            assert!(jar.len() <= MAX_COOKIES);
        }
    }
    let mut out = Vec::new();
    for https in [false, true] {
        out.clear();
        if jar.write_header("www.shop.example", b"/a/b/c", https, 1_700_000_000, &mut out) {
            assert!(!out.is_empty());
        }
    }
    let Ok(spec) = std::str::from_utf8(spec) else { return };
    let Ok(source) = capture::parse(spec) else { return };
    let json = serde_json::from_slice::<serde_json::Value>(body).ok();
    out.clear();
    let found = capture::from_body(&source, body, json.as_ref(), &mut out);
    match &source {
        Source::Regex { .. } if found => {
            assert!(
                out.is_empty() || body.windows(out.len()).any(|w| w == &out[..]),
                "a regex capture is part of the body"
            )
        }
        Source::Header(_) | Source::Cookie(_) => assert!(!found, "header and cookie captures are not the body's"),
        _ => {}
    }
}
