//! Incremental HTTP/1 response framing.
//!
//! Written by hand rather than with `httparse` + a body decoder because this
//! is the inner loop of the load generator and it must be *exact*:
//! - it counts every byte as it is framed on the wire (status line, headers,
//!   1xx interim responses, chunk-size lines, trailers), which `bytes` in
//!   docs/counting.md needs and which a parser that hands back
//!   only decoded bodies cannot give;
//! - it never copies a body: bodies are counted (and, when asked, hashed)
//!   straight out of the thread's receive buffer, so a 900 KiB response costs
//!   no more user-space work than its `read` calls;
//! - it keeps its state across reads of any size (the receive buffer is
//!   WebBench's per-read size, 4 KiB in the replica suites), so a head or a
//!   chunk-size line split anywhere is handled;
//! - it allocates nothing per response: the only buffer is the head buffer
//!   for heads split across reads, reused for the life of the connection
//!   (and each OS thread's [`HeadMemo`], allocated once);
//! - a head that is the same, byte for byte, as the last one the OS thread
//!   parsed is not parsed again ([`HeadMemo`]): on a keep-alive run that is
//!   nearly every head, and the parse was a third of the client's own work.
//!
//! Only what the client needs is looked at: the status line, and the
//! `Content-Length`, `Transfer-Encoding` and `Connection` headers.

use xxhash_rust::xxh3::Xxh3;

/// Largest response head accepted (status line + headers + empty line, and
/// likewise a trailer section). docs/counting.md: `header_too_large` is a
/// head over 64 KiB.
pub const MAX_HEAD: usize = 64 * 1024;

/// Why a response could not be framed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameError {
    /// Malformed status line, header, length or chunk syntax, or bytes after
    /// the end of a response.
    Framing,
    /// The head (or trailer section) is over [`MAX_HEAD`].
    HeaderTooLarge,
    /// The connection closed before the body was complete.
    ShortBody,
    /// The connection closed with no byte of the response received.
    ClosedBeforeResponse,
}

/// What a call to [`ResponseParser::feed`] achieved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Feed {
    /// Everything given was consumed and the response is not complete yet.
    NeedMore,
    /// The response is complete; `consumed` bytes of the input belonged to it.
    Done { consumed: usize },
}

/// The parts of a response head the client acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Head {
    /// Length of the head on the wire, empty line included.
    pub len: usize,
    pub status: u16,
    /// 0 for HTTP/1.0, 1 for HTTP/1.1.
    pub minor: u8,
    pub content_length: Option<u64>,
    pub chunked: bool,
    /// `Connection: close` was present.
    pub close: bool,
    /// `Connection: keep-alive` was present.
    pub keep_alive: bool,
}

impl Head {
    /// Whether the server lets the connection carry another request.
    pub fn persistent(&self) -> bool {
        if self.close {
            false
        } else if self.minor >= 1 {
            true
        } else {
            self.keep_alive
        }
    }
}

/// Parses one response head from the start of `buf`.
///
/// Returns `Ok(None)` when the head is not complete yet (no empty line), and
/// `HeaderTooLarge` when more than [`MAX_HEAD`] bytes hold no end of head.
/// Accepts bare LF line ends as RFC 9112 §2.2 allows a recipient to.
///
/// One forward pass over the head in the usual case ([`parse_head_fast`]:
/// each byte looked at once, 16 at a time); anything it does not
/// expect (an incomplete head, an error, a folded line, a control byte in
/// a name) is left to the line-by-line parser, which decides every case
/// and which the fast pass agrees with wherever it answers (tested).
#[inline]
pub fn parse_head(buf: &[u8]) -> Result<Option<Head>, FrameError> {
    match parse_head_fast(buf) {
        Some(head) => Ok(Some(head)),
        None => parse_head_lines(buf),
    }
}

/// The line-by-line parser: a `memchr` for each line's end, then the line.
/// The reference for every input; the hot path's heads go through
/// [`parse_head_fast`].
fn parse_head_lines(buf: &[u8]) -> Result<Option<Head>, FrameError> {
    let limit = buf.len().min(MAX_HEAD);
    let Some(first_end) = memchr::memchr(b'\n', &buf[..limit]) else {
        return if buf.len() >= MAX_HEAD {
            Err(FrameError::HeaderTooLarge)
        } else if buf.len() >= 5 && !buf.starts_with(b"HTTP/") {
            // Fail early on garbage instead of waiting for more of it.
            Err(FrameError::Framing)
        } else {
            Ok(None)
        };
    };
    let mut head = parse_status_line(trim_cr(&buf[..first_end]))?;
    let mut pos = first_end + 1;
    loop {
        let Some(rel) = memchr::memchr(b'\n', &buf[pos..limit]) else {
            return if buf.len() >= MAX_HEAD {
                Err(FrameError::HeaderTooLarge)
            } else {
                Ok(None)
            };
        };
        let line = trim_cr(&buf[pos..pos + rel]);
        pos += rel + 1;
        if line.is_empty() {
            head.len = pos;
            return Ok(Some(head));
        }
        parse_header_line(line, &mut head)?;
    }
}

/// A complete, well-formed head in one forward pass, or `None` where
/// [`parse_head_lines`] must decide. Each header line is read once: its
/// name up to the colon by a search for the first byte that may not be in
/// a name here (a control byte, space or colon), then, for a name the
/// client acts on, the value; for any other name only the search for the
/// line's end. The searches read bit masks of the LFs and name stops that
/// [`Marks`] makes 64 bytes at a time with vector compares: on nginx's
/// nine-line head the line parser's per-line `memchr` calls (their set-up
/// on lines of 5 to 40 bytes) and its byte loop over each name cost about
/// four times this (callgrind: bench/README.md).
#[inline]
fn parse_head_fast(buf: &[u8]) -> Option<Head> {
    let buf = &buf[..buf.len().min(MAX_HEAD)];
    let mut marks = Marks::new(buf);
    let first_end = marks.next_lf(0)?;
    let mut head = parse_status_line(trim_cr(&buf[..first_end])).ok()?;
    let mut pos = first_end + 1;
    loop {
        match *buf.get(pos)? {
            b'\n' => {
                head.len = pos + 1;
                return Some(head);
            }
            b'\r' if *buf.get(pos + 1)? == b'\n' => {
                head.len = pos + 2;
                return Some(head);
            }
            _ => {}
        }
        let colon = marks.next_stop(pos)?;
        if buf[colon] != b':' || colon == pos {
            return None;
        }
        let end = marks.next_lf(colon + 1)?;
        let name = &buf[pos..colon];
        let rest = || trim_cr(&buf[colon + 1..end]);
        // The names acted on, compared eight bytes a step with their case
        // folded (exact here: a name's bytes are above 0x20, where OR 0x20
        // changes only a capital letter); then the line parser's rules.
        match name.len() {
            14 if name_is(name, b"content-length") => content_length(trim_ows(rest()), &mut head).ok()?,
            17 if name_is(name, b"transfer-encoding") => transfer_encoding(trim_ows(rest()), &mut head),
            10 if name_is(name, b"connection") => connection(trim_ows(rest()), &mut head),
            _ => {}
        }
        pos = end + 1;
    }
}

