//! Reading a whole log: lines → counters and per-URL statistics.
//!
//! The reader fills a 1 MiB buffer and hands out complete lines as slices of
//! it, so no line is ever copied or allocated. URLs go into a hash map keyed
//! by their bytes; a key is allocated only the first time a URL is seen.

use crate::line::{parse_line, unescape, Entry, Malformed};
use memchr::{memchr, memchr_iter};
use std::borrow::Cow;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::io::{self, BufReader, Read};
use std::time::{Duration, Instant};

/// Size of the read buffer, and so the longest line that is parsed: a
/// longer line (or a file with no newline, as `/dev/zero`) is counted
/// malformed and skipped, never held whole.
pub const BUFFER_SIZE: usize = 1 << 20;

/// Text read without a single well-formed line after which the input is
/// taken for something other than an access log ([`LogScan::not_a_log`]):
/// `/dev/zero`, a binary, an image. No real log starts with 64 MiB of junk,
/// and the reading stops instead of going on for as long as the input does.
pub const NOT_A_LOG_BYTES: u64 = 64 << 20;

/// How many malformed lines are kept to show (the rest are only counted).
pub const MALFORMED_SAMPLE: usize = 5;

/// Longest excerpt of a malformed line kept for the report, in characters.
pub const MALFORMED_EXCERPT_CHARS: usize = 200;

/// Distinct non-GET methods reported by name; the rest are lumped together.
const METHODS_TRACKED: usize = 16;

/// Options that change what is counted as the same URL.
#[derive(Debug, Clone, Copy, Default)]
pub struct ScanOptions {
    /// Cut the query string (`?…`) so `/a?x=1` and `/a?x=2` count as `/a`.
    pub strip_query: bool,
}

/// A malformed line kept to show: its number (from 1), why, and its start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MalformedLine {
    pub line: u64,
    pub reason: Malformed,
    /// At most [`MALFORMED_EXCERPT_CHARS`] characters, invalid UTF-8 replaced.
    pub excerpt: String,
}

/// Requests for one URL, from successful GETs.
#[derive(Debug, Clone, Default)]
pub struct UrlStats {
    /// Successful GETs (2xx and 304).
    pub requests: u64,
    /// Body bytes logged for them (`-` counts as 0).
    pub bytes: u64,
    sizes: SizeTally,
}

impl UrlStats {
    /// The most frequent body size of the URL's `200` responses (ties: the
    /// smaller size), or `None` when it never had a `200` with a size.
    pub fn size(&self) -> Option<u64> {
        self.sizes.mode()
    }

    pub(crate) fn merge(&mut self, other: UrlStats) {
        self.requests += other.requests;
        self.bytes += other.bytes;
        for (size, count) in other.sizes.into_counts() {
            self.sizes.add(size, count);
        }
    }

    #[cfg(test)]
    pub(crate) fn with(requests: u64, bytes: u64, size: Option<u64>) -> Self {
        let mut s = UrlStats {
            requests,
            bytes,
            sizes: SizeTally::None,
        };
        if let Some(size) = size {
            s.sizes.add(size, 1);
        }
        s
    }
}

/// Sizes seen for a URL's `200` responses. Almost every URL of a static
/// site has one size, so that case is stored inline; a URL with several
/// sizes (a page that changed, a dynamic page) gets a small list. The list is
/// exact up to [`SizeTally::EXACT`] distinct sizes; past that it becomes a
/// Misra–Gries summary (a new size lowers every count by one), which still
/// always keeps any size seen in more than 1/(EXACT+1) of the responses, so
/// the memory per URL stays bounded however dynamic the page is.
#[derive(Debug, Clone, Default)]
enum SizeTally {
    #[default]
    None,
    One(u64, u64),
    Many(Vec<(u64, u64)>),
}

impl SizeTally {
    const EXACT: usize = 16;

    fn add(&mut self, size: u64, count: u64) {
        match self {
            SizeTally::None => *self = SizeTally::One(size, count),
            SizeTally::One(s, c) if *s == size => *c += count,
            SizeTally::One(s, c) => *self = SizeTally::Many(vec![(*s, *c), (size, count)]),
            SizeTally::Many(list) => {
                if let Some(e) = list.iter_mut().find(|e| e.0 == size) {
                    e.1 += count;
                } else if list.len() < Self::EXACT {
                    list.push((size, count));
                } else {
                    let least = list.iter().map(|e| e.1).min().unwrap_or(0).min(count);
                    list.iter_mut().for_each(|e| e.1 -= least);
                    list.retain(|e| e.1 > 0);
                    if count > least {
                        list.push((size, count - least));
                    }
                }
            }
        }
    }

