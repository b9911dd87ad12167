//! A virtual user walking a flow: its variables, its cookie jar, where it is
//! in the steps, loops and branches. The engine asks it for the next
//! request (rendered into the engine's reusable buffers) and hands it each
//! response; it never touches a socket.

use crate::capture::{self, Source, MAX_CAPTURE_BODY};
use crate::cookie::{self, CookieJar};
pub use crate::origin::Origin;
use crate::spec::{Body, Flow, Op, Step};
use crate::template::Vars;
use benchlab_rng::SplitMix64;
use std::sync::Arc;
use std::time::Duration;

/// A request, rendered; its buffers are reused from request to request.
#[derive(Debug, Default)]
pub struct RequestBuf {
    method: Vec<u8>,
    target: Vec<u8>,
    headers: Vec<u8>,
    /// Each header's name start, value start and value end in `headers`.
    spans: Vec<[u32; 3]>,
    body: Vec<u8>,
    static_body: Option<Arc<[u8]>>,
    has_body: bool,
}

impl RequestBuf {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn method(&self) -> &[u8] {
        &self.method
    }

    /// The request target: path and query.
    pub fn target(&self) -> &[u8] {
        &self.target
    }

    /// The step's headers (a Cookie header from the jar among them), as
    /// (name, value).
    pub fn headers(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.spans.iter().map(|&[n, v, e]| {
            (
                &self.headers[n as usize..v as usize],
                &self.headers[v as usize..e as usize],
            )
        })
    }

    /// The body; `None` for a step without one (no Content-Length).
    pub fn body(&self) -> Option<&[u8]> {
        if !self.has_body {
            return None;
        }
        Some(match &self.static_body {
            Some(b) => b,
            None => &self.body,
        })
    }

    fn start_header(&mut self, name: &str) {
        let n = self.headers.len() as u32;
        self.headers.extend_from_slice(name.as_bytes());
        let v = self.headers.len() as u32;
        self.spans.push([n, v, v]);
    }

    fn end_header(&mut self) {
        let end = self.headers.len() as u32;
        if let Some(last) = self.spans.last_mut() {
            last[2] = end;
        }
    }
}

/// The step a request is for.
#[derive(Debug, Clone, Copy)]
pub struct StepRef<'a> {
    pub index: usize,
    pub name: &'a str,
    pub step: &'a Step,
}

/// What a response did to the flow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StepOutcome {
    /// Checks passed, captures taken; wait `think` before the next request.
    Passed { step: usize, think: Duration },
    /// A check failed or a capture found nothing: counted as
    /// `check_failed` for the step; the flow is abandoned and the user
    /// starts over.
    Failed { step: usize, reason: String },
    /// A response with no request outstanding (the engine's mistake).
    NoRequest,
}

/// One virtual user of a flow.
#[derive(Debug)]
pub struct FlowUser {
    flow: Arc<Flow>,
    user: u64,
    rng: SplitMix64,
    session: Session,
    pc: usize,
    /// Remaining passes of each open repeat, innermost last.
    loops: Vec<u32>,
    outstanding: Option<usize>,
    /// True when the next request starts the flow (again).
    at_start: bool,
    done: bool,
    completed: u64,
    abandoned: u64,
}

/// What a user's responses change: apart from the flow it walks, so a
/// step (borrowed from the shared flow) can judge a response without
/// cloning the flow's `Arc` per response (an atomic on a line every
/// thread shares).
#[derive(Debug)]
struct Session {
    vars: Vars,
    jar: CookieJar,
    origin: Origin,
    clock: fn() -> i64,
    /// The last request's path (no query), for the cookies it gets back.
    path: Vec<u8>,
    scratch: Vec<u8>,
    seen: Vec<u8>,
}

fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

