//! The flow TOML (`FlowSpec`, read with serde, spans kept where an error
//! must name a line) and its compiled form (`Flow`): steps with parsed
//! templates, captures and checks, the walk as a small program of ops,
//! the feeders loaded. Compiling is validating: every error carries the
//! byte span of the TOML it is about.

use crate::capture::{self, Source};
use crate::check::{Check, StatusSet};
use crate::feeder::{Feeder, Format, Mode, OnEnd};
use crate::template::{valid_name, Context, Template, TemplateError, VarId, VarTable};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use toml::Spanned;

/// The most bytes of a step's `body_file`.
pub const MAX_BODY_FILE_BYTES: u64 = 64 << 20;
/// How deep `repeat` and `branch` groups nest.
pub const MAX_DEPTH: usize = 8;
/// The most captures plus header checks of one step.
pub const MAX_RULES: usize = 64;
/// The most request steps of a flow.
pub const MAX_STEPS: usize = 4096;

pub use crate::ordered::Ordered;

/// One string or a list of them.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum OneOrMany<T> {
    One(T),
    Many(Vec<T>),
}

/// A flow: its feeders and its steps.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowSpec {
    #[serde(default)]
    pub feeders: Vec<FeederSpec>,
    pub steps: Spanned<Vec<StepSpec>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FeederSpec {
    pub file: Spanned<String>,
    pub format: Option<Format>,
    #[serde(default)]
    pub mode: Mode,
    #[serde(default)]
    pub on_end: OnEnd,
}

/// An item of a step list: a request step, a `repeat` group or a `branch`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepSpec {
    pub name: Option<Spanned<String>>,
    pub method: Option<Spanned<String>>,
    pub url: Option<Spanned<String>>,
    pub headers: Option<Spanned<Ordered<Spanned<String>>>>,
    pub body: Option<Spanned<String>>,
    pub body_file: Option<Spanned<String>>,
    /// Another origin of the workload's server for this step
    /// (`https://host:port`), e.g. a checkout over TLS.
    pub target: Option<Spanned<String>>,
    pub think: Option<Spanned<String>>,
    pub capture: Option<Spanned<Ordered<Spanned<String>>>>,
    pub check: Option<Spanned<CheckSpec>>,
    pub repeat: Option<Spanned<i64>>,
    pub steps: Option<Spanned<Vec<StepSpec>>>,
    pub branch: Option<Spanned<Vec<Spanned<ArmSpec>>>>,
}

/// One arm of a branch: its weight and its steps.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArmSpec {
    pub weight: Option<Spanned<i64>>,
    pub steps: Spanned<Vec<StepSpec>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckSpec {
    pub status: Option<Spanned<OneOrMany<StatusItem>>>,
    pub header: Option<Ordered<Spanned<String>>>,
    pub header_contains: Option<Ordered<Spanned<String>>>,
    pub body_contains: Option<Spanned<OneOrMany<String>>>,
    pub json: Option<Ordered<Spanned<toml::Value>>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum StatusItem {
    Code(i64),
    Text(String),
}

/// An error in a flow spec: the byte span of the TOML it is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecError {
    pub span: Range<usize>,
    pub message: String,
}

impl SpecError {
    /// `file:line:col: message`, the line and column from the TOML text the
    /// spans are in.
    pub fn render(&self, file: &str, text: &str) -> String {
        let (line, col) = line_col(text, self.span.start);
        format!("{file}:{line}:{col}: {}", self.message)
    }
}

impl std::fmt::Display for SpecError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "at byte {}: {}", self.span.start, self.message)
    }
}

/// The 1-based line and column (in characters) of byte `at` of `text`.
pub fn line_col(text: &str, at: usize) -> (usize, usize) {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    let before = &text[..at];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map(|l| l.chars().count()).unwrap_or(0) + 1;
    (line, col)
}

fn serr(span: Range<usize>, message: impl Into<String>) -> SpecError {
    SpecError {
        span,
        message: message.into(),
    }
}

impl FlowSpec {
    /// Reads a flow from TOML text (a flow file, or the `flow` table of a
    /// workload once the model embeds it).
    pub fn from_toml(text: &str) -> Result<FlowSpec, SpecError> {
        toml::from_str(text).map_err(|e| {
            serr(
                e.span().unwrap_or(0..0),
                e.message().lines().next().unwrap_or("invalid flow").to_string(),
            )
        })
    }

    /// Every error of the flow (files read relative to `base_dir`), for
    /// `benchlab check`.
    pub fn validate(&self, base_dir: &Path) -> Vec<SpecError> {
        self.compile(base_dir).err().unwrap_or_default()
    }

    /// Compiles the flow for a run: feeders and body files read (relative
    /// to `base_dir`), templates parsed and resolved, the walk laid out.
    pub fn compile(&self, base_dir: &Path) -> Result<Flow, Vec<SpecError>> {
        self.compile_from(base_dir, &mut |path, what, limit| {
            benchlab_input::read_bounded(path, what, limit).map_err(|e| e.to_string())
        })
    }

