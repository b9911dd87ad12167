//! Message signing ([MS-SMB2] 3.1.4.1): HMAC-SHA256 for 2.0.2 and 2.1,
//! AES-128-CMAC for 3.0 and 3.0.2, and at 3.1.1 whichever of
//! HMAC-SHA256, AES-128-CMAC and AES-128-GMAC the NEGOTIATE's signing
//! capabilities chose; 3.x keys come from the SP800-108 counter-mode KDF
//! ([MS-SMB2] 3.1.4.2), 3.1.1's with the pre-authentication integrity
//! hash as its context.
//!
//! A [`Signer`] carries its algorithm, chosen once from the NEGOTIATE
//! response ([`Algorithm::negotiated`]), so a session signs and checks
//! with what was negotiated. The free functions [`signature`], [`sign`]
//! and [`verify`] are the dialect's default algorithm (HMAC-SHA256 at
//! 2.x, AES-CMAC at 3.x), for a session that offered only that.

use crate::msg::{AES_CMAC, AES_GMAC, DIALECT_202, DIALECT_210, DIALECT_300, DIALECT_311, HMAC_SHA256};
use crate::{cmd, DecodeError, FLAG_RESPONSE, FLAG_SIGNED};
use aes::cipher::BlockCipherEncrypt;
use aes::Aes128;
use cmac::Cmac;
use ghash::universal_hash::UniversalHash;
use ghash::GHash;
use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256, Sha512};

/// SP800-108 in counter mode with HMAC-SHA256, one block, L = 128.
pub fn kdf(key: &[u8; 16], label: &[u8], context: &[u8]) -> [u8; 16] {
    let mut k = [0u8; 16];
    kdf_into(key, label, context, &mut k);
    k
}

/// SP800-108 in counter mode with HMAC-SHA256, one block, L = the bits of
/// `out` (128, or 256 for the AES-256 ciphers' keys, [MS-SMB2] 3.2.5.3.1),
/// keyed with the whole of `key` (the full session key). `out` holds at
/// most 32 bytes: one HMAC-SHA256 block.
pub fn kdf_into(key: &[u8], label: &[u8], context: &[u8], out: &mut [u8]) {
    // HMAC takes a key of any length.
    let mut m = <Hmac<Sha256> as KeyInit>::new_from_slice(key).unwrap_or_else(|_| unreachable!());
    m.update(&1u32.to_be_bytes());
    m.update(label);
    m.update(&[0]);
    m.update(context);
    m.update(&(out.len() as u32 * 8).to_be_bytes());
    let block = m.finalize().into_bytes();
    let n = out.len().min(block.len());
    out[..n].copy_from_slice(&block[..n]);
}

/// A signing algorithm, as the signing-capabilities context names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Algorithm {
    HmacSha256,
    AesCmac,
    AesGmac,
}

impl Algorithm {
    /// Every algorithm, in the order benchlab offers them (the strongest
    /// and cheapest first, as Windows does).
    pub const ALL: [Algorithm; 3] = [Algorithm::AesGmac, Algorithm::AesCmac, Algorithm::HmacSha256];

    /// Its id in the signing-capabilities context.
    pub fn id(self) -> u16 {
        match self {
            Algorithm::HmacSha256 => HMAC_SHA256,
            Algorithm::AesCmac => AES_CMAC,
            Algorithm::AesGmac => AES_GMAC,
        }
    }

    pub fn from_id(id: u16) -> Option<Algorithm> {
        Algorithm::ALL.into_iter().find(|a| a.id() == id)
    }

    /// Its name in options and results: `hmac-sha256`, `aes-cmac`, `aes-gmac`.
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::HmacSha256 => "hmac-sha256",
            Algorithm::AesCmac => "aes-cmac",
            Algorithm::AesGmac => "aes-gmac",
        }
    }

    pub fn parse(name: &str) -> Option<Algorithm> {
        Algorithm::ALL.into_iter().find(|a| a.name() == name)
    }

    /// Whether a session at `dialect` can sign with it: HMAC-SHA256 is
    /// 2.x's only algorithm, AES-CMAC 3.0's and 3.0.2's, and 3.1.1 has
    /// all three (HMAC-SHA256 and AES-GMAC only through its signing
    /// capabilities).
    pub fn usable_at(self, dialect: u16) -> bool {
        match dialect {
            DIALECT_202 | DIALECT_210 => self == Algorithm::HmacSha256,
            DIALECT_311 => true,
            _ => self == Algorithm::AesCmac,
        }
    }

    /// What a session at `dialect` signs with, `chosen` the signing
    /// capabilities' algorithm in the NEGOTIATE response: the dialect's
    /// own below 3.1.1; at 3.1.1 the one chosen, AES-CMAC where the
    /// server sent no signing context ([MS-SMB2] 3.2.5.2). An id the
    /// client does not know is the server's error.
    pub fn negotiated(dialect: u16, chosen: Option<u16>) -> Result<Algorithm, DecodeError> {
        match (dialect, chosen) {
            (DIALECT_202 | DIALECT_210, _) => Ok(Algorithm::HmacSha256),
            (DIALECT_311, Some(id)) => Algorithm::from_id(id)
                .ok_or_else(|| DecodeError(format!("NEGOTIATE response: signing algorithm {id} was not offered"))),
            _ => Ok(Algorithm::AesCmac),
        }
    }
}