impl FlowUser {
    /// User number `user` of its run (feeders' `index` mode uses it), its
    /// random stream from `seed`.
    pub fn new(flow: Arc<Flow>, user: u64, seed: u64, origin: Origin) -> FlowUser {
        let n = flow.vars.len();
        let depth = flow.depth;
        FlowUser {
            flow,
            user,
            rng: SplitMix64::new(seed ^ user.wrapping_mul(0x9E37_79B9_7F4A_7C15)),
            session: Session {
                vars: Vars::new(n),
                jar: CookieJar::new(),
                origin,
                clock: unix_now,
                path: Vec::new(),
                scratch: Vec::new(),
                seen: Vec::new(),
            },
            pc: 0,
            loops: Vec::with_capacity(depth + 1),
            outstanding: None,
            at_start: true,
            done: false,
            completed: 0,
            abandoned: 0,
        }
    }

    /// Replaces the clock cookies' expiry is judged by (seconds since the
    /// epoch); for tests.
    pub fn set_clock(&mut self, clock: fn() -> i64) {
        self.session.clock = clock;
    }

    pub fn flow(&self) -> &Flow {
        &self.flow
    }

    /// Flows walked to the end.
    pub fn completed(&self) -> u64 {
        self.completed
    }

    /// Flows abandoned at a failed step.
    pub fn abandoned(&self) -> u64 {
        self.abandoned
    }

    pub fn jar(&self) -> &CookieJar {
        &self.session.jar
    }

    pub fn vars(&self) -> &Vars {
        &self.session.vars
    }

    /// True when a feeder with `on_end = "stop"` ran out for this user: it
    /// sends nothing more.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Starts the flow again: a new session (empty jar, captures
    /// forgotten), fresh feeder rows.
    fn restart(&mut self) -> bool {
        self.session.jar.clear();
        for &v in &self.flow.capture_vars {
            self.session.vars.set(v, b"");
        }
        for (feeder, cols) in &self.flow.feeders {
            let Some(row) = feeder.take(self.user, &mut self.rng) else {
                self.done = true;
                return false;
            };
            for &(col, var) in cols {
                self.session.vars.set(var, row.get(col));
            }
        }
        self.pc = 0;
        self.loops.clear();
        self.at_start = false;
        true
    }

    /// Abandons the flow (a transport error on a step: the engine counts
    /// it); the next request starts over.
    pub fn abandon(&mut self) {
        if self.outstanding.take().is_some() || !self.at_start {
            self.abandoned += 1;
        }
        self.at_start = true;
    }

