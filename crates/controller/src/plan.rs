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

use benchlab_engine::{
    ChunkHead, ClassPlan, ClientSettings, Expect, PlanError, RequestSpec, UrlData, UrlDataReceiver, UrlTable,
    UrlTableBuilder,
};
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

/// The largest chunk of a URL list on the agents' wire by default: a
/// chunk is built, sent and dropped before the next, so neither side
/// holds more of the encoded list than this (docs/agents.md).
pub const URL_CHUNK_BYTES: usize = 1 << 20;

/// glibc raises its mmap threshold to the size of each large block freed
/// (up to 32 MiB): once a URL list's build has freed a few MiB, every
/// chunk made for an agent, and gRPC's copies of it, come from the heap
/// arenas of the control threads, which keep what is freed. A fixed
/// threshold keeps blocks of 128 KiB and more in mappings of their own,
/// returned when freed: with 1 M URLs sent to an agent the controller's
/// peak RSS went from 65.7 to 56.8 bytes a URL over one URL's run
/// (bench/README.md, "Memory against URLs"). Called once by a controller
/// that serves agents; a chunk's few mappings cost nothing beside its
/// encoding.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn keep_large_blocks_mapped() {
    // SAFETY: mallopt only sets one of the allocator's parameters.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 128 * 1024);
    }
}

/// Elsewhere the allocator's own policy stands.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn keep_large_blocks_mapped() {}

/// What comes first of a [`UrlList`] sent in chunks: all but its URLs'
/// columns (its id, classes, requests, flow, and the URLs' head with the
/// totals the chunks must add up to). JSON: small, and single-sourced with
/// the types it carries.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct UrlListHead {
    pub id: String,
    pub classes: Vec<ClassPlan>,
    #[serde(default)]
    pub requests: Vec<RequestSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow: Option<benchlab_flow::FlowSource>,
    pub urls: ChunkHead,
}

/// Walks a list's chunks, making each one as it is asked for: a sender
/// holds one chunk at a time, never the whole encoded list.
#[derive(Debug, Clone)]
pub struct UrlChunks {
    list: Arc<UrlList>,
    max_bytes: usize,
    next: usize,
    /// The last chunk was made (an empty list still sends one).
    done: bool,
}

impl UrlChunks {
    /// The chunks of `list`, each at most `max_bytes` (or one URL).
    pub fn new(list: Arc<UrlList>, max_bytes: usize) -> UrlChunks {
        UrlChunks {
            list,
            max_bytes: max_bytes.max(64),
            next: 0,
            done: false,
        }
    }

    /// The list's head, as JSON.
    pub fn head(&self) -> Vec<u8> {
        let l = &self.list;
        let head = UrlListHead {
            id: l.id.clone(),
            classes: l.classes.clone(),
            requests: l.requests.clone(),
            flow: l.flow.clone(),
            urls: l.urls.chunk_head(),
        };
        serde_json::to_vec(&head).unwrap_or_default()
    }

    /// The number of chunks and their bytes in all, found without making
    /// them (the controller logs the wire's cost before it sends).
    pub fn totals(&self) -> (usize, u64) {
        let d = &self.list.urls;
        let (mut at, mut chunks, mut bytes) = (0, 0, 0u64);
        loop {
            let end = d.chunk_end(at, self.max_bytes);
            chunks += 1;
            at = end;
            if at >= d.len() {
                break;
            }
        }
        bytes += 8 * chunks as u64 + d.chunk_head().data_bytes();
        (chunks, bytes)
    }
}

impl Iterator for UrlChunks {
    /// A chunk, and whether it is the last.
    type Item = (Vec<u8>, bool);

    fn next(&mut self) -> Option<(Vec<u8>, bool)> {
        if self.done {
            return None;
        }
        let d = &self.list.urls;
        let end = d.chunk_end(self.next, self.max_bytes);
        let chunk = d.chunk(self.next, end);
        self.next = end;
        self.done = end >= d.len();
        Some((chunk, self.done))
    }
}

