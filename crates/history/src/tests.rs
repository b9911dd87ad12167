use super::*;
use crate::trend::{change, change_text, groups, latest_against_before, list_text, trend_text};

/// `benchlab http --json` of schema 1 (upgraded by the loader): one phase,
/// one mix of 20,103 requests/s, p99 217 µs.
const HTTP_1: &str = include_str!("../../results/tests/fixtures/http-1.json");

fn fixture(started: u64, rps_scale: f64) -> (Results, String) {
    let mut r = benchlab_results::load::parse(HTTP_1).expect("fixture loads");
    r.environment.started_unix = started;
    r.mixes[0].figures.requests_per_sec *= rps_scale;
    let text = serde_json::to_string(&r).expect("serialise");
    (r, text)
}

fn db_in(dir: &tempfile::TempDir) -> (Db, String) {
    let p = dir.path().join("h.sqlite");
    let s = p.display().to_string();
    (Db::open(Some(&s)).expect("open"), s)
}

fn record(started: u64, scale: f64) -> RunRecord {
    let (r, text) = fixture(started, scale);
    RunRecord::of(&r, &text, Path::new("/runs/x"))
}

#[test]
fn a_new_database_is_migrated_to_the_current_schema_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut db, path) = db_in(&dir);
    let v = db.rows("SELECT version FROM schema_version", &[]).expect("rows");
    assert_eq!(v, vec![vec![V::Int(Some(SCHEMA_VERSION))]]);
    drop(db);
    // Opening again migrates nothing (one row per applied version).
    let mut db = Db::open(Some(&path)).expect("reopen");
    let v = db.rows("SELECT COUNT(*) FROM schema_version", &[]).expect("rows");
    assert_eq!(v, vec![vec![V::Int(Some(1))]]);
    assert_eq!(db.runs(None).expect("runs"), vec![]);
}

#[test]
fn a_newer_schema_is_refused_naming_both_versions() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut db, path) = db_in(&dir);
    db.conn
        .exec(
            "INSERT INTO schema_version (version) VALUES (?)",
            &[V::Int(Some(SCHEMA_VERSION + 1))],
        )
        .expect("insert");
    drop(db);
    let e = Db::open(Some(&path)).err().expect("refused");
    assert!(
        matches!(
            e,
            Error::NewerSchema {
                found: 2,
                supported: 1,
                ..
            }
        ),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        format!(
            "history database {path} has schema version 2; this benchlab reads schema versions up to 1: use the \
             newer benchlab that wrote it (or another --db)"
        )
    );
    use benchlab_input::Classify;
    assert_eq!(e.exit_class(), benchlab_input::ExitClass::CannotRun);
}

#[test]
fn a_run_is_recorded_once_with_its_figures_and_results() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut db, _) = db_in(&dir);
    let rec = record(1_700_000_000, 1.0);
    assert_eq!(rec.phases.len(), 1);
    assert_eq!(rec.phases[0].peak_rps, Some(20103.0));
    assert_eq!(rec.phases[0].p99_at_peak_us, Some(217));
    assert_eq!(rec.phases[0].requests, 20103);
    let a = db.add(&rec, 1_700_000_100).expect("add");
    assert_eq!(a, Added { id: 1, new: true });
    // The same results.json again: not a second run.
    assert_eq!(db.add(&rec, 1_700_000_200).expect("add"), Added { id: 1, new: false });
    let (row, phases, mixes, text) = db.run(1).expect("run 1");
    assert_eq!(row.started_unix, 1_700_000_000);
    assert_eq!(row.recorded_unix, 1_700_000_100);
    assert_eq!(phases, rec.phases);
    assert_eq!(mixes, rec.mixes);
    assert_eq!(text, rec.results);
    assert!(matches!(db.run(2), Err(Error::NoRun { id: 2, .. })));
}

#[test]
fn list_and_trend_read_the_runs_oldest_first() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut db, _) = db_in(&dir);
    // Recorded out of order: listed by start time.
    db.add(&record(1_700_000_600, 1.1), 1).expect("add");
    db.add(&record(1_700_000_000, 1.0), 2).expect("add");
    let suite = db.runs(None).expect("runs")[0].suite.clone();
    let runs = db.runs(Some(&suite)).expect("runs");
    assert_eq!(runs.iter().map(|r| r.id).collect::<Vec<_>>(), vec![2, 1]);
    let phases = db.phases(Some(&suite)).expect("phases");
    let list = list_text(&runs, &phases);
    let lines: Vec<&str> = list.lines().collect();
    assert_eq!(lines.len(), 4, "{list}");
    assert!(
        lines[1].starts_with(" #2  2023-11-14 22:13  http   not disclosed  -"),
        "{list}"
    );
    assert!(lines[1].contains("20,103.0 requests/s"), "{list}");
    assert!(lines[2].contains("22,113.3 requests/s"), "{list}");
    assert_eq!(lines[3], "2 runs");
    let t = trend_text(&suite, &runs, &phases);
    assert!(t.contains("+10.0 %"), "{t}");
    assert!(
        t.contains("the latest is +10.0 % against the median of the 1 run before it"),
        "{t}"
    );
    assert!(t.contains("server not disclosed, configuration -: 2 runs"), "{t}");
}

