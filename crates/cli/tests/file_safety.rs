//! File suites must not reach outside their target, leak an SMB password,
//! or read an input without a bound (issue 21): loadfile paths that leave
//! the share are refused at `check` and `run` with file:line before any
//! load; symlinks planted inside a `file://` target are not followed out;
//! `smb://USER:PASS@` never reaches results, reports or the terminal, and
//! the password can come from a file or the environment instead.

mod common;

use common::run_benchlab;
use serde_json::Value;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Output};

/// A file suite in `dir` whose target is `dir/t/root` and whose workload
/// is `workload` (a `[workloads.NAME]` table's body lines).
fn suite(dir: &Path, workload: &str) -> std::path::PathBuf {
    let root = dir.join("t/root");
    std::fs::create_dir_all(&root).unwrap();
    let s = format!(
        "name = \"safety\"\ntarget = \"file://{}\"\n[workloads.lf]\n{workload}\n\
         [defaults]\nramp_up = \"0s\"\nramp_down = \"0s\"\nlength = \"3s\"\n[[mix]]\nclients = 1\n",
        root.display()
    );
    let p = dir.join("suite.toml");
    std::fs::write(&p, s).unwrap();
    p
}

fn text(o: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The audit's three loadfiles (a `..` escape on NTCreateX, an absolute
/// path, a Deltree `..` escape): `check` and `run` exit 2 naming
/// file:line and the path, and nothing outside the target is created or
/// deleted (before the fix both exited 0 and did).
#[test]
fn loadfile_paths_leaving_the_target_are_refused_before_any_load() {
    let d = tempfile::tempdir().unwrap();
    let victim = d.path().join("t/victim");
    std::fs::create_dir_all(&victim).unwrap();
    std::fs::write(victim.join("precious"), b"keep me").unwrap();
    let absolute = d.path().join("ABS-ESCAPED");
    let cases = [
        (
            r#"NTCreateX "\clients\client1\..\..\..\ESCAPED" 0x0 0x2 1 NT_STATUS_OK"#.to_string(),
            "climbs out of the user's workspace",
        ),
        (
            format!(r#"NTCreateX "{}" 0x0 0x2 1 NT_STATUS_OK"#, absolute.display()),
            "is an absolute local path",
        ),
        (
            r#"Deltree "\clients\client1\..\..\..\victim" NT_STATUS_OK"#.to_string(),
            "climbs out of the user's workspace",
        ),
    ];
    for (line, why) in cases {
        let lf = d.path().join("load.txt");
        std::fs::write(
            &lf,
            format!("Mkdir \"\\clients\" NT_STATUS_OK\n{line}\nClose 1 NT_STATUS_OK\n"),
        )
        .unwrap();
        let s = suite(d.path(), "loadfile = \"load.txt\"\nloops = 1");
        let out = d.path().join("out");
        for args in [
            vec!["check", s.to_str().unwrap()],
            vec!["run", s.to_str().unwrap(), "--out", out.to_str().unwrap()],
        ] {
            let o = run_benchlab(&args);
            let all = text(&o);
            assert_eq!(o.status.code(), Some(2), "{args:?} {line}: {all}");
            let place = format!("{}:2: ", lf.display());
            assert!(all.contains(&place) && all.contains(why), "{args:?} {line}: {all}");
            // The path is quoted.
            let quoted = line.split('"').nth(1).unwrap();
            assert!(all.contains(quoted), "{all}");
            assert!(!all.contains("panicked"), "{all}");
        }
        assert!(!out.exists(), "{line}: a results directory was made");
        assert!(
            !d.path().join("t/root/clients").exists(),
            "{line}: load reached the target"
        );
        assert!(!d.path().join("t/ESCAPED").exists() && !absolute.exists());
        assert_eq!(std::fs::read(victim.join("precious")).unwrap(), b"keep me");
    }
}

/// A symlink inside the workspace to a directory outside the target:
/// every operation through it fails, counted as an error named
/// ACCESS_DENIED; Deltree of the link removes the link itself; the outside
/// directory is untouched.
#[test]
fn symlinks_planted_in_the_target_are_not_followed_out() {
    let d = tempfile::tempdir().unwrap();
    let outside = d.path().join("outside");
    std::fs::create_dir_all(outside.join("sub")).unwrap();
    std::fs::write(outside.join("keep"), b"x").unwrap();
    std::fs::write(outside.join("sub/f"), b"y").unwrap();
    let ws = d.path().join("t/root/clients/client1");
    std::fs::create_dir_all(&ws).unwrap();
    std::os::unix::fs::symlink(&outside, ws.join("out")).unwrap();
    std::fs::write(
        d.path().join("load.txt"),
        r#"NTCreateX "\clients\client1\out\new.txt" 0x0 0x2 1 NT_STATUS_OK
WriteX 1 0 100 100 NT_STATUS_OK
Close 1 NT_STATUS_OK
Mkdir "\clients\client1\out\d" NT_STATUS_OK
Unlink "\clients\client1\out\keep" 0x6 NT_STATUS_OK
Rename "\clients\client1\out\keep" "\clients\client1\k" NT_STATUS_OK
QUERY_PATH_INFORMATION "\clients\client1\out\keep" 1004 NT_STATUS_OK
Deltree "\clients\client1\out\sub" NT_STATUS_OK
Deltree "\clients\client1\out" NT_STATUS_OK
"#,
    )
    .unwrap();
    let s = suite(d.path(), "loadfile = \"load.txt\"\nloops = 1");
    let out = d.path().join("out");
    let o = run_benchlab(&["run", s.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    let r: Value = serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    let m = &r["mixes"][0];
    assert_eq!(m["requests"], 9, "{m}");
    // NTCreateX, then WriteX and Close of the handle it never got, Mkdir,
    // Unlink, Rename, QUERY_PATH_INFORMATION, the inner Deltree.
    assert_eq!(m["errors_total"], 8, "{}", m["files"]["errors_by_status"]);
    // By the status that came back, they add up to the errors.
    let by_got: u64 = m["errors"]
        .as_object()
        .unwrap()
        .values()
        .map(|n| n.as_u64().unwrap())
        .sum();
    assert_eq!(by_got, 8, "{m}");
    let by = m["files"]["errors_by_status"].to_string();
    for kind in [
        "NTCreateX",
        "Mkdir",
        "Unlink",
        "Rename",
        "QUERY_PATH_INFORMATION",
        "Deltree",
    ] {
        assert!(
            by.contains(&format!("{kind}: expected NT_STATUS_OK, got NT_STATUS_ACCESS_DENIED")),
            "{kind}: {by}"
        );
    }
    assert_eq!(m["files"]["bytes_written"], 0);
    // The link is gone, what it pointed to is as it was.
    assert!(std::fs::symlink_metadata(ws.join("out")).is_err());
    assert_eq!(std::fs::read(outside.join("keep")).unwrap(), b"x");
    assert_eq!(std::fs::read(outside.join("sub/f")).unwrap(), b"y");
    let mut names: Vec<String> = std::fs::read_dir(&outside)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["keep", "sub"]);
}

/// A loadfile or disk mix that is /dev/zero is refused at `check` with
/// exit 2, naming the limit, instead of growing without end.
#[test]
fn endless_loadfiles_and_disk_mixes_are_refused_at_their_limit() {
    let d = tempfile::tempdir().unwrap();
    for (workload, limit) in [
        (
            "loadfile = \"/dev/zero\"",
            "larger than 256 MiB, the most benchlab reads for a loadfile",
        ),
        (
            "disk_mix = \"/dev/zero\"",
            "larger than 16 MiB, the most benchlab reads for a disk mix",
        ),
    ] {
        let s = suite(d.path(), workload);
        let o = run_benchlab(&["check", s.to_str().unwrap()]);
        let all = text(&o);
        assert_eq!(o.status.code(), Some(2), "{all}");
        assert!(all.contains("/dev/zero") && all.contains(limit), "{all}");
    }
}

/// Every file under `dir`, report.xlsx's members inflated, as bytes.
fn every_file(dir: &Path, out: &mut Vec<(String, Vec<u8>)>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            every_file(&p, out);
            continue;
        }
        let bytes = std::fs::read(&p).unwrap();
        if p.extension().is_some_and(|x| x == "xlsx") {
            let mut z = zip::ZipArchive::new(std::io::Cursor::new(bytes.clone())).unwrap();
            for i in 0..z.len() {
                let mut f = z.by_index(i).unwrap();
                let mut inner = Vec::new();
                f.read_to_end(&mut inner).unwrap();
                out.push((format!("{}!{}", p.display(), f.name()), inner));
            }
        }
        out.push((p.display().to_string(), bytes));
    }
}

fn hits(haystack: &[u8], needle: &str) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle.as_bytes())
}

