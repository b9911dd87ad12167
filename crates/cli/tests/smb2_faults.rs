//! `smb://…?client=benchlab` against a misbehaving SMB2 server
//! (common/fake_smb.rs), through the real binary: a server that drops the
//! connection, answers STATUS_INSUFFICIENT_RESOURCES, withholds credits,
//! sends an oplock break, or stops answering. Each error lands in its
//! bucket by name, the run ends on its own, and what benchlab counts
//! equals what the server received and answered.

mod common;

#[path = "common/fake_smb.rs"]
mod fake_smb;

use fake_smb::{Counts, FakeSmb, Fault};
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// One pass: every operation one SMB2 request (NTCreateX a CREATE, ReadX
/// and WriteX of 100 bytes one READ/WRITE, LockX/UnlockX a LOCK, Flush a
/// FLUSH, the two queries a QUERY_INFO, SET_FILE_INFORMATION a SET_INFO,
/// Close a CLOSE), so the server's counts compare one to one.
const LOADFILE: &str = r#"NTCreateX "\clients\client1\a.txt" 0x40 0x2 1 NT_STATUS_OK
WriteX 1 0 100 100 NT_STATUS_OK
ReadX 1 0 100 100 NT_STATUS_OK
LockX 1 0 1 NT_STATUS_OK
UnlockX 1 0 1 NT_STATUS_OK
Flush 1 NT_STATUS_OK
QUERY_FILE_INFORMATION 1 1004 NT_STATUS_OK
SET_FILE_INFORMATION 1 1004 NT_STATUS_OK
Close 1 NT_STATUS_OK
QUERY_FS_INFORMATION 1 NT_STATUS_OK
"#;

/// Operations of a pass, and the passes each run makes.
const PASS: u64 = 10;
const LOOPS: u64 = 3;

/// The mix's length: the passes end well before it unless the server
/// stops answering.
const LENGTH_S: u64 = 3;

/// The run must end on its own within its length and this much: far
/// above what a busy machine adds, far below the client's 30 s answer
/// timeout that a silent server used to hold a user for.
const MARGIN: Duration = Duration::from_secs(20);

/// The fault starts with the request after this one (counted from the
/// first after TREE_CONNECT, the client's open of the share's root): the
/// root, one whole pass, and NTCreateX, WriteX and ReadX of the second;
/// its LockX is the first request the fault meets.
const N: u64 = 1 + PASS + 3;

/// Runs `benchlab run` against `server` and returns its results and how
/// long the process ran; it is killed (and the test fails) past 120 s.
fn run(dir: &Path, server: &FakeSmb) -> (Value, Duration) {
    run_loadfile(dir, server, LOADFILE, LOOPS)
}

