//! The control protocol's messages, as prost types written by hand (no
//! `.proto` compiler at build time; docs/agents.md lists them).
//!
//! The envelopes are typed protobuf; what the controller and the engine
//! already define — a [`ClientPlan`](benchlab_controller::plan::ClientPlan),
//! a [`UrlList`](benchlab_controller::plan::UrlList), a
//! [`Second`](benchlab_engine::Second), a
//! [`ClientReport`](benchlab_engine::ClientReport) — travels inside them as
//! serde JSON bytes. Those types stay single-sourced: a field added to
//! `Second` (say, the client's CPU per second) reaches the controller with
//! no change here, where a mirrored protobuf message would silently drop
//! it until someone remembered to copy it. The envelope's version
//! ([`PROTOCOL_VERSION`]) covers both layers.

/// The protocol version a peer states when it registers. Bump it on any
/// change an older peer would misread (a new envelope field that matters,
/// a changed payload meaning); peers of different versions refuse each
/// other, naming both. Version 3: URL lists in chunks ([`UrlChunk`]).
pub const PROTOCOL_VERSION: u32 = 3;

/// What an agent or monitor sends to the controller.
#[derive(Clone, PartialEq, prost::Message)]
pub struct AgentMessage {
    #[prost(oneof = "agent_message::Kind", tags = "1, 2, 3, 4, 5, 6, 7, 8, 9")]
    pub kind: Option<agent_message::Kind>,
}

pub mod agent_message {
    /// The kinds of [`AgentMessage`](super::AgentMessage).
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Kind {
        /// The first message of every session.
        #[prost(message, tag = "1")]
        Hello(super::Hello),
        /// The answer to a [`Ping`](super::Ping).
        #[prost(message, tag = "2")]
        Pong(super::Pong),
        /// A client was started (or could not be) for a mix.
        #[prost(message, tag = "3")]
        Started(super::Started),
        /// A completed second of a client: a JSON `Second`.
        #[prost(message, tag = "4")]
        Second(super::ClientPayload),
        /// A client's final report: a JSON `ClientReport`.
        #[prost(message, tag = "5")]
        Report(super::ClientPayload),
        /// Sent every second, so silence means a lost peer.
        #[prost(message, tag = "6")]
        Heartbeat(super::Heartbeat),
        /// A server monitor's sample for one second.
        #[prost(message, tag = "7")]
        Sample(super::MonitorSample),
        /// A second of a file client's window: a JSON `LiveSecond`.
        #[prost(message, tag = "8")]
        FileSecond(super::ClientPayload),
        /// A file client's end: a JSON `FileReport` (its measure, or why
        /// it could not run).
        #[prost(message, tag = "9")]
        FileReport(super::ClientPayload),
    }
}

/// What kind of peer registers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum Role {
    Unspecified = 0,
    /// A load generator: runs clients.
    Agent = 1,
    /// A server monitor: streams samples of the server's resources.
    Monitor = 2,
}

/// Registration: who the peer is and which protocol it speaks.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Hello {
    #[prost(uint32, tag = "1")]
    pub protocol_version: u32,
    #[prost(enumeration = "Role", tag = "2")]
    pub role: i32,
    /// An agent's index (0-based; `JOB_COMPLETION_INDEX` on Kubernetes):
    /// it decides which clients the agent runs.
    #[prost(uint32, tag = "3")]
    pub index: u32,
    /// The peer's host name (a monitor's samples are kept under it).
    #[prost(string, tag = "4")]
    pub host: String,
    /// benchlab's version, for the results' disclosure.
    #[prost(string, tag = "5")]
    pub software: String,
}

/// One clock sample (NTP's exchange): `t1` the controller's send time
/// echoed, `t2` the agent's receive time, `t3` its send time (UTC, ns).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Pong {
    #[prost(uint64, tag = "1")]
    pub id: u64,
    #[prost(int64, tag = "2")]
    pub t1: i64,
    #[prost(int64, tag = "3")]
    pub t2: i64,
    #[prost(int64, tag = "4")]
    pub t3: i64,
}

/// A client's start acknowledged: `error` empty when it started.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Started {
    #[prost(uint32, tag = "1")]
    pub client: u32,
    #[prost(string, tag = "2")]
    pub error: String,
}

