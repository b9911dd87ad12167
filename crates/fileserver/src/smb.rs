//! SMB targets (`smb://[USER[:PASS]@]HOST[:PORT]/SHARE`).

use crate::backend::FileBackend;
use crate::status::Status;

/// A parsed `smb://` target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SmbUrl {
    pub user: Option<String>,
    pub password: Option<String>,
    pub host: String,
    pub port: u16,
    pub share: String,
}

impl SmbUrl {
    pub fn parse(t: &str) -> Result<SmbUrl, String> {
        let bad = |why: &str| format!("target `{t}`: {why}: expected smb://[USER[:PASS]@]HOST[:PORT]/SHARE");
        let rest = t.strip_prefix("smb://").ok_or_else(|| bad("not smb://"))?;
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
        })
    }
}

pub struct SmbBackend {}

impl SmbBackend {
    pub fn connect(_u: &SmbUrl) -> Result<SmbBackend, String> {
        Err("smb:// is not built yet".into())
    }
}

impl FileBackend for SmbBackend {
    fn create(&mut self, _: u64, _: &str, _: bool, _: u32) -> Result<(), Status> {
        Err(Status::NotSupported)
    }
    fn close(&mut self, _: u64) -> Result<(), Status> {
        Err(Status::NotSupported)
    }
    fn read(&mut self, _: u64, _: u64, _: &mut [u8]) -> Result<usize, Status> {
        Err(Status::NotSupported)
    }
    fn write(&mut self, _: u64, _: u64, _: &[u8]) -> Result<usize, Status> {
        Err(Status::NotSupported)
    }
    fn query_path(&mut self, _: &str) -> Result<(), Status> {
        Err(Status::NotSupported)
    }
    fn query_file(&mut self, _: u64) -> Result<(), Status> {
        Err(Status::NotSupported)
    }
    fn query_fs(&mut self) -> Result<(), Status> {
        Err(Status::NotSupported)
    }
    fn set_file_info(&mut self, _: u64) -> Result<(), Status> {
        Err(Status::NotSupported)
    }
    fn find(&mut self, _: &str) -> Result<u32, Status> {
        Err(Status::NotSupported)
    }
    fn lock(&mut self, _: u64, _: u64, _: u64, _: bool) -> Result<(), Status> {
        Err(Status::NotSupported)
    }
    fn flush(&mut self, _: u64) -> Result<(), Status> {
        Err(Status::NotSupported)
    }
    fn unlink(&mut self, _: &str) -> Result<(), Status> {
        Err(Status::NotSupported)
    }
    fn rename(&mut self, _: &str, _: &str) -> Result<(), Status> {
        Err(Status::NotSupported)
    }
    fn mkdir(&mut self, _: &str) -> Result<(), Status> {
        Err(Status::NotSupported)
    }
    fn deltree(&mut self, _: &str) -> Result<(), Status> {
        Err(Status::NotSupported)
    }
}
