//! Signing and encryption of benchlab's own SMB2 client (`?signing=`,
//! `?cipher=`) through the real binary against an unprivileged smbd on a
//! loopback high port: each algorithm and each cipher replays a short
//! loadfile with no error, the server allowing that one alone, and the
//! mix's results disclose what was negotiated; a pinned choice wins over
//! the server's preference, and one the server cannot give is refused by
//! name.

mod common;

use common::{require, s};
use serde_json::{json, Value};
use std::path::Path;
use std::process::Output;

/// Every operation kind of the dbench format in one pass that leaves the
/// workspace as it found it: 20 operations.
const LOADFILE: &str = r#"Deltree "\clients\client1" NT_STATUS_OK
Mkdir "\clients" NT_STATUS_OK
NTCreateX "\clients\client1" 0x1 0x2 1 NT_STATUS_OK
Close 1 NT_STATUS_OK
QUERY_FS_INFORMATION 1 NT_STATUS_OK
QUERY_PATH_INFORMATION "\clients\client1\a.txt" 1004 NT_STATUS_OBJECT_NAME_NOT_FOUND
FIND_FIRST "\clients\client1\*.txt" 260 1366 0 NT_STATUS_NO_SUCH_FILE
NTCreateX "\clients\client1\a.txt" 0x40 0x2 2 NT_STATUS_OK
WriteX 2 0 100 100 NT_STATUS_OK
WriteX 2 100 70000 70000 NT_STATUS_OK
ReadX 2 100 70000 70000 NT_STATUS_OK
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
const OPERATIONS: u64 = 20;
const LOOPS: u64 = 3;
const PASSWORD: &str = "Crypt0pw";

/// An smbd with `global` lines and the user running the tests added
/// (signing and sealing need a session key: no guest).
fn server(global: &str) -> (benchlab_fileserver::smbd::Smbd, String) {
    let smbd = benchlab_fileserver::smbd::start_smbd_with(global).expect("smbd starts");
    let me = benchlab_fileserver::smbd::user_name();
    smbd.add_user(&me, PASSWORD).unwrap();
    (smbd, me)
}

