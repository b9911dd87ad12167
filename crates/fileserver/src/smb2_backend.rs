//! `smb://…?client=benchlab`: benchlab's own SMB2/3 client (the codec is
//! `benchlab-smb2`), blocking, one TCP connection and one session per user.
//!
//! Unlike libsmbclient ([`crate::smb`]) it sends every loadfile operation
//! as the real command — LockX/UnlockX as LOCK with the loadfile's range,
//! Flush as FLUSH — and answers each with the server's NT status by name,
//! so OBJECT_NAME_NOT_FOUND, OBJECT_PATH_NOT_FOUND and NO_SUCH_FILE stay
//! apart. It holds no global state: users are threads of one process.
//!
//! One request is in flight at a time, its credit charge taken from the
//! window the server granted (never past it); an answer other than
//! success is the operation's status; a broken connection or a message
//! that is not SMB2 is `NT_STATUS_CONNECTION_DISCONNECTED` /
//! `NT_STATUS_INVALID_NETWORK_RESPONSE`, counted like any other status.

use crate::backend::{is_not_found, wildcard_match, FileBackend};
use crate::smb::{Encrypt, Sign, SmbUrl};
use crate::status::Status;
use benchlab_smb2::auth::{self, Credentials};
use benchlab_smb2::msg::{self, create, FileId};
use benchlab_smb2::seal::{self, Keys};
use benchlab_smb2::sign::{Algorithm, Preauth, Signer};
use benchlab_smb2::{cmd, frame, status as nt, Header, HEADER_LEN, UNSOLICITED};
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// The most bytes one READ or WRITE moves: 64 KiB is one credit at every
/// dialect (2.0.2 has no multi-credit requests); a larger operation is
/// several requests, still one counted operation.
const CHUNK: u32 = 65536;

/// Credits asked for on each request: enough that a server granting what
/// is asked never makes the client wait.
const CREDITS_ASKED: u16 = 32;

/// How long a user waits for an answer before the connection counts as
/// lost (near the mix's end, less: see [`END_GRACE`]).
const ANSWER_TIMEOUT: Duration = Duration::from_secs(30);

/// How long past the mix's end an answer is still waited for: a server
/// that answers gets its handles closed and the session logged off
/// cleanly; one that stops answering holds the run this long at most.
const END_GRACE: Duration = Duration::from_secs(2);

/// Directories deeper than this are not removed by Deltree.
const MAX_DELTREE_DEPTH: usize = 64;

/// Which answers a QUERY_DIRECTORY may hold (bytes).
const LISTING_BYTES: u32 = 65536;

/// The most entries one listing keeps: a server that never says
/// NO_MORE_FILES cannot grow a user's memory without end.
const MAX_LISTING: usize = 1 << 20;

/// The most interim answers and oplock breaks read while waiting for one
/// answer: a server that streams them cannot hold a user forever.
const MAX_INTERIM: usize = 1024;

fn other(code: u32) -> Status {
    Status::parse(&nt::name(code)).unwrap_or_else(|| Status::Other(nt::name(code)))
}

fn lost(e: impl std::fmt::Display) -> Status {
    Status::Other(format!("NT_STATUS_CONNECTION_DISCONNECTED ({e})"))
}

fn bad_answer(e: impl std::fmt::Display) -> Status {
    Status::Other(format!("NT_STATUS_INVALID_NETWORK_RESPONSE ({e})"))
}

/// A FILETIME (100 ns since 1601) of now.
fn filetime_now() -> u64 {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    (d.as_secs() + 11_644_473_600) * 10_000_000 + u64::from(d.subsec_nanos() / 100)
}

/// 8 unpredictable bytes (client challenge, GUID, salt): the std hasher's
/// random keys mixed with the clock.
fn random8() -> [u8; 8] {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(filetime_now());
    h.finish().to_le_bytes()
}

/// One connection, one session, one tree: the protocol state of a user.
struct Conn {
    sock: TcpStream,
    next_id: u64,
    /// Credits granted and not yet spent.
    credits: u64,
    dialect: u16,
    session_id: u64,
    tree_id: u32,
    /// Set once the session is set up with a key and signing applies.
    signing_key: Option<Signer>,
    chunk: u32,
    /// Oplock breaks the server sent (none is asked for; counted, not acknowledged).
    pub breaks: u64,
    /// Set once every request is sealed (encrypted); signing is then off.
    seal: Option<Keys>,
    /// Messages sealed: the nonce's counter, never repeated under a key.
    sealed: u64,
    nonce_salt: [u8; 8],
    /// Set once a read or write failed: the stream is out of step, and
    /// every later request is the lost connection's, never sent.
    broken: bool,
    /// When the mix ends: no answer is waited for past it, so a server
    /// that stops answering cannot hold the run for ANSWER_TIMEOUT.
    deadline: Option<std::time::Instant>,
}

