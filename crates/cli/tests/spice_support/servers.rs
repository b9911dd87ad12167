//! nginx, Apache httpd and lighttpd running the SPICE programs on a loopback
//! high port, configured from `deploy/spice/*.conf.in`, with PHP-FPM and
//! the node SPI's process beside each.
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
    children_of, chmod, command, command_path, fill_template, free_port, install_programs, make_docroot, php_fpm,
    require, spawn_node, wait_for_socket, wait_listening, Proc,
};

/// FastCGI processes per server (`SPICE_FCGI_CHILDREN`, lighttpd's max-procs).
pub const FASTCGI_PROCS: usize = 4;
/// fcgiwrap workers (CGI programs nginx can run at once).
pub const FCGIWRAP_WORKERS: usize = 8;
/// PHP-FPM workers (`pm.max_children`, a static pool).
pub const FPM_PROCS: usize = 4;

/// A server with every SPICE SPI mapped under `/spice/<spi>/`. Dropping it
/// stops the server and every helper process, then removes its files.
pub struct SpiceServer {
    pub name: &'static str,
    pub port: u16,
    pub root: PathBuf,
    pub session_log: PathBuf,
    /// The FastCGI worker processes' ids, where the test started them.
    pub fastcgi_pids: Option<Vec<u32>>,
    /// The PHP-FPM worker processes' ids (None where /proc does not list
    /// children).
    pub php_fpm_pids: Option<Vec<u32>>,
    /// The node SPI's one process, where the test started it.
    pub node_pid: Option<u32>,
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

    /// Empties the session log (counter 0), mode 0666 as `lab up` makes
    /// it: under root the CGI programs behind nginx run as root and PHP-FPM's
    /// workers as www-data, and both write the one log.
    pub fn reset_session_log(&self) {
        fs::write(&self.session_log, b"").unwrap_or_else(|e| panic!("empty {}: {e}", self.session_log.display()));
        chmod(&self.session_log, 0o666);
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

/// Starts PHP-FPM (the php-fpm SPI) in the foreground from
/// `deploy/spice/php-fpm.conf.in` on `run/php-fpm.sock`, a static pool of
/// [`FPM_PROCS`] workers (www-data when the test runs as root); returns it
/// with the workers' ids once all of them run.
fn spawn_php_fpm(d: &Dirs) -> (Proc, Option<Vec<u32>>) {
    let program = php_fpm();
    let conf = fill_template(
        "php-fpm.conf.in",
        &[
            ("DIR", s(&d.run)),
            ("USER", "www-data".to_owned()),
            ("GROUP", "www-data".to_owned()),
            ("FPM_PROCS", FPM_PROCS.to_string()),
        ],
    );
    fs::write(d.run.join("php-fpm.conf"), conf).expect("write php-fpm.conf");
    let mut cmd = command_path(&program);
    cmd.arg("-F").arg("-y").arg(d.run.join("php-fpm.conf"));
    let mut p = Proc::spawn("php-fpm", cmd);
    wait_for_socket(&d.run.join("php-fpm.sock"), "php-fpm");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        if let Some(status) = p.exited() {
            panic!(
                "php-fpm exited at start ({status}); its log:\n{}",
                fs::read_to_string(d.run.join("php-fpm.log")).unwrap_or_default()
            );
        }
        // With setpriv in front, php-fpm is the leader's own process (exec).
        match children_of(p.id()) {
            None => return (p, None),
            Some(kids) if kids.len() == FPM_PROCS => return (p, Some(kids)),
            Some(kids) => assert!(
                std::time::Instant::now() < deadline,
                "PHP-FPM has {} workers, want {FPM_PROCS}",
                kids.len()
            ),
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Starts the node SPI's process on `run/node.sock`.
fn start_node(d: &Dirs) -> Proc {
    let sock = d.run.join("node.sock");
    spawn_node(&d.bin, &s(&sock), &d.www, &d.log.join("session.log"), &|| sock.exists())
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
    let (fpm, php_fpm_pids) = spawn_php_fpm(&d);
    let node = start_node(&d);
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
        php_fpm_pids,
        node_pid: Some(node.id()),
        run: d.run.clone(),
        procs: vec![server, fcgiwrap, fastcgi, fpm, node],
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
    let (fpm, php_fpm_pids) = spawn_php_fpm(&d);
    let node = start_node(&d);
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
        php_fpm_pids,
        node_pid: Some(node.id()),
        run: d.run.clone(),
        procs: vec![server, fastcgi, fpm, node],
        _dir: d.dir,
    }
}

/// lighttpd: mod_cgi for the CGI SPIs; mod_fastcgi spawns the FastCGI
/// processes itself (they die with it: same process group).
pub fn lighttpd() -> SpiceServer {
    require("lighttpd");
    let d = dirs();
    let (fpm, php_fpm_pids) = spawn_php_fpm(&d);
    let node = start_node(&d);
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
        php_fpm_pids,
        node_pid: Some(node.id()),
        run: d.run.clone(),
        procs: vec![server, fpm, node],
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
        php_fpm_pids: None,
        node_pid: None,
        run,
        procs: Vec::new(),
        _dir: dir,
    }
}
