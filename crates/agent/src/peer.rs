//! The side that dials out: an agent on a load machine, and the sending
//! half of a server monitor. Neither listens for anything: a peer opens
//! one stream to the controller and takes orders only on it.

use crate::proto::agent_message::Kind as FromAgent;
use crate::proto::control::control_client::ControlClient;
use crate::proto::controller_message::Kind as ToAgent;
use crate::proto::*;
use crate::tls::TlsFiles;
use crate::{now_nanos, time_of_nanos, AgentError};
use benchlab_controller::plan::{ClientPlan, UrlListReceiver};
use benchlab_controller::{ClientPool, InProcess};
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
use tokio::sync::mpsc::{unbounded_channel, UnboundedSender};
use tokio_stream::wrappers::UnboundedReceiverStream;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Identity};

/// A peer without a word from the controller this long stops its load and
/// exits: five of the controller's heartbeats (one a second) missed in a
/// row, so a loaded machine's late beat does not end a live session. It is
/// above the controller's own limit (3 s, [`crate::controller::SILENCE_LIMIT`]):
/// when the link itself is gone, the controller has marked the agent's
/// clients lost before the agent gives up.
pub const CONTROLLER_SILENCE_LIMIT: Duration = Duration::from_secs(5);

/// After [`CONTROLLER_SILENCE_LIMIT`], how long a peer waits for what may
/// already be on its connection before calling the controller lost.
const SILENCE_RECHECK: Duration = Duration::from_millis(250);

/// The largest message an agent takes from its controller: a URL list
/// comes in chunks of 1 MiB, so this bounds the rest — a list's head (its
/// classes, requests and flow files), a file order, which carries its
/// workload's own text (a loadfile of up to 256 MiB, docs/design.md).
pub const MAX_CONTROLLER_MESSAGE_BYTES: usize = 512 << 20;

/// The most a URL list's paths and columns may take on an agent, summed
/// over its chunks: checked against what its head announces before any
/// room is taken (about 50 bytes a URL, so some ten million URLs).
pub const MAX_URL_LIST_BYTES: u64 = 512 << 20;

/// Lists whose refusal an agent remembers, to answer an order naming one
/// with why (the newest kept).
const REFUSED_LISTS_KEPT: usize = 16;

/// The URL lists arriving from the controller: the one whose chunks are
/// coming (the stream is ordered: one at a time), and the reasons of the
/// latest refused, so an order naming one is answered with why.
#[derive(Default)]
struct Arriving {
    list: Option<UrlListReceiver>,
    refused: VecDeque<(String, String)>,
}

impl Arriving {
    fn refuse(&mut self, id: &str, why: String, log: &dyn Fn(String), index: u32) {
        log(format!("agent {index}: refused {why}"));
        if self.refused.len() == REFUSED_LISTS_KEPT {
            self.refused.pop_front();
        }
        self.refused.push_back((id.to_string(), why));
    }

    /// Why list `id` cannot run here, if it cannot: refused, or its
    /// chunks still coming.
    fn why_not(&self, id: &str) -> Option<String> {
        if let Some(r) = self.list.as_ref().filter(|r| r.id() == id) {
            return Some(format!("URL list {id} is incomplete: {}", r.progress()));
        }
        self.refused
            .iter()
            .rev()
            .find(|(i, _)| i == id)
            .map(|(_, why)| why.clone())
    }
}

/// Where the controller is and how to prove who we are.
#[derive(Debug, Clone)]
pub struct PeerOptions {
    /// `HOST:PORT`.
    pub controller: String,
    /// The name the controller's certificate must carry; default: HOST.
    pub server_name: Option<String>,
    pub tls: TlsFiles,
    /// How long to keep trying to reach the controller (it may start
    /// after the agents).
    pub connect_timeout: Duration,
}

/// An agent's identity.
#[derive(Debug, Clone)]
pub struct AgentOptions {
    pub peer: PeerOptions,
    pub index: u32,
    /// This host's name, for the results.
    pub host: String,
    /// The protocol version to state (tests state another to see the
    /// refusal); [`PROTOCOL_VERSION`] otherwise.
    pub protocol_version: u32,
}

