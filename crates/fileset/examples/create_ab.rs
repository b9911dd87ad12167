//! ct-1m's create pattern (4 KiB files, 1,000 a directory) written three
//! ways, for an A/B of the kernel's cost per file (issue 27):
//! `syscalls` (openat + write + close, as `generate` does) and `uring`
//! (the same three as one linked io_uring chain per file, a batch of
//! chains per submit, direct descriptors), and `direct` (the system calls
//! with `O_DIRECT`, past the page cache). Prints files/s, the process's
//! CPU per file (io_uring's kernel workers are threads of the process, so
//! their time is in it) and all CPUs' busy time per file (/proc/stat:
//! the kernel's writeback included).
//!
//!   cargo run --release -p benchlab-fileset --example create_ab -- DIR COUNT syscalls|uring|direct [THREADS] [BATCH]
use std::ffi::CString;
use std::os::fd::AsRawFd;
use std::time::Instant;

fn cpu() -> (f64, f64) {
    // SAFETY: an all-zero rusage is a valid value of the plain C struct.
    let mut r: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage fills the struct it is given.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut r) };
    let t = |v: libc::timeval| v.tv_sec as f64 + v.tv_usec as f64 / 1e6;
    (t(r.ru_utime), t(r.ru_stime))
}

/// All CPUs' busy seconds (/proc/stat: everything but idle and iowait).
fn box_busy() -> f64 {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let line = stat.lines().next().unwrap_or_default();
    let v: Vec<f64> = line.split_whitespace().skip(1).filter_map(|x| x.parse().ok()).collect();
    let busy: f64 = v
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != 3 && *i != 4)
        .map(|(_, x)| x)
        .sum();
    busy / 100.0
}

fn names(d: u64) -> Vec<CString> {
    (d * 1000..d * 1000 + 1000)
        .map(|i| CString::new(format!("p{i:06}.html")).unwrap())
        .collect()
}

fn syscalls(dir: &std::fs::File, d: u64, buf: &[u8], direct: bool) {
    let extra = if direct { libc::O_DIRECT } else { 0 };
    for n in names(d) {
        // SAFETY: valid directory fd and NUL-terminated name.
        let fd = unsafe {
            libc::openat(
                dir.as_raw_fd(),
                n.as_ptr(),
                libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC | libc::O_CLOEXEC | extra,
                0o644,
            )
        };
        assert!(fd >= 0, "{}", std::io::Error::last_os_error());
        // SAFETY: fd open, buf valid.
        let w = unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) };
        assert_eq!(w as usize, buf.len());
        // SAFETY: fd was opened above and is closed once.
        unsafe { libc::close(fd) };
    }
}

fn uring(ring: &mut io_uring::IoUring, dir: &std::fs::File, d: u64, buf: &[u8], batch: usize) {
    use io_uring::{opcode, squeue::Flags, types};
    let names = names(d);
    for group in names.chunks(batch) {
        {
            let mut sq = ring.submission();
            for (k, n) in group.iter().enumerate() {
                let slot = types::DestinationSlot::try_from_slot_target(k as u32).unwrap();
                let open = opcode::OpenAt::new(types::Fd(dir.as_raw_fd()), n.as_ptr())
                    // A direct descriptor takes no O_CLOEXEC (EINVAL).
                    .flags(libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC)
                    .mode(0o644)
                    .file_index(Some(slot))
                    .build()
                    .flags(Flags::IO_LINK);
                let write = opcode::Write::new(types::Fixed(k as u32), buf.as_ptr(), buf.len() as u32)
                    .build()
                    .flags(Flags::IO_LINK);
                let close = opcode::Close::new(types::Fixed(k as u32)).build();
                // SAFETY: names and buf outlive the wait below.
                unsafe {
                    sq.push(&open).unwrap();
                    sq.push(&write).unwrap();
                    sq.push(&close).unwrap();
                }
            }
        }
        ring.submit_and_wait(group.len() * 3).unwrap();
        for c in ring.completion() {
            assert!(c.result() >= 0, "cqe {}", c.result());
        }
    }
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let root = std::path::PathBuf::from(&a[1]);
    let count: u64 = a[2].parse().unwrap();
    let mode = a[3].clone();
    let threads: u64 = a.get(4).map_or(2, |s| s.parse().unwrap());
    let batch: usize = a.get(5).map_or(64, |s| s.parse().unwrap());
    let dirs = count.div_ceil(1000);
    for d in 0..dirs {
        std::fs::create_dir_all(root.join(format!("d{d:04}"))).unwrap();
    }
    let box0 = box_busy();
    let (u0, s0) = cpu();
    let t0 = Instant::now();
    std::thread::scope(|s| {
        for t in 0..threads {
            let (root, mode) = (&root, &mode);
            s.spawn(move || {
                // 4 KiB-aligned, for O_DIRECT.
                let mut backing = vec![b'x'; 8192];
                let off = backing.as_ptr().align_offset(4096);
                let buf = &mut backing[off..off + 4096];
                let buf: &[u8] = buf;
                let mut ring = (mode == "uring").then(|| {
                    let r = io_uring::IoUring::new((batch * 3).next_power_of_two() as u32).unwrap();
                    r.submitter().register_files_sparse(batch as u32).unwrap();
                    r
                });
                for d in (t..dirs).step_by(threads as usize) {
                    let dir = std::fs::File::open(root.join(format!("d{d:04}"))).unwrap();
                    match &mut ring {
                        Some(r) => uring(r, &dir, d, buf, batch),
                        None => syscalls(&dir, d, buf, mode == "direct"),
                    }
                }
            });
        }
    });
    let wall = t0.elapsed().as_secs_f64();
    let (u1, s1) = cpu();
    let boxcpu = box_busy() - box0;
    let files = (dirs * 1000) as f64;
    println!(
        "{mode} threads {threads} batch {batch}: {files} files in {wall:.2} s = {:.0} files/s; CPU {:.1} us a file ({:.1} user, {:.1} system); box {:.1} us a file",
        files / wall,
        ((u1 - u0) + (s1 - s0)) * 1e6 / files,
        (u1 - u0) * 1e6 / files,
        (s1 - s0) * 1e6 / files,
        boxcpu * 1e6 / files
    );
}