/// Serde JSON of a controller or engine type, for client `client`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ClientPayload {
    #[prost(uint32, tag = "1")]
    pub client: u32,
    #[prost(bytes = "vec", tag = "2")]
    pub json: Vec<u8>,
}

/// "Still here" (UTC ns of the sender's clock).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Heartbeat {
    #[prost(int64, tag = "1")]
    pub unix_nanos: i64,
}

/// One sample of a server monitor: opaque bytes (JSON) and when it was
/// taken (UTC ns of the monitor's clock).
#[derive(Clone, PartialEq, prost::Message)]
pub struct MonitorSample {
    #[prost(int64, tag = "1")]
    pub unix_nanos: i64,
    #[prost(bytes = "vec", tag = "2")]
    pub payload: Vec<u8>,
}

/// What the controller sends to an agent or monitor.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ControllerMessage {
    #[prost(oneof = "controller_message::Kind", tags = "1, 2, 4, 5, 6, 7, 8")]
    pub kind: Option<controller_message::Kind>,
}

pub mod controller_message {
    /// The kinds of [`ControllerMessage`](super::ControllerMessage).
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Kind {
        /// Registration accepted.
        #[prost(message, tag = "1")]
        Welcome(super::Welcome),
        /// A clock sample request.
        #[prost(message, tag = "2")]
        Ping(super::Ping),
        /// Start a client.
        #[prost(message, tag = "4")]
        Start(super::Start),
        /// Stop a client now.
        #[prost(message, tag = "5")]
        Stop(super::Stop),
        /// Sent every second, so silence means a lost controller.
        #[prost(message, tag = "6")]
        Heartbeat(super::Heartbeat),
        /// Start a client of a file mix.
        #[prost(message, tag = "7")]
        FileStart(super::FileStart),
        /// A piece of a phase's URL list: its head, then its chunks (tag 3,
        /// the whole list as one JSON message, was protocol version 2's).
        #[prost(message, tag = "8")]
        UrlChunk(super::UrlChunk),
    }
}

/// A piece of URL list `list`: `seq` 0 is its head (a JSON
/// [`UrlListHead`](benchlab_controller::plan::UrlListHead)), 1, 2, … its
/// chunks (the binary columns of [`benchlab_engine::UrlData::chunk`]),
/// `last` on the final one. A list is sent once per phase, each chunk made
/// as the stream takes it, so neither side holds the whole encoded list.
#[derive(Clone, PartialEq, prost::Message)]
pub struct UrlChunk {
    #[prost(string, tag = "1")]
    pub list: String,
    #[prost(uint32, tag = "2")]
    pub seq: u32,
    #[prost(bytes = "vec", tag = "3")]
    pub data: Vec<u8>,
    #[prost(bool, tag = "4")]
    pub last: bool,
}

/// Registration accepted.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Welcome {
    #[prost(uint32, tag = "1")]
    pub protocol_version: u32,
}

/// A clock sample request: `t1` is the controller's send time (UTC ns).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Ping {
    #[prost(uint64, tag = "1")]
    pub id: u64,
    #[prost(int64, tag = "2")]
    pub t1: i64,
}

/// Start client `client` (0-based, the run's numbering) with `plan` (JSON
/// `ClientPlan`) at `start_unix_nanos` — already on the agent's clock: the
/// controller adds the agent's measured offset.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Start {
    #[prost(uint32, tag = "1")]
    pub client: u32,
    #[prost(bytes = "vec", tag = "2")]
    pub plan: Vec<u8>,
    #[prost(int64, tag = "3")]
    pub start_unix_nanos: i64,
    /// Set when the run left the worker threads per client to each host:
    /// the agent gives each client its usable CPUs ÷ this many clients
    /// (the clients it runs), in place of the plan's `os_threads`.
    #[prost(uint32, tag = "4")]
    pub threads_from_cpus_of: u32,
}

/// Start client `client` of a file mix: `order` is a JSON `FileOrder`
/// (the workload's text, the target, the plan, the client's number), its
/// users start at `start_unix_nanos`, on the agent's clock. `Stop` stops
/// it as it stops a web client.
#[derive(Clone, PartialEq, prost::Message)]
pub struct FileStart {
    #[prost(uint32, tag = "1")]
    pub client: u32,
    #[prost(bytes = "vec", tag = "2")]
    pub order: Vec<u8>,
    #[prost(int64, tag = "3")]
    pub start_unix_nanos: i64,
}

