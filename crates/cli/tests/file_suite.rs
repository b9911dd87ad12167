//! File suites (`benchlab run` of loadfile and disk-mix workloads) against
//! a temporary directory (`file:///…`): exact operation and byte counts,
//! expected statuses checked and counted, the results directory.

mod common;

use common::{benchlab_bin, run_benchlab};
use serde_json::Value;
use std::path::Path;

/// Every operation kind of the dbench format, in one pass that leaves the
/// workspace as it found it; 2 WriteX of 100 + 4000 bytes, 1 ReadX of
/// 4000 (the whole second write).
const LOADFILE: &str = r#"Deltree "\clients\client1" NT_STATUS_OK
Mkdir "\clients" NT_STATUS_OK
NTCreateX "\clients\client1" 0x1 0x2 1 NT_STATUS_OK
Close 1 NT_STATUS_OK
QUERY_FS_INFORMATION 1 NT_STATUS_OK
QUERY_PATH_INFORMATION "\clients\client1\a.txt" 1004 NT_STATUS_OBJECT_NAME_NOT_FOUND
FIND_FIRST "\clients\client1\*.txt" 260 1366 0 NT_STATUS_NO_SUCH_FILE
NTCreateX "\clients\client1\a.txt" 0x40 0x2 2 NT_STATUS_OK
WriteX 2 0 100 100 NT_STATUS_OK
0.5 WriteX 2 100 4000 4000 NT_STATUS_OK
ReadX 2 100 4000 4000 NT_STATUS_OK
QUERY_FILE_INFORMATION 2 258 NT_STATUS_OK
SET_FILE_INFORMATION 2 1004 NT_STATUS_OK
LockX 2 0 1 NT_STATUS_OK
UnlockX 2 0 1 NT_STATUS_OK
Flush 2 NT_STATUS_OK
Close 2 NT_STATUS_OK
FIND_FIRST "\clients\client1\*.TXT" 260 1366 1 NT_STATUS_OK
Rename "\clients\client1\a.txt" "\clients\client1\b.txt" NT_STATUS_OK
Unlink "\clients\client1\b.txt" 0x6 NT_STATUS_OK
"#;

fn suite(dir: &Path, workload: &str, clients: &[u32], length: &str, ramps: &str) -> std::path::PathBuf {
    let root = dir.join("root");
    std::fs::create_dir_all(&root).unwrap();
    let mut s = format!(
        "name = \"files\"\ntarget = \"file://{}\"\n{workload}\n[defaults]\nramp_up = \"{ramps}\"\nramp_down = \"{ramps}\"\nlength = \"{length}\"\n",
        root.display()
    );
    for c in clients {
        s += &format!("[[mix]]\nclients = {c}\n");
    }
    let p = dir.join("suite.toml");
    std::fs::write(&p, s).unwrap();
    p
}

fn run_ok(suite: &Path, out: &Path) -> Value {
    run_ok_with_output(suite, out).0
}

