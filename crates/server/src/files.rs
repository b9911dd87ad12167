//! The document root: finds the file a URL path names and keeps small files
//! in memory.
//!
//! Why a cache: a small static file served from memory costs one `write`
//! per response (head and body in one buffer), where reading it per request
//! costs `open`, `fstat`, `read` and `close` as well — nginx's default path.
//! `bench/serve-vs-nginx.sh` measures both (`--cache-max-file 0` turns the
//! cache off). Entries are re-validated against the file's size, mtime and
//! inode at most once a second (nginx's `open_file_cache_valid` idea), so an
//! edited file is served fresh within a second without a `stat` per request.
//! Files over `--cache-max-file`, or past the cache's byte budget, are opened
//! per request and sent with `sendfile(2)`.
//!
//! Opening and reading happen on the worker thread, not in a blocking task:
//! for files in the page cache they take microseconds, less than handing
//! work to another thread (nginx does the same without `aio threads`).
//! Symbolic links inside the root are followed; a file that a link leads
//! to outside the root is refused with 403 (as nginx's `disable_symlinks`
//! would; nginx follows links by default), unless
//! `--follow-outside-symlinks`: a stray link in a file set must not publish
//! the rest of the machine. The
//! check reads where the opened descriptor really is
//! (`/proc/self/fd/N`), so a link swapped between check and open cannot
//! slip through, and it runs only when a file is opened, never on a cache hit.

use crate::http::{content_type, entity_fields};
use std::collections::HashMap;
use std::fs::{File, Metadata, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Instant;

/// How long a cached file is trusted before its metadata is checked again.
const REVALIDATE_MS: u64 = 1000;

/// A file's identity: when any of these changes, the cached copy is stale.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Ident {
    len: u64,
    mtime_ns: i128,
    ino: u64,
    dev: u64,
}

impl Ident {
    fn of(m: &Metadata) -> Ident {
        Ident {
            len: m.len(),
            mtime_ns: i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec()),
            ino: m.ino(),
            dev: m.dev(),
        }
    }
}

/// A small file held in memory with its pre-formatted entity header fields.
#[derive(Debug)]
pub(crate) struct Cached {
    /// The file on disk, for re-validation.
    path: PathBuf,
    ident: Ident,
    /// Milliseconds since `Files::epoch` after which the disk is checked again.
    due_ms: AtomicU64,
    /// `Content-Type` and `Content-Length` lines.
    pub(crate) fields: Box<[u8]>,
    pub(crate) body: Box<[u8]>,
}

/// What a lookup found.
#[derive(Debug)]
pub(crate) enum Found {
    /// In memory: head and body go out in one write.
    Cached(Arc<Cached>),
    /// Open on disk, to be sent with `sendfile(2)`.
    Stream { file: File, len: u64, fields: Vec<u8> },
}

/// Why a lookup found nothing to send.
#[derive(Debug)]
pub(crate) enum Missing {
    /// No such file (or a directory without `index.html`, or not a regular
    /// file): 404.
    NotFound,
    /// The server may not read it, or it lies outside the root (through a
    /// symbolic link): 403.
    Forbidden,
    /// Anything else the file system said: 500.
    Io(io::Error),
}

/// The document root and its cache of small files.
#[derive(Debug)]
pub(crate) struct Files {
    /// Canonical (every link resolved), so it compares with real paths.
    root: PathBuf,
    /// Files whose real path leaves the root are refused (403).
    confine: bool,
    /// Files of at most this many bytes are cached (0: none).
    max_file: u64,
    /// Total bytes the cache may hold; past it, files are read per request.
    budget: u64,
    used: AtomicU64,
    epoch: Instant,
    /// Keyed by the decoded URL path. A read lock per hit: uncontended with
    /// one worker; with many, a sharded map would scale further, which the
    /// reference server does not need.
    cache: RwLock<HashMap<Box<str>, Arc<Cached>>>,
}

