//! The one socket layer of the event loops: a connection is plain TCP or
//! TLS over TCP (rustls driven by hand on the non-blocking socket), opened
//! by [`connect`], read by [`Sock::read`], its handshake stepped by
//! [`handshake`], and its errors mapped to the counted kinds by one set of
//! rules whatever the protocol above it.
//!
//! By hand rather than through tokio-rustls: the loops are not async, and
//! a read or write here must be exactly one system call where the floor
//! makes one (docs/counting.md counts what crossed the socket).
//!
//! TLS uses rustls's unbuffered API, so the connection holds no buffer of
//! its own while it is idle between requests (docs/connections.md, "Memory
//! per connection"): records are received into and encrypted from buffers
//! of the OS thread ([`Scratch`]), and a connection keeps bytes only while
//! they must outlive one call — the start of a record the socket had not
//! all of, records the socket would not take yet, a record's plaintext the
//! caller's buffer had no room for — each freed once empty. rustls's
//! buffered `ClientConnection` keeps a receive buffer of at least 4 KiB
//! per connection for the connection's life.

use crate::stats::ErrorKind;
use mio::net::TcpStream;
use rustls::client::UnbufferedClientConnection;
use rustls::unbuffered::ConnectionState;
use std::cell::RefCell;
use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, RawFd};

/// `send(2)` of `buf` on `tcp`, straight to the kernel.
///
/// By hand, and not `Write::write`, because it is the request loop: glibc's
/// `send` and `recv` are thread-cancellation points, and each call turns
/// asynchronous cancellation on and off around the system call (two atomic
/// read-modify-writes, about 30 instructions; callgrind counted 59 a call
/// in all against about 10 for `syscall`). benchlab never cancels a
/// thread, so its two calls a request need none of it. The system call is
/// the one `send` makes: `sendto` without an address, `MSG_NOSIGNAL` (a
/// peer's reset is an error to count, not a signal), as std does.
#[inline]
pub(crate) fn send_raw(tcp: &TcpStream, buf: &[u8]) -> io::Result<usize> {
    // SAFETY: `buf` is valid for `buf.len()` bytes for the call; the
    // descriptor is `tcp`'s own, open while it is borrowed; no address.
    let n = unsafe {
        libc::syscall(
            libc::SYS_sendto,
            tcp.as_raw_fd() as libc::c_long,
            buf.as_ptr(),
            buf.len(),
            libc::MSG_NOSIGNAL as libc::c_long,
            std::ptr::null::<libc::sockaddr>(),
            0 as libc::c_long,
        )
    };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// `recv(2)` into `buf` from `tcp`, straight to the kernel (see [`send_raw`]).
#[inline]
pub(crate) fn recv_raw(tcp: &TcpStream, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: `buf` is valid for writes of `buf.len()` bytes for the call;
    // the descriptor is `tcp`'s own; no address is asked for.
    let n = unsafe {
        libc::syscall(
            libc::SYS_recvfrom,
            tcp.as_raw_fd() as libc::c_long,
            buf.as_mut_ptr(),
            buf.len(),
            0 as libc::c_long,
            std::ptr::null_mut::<libc::sockaddr>(),
            std::ptr::null_mut::<libc::socklen_t>(),
        )
    };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// A connection: plain TCP or TLS over TCP.
pub(crate) enum Sock {
    Plain(TcpStream),
    Tls(Box<TlsSock>),
}

/// A TLS connection: its socket, rustls's state, and the few bytes that
/// must wait for the next call (none, and nothing allocated, when idle).
pub(crate) struct TlsSock {
    pub tcp: TcpStream,
    /// The server sent close_notify: reads give end of file.
    peer_closed: bool,
    pub conn: UnbufferedClientConnection,
    /// Only while bytes wait (one pointer when none do).
    waiting: Option<Box<Waiting>>,
}

/// The bytes of a TLS connection that wait for its next call.
#[derive(Default)]
struct Waiting {
    /// Received bytes not yet processed: a record's start.
    incoming: Vec<u8>,
    /// Encrypted bytes the socket did not take yet.
    outgoing: Vec<u8>,
    /// Decrypted bytes the caller's buffer had no room for.
    plain: Vec<u8>,
}

/// What one read of a connection gave.
pub(crate) enum ReadOutcome {
    Data(usize),
    WouldBlock,
    Eof,
    Error(io::Error),
}

impl Sock {
    #[inline]
    pub(crate) fn fd(&self) -> RawFd {
        match self {
            Sock::Plain(tcp) => tcp.as_raw_fd(),
            Sock::Tls(t) => t.tcp.as_raw_fd(),
        }
    }

    #[inline]
    pub(crate) fn is_tls(&self) -> bool {
        matches!(self, Sock::Tls(_))
    }

    /// Reads (decrypted) bytes into `buf`: one `read` of a plain socket.
    #[inline]
    pub(crate) fn read(&mut self, buf: &mut [u8]) -> ReadOutcome {
        match self {
            Sock::Plain(tcp) => loop {
                return match recv_raw(tcp, buf) {
                    Ok(0) => ReadOutcome::Eof,
                    Ok(n) => ReadOutcome::Data(n),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => ReadOutcome::WouldBlock,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => ReadOutcome::Error(e),
                };
            },
            Sock::Tls(t) => t.read(buf),
        }
    }
}

/// The largest TLS record's plaintext (RFC 8446, 5.1).
const MAX_PLAINTEXT: usize = 16 * 1024;

/// An OS thread's TLS buffers, shared by all its connections: received
/// records are decrypted in `incoming`, records to send are encrypted
/// into `outgoing` from plaintext gathered in `plain`. `incoming` holds a
/// handshake message rustls joins from several records (at most 64 KiB)
/// and the next record besides.
struct Scratch {
    incoming: Box<[u8]>,
    outgoing: Box<[u8]>,
    plain: Box<[u8]>,
}

const SCRATCH_IN: usize = 96 * 1024;
/// A record's plaintext, its header, tag and content type, and what
/// rustls has queued ahead of it (a key update, an alert).
const SCRATCH_OUT: usize = 2 * MAX_PLAINTEXT + 4096;

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch {
        incoming: vec![0; SCRATCH_IN].into_boxed_slice(),
        outgoing: vec![0; SCRATCH_OUT].into_boxed_slice(),
        plain: vec![0; MAX_PLAINTEXT].into_boxed_slice(),
    });
}

