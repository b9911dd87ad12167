//! `benchlab lab`: start, inspect and stop a server under test
//! (`benchlab_lab` does the work; this prints it).

use crate::{CliError, Outcome};
use benchlab_lab::{profile::Profile, Error, ServerKind, UpOptions};
use clap::{Args, Subcommand};
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Args)]
pub struct LabArgs {
    #[command(subcommand)]
    command: LabCommand,
}

#[derive(Debug, Subcommand)]
enum LabCommand {
    /// Start SERVER (nginx, apache-event, apache-prefork, lighttpd,
    /// benchlab, or shop: nginx with the shop application) on 127.0.0.1 from a generated configuration, serving a file
    /// set and the SPICE programs of every SPI it supports; print its URL.
    #[command(after_help = "\
The server serves the file set at / and SPICE at /spice/<spi>/{adrot,session,sleep}/<file path> \
(docs/spice.md): benchlab serves inproc; nginx, Apache and lighttpd serve cgi-c, cgi-script, \
cgi-perl, fastcgi, php-fpm and node (PHP-FPM and node run beside the server), nginx and Apache also \
shtml (/spice/shtml/include/<file path> only). Everything it needs and writes (configuration, pid, \
logs, sockets, the SPICE programs, \
disclosure.txt and disclosure.json: version and effective configuration) is in its state dir, \
printed on the second line. The third line, `page URL`, is a file of the set to try (the base URL \
itself has no index page: 403 or 404). `benchlab lab down SERVER` stops it and removes the state dir. \
`shop` is nginx with the shop application (docs/shop.md) under gunicorn at /shop/, and the same server \
over TLS: its lines `tls URL`, `cert FILE` (the certificate to trust) and `app-log FILE` follow.")]
    Up(UpArgs),
    /// Stop a server the lab started (SIGTERM, SIGKILL after --grace) and
    /// remove its state dir.
    Down(DownArgs),
    /// List the servers the lab started, their URLs and state dirs.
    Status,
    /// Print SERVER's default profile (its tuning) as TOML, to edit and
    /// pass to `lab up --profile`.
    Profile {
        /// nginx, apache-event, apache-prefork, lighttpd, benchlab, tomcat or jetty.
        server: String,
    },
    /// Write the Kubernetes manifests of a run across N agents: an
    /// Indexed Job of agents, the controller Job and its Service, the
    /// certificates as Secrets, the suite as a ConfigMap.
    Kubernetes(crate::kube_cmd::KubeArgs),
    /// Make a lab's certificates for agents and monitors (mutual TLS):
    /// ca.pem, ca.key, controller.pem/.key, agent-I.pem/.key for each
    /// agent, monitor.pem/.key; keys are written owner-only. A DIR that
    /// already holds a CA is refused unless --force.
    Certs(CertsArgs),
}

#[derive(Debug, Args)]
struct CertsArgs {
    /// Directory to write into (made if missing).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// Agent certificates to make (agent-0 … agent-N-1).
    #[arg(long, value_name = "N", default_value_t = 1)]
    agents: u32,
    /// A name or address agents reach the controller by, for its
    /// certificate (repeatable) [default: localhost and 127.0.0.1].
    #[arg(long = "controller-name", value_name = "NAME")]
    controller_names: Vec<String>,
    /// Replace a CA already in DIR (ca.pem, ca.key): every certificate the
    /// old CA signed stops being trusted by what the new one signs.
    #[arg(long)]
    force: bool,
}

#[derive(Debug, Args)]
struct UpArgs {
    /// nginx, apache-event, apache-prefork, lighttpd, benchlab, shop, tomcat or jetty.
    server: String,
    /// The tuning (TOML; `benchlab lab profile SERVER` writes the defaults).
    #[arg(long, value_name = "FILE")]
    profile: Option<PathBuf>,
    /// Pin the server and its helpers to these CPUs (e.g. 0 or 0,1 or 2-3).
    #[arg(long, value_name = "LIST")]
    cpus: Option<String>,
    /// Port on 127.0.0.1 (1024 or above) [default: a free one].
    #[arg(long, value_name = "P")]
    port: Option<u16>,
    /// The file set to serve [default: 24 pages of 4,096 bytes made in the state dir].
    #[arg(long, value_name = "DIR")]
    root: Option<PathBuf>,
    /// The listen socket's backlog, over the profile's `backlog`; the
    /// kernel caps it at net.core.somaxconn, and the disclosure says both.
    #[arg(long, value_name = "N")]
    backlog: Option<u32>,
    /// shop only: the TLS port on 127.0.0.1 (1024 or above) [default: a free one].
    #[arg(long, value_name = "P")]
    tls_port: Option<u16>,
    /// A servlet container (tomcat or jetty) that nginx or Apache proxies
    /// /spice/servlet/ and /spice/jsp/ to (docs/spice.md).
    #[arg(long, value_name = "NAME")]
    container: Option<String>,
}

#[derive(Debug, Args)]
struct DownArgs {
    /// The server to stop [default: the only one up].
    server: Option<String>,
    /// Stop every server the lab started.
    #[arg(long, conflicts_with = "server")]
    all: bool,
    /// How long a server gets to exit after SIGTERM before SIGKILL.
    #[arg(long, value_name = "DUR", default_value = "10s", value_parser = crate::args::duration)]
    grace: Duration,
}

fn cli_error(e: Error) -> CliError {
    // Input errors read best without the prefix (they name the flag).
    let context = if e.is_input_error() { "" } else { "lab: " };
    CliError::of(context, e)
}

