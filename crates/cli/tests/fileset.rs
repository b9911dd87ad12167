//! `benchlab fileset` through the real binary: generate, verify, damage a
//! byte, verify again; and the refusals that keep a user's files safe.

use std::path::Path;
use std::process::{Command, Output};

fn benchlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_benchlab"))
        .args(args)
        .output()
        .expect("run benchlab")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn generate(kind: &[&str], out: &Path) {
    let mut args = vec!["fileset", "generate"];
    args.extend_from_slice(kind);
    let out_s = out.to_str().expect("utf-8 temp path");
    args.extend_from_slice(&["--out", out_s, "--seed", "1"]);
    let o = benchlab(&args);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("files/s"), "{}", text(&o));
}

fn verify(dir: &Path) -> Output {
    benchlab(&["fileset", "verify", dir.to_str().expect("utf-8 temp path")])
}

#[test]
fn generate_verify_corrupt_verify() {
    let tmp = tempfile::tempdir().expect("tempdir");
    for (kind, file, files) in [
        (&["ct-single"][..], "8k.html", 2),
        (&["specweb99", "--dirs", "2"][..], "dir00001/class1_4", 72),
    ] {
        let dir = tmp.path().join(kind[0]);
        generate(kind, &dir);
        let o = verify(&dir);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        assert!(text(&o).contains(&format!("all match: {files} files")), "{}", text(&o));

        // One byte changed, size kept: only the checksum can tell.
        let path = dir.join(file);
        let mut body = std::fs::read(&path).expect("read");
        let mid = body.len() / 2;
        body[mid] ^= 0x20;
        std::fs::write(&path, &body).expect("write");
        let o = verify(&dir);
        assert_eq!(o.status.code(), Some(1), "{}", text(&o));
        let t = text(&o);
        assert!(t.contains(file) && t.contains("checksum differs"), "{t}");
        assert!(t.contains(&format!("1 of {files} files differ")), "{t}");
    }
}

#[test]
fn same_seed_same_manifest_from_the_binary() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    generate(&["custom", "--count", "5", "--size", "700"], &a);
    generate(&["custom", "--count", "5", "--size", "700"], &b);
    let read = |d: &Path| std::fs::read_to_string(d.join("manifest")).expect("manifest");
    assert_eq!(read(&a), read(&b));
    assert!(read(&a).contains("/d0000/p000004.html\t700\t"), "{}", read(&a));
}

#[test]
fn refusals_are_usage_errors() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = tmp.path().to_str().expect("utf-8 temp path");
    std::fs::write(tmp.path().join("precious.html"), b"mine").expect("write");
    for (args, says) in [
        (vec!["fileset", "generate", "ct-single", "--out", out], "not empty"),
        (
            vec!["fileset", "generate", "ct-10k", "--out", out, "--force", "--dirs", "3"],
            "--dirs applies to specweb99",
        ),
        (
            vec!["fileset", "generate", "custom", "--out", out, "--force"],
            "--count",
        ),
        (
            vec![
                "fileset",
                "generate",
                "specweb99",
                "--out",
                out,
                "--force",
                "--dirs",
                "0",
            ],
            "--dirs must be",
        ),
    ] {
        let o = benchlab(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        assert!(text(&o).contains(says), "{args:?}: {}", text(&o));
    }
    assert_eq!(std::fs::read(tmp.path().join("precious.html")).expect("read"), b"mine");

    // A broken manifest: exit 1, naming the file and the line.
    std::fs::write(
        tmp.path().join("manifest"),
        "# benchlab-manifest 1\n/a\t1\tnothex\tpage\t1\n",
    )
    .expect("write");
    let o = verify(tmp.path());
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("manifest:2: checksum `nothex`"), "{}", text(&o));
}
