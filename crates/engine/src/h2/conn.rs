//! One HTTP/2 connection's protocol state, without I/O: bytes received go
//! in ([`Conn::receive`]), frames to send come out ([`Conn::out`]), and
//! streams that ended are reported with their exact byte counts
//! (docs/counting.md, "HTTP/2"). The event loop's HTTP/2 protocol (`h2/protocol.rs`) and the
//! preflight probe drive the same code.

use super::frame::{self, Frame, FrameError};
use super::hpack;
use crate::stats::ErrorKind;
use std::sync::Arc;
use xxhash_rust::xxh3::Xxh3;

/// A response head larger than this is `header_too_large`, as HTTP/1's.
pub const MAX_HEAD: usize = 64 * 1024;
/// A header block (HEADERS + CONTINUATION) is gathered up to this many
/// bytes, HTTP/1's 64 KiB head rule: HPACK never makes a real head longer
/// than its decoded list, so a longer block is a head over 64 KiB. Past
/// it the block cannot be decoded, and without it the HPACK table is lost:
/// the connection ends, its streams `header_too_large`.
const MAX_BLOCK: usize = MAX_HEAD;
/// CONTINUATION frames one header block may take (nghttp2 allows 8): a
/// server sending endless empty ones grows nothing but must still end,
/// as `header_too_large`, with GOAWAY(ENHANCE_YOUR_CALM).
pub const MAX_CONTINUATIONS: u32 = 16;
/// Control frames (SETTINGS and PING acknowledgements, RST_STREAM,
/// WINDOW_UPDATE) queued since the server last took a byte of benchlab's:
/// past this the server floods without reading (nghttp2's limit of queued
/// acknowledgements is 1,000 too), and the connection ends with
/// GOAWAY(ENHANCE_YOUR_CALM), its streams `framing`.
pub const MAX_CONTROL_QUEUED: u32 = 1000;
/// Bytes queued and not yet written past which a control frame is a flood
/// too (a server that reads a byte now and then to reset the count).
/// benchlab's own requests stay far below it: no stream is opened while
/// [`MAX_UNSENT_TO_OPEN`] bytes wait.
const MAX_UNSENT: usize = 1024 * 1024;
/// No new stream is opened while this many bytes wait to be written: the
/// server is not reading, and requests would only pile up.
pub const MAX_UNSENT_TO_OPEN: usize = 64 * 1024;
/// Written bytes at the front of `out` are dropped (moved, not
/// reallocated) once this many pile up while the rest waits.
const COMPACT_AT: usize = 64 * 1024;

/// The server's SETTINGS (RFC 9113 §6.5.2), as last received.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PeerSettings {
    /// `None`: the server set no limit.
    pub max_concurrent_streams: Option<u32>,
    pub initial_window_size: u32,
    pub max_frame_size: u32,
    pub header_table_size: u32,
    pub max_header_list_size: Option<u32>,
}

impl Default for PeerSettings {
    fn default() -> Self {
        PeerSettings {
            max_concurrent_streams: None,
            initial_window_size: 65_535,
            max_frame_size: frame::DEFAULT_MAX_FRAME,
            header_table_size: 4096,
            max_header_list_size: None,
        }
    }
}

/// How a stream ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The stream ended cleanly; the caller checks status and body.
    Done {
        status: u16,
        body: u64,
        xxh3: Option<u64>,
    },
    /// The server reset it (RST_STREAM) with this code.
    Reset(u32),
    /// The server's GOAWAY said it will not process it: it may be sent
    /// again on a new connection.
    Refused,
    Failed(ErrorKind),
}

/// A stream that ended: whose it was, its frame bytes, how it ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ended {
    pub user: u32,
    pub bytes: u64,
    /// Frame bytes sent for the stream (HEADERS, CONTINUATION, DATA).
    pub sent: u64,
    pub outcome: Outcome,
}

/// The connection cannot go on; every open stream fails with `kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnFail {
    pub kind: ErrorKind,
    pub why: &'static str,
}

struct Stream {
    id: u32,
    user: u32,
    status: Option<u16>,
    /// The final (non-1xx) head arrived.
    head_done: bool,
    /// Frame bytes received for the stream (HEADERS, CONTINUATION, DATA,
    /// with their 9-byte headers and padding).
    bytes: u64,
    body: u64,
    content_length: Option<u64>,
    head_size: usize,
    /// Receive window left, and bytes consumed since the last
    /// WINDOW_UPDATE.
    window: i64,
    consumed: u32,
    /// The server's window for the stream: what its request body may
    /// still send (RFC 9113 §6.9).
    send_window: i64,
    hasher: Option<Box<Xxh3>>,
    /// The request body and how much of it is queued as DATA; `None`
    /// once all of it is (or without one).
    upload: Option<(Arc<[u8]>, usize)>,
    /// Frame bytes queued for the stream.
    sent: u64,
}