fn runtime() -> Result<tokio::runtime::Runtime, AgentError> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("benchlab-agent-net")
        .enable_all()
        .build()
        .map_err(|e| AgentError::Io(format!("cannot start the network thread: {e}")))
}

type Outbound = UnboundedSender<AgentMessage>;

fn send(tx: &Outbound, kind: FromAgent) {
    let _ = tx.send(AgentMessage { kind: Some(kind) });
}

/// Connects (retrying until `connect_timeout`) and registers; returns the
/// sender of our stream and the controller's stream after its Welcome.
async fn open(opts: &PeerOptions, hello: Hello) -> Result<(Outbound, tonic::Streaming<ControllerMessage>), AgentError> {
    let role = if hello.role == Role::Monitor as i32 {
        "monitor"
    } else {
        "agent"
    };
    let host = opts
        .controller
        .rsplit_once(':')
        .map(|(h, _)| h.trim_start_matches('[').trim_end_matches(']'))
        .ok_or_else(|| AgentError::Connect {
            at: opts.controller.clone(),
            why: "expected HOST:PORT".into(),
        })?;
    let tls = ClientTlsConfig::new()
        .ca_certificate(Certificate::from_pem(&opts.tls.ca))
        .identity(Identity::from_pem(&opts.tls.cert, &opts.tls.key))
        .domain_name(opts.server_name.clone().unwrap_or_else(|| host.to_string()));
    let connect_err = |why: String| AgentError::Connect {
        at: opts.controller.clone(),
        why,
    };
    let endpoint = Endpoint::from_shared(format!("https://{}", opts.controller))
        .map_err(|e| connect_err(e.to_string()))?
        .tls_config(tls)
        .map_err(|e| AgentError::Tls(e.to_string()))?
        .connect_timeout(Duration::from_secs(5));
    // A TLS-level refusal (either side's certificate) is a setup to fix:
    // no retry makes it pass.
    let tls_refused = |e: &(dyn std::error::Error + 'static)| {
        crate::tls::tls_error_in(e).map(|t| AgentError::TlsRefused {
            at: opts.controller.clone(),
            why: crate::tls::peer_tls_words(t),
        })
    };
    let name = opts.server_name.clone().unwrap_or_else(|| host.to_string());
    let deadline = Instant::now() + opts.connect_timeout;
    let channel: Channel = loop {
        // The probe first: a refusal of this certificate surfaces there
        // with its reason; through gRPC it is only "transport error".
        match probe_tls(opts, &name).await {
            Err(Probe::Refused(why)) => {
                return Err(AgentError::TlsRefused {
                    at: opts.controller.clone(),
                    why,
                })
            }
            Err(Probe::Unreachable(why)) => {
                if Instant::now() >= deadline {
                    return Err(connect_err(why));
                }
                tokio::time::sleep(Duration::from_millis(250)).await;
                continue;
            }
            Ok(()) => {}
        }
        match endpoint.connect().await {
            Ok(c) => break c,
            Err(e) => {
                if let Some(refused) = tls_refused(&e) {
                    return Err(refused);
                }
                if Instant::now() >= deadline {
                    return Err(connect_err(error_chain(&e)));
                }
                tokio::time::sleep(Duration::from_millis(250)).await
            }
        }
    };
    let (tx, rx) = unbounded_channel();
    send(&tx, FromAgent::Hello(hello));
    let refused = |s: tonic::Status| {
        tls_refused(&s).unwrap_or_else(|| AgentError::Refused {
            role,
            why: status_words(&s),
        })
    };
    let mut inbound = ControlClient::new(channel)
        .max_decoding_message_size(MAX_CONTROLLER_MESSAGE_BYTES)
        .session(UnboundedReceiverStream::new(rx))
        .await
        .map_err(refused)?
        .into_inner();
    match inbound.message().await {
        Ok(Some(ControllerMessage {
            kind: Some(ToAgent::Welcome(w)),
        })) if w.protocol_version == PROTOCOL_VERSION => Ok((tx, inbound)),
        Ok(Some(ControllerMessage {
            kind: Some(ToAgent::Welcome(w)),
        })) => Err(AgentError::Refused {
            role,
            why: format!(
                "the controller speaks control protocol version {}, this {role} speaks version {PROTOCOL_VERSION}",
                w.protocol_version
            ),
        }),
        Ok(_) => Err(AgentError::Refused {
            role,
            why: "the controller did not welcome us".into(),
        }),
        Err(s) => Err(refused(s)),
    }
}

