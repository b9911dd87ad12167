//! Message signing ([MS-SMB2] 3.1.4.1): HMAC-SHA256 for 2.0.2 and 2.1,
//! AES-128-CMAC for 3.0, 3.0.2 and 3.1.1 with the key from the SP800-108
//! counter-mode KDF ([MS-SMB2] 3.1.4.2); 3.1.1's key takes the
//! pre-authentication integrity hash as its context.

use crate::msg::{DIALECT_202, DIALECT_210, DIALECT_311};
use crate::FLAG_SIGNED;
use aes::Aes128;
use cmac::Cmac;
use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256, Sha512};

/// SP800-108 in counter mode with HMAC-SHA256, one block, L = 128.
pub fn kdf(key: &[u8; 16], label: &[u8], context: &[u8]) -> [u8; 16] {
    let mut m = <Hmac<Sha256> as KeyInit>::new_from_slice(key).unwrap_or_else(|_| unreachable!());
    m.update(&1u32.to_be_bytes());
    m.update(label);
    m.update(&[0]);
    m.update(context);
    m.update(&128u32.to_be_bytes());
    let out = m.finalize().into_bytes();
    let mut k = [0u8; 16];
    k.copy_from_slice(&out[..16]);
    k
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
}