    /// Compiles the flow with its files (feeders, body files) read by
    /// `read(path, what, limit)`: from disk, or from a [`FlowSource`]'s
    /// copies on a client of another host.
    pub fn compile_from(&self, base_dir: &Path, read: &mut ReadFile<'_>) -> Result<Flow, Vec<SpecError>> {
        let mut c = Compiler {
            read,
            base_dir,
            errors: Vec::new(),
            vars: VarTable::new(),
            flow: Flow::default(),
            names: Vec::new(),
        };
        // Variables first: feeder columns, then every capture's name, so a
        // template may name a capture of any step (one not yet captured
        // renders empty).
        for f in &self.feeders {
            let path = base_dir.join(f.file.get_ref());
            let format = f.format.unwrap_or_else(|| Format::of_path(&path));
            let loaded = (c.read)(&path, "feeder", crate::feeder::MAX_FEEDER_BYTES).and_then(|bytes| {
                Feeder::parse(&bytes, format, f.mode, f.on_end).map_err(|e| format!("{}: {e}", path.display()))
            });
            match loaded {
                Ok(feeder) => {
                    let mut cols = Vec::new();
                    for (i, col) in feeder.columns().enumerate() {
                        if c.vars.id(col).is_some() {
                            c.errors.push(serr(
                                f.file.span(),
                                format!("column `{col}` is also a column of another feeder: give it another name"),
                            ));
                        } else if let Some(id) = c.vars.define(col) {
                            cols.push((i, id));
                        }
                    }
                    c.flow.feeders.push((feeder, cols));
                }
                Err(e) => c.errors.push(serr(f.file.span(), e)),
            }
        }
        c.define_captures(self.steps.get_ref());
        if self.steps.get_ref().is_empty() {
            c.errors.push(serr(self.steps.span(), "a flow needs at least one step"));
        }
        c.flow.capture_vars = (c.flow.feeders.iter().map(|(_, cols)| cols.len()).sum::<usize>()..c.vars.len())
            .map(|i| i as VarId)
            .collect();
        c.group(&self.steps, 1);
        if c.errors.is_empty() {
            let mut flow = c.flow;
            flow.vars = c.vars;
            Ok(flow)
        } else {
            Err(c.errors)
        }
    }
}

/// How a compile reads a file the flow names: `(path, what it is, the
/// most bytes)` to its bytes or an error naming it.
pub type ReadFile<'r> = dyn FnMut(&Path, &'static str, u64) -> Result<Vec<u8>, String> + 'r;

struct Compiler<'a> {
    read: &'a mut ReadFile<'a>,
    base_dir: &'a Path,
    errors: Vec<SpecError>,
    vars: VarTable,
    flow: Flow,
    names: Vec<String>,
}

