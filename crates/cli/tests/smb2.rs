//! `smb://…?client=benchlab`, benchlab's own SMB2/3 client, through the
//! real binary against an unprivileged smbd on a loopback high port:
//! dbench's client.txt with no error at each pinned dialect, signed and
//! sealed,
//! every operation (LOCK and FLUSH included) equal to Samba's full_audit
//! log, and NT statuses by name.

mod common;
#[path = "common/smb_replay.rs"]
mod smb_replay;

use common::{require, run_suite, s};
use serde_json::Value;
use smb_replay::{op, profile, profile_since, replay, replay_thinking};
use std::collections::BTreeMap;
use std::path::Path;

/// Every operation kind of the dbench format in one pass that leaves the
/// workspace as it found it (file_suite.rs's): 2 WriteX of 100 + 4000
/// bytes, 1 ReadX of 4000.
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

/// [`replay`] with room for every pass (the loops end the mix).
fn run(dir: &Path, target: &str, loadfile: &str, loops: u32, clients: u32) -> Value {
    replay(dir, target, loadfile, loops, clients, "120s")
}

/// The first `n` operations of Debian's dbench client.txt: a bounded
/// replay (the whole file is 458,000 operations) that still holds every
/// kind, Flush and LockX/UnlockX included (the first LockX is line 2784).
fn client_txt_prefix(n: usize) -> (String, u64) {
    let text =
        std::fs::read_to_string("/usr/share/dbench/client.txt").expect("/usr/share/dbench/client.txt (package dbench)");
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).take(n).collect();
    (lines.join("\n") + "\n", lines.len() as u64)
}