enum Probe {
    /// A TLS-level refusal, either side's: permanent.
    Refused(String),
    /// Nobody answered (yet): worth another try.
    Unreachable(String),
}

/// One TLS connection to the controller, with this peer's certificate,
/// read until the controller's first bytes: its HTTP/2 settings when it
/// accepted the certificate, a TLS alert naming why when it did not (in
/// TLS 1.3 the client's handshake ends before the server has checked the
/// client's certificate, and a gRPC call that writes first sees only a
/// broken pipe).
async fn probe_tls(opts: &PeerOptions, name: &str) -> Result<(), Probe> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
    use tokio::io::AsyncReadExt;
    let bad = |what: &str, e: &dyn std::fmt::Display| Probe::Refused(format!("{what}: {e}"));
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    for c in CertificateDer::pem_slice_iter(&opts.tls.ca) {
        let c = c.map_err(|e| bad("the CA certificate (--ca)", &e))?;
        roots.add(c).map_err(|e| bad("the CA certificate (--ca)", &e))?;
    }
    let certs = CertificateDer::pem_slice_iter(&opts.tls.cert)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad("the certificate (--cert)", &e))?;
    let key = PrivateKeyDer::from_pem_slice(&opts.tls.key).map_err(|e| bad("the key (--key)", &e))?;
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| bad("TLS", &e))?
        .with_root_certificates(roots)
        .with_client_auth_cert(certs, key)
        .map_err(|e| bad("the certificate and key (--cert, --key)", &e))?;
    config.alpn_protocols = vec![b"h2".to_vec()];
    let server = ServerName::try_from(name.to_string()).map_err(|e| bad("the controller's name", &e))?;
    let words = |e: &std::io::Error| match crate::tls::tls_error_in(e) {
        Some(t) => Probe::Refused(crate::tls::peer_tls_words(t)),
        None => Probe::Unreachable(e.to_string()),
    };
    let limit = Duration::from_secs(5);
    let tcp = match tokio::time::timeout(limit, tokio::net::TcpStream::connect(&opts.controller)).await {
        Ok(Ok(t)) => t,
        Ok(Err(e)) => return Err(Probe::Unreachable(e.to_string())),
        Err(_) => return Err(Probe::Unreachable("no connection within 5 s".into())),
    };
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let mut tls = match tokio::time::timeout(limit, connector.connect(server, tcp)).await {
        Ok(Ok(t)) => t,
        Ok(Err(e)) => return Err(words(&e)),
        Err(_) => return Err(Probe::Unreachable("no TLS handshake within 5 s".into())),
    };
    let mut first = [0u8; 64];
    match tokio::time::timeout(limit, tls.read(&mut first)).await {
        Ok(Err(e)) => Err(words(&e)),
        // Bytes, an end without a word, or silence: gRPC says the rest.
        _ => Ok(()),
    }
}

/// A status in words: its message, or its code and source when it has none
/// (a TLS failure).
fn status_words(s: &tonic::Status) -> String {
    if s.message().is_empty() {
        format!("{:?}", s.code())
    } else {
        s.message().to_string()
    }
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut words = e.to_string();
    let mut src = e.source();
    while let Some(s) = src {
        words.push_str(": ");
        words.push_str(&s.to_string());
        src = s.source();
    }
    words
}

/// Runs an agent until the controller ends the session (`Ok`), refuses it,
/// or is lost — then every client it runs is stopped first. `log` gets one
/// line per event worth telling.
pub fn run_agent(opts: &AgentOptions, log: &(dyn Fn(String) + Sync)) -> Result<(), AgentError> {
    let rt = runtime()?;
    rt.block_on(agent_session(opts, log))
}