impl Compiler<'_> {
    fn define_captures(&mut self, steps: &[StepSpec]) {
        for s in steps {
            if let Some(cap) = &s.capture {
                for (name, _) in &cap.get_ref().0 {
                    if !valid_name(name) {
                        self.errors.push(serr(
                            cap.span(),
                            format!(
                                "capture `{}` is no variable name: expected a letter or `_`, then letters, digits \
                                 and `_`",
                                benchlab_input::excerpt(name)
                            ),
                        ));
                    } else if self.vars.define(name).is_none() {
                        self.errors.push(serr(cap.span(), "more than 1024 variables"));
                    }
                }
            }
            if let Some(inner) = &s.steps {
                self.define_captures(inner.get_ref());
            }
            for arm in s.branch.iter().flat_map(|b| b.get_ref()) {
                self.define_captures(arm.get_ref().steps.get_ref());
            }
        }
    }

    fn template(&mut self, s: &Spanned<String>, ctx: Context) -> Option<Template> {
        // The string's text starts after its opening quote; offsets are
        // exact for strings without escapes, near for the others.
        let base = s.span().start + 1;
        let at = |e: &TemplateError| base + e.offset..base + e.offset + 2;
        match Template::parse(s.get_ref(), ctx) {
            Ok(mut t) => match t.resolve(&self.vars) {
                Ok(()) => Some(t),
                Err(errs) => {
                    for e in errs {
                        self.errors.push(serr(at(&e), e.message));
                    }
                    None
                }
            },
            Err(e) => {
                self.errors.push(serr(at(&e), format!("template: {}", e.message)));
                None
            }
        }
    }

    /// The items of a step list; `span` is the list's, for an item with
    /// nothing of its own to point at.
    fn group(&mut self, steps: &Spanned<Vec<StepSpec>>, depth: usize) {
        for s in steps.get_ref() {
            self.item(s, depth, &steps.span());
        }
    }

    fn item(&mut self, s: &StepSpec, depth: usize, parent: &Range<usize>) {
        let request_keys = [
            s.method.as_ref().map(|m| ("method", m.span())),
            s.url.as_ref().map(|m| ("url", m.span())),
            s.headers.as_ref().map(|m| ("headers", m.span())),
            s.body.as_ref().map(|m| ("body", m.span())),
            s.body_file.as_ref().map(|m| ("body_file", m.span())),
            s.target.as_ref().map(|m| ("target", m.span())),
            s.capture.as_ref().map(|m| ("capture", m.span())),
            s.check.as_ref().map(|m| ("check", m.span())),
        ];
        if s.repeat.is_some() || s.branch.is_some() || s.steps.is_some() {
            let what = if s.branch.is_some() { "a branch" } else { "a repeat" };
            for (key, span) in request_keys.iter().flatten() {
                self.errors.push(serr(
                    span.clone(),
                    format!("`{key}` in {what}: a group has `steps`; put `{key}` in one of its steps"),
                ));
            }
            if depth > MAX_DEPTH {
                let span = s
                    .repeat
                    .as_ref()
                    .map(|r| r.span())
                    .or(s.branch.as_ref().map(|b| b.span()));
                self.errors.push(serr(
                    span.unwrap_or(0..0),
                    format!("groups nest deeper than {MAX_DEPTH}"),
                ));
                return;
            }
        }
        match (&s.repeat, &s.branch) {
            (Some(r), Some(b)) => {
                self.errors.push(serr(
                    b.span(),
                    "`repeat` and `branch` in one item: put the branch in the repeat's `steps`",
                ));
                let _ = r;
            }
            (Some(r), None) => {
                let Some(steps) = &s.steps else {
                    self.errors
                        .push(serr(r.span(), "a repeat needs `steps`, the group it repeats"));
                    return;
                };
                let n = *r.get_ref();
                if !(1..=u32::MAX as i64).contains(&n) {
                    self.errors
                        .push(serr(r.span(), format!("repeat = {n}: expected 1 or more")));
                    return;
                }
                if steps.get_ref().is_empty() {
                    self.errors.push(serr(steps.span(), "a repeat with no steps"));
                    return;
                }
                let start = self.flow.ops.len();
                self.flow.ops.push(Op::Repeat { count: n as u32 });
                self.flow.depth = self.flow.depth.max(depth);
                self.group(steps, depth + 1);
                self.flow.ops.push(Op::EndRepeat { start });
            }
            (None, Some(b)) => {
                if let Some(steps) = &s.steps {
                    self.errors.push(serr(
                        steps.span(),
                        "`steps` beside `branch`: each arm has its own `steps`",
                    ));
                }
                if b.get_ref().is_empty() {
                    self.errors.push(serr(b.span(), "a branch with no arms"));
                    return;
                }
                let at = self.flow.ops.len();
                self.flow.ops.push(Op::Branch {
                    arms: Box::new([]),
                    total: 0,
                });
                let (mut arms, mut total, mut jumps) = (Vec::new(), 0u64, Vec::new());
                for arm in b.get_ref() {
                    let w = match &arm.get_ref().weight {
                        None => {
                            self.errors.push(serr(
                                arm.span(),
                                "a branch arm with no `weight`: expected weight = 1 or more",
                            ));
                            0
                        }
                        Some(w) if !(1..=1_000_000).contains(w.get_ref()) => {
                            self.errors.push(serr(
                                w.span(),
                                format!("weight = {}: expected 1 to 1000000", w.get_ref()),
                            ));
                            0
                        }
                        Some(w) => *w.get_ref() as u64,
                    };
                    let steps = &arm.get_ref().steps;
                    if steps.get_ref().is_empty() {
                        self.errors.push(serr(steps.span(), "a branch arm with no steps"));
                    }
                    total += w;
                    arms.push((total, self.flow.ops.len()));
                    self.group(steps, depth + 1);
                    jumps.push(self.flow.ops.len());
                    self.flow.ops.push(Op::Jump(0));
                }
                let end = self.flow.ops.len();
                for j in jumps {
                    self.flow.ops[j] = Op::Jump(end);
                }
                self.flow.ops[at] = Op::Branch {
                    arms: arms.into_boxed_slice(),
                    total,
                };
            }
            (None, None) => {
                if let Some(steps) = &s.steps {
                    self.errors.push(serr(
                        steps.span(),
                        "`steps` without `repeat`: expected repeat = N beside it",
                    ));
                    return;
                }
                self.request(s, parent);
            }
        }
    }

    fn request(&mut self, s: &StepSpec, parent: &Range<usize>) {
        let Some(name) = &s.name else {
            let span = [&s.url, &s.method, &s.body, &s.think]
                .into_iter()
                .flatten()
                .map(|v| v.span())
                .next()
                .unwrap_or(parent.clone());
            self.errors
                .push(serr(span, "a step needs a `name` (its results are counted by name)"));
            return;
        };
        if name.get_ref().is_empty() || name.get_ref().len() > 64 || name.get_ref().chars().any(char::is_control) {
            self.errors
                .push(serr(name.span(), "a step's name is 1 to 64 printable characters"));
        }
        if self.names.contains(name.get_ref()) {
            self.errors.push(serr(
                name.span(),
                format!("step `{}` is named twice: names count results", name.get_ref()),
            ));
        }
        self.names.push(name.get_ref().clone());
        if self.flow.steps.len() >= MAX_STEPS {
            self.errors
                .push(serr(name.span(), format!("more than {MAX_STEPS} steps")));
            return;
        }
        let method = match &s.method {
            None => "GET".to_string(),
            Some(m) => {
                if !crate::capture::is_token(m.get_ref()) {
                    self.errors
                        .push(serr(m.span(), "a method is a token: GET, POST, PUT, DELETE, PATCH …"));
                }
                m.get_ref().to_ascii_uppercase()
            }
        };
        let url = match &s.url {
            None => {
                self.errors
                    .push(serr(name.span(), format!("step `{}` has no `url`", name.get_ref())));
                None
            }
            Some(u) => {
                if !u.get_ref().starts_with('/') {
                    self.errors.push(serr(
                        u.span(),
                        "a step's url is a path on the workload's server, starting with `/`",
                    ));
                }
                let t = self.template(u, Context::Url);
                // The literal text only: `{{ user }}` may have spaces, and
                // values are percent-encoded.
                if t.as_ref()
                    .is_some_and(|t| t.literal().iter().any(|&b| b <= b' ' || b == 0x7f))
                {
                    self.errors
                        .push(serr(u.span(), "a url has no spaces or control characters (write %20)"));
                }
                t
            }
        };
        let target = s.target.as_ref().and_then(|t| match origin(t.get_ref()) {
            Some(o) => Some(o),
            None => {
                self.errors.push(serr(
                    t.span(),
                    format!(
                        "target = \"{}\": expected an origin of the workload's server, `http://host:port` or \
                         `https://host:port`, without a path",
                        benchlab_input::excerpt(t.get_ref())
                    ),
                ));
                None
            }
        });
        let mut headers = Vec::new();
        for (hname, value) in s.headers.iter().flat_map(|h| &h.get_ref().0) {
            if !crate::capture::is_token(hname) {
                self.errors.push(serr(
                    value.span(),
                    format!("header `{}` is no header name", benchlab_input::excerpt(hname)),
                ));
                continue;
            }
            if value.get_ref().bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
                self.errors
                    .push(serr(value.span(), "a header value has no CR, LF or NUL"));
                continue;
            }
            if let Some(t) = self.template(value, Context::Header) {
                headers.push(Header {
                    is_cookie: hname.eq_ignore_ascii_case("cookie"),
                    name: hname.as_str().into(),
                    value: t,
                });
            }
        }
        let body = match (&s.body, &s.body_file) {
            (Some(_), Some(f)) => {
                self.errors
                    .push(serr(f.span(), "`body` and `body_file` in one step: keep one"));
                Body::None
            }
            (Some(b), None) => match self.template(b, Context::Raw) {
                Some(t) if t.is_literal() => Body::Static(t.literal().into()),
                Some(t) => Body::Template(t),
                None => Body::None,
            },
            (None, Some(f)) => {
                let path = self.base_dir.join(f.get_ref());
                match (self.read)(&path, "request body", MAX_BODY_FILE_BYTES) {
                    // A file that is not UTF-8 (an image, a protobuf) is
                    // sent as it is: templates are text.
                    Ok(bytes) => match String::from_utf8(bytes) {
                        Err(e) => Body::Static(e.into_bytes().into()),
                        Ok(text) => self.body_template(&text, &path, f.span()),
                    },
                    Err(e) => {
                        self.errors.push(serr(f.span(), e));
                        Body::None
                    }
                }
            }
            (None, None) => Body::None,
        };
        let think = match &s.think {
            None => Duration::ZERO,
            Some(t) => match humantime::parse_duration(t.get_ref().trim()) {
                Ok(d) if d <= Duration::from_secs(3600) => d,
                _ => {
                    self.errors.push(serr(
                        t.span(),
                        format!(
                            "think = \"{}\": expected a duration up to 1h, e.g. \"500ms\", \"2s\"",
                            benchlab_input::excerpt(t.get_ref())
                        ),
                    ));
                    Duration::ZERO
                }
            },
        };
        let mut captures = Vec::new();
        for (var, spec) in s.capture.iter().flat_map(|c| &c.get_ref().0) {
            match capture::parse(spec.get_ref()) {
                Ok(source) => {
                    if let Some(id) = self.vars.id(var) {
                        captures.push(Capture {
                            var: id,
                            name: var.as_str().into(),
                            source,
                        });
                    }
                }
                Err(e) => {
                    let at = spec.span().start + 1 + e.offset;
                    self.errors
                        .push(serr(at..at + 1, format!("capture `{var}`: {}", e.message)));
                }
            }
        }
        let (status, checks) = match &s.check {
            Some(c) => self.checks(c),
            None => (StatusSet::default_ok(), Vec::new()),
        };
        let header_rules = captures.iter().filter(|c| !c.source.needs_body()).count()
            + checks.iter().filter(|c| !c.needs_body()).count();
        if captures.len() + checks.len() > MAX_RULES || header_rules > MAX_RULES {
            self.errors.push(serr(
                name.span(),
                format!("more than {MAX_RULES} captures and checks in one step"),
            ));
        }
        let needs_json = captures.iter().any(|c| matches!(c.source, Source::Json(_)))
            || checks.iter().any(|c| matches!(c, Check::JsonEquals { .. }));
        let needs_body =
            needs_json || captures.iter().any(|c| c.source.needs_body()) || checks.iter().any(Check::needs_body);
        let Some(url) = url else { return };
        let index = self.flow.steps.len();
        self.flow.steps.push(Step {
            index,
            name: name.get_ref().clone(),
            method,
            url,
            origin: target.as_deref().map(|t| {
                let https = t.starts_with("https://");
                let authority = t.split_once("://").map_or(t, |(_, a)| a);
                crate::origin::Origin::new(authority, https)
            }),
            target,
            headers,
            has_cookie_header: false,
            body,
            think,
            captures,
            status,
            checks,
            needs_body,
            needs_json,
        });
        let st = &mut self.flow.steps[index];
        st.has_cookie_header = st.headers.iter().any(|h| h.is_cookie);
        self.flow.ops.push(Op::Request(index));
    }

    /// A body file's text as a template; its errors name the file's own
    /// line and column, at the flow's `body_file` line.
    fn body_template(&mut self, text: &str, path: &Path, span: Range<usize>) -> Body {
        let at = |offset| {
            let (l, c) = line_col(text, offset);
            format!("{}:{l}:{c}", path.display())
        };
        match Template::parse(text, Context::Raw) {
            Ok(mut t) => match t.resolve(&self.vars) {
                Ok(()) if t.is_literal() => Body::Static(t.literal().into()),
                Ok(()) => Body::Template(t),
                Err(errs) => {
                    for e in errs {
                        self.errors
                            .push(serr(span.clone(), format!("{}: {}", at(e.offset), e.message)));
                    }
                    Body::None
                }
            },
            Err(e) => {
                self.errors
                    .push(serr(span, format!("{}: template: {}", at(e.offset), e.message)));
                Body::None
            }
        }
    }

    fn checks(&mut self, c: &Spanned<CheckSpec>) -> (StatusSet, Vec<Check>) {
        let spec = c.get_ref();
        let mut checks = Vec::new();
        let status = match &spec.status {
            None => StatusSet::default_ok(),
            Some(s) => {
                let items: Vec<StatusItem> = match s.get_ref() {
                    OneOrMany::One(i) => vec![i.clone()],
                    OneOrMany::Many(v) => v.clone(),
                };
                if items.is_empty() {
                    self.errors
                        .push(serr(s.span(), "status = []: expected a status, a class or a range"));
                }
                let mut set = Vec::new();
                for item in items {
                    let text = match item {
                        StatusItem::Code(n) => n.to_string(),
                        StatusItem::Text(t) => t,
                    };
                    match StatusSet::parse_item(&text) {
                        Ok(r) => set.push(r),
                        Err(e) => self.errors.push(serr(s.span(), e)),
                    }
                }
                StatusSet(set)
            }
        };
        for (equals, table) in [(true, &spec.header), (false, &spec.header_contains)] {
            for (name, value) in table.iter().flat_map(|t| &t.0) {
                if !crate::capture::is_token(name) {
                    self.errors.push(serr(
                        value.span(),
                        format!("header `{}` is no header name", benchlab_input::excerpt(name)),
                    ));
                    continue;
                }
                let (name, value) = (name.to_ascii_lowercase().into(), value.get_ref().as_bytes().into());
                checks.push(if equals {
                    Check::HeaderEquals { name, value }
                } else {
                    Check::HeaderContains { name, value }
                });
            }
        }
        if let Some(b) = &spec.body_contains {
            let texts = match b.get_ref() {
                OneOrMany::One(t) => vec![t.clone()],
                OneOrMany::Many(v) => v.clone(),
            };
            for t in texts {
                let s = Spanned::new(b.span(), t);
                if let Some(t) = self.template(&s, Context::Raw) {
                    checks.push(Check::BodyContains(t));
                }
            }
        }
        for (pointer, value) in spec.json.iter().flat_map(|t| &t.0) {
            if let Err((_, m)) = capture::check_pointer(pointer) {
                self.errors.push(serr(
                    value.span(),
                    format!("json check `{}`: {m}", benchlab_input::excerpt(pointer)),
                ));
                continue;
            }
            let text = match value.get_ref() {
                toml::Value::String(s) => s.clone(),
                toml::Value::Integer(i) => i.to_string(),
                // As serde_json writes it, so `2.0` equals a body's 2.0.
                toml::Value::Float(f) => match serde_json::Number::from_f64(*f) {
                    Some(n) => n.to_string(),
                    None => f.to_string(),
                },
                toml::Value::Boolean(b) => b.to_string(),
                _ => {
                    self.errors.push(serr(
                        value.span(),
                        "a json check's value is a string, number or boolean",
                    ));
                    continue;
                }
            };
            let s = Spanned::new(value.span(), text);
            if let Some(t) = self.template(&s, Context::Raw) {
                checks.push(Check::JsonEquals {
                    pointer: pointer.as_str().into(),
                    value: t,
                });
            }
        }
        (status, checks)
    }
}

