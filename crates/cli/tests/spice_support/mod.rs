//! Helpers for the SPICE tests: build the SPICE programs once, make a
//! docroot, fill in `deploy/spice/*.conf.in`, start and stop processes,
//! fetch a URL with a minimal HTTP/1.1 client, and check a session log.
#![allow(dead_code)]

pub mod lab;
pub mod servers;

use std::collections::HashMap;
use std::fs;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The SPIs whose programs live under `spice/` and have all three
/// programs (adrot, session, sleep).
pub const SPIS: &[&str] = &["cgi-c", "cgi-script", "cgi-perl", "fastcgi", "php-fpm", "node"];

/// The SPIs whose programs run in an application server behind the web
/// server's proxy, started by `lab up` (tested through it).
pub const APP_SPIS: &[&str] = &["wsgi", "asgi"];

/// The SPIs of a servlet container (`lab up tomcat`): one JVM runs them.
pub const CONTAINER_SPIS: &[&str] = &["servlet", "jsp"];

/// Files of every docroot: a 4,096-byte page and a 10,000-byte one in a
/// directory (binary bytes, NULs included, so any text-mode mangling shows).
pub const FILE_4K: &str = "/a.html";
pub const FILE_10K: &str = "/dir1/b.html";

/// The repository's root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Where `program` is installed: on PATH, or in /usr/sbin or /sbin (not on
/// an ordinary user's PATH, yet where Debian puts the servers).
pub fn which(program: &str) -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    dirs.extend(["/usr/sbin", "/sbin", "/usr/bin"].map(PathBuf::from));
    dirs.into_iter().map(|d| d.join(program)).find(|p| p.is_file())
}

/// Panics with a clear message when a program the tests need is missing:
/// `scripts/test.sh` installs them, so a missing one is a broken setup, never a skip.
pub fn require(program: &str) -> PathBuf {
    which(program).unwrap_or_else(|| {
        panic!(
            "{program} is not installed: run `bash scripts/test.sh` (it installs the SPICE test packages: \
             nginx-light, apache2, lighttpd, fcgiwrap, spawn-fcgi, libfcgi-dev, python3, perl, php-fpm, nodejs)"
        )
    })
}

/// PHP-FPM's program: `php-fpm`, or Debian's versioned `php-fpmX.Y` in
/// /usr/sbin; panics as [`require`] does when there is none.
pub fn php_fpm() -> PathBuf {
    benchlab_lab::php_fpm_path().unwrap_or_else(|| {
        panic!("php-fpm is not installed: run `bash scripts/test.sh` (Debian's php-fpm, for the php-fpm SPI)")
    })
}

/// Starts `node spice.js LISTEN` (the node SPI: one process, an HTTP
/// server) with SPICE_ROOT and SPICE_SESSION_LOG handed over by `env`
/// ([`Proc::spawn`] clears them), waiting until `ready()`.
pub fn spawn_node(bin: &Path, listen: &str, root: &Path, log: &Path, ready: &dyn Fn() -> bool) -> Proc {
    let node = require("node");
    require("perl");
    let mut cmd = command("env");
    cmd.arg(format!("SPICE_ROOT={}", root.display()))
        .arg(format!("SPICE_SESSION_LOG={}", log.display()))
        .arg(node)
        .arg(bin.join("spice.js"))
        .arg(listen);
    let mut p = Proc::spawn("node", cmd);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !ready() {
        if let Some(status) = p.exited() {
            panic!("node spice.js exited at start ({status})");
        }
        assert!(Instant::now() < deadline, "node spice.js is not ready on {listen}");
        std::thread::sleep(Duration::from_millis(20));
    }
    p
}