/// [`run_ok`] with what the run printed: (results.json, stdout, stderr).
fn run_ok_with_output(suite: &Path, out: &Path) -> (Value, String, String) {
    let o = run_benchlab(&["run", suite.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    );
    assert!(
        o.status.success(),
        "benchlab run failed ({}):\n{stdout}\n{stderr}",
        o.status
    );
    let r = serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    (r, stdout, stderr)
}

/// One operation kind of a file mix: its class's count, errors and
/// latency, and how many of it were not sent (docs/counting.md, "File
/// suites").
fn op(mix: &Value, name: &str) -> Value {
    let class = mix["classes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .cloned()
        .unwrap_or(Value::Null);
    let not_sent = mix["files"]["not_sent_by_operation"][name].as_u64().unwrap_or(0);
    if class.is_null() && not_sent == 0 {
        panic!("no {name} in {mix}");
    }
    serde_json::json!({
        "count": class["requests"].as_u64().unwrap_or(0),
        "errors": class["errors_total"].as_u64().unwrap_or(0),
        "not_sent": not_sent,
        "latency_us": class["latency_us"],
        "kind": class["kind"],
    })
}

#[test]
fn loadfile_replay_counts_every_operation_and_byte_exactly() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("load.txt"), LOADFILE).unwrap();
    let s = suite(
        d.path(),
        "[workloads.lf]\nloadfile = \"load.txt\"\nloops = 5",
        &[3],
        "60s",
        "0s",
    );
    let out = d.path().join("out");
    let r = run_ok(&s, &out);
    // The one results schema of every run; a file mix has its `files`.
    assert_eq!(r["schema"], "benchlab.results/1");
    let m = &r["mixes"][0];
    assert_eq!(m["files"]["protocol"], "file");
    assert_eq!(op(m, "ReadX")["kind"], "file");
    // 20 operations a pass × 5 passes × 3 users.
    assert_eq!(m["requests"], 20 * 5 * 3);
    assert_eq!(m["files"]["loops"], 15);
    assert_eq!(m["errors_total"], 0, "{}", m["files"]["errors_by_status"]);
    assert_eq!(m["files"]["bytes_written"], 4100 * 15);
    assert_eq!(m["files"]["bytes_read"], 4000 * 15);
    assert_eq!(op(m, "WriteX")["count"], 2 * 15);
    assert_eq!(op(m, "FIND_FIRST")["count"], 2 * 15);
    for name in ["NTCreateX", "Close"] {
        assert_eq!(op(m, name)["count"], 2 * 15, "{name}");
    }
    for name in [
        "ReadX",
        "Rename",
        "Unlink",
        "QUERY_PATH_INFORMATION",
        "QUERY_FILE_INFORMATION",
        "QUERY_FS_INFORMATION",
        "SET_FILE_INFORMATION",
        "LockX",
        "UnlockX",
        "Flush",
        "Deltree",
        "Mkdir",
    ] {
        assert_eq!(op(m, name)["count"], 15, "{name}");
    }
    let clients = m["client_data"].as_array().unwrap();
    assert_eq!(clients.len(), 3);
    for (i, c) in clients.iter().enumerate() {
        assert_eq!(c["requests"], 100);
        assert_eq!(c["bytes"], 8100 * 5);
        assert_eq!(m["files"]["clients_bytes_written"][i], 4100 * 5);
    }
    // Each user worked in its own directory.
    for n in 1..=3 {
        assert!(d.path().join(format!("root/clients/client{n}")).is_dir());
    }
    assert!(std::fs::read_to_string(out.join("report.html"))
        .unwrap()
        .contains("Mbit/s per mix"));
}

