//! Where file operations go: a local or mounted path (`file:///PATH`) or
//! an SMB server (`smb://…`, see [`crate::smb`]). Both answer every
//! operation with a [`Status`] named as SMB names it, so a loadfile's
//! expected statuses compare the same way against either.
//!
//! Paths are the loadfile's: backslash-separated, from the share's root
//! (`\clients\client3\f.dat`). Open files are named by a key the caller
//! picks (the loadfile's handle number); the backend keeps what it opened.

use crate::status::Status;
use std::collections::HashMap;
use std::ffi::{CStr, CString};
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::os::unix::io::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The operations a workload needs of a file server (one per loadfile
/// operation kind). Each call is one operation as results count it.
pub trait FileBackend: Send {
    /// Opens or creates `path` as `key`. `options`: SMB's create options
    /// as a loadfile's NTCreateX gives them ([`DIRECTORY_FILE`]: it must
    /// be, or is created as, a directory; [`NON_DIRECTORY_FILE`]: it must
    /// not be one). `disposition`: SMB's, 0 to 5.
    fn create(&mut self, key: u64, path: &str, options: u32, disposition: u32) -> Result<(), Status>;
    fn close(&mut self, key: u64) -> Result<(), Status>;
    /// Reads up to `buf.len()` bytes at `offset`; the bytes read.
    fn read(&mut self, key: u64, offset: u64, buf: &mut [u8]) -> Result<usize, Status>;
    /// Writes `data` at `offset`; the bytes written.
    fn write(&mut self, key: u64, offset: u64, data: &[u8]) -> Result<usize, Status>;
    /// The information of file information class `class` (SMB2's, a
    /// loadfile level mapped by [`crate::level`]) of `path`. Only
    /// benchlab's SMB2 client asks the class; `file://` and libsmbclient
    /// cannot choose one and stat the file.
    fn query_path(&mut self, path: &str, class: u8) -> Result<(), Status>;
    /// As [`FileBackend::query_path`], of an open file.
    fn query_file(&mut self, key: u64, class: u8) -> Result<(), Status>;
    /// The file system information of class `class` (SMB2's
    /// `FileFs…Information`); `file://` and libsmbclient ask statvfs.
    fn query_fs(&mut self, class: u8) -> Result<(), Status>;
    /// Sets the file's information of class `class`: FileBasicInformation
    /// (the only one a loadfile line is read with), its times set to now.
    fn set_file_info(&mut self, key: u64, class: u8) -> Result<(), Status>;
    /// Entries of the pattern's directory that match its last component,
    /// listed as directory information class `class` where the backend
    /// can ask one (benchlab's SMB2 client); none is `NoSuchFile`.
    fn find(&mut self, pattern: &str, class: u8) -> Result<u32, Status>;
    fn lock(&mut self, key: u64, offset: u64, len: u64, lock: bool) -> Result<(), Status>;
    fn flush(&mut self, key: u64) -> Result<(), Status>;
    fn unlink(&mut self, path: &str) -> Result<(), Status>;
    fn rename(&mut self, from: &str, to: &str) -> Result<(), Status>;
    /// Makes a directory; one that exists already is fine (several users
    /// share `\clients`).
    fn mkdir(&mut self, path: &str) -> Result<(), Status>;
    /// Removes a directory and everything in it; a missing one is fine.
    fn deltree(&mut self, path: &str) -> Result<(), Status>;
    /// Whether the backend tells a missing name from a missing directory
    /// on the way (OBJECT_NAME_NOT_FOUND vs OBJECT_PATH_NOT_FOUND vs
    /// NO_SUCH_FILE). libsmbclient answers all three as ENOENT; a replay
    /// then takes any of them for the one the loadfile expects.
    fn distinguishes_not_found(&self) -> bool {
        true
    }
    /// What the session negotiated, for a backend that knows (benchlab's
    /// SMB2 client), disclosed per mix.
    fn negotiated(&self) -> Option<benchlab_results::SmbNegotiated> {
        None
    }
    /// Between operations (a think time, a start delay), when the server
    /// sent something unasked: take it (a lease or oplock break,
    /// acknowledged) without waiting for more.
    fn between_operations(&mut self) {}
    /// A thread user's think time: returns at `until` or once `stop` is
    /// set. A backend whose server may send something unasked (a break)
    /// waits on its connection meanwhile and takes it as it comes, as
    /// the event loop does for its users; the others sleep.
    fn think_until(&mut self, until: std::time::Instant, stop: &std::sync::atomic::AtomicBool) {
        sleep_until(until, stop)
    }
    /// When the mix ends: a backend that waits on a server waits no
    /// longer (an operation still unanswered then is not counted anyway).
    fn end_at(&mut self, _end: std::time::Instant) {}
    /// The bytes this connection has sent and received on the wire so
    /// far, kept as it goes (a user's counting reads it after each
    /// operation); `None` where the client cannot see its wire.
    fn wire_meter(&self) -> Option<Arc<WireMeter>> {
        None
    }
}

/// Bytes sent and received on a connection's wire, and the breaks it
/// acknowledged, as the backend has them after its last operation.
#[derive(Debug, Default)]
pub struct WireMeter {
    /// Bytes sent, bytes received, lease breaks and oplock breaks
    /// acknowledged.
    pub counts: [AtomicU64; 4],
}

impl WireMeter {
    pub fn get(&self) -> [u64; 4] {
        std::array::from_fn(|i| self.counts[i].load(Ordering::Relaxed))
    }

    pub fn set(&self, v: [u64; 4]) {
        for (c, v) in self.counts.iter().zip(v) {
            c.store(v, Ordering::Relaxed);
        }
    }
}

/// The create option "the name is (or is made) a directory".
pub const DIRECTORY_FILE: u32 = 0x1;
/// The create option "the name must not be a directory".
pub const NON_DIRECTORY_FILE: u32 = 0x40;

/// Whether `s` is one of the three ways of "not there".
pub fn is_not_found(s: &Status) -> bool {
    matches!(
        s,
        Status::ObjectNameNotFound | Status::ObjectPathNotFound | Status::NoSuchFile
    )
}

/// Whether `name` matches a DOS wildcard pattern (`*`, `?`, and the DOS
/// forms `<` ≈ `*`, `>` ≈ `?`, `"` ≈ `.`), ignoring ASCII case as SMB
/// servers do.
pub fn wildcard_match(pattern: &str, name: &str) -> bool {
    fn go(p: &[u8], n: &[u8]) -> bool {
        match p.split_first() {
            None => n.is_empty(),
            Some((b'*' | b'<', rest)) => (0..=n.len()).any(|i| go(rest, &n[i..])),
            Some((b'?' | b'>', rest)) => !n.is_empty() && go(rest, &n[1..]),
            Some((b'"', rest)) => n.first() == Some(&b'.') && go(rest, &n[1..]),
            Some((c, rest)) => n.first().is_some_and(|x| x.eq_ignore_ascii_case(c)) && go(rest, &n[1..]),
        }
    }
    // `*.*` is DOS's "everything", names without a dot included.
    if pattern == "*.*" {
        return true;
    }
    go(pattern.as_bytes(), name.as_bytes())
}

/// How a path is resolved below the target's directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Resolve {
    /// `openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)`: the kernel
    /// refuses any step (`..`, an absolute symlink, a symlink pointing
    /// outside) that would leave the directory.
    Beneath,
    /// Kernels without openat2 (before 5.6, or a seccomp filter that
    /// refuses it): one component at a time with `O_NOFOLLOW`, so no
    /// symlink on the way is followed at all.
    Walk,
}