pub fn run(a: LabArgs) -> Result<Outcome, CliError> {
    let base = benchlab_lab::default_base();
    match a.command {
        LabCommand::Up(u) => {
            let kind = ServerKind::parse(&u.server).map_err(cli_error)?;
            let opts = UpOptions {
                profile: u.profile,
                cpus: u.cpus,
                port: u.port,
                root: u.root,
                base: Some(base),
                backlog: u.backlog,
                tls_port: u.tls_port,
                container: u.container,
            };
            let lab = benchlab_lab::up(kind, &opts).map_err(cli_error)?;
            // Scripts read the URL from the first line, the state dir from
            // the second. A closed stdout (`| head -1`) is no error: the
            // server is up and recorded either way. The base URL is the
            // target of runs, but a file set has no index page, so a page
            // to try in a browser or with curl follows.
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{}", lab.url);
            let _ = writeln!(out, "state {}", lab.state_dir.display());
            if let Some(page) = benchlab_lab::sample_page(&lab.root) {
                let _ = writeln!(out, "page {}{}", lab.url, page.trim_start_matches('/'));
            }
            let shop = benchlab_lab::shop::ShopState::read(&lab.state_dir);
            if let Some(shop) = &shop {
                let _ = writeln!(out, "tls {}", shop.tls_url);
                let _ = writeln!(out, "cert {}", shop.cert.display());
                let _ = writeln!(out, "app-log {}", shop.app_log.display());
            }
            let _ = out.flush();
            drop(out);
            eprintln!(
                "benchlab lab: {} up (pid {}), serving {} and SPICE ({}) at {}spice/<spi>/; disclosure in {}",
                kind.name(),
                lab.pid,
                lab.root.display(),
                lab.spis.join(", "),
                lab.url,
                lab.disclosure.display()
            );
            if let Some(shop) = &shop {
                eprintln!(
                    "benchlab lab: the shop (docs/shop.md) at {}shop/ and {}shop/, {} gunicorn workers; its log: {}",
                    lab.url,
                    shop.tls_url,
                    shop.workers,
                    shop.app_log.display()
                );
            }
            Ok(Outcome::Completed)
        }
        LabCommand::Down(d) => {
            let labs = benchlab_lab::status(&base);
            let chosen: Vec<_> = if d.all {
                labs
            } else if let Some(name) = &d.server {
                let kind = ServerKind::parse(name).map_err(cli_error)?;
                let found: Vec<_> = labs.into_iter().filter(|(l, _)| l.server == kind).collect();
                if found.is_empty() {
                    return Err(CliError::CannotRun(format!(
                        "lab: {name} is not up (see `benchlab lab status`)"
                    )));
                }
                found
            } else {
                match labs.len() {
                    0 => return Err(CliError::CannotRun("lab: no server is up".into())),
                    1 => labs,
                    _ => {
                        let names: Vec<_> = labs.iter().map(|(l, _)| l.server.name()).collect();
                        return Err(CliError::Usage(format!(
                            "several servers are up ({}): name one, or --all",
                            names.join(", ")
                        )));
                    }
                }
            };
            for (lab, _) in &chosen {
                benchlab_lab::down(lab, d.grace).map_err(cli_error)?;
                eprintln!(
                    "benchlab lab: {} down; removed {}",
                    lab.server.name(),
                    lab.state_dir.display()
                );
            }
            Ok(Outcome::Completed)
        }
        LabCommand::Status => {
            let labs = benchlab_lab::status(&base);
            if labs.is_empty() {
                println!("no server is up (state dirs under {})", base.display());
            }
            for (lab, alive) in labs {
                println!(
                    "{}\t{}\t{}\tpid {}{}",
                    lab.server.name(),
                    lab.url,
                    lab.state_dir.display(),
                    lab.pid,
                    if alive {
                        ""
                    } else {
                        " (not running: `benchlab lab down` cleans up)"
                    }
                );
            }
            Ok(Outcome::Completed)
        }
        LabCommand::Certs(c) => {
            // A second `lab certs` into the same directory would silently
            // make a new CA, and every agent holding the old one's
            // certificates would be locked out: refuse unless asked.
            let existing: Vec<&str> = [benchlab_agent::tls::CA_CERT, benchlab_agent::tls::CA_KEY]
                .into_iter()
                .filter(|name| c.out.join(name).symlink_metadata().is_ok())
                .collect();
            if !existing.is_empty() && !c.force {
                return Err(CliError::Usage(format!(
                    "--out {}: already holds a lab CA ({}); a new one would lock out every agent and monitor \
                     holding a certificate of the old one: pass --force to replace it, or pick another --out",
                    c.out.display(),
                    existing.join(", ")
                )));
            }
            let names = if c.controller_names.is_empty() {
                vec!["localhost".to_string(), "127.0.0.1".to_string()]
            } else {
                c.controller_names
            };
            let plan = benchlab_agent::CertsPlan {
                controller_names: names.clone(),
                agents: c.agents,
            };
            let written = benchlab_agent::write_certs(&c.out, &plan).map_err(|e| match e {
                benchlab_agent::tls::TlsError::Make(e) => {
                    CliError::Usage(format!("--controller-name {}: {e}", names.join(", ")))
                }
                e => CliError::CannotRun(format!("lab certs: {e}")),
            })?;
            eprintln!(
                "benchlab lab certs: {} files in {} (a CA, the controller for {}, {} agents, a monitor); keep ca.key \
                 and the other .key files private",
                written.len(),
                c.out.display(),
                names.join(", "),
                c.agents
            );
            Ok(Outcome::Completed)
        }
        LabCommand::Profile { server } => {
            let kind = ServerKind::parse(&server).map_err(cli_error)?;
            print!("{}", Profile::default_for(kind).to_toml(kind));
            Ok(Outcome::Completed)
        }
        LabCommand::Kubernetes(k) => crate::kube_cmd::run(k),
    }
}
