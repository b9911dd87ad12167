//! File suites on the lab's one suite loop (issue 20): the flags web suites
//! take — `--repeat`, `--monitor-local` with its verdict, `--find-peak`,
//! `--client-cpus`, `--cold-cache`, Ctrl-C — work for a loadfile suite
//! against a temporary directory (`file:///…`), and its results.json is the
//! controller's `benchlab.results/1`, counts exact.

mod common;

use common::{benchlab_bin, run_benchlab};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Five operations a pass, each user in its own `\clients\clientN`: one
/// WriteX of 100 bytes and one ReadX of 60.
const LOADFILE: &str = r#"Mkdir "\clients" NT_STATUS_OK
NTCreateX "\clients\client1" 0x1 0x2 1 NT_STATUS_OK
Close 1 NT_STATUS_OK
NTCreateX "\clients\client1\a.txt" 0x40 0x2 2 NT_STATUS_OK
WriteX 2 0 100 100 NT_STATUS_OK
ReadX 2 40 60 60 NT_STATUS_OK
Close 2 NT_STATUS_OK
Unlink "\clients\client1\a.txt" 0x6 NT_STATUS_OK
"#;

/// A loadfile suite against `dir/root`: `loops` passes per user (none:
/// until the mix ends), one mix per entry of `clients`.
fn suite(dir: &Path, loops: Option<u32>, clients: &[u32], length: &str) -> PathBuf {
    let root = dir.join("root");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(dir.join("load.txt"), LOADFILE).unwrap();
    let mut s = format!(
        "name = \"files\"\ntarget = \"file://{}\"\nseed = 3\n[workloads.lf]\nloadfile = \"load.txt\"\n{}\
         [defaults]\nramp_up = \"0s\"\nramp_down = \"0s\"\nlength = \"{length}\"\nthink_time = \"5ms\"\n",
        root.display(),
        loops.map(|n| format!("loops = {n}\n")).unwrap_or_default()
    );
    for c in clients {
        s += &format!("[[mix]]\nclients = {c}\n");
    }
    let p = dir.join("suite.toml");
    std::fs::write(&p, s).unwrap();
    p
}

fn results(out: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap()
}

fn ok(o: &std::process::Output) -> String {
    let (stdout, stderr) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(o.status.success(), "{}\n{stdout}\n{stderr}", o.status);
    assert!(!stderr.contains("panicked"), "{stderr}");
    stderr.into_owned()
}