async fn agent_session(opts: &AgentOptions, log: &(dyn Fn(String) + Sync)) -> Result<(), AgentError> {
    let hello = Hello {
        protocol_version: opts.protocol_version,
        role: Role::Agent as i32,
        index: opts.index,
        host: opts.host.clone(),
        software: env!("CARGO_PKG_VERSION").into(),
    };
    let (tx, mut inbound) = open(&opts.peer, hello).await?;
    log(format!(
        "agent {}: registered with {}",
        opts.index, opts.peer.controller
    ));
    let pool = Arc::new(InProcess::default());
    let mut arriving = Arriving::default();
    // Each running client's stop flag and pump thread.
    let mut clients: HashMap<u32, (Arc<AtomicBool>, std::thread::JoinHandle<()>)> = HashMap::new();
    let beat_tx = tx.clone();
    let beat = tokio::spawn(async move {
        let mut i = tokio::time::interval(crate::controller::HEARTBEAT);
        loop {
            i.tick().await;
            if beat_tx
                .send(AgentMessage {
                    kind: Some(FromAgent::Heartbeat(Heartbeat {
                        unix_nanos: now_nanos(),
                    })),
                })
                .is_err()
            {
                return;
            }
        }
    });
    let result = loop {
        let next = match tokio::time::timeout(CONTROLLER_SILENCE_LIMIT, inbound.message()).await {
            Ok(next) => next,
            // Silent that long by this process's clock, which also ran
            // while the process itself did not (stopped, a paused VM):
            // what the controller sent meanwhile — its heartbeats, or
            // why it dropped this agent — may be waiting, so it is read
            // before the controller is called lost.
            Err(_) => match tokio::time::timeout(SILENCE_RECHECK, inbound.message()).await {
                Ok(next) => next,
                Err(_) => {
                    break Err(AgentError::LostController(format!(
                        "no word from it for {} s",
                        CONTROLLER_SILENCE_LIMIT.as_secs()
                    )))
                }
            },
        };
        let m = match next {
            Ok(Some(m)) => m,
            // The controller ended the session: the run is over.
            Ok(None) => break Ok(()),
            // It dropped this agent (and says why) while the run goes on.
            Err(s) if s.code() == tonic::Code::Aborted => break Err(AgentError::Dropped(s.message().to_string())),
            Err(s) => break Err(AgentError::LostController(status_words(&s))),
        };
        match m.kind {
            Some(ToAgent::Ping(p)) => {
                let t2 = now_nanos();
                send(
                    &tx,
                    FromAgent::Pong(Pong {
                        id: p.id,
                        t1: p.t1,
                        t2,
                        t3: now_nanos(),
                    }),
                );
            }
            Some(ToAgent::UrlChunk(c)) => {
                if let Some(done) = arriving_chunk(&mut arriving, c, log, opts.index) {
                    let pool = Arc::clone(&pool);
                    let id = done.id().to_string();
                    // Checked whole (its id) and its names resolved here,
                    // where the load leaves from, off the network thread.
                    let loaded = tokio::task::spawn_blocking(move || {
                        let list = Arc::new(done.finish()?);
                        pool.load_urls(&list)
                            .map_err(|e| format!("URL list {}: cannot load it: {e}", list.id))?;
                        Ok::<_, String>(list.urls.len())
                    })
                    .await;
                    match loaded {
                        Ok(Ok(n)) => log(format!("agent {}: URL list {id} received: {n} URLs", opts.index)),
                        Ok(Err(why)) => arriving.refuse(&id, why, log, opts.index),
                        Err(e) => log(format!("agent {}: loading a URL list failed: {e}", opts.index)),
                    }
                }
            }
            Some(ToAgent::Start(s)) => {
                let stop = Arc::new(AtomicBool::new(false));
                let handle = start_client(&pool, s, &tx, Arc::clone(&stop), &|id| arriving.why_not(id));
                if let Some((client, h)) = handle {
                    clients.insert(client, (stop, h));
                }
            }
            Some(ToAgent::FileStart(f)) => {
                let stop = Arc::new(AtomicBool::new(false));
                if let Some((client, h)) = start_file_client(f, &tx, Arc::clone(&stop)) {
                    clients.insert(client, (stop, h));
                }
            }
            Some(ToAgent::Stop(s)) => {
                if let Some((stop, _)) = clients.get(&s.client) {
                    stop.store(true, Ordering::Relaxed);
                }
            }
            Some(ToAgent::Heartbeat(_)) | Some(ToAgent::Welcome(_)) | None => {}
        }
        clients.retain(|_, (_, h)| !h.is_finished());
    };
    // Whatever ended the session, no load outlives it.
    for (stop, _) in clients.values() {
        stop.store(true, Ordering::Relaxed);
    }
    for (_, (_, h)) in clients.drain() {
        let _ = tokio::task::spawn_blocking(move || h.join()).await;
    }
    beat.abort();
    let _ = std::fs::remove_dir_all(file_orders_dir());
    result
}