/// [`run`] of `loadfile`, `loops` passes.
fn run_loadfile(dir: &Path, server: &FakeSmb, loadfile: &str, loops: u64) -> (Value, Duration) {
    std::fs::write(dir.join("load.txt"), loadfile).unwrap();
    let suite = dir.join("suite.toml");
    std::fs::write(
        &suite,
        format!(
            "name = \"faults\"\ntarget = \"{}\"\n[workloads.lf]\nloadfile = \"load.txt\"\nloops = {loops}\n\
             [defaults]\nramp_up = \"0s\"\nramp_down = \"0s\"\nlength = \"{LENGTH_S}s\"\n[[mix]]\nclients = 1\n",
            server.url()
        ),
    )
    .unwrap();
    let out = dir.join("out");
    let t = Instant::now();
    let mut child = Command::new(common::benchlab_bin())
        .args(["run", common::s(&suite), "--out", common::s(&out)])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run benchlab");
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if t.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("benchlab did not end within 120 s of a {LENGTH_S} s run");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let took = t.elapsed();
    let o = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(status.success(), "benchlab failed ({status}):\n{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    let text = std::fs::read_to_string(out.join("results.json")).expect("results.json");
    (serde_json::from_str(&text).unwrap(), took)
}

/// An operation kind's (operations, errors).
fn op(m: &Value, name: &str) -> (u64, u64) {
    let class = m["classes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .cloned()
        .unwrap_or(Value::Null);
    (
        class["requests"].as_u64().unwrap_or(0),
        class["errors_total"].as_u64().unwrap_or(0),
    )
}

/// Errors of kind `kind` whose status starts with `status` (a bucket is
/// `KIND: expected NT_STATUS_OK, got STATUS…`; a lost connection's
/// status says how it was lost in parentheses).
fn errors(m: &Value, kind: &str, status: &str) -> u64 {
    let prefix = format!("{kind}: expected NT_STATUS_OK, got {status}");
    m["files"]["errors_by_status"]
        .as_object()
        .map(|o| {
            o.iter()
                .filter(|(k, _)| k.starts_with(&prefix))
                .map(|(_, v)| v.as_u64().unwrap_or(0))
                .sum()
        })
        .unwrap_or(0)
}

/// The loadfile's kinds and the SMB2 command each is.
const KINDS: [(&str, &str); 10] = [
    ("NTCreateX", "CREATE"),
    ("WriteX", "WRITE"),
    ("ReadX", "READ"),
    ("LockX", "LOCK"),
    ("UnlockX", "LOCK"),
    ("Flush", "FLUSH"),
    ("QUERY_FILE_INFORMATION", "QUERY_INFO"),
    ("SET_FILE_INFORMATION", "SET_INFO"),
    ("Close", "CLOSE"),
    ("QUERY_FS_INFORMATION", "QUERY_INFO"),
];

/// What went to the server per command must be what benchlab counted:
/// every operation of a kind is one request of its command unless it
/// failed before sending (a handle whose open failed: INVALID_HANDLE;
/// `local`: a status the client gave itself). The session's own
/// requests come on top: the root's CREATE at connect, and at the end
/// its CLOSE (and a LOGOFF), which `teardown` says were sent.
fn assert_sent_as_counted(m: &Value, c: &Counts, local: &str, teardown: bool) {
    for command in [
        "CREATE",
        "WRITE",
        "READ",
        "LOCK",
        "FLUSH",
        "QUERY_INFO",
        "SET_INFO",
        "CLOSE",
    ] {
        let mut sent = 0;
        for (kind, _) in KINDS.iter().filter(|(_, cmd)| *cmd == command) {
            sent += op(m, kind).0 - errors(m, kind, "NT_STATUS_INVALID_HANDLE") - errors(m, kind, local);
        }
        let session = match command {
            "CREATE" => 1,
            "CLOSE" if teardown => 1,
            _ => 0,
        };
        assert_eq!(c.sent(command), sent + session, "{command}: {c:?}");
    }
}

/// A server that answers everything: 30 operations, no error, each one
/// request, and the root's CLOSE and the LOGOFF at the end.
#[test]
fn a_well_behaved_fake_server_counts_what_benchlab_counts() {
    let server = FakeSmb::start(Fault::None);
    let d = tempfile::tempdir().unwrap();
    let (r, took) = run(d.path(), &server);
    let m = &r["mixes"][0];
    let c = server.counts();
    assert_eq!(m["requests"], PASS * LOOPS, "{}", m["files"]["errors_by_status"]);
    assert_eq!(m["errors_total"], 0, "{}", m["files"]["errors_by_status"]);
    assert_eq!(c.connections, 1);
    assert_sent_as_counted(m, &c, "-", true);
    assert_eq!(c.sent("LOGOFF"), 1, "{c:?}");
    assert_eq!(c.after_tree_total(), 1 + PASS * LOOPS + 2, "{c:?}");
    assert_eq!(c.answered_with("NT_STATUS_OK"), c.after_tree_total(), "{c:?}");
    assert_eq!(m["files"]["bytes_written"], 100 * LOOPS);
    assert_eq!(m["files"]["bytes_read"], 100 * LOOPS);
    assert!(took < Duration::from_secs(LENGTH_S) + MARGIN, "{took:?}");
}

/// The connection dropped at the second pass's LockX: it and every later
/// operation sent is NT_STATUS_CONNECTION_DISCONNECTED, by name; the
/// operations on the handle whose open failed are INVALID_HANDLE, not
/// sent; the run ends on time.
#[test]
fn a_dropped_connection_is_counted_as_disconnected() {
    let server = FakeSmb::start(Fault::DropAfter(N));
    let d = tempfile::tempdir().unwrap();
    let (r, took) = run(d.path(), &server);
    let m = &r["mixes"][0];
    let c = server.counts();
    let by = &m["files"]["errors_by_status"];
    assert_eq!(m["requests"], PASS * LOOPS, "{by}");
    // Pass 2: LockX … QUERY_FS_INFORMATION (7); pass 3: NTCreateX and
    // QUERY_FS_INFORMATION lost, the 8 on its handle INVALID_HANDLE.
    let lost = "NT_STATUS_CONNECTION_DISCONNECTED";
    assert_eq!(m["errors_total"], 7 + 2 + 8, "{by}");
    for (kind, n) in [
        ("LockX", 1),
        ("UnlockX", 1),
        ("Flush", 1),
        ("QUERY_FILE_INFORMATION", 1),
        ("SET_FILE_INFORMATION", 1),
        ("Close", 1),
        ("NTCreateX", 1),
        ("QUERY_FS_INFORMATION", 2),
    ] {
        assert_eq!(errors(m, kind, lost), n, "{kind}: {by}");
    }
    for kind in ["WriteX", "ReadX", "LockX", "UnlockX", "Flush", "Close"] {
        assert_eq!(errors(m, kind, "NT_STATUS_INVALID_HANDLE"), 1, "{kind}: {by}");
    }
    // The server: the root, 13 operations answered, the second pass's
    // LockX (its third LOCK) received and never answered; nothing after.
    assert_eq!(c.after_tree_total(), N + 1, "{c:?}");
    assert_eq!(c.answered_with("NT_STATUS_OK"), N, "{c:?}");
    assert_eq!((c.unanswered, c.sent("LOCK")), (1, 3), "{c:?}");
    assert!(took < Duration::from_secs(LENGTH_S) + MARGIN, "{took:?}");
}

/// STATUS_INSUFFICIENT_RESOURCES from the second pass's LockX on: every
/// operation answered so is counted by that name, exactly as often as
/// the server sent it during the passes.
#[test]
fn insufficient_resources_is_counted_by_name() {
    let server = FakeSmb::start(Fault::InsufficientResourcesAfter(N));
    let d = tempfile::tempdir().unwrap();
    let (r, took) = run(d.path(), &server);
    let m = &r["mixes"][0];
    let c = server.counts();
    let by = &m["files"]["errors_by_status"];
    let name = "NT_STATUS_INSUFFICIENT_RESOURCES";
    assert_eq!(m["requests"], PASS * LOOPS, "{by}");
    assert_eq!(m["errors_total"], 7 + 2 + 8, "{by}");
    let counted: u64 = KINDS.iter().map(|(k, _)| errors(m, k, name)).sum();
    assert_eq!(counted, 9, "{by}");
    // Exactly: no suffix on a status the server sent.
    assert_eq!(by[format!("LockX: expected NT_STATUS_OK, got {name}")], 1, "{by}");
    assert_sent_as_counted(m, &c, "-", true);
    // The server answered the 9 in the passes, then the root's CLOSE and
    // the LOGOFF the same way.
    assert_eq!(c.answered_with(name), counted + 2, "{c:?}");
    // The second pass's LockX and UnlockX.
    assert_eq!(c.answered("LOCK", name), 2, "{c:?}");
    assert_eq!(c.answered_with("NT_STATUS_OK"), N, "{c:?}");
    assert!(took < Duration::from_secs(LENGTH_S) + MARGIN, "{took:?}");
}

/// Credits withheld from the answer to the second pass's LockX on: the
/// client sends nothing past the window the server granted (docs/smb2.md:
/// no credit left, the operation is NT_STATUS_INSUFFICIENT_RESOURCES,
/// counted at once, nothing sent), so the server receives exactly one
/// request after the fault began.
#[test]
fn withheld_credits_stop_sending_and_count_insufficient_resources() {
    let server = FakeSmb::start(Fault::WithholdCreditsAfter(N));
    let d = tempfile::tempdir().unwrap();
    let (r, took) = run(d.path(), &server);
    let m = &r["mixes"][0];
    let c = server.counts();
    let by = &m["files"]["errors_by_status"];
    let name = "NT_STATUS_INSUFFICIENT_RESOURCES";
    assert_eq!(m["requests"], PASS * LOOPS, "{by}");
    // Pass 2: LockX done, the 6 after it refused; pass 3: NTCreateX and
    // QUERY_FS_INFORMATION refused, 8 on the handle INVALID_HANDLE.
    assert_eq!(m["errors_total"], 6 + 2 + 8, "{by}");
    assert_eq!(op(m, "LockX"), (LOOPS, 1), "{by}");
    let counted: u64 = KINDS.iter().map(|(k, _)| errors(m, k, name)).sum();
    assert_eq!(counted, 8, "{by}");
    assert_sent_as_counted(m, &c, name, false);
    assert_eq!(c.after_tree_total(), N + 1, "{c:?}");
    assert_eq!(c.answered_with("NT_STATUS_OK"), N + 1, "{c:?}");
    assert!(took < Duration::from_secs(LENGTH_S) + MARGIN, "{took:?}");
}

/// An OPLOCK_BREAK the client never asked for, before the answer to the
/// first pass's UnlockX: acknowledged and counted as the breaks of
/// `?leases=on` are (docs/smb2.md, "Leases"), no error, every operation
/// counted.
#[test]
fn an_unasked_oplock_break_is_read_past_without_error() {
    let server = FakeSmb::start(Fault::OplockBreakAfter(5));
    let d = tempfile::tempdir().unwrap();
    let (r, took) = run(d.path(), &server);
    let m = &r["mixes"][0];
    let c = server.counts();
    assert_eq!(m["requests"], PASS * LOOPS, "{}", m["files"]["errors_by_status"]);
    assert_eq!(m["errors_total"], 0, "{}", m["files"]["errors_by_status"]);
    assert_eq!((c.breaks_sent, c.breaks_acknowledged), (1, 1), "{c:?}");
    assert_eq!(m["files"]["oplock_breaks"], 1, "{}", m["files"]);
    assert_sent_as_counted(m, &c, "-", true);
    assert!(took < Duration::from_secs(LENGTH_S) + MARGIN, "{took:?}");
}

/// A break that comes while the user thinks (just after an answer, a 1 s
/// think time after each operation): acknowledged then, before the user's
/// next request — not when its next operation starts (the server would
/// hold another user's open meanwhile).
#[test]
fn a_break_while_the_user_thinks_is_acknowledged_before_its_next_request() {
    let server = FakeSmb::start(Fault::OplockBreakIdleAfter(1));
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("load.txt"), LOADFILE).unwrap();
    let suite = d.path().join("suite.toml");
    std::fs::write(
        &suite,
        format!(
            "name = \"idle-break\"\ntarget = \"{}\"\n[workloads.lf]\nloadfile = \"load.txt\"\n\
             [defaults]\nramp_up = \"0s\"\nramp_down = \"0s\"\nlength = \"3s\"\nthink_time = \"1s\"\n[[mix]]\nclients = 1\n",
            server.url()
        ),
    )
    .unwrap();
    let out = d.path().join("out");
    let o = Command::new(common::benchlab_bin())
        .args(["run", common::s(&suite), "--out", common::s(&out)])
        .output()
        .expect("run benchlab");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r: Value = serde_json::from_slice(&std::fs::read(out.join("results.json")).unwrap()).unwrap();
    let m = &r["mixes"][0];
    let c = server.counts();
    assert_eq!(m["errors_total"], 0, "{}", m["files"]["errors_by_status"]);
    assert_eq!((c.breaks_sent, c.breaks_acknowledged), (1, 1), "{c:?}");
    assert_eq!(c.requests_before_ack, 0, "{c:?}");
    assert_eq!(m["files"]["oplock_breaks"], 1, "{}", m["files"]);
}

/// A server that stops answering at the second pass's LockX: the run
/// still ends on its own near its length (not after the client's 30 s
/// answer timeout: 31 s here before the client bounded its wait by the
/// mix's end), with the 13 operations answered counted, no error,
/// and the unanswered one not counted (it did not complete in the
/// window).
#[test]
fn a_silent_server_does_not_hold_the_run_past_its_end() {
    let server = FakeSmb::start(Fault::SilentAfter(N));
    let d = tempfile::tempdir().unwrap();
    let (r, took) = run(d.path(), &server);
    let m = &r["mixes"][0];
    let c = server.counts();
    assert!(took < Duration::from_secs(LENGTH_S) + MARGIN, "{took:?}");
    assert_eq!(m["requests"], PASS + 3, "{}", m["files"]["errors_by_status"]);
    assert_eq!(m["errors_total"], 0, "{}", m["files"]["errors_by_status"]);
    assert_eq!(c.answered_with("NT_STATUS_OK"), N, "{c:?}");
    // The second pass's LockX waited for in vain; the connection is then
    // given up, nothing more sent (no CLOSE, no LOGOFF to wait for).
    assert_eq!((c.unanswered, c.sent("LOCK")), (1, 3), "{c:?}");
    assert_eq!(c.after_tree_total(), N + 1, "{c:?}");
}

/// Each info level dbench's client.txt uses goes out as its SMB2
/// information class, one request a line, in the loadfile's order, with
/// a buffer the class fits (before, every file query asked
/// FileAllInformation, every file system query FileFsFullSizeInformation,
/// whatever the line's level). The fake server lists nothing, so the
/// find is NO_SUCH_FILE; a path query is its compound, answered part by
/// part.
#[test]
fn each_client_txt_info_level_goes_out_as_its_class() {
    const LEVELS: &str = r#"NTCreateX "\clients\client1\a.txt" 0x40 0x2 1 NT_STATUS_OK
QUERY_PATH_INFORMATION "\clients\client1\a.txt" 1004 NT_STATUS_OK
QUERY_PATH_INFORMATION "\clients\client1\a.txt" 1035 NT_STATUS_OK
QUERY_FILE_INFORMATION 1 1004 NT_STATUS_OK
QUERY_FILE_INFORMATION 1 1005 NT_STATUS_OK
QUERY_FILE_INFORMATION 1 258 NT_STATUS_OK
SET_FILE_INFORMATION 1 1004 NT_STATUS_OK
Close 1 NT_STATUS_OK
QUERY_FS_INFORMATION 259 NT_STATUS_OK
QUERY_FS_INFORMATION 1 NT_STATUS_OK
FIND_FIRST "\clients\client1\*.txt" 260 1366 0 NT_STATUS_NO_SUCH_FILE
"#;
    let server = FakeSmb::start(Fault::None);
    let d = tempfile::tempdir().unwrap();
    let (r, _) = run_loadfile(d.path(), &server, LEVELS, 1);
    let m = &r["mixes"][0];
    assert_eq!(m["requests"], 11, "{}", m["files"]["errors_by_status"]);
    assert_eq!(m["errors_total"], 0, "{}", m["files"]["errors_by_status"]);
    let c = server.counts();
    let (file, fs) = (1, 2);
    assert_eq!(
        c.classes,
        [
            ("QUERY_INFO", file, 4, 40),      // 1004 FileBasicInformation
            ("QUERY_INFO", file, 35, 8),      // 1035 FileAttributeTagInformation
            ("QUERY_INFO", file, 4, 40),      // 1004
            ("QUERY_INFO", file, 5, 24),      // 1005 FileStandardInformation
            ("QUERY_INFO", file, 5, 24),      // 258 SMB_QUERY_FILE_STANDARD_INFO
            ("SET_INFO", file, 4, 40),        // 1004, 40 bytes of times
            ("QUERY_INFO", fs, 3, 24),        // 259 SMB_QUERY_FS_SIZE_INFO: FileFsSizeInformation
            ("QUERY_INFO", fs, 3, 24),        // 1 SMB_INFO_ALLOCATION: the same figures
            ("QUERY_DIRECTORY", 0, 3, 65536), // 260 FileBothDirectoryInformation
        ]
    );
}

/// A level no SMB2 class holds stops the run before any load, naming
/// the loadfile, its line and the level, and what is expected.
#[test]
fn a_level_without_an_smb2_class_is_refused_by_file_and_line() {
    let server = FakeSmb::start(Fault::None);
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("load.txt"),
        "QUERY_FS_INFORMATION 259 NT_STATUS_OK\nQUERY_FS_INFORMATION 999 NT_STATUS_OK\n",
    )
    .unwrap();
    let suite = d.path().join("suite.toml");
    std::fs::write(
        &suite,
        format!(
            "name = \"levels\"\ntarget = \"{}\"\n[workloads.lf]\nloadfile = \"load.txt\"\n\
             [defaults]\nramp_up = \"0s\"\nramp_down = \"0s\"\nlength = \"1s\"\n[[mix]]\nclients = 1\n",
            server.url()
        ),
    )
    .unwrap();
    let o = Command::new(common::benchlab_bin())
        .args(["run", common::s(&suite), "--out", common::s(&d.path().join("out"))])
        .output()
        .expect("run benchlab");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(
        stderr.contains("load.txt:2: QUERY_FS_INFORMATION level 999: SMB2 has no information class for it: expected one of 1, 2, 0x101"),
        "{stderr}"
    );
    assert_eq!(
        server.counts().connections,
        0,
        "nothing is sent before the loadfile is read"
    );
}

