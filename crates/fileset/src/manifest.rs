//! The manifest of a file set: one line per document, so workloads can draw
//! URLs from it and the engine can check every response's size and content.
//!
//! Format (UTF-8 text, `\n` line ends), version 1:
//!
//! ```text
//! # benchlab-manifest 1
//! # kind=specweb99 seed=1 files=360 bytes=51194880
//! /dir00000/class0_0	102	3a7f1c0d9e2b4a61	class0	0.00136500
//! ```
//!
//! - Lines starting with `#` are comments; the first must be
//!   `# benchlab-manifest 1`. A `# key=value …` line carries the generator's
//!   parameters (informative).
//! - Every other line has five tab-separated fields: URL path (starts with
//!   `/`, no tab or newline), size in bytes (decimal), XXH3-64 of the
//!   content (16 lower-case hex digits, seed 0 — the checksum benchlab's
//!   engine computes for `--validate checksum`), class name (no whitespace),
//!   and request weight (a decimal number ≥ 0; a workload drawing from the
//!   manifest with its own weights requests the file with probability
//!   weight ÷ sum of weights).
//! - Entries are in generation order; paths are unique.

use std::fmt::Write as _;
use std::path::Path;

/// First line of every manifest.
pub const MANIFEST_HEADER: &str = "# benchlab-manifest 1";

/// One document of a file set.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// URL path, starting with `/`.
    pub path: String,
    pub size: u64,
    /// XXH3-64 (seed 0) of the content.
    pub xxh3: u64,
    pub class: String,
    /// Request weight (share of requests when drawing by the manifest's weights).
    pub weight: f64,
}

/// A file set's manifest.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Manifest {
    /// Generator parameters (`key=value` pairs of the second comment line).
    pub params: Vec<(String, String)>,
    pub entries: Vec<Entry>,
}

/// A manifest that cannot be read, with the line at fault.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}:{line}: {what}")]
    Syntax { path: String, line: usize, what: String },
}

/// The largest manifest read: a line a file of about 60 bytes, so room for
/// the c't sets' million files several times over.
pub const MAX_MANIFEST_BYTES: u64 = 512 << 20;

impl Manifest {
    /// Parses manifest text; `origin` names it in errors (a file path).
    pub fn parse(text: &str, origin: &str) -> Result<Manifest, ManifestError> {
        let err = |line: usize, what: String| ManifestError::Syntax {
            path: origin.to_string(),
            line,
            what,
        };
        let mut m = Manifest::default();
        let mut seen_header = false;
        for (i, raw) in text.lines().enumerate() {
            let n = i + 1;
            if raw.is_empty() {
                continue;
            }
            if let Some(comment) = raw.strip_prefix('#') {
                if !seen_header {
                    if raw.trim_end() != MANIFEST_HEADER {
                        return Err(err(n, format!("expected `{MANIFEST_HEADER}` as the first line")));
                    }
                    seen_header = true;
                } else if m.params.is_empty() && comment.contains('=') {
                    m.params = comment
                        .split_whitespace()
                        .filter_map(|kv| kv.split_once('='))
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect();
                }
                continue;
            }
            if !seen_header {
                return Err(err(n, format!("expected `{MANIFEST_HEADER}` as the first line")));
            }
            let e = entry_of(raw, n, &err)?;
            m.entries.push(Entry {
                path: e.path.to_string(),
                size: e.size,
                xxh3: e.xxh3,
                class: e.class.to_string(),
                weight: e.weight,
            });
        }
        if !seen_header {
            return Err(err(1, format!("empty manifest: expected `{MANIFEST_HEADER}`")));
        }
        Ok(m)
    }

    /// Reads a manifest file, of at most [`MAX_MANIFEST_BYTES`]: a wrong
    /// path (`/dev/zero`, a disk image) is refused at the limit, never read
    /// whole.
    pub fn read(path: &Path) -> Result<Manifest, ManifestError> {
        Manifest::read_limited(path, MAX_MANIFEST_BYTES)
    }

    fn read_limited(path: &Path, limit: u64) -> Result<Manifest, ManifestError> {
        let text = benchlab_input::read_bounded_text(path, "manifest", limit).map_err(|e| ManifestError::Io {
            path: path.display().to_string(),
            source: e.into(),
        })?;
        Manifest::parse(&text, &path.display().to_string())
    }

    /// The manifest as text (the format above).
    pub fn to_text(&self) -> String {
        let mut s = String::with_capacity(64 * (self.entries.len() + 2));
        s.push_str(MANIFEST_HEADER);
        s.push('\n');
        if !self.params.is_empty() {
            s.push('#');
            for (k, v) in &self.params {
                let _ = write!(s, " {k}={v}");
            }
            s.push('\n');
        }
        for e in &self.entries {
            write_entry(&mut s, e);
        }
        s
    }

    /// Sum of the request weights.
    pub fn total_weight(&self) -> f64 {
        self.entries.iter().map(|e| e.weight).sum()
    }

    /// Looks an entry up by URL path.
    pub fn get(&self, path: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.path == path)
    }
}

/// One entry line, borrowed from the text it was read from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EntryRef<'a> {
    pub path: &'a str,
    pub size: u64,
    pub xxh3: u64,
    pub class: &'a str,
    pub weight: f64,
}