/// The signing key of a session: the session key itself for 2.x, the
/// KDF's for 3.x (`preauth`: 3.1.1's hash after the session setup).
pub fn signing_key(dialect: u16, session_key: &[u8; 16], preauth: &[u8; 64]) -> [u8; 16] {
    match dialect {
        DIALECT_202 | DIALECT_210 => *session_key,
        DIALECT_311 => kdf(session_key, b"SMBSigningKey\0", preauth),
        _ => kdf(session_key, b"SMB2AESCMAC\0", b"SmbSign\0"),
    }
}

/// The 16-byte signature of `msg` (its signature field taken as zero).
pub fn signature(dialect: u16, key: &[u8; 16], msg: &[u8]) -> [u8; 16] {
    let zero = [0u8; 16];
    let (head, tail) = if msg.len() >= 64 {
        (&msg[..48], &msg[64..])
    } else {
        (msg, &[][..])
    };
    let mut out = [0u8; 16];
    match dialect {
        DIALECT_202 | DIALECT_210 => {
            let mut m = <Hmac<Sha256> as KeyInit>::new_from_slice(key).unwrap_or_else(|_| unreachable!());
            m.update(head);
            m.update(&zero);
            m.update(tail);
            out.copy_from_slice(&m.finalize().into_bytes()[..16]);
        }
        _ => {
            let mut m = <Cmac<Aes128> as KeyInit>::new_from_slice(key).unwrap_or_else(|_| unreachable!());
            m.update(head);
            m.update(&zero);
            m.update(tail);
            out.copy_from_slice(&m.finalize().into_bytes());
        }
    }
    out
}

/// AES-128-GMAC of `msg` ([MS-SMB2] 3.1.4.1): GCM with nothing to
/// encrypt and the whole message, its signature field as zero, as the
/// authenticated data; the 12-byte nonce is the message id, then a 32-bit
/// word whose bit 0 says the message is a server's (SMB2_FLAGS_SERVER_TO_REDIR)
/// and bit 1 that it is a CANCEL.
fn gmac(key: &[u8; 16], msg: &[u8]) -> [u8; 16] {
    let aes = Aes128::new(&(*key).into());
    let mut h = aes::Block::default();
    aes.encrypt_block(&mut h);
    let mut g = GHash::new(&h);
    // The signature field sits at 48..64: the blocks split evenly
    // around it, so the zeros go in as a block of their own.
    let (head, tail) = if msg.len() >= 64 {
        (&msg[..48], &msg[64..])
    } else {
        (msg, &[][..])
    };
    g.update_padded(head);
    if msg.len() >= 64 {
        g.update_padded(&[0u8; 16]);
    }
    g.update_padded(tail);
    let mut lengths = aes::Block::default();
    lengths[..8].copy_from_slice(&(msg.len() as u64 * 8).to_be_bytes());
    g.update(&[lengths]);
    let s = g.finalize();
    let mut j0 = aes::Block::default();
    if msg.len() >= 64 {
        j0[..8].copy_from_slice(&msg[24..32]);
        let flags = u32::from_le_bytes([msg[16], msg[17], msg[18], msg[19]]);
        let command = u16::from_le_bytes([msg[12], msg[13]]);
        j0[8] = u8::from(flags & FLAG_RESPONSE != 0) | (u8::from(command == cmd::CANCEL) << 1);
    }
    j0[15] = 1;
    aes.encrypt_block(&mut j0);
    let mut out = [0u8; 16];
    for (o, (a, b)) in out.iter_mut().zip(j0.iter().zip(s.iter())) {
        *o = a ^ b;
    }
    out
}

/// A session's signing: its algorithm and key. Its Debug shows no key.
#[derive(Clone, PartialEq, Eq)]
pub struct Signer {
    algorithm: Algorithm,
    key: [u8; 16],
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Signer({}, ***)", self.algorithm.name())
    }
}

impl Signer {
    /// The signer of a session at `dialect` that negotiated `algorithm`,
    /// its key from the session key (`preauth`: 3.1.1's hash after the
    /// session setup).
    pub fn new(dialect: u16, algorithm: Algorithm, session_key: &[u8; 16], preauth: &[u8; 64]) -> Signer {
        Signer {
            algorithm,
            key: signing_key(dialect, session_key, preauth),
        }
    }

