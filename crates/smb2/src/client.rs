//! One user's SMB2 session as a machine, sans I/O: the session's state
//! (message ids, credits, session and tree ids, signing and sealing keys,
//! the opens by the caller's key) and, for each file operation, the
//! requests it takes and what it makes of each answer.
//!
//! [`Client::start`] takes an operation and queues the frames to send
//! ([`Client::output`]); [`Client::on_frame`] takes one frame received
//! (its NetBIOS length prefix stripped) and queues what comes next, until
//! it returns the operation's outcome. Whoever drives it (a blocking
//! socket, or an event loop holding thousands of users) only moves bytes:
//! there is one implementation of the protocol's logic.
//!
//! One operation is in flight at a time, one request of it at a time.
//! A request is never sent past the credits the server granted; with none
//! left the operation ends as [`Failure::NoCredit`] at once: nothing else
//! is outstanding, so no answer could ever grant more, and waiting would
//! hang the user until the run's end.

use crate::auth::{self, Credentials};
use crate::msg::{self, create, FileId};
use crate::seal::{self, Keys};
use crate::sign::{self, Preauth};
use crate::{cmd, frame, status as nt, Header, FLAG_ASYNC, FLAG_SIGNED, HEADER_LEN, UNSOLICITED};
use std::collections::HashMap;

/// The most bytes one READ or WRITE moves: 64 KiB is one credit at every
/// dialect (2.0.2 has no multi-credit requests); a larger operation is
/// several requests, still one operation.
pub const CHUNK: u32 = 65536;

/// Credits asked for on each request: enough that a server granting what
/// is asked never makes the client wait.
const CREDITS_ASKED: u16 = 32;

/// Directories deeper than this are not removed by a deltree.
const MAX_DELTREE_DEPTH: usize = 64;

/// What one QUERY_DIRECTORY answer may hold (bytes).
const LISTING_BYTES: u32 = 65536;

/// The most entries one listing keeps: a server that never says
/// NO_MORE_FILES cannot grow a user's memory without end.
const MAX_LISTING: usize = 1 << 20;

/// The most interim answers and oplock breaks taken while one request
/// waits: a server that streams them cannot hold a user forever.
const MAX_INTERIM: usize = 1024;

/// Why an operation did not succeed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// The server's NT status.
    Status(u32),
    /// No credit left to send with (see the module's note).
    NoCredit,
    /// An answer that is not what SMB2 says it should be.
    BadAnswer(String),
    /// The caller's key names no open.
    UnknownHandle,
    /// A tree deeper than a deltree removes.
    TooDeep,
    /// The session could not be set up (connect), or an operation asked
    /// for what this client does not send: why, in words.
    Refused(String),
    /// An operation started while another is in flight (the driver's bug).
    Busy,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Status(s) => f.write_str(&nt::name(*s)),
            Failure::NoCredit => {
                f.write_str("NT_STATUS_INSUFFICIENT_RESOURCES (the server granted no credit to send with)")
            }
            Failure::BadAnswer(e) => write!(f, "NT_STATUS_INVALID_NETWORK_RESPONSE ({e})"),
            Failure::UnknownHandle => f.write_str("NT_STATUS_INVALID_HANDLE"),
            Failure::TooDeep => f.write_str("NT_STATUS_NAME_TOO_LONG (a tree deeper than benchlab removes)"),
            Failure::Refused(e) => f.write_str(e),
            Failure::Busy => f.write_str("an operation started while another was in flight"),
        }
    }
}

fn bad(e: impl std::fmt::Display) -> Failure {
    Failure::BadAnswer(e.to_string())
}

/// How a session encrypts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Encrypt {
    /// Only where the server requires it (the session or the share).
    #[default]
    AsServerSays,
    /// Where the dialect has a cipher and the session a key.
    Request,
    /// Always; a session that cannot is refused.
    Require,
}

/// What a session is set up with: the target, who signs in, what is
/// asked for, and the random values and clock the machine may not take
/// itself (it does no I/O and reads no clock).
#[derive(Clone)]
pub struct Config {
    pub host: String,
    pub share: String,
    pub credentials: Credentials,
    /// A pinned dialect, or every one offered.
    pub dialect: Option<u16>,
    pub sign_required: bool,
    pub encrypt: Encrypt,
    pub client_guid: [u8; 16],
    pub salt: [u8; 32],
    pub client_challenge: [u8; 8],
    pub nonce_salt: [u8; 8],
    /// Now, as a FILETIME (NTLMv2's timestamp).
    pub time: u64,
    /// Ask for a lease (2.1 and later: read, write and handle caching)
    /// or a batch oplock (2.0.2) on every file a `Create` opens.
    pub leases: bool,
    /// A pinned signing algorithm (offered alone; the session must use
    /// it), or every one offered and the server's choice taken.
    pub signing: Option<sign::Algorithm>,
    /// A pinned cipher (offered alone; the session must use it), or every
    /// one offered.
    pub cipher: Option<u16>,
}

/// One file operation, as the file backend names it. Paths are the
/// share's (`dir\file`, no leading separator); keys are the caller's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// Negotiate, session setup, tree connect and the share's root open.
    Connect,
    Create {
        key: u64,
        name: String,
        /// The create options as the loadfile gives them (sent, within
        /// the field's 24 defined bits): `create::DIRECTORY_FILE`,
        /// `create::NON_DIRECTORY_FILE` …
        options: u32,
        disposition: u32,
    },
    Close {
        key: u64,
    },
    Read {
        key: u64,
        offset: u64,
        len: usize,
    },
    Write {
        key: u64,
        offset: u64,
        data: Vec<u8>,
    },
    /// QUERY_INFO of `class` (a file information class, `msg::FILE_…`)
    /// on the file `name` opens: CREATE + QUERY_INFO + CLOSE.
    QueryPath {
        name: String,
        class: u8,
    },
    /// QUERY_INFO of `class` (a file information class) on an open file.
    QueryFile {
        key: u64,
        class: u8,
    },
    /// QUERY_INFO of `class` (a file system information class,
    /// `msg::FILE_FS_…`) on the share's root.
    QueryFs {
        class: u8,
    },
    /// SET_INFO of `class` on an open file. FileBasicInformation, its
    /// times set to `time` (a FILETIME), is the one class whose value
    /// an operation can give; another fails as not sent by this machine.
    SetFileInfo {
        key: u64,
        class: u8,
        time: u64,
    },
    /// Lists directory `dir` with the server matching `mask`, its entries
    /// asked as `class` (a directory information class the listing
    /// decoder reads: `msg::FILE_BOTH_DIRECTORY_INFORMATION` …); the
    /// entries are in [`Client::listing`].
    Find {
        dir: String,
        mask: String,
        class: u8,
    },
    Lock {
        key: u64,
        offset: u64,
        len: u64,
        lock: bool,
    },
    Flush {
        key: u64,
    },
    Unlink {
        name: String,
    },
    Rename {
        from: String,
        to: String,
    },
    /// Creates a directory; one that exists is success.
    Mkdir {
        name: String,
    },
    /// Removes a directory and everything in it (a missing one is the
    /// server's not-found status, for the caller to judge).
    Deltree {
        name: String,
    },
    /// Closes every open, the root, and logs off.
    Logoff,
}

/// What a successful operation gives back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Value {
    Done,
    /// Bytes read (in [`Client::data`]) or written.
    Bytes(usize),
}

/// What [`Client::on_frame`] made of a frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Progress {
    /// More to receive (and maybe to send: see [`Client::output`]).
    Pending,
    Done(Result<Value, Failure>),
}

/// What to do once a file is open, before it is closed again.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Act {
    Nothing,
    /// QUERY_INFO of this file information class.
    QueryInfo(u8),
    Rename(String),
    /// QUERY_DIRECTORY with this mask, entries of this class.
    List(String, u8),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Open,
    Act,
    Close,
}

/// Open, act, close: most operations on a path.
#[derive(Debug)]
struct WithOpen {
    act: Act,
    phase: Phase,
    fid: FileId,
    /// The act's outcome, which wins over the close's.
    result: Option<Result<Value, Failure>>,
    /// An existing name is success (mkdir).
    collision_ok: bool,
    /// Entries listed so far (Act::List).
    listing: Vec<(String, u32)>,
    /// Sent as one compound (the act and the close already sent).
    compound: bool,
}

impl WithOpen {
    /// Its CREATE sent (with the act and the close, `compound`).
    fn new(act: Act, compound: bool) -> WithOpen {
        WithOpen {
            act,
            phase: Phase::Open,
            fid: [0; 16],
            result: None,
            collision_ok: false,
            listing: Vec::new(),
            compound,
        }
    }
}

/// One directory a deltree is emptying.
#[derive(Debug)]
struct Level {
    dir: String,
    entries: Vec<(String, u32)>,
    next: usize,
}

#[derive(Debug)]
enum Deltree {
    /// Listing the top level's directory.
    Listing,
    /// Deleting an entry (a file, or an emptied directory).
    Deleting,
}

