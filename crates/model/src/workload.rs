//! Workloads: what is requested. Classes with percentages; a class holds
//! URLs with weights, or draws from a file set's manifest with a popularity
//! law (the manifest's own weights, Zipf over its order, or uniform).
//!
//! ```toml
//! name = "mixed"
//! [[class]]
//! name = "static"
//! percent = 70
//! [class.fileset]
//! name = "specweb99"          # resolved with `--fileset specweb99=DIR` or the suite's [filesets]
//! popularity = "manifest"     # manifest | zipf | uniform
//! top = 700                   # keep the 700 most popular files
//! [[class]]
//! name = "adrot"
//! percent = 30
//! kind = "dynamic"
//! spi = "inproc"
//! [class.fileset]
//! name = "specweb99"
//! prefix = "/spice/inproc/adrot"
//! ```

use crate::error::{ModelError, ResolveError, Source};
use crate::input::excerpt;
use crate::urlfile::UrlFile;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use toml::Spanned;

/// What kind of request a class makes (reports group by it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum ClassKind {
    #[default]
    Static,
    /// Through an SPI (`spi` names it).
    Dynamic,
    /// Over TLS connections.
    Tls,
}

impl ClassKind {
    pub fn name(self) -> &'static str {
        match self {
            ClassKind::Static => "static",
            ClassKind::Dynamic => "dynamic",
            ClassKind::Tls => "tls",
        }
    }
}

/// What a response of the class is checked against besides its status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Validate {
    Status,
    Size,
    Checksum,
}

