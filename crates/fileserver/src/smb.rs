//! SMB servers (`smb://[USER[:PASS]@]HOST[:PORT]/SHARE[?encrypt=…&sign=…]`),
//! through Samba's own client library, libsmbclient.
//!
//! Why libsmbclient and not the pure-Rust `smb` crate: see the comment on
//! [`SmbBackend`] (measured against smbd on loopback).
//!
//! libsmbclient is loaded when the first SMB target connects (dlopen of
//! `libsmbclient.so.0`), not linked: benchlab builds and runs its web and
//! file:// suites on a machine without Samba's libraries, and only an
//! smb:// target needs the `libsmbclient` package.
//!
//! Threads: libsmbclient's global state is not thread-safe, so every
//! context is made and initialised under one lock, after
//! `smbc_thread_posix()` where the library has it; after that each user drives its own context
//! (its own connection) from its own thread only — the way to real
//! concurrency that a wrapper serialising every call behind one global
//! mutex (as `pavao` does) does not give.

use crate::backend::{wildcard_match, FileBackend};
use crate::status::Status;
use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::sync::{Mutex, OnceLock};

/// A parsed `smb://` target. Its Debug and Display show the password as
/// `***`; only [`SmbUrl::with_password`] writes it.
#[derive(Clone, PartialEq, Eq)]
pub struct SmbUrl {
    pub user: Option<String>,
    pub password: Option<String>,
    pub host: String,
    pub port: u16,
    pub share: String,
    /// SMB encryption: `None` is the library's default.
    pub encrypt: Option<Encrypt>,
    /// SMB signing: `None` is the library's default (smb.conf's).
    pub sign: Option<Sign>,
    /// `?client=`: which SMB client drives the target.
    pub client: Client,
    /// `?dialect=` (benchlab's client only): the one dialect offered.
    pub dialect: Option<u16>,
    /// `?signing=` (benchlab's client only): the one signing algorithm
    /// offered, which the session must negotiate.
    pub signing: Option<benchlab_smb2::sign::Algorithm>,
    /// `?cipher=` (benchlab's client only): the one cipher offered, which
    /// the session must negotiate.
    pub cipher: Option<u16>,
    /// `?leases=on` (benchlab's client only): a lease (or at 2.0.2 a
    /// batch oplock) asked for on every file opened, breaks acknowledged.
    pub leases: bool,
}

/// `?client=libsmbclient|benchlab` of an smb:// target: Samba's library
/// (the default, [`SmbBackend`]) or benchlab's own SMB2/3 client
/// ([`crate::smb2_backend`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Client {
    Libsmbclient,
    /// The default: it costs a quarter to a third of libsmbclient's CPU an
    /// operation, sends every loadfile operation and tells NT statuses
    /// apart (bench/README.md, "smb2.sh"); libsmbclient stays for
    /// cross-checks.
    #[default]
    Benchlab,
}

/// `?sign=off|auto|required` of an smb:// target: Samba's `client signing`
/// (`disabled`, `if_required`, `required`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sign {
    Off,
    Auto,
    Required,
}

impl Sign {
    fn name(self) -> &'static str {
        match self {
            Sign::Off => "off",
            Sign::Auto => "auto",
            Sign::Required => "required",
        }
    }
    fn samba(self) -> &'static str {
        match self {
            Sign::Off => "disabled",
            Sign::Auto => "if_required",
            Sign::Required => "required",
        }
    }
}

/// `?encrypt=none|request|require` of an smb:// target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encrypt {
    None,
    Request,
    Require,
}

/// The environment variable a target's password may come from (a target
/// `smb://USER@…` without one), so it is never on a command line.
pub const PASSWORD_ENV: &str = "BENCHLAB_SMB_PASSWORD";

/// `--smb-password-file`'s password, set once by `benchlab run`.
static PASSWORD: OnceLock<String> = OnceLock::new();

/// The password for targets that name a user and no password (from
/// `--smb-password-file`); it wins over [`PASSWORD_ENV`].
pub fn set_password(password: String) {
    let _ = PASSWORD.set(password);
}

/// `text` with the password of every `smb://USER:PASS@…` in it shown as
/// `***` (`smb://USER:***@…`): every place a target or the command line
/// is shown or stored (results.json, the reports, the terminal, error
/// messages) goes through it; the real password only reaches the
/// connection. A URL ends at white space or a quote.
pub fn redact(text: &str) -> String {
    const SCHEME: &str = "smb://";
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(SCHEME) {
        let (before, url) = rest.split_at(i + SCHEME.len());
        out.push_str(before);
        let end = url
            .find(|c: char| c.is_whitespace() || matches!(c, '`' | '"' | '\''))
            .unwrap_or(url.len());
        let token = &url[..end];
        // As SmbUrl::parse reads it: the user part ends at the last `@`
        // before the options, the password after the user's first `:`.
        let options = token.find('?').unwrap_or(token.len());
        match token[..options]
            .rfind('@')
            .and_then(|at| Some((at, token[..at].split_once(':')?)))
        {
            // `smb://[USER[:PASS]@]HOST`, the form in help texts, holds no
            // password.
            Some((at, (user, _))) if !user.starts_with('[') => {
                out.push_str(user);
                out.push_str(":***");
                out.push_str(&token[at..]);
            }
            _ => out.push_str(token),
        }
        rest = &url[end..];
    }
    out.push_str(rest);
    out
}

impl SmbUrl {
    pub fn parse(t: &str) -> Result<SmbUrl, crate::FileError> {
        SmbUrl::parse_text(t).map_err(crate::FileError::Input)
    }

