//! The one interface between the controller and a client (test system).
//!
//! What a driver promises (docs/design.md, "The client seam"):
//!
//! - it takes a [`ClientPlan`] — plain data, URLs named by a [`UrlList`]
//!   the pool was given for the phase — and resolves names itself;
//! - load begins at `start_at`, a wall-clock (UTC) instant, plus the plan's
//!   delay: a process's monotonic clock means nothing in another process;
//! - every completed second comes out of [`Driver::next_second`]
//!   once, in order, with its HDR delta, and all of them have come out
//!   before [`Driver::is_finished`] says true;
//! - [`Driver::finish`] gives the client's report, or says that the
//!   client was lost (its seconds so far are all the controller has);
//! - a driver dropped before `finish` stops its load.
//!
//! In-process clients implement it here over the engine; remote agents
//! implement it over the network (crate `benchlab-agent`).

use crate::plan::{ClientPlan, UrlList};
use benchlab_engine::{Client, ClientReport, EngineError, PlanError, Second};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

/// Why a client could not start.
#[derive(Debug, thiserror::Error)]
pub enum DriverError {
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// The plan names a URL list the client was never given (or one whose
    /// content does not match its id).
    #[error("the client has no URL list `{0}`; the controller must hand it over before the mix")]
    UnknownUrls(String),
    /// A URL of the list cannot be resolved or loaded where the client runs.
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// A remote client could not be reached or refused the order.
    #[error("{0}")]
    Remote(String),
}

/// A client that stopped answering before its report (a remote agent gone
/// silent, a crashed process): it keeps its number, is marked out of the
/// mix, and only the seconds it sent count for it, apart from the mix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientLost {
    /// What happened, in words, for the report.
    pub why: String,
}

/// What one kind of client is handed and hands back. The one driver
/// interface ([`Driver`]) is generic over it, so a web client, a file
/// client and the next protocol's client are driven the same way.
pub trait ClientKind: 'static {
    /// What a mix hands the client at its start.
    type Order: Send;
    /// One completed second, streamed while the mix runs.
    type Second: Send;
    /// What the client measured, whole, at the end.
    type Report: Send;
}

/// A web client: an engine [`ClientPlan`] in, engine seconds and the
/// engine's report (HDR histograms included) out.
#[derive(Debug)]
pub struct WebClient;

impl ClientKind for WebClient {
    type Order = ClientPlan;
    type Second = Second;
    type Report = ClientReport;
}

/// A file client (a remote agent's): its users (threads per client of
/// them) in their own `\clients\clientN` workspaces, started at a
/// wall-clock instant, its seconds streamed, its counts returned whole (HDR
/// histograms included) so the controller merges them exactly.
#[derive(Debug)]
pub struct FileClient;

impl ClientKind for FileClient {
    type Order = benchlab_fileserver::FileOrder;
    type Second = benchlab_fileserver::run::LiveSecond;
    type Report = benchlab_fileserver::FileEnd;
}

/// A client the controller drives through a mix.
pub trait Driver<K: ClientKind>: Send {
    /// Starts the order; load begins at `start_at` (wall clock, UTC) plus
    /// the order's delay.
    fn start(&mut self, order: K::Order, start_at: SystemTime) -> Result<(), DriverError>;
    /// Waits until the client has taken its start: a remote one's order
    /// goes out in `start` and is answered here, so that a mix's orders
    /// all go out before any answer is awaited (one round trip for the
    /// mix, not one per client). The caller calls it for every client
    /// after starting them all.
    fn started(&mut self) -> Result<(), DriverError> {
        Ok(())
    }
    /// Asks the client to stop now (Ctrl-C, a failed mix).
    fn stop(&mut self);
    /// The next completed second, waiting at most `timeout`.
    fn next_second(&mut self, timeout: Duration) -> Option<K::Second>;
    /// Whether the client has stopped (or was lost) and every second has
    /// come out of [`Driver::next_second`].
    fn is_finished(&self) -> bool;
    /// Waits for the client to stop and returns what it measured, or why
    /// it was lost.
    fn finish(&mut self) -> Result<K::Report, ClientLost>;
}

/// A web client's driver.
pub type ClientDriver = dyn Driver<WebClient>;

/// Waits for every started client's answer (`Driver::started`); if one
/// refused, stops and finishes them all and names it (1-based, with why),
/// so a mix never runs with a client missing.
pub(crate) fn all_started<K: ClientKind>(drivers: &mut [Box<dyn Driver<K>>]) -> Result<(), (usize, DriverError)> {
    let refused = drivers
        .iter_mut()
        .enumerate()
        .find_map(|(c, d)| d.started().err().map(|source| (c, source)));
    let Some((c, source)) = refused else { return Ok(()) };
    for d in drivers.iter_mut() {
        d.stop();
    }
    for d in drivers.iter_mut() {
        let _ = d.finish();
    }
    Err((c + 1, source))
}
/// A file client's driver.
pub type FileClientDriver = dyn Driver<FileClient>;

