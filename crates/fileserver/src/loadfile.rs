//! dbench loadfiles: one file operation a line, as dbench's `client.txt`
//! writes them (a trace of NetBench's disk mix):
//!
//! ```text
//! [TIMESTAMP] NTCreateX "\clients\client1\f" 0x40 0x2 9938 NT_STATUS_OK
//! WriteX 9938 0 65536 65536 NT_STATUS_OK
//! Close 9938 NT_STATUS_OK
//! ```
//!
//! The last word is the status the operation is expected to end with; an
//! optional leading number is the time the operation was traced at
//! (accepted, not used for pacing). Paths name `\clients\client1`; each
//! user replays them in its own `\clients\clientN`. Blank lines and lines
//! starting with `#` are skipped. Every problem names file:line.
//!
//! Every path must stay inside the share (or the `file://` directory): a
//! path that is absolute, holds a NUL, or climbs with `..` out of the
//! user's own `\clients\client1` is refused here, at `check`, before any
//! load (an audit's loadfile created and deleted files outside the target).

use crate::status::Status;
use benchlab_model::input::{excerpt, read_bounded, MAX_LOADFILE_BYTES};
use std::fmt;
use std::path::{Path, PathBuf};

/// A file handle number of the loadfile (dbench's `fnum`).
pub type Fnum = u32;

/// One operation of a loadfile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// Open or create a file or directory. `options` bit 0x1 asks for a
    /// directory; `disposition` is SMB's (0 supersede, 1 open, 2 create,
    /// 3 open-if, 4 overwrite, 5 overwrite-if).
    NtCreateX {
        path: String,
        options: u32,
        disposition: u32,
        fnum: Fnum,
    },
    Close {
        fnum: Fnum,
    },
    /// Read `size` bytes at `offset`; `ret` bytes expected back.
    ReadX {
        fnum: Fnum,
        offset: u64,
        size: u32,
        ret: u32,
    },
    WriteX {
        fnum: Fnum,
        offset: u64,
        size: u32,
        ret: u32,
    },
    Rename {
        from: String,
        to: String,
    },
    Unlink {
        path: String,
        attr: u32,
    },
    /// `level` as the line gives it; `class`, the SMB2 information class
    /// it asks ([`crate::level`]), as for the four below.
    QueryPathInformation {
        path: String,
        level: u32,
        class: u8,
    },
    QueryFileInformation {
        fnum: Fnum,
        level: u32,
        class: u8,
    },
    QueryFsInformation {
        level: u32,
        class: u8,
    },
    SetFileInformation {
        fnum: Fnum,
        level: u32,
        class: u8,
    },
    /// A directory search (`pattern` with `*`, `?` and DOS's `<`, `>`, `"`).
    FindFirst {
        pattern: String,
        level: u32,
        class: u8,
        max: u32,
        count: u32,
    },
    LockX {
        fnum: Fnum,
        offset: u64,
        len: u64,
    },
    UnlockX {
        fnum: Fnum,
        offset: u64,
        len: u64,
    },
    Flush {
        fnum: Fnum,
    },
    Deltree {
        path: String,
    },
    Mkdir {
        path: String,
    },
}

/// Operation kinds, for counting and latency (dbench's names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OpKind {
    NtCreateX,
    Close,
    ReadX,
    WriteX,
    Rename,
    Unlink,
    QueryPathInformation,
    QueryFileInformation,
    QueryFsInformation,
    SetFileInformation,
    FindFirst,
    LockX,
    UnlockX,
    Flush,
    Deltree,
    Mkdir,
}

impl OpKind {
    pub const ALL: [OpKind; 16] = [
        OpKind::NtCreateX,
        OpKind::Close,
        OpKind::ReadX,
        OpKind::WriteX,
        OpKind::Rename,
        OpKind::Unlink,
        OpKind::QueryPathInformation,
        OpKind::QueryFileInformation,
        OpKind::QueryFsInformation,
        OpKind::SetFileInformation,
        OpKind::FindFirst,
        OpKind::LockX,
        OpKind::UnlockX,
        OpKind::Flush,
        OpKind::Deltree,
        OpKind::Mkdir,
    ];