    fn parse_text(t: &str) -> Result<SmbUrl, String> {
        let bad = |why: &str| {
            format!(
                "target `{}`: {why}: expected smb://[USER[:PASS]@]HOST[:PORT]/SHARE",
                redact(t)
            )
        };
        let rest = t.strip_prefix("smb://").ok_or_else(|| bad("not smb://"))?;
        let (rest, query) = match rest.split_once('?') {
            Some((r, q)) => (r, Some(q)),
            None => (rest, None),
        };
        let (mut encrypt, mut sign, mut client, mut dialect) = (None, None, Client::default(), None);
        let (mut signing, mut cipher) = (None, None);
        let mut leases = false;
        for q in query.into_iter().flat_map(|q| q.split('&')) {
            if let Some(a) = q.strip_prefix("signing=") {
                signing =
                    Some(benchlab_smb2::sign::Algorithm::parse(a).ok_or_else(|| {
                        bad(&format!("option `{q}`: expected signing=hmac-sha256|aes-cmac|aes-gmac"))
                    })?);
                continue;
            }
            if let Some(c) = q.strip_prefix("cipher=") {
                cipher = Some(benchlab_smb2::msg::parse_cipher(c).ok_or_else(|| {
                    bad(&format!(
                        "option `{q}`: expected cipher=aes-128-ccm|aes-128-gcm|aes-256-ccm|aes-256-gcm"
                    ))
                })?);
                continue;
            }
            if let Some(d) = q.strip_prefix("dialect=") {
                dialect = Some(
                    benchlab_smb2::msg::parse_dialect(d)
                        .ok_or_else(|| bad(&format!("option `{q}`: expected dialect=2.0.2|2.1|3.0|3.0.2|3.1.1")))?,
                );
                continue;
            }
            match q {
                "client=libsmbclient" => client = Client::Libsmbclient,
                "client=benchlab" => client = Client::Benchlab,
                "encrypt=none" => encrypt = Some(Encrypt::None),
                "encrypt=request" => encrypt = Some(Encrypt::Request),
                "encrypt=require" => encrypt = Some(Encrypt::Require),
                "sign=off" => sign = Some(Sign::Off),
                "sign=auto" => sign = Some(Sign::Auto),
                "sign=required" => sign = Some(Sign::Required),
                "leases=on" => leases = true,
                "leases=off" => leases = false,
                _ => {
                    return Err(bad(&format!(
                        "option `{q}`: expected encrypt=none|request|require, sign=off|auto|required, client=libsmbclient|benchlab, leases=on|off, dialect=…, signing=… or cipher=… (joined by &)"
                    )))
                }
            }
        }
        // Options that cannot apply to the client chosen are refused by
        // name, never ignored.
        match client {
            Client::Libsmbclient if leases => {
                return Err(bad(
                    "option `leases=on` applies to client=benchlab only (libsmbclient asks for no lease)",
                ))
            }
            Client::Libsmbclient if dialect.is_some() => {
                return Err(bad(
                    "option `dialect=` applies to client=benchlab only (libsmbclient negotiates 2.0.2 to 3.1.1 itself)",
                ))
            }
            Client::Libsmbclient if signing.is_some() || cipher.is_some() => {
                return Err(bad(
                    "options `signing=` and `cipher=` apply to client=benchlab only (libsmbclient negotiates its own)",
                ))
            }
            Client::Benchlab
                if encrypt == Some(Encrypt::Require)
                    && dialect.is_some_and(|d| d < benchlab_smb2::msg::DIALECT_300) =>
            {
                return Err(bad(
                    "option `encrypt=require` needs SMB 3.0 or later, and `dialect=` pins 2.x",
                ))
            }
            _ => {}
        }
        if let Some(why) = crypto_refusal(sign, encrypt, dialect, signing, cipher) {
            return Err(bad(&why));
        }
        let (auth, rest) = match rest.rsplit_once('@') {
            Some((a, r)) => (Some(a), r),
            None => (None, rest),
        };
        let (user, password) = match auth {
            Some(a) => match a.split_once(':') {
                Some((u, p)) => (Some(u.to_string()), Some(p.to_string())),
                None => (Some(a.to_string()), None),
            },
            None => (None, None),
        };
        let (hostport, share) = rest.split_once('/').ok_or_else(|| bad("no share"))?;
        let share = share.trim_end_matches('/');
        if share.is_empty() || share.contains('/') {
            return Err(bad("the share is one name"));
        }
        let (host, port) = match hostport.rsplit_once(':') {
            Some((h, p)) => (h, p.parse::<u16>().map_err(|_| bad(&format!("port `{p}`")))?),
            None => (hostport, 445),
        };
        if host.is_empty() {
            return Err(bad("no host"));
        }
        Ok(SmbUrl {
            user,
            password,
            host: host.to_string(),
            port,
            share: share.to_string(),
            encrypt,
            sign,
            client,
            dialect,
            signing,
            cipher,
            leases,
        })
    }
}

/// Why `?signing=` or `?cipher=` cannot apply with the other options, if
/// it cannot: an algorithm chooses how signing or sealing is done, so it
/// needs signing or encryption asked for, and a dialect that has it.
fn crypto_refusal(
    sign: Option<Sign>,
    encrypt: Option<Encrypt>,
    dialect: Option<u16>,
    signing: Option<benchlab_smb2::sign::Algorithm>,
    cipher: Option<u16>,
) -> Option<String> {
    use benchlab_smb2::msg::{cipher_name, cipher_usable_at, dialect_name};
    if let Some(a) = signing {
        if sign != Some(Sign::Required) {
            return Some(format!(
                "option `signing={}` chooses how requests are signed: it needs sign=required",
                a.name()
            ));
        }
        if encrypt == Some(Encrypt::Require) {
            return Some(format!(
                "option `signing={}` cannot apply with encrypt=require: sealed requests are not signed",
                a.name()
            ));
        }
        if let Some(d) = dialect.filter(|d| !a.usable_at(*d)) {
            return Some(format!(
                "option `signing={}` cannot apply at dialect {} (2.x signs with hmac-sha256, 3.0 and 3.0.2 with aes-cmac; aes-gmac and hmac-sha256 at 3.x need 3.1.1)",
                a.name(),
                dialect_name(d)
            ));
        }
    }
    if let Some(c) = cipher {
        if !matches!(encrypt, Some(Encrypt::Require | Encrypt::Request)) {
            return Some(format!(
                "option `cipher={}` chooses how requests are sealed: it needs encrypt=require or encrypt=request",
                cipher_name(c)
            ));
        }
        if let Some(d) = dialect.filter(|d| !cipher_usable_at(c, *d)) {
            return Some(format!(
                "option `cipher={}` cannot apply at dialect {} (2.x has no encryption, 3.0 and 3.0.2 only aes-128-ccm; the others need 3.1.1)",
                cipher_name(c),
                dialect_name(d)
            ));
        }
    }
    None
}

