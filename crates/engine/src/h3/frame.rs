//! HTTP/3 framing (RFC 9114 §7) on a request stream: the request's
//! HEADERS (and DATA) as one byte string per URL, and a response parser
//! that counts every byte of the stream's frames, the body's by DATA,
//! and decodes the HEADERS' `:status` (`qpack.rs`).

use super::qpack;
use xxhash_rust::xxh3::Xxh3;

pub const DATA: u64 = 0x0;
pub const HEADERS: u64 = 0x1;
pub const SETTINGS: u64 = 0x4;

/// The largest HEADERS payload benchlab takes (a response head over this
/// fails as `header_too_large`, as HTTP/1's and HTTP/2's do at 64 KiB).
pub const MAX_HEADERS: u64 = 64 * 1024;

/// Appends a QUIC variable-length integer (RFC 9000 §16).
pub fn put_varint(out: &mut Vec<u8>, v: u64) {
    if v < 1 << 6 {
        out.push(v as u8);
    } else if v < 1 << 14 {
        out.extend_from_slice(&(v as u16 | 0x4000).to_be_bytes());
    } else if v < 1 << 30 {
        out.extend_from_slice(&(v as u32 | 0x8000_0000).to_be_bytes());
    } else {
        out.extend_from_slice(&(v | 0xC000_0000_0000_0000).to_be_bytes());
    }
}

/// Reads a varint from the front of `b`: its value and length, or `None`
/// when `b` holds only part of it.
pub fn varint(b: &[u8]) -> Option<(u64, usize)> {
    let first = *b.first()?;
    let len = 1usize << (first >> 6);
    if b.len() < len {
        return None;
    }
    let mut v = u64::from(first & 0x3f);
    for &x in &b[1..len] {
        v = v << 8 | u64::from(x);
    }
    Some((v, len))
}

/// A frame: its header and payload.
pub fn put_frame(out: &mut Vec<u8>, kind: u64, payload: &[u8]) {
    put_varint(out, kind);
    put_varint(out, payload.len() as u64);
    out.extend_from_slice(payload);
}

/// The bytes of a request stream: HEADERS with `section`, and DATA with
/// `body` when there is one.
pub fn request(section: &[u8], body: Option<&[u8]>) -> Vec<u8> {
    let mut out = Vec::with_capacity(section.len() + 4 + body.map_or(0, |b| b.len() + 9));
    put_frame(&mut out, HEADERS, section);
    if let Some(b) = body.filter(|b| !b.is_empty()) {
        put_frame(&mut out, DATA, b);
    }
    out
}

/// How a response stream broke HTTP/3 or QPACK.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bad {
    /// A frame out of place, DATA before HEADERS, a section QPACK could
    /// not decode, a head with no `:status`, or a stream that ended inside
    /// a frame.
    Framing,
    /// A HEADERS payload over [`MAX_HEADERS`].
    TooLarge,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Reading a frame header (type and length varints).
    Header,
    /// Gathering a HEADERS payload of this many bytes.
    Headers(u64),
    /// In a DATA payload, this many bytes left.
    Data(u64),
    /// Skipping an unknown (extension or reserved) frame's payload.
    Skip(u64),
}

/// A response stream being read.
pub struct Response {
    state: State,
    /// A frame header cut between reads (at most 16 bytes: two varints).
    partial: Vec<u8>,
    headers: Vec<u8>,
    scratch: Vec<u8>,
    /// Every byte of the stream's frames so far.
    pub bytes: u64,
    /// The body's bytes (DATA payloads).
    pub body: u64,
    /// The final (non-1xx) status, once its HEADERS came.
    pub status: Option<u16>,
    pub hasher: Option<Box<Xxh3>>,
}

impl Response {
    pub fn new(checksum: bool) -> Response {
        Response {
            state: State::Header,
            partial: Vec::new(),
            headers: Vec::new(),
            scratch: Vec::new(),
            bytes: 0,
            body: 0,
            status: None,
            hasher: checksum.then(|| Box::new(Xxh3::new())),
        }
    }

    /// Takes the stream's next bytes.
    pub fn receive(&mut self, mut data: &[u8]) -> Result<(), Bad> {
        self.bytes += data.len() as u64;
        while !data.is_empty() {
            match self.state {
                State::Header => {
                    // Two varints; the header is complete once both are.
                    let take = (16 - self.partial.len()).min(data.len());
                    let had = self.partial.len();
                    self.partial.extend_from_slice(&data[..take]);
                    let Some((kind, a)) = varint(&self.partial) else {
                        data = &data[take..];
                        continue;
                    };
                    let Some((len, b)) = varint(&self.partial[a..]) else {
                        data = &data[take..];
                        continue;
                    };
                    data = &data[a + b - had..];
                    self.partial.clear();
                    self.state = self.frame(kind, len)?;
                    if let State::Headers(0) = self.state {
                        self.headers_done()?;
                    }
                }
                State::Headers(left) => {
                    let take = (left as usize).min(data.len());
                    self.headers.extend_from_slice(&data[..take]);
                    data = &data[take..];
                    self.state = State::Headers(left - take as u64);
                    if take as u64 == left {
                        self.headers_done()?;
                    }
                }
                State::Data(left) => {
                    let take = (left as usize).min(data.len());
                    if let Some(h) = &mut self.hasher {
                        h.update(&data[..take]);
                    }
                    self.body += take as u64;
                    data = &data[take..];
                    let left = left - take as u64;
                    self.state = if left == 0 { State::Header } else { State::Data(left) };
                }
                State::Skip(left) => {
                    let take = (left as usize).min(data.len());
                    data = &data[take..];
                    let left = left - take as u64;
                    self.state = if left == 0 { State::Header } else { State::Skip(left) };
                }
            }
        }
        Ok(())
    }

