//! HTML-like document content, generated from a seed.
//!
//! A benchmark file must not be zeros or one repeated block: a server, a
//! proxy or a disk that compresses or deduplicates would then look faster
//! than it is. The content here is word-level text with HTML structure
//! (title, headings, paragraphs, lists, inline markup), so it compresses
//! about as well as ordinary web pages do, and every file differs.
//!
//! It must also be fast (a million files are generated in one go) and the
//! same on every machine. So there is no per-byte randomness: each 64-bit
//! draw of [`SplitMix64`] is cut into eight 8-bit picks, and a pick chooses a
//! whole word (or markup fragment) from a fixed 256-entry table, or a block
//! shape, or a block length. The table, the draw order and the rules below
//! are part of the file-set format: changing any of them changes every
//! checksum (the golden tests catch that).
//!
//! Layout of a document of `size` bytes, for a content seed `s`:
//! 1. A stream is produced from `SplitMix64::new(s)`: the head
//!    `<!DOCTYPE html>\n<html><head><title>` + 3–8 words +
//!    `</title></head>\n<body>\n`, then blocks until the stream holds at
//!    least `size` bytes. A block is chosen by the low 4 bits of a pick:
//!    0 → `<h2>` 2–17 words `</h2>\n`; 1 → a `<ul>` list of 2–9 items of
//!    2–9 words; 2 → `<blockquote><p>` 4–19 words `</p></blockquote>\n`;
//!    otherwise `<p>` 8–71 words `</p>\n`. Words are separated by one space.
//! 2. If `size` is at least the head's length plus the length of
//!    `</body></html>\n`, the stream is cut to `size` − 15 bytes and
//!    `</body></html>\n` appended; otherwise it is cut to `size` bytes.
//!
//! The output is ASCII; generation runs at about 2.7 GB/s per core on the
//! 2-core development box, 1.5 µs a 4 KB page (the ignored `fill_speed`
//! test measures it): words are copied as fixed 16-byte slots.

use benchlab_rng::SplitMix64;
use std::mem::MaybeUninit;

const HEAD_START: &[u8] = b"<!DOCTYPE html>\n<html><head><title>";
const HEAD_END: &[u8] = b"</title></head>\n<body>\n";
/// Ends every document that is large enough to hold it.
pub const TRAILER: &[u8] = b"</body></html>\n";

/// Words and inline markup a pick chooses from; an array of exactly 256 so
/// that a `u8` indexes it without a bounds check and with no bias.
#[rustfmt::skip]
const WORD_TABLE: [&str; 256] = [
    "server", "client", "request", "response", "bytes", "latency", "throughput", "cache", "thread", "<b>server</b>",
    "network", "page", "file", "load", "benchmark", "socket", "kernel", "protocol", "header", "<em>request</em>",
    "browser", "document", "the", "of", "and", "to", "in", "is", "that", "<a href=\"/index.html\">index</a>", "for",
    "it", "as", "was", "with", "be", "by", "on", "not", "<a href=\"/news/\">news</a>", "he", "this", "are", "or",
    "his", "from", "at", "which", "but", "<code>GET</code>", "have", "an", "they", "you", "were", "her", "she",
    "there", "been", "<i>cache</i>", "one", "all", "we", "their", "has", "would", "when", "if", "so",
    "<strong>load</strong>", "no", "what", "can", "more", "will", "other", "about", "up", "out", "<br>\n", "them",
    "into", "could", "then", "some", "do", "only", "time", "these", "page.", "two", "may", "first", "any", "like",
    "now", "my", "such", "our", "file.", "over", "man", "me", "even", "most", "made", "after", "also", "did",
    "client.", "many", "before", "must", "through", "back", "years", "where", "much", "your", "network.", "way",
    "well", "down", "should", "because", "each", "just", "those", "people", "time.", "how", "too", "little", "state",
    "good", "very", "make", "world", "still", "data.", "own", "see", "men", "work", "long", "get", "here", "between",
    "both", "system,", "life", "being", "under", "never", "day", "same", "another", "know", "while", "work,", "last",
    "might", "great", "old", "year", "off", "come", "since", "against", "test,", "go", "came", "right", "used", "take",
    "three", "states", "himself", "few", "results,", "house", "use", "during", "without", "again", "place", "around",
    "however", "home", "&amp;", "small", "found", "thought", "went", "say", "part", "once", "general", "high",
    "&mdash;", "upon", "school", "every", "does", "got", "united", "left", "number", "course", "(see below)", "war",
    "until", "always", "away", "something", "fact", "though", "water", "less", "<span class=\"n\">42</span>", "public",
    "put", "think", "almost", "hand", "enough", "far", "took", "head", "<a href=\"/about.html\">about</a>", "yet",
    "government", "system", "better", "set", "told", "nothing", "night", "end",
    "<abbr title=\"HyperText Transfer Protocol\">HTTP</abbr>", "why", "called", "eyes", "find", "going", "look",
    "asked", "later", "knew", "point", "next", "program", "city", "business", "give", "group",
];
static WORDS: [&str; 256] = WORD_TABLE;