    fn mode(&self) -> Option<u64> {
        match self {
            SizeTally::None => None,
            SizeTally::One(s, _) => Some(*s),
            SizeTally::Many(list) => list
                .iter()
                .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)))
                .map(|e| e.0),
        }
    }

    fn into_counts(self) -> Vec<(u64, u64)> {
        match self {
            SizeTally::None => Vec::new(),
            SizeTally::One(s, c) => vec![(s, c)],
            SizeTally::Many(list) => list,
        }
    }
}

/// Hashes a URL's bytes with XXH3 (fast on short keys, good quality, already
/// a workspace dependency). The slice's length prefix is ignored: XXH3 mixes
/// the length in itself, and one call per key is all a `[u8]` key makes.
#[derive(Debug, Default, Clone, Copy)]
pub struct UrlHasher(u64);

impl Hasher for UrlHasher {
    fn write(&mut self, bytes: &[u8]) {
        self.0 = self.0.rotate_left(29) ^ xxhash_rust::xxh3::xxh3_64(bytes);
    }
    fn write_usize(&mut self, _len: usize) {}
    fn finish(&self) -> u64 {
        self.0
    }
}

/// URL → statistics, with the fast hasher.
pub type UrlMap = HashMap<Box<[u8]>, UrlStats, BuildHasherDefault<UrlHasher>>;

/// Everything counted over a log.
#[derive(Debug, Default)]
pub struct LogScan {
    pub lines: u64,
    pub malformed: u64,
    /// The first [`MALFORMED_SAMPLE`] malformed lines.
    pub malformed_sample: Vec<MalformedLine>,
    /// Lines with another method than GET.
    pub non_get: u64,
    /// Non-GET methods by name (the first 16 distinct names that look like a
    /// method; `- (no request line)` for Apache's `"-"`), then `(other)`,
    /// most frequent first after [`LogScan::finish`].
    pub methods: Vec<(String, u64)>,
    /// GETs whose status is not a success, by class: index 0 for 1xx, 1 for
    /// 3xx other than 304, 2 for 4xx, 3 for 5xx, 4 for anything else.
    pub other_status: [u64; 5],
    /// Successful GETs: 2xx and 304.
    pub ok_gets: u64,
    /// Of those, 304 Not Modified.
    pub not_modified: u64,
    /// Body bytes of successful GETs.
    pub ok_bytes: u64,
    /// Of the successful GETs, those logged with an absolute URL (a proxy's
    /// `GET http://host/p HTTP/1.1`): counted under their path, `/p`,
    /// because a workload's URLs are paths on its target.
    pub absolute_reduced: u64,
    /// Successful GETs whose target is no URL at all (the asterisk form
    /// `*`, an authority `host:443`, junk): skipped, not counted in
    /// [`LogScan::ok_gets`].
    pub not_urls: u64,
    /// Set when [`NOT_A_LOG_BYTES`] of text held no well-formed line: the
    /// reading stopped there.
    pub not_a_log: bool,
    /// Per URL, successful GETs only.
    pub urls: UrlMap,
    /// Bytes of log text parsed (decompressed for gzip).
    pub text_bytes: u64,
    /// Bytes read from the file: equal to `text_bytes` for a plain log.
    pub file_bytes: u64,
    pub gzip: bool,
    /// Time spent reading and parsing.
    pub elapsed: Duration,
    /// Set when a gzip stream could not be read to its end (a log copied
    /// while it was written, a corrupt member): what was read before counts.
    pub truncated: Option<String>,
    options: ScanOptions,
    scratch: Vec<u8>,
}

/// Labels of [`LogScan::other_status`].
pub const OTHER_STATUS_CLASSES: [&str; 5] = ["1xx", "3xx (not 304)", "4xx", "5xx", "other"];

impl LogScan {
    pub fn new(options: ScanOptions) -> Self {
        LogScan {
            options,
            ..LogScan::default()
        }
    }

    /// Counts one line (without its `\n`).
    pub fn line(&mut self, line: &[u8]) {
        self.lines += 1;
        match parse_line(line) {
            Ok(e) => self.entry(e, line),
            Err(m) => self.malformed(m, line),
        }
    }