impl Conn {
    fn send(&mut self, command: u16, body: &[u8]) -> Result<(u64, Vec<u8>), Status> {
        let charge: u16 = if self.dialect == msg::DIALECT_202 { 0 } else { 1 };
        let cost = u64::from(charge.max(1));
        if self.broken {
            return Err(lost("lost earlier in the run"));
        }
        if self.credits < cost {
            return Err(Status::Other(
                "NT_STATUS_INSUFFICIENT_RESOURCES (the server granted no credit to send with)".into(),
            ));
        }
        let id = self.next_id;
        let mut h = Header::request(command, id, charge, CREDITS_ASKED);
        h.session_id = self.session_id;
        h.tree_id = self.tree_id;
        let mut m = Vec::with_capacity(HEADER_LEN + body.len());
        h.encode(&mut m);
        m.extend_from_slice(body);
        let wire = if let Some(keys) = &self.seal {
            let mut nonce = [0u8; 16];
            nonce[..8].copy_from_slice(&self.sealed.to_le_bytes());
            nonce[8..].copy_from_slice(&self.nonce_salt);
            self.sealed += 1;
            frame::encode(&seal::encrypt(keys, self.session_id, nonce, &m).map_err(bad_answer)?)
        } else {
            if let Some(k) = &self.signing_key {
                k.sign(&mut m);
            }
            frame::encode(&m)
        };
        self.sock.write_all(&wire).map_err(|e| {
            self.broken = true;
            lost(e)
        })?;
        self.credits -= cost;
        self.next_id += cost;
        Ok((id, m))
    }

    /// The final answer to message `id` (interim STATUS_PENDING answers
    /// and oplock breaks are read past).
    fn answer(&mut self, id: u64) -> Result<(Header, Vec<u8>), Status> {
        if let Some(end) = self.deadline {
            let left = (end + END_GRACE).saturating_duration_since(std::time::Instant::now());
            if left < ANSWER_TIMEOUT {
                let _ = self.sock.set_read_timeout(Some(left.max(Duration::from_millis(1))));
            }
        }
        for _ in 0..MAX_INTERIM {
            let mut prefix = [0u8; 4];
            let mut m = Vec::new();
            let got = self.sock.read_exact(&mut prefix).and_then(|_| {
                let n = frame::length(prefix).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
                m.resize(n, 0);
                self.sock.read_exact(&mut m)
            });
            if let Err(e) = got {
                self.broken = true;
                return Err(if e.kind() == std::io::ErrorKind::InvalidData {
                    bad_answer(e)
                } else {
                    lost(e)
                });
            }
            let sealed = m.starts_with(b"\xfdSMB");
            if sealed {
                let keys = self
                    .seal
                    .as_ref()
                    .ok_or_else(|| bad_answer("a sealed answer to a session that seals nothing"))?;
                m = seal::decrypt(keys, &m).map_err(bad_answer)?;
            }
            let h = Header::decode(&m).map_err(bad_answer)?;
            self.credits += u64::from(h.credits);
            if h.message_id == UNSOLICITED && h.command == cmd::OPLOCK_BREAK {
                msg::OplockBreak::decode(&m[HEADER_LEN..]).map_err(bad_answer)?;
                self.breaks += 1;
                continue;
            }
            if h.message_id != id {
                return Err(bad_answer(format!(
                    "an answer to message {} while {id} was asked",
                    h.message_id
                )));
            }
            if h.status == nt::PENDING && h.flags & benchlab_smb2::FLAG_ASYNC != 0 {
                continue;
            }
            if let Some(k) = self.signing_key.as_ref().filter(|_| !sealed) {
                if h.flags & benchlab_smb2::FLAG_SIGNED != 0 && !k.verify(&m) {
                    return Err(bad_answer("a wrongly signed answer"));
                }
            }
            return Ok((h, m));
        }
        Err(bad_answer(format!("{MAX_INTERIM} interim answers and no final one")))
    }

    /// Sends `body` as `command` and returns the answer, an NT status
    /// other than success as the error.
    fn call(&mut self, command: u16, body: &[u8]) -> Result<Vec<u8>, Status> {
        let (id, _) = self.send(command, body)?;
        let (h, m) = self.answer(id)?;
        if h.status != nt::SUCCESS {
            return Err(other(h.status));
        }
        Ok(m)
    }

    fn open(&mut self, name: &str, access: u32, disposition: u32, options: u32) -> Result<msg::CreateResponse, Status> {
        let req = msg::CreateRequest {
            name: name.to_string(),
            desired_access: access,
            file_attributes: 0,
            share_access: create::SHARE_ALL,
            disposition,
            options,
            oplock: create::OPLOCK_NONE,
        };
        let m = self.call(cmd::CREATE, &req.encode())?;
        msg::CreateResponse::decode(&m[HEADER_LEN..]).map_err(bad_answer)
    }

