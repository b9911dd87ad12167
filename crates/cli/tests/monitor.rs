//! Server monitoring against real processes: `benchlab monitor` watching a
//! real nginx under load agrees with /proc/PID/stat read independently;
//! `run --monitor-local` stores each mix's host seconds and a verdict, and
//! the verdict names a CPU-bound server (a burner pinned beside it) and a
//! saturated load generator (pinned to a busy core) — and not when the
//! generator has room; CGI costs more context switches per request than
//! static files (seed 002's finding).
//!
//! The machine is shared and noisy: nothing here bounds a duration, and
//! the verdict tests make their saturation unambiguous (a burner at 100 %
//! of the pinned core), not merely likely.

mod common;
mod spice_support;

use common::servers::{Nginx, NginxOpts};
use common::{benchlab_bin, run_benchlab};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, MutexGuard};

/// One load at a time: two tests loading the two cores at once would
/// decide each other's verdicts.
fn one_at_a_time() -> MutexGuard<'static, ()> {
    static LOAD: Mutex<()> = Mutex::new(());
    LOAD.lock().unwrap_or_else(|p| p.into_inner())
}

/// A child killed and reaped on drop.
struct Guard(Child);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A process spinning at 100 % of CPU `cpu`.
fn burner(cpu: usize) -> Guard {
    let child = Command::new("taskset")
        .args(["-c", &cpu.to_string(), "sh", "-c", "while :; do :; done"])
        .stdin(Stdio::null())
        .spawn()
        .expect("start a burner under taskset (util-linux)");
    Guard(child)
}

/// Pins process `pid` to CPU `cpu`.
fn pin(pid: u32, cpu: usize) {
    let st = Command::new("taskset")
        .args(["-p", "-c", &cpu.to_string(), &pid.to_string()])
        .stdout(Stdio::null())
        .status()
        .expect("run taskset");
    assert!(st.success(), "taskset -p -c {cpu} {pid}: {st}");
}

/// User + system CPU seconds of `pid`, from /proc/PID/stat (fields 14 and
/// 15, after the parenthesised name), read here without benchlab's code.
fn proc_cpu_s(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("read /proc/PID/stat");
    let after = &stat[stat.rfind(')').expect("comm") + 2..];
    let f: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| f[i].parse::<f64>().expect("a number");
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    // `after` starts at field 3 (state): utime is field 14, stime 15.
    (ticks(14 - 3) + ticks(15 - 3)) / hz
}

/// A one-mix suite of `threads` users on one URL of `size` bytes.
fn suite(dir: &Path, target: &str, mixes: &[(&str, &str, u64)], threads: u32) -> std::path::PathBuf {
    let mut t = format!(
        "name = \"monitored\"\ntarget = \"{target}\"\nseed = 5\n\n[defaults]\nlength = \"3s\"\nramp_up = \"0.5s\"\n\
         ramp_down = \"0s\"\nthreads_per_client = {threads}\npersistent_percent = 100\ntimeout = \"10s\"\n"
    );
    for (i, (_, path, size)) in mixes.iter().enumerate() {
        t.push_str(&format!(
            "\n[workloads.w{i}]\n[[workloads.w{i}.class]]\nname = \"c{i}\"\npercent = 100\n\
             [[workloads.w{i}.class.url]]\npath = \"{path}\"\nsize = {size}\n"
        ));
    }
    for i in 0..mixes.len() {
        t.push_str(&format!("\n[[mix]]\nclients = 1\nworkload = \"w{i}\"\n"));
    }
    let p = dir.join("suite.toml");
    std::fs::write(&p, t).expect("write suite");
    p
}

