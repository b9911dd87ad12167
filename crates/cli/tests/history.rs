//! `benchlab history` (docs/history.md) with the real binary: runs recorded
//! in SQLite files in temp dirs and in a real PostgreSQL started by the test
//! (initdb into a temp dir, an unprivileged user, a loopback high port),
//! `run --record` of a real run against `benchlab serve`, and `compare
//! --against last:N`.

mod common;

use common::{assert_success, benchlab_bin, run_benchlab, s, Serve};
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `benchlab ARGS --db DB`, which must succeed; its stdout.
fn ok(db: &str, args: &[&str]) -> String {
    let mut all = args.to_vec();
    all.extend(["--db", db]);
    let out = run_benchlab(&all);
    assert_success(&format!("benchlab {all:?}"), &out);
    stdout(&out)
}

/// `benchlab http --json`'s results of schema 1 (20,103 requests/s, p99
/// 217 µs), upgraded by the loader, as a modern results.json value.
fn http_fixture() -> serde_json::Value {
    let f = Path::new(env!("CARGO_MANIFEST_DIR")).join("../results/tests/fixtures/http-1.json");
    let run = benchlab_report::load_run(&f).expect("fixture loads");
    serde_json::to_value(&run.results).expect("to JSON")
}

/// A results directory made from the fixture: started at `started`, its
/// mix's requests/s (and each second's requests) times `scale`, and the
/// server disclosed as `server` (name, version) when given.
fn synthetic(dir: &Path, base: &serde_json::Value, started: u64, scale: f64, server: Option<(&str, &str)>) -> PathBuf {
    let mut v = base.clone();
    v["environment"]["started_unix"] = started.into();
    let mix = &mut v["mixes"][0];
    let rps = mix["requests_per_sec"].as_f64().expect("rps") * scale;
    mix["requests_per_sec"] = rps.into();
    if let Some(secs) = mix["per_second"].as_array_mut() {
        for sec in secs {
            let r = sec["requests"].as_f64().unwrap_or(0.0) * scale;
            sec["requests"] = (r.round() as u64).into();
        }
    }
    if let Some((name, version)) = server {
        v["environment"]["server"] = serde_json::json!({
            "server": name,
            "version": version,
            "url": "http://127.0.0.1:8080/",
            "cpus": [],
            "profile": "workers = 2\n",
            "effective_configuration": [{"source": "nginx -T", "text": "worker_processes 2;\n"}],
        });
    }
    std::fs::create_dir_all(dir).expect("mkdir");
    std::fs::write(dir.join("results.json"), serde_json::to_string(&v).expect("JSON")).expect("write");
    dir.to_path_buf()
}

/// A day of runs: nginx 1.22 twice, then nginx 1.24, one of the first
/// series a partial run.
fn three_runs(work: &Path) -> Vec<PathBuf> {
    let base = http_fixture();
    let mut partial = base.clone();
    partial["complete"] = false.into();
    vec![
        synthetic(&work.join("r1"), &base, 1_790_000_000, 1.0, Some(("nginx", "1.22.1"))),
        synthetic(&work.join("r2"), &base, 1_790_003_600, 1.1, Some(("nginx", "1.22.1"))),
        synthetic(
            &work.join("r3"),
            &partial,
            1_790_007_200,
            0.5,
            Some(("nginx", "1.22.1")),
        ),
        synthetic(&work.join("r4"), &base, 1_790_010_800, 1.3, Some(("nginx", "1.24.0"))),
    ]
}

/// What the history commands print for the runs of [`three_runs`]
/// recorded in `db`: add, list, list --suite, show, trend.
fn history_outputs(db: &str, dirs: &[PathBuf]) -> Vec<String> {
    let mut add = vec!["history", "add"];
    add.extend(dirs.iter().map(|d| s(d)));
    let mut outs = vec![ok(db, &add)
        // The recorded time differs between two adds; the rest must not.
        .lines()
        .map(|l| l.to_string() + "\n")
        .collect::<String>()];
    outs.push(ok(db, &["history", "list"]));
    outs.push(ok(db, &["history", "list", "--suite", "http"]));
    let show = ok(db, &["history", "show", "2"]);
    // "recorded <when>" is the time of the add.
    outs.push(
        show.lines()
            .map(|l| match l.find(", recorded ") {
                Some(i) => format!("{}…\n", &l[..i]),
                None => format!("{l}\n"),
            })
            .collect(),
    );
    outs.push(ok(db, &["history", "show", "#2", "--json"]));
    outs.push(ok(db, &["history", "trend", "http"]));
    outs
}