/// Builds the C programs (`make -C spice`) once per test binary, into
/// Cargo's temp dir (not the source tree), and returns the directory that
/// holds `cgi-c`, `fastcgi`, `spice.py`, `spice.pl` and `spice.php`.
pub fn programs() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        require("make");
        require("gcc");
        assert!(
            Path::new("/usr/bin/python3").is_file(),
            "/usr/bin/python3 (spice.py's interpreter) is missing: run `bash scripts/test.sh`"
        );
        assert!(
            Path::new("/usr/bin/perl").is_file(),
            "/usr/bin/perl (spice.pl's interpreter) is missing: run `bash scripts/test.sh`"
        );
        assert!(
            Path::new("/usr/include/fcgiapp.h").is_file(),
            "libfcgi's headers are missing (Debian: libfcgi-dev): run `bash scripts/test.sh`"
        );
        let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("spice-build");
        let res = Command::new("make")
            .arg("-s")
            .arg("-C")
            .arg(repo().join("spice"))
            .arg(format!("BUILD={}", out.display()))
            .output()
            .expect("run make");
        assert!(
            res.status.success(),
            "make -C spice failed ({}):\n{}{}",
            res.status,
            String::from_utf8_lossy(&res.stdout),
            String::from_utf8_lossy(&res.stderr)
        );
        fs::copy(repo().join("spice/cgi-script/spice.py"), out.join("spice.py")).expect("copy spice.py");
        fs::copy(repo().join("spice/cgi-perl/spice.pl"), out.join("spice.pl")).expect("copy spice.pl");
        fs::copy(repo().join("spice/php/spice.php"), out.join("spice.php")).expect("copy spice.php");
        fs::copy(repo().join("spice/shtml/spice.shtml"), out.join("spice.shtml")).expect("copy spice.shtml");
        fs::copy(repo().join("spice/node/spice.js"), out.join("spice.js")).expect("copy spice.js");
        out
    })
}

/// Copies the programs into `dir` (mode 0755) so that a server's unprivileged
/// user can run them whatever the permissions of the checkout.
pub fn install_programs(dir: &Path) {
    fs::create_dir_all(dir).expect("create bin dir");
    for name in [
        "cgi-c",
        "fastcgi",
        "spice.py",
        "spice.pl",
        "spice.php",
        "spice.shtml",
        "spice.js",
    ] {
        let to = dir.join(name);
        fs::copy(programs().join(name), &to).expect("copy program");
        chmod(&to, 0o755);
    }
    chmod(dir, 0o755);
}

pub fn chmod(path: &Path, mode: u32) {
    fs::set_permissions(path, fs::Permissions::from_mode(mode))
        .unwrap_or_else(|e| panic!("chmod {:o} {}: {e}", mode, path.display()));
}

/// The bytes of a docroot file.
pub fn file_contents(path: &str) -> Vec<u8> {
    match path {
        FILE_4K => {
            let mut s = b"<!DOCTYPE html>\n<html><head><title>SPICE</title></head>\n<body>\n".to_vec();
            let line = b"<p>The quick brown fox jumps over the lazy dog. 0123456789</p>\n";
            let tail = b"</body></html>\n";
            while s.len() + line.len() + tail.len() <= 4096 {
                s.extend_from_slice(line);
            }
            s.resize(4096 - tail.len(), b' ');
            s.extend_from_slice(tail);
            s
        }
        FILE_10K => {
            let mut x: u32 = 0x9e37_79b9;
            (0..10_000)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 17;
                    x ^= x << 5;
                    (x >> 24) as u8
                })
                .collect()
        }
        _ => panic!("no such test file {path}"),
    }
}

/// Writes the docroot under `root` (dirs 0755, files 0644).
pub fn make_docroot(root: &Path) {
    for path in [FILE_4K, FILE_10K] {
        let p = root.join(&path[1..]);
        fs::create_dir_all(p.parent().unwrap()).expect("create docroot dir");
        fs::write(&p, file_contents(path)).expect("write docroot file");
        chmod(&p, 0o644);
    }
    chmod(&root.join("dir1"), 0o755);
    chmod(root, 0o755);
}