/// `text` as an origin (`http[s]://authority`, a trailing `/` dropped), or
/// `None` when it is none.
fn origin(text: &str) -> Option<String> {
    let t = text.trim().trim_end_matches('/');
    let rest = t.strip_prefix("http://").or_else(|| t.strip_prefix("https://"))?;
    let ok = !rest.is_empty()
        && rest
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b':' | b'[' | b']' | b'_'));
    ok.then(|| t.to_ascii_lowercase())
}

/// A flow as plain data: the TOML text of its `FlowSpec` and a copy of
/// every file it names (feeders, body files), so a client on another host
/// compiles the same flow without the controller's files.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, Deserialize)]
pub struct FlowSource {
    /// The flow's TOML (a flow file's keys at the top level).
    pub text: String,
    /// Where its relative file names are (the suite's directory), as the
    /// controller saw it: the copies are looked up by the joined path.
    pub base_dir: PathBuf,
    /// Each file by the path the flow joins, base64.
    pub files: BTreeMap<PathBuf, String>,
}

impl FlowSource {
    /// The flow in `text` with its files read (bounded) from `base_dir`.
    pub fn gather(text: String, base_dir: &Path) -> Result<FlowSource, String> {
        use base64::Engine as _;
        let spec = FlowSpec::from_toml(&text).map_err(|e| e.to_string())?;
        let mut files = BTreeMap::new();
        let mut read = |path: &Path, what: &'static str, limit: u64| {
            let bytes = benchlab_input::read_bounded(path, what, limit).map_err(|e| e.to_string())?;
            files.insert(
                path.to_path_buf(),
                base64::engine::general_purpose::STANDARD.encode(&bytes),
            );
            Ok(bytes)
        };
        match spec.compile_from(base_dir, &mut read) {
            Ok(_) => Ok(FlowSource {
                text,
                base_dir: base_dir.to_path_buf(),
                files,
            }),
            Err(errors) => Err(errors
                .iter()
                .map(|e| e.render("flow", &text))
                .collect::<Vec<_>>()
                .join("\n")),
        }
    }

    /// Compiles the flow from the copies (no file is read).
    pub fn compile(&self) -> Result<Flow, String> {
        use base64::Engine as _;
        let spec = FlowSpec::from_toml(&self.text).map_err(|e| e.to_string())?;
        let mut read = |path: &Path, _what: &'static str, _limit: u64| {
            let text = self
                .files
                .get(path)
                .ok_or_else(|| format!("{}: not among the flow's files", path.display()))?;
            base64::engine::general_purpose::STANDARD
                .decode(text)
                .map_err(|e| format!("{}: {e}", path.display()))
        };
        spec.compile_from(&self.base_dir, &mut read).map_err(|errors| {
            errors
                .iter()
                .map(|e| e.render("flow", &self.text))
                .collect::<Vec<_>>()
                .join("\n")
        })
    }
}