/// What processing the received records came to.
enum Step {
    /// rustls moved on (a record processed, a handshake record encoded or
    /// sent): process again.
    Again,
    /// Application data: this many bytes went to the caller's buffer.
    Data(usize),
    /// Nothing more without more bytes from the server (during the
    /// handshake, or after it: the connection may send).
    NeedBytes,
    /// The handshake is done and nothing is left to process.
    Ready,
    /// Records wait to be sent, but the socket is full.
    Blocked,
    Closed,
    Rejected(rustls::Error),
    Failed(io::Error),
}

/// Frees a buffer that is empty, so an idle connection holds none.
#[inline]
fn release(v: &mut Vec<u8>) {
    if v.is_empty() && v.capacity() > 0 {
        *v = Vec::new();
    }
}

impl TlsSock {
    pub(crate) fn new(tcp: TcpStream, conn: UnbufferedClientConnection) -> TlsSock {
        TlsSock {
            tcp,
            peer_closed: false,
            conn,
            waiting: None,
        }
    }

    /// Whether encrypted bytes wait for the socket.
    #[inline]
    pub(crate) fn wants_write(&self) -> bool {
        self.waiting.as_ref().is_some_and(|w| !w.outgoing.is_empty())
    }

    /// Bytes encrypted but not sent yet.
    fn unsent(&self) -> usize {
        self.waiting.as_ref().map_or(0, |w| w.outgoing.len())
    }

    /// Frees what no longer holds bytes, so an idle connection holds none.
    #[inline]
    fn tidy(&mut self) {
        if let Some(w) = self.waiting.as_deref_mut() {
            if w.incoming.is_empty() && w.outgoing.is_empty() && w.plain.is_empty() {
                self.waiting = None;
            } else {
                release(&mut w.incoming);
                release(&mut w.outgoing);
                release(&mut w.plain);
            }
        }
    }