/// How a file-set class spreads its requests over the manifest's files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Popularity {
    /// The manifest's request weights (SPECweb99's class × file × Zipf).
    #[default]
    Manifest,
    /// Zipf over the manifest's order: file r (from 1) has weight 1/r^s.
    Zipf,
    Uniform,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawWorkload {
    pub name: Option<String>,
    pub description: Option<String>,
    #[serde(rename = "class", default)]
    pub classes: Vec<Spanned<RawClass>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawClass {
    pub name: String,
    pub percent: Spanned<f64>,
    #[serde(default)]
    pub kind: ClassKind,
    pub spi: Option<String>,
    pub expect_status: Option<u16>,
    pub validate: Option<Validate>,
    /// Base URL for this class (e.g. `https://127.0.0.1:8443` for TLS).
    pub target: Option<String>,
    /// `"1.1"` or `"2"`.
    pub http: Option<Spanned<String>>,
    #[serde(rename = "url", default)]
    pub urls: Vec<Spanned<RawUrl>>,
    pub fileset: Option<Spanned<RawFileset>>,
    /// A file of URLs, one a line (`urlfile.rs`), beside the workload.
    pub url_file: Option<Spanned<String>>,
    // What the class's requests say beyond GET (each URL may override);
    // fields of their own, not a flattened struct: serde's flatten would
    // lose `deny_unknown_fields`, and a misspelt key must be refused.
    pub method: Option<Spanned<String>>,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    pub body: Option<String>,
    pub body_file: Option<Spanned<String>>,
    pub chunked: Option<bool>,
}

/// `method`, `headers`, `body` / `body_file` and `chunked`, of a class or
/// of one URL.
#[derive(Debug, Default)]
pub(crate) struct RawRequest {
    pub method: Option<Spanned<String>>,
    pub headers: BTreeMap<String, String>,
    pub body: Option<String>,
    pub body_file: Option<Spanned<String>>,
    pub chunked: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawUrl {
    /// A path (joined to the target) or a whole `http(s)://` URL.
    pub path: String,
    #[serde(default = "one")]
    pub weight: f64,
    pub size: Option<u64>,
    pub method: Option<Spanned<String>>,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    pub body: Option<String>,
    pub body_file: Option<Spanned<String>>,
    pub chunked: Option<bool>,
}

fn one() -> f64 {
    1.0
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawFileset {
    /// Name of the file set (resolved to a directory at run time).
    pub name: String,
    #[serde(default)]
    pub popularity: Popularity,
    /// Zipf exponent for `popularity = "zipf"`.
    pub zipf: Option<f64>,
    /// Keep only the N most popular files.
    pub top: Option<usize>,
    /// Prepended to each manifest path (dynamic classes: `/spice/<spi>/adrot`).
    #[serde(default)]
    pub prefix: String,
    /// Keep only manifest entries of these manifest classes.
    pub classes: Option<Vec<String>>,
    /// Query string added to every URL (e.g. `ms=3000` for SPICE sleep).
    #[serde(default)]
    pub query: String,
}

/// A workload, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Workload {
    pub name: String,
    pub description: String,
    /// A flow workload's classes are its steps, in order (each a GET of
    /// `/` for what needs a class: the flow says what is sent).
    pub classes: Vec<Class>,
    /// A flow (docs/flows.md): every virtual user walks its steps.
    pub flow: Option<FlowWorkload>,
}

/// A flow workload: the flow as a client receives it, and its steps.
#[derive(Debug, Clone, PartialEq)]
pub struct FlowWorkload {
    /// The flow's TOML and a copy of every file it names.
    pub source: benchlab_flow::FlowSource,
    /// Each step's name (its results' class) and its origin when the
    /// step names one (`target = "https://…"`).
    pub steps: Vec<(String, Option<String>)>,
}

/// Checks a suite's `[workloads.KEY.flow]`: every error of the flow with
/// its place in the suite, then the flow as plain data for the clients
/// (its TOML text again, and its files read once, relative to `dir`).
pub(crate) fn flow_workload(
    src: &Source,
    key: &str,
    at: usize,
    spec: benchlab_flow::FlowSpec,
    name: Option<String>,
    description: Option<String>,
    dir: &Path,
) -> Result<Workload, ModelError> {
    let compiled = spec.compile(dir).map_err(|errors| {
        let first = errors.first().map_or(at, |e| e.span.start);
        let mut message = format!(
            "workload `{key}`: {}",
            errors.first().map_or("invalid flow".to_string(), |e| e.message.clone())
        );
        for e in errors.iter().skip(1).take(9) {
            message.push_str(&format!("\n{}", e.render(&src.path.display().to_string(), &src.text)));
        }
        src.error_at(first, message)
    })?;
    // The flow table alone, as the TOML a client compiles.
    let table: toml::Table = toml::from_str(&src.text).map_err(|e| src.error(e.to_string()))?;
    let text = table
        .get("workloads")
        .and_then(|w| w.get(key))
        .and_then(|w| w.get("flow"))
        .and_then(|f| f.as_table())
        // Each key on a line of its own, its value inline: every table
        // then has a place (a header-less table written by `to_string`
        // would be implied by its sub-tables' headers and have none).
        .map(|f| {
            f.iter()
                .map(|(k, v)| format!("{} = {v}\n", toml::Value::from(k.as_str())))
                .collect::<String>()
        })
        .ok_or_else(|| {
            src.error_at(
                at,
                format!("workload `{key}`: its flow could not be written back as TOML"),
            )
        })?;
    let source =
        benchlab_flow::FlowSource::gather(text, dir).map_err(|e| src.error_at(at, format!("workload `{key}`: {e}")))?;
    let steps: Vec<(String, Option<String>)> = compiled
        .steps()
        .iter()
        .map(|s| (s.name.clone(), s.target.clone()))
        .collect();
    let classes = steps
        .iter()
        .map(|(name, target)| Class {
            name: name.clone(),
            percent: 100.0 / steps.len() as f64,
            kind: ClassKind::Static,
            spi: None,
            expect_status: 200,
            validate: Some(Validate::Status),
            target: target.clone(),
            source: UrlSource::List(vec![UrlEntry {
                path: "/".into(),
                weight: 1.0,
                size: None,
                place: None,
                request: None,
            }]),
            http2: false,
            http3: false,
            request: None,
        })
        .collect();
    Ok(Workload {
        name: name.unwrap_or_else(|| key.to_string()),
        description: description.unwrap_or_default(),
        classes,
        flow: Some(FlowWorkload { source, steps }),
    })
}

/// A request class, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Class {
    pub name: String,
    pub percent: f64,
    pub kind: ClassKind,
    pub spi: Option<String>,
    pub expect_status: u16,
    /// `None`: size when known (listed or from a manifest), else status.
    pub validate: Option<Validate>,
    pub target: Option<String>,
    pub source: UrlSource,
    /// `http = "2"`: this class's requests go over HTTP/2, whatever the
    /// mix's protocol (docs/connections.md, "HTTP/2").
    pub http2: bool,
    /// `http = "3"`: over HTTP/3 (`http2` is then true too: the streams
    /// and connections are HTTP/2's; docs/http3.md).
    pub http3: bool,
    /// What its requests say beyond a plain GET (`None`: a plain GET).
    pub request: Option<Request>,
}

/// A request's method, headers and body, as a suite's class or URL says
/// them (docs/running.md, "Requests beyond GET").
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Request {
    /// `None`: GET, or POST with a body.
    pub method: Option<String>,
    pub headers: Vec<(String, String)>,
    pub body: Option<Body>,
    pub chunked: bool,
}

/// A request body: written in the suite, or a file (its path made
/// absolute against the suite's or workload's directory; read, with a
/// bound, when the phase is resolved).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Body {
    Text(String),
    File(PathBuf),
}

