//! benchlab against a misbehaving HTTP/1 server (`support/bad_server.rs`):
//! every failure must land in its exact error bucket, with exact counts.
//!
//! Bucket rules benchlab implements (docs/connections.md and
//! docs/counting.md):
//! - connection reset (RST) at any time of a request → `reset`;
//! - clean close (FIN) after the head but before the body is complete →
//!   `short_body`;
//! - FIN before a complete head on a NEW connection, or in the middle of a
//!   head: `reset` when zero bytes of the response arrived, `framing` when
//!   part of a head did;
//! - FIN or RST with zero bytes on a REUSED keep-alive connection → not an
//!   error: benchlab reconnects and resends, and counts a `reconnect`;
//! - a response that is not HTTP, or a broken head → `framing`;
//! - a response head over 64 KiB → `header_too_large`;
//! - no complete response within `--timeout` (connect included) → `timeout`;
//! - status other than `--expect-status` (default 200) → `status`;
//! - body size (learnt by the preflight, or from the manifest) differs under
//!   `--validate size` → `wrong_body`;
//! - nothing listens → `connect_refused`.
//!
//! Counting: `bytes`/`body_bytes` only for successful requests (wire bytes,
//! chunk lines and 1xx interim responses included / decoded body);
//! `error_bytes` for failed ones. With `--requests N`, N requests complete
//! (successful or failed): `requests + errors_total == N`, `in_flight == 0`.
//! A run completes with exit 0 whatever the server did; only a failed
//! preflight (unexpected status or a broken response) exits 1, so the tests
//! of broken paths pass `--no-preflight`.

#[path = "support/bad_server.rs"]
mod bad_server;
mod common;

use bad_server::*;
use common::{free_port, http_json, run_benchlab, u};
use serde_json::Value;
use std::time::{Duration, Instant};

const KINDS: [&str; 19] = [
    "connect_refused",
    "connect_timeout",
    "reset",
    "timeout",
    "status",
    "framing",
    "short_body",
    "wrong_body",
    "header_too_large",
    "tls",
    "bind",
    "stream_reset",
    "goaway",
    "flow_control",
    "body_incomplete",
    "check_failed",
    "quic_close",
    "handshake_timeout",
    "version_negotiation",
];

/// Runs `benchlab http --json ARGS` (exit 0 required) and times it.
fn timed(args: &[&str]) -> (Value, Duration) {
    let start = Instant::now();
    let v = http_json(args);
    (v, start.elapsed())
}

/// Asserts the error buckets: those in `expected` with their counts, every
/// other bucket 0, and `errors_total` their sum.
fn assert_errors(v: &Value, expected: &[(&str, u64)]) {
    for kind in KINDS {
        let want = expected.iter().find(|(k, _)| *k == kind).map_or(0, |(_, n)| *n);
        let got = u(v, &format!("/errors/{kind}"));
        assert_eq!(got, want, "errors.{kind}: got {got}, expected {want}\n{v:#}");
    }
    let total: u64 = expected.iter().map(|(_, n)| n).sum();
    assert_eq!(u(v, "/errors_total"), total, "errors_total\n{v:#}");
}

/// `--requests n` completed exactly: successes + failures == n, none left.
fn assert_completed(v: &Value, n: u64) {
    assert_eq!(
        u(v, "/requests") + u(v, "/errors_total"),
        n,
        "requests + errors_total must be {n}\n{v:#}"
    );
    assert_eq!(u(v, "/in_flight"), 0, "in_flight\n{v:#}");
}

/// A failed request adds nothing to throughput.
fn assert_no_success_bytes(v: &Value) {
    assert_eq!(u(v, "/requests"), 0, "requests\n{v:#}");
    assert_eq!(u(v, "/bytes"), 0, "bytes\n{v:#}");
    assert_eq!(u(v, "/body_bytes"), 0, "body_bytes\n{v:#}");
}

fn len(b: &[u8]) -> u64 {
    b.len() as u64
}

// ---------------------------------------------------------------- successes

