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
use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

/// The operations a workload needs of a file server (one per loadfile
/// operation kind). Each call is one operation as results count it.
pub trait FileBackend: Send {
    /// Opens or creates `path` as `key`. `directory`: it must be (or is
    /// created as) a directory. `disposition`: SMB's, 0 to 5.
    fn create(&mut self, key: u64, path: &str, directory: bool, disposition: u32) -> Result<(), Status>;
    fn close(&mut self, key: u64) -> Result<(), Status>;
    /// Reads up to `buf.len()` bytes at `offset`; the bytes read.
    fn read(&mut self, key: u64, offset: u64, buf: &mut [u8]) -> Result<usize, Status>;
    /// Writes `data` at `offset`; the bytes written.
    fn write(&mut self, key: u64, offset: u64, data: &[u8]) -> Result<usize, Status>;
    fn query_path(&mut self, path: &str) -> Result<(), Status>;
    fn query_file(&mut self, key: u64) -> Result<(), Status>;
    fn query_fs(&mut self) -> Result<(), Status>;
    /// Sets the file's times (SMB's basic information) to now.
    fn set_file_info(&mut self, key: u64) -> Result<(), Status>;
    /// Entries of the pattern's directory that match its last component;
    /// none is `NoSuchFile`.
    fn find(&mut self, pattern: &str) -> Result<u32, Status>;
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
}

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

/// A local or mounted directory (`file:///PATH`).
#[derive(Debug)]
pub struct LocalBackend {
    root: PathBuf,
    files: HashMap<u64, File>,
}

impl LocalBackend {
    pub fn new(root: &Path) -> LocalBackend {
        LocalBackend {
            root: root.to_path_buf(),
            files: HashMap::new(),
        }
    }

    fn path(&self, p: &str) -> PathBuf {
        let mut out = self.root.clone();
        for part in p.split('\\').filter(|s| !s.is_empty()) {
            out.push(part);
        }
        out
    }

    /// `ENOENT` told apart as SMB does: the name, or a directory on the way.
    fn not_found(&self, p: &Path, e: &std::io::Error) -> Status {
        match Status::from_io(e) {
            Status::ObjectNameNotFound if !p.parent().is_some_and(Path::is_dir) => Status::ObjectPathNotFound,
            s => s,
        }
    }

    fn file(&self, key: u64) -> Result<&File, Status> {
        self.files.get(&key).ok_or(Status::InvalidHandle)
    }
}

impl FileBackend for LocalBackend {
    fn create(&mut self, key: u64, path: &str, directory: bool, disposition: u32) -> Result<(), Status> {
        let p = self.path(path);
        if directory {
            let made = std::fs::create_dir(&p);
            match (made, disposition) {
                (Ok(()), 0 | 2 | 3 | 5) => {}
                (Ok(()), _) => {
                    // Open of a directory that was not there: undo.
                    let _ = std::fs::remove_dir(&p);
                    return Err(Status::ObjectNameNotFound);
                }
                (Err(e), _) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    if disposition == 2 {
                        return Err(Status::ObjectNameCollision);
                    }
                    if !p.is_dir() {
                        return Err(Status::NotADirectory);
                    }
                }
                (Err(e), 1 | 4) if e.kind() == std::io::ErrorKind::NotFound => return Err(self.not_found(&p, &e)),
                (Err(e), _) => return Err(self.not_found(&p, &e)),
            }
            let f = File::open(&p).map_err(|e| self.not_found(&p, &e))?;
            self.files.insert(key, f);
            return Ok(());
        }
        let mut o = OpenOptions::new();
        o.read(true).write(true);
        match disposition {
            0 | 5 => o.create(true).truncate(true),
            1 => &mut o,
            2 => o.create_new(true),
            3 => o.create(true),
            _ => o.truncate(true),
        };
        o.custom_flags(libc::O_NOFOLLOW);
        let f = o.open(&p).map_err(|e| self.not_found(&p, &e))?;
        self.files.insert(key, f);
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

    fn query_path(&mut self, path: &str) -> Result<(), Status> {
        let p = self.path(path);
        std::fs::metadata(&p).map(drop).map_err(|e| self.not_found(&p, &e))
    }