    /// Renders the next request into `out`; `None` when the user is done.
    pub fn next_request(&mut self, out: &mut RequestBuf) -> Option<StepRef<'_>> {
        if self.done {
            return None;
        }
        // A compiled flow has a request in every pass; the count only
        // keeps a flow without one from spinning here.
        let mut ends = 0;
        let index = loop {
            if self.at_start && !self.restart() {
                return None;
            }
            match self.flow.ops.get(self.pc) {
                None => {
                    self.completed += 1;
                    self.at_start = true;
                    ends += 1;
                    if ends > 1 {
                        self.done = true;
                        return None;
                    }
                }
                Some(Op::Request(i)) => {
                    self.pc += 1;
                    break *i;
                }
                Some(Op::Repeat { count }) => {
                    self.loops.push(*count);
                    self.pc += 1;
                }
                Some(Op::EndRepeat { start }) => {
                    let left = self.loops.last_mut().map(|l| {
                        *l -= 1;
                        *l
                    });
                    if left.unwrap_or(0) > 0 {
                        self.pc = start + 1;
                    } else {
                        self.loops.pop();
                        self.pc += 1;
                    }
                }
                Some(Op::Branch { arms, total }) => {
                    let draw = self.rng.below(*total);
                    self.pc = arms
                        .iter()
                        .find(|(cum, _)| draw < *cum)
                        .map(|a| a.1)
                        .unwrap_or(self.pc + 1);
                }
                Some(Op::Jump(to)) => self.pc = *to,
            }
        };
        self.outstanding = Some(index);
        let step = &self.flow.steps[index];
        out.method.clear();
        out.method.extend_from_slice(step.method.as_bytes());
        out.target.clear();
        step.url.render(&self.session.vars, &mut out.target);
        let path = out.target.split(|&b| b == b'?').next().unwrap_or(&[]);
        self.session.path.clear();
        self.session.path.extend_from_slice(path);
        out.headers.clear();
        out.spans.clear();
        let sess = &self.session;
        let origin = step.origin.as_ref().unwrap_or(&sess.origin);
        let now = if sess.jar.is_empty() { 0 } else { (sess.clock)() };
        for h in &step.headers {
            out.start_header(&h.name);
            h.value.render(&sess.vars, &mut out.headers);
            if h.is_cookie {
                let before = out.headers.len();
                out.headers.extend_from_slice(b"; ");
                if !sess
                    .jar
                    .write_header(&origin.host, &sess.path, origin.https, now, &mut out.headers)
                {
                    out.headers.truncate(before);
                }
            }
            out.end_header();
        }
        if !step.has_cookie_header && !sess.jar.is_empty() {
            out.start_header("Cookie");
            if sess
                .jar
                .write_header(&origin.host, &sess.path, origin.https, now, &mut out.headers)
            {
                out.end_header();
            } else {
                out.spans.pop();
                out.headers.truncate(out.headers.len() - "Cookie".len());
            }
        }
        out.body.clear();
        out.has_body = !matches!(step.body, Body::None);
        match &step.body {
            Body::Static(b) => {
                if !out.static_body.as_ref().is_some_and(|s| Arc::ptr_eq(s, b)) {
                    out.static_body = Some(b.clone());
                }
            }
            Body::Template(t) => {
                out.static_body = None;
                t.render(&self.session.vars, &mut out.body);
            }
            Body::None => {}
        }
        Some(StepRef {
            index,
            name: &step.name,
            step,
        })
    }

    /// Takes the response to the outstanding request: the cookie jar
    /// learns its Set-Cookie headers, captures set their variables,
    /// checks judge it. `body` is what the engine kept of it (at most
    /// [`MAX_CAPTURE_BODY`] bytes are looked at).
    pub fn on_response<'h>(
        &mut self,
        status: u16,
        headers: impl Iterator<Item = (&'h [u8], &'h [u8])>,
        body: &[u8],
    ) -> StepOutcome {
        let Some(index) = self.outstanding.take() else {
            return StepOutcome::NoRequest;
        };
        let step = &self.flow.steps[index];
        match self.session.judge(step, status, headers, body) {
            None => StepOutcome::Passed {
                step: index,
                think: step.think,
            },
            Some(reason) => {
                self.abandoned += 1;
                self.at_start = true;
                StepOutcome::Failed { step: index, reason }
            }
        }
    }
}