/// Reads `deploy/spice/<name>` and replaces each `@KEY@`; panics when a
/// placeholder is left over.
pub fn fill_template(name: &str, vars: &[(&str, String)]) -> String {
    let path = repo().join("deploy/spice").join(name);
    let mut s = fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    for (k, v) in vars {
        s = s.replace(&format!("@{k}@"), v);
    }
    let left: Vec<&str> = s
        .split('@')
        .skip(1)
        .step_by(2)
        .filter(|w| !w.is_empty() && w.chars().all(|c| c.is_ascii_uppercase() || c == '_'))
        .collect();
    assert!(left.is_empty(), "{name}: placeholders left unfilled: {left:?}");
    s
}

/// A free TCP port on 127.0.0.1 (closed again before returning).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("bind 127.0.0.1:0")
        .port()
}

/// Sends `sig` to a process, or to a process group when `target` is
/// negative (no libc in this crate's dev-dependencies: `sh`'s `kill`).
fn signal(sig: &str, target: i64) {
    let _ = Command::new("sh")
        .arg("-c")
        .arg(format!("kill -{sig} {target} 2>/dev/null"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// A command for `program` that gets SIGTERM should the thread that starts
/// it die without stopping it (a test binary killed by a timeout):
/// `setpriv --pdeathsig TERM -- program` (util-linux, essential on Debian).
/// nginx, Apache, lighttpd and the FastCGI supervisor stop their children
/// on SIGTERM.
pub fn command(program: &str) -> Command {
    command_path(&require(program))
}

/// [`command`] for a program named by its path.
pub fn command_path(path: &Path) -> Command {
    match which("setpriv") {
        Some(setpriv) => {
            let mut c = Command::new(setpriv);
            c.args(["--pdeathsig", "TERM", "--"]).arg(path);
            c
        }
        None => Command::new(path),
    }
}

/// A process this test started, in a process group of its own (so what it
/// forks, such as fcgiwrap's workers, Apache's children, FastCGI workers
/// and CGI programs, goes with it). Dropping it stops the whole group:
/// SIGTERM, up to 3 s for the leader to exit, then SIGKILL.
pub struct Proc {
    name: String,
    child: Child,
}

impl Proc {
    pub fn spawn(name: &str, mut cmd: Command) -> Proc {
        cmd.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .env_remove("SPICE_ROOT")
            .env_remove("SPICE_SESSION_LOG")
            .process_group(0);
        let child = cmd.spawn().unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
        Proc {
            name: name.to_owned(),
            child,
        }
    }

    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// The exit status, if it already exited.
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().expect("try_wait")
    }

    pub fn name(&self) -> &str {
        &self.name
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let group = -i64::from(self.child.id());
        signal("TERM", group);
        let deadline = Instant::now() + Duration::from_secs(3);
        while self.child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        // Whatever of the group is left (workers of a leader that exited).
        signal("KILL", group);
        let _ = self.child.kill();
        let _ = self.child.wait();
        // The group's other members are not our children (init reaps them):
        // wait until none is alive, so no test outlives its servers.
        let deadline = Instant::now() + Duration::from_secs(5);
        while group_alive(self.child.id()) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// Whether any live (not zombie) process is in process group `pgid`.
fn group_alive(pgid: u32) -> bool {
    let Ok(dir) = fs::read_dir("/proc") else {
        return false;
    };
    dir.flatten().any(|e| {
        fs::read_to_string(e.path().join("stat")).is_ok_and(|stat| {
            let f: Vec<&str> = stat
                .rsplit_once(')')
                .map_or(Vec::new(), |(_, rest)| rest.split_whitespace().collect());
            f.len() > 2 && f[0] != "Z" && f[2].parse() == Ok(pgid)
        })
    })
}

/// The children of `pid` (from /proc; None where the kernel does not list
/// them).
pub fn children_of(pid: u32) -> Option<Vec<u32>> {
    let s = fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).ok()?;
    Some(s.split_whitespace().filter_map(|p| p.parse().ok()).collect())
}

/// Waits until `port` accepts connections; panics with `log()` when `proc`
/// exits first or nothing listens within 10 s. Returns false when the
/// process exited (the caller may retry on another port).
pub fn wait_listening(proc: &mut Proc, port: u16, log: &dyn Fn() -> String) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(status) = proc.exited() {
            eprintln!("{} exited at start ({status}); log:\n{}", proc.name(), log());
            return false;
        }
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return true;
        }
        assert!(
            Instant::now() < deadline,
            "{} does not listen on 127.0.0.1:{port}; log:\n{}",
            proc.name(),
            log()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits until a unix socket exists at `path`.
pub fn wait_for_socket(path: &Path, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !path.exists() {
        assert!(Instant::now() < deadline, "{what} made no socket at {}", path.display());
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A response read by [`get`].
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    /// Header names in lower case.
    pub headers: HashMap<String, String>,
    pub body: Vec<u8>,
    pub elapsed: Duration,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(&name.to_ascii_lowercase()).map(String::as_str)
    }
}

/// The request headers [`get`] sends besides `Host` and `Connection`: the
/// ad-rotation programs read the cookie and the user agent.
pub const USER_AGENT: &str = "benchlab-spice-test/1";
pub const COOKIE: &str = "visitor=42; campaign=spice";

/// GET `path` (with query) from 127.0.0.1:`port` over HTTP/1.1 with
/// `Connection: close`, reading to the end. The body is what follows the
/// head; framing is checked by the caller (Content-Length against it).
pub fn get(port: u16, path: &str) -> Response {
    let start = Instant::now();
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap_or_else(|e| panic!("connect to {port}: {e}"));
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let req = format!(
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUser-Agent: {USER_AGENT}\r\nCookie: {COOKIE}\r\n\
         Connection: close\r\n\r\n"
    );
    s.write_all(req.as_bytes()).expect("send request");
    let mut raw = Vec::new();
    s.read_to_end(&mut raw)
        .unwrap_or_else(|e| panic!("read response to GET {path}: {e}"));
    let elapsed = start.elapsed();
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("GET {path}: no end of head in {:?}", String::from_utf8_lossy(&raw)));
    let head = String::from_utf8_lossy(&raw[..end]).into_owned();
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or("");
    let status = status_line
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("GET {path}: bad status line {status_line:?}"));
    let mut headers = HashMap::new();
    for line in lines {
        if let Some((k, v)) = line.split_once(':') {
            headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_owned());
        }
    }
    let mut body = raw[end + 4..].to_vec();
    if headers
        .get("transfer-encoding")
        .is_some_and(|te| te.eq_ignore_ascii_case("chunked"))
    {
        body = dechunk(&body)
            .unwrap_or_else(|| panic!("GET {path}: bad chunked body {:?}", String::from_utf8_lossy(&body)));
    }
    Response {
        status,
        headers,
        body,
        elapsed,
    }
}