/// A header of a step.
#[derive(Debug, Clone)]
pub struct Header {
    pub name: Box<str>,
    pub value: Template,
    pub is_cookie: bool,
}

/// A step's body.
#[derive(Debug, Clone)]
pub enum Body {
    None,
    /// No variables: the same bytes each time, shared, never copied.
    Static(Arc<[u8]>),
    Template(Template),
}

/// A capture of a step.
#[derive(Debug, Clone)]
pub struct Capture {
    pub var: VarId,
    pub name: Box<str>,
    pub source: Source,
}

/// A request step, compiled.
#[derive(Debug, Clone)]
pub struct Step {
    /// Its index in [`Flow::steps`] (the engine's counter index).
    pub index: usize,
    pub name: String,
    pub method: String,
    pub url: Template,
    /// The origin it goes to when not the workload's (`https://host:port`).
    pub target: Option<String>,
    /// That origin as its cookies see it.
    pub origin: Option<crate::origin::Origin>,
    pub headers: Vec<Header>,
    pub has_cookie_header: bool,
    pub body: Body,
    /// The pause after its response, before the next step.
    pub think: Duration,
    pub captures: Vec<Capture>,
    pub status: StatusSet,
    pub checks: Vec<Check>,
    /// The engine keeps the body (up to [`crate::MAX_CAPTURE_BODY`]) only
    /// for steps that say so.
    pub needs_body: bool,
    pub needs_json: bool,
}