impl Session {
    fn judge<'h>(
        &mut self,
        step: &Step,
        status: u16,
        headers: impl Iterator<Item = (&'h [u8], &'h [u8])>,
        body: &[u8],
    ) -> Option<String> {
        if !step.status.contains(status) {
            return Some(format!("status {status}, expected {}", step.status));
        }
        // One pass over the headers: cookies to the jar, header and cookie
        // captures (first occurrence), header checks (any occurrence).
        let (mut captured, mut passed, mut occurred) = (0u64, 0u64, 0u64);
        let mut first_miss = None;
        let mut now = None;
        for (name, value) in headers {
            if name.eq_ignore_ascii_case(b"set-cookie") {
                let t = *now.get_or_insert_with(self.clock);
                let o = step.origin.as_ref().unwrap_or(&self.origin);
                self.jar.set(value, &o.host, &self.path, o.https, t);
                if let Some((cname, cvalue)) = cookie::name_value(value) {
                    for (i, c) in step.captures.iter().enumerate() {
                        if captured & (1 << i) == 0 && matches!(&c.source, Source::Cookie(n) if &n[..] == cname) {
                            if !self.vars.set(c.var, cvalue) {
                                return Some(format!("capture {}: a value over 64 KiB", c.name));
                            }
                            captured |= 1 << i;
                        }
                    }
                }
            }
            for (i, c) in step.captures.iter().enumerate() {
                if captured & (1 << i) == 0
                    && matches!(&c.source, Source::Header(n) if name.eq_ignore_ascii_case(n.as_bytes()))
                {
                    if !self.vars.set(c.var, value) {
                        return Some(format!("capture {}: a value over 64 KiB", c.name));
                    }
                    captured |= 1 << i;
                }
            }
            for (i, c) in step.checks.iter().enumerate() {
                if c.header_name().is_some_and(|n| name.eq_ignore_ascii_case(n.as_bytes())) {
                    occurred |= 1 << i;
                    if c.header_ok(value) {
                        passed |= 1 << i;
                    } else if first_miss.is_none() {
                        // The first occurrence that missed, for the reason.
                        first_miss = Some(i);
                        self.seen.clear();
                        self.seen.extend_from_slice(&value[..value.len().min(256)]);
                    }
                }
            }
        }
        for (i, c) in step.checks.iter().enumerate() {
            if c.header_name().is_some() && passed & (1 << i) == 0 {
                let seen = match (occurred & (1 << i) != 0, first_miss == Some(i)) {
                    (false, _) => None,
                    (true, true) => Some(&self.seen[..]),
                    (true, false) => Some(&b"another value"[..]),
                };
                return Some(c.header_reason(seen));
            }
        }
        self.scratch.clear();
        self.seen.clear();
        for (i, c) in step.captures.iter().enumerate() {
            if captured & (1 << i) == 0 && !c.source.needs_body() {
                let what = match &c.source {
                    Source::Header(h) => format!("header {h}"),
                    Source::Cookie(n) => format!("Set-Cookie {}", String::from_utf8_lossy(n)),
                    _ => String::new(),
                };
                return Some(format!("capture {}: no {what} in the response", c.name));
            }
        }
        if !step.needs_body {
            return None;
        }
        let body = &body[..body.len().min(MAX_CAPTURE_BODY)];
        let json = if step.needs_json {
            serde_json::from_slice::<serde_json::Value>(body).ok()
        } else {
            None
        };
        for c in step.captures.iter().filter(|c| c.source.needs_body()) {
            self.scratch.clear();
            if !capture::from_body(&c.source, body, json.as_ref(), &mut self.scratch) {
                return Some(match (&c.source, &json) {
                    (Source::Json(_), None) => format!("capture {}: the body is not JSON", c.name),
                    (Source::Json(p), _) => format!("capture {}: no JSON value at {p}", c.name),
                    _ => format!("capture {}: the regex does not match the body", c.name),
                });
            }
            if !self.vars.set(c.var, &self.scratch) {
                return Some(format!("capture {}: a value over 64 KiB", c.name));
            }
        }
        for c in step.checks.iter().filter(|c| c.needs_body()) {
            if let Some(reason) = c.body_check(body, json.as_ref(), &self.vars, &mut self.scratch, &mut self.seen) {
                return Some(reason);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::FlowSpec;

    const NOW: i64 = 1_700_000_000;

    fn flow(toml: &str, files: &[(&str, &str)]) -> Arc<Flow> {
        let dir = tempfile::tempdir().unwrap();
        for (name, text) in files {
            std::fs::write(dir.path().join(name), text).unwrap();
        }
        Arc::new(FlowSpec::from_toml(toml).unwrap().compile(dir.path()).unwrap())
    }

    fn user(flow: &Arc<Flow>, n: u64) -> FlowUser {
        let mut u = FlowUser::new(flow.clone(), n, 42, Origin::new("Shop.Example", false));
        u.set_clock(|| NOW);
        u
    }

    fn ok(u: &mut FlowUser) -> StepOutcome {
        u.on_response(200, std::iter::empty(), b"")
    }

    /// The step names a user walks over `n` requests, every response 200.
    fn walk(u: &mut FlowUser, n: usize) -> Vec<String> {
        let mut buf = RequestBuf::new();
        let mut out = Vec::new();
        for _ in 0..n {
            let Some(s) = u.next_request(&mut buf) else { break };
            out.push(s.name.to_string());
            assert!(matches!(ok(u), StepOutcome::Passed { .. }));
        }
        out
    }

    fn text(b: &[u8]) -> String {
        String::from_utf8_lossy(b).into_owned()
    }

    fn headers(buf: &RequestBuf) -> Vec<String> {
        buf.headers()
            .map(|(n, v)| format!("{}: {}", text(n), text(v)))
            .collect()
    }

    #[test]
    fn walks_steps_loops_and_starts_over() {
        let f = flow(
            r#"
[[steps]]
name = "a"
url = "/a"
[[steps]]
repeat = 2
steps = [
  { name = "b", url = "/b" },
  { repeat = 3, steps = [{ name = "c", url = "/c" }] },
]
[[steps]]
name = "d"
url = "/d"
"#,
            &[],
        );
        let mut u = user(&f, 0);
        let got = walk(&mut u, 11);
        assert_eq!(got, ["a", "b", "c", "c", "c", "b", "c", "c", "c", "d", "a"]);
        assert_eq!((u.completed(), u.abandoned()), (1, 0));
    }

    #[test]
    fn branches_by_weight() {
        let f = flow(
            r#"
[[steps]]
branch = [
  { weight = 3, steps = [{ name = "buy", url = "/buy" }] },
  { weight = 1, steps = [{ name = "look", url = "/look" }, { name = "leave", url = "/leave" }] },
]
[[steps]]
name = "end"
url = "/end"
"#,
            &[],
        );
        let mut u = user(&f, 0);
        let mut got = walk(&mut u, 40_000);
        // Up to the end of the last whole pass.
        got.truncate(got.iter().rposition(|s| s == "end").unwrap() + 1);
        let count = |n: &str| got.iter().filter(|s| *s == n).count();
        let (buy, look, leave, end) = (count("buy"), count("look"), count("leave"), count("end"));
        assert_eq!(look, leave, "an arm's steps run together");
        assert_eq!(buy + look, end, "one arm per pass, then the step after the branch");
        // 3:1 by weight; the draws are a fixed seed's, so this is exact, not
        // a matter of luck: bounds only say what the weights mean.
        let share = buy as f64 / end as f64;
        assert!((0.73..0.77).contains(&share), "buy share {share}");
        let mut again = user(&f, 0);
        assert_eq!(walk(&mut again, got.len()), got, "the same seed walks the same way");
    }

    const SHOP: &str = r#"
[[feeders]]
file = "users.csv"
on_end = "stop"

[[steps]]
name = "home"
url = "/"
capture = { csrf = 'regex:name="csrf" value="([^"]+)"' }

[[steps]]
name = "login"
method = "POST"
url = "/login?next=/cart&u={{user}}"
headers = { "Content-Type" = "application/x-www-form-urlencoded", "X-Csrf" = "{{csrf}}" }
body = "user={{user}}&pass={{pass}}"
capture = { session = "cookie:session", token = "header:X-Token" }
check = { status = "2xx", header_contains = { "Content-Type" = "json" } }

[[steps]]
name = "add"
method = "POST"
url = "/cart/items"
headers = { "Authorization" = "Bearer {{token}}", "Cookie" = "theme=dark" }
body = '{"csrf": "{{csrf}}", "sku": "{{sku}}"}'
capture = { cart = "json:/cart/id" }
check = { json = { "/cart/n" = 1, "/total" = 2.0 }, body_contains = "{{user}}" }
"#;

    fn shop() -> Arc<Flow> {
        flow(SHOP, &[("users.csv", "user,pass,sku\nann a,p&1,S-1\nbob,p2,S-2\n")])
    }

    #[test]
    fn renders_captures_and_carries_cookies() {
        let f = shop();
        let mut u = user(&f, 0);
        let mut buf = RequestBuf::new();

        let s = u.next_request(&mut buf).unwrap();
        assert_eq!((s.index, s.name), (0, "home"));
        assert_eq!((text(buf.method()), text(buf.target())), ("GET".into(), "/".into()));
        assert!(headers(&buf).is_empty() && buf.body().is_none());
        let page = br#"<form><input type="hidden" name="csrf" value="t0k/en+1"></form>"#;
        let set = [(&b"Set-Cookie"[..], &b"pref=1; Path=/"[..])];
        assert_eq!(
            u.on_response(200, set.iter().copied(), page),
            StepOutcome::Passed {
                step: 0,
                think: Duration::ZERO
            }
        );

        let s = u.next_request(&mut buf).unwrap();
        assert_eq!((s.index, s.name), (1, "login"));
        assert_eq!(text(buf.method()), "POST");
        assert_eq!(text(buf.target()), "/login?next=/cart&u=ann%20a");
        assert_eq!(
            headers(&buf),
            [
                "Content-Type: application/x-www-form-urlencoded",
                "X-Csrf: t0k/en+1",
                "Cookie: pref=1"
            ]
        );
        assert_eq!(text(buf.body().unwrap()), "user=ann a&pass=p&1");
        let resp = [
            (&b"content-type"[..], &b"application/json"[..]),
            (b"set-cookie", b"session=s-123; Path=/; HttpOnly"),
            (b"X-Token", b"tok-9"),
            (b"X-Token", b"second"),
        ];
        assert!(matches!(
            u.on_response(200, resp.iter().copied(), b"{}"),
            StepOutcome::Passed { step: 1, .. }
        ));

        let s = u.next_request(&mut buf).unwrap();
        assert_eq!(s.name, "add");
        assert_eq!(text(buf.target()), "/cart/items");
        assert_eq!(
            headers(&buf),
            [
                "Authorization: Bearer tok-9",
                "Cookie: theme=dark; pref=1; session=s-123"
            ],
            "the jar's cookies join the step's own Cookie header"
        );
        assert_eq!(text(buf.body().unwrap()), r#"{"csrf": "t0k/en+1", "sku": "S-1"}"#);
        let body = br#"{"cart": {"id": "c-7", "n": 1}, "user": "ann a", "total": 2.0}"#;
        assert!(matches!(
            u.on_response(201, std::iter::empty(), body),
            StepOutcome::Passed { step: 2, .. }
        ));
        let cart = f.vars().id("cart").unwrap();
        assert_eq!(u.vars().get(cart), b"c-7");

        // The flow starts over: the next row, an empty jar, captures gone.
        let s = u.next_request(&mut buf).unwrap();
        assert_eq!(s.name, "home");
        assert!(headers(&buf).is_empty(), "the jar is cleared: {:?}", headers(&buf));
        assert_eq!(u.vars().get(cart), b"");
        assert_eq!(u.vars().get(f.vars().id("user").unwrap()), b"bob");
        assert_eq!(u.completed(), 1);
    }

    #[test]
    fn failures_abandon_the_flow_with_a_reason() {
        let page: &[u8] = br#"name="csrf" value="x""#;
        let json_ct = [(&b"Content-Type"[..], &b"application/json"[..])];
        type Respond<'a> = (u16, &'a [(&'a [u8], &'a [u8])], &'a [u8]);
        // Responses to home, then login (when home passes), then add.
        let cases: Vec<(Vec<Respond>, usize, &str)> = vec![
            (vec![(500, &[], page)], 0, "status 500, expected 200-399"),
            (
                vec![(200, &[], b"<html>no token</html>")],
                0,
                "capture csrf: the regex does not match the body",
            ),
            (
                vec![(200, &[], page), (302, &json_ct, b"")],
                1,
                "status 302, expected 200-299",
            ),
            (
                vec![(200, &[], page), (200, &[(b"Content-Type", b"text/html")], b"")],
                1,
                "header content-type is \"text/html\", expected it to contain \"json\"",
            ),
            (
                vec![(200, &[], page), (200, &[], b"")],
                1,
                "no header content-type (expected one to contain \"json\")",
            ),
            (
                vec![(200, &[], page), (200, &json_ct, b"")],
                1,
                "capture session: no Set-Cookie session in the response",
            ),
            (
                vec![
                    (200, &[], page),
                    (200, &[(b"Content-Type", b"json"), (b"Set-Cookie", b"session=1")], b""),
                ],
                1,
                "capture token: no header x-token in the response",
            ),
            (
                vec![
                    (200, &[], page),
                    (
                        200,
                        &[
                            (b"Content-Type", b"json"),
                            (b"Set-Cookie", b"session=1"),
                            (b"X-Token", b"t"),
                        ],
                        b"",
                    ),
                    (200, &[], b"<html>"),
                ],
                2,
                "capture cart: the body is not JSON",
            ),
            (
                vec![
                    (200, &[], page),
                    (
                        200,
                        &[
                            (b"Content-Type", b"json"),
                            (b"Set-Cookie", b"session=1"),
                            (b"X-Token", b"t"),
                        ],
                        b"",
                    ),
                    (200, &[], br#"{"cart": {"id": 1, "n": 2}, "u": "ann a"}"#),
                ],
                2,
                "JSON /cart/n is \"2\", expected \"1\"",
            ),
            (
                vec![
                    (200, &[], page),
                    (
                        200,
                        &[
                            (b"Content-Type", b"json"),
                            (b"Set-Cookie", b"session=1"),
                            (b"X-Token", b"t"),
                        ],
                        b"",
                    ),
                    (200, &[], br#"{"cart": {"id": 1, "n": 1}, "u": "bob"}"#),
                ],
                2,
                "body does not contain \"ann a\"",
            ),
        ];
        for (responses, step, reason) in cases {
            // A flow of its own for each case: its feeder's rows are fresh.
            let f = shop();
            let mut u = user(&f, 0);
            let mut buf = RequestBuf::new();
            let mut last = None;
            for (status, hs, body) in &responses {
                u.next_request(&mut buf).unwrap();
                last = Some(u.on_response(*status, hs.iter().copied(), body));
            }
            assert_eq!(
                last,
                Some(StepOutcome::Failed {
                    step,
                    reason: reason.to_string()
                }),
                "{reason}"
            );
            assert_eq!(u.abandoned(), 1);
            // The user starts over: the first step, the next feeder row, an
            // empty jar.
            let s = u.next_request(&mut buf).unwrap();
            assert_eq!(s.index, 0, "{reason}");
            assert_eq!(u.vars().get(f.vars().id("user").unwrap()), b"bob", "{reason}");
            assert!(u.jar().is_empty() && headers(&buf).is_empty(), "{reason}");
        }
    }

    #[test]
    fn feeder_stop_ends_the_user_and_loop_goes_round() {
        let steps = "[[steps]]\nname = \"a\"\nurl = \"/u/{{user}}\"\n";
        let files = [("u.csv", "user\nx\ny\n")];
        let stop = flow(
            &format!("[[feeders]]\nfile = \"u.csv\"\non_end = \"stop\"\n{steps}"),
            &files,
        );
        let mut u = user(&stop, 0);
        let mut buf = RequestBuf::new();
        let mut targets = Vec::new();
        while let Some(_s) = u.next_request(&mut buf) {
            targets.push(text(buf.target()));
            ok(&mut u);
            assert!(targets.len() < 10);
        }
        assert_eq!(targets, ["/u/x", "/u/y"]);
        assert!(u.is_done() && u.next_request(&mut buf).is_none());

        let looped = flow(
            &format!("[[feeders]]\nfile = \"u.csv\"\non_end = \"loop\"\n{steps}"),
            &files,
        );
        let mut u = user(&looped, 0);
        let mut targets = Vec::new();
        for _ in 0..5 {
            u.next_request(&mut buf).unwrap();
            targets.push(text(buf.target()));
            ok(&mut u);
        }
        assert_eq!(targets, ["/u/x", "/u/y", "/u/x", "/u/y", "/u/x"]);

        let index = flow(
            &format!("[[feeders]]\nfile = \"u.csv\"\nmode = \"index\"\non_end = \"stop\"\n{steps}"),
            &files,
        );
        let mut second = user(&index, 1);
        for _ in 0..3 {
            second.next_request(&mut buf).unwrap();
            assert_eq!(text(buf.target()), "/u/y", "user 1 takes row 1 each time");
            ok(&mut second);
        }
        assert!(user(&index, 2).next_request(&mut buf).is_none(), "user 2 has no row");
    }

    #[test]
    fn origins_drop_ports() {
        let cases = [
            ("Shop.Example", "shop.example"),
            ("shop.example:8443", "shop.example"),
            ("127.0.0.1:8080", "127.0.0.1"),
            ("[::1]:8080", "::1"),
            ("[::1]", "::1"),
            ("::1", "::1"),
        ];
        for (authority, host) in cases {
            assert_eq!(Origin::new(authority, false).host, host, "{authority}");
        }
    }

    /// A compiled flow is shared by the engine's threads; a user moves to
    /// the thread that runs it.
    #[test]
    fn flows_are_shared_and_users_sent() {
        fn shared<T: Send + Sync>() {}
        fn sent<T: Send>() {}
        shared::<Flow>();
        sent::<FlowUser>();
        sent::<RequestBuf>();
    }

    #[test]
    fn response_without_request_and_abandon() {
        let f = flow(
            "[[steps]]\nname = \"a\"\nurl = \"/\"\n[[steps]]\nname = \"b\"\nurl = \"/b\"\n",
            &[],
        );
        let mut u = user(&f, 0);
        assert_eq!(ok(&mut u), StepOutcome::NoRequest);
        let mut buf = RequestBuf::new();
        u.next_request(&mut buf).unwrap();
        u.abandon();
        assert_eq!(u.abandoned(), 1);
        assert_eq!(u.next_request(&mut buf).unwrap().name, "a");
    }

    #[test]
    fn static_bodies_are_shared_not_copied() {
        let f = flow(
            "[[steps]]\nname = \"a\"\nmethod = \"PUT\"\nurl = \"/\"\nbody = \"{}\"\n",
            &[],
        );
        let mut u = user(&f, 0);
        let mut buf = RequestBuf::new();
        u.next_request(&mut buf).unwrap();
        let first = buf.body().unwrap().as_ptr();
        ok(&mut u);
        u.next_request(&mut buf).unwrap();
        assert_eq!(buf.body().unwrap(), b"{}");
        assert_eq!(buf.body().unwrap().as_ptr(), first);
        assert!(matches!(f.steps()[0].body, Body::Static(_)));
    }

    #[test]
    fn secure_cookies_and_paths_follow_the_origin() {
        let f = flow(
            "[[steps]]\nname = \"a\"\nurl = \"/shop/login\"\n[[steps]]\nname = \"b\"\nurl = \"/shop/cart?x=1\"\n[[steps]]\nname = \"c\"\nurl = \"/other\"\n",
            &[],
        );
        for (https, want_b) in [(false, "Cookie: p=1"), (true, "Cookie: s=2; p=1")] {
            let mut u = FlowUser::new(f.clone(), 0, 1, Origin::new("shop.example", https));
            u.set_clock(|| NOW);
            let mut buf = RequestBuf::new();
            u.next_request(&mut buf).unwrap();
            let set = [
                (&b"Set-Cookie"[..], &b"p=1"[..]),
                (b"Set-Cookie", b"s=2; Secure; Path=/shop/cart"),
            ];
            u.on_response(200, set.iter().copied(), b"");
            u.next_request(&mut buf).unwrap();
            let got = headers(&buf);
            assert_eq!(
                got.iter().map(String::as_str).collect::<Vec<_>>(),
                [want_b],
                "https {https}"
            );
            ok(&mut u);
            u.next_request(&mut buf).unwrap();
            assert!(
                headers(&buf).is_empty(),
                "/other is outside /shop, the default path of p"
            );
        }
    }
}
