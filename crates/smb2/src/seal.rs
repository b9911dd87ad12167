//! SMB 3.x encryption ([MS-SMB2] 3.1.4.3): a message sealed in the
//! TRANSFORM header with AES-128-CCM (3.0, 3.0.2, 3.1.1) or AES-128-GCM
//! (3.1.1), the keys from the SP800-108 KDF (3.1.1's from the
//! pre-authentication hash).

use crate::msg::DIALECT_311;
use crate::sign::kdf;
use crate::{err, put16, put32, put64, DecodeError, Reader};
use aes_gcm::aead::{AeadInOut, KeyInit};

/// Cipher ids of the encryption-capabilities context (NEGOTIATE's).
pub use crate::msg::{AES_128_CCM, AES_128_GCM};

/// The TRANSFORM header's length.
pub const TRANSFORM_LEN: usize = 52;

type Aes128Ccm = ccm::Ccm<aes::Aes128, ccm::consts::U16, ccm::consts::U11>;

/// A session's two keys and its cipher.
#[derive(Clone, PartialEq, Eq)]
pub struct Keys {
    pub cipher: u16,
    /// Client to server.
    pub encrypt: [u8; 16],
    /// Server to client.
    pub decrypt: [u8; 16],
}

impl std::fmt::Debug for Keys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Keys(cipher {}, ***)", self.cipher)
    }
}

impl Keys {
    pub fn derive(dialect: u16, cipher: u16, session_key: &[u8; 16], preauth: &[u8; 64]) -> Keys {
        let (encrypt, decrypt) = if dialect == DIALECT_311 {
            (
                kdf(session_key, b"SMBC2SCipherKey\0", preauth),
                kdf(session_key, b"SMBS2CCipherKey\0", preauth),
            )
        } else {
            (
                kdf(session_key, b"SMB2AESCCM\0", b"ServerIn \0"),
                kdf(session_key, b"SMB2AESCCM\0", b"ServerOut\0"),
            )
        };
        Keys {
            cipher,
            encrypt,
            decrypt,
        }
    }
}

fn nonce_len(cipher: u16) -> usize {
    if cipher == AES_128_GCM {
        12
    } else {
        11
    }
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
    let aad = &head[20..];
    let tag: [u8; 16] = match keys.cipher {
        AES_128_GCM => {
            let c = aes_gcm::Aes128Gcm::new_from_slice(&keys.encrypt).map_err(|_| DecodeError("GCM key".into()))?;
            let nonce = aes_gcm::Nonce::<aes_gcm::aead::consts::U12>::try_from(&nonce16[..12])
                .map_err(|_| DecodeError("GCM nonce".into()))?;
            c.encrypt_inout_detached(&nonce, aad, body.into())
                .map_err(|_| DecodeError("GCM encryption failed".into()))?
                .into()
        }
        AES_128_CCM => {
            let c = Aes128Ccm::new_from_slice(&keys.encrypt).map_err(|_| DecodeError("CCM key".into()))?;
            let nonce = ccm::Nonce::<ccm::consts::U11>::try_from(&nonce16[..11])
                .map_err(|_| DecodeError("CCM nonce".into()))?;
            c.encrypt_inout_detached(&nonce, aad, body.into())
                .map_err(|_| DecodeError("CCM encryption failed".into()))?
                .into()
        }
        c => return err(format!("cipher {c} is not supported")),
    };
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
    let ok = match keys.cipher {
        AES_128_GCM => {
            let c = aes_gcm::Aes128Gcm::new_from_slice(&keys.decrypt).map_err(|_| DecodeError("GCM key".into()))?;
            let nonce = aes_gcm::Nonce::<aes_gcm::aead::consts::U12>::try_from(&nonce16[..12])
                .map_err(|_| DecodeError("GCM nonce".into()))?;
            c.decrypt_inout_detached(&nonce, aad, body.as_mut_slice().into(), &tag.into())
                .is_ok()
        }
        AES_128_CCM => {
            let c = Aes128Ccm::new_from_slice(&keys.decrypt).map_err(|_| DecodeError("CCM key".into()))?;
            let nonce = ccm::Nonce::<ccm::consts::U11>::try_from(&nonce16[..11])
                .map_err(|_| DecodeError("CCM nonce".into()))?;
            c.decrypt_inout_detached(&nonce, aad, body.as_mut_slice().into(), &tag.into())
                .is_ok()
        }
        c => return err(format!("cipher {c} is not supported")),
    };
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
        for cipher in [AES_128_CCM, AES_128_GCM] {
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
}