    fn close(&mut self, fid: &FileId) -> Result<(), Status> {
        let m = self.call(cmd::CLOSE, &msg::close(fid))?;
        msg::decode_close(&m[HEADER_LEN..]).map_err(bad_answer)
    }

    /// Opens, does `f`, closes; `f`'s status wins over the close's.
    fn with_open<T>(
        &mut self,
        name: &str,
        access: u32,
        options: u32,
        f: impl FnOnce(&mut Conn, &FileId) -> Result<T, Status>,
    ) -> Result<T, Status> {
        let fid = self.open(name, access, create::OPEN, options)?.file_id;
        let r = f(self, &fid);
        let c = self.close(&fid);
        let v = r?;
        c.map(|_| v)
    }

    /// Entries of directory `dir` matching `mask` (without `.` and `..`),
    /// with their attributes.
    fn list(&mut self, dir: &str, mask: &str) -> Result<Vec<(String, u32)>, Status> {
        let access = create::FILE_READ_DATA | create::FILE_READ_ATTRIBUTES | create::SYNCHRONIZE;
        self.with_open(dir, access, create::DIRECTORY_FILE, |c, fid| {
            let class = msg::FILE_BOTH_DIRECTORY_INFORMATION;
            let mut out = Vec::new();
            let mut flags = msg::RESTART_SCANS;
            loop {
                let (id, _) = c.send(
                    cmd::QUERY_DIRECTORY,
                    &msg::query_directory(fid, class, flags, mask, LISTING_BYTES),
                )?;
                let (h, m) = c.answer(id)?;
                match h.status {
                    nt::SUCCESS => {}
                    nt::NO_MORE_FILES => return Ok(out),
                    s => return Err(other(s)),
                }
                let buf = msg::decode_query_directory(&m).map_err(bad_answer)?;
                for (name, attrs) in msg::directory_entries(buf, class).map_err(bad_answer)? {
                    if name != "." && name != ".." {
                        out.push((name, attrs));
                    }
                }
                if out.len() > MAX_LISTING {
                    return Err(bad_answer(format!("a listing of more than {MAX_LISTING} entries")));
                }
                flags = 0;
            }
        })
    }

    fn remove_tree(&mut self, dir: &str, depth: usize) -> Result<(), Status> {
        if depth > MAX_DELTREE_DEPTH {
            return Err(Status::Other(
                "NT_STATUS_NAME_TOO_LONG (a tree deeper than benchlab removes)".into(),
            ));
        }
        for (name, attrs) in self.list(dir, "*")? {
            let p = if dir.is_empty() { name } else { format!("{dir}\\{name}") };
            if attrs & create::ATTRIBUTE_DIRECTORY != 0 {
                self.remove_tree(&p, depth + 1)?;
            } else {
                self.delete(&p, create::NON_DIRECTORY_FILE)?;
            }
        }
        self.delete(dir, create::DIRECTORY_FILE)
    }

    /// Deletes `name` (a file or a directory, as `options` says) by
    /// opening it delete-on-close.
    fn delete(&mut self, name: &str, options: u32) -> Result<(), Status> {
        let fid = self
            .open(
                name,
                create::DELETE | create::FILE_READ_ATTRIBUTES,
                create::OPEN,
                options | create::DELETE_ON_CLOSE,
            )?
            .file_id;
        self.close(&fid)
    }
}

/// A share's path from a loadfile's (`\clients\client1\f`): components
/// joined by `\`, `.` dropped, `..` taken back; climbing above the share's
/// root is refused (ACCESS_DENIED), as the other backends do.
fn share_path(p: &str) -> Result<String, Status> {
    crate::backend::components(p).map(|c| c.join("\\"))
}

/// An open the loadfile named: its file id and whether it is a directory.
struct Open {
    fid: FileId,
}

/// One user's SMB2 session on the target's share.
pub struct Smb2Backend {
    conn: Conn,
    /// The share's root, open for the session (QUERY_FS_INFORMATION asks it).
    root: FileId,
    handles: HashMap<u64, Open>,
}

impl Smb2Backend {
    /// A session on the share of `u`; a refusal means the mix cannot run.
    pub fn connect(u: &SmbUrl) -> Result<Smb2Backend, crate::FileError> {
        Smb2Backend::open_session(u).map_err(|s| {
            crate::FileError::Run(format!(
                "{u}: cannot reach the share with benchlab's SMB2 client: {s} (is the server running, the share and the user right?)"
            ))
        })
    }

    /// The dialect the session runs at.
    pub fn dialect(&self) -> u16 {
        self.conn.dialect
    }

    /// Whether every request is signed.
    pub fn signing(&self) -> bool {
        self.conn.signing_key.is_some() && self.conn.seal.is_none()
    }

