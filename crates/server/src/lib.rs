//! # benchlab-server
//!
//! benchlab's reference web server, behind `benchlab serve`: a target that
//! ships with benchlab, so a demo and benchlab's own tests need no other
//! server. It serves a file set and the in-process SPICE programs:
//!
//! | URL | what it does |
//! | --- | --- |
//! | `/<file path>` | the file (a directory: its `index.html`) |
//! | `/spice/inproc/adrot/<file path>` | ad rotation: reads the request's environment (query, `Cookie`, `User-Agent`), picks an ad (sent as `X-Ad`), returns the file |
//! | `/spice/inproc/session/<file path>` | session-oriented: locks the session log, increments its counter, appends a line, returns the file ([`SessionLog`]) |
//! | `/spice/inproc/sleep/<file path>?ms=3000` | slow back end: waits `ms` (default 3000) without blocking other connections, returns the file |
//! | `/shop/…` | the shop (docs/shop.md): log in, product pages, cart and checkout, in memory |
//!
//! Every SPICE answer carries exactly the static file's bytes (seed 001), so
//! static and dynamic runs compare fairly. The layout is docs/spice.md's "URL
//! layout", the same on every server.
//!
//! HTTP/1.0 and 1.1, GET and HEAD (and the shop's POSTs, bodies up to
//! 16 KiB), keep-alive, pipelining, `Content-Length`
//! on every response, small files from memory, large ones with `sendfile`,
//! `400` for garbage and for an HTTP/1.1 request without `Host` or any
//! with two (RFC 9112 §3.2), `404` for missing files, `405` for other
//! methods, `408` for a request head not complete within the header timeout
//! (10 s from its first byte: slowloris), `..` refused, and `403` for a
//! file a symbolic link leads to outside the root (unless
//! [`Config::follow_outside_symlinks`]). It is not meant to win benchmarks, only never to be the
//! bottleneck of benchlab's tests: `bench/serve-vs-nginx.sh` compares it with
//! nginx on one core.
//!
//! It runs on a tokio multi-thread runtime of its own, so it can be started
//! from synchronous code, including tests:
//!
//! ```
//! let root = tempfile::tempdir()?;
//! std::fs::write(root.path().join("a.html"), "hello")?;
//! let mut config = benchlab_server::Config::new(root.path());
//! config.listen = "127.0.0.1:0".parse()?;
//! config.session_log = Some(root.path().join("session.log"));
//! let server = benchlab_server::Server::bind(config)?.spawn()?;
//! println!("serving on http://{}/", server.local_addr());
//! server.shutdown()?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]
#![warn(missing_debug_implementations, unreachable_pub)]

mod access_log;
mod conn;
mod dates;
mod files;
mod http;
mod shop;
mod spice;

pub use spice::{SessionLog, COUNTER_DIGITS};

use access_log::AccessLog;
use files::Files;
use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::signal::unix::{signal, Signal, SignalKind};
use tokio::sync::watch;

/// Default listen address of `benchlab serve`.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8080";

/// Files up to this size are cached in memory by default (64 KiB: the small
/// documents that dominate web workloads; SPECweb99's classes 0–2).
pub const DEFAULT_CACHE_MAX_FILE: u64 = 64 * 1024;

/// Bytes the file cache may hold by default.
pub const DEFAULT_CACHE_BUDGET: u64 = 256 * 1024 * 1024;

/// Default idle time after which a keep-alive connection is closed (nginx's).
pub const DEFAULT_KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(75);

