//! `benchlab serve`: flags → `benchlab_server::Config` → serve until Ctrl-C.

use crate::{CliError, Outcome};
use benchlab_server::{Config, Server};
use clap::Args;
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Args)]
#[command(after_help = "\
URLs: /<file path> serves the file (a directory: its index.html); the SPICE \
programs (docs/spice.md, \"URL layout\") return exactly the same bytes:
  /spice/inproc/adrot/<file path>            ad rotation: reads query, Cookie, User-Agent; \
picks an ad (header X-Ad)
  /spice/inproc/session/<file path>          session: locked counter + log line
  /spice/inproc/sleep/<file path>?ms=3000    slow back end: waits ms (default 3000)

Answers 400 to an HTTP/1.1 request without a Host header field and to any \
request with two (RFC 9112 section 3.2), 403 to a file a symbolic link leads \
to outside --root (unless --follow-outside-symlinks), 408 to a request head \
not complete within --header-timeout; each is a line in the access log.

Session log format: line 1 is the counter (12 digits, zero-padded), then one \
line per session request: ISO-8601 UTC time (YYYY-MM-DDTHH:MM:SSZ), process \
id, file path, separated by tabs. Writers hold flock(2) on the file.

The first line printed (stdout) is `listening on http://ADDR/`. Ctrl-C \
(SIGINT) or SIGTERM stops the server gracefully: requests being answered finish (up to 5 s), logs are \
flushed. Exit status: 0 stopped; 1 could not listen or start; 2 bad usage.")]
pub struct ServeArgs {
    /// Directory whose files are served (a file set's root).
    #[arg(long, value_name = "DIR")]
    root: PathBuf,

    /// Address and port to listen on, IP:PORT (port 0: any free port).
    #[arg(long, value_name = "IP:PORT", default_value = benchlab_server::DEFAULT_LISTEN, value_parser = listen_addr)]
    listen: SocketAddr,

    /// Threads serving connections [default: the number of cores].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=1024))]
    workers: Option<u16>,

    /// Append a Common Log Format line per request to this file (buffered,
    /// flushed every second and at exit) [default: no access log].
    #[arg(long, value_name = "PATH")]
    access_log: Option<PathBuf>,

    /// The session program's log [default: spice-session.log in the parent
    /// directory of --root, beside the file set].
    #[arg(long, value_name = "PATH")]
    session_log: Option<PathBuf>,

    /// Keep files up to this many bytes in memory after their first request;
    /// 0 reads every file per request (larger files are sent with sendfile).
    #[arg(long, value_name = "BYTES", default_value_t = benchlab_server::DEFAULT_CACHE_MAX_FILE)]
    cache_max_file: u64,

    /// Close a keep-alive connection idle this long.
    #[arg(long, value_name = "DUR", default_value = "75s", value_parser = crate::args::duration)]
    keepalive_timeout: Duration,

    /// A request head must arrive whole within this time of its first byte;
    /// else 408 and the connection is closed (a client trickling its head,
    /// slowloris, holds no connection for long).
    #[arg(long, value_name = "DUR", default_value = "10s", value_parser = positive_duration)]
    header_timeout: Duration,

    /// Serve files that symbolic links in --root lead to outside it [default:
    /// refused with 403; links that stay inside --root are always followed].
    #[arg(long)]
    follow_outside_symlinks: bool,
}

/// A duration above zero (a zero header timeout would cut off every
/// request that arrives in two pieces).
fn positive_duration(s: &str) -> Result<Duration, String> {
    match crate::args::duration(s).map_err(|e| e.to_string())? {
        d if d.is_zero() => Err("expected a duration above 0, e.g. 10s".to_string()),
        d => Ok(d),
    }
}

fn listen_addr(s: &str) -> Result<SocketAddr, String> {
    s.parse()
        .map_err(|_| format!("'{s}' is not IP:PORT (expected e.g. 127.0.0.1:8080, [::1]:8080, 0.0.0.0:80)"))
}

pub fn run(a: ServeArgs) -> Result<Outcome, CliError> {
    let mut config = Config::new(a.root);
    config.listen = a.listen;
    config.workers = a.workers.map_or(0, usize::from);
    config.access_log = a.access_log;
    config.session_log = a.session_log;
    config.cache_max_file = a.cache_max_file;
    config.keepalive_timeout = a.keepalive_timeout;
    config.header_timeout = a.header_timeout;
    config.follow_outside_symlinks = a.follow_outside_symlinks;
    let mut server = Server::bind(config).map_err(|e| CliError::of("", e))?;
    if let Err(e) = server.stop_on_signals() {
        eprintln!("benchlab serve: Ctrl-C and SIGTERM will not stop gracefully (logs may not be flushed): {e}");
    }
    // Tests and scripts read the address (port 0 resolved) from this line.
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "listening on http://{}/", server.local_addr());
    let _ = out.flush();
    drop(out);
    eprintln!(
        "benchlab serve: {}; session log {}; Ctrl-C stops",
        benchlab_format::plural(server.workers() as u64, "worker thread", "worker threads"),
        server.session_log().display()
    );
    server.run().map_err(|e| CliError::CannotRun(e.to_string()))?;
    eprintln!("benchlab serve: stopped");
    Ok(Outcome::Completed)
}