    /// The cipher every request is sealed with, if any.
    pub fn cipher(&self) -> Option<u16> {
        self.conn.seal.as_ref().map(|k| k.cipher)
    }

    /// The algorithm every request is signed with, if they are signed.
    pub fn signing_algorithm(&self) -> Option<Algorithm> {
        self.conn
            .signing_key
            .as_ref()
            .filter(|_| self.conn.seal.is_none())
            .map(|s| s.algorithm())
    }

    fn open_session(u: &SmbUrl) -> Result<Smb2Backend, String> {
        let sock = TcpStream::connect((u.host.as_str(), u.port)).map_err(|e| format!("connect: {e}"))?;
        // Every request waits for its answer: Nagle's algorithm would hold
        // each small one for the delayed ACK.
        sock.set_nodelay(true).map_err(|e| format!("TCP_NODELAY: {e}"))?;
        sock.set_read_timeout(Some(ANSWER_TIMEOUT)).map_err(|e| e.to_string())?;
        let mut c = Conn {
            sock,
            next_id: 0,
            credits: 1,
            dialect: msg::DIALECT_202,
            session_id: 0,
            tree_id: 0,
            signing_key: None,
            chunk: CHUNK,
            breaks: 0,
            seal: None,
            sealed: 0,
            nonce_salt: random8(),
            broken: false,
            deadline: None,
        };
        let want_signing = u.sign == Some(Sign::Required);
        let dialects = match u.dialect {
            Some(d) => vec![d],
            None => msg::ALL_DIALECTS.to_vec(),
        };
        let mut guid = [0u8; 16];
        guid[..8].copy_from_slice(&random8());
        guid[8..].copy_from_slice(&random8());
        let mut salt = [0u8; 32];
        for ch in salt.chunks_mut(8) {
            ch.copy_from_slice(&random8());
        }
        let security_mode = msg::SIGNING_ENABLED | if want_signing { msg::SIGNING_REQUIRED } else { 0 };
        let neg = msg::NegotiateRequest {
            dialects,
            security_mode,
            client_guid: guid,
            salt,
            // Offered always (a server that requires it then works);
            // used when asked for or required.
            encryption: true,
        };
        let mut preauth = Preauth::default();
        // What is offered: the pinned algorithm and cipher alone, or all
        // (the server chooses; the session must use what it chose).
        let signing_offer: Vec<u16> = match u.signing {
            Some(a) => vec![a.id()],
            None => Algorithm::ALL.iter().map(|a| a.id()).collect(),
        };
        let cipher_offer = match u.cipher {
            Some(c) => vec![c],
            None => seal::ALL_CIPHERS.to_vec(),
        };
        let (id, req) = c
            .send(cmd::NEGOTIATE, &neg.encode_offering(&signing_offer, &cipher_offer))
            .map_err(|s| s.to_string())?;
        let (h, m) = c.answer(id).map_err(|s| s.to_string())?;
        if h.status != nt::SUCCESS {
            return Err(format!("NEGOTIATE answered {}", nt::name(h.status)));
        }
        let n = msg::NegotiateResponse::decode(&m).map_err(|e| format!("NEGOTIATE: {e}"))?;
        if !neg.dialects.contains(&n.dialect) {
            return Err(format!(
                "the server chose dialect {}, not offered",
                msg::dialect_name(n.dialect)
            ));
        }
        c.dialect = n.dialect;
        c.chunk = CHUNK.min(n.max_read.max(1)).min(n.max_write.max(1));
        let is_311 = n.dialect == msg::DIALECT_311;
        let cipher = match n.cipher {
            Some(c) if is_311 && c != 0 => Some(c),
            _ if !is_311 && n.dialect >= msg::DIALECT_300 && n.capabilities & msg::CAP_ENCRYPTION != 0 => {
                Some(seal::AES_128_CCM)
            }
            _ => None,
        };
        let algorithm = Algorithm::negotiated(n.dialect, n.signing_algorithm).map_err(|e| e.to_string())?;
        // A pinned algorithm or cipher the session would not use is
        // refused, never replaced by another one silently.
        if let Some(a) = u.signing.filter(|a| *a != algorithm) {
            return Err(format!(
                "signing={} was asked, but at dialect {} the server negotiated {}",
                a.name(),
                msg::dialect_name(n.dialect),
                algorithm.name()
            ));
        }
        if let Some(want) = u.cipher.filter(|w| cipher != Some(*w)) {
            return Err(format!(
                "cipher={} was asked, but at dialect {} the server negotiated {}",
                seal::cipher_name(want),
                msg::dialect_name(n.dialect),
                cipher.map_or("no encryption".to_string(), seal::cipher_name)
            ));
        }
        if is_311 {
            preauth.update(&req);
            preauth.update(&m);
        }
        let sign_all = want_signing || n.security_mode & msg::SIGNING_REQUIRED != 0;
        let creds = match (&u.user, &u.password) {
            (Some(user), password) if !user.is_empty() => Credentials::User {
                user: user.clone(),
                domain: String::new(),
                password: password.clone().unwrap_or_default(),
            },
            _ => Credentials::Anonymous,
        };
        let setup_mode = if sign_all { 2 } else { 1 };
        // Round 1: NTLMSSP NEGOTIATE, answered with its CHALLENGE.
        let first = auth::spnego_init(&auth::negotiate_message(auth::CLIENT_FLAGS));
        let (id, req) = c
            .send(cmd::SESSION_SETUP, &msg::session_setup(setup_mode, &first))
            .map_err(|s| s.to_string())?;
        let (h, m) = c.answer(id).map_err(|s| s.to_string())?;
        if h.status != nt::MORE_PROCESSING_REQUIRED {
            return Err(format!("SESSION_SETUP answered {}", nt::name(h.status)));
        }
        c.session_id = h.session_id;
        if is_311 {
            preauth.update(&req);
            preauth.update(&m);
        }
        let s = msg::SessionSetupResponse::decode(&m).map_err(|e| format!("SESSION_SETUP: {e}"))?;
        let token = auth::spnego_response_token(&s.security_buffer).map_err(|e| format!("SESSION_SETUP: {e}"))?;
        let challenge = auth::Challenge::decode(&token).map_err(|e| format!("SESSION_SETUP: {e}"))?;
        // Round 2: AUTHENTICATE (NTLMv2).
        let (am, key) = auth::authenticate_message(&creds, &challenge, random8(), filetime_now());
        let (id, req) = c
            .send(
                cmd::SESSION_SETUP,
                &msg::session_setup(setup_mode, &auth::spnego_resp(&am)),
            )
            .map_err(|s| s.to_string())?;
        if is_311 {
            preauth.update(&req);
        }
        let signing_key = key.map(|k| Signer::new(c.dialect, algorithm, &k, &preauth.0));
        let seal_keys = key
            .zip(cipher)
            .map(|(k, cipher)| Keys::derive(c.dialect, cipher, &k, &preauth.0));
        // The final answer is signed with the session's key (3.x always).
        c.signing_key = signing_key;
        let (h, m) = c.answer(id).map_err(|s| s.to_string())?;
        if h.status != nt::SUCCESS {
            return Err(format!("SESSION_SETUP answered {}", nt::name(h.status)));
        }
        let s = msg::SessionSetupResponse::decode(&m).map_err(|e| format!("SESSION_SETUP: {e}"))?;
        let guest = s.flags & (msg::SESSION_FLAG_IS_GUEST | msg::SESSION_FLAG_IS_NULL) != 0;
        if guest {
            if sign_all {
                return Err("signing is required but the server made the session a guest's (no key to sign with): give a user and password".into());
            }
            c.signing_key = None;
        }
        // Sealing: asked for (`encrypt=require`, or `request` where the
        // dialect has it) or required by the server for the session.
        let must_seal = u.encrypt == Some(Encrypt::Require) || s.flags & msg::SESSION_FLAG_ENCRYPT_DATA != 0;
        if must_seal || u.encrypt == Some(Encrypt::Request) {
            match (&seal_keys, guest) {
                (Some(k), false) => c.seal = Some(k.clone()),
                _ if must_seal => {
                    return Err(format!(
                        "encryption is required but the session at {} has no cipher or no key (3.0 or later and a user and password are needed)",
                        msg::dialect_name(c.dialect)
                    ))
                }
                _ => {}
            }
        }
        let tree = format!("\\\\{}\\{}", u.host, u.share);
        // At 3.1.1 a user's TREE_CONNECT is signed whatever signing the
        // session runs with ([MS-SMB2] 3.2.4.2.4: it protects the
        // negotiation); other requests are signed only when required.
        if !is_311 && !sign_all {
            c.signing_key = None;
        }
        let t = c
            .call(cmd::TREE_CONNECT, &msg::tree_connect(&tree))
            .and_then(|m| {
                c.tree_id = Header::decode(&m).map_err(bad_answer)?.tree_id;
                msg::TreeConnectResponse::decode(&m[HEADER_LEN..]).map_err(bad_answer)
            })
            .map_err(|s| format!("TREE_CONNECT {tree}: {s}"))?;
        // A share that requires encryption: everything after is sealed.
        if t.share_flags & msg::SHAREFLAG_ENCRYPT_DATA != 0 && c.seal.is_none() {
            c.seal = Some(
                seal_keys
                    .filter(|_| !guest)
                    .ok_or("the share requires encryption and the session cannot seal")?,
            );
        }
        if !sign_all {
            c.signing_key = None;
        }
        let root = c
            .open(
                "",
                create::FILE_READ_DATA | create::FILE_READ_ATTRIBUTES | create::SYNCHRONIZE,
                create::OPEN,
                create::DIRECTORY_FILE,
            )
            .map_err(|s| format!("the share's root: {s}"))?
            .file_id;
        Ok(Smb2Backend {
            conn: c,
            root,
            handles: HashMap::new(),
        })
    }

