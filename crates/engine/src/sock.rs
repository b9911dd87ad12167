//! The one socket layer of the event loops: a connection is plain TCP or
//! TLS over TCP (rustls driven by hand on the non-blocking socket), opened
//! by [`connect`], read by [`Sock::read`], its handshake stepped by
//! [`handshake`], and its errors mapped to the counted kinds by one set of
//! rules whatever the protocol above it.
//!
//! By hand rather than through tokio-rustls: the loops are not async, and
//! a read or write here must be exactly one system call where the floor
//! makes one (docs/counting.md counts what crossed the socket).

use crate::stats::ErrorKind;
use mio::net::TcpStream;
use rustls::ClientConnection;
use std::io::{self, Read};
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, RawFd};

/// A connection: plain TCP or TLS over TCP.
pub(crate) enum Sock {
    Plain(TcpStream),
    Tls(Box<TlsSock>),
}

pub(crate) struct TlsSock {
    pub tcp: TcpStream,
    pub conn: ClientConnection,
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
                return match tcp.read(buf) {
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

impl TlsSock {
    /// Reads decrypted bytes into `buf`.
    pub(crate) fn read(&mut self, buf: &mut [u8]) -> ReadOutcome {
        loop {
            match self.conn.reader().read(buf) {
                Ok(0) => return ReadOutcome::Eof, // close_notify
                Ok(n) => return ReadOutcome::Data(n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                // TCP closed without close_notify: most servers do that.
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return ReadOutcome::Eof,
                Err(e) => return ReadOutcome::Error(e),
            }
            match self.conn.read_tls(&mut self.tcp) {
                Ok(0) => return ReadOutcome::Eof,
                Ok(_) => {
                    if let Err(e) = self.conn.process_new_packets() {
                        let _ = self.conn.write_tls(&mut self.tcp);
                        return ReadOutcome::Error(io::Error::new(io::ErrorKind::InvalidData, e));
                    }
                    // Post-handshake messages (session tickets) may want a reply.
                    while self.conn.wants_write() {
                        if self.conn.write_tls(&mut self.tcp).is_err() {
                            break;
                        }
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return ReadOutcome::WouldBlock,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return ReadOutcome::Error(e),
            }
        }
    }

    /// Sends buffered TLS records; `Ok(true)` when all left.
    pub(crate) fn flush(&mut self) -> io::Result<bool> {
        while self.conn.wants_write() {
            match self.conn.write_tls(&mut self.tcp) {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }
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
    /// rustls refused the server's handshake (the alert is sent).
    Rejected(rustls::Error),
    /// The socket failed.
    Failed(io::Error),
}

/// Drives a TLS handshake as far as the socket allows; `wrote` is set when
/// bytes left (the connection is then established, and counted opened).
pub(crate) fn handshake(t: &mut TlsSock, wrote: &mut bool) -> Handshake {
    loop {
        while t.conn.wants_write() {
            match t.conn.write_tls(&mut t.tcp) {
                Ok(_) => *wrote = true,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Handshake::WantWrite,
                Err(e) => return Handshake::Failed(e),
            }
        }
        if !t.conn.is_handshaking() {
            let resumed = matches!(t.conn.handshake_kind(), Some(rustls::HandshakeKind::Resumed));
            return Handshake::Done { resumed };
        }
        match t.conn.read_tls(&mut t.tcp) {
            Ok(0) => return Handshake::Closed,
            Ok(_) => {
                if let Err(e) = t.conn.process_new_packets() {
                    // Send the alert rustls queued, best effort.
                    let _ = t.conn.write_tls(&mut t.tcp);
                    return Handshake::Rejected(e);
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Handshake::WantRead,
            Err(e) => return Handshake::Failed(e),
        }
    }
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
