//! Checks: what a step's response must be for the flow to go on. A failed
//! check abandons the user's flow; the engine counts it as error kind
//! `check_failed` with the step's name and this module's reason.

use crate::template::{Template, Vars};
use std::fmt::Write;

/// A set of statuses: inclusive ranges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusSet(pub Vec<(u16, u16)>);

impl StatusSet {
    /// What a step without a status check accepts: 2xx and 3xx.
    pub fn default_ok() -> Self {
        StatusSet(vec![(200, 399)])
    }

    pub fn contains(&self, status: u16) -> bool {
        self.0.iter().any(|&(lo, hi)| (lo..=hi).contains(&status))
    }

    /// Parses one item: `200`, `"2xx"`, `"200-299"`.
    pub fn parse_item(text: &str) -> Result<(u16, u16), String> {
        let bad = || {
            format!(
                "`{}` is no status: expected a status (200), a class (\"2xx\") or a range (\"200-299\") within 100-599",
                benchlab_input::excerpt(text)
            )
        };
        let num = |s: &str| s.trim().parse::<u16>().ok().filter(|n| (100..=599).contains(n));
        let t = text.trim();
        let range = if t.len() == 3 && t[1..].eq_ignore_ascii_case("xx") {
            let d = num(&format!("{}00", &t[..1])).ok_or_else(bad)?;
            (d, d + 99)
        } else if let Some((a, b)) = t.split_once('-') {
            (num(a).ok_or_else(bad)?, num(b).ok_or_else(bad)?)
        } else {
            let n = num(t).ok_or_else(bad)?;
            (n, n)
        };
        if range.0 > range.1 {
            return Err(bad());
        }
        Ok(range)
    }
}

impl std::fmt::Display for StatusSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, (lo, hi)) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            if lo == hi {
                write!(f, "{lo}")?;
            } else {
                write!(f, "{lo}-{hi}")?;
            }
        }
        Ok(())
    }
}

/// A check on a header or the body.
#[derive(Debug, Clone)]
pub enum Check {
    /// A header (lower-case name) has this value exactly (one of its
    /// occurrences).
    HeaderEquals { name: Box<str>, value: Box<[u8]> },
    /// A header's value contains this text (one of its occurrences).
    HeaderContains { name: Box<str>, value: Box<[u8]> },
    /// The body (up to the capture bound) contains the rendered text.
    BodyContains(Template),
    /// The JSON value at a pointer has this text (as a capture takes it).
    JsonEquals { pointer: Box<str>, value: Template },
}

impl Check {
    pub fn needs_body(&self) -> bool {
        matches!(self, Check::BodyContains(_) | Check::JsonEquals { .. })
    }

    /// For a header check: does this occurrence satisfy it?
    pub fn header_ok(&self, value: &[u8]) -> bool {
        match self {
            Check::HeaderEquals { value: want, .. } => trim_ows(value) == &want[..],
            Check::HeaderContains { value: want, .. } => contains(value, want),
            _ => false,
        }
    }

    pub fn header_name(&self) -> Option<&str> {
        match self {
            Check::HeaderEquals { name, .. } | Check::HeaderContains { name, .. } => Some(name),
            _ => None,
        }
    }

    /// The reason a header check failed (no occurrence satisfied it).
    pub fn header_reason(&self, seen: Option<&[u8]>) -> String {
        let (name, how, want) = match self {
            Check::HeaderEquals { name, value } => (name, "equal", value),
            Check::HeaderContains { name, value } => (name, "contain", value),
            _ => return String::new(),
        };
        let want = quote(want);
        match seen {
            None => format!("no header {name} (expected one to {how} {want})"),
            Some(v) => format!("header {name} is {}, expected it to {how} {want}", quote(v)),
        }
    }

    /// Runs a body check; `None` when it passes, else the reason.
    /// `scratch` is reused for the expected value.
    pub fn body_check(
        &self,
        body: &[u8],
        json: Option<&serde_json::Value>,
        vars: &Vars,
        scratch: &mut Vec<u8>,
        seen: &mut Vec<u8>,
    ) -> Option<String> {
        scratch.clear();
        match self {
            Check::BodyContains(t) => {
                t.render(vars, scratch);
                (!contains(body, scratch)).then(|| format!("body does not contain {}", quote(scratch)))
            }
            Check::JsonEquals { pointer, value } => {
                value.render(vars, scratch);
                let Some(json) = json else {
                    return Some(format!("body is not JSON (expected {pointer} = {})", quote(scratch)));
                };
                let Some(v) = json.pointer(pointer) else {
                    return Some(format!("JSON has no {pointer} (expected {})", quote(scratch)));
                };
                seen.clear();
                crate::capture::json_text(v, seen);
                (seen[..] != scratch[..])
                    .then(|| format!("JSON {pointer} is {}, expected {}", quote(seen), quote(scratch)))
            }
            _ => None,
        }
    }
}