/// The same for a user on an OS thread of its own, blocking on its
/// socket. `benchlab run` puts every user of benchlab's client on an
/// event loop; a user process (`benchlab __file-user`, what a
/// libsmbclient mix starts per user) drives its one user on its own
/// thread, so it is fed a job of benchlab's client here by hand, as the
/// mix's process would: the job, `ready`, the common start, its outcome.
/// Its think time waits on the socket, so the break that comes behind the
/// first answer is acknowledged before any other request (before: the
/// acknowledgement waited for the next operation's request, 1 s later).
#[test]
fn a_thread_user_acknowledges_a_break_while_it_thinks() {
    use std::io::{BufRead, BufReader, Write};
    let server = FakeSmb::start(Fault::OplockBreakIdleAfter(1));
    let d = tempfile::tempdir().unwrap();
    let lf = d.path().join("load.txt");
    std::fs::write(&lf, LOADFILE).unwrap();
    let mut child = Command::new(common::benchlab_bin())
        .arg("__file-user")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("run benchlab __file-user");
    let mut stdin = child.stdin.take().unwrap();
    let job = serde_json::json!({
        "target": server.url(), "kind": "loadfile", "path": lf, "loops": null, "user": 1, "seed": 1,
        "delay_ns": 0, "ramp_up_ns": 0, "ramp_down_ns": 0, "length_ns": 3_000_000_000u64,
        "think_ns": 1_000_000_000u64,
    });
    writeln!(stdin, "{job}").unwrap();
    // The user's lines, read on a thread so a user that hangs fails the
    // test (killed past 120 s) instead of holding it.
    let (tx, rx) = std::sync::mpsc::channel();
    let out = BufReader::new(child.stdout.take().unwrap());
    std::thread::spawn(move || {
        for l in out.lines() {
            if tx.send(l.unwrap_or_default()).is_err() {
                return;
            }
        }
    });
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut next = || {
        rx.recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .unwrap_or_else(|_| {
                let _ = child.kill();
                panic!("the user process did not answer in time")
            })
    };
    assert_eq!(next(), "ready");
    // The common start: CLOCK_MONOTONIC nanoseconds, 50 ms ahead.
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a timespec to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    let t0 = ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64 + 50_000_000;
    writeln!(stdin, "go {t0}").unwrap();
    let outcome = loop {
        let l = next();
        if !l.starts_with("tick ") {
            break l;
        }
    };
    let o: Value = serde_json::from_str(&outcome).unwrap_or_else(|e| panic!("{outcome}: {e}"));
    drop(stdin);
    let _ = child.wait();
    let c = server.counts();
    assert_eq!(o["errors"], serde_json::json!({}), "{outcome}");
    assert_eq!((c.breaks_sent, c.breaks_acknowledged), (1, 1), "{c:?}");
    assert_eq!(c.requests_before_ack, 0, "{c:?}");
}
