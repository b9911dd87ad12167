//! The readiness source under a worker's event loop, and the experimental
//! switches around it (issue 12, "the keep-alive CPU target"). The worker
//! asks for events through one small interface; which system calls answer
//! is chosen once per process from the environment:
//!
//! | variable | values | default |
//! | --- | --- | --- |
//! | `BENCHLAB_IO` | `mio` (edge-triggered epoll through mio), `epoll-lt` (raw level-triggered epoll, `EPOLLOUT` only while a write waits), `uring` (io_uring: multishot receive into a provided buffer ring, requests sent as `SENDMSG` entries, one `io_uring_enter` a loop turn; `http://` only) | `mio` |
//! | `BENCHLAB_BUSY_POLL` | µs of kernel busy polling: `SO_BUSY_POLL` on each socket and `EPIOCSPARAMS` on the epoll descriptor (0–100000) | 0 |
//!
//! None of them changes what is counted: every backend feeds the same
//! parser through the same worker code. bench/README.md gives the
//! measurements that decided the default (mio). A fourth switch was
//! measured and removed: polling with a zero timeout a few times before a
//! wait that would sleep cut the sleeps but added 1.7 system calls a
//! request and cost 10–30 % more CPU a request, in both scenarios.

use mio::{Events, Interest, Poll, Token};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::OnceLock;
use std::time::Duration;

/// Which readiness source a worker uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Backend {
    /// mio's edge-triggered epoll, interest in reading and writing from
    /// connect to close: no `epoll_ctl` after registration, but every
    /// change of the send buffer (the ACK of each request) is an edge,
    /// and can be a wake-up of its own.
    Mio,
    /// Level-triggered epoll without `EPOLLOUT` on established connections
    /// (as the floor): `EPOLLOUT` is asked for only while a connect or a
    /// write waits, so an ACK never wakes the loop; one `epoll_ctl` when
    /// a connection's first request is written, none per keep-alive request.
    EpollLt,
    /// io_uring: each connection has one multishot receive armed into a
    /// ring of provided buffers, requests go out as `SENDMSG` entries, and
    /// one `io_uring_enter` a loop turn submits them all and waits: no
    /// `read`, `write` or `epoll_wait` per request. Plain HTTP only (rustls
    /// reads and writes its socket itself).
    Uring,
}

/// The process's I/O settings, read once from the environment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct IoConfig {
    pub backend: Backend,
    /// Kernel busy polling in µs (0: off).
    pub busy_poll_us: u32,
}

impl IoConfig {
    pub(crate) const DEFAULT: IoConfig = IoConfig {
        backend: Backend::Mio,
        busy_poll_us: 0,
    };

    /// Parses the variables' values (`None` = unset).
    pub(crate) fn parse(io: Option<&str>, busy_poll: Option<&str>) -> Result<IoConfig, String> {
        let backend = match io.map(str::trim) {
            None | Some("") | Some("mio") => IoConfig::DEFAULT.backend,
            Some("epoll-lt") => Backend::EpollLt,
            Some("uring") => Backend::Uring,
            Some(other) => return Err(format!("BENCHLAB_IO='{other}': expected mio, epoll-lt or uring")),
        };
        let number = |name: &str, v: Option<&str>, max: u32| -> Result<u32, String> {
            match v.map(str::trim) {
                None | Some("") => Ok(0),
                Some(s) => match s.parse::<u32>() {
                    Ok(n) if n <= max => Ok(n),
                    _ => Err(format!("{name}='{s}': expected a whole number from 0 to {max}")),
                },
            }
        };
        Ok(IoConfig {
            backend,
            busy_poll_us: number("BENCHLAB_BUSY_POLL", busy_poll, 100_000)?,
        })
    }

