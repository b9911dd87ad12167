//! The one interface between the controller and a client (test system).
//!
//! In-process clients implement it here over the engine; the remote agents
//! of a later issue will implement it over gRPC. Everything the controller
//! needs crosses it: start at an instant, stop, per-second snapshots, and
//! the final report with its histograms.

use benchlab_engine::{Client, ClientPlan, ClientReport, EngineError, Second};
use std::time::{Duration, Instant};

/// A client the controller drives through a mix.
pub trait ClientDriver: Send {
    /// Starts the plan; load begins at `start_at` plus the plan's delay.
    fn start(&mut self, plan: ClientPlan, start_at: Instant) -> Result<(), EngineError>;
    /// Asks the client to stop now (Ctrl-C, a failed mix).
    fn stop(&mut self);
    /// The next completed second, waiting at most `timeout`.
    fn next_second(&mut self, timeout: Duration) -> Option<Second>;
    /// Whether the client has stopped and its report is ready.
    fn is_finished(&self) -> bool;
    /// Waits for the client to stop and returns what it measured.
    fn finish(&mut self) -> Option<ClientReport>;
}

/// A client running in this process on its own worker threads.
#[derive(Debug, Default)]
pub struct LocalClient {
    client: Option<Client>,
}

impl ClientDriver for LocalClient {
    fn start(&mut self, plan: ClientPlan, start_at: Instant) -> Result<(), EngineError> {
        self.client = Some(Client::start(plan, start_at)?);
        Ok(())
    }

    fn stop(&mut self) {
        if let Some(c) = &self.client {
            c.stop();
        }
    }

    fn next_second(&mut self, timeout: Duration) -> Option<Second> {
        self.client.as_mut()?.next_second(timeout)
    }

    fn is_finished(&self) -> bool {
        self.client.as_ref().is_none_or(|c| c.is_finished())
    }

    fn finish(&mut self) -> Option<ClientReport> {
        self.client.take().map(Client::finish)
    }
}
