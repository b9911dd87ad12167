//! nginx, Apache httpd and lighttpd running the SPICE programs on a loopback
//! high port, configured from `deploy/spice/*.conf.in`.
//!
//! Layout of each server's temp dir (mode 0755, so that Apache's `www-data`
//! and nginx's `nobody` workers get in when the tests run as root):
//! `www/` the docroot, `bin/` the programs, `run/` configuration, pid,
//! error log and sockets, `log/` (mode 0777) the session log.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use tempfile::TempDir;

use super::{
    children_of, chmod, command, fill_template, free_port, install_programs, make_docroot, require, wait_for_socket,
    wait_listening, Proc,
};

/// FastCGI processes per server (`SPICE_FCGI_CHILDREN`, lighttpd's max-procs).
pub const FASTCGI_PROCS: usize = 4;
/// fcgiwrap workers (CGI programs nginx can run at once).
pub const FCGIWRAP_WORKERS: usize = 8;

/// A server with every SPICE SPI mapped under `/spice/<spi>/`. Dropping it
/// stops the server and every helper process, then removes its files.
pub struct SpiceServer {
    pub name: &'static str,
    pub port: u16,
    pub root: PathBuf,
    pub session_log: PathBuf,
    /// The FastCGI worker processes' ids, where the test started them.
    pub fastcgi_pids: Option<Vec<u32>>,
    run: PathBuf,
    // Dropped in this order: the server, then its helpers (fcgiwrap, the
    // FastCGI processes), then the files.
    procs: Vec<Proc>,
    _dir: TempDir,
}

impl SpiceServer {
    /// The server's error log (for assertion messages).
    pub fn error_log(&self) -> String {
        fs::read_to_string(self.run.join("error.log")).unwrap_or_default()
    }

    /// Removes the session log (the programs create it again, counter 0).
    pub fn reset_session_log(&self) {
        match fs::remove_file(&self.session_log) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => panic!("remove {}: {e}", self.session_log.display()),
        }
    }
}

struct Dirs {
    dir: TempDir,
    www: PathBuf,
    bin: PathBuf,
    run: PathBuf,
    log: PathBuf,
}

fn dirs() -> Dirs {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path().to_owned();
    chmod(&d, 0o755);
    let (www, bin, run, log) = (d.join("www"), d.join("bin"), d.join("run"), d.join("log"));
    make_docroot(&www);
    install_programs(&bin);
    for p in [&run, &log] {
        fs::create_dir_all(p).expect("create dir");
    }
    chmod(&run, 0o755);
    chmod(&log, 0o777);
    Dirs {
        dir,
        www,
        bin,
        run,
        log,
    }
}

fn s(p: &Path) -> String {
    p.display().to_string()
}