    /// The settings of this process (read once; a bad value is an error
    /// the client reports at start, not a silent default).
    pub(crate) fn get() -> Result<IoConfig, String> {
        static CONFIG: OnceLock<Result<IoConfig, String>> = OnceLock::new();
        CONFIG
            .get_or_init(|| {
                let var = |k: &str| std::env::var(k).ok();
                IoConfig::parse(var("BENCHLAB_IO").as_deref(), var("BENCHLAB_BUSY_POLL").as_deref())
            })
            .clone()
    }
}

/// One readiness event (epoll backends, and the io_uring timer poll).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Event {
    pub token: usize,
    pub readable: bool,
    pub writable: bool,
    /// The peer closed (or reset) the connection, or it failed.
    pub closed: bool,
}

/// What a wait brought: readiness (epoll), or an io_uring completion.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Ev {
    Ready(Event),
    /// A multishot receive's completion: bytes in provided buffer
    /// `buffer` (`res` > 0), end of stream (0) or `-errno`; `more` is false
    /// when the receive is no longer armed.
    Recv {
        token: usize,
        generation: u32,
        res: i32,
        buffer: Option<u16>,
        more: bool,
    },
    /// A `SENDMSG`'s completion: bytes sent or `-errno`.
    Sent {
        token: usize,
        generation: u32,
        res: i32,
    },
}

/// A worker's readiness source.
pub(crate) enum Reactor {
    Mio(Poll),
    Epoll(OwnedFd),
    Uring(Box<Uring>),
}

/// Where a wait's events land.
pub(crate) enum EventBuf {
    Mio(Events),
    Epoll(Vec<libc::epoll_event>, usize),
    /// (user_data, result, flags) of each completion.
    Uring(Vec<(u64, i32, u32)>),
}

impl EventBuf {
    #[cfg(test)]
    fn len(&self) -> usize {
        match self {
            EventBuf::Mio(e) => e.iter().count(),
            EventBuf::Epoll(_, n) => *n,
            EventBuf::Uring(v) => v.len(),
        }
    }

    /// Calls `f` for each event of the last wait.
    #[inline]
    pub(crate) fn each(&self, mut f: impl FnMut(Ev)) {
        match self {
            EventBuf::Mio(events) => {
                for ev in events.iter() {
                    f(Ev::Ready(Event {
                        token: ev.token().0,
                        readable: ev.is_readable(),
                        writable: ev.is_writable(),
                        closed: ev.is_read_closed() || ev.is_error(),
                    }));
                }
            }
            EventBuf::Epoll(events, n) => {
                for ev in &events[..*n] {
                    let bits = ev.events as libc::c_int;
                    let token = ev.u64 as usize;
                    f(Ev::Ready(Event {
                        token,
                        readable: bits & (libc::EPOLLIN | libc::EPOLLPRI) != 0,
                        writable: bits & libc::EPOLLOUT != 0,
                        // As mio reads them: a hang-up, an error, or a read
                        // side closed with data (EOF) to read.
                        closed: bits & (libc::EPOLLHUP | libc::EPOLLERR) != 0
                            || (bits & libc::EPOLLIN != 0 && bits & libc::EPOLLRDHUP != 0),
                    }));
                }
            }
            EventBuf::Uring(v) => {
                for &(data, res, flags) in v {
                    let (kind, token, generation) = unpack(data);
                    match kind {
                        K_POLL => f(Ev::Ready(Event {
                            token,
                            readable: true,
                            writable: false,
                            closed: false,
                        })),
                        K_RECV => f(Ev::Recv {
                            token,
                            generation,
                            res,
                            buffer: io_uring::cqueue::buffer_select(flags),
                            more: io_uring::cqueue::more(flags),
                        }),
                        K_SEND => f(Ev::Sent { token, generation, res }),
                        _ => {} // a cancel's own completion
                    }
                }
            }
        }
    }
}

/// The `EPOLLIN` side of a level-triggered registration.
const LT_READ: u32 = (libc::EPOLLIN | libc::EPOLLRDHUP) as u32;