impl Request {
    /// The method sent: the one given, else POST with a body, else GET.
    pub fn method(&self) -> &str {
        match (&self.method, &self.body) {
            (Some(m), _) => m,
            (None, Some(_)) => "POST",
            (None, None) => "GET",
        }
    }

    /// This request with `over`'s fields where it gives them: its method,
    /// body and chunked; its headers after these, replacing the same names.
    pub fn merged(&self, over: &Request) -> Request {
        let mut headers: Vec<(String, String)> = self
            .headers
            .iter()
            .filter(|(n, _)| !over.headers.iter().any(|(o, _)| o.eq_ignore_ascii_case(n)))
            .cloned()
            .collect();
        headers.extend(over.headers.iter().cloned());
        Request {
            method: over.method.clone().or_else(|| self.method.clone()),
            headers,
            body: over.body.clone().or_else(|| self.body.clone()),
            chunked: over.chunked || self.chunked,
        }
    }
}

/// Checks a raw request's fields; errors point into `src`.
fn check_request(raw: RawRequest, src: &Source, at: usize) -> Result<Option<Request>, ModelError> {
    let RawRequest {
        method,
        headers,
        body,
        body_file,
        chunked,
    } = raw;
    let given = method.is_some() || !headers.is_empty() || body.is_some() || body_file.is_some() || chunked.is_some();
    if !given {
        return Ok(None);
    }
    let method = match method {
        Some(m) => {
            let text = m.get_ref().trim().to_string();
            if text.is_empty()
                || !text
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
            {
                return Err(src.error_at(
                    m.span().start,
                    format!(
                        "method `{}`: expected a method name such as GET, POST, PUT or DELETE",
                        excerpt(&text)
                    ),
                ));
            }
            Some(text)
        }
        None => None,
    };
    for (n, v) in &headers {
        let ok = !n.is_empty() && n.bytes().all(|b| b.is_ascii_graphic() && b != b':');
        if !ok || v.contains(['\r', '\n']) {
            return Err(src.error_at(
                at,
                format!("header `{}`: expected a name and a value on one line", excerpt(n)),
            ));
        }
        if n.eq_ignore_ascii_case("content-length") || n.eq_ignore_ascii_case("transfer-encoding") {
            return Err(src.error_at(
                at,
                format!("header `{n}`: benchlab frames the body itself (Content-Length from the body, or chunked = true); drop the header"),
            ));
        }
    }
    let body = match (body, body_file) {
        (Some(_), Some(f)) => {
            return Err(src.error_at(f.span().start, "both body and body_file: expected one of them"));
        }
        (Some(t), None) => Some(Body::Text(t)),
        (None, Some(f)) => {
            let dir = src.path.parent().unwrap_or(Path::new("."));
            Some(Body::File(dir.join(f.get_ref())))
        }
        (None, None) => None,
    };
    let chunked = chunked.unwrap_or(false);
    if chunked && body.is_none() {
        return Err(src.error_at(at, "chunked = true frames a body: expected body or body_file"));
    }
    Ok(Some(Request {
        method,
        headers: headers.into_iter().collect(),
        body,
        chunked,
    }))
}

/// Why a class's URLs stopped coming: the class could not be resolved, or
/// the caller stopped.
enum Stop<E> {
    Resolve(ResolveError),
    Caller(E),
}

impl<E> From<ResolveError> for Stop<E> {
    fn from(e: ResolveError) -> Self {
        Stop::Resolve(e)
    }
}

impl<E> From<benchlab_fileset::ManifestError> for Stop<E> {
    fn from(e: benchlab_fileset::ManifestError) -> Self {
        Stop::Resolve(e.into())
    }
}

/// Where a class's URLs come from.
#[derive(Debug, Clone, PartialEq)]
pub enum UrlSource {
    List(Vec<UrlEntry>),
    Fileset(FilesetDraw),
    /// A large workload's URLs, in a file of their own read as they are
    /// loaded (`url_file`, docs/workloads.md).
    File(UrlFile),
}

#[derive(Debug, Clone, PartialEq)]
pub struct UrlEntry {
    pub path: String,
    pub weight: f64,
    pub size: Option<u64>,
    /// Where an absolute URL (`http://…`) was written, so that a target it
    /// is not on can be refused at its line once the suite's targets are
    /// known ([`crate::Suite::check_url_hosts`]); `None` for a path.
    pub place: Option<Place>,
    /// This URL's own method, headers or body (over its class's).
    pub request: Option<Request>,
}

/// A place in a suite or workload file, kept past parsing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    pub file: PathBuf,
    pub line: usize,
    pub column: usize,
}

impl Place {
    pub fn error(&self, message: impl Into<String>) -> ModelError {
        ModelError {
            file: self.file.clone(),
            line: Some(self.line),
            column: Some(self.column),
            message: message.into(),
        }
    }
}

