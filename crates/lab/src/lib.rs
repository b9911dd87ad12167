//! benchlab's test lab: a server under test on this host, set up from a
//! configuration benchlab generates, disclosed, and taken down again.
//!
//! `benchlab lab up SERVER` makes a *state dir* (one per server name, under
//! `$XDG_RUNTIME_DIR/benchlab-lab` or `/tmp/benchlab-lab-UID`) holding
//! everything the server needs and writes: its configuration, the profile
//! it was made from, the SPICE programs (built from the sources compiled
//! into benchlab), a default file set when none is given, pid and logs,
//! sockets and temp files, the session log, and the disclosure (the
//! server's version and its full effective configuration as the server
//! itself prints it). `lab.json` in that dir records what runs; `lab down`
//! reads it, stops every process group the lab started, and removes the
//! dir. Nothing outside the state dir is written: no system service, no
//! port below 1024, nothing under /etc.

pub mod appserver;
pub mod cache;
mod config;
pub mod container;
pub mod process;
pub mod profile;
pub mod shop;

use profile::Profile;
use serde::{Deserialize, Serialize};
use std::fs;
use std::net::{TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

/// The servers the lab can run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ServerKind {
    Nginx,
    ApacheEvent,
    ApachePrefork,
    Lighttpd,
    /// `benchlab serve`, benchlab's reference server.
    Benchlab,
    /// nginx as `Nginx`, on a plain and a TLS port, with the shop
    /// application under gunicorn at `/shop/` (shop.rs, docs/shop.md).
    Shop,
    /// Apache Tomcat 10 standing alone: the servlet and JSP SPIs
    /// (crates/lab/src/container.rs).
    Tomcat,
    /// Eclipse Jetty 9 standing alone: the servlet and JSP SPIs.
    Jetty,
}

impl ServerKind {
    pub const ALL: &'static [ServerKind] = &[
        ServerKind::Nginx,
        ServerKind::ApacheEvent,
        ServerKind::ApachePrefork,
        ServerKind::Lighttpd,
        ServerKind::Benchlab,
    ];

    /// What `lab up` starts: the servers above and the shop (nginx with
    /// an application, not another server to compare).
    pub const LAB: &'static [ServerKind] = &[
        ServerKind::Nginx,
        ServerKind::ApacheEvent,
        ServerKind::ApachePrefork,
        ServerKind::Lighttpd,
        ServerKind::Benchlab,
        ServerKind::Shop,
    ];
    /// Servlet containers: lab servers too, but not among the web servers
    /// `reproduce` compares by default ([`ServerKind::ALL`]).
    pub const CONTAINERS: &'static [ServerKind] = &[ServerKind::Tomcat, ServerKind::Jetty];

    pub fn name(self) -> &'static str {
        match self {
            ServerKind::Nginx => "nginx",
            ServerKind::ApacheEvent => "apache-event",
            ServerKind::ApachePrefork => "apache-prefork",
            ServerKind::Lighttpd => "lighttpd",
            ServerKind::Benchlab => "benchlab",
            ServerKind::Shop => "shop",
            ServerKind::Tomcat => "tomcat",
            ServerKind::Jetty => "jetty",
        }
    }

    pub fn parse(name: &str) -> Result<ServerKind, Error> {
        ServerKind::LAB
            .iter()
            .chain(ServerKind::CONTAINERS)
            .copied()
            .find(|k| k.name() == name)
            .ok_or_else(|| Error::Usage(format!("unknown server {name:?} (expected one of: {})", names())))
    }

    /// The SPIs whose SPICE programs this server runs (docs/spice.md).
    pub fn spis(self) -> &'static [&'static str] {
        match self {
            ServerKind::Benchlab => &["inproc"],
            // lighttpd's mod_ssi takes no variable in #include, so a page
            // cannot name the file its URL asks for: no shtml.
            ServerKind::Lighttpd => &[
                "cgi-c",
                "cgi-script",
                "cgi-perl",
                "fastcgi",
                "php-fpm",
                "node",
                "wsgi",
                "asgi",
            ],
            ServerKind::Tomcat | ServerKind::Jetty => container::SPIS,
            _ => &[
                "cgi-c",
                "cgi-script",
                "cgi-perl",
                "fastcgi",
                "php-fpm",
                "shtml",
                "node",
                "wsgi",
                "asgi",
            ],
        }
    }

    /// The profile settings this server has an equivalent for.
    pub fn settings(self) -> &'static [&'static str] {
        match self {
            // benchlab serve has no switch for keep-alive, sendfile (it
            // decides by file size) or the backlog.
            ServerKind::Benchlab => &["workers", "keepalive_timeout_s", "access_log"],
            // Jetty 9 has no switch for keep-alive itself, its request
            // count or sendfile, nor an access log without another module.
            ServerKind::Jetty => &["workers", "keepalive_timeout_s", "backlog"],
            _ => &[
                "workers",
                "keepalive",
                "keepalive_timeout_s",
                "keepalive_requests",
                "sendfile",
                "access_log",
                "backlog",
            ],
        }
    }

    /// The program that runs it, and the Debian package that has it.
    fn binary(self) -> (&'static str, &'static str) {
        match self {
            ServerKind::Nginx | ServerKind::Shop => ("nginx", "nginx-light (or nginx)"),
            ServerKind::ApacheEvent | ServerKind::ApachePrefork => ("apache2", "apache2"),
            ServerKind::Lighttpd => ("lighttpd", "lighttpd"),
            ServerKind::Benchlab => ("benchlab", "benchlab itself"),
            ServerKind::Tomcat => ("catalina.sh", "tomcat10"),
            ServerKind::Jetty => ("start.jar", "jetty9"),
        }
    }
}

/// The SPICE programs (`/spice/<spi>/<program>/<file path>`) an SPI has:
/// adrot, session and sleep, except `shtml`, whose server-parsed page can
/// only include the file (SSI sets no header, takes no lock and cannot
/// sleep), under the program name `include` (docs/spice.md).
pub fn spi_programs(spi: &str) -> &'static [&'static str] {
    match spi {
        "shtml" => &["include"],
        _ => &["adrot", "session", "sleep"],
    }
}

