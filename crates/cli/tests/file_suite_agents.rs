//! File suites on agents (issue 20): `benchlab run FILE-SUITE --agents N`
//! hands each agent a file-mix order for its clients; their users work in
//! their own `\clients\clientN` workspaces on the one target, and the
//! controller merges the agents' counts exactly into one mix with a row
//! per client.

mod common;

use common::{benchlab_bin, free_port, run_benchlab, s};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

/// A child killed (and reaped) when dropped.
struct Proc(Option<Child>);

impl Proc {
    fn wait_output(mut self) -> Output {
        self.0.take().expect("child").wait_with_output().expect("wait")
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn spawn(c: &mut Command) -> Proc {
    Proc(Some(
        c.stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn benchlab"),
    ))
}

/// Eight operations a pass in the user's own `\clients\client1` (each user
/// replays it in its own workspace): one WriteX of 100 bytes, one ReadX of
/// 60.
const LOADFILE: &str = r#"Mkdir "\clients" NT_STATUS_OK
NTCreateX "\clients\client1" 0x1 0x2 1 NT_STATUS_OK
Close 1 NT_STATUS_OK
NTCreateX "\clients\client1\a.txt" 0x40 0x2 2 NT_STATUS_OK
WriteX 2 0 100 100 NT_STATUS_OK
ReadX 2 40 60 60 NT_STATUS_OK
Close 2 NT_STATUS_OK
Unlink "\clients\client1\a.txt" 0x6 NT_STATUS_OK
"#;

fn suite(dir: &Path, target: &str, clients: u32, loops: u32) -> PathBuf {
    std::fs::write(dir.join("load.txt"), LOADFILE).unwrap();
    let t = format!(
        "name = \"files\"\ntarget = \"{target}\"\nseed = 9\n[workloads.lf]\nloadfile = \"load.txt\"\nloops = {loops}\n\
         [defaults]\nramp_up = \"0s\"\nramp_down = \"0s\"\nlength = \"3s\"\nthink_time = \"5ms\"\n\
         [[mix]]\nclients = {clients}\n"
    );
    let p = dir.join("suite.toml");
    std::fs::write(&p, t).unwrap();
    p
}

fn agent(certs: &Path, controller: &str, i: u32) -> Command {
    let mut c = Command::new(benchlab_bin());
    c.args(["agent", "--controller", controller, "--index", &i.to_string()])
        .arg("--cert")
        .arg(certs.join(format!("agent-{i}.pem")))
        .arg("--key")
        .arg(certs.join(format!("agent-{i}.key")))
        .arg("--ca")
        .arg(certs.join("ca.pem"));
    c
}

fn n(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

/// Three agents on this machine share a `file://` directory: every user's
/// operations and bytes are counted once, exactly, per client and in
/// the mix, and each client kept its own workspace.
#[test]
fn three_agents_run_a_file_suite_counted_exactly_per_client() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().join("root");
    std::fs::create_dir_all(&root).unwrap();
    let certs = d.path().join("certs");
    common::assert_success(
        "lab certs",
        &run_benchlab(&["lab", "certs", "--out", s(&certs), "--agents", "3"]),
    );
    let s_path = suite(d.path(), &format!("file://{}", root.display()), 3, 2);
    let out = d.path().join("out");
    let listen = format!("127.0.0.1:{}", free_port());
    let ctl = spawn(
        Command::new(benchlab_bin())
            .args(["run", s(&s_path), "--agents", "3", "--listen", &listen, "--tls-dir"])
            .arg(&certs)
            .arg("--out")
            .arg(&out),
    );
    let agents: Vec<Proc> = (0..3).map(|i| spawn(&mut agent(&certs, &listen, i))).collect();
    let o = ctl.wait_output();
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(o.status.success(), "{text}");
    for a in agents {
        let o = a.wait_output();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let r: Value = serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    assert_eq!(r["complete"], true);
    let m = &r["mixes"][0];
    // 8 operations and 160 bytes a pass, 2 passes, 3 users.
    assert_eq!(n(&m["requests"]), 8 * 2 * 3, "{m}");
    assert_eq!(n(&m["bytes"]), 160 * 2 * 3);
    let rows = m["client_data"].as_array().unwrap();
    let per_client: Vec<(u64, u64, u64)> = rows
        .iter()
        .map(|c| (n(&c["client"]), n(&c["requests"]), n(&c["bytes"])))
        .collect();
    assert_eq!(per_client, [(1, 16, 320), (2, 16, 320), (3, 16, 320)]);
    assert!(rows.iter().all(|c| c["lost"].is_null() && c["taken_out"] == false));
    let errors: u64 = rows.iter().map(|c| n(&c["errors_total"])).sum();
    assert_eq!(errors, n(&m["errors_total"]));
    let classes: u64 = m["classes"].as_array().unwrap().iter().map(|c| n(&c["requests"])).sum();
    assert_eq!(classes, n(&m["requests"]));
    // The seconds the controller merged live add up to the mix.
    let seconds: u64 = m["per_second"].as_array().unwrap().iter().map(|s| n(&s["requests"])).sum();
    assert_eq!(seconds, n(&m["requests"]));
    for k in 1..=3 {
        assert!(root.join(format!("clients/client{k}")).is_dir(), "client{k}'s workspace");
    }
    assert!(!root.join("clients/client4").exists());
    let agents = r["environment"]["agents"].as_array().unwrap();
    assert_eq!(agents.len(), 3, "{}", r["environment"]["agents"]);
}