const SMALL_LOADFILE: &str = r#"Mkdir "\clients" NT_STATUS_OK
Mkdir "\clients\client1" NT_STATUS_OK
NTCreateX "\clients\client1\a.txt" 0x40 0x5 1 NT_STATUS_OK
WriteX 1 0 100 100 NT_STATUS_OK
Close 1 NT_STATUS_OK
"#;

/// A file suite run against smbd as `smb://USER:SECRETPW@…`, the target
/// in the suite and on the command line: the password is in no file of
/// the results directory (report.xlsx's XML inflated), not on stdout or
/// stderr, not in `check`'s lines nor in an error message; the stored
/// target and command show `USER:***@`. Then the same run with the
/// password from --smb-password-file and from BENCHLAB_SMB_PASSWORD, the
/// target naming only the user, authenticates (and without either, it
/// does not).
#[test]
fn smb_passwords_never_reach_results_reports_or_the_terminal() {
    // No guest and no anonymous session: only the user's right password
    // gets in, so a run that succeeds proves the password reached smbd.
    let Some(smbd) = benchlab_fileserver::smbd::start_smbd_with(" map to guest = Never\n restrict anonymous = 2\n")
    else {
        panic!("smbd is not installed (Debian package samba): this test needs it");
    };
    let me = benchlab_fileserver::smbd::user_name();
    smbd.add_user(&me, "SECRETPW").unwrap();
    // The share for the user only (smbd reads its changed configuration
    // at the next connection).
    let conf = std::fs::read_to_string(smbd.config()).unwrap();
    let conf = conf.replace(
        " guest ok = yes\n guest only = yes\n",
        &format!(" guest ok = no\n valid users = {me}\n"),
    );
    assert!(conf.contains("valid users"), "{conf}");
    std::fs::write(smbd.config(), conf).unwrap();
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("load.txt"), SMALL_LOADFILE).unwrap();
    let with_pw = format!("smb://{me}:SECRETPW@127.0.0.1:{}/bench", smbd.port);
    let redacted = format!("smb://{me}:***@127.0.0.1:{}/bench", smbd.port);
    let s = suite(d.path(), "loadfile = \"load.txt\"\nloops = 2");
    let body = std::fs::read_to_string(&s)
        .unwrap()
        .replace(&format!("file://{}", d.path().join("t/root").display()), &with_pw);
    std::fs::write(&s, body).unwrap();

    let out = d.path().join("out");
    let o = run_benchlab(&[
        "run",
        s.to_str().unwrap(),
        "--target",
        &with_pw,
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o).replace("SECRETPW", "<leaked>"));
    assert!(
        !hits(text(&o).as_bytes(), "SECRETPW"),
        "the terminal showed the password"
    );
    let r: Value = serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    assert_eq!(
        r["mixes"][0]["errors_total"], 0,
        "{}",
        r["mixes"][0]["files"]["errors_by_status"]
    );
    assert_eq!(r["mixes"][0]["files"]["bytes_written"], 200);
    assert_eq!(r["mixes"][0]["params"]["target"], redacted.as_str());
    assert_eq!(r["environment"]["target"], redacted.as_str());
    assert!(
        r["environment"]["command"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a == redacted.as_str()),
        "{}",
        r["environment"]["command"]
    );
    let mut files = Vec::new();
    every_file(&out, &mut files);
    let names: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
    assert!(
        names.iter().any(|n| n.ends_with("report.xlsx!xl/sharedStrings.xml")),
        "{names:?}"
    );
    assert!(names.iter().any(|n| n.ends_with("report.html")), "{names:?}");
    for (name, bytes) in &files {
        assert!(!hits(bytes, "SECRETPW"), "{name} holds the password");
    }
    // The xlsx's own strings show the redacted target.
    let strings = files.iter().find(|(n, _)| n.ends_with("sharedStrings.xml")).unwrap();
    assert!(hits(&strings.1, &format!("{me}:***@")), "the workbook lost the target");

    // `check` of the suite, and an error naming the target.
    let o = run_benchlab(&["check", s.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o).replace("SECRETPW", "<leaked>"));
    assert!(hits(text(&o).as_bytes(), &redacted) && !hits(text(&o).as_bytes(), "SECRETPW"));
    let unreachable = format!("smb://{me}:SECRETPW@127.0.0.1:{}/bench", common::free_port());
    let o = run_benchlab(&[
        "run",
        s.to_str().unwrap(),
        "--target",
        &unreachable,
        "--out",
        d.path().join("o2").to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    assert!(
        !hits(text(&o).as_bytes(), "SECRETPW"),
        "{}",
        text(&o).replace("SECRETPW", "<leaked>")
    );
    for bad in [
        format!("smb://{me}:SECRETPW@127.0.0.1:x/bench"),
        format!("smb://{me}:SECRETPW@"),
    ] {
        let o = run_benchlab(&[
            "run",
            s.to_str().unwrap(),
            "--target",
            &bad,
            "--out",
            d.path().join("o3").to_str().unwrap(),
        ]);
        assert_eq!(o.status.code(), Some(2), "{}", text(&o).replace("SECRETPW", "<leaked>"));
        assert!(
            !hits(text(&o).as_bytes(), "SECRETPW"),
            "{}",
            text(&o).replace("SECRETPW", "<leaked>")
        );
    }

    // The password from a file or the environment; the target names only
    // the user.
    let user_only = format!("smb://{me}@127.0.0.1:{}/bench", smbd.port);
    let pw_file = d.path().join("smb-password");
    std::fs::write(&pw_file, "SECRETPW\n").unwrap();
    let run_to = |target: &str, extra: &[&str], env: Option<&str>, out: &str| {
        let mut c = Command::new(common::benchlab_bin());
        c.args(["run", s.to_str().unwrap(), "--target", target, "--out"])
            .arg(d.path().join(out))
            .args(extra)
            .env_remove("BENCHLAB_SMB_PASSWORD");
        if let Some(v) = env {
            c.env("BENCHLAB_SMB_PASSWORD", v);
        }
        c.output().unwrap()
    };
    let run = |extra: &[&str], env: Option<&str>, out: &str| run_to(&user_only, extra, env, out);
    let o = run(&["--smb-password-file", pw_file.to_str().unwrap()], None, "from-file");
    assert!(o.status.success(), "{}", text(&o));
    let o = run(&[], Some("SECRETPW"), "from-env");
    assert!(o.status.success(), "{}", text(&o));
    for dir in ["from-file", "from-env"] {
        let r: Value =
            serde_json::from_str(&std::fs::read_to_string(d.path().join(dir).join("results.json")).unwrap()).unwrap();
        assert_eq!(r["mixes"][0]["files"]["bytes_written"], 200, "{dir}");
        assert_eq!(r["mixes"][0]["params"]["target"], user_only.as_str(), "{dir}");
        let mut files = Vec::new();
        every_file(&d.path().join(dir), &mut files);
        assert!(files.iter().all(|(_, b)| !hits(b, "SECRETPW")), "{dir}");
    }
    // A wrong password is not let in: the right one above was used.
    let o = run(&[], Some("WRONGPW"), "wrong-password");
    assert!(!o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("cannot reach the share"), "{}", text(&o));
    // The flag refused where it cannot apply.
    let o = run_to(
        &with_pw,
        &["--smb-password-file", pw_file.to_str().unwrap()],
        None,
        "both",
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o).replace("SECRETPW", "<leaked>"));
    assert!(text(&o).contains("--smb-password-file") && !hits(text(&o).as_bytes(), "SECRETPW"));
}

/// --smb-password-file with a target that cannot use it is refused by name.
#[test]
fn a_password_file_without_an_smb_user_is_refused_by_name() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("load.txt"), SMALL_LOADFILE).unwrap();
    std::fs::write(d.path().join("pw"), "x\n").unwrap();
    let s = suite(d.path(), "loadfile = \"load.txt\"\nloops = 1");
    let o = run_benchlab(&[
        "run",
        s.to_str().unwrap(),
        "--smb-password-file",
        d.path().join("pw").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("--smb-password-file: no target of this run is smb://USER@"),
        "{}",
        text(&o)
    );
    assert!(!d.path().join("t/root/clients").exists());
}