/// `nginx, apache-event, ...` for messages.
pub fn names() -> String {
    ServerKind::LAB
        .iter()
        .chain(ServerKind::CONTAINERS)
        .map(|k| k.name())
        .collect::<Vec<_>>()
        .join(", ")
}

/// What went wrong, in words a user can act on.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Bad input: a flag, a server name, a CPU list.
    #[error("{0}")]
    Usage(String),
    #[error("{file}:{line}: {message}")]
    Profile { file: String, line: usize, message: String },
    #[error("{program} is not installed; on Debian: apt-get install {package}")]
    Missing { program: String, package: String },
    #[error("port {0} on 127.0.0.1 is busy (another process listens there); pick another with --port, or leave --port out for a free one")]
    PortBusy(u16),
    #[error("{0} is already up (see `benchlab lab status`); `benchlab lab down {0}` first")]
    AlreadyUp(String),
    #[error("{0}")]
    NotUp(String),
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    /// The server or a helper did not start; the message carries its log.
    #[error("{0}")]
    Start(String),
    /// `--cold-cache` could not make the server's cache cold before a mix.
    #[error("cold cache: {0}")]
    Cache(String),
}

impl benchlab_input::Classify for Error {
    fn exit_class(&self) -> benchlab_input::ExitClass {
        if self.is_input_error() {
            benchlab_input::ExitClass::Usage
        } else {
            benchlab_input::ExitClass::CannotRun
        }
    }
}

impl Error {
    /// Whether the user's input is at fault (exit 2 rather than 1).
    pub fn is_input_error(&self) -> bool {
        matches!(self, Error::Usage(_) | Error::Profile { .. })
    }
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> Error {
    let what = what.into();
    move |source| Error::Io { what, source }
}

/// Paths inside one state dir.
#[derive(Debug, Clone)]
pub struct Paths {
    pub state: PathBuf,
    /// Configuration, pid, error and access logs, sockets, temp files.
    pub run: PathBuf,
    /// The SPICE programs.
    pub bin: PathBuf,
    /// The document root (the file set).
    pub root: PathBuf,
    pub session_log: PathBuf,
    /// The servlet container behind the proxy and its port (`--container`).
    pub container_port: Option<(ServerKind, u16)>,
}

impl Paths {
    fn new(state: &Path, root: PathBuf) -> Paths {
        Paths {
            state: state.to_owned(),
            run: state.join("run"),
            bin: state.join("bin"),
            root,
            session_log: state.join("log").join("session.log"),
            container_port: None,
        }
    }
}

/// What runs, as recorded in the state dir's `lab.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LabState {
    pub server: ServerKind,
    pub port: u16,
    /// The target URL (`http://127.0.0.1:PORT/`).
    pub url: String,
    pub state_dir: PathBuf,
    /// The document root served.
    pub root: PathBuf,
    /// The SPIs served under `/spice/<spi>/`.
    pub spis: Vec<String>,
    /// The server's process id (the leader of its process group).
    pub pid: i32,
    /// Every process group the lab started (server and helpers).
    pub process_groups: Vec<i32>,
    /// CPUs the server and its helpers are pinned to (empty: not pinned).
    pub cpus: Vec<usize>,
    /// The disclosure files (version and effective configuration).
    pub disclosure: PathBuf,
    /// The kernel's boot id when the lab started: after a reboot the
    /// recorded process group ids may belong to other programs, so `down`
    /// signals nothing and only removes the state.
    #[serde(default)]
    pub boot_id: String,
}

fn boot_id() -> String {
    fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|s| s.trim().to_owned())
        .unwrap_or_default()
}

/// `lab up`'s options.
#[derive(Debug, Clone, Default)]
pub struct UpOptions {
    pub profile: Option<PathBuf>,
    pub cpus: Option<String>,
    /// None: a free port.
    pub port: Option<u16>,
    /// None: a small default file set made in the state dir.
    pub root: Option<PathBuf>,
    /// None: [`default_base`].
    pub base: Option<PathBuf>,
    /// The listen backlog, over the profile's `backlog` (`lab up --backlog`).
    pub backlog: Option<u32>,
    /// The shop's TLS port (`lab up shop --tls-port`); None: a free one.
    pub tls_port: Option<u16>,
    /// A servlet container behind the server's proxy (`lab up --container`).
    pub container: Option<String>,
}

/// Where state dirs live: `$BENCHLAB_LAB_DIR`, else
/// `$XDG_RUNTIME_DIR/benchlab-lab` for an ordinary user, else
/// `/tmp/benchlab-lab-UID`. Root gets /tmp: `$XDG_RUNTIME_DIR` is 0700, and
/// Apache's and nginx's workers (www-data, nobody) must reach the file set
/// and programs in the state dir.
pub fn default_base() -> PathBuf {
    if let Some(d) = std::env::var_os("BENCHLAB_LAB_DIR") {
        return PathBuf::from(d);
    }
    // SAFETY: geteuid never fails.
    let uid = unsafe { libc::geteuid() };
    match std::env::var_os("XDG_RUNTIME_DIR") {
        Some(d) if uid != 0 && !d.is_empty() => PathBuf::from(d).join("benchlab-lab"),
        _ => PathBuf::from(format!("/tmp/benchlab-lab-{uid}")),
    }
}

/// Where `program` is: on PATH, or in the sbin dirs Debian puts servers in.
fn which(program: &str) -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    dirs.extend(["/usr/sbin", "/sbin", "/usr/bin"].map(PathBuf::from));
    dirs.into_iter().map(|d| d.join(program)).find(|p| p.is_file())
}

fn require(program: &str, package: &str) -> Result<PathBuf, Error> {
    which(program).ok_or_else(|| Error::Missing {
        program: program.to_owned(),
        package: package.to_owned(),
    })
}

fn chmod(path: &Path, mode: u32) -> Result<(), Error> {
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).map_err(io(format!("chmod {}", path.display())))
}

/// FastCGI processes per server.
const FASTCGI_PROCS: usize = 4;
/// fcgiwrap workers (CGI programs nginx runs at once).
const FCGIWRAP_WORKERS: usize = 8;
/// PHP-FPM workers per server (a static pool).
const FPM_PROCS: usize = 4;

