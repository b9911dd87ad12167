//! A suite's phases resolved before any request: a web phase's URLs (every
//! file set read), a file phase's workload; the preflight of each URL and
//! the client addresses a phase loads from.

use crate::options::*;
use crate::plan::UrlList;
use benchlab_engine::{sys, ClassPlan, Expect, Origin, RequestSpec, TlsOptions, UrlTable, UrlTableBuilder};
use benchlab_model::{ClassKind, Suite, Validate};
use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// A phase's URLs, resolved once and shared by its mixes.
pub(crate) struct PhasePlan {
    /// As sent to the clients, once per phase.
    pub(crate) list: Arc<UrlList>,
    /// Resolved here, for the preflight and the source-address checks.
    pub(crate) urls: Arc<UrlTable>,
    pub(crate) classes: Vec<ClassPlan>,
    /// Per class: name, kind, SPI, percent, drawn from a file set.
    pub(crate) class_info: Vec<(String, ClassKind, Option<String>, f64, bool)>,
    /// Classes that say `http = "2"` (bit i: class i).
    pub(crate) h2_classes: u64,
    /// Of those, the classes that say `http = "3"`: HTTP/3 over QUIC.
    pub(crate) h3_classes: u64,
    /// A file phase (disk mix, loadfile): no URLs, its mixes run by
    /// [`crate::file`].
    pub(crate) file: Option<crate::file::FilePhase>,
}

/// The engine's request for a class's (or URL's) method, headers and body,
/// its `body_file` read with a bound.
fn request_spec(r: &benchlab_model::Request, class: &str) -> Result<RequestSpec, ControllerError> {
    let body = match &r.body {
        None => None,
        Some(benchlab_model::Body::Text(t)) => Some(t.as_bytes().to_vec()),
        Some(benchlab_model::Body::File(path)) => Some(
            benchlab_model::input::read_bounded(path, "a request body", benchlab_engine::MAX_BODY_BYTES)
                .map_err(|e| ControllerError::Input(format!("class `{class}`: body_file {}: {e}", path.display())))?,
        ),
    };
    let spec = RequestSpec {
        method: r.method().to_string(),
        headers: r.headers.clone(),
        body,
        chunked: r.chunked,
    };
    spec.validate()
        .map_err(|e| ControllerError::Input(format!("class `{class}`: {e}")))?;
    Ok(spec)
}