/// Where the LFs and the name stops (a colon, or a byte below 0x21) of
/// `buf` lie, a bit a byte, 64 bytes at a time as the pass reaches them:
/// a 240-byte head is four blocks of a few vector compares each, and each
/// line's searches are then a shift and a count of trailing zeros. The
/// pass's searches go forward only, so one block is held at a time.
struct Marks<'a> {
    buf: &'a [u8],
    /// The block's first byte (a multiple of 64).
    at: usize,
    lf: u64,
    stop: u64,
}

impl<'a> Marks<'a> {
    #[inline]
    fn new(buf: &'a [u8]) -> Self {
        let mut m = Marks {
            buf,
            at: 0,
            lf: 0,
            stop: 0,
        };
        m.load(0);
        m
    }

    /// The first LF at or after `p` (which is at or after the block held).
    #[inline]
    fn next_lf(&mut self, p: usize) -> Option<usize> {
        self.next(p, true)
    }

    /// The first colon or byte below 0x21 at or after `p`.
    #[inline]
    fn next_stop(&mut self, p: usize) -> Option<usize> {
        self.next(p, false)
    }

    #[inline(always)]
    fn next(&mut self, mut p: usize, lf: bool) -> Option<usize> {
        loop {
            if p >= self.buf.len() {
                return None;
            }
            // (Wrapping: a `p` before the block, never asked, loads its own.)
            if p.wrapping_sub(self.at) >= 64 {
                self.load(p & !63);
            }
            let m = if lf { self.lf } else { self.stop } >> (p - self.at);
            if m != 0 {
                return Some(p + m.trailing_zeros() as usize);
            }
            p = self.at + 64;
        }
    }

    /// Takes the block that starts at `at`; bytes past the end have no bit.
    #[inline]
    fn load(&mut self, at: usize) {
        self.at = at;
        let rest = &self.buf[at.min(self.buf.len())..];
        let (lf, stop) = match rest.first_chunk::<64>() {
            Some(block) => block_marks(block),
            None => {
                let mut block = [0u8; 64];
                block[..rest.len()].copy_from_slice(rest);
                let (lf, stop) = block_marks(&block);
                let valid = (1u64 << rest.len()) - 1;
                (lf & valid, stop & valid)
            }
        };
        self.lf = lf;
        self.stop = stop;
    }
}

/// The LF and name-stop bits of 64 bytes: SSE2, x86-64's baseline.
#[cfg(target_arch = "x86_64")]
#[inline]
fn block_marks(block: &[u8; 64]) -> (u64, u64) {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_min_epu8, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8,
    };
    // SAFETY: SSE2 is part of x86-64's baseline, so every x86-64 CPU runs
    // these; each load reads bytes 16k..16k+16 of the 64-byte array.
    unsafe {
        let (lf_b, colon_b, space_b) = (
            _mm_set1_epi8(b'\n' as i8),
            _mm_set1_epi8(b':' as i8),
            _mm_set1_epi8(0x20),
        );
        let (mut lf, mut stop) = (0u64, 0u64);
        for k in 0..4 {
            let v = _mm_loadu_si128(block.as_ptr().add(16 * k).cast::<__m128i>());
            let is_lf = _mm_movemask_epi8(_mm_cmpeq_epi8(v, lf_b)) as u32 as u64;
            // A byte is at most 0x20 where the unsigned minimum with 0x20 is itself.
            let low = _mm_cmpeq_epi8(_mm_min_epu8(v, space_b), v);
            let is_stop = _mm_movemask_epi8(_mm_or_si128(low, _mm_cmpeq_epi8(v, colon_b))) as u32 as u64;
            lf |= is_lf << (16 * k);
            stop |= is_stop << (16 * k);
        }
        (lf, stop)
    }
}

/// The same, a byte at a time, elsewhere.
#[cfg(not(target_arch = "x86_64"))]
#[inline]
fn block_marks(block: &[u8; 64]) -> (u64, u64) {
    let (mut lf, mut stop) = (0u64, 0u64);
    for (k, &b) in block.iter().enumerate() {
        lf |= u64::from(b == b'\n') << k;
        stop |= u64::from(b == b':' || b < 0x21) << k;
    }
    (lf, stop)
}

/// Whether `name` (bytes above 0x20, as the fast pass finds names) is
/// `lower` (lower-case letters and '-', at least eight bytes) in any case.
#[inline(always)]
fn name_is(name: &[u8], lower: &[u8]) -> bool {
    let n = lower.len();
    if name.len() != n || n < 8 {
        return false;
    }
    let mut at = 0;
    loop {
        let at8 = at.min(n - 8);
        match (word_at(name, at8), word_at(lower, at8)) {
            (Some(a), Some(b)) if a | (0x20 * ONES) == b => {}
            _ => return false,
        }
        if at8 == n - 8 {
            return true;
        }
        at += 8;
    }
}

const ONES: u64 = 0x0101_0101_0101_0101;
#[inline(always)]
fn word_at(buf: &[u8], i: usize) -> Option<u64> {
    buf.get(i..)?.first_chunk::<8>().map(|c| u64::from_le_bytes(*c))
}

fn trim_cr(line: &[u8]) -> &[u8] {
    match line.last() {
        Some(b'\r') => &line[..line.len() - 1],
        _ => line,
    }
}

