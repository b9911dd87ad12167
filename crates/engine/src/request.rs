//! What a request says beyond its URL: the method, its own headers and a
//! body ([`RequestSpec`], plain data a suite class or `benchlab http -X -H
//! -d` gives), and every URL's HTTP/1 request serialised once before the
//! run ([`Requests`]), so the hot loop writes prepared bytes with one
//! `writev` and allocates nothing, whatever the method or body.

use crate::plan::{ClientPlan, PlanError, UrlPlan};
use serde::{Deserialize, Serialize};

/// A request's method, headers and body. The default is a plain `GET`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestSpec {
    pub method: String,
    /// `Name: value` each, after the client's own headers (a name given
    /// here replaces the client's header of that name).
    #[serde(default)]
    pub headers: Vec<(String, String)>,
    /// The body, sent with `Content-Length` (or chunked); `None`: no body
    /// (`Content-Length: 0` for POST, PUT and PATCH, as RFC 9110 §8.6
    /// asks of a request whose method gives content a meaning).
    #[serde(default, with = "body_text")]
    pub body: Option<Vec<u8>>,
    /// Send the body with `Transfer-Encoding: chunked` (HTTP/1.1; one
    /// chunk) instead of `Content-Length`.
    #[serde(default)]
    pub chunked: bool,
}

impl Default for RequestSpec {
    fn default() -> Self {
        RequestSpec {
            method: "GET".into(),
            headers: Vec::new(),
            body: None,
            chunked: false,
        }
    }
}

/// Bodies on the wire to agents: base64 text, so a binary body survives JSON.
mod body_text {
    use base64::Engine;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(body: &Option<Vec<u8>>, s: S) -> Result<S::Ok, S::Error> {
        match body {
            Some(b) => s.serialize_some(&base64::engine::general_purpose::STANDARD.encode(b)),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<u8>>, D::Error> {
        let text = Option::<String>::deserialize(d)?;
        text.map(|t| {
            base64::engine::general_purpose::STANDARD
                .decode(t)
                .map_err(serde::de::Error::custom)
        })
        .transpose()
    }
}

/// A request body benchlab sends at most (a suite's `body_file`, `-d @FILE`).
pub const MAX_BODY_BYTES: u64 = 64 << 20;

impl RequestSpec {
    /// Whether this is a plain GET with nothing of its own.
    pub fn is_plain_get(&self) -> bool {
        *self == RequestSpec::default()
    }

    /// The value of header `name` (case-insensitive), if given.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Whether the body waits for the server's `100 Continue` (the request
    /// says `Expect: 100-continue` and has a body).
    pub fn expects_continue(&self) -> bool {
        self.body.as_ref().is_some_and(|b| !b.is_empty())
            && self
                .header("expect")
                .is_some_and(|v| v.trim().eq_ignore_ascii_case("100-continue"))
    }

    /// `Content-Length` for this request, or `None` (chunked, or no body
    /// and a method that gives content no meaning).
    pub fn content_length(&self) -> Option<usize> {
        if self.chunked {
            return None;
        }
        match &self.body {
            Some(b) => Some(b.len()),
            None if ["POST", "PUT", "PATCH"].contains(&self.method.as_str()) => Some(0),
            None => None,
        }
    }

    /// The body as it goes on the wire: as is, or as one chunk and the
    /// last chunk (RFC 9112 §7.1).
    pub fn framed_body(&self) -> Vec<u8> {
        let body = self.body.as_deref().unwrap_or_default();
        if !self.chunked {
            return body.to_vec();
        }
        let mut out = Vec::with_capacity(body.len() + 16);
        if !body.is_empty() {
            out.extend_from_slice(format!("{:x}\r\n", body.len()).as_bytes());
            out.extend_from_slice(body);
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"0\r\n\r\n");
        out
    }

    /// Checks the method, the headers and the body; every error names what
    /// was expected.
    pub fn validate(&self) -> Result<(), PlanError> {
        let bad = |s: String| Err(PlanError::Invalid(s));
        // RFC 9110 §9.1: a method is a token.
        if self.method.is_empty() || !self.method.bytes().all(is_tchar) {
            return bad(format!(
                "method `{}`: expected a method name such as GET, POST, PUT or DELETE",
                self.method
            ));
        }
        check_headers(&self.headers)?;
        for framing in ["content-length", "transfer-encoding"] {
            if self.header(framing).is_some() {
                return bad(format!(
                    "header `{framing}`: benchlab frames the body itself (Content-Length from the body, or chunked with --chunked / chunked = true); drop the header"
                ));
            }
        }
        if self.body.as_ref().is_some_and(|b| b.len() as u64 > MAX_BODY_BYTES) {
            return bad(format!("a request body is {MAX_BODY_BYTES} bytes at most"));
        }
        Ok(())
    }
}

fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// Headers are `Name: value` on one line each.
pub(crate) fn check_headers(headers: &[(String, String)]) -> Result<(), PlanError> {
    for (name, value) in headers {
        let ok_name = !name.is_empty() && name.bytes().all(is_tchar);
        if !ok_name || value.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
            return Err(PlanError::Invalid(format!(
                "header `{name}: {value}`: expected `Name: value` on one line"
            )));
        }
    }
    Ok(())
}

/// Index of a request variant in [`Requests`]' tails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Variant {
    /// HTTP/1.1, connection kept.
    Http11 = 0,
    /// HTTP/1.1 with `Connection: close`.
    Http11Close = 1,
    /// HTTP/1.0 with `Connection: keep-alive`.
    Http10KeepAlive = 2,
    /// HTTP/1.0, server closes.
    Http10 = 3,
}