impl Files {
    /// `root` must be canonical ([`std::fs::canonicalize`]); `confine`
    /// refuses files that resolve outside it.
    pub(crate) fn new(root: PathBuf, confine: bool, max_file: u64, budget: u64) -> Files {
        Files {
            root,
            confine,
            max_file,
            budget,
            used: AtomicU64::new(0),
            epoch: Instant::now(),
            cache: RwLock::new(HashMap::new()),
        }
    }

    fn now_ms(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64
    }

    /// Finds the file for a decoded, already traversal-checked URL path
    /// (`/d/a.html`); a directory stands for its `index.html`.
    pub(crate) fn lookup(&self, url_path: &str) -> Result<Found, Missing> {
        let hit = match self.cache.read() {
            Ok(map) => map.get(url_path).cloned(),
            Err(poisoned) => poisoned.into_inner().get(url_path).cloned(),
        };
        if let Some(c) = hit {
            let now = self.now_ms();
            if now < c.due_ms.load(Ordering::Relaxed) {
                return Ok(Found::Cached(c));
            }
            if std::fs::metadata(&c.path).is_ok_and(|m| Ident::of(&m) == c.ident) {
                c.due_ms.store(now + REVALIDATE_MS, Ordering::Relaxed);
                return Ok(Found::Cached(c));
            }
        }
        self.load(url_path)
    }

    /// Opens the file, and caches it when small enough.
    fn load(&self, url_path: &str) -> Result<Found, Missing> {
        let mut path = self.root.join(url_path.trim_start_matches('/'));
        let (mut file, mut meta) = open(&path)?;
        if meta.is_dir() {
            path.push("index.html");
            (file, meta) = open(&path)?;
        }
        if !meta.is_file() {
            return Err(Missing::NotFound);
        }
        if self.confine && !real_path(&file, &path).is_ok_and(|real| real.starts_with(&self.root)) {
            return Err(Missing::Forbidden);
        }
        let len = meta.len();
        let ctype = content_type(path.to_str().unwrap_or(url_path));
        let cacheable = len <= self.max_file && self.used.load(Ordering::Relaxed) + len <= self.budget;
        if !cacheable {
            return Ok(Found::Stream {
                file,
                len,
                fields: entity_fields(ctype, len),
            });
        }
        let mut body = Vec::with_capacity(len as usize);
        file.read_to_end(&mut body).map_err(Missing::Io)?;
        let body = body.into_boxed_slice();
        // The length actually read: a file that changed in between is served
        // as read, and its changed metadata makes the next check reload it.
        let entry = Arc::new(Cached {
            path,
            ident: Ident::of(&meta),
            due_ms: AtomicU64::new(self.now_ms() + REVALIDATE_MS),
            fields: entity_fields(ctype, body.len() as u64).into_boxed_slice(),
            body,
        });
        let mut map = match self.cache.write() {
            Ok(map) => map,
            Err(poisoned) => poisoned.into_inner(),
        };
        self.used.fetch_add(entry.body.len() as u64, Ordering::Relaxed);
        if let Some(old) = map.insert(url_path.into(), Arc::clone(&entry)) {
            self.used.fetch_sub(old.body.len() as u64, Ordering::Relaxed);
        }
        Ok(Found::Cached(entry))
    }
}

/// Opens a path for reading and reads its metadata. `O_NONBLOCK` keeps a
/// FIFO in the document root from blocking the worker thread at `open`.
fn open(path: &Path) -> Result<(File, Metadata), Missing> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(missing)?;
    let meta = file.metadata().map_err(missing)?;
    Ok((file, meta))
}

/// Where an open file really is: the kernel's name for its descriptor,
/// else (no /proc) the path with every link resolved.
fn real_path(file: &File, path: &Path) -> io::Result<PathBuf> {
    use std::os::fd::AsRawFd;
    std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())).or_else(|_| std::fs::canonicalize(path))
}