/// One HTTP/2 connection.
pub struct Conn {
    /// Bytes to send, in order (preface, SETTINGS, HEADERS, updates...);
    /// the first `written` of them are gone (see [`Conn::unsent`]).
    pub out: Vec<u8>,
    written: usize,
    /// Control frames queued since the server last took a byte (see
    /// [`MAX_CONTROL_QUEUED`]).
    control_queued: u32,
    /// The server's connection-level window (RFC 9113 §6.9.1).
    send_window: i64,
    /// A partial frame from the last read: never longer than one frame
    /// (`frame::parse` refuses a length over 16 KiB) plus one read.
    inbuf: Vec<u8>,
    decoder: hpack::Decoder,
    pub peer: PeerSettings,
    /// The server's first SETTINGS arrived (it must come first).
    pub got_settings: bool,
    /// Our window per stream, and the connection's.
    window: u32,
    conn_window: i64,
    conn_consumed: u32,
    next_id: u32,
    streams: Vec<Stream>,
    /// The server's GOAWAY, with its last stream id.
    pub goaway: Option<u32>,
    /// A header block in progress: its stream, END_STREAM flag, bytes.
    block: Vec<u8>,
    block_stream: u32,
    block_end_stream: bool,
    /// CONTINUATION frames of the block so far.
    block_frames: u32,
    /// Streams opened on this connection.
    pub opened: u32,
    /// Streams whose request body is not all queued yet (at most; ended
    /// streams are found out at the next [`Conn::pump`]).
    uploads: u32,
    /// Connection-level frame bytes received (SETTINGS, PING,
    /// WINDOW_UPDATE, GOAWAY, PRIORITY, unknown), since the caller last
    /// took them.
    pub conn_bytes: u64,
}

impl Conn {
    /// A new connection with its preface, SETTINGS and (for a window over
    /// the default) a connection WINDOW_UPDATE queued.
    pub fn new(window: u32) -> Conn {
        let window = window.clamp(1, frame::MAX_WINDOW);
        let mut out = Vec::with_capacity(256);
        out.extend_from_slice(frame::PREFACE);
        frame::put_settings(
            &mut out,
            &[
                (frame::SETTINGS_ENABLE_PUSH, 0),
                (frame::SETTINGS_INITIAL_WINDOW_SIZE, window),
                (frame::SETTINGS_MAX_HEADER_LIST_SIZE, MAX_HEAD as u32),
            ],
        );
        let mut conn_window = 65_535i64;
        if window as i64 > conn_window {
            frame::put_window_update(&mut out, 0, window - 65_535);
            conn_window = window as i64;
        }
        Conn {
            out,
            written: 0,
            control_queued: 0,
            send_window: 65_535,
            inbuf: Vec::new(),
            decoder: hpack::Decoder::default(),
            peer: PeerSettings::default(),
            got_settings: false,
            window,
            conn_window,
            conn_consumed: 0,
            next_id: 1,
            streams: Vec::new(),
            goaway: None,
            block: Vec::new(),
            block_stream: 0,
            block_end_stream: false,
            block_frames: 0,
            opened: 0,
            uploads: 0,
            conn_bytes: 0,
        }
    }

    /// Streams open now.
    pub fn active(&self) -> usize {
        self.streams.len()
    }

    /// What is queued and not yet written.
    pub fn unsent(&self) -> &[u8] {
        &self.out[self.written..]
    }

    /// `n` bytes of [`Conn::unsent`] were written. Any byte taken means the
    /// server reads, so the count of queued control frames starts over.
    pub fn wrote(&mut self, n: usize) {
        self.written += n;
        if n > 0 {
            self.control_queued = 0;
        }
        if self.written >= self.out.len() {
            self.out.clear();
            self.written = 0;
        } else if self.written >= COMPACT_AT {
            self.out.drain(..self.written);
            self.written = 0;
        }
    }

    /// Control frames queued since the server last took a byte.
    pub fn control_queued(&self) -> u32 {
        self.control_queued
    }

    /// Counts a control frame about to be queued; a connection error when
    /// the server floods benchlab with frames to answer and reads none of
    /// the answers (RFC 9113 §10.5: ENHANCE_YOUR_CALM).
    fn control(&mut self) -> Result<(), (u32, ConnFail)> {
        if self.control_queued >= MAX_CONTROL_QUEUED || self.out.len() - self.written >= MAX_UNSENT {
            return Err((
                frame::ENHANCE_YOUR_CALM,
                ConnFail {
                    kind: ErrorKind::Framing,
                    why: "a flood of frames to answer (SETTINGS, PING...) while the server read none of the answers",
                },
            ));
        }
        self.control_queued += 1;
        Ok(())
    }

    /// Whether another stream may be opened now: the server's
    /// SETTINGS_MAX_CONCURRENT_STREAMS (and `limit`, benchlab's own) not
    /// reached, no GOAWAY, stream ids left.
    pub fn can_open(&self, limit: u32) -> bool {
        let server = self.peer.max_concurrent_streams.unwrap_or(u32::MAX);
        self.goaway.is_none()
            && self.next_id < frame::MAX_WINDOW
            && (self.streams.len() as u32) < server.min(limit)
            && self.out.len() - self.written < MAX_UNSENT_TO_OPEN
    }

