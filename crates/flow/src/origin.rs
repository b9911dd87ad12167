//! A user's origin as its cookies see it: the host without a port, and
//! whether requests go over https (Secure cookies). Its own module, so the
//! flow's steps (their own `target`) and the user's walk both use it.

/// Where a user's requests go: the workload's server.
#[derive(Debug, Clone)]
pub struct Origin {
    /// The host as cookies see it: lower case, no port.
    pub host: String,
    pub https: bool,
}

impl Origin {
    /// The origin of `host` (a URL's authority: a port, an IPv6 address's
    /// brackets are dropped, as cookies never see them).
    pub fn new(host: &str, https: bool) -> Origin {
        let host = match host.strip_prefix('[') {
            Some(v6) => v6.split(']').next().unwrap_or(v6),
            None => host.rsplit_once(':').map_or(host, |(h, port)| {
                if port.bytes().all(|b| b.is_ascii_digit()) && !h.contains(':') {
                    h
                } else {
                    host
                }
            }),
        };
        Origin {
            host: host.to_ascii_lowercase(),
            https,
        }
    }
}