impl Reactor {
    pub(crate) fn new(cfg: IoConfig, receive_buffer: usize) -> io::Result<Reactor> {
        let r = match cfg.backend {
            Backend::Mio => Reactor::Mio(Poll::new()?),
            Backend::EpollLt => {
                // SAFETY: epoll_create1 returns a new descriptor or -1.
                let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
                if fd < 0 {
                    return Err(io::Error::last_os_error());
                }
                // SAFETY: fd is new and ours alone.
                Reactor::Epoll(unsafe { OwnedFd::from_raw_fd(fd) })
            }
            Backend::Uring => Reactor::Uring(Box::new(Uring::new(receive_buffer)?)),
        };
        if cfg.busy_poll_us > 0 {
            if let Some(fd) = r.epoll_fd() {
                // Best effort: refused (old kernel, no privilege) means the
                // variant measures as the plain one (bench/README.md
                // records what this kernel allowed).
                let _ = set_epoll_busy_poll(fd, cfg.busy_poll_us);
            }
        }
        Ok(r)
    }

    fn epoll_fd(&self) -> Option<RawFd> {
        match self {
            Reactor::Mio(p) => Some(p.as_raw_fd()),
            Reactor::Epoll(fd) => Some(fd.as_raw_fd()),
            Reactor::Uring(_) => None,
        }
    }

    /// Called on the worker's own thread before its first wait: an
    /// io_uring made for a single issuer belongs to the thread that
    /// enables it.
    pub(crate) fn start(&mut self) -> io::Result<()> {
        match self {
            Reactor::Uring(u) => u.start(),
            _ => Ok(()),
        }
    }

    /// The io_uring backend, when that is this one.
    #[inline]
    pub(crate) fn uring(&mut self) -> Option<&mut Uring> {
        match self {
            Reactor::Uring(u) => Some(u),
            _ => None,
        }
    }

    pub(crate) fn events(&self, capacity: usize) -> EventBuf {
        match self {
            Reactor::Mio(_) => EventBuf::Mio(Events::with_capacity(capacity)),
            Reactor::Epoll(_) => EventBuf::Epoll(vec![libc::epoll_event { events: 0, u64: 0 }; capacity], 0),
            Reactor::Uring(_) => EventBuf::Uring(Vec::with_capacity(4 * capacity)),
        }
    }

    /// Registers `fd` under `token`, for reading, and for writing too when
    /// `write` (a connect in progress). mio registers both, always. (The
    /// io_uring backend arms its receive and send per connection instead.)
    pub(crate) fn register(&self, fd: RawFd, token: usize, write: bool) -> io::Result<()> {
        match self {
            Reactor::Mio(p) => p.registry().register(
                &mut mio::unix::SourceFd(&fd),
                Token(token),
                Interest::READABLE | Interest::WRITABLE,
            ),
            Reactor::Epoll(ep) => epoll_ctl(ep.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, token, write),
            Reactor::Uring(_) => Ok(()),
        }
    }

    /// Registers a descriptor that is only ever read (a timer).
    pub(crate) fn register_readable(&mut self, fd: RawFd, token: usize) -> io::Result<()> {
        match self {
            Reactor::Mio(p) => p
                .registry()
                .register(&mut mio::unix::SourceFd(&fd), Token(token), Interest::READABLE),
            Reactor::Epoll(ep) => epoll_ctl(ep.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, token, false),
            Reactor::Uring(u) => {
                let e = io_uring::opcode::PollAdd::new(io_uring::types::Fd(fd), libc::POLLIN as u32)
                    .multi(true)
                    .build()
                    .user_data(pack(K_POLL, token, 0));
                u.push(&e)
            }
        }
    }

    /// Whether this backend needs [`Reactor::want_write`] calls (a
    /// level-triggered `EPOLLOUT` left on would wake the loop at once,
    /// every time).
    #[inline]
    pub(crate) fn tracks_writes(&self) -> bool {
        matches!(self, Reactor::Epoll(_))
    }

