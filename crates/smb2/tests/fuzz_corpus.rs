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

/// Every file of `fuzz/corpus/NAME`.
fn corpus(name: &str) -> Vec<Vec<u8>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(name);
    let mut out: Vec<Vec<u8>> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| std::fs::read(e.expect("corpus entry").path()).expect("corpus file"))
        .collect();
    out.sort();
    out
}

/// The SPNEGO corpus (`fuzz/corpus/spnego`): smbd 4.17's security buffers
/// of NEGOTIATE (its NegTokenInit) and SESSION_SETUP (NegTokenResp with
/// the CHALLENGE), each cut and each flipped byte read without a panic.
/// The two captured NegTokenResp seeds give their CHALLENGE (fuzzed
/// inputs need not).
#[test]
fn spnego_corpus_replays() {
    let seeds = corpus("spnego");
    assert!(seeds.len() >= 4, "{} seeds", seeds.len());
    let mut tokens = 0;
    for data in &seeds {
        // (A NegTokenInit's hints may read as a token too, and fuzzed
        // inputs may carry a broken one: only CHALLENGEs are counted.)
        if let Ok(t) = benchlab_smb2::auth::spnego_response_token(data) {
            if benchlab_smb2::auth::Challenge::decode(&t).is_ok() {
                tokens += 1;
            }
        }
        for cut in 0..data.len() {
            let _ = benchlab_smb2::auth::spnego_response_token(&data[..cut]);
        }
        for i in 0..data.len() {
            let mut bad = data.clone();
            bad[i] ^= 0xff;
            if let Ok(t) = benchlab_smb2::auth::spnego_response_token(&bad) {
                let _ = benchlab_smb2::auth::Challenge::decode(&t);
            }
        }
    }
    assert!(tokens >= 2, "{tokens} NegTokenResp seeds gave a token");
}

/// The NTLMSSP CHALLENGE corpus (`fuzz/corpus/ntlmssp_challenge`):
/// smbd 4.17's two CHALLENGE_MESSAGEs decode, with the server's timestamp
/// in their AV pairs; each cut and each flipped byte of every input
/// decodes or is refused.
#[test]
fn ntlmssp_challenge_corpus_replays() {
    use benchlab_smb2::auth;
    let seeds = corpus("ntlmssp_challenge");
    assert!(seeds.len() >= 2, "{} seeds", seeds.len());
    let user = auth::Credentials::User {
        user: "u".into(),
        domain: String::new(),
        password: "p".into(),
    };
    let mut decoded = 0;
    for data in &seeds {
        // The captured seeds decode, with smbd's timestamp; what the
        // fuzzer adds need not.
        if let Ok(ch) = auth::Challenge::decode(data) {
            if matches!(auth::av_timestamp(&ch.target_info), Ok(Some(_))) {
                decoded += 1;
            }
        }
        for cut in 0..data.len() {
            let _ = auth::Challenge::decode(&data[..cut]);
        }
        for i in 0..data.len() {
            let mut bad = data.clone();
            bad[i] ^= 0xff;
            if let Ok(ch) = auth::Challenge::decode(&bad) {
                let _ = auth::av_timestamp(&ch.target_info);
                let _ = auth::authenticate_message(&user, &ch, [1; 8], 0);
            }
        }
    }
    assert!(decoded >= 2, "{decoded} of {} decode", seeds.len());
}
