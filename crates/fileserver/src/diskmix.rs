//! NetBench-like disk mixes: each user works in its own workspace
//! (`\clients\clientN`), filled with files before the mix, and draws one
//! action after another by its share. Every parameter is in the workload
//! file:
//!
//! ```toml
//! name = "netbench-1999"
//! workspace = "20MB"     # bytes of files in each user's workspace
//! read_size = "4KB"      # bytes per ReadX
//! write_size = "4KB"     # bytes per WriteX
//! [file_size]            # log-normal, clamped to [min, max]
//! median = "85KB"
//! p90 = "260KB"
//! min = "1KB"
//! max = "2MB"
//! [operations]           # percent of actions; they sum to 100
//! write = 40
//! read = 8
//! ...
//! ```
//!
//! Actions and the operations each issues (counted one by one):
//! `read`/`write` one ReadX/WriteX at a random offset of the open file;
//! `open` Close of the open file, NTCreateX of another workspace file;
//! `query_path` QUERY_PATH_INFORMATION of a workspace file; `query_file`
//! QUERY_FILE_INFORMATION of the open file; `find` FIND_FIRST `*.dat` in
//! the workspace; `create` NTCreateX of a new temporary file, WriteX of a
//! drawn size in `write_size` pieces, Close; `delete` Unlink of the oldest
//! temporary file (with none, of a missing name, expecting
//! OBJECT_NAME_NOT_FOUND); `rename` Rename of the newest temporary file
//! (likewise); `lock` LockX and UnlockX of one byte; `flush` Flush. An
//! action that needs an open file opens one first (an NTCreateX). The
//! queries ask FileAllInformation, the find FileBothDirectoryInformation
//! (the classes of SMB1's QUERY_FILE_ALL_INFO and FIND_FILE_BOTH_DIRECTORY
//! levels a NetBench client asked).

use crate::backend::FileBackend;
use crate::loadfile::OpKind;
use crate::status::Status;
use benchlab_model::input::{excerpt, read_bounded_text, InputError, MAX_DISK_MIX_BYTES};
use benchlab_smb2::msg;
use serde::Deserialize;
use std::collections::VecDeque;
use std::fmt;
use std::path::{Path, PathBuf};
use toml::Spanned;

/// The actions of a disk mix, in the workload file's words.
pub const ACTIONS: [&str; 11] = [
    "write",
    "read",
    "open",
    "query_path",
    "query_file",
    "find",
    "create",
    "delete",
    "rename",
    "lock",
    "flush",
];

/// A disk mix, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct DiskMix {
    pub name: String,
    /// The workload file it was read from.
    pub path: PathBuf,
    pub workspace: u64,
    pub read_size: u32,
    pub write_size: u32,
    pub median: u64,
    pub p90: u64,
    pub min: u64,
    pub max: u64,
    /// Percent per action of [`ACTIONS`].
    pub shares: [f64; ACTIONS.len()],
}

/// A problem in a disk-mix workload file, with its place.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct DiskMixError {
    pub file: PathBuf,
    pub line: Option<usize>,
    pub column: Option<usize>,
    pub message: String,
}

impl fmt::Display for DiskMixError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(l) = self.line {
            write!(f, ":{l}")?;
            if let Some(c) = self.column {
                write!(f, ":{c}")?;
            }
        }
        write!(f, ": {}", self.message)
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    name: Option<String>,
    description: Option<String>,
    workspace: Spanned<toml::Value>,
    read_size: Option<Spanned<toml::Value>>,
    write_size: Option<Spanned<toml::Value>>,
    file_size: Spanned<RawSizes>,
    operations: Spanned<std::collections::BTreeMap<String, Spanned<f64>>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSizes {
    median: Spanned<toml::Value>,
    p90: Spanned<toml::Value>,
    min: Option<Spanned<toml::Value>>,
    max: Option<Spanned<toml::Value>>,
}

/// `4096`, `"4KB"` (1,000s), `"4KiB"` (1,024s), `"20MB"`, `"1GiB"`.
pub fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let mult: f64 = match unit.trim() {
        "" | "B" => 1.0,
        "KB" | "kB" => 1e3,
        "KiB" => 1024.0,
        "MB" => 1e6,
        "MiB" => 1024.0 * 1024.0,
        "GB" => 1e9,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        _ => return None,
    };
    let n: f64 = num.parse().ok()?;
    let v = n * mult;
    (0.0..1e15).contains(&v).then_some(v.round() as u64)
}

