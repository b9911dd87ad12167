//! Helpers shared by the integration tests: run the real `benchlab` binary,
//! pick free loopback ports, and read its `--json` output.
#![allow(dead_code)]

pub mod netns;
pub mod servers;

use std::io::{BufRead, BufReader, Read};
use std::net::{SocketAddr, TcpListener};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Path of the `benchlab` binary Cargo built for these tests.
pub fn benchlab_bin() -> &'static str {
    env!("CARGO_BIN_EXE_benchlab")
}

/// A free TCP port on 127.0.0.1. The listener is closed before returning, so
/// another process may in theory take it; the OS hands out ports round-robin,
/// which makes that rare enough for tests.
pub fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    l.local_addr().expect("local_addr").port()
}

/// Waits until something accepts TCP connections on `127.0.0.1:port`.
pub fn wait_for_port(port: u16, within: Duration) {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("nothing listens on 127.0.0.1:{port} after {within:?}");
}

/// Runs `benchlab` with `args` and returns its whole output.
pub fn run_benchlab(args: &[&str]) -> Output {
    Command::new(benchlab_bin()).args(args).output().expect("run benchlab")
}

/// The one mix of what `benchlab http --json` printed: a
/// `benchlab.results/1` of one phase and one mix (docs/http.md), whose
/// fields are those of a suite's mix.
/// `benchlab lab ARGS` with its state under `base` (`BENCHLAB_LAB_DIR`).
pub fn lab(base: &Path, args: &[&str]) -> Output {
    Command::new(benchlab_bin())
        .arg("lab")
        .args(args)
        .env("BENCHLAB_LAB_DIR", base)
        .output()
        .expect("run benchlab lab")
}

/// `benchlab run SUITE --out OUT EXTRA…`, which must succeed, and its
/// results.json.
pub fn run_suite(suite: &Path, out: &Path, extra: &[&str]) -> serde_json::Value {
    let mut args = vec!["run", s(suite), "--out", s(out)];
    args.extend_from_slice(extra);
    let o = run_benchlab(&args);
    assert_success(&format!("benchlab run {}", suite.display()), &o);
    let text = std::fs::read_to_string(out.join("results.json")).expect("results.json");
    serde_json::from_str(&text).expect("results.json is JSON")
}

pub fn http_mix(stdout: &[u8]) -> serde_json::Value {
    let v: serde_json::Value = serde_json::from_slice(stdout).unwrap_or_else(|e| {
        panic!(
            "benchlab --json printed no JSON ({e}):\n{}",
            String::from_utf8_lossy(stdout)
        )
    });
    assert_eq!(v["schema"], "benchlab.results/1", "{v}");
    let mixes = v["mixes"].as_array().unwrap_or_else(|| panic!("no mixes in {v}"));
    assert_eq!(mixes.len(), 1, "{v}");
    mixes[0].clone()
}

/// Runs `benchlab http ... --json` and returns its one mix ([`http_mix`]);
/// panics with stderr when the run did not exit 0.
pub fn http_json(args: &[&str]) -> serde_json::Value {
    let mut all = vec!["http", "--json"];
    all.extend_from_slice(args);
    let out = run_benchlab(&all);
    assert!(
        out.status.success(),
        "benchlab {:?} failed ({}):\nstdout:\n{}\nstderr:\n{}",
        all,
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    http_mix(&out.stdout)
}

/// Reads a u64 field at a JSON pointer such as `/errors/status`.
pub fn u(v: &serde_json::Value, pointer: &str) -> u64 {
    v.pointer(pointer)
        .and_then(|x| x.as_u64())
        .unwrap_or_else(|| panic!("no unsigned integer at {pointer} in {v}"))
}

/// Panics with a clear message when a program the tests need is missing:
/// `scripts/test.sh` installs them, so a missing one is a broken setup, never a skip.
pub fn require(program: &str) {
    let found = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(program).is_file()))
        .unwrap_or(false)
        || Path::new("/usr/sbin").join(program).is_file();
    assert!(
        found,
        "{program} is not installed: run `bash scripts/test.sh` (it installs the test servers)"
    );
}

/// A path as the `&str` a command line takes.
pub fn s(p: &Path) -> &str {
    p.to_str().expect("UTF-8 path")
}

/// Panics with stdout and stderr unless `out` is a success.
pub fn assert_success(what: &str, out: &Output) {
    assert!(
        out.status.success(),
        "{what} failed ({}):\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The live (not zombie) processes of process group `pgid`, from /proc.
pub fn group_members(pgid: i32) -> Vec<i32> {
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // Fields after the command name's last ')': state, ppid, pgrp, ...
        let Some((_, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let f: Vec<&str> = rest.split_whitespace().collect();
        if f.len() > 2 && f[0] != "Z" && f[2].parse() == Ok(pgid) {
            out.push(pid);
        }
    }
    out
}

/// Stops a process the tests started as the leader of a process group of
/// its own (`CommandExt::process_group(0)`) with everything it forked
/// (Apache's and smbd's children, FastCGI workers): SIGTERM to the group,
/// up to 3 s for the leader to exit, SIGKILL to whatever of the group is
/// left, the leader reaped, then up to 5 s until no member is alive (those
/// are not our children: init reaps them). Killing the leader alone left
/// Apache's workers running long after the tests.
pub fn stop_group(child: &mut Child) {
    let pgid = child.id() as i32;
    if child.try_wait().ok().flatten().is_none() || !group_members(pgid).is_empty() {
        // SAFETY: kill(2) with a negative pid signals process group `pgid`,
        // which this child leads (it was spawned with process_group(0)).
        unsafe { libc::kill(-pgid, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(3);
        while child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        // SAFETY: as above.
        unsafe { libc::kill(-pgid, libc::SIGKILL) };
    }
    let _ = child.kill();
    let _ = child.wait();
    let deadline = Instant::now() + Duration::from_secs(5);
    while !group_members(pgid).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A running `benchlab serve` on a free loopback port, in a process group
/// of its own, stopped with it when dropped (also when a test fails).
pub struct Serve {
    pub child: Child,
    pub addr: SocketAddr,
}

impl Serve {
    /// Serves `root` with the extra flags; the port comes from its first
    /// line (`listening on http://ADDR/`), so there is no race for a port.
    pub fn start(root: &Path, extra: &[&str]) -> Serve {
        let mut child = Command::new(benchlab_bin())
            .args(["serve", "--listen", "127.0.0.1:0", "--root"])
            .arg(root)
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .expect("start benchlab serve");
        let mut first = String::new();
        if let Some(out) = child.stdout.take() {
            let _ = BufReader::new(out).read_line(&mut first);
        }
        let addr = first
            .trim()
            .strip_prefix("listening on http://")
            .and_then(|a| a.strip_suffix('/'))
            .and_then(|a| a.parse().ok());
        let Some(addr) = addr else {
            stop_group(&mut child);
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                let _ = e.read_to_string(&mut err);
            }
            panic!("benchlab serve did not start: stdout {first:?}, stderr {err}");
        };
        Serve { child, addr }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Stops it with a signal (`INT`: Ctrl-C, `TERM`: kill, systemd);
    /// returns its exit code.
    pub fn stop_with(mut self, signal: &str) -> i32 {
        let ok = Command::new("kill")
            .args([&format!("-{signal}"), &self.child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(ok.success());
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(status) = self.child.try_wait().expect("wait for benchlab serve") {
                return status.code().unwrap_or(-1);
            }
            assert!(Instant::now() < deadline, "benchlab serve did not stop on SIG{signal}");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        stop_group(&mut self.child);
    }
}
