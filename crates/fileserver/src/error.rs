//! The one error type file suites hand to other crates, with its exit
//! class: the user's input (a target, a loadfile, a disk mix: exit 2) or a
//! mix that could not run (the server, the machine: exit 1).

/// What stopped a file workload from being read or a file mix from
/// running; the message names the target, file and line, or the user.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FileError {
    /// A target, workload file or loadfile the user gave is wrong.
    #[error("{0}")]
    Input(String),
    /// The mix could not run: the server refused a connection, the target
    /// directory is missing, a user process did not start, a workspace
    /// could not be filled.
    #[error("{0}")]
    Run(String),
}

impl FileError {
    /// The same error with `context` (`"mix 3"`) before its message.
    pub fn context(self, context: impl std::fmt::Display) -> FileError {
        match self {
            FileError::Input(m) => FileError::Input(format!("{context}: {m}")),
            FileError::Run(m) => FileError::Run(format!("{context}: {m}")),
        }
    }
}

impl benchlab_input::Classify for FileError {
    fn exit_class(&self) -> benchlab_input::ExitClass {
        match self {
            FileError::Input(_) => benchlab_input::ExitClass::Usage,
            FileError::Run(_) => benchlab_input::ExitClass::CannotRun,
        }
    }
}

/// Inside the crate, functions that still speak in messages take a
/// `FileError` with `?`: only its message goes on.
impl From<FileError> for String {
    fn from(e: FileError) -> String {
        e.to_string()
    }
}

#[cfg(test)]
mod tests {
    use benchlab_input::{Classify, ExitClass};

    /// A bad target is the user's input; a directory that is not there
    /// when the mix connects is a mix that cannot run.
    #[test]
    fn targets_and_connections_keep_their_exit_class() {
        let bad = crate::FileTarget::parse("ftp://h/s").unwrap_err();
        assert_eq!(bad.exit_class(), ExitClass::Usage, "{bad}");
        let bad = crate::smb::SmbUrl::parse("smb://u:SECRET@h:x/s").unwrap_err();
        assert_eq!(bad.exit_class(), ExitClass::Usage);
        assert!(!bad.to_string().contains("SECRET"), "{bad}");
        let gone = crate::FileTarget::Local("/nonexistent/benchlab-target".into());
        let e = gone.connect().err().expect("no such directory");
        assert_eq!(e.exit_class(), ExitClass::CannotRun, "{e}");
        assert_eq!(
            e.context("mix 3").to_string(),
            "mix 3: file:///nonexistent/benchlab-target: not a directory"
        );
    }
}