/// A file suite's results have each second of the window, summing to the
/// mix exactly, and a workbook (report.xlsx, from `run` and from `report`)
/// whose sheets hold the same numbers as results.json.
#[test]
fn file_suites_have_per_second_data_and_a_workbook() {
    use calamine::{open_workbook, Data, Reader, Xlsx};
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("load.txt"), LOADFILE).unwrap();
    let s = suite(
        d.path(),
        "[workloads.lf]\nloadfile = \"load.txt\"",
        &[2],
        "2500ms",
        "250ms",
    );
    let out = d.path().join("out");
    let r = run_ok(&s, &out);
    let m = &r["mixes"][0];
    let seconds = m["per_second"].as_array().unwrap();
    // A 2 s window: two seconds, numbered from 1.
    assert_eq!(seconds.len(), 2, "{seconds:?}");
    let sum = |k: &str| seconds.iter().map(|s| s[k].as_u64().unwrap()).sum::<u64>();
    assert_eq!(sum("requests"), m["requests"].as_u64().unwrap());
    assert_eq!(sum("bytes"), m["bytes"].as_u64().unwrap());
    let written: u64 = m["files"]["seconds_bytes_written"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b.as_u64().unwrap())
        .sum();
    assert_eq!(written, m["files"]["bytes_written"].as_u64().unwrap());
    assert_eq!(seconds[1]["second"], 2);
    let rep = d.path().join("rep");
    let o = run_benchlab(&["report", out.to_str().unwrap(), "--out", rep.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for book in [out.join("report.xlsx"), rep.join("report.xlsx")] {
        let mut wb: Xlsx<_> = open_workbook(&book).unwrap();
        // The one workbook of every run (crates/report): its Summary is
        // summary.csv, its Per-Class a row per mix × operation.
        assert_eq!(
            wb.sheet_names(),
            [
                "Analysis",
                "Summary",
                "Client Data",
                "Per-Class",
                "Files",
                "Operations",
                "Configuration"
            ]
        );
        // Files: a row per mix, its bytes written as results.json's.
        let files = wb.worksheet_range("Files").unwrap();
        let head: Vec<String> = files.rows().next().unwrap().iter().map(|c| c.to_string()).collect();
        let at = head
            .iter()
            .position(|h| h == "Bytes written")
            .unwrap_or_else(|| panic!("{head:?}"));
        assert_eq!(
            files.rows().nth(1).unwrap()[at],
            Data::Float(m["files"]["bytes_written"].as_u64().unwrap() as f64)
        );
        // Operations: a row per mix × operation kind.
        let ops = wb.worksheet_range("Operations").unwrap();
        assert_eq!(ops.rows().count(), 1 + m["classes"].as_array().unwrap().len());
        let summary = wb.worksheet_range("Summary").unwrap();
        let header: Vec<String> = summary.rows().next().unwrap().iter().map(|c| c.to_string()).collect();
        let col = |name: &str| {
            header
                .iter()
                .position(|h| h == name)
                .unwrap_or_else(|| panic!("no {name} in {header:?}"))
        };
        let row = summary.rows().nth(1).unwrap();
        assert_eq!(
            row[col("Requests")],
            Data::Float(m["requests"].as_u64().unwrap() as f64)
        );
        assert_eq!(row[col("Mbit/s")], Data::Float(m["mbit_per_sec"].as_f64().unwrap()));
        let classes = wb.worksheet_range("Per-Class").unwrap();
        assert_eq!(classes.rows().count(), 1 + m["classes"].as_array().unwrap().len());
    }
}

/// A file suite's numbers read as a web suite's (crates/format): the
/// terminal's rows and peak, the report page and the workbook group
/// thousands and give each quantity its decimals (Mbit/s 1, MB/s 2,
/// operations/s 1), and one client is `1 client`.
#[test]
fn file_suite_numbers_have_the_format_crates_decimals_and_separators() {
    use benchlab_format::{mbit_per_sec, mbytes_per_sec, requests_per_sec, thousands};
    let d = tempfile::tempdir().unwrap();
    // Large writes and reads: thousands of Mbit/s on any machine's page
    // cache, so the separators show.
    let load = "NTCreateX \"\\\\big.dat\" 0x40 0x2 1 NT_STATUS_OK\n\
                WriteX 1 0 1048576 1048576 NT_STATUS_OK\n\
                ReadX 1 0 1048576 1048576 NT_STATUS_OK\n\
                Close 1 NT_STATUS_OK\n\
                Unlink \"\\\\big.dat\" 0x6 NT_STATUS_OK\n";
    std::fs::write(d.path().join("load.txt"), load).unwrap();
    let s = suite(
        d.path(),
        "[workloads.lf]\nloadfile = \"load.txt\"",
        &[1],
        "1500ms",
        "250ms",
    );
    let out = d.path().join("out");
    let (r, stdout, _) = run_ok_with_output(&s, &out);
    let m = &r["mixes"][0];
    assert_eq!(m["errors_total"], 0, "{}", m["files"]["errors_by_status"]);
    let f = |k: &str| m[k].as_f64().unwrap();
    let window = f("window_s");
    let want = [
        "1".to_string(),
        "1".to_string(),
        mbit_per_sec(f("mbit_per_sec")),
        mbytes_per_sec(m["files"]["bytes_read"].as_f64().unwrap() / window),
        mbytes_per_sec(m["files"]["bytes_written"].as_f64().unwrap() / window),
        requests_per_sec(f("requests_per_sec")),
        thousands(m["errors_total"].as_u64().unwrap()),
        thousands(m["files"]["loops"].as_u64().unwrap()),
    ];
    let row: Vec<&str> = stdout
        .lines()
        .find(|l| l.split_whitespace().next() == Some("1"))
        .unwrap_or_else(|| panic!("no row of mix 1 in:\n{stdout}"))
        .split_whitespace()
        .collect();
    assert_eq!(row, want, "{stdout}");
    let peak = format!("peak: mix 1 (1 client), {} Mbit/s", mbit_per_sec(f("mbit_per_sec")));
    assert!(stdout.contains(&peak), "no `{peak}` in:\n{stdout}");

    let page = std::fs::read_to_string(out.join("report.html")).unwrap();
    let peak = format!("peaked at <b>{} Mbit/s</b>", mbit_per_sec(f("mbit_per_sec")));
    assert!(page.contains(&peak), "no `{peak}` in the page");
    for (field, v) in [
        ("mbit_per_sec", f("mbit_per_sec")),
        (
            "files.read_mbit_per_sec",
            m["files"]["read_mbit_per_sec"].as_f64().unwrap(),
        ),
        (
            "files.write_mbit_per_sec",
            m["files"]["write_mbit_per_sec"].as_f64().unwrap(),
        ),
    ] {
        let cell = format!(r#"data-field="{field}">{}</td>"#, mbit_per_sec(v));
        assert!(page.contains(&cell), "no `{cell}` in the page");
    }

    // The workbook keeps exact numbers and shows them with the same
    // decimals and separators.
    let book = std::fs::File::open(out.join("report.xlsx")).unwrap();
    let mut zip = zip::ZipArchive::new(book).unwrap();
    let mut styles = String::new();
    std::io::Read::read_to_string(&mut zip.by_name("xl/styles.xml").unwrap(), &mut styles).unwrap();
    for code in ["#,##0", "#,##0.0", "#,##0.00"] {
        assert!(
            styles.contains(&format!(r#"formatCode="{code}""#)),
            "no number format {code} in styles.xml"
        );
    }
}

#[test]
fn a_status_other_than_expected_is_an_error_counted_by_kind() {
    let d = tempfile::tempdir().unwrap();
    let lf = "Mkdir \"\\clients\" NT_STATUS_OK\n\
              Unlink \"\\clients\\client1\\nothing\" 0x6 NT_STATUS_OK\n\
              QUERY_PATH_INFORMATION \"\\clients\\client1\\x\" 1004 NT_STATUS_OBJECT_PATH_NOT_FOUND\n";
    std::fs::write(d.path().join("load.txt"), lf).unwrap();
    let s = suite(
        d.path(),
        "[workloads.lf]\nloadfile = \"load.txt\"\nloops = 4",
        &[2],
        "60s",
        "0s",
    );
    let r = run_ok(&s, &d.path().join("out"));
    let m = &r["mixes"][0];
    assert_eq!(m["requests"], 3 * 4 * 2);
    assert_eq!(m["errors_total"], 4 * 2);
    assert_eq!(
        m["files"]["errors_by_status"]["Unlink: expected NT_STATUS_OK, got NT_STATUS_OBJECT_PATH_NOT_FOUND"], 8,
        "{}",
        m["files"]["errors_by_status"]
    );
    assert_eq!(op(m, "Unlink")["errors"], 8);
    assert_eq!(op(m, "QUERY_PATH_INFORMATION")["errors"], 0);
}

/// Debian's dbench package's client.txt replays whole, every status as
/// the file expects, and writes exactly what the file writes.
#[test]
fn debian_client_txt_replays_as_is() {
    let lf = Path::new("/usr/share/dbench/client.txt");
    if !lf.exists() {
        eprintln!("skipped: dbench is not installed");
        return;
    }
    let text = std::fs::read_to_string(lf).unwrap();
    let (mut lines, mut written, mut read) = (0u64, 0u64, 0u64);
    for l in text.lines().filter(|l| !l.trim().is_empty()) {
        lines += 1;
        let w: Vec<&str> = l.split_whitespace().collect();
        match w[0] {
            "WriteX" => written += w[3].parse::<u64>().unwrap(),
            "ReadX" => read += w[4].parse::<u64>().unwrap(),
            _ => {}
        }
    }
    let d = tempfile::tempdir().unwrap();
    let s = suite(
        d.path(),
        &format!("[workloads.dbench]\nloadfile = \"{}\"\nloops = 1", lf.display()),
        &[2],
        "600s",
        "0s",
    );
    let r = run_ok(&s, &d.path().join("out"));
    let m = &r["mixes"][0];
    assert_eq!(m["errors_total"], 0, "{}", m["files"]["errors_by_status"]);
    assert_eq!(m["requests"], lines * 2);
    assert_eq!(m["files"]["bytes_written"], written * 2);
    assert_eq!(m["files"]["bytes_read"], read * 2);
}

#[test]
fn a_disk_mix_fills_each_workspace_then_runs_mix_after_mix() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("mix.toml"),
        "name = \"small\"\nworkspace = \"300KB\"\n[file_size]\nmedian = \"20KB\"\np90 = \"60KB\"\nmax = \"200KB\"\n\
         [operations]\nwrite = 40\nread = 8\nopen = 10\nquery_path = 12\nquery_file = 4\nfind = 8\ncreate = 4\n\
         delete = 4\nrename = 2\nlock = 4\nflush = 4\n",
    )
    .unwrap();
    let s = suite(
        d.path(),
        "[workloads.nb]\ndisk_mix = \"mix.toml\"",
        &[1, 2],
        "2s",
        "500ms",
    );
    let out = d.path().join("out");
    let (r, _, stderr) = run_ok_with_output(&s, &out);
    // The fill comes before the mix's clock: the progress says so rather
    // than sitting at 0.
    for (mix, users) in [(1, "1 client × 1 thread"), (2, "2 clients × 1 thread")] {
        let line = format!("mix {mix} (nb): {users}, 2s: filling workspaces (300,000 bytes per user) first …");
        assert!(stderr.contains(&line), "no `{line}` in:\n{stderr}");
    }
    let mixes = r["mixes"].as_array().unwrap();
    assert_eq!(mixes.len(), 2);
    for m in mixes {
        assert_eq!(m["errors_total"], 0, "{}", m["files"]["errors_by_status"]);
        assert!(m["requests"].as_u64().unwrap() > 0);
        assert!(m["mbit_per_sec"].as_f64().unwrap() > 0.0);
        assert_eq!(m["files"]["prepared_bytes"], 300_000 * m["clients"].as_u64().unwrap());
        assert!(op(m, "WriteX")["latency_us"]["p99"].as_u64().unwrap() > 0);
    }
    // Writes inside a workspace file never grow it: each still holds its
    // share of exactly 300 KB.
    for n in 1..=2 {
        let sum: u64 = std::fs::read_dir(d.path().join(format!("root/clients/client{n}")))
            .unwrap()
            .map(|e| e.unwrap())
            .filter(|e| e.file_name().to_string_lossy().ends_with(".dat"))
            .map(|e| e.metadata().unwrap().len())
            .sum();
        assert_eq!(sum, 300_000, "client{n}");
    }
    let page = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(page.contains("id=\"mbit-0\""), "no Mbit/s chart");
    assert!(page.contains("Per-operation latency"));
}

#[test]
fn bad_loadfiles_and_disk_mixes_are_refused_with_file_and_line() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("load.txt"),
        "Close 1 NT_STATUS_OK\nReadX 1 0 NT_STATUS_OK\n",
    )
    .unwrap();
    let s = suite(d.path(), "[workloads.lf]\nloadfile = \"load.txt\"", &[1], "2s", "0s");
    let o = run_benchlab(&[
        "run",
        s.to_str().unwrap(),
        "--out",
        d.path().join("o").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("load.txt:2: ReadX has 2 arguments: expected 4"), "{err}");
    assert!(!d.path().join("o/results.json").exists());

    std::fs::write(
        d.path().join("mix.toml"),
        "workspace = \"1MB\"\n[file_size]\nmedian = 1\np90 = 2\n[operations]\nwrite = 50\n",
    )
    .unwrap();
    let s = suite(d.path(), "[workloads.nb]\ndisk_mix = \"mix.toml\"", &[1], "2s", "0s");
    let o = run_benchlab(&["run", s.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("mix.toml:5:1: [operations] add up to 50"), "{err}");
}

/// The same replay against a real Samba (smbd on a loopback high port),
/// each user a process of its own: exact counts, every status as the
/// loadfile expects; LockX, UnlockX and Flush, which libsmbclient has no
/// call for, counted as not sent (neither done nor errors).
#[test]
fn loadfile_replay_against_smbd_counts_exactly() {
    let Some(smbd) = benchlab_fileserver::smbd::start_smbd() else {
        eprintln!("skipped: smbd is not installed");
        return;
    };
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("load.txt"), LOADFILE).unwrap();
    let mut s = std::fs::read_to_string(suite(
        d.path(),
        "[workloads.lf]\nloadfile = \"load.txt\"\nloops = 3",
        &[2],
        "120s",
        "0s",
    ))
    .unwrap();
    // libsmbclient named: benchlab's own client (the default) sends all 20.
    let lib = format!("{}?client=libsmbclient", smbd.url());
    s = s.replace(&format!("file://{}", d.path().join("root").display()), &lib);
    std::fs::write(d.path().join("suite.toml"), s).unwrap();
    let r = run_ok(&d.path().join("suite.toml"), &d.path().join("out"));
    let m = &r["mixes"][0];
    assert_eq!(m["errors_total"], 0, "{}", m["files"]["errors_by_status"]);
    // 20 lines a pass, 3 passes, 2 users: the 17 libsmbclient can send are
    // done; LockX, UnlockX and Flush (one line each) are not sent.
    assert_eq!(m["requests"], 17 * 3 * 2);
    assert_eq!(m["files"]["not_sent"], 3 * 3 * 2);
    for kind in ["LockX", "UnlockX", "Flush"] {
        assert_eq!(
            (&op(m, kind)["count"], &op(m, kind)["errors"], &op(m, kind)["not_sent"]),
            (&Value::from(0), &Value::from(0), &Value::from(6)),
            "{kind}"
        );
    }
    assert_eq!(op(m, "WriteX")["not_sent"], 0);
    assert_eq!(m["files"]["bytes_written"], 4100 * 6);
    assert_eq!(m["files"]["bytes_read"], 4000 * 6);
    assert_eq!(m["files"]["loops"], 6);
    for n in 1..=2 {
        assert!(smbd.share.join(format!("clients/client{n}")).is_dir());
    }
}

/// A file suite's results.json is `benchlab.results/1` and validates
/// against docs/results.schema.json, the schema web suites' results meet.
#[test]
fn file_results_validate_against_the_one_results_schema() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/results.schema.json");
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("load.txt"), LOADFILE).unwrap();
    let s = suite(
        d.path(),
        "[workloads.lf]\nloadfile = \"load.txt\"\nloops = 1",
        &[2],
        "30s",
        "0s",
    );
    let r = run_ok(&s, &d.path().join("out"));
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&r)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{}", errors.join("\n"));
    assert_eq!(r["schema"], "benchlab.results/1");
}

