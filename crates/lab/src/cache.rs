//! A cold page cache without root: `run --cold-cache` as an ordinary user.
//!
//! Root drops the whole page cache (`/proc/sys/vm/drop_caches`). Anyone
//! else may still (1) drop the cached pages of files they can read, with
//! `posix_fadvise(POSIX_FADV_DONTNEED)`, whoever's memory cgroup those pages
//! are charged to, and (2) reclaim the pages charged to a memory cgroup they
//! own. [`CgroupCache`] makes such a cgroup under the caller's own (cgroup
//! v2 where the memory controller is delegated there, else the v1 memory
//! hierarchy), moves every process of a lab server into it (what they fork
//! later follows), and before each mix drops the file set's pages and
//! reclaims what the cgroup holds (`memory.reclaim`, kernel 5.19 and later;
//! else `memory.high` lowered for the moment; v1: `memory.force_empty`): the
//! server's files, programs and libraries come from the disk again, as
//! after a reboot. No limit stays on the cgroup during a mix, so a mix warms
//! the cache as it goes, exactly as after `drop_caches`. When the run ends
//! the processes go back to the cgroup they came from and the child is
//! removed.

use crate::{process, Error, LabState};
use std::fs;
use std::io::ErrorKind;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Whether this process runs as root (and may drop the whole page cache).
pub fn is_root() -> bool {
    // SAFETY: geteuid never fails.
    unsafe { libc::geteuid() == 0 }
}

/// The cgroup hierarchy holding the memory controller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    V1,
    V2,
}

/// A memory cgroup holding a lab server, emptied before each mix.
#[derive(Debug)]
pub struct CgroupCache {
    version: Version,
    /// The cgroup made for the server.
    dir: PathBuf,
    /// The cgroup its processes came from (and go back to).
    parent: PathBuf,
    /// The file set whose pages are dropped.
    root: PathBuf,
}

/// Where this process's memory cgroup is, from /proc/self/mountinfo and
/// /proc/self/cgroup: v2 when the unified hierarchy offers the memory
/// controller, else v1's memory hierarchy. Errors say what was looked for.
pub(crate) fn own_memory_cgroup(mountinfo: &str, self_cgroup: &str) -> Result<(Version, PathBuf), String> {
    // mountinfo: ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [TAGS] - FSTYPE SOURCE SUPEROPTIONS
    let mounts: Vec<(String, String, String, String)> = mountinfo
        .lines()
        .filter_map(|l| {
            let (left, right) = l.split_once(" - ")?;
            let f: Vec<&str> = left.split_whitespace().collect();
            let r: Vec<&str> = right.split_whitespace().collect();
            Some((
                f.get(3)?.to_string(),
                unescape(f.get(4)?),
                r.first()?.to_string(),
                r.get(2).copied().unwrap_or("").to_string(),
            ))
        })
        .collect();
    let join = |mount_root: &str, mountpoint: &str, path: &str| -> Option<PathBuf> {
        // The cgroup path is relative to the hierarchy's root; a mount of a
        // sub-tree (a container's) shows only what lies below its root.
        let rel = path.strip_prefix(mount_root.trim_end_matches('/')).unwrap_or(path);
        Some(Path::new(mountpoint).join(rel.trim_start_matches('/')))
    };
    let mut tried = Vec::new();
    for line in self_cgroup.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        if controllers.is_empty() {
            if let Some((root, mp, ..)) = mounts.iter().find(|m| m.2 == "cgroup2") {
                if let Some(dir) = join(root, mp, path) {
                    let offered = fs::read_to_string(dir.join("cgroup.controllers")).unwrap_or_default();
                    if offered.split_whitespace().any(|c| c == "memory") {
                        return Ok((Version::V2, dir));
                    }
                    tried.push(format!(
                        "cgroup v2 {} does not offer the memory controller (cgroup.controllers: {:?})",
                        dir.display(),
                        offered.trim()
                    ));
                }
            }
        } else if controllers.split(',').any(|c| c == "memory") {
            if let Some((root, mp, ..)) = mounts
                .iter()
                .find(|m| m.2 == "cgroup" && m.3.split(',').any(|o| o == "memory"))
            {
                if let Some(dir) = join(root, mp, path) {
                    return Ok((Version::V1, dir));
                }
            }
            tried.push("the cgroup v1 memory hierarchy is not mounted".into());
        }
    }
    if tried.is_empty() {
        tried.push("this process is in no memory cgroup (/proc/self/cgroup)".into());
    }
    Err(tried.join("; "))
}