    fn fid(&self, key: u64) -> Result<FileId, Status> {
        self.handles.get(&key).map(|o| o.fid).ok_or(Status::InvalidHandle)
    }
}

impl Drop for Smb2Backend {
    /// Closes what is open and logs off; the server cleans up the rest
    /// when the connection ends.
    fn drop(&mut self) {
        // A server that stopped answering must not hold the mix's end.
        let _ = self.conn.sock.set_read_timeout(Some(Duration::from_secs(2)));
        let opens: Vec<FileId> = self.handles.drain().map(|(_, o)| o.fid).collect();
        for fid in opens {
            let _ = self.conn.close(&fid);
        }
        let root = self.root;
        let _ = self.conn.close(&root);
        let _ = self.conn.call(cmd::LOGOFF, &msg::empty_request());
    }
}

impl FileBackend for Smb2Backend {
    fn end_at(&mut self, end: std::time::Instant) {
        self.conn.deadline = Some(end);
    }

    fn create(&mut self, key: u64, path: &str, directory: bool, disposition: u32) -> Result<(), Status> {
        let name = share_path(path)?;
        let options = if directory { create::DIRECTORY_FILE } else { 0 };
        // What the server allows this user: files and directories alike.
        let r = self.conn.open(&name, create::MAXIMUM_ALLOWED, disposition, options)?;
        if let Some(old) = self.handles.insert(key, Open { fid: r.file_id }) {
            let _ = self.conn.close(&old.fid);
        }
        Ok(())
    }

