//! `benchlab compare` on constructed results directories: what a mix's
//! verdict says decides whether its figures may gate.
//!
//! - A mix whose verdict says client and server shared one machine's cores
//!   (co-located) or that the load generator was saturated (client-bound)
//!   is marked "not gated" and never gives exit 3, even with a p99 68 %
//!   higher; the same figures without that verdict do give exit 3.
//! - Two runs with no phase name in common (`static` against `demo`) exit 1
//!   and name both sides' phases.
//!
//! No load runs: the results are written by the test, so every figure and
//! every expected exit status is known.

mod common;

use common::run_benchlab;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// A latency summary whose every percentile is `p99`.
fn latency(p99: u64) -> Value {
    json!({"mean": p99 as f64, "p50": p99, "p90": p99, "p99": p99, "p999": p99, "max": p99})
}

/// One mix of phase `phase`: 8 threads, 1,000 requests/s over ten quiet
/// seconds, every second's p99 `p99` µs.
fn mix(phase: &str, p99: u64) -> Value {
    let per_second: Vec<Value> = (1..=10)
        .map(|s| {
            json!({"second": s, "in_window": true, "requests": 1000, "errors": 0, "bytes": 0,
                "connections_opened": 0, "latency_p50_us": p99, "latency_p99_us": p99})
        })
        .collect();
    json!({
        "mix": 1, "phase": phase, "clients": 1, "clients_participating": 1, "threads": 8,
        "partial": false, "window_s": 10.0, "requests": 10000, "requests_per_sec": 1000.0,
        "bytes": 0, "bytes_per_sec": 0.0, "mbit_per_sec": 0.0, "body_bytes": 0, "error_bytes": 0,
        "errors": {}, "errors_total": 0, "latency_us": latency(p99), "error_latency_us": latency(0),
        "reconnects": 0, "in_flight": 0, "connections_opened": 8, "tls_full_handshakes": 0,
        "tls_resumptions": 0, "client_cpu_s": 0.0,
        "params": {"delay_s": 0.0, "ramp_up_s": 0.0, "ramp_down_s": 0.0, "length_s": 10.0,
            "think_time_s": 0.0, "threads_per_client": 8, "receive_buffer": 65536,
            "http10_percent": 0, "http10_keepalive": false, "persistent_percent": 100,
            "requests_per_connection": null, "timeout_s": 5.0, "workload": "w", "target": "t"},
        "client_data": [], "classes": [], "per_second": per_second,
        "histograms": {"latency_us": "", "error_latency_us": "", "classes": {}}
    })
}

/// The monitored resources of a mix with this verdict, its host `role`.
fn resources(role: &str, limit: &str, client_saturated: bool) -> Value {
    json!({
        "hosts": [{"host": "box", "role": role, "source": "local", "seconds": [], "average": null,
            "context_switches_per_request": null}],
        "verdict": {"limit": limit, "summary": "as the test says", "evidence": [],
            "client_saturated": client_saturated}
    })
}

/// Writes `dir/results.json` holding `mix`, its phase named as the mix's.
fn results(dir: &Path, mix: Value) -> PathBuf {
    std::fs::create_dir_all(dir).expect("results dir");
    let phase = mix["phase"].clone();
    let v = json!({
        "schema": "benchlab.results/1",
        "suite": {"name": "s", "description": "", "file": "s.toml", "seed": 1, "max_clients": null, "text": ""},
        "environment": {"benchlab_version": "0", "host": "h", "kernel": "k", "cpu": "c", "cores": 2,
            "target": "t", "started_unix": 0, "command": [], "time_scale": 1.0},
        "phases": [{"name": phase, "workload": "w", "target": "t", "mixes": [1]}],
        "mixes": [mix], "complete": true
    });
    std::fs::write(dir.join("results.json"), serde_json::to_vec_pretty(&v).expect("JSON")).expect("write");
    dir.to_path_buf()
}

