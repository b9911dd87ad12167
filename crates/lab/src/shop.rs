//! `lab up shop`: the lab's nginx (the file set and SPICE, as `lab up
//! nginx`) on a plain and a TLS port, with the shop application
//! (deploy/shop/shop.py, docs/shop.md) under gunicorn behind `/shop/`.
//!
//! The application, its catalogue and its users are compiled into benchlab
//! like the SPICE sources, so `lab up shop` works from an installed binary.
//! Everything the shop writes is in the state dir: its SQLite database and
//! gunicorn's socket in `run/`, its log in `log/shop.log`, the per-lab key
//! its CSRF tokens are signed with (owner-only) and the TLS certificate in
//! `run/`.

use crate::{io, require, Error, Paths};
use serde::{Deserialize, Serialize};
use std::fs;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The application and its data, as shipped in deploy/shop.
const APP: &str = include_str!("../../../deploy/shop/shop.py");
const PRODUCTS: &str = include_str!("../../../deploy/shop/products.csv");
const USERS: &str = include_str!("../../../deploy/shop/users.csv");

/// gunicorn's worker processes: several, so that carts are shared across
/// processes (through SQLite) as in a deployed shop.
pub const GUNICORN_WORKERS: usize = 4;

/// What `lab up shop` adds to a lab, recorded in the state dir's
/// `shop.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ShopState {
    /// `https://127.0.0.1:PORT/`: the same server over TLS.
    pub tls_url: String,
    pub tls_port: u16,
    /// The lab's self-signed certificate for 127.0.0.1 and localhost (PEM).
    pub cert: PathBuf,
    /// The app's own log: one JSON line per request.
    pub app_log: PathBuf,
    /// gunicorn's unix socket, where nginx proxies `/shop/`.
    pub socket: PathBuf,
    pub database: PathBuf,
    /// The users (`user,password`) and the catalogue (`sku,name,price_cents`)
    /// the app serves.
    pub users: PathBuf,
    pub products: PathBuf,
    pub workers: usize,
    /// gunicorn's command line, for the disclosure.
    pub command: String,
}

impl ShopState {
    /// The shop of the lab whose state dir is `state`, if it is one.
    pub fn read(state: &Path) -> Option<ShopState> {
        let text = fs::read_to_string(state.join("shop.json")).ok()?;
        serde_json::from_str(&text).ok()
    }

    fn write(&self, state: &Path) -> Result<(), Error> {
        let json = serde_json::to_string_pretty(self).map_err(|e| Error::Start(e.to_string()))?;
        fs::write(state.join("shop.json"), json + "\n").map_err(io("write shop.json"))
    }
}

/// The shop's files laid out in the state dir, and gunicorn's command.
pub(crate) struct Prepared {
    pub state: ShopState,
    key: PathBuf,
    cmd: Option<Command>,
}

