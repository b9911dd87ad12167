//! A misbehaving SMB2 server for tests: a std listener on 127.0.0.1:0 that
//! speaks just enough SMB 2.1 (NEGOTIATE, an anonymous NTLMSSP
//! SESSION_SETUP made a guest's, TREE_CONNECT) for benchlab's client to
//! connect, answers CREATE, CLOSE, READ, WRITE, LOCK, FLUSH, QUERY_INFO,
//! SET_INFO … with canned successes, and then misbehaves as its [`Fault`]
//! says. It counts what it received and what it answered, per command and
//! per status, so a test compares benchlab's counts with the server's own.
//!
//! Bounded: at most [`MAX_CONNECTIONS`] connections, frames checked
//! against `benchlab_smb2::MAX_FRAME`, each connection's thread ends when
//! its peer closes or the server is dropped.

use benchlab_smb2::{cmd, frame, status as nt, Header, FLAG_RESPONSE, HEADER_LEN, UNSOLICITED};
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// Connections served at most (a test's users, plus room).
pub const MAX_CONNECTIONS: usize = 64;

/// The most bytes a READ is answered with (benchlab asks at most 64 KiB).
const MAX_READ: usize = 1 << 16;

/// What the server does wrong. `N` counts a connection's requests after
/// its TREE_CONNECT (the client's open of the share's root is the first):
/// the fault starts with request `N + 1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Behaves.
    None,
    /// Closes the connection on receiving request `N + 1`, unanswered.
    DropAfter(u64),
    /// Answers every request after `N` with STATUS_INSUFFICIENT_RESOURCES.
    InsufficientResourcesAfter(u64),
    /// Grants one credit an answer (the client's window stays at one),
    /// and none from the answer to request `N + 1` on: a compliant client
    /// then sends nothing more.
    WithholdCreditsAfter(u64),
    /// Sends an unsolicited OPLOCK_BREAK notification before the answer to
    /// request `N + 1` (and answers it as usual).
    OplockBreakAfter(u64),
    /// Sends an unsolicited OPLOCK_BREAK notification just after the
    /// answer to request `N + 1`, while the client has nothing in flight.
    OplockBreakIdleAfter(u64),
    /// Reads request `N + 1` and every later one, answers none.
    SilentAfter(u64),
}

