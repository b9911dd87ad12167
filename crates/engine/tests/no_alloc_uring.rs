//! The io_uring event source (`BENCHLAB_IO=uring`) allocates nothing per
//! request in steady state either: its receives land in the ring's
//! provided buffers and its sends are `SENDMSG` entries built in place,
//! and on the 16-core machine it is the cheaper path (bench/README.md,
//! "the 16-core figure, and io_uring"). Measured as `no_alloc.rs` does.
//! A binary of its own: the event source is read once per process.

#[path = "common/counting.rs"]
mod counting;

use benchlab_engine::{ClassPlan, Client, ClientPlan, Expect, Stop, Target, UrlPlan};
use counting::{per_request, per_request_of};
use std::time::{Duration, Instant};

/// One test, so nothing runs before the variable is set: a request joined
/// for one send, then one larger than the send buffer (its parts sent as
/// they are). Where io_uring cannot start, the client reports no requests
/// and the count's check fails, naming the error on stderr.
#[test]
fn no_allocation_per_request_with_io_uring() {
    std::env::set_var("BENCHLAB_IO", "uring");
    // The measure runs on io_uring, not the default: io_uring refuses an
    // https URL at start, the default takes it.
    let url = UrlPlan {
        expect: Expect::Size(0),
        ..UrlPlan::get(Target::parse("https://127.0.0.1:9/").expect("url"))
    };
    let mut plan = ClientPlan::new(vec![url], vec![ClassPlan { name: "x".into() }]);
    plan.stop = Stop::Requests(1);
    let refused = match Client::start(plan, Instant::now()) {
        Err(e) => e.to_string(),
        Ok(_) => "started".to_string(),
    };
    assert!(refused.contains("BENCHLAB_IO=uring"), "not on io_uring: {refused}");
    let each = per_request(false, 4, Duration::ZERO, 2_000);
    assert!(
        each == 0.0,
        "{each} allocations per request with io_uring: something allocates per request"
    );
    let each = per_request_of(false, 4, Duration::ZERO, 1_000, 6_000);
    assert!(each == 0.0, "{each} allocations per large request with io_uring");
}