/// PHP-FPM's program: `php-fpm`, or Debian's versioned `php-fpmX.Y` in
/// /usr/sbin (the newest when several are installed); `None` when there
/// is none.
pub fn php_fpm_path() -> Option<PathBuf> {
    if let Some(p) = which("php-fpm") {
        return Some(p);
    }
    let mut found: Vec<PathBuf> = fs::read_dir("/usr/sbin")
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with("php-fpm"))
                })
                .collect()
        })
        .unwrap_or_default();
    found.sort();
    found.pop()
}

/// [`php_fpm_path`], or the error naming the Debian package.
fn php_fpm_program() -> Result<PathBuf, Error> {
    php_fpm_path().ok_or_else(|| Error::Missing {
        program: "php-fpm (for the php-fpm SPI)".into(),
        package: "php-fpm".into(),
    })
}

/// The SPICE programs' sources, compiled into benchlab so that `lab up`
/// works from an installed binary, away from the checkout.
const SPICE_SOURCES: &[(&str, &str)] = &[
    ("spice.h", include_str!("../../../spice/src/spice.h")),
    ("spice.c", include_str!("../../../spice/src/spice.c")),
    ("cgi.c", include_str!("../../../spice/src/cgi.c")),
    ("fastcgi.c", include_str!("../../../spice/src/fastcgi.c")),
];
const SPICE_PY: &str = include_str!("../../../spice/cgi-script/spice.py");
const SPICE_PL: &str = include_str!("../../../spice/cgi-perl/spice.pl");
const SPICE_PHP: &str = include_str!("../../../spice/php/spice.php");
const SPICE_SHTML: &str = include_str!("../../../spice/shtml/spice.shtml");
const SPICE_JS: &str = include_str!("../../../spice/node/spice.js");

/// Builds `cgi-c` and `fastcgi` with gcc into `bin`, and installs
/// `spice.py` and `spice.pl` there (all 0755), and `spice.php`,
/// `spice.shtml` and `spice.js` (0644).
fn build_spice(state: &Path, bin: &Path) -> Result<(), Error> {
    let gcc = require("gcc", "gcc")?;
    require("python3", "python3")?;
    require("perl", "perl")?;
    if !Path::new("/usr/include/fcgiapp.h").is_file() {
        return Err(Error::Missing {
            program: "libfcgi's headers (/usr/include/fcgiapp.h)".into(),
            package: "libfcgi-dev".into(),
        });
    }
    let src = state.join("src");
    fs::create_dir_all(&src).map_err(io(format!("create {}", src.display())))?;
    for (name, text) in SPICE_SOURCES {
        fs::write(src.join(name), text).map_err(io(format!("write {}", src.join(name).display())))?;
    }
    for (out, main, libs) in [("cgi-c", "cgi.c", &[][..]), ("fastcgi", "fastcgi.c", &["-lfcgi"][..])] {
        let res = Command::new(&gcc)
            .args(["-O2", "-o"])
            .arg(bin.join(out))
            .arg(src.join(main))
            .arg(src.join("spice.c"))
            .args(libs)
            .output()
            .map_err(io("run gcc"))?;
        if !res.status.success() {
            return Err(Error::Start(format!(
                "building the SPICE program {out} failed ({}):\n{}",
                res.status,
                String::from_utf8_lossy(&res.stderr)
            )));
        }
        chmod(&bin.join(out), 0o755)?;
    }
    for (name, text) in [("spice.py", SPICE_PY), ("spice.pl", SPICE_PL)] {
        fs::write(bin.join(name), text).map_err(io(format!("write {name}")))?;
        chmod(&bin.join(name), 0o755)?;
    }
    // Read by PHP-FPM's workers, the SSI parsers and node, not run.
    for (name, text) in [
        ("spice.php", SPICE_PHP),
        ("spice.shtml", SPICE_SHTML),
        ("spice.js", SPICE_JS),
    ] {
        fs::write(bin.join(name), text).map_err(io(format!("write {name}")))?;
        chmod(&bin.join(name), 0o644)?;
    }
    Ok(())
}

/// The default file set: 24 pages of 4,096 bytes (`custom`), made in
/// milliseconds, with its manifest (sizes, checksums) at its root.
fn make_default_fileset(root: &Path) -> Result<(), Error> {
    let spec = benchlab_fileset::Spec::new(benchlab_fileset::Kind::Custom { count: 24, size: 4096 }, 1)
        .map_err(|e| Error::Usage(e.to_string()))?;
    benchlab_fileset::generate(&spec, root, &mut |_, _| {})
        .map_err(|e| Error::Start(format!("making the default file set: {e}")))?;
    // World-readable for the servers' workers whatever the umask.
    let mut stack = vec![root.to_owned()];
    while let Some(d) = stack.pop() {
        chmod(&d, 0o755)?;
        for e in fs::read_dir(&d).map_err(io(format!("read {}", d.display())))?.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                chmod(&p, 0o644)?;
            }
        }
    }
    Ok(())
}

/// Under root, nginx's workers run as nobody and Apache's as www-data: a
/// root they cannot reach would answer every request 403. Says so up front.
fn check_world_readable(root: &Path) -> Result<(), Error> {
    let root = fs::canonicalize(root).map_err(io(format!("--root {}", root.display())))?;
    for dir in root.ancestors() {
        let mode = fs::metadata(dir)
            .map_err(io(format!("--root: stat {}", dir.display())))?
            .permissions()
            .mode();
        let need = if dir == root { 0o005 } else { 0o001 };
        if mode & need != need {
            return Err(Error::Usage(format!(
                "--root {}: {} (mode {:o}) is closed to other users, and the server's workers \
                 (nobody, www-data) could not read the files; chmod o+rx it or serve another directory",
                root.display(),
                dir.display(),
                mode & 0o7777
            )));
        }
    }
    Ok(())
}

fn free_port() -> Result<u16, Error> {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(io("find a free port on 127.0.0.1"))
}

/// Processes started so far; stopped when `up` fails half-way.
struct Started {
    groups: Vec<i32>,
    armed: bool,
}

impl Drop for Started {
    fn drop(&mut self) {
        if self.armed {
            process::stop_groups(&self.groups, Duration::from_secs(5));
        }
    }
}

fn tail(path: &Path) -> String {
    let s = fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}

