//! Writing a file set to disk with its manifest, streaming.
//!
//! A million-file set must not be held in memory, and its files should be
//! written by every core. So files are produced in chunks of [`CHUNK`]
//! indices: the chunk's files are generated, written and hashed in parallel
//! (rayon), then their manifest lines are appended in index order, so the
//! manifest is the same whatever the number of threads and memory stays at
//! one chunk's entries plus one file buffer per thread.
//!
//! The manifest is written as `manifest.partial` and renamed to `manifest`
//! only once every file is written, so an interrupted run never leaves a
//! tree that looks complete.

use crate::manifest::{write_entry, Entry, Manifest};
use crate::spec::Spec;
use rayon::prelude::*;
use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::time::{Duration, Instant};
use xxhash_rust::xxh3::xxh3_64;

/// File indices generated per parallel step: large enough to keep every
/// core busy past the slowest file, small enough to report progress often.
pub const CHUNK: u64 = 1024;

/// Name of the manifest file at the root of a tree.
pub const MANIFEST_FILE: &str = "manifest";

/// What a generation wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Summary {
    pub files: u64,
    pub bytes: u64,
    pub elapsed: Duration,
}

/// A file set that could not be written, with the path at fault.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {source}")]
pub struct GenerateError {
    pub path: String,
    #[source]
    pub source: io::Error,
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> GenerateError + '_ {
    move |source| GenerateError {
        path: path.display().to_string(),
        source,
    }
}

/// The manifest text that [`generate`] writes, computed in memory (files are
/// generated and hashed, not written). For tests and for programs that
/// serve or check a set without its tree; it holds every entry, so it is
/// meant for sets of modest size.
pub fn manifest(spec: &Spec) -> Manifest {
    let entries = (0..spec.files())
        .into_par_iter()
        .map_init(Vec::new, |buf, i| {
            spec.content(i, buf);
            entry(spec, i, xxh3_64(buf))
        })
        .collect();
    Manifest {
        params: spec.params(),
        entries,
    }
}

fn entry(spec: &Spec, i: u64, xxh3: u64) -> Entry {
    let p = spec.planned(i);
    Entry {
        path: p.path,
        size: p.size,
        xxh3,
        class: p.class.to_string(),
        weight: p.weight,
    }
}