impl SmbUrl {
    /// A target that names a user and no password takes
    /// `--smb-password-file`'s, or else [`PASSWORD_ENV`]'s.
    pub fn with_default_password(mut self) -> SmbUrl {
        if self.user.is_some() && self.password.is_none() {
            self.password = PASSWORD
                .get()
                .cloned()
                .or_else(|| std::env::var(PASSWORD_ENV).ok().filter(|p| !p.is_empty()));
        }
        self
    }

    /// The whole URL, password included: only for handing the target to
    /// a user process (on its stdin, never its command line). Everything
    /// shown uses Display, which prints `***`.
    pub fn with_password(&self) -> String {
        self.write(true)
    }

    fn write(&self, password: bool) -> String {
        use std::fmt::Write;
        let mut f = String::from("smb://");
        if let Some(u) = &self.user {
            f.push_str(u);
            if let Some(p) = &self.password {
                f.push(':');
                f.push_str(if password { p } else { "***" });
            }
            f.push('@');
        }
        let _ = write!(f, "{}:{}/{}", self.host, self.port, self.share);
        let mut q = Vec::new();
        match self.encrypt {
            None => {}
            Some(Encrypt::None) => q.push("encrypt=none".to_string()),
            Some(Encrypt::Request) => q.push("encrypt=request".to_string()),
            Some(Encrypt::Require) => q.push("encrypt=require".to_string()),
        }
        if let Some(s) = self.sign {
            q.push(format!("sign={}", s.name()));
        }
        if self.client == Client::Libsmbclient {
            q.push("client=libsmbclient".to_string());
        }
        if let Some(d) = self.dialect {
            q.push(format!("dialect={}", benchlab_smb2::msg::dialect_name(d)));
        }
        if let Some(a) = self.signing {
            q.push(format!("signing={}", a.name()));
        }
        if let Some(c) = self.cipher {
            q.push(format!("cipher={}", benchlab_smb2::msg::cipher_name(c)));
        }
        if self.leases {
            q.push("leases=on".to_string());
        }
        if !q.is_empty() {
            let _ = write!(f, "?{}", q.join("&"));
        }
        f
    }
}

impl std::fmt::Display for SmbUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.write(false))
    }
}

impl std::fmt::Debug for SmbUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SmbUrl({})", self.write(false))
    }
}

type Ctx = *mut c_void;
type SmbFile = *mut c_void;
type AuthFn =
    extern "C" fn(Ctx, *const c_char, *const c_char, *mut c_char, c_int, *mut c_char, c_int, *mut c_char, c_int);

/// The library's entry points, resolved once.
struct Lib {
    new_context: unsafe extern "C" fn() -> Ctx,
    init_context: unsafe extern "C" fn(Ctx) -> Ctx,
    free_context: unsafe extern "C" fn(Ctx, c_int) -> c_int,
    set_auth: unsafe extern "C" fn(Ctx, AuthFn),
    set_port: unsafe extern "C" fn(Ctx, u16),
    set_debug: unsafe extern "C" fn(Ctx, c_int),
    debug_to_stderr: unsafe extern "C" fn(Ctx, c_int),
    set_user_data: unsafe extern "C" fn(Ctx, *mut c_void),
    get_user_data: unsafe extern "C" fn(Ctx) -> *mut c_void,
    set_protocols: unsafe extern "C" fn(Ctx, *const c_char, *const c_char) -> c_int,
    set_encrypt: unsafe extern "C" fn(Ctx, c_int),
    set_configuration: unsafe extern "C" fn(Ctx, *const c_char) -> c_int,
    get_open: unsafe extern "C" fn(Ctx) -> unsafe extern "C" fn(Ctx, *const c_char, c_int, libc::mode_t) -> SmbFile,
    get_read: unsafe extern "C" fn(Ctx) -> unsafe extern "C" fn(Ctx, SmbFile, *mut c_void, usize) -> isize,
    get_write: unsafe extern "C" fn(Ctx) -> unsafe extern "C" fn(Ctx, SmbFile, *const c_void, usize) -> isize,
    get_lseek: unsafe extern "C" fn(Ctx) -> unsafe extern "C" fn(Ctx, SmbFile, libc::off_t, c_int) -> libc::off_t,
    get_close: unsafe extern "C" fn(Ctx) -> unsafe extern "C" fn(Ctx, SmbFile) -> c_int,
    get_stat: unsafe extern "C" fn(Ctx) -> unsafe extern "C" fn(Ctx, *const c_char, *mut libc::stat) -> c_int,
    get_fstat: unsafe extern "C" fn(Ctx) -> unsafe extern "C" fn(Ctx, SmbFile, *mut libc::stat) -> c_int,
    get_statvfs: unsafe extern "C" fn(Ctx) -> unsafe extern "C" fn(Ctx, *mut c_char, *mut libc::statvfs) -> c_int,
    get_unlink: unsafe extern "C" fn(Ctx) -> unsafe extern "C" fn(Ctx, *const c_char) -> c_int,
    get_rename: unsafe extern "C" fn(Ctx) -> unsafe extern "C" fn(Ctx, *const c_char, Ctx, *const c_char) -> c_int,
    get_mkdir: unsafe extern "C" fn(Ctx) -> unsafe extern "C" fn(Ctx, *const c_char, libc::mode_t) -> c_int,
    get_rmdir: unsafe extern "C" fn(Ctx) -> unsafe extern "C" fn(Ctx, *const c_char) -> c_int,
    get_opendir: unsafe extern "C" fn(Ctx) -> unsafe extern "C" fn(Ctx, *const c_char) -> SmbFile,
    get_readdir: unsafe extern "C" fn(Ctx) -> unsafe extern "C" fn(Ctx, SmbFile) -> *const Dirent,
    get_closedir: unsafe extern "C" fn(Ctx) -> unsafe extern "C" fn(Ctx, SmbFile) -> c_int,
    get_utimes: unsafe extern "C" fn(Ctx) -> unsafe extern "C" fn(Ctx, *const c_char, *mut libc::timeval) -> c_int,
}