/// Waits until `ready()` or the child exits or 20 s pass.
fn wait_ready(child: &mut Child, what: &str, log: &Path, ready: &dyn Fn() -> bool) -> Result<(), Error> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(Error::Start(format!(
                "{what} exited at start ({status}); its output:\n{}",
                tail(log)
            )));
        }
        if ready() {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(Error::Start(format!(
                "{what} did not get ready within 20 s; its output:\n{}",
                tail(log)
            )));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Starts `kind` as `lab up` does and records it; returns what runs.
pub fn up(kind: ServerKind, opts: &UpOptions) -> Result<LabState, Error> {
    let (program, package) = kind.binary();
    let server_bin = match kind {
        ServerKind::Benchlab => std::env::current_exe().map_err(io("find benchlab's own executable"))?,
        ServerKind::Tomcat | ServerKind::Jetty => container::launcher(kind)?,
        _ => require(program, package)?,
    };
    if matches!(kind, ServerKind::ApacheEvent | ServerKind::ApachePrefork)
        && !Path::new("/usr/lib/apache2/modules/mod_mpm_event.so").is_file()
    {
        return Err(Error::Missing {
            program: "Apache's modules (/usr/lib/apache2/modules)".into(),
            package: "apache2".into(),
        });
    }
    let mut profile = match &opts.profile {
        Some(p) => Profile::read(p, kind)?,
        None => Profile::default_for(kind),
    };
    if let Some(b) = opts.backlog {
        if !kind.settings().contains(&"backlog") {
            return Err(Error::Usage(format!(
                "--backlog: {} has no listen backlog setting (its settings: {})",
                kind.name(),
                kind.settings().join(", ")
            )));
        }
        if !(1..=65_535).contains(&b) {
            return Err(Error::Usage(format!("--backlog {b}: expected 1 to 65535")));
        }
        profile.backlog = Some(b);
    }
    if let Some(c) = &opts.container {
        container::check_proxy(kind, c)?;
    }
    let cpus = match &opts.cpus {
        Some(list) => process::parse_cpus(list)?,
        None => Vec::new(),
    };
    if let Some(root) = &opts.root {
        if !root.is_dir() {
            return Err(Error::Usage(format!("--root {}: not a directory", root.display())));
        }
    }
    // SAFETY: geteuid never fails.
    if unsafe { libc::geteuid() } == 0
        && matches!(
            kind,
            ServerKind::Nginx | ServerKind::ApacheEvent | ServerKind::ApachePrefork | ServerKind::Shop
        )
    {
        if let Some(root) = &opts.root {
            check_world_readable(root)?;
        }
    }
    let port = match opts.port {
        Some(p) if p < 1024 => {
            return Err(Error::Usage(format!(
                "--port {p}: the lab uses ports from 1024 up only (it never takes a system service's port)"
            )))
        }
        Some(p) => {
            TcpListener::bind(("127.0.0.1", p)).map_err(|_| Error::PortBusy(p))?;
            p
        }
        None => free_port()?,
    };
    let tls_port = match (kind, opts.tls_port) {
        (ServerKind::Shop, Some(p)) if p < 1024 || p == port => {
            return Err(Error::Usage(format!(
                "--tls-port {p}: expected a port from 1024 up, other than the plain port {port}"
            )))
        }
        (ServerKind::Shop, Some(p)) => {
            TcpListener::bind(("127.0.0.1", p)).map_err(|_| Error::PortBusy(p))?;
            p
        }
        (ServerKind::Shop, None) => loop {
            let p = free_port()?;
            if p != port {
                break p;
            }
        },
        (_, Some(_)) => {
            return Err(Error::Usage(format!(
                "--tls-port: only `lab up shop` serves TLS; {} has no TLS port",
                kind.name()
            )))
        }
        (_, None) => 0,
    };

    let base = opts.base.clone().unwrap_or_else(default_base);
    fs::create_dir_all(&base).map_err(io(format!("create {}", base.display())))?;
    chmod(&base, 0o755)?;
    let state = base.join(kind.name());
    if state.join("lab.json").is_file() {
        return Err(Error::AlreadyUp(kind.name().into()));
    }
    // A dir without lab.json is what a crashed `up` left: start afresh.
    let _ = fs::remove_dir_all(&state);
    fs::create_dir_all(&state).map_err(io(format!("create {}", state.display())))?;
    let result = start(kind, &server_bin, &state, (port, tls_port), &profile, &cpus, opts);
    if result.is_err() {
        let _ = fs::remove_dir_all(&state);
    }
    result
}

fn start(
    kind: ServerKind,
    server_bin: &Path,
    state: &Path,
    (port, tls_port): (u16, u16),
    profile: &Profile,
    cpus: &[usize],
    opts: &UpOptions,
) -> Result<LabState, Error> {
    let root = match &opts.root {
        Some(r) => fs::canonicalize(r).map_err(io(format!("--root {}", r.display())))?,
        None => {
            let r = state.join("www");
            make_default_fileset(&r)?;
            r
        }
    };
    let mut p = Paths::new(state, root);
    chmod(state, 0o755)?;
    for d in [&p.run, &p.bin, &state.join("log")] {
        fs::create_dir_all(d).map_err(io(format!("create {}", d.display())))?;
        chmod(d, 0o755)?;
    }
    // Apache's CGI programs run as www-data and write the session log.
    chmod(&state.join("log"), 0o777)?;
    // Made here, 0666: under root the CGI programs behind nginx run as root
    // and PHP-FPM's workers as www-data, and all of them write this one log
    // (an empty log is counter 0).
    fs::write(&p.session_log, b"").map_err(io(format!("create {}", p.session_log.display())))?;
    chmod(&p.session_log, 0o666)?;
    for t in ["client_body", "proxy", "fastcgi", "uwsgi", "scgi"] {
        fs::create_dir_all(p.run.join(format!("tmp_{t}"))).map_err(io("create temp dir"))?;
    }
    fs::write(state.join("profile.toml"), profile.to_toml(kind)).map_err(io("write profile.toml"))?;
    let pin = (!cpus.is_empty()).then_some(cpus);
    let mut started = Started {
        groups: Vec::new(),
        armed: true,
    };
    let spawn = |started: &mut Started, cmd: Command, what: &str, log: &Path| -> Result<Child, Error> {
        let child = process::spawn(cmd, log, pin).map_err(io(format!("start {what}")))?;
        started.groups.push(child.id() as i32);
        Ok(child)
    };
    let helper_log = p.run.join("helpers.log");
    let server_log = p.run.join("server.log");
    let wait_sock = |sock: PathBuf| move || sock.exists();

    if !matches!(kind, ServerKind::Benchlab | ServerKind::Tomcat | ServerKind::Jetty) {
        build_spice(state, &p.bin)?;
    }
    // The FastCGI program under spawn-fcgi (nginx, Apache; lighttpd spawns
    // its own), and fcgiwrap for nginx's CGI.
    if matches!(
        kind,
        ServerKind::Nginx | ServerKind::ApacheEvent | ServerKind::ApachePrefork | ServerKind::Shop
    ) {
        let spawn_fcgi = require("spawn-fcgi", "spawn-fcgi")?;
        let sock = p.run.join("fastcgi.sock");
        let mut cmd = Command::new(spawn_fcgi);
        cmd.arg("-n")
            .arg("-s")
            .arg(&sock)
            .args(["-M", "0666", "--"])
            .arg(p.bin.join("fastcgi"))
            .env("SPICE_FCGI_CHILDREN", FASTCGI_PROCS.to_string());
        let mut child = spawn(&mut started, cmd, "spawn-fcgi", &helper_log)?;
        wait_ready(
            &mut child,
            "spawn-fcgi (the FastCGI SPICE program)",
            &helper_log,
            &wait_sock(sock),
        )?;
    }
    if matches!(kind, ServerKind::Nginx | ServerKind::Shop) {
        let fcgiwrap = require("fcgiwrap", "fcgiwrap")?;
        let sock = p.run.join("fcgiwrap.sock");
        // umask 000: nginx's workers (nobody, under root) must connect.
        let mut cmd = Command::new("sh");
        cmd.arg("-c").arg(format!(
            "umask 000 && exec {} -c {FCGIWRAP_WORKERS} -s unix:{}",
            fcgiwrap.display(),
            sock.display()
        ));
        let mut child = spawn(&mut started, cmd, "fcgiwrap", &helper_log)?;
        wait_ready(&mut child, "fcgiwrap", &helper_log, &wait_sock(sock))?;
    }
    // The application servers (gunicorn, uvicorn) the proxy SPIs reach.
    if kind.spis().iter().any(|s| appserver::SPIS.contains(s)) {
        for app in appserver::prepare(&p)? {
            let mut child = spawn(&mut started, app.command, app.what, &helper_log)?;
            wait_ready(&mut child, app.what, &helper_log, &wait_sock(app.socket.clone()))?;
            // The web server's workers (nobody, www-data under root) connect.
            chmod(&app.socket, 0o666)?;
        }
    }
    // The servlet container behind the proxy (`--container tomcat`).
    if let Some(name) = &opts.container {
        let c = container::parse(name)?;
        let tport = free_port()?;
        let launcher = container::launcher(c)?;
        let (conf_name, text) = container::config(c, &p, tport, &Profile::default_for(c));
        let conf = p.run.join(conf_name);
        let cmd = container::prepare(c, &p, &launcher, &conf)?;
        fs::write(&conf, text).map_err(io(format!("write {}", conf.display())))?;
        let mut child = spawn(&mut started, cmd, c.name(), &helper_log)?;
        let listening = move || TcpStream::connect(("127.0.0.1", tport)).is_ok();
        let what = format!("{} (behind the proxy)", c.name());
        wait_ready(&mut child, &what, &helper_log, &listening)?;
        p.container_port = Some((c, tport));
    }
    // The shop's application under gunicorn, ready before nginx proxies to it.
    let shop = match kind {
        ServerKind::Shop => {
            let mut shop = shop::prepare(&p, tls_port)?;
            if let Some(cmd) = shop.command() {
                let mut child = spawn(&mut started, cmd, "gunicorn", &helper_log)?;
                wait_ready(
                    &mut child,
                    "gunicorn (the shop)",
                    &helper_log,
                    &wait_sock(shop.state.socket.clone()),
                )?;
            }
            Some(shop)
        }
        _ => None,
    };
    // SAFETY: geteuid never fails.
    let as_root = unsafe { libc::geteuid() } == 0;
    // PHP-FPM (the php-fpm SPI) beside every server that has the SPI.
    if kind.spis().contains(&"php-fpm") {
        let fpm = php_fpm_program()?;
        let conf = p.run.join("php-fpm.conf");
        fs::write(&conf, config::php_fpm(&p, "www-data", FPM_PROCS)).map_err(io("write php-fpm.conf"))?;
        let sock = p.run.join("php-fpm.sock");
        let mut cmd = Command::new(fpm);
        cmd.arg("-F").arg("-y").arg(&conf);
        let mut child = spawn(&mut started, cmd, "php-fpm", &helper_log)?;
        wait_ready(&mut child, "php-fpm (the php-fpm SPI)", &helper_log, &wait_sock(sock))?;
    }
    // Node.js (the node SPI): one process, an HTTP server on a unix socket
    // the server proxies to. `env` hands it SPICE_ROOT and
    // SPICE_SESSION_LOG (process::spawn clears them for every other helper).
    if kind.spis().contains(&"node") {
        let node = require("node", "nodejs")?;
        require("perl", "perl")?;
        let sock = p.run.join("node.sock");
        let mut cmd = Command::new("env");
        cmd.arg(format!("SPICE_ROOT={}", p.root.display()))
            .arg(format!("SPICE_SESSION_LOG={}", p.session_log.display()))
            .arg(node)
            .arg(p.bin.join("spice.js"))
            .arg(&sock);
        let mut child = spawn(&mut started, cmd, "node", &helper_log)?;
        wait_ready(&mut child, "node (the node SPI)", &helper_log, &wait_sock(sock))?;
    }
    let mut port = port;
    let mut attempt = 0;
    let (port, conf_path, pid) = loop {
        attempt += 1;
        let (conf_name, conf, mut cmd) = match kind {
            ServerKind::Nginx | ServerKind::Shop => {
                let conf = p.run.join("nginx.conf");
                let mut cmd = Command::new(server_bin);
                cmd.arg("-p")
                    .arg(&p.run)
                    .arg("-c")
                    .arg(&conf)
                    .arg("-e")
                    .arg(p.run.join("error.log"));
                let text = config::nginx(&p, port, profile);
                let text = match &shop {
                    Some(shop) => shop.nginx_conf(&text, port)?,
                    None => text,
                };
                ("nginx.conf", text, cmd)
            }
            ServerKind::Lighttpd => {
                let mut cmd = Command::new(server_bin);
                cmd.arg("-D").arg("-f").arg(p.run.join("lighttpd.conf"));
                ("lighttpd.conf", config::lighttpd(&p, port, profile, FASTCGI_PROCS), cmd)
            }
            ServerKind::ApacheEvent | ServerKind::ApachePrefork => {
                // Apache refuses to run workers as root; started by another
                // user it ignores User and runs as that user.
                let user = if as_root { "www-data" } else { "#-1" };
                let mut cmd = Command::new(server_bin);
                cmd.arg("-f").arg(p.run.join("apache2.conf")).arg("-DFOREGROUND");
                let prefork = kind == ServerKind::ApachePrefork;
                ("apache2.conf", config::apache(&p, port, profile, prefork, user), cmd)
            }
            ServerKind::Benchlab => {
                let mut cmd = Command::new(server_bin);
                cmd.arg("serve")
                    .arg("--root")
                    .arg(&p.root)
                    .arg("--listen")
                    .arg(format!("127.0.0.1:{port}"))
                    .arg("--session-log")
                    .arg(&p.session_log)
                    .arg("--keepalive-timeout")
                    .arg(format!("{}s", profile.keepalive_timeout_s.unwrap_or(75)));
                if let Some(w) = profile.workers.filter(|&w| w > 0) {
                    cmd.arg("--workers").arg(w.to_string());
                }
                if profile.access_log == Some(true) {
                    cmd.arg("--access-log").arg(p.run.join("access.log"));
                }
                let line = format!("{cmd:?}\n");
                ("command.txt", line, cmd)
            }
            ServerKind::Tomcat | ServerKind::Jetty => {
                let (conf_name, text) = container::config(kind, &p, port, profile);
                let cmd = container::prepare(kind, &p, server_bin, &p.run.join(conf_name))?;
                (conf_name, text, cmd)
            }
        };
        let conf_path = p.run.join(conf_name);
        fs::write(&conf_path, &conf).map_err(io(format!("write {}", conf_path.display())))?;
        cmd.current_dir(&p.run);
        let mut server = spawn(&mut started, cmd, kind.name(), &server_log)?;
        let pid = server.id() as i32;
        let error_log = if matches!(kind, ServerKind::Benchlab | ServerKind::Tomcat | ServerKind::Jetty) {
            server_log.clone()
        } else {
            p.run.join("error.log")
        };
        let listening = || TcpStream::connect(("127.0.0.1", port)).is_ok();
        match wait_ready(&mut server, kind.name(), &server_log, &listening) {
            Ok(()) => break (port, conf_path, pid),
            Err(e) => {
                let exited = matches!(server.try_wait(), Ok(Some(_)));
                process::stop_groups(&[pid], Duration::from_secs(2));
                started.groups.retain(|&g| g != pid);
                // Without --port, another process may have taken the free port
                // before the server bound it: try a fresh one, twice.
                if exited && opts.port.is_none() && attempt < 3 {
                    port = free_port()?;
                    continue;
                }
                if opts.port.is_some() && TcpListener::bind(("127.0.0.1", port)).is_err() {
                    return Err(Error::PortBusy(port));
                }
                // The state dir goes with the failure: quote the log, not its path.
                return Err(Error::Start(format!("{e}\nits error log:\n{}", tail(&error_log))));
            }
        }
    };
    let url = format!("http://127.0.0.1:{port}/");
    if let Some(shop) = &shop {
        shop.record(state)?;
    }
    let disclosure = disclose(kind, server_bin, &p, &conf_path, profile, cpus, &url)?;
    let lab = LabState {
        server: kind,
        port,
        url,
        state_dir: state.to_owned(),
        root: p.root.clone(),
        spis: kind
            .spis()
            .iter()
            .chain(if p.container_port.is_some() {
                container::SPIS
            } else {
                &[]
            })
            .map(|s| (*s).to_owned())
            .collect(),
        pid,
        process_groups: started.groups.clone(),
        cpus: cpus.to_vec(),
        disclosure,
        boot_id: boot_id(),
    };
    let json = serde_json::to_string_pretty(&lab).map_err(|e| Error::Start(e.to_string()))?;
    fs::write(state.join("lab.json"), json + "\n").map_err(io("write lab.json"))?;
    started.armed = false;
    Ok(lab)
}

/// The URL path of one page of the file set at `root` that a server
/// answers 200 for, to show the user (the root URL itself answers 403 or
/// 404 on a file set without an `index.html`): the manifest's first entry
/// that is a file, else the first file of the tree in name order (a tree
/// without a manifest), skipping the manifest itself. Only a bounded part
/// of either is read: a million-file set costs no more than a small one.
pub fn sample_page(root: &Path) -> Option<String> {
    use std::io::{BufRead, Read};
    let is_page = |url: &str| {
        url.starts_with('/')
            && url.len() > 1
            && url.bytes().all(|b| b.is_ascii_graphic() && !b"%?#\\\"".contains(&b))
            && root.join(url.trim_start_matches('/')).is_file()
    };
    if let Ok(f) = fs::File::open(root.join("manifest")) {
        let head = std::io::BufReader::new(f.take(64 * 1024));
        let first = head
            .lines()
            .map_while(Result::ok)
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| l.split('\t').next().map(str::to_owned))
            .take(100)
            .find(|url| is_page(url));
        if first.is_some() {
            return first;
        }
    }
    // Depth first, names sorted, at most 1,000 directory entries looked at.
    let mut budget = 1000usize;
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        let mut names: Vec<_> = fs::read_dir(root.join(&rel))
            .ok()?
            .flatten()
            .map(|e| e.file_name())
            .collect();
        budget = budget.checked_sub(names.len())?;
        names.sort();
        let mut dirs = Vec::new();
        for name in names {
            let child = rel.join(&name);
            let url = format!("/{}", child.to_string_lossy());
            if rel.as_os_str().is_empty() && name == "manifest" {
                continue;
            }
            if is_page(&url) {
                return Some(url);
            }
            if root.join(&child).is_dir() {
                dirs.push(child);
            }
        }
        stack.extend(dirs.into_iter().rev());
    }
    None
}