    fn entry(&mut self, e: Entry<'_>, line: &[u8]) {
        if e.method != b"GET" {
            self.non_get += 1;
            self.count_method(e.method);
            return;
        }
        if !(200..300).contains(&e.status) && e.status != 304 {
            let class = match e.status {
                100..=199 => 0,
                300..=399 => 1,
                400..=499 => 2,
                500..=599 => 3,
                _ => 4,
            };
            self.other_status[class] += 1;
            return;
        }
        // A workload's URLs are paths on its target: an absolute URL (a
        // proxy's log) counts under its path; anything else that is not a
        // path is no URL to request.
        let target: Cow<'_, [u8]> = match e.target.first() {
            Some(b'/') | None => Cow::Borrowed(e.target),
            Some(_) => match after_authority(e.target) {
                Some(rest) => {
                    self.absolute_reduced += 1;
                    match rest.first() {
                        Some(b'/') => Cow::Borrowed(rest),
                        // `http://host` is the root; `http://host?q` the
                        // root with its query (rare: one allocation).
                        None => Cow::Borrowed(b"/"),
                        Some(_) => Cow::Owned([&b"/"[..], rest].concat()),
                    }
                }
                None => {
                    self.not_urls += 1;
                    return;
                }
            },
        };
        let mut key: &[u8] = &target;
        if self.options.strip_query {
            if let Some(q) = memchr(b'?', key) {
                key = &key[..q];
            }
        }
        if key.is_empty() {
            self.malformed(Malformed::NoUrl, line);
            return;
        }
        if memchr(b'\\', key).is_some() {
            unescape(key, &mut self.scratch);
            key = &self.scratch;
        }
        self.ok_gets += 1;
        self.not_modified += u64::from(e.status == 304);
        let bytes = e.bytes.unwrap_or(0);
        self.ok_bytes += bytes;
        let size = if e.status == 200 { e.bytes } else { None };
        let stats = match self.urls.get_mut(key) {
            Some(s) => s,
            None => self.urls.entry(key.into()).or_default(),
        };
        stats.requests += 1;
        stats.bytes += bytes;
        if let Some(size) = size {
            stats.sizes.add(size, 1);
        }
    }

    fn count_method(&mut self, method: &[u8]) {
        // Apache logs `-` for a connection that sent no request line.
        let method: &[u8] = if method == b"-" { b"- (no request line)" } else { method };
        if let Some(m) = self.methods.iter_mut().find(|m| m.0.as_bytes() == method) {
            m.1 += 1;
            return;
        }
        // Junk (a TLS handshake on a plain port) is not worth a name each.
        let looks_like_method = method.starts_with(b"- ")
            || !method.is_empty()
                && method.len() <= 24
                && method
                    .iter()
                    .all(|b| b.is_ascii_uppercase() || *b == b'-' || *b == b'_');
        if looks_like_method && self.methods.len() < METHODS_TRACKED {
            self.methods.push((String::from_utf8_lossy(method).into_owned(), 1));
        } else if let Some(m) = self.methods.iter_mut().find(|m| m.0 == "(other)") {
            m.1 += 1;
        } else {
            self.methods.push(("(other)".to_owned(), 1));
        }
    }

    fn malformed(&mut self, reason: Malformed, line: &[u8]) {
        self.malformed += 1;
        if self.malformed_sample.len() < MALFORMED_SAMPLE {
            let head = &line[..line.len().min(MALFORMED_EXCERPT_CHARS * 4)];
            let excerpt = String::from_utf8_lossy(head)
                .chars()
                .take(MALFORMED_EXCERPT_CHARS)
                .collect();
            self.malformed_sample.push(MalformedLine {
                line: self.lines,
                reason,
                excerpt,
            });
        }
    }

    /// Reads the whole log from `reader` (plain or gzip, told apart by the
    /// gzip magic bytes), counting every line. A read error of a plain log
    /// is returned; a gzip stream that breaks off is recorded in
    /// [`LogScan::truncated`] and the lines before it count.
    pub fn read<R: Read>(&mut self, reader: R) -> io::Result<()> {
        let start = Instant::now();
        let mut counted = CountingReader {
            inner: reader,
            bytes: 0,
            error: false,
        };
        // Peek at the first two bytes without a BufReader in the way: a plain
        // log is then read straight into the line buffer, copied once.
        let mut magic = [0u8; 2];
        let mut got = 0;
        while got < magic.len() {
            match counted.read(&mut magic[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        self.gzip = magic == [0x1f, 0x8b];
        let input = io::Cursor::new(&magic[..got]).chain(&mut counted);
        let result = if self.gzip {
            let compressed = BufReader::with_capacity(BUFFER_SIZE, input);
            self.read_lines(flate2::bufread::MultiGzDecoder::new(compressed))
        } else {
            self.read_lines(input)
        };
        match result {
            Ok(()) => {}
            // The decoder failed, not the file: keep what was read.
            Err(e) if self.gzip && !counted.error => self.truncated = Some(e.to_string()),
            Err(e) => return Err(e),
        }
        self.file_bytes = counted.bytes;
        self.elapsed = start.elapsed();
        Ok(())
    }

    /// Splits the stream into lines inside one buffer. A partial last line
    /// is moved to the front and completed by the next read; a line that
    /// fills the whole buffer is counted malformed and skipped to its end.
    fn read_lines<R: Read>(&mut self, mut input: R) -> io::Result<()> {
        let mut buf = vec![0u8; BUFFER_SIZE];
        // Bytes of an incomplete line at the front of `buf`.
        let mut filled = 0;
        // Inside a too-long line: drop bytes up to its newline. `filled` is
        // then always 0.
        let mut skipping = false;
        loop {
            let n = match input.read(&mut buf[filled..]) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    // Count the incomplete last line read so far, then report.
                    self.lines_in(&buf[..filled], true);
                    return Err(e);
                }
            };
            if n == 0 {
                self.lines_in(&buf[..filled], true);
                return Ok(());
            }
            self.text_bytes += n as u64;
            if self.text_bytes >= NOT_A_LOG_BYTES && self.malformed == self.lines {
                // Not one well-formed line yet, after far more text than any
                // log's junk: stop rather than read /dev/zero for ever.
                self.not_a_log = true;
                return Ok(());
            }
            let end = filled + n;
            let mut from = 0;
            if skipping {
                match memchr(b'\n', &buf[..end]) {
                    Some(i) => {
                        skipping = false;
                        from = i + 1;
                    }
                    None => continue,
                }
            }
            let used = from + self.lines_in(&buf[from..end], false);
            buf.copy_within(used..end, 0);
            filled = end - used;
            if filled == buf.len() {
                self.lines += 1;
                self.malformed(Malformed::TooLong, &buf[..MALFORMED_EXCERPT_CHARS * 4]);
                skipping = true;
                filled = 0;
            }
        }
    }

    /// Counts the complete lines in `data`; with `last`, the remainder too
    /// (the last line of a file need not end with `\n`). Returns the bytes
    /// consumed.
    fn lines_in(&mut self, data: &[u8], last: bool) -> usize {
        let mut start = 0;
        for nl in memchr_iter(b'\n', data) {
            self.line(&data[start..nl]);
            start = nl + 1;
        }
        if last && start < data.len() {
            self.line(&data[start..]);
            start = data.len();
        }
        start
    }

    /// Orders the method counts for the report, most frequent first.
    pub fn finish(&mut self) {
        self.methods.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        self.scratch = Vec::new();
    }

    /// Log text parsed per second, in MB (10^6 bytes).
    pub fn text_rate_mb_s(&self) -> f64 {
        rate(self.text_bytes, self.elapsed)
    }

    /// Bytes read from the file per second, in MB (the gzip rate).
    pub fn file_rate_mb_s(&self) -> f64 {
        rate(self.file_bytes, self.elapsed)
    }
}