/// mountinfo escapes space, tab, newline and backslash as octal.
fn unescape(s: &str) -> String {
    let mut out = String::new();
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            let oct: String = chars.clone().take(3).collect();
            if let Ok(v) = u8::from_str_radix(&oct, 8) {
                out.push(v as char);
                chars.nth(2);
                continue;
            }
        }
        out.push(c);
    }
    out
}

fn why_not(version: Version, dir: &Path, what: &str, e: &std::io::Error) -> Error {
    Error::Start(format!(
        "--cold-cache without root puts the lab server in a memory cgroup of its own, and {what} failed ({e}): \
         the memory cgroup here ({} {}) is not writable by this user. Run as root (the page cache is then \
         dropped for the whole machine), or run inside a cgroup delegated to you (e.g. `systemd-run --user \
         --scope -p Delegate=yes benchlab run …`)",
        match version {
            Version::V1 => "cgroup v1",
            Version::V2 => "cgroup v2",
        },
        dir.display()
    ))
}

impl CgroupCache {
    /// Makes the cgroup under this process's own memory cgroup and moves
    /// every live process of `lab` into it.
    pub fn create(lab: &LabState) -> Result<CgroupCache, Error> {
        let mountinfo = fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        let self_cgroup = fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
        let (version, parent) = own_memory_cgroup(&mountinfo, &self_cgroup).map_err(|why| {
            Error::Start(format!(
                "--cold-cache without root needs a memory cgroup to put the lab server in, and there is none \
                 here: {why}. Run as root (the page cache is then dropped with /proc/sys/vm/drop_caches)"
            ))
        })?;
        if version == Version::V2 {
            let sub = fs::read_to_string(parent.join("cgroup.subtree_control")).unwrap_or_default();
            if !sub.split_whitespace().any(|c| c == "memory") {
                // Refused when the cgroup holds processes itself (v2's "no
                // internal processes" rule): then say so.
                fs::write(parent.join("cgroup.subtree_control"), "+memory")
                    .map_err(|e| why_not(version, &parent, "enabling the memory controller for its children", &e))?;
            }
        }
        let dir = parent.join(format!("benchlab-lab-{}-{}", lab.server.name(), std::process::id()));
        fs::create_dir(&dir).map_err(|e| why_not(version, &parent, &format!("mkdir {}", dir.display()), &e))?;
        let cache = CgroupCache {
            version,
            dir,
            parent,
            root: lab.root.clone(),
        };
        // Twice: a process forked while the first pass ran is moved by the
        // second (one forked after its parent moved is born inside).
        for _ in 0..2 {
            for &group in &lab.process_groups {
                for pid in process::live_members(group) {
                    match fs::write(cache.dir.join("cgroup.procs"), pid.to_string()) {
                        Ok(()) => {}
                        // Gone meanwhile.
                        Err(e) if e.raw_os_error() == Some(libc::ESRCH) => {}
                        Err(e) => {
                            return Err(why_not(
                                version,
                                &cache.dir,
                                &format!("moving the server's process {pid} into it"),
                                &e,
                            ))
                        }
                    }
                }
            }
        }
        Ok(cache)
    }

