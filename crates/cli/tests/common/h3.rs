//! HTTP/3 servers for the tests: Caddy (the Debian package, `protocols h1
//! h2 h3`, `tls internal`) with its JSON access log; a small HTTP/3 server
//! on quinn-proto with its own request log and misbehaviours chosen by the
//! test; and a UDP relay that drops every n-th datagram. Included by
//! `http3.rs` alone (`#[path]`), so the other tests do not build it.

use crate::common::servers::{kill_and_reap, start_on_free_port};
use bytes::BytesMut;
use quinn_proto::{DatagramEvent, Dir, Endpoint, EndpointConfig, Event, StreamEvent, VarInt};
use std::collections::HashMap;
use std::fs;
use std::net::{SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A test-started Caddy serving `root` over HTTP/1.1, 2 and 3 on one
/// loopback port (TCP and UDP), with a certificate of its internal CA for
/// `localhost`.
pub struct Caddy {
    child: Child,
    pub port: u16,
    dir: PathBuf,
}

/// One line of Caddy's JSON access log.
#[derive(Debug)]
pub struct CaddyLine {
    pub proto: String,
    pub uri: String,
    pub status: u64,
    pub size: u64,
}

impl Caddy {
    /// Starts Caddy with its state (CA, certificates) under `dir`.
    pub fn start(dir: &Path, root: &Path) -> Caddy {
        crate::common::require("caddy");
        let dir = dir.to_path_buf();
        let log = dir.join("caddy.err");
        let (child, port) = start_on_free_port("caddy", &log, |port| {
            let conf = format!(
                "{{\n\tadmin off\n\tlog {{\n\t\toutput file {}\n\t}}\n\tskip_install_trust\n\tauto_https disable_redirects\n\tservers {{\n\t\tprotocols h1 h2 h3\n\t}}\n}}\n\
                 https://localhost:{port} {{\n\tbind 127.0.0.1\n\ttls internal\n\troot * {}\n\tfile_server\n\
                 \tlog {{\n\t\toutput file {}\n\t\tformat json\n\t}}\n}}\n",
                dir.join("caddy.err").display(),
                root.display(),
                dir.join("access.log").display()
            );
            let file = dir.join("Caddyfile");
            fs::write(&file, conf).expect("write Caddyfile");
            let mut c = Command::new("caddy");
            c.args(["run", "--config"])
                .arg(&file)
                .args(["--adapter", "caddyfile"])
                .env("HOME", &dir)
                .env("XDG_DATA_HOME", dir.join("data"))
                .env("XDG_CONFIG_HOME", dir.join("config"));
            c
        });
        let caddy = Caddy { child, port, dir };
        // The site's certificate is issued after the listeners open and
        // after the CA's root is written: a request before it fails its
        // handshake (seen once under load), so wait for Caddy to say so.
        let deadline = Instant::now() + Duration::from_secs(10);
        let issued = || {
            caddy.ca().is_file()
                && fs::read_to_string(&log).is_ok_and(|t| t.contains("certificate obtained successfully"))
        };
        while !issued() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        caddy
    }

    pub fn url(&self, path: &str) -> String {
        format!("https://localhost:{}{path}", self.port)
    }

    /// The root certificate of Caddy's internal CA (for `--ca-file`).
    pub fn ca(&self) -> PathBuf {
        self.dir.join("data/caddy/pki/authorities/local/root.crt")
    }

    /// The access log's lines, once it holds `at_least` of them.
    pub fn log_lines_at_least(&self, at_least: usize) -> Vec<CaddyLine> {
        crate::common::servers::read_log_lines(&self.dir.join("access.log"), at_least)
            .iter()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"));
                CaddyLine {
                    proto: v["request"]["proto"].as_str().unwrap_or_default().to_string(),
                    uri: v["request"]["uri"].as_str().unwrap_or_default().to_string(),
                    status: v["status"].as_u64().unwrap_or(0),
                    size: v["size"].as_u64().unwrap_or(0),
                }
            })
            .collect()
    }
}

impl Drop for Caddy {
    fn drop(&mut self) {
        kill_and_reap(&mut self.child);
    }
}