    fn frame(&mut self, kind: u64, len: u64) -> Result<State, Bad> {
        match kind {
            HEADERS if len > MAX_HEADERS => Err(Bad::TooLarge),
            HEADERS => {
                self.headers.clear();
                Ok(State::Headers(len))
            }
            DATA if self.status.is_none() => Err(Bad::Framing),
            DATA if len == 0 => Ok(State::Header),
            DATA => Ok(State::Data(len)),
            // CANCEL_PUSH, SETTINGS, PUSH_PROMISE (no push was allowed),
            // GOAWAY, MAX_PUSH_ID: never on a request stream (§7.2).
            0x3 | SETTINGS | 0x5 | 0x7 | 0xd => Err(Bad::Framing),
            // HTTP/2's frame types that HTTP/3 reserves (§7.2.8).
            0x2 | 0x6 | 0x8 | 0x9 => Err(Bad::Framing),
            _ if len == 0 => Ok(State::Header),
            _ => Ok(State::Skip(len)),
        }
    }

    fn headers_done(&mut self) -> Result<(), Bad> {
        self.state = State::Header;
        let status = qpack::decode_status(&self.headers, &mut self.scratch).map_err(|_| Bad::Framing)?;
        match (self.status, status) {
            // Trailers after the body: counted, not read.
            (Some(_), _) => Ok(()),
            (None, Some(s)) if (100..200).contains(&s) => Ok(()),
            (None, Some(s)) => {
                self.status = Some(s);
                Ok(())
            }
            (None, None) => Err(Bad::Framing),
        }
    }

    /// The stream ended (FIN): whether it ended between frames with a
    /// final status.
    pub fn finish(&self) -> Result<(), Bad> {
        if self.state != State::Header || !self.partial.is_empty() || self.status.is_none() {
            return Err(Bad::Framing);
        }
        Ok(())
    }
}

/// Replays `data` as one response stream's bytes in reads of `split`;
/// the fuzz target and its corpus test check that the split changes
/// nothing. Returns the status, body and frame bytes, or the failure.
pub fn replay(data: &[u8], split: usize) -> Result<(Option<u16>, u64, u64), Bad> {
    let mut r = Response::new(true);
    for piece in data.chunks(split.max(1)) {
        r.receive(piece)?;
    }
    r.finish()?;
    Ok((r.status, r.body, r.bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn response(status_index: u8, body: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        put_frame(&mut out, HEADERS, &[0, 0, 0xC0 | status_index]);
        put_frame(&mut out, DATA, body);
        out
    }

    #[test]
    fn varints_round_trip() {
        for v in [0, 63, 64, 16383, 16384, (1 << 30) - 1, 1 << 30, (1 << 62) - 1] {
            let mut b = Vec::new();
            put_varint(&mut b, v);
            assert_eq!(varint(&b), Some((v, b.len())));
            assert_eq!(varint(&b[..b.len() - 1]), None);
        }
    }

    #[test]
    fn a_response_counts_the_same_in_any_split() {
        let mut r = response(25, b"hello");
        // An unknown frame type (a reserved 0x21) is skipped, and counted.
        put_frame(&mut r, 0x21, b"xyz");
        for split in 1..r.len() + 1 {
            assert_eq!(replay(&r, split), Ok((Some(200), 5, r.len() as u64)), "split {split}");
        }
    }

    #[test]
    fn interim_responses_and_trailers_are_counted_not_taken() {
        let mut r = Vec::new();
        // 100: static index 63, past the 6-bit prefix (0x3f, then 0).
        put_frame(&mut r, HEADERS, &[0, 0, 0xFF, 0x00]);
        r.extend_from_slice(&response(27, b"ab")); // 404
        put_frame(&mut r, HEADERS, &[0, 0, 0x56, 1, b'x']); // trailers
        assert_eq!(replay(&r, 3), Ok((Some(404), 2, r.len() as u64)));
    }

    #[test]
    fn misplaced_frames_and_cut_streams_are_framing() {
        let mut d = Vec::new();
        put_frame(&mut d, DATA, b"x");
        assert_eq!(replay(&d, 1), Err(Bad::Framing));
        let mut s = response(25, b"");
        put_frame(&mut s, SETTINGS, b"");
        assert_eq!(replay(&s, 2), Err(Bad::Framing));
        let r = response(25, b"hello");
        assert_eq!(replay(&r[..r.len() - 1], 4), Err(Bad::Framing));
        let mut big = Vec::new();
        put_varint(&mut big, HEADERS);
        put_varint(&mut big, MAX_HEADERS + 1);
        assert_eq!(replay(&big, 5), Err(Bad::TooLarge));
    }
}