/// `benchlab run` of one user replaying LOADFILE LOOPS times against
/// `options` on `smbd`; the output and results.json (Null when none).
fn replay(smbd: &benchlab_fileserver::smbd::Smbd, me: &str, options: &str) -> (Output, Value) {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("load.txt"), LOADFILE).unwrap();
    let target = format!(
        "smb://{me}:{PASSWORD}@127.0.0.1:{}/bench?client=benchlab&{options}",
        smbd.port
    );
    let suite = d.path().join("suite.toml");
    std::fs::write(
        &suite,
        format!(
            "name = \"smb2-crypto\"\ntarget = \"{target}\"\n[workloads.lf]\nloadfile = \"load.txt\"\nloops = {LOOPS}\n\
             [defaults]\nramp_up = \"0s\"\nramp_down = \"0s\"\nlength = \"60s\"\n[[mix]]\nclients = 1\n"
        ),
    )
    .unwrap();
    let out = d.path().join("out");
    let o = common::run_benchlab(&["run", s(&suite), "--out", s(&out)]);
    let r = std::fs::read_to_string(out.join("results.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(Value::Null);
    (o, r)
}

/// The replay ran whole with no error, and its mix disclosed `negotiated`.
fn assert_clean(what: &str, o: &Output, r: &Value, negotiated: Value) {
    common::assert_success(what, o);
    let m = &r["mixes"][0];
    assert_eq!(m["errors_total"], 0, "{what}: {}", m["files"]["errors_by_status"]);
    assert_eq!(m["requests"], OPERATIONS * LOOPS, "{what}");
    assert_eq!(m["files"]["not_sent"], 0, "{what}");
    assert_eq!(m["files"]["smb"], negotiated, "{what}");
    let stdout = String::from_utf8_lossy(&o.stdout);
    let line = format!(
        "smb negotiated: dialect {}, signing {}, cipher {}",
        negotiated["dialect"].as_str().unwrap(),
        negotiated["signing"].as_str().unwrap(),
        negotiated["cipher"].as_str().unwrap()
    );
    assert!(stdout.contains(&line), "{what}: no `{line}` in\n{stdout}");
    assert!(
        !stdout.contains(PASSWORD) && !r.to_string().contains(PASSWORD),
        "{what}"
    );
}

/// Each signing algorithm, the server allowing it alone and requiring
/// signing: every request signed with it and every answer's signature
/// checked (a wrong one would be an error), 0 errors, and the mix says
/// which.
#[test]
fn each_signing_algorithm_signs_a_replay_with_no_error() {
    require("smbd");
    for (algorithm, samba) in [
        ("hmac-sha256", "HMAC-SHA256"),
        ("aes-cmac", "AES-128-CMAC"),
        ("aes-gmac", "AES-128-GMAC"),
    ] {
        let (smbd, me) = server(&format!(
            " server signing = mandatory\n server smb3 signing algorithms = {samba}\n"
        ));
        let (o, r) = replay(&smbd, &me, &format!("sign=required&signing={algorithm}&dialect=3.1.1"));
        assert_clean(
            algorithm,
            &o,
            &r,
            json!({"dialect": "3.1.1", "signing": algorithm, "cipher": "none"}),
        );
    }
}

/// Each cipher, the server allowing it alone and requiring encryption:
/// every request sealed with it and every answer opened (its tag
/// checked), 0 errors, and the mix says which. The 70,000-byte WriteX and
/// ReadX are two requests each, one a full 64 KiB.
#[test]
fn each_cipher_seals_a_replay_with_no_error() {
    require("smbd");
    for (cipher, samba) in [
        ("aes-128-ccm", "AES-128-CCM"),
        ("aes-128-gcm", "AES-128-GCM"),
        ("aes-256-ccm", "AES-256-CCM"),
        ("aes-256-gcm", "AES-256-GCM"),
    ] {
        let (smbd, me) = server(&format!(
            " smb encrypt = required\n server smb3 encryption algorithms = {samba}\n"
        ));
        let (o, r) = replay(&smbd, &me, &format!("encrypt=require&cipher={cipher}"));
        assert_clean(
            cipher,
            &o,
            &r,
            json!({"dialect": "3.1.1", "signing": "none", "cipher": cipher}),
        );
    }
}

/// Against a server that allows everything (and prefers AES-GMAC and
/// AES-128-GCM), what is pinned is what runs: a client that ignored
/// `signing=` or `cipher=` would negotiate the server's first choice.
/// Unpinned, the server's choice is disclosed; a pin the server cannot
/// give stops the run before any load, naming both.
#[test]
fn a_pinned_algorithm_or_cipher_is_the_one_negotiated_or_the_run_stops() {
    require("smbd");
    let (smbd, me) = server("");
    let (o, r) = replay(&smbd, &me, "sign=required&signing=hmac-sha256");
    assert_clean(
        "signing=hmac-sha256",
        &o,
        &r,
        json!({"dialect": "3.1.1", "signing": "hmac-sha256", "cipher": "none"}),
    );
    let (o, r) = replay(&smbd, &me, "encrypt=require&cipher=aes-256-ccm");
    assert_clean(
        "cipher=aes-256-ccm",
        &o,
        &r,
        json!({"dialect": "3.1.1", "signing": "none", "cipher": "aes-256-ccm"}),
    );
    let (o, r) = replay(&smbd, &me, "sign=required");
    assert_clean(
        "sign=required",
        &o,
        &r,
        json!({"dialect": "3.1.1", "signing": "aes-gmac", "cipher": "none"}),
    );
    // At 3.0 signing is AES-CMAC whatever is offered.
    let (o, r) = replay(&smbd, &me, "sign=required&dialect=3.0");
    assert_clean(
        "dialect=3.0",
        &o,
        &r,
        json!({"dialect": "3.0", "signing": "aes-cmac", "cipher": "none"}),
    );
    drop(smbd);
    let (smbd, me) =
        server(" server smb3 signing algorithms = AES-128-CMAC\n server smb3 encryption algorithms = AES-128-CCM\n");
    for (options, want) in [
        (
            "sign=required&signing=aes-gmac",
            "signing=aes-gmac was asked, but at dialect 3.1.1 the server negotiated aes-cmac",
        ),
        (
            "encrypt=require&cipher=aes-256-gcm",
            "cipher=aes-256-gcm was asked, but at dialect 3.1.1 the server negotiated",
        ),
    ] {
        let (o, r) = replay(&smbd, &me, options);
        assert!(!o.status.success(), "{options}");
        assert_eq!(r, Value::Null, "{options}: no results without a run");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(want), "{options}: {err}");
        assert!(!err.contains(PASSWORD), "{err}");
    }
}

/// Combinations that cannot apply are refused by name before any load
/// (no server needed: the target is refused as it is read).
#[test]
fn signing_and_cipher_options_that_cannot_apply_are_refused() {
    let d = tempfile::tempdir().unwrap();
    for (options, want) in [
        ("client=benchlab&signing=aes-gmac", "it needs sign=required"),
        (
            "client=benchlab&sign=required&signing=aes-gmac&dialect=3.0",
            "`signing=aes-gmac` cannot apply at dialect 3.0",
        ),
        (
            "client=benchlab&encrypt=require&cipher=aes-256-gcm&dialect=3.0.2",
            "`cipher=aes-256-gcm` cannot apply at dialect 3.0.2",
        ),
        (
            "client=benchlab&cipher=aes-128-gcm",
            "it needs encrypt=require or encrypt=request",
        ),
        (
            "client=libsmbclient&encrypt=require&cipher=aes-128-gcm",
            "apply to client=benchlab only",
        ),
    ] {
        let suite = d.path().join("suite.toml");
        std::fs::write(d.path().join("load.txt"), LOADFILE).unwrap();
        std::fs::write(
            &suite,
            format!(
                "name = \"x\"\ntarget = \"smb://127.0.0.1:9/bench?{options}\"\n[workloads.lf]\nloadfile = \"load.txt\"\n\
                 [defaults]\nramp_up = \"0s\"\nramp_down = \"0s\"\nlength = \"2s\"\n[[mix]]\nclients = 1\n"
            ),
        )
        .unwrap();
        let o = common::run_benchlab(&["run", s(&suite), "--out", s(&d.path().join("out"))]);
        assert!(!o.status.success(), "{options}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(want), "{options}: {err}");
        assert!(!Path::new(&d.path().join("out/results.json")).exists(), "{options}");
    }
}