pub(crate) fn resolve_phase(
    suite: &Suite,
    workload: &str,
    target: &str,
    filesets: &BTreeMap<String, PathBuf>,
) -> Result<PhasePlan, ControllerError> {
    if let Some(file) = crate::file::resolve(suite, workload, target) {
        return Ok(PhasePlan {
            list: Arc::new(UrlList::new(Vec::new(), Vec::new())),
            urls: Arc::new(UrlTable::from(Vec::new())),
            classes: Vec::new(),
            class_info: Vec::new(),
            h2_classes: 0,
            h3_classes: 0,
            file: Some(file?),
        });
    }
    let w = suite
        .workloads
        .get(workload)
        .ok_or_else(|| ControllerError::Input(format!("unknown workload `{workload}`")))?;
    // The URLs go straight into the compact list, a class at a time: no
    // per-URL text is kept past its push (issue 27). A first pass counts
    // them and their path bytes so the list takes its room once: columns
    // grown by doubling are copied where they cannot grow in place, and
    // held twice meanwhile (110 bytes a URL at the peak for a from-log
    // list, against 58 held; tests/url_memory.rs).
    let (mut count, mut path_bytes) = (0usize, 0usize);
    for c in &w.classes {
        c.resolve_each(target, filesets, |r| -> Result<(), Resolving> {
            count += 1;
            path_bytes += path_len(&r.url);
            Ok(())
        })
        .map_err(|e| e.0)?;
    }
    let mut urls = UrlTableBuilder::with_capacity(count, path_bytes);
    let mut classes = Vec::new();
    let mut class_info = Vec::new();
    let mut h2_classes = 0u64;
    let mut h3_classes = 0u64;
    // The phase's requests other than a plain GET, each once (a file-set
    // class's many URLs share their class's).
    let mut requests: Vec<(benchlab_model::Request, RequestSpec)> = Vec::new();
    for (ci, c) in w.classes.iter().enumerate() {
        if c.http2 {
            if ci >= 64 {
                return Err(ControllerError::Input(format!(
                    "class {}: `http = \"2\"` is supported on the first 64 classes of a workload",
                    c.name
                )));
            }
            h2_classes |= 1 << ci;
            if c.http3 {
                h3_classes |= 1 << ci;
            }
        }
        classes.push(ClassPlan { name: c.name.clone() });
        let from_fileset = matches!(c.source, benchlab_model::UrlSource::Fileset(_));
        class_info.push((c.name.clone(), c.kind, c.spi.clone(), c.percent, from_fileset));
        // A URL at a time, into the compact list (a URL file is read as
        // it goes: never a list of a million URL strings).
        c.resolve_each(target, filesets, |r| -> Result<(), Resolving> {
            let validate = c.validate.unwrap_or(if r.size.is_some() {
                Validate::Size
            } else {
                Validate::Status
            });
            let expect = match (validate, r.size, r.xxh3) {
                (Validate::Checksum, Some(size), Some(xxh3)) => Expect::Checksum { size, xxh3 },
                (Validate::Size | Validate::Checksum, Some(size), _) => Expect::Size(size),
                _ => Expect::Status,
            };
            let request = match r.request {
                None => 0,
                Some(model) => match requests.iter().position(|(m, _)| *m == model) {
                    Some(k) => k as u32 + 1,
                    None => {
                        let spec = request_spec(&model, &c.name)?;
                        requests.push((model, spec));
                        requests.len() as u32
                    }
                },
            };
            urls.push_url(
                &r.url,
                c.percent / 100.0 * r.weight,
                ci,
                c.expect_status,
                expect,
                request,
            )
            .map_err(|e| ControllerError::Input(e.to_string()))?;
            Ok(())
        })
        .map_err(|e| e.0)?;
    }
    let urls = Arc::new(urls.finish_data());
    let list = match &w.flow {
        // A flow's steps are its classes, a URL each (the step's origin):
        // what is sent is the flow's.
        Some(flow) => UrlList::of_data(classes.clone(), urls, Vec::new(), Some(flow.source.clone())),
        None => UrlList::of_data(
            classes.clone(),
            urls,
            requests.into_iter().map(|(_, r)| r).collect(),
            None,
        ),
    };
    // A host that does not resolve is a run that cannot be made (the
    // network's or resolver's state), not a mistake in the suite.
    let urls = list.resolve().map_err(|e| match e {
        benchlab_engine::PlanError::Resolve { .. } => ControllerError::Target(e.to_string()),
        _ => ControllerError::Input(e.to_string()),
    })?;
    Ok(PhasePlan {
        list: Arc::new(list),
        urls,
        classes,
        class_info,
        h2_classes,
        h3_classes,
        file: None,
    })
}

/// The bytes URL `url`'s path takes in the list's arena (its origin
/// interned): what `UrlTableBuilder::push_url` keeps, a `/` added where
/// the path lacks one (a fragment, dropped there, is counted: an upper
/// bound).
fn path_len(url: &str) -> usize {
    let after_scheme = url.find("://").map_or(url.len(), |i| i + 3);
    let origin_end = url[after_scheme..]
        .find(['/', '?', '#'])
        .map_or(url.len(), |j| after_scheme + j);
    let rest = &url[origin_end..];
    rest.len() + usize::from(!rest.starts_with('/'))
}

/// A class's URLs could not be resolved, or one could not be listed.
struct Resolving(ControllerError);

impl From<ControllerError> for Resolving {
    fn from(e: ControllerError) -> Self {
        Resolving(e)
    }
}

impl From<benchlab_model::ResolveError> for Resolving {
    fn from(e: benchlab_model::ResolveError) -> Self {
        Resolving(ControllerError::Input(e.to_string()))
    }
}