/// Parses entry line `n` (not a comment); `err` makes its error.
fn entry_of<'a>(
    raw: &'a str,
    n: usize,
    err: &impl Fn(usize, String) -> ManifestError,
) -> Result<EntryRef<'a>, ManifestError> {
    // Five fields, split without a list: a million lines allocate nothing.
    let mut it = raw.split('\t');
    let f = match [it.next(), it.next(), it.next(), it.next(), it.next(), it.next()] {
        [Some(a), Some(b), Some(c), Some(d), Some(e), None] => [a, b, c, d, e],
        _ => {
            return Err(err(
                n,
                format!(
                    "expected 5 tab-separated fields (path, size, xxh3, class, weight), found {}",
                    raw.split('\t').count()
                ),
            ))
        }
    };
    if !f[0].starts_with('/') {
        return Err(err(n, format!("path `{}` must start with /", f[0])));
    }
    let size = f[1]
        .parse::<u64>()
        .map_err(|_| err(n, format!("size `{}` is not a whole number of bytes", f[1])))?;
    if f[2].len() != 16 {
        return Err(err(n, format!("checksum `{}` is not 16 hex digits", f[2])));
    }
    let xxh3 =
        u64::from_str_radix(f[2], 16).map_err(|_| err(n, format!("checksum `{}` is not 16 hex digits", f[2])))?;
    if f[3].is_empty() || f[3].contains(char::is_whitespace) {
        return Err(err(n, format!("class `{}` must be a word", f[3])));
    }
    let weight = f[4]
        .parse::<f64>()
        .ok()
        .filter(|w| w.is_finite() && *w >= 0.0)
        .ok_or_else(|| err(n, format!("weight `{}` is not a number ≥ 0", f[4])))?;
    Ok(EntryRef {
        path: f[0],
        size,
        xxh3,
        class: f[3],
        weight,
    })
}

/// The longest manifest line read when streaming (a path of 16 KiB is far
/// past what a file system or a request line takes).
pub const MAX_MANIFEST_LINE_BYTES: usize = 16 * 1024;

/// Reads the manifest at `path` a line at a time (one reused buffer, at
/// most [`MAX_MANIFEST_LINE_BYTES`] a line, [`MAX_MANIFEST_BYTES`] in all)
/// and calls `f` with each entry, in order: a million-file set's manifest
/// is never held whole (issue 27). Errors are [`Manifest::parse`]'s.
pub fn for_each_entry<E: From<ManifestError>>(
    path: &Path,
    mut f: impl FnMut(EntryRef<'_>) -> Result<(), E>,
) -> Result<(), E> {
    use std::io::{BufRead, Read};
    let origin = path.display().to_string();
    let io = |source: std::io::Error| ManifestError::Io {
        path: origin.clone(),
        source,
    };
    let err = |line: usize, what: String| ManifestError::Syntax {
        path: origin.clone(),
        line,
        what,
    };
    let file = std::fs::File::open(path).map_err(io)?;
    let mut reader = std::io::BufReader::with_capacity(256 * 1024, file.take(MAX_MANIFEST_BYTES));
    let mut buf = Vec::with_capacity(256);
    let (mut n, mut seen_header) = (0, false);
    loop {
        buf.clear();
        n += 1;
        let got = (&mut reader)
            .take(MAX_MANIFEST_LINE_BYTES as u64 + 1)
            .read_until(b'\n', &mut buf)
            .map_err(io)?;
        if got == 0 {
            break;
        }
        if buf.last() == Some(&b'\n') {
            buf.pop();
        } else if got > MAX_MANIFEST_LINE_BYTES {
            return Err(err(n, format!("a line longer than {MAX_MANIFEST_LINE_BYTES} bytes")).into());
        }
        let raw = std::str::from_utf8(&buf).map_err(|_| err(n, "not UTF-8 text".into()))?;
        if raw.is_empty() {
            continue;
        }
        if !seen_header {
            if raw.trim_end() != MANIFEST_HEADER {
                return Err(err(n, format!("expected `{MANIFEST_HEADER}` as the first line")).into());
            }
            seen_header = true;
            continue;
        }
        if raw.starts_with('#') {
            continue;
        }
        f(entry_of(raw, n, &err)?)?;
    }
    if !seen_header {
        return Err(err(1, format!("empty manifest: expected `{MANIFEST_HEADER}`")).into());
    }
    Ok(())
}

/// Appends one entry line (for generators that stream the manifest).
pub fn write_entry(s: &mut String, e: &Entry) {
    let _ = writeln!(
        s,
        "{}\t{}\t{:016x}\t{}\t{:.10}",
        e.path, e.size, e.xxh3, e.class, e.weight
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endless_manifest_is_refused_at_its_limit() {
        let e = Manifest::read_limited(Path::new("/dev/zero"), 1 << 20)
            .unwrap_err()
            .to_string();
        assert!(e.contains("/dev/zero") && e.contains("1 MiB"), "{e}");
    }

    #[test]
    fn round_trip() {
        let m = Manifest {
            params: vec![("kind".into(), "ct-single".into()), ("seed".into(), "1".into())],
            entries: vec![Entry {
                path: "/a.html".into(),
                size: 4096,
                xxh3: 0x0123_4567_89ab_cdef,
                class: "page".into(),
                weight: 0.5,
            }],
        };
        let text = m.to_text();
        assert!(text.starts_with("# benchlab-manifest 1\n# kind=ct-single seed=1\n"));
        assert_eq!(Manifest::parse(&text, "m").unwrap(), m);
    }

    #[test]
    fn errors_name_the_line() {
        let e = Manifest::parse("# benchlab-manifest 1\n/a\t12\tzz\tc\t1\n", "man").unwrap_err();
        assert_eq!(e.to_string(), "man:2: checksum `zz` is not 16 hex digits");
        let e = Manifest::parse("/a\t1\t0000000000000000\tc\t1\n", "man").unwrap_err();
        assert!(e.to_string().starts_with("man:1: expected `# benchlab-manifest 1`"));
    }
}
