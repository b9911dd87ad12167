//! `smb://…?client=benchlab`: benchlab's own SMB2/3 client, one TCP
//! connection and one session per user.
//!
//! The protocol is the sans-IO machine [`benchlab_smb2::client::Client`]
//! (every operation's requests and what each answer means); this backend
//! only moves its frames over a [`Transport`]: a blocking socket, or the
//! event loop's ([`crate::smb2_loop`]), where a user waiting for an answer
//! gives its thread to the next user.
//!
//! Unlike libsmbclient ([`crate::smb`]) it sends every loadfile operation
//! as the real command — LockX/UnlockX as LOCK with the loadfile's range,
//! Flush as FLUSH — and answers each with the server's NT status by name,
//! so OBJECT_NAME_NOT_FOUND, OBJECT_PATH_NOT_FOUND and NO_SUCH_FILE stay
//! apart. A broken connection or a message that is not SMB2 is
//! `NT_STATUS_CONNECTION_DISCONNECTED` / `NT_STATUS_INVALID_NETWORK_RESPONSE`,
//! counted like any other status.

use crate::backend::{is_not_found, wildcard_match, FileBackend, WireMeter};
use crate::smb::{Encrypt, Sign, SmbUrl};
use crate::status::Status;
use benchlab_smb2::auth::Credentials;
use benchlab_smb2::client::{self, Client, Config, Failure, Op, Progress, Value};
use benchlab_smb2::{frame, status as nt};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The most frames taken between two operations in one go.
const MAX_IDLE_FRAMES: usize = 64;

/// How long a user waits for an answer before the connection counts as
/// lost.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(30);

/// The longest a thinking thread user waits on its socket before it
/// looks at the mix's stop again (a sleeping user looks as often).
const STOP_CHECK: Duration = Duration::from_millis(50);

fn other(code: u32) -> Status {
    Status::parse(&nt::name(code)).unwrap_or_else(|| Status::Other(nt::name(code)))
}

fn lost(e: impl std::fmt::Display) -> Status {
    Status::Other(format!("NT_STATUS_CONNECTION_DISCONNECTED ({e})"))
}

fn bad_answer(e: impl std::fmt::Display) -> Status {
    Status::Other(format!("NT_STATUS_INVALID_NETWORK_RESPONSE ({e})"))
}

/// The machine's failure as results count it.
fn status_of(f: Failure) -> Status {
    match f {
        Failure::Status(code) => other(code),
        Failure::UnknownHandle => Status::InvalidHandle,
        f => Status::Other(f.to_string()),
    }
}

/// A FILETIME (100 ns since 1601) of now.
fn filetime_now() -> u64 {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    (d.as_secs() + 11_644_473_600) * 10_000_000 + u64::from(d.subsec_nanos() / 100)
}

/// 8 unpredictable bytes (client challenge, GUID, salt): the std hasher's
/// random keys mixed with the clock.
fn random8() -> [u8; 8] {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(filetime_now());
    h.finish().to_le_bytes()
}

/// A share's path from a loadfile's (`\clients\client1\f`): components
/// joined by `\`, `.` dropped, `..` taken back; climbing above the share's
/// root is refused (ACCESS_DENIED), as the other backends do.
fn share_path(p: &str) -> Result<String, Status> {
    crate::backend::components(p).map(|c| c.join("\\"))
}

