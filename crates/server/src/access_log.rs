//! The access log, in Common Log Format:
//! `host ident authuser [date] "request" status bytes`, e.g.
//! `127.0.0.1 - - [10/Oct/2000:20:55:36 +0000] "GET /a.html HTTP/1.1" 200 4096`.
//!
//! `bytes` is the body length sent (`-` for none), as in Apache's `%b`; the
//! date is UTC. Lines go to a 64 KiB buffer that is written when full, at
//! least once a second (by the server's flusher task) and at shutdown, so
//! logging costs a memory copy per request, not a system call.

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// A buffered CLF access log file (appended to, never truncated).
#[derive(Debug)]
pub(crate) struct AccessLog {
    path: PathBuf,
    out: Mutex<BufWriter<File>>,
}

impl AccessLog {
    pub(crate) fn open(path: &Path) -> io::Result<AccessLog> {
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(AccessLog {
            path: path.to_path_buf(),
            out: Mutex::new(BufWriter::with_capacity(64 * 1024, file)),
        })
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one formatted line (see `format_line`).
    pub(crate) fn write(&self, line: &[u8]) {
        let mut out = self.out.lock().unwrap_or_else(|p| p.into_inner());
        if let Err(e) = out.write_all(line) {
            report_once(&self.path, &e);
        }
    }

    /// Writes buffered lines to the file.
    pub(crate) fn flush(&self) -> io::Result<()> {
        self.out.lock().unwrap_or_else(|p| p.into_inner()).flush()
    }
}

/// A full disk should not flood stderr with one message per request.
fn report_once(path: &Path, e: &io::Error) {
    static REPORTED: std::sync::Once = std::sync::Once::new();
    REPORTED.call_once(|| eprintln!("benchlab serve: cannot write the access log {}: {e}", path.display()));
}

/// The request field of a line: what was sent, or `-` for a request that
/// could not be parsed.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RequestLine<'a> {
    pub(crate) method: &'a str,
    pub(crate) target: &'a str,
    pub(crate) minor: u8,
}

/// Formats one CLF line into `out` (cleared first). `"` and `\` and bytes
/// outside printable ASCII in the request are written as `\xHH`, as nginx
/// does, so a line can always be split back into its fields.
pub(crate) fn format_line(
    out: &mut Vec<u8>,
    host: IpAddr,
    request: Option<RequestLine<'_>>,
    status: u16,
    body_bytes: u64,
) {
    out.clear();
    // Writes to a Vec cannot fail.
    let _ = write!(out, "{host} - - [");
    out.extend_from_slice(&crate::dates::now().clf);
    out.extend_from_slice(b"] \"");
    match request {
        Some(r) => {
            escape_into(out, r.method.as_bytes());
            out.push(b' ');
            escape_into(out, r.target.as_bytes());
            let _ = write!(out, " HTTP/1.{}", r.minor);
        }
        None => out.push(b'-'),
    }
    let _ = if body_bytes == 0 {
        writeln!(out, "\" {status} -")
    } else {
        writeln!(out, "\" {status} {body_bytes}")
    };
}

fn escape_into(out: &mut Vec<u8>, s: &[u8]) {
    for &b in s {
        if (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\' {
            out.push(b);
        } else {
            let _ = write!(out, "\\x{b:02X}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clf_lines() {
        let mut out = Vec::new();
        let ip: IpAddr = "127.0.0.1".parse().unwrap();
        let r = RequestLine {
            method: "GET",
            target: "/a\"b.html?x=1",
            minor: 1,
        };
        format_line(&mut out, ip, Some(r), 200, 4096);
        let s = String::from_utf8(out.clone()).unwrap();
        assert!(s.starts_with("127.0.0.1 - - ["), "{s}");
        assert!(
            s.ends_with("+0000] \"GET /a\\x22b.html?x=1 HTTP/1.1\" 200 4096\n"),
            "{s}"
        );
        assert_eq!(s.find(']'), Some("127.0.0.1 - - [".len() + 26), "{s}");
        format_line(&mut out, ip, None, 400, 0);
        assert!(String::from_utf8(out).unwrap().ends_with("+0000] \"-\" 400 -\n"));
    }
}