/// The data of a chunked body (server-parsed pages have no length up
/// front), None when the framing is wrong or ends early.
pub fn dechunk(mut raw: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let eol = raw.windows(2).position(|w| w == b"\r\n")?;
        let size_text = std::str::from_utf8(&raw[..eol]).ok()?;
        let size = usize::from_str_radix(size_text.split(';').next()?.trim(), 16).ok()?;
        raw = &raw[eol + 2..];
        if size == 0 {
            return (raw == b"\r\n").then_some(out);
        }
        if raw.len() < size + 2 || &raw[size..size + 2] != b"\r\n" {
            return None;
        }
        out.extend_from_slice(&raw[..size]);
        raw = &raw[size + 2..];
    }
}

/// The "ad" the ad-rotation programs choose: FNV-1a (32 bits) over
/// `QUERY_STRING \n HTTP_COOKIE \n HTTP_USER_AGENT`, modulo 100.
pub fn expected_ad(query: &str, cookie: &str, user_agent: &str) -> u32 {
    let mut h: u32 = 2_166_136_261;
    for b in format!("{query}\n{cookie}\n{user_agent}").bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(16_777_619);
    }
    h % 100
}

/// One line of a session log after the counter.
#[derive(Debug, Clone)]
pub struct LogLine {
    /// Seconds since the epoch of the ISO-8601 UTC time.
    pub time: i64,
    pub pid: u32,
    pub path: String,
}