/// Writes the app, its data, its key and the TLS certificate into the state
/// dir and builds gunicorn's command (not started yet).
pub(crate) fn prepare(p: &Paths, tls_port: u16) -> Result<Prepared, Error> {
    let gunicorn = require("gunicorn", "gunicorn")?;
    let app = p.state.join("shop");
    fs::create_dir_all(&app).map_err(io(format!("create {}", app.display())))?;
    for (name, text) in [("shop.py", APP), ("products.csv", PRODUCTS), ("users.csv", USERS)] {
        fs::write(app.join(name), text).map_err(io(format!("write {}", app.join(name).display())))?;
    }
    // The key CSRF tokens are signed with: fresh for each lab, readable by
    // its owner only, never printed.
    let secret = p.run.join("shop-secret");
    let mut key = [0u8; 32];
    fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut key))
        .map_err(io("read /dev/urandom"))?;
    fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&secret)
        .and_then(|mut f| std::io::Write::write_all(&mut f, &key))
        .map_err(io(format!("write {}", secret.display())))?;
    let (cert, key_file) = (p.run.join("tls-cert.pem"), p.run.join("tls-key.pem"));
    make_certificate(&cert, &key_file)?;

    let socket = p.run.join("shop.sock");
    let database = p.run.join("shop.db");
    let app_log = p.state.join("log").join("shop.log");
    let mut cmd = Command::new(gunicorn);
    cmd.arg("--workers")
        .arg(GUNICORN_WORKERS.to_string())
        .arg("--bind")
        .arg(format!("unix:{}", socket.display()))
        // The socket 0777: nginx's workers (nobody, under root) connect.
        .args(["--umask", "0", "--preload", "--chdir"])
        .arg(&app)
        .arg("--worker-tmp-dir")
        .arg(&p.run)
        .arg("shop:application")
        .env("SHOP_DB", &database)
        .env("SHOP_LOG", &app_log)
        .env("SHOP_SECRET_FILE", &secret)
        .env("SHOP_PRODUCTS", app.join("products.csv"))
        .env("SHOP_USERS", app.join("users.csv"))
        .env("SHOP_IMAGE", crate::sample_page(&p.root).unwrap_or_default())
        .env("PYTHONDONTWRITEBYTECODE", "1");
    let command = format!(
        "gunicorn --workers {GUNICORN_WORKERS} --bind unix:{} --umask 0 --preload --chdir {} --worker-tmp-dir {} shop:application",
        socket.display(),
        app.display(),
        p.run.display()
    );
    Ok(Prepared {
        state: ShopState {
            tls_url: format!("https://127.0.0.1:{tls_port}/"),
            tls_port,
            cert,
            app_log,
            socket,
            database,
            users: app.join("users.csv"),
            products: app.join("products.csv"),
            workers: GUNICORN_WORKERS,
            command,
        },
        key: key_file,
        cmd: Some(cmd),
    })
}

impl Prepared {
    /// gunicorn's command, once.
    pub fn command(&mut self) -> Option<Command> {
        self.cmd.take()
    }

    pub fn record(&self, state: &Path) -> Result<(), Error> {
        self.state.write(state)
    }

    /// The lab's nginx configuration `conf` (as `lab up nginx` writes it,
    /// one server block) with `/shop/` proxied to gunicorn in its server,
    /// and a second server, the same over TLS on the shop's TLS port.
    pub fn nginx_conf(&self, conf: &str, port: u16) -> Result<String, Error> {
        nginx_conf(conf, port, &self.state, &self.key)
    }
}

/// The shop's part of the disclosure: gunicorn's command line and the
/// application's files (its settings are the command line's and the
/// environment the lab sets, docs/shop.md).
pub(crate) fn disclosed(state: &Path) -> String {
    match ShopState::read(state) {
        Some(s) => format!(
            "{}\nworkers: {}\nsocket: {}\ndatabase: {} (SQLite, WAL)\nlog: {}\nusers: {}\nproducts: {}\ntls: {} (certificate {})\n",
            s.command,
            s.workers,
            s.socket.display(),
            s.database.display(),
            s.app_log.display(),
            s.users.display(),
            s.products.display(),
            s.tls_url,
            s.cert.display()
        ),
        None => "(shop.json is missing)\n".into(),
    }
}

fn nginx_conf(conf: &str, port: u16, shop: &ShopState, key: &Path) -> Result<String, Error> {
    let broken = |what: &str| Error::Start(format!("lab up shop: the lab's nginx configuration {what}"));
    let start = conf
        .find("\n    server {\n")
        .ok_or_else(|| broken("has no server block"))?
        + 1;
    let end = conf[start..]
        .rfind("\n    }\n")
        .map(|at| start + at + "\n    }\n".len())
        .ok_or_else(|| broken("has no end to its server block"))?;
    let server = &conf[start..end];
    let close = server.len() - "    }\n".len();
    let location = format!(
        "        # The shop (docs/shop.md): gunicorn's workers on a unix socket.\n        \
         location /shop/ {{\n            proxy_pass http://unix:{sock};\n            \
         proxy_set_header Host $host;\n            proxy_set_header X-Forwarded-Proto $scheme;\n        }}\n",
        sock = shop.socket.display()
    );
    let plain = format!("{}{location}{}", &server[..close], &server[close..]);
    let listen = format!("listen 127.0.0.1:{port}");
    if plain.matches(&listen).count() != 1 {
        return Err(broken(&format!("has no single `{listen}` line")));
    }
    let tls = plain.replacen(
        &listen,
        &format!("listen 127.0.0.1:{tls_port} ssl", tls_port = shop.tls_port),
        1,
    );
    let tls = tls.replacen(
        "        server_name localhost;\n",
        &format!(
            "        server_name localhost;\n        ssl_certificate {};\n        ssl_certificate_key {};\n",
            shop.cert.display(),
            key.display()
        ),
        1,
    );
    if !tls.contains("ssl_certificate ") {
        return Err(broken("has no `server_name localhost;` line"));
    }
    Ok(format!("{}{plain}\n{tls}{}", &conf[..start], &conf[end..]))
}