/// The walk through a flow, as ops.
#[derive(Debug, Clone)]
pub(crate) enum Op {
    Request(usize),
    /// Starts a group repeated `count` times; its `EndRepeat` follows the
    /// group.
    Repeat {
        count: u32,
    },
    EndRepeat {
        start: usize,
    },
    /// Draws below `total`; the first arm whose cumulative weight is above
    /// the draw starts at its op.
    Branch {
        arms: Box<[(u64, usize)]>,
        total: u64,
    },
    Jump(usize),
}

/// A compiled flow, shared by the users of a run (its feeders' cursors are
/// the run's).
#[derive(Debug, Default)]
pub struct Flow {
    pub(crate) steps: Vec<Step>,
    pub(crate) ops: Vec<Op>,
    /// Each feeder and its columns' variables.
    pub(crate) feeders: Vec<(Feeder, Vec<(usize, VarId)>)>,
    pub(crate) vars: VarTable,
    pub(crate) capture_vars: Vec<VarId>,
    pub(crate) depth: usize,
}

impl Flow {
    /// The request steps, in order; a step's index is its position.
    pub fn steps(&self) -> &[Step] {
        &self.steps
    }

    /// The variables (feeder columns, then captures).
    pub fn vars(&self) -> &VarTable {
        &self.vars
    }