/// Runs `cmd` and returns what it printed (stdout then stderr), or why not.
fn capture(mut cmd: Command) -> String {
    match cmd.output() {
        Ok(o) => {
            let mut s = String::from_utf8_lossy(&o.stdout).into_owned();
            s.push_str(&String::from_utf8_lossy(&o.stderr));
            if !o.status.success() {
                s.push_str(&format!("\n(exit status {})\n", o.status));
            }
            s
        }
        Err(e) => format!("(could not run {cmd:?}: {e})\n"),
    }
}

/// Writes `disclosure.txt` and `disclosure.json` into the state dir: the
/// server's version, its full effective configuration as the server prints
/// it, the profile and the CPU set. Returns the JSON file's path.
fn disclose(
    kind: ServerKind,
    bin: &Path,
    p: &Paths,
    conf: &Path,
    profile: &Profile,
    cpus: &[usize],
    url: &str,
) -> Result<PathBuf, Error> {
    let cmd = |args: &[&std::ffi::OsStr]| {
        let mut c = Command::new(bin);
        c.args(args);
        c
    };
    let (version, effective): (String, Vec<(String, String)>) = match kind {
        ServerKind::Nginx | ServerKind::Shop => (
            capture(cmd(&["-v".as_ref()])),
            vec![(
                "nginx -T".into(),
                capture(cmd(&[
                    "-T".as_ref(),
                    "-p".as_ref(),
                    p.run.as_os_str(),
                    "-c".as_ref(),
                    conf.as_os_str(),
                    "-e".as_ref(),
                    p.run.join("error.log").as_os_str(),
                ])),
            )],
        ),
        ServerKind::ApacheEvent | ServerKind::ApachePrefork => (
            capture(cmd(&["-v".as_ref()])),
            vec![
                (
                    "apache2 -S".into(),
                    capture(cmd(&["-f".as_ref(), conf.as_os_str(), "-S".as_ref()])),
                ),
                (
                    "apache2 -M".into(),
                    capture(cmd(&["-f".as_ref(), conf.as_os_str(), "-M".as_ref()])),
                ),
                (
                    "configuration file".into(),
                    fs::read_to_string(conf).unwrap_or_default(),
                ),
            ],
        ),
        ServerKind::Lighttpd => (
            capture(cmd(&["-v".as_ref()])),
            vec![(
                "lighttpd -p".into(),
                capture(cmd(&["-p".as_ref(), "-f".as_ref(), conf.as_os_str()])),
            )],
        ),
        ServerKind::Benchlab => (
            capture(cmd(&["--version".as_ref()])),
            vec![("command".into(), fs::read_to_string(conf).unwrap_or_default())],
        ),
        ServerKind::Tomcat | ServerKind::Jetty => (
            container::version(kind, bin),
            vec![
                (
                    conf.file_name().unwrap_or_default().to_string_lossy().into_owned(),
                    fs::read_to_string(conf).unwrap_or_default(),
                ),
                ("spice web.xml".into(), container::web_xml().to_owned()),
            ],
        ),
    };
    let mut effective = effective;
    effective.extend(application_servers(kind, p));
    if kind == ServerKind::Shop {
        effective.push(("gunicorn".into(), shop::disclosed(&p.state)));
    }
    if kind.spis().iter().any(|s| appserver::SPIS.contains(s)) {
        effective.push(("application servers".into(), appserver::disclosure()));
    }
    if let Some((c, port)) = p.container_port {
        let (conf_name, _) = container::config(c, p, port, &Profile::default_for(c));
        let text = fs::read_to_string(p.run.join(conf_name)).unwrap_or_default();
        let version = container::launcher(c)
            .map(|l| container::version(c, &l))
            .unwrap_or_default();
        effective.push((format!("{} behind the proxy", c.name()), format!("{version}\n\n{text}")));
    }
    let profile_text = profile.to_toml(kind);
    let listen_backlog = profile
        .backlog
        .map(|b| benchlab_results::ListenBacklog::new(b, somaxconn()));
    let mut txt = format!(
        "server: {}\nversion: {}\ncpus: {}\n{}\n== profile ==\n{profile_text}\n",
        kind.name(),
        version.trim(),
        if cpus.is_empty() {
            "not pinned".to_owned()
        } else {
            cpus.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(",")
        },
        listen_backlog.map_or(String::new(), |b| format!("listen backlog: {}\n", b.text()))
    );
    for (what, text) in &effective {
        txt.push_str(&format!("\n== {what} ==\n{text}\n"));
    }
    let host = benchlab_results::HostFacts::gather();
    txt.push_str("\n== host ==\n");
    for (k, v) in &host.kernel_tunables {
        txt.push_str(&format!("{k}: {v}\n"));
    }
    txt.push_str(&format!(
        "kernel: {}\ncpu_model: {}\ncpus_online: {}\nmemory_bytes: {}\n",
        host.kernel, host.cpu_model, host.cpus_online, host.memory_bytes
    ));
    fs::write(p.state.join("disclosure.txt"), txt).map_err(io("write disclosure.txt"))?;
    let disclosure = Disclosure {
        server: benchlab_results::ServerDisclosure {
            server: kind.name().to_owned(),
            version: version.trim().to_owned(),
            url: url.to_owned(),
            cpus: cpus.to_vec(),
            profile: profile_text,
            effective_configuration: effective
                .into_iter()
                .map(|(source, text)| benchlab_results::EffectiveConfiguration { source, text })
                .collect(),
            listen_backlog,
        },
        host,
    };
    let path = p.state.join("disclosure.json");
    fs::write(
        &path,
        serde_json::to_string_pretty(&disclosure).unwrap_or_default() + "\n",
    )
    .map_err(io("write disclosure.json"))?;
    Ok(path)
}

