//! Real servers (nginx, lighttpd) started on loopback high ports in temp dirs.
//!
//! Each server runs in the foreground as a child of the test process, with
//! its configuration, docroot, logs, pid file and temp paths all inside one
//! `TempDir`, and in a process group of its own: the guard stops the whole
//! group (the server and whatever it forked, such as Apache's workers) and
//! reaps it when dropped, so a failing assertion never leaves a server
//! behind ([`super::stop_group`]).
//!
//! Both servers write an access log in a tab-separated format chosen so the
//! tests can compare benchlab's counters with what the server saw: per
//! request its connection, its position on that connection, status, bytes
//! sent (headers included) and body bytes sent.

use std::fs;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tempfile::TempDir;

use super::{free_port, require};

/// The files every docroot holds, with their exact sizes.
pub const FILES: &[(&str, usize)] = &[("4k.html", 4096), ("1k.html", 1024), ("big.bin", 300_000)];

/// A server-side include: nginx (with `ssi on`) serves it chunked to
/// HTTP/1.1 clients and read-to-close to HTTP/1.0 clients, since the length
/// of the result is unknown when the headers go out.
pub const SSI_FILE: &str = "ssi.shtml";
/// The body nginx sends for [`SSI_FILE`] (after the include is expanded).
pub const SSI_BODY: &str = "<html><body>\n<p>included: hello-from-ssi</p>\n</body></html>\n";
const SSI_SOURCE: &str =
    "<html><body>\n<p>included: <!--# echo var=\"nothing\" default=\"hello-from-ssi\" --></p>\n</body></html>\n";

/// Size of `/4k.html`, `/1k.html`, `/big.bin`.
pub const SIZE_4K: u64 = 4096;
pub const SIZE_1K: u64 = 1024;
pub const SIZE_BIG: u64 = 300_000;

/// Writes HTML-like text of exactly `len` bytes (binary-ish bytes for `.bin`).
fn file_contents(name: &str, len: usize) -> Vec<u8> {
    if name.ends_with(".bin") {
        // Deterministic, not compressible, every byte value present.
        let mut x: u32 = 0x1234_5678;
        return (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                (x >> 24) as u8
            })
            .collect();
    }
    let head = format!("<!DOCTYPE html>\n<html><head><title>{name}</title></head>\n<body>\n");
    let tail = "</body></html>\n";
    let mut s = head.into_bytes();
    let line = b"<p>The quick brown fox jumps over the lazy dog. 0123456789</p>\n";
    while s.len() + line.len() + tail.len() <= len {
        s.extend_from_slice(line);
    }
    while s.len() + tail.len() < len {
        s.push(b' ');
    }
    s.extend_from_slice(tail.as_bytes());
    assert_eq!(s.len(), len);
    s
}

/// Creates `dir/www` with [`FILES`] and returns its path.
pub fn make_docroot(dir: &Path) -> PathBuf {
    let www = dir.join("www");
    fs::create_dir_all(&www).expect("create docroot");
    for (name, len) in FILES {
        fs::write(www.join(name), file_contents(name, *len)).expect("write docroot file");
    }
    fs::write(www.join(SSI_FILE), SSI_SOURCE).expect("write docroot file");
    www
}

/// Starts the server on a free port and waits until it listens there.
/// `command(port)` writes the configuration for `port` and returns the
/// command to run. A server that exits at once (most likely: another process
/// took the port between `free_port` and its bind) is retried on a fresh
/// port; the third failure, or a server that never listens, panics with the
/// server's error log.
pub fn start_on_free_port(name: &str, error_log: &Path, mut command: impl FnMut(u16) -> Command) -> (Child, u16) {
    let log = || fs::read_to_string(error_log).unwrap_or_default();
    for attempt in 1..=3 {
        let port = free_port();
        let mut child = command(port)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .process_group(0)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(status) = child.try_wait().expect("try_wait") {
                // Whatever it forked before it exited goes too.
                kill_and_reap(&mut child);
                assert!(attempt < 3, "{name} exited at start ({status}); error log:\n{}", log());
                break;
            }
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return (child, port);
            }
            if Instant::now() > deadline {
                kill_and_reap(&mut child);
                panic!("{name} does not listen on 127.0.0.1:{port}; error log:\n{}", log());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    unreachable!()
}

/// Stops a server started by [`start_on_free_port`] with its whole
/// process group, and reaps it.
pub fn kill_and_reap(child: &mut Child) {
    super::stop_group(child);
}

/// Reads `path` as lines, waiting until it holds at least `at_least` lines
/// (or 5 s pass), then a little longer so a late extra line shows up too.
pub fn read_log_lines(path: &Path, at_least: usize) -> Vec<String> {
    let read = || -> Vec<String> {
        fs::read_to_string(path)
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    };
    let deadline = Instant::now() + Duration::from_secs(5);
    while read().len() < at_least && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(150));
    read()
}