    pub fn algorithm(&self) -> Algorithm {
        self.algorithm
    }

    /// The 16-byte signature of `msg` (its signature field taken as zero).
    pub fn signature(&self, msg: &[u8]) -> [u8; 16] {
        match self.algorithm {
            Algorithm::HmacSha256 => signature(DIALECT_202, &self.key, msg),
            Algorithm::AesCmac => signature(DIALECT_300, &self.key, msg),
            Algorithm::AesGmac => gmac(&self.key, msg),
        }
    }

    /// Signs `msg` in place: sets SMB2_FLAGS_SIGNED and writes the signature.
    pub fn sign(&self, msg: &mut [u8]) {
        if msg.len() < 64 {
            return;
        }
        let flags = u32::from_le_bytes([msg[16], msg[17], msg[18], msg[19]]) | FLAG_SIGNED;
        msg[16..20].copy_from_slice(&flags.to_le_bytes());
        let s = self.signature(msg);
        msg[48..64].copy_from_slice(&s);
    }

    /// Whether `msg`'s signature is right.
    pub fn verify(&self, msg: &[u8]) -> bool {
        msg.len() >= 64 && self.signature(msg) == msg[48..64]
    }
}

/// Signs `msg` in place: sets SMB2_FLAGS_SIGNED and writes the signature.
pub fn sign(dialect: u16, key: &[u8; 16], msg: &mut [u8]) {
    if msg.len() < 64 {
        return;
    }
    let flags = u32::from_le_bytes([msg[16], msg[17], msg[18], msg[19]]) | FLAG_SIGNED;
    msg[16..20].copy_from_slice(&flags.to_le_bytes());
    let s = signature(dialect, key, msg);
    msg[48..64].copy_from_slice(&s);
}

/// Whether `msg`'s signature is right.
pub fn verify(dialect: u16, key: &[u8; 16], msg: &[u8]) -> bool {
    msg.len() >= 64 && signature(dialect, key, msg) == msg[48..64]
}

/// 3.1.1's pre-authentication integrity hash: SHA-512 chained over the
/// NEGOTIATE and SESSION_SETUP messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Preauth(pub [u8; 64]);

impl Default for Preauth {
    fn default() -> Preauth {
        Preauth([0; 64])
    }
}