/// `benchlab compare BASE NEW --out OUT`: exit status and all it printed.
fn compare(base: &Path, new: &Path, out: &Path) -> (i32, String) {
    let s = |p: &Path| p.to_str().expect("UTF-8 path").to_string();
    let o = run_benchlab(&["compare", &s(base), &s(new), "--out", &s(out)]);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    (o.status.code().unwrap_or(-1), text)
}

#[test]
fn co_located_and_client_bound_mixes_never_gate() {
    let d = tempfile::tempdir().expect("tempdir");
    let dir = |n: &str| d.path().join(n);
    // The same throughput, a p99 68 % higher on quiet seconds: beyond any
    // noise, so a regression where the figures may gate.
    let base = results(&dir("base"), mix("demo", 10_000));
    let new = results(&dir("new"), mix("demo", 16_800));
    let (code, text) = compare(&base, &new, &dir("plain"));
    assert_eq!(code, 3, "not monitored, the figures gate:\n{text}");
    assert!(text.contains("REGRESSION: phase demo: p99"), "{text}");

    // Two demo runs: one box, client and server on its cores.
    let mut co = mix("demo", 10_000);
    co["resources"] = resources("server_and_client", "software", false);
    let co_base = results(&dir("co-base"), co.clone());
    co["latency_us"] = latency(16_800);
    for s in co["per_second"].as_array_mut().expect("seconds") {
        s["latency_p99_us"] = json!(16_800);
    }
    let co_new = results(&dir("co-new"), co);
    let (code, text) = compare(&co_base, &co_new, &dir("co-out"));
    assert_eq!(code, 0, "co-located:\n{text}");
    assert!(!text.contains("REGRESSION"), "{text}");
    assert!(
        text.contains("×1.680 (×1.680–×1.680 at 95.0 % confidence; noise from BASE 10 seconds, NEW 10 seconds): regressed (not gated: co-located)"),
        "{text}"
    );
    assert!(
        text.contains(
            "not gated: phase demo: p99 at the peak load (8 threads) 10,000 µs (mix 1) → 16,800 µs (mix 1), +68.0 %"
        ),
        "{text}"
    );
    assert!(text.contains("note: Not gated: demo mix 1/1 (co-located)"), "{text}");
    let html = std::fs::read_to_string(dir("co-out").join("report.html")).expect("compare report");
    assert!(html.contains("not gated: co-located"), "the page marks the mix");
    assert!(!html.contains("verdict bad"), "the page calls no regression");

    // Only NEW's verdict says its generator was saturated: client-bound.
    let mut cb = mix("demo", 16_800);
    cb["resources"] = resources("server", "client", true);
    let cb_new = results(&dir("cb-new"), cb);
    let (code, text) = compare(&base, &cb_new, &dir("cb-out"));
    assert_eq!(code, 0, "client-bound:\n{text}");
    assert!(text.contains("regressed (not gated: client-bound)"), "{text}");
    // The generator's own CPU flag says so without a monitor too.
    let mut own = mix("demo", 16_800);
    own["client_cpu"] = json!({"user_s": 9.5, "system_s": 0.0, "cores": 1, "utilisation": 0.95,
        "us_per_request": 950.0, "client_bound": true});
    let own_new = results(&dir("own-new"), own);
    let (code, text) = compare(&base, &own_new, &dir("own-out"));
    assert_eq!(code, 0, "client-bound by its own CPU:\n{text}");
    assert!(text.contains("not gated: client-bound"), "{text}");
}

#[test]
fn no_phase_name_in_common_exits_1_and_names_both_sides_phases() {
    let d = tempfile::tempdir().expect("tempdir");
    let base = results(&d.path().join("static"), mix("static", 10_000));
    let new = results(&d.path().join("demo"), mix("demo", 10_000));
    let (code, text) = compare(&base, &new, &d.path().join("out"));
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains("have no phase in common: nothing to compare (BASE's phases: static; NEW's: demo)"),
        "{text}"
    );
}