/// Builds a [`UrlList`] from its head and chunks as they arrive (an agent),
/// bounded by `max_bytes`: what a list from a peer may not pass.
#[derive(Debug)]
pub struct UrlListReceiver {
    id: String,
    classes: Vec<ClassPlan>,
    requests: Vec<RequestSpec>,
    flow: Option<benchlab_flow::FlowSource>,
    urls: UrlDataReceiver,
    chunks: u64,
}

impl UrlListReceiver {
    /// A receiver for the list whose head (JSON) is `head`.
    pub fn new(head: &[u8], max_bytes: u64) -> Result<UrlListReceiver, String> {
        let h: UrlListHead =
            serde_json::from_slice(head).map_err(|e| format!("a URL list head that does not decode: {e}"))?;
        let urls = UrlDataReceiver::new(h.urls, max_bytes).map_err(|e| format!("URL list {}: {e}", h.id))?;
        Ok(UrlListReceiver {
            id: h.id,
            classes: h.classes,
            requests: h.requests,
            flow: h.flow,
            urls,
            chunks: 0,
        })
    }

    /// The id its head names.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Adds chunk `seq` (1, 2, … in order).
    pub fn push(&mut self, seq: u32, chunk: &[u8]) -> Result<(), String> {
        self.chunks += 1;
        if u64::from(seq) != self.chunks {
            return Err(format!(
                "URL list {}: chunk {seq} came where chunk {} was due",
                self.id, self.chunks
            ));
        }
        self.urls
            .push(chunk)
            .map_err(|e| format!("URL list {}, chunk {seq}: {e}", self.id))
    }

    /// How far it got, in words (an order that came before its last chunk).
    pub fn progress(&self) -> String {
        format!(
            "{} chunks, {} URLs ({} bytes) received so far",
            self.chunks,
            self.urls.urls(),
            self.urls.bytes()
        )
    }