fn trim_ows(mut v: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = v {
        v = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = v {
        v = rest;
    }
    v
}

/// `needle` occurs in `hay` (an empty needle always does).
pub fn contains(hay: &[u8], needle: &[u8]) -> bool {
    needle.is_empty() || hay.windows(needle.len()).any(|w| w == needle)
}

/// A short quotation of bytes for a reason.
pub fn quote(bytes: &[u8]) -> String {
    let mut s = String::new();
    let _ = write!(s, "\"{}\"", benchlab_input::excerpt(&String::from_utf8_lossy(bytes)));
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::template::{Context, VarTable};

    #[test]
    fn status_items() {
        type Case<'a> = (&'a str, Result<(u16, u16), ()>);
        let cases: &[Case] = &[
            ("200", Ok((200, 200))),
            ("2xx", Ok((200, 299))),
            ("5XX", Ok((500, 599))),
            ("200-204", Ok((200, 204))),
            (" 301 - 302 ", Ok((301, 302))),
            ("204-200", Err(())),
            ("6xx", Err(())),
            ("99", Err(())),
            ("abc", Err(())),
            ("", Err(())),
        ];
        for (text, want) in cases {
            assert_eq!(StatusSet::parse_item(text).map_err(|_| ()), *want, "{text:?}");
        }
        let set = StatusSet(vec![(200, 299), (304, 304)]);
        assert!(set.contains(204) && set.contains(304) && !set.contains(301));
        assert_eq!(set.to_string(), "200-299, 304");
    }

    #[test]
    fn header_checks() {
        let eq = Check::HeaderEquals {
            name: "content-type".into(),
            value: b"application/json".as_slice().into(),
        };
        assert!(eq.header_ok(b" application/json "));
        assert!(!eq.header_ok(b"application/json; charset=utf-8"));
        let has = Check::HeaderContains {
            name: "content-type".into(),
            value: b"json".as_slice().into(),
        };
        assert!(has.header_ok(b"application/json; charset=utf-8"));
        assert_eq!(
            eq.header_reason(Some(b"text/html")),
            "header content-type is \"text/html\", expected it to equal \"application/json\""
        );
        assert_eq!(
            has.header_reason(None),
            "no header content-type (expected one to contain \"json\")"
        );
    }

    #[test]
    fn body_checks() {
        let mut table = VarTable::new();
        let user = table.define("user").unwrap();
        let mut vars = Vars::new(1);
        vars.set(user, b"ann");
        let tpl = |s: &str| {
            let mut t = Template::parse(s, Context::Raw).unwrap();
            t.resolve(&table).unwrap();
            t
        };
        let body = br#"{"user": "ann", "cart": {"n": 2}}"#;
        let json: serde_json::Value = serde_json::from_slice(body).unwrap();
        let cases: Vec<(Check, Option<&str>)> = vec![
            (Check::BodyContains(tpl("\"{{user}}\"")), None),
            (Check::BodyContains(tpl("bob")), Some("body does not contain \"bob\"")),
            (
                Check::JsonEquals {
                    pointer: "/cart/n".into(),
                    value: tpl("2"),
                },
                None,
            ),
            (
                Check::JsonEquals {
                    pointer: "/user".into(),
                    value: tpl("{{user}}"),
                },
                None,
            ),
            (
                Check::JsonEquals {
                    pointer: "/cart/n".into(),
                    value: tpl("3"),
                },
                Some("JSON /cart/n is \"2\", expected \"3\""),
            ),
            (
                Check::JsonEquals {
                    pointer: "/cart/x".into(),
                    value: tpl("3"),
                },
                Some("JSON has no /cart/x (expected \"3\")"),
            ),
        ];
        let (mut scratch, mut seen) = (Vec::new(), Vec::new());
        for (check, want) in &cases {
            let got = check.body_check(body, Some(&json), &vars, &mut scratch, &mut seen);
            assert_eq!(got.as_deref(), *want, "{check:?}");
        }
        let not_json = Check::JsonEquals {
            pointer: "/a".into(),
            value: tpl("1"),
        };
        assert_eq!(
            not_json
                .body_check(b"<html>", None, &vars, &mut scratch, &mut seen)
                .as_deref(),
            Some("body is not JSON (expected /a = \"1\")")
        );
    }
}
