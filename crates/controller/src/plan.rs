//! What crosses the seam between the controller and a client: plain data.
//!
//! A client may run in this process or, later, on another host, so nothing
//! here is resolved or process-local: URLs are text (each driver resolves
//! the names itself, where its load leaves from), durations are offsets
//! from the mix's start, and a phase's URL list — which may hold a whole
//! file set — is a [`UrlList`] handed to the clients once per phase
//! ([`ClientPool::load_urls`](crate::ClientPool::load_urls)) and named in
//! every [`ClientPlan`] by its content hash, so a plan stays small and a
//! client holding another list than the controller's is caught.

use benchlab_engine::{ClassPlan, ClientSettings, Expect, PlanError, RequestSpec, UrlData, UrlTable, UrlTableBuilder};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// One URL of a phase, as text, with its share and what its responses
/// must be.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UrlSpec {
    pub url: String,
    /// Relative weight for the pick (> 0): class percentage × the URL's
    /// popularity within its class.
    pub weight: f64,
    /// Index into [`UrlList::classes`].
    pub class: usize,
    pub expect_status: u16,
    pub expect: Expect,
    /// The request sent: 0 a plain GET, k the list's `requests[k − 1]`.
    #[serde(default)]
    pub request: u32,
}

/// A phase's URLs and classes, sent to each client once per phase and
/// named by [`UrlList::id`] in its plans.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UrlList {
    /// `xxh3:` and the XXH3-64 of the classes and URLs (hex): the same list
    /// has the same id on every host.
    pub id: String,
    pub classes: Vec<ClassPlan>,
    /// The URLs, compact (the engine's [`UrlData`]: one arena of paths,
    /// interned origins, an alias table): on the wire the arena as one
    /// string and its columns, not a list of strings (docs/agents.md).
    #[serde(with = "shared_data")]
    pub urls: Arc<UrlData>,
    /// The requests other than a plain GET its URLs name (method,
    /// headers, body).
    #[serde(default)]
    pub requests: Vec<RequestSpec>,
    /// A flow workload's flow (URL k is its step k): its TOML and files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow: Option<benchlab_flow::FlowSource>,
}