/// Bytes every word is copied as: a fixed-size copy is one move, where a
/// copy of the word's own length is a call to `memcpy`, and a 4 KB page
/// has some 700 words. Longer entries (a few links) are copied as they are.
const SLOT: usize = 16;

/// [`WORDS`] padded to [`SLOT`] bytes with their lengths (0 for an entry
/// longer than a slot).
static SLOTS: ([[u8; SLOT]; 256], [u8; 256]) = slots();

const fn slots() -> ([[u8; SLOT]; 256], [u8; 256]) {
    let (mut t, mut lens) = ([[0u8; SLOT]; 256], [0u8; 256]);
    let mut i = 0;
    while i < 256 {
        let w = WORD_TABLE[i].as_bytes();
        if w.len() <= SLOT {
            let mut j = 0;
            while j < w.len() {
                t[i][j] = w[j];
                j += 1;
            }
            lens[i] = w.len() as u8;
        }
        i += 1;
    }
    (t, lens)
}

/// The most one block can add to a stream, a slot's overhang included: a
/// list of 9 items of 9 of the longest entries (54 bytes with its space)
/// is about 4.5 KB.
const MAX_BLOCK: usize = 8192;

/// Writes a document into the spare capacity of a `Vec`: every byte below
/// `pos` has been written.
struct Writer<'a> {
    spare: &'a mut [MaybeUninit<u8>],
    pos: usize,
}

impl Writer<'_> {
    #[inline]
    fn put(&mut self, b: &[u8]) {
        for (d, s) in self.spare[self.pos..self.pos + b.len()].iter_mut().zip(b) {
            d.write(*s);
        }
        self.pos += b.len();
    }

    #[inline]
    fn byte(&mut self, b: u8) {
        self.spare[self.pos].write(b);
        self.pos += 1;
    }

    #[inline]
    fn word(&mut self, w: u8) {
        let len = SLOTS.1[w as usize] as usize;
        if len == 0 {
            return self.put(WORDS[w as usize].as_bytes());
        }
        let slot = &SLOTS.0[w as usize];
        for (d, s) in self.spare[self.pos..self.pos + SLOT].iter_mut().zip(slot) {
            d.write(*s);
        }
        self.pos += len;
    }
}

/// 8-bit picks cut from 64-bit draws, low byte first.
struct Picks {
    rng: SplitMix64,
    bits: u64,
    left: u32,
}

impl Picks {
    fn new(seed: u64) -> Picks {
        Picks {
            rng: SplitMix64::new(seed),
            bits: 0,
            left: 0,
        }
    }

    #[inline]
    fn next(&mut self) -> u8 {
        if self.left == 0 {
            self.bits = self.rng.next_u64();
            self.left = 8;
        }
        let b = self.bits as u8;
        self.bits >>= 8;
        self.left -= 1;
        b
    }

    /// `n` words separated by single spaces.
    #[inline]
    fn words(&mut self, n: u8, out: &mut Writer<'_>) {
        for i in 0..n {
            if i > 0 {
                out.byte(b' ');
            }
            out.word(self.next());
        }
    }
}