    /// Opens a stream for `user` with a request `block`; returns its id.
    pub fn open(&mut self, user: u32, block: &[u8], checksum: bool) -> u32 {
        self.open_with(user, block, checksum, None)
    }

    /// [`Conn::open`] with a request body, sent as DATA frames as the
    /// server's windows allow (more on each WINDOW_UPDATE).
    pub fn open_with(&mut self, user: u32, block: &[u8], checksum: bool, body: Option<&Arc<[u8]>>) -> u32 {
        let id = self.next_id;
        self.next_id += 2;
        self.opened += 1;
        let body = body.filter(|b| !b.is_empty());
        frame::put_request(&mut self.out, id, block, self.peer.max_frame_size, body.is_none());
        self.streams.push(Stream {
            id,
            user,
            status: None,
            head_done: false,
            bytes: 0,
            body: 0,
            content_length: None,
            head_size: 0,
            window: self.window as i64,
            consumed: 0,
            send_window: self.peer.initial_window_size as i64,
            hasher: checksum.then(|| Box::new(Xxh3::new())),
            upload: body.map(|b| (Arc::clone(b), 0)),
            sent: frame::request_len(block.len(), self.peer.max_frame_size),
        });
        if body.is_some() {
            self.uploads += 1;
            self.pump();
        }
        id
    }

    /// Queues DATA of the streams' request bodies as far as the server's
    /// connection and stream windows (and its frame size) allow; the last
    /// frame of a body ends the stream.
    fn pump(&mut self) {
        if self.uploads == 0 {
            return;
        }
        let max = self.peer.max_frame_size.max(1) as usize;
        let mut left = 0;
        for s in self.streams.iter_mut() {
            let Some((body, at)) = s.upload.as_mut() else { continue };
            while *at < body.len() {
                let room = self.send_window.min(s.send_window);
                if room <= 0 {
                    break;
                }
                let n = (body.len() - *at).min(room as usize).min(max);
                let last = *at + n == body.len();
                let flags = if last { frame::FLAG_END_STREAM } else { 0 };
                frame::put_header(&mut self.out, n, frame::DATA, flags, s.id);
                self.out.extend_from_slice(&body[*at..*at + n]);
                *at += n;
                self.send_window -= n as i64;
                s.send_window -= n as i64;
                s.sent += 9 + n as u64;
            }
            if s.upload.as_ref().is_some_and(|(b, at)| *at == b.len()) {
                s.upload = None;
            } else if s.upload.is_some() {
                left += 1;
            }
        }
        self.uploads = left;
    }

    /// Cancels `user`'s stream (a timeout): RST_STREAM(CANCEL) is queued
    /// and its bytes so far returned: received, and sent.
    pub fn cancel(&mut self, user: u32) -> Option<(u64, u64)> {
        let at = self.streams.iter().position(|s| s.user == user)?;
        let s = self.streams.swap_remove(at);
        // Counted, not refused: a timeout is benchlab's doing; the next
        // frame to answer finds the count.
        self.control_queued = self.control_queued.saturating_add(1);
        frame::put_rst_stream(&mut self.out, s.id, 0x8);
        Some((s.bytes, s.sent))
    }

    /// Ends every open stream with `outcome` (the connection failed or
    /// closed), appending them to `ended`.
    pub fn end_all(&mut self, ended: &mut Vec<Ended>, kind: ErrorKind) {
        for s in self.streams.drain(..) {
            // A stream that had its head and then lost the connection lost
            // its body: short_body, as HTTP/1's.
            let kind = if kind == ErrorKind::Reset && s.head_done {
                ErrorKind::ShortBody
            } else {
                kind
            };
            ended.push(Ended {
                user: s.user,
                sent: s.sent,
                bytes: s.bytes,
                outcome: Outcome::Failed(kind),
            });
        }
    }

    /// Takes in received bytes; streams that ended go to `ended`. An error
    /// means the connection is broken (a GOAWAY is queued); its streams are
    /// still open, for the caller to end with [`Conn::end_all`].
    pub fn receive(&mut self, data: &[u8], ended: &mut Vec<Ended>) -> Result<(), ConnFail> {
        let mut buf = std::mem::take(&mut self.inbuf);
        let result = if buf.is_empty() {
            let r = self.frames(data, ended);
            if let Ok(used) = r {
                buf.extend_from_slice(&data[used..]);
            }
            r
        } else {
            buf.extend_from_slice(data);
            let r = self.frames(&buf, ended);
            if let Ok(used) = r {
                buf.drain(..used);
            }
            r
        };
        self.inbuf = buf;
        // WINDOW_UPDATE or SETTINGS may have made room for request bodies.
        self.pump();
        match result {
            Ok(_) => Ok(()),
            Err(fail) => {
                // The server opens no streams (push is off): last id 0.
                frame::put_goaway(&mut self.out, 0, fail.0);
                Err(fail.1)
            }
        }
    }