#[derive(Debug)]
enum Job {
    Idle,
    Negotiate {
        req: Vec<u8>,
        dialects: Vec<u16>,
    },
    SetupChallenge {
        req: Vec<u8>,
    },
    SetupDone,
    TreeConnect,
    RootOpen,
    Create {
        key: u64,
    },
    /// The close of an open a create's key replaced: whatever it answers,
    /// the create succeeded.
    Reclose,
    /// One request whose answer body is checked by `decode` and ends the op.
    Single {
        decode: fn(&[u8]) -> Result<(), Failure>,
    },
    Read {
        fid: FileId,
        offset: u64,
        want: usize,
        chunk: usize,
    },
    Write {
        fid: FileId,
        offset: u64,
        data: Vec<u8>,
        done: usize,
        chunk: usize,
    },
    Path(WithOpen),
    Deltree {
        stack: Vec<Level>,
        sub: WithOpen,
        state: Deltree,
    },
    Logoff {
        left: Vec<FileId>,
    },
}

/// Counts of what went over the connection (NetBIOS headers, signatures
/// and transform headers included).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Wire {
    pub sent: u64,
    pub received: u64,
    /// Oplock and lease break notifications the server sent.
    pub breaks: u64,
    /// Lease breaks acknowledged (LEASE_BREAK_ACK sent).
    pub lease_breaks: u64,
    /// Oplock breaks acknowledged (OPLOCK_BREAK_ACK sent).
    pub oplock_breaks: u64,
}

/// One user's SMB2 session: see the module's note.
pub struct Client {
    cfg: Config,
    next_id: u64,
    /// Credits granted and not yet spent.
    credits: u64,
    dialect: u16,
    session_id: u64,
    tree_id: u32,
    /// Set while requests are signed: the key and the negotiated algorithm.
    signing_key: Option<sign::Signer>,
    /// The signing algorithm the NEGOTIATE settled on.
    algorithm: Option<sign::Algorithm>,
    sign_all: bool,
    chunk: u32,
    seal: Option<Keys>,
    seal_keys: Option<Keys>,
    /// The cipher the negotiation settled on, if any.
    cipher_offered: Option<u16>,
    guest: bool,
    /// Messages sealed: the nonce's counter, never repeated under a key.
    sealed: u64,
    preauth: Preauth,
    root: FileId,
    opens: HashMap<u64, FileId>,
    job: Job,
    /// The message ids whose answers are awaited, in order (several for
    /// a compound).
    awaited: std::collections::VecDeque<u64>,
    interim: usize,
    /// Break acknowledgements sent whose answers are still to come.
    acks: Vec<u64>,
    /// Lease keys handed out (each open its own).
    leases: u64,
    out: Vec<u8>,
    data: Vec<u8>,
    listing: Vec<(String, u32)>,
    wire: Wire,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("dialect", &self.dialect)
            .field("session_id", &self.session_id)
            .field("credits", &self.credits)
            .finish_non_exhaustive()
    }
}

/// Each open's lease key: the client's GUID with the open's number.
fn lease_key(guid: &[u8; 16], n: u64) -> [u8; 16] {
    let mut k = *guid;
    for (b, x) in k[8..].iter_mut().zip(n.to_le_bytes()) {
        *b ^= x;
    }
    k
}

/// Asks for caching on a CREATE's body: at 2.0.2 a batch oplock; later
/// a lease (read, write and handle caching) in an `RqLs` create context,
/// its version 2 at 3.x ([MS-SMB2] 2.2.13.2.8 and .10).
fn request_lease(body: &mut Vec<u8>, dialect: u16, key: [u8; 16]) {
    const OPLOCK_BATCH: u8 = 0x09;
    const OPLOCK_LEASE: u8 = 0xFF;
    const READ_WRITE_HANDLE: u32 = 0x07;
    if dialect == msg::DIALECT_202 {
        body[3] = OPLOCK_BATCH;
        return;
    }
    body[3] = OPLOCK_LEASE;
    let mut data = Vec::with_capacity(52);
    data.extend_from_slice(&key);
    data.extend_from_slice(&READ_WRITE_HANDLE.to_le_bytes());
    data.extend_from_slice(&[0; 12]);
    if dialect >= msg::DIALECT_300 {
        // Version 2: no parent lease key, epoch 0.
        data.extend_from_slice(&[0; 20]);
    }
    let mut ctx = Vec::with_capacity(24 + data.len());
    ctx.extend_from_slice(&0u32.to_le_bytes());
    ctx.extend_from_slice(&16u16.to_le_bytes());
    ctx.extend_from_slice(&4u16.to_le_bytes());
    ctx.extend_from_slice(&0u16.to_le_bytes());
    ctx.extend_from_slice(&24u16.to_le_bytes());
    ctx.extend_from_slice(&(data.len() as u32).to_le_bytes());
    ctx.extend_from_slice(b"RqLs\0\0\0\0");
    ctx.extend_from_slice(&data);
    // The contexts start 8-byte aligned, their offset from the header.
    body.resize(body.len().div_ceil(8) * 8, 0);
    let offset = (HEADER_LEN + body.len()) as u32;
    body[48..52].copy_from_slice(&offset.to_le_bytes());
    body[52..56].copy_from_slice(&(ctx.len() as u32).to_le_bytes());
    body.extend_from_slice(&ctx);
}

/// A CREATE's body: every share mode, no oplock.
fn create_request(name: &str, access: u32, disposition: u32, options: u32) -> Vec<u8> {
    msg::CreateRequest {
        name: name.to_string(),
        desired_access: access,
        file_attributes: 0,
        share_access: create::SHARE_ALL,
        disposition,
        options,
        oplock: create::OPLOCK_NONE,
    }
    .encode()
}

/// QUERY_INFO of file information class `class` on `fid`, asking what
/// the class holds ([`msg::query_info_len`]).
fn query_file_info(fid: &FileId, class: u8) -> Vec<u8> {
    msg::query_info(fid, msg::INFO_FILE, class, msg::query_info_len(msg::INFO_FILE, class))
}

fn status_only(s: u32) -> Result<(), Failure> {
    if s == nt::SUCCESS {
        Ok(())
    } else {
        Err(Failure::Status(s))
    }
}

impl Client {
    pub fn new(cfg: Config) -> Client {
        Client {
            cfg,
            next_id: 0,
            credits: 1,
            dialect: msg::DIALECT_202,
            session_id: 0,
            tree_id: 0,
            signing_key: None,
            algorithm: None,
            sign_all: false,
            chunk: CHUNK,
            seal: None,
            seal_keys: None,
            cipher_offered: None,
            guest: false,
            sealed: 0,
            preauth: Preauth::default(),
            root: [0; 16],
            opens: HashMap::new(),
            job: Job::Idle,
            awaited: Default::default(),
            interim: 0,
            acks: Vec::new(),
            leases: 0,
            out: Vec::new(),
            data: Vec::new(),
            listing: Vec::new(),
            wire: Wire::default(),
        }
    }

    /// The dialect the session runs at.
    pub fn dialect(&self) -> u16 {
        self.dialect
    }

    /// Whether every request is signed.
    pub fn signing(&self) -> bool {
        self.signing_key.is_some() && self.seal.is_none()
    }

    /// The cipher every request is sealed with, if any.
    pub fn cipher(&self) -> Option<u16> {
        self.seal.as_ref().map(|k| k.cipher)
    }

    /// The algorithm every request is signed with, if they are signed.
    pub fn signing_algorithm(&self) -> Option<sign::Algorithm> {
        self.signing_key
            .as_ref()
            .filter(|_| self.seal.is_none())
            .map(|s| s.algorithm())
    }

    /// Credits granted and not yet spent.
    pub fn credits(&self) -> u64 {
        self.credits
    }

    /// What went over the connection so far.
    pub fn wire(&self) -> Wire {
        self.wire
    }

    /// Bytes to send, framed; the driver takes them with [`Client::sent`].
    pub fn output(&self) -> &[u8] {
        &self.out
    }

    /// The driver sent the first `n` bytes of [`Client::output`].
    pub fn sent(&mut self, n: usize) {
        self.out.drain(..n.min(self.out.len()));
    }

    /// The bytes the last read returned.
    pub fn data(&self) -> &[u8] {
        &self.data
    }

    /// The entries the last find listed (`.` and `..` left out), with
    /// their attributes.
    pub fn listing(&self) -> &[(String, u32)] {
        &self.listing
    }

    /// Whether an operation is in flight.
    pub fn busy(&self) -> bool {
        !matches!(self.job, Job::Idle)
    }

    /// The driver lost the connection mid-operation: the operation is
    /// forgotten, and what was queued for it dropped.
    /// A frame that came while no operation is in flight (its user
    /// thinking): a break, acknowledged (the acknowledgement queued in
    /// [`Client::output`]) and counted, or a break acknowledgement's
    /// answer, read past. Anything else is a bad answer.
    pub fn on_idle_frame(&mut self, frame: &[u8]) -> Result<(), Failure> {
        if !matches!(self.job, Job::Idle) {
            return Err(Failure::Busy);
        }
        self.wire.received += 4 + frame.len() as u64;
        let r = self.take(frame);
        self.interim = 0;
        match r {
            Ok(None) => Ok(()),
            Ok(Some(Err(f))) | Err(f) => Err(f),
            Ok(Some(Ok(_))) => Err(bad("an answer with no operation in flight")),
        }
    }