/// Writes the file set `spec` under `dir` (created if missing; files of the
/// same names are overwritten, other files are left alone) and its manifest
/// `dir/manifest`. `progress(files, bytes)` is called after each chunk with
/// the totals so far.
pub fn generate(spec: &Spec, dir: &Path, progress: &mut dyn FnMut(u64, u64)) -> Result<Summary, GenerateError> {
    let start = Instant::now();
    fs::create_dir_all(dir).map_err(io_err(dir))?;
    let partial = dir.join("manifest.partial");
    let mut out = BufWriter::with_capacity(1 << 20, File::create(&partial).map_err(io_err(&partial))?);
    // The header exactly as `Manifest::to_text` writes it.
    let header = Manifest {
        params: spec.params(),
        entries: Vec::new(),
    }
    .to_text();
    out.write_all(header.as_bytes()).map_err(io_err(&partial))?;

    let files = spec.files();
    let (mut done, mut bytes) = (0u64, 0u64);
    let mut lines = String::new();
    let mut made_dir = String::new();
    for first in (0..files).step_by(CHUNK as usize) {
        let planned: Vec<_> = (first..files.min(first + CHUNK)).map(|i| spec.planned(i)).collect();
        // Directories in index order, before the parallel writes need them.
        for p in &planned {
            if let Some((parent, _)) = p.path.rsplit_once('/') {
                if !parent.is_empty() && parent != made_dir {
                    let d = dir.join(&parent[1..]);
                    fs::create_dir_all(&d).map_err(io_err(&d))?;
                    made_dir = parent.to_string();
                }
            }
        }
        let hashes = planned
            .par_iter()
            .enumerate()
            .map_init(Vec::new, |buf, (j, p)| {
                spec.content(first + j as u64, buf);
                let path = dir.join(&p.path[1..]);
                fs::write(&path, &buf[..]).map_err(io_err(&path))?;
                Ok(xxh3_64(buf))
            })
            .collect::<Result<Vec<u64>, GenerateError>>()?;
        lines.clear();
        for (p, xxh3) in planned.into_iter().zip(hashes) {
            bytes += p.size;
            let e = Entry {
                path: p.path,
                size: p.size,
                xxh3,
                class: p.class.to_string(),
                weight: p.weight,
            };
            write_entry(&mut lines, &e);
            done += 1;
        }
        out.write_all(lines.as_bytes()).map_err(io_err(&partial))?;
        progress(done, bytes);
    }
    out.into_inner()
        .map_err(|e| io_err(&partial)(e.into_error()))?
        .sync_all()
        .map_err(io_err(&partial))?;
    let manifest = dir.join(MANIFEST_FILE);
    fs::rename(&partial, &manifest).map_err(io_err(&manifest))?;
    Ok(Summary {
        files: done,
        bytes,
        elapsed: start.elapsed(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{specweb_weighted_mean, Kind};

    fn gen(kind: Kind, seed: u64) -> (tempfile::TempDir, String) {
        let dir = tempfile::tempdir().unwrap();
        let spec = Spec::new(kind, seed).unwrap();
        let mut calls = 0;
        let s = generate(&spec, dir.path(), &mut |_, _| calls += 1).unwrap();
        assert_eq!((s.files, s.bytes), (spec.files(), spec.total_bytes()));
        assert!(calls >= 1);
        let text = fs::read_to_string(dir.path().join(MANIFEST_FILE)).unwrap();
        assert!(!dir.path().join("manifest.partial").exists());
        (dir, text)
    }

    #[test]
    fn written_tree_matches_its_manifest_and_the_in_memory_one() {
        let kind = Kind::Specweb99 { dirs: 2 };
        let (dir, text) = gen(kind.clone(), 5);
        assert_eq!(text, manifest(&Spec::new(kind, 5).unwrap()).to_text());
        let m = Manifest::parse(&text, "manifest").unwrap();
        assert_eq!(m.entries.len(), 72);
        assert_eq!(m.params[0], ("kind".to_string(), "specweb99".to_string()));
        for e in &m.entries {
            let body = fs::read(dir.path().join(&e.path[1..])).unwrap();
            assert_eq!(body.len() as u64, e.size, "{}", e.path);
            assert_eq!(xxh3_64(&body), e.xxh3, "{}", e.path);
        }
    }

    /// The manifest writes weights with 10 decimals: the sums and the mean
    /// read back must still hold, also for many directories where the
    /// smallest weights have few significant digits.
    #[test]
    fn manifest_text_keeps_weights_and_mean() {
        for dirs in [10, 1000] {
            let spec = Spec::new(Kind::Specweb99 { dirs }, 1).unwrap();
            let written = Manifest {
                params: spec.params(),
                entries: (0..spec.files()).map(|i| entry(&spec, i, 0)).collect(),
            }
            .to_text();
            let m = Manifest::parse(&written, "manifest").unwrap();
            let total = m.total_weight();
            assert!((total - 1.0).abs() < 1e-6, "dirs {dirs}: {total}");
            let mean: f64 = m.entries.iter().map(|e| e.weight * e.size as f64).sum::<f64>() / total;
            assert!((mean - specweb_weighted_mean()).abs() < 0.5, "dirs {dirs}: {mean}");
            let class3: f64 = m.entries.iter().filter(|e| e.class == "class3").map(|e| e.weight).sum();
            assert!((class3 - 0.01).abs() < 1e-6, "dirs {dirs}: {class3}");
        }
    }

    #[test]
    fn same_seed_same_tree_other_seed_other_content_same_sizes() {
        let (_a, a) = gen(Kind::Specweb99 { dirs: 1 }, 9);
        let (_b, b) = gen(Kind::Specweb99 { dirs: 1 }, 9);
        assert_eq!(a, b);
        let (_c, c) = gen(Kind::Specweb99 { dirs: 1 }, 10);
        let (ma, mc) = (Manifest::parse(&a, "a").unwrap(), Manifest::parse(&c, "c").unwrap());
        for (x, y) in ma.entries.iter().zip(&mc.entries) {
            assert_eq!((&x.path, x.size, &x.class), (&y.path, y.size, &y.class));
            assert_ne!(x.xxh3, y.xxh3, "{}", x.path);
        }
    }

    #[test]
    fn page_sets_spread_over_directories() {
        let (dir, text) = gen(Kind::Custom { count: 1001, size: 30 }, 1);
        assert_eq!(text.lines().filter(|l| !l.starts_with('#')).count(), 1001);
        assert!(dir.path().join("d0001/p001000.html").is_file());
        assert_eq!(fs::read_dir(dir.path().join("d0000")).unwrap().count(), 1000);
    }

    #[test]
    fn an_unwritable_path_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let blocker = dir.path().join("d0000");
        fs::write(&blocker, b"a file where a directory must go").unwrap();
        let spec = Spec::new(Kind::Custom { count: 1, size: 10 }, 1).unwrap();
        let e = generate(&spec, dir.path(), &mut |_, _| {}).unwrap_err();
        assert!(e.to_string().contains("d0000"), "{e}");
    }
}