/// Options of an nginx test server.
#[derive(Clone, Debug)]
pub struct NginxOpts {
    /// Serve HTTPS with a fresh self-signed certificate for `localhost`.
    pub tls: bool,
    /// `keepalive_requests`: requests one connection may carry.
    pub keepalive_requests: u32,
    /// `keepalive_timeout`, in nginx syntax (`75s`, `300ms`).
    pub keepalive_timeout: String,
    /// Serve this directory (e.g. a file set from `benchlab fileset
    /// generate`) instead of a fresh docroot with [`FILES`]. nginx runs as
    /// root (`user root;`), so the directory needs no particular mode.
    pub docroot: Option<PathBuf>,
    /// With `tls`: serve this certificate and key (PEM files) instead of a
    /// fresh self-signed one, e.g. a leaf signed by a test CA, or expired.
    pub cert: Option<(PathBuf, PathBuf)>,
    /// `listen ... backlog=N`; `None` = nginx's default (511 on Linux).
    pub backlog: Option<u32>,
    /// `worker_connections`; nginx also gets twice as many files.
    pub worker_connections: u32,
    /// `multi_accept on`: accept every queued connection per event-loop
    /// turn (the default accepts one).
    pub multi_accept: bool,
    /// `listen ... http2`: HTTP/2 on the listener (with `tls`, by ALPN;
    /// without, h2c with prior knowledge only).
    pub http2: bool,
}

impl Default for NginxOpts {
    fn default() -> Self {
        NginxOpts {
            tls: false,
            keepalive_requests: 1000,
            keepalive_timeout: "75s".to_owned(),
            docroot: None,
            cert: None,
            backlog: None,
            worker_connections: 1024,
            multi_accept: false,
            http2: false,
        }
    }
}

/// One request as nginx logged it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NginxLogLine {
    /// `$connection`: serial number of the connection (one worker process,
    /// so unique within the server's life).
    pub connection: u64,
    /// `$connection_requests`: 1 for the first request on the connection.
    pub connection_requests: u64,
    pub status: u16,
    /// `$bytes_sent`: status line, headers and body.
    pub bytes_sent: u64,
    /// `$body_bytes_sent`.
    pub body_bytes_sent: u64,
    /// `$ssl_session_reused`: `r` when the TLS session was resumed, `.` for a
    /// full handshake, `-` without TLS.
    pub ssl_session_reused: String,
    /// The request's `Connection` header, `-` when absent.
    pub connection_header: String,
    /// `$remote_addr`: the client's source address.
    pub remote_addr: String,
    /// The request's `X-Bench` header, `-` when absent.
    pub x_bench: String,
    /// `$request`: the request line, such as `GET /4k.html HTTP/1.1`.
    pub request: String,
    /// `$request_length`: request line, headers and body as read.
    pub request_length: u64,
    /// The request's `Cookie` header, `-` when absent.
    pub cookie: String,
    /// The request's `X-CSRF` header, `-` when absent.
    pub x_csrf: String,
}

impl NginxLogLine {
    fn parse(line: &str) -> NginxLogLine {
        let f: Vec<&str> = line.split('\t').collect();
        assert_eq!(f.len(), 13, "unexpected nginx log line {line:?}");
        let num = |i: usize| -> u64 {
            f[i].parse()
                .unwrap_or_else(|_| panic!("field {i} of nginx log line {line:?} is not a number"))
        };
        NginxLogLine {
            connection: num(0),
            connection_requests: num(1),
            status: num(2) as u16,
            bytes_sent: num(3),
            body_bytes_sent: num(4),
            ssl_session_reused: f[5].to_owned(),
            connection_header: f[6].to_owned(),
            remote_addr: f[7].to_owned(),
            x_bench: f[8].to_owned(),
            request: f[9].to_owned(),
            request_length: num(10),
            cookie: f[11].to_owned(),
            x_csrf: f[12].to_owned(),
        }
    }