/// The application servers the SPIs run in, disclosed beside the server:
/// each one's version and the configuration the lab gave it.
fn application_servers(kind: ServerKind, p: &Paths) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let has = |spi: &str| kind.spis().contains(&spi);
    if !has("php-fpm") && !has("node") {
        return out;
    }
    if let Some(fpm) = php_fpm_program().ok().filter(|_| has("php-fpm")) {
        let mut c = Command::new(fpm);
        c.arg("-v");
        out.push(("php-fpm -v".into(), capture(c)));
        out.push((
            "php-fpm.conf".into(),
            fs::read_to_string(p.run.join("php-fpm.conf")).unwrap_or_default(),
        ));
    }
    if let Some(node) = which("node").filter(|_| has("node")) {
        let mut c = Command::new(node);
        c.arg("--version");
        out.push(("node --version".into(), capture(c)));
        out.push((
            "node".into(),
            format!(
                "one process: node {} {} (HTTP server; SPICE_ROOT={}, SPICE_SESSION_LOG={})\n",
                p.bin.join("spice.js").display(),
                p.run.join("node.sock").display(),
                p.root.display(),
                p.session_log.display()
            ),
        ));
    }
    out
}

/// `net.core.somaxconn`, which caps every listen(2) backlog.
fn somaxconn() -> Option<u32> {
    fs::read_to_string("/proc/sys/net/core/somaxconn")
        .ok()
        .and_then(|s| s.trim().parse().ok())
}