/// What follows the authority of an absolute `http://` or `https://` URL
/// (scheme case-insensitive): its path and query, empty for `http://host`;
/// `None` when `target` is no absolute HTTP URL.
fn after_authority(target: &[u8]) -> Option<&[u8]> {
    let scheme = if target.len() >= 7 && target[..7].eq_ignore_ascii_case(b"http://") {
        7
    } else if target.len() >= 8 && target[..8].eq_ignore_ascii_case(b"https://") {
        8
    } else {
        return None;
    };
    let rest = &target[scheme..];
    let end = rest.iter().position(|&b| b == b'/' || b == b'?').unwrap_or(rest.len());
    if end == 0 {
        // `http:///p` names no host.
        return None;
    }
    Some(&rest[end..])
}

fn rate(bytes: u64, elapsed: Duration) -> f64 {
    bytes as f64 / 1e6 / elapsed.as_secs_f64().max(1e-9)
}

/// Counts the bytes read from the file and remembers whether the file
/// itself failed, which tells a broken disk (fatal) from a broken gzip
/// stream (what was read counts).
struct CountingReader<R> {
    inner: R,
    bytes: u64,
    error: bool,
}

impl<R: Read> Read for CountingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self.inner.read(buf) {
            Ok(n) => {
                self.bytes += n as u64;
                Ok(n)
            }
            Err(e) => {
                if e.kind() != io::ErrorKind::Interrupted {
                    self.error = true;
                }
                Err(e)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(text: &[u8], options: ScanOptions) -> LogScan {
        let mut s = LogScan::new(options);
        match s.read(text) {
            Ok(()) => {}
            Err(e) => panic!("{e}"),
        }
        s.finish();
        s
    }

    const LOG: &str = concat!(
        "h - - [d] \"GET /a HTTP/1.1\" 200 100\n",
        "h - - [d] \"GET /a HTTP/1.1\" 304 -\n",
        "h - - [d] \"GET /b?x=1 HTTP/1.1\" 200 50 \"-\" \"ua\"\n",
        "not a log line\n",
        "h - - [d] \"POST /a HTTP/1.1\" 200 3\n",
        "h - - [d] \"GET /b?x=2 HTTP/1.1\" 404 9\n",
        "h - - [d] \"HEAD /a HTTP/1.1\" 200 -\n",
        "\n",
        "h - - [d] \"GET /b?x=2 HTTP/1.1\" 206 7\n",
        "h - - [d] \"\\x16\\x03\\x01\" 400 226\n",
        "h - - [d] \"GET /q\\\"x HTTP/1.1\" 200 1", // no final newline
    );

    #[test]
    fn counts_a_small_log() {
        let s = scan(LOG.as_bytes(), ScanOptions::default());
        assert_eq!(s.lines, 11);
        assert_eq!(s.malformed, 2);
        let nums: Vec<u64> = s.malformed_sample.iter().map(|m| m.line).collect();
        assert_eq!(nums, [4, 8]);
        assert_eq!(s.malformed_sample[0].reason, Malformed::NoDate);
        assert_eq!(s.malformed_sample[0].excerpt, "not a log line");
        assert_eq!(s.non_get, 3);
        assert_eq!(
            s.methods,
            [
                ("(other)".to_owned(), 1),
                ("HEAD".to_owned(), 1),
                ("POST".to_owned(), 1)
            ]
        );
        assert_eq!(s.other_status, [0, 0, 1, 0, 0]);
        assert_eq!(s.ok_gets, 5);
        assert_eq!(s.not_modified, 1);
        assert_eq!(s.ok_bytes, 100 + 50 + 7 + 1);
        assert_eq!(s.urls.len(), 4);
        let a = &s.urls[&b"/a"[..]];
        assert_eq!((a.requests, a.bytes, a.size()), (2, 100, Some(100)));
        // 206 counts as a request but its partial size is not the size.
        let b2 = &s.urls[&b"/b?x=2"[..]];
        assert_eq!((b2.requests, b2.size()), (1, None));
        assert!(s.urls.contains_key(&br#"/q"x"#[..]));
        assert!(!s.gzip);
        assert_eq!(s.text_bytes, LOG.len() as u64);
    }

    /// A proxy's log: absolute URLs count under their paths (whatever the
    /// host), `*` and `host:port` are no URL and are skipped.
    #[test]
    fn absolute_urls_are_reduced_to_paths() {
        let log = concat!(
            "h - - [d] \"GET http://other.example/p?q=1 HTTP/1.1\" 200 10\n",
            "h - - [d] \"GET HTTPS://third:8443/p?q=1 HTTP/1.1\" 200 10\n",
            "h - - [d] \"GET /p?q=1 HTTP/1.1\" 200 10\n",
            "h - - [d] \"GET http://other.example HTTP/1.1\" 200 5\n",
            "h - - [d] \"GET http://other.example?x HTTP/1.1\" 200 5\n",
            "h - - [d] \"GET * HTTP/1.1\" 200 0\n",
            "h - - [d] \"GET other.example:443 HTTP/1.1\" 200 0\n",
            "h - - [d] \"GET http:///nohost HTTP/1.1\" 200 0\n",
            "h - - [d] \"CONNECT other.example:443 HTTP/1.1\" 200 0\n",
        );
        let s = scan(log.as_bytes(), ScanOptions::default());
        assert_eq!((s.absolute_reduced, s.not_urls, s.ok_gets, s.non_get), (4, 3, 5, 1));
        let mut keys: Vec<(&[u8], u64)> = s.urls.iter().map(|(k, v)| (&k[..], v.requests)).collect();
        keys.sort();
        assert_eq!(keys, [(&b"/"[..], 1), (&b"/?x"[..], 1), (&b"/p?q=1"[..], 3)]);
        let s = scan(log.as_bytes(), ScanOptions { strip_query: true });
        assert_eq!(s.urls[&b"/p"[..]].requests, 3);
        assert_eq!(s.urls[&b"/"[..]].requests, 2);
    }

    /// Endless text with no well-formed line (`/dev/zero`) stops after
    /// NOT_A_LOG_BYTES, holding one buffer, not the whole input.
    #[test]
    fn endless_junk_is_not_a_log() {
        let zeros = io::repeat(0).take(NOT_A_LOG_BYTES * 4);
        let mut s = LogScan::new(ScanOptions::default());
        s.read(zeros).expect("reading zeros");
        assert!(s.not_a_log);
        assert!(s.text_bytes >= NOT_A_LOG_BYTES && s.text_bytes < NOT_A_LOG_BYTES + BUFFER_SIZE as u64);
        assert_eq!((s.lines, s.malformed), (1, 1));
        // One good line first: the same junk is a (long) malformed line.
        let mut s = LogScan::new(ScanOptions::default());
        let good = &b"h - - [d] \"GET /a HTTP/1.1\" 200 1\n"[..];
        s.read(good.chain(io::repeat(0).take(NOT_A_LOG_BYTES + 10)))
            .expect("reading");
        assert!(!s.not_a_log);
        assert_eq!((s.ok_gets, s.malformed), (1, 1));
    }

    #[test]
    fn strip_query_merges() {
        let s = scan(LOG.as_bytes(), ScanOptions { strip_query: true });
        assert_eq!(s.urls[&b"/b"[..]].requests, 2);
        assert_eq!(s.urls.len(), 3);
    }

    #[test]
    fn gzip_is_detected_and_equal() {
        use flate2::write::GzEncoder;
        use std::io::Write;
        let mut gz = GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(LOG.as_bytes()).expect("gzip to memory");
        let mut data = gz.finish().expect("gzip to memory");
        // A second member, as `cat a.gz b.gz` makes.
        let mut gz2 = GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz2.write_all(b"\nh - - [d] \"GET /c HTTP/1.0\" 200 5\n")
            .expect("gzip to memory");
        data.extend(gz2.finish().expect("gzip to memory"));
        let s = scan(&data, ScanOptions::default());
        assert!(s.gzip);
        assert_eq!(s.file_bytes, data.len() as u64);
        assert_eq!(s.lines, 12);
        assert_eq!(s.ok_gets, 6);
        assert!(s.truncated.is_none());

        // Cut the stream: the lines before the cut still count.
        let s = scan(&data[..data.len() / 2], ScanOptions::default());
        assert!(s.truncated.is_some());
    }

    #[test]
    fn lines_across_buffer_refills_and_too_long() {
        let line = "h - - [d] \"GET /x HTTP/1.1\" 200 10\n";
        let mut text = String::new();
        while text.len() < BUFFER_SIZE * 2 + 100 {
            text.push_str(line);
        }
        let before = text.len() / line.len();
        text.push_str("h - - [d] \"GET /");
        text.push_str(&"y".repeat(BUFFER_SIZE + 10));
        text.push_str(" HTTP/1.1\" 200 1\n");
        text.push_str(line);
        text.push_str(line);
        let s = scan(text.as_bytes(), ScanOptions::default());
        assert_eq!(s.lines, before as u64 + 3);
        assert_eq!(s.malformed, 1);
        assert_eq!(s.malformed_sample[0].reason, Malformed::TooLong);
        assert_eq!(s.malformed_sample[0].line, before as u64 + 1);
        assert_eq!(s.malformed_sample[0].excerpt.chars().count(), MALFORMED_EXCERPT_CHARS);
        assert_eq!(s.urls[&b"/x"[..]].requests, before as u64 + 2);
    }

    #[test]
    fn size_mode_and_misra_gries() {
        let mut t = SizeTally::default();
        assert_eq!(t.mode(), None);
        for (s, c) in [(10, 2), (20, 3), (10, 2)] {
            t.add(s, c);
        }
        assert_eq!(t.mode(), Some(10));
        // A tie goes to the smaller size.
        let mut t = SizeTally::default();
        t.add(7, 1);
        t.add(5, 1);
        assert_eq!(t.mode(), Some(5));
        // Many distinct sizes: a size in more than 1/17 of the responses
        // survives.
        let mut t = SizeTally::default();
        for i in 0..1000u64 {
            t.add(if i % 5 == 0 { 4096 } else { 1_000_000 + i }, 1);
        }
        assert_eq!(t.mode(), Some(4096));
    }
}
