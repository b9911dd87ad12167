//! The environment a run discloses in results.json.

use crate::options::*;
use benchlab_engine::sys;
use benchlab_results::*;
use std::time::{SystemTime, UNIX_EPOCH};

pub(crate) fn environment(target: &str, opts: &RunOptions) -> Environment {
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .map(|s| s.trim().to_string())
            .unwrap_or_default()
    };
    let cpu = read("/proc/cpuinfo")
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
        .unwrap_or_default();
    Environment {
        benchlab_version: env!("CARGO_PKG_VERSION").to_string(),
        host: read("/proc/sys/kernel/hostname"),
        kernel: read("/proc/sys/kernel/osrelease"),
        cpu,
        cores: sys::usable_cpus(),
        target: target.to_string(),
        started_unix: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0),
        command: opts.command.clone(),
        time_scale: opts.time_scale,
        host_facts: Some(benchlab_results::HostFacts::gather()),
        client_cpus: opts.client_cpus.clone(),
        server: opts.server.clone(),
        cold_cache: opts.cold_cache,
        agents: opts.clients.agents(),
        cold_cache_method: opts.cold_cache.then(|| match &opts.cache_evictor {
            Some(e) => e.describe(),
            None => "sync; echo 3 > /proc/sys/vm/drop_caches (the whole machine's page cache, dentries and inodes)"
                .to_owned(),
        }),
    }
}
