//! # benchlab-monitor
//!
//! What a host did while a load ran on it, once a second: where its CPUs
//! spent their time, context switches, interrupts, run queue, memory and
//! page cache, every NIC (with its link speed) and disk, listen-queue
//! overflows, and the server process under test — so a mix's verdict can
//! say what limited it (seed 002's "What are the bottlenecks?", done there
//! by hand with perfmon, vmstat and mpstat).
//!
//! Two ways to read a host, one result: [`Sampler`] reads this machine's
//! `/proc` and `/sys` through the `procfs` crate, [`NodeExporter`] reads a
//! Prometheus node_exporter's `/metrics` page. Both fill the same raw
//! counters ([`raw::Raw`]), and two of those a second apart become one
//! [`HostSample`] of rates — a self-contained serde value, so a remote
//! monitor can send it as JSON as it is.
//!
//! The controller reads monitored hosts through [`MonitorSource`]: the
//! samples of a time window. [`SampleStore`] is one (a bounded buffer any
//! sampler pushes into: the local thread of [`LocalMonitor`], or a network
//! session receiving JSON samples), so a remote source plugs in by pushing
//! into a store.

mod node_exporter;
pub mod raw;
mod sampler;
mod source;

pub use benchlab_results::resources::*;
pub use node_exporter::{parse_metrics, NodeExporter};
pub use sampler::{Sampler, Watch};
pub use source::{LocalMonitor, MonitorSource, SampleStore};

/// Why a host could not be sampled.
#[derive(Debug, thiserror::Error)]
pub enum MonitorError {
    /// A /proc or /sys file could not be read or parsed.
    #[error("cannot read {what}: {why}")]
    Proc { what: String, why: String },
    /// The node_exporter could not be reached or answered badly.
    #[error("node_exporter {url}: {why}")]
    NodeExporter { url: String, why: String },
    /// A sample received as JSON did not parse.
    #[error("a monitor sample is not valid JSON: {0}")]
    Json(#[from] serde_json::Error),
}

impl MonitorError {
    pub(crate) fn proc(what: &str, e: impl std::fmt::Display) -> MonitorError {
        MonitorError::Proc {
            what: what.to_string(),
            why: e.to_string(),
        }
    }
}