/// libsmbclient's `struct smbc_dirent`.
#[repr(C)]
struct Dirent {
    smbc_type: u32,
    dirlen: u32,
    commentlen: u32,
    comment: *mut c_char,
    namelen: u32,
    name: [c_char; 1],
}

const SMBC_DIR: u32 = 7;

static LIB: OnceLock<Result<Lib, String>> = OnceLock::new();
/// Held while a context is made, initialised or freed (global state).
static CONTEXTS: Mutex<()> = Mutex::new(());

fn lib() -> Result<&'static Lib, String> {
    LIB.get_or_init(load).as_ref().map_err(Clone::clone)
}

// Each symbol's type is the field it is stored in (libsmbclient.h's).
#[allow(clippy::missing_transmute_annotations)]
fn load() -> Result<Lib, String> {
    // SAFETY: dlopen/dlsym with NUL-terminated names; each symbol is cast
    // to the type libsmbclient.h declares for it.
    unsafe {
        let h = libc::dlopen(c"libsmbclient.so.0".as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL);
        if h.is_null() {
            return Err(
                "smb:// needs Samba's client library (libsmbclient.so.0): install the `libsmbclient` package".into(),
            );
        }
        macro_rules! sym {
            ($name:literal) => {{
                let p = libc::dlsym(h, concat!($name, "\0").as_ptr() as *const c_char);
                if p.is_null() {
                    return Err(format!("libsmbclient.so.0 has no {}: expected Samba 4.x", $name));
                }
                std::mem::transmute::<*mut c_void, _>(p)
            }};
        }
        // Older builds export smbc_thread_posix (Samba's thread hooks);
        // Samba 4.17 on Debian does not: its stack frames are per thread
        // already (pthread keys in libsamba-util).
        let tp = libc::dlsym(h, c"smbc_thread_posix".as_ptr());
        if !tp.is_null() {
            let thread_posix: unsafe extern "C" fn() = std::mem::transmute::<*mut c_void, _>(tp);
            thread_posix();
        }
        Ok(Lib {
            new_context: sym!("smbc_new_context"),
            init_context: sym!("smbc_init_context"),
            free_context: sym!("smbc_free_context"),
            set_auth: sym!("smbc_setFunctionAuthDataWithContext"),
            set_port: sym!("smbc_setPort"),
            set_debug: sym!("smbc_setDebug"),
            debug_to_stderr: sym!("smbc_setOptionDebugToStderr"),
            set_user_data: sym!("smbc_setOptionUserData"),
            get_user_data: sym!("smbc_getOptionUserData"),
            set_protocols: sym!("smbc_setOptionProtocols"),
            set_encrypt: sym!("smbc_setOptionSmbEncryptionLevel"),
            set_configuration: sym!("smbc_setConfiguration"),
            get_open: sym!("smbc_getFunctionOpen"),
            get_read: sym!("smbc_getFunctionRead"),
            get_write: sym!("smbc_getFunctionWrite"),
            get_lseek: sym!("smbc_getFunctionLseek"),
            get_close: sym!("smbc_getFunctionClose"),
            get_stat: sym!("smbc_getFunctionStat"),
            get_fstat: sym!("smbc_getFunctionFstat"),
            get_statvfs: sym!("smbc_getFunctionStatVFS"),
            get_unlink: sym!("smbc_getFunctionUnlink"),
            get_rename: sym!("smbc_getFunctionRename"),
            get_mkdir: sym!("smbc_getFunctionMkdir"),
            get_rmdir: sym!("smbc_getFunctionRmdir"),
            get_opendir: sym!("smbc_getFunctionOpendir"),
            get_readdir: sym!("smbc_getFunctionReaddir"),
            get_closedir: sym!("smbc_getFunctionClosedir"),
            get_utimes: sym!("smbc_getFunctionUtimes"),
        })
    }
}

/// User name and password the auth callback hands the library.
struct Credentials {
    user: CString,
    password: CString,
    workgroup: CString,
}

extern "C" fn auth(
    ctx: Ctx,
    _srv: *const c_char,
    _shr: *const c_char,
    wg: *mut c_char,
    wglen: c_int,
    un: *mut c_char,
    unlen: c_int,
    pw: *mut c_char,
    pwlen: c_int,
) {
    let Ok(l) = lib() else { return };
    // SAFETY: the user data is the Credentials the context was made with,
    // alive as long as the context; the buffers are the library's, of the
    // lengths it passes.
    unsafe {
        let c = (l.get_user_data)(ctx) as *const Credentials;
        if c.is_null() {
            return;
        }
        let put = |dst: *mut c_char, len: c_int, src: &CStr| {
            let b = src.to_bytes_with_nul();
            if len > 0 && b.len() <= len as usize {
                std::ptr::copy_nonoverlapping(b.as_ptr() as *const c_char, dst, b.len());
            }
        };
        put(wg, wglen, &(*c).workgroup);
        put(un, unlen, &(*c).user);
        put(pw, pwlen, &(*c).password);
    }
}

enum Handle {
    File(SmbFile, CString),
    Dir(SmbFile, CString),
}