/// Every URL's request, serialised once, in four parts written with one
/// `writev`: the method and a space, the path, one of four tails per
/// origin and request kind (version, `Host`, headers, `Connection`, the
/// body's framing header, the blank line), and the body. Sharing the tails
/// per origin keeps a workload of a million URLs (the c't 1,000,000-page
/// set) at the size of its paths instead of four whole requests per URL.
#[derive(Debug)]
pub(crate) struct Requests {
    /// Per (origin, request kind): tails for HTTP/1.1, 1.1 close, 1.0
    /// keep-alive, 1.0.
    tails: Vec<[Box<[u8]>; 4]>,
    /// Per URL: index of its tails.
    tail: Vec<u32>,
    /// Per request kind (0: plain GET, k: `ClientPlan::requests[k − 1]`):
    /// the method and a space, and the framed body.
    methods: Vec<Box<[u8]>>,
    bodies: Vec<Box<[u8]>>,
    /// Per request kind: the body waits for `100 Continue`.
    continues: Vec<bool>,
}

/// A request's parts: method, path, tail, body.
pub(crate) type Parts<'a> = [&'a [u8]; 4];

impl Requests {
    pub(crate) fn build(plan: &ClientPlan) -> Requests {
        let plain = RequestSpec::default();
        let spec = |k: u32| if k == 0 { &plain } else { &plan.requests[k as usize - 1] };
        let tail = |authority: &str, r: &RequestSpec, version: &str, connection: Option<&str>| -> Box<[u8]> {
            // A request's own header replaces the client's of that name.
            let own = |n: &str| r.header(n).is_some();
            let client: Vec<_> = plan.headers.iter().filter(|(n, _)| !own(n)).collect();
            let given = |n: &str| own(n) || client.iter().any(|(c, _)| c.eq_ignore_ascii_case(n));
            let mut s = format!(" HTTP/{version}\r\n");
            if !given("host") {
                s.push_str(&format!("Host: {authority}\r\n"));
            }
            if !given("user-agent") {
                s.push_str(concat!("User-Agent: benchlab/", env!("CARGO_PKG_VERSION"), "\r\n"));
            }
            for (n, v) in client.into_iter().chain(&r.headers) {
                s.push_str(&format!("{n}: {v}\r\n"));
            }
            if r.chunked {
                s.push_str("Transfer-Encoding: chunked\r\n");
            } else if let Some(n) = r.content_length() {
                s.push_str(&format!("Content-Length: {n}\r\n"));
            }
            if let Some(c) = connection {
                s.push_str(&format!("Connection: {c}\r\n"));
            }
            s.push_str("\r\n");
            s.into_bytes().into_boxed_slice()
        };
        let mut keys: Vec<(&str, u32)> = Vec::new();
        let mut tails = Vec::new();
        let index = plan
            .urls
            .iter()
            .map(|u| {
                let key = (u.target.authority.as_str(), u.request);
                let idx = match keys.iter().position(|x| *x == key) {
                    Some(i) => i,
                    None => {
                        keys.push(key);
                        let (a, r) = (key.0, spec(key.1));
                        tails.push([
                            tail(a, r, "1.1", None),
                            tail(a, r, "1.1", Some("close")),
                            tail(a, r, "1.0", Some("keep-alive")),
                            tail(a, r, "1.0", None),
                        ]);
                        keys.len() - 1
                    }
                };
                idx as u32
            })
            .collect();
        let kinds = (0..=plan.requests.len() as u32).map(spec);
        Requests {
            tails,
            tail: index,
            methods: kinds
                .clone()
                .map(|r| format!("{} ", r.method).into_bytes().into_boxed_slice())
                .collect(),
            bodies: kinds.clone().map(|r| r.framed_body().into_boxed_slice()).collect(),
            continues: kinds.map(RequestSpec::expects_continue).collect(),
        }
    }

