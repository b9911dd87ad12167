//! HTTP/2 frames (RFC 9113 §4 and §6): splitting received bytes into
//! frames, checking each frame's fixed layout, and writing the few frames a
//! GET-only client sends.
//!
//! The decoder is written by hand, as the HTTP/1 framing is (`parse.rs`),
//! because benchlab counts frame bytes per stream (docs/counting.md,
//! "HTTP/2"): a library that hides frame boundaries cannot say how many
//! bytes of HEADERS, CONTINUATION and DATA, 9-byte headers and padding
//! included, a stream took. It is fuzzed (`fuzz/fuzz_targets/h2_frames.rs`).

/// What a client sends first on every HTTP/2 connection (RFC 9113 §3.4).
pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// Length of a frame header.
pub const HEADER_LEN: usize = 9;
/// The frame size every endpoint must accept (SETTINGS_MAX_FRAME_SIZE's
/// initial value); benchlab never asks for more.
pub const DEFAULT_MAX_FRAME: u32 = 16_384;

pub const DATA: u8 = 0x0;
pub const HEADERS: u8 = 0x1;
pub const PRIORITY: u8 = 0x2;
pub const RST_STREAM: u8 = 0x3;
pub const SETTINGS: u8 = 0x4;
pub const PUSH_PROMISE: u8 = 0x5;
pub const PING: u8 = 0x6;
pub const GOAWAY: u8 = 0x7;
pub const WINDOW_UPDATE: u8 = 0x8;
pub const CONTINUATION: u8 = 0x9;

pub const FLAG_END_STREAM: u8 = 0x1;
pub const FLAG_ACK: u8 = 0x1;
pub const FLAG_END_HEADERS: u8 = 0x4;
pub const FLAG_PADDED: u8 = 0x8;
pub const FLAG_PRIORITY: u8 = 0x20;

/// SETTINGS parameters (RFC 9113 §6.5.2).
pub const SETTINGS_HEADER_TABLE_SIZE: u16 = 0x1;
pub const SETTINGS_ENABLE_PUSH: u16 = 0x2;
pub const SETTINGS_MAX_CONCURRENT_STREAMS: u16 = 0x3;
pub const SETTINGS_INITIAL_WINDOW_SIZE: u16 = 0x4;
pub const SETTINGS_MAX_FRAME_SIZE: u16 = 0x5;
pub const SETTINGS_MAX_HEADER_LIST_SIZE: u16 = 0x6;

/// Error codes (RFC 9113 §7).
pub const NO_ERROR: u32 = 0x0;
pub const PROTOCOL_ERROR: u32 = 0x1;
pub const CANCEL: u32 = 0x8;
pub const FLOW_CONTROL_ERROR: u32 = 0x3;
pub const FRAME_SIZE_ERROR: u32 = 0x6;
pub const COMPRESSION_ERROR: u32 = 0x9;
pub const ENHANCE_YOUR_CALM: u32 = 0xb;

/// The largest flow-control window (2³¹ − 1).
pub const MAX_WINDOW: u32 = 0x7FFF_FFFF;

/// A frame that breaks the protocol: the connection cannot go on (RFC 9113
/// §5.4.1); the code is what a GOAWAY would carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameError {
    pub code: u32,
    pub why: &'static str,
}

fn protocol(why: &'static str) -> FrameError {
    FrameError {
        code: PROTOCOL_ERROR,
        why,
    }
}

fn frame_size(why: &'static str) -> FrameError {
    FrameError {
        code: FRAME_SIZE_ERROR,
        why,
    }
}

/// One received frame, borrowing its payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Frame<'a> {
    /// `data` is the payload without padding; `len` the whole payload
    /// length, which flow control counts.
    Data {
        stream: u32,
        end_stream: bool,
        len: u32,
        data: &'a [u8],
    },
    Headers {
        stream: u32,
        end_stream: bool,
        end_headers: bool,
        block: &'a [u8],
    },
    Continuation {
        stream: u32,
        end_headers: bool,
        block: &'a [u8],
    },
    RstStream {
        stream: u32,
        code: u32,
    },
    /// `params` holds 6-byte (id, value) pairs; see [`settings_params`].
    Settings {
        ack: bool,
        params: &'a [u8],
    },
    Ping {
        ack: bool,
        data: [u8; 8],
    },
    GoAway {
        last_stream: u32,
        code: u32,
    },
    WindowUpdate {
        stream: u32,
        increment: u32,
    },
    PushPromise {
        stream: u32,
    },
    /// PRIORITY, and frames of unknown types, which must be ignored.
    Ignored {
        kind: u8,
        stream: u32,
    },
}

