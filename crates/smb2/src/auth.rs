//! Authentication: NTLMSSP ([MS-NLMP]) with the NTLMv2 response, guest
//! and anonymous, inside a minimal SPNEGO (RFC 4178) of our own. The DER
//! reader is bounded: lengths are checked against the bytes there, and at
//! most [`MAX_DER_DEPTH`] levels are entered.

use crate::{err, from_utf16, put16, put32, slice, utf16, DecodeError, Reader};
use hmac::{Hmac, KeyInit, Mac};
use md5::Md5;

type HmacMd5 = Hmac<Md5>;

/// NTLMSSP negotiate flags benchlab sets or reads.
pub const NEGOTIATE_UNICODE: u32 = 0x0000_0001;
pub const REQUEST_TARGET: u32 = 0x0000_0004;
pub const NEGOTIATE_SIGN: u32 = 0x0000_0010;
pub const NEGOTIATE_NTLM: u32 = 0x0000_0200;
pub const NEGOTIATE_ANONYMOUS: u32 = 0x0000_0800;
pub const NEGOTIATE_ALWAYS_SIGN: u32 = 0x0000_8000;
pub const NEGOTIATE_EXTENDED_SESSIONSECURITY: u32 = 0x0008_0000;
pub const NEGOTIATE_TARGET_INFO: u32 = 0x0080_0000;
pub const NEGOTIATE_128: u32 = 0x2000_0000;
pub const NEGOTIATE_56: u32 = 0x8000_0000;

/// The flags of our NEGOTIATE_MESSAGE: no key exchange (the session key
/// is the NTLMv2 session base key), no version, no MIC.
pub const CLIENT_FLAGS: u32 = NEGOTIATE_UNICODE
    | REQUEST_TARGET
    | NEGOTIATE_SIGN
    | NEGOTIATE_NTLM
    | NEGOTIATE_ALWAYS_SIGN
    | NEGOTIATE_EXTENDED_SESSIONSECURITY
    | NEGOTIATE_TARGET_INFO
    | NEGOTIATE_128
    | NEGOTIATE_56;

const SIGNATURE: &[u8; 8] = b"NTLMSSP\0";

/// NTLMSSP NEGOTIATE_MESSAGE (type 1), no domain nor workstation.
pub fn negotiate_message(flags: u32) -> Vec<u8> {
    let mut v = Vec::with_capacity(32);
    v.extend_from_slice(SIGNATURE);
    put32(&mut v, 1);
    put32(&mut v, flags);
    v.extend_from_slice(&[0; 16]);
    v
}

/// What the server's CHALLENGE_MESSAGE (type 2) says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Challenge {
    pub flags: u32,
    pub server_challenge: [u8; 8],
    pub target_name: String,
    /// The AV pairs, as sent (they go back inside the NTLMv2 response).
    pub target_info: Vec<u8>,
}

/// A CHALLENGE's target info is at most this long (Samba's is ~200 bytes).
const MAX_TARGET_INFO: usize = 4096;

impl Challenge {
    pub fn decode(m: &[u8]) -> Result<Challenge, DecodeError> {
        let mut r = Reader::new(m);
        if r.bytes(8)? != SIGNATURE {
            return err("NTLMSSP: no NTLMSSP signature");
        }
        if r.u32()? != 2 {
            return err("NTLMSSP: not a CHALLENGE_MESSAGE");
        }
        let (tn_len, _, tn_off) = (r.u16()? as usize, r.u16()?, r.u32()? as usize);
        let flags = r.u32()?;
        let mut server_challenge = [0u8; 8];
        server_challenge.copy_from_slice(r.bytes(8)?);
        r.skip(8)?;
        let (ti_len, _, ti_off) = (r.u16()? as usize, r.u16()?, r.u32()? as usize);
        if ti_len > MAX_TARGET_INFO {
            return err(format!("NTLMSSP: target info of {ti_len} bytes"));
        }
        let target_name = from_utf16(slice(m, tn_off, tn_len, "NTLMSSP target name")?);
        let target_info = slice(m, ti_off, ti_len, "NTLMSSP target info")?.to_vec();
        // The AV pairs must be well formed: walked once, to MsvAvEOL.
        av_timestamp(&target_info)?;
        Ok(Challenge {
            flags,
            server_challenge,
            target_name,
            target_info,
        })
    }
}

/// MsvAvTimestamp of the target info, if there; Err when the pairs are
/// not well formed.
pub fn av_timestamp(info: &[u8]) -> Result<Option<u64>, DecodeError> {
    let mut r = Reader::new(info);
    if info.is_empty() {
        return Ok(None);
    }
    let mut ts = None;
    loop {
        let id = r.u16()?;
        let len = r.u16()? as usize;
        let v = r.bytes(len)?;
        match id {
            0 => return Ok(ts),
            7 if len == 8 => {
                let mut a = [0u8; 8];
                a.copy_from_slice(v);
                ts = Some(u64::from_le_bytes(a));
            }
            _ => {}
        }
    }
}

