//! Starting detached process groups and stopping them again.
//!
//! Each process the lab starts (the server, fcgiwrap, spawn-fcgi) leads a
//! process group of its own, so whatever it forks (Apache's children, CGI
//! programs, FastCGI workers) is stopped with it by one signal to the group.
//! `lab up` exits while they run, so they are not our children afterwards:
//! `lab down` cannot wait(2) for them and instead watches /proc until no
//! live member of the group is left (a zombie counts as gone: it holds no
//! socket or file, and whoever inherited it reaps it).

use std::fs;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Spawns `cmd` as the leader of a new process group, stdin from
/// /dev/null, stdout and stderr appended to `log` (never our own pipes: a
/// caller reading `lab up`'s output would otherwise wait for the server to
/// exit), pinned to `cpus` when given.
pub fn spawn(mut cmd: Command, log: &Path, cpus: Option<&[usize]>) -> std::io::Result<Child> {
    let out = fs::OpenOptions::new().create(true).append(true).open(log)?;
    let err = out.try_clone()?;
    cmd.stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .env_remove("SPICE_ROOT")
        .env_remove("SPICE_SESSION_LOG")
        .process_group(0);
    if let Some(cpus) = cpus {
        // SAFETY: cpu_set_t is a bit array: all-zero bytes are the empty set.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        for &c in cpus {
            // SAFETY: `set` is a valid cpu_set_t; CPU_SET bounds-checks `c`
            // against the set's size (the CPU list was validated before).
            unsafe { libc::CPU_SET(c, &mut set) };
        }
        // SAFETY: sched_setaffinity is async-signal-safe and only reads
        // `set`, which the closure owns; nothing is allocated after fork.
        unsafe {
            cmd.pre_exec(move || {
                if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    cmd.spawn()
}

/// Pins the calling thread to `cpus`; threads it spawns afterwards inherit
/// the set (how `run --client-cpus` pins the load generator's workers).
pub fn pin_current_thread(cpus: &[usize]) -> std::io::Result<()> {
    // SAFETY: cpu_set_t is a bit array: all-zero bytes are the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &c in cpus {
        // SAFETY: `set` is a valid cpu_set_t; `parse_cpu_set` kept `c`
        // below CPU_SETSIZE.
        unsafe { libc::CPU_SET(c, &mut set) };
    }
    // SAFETY: sched_setaffinity reads the set we own; 0 is this thread.
    if unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// The live (not zombie) processes whose process group is `pgid`.
pub fn live_members(pgid: i32) -> Vec<i32> {
    let mut out = Vec::new();
    let Ok(dir) = fs::read_dir("/proc") else {
        return out;
    };
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(stat) = fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // The command name (field 2) is in parentheses and may hold spaces:
        // fields after the last ')' are state, ppid, pgrp, ...
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
            continue;
        };
        let f: Vec<&str> = rest.split_whitespace().collect();
        if f.len() > 2 && f[0] != "Z" && f[2].parse() == Ok(pgid) {
            out.push(pid);
        }
    }
    out
}

/// Whether process `pid` is alive (exists and is not a zombie).
pub fn alive(pid: i32) -> bool {
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, r)| r.split_whitespace().next())
            .is_some_and(|state| state != "Z"),
        Err(_) => false,
    }
}

/// Stops the process groups: SIGTERM to each, up to `grace` for every
/// member to exit, then SIGKILL and up to 5 s more. Returns the pids still
/// alive after that (normally none).
pub fn stop_groups(pgids: &[i32], grace: Duration) -> Vec<i32> {
    let left = |pgids: &[i32]| -> Vec<i32> { pgids.iter().flat_map(|&g| live_members(g)).collect() };
    for &g in pgids {
        // SAFETY: kill(2) with a negative pid signals a process group.
        unsafe { libc::kill(-g, libc::SIGTERM) };
    }
    if wait_until_empty(pgids, grace, &left) {
        return Vec::new();
    }
    for &g in pgids {
        // SAFETY: as above.
        unsafe { libc::kill(-g, libc::SIGKILL) };
    }
    wait_until_empty(pgids, Duration::from_secs(5), &left);
    left(pgids)
}

fn wait_until_empty(pgids: &[i32], within: Duration, left: &dyn Fn(&[i32]) -> Vec<i32>) -> bool {
    let deadline = Instant::now() + within;
    loop {
        if left(pgids).is_empty() {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Parses a CPU list as taskset(1) writes it: `0`, `0,2`, `1-3,6`.
pub fn parse_cpus(list: &str) -> Result<Vec<usize>, crate::Error> {
    parse_cpu_set("--cpus", list)
}

/// [`parse_cpus`] for the flag `flag` (its name starts each message); a
/// bad list is the user's input ([`crate::Error::Usage`]).
pub fn parse_cpu_set(flag: &str, list: &str) -> Result<Vec<usize>, crate::Error> {
    cpu_set(flag, list).map_err(crate::Error::Usage)
}

fn cpu_set(flag: &str, list: &str) -> Result<Vec<usize>, String> {
    let mut cpus = Vec::new();
    for part in list.split(',') {
        let part = part.trim();
        let num = |s: &str| {
            s.parse::<usize>()
                .map_err(|_| format!("{flag} {list:?}: {s:?} is not a CPU number (expected e.g. 0 or 0,2 or 1-3)"))
        };
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (num(a)?, num(b)?);
                if a > b {
                    return Err(format!("{flag} {list:?}: range {part} runs backwards"));
                }
                cpus.extend(a..=b);
            }
            None => cpus.push(num(part)?),
        }
    }
    let online = std::thread::available_parallelism().map_or(1, |n| n.get());
    if let Some(&c) = cpus
        .iter()
        .find(|&&c| c >= online.max(1) || c >= libc::CPU_SETSIZE as usize)
    {
        return Err(format!(
            "{flag} {list:?}: CPU {c} does not exist here (this machine has CPUs 0-{})",
            online - 1
        ));
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_parse_like_taskset() {
        assert_eq!(parse_cpus("0").unwrap(), vec![0]);
        assert_eq!(parse_cpus("0,0").unwrap(), vec![0]);
        assert!(parse_cpus("x").unwrap_err().to_string().contains("not a CPU number"));
        assert!(parse_cpus("1-0").unwrap_err().to_string().contains("backwards"));
        assert!(parse_cpus("100000").unwrap_err().to_string().contains("does not exist"));
    }
}