    /// The method of the request line (`GET`).
    pub fn method(&self) -> &str {
        self.request.split(' ').next().unwrap_or("")
    }

    /// The path of the request line (`/4k.html`).
    pub fn path(&self) -> &str {
        self.request.split(' ').nth(1).unwrap_or("")
    }

    /// The protocol of the request line (`HTTP/1.1`).
    pub fn version(&self) -> &str {
        self.request.split(' ').nth(2).unwrap_or("")
    }
}

/// An nginx running in the foreground (`daemon off; master_process off;`: a
/// single process, so `$connection` numbers are unique and killing the child
/// stops everything).
pub struct Nginx {
    child: Child,
    dir: TempDir,
    port: u16,
    tls: bool,
}

impl Nginx {
    pub fn start(opts: NginxOpts) -> Nginx {
        require("nginx");
        let dir = tempfile::tempdir().expect("tempdir");
        let d = dir.path();
        let www = match &opts.docroot {
            Some(root) => root.clone(),
            None => make_docroot(d),
        };
        for t in ["client_body", "proxy", "fastcgi", "uwsgi", "scgi"] {
            fs::create_dir_all(d.join(format!("tmp_{t}"))).expect("create nginx temp dir");
        }
        let mut ssl = String::new();
        if let (true, Some((cert, key))) = (opts.tls, &opts.cert) {
            ssl = format!(
                "        ssl_certificate {};\n        ssl_certificate_key {};\n        \
                 ssl_protocols TLSv1.2 TLSv1.3;\n        ssl_session_cache shared:SSL:1m;\n        ssl_session_tickets on;\n",
                cert.display(),
                key.display(),
            );
        } else if opts.tls {
            require("openssl");
            let status = Command::new("openssl")
                .args(["req", "-x509", "-newkey", "rsa:2048", "-nodes"])
                .args(["-subj", "/CN=localhost", "-days", "1"])
                .arg("-keyout")
                .arg(d.join("key.pem"))
                .arg("-out")
                .arg(d.join("cert.pem"))
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .expect("run openssl");
            assert!(status.success(), "openssl req failed: {status}");
            ssl = format!(
                "        ssl_certificate {cert};\n        ssl_certificate_key {key};\n        \
                 ssl_protocols TLSv1.2 TLSv1.3;\n        ssl_session_cache shared:SSL:1m;\n        ssl_session_tickets on;\n",
                cert = d.join("cert.pem").display(),
                key = d.join("key.pem").display(),
            );
        }
        let p = |name: &str| d.join(name).display().to_string();
        let write_conf = |port: u16| {
            let conf = format!(
                r#"user root;
daemon off;
master_process off;
worker_processes 1;
worker_rlimit_nofile {rlimit};
pid {pid};
lock_file {lock};
error_log {error_log} warn;
events {{
    worker_connections {worker_connections};
    multi_accept {multi_accept};
}}
http {{
    types {{
        text/html html shtml;
        application/octet-stream bin;
    }}
    default_type application/octet-stream;
    client_body_temp_path {tmp_client_body};
    proxy_temp_path {tmp_proxy};
    fastcgi_temp_path {tmp_fastcgi};
    uwsgi_temp_path {tmp_uwsgi};
    scgi_temp_path {tmp_scgi};
    log_format bench "$connection\t$connection_requests\t$status\t$bytes_sent\t$body_bytes_sent\t$ssl_session_reused\t$http_connection\t$remote_addr\t$http_x_bench\t$request\t$request_length\t$http_cookie\t$http_x_csrf";
    access_log {access_log} bench;
    sendfile on;
    keepalive_requests {keepalive_requests};
    keepalive_timeout {keepalive_timeout};
    server {{
        listen 127.0.0.1:{port}{ssl_flag}{http2}{backlog};
        server_name localhost;
        root {www};
        location ~ \.shtml$ {{
            ssi on;
        }}
        # Takes any method and body, for the request-body tests: proxied
        # to this server's own /echo-done, so nginx reads the whole body
        # (`return` alone would discard it unread and leave it out of
        # $request_length).
        location = /echo {{
            client_max_body_size 8m;
            proxy_pass http://127.0.0.1:{port}/echo-done;
        }}
        # WebDAV PUT (nginx reads the whole body, over HTTP/2 too): 201
        # when it creates the file, 204 when it replaces it.
        location = /put.bin {{
            dav_methods PUT;
            client_max_body_size 8m;
        }}
        # Any method without a body (nothing to read).
        location = /any {{
            return 200 "ok\n";
        }}
        # A small session for the flow tests (docs/flows.md): a page with a
        # token to capture, a log-in that sets a cookie, an API that echoes
        # what the client sent as JSON.
        location = /flow/page {{
            add_header X-Token "tok-$arg_u";
            return 200 '<form><input type="hidden" name="csrf" value="csrf-$arg_u"></form>';
        }}
        location = /flow/login {{
            add_header Set-Cookie "sid=s-$arg_u; Path=/flow";
            return 303 /flow/cart;
        }}
        location = /flow/cart {{
            default_type application/json;
            return 200 '{{"ok": true, "sid": "$cookie_sid", "csrf": "$http_x_csrf"}}';
        }}
        location = /flow/logout {{
            add_header Set-Cookie "sid=gone; Path=/flow; Max-Age=0";
            return 204;
        }}
        location = /echo-done {{
            access_log off;
            client_max_body_size 8m;
            return 200 "ok\n";
        }}
{ssl}    }}
}}
"#,
                pid = p("nginx.pid"),
                lock = p("nginx.lock"),
                error_log = p("error.log"),
                tmp_client_body = p("tmp_client_body"),
                tmp_proxy = p("tmp_proxy"),
                tmp_fastcgi = p("tmp_fastcgi"),
                tmp_uwsgi = p("tmp_uwsgi"),
                tmp_scgi = p("tmp_scgi"),
                access_log = p("access.log"),
                keepalive_requests = opts.keepalive_requests,
                keepalive_timeout = opts.keepalive_timeout,
                ssl_flag = if opts.tls { " ssl" } else { "" },
                http2 = if opts.http2 { " http2" } else { "" },
                backlog = opts.backlog.map(|b| format!(" backlog={b}")).unwrap_or_default(),
                worker_connections = opts.worker_connections,
                rlimit = opts.worker_connections * 2,
                multi_accept = if opts.multi_accept { "on" } else { "off" },
                www = www.display(),
            );
            fs::write(d.join("nginx.conf"), conf).expect("write nginx.conf");
        };
        let (child, port) = start_on_free_port("nginx", &d.join("error.log"), |port| {
            write_conf(port);
            let mut cmd = Command::new("nginx");
            cmd.arg("-p")
                .arg(d)
                .arg("-c")
                .arg(d.join("nginx.conf"))
                .arg("-e")
                .arg(d.join("error.log"));
            cmd
        });
        Nginx {
            child,
            dir,
            port,
            tls: opts.tls,
        }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The nginx process (with `master_process off`, the only one).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `http://127.0.0.1:PORT/path`, or `https://...` with TLS (the
    /// certificate names `localhost`, so benchlab needs `--insecure`; an IP
    /// address rather than `localhost` because nginx listens on IPv4 only).
    pub fn url(&self, path: &str) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://127.0.0.1:{}{path}", self.port)
    }

    /// The access log so far, waiting (up to 5 s) until it holds at least
    /// `at_least` lines.
    pub fn access_log_lines_at_least(&self, at_least: usize) -> Vec<NginxLogLine> {
        read_log_lines(&self.dir.path().join("access.log"), at_least)
            .iter()
            .map(|l| NginxLogLine::parse(l))
            .collect()
    }

    /// The access log so far.
    pub fn access_log_lines(&self) -> Vec<NginxLogLine> {
        self.access_log_lines_at_least(0)
    }

    /// The error log so far (for assertion messages).
    pub fn error_log(&self) -> String {
        fs::read_to_string(self.dir.path().join("error.log")).unwrap_or_default()
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        kill_and_reap(&mut self.child);
    }
}

/// One request as lighttpd logged it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LighttpdLogLine {
    pub status: u16,
    /// `%b`: body bytes sent.
    pub body_bytes: u64,
    /// `%O`: all bytes sent (status line, headers, body).
    pub bytes_out: u64,
    /// `%k`: number of keep-alive requests served on the connection before
    /// this one (0 for the first).
    pub keepalive_count: u64,
    /// `%r`: the request line.
    pub request: String,
}

