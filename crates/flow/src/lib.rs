//! # benchlab-flow
//!
//! User flows without sockets: what a virtual user of a flow workload needs
//! between one response and its next request (docs/flows.md). A flow is an
//! ordered list of steps — each a request with a method, a URL, headers and
//! a body, `{{name}}` templates in them — with loops and weighted branches;
//! feeders give each user its data, captures take values from responses,
//! checks judge them, a cookie jar per user carries the session.
//!
//! The engine drives it: [`FlowUser::next_request`] renders a request into
//! the engine's [`RequestBuf`] and [`FlowUser::on_response`] takes the
//! answer. Built for the hot loop: everything is parsed when the flow is
//! compiled, variables are small integer ids, rendering copies bytes into
//! reused buffers — a plain step allocates nothing, a templated one costs
//! well under a microsecond (`examples/render_cost.rs`).
//!
//! A crate of its own, below the engine and the model: it depends on
//! neither, so both can use it, and the fuzzer can reach its parsers.

#![forbid(unsafe_code)]

pub mod capture;
pub mod check;
pub mod cookie;
pub mod feeder;
#[doc(hidden)]
pub mod fuzz;
mod ordered;
pub mod origin;
pub mod spec;
pub mod template;
pub mod user;

pub use capture::MAX_CAPTURE_BODY;
pub use cookie::CookieJar;
pub use feeder::{Feeder, Format, Mode, OnEnd};
pub use spec::{Flow, FlowSource, FlowSpec, SpecError, Step};
pub use template::{Context, Template, TemplateError, VarId, VarTable, Vars};
pub use user::{FlowUser, Origin, RequestBuf, StepOutcome, StepRef};