impl Preauth {
    /// H = SHA-512(H ‖ msg).
    pub fn update(&mut self, msg: &[u8]) {
        let mut h = Sha512::new();
        h.update(self.0);
        h.update(msg);
        self.0.copy_from_slice(&h.finalize());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    /// RFC 4493's AES-CMAC example 2 (16 bytes), through the same `cmac`
    /// the 3.x signature uses.
    #[test]
    fn aes_cmac_matches_rfc_4493() {
        let key: [u8; 16] = hex("2b7e151628aed2a6abf7158809cf4f3c").try_into().unwrap();
        let mut m = <Cmac<Aes128> as KeyInit>::new_from_slice(&key).unwrap();
        m.update(&hex("6bc1bee22e409f96e93d7e117393172a"));
        assert_eq!(
            m.finalize().into_bytes().to_vec(),
            hex("070a16b46b4d4144f79bdd9dd04a287c")
        );
    }

    #[test]
    fn signatures_cover_the_whole_message_but_their_own_field() {
        let mut msg = vec![0u8; 100];
        msg[..4].copy_from_slice(b"\xfeSMB");
        msg[80] = 1;
        for d in [DIALECT_202, crate::msg::DIALECT_300, DIALECT_311] {
            let key = [3u8; 16];
            let mut m = msg.clone();
            sign(d, &key, &mut m);
            assert!(verify(d, &key, &m), "{d:#x}");
            assert_eq!(m[16] & 8, 8);
            let mut bad = m.clone();
            bad[99] ^= 1;
            assert!(!verify(d, &key, &bad));
            assert!(!verify(d, &[4; 16], &m));
        }
    }

    #[test]
    fn the_kdf_depends_on_label_and_context() {
        let k = [1u8; 16];
        let a = signing_key(crate::msg::DIALECT_300, &k, &[0; 64]);
        assert_eq!(a, kdf(&k, b"SMB2AESCMAC\0", b"SmbSign\0"));
        assert_ne!(a, signing_key(DIALECT_311, &k, &[0; 64]));
        assert_ne!(
            signing_key(DIALECT_311, &k, &[1; 64]),
            signing_key(DIALECT_311, &k, &[0; 64])
        );
        assert_eq!(signing_key(DIALECT_210, &k, &[0; 64]), k);
        let mut p = Preauth::default();
        p.update(b"x");
        assert_ne!(p, Preauth::default());
    }

    /// AES-GMAC as GCM computes it (aes-gcm: nothing encrypted, the whole
    /// message as associated data, signature field zeroed), so the
    /// GHASH-by-parts above is checked against a whole implementation.
    #[test]
    fn gmac_is_gcm_with_the_message_as_associated_data() {
        use aes_gcm::aead::AeadInOut;
        let key = [9u8; 16];
        for len in [64, 65, 79, 80, 100, 4096 + 7] {
            let mut msg: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
            msg[48..64].fill(0);
            for response in [false, true] {
                msg[16] = u8::from(response);
                let mut nonce = [0u8; 12];
                nonce[..8].copy_from_slice(&msg[24..32]);
                nonce[8] = u8::from(response);
                let c = <aes_gcm::Aes128Gcm as aes_gcm::aead::KeyInit>::new_from_slice(&key).unwrap();
                let n = aes_gcm::Nonce::<aes_gcm::aead::consts::U12>::try_from(&nonce[..]).unwrap();
                let tag = c.encrypt_inout_detached(&n, &msg, (&mut [][..]).into()).unwrap();
                assert_eq!(gmac(&key, &msg)[..], tag[..], "{len} {response}");
            }
        }
    }

    #[test]
    fn each_algorithm_signs_and_checks_its_own() {
        let mut msg = vec![0u8; 200];
        msg[..4].copy_from_slice(b"\xfeSMB");
        msg[24] = 5;
        for a in Algorithm::ALL {
            let s = Signer::new(DIALECT_311, a, &[3; 16], &[1; 64]);
            let mut m = msg.clone();
            s.sign(&mut m);
            assert!(s.verify(&m), "{a:?}");
            let mut bad = m.clone();
            bad[150] ^= 1;
            assert!(!s.verify(&bad), "{a:?}");
            for other in Algorithm::ALL.into_iter().filter(|o| *o != a) {
                assert!(
                    !Signer::new(DIALECT_311, other, &[3; 16], &[1; 64]).verify(&m),
                    "{a:?} {other:?}"
                );
            }
            assert_eq!(format!("{s:?}"), format!("Signer({}, ***)", a.name()));
        }
        // GMAC's nonce: the message id and the server's bit.
        let g = Signer::new(DIALECT_311, Algorithm::AesGmac, &[3; 16], &[1; 64]);
        let mut other_id = msg.clone();
        other_id[24] = 6;
        let mut answer = msg.clone();
        answer[16] = 1;
        assert_ne!(g.signature(&msg), g.signature(&other_id));
        assert_ne!(g.signature(&msg), g.signature(&answer));
        // CMAC through the Signer is the 3.x default of the free functions.
        let c = Signer::new(crate::msg::DIALECT_300, Algorithm::AesCmac, &[3; 16], &[1; 64]);
        let key = signing_key(crate::msg::DIALECT_300, &[3; 16], &[1; 64]);
        assert_eq!(c.signature(&msg), signature(crate::msg::DIALECT_300, &key, &msg));
    }

    #[test]
    fn the_negotiated_algorithm_follows_dialect_and_context() {
        use Algorithm::*;
        assert_eq!(Algorithm::negotiated(DIALECT_202, Some(2)).unwrap(), HmacSha256);
        assert_eq!(Algorithm::negotiated(DIALECT_300, Some(2)).unwrap(), AesCmac);
        assert_eq!(Algorithm::negotiated(DIALECT_311, None).unwrap(), AesCmac);
        assert_eq!(Algorithm::negotiated(DIALECT_311, Some(0)).unwrap(), HmacSha256);
        assert_eq!(Algorithm::negotiated(DIALECT_311, Some(2)).unwrap(), AesGmac);
        assert!(Algorithm::negotiated(DIALECT_311, Some(7)).is_err());
        assert!(AesGmac.usable_at(DIALECT_311) && !AesGmac.usable_at(DIALECT_300));
        assert!(!AesCmac.usable_at(DIALECT_210) && HmacSha256.usable_at(DIALECT_210));
        for a in Algorithm::ALL {
            assert_eq!(Algorithm::parse(a.name()), Some(a));
            assert_eq!(Algorithm::from_id(a.id()), Some(a));
        }
    }

    /// L is part of the KDF's input: a 256-bit key's first half is not the
    /// 128-bit key ([MS-SMB2] 3.1.4.2).
    #[test]
    fn the_kdf_length_is_part_of_its_input() {
        let mut long = [0u8; 32];
        kdf_into(&[1; 16], b"SMBC2SCipherKey\0", &[2; 64], &mut long);
        let short = kdf(&[1; 16], b"SMBC2SCipherKey\0", &[2; 64]);
        assert_ne!(long[..16], short[..]);
        assert!(long[16..].iter().any(|b| *b != 0));
    }
}