/// A TOML parser's message with each `…`-quoted piece (a key, a value of
/// the user's) cut to an [`excerpt`], the rest kept whole.
fn shorten_quoted(m: &str) -> String {
    let mut out = String::new();
    for (i, piece) in m.split('`').enumerate() {
        if i > 0 {
            out.push('`');
        }
        if i % 2 == 1 {
            out.push_str(&excerpt(piece));
        } else {
            out.push_str(piece);
        }
    }
    out
}

impl DiskMix {
    pub fn read(path: &Path) -> Result<DiskMix, DiskMixError> {
        // Bounded: a disk mix named by mistake as /dev/zero must not grow
        // until the machine runs out of memory.
        let text = read_bounded_text(path, "disk mix", MAX_DISK_MIX_BYTES).map_err(|e| DiskMixError {
            file: path.to_path_buf(),
            line: None,
            column: None,
            message: match e {
                InputError::Io { source, .. } => format!("cannot read the disk-mix workload: {source}"),
                e => e.message(),
            },
        })?;
        DiskMix::parse(path, &text)
    }

    pub fn parse(path: &Path, text: &str) -> Result<DiskMix, DiskMixError> {
        let at = |offset: usize, message: String| {
            let (line, column) = benchlab_model::line_col(text, offset);
            DiskMixError {
                file: path.to_path_buf(),
                line: Some(line),
                column: Some(column),
                message,
            }
        };
        let raw: Raw = toml::from_str(text).map_err(|e| match e.span() {
            Some(s) => at(s.start, shorten_quoted(e.message().trim())),
            None => DiskMixError {
                file: path.to_path_buf(),
                line: None,
                column: None,
                message: shorten_quoted(e.message().trim()),
            },
        })?;
        let _ = raw.description;
        let size = |v: &Spanned<toml::Value>, what: &str, min: u64| -> Result<u64, DiskMixError> {
            let n = match v.get_ref() {
                toml::Value::Integer(i) if *i >= 0 => Some(*i as u64),
                toml::Value::String(s) => parse_size(s),
                _ => None,
            };
            match n {
                Some(n) if n >= min => Ok(n),
                _ => Err(at(
                    v.span().start,
                    format!(
                        "{what} {}: expected a size of at least {min} bytes, e.g. 4096 or \"85KB\" (KB, MB, GB are 1,000s; KiB, MiB, GiB 1,024s)",
                        excerpt(&v.get_ref().to_string())
                    ),
                )),
            }
        };
        let workspace = size(&raw.workspace, "workspace", 1)?;
        let read_size = raw
            .read_size
            .as_ref()
            .map(|v| size(v, "read_size", 1))
            .transpose()?
            .unwrap_or(4096);
        let write_size = raw
            .write_size
            .as_ref()
            .map(|v| size(v, "write_size", 1))
            .transpose()?
            .unwrap_or(4096);
        for (v, s, what) in [
            (&raw.read_size, read_size, "read_size"),
            (&raw.write_size, write_size, "write_size"),
        ] {
            if s > 16 << 20 {
                let off = v.as_ref().map(|v| v.span().start).unwrap_or(0);
                return Err(at(off, format!("{what} {s}: expected at most 16 MiB")));
            }
        }
        let fs = raw.file_size.get_ref();
        let median = size(&fs.median, "file_size.median", 1)?;
        let p90 = size(&fs.p90, "file_size.p90", 1)?;
        if p90 < median {
            return Err(at(
                fs.p90.span().start,
                format!("file_size.p90 {p90} is below the median {median}: expected p90 ≥ median"),
            ));
        }
        let min = fs
            .min
            .as_ref()
            .map(|v| size(v, "file_size.min", 1))
            .transpose()?
            .unwrap_or(1);
        let max = fs
            .max
            .as_ref()
            .map(|v| size(v, "file_size.max", 1))
            .transpose()?
            .unwrap_or(p90.saturating_mul(8));
        if !(min <= median && median <= max) {
            return Err(at(
                raw.file_size.span().start,
                format!("file_size: min {min} ≤ median {median} ≤ max {max} does not hold"),
            ));
        }
        if workspace < median {
            return Err(at(
                raw.workspace.span().start,
                format!("workspace {workspace}: expected at least the median file size {median}"),
            ));
        }
        let mut shares = [0.0; ACTIONS.len()];
        for (k, v) in raw.operations.get_ref() {
            let Some(i) = ACTIONS.iter().position(|a| a == k) else {
                return Err(at(
                    v.span().start,
                    format!(
                        "unknown action `{}`: expected one of {}",
                        excerpt(k),
                        ACTIONS.join(", ")
                    ),
                ));
            };
            let p = *v.get_ref();
            if !(p.is_finite() && (0.0..=100.0).contains(&p)) {
                return Err(at(
                    v.span().start,
                    format!("{} = {p}: expected a percentage from 0 to 100", excerpt(k)),
                ));
            }
            shares[i] = p;
        }
        let total: f64 = shares.iter().sum();
        if (total - 100.0).abs() > 0.01 {
            return Err(at(
                raw.operations.span().start,
                format!("[operations] add up to {total}: expected 100 (percent of actions)"),
            ));
        }
        Ok(DiskMix {
            path: path.to_path_buf(),
            name: raw.name.unwrap_or_else(|| {
                path.file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default()
            }),
            workspace,
            read_size: read_size as u32,
            write_size: write_size as u32,
            median,
            p90,
            min,
            max,
            shares,
        })
    }

