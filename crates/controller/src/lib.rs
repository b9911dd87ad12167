//! # benchlab-controller
//!
//! The controller runs a suite: mix after mix of rising load, every
//! participating client (test system) started at the same instant, only the
//! measurement window counted, results written as each mix ends. Clients
//! are driven through one interface ([`ClientDriver`]): in-process clients
//! over the engine, or remote agents (crate `benchlab-agent`).

mod aggregate;
mod drive;
mod driver;
mod environment;
mod file;
pub mod machine;
mod measure;
mod options;
pub mod peak;
mod phase;
pub mod plan;
mod run;
mod skew;
mod verdict;

pub use aggregate::{arrival_warning, http_mix, http_results, HttpRun};
pub use benchlab_results::*;
pub use drive::{drive_mix, ClientEnd, Driven};
pub use driver::{
    instant_at, ClientDriver, ClientKind, ClientLost, ClientPool, Driver, DriverError, FileClient, FileClientDriver,
    InProcess, LocalClient, WebClient,
};
pub use measure::{errors_of, latency_of, request_kinds, FiguresOf, OpenLoopOf};
pub use options::{CacheEvictor, ColdCacheError, ControllerError, MergedSecond, Observer, Quiet, RunOptions};
pub use phase::{prepare, Prepared};
pub use run::{drop_page_cache, run_prepared, run_prepared_search, run_suite};
pub use skew::start_spread;
