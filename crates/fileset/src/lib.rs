//! # benchlab-fileset
//!
//! File sets: the documents a workload requests, generated
//! deterministically with a manifest (path, size, checksum, class, request
//! weight) so that workloads can draw URLs from it and responses can be
//! validated exactly. See `manifest` for the format.

mod manifest;

pub use manifest::{write_entry, Entry, Manifest, ManifestError, MANIFEST_HEADER};