impl Frame<'_> {
    /// The stream the frame belongs to (0: the connection).
    pub fn stream(&self) -> u32 {
        match *self {
            Frame::Data { stream, .. }
            | Frame::Headers { stream, .. }
            | Frame::Continuation { stream, .. }
            | Frame::RstStream { stream, .. }
            | Frame::WindowUpdate { stream, .. }
            | Frame::PushPromise { stream }
            | Frame::Ignored { stream, .. } => stream,
            Frame::Settings { .. } | Frame::Ping { .. } | Frame::GoAway { .. } => 0,
        }
    }
}

/// The (id, value) pairs of a SETTINGS payload.
pub fn settings_params(params: &[u8]) -> impl Iterator<Item = (u16, u32)> + '_ {
    params.chunks_exact(6).map(|p| {
        (
            u16::from_be_bytes([p[0], p[1]]),
            u32::from_be_bytes([p[2], p[3], p[4], p[5]]),
        )
    })
}

fn u31(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]]) & MAX_WINDOW
}

/// Removes the padding of a PADDED frame's payload.
fn unpad(flags: u8, payload: &[u8]) -> Result<&[u8], FrameError> {
    if flags & FLAG_PADDED == 0 {
        return Ok(payload);
    }
    let Some((&pad, rest)) = payload.split_first() else {
        return Err(frame_size("a padded frame without its pad length"));
    };
    if pad as usize > rest.len() {
        return Err(protocol("padding longer than the frame"));
    }
    Ok(&rest[..rest.len() - pad as usize])
}

/// Splits the first frame off `buf`: `Ok(None)` when `buf` does not hold a
/// whole frame yet, else the frame and the bytes it took (9 + its
/// length). Frames longer than `max_frame` (the SETTINGS_MAX_FRAME_SIZE
/// benchlab announced) and frames whose fixed layout is wrong are errors.
pub fn parse(buf: &[u8], max_frame: u32) -> Result<Option<(Frame<'_>, usize)>, FrameError> {
    if buf.len() < HEADER_LEN {
        return Ok(None);
    }
    let len = u32::from_be_bytes([0, buf[0], buf[1], buf[2]]);
    if len > max_frame {
        return Err(frame_size("a frame longer than SETTINGS_MAX_FRAME_SIZE"));
    }
    let total = HEADER_LEN + len as usize;
    if buf.len() < total {
        return Ok(None);
    }
    let (kind, flags, stream) = (buf[3], buf[4], u31(&buf[5..9]));
    let payload = &buf[HEADER_LEN..total];
    let on_stream = || {
        if stream == 0 {
            Err(protocol("a stream frame on stream 0"))
        } else {
            Ok(())
        }
    };
    let on_connection = || {
        if stream != 0 {
            Err(protocol("a connection frame on a stream"))
        } else {
            Ok(())
        }
    };
    let frame = match kind {
        DATA => {
            on_stream()?;
            Frame::Data {
                stream,
                end_stream: flags & FLAG_END_STREAM != 0,
                len,
                data: unpad(flags, payload)?,
            }
        }
        HEADERS => {
            on_stream()?;
            let mut block = unpad(flags, payload)?;
            if flags & FLAG_PRIORITY != 0 {
                if block.len() < 5 {
                    return Err(frame_size("HEADERS too short for its priority"));
                }
                block = &block[5..];
            }
            Frame::Headers {
                stream,
                end_stream: flags & FLAG_END_STREAM != 0,
                end_headers: flags & FLAG_END_HEADERS != 0,
                block,
            }
        }
        CONTINUATION => {
            on_stream()?;
            Frame::Continuation {
                stream,
                end_headers: flags & FLAG_END_HEADERS != 0,
                block: payload,
            }
        }
        PRIORITY => {
            on_stream()?;
            if len != 5 {
                return Err(frame_size("PRIORITY of a length other than 5"));
            }
            Frame::Ignored { kind, stream }
        }
        RST_STREAM => {
            on_stream()?;
            if len != 4 {
                return Err(frame_size("RST_STREAM of a length other than 4"));
            }
            Frame::RstStream {
                stream,
                code: u32::from_be_bytes([payload[0], payload[1], payload[2], payload[3]]),
            }
        }
        SETTINGS => {
            on_connection()?;
            let ack = flags & FLAG_ACK != 0;
            if (ack && len != 0) || !len.is_multiple_of(6) {
                return Err(frame_size("SETTINGS of a bad length"));
            }
            Frame::Settings { ack, params: payload }
        }
        PUSH_PROMISE => {
            // benchlab says SETTINGS_ENABLE_PUSH = 0; the caller refuses it.
            on_stream()?;
            Frame::PushPromise { stream }
        }
        PING => {
            on_connection()?;
            let data: [u8; 8] = payload
                .try_into()
                .map_err(|_| frame_size("PING of a length other than 8"))?;
            Frame::Ping {
                ack: flags & FLAG_ACK != 0,
                data,
            }
        }
        GOAWAY => {
            on_connection()?;
            if len < 8 {
                return Err(frame_size("GOAWAY shorter than 8 bytes"));
            }
            Frame::GoAway {
                last_stream: u31(&payload[0..4]),
                code: u32::from_be_bytes([payload[4], payload[5], payload[6], payload[7]]),
            }
        }
        WINDOW_UPDATE => {
            if len != 4 {
                return Err(frame_size("WINDOW_UPDATE of a length other than 4"));
            }
            Frame::WindowUpdate {
                stream,
                increment: u31(payload),
            }
        }
        _ => Frame::Ignored { kind, stream },
    };
    Ok(Some((frame, total)))
}