    /// Handles every whole frame in `buf`; returns the bytes used.
    fn frames(&mut self, buf: &[u8], ended: &mut Vec<Ended>) -> Result<usize, (u32, ConnFail)> {
        let mut at = 0;
        let framing = |e: FrameError| {
            (
                e.code,
                ConnFail {
                    kind: ErrorKind::Framing,
                    why: e.why,
                },
            )
        };
        while let Some((f, n)) = frame::parse(&buf[at..], frame::DEFAULT_MAX_FRAME).map_err(framing)? {
            at += n;
            self.frame(f, n as u64, ended)?;
        }
        Ok(at)
    }

    fn find(&mut self, id: u32) -> Option<usize> {
        self.streams.iter().position(|s| s.id == id)
    }

    fn frame(&mut self, f: Frame<'_>, n: u64, ended: &mut Vec<Ended>) -> Result<(), (u32, ConnFail)> {
        let protocol = |why| {
            (
                frame::PROTOCOL_ERROR,
                ConnFail {
                    kind: ErrorKind::Framing,
                    why,
                },
            )
        };
        if !self.got_settings && !matches!(f, Frame::Settings { ack: false, .. }) {
            return Err(protocol("the server's first frame was not SETTINGS"));
        }
        if self.block_stream != 0 && !matches!(f, Frame::Continuation { .. }) {
            return Err(protocol("a frame between HEADERS and its CONTINUATION"));
        }
        match f {
            Frame::Settings { ack: true, .. } => self.conn_bytes += n,
            Frame::Settings { ack: false, params } => {
                self.conn_bytes += n;
                self.control()?;
                for (id, v) in frame::settings_params(params) {
                    match id {
                        frame::SETTINGS_HEADER_TABLE_SIZE => self.peer.header_table_size = v,
                        frame::SETTINGS_MAX_CONCURRENT_STREAMS => self.peer.max_concurrent_streams = Some(v),
                        frame::SETTINGS_INITIAL_WINDOW_SIZE => {
                            if v > frame::MAX_WINDOW {
                                return Err(flow_control("SETTINGS_INITIAL_WINDOW_SIZE over 2^31-1"));
                            }
                            // A change moves every open stream's window by
                            // the difference (RFC 9113 §6.9.2).
                            let delta = v as i64 - self.peer.initial_window_size as i64;
                            for s in &mut self.streams {
                                s.send_window += delta;
                                if s.send_window > frame::MAX_WINDOW as i64 {
                                    return Err(flow_control(
                                        "SETTINGS_INITIAL_WINDOW_SIZE took a stream's window over 2^31-1",
                                    ));
                                }
                            }
                            self.peer.initial_window_size = v;
                        }
                        frame::SETTINGS_MAX_FRAME_SIZE => {
                            if !(frame::DEFAULT_MAX_FRAME..=0xFF_FFFF).contains(&v) {
                                return Err(protocol("SETTINGS_MAX_FRAME_SIZE out of range"));
                            }
                            self.peer.max_frame_size = v;
                        }
                        frame::SETTINGS_MAX_HEADER_LIST_SIZE => self.peer.max_header_list_size = Some(v),
                        _ => {}
                    }
                }
                self.got_settings = true;
                frame::put_settings_ack(&mut self.out);
            }
            Frame::Ping { ack, data } => {
                self.conn_bytes += n;
                if !ack {
                    self.control()?;
                    frame::put_ping_ack(&mut self.out, data);
                }
            }
            Frame::GoAway { last_stream, .. } => {
                self.conn_bytes += n;
                // A second GOAWAY may only lower the last stream id.
                let last = self.goaway.map_or(last_stream, |l| l.min(last_stream));
                self.goaway = Some(last);
                let mut k = 0;
                while k < self.streams.len() {
                    if self.streams[k].id > last {
                        let s = self.streams.swap_remove(k);
                        ended.push(Ended {
                            user: s.user,
                            sent: s.sent,
                            bytes: s.bytes,
                            outcome: Outcome::Refused,
                        });
                    } else {
                        k += 1;
                    }
                }
            }
            Frame::WindowUpdate { stream: 0, increment } => {
                // benchlab sends no DATA, so the server's windows never
                // hold it back; they are kept only to find one past
                // 2³¹ − 1, a connection error (RFC 9113 §6.9.1).
                self.conn_bytes += n;
                self.send_window += increment as i64;
                if self.send_window > frame::MAX_WINDOW as i64 {
                    return Err(flow_control("a WINDOW_UPDATE took the connection's window over 2^31-1"));
                }
            }
            Frame::WindowUpdate { stream, increment } => {
                // Connection-level bytes, as every WINDOW_UPDATE; past
                // 2³¹ − 1 it is a stream error: RST_STREAM, `flow_control`.
                self.conn_bytes += n;
                if let Some(k) = self.find(stream) {
                    self.streams[k].send_window += increment as i64;
                    if self.streams[k].send_window > frame::MAX_WINDOW as i64 {
                        self.reset_flow_control(k, ended)?;
                    }
                }
            }
            Frame::Ignored { .. } => self.conn_bytes += n,
            Frame::PushPromise { .. } => return Err(protocol("PUSH_PROMISE after SETTINGS_ENABLE_PUSH = 0")),
            Frame::RstStream { stream, code } => {
                if let Some(k) = self.find(stream) {
                    let s = self.streams.swap_remove(k);
                    ended.push(Ended {
                        user: s.user,
                        sent: s.sent,
                        bytes: s.bytes + n,
                        outcome: Outcome::Reset(code),
                    });
                } else {
                    self.conn_bytes += n;
                }
            }
            Frame::Headers {
                stream,
                end_stream,
                end_headers,
                block,
            } => {
                if stream % 2 == 0 || stream >= self.next_id {
                    return Err(protocol("HEADERS on a stream benchlab did not open"));
                }
                if let Some(k) = self.find(stream) {
                    self.streams[k].bytes += n;
                }
                self.block.clear();
                self.block.extend_from_slice(block);
                self.block_stream = stream;
                self.block_end_stream = end_stream;
                self.block_frames = 0;
                if end_headers {
                    self.head(ended)?;
                }
            }
            Frame::Continuation {
                stream,
                end_headers,
                block,
            } => {
                if stream != self.block_stream {
                    return Err(protocol("CONTINUATION without its HEADERS"));
                }
                self.block_frames += 1;
                if self.block_frames > MAX_CONTINUATIONS {
                    return Err((
                        frame::ENHANCE_YOUR_CALM,
                        ConnFail {
                            kind: ErrorKind::HeaderTooLarge,
                            why: "a header block in more than 16 CONTINUATION frames",
                        },
                    ));
                }
                if self.block.len() + block.len() > MAX_BLOCK {
                    return Err((
                        frame::PROTOCOL_ERROR,
                        ConnFail {
                            kind: ErrorKind::HeaderTooLarge,
                            why: "a header block over 64 KiB",
                        },
                    ));
                }
                if let Some(k) = self.find(stream) {
                    self.streams[k].bytes += n;
                }
                self.block.extend_from_slice(block);
                if end_headers {
                    self.head(ended)?;
                }
            }
            Frame::Data {
                stream,
                end_stream,
                len,
                data,
            } => {
                self.conn_window -= len as i64;
                if self.conn_window < 0 {
                    return Err(flow_control("DATA beyond the connection's window"));
                }
                self.conn_consumed += len;
                if self.conn_consumed as i64 >= self.conn_window_size() / 2 {
                    self.control()?;
                    frame::put_window_update(&mut self.out, 0, self.conn_consumed);
                    self.conn_window += self.conn_consumed as i64;
                    self.conn_consumed = 0;
                }
                let Some(k) = self.find(stream) else {
                    if stream % 2 == 0 || stream >= self.next_id {
                        return Err(protocol("DATA on a stream benchlab did not open"));
                    }
                    // A stream benchlab cancelled: the data still counts
                    // against the connection's window (done above).
                    self.conn_bytes += n;
                    return Ok(());
                };
                let s = &mut self.streams[k];
                s.bytes += n;
                s.window -= len as i64;
                if s.window < 0 {
                    return self.reset_flow_control(k, ended);
                }
                if !s.head_done {
                    return Err(protocol("DATA before the response's HEADERS"));
                }
                s.body += data.len() as u64;
                if let Some(h) = s.hasher.as_deref_mut() {
                    h.update(data);
                }
                if end_stream {
                    let s = self.streams.swap_remove(k);
                    ended.push(finish(s));
                } else {
                    s.consumed += len;
                    if s.consumed >= self.window / 2 {
                        self.control()?;
                        let s = &mut self.streams[k];
                        frame::put_window_update(&mut self.out, s.id, s.consumed);
                        s.window += s.consumed as i64;
                        s.consumed = 0;
                    }
                }
            }
        }
        Ok(())
    }