fn parse_status_line(line: &[u8]) -> Result<Head, FrameError> {
    // "HTTP/1.x SSS[ reason]"
    if line.len() < 12 || !line.starts_with(b"HTTP/1.") || line[8] != b' ' {
        return Err(FrameError::Framing);
    }
    let minor = match line[7] {
        b'0' => 0,
        b'1' => 1,
        _ => return Err(FrameError::Framing),
    };
    let d = &line[9..12];
    if !d.iter().all(u8::is_ascii_digit) || (line.len() > 12 && line[12] != b' ') {
        return Err(FrameError::Framing);
    }
    let status = (d[0] - b'0') as u16 * 100 + (d[1] - b'0') as u16 * 10 + (d[2] - b'0') as u16;
    if status < 100 {
        return Err(FrameError::Framing);
    }
    Ok(Head {
        status,
        minor,
        ..Head::default()
    })
}

fn parse_header_line(line: &[u8], head: &mut Head) -> Result<(), FrameError> {
    if line[0] == b' ' || line[0] == b'\t' {
        // obs-fold continuation of a header we do not look at; the headers we
        // act on never need it.
        return Ok(());
    }
    // The name runs to the first colon and holds no whitespace: one pass
    // finds the colon and checks the name (names are short; a search for
    // the colon and a second loop over the name cost twice this).
    let mut colon = 0;
    loop {
        match line.get(colon) {
            Some(b':') => break,
            Some(b' ' | b'\t') | None => return Err(FrameError::Framing),
            Some(_) => colon += 1,
        }
    }
    let name = &line[..colon];
    if name.is_empty() {
        return Err(FrameError::Framing);
    }
    act_on_header(name, &line[colon + 1..], head)
}

/// Acts on a header the client reads (`Content-Length`,
/// `Transfer-Encoding`, `Connection`); any other name is passed over.
/// `rest` is the line after the colon, CR removed.
#[inline]
fn act_on_header(name: &[u8], rest: &[u8], head: &mut Head) -> Result<(), FrameError> {
    let value = || trim_ows(rest);
    // Servers send these names in this case: a plain compare first, the
    // case-folding one (a branch a byte) only when it fails.
    match name.len() {
        14 if name == b"Content-Length" || name.eq_ignore_ascii_case(b"content-length") => {
            content_length(value(), head)?
        }
        17 if name == b"Transfer-Encoding" || name.eq_ignore_ascii_case(b"transfer-encoding") => {
            transfer_encoding(value(), head)
        }
        10 if name == b"Connection" || name.eq_ignore_ascii_case(b"connection") => connection(value(), head),
        _ => {}
    }
    Ok(())
}

#[inline]
fn content_length(value: &[u8], head: &mut Head) -> Result<(), FrameError> {
    let n = parse_decimal(value).ok_or(FrameError::Framing)?;
    match head.content_length {
        Some(prev) if prev != n => Err(FrameError::Framing),
        _ => {
            head.content_length = Some(n);
            Ok(())
        }
    }
}

#[inline]
fn transfer_encoding(value: &[u8], head: &mut Head) {
    // The last coding decides: chunked must be final (RFC 9112 §6.3).
    let last = value.rsplit(|&b| b == b',').next().map(trim_ows);
    head.chunked = matches!(last, Some(c) if c.eq_ignore_ascii_case(b"chunked"));
    if !head.chunked {
        // Another final coding: the body runs to close (RFC 9112 §6.3 p4).
        head.content_length = None;
    }
}

#[inline]
fn connection(value: &[u8], head: &mut Head) {
    // What servers send, as they send it, in one compare first.
    if value.len() == 10 && word_at(value, 0) == word_at(b"keep-alive", 0) && value[8..] == *b"ve" {
        head.keep_alive = true;
        return;
    }
    for token in value.split(|&b| b == b',') {
        let token = trim_ows(token);
        if token.eq_ignore_ascii_case(b"close") {
            head.close = true;
        } else if token.eq_ignore_ascii_case(b"keep-alive") {
            head.keep_alive = true;
        }
    }
}

fn trim_ows(mut s: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = s {
        s = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = s {
        s = rest;
    }
    s
}

fn parse_decimal(s: &[u8]) -> Option<u64> {
    if s.is_empty() || s.len() > 18 {
        return None;
    }
    let mut n: u64 = 0;
    for &b in s {
        if !b.is_ascii_digit() {
            return None;
        }
        n = n * 10 + (b - b'0') as u64;
    }
    Some(n)
}

/// Where the parser is within one response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Reading a head (possibly after 1xx interim responses).
    Head,
    /// Body with a known remaining length.
    Length(u64),
    /// Chunked body.
    Chunked(Chunk),
    /// Body delimited by the connection's close.
    UntilClose,
    Done,
}

/// State of the chunked decoder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Chunk {
    /// In the chunk-size hex digits; `digits` seen so far.
    Size {
        value: u64,
        digits: u8,
    },
    /// In chunk extensions (or whitespace) until the line's LF.
    Ext {
        value: u64,
    },
    /// Saw CR at the end of the size line, LF must follow.
    SizeLf {
        value: u64,
    },
    /// Inside chunk data.
    Data(u64),
    /// After chunk data: CR LF must follow.
    DataCr,
    DataLf,
    /// In the trailer section; `line_start` tells whether at a line start,
    /// `len` counts trailer bytes against [`MAX_HEAD`].
    Trailer {
        line_start: bool,
        len: u32,
    },
    /// Saw CR on an empty line in the trailer section, LF must follow.
    TrailerEndLf,
}

/// The last response head an OS thread parsed, byte for byte, and what it
/// said. A server answers one URL with the same head, byte for byte, for a
/// whole second (until its `Date` changes), so a keep-alive client parses
/// the same bytes again and again: comparing them with the last ones
/// (one `memcmp`, about 30 instructions for nginx's 240-byte head) stands
/// in for the parse (about 1,050; bench/README.md, "Keep-alive CPU against
/// the floor"). Exact: a head's parse is a function of its own bytes, up to
/// and including its empty line, and a match covers all of them. A miss
/// costs the compare (it stops at the first byte that differs) and a copy.
#[derive(Debug)]
pub struct HeadMemo {
    /// The head's bytes, empty line included; empty before the first.
    bytes: Vec<u8>,
    head: Head,
}

impl Default for HeadMemo {
    /// Its whole buffer at once: a run's heads never allocate.
    fn default() -> Self {
        HeadMemo {
            bytes: Vec::with_capacity(Self::MAX),
            head: Head::default(),
        }
    }
}