/// A parsed session log.
#[derive(Debug)]
pub struct SessionLog {
    pub counter: u64,
    pub lines: Vec<LogLine>,
}

/// Reads and checks a session log's format exactly (docs/spice.md): the counter
/// as 12 digits and `\n`, then `TIME\tPID\tPATH\n` lines with TIME as
/// `YYYY-MM-DDTHH:MM:SSZ`. Any torn or interleaved line fails.
pub fn read_session_log(path: &Path) -> SessionLog {
    let raw = fs::read(path).unwrap_or_else(|e| panic!("read session log {}: {e}", path.display()));
    let text = String::from_utf8(raw).unwrap_or_else(|e| panic!("session log is not UTF-8: {e}"));
    assert!(
        text.ends_with('\n'),
        "session log does not end with a newline: {text:?}"
    );
    let mut lines = text[..text.len() - 1].split('\n');
    let first = lines.next().unwrap();
    assert!(
        first.len() == 12 && first.bytes().all(|b| b.is_ascii_digit()),
        "session log's first line is not a 12-digit counter: {first:?}"
    );
    let counter = first.parse().unwrap();
    let lines = lines.map(parse_log_line).collect();
    SessionLog { counter, lines }
}

fn parse_log_line(line: &str) -> LogLine {
    let f: Vec<&str> = line.split('\t').collect();
    assert_eq!(f.len(), 3, "session log line is not TIME\\tPID\\tPATH: {line:?}");
    let time = parse_utc(f[0]).unwrap_or_else(|| panic!("bad time in session log line {line:?}"));
    assert!(
        !f[1].is_empty() && f[1].bytes().all(|b| b.is_ascii_digit()) && !f[1].starts_with('0'),
        "bad process id in session log line {line:?}"
    );
    assert!(f[2].starts_with('/'), "bad path in session log line {line:?}");
    LogLine {
        time,
        pid: f[1].parse().unwrap(),
        path: f[2].to_owned(),
    }
}

/// `YYYY-MM-DDTHH:MM:SSZ` to seconds since the epoch.
fn parse_utc(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() != 20 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || b[13] != b':' || b[16] != b':' || b[19] != b'Z'
    {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let part = &s[r];
        if part.bytes().all(|c| c.is_ascii_digit()) {
            part.parse().ok()
        } else {
            None
        }
    };
    let (y, mo, d, h, mi, se) = (
        num(0..4)?,
        num(5..7)?,
        num(8..10)?,
        num(11..13)?,
        num(14..16)?,
        num(17..19)?,
    );
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || se > 60 {
        return None;
    }
    // Days from civil (Howard Hinnant's algorithm).
    let y = if mo <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (mo + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(days * 86_400 + h * 3600 + mi * 60 + se)
}

/// Seconds since the epoch now.
pub fn now_s() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs() as i64
}

/// Runs the real load generator and returns its one mix (`http --json`
/// prints a one-mix `benchlab.results/1`).
pub fn benchlab_json(args: &[&str]) -> serde_json::Value {
    let mut all = vec!["http", "--json"];
    all.extend_from_slice(args);
    let out = Command::new(env!("CARGO_BIN_EXE_benchlab"))
        .args(&all)
        .output()
        .expect("run benchlab");
    assert!(
        out.status.success(),
        "benchlab {all:?} failed ({}):\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "benchlab --json printed no JSON ({e}):\n{}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    assert_eq!(v["schema"], "benchlab.results/1", "{v}");
    match v["mixes"].as_array().map(Vec::as_slice) {
        Some([mix]) => mix.clone(),
        _ => panic!("not one mix in {v}"),
    }
}