/// URLs of a class the preflight requests: every listed URL (up to 1,000),
/// and for a file-set class 16 spread evenly over the manifest (first and
/// last included), so a server missing part of a large set is caught.
pub(crate) fn preflight_sample(urls: &UrlTable, class: usize, from_fileset: bool) -> Vec<usize> {
    // Two passes over the table rather than a list of the class's URLs:
    // a million-URL class would cost 8 MB for 16 picks.
    let of_class = || (0..urls.len()).filter(|&i| urls.class(i) == class);
    let n = of_class().count();
    let want = if from_fileset { 16 } else { 1000 };
    if n <= want {
        return of_class().collect();
    }
    let mut ranks: Vec<usize> = (0..want).map(|k| k * (n - 1) / (want - 1)).collect();
    ranks.dedup();
    let mut next = ranks.iter().peekable();
    of_class()
        .enumerate()
        .filter(|&(rank, _)| {
            let hit = next.peek().is_some_and(|&&r| r == rank);
            if hit {
                next.next();
            }
            hit
        })
        .map(|(_, i)| i)
        .collect()
}

/// One request per URL of the phase (a sample of a file-set class),
/// checking status, size and checksum before any load.
pub(crate) fn preflight(
    plan: &PhasePlan,
    source: Option<IpAddr>,
    tls: &TlsOptions,
    http2: bool,
    http3: bool,
    observer: &mut dyn Observer,
) -> Result<(), ControllerError> {
    if plan.list.flow.is_some() {
        // A flow's steps need their session (cookies, captures): one
        // request alone proves nothing, and a POST would change the
        // server's state. The steps' own checks judge every response.
        observer.note("preflight: skipped for the flow workload (its steps' checks judge every response)");
        return Ok(());
    }
    let mut checked = 0;
    for (class, info) in plan.class_info.iter().enumerate() {
        for i in preflight_sample(&plan.urls, class, info.4) {
            let u = plan.urls.get(i);
            let target = u.to_target();
            checked += 1;
            // Over HTTP/2 when every mix of the phase speaks it, or the
            // class does: an h2c listener answers nothing else.
            let plain = RequestSpec::default();
            let request = match u.request {
                0 => &plain,
                k => &plan.list.requests[k as usize - 1],
            };
            let method = &request.method;
            let r = if http3 || (class < 64 && plan.h3_classes & (1 << class) != 0) {
                benchlab_engine::h3::probe_h3_request(request, &target, source, &[], tls, Duration::from_secs(10))
            } else if http2 || (class < 64 && plan.h2_classes & (1 << class) != 0) {
                benchlab_engine::h2::probe_h2_request(request, &target, source, &[], tls, Duration::from_secs(10))
            } else {
                benchlab_engine::probe_request(&target, source, &[], request, tls, Duration::from_secs(10))
            };
            let r = r.map_err(|e| {
                // A TLS failure says what to try itself.
                let advice = if e.kind == benchlab_engine::ErrorKind::Tls {
                    ""
                } else {
                    "; is the target running and is it what the suite expects?"
                };
                ControllerError::Target(format!("preflight: {method} {} failed: {e}{advice}", target.url))
            })?;
            if r.status != u.expect_status {
                // nginx answers a plain request on its TLS port with 400.
                let tls_port = if r.status == 400 && u.target.scheme == benchlab_engine::Scheme::Http {
                    "; a 400 to http:// can mean that the port speaks TLS: try https://"
                } else {
                    ""
                };
                return Err(ControllerError::Target(format!(
                    "preflight: {method} {} returned status {}, expected {} — the target does not serve what the suite expects \
                     (wrong --target, file set not installed, or SPICE endpoint missing){tls_port}",
                    target.url, r.status, u.expect_status
                )));
            }
            match u.expect {
                Expect::Size(size) | Expect::Checksum { size, .. } if size != r.body_bytes => {
                    return Err(ControllerError::Target(format!(
                        "preflight: {method} {} returned {} body bytes, the workload expects {size} — \
                         is the target serving the same file set?",
                        target.url, r.body_bytes
                    )));
                }
                Expect::Checksum { xxh3, .. } if xxh3 != r.xxh3 => {
                    return Err(ControllerError::Target(format!(
                        "preflight: {method} {}: the body's checksum differs from the manifest's — is the target serving \
                         the same file set (same seed)?",
                        target.url
                    )));
                }
                _ => {}
            }
        }
    }
    observer.note(&format!(
        "preflight: {} checked",
        benchlab_format::plural(checked, "URL", "URLs")
    ));
    Ok(())
}