    /// The cgroup made for the server.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// How the cache is made cold, for the disclosure.
    pub fn describe(&self) -> String {
        let how = match self.version {
            Version::V1 => "memory.force_empty",
            Version::V2 if self.dir.join("memory.reclaim").exists() => "memory.reclaim",
            Version::V2 => "memory.high lowered to 0 for the moment",
        };
        format!(
            "memory cgroup {} ({}) holding the lab server's processes; before each mix the file set's pages \
             are dropped (posix_fadvise DONTNEED, {}) and the cgroup's pages reclaimed ({how})",
            self.dir.display(),
            match self.version {
                Version::V1 => "cgroup v1",
                Version::V2 => "cgroup v2",
            },
            self.root.display()
        )
    }

    /// Bytes charged to the cgroup now.
    pub fn usage(&self) -> Option<u64> {
        let file = match self.version {
            Version::V1 => "memory.usage_in_bytes",
            Version::V2 => "memory.current",
        };
        fs::read_to_string(self.dir.join(file)).ok()?.trim().parse().ok()
    }

    /// Makes the cache cold: the file set's pages dropped, the cgroup's
    /// reclaimed. Returns a line for the progress display.
    pub fn evict(&self) -> Result<String, Error> {
        self.make_cold().map_err(Error::Cache)
    }

    fn make_cold(&self) -> Result<String, String> {
        let (files, bytes) = drop_file_pages(&self.root)?;
        let before = self.usage();
        match self.version {
            // Reclaims until nothing is left that can go (anonymous memory
            // stays without swap); returns 0 then.
            Version::V1 => fs::write(self.dir.join("memory.force_empty"), "0")
                .map_err(|e| format!("{}: memory.force_empty: {e}", self.dir.display()))?,
            Version::V2 => {
                let reclaim = self.dir.join("memory.reclaim");
                if reclaim.exists() {
                    let want = before.unwrap_or(u64::MAX / 2).max(1);
                    match fs::write(&reclaim, want.to_string()) {
                        Ok(()) => {}
                        // EAGAIN: less than asked could go (what is left is
                        // anonymous memory): the cache is gone all the same.
                        Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                        Err(e) => return Err(format!("{}: {e}", reclaim.display())),
                    }
                } else {
                    let high = self.dir.join("memory.high");
                    fs::write(&high, "0").map_err(|e| format!("{}: {e}", high.display()))?;
                    fs::write(&high, "max").map_err(|e| format!("{}: {e}", high.display()))?;
                }
            }
        }
        let after = self.usage();
        Ok(format!(
            "cold cache: pages of {files} files ({bytes} bytes) dropped, cgroup {} reclaimed{}",
            self.dir.file_name().map(|n| n.to_string_lossy()).unwrap_or_default(),
            match (before, after) {
                (Some(b), Some(a)) => format!(" ({b} → {a} bytes charged)"),
                _ => String::new(),
            }
        ))
    }
}

