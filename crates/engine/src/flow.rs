//! A virtual user walking a flow over HTTP/1 (docs/flows.md): the
//! engine's side of `benchlab_flow::FlowUser`. The user renders each
//! step's request into buffers kept from request to request; the response
//! bytes are kept (the head, and the body only for a step whose captures
//! or checks read it, both bounded) and judged once the engine's parser
//! says the response is complete. Nothing here allocates in steady state:
//! every buffer is cleared, not dropped.

use crate::prepared::Variant;
use benchlab_flow::{Flow, FlowUser, Origin, RequestBuf, MAX_CAPTURE_BODY};
use std::sync::Arc;
use std::time::Duration;

/// The most bytes of a response head a flow looks at; headers past it
/// are not seen (a capture or check of one fails).
pub(crate) const MAX_HEAD: usize = 64 << 10;

/// One user's flow state.
pub(crate) struct FlowVu {
    user: FlowUser,
    req: RequestBuf,
    /// The current request's head, for the connection's variant.
    head: Vec<u8>,
    /// The response as received, up to `keep` bytes.
    resp: Vec<u8>,
    keep: usize,
    /// The body without chunk framing, when the response was chunked.
    dechunked: Vec<u8>,
    /// The current step.
    pub step: usize,
    /// The pause after the last passed step.
    pub think: Duration,
    /// Completed and abandoned flows already counted.
    counted: (u64, u64),
}

impl FlowVu {
    /// User number `user` of the run (a feeder's `index` mode uses it).
    pub(crate) fn new(flow: Arc<Flow>, user: u64, seed: u64, authority: &str, https: bool) -> FlowVu {
        FlowVu {
            user: FlowUser::new(flow, user, seed, Origin::new(authority, https)),
            req: RequestBuf::new(),
            head: Vec::new(),
            resp: Vec::new(),
            keep: MAX_HEAD,
            dechunked: Vec::new(),
            step: 0,
            think: Duration::ZERO,
            counted: (0, 0),
        }
    }

    /// Renders the user's next request; its step, or `None` when the user
    /// is done (a feeder with `on_end = "stop"` ran out).
    pub(crate) fn next(&mut self) -> Option<usize> {
        let step = self.user.next_request(&mut self.req)?;
        self.step = step.index;
        self.keep = if step.step.needs_body {
            MAX_HEAD + MAX_CAPTURE_BODY
        } else {
            MAX_HEAD
        };
        self.resp.clear();
        Some(step.index)
    }

    /// Writes the request head for `variant`: request line, `Host` and
    /// `User-Agent` unless the step gives them, the client's headers a step
    /// does not override, the step's, the body's length, `Connection`.
    pub(crate) fn render_head(&mut self, client: &[(String, String)], authority: &str, variant: Variant) {
        let h = &mut self.head;
        h.clear();
        h.extend_from_slice(self.req.method());
        h.push(b' ');
        h.extend_from_slice(self.req.target());
        h.extend_from_slice(match variant {
            Variant::Http11 | Variant::Http11Close => b" HTTP/1.1\r\n",
            Variant::Http10KeepAlive | Variant::Http10 => b" HTTP/1.0\r\n",
        });
        let given = |name: &str| self.req.headers().any(|(n, _)| n.eq_ignore_ascii_case(name.as_bytes()));
        if !given("host") {
            h.extend_from_slice(b"Host: ");
            h.extend_from_slice(authority.as_bytes());
            h.extend_from_slice(b"\r\n");
        }
        if !given("user-agent") {
            h.extend_from_slice(concat!("User-Agent: benchlab/", env!("CARGO_PKG_VERSION"), "\r\n").as_bytes());
        }
        for (n, v) in client {
            if !given(n) {
                for part in [n.as_bytes(), b": ", v.as_bytes(), b"\r\n"] {
                    h.extend_from_slice(part);
                }
            }
        }
        for (n, v) in self.req.headers() {
            for part in [n, b": ", v, b"\r\n"] {
                h.extend_from_slice(part);
            }
        }
        if let Some(body) = self.req.body() {
            h.extend_from_slice(b"Content-Length: ");
            let mut digits = [0u8; 20];
            let mut at = digits.len();
            let mut n = body.len();
            loop {
                at -= 1;
                digits[at] = b'0' + (n % 10) as u8;
                n /= 10;
                if n == 0 {
                    break;
                }
            }
            h.extend_from_slice(&digits[at..]);
            h.extend_from_slice(b"\r\n");
        }
        match variant {
            Variant::Http11 | Variant::Http10 => {}
            Variant::Http11Close => h.extend_from_slice(b"Connection: close\r\n"),
            Variant::Http10KeepAlive => h.extend_from_slice(b"Connection: keep-alive\r\n"),
        }
        h.extend_from_slice(b"\r\n");
    }