    /// The loadfile's word for it.
    pub fn name(self) -> &'static str {
        match self {
            OpKind::NtCreateX => "NTCreateX",
            OpKind::Close => "Close",
            OpKind::ReadX => "ReadX",
            OpKind::WriteX => "WriteX",
            OpKind::Rename => "Rename",
            OpKind::Unlink => "Unlink",
            OpKind::QueryPathInformation => "QUERY_PATH_INFORMATION",
            OpKind::QueryFileInformation => "QUERY_FILE_INFORMATION",
            OpKind::QueryFsInformation => "QUERY_FS_INFORMATION",
            OpKind::SetFileInformation => "SET_FILE_INFORMATION",
            OpKind::FindFirst => "FIND_FIRST",
            OpKind::LockX => "LockX",
            OpKind::UnlockX => "UnlockX",
            OpKind::Flush => "Flush",
            OpKind::Deltree => "Deltree",
            OpKind::Mkdir => "Mkdir",
        }
    }

    pub fn index(self) -> usize {
        self as usize
    }

    fn from_name(s: &str) -> Option<OpKind> {
        OpKind::ALL.into_iter().find(|k| k.name() == s)
    }

    /// The words after the operation's name and before the status.
    fn arguments(self) -> &'static str {
        match self {
            OpKind::NtCreateX => "\"PATH\" CREATE_OPTIONS DISPOSITION FNUM",
            OpKind::Close | OpKind::Flush => "FNUM",
            OpKind::ReadX | OpKind::WriteX => "FNUM OFFSET SIZE RET_SIZE",
            OpKind::Rename => "\"OLD\" \"NEW\"",
            OpKind::Unlink => "\"PATH\" ATTRIBUTES",
            OpKind::QueryPathInformation => "\"PATH\" LEVEL",
            OpKind::QueryFileInformation | OpKind::SetFileInformation => "FNUM LEVEL",
            OpKind::QueryFsInformation => "LEVEL",
            OpKind::FindFirst => "\"PATTERN\" LEVEL MAX_COUNT COUNT",
            OpKind::LockX | OpKind::UnlockX => "FNUM OFFSET LENGTH",
            OpKind::Deltree | OpKind::Mkdir => "\"PATH\"",
        }
    }
}

impl fmt::Display for OpKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Op {
    pub fn kind(&self) -> OpKind {
        match self {
            Op::NtCreateX { .. } => OpKind::NtCreateX,
            Op::Close { .. } => OpKind::Close,
            Op::ReadX { .. } => OpKind::ReadX,
            Op::WriteX { .. } => OpKind::WriteX,
            Op::Rename { .. } => OpKind::Rename,
            Op::Unlink { .. } => OpKind::Unlink,
            Op::QueryPathInformation { .. } => OpKind::QueryPathInformation,
            Op::QueryFileInformation { .. } => OpKind::QueryFileInformation,
            Op::QueryFsInformation { .. } => OpKind::QueryFsInformation,
            Op::SetFileInformation { .. } => OpKind::SetFileInformation,
            Op::FindFirst { .. } => OpKind::FindFirst,
            Op::LockX { .. } => OpKind::LockX,
            Op::UnlockX { .. } => OpKind::UnlockX,
            Op::Flush { .. } => OpKind::Flush,
            Op::Deltree { .. } => OpKind::Deltree,
            Op::Mkdir { .. } => OpKind::Mkdir,
        }
    }
}

/// One line of a loadfile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// 1-based line number in the file.
    pub line: usize,
    pub op: Op,
    pub expect: Status,
}

/// A loadfile, parsed.
#[derive(Debug, Clone)]
pub struct Loadfile {
    pub path: PathBuf,
    pub lines: Vec<Line>,
}

/// A problem in a loadfile: file, line, what was found, what was expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{}: {message}", file.display(), line.map(|l| format!(":{l}")).unwrap_or_default())]
pub struct LoadfileError {
    pub file: PathBuf,
    pub line: Option<usize>,
    pub message: String,
}

impl Loadfile {
    pub fn read(path: &Path) -> Result<Loadfile, LoadfileError> {
        // Bounded: a loadfile named by mistake as /dev/zero must not grow
        // until the machine runs out of memory.
        let bytes = read_bounded(path, "loadfile", MAX_LOADFILE_BYTES).map_err(|e| LoadfileError {
            file: path.to_path_buf(),
            line: None,
            message: match e {
                benchlab_model::input::InputError::Io { source, .. } => {
                    format!("cannot read the loadfile: {source}")
                }
                e => e.message(),
            },
        })?;
        // dbench's loadfiles are ASCII; a stray byte is kept, not refused.
        Loadfile::parse(path, &String::from_utf8_lossy(&bytes))
    }