    /// The request's four parts: method, path, tail, body.
    #[inline]
    pub(crate) fn parts<'a>(&'a self, urls: &'a [UrlPlan], url: usize, v: Variant) -> Parts<'a> {
        let u = &urls[url];
        let k = u.request as usize;
        [
            &self.methods[k],
            u.target.path.as_bytes(),
            &self.tails[self.tail[url] as usize][v as usize],
            &self.bodies[k],
        ]
    }

    /// Whether URL `url`'s body waits for the server's `100 Continue`.
    #[inline]
    pub(crate) fn expects_continue(&self, urls: &[UrlPlan], url: usize) -> bool {
        self.continues[urls[url].request as usize]
    }
}

/// Total length of request parts.
#[inline]
pub(crate) fn parts_len(parts: &Parts<'_>) -> usize {
    parts.iter().map(|p| p.len()).sum()
}

/// Length of the request's head (all but the body).
#[inline]
pub(crate) fn head_len(parts: &Parts<'_>) -> usize {
    parts[0].len() + parts[1].len() + parts[2].len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{ClassPlan, Expect, Target};

    fn plan(url: &str, requests: Vec<RequestSpec>) -> ClientPlan {
        let t = Target::parse(url).unwrap();
        let urls: Vec<UrlPlan> = (0..=requests.len() as u32)
            .map(|k| UrlPlan {
                target: t.clone(),
                weight: 1.0,
                class: 0,
                expect_status: 200,
                expect: Expect::Status,
                request: k,
            })
            .collect();
        let mut p = ClientPlan::new(urls, vec![ClassPlan { name: "all".into() }]);
        p.requests = requests;
        p
    }

    #[test]
    fn serialises_variants() {
        let mut p = plan("http://127.0.0.1:81/x", vec![]);
        p.headers.push(("X-A".into(), "b".into()));
        let r = Requests::build(&p);
        let get = |v| String::from_utf8(r.parts(&p.urls, 0, v).concat()).unwrap();
        let ua = concat!("User-Agent: benchlab/", env!("CARGO_PKG_VERSION"));
        assert_eq!(
            get(Variant::Http11),
            format!("GET /x HTTP/1.1\r\nHost: 127.0.0.1:81\r\n{ua}\r\nX-A: b\r\n\r\n")
        );
        assert!(get(Variant::Http11Close).ends_with("Connection: close\r\n\r\n"));
        assert!(get(Variant::Http10KeepAlive).ends_with("Connection: keep-alive\r\n\r\n"));
        assert!(get(Variant::Http10).starts_with("GET /x HTTP/1.0\r\n"));
    }

    #[test]
    fn methods_headers_and_bodies_are_framed_exactly() {
        let post = RequestSpec {
            method: "POST".into(),
            headers: vec![
                ("Content-Type".into(), "application/json".into()),
                ("X-A".into(), "own".into()),
            ],
            body: Some(b"{\"a\":1}".to_vec()),
            chunked: false,
        };
        let chunked = RequestSpec {
            method: "PUT".into(),
            body: Some(b"hello".to_vec()),
            chunked: true,
            ..RequestSpec::default()
        };
        let empty_post = RequestSpec {
            method: "POST".into(),
            ..RequestSpec::default()
        };
        let delete = RequestSpec {
            method: "DELETE".into(),
            ..RequestSpec::default()
        };
        let mut p = plan("http://localhost:81/x", vec![post, chunked, empty_post, delete]);
        p.headers.push(("X-A".into(), "client".into()));
        let r = Requests::build(&p);
        let text = |k: usize| String::from_utf8(r.parts(&p.urls, k, Variant::Http11).concat()).unwrap();
        let ua = concat!("User-Agent: benchlab/", env!("CARGO_PKG_VERSION"));
        assert_eq!(
            text(1),
            format!(
                "POST /x HTTP/1.1\r\nHost: localhost:81\r\n{ua}\r\nContent-Type: application/json\r\nX-A: own\r\nContent-Length: 7\r\n\r\n{{\"a\":1}}"
            )
        );
        assert_eq!(
            text(2),
            format!(
                "PUT /x HTTP/1.1\r\nHost: localhost:81\r\n{ua}\r\nX-A: client\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"
            )
        );
        assert!(text(3).starts_with("POST /x HTTP/1.1\r\n") && text(3).ends_with("Content-Length: 0\r\n\r\n"));
        assert!(text(4).starts_with("DELETE /x ") && !text(4).contains("Content-Length"));
        let parts = r.parts(&p.urls, 1, Variant::Http11);
        assert_eq!(parts_len(&parts) - head_len(&parts), 7);
    }

    #[test]
    fn bad_methods_headers_and_framing_are_refused_by_name() {
        let with = |f: fn(&mut RequestSpec)| {
            let mut r = RequestSpec::default();
            f(&mut r);
            r.validate().unwrap_err().to_string()
        };
        assert!(with(|r| r.method = "PO ST".into()).contains("method `PO ST`"));
        assert!(with(|r| r.headers.push(("Content-Length".into(), "3".into()))).contains("content-length"));
        assert!(with(|r| r.headers.push(("X".into(), "a\r\nb".into()))).contains("one line"));
        assert!(RequestSpec::default().validate().is_ok());
    }

    #[test]
    fn a_binary_body_survives_the_wire_to_agents() {
        let r = RequestSpec {
            method: "POST".into(),
            body: Some(vec![0, 159, 146, 150, 255]),
            ..RequestSpec::default()
        };
        let text = serde_json::to_string(&r).unwrap();
        assert_eq!(serde_json::from_str::<RequestSpec>(&text).unwrap(), r);
        let plain: RequestSpec = serde_json::from_str(r#"{"method":"GET"}"#).unwrap();
        assert!(plain.is_plain_get());
    }

    #[test]
    fn expect_continue_needs_a_body() {
        let mut r = RequestSpec {
            method: "POST".into(),
            headers: vec![("Expect".into(), "100-continue".into())],
            body: Some(b"x".to_vec()),
            ..RequestSpec::default()
        };
        assert!(r.expects_continue());
        r.body = None;
        assert!(!r.expects_continue());
    }
}
