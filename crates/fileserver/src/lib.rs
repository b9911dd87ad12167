//! # benchlab-fileserver
//!
//! The file-server half of benchlab (NetBench's successor): a suite's
//! file workloads — NetBench-like disk mixes ([`diskmix`]) and dbench
//! loadfile replay ([`loadfile`], [`replay`]) — run against a local or
//! mounted path (`file:///PATH`) or an SMB server (`smb://…`, [`smb`]),
//! user after user on its own thread and connection ([`run`]). Every
//! operation is counted by kind with HDR latency, bytes read and written
//! are summed, and each outcome is compared with the status expected
//! ([`stats`]). [`results`] turns a suite's mixes into results.json, the
//! terminal table and a report page (Mbit/s per mix, the peak, the shape
//! past it).

pub mod backend;
pub mod diskmix;
pub mod loadfile;
pub mod mix;
pub mod process;
pub mod replay;
// The old suite loop's writers (`median_run`, `write`) have no caller now
// that file suites run on the controller's loop; the results module is
// engineer B's to reshape (issue 20), so they are left, allowed, until then.
#[allow(dead_code)]
pub mod results;
pub mod run;
pub mod smb;
pub mod smbd;
pub mod stats;
pub mod status;
pub mod suite;
mod unified;
pub mod wire;
pub mod xlsx;

pub use mix::{run_mix, run_mix_part, run_mix_timed, MixRun, Part};
pub use run::{FileMixMeasure, FileMixPlan, FileTarget, FileWorkload};
pub use status::Status;
/// A file mix's measure as the lab's one result row (minimal; the full
/// mapping is `results::mix_result`'s).
pub use unified::mix_result as unified_mix_result;
pub use wire::{FileEnd, FileOrder};