/// client.txt's first 3,000 operations replay by two users with no error
/// at each pinned dialect, every status as the file expects it by name,
/// LOCK and FLUSH sent (none not-sent); and with `server signing =
/// mandatory` (every request signed) and `smb encrypt = required` (every
/// request sealed), the password nowhere in the results or the output.
#[test]
fn client_txt_replays_with_no_error_at_each_dialect_and_signed() {
    require("smbd");
    let (lf, n) = client_txt_prefix(3000);
    let locks = lf.lines().filter(|l| l.starts_with("LockX")).count() as u64;
    let flushes = lf.lines().filter(|l| l.starts_with("Flush")).count() as u64;
    assert!(locks > 0 && flushes > 0);
    let smbd = benchlab_fileserver::smbd::start_smbd().expect("smbd starts");
    for dialect in ["2.0.2", "2.1", "3.0", "3.1.1"] {
        let d = tempfile::tempdir().unwrap();
        let target = format!("{}?client=benchlab&dialect={dialect}", smbd.url());
        let r = run(d.path(), &target, &lf, 1, 2);
        let m = &r["mixes"][0];
        assert_eq!(m["errors_total"], 0, "{dialect}: {}", m["files"]["errors_by_status"]);
        assert_eq!(m["requests"], n * 2, "{dialect}");
        assert_eq!(m["files"]["not_sent"], 0, "{dialect}");
        assert_eq!(op(m, "LockX"), (locks * 2, 0, 0), "{dialect}");
        assert_eq!(op(m, "Flush"), (flushes * 2, 0, 0), "{dialect}");
    }
    // A user's session on a server that requires signing, then on one
    // that requires encryption (every request sealed).
    let me = benchlab_fileserver::smbd::user_name();
    for (global, option) in [
        (" server signing = mandatory\n", "sign=required"),
        (" smb encrypt = required\n", "encrypt=require"),
    ] {
        let server = benchlab_fileserver::smbd::start_smbd_with(global).expect("smbd starts");
        server.add_user(&me, "S3CRETpw").unwrap();
        let d = tempfile::tempdir().unwrap();
        let target = format!(
            "smb://{me}:S3CRETpw@127.0.0.1:{}/bench?{option}&client=benchlab",
            server.port
        );
        std::fs::write(d.path().join("load.txt"), &lf).unwrap();
        let suite = d.path().join("suite.toml");
        std::fs::write(
            &suite,
            format!(
                "name = \"smb2\"\ntarget = \"{target}\"\n[workloads.lf]\nloadfile = \"load.txt\"\nloops = 1\n\
                 [defaults]\nramp_up = \"0s\"\nramp_down = \"0s\"\nlength = \"120s\"\n[[mix]]\nclients = 2\n"
            ),
        )
        .unwrap();
        let out = d.path().join("out");
        let o = common::run_benchlab(&["run", s(&suite), "--out", s(&out)]);
        common::assert_success(option, &o);
        let text = std::fs::read_to_string(out.join("results.json")).unwrap();
        let r: Value = serde_json::from_str(&text).unwrap();
        let m = &r["mixes"][0];
        assert_eq!(m["errors_total"], 0, "{option}: {}", m["files"]["errors_by_status"]);
        assert_eq!(m["requests"], n * 2, "{option}");
        assert_eq!(op(m, "LockX"), (locks * 2, 0, 0), "{option}");
        for shown in [
            text,
            String::from_utf8_lossy(&o.stdout).into_owned(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
            std::fs::read_to_string(out.join("report.html")).unwrap_or_default(),
        ] {
            assert!(!shown.contains("S3CRETpw"), "{option}");
        }
    }
}

/// Per VFS operation, how often it succeeded in smbd's full_audit log;
/// `unlinkat:b.txt` apart (the loadfile's Unlink), `create_file:file` for
/// files created.
fn audit_counts(log_dir: &Path) -> BTreeMap<String, u64> {
    let mut counts = BTreeMap::new();
    for e in std::fs::read_dir(log_dir).unwrap().flatten() {
        let Ok(text) = std::fs::read_to_string(e.path()) else {
            continue;
        };
        for line in text.lines() {
            let f: Vec<&str> = line.trim().split('|').collect();
            if f.len() < 3 || f[2] != "ok" {
                continue;
            }
            let op = match f[1] {
                "create_file" if f.len() >= 6 && f[5] == "create" => format!("create_file:{}", f[4]),
                "unlinkat" if line.ends_with("/b.txt") => "unlinkat:b.txt".to_string(),
                op => op.to_string(),
            };
            *counts.entry(op).or_default() += 1;
        }
    }
    counts
}

/// Every operation of the loadfile, LOCK and FLUSH included, is exactly
/// what Samba's full_audit log says smbd did: 3 passes by 2 users.
#[test]
fn every_operation_equals_sambas_full_audit_log() {
    require("smbd");
    let smbd = benchlab_fileserver::smbd::start_smbd_with(
        " vfs objects = full_audit\n full_audit:prefix = %I\n\
         full_audit:success = create_file pwrite_send pread_send renameat unlinkat mkdirat fsync_send brl_lock_windows lock fntimes disk_free\n\
         full_audit:failure = none\n full_audit:syslog = false\n log level = 0 full_audit:1\n",
    )
    .expect("smbd with full_audit (packages samba and samba-vfs-modules)");
    std::fs::create_dir_all(smbd.share.join("clients")).unwrap();
    let log_dir = smbd.config().parent().unwrap().join("log");
    let d = tempfile::tempdir().unwrap();
    let (loops, users) = (3u64, 2u64);
    let r = run(
        d.path(),
        &format!("{}?client=benchlab", smbd.url()),
        LOADFILE,
        loops as u32,
        users as u32,
    );
    let m = &r["mixes"][0];
    assert_eq!(m["errors_total"], 0, "{}", m["files"]["errors_by_status"]);
    assert_eq!(m["requests"], 20 * loops * users);
    assert_eq!(m["files"]["not_sent"], 0);
    assert_eq!(m["files"]["bytes_written"], 4100 * loops * users);
    assert_eq!(m["files"]["bytes_read"], 4000 * loops * users);
    let audit = audit_counts(&log_dir);
    let count = |k: &str| audit.get(k).copied().unwrap_or(0);
    let passes = loops * users;
    // One VFS call a loadfile operation.
    for (kind, vfs) in [
        ("WriteX", "pwrite_send"),
        ("ReadX", "pread_send"),
        ("LockX", "brl_lock_windows"),
        ("QUERY_FS_INFORMATION", "disk_free"),
        ("Flush", "fsync_send"),
        ("Rename", "renameat"),
        ("Unlink", "unlinkat:b.txt"),
    ] {
        assert_eq!(op(m, kind).0, count(vfs), "{kind} vs {vfs}: {audit:?}");
    }
    assert_eq!(count("brl_lock_windows"), passes, "{audit:?}");
    // Samba 4.17 makes no Windows-lock VFS call for an unlock; the POSIX
    // lock under every lock and every unlock is one `lock` call each.
    assert_eq!(op(m, "LockX").0 + op(m, "UnlockX").0, count("lock"), "{audit:?}");
    assert_eq!(count("lock"), 2 * passes, "{audit:?}");
    assert_eq!(count("fsync_send"), passes, "{audit:?}");
    assert_eq!(count("pwrite_send"), 2 * passes, "{audit:?}");
    // NTCreateX of a.txt creates a file, of client1 a directory (a mkdirat).
    assert_eq!(count("create_file:file"), passes, "{audit:?}");
    assert_eq!(count("create_file:dir"), passes, "{audit:?}");
    assert_eq!(count("mkdirat"), passes, "{audit:?}");
    // SET_FILE_INFORMATION sets the times (fntimes); the close of each
    // file written sets its write time once more.
    assert_eq!(op(m, "SET_FILE_INFORMATION").0, passes);
    assert_eq!(count("fntimes"), 2 * passes, "{audit:?}");
}

/// NT statuses come back by name: a missing file in an existing
/// directory, a file in a missing directory and a find with no match are
/// three statuses, and one expected where another comes is an error by
/// name (libsmbclient answers all three as one ENOENT).
#[test]
fn not_found_statuses_are_told_apart_by_name() {
    require("smbd");
    let smbd = benchlab_fileserver::smbd::start_smbd().expect("smbd starts");
    let d = tempfile::tempdir().unwrap();
    let lf = r#"Mkdir "\clients" NT_STATUS_OK
Mkdir "\clients\client1" NT_STATUS_OK
QUERY_PATH_INFORMATION "\clients\client1\gone.txt" 1004 NT_STATUS_OBJECT_NAME_NOT_FOUND
QUERY_PATH_INFORMATION "\clients\client1\nodir\gone.txt" 1004 NT_STATUS_OBJECT_PATH_NOT_FOUND
FIND_FIRST "\clients\client1\*.none" 260 1366 0 NT_STATUS_NO_SUCH_FILE
QUERY_PATH_INFORMATION "\clients\client1\nodir\gone.txt" 1004 NT_STATUS_OBJECT_NAME_NOT_FOUND
Unlink "\clients\client1\gone.txt" 0x6 NT_STATUS_NO_SUCH_FILE
"#;
    let r = run(d.path(), &format!("{}?client=benchlab", smbd.url()), lf, 2, 1);
    let m = &r["mixes"][0];
    let errors = &m["files"]["errors_by_status"];
    assert_eq!(m["requests"], 14);
    assert_eq!(m["errors_total"], 4, "{errors}");
    assert_eq!(
        errors["QUERY_PATH_INFORMATION: expected NT_STATUS_OBJECT_NAME_NOT_FOUND, got NT_STATUS_OBJECT_PATH_NOT_FOUND"],
        2,
        "{errors}"
    );
    assert_eq!(
        errors["Unlink: expected NT_STATUS_NO_SUCH_FILE, got NT_STATUS_OBJECT_NAME_NOT_FOUND"], 2,
        "{errors}"
    );
}

/// Options that cannot apply are refused by name before any load.
#[test]
fn options_that_cannot_apply_are_refused_by_name() {
    let d = tempfile::tempdir().unwrap();
    for (q, said) in [
        (
            "client=benchlab&dialect=2.1&encrypt=require",
            "option `encrypt=require` needs SMB 3.0 or later",
        ),
        (
            "client=libsmbclient&dialect=3.0",
            "option `dialect=` applies to client=benchlab only",
        ),
        (
            "client=libsmbclient&leases=on",
            "option `leases=on` applies to client=benchlab only",
        ),
        (
            "client=benchlab&dialect=3.1",
            "option `dialect=3.1`: expected dialect=2.0.2|2.1|3.0|3.0.2|3.1.1",
        ),
    ] {
        std::fs::write(d.path().join("load.txt"), LOADFILE).unwrap();
        let suite = d.path().join("suite.toml");
        std::fs::write(
            &suite,
            format!(
                "name = \"smb2\"\ntarget = \"smb://127.0.0.1:1/bench?{q}\"\n[workloads.lf]\nloadfile = \"load.txt\"\n\
                 [defaults]\nlength = \"1s\"\nramp_up = \"0s\"\nramp_down = \"0s\"\n[[mix]]\nclients = 1\n"
            ),
        )
        .unwrap();
        let o = common::run_benchlab(&["run", s(&suite), "--out", s(&d.path().join("out"))]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            !o.status.success() && err.contains(said) && !err.contains("panicked"),
            "{q}: {err}"
        );
    }
}

/// The shipped NetBench disk mix through benchlab's client, its users
/// on the run's event loops: no error, and the locks and flushes libsmbclient
/// counts as not sent are sent and done.
#[test]
fn the_disk_mix_sends_locks_and_flushes() {
    require("smbd");
    let smbd = benchlab_fileserver::smbd::start_smbd().expect("smbd starts");
    let d = tempfile::tempdir().unwrap();
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../suites/workloads/netbench-1999-disk-mix.toml");
    let mix = std::fs::read_to_string(shipped)
        .unwrap()
        .replace("workspace = \"4MB\"", "workspace = \"400KB\"");
    std::fs::write(d.path().join("mix.toml"), mix).unwrap();
    let suite = d.path().join("suite.toml");
    std::fs::write(
        &suite,
        format!(
            "name = \"dm\"\ntarget = \"{}?client=benchlab\"\n[workloads.nb]\ndisk_mix = \"mix.toml\"\n\
             [defaults]\nramp_up = \"500ms\"\nramp_down = \"500ms\"\nlength = \"3s\"\n[[mix]]\nclients = 2\n",
            smbd.url()
        ),
    )
    .unwrap();
    let r = run_suite(&suite, &d.path().join("out"), &[]);
    let m = &r["mixes"][0];
    assert_eq!(m["errors_total"], 0, "{}", m["files"]["errors_by_status"]);
    assert_eq!(m["files"]["not_sent"], 0);
    assert_eq!(m["files"]["prepared_bytes"], 800_000);
    for kind in ["Flush", "LockX", "UnlockX"] {
        let (done, errors, not_sent) = op(m, kind);
        assert!(
            done > 0 && errors == 0 && not_sent == 0,
            "{kind}: {done} {errors} {not_sent}"
        );
    }
    for n in 1..=2 {
        assert!(smbd.share.join(format!("clients/client{n}/f00000.dat")).is_file());
    }
}

/// The most a Linux status file field may say of a process: `Threads`,
/// `VmHWM` (kB); `None` once the process is gone.
fn proc_status(pid: u32, field: &str) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = text.lines().find(|l| l.starts_with(field))?;
    line[field.len()..].trim().trim_end_matches(" kB").trim().parse().ok()
}