/// Appends a frame header.
pub fn put_header(out: &mut Vec<u8>, len: usize, kind: u8, flags: u8, stream: u32) {
    let l = (len as u32).to_be_bytes();
    out.extend_from_slice(&[l[1], l[2], l[3], kind, flags]);
    out.extend_from_slice(&(stream & MAX_WINDOW).to_be_bytes());
}

/// Appends a SETTINGS frame with `params`.
pub fn put_settings(out: &mut Vec<u8>, params: &[(u16, u32)]) {
    put_header(out, params.len() * 6, SETTINGS, 0, 0);
    for (id, v) in params {
        out.extend_from_slice(&id.to_be_bytes());
        out.extend_from_slice(&v.to_be_bytes());
    }
}

pub fn put_settings_ack(out: &mut Vec<u8>) {
    put_header(out, 0, SETTINGS, FLAG_ACK, 0);
}

pub fn put_window_update(out: &mut Vec<u8>, stream: u32, increment: u32) {
    put_header(out, 4, WINDOW_UPDATE, 0, stream);
    out.extend_from_slice(&(increment & MAX_WINDOW).to_be_bytes());
}

pub fn put_ping_ack(out: &mut Vec<u8>, data: [u8; 8]) {
    put_header(out, 8, PING, FLAG_ACK, 0);
    out.extend_from_slice(&data);
}

pub fn put_goaway(out: &mut Vec<u8>, last_stream: u32, code: u32) {
    put_header(out, 8, GOAWAY, 0, 0);
    out.extend_from_slice(&(last_stream & MAX_WINDOW).to_be_bytes());
    out.extend_from_slice(&code.to_be_bytes());
}

pub fn put_rst_stream(out: &mut Vec<u8>, stream: u32, code: u32) {
    put_header(out, 4, RST_STREAM, 0, stream);
    out.extend_from_slice(&code.to_be_bytes());
}

/// Appends a request's header block as HEADERS (END_STREAM: a GET has no
/// body) and, when it is longer than the server's `max_frame`,
/// CONTINUATION frames.
/// Bytes [`put_request`] writes for a header block of `block` bytes: a
/// 9-byte frame header per HEADERS or CONTINUATION frame, and the block.
pub fn request_len(block: usize, max_frame: u32) -> u64 {
    let frames = block.div_ceil((max_frame as usize).max(1)).max(1);
    (frames * 9 + block) as u64
}