/// How the test server misbehaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Answers every request with `BODY`.
    Normal,
    /// Resets every k-th request stream of the server (counted over all
    /// connections) with H3_REQUEST_REJECTED instead of answering.
    ResetEvery(u64),
    /// Closes each connection with H3_INTERNAL_ERROR on its (n+1)-th
    /// request, having answered n.
    CloseAfter(u64),
    /// After answering n requests on a connection, goes silent on it: no
    /// answer, no ACK, nothing.
    SilentAfter(u64),
    /// Answers every request with `LARGE` bytes, sending its datagrams
    /// in GSO batches (so a client with GRO reads them coalesced).
    Large,
    /// Answers as `Normal`, but forgets its sessions at each new
    /// connection (a fresh TLS configuration): every resumption and its
    /// 0-RTT data are refused, the handshake a full one.
    ForgetSessions,
}

/// The body every answered request gets.
pub const BODY: usize = 1000;

/// The body of [`Mode::Large`]'s answers.
pub const LARGE: usize = 256 * 1024;

/// One request the test server saw: its status (0: reset, 1: closed the
/// connection, 2: went silent), and the response's body bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct H3Line {
    pub status: u16,
    pub size: u64,
}

/// An HTTP/3 server on quinn-proto in a thread of the test process, on a
/// loopback UDP port, with a self-signed certificate for `localhost`.
pub struct H3Server {
    pub port: u16,
    log: Arc<Mutex<Vec<H3Line>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

struct ServerConn {
    conn: quinn_proto::Connection,
    /// Requests whose stream ended, on this connection.
    requests: u64,
    silent: bool,
}

impl H3Server {
    pub fn start(mode: Mode) -> H3Server {
        let sock = UdpSocket::bind("127.0.0.1:0").expect("bind a UDP port");
        let port = sock.local_addr().expect("local_addr").port();
        let log = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (l, s) = (Arc::clone(&log), Arc::clone(&stop));
        let thread = std::thread::spawn(move || serve(sock, mode, &l, &s));
        H3Server {
            port,
            log,
            stop,
            thread: Some(thread),
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("https://localhost:{}{path}", self.port)
    }

    pub fn log(&self) -> Vec<H3Line> {
        self.log.lock().expect("log").clone()
    }
}

impl Drop for H3Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn server_config() -> quinn_proto::ServerConfig {
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).expect("self-signed certificate");
    let key = rustls::pki_types::PrivatePkcs8KeyDer::from(cert.signing_key.serialize_der());
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut tls = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .expect("TLS 1.3")
        .with_no_client_auth()
        .with_single_cert(vec![cert.cert.der().clone()], key.into())
        .expect("certificate");
    tls.alpn_protocols = vec![b"h3".to_vec()];
    // Tickets allow 0-RTT (quinn-proto takes 0 or u32::MAX).
    tls.max_early_data_size = u32::MAX;
    let quic = quinn_proto::crypto::rustls::QuicServerConfig::try_from(tls).expect("QUIC TLS");
    quinn_proto::ServerConfig::with_crypto(Arc::new(quic))
}

/// The response: HEADERS (`:status 200`, static index 25) and DATA.
fn response() -> Vec<u8> {
    let mut r = vec![0x01, 0x03, 0x00, 0x00, 0xC0 | 25, 0x00];
    // DATA's length as a 2-byte varint.
    r.extend_from_slice(&(BODY as u16 | 0x4000).to_be_bytes());
    r.extend(std::iter::repeat_n(b'x', BODY));
    r
}

/// [`Mode::Large`]'s response: DATA's length as a 4-byte varint.
fn large_response() -> Vec<u8> {
    let mut r = vec![0x01, 0x03, 0x00, 0x00, 0xC0 | 25, 0x00];
    r.extend_from_slice(&(LARGE as u32 | 0x8000_0000).to_be_bytes());
    r.extend(std::iter::repeat_n(b'y', LARGE));
    r
}

/// The bytes of one [`Mode::Large`] request stream's answer: its HEADERS
/// frame (5 bytes) and its DATA frame's type, length and payload.
pub const LARGE_FRAMES: u64 = 5 + 1 + 4 + LARGE as u64;

fn serve(sock: UdpSocket, mode: Mode, log: &Mutex<Vec<H3Line>>, stop: &AtomicBool) {
    let mut ep = Endpoint::new(
        Arc::new(EndpointConfig::default()),
        Some(Arc::new(server_config())),
        true,
        None,
    );
    let mut conns: HashMap<quinn_proto::ConnectionHandle, ServerConn> = HashMap::new();
    let mut buf = vec![0u8; 65_536];
    let mut out = Vec::with_capacity(65_536);
    let mut served = 0u64;
    let body = if mode == Mode::Large {
        large_response()
    } else {
        response()
    };
    let udp = quinn_udp::UdpSocketState::new((&sock).into()).expect("UDP socket state");
    while !stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        let wait = conns
            .values_mut()
            .filter_map(|c| c.conn.poll_timeout())
            .min()
            .map_or(Duration::from_millis(20), |t| t.saturating_duration_since(now))
            .clamp(Duration::from_micros(200), Duration::from_millis(20));
        let _ = sock.set_read_timeout(Some(wait));
        // quinn-udp's socket state turns UDP_GRO on: a read may hold a
        // client's GSO batch, `stride` bytes a datagram.
        let mut meta = [quinn_udp::RecvMeta::default()];
        let read = udp.recv((&sock).into(), &mut [std::io::IoSliceMut::new(&mut buf)], &mut meta);
        let (len, stride, from) = (meta[0].len, meta[0].stride.max(1), meta[0].addr);
        for datagram in buf[..if read.is_ok() { len } else { 0 }].chunks(stride) {
            out.clear();
            match ep.handle(Instant::now(), from, None, None, BytesMut::from(datagram), &mut out) {
                Some(DatagramEvent::NewConnection(incoming)) => {
                    out.clear();
                    match ep.accept(incoming, Instant::now(), &mut out, None) {
                        Ok((ch, conn)) => {
                            if mode == Mode::ForgetSessions {
                                ep.set_server_config(Some(Arc::new(server_config())));
                            }
                            conns.insert(
                                ch,
                                ServerConn {
                                    conn,
                                    requests: 0,
                                    silent: false,
                                },
                            );
                        }
                        Err(e) => {
                            if let Some(t) = e.response {
                                let _ = sock.send_to(&out[..t.size], t.destination);
                            }
                        }
                    }
                }
                Some(DatagramEvent::ConnectionEvent(ch, ev)) => {
                    if let Some(c) = conns.get_mut(&ch).filter(|c| !c.silent) {
                        c.conn.handle_event(ev);
                    }
                }
                Some(DatagramEvent::Response(t)) => {
                    let _ = sock.send_to(&out[..t.size], t.destination);
                }
                None => {}
            }
        }
        let now = Instant::now();
        for (&ch, c) in conns.iter_mut() {
            if c.silent {
                continue;
            }
            if c.conn.poll_timeout().is_some_and(|t| t <= now) {
                c.conn.handle_timeout(now);
            }
            while let Some(ev) = c.conn.poll_endpoint_events() {
                if let Some(ce) = ep.handle_event(ch, ev) {
                    c.conn.handle_event(ce);
                }
            }
            let mut ready = Vec::new();
            while let Some(ev) = c.conn.poll() {
                match ev {
                    // A new stream's first bytes are read at its accept:
                    // no Readable event comes for them.
                    Event::Stream(StreamEvent::Opened { .. }) => {
                        while let Some(id) = c.conn.streams().accept(Dir::Bi) {
                            ready.push(id);
                        }
                        while let Some(id) = c.conn.streams().accept(Dir::Uni) {
                            ready.push(id);
                        }
                    }
                    Event::Stream(StreamEvent::Readable { id }) => ready.push(id),
                    _ => {}
                }
            }
            for id in ready {
                let mut fin = false;
                {
                    let mut rs = c.conn.recv_stream(id);
                    if let Ok(mut chunks) = rs.read(true) {
                        loop {
                            match chunks.next(usize::MAX) {
                                Ok(Some(_)) => {}
                                Ok(None) => {
                                    fin = true;
                                    break;
                                }
                                Err(_) => break,
                            }
                        }
                        let _ = chunks.finalize();
                    };
                }
                if !fin || id.dir() != Dir::Bi {
                    continue;
                }
                c.requests += 1;
                served += 1;
                let line = match mode {
                    Mode::ResetEvery(k) if served.is_multiple_of(k) => {
                        let _ = c.conn.send_stream(id).reset(VarInt::from_u32(0x10b));
                        H3Line { status: 0, size: 0 }
                    }
                    Mode::CloseAfter(n) if c.requests > n => {
                        c.conn.close(now, VarInt::from_u32(0x102), bytes::Bytes::new());
                        H3Line { status: 1, size: 0 }
                    }
                    Mode::SilentAfter(n) if c.requests > n => {
                        c.silent = true;
                        H3Line { status: 2, size: 0 }
                    }
                    _ => {
                        let mut s = c.conn.send_stream(id);
                        let mut at = 0;
                        while at < body.len() {
                            match s.write(&body[at..]) {
                                Ok(n) if n > 0 => at += n,
                                _ => break,
                            }
                        }
                        let _ = s.finish();
                        H3Line {
                            status: 200,
                            size: if mode == Mode::Large { LARGE } else { BODY } as u64,
                        }
                    }
                };
                log.lock().expect("log").push(line);
                if c.silent {
                    break;
                }
            }
            if c.silent {
                continue;
            }
            // Mode::Large sends in GSO batches of up to 10 datagrams.
            let batch = if mode == Mode::Large {
                udp.max_gso_segments().min(10)
            } else {
                1
            };
            loop {
                out.clear();
                let Some(t) = c.conn.poll_transmit(Instant::now(), batch, &mut out) else {
                    break;
                };
                let tx = quinn_udp::Transmit {
                    destination: t.destination,
                    ecn: None,
                    contents: &out[..t.size],
                    segment_size: t.segment_size,
                    src_ip: None,
                };
                let _ = udp.send((&sock).into(), &tx);
            }
        }
        conns.retain(|_, c| !c.conn.is_drained());
    }
}

