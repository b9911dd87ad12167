//! Replays the SMB2 fuzz corpus (`fuzz/corpus/smb2_response`) on stable
//! Rust. Its seeds are smbd 4.17's answers to a loadfile pass at 2.0.2 and
//! 3.1.1, captured on loopback: each must decode, and every cut and every
//! flipped byte of it must decode or be refused, never panic.

use std::path::Path;

#[test]
fn smb2_corpus_replays() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/smb2_response");
    let mut n = 0;
    let mut decoded = 0;
    let keys = benchlab_smb2::seal::Keys::derive(0x0311, benchlab_smb2::seal::AES_128_GCM, &[1; 16], &[0; 64]);
    for entry in std::fs::read_dir(&dir).expect("fuzz corpus directory") {
        let data = std::fs::read(entry.expect("corpus entry").path()).expect("corpus file");
        if benchlab_smb2::decode_any(&data).is_ok() {
            decoded += 1;
        }
        for cut in 0..data.len() {
            let _ = benchlab_smb2::decode_any(&data[..cut]);
        }
        for i in 0..data.len() {
            let mut bad = data.clone();
            bad[i] ^= 0xff;
            let _ = benchlab_smb2::decode_any(&bad);
            let _ = benchlab_smb2::auth::spnego_response_token(&bad);
            let _ = benchlab_smb2::seal::decrypt(&keys, &bad);
        }
        n += 1;
    }
    assert!(n >= 60, "the corpus holds the captured seeds, found {n}");
    // Fuzzing adds inputs that do not decode; the seeds all do.
    assert!(decoded >= 60, "{decoded} of {n} decode");
}