impl HeadMemo {
    /// Heads longer than this are parsed each time (and not copied).
    pub const MAX: usize = 512;

    /// [`parse_head`], answered from the memo when `buf` begins with the
    /// head it holds.
    #[inline]
    pub fn parse(&mut self, buf: &[u8]) -> Result<Option<Head>, FrameError> {
        let n = self.bytes.len();
        if n > 0 && buf.get(..n) == Some(&self.bytes[..]) {
            return Ok(Some(self.head));
        }
        let parsed = parse_head(buf)?;
        if let Some(h) = parsed.filter(|h| h.len <= Self::MAX) {
            self.bytes.clear();
            self.bytes.extend_from_slice(&buf[..h.len]);
            self.head = h;
        }
        Ok(parsed)
    }
}

/// Incremental framing of one response at a time on one connection.
///
/// Feed it the bytes read from the socket with [`feed`](Self::feed); call
/// [`on_eof`](Self::on_eof) when the peer closed. After `Done`, read the
/// response's figures and call [`reset`](Self::reset) before the next one.
#[derive(Debug)]
pub struct ResponseParser {
    state: State,
    /// Holds a head split across reads (rare); reused, never shrunk.
    head_buf: Vec<u8>,
    /// Head of the final (non-1xx) response once parsed.
    head: Head,
    /// Bytes of this response on the wire so far, 1xx responses included.
    wire_bytes: u64,
    /// Decoded body bytes so far.
    body_bytes: u64,
    /// Interim (1xx) responses before the final one (a `100 Continue`
    /// lets a request's body go).
    interim: u32,
}

impl Default for ResponseParser {
    fn default() -> Self {
        Self::new()
    }
}

impl ResponseParser {
    pub fn new() -> Self {
        ResponseParser {
            state: State::Head,
            head_buf: Vec::new(),
            head: Head::default(),
            wire_bytes: 0,
            body_bytes: 0,
            interim: 0,
        }
    }

    /// Prepares for the next response on the same or a new connection.
    #[inline]
    pub fn reset(&mut self) {
        self.state = State::Head;
        self.head_buf.clear();
        self.wire_bytes = 0;
        self.body_bytes = 0;
        self.interim = 0;
    }

    /// Interim (1xx) responses seen before the final one.
    #[inline]
    pub fn interim(&self) -> u32 {
        self.interim
    }

    /// The final response's head (valid once the head has been parsed).
    pub fn head(&self) -> &Head {
        &self.head
    }

    /// Bytes of this response received so far, as framed on the wire.
    pub fn wire_bytes(&self) -> u64 {
        self.wire_bytes + self.head_buf.len() as u64
    }

    /// Decoded body bytes received so far.
    pub fn body_bytes(&self) -> u64 {
        self.body_bytes
    }

    /// Whether any byte of the response has arrived.
    pub fn started(&self) -> bool {
        self.wire_bytes() > 0
    }

    /// Whether the final head has been parsed (the body is being read).
    pub fn in_body(&self) -> bool {
        !matches!(self.state, State::Head)
    }

    /// Whether the body runs until the server closes the connection.
    pub fn until_close(&self) -> bool {
        matches!(self.state, State::UntilClose)
    }

    /// Consumes bytes of the response. Body bytes are passed to `hasher`
    /// when one is given (checksum validation). On an error, all of `data`
    /// counts as received for the failed response (its `error_bytes`).
    pub fn feed(&mut self, data: &[u8], hasher: Option<&mut Xxh3>) -> Result<Feed, FrameError> {
        self.feed_with(data, hasher, None)
    }

    /// [`feed`](Self::feed), with heads that arrive whole in `data` looked
    /// up in the OS thread's `memo` first.
    #[inline]
    pub fn feed_with(
        &mut self,
        data: &[u8],
        hasher: Option<&mut Xxh3>,
        memo: Option<&mut HeadMemo>,
    ) -> Result<Feed, FrameError> {
        let before = self.wire_bytes();
        let r = self.feed_inner(data, hasher, memo);
        if r.is_err() {
            self.head_buf.clear();
            self.wire_bytes = before + data.len() as u64;
        }
        r
    }

    /// Counts bytes that arrived after a complete response (never sent for
    /// it: benchlab does not pipeline), which make the response a failure.
    pub fn add_stray(&mut self, n: usize) {
        self.wire_bytes += n as u64;
    }

    fn feed_inner(
        &mut self,
        data: &[u8],
        mut hasher: Option<&mut Xxh3>,
        mut memo: Option<&mut HeadMemo>,
    ) -> Result<Feed, FrameError> {
        let mut pos = 0;
        while pos < data.len() {
            match self.state {
                State::Head => {
                    let used = self.feed_head(&data[pos..], memo.as_deref_mut())?;
                    match used {
                        None => return Ok(Feed::NeedMore),
                        Some(n) => pos += n,
                    }
                }
                State::Length(remaining) => {
                    let n = remaining.min((data.len() - pos) as u64) as usize;
                    if let Some(h) = hasher.as_deref_mut() {
                        h.update(&data[pos..pos + n]);
                    }
                    self.body_bytes += n as u64;
                    self.wire_bytes += n as u64;
                    pos += n;
                    let left = remaining - n as u64;
                    if left == 0 {
                        self.state = State::Done;
                    } else {
                        self.state = State::Length(left);
                    }
                }
                State::UntilClose => {
                    let rest = &data[pos..];
                    if let Some(h) = hasher.as_deref_mut() {
                        h.update(rest);
                    }
                    self.body_bytes += rest.len() as u64;
                    self.wire_bytes += rest.len() as u64;
                    return Ok(Feed::NeedMore);
                }
                State::Chunked(c) => {
                    pos += self.feed_chunked(c, &data[pos..], hasher.as_deref_mut())?;
                }
                State::Done => break,
            }
            if self.state == State::Done {
                return Ok(Feed::Done { consumed: pos });
            }
        }
        if self.state == State::Done {
            Ok(Feed::Done { consumed: pos })
        } else {
            Ok(Feed::NeedMore)
        }
    }