/// A request's HEADERS (and CONTINUATION) frames; `end_stream` unless a
/// body follows as DATA.
pub fn put_request(out: &mut Vec<u8>, stream: u32, block: &[u8], max_frame: u32, end_stream: bool) {
    let max = (max_frame as usize).max(1);
    let mut chunks = block.chunks(max).peekable();
    let mut kind = HEADERS;
    let end = if end_stream { FLAG_END_STREAM } else { 0 };
    let mut flags = end;
    if block.is_empty() {
        put_header(out, 0, HEADERS, end | FLAG_END_HEADERS, stream);
        return;
    }
    while let Some(c) = chunks.next() {
        let end = if chunks.peek().is_none() { FLAG_END_HEADERS } else { 0 };
        put_header(out, c.len(), kind, flags | end, stream);
        out.extend_from_slice(c);
        kind = CONTINUATION;
        flags = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        put_header(&mut v, payload.len(), kind, flags, stream);
        v.extend_from_slice(payload);
        v
    }

    #[test]
    fn splits_frames_and_waits_for_whole_ones() {
        let mut buf = frame(DATA, FLAG_PADDED | FLAG_END_STREAM, 1, &[2, b'h', b'i', 0, 0]);
        buf.extend(frame(PING, 0, 0, &[1, 2, 3, 4, 5, 6, 7, 8]));
        let (f, n) = parse(&buf, DEFAULT_MAX_FRAME).unwrap().unwrap();
        assert_eq!(n, 14);
        assert_eq!(
            f,
            Frame::Data {
                stream: 1,
                end_stream: true,
                len: 5,
                data: b"hi"
            }
        );
        let (f, n) = parse(&buf[14..], DEFAULT_MAX_FRAME).unwrap().unwrap();
        assert_eq!(n, 17);
        assert_eq!(
            f,
            Frame::Ping {
                ack: false,
                data: [1, 2, 3, 4, 5, 6, 7, 8]
            }
        );
        for cut in 0..14 {
            assert_eq!(parse(&buf[..cut], DEFAULT_MAX_FRAME).unwrap(), None, "{cut}");
        }
    }

    #[test]
    fn refuses_broken_layouts() {
        let bad = [
            frame(DATA, 0, 0, b"x"),
            frame(SETTINGS, 0, 1, &[]),
            frame(SETTINGS, 0, 0, &[0; 5]),
            frame(SETTINGS, FLAG_ACK, 0, &[0; 6]),
            frame(PING, 0, 0, &[0; 7]),
            frame(RST_STREAM, 0, 1, &[0; 3]),
            frame(GOAWAY, 0, 0, &[0; 7]),
            frame(WINDOW_UPDATE, 0, 0, &[0; 5]),
            frame(DATA, FLAG_PADDED, 1, &[9, 1]),
            frame(HEADERS, FLAG_PRIORITY, 1, &[0; 4]),
        ];
        for b in bad {
            assert!(parse(&b, DEFAULT_MAX_FRAME).is_err(), "{b:?}");
        }
        let long = frame(DATA, 0, 1, &vec![0; DEFAULT_MAX_FRAME as usize + 1]);
        assert_eq!(parse(&long, DEFAULT_MAX_FRAME).unwrap_err().code, FRAME_SIZE_ERROR);
    }

    #[test]
    fn writes_a_long_request_as_headers_and_continuations() {
        let block = vec![7u8; 25];
        let mut out = Vec::new();
        put_request(&mut out, 3, &block, 10, true);
        let mut at = 0;
        let mut got = Vec::new();
        while let Some((f, n)) = parse(&out[at..], DEFAULT_MAX_FRAME).unwrap() {
            got.push(f);
            at += n;
        }
        assert_eq!(at, out.len());
        assert_eq!(got.len(), 3);
        assert!(matches!(
            got[0],
            Frame::Headers {
                stream: 3,
                end_stream: true,
                end_headers: false,
                ..
            }
        ));
        assert!(matches!(got[2], Frame::Continuation { end_headers: true, .. }));
    }
}