    /// Processes the received bytes in `sc.incoming[..*have]` once: one
    /// state of rustls handled, its processed bytes discarded. Application
    /// data goes to `out` (what does not fit waits in `plain`); handshake
    /// records are encoded in `sc.outgoing[..*queued]` and sent.
    fn step(
        &mut self,
        sc: &mut Scratch,
        have: &mut usize,
        queued: &mut usize,
        out: &mut [u8],
        wrote: &mut bool,
    ) -> Step {
        let TlsSock {
            tcp,
            conn,
            waiting,
            peer_closed,
        } = self;
        let status = conn.process_tls_records(&mut sc.incoming[..*have]);
        let discard = status.discard;
        let step = match status.state {
            Err(e) => Step::Rejected(e),
            Ok(ConnectionState::ReadTraffic(mut records)) => {
                let mut n = 0;
                while let Some(record) = records.next_record() {
                    match record {
                        Ok(r) => {
                            let fit = r.payload.len().min(out.len() - n);
                            out[n..n + fit].copy_from_slice(&r.payload[..fit]);
                            if fit < r.payload.len() {
                                let w = waiting.get_or_insert_with(Box::default);
                                w.plain.extend_from_slice(&r.payload[fit..]);
                            }
                            n += fit;
                        }
                        Err(e) => return Step::Rejected(e),
                    }
                }
                if n > 0 {
                    Step::Data(n)
                } else {
                    Step::Again
                }
            }
            Ok(ConnectionState::EncodeTlsData(mut e)) => match e.encode(&mut sc.outgoing[*queued..]) {
                Ok(n) => {
                    *queued += n;
                    Step::Again
                }
                Err(e) => Step::Failed(io::Error::other(format!("TLS handshake record: {e}"))),
            },
            Ok(ConnectionState::TransmitTlsData(t)) => {
                let sent = send(tcp, &sc.outgoing[..*queued], waiting, wrote);
                *queued = 0;
                t.done();
                match sent {
                    Ok(true) => Step::Again,
                    Ok(false) => Step::Blocked,
                    Err(e) => Step::Failed(e),
                }
            }
            Ok(ConnectionState::BlockedHandshake) => Step::NeedBytes,
            Ok(ConnectionState::WriteTraffic(_)) => Step::Ready,
            Ok(ConnectionState::PeerClosed | ConnectionState::Closed) => {
                *peer_closed = true;
                Step::Closed
            }
            // Early data is a server's; nothing else is defined.
            Ok(_) => Step::Failed(io::Error::other("unexpected TLS state")),
        };
        sc.incoming.copy_within(discard..*have, 0);
        *have -= discard;
        step
    }

    /// Keeps the `have` unprocessed bytes of the thread's buffer for the
    /// next call (none: nothing kept, nothing allocated).
    fn keep(&mut self, sc: &Scratch, have: usize) {
        if have > 0 {
            let w = self.waiting.get_or_insert_with(Box::default);
            w.incoming.clear();
            w.incoming.extend_from_slice(&sc.incoming[..have]);
        } else if let Some(w) = self.waiting.as_deref_mut() {
            w.incoming.clear();
        }
        self.tidy();
    }

    /// Moves the bytes kept from the last call into the thread's buffer.
    fn restore(&mut self, sc: &mut Scratch) -> usize {
        let Some(w) = self.waiting.as_deref_mut() else { return 0 };
        let have = w.incoming.len();
        sc.incoming[..have].copy_from_slice(&w.incoming);
        w.incoming.clear();
        have
    }

    /// Reads decrypted bytes into `buf`.
    pub(crate) fn read(&mut self, buf: &mut [u8]) -> ReadOutcome {
        if let Some(w) = self.waiting.as_deref_mut().filter(|w| !w.plain.is_empty()) {
            let n = w.plain.len().min(buf.len());
            buf[..n].copy_from_slice(&w.plain[..n]);
            w.plain.drain(..n);
            self.tidy();
            return ReadOutcome::Data(n);
        }
        if self.peer_closed {
            return ReadOutcome::Eof;
        }
        SCRATCH.with_borrow_mut(|sc| {
            let mut have = self.restore(sc);
            let (mut queued, mut got, mut wrote) = (0, 0, false);
            let outcome = loop {
                match self.step(sc, &mut have, &mut queued, &mut buf[got..], &mut wrote) {
                    Step::Again => {}
                    Step::Data(n) => {
                        got += n;
                        // Room for another whole record, or give what came.
                        if buf.len() - got < MAX_PLAINTEXT {
                            break ReadOutcome::Data(got);
                        }
                    }
                    Step::NeedBytes | Step::Ready | Step::Blocked => {
                        if got > 0 {
                            break ReadOutcome::Data(got);
                        }
                        if have == sc.incoming.len() {
                            break ReadOutcome::Error(io::Error::new(
                                io::ErrorKind::InvalidData,
                                "a TLS record larger than the buffer",
                            ));
                        }
                        match recv_raw(&self.tcp, &mut sc.incoming[have..]) {
                            Ok(0) => break ReadOutcome::Eof,
                            Ok(n) => have += n,
                            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break ReadOutcome::WouldBlock,
                            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                            Err(e) => break ReadOutcome::Error(e),
                        }
                    }
                    Step::Closed if got > 0 => break ReadOutcome::Data(got),
                    Step::Closed => break ReadOutcome::Eof,
                    Step::Rejected(e) => break ReadOutcome::Error(io::Error::new(io::ErrorKind::InvalidData, e)),
                    Step::Failed(e) => break ReadOutcome::Error(e),
                }
            };
            self.keep(sc, have);
            outcome
        })
    }