/// Replaces `out` with the document of exactly `size` bytes for content
/// seed `seed` (see the module documentation for the rules).
///
/// `out` is reused across calls so that generating many files allocates
/// only when a larger file comes along.
pub fn fill(seed: u64, size: usize, out: &mut Vec<u8>) {
    out.clear();
    // The stream stops within one block past `size`, so this is room for
    // all of it (see MAX_BLOCK).
    out.reserve(size + MAX_BLOCK);
    let mut p = Picks::new(seed);
    let mut w = Writer {
        spare: out.spare_capacity_mut(),
        pos: 0,
    };
    w.put(HEAD_START);
    let n = 3 + p.next() % 6;
    p.words(n, &mut w);
    w.put(HEAD_END);
    let head = w.pos;
    while w.pos < size {
        let b = p.next();
        match b & 15 {
            0 => {
                w.put(b"<h2>");
                p.words(2 + (b >> 4), &mut w);
                w.put(b"</h2>\n");
            }
            1 => {
                w.put(b"<ul>\n");
                for _ in 0..2 + (b >> 4) % 8 {
                    w.put(b"<li>");
                    let n = 2 + p.next() % 8;
                    p.words(n, &mut w);
                    w.put(b"</li>\n");
                }
                w.put(b"</ul>\n");
            }
            2 => {
                w.put(b"<blockquote><p>");
                p.words(4 + (b >> 4), &mut w);
                w.put(b"</p></blockquote>\n");
            }
            _ => {
                w.put(b"<p>");
                let n = 8 + p.next() % 64;
                p.words(n, &mut w);
                w.put(b"</p>\n");
            }
        }
    }
    let written = w.pos;
    // SAFETY: the writer wrote every byte below `written`, inside the
    // capacity reserved above (a slice of the spare capacity cannot reach
    // past it: an overrun would have panicked on the bounds check).
    unsafe { out.set_len(written) };
    if size >= head + TRAILER.len() {
        out.truncate(size - TRAILER.len());
        out.extend_from_slice(TRAILER);
    } else {
        out.truncate(size);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_sizes_and_html_shape() {
        let mut buf = Vec::new();
        for size in [0usize, 1, 50, 102, 205, 4096, 8192, 921_600] {
            fill(7, size, &mut buf);
            assert_eq!(buf.len(), size);
            assert!(buf.is_ascii());
            if size >= 200 {
                assert!(buf.starts_with(b"<!DOCTYPE html>\n<html><head><title>"));
                assert!(buf.ends_with(TRAILER), "size {size}");
            }
        }
        fill(7, 4096, &mut buf);
        let text = String::from_utf8(buf.clone()).unwrap();
        assert!(text.contains("<p>") && text.contains("</p>\n"), "{text}");
    }

    #[test]
    fn a_smaller_file_is_a_prefix_of_a_larger_one_before_the_trailer() {
        // The stream does not depend on the size, only where it is cut:
        // this is what lets two sizes of one seed share their text.
        let (mut a, mut b) = (Vec::new(), Vec::new());
        fill(3, 1000, &mut a);
        fill(3, 5000, &mut b);
        assert_eq!(a[..1000 - TRAILER.len()], b[..1000 - TRAILER.len()]);
    }

    #[test]
    fn seeds_give_different_content_and_the_content_is_not_trivially_compressible() {
        let (mut a, mut b) = (Vec::new(), Vec::new());
        fill(1, 65_536, &mut a);
        fill(2, 65_536, &mut b);
        assert_ne!(a, b);
        // Distinct 8-byte windows: a repeated block or zeros would give few.
        let distinct: std::collections::HashSet<&[u8]> = a.chunks(8).collect();
        assert!(distinct.len() > 65_536 / 8 / 2, "{}", distinct.len());
    }

    #[test]
    fn every_table_entry_is_ascii_without_tab_or_nul() {
        for w in WORDS {
            assert!(!w.is_empty() && w.is_ascii() && !w.contains(['\t', '\0']), "{w:?}");
        }
        let distinct: std::collections::HashSet<&str> = WORDS.iter().copied().collect();
        assert_eq!(distinct.len(), 256);
    }

    /// Generation speed without the file system: `cargo test --release -p
    /// benchlab-fileset fill_speed -- --ignored --nocapture`. Prints, asserts
    /// nothing (timings belong to scripts, not to tests).
    #[test]
    #[ignore]
    fn fill_speed() {
        let mut buf = Vec::new();
        for size in [4096usize, 102_400, 921_600] {
            let n = 1_000_000_000 / size;
            let start = std::time::Instant::now();
            let mut sink = 0u8;
            for i in 0..n {
                fill(i as u64, size, &mut buf);
                sink ^= buf[size / 2];
            }
            let secs = start.elapsed().as_secs_f64();
            println!(
                "{size} B files: {:.0} files/s, {:.0} MB/s on one core ({sink})",
                n as f64 / secs,
                (n * size) as f64 / 1e6 / secs
            );
        }
    }
}