/// An `Arc<UrlData>` on the wire: the data itself.
mod shared_data {
    use super::{Arc, UrlData};
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(d: &Arc<UrlData>, s: S) -> Result<S::Ok, S::Error> {
        (**d).serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Arc<UrlData>, D::Error> {
        UrlData::deserialize(d).map(Arc::new)
    }
}

/// A URL list made ready to run: its URLs resolved, its flow compiled —
/// once per list in a process, shared by its clients (so a feeder's
/// `next` rows are the process's, not each client's).
#[derive(Debug, Clone)]
pub struct ResolvedList {
    pub urls: Arc<UrlTable>,
    pub classes: Vec<ClassPlan>,
    pub requests: Vec<RequestSpec>,
    pub flow: Option<Arc<benchlab_flow::Flow>>,
}

/// Feeds what is written to it to an XXH3-64 hash: a list's id is the hash
/// of its JSON, made without holding the JSON (a million URLs' worth).
struct HashWriter(xxhash_rust::xxh3::Xxh3);

impl std::io::Write for HashWriter {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.update(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Small lists' URLs as a compact list (tests, `benchlab http`). A bad
/// URL is kept and refused when the list is resolved, naming it.
fn data_of(urls: &[UrlSpec]) -> UrlData {
    let mut b = UrlTableBuilder::with_capacity(urls.len(), urls.iter().map(|u| u.url.len()).sum());
    for u in urls {
        // Only more than 2³² origins, kinds or path bytes fail here.
        let _ = b.push_url(&u.url, u.weight, u.class, u.expect_status, u.expect, u.request);
    }
    b.finish_data()
}

impl UrlList {
    /// A list with its id computed from its content.
    pub fn new(classes: Vec<ClassPlan>, urls: Vec<UrlSpec>) -> UrlList {
        UrlList::with_requests(classes, urls, Vec::new())
    }

    /// A list whose URLs name `requests` (method, headers, body).
    pub fn with_requests(classes: Vec<ClassPlan>, urls: Vec<UrlSpec>, requests: Vec<RequestSpec>) -> UrlList {
        UrlList::of_data(classes, Arc::new(data_of(&urls)), requests, None)
    }

    /// A flow workload's list: a URL per step (its origin), a class per
    /// step, and the flow.
    pub fn with_flow(classes: Vec<ClassPlan>, urls: Vec<UrlSpec>, flow: benchlab_flow::FlowSource) -> UrlList {
        UrlList::of_data(classes, Arc::new(data_of(&urls)), Vec::new(), Some(flow))
    }

    /// A list of compact URLs (built with a [`UrlTableBuilder`]).
    pub fn of_data(
        classes: Vec<ClassPlan>,
        urls: Arc<UrlData>,
        requests: Vec<RequestSpec>,
        flow: Option<benchlab_flow::FlowSource>,
    ) -> UrlList {
        let id = Self::id_of(&classes, &urls, &requests, flow.as_ref());
        UrlList {
            id,
            classes,
            urls,
            requests,
            flow,
        }
    }

    fn id_of(
        classes: &[ClassPlan],
        urls: &UrlData,
        requests: &[RequestSpec],
        flow: Option<&benchlab_flow::FlowSource>,
    ) -> String {
        // The JSON text of the content: stable, and what a remote client
        // receives, so both sides hash the same bytes.
        let mut h = HashWriter(xxhash_rust::xxh3::Xxh3::new());
        let _ = match flow {
            Some(f) => serde_json::to_writer(&mut h, &(classes, urls, requests, f)),
            None => serde_json::to_writer(&mut h, &(classes, urls, requests)),
        };
        format!("xxh3:{:016x}", h.0.digest())
    }

    /// Whether the content is what the id says (a list received from
    /// elsewhere, or read from disk).
    pub fn is_intact(&self) -> bool {
        self.id == Self::id_of(&self.classes, &self.urls, &self.requests, self.flow.as_ref())
    }

    /// The list ready to run: URLs resolved, the flow compiled.
    pub fn ready(&self) -> Result<ResolvedList, PlanError> {
        let flow = match &self.flow {
            None => None,
            Some(f) => Some(Arc::new(
                f.compile().map_err(|e| PlanError::Invalid(format!("the flow: {e}")))?,
            )),
        };
        Ok(ResolvedList {
            urls: self.resolve()?,
            classes: self.classes.clone(),
            requests: self.requests.clone(),
            flow,
        })
    }

    /// The list of an engine plan's URLs (their compact data, shared),
    /// classes and requests.
    pub fn of_engine(urls: &UrlTable, classes: &[ClassPlan], requests: &[RequestSpec]) -> UrlList {
        UrlList::of_data(classes.to_vec(), Arc::clone(urls.data()), requests.to_vec(), None)
    }

    /// Resolves every origin (one name lookup per host, not per URL): the
    /// engine's table, sharing this list's data.
    pub fn resolve(&self) -> Result<Arc<UrlTable>, PlanError> {
        UrlTable::resolve(Arc::clone(&self.urls)).map(Arc::new)
    }
}

/// Everything one client does in one mix, as data: the engine's
/// [`ClientSettings`] (the one definition of a client's settings) and the
/// [`UrlList`] it loads, named by id. What an agent receives; on the wire
/// the settings' fields sit beside `urls`, as before they were one type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClientPlan {
    /// The [`UrlList`] the client was given for this phase.
    pub urls: String,
    #[serde(flatten)]
    pub settings: ClientSettings,
}

impl ClientPlan {
    /// The data of an engine plan, its URLs named by `urls` (the id of
    /// [`UrlList::of_engine`] of the same plan).
    pub fn of_engine(plan: &benchlab_engine::ClientPlan, urls: String) -> ClientPlan {
        ClientPlan {
            urls,
            settings: plan.settings.clone(),
        }
    }

