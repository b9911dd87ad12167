//! A server's tuning, as a small TOML file a user reads and edits.
//!
//! Every server gets the same few settings, named alike, so that a profile
//! written for nginx reads the same as one for Apache; each server's
//! configuration generator translates them into its own directives. A
//! server that has no equivalent for a setting does not list it in its
//! default profile, and a profile that sets it anyway is refused (a silent
//! no-op would make a disclosed result lie about the tuning it ran with).

use crate::{Error, ServerKind};
use serde::Deserialize;
use std::path::Path;

/// The tuning of one server under test. `None`: the server's default.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// Worker processes (or threads, for benchlab serve); 0 = one per core.
    pub workers: Option<u32>,
    /// Persistent connections (HTTP/1.1 keep-alive) on or off.
    pub keepalive: Option<bool>,
    /// Seconds an idle persistent connection is kept.
    pub keepalive_timeout_s: Option<u32>,
    /// Requests one persistent connection may carry.
    pub keepalive_requests: Option<u32>,
    /// Static files sent with sendfile(2) rather than read and written.
    pub sendfile: Option<bool>,
    /// An access log line per request (in the state dir) or none.
    pub access_log: Option<bool>,
    /// The listen socket's backlog (capped by net.core.somaxconn).
    pub backlog: Option<u32>,
}

/// Settings every profile may name, in the order a default profile lists
/// them, with the comment that explains each.
const SETTINGS: &[(&str, &str)] = &[
    ("workers", ""),
    ("keepalive", "persistent HTTP/1.1 connections on (true) or off (false)"),
    (
        "keepalive_timeout_s",
        "seconds an idle persistent connection stays open",
    ),
    ("keepalive_requests", "requests one persistent connection may carry"),
    (
        "sendfile",
        "send static files with sendfile(2) (true) or read+write (false)",
    ),
    (
        "access_log",
        "write an access log line per request (state dir, access.log)",
    ),
    (
        "backlog",
        "listen backlog: connections queued before accept (capped by net.core.somaxconn)",
    ),
];

/// The largest profile file read: a profile is a few lines of settings;
/// a wrong path (`/dev/zero`, a log) is refused at this size.
pub const MAX_PROFILE_BYTES: u64 = 1 << 20;

impl Profile {
    /// The defaults benchlab runs `kind` with: every setting it supports,
    /// written out.
    pub fn default_for(kind: ServerKind) -> Profile {
        let all = Profile {
            workers: Some(match kind {
                // Apache prefork: one process per connection, so a worker
                // count sized for a benchmark's connections, not cores.
                ServerKind::ApachePrefork => 256,
                ServerKind::Lighttpd => 1,
                _ => 0,
            }),
            keepalive: Some(true),
            keepalive_timeout_s: Some(75),
            keepalive_requests: Some(100_000),
            sendfile: Some(true),
            access_log: Some(false),
            backlog: Some(511),
        };
        let mut p = Profile {
            workers: None,
            keepalive: None,
            keepalive_timeout_s: None,
            keepalive_requests: None,
            sendfile: None,
            access_log: None,
            backlog: None,
        };
        for name in kind.settings() {
            p.copy_setting(&all, name);
        }
        p
    }

    fn copy_setting(&mut self, from: &Profile, name: &str) {
        match name {
            "workers" => self.workers = from.workers,
            "keepalive" => self.keepalive = from.keepalive,
            "keepalive_timeout_s" => self.keepalive_timeout_s = from.keepalive_timeout_s,
            "keepalive_requests" => self.keepalive_requests = from.keepalive_requests,
            "sendfile" => self.sendfile = from.sendfile,
            "access_log" => self.access_log = from.access_log,
            "backlog" => self.backlog = from.backlog,
            _ => {}
        }
    }

    fn is_set(&self, name: &str) -> bool {
        match name {
            "workers" => self.workers.is_some(),
            "keepalive" => self.keepalive.is_some(),
            "keepalive_timeout_s" => self.keepalive_timeout_s.is_some(),
            "keepalive_requests" => self.keepalive_requests.is_some(),
            "sendfile" => self.sendfile.is_some(),
            "access_log" => self.access_log.is_some(),
            "backlog" => self.backlog.is_some(),
            _ => false,
        }
    }

    /// The profile as TOML, one commented line per setting, for
    /// `benchlab lab profile SERVER`.
    pub fn to_toml(&self, kind: ServerKind) -> String {
        let mut s = format!(
            "# benchlab lab profile for {name}: edit and pass with `benchlab lab up {name} --profile FILE`.\n\
             # A setting left out takes this default; settings not listed here do not exist for {name}.\n",
            name = kind.name()
        );
        for (name, help) in SETTINGS {
            let value = match *name {
                "workers" => self.workers.map(|v| v.to_string()),
                "keepalive" => self.keepalive.map(|v| v.to_string()),
                "keepalive_timeout_s" => self.keepalive_timeout_s.map(|v| v.to_string()),
                "keepalive_requests" => self.keepalive_requests.map(|v| v.to_string()),
                "sendfile" => self.sendfile.map(|v| v.to_string()),
                "access_log" => self.access_log.map(|v| v.to_string()),
                "backlog" => self.backlog.map(|v| v.to_string()),
                _ => None,
            };
            let help = if *name == "workers" { workers_help(kind) } else { help };
            if let Some(v) = value {
                s.push_str(&format!("\n# {help}\n{name} = {v}\n"));
            }
        }
        s
    }