    /// Asks for (or stops asking for) writability of `fd`.
    pub(crate) fn want_write(&self, fd: RawFd, token: usize, write: bool) -> io::Result<()> {
        match self {
            Reactor::Epoll(ep) => epoll_ctl(ep.as_raw_fd(), libc::EPOLL_CTL_MOD, fd, token, write),
            Reactor::Mio(_) | Reactor::Uring(_) => Ok(()),
        }
    }

    /// Waits for events up to `timeout`.
    pub(crate) fn wait(&mut self, events: &mut EventBuf, timeout: Duration) -> io::Result<()> {
        match (self, events) {
            (Reactor::Mio(p), EventBuf::Mio(ev)) => p.poll(ev, Some(timeout)),
            (Reactor::Epoll(ep), EventBuf::Epoll(buf, n)) => {
                *n = 0;
                // Rounded up, as mio does, so a short timeout is not a spin.
                let ms = timeout.as_nanos().div_ceil(1_000_000).min(i32::MAX as u128) as libc::c_int;
                // SAFETY: buf is a live array of buf.len() events.
                let got = unsafe { libc::epoll_wait(ep.as_raw_fd(), buf.as_mut_ptr(), buf.len() as libc::c_int, ms) };
                if got < 0 {
                    return Err(io::Error::last_os_error());
                }
                *n = got as usize;
                Ok(())
            }
            (Reactor::Uring(u), EventBuf::Uring(v)) => u.wait(v, timeout),
            _ => Err(io::Error::other("event buffer of another backend")),
        }
    }
}

/// `user_data` of an io_uring entry: what it is, for which connection
/// slot, and which of that slot's connections (a completion of a closed
/// connection's receive must not be taken for its successor's).
const K_POLL: u64 = 1;
const K_RECV: u64 = 2;
const K_SEND: u64 = 3;
const K_CANCEL: u64 = 4;

#[inline]
fn pack(kind: u64, token: usize, generation: u32) -> u64 {
    (kind << 56) | (u64::from(generation & 0xFF_FFFF) << 32) | (token as u64 & 0xFFFF_FFFF)
}

#[inline]
fn unpack(data: u64) -> (u64, usize, u32) {
    let token = (data & 0xFFFF_FFFF) as u32;
    // The open loop's timer token is usize::MAX; its low half survives.
    let token = if token == u32::MAX { usize::MAX } else { token as usize };
    (data >> 56, token, ((data >> 32) & 0xFF_FFFF) as u32)
}

/// Generations wrap at 24 bits (what `user_data` holds).
#[inline]
pub(crate) fn next_generation(g: u32) -> u32 {
    (g + 1) & 0xFF_FFFF
}

/// The provided buffers' group id (one group per ring).
const BGID: u16 = 0;

/// An io_uring with a ring of provided receive buffers.
pub(crate) struct Uring {
    ring: Option<io_uring::IoUring>,
    /// The provided-buffer ring (`io_uring_buf` entries), page-aligned.
    bufs_ring: *mut io_uring::types::BufRingEntry,
    bufs_ring_len: usize,
    /// The buffers themselves, `count` of `size` bytes.
    slab: *mut u8,
    slab_len: usize,
    count: u16,
    size: u32,
    /// Our producer index into the buffer ring.
    tail: u16,
}

// SAFETY: the raw pointers are to mappings this value owns alone; a Uring
// moves to its worker thread once, before use, and is never shared.
unsafe impl Send for Uring {}