fn n(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

/// `--repeat 3`: the controller's results, every run kept, each exact (8
/// operations a pass, 2 passes, 2 users), the per-client rows adding up to
/// the mix.
#[test]
fn repeats_of_a_file_suite_are_the_controllers_results_and_exact() {
    let d = tempfile::tempdir().unwrap();
    let s = suite(d.path(), Some(2), &[2], "3s");
    let out = d.path().join("out");
    let o = run_benchlab(&[
        "run",
        s.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--repeat",
        "3",
    ]);
    let stderr = ok(&o);
    assert!(
        stderr.contains("mix 1 (lf): 2 clients × 1 thread, run 3 of 3"),
        "{stderr}"
    );
    let r = results(&out);
    assert_eq!(r["schema"], "benchlab.results/1");
    assert_eq!(r["complete"], true);
    let m = &r["mixes"][0];
    assert_eq!(m["repeats"]["runs"].as_array().unwrap().len(), 3, "{}", m["repeats"]);
    // Every pass: the first Mkdir exists after user 1's first pass, and
    // client2's NTCreateX of `\clients\client1` is its own directory (a
    // user replays in its own workspace).
    assert_eq!(n(&m["requests"]), 8 * 2 * 2, "{m}");
    assert_eq!(n(&m["bytes"]), (100 + 60) * 2 * 2);
    let rows = m["client_data"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    for key in ["requests", "bytes", "errors_total"] {
        let sum: u64 = rows.iter().map(|c| n(&c[key])).sum();
        assert_eq!(sum, n(&m[key]), "{key}");
    }
    let write = m["classes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "WriteX")
        .unwrap();
    assert_eq!((n(&write["requests"]), n(&write["bytes"])), (4, 400));
    // The seconds the progress saw add up to the mix too.
    let seconds: u64 = m["per_second"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| n(&s["requests"]))
        .sum();
    assert_eq!(seconds, n(&m["requests"]));
    // The generator's CPU is measured, as for web mixes.
    assert!(m["client_cpu"]["cores"].as_u64().unwrap() >= 1, "{}", m["client_cpu"]);
    assert!(d.path().join("root/clients/client2").is_dir());
}

/// `--monitor-local`: each file mix keeps the host's seconds of its window
/// and a verdict on what limited it, as web mixes do.
#[test]
fn a_monitored_file_mix_has_the_hosts_seconds_and_a_verdict() {
    let d = tempfile::tempdir().unwrap();
    let s = suite(d.path(), None, &[1], "3s");
    let out = d.path().join("out");
    let o = run_benchlab(&[
        "run",
        s.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--monitor-local",
    ]);
    let stderr = ok(&o);
    let r = results(&out);
    let res = &r["mixes"][0]["resources"];
    let host = &res["hosts"][0];
    assert!(
        !host["seconds"].as_array().unwrap().is_empty(),
        "no host second in the window: {res}"
    );
    // A local path is served by this machine: server and client share it.
    assert_eq!(host["role"], "server_and_client", "{host}");
    // The user threads' own CPU over the mix.
    let gen = &r["mixes"][0]["client_cpu"];
    assert!(
        gen["user_s"].as_f64().unwrap() + gen["system_s"].as_f64().unwrap() > 0.0,
        "{gen}"
    );
    let summary = res["verdict"]["summary"].as_str().unwrap();
    assert!(!summary.is_empty());
    assert!(stderr.contains(&format!("mix 1: {summary}")), "{stderr}");
}

/// `--find-peak` grows a file phase's threads per client while Mbit/s
/// rises, up to `--peak-max-threads`; every step is a mix of the search.
#[test]
fn find_peak_grows_a_file_phase_up_to_its_limit() {
    let d = tempfile::tempdir().unwrap();
    let s = suite(d.path(), None, &[1], "1s");
    let out = d.path().join("out");
    let o = run_benchlab(&[
        "run",
        s.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--find-peak",
        "--peak-max-threads",
        "2",
        "--peak-bisect-steps",
        "0",
        // Passes after the first find `\clients` made: expected errors.
        "--peak-max-error-rate",
        "100",
    ]);
    ok(&o);
    let r = results(&out);
    let mixes = r["mixes"].as_array().unwrap();
    let threads: Vec<u64> = mixes.iter().map(|m| n(&m["threads"])).collect();
    assert_eq!(threads, [1, 2], "{}", r["phases"]);
    assert!(mixes.iter().all(|m| m["search"]["step"].as_u64().is_some()));
    let search = &r["phases"][0]["search"];
    assert_eq!(n(&search["max_threads_per_client"]), 2, "{search}");
    assert!(!search["stopped"].as_str().unwrap().is_empty(), "{search}");
    assert!(search["peak_mix"].as_u64().is_some(), "{search}");
}

/// The CPUs allowed to every thread of process `pid` (Cpus_allowed_list).
fn allowed_cpus(pid: u32) -> Vec<String> {
    let mut all = Vec::new();
    for t in std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten()
        .flatten()
    {
        if let Ok(st) = std::fs::read_to_string(t.path().join("status")) {
            if let Some(l) = st.lines().find(|l| l.starts_with("Cpus_allowed_list:")) {
                all.push(l["Cpus_allowed_list:".len()..].trim().to_string());
            }
        }
    }
    all
}

/// `--client-cpus 0`: every user thread runs on CPU 0, disclosed in
/// results.json; `--cold-cache` drops the page cache before the mix (as
/// root; without root it is refused by name).
#[test]
fn client_cpus_pin_the_file_users_and_cold_cache_drops_the_cache() {
    let d = tempfile::tempdir().unwrap();
    let s = suite(d.path(), None, &[2], "3s");
    let out = d.path().join("out");
    let root = benchlab_lab_is_root();
    let child = std::process::Command::new(benchlab_bin())
        .args([
            "run",
            s.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--client-cpus",
            "0",
        ])
        .args(if root { &["--cold-cache"][..] } else { &[][..] })
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !d.path().join("root/clients/client2").exists() {
        assert!(Instant::now() < deadline, "the mix did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    let cpus = allowed_cpus(child.id());
    let o = child.wait_with_output().unwrap();
    let stderr = ok(&o);
    assert!(cpus.len() >= 3, "the main thread and two users: {cpus:?}");
    assert!(cpus.iter().all(|c| c == "0"), "{cpus:?}");
    let r = results(&out);
    assert_eq!(r["environment"]["client_cpus"], serde_json::json!([0]));
    if root {
        assert_eq!(r["environment"]["cold_cache"], true);
        assert!(stderr.contains("cold cache: page cache dropped"), "{stderr}");
    } else {
        let o = run_benchlab(&[
            "run",
            s.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--cold-cache",
        ]);
        assert_eq!(o.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&o.stderr).contains("--cold-cache"));
    }
}

fn benchlab_lab_is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Ctrl-C ends the mix under way: it is kept, partial, its rates over the
/// time it ran; the run exits 130 and the next mix never starts.
#[test]
fn ctrl_c_keeps_the_file_mix_under_way_partial_and_exits_130() {
    let d = tempfile::tempdir().unwrap();
    let s = suite(d.path(), None, &[1, 2], "60s");
    let out = d.path().join("out");
    let mut child = std::process::Command::new(benchlab_bin())
        .args(["run", s.to_str().unwrap(), "--out", out.to_str().unwrap()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !d.path().join("root/clients/client1").exists() {
        assert!(Instant::now() < deadline, "the mix did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(1500));
    let kill = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    assert_eq!(child.wait().unwrap().code(), Some(130));
    let r = results(&out);
    assert_eq!(r["complete"], false);
    let mixes = r["mixes"].as_array().unwrap();
    assert_eq!(mixes.len(), 1, "the second mix never started");
    assert_eq!(mixes[0]["partial"], true);
    assert!(n(&mixes[0]["requests"]) > 0);
    assert!(
        mixes[0]["window_s"].as_f64().unwrap() < 30.0,
        "{}",
        mixes[0]["window_s"]
    );
}

/// `(status, body)` of a GET to `127.0.0.1:port`.
fn get(port: u16, path: &str) -> (u16, Vec<u8>) {
    use std::io::{Read, Write};
    let mut c = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect to the live view");
    c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(c, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").unwrap();
    let mut all = Vec::new();
    c.read_to_end(&mut all).unwrap();
    let end = all.windows(4).position(|w| w == b"\r\n\r\n").expect("a head");
    let head = String::from_utf8_lossy(&all[..end]);
    let status = head.split_whitespace().nth(1).and_then(|x| x.parse().ok()).unwrap_or(0);
    (status, all[end + 4..].to_vec())
}

/// `--web`: the live view of a file suite plots each second of the mix
/// as it ends, and those are the seconds results.json keeps.
#[test]
fn the_live_view_shows_a_file_mixs_seconds_as_results_json_keeps_them() {
    let d = tempfile::tempdir().unwrap();
    let s = suite(d.path(), None, &[2], "3s");
    let out = d.path().join("out");
    let port = common::free_port();
    let addr = format!("127.0.0.1:{port}");
    let mut child = std::process::Command::new(benchlab_bin())
        .args([
            "run",
            s.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--web",
            &addr,
            "--web-linger",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    common::wait_for_port(port, Duration::from_secs(60));
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut saw_running = false;
    let last = loop {
        let (status, body) = get(port, "/live.json");
        assert_eq!(status, 200);
        let v: Value = serde_json::from_slice(&body).unwrap();
        saw_running |= v["state"] == "running" && v["seconds"].as_array().is_some_and(|s| !s.is_empty());
        if v["state"] == "done" {
            break v;
        }
        assert!(Instant::now() < deadline, "the run never ended: {v}");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(saw_running, "no second was live before the end");
    let kill = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let _ = child.wait();
    let r = results(&out);
    let kept = r["mixes"][0]["per_second"].as_array().unwrap();
    let live: Vec<(u64, u64)> = last["seconds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (n(&s["second"]), n(&s["requests"])))
        .collect();
    let want: Vec<(u64, u64)> = kept.iter().map(|s| (n(&s["second"]), n(&s["requests"]))).collect();
    assert_eq!(live, want);
    assert!(live.iter().map(|s| s.1).sum::<u64>() > 0);
}
