//! CI gates end to end (docs/running.md, "Thresholds and JUnit"):
//! `--threshold` on `run` and `http` against benchlab's own server, whose
//! SPICE `sleep` endpoint answers no sooner than its `ms` (docs/spice.md),
//! so a p99 below 20 ms is a certain breach and one below 5 s a certain
//! pass; the verdicts and observed values in results.json; a bad expression
//! (exit 2); JUnit files validated by xmllint against tests/data/junit.xsd;
//! and a breach that Ctrl-C does not hide (exit 3, `partial`).

mod common;

use common::{run_benchlab, s, Serve};
use serde_json::Value;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// Every request sleeps this long in the server.
const SLEEP_MS: u64 = 50;

fn site() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir(dir.path().join("www")).expect("mkdir www");
    std::fs::write(dir.path().join("www/a.txt"), b"gates\n").expect("write a.txt");
    dir
}

fn sleep_path() -> String {
    format!("/spice/inproc/sleep/a.txt?ms={SLEEP_MS}")
}

/// A one-phase (`w`) suite of one mix of `length` against the sleep
/// endpoint.
fn suite(dir: &Path, length: &str) -> std::path::PathBuf {
    let text = format!(
        "name = \"gates\"\n[defaults]\nramp_up = \"0s\"\nramp_down = \"0s\"\nlength = \"{length}\"\n\
         threads_per_client = 2\n[workloads.w]\n[[workloads.w.class]]\nname = \"slow\"\npercent = 100\n\
         [[workloads.w.class.url]]\npath = \"{}\"\n[[mix]]\nclients = 1\n",
        sleep_path()
    );
    let p = dir.join("gates.toml");
    std::fs::write(&p, text).expect("write the suite");
    p
}

fn read_json(p: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display())))
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `xmllint --schema tests/data/junit.xsd FILE` succeeds.
fn assert_junit_valid(file: &Path) {
    common::require("xmllint");
    let xsd = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/junit.xsd");
    let o = Command::new("xmllint")
        .args(["--noout", "--schema", s(&xsd), s(file)])
        .output()
        .expect("run xmllint (Debian package libxml2-utils)");
    assert!(
        o.status.success(),
        "{} does not validate against {}:\n{}\n{}",
        file.display(),
        xsd.display(),
        stderr(&o),
        std::fs::read_to_string(file).unwrap_or_default()
    );
}

