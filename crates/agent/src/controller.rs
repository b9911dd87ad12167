//! The controller's side: a gRPC server over mutual TLS that agents and
//! monitors dial into, and the [`RemotePool`] the run drives its clients
//! through.
//!
//! Threads: the server runs on a small tokio runtime of its own; the
//! controller's driving loop stays synchronous ([`ClientDriver`] blocks
//! with timeouts) and meets the network through std channels, one per
//! client of a mix.

use crate::proto::agent_message::Kind as FromAgent;
use crate::proto::control::control_server::{Control, ControlServer};
use crate::proto::controller_message::Kind as ToAgent;
use crate::proto::*;
use crate::tls::{CertRole, TlsFiles};
use crate::{now_nanos, time_of_nanos, AgentError};
use benchlab_controller::plan::{ClientPlan, UrlChunks, UrlList, URL_CHUNK_BYTES};
use benchlab_controller::{
    ClientDriver, ClientKind, ClientLost, ClientPool, Driver, DriverError, FileClient, FileClientDriver, WebClient,
};
use benchlab_engine::{ClientReport, Second};
use benchlab_fileserver::run::LiveSecond;
use benchlab_fileserver::{FileEnd, FileOrder};
use benchlab_results::{AgentResult, ClockCheck};
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc as std_mpsc;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::{Duration, Instant, SystemTime};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};
use tonic::transport::Server;
use tonic::{Request, Response, Status, Streaming};

/// A peer silent this long is lost (WebBench's rule): three of its
/// heartbeats ([`HEARTBEAT`]) missed in a row.
pub const SILENCE_LIMIT: Duration = Duration::from_secs(3);
/// Both sides send a heartbeat this often.
pub const HEARTBEAT: Duration = Duration::from_secs(1);
/// How long a peer may take over its TLS handshake: a connection that
/// opens and says nothing holds a descriptor and a task until then.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Handshakes in progress at most. A new connection beyond it drops the
/// oldest pending one: a real agent's handshake takes milliseconds, so a
/// flood of stalled connections cannot keep it out, nor use up the
/// controller's descriptors.
pub const MAX_PENDING_HANDSHAKES: usize = 64;
/// Clock samples per check; the one with the smallest round trip counts.
const CLOCK_SAMPLES: u32 = 5;
/// Agents whose clocks are checked at the same time before a mix.
const CLOCK_CHECKS_AT_ONCE: usize = 8;
/// How long a clock sample or a start acknowledgement may take.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(5);

/// How the controller listens and what it waits for.
#[derive(Clone)]
pub struct ControllerOptions {
    pub listen: SocketAddr,
    pub tls: TlsFiles,
    /// Agents expected (indexes 0..agents).
    pub agents: u32,
    /// Server monitors expected.
    pub monitors: u32,
    /// Clients each agent runs: client c runs on agent c / this.
    pub clients_per_agent: u32,
    /// A lost agent stops the run instead of only its clients.
    pub abort_on_lost_agent: bool,
    /// The run set no worker threads per client (`--os-threads-per-client`):
    /// each agent sizes them from its own CPUs, not the controller's.
    pub threads_by_agent: bool,
    /// Where the controller says what happens (registrations, refusals,
    /// losses), one line each; the binary prints them.
    pub log: Arc<dyn Fn(String) + Send + Sync>,
}

impl std::fmt::Debug for ControllerOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ControllerOptions")
            .field("listen", &self.listen)
            .field("agents", &self.agents)
            .field("monitors", &self.monitors)
            .finish_non_exhaustive()
    }
}

/// What reaches one client's driver from the network.
enum Event {
    Started(Result<(), String>),
    Second(Box<Second>),
    Report(Box<ClientReport>),
    /// A file client's second and its end.
    FileSecond(LiveSecond),
    FileReport(Box<FileReport>),
    Lost(String),
}

/// What is queued for a peer's stream, in order.
enum Out {
    Message(Result<ControllerMessage, Status>),
    /// A URL list, sent as its head and chunks of at most this many bytes,
    /// each made only when the stream takes it ([`Outgoing`]).
    List(Arc<UrlList>, usize),
}

type Outbound = UnboundedSender<Out>;

/// A peer's stream: its queue, with a URL list in it expanded into its
/// chunks one at a time as gRPC asks for the next message. So a list of
/// millions of URLs is never encoded whole, nor once per agent: each
/// agent's stream holds the chunk in flight (and gRPC's buffer of it),
/// and the list itself is the controller's one shared copy.
struct Outgoing {
    rx: UnboundedReceiver<Out>,
    /// The list being sent: its id, its chunks, the next chunk's number.
    list: Option<(String, UrlChunks, u32)>,
}