#[test]
fn trend_maths() {
    assert_eq!(change(100.0, 110.0).map(|c| (c * 1e6).round()), Some(100_000.0));
    assert_eq!(change(0.0, 110.0), None);
    assert_eq!(change_text(Some(-0.0123)), "-1.2 %");
    assert_eq!(change_text(None), "-");
    // Median of the runs before the latest: 100, 200, 300 → 200; 260 is +30 %.
    let c = latest_against_before(&[300.0, 100.0, 200.0, 260.0]).expect("change");
    assert!((c - 0.3).abs() < 1e-12, "{c}");
    assert_eq!(latest_against_before(&[5.0]), None);
    let row = |id: i64, server: &str, config: &str| RunRow {
        id,
        suite: "s".into(),
        started_unix: id,
        recorded_unix: 0,
        partial: false,
        kind: "web".into(),
        server: server.into(),
        server_config: config.into(),
        benchlab_version: String::new(),
        host: String::new(),
        target: String::new(),
        source: String::new(),
    };
    let runs = vec![
        row(1, "nginx 1.22", "aa"),
        row(2, "nginx 1.24", "aa"),
        row(3, "nginx 1.22", "aa"),
        row(4, "nginx 1.22", "bb"),
    ];
    let g = groups(&runs);
    let ids: Vec<Vec<i64>> = g.iter().map(|g| g.runs.iter().map(|r| r.id).collect()).collect();
    assert_eq!(ids, vec![vec![1, 3], vec![2], vec![4]]);
}

#[test]
fn list_and_trend_queries_use_the_indexes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut db, _) = db_in(&dir);
    let by_suite = format!("SELECT {RUN_COLUMNS} FROM runs r WHERE r.suite = ? ORDER BY r.started_unix, r.id");
    let plan = db.conn.plan(&by_suite, &[text("s")]);
    assert!(plan.contains("INDEX runs_by_suite (suite=?)"), "{plan}");
    assert!(
        !plan.contains("TEMP B-TREE"),
        "sorted by the index, not afterwards: {plan}"
    );
    let all = format!("SELECT {RUN_COLUMNS} FROM runs r ORDER BY r.started_unix, r.id");
    let plan = db.conn.plan(&all, &[]);
    assert!(plan.contains("INDEX runs_by_time"), "{plan}");
    let phases = format!(
        "SELECT {PHASE_COLUMNS} FROM runs r JOIN phases p ON p.run_id = r.id WHERE r.suite = ? \
         ORDER BY r.started_unix, r.id, p.position"
    );
    let plan = db.conn.plan(&phases, &[text("s")]);
    assert!(plan.contains("INDEX runs_by_suite (suite=?)"), "{plan}");
    assert!(plan.contains("sqlite_autoindex_phases_1 (run_id=?)"), "{plan}");
}

#[test]
fn passwords_are_redacted() {
    assert_eq!(
        redact("postgres://bench:s3cret@127.0.0.1:5432/history"),
        "postgres://bench:***@127.0.0.1:5432/history"
    );
    assert_eq!(
        redact("postgres://127.0.0.1/h?user=a&password=x&sslmode=disable"),
        "postgres://127.0.0.1/h?user=a&password=***&sslmode=disable"
    );
    assert_eq!(redact("/home/a/h.sqlite"), "/home/a/h.sqlite");
    assert_eq!(
        redact_args(["run".to_string(), "--db=postgresql://u:pw@h/d".to_string()]),
        vec!["run".to_string(), "--db=postgresql://u:***@h/d".to_string()]
    );
    let e = Db::open(Some("mysql://a:b@c/d")).err().expect("refused");
    assert_eq!(
        e.to_string(),
        "--db mysql://a:***@c/d: expected a file path (SQLite) or a postgres:// URL"
    );
}

#[test]
fn against_takes_last_n() {
    assert_eq!(parse_against("last:5"), Ok(5));
    assert!(parse_against("last:0").is_err());
    assert!(parse_against("5").is_err());
    assert!(parse_against("last:x").is_err());
}

#[test]
fn the_baseline_holds_every_recorded_run_as_a_repeat() {
    let rows: Vec<(RunRow, Results)> = [(3, 1.2), (1, 1.0), (2, 1.1)]
        .iter()
        .map(|&(id, scale)| {
            let (r, _) = fixture(1_700_000_000 + id as u64, scale);
            let row = RunRow {
                id,
                suite: r.suite.name.clone(),
                started_unix: r.environment.started_unix as i64,
                recorded_unix: 0,
                partial: false,
                kind: "web".into(),
                server: String::new(),
                server_config: String::new(),
                benchlab_version: String::new(),
                host: String::new(),
                target: String::new(),
                source: String::new(),
            };
            (row, r)
        })
        .collect();
    let base = baseline(rows).expect("a base");
    assert_eq!(base.mixes.len(), 1);
    let reps = base.mixes[0].repeats.as_ref().expect("repeats");
    // Oldest first, the median (×1.1) shown.
    let rps: Vec<f64> = reps.runs.iter().map(|r| r.requests_per_sec.round()).collect();
    assert_eq!(rps, vec![20103.0, 22113.0, 24124.0]);
    assert_eq!(reps.median_repeat, 2);
}
