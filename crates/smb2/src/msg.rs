//! SMB2 commands: each request encoded as its body (after the header),
//! each response decoded from the whole message (offsets in SMB2 count
//! from the header's start) or from its body.

use crate::{err, put16, put32, put64, slice, utf16, DecodeError, Reader, HEADER_LEN};

/// Dialects, as NEGOTIATE names them.
pub const DIALECT_202: u16 = 0x0202;
pub const DIALECT_210: u16 = 0x0210;
pub const DIALECT_300: u16 = 0x0300;
pub const DIALECT_302: u16 = 0x0302;
pub const DIALECT_311: u16 = 0x0311;
pub const ALL_DIALECTS: [u16; 5] = [DIALECT_202, DIALECT_210, DIALECT_300, DIALECT_302, DIALECT_311];

/// A dialect's name (`3.1.1`), or its number for one not known.
pub fn dialect_name(d: u16) -> String {
    match d {
        DIALECT_202 => "2.0.2".into(),
        DIALECT_210 => "2.1".into(),
        DIALECT_300 => "3.0".into(),
        DIALECT_302 => "3.0.2".into(),
        DIALECT_311 => "3.1.1".into(),
        d => format!("{d:#06x}"),
    }
}

/// A dialect by its name (`3.1.1`), as `?dialect=` pins it.
pub fn parse_dialect(name: &str) -> Option<u16> {
    ALL_DIALECTS.into_iter().find(|d| dialect_name(*d) == name)
}

/// Cipher ids of the encryption-capabilities context (`seal` uses them).
pub const AES_128_CCM: u16 = 1;
pub const AES_128_GCM: u16 = 2;
pub const AES_256_CCM: u16 = 3;
pub const AES_256_GCM: u16 = 4;
/// Every cipher, in the order benchlab offers them at 3.1.1 (Windows'
/// order: GCM before CCM, 128-bit keys before 256-bit ones).
pub const ALL_CIPHERS: [u16; 4] = [AES_128_GCM, AES_128_CCM, AES_256_GCM, AES_256_CCM];

/// A cipher's name in options and results (`aes-128-gcm`), or its number
/// for one not known.
pub fn cipher_name(c: u16) -> String {
    match c {
        AES_128_CCM => "aes-128-ccm".into(),
        AES_128_GCM => "aes-128-gcm".into(),
        AES_256_CCM => "aes-256-ccm".into(),
        AES_256_GCM => "aes-256-gcm".into(),
        c => format!("cipher {c:#06x}"),
    }
}

/// A cipher by its name (`aes-256-gcm`), as `?cipher=` pins it.
pub fn parse_cipher(name: &str) -> Option<u16> {
    ALL_CIPHERS.into_iter().find(|c| cipher_name(*c) == name)
}

/// Whether a session at `dialect` can seal with `cipher`: 3.0 and 3.0.2
/// have AES-128-CCM alone, 3.1.1 every cipher (negotiated in its
/// encryption capabilities), 2.x none.
pub fn cipher_usable_at(cipher: u16, dialect: u16) -> bool {
    match dialect {
        DIALECT_300 | DIALECT_302 => cipher == AES_128_CCM,
        DIALECT_311 => ALL_CIPHERS.contains(&cipher),
        _ => false,
    }
}

/// NEGOTIATE / SESSION_SETUP security mode bits.
pub const SIGNING_ENABLED: u16 = 1;
pub const SIGNING_REQUIRED: u16 = 2;

/// Negotiate context types (3.1.1).
pub const PREAUTH_INTEGRITY_CAPABILITIES: u16 = 1;
pub const ENCRYPTION_CAPABILITIES: u16 = 2;
pub const SIGNING_CAPABILITIES: u16 = 8;
/// The one preauth hash algorithm.
pub const SHA_512: u16 = 1;
/// Signing algorithms of the signing-capabilities context.
pub const HMAC_SHA256: u16 = 0;
pub const AES_CMAC: u16 = 1;
pub const AES_GMAC: u16 = 2;

/// A NEGOTIATE request's body.
#[derive(Debug, Clone)]
pub struct NegotiateRequest {
    pub dialects: Vec<u16>,
    pub security_mode: u16,
    pub client_guid: [u8; 16],
    /// 3.1.1's preauth salt (sent when 3.1.1 is offered).
    pub salt: [u8; 32],
    /// Offer encryption: the capability (3.0, 3.0.2) and 3.1.1's
    /// encryption context (AES-128-GCM, then AES-128-CCM).
    pub encryption: bool,
}

/// SMB2_GLOBAL_CAP_ENCRYPTION.
pub const CAP_ENCRYPTION: u32 = 0x40;

fn pad8(v: &mut Vec<u8>) {
    while !v.len().is_multiple_of(8) {
        v.push(0);
    }
}

impl NegotiateRequest {
    /// The body; offsets assume it follows a 64-byte header. 3.1.1's
    /// contexts offer AES-CMAC alone and, with encryption, AES-128-GCM
    /// then AES-128-CCM: what [`crate::sign::sign`] and a default
    /// [`crate::seal::Keys`] handle. [`NegotiateRequest::encode_offering`]
    /// offers others.
    pub fn encode(&self) -> Vec<u8> {
        self.encode_offering(&[AES_CMAC], &[AES_128_GCM, AES_128_CCM])
    }

