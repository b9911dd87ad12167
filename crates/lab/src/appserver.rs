//! Application servers behind the lab's web server: the SPIs whose SPICE
//! program runs in a long-lived application server that the web server
//! reaches as a proxy (docs/spice.md). `wsgi`: `spice_wsgi.py` under
//! gunicorn; `asgi`: `spice_asgi.py` under uvicorn. Each listens on a unix
//! socket in the run dir, started by `lab up` unprivileged in a process
//! group of its own (so `lab down` stops it and its workers), with
//! `SPICE_ROOT` and `SPICE_SESSION_LOG` in its environment.
//!
//! The proxy forwards the whole path (`/spice/<spi>/<kind>/<file path>`);
//! the program drops the `/spice/<spi>` prefix itself, so no server needs
//! to rewrite the URL.

use crate::{io, require, Error, Paths};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The SPIs served by an application server behind a proxy.
pub const SPIS: &[&str] = &["wsgi", "asgi"];

/// Worker processes of each application server (as many as the FastCGI
/// program's, so the SPIs compare at the same process count).
pub const WORKERS: usize = 4;
/// Threads per gunicorn worker (gthread): a sync worker would serve one
/// request at a time, and the `sleep` program would queue behind it.
pub const WSGI_THREADS: usize = 8;

const WSGI_PY: &str = include_str!("../../../spice/wsgi/spice_wsgi.py");
const ASGI_PY: &str = include_str!("../../../spice/asgi/spice_asgi.py");

/// One application server to start: its command, its socket, and a name
/// for messages.
pub struct AppServer {
    pub spi: &'static str,
    pub what: &'static str,
    pub socket: PathBuf,
    pub command: Command,
}

/// A Python 3 that can import `module`: Debian's /usr/bin/python3 first
/// (where python3-uvicorn installs it), then the one on PATH.
fn python_with(module: &str, package: &str) -> Result<PathBuf, Error> {
    let mut candidates = vec![PathBuf::from("/usr/bin/python3")];
    if let Some(p) = crate::which("python3") {
        candidates.push(p);
    }
    for py in candidates {
        let ok = Command::new(&py)
            .args(["-c", &format!("import {module}")])
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false);
        if ok {
            return Ok(py);
        }
    }
    Err(Error::Missing {
        program: format!("python3's {module} module"),
        package: package.to_owned(),
    })
}

/// `env SPICE_ROOT=… SPICE_SESSION_LOG=… PROGRAM`: the lab's spawn clears
/// both variables from what it inherits, so they are set on the command.
fn with_spice_env(p: &Paths, program: &Path) -> Command {
    let mut cmd = Command::new("env");
    cmd.arg(format!("SPICE_ROOT={}", p.root.display()))
        .arg(format!("SPICE_SESSION_LOG={}", p.session_log.display()))
        .arg(program);
    cmd
}

/// Installs the programs into `bin` and returns the application servers to
/// start (the caller spawns each, waits for its socket, makes it 0666).
pub fn prepare(p: &Paths) -> Result<Vec<AppServer>, Error> {
    let gunicorn = require("gunicorn", "gunicorn")?;
    let python = python_with("uvicorn", "python3-uvicorn")?;
    for (name, text) in [("spice_wsgi.py", WSGI_PY), ("spice_asgi.py", ASGI_PY)] {
        fs::write(p.bin.join(name), text).map_err(io(format!("write {name}")))?;
        crate::chmod(&p.bin.join(name), 0o644)?;
    }
    let wsgi_sock = p.run.join("gunicorn.sock");
    let mut wsgi = with_spice_env(p, &gunicorn);
    wsgi.arg("--chdir")
        .arg(&p.bin)
        .arg("--bind")
        .arg(format!("unix:{}", wsgi_sock.display()))
        .args(["--workers", &WORKERS.to_string()])
        .args(["--worker-class", "gthread", "--threads", &WSGI_THREADS.to_string()])
        // Idle keep-alive connections outlive the proxy's pooled ones
        // (Apache `ttl=30` below): a proxy reusing a connection the
        // application server has just closed answers 502.
        .args(["--keep-alive", "75"])
        .arg("--pid")
        .arg(p.run.join("gunicorn.pid"))
        .arg("spice_wsgi:application");
    let asgi_sock = p.run.join("uvicorn.sock");
    let mut asgi = with_spice_env(p, &python);
    asgi.args(["-m", "uvicorn", "--app-dir"])
        .arg(&p.bin)
        .arg("--uds")
        .arg(&asgi_sock)
        .args(["--workers", &WORKERS.to_string()])
        .args(["--no-access-log", "--lifespan", "off", "--timeout-keep-alive", "75"])
        .arg("spice_asgi:app");
    Ok(vec![
        AppServer {
            spi: "wsgi",
            what: "gunicorn (the WSGI SPICE program)",
            socket: wsgi_sock,
            command: wsgi,
        },
        AppServer {
            spi: "asgi",
            what: "uvicorn (the ASGI SPICE program)",
            socket: asgi_sock,
            command: asgi,
        },
    ])
}

