//! What a request says beyond its URL: the method, its own headers and a
//! body ([`RequestSpec`], plain data a suite class or `benchlab http -X -H
//! --data` gives). `prepared.rs` serialises them for HTTP/1, `h2/hpack.rs`
//! for HTTP/2.

use serde::{Deserialize, Serialize};

/// A request the plan cannot send, in words: what was given and what was
/// expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct RequestError(pub String);

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

    /// The headers this request goes with: the client's, but those of a
    /// name this request gives itself, then its own (the one rule of the
    /// HTTP/1 requests, the HTTP/2 header blocks and both preflights).
    pub(crate) fn headers_over<'a>(
        &'a self,
        client: &'a [(String, String)],
    ) -> impl Iterator<Item = &'a (String, String)> + Clone {
        client
            .iter()
            .filter(|(n, _)| self.header(n).is_none())
            .chain(&self.headers)
    }

    /// What follows `METHOD PATH` in this request's HTTP/1 head: the
    /// version, `Host` and `User-Agent` unless given, the headers, the
    /// body's framing, `Connection` if any, and the blank line.
    pub(crate) fn http1_tail(
        &self,
        client: &[(String, String)],
        authority: &str,
        version: &str,
        connection: Option<&str>,
    ) -> String {
        let headers = self.headers_over(client);
        let given = |n: &str| headers.clone().any(|(h, _)| h.eq_ignore_ascii_case(n));
        let mut s = format!(" HTTP/{version}\r\n");
        if !given("host") {
            s.push_str(&format!("Host: {authority}\r\n"));
        }
        if !given("user-agent") {
            s.push_str(concat!("User-Agent: benchlab/", env!("CARGO_PKG_VERSION"), "\r\n"));
        }
        for (n, v) in headers.clone() {
            s.push_str(&format!("{n}: {v}\r\n"));
        }
        if self.chunked {
            s.push_str("Transfer-Encoding: chunked\r\n");
        } else if let Some(n) = self.content_length() {
            s.push_str(&format!("Content-Length: {n}\r\n"));
        }
        if let Some(c) = connection {
            s.push_str(&format!("Connection: {c}\r\n"));
        }
        s.push_str("\r\n");
        s
    }

    /// The header fields of this request's HTTP/2 header block (besides
    /// the pseudo-headers): as [`RequestSpec::headers_over`], and
    /// `content-length` when the body has one.
    pub(crate) fn h2_fields(&self, client: &[(String, String)]) -> Vec<(String, String)> {
        let mut fields: Vec<_> = self.headers_over(client).cloned().collect();
        if let Some(n) = self.content_length() {
            fields.push(("content-length".into(), n.to_string()));
        }
        fields
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
    pub fn validate(&self) -> Result<(), RequestError> {
        let bad = |s: String| Err(RequestError(s));
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
pub(crate) fn check_headers(headers: &[(String, String)]) -> Result<(), RequestError> {
    for (name, value) in headers {
        let ok_name = !name.is_empty() && name.bytes().all(is_tchar);
        if !ok_name || value.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
            return Err(RequestError(format!(
                "header `{name}: {value}`: expected `Name: value` on one line"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

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
