//! # benchlab-smb2
//!
//! benchlab's own SMB2/3 client codec, sans I/O: every function here turns
//! a request into bytes or bytes into a response, and never touches a
//! socket (the blocking client over it is `benchlab_fileserver::smb2_backend`).
//!
//! - [`frame`]: the 4-byte NetBIOS session framing, bounded by [`MAX_FRAME`].
//! - [`Header`]: the 64-byte SMB2 header (message id, credits, session and
//!   tree ids, signature).
//! - [`msg`]: NEGOTIATE (2.0.2 to 3.1.1, with 3.1.1's negotiate contexts),
//!   SESSION_SETUP, LOGOFF, TREE_CONNECT, CREATE, CLOSE, FLUSH, READ, WRITE,
//!   LOCK, QUERY_DIRECTORY, QUERY_INFO, SET_INFO and the OPLOCK_BREAK
//!   notification.
//! - [`auth`]: NTLMSSP (NTLMv2, guest and anonymous) inside a minimal SPNEGO.
//! - [`sign`]: HMAC-SHA256 (2.0.2, 2.1) and AES-128-CMAC (3.x) signing, the
//!   SP800-108 key derivation and 3.1.1's pre-authentication hash.
//! - [`seal`]: 3.x encryption, the TRANSFORM header with AES-128-CCM or
//!   AES-128-GCM.
//!
//! Every decoder reads through [`Reader`], which checks each length against
//! what is there: no input, however made, panics (the fuzz corpus replay
//! in tests/ holds the decoders to it).

pub mod auth;
pub mod client;
pub mod msg;
pub mod seal;
pub mod sign;

use std::fmt;

/// The largest SMB2 message a frame may announce (the NetBIOS length is
/// 24 bits, up to 16 MiB): a peer announcing more is refused before any
/// buffer is made for it. benchlab reads and writes at most 64 KiB a
/// request, so 1 MiB leaves room for any answer it asks for.
pub const MAX_FRAME: usize = 1 << 20;

/// A message that is not what SMB2 says it should be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError(pub String);

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DecodeError {}

fn err<T>(what: impl Into<String>) -> Result<T, DecodeError> {
    Err(DecodeError(what.into()))
}

/// A bounded little-endian cursor over a received message: every read
/// checks that the bytes are there.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Reader<'a> {
        Reader { buf, pos: 0 }
    }
    pub fn at(buf: &'a [u8], pos: usize) -> Reader<'a> {
        Reader { buf, pos }
    }
    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.buf.len());
        match end {
            Some(e) => {
                let s = &self.buf[self.pos..e];
                self.pos = e;
                Ok(s)
            }
            None => err(format!("{n} bytes wanted at offset {} of {}", self.pos, self.buf.len())),
        }
    }
    pub fn skip(&mut self, n: usize) -> Result<(), DecodeError> {
        self.bytes(n).map(drop)
    }
    pub fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.bytes(1)?[0])
    }
    pub fn u16(&mut self) -> Result<u16, DecodeError> {
        let b = self.bytes(2)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }
    pub fn u32(&mut self) -> Result<u32, DecodeError> {
        let b = self.bytes(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    pub fn u64(&mut self) -> Result<u64, DecodeError> {
        let b = self.bytes(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }
    pub fn pos(&self) -> usize {
        self.pos
    }
}

/// `buf[off..off + len]`, or an error naming `what` when it is not all there.
pub fn slice<'a>(buf: &'a [u8], off: usize, len: usize, what: &str) -> Result<&'a [u8], DecodeError> {
    match off.checked_add(len) {
        Some(end) if end <= buf.len() => Ok(&buf[off..end]),
        _ => err(format!("{what}: {len} bytes at {off} past the end ({})", buf.len())),
    }
}

pub(crate) fn put16(v: &mut Vec<u8>, x: u16) {
    v.extend_from_slice(&x.to_le_bytes());
}
pub(crate) fn put32(v: &mut Vec<u8>, x: u32) {
    v.extend_from_slice(&x.to_le_bytes());
}
pub(crate) fn put64(v: &mut Vec<u8>, x: u64) {
    v.extend_from_slice(&x.to_le_bytes());
}