#[test]
fn ok_keep_alive_counts_exact_bytes() {
    let srv = BadServer::start();
    let v = http_json(&["-t", "4", "--requests", "40", &srv.url("/ok")]);
    assert_completed(&v, 40);
    assert_errors(&v, &[]);
    assert_eq!(u(&v, "/requests"), 40);
    assert_eq!(u(&v, "/bytes"), 40 * len(&ok_response(false, false)), "{v:#}");
    assert_eq!(u(&v, "/body_bytes"), 40 * OK_BODY_LEN as u64, "{v:#}");
    assert_eq!(u(&v, "/error_bytes"), 0, "{v:#}");
    assert_eq!(u(&v, "/reconnects"), 0, "{v:#}");
    // 4 persistent connections, plus perhaps one for the preflight.
    assert!(srv.connections() <= 5, "server saw {} connections", srv.connections());
    assert!(u(&v, "/connections_opened") <= 5, "{v:#}");
    // Only the preflight (if any) may ask to close its connection.
    let preflight = srv.requests("/ok") - 40;
    assert!(preflight <= 1, "{preflight} preflight requests");
    assert!(
        srv.close_requests() <= preflight,
        "{} requests asked to close",
        srv.close_requests()
    );
}

#[test]
fn ok_http10_opens_one_connection_per_request() {
    let srv = BadServer::start();
    let v = http_json(&[
        "--http",
        "1.0",
        "--no-preflight",
        "-t",
        "4",
        "--requests",
        "20",
        &srv.url("/ok"),
    ]);
    assert_completed(&v, 20);
    assert_errors(&v, &[]);
    assert_eq!(srv.requests("/ok"), 20);
    assert_eq!(srv.connections(), 20, "HTTP/1.0: a connection per request");
    assert_eq!(srv.close_requests(), 20);
    assert_eq!(u(&v, "/connections_opened"), 20, "{v:#}");
    assert_eq!(u(&v, "/bytes"), 20 * len(&ok_response(true, false)), "{v:#}");
    assert_eq!(u(&v, "/body_bytes"), 20 * OK_BODY_LEN as u64, "{v:#}");
}

#[test]
fn ok_requests_per_connection_closes_every_third() {
    let srv = BadServer::start();
    let v = http_json(&[
        "--requests-per-connection",
        "3",
        "--no-preflight",
        "-t",
        "1",
        "--requests",
        "12",
        &srv.url("/ok"),
    ]);
    assert_completed(&v, 12);
    assert_errors(&v, &[]);
    assert_eq!(srv.connections(), 4, "12 requests, 3 per connection");
    assert_eq!(srv.close_requests(), 4, "the last of each 3 says close");
    assert_eq!(u(&v, "/reconnects"), 0, "{v:#}");
    let want = 4 * len(&ok_response(true, false)) + 8 * len(&ok_response(false, false));
    assert_eq!(u(&v, "/bytes"), want, "{v:#}");
}

#[test]
fn chunked_with_extensions_and_trailers_succeeds() {
    let srv = BadServer::start();
    let v = http_json(&["-t", "4", "--requests", "40", &srv.url("/chunked")]);
    assert_completed(&v, 40);
    assert_errors(&v, &[]);
    assert_eq!(u(&v, "/body_bytes"), 40 * CHUNKED_BODY_LEN as u64, "{v:#}");
    assert_eq!(u(&v, "/bytes"), 40 * len(&chunked_response()), "{v:#}");
    assert_eq!(u(&v, "/reconnects"), 0, "{v:#}");
}

#[test]
fn chunked_split_across_tiny_reads_succeeds() {
    let srv = BadServer::start();
    let v = http_json(&[
        "--receive-buffer",
        "64",
        "-t",
        "2",
        "--requests",
        "20",
        &srv.url("/chunked"),
    ]);
    assert_completed(&v, 20);
    assert_errors(&v, &[]);
    assert_eq!(u(&v, "/body_bytes"), 20 * CHUNKED_BODY_LEN as u64, "{v:#}");
    assert_eq!(u(&v, "/bytes"), 20 * len(&chunked_response()), "{v:#}");
}