    /// The body, 3.1.1's signing capabilities offering `signing` and its
    /// encryption capabilities `ciphers` (ids, in the order of
    /// preference; the encryption context only when `encryption`). An
    /// empty `signing` sends no signing context (the server then signs
    /// with AES-CMAC).
    pub fn encode_offering(&self, signing: &[u16], ciphers: &[u16]) -> Vec<u8> {
        let with_encryption = self.encryption && !ciphers.is_empty();
        let with_contexts = self.dialects.contains(&DIALECT_311);
        let mut v = Vec::new();
        put16(&mut v, 36);
        put16(&mut v, self.dialects.len() as u16);
        put16(&mut v, self.security_mode);
        put16(&mut v, 0);
        // Capabilities: none asked (no DFS, leases, multi-channel) but
        // encryption when offered.
        put32(&mut v, if self.encryption { CAP_ENCRYPTION } else { 0 });
        v.extend_from_slice(&self.client_guid);
        let ctx_at = 8 + 28 + 2 * self.dialects.len();
        let ctx_off = HEADER_LEN + ctx_at.div_ceil(8) * 8;
        if with_contexts {
            put32(&mut v, ctx_off as u32);
            put16(&mut v, 1 + u16::from(!signing.is_empty()) + u16::from(with_encryption));
            put16(&mut v, 0);
        } else {
            put64(&mut v, 0);
        }
        for d in &self.dialects {
            put16(&mut v, *d);
        }
        if with_contexts {
            // Body offsets are 64 bytes short of message offsets: 8-byte
            // alignment is the same.
            pad8(&mut v);
            // Preauth integrity: SHA-512 and our salt.
            put16(&mut v, PREAUTH_INTEGRITY_CAPABILITIES);
            put16(&mut v, 2 + 2 + 2 + 32);
            put32(&mut v, 0);
            put16(&mut v, 1);
            put16(&mut v, 32);
            put16(&mut v, SHA_512);
            v.extend_from_slice(&self.salt);
            if !signing.is_empty() {
                pad8(&mut v);
                put16(&mut v, SIGNING_CAPABILITIES);
                put16(&mut v, 2 + 2 * signing.len() as u16);
                put32(&mut v, 0);
                put16(&mut v, signing.len() as u16);
                for a in signing {
                    put16(&mut v, *a);
                }
            }
            if with_encryption {
                pad8(&mut v);
                put16(&mut v, ENCRYPTION_CAPABILITIES);
                put16(&mut v, 2 + 2 * ciphers.len() as u16);
                put32(&mut v, 0);
                put16(&mut v, ciphers.len() as u16);
                for c in ciphers {
                    put16(&mut v, *c);
                }
            }
        }
        v
    }
}

/// What a NEGOTIATE response says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NegotiateResponse {
    pub security_mode: u16,
    pub dialect: u16,
    pub capabilities: u32,
    pub max_transact: u32,
    pub max_read: u32,
    pub max_write: u32,
    pub security_buffer: Vec<u8>,
    /// 3.1.1: the preauth hash algorithm the server chose.
    pub preauth_hash: Option<u16>,
    /// 3.1.1: the signing algorithm the server chose (None: AES-CMAC).
    pub signing_algorithm: Option<u16>,
    /// 3.1.1: the cipher the server chose (0 or None: none).
    pub cipher: Option<u16>,
}

/// At most this many negotiate contexts are read (a server sends 2 to 5).
const MAX_CONTEXTS: usize = 32;

impl NegotiateResponse {
    pub fn decode(msg: &[u8]) -> Result<NegotiateResponse, DecodeError> {
        let mut r = Reader::at(msg, HEADER_LEN);
        if r.u16()? != 65 {
            return err("NEGOTIATE response: structure size is not 65");
        }
        let security_mode = r.u16()?;
        let dialect = r.u16()?;
        let ctx_count = r.u16()? as usize;
        r.skip(16)?;
        let capabilities = r.u32()?;
        let max_transact = r.u32()?;
        let max_read = r.u32()?;
        let max_write = r.u32()?;
        r.skip(16)?;
        let sb_off = r.u16()? as usize;
        let sb_len = r.u16()? as usize;
        let ctx_off = r.u32()? as usize;
        let security_buffer = if sb_len == 0 {
            Vec::new()
        } else {
            slice(msg, sb_off, sb_len, "NEGOTIATE security buffer")?.to_vec()
        };
        let (mut preauth_hash, mut signing_algorithm, mut cipher) = (None, None, None);
        if dialect == DIALECT_311 {
            if ctx_count > MAX_CONTEXTS {
                return err(format!("NEGOTIATE response: {ctx_count} negotiate contexts"));
            }
            let mut at = ctx_off;
            for _ in 0..ctx_count {
                let mut c = Reader::at(msg, at);
                let kind = c.u16()?;
                let len = c.u16()? as usize;
                c.skip(4)?;
                let data = c.bytes(len)?;
                let mut d = Reader::new(data);
                match kind {
                    PREAUTH_INTEGRITY_CAPABILITIES => {
                        if d.u16()? != 1 {
                            return err("NEGOTIATE response: not one preauth hash algorithm");
                        }
                        d.u16()?;
                        preauth_hash = Some(d.u16()?);
                    }
                    ENCRYPTION_CAPABILITIES => {
                        if d.u16()? != 1 {
                            return err("NEGOTIATE response: not one cipher");
                        }
                        cipher = Some(d.u16()?);
                    }
                    SIGNING_CAPABILITIES => {
                        if d.u16()? != 1 {
                            return err("NEGOTIATE response: not one signing algorithm");
                        }
                        signing_algorithm = Some(d.u16()?);
                    }
                    _ => {}
                }
                at = (c.pos()).div_ceil(8) * 8;
            }
            if preauth_hash != Some(SHA_512) {
                return err("NEGOTIATE response: 3.1.1 without SHA-512 preauth integrity");
            }
        }
        Ok(NegotiateResponse {
            security_mode,
            dialect,
            capabilities,
            max_transact,
            max_read,
            max_write,
            security_buffer,
            preauth_hash,
            signing_algorithm,
            cipher,
        })
    }
}