impl LighttpdLogLine {
    fn parse(line: &str) -> LighttpdLogLine {
        let f: Vec<&str> = line.split('\t').collect();
        assert_eq!(f.len(), 5, "unexpected lighttpd log line {line:?}");
        let num = |i: usize| -> u64 {
            // lighttpd writes `-` for a zero byte count.
            if f[i] == "-" {
                return 0;
            }
            f[i].parse()
                .unwrap_or_else(|_| panic!("field {i} of lighttpd log line {line:?} is not a number"))
        };
        LighttpdLogLine {
            status: num(0) as u16,
            body_bytes: num(1),
            bytes_out: num(2),
            keepalive_count: num(3),
            request: f[4].to_owned(),
        }
    }

    /// The path of the request line.
    pub fn path(&self) -> &str {
        self.request.split(' ').nth(1).unwrap_or("")
    }
}

/// A lighttpd running in the foreground (`-D`).
pub struct Lighttpd {
    child: Child,
    dir: TempDir,
    port: u16,
}

impl Lighttpd {
    pub fn start() -> Lighttpd {
        require("lighttpd");
        let dir = tempfile::tempdir().expect("tempdir");
        let d = dir.path();
        let www = make_docroot(d);
        let p = |name: &str| d.join(name).display().to_string();
        let write_conf = |port: u16| {
            let conf = format!(
                r#"server.modules = ( "mod_accesslog" )
server.document-root = "{www}"
server.port = {port}
server.bind = "127.0.0.1"
server.errorlog = "{error_log}"
server.pid-file = "{pid}"
server.max-keep-alive-requests = 1000
accesslog.filename = "{access_log}"
accesslog.format = "%s\t%b\t%O\t%k\t%r"
mimetype.assign = ( ".html" => "text/html", ".bin" => "application/octet-stream" )
"#,
                www = www.display(),
                error_log = p("error.log"),
                pid = p("lighttpd.pid"),
                access_log = p("access.log"),
            );
            fs::write(d.join("lighttpd.conf"), conf).expect("write lighttpd.conf");
        };
        let (child, port) = start_on_free_port("lighttpd", &d.join("error.log"), |port| {
            write_conf(port);
            let mut cmd = Command::new("lighttpd");
            cmd.arg("-D").arg("-f").arg(d.join("lighttpd.conf"));
            cmd
        });
        Lighttpd { child, dir, port }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// The access log, waiting (up to 5 s) until it holds at least
    /// `at_least` lines: lighttpd buffers its access log and flushes it about
    /// once a second.
    pub fn access_log_lines_at_least(&self, at_least: usize) -> Vec<LighttpdLogLine> {
        read_log_lines(&self.dir.path().join("access.log"), at_least)
            .iter()
            .map(|l| LighttpdLogLine::parse(l))
            .collect()
    }

    pub fn access_log_lines(&self) -> Vec<LighttpdLogLine> {
        self.access_log_lines_at_least(0)
    }
}

impl Drop for Lighttpd {
    fn drop(&mut self) {
        kill_and_reap(&mut self.child);
    }
}

/// A server with HTTP/2 on a plain (h2c) and a TLS listener, its access
/// log one line per request: status, body bytes, protocol, request line.
pub struct H2Server {
    child: Child,
    dir: TempDir,
    /// Cleartext (h2c, prior knowledge) and TLS (ALPN h2) ports.
    pub h2c: u16,
    pub tls: Option<u16>,
}

/// One request of an [`H2Server`]'s log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct H2LogLine {
    pub status: u16,
    pub body_bytes: u64,
    pub protocol: String,
}

