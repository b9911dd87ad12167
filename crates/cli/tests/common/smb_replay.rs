//! A loadfile replayed by `benchlab run` against an smb:// target, the
//! per-operation figures of its results, and smbd's own profile counts
//! to hold them against: what the SMB2 test files share
//! (`#[path]`-included, so other test binaries do not compile it).

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

/// A suite of one mix of `clients` users replaying `loadfile` `loops`
/// times against `target` for at most `length`; its results.json.
pub fn replay(dir: &Path, target: &str, loadfile: &str, loops: u32, clients: u32, length: &str) -> Value {
    replay_thinking(dir, target, loadfile, loops, clients, length, "0s")
}

/// [`replay`] with each user's `think_time` after every operation.
pub fn replay_thinking(
    dir: &Path,
    target: &str,
    loadfile: &str,
    loops: u32,
    clients: u32,
    length: &str,
    think: &str,
) -> Value {
    std::fs::write(dir.join("load.txt"), loadfile).unwrap();
    let suite = dir.join("suite.toml");
    std::fs::write(
        &suite,
        format!(
            "name = \"smb2\"\ntarget = \"{target}\"\n[workloads.lf]\nloadfile = \"load.txt\"\nloops = {loops}\n\
             [defaults]\nramp_up = \"0s\"\nramp_down = \"0s\"\nlength = \"{length}\"\nthink_time = \"{think}\"\n[[mix]]\nclients = {clients}\n"
        ),
    )
    .unwrap();
    let out = dir.join("out");
    let _ = std::fs::remove_dir_all(&out);
    crate::common::run_suite(&suite, &out, &[])
}

/// One operation kind's count, errors and not-sent (0 when the mix has
/// none).
pub fn op(m: &Value, name: &str) -> (u64, u64, u64) {
    let class = m["classes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .cloned()
        .unwrap_or(Value::Null);
    (
        class["requests"].as_u64().unwrap_or(0),
        class["errors_total"].as_u64().unwrap_or(0),
        m["files"]["not_sent_by_operation"][name].as_u64().unwrap_or(0),
    )
}

/// smbd's SMB2 profile counters (`smb2_create_count` …) from
/// `smbstatus -P`, by command (`create`).
pub fn profile(config: &Path) -> BTreeMap<String, u64> {
    let o = std::process::Command::new("smbstatus")
        .arg("-s")
        .arg(config)
        .arg("-P")
        .output()
        .expect("smbstatus (package samba)");
    assert!(
        o.status.success(),
        "smbstatus -P: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let mut out = BTreeMap::new();
    for line in String::from_utf8_lossy(&o.stdout).lines() {
        let Some((k, v)) = line.split_once(':') else { continue };
        let Some(cmd) = k.trim().strip_prefix("smb2_").and_then(|k| k.strip_suffix("_count")) else {
            continue;
        };
        out.insert(cmd.to_string(), v.trim().parse().unwrap_or(0));
    }
    assert!(
        out.contains_key("create"),
        "no SMB2 profile in smbstatus -P: is profiling on?"
    );
    out
}

/// The profile's counts since `before`, once every session of `users`
/// has logged off (a smbd child counts a request as it serves it, so the
/// last LOGOFF is the last count; bounded wait).
pub fn profile_since(config: &Path, before: &BTreeMap<String, u64>, users: u64) -> BTreeMap<String, u64> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let now = profile(config);
        let d: BTreeMap<String, u64> = now
            .iter()
            .map(|(k, v)| (k.clone(), v - before.get(k).copied().unwrap_or(0)))
            .filter(|(_, v)| *v > 0)
            .collect();
        if d.get("logoff").copied().unwrap_or(0) >= users || Instant::now() > deadline {
            return d;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}
