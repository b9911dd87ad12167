//! Helpers shared by the integration tests: run the real `benchlab` binary,
//! pick free loopback ports, and read its `--json` output.
#![allow(dead_code)]

pub mod servers;

use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Output};
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

/// Runs `benchlab http ... --json` and parses stdout as JSON; panics with
/// stderr when the run did not exit 0.
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
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "benchlab --json printed no JSON ({e}):\n{}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

/// Reads a u64 field at a JSON pointer such as `/errors/status`.
pub fn u(v: &serde_json::Value, pointer: &str) -> u64 {
    v.pointer(pointer)
        .and_then(|x| x.as_u64())
        .unwrap_or_else(|| panic!("no unsigned integer at {pointer} in {v}"))
}

/// Panics with a clear message when a program the tests need is missing:
/// `.ci/run` installs them, so a missing one is a broken setup, never a skip.
pub fn require(program: &str) {
    let found = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(program).is_file()))
        .unwrap_or(false)
        || Path::new("/usr/sbin").join(program).is_file();
    assert!(
        found,
        "{program} is not installed: run `bash .ci/run` (it installs the test servers)"
    );
}