fn self_signed(d: &Path) -> (PathBuf, PathBuf) {
    require("openssl");
    let (cert, key) = (d.join("cert.pem"), d.join("key.pem"));
    let status = Command::new("openssl")
        .args(["req", "-x509", "-newkey", "rsa:2048", "-nodes"])
        .args(["-subj", "/CN=localhost", "-days", "1"])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("run openssl");
    assert!(status.success(), "openssl req failed: {status}");
    (cert, key)
}

impl H2Server {
    /// Apache httpd with mod_http2 (`Protocols h2 h2c http/1.1`, `H2Direct
    /// on` for prior knowledge), event MPM, on a cleartext port.
    pub fn apache() -> H2Server {
        require("apache2");
        let dir = tempfile::tempdir().expect("tempdir");
        let d = dir.path().to_path_buf();
        // httpd's workers run as www-data: they must reach the docroot.
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&d, fs::Permissions::from_mode(0o755)).expect("chmod tempdir");
        let www = make_docroot(&d);
        let m = "/usr/lib/apache2/modules";
        let (child, port) = start_on_free_port("apache2", &d.join("error.log"), |port| {
            let conf = format!(
                r#"ServerRoot "{d}"
ServerName 127.0.0.1
Listen 127.0.0.1:{port}
PidFile "{d}/apache2.pid"
ErrorLog "{d}/error.log"
LogLevel warn
DefaultRuntimeDir "{d}"
Mutex file:{d} default
User www-data
Group www-data
LoadModule mpm_event_module {m}/mod_mpm_event.so
LoadModule authz_core_module {m}/mod_authz_core.so
LoadModule mime_module {m}/mod_mime.so
LoadModule http2_module {m}/mod_http2.so
<IfModule !log_config_module>
    LoadModule log_config_module {m}/mod_log_config.so
</IfModule>
TypesConfig /etc/mime.types
CustomLog "{d}/access.log" "%>s\t%B\t%H"
Protocols h2 h2c http/1.1
H2Direct on
DocumentRoot "{www}"
<Directory "{www}">
    Require all granted
</Directory>
"#,
                d = d.display(),
                www = www.display(),
            );
            fs::write(d.join("apache2.conf"), conf).expect("write apache2.conf");
            let mut cmd = Command::new("apache2");
            cmd.arg("-f").arg(d.join("apache2.conf")).arg("-DFOREGROUND");
            cmd
        });
        H2Server {
            child,
            dir,
            h2c: port,
            tls: None,
        }
    }

    /// h2o on a cleartext port (HTTP/1 and h2c by prior knowledge) and a
    /// TLS port (ALPN h2).
    pub fn h2o() -> H2Server {
        require("h2o");
        let dir = tempfile::tempdir().expect("tempdir");
        let d = dir.path().to_path_buf();
        let www = make_docroot(&d);
        let (cert, key) = self_signed(&d);
        let tls_port = free_port();
        let (child, port) = start_on_free_port("h2o", &d.join("error.log"), |port| {
            let conf = format!(
                r#"user: root
pid-file: {d}/h2o.pid
error-log: {d}/error.log
access-log:
  path: {d}/access.log
  format: "%s\t%b\t%H"
listen:
  host: 127.0.0.1
  port: {port}
listen:
  host: 127.0.0.1
  port: {tls_port}
  ssl:
    certificate-file: {cert}
    key-file: {key}
    ocsp-update-interval: 0
hosts:
  default:
    paths:
      /:
        file.dir: {www}
"#,
                d = d.display(),
                cert = cert.display(),
                key = key.display(),
                www = www.display(),
            );
            fs::write(d.join("h2o.conf"), conf).expect("write h2o.conf");
            let mut cmd = Command::new("h2o");
            cmd.arg("-c").arg(d.join("h2o.conf"));
            cmd
        });
        super::wait_for_port(tls_port, Duration::from_secs(10));
        H2Server {
            child,
            dir,
            h2c: port,
            tls: Some(tls_port),
        }
    }

    /// The access log, waiting (up to 5 s) for `at_least` lines.
    pub fn log_lines_at_least(&self, at_least: usize) -> Vec<H2LogLine> {
        read_log_lines(&self.dir.path().join("access.log"), at_least)
            .iter()
            .map(|l| {
                let f: Vec<&str> = l.split('\t').collect();
                assert_eq!(f.len(), 3, "unexpected log line {l:?}");
                H2LogLine {
                    status: f[0].parse().expect("status"),
                    body_bytes: f[1].parse().unwrap_or(0),
                    protocol: f[2].to_owned(),
                }
            })
            .collect()
    }
}

impl Drop for H2Server {
    fn drop(&mut self) {
        kill_and_reap(&mut self.child);
    }
}