impl tokio_stream::Stream for Outgoing {
    type Item = Result<ControllerMessage, Status>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if let Some((id, chunks, seq)) = &mut this.list {
            if let Some((data, last)) = chunks.next() {
                let chunk = UrlChunk {
                    list: id.clone(),
                    seq: *seq,
                    data,
                    last,
                };
                *seq += 1;
                return Poll::Ready(Some(Ok(ControllerMessage {
                    kind: Some(ToAgent::UrlChunk(chunk)),
                })));
            }
            this.list = None;
        }
        match this.rx.poll_recv(cx) {
            Poll::Ready(Some(Out::Message(m))) => Poll::Ready(Some(m)),
            Poll::Ready(Some(Out::List(list, max))) => {
                let id = list.id.clone();
                let chunks = UrlChunks::new(list, max);
                let head = UrlChunk {
                    list: id.clone(),
                    seq: 0,
                    data: chunks.head(),
                    last: false,
                };
                this.list = Some((id, chunks, 1));
                Poll::Ready(Some(Ok(ControllerMessage {
                    kind: Some(ToAgent::UrlChunk(head)),
                })))
            }
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// One connected agent.
struct Link {
    index: u32,
    peer: String,
    tx: Mutex<Option<Outbound>>,
    last_heard: Mutex<Instant>,
    lost: Mutex<Option<String>>,
    clients: Mutex<HashMap<u32, std_mpsc::Sender<Event>>>,
    pongs: Mutex<Option<std_mpsc::Sender<(Pong, i64)>>>,
    /// The latest clock check: (agent clock − controller clock, round
    /// trip), ns.
    clock: Mutex<Clock>,
}

/// A clock check's result: (agent clock − controller clock, round trip), ns.
type Clock = (i64, u64);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Link {
    fn send(&self, kind: ToAgent) -> bool {
        lock(&self.tx).as_ref().is_some_and(|tx| {
            tx.send(Out::Message(Ok(ControllerMessage { kind: Some(kind) })))
                .is_ok()
        })
    }

    /// Queues URL list `list`, in chunks of at most `max` bytes.
    fn send_list(&self, list: &Arc<UrlList>, max: usize) -> bool {
        lock(&self.tx)
            .as_ref()
            .is_some_and(|tx| tx.send(Out::List(Arc::clone(list), max)).is_ok())
    }

    fn is_lost(&self) -> Option<String> {
        lock(&self.lost).clone()
    }

    /// One clock check: the NTP exchange with the smallest round trip of
    /// [`CLOCK_SAMPLES`]. Returns (offset, round trip) in ns.
    fn clock_check(&self) -> Result<Clock, String> {
        let (tx, rx) = std_mpsc::channel();
        *lock(&self.pongs) = Some(tx);
        let mut best: Option<(i64, u64)> = None;
        for id in 0..u64::from(CLOCK_SAMPLES) {
            let t1 = now_nanos();
            if !self.send(ToAgent::Ping(Ping { id, t1 })) {
                return Err("the connection closed".into());
            }
            let (p, t4) = loop {
                match rx.recv_timeout(ANSWER_TIMEOUT) {
                    Ok((p, t4)) if p.id == id && p.t1 == t1 => break (p, t4),
                    Ok(_) => continue,
                    Err(_) => {
                        return Err(format!(
                            "no answer to a clock check within {}s",
                            ANSWER_TIMEOUT.as_secs()
                        ))
                    }
                }
            };
            // NTP: the round trip less the agent's own time, and the
            // midpoint difference of the two clocks.
            let rtt = (t4 - t1).saturating_sub(p.t3 - p.t2).max(0) as u64;
            let offset = ((p.t2 - t1) + (p.t3 - t4)) / 2;
            if best.is_none_or(|(_, r)| rtt < r) {
                best = Some((offset, rtt));
            }
        }
        *lock(&self.pongs) = None;
        let best = best.unwrap_or_default();
        *lock(&self.clock) = best;
        Ok(best)
    }
}

struct State {
    /// Agents by index: the live one, or the last one lost.
    agents: BTreeMap<u32, Arc<Link>>,
    /// What results.json says of each agent index.
    history: BTreeMap<u32, AgentResult>,
    monitors_connected: BTreeSet<String>,
    /// The one sender of each monitor's stream: dropping it at shutdown
    /// ends the stream, so the monitor exits cleanly instead of on a reset.
    monitor_tx: BTreeMap<String, Outbound>,
    samples: BTreeMap<String, Vec<(SystemTime, Vec<u8>)>>,
    /// Every URL list handed over this run, for agents that join late
    /// (the lists themselves, shared with the run: nothing encoded is
    /// kept).
    lists: Vec<Arc<UrlList>>,
    /// Mixes begun ([`ClientPool::before_mix`] calls).
    mixes: u32,
    /// Set when an agent was lost under `--abort-on-lost-agent`.
    aborted: Option<String>,
    /// Reader tasks still running (for a clean shutdown).
    sessions: usize,
    /// The run is over and the controller ends every session: a stream
    /// that closes now is the end of the run, not a loss.
    ending: bool,
}

struct Shared {
    opts: ControllerOptions,
    /// The largest URL list chunk ([`URL_CHUNK_BYTES`]; tests set less).
    url_chunk_bytes: AtomicUsize,
    state: Mutex<State>,
    changed: Condvar,
}

impl Shared {
    fn log(&self, line: String) {
        (self.opts.log)(line);
    }

    fn state(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// Marks `link` lost (once): every driver of it hears it, the history
    /// records it, and under `--abort-on-lost-agent` every other agent's
    /// clients are stopped.
    fn lose(&self, link: &Link, why: String) {
        {
            let mut lost = lock(&link.lost);
            if lost.is_some() {
                return;
            }
            *lost = Some(why.clone());
        }
        // No more orders to it; its stream ends in an error that says why,
        // so an agent that is still there exits 1, not as at a run's end.
        if let Some(tx) = lock(&link.tx).take() {
            let _ = tx.send(Out::Message(Err(Status::aborted(format!(
                "the controller dropped agent {}: {why}",
                link.index
            )))));
        }
        for tx in lock(&link.clients).values() {
            let _ = tx.send(Event::Lost(why.clone()));
        }
        let mut st = self.state();
        if st.ending {
            drop(st);
            self.log(format!(
                "agent {} ({}): session ended with the run",
                link.index, link.peer
            ));
            return;
        }
        self.log(format!("agent {} ({}) lost: {why}", link.index, link.peer));
        if let Some(h) = st.history.get_mut(&link.index) {
            h.lost = Some(why.clone());
        }
        // The driving loop sees it (`stop_requested`) and stops the mix.
        if self.opts.abort_on_lost_agent && st.aborted.is_none() {
            st.aborted = Some(format!(
                "agent {} was lost ({why}) and --abort-on-lost-agent is set",
                link.index
            ));
        }
        drop(st);
        self.changed.notify_all();
    }
}

/// The gRPC service.
struct Service(Arc<Shared>);

#[tonic::async_trait]
impl Control for Service {
    type SessionStream = Outgoing;

    async fn session(
        &self,
        request: Request<Streaming<AgentMessage>>,
    ) -> Result<Response<Self::SessionStream>, Status> {
        let peer = request.remote_addr().map(|a| a.to_string()).unwrap_or_default();
        // The role the peer's certificate was made for (the first of its
        // chain is its own): checked against what its Hello claims.
        let cert_role = request
            .peer_certs()
            .and_then(|chain| chain.first().map(|c| CertRole::of_der(c)))
            .unwrap_or_else(|| CertRole::Other("no certificate".into()));
        let mut inbound = request.into_inner();
        let hello = match tokio::time::timeout(Duration::from_secs(10), inbound.message()).await {
            Ok(Ok(Some(AgentMessage {
                kind: Some(FromAgent::Hello(h)),
            }))) => h,
            _ => return Err(Status::invalid_argument("the first message of a session must be Hello")),
        };
        let shared = &self.0;
        if hello.protocol_version != PROTOCOL_VERSION {
            let why = format!(
                "refused: the peer at {peer} speaks control protocol version {}, this controller speaks version \
                 {PROTOCOL_VERSION}; run the same benchlab version on both",
                hello.protocol_version
            );
            shared.log(why.clone());
            return Err(Status::failed_precondition(why));
        }
        // A lab certificate registers only in its own role: agent-I's as
        // agent index I, the monitor's as a monitor. (An index beyond the
        // run's agents is refused first, with the run's size.)
        let role = Role::try_from(hello.role);
        let claimed = match role {
            Ok(Role::Agent) if hello.index < shared.opts.agents => Some(CertRole::Agent(hello.index)),
            Ok(Role::Monitor) => Some(CertRole::Monitor),
            _ => None,
        };
        if let Some(claimed) = claimed.filter(|c| *c != cert_role) {
            let says = match claimed {
                CertRole::Agent(i) => format!("agent index {i}"),
                _ => "monitor".to_string(),
            };
            let why = format!(
                "refused: the peer at {peer} has the certificate of {cert_role}, but its Hello says {says}; \
                 use {} and its key",
                match claimed {
                    CertRole::Agent(i) => format!("agent-{i}.pem"),
                    _ => "monitor.pem".to_string(),
                }
            );
            shared.log(why.clone());
            return Err(Status::permission_denied(why));
        }
        let (tx, rx) = unbounded_channel();
        let welcome = ControllerMessage {
            kind: Some(ToAgent::Welcome(Welcome {
                protocol_version: PROTOCOL_VERSION,
            })),
        };
        let _ = tx.send(Out::Message(Ok(welcome)));
        match role {
            Ok(Role::Agent) => self.agent(hello, peer, inbound, tx)?,
            Ok(Role::Monitor) => self.monitor(hello, peer, inbound, tx)?,
            _ => return Err(Status::invalid_argument("Hello names no role (agent or monitor)")),
        }
        Ok(Response::new(Outgoing { rx, list: None }))
    }
}

impl Service {
    fn agent(&self, hello: Hello, peer: String, inbound: Streaming<AgentMessage>, tx: Outbound) -> Result<(), Status> {
        let shared = Arc::clone(&self.0);
        let index = hello.index;
        if index >= shared.opts.agents {
            let why = format!(
                "refused: agent index {index} from {peer}, but this run has {} (indexes 0 to {})",
                agents_word(shared.opts.agents),
                shared.opts.agents.saturating_sub(1)
            );
            shared.log(why.clone());
            return Err(Status::out_of_range(why));
        }
        let link = Arc::new(Link {
            index,
            peer: peer.clone(),
            tx: Mutex::new(Some(tx)),
            last_heard: Mutex::new(Instant::now()),
            lost: Mutex::new(None),
            clients: Mutex::new(HashMap::new()),
            pongs: Mutex::new(None),
            clock: Mutex::new((0, 0)),
        });
        {
            let mut st = shared.state();
            if let Some(old) = st.agents.get(&index).filter(|l| l.is_lost().is_none()) {
                let why = format!(
                    "refused: agent index {index} from {peer} is already connected from {}",
                    old.peer
                );
                drop(st);
                shared.log(why.clone());
                return Err(Status::already_exists(why));
            }
            // Handed over before any order: the phase's URL lists.
            let max = shared.url_chunk_bytes.load(Ordering::Relaxed);
            for list in &st.lists {
                link.send_list(list, max);
            }
            st.sessions += 1;
        }
        let reader_link = Arc::clone(&link);
        let reader_shared = Arc::clone(&shared);
        tokio::spawn(async move {
            read_agent(&reader_shared, &reader_link, inbound).await;
            reader_shared.state().sessions -= 1;
            reader_shared.changed.notify_all();
        });
        tokio::spawn(watch(Arc::clone(&shared), Arc::clone(&link)));
        // The registration's clock check needs the stream running: after
        // this handler returns.
        tokio::task::spawn_blocking(move || {
            let check = link.clock_check();
            let mut st = shared.state();
            match check {
                Ok((offset, rtt)) => {
                    let h = st.history.entry(index).or_insert_with(|| AgentResult {
                        index,
                        peer: peer.clone(),
                        host: hello.host.clone(),
                        clients: Vec::new(),
                        clock: Vec::new(),
                        lost: None,
                    });
                    // A rejoining agent keeps its earlier loss on record.
                    h.peer = peer.clone();
                    h.host = hello.host.clone();
                    h.clock.push(ClockCheck {
                        at: "registration".into(),
                        offset_us: offset / 1000,
                        rtt_us: rtt / 1000,
                    });
                    st.agents.insert(index, Arc::clone(&link));
                    drop(st);
                    shared.log(format!(
                        "agent {index} registered from {peer} ({}), clock offset {} us, round trip {} us",
                        hello.host,
                        offset / 1000,
                        rtt / 1000
                    ));
                    shared.changed.notify_all();
                }
                Err(why) => {
                    drop(st);
                    shared.lose(&link, why);
                }
            }
        });
        Ok(())
    }

    fn monitor(
        &self,
        hello: Hello,
        peer: String,
        mut inbound: Streaming<AgentMessage>,
        tx: Outbound,
    ) -> Result<(), Status> {
        let shared = Arc::clone(&self.0);
        let host = hello.host;
        {
            let mut st = shared.state();
            if !st.monitors_connected.insert(host.clone()) {
                let why = format!("refused: a monitor of host {host} is already connected (this one from {peer})");
                drop(st);
                shared.log(why.clone());
                return Err(Status::already_exists(why));
            }
            st.samples.entry(host.clone()).or_default();
            st.monitor_tx.insert(host.clone(), tx);
            st.sessions += 1;
        }
        shared.log(format!("monitor of {host} registered from {peer}"));
        shared.changed.notify_all();
        tokio::spawn(async move {
            let mut beat = tokio::time::interval(HEARTBEAT);
            let mut last = Instant::now();
            let why = loop {
                tokio::select! {
                    m = inbound.message() => match m {
                        Ok(Some(m)) => {
                            last = Instant::now();
                            if let Some(FromAgent::Sample(s)) = m.kind {
                                shared
                                    .state()
                                    .samples
                                    .entry(host.clone())
                                    .or_default()
                                    .push((time_of_nanos(s.unix_nanos), s.payload));
                            }
                        }
                        Ok(None) => break "it closed its connection".to_string(),
                        Err(s) => break format!("the connection failed: {}", s.message()),
                    },
                    _ = beat.tick() => {
                        if last.elapsed() > SILENCE_LIMIT {
                            break format!("silent for {} s", SILENCE_LIMIT.as_secs());
                        }
                        if let Some(tx) = shared.state().monitor_tx.get(&host) {
                            let _ = tx.send(Out::Message(Ok(ControllerMessage { kind: Some(ToAgent::Heartbeat(Heartbeat { unix_nanos: now_nanos() })) })));
                        }
                    }
                }
            };
            if shared.state().ending {
                shared.log(format!("monitor of {host}: session ended with the run"));
            } else {
                shared.log(format!("monitor of {host} gone: {why}"));
            }
            let mut st = shared.state();
            st.monitors_connected.remove(&host);
            st.monitor_tx.remove(&host);
            st.sessions -= 1;
            drop(st);
            shared.changed.notify_all();
        });
        Ok(())
    }
}

/// Reads an agent's messages until its stream ends, routing each to the
/// driver of its client.
async fn read_agent(shared: &Shared, link: &Link, mut inbound: Streaming<AgentMessage>) {
    let why = loop {
        let m = match inbound.message().await {
            Ok(Some(m)) => m,
            Ok(None) => break "the agent closed its connection".to_string(),
            Err(s) => break format!("the connection failed: {}", s.message()),
        };
        *lock(&link.last_heard) = Instant::now();
        let route = |client: u32, e: Event| {
            if let Some(tx) = lock(&link.clients).get(&client) {
                let _ = tx.send(e);
            }
        };
        match m.kind {
            Some(FromAgent::Pong(p)) => {
                let t4 = now_nanos();
                if let Some(tx) = lock(&link.pongs).as_ref() {
                    let _ = tx.send((p, t4));
                }
            }
            Some(FromAgent::Started(s)) => route(
                s.client,
                Event::Started(if s.error.is_empty() { Ok(()) } else { Err(s.error) }),
            ),
            Some(FromAgent::Second(p)) => match decode_second(&p.json) {
                Ok(s) => route(p.client, Event::Second(Box::new(s))),
                Err(e) => break format!("it sent a second that does not decode: {e}"),
            },
            Some(FromAgent::Report(p)) => match decode_report(&p.json) {
                Ok(r) => route(p.client, Event::Report(Box::new(r))),
                Err(e) => break format!("it sent a report that does not decode: {e}"),
            },
            Some(FromAgent::FileSecond(p)) => match decode_file_second(&p.json) {
                Ok(s) => route(p.client, Event::FileSecond(s)),
                Err(e) => break format!("it sent a file second that does not decode: {e}"),
            },
            Some(FromAgent::FileReport(p)) => match decode_file_report(&p.json) {
                Ok(r) => route(p.client, Event::FileReport(Box::new(r))),
                Err(e) => break format!("it sent a file report that does not decode: {e}"),
            },
            Some(FromAgent::Heartbeat(_)) => {}
            Some(FromAgent::Hello(_)) | Some(FromAgent::Sample(_)) | None => {
                break "it sent a message an agent does not send".to_string()
            }
        }
    };
    shared.lose(link, why);
}

/// Heartbeats to the agent every second; declares it lost after
/// [`SILENCE_LIMIT`] of silence.
async fn watch(shared: Arc<Shared>, link: Arc<Link>) {
    let mut beat = tokio::time::interval(HEARTBEAT);
    loop {
        beat.tick().await;
        if link.is_lost().is_some() {
            return;
        }
        if lock(&link.last_heard).elapsed() > SILENCE_LIMIT {
            shared.lose(&link, format!("silent for {} s", SILENCE_LIMIT.as_secs()));
            return;
        }
        link.send(ToAgent::Heartbeat(Heartbeat {
            unix_nanos: now_nanos(),
        }));
    }
}

type TlsConn = tokio_rustls::server::TlsStream<tokio::net::TcpStream>;

/// Accepts connections and does their TLS handshakes, each within
/// [`HANDSHAKE_TIMEOUT`], at most [`MAX_PENDING_HANDSHAKES`] at once (the
/// oldest dropped for a new one); hands the finished ones to the gRPC
/// server and logs a line for each refused peer, naming why.
async fn accept_tls(
    listener: tokio::net::TcpListener,
    config: Arc<rustls::ServerConfig>,
    shared: Arc<Shared>,
    out: tokio::sync::mpsc::Sender<Result<TlsConn, std::io::Error>>,
) {
    let acceptor = tokio_rustls::TlsAcceptor::from(config);
    let pending: Arc<Mutex<VecDeque<(u64, SocketAddr, tokio::task::AbortHandle)>>> = Arc::default();
    let mut next = 0u64;
    loop {
        let (tcp, addr) = match listener.accept().await {
            Ok(c) => c,
            Err(e) => {
                // Out of descriptors, most likely: let some close.
                shared.log(format!("cannot accept a connection: {e}"));
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let id = next;
        next += 1;
        let acceptor = acceptor.clone();
        let task_shared = Arc::clone(&shared);
        let task_pending = Arc::clone(&pending);
        let out = out.clone();
        // Held across the spawn: the task removes its entry only after it
        // is in.
        let mut p = lock(&pending);
        let task = tokio::spawn(async move {
            // The handshake (which owns the socket) outlives the timeout
            // until the end of the task, so the peer sees its connection
            // closed only after the refusal is logged.
            let accept = acceptor.accept(tcp);
            tokio::pin!(accept);
            let shake = tokio::time::timeout(HANDSHAKE_TIMEOUT, accept.as_mut()).await;
            lock(&task_pending).retain(|(i, _, _)| *i != id);
            match shake {
                Ok(Ok(conn)) => {
                    let _ = out.send(Ok(conn)).await;
                }
                Ok(Err(e)) => {
                    let why = crate::tls::tls_error_in(&e)
                        .map(crate::tls::refused_peer_words)
                        .unwrap_or_else(|| format!("its TLS handshake failed: {e}"));
                    task_shared.log(format!("refused: the peer at {addr}: {why}"));
                }
                Err(_) => task_shared.log(format!(
                    "refused: the peer at {addr} finished no TLS handshake within {} s",
                    HANDSHAKE_TIMEOUT.as_secs()
                )),
            }
        });
        p.push_back((id, addr, task.abort_handle()));
        while p.len() > MAX_PENDING_HANDSHAKES {
            if let Some((_, old, h)) = p.pop_front() {
                h.abort();
                shared.log(format!(
                    "refused: the peer at {old}: its TLS handshake was still unfinished with {MAX_PENDING_HANDSHAKES} \
                     others pending"
                ));
            }
        }
    }
}

/// The controller's end of the control protocol: listens, registers
/// agents and monitors, and drives the agents' clients as a
/// [`ClientPool`].
pub struct RemotePool {
    shared: Arc<Shared>,
    local_addr: SocketAddr,
    runtime: Option<tokio::runtime::Runtime>,
    stop_server: Option<tokio::sync::oneshot::Sender<()>>,
}

impl std::fmt::Debug for RemotePool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemotePool")
            .field("local_addr", &self.local_addr)
            .finish_non_exhaustive()
    }
}

/// A handle on the server monitors' samples.
#[derive(Clone)]
pub struct RemoteMonitors(Arc<Shared>);

impl RemoteMonitors {
    /// The hosts that sent samples (or registered), in name order.
    pub fn hosts(&self) -> Vec<String> {
        self.0.state().samples.keys().cloned().collect()
    }

    /// Every sample of `host` so far, in arrival order: its wall-clock
    /// time (the monitor's clock) and its payload as sent.
    pub fn samples(&self, host: &str) -> Vec<(SystemTime, Vec<u8>)> {
        self.0.state().samples.get(host).cloned().unwrap_or_default()
    }
}

impl RemotePool {
    /// Starts listening (TLS with client certificates of the lab's CA).
    pub fn listen(opts: ControllerOptions) -> Result<RemotePool, AgentError> {
        // The URL lists' chunks come and go a MiB at a time: keep them out
        // of the heap arenas (issue 27).
        benchlab_controller::plan::keep_large_blocks_mapped();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("benchlab-control")
            .enable_all()
            .build()
            .map_err(|e| AgentError::Io(format!("cannot start the control threads: {e}")))?;
        let tls = crate::tls::server_config(&opts.tls).map_err(AgentError::Tls)?;
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind(opts.listen))
            .map_err(|e| AgentError::Io(format!("cannot listen on {}: {e}", opts.listen)))?;
        let local_addr = listener
            .local_addr()
            .map_err(|e| AgentError::Io(format!("cannot listen on {}: {e}", opts.listen)))?;
        let shared = Arc::new(Shared {
            opts,
            url_chunk_bytes: AtomicUsize::new(URL_CHUNK_BYTES),
            state: Mutex::new(State {
                agents: BTreeMap::new(),
                history: BTreeMap::new(),
                monitors_connected: BTreeSet::new(),
                monitor_tx: BTreeMap::new(),
                samples: BTreeMap::new(),
                lists: Vec::new(),
                mixes: 0,
                aborted: None,
                sessions: 0,
                ending: false,
            }),
            changed: Condvar::new(),
        });
        let server = Server::builder().add_service(ControlServer::new(Service(Arc::clone(&shared))));
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let (tls_tx, tls_rx) = tokio::sync::mpsc::channel(8);
        let accepting = runtime.spawn(accept_tls(listener, tls, Arc::clone(&shared), tls_tx));
        let incoming = tokio_stream::wrappers::ReceiverStream::new(tls_rx);
        runtime.spawn(async move {
            let _ = server
                .serve_with_incoming_shutdown(incoming, async {
                    let _ = stop_rx.await;
                })
                .await;
            accepting.abort();
        });
        Ok(RemotePool {
            shared,
            local_addr,
            runtime: Some(runtime),
            stop_server: Some(stop_tx),
        })
    }

    /// Where the controller listens.
    /// Sets the largest URL list chunk (default [`URL_CHUNK_BYTES`]): tests
    /// send a list in many chunks without millions of URLs.
    pub fn set_url_chunk_bytes(&self, bytes: usize) {
        self.shared.url_chunk_bytes.store(bytes, Ordering::Relaxed);
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The monitors' samples.
    pub fn monitors(&self) -> RemoteMonitors {
        RemoteMonitors(Arc::clone(&self.shared))
    }

    /// How many clients the agents run together.
    pub fn capacity(&self) -> usize {
        self.shared.opts.agents as usize * self.shared.opts.clients_per_agent as usize
    }

    /// Why the run must stop (an agent lost under
    /// `--abort-on-lost-agent`), if it must.
    pub fn aborted(&self) -> Option<String> {
        self.shared.state().aborted.clone()
    }

    /// Waits until every expected agent and monitor has registered;
    /// after `timeout`, says who is missing. `interrupted` (Ctrl-C) is
    /// asked every 100 ms and ends the wait.
    pub fn wait_for_peers(&self, timeout: Duration, interrupted: &dyn Fn() -> bool) -> Result<(), AgentError> {
        let deadline = Instant::now() + timeout;
        let opts = &self.shared.opts;
        let mut st = self.shared.state();
        loop {
            let missing: Vec<u32> = (0..opts.agents)
                .filter(|i| st.agents.get(i).is_none_or(|l| l.is_lost().is_some()))
                .collect();
            let monitors = st.monitors_connected.len() as u32;
            if missing.is_empty() && monitors >= opts.monitors {
                return Ok(());
            }
            if interrupted() {
                return Err(AgentError::Interrupted(format!(
                    "interrupted while waiting for agents and monitors: {} of {} registered",
                    opts.agents as usize - missing.len(),
                    agents_word(opts.agents)
                )));
            }
            let now = Instant::now();
            if now >= deadline {
                let mut why = format!("after {}: ", benchlab_format_duration(timeout));
                if opts.agents > 0 {
                    why.push_str(&format!(
                        "{} of {} registered",
                        opts.agents as usize - missing.len(),
                        agents_word(opts.agents)
                    ));
                }
                if !missing.is_empty() {
                    let list: Vec<String> = missing.iter().map(u32::to_string).collect();
                    why.push_str(&format!("; missing agent indexes: {}", list.join(", ")));
                }
                if opts.monitors > 0 {
                    if opts.agents > 0 {
                        why.push_str("; ");
                    }
                    why.push_str(&format!(
                        "{monitors} of {} monitors registered{}",
                        opts.monitors,
                        if st.monitors_connected.is_empty() {
                            String::new()
                        } else {
                            format!(
                                " ({})",
                                st.monitors_connected.iter().cloned().collect::<Vec<_>>().join(", ")
                            )
                        }
                    ));
                }
                return Err(AgentError::Missing(why));
            }
            st = self
                .shared
                .changed
                .wait_timeout(st, (deadline - now).min(Duration::from_millis(100)))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// Ends every session (agents then exit 0), waits briefly for them to
    /// close, and stops listening.
    pub fn shutdown(mut self) {
        self.close();
    }

    fn close(&mut self) {
        self.shared.state().ending = true;
        let links: Vec<Arc<Link>> = self.shared.state().agents.values().cloned().collect();
        for l in links {
            lock(&l.tx).take();
        }
        self.shared.state().monitor_tx.clear();
        // Monitors and agents see their stream end; give them a moment to
        // close theirs, so they exit cleanly rather than on a reset.
        let deadline = Instant::now() + Duration::from_secs(3);
        let mut st = self.shared.state();
        while st.sessions > 0 && Instant::now() < deadline {
            st = self
                .shared
                .changed
                .wait_timeout(st, Duration::from_millis(100))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        drop(st);
        if let Some(tx) = self.stop_server.take() {
            let _ = tx.send(());
        }
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_timeout(Duration::from_secs(1));
        }
    }
}

impl Drop for RemotePool {
    fn drop(&mut self) {
        if self.runtime.is_some() {
            self.close();
        }
    }
}

/// "1 agent", "2 agents".
pub fn agents_word(n: u32) -> String {
    if n == 1 {
        "1 agent".into()
    } else {
        format!("{n} agents")
    }
}

fn benchlab_format_duration(d: Duration) -> String {
    format!("{} s", d.as_secs_f64())
}

impl ClientPool for RemotePool {
    fn load_urls(&self, urls: &Arc<UrlList>) -> Result<(), DriverError> {
        if !urls.is_intact() {
            return Err(DriverError::UnknownUrls(urls.id.clone()));
        }
        // The list's cost on the wire, per URL (issue 27): its head, its
        // chunks (paths and binary columns) and each chunk's envelope and
        // gRPC prefix, counted without making them.
        let max = self.shared.url_chunk_bytes.load(Ordering::Relaxed);
        let chunks = UrlChunks::new(Arc::clone(urls), max);
        let (count, bytes) = chunks.totals();
        let envelope = |data: usize| {
            5 + prost::Message::encoded_len(&ControllerMessage {
                kind: Some(ToAgent::UrlChunk(UrlChunk {
                    list: urls.id.clone(),
                    seq: u32::try_from(count).unwrap_or(u32::MAX),
                    data: Vec::new(),
                    last: true,
                })),
            }) + prost::encoding::encoded_len_varint(data as u64)
        };
        let head = chunks.head().len();
        let wire = (head + envelope(head)) as u64 + bytes + (count * envelope(max)) as u64;
        let n = urls.urls.len();
        self.shared.log(format!(
            "URL list {}: {n} URLs, {wire} bytes on the wire ({:.1} bytes a URL, in {})",
            urls.id,
            wire as f64 / n.max(1) as f64,
            if count == 1 {
                "1 chunk".to_string()
            } else {
                format!("{count} chunks")
            },
        ));
        let mut st = self.shared.state();
        for l in st.agents.values() {
            l.send_list(urls, max);
        }
        st.lists.push(Arc::clone(urls));
        Ok(())
    }

    fn driver(&self, client: usize) -> Box<ClientDriver> {
        Box::new(Remote::<WebClient>::new(&self.shared, client))
    }

    fn before_mix(&self) -> Result<Duration, DriverError> {
        let (links, mix) = {
            let mut st = self.shared.state();
            if let Some(why) = &st.aborted {
                return Err(DriverError::Remote(format!("the run stops: {why}")));
            }
            st.mixes += 1;
            let links: Vec<Arc<Link>> = st.agents.values().filter(|l| l.is_lost().is_none()).cloned().collect();
            (links, st.mixes)
        };
        // The agents' clocks a few at a time: a check costs a few round
        // trips, and 64 at once on a small controller measure mostly each
        // other (round trips of 10 ms where one alone takes 0.3 ms), and
        // half the round trip is how far the offset may be off.
        let checks: Vec<(Arc<Link>, Result<Clock, String>)> = links
            .chunks(CLOCK_CHECKS_AT_ONCE)
            .flat_map(|batch| {
                std::thread::scope(|s| {
                    let handles: Vec<_> = batch
                        .iter()
                        .map(|l| {
                            let l = Arc::clone(l);
                            s.spawn(move || {
                                let c = l.clock_check();
                                (l, c)
                            })
                        })
                        .collect();
                    handles.into_iter().filter_map(|h| h.join().ok()).collect::<Vec<_>>()
                })
            })
            .collect();
        let mut worst_rtt = 0u64;
        for (link, check) in &checks {
            match check {
                Ok((offset, rtt)) => {
                    worst_rtt = worst_rtt.max(*rtt);
                    if let Some(h) = self.shared.state().history.get_mut(&link.index) {
                        h.clock.push(ClockCheck {
                            at: format!("mix {mix}"),
                            offset_us: offset / 1000,
                            rtt_us: rtt / 1000,
                        });
                    }
                }
                Err(why) => self.shared.lose(link, why.clone()),
            }
        }
        if let Some(why) = self.aborted() {
            return Err(DriverError::Remote(format!("the run stops: {why}")));
        }
        // Each start is acknowledged in turn: leave a round trip per
        // client, and some slack for the agents to create their threads.
        let clients = links.len() as u64 * u64::from(self.shared.opts.clients_per_agent.max(1));
        Ok(Duration::from_millis(200) + Duration::from_nanos(worst_rtt.saturating_mul(clients + 4)))
    }

    fn stop_requested(&self) -> bool {
        self.shared.state().aborted.is_some()
    }

    fn clients_left(&self, clients: usize) -> Result<(), DriverError> {
        let k = self.shared.opts.clients_per_agent.max(1) as usize;
        let st = self.shared.state();
        // The agents that run this mix's clients: agent c ÷ K runs client c.
        let indexes: Vec<u32> = (0..clients.div_ceil(k) as u32).collect();
        if indexes
            .iter()
            .any(|i| st.agents.get(i).is_some_and(|l| l.is_lost().is_none()))
        {
            return Ok(());
        }
        let named: Vec<String> = indexes
            .iter()
            .map(|i| match st.history.get(i) {
                Some(h) => format!(
                    "agent {i} (host {}, {}){}",
                    if h.host.is_empty() { "unnamed" } else { &h.host },
                    h.peer,
                    h.lost.as_ref().map(|w| format!(": {w}")).unwrap_or_default()
                ),
                None => format!("agent {i} (never registered)"),
            })
            .collect();
        Err(DriverError::Remote(format!(
            "no client is left to run the mix: every agent it needs was lost ({})",
            named.join("; ")
        )))
    }

    fn file_driver(&self, client: usize) -> Option<Box<FileClientDriver>> {
        Some(Box::new(Remote::<FileClient>::new(&self.shared, client)))
    }

    fn agents(&self) -> Vec<AgentResult> {
        let k = self.shared.opts.clients_per_agent.max(1) as usize;
        self.shared
            .state()
            .history
            .values()
            .map(|h| AgentResult {
                clients: (h.index as usize * k + 1..=(h.index as usize + 1) * k).collect(),
                ..h.clone()
            })
            .collect()
    }
}

/// What a client of one kind (the controller's [`WebClient`] or
/// [`FileClient`]) hears from its agent: the one remote driver below
/// ([`Remote`]) is generic over it, so both kinds start, stream, stop, get
/// lost and finish the same way.
trait RemoteKind: ClientKind {
    /// What event `e` is to a client of this kind.
    fn heard(e: Event) -> Heard<Self::Second, Self::Report>;
}

/// An event as a client of one kind hears it.
enum Heard<S, R> {
    Second(S),
    /// Its end: what it measured, or why it could not run.
    Report(Result<R, String>),
    Lost(String),
    /// Another kind's event, or a start acknowledgement (read by
    /// [`Remote::begin`]).
    Other,
}

impl RemoteKind for WebClient {
    fn heard(e: Event) -> Heard<Second, ClientReport> {
        match e {
            Event::Second(s) => Heard::Second(*s),
            Event::Report(r) => Heard::Report(Ok(*r)),
            Event::Lost(why) => Heard::Lost(why),
            Event::Started(_) | Event::FileSecond(_) | Event::FileReport(_) => Heard::Other,
        }
    }
}

impl RemoteKind for FileClient {
    fn heard(e: Event) -> Heard<LiveSecond, FileEnd> {
        match e {
            Event::FileSecond(s) => Heard::Second(s),
            // It could not run (its target unreachable from the agent,
            // say): out of the mix, saying why.
            Event::FileReport(r) => Heard::Report(*r),
            Event::Lost(why) => Heard::Lost(why),
            Event::Started(_) | Event::Second(_) | Event::Report(_) => Heard::Other,
        }
    }
}

/// One client of a mix, run by an agent.
struct Remote<K: RemoteKind> {
    shared: Arc<Shared>,
    client: u32,
    index: u32,
    link: Option<Arc<Link>>,
    rx: Option<std_mpsc::Receiver<Event>>,
    report: Option<K::Report>,
    lost: Option<String>,
    finished: bool,
    /// The agent's clock check the start was given with: it puts the
    /// client's first send on the controller's clock.
    clock: Clock,
    /// The start order was sent and its answer is due by then.
    ack_due: Option<Instant>,
}

impl<K: RemoteKind> Remote<K> {
    fn new(shared: &Arc<Shared>, client: usize) -> Remote<K> {
        let k = shared.opts.clients_per_agent.max(1) as usize;
        let index = (client / k) as u32;
        let link = shared.state().agents.get(&index).cloned();
        Remote {
            shared: Arc::clone(shared),
            client: client as u32,
            index,
            link,
            rx: None,
            report: None,
            lost: None,
            finished: false,
            clock: (0, 0),
            ack_due: None,
        }
    }

    fn mark_lost(&mut self, why: String) {
        self.lost = Some(why);
        self.finished = true;
    }

    fn handle(&mut self, e: Event) -> Option<K::Second> {
        match K::heard(e) {
            Heard::Second(s) => return Some(s),
            Heard::Report(Ok(r)) => {
                self.report = Some(r);
                self.finished = true;
            }
            Heard::Report(Err(why)) | Heard::Lost(why) => self.mark_lost(why),
            Heard::Other => {}
        }
        None
    }

    /// Sends the start `order` makes of the agent's clock offset (ns to
    /// add to a controller instant); [`Remote::acknowledged`] waits for its
    /// answer. A mix's orders go out one after another and are answered
    /// together: waiting for each answer before the next order made the
    /// last of 64 agents' starts wait for 63 round trips and 63 clients'
    /// creation, past the start instant on a busy controller.
    fn begin(&mut self, order: impl FnOnce(i64) -> Result<ToAgent, DriverError>) -> Result<(), DriverError> {
        if let Some(why) = self.shared.state().aborted.clone() {
            return Err(DriverError::Remote(format!("the run stops: {why}")));
        }
        let Some(link) = self.link.clone() else {
            return Err(DriverError::Remote(format!(
                "client {} has no agent: agent {} never registered",
                self.client + 1,
                self.index
            )));
        };
        if let Some(why) = link.is_lost() {
            // Out of this mix too; it keeps its number.
            self.mark_lost(format!("agent {} was lost earlier: {why}", self.index));
            return Ok(());
        }
        let (tx, rx) = std_mpsc::channel();
        lock(&link.clients).insert(self.client, tx);
        self.rx = Some(rx);
        self.clock = *lock(&link.clock);
        link.send(order(self.clock.0)?);
        self.ack_due = Some(Instant::now() + ANSWER_TIMEOUT);
        Ok(())
    }

    /// Waits for the agent's answer to the start order (once; at once when
    /// there is none to wait for).
    fn acknowledged(&mut self) -> Result<(), DriverError> {
        let Some(deadline) = self.ack_due.take() else {
            return Ok(());
        };
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let e = self.rx.as_ref().map(|r| r.recv_timeout(left));
            match e {
                Some(Ok(Event::Started(Ok(())))) => return Ok(()),
                Some(Ok(Event::Started(Err(why)))) => {
                    self.finished = true;
                    return Err(DriverError::Remote(format!("agent {}: {why}", self.index)));
                }
                Some(Ok(Event::Lost(why))) => {
                    self.mark_lost(why);
                    return Ok(());
                }
                Some(Ok(_)) => continue,
                _ => {
                    self.halt();
                    self.finished = true;
                    return Err(DriverError::Remote(format!(
                        "agent {} did not acknowledge the start of client {} within {} s",
                        self.index,
                        self.client + 1,
                        ANSWER_TIMEOUT.as_secs()
                    )));
                }
            }
        }
    }

    fn halt(&mut self) {
        if let Some(l) = &self.link {
            l.send(ToAgent::Stop(Stop { client: self.client }));
        }
    }

    fn second(&mut self, timeout: Duration) -> Option<K::Second> {
        // A caller that did not wait for the start's answer: it comes first.
        if let Err(e) = self.acknowledged() {
            self.mark_lost(e.to_string());
        }
        if self.finished {
            return None;
        }
        let e = self.rx.as_ref()?.recv_timeout(timeout);
        match e {
            Ok(e) => self.handle(e),
            Err(std_mpsc::RecvTimeoutError::Timeout) => None,
            Err(std_mpsc::RecvTimeoutError::Disconnected) => {
                self.mark_lost("its link ended".into());
                None
            }
        }
    }

    fn end(&mut self) -> Result<K::Report, ClientLost> {
        if let Err(e) = self.acknowledged() {
            self.mark_lost(e.to_string());
        }
        // The watchdog turns silence into a loss within seconds, so this
        // wait ends.
        while !self.finished && self.rx.is_some() {
            let e = self.rx.as_ref().map(|r| r.recv_timeout(Duration::from_secs(1)));
            match e {
                Some(Ok(e)) => {
                    self.handle(e);
                }
                Some(Err(std_mpsc::RecvTimeoutError::Timeout)) => {}
                _ => self.mark_lost("its link ended".into()),
            }
        }
        if let Some(l) = &self.link {
            lock(&l.clients).remove(&self.client);
        }
        self.finished = true;
        if let Some(r) = self.report.take() {
            return Ok(r);
        }
        Err(ClientLost {
            why: format!(
                "agent {}: {}",
                self.index,
                self.lost.clone().unwrap_or_else(|| "never started".into())
            ),
        })
    }
}

impl<K: RemoteKind> Drop for Remote<K> {
    fn drop(&mut self) {
        if !self.finished {
            self.halt();
        }
        if let Some(l) = &self.link {
            lock(&l.clients).remove(&self.client);
        }
    }
}

impl Driver<WebClient> for Remote<WebClient> {
    fn start(&mut self, plan: ClientPlan, start_at: SystemTime) -> Result<(), DriverError> {
        let client = self.client;
        let threads_from_cpus_of = if self.shared.opts.threads_by_agent {
            self.shared.opts.clients_per_agent.max(1)
        } else {
            0
        };
        self.begin(|offset| {
            let plan = serde_json::to_vec(&plan).map_err(|e| DriverError::Remote(e.to_string()))?;
            Ok(ToAgent::Start(Start {
                client,
                plan,
                // The start on the agent's clock.
                start_unix_nanos: crate::nanos_of(start_at).saturating_add(offset),
                threads_from_cpus_of,
            }))
        })
    }

    fn started(&mut self) -> Result<(), DriverError> {
        self.acknowledged()
    }

    fn stop(&mut self) {
        self.halt();
    }

    fn next_second(&mut self, timeout: Duration) -> Option<Second> {
        self.second(timeout)
    }

    fn is_finished(&self) -> bool {
        self.finished
    }

    fn finish(&mut self) -> Result<ClientReport, ClientLost> {
        let mut report = self.end()?;
        // The agent's clock less its offset is the controller's, to within
        // half the check's round trip (NTP's bound). The start went out
        // with the same offset, so an offset that is off moves the start
        // and the first send together: the spread shows how the client
        // kept its start, and the bound is what it cannot see.
        on_controller_clock(&mut report, self.clock);
        Ok(report)
    }
}

/// Puts a remote client's first send on the controller's clock: the
/// agent's time less `clock`'s offset (agent − controller), known to half
/// its round trip.
fn on_controller_clock(report: &mut ClientReport, (offset, rtt): Clock) {
    if let Some(t) = report.first_send_unix_ns {
        report.first_send_unix_ns = Some(t.saturating_sub(offset));
        report.first_send_uncertainty_ns = rtt.div_ceil(2);
    }
}

impl Driver<FileClient> for Remote<FileClient> {
    fn start(&mut self, order: FileOrder, start_at: SystemTime) -> Result<(), DriverError> {
        let client = self.client;
        self.begin(|offset| {
            let order = serde_json::to_vec(&order).map_err(|e| DriverError::Remote(e.to_string()))?;
            Ok(ToAgent::FileStart(FileStart {
                client,
                order,
                start_unix_nanos: crate::nanos_of(start_at).saturating_add(offset),
            }))
        })
    }

    fn started(&mut self) -> Result<(), DriverError> {
        self.acknowledged()
    }

    fn stop(&mut self) {
        self.halt();
    }

    fn next_second(&mut self, timeout: Duration) -> Option<LiveSecond> {
        self.second(timeout)
    }

    fn is_finished(&self) -> bool {
        self.finished
    }

    fn finish(&mut self) -> Result<FileEnd, ClientLost> {
        let mut end = self.end()?;
        // As a web client's (above): on the controller's clock, to within
        // half the clock check's round trip.
        let (offset, rtt) = self.clock;
        let total = &mut end.measure.total;
        if let Some(t) = total.first_send_unix_ns {
            total.first_send_unix_ns = Some(t.saturating_sub(offset));
            end.first_send_uncertainty_ns = rtt.div_ceil(2);
        }
        for c in &mut end.measure.clients {
            c.first_send_unix_ns = c.first_send_unix_ns.map(|t| t.saturating_sub(offset));
        }
        Ok(end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_first_send_goes_on_the_controllers_clock_within_half_the_round_trip() {
        let mut report: ClientReport = serde_json::from_value(serde_json::json!({
            "stats": benchlab_engine::Stats::new(1), "seconds": [], "in_flight": 0,
            "cpu_user": {"secs": 0, "nanos": 0}, "cpu_system": {"secs": 0, "nanos": 0},
            "elapsed": {"secs": 0, "nanos": 0}, "tls_error": null, "users_arrived": 1,
            "users_waiting": 0, "peak_connections": 0, "threads_lost": 0, "h2_settings": null,
            "first_send_unix_ns": 1_000_000_000_000i64
        }))
        .expect("a report");
        // The agent's clock runs 2.5 ms ahead of the controller's; the check
        // took a round trip of 301 µs.
        on_controller_clock(&mut report, (2_500_000, 301_000));
        assert_eq!(report.first_send_unix_ns, Some(1_000_000_000_000 - 2_500_000));
        assert_eq!(report.first_send_uncertainty_ns, 150_500);
        // A client that sent nothing has nothing to correct.
        report.first_send_unix_ns = None;
        report.first_send_uncertainty_ns = 0;
        on_controller_clock(&mut report, (2_500_000, 301_000));
        assert_eq!((report.first_send_unix_ns, report.first_send_uncertainty_ns), (None, 0));
    }
}
