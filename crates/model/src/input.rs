//! Reading a user's input files with a bound: [`benchlab_input`]'s reader
//! and excerpts, with the limits of the model's own files.

pub use benchlab_input::{excerpt, read_bounded, read_bounded_text, Classify, ExitClass, InputError, EXCERPT_CHARS};

/// The largest suite file read (suites are a few KiB; this leaves room for
/// inline URL lists).
pub const MAX_SUITE_BYTES: u64 = 64 << 20;
/// The largest workload file read (`[[class]]` lists, `from-log` output:
/// a million URLs take about 60 MB of TOML).
pub const MAX_WORKLOAD_BYTES: u64 = 512 << 20;
/// The largest dbench loadfile read (dbench's client.txt is 4 MB).
pub const MAX_LOADFILE_BYTES: u64 = 256 << 20;
/// The largest disk-mix file read (a few KiB in practice).
pub const MAX_DISK_MIX_BYTES: u64 = 16 << 20;
