//! An smbd for tests and benchmarks: Samba's server started unprivileged
//! on a loopback high port with a temporary configuration — every state,
//! lock, cache, log, private and pid directory in a temp dir, no nmbd, no
//! NetBIOS, `smbd -F --no-process-group` — and one share, `bench`, open to
//! guests and mapped to the user running it (root included, as in CI).
//! Never port 445, never a system service.

use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running smbd, leading a process group of its own with the child it
/// forks per client connection; dropping it stops the whole group.
pub struct Smbd {
    child: Child,
    pub port: u16,
    pub share: PathBuf,
    _dir: tempfile::TempDir,
}

impl Drop for Smbd {
    /// SIGTERM to the group, up to 3 s for smbd to exit, SIGKILL to what is
    /// left, smbd reaped, then up to 5 s until no member is alive (killing
    /// smbd alone would leave its per-connection children running).
    fn drop(&mut self) {
        let pgid = self.child.id() as i32;
        // SAFETY: kill(2) with a negative pid signals process group `pgid`,
        // which smbd leads (spawned with process_group(0)).
        unsafe { libc::kill(-pgid, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(3);
        while self.child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        // SAFETY: as above.
        unsafe { libc::kill(-pgid, libc::SIGKILL) };
        let _ = self.child.kill();
        let _ = self.child.wait();
        let deadline = Instant::now() + Duration::from_secs(5);
        while group_alive(pgid) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// Whether any live (not zombie) process is in process group `pgid`.
fn group_alive(pgid: i32) -> bool {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return false;
    };
    dir.flatten().any(|e| {
        std::fs::read_to_string(e.path().join("stat")).is_ok_and(|stat| {
            // Fields after the command name's last ')': state, ppid, pgrp, ...
            let f: Vec<&str> = stat
                .rsplit_once(')')
                .map_or(Vec::new(), |(_, rest)| rest.split_whitespace().collect());
            f.len() > 2 && f[0] != "Z" && f[2].parse() == Ok(pgid)
        })
    })
}

fn smbd_path() -> Option<PathBuf> {
    ["/usr/sbin/smbd", "/usr/local/sbin/smbd"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or(0)
}

pub fn user_name() -> String {
    let Ok(o) = Command::new("id").arg("-un").output() else {
        return "nobody".into();
    };
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

/// Starts smbd and waits until it listens; None where Samba is not
/// installed or it did not start.
pub fn start_smbd() -> Option<Smbd> {
    start_smbd_with("")
}

/// [`start_smbd`] with more `[global]` lines (e.g. `server signing = mandatory`).
pub fn start_smbd_with(extra_global: &str) -> Option<Smbd> {
    let smbd = smbd_path()?;
    let dir = tempfile::tempdir().ok()?;
    let d = dir.path();
    for sub in ["share", "state", "lock", "cache", "log", "private", "pid", "ncalrpc"] {
        std::fs::create_dir_all(d.join(sub)).ok()?;
    }
    let port = free_port();
    let user = user_name();
    let conf = format!(
        "[global]\n netbios name = BENCHLAB\n workgroup = WORKGROUP\n server role = standalone server\n\
         smb ports = {port}\n interfaces = 127.0.0.1\n bind interfaces only = yes\n disable netbios = yes\n\
         state directory = {d}/state\n lock directory = {d}/lock\n cache directory = {d}/cache\n\
         private dir = {d}/private\n pid directory = {d}/pid\n ncalrpc dir = {d}/ncalrpc\n\
         log file = {d}/log/log.%m\n passdb backend = tdbsam:{d}/private/passdb.tdb\n\
         map to guest = Bad User\n guest account = {user}\n server min protocol = SMB2_02\n\
         load printers = no\n printing = bsd\n printcap name = /dev/null\n disable spoolss = yes\n{extra_global}\n\
         [bench]\n path = {d}/share\n read only = no\n guest ok = yes\n guest only = yes\n force user = {user}\n",
        d = d.display()
    );
    std::fs::write(d.join("smb.conf"), conf).ok()?;
    // `--no-process-group` keeps smbd from making a session of its own, so it
    // stays in the group process_group(0) makes it lead.
    let child = Command::new(smbd)
        .args(["-F", "--no-process-group", "-s"])
        .arg(d.join("smb.conf"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .ok()?;
    let s = Smbd {
        child,
        port,
        share: d.join("share"),
        _dir: dir,
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if Instant::now() >= deadline {
            // Dropping `s` stops it.
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Some(s)
}

impl Smbd {
    /// Adds a Samba user (an existing system user, e.g. the one running the
    /// tests) with `password`, in this smbd's own passdb (`smbpasswd -c`).
    pub fn add_user(&self, name: &str, password: &str) -> Result<(), crate::FileError> {
        self.add_passdb_user(name, password).map_err(crate::FileError::Run)
    }

    fn add_passdb_user(&self, name: &str, password: &str) -> Result<(), String> {
        use std::io::Write;
        let mut c = Command::new("smbpasswd")
            .arg("-c")
            .arg(self.config())
            .args(["-s", "-a", name])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("smbpasswd: {e}"))?;
        if let Some(mut i) = c.stdin.take() {
            let _ = write!(i, "{password}\n{password}\n");
        }
        let o = c.wait_with_output().map_err(|e| format!("smbpasswd: {e}"))?;
        if !o.status.success() {
            return Err(format!("smbpasswd -a {name}: {}", String::from_utf8_lossy(&o.stderr)));
        }
        Ok(())
    }

    /// `smbstatus -b` of this smbd: its sessions, with protocol,
    /// encryption and signing.
    pub fn sessions(&self) -> String {
        Command::new("smbstatus")
            .arg("-s")
            .arg(self.config())
            .arg("-b")
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default()
    }

    /// Its smb.conf (for `smbstatus -s`).
    pub fn config(&self) -> PathBuf {
        self._dir.path().join("smb.conf")
    }

    /// `smb://127.0.0.1:PORT/bench`
    pub fn url(&self) -> String {
        format!("smb://127.0.0.1:{}/bench", self.port)
    }
}
