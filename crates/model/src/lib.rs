//! # benchlab-model
//!
//! Suites, mixes and workloads: the TOML a user writes, parsed and checked
//! before anything runs. Every error names the file, line and column, what
//! was found and what was expected (the vocabulary of docs/design.md: suite,
//! mix, phase, workload, class, file set).

mod duration;
mod error;
mod files;
pub mod input;
mod suite;
mod urlfile;
mod workload;

pub use duration::{
    check_duration, check_time_scale, duration_range, parse_duration, scale_duration, DurationError, MAX_DURATION,
    TIME_SCALE_MAX, TIME_SCALE_MIN,
};
pub use error::{line_col, FlagError, ModelError, ResolveError, Source};
pub use files::{is_file_target, FileWorkloadKind, FileWorkloadRef};
pub use suite::{rate_range, rate_text, Arrival, Mix, MixParams, Phase, Suite, MAX_RATE, MIN_RATE, MIN_WINDOW};
pub use urlfile::{
    write_header as write_url_file_header, write_url as write_url_file_line, UrlFile, UrlLine, MAX_URL_LINE_BYTES,
    URL_FILE_HEADER,
};
pub use workload::{
    origin, Body, Class, ClassKind, FilesetDraw, FlowWorkload, Place, Popularity, Request, ResolvedUrl, UrlEntry,
    UrlSource, Validate, Workload,
};
