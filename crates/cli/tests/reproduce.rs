//! `benchlab reproduce`: the keepalive, cpus, servers, spi and cold-cache
//! experiments end to end against lab servers with time-scaled mixes (a
//! fraction of a second each), each side's results with the server's
//! disclosure, one side-by-side report, and no server left up; `--list`
//! and an unknown name.

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
        // cold-cache without root's cgroup path, as root too: it leaves the
        // shared machine's page cache alone (drop_caches is lab.rs's test).
        .env("BENCHLAB_COLD_CACHE", "cgroup")
        .output()
        .expect("run benchlab reproduce")
}

fn results(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&fs::read_to_string(dir.join("results.json")).unwrap()).unwrap()
}

/// Runs experiment `name` at time scale 0.05 and checks what every
/// experiment leaves: both sides' results, the report of both, a ratio line
/// and no server left up. Returns each side's results.
fn run_experiment(name: &str, sides: [&str; 2]) -> [serde_json::Value; 2] {
    let (r, stdout) = run_sides(name, &[], &sides, "0.05", &[3, 3]);
    assert!(stdout.starts_with(&format!("experiment {name} on nginx\n")), "{stdout}");
    assert!(stdout.contains(&format!("  {} ÷ {}: ", sides[1], sides[0])), "{stdout}");
    for (side, res) in sides.iter().zip(&r) {
        assert_eq!(res["environment"]["server"]["server"], "nginx", "{side}");
    }
    [r[0].clone(), r[1].clone()]
}