/// The session a target asks for, with fresh random values.
pub(crate) fn config(u: &SmbUrl) -> Config {
    let mut guid = [0u8; 16];
    guid[..8].copy_from_slice(&random8());
    guid[8..].copy_from_slice(&random8());
    let mut salt = [0u8; 32];
    for ch in salt.chunks_mut(8) {
        ch.copy_from_slice(&random8());
    }
    let credentials = match (&u.user, &u.password) {
        (Some(user), password) if !user.is_empty() => Credentials::User {
            user: user.clone(),
            domain: String::new(),
            password: password.clone().unwrap_or_default(),
        },
        _ => Credentials::Anonymous,
    };
    Config {
        host: u.host.clone(),
        share: u.share.clone(),
        credentials,
        dialect: u.dialect,
        sign_required: u.sign == Some(Sign::Required),
        encrypt: match u.encrypt {
            Some(Encrypt::Require) => client::Encrypt::Require,
            Some(Encrypt::Request) => client::Encrypt::Request,
            _ => client::Encrypt::AsServerSays,
        },
        client_guid: guid,
        salt,
        client_challenge: random8(),
        nonce_salt: random8(),
        time: filetime_now(),
        leases: u.leases,
        signing: u.signing,
        cipher: u.cipher,
    }
}

/// Where a user's frames go: read and write block (a socket), or look as
/// if they do (the event loop's, which lets other users run meanwhile).
pub trait Transport: Read + Write + Send {
    /// The session is ending: a server that stopped answering must not
    /// hold the end long.
    fn closing(&mut self) {}
    /// Whether bytes are waiting to be read now (never waits).
    fn has_data(&mut self) -> bool {
        false
    }
    /// Waits up to `timeout` for bytes to read; whether there are. A
    /// thread user's think time waits here; the event loop's users never
    /// do (they think on the loop, which wakes them when their socket
    /// turns readable), so the fallback only sleeps.
    fn wait_readable(&mut self, timeout: Duration) -> bool {
        std::thread::sleep(timeout);
        self.has_data()
    }
}