/// A UDP relay on a loopback port in front of `target`: forwards each
/// client's datagrams from a socket of its own, both ways, and drops every
/// `drop_every`-th datagram it relays (both directions counted together).
pub struct Relay {
    pub port: u16,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    dropped: Arc<Mutex<u64>>,
}

impl Relay {
    pub fn start(target: u16, drop_every: u64) -> Relay {
        let front = UdpSocket::bind("127.0.0.1:0").expect("bind the relay");
        let port = front.local_addr().expect("local_addr").port();
        front.set_nonblocking(true).expect("nonblocking");
        let stop = Arc::new(AtomicBool::new(false));
        let dropped = Arc::new(Mutex::new(0));
        let (s, d) = (Arc::clone(&stop), Arc::clone(&dropped));
        let thread = std::thread::spawn(move || {
            let target: SocketAddr = ([127, 0, 0, 1], target).into();
            let mut backs: Vec<(SocketAddr, UdpSocket)> = Vec::new();
            let mut buf = vec![0u8; 65_536];
            let mut count = 0u64;
            while !s.load(Ordering::Relaxed) {
                let mut idle = true;
                while let Ok((n, from)) = front.recv_from(&mut buf) {
                    idle = false;
                    if !backs.iter().any(|(a, _)| *a == from) {
                        let b = UdpSocket::bind("127.0.0.1:0").expect("bind the relay's back");
                        b.set_nonblocking(true).expect("nonblocking");
                        backs.push((from, b));
                    }
                    count += 1;
                    if count.is_multiple_of(drop_every) {
                        *d.lock().expect("dropped") += 1;
                        continue;
                    }
                    if let Some((_, b)) = backs.iter().find(|(a, _)| *a == from) {
                        let _ = b.send_to(&buf[..n], target);
                    }
                }
                for (client, b) in &backs {
                    while let Ok((n, _)) = b.recv_from(&mut buf) {
                        idle = false;
                        count += 1;
                        if count.is_multiple_of(drop_every) {
                            *d.lock().expect("dropped") += 1;
                            continue;
                        }
                        let _ = front.send_to(&buf[..n], client);
                    }
                }
                if idle {
                    std::thread::sleep(Duration::from_micros(200));
                }
            }
        });
        Relay {
            port,
            stop,
            thread: Some(thread),
            dropped,
        }
    }

    /// Datagrams dropped so far.
    pub fn dropped(&self) -> u64 {
        *self.dropped.lock().expect("dropped")
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