/// Runs experiment `name` with `args` at time scale `scale`; checks each
/// side's results (complete, `mixes` mixes, no error), the report showing
/// every side, and no server left up. Returns each side's results and
/// stdout.
fn run_sides(
    name: &str,
    args: &[&str],
    sides: &[&str],
    scale: &str,
    mixes: &[usize],
) -> (Vec<serde_json::Value>, String) {
    let base = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("x");
    let mut all = vec![name, "--time-scale", scale, "--out", dir.to_str().unwrap()];
    all.extend(args);
    let o = reproduce(base.path(), &all);
    assert_success(&format!("reproduce {name}"), &o);
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
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
    let r: Vec<serde_json::Value> = sides.iter().map(|s| results(&dir.join(s))).collect();
    for ((side, res), mixes) in sides.iter().zip(&r).zip(mixes) {
        assert_eq!(res["mixes"].as_array().unwrap().len(), *mixes, "{side}");
        assert!(res["complete"].as_bool().unwrap(), "{side}");
        for m in res["mixes"].as_array().unwrap() {
            assert_eq!(m["errors_total"], 0, "{side}: mix {}", m["mix"]);
            assert!(m["requests"].as_u64().unwrap() > 0, "{side}: mix {}", m["mix"]);
        }
    }
    (r, stdout)
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

/// servers: every lab server on the mindcraft-1998 workload, its dynamic
/// classes through the server's fastest SPI, one report of all five.
#[test]
fn servers_compares_every_lab_server_on_the_mindcraft_workload() {
    let sides = ["nginx", "apache-event", "apache-prefork", "lighttpd", "benchlab"];
    let (r, stdout) = run_sides("servers", &[], &sides, "0.03", &[3; 5]);
    assert!(
        stdout.starts_with("experiment servers on nginx, apache-event, apache-prefork, lighttpd, benchlab\n"),
        "{stdout}"
    );
    for (side, res) in sides.iter().zip(&r) {
        assert_eq!(res["environment"]["server"]["server"], *side);
        let spi = if *side == "benchlab" { "inproc" } else { "fastcgi" };
        // The seed's shares: 70 % static, 28 % ad rotation, 2 % session log.
        let classes: Vec<(String, f64)> = res["mixes"][0]["classes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| (c["name"].as_str().unwrap().to_owned(), c["percent"].as_f64().unwrap()))
            .collect();
        assert_eq!(
            classes,
            [("static".into(), 70.0), ("adrot".into(), 28.0), ("session".into(), 2.0)],
            "{side}"
        );
        assert!(
            res["suite"]["text"]
                .as_str()
                .unwrap()
                .contains(&format!("prefix = \"/spice/{spi}/adrot\"")),
            "{side}"
        );
        if *side != "nginx" {
            assert!(stdout.contains(&format!("  {side} ÷ nginx: ")), "{stdout}");
        }
    }
}

/// spi: per server a static phase and one per SPI it has, and each SPI's
/// rate as a share of its server's static rate.
#[test]
fn spi_runs_static_and_each_spi_under_each_server() {
    let sides = ["nginx", "benchlab"];
    let (r, stdout) = run_sides("spi", &["--servers", "nginx,benchlab"], &sides, "0.03", &[12, 4]);
    let phases = |res: &serde_json::Value| -> Vec<String> {
        res["phases"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(
        phases(&r[0]),
        ["static", "cgi-c", "cgi-script", "fastcgi", "wsgi", "asgi"]
    );
    assert_eq!(phases(&r[1]), ["static", "inproc"]);
    let line = |server: &str| {
        stdout
            .lines()
            .find(|l| l.starts_with(&format!("  {server} ")))
            .unwrap_or("")
            .to_owned()
    };
    for spi in ["cgi-c", "cgi-script", "fastcgi", "wsgi", "asgi"] {
        assert!(
            line("nginx").contains(&format!(", {spi} ")) && line("nginx").contains(" %)"),
            "{stdout}"
        );
    }
    assert!(line("benchlab").contains(", inproc "), "{stdout}");
}

/// cold-cache: ct-10k with the cache emptied before each mix (the cgroup
/// path here) against every file read beforehand.
#[test]
fn cold_cache_runs_cold_then_warm_on_ct_10k() {
    let (r, stdout) = run_sides("cold-cache", &[], &["cold", "warm"], "0.03", &[2, 2]);
    assert!(stdout.contains("  warm ÷ cold: "), "{stdout}");
    assert_eq!(r[0]["environment"]["cold_cache"], true);
    assert!(r[0]["environment"]["cold_cache_method"]
        .as_str()
        .unwrap()
        .starts_with("memory cgroup /"));
    assert_eq!(r[1]["environment"]["cold_cache"], false);
    for res in &r {
        assert!(res["suite"]["text"].as_str().unwrap().contains("name = \"ct-10k\""));
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
    assert!(stdout.contains("\nservers\n    nginx vs Apache (event and prefork MPMs) vs lighttpd vs benchlab serve on the mindcraft-1998"), "{stdout}");
    assert!(stdout.contains("\nspi\n    Static files vs each SPICE SPI"), "{stdout}");
    assert!(stdout.contains("\ncold-cache\n    The ct-10k file set"), "{stdout}");
    let o = reproduce(base.path(), &["keepalive", "--servers", "nginx"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--servers is for the servers and spi experiments"));
    let o = reproduce(base.path(), &["spi", "--servers", "nginx,iis"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--servers: unknown server \"iis\""));
    let o = reproduce(base.path(), &["nosuch"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr)
        .contains("unknown experiment \"nosuch\" (expected one of: keepalive, cpus, servers, spi, cold-cache;"));
}

/// `reproduce --help` names all five experiments in its description and in
/// NAME's (the flags' texts alone do not count).
#[test]
fn help_names_every_experiment() {
    let base = tempfile::tempdir().unwrap();
    let o = reproduce(base.path(), &["--help"]);
    assert_success("reproduce --help", &o);
    let help = String::from_utf8_lossy(&o.stdout);
    let (about, rest) = help.split_once("Usage:").expect("a usage line");
    let name_help = rest
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("[NAME]"))
        .take(3)
        .collect::<Vec<_>>()
        .join(" ");
    for e in ["keepalive", "cpus", "servers", "spi", "cold-cache"] {
        assert!(about.contains(e), "{e} missing from the description: {about}");
        assert!(name_help.contains(e), "{e} missing from NAME's help: {name_help}");
    }
}

/// A server of the experiment already up in the lab is found before
/// anything is generated: the error names it, and no file set is made.
#[test]
fn a_server_already_up_is_refused_before_the_file_set_is_made() {
    let base = tempfile::tempdir().unwrap();
    let up = Command::new(benchlab_bin())
        .args(["lab", "up", "benchlab"])
        .env("BENCHLAB_LAB_DIR", base.path())
        .output()
        .expect("run benchlab lab up");
    assert_success("lab up benchlab", &up);
    // Stops it whatever the assertions below do.
    struct Down<'a>(&'a Path);
    impl Drop for Down<'_> {
        fn drop(&mut self) {
            let _ = Command::new(benchlab_bin())
                .args(["lab", "down", "--all", "--grace", "3s"])
                .env("BENCHLAB_LAB_DIR", self.0)
                .output();
        }
    }
    let _down = Down(base.path());
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("x");
    let o = reproduce(
        base.path(),
        &["keepalive", "--server", "benchlab", "--out", dir.to_str().unwrap()],
    );
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("reproduce keepalive: already up in the lab: benchlab (http://127.0.0.1:"),
        "{err}"
    );
    assert!(!err.contains("fileset generate"), "{err}");
    assert!(!dir.exists(), "nothing is made before the check");
}