/// Runs `benchlab run` with `extra` flags and returns results.json.
fn run(dir: &Path, suite: &Path, extra: &[&str]) -> Value {
    let out = dir.join("results");
    let mut args = vec![
        "run",
        suite.to_str().expect("utf-8"),
        "--out",
        out.to_str().expect("utf-8"),
    ];
    args.extend_from_slice(extra);
    let o = run_benchlab(&args);
    assert!(
        o.status.success(),
        "benchlab {args:?}: {}\n{}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&std::fs::read(out.join("results.json")).expect("results.json")).expect("JSON")
}

fn verdict(mix: &Value) -> (String, String, bool) {
    let v = &mix["resources"]["verdict"];
    (
        v["limit"].as_str().expect("limit").to_string(),
        v["summary"].as_str().expect("summary").to_string(),
        v["client_saturated"].as_bool().expect("client_saturated"),
    )
}

#[test]
fn monitored_nginx_cpu_agrees_with_proc_stat_and_the_run_stores_it() {
    let _one = one_at_a_time();
    let nginx = Nginx::start(NginxOpts::default());
    let pid = nginx.pid();
    let dir = tempfile::tempdir().expect("tempdir");

    // 1. `benchlab monitor --pid`: the samples' CPU, summed over their
    //    spans, is the process's CPU between the monitor's first and last
    //    readings. Load runs only between them, and idle nginx uses no CPU,
    //    so /proc/PID/stat read before and after the monitor gives the same.
    let before = proc_cpu_s(pid);
    let mut mon = Guard(
        Command::new(benchlab_bin())
            .args(["monitor", "--pid", &pid.to_string(), "--json", "--count", "8"])
            .stdout(Stdio::piped())
            .spawn()
            .expect("start benchlab monitor"),
    );
    let mut lines = BufReader::new(mon.0.stdout.take().expect("stdout")).lines();
    let first: Value = serde_json::from_str(&lines.next().expect("a sample").expect("read")).expect("JSON");
    let load = run_benchlab(&[
        "http",
        &nginx.url("/4k.html"),
        "--duration",
        "2s",
        "--threads",
        "4",
        "--json",
    ]);
    assert!(load.status.success(), "{}", String::from_utf8_lossy(&load.stderr));
    let mut samples = vec![first];
    for l in lines {
        samples.push(serde_json::from_str(&l.expect("read")).expect("JSON"));
    }
    assert!(mon.0.wait().expect("wait").success());
    let after = proc_cpu_s(pid);
    assert_eq!(samples.len(), 8);
    let monitored: f64 = samples
        .iter()
        .map(|s| {
            let p = &s["process"];
            (p["cpu_user"].as_f64().expect("user") + p["cpu_system"].as_f64().expect("system"))
                * s["interval_s"].as_f64().expect("interval")
        })
        .sum();
    let independent = after - before;
    eprintln!("nginx CPU: monitor {monitored:.3} s, /proc/{pid}/stat {independent:.3} s");
    assert!(independent > 0.05, "nginx served the load: {independent} s of CPU");
    // Tolerance: two clock ticks at the ends (10 ms each at 100 Hz) and the
    // samples' rounding (4 decimals of a rate × 3 of a span): 3 % + 30 ms.
    assert!(
        (monitored - independent).abs() <= independent * 0.03 + 0.03,
        "monitor says {monitored:.3} s of CPU, /proc/{pid}/stat {independent:.3} s"
    );
    assert_eq!(samples[0]["process"]["processes"], 1);
    assert_eq!(samples[0]["process"]["name"], pid.to_string());

    // 2. `run --monitor-local --monitor-pid`: the mix stores its window's
    //    seconds (schema-valid), the process's averages and a verdict.
    let s = suite(dir.path(), &nginx.url(""), &[("static", "/4k.html", 4096)], 4);
    let r = run(dir.path(), &s, &["--monitor-local", "--monitor-pid", &pid.to_string()]);
    let schema: Value = serde_json::from_str(include_str!("../../../docs/results.schema.json")).expect("schema");
    let validator = jsonschema::validator_for(&schema).expect("a valid schema");
    let errors: Vec<String> = validator
        .iter_errors(&r)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "results.json does not match the schema:\n{}",
        errors.join("\n")
    );
    let mix = &r["mixes"][0];
    let host = &mix["resources"]["hosts"][0];
    assert_eq!(host["role"], "server_and_client", "a loopback target is one box");
    assert_eq!(host["source"], "local");
    let seconds = host["seconds"].as_array().expect("seconds");
    assert!(
        (2..=4).contains(&seconds.len()),
        "a 3 s window: {} seconds",
        seconds.len()
    );
    let avg = &host["average"];
    let cpu = avg["process"]["cpu_user"].as_f64().expect("user") + avg["process"]["cpu_system"].as_f64().expect("sys");
    assert!(cpu > 0.0, "nginx worked during the window: {avg}");
    assert!(host["context_switches_per_request"].as_f64().expect("cs/request") > 0.0);
    let (_, summary, _) = verdict(mix);
    assert!(!summary.is_empty());
    assert!(
        mix["resources"]["verdict"]["evidence"]
            .as_array()
            .expect("evidence")
            .iter()
            .any(|e| e
                .as_str()
                .is_some_and(|e| e.contains("client and server share the cores"))),
        "{}",
        mix["resources"]["verdict"]
    );
    // Every client's own CPU and loop lag, per second and per mix.
    let client = &mix["client_data"][0];
    assert!(!client["seconds"].as_array().expect("client seconds").is_empty());
    let per_second_cpu: f64 = mix["per_second"]
        .as_array()
        .expect("per_second")
        .iter()
        .map(|s| s["client_cpu_user_s"].as_f64().unwrap_or(0.0) + s["client_cpu_system_s"].as_f64().unwrap_or(0.0))
        .sum();
    assert!(per_second_cpu > 0.0, "the client's seconds carry its CPU");
    // And the report says it in words.
    let o = run_benchlab(&["report", dir.path().join("results").to_str().expect("utf-8")]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let html = std::fs::read_to_string(dir.path().join("results/report.html")).expect("report.html");
    assert!(
        html.contains("What limited the run"),
        "the report has the resources section"
    );
    assert!(html.contains(&summary.replace('\'', "&#39;").replace('"', "&quot;")) || html.contains(&summary));
}

/// nginx pinned to core 0 and the generator to core 1 (monitoring the
/// host and nginx's PID), with a CPU burner held on core `burn`; returns
/// the run's results.json.
fn pinned_run_with_burner(burn: usize) -> Value {
    let _one = one_at_a_time();
    let nginx = Nginx::start(NginxOpts::default());
    pin(nginx.pid(), 0);
    let _burn = burner(burn);
    let dir = tempfile::tempdir().expect("tempdir");
    let s = suite(dir.path(), &nginx.url(""), &[("static", "/4k.html", 4096)], 8);
    run(
        dir.path(),
        &s,
        &[
            "--monitor-local",
            "--monitor-pid",
            &nginx.pid().to_string(),
            "--client-cpus",
            "1",
        ],
    )
}

#[test]
fn a_burner_beside_the_server_makes_it_cpu_bound_and_leaves_the_generator_room() {
    let r = pinned_run_with_burner(0);
    let mix = &r["mixes"][0];
    let (limit, summary, _) = verdict(mix);
    eprintln!("burner beside the server: {summary}");
    // Core 0 holds the burner at 100 %: nothing else can run there.
    assert_eq!(limit, "server_cpu", "{}", mix["resources"]["verdict"]);
    assert!(summary.starts_with("CPU-bound: server CPU (cores 0)"), "{summary}");
    // The burner, not the watched nginx, kept core 0 busy: the verdict
    // says other processes used it, and lists the busiest.
    assert!(summary.contains("; other processes used "), "{summary}");
    let evidence = mix["resources"]["verdict"]["evidence"].to_string();
    assert!(
        evidence.contains("the busiest processes besides the watched server and benchlab, by CPU over the window: "),
        "{evidence}"
    );
    // The generator, on core 1, waited for the starved server: its own
    // threads did not fill their core.
    assert!(!mix["client_cpu"]["client_bound"].as_bool().expect("client_bound"));
}

#[test]
fn a_generator_pinned_to_a_busy_core_is_saturated() {
    let r = pinned_run_with_burner(1);
    let mix = &r["mixes"][0];
    let (limit, summary, saturated) = verdict(mix);
    eprintln!("generator on a busy core: {summary}");
    // Core 1 holds the burner at 100 %: the generator had no room.
    assert!(saturated, "{}", mix["resources"]["verdict"]);
    if limit == "client" {
        assert!(
            summary.contains("this mix measured the client, not the server"),
            "{summary}"
        );
    } else {
        // Only when other work on this shared machine also filled the
        // server's core 0: then both are named.
        assert_eq!(limit, "server_cpu", "{summary}");
        assert!(summary.contains("the load generator's cores were also"), "{summary}");
    }
}

#[test]
fn cgi_costs_more_context_switches_per_request_than_static_files() {
    let _one = one_at_a_time();
    let srv = spice_support::servers::nginx();
    let dir = tempfile::tempdir().expect("tempdir");
    let target = format!("http://127.0.0.1:{}", srv.port);
    let s = suite(
        dir.path(),
        &target,
        &[
            ("static", spice_support::FILE_4K, 4096),
            ("cgi", &format!("/spice/cgi-c/adrot{}", spice_support::FILE_4K), 4096),
        ],
        4,
    );
    let r = run(dir.path(), &s, &["--monitor-local"]);
    let per_request = |m: usize| {
        let mix = &r["mixes"][m];
        assert_eq!(mix["errors_total"], 0, "mix {}: {}", m + 1, mix["errors"]);
        mix["resources"]["hosts"][0]["context_switches_per_request"]
            .as_f64()
            .expect("context switches per request")
    };
    let (stat, cgi) = (per_request(0), per_request(1));
    eprintln!("context switches per request: static {stat:.2}, CGI {cgi:.2}");
    // A process per request (fork, exec, wait, fcgiwrap's hand-offs) costs
    // many switches; a static file from a keep-alive connection a few.
    assert!(
        cgi > 2.0 * stat,
        "CGI {cgi:.1} context switches per request, static {stat:.1}"
    );
}

#[test]
fn the_demo_watches_its_own_server_and_its_report_says_what_limited_each_mix() {
    let _one = one_at_a_time();
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("demo");
    let o = run_benchlab(&["demo", "--time-scale", "0.1", "--out", out.to_str().expect("utf-8")]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r: Value =
        serde_json::from_slice(&std::fs::read(out.join("results.json")).expect("results.json")).expect("JSON");
    for m in r["mixes"].as_array().expect("mixes") {
        let host = &m["resources"]["hosts"][0];
        assert_eq!(host["role"], "server_and_client", "mix {}", m["mix"]);
        // The reference server's threads, not the load generator's.
        let p = &host["average"]["process"];
        assert_eq!(p["name"], "benchlab-serve");
        assert_eq!(p["of_threads"], true);
        assert!(p["threads"].as_u64().expect("threads") >= 1);
    }
    let html = std::fs::read_to_string(out.join("report.html")).expect("report.html");
    assert!(html.contains("What limited the run: server resources"));
    assert!(html.contains(r#"id="server-cpu-0""#), "the server CPU chart");
    // The workbook has the per-mix resources as a sheet.
    let xlsx = std::fs::read(out.join("report.xlsx")).expect("report.xlsx");
    let mut zip = zip::ZipArchive::new(std::io::Cursor::new(xlsx)).expect("xlsx is a zip");
    let mut book = String::new();
    std::io::Read::read_to_string(&mut zip.by_name("xl/workbook.xml").expect("workbook.xml"), &mut book).expect("read");
    assert!(book.contains(r#"name="Resources""#), "{book}");
}

#[test]
fn monitor_prints_a_line_a_second_and_refuses_a_missing_pid() {
    let me = std::process::id().to_string();
    let o = run_benchlab(&["monitor", "--pid", &me, "--count", "2", "--interval", "200ms"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "a header and two samples:\n{text}");
    assert!(
        lines[0].contains("busy%") && lines[0].contains("ctxsw/s") && lines[0].contains(&me),
        "{text}"
    );
    // The process columns: one process, its threads and open files.
    let cols: Vec<&str> = lines[1]
        .split('|')
        .nth(1)
        .expect("process columns")
        .split_whitespace()
        .collect();
    assert_eq!(cols.len(), 5, "{text}");
    assert_eq!(cols[0], "1", "{text}");
    let o = run_benchlab(&["monitor", "--pid", "2147483646", "--count", "1"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--pid 2147483646: no such process"));
    let o = run_benchlab(&["run", "x.toml", "--monitor-pid", "1"]);
    assert_eq!(o.status.code(), Some(2), "--monitor-pid needs --monitor-local");
}

#[test]
fn run_reads_a_node_exporter_instead() {
    let _one = one_at_a_time();
    // A node_exporter whose counters move by the same step at every fetch:
    // one CPU 75 % user, 5 % system; 4 MB sent by eth0 (a 100 Mbit/s link).
    let exporter = std::sync::Arc::new(tiny_http::Server::http("127.0.0.1:0").expect("bind"));
    let port = exporter.server_addr().to_ip().expect("an IP address").port();
    let served = exporter.clone();
    std::thread::spawn(move || {
        let mut step = 0.0f64;
        while let Ok(req) = served.recv() {
            step += 1.0;
            let page = format!(
                "node_cpu_seconds_total{{cpu=\"0\",mode=\"user\"}} {}\n\
                 node_cpu_seconds_total{{cpu=\"0\",mode=\"system\"}} {}\n\
                 node_cpu_seconds_total{{cpu=\"0\",mode=\"idle\"}} {}\n\
                 node_network_transmit_bytes_total{{device=\"eth0\"}} {}\n\
                 node_network_receive_bytes_total{{device=\"eth0\"}} 0\n\
                 node_network_speed_bytes{{device=\"eth0\"}} 12500000\n",
                0.75 * step,
                0.05 * step,
                0.2 * step,
                4e6 * step
            );
            let _ = req.respond(tiny_http::Response::from_string(page));
        }
    });
    let nginx = Nginx::start(NginxOpts::default());
    let dir = tempfile::tempdir().expect("tempdir");
    let s = suite(dir.path(), &nginx.url(""), &[("static", "/4k.html", 4096)], 2);
    let url = format!("http://127.0.0.1:{port}/metrics");
    let r = run(dir.path(), &s, &["--node-exporter", &url]);
    let host = &r["mixes"][0]["resources"]["hosts"][0];
    assert_eq!(host["host"], "127.0.0.1");
    assert_eq!(host["source"], format!("node_exporter {url}"));
    let avg = &host["average"];
    // Shares are ratios of the counters' steps, whatever the fetches' timing.
    assert_eq!(avg["cpu"]["user"], 75.0);
    assert_eq!(avg["cpu"]["system"], 5.0);
    assert_eq!(avg["nics"][0]["name"], "eth0");
    assert_eq!(avg["nics"][0]["speed_mbit"], 100);
    assert!(avg["process"].is_null(), "node_exporter has no process figures");
    let evidence = r["mixes"][0]["resources"]["verdict"]["evidence"].to_string();
    assert!(
        evidence.contains("server CPU 80 % busy, 5 % in system time"),
        "{evidence}"
    );
    assert!(evidence.contains("NIC eth0 at "), "{evidence}");
    exporter.unblock();
}