    pub fn abandon(&mut self) {
        self.job = Job::Idle;
        self.awaited.clear();
        self.out.clear();
    }

    fn fid(&self, key: u64) -> Result<FileId, Failure> {
        self.opens.get(&key).copied().ok_or(Failure::UnknownHandle)
    }

    /// Starts `op`: its first request is queued ([`Client::output`]), or
    /// it ends at once (an unknown key, no credit) with its outcome.
    pub fn start(&mut self, op: Op) -> Option<Result<Value, Failure>> {
        if self.busy() {
            return Some(Err(Failure::Busy));
        }
        match self.begin(op) {
            Ok(None) => None,
            Ok(Some(v)) => {
                self.job = Job::Idle;
                Some(Ok(v))
            }
            Err(f) => {
                self.job = Job::Idle;
                Some(Err(f))
            }
        }
    }

    fn begin(&mut self, op: Op) -> Result<Option<Value>, Failure> {
        let job = match op {
            Op::Connect => {
                let dialects = match self.cfg.dialect {
                    Some(d) => vec![d],
                    None => msg::ALL_DIALECTS.to_vec(),
                };
                let security_mode = msg::SIGNING_ENABLED
                    | if self.cfg.sign_required {
                        msg::SIGNING_REQUIRED
                    } else {
                        0
                    };
                let neg = msg::NegotiateRequest {
                    dialects: dialects.clone(),
                    security_mode,
                    client_guid: self.cfg.client_guid,
                    salt: self.cfg.salt,
                    // Offered always (a server that requires it then
                    // works); used when asked for or required.
                    encryption: true,
                };
                // What is offered: the pinned algorithm and cipher alone,
                // or all (the server chooses; the session uses its choice).
                let signing: Vec<u16> = match self.cfg.signing {
                    Some(a) => vec![a.id()],
                    None => sign::Algorithm::ALL.iter().map(|a| a.id()).collect(),
                };
                let ciphers = match self.cfg.cipher {
                    Some(c) => vec![c],
                    None => seal::ALL_CIPHERS.to_vec(),
                };
                let req = self.send(cmd::NEGOTIATE, &neg.encode_offering(&signing, &ciphers))?;
                Job::Negotiate { req, dialects }
            }
            Op::Create {
                key,
                name,
                options,
                disposition,
            } => {
                let directory = options & create::DIRECTORY_FILE != 0;
                let options = options & 0x00FF_FFFF;
                // What the server allows this user: files and directories alike.
                let mut body = create_request(&name, create::MAXIMUM_ALLOWED, disposition, options);
                if self.cfg.leases && !directory {
                    self.leases += 1;
                    let key = lease_key(&self.cfg.client_guid, self.leases);
                    request_lease(&mut body, self.dialect, key);
                }
                self.send(cmd::CREATE, &body)?;
                Job::Create { key }
            }
            Op::Close { key } => {
                let fid = self.opens.remove(&key).ok_or(Failure::UnknownHandle)?;
                self.send(cmd::CLOSE, &msg::close(&fid))?;
                Job::Single {
                    decode: |m| msg::decode_close(&m[HEADER_LEN..]).map_err(bad),
                }
            }
            Op::Read { key, offset, len } => {
                let fid = self.fid(key)?;
                self.data.clear();
                if len == 0 {
                    return Ok(Some(Value::Bytes(0)));
                }
                let chunk = len.min(self.chunk as usize);
                self.send(cmd::READ, &msg::read(&fid, offset, chunk as u32))?;
                Job::Read {
                    fid,
                    offset,
                    want: len,
                    chunk,
                }
            }
            Op::Write { key, offset, data } => {
                let fid = self.fid(key)?;
                if data.is_empty() {
                    return Ok(Some(Value::Bytes(0)));
                }
                let chunk = data.len().min(self.chunk as usize);
                self.send(cmd::WRITE, &msg::write(&fid, offset, &data[..chunk]))?;
                Job::Write {
                    fid,
                    offset,
                    data,
                    done: 0,
                    chunk,
                }
            }
            Op::QueryPath { name, class } => Job::Path(self.compound_job(
                &name,
                create::FILE_READ_ATTRIBUTES,
                create::OPEN,
                0,
                Act::QueryInfo(class),
            )?),
            Op::QueryFile { key, class } => {
                let fid = self.fid(key)?;
                self.send(cmd::QUERY_INFO, &query_file_info(&fid, class))?;
                Job::Single {
                    decode: |m| msg::decode_query_info(m).map(drop).map_err(bad),
                }
            }
            Op::QueryFs { class } => {
                let root = self.root;
                let len = msg::query_info_len(msg::INFO_FILESYSTEM, class);
                self.send(
                    cmd::QUERY_INFO,
                    &msg::query_info(&root, msg::INFO_FILESYSTEM, class, len),
                )?;
                Job::Single {
                    decode: |m| msg::decode_query_info(m).map(drop).map_err(bad),
                }
            }
            Op::SetFileInfo { key, class, time } => {
                let fid = self.fid(key)?;
                // The one class whose value an operation gives: the
                // others (an end of file, a disposition …) would need a
                // value no loadfile line carries.
                if class != msg::FILE_BASIC_INFORMATION {
                    return Err(Failure::Refused(format!(
                        "NT_STATUS_INVALID_INFO_CLASS (benchlab sets only FileBasicInformation, not class {class})"
                    )));
                }
                self.send(
                    cmd::SET_INFO,
                    &msg::set_info(&fid, msg::INFO_FILE, class, &msg::basic_info(time)),
                )?;
                Job::Single {
                    decode: |m| msg::decode_empty(&m[HEADER_LEN..]).map_err(bad),
                }
            }
            Op::Find { dir, mask, class } => {
                self.listing.clear();
                let access = create::FILE_READ_DATA | create::FILE_READ_ATTRIBUTES | create::SYNCHRONIZE;
                Job::Path(self.path_job(
                    &dir,
                    access,
                    create::OPEN,
                    create::DIRECTORY_FILE,
                    Act::List(mask, class),
                )?)
            }
            Op::Lock { key, offset, len, lock } => {
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
                self.send(cmd::LOCK, &msg::lock(&fid, &[range]))?;
                Job::Single {
                    decode: |m| msg::decode_empty(&m[HEADER_LEN..]).map_err(bad),
                }
            }
            Op::Flush { key } => {
                let fid = self.fid(key)?;
                self.send(cmd::FLUSH, &msg::flush(&fid))?;
                Job::Single {
                    decode: |m| msg::decode_empty(&m[HEADER_LEN..]).map_err(bad),
                }
            }
            Op::Unlink { name } => Job::Path(self.delete_job(&name, create::NON_DIRECTORY_FILE)?),
            Op::Rename { from, to } => {
                let access = create::DELETE | create::FILE_READ_ATTRIBUTES | create::SYNCHRONIZE;
                Job::Path(self.compound_job(&from, access, create::OPEN, 0, Act::Rename(to))?)
            }
            Op::Mkdir { name } => {
                let access = create::FILE_READ_ATTRIBUTES | create::SYNCHRONIZE;
                let mut w = self.compound_job(&name, access, create::CREATE, create::DIRECTORY_FILE, Act::Nothing)?;
                w.collision_ok = true;
                Job::Path(w)
            }
            Op::Deltree { name } => {
                let access = create::FILE_READ_DATA | create::FILE_READ_ATTRIBUTES | create::SYNCHRONIZE;
                let sub = self.path_job(
                    &name,
                    access,
                    create::OPEN,
                    create::DIRECTORY_FILE,
                    Act::List("*".into(), msg::FILE_BOTH_DIRECTORY_INFORMATION),
                )?;
                Job::Deltree {
                    stack: vec![Level {
                        dir: name,
                        entries: Vec::new(),
                        next: 0,
                    }],
                    sub,
                    state: Deltree::Listing,
                }
            }
            Op::Logoff => {
                let mut left: Vec<FileId> = self.opens.drain().map(|(_, f)| f).collect();
                left.push(self.root);
                let first = left.pop().unwrap_or(self.root);
                self.send(cmd::CLOSE, &msg::close(&first))?;
                Job::Logoff { left }
            }
        };
        self.job = job;
        Ok(None)
    }

    fn send_create(&mut self, name: &str, access: u32, disposition: u32, options: u32) -> Result<(), Failure> {
        self.send(cmd::CREATE, &create_request(name, access, disposition, options))
            .map(drop)
    }

    fn path_job(
        &mut self,
        name: &str,
        access: u32,
        disposition: u32,
        options: u32,
        act: Act,
    ) -> Result<WithOpen, Failure> {
        self.send_create(name, access, disposition, options)?;
        Ok(WithOpen::new(act, false))
    }