/// UTF-16LE, as SMB2 sends names.
pub fn utf16(s: &str) -> Vec<u8> {
    s.encode_utf16().flat_map(|u| u.to_le_bytes()).collect()
}

/// UTF-16LE bytes back to text (lossy: a server's odd name still counts).
pub fn from_utf16(b: &[u8]) -> String {
    let units: Vec<u16> = b.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect();
    String::from_utf16_lossy(&units)
}

/// NetBIOS session framing (RFC 1002 as SMB2 over TCP uses it): a zero
/// byte and a 24-bit big-endian length before each message.
pub mod frame {
    use super::{err, DecodeError, MAX_FRAME};

    /// `msg` framed.
    pub fn encode(msg: &[u8]) -> Vec<u8> {
        let mut v = Vec::with_capacity(msg.len() + 4);
        v.extend_from_slice(&(msg.len() as u32).to_be_bytes());
        v.extend_from_slice(msg);
        v
    }

    /// The length a frame's 4-byte prefix announces, refused above
    /// [`MAX_FRAME`] or when the first byte is not a session message (0).
    pub fn length(prefix: [u8; 4]) -> Result<usize, DecodeError> {
        if prefix[0] != 0 {
            return err(format!(
                "NetBIOS message type {:#04x}, expected 0 (session message)",
                prefix[0]
            ));
        }
        let n = u32::from_be_bytes([0, prefix[1], prefix[2], prefix[3]]) as usize;
        if n > MAX_FRAME {
            return err(format!("a frame of {n} bytes, above the {MAX_FRAME}-byte limit"));
        }
        Ok(n)
    }
}

/// SMB2 command codes.
pub mod cmd {
    pub const NEGOTIATE: u16 = 0;
    pub const SESSION_SETUP: u16 = 1;
    pub const LOGOFF: u16 = 2;
    pub const TREE_CONNECT: u16 = 3;
    pub const TREE_DISCONNECT: u16 = 4;
    pub const CREATE: u16 = 5;
    pub const CLOSE: u16 = 6;
    pub const FLUSH: u16 = 7;
    pub const READ: u16 = 8;
    pub const WRITE: u16 = 9;
    pub const LOCK: u16 = 10;
    pub const CANCEL: u16 = 12;
    pub const ECHO: u16 = 13;
    pub const QUERY_DIRECTORY: u16 = 14;
    pub const QUERY_INFO: u16 = 16;
    pub const SET_INFO: u16 = 17;
    pub const OPLOCK_BREAK: u16 = 18;
}