impl Drop for CgroupCache {
    /// Moves the processes back where they came from and removes the
    /// cgroup (a cgroup with processes cannot be removed).
    fn drop(&mut self) {
        for _ in 0..5 {
            let pids = fs::read_to_string(self.dir.join("cgroup.procs")).unwrap_or_default();
            for pid in pids.split_whitespace() {
                let _ = fs::write(self.parent.join("cgroup.procs"), pid);
            }
            if fs::remove_dir(&self.dir).is_ok() || !self.dir.exists() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        eprintln!(
            "benchlab: warning: could not remove the cold-cache cgroup {}; remove it with rmdir once its processes are gone",
            self.dir.display()
        );
    }
}

/// Drops the cached pages of every regular file under `root`: each file's
/// clean pages with posix_fadvise(POSIX_FADV_DONTNEED). A file that keeps
/// pages in the cache after that has dirty ones, which cannot be dropped
/// (a file set fresh from `fileset generate` may still be dirty): their
/// writeback is started for all such files at once with sync_file_range,
/// then waited for file by file, and the pages dropped again. Neither an
/// fdatasync per file (a journal commit and disk flush each, clean or not:
/// measured 12–15 s per eviction of ct-10k's 10,000 clean files on a
/// shared disk, against a tenth of a second for fadvise and mincore) nor a
/// syncfs (the whole file system, other programs' data too). Returns the
/// files and bytes covered.
pub(crate) fn drop_file_pages(root: &Path) -> Result<(u64, u64), String> {
    use std::os::fd::AsRawFd;
    let dont_need = |f: &fs::File, path: &Path| {
        // SAFETY: a valid open fd; offset 0, length 0 = the whole file.
        let rc = unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        if rc != 0 {
            return Err(format!(
                "posix_fadvise {}: {}",
                path.display(),
                std::io::Error::from_raw_os_error(rc)
            ));
        }
        Ok(())
    };
    let write_out = |f: &fs::File, path: &Path, flags: libc::c_uint| {
        // SAFETY: a valid open fd; offset 0, length 0 = to the end.
        if unsafe { libc::sync_file_range(f.as_raw_fd(), 0, 0, flags) } != 0 {
            return Err(format!(
                "sync_file_range {}: {}",
                path.display(),
                std::io::Error::last_os_error()
            ));
        }
        Ok(())
    };
    let mut stack = vec![root.to_owned()];
    let (mut files, mut bytes) = (0u64, 0u64);
    let mut dirty = Vec::new();
    while let Some(d) = stack.pop() {
        let entries = fs::read_dir(&d).map_err(|e| format!("{}: {e}", d.display()))?;
        for e in entries.flatten() {
            let path = e.path();
            let Ok(meta) = fs::symlink_metadata(&path) else {
                continue;
            };
            if meta.is_dir() {
                stack.push(path);
            } else if meta.is_file() {
                let Ok(f) = fs::File::open(&path) else {
                    continue;
                };
                dont_need(&f, &path)?;
                if resident_pages(&path).is_ok_and(|(resident, _)| resident > 0) {
                    write_out(&f, &path, libc::SYNC_FILE_RANGE_WRITE)?;
                    dirty.push((f, path));
                }
                files += 1;
                bytes += meta.size();
            }
        }
    }
    let wait = libc::SYNC_FILE_RANGE_WAIT_BEFORE | libc::SYNC_FILE_RANGE_WRITE | libc::SYNC_FILE_RANGE_WAIT_AFTER;
    for (f, path) in &dirty {
        write_out(f, path, wait)?;
        dont_need(f, path)?;
    }
    Ok((files, bytes))
}

/// Pages of `path` in the page cache now (mincore(2)), and its pages.
pub fn resident_pages(path: &Path) -> std::io::Result<(usize, usize)> {
    use std::os::fd::AsRawFd;
    let f = fs::File::open(path)?;
    let len = f.metadata()?.len() as usize;
    if len == 0 {
        return Ok((0, 0));
    }
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as usize;
    // SAFETY: a read-only shared mapping of an open file of `len` bytes;
    // unmapped below, never dereferenced.
    let addr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_SHARED,
            f.as_raw_fd(),
            0,
        )
    };
    if addr == libc::MAP_FAILED {
        return Err(std::io::Error::last_os_error());
    }
    let pages = len.div_ceil(page);
    let mut vec = vec![0u8; pages];
    // SAFETY: `addr` maps `len` bytes; `vec` has a byte per page.
    let rc = unsafe { libc::mincore(addr, len, vec.as_mut_ptr()) };
    let err = std::io::Error::last_os_error();
    // SAFETY: the mapping made above.
    unsafe { libc::munmap(addr, len) };
    if rc != 0 {
        return Err(err);
    }
    Ok((vec.iter().filter(|b| *b & 1 == 1).count(), pages))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ServerKind;
    use std::io::Read;
    use std::os::unix::process::CommandExt;

    #[test]
    fn the_memory_cgroup_is_found_in_v1_and_v2_layouts() {
        let v1_mounts = "30 25 0:26 / /sys/fs/cgroup/memory rw,relatime shared:12 - cgroup cgroup rw,memory\n\
                         35 25 0:31 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n";
        let v1_self = "4:memory:/process_api/abc\n0::/\n";
        let (v, dir) = own_memory_cgroup(v1_mounts, v1_self).unwrap();
        assert_eq!(
            (v, dir),
            (Version::V1, PathBuf::from("/sys/fs/cgroup/memory/process_api/abc"))
        );
        // A container's mount of a sub-tree: the path is below its root.
        let nested = "30 25 0:26 /docker/x /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n";
        let (_, dir) = own_memory_cgroup(nested, "4:memory:/docker/x/sub\n").unwrap();
        assert_eq!(dir, PathBuf::from("/sys/fs/cgroup/memory/sub"));
        // v2 without the memory controller offered (a nonexistent dir
        // offers nothing) and no v1 memory: a message saying so.
        let v2_only = "35 25 0:31 / /nonexistent/cgroup rw - cgroup2 cgroup2 rw\n";
        let e = own_memory_cgroup(v2_only, "0::/user.slice\n").unwrap_err();
        assert!(
            e.contains("cgroup v2 /nonexistent/cgroup/user.slice does not offer the memory controller"),
            "{e}"
        );
        let e = own_memory_cgroup("", "").unwrap_err();
        assert!(e.contains("in no memory cgroup"), "{e}");
    }

    #[test]
    fn mountinfo_escapes_are_undone() {
        assert_eq!(unescape(r"/a\040b"), "/a b");
        assert_eq!(unescape("/plain"), "/plain");
    }

    #[test]
    fn dropped_file_pages_leave_the_page_cache() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("d");
        fs::create_dir_all(&sub).unwrap();
        let file = sub.join("f");
        // Fresh and not synced: dirty pages, which only go once written out.
        fs::write(&file, vec![7u8; 64 * 4096]).unwrap();
        fs::File::open(&file).unwrap().read_to_end(&mut Vec::new()).unwrap();
        let (resident, pages) = resident_pages(&file).unwrap();
        assert!(
            pages >= 16 && resident == pages,
            "{resident} of {pages} cached after a read"
        );
        assert_eq!(drop_file_pages(dir.path()).unwrap(), (1, 64 * 4096));
        assert_eq!(resident_pages(&file).unwrap().0, 0);
    }

    /// The cgroup path on this machine, where a memory cgroup is writable
    /// (as root here; skipped with a note elsewhere): a process moves in,
    /// its cached file pages are reclaimed, and it moves back out with the
    /// cgroup removed.
    #[test]
    fn a_lab_process_moves_into_the_cgroup_its_cache_is_emptied_and_it_moves_back() {
        let dir = tempfile::tempdir().unwrap();
        let mut child = std::process::Command::new("sleep")
            .arg("60")
            .process_group(0)
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        let lab = LabState {
            server: ServerKind::Benchlab,
            port: 1,
            url: String::new(),
            state_dir: dir.path().to_owned(),
            root: dir.path().to_owned(),
            spis: Vec::new(),
            pid,
            process_groups: vec![pid],
            cpus: Vec::new(),
            disclosure: dir.path().join("disclosure.json"),
            boot_id: String::new(),
        };
        let cache = match CgroupCache::create(&lab) {
            Ok(c) => c,
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                eprintln!("skipped: no writable memory cgroup here: {e}");
                return;
            }
        };
        let cg = cache.dir().to_owned();
        let inside = fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap();
        let name = cg.file_name().unwrap().to_string_lossy().into_owned();
        assert!(inside.contains(&name), "{inside}");
        fs::write(dir.path().join("page"), vec![1u8; 256 * 1024]).unwrap();
        fs::File::open(dir.path().join("page"))
            .unwrap()
            .read_to_end(&mut Vec::new())
            .unwrap();
        let note = cache.evict().unwrap();
        assert!(
            note.starts_with("cold cache: pages of 1 files (262144 bytes) dropped"),
            "{note}"
        );
        assert_eq!(resident_pages(&dir.path().join("page")).unwrap().0, 0);
        assert!(cache.describe().contains(&cg.display().to_string()));
        drop(cache);
        assert!(!cg.exists(), "the cgroup is removed");
        let after = fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap();
        assert!(!after.contains(&name), "{after}");
        let _ = child.kill();
        let _ = child.wait();
    }
}
