//! The lab around a run: a lab server as its target and disclosure
//! (`--lab`), the load generator pinned off the server's CPUs
//! (`--client-cpus`), and the page cache made cold before each mix
//! (`--cold-cache`). `benchlab http` shares the disclosure and the pinning.

use crate::CliError;
use std::sync::Arc;

/// The URL of the lab server `name` (`benchlab lab up NAME`), or why not.
pub(crate) fn lab_target(name: &str) -> Result<String, CliError> {
    let kind = benchlab_lab::ServerKind::parse(name).map_err(|e| CliError::Usage(format!("--lab: {e}")))?;
    match benchlab_lab::status(&benchlab_lab::default_base())
        .into_iter()
        .find(|(l, _)| l.server == kind)
    {
        Some((l, true)) => Ok(l.url),
        Some((_, false)) => Err(CliError::CannotRun(format!(
            "--lab {name}: the lab's {name} is not running (`benchlab lab down {name}`, then `benchlab lab up {name}`)"
        ))),
        None => Err(CliError::CannotRun(format!(
            "--lab {name}: {name} is not up; start it with `benchlab lab up {name}`"
        ))),
    }
}

/// The disclosure of the running lab server whose URL is `target`, if any.
/// With `--lab` (`required`) an unreadable disclosure is an error; a target
/// that merely equals a lab server's URL gets a warning instead.
pub(crate) fn lab_disclosure(
    target: &str,
    required: bool,
) -> Result<Option<benchlab_results::ServerDisclosure>, CliError> {
    let Some((lab, _)) = benchlab_lab::status(&benchlab_lab::default_base())
        .into_iter()
        .find(|(l, alive)| *alive && l.serves(target))
    else {
        return Ok(None);
    };
    match lab.read_disclosure() {
        Ok(d) => Ok(Some(d.server)),
        Err(e) if required => Err(CliError::CannotRun(format!("--lab: {e}"))),
        Err(e) => {
            eprintln!(
                "benchlab: warning: the target is the lab's {}, but its disclosure is unreadable: {e}",
                lab.server.name()
            );
            Ok(None)
        }
    }
}

/// `--client-cpus LIST`: pins this thread — and so every worker thread the
/// run spawns after it — to LIST, after refusing a set that shares a CPU
/// with the lab server's (the load generator would take the server's
/// cycles, and the result would measure both). Returns the CPUs pinned.
pub(crate) fn pin_clients(
    list: Option<&str>,
    allow_shared: bool,
    server: Option<&benchlab_results::ServerDisclosure>,
) -> Result<Vec<usize>, CliError> {
    let Some(list) = list else {
        return Ok(Vec::new());
    };
    let cpus = benchlab_lab::process::parse_cpu_set("--client-cpus", list).map_err(|e| CliError::of("", e))?;
    if let Some(s) = server {
        let shared: Vec<String> = cpus
            .iter()
            .filter(|c| s.cpus.contains(c))
            .map(|c| c.to_string())
            .collect();
        if !shared.is_empty() && !allow_shared {
            return Err(CliError::Usage(format!(
                "--client-cpus {list}: CPU {} is also the lab's {} CPU (`lab up --cpus {}`): client and server would                  share a core and the result would measure both; pick other CPUs, or add --allow-shared-cpus",
                shared.join(","),
                s.server,
                cpus_text(&s.cpus)
            )));
        }
    }
    benchlab_lab::process::pin_current_thread(&cpus)
        .map_err(|e| CliError::CannotRun(format!("--client-cpus {list}: cannot pin the load generator: {e}")))?;
    Ok(cpus)
}

/// `--cold-cache` needs root and a writable /proc/sys/vm/drop_caches: say
/// so before any request rather than after the first mix.
fn check_cold_cache() -> Result<(), CliError> {
    match std::fs::OpenOptions::new().write(true).open("/proc/sys/vm/drop_caches") {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => Err(CliError::Usage(
            "--cold-cache drops the page cache (/proc/sys/vm/drop_caches), which only root may do: run as root, \
             or leave --cold-cache out"
                .into(),
        )),
        Err(e) => Err(CliError::CannotRun(format!(
            "--cold-cache: /proc/sys/vm/drop_caches is not writable here ({e}; a container's /proc/sys is often \
             read-only)"
        ))),
    }
}

/// `--cold-cache` without root (or with BENCHLAB_COLD_CACHE=cgroup, how
/// the tests reach this path as root): the lab server in a memory cgroup
/// of its own, evicted before each mix (`benchlab_lab::cache`). It needs
/// the lab server's processes, so a run against another server is refused.
#[derive(Debug)]
struct CgroupEvictor(benchlab_lab::cache::CgroupCache);

impl benchlab_controller::CacheEvictor for CgroupEvictor {
    fn evict(&self) -> Result<String, benchlab_controller::ColdCacheError> {
        self.0
            .evict()
            .map_err(|e| benchlab_controller::ColdCacheError(e.to_string()))
    }
    fn describe(&self) -> String {
        self.0.describe()
    }
}

pub(crate) fn cold_cache_evictor(
    server: Option<&benchlab_results::ServerDisclosure>,
) -> Result<Option<Arc<dyn benchlab_controller::CacheEvictor>>, CliError> {
    let root = benchlab_lab::cache::is_root();
    let forced = std::env::var("BENCHLAB_COLD_CACHE").is_ok_and(|v| v == "cgroup");
    if root && !forced {
        check_cold_cache()?;
        return Ok(None);
    }
    let Some(server) = server else {
        return Err(CliError::Usage(
            "--cold-cache without root evicts the page cache of a server benchlab started (`benchlab lab up`, \
             moved into a memory cgroup), and this target is none: add --lab SERVER, or run as root (the whole \
             machine's page cache is then dropped)"
                .into(),
        ));
    };
    let lab = benchlab_lab::status(&benchlab_lab::default_base())
        .into_iter()
        .find(|(l, alive)| *alive && l.server.name() == server.server)
        .map(|(l, _)| l)
        .ok_or_else(|| CliError::CannotRun(format!("--cold-cache: the lab's {} is not running", server.server)))?;
    let cache = benchlab_lab::cache::CgroupCache::create(&lab).map_err(|e| CliError::CannotRun(e.to_string()))?;
    Ok(Some(Arc::new(CgroupEvictor(cache))))
}

pub(crate) fn cpus_text(cpus: &[usize]) -> String {
    cpus.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(",")
}