/// NT statuses the client acts on, and every status's name.
pub mod status {
    pub const SUCCESS: u32 = 0;
    pub const PENDING: u32 = 0x0000_0103;
    pub const NO_MORE_FILES: u32 = 0x8000_0006;
    pub const MORE_PROCESSING_REQUIRED: u32 = 0xC000_0016;
    pub const END_OF_FILE: u32 = 0xC000_0011;
    pub const NO_SUCH_FILE: u32 = 0xC000_000F;
    pub const OBJECT_NAME_NOT_FOUND: u32 = 0xC000_0034;
    pub const OBJECT_PATH_NOT_FOUND: u32 = 0xC000_003A;
    pub const OBJECT_NAME_COLLISION: u32 = 0xC000_0035;
    pub const FILE_IS_A_DIRECTORY: u32 = 0xC000_00BA;
    pub const NOT_A_DIRECTORY: u32 = 0xC000_0103;
    pub const DIRECTORY_NOT_EMPTY: u32 = 0xC000_0101;
    pub const ACCESS_DENIED: u32 = 0xC000_0022;
    pub const INVALID_HANDLE: u32 = 0xC000_0008;
    pub const FILE_CLOSED: u32 = 0xC000_0128;
    pub const LOCK_NOT_GRANTED: u32 = 0xC000_0055;
    pub const RANGE_NOT_LOCKED: u32 = 0xC000_007E;
    pub const FILE_LOCK_CONFLICT: u32 = 0xC000_0054;
    pub const DISK_FULL: u32 = 0xC000_007F;
    pub const NOT_SUPPORTED: u32 = 0xC000_00BB;
    pub const SHARING_VIOLATION: u32 = 0xC000_0043;
    pub const DELETE_PENDING: u32 = 0xC000_0056;
    pub const INVALID_PARAMETER: u32 = 0xC000_000D;
    pub const LOGON_FAILURE: u32 = 0xC000_006D;
    pub const BAD_NETWORK_NAME: u32 = 0xC000_00CC;
    pub const USER_SESSION_DELETED: u32 = 0xC000_0203;
    pub const NETWORK_SESSION_EXPIRED: u32 = 0xC000_035C;
    pub const INSUFFICIENT_RESOURCES: u32 = 0xC000_009A;
    pub const OBJECT_NAME_INVALID: u32 = 0xC000_0033;
    pub const NOT_SAME_DEVICE: u32 = 0xC000_00D4;
    pub const CANNOT_DELETE: u32 = 0xC000_0121;
    pub const FILE_NOT_AVAILABLE: u32 = 0xC000_0467;
    pub const REQUEST_NOT_ACCEPTED: u32 = 0xC000_00D0;
    pub const INVALID_DEVICE_REQUEST: u32 = 0xC000_0010;
    pub const BUFFER_OVERFLOW: u32 = 0x8000_0005;
    pub const INVALID_INFO_CLASS: u32 = 0xC000_0003;
    pub const INFO_LENGTH_MISMATCH: u32 = 0xC000_0004;
    pub const OBJECT_PATH_SYNTAX_BAD: u32 = 0xC000_003B;
    pub const ACCOUNT_DISABLED: u32 = 0xC000_0072;
    pub const WRONG_PASSWORD: u32 = 0xC000_006A;
    pub const NO_SUCH_USER: u32 = 0xC000_0064;
    pub const INVALID_NETWORK_RESPONSE: u32 = 0xC000_00C3;
    /// FileFullEaInformation of a file that has no EAs.
    pub const NO_EAS_ON_FILE: u32 = 0xC000_0052;

    /// The `NT_STATUS_*` name of `code`; one this table does not know is
    /// named by its number (`NT_STATUS_0xC00000AB`), never lost.
    pub fn name(code: u32) -> String {
        let n = match code {
            SUCCESS => "OK",
            PENDING => "PENDING",
            NO_MORE_FILES => "NO_MORE_FILES",
            MORE_PROCESSING_REQUIRED => "MORE_PROCESSING_REQUIRED",
            END_OF_FILE => "END_OF_FILE",
            NO_SUCH_FILE => "NO_SUCH_FILE",
            OBJECT_NAME_NOT_FOUND => "OBJECT_NAME_NOT_FOUND",
            OBJECT_PATH_NOT_FOUND => "OBJECT_PATH_NOT_FOUND",
            OBJECT_NAME_COLLISION => "OBJECT_NAME_COLLISION",
            FILE_IS_A_DIRECTORY => "FILE_IS_A_DIRECTORY",
            NOT_A_DIRECTORY => "NOT_A_DIRECTORY",
            DIRECTORY_NOT_EMPTY => "DIRECTORY_NOT_EMPTY",
            ACCESS_DENIED => "ACCESS_DENIED",
            INVALID_HANDLE => "INVALID_HANDLE",
            FILE_CLOSED => "FILE_CLOSED",
            LOCK_NOT_GRANTED => "LOCK_NOT_GRANTED",
            RANGE_NOT_LOCKED => "RANGE_NOT_LOCKED",
            FILE_LOCK_CONFLICT => "FILE_LOCK_CONFLICT",
            DISK_FULL => "DISK_FULL",
            NOT_SUPPORTED => "NOT_SUPPORTED",
            SHARING_VIOLATION => "SHARING_VIOLATION",
            DELETE_PENDING => "DELETE_PENDING",
            INVALID_PARAMETER => "INVALID_PARAMETER",
            LOGON_FAILURE => "LOGON_FAILURE",
            BAD_NETWORK_NAME => "BAD_NETWORK_NAME",
            USER_SESSION_DELETED => "USER_SESSION_DELETED",
            NETWORK_SESSION_EXPIRED => "NETWORK_SESSION_EXPIRED",
            INSUFFICIENT_RESOURCES => "INSUFFICIENT_RESOURCES",
            OBJECT_NAME_INVALID => "OBJECT_NAME_INVALID",
            NOT_SAME_DEVICE => "NOT_SAME_DEVICE",
            CANNOT_DELETE => "CANNOT_DELETE",
            FILE_NOT_AVAILABLE => "FILE_NOT_AVAILABLE",
            REQUEST_NOT_ACCEPTED => "REQUEST_NOT_ACCEPTED",
            INVALID_DEVICE_REQUEST => "INVALID_DEVICE_REQUEST",
            BUFFER_OVERFLOW => "BUFFER_OVERFLOW",
            INVALID_INFO_CLASS => "INVALID_INFO_CLASS",
            INFO_LENGTH_MISMATCH => "INFO_LENGTH_MISMATCH",
            OBJECT_PATH_SYNTAX_BAD => "OBJECT_PATH_SYNTAX_BAD",
            ACCOUNT_DISABLED => "ACCOUNT_DISABLED",
            WRONG_PASSWORD => "WRONG_PASSWORD",
            NO_SUCH_USER => "NO_SUCH_USER",
            INVALID_NETWORK_RESPONSE => "INVALID_NETWORK_RESPONSE",
            NO_EAS_ON_FILE => "NO_EAS_ON_FILE",
            other => return format!("NT_STATUS_{other:#010X}").replace("0X", "0x"),
        };
        format!("NT_STATUS_{n}")
    }
}