/// Starts client `s.client` and a thread that streams its seconds and its
/// report; acknowledges the start (or says why it failed).
/// Takes one piece of a URL list; returns the receiver of a list whose
/// last chunk came (to finish and load), or `None`. A piece out of place
/// (a chunk with no head, a new head before the last list's end, a chunk
/// that does not fit) refuses its list, logged and kept for the orders
/// that name it.
fn arriving_chunk(a: &mut Arriving, c: UrlChunk, log: &dyn Fn(String), index: u32) -> Option<UrlListReceiver> {
    if c.seq == 0 {
        if let Some(prev) = a.list.take() {
            let id = prev.id().to_string();
            let why = format!("URL list {id}: its chunks stopped after {}", prev.progress());
            a.refuse(&id, why, log, index);
        }
        match UrlListReceiver::new(&c.data, MAX_URL_LIST_BYTES) {
            Ok(r) if r.id() == c.list => a.list = Some(r),
            Ok(r) => a.refuse(
                &c.list,
                format!("URL list {}: its head names {}", c.list, r.id()),
                log,
                index,
            ),
            Err(why) => a.refuse(&c.list, why, log, index),
        }
        return None;
    }
    match a.list.take() {
        Some(mut r) if r.id() == c.list => match r.push(c.seq, &c.data) {
            Ok(()) if c.last => Some(r),
            Ok(()) => {
                a.list = Some(r);
                None
            }
            Err(why) => {
                a.refuse(&c.list, why, log, index);
                None
            }
        },
        other => {
            a.list = other;
            if !a.refused.iter().any(|(i, _)| *i == c.list) {
                let why = format!("URL list {}: chunk {} came without its head", c.list, c.seq);
                a.refuse(&c.list, why, log, index);
            }
            None
        }
    }
}

fn start_client(
    pool: &Arc<InProcess>,
    s: Start,
    tx: &Outbound,
    stop: Arc<AtomicBool>,
    why_not: &dyn Fn(&str) -> Option<String>,
) -> Option<(u32, std::thread::JoinHandle<()>)> {
    let client = s.client;
    let started = move |error: String| FromAgent::Started(Started { client, error });
    let plan: ClientPlan = match serde_json::from_slice::<ClientPlan>(&s.plan) {
        // The controller's default (its cores ÷ clients) means nothing
        // here: this host's CPUs are shared by the clients it runs.
        Ok(mut p) if s.threads_from_cpus_of > 0 => {
            p.settings.os_threads = (benchlab_engine::sys::usable_cpus() / s.threads_from_cpus_of as usize).max(1);
            p
        }
        Ok(p) => p,
        Err(e) => {
            send(tx, started(format!("the plan does not decode: {e}")));
            return None;
        }
    };
    if let Some(why) = why_not(&plan.urls) {
        send(tx, started(why));
        return None;
    }
    let mut driver = pool.driver(client as usize);
    let tx = tx.clone();
    let h = std::thread::Builder::new()
        .name(format!("benchlab-agent-client-{client}"))
        .spawn(move || {
            if let Err(e) = driver.start(plan, time_of_nanos(s.start_unix_nanos)) {
                send(&tx, started(e.to_string()));
                return;
            }
            send(&tx, started(String::new()));
            let mut stopped = false;
            loop {
                if stop.load(Ordering::Relaxed) && !stopped {
                    driver.stop();
                    stopped = true;
                }
                while let Some(second) = driver.next_second(Duration::from_millis(100)) {
                    let json = serde_json::to_vec(&second).unwrap_or_default();
                    send(&tx, FromAgent::Second(ClientPayload { client, json }));
                }
                if driver.is_finished() {
                    break;
                }
            }
            if let Ok(report) = driver.finish() {
                let json = serde_json::to_vec(&report).unwrap_or_default();
                send(&tx, FromAgent::Report(ClientPayload { client, json }));
            }
        })
        .ok()?;
    Some((client, h))
}