/// The application servers' versions and settings, for the disclosure.
pub fn disclosure() -> String {
    let mut out = format!(
        "wsgi: gunicorn --workers {WORKERS} --worker-class gthread --threads {WSGI_THREADS} --keep-alive 75, on run/gunicorn.sock\n\
         asgi: uvicorn --workers {WORKERS} --no-access-log --lifespan off --timeout-keep-alive 75, on run/uvicorn.sock\n"
    );
    if let Ok(o) = Command::new("gunicorn").arg("--version").output() {
        out.push_str(String::from_utf8_lossy(&o.stdout).trim());
        out.push('\n');
    }
    if let Ok(py) = python_with("uvicorn", "python3-uvicorn") {
        if let Ok(o) = Command::new(py).args(["-m", "uvicorn", "--version"]).output() {
            out.push_str(String::from_utf8_lossy(&o.stdout).trim());
            out.push('\n');
        }
    }
    out
}

/// nginx: a proxy_pass location per application server (inside `server`).
pub fn nginx(p: &Paths) -> String {
    let run = p.run.display();
    let mut s = String::from("        # Application servers: the whole path goes to the program.\n");
    for (spi, sock) in [("wsgi", "gunicorn.sock"), ("asgi", "uvicorn.sock")] {
        s.push_str(&format!(
            "        location /spice/{spi}/ {{\n            proxy_pass http://unix:{run}/{sock};\n            \
             proxy_http_version 1.1;\n            proxy_set_header Host $host;\n        }}\n"
        ));
    }
    s
}

/// Apache: mod_proxy_http to each application server's socket.
pub fn apache(p: &Paths) -> String {
    let run = p.run.display();
    let mut s = String::from(
        "\n# Application servers (mod_proxy_http): the whole path goes to the program.\n\
         LoadModule proxy_http_module /usr/lib/apache2/modules/mod_proxy_http.so\n",
    );
    for (spi, sock) in [("wsgi", "gunicorn.sock"), ("asgi", "uvicorn.sock")] {
        s.push_str(&format!(
            "ProxyPass \"/spice/{spi}/\" \"unix:{run}/{sock}|http://localhost/spice/{spi}/\" ttl=30\n"
        ));
    }
    s
}

/// lighttpd: mod_proxy to each application server's socket.
pub fn lighttpd(p: &Paths) -> String {
    let run = p.run.display();
    let mut s = String::from(
        "\n# Application servers (mod_proxy): the whole path goes to the program.\nserver.modules += ( \"mod_proxy\" )\n",
    );
    for (spi, sock) in [("wsgi", "gunicorn.sock"), ("asgi", "uvicorn.sock")] {
        s.push_str(&format!(
            "$HTTP[\"url\"] =~ \"^/spice/{spi}/\" {{\n    proxy.server = ( \"\" => (( \"socket\" => \"{run}/{sock}\" )) )\n}}\n"
        ));
    }
    s
}