/// Default time a request head has to arrive whole, from its first byte
/// (a slowloris client trickling a head is cut off after it).
pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a graceful shutdown waits for requests being answered (a SPICE
/// sleep of the default 3 s fits).
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Name of the default session log, created beside the document root (not in
/// it: it would change the file set being served).
pub const DEFAULT_SESSION_LOG_NAME: &str = "spice-session.log";

/// What to serve and how. Each field is a `benchlab serve` flag, and errors
/// name the flag.
#[derive(Debug, Clone)]
pub struct Config {
    /// `--root`: the directory whose files are served.
    pub root: PathBuf,
    /// `--listen`: address and port to listen on (port 0: any free port;
    /// [`Server::local_addr`] tells which).
    pub listen: SocketAddr,
    /// `--workers`: threads of the runtime that serves connections (0: one
    /// per core).
    pub workers: usize,
    /// `--access-log`: a Common Log Format file to append to (none: no log).
    pub access_log: Option<PathBuf>,
    /// `--session-log`: the session program's log (none:
    /// [`default_session_log`] of the root).
    pub session_log: Option<PathBuf>,
    /// `--cache-max-file`: files up to this many bytes are kept in memory
    /// after their first request (0: read every file per request).
    pub cache_max_file: u64,
    /// Bytes the in-memory cache may hold in all; past it files are read per
    /// request.
    pub cache_budget: u64,
    /// `--keepalive-timeout`: an idle connection is closed after this long.
    pub keepalive_timeout: Duration,
    /// `--header-timeout`: a request head must be complete this long after
    /// its first byte, or the connection gets 408 and is closed.
    pub header_timeout: Duration,
    /// `--follow-outside-symlinks`: serve files that symbolic links lead to
    /// outside the root (refused with 403 when false, the default).
    pub follow_outside_symlinks: bool,
}

impl Config {
    /// Defaults for serving `root`: `127.0.0.1:8080`, a worker per core, no
    /// access log, the default session log, files up to 64 KiB cached.
    pub fn new(root: impl Into<PathBuf>) -> Config {
        Config {
            root: root.into(),
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            workers: 0,
            access_log: None,
            session_log: None,
            cache_max_file: DEFAULT_CACHE_MAX_FILE,
            cache_budget: DEFAULT_CACHE_BUDGET,
            keepalive_timeout: DEFAULT_KEEPALIVE_TIMEOUT,
            header_timeout: DEFAULT_HEADER_TIMEOUT,
            follow_outside_symlinks: false,
        }
    }
}

/// The session log used when none is configured: `spice-session.log` in the
/// root's parent directory (beside the root, so the file set stays as
/// generated), or in the root itself when it has no parent (`/`).
pub fn default_session_log(root: &Path) -> PathBuf {
    match root.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.join(DEFAULT_SESSION_LOG_NAME),
        _ => root.join(DEFAULT_SESSION_LOG_NAME),
    }
}

/// Why the server could not start or stop cleanly. Messages name the
/// `benchlab serve` flag concerned and what was expected.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The document root is missing or not a directory.
    #[error("--root {}: {reason}", path.display())]
    Root {
        /// The root as given.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// Nothing can listen on the address.
    #[error("--listen {addr}: cannot listen there: {source}{hint}", hint = listen_hint(source))]
    Listen {
        /// The address.
        addr: SocketAddr,
        /// What the system said.
        #[source]
        source: io::Error,
    },
    /// The access log cannot be opened or written.
    #[error("--access-log {}: {source}", path.display())]
    AccessLog {
        /// The log file.
        path: PathBuf,
        /// What the system said.
        #[source]
        source: io::Error,
    },
    /// The session log cannot be used.
    #[error("--session-log {}: {reason}", path.display())]
    SessionLog {
        /// The log file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The runtime's threads could not be started.
    #[error("cannot start the server's {workers} worker thread(s): {source}")]
    Runtime {
        /// Threads asked for.
        workers: usize,
        /// What the system said.
        #[source]
        source: io::Error,
    },
}

impl Error {
    /// Whether the error is in what the user asked for (a path or value to
    /// correct), rather than in the system's state (a port in use, no threads).
    pub fn is_input_error(&self) -> bool {
        matches!(
            self,
            Error::Root { .. } | Error::AccessLog { .. } | Error::SessionLog { .. }
        )
    }
}

impl benchlab_input::Classify for Error {
    fn exit_class(&self) -> benchlab_input::ExitClass {
        if self.is_input_error() {
            benchlab_input::ExitClass::Usage
        } else {
            benchlab_input::ExitClass::CannotRun
        }
    }
}

fn listen_hint(e: &io::Error) -> &'static str {
    match e.kind() {
        io::ErrorKind::AddrInUse => " (another server listens there: pick another port, or port 0 for any free one)",
        io::ErrorKind::AddrNotAvailable => " (no interface has that address: expected a local IP such as 127.0.0.1)",
        io::ErrorKind::PermissionDenied => " (ports below 1024 need privileges: pick a port of 1024 or more)",
        _ => "",
    }
}

/// State shared by every connection.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) files: Files,
    pub(crate) session_log: Arc<SessionLog>,
    pub(crate) access_log: Option<Arc<AccessLog>>,
    pub(crate) keepalive_timeout: Duration,
    pub(crate) header_timeout: Duration,
    /// Requests being answered; a graceful shutdown waits for zero.
    pub(crate) in_flight: AtomicUsize,
    /// Set when shutting down: responses then close their connections.
    pub(crate) stopping: AtomicBool,
    /// The shop at `/shop/` (docs/shop.md).
    pub(crate) shop: shop::Shop,
}

/// Stops a running server: it stops accepting, lets requests being answered
/// finish (up to 5 s), closes every connection and flushes its logs. Cheap to
/// clone and usable from any thread (a Ctrl-C handler, a test).
#[derive(Debug, Clone)]
pub struct ShutdownHandle {
    tx: Arc<watch::Sender<bool>>,
}

