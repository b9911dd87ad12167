//! Checking a tree against its manifest: every file listed must exist with
//! the listed size and XXH3-64 checksum. A benchmark against a tree that has
//! drifted from its manifest would count correct responses as wrong bodies
//! (or the reverse), so this is the check to run before blaming a server.
//!
//! Files are checked in parallel, in chunks of manifest order, so the first
//! mismatches reported are the first in the manifest whatever the threads.

use crate::generate::{CHUNK, MANIFEST_FILE};
use crate::manifest::{Entry, Manifest, ManifestError};
use rayon::prelude::*;
use std::fmt;
use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use xxhash_rust::xxh3::Xxh3;

/// How a file differs from its manifest entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// The manifest path leaves the tree (`..`, `.`, empty components).
    BadPath,
    /// The file cannot be opened or read (missing, a directory, no permission).
    Unreadable(String),
    Size {
        expected: u64,
        found: u64,
    },
    Checksum {
        expected: u64,
        found: u64,
    },
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::BadPath => write!(f, "path leaves the tree (empty, `.` or `..` component)"),
            Problem::Unreadable(why) => write!(f, "cannot be read: {why}"),
            Problem::Size { expected, found } => {
                write!(f, "size differs: manifest {expected} bytes, file {found} bytes")
            }
            Problem::Checksum { expected, found } => {
                write!(f, "checksum differs: manifest xxh3 {expected:016x}, file {found:016x}")
            }
        }
    }
}

/// One file that does not match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    /// URL path from the manifest.
    pub path: String,
    pub problem: Problem,
}

/// The outcome of a verification.
#[derive(Debug, Clone)]
pub struct VerifyReport {
    /// Files listed in the manifest.
    pub files: u64,
    /// Bytes the manifest lists (all files, matching or not).
    pub bytes: u64,
    /// Files that do not match.
    pub mismatches: u64,
    /// The first mismatches in manifest order, at most the number asked for.
    pub first: Vec<Mismatch>,
    pub elapsed: Duration,
    /// The manifest read.
    pub manifest: PathBuf,
}

/// Checks `dir` against `dir/manifest`, keeping the first `max_report`
/// mismatches; `progress(files, bytes, total_files)` is called after each
/// chunk with the totals so far (the total is known only once the manifest
/// is read, hence passed here).
///
/// Only an unreadable or malformed manifest is an error; files that differ
/// are reported in the result.
pub fn verify(
    dir: &Path,
    max_report: usize,
    progress: &mut dyn FnMut(u64, u64, u64),
) -> Result<VerifyReport, ManifestError> {
    let start = Instant::now();
    let manifest_path = dir.join(MANIFEST_FILE);
    let m = Manifest::read(&manifest_path)?;
    let mut report = VerifyReport {
        files: 0,
        bytes: 0,
        mismatches: 0,
        first: Vec::new(),
        elapsed: Duration::ZERO,
        manifest: manifest_path,
    };
    for chunk in m.entries.chunks(CHUNK as usize) {
        let problems: Vec<Option<Problem>> = chunk
            .par_iter()
            .map_init(|| vec![0u8; 256 * 1024], |buf, e| check(dir, e, buf))
            .collect();
        for (e, problem) in chunk.iter().zip(problems) {
            report.files += 1;
            report.bytes += e.size;
            if let Some(problem) = problem {
                report.mismatches += 1;
                if report.first.len() < max_report {
                    report.first.push(Mismatch {
                        path: e.path.clone(),
                        problem,
                    });
                }
            }
        }
        progress(report.files, report.bytes, m.entries.len() as u64);
    }
    report.elapsed = start.elapsed();
    Ok(report)
}