    fn conn_window_size(&self) -> i64 {
        (self.window as i64).max(65_535)
    }

    /// A whole header block arrived: decode it (always, to keep the HPACK
    /// table in step) and apply it to its stream.
    /// Ends stream `k` with RST_STREAM(FLOW_CONTROL_ERROR), its request
    /// counted as `flow_control` (RFC 9113 §6.9: a stream error), the reset
    /// queued as a control frame (so a flood of them is bounded too).
    fn reset_flow_control(&mut self, k: usize, ended: &mut Vec<Ended>) -> Result<(), (u32, ConnFail)> {
        self.control()?;
        let s = self.streams.swap_remove(k);
        frame::put_rst_stream(&mut self.out, s.id, frame::FLOW_CONTROL_ERROR);
        ended.push(Ended {
            user: s.user,
            sent: s.sent,
            bytes: s.bytes,
            outcome: Outcome::Failed(ErrorKind::FlowControl),
        });
        Ok(())
    }

    fn head(&mut self, ended: &mut Vec<Ended>) -> Result<(), (u32, ConnFail)> {
        let stream = std::mem::take(&mut self.block_stream);
        let head = hpack::decode(&mut self.decoder, &self.block).map_err(|hpack::BadBlock| {
            (
                frame::COMPRESSION_ERROR,
                ConnFail {
                    kind: ErrorKind::Framing,
                    why: "a header block that is not valid HPACK",
                },
            )
        })?;
        let Some(k) = self.find(stream) else {
            return Ok(()); // a cancelled stream
        };
        let end_stream = self.block_end_stream;
        let s = &mut self.streams[k];
        s.head_size += head.list_size;
        let fail = |kind| Some(Outcome::Failed(kind));
        let outcome = if s.head_size > MAX_HEAD {
            fail(ErrorKind::HeaderTooLarge)
        } else if s.head_done {
            // Trailers: they must end the stream.
            if end_stream {
                None
            } else {
                fail(ErrorKind::Framing)
            }
        } else {
            match head.status {
                Some(st @ 100..=199) if st != 101 => {
                    // An interim response: its bytes count, the final one follows.
                    if end_stream {
                        fail(ErrorKind::Framing)
                    } else {
                        return Ok(());
                    }
                }
                Some(st @ 200..=999) => {
                    s.status = Some(st);
                    s.head_done = true;
                    s.content_length = head.content_length;
                    None
                }
                _ => fail(ErrorKind::Framing),
            }
        };
        if let Some(o) = outcome {
            self.control()?;
            let s = self.streams.swap_remove(k);
            frame::put_rst_stream(&mut self.out, s.id, frame::PROTOCOL_ERROR);
            ended.push(Ended {
                user: s.user,
                sent: s.sent,
                bytes: s.bytes,
                outcome: o,
            });
        } else if end_stream {
            let s = self.streams.swap_remove(k);
            if s.upload.is_some() {
                // The server answered before the body's end: benchlab's
                // half of the stream is closed with a reset (RFC 9113
                // §8.1), and the request counts as body_incomplete.
                frame::put_rst_stream(&mut self.out, s.id, frame::CANCEL);
            }
            ended.push(finish(s));
        }
        Ok(())
    }
}