pub(crate) fn is_loopback(t: &Origin) -> bool {
    t.addr.ip().is_loopback()
}

/// A suite's phases resolved to URLs (every file set read), before any
/// request: what [`run_prepared`] loads.
pub struct Prepared {
    pub(crate) phases: Vec<PhasePlan>,
}

impl Prepared {
    /// The URL list of each web phase, as its clients receive it (what a
    /// controller holds for its agents: tests count its bytes).
    pub fn url_lists(&self) -> Vec<Arc<UrlList>> {
        self.phases
            .iter()
            .filter(|p| p.file.is_none())
            .map(|p| Arc::clone(&p.list))
            .collect()
    }
}

/// Resolves the URLs of every phase of `suite` (its file sets with
/// `opts.filesets` over the suite's own) without a request. Every problem of
/// every phase is reported at once, one per line, so a run never stops at
/// phase 3 for an input that was missing from the start.
pub fn prepare(suite: &Suite, opts: &RunOptions) -> Result<Prepared, ControllerError> {
    let mut filesets = suite.filesets.clone();
    filesets.extend(opts.filesets.clone());
    let mut phases = Vec::with_capacity(suite.phases.len());
    let mut problems: Vec<String> = Vec::new();
    // Only hosts that did not resolve: the run cannot be made, though the
    // suite is right (exit 1, not a usage error).
    let mut only_unreachable = true;
    for p in &suite.phases {
        match resolve_phase(suite, &p.workload, &p.target, &filesets) {
            Ok(plan) => phases.push(plan),
            Err(e) => {
                only_unreachable &= matches!(e, ControllerError::Target(_));
                let e = format!("phase {}: {e}", p.name);
                if !problems.contains(&e) {
                    problems.push(e);
                }
            }
        }
    }
    if !problems.is_empty() {
        let all = problems.join("\n");
        return Err(if only_unreachable {
            ControllerError::Target(all)
        } else {
            ControllerError::Input(all)
        });
    }
    Ok(Prepared { phases })
}

/// The local address client `c` (0-based) loads from: with the suite's
/// `client_addresses` and a loopback target, 127.0.0.(c + 1) for the first
/// 254 clients; otherwise the kernel's choice.
pub(crate) fn client_address(suite: &Suite, phase: &PhasePlan, c: usize) -> Option<IpAddr> {
    let loopback = phase.urls.origins().first().is_some_and(is_loopback);
    (suite.client_addresses && loopback && c < 254).then(|| IpAddr::V4(Ipv4Addr::new(127, 0, 0, (c + 1) as u8)))
}

/// Binds every client address a phase's mixes will load from, so one this
/// machine lacks stops the run before any load, naming it.
pub(crate) fn check_client_addresses(
    suite: &Suite,
    phase_index: usize,
    phase: &PhasePlan,
) -> Result<(), ControllerError> {
    let clients = suite
        .mixes
        .iter()
        .filter(|m| m.phase == phase_index)
        .map(|m| m.clients as usize)
        .max()
        .unwrap_or(0);
    let sources: Vec<IpAddr> = (0..clients).filter_map(|c| client_address(suite, phase, c)).collect();
    let targets: Vec<_> = phase.urls.origins().iter().map(|o| o.addr).collect();
    Ok(sys::check_source_addresses(&sources, &targets)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first pass counts what the list keeps of a URL: its path, a
    /// `/` added where it has none (the room is taken once from it).
    #[test]
    fn a_path_is_counted_as_the_list_keeps_it() {
        for url in ["http://h:8/a/b?q=1", "http://h:8", "http://h?q", "https://[::1]:9/x"] {
            let mut b = UrlTableBuilder::new();
            b.push_url(url, 1.0, 0, 200, Expect::Status, 0).expect(url);
            assert_eq!(path_len(url), b.finish_data().path_str(0).len(), "{url}");
        }
    }
}
