//! The hot loop allocates nothing per request in steady state (issue 2):
//! two runs with the same connections but 10× the requests must make about
//! the same number of heap allocations. A per-request allocation anywhere
//! (request building, parsing, recording, the event loop) would add at least
//! one allocation per extra request.

#[path = "common/counting.rs"]
mod counting;

use counting::{per_request, per_request_of};
use std::time::Duration;

#[test]
fn no_allocation_per_request() {
    let each = per_request(false, 4, Duration::ZERO, 2_000);
    assert!(
        each == 0.0,
        "{each} allocations per request: something allocates per request"
    );
}

/// A request larger than the OS thread's send buffer (4 KiB), written with
/// `writev` of its parts instead of joined for one `write`, allocates
/// nothing either.
#[test]
fn no_allocation_per_request_written_in_parts() {
    let each = per_request_of(false, 4, Duration::ZERO, 1_000, 6_000);
    assert!(
        each == 0.0,
        "{each} allocations per request: something allocates per large request"
    );
}

/// TLS: benchlab allocates nothing per request — the records go through
/// the OS thread's buffers and an idle connection keeps none — but rustls
/// copies each record it decrypts (`ReadTraffic` hands out an owned
/// `Vec`) and encrypts (its record layer) into a `Vec` of its own: two per
/// request of one record each way, and nothing more, whether the
/// connection is used at once or rests idle between requests.
#[test]
fn tls_allocates_only_rustls_records_per_request() {
    let busy = per_request(true, 4, Duration::ZERO, 1_000);
    assert!(busy <= 2.0, "{busy} allocations per TLS request (rustls's 2 at most)");
    let idle = per_request(true, 64, Duration::from_millis(1), 1_000);
    assert!(
        idle <= 2.0,
        "{idle} allocations per TLS request after idle (rustls's 2 at most)"
    );
}