impl Uring {
    fn new(receive_buffer: usize) -> io::Result<Uring> {
        // 256 buffers: more than the completions of one turn for the
        // connections one OS thread usually holds; running out only
        // stops a receive (ENOBUFS), which is re-armed. Each is the plan's
        // receive buffer, at most 16 KiB (4 MiB a worker): the parser takes
        // a response in pieces of any size.
        let count: u16 = 256;
        let size = receive_buffer.min(16 * 1024) as u32;
        let ring = io_uring::IoUring::builder()
            .setup_single_issuer()
            .setup_defer_taskrun()
            .setup_r_disabled()
            .setup_cqsize(8192)
            .build(1024)?;
        let bufs_ring_len = count as usize * std::mem::size_of::<io_uring::types::BufRingEntry>();
        let bufs_ring = map(bufs_ring_len)? as *mut io_uring::types::BufRingEntry;
        let slab_len = count as usize * size as usize;
        let slab = match map(slab_len) {
            Ok(p) => p,
            Err(e) => {
                // SAFETY: the mapping made just above.
                unsafe { libc::munmap(bufs_ring as *mut libc::c_void, bufs_ring_len) };
                return Err(e);
            }
        };
        Ok(Uring {
            ring: Some(ring),
            bufs_ring,
            bufs_ring_len,
            slab,
            slab_len,
            count,
            size,
            tail: 0,
        })
    }

    fn ring(&self) -> &io_uring::IoUring {
        self.ring.as_ref().expect("the ring lives as long as the Uring")
    }

    fn start(&mut self) -> io::Result<()> {
        self.ring().submitter().register_enable_rings()?;
        // SAFETY: bufs_ring is a page-aligned mapping of `count` entries
        // that outlives the ring (see Drop).
        unsafe {
            self.ring()
                .submitter()
                .register_buf_ring_with_flags(self.bufs_ring as u64, self.count, BGID, 0)?;
        }
        for bid in 0..self.count {
            self.put(bid);
        }
        self.publish();
        Ok(())
    }

    /// Puts buffer `bid` at the ring's tail (published by [`publish`]).
    #[inline]
    fn put(&mut self, bid: u16) {
        let mask = self.count - 1;
        // SAFETY: the index is masked into the ring's `count` entries; the
        // buffer address is inside the slab.
        unsafe {
            let e = &mut *self.bufs_ring.add((self.tail & mask) as usize);
            e.set_addr(self.slab.add(bid as usize * self.size as usize) as u64);
            e.set_len(self.size);
            e.set_bid(bid);
        }
        self.tail = self.tail.wrapping_add(1);
    }

    #[inline]
    fn publish(&mut self) {
        // SAFETY: the tail field overlays entry 0's reserved field; the
        // kernel reads it, so it is written with release ordering.
        unsafe {
            let tail = io_uring::types::BufRingEntry::tail(self.bufs_ring) as *const std::sync::atomic::AtomicU16;
            (*tail).store(self.tail, std::sync::atomic::Ordering::Release);
        }
    }

    /// The `len` bytes the kernel put in buffer `bid`. Valid until
    /// [`Uring::recycle`] gives the buffer back.
    #[inline]
    pub(crate) fn data(&self, bid: u16, len: usize) -> (*const u8, usize) {
        let len = len.min(self.size as usize);
        // In range: the kernel gives back only ids we put (< count); the
        // slab lives until the Uring drops, and the kernel writes this
        // buffer again only after recycle.
        let at = (bid as usize % self.count as usize) * self.size as usize;
        (self.slab.wrapping_add(at), len)
    }

    /// Gives buffer `bid` back to the kernel.
    #[inline]
    pub(crate) fn recycle(&mut self, bid: u16) {
        self.put(bid);
        self.publish();
    }

    fn push(&mut self, e: &io_uring::squeue::Entry) -> io::Result<()> {
        let ring = self.ring.as_mut().expect("the ring lives as long as the Uring");
        loop {
            // SAFETY: every pointer an entry carries (a msghdr and its
            // iovecs in the connection's slot, request bytes in the plan)
            // outlives its completion: slots are never moved or freed
            // while the worker runs, and a closed connection's entries
            // are cancelled before the ring goes.
            if unsafe { ring.submission().push(e) }.is_ok() {
                return Ok(());
            }
            ring.submit()?;
        }
    }