/// Where a run's clients come from: the run chooses (in this process by
/// default; remote agents; fakes in tests).
pub trait ClientPool: std::fmt::Debug + Send + Sync {
    /// Hands a phase's URL list to every client, once per phase, before
    /// its first mix; plans then name it by its id.
    fn load_urls(&self, urls: &Arc<UrlList>) -> Result<(), DriverError>;
    /// The driver of client `client` (0-based) for one mix.
    fn driver(&self, client: usize) -> Box<ClientDriver>;
    /// Readies the clients for the next mix, before its start time is
    /// chosen (remote agents: a clock check of each); returns how much
    /// further ahead than an in-process start the start must be so every
    /// client has it in time.
    fn before_mix(&self) -> Result<Duration, DriverError> {
        Ok(Duration::ZERO)
    }
    /// Whether the pool wants the running mix stopped now (kept as
    /// partial), as a remote pool does when an agent is lost under
    /// `--abort-on-lost-agent`.
    fn stop_requested(&self) -> bool {
        false
    }
    /// Whether any client of a mix of `clients` can still run, before the
    /// mix starts: an error (naming who was lost) when every remote agent
    /// the mix needs is gone, so that no mix runs without clients and
    /// reads as the server's collapse.
    fn clients_left(&self, _clients: usize) -> Result<(), DriverError> {
        Ok(())
    }
    /// The remote agents behind the clients, for results.json (none for
    /// clients in this process).
    fn agents(&self) -> Vec<benchlab_results::AgentResult> {
        Vec::new()
    }
    /// The driver of client `client` (0-based) of a file mix when the
    /// pool's clients run elsewhere; `None`: they are this process, which
    /// runs file mixes itself.
    fn file_driver(&self, _client: usize) -> Option<Box<FileClientDriver>> {
        None
    }
}

/// Resolved URL lists by id, shared by the in-process clients.
type Lists = Arc<Mutex<BTreeMap<String, crate::plan::ResolvedList>>>;

/// Clients on worker threads of this process, sharing one resolved copy
/// of each URL list.
#[derive(Debug, Default)]
pub struct InProcess {
    lists: Lists,
}

impl ClientPool for InProcess {
    fn load_urls(&self, urls: &Arc<UrlList>) -> Result<(), DriverError> {
        if !urls.is_intact() {
            return Err(DriverError::UnknownUrls(urls.id.clone()));
        }
        let mut lists = self.lists.lock().unwrap_or_else(|e| e.into_inner());
        if !lists.contains_key(&urls.id) {
            lists.insert(urls.id.clone(), urls.ready()?);
        }
        Ok(())
    }

    fn driver(&self, _client: usize) -> Box<ClientDriver> {
        Box::new(LocalClient {
            lists: Arc::clone(&self.lists),
            client: None,
        })
    }
}

/// A client running in this process on its own worker threads.
#[derive(Debug)]
pub struct LocalClient {
    lists: Lists,
    client: Option<Client>,
}

/// The monotonic instant of a wall-clock one, read against both clocks
/// now: how an in-process client (or, later, an agent after correcting for
/// its measured offset) turns the controller's start time into its own.
pub fn instant_at(at: SystemTime) -> Instant {
    let (now, wall) = (Instant::now(), SystemTime::now());
    match at.duration_since(wall) {
        Ok(ahead) => now + ahead,
        // Already past: the mix's clock started that long ago.
        Err(e) => now.checked_sub(e.duration()).unwrap_or(now),
    }
}

impl Driver<WebClient> for LocalClient {
    fn start(&mut self, plan: ClientPlan, start_at: SystemTime) -> Result<(), DriverError> {
        let list = self
            .lists
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&plan.urls)
            .cloned()
            .ok_or_else(|| DriverError::UnknownUrls(plan.urls.clone()))?;
        self.client = Some(Client::start(plan.to_engine(&list), instant_at(start_at))?);
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

    fn finish(&mut self) -> Result<ClientReport, ClientLost> {
        self.client.take().map(Client::finish).ok_or_else(|| ClientLost {
            why: "the client was never started".into(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wall_clock_start_becomes_the_same_moment_on_the_monotonic_clock() {
        let before = Instant::now();
        let at = instant_at(SystemTime::now() + Duration::from_secs(3));
        let after = Instant::now();
        // The two clocks are read one after the other, so a conversion may
        // be off by the time between the reads: a millisecond is plenty.
        let slack = Duration::from_millis(1);
        assert!(at + slack >= before + Duration::from_secs(3) && at <= after + Duration::from_secs(3) + slack);
        let past = instant_at(SystemTime::now() - Duration::from_secs(2));
        assert!(past <= Instant::now() - Duration::from_secs(2) + slack);
    }

    #[test]
    fn a_plan_naming_a_list_never_handed_over_is_refused() {
        let pool = InProcess::default();
        let plan = ClientPlan {
            urls: "xxh3:0000000000000000".into(),
            settings: benchlab_engine::ClientSettings {
                virtual_users: 1,
                load: benchlab_engine::Load::Closed,
                os_threads: 1,
                stop: benchlab_engine::Stop::After(Duration::from_secs(1)),
                window: (Duration::ZERO, Duration::from_secs(1)),
                start_delay: Duration::ZERO,
                think_time: Duration::ZERO,
                ramp_up: Duration::ZERO,
                timeout: Duration::from_secs(1),
                connection: Default::default(),
                receive_buffer: 4096,
                headers: Vec::new(),
                source_addresses: Vec::new(),
                tls: Default::default(),
                seed: 1,
                first_user: 0,
                http2: None,
                preconnect: false,
            },
        };
        let err = pool.driver(0).start(plan, SystemTime::now()).err();
        assert!(matches!(err, Some(DriverError::UnknownUrls(id)) if id == "xxh3:0000000000000000"));
        let mut tampered = UrlList::new(vec![benchlab_engine::ClassPlan { name: "a".into() }], Vec::new());
        tampered.classes[0].name = "b".into();
        assert!(matches!(
            pool.load_urls(&Arc::new(tampered)),
            Err(DriverError::UnknownUrls(_))
        ));
    }
}