/// Starts `bin/fastcgi` under spawn-fcgi in the foreground (`-n`) on
/// `run/fastcgi.sock` (mode 0666), as a supervisor of [`FASTCGI_PROCS`]
/// workers (`SPICE_FCGI_CHILDREN`): one process tree the test stops as a
/// group. Returns it with the workers' ids (None where /proc does not list
/// children).
fn spawn_fastcgi(d: &Dirs) -> (Proc, Option<Vec<u32>>) {
    require("spawn-fcgi");
    let sock = d.run.join("fastcgi.sock");
    let mut cmd = command("spawn-fcgi");
    cmd.arg("-n")
        .arg("-s")
        .arg(&sock)
        .args(["-M", "0666", "--"])
        .arg(d.bin.join("fastcgi"))
        .env("SPICE_FCGI_CHILDREN", FASTCGI_PROCS.to_string());
    let mut p = Proc::spawn("spawn-fcgi", cmd);
    wait_for_socket(&sock, "spawn-fcgi");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        if let Some(status) = p.exited() {
            panic!("the FastCGI program exited at start ({status})");
        }
        match children_of(p.id()) {
            None => return (p, None),
            Some(kids) if kids.len() == FASTCGI_PROCS => return (p, Some(kids)),
            Some(kids) => assert!(
                std::time::Instant::now() < deadline,
                "the FastCGI supervisor has {} workers, want {FASTCGI_PROCS}",
                kids.len()
            ),
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Starts fcgiwrap (for the CGI SPIs under nginx) on `run/fcgiwrap.sock`,
/// with umask 000 so nginx's worker user may connect.
fn spawn_fcgiwrap(d: &Dirs) -> Proc {
    require("fcgiwrap");
    let sock = d.run.join("fcgiwrap.sock");
    let mut cmd = command("sh");
    cmd.arg("-c").arg(format!(
        "umask 000 && exec fcgiwrap -c {FCGIWRAP_WORKERS} -s unix:{}",
        sock.display()
    ));
    let p = Proc::spawn("fcgiwrap", cmd);
    wait_for_socket(&sock, "fcgiwrap");
    p
}

/// Writes the configuration for a fresh port and starts the server, three
/// tries (another process may take a port between its choice and the bind).
fn start_server(name: &'static str, d: &Dirs, mut configure: impl FnMut(u16) -> Command) -> (Proc, u16) {
    let log = || fs::read_to_string(d.run.join("error.log")).unwrap_or_default();
    for _ in 0..3 {
        let port = free_port();
        let mut p = Proc::spawn(name, configure(port));
        if wait_listening(&mut p, port, &log) {
            return (p, port);
        }
    }
    panic!("{name} did not start in three tries; error log:\n{}", log());
}

/// nginx, with fcgiwrap for both CGI SPIs and spawn-fcgi for FastCGI.
pub fn nginx() -> SpiceServer {
    require("nginx");
    let d = dirs();
    let (fastcgi, fastcgi_pids) = spawn_fastcgi(&d);
    let fcgiwrap = spawn_fcgiwrap(&d);
    let session_log = d.log.join("session.log");
    let (server, port) = start_server("nginx", &d, |port| {
        let conf = fill_template(
            "nginx.conf.in",
            &[
                ("PORT", port.to_string()),
                ("ROOT", s(&d.www)),
                ("DIR", s(&d.run)),
                ("BIN", s(&d.bin)),
                ("SESSION_LOG", s(&session_log)),
            ],
        );
        fs::write(d.run.join("nginx.conf"), conf).expect("write nginx.conf");
        let mut cmd = command("nginx");
        cmd.arg("-p")
            .arg(&d.run)
            .arg("-c")
            .arg(d.run.join("nginx.conf"))
            .arg("-e")
            .arg(d.run.join("error.log"));
        cmd
    });
    SpiceServer {
        name: "nginx",
        port,
        root: d.www.clone(),
        session_log,
        fastcgi_pids,
        run: d.run.clone(),
        procs: vec![server, fcgiwrap, fastcgi],
        _dir: d.dir,
    }
}

/// Apache httpd (event MPM): mod_cgid for the CGI SPIs, mod_proxy_fcgi to
/// spawn-fcgi's processes for FastCGI. As root its workers and the CGI
/// programs run as `www-data`.
pub fn apache() -> SpiceServer {
    require("apache2");
    assert!(
        Path::new("/usr/lib/apache2/modules/mod_cgid.so").is_file(),
        "Apache's modules are not in /usr/lib/apache2/modules: install Debian's apache2 (`bash scripts/test.sh`)"
    );
    let d = dirs();
    let (fastcgi, fastcgi_pids) = spawn_fastcgi(&d);
    let session_log = d.log.join("session.log");
    let root = fs::metadata(d.dir.path()).expect("stat tempdir").uid() == 0;
    // Apache refuses to run its workers as root; as another user it ignores
    // User/Group and runs as that user.
    let user = if root { "www-data".to_owned() } else { "#-1".to_owned() };
    let (server, port) = start_server("apache2", &d, |port| {
        let conf = fill_template(
            "apache2.conf.in",
            &[
                ("PORT", port.to_string()),
                ("ROOT", s(&d.www)),
                ("DIR", s(&d.run)),
                ("BIN", s(&d.bin)),
                ("SESSION_LOG", s(&session_log)),
                ("USER", user.clone()),
                ("GROUP", user.clone()),
            ],
        );
        fs::write(d.run.join("apache2.conf"), conf).expect("write apache2.conf");
        let mut cmd = command("apache2");
        cmd.arg("-f").arg(d.run.join("apache2.conf")).arg("-DFOREGROUND");
        cmd
    });
    SpiceServer {
        name: "apache",
        port,
        root: d.www.clone(),
        session_log,
        fastcgi_pids,
        run: d.run.clone(),
        procs: vec![server, fastcgi],
        _dir: d.dir,
    }
}

/// lighttpd: mod_cgi for the CGI SPIs; mod_fastcgi spawns the FastCGI
/// processes itself (they die with it: same process group).
pub fn lighttpd() -> SpiceServer {
    require("lighttpd");
    let d = dirs();
    let session_log = d.log.join("session.log");
    let (server, port) = start_server("lighttpd", &d, |port| {
        let conf = fill_template(
            "lighttpd.conf.in",
            &[
                ("PORT", port.to_string()),
                ("ROOT", s(&d.www)),
                ("DIR", s(&d.run)),
                ("BIN", s(&d.bin)),
                ("SESSION_LOG", s(&session_log)),
                ("FCGI_PROCS", FASTCGI_PROCS.to_string()),
            ],
        );
        fs::write(d.run.join("lighttpd.conf"), conf).expect("write lighttpd.conf");
        let mut cmd = command("lighttpd");
        cmd.arg("-D").arg("-f").arg(d.run.join("lighttpd.conf"));
        cmd
    });
    SpiceServer {
        name: "lighttpd",
        port,
        root: d.www.clone(),
        session_log,
        fastcgi_pids: None,
        run: d.run.clone(),
        procs: vec![server],
        _dir: d.dir,
    }
}

/// A server that `benchlab lab up` started (see `super::lab`): the lab
/// stops its processes, so the test holds none; `dir` holds the docroot.
pub fn from_lab(
    name: &'static str,
    port: u16,
    root: PathBuf,
    session_log: PathBuf,
    run: PathBuf,
    dir: TempDir,
) -> SpiceServer {
    SpiceServer {
        name,
        port,
        root,
        session_log,
        fastcgi_pids: None,
        run,
        procs: Vec::new(),
        _dir: dir,
    }
}