impl ShutdownHandle {
    /// Asks the server to stop; [`Server::run`] returns once it has.
    pub fn shutdown(&self) {
        self.tx.send_replace(true);
    }
}

/// A bound server, ready to run.
#[derive(Debug)]
pub struct Server {
    runtime: tokio::runtime::Runtime,
    listener: tokio::net::TcpListener,
    local_addr: SocketAddr,
    shared: Arc<Shared>,
    shutdown: ShutdownHandle,
    workers: usize,
    session_log_path: PathBuf,
    /// SIGINT and SIGTERM streams, when [`Server::stop_on_signals`] was asked.
    signals: Option<(Signal, Signal)>,
}

impl Server {
    /// Checks the configuration, starts the runtime's threads and binds the
    /// listening socket (so a port-0 address is resolved before this
    /// returns). Nothing is served until [`Server::run`] or [`Server::spawn`].
    pub fn bind(config: Config) -> Result<Server, Error> {
        let root = std::fs::canonicalize(&config.root).map_err(|e| Error::Root {
            path: config.root.clone(),
            reason: format!("{e} (expected a directory)"),
        })?;
        if !root.is_dir() {
            return Err(Error::Root {
                path: config.root,
                reason: "not a directory".to_string(),
            });
        }
        let session_path = config.session_log.clone().unwrap_or_else(|| default_session_log(&root));
        let session_log = SessionLog::new(session_path.clone());
        session_log.check().map_err(|reason| Error::SessionLog {
            path: session_path.clone(),
            reason,
        })?;
        let access_log = match &config.access_log {
            Some(path) => Some(Arc::new(AccessLog::open(path).map_err(|source| Error::AccessLog {
                path: path.clone(),
                source,
            })?)),
            None => None,
        };
        let workers = if config.workers == 0 {
            std::thread::available_parallelism().map_or(1, |n| n.get())
        } else {
            config.workers
        };
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(workers)
            .thread_name("benchlab-serve")
            .enable_io()
            .enable_time()
            .build()
            .map_err(|source| Error::Runtime { workers, source })?;
        let std_listener = listen(config.listen).map_err(|source| Error::Listen {
            addr: config.listen,
            source,
        })?;
        let local_addr = std_listener.local_addr().map_err(|source| Error::Listen {
            addr: config.listen,
            source,
        })?;
        let listener = {
            let _guard = runtime.enter();
            tokio::net::TcpListener::from_std(std_listener).map_err(|source| Error::Listen {
                addr: config.listen,
                source,
            })?
        };
        let shared = Arc::new(Shared {
            files: Files::new(
                root,
                !config.follow_outside_symlinks,
                config.cache_max_file,
                config.cache_budget,
            ),
            session_log: Arc::new(session_log),
            access_log,
            keepalive_timeout: config.keepalive_timeout.max(Duration::from_millis(1)),
            header_timeout: config.header_timeout.max(Duration::from_millis(1)),
            in_flight: AtomicUsize::new(0),
            stopping: AtomicBool::new(false),
            shop: shop::Shop::new(),
        });
        let (tx, _) = watch::channel(false);
        Ok(Server {
            runtime,
            listener,
            local_addr,
            shared,
            shutdown: ShutdownHandle { tx: Arc::new(tx) },
            workers,
            session_log_path: session_path,
            signals: None,
        })
    }

    /// Makes SIGINT (Ctrl-C) and SIGTERM stop the server gracefully, as
    /// [`ShutdownHandle::shutdown`] does, so the access log is flushed
    /// however the process is asked to stop. For the `benchlab serve`
    /// process; a program that handles signals itself leaves this off.
    pub fn stop_on_signals(&mut self) -> io::Result<()> {
        let _guard = self.runtime.enter();
        self.signals = Some((signal(SignalKind::interrupt())?, signal(SignalKind::terminate())?));
        Ok(())
    }

    /// The address it listens on (with the port chosen when 0 was asked).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Worker threads serving connections.
    pub fn workers(&self) -> usize {
        self.workers
    }

    /// The session log this server writes.
    pub fn session_log(&self) -> &Path {
        &self.session_log_path
    }

    /// A handle that stops [`Server::run`].
    pub fn shutdown_handle(&self) -> ShutdownHandle {
        self.shutdown.clone()
    }

