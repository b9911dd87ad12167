//! # benchlab-controller
//!
//! The controller runs a suite: mix after mix of rising load, every
//! participating client (test system) started at the same instant, only the
//! measurement window counted, results written as each mix ends. Clients
//! are driven through one interface ([`ClientDriver`]): in-process clients
//! over the engine, or remote agents (crate `benchlab-agent`).

mod driver;
mod file;
pub mod machine;
mod measure;
pub mod peak;
pub mod plan;
mod run;

pub use benchlab_results::*;
pub use driver::{instant_at, ClientDriver, ClientLost, ClientPool, DriverError, InProcess, LocalClient};
pub use measure::{errors_of, latency_of, request_kinds, FiguresOf, OpenLoopOf};
pub use run::{
    arrival_warning, drive_mix, prepare, run_prepared, run_prepared_search, run_suite, CacheEvictor, ClientEnd,
    ControllerError, Driven, Observer, Prepared, Quiet, RunOptions,
};
