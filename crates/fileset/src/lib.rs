//! # benchlab-fileset
//!
//! File sets: the documents a workload requests, generated
//! deterministically with a manifest (path, size, checksum, class, request
//! weight) so that workloads can draw URLs from it and responses can be
//! validated exactly.
//!
//! - `spec`: what a set holds (kinds, layout, sizes, weights, seeds).
//! - `content`: the HTML-like bytes of one file, from its seed.
//! - `generate`: writing a tree and its manifest, streaming and in parallel.
//! - `verify`: checking a tree against its manifest.
//! - `manifest`: the manifest format.
//!
//! Byte-for-byte reproducibility rests on three things only: SplitMix64
//! (a named, fixed algorithm, from `benchlab-rng`), integer size
//! arithmetic, and the content rules of `content`. The same kind and seed
//! give the same tree on every machine, in every thread count.

mod content;
mod generate;
// The manifest's documentation shows its lines with real tabs: the format is
// tab-separated, and the example must be copyable as it stands.
#[allow(clippy::tabs_in_doc_comments)]
mod manifest;
mod spec;
mod verify;

pub use content::fill as fill_content;
pub use generate::{generate, manifest, GenerateError, Summary, MANIFEST_FILE};
pub use manifest::{
    for_each_entry, write_entry, Entry, EntryRef, Manifest, ManifestError, MANIFEST_HEADER, MAX_MANIFEST_LINE_BYTES,
};
pub use spec::{
    specweb_size, specweb_weighted_mean, Kind, Mindcraft, Planned, Spec, SpecError, MAX_FILE_SIZE, MINDCRAFT_HEAD,
    MINDCRAFT_URLS, MINDCRAFT_ZIPF_C, PAGES_PER_DIR, SPECWEB_BYTES_PER_DIR, SPECWEB_CLASS_PERMILLE,
    SPECWEB_DEFAULT_DIRS, SPECWEB_FILES_PER_DIR, SPECWEB_FILE_PERMILLE, SPECWEB_MAX_DIRS,
};
pub use verify::{verify, Mismatch, Problem, VerifyReport};