/// The origin of an absolute `http://` or `https://` URL: scheme, host
/// (lower case, IPv6 in brackets) and port (the scheme's default when none
/// is written), which is what decides where its requests go. `None` for
/// anything else.
pub fn origin(url: &str) -> Option<(&'static str, String, u16)> {
    let (scheme, rest, default) = if let Some(r) = strip_prefix_ci(url, "http://") {
        ("http", r, 80)
    } else if let Some(r) = strip_prefix_ci(url, "https://") {
        ("https", r, 443)
    } else {
        return None;
    };
    let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    // Credentials (`user:pass@`) are not where the request goes.
    let hostport = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let (host, port) = match hostport.strip_prefix('[') {
        Some(v6) => {
            let (h, after) = v6.split_once(']')?;
            (format!("[{}]", h.to_ascii_lowercase()), after.strip_prefix(':'))
        }
        None => match hostport.rsplit_once(':') {
            Some((h, p)) => (h.to_ascii_lowercase(), Some(p)),
            None => (hostport.to_ascii_lowercase(), None),
        },
    };
    if host.is_empty() {
        return None;
    }
    let port = match port {
        None | Some("") => default,
        Some(p) => p.parse().ok()?,
    };
    Some((scheme, host, port))
}

fn strip_prefix_ci<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    (s.len() >= prefix.len() && s.is_char_boundary(prefix.len()) && s[..prefix.len()].eq_ignore_ascii_case(prefix))
        .then(|| &s[prefix.len()..])
}

#[derive(Debug, Clone, PartialEq)]
pub struct FilesetDraw {
    pub name: String,
    pub popularity: Popularity,
    pub zipf: f64,
    pub top: Option<usize>,
    pub prefix: String,
    pub classes: Option<Vec<String>>,
    pub query: String,
}

/// One URL of a resolved class: what the engine loads.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedUrl {
    /// Whole URL.
    pub url: String,
    /// Share of the class's requests (the class's weights sum to 1).
    pub weight: f64,
    pub size: Option<u64>,
    pub xxh3: Option<u64>,
    /// For a URL from a file set: its share of the whole set's requests
    /// (manifest weight ÷ the manifest's total), whatever the class draws.
    pub population_share: Option<f64>,
    /// Its method, headers and body (`None`: a plain GET).
    pub request: Option<Request>,
}

impl Workload {
    /// Parses a workload from its own file.
    pub fn from_file(path: &Path) -> Result<Workload, ModelError> {
        let src = Source::read_bounded(path, "workload", crate::input::MAX_WORKLOAD_BYTES)?;
        let raw: RawWorkload = src.parse()?;
        let default_name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        Workload::check(raw, &src, &default_name, src.text.len())
    }

