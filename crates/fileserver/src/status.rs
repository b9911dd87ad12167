//! Outcomes of file operations, named as SMB names them (`NT_STATUS_*`),
//! so a loadfile's expected status compares directly with what a local
//! file system or an SMB server answered.

use std::fmt;
use std::io;

/// The outcome of one file operation.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Status {
    Ok,
    /// The last path component does not exist (its directory does).
    ObjectNameNotFound,
    /// A directory on the way does not exist.
    ObjectPathNotFound,
    /// A directory search matched nothing.
    NoSuchFile,
    /// Create of something that exists.
    ObjectNameCollision,
    FileIsADirectory,
    NotADirectory,
    DirectoryNotEmpty,
    AccessDenied,
    /// The handle number was never opened (or its open failed).
    InvalidHandle,
    /// Locked by another handle.
    LockNotGranted,
    DiskFull,
    /// The backend cannot do this operation.
    NotSupported,
    /// A read or write moved other than the expected number of bytes.
    ShortTransfer,
    /// The client has no way to send this operation over this protocol
    /// (libsmbclient has no byte-range lock and no Flush): nothing went to
    /// the server. Counted apart as not sent, never as done nor as an error.
    NotSent,
    /// Anything else, by its `NT_STATUS_*` name or the OS error's words.
    Other(String),
}

impl Status {
    /// Parses `NT_STATUS_OK` etc.; any other `NT_STATUS_…` name is kept.
    pub fn parse(s: &str) -> Option<Status> {
        let name = s.strip_prefix("NT_STATUS_")?;
        if name.is_empty()
            || !name
                .bytes()
                .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
        {
            return None;
        }
        Some(match name {
            "OK" => Status::Ok,
            "OBJECT_NAME_NOT_FOUND" => Status::ObjectNameNotFound,
            "OBJECT_PATH_NOT_FOUND" => Status::ObjectPathNotFound,
            "NO_SUCH_FILE" => Status::NoSuchFile,
            "OBJECT_NAME_COLLISION" => Status::ObjectNameCollision,
            "FILE_IS_A_DIRECTORY" => Status::FileIsADirectory,
            "NOT_A_DIRECTORY" => Status::NotADirectory,
            "DIRECTORY_NOT_EMPTY" => Status::DirectoryNotEmpty,
            "ACCESS_DENIED" => Status::AccessDenied,
            "INVALID_HANDLE" => Status::InvalidHandle,
            "LOCK_NOT_GRANTED" => Status::LockNotGranted,
            "DISK_FULL" => Status::DiskFull,
            "NOT_SUPPORTED" => Status::NotSupported,
            other => Status::Other(format!("NT_STATUS_{other}")),
        })
    }

    /// The `NT_STATUS_*` name (or benchlab's own word for a short transfer).
    pub fn name(&self) -> String {
        let n = match self {
            Status::Ok => "OK",
            Status::ObjectNameNotFound => "OBJECT_NAME_NOT_FOUND",
            Status::ObjectPathNotFound => "OBJECT_PATH_NOT_FOUND",
            Status::NoSuchFile => "NO_SUCH_FILE",
            Status::ObjectNameCollision => "OBJECT_NAME_COLLISION",
            Status::FileIsADirectory => "FILE_IS_A_DIRECTORY",
            Status::NotADirectory => "NOT_A_DIRECTORY",
            Status::DirectoryNotEmpty => "DIRECTORY_NOT_EMPTY",
            Status::AccessDenied => "ACCESS_DENIED",
            Status::InvalidHandle => "INVALID_HANDLE",
            Status::LockNotGranted => "LOCK_NOT_GRANTED",
            Status::DiskFull => "DISK_FULL",
            Status::NotSupported => "NOT_SUPPORTED",
            Status::ShortTransfer => return "short transfer".to_string(),
            Status::NotSent => return "not sent".to_string(),
            Status::Other(s) => return s.clone(),
        };
        format!("NT_STATUS_{n}")
    }

    /// What an OS error means as a status. `ENOENT` is refined by the
    /// caller (name vs path not found), which knows the path.
    pub fn from_io(e: &io::Error) -> Status {
        match e.raw_os_error() {
            Some(libc::ENOENT) => Status::ObjectNameNotFound,
            Some(libc::EEXIST) => Status::ObjectNameCollision,
            Some(libc::EISDIR) => Status::FileIsADirectory,
            Some(libc::ENOTDIR) => Status::ObjectPathNotFound,
            Some(libc::ENOTEMPTY) => Status::DirectoryNotEmpty,
            Some(libc::EACCES) | Some(libc::EPERM) => Status::AccessDenied,
            Some(libc::EAGAIN) => Status::LockNotGranted,
            Some(libc::ENOSPC) => Status::DiskFull,
            Some(libc::EBADF) => Status::InvalidHandle,
            Some(libc::ENOTSUP) => Status::NotSupported,
            _ => Status::Other(e.to_string()),
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for s in [
            "NT_STATUS_OK",
            "NT_STATUS_OBJECT_NAME_NOT_FOUND",
            "NT_STATUS_NO_SUCH_FILE",
            "NT_STATUS_SHARING_VIOLATION",
        ] {
            assert_eq!(Status::parse(s).unwrap().name(), s);
        }
        assert_eq!(Status::parse("STATUS_OK"), None);
        assert_eq!(Status::parse("NT_STATUS_"), None);
        assert_eq!(Status::parse("NT_STATUS_ok"), None);
    }
}
