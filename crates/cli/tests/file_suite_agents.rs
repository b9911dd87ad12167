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

/// `benchlab run SUITE --agents N` on a free loopback port, its results in
/// `out`; the address the agents dial.
fn controller(suite: &Path, agents: u32, certs: &Path, out: &Path) -> (Proc, String) {
    let listen = format!("127.0.0.1:{}", free_port());
    let ctl = spawn(
        Command::new(benchlab_bin())
            .args([
                "run",
                s(suite),
                "--agents",
                &agents.to_string(),
                "--listen",
                &listen,
                "--tls-dir",
            ])
            .arg(certs)
            .arg("--out")
            .arg(out),
    );
    (ctl, listen)
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
    let (ctl, listen) = controller(&s_path, 3, &certs, &out);
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
    let seconds: u64 = m["per_second"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| n(&s["requests"]))
        .sum();
    assert_eq!(seconds, n(&m["requests"]));
    for k in 1..=3 {
        assert!(
            root.join(format!("clients/client{k}")).is_dir(),
            "client{k}'s workspace"
        );
    }
    assert!(!root.join("clients/client4").exists());
    let agents = r["environment"]["agents"].as_array().unwrap();
    assert_eq!(agents.len(), 3, "{}", r["environment"]["agents"]);
    // Every file client noted its first operation's send, put on the
    // controller's clock with its agent's offset: the mix's start spread.
    let sp = &m["start_spread"];
    assert_eq!(sp["clients"], 3, "{m}");
    let (min, max) = (sp["min_us"].as_i64().unwrap(), sp["max_us"].as_i64().unwrap());
    assert_eq!(n(&sp["spread_us"]), max.abs_diff(min), "{sp}");
    assert!((1..=3).contains(&n(&sp["latest_client"])), "{sp}");
    assert!(n(&sp["clock_uncertainty_us"]) > 0, "{sp}");
    assert!(text.contains("mix 1: start spread "), "{text}");
}

/// Per client address (`full_audit:prefix = %I`), how often each VFS
/// operation succeeded: the `op` field, or `op:file` / `op:dir` for
/// `create_file` (what it created or opened) and `unlinkat:b.txt` for the
/// files the loadfile unlinks.
fn audit_counts(log_dir: &Path) -> std::collections::BTreeMap<String, std::collections::BTreeMap<String, u64>> {
    let mut by_host: std::collections::BTreeMap<String, std::collections::BTreeMap<String, u64>> = Default::default();
    for e in std::fs::read_dir(log_dir).unwrap().flatten() {
        let Ok(text) = std::fs::read_to_string(e.path()) else {
            continue;
        };
        for line in text.lines() {
            let f: Vec<&str> = line.trim().split('|').collect();
            if f.len() < 4 || f[2] != "ok" {
                continue;
            }
            let op = match f[1] {
                "create_file" if f.len() >= 6 && f[5] == "create" => format!("create_file:{}", f[4]),
                "unlinkat" if line.ends_with("/b.txt") => "unlinkat:b.txt".to_string(),
                op => op.to_string(),
            };
            *by_host.entry(f[0].to_string()).or_default().entry(op).or_default() += 1;
        }
    }
    by_host
}