/// Where an agent writes the workloads of its file orders (user processes
/// read them from there); removed when its session ends.
fn file_orders_dir() -> std::path::PathBuf {
    std::env::temp_dir().join(format!("benchlab-agent-{}", std::process::id()))
}

/// Starts client `f.client` of a file mix: its users (threads, or
/// processes for `smb://`) in their own workspaces, started at the
/// controller's instant; a thread streams its seconds and its measure.
/// Acknowledges the start, or says why it cannot run.
fn start_file_client(f: FileStart, tx: &Outbound, stop: Arc<AtomicBool>) -> Option<(u32, std::thread::JoinHandle<()>)> {
    let client = f.client;
    let started = move |error: String| FromAgent::Started(Started { client, error });
    let ready = (|| {
        let mut order: benchlab_fileserver::FileOrder =
            serde_json::from_slice(&f.order).map_err(|e| format!("the file order does not decode: {e}"))?;
        // The start on this host's clock (the controller added its offset).
        order.part.start_at = Some(time_of_nanos(f.start_unix_nanos));
        let dir = file_orders_dir();
        std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let workload = order.workload(&dir)?;
        let target = benchlab_fileserver::FileTarget::parse(&order.target)?;
        Ok::<_, String>((order, workload, target))
    })();
    let (order, workload, target) = match ready {
        Ok(r) => r,
        Err(e) => {
            send(tx, started(e));
            return None;
        }
    };
    send(tx, started(String::new()));
    let tx = tx.clone();
    let h = std::thread::Builder::new()
        .name(format!("benchlab-agent-file-client-{client}"))
        .spawn(move || {
            let second_tx = tx.clone();
            let report: FileReport =
                benchlab_fileserver::run_mix_part(&workload, &target, &order.plan, &order.part, &stop, &mut |s| {
                    let json = serde_json::to_vec(&s).unwrap_or_default();
                    send(&second_tx, FromAgent::FileSecond(ClientPayload { client, json }));
                })
                .map(|r| benchlab_fileserver::FileEnd {
                    measure: r.measure,
                    cpu_us: r.cpu_us,
                    first_send_uncertainty_ns: 0,
                })
                // On the wire, the message only (the controller counts the
                // client as unable to run).
                .map_err(|e| e.to_string());
            let json = serde_json::to_vec(&report).unwrap_or_default();
            send(&tx, FromAgent::FileReport(ClientPayload { client, json }));
        })
        .ok()?;
    Some((client, h))
}