/// What the server received and answered, all connections together.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counts {
    pub connections: u64,
    /// Every request received, by SMB2 command name.
    pub received: BTreeMap<&'static str, u64>,
    /// Requests received after TREE_CONNECT, by command (the first is
    /// the client's open of the share's root).
    pub after_tree: BTreeMap<&'static str, u64>,
    /// Answers sent after TREE_CONNECT, by command and status name
    /// (`NT_STATUS_OK` for success, and for the end of a listing).
    pub answered: BTreeMap<(&'static str, String), u64>,
    /// Requests received after TREE_CONNECT that got no answer.
    pub unanswered: u64,
    /// OPLOCK_BREAK notifications sent.
    pub breaks_sent: u64,
    /// OPLOCK_BREAK acknowledgements received.
    pub breaks_acknowledged: u64,
    /// Requests other than an acknowledgement received between a break
    /// and its acknowledgement (a client that acknowledges only when its
    /// next operation starts sends one first).
    pub requests_before_ack: u64,
    /// Each QUERY_INFO, SET_INFO and QUERY_DIRECTORY received after
    /// TREE_CONNECT, in order: the command, its info type (0 for a
    /// listing), its information class, and the buffer length it names
    /// (QUERY_INFO's and QUERY_DIRECTORY's OutputBufferLength, SET_INFO's
    /// BufferLength).
    pub classes: Vec<(&'static str, u8, u8, u32)>,
}

impl Counts {
    pub fn after_tree_total(&self) -> u64 {
        self.after_tree.values().sum()
    }
    /// Answers to `command` with status `status` (a name).
    pub fn answered(&self, command: &'static str, status: &str) -> u64 {
        self.answered.get(&(command, status.to_string())).copied().unwrap_or(0)
    }
    /// Answers with status `status`, every command.
    pub fn answered_with(&self, status: &str) -> u64 {
        self.answered
            .iter()
            .filter(|((_, s), _)| s == status)
            .map(|(_, n)| n)
            .sum()
    }
    /// Requests of `command` received after TREE_CONNECT.
    pub fn sent(&self, command: &str) -> u64 {
        self.after_tree.get(command).copied().unwrap_or(0)
    }
}

/// A running fake server; dropping it stops it.
pub struct FakeSmb {
    pub port: u16,
    counts: Arc<Mutex<Counts>>,
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
}

impl FakeSmb {
    pub fn start(fault: Fault) -> FakeSmb {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        listener.set_nonblocking(true).expect("nonblocking listener");
        let port = listener.local_addr().expect("local_addr").port();
        let counts = Arc::new(Mutex::new(Counts::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let (c, st) = (counts.clone(), stop.clone());
        let accept = std::thread::spawn(move || {
            let mut conns = Vec::new();
            while !st.load(Ordering::Relaxed) && conns.len() < MAX_CONNECTIONS {
                match listener.accept() {
                    Ok((sock, _)) => {
                        let (c, st) = (c.clone(), st.clone());
                        lock(&c).connections += 1;
                        conns.push(std::thread::spawn(move || serve(sock, fault, &c, &st)));
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                        std::thread::sleep(Duration::from_millis(5))
                    }
                    Err(_) => break,
                }
            }
            for h in conns {
                let _ = h.join();
            }
        });
        FakeSmb {
            port,
            counts,
            stop,
            accept: Some(accept),
        }
    }

    /// `smb://127.0.0.1:PORT/bench?client=benchlab`
    pub fn url(&self) -> String {
        format!("smb://127.0.0.1:{}/bench?client=benchlab", self.port)
    }

    pub fn counts(&self) -> Counts {
        lock(&self.counts).clone()
    }
}

impl Drop for FakeSmb {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
    }
}

fn lock(c: &Mutex<Counts>) -> std::sync::MutexGuard<'_, Counts> {
    c.lock().unwrap_or_else(|e| e.into_inner())
}

pub fn command_name(c: u16) -> &'static str {
    match c {
        cmd::NEGOTIATE => "NEGOTIATE",
        cmd::SESSION_SETUP => "SESSION_SETUP",
        cmd::LOGOFF => "LOGOFF",
        cmd::TREE_CONNECT => "TREE_CONNECT",
        cmd::TREE_DISCONNECT => "TREE_DISCONNECT",
        cmd::CREATE => "CREATE",
        cmd::CLOSE => "CLOSE",
        cmd::FLUSH => "FLUSH",
        cmd::READ => "READ",
        cmd::WRITE => "WRITE",
        cmd::LOCK => "LOCK",
        cmd::ECHO => "ECHO",
        cmd::QUERY_DIRECTORY => "QUERY_DIRECTORY",
        cmd::QUERY_INFO => "QUERY_INFO",
        cmd::SET_INFO => "SET_INFO",
        cmd::OPLOCK_BREAK => "OPLOCK_BREAK",
        _ => "OTHER",
    }
}

/// Reads one framed message; None when the peer closed, the server stops
/// or the frame is not one.
fn read_msg(sock: &mut TcpStream, stop: &AtomicBool) -> Option<Vec<u8>> {
    let mut prefix = [0u8; 4];
    let mut got = 0;
    while got < 4 {
        match sock.read(&mut prefix[got..]) {
            Ok(0) => return None,
            Ok(n) => got += n,
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                if stop.load(Ordering::Relaxed) {
                    return None;
                }
            }
            Err(_) => return None,
        }
    }
    let n = frame::length(prefix).ok()?;
    let mut m = vec![0u8; n];
    let mut got = 0;
    while got < n {
        match sock.read(&mut m[got..]) {
            Ok(0) => return None,
            Ok(k) => got += k,
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                if stop.load(Ordering::Relaxed) {
                    return None;
                }
            }
            Err(_) => return None,
        }
    }
    Some(m)
}