    /// Serves until [`ShutdownHandle::shutdown`], then stops gracefully and
    /// flushes the access log. Blocks the calling thread.
    pub fn run(self) -> Result<(), Error> {
        let Server {
            runtime,
            listener,
            shared,
            shutdown,
            signals,
            ..
        } = self;
        let stop = shutdown.tx.subscribe();
        let in_runtime = Arc::clone(&shared);
        let on_signal = shutdown.clone();
        runtime.block_on(async move {
            if let Some((mut interrupt, mut terminate)) = signals {
                tokio::spawn(async move {
                    tokio::select! {
                        _ = interrupt.recv() => {}
                        _ = terminate.recv() => {}
                    }
                    on_signal.shutdown();
                });
            }
            if let Some(log) = &in_runtime.access_log {
                tokio::spawn(flush_every_second(Arc::clone(log)));
            }
            // The accept loop runs as a task, on a worker thread, so with
            // `--workers 1` one thread does all the work (block_on's own
            // thread would otherwise be a second one).
            let _ = tokio::spawn(accept_loop(listener, Arc::clone(&in_runtime), stop)).await;
            in_runtime.stopping.store(true, Ordering::Relaxed);
            let deadline = tokio::time::Instant::now() + SHUTDOWN_GRACE;
            while in_runtime.in_flight.load(Ordering::Acquire) > 0 && tokio::time::Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        });
        // Drops every connection task (closing idle keep-alive connections).
        runtime.shutdown_timeout(Duration::from_millis(100));
        if let Some(log) = &shared.access_log {
            log.flush().map_err(|source| Error::AccessLog {
                path: log.path().to_path_buf(),
                source,
            })?;
        }
        Ok(())
    }

    /// Runs the server on a thread of its own and returns at once: for tests
    /// and `benchlab demo`, which load it from the same process.
    pub fn spawn(self) -> io::Result<RunningServer> {
        let local_addr = self.local_addr;
        let handle = self.shutdown_handle();
        let thread = std::thread::Builder::new()
            .name("benchlab-serve".into())
            .spawn(move || self.run())?;
        Ok(RunningServer {
            local_addr,
            handle,
            thread: Some(thread),
        })
    }
}

/// A server running on its own thread ([`Server::spawn`]); dropping it stops
/// the server too.
#[derive(Debug)]
pub struct RunningServer {
    local_addr: SocketAddr,
    handle: ShutdownHandle,
    thread: Option<std::thread::JoinHandle<Result<(), Error>>>,
}

impl RunningServer {
    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// A handle that stops it.
    pub fn shutdown_handle(&self) -> ShutdownHandle {
        self.handle.clone()
    }

    /// Stops it gracefully and waits until it has stopped.
    pub fn shutdown(mut self) -> Result<(), Error> {
        self.stop()
    }

    fn stop(&mut self) -> Result<(), Error> {
        self.handle.shutdown();
        match self.thread.take().map(|t| t.join()) {
            Some(Ok(result)) => result,
            Some(Err(panic)) => std::panic::resume_unwind(panic),
            None => Ok(()),
        }
    }
}

impl Drop for RunningServer {
    fn drop(&mut self) {
        if self.thread.is_some() && !std::thread::panicking() {
            let _ = self.stop();
        }
    }
}

/// Binds with `SO_REUSEADDR` (a restarted server need not wait out the last
/// one's TIME_WAIT sockets) and a backlog of 1024 (std's 128 overflows under
/// a burst of connection-per-request clients).
fn listen(addr: SocketAddr) -> io::Result<std::net::TcpListener> {
    use socket2::{Domain, Protocol, Socket, Type};
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    socket.set_reuse_address(true)?;
    socket.bind(&addr.into())?;
    socket.listen(1024)?;
    socket.set_nonblocking(true)?;
    Ok(socket.into())
}

async fn accept_loop(listener: tokio::net::TcpListener, shared: Arc<Shared>, mut stop: watch::Receiver<bool>) {
    loop {
        if *stop.borrow_and_update() {
            return;
        }
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    tokio::spawn(conn::serve(stream, peer, Arc::clone(&shared)));
                }
                Err(e) => {
                    // Out of descriptors or memory: say so once, and back off
                    // instead of spinning on a listener that stays readable.
                    static ONCE: std::sync::Once = std::sync::Once::new();
                    ONCE.call_once(|| eprintln!("benchlab serve: accept failed: {e} (raise `ulimit -n`?)"));
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            },
            changed = stop.changed() => {
                if changed.is_err() {
                    return;
                }
            }
        }
    }
}

async fn flush_every_second(log: Arc<AccessLog>) {
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        if let Err(e) = log.flush() {
            static ONCE: std::sync::Once = std::sync::Once::new();
            ONCE.call_once(|| {
                eprintln!(
                    "benchlab serve: cannot write the access log {}: {e}",
                    log.path().display()
                )
            });
        }
    }
}