    /// Arms connection `token`'s multishot receive.
    pub(crate) fn recv(&mut self, fd: RawFd, token: usize, generation: u32) -> io::Result<()> {
        let e = io_uring::opcode::RecvMulti::new(io_uring::types::Fd(fd), BGID)
            .build()
            .user_data(pack(K_RECV, token, generation));
        self.push(&e)
    }

    /// Queues a send of `msg` (submitted at the next wait).
    pub(crate) fn send(
        &mut self,
        fd: RawFd,
        token: usize,
        generation: u32,
        msg: *const libc::msghdr,
    ) -> io::Result<()> {
        let e = io_uring::opcode::SendMsg::new(io_uring::types::Fd(fd), msg)
            .flags(libc::MSG_NOSIGNAL as u32)
            .build()
            .user_data(pack(K_SEND, token, generation));
        self.push(&e)
    }

    /// Cancels connection `token`'s armed receive before its socket is
    /// closed: the receive holds the socket open (no FIN) until it ends.
    pub(crate) fn cancel_recv(&mut self, token: usize, generation: u32) -> io::Result<()> {
        let e = io_uring::opcode::AsyncCancel::new(pack(K_RECV, token, generation))
            .build()
            .user_data(pack(K_CANCEL, token, generation));
        self.push(&e)
    }

    /// Submits the entries queued so far, if any (they are read now, so
    /// the descriptors and headers they name may change afterwards).
    pub(crate) fn submit_queued(&mut self) {
        let ring = self.ring.as_mut().expect("the ring lives as long as the Uring");
        if !ring.submission().is_empty() {
            let _ = ring.submit();
        }
    }

    /// Cancels everything in flight and waits until it is (the end of a
    /// run: every socket is then closed when its slot lets it go).
    pub(crate) fn cancel_all(&mut self) {
        let ring = self.ring();
        let _ = ring.submit();
        let _ = ring
            .submitter()
            .register_sync_cancel(None, io_uring::types::CancelBuilder::any());
    }

    fn wait(&mut self, out: &mut Vec<(u64, i32, u32)>, timeout: Duration) -> io::Result<()> {
        out.clear();
        let ring = self.ring.as_mut().expect("the ring lives as long as the Uring");
        let ts = io_uring::types::Timespec::from(timeout);
        let args = io_uring::types::SubmitArgs::new().timespec(&ts);
        match ring.submitter().submit_with_args(1, &args) {
            Ok(_) => {}
            Err(e) if matches!(e.raw_os_error(), Some(libc::ETIME | libc::EINTR | libc::EBUSY)) => {}
            Err(e) => return Err(e),
        }
        for cqe in ring.completion() {
            out.push((cqe.user_data(), cqe.result(), cqe.flags()));
        }
        Ok(())
    }
}

impl Drop for Uring {
    fn drop(&mut self) {
        // The ring first: the kernel stops using the buffers with it.
        drop(self.ring.take());
        // SAFETY: the two mappings made in `new`, unused from here on.
        unsafe {
            libc::munmap(self.bufs_ring as *mut libc::c_void, self.bufs_ring_len);
            libc::munmap(self.slab as *mut libc::c_void, self.slab_len);
        }
    }
}

/// An anonymous private read-write mapping (page-aligned, zeroed).
fn map(len: usize) -> io::Result<*mut u8> {
    // SAFETY: a fresh anonymous mapping; checked for MAP_FAILED.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    Ok(p as *mut u8)
}