/// Symlinks a Deltree never follows; directories nested deeper than this
/// are left (and the Deltree is an error), so a deep tree cannot exhaust
/// file descriptors or the stack.
const MAX_DELTREE_DEPTH: usize = 256;

/// A local or mounted directory (`file:///PATH`).
///
/// Every path is resolved relative to a descriptor of the directory,
/// never by joining strings: a loadfile's path, or a symlink planted
/// inside the directory, cannot reach a file outside it (an audit's
/// loadfile created and deleted files outside the target). A path that
/// would is answered ACCESS_DENIED, an error like any other.
#[derive(Debug)]
pub struct LocalBackend {
    root: PathBuf,
    dir: OwnedFd,
    resolve: Resolve,
    files: HashMap<u64, File>,
}

/// The path's components below the target's root, `\` and `/` both
/// separating, `.` dropped and `..` taken back lexically; climbing above
/// the root is refused (loadfiles are checked for it when read; this keeps
/// the backend safe on its own).
pub(crate) fn components(p: &str) -> Result<Vec<&str>, Status> {
    let mut out = Vec::new();
    for c in p.split(['\\', '/']) {
        match c {
            "" | "." => {}
            ".." => {
                out.pop().ok_or(Status::AccessDenied)?;
            }
            c => out.push(c),
        }
    }
    Ok(out)
}

fn cstring(s: &str) -> Result<CString, Status> {
    CString::new(s).map_err(|_| Status::Other("NT_STATUS_OBJECT_NAME_INVALID".into()))
}