#[test]
fn interim_100_continue_is_skipped_and_counted() {
    let srv = BadServer::start();
    let v = http_json(&["-t", "4", "--requests", "40", &srv.url("/interim")]);
    assert_completed(&v, 40);
    assert_errors(&v, &[]);
    assert_eq!(u(&v, "/body_bytes"), 40 * INTERIM_BODY_LEN as u64, "{v:#}");
    assert_eq!(
        u(&v, "/bytes"),
        40 * len(&interim_response()),
        "bytes include the interim response\n{v:#}"
    );
}

#[test]
fn interim_split_across_tiny_reads_succeeds() {
    let srv = BadServer::start();
    let v = http_json(&[
        "--receive-buffer",
        "64",
        "-t",
        "2",
        "--requests",
        "20",
        &srv.url("/interim"),
    ]);
    assert_completed(&v, 20);
    assert_errors(&v, &[]);
    assert_eq!(u(&v, "/bytes"), 20 * len(&interim_response()), "{v:#}");
}

#[test]
fn http10_response_read_to_close_succeeds() {
    let srv = BadServer::start();
    let v = http_json(&["-t", "4", "--requests", "20", &srv.url("/http10-eof")]);
    assert_completed(&v, 20);
    assert_errors(&v, &[]);
    assert_eq!(u(&v, "/body_bytes"), 20 * HTTP10_BODY_LEN as u64, "{v:#}");
    assert_eq!(u(&v, "/bytes"), 20 * len(&http10_eof_response()), "{v:#}");
    // Read-to-close: no connection can carry a second request.
    let preflight = srv.requests("/http10-eof") - 20;
    assert!(preflight <= 1, "{preflight} preflight requests");
    assert_eq!(srv.connections(), 20 + preflight);
    // The server closing after a read-to-close response is no idle close.
    assert_eq!(u(&v, "/reconnects"), 0, "{v:#}");
}

#[test]
fn idle_close_fin_reconnects_without_errors() {
    let srv = BadServer::start();
    let v = http_json(&[
        "--think-time",
        "200ms",
        "-t",
        "2",
        "--requests",
        "10",
        &srv.url("/close-idle"),
    ]);
    assert_completed(&v, 10);
    assert_errors(&v, &[]);
    assert_eq!(u(&v, "/requests"), 10);
    assert_eq!(u(&v, "/bytes"), 10 * len(&idle_response()), "{v:#}");
    // Each VU's first request opens its connection; each later one finds
    // it closed by the server during the think time.
    assert_eq!(u(&v, "/reconnects"), 8, "{v:#}");
}

#[test]
fn idle_close_rst_reconnects_without_errors() {
    let srv = BadServer::start();
    let v = http_json(&[
        "--think-time",
        "200ms",
        "-t",
        "2",
        "--requests",
        "10",
        &srv.url("/rst-idle"),
    ]);
    assert_completed(&v, 10);
    assert_errors(&v, &[]);
    assert_eq!(u(&v, "/requests"), 10);
    assert_eq!(u(&v, "/bytes"), 10 * len(&idle_response()), "{v:#}");
    // Each VU's first request opens its connection; each later one finds
    // it closed by the server during the think time.
    assert_eq!(u(&v, "/reconnects"), 8, "{v:#}");
}

// ------------------------------------------------------------------ errors

#[test]
fn truncated_body_then_fin_is_short_body() {
    let srv = BadServer::start();
    let v = http_json(&["--no-preflight", "-t", "5", "--requests", "20", &srv.url("/truncated")]);
    assert_completed(&v, 20);
    assert_errors(&v, &[("short_body", 20)]);
    assert_no_success_bytes(&v);
    assert_eq!(u(&v, "/error_bytes"), 20 * len(&truncated_sent()), "{v:#}");
    assert_eq!(srv.requests("/truncated"), 20, "no request may be resent");
}