    /// The engine's plan for this data and its resolved URL list: the one
    /// place the hot-loop form is made from the wire form.
    pub fn to_engine(&self, list: &ResolvedList) -> benchlab_engine::ClientPlan {
        benchlab_engine::ClientPlan {
            urls: Arc::clone(&list.urls),
            classes: list.classes.clone(),
            requests: list.requests.clone(),
            flow: list.flow.clone(),
            settings: self.settings.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use benchlab_engine::{Arrival, ConnectionPolicy, Load, OpenLoop, Stop, TlsOptions};
    use std::time::Duration;

    fn list() -> UrlList {
        UrlList::new(
            vec![
                ClassPlan { name: "static".into() },
                ClassPlan { name: "dynamic".into() },
            ],
            specs(),
        )
    }

    fn specs() -> Vec<UrlSpec> {
        vec![
            UrlSpec {
                url: "http://127.0.0.1:8080/a.html".into(),
                weight: 0.25,
                class: 0,
                expect_status: 200,
                expect: Expect::Checksum {
                    size: 1234,
                    xxh3: 0xDEAD_BEEF,
                },
                request: 0,
            },
            UrlSpec {
                url: "http://127.0.0.1:8080/cgi?x=1".into(),
                weight: 0.75,
                class: 1,
                expect_status: 200,
                expect: Expect::Size(17),
                request: 0,
            },
        ]
    }

    #[test]
    fn a_full_plan_and_its_url_list_survive_a_round_trip() {
        let urls = list();
        let plan = ClientPlan {
            urls: urls.id.clone(),
            settings: ClientSettings {
                virtual_users: 64,
                load: Load::Open(OpenLoop {
                    rate: 1234.5,
                    arrival: Arrival::Poisson,
                    max_in_flight: 512,
                }),
                os_threads: 3,
                stop: Stop::After(Duration::from_millis(30_500)),
                window: (Duration::from_secs(5), Duration::from_millis(25_250)),
                start_delay: Duration::from_nanos(123_456_789),
                think_time: Duration::from_millis(7),
                ramp_up: Duration::ZERO,
                timeout: Duration::from_secs(5),
                connection: ConnectionPolicy {
                    http10_percent: 10,
                    http10_keepalive: true,
                    persistent_percent: 80,
                    requests_per_connection: Some((2, 9)),
                },
                receive_buffer: 4096,
                headers: vec![("X-Lab".into(), "1".into())],
                source_addresses: vec!["127.0.0.3".parse().expect("an address"), "::1".parse().expect("v6")],
                tls: TlsOptions {
                    insecure: true,
                    resumption_percent: 50,
                    ca_file: Some("/etc/lab/ca.pem".into()),
                },
                seed: u64::MAX - 7,
                first_user: 12,
                http2: Some(benchlab_engine::H2Plan {
                    connections: 3,
                    streams: 10,
                    window: 65_535,
                    classes: 0,
                    h3: false,
                    h3_classes: 0,
                }),
            },
        };
        let text = serde_json::to_string(&plan).expect("JSON");
        assert_eq!(serde_json::from_str::<ClientPlan>(&text).expect("back"), plan);
        // URLs and addresses travel as text: nothing resolved crosses.
        assert!(text.contains(r#""source_addresses":["127.0.0.3","::1"]"#), "{text}");
        let text = serde_json::to_string(&urls).expect("JSON");
        let back: UrlList = serde_json::from_str(&text).expect("back");
        assert_eq!(back, urls);
        assert!(back.is_intact());
        // The arena on the wire: the origin once, the paths as one string.
        assert!(text.contains(r#""prefixes":["http://127.0.0.1:8080"]"#), "{text}");
        assert!(text.contains(r#""paths":"/a.html\n/cgi?x=1\n""#), "{text}");
    }

    #[test]
    fn an_engine_plan_becomes_data_and_back_unchanged() {
        let list = list();
        let urls = list.resolve().expect("loopback resolves");
        let mut engine = benchlab_engine::ClientPlan::new(Vec::new(), list.classes.clone());
        engine.urls = Arc::clone(&urls);
        engine.virtual_users = 7;
        engine.stop = Stop::Requests(1000);
        engine.headers = vec![("X-A".into(), "b".into())];
        engine.window = (Duration::from_millis(500), Duration::MAX);
        let again = UrlList::of_engine(&urls, &list.classes, &[]);
        assert_eq!(again, list, "the same text, the same id");
        let data = ClientPlan::of_engine(&engine, again.id.clone());
        let back = data.to_engine(&list.ready().expect("loopback resolves"));
        assert_eq!(format!("{back:?}"), format!("{engine:?}"));
        let text = serde_json::to_string(&data).expect("JSON");
        assert_eq!(serde_json::from_str::<ClientPlan>(&text).expect("back"), data);
    }

    #[test]
    fn the_id_names_the_content() {
        let a = list();
        assert!(a.id.starts_with("xxh3:") && a.id.len() == 5 + 16, "{}", a.id);
        assert_eq!(list().id, a.id, "the same content, the same id");
        let mut b = a.clone();
        b.classes[1].name = "other".into();
        assert!(!b.is_intact(), "a changed list no longer matches its id");
        let mut urls = specs();
        urls[1].weight = 0.5;
        assert_ne!(UrlList::new(a.classes.clone(), urls).id, a.id);
    }

    #[test]
    fn resolving_keeps_each_url_and_looks_up_each_origin_once() {
        let urls = list().resolve().expect("loopback resolves");
        assert_eq!(urls.len(), 2);
        assert_eq!(urls.get(1).path, "/cgi?x=1");
        assert_eq!(urls.get(1).url(), "http://127.0.0.1:8080/cgi?x=1");
        assert_eq!(urls.origins().len(), 1);
        assert_eq!(urls.get(1).expect, Expect::Size(17));
        let mut urls = specs();
        urls[0].url = "localhost:8080/a".into();
        let bad = UrlList::new(list().classes, urls);
        let e = bad.resolve().unwrap_err();
        assert!(
            matches!(&e, PlanError::BadUrl { url, .. } if url == "localhost:8080/a"),
            "{e:?}"
        );
    }
}
