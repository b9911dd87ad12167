//! File-server workloads as a suite names them: a disk-mix workload file
//! (`disk_mix = "netbench-disk-mix.toml"`) or a dbench loadfile
//! (`loadfile = "/usr/share/dbench/client.txt"`). The suite only records
//! which and where; crates/fileserver reads and checks the file itself
//! (with its own file:line errors) before anything runs.

use crate::error::{ModelError, Source};
use std::path::{Path, PathBuf};

/// What a file-server workload replays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileWorkloadKind {
    /// A NetBench-like disk mix: operation shares and a file-size law.
    DiskMix,
    /// A dbench loadfile, replayed line by line.
    Loadfile,
}

impl FileWorkloadKind {
    /// The suite key that names this kind.
    pub fn key(self) -> &'static str {
        match self {
            FileWorkloadKind::DiskMix => "disk_mix",
            FileWorkloadKind::Loadfile => "loadfile",
        }
    }
}

/// A file-server workload of a suite.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileWorkloadRef {
    pub kind: FileWorkloadKind,
    /// The workload file or loadfile (relative paths are to the suite file).
    pub path: PathBuf,
    /// Loadfile passes per user, then the user stops (exact counts);
    /// `None`: passes repeat until the mix ends.
    pub loops: Option<u32>,
}

/// Whether `t` is a file-server target: `file:///PATH` or `smb://HOST/SHARE`.
pub fn is_file_target(t: &str) -> bool {
    t.strip_prefix("file://").is_some_and(|p| p.starts_with('/'))
        || t.strip_prefix("smb://").is_some_and(|r| r.len() > 1 && r.contains('/'))
}

/// The file-server keys of a suite's `[workloads.KEY]` table, as the
/// suite's parser read them (the suite depends on this module, not the
/// other way round).
pub(crate) struct FileKeys<'a> {
    pub(crate) disk_mix: &'a Option<String>,
    pub(crate) loadfile: &'a Option<String>,
    pub(crate) loops: &'a Option<toml::Spanned<u32>>,
    pub(crate) target: &'a Option<toml::Spanned<String>>,
}

/// The file-server workload of `[workloads.KEY]`, if it names one.
pub(crate) fn file_workload(
    src: &Source,
    key: &str,
    at: usize,
    w: FileKeys<'_>,
    dir: &Path,
) -> Result<Option<FileWorkloadRef>, ModelError> {
    let (kind, file) = match (w.disk_mix, w.loadfile) {
        (None, None) => {
            if let Some(l) = w.loops {
                return Err(src.error_at(
                    l.span().start,
                    format!("workload `{key}`: `loops` without `loadfile`: expected it with a loadfile"),
                ));
            }
            return Ok(None);
        }
        (Some(_), Some(_)) => {
            return Err(src.error_at(
                at,
                format!("workload `{key}` has both `disk_mix` and `loadfile`: expected one of them"),
            ))
        }
        (Some(f), None) => (FileWorkloadKind::DiskMix, f),
        (None, Some(f)) => (FileWorkloadKind::Loadfile, f),
    };
    let loops = match w.loops {
        Some(l) if *l.get_ref() == 0 => {
            return Err(src.error_at(
                l.span().start,
                format!("workload `{key}`: loops = 0: expected at least 1"),
            ))
        }
        Some(l) if kind != FileWorkloadKind::Loadfile => {
            return Err(src.error_at(
                l.span().start,
                format!("workload `{key}`: `loops` is for a loadfile: a disk mix runs until the mix ends"),
            ))
        }
        l => l.as_ref().map(|l| *l.get_ref()),
    };
    if let Some(t) = w.target {
        if !is_file_target(t.get_ref()) {
            return Err(src.error_at(
                t.span().start,
                format!(
                    "workload `{key}`: target `{}`: expected file:///PATH or smb://[USER[:PASS]@]HOST[:PORT]/SHARE",
                    t.get_ref()
                ),
            ));
        }
    }
    let p = PathBuf::from(file);
    Ok(Some(FileWorkloadRef {
        kind,
        loops,
        path: if p.is_absolute() { p } else { dir.join(p) },
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Suite;

    fn suite(text: &str) -> Result<Suite, ModelError> {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.toml");
        std::fs::write(&p, text).unwrap();
        Suite::from_file(&p)
    }

    #[test]
    fn file_targets() {
        assert!(is_file_target("file:///tmp/x"));
        assert!(is_file_target("smb://127.0.0.1:4450/share"));
        assert!(is_file_target("smb://u:p@h/s"));
        assert!(!is_file_target("file://tmp"));
        assert!(!is_file_target("smb://host"));
        assert!(!is_file_target("http://h/"));
    }

    #[test]
    fn a_file_suite_parses_and_its_mixes_need_file_targets() {
        let s = suite(
            "name = \"f\"\ntarget = \"file:///tmp/x\"\n[workloads.d]\nloadfile = \"client.txt\"\n[[mix]]\nclients = 2\nlength = \"2s\"\nramp_up = \"0s\"\nramp_down = \"0s\"\n",
        )
        .unwrap();
        assert_eq!(s.file_workloads["d"].kind, FileWorkloadKind::Loadfile);
        assert!(s.file_workloads["d"].path.ends_with("client.txt"));
        assert_eq!(s.mixes[0].params.workload, "d");
        let e = suite(
            "name = \"f\"\ntarget = \"http://h/\"\n[workloads.d]\ndisk_mix = \"m.toml\"\n[[mix]]\nclients = 2\nlength = \"2s\"\nramp_up = \"0s\"\nramp_down = \"0s\"\n",
        )
        .unwrap_err();
        assert_eq!(e.line, Some(5), "{e}");
        assert!(e.message.contains("expected file:///PATH"), "{e}");
        let e = suite("[workloads.d]\ndisk_mix = \"m\"\nloadfile = \"l\"\n[[mix]]\nclients = 1\n").unwrap_err();
        assert!(e.message.contains("both `disk_mix` and `loadfile`"), "{e}");
        let e = suite("[workloads.d]\nloadfile = \"l\"\ntarget = \"http://x/\"\n[[mix]]\nclients = 1\n").unwrap_err();
        assert_eq!(e.line, Some(3), "{e}");
        let mut s = suite("target = \"file:///a\"\n[workloads.d]\nloadfile = \"l\"\n[[mix]]\nclients = 1\nlength = \"2s\"\nramp_up = \"0s\"\nramp_down = \"0s\"\n").unwrap();
        s.retarget_phase("d", "smb://h/s").unwrap();
        assert_eq!(s.mixes[0].params.target, "smb://h/s");
        let e = s.retarget_phase("d", "http://h/").unwrap_err().to_string();
        assert!(e.contains("runs a file workload"), "{e}");
    }
}