/// The trend's exact figures for [`three_runs`]: a series per server
/// version and configuration, the partial run marked and left out of the
/// changes.
fn check_trend(trend: &str) {
    let expected = "\
trend of suite `http`: 4 runs, 2 series (server version and configuration), oldest first

server nginx 1.22.1, configuration 9f6107ca: 3 runs
phase http:
";
    assert!(trend.starts_with(expected), "{trend}");
    for line in [
        "  RUN  STARTED (UTC)     PEAK requests/s   CHANGE  P99 AT PEAK  USEFUL PEAK requests/s  ERRORS",
        "   #1  2026-09-21 14:13         20,103.0        -       217 µs                20,103.0       0",
        "   #2  2026-09-21 15:13         22,113.3  +10.0 %       217 µs                22,113.3       0",
        "   #3  2026-09-21 16:13         10,051.5        -       217 µs                10,051.5       0  partial",
        "  peak over 2 complete runs: lowest 20,103.0, median 21,108.2, highest 22,113.3 requests/s; the latest is \
         +10.0 % against the median of the 1 run before it",
        "   #4  2026-09-21 17:13         26,133.9       -       217 µs                26,133.9       0",
        "server nginx 1.24.0, configuration 9f6107ca: 1 run",
    ] {
        assert!(trend.lines().any(|l| l == line), "no line {line:?} in\n{trend}");
    }
}

#[test]
fn add_list_show_and_trend_on_sqlite() {
    let work = tempfile::tempdir().expect("tempdir");
    let db = work.path().join("h.sqlite");
    let dirs = three_runs(work.path());
    let outs = history_outputs(s(&db), &dirs);
    assert!(
        outs[0].starts_with("recorded #1: suite `http`, started 2026-09-21 14:13 UTC, from "),
        "{}",
        outs[0]
    );
    assert!(outs[0].contains("recorded #3: suite `http`, started 2026-09-21 16:13 UTC, partial, from "));
    let list = &outs[1];
    assert_eq!(list.lines().count(), 6, "{list}");
    assert!(
        list.lines()
            .nth(3)
            .unwrap_or("")
            .ends_with("10,051.5 requests/s    20,103       0  partial"),
        "{list}"
    );
    assert_eq!(list.lines().last(), Some("4 runs"));
    check_trend(&outs[5]);
    // show --json prints the results.json as it was recorded.
    let recorded = std::fs::read_to_string(dirs[1].join("results.json")).expect("read");
    assert_eq!(outs[4], format!("{recorded}\n"));
    // Adding a run again records nothing new.
    let again = ok(s(&db), &["history", "add", s(&dirs[0])]);
    assert!(again.starts_with("already recorded as #1: "), "{again}");
    // The page: a chart per phase and figure, each run a point.
    let page = work.path().join("trend.html");
    let wrote = ok(s(&db), &["history", "trend", "http", "--html", s(&page)]);
    assert_eq!(wrote, format!("wrote {}\n", page.display()));
    let html = std::fs::read_to_string(&page).expect("page");
    assert_eq!(
        html.matches("<figure class=\"chart\"").count(),
        4,
        "peak, p99, useful peak, errors"
    );
    assert_eq!(html.matches("data-chart=\"peak\"").count(), 4, "one point per run");
    // Run #2's peak exactly as its results.json has it.
    assert!(
        html.contains(&format!("data-y=\"{}\"", 20103.0f64 * 1.1)),
        "run #2's exact peak"
    );
}