    /// Checks a parsed workload; errors point into `src`, a workload without
    /// classes at byte `at` (its table, or the end of its own file).
    pub(crate) fn check(raw: RawWorkload, src: &Source, default_name: &str, at: usize) -> Result<Workload, ModelError> {
        if raw.classes.is_empty() {
            return Err(src.error_at(
                at,
                format!(
                    "workload `{}` has no [[class]]: expected at least one class with a percent and URLs or a fileset",
                    raw.name.as_deref().unwrap_or(default_name)
                ),
            ));
        }
        let first_class_at = raw.classes[0].span().start;
        let mut classes = Vec::new();
        let mut total = 0.0;
        let mut names = BTreeMap::new();
        for c in raw.classes {
            let at = c.span().start;
            let c = c.into_inner();
            if names.insert(c.name.clone(), ()).is_some() {
                return Err(src.error_at(at, format!("class `{}` is defined twice", excerpt(&c.name))));
            }
            let p = *c.percent.get_ref();
            if !(p > 0.0 && p <= 100.0) {
                return Err(src.error_at(
                    c.percent.span().start,
                    format!(
                        "class `{}`: percent {p} is out of range: expected more than 0 and at most 100",
                        c.name
                    ),
                ));
            }
            total += p;
            if c.kind == ClassKind::Dynamic && c.spi.is_none() {
                return Err(src.error_at(
                    at,
                    format!("class `{}` is dynamic: expected `spi = \"...\"` naming its SPI", c.name),
                ));
            }
            if let Some(uf) = &c.url_file {
                if !c.urls.is_empty() || c.fileset.is_some() {
                    return Err(src.error_at(
                        uf.span().start,
                        format!(
                            "class `{}` has url_file and [[class.url]] or [class.fileset]: expected one of them",
                            c.name
                        ),
                    ));
                }
            }
            let source = match (c.urls.is_empty(), c.fileset) {
                _ if c.url_file.is_some() => {
                    let uf = c.url_file.as_ref().map(|u| (u.span().start, u.get_ref().as_str()));
                    let (uat, name) = uf.unwrap_or((at, ""));
                    // Beside the file that names it.
                    let path = src.path.parent().unwrap_or(Path::new(".")).join(name);
                    let file = UrlFile::check(&path).map_err(|e| {
                        if e.line.is_none() {
                            // Unreadable or empty: point at the key too.
                            src.error_at(uat, format!("url_file `{}`: {}", excerpt(name), e.message))
                        } else {
                            e
                        }
                    })?;
                    UrlSource::File(file)
                }
                (false, Some(f)) => {
                    return Err(src.error_at(
                        f.span().start,
                        format!(
                            "class `{}` has both [[class.url]] and [class.fileset]: expected one of them",
                            c.name
                        ),
                    ))
                }
                (true, None) => {
                    return Err(src.error_at(
                        at,
                        format!(
                            "class `{}` has no URLs: expected [[class.url]] entries or a [class.fileset]",
                            c.name
                        ),
                    ))
                }
                (false, None) => {
                    let mut list = Vec::with_capacity(c.urls.len());
                    for u in c.urls {
                        let uat = u.span().start;
                        let u = u.into_inner();
                        if !(u.weight > 0.0 && u.weight.is_finite()) {
                            return Err(
                                src.error_at(uat, format!("URL `{}`: weight must be above 0", excerpt(&u.path)))
                            );
                        }
                        if !(u.path.starts_with('/') || u.path.starts_with("http://") || u.path.starts_with("https://"))
                        {
                            return Err(src.error_at(
                                uat,
                                format!(
                                    "URL `{}`: expected a path starting with / or an http(s):// URL",
                                    excerpt(&u.path)
                                ),
                            ));
                        }
                        let place = if u.path.starts_with('/') {
                            None
                        } else {
                            let e = src.error_at(uat, "");
                            Some(Place {
                                file: e.file,
                                line: e.line.unwrap_or(1),
                                column: e.column.unwrap_or(1),
                            })
                        };
                        // A class that names its own target sends there:
                        // an absolute URL elsewhere would go to a host the
                        // suite never names as a target.
                        if let (Some(t), Some(p)) = (&c.target, &place) {
                            if origin(&u.path) != origin(t) {
                                return Err(p.error(format!(
                                    "class `{}`: URL `{}` is not on the class's target `{}`: expected a path \
                                     (a workload's URLs are paths on its target) or a URL on {}",
                                    c.name,
                                    crate::input::excerpt(&u.path),
                                    crate::input::excerpt(t),
                                    crate::input::excerpt(t)
                                )));
                            }
                        }
                        let raw = RawRequest {
                            method: u.method,
                            headers: u.headers,
                            body: u.body,
                            body_file: u.body_file,
                            chunked: u.chunked,
                        };
                        let request = check_request(raw, src, uat)?;
                        list.push(UrlEntry {
                            path: u.path,
                            weight: u.weight,
                            size: u.size,
                            place,
                            request,
                        });
                    }
                    UrlSource::List(list)
                }
                (true, Some(f)) => {
                    let fat = f.span().start;
                    let f = f.into_inner();
                    let zipf = f.zipf.unwrap_or(1.0);
                    if !(zipf.is_finite() && zipf >= 0.0) {
                        return Err(src.error_at(fat, format!("zipf exponent {zipf}: expected a number ≥ 0")));
                    }
                    if f.top == Some(0) {
                        return Err(src.error_at(fat, "top = 0 keeps no file: expected at least 1"));
                    }
                    if !f.prefix.is_empty() && !f.prefix.starts_with('/') {
                        return Err(src.error_at(fat, format!("prefix `{}` must start with /", excerpt(&f.prefix))));
                    }
                    UrlSource::Fileset(FilesetDraw {
                        name: f.name,
                        popularity: f.popularity,
                        zipf,
                        top: f.top,
                        prefix: f.prefix.trim_end_matches('/').to_string(),
                        classes: f.classes,
                        query: f.query.trim_start_matches('?').to_string(),
                    })
                }
            };
            let http3 = c.http.as_ref().is_some_and(|h| h.get_ref() == "3");
            let http2 = match c.http.as_ref().map(|h| (h, h.get_ref().as_str())) {
                None | Some((_, "1.1" | "1")) => false,
                Some((_, "2" | "3")) => true,
                Some((h, other)) => {
                    return Err(src.error_at(
                        h.span().start,
                        format!("http `{}`: expected \"1.1\", \"2\" or \"3\"", excerpt(other)),
                    ))
                }
            };
            let raw = RawRequest {
                method: c.method,
                headers: c.headers,
                body: c.body,
                body_file: c.body_file,
                chunked: c.chunked,
            };
            let request = check_request(raw, src, at)?;
            classes.push(Class {
                http2,
                http3,
                request,
                name: c.name,
                percent: p,
                kind: c.kind,
                spi: c.spi,
                expect_status: c.expect_status.unwrap_or(200),
                validate: c.validate,
                target: c.target,
                source,
            });
        }
        if (total - 100.0).abs() > 0.01 {
            let list: Vec<String> = classes.iter().map(|c| format!("{} {}", c.name, c.percent)).collect();
            return Err(src.error_at(
                first_class_at,
                format!(
                    "class percentages add up to {total}, expected 100 ({})",
                    list.join(" + ")
                ),
            ));
        }
        Ok(Workload {
            name: raw.name.unwrap_or_else(|| default_name.to_string()),
            description: raw.description.unwrap_or_default(),
            classes,
            flow: None,
        })
    }

