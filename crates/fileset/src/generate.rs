//! Writing a file set to disk with its manifest, streaming.
//!
//! A million-file set must not be held in memory, and its files should be
//! written by every core. So files are produced in steps of [`STEP`]
//! indices: the step's files are generated, written and hashed in parallel
//! (rayon, a directory's run of files per task), then their manifest lines
//! are appended in index order, so the manifest is the same whatever the
//! number of threads and memory stays at one step's entries plus one file
//! buffer per thread.
//!
//! The manifest is written as `manifest.partial` and renamed to `manifest`
//! only once every file is written, so an interrupted run never leaves a
//! tree that looks complete.

use crate::manifest::{write_entry, Entry, Manifest};
use crate::spec::Spec;
use rayon::prelude::*;
use std::ffi::CString;
use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::ops::Range;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
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

/// File indices planned per generation step: enough directories of a
/// page set (1,000 files each) that every writer thread works in a
/// directory of its own (see [`groups`]), and few enough entries held that
/// memory stays a few megabytes.
const STEP: u64 = 16 * CHUNK;

/// Writes the file set `spec` under `dir` (created if missing; files of the
/// same names are overwritten, other files are left alone) and its manifest
/// `dir/manifest`. `progress(files, bytes)` is called after each step with
/// the totals so far.
///
/// Each step's files are split into runs of one directory each, and the
/// runs are written in parallel: two threads creating files in one
/// directory take turns on its lock (ext4 holds the directory's inode lock
/// through each create), in different directories they do not. A run opens
/// its directory once and creates its files relative to it (`openat`), so
/// no file's create walks the whole path again.
pub fn generate(spec: &Spec, dir: &Path, progress: &mut dyn FnMut(u64, u64)) -> Result<Summary, GenerateError> {
    let start = Instant::now();
    let new_root = fs::symlink_metadata(dir).is_err();
    fs::create_dir_all(dir).map_err(io_err(dir))?;
    if new_root {
        spread_subdirectories(dir);
    }
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
    for first in (0..files).step_by(STEP as usize) {
        let planned: Vec<_> = (first..files.min(first + STEP)).map(|i| spec.planned(i)).collect();
        // Directories in index order, before the parallel writes need them.
        for p in &planned {
            let parent = parent_of(&p.path);
            if !parent.is_empty() && parent != made_dir {
                let d = dir.join(parent);
                fs::create_dir_all(&d).map_err(io_err(&d))?;
                made_dir = parent.to_string();
            }
        }
        let runs = groups(&planned);
        let hashes = runs
            .par_iter()
            .map_init(Vec::new, |buf, run| {
                write_run(spec, dir, first, &planned, run.clone(), buf)
            })
            .collect::<Result<Vec<Vec<u64>>, GenerateError>>()?;
        lines.clear();
        for (p, xxh3) in planned.into_iter().zip(hashes.into_iter().flatten()) {
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

/// `FS_TOPDIR_FL`, `chattr +T`: "the top of directory hierarchies for the
/// purposes of the Orlov block allocator" (ext2, ext3, ext4).
const FS_TOPDIR_FL: libc::c_int = 0x0002_0000;

/// Marks a tree root this run created so that ext4 places its
/// subdirectories as it places top-level ones: each in a block group of
/// its own with more free inodes and blocks than average, not all in the
/// root's own group.
///
/// Why: a set's directories are unrelated to each other, the case the flag
/// is for, and packing them next to the root makes every create pay for
/// that group's past. On ext4 without a journal (the development VM's root
/// file system) the inode allocator skips, one by one and from the group's
/// start on every create, each free inode deleted in the last minute or
/// more; after a large tree was deleted beside the root, a create there
/// cost eight times as much (402 against 48 µs). Spread out, ct-1m's
/// 1,000 directories mostly land in groups without that past
/// (bench/README.md, "ct-1m generation"). The file contents, names and
/// manifest are the same either way.
///
/// Best effort: a file system without inode flags (tmpfs, a network file
/// system) refuses the call, and the set is written as before. A tree root
/// that existed before the run is the user's directory, and its flags are
/// the user's: creating it first keeps the directories packed beside it,
/// as before.
fn spread_subdirectories(dir: &Path) {
    let Ok(root) = File::open(dir) else { return };
    let Some(flags) = inode_flags(&root) else { return };
    if flags & FS_TOPDIR_FL == 0 {
        let flags = flags | FS_TOPDIR_FL;
        // SAFETY: FS_IOC_SETFLAGS reads one int from `flags`. Its failure
        // leaves the directory as it was, which is only slower.
        unsafe { libc::ioctl(root.as_raw_fd(), libc::FS_IOC_SETFLAGS, &flags) };
    }
}

/// A file's inode flags (`lsattr`), where its file system keeps them.
fn inode_flags(file: &File) -> Option<libc::c_int> {
    let mut flags: libc::c_int = 0;
    // SAFETY: FS_IOC_GETFLAGS writes one int (the kernel's `int __user *`,
    // whatever the request's encoded size says) to `flags`.
    (unsafe { libc::ioctl(file.as_raw_fd(), libc::FS_IOC_GETFLAGS, &mut flags) } == 0).then_some(flags)
}

/// A planned path's directory under the tree root, without the leading
/// `/` (empty for a file at the root).
fn parent_of(path: &str) -> &str {
    match path.rsplit_once('/') {
        Some((parent, _)) => parent.strip_prefix('/').unwrap_or(parent),
        None => "",
    }
}

/// Splits `planned` into runs of consecutive files in one directory (in
/// index order; a directory the layout visited twice is two runs). Runs of
/// more than [`CHUNK`] files are cut, so that a set of few large directories
/// still keeps every thread busy.
fn groups(planned: &[crate::spec::Planned]) -> Vec<Range<usize>> {
    let mut runs = Vec::new();
    let mut begin = 0;
    for j in 1..=planned.len() {
        let cut = j == planned.len()
            || j - begin >= CHUNK as usize
            || parent_of(&planned[j].path) != parent_of(&planned[begin].path);
        if cut {
            runs.push(begin..j);
            begin = j;
        }
    }
    runs
}

/// Writes the files `run` of a step (indices `first + run`, all in one
/// directory) and returns their checksums in order.
fn write_run(
    spec: &Spec,
    dir: &Path,
    first: u64,
    planned: &[crate::spec::Planned],
    run: Range<usize>,
    buf: &mut Vec<u8>,
) -> Result<Vec<u64>, GenerateError> {
    let parent = parent_of(&planned[run.start].path);
    let dir_path = dir.join(parent);
    let dir_fd = open_dir(&dir_path).map_err(io_err(&dir_path))?;
    let mut hashes = Vec::with_capacity(run.len());
    for j in run {
        let p = &planned[j];
        // The planned size, not `spec.content` (which plans the file again).
        crate::content::fill(spec.content_seed(first + j as u64), p.size as usize, buf);
        let name = p.path.rsplit_once('/').map_or(p.path.as_str(), |(_, n)| n);
        create_in(&dir_fd, name, buf).map_err(|e| io_err(&dir.join(&p.path[1..]))(e))?;
        hashes.push(xxh3_64(buf));
    }
    Ok(hashes)
}

/// Opens directory `path` to create files relative to it.
fn open_dir(path: &Path) -> io::Result<OwnedFd> {
    let c = CString::new(path.as_os_str().as_bytes()).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: `c` is a NUL-terminated path; the descriptor returned, if
    // any, is owned by nobody else.
    let fd = unsafe { libc::open(c.as_ptr(), libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just opened and is owned here alone.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Creates (or truncates) file `name` in directory `dir` holding `data`:
/// one `openat`, the writes, one `close`; no `fsync` (the manifest is
/// synced, and renamed into place, after every file is written).
fn create_in(dir: &OwnedFd, name: &str, data: &[u8]) -> io::Result<()> {
    let c = CString::new(name).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: `dir` is an open directory descriptor and `c` NUL-terminated.
    let fd = unsafe {
        libc::openat(
            dir.as_raw_fd(),
            c.as_ptr(),
            libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC | libc::O_CLOEXEC,
            0o644 as libc::c_uint,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just opened and is owned here alone; dropping the
    // `File` closes it.
    let mut file = unsafe { File::from_raw_fd(fd) };
    file.write_all(data)
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

    /// Steps, directory runs and threads must not change a byte: the same
    /// manifest and tree from one writer thread and from four, over more
    /// than one step and with runs cut inside a directory, equal to the
    /// in-memory manifest.
    #[test]
    fn thread_count_and_steps_change_nothing() {
        let spec = Spec::new(
            Kind::Custom {
                count: STEP + 2500,
                size: 40,
            },
            3,
        )
        .unwrap();
        let expected = manifest(&spec).to_text();
        let mut trees = Vec::new();
        for threads in [1, 4] {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            let dir = tempfile::tempdir().unwrap();
            let s = pool.install(|| generate(&spec, dir.path(), &mut |_, _| {})).unwrap();
            assert_eq!((s.files, s.bytes), (STEP + 2500, (STEP + 2500) * 40));
            let text = fs::read_to_string(dir.path().join(MANIFEST_FILE)).unwrap();
            assert_eq!(text, expected, "{threads} threads");
            trees.push(dir);
        }
        let m = Manifest::parse(&expected, "manifest").unwrap();
        for e in m.entries.iter().step_by(97).chain(m.entries.last()) {
            let a = fs::read(trees[0].path().join(&e.path[1..])).unwrap();
            let b = fs::read(trees[1].path().join(&e.path[1..])).unwrap();
            assert_eq!((a.len() as u64, xxh3_64(&a)), (e.size, e.xxh3), "{}", e.path);
            assert_eq!(a, b, "{}", e.path);
        }
    }

    #[test]
    fn runs_follow_directories_and_are_cut_at_a_chunk() {
        let plan = |paths: &[&str]| -> Vec<crate::spec::Planned> {
            paths
                .iter()
                .map(|p| crate::spec::Planned {
                    path: p.to_string(),
                    size: 1,
                    class: "c",
                    weight: 1.0,
                })
                .collect()
        };
        let p = plan(&["/a", "/b", "/d/x", "/d/y", "/e/f/z", "/d/w"]);
        assert_eq!(groups(&p), vec![0..2, 2..4, 4..5, 5..6]);
        assert_eq!((parent_of("/a"), parent_of("/e/f/z")), ("", "e/f"));
        let many: Vec<String> = (0..CHUNK + 5).map(|i| format!("/d/{i}")).collect();
        let p = plan(&many.iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(groups(&p), vec![0..CHUNK as usize, CHUNK as usize..CHUNK as usize + 5]);
    }

    #[test]
    fn an_existing_file_is_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let spec = Spec::new(Kind::Custom { count: 1, size: 10 }, 1).unwrap();
        fs::create_dir_all(dir.path().join("d0000")).unwrap();
        fs::write(dir.path().join("d0000/p000000.html"), vec![b'x'; 5000]).unwrap();
        generate(&spec, dir.path(), &mut |_, _| {}).unwrap();
        let body = fs::read(dir.path().join("d0000/p000000.html")).unwrap();
        let m = manifest(&spec);
        assert_eq!((body.len() as u64, xxh3_64(&body)), (10, m.entries[0].xxh3));
    }

    /// A tree root the run creates gets `chattr +T`; one that existed,
    /// empty or not, is the user's directory and keeps its flags.
    #[test]
    fn only_a_new_tree_root_spreads_its_subdirectories() {
        let dir = tempfile::tempdir().unwrap();
        let spec = Spec::new(Kind::Custom { count: 3, size: 10 }, 1).unwrap();
        let [new, empty, used] = ["new", "empty", "used"].map(|d| dir.path().join(d));
        fs::create_dir(&empty).unwrap();
        fs::create_dir(&used).unwrap();
        fs::write(used.join("mine"), b"x").unwrap();
        for root in [&new, &empty, &used] {
            generate(&spec, root, &mut |_, _| {}).unwrap();
        }
        let flags_of = |p: &Path| inode_flags(&File::open(p).unwrap());
        let Some(before) = flags_of(dir.path()) else {
            let at = dir.path().display();
            eprintln!("{at}: no inode flags on this file system; only the writes were checked");
            return;
        };
        let marked = |p: &Path| flags_of(p).unwrap() & FS_TOPDIR_FL != 0;
        assert_eq!(before & FS_TOPDIR_FL, 0, "the test's own directory is not marked");
        assert!(marked(&new), "a new root is marked");
        assert!(!marked(&empty), "an existing empty root is left alone");
        assert!(!marked(&used), "an existing root with a file is left alone");
        assert!(!marked(&new.join("d0000")), "only the root");
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