/// 1,000 users in one benchlab process against smbd, a small disk mix for
/// 3 s: no error, every user's operations counted, and the process never
/// has more threads than the loops (one per usable CPU) and a few of its
/// own — users as threads would be 1,000 more (with the mix run as
/// threads, 100 users already made 102 threads and 278 MB) — and its
/// peak RSS stays under 256 MB. As 100 clients of 10 users: a client's
/// counts are kept per event loop it has users on, so this is the shape
/// that held most (305 MB in a release build while each client's users
/// were spread over every loop; 175–179 MB since a client's users share
/// one). About a minute on 2 busy CPUs, most of it smbd forking a process
/// for each of the 1,000 connections.
#[test]
fn a_thousand_users_run_in_one_process_on_a_few_threads() {
    require("smbd");
    let smbd = benchlab_fileserver::smbd::start_smbd().expect("smbd starts");
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("mix.toml"),
        "name = \"tiny\"\nworkspace = \"4KB\"\nread_size = \"1KiB\"\nwrite_size = \"1KiB\"\n\
         [file_size]\nmedian = \"1KB\"\np90 = \"2KB\"\nmin = \"512\"\nmax = \"2KB\"\n\
         [operations]\nwrite = 20\nread = 20\nopen = 10\nquery_path = 20\nquery_file = 10\nfind = 5\n\
         create = 2\ndelete = 2\nrename = 2\nlock = 4\nflush = 5\n",
    )
    .unwrap();
    let users: u64 = 1000;
    let suite = d.path().join("suite.toml");
    std::fs::write(
        &suite,
        format!(
            "name = \"k\"\ntarget = \"{}?client=benchlab\"\n[workloads.nb]\ndisk_mix = \"mix.toml\"\n\
             [defaults]\nramp_up = \"500ms\"\nramp_down = \"500ms\"\nlength = \"4s\"\nthink_time = \"200ms\"\n\
             [[mix]]\nclients = {}\nthreads_per_client = 10\n",
            smbd.url(),
            users / 10
        ),
    )
    .unwrap();
    let out = d.path().join("out");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_benchlab"))
        .args(["run", common::s(&suite), "--out", common::s(&out)])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let (mut threads, mut hwm_kb) = (0u64, 0u64);
    let status = loop {
        if let Some(t) = proc_status(pid, "Threads:") {
            threads = threads.max(t);
        }
        if let Some(h) = proc_status(pid, "VmHWM:") {
            hwm_kb = hwm_kb.max(h);
        }
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert!(status.success(), "benchlab run failed: {err}");
    let r: Value = serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    let m = &r["mixes"][0];
    assert_eq!(m["errors_total"], 0, "{}", m["files"]["errors_by_status"]);
    assert_eq!(m["files"]["not_sent"], 0);
    let prepared = m["files"]["prepared_bytes"].as_u64().unwrap();
    assert!(prepared >= 4000 * users, "{prepared} bytes prepared");
    let ops = m["requests"].as_u64().unwrap();
    // At least one action a user each (a think time of 200 ms over a 3 s window).
    assert!(ops >= users, "{ops} operations");
    // Every frame of the counted operations is at least its payload.
    let wire = m["files"]["wire_bytes_sent"].as_u64().unwrap() + m["files"]["wire_bytes_received"].as_u64().unwrap();
    let payload = m["files"]["bytes_read"].as_u64().unwrap() + m["files"]["bytes_written"].as_u64().unwrap();
    assert!(wire > payload && payload > 0, "wire {wire}, payload {payload}");
    let cpus = std::thread::available_parallelism().unwrap().get() as u64;
    eprintln!(
        "{users} users: {ops} operations, at most {threads} threads ({cpus} usable CPUs), peak RSS {} MB",
        hwm_kb / 1024
    );
    assert!(threads <= cpus + 8, "{threads} threads for {cpus} CPUs");
    assert!(hwm_kb > 0 && hwm_kb <= 256 * 1024, "peak RSS {hwm_kb} kB");
}

