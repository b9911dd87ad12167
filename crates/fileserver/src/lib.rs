//! # benchlab-fileserver
//!
//! The file-server half of benchlab (NetBench's successor): a suite's
//! file workloads — NetBench-like disk mixes ([`diskmix`]) and dbench
//! loadfile replay ([`loadfile`], [`replay`]) — run against a local or
//! mounted path (`file:///PATH`) or an SMB server (`smb://…`, [`smb`]),
//! user after user on its own thread and connection ([`run`]). Every
//! operation is counted by kind with HDR latency, bytes read and written
//! are summed, and each outcome is compared with the status expected
//! ([`stats`]). [`results`] turns a suite's mixes into the one results
//! schema of every run (`benchlab_results::Results`), which crates/report
//! turns into the page, the workbook and `compare`, as for web suites.

pub mod backend;
pub mod diskmix;
pub mod error;
pub mod level;
pub mod loadfile;
pub mod mix;
pub mod process;
pub mod replay;
pub mod results;
pub mod run;
pub mod smb;
pub mod smb2_backend;
pub mod smb2_loop;
pub mod smbd;
pub mod stats;
pub mod status;
pub mod suite;
pub mod wire;

pub use error::FileError;
pub use mix::{run_mix, run_mix_part, run_mix_timed, MixRun, Part};
pub use run::{FileMixMeasure, FileMixPlan, FileTarget, FileWorkload};
pub use status::Status;
pub use wire::{FileEnd, FileOrder};