    /// A file size drawn from the log-normal law of median and p90.
    pub fn draw_size(&self, rng: &mut Rng) -> u64 {
        // p90 of a log-normal is median·e^(1.2816·σ).
        let sigma = (self.p90 as f64 / self.median as f64).ln() / 1.281_551_565_5;
        let x = (self.median as f64) * (sigma * rng.normal()).exp();
        (x.round() as u64).clamp(self.min, self.max)
    }
}

/// A small seeded generator (SplitMix64): reproducible draws per user.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next_u64() % n
        }
    }
    /// Standard normal (Box–Muller).
    pub fn normal(&mut self) -> f64 {
        let u1 = self.unit().max(f64::MIN_POSITIVE);
        let u2 = self.unit();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }
}

/// One operation done: its kind, latency, and outcome against expectation.
pub type Record<'a> = &'a mut dyn FnMut(OpKind, Status, Status, u64, u64);

/// A user's state in a disk mix: its workspace files and temporaries.
pub struct DiskMixUser<'a> {
    mix: &'a DiskMix,
    dir: String,
    files: Vec<u64>,
    temps: VecDeque<(u64, u64)>,
    next_temp: u64,
    /// The open workspace file: (index, size).
    open: Option<(usize, u64)>,
    rng: Rng,
    buf: Vec<u8>,
}

/// The key of the user's open workspace file; temporaries use their own.
const OPEN_KEY: u64 = 1;
const TEMP_KEY: u64 = 2;