/// One SMB session (a libsmbclient context) of one user.
///
/// Chosen over the pure-Rust `smb` crate by measurement, both against the
/// same smbd on loopback (bench/smb-clients.sh; bench/runs/
/// 2026-11-23-smb-clients-2core.txt): medians of 500 operations, open+close
/// 0.101 ms here against 88.0 ms with `smb` 0.12.1, a 4 KiB write 0.056
/// against 44.0 ms, a 4 KiB read 0.052 against 44.0 ms — `smb` leaves
/// Nagle's algorithm on (no TCP_NODELAY) and every request waits for the
/// delayed ACK, where libsmbclient sets TCP_NODELAY (Samba's default socket
/// options). And 4 KiB written into an empty file read back as 0 bytes
/// through the same `smb` handle (its read stops at the end of file the
/// handle saw when opened), identical through another; through
/// libsmbclient, identical through both (tests/smb.rs checks it byte for
/// byte). What libsmbclient lacks: byte-range locks and Flush (no call in
/// libsmbclient.h); they are not sent and counted apart as `not_sent`,
/// never as done operations nor as errors.
pub struct SmbBackend {
    lib: &'static Lib,
    ctx: Ctx,
    base: String,
    handles: HashMap<u64, Handle>,
    _credentials: Box<Credentials>,
    url: String,
}

// SAFETY: a context is used by one thread at a time (the user that owns
// the backend); libsmbclient was set up for threads (smbc_thread_posix).
unsafe impl Send for SmbBackend {}

fn errno_status() -> Status {
    let e = std::io::Error::last_os_error();
    Status::from_io(&e)
}

impl SmbBackend {
    /// A session on the share of `u`; a refusal means the mix cannot run.
    pub fn connect(u: &SmbUrl) -> Result<SmbBackend, crate::FileError> {
        SmbBackend::open_session(u).map_err(crate::FileError::Run)
    }

    fn open_session(u: &SmbUrl) -> Result<SmbBackend, String> {
        let lib = lib()?;
        let credentials = Box::new(Credentials {
            user: CString::new(u.user.clone().unwrap_or_default()).map_err(|_| "user name with a NUL byte")?,
            password: CString::new(u.password.clone().unwrap_or_default()).map_err(|_| "password with a NUL byte")?,
            workgroup: c"WORKGROUP".to_owned(),
        });
        // Signing has no option of its own in libsmbclient: it is smb.conf's
        // `client signing`, read from a file of ours (applied to the whole
        // process, which is one user's).
        let conf = match u.sign {
            Some(sg) => {
                let f = tempfile::NamedTempFile::new().map_err(|e| format!("cannot write a client smb.conf: {e}"))?;
                std::fs::write(f.path(), format!("[global]\n client signing = {}\n", sg.samba()))
                    .map_err(|e| format!("cannot write a client smb.conf: {e}"))?;
                Some(f)
            }
            None => None,
        };
        let base = format!("smb://{}/{}", u.host, u.share);
        let url = format!("smb://{}:{}/{}", u.host, u.port, u.share);
        let ctx = {
            let _g = CONTEXTS.lock().unwrap_or_else(|e| e.into_inner());
            // SAFETY: a fresh context, configured before init as the
            // header asks; the credentials outlive it (freed in Drop after
            // the context).
            unsafe {
                let ctx = (lib.new_context)();
                if ctx.is_null() {
                    return Err(format!("{url}: cannot make an SMB client context"));
                }
                (lib.set_debug)(ctx, 0);
                // The library's messages must not mix into a user
                // process's answers on stdout.
                (lib.debug_to_stderr)(ctx, 1);
                (lib.set_port)(ctx, u.port);
                (lib.set_user_data)(ctx, &*credentials as *const Credentials as *mut c_void);
                (lib.set_auth)(ctx, auth);
                (lib.set_protocols)(ctx, c"SMB2_02".as_ptr(), c"SMB3".as_ptr());
                if let Some(e) = u.encrypt {
                    (lib.set_encrypt)(
                        ctx,
                        match e {
                            Encrypt::None => 0,
                            Encrypt::Request => 1,
                            Encrypt::Require => 2,
                        },
                    );
                }
                if let Some(f) = &conf {
                    let p = CString::new(f.path().as_os_str().as_encoded_bytes()).unwrap_or_default();
                    if (lib.set_configuration)(ctx, p.as_ptr()) != 0 {
                        (lib.free_context)(ctx, 1);
                        return Err(format!("{url}: libsmbclient refused the client configuration"));
                    }
                }
                if (lib.init_context)(ctx).is_null() {
                    (lib.free_context)(ctx, 1);
                    return Err(format!(
                        "{url}: cannot initialise the SMB client: {}",
                        std::io::Error::last_os_error()
                    ));
                }
                ctx
            }
        };
        let mut b = SmbBackend {
            lib,
            ctx,
            base,
            handles: HashMap::new(),
            _credentials: credentials,
            url,
        };
        // Connect now (the share's root), so a wrong host, port, share or
        // password stops the run before the mix.
        b.query_fs(benchlab_smb2::msg::FILE_FS_FULL_SIZE_INFORMATION)
            .map_err(|s| {
                format!(
                    "{}: cannot reach the share: {s} (is the server running, the share and the user right?)",
                    b.url
                )
            })?;
        Ok(b)
    }

    fn path(&self, p: &str) -> CString {
        let mut s = self.base.clone();
        for part in p.split('\\').filter(|s| !s.is_empty()) {
            s.push('/');
            s.push_str(part);
        }
        // Loadfile paths cannot hold NUL (they come from text lines).
        CString::new(s).unwrap_or_default()
    }

    fn file(&self, key: u64) -> Result<SmbFile, Status> {
        match self.handles.get(&key) {
            Some(Handle::File(f, _)) => Ok(*f),
            Some(Handle::Dir(..)) => Err(Status::FileIsADirectory),
            None => Err(Status::InvalidHandle),
        }
    }