/// The shipped NetBench disk mix against Samba, users as processes:
/// everything ends as expected; what libsmbclient cannot send (locks,
/// Flush) is counted by kind as not sent, never as done or as an error.
#[test]
fn a_disk_mix_against_smbd_counts_what_libsmbclient_cannot_send_as_not_sent() {
    let Some(smbd) = benchlab_fileserver::smbd::start_smbd() else {
        eprintln!("skipped: smbd is not installed");
        return;
    };
    let d = tempfile::tempdir().unwrap();
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../suites/workloads/netbench-1999-disk-mix.toml");
    let mix = std::fs::read_to_string(shipped)
        .unwrap()
        .replace("workspace = \"4MB\"", "workspace = \"400KB\"");
    std::fs::write(d.path().join("mix.toml"), mix).unwrap();
    let s = suite(d.path(), "[workloads.nb]\ndisk_mix = \"mix.toml\"", &[2], "3s", "500ms");
    let out = d.path().join("out");
    let lib = format!("{}?client=libsmbclient", smbd.url());
    let o = run_benchlab(&[
        "run",
        s.to_str().unwrap(),
        "--target",
        &lib,
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r: Value = serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    let m = &r["mixes"][0];
    assert_eq!(m["params"]["target"], lib);
    assert_eq!(m["files"]["prepared_bytes"], 800_000);
    assert!(m["mbit_per_sec"].as_f64().unwrap() > 0.0);
    assert_eq!(m["errors_total"], 0, "{}", m["files"]["errors_by_status"]);
    let flush = op(m, "Flush");
    assert_eq!((&flush["count"], &flush["errors"]), (&Value::from(0), &Value::from(0)));
    assert!(flush["not_sent"].as_u64().unwrap() > 0, "{flush}");
    let not_sent: u64 = ["LockX", "UnlockX", "Flush"]
        .iter()
        .map(|k| op(m, k)["not_sent"].as_u64().unwrap())
        .sum();
    assert_eq!(m["files"]["not_sent"], not_sent);
    assert_eq!(op(m, "WriteX")["errors"], 0);
    for n in 1..=2 {
        assert!(smbd.share.join(format!("clients/client{n}/f00000.dat")).is_file());
    }
}

/// Ctrl-C ends the mix under way: what it measured is kept, results.json
/// says the run was interrupted, and benchlab exits 130.
#[test]
fn ctrl_c_keeps_the_mix_under_way_and_exits_130() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("load.txt"), LOADFILE).unwrap();
    let s = suite(
        d.path(),
        "[workloads.lf]\nloadfile = \"load.txt\"",
        &[1, 2],
        "60s",
        "0s",
    );
    let out = d.path().join("out");
    let mut child = std::process::Command::new(common::benchlab_bin())
        .args(["run", s.to_str().unwrap(), "--out", out.to_str().unwrap()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // The first mix has begun once its users made their directories.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !d.path().join("root/clients/client1").exists() {
        assert!(std::time::Instant::now() < deadline, "the mix did not start");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    std::thread::sleep(std::time::Duration::from_millis(500));
    let kill = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    let r: Value = serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    assert_eq!(r["complete"], false);
    let mixes = r["mixes"].as_array().unwrap();
    assert_eq!(mixes.len(), 1, "the second mix never started");
    assert!(mixes[0]["requests"].as_u64().unwrap() > 0);
    assert_eq!(mixes[0]["partial"], true);
    // The rates divide by the time measured, not the mix's 60 s.
    assert!(
        mixes[0]["window_s"].as_f64().unwrap() < 30.0,
        "{}",
        mixes[0]["window_s"]
    );
}

/// `run --repeat N` runs each mix of a file suite N times and keeps the
/// median run with every run's figures; `compare` then reads each ratio
/// against the noise of the repeats at --confidence: a run against itself
/// is no regression, and the same results with NEW's figures halved are.
#[test]
fn repeats_of_a_file_suite_give_compare_its_noise() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("load.txt"), LOADFILE).unwrap();
    let s = suite(
        d.path(),
        "[workloads.lf]\nloadfile = \"load.txt\"",
        &[1],
        "1200ms",
        "100ms",
    );
    let base = d.path().join("base");
    let o = run_benchlab(&[
        "run",
        s.to_str().unwrap(),
        "--repeat",
        "3",
        "--out",
        base.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("mix 1 run 3 of 3"), "{err}");
    let r: Value = serde_json::from_str(&std::fs::read_to_string(base.join("results.json")).unwrap()).unwrap();
    let m = &r["mixes"][0];
    // Every run's figures; a file mix's median is by Mbit/s.
    let runs: Vec<f64> = m["repeats"]["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["bytes_per_sec"].as_f64().unwrap() * 8.0 / 1e6)
        .collect();
    assert_eq!(runs.len(), 3);
    let mut sorted = runs.clone();
    sorted.sort_by(f64::total_cmp);
    assert_eq!(m["mbit_per_sec"].as_f64().unwrap(), sorted[1], "the median run is kept");

    let o = run_benchlab(&[
        "compare",
        base.to_str().unwrap(),
        base.to_str().unwrap(),
        "--confidence",
        "99%",
    ]);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(
        out.contains("at 99.0 % confidence; noise from BASE 3 repeats, NEW 3 repeats): unchanged"),
        "{out}"
    );

    // A BASE of tight repeats (10 ± 0.1 Mbit/s) against the same with
    // every Mbit/s halved: a regression beyond the noise (the repeats of a
    // one-second mix on a shared machine scatter too widely to show it).
    let write = |name: &str, scale: f64| {
        let dir = d.path().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        let mut h = r.clone();
        let mix = &mut h["mixes"][0];
        mix["mbit_per_sec"] = Value::from(10.0 * scale);
        for (rep, v) in mix["repeats"]["runs"]
            .as_array_mut()
            .unwrap()
            .iter_mut()
            .zip([9.9, 10.0, 10.1])
        {
            rep["bytes_per_sec"] = Value::from(v * scale * 1e6 / 8.0);
        }
        std::fs::write(dir.join("results.json"), h.to_string()).unwrap();
        dir
    };
    let (tight, halved) = (write("tight", 1.0), write("halved", 0.5));
    let o = run_benchlab(&["compare", tight.to_str().unwrap(), halved.to_str().unwrap()]);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(o.status.code(), Some(3), "{out}");
    assert!(out.contains("peak 10.0 → 5.0 Mbit/s, ×0.500 ("), "{out}");
    assert!(out.contains("NEW 3 repeats): regressed"), "{out}");
    assert!(
        out.contains("REGRESSION: phase lf: peak 10.0 Mbit/s (mix 1) → 5.0 Mbit/s (mix 1), -50.0 %"),
        "{out}"
    );
}

#[test]
fn report_and_compare_take_file_suites_results() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("load.txt"), LOADFILE).unwrap();
    let s = suite(
        d.path(),
        "[workloads.lf]\nloadfile = \"load.txt\"\nloops = 2",
        &[1, 2],
        "60s",
        "0s",
    );
    let base = d.path().join("base");
    let new = d.path().join("new");
    let rb = run_ok(&s, &base);
    let rn = run_ok(&s, &new);
    let text = |o: &std::process::Output| {
        format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    };

    // `report` rewrites the results directory's own page, or one elsewhere.
    std::fs::remove_file(base.join("report.html")).unwrap();
    let o = run_benchlab(&["report", base.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(std::fs::read_to_string(base.join("report.html"))
        .unwrap()
        .contains("Mbit/s per mix"));
    let elsewhere = d.path().join("page");
    let o = run_benchlab(&["report", base.to_str().unwrap(), "--out", elsewhere.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(elsewhere.join("report.html").is_file());

    // `compare`: the one noise-aware compare, NEW's peak Mbit/s against
    // BASE's. Two runs of a few milliseconds have no noise to speak of and
    // their p99 may double from one to the next: the verdict (0 or 3) is
    // left out of this test (repeats_of_a_file_suite_give_compare_its_noise
    // checks it).
    let o = run_benchlab(&[
        "compare",
        base.to_str().unwrap(),
        new.to_str().unwrap(),
        "--max-regression",
        "100%",
    ]);
    let out = text(&o);
    assert!(matches!(o.status.code(), Some(0 | 3)), "{out}");
    let peak = |r: &Value| {
        r["mixes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["mbit_per_sec"].as_f64().unwrap())
            .fold(0.0, f64::max)
    };
    let line = format!(
        "phase lf: peak {} → {} Mbit/s, ",
        benchlab_format::mbit_per_sec(peak(&rb)),
        benchlab_format::mbit_per_sec(peak(&rn))
    );
    assert!(out.contains(&line), "no `{line}` in:\n{out}");
    assert!(new.join("compare/report.html").is_file());

    // A file suite against a web suite's results: a clear refusal.
    let web = d.path().join("web");
    std::fs::create_dir_all(&web).unwrap();
    // A web run's results (benchlab http --json, as 0.1 wrote it).
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../results/tests/fixtures/http-1.json"),
        web.join("results.json"),
    )
    .unwrap();
    let o = run_benchlab(&["compare", base.to_str().unwrap(), web.to_str().unwrap()]);
    assert!(!o.status.success());
    assert!(
        text(&o).contains("one is a file suite's results, the other a web suite's"),
        "{}",
        text(&o)
    );
}

/// Users of an smb:// target are processes of their own: their counts
/// reach the live display while the mix runs (each process reports on its
/// stdout ten times a second), and the live seconds sum exactly to what
/// the mix counted.
#[test]
fn smb_user_processes_report_their_seconds_live() {
    use benchlab_fileserver::{run_mix, FileMixPlan, FileTarget, FileWorkload};
    let Some(smbd) = benchlab_fileserver::smbd::start_smbd() else {
        eprintln!("skipped: smbd is not installed");
        return;
    };
    benchlab_fileserver::process::set_user_command(vec![benchlab_bin().into(), "__file-user".into()]);
    let d = tempfile::tempdir().unwrap();
    let lf = d.path().join("load.txt");
    std::fs::write(&lf, LOADFILE).unwrap();
    let workload = FileWorkload::Loadfile(
        std::sync::Arc::new(benchlab_fileserver::loadfile::Loadfile::read(&lf).unwrap()),
        None,
    );
    let plan = FileMixPlan {
        clients: 2,
        threads_per_client: 1,
        delay: std::time::Duration::ZERO,
        ramp_up: std::time::Duration::from_millis(300),
        ramp_down: std::time::Duration::from_millis(100),
        length: std::time::Duration::from_millis(2_400),
        think_time: std::time::Duration::from_millis(5),
        seed: 7,
    };
    let mut seen = Vec::new();
    let started = std::time::Instant::now();
    let m = run_mix(
        &workload,
        &FileTarget::parse(&format!("{}?client=libsmbclient", smbd.url())).unwrap(),
        &plan,
        &std::sync::atomic::AtomicBool::new(false),
        &mut |s| seen.push((started.elapsed(), s)),
    )
    .unwrap();
    assert!(m.total.operations() > 0);
    let ops: u64 = seen.iter().map(|(_, s)| s.operations).sum();
    let bytes: u64 = seen.iter().map(|(_, s)| s.bytes).sum();
    assert_eq!(ops, m.total.operations(), "{seen:?}");
    assert_eq!(bytes, m.total.bytes_read + m.total.bytes_written);
    // The first second arrived while the mix still ran, not at its end.
    let (at, first) = seen.first().unwrap();
    assert_eq!(first.second, 1);
    assert!(first.operations > 0, "{seen:?}");
    assert!(seen.len() >= 2, "{seen:?}");
    assert!(*at < seen.last().unwrap().0, "{seen:?}");
}