fn le16(v: &mut Vec<u8>, x: u16) {
    v.extend_from_slice(&x.to_le_bytes());
}
fn le32(v: &mut Vec<u8>, x: u32) {
    v.extend_from_slice(&x.to_le_bytes());
}
fn le64(v: &mut Vec<u8>, x: u64) {
    v.extend_from_slice(&x.to_le_bytes());
}

fn answer(req: &Header, status: u32, credits: u16, session_id: u64, tree_id: u32, body: &[u8]) -> Vec<u8> {
    let h = Header {
        credit_charge: req.credit_charge,
        status,
        command: req.command,
        credits,
        flags: FLAG_RESPONSE,
        next_command: 0,
        message_id: req.message_id,
        async_id: 0,
        tree_id,
        session_id,
        signature: [0; 16],
    };
    let mut m = Vec::with_capacity(HEADER_LEN + body.len());
    h.encode(&mut m);
    m.extend_from_slice(body);
    frame::encode(&m)
}

/// An error response's body ([MS-SMB2] 2.2.2).
const ERROR_BODY: [u8; 9] = [9, 0, 0, 0, 0, 0, 0, 0, 0];

fn negotiate_body() -> Vec<u8> {
    let mut v = Vec::new();
    le16(&mut v, 65);
    le16(&mut v, benchlab_smb2::msg::SIGNING_ENABLED);
    le16(&mut v, benchlab_smb2::msg::DIALECT_210);
    le16(&mut v, 0);
    v.extend_from_slice(&[0x42; 16]);
    le32(&mut v, 0);
    for _ in 0..3 {
        le32(&mut v, 65536);
    }
    le64(&mut v, 0);
    le64(&mut v, 0);
    le16(&mut v, 0);
    le16(&mut v, 0);
    le32(&mut v, 0);
    v
}

/// A CHALLENGE_MESSAGE with no target name and an empty AV list.
fn challenge() -> Vec<u8> {
    let mut v = Vec::new();
    v.extend_from_slice(b"NTLMSSP\0");
    le32(&mut v, 2);
    le16(&mut v, 0);
    le16(&mut v, 0);
    le32(&mut v, 48);
    le32(&mut v, benchlab_smb2::auth::CLIENT_FLAGS);
    v.extend_from_slice(&[7; 8]);
    v.extend_from_slice(&[0; 8]);
    le16(&mut v, 4);
    le16(&mut v, 4);
    le32(&mut v, 48);
    v.extend_from_slice(&[0; 4]);
    v
}

fn session_setup_body(flags: u16, token: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    le16(&mut v, 9);
    le16(&mut v, flags);
    le16(&mut v, if token.is_empty() { 0 } else { (HEADER_LEN + 8) as u16 });
    le16(&mut v, token.len() as u16);
    v.extend_from_slice(token);
    v
}

fn body_u32(req: &[u8], at: usize) -> usize {
    req.get(HEADER_LEN + at..HEADER_LEN + at + 4)
        .map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
}