impl<'a> DiskMixUser<'a> {
    pub fn new(mix: &'a DiskMix, user: u32, seed: u64) -> DiskMixUser<'a> {
        let mut rng = Rng::new(seed ^ (user as u64).wrapping_mul(0xA076_1D64_78BD_642F));
        let mut buf = vec![0u8; mix.read_size.max(mix.write_size).max(64 * 1024) as usize];
        for b in buf.iter_mut() {
            *b = rng.next_u64() as u8;
        }
        DiskMixUser {
            mix,
            dir: format!("\\clients\\client{user}"),
            files: Vec::new(),
            temps: VecDeque::new(),
            next_temp: 0,
            open: None,
            rng,
            buf,
        }
    }

    fn file_path(&self, i: usize) -> String {
        format!("{}\\f{i:05}.dat", self.dir)
    }

    /// Empties and fills the workspace before the mix (not measured):
    /// files of drawn sizes until their sum reaches `workspace`. Returns
    /// the bytes written.
    pub(crate) fn fill(&mut self, b: &mut dyn FileBackend) -> Result<u64, String> {
        let fail = |what: &str, s: Status| format!("filling the workspace {}: {what}: {s}", self.dir);
        b.deltree(&self.dir).map_err(|s| fail("Deltree", s))?;
        b.mkdir("\\clients").map_err(|s| fail("Mkdir \\clients", s))?;
        b.mkdir(&self.dir).map_err(|s| fail("Mkdir", s))?;
        let mut total = 0;
        while total < self.mix.workspace {
            let size = self.mix.draw_size(&mut self.rng).min(self.mix.workspace - total).max(1);
            let p = self.file_path(self.files.len());
            b.create(TEMP_KEY, &p, 0, 2)
                .map_err(|s| format!("filling {p}: NTCreateX: {s}"))?;
            let mut off = 0;
            while off < size {
                let n = (size - off).min(self.buf.len() as u64) as usize;
                b.write(TEMP_KEY, off, &self.buf[..n])
                    .map_err(|s| format!("filling {p}: WriteX: {s}"))?;
                off += n as u64;
            }
            b.close(TEMP_KEY).map_err(|s| format!("filling {p}: Close: {s}"))?;
            self.files.push(size);
            total += size;
        }
        Ok(total)
    }

    /// Runs `f`, timing it, and reports it.
    fn op<T>(
        record: Record<'_>,
        kind: OpKind,
        expect: Status,
        bytes: impl Fn(&T) -> u64,
        f: impl FnOnce() -> Result<T, Status>,
    ) -> Option<T> {
        let t = std::time::Instant::now();
        let r = f();
        let us = t.elapsed().as_micros() as u64;
        match r {
            Ok(v) => {
                record(kind, expect, Status::Ok, us, bytes(&v));
                Some(v)
            }
            Err(s) => {
                record(kind, expect, s, us, 0);
                None
            }
        }
    }

    fn ensure_open(&mut self, b: &mut dyn FileBackend, record: Record<'_>) -> Option<(usize, u64)> {
        if self.open.is_none() && !self.files.is_empty() {
            let i = self.rng.below(self.files.len() as u64) as usize;
            let p = self.file_path(i);
            Self::op(
                record,
                OpKind::NtCreateX,
                Status::Ok,
                |_| 0,
                || b.create(OPEN_KEY, &p, 0, 1),
            )?;
            self.open = Some((i, self.files[i]));
        }
        self.open
    }

    /// Draws and does one action. `record(kind, expected, got, µs, bytes)`
    /// is called for every operation it issues.
    pub fn step(&mut self, b: &mut dyn FileBackend, record: Record<'_>) {
        let mut x = self.rng.unit() * 100.0;
        let mut action = ACTIONS.len() - 1;
        for (i, s) in self.mix.shares.iter().enumerate() {
            if x < *s {
                action = i;
                break;
            }
            x -= s;
        }
        match ACTIONS[action] {
            "write" | "read" => {
                let Some((_, size)) = self.ensure_open(b, record) else {
                    return;
                };
                let write = ACTIONS[action] == "write";
                // Within the file: a workspace file never grows.
                let n = (if write { self.mix.write_size } else { self.mix.read_size } as u64).min(size);
                let off = if size > n { self.rng.below(size - n + 1) } else { 0 };
                if write {
                    let data = &self.buf[..n as usize];
                    Self::op(
                        record,
                        OpKind::WriteX,
                        Status::Ok,
                        |w| *w as u64,
                        || b.write(OPEN_KEY, off, data),
                    );
                } else {
                    let buf = &mut self.buf[..n as usize];
                    Self::op(
                        record,
                        OpKind::ReadX,
                        Status::Ok,
                        |r| *r as u64,
                        || b.read(OPEN_KEY, off, buf),
                    );
                }
            }
            "open" => {
                if self.open.take().is_some() {
                    Self::op(record, OpKind::Close, Status::Ok, |_| 0, || b.close(OPEN_KEY));
                }
                self.ensure_open(b, record);
            }
            "query_path" => {
                let i = self.rng.below(self.files.len() as u64) as usize;
                let p = self.file_path(i);
                Self::op(
                    record,
                    OpKind::QueryPathInformation,
                    Status::Ok,
                    |_| 0,
                    || b.query_path(&p, msg::FILE_ALL_INFORMATION),
                );
            }
            "query_file" => {
                if self.ensure_open(b, record).is_some() {
                    Self::op(
                        record,
                        OpKind::QueryFileInformation,
                        Status::Ok,
                        |_| 0,
                        || b.query_file(OPEN_KEY, msg::FILE_ALL_INFORMATION),
                    );
                }
            }
            "find" => {
                let p = format!("{}\\*.dat", self.dir);
                Self::op(
                    record,
                    OpKind::FindFirst,
                    Status::Ok,
                    |_| 0,
                    || b.find(&p, msg::FILE_BOTH_DIRECTORY_INFORMATION),
                );
            }
            "create" => {
                let size = self.mix.draw_size(&mut self.rng);
                let id = self.next_temp;
                self.next_temp += 1;
                let p = format!("{}\\t{id:06}.tmp", self.dir);
                if Self::op(
                    record,
                    OpKind::NtCreateX,
                    Status::Ok,
                    |_| 0,
                    || b.create(TEMP_KEY, &p, 0, 2),
                )
                .is_none()
                {
                    return;
                }
                let mut off = 0;
                while off < size {
                    let n = (size - off).min(self.mix.write_size as u64) as usize;
                    let data = &self.buf[..n];
                    Self::op(
                        record,
                        OpKind::WriteX,
                        Status::Ok,
                        |w| *w as u64,
                        || b.write(TEMP_KEY, off, data),
                    );
                    off += n as u64;
                }
                Self::op(record, OpKind::Close, Status::Ok, |_| 0, || b.close(TEMP_KEY));
                self.temps.push_back((id, size));
            }
            "delete" => match self.temps.pop_front() {
                Some((id, _)) => {
                    let p = format!("{}\\t{id:06}.tmp", self.dir);
                    Self::op(record, OpKind::Unlink, Status::Ok, |_| 0, || b.unlink(&p));
                }
                None => {
                    let p = format!("{}\\missing.tmp", self.dir);
                    Self::op(
                        record,
                        OpKind::Unlink,
                        Status::ObjectNameNotFound,
                        |_| 0,
                        || b.unlink(&p),
                    );
                }
            },
            "rename" => match self.temps.pop_back() {
                Some((id, size)) => {
                    let new = self.next_temp;
                    self.next_temp += 1;
                    let (from, to) = (
                        format!("{}\\t{id:06}.tmp", self.dir),
                        format!("{}\\t{new:06}.tmp", self.dir),
                    );
                    let ok = Self::op(record, OpKind::Rename, Status::Ok, |_| 0, || b.rename(&from, &to)).is_some();
                    self.temps.push_back((if ok { new } else { id }, size));
                }
                None => {
                    let (from, to) = (
                        format!("{}\\missing.tmp", self.dir),
                        format!("{}\\missing2.tmp", self.dir),
                    );
                    Self::op(
                        record,
                        OpKind::Rename,
                        Status::ObjectNameNotFound,
                        |_| 0,
                        || b.rename(&from, &to),
                    );
                }
            },
            "lock" => {
                if self.ensure_open(b, record).is_some() {
                    Self::op(
                        record,
                        OpKind::LockX,
                        Status::Ok,
                        |_| 0,
                        || b.lock(OPEN_KEY, 0, 1, true),
                    );
                    Self::op(
                        record,
                        OpKind::UnlockX,
                        Status::Ok,
                        |_| 0,
                        || b.lock(OPEN_KEY, 0, 1, false),
                    );
                }
            }
            _ => {
                if self.ensure_open(b, record).is_some() {
                    Self::op(record, OpKind::Flush, Status::Ok, |_| 0, || b.flush(OPEN_KEY));
                }
            }
        }
    }

    /// Closes what the user left open (after the mix, not measured).
    pub fn finish(&mut self, b: &mut dyn FileBackend) {
        if self.open.take().is_some() {
            let _ = b.close(OPEN_KEY);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::LocalBackend;

    const GOOD: &str = r#"
name = "m"
workspace = "1MB"
write_size = "4KiB"
[file_size]
median = "85KB"
p90 = "260KB"
max = "2MB"
[operations]
write = 40
read = 8
open = 10
query_path = 12
query_file = 4
find = 8
create = 4
delete = 4
rename = 2
lock = 4
flush = 4
"#;

    fn parse(t: &str) -> Result<DiskMix, DiskMixError> {
        DiskMix::parse(Path::new("m.toml"), t)
    }

    #[test]
    fn dev_zero_is_refused_at_the_disk_mix_limit() {
        let e = DiskMix::read(Path::new("/dev/zero")).unwrap_err();
        assert!(
            e.message.contains("larger than 16 MiB") && e.message.contains("disk mix"),
            "{e}"
        );
    }

    #[test]
    fn long_keys_and_values_are_quoted_briefly() {
        let k = "k".repeat(100_000);
        let e = parse(&GOOD.replace("read = 8", &format!("{k} = 8"))).unwrap_err();
        assert!(e.message.contains("unknown action") && e.message.len() < 400, "{e}");
        let e = parse(&GOOD.replace("name = \"m\"", &format!("{k} = 1"))).unwrap_err();
        assert!(
            e.message.contains("(100000 characters)") && e.message.len() < 600,
            "{e}"
        );
        let e = parse(&GOOD.replace("\"1MB\"", &format!("\"{k}\""))).unwrap_err();
        assert!(e.message.contains("workspace") && e.message.len() < 400, "{e}");
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("85KB"), Some(85_000));
        assert_eq!(parse_size("4KiB"), Some(4096));
        assert_eq!(parse_size("20MB"), Some(20_000_000));
        assert_eq!(parse_size("12"), Some(12));
        assert_eq!(parse_size("1.5KB"), Some(1500));
        assert_eq!(parse_size("4 furlongs"), None);
    }

    #[test]
    fn parses_and_draws_the_size_law() {
        let m = parse(GOOD).unwrap();
        assert_eq!((m.workspace, m.write_size, m.read_size), (1_000_000, 4096, 4096));
        let mut rng = Rng::new(3);
        let mut v: Vec<u64> = (0..20_000).map(|_| m.draw_size(&mut rng)).collect();
        v.sort();
        let (med, p90) = (v[10_000] as f64, v[18_000] as f64);
        assert!((med / 85_000.0 - 1.0).abs() < 0.05, "{med}");
        assert!((p90 / 260_000.0 - 1.0).abs() < 0.05, "{p90}");
    }

    #[test]
    fn errors_have_places() {
        let e = parse(&GOOD.replace("write = 40", "write = 41")).unwrap_err();
        assert!(e.to_string().starts_with("m.toml:9:"), "{e}");
        assert!(e.message.contains("add up to 101"), "{e}");
        let e = parse(&GOOD.replace("read = 8", "raed = 8")).unwrap_err();
        assert!(e.to_string().starts_with("m.toml:11:"), "{e}");
        assert!(e.message.contains("unknown action `raed`"), "{e}");
        let e = parse(&GOOD.replace("\"1MB\"", "\"1 parsec\"")).unwrap_err();
        assert!(e.to_string().starts_with("m.toml:3:"), "{e}");
        let e = parse(&GOOD.replace("p90 = \"260KB\"", "p90 = \"2KB\"")).unwrap_err();
        assert!(e.message.contains("below the median"), "{e}");
        let e = parse(&GOOD.replace("name = \"m\"", "nmae = \"m\"")).unwrap_err();
        assert_eq!(e.line, Some(2), "{e}");
    }

    /// The shipped NetBench 1999 mix keeps NetBench's share of writes
    /// among I/O operations (about 83 %).
    #[test]
    fn the_shipped_netbench_mix_is_83_percent_writes() {
        let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../suites/workloads/netbench-1999-disk-mix.toml");
        let mut m = DiskMix::read(&p).unwrap();
        m.workspace = 1_000_000;
        let d = tempfile::tempdir().unwrap();
        let mut b = LocalBackend::new(d.path()).unwrap();
        let mut u = DiskMixUser::new(&m, 1, 7);
        u.fill(&mut b).unwrap();
        let (mut w, mut r) = (0u64, 0u64);
        for _ in 0..20_000 {
            u.step(&mut b, &mut |k, want, got, _, _| {
                assert_eq!(want, got, "{k}");
                w += (k == OpKind::WriteX) as u64;
                r += (k == OpKind::ReadX) as u64;
            });
        }
        let share = w as f64 / (w + r) as f64;
        assert!((0.80..0.87).contains(&share), "{share}");
    }

    #[test]
    fn a_user_fills_its_workspace_and_runs_the_mix_without_errors() {
        let m = parse(GOOD).unwrap();
        let d = tempfile::tempdir().unwrap();
        let mut b = LocalBackend::new(d.path()).unwrap();
        let mut u = DiskMixUser::new(&m, 3, 1);
        assert_eq!(u.fill(&mut b).unwrap(), 1_000_000);
        let on_disk: u64 = std::fs::read_dir(d.path().join("clients/client3"))
            .unwrap()
            .map(|e| e.unwrap().metadata().unwrap().len())
            .sum();
        assert_eq!(on_disk, 1_000_000);
        let (mut ops, mut bad, mut writes, mut io) = (0, 0, 0u64, 0u64);
        for _ in 0..3000 {
            u.step(&mut b, &mut |k, want, got, _, _| {
                ops += 1;
                bad += (want != got) as u64;
                if k == OpKind::WriteX {
                    writes += 1;
                }
                if k == OpKind::WriteX || k == OpKind::ReadX {
                    io += 1;
                }
            });
        }
        u.finish(&mut b);
        assert!(ops >= 3000);
        assert_eq!(bad, 0);
        // Writes dominate I/O, as in NetBench's mix (about 83 %).
        let share = writes as f64 / io as f64;
        assert!(share > 0.75, "{share}");
    }
}
