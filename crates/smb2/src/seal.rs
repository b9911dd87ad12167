//! SMB 3.x encryption ([MS-SMB2] 3.1.4.3): a message sealed in the
//! TRANSFORM header with AES-128-CCM (3.0, 3.0.2, 3.1.1) or, at 3.1.1,
//! AES-128-GCM, AES-256-CCM or AES-256-GCM (the encryption capabilities'
//! choice), the keys from the SP800-108 KDF: 3.1.1's with the
//! pre-authentication hash as context, 32 bytes long (L = 256, the full
//! session key as the KDF's key) for the 256-bit ciphers ([MS-SMB2]
//! 3.2.5.3.1).

use crate::msg::DIALECT_311;
use crate::sign::kdf_into;
use crate::{err, put16, put32, put64, DecodeError, Reader};
use aes_gcm::aead::{AeadInOut, KeyInit};

/// Cipher ids of the encryption-capabilities context (NEGOTIATE's).
pub use crate::msg::{cipher_name, AES_128_CCM, AES_128_GCM, AES_256_CCM, AES_256_GCM, ALL_CIPHERS};

/// The TRANSFORM header's length.
pub const TRANSFORM_LEN: usize = 52;

type Aes128Ccm = ccm::Ccm<aes::Aes128, ccm::consts::U16, ccm::consts::U11>;
type Aes256Ccm = ccm::Ccm<aes::Aes256, ccm::consts::U16, ccm::consts::U11>;

/// A session's two keys and its cipher. A 128-bit cipher's keys are the
/// first 16 bytes of each (the rest zero); its Debug shows no key.
#[derive(Clone, PartialEq, Eq)]
pub struct Keys {
    pub cipher: u16,
    /// Client to server.
    pub encrypt: [u8; 32],
    /// Server to client.
    pub decrypt: [u8; 32],
}

impl std::fmt::Debug for Keys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Keys({}, ***)", cipher_name(self.cipher))
    }
}

/// The bytes of `cipher`'s key: 32 for AES-256, 16 otherwise.
pub fn key_len(cipher: u16) -> usize {
    if matches!(cipher, AES_256_CCM | AES_256_GCM) {
        32
    } else {
        16
    }
}

impl Keys {
    /// The keys of a session at `dialect` sealing with `cipher`, from its
    /// (full) session key and, at 3.1.1, the pre-authentication hash after
    /// the session setup.
    pub fn derive(dialect: u16, cipher: u16, session_key: &[u8], preauth: &[u8; 64]) -> Keys {
        let n = key_len(cipher);
        let (mut encrypt, mut decrypt) = ([0u8; 32], [0u8; 32]);
        if dialect == DIALECT_311 {
            kdf_into(session_key, b"SMBC2SCipherKey\0", preauth, &mut encrypt[..n]);
            kdf_into(session_key, b"SMBS2CCipherKey\0", preauth, &mut decrypt[..n]);
        } else {
            kdf_into(session_key, b"SMB2AESCCM\0", b"ServerIn \0", &mut encrypt[..n]);
            kdf_into(session_key, b"SMB2AESCCM\0", b"ServerOut\0", &mut decrypt[..n]);
        }
        Keys {
            cipher,
            encrypt,
            decrypt,
        }
    }
}

fn nonce_len(cipher: u16) -> usize {
    if matches!(cipher, AES_128_GCM | AES_256_GCM) {
        12
    } else {
        11
    }
}

/// Seals `body` in place under `key` with `cipher`, `aad` the TRANSFORM
/// header after its signature; the tag.
fn seal(cipher: u16, key: &[u8; 32], nonce16: &[u8; 16], aad: &[u8], body: &mut [u8]) -> Result<[u8; 16], DecodeError> {
    let failed = |what: &str| DecodeError(format!("{} {what}", cipher_name(cipher)));
    macro_rules! run {
        ($t:ty, $key:expr, $nonce:ty, $n:expr) => {{
            let c = <$t>::new_from_slice($key).map_err(|_| failed("key"))?;
            let nonce = <$nonce>::try_from(&nonce16[..$n]).map_err(|_| failed("nonce"))?;
            c.encrypt_inout_detached(&nonce, aad, body.into())
                .map_err(|_| failed("encryption failed"))?
                .into()
        }};
    }
    type N12 = aes_gcm::Nonce<aes_gcm::aead::consts::U12>;
    type N11 = ccm::Nonce<ccm::consts::U11>;
    Ok(match cipher {
        AES_128_GCM => run!(aes_gcm::Aes128Gcm, &key[..16], N12, 12),
        AES_256_GCM => run!(aes_gcm::Aes256Gcm, &key[..], N12, 12),
        AES_128_CCM => run!(Aes128Ccm, &key[..16], N11, 11),
        AES_256_CCM => run!(Aes256Ccm, &key[..], N11, 11),
        c => return err(format!("cipher {c} is not supported")),
    })
}

