//! A bounded mutation loop over the SMB2 fuzz corpora, on stable Rust:
//! the next best to a libFuzzer run (bench/fuzz.sh) where no nightly
//! toolchain is, and a check CI makes every time. From a fixed seed,
//! each corpus's inputs are mutated (bytes flipped, set, inserted, cut,
//! spliced) and fed to their parser — the SMB2 response decoder, the
//! SPNEGO reader, the NTLMSSP CHALLENGE parser — asserting no panic and
//! that what a decoder returns (its only allocations: copies of parts of
//! the input) is never longer than the input. (The crate forbids unsafe
//! code, so no counting allocator measures the peak here.)
//!
//! It is not coverage-guided: it finds what random mutations near real
//! answers find, no more.

use std::path::Path;

/// Mutated inputs per corpus.
const ROUNDS: usize = 200_000;

/// xorshift64*: a fixed sequence, so a failure is found again.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn corpus(name: &str) -> Vec<Vec<u8>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(name);
    let mut out: Vec<Vec<u8>> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| std::fs::read(e.expect("corpus entry").path()).expect("corpus file"))
        .collect();
    out.sort();
    assert!(!out.is_empty(), "{} is empty", dir.display());
    out
}

/// One mutation of `seeds[..]`: up to 4 edits of one seed, sometimes
/// spliced with another.
fn mutate(r: &mut Rng, seeds: &[Vec<u8>]) -> Vec<u8> {
    let mut v = seeds[r.below(seeds.len())].clone();
    for _ in 0..1 + r.below(4) {
        let at = r.below(v.len() + 1);
        match r.below(6) {
            0 if at < v.len() => v[at] ^= 1 << r.below(8),
            1 if at < v.len() => v[at] = [0, 0xff, 0x7f, 0x80, 1][r.below(5)],
            2 => v.insert(at, r.next() as u8),
            3 => v.truncate(at),
            4 if at + 4 <= v.len() => {
                let x = [0u32, u32::MAX, 0x8000_0000, 0xffff, 64][r.below(5)];
                v[at..at + 4].copy_from_slice(&x.to_le_bytes());
            }
            _ => {
                let other = &seeds[r.below(seeds.len())];
                let from = r.below(other.len() + 1);
                v.truncate(at);
                v.extend_from_slice(&other[from..]);
            }
        }
    }
    v
}

/// Feeds `ROUNDS` mutations of corpus `name` to `parse`, which returns
/// the most bytes one of its decoders kept; never more than the input.
fn fuzz(name: &str, seed: u64, parse: impl Fn(&[u8]) -> usize) -> usize {
    let seeds = corpus(name);
    let mut r = Rng(seed);
    let mut decoded = 0;
    for _ in 0..ROUNDS {
        let input = mutate(&mut r, &seeds);
        let kept = parse(&input);
        assert!(
            kept <= input.len(),
            "{name}: {kept} bytes kept decoding {} bytes: {input:02x?}",
            input.len()
        );
        decoded += usize::from(kept > 0);
    }
    decoded
}

#[test]
fn mutated_corpora_never_panic_nor_keep_more_than_their_input() {
    use benchlab_smb2::{auth, msg, HEADER_LEN};
    let smb2 = fuzz("smb2_response", 0x5eed_0001, |d| {
        let _ = benchlab_smb2::decode_any(d);
        // The decoders that copy: a negotiate's and a session setup's
        // security buffer, a read's data.
        let body = d.get(HEADER_LEN..).unwrap_or(&[]);
        let _ = msg::CreateResponse::decode(body);
        // Each may point anywhere in the message, overlapping the
        // others: each is bounded by it.
        let n = msg::NegotiateResponse::decode(d).map_or(0, |n| n.security_buffer.len());
        let s = msg::SessionSetupResponse::decode(d).map_or(0, |s| s.security_buffer.len());
        n.max(s).max(msg::decode_read(d).map_or(0, <[u8]>::len))
    });
    let spnego = fuzz("spnego", 0x5eed_0002, |d| match auth::spnego_response_token(d) {
        Ok(t) => {
            let _ = auth::Challenge::decode(&t);
            t.len()
        }
        Err(_) => 0,
    });
    let ntlm = fuzz("ntlmssp_challenge", 0x5eed_0003, |d| match auth::Challenge::decode(d) {
        Ok(ch) => {
            let _ = auth::av_timestamp(&ch.target_info);
            // Name and info may overlap: each is bounded (the name is
            // UTF-16, half as many chars as bytes at most, each ≤ 3 in UTF-8).
            ch.target_info.len().max(ch.target_name.chars().count() * 2)
        }
        Err(_) => 0,
    });
    eprintln!(
        "{ROUNDS} mutations each; inputs that decoded to something kept: smb2 {smb2}, spnego {spnego}, ntlmssp {ntlm}"
    );
}