    /// The request's parts for the one `writev`: head, body.
    pub(crate) fn parts(&self) -> [&[u8]; 4] {
        [&self.head, &[], &[], self.req.body().unwrap_or_default()]
    }

    /// Keeps response bytes, up to the step's bound.
    #[inline]
    pub(crate) fn keep(&mut self, data: &[u8]) {
        let room = self.keep.saturating_sub(self.resp.len()).min(data.len());
        self.resp.extend_from_slice(&data[..room]);
    }

    /// The kept response judged by the step's checks and captures:
    /// `Ok(())`, or the failure's reason (the flow is then abandoned and
    /// the user starts over).
    pub(crate) fn judge(&mut self, status: u16) -> Result<(), String> {
        let resp = &self.resp[..];
        let Some(end) = memchr::memmem::find(resp, b"\r\n\r\n") else {
            // The head was over MAX_HEAD: judged without its headers.
            let outcome = self.user.on_response(status, std::iter::empty(), &[]);
            return outcome_result(outcome, &mut self.think);
        };
        let head = &resp[..end + 2];
        let body_raw = &resp[end + 4..];
        let headers = || {
            head.split(|&b| b == b'\n').skip(1).filter_map(|line| {
                let line = line.strip_suffix(b"\r").unwrap_or(line);
                let colon = memchr::memchr(b':', line)?;
                Some((&line[..colon], trim(&line[colon + 1..])))
            })
        };
        let chunked = headers()
            .any(|(n, v)| n.eq_ignore_ascii_case(b"transfer-encoding") && v.to_ascii_lowercase().ends_with(b"chunked"));
        let body = if chunked {
            dechunk(body_raw, &mut self.dechunked);
            &self.dechunked[..]
        } else {
            body_raw
        };
        let outcome = self.user.on_response(status, headers(), body);
        outcome_result(outcome, &mut self.think)
    }

    /// A transport error ended the step: the flow is abandoned (counted
    /// by the flow) and the user starts over.
    pub(crate) fn abandon(&mut self) {
        self.user.abandon();
        self.think = Duration::ZERO;
    }

    /// Flows walked to the end, and abandoned, by this user.
    pub(crate) fn tally(&self) -> (u64, u64) {
        (self.user.completed(), self.user.abandoned())
    }

    /// Flows completed and abandoned since the last call.
    pub(crate) fn uncounted(&mut self) -> (u64, u64) {
        let now = self.tally();
        let new = (now.0 - self.counted.0, now.1 - self.counted.1);
        self.counted = now;
        new
    }
}

fn outcome_result(outcome: benchlab_flow::StepOutcome, think: &mut Duration) -> Result<(), String> {
    match outcome {
        benchlab_flow::StepOutcome::Passed { think: t, .. } => {
            *think = t;
            Ok(())
        }
        benchlab_flow::StepOutcome::Failed { reason, .. } => {
            *think = Duration::ZERO;
            Err(reason)
        }
        benchlab_flow::StepOutcome::NoRequest => Err("a response with no request outstanding".into()),
    }
}

fn trim(v: &[u8]) -> &[u8] {
    let start = v.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(v.len());
    let end = v
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(start, |e| e + 1);
    &v[start..end.max(start)]
}