    fn close(&mut self, key: u64) -> Result<(), Status> {
        let o = self.handles.remove(&key).ok_or(Status::InvalidHandle)?;
        self.conn.close(&o.fid)
    }

    fn read(&mut self, key: u64, offset: u64, buf: &mut [u8]) -> Result<usize, Status> {
        let fid = self.fid(key)?;
        let mut done = 0;
        while done < buf.len() {
            let n = (buf.len() - done).min(self.conn.chunk as usize);
            let (id, _) = self
                .conn
                .send(cmd::READ, &msg::read(&fid, offset + done as u64, n as u32))?;
            let (h, m) = self.conn.answer(id)?;
            match h.status {
                nt::SUCCESS => {}
                nt::END_OF_FILE => break,
                s => return Err(other(s)),
            }
            let data = msg::decode_read(&m).map_err(bad_answer)?;
            let got = data.len().min(n);
            buf[done..done + got].copy_from_slice(&data[..got]);
            done += got;
            if got < n {
                break;
            }
        }
        Ok(done)
    }

    fn write(&mut self, key: u64, offset: u64, data: &[u8]) -> Result<usize, Status> {
        let fid = self.fid(key)?;
        let mut done = 0;
        while done < data.len() {
            let n = (data.len() - done).min(self.conn.chunk as usize);
            let m = self.conn.call(
                cmd::WRITE,
                &msg::write(&fid, offset + done as u64, &data[done..done + n]),
            )?;
            let w = msg::decode_write(&m[HEADER_LEN..]).map_err(bad_answer)? as usize;
            done += w.min(n);
            if w < n {
                break;
            }
        }
        Ok(done)
    }

    fn query_path(&mut self, path: &str) -> Result<(), Status> {
        let name = share_path(path)?;
        self.conn.with_open(&name, create::FILE_READ_ATTRIBUTES, 0, |c, fid| {
            let m = c.call(
                cmd::QUERY_INFO,
                &msg::query_info(fid, msg::INFO_FILE, msg::FILE_ALL_INFORMATION, 4096),
            )?;
            msg::decode_query_info(&m).map(drop).map_err(bad_answer)
        })
    }

    fn query_file(&mut self, key: u64) -> Result<(), Status> {
        let fid = self.fid(key)?;
        let m = self.conn.call(
            cmd::QUERY_INFO,
            &msg::query_info(&fid, msg::INFO_FILE, msg::FILE_ALL_INFORMATION, 4096),
        )?;
        msg::decode_query_info(&m).map(drop).map_err(bad_answer)
    }

    fn query_fs(&mut self) -> Result<(), Status> {
        let root = self.root;
        let m = self.conn.call(
            cmd::QUERY_INFO,
            &msg::query_info(&root, msg::INFO_FILESYSTEM, msg::FILE_FS_FULL_SIZE_INFORMATION, 64),
        )?;
        msg::decode_query_info(&m).map(drop).map_err(bad_answer)
    }