fn missing(e: io::Error) -> Missing {
    match e.kind() {
        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory => Missing::NotFound,
        io::ErrorKind::PermissionDenied => Missing::Forbidden,
        _ if e.raw_os_error() == Some(libc::ENAMETOOLONG) || e.raw_os_error() == Some(libc::ELOOP) => Missing::NotFound,
        _ => Missing::Io(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(f: Result<Found, Missing>) -> Vec<u8> {
        match f {
            Ok(Found::Cached(c)) => c.body.to_vec(),
            Ok(Found::Stream { mut file, .. }) => {
                let mut v = Vec::new();
                file.read_to_end(&mut v).unwrap();
                v
            }
            Err(e) => panic!("lookup failed: {e:?}"),
        }
    }

    #[test]
    fn caches_small_streams_large_and_revalidates() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("small.html"), b"hello").unwrap();
        std::fs::write(dir.path().join("big.bin"), vec![7u8; 100]).unwrap();
        std::fs::create_dir(dir.path().join("d")).unwrap();
        std::fs::write(dir.path().join("d/index.html"), b"idx").unwrap();
        let files = Files::new(dir.path().canonicalize().unwrap(), true, 10, 1 << 20);

        assert!(matches!(files.lookup("/small.html"), Ok(Found::Cached(_))));
        assert_eq!(body(files.lookup("/small.html")), b"hello");
        assert!(matches!(files.lookup("/big.bin"), Ok(Found::Stream { len: 100, .. })));
        assert_eq!(body(files.lookup("/d")), b"idx");
        assert_eq!(body(files.lookup("/d/")), b"idx");
        assert!(matches!(files.lookup("/nope"), Err(Missing::NotFound)));
        assert!(matches!(files.lookup("/small.html/x"), Err(Missing::NotFound)));
        assert!(matches!(files.lookup("/"), Err(Missing::NotFound)));

        // A changed file is served as cached until its entry is due for a
        // check, then fresh.
        std::fs::write(dir.path().join("small.html"), b"changed").unwrap();
        assert_eq!(body(files.lookup("/small.html")), b"hello");
        files.cache.read().unwrap()["/small.html"]
            .due_ms
            .store(0, Ordering::Relaxed);
        assert_eq!(body(files.lookup("/small.html")), b"changed");
        // "/d" and "/d/" are two keys for one index.html: 7 + 3 + 3.
        assert_eq!(files.used.load(Ordering::Relaxed), 13);
    }

    #[test]
    fn links_out_of_the_root_are_refused_unless_allowed() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("www");
        std::fs::create_dir_all(root.join("d")).unwrap();
        std::fs::write(dir.path().join("secret"), b"outside").unwrap();
        std::fs::create_dir(dir.path().join("out")).unwrap();
        std::fs::write(dir.path().join("out/index.html"), b"outside index").unwrap();
        std::fs::write(root.join("d/in.html"), b"inside").unwrap();
        std::os::unix::fs::symlink(dir.path().join("secret"), root.join("secret.html")).unwrap();
        std::os::unix::fs::symlink("../../secret", root.join("d/rel.html")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("out"), root.join("outdir")).unwrap();
        std::os::unix::fs::symlink("d/in.html", root.join("inside.html")).unwrap();
        let root = root.canonicalize().unwrap();
        let confined = Files::new(root.clone(), true, 1 << 10, 1 << 20);
        for path in ["/secret.html", "/d/rel.html", "/outdir", "/outdir/index.html"] {
            assert!(matches!(confined.lookup(path), Err(Missing::Forbidden)), "{path}");
        }
        // A link that stays inside the root is followed.
        assert_eq!(body(confined.lookup("/inside.html")), b"inside");
        let open = Files::new(root, false, 1 << 10, 1 << 20);
        assert_eq!(body(open.lookup("/secret.html")), b"outside");
        assert_eq!(body(open.lookup("/outdir")), b"outside index");
    }

    #[test]
    fn budget_and_zero_max_disable_caching() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a"), b"aaaa").unwrap();
        std::fs::write(dir.path().join("b"), b"bbbb").unwrap();
        let files = Files::new(dir.path().canonicalize().unwrap(), true, 100, 6);
        assert!(matches!(files.lookup("/a"), Ok(Found::Cached(_))));
        assert!(matches!(files.lookup("/b"), Ok(Found::Stream { .. })));
        let none = Files::new(dir.path().canonicalize().unwrap(), true, 0, 1 << 20);
        assert!(matches!(none.lookup("/a"), Ok(Found::Stream { .. })));
    }
}
