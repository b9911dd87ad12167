//! A loadfile replayed by `benchlab run` against an smb:// target, and
//! the per-operation figures of its results: what the SMB2 test files
//! share (`#[path]`-included, so other test binaries do not compile it).

use serde_json::Value;
use std::path::Path;

/// A suite of one mix of `clients` users replaying `loadfile` `loops`
/// times against `target` for at most `length`; its results.json.
pub fn replay(dir: &Path, target: &str, loadfile: &str, loops: u32, clients: u32, length: &str) -> Value {
    std::fs::write(dir.join("load.txt"), loadfile).unwrap();
    let suite = dir.join("suite.toml");
    std::fs::write(
        &suite,
        format!(
            "name = \"smb2\"\ntarget = \"{target}\"\n[workloads.lf]\nloadfile = \"load.txt\"\nloops = {loops}\n\
             [defaults]\nramp_up = \"0s\"\nramp_down = \"0s\"\nlength = \"{length}\"\n[[mix]]\nclients = {clients}\n"
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