    /// The list, after its last chunk: complete, every index in range, and
    /// its content the one its id names.
    pub fn finish(self) -> Result<UrlList, String> {
        let id = self.id;
        let urls = self.urls.finish().map_err(|e| format!("URL list {id}: {e}"))?;
        let list = UrlList {
            id,
            classes: self.classes,
            urls: Arc::new(urls),
            requests: self.requests,
            flow: self.flow,
        };
        if !list.is_intact() {
            return Err(format!(
                "URL list {}: its content does not match its id (refused)",
                list.id
            ));
        }
        Ok(list)
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

    /// `n` URLs over two origins and two classes, each with its own
    /// weight, size and checksum: every column of the chunks in use.
    fn big_list(n: usize) -> Arc<UrlList> {
        let specs = (0..n)
            .map(|i| UrlSpec {
                url: format!("http://127.0.0.{}:8080/d{:03}/p{i:06}.html", 1 + i % 2, i % 997),
                weight: 1.0 + (i % 3) as f64,
                class: i % 2,
                expect_status: 200,
                expect: Expect::Checksum {
                    size: i as u64,
                    xxh3: (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15),
                },
                request: 0,
            })
            .collect();
        Arc::new(UrlList::new(
            vec![ClassPlan { name: "a".into() }, ClassPlan { name: "b".into() }],
            specs,
        ))
    }

    /// Sends `list` through chunks of `max` bytes into a receiver.
    fn send(list: &Arc<UrlList>, max: usize) -> (Vec<Vec<u8>>, UrlListReceiver) {
        let chunks = UrlChunks::new(Arc::clone(list), max);
        let r = UrlListReceiver::new(&chunks.head(), 1 << 30).unwrap();
        (chunks.map(|(c, _)| c).collect(), r)
    }

    #[test]
    fn a_list_in_many_chunks_arrives_the_same_and_draws_the_same_urls() {
        let list = big_list(20_000);
        let chunks = UrlChunks::new(Arc::clone(&list), 16 << 10);
        let (count, bytes) = chunks.totals();
        let (sent, mut r) = send(&list, 16 << 10);
        assert_eq!(sent.len(), count);
        assert!(count > 20, "{count} chunks");
        assert_eq!(sent.iter().map(|c| c.len() as u64).sum::<u64>(), bytes);
        assert!(sent.iter().all(|c| c.len() <= 16 << 10));
        for (i, c) in sent.iter().enumerate() {
            r.push(i as u32 + 1, c).unwrap();
        }
        let back = r.finish().unwrap();
        assert_eq!(back.id, list.id);
        assert_eq!(back, *list);
        let (a, b) = (list.resolve().unwrap(), back.resolve().unwrap());
        let (mut r1, mut r2) = (benchlab_engine::SplitMix64::new(9), benchlab_engine::SplitMix64::new(9));
        for _ in 0..1000 {
            let (i, j) = (a.pick(&mut r1), b.pick(&mut r2));
            assert_eq!((i, a.get(i).url()), (j, b.get(j).url()));
        }
        // An empty list is one empty chunk.
        let empty = Arc::new(UrlList::new(vec![], vec![]));
        let (sent, mut r) = send(&empty, 1 << 20);
        assert_eq!(sent.len(), 1);
        r.push(1, &sent[0]).unwrap();
        assert_eq!(r.finish().unwrap(), *empty);
    }

    #[test]
    fn a_truncated_oversized_or_altered_list_is_refused_saying_why() {
        let list = big_list(2_000);
        let (sent, mut r) = send(&list, 4 << 10);
        for (i, c) in sent.iter().enumerate().take(sent.len() - 1) {
            r.push(i as u32 + 1, c).unwrap();
        }
        let e = r.finish().unwrap_err();
        assert!(e.contains("it stopped short:") && e.contains("of 2000 URLs"), "{e}");
        // A chunk again, past what the head announced.
        let (sent, mut r) = send(&list, 4 << 10);
        for (i, c) in sent.iter().enumerate() {
            r.push(i as u32 + 1, c).unwrap();
        }
        let e = r.push(sent.len() as u32 + 1, &sent[0]).unwrap_err();
        assert!(e.contains("more URLs than its head announced"), "{e}");
        // Out of order.
        let (sent, mut r) = send(&list, 4 << 10);
        let e = r.push(2, &sent[1]).unwrap_err();
        assert!(e.contains("chunk 2 came where chunk 1 was due"), "{e}");
        // A head announcing more than the agent takes: refused before any
        // room is taken.
        let head = UrlChunks::new(Arc::clone(&list), 4 << 10).head();
        let e = UrlListReceiver::new(&head, 1000).unwrap_err();
        assert!(e.contains("more than this agent takes (1000 bytes)"), "{e}");
        // A chunk whose counts do not match its bytes.
        let (sent, mut r) = send(&list, 4 << 10);
        let e = r.push(1, &sent[0][..sent[0].len() - 1]).unwrap_err();
        assert!(e.contains("where its counts say"), "{e}");
        // A changed path: every chunk fits, the id does not.
        let (mut sent, mut r) = send(&list, 4 << 10);
        let at = sent[0].iter().position(|&b| b == b'p').unwrap();
        sent[0][at] = b'q';
        for (i, c) in sent.iter().enumerate() {
            r.push(i as u32 + 1, c).unwrap();
        }
        let e = r.finish().unwrap_err();
        assert!(e.contains("does not match its id (refused)"), "{e}");
        // A control byte smuggled into a path.
        let (mut sent, mut r) = send(&list, 4 << 10);
        sent[0][at] = b'\r';
        let e = r.push(1, &sent[0]).unwrap_err();
        assert!(e.contains("a control character in a path"), "{e}");
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
                preconnect: true,
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
