//! Golden values: the manifest text (which holds every file's XXH3) of two
//! small sets, pinned. A change of PRNG, seed derivation, size arithmetic,
//! content rules, weights or manifest formatting changes these, and breaks
//! the promise that a kind and a seed give the same tree everywhere — so
//! such a change must be deliberate, and bump the pinned values knowingly.

use benchlab_fileset::{generate, manifest, Kind, Spec, MANIFEST_FILE};
use xxhash_rust::xxh3::xxh3_64;

fn manifest_text(kind: Kind, seed: u64) -> String {
    manifest(&Spec::new(kind, seed).expect("valid spec")).to_text()
}

/// Bumped knowingly when the c't sets' class became `ct-single` (was
/// `page`) so the three c't sets can share one root; the files' bytes and
/// checksums did not change.
#[test]
fn ct_single_seed_1() {
    let text = manifest_text(Kind::CtSingle, 1);
    assert_eq!(
        format!("{:016x}", xxh3_64(text.as_bytes())),
        "2a02b6738ed9bd03",
        "{text}"
    );
    assert!(text.contains("/4k.html\t4096\t"), "{text}");
}

/// The mindcraft-1998 population (every URL's size, checksum and weight).
#[test]
fn mindcraft_1998_seed_1() {
    let text = manifest_text(Kind::Mindcraft1998, 1);
    assert_eq!(format!("{:016x}", xxh3_64(text.as_bytes())), "c716efb44025dc9f");
}

#[test]
fn specweb99_2_dirs_seed_1() {
    let text = manifest_text(Kind::Specweb99 { dirs: 2 }, 1);
    assert_eq!(
        format!("{:016x}", xxh3_64(text.as_bytes())),
        "e0d44161f1ae36d4",
        "{text}"
    );
}

/// The text on disk is the text computed in memory, and the content starts
/// as documented (a readable check beside the opaque hashes).
#[test]
fn ct_single_on_disk() {
    let dir = tempfile::tempdir().expect("tempdir");
    let spec = Spec::new(Kind::CtSingle, 1).expect("valid spec");
    generate(&spec, dir.path(), &mut |_, _| {}).expect("generate");
    let on_disk = std::fs::read_to_string(dir.path().join(MANIFEST_FILE)).expect("manifest");
    assert_eq!(on_disk, manifest_text(Kind::CtSingle, 1));
    let page = std::fs::read(dir.path().join("4k.html")).expect("4k.html");
    assert_eq!(page.len(), 4096);
    assert_eq!(
        String::from_utf8_lossy(&page[..80]),
        "<!DOCTYPE html>\n<html><head><title>such there where</title></head>\n<body>\n<p>wou"
    );
}
