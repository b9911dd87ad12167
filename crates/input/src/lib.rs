//! # benchlab-input
//!
//! Reading a user's input files with a bound, and quoting a user's text
//! briefly. A suite, workload, loadfile, certificate, profile, manifest or
//! results file named by a user may point anywhere — `/dev/zero`, a FIFO,
//! a multi-gigabyte file by mistake — and an unbounded `fs::read` then
//! grows until the machine runs out of memory (an audit saw 4.2 GB). Every
//! reader of user input goes through [`read_bounded`], which stops at the
//! limit its caller names and says which, and every message that quotes a
//! user's text goes through [`excerpt`], so a 100 MB key is never echoed
//! whole. A crate of its own, below every crate that reads input (the
//! engine's certificates, file sets' manifests, the model's suites, the
//! lab's profiles, the report's results), so there is one such reader.
//!
//! It also holds [`ExitClass`] and [`Classify`]: every crate's error type
//! says whether it is the user's input at fault (exit 2) or the run that
//! could not be done (exit 1), so the command line maps any crate's error
//! to its documented exit code without parsing messages (docs/running.md,
//! "Exit codes").
//!
//! And [`start::wait_until`]: the one wait for a mix's start instant, which
//! web clients (the engine) and file clients (the file server's users)
//! share, so both start alike.
//!
//! And [`hdr::v2_header`]: the check every decoder of a peer's or a file's
//! HDR histogram makes before the deserializer allocates by its header.

pub mod hdr;
pub mod start;

use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};

/// How an error ends the process: the documented exit codes of a failure
/// (`benchlab_results::exit`). A threshold breach (3) and Ctrl-C (130) are
/// outcomes of a run, not errors, and are not classes here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitClass {
    /// Bad input from the user (a flag, a suite, a workload, a file they
    /// named): exit 2.
    Usage,
    /// The run could not be done (a server unreachable, a system limit,
    /// an unwritable directory): exit 1.
    CannotRun,
}

impl ExitClass {
    /// The process exit code of this class.
    pub const fn code(self) -> u8 {
        match self {
            ExitClass::Usage => 2,
            ExitClass::CannotRun => 1,
        }
    }
}

/// An error that knows its [`ExitClass`]; every crate's public error type
/// implements it.
pub trait Classify: std::error::Error {
    fn exit_class(&self) -> ExitClass;
}

/// The most characters of a user's text quoted in a message.
pub const EXCERPT_CHARS: usize = 80;

/// A file that could not be read, or was larger than its limit.
#[derive(Debug)]
pub enum InputError {
    /// Opening or reading failed.
    Io { path: PathBuf, source: std::io::Error },
    /// The file has more than `limit` bytes (or never ends, as `/dev/zero`).
    TooLarge {
        path: PathBuf,
        what: &'static str,
        limit: u64,
    },
}

impl InputError {
    /// What went wrong, without the path (for messages that name the file
    /// their own way, as [`crate::ModelError`] does).
    pub fn message(&self) -> String {
        match self {
            InputError::Io { source, .. } => format!("cannot read: {source}"),
            InputError::TooLarge { what, limit, .. } => format!(
                "larger than {} MiB, the most benchlab reads for a {what}: expected a {what} file \
                 (is this the right path?)",
                limit >> 20
            ),
        }
    }
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = match self {
            InputError::Io { path, .. } | InputError::TooLarge { path, .. } => path,
        };
        write!(f, "{}: {}", path.display(), self.message())
    }
}

impl std::error::Error for InputError {}

impl Classify for InputError {
    /// A file the user named that cannot be read is the user's to fix.
    fn exit_class(&self) -> ExitClass {
        ExitClass::Usage
    }
}

impl From<InputError> for std::io::Error {
    /// For callers whose errors carry an `io::Error`: the kind of the
    /// failure (`InvalidData` for a file over its limit) and the message
    /// without the path (their own error names the path).
    fn from(e: InputError) -> std::io::Error {
        let message = e.message();
        match e {
            InputError::Io { source, .. } => std::io::Error::new(source.kind(), message),
            InputError::TooLarge { .. } => std::io::Error::new(std::io::ErrorKind::InvalidData, message),
        }
    }
}

/// The bytes of `path`, at most `limit` of them: a larger (or endless) file
/// is refused with [`InputError::TooLarge`] naming `what` it should have
/// been. Reads one byte past the limit to tell "exactly the limit" from
/// "more", never more than that.
pub fn read_bounded(path: &Path, what: &'static str, limit: u64) -> Result<Vec<u8>, InputError> {
    let io = |source| InputError::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = std::fs::File::open(path).map_err(io)?;
    // Pre-size from the file's length where it has one (not for devices
    // and pipes), never beyond the limit.
    let hint = file.metadata().map(|m| m.len().min(limit)).unwrap_or(0);
    let mut bytes = Vec::with_capacity(hint as usize);
    file.take(limit + 1).read_to_end(&mut bytes).map_err(io)?;
    if bytes.len() as u64 > limit {
        return Err(InputError::TooLarge {
            path: path.to_path_buf(),
            what,
            limit,
        });
    }
    Ok(bytes)
}

/// [`read_bounded`] as UTF-8 text; bytes that are not UTF-8 are an
/// [`InputError::Io`] of kind `InvalidData` naming the offset.
pub fn read_bounded_text(path: &Path, what: &'static str, limit: u64) -> Result<String, InputError> {
    let bytes = read_bounded(path, what, limit)?;
    String::from_utf8(bytes).map_err(|e| InputError::Io {
        path: path.to_path_buf(),
        source: std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "byte at offset {} is not UTF-8: expected a UTF-8 text file",
                e.utf8_error().valid_up_to()
            ),
        ),
    })
}

/// At most [`EXCERPT_CHARS`] characters of `text` for a message, with the
/// number of characters left out when it was cut (`"abc…" (1,000,000
/// characters)`), and control characters escaped so a line from a file
/// cannot move the terminal's cursor.
pub fn excerpt(text: &str) -> String {
    let total = text.chars().count();
    let mut out = String::new();
    for c in text.chars().take(EXCERPT_CHARS) {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    if total > EXCERPT_CHARS {
        out.push_str(&format!("… ({total} characters)"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dev_zero_is_refused_at_the_limit_not_read_whole() {
        let e = read_bounded(Path::new("/dev/zero"), "suite", 1 << 20).unwrap_err();
        assert!(matches!(e, InputError::TooLarge { limit, .. } if limit == 1 << 20));
        let msg = e.to_string();
        assert!(
            msg.contains("/dev/zero") && msg.contains("1 MiB") && msg.contains("suite"),
            "{msg}"
        );
    }

    #[test]
    fn a_file_of_exactly_the_limit_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, vec![b'a'; 1000]).unwrap();
        assert_eq!(read_bounded(&p, "suite", 1000).unwrap().len(), 1000);
        assert!(read_bounded(&p, "suite", 999).is_err());
    }

    #[test]
    fn excerpts_are_short_and_escaped() {
        assert_eq!(excerpt("abc"), "abc");
        let long = "k".repeat(1_000_000);
        let e = excerpt(&long);
        assert!(e.len() < 120 && e.ends_with("(1000000 characters)"), "{e}");
        assert_eq!(excerpt("a\x1b[2Jb"), "a\\u{1b}[2Jb");
    }
}