    /// Encrypts the start of `parts` (at most one record's plaintext) and
    /// sends it; returns the plaintext bytes taken. Records the socket
    /// does not take wait in the connection: nothing more is taken until
    /// [`TlsSock::flush`] has sent them.
    pub(crate) fn write(&mut self, parts: &[io::IoSlice<'_>]) -> io::Result<usize> {
        if self.wants_write() {
            return Ok(0);
        }
        let bad = |e: &dyn std::fmt::Display| io::Error::new(io::ErrorKind::InvalidData, e.to_string());
        SCRATCH.with_borrow_mut(|sc| {
            let mut n = 0;
            for p in parts {
                let take = p.len().min(MAX_PLAINTEXT - n);
                sc.plain[n..n + take].copy_from_slice(&p[..take]);
                n += take;
                if n == MAX_PLAINTEXT {
                    break;
                }
            }
            if n == 0 {
                return Ok(0);
            }
            let mut queued = 0;
            // rustls is handed the bytes a record's start left (none, as a
            // rule): what it has joined of a message indexes into them.
            let mut have = self.restore(sc);
            let result = loop {
                let Scratch {
                    incoming,
                    outgoing,
                    plain,
                } = &mut *sc;
                let status = self.conn.process_tls_records(&mut incoming[..have]);
                let discard = status.discard;
                let step = match status.state {
                    Ok(ConnectionState::WriteTraffic(mut w)) => w
                        .encrypt(&plain[..n], &mut outgoing[queued..])
                        .map(|k| (k, true))
                        .map_err(|e| bad(&e)),
                    // Something rustls queued first (a key update's reply).
                    Ok(ConnectionState::EncodeTlsData(mut e)) => e
                        .encode(&mut outgoing[queued..])
                        .map(|k| (k, false))
                        .map_err(|e| bad(&e)),
                    Ok(ConnectionState::TransmitTlsData(mut t)) => {
                        // Sent below, with the request's record after it.
                        let r = match t.may_encrypt_app_data() {
                            Some(mut w) => w
                                .encrypt(&plain[..n], &mut outgoing[queued..])
                                .map(|k| (k, true))
                                .map_err(|e| bad(&e)),
                            None => Ok((0, false)),
                        };
                        t.done();
                        r
                    }
                    Ok(ConnectionState::PeerClosed | ConnectionState::Closed) => Err(io::ErrorKind::BrokenPipe.into()),
                    Ok(_) => Err(bad(&"TLS not ready to send")),
                    Err(e) => Err(io::Error::new(io::ErrorKind::InvalidData, e)),
                };
                incoming.copy_within(discard..have, 0);
                have -= discard;
                match step {
                    Ok((k, done)) => {
                        queued += k;
                        if done {
                            break Ok(());
                        }
                    }
                    Err(e) => break Err(e),
                }
            };
            self.keep(sc, have);
            result?;
            let outgoing = &sc.outgoing;
            let mut wrote = false;
            send(&mut self.tcp, &outgoing[..queued], &mut self.waiting, &mut wrote)?;
            Ok(n)
        })
    }

    /// Sends the records that waited for the socket; `Ok(true)` when all
    /// left.
    pub(crate) fn flush(&mut self) -> io::Result<bool> {
        let Some(w) = self.waiting.as_deref_mut() else {
            return Ok(true);
        };
        while !w.outgoing.is_empty() {
            match send_raw(&self.tcp, &w.outgoing) {
                Ok(n) => {
                    w.outgoing.drain(..n);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        self.tidy();
        Ok(true)
    }
}

/// Writes `bytes` to the socket; what it does not take waits in the
/// connection's `outgoing` (which must be empty: bytes go out in order).
/// `Ok(true)` when all left; `wrote` is set when any did.
fn send(
    tcp: &mut TcpStream,
    mut bytes: &[u8],
    waiting: &mut Option<Box<Waiting>>,
    wrote: &mut bool,
) -> io::Result<bool> {
    while !bytes.is_empty() {
        match send_raw(tcp, bytes) {
            Ok(n) => {
                *wrote = true;
                bytes = &bytes[n..];
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                waiting
                    .get_or_insert_with(Box::default)
                    .outgoing
                    .extend_from_slice(bytes);
                return Ok(false);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

/// A `msghdr` and its scatter list, for an io_uring `SENDMSG`: of an
/// HTTP/1 request (pointing into the plan's request bytes), or of an
/// HTTP/2 connection's queued frames (pointing into its own send buffer).
/// It must not move while a send is in flight: HTTP/1 keeps one per user
/// in a vector never resized, HTTP/2 one boxed per connection slot.
pub(crate) struct SendMsg {
    hdr: libc::msghdr,
    iov: [libc::iovec; 4],
}

// SAFETY: the pointers are to bytes that live as long as the worker (the
// plan's request bytes, or a connection slot's send buffer) and to this
// value's own array; a value moves to its worker thread once, before use.
unsafe impl Send for SendMsg {}

impl SendMsg {
    pub(crate) fn new() -> SendMsg {
        SendMsg {
            // SAFETY: an all-zero msghdr is a valid empty one.
            hdr: unsafe { std::mem::zeroed() },
            iov: [libc::iovec {
                iov_base: std::ptr::null_mut(),
                iov_len: 0,
            }; 4],
        }
    }

    pub(crate) fn set(&mut self, slices: &[io::IoSlice<'_>]) {
        for (k, s) in slices.iter().enumerate() {
            self.iov[k] = libc::iovec {
                iov_base: s.as_ptr() as *mut libc::c_void,
                iov_len: s.len(),
            };
        }
        self.hdr.msg_iov = self.iov.as_mut_ptr();
        self.hdr.msg_iovlen = slices.len() as _;
    }

    pub(crate) fn header(&self) -> *const libc::msghdr {
        &self.hdr
    }
}

/// Where a TLS handshake stands after a [`handshake`] step.
pub(crate) enum Handshake {
    /// Done; the session was resumed or a full handshake made.
    Done { resumed: bool },
    /// The socket took what it could; go on when it is writable.
    WantWrite,
    /// Waiting for the server's bytes.
    WantRead,
    /// The server closed the connection during the handshake.
    Closed,
    /// rustls refused the server's handshake.
    Rejected(rustls::Error),
    /// The socket failed.
    Failed(io::Error),
}

/// Drives a TLS handshake as far as the socket allows; `wrote` is set when
/// bytes left (the connection is then established, and counted opened).
/// Bytes after the handshake's (a session ticket, the server's first
/// data) stay for the first [`TlsSock::read`].
pub(crate) fn handshake(t: &mut TlsSock, wrote: &mut bool) -> Handshake {
    let before = t.unsent();
    match t.flush() {
        Ok(sent) => {
            *wrote |= before > t.unsent();
            if !sent {
                return Handshake::WantWrite;
            }
        }
        Err(e) => return Handshake::Failed(e),
    }
    SCRATCH.with_borrow_mut(|sc| {
        let mut have = t.restore(sc);
        let mut queued = 0;
        // Application data within the handshake's bytes is kept for the
        // first read (`t.plain`): it has no caller's buffer yet.
        let outcome = loop {
            match t.step(sc, &mut have, &mut queued, &mut [], wrote) {
                Step::Again | Step::Data(_) => {}
                Step::Ready => {
                    let resumed = matches!(t.conn.handshake_kind(), Some(rustls::HandshakeKind::Resumed));
                    break Handshake::Done { resumed };
                }
                Step::Blocked => break Handshake::WantWrite,
                Step::NeedBytes => {
                    if have == sc.incoming.len() {
                        break Handshake::Failed(io::Error::new(
                            io::ErrorKind::InvalidData,
                            "a TLS handshake message larger than 64 KiB",
                        ));
                    }
                    match recv_raw(&t.tcp, &mut sc.incoming[have..]) {
                        Ok(0) => break Handshake::Closed,
                        Ok(n) => have += n,
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => break Handshake::WantRead,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(e) => break Handshake::Failed(e),
                    }
                }
                Step::Closed => break Handshake::Closed,
                Step::Rejected(e) => break Handshake::Rejected(e),
                Step::Failed(e) => break Handshake::Failed(e),
            }
        };
        t.keep(sc, have);
        outcome
    })
}

/// Opens a non-blocking TCP connection (connect in progress).
pub(crate) fn connect(
    addr: SocketAddr,
    source: Option<std::net::IpAddr>,
    busy_poll_us: u32,
) -> Result<TcpStream, ErrorKind> {
    use socket2::{Domain, Protocol, Socket, Type};
    let sock = Socket::new(
        Domain::for_address(addr),
        Type::STREAM.nonblocking(),
        Some(Protocol::TCP),
    )
    .map_err(|_| ErrorKind::ConnectRefused)?;
    if let Some(ip) = source {
        // Let connect() pick the port, so each (source, destination) pair
        // has the whole ephemeral range (IP_BIND_ADDRESS_NO_PORT).
        set_bind_address_no_port(&sock);
        // A source address this machine cannot bind is the client's
        // failure, never the server's refusal.
        sock.bind(&SocketAddr::new(ip, 0).into()).map_err(|_| ErrorKind::Bind)?;
    }
    if busy_poll_us > 0 {
        // Best effort, as the epoll side (see reactor.rs).
        let _ = crate::reactor::set_socket_busy_poll(sock.as_raw_fd(), busy_poll_us);
    }
    match sock.connect(&addr.into()) {
        Ok(()) => {}
        Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {}
        Err(e) => return Err(connect_error_kind(&e, false)),
    }
    Ok(TcpStream::from_std(sock.into()))
}

/// `IP_BIND_ADDRESS_NO_PORT`: bind the address now, the port at connect.
fn set_bind_address_no_port(sock: &socket2::Socket) {
    let one: libc::c_int = 1;
    // SAFETY: setsockopt on a socket we own with a pointer to a live c_int.
    unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::IPPROTO_IP,
            libc::IP_BIND_ADDRESS_NO_PORT,
            &one as *const libc::c_int as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
}

/// Maps an error seen while connecting (or on a connection's first write).
pub(crate) fn connect_error_kind(e: &io::Error, tls: bool) -> ErrorKind {
    match e.kind() {
        io::ErrorKind::ConnectionRefused => ErrorKind::ConnectRefused,
        io::ErrorKind::TimedOut => ErrorKind::ConnectTimeout,
        io::ErrorKind::ConnectionReset | io::ErrorKind::BrokenPipe | io::ErrorKind::UnexpectedEof => ErrorKind::Reset,
        io::ErrorKind::InvalidData if tls => ErrorKind::Tls,
        _ => match e.raw_os_error() {
            Some(libc::ENETUNREACH | libc::EHOSTUNREACH) => ErrorKind::ConnectRefused,
            // With IP_BIND_ADDRESS_NO_PORT the local port is picked at
            // connect: EADDRNOTAVAIL there means no free local port (or
            // source address) on the client's side.
            Some(libc::EADDRNOTAVAIL) => ErrorKind::Bind,
            _ => ErrorKind::Reset,
        },
    }
}

/// Maps an error of an established connection's read: TLS's (rustls
/// refused the server's records) or the connection's.
pub(crate) fn read_error_kind(e: &io::Error) -> ErrorKind {
    if e.kind() == io::ErrorKind::InvalidData {
        ErrorKind::Tls
    } else {
        ErrorKind::Reset
    }
}

/// Errors that mean "the server had closed this connection".
pub(crate) fn is_closed_error(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionReset | io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionAborted
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unbindable_source_is_a_bind_error() {
        // Nothing needs to listen: the bind fails before any connect.
        let target: SocketAddr = "127.0.0.1:9".parse().unwrap();
        let away = "192.0.2.1".parse().unwrap(); // TEST-NET-1: on no machine
        assert_eq!(connect(target, Some(away), 0).err(), Some(ErrorKind::Bind));
        let no_port = io::Error::from_raw_os_error(libc::EADDRNOTAVAIL);
        assert_eq!(connect_error_kind(&no_port, false), ErrorKind::Bind);
        let refused = io::Error::from_raw_os_error(libc::ECONNREFUSED);
        assert_eq!(connect_error_kind(&refused, false), ErrorKind::ConnectRefused);
    }
}