    /// File sets the workload draws from.
    pub fn filesets(&self) -> Vec<&str> {
        let mut v: Vec<&str> = self
            .classes
            .iter()
            .filter_map(|c| match &c.source {
                UrlSource::Fileset(f) => Some(f.name.as_str()),
                UrlSource::List(_) | UrlSource::File(_) => None,
            })
            .collect();
        v.sort();
        v.dedup();
        v
    }
}

impl Class {
    /// [`Class::resolve`], a URL at a time: a URL file's URLs are read as
    /// they are handed to `f`, so a class of millions of URLs is never
    /// held as a list (issue 27).
    pub fn resolve_each<E: From<ResolveError>>(
        &self,
        target: &str,
        filesets: &BTreeMap<String, PathBuf>,
        mut f: impl FnMut(ResolvedUrl) -> Result<(), E>,
    ) -> Result<(), E> {
        let file = match &self.source {
            UrlSource::File(file) => file,
            UrlSource::Fileset(draw) => {
                return self.fileset_each(draw, target, filesets, f).map_err(|e| match e {
                    Stop::Resolve(r) => r.into(),
                    Stop::Caller(e) => e,
                })
            }
            UrlSource::List(_) => {
                for u in self.resolve(target, filesets)? {
                    f(u)?;
                }
                return Ok(());
            }
        };
        if !(file.total_weight > 0.0 && file.total_weight.is_finite()) {
            return Err(ResolveError::NoWeight {
                class: self.name.clone(),
            }
            .into());
        }
        let base = self.target.as_deref().unwrap_or(target).trim_end_matches('/');
        file.for_each(
            |u| {
                f(ResolvedUrl {
                    url: format!("{base}{}", u.path),
                    weight: u.weight / file.total_weight,
                    size: u.size,
                    xxh3: None,
                    population_share: None,
                    request: self.request.clone(),
                })
            },
            |e| ResolveError::UrlFile(Box::new(e)).into(),
        )
    }

