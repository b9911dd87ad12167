//! A plain step (nothing templated, no cookies) allocates nothing per
//! request once the buffers have grown: issue 22's rule that flows keep the
//! engine's no-allocation hot path for plain GETs. A templated step with a
//! cookie allocates nothing per request either, once warm.
#![allow(unsafe_code)]

use benchlab_flow::{FlowSpec, FlowUser, Origin, RequestBuf, StepOutcome};
use std::sync::Arc;

#[path = "support/counting.rs"]
mod counting;

/// Allocations over `n` requests of `user` after a warm-up, every response
/// a 200 with `headers`.
fn allocations(user: &mut FlowUser, headers: &[(&[u8], &[u8])], n: usize) -> u64 {
    let mut buf = RequestBuf::new();
    let mut round = |buf: &mut RequestBuf| {
        let s = user.next_request(buf).expect("a request");
        std::hint::black_box(s.index);
        let out = user.on_response(200, headers.iter().copied(), b"");
        assert!(matches!(out, StepOutcome::Passed { .. }), "{out:?}");
    };
    for _ in 0..100 {
        round(&mut buf);
    }
    // This thread's own: the harness's threads are not the flow's.
    let before = counting::this_thread();
    for _ in 0..n {
        round(&mut buf);
    }
    counting::this_thread() - before
}

#[test]
fn plain_and_templated_steps_allocate_nothing_per_request() {
    let plain = FlowSpec::from_toml("[[steps]]\nname = \"get\"\nurl = \"/index.html\"\n").unwrap();
    let plain = Arc::new(plain.compile(std::path::Path::new(".")).unwrap());
    let mut u = FlowUser::new(plain, 0, 1, Origin::new("127.0.0.1", false));
    assert_eq!(allocations(&mut u, &[], 10_000), 0, "a plain GET allocates nothing");

    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("u.csv"), "user,sku\nann,S-1\nbob,S-22\n").unwrap();
    let text = r#"
[[feeders]]
file = "u.csv"
[[steps]]
name = "login"
url = "/login"
[[steps]]
repeat = 1000000
steps = [{ name = "add", method = "POST", url = "/cart/{{sku}}?u={{user}}", headers = { "X-User" = "{{user}}" }, body = '{"sku": "{{sku}}"}' }]
"#;
    let flow = Arc::new(FlowSpec::from_toml(text).unwrap().compile(dir.path()).unwrap());
    let mut u = FlowUser::new(flow, 0, 1, Origin::new("127.0.0.1", false));
    // The login's Set-Cookie fills the jar; every `add` then carries it.
    let mut buf = RequestBuf::new();
    u.next_request(&mut buf).unwrap();
    u.on_response(
        200,
        [(&b"Set-Cookie"[..], &b"session=abc123; Path=/"[..])].into_iter(),
        b"",
    );
    assert_eq!(
        allocations(&mut u, &[], 10_000),
        0,
        "a templated step with a cookie allocates nothing"
    );
    u.next_request(&mut buf).unwrap();
    let cookie: Vec<_> = buf
        .headers()
        .filter(|(n, _)| *n == b"Cookie")
        .map(|(_, v)| v.to_vec())
        .collect();
    assert_eq!(cookie, [b"session=abc123".to_vec()]);
}