/// An OS error as SMB names it; `EXDEV` is openat2's "that would leave
/// the directory", `ELOOP` a symlink benchlab does not follow.
fn status(e: &io::Error) -> Status {
    match e.raw_os_error() {
        Some(libc::EXDEV | libc::ELOOP) => Status::AccessDenied,
        _ => Status::from_io(e),
    }
}

fn cvt(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

fn openat(dir: BorrowedFd<'_>, name: &CStr, flags: libc::c_int) -> io::Result<OwnedFd> {
    // SAFETY: a valid directory descriptor and a NUL-terminated name; the
    // descriptor returned is owned by no one else.
    let fd = cvt(unsafe { libc::openat(dir.as_raw_fd(), name.as_ptr(), flags | libc::O_CLOEXEC, 0o666) })?;
    // SAFETY: openat just returned this descriptor; nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `fstatat(…, AT_SYMLINK_NOFOLLOW)`'s file type bits.
fn file_type(dir: BorrowedFd<'_>, name: &CStr) -> io::Result<libc::mode_t> {
    // SAFETY: a valid descriptor, a NUL-terminated name, a zeroed stat.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: a valid descriptor, a NUL-terminated name and a stat we own.
    cvt(unsafe { libc::fstatat(dir.as_raw_fd(), name.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) })?;
    Ok(st.st_mode & libc::S_IFMT)
}

fn unlinkat(dir: BorrowedFd<'_>, name: &CStr, flags: libc::c_int) -> io::Result<()> {
    // SAFETY: a valid descriptor and a NUL-terminated name.
    cvt(unsafe { libc::unlinkat(dir.as_raw_fd(), name.as_ptr(), flags) }).map(drop)
}

fn mkdirat(dir: BorrowedFd<'_>, name: &CStr) -> io::Result<()> {
    // SAFETY: a valid descriptor and a NUL-terminated name.
    cvt(unsafe { libc::mkdirat(dir.as_raw_fd(), name.as_ptr(), 0o777) }).map(drop)
}

/// The names in a directory (without `.` and `..`), read through `dir`.
fn names(dir: BorrowedFd<'_>) -> io::Result<Vec<CString>> {
    // fdopendir takes the descriptor it is given: hand it a duplicate.
    let fd = dir.try_clone_to_owned()?;
    // SAFETY: an owned descriptor of a directory opened for reading; the
    // stream owns it from here and closedir closes both.
    let d = unsafe { libc::fdopendir(fd.as_raw_fd()) };
    if d.is_null() {
        return Err(io::Error::last_os_error());
    }
    std::mem::forget(fd);
    let mut out = Vec::new();
    loop {
        // SAFETY: a stream from fdopendir; each entry is read before the
        // next call.
        let e = unsafe { libc::readdir(d) };
        if e.is_null() {
            break;
        }
        // SAFETY: readdir returned a non-null entry; its d_name is NUL-terminated and valid until the next readdir.
        let name = unsafe { CStr::from_ptr((*e).d_name.as_ptr()) };
        if name.to_bytes() != b"." && name.to_bytes() != b".." {
            out.push(name.to_owned());
        }
    }
    // SAFETY: the stream from fdopendir, closed once.
    unsafe { libc::closedir(d) };
    Ok(out)
}

/// Empties the directory `name` of `parent` and removes it, never
/// following a symlink: a symlink inside is unlinked itself.
fn remove_tree(parent: BorrowedFd<'_>, name: &CStr, depth: usize) -> io::Result<()> {
    if depth > MAX_DELTREE_DEPTH {
        return Err(io::Error::from_raw_os_error(libc::ELOOP));
    }
    let dir = openat(parent, name, libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW)?;
    for n in names(dir.as_fd())? {
        let gone = |e: io::Error| {
            if e.kind() == io::ErrorKind::NotFound {
                Ok(())
            } else {
                Err(e)
            }
        };
        match file_type(dir.as_fd(), &n) {
            Ok(libc::S_IFDIR) => remove_tree(dir.as_fd(), &n, depth + 1).or_else(gone)?,
            Ok(_) => unlinkat(dir.as_fd(), &n, 0).or_else(gone)?,
            Err(e) => gone(e)?,
        }
    }
    unlinkat(parent, name, libc::AT_REMOVEDIR)
}

impl LocalBackend {
    /// A backend on the directory `root` (it must exist); without it the
    /// mix cannot run.
    pub fn new(root: &Path) -> Result<LocalBackend, crate::FileError> {
        LocalBackend::open_root(root).map_err(crate::FileError::Run)
    }

    fn open_root(root: &Path) -> Result<LocalBackend, String> {
        let c = CString::new(root.as_os_str().as_encoded_bytes())
            .map_err(|_| format!("file://{}: the path holds a NUL byte", root.display()))?;
        // SAFETY: a NUL-terminated path; the descriptor returned is ours.
        let fd = unsafe { libc::open(c.as_ptr(), libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC) };
        if fd < 0 {
            return Err(format!(
                "file://{}: not a directory ({})",
                root.display(),
                io::Error::last_os_error()
            ));
        }
        let mut b = LocalBackend {
            root: root.to_path_buf(),
            // SAFETY: openat returned this descriptor just above; nothing else owns it.
            dir: unsafe { OwnedFd::from_raw_fd(fd) },
            resolve: Resolve::Beneath,
            files: HashMap::new(),
        };
        // Whether this kernel has openat2 (a seccomp filter may answer
        // EPERM for a call it does not know).
        if let Err(e) = b.open(".", libc::O_PATH | libc::O_DIRECTORY, false) {
            if matches!(e.raw_os_error(), Some(libc::ENOSYS | libc::EPERM)) {
                b.resolve = Resolve::Walk;
            }
        }
        Ok(b)
    }

    /// The backend with openat2's absence assumed, to test the walk.
    #[cfg(test)]
    fn walking(root: &Path) -> LocalBackend {
        let mut b = LocalBackend::new(root).unwrap();
        b.resolve = Resolve::Walk;
        b
    }

    /// Opens `rel` (components joined by `/`, no `..`) below the root.
    /// `nofollow`: a symlink as the last component is not followed.
    fn open(&self, rel: &str, flags: libc::c_int, nofollow: bool) -> io::Result<OwnedFd> {
        let flags = flags | libc::O_CLOEXEC | if nofollow { libc::O_NOFOLLOW } else { 0 };
        let c = CString::new(if rel.is_empty() { "." } else { rel })
            .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
        match self.resolve {
            Resolve::Beneath => {
                // SAFETY: a zeroed open_how filled in; the descriptor
                // returned is ours.
                let mut how: libc::open_how = unsafe { std::mem::zeroed() };
                how.flags = flags as u64;
                how.mode = if flags & libc::O_CREAT != 0 { 0o666 } else { 0 };
                how.resolve = libc::RESOLVE_BENEATH | libc::RESOLVE_NO_MAGICLINKS;
                // openat2 answers EAGAIN when a rename raced the lookup.
                for _ in 0..8 {
                    // SAFETY: openat2 with a valid directory descriptor, a NUL-terminated path and an open_how of the size passed.
                    let r = unsafe {
                        libc::syscall(
                            libc::SYS_openat2,
                            self.dir.as_raw_fd(),
                            c.as_ptr(),
                            &how as *const libc::open_how,
                            std::mem::size_of::<libc::open_how>(),
                        )
                    };
                    if r >= 0 {
                        // SAFETY: openat2 just returned this descriptor; nothing else owns it.
                        return Ok(unsafe { OwnedFd::from_raw_fd(r as libc::c_int) });
                    }
                    let e = io::Error::last_os_error();
                    if e.raw_os_error() != Some(libc::EAGAIN) {
                        return Err(e);
                    }
                }
                Err(io::Error::from_raw_os_error(libc::EAGAIN))
            }
            Resolve::Walk => {
                let parts: Vec<&str> = rel.split('/').filter(|p| !p.is_empty()).collect();
                let Some((last, dirs)) = parts.split_last() else {
                    return openat(self.dir.as_fd(), c".", flags);
                };
                let mut cur: Option<OwnedFd> = None;
                for d in dirs {
                    let at = cur.as_ref().map(|f| f.as_fd()).unwrap_or(self.dir.as_fd());
                    let name = CString::new(*d).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
                    let next = openat(at, &name, libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW).map_err(|e| {
                        match file_type(at, &name) {
                            // A symlink on the way: not followed.
                            Ok(libc::S_IFLNK) => io::Error::from_raw_os_error(libc::EXDEV),
                            _ => e,
                        }
                    })?;
                    cur = Some(next);
                }
                let at = cur.as_ref().map(|f| f.as_fd()).unwrap_or(self.dir.as_fd());
                let name = CString::new(*last).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
                // The last component is never followed either.
                let f = openat(at, &name, flags | libc::O_NOFOLLOW).map_err(|e| match e.raw_os_error() {
                    Some(libc::ELOOP) if !nofollow => io::Error::from_raw_os_error(libc::EXDEV),
                    Some(libc::ENOTDIR) if !nofollow && file_type(at, &name).ok() == Some(libc::S_IFLNK) => {
                        io::Error::from_raw_os_error(libc::EXDEV)
                    }
                    _ => e,
                })?;
                // O_PATH | O_NOFOLLOW opens a symlink itself; asked to
                // follow it, refuse it as openat2 refuses one leading out.
                if flags & libc::O_PATH != 0 && !nofollow && file_type(at, &name)? == libc::S_IFLNK {
                    return Err(io::Error::from_raw_os_error(libc::EXDEV));
                }
                Ok(f)
            }
        }
    }

    /// The directory that holds `path`'s last component, and that name:
    /// operations on a name (mkdir, unlink, rename, rmdir) go through it.
    /// A missing directory on the way is OBJECT_PATH_NOT_FOUND; the root
    /// itself has no parent here (ACCESS_DENIED: it is not the loadfile's
    /// to remove or rename).
    fn parent(&self, path: &str) -> Result<(OwnedFd, CString), Status> {
        let parts = components(path)?;
        let Some((last, dirs)) = parts.split_last() else {
            return Err(Status::AccessDenied);
        };
        let dir = self
            .open(&dirs.join("/"), libc::O_PATH | libc::O_DIRECTORY, false)
            .map_err(|e| match status(&e) {
                Status::ObjectNameNotFound => Status::ObjectPathNotFound,
                s => s,
            })?;
        Ok((dir, cstring(last)?))
    }

    /// `ENOENT` of `path` told apart as SMB does: the name, or a directory
    /// on the way.
    fn not_found(&self, path: &str, e: &io::Error) -> Status {
        match status(e) {
            Status::ObjectNameNotFound if self.parent(path).is_err() => Status::ObjectPathNotFound,
            s => s,
        }
    }

    fn file(&self, key: u64) -> Result<&File, Status> {
        self.files.get(&key).ok_or(Status::InvalidHandle)
    }
}

impl FileBackend for LocalBackend {
    fn create(&mut self, key: u64, path: &str, options: u32, disposition: u32) -> Result<(), Status> {
        // A file opened read-write that is a directory fails as
        // FILE_IS_A_DIRECTORY (EISDIR) whatever NON_DIRECTORY_FILE says.
        if options & DIRECTORY_FILE != 0 {
            let (dir, name) = self.parent(path)?;
            let made = mkdirat(dir.as_fd(), &name);
            match (made, disposition) {
                (Ok(()), 0 | 2 | 3 | 5) => {}
                (Ok(()), _) => {
                    // Open of a directory that was not there: undo.
                    let _ = unlinkat(dir.as_fd(), &name, libc::AT_REMOVEDIR);
                    return Err(Status::ObjectNameNotFound);
                }
                (Err(e), _) if e.kind() == io::ErrorKind::AlreadyExists => {
                    if disposition == 2 {
                        return Err(Status::ObjectNameCollision);
                    }
                    if file_type(dir.as_fd(), &name).ok() != Some(libc::S_IFDIR) {
                        return Err(Status::NotADirectory);
                    }
                }
                (Err(e), _) => return Err(status(&e)),
            }
            let f = openat(
                dir.as_fd(),
                &name,
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW,
            )
            .map_err(|e| status(&e))?;
            self.files.insert(key, File::from(f));
            return Ok(());
        }
        let rel = components(path)?.join("/");
        let flags = libc::O_RDWR
            | match disposition {
                0 | 5 => libc::O_CREAT | libc::O_TRUNC,
                1 => 0,
                2 => libc::O_CREAT | libc::O_EXCL,
                3 => libc::O_CREAT,
                _ => libc::O_TRUNC,
            };
        let f = self.open(&rel, flags, true).map_err(|e| self.not_found(path, &e))?;
        self.files.insert(key, File::from(f));
        Ok(())
    }

    fn close(&mut self, key: u64) -> Result<(), Status> {
        self.files.remove(&key).map(drop).ok_or(Status::InvalidHandle)
    }

    fn read(&mut self, key: u64, offset: u64, buf: &mut [u8]) -> Result<usize, Status> {
        let f = self.file(key)?;
        let mut done = 0;
        while done < buf.len() {
            match f.read_at(&mut buf[done..], offset + done as u64) {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Status::from_io(&e)),
            }
        }
        Ok(done)
    }

    fn write(&mut self, key: u64, offset: u64, data: &[u8]) -> Result<usize, Status> {
        let f = self.file(key)?;
        f.write_all_at(data, offset).map_err(|e| Status::from_io(&e))?;
        Ok(data.len())
    }

    fn query_path(&mut self, path: &str, _class: u8) -> Result<(), Status> {
        let rel = components(path)?.join("/");
        self.open(&rel, libc::O_PATH, false)
            .map(drop)
            .map_err(|e| self.not_found(path, &e))
    }

    fn query_file(&mut self, key: u64, _class: u8) -> Result<(), Status> {
        self.file(key)?.metadata().map(drop).map_err(|e| Status::from_io(&e))
    }

    fn query_fs(&mut self, _class: u8) -> Result<(), Status> {
        let c =
            std::ffi::CString::new(self.root.as_os_str().as_encoded_bytes()).map_err(|_| Status::ObjectNameNotFound)?;
        // SAFETY: a NUL-terminated path and a zeroed statvfs to fill.
        let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
        // SAFETY: a NUL-terminated path and a statvfs we own.
        let r = unsafe { libc::statvfs(c.as_ptr(), &mut st) };
        if r != 0 {
            return Err(Status::from_io(&std::io::Error::last_os_error()));
        }
        Ok(())
    }

    fn set_file_info(&mut self, key: u64, _class: u8) -> Result<(), Status> {
        let f = self.file(key)?;
        let now = std::time::SystemTime::now();
        f.set_times(std::fs::FileTimes::new().set_modified(now).set_accessed(now))
            .map_err(|e| Status::from_io(&e))
    }

    fn find(&mut self, pattern: &str, _class: u8) -> Result<u32, Status> {
        let (dir, mask) = pattern.rsplit_once(['\\', '/']).unwrap_or(("", pattern));
        let rel = components(dir)?.join("/");
        let not_found = |e: io::Error| match status(&e) {
            Status::ObjectNameNotFound => Status::ObjectPathNotFound,
            s => s,
        };
        let d = self
            .open(&rel, libc::O_RDONLY | libc::O_DIRECTORY, false)
            .map_err(not_found)?;
        let mut n = 0u32;
        for name in names(d.as_fd()).map_err(not_found)? {
            if wildcard_match(mask, &name.to_string_lossy()) {
                n += 1;
            }
        }
        if n == 0 {
            return Err(Status::NoSuchFile);
        }
        Ok(n)
    }

    fn lock(&mut self, key: u64, offset: u64, len: u64, lock: bool) -> Result<(), Status> {
        let f = self.file(key)?;
        // Open-file-description locks: per handle, as SMB's byte-range
        // locks are, not per process as classic POSIX locks.
        // SAFETY: flock is plain integers, for which all-zero bytes are valid.
        let mut fl: libc::flock = unsafe { std::mem::zeroed() };
        fl.l_type = if lock { libc::F_WRLCK } else { libc::F_UNLCK } as libc::c_short;
        fl.l_whence = libc::SEEK_SET as libc::c_short;
        fl.l_start = offset.min(i64::MAX as u64) as libc::off_t;
        fl.l_len = len.min(i64::MAX as u64) as libc::off_t;
        // SAFETY: a valid descriptor and a filled flock.
        let r = unsafe { libc::fcntl(f.as_raw_fd(), libc::F_OFD_SETLK, &fl) };
        if r != 0 {
            return Err(Status::from_io(&std::io::Error::last_os_error()));
        }
        Ok(())
    }

    fn flush(&mut self, key: u64) -> Result<(), Status> {
        // SMB's Flush asks the server to put the file's data on disk.
        self.file(key)?.sync_data().map_err(|e| Status::from_io(&e))
    }

    fn unlink(&mut self, path: &str) -> Result<(), Status> {
        let (dir, name) = self.parent(path)?;
        unlinkat(dir.as_fd(), &name, 0).map_err(|e| status(&e))
    }

    fn rename(&mut self, from: &str, to: &str) -> Result<(), Status> {
        let (a, an) = self.parent(from)?;
        let (b, bn) = self.parent(to)?;
        // SAFETY: valid directory descriptors and NUL-terminated names;
        // renameat moves the name itself, a symlink included, never what
        // it points to.
        cvt(unsafe { libc::renameat(a.as_raw_fd(), an.as_ptr(), b.as_raw_fd(), bn.as_ptr()) })
            .map(drop)
            .map_err(|e| status(&e))
    }

    fn mkdir(&mut self, path: &str) -> Result<(), Status> {
        let (dir, name) = self.parent(path)?;
        match mkdirat(dir.as_fd(), &name) {
            Ok(()) => Ok(()),
            Err(e)
                if e.kind() == io::ErrorKind::AlreadyExists
                    && file_type(dir.as_fd(), &name).ok() == Some(libc::S_IFDIR) =>
            {
                Ok(())
            }
            Err(e) => Err(status(&e)),
        }
    }

    fn deltree(&mut self, path: &str) -> Result<(), Status> {
        let (dir, name) = match self.parent(path) {
            Ok(x) => x,
            // A missing directory on the way: nothing to remove.
            Err(Status::ObjectPathNotFound) => return Ok(()),
            Err(s) => return Err(s),
        };
        let done = match file_type(dir.as_fd(), &name) {
            Ok(libc::S_IFDIR) => remove_tree(dir.as_fd(), &name, 0),
            // A symlink is removed itself, never followed (as
            // std::fs::remove_dir_all does); a file is not a tree.
            Ok(libc::S_IFLNK) => unlinkat(dir.as_fd(), &name, 0),
            Ok(_) => Err(io::Error::from_raw_os_error(libc::ENOTDIR)),
            Err(e) => Err(e),
        };
        match done {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(status(&e)),
        }
    }
}

/// Sleeps until `t` in slices of at most 50 ms, returning early once
/// `stop` is set: a think time or start delay that still sees the mix's
/// end. Here, beside [`FileBackend::think_until`], its default.
pub(crate) fn sleep_until(t: std::time::Instant, stop: &std::sync::atomic::AtomicBool) {
    loop {
        let now = std::time::Instant::now();
        if now >= t || stop.load(Ordering::Relaxed) {
            return;
        }
        std::thread::sleep((t - now).min(std::time::Duration::from_millis(50)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use benchlab_smb2::msg::{
        FILE_ALL_INFORMATION as ALL, FILE_BASIC_INFORMATION as BASIC, FILE_BOTH_DIRECTORY_INFORMATION as BOTH,
        FILE_FS_FULL_SIZE_INFORMATION as FS,
    };

    #[test]
    fn wildcards() {
        assert!(wildcard_match("FILLER.*", "filler.000"));
        assert!(wildcard_match("*.*", "noext"));
        assert!(wildcard_match("<.JNK", "a.jnk"));
        assert!(!wildcard_match("<.JNK", "a.jnx"));
        assert!(wildcard_match("a?c", "abc"));
        assert!(!wildcard_match("a?c", "ac"));
    }

    #[test]
    fn local_operations_answer_smb_statuses() {
        let d = tempfile::tempdir().unwrap();
        let mut b = LocalBackend::new(d.path()).unwrap();
        assert_eq!(b.query_path("\\a\\b", ALL), Err(Status::ObjectPathNotFound));
        assert_eq!(b.query_path("\\a", ALL), Err(Status::ObjectNameNotFound));
        b.mkdir("\\a").unwrap();
        b.mkdir("\\a").unwrap();
        b.create(1, "\\a\\f", 0, 2).unwrap();
        assert_eq!(b.create(2, "\\a\\f", 0, 2), Err(Status::ObjectNameCollision));
        assert_eq!(b.write(1, 10, b"hello").unwrap(), 5);
        let mut buf = [0u8; 32];
        assert_eq!(b.read(1, 10, &mut buf).unwrap(), 5);
        assert_eq!(&buf[..5], b"hello");
        b.lock(1, 0, 1, true).unwrap();
        b.lock(1, 0, 1, false).unwrap();
        b.flush(1).unwrap();
        b.set_file_info(1, BASIC).unwrap();
        b.query_file(1, ALL).unwrap();
        b.query_fs(FS).unwrap();
        b.close(1).unwrap();
        assert_eq!(b.close(1), Err(Status::InvalidHandle));
        assert_eq!(b.find("\\a\\F*", BOTH), Ok(1));
        assert_eq!(b.find("\\a\\x*", BOTH), Err(Status::NoSuchFile));
        assert_eq!(b.find("\\nope\\x*", BOTH), Err(Status::ObjectPathNotFound));
        b.rename("\\a\\f", "\\a\\g").unwrap();
        assert_eq!(b.unlink("\\a\\f"), Err(Status::ObjectNameNotFound));
        b.unlink("\\a\\g").unwrap();
        b.create(3, "\\a\\d", DIRECTORY_FILE, 2).unwrap();
        assert_eq!(
            b.create(4, "\\a\\e", DIRECTORY_FILE, 1),
            Err(Status::ObjectNameNotFound)
        );
        b.deltree("\\a").unwrap();
        b.deltree("\\a").unwrap();
    }

    /// Whatever a path says, nothing outside the target is reached: `..`
    /// above the root and symlinks planted inside that point out are
    /// refused as ACCESS_DENIED (an error, counted), with openat2 and with
    /// the walk used where the kernel has none; the outside is untouched.
    #[test]
    fn nothing_outside_the_target_is_reached() {
        for walk in [false, true] {
            let outside = tempfile::tempdir().unwrap();
            std::fs::write(outside.path().join("keep"), b"x").unwrap();
            std::fs::create_dir(outside.path().join("sub")).unwrap();
            std::fs::write(outside.path().join("sub/f"), b"y").unwrap();
            let d = tempfile::tempdir().unwrap();
            let ws = d.path().join("clients/client1");
            std::fs::create_dir_all(&ws).unwrap();
            std::os::unix::fs::symlink(outside.path(), ws.join("out")).unwrap();
            std::os::unix::fs::symlink(outside.path().join("keep"), ws.join("keep")).unwrap();
            std::os::unix::fs::symlink("/", ws.join("root")).unwrap();
            let mut b = if walk {
                LocalBackend::walking(d.path())
            } else {
                LocalBackend::new(d.path()).unwrap()
            };
            assert_eq!(b.resolve == Resolve::Walk, walk);
            let denied = Err(Status::AccessDenied);
            let o = "\\clients\\client1\\out";
            assert_eq!(b.create(1, &format!("{o}\\new"), 0, 2), denied, "walk {walk}");
            assert_eq!(b.create(1, &format!("{o}\\keep"), 0, 1), denied);
            assert_eq!(b.create(1, "\\clients\\client1\\keep", 0, 1), denied);
            assert_eq!(b.create(1, "\\clients\\client1\\root\\tmp\\x", 0, 2), denied);
            assert_eq!(b.create(2, &format!("{o}\\d"), DIRECTORY_FILE, 2), denied);
            assert_eq!(b.mkdir(&format!("{o}\\d")), denied);
            assert_eq!(b.unlink(&format!("{o}\\keep")), denied);
            assert_eq!(b.rename(&format!("{o}\\keep"), "\\clients\\client1\\k"), denied);
            assert_eq!(b.rename("\\clients\\client1\\keep", &format!("{o}\\k")), denied);
            assert_eq!(b.query_path(&format!("{o}\\keep"), ALL), denied);
            assert_eq!(b.query_path("\\clients\\client1\\keep", ALL), denied);
            assert_eq!(b.find(&format!("{o}\\*"), BOTH), Err(Status::AccessDenied));
            assert_eq!(b.deltree(&format!("{o}\\sub")), denied);
            assert_eq!(b.create(1, "\\clients\\..\\..\\x", 0, 2), denied);
            assert_eq!(b.deltree("\\clients\\client1/../../.."), denied);
            assert_eq!(b.deltree("\\"), denied);
            // Deltree of the workspace removes the links, not their targets.
            b.deltree("\\clients\\client1").unwrap();
            assert!(!ws.exists());
            assert_eq!(std::fs::read(outside.path().join("keep")).unwrap(), b"x");
            assert_eq!(std::fs::read(outside.path().join("sub/f")).unwrap(), b"y");
            assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 2);
        }
    }

    /// The walk answers the same statuses as openat2 on ordinary paths.
    #[test]
    fn the_walk_answers_as_openat2_does() {
        let d = tempfile::tempdir().unwrap();
        let mut b = LocalBackend::walking(d.path());
        assert_eq!(b.query_path("\\a\\b", ALL), Err(Status::ObjectPathNotFound));
        assert_eq!(b.query_path("\\a", ALL), Err(Status::ObjectNameNotFound));
        b.mkdir("\\a").unwrap();
        b.mkdir("\\a\\b").unwrap();
        b.create(1, "\\a\\b\\f", 0, 2).unwrap();
        assert_eq!(b.create(2, "\\a\\b\\f", 0, 2), Err(Status::ObjectNameCollision));
        assert_eq!(b.create(2, "\\a\\c\\f", 0, 2), Err(Status::ObjectPathNotFound));
        assert_eq!(b.write(1, 0, b"hi").unwrap(), 2);
        b.query_path("\\a\\b\\..\\b\\f", ALL).unwrap();
        assert_eq!(b.find("\\a\\b\\*", BOTH), Ok(1));
        b.rename("\\a\\b\\f", "\\a\\g").unwrap();
        b.unlink("\\a\\g").unwrap();
        b.deltree("\\a").unwrap();
        assert!(std::fs::read_dir(d.path()).unwrap().next().is_none());
    }
}