/// How a file client ended, as an agent reports it.
pub type FileReport = Result<benchlab_fileserver::FileEnd, String>;

/// A file client's second as an agent sends it.
pub fn decode_file_second(json: &[u8]) -> Result<benchlab_fileserver::run::LiveSecond, serde_json::Error> {
    serde_json::from_slice(json)
}

/// A file client's end as an agent sends it.
pub fn decode_file_report(json: &[u8]) -> Result<FileReport, serde_json::Error> {
    serde_json::from_slice(json)
}

/// Stop client `client` now.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Stop {
    #[prost(uint32, tag = "1")]
    pub client: u32,
}

/// The generated service (client and server halves).
pub mod control {
    include!(concat!(env!("OUT_DIR"), "/benchlab.control.v1.Control.rs"));
}

/// A second as an agent sends it (the JSON inside a `Second` message).
pub fn decode_second(json: &[u8]) -> Result<benchlab_engine::Second, serde_json::Error> {
    serde_json::from_slice(json)
}

/// A client report as an agent sends it (the JSON inside a `Report`).
pub fn decode_report(json: &[u8]) -> Result<benchlab_engine::ClientReport, serde_json::Error> {
    serde_json::from_slice(json)
}

/// Decodes `data` as every control message and every payload they carry,
/// checking that nothing panics and that a message decoded re-encodes to
/// the same message: what the fuzz target (`fuzz/fuzz_targets/control.rs`),
/// its corpus replay and the property tests run. Whatever a peer sends,
/// the worst it gets is an error.
pub fn check_decoders(data: &[u8]) {
    use benchlab_controller::plan::{ClientPlan, UrlListReceiver};
    use prost::Message as _;
    if let Ok(m) = AgentMessage::decode(data) {
        let again = AgentMessage::decode(&m.encode_to_vec()[..]).expect("a re-encoded message decodes");
        assert_eq!(again, m);
        match &m.kind {
            Some(agent_message::Kind::Second(p)) => {
                let _ = decode_second(&p.json);
            }
            Some(agent_message::Kind::Report(p)) => {
                let _ = decode_report(&p.json);
            }
            Some(agent_message::Kind::FileSecond(p)) => {
                let _ = decode_file_second(&p.json);
            }
            Some(agent_message::Kind::FileReport(p)) => {
                let _ = decode_file_report(&p.json);
            }
            _ => {}
        }
    }
    if let Ok(m) = ControllerMessage::decode(data) {
        let again = ControllerMessage::decode(&m.encode_to_vec()[..]).expect("a re-encoded message decodes");
        assert_eq!(again, m);
        match &m.kind {
            Some(controller_message::Kind::UrlChunk(c)) => {
                // A head, then the same bytes as a chunk of a list it
                // announces: every check runs, none may panic.
                if let Ok(mut r) = UrlListReceiver::new(&c.data, 1 << 20) {
                    let _ = r.push(1, &c.data);
                    let _ = r.finish();
                }
                if let Ok(mut r) = UrlListReceiver::new(br#"{"id":"x","classes":[],"urls":{"prefixes":["http://h"],"kinds":[{"origin":0,"class":0,"request":0,"expect_status":200,"expect":0}],"class_weights":[1.0],"weight_total":1.0,"urls":2,"path_bytes":6,"kind_of":false,"sizes":false,"xxh3":false,"alias":true}}"#, 1 << 20) {
                    let _ = r.push(1, &c.data);
                    let _ = r.finish();
                }
            }
            Some(controller_message::Kind::Start(s)) => {
                let _ = serde_json::from_slice::<ClientPlan>(&s.plan);
            }
            Some(controller_message::Kind::FileStart(s)) => {
                let _ = serde_json::from_slice::<benchlab_fileserver::FileOrder>(&s.order);
            }
            _ => {}
        }
    }
    let _ = decode_second(data);
    let _ = decode_report(data);
    let _ = decode_file_second(data);
    let _ = decode_file_report(data);
    let _ = benchlab_engine::wire::histogram_of_bytes(data);
}
