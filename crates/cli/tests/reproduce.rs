//! `benchlab reproduce`: the keepalive and cpus experiments end to end
//! against the lab's nginx with time-scaled mixes (a few seconds each),
//! each side's results with the server's disclosure, one side-by-side
//! report, and no server left up; `--list` and an unknown name.

mod common;

use common::{assert_success, benchlab_bin};
use std::fs;
use std::path::Path;
use std::process::{Command, Output};

fn reproduce(base: &Path, args: &[&str]) -> Output {
    Command::new(benchlab_bin())
        .arg("reproduce")
        .args(args)
        .env("BENCHLAB_LAB_DIR", base)
        .output()
        .expect("run benchlab reproduce")
}

fn results(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&fs::read_to_string(dir.join("results.json")).unwrap()).unwrap()
}

/// Runs experiment `name` at time scale 0.05 and checks what every
/// experiment leaves: both sides' results, the report of both, a ratio line
/// and no server up. Returns each side's results.
fn run_experiment(name: &str, sides: [&str; 2]) -> [serde_json::Value; 2] {
    let base = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("x");
    let o = reproduce(
        base.path(),
        &[name, "--time-scale", "0.05", "--out", dir.to_str().unwrap()],
    );
    assert_success(&format!("reproduce {name}"), &o);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.starts_with(&format!("experiment {name} on nginx\n")), "{stdout}");
    assert!(stdout.contains(&format!("  {} ÷ {}: ", sides[1], sides[0])), "{stdout}");
    let html = fs::read_to_string(dir.join("report/report.html")).unwrap();
    for side in sides {
        assert!(
            html.contains(&format!("reproduce-{name}-{side}")),
            "the report shows {side}"
        );
    }
    // Every lab server is down and its state dir gone.
    let left: Vec<_> = fs::read_dir(base.path())
        .map(|d| d.flatten().collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "{left:?}");
    let r = sides.map(|s| results(&dir.join(s)));
    for (side, res) in sides.iter().zip(&r) {
        assert_eq!(res["environment"]["server"]["server"], "nginx", "{side}");
        assert_eq!(res["mixes"].as_array().unwrap().len(), 3, "{side}");
        assert!(res["complete"].as_bool().unwrap(), "{side}");
    }
    r
}

#[test]
fn keepalive_runs_http10_against_persistent_http11() {
    let [h10, h11] = run_experiment("keepalive", ["http10", "http11"]);
    for m in h10["mixes"].as_array().unwrap() {
        assert_eq!(m["params"]["http10_percent"], 100);
        assert_eq!(m["params"]["http10_keepalive"], false);
    }
    for m in h11["mixes"].as_array().unwrap() {
        assert_eq!(
            (
                m["params"]["http10_percent"].as_u64(),
                m["params"]["persistent_percent"].as_u64()
            ),
            (Some(0), Some(100))
        );
    }
    // A connection per request under HTTP/1.0; HTTP/1.1 reuses them (the
    // server's keepalive_requests may close one now and then).
    let opened = |r: &serde_json::Value| r["mixes"][2]["connections_opened"].as_u64().unwrap();
    let requests = |r: &serde_json::Value| r["mixes"][2]["requests"].as_u64().unwrap();
    assert!(
        opened(&h10) * 2 >= requests(&h10),
        "{} connections for {} requests",
        opened(&h10),
        requests(&h10)
    );
    assert!(
        opened(&h11) * 10 < requests(&h11),
        "{} connections for {} requests",
        opened(&h11),
        requests(&h11)
    );
}

#[test]
fn cpus_pins_the_server_to_one_then_two_cpus() {
    let [one, two] = run_experiment("cpus", ["1cpu", "2cpus"]);
    assert_eq!(one["environment"]["server"]["cpus"], serde_json::json!([0]));
    let online = std::thread::available_parallelism().map_or(1, |n| n.get());
    if online == 2 {
        // The client on the other core beside 1 server CPU; sharing at 2.
        assert_eq!(one["environment"]["client_cpus"], serde_json::json!([1]));
        assert_eq!(two["environment"]["server"]["cpus"], serde_json::json!([0, 1]));
        assert_eq!(two["environment"]["client_cpus"], serde_json::json!([]));
    }
}

#[test]
fn list_describes_each_experiment_and_an_unknown_name_is_refused() {
    let base = tempfile::tempdir().unwrap();
    let o = reproduce(base.path(), &["--list"]);
    assert_success("reproduce --list", &o);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.starts_with("keepalive\n    HTTP/1.0 without keep-alive"),
        "{stdout}"
    );
    assert!(stdout.contains("\ncpus\n    One server pinned to 1 CPU"), "{stdout}");
    let o = reproduce(base.path(), &["nosuch"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("unknown experiment \"nosuch\" (expected one of: keepalive, cpus")
    );
}
