//! The workspace's layers, as the crates' manifests declare them: what a
//! crate may pull in, so that a file set does not need the load engine and
//! a report does not need sockets and TLS. Reads the `Cargo.toml` files
//! only (no `cargo tree`, which would resolve the whole graph).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn crates_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Per package name: its normal `[dependencies]` (dev and build ones are
/// not what a user of the crate gets).
fn manifests() -> BTreeMap<String, Vec<String>> {
    let mut all = BTreeMap::new();
    for entry in std::fs::read_dir(crates_dir()).expect("crates/") {
        let path = entry.expect("an entry").path().join("Cargo.toml");
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let mut name = None;
        let mut deps = Vec::new();
        let mut section = String::new();
        for line in text.lines().map(str::trim) {
            if line.starts_with('[') {
                section = line.to_string();
                continue;
            }
            let Some((key, value)) = line.split_once('=') else {
                continue;
            };
            let key = key.trim().trim_end_matches(".workspace").to_string();
            match section.as_str() {
                "[package]" if key == "name" => name = Some(value.trim().trim_matches('"').to_string()),
                "[dependencies]" => deps.push(key),
                _ => {}
            }
        }
        all.insert(
            name.unwrap_or_else(|| panic!("{}: no package name", path.display())),
            deps,
        );
    }
    all
}

/// Every crate `name` depends on, directly or through the workspace's own
/// crates (external crates are listed, not followed).
fn closure(name: &str) -> BTreeSet<String> {
    let all = manifests();
    let mut seen = BTreeSet::new();
    let mut todo = vec![name.to_string()];
    while let Some(n) = todo.pop() {
        for d in all.get(&n).into_iter().flatten() {
            if seen.insert(d.clone()) && all.contains_key(d) {
                todo.push(d.clone());
            }
        }
    }
    seen
}

#[test]
fn file_sets_and_the_model_do_not_need_the_engine() {
    for name in ["benchlab-fileset", "benchlab-model"] {
        let deps = closure(name);
        assert!(deps.contains("benchlab-rng"), "{name}: {deps:?}");
        for banned in ["benchlab-engine", "mio", "rustls"] {
            assert!(!deps.contains(banned), "{name} pulls in {banned}: {deps:?}");
        }
    }
}

#[test]
fn the_report_reads_results_without_sockets_or_tls() {
    let deps = closure("benchlab-report");
    assert!(deps.contains("benchlab-results"), "{deps:?}");
    for banned in ["benchlab-controller", "benchlab-engine", "mio", "rustls"] {
        assert!(!deps.contains(banned), "benchlab-report pulls in {banned}: {deps:?}");
    }
    let results = closure("benchlab-results");
    assert!(
        results.iter().all(|d| d != "benchlab-engine" && d != "benchlab-model"),
        "the results types stand alone: {results:?}"
    );
}