    /// Reads a profile file for `kind`: settings it leaves out take the
    /// defaults; a syntax error, an unknown setting, a setting `kind` has
    /// not, or a value out of range is an error naming file and line.
    pub fn read(path: &Path, kind: ServerKind) -> Result<Profile, Error> {
        let text = benchlab_input::read_bounded_text(path, "profile", MAX_PROFILE_BYTES).map_err(|e| Error::Io {
            what: format!("read profile {}", path.display()),
            source: e.into(),
        })?;
        Profile::parse(&text, &path.display().to_string(), kind)
    }

    /// [`Profile::read`] on text; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str, kind: ServerKind) -> Result<Profile, Error> {
        let bad = |line: usize, message: String| Error::Profile {
            file: origin.to_owned(),
            line,
            message,
        };
        let given: Profile = toml::from_str(text).map_err(|e| {
            let line = e.span().map_or(1, |sp| line_of(text, sp.start));
            bad(line, e.message().to_owned())
        })?;
        let supported = kind.settings();
        for (name, _) in SETTINGS {
            if given.is_set(name) && !supported.contains(name) {
                return Err(bad(
                    key_line(text, name),
                    format!(
                        "`{name}` is not a setting of {} (it has: {})",
                        kind.name(),
                        supported.join(", ")
                    ),
                ));
            }
        }
        if given.backlog.is_some_and(|b| b == 0 || b > 65_535) {
            return Err(bad(
                key_line(text, "backlog"),
                "backlog must be between 1 and 65535".into(),
            ));
        }
        if given.workers.is_some_and(|w| w > 4096) {
            return Err(bad(key_line(text, "workers"), "workers must be at most 4096".into()));
        }
        let mut p = Profile::default_for(kind);
        for name in supported {
            if given.is_set(name) {
                p.copy_setting(&given, name);
            }
        }
        Ok(p)
    }

    /// Worker count with 0 resolved to the number of cores.
    pub fn workers_resolved(&self) -> u32 {
        match self.workers {
            Some(0) | None => std::thread::available_parallelism().map_or(1, |n| n.get() as u32),
            Some(n) => n,
        }
    }
}

/// What `workers` means for `kind`.
fn workers_help(kind: ServerKind) -> &'static str {
    match kind {
        ServerKind::Nginx | ServerKind::Shop => "nginx's worker processes (worker_processes); 0 = one per core",
        ServerKind::ApacheEvent => {
            "processes of 25 threads each (ServerLimit; MaxRequestWorkers = 25 x this); 0 = one per core"
        }
        ServerKind::ApachePrefork => "processes, one connection each (MaxRequestWorkers)",
        ServerKind::Lighttpd => "processes (server.max-worker; 1 = lighttpd's single process); 0 = one per core",
        ServerKind::Benchlab => "threads serving connections (--workers); 0 = one per core",
        ServerKind::Tomcat => "request threads (the connector's maxThreads); 0 = Tomcat's default, 200",
        ServerKind::Jetty => "request threads (jetty.threadPool.maxThreads); 0 = Jetty's default, 200",
    }
}

/// 1-based line of byte offset `at` in `text`.
fn line_of(text: &str, at: usize) -> usize {
    text[..at.min(text.len())].matches('\n').count() + 1
}

/// 1-based line where `key` is assigned (1 when not found).
fn key_line(text: &str, key: &str) -> usize {
    text.lines()
        .position(|l| {
            let l = l.trim_start();
            l.strip_prefix(key)
                .is_some_and(|rest| rest.trim_start().starts_with('='))
        })
        .map_or(1, |i| i + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `--profile /dev/zero` is refused at the bound, not read for ever.
    #[test]
    fn an_endless_profile_is_refused_at_the_bound() {
        let e = Profile::read(Path::new("/dev/zero"), ServerKind::ALL[0]).unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("/dev/zero") && msg.contains("larger than 1 MiB"), "{msg}");
    }

    #[test]
    fn default_profile_round_trips_for_every_server() {
        for kind in ServerKind::ALL.iter().chain(ServerKind::CONTAINERS) {
            let p = Profile::default_for(*kind);
            let text = p.to_toml(*kind);
            assert_eq!(Profile::parse(&text, "p.toml", *kind).unwrap(), p, "{}", kind.name());
        }
    }

    #[test]
    fn errors_name_file_and_line() {
        let e = Profile::parse("workers = 2\nkeepalive = maybe\n", "p.toml", ServerKind::Nginx).unwrap_err();
        assert!(e.to_string().starts_with("p.toml:2: "), "{e}");
        let e = Profile::parse("workers = 2\n\nworkerz = 3\n", "p.toml", ServerKind::Nginx).unwrap_err();
        assert!(e.to_string().starts_with("p.toml:3: "), "{e}");
        let e = Profile::parse("backlog = 4294967295\n", "p.toml", ServerKind::Nginx).unwrap_err();
        assert_eq!(e.to_string(), "p.toml:1: backlog must be between 1 and 65535");
        let e = Profile::parse("workers = 2\nbacklog = 100\n", "p.toml", ServerKind::Benchlab).unwrap_err();
        assert_eq!(
            e.to_string(),
            "p.toml:2: `backlog` is not a setting of benchlab (it has: workers, keepalive_timeout_s, access_log)"
        );
    }

    #[test]
    fn left_out_settings_take_the_defaults() {
        let p = Profile::parse("keepalive = false\n", "p.toml", ServerKind::Nginx).unwrap();
        assert_eq!(p.keepalive, Some(false));
        assert_eq!(p.backlog, Some(511));
    }
}
