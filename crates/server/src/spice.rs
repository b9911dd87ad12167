//! The in-process SPICE programs (seed 001: the minimum work for the SPI,
//! returning exactly the bytes of the static file they name) of the
//! workloads of seed 002 and c't 1999:
//!
//! - ad rotation: read the request's environment, return the named file;
//! - session-oriented: open the session log, lock it, increment its counter,
//!   append a line with time, process id and file, unlock, return the file;
//! - slow back end: wait (3 s by default), return the file. That one needs
//!   no code here: the connection task sleeps on the runtime's timer.

use crate::dates::iso8601;
use crate::http::Head;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// The "environment" an ad rotation CGI program reads (`QUERY_STRING`,
/// `HTTP_COOKIE`, `HTTP_USER_AGENT`); the in-process program reads the same
/// values from the parsed request instead of environment variables.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct AdEnv<'h, 'b> {
    query: &'b str,
    /// Header fields, of which the `Cookie` and `User-Agent` ones are read.
    headers: &'h [httparse::Header<'b>],
}

const FNV32_OFFSET: u32 = 2_166_136_261;
const FNV32_PRIME: u32 = 16_777_619;

fn fnv1a(mut h: u32, bytes: &[u8]) -> u32 {
    for &b in bytes {
        h = (h ^ u32::from(b)).wrapping_mul(FNV32_PRIME);
    }
    h
}

impl<'h, 'b> AdEnv<'h, 'b> {
    pub(crate) fn read(head: &Head<'h, 'b>, query: Option<&'b str>) -> AdEnv<'h, 'b> {
        AdEnv {
            query: query.unwrap_or(""),
            headers: head.headers,
        }
    }

    /// The ad a rotation program picks, computed as every SPI's program does
    /// (`spice/src/spice.c`), so the answer is the same on every server:
    /// FNV-1a (32 bits) over `QUERY_STRING \n HTTP_COOKIE \n HTTP_USER_AGENT`,
    /// modulo 100. Several `Cookie` fields are joined with `; ` and several
    /// `User-Agent` fields with `, `, as a CGI gateway joins them. Sent back as
    /// `X-Ad`; the body stays the static file's bytes.
    pub(crate) fn ad_id(&self) -> u32 {
        let mut h = fnv1a(FNV32_OFFSET, self.query.as_bytes());
        h = fnv1a(h, b"\n");
        h = self.fold_field(h, "cookie", b"; ");
        h = fnv1a(h, b"\n");
        h = self.fold_field(h, "user-agent", b", ");
        h % 100
    }

    fn fold_field(&self, mut h: u32, name: &str, sep: &[u8]) -> u32 {
        let mut first = true;
        for f in self.headers.iter().filter(|f| f.name.eq_ignore_ascii_case(name)) {
            if !first {
                h = fnv1a(h, sep);
            }
            h = fnv1a(h, f.value);
            first = false;
        }
        h
    }
}

/// Width of the counter on the session log's first line: fixed, so it can be
/// rewritten in place (12 digits: a trillion requests).
pub const COUNTER_DIGITS: usize = 12;

/// The session log (docs/spice.md, "The session log"): one file per server,
/// shared by every SPI's session program on it, so its format is a contract.
///
/// ```text
/// 000000000002
/// 2026-11-22T10:11:12Z\t4242\t/a.html
/// 2026-11-22T10:11:13Z\t4242\t/d/b.html
/// ```
///
/// - Line 1: the counter, `COUNTER_DIGITS` decimal digits, zero-padded: the
///   number of session requests logged.
/// - Then one line per request, tab-separated: ISO-8601 UTC time to the
///   second (`YYYY-MM-DDTHH:MM:SSZ`), the process id of the program that
///   served it, and the file path as in the URL (decoded, starting with `/`).
///
/// This is the format `spice/src/spice.c` writes for the CGI and FastCGI
/// SPIs, so one checker reads every server's log.
/// - Writers take an exclusive `flock(2)` on the file for read, increment,
///   rewrite and append, so CGI programs of other SPIs — separate processes —
///   can share it; each request opens the file anew, as seed 002's steps say.
#[derive(Debug, Clone)]
pub struct SessionLog {
    path: PathBuf,
}

impl SessionLog {
    /// A session log at `path` (created at the first request).
    pub fn new(path: impl Into<PathBuf>) -> SessionLog {
        SessionLog { path: path.into() }
    }

