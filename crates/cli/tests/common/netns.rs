//! Network namespaces a test makes for its hosts (agents, servers), on a
//! bridge in 198.18.0.0/24 — RFC 2544's benchmarking range, never a real
//! network's — removed with their links when dropped.

use std::process::Command;

/// A bridge with 198.18.0.1/24 (this namespace: the controller, and a
/// server the test starts here) and one namespace per host on it by a veth
/// pair, each with its address.
pub struct Lab {
    pub namespaces: Vec<String>,
    bridge: String,
}

impl Drop for Lab {
    fn drop(&mut self) {
        for ns in &self.namespaces {
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
        let _ = Command::new("ip").args(["link", "del", &self.bridge]).status();
    }
}

/// Runs `ip ARGS`; the error has its stderr.
pub fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip").args(args).output().map_err(|e| format!("ip: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

impl Lab {
    /// The bridge's name (its address is 198.18.0.1).
    pub fn bridge(&self) -> &str {
        &self.bridge
    }

    /// The hosts at `hosts` (addresses in 198.18.0.0/24); `tag` (two
    /// letters) names the links and namespaces, so tests of different
    /// files never share one.
    pub fn make(tag: &str, hosts: &[&str]) -> Result<Lab, String> {
        let suffix = std::process::id() % 10_000;
        let mut lab = Lab {
            namespaces: Vec::new(),
            bridge: format!("{tag}b{suffix}"),
        };
        ip(&["link", "add", &lab.bridge, "type", "bridge"])?;
        ip(&["addr", "add", "198.18.0.1/24", "dev", &lab.bridge])?;
        ip(&["link", "set", &lab.bridge, "up"])?;
        for (k, addr) in hosts.iter().enumerate() {
            let ns = format!("{tag}{suffix}h{k}");
            ip(&["netns", "add", &ns])?;
            lab.namespaces.push(ns.clone());
            let (outer, inner) = (format!("{tag}v{suffix}{k}"), format!("{tag}p{suffix}{k}"));
            ip(&["link", "add", &outer, "type", "veth", "peer", "name", &inner])?;
            ip(&["link", "set", &inner, "netns", &ns])?;
            ip(&["link", "set", &outer, "master", &lab.bridge, "up"])?;
            let cidr = format!("{addr}/24");
            ip(&["netns", "exec", &ns, "ip", "addr", "add", &cidr, "dev", &inner])?;
            ip(&["netns", "exec", &ns, "ip", "link", "set", &inner, "up"])?;
            ip(&["netns", "exec", &ns, "ip", "link", "set", "lo", "up"])?;
        }
        Ok(lab)
    }
}