/// A server monitor's session: registers as `host` and sends every sample
/// received on `rx` (its wall-clock time and an opaque payload, JSON by
/// convention) until `rx` closes (`Ok`) or the controller is lost.
pub fn monitor_session(
    controller: &PeerOptions,
    host: &str,
    rx: std::sync::mpsc::Receiver<(SystemTime, Vec<u8>)>,
) -> Result<(), AgentError> {
    let rt = runtime()?;
    rt.block_on(async {
        let hello = Hello {
            protocol_version: PROTOCOL_VERSION,
            role: Role::Monitor as i32,
            index: 0,
            host: host.to_string(),
            software: env!("CARGO_PKG_VERSION").into(),
        };
        let (tx, mut inbound) = open(controller, hello).await?;
        // The samples come on a std channel: a thread forwards them.
        let (done_tx, mut done_rx) = tokio::sync::oneshot::channel::<()>();
        let fwd_tx = tx.clone();
        std::thread::spawn(move || {
            for (at, payload) in rx {
                let m = AgentMessage {
                    kind: Some(FromAgent::Sample(MonitorSample {
                        unix_nanos: crate::nanos_of(at),
                        payload,
                    })),
                };
                if fwd_tx.send(m).is_err() {
                    break;
                }
            }
            let _ = done_tx.send(());
        });
        let mut beat = tokio::time::interval(crate::controller::HEARTBEAT);
        let mut last = Instant::now();
        loop {
            tokio::select! {
                _ = &mut done_rx => break,
                m = inbound.message() => match m {
                    Ok(Some(_)) => last = Instant::now(),
                    Ok(None) => return Ok(()),
                    Err(s) => return Err(AgentError::LostController(status_words(&s))),
                },
                _ = beat.tick() => {
                    if last.elapsed() > CONTROLLER_SILENCE_LIMIT {
                        // As an agent does: what waits is read first.
                        match tokio::time::timeout(SILENCE_RECHECK, inbound.message()).await {
                            Ok(Ok(Some(_))) => last = Instant::now(),
                            Ok(Ok(None)) => return Ok(()),
                            Ok(Err(s)) => return Err(AgentError::LostController(status_words(&s))),
                            Err(_) => return Err(AgentError::LostController(format!("no word from it for {} s", CONTROLLER_SILENCE_LIMIT.as_secs()))),
                        }
                    }
                    send(&tx, FromAgent::Heartbeat(Heartbeat { unix_nanos: now_nanos() }));
                }
            }
        }
        // Every sample is queued: end our stream and wait for the
        // controller to end its own, so none is lost in flight.
        drop(tx);
        let _ = tokio::time::timeout(Duration::from_secs(3), async {
            while let Ok(Some(_)) = inbound.message().await {}
        })
        .await;
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use benchlab_controller::plan::{UrlChunks, UrlList, UrlSpec};
    use benchlab_engine::{ClassPlan, Expect};

    fn list(n: usize) -> Arc<UrlList> {
        let specs = (0..n)
            .map(|i| UrlSpec {
                url: format!("http://127.0.0.1:9/p{i:05}"),
                weight: 1.0,
                class: 0,
                expect_status: 200,
                expect: Expect::Status,
                request: 0,
            })
            .collect();
        Arc::new(UrlList::new(vec![ClassPlan { name: "c".into() }], specs))
    }

    fn piece(id: &str, seq: u32, data: Vec<u8>, last: bool) -> UrlChunk {
        UrlChunk {
            list: id.into(),
            seq,
            data,
            last,
        }
    }

    #[test]
    fn an_order_for_a_list_still_arriving_or_cut_short_is_answered_with_why() {
        let (a, b) = (list(300), list(5));
        let chunks = UrlChunks::new(Arc::clone(&a), 1024);
        let head = chunks.head();
        let parts: Vec<_> = chunks.collect();
        assert!(parts.len() > 2);
        let mut arriving = Arriving::default();
        let lines = std::sync::Mutex::new(Vec::new());
        let log = |s: String| lines.lock().unwrap().push(s);
        assert!(arriving_chunk(&mut arriving, piece(&a.id, 0, head, false), &log, 0).is_none());
        assert!(arriving_chunk(&mut arriving, piece(&a.id, 1, parts[0].0.clone(), false), &log, 0).is_none());
        let why = arriving.why_not(&a.id).unwrap();
        assert!(
            why.starts_with(&format!("URL list {} is incomplete: 1 chunks, ", a.id)),
            "{why}"
        );
        // The next list's head comes before the last chunk: the first is
        // refused, and an order naming it hears why.
        let b_chunks = UrlChunks::new(Arc::clone(&b), 1024);
        let b_head = b_chunks.head();
        let b_parts: Vec<_> = b_chunks.collect();
        assert!(arriving_chunk(&mut arriving, piece(&b.id, 0, b_head, false), &log, 0).is_none());
        let why = arriving.why_not(&a.id).unwrap();
        assert!(why.contains("its chunks stopped after 1 chunks"), "{why}");
        assert!(lines.lock().unwrap()[0].starts_with(&format!("agent 0: refused URL list {}", a.id)));
        let done = arriving_chunk(&mut arriving, piece(&b.id, 1, b_parts[0].0.clone(), true), &log, 0).unwrap();
        assert_eq!(done.finish().unwrap(), *b);
        // A chunk with no head before it.
        assert!(arriving_chunk(&mut arriving, piece("xxh3:0", 3, vec![0; 8], false), &log, 0).is_none());
        assert!(arriving
            .why_not("xxh3:0")
            .unwrap()
            .contains("chunk 3 came without its head"));
        // A head beyond the agent's bound is refused before any room is taken.
        assert_eq!(arriving.why_not(&b.id), None);
    }
}