#[test]
fn bad_input_is_a_message_not_a_panic() {
    let work = tempfile::tempdir().expect("tempdir");
    let db = work.path().join("h.sqlite");
    let cases: [(Vec<&str>, i32, &str); 5] = [
        (vec!["history", "show", "7"], 2, "has no run #7"),
        (vec!["history", "show", "x"], 2, "expected a run's number"),
        (vec!["history", "trend", "nope"], 2, "has no run of suite `nope`"),
        (
            vec!["history", "add", "/nonexistent/run"],
            1,
            "/nonexistent/run/results.json",
        ),
        (vec!["compare", "--against", "last:0", "/tmp"], 2, "expected last:N"),
    ];
    for (args, code, phrase) in cases {
        let mut all = args.clone();
        all.extend(["--db", s(&db)]);
        let out = run_benchlab(&all);
        assert_eq!(out.status.code(), Some(code), "{all:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(phrase), "{all:?}: {}", stderr(&out));
        assert!(!stderr(&out).contains("panicked"), "{}", stderr(&out));
    }
    // --db of compare applies to --against only: refused by name without it.
    let out = run_benchlab(&["compare", "/tmp", "/tmp", "--db", s(&db)]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--against"), "{}", stderr(&out));
    let out = run_benchlab(&["history", "list", "--db", "postgres://bench:s3cret@127.0.0.1:1/none"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("postgres://bench:***@127.0.0.1:1/none"),
        "{}",
        stderr(&out)
    );
    assert!(!stderr(&out).contains("s3cret"), "{}", stderr(&out));
}

/// Without --db the database is `$XDG_DATA_HOME/benchlab/history.sqlite`,
/// else `~/.local/share/benchlab/history.sqlite`.
#[test]
fn the_default_database_is_in_the_users_data_directory() {
    let work = tempfile::tempdir().expect("tempdir");
    let dirs = three_runs(work.path());
    let xdg = work.path().join("xdg");
    let home = work.path().join("home");
    let run = |xdg: Option<&Path>, args: &[&str]| {
        let mut c = Command::new(benchlab_bin());
        c.args(args).env("HOME", &home).env_remove("XDG_DATA_HOME");
        if let Some(x) = xdg {
            c.env("XDG_DATA_HOME", x);
        }
        let out = c.output().expect("run benchlab");
        assert_success(&format!("{args:?}"), &out);
        stdout(&out)
    };
    run(Some(&xdg), &["history", "add", s(&dirs[0])]);
    assert!(xdg.join("benchlab/history.sqlite").is_file());
    run(None, &["history", "add", s(&dirs[1]), s(&dirs[2])]);
    assert!(home.join(".local/share/benchlab/history.sqlite").is_file());
    assert_eq!(run(Some(&xdg), &["history", "list"]).lines().last(), Some("1 run"));
    assert_eq!(run(None, &["history", "list"]).lines().last(), Some("2 runs"));
    let out = run_benchlab(&["history", "list", "--db", ""]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

/// A database a newer benchlab migrated is refused, with both versions
/// named, and left as it was.
#[test]
fn a_newer_schema_is_refused() {
    let work = tempfile::tempdir().expect("tempdir");
    let db = work.path().join("h.sqlite");
    ok(s(&db), &["history", "list"]);
    let py = "import sqlite3, sys\nc = sqlite3.connect(sys.argv[1])\n\
              c.execute('INSERT INTO schema_version (version) VALUES (99)')\nc.commit()\n";
    let st = Command::new("python3")
        .args(["-c", py, s(&db)])
        .status()
        .expect("python3");
    assert!(st.success());
    let out = run_benchlab(&["history", "list", "--db", s(&db)]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(
        stderr(&out),
        format!(
            "benchlab: history database {} has schema version 99; this benchlab reads schema versions up to 1: \
             use the newer benchlab that wrote it (or another --db)\n",
            db.display()
        )
    );
}

/// Two `history add` processes at once into one new database: every run
/// is recorded; then both add the same runs at once: each is recorded
/// once, and neither fails.
fn concurrent_adds(db: &str, work: &Path) {
    let base = http_fixture();
    let per = 25;
    let sets: Vec<Vec<PathBuf>> = (0..2)
        .map(|p| {
            (0..per)
                .map(|i| {
                    let n = p * per + i;
                    synthetic(&work.join(format!("c{n}")), &base, 1_790_000_000 + n as u64, 1.0, None)
                })
                .collect()
        })
        .collect();
    let children: Vec<_> = sets
        .iter()
        .map(|dirs| {
            Command::new(benchlab_bin())
                .args(["history", "add", "--db", db])
                .args(dirs)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("start history add")
        })
        .collect();
    for c in children {
        let out = c.wait_with_output().expect("wait");
        assert_success("history add", &out);
        assert_eq!(stdout(&out).matches("recorded #").count(), per, "{}", stdout(&out));
    }
    let list = ok(db, &["history", "list"]);
    assert_eq!(list.lines().last(), Some("50 runs"), "{list}");
    let mut ids: Vec<u32> = list
        .lines()
        .filter_map(|l| {
            l.trim_start()
                .strip_prefix('#')?
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        })
        .collect();
    ids.sort_unstable();
    assert_eq!(ids, (1..=50).collect::<Vec<_>>());
    let same: Vec<PathBuf> = (0..10)
        .map(|i| synthetic(&work.join(format!("s{i}")), &base, 1_791_000_000 + i, 1.0, None))
        .collect();
    let children: Vec<_> = (0..2)
        .map(|_| {
            Command::new(benchlab_bin())
                .args(["history", "add", "--db", db])
                .args(&same)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("start history add")
        })
        .collect();
    let mut new = 0;
    for c in children {
        let out = c.wait_with_output().expect("wait");
        assert_success("history add of the same runs", &out);
        let text = stdout(&out);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 10, "a line per run: {text}");
        assert!(
            lines
                .iter()
                .all(|l| l.starts_with("recorded #") || l.starts_with("already recorded as #")),
            "{text}"
        );
        new += lines.iter().filter(|l| l.starts_with("recorded #")).count();
    }
    assert_eq!(new, 10, "each run recorded by one of the two");
    let list = ok(db, &["history", "list"]);
    assert_eq!(list.lines().last(), Some("60 runs"), "{list}");
}

#[test]
fn two_concurrent_adds_lose_nothing_on_sqlite() {
    let work = tempfile::tempdir().expect("tempdir");
    let db = work.path().join("h.sqlite");
    concurrent_adds(s(&db), work.path());
}

/// 1,000 recorded runs: `list --suite` and `trend` each take well under
/// a second (the issue's goal; indexed reads, see the crate's plan tests).
fn thousand_runs(db: &str, work: &Path) {
    // One serialised template, its start, rate and server version replaced
    // per run (serialising 1,000 values in a debug build takes seconds).
    let mut v = http_fixture();
    v["environment"]["started_unix"] = 4_242_424_242u64.into();
    v["mixes"][0]["requests_per_sec"] = 1_234_567.25.into();
    let template = synthetic(
        &work.join("template"),
        &v,
        4_242_424_242,
        1.0,
        Some(("nginx", "VERSION-X")),
    );
    let template = std::fs::read_to_string(template.join("results.json")).expect("template");
    assert_eq!(template.matches("4242424242").count(), 1);
    assert_eq!(template.matches("1234567.25").count(), 1);
    let dirs: Vec<PathBuf> = (0..1000u64)
        .map(|i| {
            let version = if i < 500 { "1.22.1" } else { "1.24.0" };
            let rps = 20_103.0 * (1.0 + (i % 7) as f64 / 100.0);
            let text = template
                .replace("4242424242", &(1_790_000_000 + i * 3600).to_string())
                .replace("1234567.25", &rps.to_string())
                .replace("VERSION-X", version);
            let d = work.join(format!("t{i}"));
            std::fs::create_dir_all(&d).expect("mkdir");
            std::fs::write(d.join("results.json"), text).expect("write");
            d
        })
        .collect();
    let out = Command::new(benchlab_bin())
        .args(["history", "add", "--db", db])
        .args(&dirs)
        .output()
        .expect("history add");
    assert_success("history add of 1,000 runs", &out);
    for args in [
        &["history", "list", "--suite", "http"][..],
        &["history", "trend", "http"][..],
    ] {
        let start = Instant::now();
        let out = Command::new(benchlab_bin())
            .args(args)
            .args(["--db", db])
            .output()
            .expect("run");
        let took = start.elapsed();
        assert_success(&format!("{args:?}"), &out);
        let text = stdout(&out);
        let on = if db.starts_with("postgres://") {
            "PostgreSQL"
        } else {
            "SQLite"
        };
        eprintln!("{args:?} of 1,000 runs on {on}: {took:?}");
        assert!(took < Duration::from_secs(1), "{args:?} took {took:?}");
        if args[1] == "list" {
            assert_eq!(text.lines().last(), Some("1,000 runs"));
        } else {
            assert!(
                text.starts_with("trend of suite `http`: 1,000 runs, 2 series"),
                "{}",
                &text[..200]
            );
            assert!(text.contains("peak over 500 complete runs"), "trend of each series");
        }
    }
}

#[test]
fn a_thousand_runs_list_and_trend_in_under_a_second_on_sqlite() {
    let work = tempfile::tempdir().expect("tempdir");
    let db = work.path().join("h.sqlite");
    thousand_runs(s(&db), work.path());
}

/// A tiny suite against `benchlab serve`: mix 1 of 1 s, mix 2 of `second`.
fn tiny_suite(dir: &Path, second: &str) -> PathBuf {
    std::fs::create_dir_all(dir.join("root")).expect("mkdir");
    std::fs::write(dir.join("root/index.html"), "hello history\n").expect("write");
    let suite = dir.join("tiny.toml");
    std::fs::write(
        &suite,
        format!(
            r#"name = "tiny-history"
target = "http://127.0.0.1:9"
[defaults]
length = "1s"
ramp_up = "0.2s"
ramp_down = "0.1s"
threads_per_client = 1
[workloads.one]
[[workloads.one.class]]
name = "index"
percent = 100
[[workloads.one.class.url]]
path = "/index.html"
[[mix]]
clients = 1
[[mix]]
clients = 1
threads_per_client = 2
length = "{second}"
"#
        ),
    )
    .expect("write suite");
    suite
}

/// `run --record`: the run is recorded when it ends, with the figures of
/// its results.json.
#[test]
fn run_record_records_the_finished_run() {
    let work = tempfile::tempdir().expect("tempdir");
    let suite = tiny_suite(work.path(), "1s");
    let server = Serve::start(&work.path().join("root"), &[]);
    let db = work.path().join("h.sqlite");
    let res = work.path().join("res");
    let out = run_benchlab(&[
        "run",
        s(&suite),
        "--target",
        &server.url(""),
        "--out",
        s(&res),
        "--record",
        "--db",
        s(&db),
    ]);
    drop(server);
    assert_success("run --record", &out);
    assert!(
        stderr(&out).contains("history: recorded #1: suite `tiny-history`"),
        "{}",
        stderr(&out)
    );
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(res.join("results.json")).expect("results")).expect("JSON");
    let requests: u64 = r["mixes"]
        .as_array()
        .expect("mixes")
        .iter()
        .map(|m| m["requests"].as_u64().unwrap_or(0))
        .sum();
    assert!(requests > 0);
    let list = ok(s(&db), &["history", "list"]);
    let row = list.lines().nth(1).expect("a row");
    assert!(
        row.ends_with(&format!("{}       0  complete", benchlab_format::thousands(requests))),
        "{list}"
    );
    // The same directory added again is the same run.
    let again = ok(s(&db), &["history", "add", s(&res)]);
    assert!(again.starts_with("already recorded as #1"), "{again}");
    // --db without --record is refused by name.
    let out = run_benchlab(&["run", s(&suite), "--db", s(&db)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--record"), "{}", stderr(&out));
}

/// A file suite's run recorded: its peak is its Mbit/s, as its report's.
#[test]
fn run_record_of_a_file_suite_keeps_its_mbit_per_sec() {
    let work = tempfile::tempdir().expect("tempdir");
    let root = work.path().join("root");
    std::fs::create_dir_all(&root).expect("mkdir");
    std::fs::write(
        work.path().join("load.txt"),
        "Mkdir \"\\clients\" NT_STATUS_OK\n\
         NTCreateX \"\\clients\\client1\\a.txt\" 0x40 0x2 1 NT_STATUS_OK\n\
         WriteX 1 0 100 100 NT_STATUS_OK\n\
         Close 1 NT_STATUS_OK\n\
         Unlink \"\\clients\\client1\\a.txt\" 0x6 NT_STATUS_OK\n",
    )
    .expect("loadfile");
    let suite = work.path().join("files.toml");
    std::fs::write(
        &suite,
        format!(
            "name = \"files\"\ntarget = \"file://{}\"\n[workloads.lf]\nloadfile = \"load.txt\"\nloops = 2\n\
             [defaults]\nramp_up = \"0s\"\nramp_down = \"0s\"\nlength = \"1s\"\n[[mix]]\nclients = 1\n",
            root.display()
        ),
    )
    .expect("suite");
    let db = work.path().join("h.sqlite");
    let res = work.path().join("res");
    let out = run_benchlab(&["run", s(&suite), "--out", s(&res), "--record", "--db", s(&db)]);
    assert_success("run --record of a file suite", &out);
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(res.join("results.json")).expect("results")).expect("JSON");
    let mbit = r["mixes"][0]["mbit_per_sec"].as_f64().expect("mbit_per_sec");
    let list = ok(s(&db), &["history", "list"]);
    let row = list.lines().nth(1).expect("a row");
    assert!(
        row.contains(&format!("  {} Mbit/s  ", benchlab_format::mbit_per_sec(mbit))),
        "{list}"
    );
    let show = ok(s(&db), &["history", "show", "1"]);
    assert!(show.contains("run #1: suite `files` (file suite)"), "{show}");
    assert!(show.contains("PEAK Mbit/s"), "{show}");
}

/// `run --record` stopped by Ctrl-C in its second mix: recorded, marked
/// partial, and the run still exits 130.
#[test]
fn run_record_marks_an_interrupted_run_partial() {
    let work = tempfile::tempdir().expect("tempdir");
    let suite = tiny_suite(work.path(), "60s");
    let server = Serve::start(&work.path().join("root"), &[]);
    let db = work.path().join("h.sqlite");
    let res = work.path().join("res");
    let mut child = Command::new(benchlab_bin())
        .args(["run", s(&suite), "--target", &server.url(""), "--out", s(&res)])
        .args(["--record", "--db", s(&db)])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start run");
    let (tx, rx) = mpsc::channel::<String>();
    let err = child.stderr.take().expect("stderr");
    let reader = std::thread::spawn(move || {
        let mut all = String::new();
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            all.push_str(&line);
            all.push('\n');
            let _ = tx.send(line);
        }
        all
    });
    let mut out = child.stdout.take().expect("stdout");
    let out_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(line) if line.starts_with("mix 2 (") => break,
            Ok(_) => {}
            Err(e) => {
                let _ = child.kill();
                panic!("mix 2 never started ({e})");
            }
        }
    }
    // SAFETY: kill(2) of the child this test started and has not waited for.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().expect("wait");
    let all = reader.join().expect("stderr");
    let _ = out_reader.join();
    drop(server);
    assert_eq!(status.code(), Some(130), "{all}");
    assert!(all.contains("history: recorded #1: suite `tiny-history`"), "{all}");
    assert!(all.contains(", partial, from "), "{all}");
    let list = ok(s(&db), &["history", "list"]);
    assert!(list.lines().nth(1).unwrap_or("").ends_with("partial"), "{list}");
    // A partial run is no baseline for compare --against.
    let out = run_benchlab(&["compare", "--against", "last:3", s(&res), "--db", s(&db)]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("no run of suite `tiny-history`"),
        "{}",
        stderr(&out)
    );
}

/// `compare --against last:3`: the three last recorded runs are the base,
/// their spread the noise; a run at half their rate regressed (exit 3), one
/// like them did not.
#[test]
fn compare_against_the_last_recorded_runs() {
    let work = tempfile::tempdir().expect("tempdir");
    let db = work.path().join("h.sqlite");
    let base = http_fixture();
    let mut add = vec!["history".to_string(), "add".into()];
    // Run #1 (oldest) is slow; #2 to #4 are within 1 % of the fixture.
    for (i, scale) in [0.6, 0.99, 1.01, 1.0].iter().enumerate() {
        let d = synthetic(
            &work.path().join(format!("b{i}")),
            &base,
            1_790_000_000 + i as u64,
            *scale,
            None,
        );
        add.push(s(&d).to_string());
    }
    let add: Vec<&str> = add.iter().map(String::as_str).collect();
    ok(s(&db), &add);
    let new = synthetic(&work.path().join("new"), &base, 1_790_001_000, 0.5, None);
    let out = run_benchlab(&["compare", "--against", "last:3", s(&new), "--db", s(&db)]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(3), "{text}{}", stderr(&out));
    // The base's peak is its median run's (×1.00 of the fixture).
    assert!(text.contains("peak 20,103.0 → 10,051.5 requests/s, ×0.500"), "{text}");
    assert!(
        text.contains("noise from BASE 3 repeats, NEW 1 second): regressed"),
        "{text}"
    );
    assert!(text.contains("REGRESSION: "), "{text}");
    let same = synthetic(&work.path().join("same"), &base, 1_790_002_000, 1.0, None);
    let out = run_benchlab(&["compare", "--against", "last:3", s(&same), "--db", s(&db)]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
    assert!(
        text.contains("against base: last 3 recorded runs of #4, #3, #2"),
        "{text}"
    );
    // last:4 takes the slow run in too: 4 repeats.
    let out = run_benchlab(&["compare", "--against", "last:4", s(&same), "--db", s(&db)]);
    assert!(stdout(&out).contains("noise from BASE 4 repeats"), "{}", stdout(&out));
    // --against takes one directory, not two.
    let out = run_benchlab(&["compare", "--against", "last:3", s(&same), s(&new)]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

/// A PostgreSQL cluster of its own: initdb into a temp dir and started on
/// a loopback high port, as `nobody` when the test runs as root (initdb
/// refuses root). Stopped on drop.
struct Postgres {
    bin: PathBuf,
    dir: tempfile::TempDir,
    port: u16,
}

impl Postgres {
    /// The newest /usr/lib/postgresql/N/bin with initdb, or None.
    fn bin() -> Option<PathBuf> {
        let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
            .ok()?
            .filter_map(|e| {
                let e = e.ok()?;
                let v: u32 = e.file_name().to_str()?.parse().ok()?;
                let bin = e.path().join("bin");
                bin.join("initdb").is_file().then_some((v, bin))
            })
            .collect();
        found.sort();
        found.pop().map(|(_, b)| b)
    }

    /// Starts one, or says loudly why not: the binaries are missing and CI
    /// is not set (in CI a missing PostgreSQL fails the test).
    fn start() -> Option<Postgres> {
        let Some(bin) = Self::bin() else {
            assert!(
                std::env::var_os("CI").is_none(),
                "PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb): scripts/test.sh installs the \
                 Debian package postgresql"
            );
            eprintln!(
                "SKIPPED: PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb); the PostgreSQL half of \
                 this test did not run. Install the Debian package postgresql."
            );
            return None;
        };
        // SAFETY: geteuid(2) has no preconditions.
        let root = unsafe { libc::geteuid() } == 0;
        // tempfile's own `.tmp` names: scripts/leftover-servers.sh finds a
        // postgres left running by its temp dir.
        let temp = tempfile::Builder::new();
        let dir = if root {
            // Under /tmp, which `nobody` can walk to whatever TMPDIR says.
            let dir = temp.tempdir_in("/tmp").expect("tempdir");
            // SAFETY: getpwnam(3) with a NUL-terminated name; the entry it
            // returns is read at once, before any other passwd call.
            let pw = unsafe { libc::getpwnam(c"nobody".as_ptr()) };
            assert!(!pw.is_null(), "no user `nobody` to run PostgreSQL as");
            // SAFETY: `pw` is a valid passwd entry (checked not null).
            let (uid, gid) = unsafe { ((*pw).pw_uid, (*pw).pw_gid) };
            std::os::unix::fs::chown(dir.path(), Some(uid), Some(gid)).expect("chown to nobody");
            dir
        } else {
            temp.tempdir().expect("tempdir")
        };
        let port = common::free_port();
        let pg = Postgres { bin, dir, port };
        let data = pg.dir.path().join("data");
        let out = pg
            .as_user("initdb")
            .args([
                "-D",
                s(&data),
                "-U",
                "bench",
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--no-locale",
            ])
            .output()
            .expect("run initdb");
        assert_success("initdb", &out);
        let opts = format!(
            "-p {port} -k {} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off \
             -c full_page_writes=off",
            s(pg.dir.path())
        );
        let log = pg.dir.path().join("log");
        let out = pg
            .as_user("pg_ctl")
            .args(["-D", s(&data), "-l", s(&log), "-o", &opts, "-w", "-t", "60", "start"])
            .output()
            .expect("run pg_ctl start");
        if !out.status.success() {
            let log = std::fs::read_to_string(&log).unwrap_or_default();
            panic!("pg_ctl start failed: {}{}\n{log}", stdout(&out), stderr(&out));
        }
        Some(pg)
    }

    fn as_user(&self, program: &str) -> Command {
        let path = self.bin.join(program);
        // SAFETY: geteuid(2) has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            let mut c = Command::new("runuser");
            c.args(["-u", "nobody", "--"]).arg(path);
            c
        } else {
            Command::new(path)
        }
    }

    /// A new database of this cluster, as a `--db` URL.
    fn database(&self, name: &str) -> String {
        let out = self
            .as_user("createdb")
            .args(["-h", "127.0.0.1", "-p", &self.port.to_string(), "-U", "bench", name])
            .output()
            .expect("run createdb");
        assert_success("createdb", &out);
        format!("postgres://bench@127.0.0.1:{}/{name}", self.port)
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let data = self.dir.path().join("data");
        let _ = self
            .as_user("pg_ctl")
            .args(["-D", s(&data), "-m", "immediate", "-w", "stop"])
            .output();
    }
}

/// The same history commands on SQLite and on PostgreSQL print the same
/// bytes; concurrent adds lose nothing; 1,000 runs list and trend in under
/// a second.
#[test]
fn postgres_and_sqlite_give_identical_output() {
    let Some(pg) = Postgres::start() else { return };
    let work = tempfile::tempdir().expect("tempdir");
    let dirs = three_runs(work.path());
    let lite = work.path().join("h.sqlite");
    let on_sqlite = history_outputs(s(&lite), &dirs);
    let on_pg = history_outputs(&pg.database("same"), &dirs);
    for (a, b) in on_sqlite.iter().zip(&on_pg) {
        assert_eq!(a, b, "SQLite and PostgreSQL differ");
    }
    check_trend(&on_pg[5]);
    // run --record into PostgreSQL with a password in the URL (trust
    // authentication ignores it): recorded, and the password is in neither
    // results.json nor the terminal.
    let url = pg.database("record").replace("bench@", "bench:s3cret@");
    let suite = tiny_suite(&work.path().join("run"), "1s");
    let server = Serve::start(&work.path().join("run/root"), &[]);
    let res = work.path().join("run/res");
    let out = run_benchlab(&[
        "run",
        s(&suite),
        "--target",
        &server.url(""),
        "--out",
        s(&res),
        "--record",
        "--db",
        &url,
    ]);
    drop(server);
    assert_success("run --record --db postgres://…", &out);
    assert!(
        stderr(&out).contains("history: recorded #1: suite `tiny-history`"),
        "{}",
        stderr(&out)
    );
    let results = std::fs::read_to_string(res.join("results.json")).expect("results");
    assert!(
        results.contains("bench:***@127.0.0.1"),
        "the command is recorded, its password masked"
    );
    for text in [results.as_str(), &stdout(&out), &stderr(&out)] {
        assert!(!text.contains("s3cret"), "the password leaked");
    }
    assert_eq!(ok(&url, &["history", "list"]).lines().last(), Some("1 run"));
    concurrent_adds(&pg.database("concurrent"), &work.path().join("c"));
    thousand_runs(&pg.database("thousand"), &work.path().join("t"));
}