    pub fn parse(path: &Path, text: &str) -> Result<Loadfile, LoadfileError> {
        let mut lines = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let t = raw.trim();
            if t.is_empty() || t.starts_with('#') {
                continue;
            }
            let line = parse_line(t).map_err(|message| LoadfileError {
                file: path.to_path_buf(),
                line: Some(i + 1),
                message,
            })?;
            lines.push(Line {
                line: i + 1,
                op: line.0,
                expect: line.1,
            });
        }
        if lines.is_empty() {
            return Err(LoadfileError {
                file: path.to_path_buf(),
                line: None,
                message: "no operations: expected lines such as `NTCreateX \"\\clients\\client1\\f\" 0x40 0x2 1 NT_STATUS_OK`".into(),
            });
        }
        Ok(Loadfile {
            path: path.to_path_buf(),
            lines,
        })
    }

    /// Operations of each kind in one pass of the file.
    pub fn counts(&self) -> [u64; OpKind::ALL.len()] {
        let mut c = [0u64; OpKind::ALL.len()];
        for l in &self.lines {
            c[l.op.kind().index()] += 1;
        }
        c
    }

    /// Bytes one pass writes (`WriteX` sizes) and reads (`ReadX` expected
    /// returns), when every operation ends as the file expects.
    pub fn bytes(&self) -> (u64, u64) {
        let (mut read, mut written) = (0, 0);
        for l in &self.lines {
            match l.op {
                Op::ReadX { ret, .. } if l.expect == Status::Ok => read += ret as u64,
                Op::WriteX { size, .. } if l.expect == Status::Ok => written += size as u64,
                _ => {}
            }
        }
        (read, written)
    }
}

/// Splits a line into words; a `"…"` word may hold spaces.
fn words(t: &str) -> Result<Vec<(String, bool)>, String> {
    let mut out = Vec::new();
    let mut chars = t.char_indices().peekable();
    while let Some(&(_, c)) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
            continue;
        }
        if c == '"' {
            chars.next();
            let mut w = String::new();
            let mut closed = false;
            for (_, c) in chars.by_ref() {
                if c == '"' {
                    closed = true;
                    break;
                }
                w.push(c);
            }
            if !closed {
                return Err(format!("unclosed quote in `{}`: expected a closing `\"`", excerpt(t)));
            }
            out.push((w, true));
        } else {
            let mut w = String::new();
            while let Some(&(_, c)) = chars.peek() {
                if c.is_whitespace() {
                    break;
                }
                w.push(c);
                chars.next();
            }
            out.push((w, false));
        }
    }
    Ok(out)
}

fn number(w: &(String, bool), what: &str) -> Result<u64, String> {
    let s = w.0.as_str();
    let v = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => s.parse::<u64>().ok(),
    };
    match v {
        Some(v) if !w.1 => Ok(v),
        _ => Err(format!(
            "{what} `{}`: expected a whole number (decimal or 0x hex)",
            excerpt(s)
        )),
    }
}

fn number32(w: &(String, bool), what: &str) -> Result<u32, String> {
    let v = number(w, what)?;
    u32::try_from(v).map_err(|_| format!("{what} {v}: expected at most {}", u32::MAX))
}

/// An info level and the SMB2 class it asks; a level no class holds is
/// refused here, with why and what is expected ([`crate::level`]).
fn level(kind: OpKind, w: &(String, bool)) -> Result<(u32, u8), String> {
    use crate::level::Request;
    let level = number32(w, "level")?;
    let request = match kind {
        OpKind::QueryFsInformation => Request::QueryFs,
        OpKind::SetFileInformation => Request::SetFile,
        OpKind::FindFirst => Request::FindFirst,
        _ => Request::QueryFile,
    };
    let class = request
        .class(level)
        .map_err(|why| format!("{} level {level}: {why}", kind.name()))?;
    Ok((level, class))
}

fn path(w: &(String, bool), what: &str) -> Result<String, String> {
    if w.0.is_empty() {
        return Err(format!(
            "{what} is empty: expected a path such as \"\\clients\\client1\\f\""
        ));
    }
    if w.0.contains('\0') {
        return Err(format!(
            "{what} \"{}\" holds a NUL byte: expected a path such as \"\\clients\\client1\\f\"",
            excerpt(&w.0)
        ));
    }
    inside_share(&w.0).map_err(|why| format!("{what} \"{}\" {why}", excerpt(&w.0)))?;
    Ok(w.0.clone())
}