    /// Reads a head from `data` (joined with any earlier partial head).
    /// Returns how many bytes of `data` it used, or `None` if all of `data`
    /// was kept as a partial head.
    fn feed_head(&mut self, data: &[u8], memo: Option<&mut HeadMemo>) -> Result<Option<usize>, FrameError> {
        let (head, used) = if self.head_buf.is_empty() {
            let parsed = match memo {
                Some(m) => m.parse(data)?,
                None => parse_head(data)?,
            };
            match parsed {
                Some(h) => (h, h.len),
                None => {
                    self.head_buf.extend_from_slice(data);
                    return Ok(None);
                }
            }
        } else {
            let before = self.head_buf.len();
            let take = data.len().min(MAX_HEAD + 1 - before.min(MAX_HEAD));
            self.head_buf.extend_from_slice(&data[..take]);
            match parse_head(&self.head_buf)? {
                Some(h) => {
                    let used = h.len - before;
                    self.head_buf.clear();
                    (h, used)
                }
                None => {
                    if take < data.len() {
                        return Err(FrameError::HeaderTooLarge);
                    }
                    return Ok(None);
                }
            }
        };
        self.wire_bytes += head.len as u64;
        if (100..200).contains(&head.status) && head.status != 101 {
            // Interim response: its bytes count, the final one follows.
            self.interim += 1;
            return Ok(Some(used));
        }
        self.head = head;
        self.state = if head.status == 204 || head.status == 304 || head.status == 101 {
            State::Done
        } else if head.chunked {
            State::Chunked(Chunk::Size { value: 0, digits: 0 })
        } else if let Some(n) = head.content_length {
            if n == 0 {
                State::Done
            } else {
                State::Length(n)
            }
        } else {
            State::UntilClose
        };
        Ok(Some(used))
    }

    /// Runs the chunked decoder over `data`; returns the bytes consumed.
    fn feed_chunked(&mut self, mut c: Chunk, data: &[u8], mut hasher: Option<&mut Xxh3>) -> Result<usize, FrameError> {
        let mut i = 0;
        while i < data.len() {
            if let Chunk::Data(left) = c {
                let n = left.min((data.len() - i) as u64) as usize;
                if let Some(h) = hasher.as_deref_mut() {
                    h.update(&data[i..i + n]);
                }
                self.body_bytes += n as u64;
                i += n;
                c = if left == n as u64 {
                    Chunk::DataCr
                } else {
                    Chunk::Data(left - n as u64)
                };
                continue;
            }
            let b = data[i];
            i += 1;
            c = match c {
                Chunk::Size { value, digits } => match hex_value(b) {
                    Some(d) if digits < 15 => Chunk::Size {
                        value: value << 4 | d as u64,
                        digits: digits + 1,
                    },
                    Some(_) => return Err(FrameError::Framing),
                    None if digits == 0 => return Err(FrameError::Framing),
                    None => match b {
                        b';' | b' ' | b'\t' => Chunk::Ext { value },
                        b'\r' => Chunk::SizeLf { value },
                        b'\n' => end_of_size_line(value),
                        _ => return Err(FrameError::Framing),
                    },
                },
                Chunk::Ext { value } => match b {
                    b'\n' => end_of_size_line(value),
                    _ => Chunk::Ext { value },
                },
                Chunk::SizeLf { value } => match b {
                    b'\n' => end_of_size_line(value),
                    _ => return Err(FrameError::Framing),
                },
                Chunk::DataCr => match b {
                    b'\r' => Chunk::DataLf,
                    b'\n' => Chunk::Size { value: 0, digits: 0 },
                    _ => return Err(FrameError::Framing),
                },
                Chunk::DataLf => match b {
                    b'\n' => Chunk::Size { value: 0, digits: 0 },
                    _ => return Err(FrameError::Framing),
                },
                Chunk::Trailer { line_start, len } => {
                    if len as usize >= MAX_HEAD {
                        return Err(FrameError::HeaderTooLarge);
                    }
                    match (line_start, b) {
                        (true, b'\r') => Chunk::TrailerEndLf,
                        (true, b'\n') => {
                            self.wire_bytes += i as u64;
                            self.state = State::Done;
                            return Ok(i);
                        }
                        (_, b'\n') => Chunk::Trailer {
                            line_start: true,
                            len: len + 1,
                        },
                        _ => Chunk::Trailer {
                            line_start: false,
                            len: len + 1,
                        },
                    }
                }
                Chunk::TrailerEndLf => match b {
                    b'\n' => {
                        self.wire_bytes += i as u64;
                        self.state = State::Done;
                        return Ok(i);
                    }
                    _ => return Err(FrameError::Framing),
                },
                Chunk::Data(_) => unreachable_data(),
            };
        }
        self.wire_bytes += i as u64;
        self.state = State::Chunked(c);
        Ok(i)
    }

    /// The peer closed the connection (FIN). Completes a read-to-close body,
    /// otherwise says what was missing.
    pub fn on_eof(&mut self) -> Result<(), FrameError> {
        match self.state {
            State::UntilClose => {
                self.state = State::Done;
                Ok(())
            }
            State::Done => Ok(()),
            State::Head if !self.started() => Err(FrameError::ClosedBeforeResponse),
            State::Head => Err(FrameError::Framing),
            State::Length(_) | State::Chunked(_) => Err(FrameError::ShortBody),
        }
    }
}

#[inline]
fn end_of_size_line(value: u64) -> Chunk {
    if value == 0 {
        Chunk::Trailer {
            line_start: true,
            len: 0,
        }
    } else {
        Chunk::Data(value)
    }
}

#[cold]
fn unreachable_data() -> Chunk {
    // `Chunk::Data` is handled before the byte-wise match; keep the match
    // exhaustive without a panic path in release builds.
    Chunk::DataCr
}