/// Header flags.
pub const FLAG_RESPONSE: u32 = 0x1;
pub const FLAG_ASYNC: u32 = 0x2;
pub const FLAG_RELATED: u32 = 0x4;
pub const FLAG_SIGNED: u32 = 0x8;

/// The message id of an unsolicited message (an oplock break).
pub const UNSOLICITED: u64 = u64::MAX;

/// Size of the SMB2 header.
pub const HEADER_LEN: usize = 64;

/// The 64-byte SMB2 header (the sync form; an async response's AsyncId
/// is kept in `async_id`, its tree id is then 0).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Header {
    pub credit_charge: u16,
    /// A response's NT status; a request's channel sequence (0 here).
    pub status: u32,
    pub command: u16,
    /// Credits requested (request) or granted (response).
    pub credits: u16,
    pub flags: u32,
    pub next_command: u32,
    pub message_id: u64,
    pub async_id: u64,
    pub tree_id: u32,
    pub session_id: u64,
    pub signature: [u8; 16],
}

impl Header {
    /// A request header for `command`.
    pub fn request(command: u16, message_id: u64, credit_charge: u16, credits: u16) -> Header {
        Header {
            command,
            message_id,
            credit_charge,
            credits,
            ..Header::default()
        }
    }

    pub fn encode(&self, v: &mut Vec<u8>) {
        v.extend_from_slice(b"\xfeSMB");
        put16(v, 64);
        put16(v, self.credit_charge);
        put32(v, self.status);
        put16(v, self.command);
        put16(v, self.credits);
        put32(v, self.flags);
        put32(v, self.next_command);
        put64(v, self.message_id);
        if self.flags & FLAG_ASYNC != 0 {
            put64(v, self.async_id);
        } else {
            put32(v, 0);
            put32(v, self.tree_id);
        }
        put64(v, self.session_id);
        v.extend_from_slice(&self.signature);
    }

    /// The header at the start of `msg`.
    pub fn decode(msg: &[u8]) -> Result<Header, DecodeError> {
        let mut r = Reader::new(msg);
        let proto = r.bytes(4)?;
        if proto == b"\xfdSMB" {
            return err("an encrypted (transform) message: encryption is not supported by this client yet");
        }
        if proto != b"\xfeSMB" {
            return err(format!("protocol id {proto:02x?}, expected fe 53 4d 42 (SMB2)"));
        }
        if r.u16()? != 64 {
            return err("header structure size is not 64");
        }
        let credit_charge = r.u16()?;
        let status = r.u32()?;
        let command = r.u16()?;
        let credits = r.u16()?;
        let flags = r.u32()?;
        let next_command = r.u32()?;
        let message_id = r.u64()?;
        let (async_id, tree_id) = if flags & FLAG_ASYNC != 0 {
            (r.u64()?, 0)
        } else {
            r.u32()?;
            (0, r.u32()?)
        };
        let session_id = r.u64()?;
        let mut signature = [0u8; 16];
        signature.copy_from_slice(r.bytes(16)?);
        Ok(Header {
            credit_charge,
            status,
            command,
            credits,
            flags,
            next_command,
            message_id,
            async_id,
            tree_id,
            session_id,
            signature,
        })
    }
}