/// A self-signed certificate for 127.0.0.1 and localhost (PEM), its key
/// owner-only: the lab's test certificate, for clients that trust this file.
fn make_certificate(cert: &Path, key: &Path) -> Result<(), Error> {
    let made = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string(), "localhost".to_string()])
        .map_err(|e| Error::Start(format!("making the shop's TLS certificate: {e}")))?;
    fs::write(cert, made.cert.pem()).map_err(io(format!("write {}", cert.display())))?;
    fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(key)
        .and_then(|mut f| std::io::Write::write_all(&mut f, made.signing_key.serialize_pem().as_bytes()))
        .map_err(io(format!("write {}", key.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state() -> ShopState {
        ShopState {
            tls_url: "https://127.0.0.1:9443/".into(),
            tls_port: 9443,
            cert: "/s/run/tls-cert.pem".into(),
            app_log: "/s/log/shop.log".into(),
            socket: "/s/run/shop.sock".into(),
            database: "/s/run/shop.db".into(),
            users: "/s/shop/users.csv".into(),
            products: "/s/shop/products.csv".into(),
            workers: 4,
            command: String::new(),
        }
    }

    #[test]
    fn nginx_serves_the_shop_on_the_plain_port_and_everything_again_over_tls() {
        let p = Paths::new(Path::new("/s"), PathBuf::from("/s/www"));
        let base = crate::config::nginx(&p, 8080, &crate::profile::Profile::default_for(crate::ServerKind::Shop));
        let conf = nginx_conf(&base, 8080, &state(), Path::new("/s/run/tls-key.pem")).unwrap();
        assert_eq!(conf.matches("\n    server {\n").count(), 2, "{conf}");
        assert_eq!(conf.matches("location /shop/ {").count(), 2, "{conf}");
        assert_eq!(conf.matches("proxy_pass http://unix:/s/run/shop.sock;").count(), 2);
        // Each server keeps the SPICE locations of `lab up nginx`.
        assert_eq!(
            conf.matches("location ~ ^/spice/fastcgi").count(),
            2 * base.matches("location ~ ^/spice/fastcgi").count()
        );
        assert_eq!(conf.matches("listen 127.0.0.1:8080 ").count(), 1, "{conf}");
        assert_eq!(conf.matches("listen 127.0.0.1:9443 ssl ").count(), 1, "{conf}");
        assert!(conf.contains("ssl_certificate /s/run/tls-cert.pem;\n        ssl_certificate_key /s/run/tls-key.pem;"));
        // The http block ends after the two servers.
        assert!(conf.trim_end().ends_with("    }\n}"), "{conf}");
        // A configuration without the expected server is an error, not a guess.
        let e = nginx_conf("events {}\n", 8080, &state(), Path::new("/k")).unwrap_err();
        assert!(e.to_string().contains("has no server block"), "{e}");
    }

    #[test]
    fn the_shipped_data_has_the_headers_the_app_reads() {
        assert!(PRODUCTS.starts_with("sku,name,price_cents\n"));
        assert!(USERS.starts_with("user,password\n"));
        assert_eq!(USERS.lines().count(), 51);
        assert_eq!(PRODUCTS.lines().count(), 21);
    }
}