    /// Names in a directory (not `.` and `..`), with whether each is one.
    fn list(&self, dir: &CStr) -> Result<Vec<(String, bool)>, Status> {
        // SAFETY: the context is ours; readdir's entries are valid until
        // the next call on the same handle, and copied before it.
        unsafe {
            let d = ((self.lib.get_opendir)(self.ctx))(self.ctx, dir.as_ptr());
            if d.is_null() {
                return Err(errno_status());
            }
            let mut out = Vec::new();
            loop {
                let e = ((self.lib.get_readdir)(self.ctx))(self.ctx, d);
                if e.is_null() {
                    break;
                }
                let name = CStr::from_ptr((*e).name.as_ptr()).to_string_lossy().into_owned();
                if name != "." && name != ".." {
                    out.push((name, (*e).smbc_type == SMBC_DIR));
                }
            }
            ((self.lib.get_closedir)(self.ctx))(self.ctx, d);
            Ok(out)
        }
    }

    fn remove_tree(&self, dir: &CStr) -> Result<(), Status> {
        let base = dir.to_string_lossy().into_owned();
        for (name, is_dir) in self.list(dir)? {
            let p = CString::new(format!("{base}/{name}")).unwrap_or_default();
            if is_dir {
                self.remove_tree(&p)?;
            } else {
                // SAFETY: our context and a NUL-terminated URL.
                if unsafe { ((self.lib.get_unlink)(self.ctx))(self.ctx, p.as_ptr()) } != 0 {
                    return Err(errno_status());
                }
            }
        }
        // SAFETY: as above.
        if unsafe { ((self.lib.get_rmdir)(self.ctx))(self.ctx, dir.as_ptr()) } != 0 {
            return Err(errno_status());
        }
        Ok(())
    }

    fn check(r: c_int) -> Result<(), Status> {
        if r < 0 {
            Err(errno_status())
        } else {
            Ok(())
        }
    }
}

impl Drop for SmbBackend {
    fn drop(&mut self) {
        let keys: Vec<u64> = self.handles.keys().copied().collect();
        for k in keys {
            let _ = self.close(k);
        }
        let _g = CONTEXTS.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: our context, freed once, its connections shut down.
        unsafe {
            (self.lib.free_context)(self.ctx, 1);
        }
    }
}

impl FileBackend for SmbBackend {
    fn create(&mut self, key: u64, path: &str, options: u32, disposition: u32) -> Result<(), Status> {
        // libsmbclient takes no create options: "directory" is told by
        // opening a directory, the others are not sent (docs/smb2.md).
        let directory = options & crate::backend::DIRECTORY_FILE != 0;
        let p = self.path(path);
        let (l, c) = (self.lib, self.ctx);
        // SAFETY (every call below): our context, NUL-terminated URLs,
        // handles this context opened.
        if directory {
            if matches!(disposition, 0 | 2 | 3 | 5) {
                // SAFETY: our context and a NUL-terminated URL.
                let r = unsafe { ((l.get_mkdir)(c))(c, p.as_ptr(), 0o755) };
                if r != 0 {
                    let s = errno_status();
                    if s != Status::ObjectNameCollision || disposition == 2 {
                        return Err(s);
                    }
                }
            }
            // SAFETY: our context and a NUL-terminated URL.
            let d = unsafe { ((l.get_opendir)(c))(c, p.as_ptr()) };
            if d.is_null() {
                return Err(errno_status());
            }
            if let Some(old) = self.handles.insert(key, Handle::Dir(d, p)) {
                let _ = self.release(old);
            }
            return Ok(());
        }
        let flags = libc::O_RDWR
            | match disposition {
                0 | 5 => libc::O_CREAT | libc::O_TRUNC,
                1 => 0,
                2 => libc::O_CREAT | libc::O_EXCL,
                3 => libc::O_CREAT,
                _ => libc::O_TRUNC,
            };
        // SAFETY: our context and a NUL-terminated URL.
        let f = unsafe { ((l.get_open)(c))(c, p.as_ptr(), flags, 0o644) };
        if f.is_null() {
            return Err(errno_status());
        }
        if let Some(old) = self.handles.insert(key, Handle::File(f, p)) {
            let _ = self.release(old);
        }
        Ok(())
    }

    fn close(&mut self, key: u64) -> Result<(), Status> {
        let h = self.handles.remove(&key).ok_or(Status::InvalidHandle)?;
        self.release(h)
    }

    fn read(&mut self, key: u64, offset: u64, buf: &mut [u8]) -> Result<usize, Status> {
        let f = self.file(key)?;
        let (l, c) = (self.lib, self.ctx);
        // SAFETY: our handle; the buffer is ours for its length. lseek to
        // an absolute offset is local to the library (no request).
        unsafe {
            if ((l.get_lseek)(c))(c, f, offset as libc::off_t, libc::SEEK_SET) < 0 {
                return Err(errno_status());
            }
            let mut done = 0;
            while done < buf.len() {
                let n = ((l.get_read)(c))(c, f, buf[done..].as_mut_ptr() as *mut c_void, buf.len() - done);
                if n < 0 {
                    return Err(errno_status());
                }
                if n == 0 {
                    break;
                }
                done += n as usize;
            }
            Ok(done)
        }
    }

    fn write(&mut self, key: u64, offset: u64, data: &[u8]) -> Result<usize, Status> {
        let f = self.file(key)?;
        let (l, c) = (self.lib, self.ctx);
        // SAFETY: as in read.
        unsafe {
            if ((l.get_lseek)(c))(c, f, offset as libc::off_t, libc::SEEK_SET) < 0 {
                return Err(errno_status());
            }
            let mut done = 0;
            while done < data.len() {
                let n = ((l.get_write)(c))(c, f, data[done..].as_ptr() as *const c_void, data.len() - done);
                if n <= 0 {
                    return Err(errno_status());
                }
                done += n as usize;
            }
            Ok(done)
        }
    }