/// `disclosure.json`: the server as disclosed, and the host's facts when it
/// started.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Disclosure {
    #[serde(flatten)]
    pub server: benchlab_results::ServerDisclosure,
    pub host: benchlab_results::HostFacts,
}

impl LabState {
    /// Reads this lab's `disclosure.json`.
    pub fn read_disclosure(&self) -> Result<Disclosure, Error> {
        let text = fs::read_to_string(&self.disclosure).map_err(io(format!("read {}", self.disclosure.display())))?;
        serde_json::from_str(&text).map_err(|e| Error::Start(format!("{}: {e}", self.disclosure.display())))
    }

    /// Whether `target` (a base URL, or a URL of a page) names this lab's
    /// server: the same scheme, host and port, a trailing slash or not.
    pub fn serves(&self, target: &str) -> bool {
        let norm = |u: &str| u.trim_end_matches('/').replace("://localhost:", "://127.0.0.1:");
        let (target, base) = (norm(target), norm(&self.url));
        target == base || target.starts_with(&format!("{base}/"))
    }
}

/// The labs recorded under `base`, with whether each server still runs.
pub fn status(base: &Path) -> Vec<(LabState, bool)> {
    let mut out = Vec::new();
    for kind in ServerKind::LAB.iter().chain(ServerKind::CONTAINERS) {
        let file = base.join(kind.name()).join("lab.json");
        let Ok(text) = fs::read_to_string(&file) else {
            continue;
        };
        if let Ok(lab) = serde_json::from_str::<LabState>(&text) {
            let alive = lab.boot_id == boot_id() && process::alive(lab.pid);
            out.push((lab, alive));
        }
    }
    out
}