    /// Open, act, close as one compound: CREATE, the act on the file it
    /// opens (the related operations' file id, all ones), CLOSE.
    fn compound_job(
        &mut self,
        name: &str,
        access: u32,
        disposition: u32,
        options: u32,
        act: Act,
    ) -> Result<WithOpen, Failure> {
        const RELATED: FileId = [0xff; 16];
        let create = create_request(name, access, disposition, options);
        let close = msg::close(&RELATED);
        let middle = match &act {
            Act::QueryInfo(class) => Some((cmd::QUERY_INFO, query_file_info(&RELATED, *class))),
            Act::Rename(to) => Some((
                cmd::SET_INFO,
                msg::set_info(
                    &RELATED,
                    msg::INFO_FILE,
                    msg::FILE_RENAME_INFORMATION,
                    &msg::rename_info(to, false),
                ),
            )),
            Act::Nothing | Act::List(..) => None,
        };
        match &middle {
            Some((c, body)) => self.send_chain(&[(cmd::CREATE, &create), (*c, body), (cmd::CLOSE, &close)])?,
            None => self.send_chain(&[(cmd::CREATE, &create), (cmd::CLOSE, &close)])?,
        };
        Ok(WithOpen::new(act, true))
    }

    /// Deletes `name` (a file or a directory, as `options` says) by
    /// opening it delete-on-close.
    fn delete_job(&mut self, name: &str, options: u32) -> Result<WithOpen, Failure> {
        self.compound_job(
            name,
            create::DELETE | create::FILE_READ_ATTRIBUTES,
            create::OPEN,
            options | create::DELETE_ON_CLOSE,
            Act::Nothing,
        )
    }

    /// Queues `body` as `command`; the message (signed, not sealed) for
    /// the 3.1.1 preauth hash.
    fn send(&mut self, command: u16, body: &[u8]) -> Result<Vec<u8>, Failure> {
        self.send_chain(&[(command, body)])
    }

    /// Acknowledges a break: a request of its own, its answer read past
    /// whenever it comes (not an answer the operation waits for).
    fn send_ack(&mut self, body: &[u8]) -> Result<(), Failure> {
        let waiting = std::mem::take(&mut self.awaited);
        let interim = self.interim;
        let r = self.send_chain(&[(cmd::OPLOCK_BREAK, body)]);
        let sent = std::mem::replace(&mut self.awaited, waiting);
        self.interim = interim;
        self.acks.extend(sent);
        r.map(drop)
    }

    /// A break notification: acknowledged (when one is asked for and a
    /// credit is there to send it with) and counted.
    fn on_break(&mut self, body: &[u8]) -> Result<(), Failure> {
        self.wire.breaks += 1;
        let mut r = crate::Reader::new(body);
        match r.u16().map_err(bad)? {
            // An oplock break: acknowledged at the level it names.
            24 => {
                let b = msg::OplockBreak::decode(body).map_err(bad)?;
                let mut ack = Vec::with_capacity(24);
                ack.extend_from_slice(&24u16.to_le_bytes());
                ack.push(b.level);
                ack.extend_from_slice(&[0; 5]);
                ack.extend_from_slice(&b.file_id);
                if self.send_ack(&ack).is_ok() {
                    self.wire.oplock_breaks += 1;
                }
            }
            // A lease break ([MS-SMB2] 2.2.23.2): acknowledged with the
            // new state when the server asks for it.
            44 => {
                r.u16().map_err(bad)?;
                let flags = r.u32().map_err(bad)?;
                let key = r.bytes(16).map_err(bad)?.to_vec();
                r.u32().map_err(bad)?;
                let new_state = r.u32().map_err(bad)?;
                if flags & 1 != 0 {
                    let mut ack = Vec::with_capacity(36);
                    ack.extend_from_slice(&36u16.to_le_bytes());
                    ack.extend_from_slice(&[0; 6]);
                    ack.extend_from_slice(&key);
                    ack.extend_from_slice(&new_state.to_le_bytes());
                    ack.extend_from_slice(&[0; 8]);
                    if self.send_ack(&ack).is_ok() {
                        self.wire.lease_breaks += 1;
                    }
                }
            }
            n => return Err(bad(format!("a break notification of structure size {n}"))),
        }
        Ok(())
    }

    /// Queues `parts` as one compound of related requests ([MS-SMB2]
    /// 3.2.4.1.4): each part's NextCommand the 8-byte aligned offset of
    /// the next, every part after the first flagged related (it acts on
    /// the file the first part opens), each signed on its own, the whole
    /// chain sealed as one message; one credit each. One part is a plain
    /// request.
    fn send_chain(&mut self, parts: &[(u16, &[u8])]) -> Result<Vec<u8>, Failure> {
        let charge: u16 = if self.dialect == msg::DIALECT_202 { 0 } else { 1 };
        let cost = u64::from(charge.max(1));
        if self.credits < cost * parts.len() as u64 {
            return Err(Failure::NoCredit);
        }
        let mut m = Vec::new();
        for (i, (command, body)) in parts.iter().enumerate() {
            let id = self.next_id + i as u64 * cost;
            let mut h = Header::request(*command, id, charge, CREDITS_ASKED);
            h.session_id = self.session_id;
            h.tree_id = self.tree_id;
            let last = i + 1 == parts.len();
            let len = HEADER_LEN + body.len();
            let padded = if last { len } else { len.div_ceil(8) * 8 };
            if !last {
                h.next_command = padded as u32;
            }
            if i > 0 {
                h.flags |= crate::FLAG_RELATED;
            }
            let start = m.len();
            h.encode(&mut m);
            m.extend_from_slice(body);
            m.resize(start + padded, 0);
            if self.seal.is_none() {
                if let Some(k) = &self.signing_key {
                    k.sign(&mut m[start..]);
                }
            }
            self.awaited.push_back(id);
        }
        let wire = if let Some(keys) = &self.seal {
            let mut nonce = [0u8; 16];
            nonce[..8].copy_from_slice(&self.sealed.to_le_bytes());
            nonce[8..].copy_from_slice(&self.cfg.nonce_salt);
            self.sealed += 1;
            frame::encode(&seal::encrypt(keys, self.session_id, nonce, &m).map_err(bad)?)
        } else {
            frame::encode(&m)
        };
        self.wire.sent += wire.len() as u64;
        self.out.extend_from_slice(&wire);
        self.credits -= cost * parts.len() as u64;
        self.next_id += cost * parts.len() as u64;
        self.interim = 0;
        Ok(m)
    }

    /// Takes one frame received (the message after its 4-byte length
    /// prefix): the awaited answer moves the operation on; an oplock
    /// break or an interim answer is taken and waited past.
    pub fn on_frame(&mut self, frame: &[u8]) -> Progress {
        self.wire.received += 4 + frame.len() as u64;
        match self.take(frame) {
            Ok(None) => Progress::Pending,
            Ok(Some(Ok(v))) => self.finish(Ok(v)),
            Ok(Some(Err(f))) | Err(f) => self.finish(Err(f)),
        }
    }

    fn finish(&mut self, r: Result<Value, Failure>) -> Progress {
        self.job = Job::Idle;
        self.awaited.clear();
        Progress::Done(r)
    }

    /// The frame's outcome: `None` to wait on, or the operation's end.
    fn take(&mut self, frame: &[u8]) -> Result<Option<Result<Value, Failure>>, Failure> {
        let sealed = frame.starts_with(b"\xfdSMB");
        let opened;
        let m: &[u8] = if sealed {
            let keys = self
                .seal
                .as_ref()
                .ok_or_else(|| bad("a sealed answer to a session that seals nothing"))?;
            opened = seal::decrypt(keys, frame).map_err(bad)?;
            &opened
        } else {
            frame
        };
        // A compound's answers may come chained in one frame: each
        // message's NextCommand is the offset of the next.
        let mut at = 0;
        loop {
            let rest = &m[at..];
            let h = Header::decode(rest).map_err(bad)?;
            let next = h.next_command as usize;
            if next != 0 && (next < HEADER_LEN || next > rest.len()) {
                return Err(bad(format!("a chained answer's NextCommand {next} outside its frame")));
            }
            let one = if next == 0 { rest } else { &rest[..next] };
            if let Some(done) = self.take_one(&h, one, sealed)? {
                return Ok(Some(done));
            }
            if next == 0 {
                return Ok(None);
            }
            at += next;
        }
    }

    /// One message of a frame (`m`, its header `h`).
    fn take_one(&mut self, h: &Header, m: &[u8], sealed: bool) -> Result<Option<Result<Value, Failure>>, Failure> {
        let h = h.clone();
        self.credits += u64::from(h.credits);
        if h.message_id == UNSOLICITED && h.command == cmd::OPLOCK_BREAK {
            self.on_break(&m[HEADER_LEN..])?;
            return self.interim_one();
        }
        if let Some(i) = self.acks.iter().position(|&a| a == h.message_id) {
            // A break acknowledgement's answer (its final one: an interim
            // one keeps it awaited): nothing waits for it.
            if !(h.status == nt::PENDING && h.flags & FLAG_ASYNC != 0) {
                self.acks.swap_remove(i);
            }
            return self.interim_one();
        }
        let Some(&id) = self.awaited.front() else {
            return Err(bad(format!(
                "an answer to message {} while none was asked",
                h.message_id
            )));
        };
        if h.message_id != id {
            return Err(bad(format!(
                "an answer to message {} while {id} was asked",
                h.message_id
            )));
        }
        if h.status == nt::PENDING && h.flags & FLAG_ASYNC != 0 {
            return self.interim_one();
        }
        if let Some(k) = self.signing_key.as_ref().filter(|_| !sealed) {
            if h.flags & FLAG_SIGNED != 0 && !k.verify(m) {
                return Err(bad("a wrongly signed answer"));
            }
        }
        self.awaited.pop_front();
        let job = std::mem::replace(&mut self.job, Job::Idle);
        self.advance(job, &h, m)
    }

