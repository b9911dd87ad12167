//! A server that the real `benchlab lab up` starts with the test docroot,
//! for the SPIs whose programs run in application servers the lab starts
//! (gunicorn, uvicorn): the test checks them through the server as it
//! checks the others, then `lab down` and that nothing the lab started is
//! left alive.

use std::fs;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use tempfile::TempDir;

use super::servers::{self, SpiceServer};
use super::{chmod, group_alive, make_docroot, Response, COOKIE, USER_AGENT};

/// Application-server worker processes per SPI (`lab up`'s
/// `benchlab_lab::appserver::WORKERS`): the session log's pids are theirs.
pub const APP_WORKERS: usize = 4;

/// A `lab up` server; dropping it runs `lab down --all` (a failed test
/// leaves nothing running) before its files go.
pub struct LabServer {
    pub srv: SpiceServer,
    /// The process groups `lab up` recorded (server and helpers).
    pub groups: Vec<u32>,
    pub state: PathBuf,
    server: &'static str,
    base: TempDir,
}

pub fn lab(base: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_benchlab"))
        .arg("lab")
        .args(args)
        .env("BENCHLAB_LAB_DIR", base)
        .output()
        .expect("run benchlab lab")
}

/// `benchlab lab up SERVER --root DOCROOT` with the test docroot.
pub fn up(server: &'static str) -> LabServer {
    up_with(server, &[])
}

/// `benchlab lab up SERVER --root DOCROOT EXTRA…`.
pub fn up_with(server: &'static str, extra: &[&str]) -> LabServer {
    let dir = tempfile::tempdir().expect("tempdir");
    chmod(dir.path(), 0o755);
    let www = dir.path().join("www");
    make_docroot(&www);
    let base = tempfile::tempdir().expect("tempdir");
    let mut args = vec!["up", server, "--root", www.to_str().unwrap()];
    args.extend_from_slice(extra);
    let out = lab(base.path(), &args);
    assert!(
        out.status.success(),
        "lab up {server} failed ({}):\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let state = base.path().join(server);
    let record: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(state.join("lab.json")).expect("read lab.json")).expect("lab.json");
    let port = record["port"].as_u64().expect("port") as u16;
    let groups = record["process_groups"]
        .as_array()
        .expect("process_groups")
        .iter()
        .map(|g| g.as_u64().expect("a group id") as u32)
        .collect();
    let srv = servers::from_lab(server, port, www, state.join("log/session.log"), state.join("run"), dir);
    LabServer {
        srv,
        groups,
        state,
        server,
        base,
    }
}

/// Processes alive (not zombies) whose command line mentions `needle`.
pub fn live_processes_mentioning(needle: &str) -> Vec<String> {
    let mut out = Vec::new();
    for e in fs::read_dir("/proc").unwrap().flatten() {
        let Ok(cmdline) = fs::read(e.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        let zombie = fs::read_to_string(e.path().join("stat"))
            .ok()
            .and_then(|s| s.rsplit_once(')').map(|(_, r)| r.trim_start().starts_with('Z')))
            .unwrap_or(true);
        if !zombie && cmdline.contains(needle) {
            out.push(format!("{} {cmdline}", e.file_name().to_string_lossy()));
        }
    }
    out
}

impl LabServer {
    /// `lab down SERVER`: it succeeds, no process of any group it started
    /// is alive, and no process names the state dir.
    pub fn down(self) {
        let out = lab(self.base.path(), &["down", self.server]);
        assert!(
            out.status.success(),
            "lab down {} failed: {}",
            self.server,
            String::from_utf8_lossy(&out.stderr)
        );
        // `lab down` waits for the groups itself; allow a moment for the
        // last reaped worker to leave /proc.
        let deadline = Instant::now() + Duration::from_secs(5);
        while self.groups.iter().any(|&g| group_alive(g)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        for &g in &self.groups {
            assert!(!group_alive(g), "{}: process group {g} outlived lab down", self.server);
        }
        let left = live_processes_mentioning(&self.base.path().display().to_string());
        assert!(left.is_empty(), "{}: left after lab down: {left:?}", self.server);
        assert!(
            !self.state.exists(),
            "{}: lab down left {}",
            self.server,
            self.state.display()
        );
    }
}

impl Drop for LabServer {
    fn drop(&mut self) {
        if self.state.exists() {
            let _ = lab(self.base.path(), &["down", "--all", "--grace", "3s"]);
        }
    }
}

/// Sends one request (`Connection: close`, the test's cookie and user
/// agent) on `stream` and reads the response to its end: for a HEAD or a
/// request straight to an application server's socket, which [`super::get`]
/// (GET over TCP) cannot send.
pub fn request(mut stream: impl Read + Write, method: &str, path: &str) -> Response {
    let body = if method == "POST" { "Content-Length: 0\r\n" } else { "" };
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: localhost\r\nUser-Agent: {USER_AGENT}\r\nCookie: {COOKIE}\r\n{body}\
         Connection: close\r\n\r\n"
    );
    stream.write_all(req.as_bytes()).expect("send request");
    let mut raw = Vec::new();
    stream
        .read_to_end(&mut raw)
        .unwrap_or_else(|e| panic!("read the response to {method} {path}: {e}"));
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("{method} {path}: no end of head in {:?}", String::from_utf8_lossy(&raw)));
    let head = String::from_utf8_lossy(&raw[..end]).into_owned();
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or("");
    let status = status_line
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("{method} {path}: bad status line {status_line:?}"));
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    Response {
        status,
        headers,
        body: raw[end + 4..].to_vec(),
        elapsed: Duration::ZERO,
    }
}

/// A TCP connection to 127.0.0.1:`port` with a read timeout.
pub fn tcp(port: u16) -> TcpStream {
    let s = TcpStream::connect(("127.0.0.1", port)).unwrap_or_else(|e| panic!("connect to {port}: {e}"));
    s.set_read_timeout(Some(Duration::from_secs(20))).expect("set timeout");
    s
}

/// A connection to a unix socket with a read timeout.
pub fn unix(path: &Path) -> UnixStream {
    let s = UnixStream::connect(path).unwrap_or_else(|e| panic!("connect to {}: {e}", path.display()));
    s.set_read_timeout(Some(Duration::from_secs(20))).expect("set timeout");
    s
}