/// A SESSION_SETUP request's body carrying `token` (SPNEGO).
pub fn session_setup(security_mode: u8, token: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(24 + token.len());
    put16(&mut v, 25);
    v.push(0);
    v.push(security_mode);
    put32(&mut v, 0);
    put32(&mut v, 0);
    put16(&mut v, (HEADER_LEN + 24) as u16);
    put16(&mut v, token.len() as u16);
    put64(&mut v, 0);
    v.extend_from_slice(token);
    v
}

/// SESSION_SETUP response flags.
pub const SESSION_FLAG_IS_GUEST: u16 = 1;
pub const SESSION_FLAG_IS_NULL: u16 = 2;
pub const SESSION_FLAG_ENCRYPT_DATA: u16 = 4;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionSetupResponse {
    pub flags: u16,
    pub security_buffer: Vec<u8>,
}

impl SessionSetupResponse {
    pub fn decode(msg: &[u8]) -> Result<SessionSetupResponse, DecodeError> {
        let mut r = Reader::at(msg, HEADER_LEN);
        if r.u16()? != 9 {
            return err("SESSION_SETUP response: structure size is not 9");
        }
        let flags = r.u16()?;
        let off = r.u16()? as usize;
        let len = r.u16()? as usize;
        let security_buffer = if len == 0 {
            Vec::new()
        } else {
            slice(msg, off, len, "SESSION_SETUP security buffer")?.to_vec()
        };
        Ok(SessionSetupResponse { flags, security_buffer })
    }
}

/// LOGOFF, TREE_DISCONNECT and ECHO requests: a structure size of 4.
pub fn empty_request() -> Vec<u8> {
    vec![4, 0, 0, 0]
}

/// A response that is a structure size of 4 (LOGOFF, FLUSH, LOCK, SET_INFO …).
pub fn decode_empty(body: &[u8]) -> Result<(), DecodeError> {
    let mut r = Reader::new(body);
    match r.u16()? {
        2 | 4 => Ok(()),
        n => err(format!("response structure size {n}, expected 2 or 4")),
    }
}