/// MD4 of the UTF-16LE password: the NT hash.
pub fn nt_hash(password: &str) -> [u8; 16] {
    use md4::{Digest, Md4};
    let mut h = Md4::new();
    h.update(utf16(password));
    h.finalize().into()
}

fn hmac_md5(key: &[u8], parts: &[&[u8]]) -> [u8; 16] {
    // HMAC takes a key of any length: new_from_slice cannot fail.
    let mut m = <HmacMd5 as KeyInit>::new_from_slice(key).unwrap_or_else(|_| unreachable!());
    for p in parts {
        m.update(p);
    }
    m.finalize().into_bytes().into()
}

/// NTOWFv2: HMAC-MD5 of the NT hash over UTF-16LE(UPPER(user) + domain).
pub fn ntowf_v2(password: &str, user: &str, domain: &str) -> [u8; 16] {
    let who = utf16(&(user.to_uppercase() + domain));
    hmac_md5(&nt_hash(password), &[&who])
}

/// The NTLMv2 computation's results.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct V2 {
    pub nt_response: Vec<u8>,
    pub lm_response: Vec<u8>,
    pub session_base_key: [u8; 16],
}

/// NTLMv2 ([MS-NLMP] 3.3.2) from the response key, the server's challenge,
/// ours, the time (FILETIME) and the server's target info.
pub fn ntlm_v2(
    response_key: &[u8; 16],
    server_challenge: &[u8; 8],
    client_challenge: &[u8; 8],
    time: u64,
    target_info: &[u8],
) -> V2 {
    let mut temp = vec![1u8, 1, 0, 0, 0, 0, 0, 0];
    temp.extend_from_slice(&time.to_le_bytes());
    temp.extend_from_slice(client_challenge);
    temp.extend_from_slice(&[0; 4]);
    temp.extend_from_slice(target_info);
    temp.extend_from_slice(&[0; 4]);
    let proof = hmac_md5(response_key, &[server_challenge, &temp]);
    let mut nt_response = proof.to_vec();
    nt_response.extend_from_slice(&temp);
    let mut lm_response = hmac_md5(response_key, &[server_challenge, client_challenge]).to_vec();
    lm_response.extend_from_slice(client_challenge);
    V2 {
        nt_response,
        lm_response,
        session_base_key: hmac_md5(response_key, &[&proof]),
    }
}

/// Who signs in.
#[derive(Clone, PartialEq, Eq)]
pub enum Credentials {
    /// A user and password (the password never leaves this value but as
    /// the NTLMv2 response).
    User {
        user: String,
        domain: String,
        password: String,
    },
    /// Anonymous: empty user, empty responses (Samba maps it to its guest
    /// account with `map to guest = Bad User`).
    Anonymous,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Credentials::User { user, domain, .. } => write!(f, "User({domain}\\{user}, password ***)"),
            Credentials::Anonymous => f.write_str("Anonymous"),
        }
    }
}

/// An AUTHENTICATE_MESSAGE (type 3) answering `ch`, and the session key
/// (None for anonymous). `client_challenge` and `time` are the caller's
/// (random and now; fixed in tests).
pub fn authenticate_message(
    creds: &Credentials,
    ch: &Challenge,
    client_challenge: [u8; 8],
    time: u64,
) -> (Vec<u8>, Option<[u8; 16]>) {
    let (user, domain, lm, nt, key, flags) = match creds {
        Credentials::User { user, domain, password } => {
            let k = ntowf_v2(password, user, domain);
            // The server's timestamp when it sent one ([MS-NLMP] 3.1.5.1.2),
            // and then an LMv2 response of zeros.
            let ts = av_timestamp(&ch.target_info).ok().flatten();
            let v2 = ntlm_v2(
                &k,
                &ch.server_challenge,
                &client_challenge,
                ts.unwrap_or(time),
                &ch.target_info,
            );
            let lm = if ts.is_some() { vec![0; 24] } else { v2.lm_response };
            (
                user.as_str(),
                domain.as_str(),
                lm,
                v2.nt_response,
                Some(v2.session_base_key),
                CLIENT_FLAGS & ch.flags | NEGOTIATE_UNICODE,
            )
        }
        Credentials::Anonymous => (
            "",
            "",
            Vec::new(),
            Vec::new(),
            None,
            (CLIENT_FLAGS & ch.flags) | NEGOTIATE_ANONYMOUS | NEGOTIATE_UNICODE,
        ),
    };
    let fields: [Vec<u8>; 5] = [lm, nt, utf16(domain), utf16(user), Vec::new()];
    const FIXED: usize = 64;
    let mut v = Vec::with_capacity(FIXED + fields.iter().map(Vec::len).sum::<usize>());
    v.extend_from_slice(SIGNATURE);
    put32(&mut v, 3);
    let mut off = FIXED;
    // LM, NT, domain, user, workstation, then the (empty) session key.
    for f in fields.iter().chain(std::iter::once(&Vec::new())) {
        put16(&mut v, f.len() as u16);
        put16(&mut v, f.len() as u16);
        put32(&mut v, off as u32);
        off += f.len();
    }
    put32(&mut v, flags);
    for f in &fields {
        v.extend_from_slice(f);
    }
    (v, key)
}