/// Whether `s` has something to read (bytes, or its end or an error, which
/// the read then finds) within `timeout`.
fn poll_readable(s: &TcpStream, timeout: Duration) -> bool {
    use std::os::fd::AsRawFd;
    let mut p = libc::pollfd {
        fd: s.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // Rounded up: a wait under a millisecond would otherwise spin.
    let ms = timeout.as_micros().div_ceil(1000).min(i32::MAX as u128) as i32;
    // SAFETY: one pollfd we own, for a descriptor `s` keeps open.
    let n = unsafe { libc::poll(&mut p, 1, ms) };
    n > 0 && p.revents != 0
}

impl Transport for TcpStream {
    fn closing(&mut self) {
        let _ = self.set_read_timeout(Some(Duration::from_secs(2)));
    }
    fn has_data(&mut self) -> bool {
        poll_readable(self, Duration::ZERO)
    }
    fn wait_readable(&mut self, timeout: Duration) -> bool {
        poll_readable(self, timeout)
    }
}

/// One user's SMB2 session on the target's share.
pub struct Smb2Backend<S: Transport = TcpStream> {
    client: Client,
    sock: S,
    /// The frame being read (bounded by the codec's frame limit).
    frame: Vec<u8>,
    connected: bool,
    /// Set once a read or write failed, or a frame could not be read: the
    /// stream is out of step, and every later operation is the lost
    /// connection's, never sent (not one refused for want of credits the
    /// lost answers would have granted).
    broken: bool,
    /// The machine's wire counts after each operation.
    meter: Arc<WireMeter>,
}

impl Smb2Backend<TcpStream> {
    /// A session on the share of `u`; a refusal means the mix cannot run.
    pub fn connect(u: &SmbUrl) -> Result<Smb2Backend, crate::FileError> {
        let sock = TcpStream::connect((u.host.as_str(), u.port))
            .and_then(|s| {
                // Every request waits for its answer: Nagle's algorithm
                // would hold each small one for the delayed ACK.
                s.set_nodelay(true)?;
                s.set_read_timeout(Some(ANSWER_TIMEOUT))?;
                Ok(s)
            })
            .map_err(|e| refused(u, &format!("connect: {e}")))?;
        Smb2Backend::over(sock, u).map_err(|e| refused(u, &e))
    }
}

fn refused(u: &SmbUrl, why: &str) -> crate::FileError {
    crate::FileError::Run(format!(
        "{u}: cannot reach the share with benchlab's SMB2 client: {why} (is the server running, the share and the user right?)"
    ))
}

impl<S: Transport> Smb2Backend<S> {
    /// A session over `sock`, already connected to the target of `u`.
    pub fn over(sock: S, u: &SmbUrl) -> Result<Smb2Backend<S>, String> {
        let mut b = Smb2Backend {
            client: Client::new(config(u)),
            sock,
            frame: Vec::new(),
            connected: false,
            broken: false,
            meter: Arc::default(),
        };
        b.run(Op::Connect).map_err(|s| s.to_string())?;
        b.connected = true;
        Ok(b)
    }

    /// The dialect the session runs at.
    pub fn dialect(&self) -> u16 {
        self.client.dialect()
    }

    /// Whether every request is signed.
    pub fn signing(&self) -> bool {
        self.client.signing()
    }

    /// The cipher every request is sealed with, if any.
    pub fn cipher(&self) -> Option<u16> {
        self.client.cipher()
    }

    /// What went over the connection so far.
    pub fn wire(&self) -> client::Wire {
        self.client.wire()
    }

    /// Runs `op` to its end: sends what the machine queued, feeds it each
    /// frame received.
    fn run(&mut self, op: Op) -> Result<Value, Status> {
        if let Some(r) = self.client.start(op) {
            // Settled without the server (a handle never opened …); on a
            // lost connection the credits its lost answers would have
            // granted are not what stops the operation.
            return r.map_err(|f| match f {
                Failure::NoCredit if self.broken => lost("lost earlier in the run"),
                f => status_of(f),
            });
        }
        if self.broken {
            self.client.abandon();
            return Err(lost("lost earlier in the run"));
        }
        let r = self.exchange();
        let w = self.client.wire();
        self.meter.set([w.sent, w.received, w.lease_breaks, w.oplock_breaks]);
        match r {
            Ok(r) => r,
            Err(e) => {
                // The connection failed mid-operation: the machine forgets
                // the operation, and the connection stays lost.
                self.client.abandon();
                self.broken = true;
                Err(e)
            }
        }
    }

    /// One frame read between operations, and what it makes the machine
    /// send (an acknowledgement).
    fn idle_frame(&mut self) -> Result<(), Status> {
        self.read_frame()?;
        self.client.on_idle_frame(&self.frame).map_err(status_of)?;
        self.flush()
    }

    /// The operation's outcome, or (the outer error) the transport's
    /// failure.
    fn exchange(&mut self) -> Result<Result<Value, Status>, Status> {
        loop {
            self.flush()?;
            self.read_frame()?;
            if let Progress::Done(r) = self.client.on_frame(&self.frame) {
                return Ok(r.map_err(status_of));
            }
        }
    }

    /// Writes all the machine has queued.
    fn flush(&mut self) -> Result<(), Status> {
        while !self.client.output().is_empty() {
            let n = self.sock.write(self.client.output()).map_err(lost)?;
            if n == 0 {
                return Err(lost("the connection took no more bytes"));
            }
            self.client.sent(n);
        }
        Ok(())
    }

    /// Reads one frame into `self.frame` (bounded by the codec's limit).
    fn read_frame(&mut self) -> Result<(), Status> {
        let mut prefix = [0u8; 4];
        self.sock.read_exact(&mut prefix).map_err(lost)?;
        let n = frame::length(prefix).map_err(bad_answer)?;
        self.frame.resize(n, 0);
        self.sock.read_exact(&mut self.frame).map_err(lost)
    }

    fn path_op(&mut self, path: &str, op: impl FnOnce(String) -> Op) -> Result<(), Status> {
        let name = share_path(path)?;
        self.run(op(name)).map(drop)
    }
}

impl<S: Transport> Drop for Smb2Backend<S> {
    /// Closes what is open and logs off; the server cleans up the rest
    /// when the connection ends.
    fn drop(&mut self) {
        if self.connected {
            self.sock.closing();
            let _ = self.run(Op::Logoff);
        }
    }
}

impl<S: Transport> FileBackend for Smb2Backend<S> {
    fn wire_meter(&self) -> Option<Arc<WireMeter>> {
        Some(self.meter.clone())
    }

    fn between_operations(&mut self) {
        if self.broken || !self.connected {
            return;
        }
        // What arrived while the user thinks: breaks (each acknowledged at
        // once, so the server need not hold another user's open until this
        // one's next operation) and acknowledgements' answers. A bounded
        // number a call: a server that streams them cannot hold the user.
        for _ in 0..MAX_IDLE_FRAMES {
            if !self.sock.has_data() {
                break;
            }
            let r = self.idle_frame();
            let w = self.client.wire();
            self.meter.set([w.sent, w.received, w.lease_breaks, w.oplock_breaks]);
            if r.is_err() {
                // Out of step (or lost): the next operation finds it lost.
                self.client.abandon();
                self.broken = true;
                return;
            }
        }
    }

    fn think_until(&mut self, until: Instant, stop: &AtomicBool) {
        // A thread user waits on its socket, not in a sleep: a break that
        // comes while it thinks is acknowledged then (the server may be
        // holding another user's open until it is), as the event loop's
        // users do — not when the next operation starts. What came behind
        // the last answer first, then each wake's frames (a bounded
        // number: between_operations).
        self.between_operations();
        loop {
            let now = Instant::now();
            if now >= until || stop.load(Ordering::Relaxed) {
                return;
            }
            if self.broken || !self.connected {
                // Nothing more to take: a lost connection's socket would
                // stay readable (its end) and wake the wait at once.
                return crate::backend::sleep_until(until, stop);
            }
            if self.sock.wait_readable((until - now).min(STOP_CHECK)) {
                self.between_operations();
            }
        }
    }

    fn create(&mut self, key: u64, path: &str, options: u32, disposition: u32) -> Result<(), Status> {
        self.path_op(path, |name| Op::Create {
            key,
            name,
            options,
            disposition,
        })
    }

    fn close(&mut self, key: u64) -> Result<(), Status> {
        self.run(Op::Close { key }).map(drop)
    }

    fn read(&mut self, key: u64, offset: u64, buf: &mut [u8]) -> Result<usize, Status> {
        self.run(Op::Read {
            key,
            offset,
            len: buf.len(),
        })?;
        let data = self.client.data();
        let n = data.len().min(buf.len());
        buf[..n].copy_from_slice(&data[..n]);
        Ok(n)
    }

    fn write(&mut self, key: u64, offset: u64, data: &[u8]) -> Result<usize, Status> {
        match self.run(Op::Write {
            key,
            offset,
            data: data.to_vec(),
        })? {
            Value::Bytes(n) => Ok(n),
            Value::Done => Ok(0),
        }
    }

    fn query_path(&mut self, path: &str, class: u8) -> Result<(), Status> {
        self.path_op(path, |name| Op::QueryPath { name, class })
    }

    fn query_file(&mut self, key: u64, class: u8) -> Result<(), Status> {
        self.run(Op::QueryFile { key, class }).map(drop)
    }

    fn query_fs(&mut self, class: u8) -> Result<(), Status> {
        self.run(Op::QueryFs { class }).map(drop)
    }

    fn set_file_info(&mut self, key: u64, class: u8) -> Result<(), Status> {
        self.run(Op::SetFileInfo {
            key,
            class,
            time: filetime_now(),
        })
        .map(drop)
    }

    fn find(&mut self, pattern: &str, class: u8) -> Result<u32, Status> {
        let (dir, mask) = pattern.rsplit_once('\\').unwrap_or(("", pattern));
        let dir = share_path(dir)?;
        self.run(Op::Find {
            dir,
            mask: mask.to_string(),
            class,
        })
        .map_err(|s| match s {
            // The directory itself missing is the path's not-found.
            Status::ObjectNameNotFound => Status::ObjectPathNotFound,
            s => s,
        })?;
        // The server matched the mask; counted again here so a server that
        // ignores it is not taken at its word.
        let n = self
            .client
            .listing()
            .iter()
            .filter(|(n, _)| wildcard_match(mask, n))
            .count() as u32;
        if n == 0 {
            return Err(Status::NoSuchFile);
        }
        Ok(n)
    }

    fn lock(&mut self, key: u64, offset: u64, len: u64, lock: bool) -> Result<(), Status> {
        self.run(Op::Lock { key, offset, len, lock }).map(drop)
    }

    fn flush(&mut self, key: u64) -> Result<(), Status> {
        self.run(Op::Flush { key }).map(drop)
    }

    fn unlink(&mut self, path: &str) -> Result<(), Status> {
        self.path_op(path, |name| Op::Unlink { name })
    }

    fn rename(&mut self, from: &str, to: &str) -> Result<(), Status> {
        let (from, to) = (share_path(from)?, share_path(to)?);
        self.run(Op::Rename { from, to }).map(drop)
    }

    fn mkdir(&mut self, path: &str) -> Result<(), Status> {
        self.path_op(path, |name| Op::Mkdir { name })
    }

    fn deltree(&mut self, path: &str) -> Result<(), Status> {
        let name = share_path(path)?;
        if name.is_empty() {
            return Err(Status::AccessDenied);
        }
        match self.run(Op::Deltree { name }) {
            Err(s) if is_not_found(&s) => Ok(()),
            r => r.map(drop),
        }
    }

    fn negotiated(&self) -> Option<benchlab_results::SmbNegotiated> {
        Some(benchlab_results::SmbNegotiated {
            dialect: benchlab_smb2::msg::dialect_name(self.dialect()),
            signing: self
                .client
                .signing_algorithm()
                .map_or("none", benchlab_smb2::sign::Algorithm::name)
                .to_string(),
            cipher: self
                .cipher()
                .map_or("none".to_string(), benchlab_smb2::seal::cipher_name),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use benchlab_smb2::msg;

    /// A backend over a socket pair, its machine mid-session (no
    /// negotiation: the test's server answers frames by hand).
    fn backend_pair() -> (Smb2Backend, TcpStream) {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let sock = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        sock.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let (server, _) = l.accept().unwrap();
        let u = SmbUrl::parse("smb://h/s?client=benchlab").unwrap();
        let b = Smb2Backend {
            client: Client::new(config(&u)),
            sock,
            frame: Vec::new(),
            connected: false,
            broken: false,
            meter: Arc::default(),
        };
        (b, server)
    }

    /// The transport's failures are counted by name: a frame above the
    /// codec's limit is refused before it is read, a closed connection
    /// is CONNECTION_DISCONNECTED.
    #[test]
    fn a_frame_too_large_and_a_lost_connection_are_statuses() {
        let (mut b, mut server) = backend_pair();
        server.write_all(&[0, 0x7f, 0xff, 0xff]).unwrap();
        let e = b
            .query_fs(benchlab_smb2::msg::FILE_FS_FULL_SIZE_INFORMATION)
            .unwrap_err();
        assert!(e.name().contains("limit"), "{e}");
        // (That request spent the one credit: a fresh session.)
        let (mut b, server) = backend_pair();
        drop(server);
        let e = b
            .query_fs(benchlab_smb2::msg::FILE_FS_FULL_SIZE_INFORMATION)
            .unwrap_err();
        assert!(e.name().starts_with("NT_STATUS_CONNECTION_DISCONNECTED"), "{e}");
    }

    /// A thread user's think time waits on its socket: an oplock break
    /// that comes while it thinks is acknowledged then, not at its next
    /// operation. No clock decides it: the think time is long, and only
    /// the server's having read the acknowledgement (or given up on it
    /// after 10 s) stops it.
    #[test]
    fn a_break_while_a_thread_user_thinks_is_acknowledged_then() {
        use benchlab_smb2::{cmd, Header, FLAG_RESPONSE, UNSOLICITED};
        let (mut b, mut server) = backend_pair();
        b.connected = true;
        let stop = Arc::new(AtomicBool::new(false));
        let srv = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut m = Vec::new();
                Header {
                    command: cmd::OPLOCK_BREAK,
                    message_id: UNSOLICITED,
                    flags: FLAG_RESPONSE,
                    ..Header::default()
                }
                .encode(&mut m);
                // OPLOCK_BREAK notification: size 24, level none, a file id.
                m.extend_from_slice(&24u16.to_le_bytes());
                m.extend_from_slice(&[0; 6]);
                m.extend_from_slice(&[7; 16]);
                server.write_all(&frame::encode(&m)).unwrap();
                server.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
                let mut prefix = [0u8; 4];
                let got = server.read_exact(&mut prefix).and_then(|()| {
                    let mut a = vec![0; frame::length(prefix).unwrap()];
                    server.read_exact(&mut a).map(|()| a)
                });
                stop.store(true, Ordering::Relaxed);
                (got.map(|a| Header::decode(&a).unwrap().command), server)
            })
        };
        b.think_until(Instant::now() + Duration::from_secs(60), &stop);
        let (command, server) = srv.join().unwrap();
        assert_eq!(
            command.ok(),
            Some(cmd::OPLOCK_BREAK),
            "no acknowledgement while thinking"
        );
        let w = b.wire();
        assert_eq!((w.breaks, w.oplock_breaks), (1, 1));
        assert_eq!(b.meter.get()[3], 1, "the meter has the break");
        drop(server);
    }

    #[test]
    fn paths_stay_in_the_share() {
        assert_eq!(
            share_path("\\clients\\client1\\f.dat").unwrap(),
            "clients\\client1\\f.dat"
        );
        assert_eq!(share_path("\\a\\.\\b\\..\\c").unwrap(), "a\\c");
        assert_eq!(share_path("\\").unwrap(), "");
        assert_eq!(share_path("\\a\\..\\.."), Err(Status::AccessDenied));
    }

    #[test]
    fn targets_name_the_client_and_dialect_and_print_back() {
        let u = SmbUrl::parse("smb://u:pw@h:4450/s?client=benchlab&dialect=3.0.2&sign=required").unwrap();
        assert_eq!(
            (u.client, u.dialect),
            (crate::smb::Client::Benchlab, Some(msg::DIALECT_302))
        );
        assert_eq!(SmbUrl::parse(&u.with_password()).unwrap(), u);
        assert_eq!(u.to_string(), "smb://u:***@h:4450/s?sign=required&dialect=3.0.2");
        // benchlab's client is the default; libsmbclient is named.
        let d = SmbUrl::parse("smb://h/s").unwrap();
        assert_eq!((d.client, d.dialect), (crate::smb::Client::Benchlab, None));
        let l = SmbUrl::parse("smb://h/s?client=libsmbclient").unwrap();
        assert_eq!(l.client, crate::smb::Client::Libsmbclient);
        assert_eq!(l.to_string(), "smb://h:445/s?client=libsmbclient");
    }

    #[test]
    fn dialects_parse_by_name() {
        assert_eq!(msg::parse_dialect("2.0.2"), Some(msg::DIALECT_202));
        assert_eq!(msg::parse_dialect("3.1.1"), Some(msg::DIALECT_311));
        assert_eq!(msg::parse_dialect("3.1"), None);
    }

    #[test]
    fn statuses_map_by_name() {
        assert_eq!(other(nt::OBJECT_NAME_NOT_FOUND), Status::ObjectNameNotFound);
        assert_eq!(other(nt::OBJECT_PATH_NOT_FOUND), Status::ObjectPathNotFound);
        assert_eq!(other(nt::NO_SUCH_FILE), Status::NoSuchFile);
        assert_eq!(
            other(nt::SHARING_VIOLATION),
            Status::Other("NT_STATUS_SHARING_VIOLATION".into())
        );
    }
}
