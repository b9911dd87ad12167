//! A large workload's URLs in a file of their own: a class's `url_file`
//! (docs/workloads.md, "Large workloads"). `workload from-log` writes one
//! for a log of many URLs, since a TOML document of a million
//! `[[class.url]]` tables costs nearly 2 KB a URL to hold and parse. The
//! file is read a line at a time, with a bound per line, straight into
//! the run's compact URL list; nothing of it is held whole.
//!
//! ```text
//! # benchlab url-file 1: weight, size (- unknown), path; tab-separated
//! 1234<TAB>5120<TAB>/index.html
//! 17<TAB>-<TAB>/search?q=a
//! ```

use crate::error::ModelError;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};

/// The first line of a URL file: what it is and its version.
pub const URL_FILE_HEADER: &str = "# benchlab url-file 1: weight, size (- unknown), path; tab-separated";

/// The longest line of a URL file, in bytes (a URL of 16 KiB is already far
/// past what servers accept in a request line).
pub const MAX_URL_LINE_BYTES: usize = 16 * 1024;

/// A class's URL file, checked: where it is, how many URLs it holds and
/// the sum of their weights (so the URLs can be shared out as they are
/// read, in one pass).
#[derive(Debug, Clone, PartialEq)]
pub struct UrlFile {
    pub path: PathBuf,
    pub urls: usize,
    pub total_weight: f64,
}

/// One URL of a URL file.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct UrlLine<'a> {
    /// Relative weight (> 0): the URL's request count in the log.
    pub weight: f64,
    /// The body size of its 200 responses, where known.
    pub size: Option<u64>,
    /// Path and query, from `/`.
    pub path: &'a str,
}

impl UrlFile {
    /// Reads `path` through once: every line checked (an error names the
    /// file and line and what was expected), the URLs counted and their
    /// weights summed.
    pub fn check(path: &Path) -> Result<UrlFile, ModelError> {
        let mut urls = 0;
        let mut total_weight = 0.0;
        for_each_line(path, |_, u| {
            urls += 1;
            total_weight += u.weight;
            Ok::<(), ModelError>(())
        })
        .map_err(Stop::into_model)?;
        if urls == 0 {
            return Err(ModelError {
                file: path.to_path_buf(),
                line: None,
                column: None,
                message: "no URL: expected lines of weight, size and path".into(),
            });
        }
        Ok(UrlFile {
            path: path.to_path_buf(),
            urls,
            total_weight,
        })
    }

