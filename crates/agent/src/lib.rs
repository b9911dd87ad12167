//! # benchlab-agent
//!
//! The control protocol between the controller and the processes that
//! dial out to it: agents (remote clients: each runs one or several of a
//! mix's clients on its own host) and server monitors. One gRPC stream per
//! peer, opened by the peer, over mutual TLS with the lab's certificates;
//! docs/agents.md describes the messages and the failure rules.
//!
//! - [`controller`]: the controller's server and [`RemotePool`], the
//!   [`ClientPool`](benchlab_controller::ClientPool) of remote clients;
//! - [`peer`]: what runs on a load machine ([`run_agent`]) and the
//!   monitor's sending side ([`monitor_session`]);
//! - [`proto`]: the messages; [`tls`]: the lab's certificates.

#![forbid(unsafe_code)]

pub mod controller;
pub mod peer;
pub mod proto;
pub mod tls;

pub use controller::{ControllerOptions, RemoteMonitors, RemotePool};
pub use peer::{monitor_session, run_agent, AgentOptions, PeerOptions};
pub use tls::{write_certs, CertsPlan, TlsFiles};

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// What can go wrong on either side of the protocol.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// The controller refused this peer (protocol version, index, a
    /// certificate it does not trust): running again will not help.
    #[error("the controller refused this {role}: {why}")]
    Refused { role: &'static str, why: String },
    /// The controller went away or fell silent; the load was stopped.
    #[error("lost the controller: {0}")]
    LostController(String),
    /// The controller could not be reached.
    #[error("cannot reach the controller at {at}: {why}")]
    Connect { at: String, why: String },
    #[error("TLS: {0}")]
    Tls(String),
    #[error("{0}")]
    Io(String),
    /// Peers that did not register in time.
    #[error("{0}")]
    Missing(String),
    /// Ctrl-C while waiting.
    #[error("{0}")]
    Interrupted(String),
    /// A TLS-level refusal (a certificate of another CA, expired, not yet
    /// valid, made for another use, a key that does not match): a setup
    /// to fix, so it is not retried.
    #[error("cannot register with the controller at {at}: {why}")]
    TlsRefused { at: String, why: String },
    /// The controller dropped this agent (silent too long, bad bytes)
    /// while the run goes on.
    #[error("{0}")]
    Dropped(String),
}

impl AgentError {
    /// The process exit code: 2 for a refusal (a setup to fix), 1 for
    /// anything else.
    pub fn exit_code(&self) -> i32 {
        match self {
            AgentError::Refused { .. } | AgentError::Tls(_) => 2,
            _ => 1,
        }
    }
}

impl benchlab_input::Classify for AgentError {
    fn exit_class(&self) -> benchlab_input::ExitClass {
        match self.exit_code() {
            2 => benchlab_input::ExitClass::Usage,
            _ => benchlab_input::ExitClass::CannotRun,
        }
    }
}

/// UTC nanoseconds since the Unix epoch of `t` (negative before it).
pub(crate) fn nanos_of(t: SystemTime) -> i64 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_nanos()).unwrap_or(i64::MAX),
        Err(e) => -i64::try_from(e.duration().as_nanos()).unwrap_or(i64::MAX),
    }
}

pub(crate) fn now_nanos() -> i64 {
    nanos_of(SystemTime::now())
}

/// The instant of UTC nanoseconds `n`.
pub(crate) fn time_of_nanos(n: i64) -> SystemTime {
    if n >= 0 {
        UNIX_EPOCH + Duration::from_nanos(n as u64)
    } else {
        UNIX_EPOCH - Duration::from_nanos(n.unsigned_abs())
    }
}