    fn query_file(&mut self, key: u64) -> Result<(), Status> {
        self.file(key)?.metadata().map(drop).map_err(|e| Status::from_io(&e))
    }

    fn query_fs(&mut self) -> Result<(), Status> {
        let c =
            std::ffi::CString::new(self.root.as_os_str().as_encoded_bytes()).map_err(|_| Status::ObjectNameNotFound)?;
        // SAFETY: a NUL-terminated path and a zeroed statvfs to fill.
        let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
        let r = unsafe { libc::statvfs(c.as_ptr(), &mut st) };
        if r != 0 {
            return Err(Status::from_io(&std::io::Error::last_os_error()));
        }
        Ok(())
    }

    fn set_file_info(&mut self, key: u64) -> Result<(), Status> {
        let f = self.file(key)?;
        let now = std::time::SystemTime::now();
        f.set_times(std::fs::FileTimes::new().set_modified(now).set_accessed(now))
            .map_err(|e| Status::from_io(&e))
    }

    fn find(&mut self, pattern: &str) -> Result<u32, Status> {
        let (dir, mask) = pattern.rsplit_once('\\').unwrap_or(("", pattern));
        let d = self.path(dir);
        let entries = std::fs::read_dir(&d).map_err(|e| match Status::from_io(&e) {
            Status::ObjectNameNotFound => Status::ObjectPathNotFound,
            s => s,
        })?;
        let mut n = 0u32;
        for e in entries.flatten() {
            if wildcard_match(mask, &e.file_name().to_string_lossy()) {
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
        let p = self.path(path);
        std::fs::remove_file(&p).map_err(|e| self.not_found(&p, &e))
    }

    fn rename(&mut self, from: &str, to: &str) -> Result<(), Status> {
        let (a, b) = (self.path(from), self.path(to));
        std::fs::rename(&a, &b).map_err(|e| self.not_found(&a, &e))
    }

    fn mkdir(&mut self, path: &str) -> Result<(), Status> {
        let p = self.path(path);
        match std::fs::create_dir(&p) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && p.is_dir() => Ok(()),
            Err(e) => Err(self.not_found(&p, &e)),
        }
    }

    fn deltree(&mut self, path: &str) -> Result<(), Status> {
        let p = self.path(path);
        match std::fs::remove_dir_all(&p) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(Status::from_io(&e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let mut b = LocalBackend::new(d.path());
        assert_eq!(b.query_path("\\a\\b"), Err(Status::ObjectPathNotFound));
        assert_eq!(b.query_path("\\a"), Err(Status::ObjectNameNotFound));
        b.mkdir("\\a").unwrap();
        b.mkdir("\\a").unwrap();
        b.create(1, "\\a\\f", false, 2).unwrap();
        assert_eq!(b.create(2, "\\a\\f", false, 2), Err(Status::ObjectNameCollision));
        assert_eq!(b.write(1, 10, b"hello").unwrap(), 5);
        let mut buf = [0u8; 32];
        assert_eq!(b.read(1, 10, &mut buf).unwrap(), 5);
        assert_eq!(&buf[..5], b"hello");
        b.lock(1, 0, 1, true).unwrap();
        b.lock(1, 0, 1, false).unwrap();
        b.flush(1).unwrap();
        b.set_file_info(1).unwrap();
        b.query_file(1).unwrap();
        b.query_fs().unwrap();
        b.close(1).unwrap();
        assert_eq!(b.close(1), Err(Status::InvalidHandle));
        assert_eq!(b.find("\\a\\F*"), Ok(1));
        assert_eq!(b.find("\\a\\x*"), Err(Status::NoSuchFile));
        assert_eq!(b.find("\\nope\\x*"), Err(Status::ObjectPathNotFound));
        b.rename("\\a\\f", "\\a\\g").unwrap();
        assert_eq!(b.unlink("\\a\\f"), Err(Status::ObjectNameNotFound));
        b.unlink("\\a\\g").unwrap();
        b.create(3, "\\a\\d", true, 2).unwrap();
        assert_eq!(b.create(4, "\\a\\e", true, 1), Err(Status::ObjectNameNotFound));
        b.deltree("\\a").unwrap();
        b.deltree("\\a").unwrap();
    }
}