/// Whether a loadfile path stays inside the share: paths are from the
/// share's root (`\clients\client1\f`), `\` and `/` both separate, and a
/// `..` may only climb back inside the user's own workspace
/// `\clients\client1` (each user replays it in `\clients\clientN`, so a
/// `..` above it would reach another user's files or leave the share).
/// The reason when not, to follow the quoted path.
pub(crate) fn inside_share(p: &str) -> Result<(), String> {
    const EXPECTED: &str = "expected a path from the share's root such as \"\\clients\\client1\\f\"";
    let b = p.as_bytes();
    if b.first() == Some(&b'/') {
        return Err(format!("is an absolute local path: {EXPECTED}"));
    }
    if b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':' {
        return Err(format!("names a drive ({}:): {EXPECTED}", b[0] as char));
    }
    let parts: Vec<&str> = p.split(['\\', '/']).filter(|c| !c.is_empty() && *c != ".").collect();
    if !parts.contains(&"..") {
        return Ok(());
    }
    let workspace =
        parts.len() >= 2 && parts[0].eq_ignore_ascii_case("clients") && parts[1].eq_ignore_ascii_case("client1");
    let mut depth = 0usize;
    for c in &parts {
        if *c == ".." {
            if !workspace || depth <= 2 {
                return Err(format!(
                    "climbs out of the user's workspace \\clients\\client1 with `..`: {EXPECTED}, \
                     `..` only below the workspace"
                ));
            }
            depth -= 1;
        } else {
            depth += 1;
        }
    }
    Ok(())
}

fn parse_line(t: &str) -> Result<(Op, Status), String> {
    let mut w = words(t)?;
    // An optional trace time before the operation's name.
    if w.len() > 1 && !w[0].1 && w[0].0.parse::<f64>().is_ok_and(|x| x.is_finite() && x >= 0.0) {
        w.remove(0);
    }
    let Some(first) = w.first() else {
        return Err("empty line".into());
    };
    let kind = OpKind::from_name(&first.0).ok_or_else(|| {
        let known: Vec<&str> = OpKind::ALL.iter().map(|k| k.name()).collect();
        format!(
            "unknown operation `{}`: expected one of {}",
            excerpt(&first.0),
            known.join(", ")
        )
    })?;
    let usage = || format!("{} takes {} STATUS", kind.name(), kind.arguments());
    let Some(last) = w.last() else {
        return Err(usage());
    };
    if w.len() < 2 {
        return Err(format!("{} has no expected status: expected {}", kind.name(), usage()));
    }
    let expect = Status::parse(&last.0).filter(|_| !last.1).ok_or_else(|| {
        format!(
            "`{}` is not a status: expected NT_STATUS_OK or another NT_STATUS_… name last ({})",
            excerpt(&last.0),
            usage()
        )
    })?;
    let a = &w[1..w.len() - 1];
    let want = kind.arguments().split(' ').count();
    if a.len() != want {
        return Err(format!(
            "{} has {} argument{}: expected {} ({})",
            kind.name(),
            a.len(),
            if a.len() == 1 { "" } else { "s" },
            want,
            usage()
        ));
    }
    let op = match kind {
        OpKind::NtCreateX => Op::NtCreateX {
            path: path(&a[0], "path")?,
            options: number32(&a[1], "create options")?,
            disposition: {
                let d = number32(&a[2], "disposition")?;
                if d > 5 {
                    return Err(format!(
                        "disposition {d}: expected 0 (supersede), 1 (open), 2 (create), 3 (open-if), 4 (overwrite) or 5 (overwrite-if)"
                    ));
                }
                d
            },
            fnum: number32(&a[3], "fnum")?,
        },
        OpKind::Close => Op::Close {
            fnum: number32(&a[0], "fnum")?,
        },
        OpKind::Flush => Op::Flush {
            fnum: number32(&a[0], "fnum")?,
        },
        OpKind::ReadX | OpKind::WriteX => {
            let fnum = number32(&a[0], "fnum")?;
            let offset = number(&a[1], "offset")?;
            let size = number32(&a[2], "size")?;
            let ret = number32(&a[3], "expected size")?;
            if size > 16 << 20 {
                return Err(format!("size {size}: expected at most 16 MiB per operation"));
            }
            if kind == OpKind::ReadX {
                Op::ReadX {
                    fnum,
                    offset,
                    size,
                    ret,
                }
            } else {
                Op::WriteX {
                    fnum,
                    offset,
                    size,
                    ret,
                }
            }
        }
        OpKind::Rename => Op::Rename {
            from: path(&a[0], "old path")?,
            to: path(&a[1], "new path")?,
        },
        OpKind::Unlink => Op::Unlink {
            path: path(&a[0], "path")?,
            attr: number32(&a[1], "attributes")?,
        },
        OpKind::QueryPathInformation => {
            let (level, class) = level(kind, &a[1])?;
            Op::QueryPathInformation {
                path: path(&a[0], "path")?,
                level,
                class,
            }
        }
        OpKind::QueryFileInformation => {
            let (level, class) = level(kind, &a[1])?;
            Op::QueryFileInformation {
                fnum: number32(&a[0], "fnum")?,
                level,
                class,
            }
        }
        OpKind::SetFileInformation => {
            let (level, class) = level(kind, &a[1])?;
            Op::SetFileInformation {
                fnum: number32(&a[0], "fnum")?,
                level,
                class,
            }
        }
        OpKind::QueryFsInformation => {
            let (level, class) = level(kind, &a[0])?;
            Op::QueryFsInformation { level, class }
        }
        OpKind::FindFirst => {
            let (level, class) = level(kind, &a[1])?;
            Op::FindFirst {
                pattern: path(&a[0], "pattern")?,
                level,
                class,
                max: number32(&a[2], "max count")?,
                count: number32(&a[3], "count")?,
            }
        }
        OpKind::LockX | OpKind::UnlockX => {
            let fnum = number32(&a[0], "fnum")?;
            let offset = number(&a[1], "offset")?;
            let len = number(&a[2], "length")?;
            if kind == OpKind::LockX {
                Op::LockX { fnum, offset, len }
            } else {
                Op::UnlockX { fnum, offset, len }
            }
        }
        OpKind::Deltree => Op::Deltree {
            path: path(&a[0], "path")?,
        },
        OpKind::Mkdir => Op::Mkdir {
            path: path(&a[0], "path")?,
        },
    };
    Ok((op, expect))
}