    // libsmbclient cannot choose an information class: its stat,
    // fstat and statvfs ask what they ask, whatever the loadfile's level
    // (docs/smb2.md, "Info levels"); the operation counts the same.
    fn query_path(&mut self, path: &str, _class: u8) -> Result<(), Status> {
        let p = self.path(path);
        // SAFETY: our context; a zeroed stat to fill.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: our context, a NUL-terminated URL and a stat we own.
        Self::check(unsafe { ((self.lib.get_stat)(self.ctx))(self.ctx, p.as_ptr(), &mut st) })
    }

    fn query_file(&mut self, key: u64, _class: u8) -> Result<(), Status> {
        // SAFETY: stat is plain integers, for which all-zero bytes are valid.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        match self.handles.get(&key) {
            // SAFETY: our handle and a stat to fill.
            Some(Handle::File(f, _)) => Self::check(unsafe { ((self.lib.get_fstat)(self.ctx))(self.ctx, *f, &mut st) }),
            Some(Handle::Dir(_, p)) => {
                // SAFETY: as above, by the directory's URL.
                Self::check(unsafe { ((self.lib.get_stat)(self.ctx))(self.ctx, p.as_ptr(), &mut st) })
            }
            None => Err(Status::InvalidHandle),
        }
    }

    fn query_fs(&mut self, _class: u8) -> Result<(), Status> {
        let p = CString::new(self.base.clone()).unwrap_or_default();
        // SAFETY: statvfs is plain integers, for which all-zero bytes are valid.
        let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
        // SAFETY: statvfs takes a mutable char* it does not keep.
        Self::check(unsafe { ((self.lib.get_statvfs)(self.ctx))(self.ctx, p.as_ptr() as *mut c_char, &mut st) })
    }

    fn set_file_info(&mut self, key: u64, _class: u8) -> Result<(), Status> {
        let p = match self.handles.get(&key) {
            Some(Handle::File(_, p) | Handle::Dir(_, p)) => p.clone(),
            None => return Err(Status::InvalidHandle),
        };
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        let tv = libc::timeval {
            tv_sec: now.as_secs() as libc::time_t,
            tv_usec: now.subsec_micros() as libc::suseconds_t,
        };
        let mut t = [tv, tv];
        // SAFETY: our context, a URL and two timevals.
        Self::check(unsafe { ((self.lib.get_utimes)(self.ctx))(self.ctx, p.as_ptr(), t.as_mut_ptr()) })
    }

    fn find(&mut self, pattern: &str, _class: u8) -> Result<u32, Status> {
        let (dir, mask) = pattern.rsplit_once('\\').unwrap_or(("", pattern));
        let d = self.path(dir);
        let names = self.list(&d).map_err(|s| match s {
            Status::ObjectNameNotFound => Status::ObjectPathNotFound,
            s => s,
        })?;
        let n = names.iter().filter(|(name, _)| wildcard_match(mask, name)).count() as u32;
        if n == 0 {
            return Err(Status::NoSuchFile);
        }
        Ok(n)
    }

    /// libsmbclient has no byte-range lock call (libsmbclient.h: none of
    /// SMB2 LOCK), nor does dbench's own libsmbclient backend send one (it
    /// skips the loadfile lines it has no function for). Nothing is sent:
    /// counted as not sent, apart from done operations and errors.
    fn lock(&mut self, key: u64, _offset: u64, _len: u64, _lock: bool) -> Result<(), Status> {
        self.file(key)?;
        Err(Status::NotSent)
    }

    /// No SMB2 FLUSH call in libsmbclient either: not sent, as [`Self::lock`].
    fn flush(&mut self, key: u64) -> Result<(), Status> {
        self.file(key)?;
        Err(Status::NotSent)
    }

    fn unlink(&mut self, path: &str) -> Result<(), Status> {
        let p = self.path(path);
        // SAFETY: our context, a URL.
        Self::check(unsafe { ((self.lib.get_unlink)(self.ctx))(self.ctx, p.as_ptr()) })
    }

    fn rename(&mut self, from: &str, to: &str) -> Result<(), Status> {
        let (a, b) = (self.path(from), self.path(to));
        // SAFETY: our context on both sides, two URLs.
        Self::check(unsafe { ((self.lib.get_rename)(self.ctx))(self.ctx, a.as_ptr(), self.ctx, b.as_ptr()) })
    }

    fn mkdir(&mut self, path: &str) -> Result<(), Status> {
        let p = self.path(path);
        // SAFETY: our context, a URL.
        match Self::check(unsafe { ((self.lib.get_mkdir)(self.ctx))(self.ctx, p.as_ptr(), 0o755) }) {
            Err(Status::ObjectNameCollision) => Ok(()),
            r => r,
        }
    }

    fn deltree(&mut self, path: &str) -> Result<(), Status> {
        let p = self.path(path);
        match self.remove_tree(&p) {
            Err(Status::ObjectNameNotFound | Status::ObjectPathNotFound) => Ok(()),
            r => r,
        }
    }

    fn distinguishes_not_found(&self) -> bool {
        false
    }
}