/// The most nested DER levels the SPNEGO reader enters.
pub const MAX_DER_DEPTH: usize = 8;

/// The SPNEGO mechanism OID, 1.3.6.1.5.5.2.
const SPNEGO_OID: &[u8] = &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x02];
/// NTLMSSP's OID, 1.3.6.1.4.1.311.2.2.10.
const NTLMSSP_OID: &[u8] = &[0x2b, 0x06, 0x01, 0x04, 0x01, 0x82, 0x37, 0x02, 0x02, 0x0a];

fn der(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut v = vec![tag];
    let n = content.len();
    if n < 0x80 {
        v.push(n as u8);
    } else if n < 0x100 {
        v.extend_from_slice(&[0x81, n as u8]);
    } else {
        v.extend_from_slice(&[0x82, (n >> 8) as u8, n as u8]);
    }
    v.extend_from_slice(content);
    v
}

/// The first SESSION_SETUP token: a GSS-API InitialContextToken holding
/// NegTokenInit that offers NTLMSSP, with `ntlm` (the NEGOTIATE_MESSAGE).
pub fn spnego_init(ntlm: &[u8]) -> Vec<u8> {
    let mech_types = der(0xa0, &der(0x30, &der(0x06, NTLMSSP_OID)));
    let token = der(0xa2, &der(0x04, ntlm));
    let init = der(0xa0, &der(0x30, &[mech_types, token].concat()));
    der(0x60, &[der(0x06, SPNEGO_OID), init].concat())
}

/// A later token: NegTokenResp carrying `ntlm` (the AUTHENTICATE_MESSAGE).
pub fn spnego_resp(ntlm: &[u8]) -> Vec<u8> {
    der(0xa1, &der(0x30, &der(0xa2, &der(0x04, ntlm))))
}

/// One DER element: tag and content.
fn tlv<'a>(r: &mut Reader<'a>) -> Result<(u8, &'a [u8]), DecodeError> {
    let tag = r.u8()?;
    let first = r.u8()?;
    let len = match first {
        n if n < 0x80 => n as usize,
        0x81 => r.u8()? as usize,
        0x82 => r.u16().map(|n| n.swap_bytes() as usize)?,
        0x83 => {
            let b = r.bytes(3)?;
            (b[0] as usize) << 16 | (b[1] as usize) << 8 | b[2] as usize
        }
        n => return err(format!("SPNEGO: DER length form {n:#04x}")),
    };
    Ok((tag, r.bytes(len)?))
}

