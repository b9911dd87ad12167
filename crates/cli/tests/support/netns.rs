//! Test systems on one machine: Linux network namespaces joined by veth
//! pairs to a bridge, each with its own address from 198.18.0.0/15 (the
//! range RFC 2544 reserves for benchmarking networks; never 10.x,
//! 172.16–31.x or 192.168.x, which may be real networks).
//!
//! Layout (one [`NetLab`] per test; names carry the test's pid so tests
//! may run side by side):
//!
//! ```text
//!   server namespace: bridge 198.18.0.1 (web server), .2 (controller),
//!                     .100 (the web server again, for the delaying proxy)
//!     ├─ veth ── agent namespace 0: 198.18.0.11
//!     ├─ veth ── agent namespace 1: 198.18.0.12
//!     └─ …
//! ```
//!
//! The kernel here has no `sch_netem`, so delay on one test system is made
//! by [`NetLab::delay_to_server`]: a proxy inside that agent's namespace
//! that owns the web server's address there and forwards, late, to its
//! second address.
//!
//! Needs root and `ip` (iproute2): [`NetLab::new`] says why not and the
//! test is skipped with that reason printed.
#![allow(dead_code)]

use std::fs::File;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

/// The web server's address in the server namespace.
pub const SERVER_ADDR: &str = "198.18.0.1";
/// The controller's address in the server namespace.
pub const CONTROLLER_ADDR: &str = "198.18.0.2";
/// The web server's second address, which the delaying proxy forwards to.
pub const SERVER_ADDR_BEHIND_PROXY: &str = "198.18.0.100";

/// A server namespace and `agents` agent namespaces, removed on drop.
pub struct NetLab {
    tag: String,
    server: String,
    agents: Vec<String>,
    stop: Arc<AtomicBool>,
}

fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("ip: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

impl NetLab {
    /// Makes the namespaces; `Err` says why they cannot be made on this
    /// machine (not root, no iproute2): the caller skips. Once possible,
    /// a failure to build them is a test failure (a panic).
    pub fn new(agents: usize) -> Result<NetLab, String> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return Err("network namespaces need root".to_string());
        }
        if Command::new("ip").arg("-V").output().is_err() {
            return Err("no `ip` (iproute2) on PATH".to_string());
        }
        assert!(agents <= 80, "addresses .11 to .90 are for agents");
        // Unique per test, also between tests of one process (interface
        // names: at most 15 bytes, so `bl` + 6 digits + `a`/`b` + index).
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let tag = format!("{}{n}", std::process::id() % 100_000);
        let lab = NetLab {
            server: format!("benchlab-{tag}-server"),
            agents: (0..agents).map(|i| format!("benchlab-{tag}-agent{i}")).collect(),
            tag,
            stop: Arc::new(AtomicBool::new(false)),
        };
        if let Err(e) = lab.build() {
            drop(lab);
            panic!("building the namespaces: {e}");
        }
        Ok(lab)
    }

    fn build(&self) -> Result<(), String> {
        let s = self.server.as_str();
        ip(&["netns", "add", s])?;
        for ns in &self.agents {
            ip(&["netns", "add", ns])?;
        }
        ip(&["-n", s, "link", "set", "lo", "up"])?;
        ip(&["-n", s, "link", "add", "br0", "type", "bridge"])?;
        for addr in [SERVER_ADDR, CONTROLLER_ADDR, SERVER_ADDR_BEHIND_PROXY] {
            ip(&["-n", s, "addr", "add", &format!("{addr}/24"), "dev", "br0"])?;
        }
        ip(&["-n", s, "link", "set", "br0", "up"])?;
        for (i, ns) in self.agents.iter().enumerate() {
            // Made in this (root) namespace with names unique to the test,
            // then each end moved into its namespace at once.
            let (a, b) = (format!("bl{}a{i}", self.tag), format!("bl{}b{i}", self.tag));
            ip(&["link", "add", &a, "type", "veth", "peer", "name", &b])?;
            ip(&["link", "set", &a, "netns", ns])?;
            ip(&["link", "set", &b, "netns", s])?;
            ip(&["-n", ns, "link", "set", "lo", "up"])?;
            ip(&[
                "-n",
                ns,
                "addr",
                "add",
                &format!("{}/24", self.agent_addr(i)),
                "dev",
                &a,
            ])?;
            ip(&["-n", ns, "link", "set", &a, "up"])?;
            ip(&["-n", s, "link", "set", &b, "master", "br0"])?;
            ip(&["-n", s, "link", "set", &b, "up"])?;
        }
        Ok(())
    }

    pub fn server_ns(&self) -> &str {
        &self.server
    }

    pub fn agent_ns(&self, i: usize) -> &str {
        &self.agents[i]
    }

    /// Agent `i`'s address.
    pub fn agent_addr(&self, i: usize) -> String {
        format!("198.18.0.{}", 11 + i)
    }

    /// `program` to be run inside namespace `ns` (`ip netns exec`).
    pub fn command(&self, ns: &str, program: &str) -> Command {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", ns, program]);
        cmd
    }

    /// Runs `f` on a thread inside namespace `ns` (a network namespace
    /// belongs to a thread; threads it starts inherit it).
    pub fn in_ns<T: Send + 'static>(ns: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
        let path = format!("/run/netns/{ns}");
        thread::spawn(move || {
            let file = File::open(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
            // SAFETY: a valid namespace descriptor; only this thread moves.
            let rc = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
            assert_eq!(rc, 0, "setns {path}: {}", std::io::Error::last_os_error());
            f()
        })
        .join()
        .expect("thread in namespace")
    }

    /// Whether something accepts connections on `addr:port` as seen from
    /// namespace `ns`.
    pub fn accepts(ns: &str, addr: &str, port: u16) -> bool {
        let target = format!("{addr}:{port}");
        Self::in_ns(ns, move || {
            TcpStream::connect_timeout(&target.parse().expect("socket address"), Duration::from_millis(200)).is_ok()
        })
    }

    /// Makes agent `i` reach the web server (`SERVER_ADDR:port`) only
    /// through a proxy that holds each chunk of a request `delay` before
    /// passing it on: the agent's namespace gets the server's address on
    /// its loopback, where the proxy listens, and the proxy forwards to
    /// [`SERVER_ADDR_BEHIND_PROXY`]. The server still sees the agent's own
    /// address.
    pub fn delay_to_server(&self, i: usize, port: u16, delay: Duration) -> Result<(), String> {
        let ns = self.agents[i].clone();
        ip(&["-n", &ns, "addr", "add", &format!("{SERVER_ADDR}/32"), "dev", "lo"])?;
        let stop = self.stop.clone();
        let listener =
            Self::in_ns(&ns, move || TcpListener::bind((SERVER_ADDR, port))).map_err(|e| format!("proxy bind: {e}"))?;
        listener.set_nonblocking(true).map_err(|e| e.to_string())?;
        let path = format!("/run/netns/{ns}");
        thread::spawn(move || {
            let Ok(file) = File::open(&path) else { return };
            // SAFETY: as in `in_ns`; the connections this thread's children
            // open to the server must leave from the agent's namespace.
            if unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
                return;
            }
            while !stop.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((client, _)) => {
                        let Ok(server) = TcpStream::connect((SERVER_ADDR_BEHIND_PROXY, port)) else {
                            continue;
                        };
                        let _ = client.set_nonblocking(false);
                        let _ = client.set_nodelay(true);
                        let _ = server.set_nodelay(true);
                        let (c2, s2) = match (client.try_clone(), server.try_clone()) {
                            (Ok(c), Ok(s)) => (c, s),
                            _ => continue,
                        };
                        thread::spawn(move || pump(client, server, delay));
                        thread::spawn(move || pump(s2, c2, Duration::ZERO));
                    }
                    Err(_) => thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        Ok(())
    }
}