/// Stops a lab: every process group it started (SIGTERM, then SIGKILL
/// after `grace`), then removes its state dir. Errors when a process
/// survived SIGKILL (the state dir is then kept, so nothing is lost).
pub fn down(lab: &LabState, grace: Duration) -> Result<(), Error> {
    let groups: &[i32] = if lab.boot_id == boot_id() {
        &lab.process_groups
    } else {
        &[]
    };
    let left = process::stop_groups(groups, grace);
    if !left.is_empty() {
        return Err(Error::Start(format!(
            "{}: processes {left:?} survived SIGKILL; state kept in {}",
            lab.server.name(),
            lab.state_dir.display()
        )));
    }
    fs::remove_dir_all(&lab.state_dir).map_err(io(format!("remove {}", lab.state_dir.display())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;

    #[test]
    fn a_lab_serves_its_base_url_and_the_pages_under_it() {
        let lab: LabState = serde_json::from_value(serde_json::json!({
            "server": "nginx", "port": 8080, "url": "http://127.0.0.1:8080/", "state_dir": "/s", "root": "/r",
            "spis": [], "pid": 1, "process_groups": [], "cpus": [], "disclosure": "/s/disclosure.json"
        }))
        .unwrap();
        for yes in [
            "http://127.0.0.1:8080",
            "http://127.0.0.1:8080/",
            "http://localhost:8080/a/b.html",
        ] {
            assert!(lab.serves(yes), "{yes}");
        }
        for no in [
            "http://127.0.0.1:80801/",
            "https://127.0.0.1:8080/",
            "http://127.0.0.1:9/",
        ] {
            assert!(!lab.serves(no), "{no}");
        }
    }

    #[test]
    fn the_sample_page_is_a_file_of_the_set() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        // No manifest: the first file in name order, past empty directories.
        fs::create_dir_all(root.join("a/empty")).unwrap();
        fs::create_dir_all(root.join("b")).unwrap();
        fs::write(root.join("b/z.html"), "z").unwrap();
        fs::write(root.join("b/y.html"), "y").unwrap();
        assert_eq!(sample_page(root).as_deref(), Some("/b/y.html"));
        // A manifest: its first entry that exists (a missing one is skipped).
        fs::write(
            root.join("manifest"),
            "# benchlab-manifest 1\n/gone.html\t1\t0000000000000000\tc\t1\n/b/z.html\t1\t0000000000000000\tc\t1\n",
        )
        .unwrap();
        assert_eq!(sample_page(root).as_deref(), Some("/b/z.html"));
        let empty = tempfile::tempdir().unwrap();
        assert_eq!(sample_page(empty.path()), None);
    }

    #[test]
    fn down_after_a_reboot_signals_no_recorded_group_and_removes_the_state() {
        // A live process group standing in for one whose id was reused.
        let mut other = Command::new("sleep").arg("30").process_group(0).spawn().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("nginx");
        fs::create_dir_all(&state).unwrap();
        let lab = LabState {
            server: ServerKind::Nginx,
            port: 1,
            url: String::new(),
            state_dir: state.clone(),
            root: state.clone(),
            spis: Vec::new(),
            pid: other.id() as i32,
            process_groups: vec![other.id() as i32],
            cpus: Vec::new(),
            disclosure: state.join("disclosure.json"),
            boot_id: "an earlier boot".into(),
        };
        down(&lab, Duration::from_secs(1)).unwrap();
        let still_running = other.try_wait().unwrap().is_none();
        let _ = other.kill();
        let _ = other.wait();
        assert!(still_running, "down signalled a group recorded before the last boot");
        assert!(!state.exists());
    }
}