/// Wire bytes are every frame of the operations counted, exactly: a
/// QUERY_FS_INFORMATION is one 109-byte request (NetBIOS 4, header 64,
/// QUERY_INFO 41) and one 108-byte answer (4, 64, 8 and the 32 bytes of
/// FILE_FS_FULL_SIZE_INFORMATION, the loadfile's level 1007) — the session's setup and logoff
/// outside the window are not counted; payload bytes stay what was read
/// and written. A target whose client cannot see its wire (file://) has
/// no wire fields at all, not zeros.
#[test]
fn wire_bytes_are_every_frame_of_the_operations_counted() {
    require("smbd");
    let smbd = benchlab_fileserver::smbd::start_smbd().expect("smbd starts");
    let d = tempfile::tempdir().unwrap();
    let lf =
        "QUERY_FS_INFORMATION 1007 NT_STATUS_OK\nQUERY_FS_INFORMATION 1007 NT_STATUS_OK\nQUERY_FS_INFORMATION 1007 NT_STATUS_OK\n";
    let r = run(d.path(), &format!("{}?client=benchlab", smbd.url()), lf, 2, 1);
    let f = &r["mixes"][0]["files"];
    assert_eq!(r["mixes"][0]["errors_total"], 0, "{f}");
    assert_eq!(r["mixes"][0]["requests"], 6);
    assert_eq!(
        (&f["bytes_read"], &f["bytes_written"]),
        (&Value::from(0), &Value::from(0))
    );
    assert_eq!(f["wire_bytes_sent"], 6 * 109, "{f}");
    assert_eq!(f["wire_bytes_received"], 6 * 108, "{f}");
    // The report shows them beside the payload.
    let page = std::fs::read_to_string(d.path().join("out/report.html")).unwrap();
    for cell in [
        "data-field=\"files.wire_bytes_sent\">654<",
        "data-field=\"files.wire_bytes_received\">648<",
    ] {
        assert!(page.contains(cell), "{cell} not in the report");
    }
    let root = d.path().join("root");
    std::fs::create_dir_all(&root).unwrap();
    let r = run(d.path(), &format!("file://{}", root.display()), lf, 1, 1);
    let f = &r["mixes"][0]["files"];
    assert_eq!(r["mixes"][0]["requests"], 3);
    assert!(
        f.get("wire_bytes_sent").is_none() && f.get("wire_bytes_received").is_none(),
        "{f}"
    );
}