    /// Calls `f` with each URL in order, a line at a time; a line that
    /// cannot be read is `on_error`'s.
    pub fn for_each<E>(
        &self,
        mut f: impl FnMut(UrlLine<'_>) -> Result<(), E>,
        on_error: impl FnOnce(ModelError) -> E,
    ) -> Result<(), E> {
        for_each_line(&self.path, |_, u| f(u)).map_err(|e| match e {
            Stop::File(m) => on_error(m),
            Stop::Caller(e) => e,
        })
    }
}

/// Why reading a URL file stopped: the file, or the caller.
enum Stop<E> {
    File(ModelError),
    Caller(E),
}

impl Stop<ModelError> {
    fn into_model(self) -> ModelError {
        match self {
            Stop::File(e) | Stop::Caller(e) => e,
        }
    }
}

fn error(path: &Path, line: Option<usize>, message: String) -> ModelError {
    ModelError {
        file: path.to_path_buf(),
        line,
        column: None,
        message,
    }
}

/// Reads the URL file at `path` a line at a time (one reused buffer, at
/// most [`MAX_URL_LINE_BYTES`] a line) and calls `f` with each URL and its
/// line number.
fn for_each_line<E>(path: &Path, mut f: impl FnMut(usize, UrlLine<'_>) -> Result<(), E>) -> Result<(), Stop<E>> {
    let file = File::open(path).map_err(|e| Stop::File(error(path, None, format!("cannot read the URL file: {e}"))))?;
    let mut reader = BufReader::with_capacity(256 * 1024, file);
    let mut buf = Vec::with_capacity(1024);
    let mut line = 0;
    loop {
        buf.clear();
        line += 1;
        let n = (&mut reader)
            .take(MAX_URL_LINE_BYTES as u64 + 1)
            .read_until(b'\n', &mut buf)
            .map_err(|e| Stop::File(error(path, Some(line), format!("cannot read the URL file: {e}"))))?;
        if n == 0 {
            return Ok(());
        }
        if buf.last() == Some(&b'\n') {
            buf.pop();
        } else if n > MAX_URL_LINE_BYTES {
            return Err(Stop::File(error(
                path,
                Some(line),
                format!("a line longer than {MAX_URL_LINE_BYTES} bytes: expected weight, size and path"),
            )));
        }
        if buf.last() == Some(&b'\r') {
            buf.pop();
        }
        if line == 1 && !buf.starts_with(b"# benchlab url-file 1") {
            return Err(Stop::File(error(
                path,
                Some(1),
                format!("not a benchlab URL file: expected its first line to be `{URL_FILE_HEADER}`"),
            )));
        }
        if buf.is_empty() || buf[0] == b'#' {
            continue;
        }
        let u = parse_line(&buf).map_err(|why| Stop::File(error(path, Some(line), why)))?;
        f(line, u).map_err(Stop::Caller)?;
    }
}

/// One line: `WEIGHT<TAB>SIZE<TAB>PATH`.
fn parse_line(buf: &[u8]) -> Result<UrlLine<'_>, String> {
    let text = std::str::from_utf8(buf).map_err(|_| "not UTF-8 text: expected weight, size and path".to_string())?;
    let mut fields = text.splitn(3, '\t');
    let (Some(w), Some(s), Some(path)) = (fields.next(), fields.next(), fields.next()) else {
        return Err(format!(
            "`{}`: expected weight, size (or -) and path, separated by tabs",
            crate::input::excerpt(text)
        ));
    };
    let weight: f64 = w
        .parse()
        .ok()
        .filter(|w: &f64| *w > 0.0 && w.is_finite())
        .ok_or_else(|| format!("weight `{}`: expected a number above 0", crate::input::excerpt(w)))?;
    let size = match s {
        "-" => None,
        s => Some(
            s.parse()
                .map_err(|_| format!("size `{}`: expected bytes or -", crate::input::excerpt(s)))?,
        ),
    };
    if !path.starts_with('/') || path.contains(['\t', ' ']) || path.chars().any(char::is_control) {
        return Err(format!(
            "path `{}`: expected a path from / without spaces, tabs or control characters",
            crate::input::excerpt(path)
        ));
    }
    Ok(UrlLine { weight, size, path })
}

/// Writes a URL file's header.
pub fn write_header<W: Write>(w: &mut W) -> io::Result<()> {
    writeln!(w, "{URL_FILE_HEADER}")
}

/// Writes one URL's line. A path with a space, a tab or a control
/// character has them percent-encoded (they cannot go on a request line
/// as they are).
pub fn write_url<W: Write>(w: &mut W, weight: u64, size: Option<u64>, path: &str) -> io::Result<()> {
    match size {
        Some(s) => write!(w, "{weight}\t{s}\t")?,
        None => write!(w, "{weight}\t-\t")?,
    }
    for c in path.chars() {
        if c == ' ' || c == '\t' || c.is_control() {
            let mut b = [0; 4];
            for byte in c.encode_utf8(&mut b).bytes() {
                write!(w, "%{byte:02X}")?;
            }
        } else {
            write!(w, "{c}")?;
        }
    }
    writeln!(w)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(text: &str) -> (tempfile::TempDir, PathBuf) {
        let d = tempfile::tempdir().expect("tempdir");
        let p = d.path().join("w.urls");
        std::fs::write(&p, text).expect("write");
        (d, p)
    }

    #[test]
    fn urls_round_trip_exactly() {
        let mut text = Vec::new();
        write_header(&mut text).unwrap();
        write_url(&mut text, 1234, Some(5120), "/index.html").unwrap();
        write_url(&mut text, 1, None, "/a b\tc").unwrap();
        let (_d, p) = file(std::str::from_utf8(&text).unwrap());
        let f = UrlFile::check(&p).unwrap();
        assert_eq!((f.urls, f.total_weight), (2, 1235.0));
        let mut back = Vec::new();
        f.for_each(
            |u| {
                back.push((u.weight, u.size, u.path.to_string()));
                Ok::<(), ModelError>(())
            },
            |e| e,
        )
        .unwrap();
        assert_eq!(
            back,
            vec![
                (1234.0, Some(5120), "/index.html".to_string()),
                (1.0, None, "/a%20b%09c".to_string())
            ]
        );
    }

    #[test]
    fn errors_name_the_file_and_line() {
        let bad = |body: &str| {
            let (_d, p) = file(&format!("{URL_FILE_HEADER}\n1\t-\t/ok\n{body}\n"));
            let e = UrlFile::check(&p).unwrap_err();
            assert_eq!(e.file, p);
            assert_eq!(e.line, Some(3), "{e}");
            e.message
        };
        assert!(bad("0\t-\t/x").contains("weight `0`: expected a number above 0"));
        assert!(bad("1\tbig\t/x").contains("size `big`: expected bytes or -"));
        assert!(bad("1\t-\tx").contains("path `x`: expected a path from /"));
        assert!(bad("1 2 /x").contains("separated by tabs"));
        assert!(bad(&format!("1\t-\t/{}", "a".repeat(MAX_URL_LINE_BYTES))).contains("longer than 16384 bytes"));
        let (_d, p) = file("1\t-\t/x\n");
        let e = UrlFile::check(&p).unwrap_err();
        assert_eq!(e.line, Some(1));
        assert!(e.to_string().contains("not a benchlab URL file"), "{e}");
    }
}