    /// A file-set class's URLs, a URL at a time: the manifest is read a
    /// line at a time, twice (what matches and its weights, then the URLs),
    /// never held whole; with `top` only the drawn weights (16 bytes a
    /// file) and the kept URLs are held, to rank them.
    fn fileset_each<E>(
        &self,
        draw: &FilesetDraw,
        target: &str,
        filesets: &BTreeMap<String, PathBuf>,
        mut f: impl FnMut(ResolvedUrl) -> Result<(), E>,
    ) -> Result<(), Stop<E>> {
        let dir = filesets.get(&draw.name).ok_or_else(|| ResolveError::NoFilesetDir {
            class: self.name.clone(),
            fileset: draw.name.clone(),
        })?;
        let manifest = dir.join("manifest");
        let base = self.target.as_deref().unwrap_or(target).trim_end_matches('/');
        let wanted = |class: &str| draw.classes.as_ref().is_none_or(|cs| cs.iter().any(|c| c == class));
        let weight_of = |rank: usize, w: f64| match draw.popularity {
            Popularity::Manifest => w,
            Popularity::Uniform => 1.0,
            Popularity::Zipf => 1.0 / ((rank + 1) as f64).powf(draw.zipf),
        };
        // Pass 1: the files that match, the set's total weight, and the
        // drawn weights (their sum; with `top`, each with its rank).
        let (mut matching, mut population, mut total) = (0usize, 0.0, 0.0);
        let mut ranked: Vec<(f64, u32)> = Vec::new();
        benchlab_fileset::for_each_entry(&manifest, |e| {
            population += e.weight;
            if wanted(e.class) {
                let w = weight_of(matching, e.weight);
                if draw.top.is_some() {
                    ranked.push((w, matching as u32));
                } else if w > 0.0 {
                    total += w;
                }
                matching += 1;
            }
            Ok::<(), Stop<E>>(())
        })?;
        if matching == 0 {
            return Err(ResolveError::NoMatchingFiles {
                class: self.name.clone(),
                fileset: draw.name.clone(),
            }
            .into());
        }
        if let Some(top) = draw.top.filter(|&t| t > matching) {
            // Keeping fewer URLs than asked would silently change the
            // workload (e.g. 360 URLs for a suite that means 704).
            let of = match &draw.classes {
                Some(cs) => format!(" of class {}", cs.join(", ")),
                None => String::new(),
            };
            return Err(ResolveError::TooFewFiles {
                class: self.name.clone(),
                fileset: draw.name.clone(),
                dir: dir.display().to_string(),
                top,
                found: matching,
                of,
            }
            .into());
        }
        let resolved = |e: &benchlab_fileset::EntryRef<'_>, weight: f64| {
            let url = if draw.query.is_empty() {
                format!("{base}{}{}", draw.prefix, e.path)
            } else {
                format!("{base}{}{}?{}", draw.prefix, e.path, draw.query)
            };
            ResolvedUrl {
                url,
                weight,
                size: Some(e.size),
                xxh3: Some(e.xxh3),
                population_share: (population > 0.0).then(|| e.weight / population),
                request: self.request.clone(),
            }
        };
        let no_weight = || ResolveError::NoWeight {
            class: self.name.clone(),
        };
        let Some(top) = draw.top else {
            // Pass 2: the URLs in manifest order, shared out as read.
            if total.is_nan() || total <= 0.0 {
                return Err(no_weight().into());
            }
            let mut rank = 0;
            return benchlab_fileset::for_each_entry(&manifest, |e| {
                if !wanted(e.class) {
                    return Ok(());
                }
                let w = weight_of(rank, e.weight);
                rank += 1;
                if w > 0.0 {
                    f(resolved(&e, w / total)).map_err(Stop::Caller)?;
                }
                Ok(())
            });
        };
        // Most popular first; ties keep manifest order (stable sort).
        ranked.sort_by(|a, b| b.0.total_cmp(&a.0));
        ranked.truncate(top);
        let mut place: Vec<(u32, u32)> = ranked.iter().enumerate().map(|(p, &(_, r))| (r, p as u32)).collect();
        place.sort_unstable();
        let mut kept: Vec<Option<ResolvedUrl>> = vec![None; ranked.len()];
        let mut rank = 0u32;
        benchlab_fileset::for_each_entry(&manifest, |e| {
            if !wanted(e.class) {
                return Ok(());
            }
            if let Ok(i) = place.binary_search_by_key(&rank, |p| p.0) {
                kept[place[i].1 as usize] = Some(resolved(&e, ranked[place[i].1 as usize].0));
            }
            rank += 1;
            Ok::<(), Stop<E>>(())
        })?;
        let total: f64 = kept.iter().flatten().filter(|u| u.weight > 0.0).map(|u| u.weight).sum();
        if total.is_nan() || total <= 0.0 {
            return Err(no_weight().into());
        }
        for mut u in kept.into_iter().flatten().filter(|u| u.weight > 0.0) {
            u.weight /= total;
            f(u).map_err(Stop::Caller)?;
        }
        Ok(())
    }

    /// The class's URLs against base URL `target` (the class's own target
    /// wins), with weights summing to 1 and expected sizes/checksums.
    /// `filesets` maps file-set names to their directories.
    pub fn resolve(
        &self,
        target: &str,
        filesets: &BTreeMap<String, PathBuf>,
    ) -> Result<Vec<ResolvedUrl>, ResolveError> {
        let base = self.target.as_deref().unwrap_or(target).trim_end_matches('/');
        let join = |p: &str| {
            if p.starts_with("http://") || p.starts_with("https://") {
                p.to_string()
            } else {
                format!("{base}{p}")
            }
        };
        let mut out = match &self.source {
            UrlSource::File(_) => {
                let mut out = Vec::new();
                self.resolve_each(target, filesets, |u| {
                    out.push(u);
                    Ok::<(), ResolveError>(())
                })?;
                // Shared out as read: the weights sum to 1 already.
                return Ok(out);
            }
            UrlSource::List(list) => list
                .iter()
                .map(|u| ResolvedUrl {
                    url: join(&u.path),
                    weight: u.weight,
                    size: u.size,
                    xxh3: None,
                    population_share: None,
                    request: match (&self.request, &u.request) {
                        (Some(c), Some(o)) => Some(c.merged(o)),
                        (c, o) => o.clone().or_else(|| c.clone()),
                    },
                })
                .collect::<Vec<_>>(),
            UrlSource::Fileset(_) => {
                let mut out = Vec::new();
                self.resolve_each(target, filesets, |u| {
                    out.push(u);
                    Ok::<(), ResolveError>(())
                })?;
                // Normalised as drawn: the weights sum to 1 already.
                return Ok(out);
            }
        };
        let total: f64 = out.iter().map(|u| u.weight).sum();
        if total.is_nan() || total <= 0.0 {
            return Err(ResolveError::NoWeight {
                class: self.name.clone(),
            });
        }
        for u in &mut out {
            u.weight /= total;
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use benchlab_fileset::{Entry, Manifest};

    fn manifest_dir(weights: &[f64]) -> tempfile::TempDir {
        let d = tempfile::tempdir().expect("tempdir");
        let m = Manifest {
            params: vec![],
            entries: weights
                .iter()
                .enumerate()
                .map(|(i, w)| Entry {
                    path: format!("/f{i}.html"),
                    size: 100 + i as u64,
                    xxh3: i as u64,
                    class: if i % 2 == 0 { "even".into() } else { "odd".into() },
                    weight: *w,
                })
                .collect(),
        };
        std::fs::write(d.path().join("manifest"), m.to_text()).expect("write manifest");
        d
    }

    fn class(draw: FilesetDraw) -> Class {
        Class {
            name: "c".into(),
            percent: 100.0,
            kind: ClassKind::Static,
            spi: None,
            expect_status: 200,
            validate: None,
            target: None,
            source: UrlSource::Fileset(draw),
            http2: false,
            http3: false,
            request: None,
        }
    }

    fn draw(popularity: Popularity) -> FilesetDraw {
        FilesetDraw {
            name: "set".into(),
            popularity,
            zipf: 1.0,
            top: None,
            prefix: String::new(),
            classes: None,
            query: String::new(),
        }
    }

    #[test]
    fn zipf_top_prefix_and_query() {
        let d = manifest_dir(&[0.1, 0.2, 0.3, 0.4]);
        let sets = BTreeMap::from([("set".to_string(), d.path().to_path_buf())]);
        let mut f = draw(Popularity::Zipf);
        f.top = Some(2);
        f.prefix = "/spice/inproc/sleep".into();
        f.query = "ms=10".into();
        let urls = class(f).resolve("http://h:1/", &sets).unwrap();
        // Zipf over manifest order: 1, 1/2 → normalised 2/3, 1/3.
        assert_eq!(urls.len(), 2);
        assert_eq!(urls[0].url, "http://h:1/spice/inproc/sleep/f0.html?ms=10");
        assert!((urls[0].weight - 2.0 / 3.0).abs() < 1e-12);
        assert_eq!(urls[1].size, Some(101));
    }

    #[test]
    fn manifest_weights_and_class_filter() {
        let d = manifest_dir(&[0.1, 0.2, 0.3, 0.4]);
        let sets = BTreeMap::from([("set".to_string(), d.path().to_path_buf())]);
        let mut f = draw(Popularity::Manifest);
        f.classes = Some(vec!["odd".into()]);
        let urls = class(f).resolve("http://h", &sets).unwrap();
        assert_eq!(
            urls.iter().map(|u| u.url.as_str()).collect::<Vec<_>>(),
            ["http://h/f1.html", "http://h/f3.html"]
        );
        assert!((urls[0].weight - 0.2 / 0.6).abs() < 1e-12);
        let missing = class(draw(Popularity::Uniform))
            .resolve("http://h", &BTreeMap::new())
            .unwrap_err()
            .to_string();
        assert!(missing.contains("--fileset set=DIR"), "{missing}");
    }

    /// A `top` beyond the files there are is refused naming both numbers
    /// (it used to keep what there was, silently).
    #[test]
    fn top_beyond_the_set_is_refused() {
        let d = manifest_dir(&[0.1, 0.2, 0.3, 0.4]);
        let sets = BTreeMap::from([("set".to_string(), d.path().to_path_buf())]);
        let mut f = draw(Popularity::Manifest);
        f.top = Some(5);
        let e = class(f.clone()).resolve("http://h", &sets).unwrap_err().to_string();
        assert!(e.contains("top = 5") && e.contains("has only 4 files"), "{e}");
        f.classes = Some(vec!["odd".into()]);
        f.top = Some(3);
        let e = class(f.clone()).resolve("http://h", &sets).unwrap_err().to_string();
        assert!(
            e.contains("top = 3") && e.contains("has only 2 files of class odd"),
            "{e}"
        );
        f.top = Some(2);
        let urls = class(f).resolve("http://h", &sets).unwrap();
        // Shares of the whole set's requests: 0.2 and 0.4 of 1.0.
        let shares: Vec<f64> = urls.iter().map(|u| u.population_share.unwrap()).collect();
        assert!(
            (shares[0] - 0.4).abs() < 1e-12 && (shares[1] - 0.2).abs() < 1e-12,
            "{shares:?}"
        );
    }
}