/// `?leases=on`: two users replay a loadfile on one shared file, each
/// open asking for a lease (version 2 at 3.1.1; a batch oplock at 2.0.2);
/// smbd breaks one user's lease when the other opens, the break is
/// acknowledged as it comes — while its user waits for an answer, or
/// thinks (5 ms after each operation) — the operation waiting on it goes
/// on, and the run has no error.
///
/// Why the think time: with none, one user's Close and next Create follow
/// each other within a fraction of a millisecond, and smbd 4.17 retries
/// the other user's deferred Create only after that Create has opened
/// again, every time; in about one run in eight on a loaded machine the
/// last retry was never woken (smbd's debug log: the open deferred, the
/// blocking open closed, then nothing until benchlab's 30 s answer
/// timeout took the connection as lost). That is the server starving a
/// user, measured as it should be, not what this test is about. How many breaks come depends on how the two users'
/// opens interleave (19 and 41 in two runs), so the count is not
/// predicted but held against smbd's own: `smbstatus -P`'s
/// `smb2_break_count`, the OPLOCK_BREAK requests — acknowledgements, of
/// lease and oplock breaks alike — smbd received (smb2_server.c counts
/// each request by command as it dispatches it). benchlab's
/// `lease_breaks + oplock_breaks` are the acknowledgements it sent during
/// the operations counted: every one, since the mix has no ramps and each
/// user's last operation is a Close, after which it holds nothing to
/// break. The two must be equal, and not 0. Without the option no lease
/// is asked for and none is broken (0, not absent: the client sees its
/// wire), on either side.
#[test]
fn leases_are_asked_for_and_their_breaks_acknowledged() {
    require("smbd");
    require("smbstatus");
    let smbd = benchlab_fileserver::smbd::start_smbd_with(" smbd profiling level = on\n").expect("smbd starts");
    let d = tempfile::tempdir().unwrap();
    let lf = "NTCreateX \"\\shared.dat\" 0x0 0x3 1 NT_STATUS_OK\nWriteX 1 0 100 100 NT_STATUS_OK\n\
              ReadX 1 0 100 100 NT_STATUS_OK\nClose 1 NT_STATUS_OK\n";
    // A replay of 20 passes by 2 users: its mix, and the acknowledgements
    // smbd counted meanwhile (once both users logged off).
    let leased = |options: &str| {
        let before = profile(&smbd.config());
        let target = format!("{}?{options}", smbd.url());
        let r = replay_thinking(d.path(), &target, lf, 20, 2, "120s", "5ms");
        let m = r["mixes"][0].clone();
        assert_eq!(m["errors_total"], 0, "{options}: {}", m["files"]["errors_by_status"]);
        assert_eq!(m["requests"], 4 * 20 * 2, "{options}");
        let acks = profile_since(&smbd.config(), &before, 2)
            .get("break")
            .copied()
            .unwrap_or(0);
        let f = &m["files"];
        (
            f["lease_breaks"].as_u64().unwrap(),
            f["oplock_breaks"].as_u64().unwrap(),
            acks,
        )
    };
    let (lease, oplock, smbd_acks) = leased("client=benchlab&leases=on");
    assert_eq!(
        (lease, oplock),
        (smbd_acks, 0),
        "3.1.1: benchlab's lease and oplock breaks (left) vs smbd's acknowledgements received"
    );
    assert!(lease > 0, "no lease broken: the test shows nothing");
    // 2.0.2 has no leases: a batch oplock is asked for, its breaks acknowledged.
    let (lease, oplock, smbd_oplock_acks) = leased("client=benchlab&leases=on&dialect=2.0.2");
    assert_eq!(
        (lease, oplock),
        (0, smbd_oplock_acks),
        "2.0.2: benchlab's lease and oplock breaks (left) vs smbd's acknowledgements received"
    );
    assert!(oplock > 0, "no oplock broken: the test shows nothing");
    assert_eq!(leased("client=benchlab"), (0, 0, 0));
    eprintln!("breaks acknowledged, benchlab = smbd: {smbd_acks} lease (3.1.1), {smbd_oplock_acks} oplock (2.0.2)");
}