/// TREE_CONNECT to `path` (`\\HOST\SHARE`).
pub fn tree_connect(path: &str) -> Vec<u8> {
    let name = utf16(path);
    let mut v = Vec::new();
    put16(&mut v, 9);
    put16(&mut v, 0);
    put16(&mut v, (HEADER_LEN + 8) as u16);
    put16(&mut v, name.len() as u16);
    v.extend_from_slice(&name);
    v
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeConnectResponse {
    pub share_type: u8,
    pub share_flags: u32,
    pub capabilities: u32,
    pub maximal_access: u32,
}

/// Share flag: the share requires encryption.
pub const SHAREFLAG_ENCRYPT_DATA: u32 = 0x8000;

impl TreeConnectResponse {
    pub fn decode(body: &[u8]) -> Result<TreeConnectResponse, DecodeError> {
        let mut r = Reader::new(body);
        if r.u16()? != 16 {
            return err("TREE_CONNECT response: structure size is not 16");
        }
        let share_type = r.u8()?;
        r.u8()?;
        Ok(TreeConnectResponse {
            share_type,
            share_flags: r.u32()?,
            capabilities: r.u32()?,
            maximal_access: r.u32()?,
        })
    }
}

/// A file id: persistent and volatile halves as the server sent them.
pub type FileId = [u8; 16];

/// CREATE's access, share and option bits benchlab uses.
pub mod create {
    pub const FILE_READ_DATA: u32 = 0x1;
    pub const FILE_WRITE_DATA: u32 = 0x2;
    pub const FILE_APPEND_DATA: u32 = 0x4;
    pub const FILE_READ_EA: u32 = 0x8;
    pub const FILE_WRITE_EA: u32 = 0x10;
    pub const FILE_READ_ATTRIBUTES: u32 = 0x80;
    pub const FILE_WRITE_ATTRIBUTES: u32 = 0x100;
    pub const DELETE: u32 = 0x1_0000;
    pub const READ_CONTROL: u32 = 0x2_0000;
    pub const SYNCHRONIZE: u32 = 0x10_0000;
    pub const MAXIMUM_ALLOWED: u32 = 0x0200_0000;
    pub const SHARE_ALL: u32 = 0x7;
    pub const DIRECTORY_FILE: u32 = 0x1;
    pub const NON_DIRECTORY_FILE: u32 = 0x40;
    pub const DELETE_ON_CLOSE: u32 = 0x1000;
    pub const ATTRIBUTE_NORMAL: u32 = 0x80;
    pub const ATTRIBUTE_DIRECTORY: u32 = 0x10;
    /// Dispositions (the loadfile's numbers).
    pub const OPEN: u32 = 1;
    pub const CREATE: u32 = 2;
    pub const OPEN_IF: u32 = 3;
    /// No oplock, no lease: benchlab does not take them yet.
    pub const OPLOCK_NONE: u8 = 0;
    pub const IMPERSONATION: u32 = 2;
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreateRequest {
    pub name: String,
    pub desired_access: u32,
    pub file_attributes: u32,
    pub share_access: u32,
    pub disposition: u32,
    pub options: u32,
    pub oplock: u8,
}

impl CreateRequest {
    pub fn encode(&self) -> Vec<u8> {
        let name = utf16(&self.name);
        let mut v = Vec::with_capacity(56 + name.len().max(1));
        put16(&mut v, 57);
        v.push(0);
        v.push(self.oplock);
        put32(&mut v, create::IMPERSONATION);
        put64(&mut v, 0);
        put64(&mut v, 0);
        put32(&mut v, self.desired_access);
        put32(&mut v, self.file_attributes);
        put32(&mut v, self.share_access);
        put32(&mut v, self.disposition);
        put32(&mut v, self.options);
        put16(&mut v, (HEADER_LEN + 56) as u16);
        put16(&mut v, name.len() as u16);
        put32(&mut v, 0);
        put32(&mut v, 0);
        v.extend_from_slice(&name);
        // The buffer is at least one byte even for the share's root.
        if name.is_empty() {
            v.push(0);
        }
        v
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreateResponse {
    pub oplock: u8,
    pub action: u32,
    pub end_of_file: u64,
    pub attributes: u32,
    pub file_id: FileId,
}

impl CreateResponse {
    pub fn decode(body: &[u8]) -> Result<CreateResponse, DecodeError> {
        let mut r = Reader::new(body);
        if r.u16()? != 89 {
            return err("CREATE response: structure size is not 89");
        }
        let oplock = r.u8()?;
        r.u8()?;
        let action = r.u32()?;
        r.skip(32)?;
        r.u64()?;
        let end_of_file = r.u64()?;
        let attributes = r.u32()?;
        r.u32()?;
        let mut file_id = [0u8; 16];
        file_id.copy_from_slice(r.bytes(16)?);
        Ok(CreateResponse {
            oplock,
            action,
            end_of_file,
            attributes,
            file_id,
        })
    }
}

fn with_file_id(size: u16, fid: &FileId) -> Vec<u8> {
    let mut v = Vec::with_capacity(24);
    put16(&mut v, size);
    put16(&mut v, 0);
    put32(&mut v, 0);
    v.extend_from_slice(fid);
    v
}

pub fn close(fid: &FileId) -> Vec<u8> {
    with_file_id(24, fid)
}

pub fn decode_close(body: &[u8]) -> Result<(), DecodeError> {
    let mut r = Reader::new(body);
    if r.u16()? != 60 {
        return err("CLOSE response: structure size is not 60");
    }
    Ok(())
}

pub fn flush(fid: &FileId) -> Vec<u8> {
    with_file_id(24, fid)
}

pub fn read(fid: &FileId, offset: u64, length: u32) -> Vec<u8> {
    let mut v = Vec::with_capacity(49);
    put16(&mut v, 49);
    v.push(0x50);
    v.push(0);
    put32(&mut v, length);
    put64(&mut v, offset);
    v.extend_from_slice(fid);
    put32(&mut v, 0);
    put32(&mut v, 0);
    put32(&mut v, 0);
    put16(&mut v, 0);
    put16(&mut v, 0);
    v.push(0);
    v
}

/// A READ response's data (a slice of the message).
pub fn decode_read(msg: &[u8]) -> Result<&[u8], DecodeError> {
    let mut r = Reader::at(msg, HEADER_LEN);
    if r.u16()? != 17 {
        return err("READ response: structure size is not 17");
    }
    let off = r.u8()? as usize;
    r.u8()?;
    let len = r.u32()? as usize;
    slice(msg, off, len, "READ data")
}

/// A WRITE request's body: its fixed part then `data`.
pub fn write(fid: &FileId, offset: u64, data: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(48 + data.len());
    put16(&mut v, 49);
    put16(&mut v, (HEADER_LEN + 48) as u16);
    put32(&mut v, data.len() as u32);
    put64(&mut v, offset);
    v.extend_from_slice(fid);
    put32(&mut v, 0);
    put32(&mut v, 0);
    put16(&mut v, 0);
    put16(&mut v, 0);
    put32(&mut v, 0);
    v.extend_from_slice(data);
    v
}

/// The bytes a WRITE response says were written.
pub fn decode_write(body: &[u8]) -> Result<u32, DecodeError> {
    let mut r = Reader::new(body);
    if r.u16()? != 17 {
        return err("WRITE response: structure size is not 17");
    }
    r.u16()?;
    r.u32()
}

/// LOCK element flags.
pub const LOCK_SHARED: u32 = 0x1;
pub const LOCK_EXCLUSIVE: u32 = 0x2;
pub const LOCK_UNLOCK: u32 = 0x4;
pub const LOCK_FAIL_IMMEDIATELY: u32 = 0x10;

/// One range of a LOCK request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LockRange {
    pub offset: u64,
    pub length: u64,
    pub flags: u32,
}

pub fn lock(fid: &FileId, ranges: &[LockRange]) -> Vec<u8> {
    let mut v = Vec::with_capacity(24 + 24 * ranges.len());
    put16(&mut v, 48);
    put16(&mut v, ranges.len() as u16);
    put32(&mut v, 0);
    v.extend_from_slice(fid);
    for l in ranges {
        put64(&mut v, l.offset);
        put64(&mut v, l.length);
        put32(&mut v, l.flags);
        put32(&mut v, 0);
    }
    v
}

/// File information classes of QUERY_DIRECTORY.
pub const FILE_DIRECTORY_INFORMATION: u8 = 1;
pub const FILE_FULL_DIRECTORY_INFORMATION: u8 = 2;
pub const FILE_BOTH_DIRECTORY_INFORMATION: u8 = 3;
pub const FILE_NAMES_INFORMATION: u8 = 12;
pub const FILE_ID_BOTH_DIRECTORY_INFORMATION: u8 = 37;
pub const FILE_ID_FULL_DIRECTORY_INFORMATION: u8 = 38;

/// QUERY_DIRECTORY flags.
pub const RESTART_SCANS: u8 = 1;

pub fn query_directory(fid: &FileId, class: u8, flags: u8, pattern: &str, output_len: u32) -> Vec<u8> {
    let name = utf16(pattern);
    let mut v = Vec::with_capacity(32 + name.len());
    put16(&mut v, 33);
    v.push(class);
    v.push(flags);
    put32(&mut v, 0);
    v.extend_from_slice(fid);
    put16(&mut v, (HEADER_LEN + 32) as u16);
    put16(&mut v, name.len() as u16);
    put32(&mut v, output_len);
    v.extend_from_slice(&name);
    if name.is_empty() {
        v.push(0);
    }
    v
}

/// A QUERY_DIRECTORY response's entries (a slice of the message).
pub fn decode_query_directory(msg: &[u8]) -> Result<&[u8], DecodeError> {
    let mut r = Reader::at(msg, HEADER_LEN);
    if r.u16()? != 9 {
        return err("QUERY_DIRECTORY response: structure size is not 9");
    }
    let off = r.u16()? as usize;
    let len = r.u32()? as usize;
    if len == 0 {
        return Ok(&[]);
    }
    slice(msg, off, len, "QUERY_DIRECTORY output")
}

/// The names in a directory listing of `class`, bounded by the listing's
/// own length (entries chained by NextEntryOffset, each one checked).
pub fn directory_names(buf: &[u8], class: u8) -> Result<Vec<String>, DecodeError> {
    Ok(directory_entries(buf, class)?.into_iter().map(|(n, _)| n).collect())
}

/// [`directory_names`] with each entry's attributes (0 for
/// FileNamesInformation, which has none).
pub fn directory_entries(buf: &[u8], class: u8) -> Result<Vec<(String, u32)>, DecodeError> {
    // Where each class keeps FileNameLength and FileName.
    let (len_at, name_at) = match class {
        FILE_DIRECTORY_INFORMATION => (60, 64),
        FILE_FULL_DIRECTORY_INFORMATION => (60, 68),
        FILE_BOTH_DIRECTORY_INFORMATION => (60, 94),
        FILE_NAMES_INFORMATION => (8, 12),
        FILE_ID_BOTH_DIRECTORY_INFORMATION => (60, 104),
        FILE_ID_FULL_DIRECTORY_INFORMATION => (60, 80),
        c => return err(format!("directory information class {c} is not decoded")),
    };
    let mut out = Vec::new();
    let mut at = 0usize;
    loop {
        let e = slice(buf, at, name_at, "directory entry")?;
        let next = u32::from_le_bytes([e[0], e[1], e[2], e[3]]) as usize;
        let n = u32::from_le_bytes([e[len_at], e[len_at + 1], e[len_at + 2], e[len_at + 3]]) as usize;
        let name = slice(buf, at + name_at, n, "directory entry name")?;
        let attrs = if class == FILE_NAMES_INFORMATION {
            0
        } else {
            u32::from_le_bytes([e[56], e[57], e[58], e[59]])
        };
        out.push((crate::from_utf16(name), attrs));
        if next == 0 {
            return Ok(out);
        }
        at = at
            .checked_add(next)
            .ok_or_else(|| DecodeError("directory entry offset overflows".into()))?;
    }
}

/// QUERY_INFO / SET_INFO info types and classes ([MS-FSCC] 2.4 file
/// information classes, 2.5 file system information classes).
pub const INFO_FILE: u8 = 1;
pub const INFO_FILESYSTEM: u8 = 2;
pub const FILE_BASIC_INFORMATION: u8 = 4;
pub const FILE_STANDARD_INFORMATION: u8 = 5;
pub const FILE_INTERNAL_INFORMATION: u8 = 6;
pub const FILE_EA_INFORMATION: u8 = 7;
pub const FILE_ACCESS_INFORMATION: u8 = 8;
pub const FILE_NAME_INFORMATION: u8 = 9;
pub const FILE_RENAME_INFORMATION: u8 = 10;
pub const FILE_DISPOSITION_INFORMATION: u8 = 13;
pub const FILE_POSITION_INFORMATION: u8 = 14;
pub const FILE_FULL_EA_INFORMATION: u8 = 15;
pub const FILE_MODE_INFORMATION: u8 = 16;
pub const FILE_ALIGNMENT_INFORMATION: u8 = 17;
pub const FILE_ALL_INFORMATION: u8 = 18;
pub const FILE_ALLOCATION_INFORMATION: u8 = 19;
pub const FILE_END_OF_FILE_INFORMATION: u8 = 20;
pub const FILE_ALTERNATE_NAME_INFORMATION: u8 = 21;
pub const FILE_STREAM_INFORMATION: u8 = 22;
pub const FILE_COMPRESSION_INFORMATION: u8 = 28;
pub const FILE_NETWORK_OPEN_INFORMATION: u8 = 34;
pub const FILE_ATTRIBUTE_TAG_INFORMATION: u8 = 35;
pub const FILE_NORMALIZED_NAME_INFORMATION: u8 = 48;
pub const FILE_ID_INFORMATION: u8 = 59;
pub const FILE_FS_VOLUME_INFORMATION: u8 = 1;
pub const FILE_FS_SIZE_INFORMATION: u8 = 3;
pub const FILE_FS_DEVICE_INFORMATION: u8 = 4;
pub const FILE_FS_ATTRIBUTE_INFORMATION: u8 = 5;
pub const FILE_FS_CONTROL_INFORMATION: u8 = 6;
pub const FILE_FS_FULL_SIZE_INFORMATION: u8 = 7;
pub const FILE_FS_OBJECT_ID_INFORMATION: u8 = 8;
pub const FILE_FS_SECTOR_SIZE_INFORMATION: u8 = 11;

/// The most bytes a QUERY_INFO of a class with a name or a list in it
/// (FileAllInformation, FileStreamInformation, FileFsVolumeInformation …)
/// asks for: a path's name fits, and a server cannot answer more.
pub const INFO_BYTES: u32 = 4096;

/// QUERY_INFO's OutputBufferLength for `class` of `info_type`: the
/// class's fixed size ([MS-FSCC] 2.4, 2.5), or [`INFO_BYTES`] for one
/// that holds a name or a list. A class too small a buffer was asked for
/// would be answered INFO_LENGTH_MISMATCH, one asked too much of costs
/// the server nothing: a class not listed gets [`INFO_BYTES`].
pub fn query_info_len(info_type: u8, class: u8) -> u32 {
    match (info_type, class) {
        (INFO_FILE, FILE_BASIC_INFORMATION) => 40,
        (INFO_FILE, FILE_STANDARD_INFORMATION) => 24,
        (INFO_FILE, FILE_INTERNAL_INFORMATION) => 8,
        (INFO_FILE, FILE_EA_INFORMATION) => 4,
        (INFO_FILE, FILE_ACCESS_INFORMATION) => 4,
        (INFO_FILE, FILE_POSITION_INFORMATION) => 8,
        (INFO_FILE, FILE_MODE_INFORMATION) => 4,
        (INFO_FILE, FILE_ALIGNMENT_INFORMATION) => 4,
        (INFO_FILE, FILE_COMPRESSION_INFORMATION) => 16,
        (INFO_FILE, FILE_NETWORK_OPEN_INFORMATION) => 56,
        (INFO_FILE, FILE_ATTRIBUTE_TAG_INFORMATION) => 8,
        (INFO_FILE, FILE_ID_INFORMATION) => 24,
        (INFO_FILESYSTEM, FILE_FS_SIZE_INFORMATION) => 24,
        (INFO_FILESYSTEM, FILE_FS_DEVICE_INFORMATION) => 8,
        (INFO_FILESYSTEM, FILE_FS_CONTROL_INFORMATION) => 48,
        (INFO_FILESYSTEM, FILE_FS_FULL_SIZE_INFORMATION) => 32,
        (INFO_FILESYSTEM, FILE_FS_OBJECT_ID_INFORMATION) => 64,
        (INFO_FILESYSTEM, FILE_FS_SECTOR_SIZE_INFORMATION) => 28,
        _ => INFO_BYTES,
    }
}

pub fn query_info(fid: &FileId, info_type: u8, class: u8, output_len: u32) -> Vec<u8> {
    let mut v = Vec::with_capacity(41);
    put16(&mut v, 41);
    v.push(info_type);
    v.push(class);
    put32(&mut v, output_len);
    put16(&mut v, 0);
    put16(&mut v, 0);
    put32(&mut v, 0);
    put32(&mut v, 0);
    put32(&mut v, 0);
    v.extend_from_slice(fid);
    v.push(0);
    v
}

/// A QUERY_INFO response's output buffer.
pub fn decode_query_info(msg: &[u8]) -> Result<&[u8], DecodeError> {
    let mut r = Reader::at(msg, HEADER_LEN);
    if r.u16()? != 9 {
        return err("QUERY_INFO response: structure size is not 9");
    }
    let off = r.u16()? as usize;
    let len = r.u32()? as usize;
    if len == 0 {
        return Ok(&[]);
    }
    slice(msg, off, len, "QUERY_INFO output")
}

pub fn set_info(fid: &FileId, info_type: u8, class: u8, data: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(32 + data.len());
    put16(&mut v, 33);
    v.push(info_type);
    v.push(class);
    put32(&mut v, data.len() as u32);
    put16(&mut v, (HEADER_LEN + 32) as u16);
    put16(&mut v, 0);
    put32(&mut v, 0);
    v.extend_from_slice(fid);
    v.extend_from_slice(data);
    v
}

/// FileBasicInformation with every time `time` (FILETIME: 100 ns since
/// 1601) and the attributes left as they are (0).
pub fn basic_info(time: u64) -> Vec<u8> {
    let mut v = Vec::with_capacity(40);
    put64(&mut v, time);
    put64(&mut v, time);
    put64(&mut v, time);
    put64(&mut v, time);
    put32(&mut v, 0);
    put32(&mut v, 0);
    v
}

/// FileRenameInformation (SMB2's form) to `to`, a path from the share's root.
pub fn rename_info(to: &str, replace: bool) -> Vec<u8> {
    let name = utf16(to);
    let mut v = Vec::with_capacity(20 + name.len());
    v.push(replace as u8);
    v.extend_from_slice(&[0; 7]);
    put64(&mut v, 0);
    put32(&mut v, name.len() as u32);
    v.extend_from_slice(&name);
    v
}

/// FileDispositionInformation: delete on close.
pub fn disposition_info(delete: bool) -> Vec<u8> {
    vec![delete as u8]
}

/// An OPLOCK_BREAK notification (the server's, unsolicited).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OplockBreak {
    pub level: u8,
    pub file_id: FileId,
}

impl OplockBreak {
    pub fn decode(body: &[u8]) -> Result<OplockBreak, DecodeError> {
        let mut r = Reader::new(body);
        if r.u16()? != 24 {
            return err("OPLOCK_BREAK: structure size is not 24 (a lease break is not decoded)");
        }
        let level = r.u8()?;
        r.skip(5)?;
        let mut file_id = [0u8; 16];
        file_id.copy_from_slice(r.bytes(16)?);
        Ok(OplockBreak { level, file_id })
    }
}

/// An error response's body (structure size 9): checked, not kept.
pub struct ErrorResponse;

impl ErrorResponse {
    pub fn decode(body: &[u8]) -> Result<(), DecodeError> {
        let mut r = Reader::new(body);
        if r.u16()? != 9 {
            return err("error response: structure size is not 9");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Header;

    fn msg(body: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        Header::default().encode(&mut v);
        v.extend_from_slice(body);
        v
    }

    #[test]
    fn negotiate_offers_contexts_with_3_1_1_only() {
        let mut n = NegotiateRequest {
            dialects: ALL_DIALECTS.to_vec(),
            security_mode: SIGNING_ENABLED,
            client_guid: [1; 16],
            salt: [2; 32],
            encryption: false,
        };
        let b = n.encode();
        let ctx_off = u32::from_le_bytes([b[28], b[29], b[30], b[31]]) as usize;
        assert_eq!(ctx_off % 8, 0);
        assert_eq!(u16::from_le_bytes([b[32], b[33]]), 2);
        let ctx = &b[ctx_off - HEADER_LEN..];
        assert_eq!(&ctx[..2], &PREAUTH_INTEGRITY_CAPABILITIES.to_le_bytes());
        n.dialects = vec![DIALECT_202];
        let b = n.encode();
        assert_eq!(b.len(), 36 + 2);
        assert_eq!(&b[28..36], &[0; 8]);
    }

    /// The negotiate contexts of a NEGOTIATE request's body: (type, data).
    fn request_contexts(b: &[u8]) -> Vec<(u16, Vec<u8>)> {
        let mut at = u32::from_le_bytes([b[28], b[29], b[30], b[31]]) as usize - HEADER_LEN;
        let count = u16::from_le_bytes([b[32], b[33]]);
        let mut out = Vec::new();
        for _ in 0..count {
            let kind = u16::from_le_bytes([b[at], b[at + 1]]);
            let len = u16::from_le_bytes([b[at + 2], b[at + 3]]) as usize;
            out.push((kind, b[at + 8..at + 8 + len].to_vec()));
            at = (at + 8 + len).div_ceil(8) * 8;
        }
        out
    }

    #[test]
    fn negotiate_offers_the_signing_algorithms_and_ciphers_asked() {
        let mut n = NegotiateRequest {
            dialects: vec![DIALECT_300, DIALECT_311],
            security_mode: SIGNING_ENABLED,
            client_guid: [1; 16],
            salt: [2; 32],
            encryption: true,
        };
        let c = request_contexts(&n.encode_offering(&[AES_GMAC, HMAC_SHA256], &[AES_256_GCM]));
        assert_eq!(c.len(), 3);
        assert_eq!(c[0].0, PREAUTH_INTEGRITY_CAPABILITIES);
        assert_eq!(c[1], (SIGNING_CAPABILITIES, vec![2, 0, 2, 0, 0, 0]));
        assert_eq!(c[2], (ENCRYPTION_CAPABILITIES, vec![1, 0, 4, 0]));
        // encode(): AES-CMAC, AES-128-GCM then AES-128-CCM, as before.
        let c = request_contexts(&n.encode());
        assert_eq!(c[1], (SIGNING_CAPABILITIES, vec![1, 0, 1, 0]));
        assert_eq!(c[2], (ENCRYPTION_CAPABILITIES, vec![2, 0, 2, 0, 1, 0]));
        // No signing list: no signing context (the server takes AES-CMAC);
        // no encryption: no encryption context.
        let c = request_contexts(&n.encode_offering(&[], &ALL_CIPHERS));
        assert_eq!(
            c.iter().map(|x| x.0).collect::<Vec<_>>(),
            [PREAUTH_INTEGRITY_CAPABILITIES, ENCRYPTION_CAPABILITIES]
        );
        n.encryption = false;
        let c = request_contexts(&n.encode_offering(&[AES_GMAC], &ALL_CIPHERS));
        assert_eq!(
            c.iter().map(|x| x.0).collect::<Vec<_>>(),
            [PREAUTH_INTEGRITY_CAPABILITIES, SIGNING_CAPABILITIES]
        );
        for c in ALL_CIPHERS {
            assert_eq!(parse_cipher(&cipher_name(c)), Some(c));
            assert!(cipher_usable_at(c, DIALECT_311));
            assert_eq!(cipher_usable_at(c, DIALECT_300), c == AES_128_CCM);
            assert!(!cipher_usable_at(c, DIALECT_210));
        }
    }

    #[test]
    fn a_negotiate_response_decodes_with_its_contexts() {
        let mut body = Vec::new();
        put16(&mut body, 65);
        put16(&mut body, SIGNING_ENABLED | SIGNING_REQUIRED);
        put16(&mut body, DIALECT_311);
        put16(&mut body, 2);
        body.extend_from_slice(&[0; 16]);
        put32(&mut body, 0);
        for _ in 0..3 {
            put32(&mut body, 65536);
        }
        body.extend_from_slice(&[0; 16]);
        put16(&mut body, (HEADER_LEN + 64) as u16);
        put16(&mut body, 3);
        put32(&mut body, (HEADER_LEN + 72) as u32);
        body.extend_from_slice(b"abc");
        pad8(&mut body);
        put16(&mut body, PREAUTH_INTEGRITY_CAPABILITIES);
        put16(&mut body, 6 + 32);
        put32(&mut body, 0);
        put16(&mut body, 1);
        put16(&mut body, 32);
        put16(&mut body, SHA_512);
        body.extend_from_slice(&[7; 32]);
        pad8(&mut body);
        put16(&mut body, SIGNING_CAPABILITIES);
        put16(&mut body, 4);
        put32(&mut body, 0);
        put16(&mut body, 1);
        put16(&mut body, AES_CMAC);
        let m = msg(&body);
        let n = NegotiateResponse::decode(&m).unwrap();
        assert_eq!(n.dialect, DIALECT_311);
        assert_eq!(n.security_buffer, b"abc");
        assert_eq!((n.preauth_hash, n.signing_algorithm), (Some(SHA_512), Some(AES_CMAC)));
        for cut in 0..m.len() {
            let _ = NegotiateResponse::decode(&m[..cut]);
        }
    }

    #[test]
    fn directory_listings_decode_and_are_bounded() {
        let mut buf = Vec::new();
        for (i, name) in ["a.txt", "bb"].iter().enumerate() {
            let n = utf16(name);
            let mut e = vec![0u8; 94];
            e[60..64].copy_from_slice(&(n.len() as u32).to_le_bytes());
            e.extend_from_slice(&n);
            while !e.len().is_multiple_of(8) {
                e.push(0);
            }
            if i == 0 {
                let l = e.len() as u32;
                e[0..4].copy_from_slice(&l.to_le_bytes());
            }
            buf.extend_from_slice(&e);
        }
        assert_eq!(
            directory_names(&buf, FILE_BOTH_DIRECTORY_INFORMATION).unwrap(),
            ["a.txt", "bb"]
        );
        for cut in 0..buf.len() {
            let _ = directory_names(&buf[..cut], FILE_BOTH_DIRECTORY_INFORMATION);
        }
        // An entry pointing at itself would loop: offset 0 ends, any other
        // offset moves on, so a loop cannot happen; a huge one is an error.
        buf[0..4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(directory_names(&buf, FILE_BOTH_DIRECTORY_INFORMATION).is_err());
    }

    #[test]
    fn create_and_read_round_trip_their_fixed_parts() {
        let c = CreateRequest {
            name: "clients\\f".into(),
            desired_access: 1,
            file_attributes: 0,
            share_access: 7,
            disposition: 2,
            options: 0x40,
            oplock: 0,
        }
        .encode();
        assert_eq!(c.len(), 56 + 18);
        assert_eq!(u16::from_le_bytes([c[44], c[45]]), 120);
        let mut body = Vec::new();
        put16(&mut body, 17);
        body.push((HEADER_LEN + 16) as u8);
        body.push(0);
        put32(&mut body, 3);
        put32(&mut body, 0);
        put32(&mut body, 0);
        body.extend_from_slice(b"xyz");
        assert_eq!(decode_read(&msg(&body)).unwrap(), b"xyz");
        body[4] = 200;
        assert!(decode_read(&msg(&body)).is_err());
    }
}