/// Copies `from` to `to`, each chunk `delay` late, until either side closes.
fn pump(mut from: TcpStream, mut to: TcpStream, delay: Duration) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if !delay.is_zero() {
                    thread::sleep(delay);
                }
                if to.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
        }
    }
    let _ = to.shutdown(Shutdown::Write);
}

impl Drop for NetLab {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Deleting a namespace removes its veth ends (and so their peers)
        // and its bridge; processes started in it are the test's to kill.
        for ns in self.agents.iter().chain(std::iter::once(&self.server)) {
            let _ = ip(&["netns", "del", ns]);
        }
    }
}

/// A single-process nginx inside namespace `ns`, listening on every
/// address there on `port`, logging each request's client address, status
/// and body bytes (tab-separated).
pub struct NsNginx {
    child: std::process::Child,
    pub dir: tempfile::TempDir,
}

impl NsNginx {
    pub fn start(lab: &NetLab, ns: &str, port: u16, docroot: &std::path::Path) -> NsNginx {
        let dir = tempfile::tempdir().expect("tempdir");
        let d = dir.path();
        for t in ["client_body", "proxy", "fastcgi", "uwsgi", "scgi"] {
            std::fs::create_dir_all(d.join(format!("tmp_{t}"))).expect("nginx temp dir");
        }
        let p = |name: &str| d.join(name).display().to_string();
        let conf = format!(
            "user root;\ndaemon off;\nmaster_process off;\nworker_processes 1;\npid {pid};\n\
             error_log {err} warn;\nevents {{ worker_connections 1024; }}\nhttp {{\n\
             client_body_temp_path {t1};\nproxy_temp_path {t2};\nfastcgi_temp_path {t3};\n\
             uwsgi_temp_path {t4};\nscgi_temp_path {t5};\n\
             log_format bench \"$remote_addr\\t$status\\t$body_bytes_sent\\t$request\";\n\
             access_log {log} bench;\nkeepalive_requests 100000;\n\
             server {{ listen {port}; root {root}; }}\n}}\n",
            pid = p("nginx.pid"),
            err = p("error.log"),
            t1 = p("tmp_client_body"),
            t2 = p("tmp_proxy"),
            t3 = p("tmp_fastcgi"),
            t4 = p("tmp_uwsgi"),
            t5 = p("tmp_scgi"),
            log = p("access.log"),
            root = docroot.display(),
        );
        std::fs::write(d.join("nginx.conf"), conf).expect("nginx.conf");
        let child = lab
            .command(ns, "nginx")
            .arg("-p")
            .arg(d)
            .arg("-c")
            .arg(d.join("nginx.conf"))
            .arg("-e")
            .arg(d.join("error.log"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start nginx in its namespace");
        let ns_owned = ns.to_string();
        for _ in 0..250 {
            if NetLab::accepts(&ns_owned, SERVER_ADDR, port) {
                return NsNginx { child, dir };
            }
            thread::sleep(Duration::from_millis(20));
        }
        panic!(
            "nginx does not listen in {ns}: {}",
            std::fs::read_to_string(d.join("error.log")).unwrap_or_default()
        );
    }

    /// (client address, status, body bytes, request line) per request.
    pub fn log(&self) -> Vec<(String, u16, u64, String)> {
        std::fs::read_to_string(self.dir.path().join("access.log"))
            .unwrap_or_default()
            .lines()
            .map(|l| {
                let f: Vec<&str> = l.split('\t').collect();
                assert_eq!(f.len(), 4, "nginx log line {l:?}");
                (
                    f[0].to_string(),
                    f[1].parse().expect("status"),
                    f[2].parse().expect("body bytes"),
                    f[3].to_string(),
                )
            })
            .collect()
    }
}

impl Drop for NsNginx {
    fn drop(&mut self) {
        // `ip netns exec` execs nginx in place: the child is nginx itself.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