    fn set_file_info(&mut self, key: u64) -> Result<(), Status> {
        let fid = self.fid(key)?;
        let m = self.conn.call(
            cmd::SET_INFO,
            &msg::set_info(
                &fid,
                msg::INFO_FILE,
                msg::FILE_BASIC_INFORMATION,
                &msg::basic_info(filetime_now()),
            ),
        )?;
        msg::decode_empty(&m[HEADER_LEN..]).map_err(bad_answer)
    }

    fn find(&mut self, pattern: &str) -> Result<u32, Status> {
        let (dir, mask) = pattern.rsplit_once('\\').unwrap_or(("", pattern));
        let dir = share_path(dir)?;
        let names = self.conn.list(&dir, mask).map_err(|s| match s {
            // The directory itself missing is the path's not-found.
            Status::ObjectNameNotFound => Status::ObjectPathNotFound,
            s => s,
        })?;
        // The server matched the mask; counted again here so a server that
        // ignores it is not taken at its word.
        let n = names.iter().filter(|(n, _)| wildcard_match(mask, n)).count() as u32;
        if n == 0 {
            return Err(Status::NoSuchFile);
        }
        Ok(n)
    }

    fn lock(&mut self, key: u64, offset: u64, len: u64, lock: bool) -> Result<(), Status> {
        let fid = self.fid(key)?;
        let flags = if lock {
            msg::LOCK_EXCLUSIVE | msg::LOCK_FAIL_IMMEDIATELY
        } else {
            msg::LOCK_UNLOCK
        };
        let range = msg::LockRange {
            offset,
            length: len,
            flags,
        };
        let m = self.conn.call(cmd::LOCK, &msg::lock(&fid, &[range]))?;
        msg::decode_empty(&m[HEADER_LEN..]).map_err(bad_answer)
    }

    fn flush(&mut self, key: u64) -> Result<(), Status> {
        let fid = self.fid(key)?;
        let m = self.conn.call(cmd::FLUSH, &msg::flush(&fid))?;
        msg::decode_empty(&m[HEADER_LEN..]).map_err(bad_answer)
    }

    fn unlink(&mut self, path: &str) -> Result<(), Status> {
        let name = share_path(path)?;
        self.conn.delete(&name, create::NON_DIRECTORY_FILE)
    }

    fn rename(&mut self, from: &str, to: &str) -> Result<(), Status> {
        let (a, b) = (share_path(from)?, share_path(to)?);
        let access = create::DELETE | create::FILE_READ_ATTRIBUTES | create::SYNCHRONIZE;
        self.conn.with_open(&a, access, 0, |c, fid| {
            let m = c.call(
                cmd::SET_INFO,
                &msg::set_info(
                    fid,
                    msg::INFO_FILE,
                    msg::FILE_RENAME_INFORMATION,
                    &msg::rename_info(&b, false),
                ),
            )?;
            msg::decode_empty(&m[HEADER_LEN..]).map_err(bad_answer)
        })
    }

    fn mkdir(&mut self, path: &str) -> Result<(), Status> {
        let name = share_path(path)?;
        match self.conn.open(
            &name,
            create::FILE_READ_ATTRIBUTES | create::SYNCHRONIZE,
            create::CREATE,
            create::DIRECTORY_FILE,
        ) {
            Ok(r) => self.conn.close(&r.file_id),
            // One that exists is fine (users share `\clients`).
            Err(Status::ObjectNameCollision) => Ok(()),
            Err(s) => Err(s),
        }
    }

    fn deltree(&mut self, path: &str) -> Result<(), Status> {
        let name = share_path(path)?;
        if name.is_empty() {
            return Err(Status::AccessDenied);
        }
        match self.conn.remove_tree(&name, 0) {
            Err(s) if is_not_found(&s) => Ok(()),
            r => r,
        }
    }