/// A connection error of flow control (RFC 9113 §6.9): `flow_control`.
fn flow_control(why: &'static str) -> (u32, ConnFail) {
    (
        frame::FLOW_CONTROL_ERROR,
        ConnFail {
            kind: ErrorKind::FlowControl,
            why,
        },
    )
}

/// A stream ended by END_STREAM: done, unless its body disagrees with its
/// `content-length` (fewer bytes: short_body; more: framing, as HTTP/1's).
fn finish(s: Stream) -> Ended {
    let outcome = match s.content_length {
        _ if s.upload.is_some() => Outcome::Failed(ErrorKind::BodyIncomplete),
        Some(cl) if s.body < cl => Outcome::Failed(ErrorKind::ShortBody),
        Some(cl) if s.body > cl => Outcome::Failed(ErrorKind::Framing),
        _ => Outcome::Done {
            status: s.status.unwrap_or(0),
            body: s.body,
            xxh3: s.hasher.map(|h| h.digest()),
        },
    };
    Ended {
        user: s.user,
        sent: s.sent,
        bytes: s.bytes,
        outcome,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::h2::frame::*;

    /// A response HEADERS block: `:status` literal, optional content-length.
    pub(crate) fn response_block(status: u16, content_length: Option<usize>) -> Vec<u8> {
        let mut b = Vec::new();
        b.push(0x08); // literal without indexing, name index 8 (:status)
        let st = status.to_string();
        b.push(st.len() as u8);
        b.extend_from_slice(st.as_bytes());
        if let Some(cl) = content_length {
            b.push(0x0F);
            b.push(28 - 15); // content-length is static index 28
            let v = cl.to_string();
            b.push(v.len() as u8);
            b.extend_from_slice(v.as_bytes());
        }
        b
    }

    fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        put_header(&mut v, payload.len(), kind, flags, stream);
        v.extend_from_slice(payload);
        v
    }

    fn conn_with_settings(settings: &[u8]) -> (Conn, Vec<Ended>) {
        let mut c = Conn::new(65_535);
        let mut ended = Vec::new();
        c.receive(&frame(SETTINGS, 0, 0, settings), &mut ended).unwrap();
        assert!(c.got_settings);
        (c, ended)
    }

    #[test]
    fn counts_a_streams_frame_bytes_and_body() {
        let (mut c, mut ended) = conn_with_settings(&[0, 3, 0, 0, 0, 1]);
        assert_eq!(c.peer.max_concurrent_streams, Some(1));
        assert!(c.can_open(10));
        let id = c.open(7, &[0x82], true);
        assert!(!c.can_open(10), "the server allows one stream");
        let head = response_block(200, Some(5));
        let mut wire = frame(HEADERS, FLAG_END_HEADERS, id, &head);
        wire.extend(frame(DATA, FLAG_PADDED, id, &[3, b'h', b'e', 0, 0, 0]));
        wire.extend(frame(PING, 0, 0, &[0; 8]));
        wire.extend(frame(DATA, FLAG_END_STREAM, id, b"llo"));
        // Byte by byte: frames split anywhere.
        for b in &wire {
            c.receive(std::slice::from_ref(b), &mut ended).unwrap();
        }
        let expect_bytes = (9 + head.len() + 9 + 6 + 9 + 3) as u64;
        assert_eq!(ended.len(), 1);
        let e = ended[0];
        assert_eq!(e.user, 7);
        assert_eq!(e.bytes, expect_bytes);
        let Outcome::Done { status, body, xxh3 } = e.outcome else {
            panic!("{e:?}")
        };
        assert_eq!((status, body), (200, 5));
        assert_eq!(xxh3, Some(xxhash_rust::xxh3::xxh3_64(b"hello")));
        assert_eq!(c.conn_bytes, 9 + 6 + 9 + 8, "SETTINGS and PING are the connection's");
        assert!(c.can_open(10));
    }

    #[test]
    fn reset_goaway_flow_control_and_malformed_frames_land_in_their_buckets() {
        let (mut c, mut ended) = conn_with_settings(&[]);
        let a = c.open(1, &[0x82], false);
        let b = c.open(2, &[0x82], false);
        let d = c.open(3, &[0x82], false);
        c.receive(&frame(RST_STREAM, 0, a, &[0, 0, 0, 2]), &mut ended).unwrap();
        assert_eq!(ended[0].outcome, Outcome::Reset(2));
        c.receive(&frame(GOAWAY, 0, 0, &[0, 0, 0, b as u8, 0, 0, 0, 0]), &mut ended)
            .unwrap();
        assert_eq!(ended[1].user, 3);
        assert_eq!(ended[1].outcome, Outcome::Refused);
        assert!(!c.can_open(10));
        let _ = (b, d);
        // A server that ignores benchlab's window: 200 bytes against 100.
        let mut c = Conn::new(100);
        let mut ended = Vec::new();
        c.receive(&frame(SETTINGS, 0, 0, &[]), &mut ended).unwrap();
        let s = c.open(1, &[0x82], false);
        c.receive(
            &frame(HEADERS, FLAG_END_HEADERS, s, &response_block(200, None)),
            &mut ended,
        )
        .unwrap();
        c.receive(&frame(DATA, 0, s, &[0; 200]), &mut ended).unwrap();
        assert_eq!(ended[0].outcome, Outcome::Failed(ErrorKind::FlowControl));
        let (mut c, mut ended) = conn_with_settings(&[]);
        c.open(1, &[0x82], false);
        let r = c.receive(&frame(PING, 0, 0, &[0; 3]), &mut ended);
        assert_eq!(r.unwrap_err().kind, ErrorKind::Framing);
        c.end_all(&mut ended, ErrorKind::Framing);
        assert_eq!(ended[0].outcome, Outcome::Failed(ErrorKind::Framing));
    }

    #[test]
    fn a_window_update_past_2_31_is_flow_control_on_the_connection_and_on_a_stream() {
        let (mut c, mut ended) = conn_with_settings(&[]);
        let a = c.open(1, &[0x82], false);
        c.open(2, &[0x82], false);
        // 65,535 + (2³¹ − 65,536) is the largest window: allowed.
        c.receive(
            &frame(WINDOW_UPDATE, 0, a, &(MAX_WINDOW - 65_535).to_be_bytes()),
            &mut ended,
        )
        .unwrap();
        assert!(ended.is_empty());
        c.receive(&frame(WINDOW_UPDATE, 0, a, &1u32.to_be_bytes()), &mut ended)
            .unwrap();
        assert_eq!(ended.len(), 1);
        assert_eq!(
            (ended[0].user, ended[0].outcome),
            (1, Outcome::Failed(ErrorKind::FlowControl))
        );
        assert!(
            c.unsent()
                .ends_with(&[0, 0, 4, RST_STREAM, 0, 0, 0, 0, a as u8, 0, 0, 0, 3]),
            "RST_STREAM(FLOW_CONTROL_ERROR)"
        );
        assert_eq!(c.active(), 1, "the connection goes on");
        c.receive(
            &frame(WINDOW_UPDATE, 0, 0, &(MAX_WINDOW - 65_535).to_be_bytes()),
            &mut ended,
        )
        .unwrap();
        let r = c.receive(&frame(WINDOW_UPDATE, 0, 0, &1u32.to_be_bytes()), &mut ended);
        assert_eq!(r.unwrap_err().kind, ErrorKind::FlowControl);
        assert!(c.unsent().ends_with(&[0, 0, 0, 3]), "GOAWAY(FLOW_CONTROL_ERROR)");
        // A new initial window moves the open streams' windows (§6.9.2).
        let (mut c, mut ended) = conn_with_settings(&[]);
        let s = c.open(1, &[0x82], false);
        c.receive(
            &frame(WINDOW_UPDATE, 0, s, &(MAX_WINDOW - 65_535).to_be_bytes()),
            &mut ended,
        )
        .unwrap();
        let r = c.receive(&frame(SETTINGS, 0, 0, &[0, 4, 0, 1, 0, 0]), &mut ended);
        assert_eq!(r.unwrap_err().kind, ErrorKind::FlowControl);
    }

    #[test]
    fn a_header_block_is_bounded_in_continuations_and_in_bytes() {
        let (mut c, mut ended) = conn_with_settings(&[]);
        let s = c.open(1, &[0x82], false);
        c.receive(&frame(HEADERS, 0, s, &[0x88]), &mut ended).unwrap();
        for _ in 0..MAX_CONTINUATIONS {
            c.receive(&frame(CONTINUATION, 0, s, &[]), &mut ended).unwrap();
        }
        let r = c.receive(&frame(CONTINUATION, 0, s, &[]), &mut ended);
        assert_eq!(r.unwrap_err().kind, ErrorKind::HeaderTooLarge);
        assert!(c.unsent().ends_with(&[0, 0, 0, ENHANCE_YOUR_CALM as u8]));
        // 16 CONTINUATIONs are allowed: the block ends and decodes.
        let (mut c, mut ended) = conn_with_settings(&[]);
        let s = c.open(1, &[0x82], false);
        c.receive(&frame(HEADERS, FLAG_END_STREAM, s, &[0x88]), &mut ended)
            .unwrap();
        for k in 1..=MAX_CONTINUATIONS {
            let end = if k == MAX_CONTINUATIONS { FLAG_END_HEADERS } else { 0 };
            c.receive(&frame(CONTINUATION, end, s, &[]), &mut ended).unwrap();
        }
        assert!(matches!(ended[0].outcome, Outcome::Done { status: 200, .. }));
        // Over 64 KiB of block bytes.
        let (mut c, mut ended) = conn_with_settings(&[]);
        let s = c.open(1, &[0x82], false);
        let piece = vec![0u8; DEFAULT_MAX_FRAME as usize];
        c.receive(&frame(HEADERS, 0, s, &piece), &mut ended).unwrap();
        for _ in 0..3 {
            c.receive(&frame(CONTINUATION, 0, s, &piece), &mut ended).unwrap();
        }
        let r = c.receive(&frame(CONTINUATION, 0, s, &[0]), &mut ended);
        assert_eq!(r.unwrap_err().kind, ErrorKind::HeaderTooLarge);
    }

    #[test]
    fn answers_the_server_does_not_read_are_bounded() {
        let (mut c, mut ended) = conn_with_settings(&[]);
        // The first SETTINGS' acknowledgement is queued: 999 more fit.
        let ping = frame(PING, 0, 0, &[1; 8]);
        for _ in 1..MAX_CONTROL_QUEUED {
            c.receive(&ping, &mut ended).unwrap();
        }
        // The server reads a byte: the count starts over.
        c.wrote(1);
        for _ in 0..MAX_CONTROL_QUEUED {
            c.receive(&ping, &mut ended).unwrap();
        }
        let r = c.receive(&ping, &mut ended);
        assert_eq!(r.unwrap_err().kind, ErrorKind::Framing);
        assert!(c.unsent().ends_with(&[0, 0, 0, ENHANCE_YOUR_CALM as u8]));
        // A server that reads now and then still meets the bound in bytes.
        let (mut c, mut ended) = conn_with_settings(&[]);
        let r = (0..200_000).try_for_each(|_| {
            c.wrote(1);
            c.receive(&ping, &mut ended)
        });
        assert_eq!(r.unwrap_err().kind, ErrorKind::Framing);
        assert!(c.unsent().len() <= MAX_UNSENT + 64);
        assert!(
            c.out.capacity() <= 2 * (MAX_UNSENT + COMPACT_AT),
            "{}",
            c.out.capacity()
        );
        // No stream opens while 64 KiB wait (each PING's answer is 17
        // bytes, one of them taken).
        let (mut c, mut ended) = conn_with_settings(&[]);
        for _ in 0..MAX_UNSENT_TO_OPEN / 16 {
            c.wrote(1);
            c.receive(&ping, &mut ended).unwrap();
        }
        assert!(!c.can_open(10));
        let n = c.unsent().len();
        c.wrote(n);
        assert!(c.unsent().is_empty() && c.can_open(10));
    }

    #[test]
    fn a_first_frame_other_than_settings_breaks_the_connection() {
        let mut c = Conn::new(1 << 20);
        assert!(c.out.starts_with(PREFACE));
        let mut ended = Vec::new();
        assert!(c.receive(&frame(PING, 0, 0, &[0; 8]), &mut ended).is_err());
    }
}