/// Checks one file; `None` when it matches.
fn check(dir: &Path, e: &Entry, buf: &mut [u8]) -> Option<Problem> {
    let rel = e.path.strip_prefix('/').unwrap_or(&e.path);
    if rel.split('/').any(|c| c.is_empty() || c == "." || c == "..") {
        return Some(Problem::BadPath);
    }
    let unreadable = |err: io::Error| Problem::Unreadable(err.to_string());
    let mut file = match File::open(dir.join(rel)) {
        Ok(f) => f,
        Err(err) => return Some(unreadable(err)),
    };
    match file.metadata() {
        Ok(md) if !md.is_file() => return Some(Problem::Unreadable("not a regular file".into())),
        Ok(md) if md.len() != e.size => {
            return Some(Problem::Size {
                expected: e.size,
                found: md.len(),
            })
        }
        Ok(_) => {}
        Err(err) => return Some(unreadable(err)),
    }
    let mut hasher = Xxh3::new();
    let mut read = 0u64;
    loop {
        match file.read(buf) {
            Ok(0) => break,
            Ok(n) => {
                hasher.update(&buf[..n]);
                read += n as u64;
            }
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(err) => return Some(unreadable(err)),
        }
    }
    // The file may have changed size between the metadata and the read.
    if read != e.size {
        return Some(Problem::Size {
            expected: e.size,
            found: read,
        });
    }
    let found = hasher.digest();
    (found != e.xxh3).then_some(Problem::Checksum {
        expected: e.xxh3,
        found,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generate::generate;
    use crate::spec::{Kind, Spec};
    use std::fs;

    fn tree() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let spec = Spec::new(Kind::Specweb99 { dirs: 1 }, 1).unwrap();
        generate(&spec, dir.path(), &mut |_, _| {}).unwrap();
        dir
    }

    #[test]
    fn a_fresh_tree_matches() {
        let dir = tree();
        let r = verify(dir.path(), 10, &mut |_, _, _| {}).unwrap();
        assert_eq!((r.files, r.bytes, r.mismatches), (36, 5_119_488, 0));
        assert!(r.first.is_empty());
    }

    #[test]
    fn each_kind_of_damage_is_reported_in_manifest_order() {
        let dir = tree();
        let p = |rel: &str| dir.path().join(rel);
        // One flipped byte, same size.
        let mut body = fs::read(p("dir00000/class1_0")).unwrap();
        body[100] ^= 1;
        fs::write(p("dir00000/class1_0"), &body).unwrap();
        // Truncated.
        fs::write(p("dir00000/class0_3"), b"short").unwrap();
        // Missing.
        fs::remove_file(p("dir00000/class3_8")).unwrap();
        let r = verify(dir.path(), 2, &mut |_, _, _| {}).unwrap();
        assert_eq!(r.mismatches, 3);
        assert_eq!(r.first.len(), 2);
        assert_eq!(r.first[0].path, "/dir00000/class0_3");
        assert_eq!(
            r.first[0].problem,
            Problem::Size {
                expected: 410,
                found: 5
            }
        );
        assert_eq!(r.first[1].path, "/dir00000/class1_0");
        assert!(matches!(r.first[1].problem, Problem::Checksum { .. }));
        let r = verify(dir.path(), 10, &mut |_, _, _| {}).unwrap();
        assert!(matches!(r.first[2].problem, Problem::Unreadable(_)), "{:?}", r.first[2]);
    }

    #[test]
    fn paths_leaving_the_tree_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(
            dir.path().join("manifest"),
            "# benchlab-manifest 1\n/../etc/passwd\t1\t0000000000000000\tpage\t1\n",
        )
        .unwrap();
        let r = verify(dir.path(), 10, &mut |_, _, _| {}).unwrap();
        assert_eq!(r.first[0].problem, Problem::BadPath);
    }

    #[test]
    fn a_bad_manifest_names_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(
            dir.path().join("manifest"),
            "# benchlab-manifest 1\n/a\tten\t0\tpage\t1\n",
        )
        .unwrap();
        let e = verify(dir.path(), 10, &mut |_, _, _| {}).unwrap_err();
        assert!(
            e.to_string()
                .ends_with("manifest:2: size `ten` is not a whole number of bytes"),
            "{e}"
        );
    }
}