#[test]
fn run_records_each_threshold_with_its_observed_value_and_exits_3_on_a_breach() {
    let dir = site();
    let serve = Serve::start(&dir.path().join("www"), &[]);
    let suite = suite(dir.path(), "1s");
    let out = dir.path().join("res");
    let junit = dir.path().join("junit.xml");
    let o = run_benchlab(&[
        "run",
        s(&suite),
        "--target",
        &serve.url(""),
        "--out",
        s(&out),
        "--threshold",
        "p99<5s",
        "--threshold",
        "phase:w:p99<20ms",
        "--threshold",
        "errors<0.1%",
        "--threshold",
        "mix:1:p50>=50ms",
        "--junit",
        s(&junit),
    ]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let r = read_json(&out.join("results.json"));
    let t = r["thresholds"].as_array().expect("thresholds in results.json");
    let row = |i: usize| {
        (
            t[i]["expression"].as_str().unwrap_or_default().to_string(),
            t[i]["scope"].as_str().unwrap_or_default().to_string(),
            t[i]["status"].as_str().unwrap_or_default().to_string(),
        )
    };
    assert_eq!(t.len(), 4, "{t:?}");
    assert_eq!(row(0), ("p99<5s".into(), "run".into(), "pass".into()));
    assert_eq!(row(1), ("phase:w:p99<20ms".into(), "phase:w".into(), "fail".into()));
    assert_eq!(row(2), ("errors<0.1%".into(), "run".into(), "pass".into()));
    assert_eq!(row(3), ("mix:1:p50>=50ms".into(), "mix:1".into(), "pass".into()));
    // The observed value is the mix's own figure, in the metric's unit.
    let mix = &r["mixes"][0];
    assert_eq!(t[1]["observed"].as_f64(), mix["latency_us"]["p99"].as_f64());
    assert!(
        t[1]["observed"].as_f64().unwrap_or(0.0) >= (SLEEP_MS * 1000) as f64,
        "{t:?}"
    );
    assert_eq!(t[1]["limit"].as_f64(), Some(20_000.0));
    assert_eq!(t[1]["unit"], "us");
    assert_eq!(t[1]["mix"], 1);
    assert_eq!(t[2]["observed"].as_f64(), Some(0.0));
    assert_eq!(t[3]["observed"].as_f64(), mix["latency_us"]["p50"].as_f64());
    // The terminal and the report say it too.
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("threshold phase:w:p99<20ms (phase:w): FAIL, observed"),
        "{stdout}"
    );
    assert!(stdout.contains("threshold p99<5s (run): pass"), "{stdout}");
    let html = std::fs::read_to_string(out.join("report.html")).expect("report.html");
    assert!(
        html.contains("id=\"thresholds\"") && html.contains("phase:w:p99&lt;20ms"),
        "no thresholds section"
    );
    // One test case per threshold, one failed.
    let x = std::fs::read_to_string(&junit).expect("the JUnit file");
    assert_eq!(x.matches("<testcase ").count(), 4, "{x}");
    assert_eq!(x.matches("<failure ").count(), 1, "{x}");
    assert!(x.contains("tests=\"4\" failures=\"1\" errors=\"0\""), "{x}");
    assert_junit_valid(&junit);

    // Every threshold kept: exit 0, and a compare of the run with itself
    // writes a passing case per phase and figure.
    let o = run_benchlab(&[
        "http",
        "-t",
        "2",
        "-d",
        "1s",
        "--json",
        "--threshold",
        "p99<5s",
        "--max-error-rate",
        "0",
        &serve.url(&sleep_path()),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).expect("--json");
    let t = v["thresholds"].as_array().expect("thresholds");
    let exprs: Vec<&str> = t.iter().map(|t| t["expression"].as_str().unwrap_or_default()).collect();
    assert_eq!(exprs, ["p99<5s", "--max-error-rate 0"]);
    assert!(t.iter().all(|t| t["status"] == "pass"), "{t:?}");

    let cj = dir.path().join("compare.xml");
    let o = run_benchlab(&[
        "compare",
        s(&out),
        s(&out),
        "--out",
        s(&dir.path().join("cmp")),
        "--junit",
        s(&cj),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let x = std::fs::read_to_string(&cj).expect("compare's JUnit file");
    assert_eq!(x.matches("<testcase ").count(), 2, "{x}");
    assert!(
        x.contains("name=\"phase w: peak\"") && x.contains("name=\"phase w: p99\""),
        "{x}"
    );
    assert_eq!(x.matches("<failure ").count(), 0, "{x}");
    assert_junit_valid(&cj);
}

#[test]
fn a_bad_threshold_is_a_usage_error_naming_the_flag_before_any_request() {
    let dir = site();
    let suite = suite(dir.path(), "1s");
    // Nothing listens there: a run that started would fail its preflight
    // (exit 1), so exit 2 shows the refusal came first.
    let target = format!("http://127.0.0.1:{}/", common::free_port());
    for (expr, says) in [
        ("p99<250", "a latency needs its unit"),
        ("latency<1s", "unknown metric `latency`"),
        ("p99", "no comparison"),
        ("errors<150%", "a percentage from 0% to 100%"),
    ] {
        let o = run_benchlab(&["run", s(&suite), "--target", &target, "--threshold", expr]);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{expr}: {e}");
        assert!(
            e.contains("--threshold") && e.contains(says) && e.contains("expected"),
            "{expr}: {e}"
        );
        let o = run_benchlab(&["http", "--threshold", expr, &target]);
        assert_eq!(o.status.code(), Some(2), "http {expr}: {}", stderr(&o));
    }
    // A scope the suite does not have is refused before the run.
    let out = dir.path().join("never");
    let o = run_benchlab(&[
        "run",
        s(&suite),
        "--target",
        &target,
        "--out",
        s(&out),
        "--threshold",
        "phase:static:p99<1s",
    ]);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(
        e.contains("--threshold") && e.contains("no phase `static`") && e.contains("w"),
        "{e}"
    );
    assert!(!out.exists(), "a refused run wrote {}", out.display());
    // --junit with nothing to report is refused by name.
    let o = run_benchlab(&["http", "--junit", s(&dir.path().join("j.xml")), &target]);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(e.contains("--junit") && e.contains("--threshold"), "{e}");
}

/// Starts `benchlab ARGS`, sends it SIGINT after `after`, and returns its
/// exit code, stdout and stderr.
fn interrupted(args: &[&str], after: Duration) -> (Option<i32>, String, String) {
    let mut child = Command::new(common::benchlab_bin())
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start benchlab");
    std::thread::sleep(after);
    let kill = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(kill.success());
    let (mut out, mut err) = (String::new(), String::new());
    child
        .stdout
        .take()
        .expect("stdout")
        .read_to_string(&mut out)
        .expect("stdout");
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut err)
        .expect("stderr");
    let status = child.wait().expect("wait");
    (status.code(), out, err)
}

#[test]
fn ctrl_c_keeps_what_was_measured_as_partial_and_never_hides_a_breach() {
    let dir = site();
    let serve = Serve::start(&dir.path().join("www"), &[]);
    let url = serve.url(&sleep_path());

    // http: no breach → 130 with `partial`, the threshold kept as passed.
    let (code, out, err) = interrupted(
        &["http", "-t", "2", "-d", "20s", "--json", "--max-p99", "1s", &url],
        Duration::from_millis(2000),
    );
    assert_eq!(code, Some(130), "{err}");
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(v["mixes"][0]["partial"], true, "{out}");
    assert!(v["mixes"][0]["requests"].as_u64().unwrap_or(0) > 0, "{out}");
    assert_eq!(v["thresholds"][0]["status"], "pass", "{out}");

    // http: a breach measured before Ctrl-C → 3, still `partial`.
    let (code, out, err) = interrupted(
        &[
            "http",
            "-t",
            "2",
            "-d",
            "20s",
            "--json",
            "--threshold",
            "p99<20ms",
            &url,
        ],
        Duration::from_millis(2000),
    );
    assert_eq!(code, Some(3), "{err}");
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(v["mixes"][0]["partial"], true, "{out}");
    assert_eq!(v["thresholds"][0]["status"], "fail", "{out}");
    assert!(err.contains("threshold p99<20ms (run): FAIL"), "{err}");

    // run: the same, in results.json.
    let suite = suite(dir.path(), "20s");
    let res = dir.path().join("res");
    let (code, _, err) = interrupted(
        &[
            "run",
            s(&suite),
            "--target",
            &serve.url(""),
            "--out",
            s(&res),
            "--threshold",
            "p99<20ms",
        ],
        Duration::from_millis(2500),
    );
    assert_eq!(code, Some(3), "{err}");
    assert!(err.contains("interrupted"), "{err}");
    let r = read_json(&res.join("results.json"));
    assert_eq!(r["mixes"][0]["partial"], true);
    assert_eq!(r["complete"], false);
    assert_eq!(r["thresholds"][0]["status"], "fail", "{r}");
    assert!(r["thresholds"][0]["observed"].as_f64().unwrap_or(0.0) >= (SLEEP_MS * 1000) as f64);
}