/// The canned successful answer's body to `req`.
fn success_body(h: &Header, req: &[u8], next_fid: &mut u64) -> (u32, Vec<u8>) {
    let mut v = Vec::new();
    match h.command {
        cmd::CREATE => {
            le16(&mut v, 89);
            v.push(0);
            v.push(0);
            le32(&mut v, 1);
            v.extend_from_slice(&[0; 32]);
            le64(&mut v, 0);
            le64(&mut v, 0);
            le32(&mut v, 0x80);
            le32(&mut v, 0);
            *next_fid += 1;
            le64(&mut v, *next_fid);
            le64(&mut v, *next_fid);
            le32(&mut v, 0);
            le32(&mut v, 0);
            v.push(0);
        }
        cmd::CLOSE => {
            le16(&mut v, 60);
            v.extend_from_slice(&[0; 58]);
        }
        cmd::READ => {
            let n = body_u32(req, 4).min(MAX_READ);
            le16(&mut v, 17);
            v.push((HEADER_LEN + 16) as u8);
            v.push(0);
            le32(&mut v, n as u32);
            le32(&mut v, 0);
            le32(&mut v, 0);
            v.resize(v.len() + n, 0xab);
        }
        cmd::WRITE => {
            let n = body_u32(req, 4);
            le16(&mut v, 17);
            le16(&mut v, 0);
            le32(&mut v, n as u32);
            le32(&mut v, 0);
            le32(&mut v, 0);
        }
        cmd::QUERY_INFO => {
            le16(&mut v, 9);
            le16(&mut v, (HEADER_LEN + 8) as u16);
            le32(&mut v, 64);
            v.resize(v.len() + 64, 0);
        }
        // A listing with nothing more in it.
        cmd::QUERY_DIRECTORY => return (nt::NO_MORE_FILES, ERROR_BODY.to_vec()),
        cmd::SET_INFO => le16(&mut v, 2),
        cmd::OPLOCK_BREAK => {
            le16(&mut v, 24);
            v.extend_from_slice(&req[HEADER_LEN + 2..(HEADER_LEN + 24).min(req.len())]);
        }
        // LOCK, FLUSH, LOGOFF, TREE_DISCONNECT, ECHO.
        _ => v.extend_from_slice(&[4, 0, 0, 0]),
    }
    (nt::SUCCESS, v)
}

/// The messages of a frame: one, or a compound's, chained by each
/// header's NextCommand (an offset past the frame ends the chain).
fn messages(frame: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < frame.len() {
        let rest = &frame[at..];
        let next = Header::decode(rest).map_or(0, |h| h.next_command as usize);
        if next < HEADER_LEN || next > rest.len() {
            out.push(rest.to_vec());
            break;
        }
        out.push(rest[..next].to_vec());
        at += next;
    }
    out
}

/// What `classes` records of a request: its info type, class and length.
fn class_of(h: &Header, req: &[u8]) -> Option<(u8, u8, u32)> {
    let b = req.get(HEADER_LEN..)?;
    let u32_at = |at: usize| b.get(at..at + 4).map(|x| u32::from_le_bytes([x[0], x[1], x[2], x[3]]));
    match h.command {
        cmd::QUERY_INFO | cmd::SET_INFO => Some((*b.get(2)?, *b.get(3)?, u32_at(4)?)),
        cmd::QUERY_DIRECTORY => Some((0, *b.get(2)?, u32_at(28)?)),
        _ => None,
    }
}