    fn negotiated(&self) -> Option<benchlab_results::SmbNegotiated> {
        Some(benchlab_results::SmbNegotiated {
            dialect: msg::dialect_name(self.dialect()),
            signing: self.signing_algorithm().map_or("none", Algorithm::name).to_string(),
            cipher: self.cipher().map_or("none".to_string(), seal::cipher_name),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conn_pair() -> (Conn, TcpStream) {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let sock = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        sock.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let (server, _) = l.accept().unwrap();
        server.set_read_timeout(Some(Duration::from_millis(300))).unwrap();
        let c = Conn {
            sock,
            next_id: 0,
            credits: 1,
            dialect: msg::DIALECT_210,
            session_id: 0,
            tree_id: 0,
            signing_key: None,
            chunk: CHUNK,
            breaks: 0,
            seal: None,
            sealed: 0,
            nonce_salt: [0; 8],
            broken: false,
            deadline: None,
        };
        (c, server)
    }

    fn answer_frame(command: u16, id: u64, credits: u16, status: u32, body: &[u8]) -> Vec<u8> {
        let mut h = Header::request(command, id, 1, credits);
        h.flags = benchlab_smb2::FLAG_RESPONSE;
        h.status = status;
        let mut m = Vec::new();
        h.encode(&mut m);
        m.extend_from_slice(body);
        frame::encode(&m)
    }

    /// Credits: a request is never sent past the window granted; what an
    /// answer grants (an oplock break's included) opens it again; a
    /// break on the way is counted and read past.
    #[test]
    fn credits_are_honoured_and_breaks_read_past() {
        let (mut c, mut server) = conn_pair();
        let (id, _) = c.send(cmd::ECHO, &msg::empty_request()).unwrap();
        assert_eq!((id, c.credits), (0, 0));
        let refused = c.send(cmd::ECHO, &msg::empty_request()).unwrap_err();
        assert!(
            refused.name().starts_with("NT_STATUS_INSUFFICIENT_RESOURCES"),
            "{refused}"
        );
        // Exactly one request reached the server.
        let mut got = vec![0u8; 4 + HEADER_LEN + 4];
        server.read_exact(&mut got).unwrap();
        assert!(server.read(&mut [0u8; 1]).is_err(), "a second request was sent");
        let mut brk = vec![24u8, 0, 1, 0, 0, 0, 0, 0];
        brk.extend_from_slice(&[5; 16]);
        server
            .write_all(&answer_frame(cmd::OPLOCK_BREAK, UNSOLICITED, 0, 0, &brk))
            .unwrap();
        server
            .write_all(&answer_frame(cmd::ECHO, 0, 3, 0, &[4, 0, 0, 0]))
            .unwrap();
        let (h, _) = c.answer(0).unwrap();
        assert_eq!((h.message_id, c.credits, c.breaks), (0, 3, 1));
        // An answer to another message is the server's error, counted.
        c.send(cmd::ECHO, &msg::empty_request()).unwrap();
        server
            .write_all(&answer_frame(cmd::ECHO, 9, 1, 0, &[4, 0, 0, 0]))
            .unwrap();
        let e = c.answer(1).unwrap_err();
        assert!(e.name().starts_with("NT_STATUS_INVALID_NETWORK_RESPONSE"), "{e}");
        // A frame above the limit is refused before it is read.
        c.send(cmd::ECHO, &msg::empty_request()).unwrap();
        server.write_all(&[0, 0x7f, 0xff, 0xff]).unwrap();
        let e = c.answer(2).unwrap_err();
        assert!(e.name().contains("limit"), "{e}");
        drop(server);
        let e = c.answer(3).unwrap_err();
        assert!(e.name().starts_with("NT_STATUS_CONNECTION_DISCONNECTED"), "{e}");
    }

    #[test]
    fn paths_stay_in_the_share() {
        assert_eq!(
            share_path("\\clients\\client1\\f.dat").unwrap(),
            "clients\\client1\\f.dat"
        );
        assert_eq!(share_path("\\a\\.\\b\\..\\c").unwrap(), "a\\c");
        assert_eq!(share_path("\\").unwrap(), "");
        assert_eq!(share_path("\\a\\..\\.."), Err(Status::AccessDenied));
    }

    #[test]
    fn targets_name_the_client_and_dialect_and_print_back() {
        let u = SmbUrl::parse("smb://u:pw@h:4450/s?client=benchlab&dialect=3.0.2&sign=required").unwrap();
        assert_eq!(
            (u.client, u.dialect),
            (crate::smb::Client::Benchlab, Some(msg::DIALECT_302))
        );
        assert_eq!(SmbUrl::parse(&u.with_password()).unwrap(), u);
        assert_eq!(
            u.to_string(),
            "smb://u:***@h:4450/s?sign=required&client=benchlab&dialect=3.0.2"
        );
        let d = SmbUrl::parse("smb://h/s").unwrap();
        assert_eq!((d.client, d.dialect), (crate::smb::Client::Libsmbclient, None));
    }

    #[test]
    fn dialects_parse_by_name() {
        assert_eq!(msg::parse_dialect("2.0.2"), Some(msg::DIALECT_202));
        assert_eq!(msg::parse_dialect("3.1.1"), Some(msg::DIALECT_311));
        assert_eq!(msg::parse_dialect("3.1"), None);
    }

    #[test]
    fn statuses_map_by_name() {
        assert_eq!(other(nt::OBJECT_NAME_NOT_FOUND), Status::ObjectNameNotFound);
        assert_eq!(other(nt::OBJECT_PATH_NOT_FOUND), Status::ObjectPathNotFound);
        assert_eq!(other(nt::NO_SUCH_FILE), Status::NoSuchFile);
        assert_eq!(
            other(nt::SHARING_VIOLATION),
            Status::Other("NT_STATUS_SHARING_VIOLATION".into())
        );
    }
}