/// Decodes any message a server may send — header, then the body its
/// command and status say — for the fuzz target and the corpus replay:
/// Ok or Err, never a panic.
pub fn decode_any(msg: &[u8]) -> Result<(), DecodeError> {
    let h = Header::decode(msg)?;
    let body = &msg[HEADER_LEN.min(msg.len())..];
    if h.status != status::SUCCESS
        && !(h.status == status::MORE_PROCESSING_REQUIRED && h.command == cmd::SESSION_SETUP)
        && h.status != status::BUFFER_OVERFLOW
    {
        return msg::ErrorResponse::decode(body).map(drop);
    }
    match h.command {
        cmd::NEGOTIATE => msg::NegotiateResponse::decode(msg).map(drop),
        cmd::SESSION_SETUP => {
            let s = msg::SessionSetupResponse::decode(msg)?;
            auth::spnego_response_token(&s.security_buffer)
                .and_then(|t| auth::Challenge::decode(&t))
                .map(drop)
        }
        cmd::TREE_CONNECT => msg::TreeConnectResponse::decode(body).map(drop),
        cmd::CREATE => msg::CreateResponse::decode(body).map(drop),
        cmd::CLOSE => msg::decode_close(body),
        cmd::READ => msg::decode_read(msg).map(drop),
        cmd::WRITE => msg::decode_write(body).map(drop),
        cmd::QUERY_DIRECTORY => {
            let b = msg::decode_query_directory(msg)?;
            msg::directory_names(b, msg::FILE_BOTH_DIRECTORY_INFORMATION).map(drop)
        }
        cmd::QUERY_INFO => msg::decode_query_info(msg).map(drop),
        cmd::OPLOCK_BREAK => msg::OplockBreak::decode(body).map(drop),
        _ => msg::decode_empty(body),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_round_trip() {
        let h = Header {
            credit_charge: 1,
            status: 0xC000_0034,
            command: cmd::CREATE,
            credits: 31,
            flags: FLAG_RESPONSE | FLAG_SIGNED,
            next_command: 0,
            message_id: 77,
            async_id: 0,
            tree_id: 5,
            session_id: 0x1122_3344_5566_7788,
            signature: [9; 16],
        };
        let mut v = Vec::new();
        h.encode(&mut v);
        assert_eq!(v.len(), HEADER_LEN);
        assert_eq!(Header::decode(&v).unwrap(), h);
        assert!(Header::decode(&v[..63]).is_err());
        v[0] = 0xfd;
        assert!(Header::decode(&v).unwrap_err().0.contains("encrypted"));
    }

    #[test]
    fn frames_are_bounded() {
        assert_eq!(frame::encode(b"abc"), b"\0\0\0\x03abc");
        assert_eq!(frame::length([0, 0, 1, 0]), Ok(256));
        assert_eq!(frame::length([0, 0x10, 0, 0]), Ok(MAX_FRAME));
        assert!(frame::length([0, 0x10, 0, 1]).unwrap_err().0.contains("limit"));
        assert!(frame::length([0x85, 0, 0, 0]).is_err());
    }

    #[test]
    fn statuses_have_their_names() {
        assert_eq!(status::name(0xC000_0034), "NT_STATUS_OBJECT_NAME_NOT_FOUND");
        assert_eq!(status::name(0xC000_003A), "NT_STATUS_OBJECT_PATH_NOT_FOUND");
        assert_eq!(status::name(0xC000_000F), "NT_STATUS_NO_SUCH_FILE");
        assert_eq!(status::name(0xC00000AB), "NT_STATUS_0xC00000AB");
    }

    #[test]
    fn utf16_round_trips() {
        assert_eq!(utf16("a\\é"), vec![b'a', 0, b'\\', 0, 0xe9, 0]);
        assert_eq!(from_utf16(&utf16("clients\\f.dat")), "clients\\f.dat");
    }
}