#[test]
fn truncated_body_fails_the_preflight() {
    let srv = BadServer::start();
    let out = run_benchlab(&["http", "--json", "--requests", "5", &srv.url("/truncated")]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "a broken preflight must exit 1\nstderr:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn reset_mid_body_is_reset() {
    let srv = BadServer::start();
    let v = http_json(&["--no-preflight", "-t", "5", "--requests", "20", &srv.url("/reset")]);
    assert_completed(&v, 20);
    assert_errors(&v, &[("reset", 20)]);
    assert_no_success_bytes(&v);
    // What arrived before the RST depends on timing: at most what was sent.
    assert!(u(&v, "/error_bytes") <= 20 * len(&reset_sent()), "{v:#}");
    assert_eq!(srv.requests("/reset"), 20, "no request may be resent");
}

#[test]
fn garbage_response_is_framing() {
    let srv = BadServer::start();
    let v = http_json(&["--no-preflight", "-t", "5", "--requests", "20", &srv.url("/garbage")]);
    assert_completed(&v, 20);
    assert_errors(&v, &[("framing", 20)]);
    assert_no_success_bytes(&v);
    assert_eq!(u(&v, "/error_bytes"), 20 * len(GARBAGE), "{v:#}");
}

#[test]
fn fin_in_the_middle_of_a_head_is_framing() {
    let srv = BadServer::start();
    let v = http_json(&[
        "--no-preflight",
        "-t",
        "5",
        "--requests",
        "20",
        &srv.url("/partial-head"),
    ]);
    assert_completed(&v, 20);
    assert_errors(&v, &[("framing", 20)]);
    assert_no_success_bytes(&v);
    assert_eq!(u(&v, "/error_bytes"), 20 * len(PARTIAL_HEAD), "{v:#}");
}

#[test]
fn fin_before_any_byte_on_a_new_connection_is_reset() {
    let srv = BadServer::start();
    let v = http_json(&["--no-preflight", "-t", "5", "--requests", "20", &srv.url("/close-now")]);
    assert_completed(&v, 20);
    assert_errors(&v, &[("reset", 20)]);
    assert_no_success_bytes(&v);
    assert_eq!(u(&v, "/error_bytes"), 0, "{v:#}");
    assert_eq!(u(&v, "/reconnects"), 0, "new connections are not reconnects\n{v:#}");
    assert_eq!(srv.requests("/close-now"), 20, "no request may be resent");
}

#[test]
fn rst_before_any_byte_on_a_new_connection_is_reset() {
    let srv = BadServer::start();
    let v = http_json(&["--no-preflight", "-t", "5", "--requests", "20", &srv.url("/rst-now")]);
    assert_completed(&v, 20);
    assert_errors(&v, &[("reset", 20)]);
    assert_no_success_bytes(&v);
    assert_eq!(u(&v, "/error_bytes"), 0, "{v:#}");
    assert_eq!(u(&v, "/reconnects"), 0, "{v:#}");
    assert_eq!(srv.requests("/rst-now"), 20, "no request may be resent");
}

/// conn 1: req 1 ok, req 2 closed unanswered → resent on conn 2 (ok), req 3
/// closed unanswered → resent on conn 3 …: all 4 succeed, 3 reconnects.
fn zero_bytes_on_a_reused_connection_reconnects(path: &str) {
    let srv = BadServer::start();
    let v = http_json(&["--no-preflight", "-t", "1", "--requests", "4", &srv.url(path)]);
    assert_completed(&v, 4);
    assert_errors(&v, &[]);
    assert_eq!(u(&v, "/requests"), 4);
    assert_eq!(u(&v, "/reconnects"), 3, "{v:#}");
    assert_eq!(srv.requests(path), 7, "4 requests + 3 resent");
    assert_eq!(srv.connections(), 4);
    assert_eq!(u(&v, "/connections_opened"), 4, "{v:#}");
    assert_eq!(u(&v, "/bytes"), 4 * len(&ok_response(false, false)), "{v:#}");
    assert_eq!(u(&v, "/error_bytes"), 0, "{v:#}");
}

#[test]
fn fin_with_zero_bytes_on_a_reused_connection_reconnects() {
    zero_bytes_on_a_reused_connection_reconnects("/close-second");
}

#[test]
fn rst_with_zero_bytes_on_a_reused_connection_reconnects() {
    zero_bytes_on_a_reused_connection_reconnects("/rst-second");
}

#[test]
fn rst_mid_body_on_a_reused_connection_is_reset_not_resent() {
    let srv = BadServer::start();
    let v = http_json(&[
        "--no-preflight",
        "-t",
        "1",
        "--requests",
        "4",
        &srv.url("/reset-second"),
    ]);
    // conn 1: ok, reset; conn 2: ok, reset.
    assert_completed(&v, 4);
    assert_errors(&v, &[("reset", 2)]);
    assert_eq!(u(&v, "/requests"), 2);
    assert_eq!(u(&v, "/reconnects"), 0, "{v:#}");
    assert_eq!(srv.requests("/reset-second"), 4, "no request may be resent");
    assert_eq!(srv.connections(), 2);
    assert_eq!(u(&v, "/bytes"), 2 * len(&ok_response(false, false)), "{v:#}");
    assert!(u(&v, "/error_bytes") <= 2 * len(&reset_sent()), "{v:#}");
}

#[test]
fn silent_server_is_timeout() {
    let srv = BadServer::start();
    let (v, wall) = timed(&[
        "--no-preflight",
        "--timeout",
        "500ms",
        "-t",
        "4",
        "--requests",
        "4",
        &srv.url("/silent"),
    ]);
    assert_completed(&v, 4);
    assert_errors(&v, &[("timeout", 4)]);
    assert_no_success_bytes(&v);
    assert!(wall >= Duration::from_millis(450), "timed out early: {wall:?}");
    assert!(wall < Duration::from_millis(2500), "took {wall:?}");
}

#[test]
fn bad_chunk_size_is_framing() {
    let srv = BadServer::start();
    let v = http_json(&["--no-preflight", "-t", "4", "--requests", "12", &srv.url("/bad-chunk")]);
    assert_completed(&v, 12);
    assert_errors(&v, &[("framing", 12)]);
    assert_no_success_bytes(&v);
    assert_eq!(u(&v, "/error_bytes"), 12 * len(BAD_CHUNK), "{v:#}");
}

#[test]
fn conflicting_content_lengths_are_framing() {
    let srv = BadServer::start();
    let v = http_json(&[
        "--no-preflight",
        "-t",
        "4",
        "--requests",
        "12",
        &srv.url("/conflicting-length"),
    ]);
    assert_completed(&v, 12);
    assert_errors(&v, &[("framing", 12)]);
    assert_no_success_bytes(&v);
    assert_eq!(u(&v, "/error_bytes"), 12 * len(CONFLICTING_LENGTH), "{v:#}");
}

#[test]
fn huge_response_head_is_header_too_large() {
    let srv = BadServer::start();
    assert!(huge_head_response().len() > 64 * 1024 + 10_000);
    let v = http_json(&["--no-preflight", "-t", "4", "--requests", "12", &srv.url("/huge-head")]);
    assert_completed(&v, 12);
    assert_errors(&v, &[("header_too_large", 12)]);
    assert_no_success_bytes(&v);
    // Over 64 KiB of head must have arrived before benchlab could tell.
    let error_bytes = u(&v, "/error_bytes");
    assert!(
        (12 * 64 * 1024..=12 * len(&huge_head_response())).contains(&error_bytes),
        "error_bytes {error_bytes}\n{v:#}"
    );
}

#[test]
fn status_500_is_status_and_its_bytes_are_error_bytes() {
    let srv = BadServer::start();
    let v = http_json(&["--no-preflight", "-t", "5", "--requests", "20", &srv.url("/500")]);
    assert_completed(&v, 20);
    assert_errors(&v, &[("status", 20)]);
    assert_no_success_bytes(&v);
    assert_eq!(u(&v, "/error_bytes"), 20 * len(&status_500_response()), "{v:#}");
    // A well-framed 500 keeps its connection: at most one connection per
    // VU (a fast VU may finish the 20 before another has connected), and
    // benchlab counts exactly the connections the server saw.
    assert!(
        srv.connections() <= 5,
        "the connections should be reused: {}",
        srv.connections()
    );
    assert_eq!(u(&v, "/connections_opened"), srv.connections(), "{v:#}");
}

#[test]
fn status_500_fails_the_preflight() {
    let srv = BadServer::start();
    let out = run_benchlab(&["http", "--json", "--requests", "5", &srv.url("/500")]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "an unexpected preflight status must exit 1\nstderr:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn status_500_expected_is_success() {
    let srv = BadServer::start();
    let v = http_json(&[
        "--expect-status",
        "500",
        "-t",
        "5",
        "--requests",
        "20",
        &srv.url("/500"),
    ]);
    assert_completed(&v, 20);
    assert_errors(&v, &[]);
    assert_eq!(u(&v, "/bytes"), 20 * len(&status_500_response()), "{v:#}");
    assert_eq!(u(&v, "/body_bytes"), 20 * STATUS_500_BODY_LEN as u64, "{v:#}");
    assert_eq!(u(&v, "/error_bytes"), 0, "{v:#}");
}

#[test]
fn vary_size_is_wrong_body_under_size_validation() {
    let srv = BadServer::start();
    let v = http_json(&["-t", "4", "--requests", "20", &srv.url("/vary")]);
    assert_completed(&v, 20);
    // The server alternates 1000, 999, 1000, … over all connections; the
    // preflight got the first (1000), so of the next 20, 10 have 999 bytes.
    assert_eq!(srv.requests("/vary"), 21, "one preflight request + 20");
    assert_errors(&v, &[("wrong_body", 10)]);
    assert_eq!(u(&v, "/requests"), 10);
    assert_eq!(u(&v, "/body_bytes"), 10 * VARY_LENS[0] as u64, "{v:#}");
    assert_eq!(u(&v, "/bytes"), 10 * len(&vary_response(VARY_LENS[0])), "{v:#}");
    assert_eq!(u(&v, "/error_bytes"), 10 * len(&vary_response(VARY_LENS[1])), "{v:#}");
}

#[test]
fn vary_size_is_fine_under_status_validation() {
    let srv = BadServer::start();
    let v = http_json(&["--validate", "status", "-t", "4", "--requests", "20", &srv.url("/vary")]);
    assert_completed(&v, 20);
    assert_errors(&v, &[]);
    assert_eq!(u(&v, "/requests"), 20);
    let bodies = 10 * (VARY_LENS[0] + VARY_LENS[1]) as u64;
    let preflight = srv.requests("/vary") - 20;
    if preflight == 1 {
        // The preflight took a 1000; the run got ten of each.
        assert_eq!(u(&v, "/body_bytes"), bodies, "{v:#}");
    }
}

#[test]
fn drip_times_out_and_a_timed_run_ends_on_time() {
    let srv = BadServer::start();
    let (v, wall) = timed(&[
        "--no-preflight",
        "--timeout",
        "1s",
        "--duration",
        "2s",
        "-t",
        "5",
        &srv.url("/drip"),
    ]);
    assert!(wall < Duration::from_secs(4), "a 2 s run took {wall:?}");
    // Each VU's first request times out at ~1 s, inside the window; the
    // second ends at ~2 s, as a timeout or in flight.
    let timeouts = u(&v, "/errors/timeout");
    assert!((5..=10).contains(&timeouts), "timeouts {timeouts}\n{v:#}");
    assert_errors(&v, &[("timeout", timeouts)]);
    assert_no_success_bytes(&v);
    assert!(timeouts + u(&v, "/in_flight") <= 10, "{v:#}");
}

#[test]
fn drip_times_out_each_request() {
    let srv = BadServer::start();
    let (v, wall) = timed(&[
        "--no-preflight",
        "--timeout",
        "1s",
        "-t",
        "4",
        "--requests",
        "4",
        &srv.url("/drip"),
    ]);
    assert_completed(&v, 4);
    assert_errors(&v, &[("timeout", 4)]);
    assert_no_success_bytes(&v);
    assert!(wall >= Duration::from_millis(900), "timed out early: {wall:?}");
    assert!(wall < Duration::from_secs(3), "4 parallel 1 s timeouts took {wall:?}");
}

#[test]
fn nothing_listening_is_connect_refused() {
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}/");
    let v = http_json(&["--no-preflight", "--requests", "5", &url]);
    assert_completed(&v, 5);
    assert_errors(&v, &[("connect_refused", 5)]);
    assert_no_success_bytes(&v);
    assert_eq!(u(&v, "/error_bytes"), 0, "{v:#}");
}
