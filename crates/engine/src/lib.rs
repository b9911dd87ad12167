//! # benchlab-engine
//!
//! The load engine of benchlab: closed-loop virtual users (WebBench's
//! "worker threads") multiplexed on a few OS threads, each OS thread an
//! epoll event loop; hand-written HTTP/1 framing; exact counting by
//! docs/counting.md; HDR latency histograms per thread and
//! class, snapshotted every second and merged exactly.
//!
//! The crate has no CLI concerns: a [`ClientPlan`] says what one client
//! (test system) does, [`Client::start`] runs it from a given instant, and
//! [`Client::finish`] returns a [`ClientReport`]. A controller runs many
//! clients in one process the same way.
//!
//! ```no_run
//! use benchlab_engine::*;
//! use std::time::{Duration, Instant};
//! let target = Target::parse("http://127.0.0.1:8080/index.html").unwrap();
//! let url = UrlPlan::get(target);
//! let mut plan = ClientPlan::new(vec![url], vec![ClassPlan { name: "static".into() }]);
//! plan.virtual_users = 64;
//! plan.stop = Stop::After(Duration::from_secs(5));
//! let report = Client::start(plan, Instant::now()).unwrap().finish();
//! println!("{} requests", report.stats.total().counters.requests);
//! ```

mod client;
mod event_loop;
mod flow;
pub mod h2;
pub mod h3;
mod http1;
pub mod parse;
mod plan;
mod prepared;
mod probe;
mod reactor;
mod request;
mod rng;
mod schedule;
mod sock;
mod stats;
mod streams;
pub mod sys;
mod tls;
mod urls;
pub use tls::{read_pem, MAX_PEM_BYTES};
pub mod wire;

pub use client::{Client, ClientReport, EngineError, Second, Stopper};
pub use plan::{
    preconnect_refusal, share_warning, Arrival, ClassPlan, ClientPlan, ClientSettings, ConnectionPolicy, Expect,
    H2Plan, KindShare, Load, OpenLoop, PlanError, Scheme, Stop, Target, TlsOptions, UrlPlan,
};
pub use probe::{probe, probe_from, probe_request, ProbeError, ProbeResponse};
pub use request::{RequestError, RequestSpec, MAX_BODY_BYTES};
pub use rng::SplitMix64;
pub use stats::{
    new_latency_histogram, ClassStats, ConnCounters, ConnectionKind, Counters, ErrorKind, LatencySummary, LoopLoad,
    QuicCounters, Snapshot, Stats, ThreadEnd, LATENCY_MAX_US,
};
pub use urls::{ChunkHead, Origin, UrlData, UrlDataReceiver, UrlRef, UrlTable, UrlTableBuilder};