fn serve(mut sock: TcpStream, fault: Fault, counts: &Mutex<Counts>, stop: &AtomicBool) {
    let _ = sock.set_read_timeout(Some(Duration::from_millis(100)));
    let _ = sock.set_nodelay(true);
    let session_id = 0x1000_0000_0000_0001u64;
    let tree_id = 7u32;
    let mut setup_round = 0;
    let mut after_tree: Option<u64> = None;
    let mut next_fid = 0u64;
    // A compound's messages are answered one by one, each as if it had
    // come alone (a client takes a compound's answers either way).
    let mut queued = std::collections::VecDeque::new();
    loop {
        let req = match queued.pop_front() {
            Some(m) => m,
            None => match read_msg(&mut sock, stop) {
                Some(frame) => {
                    queued.extend(messages(&frame));
                    continue;
                }
                None => return,
            },
        };
        let Ok(h) = Header::decode(&req) else { return };
        let name = command_name(h.command);
        let mut c = lock(counts);
        *c.received.entry(name).or_default() += 1;
        // Before TREE_CONNECT: the session, always well behaved.
        let Some(n) = after_tree.as_mut() else {
            let (status, body, sid, tid, credits) = match h.command {
                cmd::NEGOTIATE => (nt::SUCCESS, negotiate_body(), 0, 0, 1),
                cmd::SESSION_SETUP if setup_round == 0 => {
                    setup_round += 1;
                    let token = benchlab_smb2::auth::spnego_resp(&challenge());
                    (
                        nt::MORE_PROCESSING_REQUIRED,
                        session_setup_body(0, &token),
                        session_id,
                        0,
                        1,
                    )
                }
                cmd::SESSION_SETUP => (
                    nt::SUCCESS,
                    session_setup_body(benchlab_smb2::msg::SESSION_FLAG_IS_GUEST, &[]),
                    session_id,
                    0,
                    1,
                ),
                cmd::TREE_CONNECT => {
                    let mut v = Vec::new();
                    le16(&mut v, 16);
                    v.push(1);
                    v.push(0);
                    le32(&mut v, 0);
                    le32(&mut v, 0);
                    le32(&mut v, 0x001f_01ff);
                    after_tree = Some(0);
                    (nt::SUCCESS, v, session_id, tree_id, 1)
                }
                _ => (nt::ACCESS_DENIED, ERROR_BODY.to_vec(), session_id, 0, 1),
            };
            drop(c);
            if sock.write_all(&answer(&h, status, credits, sid, tid, &body)).is_err() {
                return;
            }
            continue;
        };
        *n += 1;
        let k = *n;
        *c.after_tree.entry(name).or_default() += 1;
        if let Some((t, class, len)) = class_of(&h, &req) {
            c.classes.push((name, t, class, len));
        }
        if h.command == cmd::OPLOCK_BREAK {
            c.breaks_acknowledged += 1;
        } else if c.breaks_sent > c.breaks_acknowledged {
            c.requests_before_ack += 1;
        }
        let past = |limit: u64| k > limit;
        let mut credits = 1;
        let (status, body) = match fault {
            Fault::DropAfter(limit) if past(limit) => {
                c.unanswered += 1;
                drop(c);
                let _ = sock.shutdown(std::net::Shutdown::Both);
                return;
            }
            Fault::SilentAfter(limit) if past(limit) => {
                c.unanswered += 1;
                continue;
            }
            Fault::InsufficientResourcesAfter(limit) if past(limit) => {
                (nt::INSUFFICIENT_RESOURCES, ERROR_BODY.to_vec())
            }
            Fault::WithholdCreditsAfter(limit) => {
                if past(limit) {
                    credits = 0;
                }
                success_body(&h, &req, &mut next_fid)
            }
            _ => success_body(&h, &req, &mut next_fid),
        };
        let shown = if status == nt::NO_MORE_FILES {
            nt::SUCCESS
        } else {
            status
        };
        *c.answered.entry((name, nt::name(shown))).or_default() += 1;
        let oplock_break = |fid: u64| {
            let mut b = Vec::new();
            le16(&mut b, 24);
            b.push(0);
            b.extend_from_slice(&[0; 5]);
            le64(&mut b, fid.max(1));
            le64(&mut b, fid.max(1));
            let brk = Header {
                command: cmd::OPLOCK_BREAK,
                message_id: UNSOLICITED,
                flags: FLAG_RESPONSE,
                ..Header::default()
            };
            let mut m = Vec::new();
            brk.encode(&mut m);
            m.extend_from_slice(&b);
            frame::encode(&m)
        };
        if matches!(fault, Fault::OplockBreakAfter(limit) if k == limit + 1) {
            c.breaks_sent += 1;
            if sock.write_all(&oplock_break(next_fid)).is_err() {
                return;
            }
        }
        let idle_break = matches!(fault, Fault::OplockBreakIdleAfter(limit) if k == limit + 1);
        if idle_break {
            c.breaks_sent += 1;
        }
        // Without fault, grant what a client asks up to 32 (as smbd).
        if matches!(
            fault,
            Fault::None | Fault::OplockBreakAfter(_) | Fault::OplockBreakIdleAfter(_)
        ) {
            credits = h.credits.clamp(1, 32);
        }
        drop(c);
        if sock
            .write_all(&answer(&h, status, credits, session_id, tree_id, &body))
            .is_err()
        {
            return;
        }
        if idle_break && sock.write_all(&oplock_break(next_fid)).is_err() {
            return;
        }
    }
}