/// NetBench on three agents, each in a network namespace of its own with
/// an address of 198.18.0.0/15, against one Samba on the host: each
/// agent's operations and bytes agree exactly with what Samba's full_audit
/// log says that host did, and the per-client rows add up to the mix.
#[test]
fn three_agents_in_namespaces_agree_with_sambas_full_audit_log() {
    let agents_at = ["198.18.0.11", "198.18.0.12", "198.18.0.13"];
    let net = match common::netns::Lab::make("bf", &agents_at) {
        Ok(l) => l,
        Err(why) if why.contains("Operation not permitted") || why.contains("must be root") => {
            eprintln!("skipped: network namespaces need privilege ({why})");
            return;
        }
        Err(why) => panic!("cannot make the network namespaces: {why}"),
    };
    // Every create, write, read, rename, unlink and mkdir that succeeded,
    // prefixed with the client's address, into smbd's own log.
    let smbd = benchlab_fileserver::smbd::start_smbd_with(
        " interfaces = 127.0.0.1 198.18.0.1\n vfs objects = full_audit\n full_audit:prefix = %I\n\
         full_audit:success = create_file pwrite_send pread_send renameat unlinkat mkdirat\n\
         full_audit:failure = none\n full_audit:syslog = false\n log level = 0 full_audit:1\n",
    )
    .expect("smbd with full_audit (packages samba and samba-vfs-modules)");
    std::fs::create_dir_all(smbd.share.join("clients")).unwrap();
    let log_dir = smbd.config().parent().unwrap().join("log");
    let d = tempfile::tempdir().unwrap();
    // A NetBench-like pass in the user's own workspace; no fill (a
    // loadfile), so the log holds the mix's operations only.
    std::fs::write(
        d.path().join("load.txt"),
        "Mkdir \"\\clients\\client1\" NT_STATUS_OK\n\
         NTCreateX \"\\clients\\client1\\a.txt\" 0x40 0x2 2 NT_STATUS_OK\n\
         WriteX 2 0 100 100 NT_STATUS_OK\n\
         ReadX 2 40 60 60 NT_STATUS_OK\n\
         Close 2 NT_STATUS_OK\n\
         Rename \"\\clients\\client1\\a.txt\" \"\\clients\\client1\\b.txt\" NT_STATUS_OK\n\
         Unlink \"\\clients\\client1\\b.txt\" 0x6 NT_STATUS_OK\n\
         Deltree \"\\clients\\client1\" NT_STATUS_OK\n",
    )
    .unwrap();
    let loops = 3;
    let t = format!(
        "name = \"netbench\"\ntarget = \"smb://198.18.0.1:{}/bench\"\nseed = 4\n[workloads.nb]\nloadfile = \"load.txt\"\n\
         loops = {loops}\n[defaults]\nramp_up = \"0s\"\nramp_down = \"0s\"\nlength = \"5s\"\n[[mix]]\nclients = 3\n",
        smbd.port
    );
    let suite = d.path().join("suite.toml");
    std::fs::write(&suite, t).unwrap();
    let certs = d.path().join("certs");
    common::assert_success(
        "lab certs",
        &run_benchlab(&[
            "lab",
            "certs",
            "--out",
            s(&certs),
            "--agents",
            "3",
            "--controller-name",
            "198.18.0.1",
        ]),
    );
    let out = d.path().join("out");
    let listen = format!("198.18.0.1:{}", free_port());
    let ctl = spawn(
        Command::new(benchlab_bin())
            .args(["run", s(&suite), "--agents", "3", "--listen", &listen, "--tls-dir"])
            .arg(&certs)
            .arg("--out")
            .arg(&out),
    );
    let agents: Vec<Proc> = (0..3)
        .map(|i| {
            let mut c = Command::new("ip");
            c.args([
                "netns",
                "exec",
                &net.namespaces[i],
                benchlab_bin(),
                "agent",
                "--controller",
                &listen,
            ])
            .args(["--index", &i.to_string()])
            .arg("--cert")
            .arg(certs.join(format!("agent-{i}.pem")))
            .arg("--key")
            .arg(certs.join(format!("agent-{i}.key")))
            .arg("--ca")
            .arg(certs.join("ca.pem"));
            spawn(&mut c)
        })
        .collect();
    let o = ctl.wait_output();
    assert!(
        o.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    for a in agents {
        let o = a.wait_output();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let r: Value = serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    let m = &r["mixes"][0];
    assert_eq!(n(&m["errors_total"]), 0, "{m}");
    let audit = audit_counts(&log_dir);
    let rows = m["client_data"].as_array().unwrap();
    assert_eq!(rows.len(), 3);
    // Agent i runs client i + 1, from its own address.
    for (i, addr) in agents_at.iter().enumerate() {
        let a = audit
            .get(*addr)
            .unwrap_or_else(|| panic!("nothing from {addr} in the log: {audit:?}"));
        let count = |op: &str| a.get(op).copied().unwrap_or(0);
        // Every operation is one VFS call: Mkdir a mkdirat, NTCreateX a
        // created file, WriteX a pwrite, ReadX a pread, Rename a renameat,
        // Unlink an unlinkat of b.txt, Deltree the rmdir of the workspace
        // (an unlinkat of the directory).
        let passes = count("mkdirat");
        assert_eq!(passes, loops, "{addr}: {a:?}");
        for op in [
            "create_file:file",
            "pwrite_send",
            "pread_send",
            "renameat",
            "unlinkat:b.txt",
        ] {
            assert_eq!(count(op), passes, "{addr} {op}: {a:?}");
        }
        assert_eq!(count("unlinkat"), passes, "{addr}: the workspace's rmdir: {a:?}");
        let row = &rows[i];
        assert_eq!(n(&row["client"]), i as u64 + 1);
        // Mkdir, NTCreateX, WriteX, ReadX, Rename, Unlink, Deltree seen by
        // Samba, and the Close of each pass: 8 a pass.
        assert_eq!(n(&row["requests"]), 8 * passes, "{row}");
        // Each pwrite wrote 100 bytes, each pread read 60.
        assert_eq!(n(&row["bytes"]), 100 * count("pwrite_send") + 60 * count("pread_send"));
    }
    // Nothing reached Samba from anywhere else during the mix.
    assert_eq!(
        audit.keys().filter(|k| !agents_at.contains(&k.as_str())).count(),
        0,
        "{audit:?}"
    );
    for key in ["requests", "bytes", "errors_total"] {
        let sum: u64 = rows.iter().map(|c| n(&c[key])).sum();
        assert_eq!(sum, n(&m[key]), "{key}");
    }
    let class = |name: &str| {
        m["classes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .map_or(0, |c| n(&c["requests"]))
    };
    let all = |op: &str| audit.values().map(|a| a.get(op).copied().unwrap_or(0)).sum::<u64>();
    assert_eq!(class("WriteX"), all("pwrite_send"));
    assert_eq!(class("ReadX"), all("pread_send"));
    assert_eq!(class("Rename"), all("renameat"));
    assert_eq!(class("Mkdir"), all("mkdirat"));
    assert_eq!(class("NTCreateX"), all("create_file:file"));
}

/// An agent killed mid-mix: its client keeps its row, marked lost and out
/// of the mix; the mix is the other client's alone, and the run completes.
#[test]
fn an_agent_killed_mid_file_mix_is_kept_apart_and_the_run_completes() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().join("root");
    std::fs::create_dir_all(&root).unwrap();
    let certs = d.path().join("certs");
    common::assert_success(
        "lab certs",
        &run_benchlab(&["lab", "certs", "--out", s(&certs), "--agents", "2"]),
    );
    let t = format!(
        "name = \"files\"\ntarget = \"file://{}\"\n[workloads.lf]\nloadfile = \"load.txt\"\n\
         [defaults]\nramp_up = \"0s\"\nramp_down = \"0s\"\nlength = \"6s\"\nthink_time = \"5ms\"\n[[mix]]\nclients = 2\n",
        root.display()
    );
    std::fs::write(d.path().join("load.txt"), LOADFILE).unwrap();
    let s_path = d.path().join("suite.toml");
    std::fs::write(&s_path, t).unwrap();
    let out = d.path().join("out");
    let (ctl, listen) = controller(&s_path, 2, &certs, &out);
    let a0 = spawn(&mut agent(&certs, &listen, 0));
    let a1 = spawn(&mut agent(&certs, &listen, 1));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !root.join("clients/client2").exists() {
        assert!(std::time::Instant::now() < deadline, "client 2 never started");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(500));
    let pid = a1.0.as_ref().expect("agent 1").id() as i32;
    // SAFETY: kill(2) on a pid this test started and still holds.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    let o = ctl.wait_output();
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{stderr}");
    assert!(stderr.contains("agent 1 (") && stderr.contains("lost"), "{stderr}");
    assert!(a0.wait_output().status.success());
    let r: Value = serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    let m = &r["mixes"][0];
    let rows = m["client_data"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!((n(&rows[1]["client"]), &rows[1]["taken_out"]), (2, &Value::Bool(true)));
    assert!(
        rows[1]["lost"].as_str().is_some_and(|w| w.contains("agent 1")),
        "{}",
        rows[1]
    );
    assert!(rows[0]["lost"].is_null());
    assert!(n(&rows[0]["requests"]) > 0);
    assert_eq!(
        n(&m["requests"]),
        n(&rows[0]["requests"]),
        "the lost client is out of the mix"
    );
    assert_eq!(n(&m["clients_participating"]), 1);
    assert!(
        m["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().starts_with("client 2 was lost")),
        "{}",
        m["warnings"]
    );
    assert!(
        r["environment"]["agents"][1]["lost"].is_string(),
        "{}",
        r["environment"]["agents"]
    );
}

/// `--monitors 1` with a file suite on an agent: the remote monitor on
/// the file server's host (watching every smbd) feeds the mix, which
/// keeps that host's seconds, smbd's CPU and a verdict.
#[test]
fn a_remote_monitor_judges_a_file_mix_run_on_an_agent() {
    let smbd = benchlab_fileserver::smbd::start_smbd().expect("smbd (package samba)");
    let d = tempfile::tempdir().unwrap();
    let certs = d.path().join("certs");
    common::assert_success(
        "lab certs",
        &run_benchlab(&["lab", "certs", "--out", s(&certs), "--agents", "1"]),
    );
    std::fs::create_dir_all(smbd.share.join("clients")).unwrap();
    let s_path = suite(d.path(), &smbd.url(), 2, 1000);
    let out = d.path().join("out");
    let listen = format!("127.0.0.1:{}", free_port());
    let ctl = spawn(
        Command::new(benchlab_bin())
            .args([
                "run",
                s(&s_path),
                "--agents",
                "1",
                "--clients-per-agent",
                "2",
                "--monitors",
                "1",
                "--listen",
                &listen,
                "--tls-dir",
            ])
            .arg(&certs)
            .arg("--out")
            .arg(&out),
    );
    let monitor = spawn(
        Command::new(benchlab_bin())
            .args(["monitor", "--controller", &listen, "--process-name", "smbd", "--cert"])
            .arg(certs.join("monitor.pem"))
            .arg("--key")
            .arg(certs.join("monitor.key"))
            .arg("--ca")
            .arg(certs.join("ca.pem")),
    );
    let a0 = spawn(&mut agent(&certs, &listen, 0));
    let o = ctl.wait_output();
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{stderr}");
    assert!(a0.wait_output().status.success());
    assert!(monitor.wait_output().status.success());
    let r: Value = serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    let m = &r["mixes"][0];
    assert!(n(&m["requests"]) > 0, "{m}");
    let rows = m["client_data"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "two clients on the one agent");
    let res = &m["resources"];
    let host = &res["hosts"][0];
    assert!(
        host["source"].as_str().is_some_and(|s| s.starts_with("remote monitor")),
        "{host}"
    );
    assert!(!host["seconds"].as_array().unwrap().is_empty(), "{res}");
    let avg = &host["average"]["process"];
    let cpu = avg["cpu_user"].as_f64().unwrap() + avg["cpu_system"].as_f64().unwrap();
    assert!(cpu > 0.0, "smbd did the mix's work: {avg}");
    let summary = res["verdict"]["summary"].as_str().unwrap();
    assert!(stderr.contains(&format!("mix 1: {summary}")), "{stderr}");
    // The agent's user processes' own CPU, reported with their counts.
    let gen = &m["client_cpu"];
    assert!(
        gen["user_s"].as_f64().unwrap() + gen["system_s"].as_f64().unwrap() > 0.0,
        "{gen}"
    );
    assert!(m["client_cpu_s"].as_f64().unwrap() > 0.0, "{m}");
}

/// A target the agents cannot reach: every client says why, and the run
/// stops naming it (exit 1) instead of keeping a mix that measured nothing.
#[test]
fn a_target_no_agent_can_reach_stops_the_run_saying_why() {
    let d = tempfile::tempdir().unwrap();
    let certs = d.path().join("certs");
    common::assert_success(
        "lab certs",
        &run_benchlab(&["lab", "certs", "--out", s(&certs), "--agents", "1"]),
    );
    // Nothing listens on port 1.
    let s_path = suite(d.path(), "smb://127.0.0.1:1/bench", 1, 1);
    let out = d.path().join("out");
    let (ctl, listen) = controller(&s_path, 1, &certs, &out);
    let _a0 = spawn(&mut agent(&certs, &listen, 0));
    let o = ctl.wait_output();
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("the run stops before mix 1: no client of the mix reported; client 1: agent 0: "),
        "{stderr}"
    );
    assert!(!out.join("results.json").exists(), "nothing was measured");
}

/// A NetBench disk mix on two agents: each agent rebuilds the disk mix
/// from the order's text, fills its client's workspace, and runs it; both
/// clients' rows count, without an error.
#[test]
fn a_disk_mix_runs_on_two_agents_each_client_in_its_workspace() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().join("root");
    std::fs::create_dir_all(&root).unwrap();
    let certs = d.path().join("certs");
    common::assert_success(
        "lab certs",
        &run_benchlab(&["lab", "certs", "--out", s(&certs), "--agents", "2"]),
    );
    std::fs::write(
        d.path().join("mix.toml"),
        "name = \"small\"\nworkspace = \"200KB\"\n[file_size]\nmedian = \"20KB\"\np90 = \"60KB\"\nmax = \"100KB\"\n\
         [operations]\nwrite = 40\nread = 8\nopen = 10\nquery_path = 12\nquery_file = 4\nfind = 8\ncreate = 4\n\
         delete = 4\nrename = 2\nlock = 4\nflush = 4\n",
    )
    .unwrap();
    let t = format!(
        "name = \"netbench\"\ntarget = \"file://{}\"\n[workloads.nb]\ndisk_mix = \"mix.toml\"\n\
         [defaults]\nramp_up = \"0s\"\nramp_down = \"0s\"\nlength = \"2s\"\n[[mix]]\nclients = 2\n",
        root.display()
    );
    let s_path = d.path().join("suite.toml");
    std::fs::write(&s_path, t).unwrap();
    let out = d.path().join("out");
    let (ctl, listen) = controller(&s_path, 2, &certs, &out);
    let agents: Vec<Proc> = (0..2).map(|i| spawn(&mut agent(&certs, &listen, i))).collect();
    let o = ctl.wait_output();
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{stderr}");
    assert!(
        stderr.contains("mix 1 (nb): 2 clients × 1 thread, 2s: filling workspaces (200,000 bytes per user) first …"),
        "{stderr}"
    );
    for a in agents {
        assert!(a.wait_output().status.success());
    }
    let r: Value = serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    let m = &r["mixes"][0];
    assert_eq!(n(&m["errors_total"]), 0, "{m}");
    let rows = m["client_data"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    for (k, row) in rows.iter().enumerate() {
        assert!(n(&row["requests"]) > 0 && n(&row["bytes"]) > 0, "{row}");
        let ws = root.join(format!("clients/client{}", k + 1));
        assert!(ws.is_dir(), "client {}'s workspace", k + 1);
    }
    let sum: u64 = rows.iter().map(|c| n(&c["requests"])).sum();
    assert_eq!(sum, n(&m["requests"]));
    assert!(m["classes"].as_array().unwrap().iter().any(|c| c["name"] == "WriteX"));
}