/// Opens `body` in place; whether its tag matched.
fn open(
    cipher: u16,
    key: &[u8; 32],
    nonce16: &[u8],
    aad: &[u8],
    body: &mut [u8],
    tag: &[u8; 16],
) -> Result<bool, DecodeError> {
    let failed = |what: &str| DecodeError(format!("{} {what}", cipher_name(cipher)));
    macro_rules! run {
        ($t:ty, $key:expr, $nonce:ty, $n:expr) => {{
            let c = <$t>::new_from_slice($key).map_err(|_| failed("key"))?;
            let nonce = <$nonce>::try_from(&nonce16[..$n]).map_err(|_| failed("nonce"))?;
            c.decrypt_inout_detached(&nonce, aad, body.into(), &(*tag).into())
                .is_ok()
        }};
    }
    type N12 = aes_gcm::Nonce<aes_gcm::aead::consts::U12>;
    type N11 = ccm::Nonce<ccm::consts::U11>;
    Ok(match cipher {
        AES_128_GCM => run!(aes_gcm::Aes128Gcm, &key[..16], N12, 12),
        AES_256_GCM => run!(aes_gcm::Aes256Gcm, &key[..], N12, 12),
        AES_128_CCM => run!(Aes128Ccm, &key[..16], N11, 11),
        AES_256_CCM => run!(Aes256Ccm, &key[..], N11, 11),
        c => return err(format!("cipher {c} is not supported")),
    })
}

/// `msg` sealed for `session_id`; `nonce` must never repeat under a key
/// (the caller's counter; its first 11 or 12 bytes are used).
pub fn encrypt(keys: &Keys, session_id: u64, nonce: [u8; 16], msg: &[u8]) -> Result<Vec<u8>, DecodeError> {
    let n = nonce_len(keys.cipher);
    let mut nonce16 = [0u8; 16];
    nonce16[..n].copy_from_slice(&nonce[..n]);
    let mut v = Vec::with_capacity(TRANSFORM_LEN + msg.len());
    v.extend_from_slice(b"\xfdSMB");
    v.extend_from_slice(&[0; 16]);
    v.extend_from_slice(&nonce16);
    put32(&mut v, msg.len() as u32);
    put16(&mut v, 0);
    // 3.0's EncryptionAlgorithm (AES-128-CCM) and 3.1.1's Flags
    // (encrypted) are both 1.
    put16(&mut v, 1);
    put64(&mut v, session_id);
    v.extend_from_slice(msg);
    let (head, body) = v.split_at_mut(TRANSFORM_LEN);
    let tag = seal(keys.cipher, &keys.encrypt, &nonce16, &head[20..], body)?;
    head[4..20].copy_from_slice(&tag);
    Ok(v)
}

/// The SMB2 message inside a TRANSFORM-headed one, its tag checked.
pub fn decrypt(keys: &Keys, sealed: &[u8]) -> Result<Vec<u8>, DecodeError> {
    let mut r = Reader::new(sealed);
    if r.bytes(4)? != b"\xfdSMB" {
        return err("not a TRANSFORM header");
    }
    let mut tag = [0u8; 16];
    tag.copy_from_slice(r.bytes(16)?);
    let nonce16 = r.bytes(16)?;
    let size = r.u32()? as usize;
    r.skip(4)?;
    r.u64()?;
    let aad = &sealed[20..TRANSFORM_LEN];
    let mut body = sealed[TRANSFORM_LEN..].to_vec();
    if body.len() != size {
        return err(format!("a sealed message of {} bytes says {size}", body.len()));
    }
    let mut tag16 = [0u8; 16];
    tag16.copy_from_slice(&tag);
    let ok = open(keys.cipher, &keys.decrypt, nonce16, aad, &mut body, &tag16)?;
    if !ok {
        return err("a sealed message whose tag does not match");
    }
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_messages_open_with_the_peers_key_only() {
        for cipher in ALL_CIPHERS {
            let k = Keys::derive(DIALECT_311, cipher, &[7; 16], &[1; 64]);
            // The server's view: its decrypt key is our encrypt key.
            let server = Keys {
                cipher,
                encrypt: k.decrypt,
                decrypt: k.encrypt,
            };
            let msg = b"\xfeSMB the message".to_vec();
            let sealed = encrypt(&k, 42, [3; 16], &msg).unwrap();
            assert_eq!(sealed.len(), TRANSFORM_LEN + msg.len());
            assert_ne!(&sealed[TRANSFORM_LEN..], &msg[..]);
            assert_eq!(decrypt(&server, &sealed).unwrap(), msg);
            assert!(decrypt(&k, &sealed).is_err(), "{cipher}");
            let mut bad = sealed.clone();
            bad[60] ^= 1;
            assert!(decrypt(&server, &bad).is_err());
            for cut in 0..sealed.len() {
                let _ = decrypt(&server, &sealed[..cut]);
            }
        }
        assert!(!format!("{:?}", Keys::derive(0x300, AES_128_CCM, &[7; 16], &[0; 64])).contains('7'));
    }

    #[test]
    fn aes_256_keys_are_32_bytes_and_128_keys_16() {
        for cipher in ALL_CIPHERS {
            let k = Keys::derive(DIALECT_311, cipher, &[7; 16], &[1; 64]);
            let n = key_len(cipher);
            assert!(k.encrypt[..n].iter().any(|b| *b != 0));
            assert!(k.encrypt[n..].iter().all(|b| *b == 0), "{cipher}");
            assert_ne!(k.encrypt, k.decrypt);
        }
        assert_eq!(key_len(AES_256_GCM), 32);
        assert_eq!(key_len(AES_128_GCM), 16);
        // One key, two ciphers: a message sealed with one is refused by the
        // other.
        let a = Keys::derive(DIALECT_311, AES_256_GCM, &[7; 16], &[1; 64]);
        let b = Keys {
            cipher: AES_128_GCM,
            encrypt: a.decrypt,
            decrypt: a.encrypt,
        };
        let sealed = encrypt(&a, 1, [0; 16], b"\xfeSMB x").unwrap();
        assert!(decrypt(&b, &sealed).is_err());
    }
}