    /// Where the log is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Checks before serving, without creating anything, that requests can be
    /// logged: its directory exists, and a file already there is a session
    /// log (empty, or starting with a counter line). Says what is wrong.
    pub(crate) fn check(&self) -> Result<(), String> {
        let dir = match self.path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        if !dir.is_dir() {
            return Err(format!("directory {} does not exist", dir.display()));
        }
        let file = match File::open(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e.to_string()),
        };
        let meta = file.metadata().map_err(|e| e.to_string())?;
        if !meta.is_file() {
            return Err("not a regular file".to_string());
        }
        if meta.len() == 0 {
            return Ok(());
        }
        let mut first = [0u8; COUNTER_DIGITS + 1];
        match file.read_exact_at(&mut first, 0) {
            Ok(())
                if first[COUNTER_DIGITS] == b'\n' && crate::http::parse_decimal(&first[..COUNTER_DIGITS]).is_some() =>
            {
                Ok(())
            }
            _ => Err(bad_counter().to_string()),
        }
    }

    /// Does seed 002's session steps for one request of `file`; returns the
    /// counter's new value. Blocks (on the lock and the disk): call it from a
    /// blocking task.
    /// Errors name the log's path.
    pub fn record(&self, file: &str) -> io::Result<u64> {
        self.record_steps(file)
            .map_err(|e| io::Error::new(e.kind(), format!("session log {}: {e}", self.path.display())))
    }

    fn record_steps(&self, file: &str) -> io::Result<u64> {
        // 1. Open the log file.
        let log = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o644)
            .open(&self.path)?;
        // 2. Lock it. The lock is released when `log` is closed (step 5),
        //    also on an early error return.
        lock_exclusive(&log)?;
        // 3. Increment the counter in it.
        let mut first = [0u8; COUNTER_DIGITS + 1];
        let size = log.metadata()?.len();
        let count = if size == 0 {
            0
        } else {
            log.read_exact_at(&mut first, 0).map_err(|_| bad_counter())?;
            match (
                &first[COUNTER_DIGITS],
                crate::http::parse_decimal(&first[..COUNTER_DIGITS]),
            ) {
                (b'\n', Some(n)) => n,
                _ => return Err(bad_counter()),
            }
        };
        let next = count + 1;
        let counter = format!("{next:0width$}\n", width = COUNTER_DIGITS);
        if counter.len() != COUNTER_DIGITS + 1 {
            return Err(io::Error::other(format!("the counter is full ({count})")));
        }
        log.write_all_at(counter.as_bytes(), 0)?;
        // 4. Append the entry: time, process id, file. One write, under the
        //    lock, so lines never interleave.
        let time = iso8601(SystemTime::now());
        let mut line = Vec::with_capacity(time.len() + file.len() + 16);
        line.extend_from_slice(&time);
        line.extend_from_slice(format!("\t{}\t{file}\n", std::process::id()).as_bytes());
        log.write_all_at(&line, size.max(counter.len() as u64))?;
        // 5. Unlock (explicitly, before the close that would also release it).
        unlock(&log)?;
        Ok(next)
    }
}

fn bad_counter() -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!(
            "the first line is not a {COUNTER_DIGITS}-digit counter; \
             move the file away or point --session-log elsewhere"
        ),
    )
}

fn lock_exclusive(f: &File) -> io::Result<()> {
    loop {
        // SAFETY: flock on a valid, open descriptor.
        if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) } == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

fn unlock(f: &File) -> io::Result<()> {
    // SAFETY: flock on a valid, open descriptor.
    if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_UN) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ad_of(raw: &[u8], query: Option<&str>) -> u32 {
        let mut hb = [const { std::mem::MaybeUninit::uninit() }; crate::http::MAX_HEADERS];
        let head = crate::http::parse_head(raw, &mut hb).unwrap().unwrap();
        AdEnv::read(&head, query).ad_id()
    }

    /// The same value as the ad rotation test of the CGI SPIs computes.
    fn reference(query: &str, cookie: &str, user_agent: &str) -> u32 {
        let mut h: u32 = 2_166_136_261;
        for b in format!("{query}\n{cookie}\n{user_agent}").bytes() {
            h = (h ^ u32::from(b)).wrapping_mul(16_777_619);
        }
        h % 100
    }

    #[test]
    fn ad_id_reads_query_cookie_and_user_agent() {
        let raw = b"GET /spice/inproc/adrot/a.html?zone=3 HTTP/1.1\r\nCookie: visitor=42; campaign=spice\r\n\
                    User-Agent: benchlab-spice-test/1\r\nReferer: /x\r\n\r\n";
        let want = reference("zone=3", "visitor=42; campaign=spice", "benchlab-spice-test/1");
        assert_eq!(ad_of(raw, Some("zone=3")), want);
        assert_ne!(ad_of(raw, Some("zone=4")), reference("zone=3", "x", "y"));
        let split = b"GET / HTTP/1.1\r\nCookie: a=1\r\nCookie: b=2\r\n\r\n";
        assert_eq!(ad_of(split, None), reference("", "a=1; b=2", ""));
        assert_eq!(ad_of(b"GET / HTTP/1.1\r\n\r\n", None), reference("", "", ""));
    }

    #[test]
    fn session_log_format_and_concurrency() {
        let dir = tempfile::tempdir().unwrap();
        let log = SessionLog::new(dir.path().join("s.log"));
        let threads: Vec<_> = (0..8)
            .map(|t| {
                let log = log.clone();
                std::thread::spawn(move || {
                    for _ in 0..25 {
                        log.record(&format!("/f{t}.html")).unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let text = std::fs::read_to_string(log.path()).unwrap();
        let mut lines = text.lines();
        assert_eq!(lines.next(), Some("000000000200"));
        let pid = std::process::id().to_string();
        let mut n = 0;
        for line in lines {
            let fields: Vec<&str> = line.split('\t').collect();
            assert_eq!(fields.len(), 3, "{line:?}");
            assert_eq!(fields[0].len(), 20, "{line:?}");
            assert!(fields[0].ends_with('Z') && fields[0].as_bytes()[10] == b'T', "{line:?}");
            assert_eq!(fields[1], pid);
            assert!(fields[2].starts_with("/f") && fields[2].ends_with(".html"), "{line:?}");
            n += 1;
        }
        assert_eq!(n, 200);
        assert!(text.ends_with('\n'));
    }

    #[test]
    fn foreign_file_is_refused_not_clobbered() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.log");
        std::fs::write(&path, "not a counter\n").unwrap();
        let log = SessionLog::new(&path);
        let err = log.record("/a").unwrap_err();
        assert!(err.to_string().contains("12-digit counter"), "{err}");
        assert!(err.to_string().contains(&path.display().to_string()), "{err}");
        assert!(log.check().unwrap_err().contains("12-digit counter"));
        assert!(SessionLog::new(dir.path().join("new.log")).check().is_ok());
        assert!(SessionLog::new(dir.path().join("no/such/dir.log"))
            .check()
            .unwrap_err()
            .contains("does not exist"));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "not a counter\n");
    }
}