/// The data of a chunked body (as far as it was kept) into `out`.
fn dechunk(mut raw: &[u8], out: &mut Vec<u8>) {
    out.clear();
    loop {
        let Some(eol) = memchr::memmem::find(raw, b"\r\n") else {
            return;
        };
        let size_text = raw[..eol].split(|&b| b == b';').next().unwrap_or_default();
        let Some(size) = std::str::from_utf8(size_text)
            .ok()
            .and_then(|t| usize::from_str_radix(t.trim(), 16).ok())
        else {
            return;
        };
        raw = &raw[eol + 2..];
        if size == 0 {
            return;
        }
        let take = size.min(raw.len());
        out.extend_from_slice(&raw[..take]);
        if take < size || raw.len() < size + 2 {
            return;
        }
        raw = &raw[size + 2..];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dechunks_what_was_kept() {
        let mut out = Vec::new();
        dechunk(b"5\r\nhello\r\n6;x=1\r\n world\r\n0\r\n\r\n", &mut out);
        assert_eq!(out, b"hello world");
        dechunk(b"5\r\nhel", &mut out);
        assert_eq!(out, b"hel");
    }

    fn user(toml: &str) -> FlowVu {
        let spec = benchlab_flow::FlowSpec::from_toml(toml).unwrap();
        let flow = spec.compile(std::path::Path::new(".")).unwrap();
        FlowVu::new(Arc::new(flow), 0, 1, "127.0.0.1:8080", false)
    }

    #[test]
    fn heads_carry_the_steps_headers_over_the_clients_and_the_body_length() {
        let mut u = user(
            r#"
[[steps]]
name = "login"
method = "post"
url = "/login"
headers = { "X-A" = "step" }
body = "user=a"
"#,
        );
        assert_eq!(u.next(), Some(0));
        let client = vec![("X-A".to_string(), "client".to_string()), ("X-B".into(), "b".into())];
        u.render_head(&client, "127.0.0.1:8080", Variant::Http11Close);
        let ua = concat!("User-Agent: benchlab/", env!("CARGO_PKG_VERSION"));
        let text = String::from_utf8(u.parts().concat()).unwrap();
        assert_eq!(
            text,
            format!(
                "POST /login HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n{ua}\r\nX-B: b\r\nX-A: step\r\nContent-Length: 6\r\nConnection: close\r\n\r\nuser=a"
            )
        );
    }

    #[test]
    fn judges_headers_and_a_chunked_json_body() {
        let mut u = user(
            r#"
[[steps]]
name = "a"
url = "/a"
capture = { id = "json:/id", tok = "header:X-Token" }
check = { status = 200 }
[[steps]]
name = "b"
url = "/b/{{id}}"
headers = { "X-T" = "{{tok}}" }
"#,
        );
        u.next();
        u.keep(b"HTTP/1.1 200 OK\r\nX-Token: t1\r\nSet-Cookie: s=1; Path=/\r\nTransfer-Encoding: chunked\r\n\r\n");
        u.keep(b"8\r\n{\"id\":42\r\n1\r\n}\r\n0\r\n\r\n");
        assert_eq!(u.judge(200), Ok(()));
        assert_eq!(u.next(), Some(1));
        u.render_head(&[], "h", Variant::Http11);
        let text = String::from_utf8(u.parts().concat()).unwrap();
        assert!(text.starts_with("GET /b/42 HTTP/1.1\r\n"), "{text}");
        assert!(text.contains("X-T: t1\r\nCookie: s=1\r\n"), "{text}");
    }

    #[test]
    fn a_failed_check_is_a_reason_and_the_flow_starts_over() {
        let mut u = user(
            r#"
[[steps]]
name = "a"
url = "/a"
check = { status = 201 }
[[steps]]
name = "b"
url = "/b"
"#,
        );
        u.next();
        u.keep(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
        let reason = u.judge(200).unwrap_err();
        assert!(reason.contains("status 200"), "{reason}");
        assert_eq!(u.next(), Some(0));
        assert_eq!(u.tally(), (0, 1));
    }
}