    pub fn feeders(&self) -> impl Iterator<Item = &Feeder> {
        self.feeders.iter().map(|(f, _)| f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir_with(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (name, text) in files {
            std::fs::write(dir.path().join(name), text).unwrap();
        }
        dir
    }

    const SHOP: &str = r#"
[[feeders]]
file = "users.csv"
mode = "next"
on_end = "loop"

[[steps]]
name = "home"
url = "/"
think = "1s"
capture = { csrf = 'regex:name="csrf" value="([^"]+)"' }

[[steps]]
name = "login"
method = "post"
url = "/login"
headers = { "Content-Type" = "application/x-www-form-urlencoded", "X-Csrf" = "{{csrf}}" }
body = "user={{user}}&pass={{pass}}"
capture = { session = "cookie:session" }
check = { status = [200, "3xx"] }

[[steps]]
repeat = 2
steps = [
  { name = "add", method = "POST", url = "/cart?user={{ user }}", body_file = "item.json", check = { json = { "/ok" = true, "/price" = 2.0 } } },
]

[[steps]]
branch = [
  { weight = 3, steps = [{ name = "checkout", url = "/checkout", check = { body_contains = "Thank you, {{user}}" } }] },
  { weight = 1, steps = [{ name = "leave", url = "/bye" }] },
]
"#;

    #[test]
    fn compiles_a_shop_flow() {
        let dir = dir_with(&[
            ("users.csv", "user,pass\nann,a1\nbob,b2\n"),
            ("item.json", "{\"sku\": \"{{user}}-1\"}"),
        ]);
        let flow = FlowSpec::from_toml(SHOP).unwrap().compile(dir.path()).unwrap();
        let names: Vec<(usize, &str, &str)> = flow
            .steps()
            .iter()
            .map(|s| (s.index, s.name.as_str(), s.method.as_str()))
            .collect();
        assert_eq!(
            names,
            [
                (0, "home", "GET"),
                (1, "login", "POST"),
                (2, "add", "POST"),
                (3, "checkout", "GET"),
                (4, "leave", "GET")
            ]
        );
        let vars: Vec<&str> = (0..flow.vars().len()).map(|i| flow.vars().name(i as VarId)).collect();
        assert_eq!(vars, ["user", "pass", "csrf", "session"]);
        assert_eq!(flow.steps()[0].think, Duration::from_secs(1));
        assert!(flow.steps()[0].needs_body && !flow.steps()[0].needs_json);
        assert!(flow.steps()[2].needs_json);
        assert!(!flow.steps()[1].needs_body);
        assert_eq!(flow.steps()[1].status, StatusSet(vec![(200, 200), (300, 399)]));
        let headers: Vec<&str> = flow.steps()[1].headers.iter().map(|h| &*h.name).collect();
        assert_eq!(headers, ["Content-Type", "X-Csrf"], "in the file's order");
        assert!(matches!(flow.steps()[2].body, Body::Template(_)));
        // A body file that is not UTF-8 goes as it is, `{{` and all.
        std::fs::write(dir.path().join("item.json"), b"\xff{{user}}\x00").unwrap();
        let flow = FlowSpec::from_toml(SHOP).unwrap().compile(dir.path()).unwrap();
        assert!(matches!(&flow.steps()[2].body, Body::Static(b) if &b[..] == b"\xff{{user}}\x00"));
        assert!(matches!(flow.steps()[1].body, Body::Template(_)));
    }

    /// The example of docs/flows.md reads and compiles.
    #[test]
    fn the_documented_example_compiles() {
        let doc = include_str!("../../../docs/flows.md");
        let start = doc.find("```toml\n").expect("a toml block") + "```toml\n".len();
        let text = &doc[start..start + doc[start..].find("```").expect("its end")];
        let dir = dir_with(&[
            ("users.csv", "user,password,sku\nann,pw,S-1\n"),
            ("item.json", "{\"sku\": \"{{sku}}\", \"csrf\": \"{{csrf}}\"}"),
        ]);
        let flow = FlowSpec::from_toml(text)
            .map_err(|e| e.render("flows.md", text))
            .unwrap()
            .compile(dir.path())
            .map_err(|es| es.iter().map(|e| e.render("flows.md", text)).collect::<Vec<_>>())
            .unwrap();
        let names: Vec<&str> = flow.steps().iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["home", "login", "add", "checkout", "leave"]);
    }

    /// Every error names the line of what is wrong.
    #[test]
    fn errors_name_the_line() {
        let dir = dir_with(&[("users.csv", "user\nann\n"), ("bad.json", "{\"a\": \"{{nope}}\"}")]);
        let head = "[[feeders]]\nfile = \"users.csv\"\n\n";
        let cases: &[(&str, usize, &str)] = &[
            (
                "[[steps]]\nname = \"a\"\nurl = \"/x/{{user}}/{{cart}}\"\n",
                6,
                "unknown variable `cart`",
            ),
            (
                "[[steps]]\nname = \"a\"\nurl = \"/\"\nheaders = { X = \"{{ nope }}\" }\n",
                7,
                "unknown variable `nope`",
            ),
            (
                "[[steps]]\nname = \"a\"\nurl = \"/\"\nbody = \"{{x\"\n",
                7,
                "not closed",
            ),
            (
                "[[steps]]\nbranch = [\n  { steps = [{ name = \"a\", url = \"/\" }] },\n]\n",
                6,
                "no `weight`",
            ),
            (
                "[[steps]]\nbranch = [\n  { weight = 0, steps = [{ name = \"a\", url = \"/\" }] },\n]\n",
                6,
                "weight = 0",
            ),
            (
                "[[steps]]\nrepeat = 0\nsteps = [{ name = \"a\", url = \"/\" }]\n",
                5,
                "repeat = 0",
            ),
            ("[[steps]]\nrepeat = 2\nsteps = []\n", 6, "a repeat with no steps"),
            ("[[steps]]\nrepeat = 2\n", 5, "needs `steps`"),
            ("[[steps]]\nrepeat = 2\nsteps = [{}]\n", 6, "needs a `name`"),
            ("[[steps]]\nbranch = []\n", 5, "a branch with no arms"),
            (
                "[[steps]]\nbranch = [{ weight = 1, steps = [] }]\n",
                5,
                "a branch arm with no steps",
            ),
            (
                "[[steps]]\nsteps = [{ name = \"a\", url = \"/\" }]\n",
                5,
                "without `repeat`",
            ),
            (
                "[[steps]]\nname = \"a\"\nurl = \"/\"\ncapture = { t = \"body:x\" }\n",
                7,
                "unknown capture kind `body`",
            ),
            (
                "[[steps]]\nname = \"a\"\nurl = \"/\"\ncapture = { t = \"json:x\" }\n",
                7,
                "starts with `/`",
            ),
            ("[[steps]]\nurl = \"/\"\n", 5, "needs a `name`"),
            ("[[steps]]\nname = \"a\"\n", 5, "has no `url`"),
            ("[[steps]]\nname = \"a\"\nurl = \"x\"\n", 6, "starting with `/`"),
            ("[[steps]]\nname = \"a\"\nurl = \"/a b/{{ user }}\"\n", 6, "no spaces"),
            (
                "[[steps]]\nname = \"a\"\nurl = \"/\"\n[[steps]]\nname = \"a\"\nurl = \"/b\"\n",
                8,
                "named twice",
            ),
            (
                "[[steps]]\nname = \"a\"\nurl = \"/\"\nbody = \"x\"\nbody_file = \"b\"\n",
                8,
                "keep one",
            ),
            (
                "[[steps]]\nname = \"a\"\nurl = \"/\"\nbody_file = \"bad.json\"\n",
                7,
                "bad.json:1:8: unknown variable `nope`",
            ),
            (
                "[[steps]]\nname = \"a\"\nurl = \"/\"\nbody_file = \"none.json\"\n",
                7,
                "cannot read",
            ),
            (
                "[[steps]]\nname = \"a\"\nurl = \"/\"\nthink = \"soon\"\n",
                7,
                "think = \"soon\"",
            ),
            (
                "[[steps]]\nname = \"a\"\nurl = \"/\"\ncheck = { status = \"7xx\" }\n",
                7,
                "no status",
            ),
            (
                "[[steps]]\nname = \"a\"\nurl = \"/\"\ncheck = { json = { \"a\" = 1 } }\n",
                7,
                "starts with `/`",
            ),
            (
                "[[steps]]\nname = \"a\"\nurl = \"/\"\nmethod = \"GE T\"\n",
                7,
                "a method is a token",
            ),
            (
                "[[steps]]\nname = \"a\"\nurl = \"/\"\nrepeat = 2\n",
                6,
                "`url` in a repeat",
            ),
            (
                "[[steps]]\nname = \"a\"\nurl = \"/\"\ncapture = { \"1x\" = \"header:X\" }\n",
                7,
                "no variable name",
            ),
        ];
        for (steps, line, msg) in cases {
            let text = format!("{head}{steps}");
            let errors = FlowSpec::from_toml(&text).unwrap().validate(dir.path());
            let rendered: Vec<String> = errors.iter().map(|e| e.render("f.toml", &text)).collect();
            assert!(
                rendered
                    .iter()
                    .any(|e| e.starts_with(&format!("f.toml:{line}:")) && e.contains(msg)),
                "{steps:?}: want line {line} {msg:?}, got {rendered:?}"
            );
        }
    }

    #[test]
    fn toml_errors_name_the_line() {
        let cases: &[(&str, usize, &str)] = &[
            (
                "[[steps]]\nname = \"a\"\nurl = \"/\"\nmethd = \"GET\"\n",
                4,
                "unknown field `methd`",
            ),
            (
                "[[feeders]]\nfile = \"u.csv\"\nmode = \"sometimes\"\n[[steps]]\nname = \"a\"\nurl = \"/\"\n",
                3,
                "unknown variant",
            ),
            (
                "[[feeders]]\nfile = \"u.csv\"\non_end = \"wrap\"\n[[steps]]\nname = \"a\"\nurl = \"/\"\n",
                3,
                "unknown variant",
            ),
            ("name = 1\n", 1, ""),
        ];
        for (text, line, msg) in cases {
            let e = FlowSpec::from_toml(text).unwrap_err();
            let r = e.render("f.toml", text);
            assert!(
                r.starts_with(&format!("f.toml:{line}:")) && r.contains(msg),
                "{text:?}: {r}"
            );
        }
    }

    #[test]
    fn feeder_errors_name_the_feeder_line() {
        let dir = dir_with(&[
            ("a.csv", "user\nann\n"),
            ("b.csv", "user\nbob\n"),
            ("c.csv", "x,y\n1\n"),
        ]);
        let text = "[[feeders]]\nfile = \"a.csv\"\n[[feeders]]\nfile = \"b.csv\"\n[[feeders]]\nfile = \"c.csv\"\n[[steps]]\nname = \"a\"\nurl = \"/\"\n";
        let errors = FlowSpec::from_toml(text).unwrap().validate(dir.path());
        let rendered: Vec<String> = errors.iter().map(|e| e.render("f.toml", text)).collect();
        assert_eq!(rendered.len(), 2, "{rendered:?}");
        assert!(
            rendered[0].starts_with("f.toml:4:") && rendered[0].contains("column `user` is also a column"),
            "{rendered:?}"
        );
        assert!(
            rendered[1].starts_with("f.toml:6:") && rendered[1].contains("c.csv: line 2: 1 fields"),
            "{rendered:?}"
        );
    }

    #[test]
    fn a_flow_source_carries_its_files_and_compiles_without_them() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("users.csv"), "user\nann\n").unwrap();
        std::fs::write(dir.path().join("body.json"), "{\"u\": \"{{user}}\"}").unwrap();
        let text = r#"
feeders = [{ file = "users.csv" }]
steps = [{ name = "a", method = "POST", url = "/a", body_file = "body.json", target = "https://Shop.example:8443/" }]
"#;
        let source = FlowSource::gather(text.to_string(), dir.path()).unwrap();
        assert_eq!(source.files.len(), 2);
        std::fs::remove_file(dir.path().join("users.csv")).unwrap();
        std::fs::remove_file(dir.path().join("body.json")).unwrap();
        let back: FlowSource = serde_json::from_str(&serde_json::to_string(&source).unwrap()).unwrap();
        let flow = back.compile().unwrap();
        assert_eq!(flow.steps()[0].target.as_deref(), Some("https://shop.example:8443"));
        let mut user = crate::FlowUser::new(std::sync::Arc::new(flow), 0, 1, crate::Origin::new("x", false));
        let mut req = crate::RequestBuf::new();
        user.next_request(&mut req).unwrap();
        assert_eq!(req.body(), Some(&b"{\"u\": \"ann\"}"[..]));
        assert!(FlowSource::gather(
            "steps = [{ name = \"a\", url = \"/\", body_file = \"gone\" }]".into(),
            dir.path()
        )
        .unwrap_err()
        .contains("gone"));
    }
}