#[inline]
fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn feed_all(p: &mut ResponseParser, data: &[u8], split: usize) -> Result<Feed, FrameError> {
        let mut off = 0;
        let mut last = Feed::NeedMore;
        for piece in data.chunks(split.max(1)) {
            last = p.feed(piece, None)?;
            if let Feed::Done { consumed } = last {
                return Ok(Feed::Done {
                    consumed: off + consumed,
                });
            }
            off += piece.len();
        }
        Ok(last)
    }

    #[test]
    fn content_length_response() {
        let r = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nServer: x\r\n\r\nhello";
        let mut p = ResponseParser::new();
        assert_eq!(p.feed(r, None), Ok(Feed::Done { consumed: r.len() }));
        assert_eq!(p.head().status, 200);
        assert!(p.head().persistent());
        assert_eq!(p.wire_bytes(), r.len() as u64);
        assert_eq!(p.body_bytes(), 5);
    }

    #[test]
    fn chunked_with_extensions_and_trailers() {
        let r = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;a=b\r\nhello\r\n6\r\n world\r\n0\r\nX-T: 1\r\n\r\n";
        for split in 1..r.len() {
            let mut p = ResponseParser::new();
            assert_eq!(
                feed_all(&mut p, r, split),
                Ok(Feed::Done { consumed: r.len() }),
                "split {split}"
            );
            assert_eq!(p.body_bytes(), 11);
            assert_eq!(p.wire_bytes(), r.len() as u64);
        }
    }

    #[test]
    fn interim_responses_are_counted() {
        let r = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
        let mut p = ResponseParser::new();
        assert_eq!(p.feed(r, None), Ok(Feed::Done { consumed: r.len() }));
        assert_eq!(p.head().status, 200);
        assert_eq!(p.wire_bytes(), r.len() as u64);
    }

    #[test]
    fn read_to_close() {
        let r = b"HTTP/1.0 200 OK\r\n\r\nabc";
        let mut p = ResponseParser::new();
        assert_eq!(p.feed(r, None), Ok(Feed::NeedMore));
        assert!(!p.head().persistent());
        assert_eq!(p.on_eof(), Ok(()));
        assert_eq!(p.body_bytes(), 3);
        assert_eq!(p.wire_bytes(), r.len() as u64);
    }

    #[test]
    fn http10_keep_alive() {
        let r = b"HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 0\r\n\r\n";
        let mut p = ResponseParser::new();
        assert_eq!(p.feed(r, None), Ok(Feed::Done { consumed: r.len() }));
        assert!(p.head().persistent());
    }

    #[test]
    fn errors() {
        let cases: &[(&[u8], FrameError)] = &[
            (b"xyzzy garbage\r\n\r\n", FrameError::Framing),
            (b"HTTP/1.1 2000 OK\r\n\r\n", FrameError::Framing),
            (b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n", FrameError::Framing),
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
                FrameError::Framing,
            ),
            (b"HTTP/1.1 200 OK\r\nbad header\r\n\r\n", FrameError::Framing),
            (b"HTTP/1.1 200 OK\r\nNoColon\r\n\r\n", FrameError::Framing),
            (b"HTTP/1.1 200 OK\r\n: empty name\r\n\r\n", FrameError::Framing),
            (
                b"HTTP/1.1 200 OK\r\nX-A\t: tab before the colon\r\n\r\n",
                FrameError::Framing,
            ),
            (b"HTTP/1.1 200 OK\r\nContent-Length : 1\r\n\r\n", FrameError::Framing),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
                FrameError::Framing,
            ),
        ];
        for (input, want) in cases {
            let mut p = ResponseParser::new();
            assert_eq!(p.feed(input, None), Err(*want), "{}", String::from_utf8_lossy(input));
        }
        // Colons and spaces in a value are the value's.
        let ok = b"HTTP/1.1 200 OK\r\nServer: a: b c\r\nX:y\r\ncontent-length:\t2 \r\n\r\nhi";
        let mut p = ResponseParser::new();
        assert_eq!(p.feed(ok, None), Ok(Feed::Done { consumed: ok.len() }));
        assert_eq!((p.head().content_length, p.body_bytes()), (Some(2), 2));
    }

    #[test]
    fn huge_head() {
        let mut r = b"HTTP/1.1 200 OK\r\n".to_vec();
        while r.len() <= MAX_HEAD {
            r.extend_from_slice(b"X-Filler: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n");
        }
        r.extend_from_slice(b"\r\n");
        for split in [100, 4096, 65536, r.len()] {
            let mut p = ResponseParser::new();
            assert_eq!(feed_all(&mut p, &r, split), Err(FrameError::HeaderTooLarge));
        }
    }

    #[test]
    fn eof_kinds() {
        let mut p = ResponseParser::new();
        assert_eq!(p.on_eof(), Err(FrameError::ClosedBeforeResponse));
        let mut p = ResponseParser::new();
        p.feed(b"HTTP/1.1 200", None).unwrap();
        assert_eq!(p.on_eof(), Err(FrameError::Framing));
        let mut p = ResponseParser::new();
        p.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", None)
            .unwrap();
        assert_eq!(p.on_eof(), Err(FrameError::ShortBody));
        assert_eq!(p.body_bytes(), 3);
    }

    #[test]
    fn no_body_statuses() {
        let r = b"HTTP/1.1 304 Not Modified\r\nContent-Length: 100\r\n\r\n";
        let mut p = ResponseParser::new();
        assert_eq!(p.feed(r, None), Ok(Feed::Done { consumed: r.len() }));
    }

    #[test]
    fn done_reports_leftover() {
        let r = b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nxEXTRA";
        let mut p = ResponseParser::new();
        assert_eq!(p.feed(r, None), Ok(Feed::Done { consumed: r.len() - 5 }));
    }

    /// nginx's head for a 4 KiB file, as the keep-alive bench gets it.
    const NGINX_HEAD: &[u8] = b"HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\nDate: Thu, 26 Nov 2026 17:00:00 GMT\r\nContent-Type: text/html\r\nContent-Length: 4096\r\nLast-Modified: Thu, 26 Nov 2026 16:59:00 GMT\r\nConnection: keep-alive\r\nETag: \"6745f0a4-1000\"\r\nAccept-Ranges: bytes\r\n\r\n";

    /// The one-pass parser answers the usual head itself (not by falling
    /// back to the line parser), with the line parser's result, at every
    /// alignment of its lines to the 64-byte blocks.
    #[test]
    fn fast_pass_reads_nginx_head() {
        for shift in 0..70 {
            let mut r = NGINX_HEAD.to_vec();
            // A header of `shift` bytes more moves every later line.
            let filler = format!("X-Pad: {}\r\n", "p".repeat(shift));
            let at = r.len() - 2;
            r.splice(at..at, filler.bytes());
            let fast = parse_head_fast(&r).expect("the fast pass answers a plain head");
            assert_eq!(Ok(Some(fast)), parse_head_lines(&r), "shift {shift}");
            assert_eq!(fast.len, r.len());
            assert_eq!(
                (fast.status, fast.content_length, fast.keep_alive),
                (200, Some(4096), true)
            );
            // With a body after it, and bare LF line ends.
            r.extend_from_slice(b"body\nbytes\r\n\r\n");
            assert_eq!(parse_head_fast(&r), Some(fast));
            let lf: Vec<u8> = NGINX_HEAD.iter().copied().filter(|&b| b != b'\r').collect();
            assert_eq!(parse_head_fast(&lf).map(|h| h.len), Some(lf.len()));
        }
    }

    /// Lines longer than a block, acted on or not, at every alignment: the
    /// fast pass reads them itself, as the line parser does.
    #[test]
    fn fast_pass_reads_lines_longer_than_a_block() {
        let boundary = "b".repeat(90);
        let close = format!("x-{}, close", "t".repeat(80));
        for shift in 0..70 {
            let r = format!(
                "HTTP/1.1 200 OK\r\nX-Pad: {}\r\nContent-Type: multipart/mixed; boundary={boundary}\r\nContent-Length: 12\r\nConnection: {close}\r\n\r\n",
                "p".repeat(shift)
            );
            let fast = parse_head_fast(r.as_bytes()).expect("the fast pass answers long lines");
            assert_eq!(Ok(Some(fast)), parse_head_lines(r.as_bytes()), "shift {shift}");
            assert_eq!(
                (fast.content_length, fast.keep_alive, fast.len),
                (Some(12), false, r.len())
            );
        }
    }

    /// Heads the fast pass leaves to the line parser: it answers none of
    /// them wrongly (its answer, where it gives one, is the line parser's).
    #[test]
    fn fast_pass_defers_the_unusual() {
        let cases: &[&[u8]] = &[
            b"HTTP/1.1 200 OK\r\nX: y\r\n",                // incomplete
            b"HTTP/1.1 200 OK\r\nX: y\r\n\r",              // incomplete end
            b"HTTP/1.1 200 OK\r\nX: y\r\n folded\r\n\r\n", // obs-fold
            b"HTTP/1.1 200 OK\r\nNa\rme: y\r\n\r\n",       // CR in a name
            b"HTTP/1.1 200 OK\r\nX-A : y\r\n\r\n",         // space before colon
            b"HTTP/1.1 200 OK\r\nNoColon\r\n\r\n",
            b"HTTP/1.1 200 OK\r\n: v\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\ncontent-length: 2\r\n\r\n",
            b"HTTP/1.1 2000 OK\r\n\r\n",
            b"garbage\r\n\r\n",
        ];
        for c in cases {
            let fast = parse_head_fast(c);
            assert_eq!(fast, None, "{}", String::from_utf8_lossy(c));
            assert_eq!(parse_head(c), parse_head_lines(c));
        }
        // Names acted on in another case, and `Connection` lists, are read
        // by the fast pass itself.
        let r = b"HTTP/1.0 200 OK\r\ncontent-length:\t7 \r\nCONNECTION: x, Keep-Alive\r\nTransfer-Encoding: gzip, chunked\r\n\r\n";
        let fast = parse_head_fast(r).expect("fast");
        assert_eq!(Ok(Some(fast)), parse_head_lines(r));
        assert!(fast.keep_alive && fast.chunked);
    }

    /// A valid response, how it is framed, and the decoded body length.
    fn arb_response() -> impl Strategy<Value = (Vec<u8>, u64)> {
        let body = prop::collection::vec(any::<u8>(), 0..3000);
        let chunks = prop::collection::vec(1usize..700, 0..6);
        let headers = prop::collection::vec(("[A-Za-z][A-Za-z0-9-]{0,20}", "[ -~]{0,40}"), 0..8);
        (
            body,
            any::<bool>(),
            chunks,
            headers,
            any::<bool>(),
            any::<bool>(),
            any::<bool>(),
        )
            .prop_map(|(body, chunked, cuts, headers, crlf, interim, trailers)| {
                let eol: &[u8] = if crlf { b"\r\n" } else { b"\n" };
                let mut r = Vec::new();
                if interim {
                    r.extend_from_slice(b"HTTP/1.1 103 Early Hints");
                    r.extend_from_slice(eol);
                    r.extend_from_slice(b"Link: </x>");
                    r.extend_from_slice(eol);
                    r.extend_from_slice(eol);
                }
                r.extend_from_slice(b"HTTP/1.1 200 OK");
                r.extend_from_slice(eol);
                for (n, v) in &headers {
                    let lower = n.to_ascii_lowercase();
                    if ["content-length", "transfer-encoding", "connection"].contains(&lower.as_str()) {
                        continue;
                    }
                    r.extend_from_slice(format!("{n}: {}", v.trim()).as_bytes());
                    r.extend_from_slice(eol);
                }
                if chunked {
                    r.extend_from_slice(b"Transfer-Encoding: chunked");
                    r.extend_from_slice(eol);
                    r.extend_from_slice(eol);
                    let mut rest = &body[..];
                    let mut cuts = cuts.into_iter();
                    while !rest.is_empty() {
                        let n = cuts.next().unwrap_or(rest.len()).min(rest.len());
                        r.extend_from_slice(format!("{n:x};ext=1").as_bytes());
                        r.extend_from_slice(eol);
                        r.extend_from_slice(&rest[..n]);
                        r.extend_from_slice(eol);
                        rest = &rest[n..];
                    }
                    r.extend_from_slice(b"0");
                    r.extend_from_slice(eol);
                    if trailers {
                        r.extend_from_slice(b"X-Trailer: yes");
                        r.extend_from_slice(eol);
                    }
                    r.extend_from_slice(eol);
                } else {
                    r.extend_from_slice(format!("Content-Length: {}", body.len()).as_bytes());
                    r.extend_from_slice(eol);
                    r.extend_from_slice(eol);
                    r.extend_from_slice(&body);
                }
                (r, body.len() as u64)
            })
    }

    proptest! {
        /// Any valid response, split into reads of any size, frames to exactly
        /// its wire length and decoded body length.
        #[test]
        fn frames_exactly_at_any_split((r, body_len) in arb_response(), split in 1usize..5000) {
            let mut p = ResponseParser::new();
            prop_assert_eq!(feed_all(&mut p, &r, split), Ok(Feed::Done { consumed: r.len() }));
            prop_assert_eq!(p.wire_bytes(), r.len() as u64);
            prop_assert_eq!(p.body_bytes(), body_len);
        }

        /// A truncated valid response never completes and is never mistaken
        /// for a complete one at EOF.
        #[test]
        fn truncation_is_detected((r, _) in arb_response(), cut in any::<prop::sample::Index>()) {
            let cut = cut.index(r.len());
            let mut p = ResponseParser::new();
            prop_assert_eq!(p.feed(&r[..cut], None), Ok(Feed::NeedMore));
            prop_assert!(p.on_eof().is_err());
        }

        /// The one-pass parser never disagrees with the line parser: on any
        /// valid response, cut anywhere, and on bytes changed anywhere in it.
        #[test]
        fn fast_pass_agrees((r, _) in arb_response(), cut in any::<prop::sample::Index>(), at in any::<prop::sample::Index>(), byte in any::<u8>()) {
            let cut = &r[..cut.index(r.len() + 1)];
            if let Some(h) = parse_head_fast(cut) {
                prop_assert_eq!(Ok(Some(h)), parse_head_lines(cut));
            }
            prop_assert_eq!(parse_head(cut), parse_head_lines(cut));
            let mut changed = r.clone();
            let i = at.index(changed.len());
            changed[i] = byte;
            if let Some(h) = parse_head_fast(&changed) {
                prop_assert_eq!(Ok(Some(h)), parse_head_lines(&changed));
            }
        }

        /// A head answered from the memo is the head parsed: after a
        /// response, the same one again, one with a byte changed anywhere,
        /// cut anywhere, or another response altogether, each framed as a
        /// parser without the memo frames it (at any split).
        #[test]
        fn memo_agrees_with_the_parse(
            (first, _) in arb_response(),
            (other, _) in arb_response(),
            at in any::<prop::sample::Index>(),
            byte in any::<u8>(),
            cut in any::<prop::sample::Index>(),
            split in 1usize..600,
        ) {
            let mut changed = first.clone();
            let i = at.index(changed.len());
            changed[i] = byte;
            let cut = first[..cut.index(first.len() + 1)].to_vec();
            let mut memo = HeadMemo::default();
            for r in [&first, &first, &changed, &first, &cut, &other, &first] {
                let (mut with, mut without) = (ResponseParser::new(), ResponseParser::new());
                let (mut a, mut b) = (Ok(Feed::NeedMore), Ok(Feed::NeedMore));
                for piece in r.chunks(split) {
                    a = with.feed_with(piece, None, Some(&mut memo));
                    b = without.feed(piece, None);
                    prop_assert_eq!(a, b);
                    if a.is_err() || matches!(a, Ok(Feed::Done { .. })) {
                        break;
                    }
                }
                prop_assert_eq!(a, b);
                prop_assert_eq!(with.head(), without.head());
                prop_assert_eq!(with.wire_bytes(), without.wire_bytes());
                prop_assert_eq!(with.body_bytes(), without.body_bytes());
                prop_assert_eq!(with.on_eof(), without.on_eof());
            }
            // Whole heads are held, and only those under the bound, in the
            // buffer allocated at the start (a miss allocates nothing).
            prop_assert!(memo.bytes.len() <= HeadMemo::MAX);
            prop_assert_eq!(memo.bytes.capacity(), HeadMemo::MAX);
            if !memo.bytes.is_empty() {
                prop_assert_eq!(parse_head(&memo.bytes), Ok(Some(memo.head)));
                prop_assert_eq!(memo.head.len, memo.bytes.len());
            }
        }

        /// And on the names acted on in any case, with any byte changed,
        /// and their values as servers write them or not.
        #[test]
        fn fast_pass_agrees_on_names(
            which in 0usize..3,
            upper in prop::collection::vec(any::<bool>(), 17),
            change in prop::option::of((0usize..17, 0x21u8..0x7f)),
            value in prop::sample::select(vec!["keep-alive", "Keep-Alive", "close", "keep-alivf", "x, close", "12", "chunked", "gzip, chunked", " 7 ", "keep-alive, close"]),
        ) {
            let name = ["content-length", "transfer-encoding", "connection"][which];
            let mut name: Vec<u8> = name
                .bytes()
                .zip(&upper)
                .map(|(b, &u)| if u { b.to_ascii_uppercase() } else { b })
                .collect();
            if let Some((i, b)) = change {
                let i = i % name.len();
                name[i] = b;
            }
            let mut r = b"HTTP/1.1 200 OK\r\nServer: x\r\n".to_vec();
            r.extend_from_slice(&name);
            r.extend_from_slice(b": ");
            r.extend_from_slice(value.as_bytes());
            r.extend_from_slice(b"\r\n\r\n");
            if let Some(h) = parse_head_fast(&r) {
                prop_assert_eq!(Ok(Some(h)), parse_head_lines(&r));
            }
            prop_assert_eq!(parse_head(&r), parse_head_lines(&r));
        }

        /// And on arbitrary bytes after a status line.
        #[test]
        fn fast_pass_agrees_on_any_bytes(data in prop::collection::vec(prop::sample::select(b"\r\n: \taA-0Content-LengthConnection".to_vec()), 0..400)) {
            let mut r = b"HTTP/1.1 200 OK\r\n".to_vec();
            r.extend_from_slice(&data);
            if let Some(h) = parse_head_fast(&r) {
                prop_assert_eq!(Ok(Some(h)), parse_head_lines(&r));
            }
            prop_assert_eq!(parse_head(&r), parse_head_lines(&r));
        }

        /// Arbitrary bytes never panic and never claim more than was given.
        #[test]
        fn arbitrary_bytes_are_safe(data in prop::collection::vec(any::<u8>(), 0..2000), split in 1usize..300) {
            let mut p = ResponseParser::new();
            let mut given = 0usize;
            for piece in data.chunks(split) {
                match p.feed(piece, None) {
                    Ok(Feed::NeedMore) => given += piece.len(),
                    Ok(Feed::Done { consumed }) => {
                        prop_assert!(consumed <= piece.len());
                        given += consumed;
                        break;
                    }
                    Err(_) => {
                        given += piece.len();
                        break;
                    }
                }
            }
            prop_assert!(p.wire_bytes() <= given as u64);
        }
    }
}
