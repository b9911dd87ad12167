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
        if kind[0] == "specweb99" {
            // Byte counts with thousands separators, as everywhere.
            assert!(text(&o).contains("10,238,976 bytes"), "{}", text(&o));
        }

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

/// `fileset generate mindcraft-1998`, read back from its manifest: seed
/// 002's three facts, exactly. 6,400 unique URLs; the 704 most requested
/// carry 94 % of the requests — at least 94.304 %, since each of the 5,696
/// left out carries < 0.001 % (together < 5.696 %), and below 94.5 % so it
/// rounds to 94; the request-weighted mean response (body bytes, what a
/// log's byte field counts) just over 14,700 bytes, over the log and over
/// the 704 a workload keeps.
#[test]
fn mindcraft_1998_manifest_has_the_seed_facts() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("mc");
    generate(&["mindcraft-1998"], &dir);
    let m = benchlab_fileset::Manifest::read(&dir.join("manifest")).expect("manifest");
    assert_eq!(m.entries.len(), 6400, "unique URLs");
    let mut paths: Vec<&str> = m.entries.iter().map(|e| e.path.as_str()).collect();
    paths.sort();
    paths.dedup();
    assert_eq!(paths.len(), 6400, "paths are unique");
    let total = m.total_weight();
    assert!((total - 1.0).abs() < 1e-6, "weights sum to {total}");
    let mut by_weight: Vec<&benchlab_fileset::Entry> = m.entries.iter().collect();
    by_weight.sort_by(|a, b| b.weight.total_cmp(&a.weight));
    let (top, rest) = by_weight.split_at(704);
    let top_share: f64 = top.iter().map(|e| e.weight).sum::<f64>() / total;
    assert!(
        (0.94304..0.945).contains(&top_share),
        "the top 704 carry {:.4} %",
        top_share * 100.0
    );
    let most_left_out = rest.iter().map(|e| e.weight / total).fold(0.0, f64::max);
    assert!(
        most_left_out < 0.00001,
        "a URL left out carries {:.6} %",
        most_left_out * 100.0
    );
    // The top 704 are a clear cut: the least requested of them is requested
    // more than every URL left out.
    assert!(top[703].weight > rest[0].weight * 10.0);
    let mean = |es: &[&benchlab_fileset::Entry]| -> f64 {
        es.iter().map(|e| e.weight * e.size as f64).sum::<f64>() / es.iter().map(|e| e.weight).sum::<f64>()
    };
    let all = mean(&by_weight);
    let head = mean(top);
    assert!((14_700.0..14_800.0).contains(&all), "mean response {all:.1} bytes");
    assert!(
        (14_757.0..14_758.0).contains(&all),
        "mean response {all:.1} bytes (pinned)"
    );
    assert!(
        (14_754.0..14_755.0).contains(&head),
        "top-704 mean {head:.1} bytes (pinned)"
    );
    // Byte-reproducible: the same bytes again.
    let again = tmp.path().join("again");
    generate(&["mindcraft-1998"], &again);
    let read = |d: &Path| std::fs::read_to_string(d.join("manifest")).expect("manifest");
    assert_eq!(read(&dir), read(&again));
    assert!(read(&dir).contains("# kind=mindcraft-1998 seed=1 files=6400 bytes=116455984\n"));
}