    fn interim_one(&mut self) -> Result<Option<Result<Value, Failure>>, Failure> {
        self.interim += 1;
        if self.interim > MAX_INTERIM {
            return Err(bad(format!("{MAX_INTERIM} interim answers and no final one")));
        }
        Ok(None)
    }

    /// Moves `job` on with the answer `h`/`m`; puts the job back when it
    /// goes on.
    fn advance(&mut self, job: Job, h: &Header, m: &[u8]) -> Result<Option<Result<Value, Failure>>, Failure> {
        let body = &m[HEADER_LEN.min(m.len())..];
        let next = match job {
            Job::Idle => return Err(bad("an answer with no operation in flight")),
            Job::Negotiate { req, dialects } => {
                self.negotiated(&req, &dialects, h, m).map_err(Failure::Refused)?;
                return Ok(None);
            }
            Job::SetupChallenge { req } => {
                self.challenged(&req, h, m).map_err(Failure::Refused)?;
                return Ok(None);
            }
            Job::SetupDone => {
                self.set_up(h, m).map_err(Failure::Refused)?;
                return Ok(None);
            }
            Job::TreeConnect => {
                self.tree_connected(h, body).map_err(Failure::Refused)?;
                return Ok(None);
            }
            Job::RootOpen => {
                if h.status != nt::SUCCESS {
                    return Err(Failure::Refused(format!("the share's root: {}", nt::name(h.status))));
                }
                self.root = msg::CreateResponse::decode(body)
                    .map_err(|e| Failure::Refused(format!("the share's root: {e}")))?
                    .file_id;
                return Ok(Some(Ok(Value::Done)));
            }
            Job::Create { key } => {
                status_only(h.status)?;
                let fid = msg::CreateResponse::decode(body).map_err(bad)?.file_id;
                if let Some(old) = self.opens.insert(key, fid) {
                    // The loadfile reused its key: the old open is closed,
                    // and that close's answer ends this operation.
                    self.send(cmd::CLOSE, &msg::close(&old))?;
                    Job::Reclose
                } else {
                    return Ok(Some(Ok(Value::Done)));
                }
            }
            Job::Reclose => return Ok(Some(Ok(Value::Done))),
            Job::Single { decode } => {
                status_only(h.status)?;
                decode(m)?;
                return Ok(Some(Ok(Value::Done)));
            }
            Job::Read {
                fid,
                offset,
                want,
                chunk,
            } => {
                match h.status {
                    nt::SUCCESS => {}
                    nt::END_OF_FILE => return Ok(Some(Ok(Value::Bytes(self.data.len())))),
                    s => return Err(Failure::Status(s)),
                }
                let got = msg::decode_read(m).map_err(bad)?;
                let got = &got[..got.len().min(chunk)];
                self.data.extend_from_slice(got);
                let done = self.data.len();
                if got.len() < chunk || done >= want {
                    return Ok(Some(Ok(Value::Bytes(done))));
                }
                let chunk = (want - done).min(self.chunk as usize);
                self.send(cmd::READ, &msg::read(&fid, offset + done as u64, chunk as u32))?;
                Job::Read {
                    fid,
                    offset,
                    want,
                    chunk,
                }
            }
            Job::Write {
                fid,
                offset,
                data,
                done,
                chunk,
            } => {
                status_only(h.status)?;
                let w = msg::decode_write(body).map_err(bad)? as usize;
                let done = done + w.min(chunk);
                if w < chunk || done >= data.len() {
                    return Ok(Some(Ok(Value::Bytes(done))));
                }
                let chunk = (data.len() - done).min(self.chunk as usize);
                self.send(
                    cmd::WRITE,
                    &msg::write(&fid, offset + done as u64, &data[done..done + chunk]),
                )?;
                Job::Write {
                    fid,
                    offset,
                    data,
                    done,
                    chunk,
                }
            }
            Job::Path(mut w) => match self.path_step(&mut w, h, m)? {
                Some(r) => {
                    if let Act::List(..) = w.act {
                        self.listing = std::mem::take(&mut w.listing);
                    }
                    return Ok(Some(r));
                }
                None => Job::Path(w),
            },
            Job::Deltree { stack, sub, state } => return self.deltree_step(stack, sub, state, h, m),
            Job::Logoff { mut left } => {
                // Every close is sent whatever the last one answered.
                match left.pop() {
                    Some(fid) => {
                        self.send(cmd::CLOSE, &msg::close(&fid))?;
                        Job::Logoff { left }
                    }
                    None if h.command == cmd::LOGOFF => return Ok(Some(status_only(h.status).map(|_| Value::Done))),
                    None => {
                        self.send(cmd::LOGOFF, &msg::empty_request())?;
                        Job::Logoff { left }
                    }
                }
            }
        };
        self.job = next;
        Ok(None)
    }

    /// Open, act, close: `None` while it goes on.
    fn path_step(&mut self, w: &mut WithOpen, h: &Header, m: &[u8]) -> Result<Option<Result<Value, Failure>>, Failure> {
        let body = &m[HEADER_LEN.min(m.len())..];
        if w.compound {
            return self.compound_step(w, h, m);
        }
        match w.phase {
            Phase::Open => {
                if h.status == nt::OBJECT_NAME_COLLISION && w.collision_ok {
                    return Ok(Some(Ok(Value::Done)));
                }
                status_only(h.status)?;
                w.fid = msg::CreateResponse::decode(body).map_err(bad)?.file_id;
                let fid = w.fid;
                match &w.act {
                    Act::Nothing => {
                        w.result = Some(Ok(Value::Done));
                        w.phase = Phase::Close;
                        self.send(cmd::CLOSE, &msg::close(&fid))?;
                    }
                    Act::QueryInfo(class) => {
                        w.phase = Phase::Act;
                        let q = query_file_info(&fid, *class);
                        self.send(cmd::QUERY_INFO, &q)?;
                    }
                    Act::Rename(to) => {
                        w.phase = Phase::Act;
                        let info = msg::rename_info(to, false);
                        self.send(
                            cmd::SET_INFO,
                            &msg::set_info(&fid, msg::INFO_FILE, msg::FILE_RENAME_INFORMATION, &info),
                        )?;
                    }
                    Act::List(mask, class) => {
                        w.phase = Phase::Act;
                        let q = msg::query_directory(&fid, *class, msg::RESTART_SCANS, mask, LISTING_BYTES);
                        self.send(cmd::QUERY_DIRECTORY, &q)?;
                    }
                }
                Ok(None)
            }
            Phase::Act => {
                let fid = w.fid;
                let r: Result<bool, Failure> = match &w.act {
                    Act::List(mask, class) => match h.status {
                        nt::NO_MORE_FILES => Ok(true),
                        nt::SUCCESS => {
                            let class = *class;
                            let buf = msg::decode_query_directory(m).map_err(bad)?;
                            for (name, attrs) in msg::directory_entries(buf, class).map_err(bad)? {
                                if name != "." && name != ".." {
                                    w.listing.push((name, attrs));
                                }
                            }
                            if w.listing.len() > MAX_LISTING {
                                Err(bad(format!("a listing of more than {MAX_LISTING} entries")))
                            } else {
                                let q = msg::query_directory(&fid, class, 0, mask, LISTING_BYTES);
                                self.send(cmd::QUERY_DIRECTORY, &q)?;
                                return Ok(None);
                            }
                        }
                        s => Err(Failure::Status(s)),
                    },
                    Act::QueryInfo(_) => status_only(h.status)
                        .and_then(|_| msg::decode_query_info(m).map(drop).map_err(bad))
                        .map(|_| true),
                    _ => status_only(h.status)
                        .and_then(|_| msg::decode_empty(body).map_err(bad))
                        .map(|_| true),
                };
                w.result = Some(r.map(|_| Value::Done));
                w.phase = Phase::Close;
                self.send(cmd::CLOSE, &msg::close(&fid))?;
                Ok(None)
            }
            Phase::Close => {
                let closed = status_only(h.status).and_then(|_| msg::decode_close(body).map_err(bad));
                let r = w.result.take().unwrap_or(Ok(Value::Done));
                Ok(Some(r.and_then(|v| closed.map(|_| v))))
            }
        }
    }