impl SmbBackend {
    fn release(&self, h: Handle) -> Result<(), Status> {
        // SAFETY: a handle this context opened, closed once.
        match h {
            // SAFETY: a file handle this context opened, closed once.
            Handle::File(f, _) => Self::check(unsafe { ((self.lib.get_close)(self.ctx))(self.ctx, f) }),
            // SAFETY: a directory handle this context opened, closed once.
            Handle::Dir(d, _) => Self::check(unsafe { ((self.lib.get_closedir)(self.ctx))(self.ctx, d) }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse_and_print_back() {
        let u = SmbUrl::parse("smb://bench:se:cret@nas.example:4450/share?encrypt=require&sign=required").unwrap();
        assert_eq!(u.user.as_deref(), Some("bench"));
        assert_eq!(u.password.as_deref(), Some("se:cret"));
        assert_eq!(
            (u.host.as_str(), u.port, u.share.as_str()),
            ("nas.example", 4450, "share")
        );
        assert_eq!((u.encrypt, u.sign), (Some(Encrypt::Require), Some(Sign::Required)));
        assert_eq!(SmbUrl::parse(&u.with_password()).unwrap(), u);
        assert_eq!(
            u.to_string(),
            "smb://bench:***@nas.example:4450/share?encrypt=require&sign=required"
        );
        assert!(!format!("{u:?}").contains("se:cret"));
        let g = SmbUrl::parse("smb://127.0.0.1/bench/").unwrap();
        assert_eq!((g.user, g.port, g.encrypt, g.sign), (None, 445, None, None));
        for bad in [
            "smb://host",
            "smb:///s",
            "smb://h:x/s",
            "smb://h/s/t",
            "smb://h/s?sign=maybe",
        ] {
            let e = SmbUrl::parse(bad).unwrap_err().to_string();
            assert!(e.contains("expected"), "{bad}: {e}");
        }
        let e = SmbUrl::parse("smb://u:SECRETPW@h:x/s").unwrap_err().to_string();
        assert!(!e.contains("SECRETPW") && e.contains("smb://u:***@h:x/s"), "{e}");
    }

    #[test]
    fn signing_and_cipher_options_parse_and_refuse_what_cannot_apply() {
        use benchlab_smb2::sign::Algorithm;
        let u = SmbUrl::parse("smb://h/s?client=benchlab&sign=required&signing=aes-gmac&dialect=3.1.1").unwrap();
        assert_eq!(u.signing, Some(Algorithm::AesGmac));
        assert_eq!(SmbUrl::parse(&u.to_string()).unwrap(), u);
        let u = SmbUrl::parse("smb://h/s?client=benchlab&encrypt=require&cipher=aes-256-ccm").unwrap();
        assert_eq!(u.cipher, Some(benchlab_smb2::msg::AES_256_CCM));
        assert!(u.to_string().ends_with("cipher=aes-256-ccm"), "{u}");
        assert!(SmbUrl::parse("smb://h/s?client=benchlab&encrypt=request&cipher=aes-128-ccm&dialect=3.0").is_ok());
        assert!(SmbUrl::parse("smb://h/s?client=benchlab&sign=required&signing=hmac-sha256&dialect=2.1").is_ok());
        for (bad, why) in [
            (
                "client=benchlab&sign=required&signing=sha1",
                "expected signing=hmac-sha256|aes-cmac|aes-gmac",
            ),
            (
                "client=benchlab&encrypt=require&cipher=des",
                "expected cipher=aes-128-ccm|",
            ),
            (
                "client=libsmbclient&sign=required&signing=aes-gmac",
                "apply to client=benchlab only",
            ),
            (
                "client=libsmbclient&encrypt=require&cipher=aes-256-gcm",
                "apply to client=benchlab only",
            ),
            (
                "client=benchlab&signing=aes-gmac",
                "`signing=aes-gmac` chooses how requests are signed: it needs sign=required",
            ),
            (
                "client=benchlab&sign=required&encrypt=require&signing=aes-cmac",
                "sealed requests are not signed",
            ),
            (
                "client=benchlab&sign=required&signing=aes-gmac&dialect=3.0.2",
                "`signing=aes-gmac` cannot apply at dialect 3.0.2",
            ),
            (
                "client=benchlab&sign=required&signing=hmac-sha256&dialect=3.0",
                "cannot apply at dialect 3.0",
            ),
            (
                "client=benchlab&sign=required&signing=aes-cmac&dialect=2.0.2",
                "cannot apply at dialect 2.0.2",
            ),
            (
                "client=benchlab&cipher=aes-128-gcm",
                "`cipher=aes-128-gcm` chooses how requests are sealed: it needs encrypt=",
            ),
            ("client=benchlab&encrypt=none&cipher=aes-128-gcm", "it needs encrypt="),
            (
                "client=benchlab&encrypt=require&cipher=aes-256-gcm&dialect=3.0.2",
                "`cipher=aes-256-gcm` cannot apply at dialect 3.0.2",
            ),
            (
                "client=benchlab&encrypt=request&cipher=aes-128-gcm&dialect=3.0",
                "cannot apply at dialect 3.0",
            ),
            (
                "client=benchlab&encrypt=request&cipher=aes-128-ccm&dialect=2.1",
                "cannot apply at dialect 2.1",
            ),
        ] {
            let e = SmbUrl::parse(&format!("smb://u:PW@h/s?{bad}")).unwrap_err().to_string();
            assert!(e.contains(why), "{bad}: {e}");
            assert!(!e.contains("PW@"), "{e}");
        }
    }

    #[test]
    fn passwords_are_redacted_wherever_a_url_appears() {
        let cases = [
            (
                "smb://bench:SECRETPW@127.0.0.1:445/share",
                "smb://bench:***@127.0.0.1:445/share",
            ),
            (
                "--target=smb://u:p:w@h/s?sign=off and `smb://v:x@y@h/t`",
                "--target=smb://u:***@h/s?sign=off and `smb://v:***@h/t`",
            ),
            ("PHASE=smb://u:pw@h/s", "PHASE=smb://u:***@h/s"),
            (
                "smb://guest@h/s smb://h/s file:///x",
                "smb://guest@h/s smb://h/s file:///x",
            ),
            (
                "target \"smb://a:b@h/s\": refused",
                "target \"smb://a:***@h/s\": refused",
            ),
            ("no url here", "no url here"),
            (
                "expected smb://[USER[:PASS]@]HOST[:PORT]/SHARE",
                "expected smb://[USER[:PASS]@]HOST[:PORT]/SHARE",
            ),
        ];
        for (text, want) in cases {
            assert_eq!(redact(text), want, "{text}");
        }
    }
}
