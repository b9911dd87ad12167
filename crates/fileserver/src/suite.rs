//! A file suite's workloads, read and checked before anything runs. The
//! suite's run itself is the controller's one suite loop (crate
//! `benchlab-controller`, module `file`), as for web suites.

use crate::diskmix::DiskMix;
use crate::error::FileError;
use crate::loadfile::Loadfile;
use crate::run::FileWorkload;
use benchlab_model::{FileWorkloadKind, FileWorkloadRef, Suite};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Reads and checks one file workload (a disk-mix file or a loadfile).
pub fn load_workload(w: &FileWorkloadRef) -> Result<FileWorkload, FileError> {
    load(w).map_err(FileError::Input)
}

fn load(w: &FileWorkloadRef) -> Result<FileWorkload, String> {
    Ok(match w.kind {
        FileWorkloadKind::DiskMix => {
            FileWorkload::DiskMix(Arc::new(DiskMix::read(&w.path).map_err(|e| e.to_string())?))
        }
        FileWorkloadKind::Loadfile => {
            FileWorkload::Loadfile(Arc::new(Loadfile::read(&w.path).map_err(|e| e.to_string())?), w.loops)
        }
    })
}

/// Reads and checks every file workload of the suite, before anything runs.
pub fn load_workloads(suite: &Suite) -> Result<BTreeMap<String, FileWorkload>, FileError> {
    suite
        .file_workloads
        .iter()
        .map(|(name, w)| Ok((name.clone(), load_workload(w)?)))
        .collect()
}