fn epoll_ctl(ep: RawFd, op: libc::c_int, fd: RawFd, token: usize, write: bool) -> io::Result<()> {
    let mut ev = libc::epoll_event {
        events: LT_READ | if write { libc::EPOLLOUT as u32 } else { 0 },
        u64: token as u64,
    };
    // SAFETY: ev is a live epoll_event; the kernel checks the descriptors.
    if unsafe { libc::epoll_ctl(ep, op, fd, &mut ev) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `struct epoll_params` of linux/eventpoll.h (kernel 6.9 and later).
#[repr(C)]
struct EpollParams {
    busy_poll_usecs: u32,
    busy_poll_budget: u16,
    prefer_busy_poll: u8,
    pad: u8,
}

/// `EPIOCSPARAMS` = `_IOW(0x8A, 0x01, struct epoll_params)`.
const EPIOCSPARAMS: libc::c_ulong =
    (1 << 30) | ((std::mem::size_of::<EpollParams>() as libc::c_ulong) << 16) | (0x8A << 8) | 1;

/// Turns on busy polling of an epoll instance (`EPIOCSPARAMS`).
fn set_epoll_busy_poll(ep: RawFd, usecs: u32) -> io::Result<()> {
    let params = EpollParams {
        busy_poll_usecs: usecs,
        // The kernel's default budget (NAPI_POLL_WEIGHT); more needs
        // CAP_NET_ADMIN.
        busy_poll_budget: 8,
        prefer_busy_poll: 0,
        pad: 0,
    };
    // SAFETY: the ioctl reads a live struct of the size its number encodes.
    if unsafe { libc::ioctl(ep, EPIOCSPARAMS as _, &params as *const EpollParams) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `SO_BUSY_POLL` on a socket (raising it above `net.core.busy_read`
/// needs CAP_NET_ADMIN).
pub(crate) fn set_socket_busy_poll(fd: RawFd, usecs: u32) -> io::Result<()> {
    let v = usecs as libc::c_int;
    // SAFETY: setsockopt with a pointer to a live c_int.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_BUSY_POLL,
            &v as *const libc::c_int as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_parse_with_clear_errors() {
        assert_eq!(IoConfig::parse(None, None), Ok(IoConfig::DEFAULT));
        let c = IoConfig::parse(Some("epoll-lt"), Some("50")).unwrap();
        assert_eq!((c.backend, c.busy_poll_us), (Backend::EpollLt, 50));
        assert_eq!(IoConfig::parse(Some(" uring "), None).unwrap().backend, Backend::Uring);
        let e = IoConfig::parse(Some("kqueue"), None).unwrap_err();
        assert_eq!(e, "BENCHLAB_IO='kqueue': expected mio, epoll-lt or uring");
        let e = IoConfig::parse(None, Some("-1")).unwrap_err();
        assert!(e.starts_with("BENCHLAB_BUSY_POLL='-1'"), "{e}");
        assert!(IoConfig::parse(None, Some("1000000")).is_err());
    }

    #[test]
    fn epiocsparams_has_the_kernels_number() {
        // From linux/eventpoll.h on x86-64 and arm64.
        assert_eq!(EPIOCSPARAMS, 0x4008_8a01);
    }

    /// Level-triggered: writability is reported only while asked for.
    #[test]
    fn level_triggered_write_interest_follows_want_write() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (_s, _) = l.accept().unwrap();
        let cfg = IoConfig {
            backend: Backend::EpollLt,
            ..IoConfig::DEFAULT
        };
        let mut r = Reactor::new(cfg, 65536).unwrap();
        let mut ev = r.events(8);
        let fd = c.as_raw_fd();
        r.register(fd, 7, true).unwrap();
        for _ in 0..2 {
            // Level-triggered: reported again while it holds.
            r.wait(&mut ev, Duration::from_millis(100)).unwrap();
            let mut seen = vec![];
            ev.each(|e| {
                if let Ev::Ready(e) = e {
                    seen.push((e.token, e.writable, e.readable));
                }
            });
            assert_eq!(seen, [(7, true, false)]);
        }
        r.want_write(fd, 7, false).unwrap();
        r.wait(&mut ev, Duration::ZERO).unwrap();
        assert_eq!(ev.len(), 0);
    }
}