/// The mechanism token of a server's NegTokenResp ([2] responseToken),
/// found at most [`MAX_DER_DEPTH`] levels down; empty when it has none
/// (a final accept-completed answer). A bare NTLMSSP message (a server
/// that answers without SPNEGO) is taken as it is.
pub fn spnego_response_token(b: &[u8]) -> Result<Vec<u8>, DecodeError> {
    if b.is_empty() {
        return Ok(Vec::new());
    }
    if b.starts_with(SIGNATURE) {
        return Ok(b.to_vec());
    }
    fn find(b: &[u8], depth: usize) -> Result<Option<Vec<u8>>, DecodeError> {
        if depth > MAX_DER_DEPTH {
            return err("SPNEGO: nested too deep");
        }
        let mut r = Reader::new(b);
        while r.pos() < b.len() {
            let (tag, content) = tlv(&mut r)?;
            match tag {
                // responseToken [2] / mechToken [2]: an OCTET STRING.
                0xa2 => {
                    let mut c = Reader::new(content);
                    let (t, s) = tlv(&mut c)?;
                    if t != 0x04 {
                        return err("SPNEGO: the token is not an OCTET STRING");
                    }
                    return Ok(Some(s.to_vec()));
                }
                0x60 | 0xa0 | 0xa1 | 0x30 => {
                    if let Some(t) = find(content, depth + 1)? {
                        return Ok(Some(t));
                    }
                }
                _ => {}
            }
        }
        Ok(None)
    }
    Ok(find(b, 0)?.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    /// [MS-NLMP] 4.2.4: NTLMv2 with User / Domain / Password, server
    /// challenge 0123456789abcdef, client challenge aa…, time 0, and the
    /// challenge's AV pairs (NetBIOS domain "Domain", computer "Server").
    #[test]
    fn ms_nlmp_ntlmv2_vectors() {
        assert_eq!(nt_hash("Password").to_vec(), hex("a4f49c406510bdcab6824ee7c30fd852"));
        let k = ntowf_v2("Password", "User", "Domain");
        assert_eq!(k.to_vec(), hex("0c868a403bfd7a93a3001ef22ef02e3f"));
        let info = hex("02000c0044006f006d00610069006e0001000c005300650072007600650072000000 0000");
        let v2 = ntlm_v2(
            &k,
            &[0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef],
            &[0xaa; 8],
            0,
            &info,
        );
        assert_eq!(v2.nt_response[..16].to_vec(), hex("68cd0ab851e51c96aabc927bebef6a1c"));
        assert_eq!(v2.lm_response, hex("86c35097ac9cec102554764a57cccc19aaaaaaaaaaaaaaaa"));
        assert_eq!(v2.session_base_key.to_vec(), hex("8de40ccadbc14a82f15cb0ad0de95ca3"));
        assert_eq!(av_timestamp(&info), Ok(None));
    }

    #[test]
    fn spnego_wraps_and_unwraps_ntlmssp() {
        let n = negotiate_message(CLIENT_FLAGS);
        assert_eq!(spnego_response_token(&spnego_init(&n)).unwrap(), n);
        let big = vec![7u8; 300];
        assert_eq!(spnego_response_token(&spnego_resp(&big)).unwrap(), big);
        // A server's accept-incomplete answer: negState, supportedMech, token.
        let answer = der(
            0xa1,
            &der(
                0x30,
                &[
                    der(0xa0, &der(0x0a, &[1])),
                    der(0xa1, &der(0x06, NTLMSSP_OID)),
                    der(0xa2, &der(0x04, b"tok")),
                ]
                .concat(),
            ),
        );
        assert_eq!(spnego_response_token(&answer).unwrap(), b"tok");
        assert_eq!(
            spnego_response_token(&der(0xa1, &der(0x30, &der(0xa0, &der(0x0a, &[0]))))).unwrap(),
            b""
        );
        let mut deep = b"x".to_vec();
        for _ in 0..20 {
            deep = der(0x30, &deep);
        }
        assert!(spnego_response_token(&deep).is_err());
        for cut in 0..answer.len() {
            let _ = spnego_response_token(&answer[..cut]);
        }
    }

    #[test]
    fn an_authenticate_message_answers_a_challenge() {
        let mut c = SIGNATURE.to_vec();
        put32(&mut c, 2);
        let name = utf16("SRV");
        let info = hex("01000600530052005600 07000800 0102030405060708 00000000");
        put16(&mut c, name.len() as u16);
        put16(&mut c, name.len() as u16);
        put32(&mut c, 48);
        put32(&mut c, CLIENT_FLAGS);
        c.extend_from_slice(&[9; 8]);
        c.extend_from_slice(&[0; 8]);
        put16(&mut c, info.len() as u16);
        put16(&mut c, info.len() as u16);
        put32(&mut c, 48 + name.len() as u32);
        c.extend_from_slice(&name);
        c.extend_from_slice(&info);
        let ch = Challenge::decode(&c).unwrap();
        assert_eq!(ch.target_name, "SRV");
        assert_eq!(ch.server_challenge, [9; 8]);
        assert_eq!(av_timestamp(&ch.target_info), Ok(Some(0x0807060504030201)));
        let creds = Credentials::User {
            user: "bench".into(),
            domain: "".into(),
            password: "SECRETPW".into(),
        };
        let (m, key) = authenticate_message(&creds, &ch, [1; 8], 5);
        assert!(key.is_some());
        assert!(!m.windows(8).any(|w| w == utf16("SECRETPW")[..8].to_vec().as_slice()));
        // The LMv2 response is zeros when the server sent a timestamp.
        let lm_len = u16::from_le_bytes([m[12], m[13]]) as usize;
        let lm_off = u32::from_le_bytes([m[16], m[17], m[18], m[19]]) as usize;
        assert_eq!(&m[lm_off..lm_off + lm_len], &[0; 24]);
        assert!(!format!("{creds:?}").contains("SECRETPW"));
        let (a, key) = authenticate_message(&Credentials::Anonymous, &ch, [1; 8], 5);
        assert_eq!(key, None);
        assert_eq!(&a[12..20], &[0, 0, 0, 0, 64, 0, 0, 0]);
        for cut in 0..c.len() {
            let _ = Challenge::decode(&c[..cut]);
        }
    }
}