    /// A compound's answers, one by one: the first status other than
    /// success is the operation's (a failed CREATE fails the related
    /// parts after it, which still answer); the close's counts only when
    /// all before it succeeded.
    fn compound_step(
        &mut self,
        w: &mut WithOpen,
        h: &Header,
        m: &[u8],
    ) -> Result<Option<Result<Value, Failure>>, Failure> {
        let body = &m[HEADER_LEN.min(m.len())..];
        match w.phase {
            Phase::Open => {
                if h.status == nt::OBJECT_NAME_COLLISION && w.collision_ok {
                    w.result = Some(Ok(Value::Done));
                } else if h.status != nt::SUCCESS {
                    w.result = Some(Err(Failure::Status(h.status)));
                } else {
                    msg::CreateResponse::decode(body).map_err(bad)?;
                }
                w.phase = if w.act == Act::Nothing {
                    Phase::Close
                } else {
                    Phase::Act
                };
                Ok(None)
            }
            Phase::Act => {
                if w.result.is_none() {
                    let r = match w.act {
                        Act::QueryInfo(_) => {
                            status_only(h.status).and_then(|_| msg::decode_query_info(m).map(drop).map_err(bad))
                        }
                        _ => status_only(h.status).and_then(|_| msg::decode_empty(body).map_err(bad)),
                    };
                    if r.is_err() {
                        w.result = Some(r.map(|_| Value::Done));
                    }
                }
                w.phase = Phase::Close;
                Ok(None)
            }
            Phase::Close => {
                let closed = status_only(h.status).and_then(|_| msg::decode_close(body).map_err(bad));
                Ok(Some(match w.result.take() {
                    Some(r) => r,
                    None => closed.map(|_| Value::Done),
                }))
            }
        }
    }

    /// A deltree: list a level, delete its files, descend into its
    /// directories, delete each emptied directory; depth-first, one
    /// request at a time.
    fn deltree_step(
        &mut self,
        mut stack: Vec<Level>,
        mut sub: WithOpen,
        state: Deltree,
        h: &Header,
        m: &[u8],
    ) -> Result<Option<Result<Value, Failure>>, Failure> {
        let Some(r) = self.path_step(&mut sub, h, m)? else {
            self.job = Job::Deltree { stack, sub, state };
            return Ok(None);
        };
        r?;
        if let (Deltree::Listing, Some(top)) = (state, stack.last_mut()) {
            top.entries = std::mem::take(&mut sub.listing);
        }
        // The next step: the next entry of the deepest level, or that
        // level's own directory once it is empty.
        let Some(top) = stack.last_mut() else {
            return Ok(Some(Ok(Value::Done)));
        };
        let (sub, state) = if top.next < top.entries.len() {
            let (name, attrs) = top.entries[top.next].clone();
            top.next += 1;
            let p = if top.dir.is_empty() {
                name
            } else {
                format!("{}\\{name}", top.dir)
            };
            if attrs & create::ATTRIBUTE_DIRECTORY != 0 {
                if stack.len() > MAX_DELTREE_DEPTH {
                    return Err(Failure::TooDeep);
                }
                let access = create::FILE_READ_DATA | create::FILE_READ_ATTRIBUTES | create::SYNCHRONIZE;
                let all = Act::List("*".into(), msg::FILE_BOTH_DIRECTORY_INFORMATION);
                let sub = self.path_job(&p, access, create::OPEN, create::DIRECTORY_FILE, all)?;
                stack.push(Level {
                    dir: p,
                    entries: Vec::new(),
                    next: 0,
                });
                (sub, Deltree::Listing)
            } else {
                (self.delete_job(&p, create::NON_DIRECTORY_FILE)?, Deltree::Deleting)
            }
        } else {
            // This level is empty: delete its directory, then go on with
            // its parent's next entry (the top directory's delete ends
            // the operation).
            let dir = std::mem::take(&mut top.dir);
            stack.pop();
            (self.delete_job(&dir, create::DIRECTORY_FILE)?, Deltree::Deleting)
        };
        self.job = Job::Deltree { stack, sub, state };
        Ok(None)
    }

    fn negotiated(&mut self, req: &[u8], offered: &[u16], h: &Header, m: &[u8]) -> Result<(), String> {
        if h.status != nt::SUCCESS {
            return Err(format!("NEGOTIATE answered {}", nt::name(h.status)));
        }
        let n = msg::NegotiateResponse::decode(m).map_err(|e| format!("NEGOTIATE: {e}"))?;
        if !offered.contains(&n.dialect) {
            return Err(format!(
                "the server chose dialect {}, not offered",
                msg::dialect_name(n.dialect)
            ));
        }
        self.dialect = n.dialect;
        self.chunk = CHUNK.min(n.max_read.max(1)).min(n.max_write.max(1));
        let is_311 = n.dialect == msg::DIALECT_311;
        let cipher = match n.cipher {
            Some(c) if is_311 && c != 0 => Some(c),
            _ if !is_311 && n.dialect >= msg::DIALECT_300 && n.capabilities & msg::CAP_ENCRYPTION != 0 => {
                Some(seal::AES_128_CCM)
            }
            _ => None,
        };
        let algorithm = sign::Algorithm::negotiated(n.dialect, n.signing_algorithm).map_err(|e| e.to_string())?;
        // A pinned algorithm or cipher the session would not use is
        // refused, never replaced by another one silently.
        if let Some(a) = self.cfg.signing.filter(|a| *a != algorithm) {
            return Err(format!(
                "signing={} was asked, but at dialect {} the server negotiated {}",
                a.name(),
                msg::dialect_name(n.dialect),
                algorithm.name()
            ));
        }
        if let Some(want) = self.cfg.cipher.filter(|w| cipher != Some(*w)) {
            return Err(format!(
                "cipher={} was asked, but at dialect {} the server negotiated {}",
                seal::cipher_name(want),
                msg::dialect_name(n.dialect),
                cipher.map_or("no encryption".to_string(), seal::cipher_name)
            ));
        }
        self.algorithm = Some(algorithm);
        self.cipher_offered = cipher;
        if is_311 {
            self.preauth.update(req);
            self.preauth.update(m);
        }
        self.sign_all = self.cfg.sign_required || n.security_mode & msg::SIGNING_REQUIRED != 0;
        let setup_mode = if self.sign_all { 2 } else { 1 };
        // Round 1: NTLMSSP NEGOTIATE, answered with its CHALLENGE.
        let first = auth::spnego_init(&auth::negotiate_message(auth::CLIENT_FLAGS));
        let req = self
            .send(cmd::SESSION_SETUP, &msg::session_setup(setup_mode, &first))
            .map_err(|f| f.to_string())?;
        self.job = Job::SetupChallenge { req };
        Ok(())
    }

    fn challenged(&mut self, req: &[u8], h: &Header, m: &[u8]) -> Result<(), String> {
        if h.status != nt::MORE_PROCESSING_REQUIRED {
            return Err(format!("SESSION_SETUP answered {}", nt::name(h.status)));
        }
        self.session_id = h.session_id;
        let is_311 = self.dialect == msg::DIALECT_311;
        if is_311 {
            self.preauth.update(req);
            self.preauth.update(m);
        }
        let s = msg::SessionSetupResponse::decode(m).map_err(|e| format!("SESSION_SETUP: {e}"))?;
        let token = auth::spnego_response_token(&s.security_buffer).map_err(|e| format!("SESSION_SETUP: {e}"))?;
        let challenge = auth::Challenge::decode(&token).map_err(|e| format!("SESSION_SETUP: {e}"))?;
        // Round 2: AUTHENTICATE (NTLMv2).
        let (am, key) = auth::authenticate_message(
            &self.cfg.credentials,
            &challenge,
            self.cfg.client_challenge,
            self.cfg.time,
        );
        let setup_mode = if self.sign_all { 2 } else { 1 };
        let req = self
            .send(
                cmd::SESSION_SETUP,
                &msg::session_setup(setup_mode, &auth::spnego_resp(&am)),
            )
            .map_err(|f| f.to_string())?;
        if is_311 {
            self.preauth.update(&req);
        }
        let algorithm = self.algorithm.ok_or("SESSION_SETUP before NEGOTIATE")?;
        self.signing_key = key.map(|k| sign::Signer::new(self.dialect, algorithm, &k, &self.preauth.0));
        self.seal_keys = key
            .zip(self.cipher_offered)
            .map(|(k, cipher)| Keys::derive(self.dialect, cipher, &k, &self.preauth.0));
        // The final answer is signed with the session's key (3.x always).
        self.job = Job::SetupDone;
        Ok(())
    }

    fn set_up(&mut self, h: &Header, m: &[u8]) -> Result<(), String> {
        if h.status != nt::SUCCESS {
            return Err(format!("SESSION_SETUP answered {}", nt::name(h.status)));
        }
        let s = msg::SessionSetupResponse::decode(m).map_err(|e| format!("SESSION_SETUP: {e}"))?;
        self.guest = s.flags & (msg::SESSION_FLAG_IS_GUEST | msg::SESSION_FLAG_IS_NULL) != 0;
        if self.guest {
            if self.sign_all {
                return Err("signing is required but the server made the session a guest's (no key to sign with): give a user and password".into());
            }
            self.signing_key = None;
        }
        // Sealing: asked for (`encrypt=require`, or `request` where the
        // dialect has it) or required by the server for the session.
        let must_seal = self.cfg.encrypt == Encrypt::Require || s.flags & msg::SESSION_FLAG_ENCRYPT_DATA != 0;
        if must_seal || self.cfg.encrypt == Encrypt::Request {
            match (&self.seal_keys, self.guest) {
                (Some(k), false) => self.seal = Some(k.clone()),
                _ if must_seal => {
                    return Err(format!(
                        "encryption is required but the session at {} has no cipher or no key (3.0 or later and a user and password are needed)",
                        msg::dialect_name(self.dialect)
                    ))
                }
                _ => {}
            }
        }
        let tree = format!("\\\\{}\\{}", self.cfg.host, self.cfg.share);
        // At 3.1.1 a user's TREE_CONNECT is signed whatever signing the
        // session runs with ([MS-SMB2] 3.2.4.2.4: it protects the
        // negotiation); other requests are signed only when required.
        if self.dialect != msg::DIALECT_311 && !self.sign_all {
            self.signing_key = None;
        }
        self.send(cmd::TREE_CONNECT, &msg::tree_connect(&tree))
            .map_err(|f| format!("TREE_CONNECT {tree}: {f}"))?;
        self.job = Job::TreeConnect;
        Ok(())
    }