/// The loadfile's `\clients\client1` for user `n` (1-based), written into
/// `out`: only a whole path component `client1` right after `\clients\` is
/// replaced, so `\clients\client10` stays as it is.
pub fn client_path(path: &str, n: u32, out: &mut String) {
    out.clear();
    const FROM: &str = "\\clients\\client1";
    let lower = path.get(..FROM.len()).is_some_and(|p| p.eq_ignore_ascii_case(FROM));
    let rest = &path[if lower { FROM.len() } else { 0 }..];
    if lower && (rest.is_empty() || rest.starts_with('\\')) {
        use std::fmt::Write;
        let _ = write!(out, "\\clients\\client{n}{rest}");
    } else {
        out.push_str(path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn parse(t: &str) -> Result<Loadfile, LoadfileError> {
        Loadfile::parse(Path::new("l.txt"), t)
    }

    #[test]
    fn every_operation_of_the_dbench_format() {
        let t = r#"
# a comment
Deltree "\clients\client1" NT_STATUS_OK
Mkdir "\clients" NT_STATUS_OK
NTCreateX "\clients\client1\a b" 0x40 0x2 9938 NT_STATUS_OK
0.125 WriteX 9938 65534 1 1 NT_STATUS_OK
ReadX 9938 0 4096 4096 NT_STATUS_OK
QUERY_FILE_INFORMATION 9938 258 NT_STATUS_OK
SET_FILE_INFORMATION 9938 1004 NT_STATUS_OK
LockX 9938 2147483538 1 NT_STATUS_OK
UnlockX 9938 2147483538 1 NT_STATUS_OK
Flush 9938 NT_STATUS_OK
Close 9938 NT_STATUS_OK
QUERY_PATH_INFORMATION "\clients\client1\~dmtmp" 1004 NT_STATUS_OBJECT_NAME_NOT_FOUND
QUERY_FS_INFORMATION 259 NT_STATUS_OK
FIND_FIRST "\clients\client1\FILLER.*" 260 1366 0 NT_STATUS_NO_SUCH_FILE
Rename "\clients\client1\a b" "\clients\client1\c" NT_STATUS_OK
Unlink "\clients\client1\c" 0x6 NT_STATUS_OK
"#;
        let l = parse(t).unwrap();
        assert_eq!(l.lines.len(), 16);
        assert!(l.counts().iter().all(|&c| c == 1));
        assert_eq!(l.lines[0].line, 3);
        assert_eq!(
            l.lines[2].op,
            Op::NtCreateX {
                path: "\\clients\\client1\\a b".into(),
                options: 0x40,
                disposition: 2,
                fnum: 9938
            }
        );
        assert_eq!(l.lines[11].expect, Status::ObjectNameNotFound);
        assert_eq!(l.bytes(), (4096, 1));
    }

    #[test]
    fn debian_client_txt_parses_whole() {
        let p = Path::new("/usr/share/dbench/client.txt");
        if !p.exists() {
            eprintln!("skipped: dbench's client.txt is not installed");
            return;
        }
        let l = Loadfile::read(p).unwrap();
        assert_eq!(l.lines.len(), 458_344);
        assert_eq!(l.counts()[OpKind::ReadX.index()], 124_199);
        assert_eq!(l.counts()[OpKind::WriteX.index()], 39_502);
    }

    #[test]
    fn errors_name_the_line_and_what_was_expected() {
        let cases = [
            (
                "Close 1 NT_STATUS_OK\nFrobnicate 1 NT_STATUS_OK\n",
                2,
                "unknown operation `Frobnicate`",
            ),
            ("Close 1\n", 1, "`1` is not a status"),
            ("Close\n", 1, "has no expected status"),
            ("Close 1 OK\n", 1, "`OK` is not a status"),
            ("ReadX 1 0 10 NT_STATUS_OK\n", 1, "ReadX has 3 arguments: expected 4"),
            (
                "ReadX 1 -4 10 10 NT_STATUS_OK\n",
                1,
                "offset `-4`: expected a whole number",
            ),
            ("NTCreateX \"\\a 0x40 2 1 NT_STATUS_OK\n", 1, "unclosed quote"),
            ("NTCreateX \"\\a\" 0x40 9 1 NT_STATUS_OK\n", 1, "disposition 9"),
            (
                "Close 99999999999 NT_STATUS_OK\n",
                1,
                "fnum 99999999999: expected at most",
            ),
            ("Deltree \"\" NT_STATUS_OK\n", 1, "path is empty"),
            (
                "QUERY_FS_INFORMATION 999 NT_STATUS_OK\n",
                1,
                "QUERY_FS_INFORMATION level 999: SMB2 has no information class for it: expected one of 1, 2, 0x101",
            ),
            (
                "Close 1 NT_STATUS_OK\nQUERY_PATH_INFORMATION \"\\a\" 6 NT_STATUS_OK\n",
                2,
                "QUERY_PATH_INFORMATION level 6: SMB_INFO_IS_NAME_VALID",
            ),
            (
                "SET_FILE_INFORMATION 1 1020 NT_STATUS_OK\n",
                1,
                "SET_FILE_INFORMATION level 1020: benchlab sets only the times",
            ),
            ("FIND_FIRST \"\\a\\*\" 3 10 0 NT_STATUS_OK\n", 1, "FIND_FIRST level 3:"),
            (
                "QUERY_FILE_INFORMATION 1 0x10 NT_STATUS_OK\n",
                1,
                "QUERY_FILE_INFORMATION level 16:",
            ),
        ];
        for (t, line, msg) in cases {
            let e = parse(t).unwrap_err();
            assert_eq!(e.line, Some(line), "{t}: {e}");
            assert!(e.to_string().contains(msg), "{t}: {e}");
            assert!(e.to_string().starts_with(&format!("l.txt:{line}: ")), "{e}");
        }
        let e = parse("# only a comment\n").unwrap_err();
        assert!(e.to_string().contains("no operations"), "{e}");
    }

    /// The audit's escapes (issue 21) and their kin are refused with
    /// file:line and the path; `..` that stays in the workspace is not.
    #[test]
    fn paths_that_leave_the_share_are_refused_with_their_line() {
        let cases = [
            (
                r#"NTCreateX "\clients\client1\..\..\..\ESCAPED" 0x0 0x2 1 NT_STATUS_OK"#,
                "climbs out of the user's workspace",
            ),
            (
                r#"NTCreateX "/tmp/ESCAPED" 0x0 0x2 1 NT_STATUS_OK"#,
                "is an absolute local path",
            ),
            (
                r#"Deltree "\clients\client1\..\..\..\victim" NT_STATUS_OK"#,
                "climbs out",
            ),
            (r#"Unlink "\clients\client1/../../x" 0x6 NT_STATUS_OK"#, "climbs out"),
            (
                r#"Rename "\clients\client1\a" "\clients\..\b" NT_STATUS_OK"#,
                "new path",
            ),
            (r#"Mkdir "\clients\client1\..\client2" NT_STATUS_OK"#, "climbs out"),
            (r#"FIND_FIRST "\..\*" 260 1366 0 NT_STATUS_OK"#, "pattern"),
            (r#"QUERY_PATH_INFORMATION "C:\x" 1004 NT_STATUS_OK"#, "names a drive"),
            ("Mkdir \"\\clients\\a\0b\" NT_STATUS_OK", "holds a NUL byte"),
        ];
        for (line, why) in cases {
            let e = parse(&format!("Close 1 NT_STATUS_OK\n{line}\n")).unwrap_err();
            assert_eq!(e.line, Some(2), "{line}: {e}");
            assert!(e.to_string().starts_with("l.txt:2: "), "{e}");
            assert!(e.message.contains(why), "{line}: {e}");
        }
        // The path is quoted in the message, briefly.
        let long = format!(r#"Deltree "\{}\..\x" NT_STATUS_OK"#, "d".repeat(10_000));
        let e = parse(&long).unwrap_err();
        assert!(e.message.len() < 400 && e.message.contains("characters)"), "{e}");
        // `..` below the workspace stays inside it.
        let ok = parse(r#"NTCreateX "\clients\client1\a\..\b" 0x0 0x2 1 NT_STATUS_OK"#).unwrap();
        assert_eq!(ok.lines.len(), 1);
    }

    #[test]
    fn dev_zero_is_refused_at_the_loadfile_limit() {
        let e = Loadfile::read(Path::new("/dev/zero")).unwrap_err();
        assert_eq!(e.line, None);
        assert!(
            e.message.contains("larger than 256 MiB") && e.message.contains("loadfile"),
            "{e}"
        );
    }

    #[test]
    fn a_bad_line_is_quoted_briefly() {
        let e = parse(&format!("Frob{} 1 NT_STATUS_OK\n", "x".repeat(100_000))).unwrap_err();
        assert!(e.to_string().len() < 600, "{e}");
        assert!(e.message.contains("(100004 characters)"), "{e}");
    }

    #[test]
    fn client_paths_are_substituted_by_component() {
        let mut s = String::new();
        client_path("\\clients\\client1\\x\\client1", 7, &mut s);
        assert_eq!(s, "\\clients\\client7\\x\\client1");
        client_path("\\clients\\client1", 12, &mut s);
        assert_eq!(s, "\\clients\\client12");
        client_path("\\clients\\client10\\y", 3, &mut s);
        assert_eq!(s, "\\clients\\client10\\y");
        client_path("\\clients", 3, &mut s);
        assert_eq!(s, "\\clients");
    }

    proptest! {
        // Whatever the bytes, the parser answers a loadfile or an error
        // with a line, never a panic.
        #[test]
        fn never_panics(lines in proptest::collection::vec(
            prop_oneof![
                "[ -~]{0,40}",
                "(NTCreateX|ReadX|WriteX|Close|LockX|FIND_FIRST|Rename) [0-9a-fx\" \\\\]{0,30} NT_STATUS_[A-Z_]{0,8}",
            ], 0..8)) {
            let t = lines.join("\n");
            match parse(&t) {
                Ok(l) => prop_assert!(!l.lines.is_empty()),
                Err(e) => prop_assert!(e.line.is_some() || e.message.contains("no operations")),
            }
        }

        // A well-formed line survives parsing with its values.
        #[test]
        fn well_formed_lines_keep_their_values(fnum in 0u32.., off in 0u64.., size in 0u32..=65536, ts in proptest::option::of(0.0f64..1e6)) {
            let t = format!("{}WriteX {fnum} {off} {size} {size} NT_STATUS_OK", ts.map(|t| format!("{t} ")).unwrap_or_default());
            let l = parse(&t).unwrap();
            prop_assert_eq!(&l.lines[0].op, &Op::WriteX { fnum, offset: off, size, ret: size });
        }
    }
}