    fn tree_connected(&mut self, h: &Header, body: &[u8]) -> Result<(), String> {
        let tree = format!("\\\\{}\\{}", self.cfg.host, self.cfg.share);
        if h.status != nt::SUCCESS {
            return Err(format!("TREE_CONNECT {tree}: {}", nt::name(h.status)));
        }
        self.tree_id = h.tree_id;
        let t = msg::TreeConnectResponse::decode(body).map_err(|e| format!("TREE_CONNECT {tree}: {e}"))?;
        // A share that requires encryption: everything after is sealed.
        if t.share_flags & msg::SHAREFLAG_ENCRYPT_DATA != 0 && self.seal.is_none() {
            self.seal = Some(
                self.seal_keys
                    .clone()
                    .filter(|_| !self.guest)
                    .ok_or("the share requires encryption and the session cannot seal")?,
            );
        }
        if !self.sign_all {
            self.signing_key = None;
        }
        self.send_create(
            "",
            create::FILE_READ_DATA | create::FILE_READ_ATTRIBUTES | create::SYNCHRONIZE,
            create::OPEN,
            create::DIRECTORY_FILE,
        )
        .map_err(|f| format!("the share's root: {f}"))?;
        self.job = Job::RootOpen;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FLAG_RESPONSE;

    fn client() -> Client {
        Client::new(Config {
            host: "h".into(),
            share: "s".into(),
            credentials: Credentials::Anonymous,
            dialect: None,
            sign_required: false,
            encrypt: Encrypt::AsServerSays,
            client_guid: [0; 16],
            salt: [0; 32],
            client_challenge: [0; 8],
            nonce_salt: [0; 8],
            time: 0,
            leases: true,
            signing: None,
            cipher: None,
        })
    }

    fn answer(command: u16, id: u64, credits: u16, status: u32, body: &[u8]) -> Vec<u8> {
        let mut h = Header::request(command, id, 1, credits);
        h.flags = FLAG_RESPONSE;
        h.status = status;
        let mut m = Vec::new();
        h.encode(&mut m);
        m.extend_from_slice(body);
        m
    }

    /// Credits: a request is never queued past the window granted; with
    /// none left the operation ends at once as NoCredit, nothing queued;
    /// what an answer grants opens the window again; an oplock break on
    /// the way is counted and waited past; the wire bytes are every frame's.
    #[test]
    fn credits_are_honoured_and_breaks_waited_past() {
        let mut c = client();
        assert_eq!(
            c.start(Op::QueryFs {
                class: msg::FILE_FS_FULL_SIZE_INFORMATION
            }),
            None
        );
        let first = c.output().len();
        let q = msg::query_info(&[0; 16], msg::INFO_FILESYSTEM, msg::FILE_FS_FULL_SIZE_INFORMATION, 64);
        assert_eq!(first, 4 + HEADER_LEN + q.len());
        assert_eq!(c.credits(), 0);
        c.sent(first);
        let mut brk = vec![24u8, 0, 1, 0, 0, 0, 0, 0];
        brk.extend_from_slice(&[5; 16]);
        let brk = answer(cmd::OPLOCK_BREAK, UNSOLICITED, 0, 0, &brk);
        assert_eq!(c.on_frame(&brk), Progress::Pending);
        let denied = answer(cmd::QUERY_INFO, 0, 0, nt::ACCESS_DENIED, &[9, 0, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(
            c.on_frame(&denied),
            Progress::Done(Err(Failure::Status(nt::ACCESS_DENIED)))
        );
        // No credit granted: the next operation is refused unsent.
        assert_eq!(
            c.start(Op::QueryFs {
                class: msg::FILE_FS_FULL_SIZE_INFORMATION
            }),
            Some(Err(Failure::NoCredit))
        );
        assert!(c.output().is_empty());
        assert!(!c.busy());
        assert_eq!(
            c.wire(),
            Wire {
                sent: first as u64,
                received: (4 + brk.len() + 4 + denied.len()) as u64,
                breaks: 1,
                lease_breaks: 0,
                oplock_breaks: 0,
            }
        );
        // An unknown key never reaches the wire.
        assert_eq!(c.start(Op::Flush { key: 7 }), Some(Err(Failure::UnknownHandle)));
    }

    /// A path operation goes as one compound: CREATE then a related
    /// CLOSE in one frame (8-byte aligned NextCommand, the related flag,
    /// one credit each); answers chained in one frame or in several end
    /// it alike, the CREATE's failure winning over the CLOSE's.
    #[test]
    fn an_unlink_is_one_compound_and_its_chained_answers_end_it() {
        let mut c = client();
        assert_eq!(
            c.start(Op::QueryFs {
                class: msg::FILE_FS_FULL_SIZE_INFORMATION
            }),
            None
        );
        let n = c.output().len();
        c.sent(n);
        let granted = answer(cmd::QUERY_INFO, 0, 10, nt::ACCESS_DENIED, &[9, 0, 0, 0, 0, 0, 0, 0, 0]);
        assert!(matches!(c.on_frame(&granted), Progress::Done(Err(_))));
        for chained in [true, false] {
            let first = c.wire().sent;
            assert_eq!(c.start(Op::Unlink { name: "a\\b".into() }), None);
            let out = c.output().to_vec();
            c.sent(out.len());
            assert_eq!(c.wire().sent - first, out.len() as u64);
            let m = &out[4..];
            assert_eq!(u32::from_be_bytes([0, out[1], out[2], out[3]]) as usize, m.len());
            let h1 = Header::decode(m).unwrap();
            let next = h1.next_command as usize;
            assert_eq!(
                (h1.command, next % 8, h1.flags & crate::FLAG_RELATED),
                (cmd::CREATE, 0, 0)
            );
            let h2 = Header::decode(&m[next..]).unwrap();
            assert_eq!(
                (h2.command, h2.next_command, h2.message_id),
                (cmd::CLOSE, 0, h1.message_id + 1)
            );
            assert_ne!(h2.flags & crate::FLAG_RELATED, 0);
            let mut a1 = answer(
                cmd::CREATE,
                h1.message_id,
                1,
                nt::OBJECT_NAME_NOT_FOUND,
                &[9, 0, 0, 0, 0, 0, 0, 0, 0],
            );
            let a2 = answer(
                cmd::CLOSE,
                h2.message_id,
                1,
                nt::OBJECT_NAME_NOT_FOUND,
                &[9, 0, 0, 0, 0, 0, 0, 0, 0],
            );
            let done = Progress::Done(Err(Failure::Status(nt::OBJECT_NAME_NOT_FOUND)));
            if chained {
                a1.resize(80, 0);
                a1[20..24].copy_from_slice(&80u32.to_le_bytes());
                a1.extend_from_slice(&a2);
                assert_eq!(c.on_frame(&a1), done);
            } else {
                assert_eq!(c.on_frame(&a1), Progress::Pending);
                assert_eq!(c.on_frame(&a2), done);
            }
            assert!(!c.busy());
        }
    }

    /// A lease break that asks for an acknowledgement, arriving while an
    /// operation waits, is acknowledged at once (LEASE_BREAK_ACK with the
    /// new state, its own message id and credit) and counted; the ack's
    /// answer is read past; the operation ends with its own answer.
    #[test]
    fn a_lease_break_is_acknowledged_and_counted() {
        let mut c = client();
        assert_eq!(
            c.start(Op::QueryFs {
                class: msg::FILE_FS_FULL_SIZE_INFORMATION
            }),
            None
        );
        let n = c.output().len();
        c.sent(n);
        let mut brk = vec![44u8, 0, 0, 0, 1, 0, 0, 0];
        brk.extend_from_slice(&[7; 16]);
        brk.extend_from_slice(&7u32.to_le_bytes());
        brk.extend_from_slice(&5u32.to_le_bytes());
        brk.extend_from_slice(&[0; 12]);
        // The break grants the credit the ack is sent with.
        assert_eq!(
            c.on_frame(&answer(cmd::OPLOCK_BREAK, UNSOLICITED, 1, 0, &brk)),
            Progress::Pending
        );
        let ack = c.output().to_vec();
        assert_eq!(ack.len(), 4 + HEADER_LEN + 36);
        let h = Header::decode(&ack[4..]).unwrap();
        assert_eq!((h.command, h.message_id), (cmd::OPLOCK_BREAK, 1));
        assert_eq!(&ack[4 + HEADER_LEN + 8..4 + HEADER_LEN + 24], &[7; 16]);
        assert_eq!(&ack[4 + HEADER_LEN + 24..4 + HEADER_LEN + 28], &5u32.to_le_bytes());
        c.sent(ack.len());
        assert_eq!(
            c.on_frame(&answer(cmd::OPLOCK_BREAK, 1, 1, 0, &[36, 0])),
            Progress::Pending
        );
        let denied = answer(cmd::QUERY_INFO, 0, 1, nt::ACCESS_DENIED, &[9, 0, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(
            c.on_frame(&denied),
            Progress::Done(Err(Failure::Status(nt::ACCESS_DENIED)))
        );
        assert_eq!(
            (c.wire().breaks, c.wire().lease_breaks, c.wire().oplock_breaks),
            (1, 1, 0)
        );
    }

    /// A lease is asked for on a file's CREATE: oplock level "lease" and
    /// an `RqLs` context (version 2 at 3.x), 8-byte aligned.
    #[test]
    fn a_create_asks_for_a_lease() {
        let mut body = create_request("a", 0, 1, 0);
        request_lease(&mut body, msg::DIALECT_311, [3; 16]);
        assert_eq!(body[3], 0xFF);
        let off = u32::from_le_bytes(body[48..52].try_into().unwrap()) as usize - HEADER_LEN;
        let len = u32::from_le_bytes(body[52..56].try_into().unwrap()) as usize;
        assert_eq!((off % 8, len, body.len()), (0, 24 + 52, off + 24 + 52));
        assert_eq!(&body[off + 16..off + 20], b"RqLs");
        assert_eq!(&body[off + 24..off + 40], &[3; 16]);
        let mut old = create_request("a", 0, 1, 0);
        request_lease(&mut old, msg::DIALECT_202, [3; 16]);
        assert_eq!((old[3], old.len()), (0x09, create_request("a", 0, 1, 0).len()));
    }

    /// The messages of one frame queued (its NetBIOS prefix stripped,
    /// each chained message apart).
    fn messages(out: &[u8]) -> Vec<(Header, Vec<u8>)> {
        let mut m = &out[4..];
        let mut v = Vec::new();
        loop {
            let h = Header::decode(m).unwrap();
            let next = h.next_command as usize;
            let one = if next == 0 { m } else { &m[..next] };
            v.push((h, one[HEADER_LEN..].to_vec()));
            if next == 0 {
                return v;
            }
            m = &m[next..];
        }
    }

    /// A CREATE's successful answer, opening file id [`1; 16`].
    fn created(id: u64) -> Vec<u8> {
        let mut b = vec![89u8, 0, 0, 0, 1, 0, 0, 0];
        b.extend_from_slice(&[0; 56]);
        b.extend_from_slice(&[1; 16]);
        b.extend_from_slice(&[0; 9]);
        answer(cmd::CREATE, id, 8, 0, &b)
    }

    /// Each query, set and listing goes out with the information class
    /// its operation names (not one fixed class), and a query asks an
    /// OutputBufferLength its class fits in: a path query's QUERY_INFO in
    /// its compound, a file's and the file system's on their own, the set
    /// with FileBasicInformation's 40 bytes, a listing's QUERY_DIRECTORY
    /// after the directory's CREATE; a set of a class benchlab cannot
    /// fill is refused unsent.
    #[test]
    fn info_classes_go_out_as_the_operation_names_them() {
        let mut c = client();
        c.credits = 64;
        c.opens.insert(1, [3; 16]);
        let cases = [
            (
                Op::QueryPath {
                    name: "a".into(),
                    class: msg::FILE_ATTRIBUTE_TAG_INFORMATION,
                },
                1,
                (msg::INFO_FILE, 35, 8),
            ),
            (
                Op::QueryPath {
                    name: "a".into(),
                    class: msg::FILE_BASIC_INFORMATION,
                },
                1,
                (msg::INFO_FILE, 4, 40),
            ),
            (
                Op::QueryFile {
                    key: 1,
                    class: msg::FILE_STANDARD_INFORMATION,
                },
                0,
                (msg::INFO_FILE, 5, 24),
            ),
            (
                Op::QueryFile {
                    key: 1,
                    class: msg::FILE_ALL_INFORMATION,
                },
                0,
                (msg::INFO_FILE, 18, msg::INFO_BYTES),
            ),
            (
                Op::QueryFs {
                    class: msg::FILE_FS_SIZE_INFORMATION,
                },
                0,
                (msg::INFO_FILESYSTEM, 3, 24),
            ),
            (
                Op::QueryFs {
                    class: msg::FILE_FS_VOLUME_INFORMATION,
                },
                0,
                (msg::INFO_FILESYSTEM, 1, msg::INFO_BYTES),
            ),
        ];
        for (op, at, (info_type, class, len)) in cases {
            let what = format!("{op:?}");
            assert_eq!(c.start(op), None, "{what}");
            let out = c.output().to_vec();
            c.sent(out.len());
            let m = messages(&out);
            let (h, body) = &m[at];
            assert_eq!(h.command, cmd::QUERY_INFO, "{what}");
            assert_eq!((body[2], body[3]), (info_type, class), "{what}");
            assert_eq!(u32::from_le_bytes(body[4..8].try_into().unwrap()), len, "{what}");
            // Each answer ends the operation or moves it on; failing the
            // first ends a compound with its later parts' answers.
            let denied = [9, 0, 0, 0, 0, 0, 0, 0, 0];
            for (h, _) in &m {
                let _ = c.on_frame(&answer(h.command, h.message_id, 8, nt::ACCESS_DENIED, &denied));
            }
            assert!(!c.busy(), "{what}");
        }
        // The set: FileBasicInformation, 40 bytes, its times the op's.
        let set = Op::SetFileInfo {
            key: 1,
            class: msg::FILE_BASIC_INFORMATION,
            time: 0x0102_0304_0506_0708,
        };
        assert_eq!(c.start(set), None);
        let out = c.output().to_vec();
        c.sent(out.len());
        let (h, body) = &messages(&out)[0];
        assert_eq!((h.command, body[2], body[3]), (cmd::SET_INFO, msg::INFO_FILE, 4));
        assert_eq!(u32::from_le_bytes(body[4..8].try_into().unwrap()), 40);
        assert_eq!(&body[32..40], &0x0102_0304_0506_0708u64.to_le_bytes());
        assert_eq!(
            c.on_frame(&answer(cmd::SET_INFO, h.message_id, 8, 0, &[2, 0])),
            Progress::Done(Ok(Value::Done))
        );
        let eof = Op::SetFileInfo {
            key: 1,
            class: msg::FILE_END_OF_FILE_INFORMATION,
            time: 0,
        };
        assert!(matches!(c.start(eof), Some(Err(Failure::Refused(_)))));
        assert!(c.output().is_empty());
        // The listing: CREATE, then QUERY_DIRECTORY of the class asked.
        for class in [msg::FILE_NAMES_INFORMATION, msg::FILE_ID_FULL_DIRECTORY_INFORMATION] {
            let find = Op::Find {
                dir: "d".into(),
                mask: "*.txt".into(),
                class,
            };
            assert_eq!(c.start(find), None);
            let out = c.output().to_vec();
            c.sent(out.len());
            let (h, _) = &messages(&out)[0];
            assert_eq!(h.command, cmd::CREATE);
            assert_eq!(c.on_frame(&created(h.message_id)), Progress::Pending);
            let out = c.output().to_vec();
            c.sent(out.len());
            let (h, body) = &messages(&out)[0];
            assert_eq!((h.command, body[2]), (cmd::QUERY_DIRECTORY, class));
            let none = answer(
                cmd::QUERY_DIRECTORY,
                h.message_id,
                8,
                nt::NO_MORE_FILES,
                &[9, 0, 0, 0, 0, 0, 0, 0, 0],
            );
            assert_eq!(c.on_frame(&none), Progress::Pending);
            let out = c.output().to_vec();
            c.sent(out.len());
            let (h, _) = &messages(&out)[0];
            assert_eq!(h.command, cmd::CLOSE);
            let mut closed = vec![60u8, 0];
            closed.extend_from_slice(&[0; 58]);
            assert_eq!(
                c.on_frame(&answer(cmd::CLOSE, h.message_id, 8, 0, &closed)),
                Progress::Done(Ok(Value::Done))
            );
        }
    }

    /// An answer to a message not asked is the server's error.
    #[test]
    fn an_answer_to_another_message_is_a_bad_answer() {
        let mut c = client();
        assert_eq!(
            c.start(Op::QueryFs {
                class: msg::FILE_FS_FULL_SIZE_INFORMATION
            }),
            None
        );
        let p = c.on_frame(&answer(cmd::QUERY_INFO, 9, 1, 0, &[]));
        assert!(matches!(p, Progress::Done(Err(Failure::BadAnswer(_)))), "{p:?}");
        assert!(!c.busy());
    }
}
