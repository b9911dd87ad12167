//! What a flow costs per request (issue 22: ≤ 1 µs of CPU for a templated
//! request, no allocation for a plain one). Renders 1 M templated requests
//! — a URL with 2 variables, a header with a variable, the jar's Cookie
//! header, a 200-byte JSON body with 3 variables — each answered by a 200
//! (`on_response`: status check, headers scanned), and prints ns per
//! request; then 1 M plain GETs, counting heap allocations with a counting
//! global allocator.
//!
//! `cargo run --release -p benchlab-flow --example render_cost`
//!
//! Both the thread's CPU time and the wall-clock time are printed: on a
//! busy machine the wall clock also counts time the thread waited for a
//! core.
#![allow(unsafe_code)]

use benchlab_flow::{FlowSpec, FlowUser, Origin, RequestBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

#[path = "../tests/support/counting.rs"]
mod counting;
use counting::ALLOCS;

const N: u64 = 1_000_000;

const TEMPLATED: &str = r#"
[[feeders]]
file = "users.csv"

[[steps]]
name = "login"
method = "POST"
url = "/login"

[[steps]]
repeat = 1000000
steps = [{ name = "add", method = "POST", url = "/cart/{{sku}}?user={{user}}", headers = { "Content-Type" = "application/json", "X-Request-User" = "{{user}}" }, body = '{"user": "{{user}}", "sku": "{{sku}}", "quantity": {{qty}}, "note": "a gift for a friend, wrapped in blue paper, please deliver it before the weekend", "channel": "web", "coupon": "none", "v": 1}' }]
"#;

/// This thread's CPU time in nanoseconds.
fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid timespec for the call to fill.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Runs `n` requests, each answered by a 200; (wall ns per request, CPU
/// ns per request, allocations).
fn run(user: &mut FlowUser, buf: &mut RequestBuf, n: u64) -> (f64, f64, u64) {
    let mut sent = 0u64;
    let headers: [(&[u8], &[u8]); 2] = [(b"Content-Type", b"application/json"), (b"Content-Length", b"2")];
    let allocs = ALLOCS.load(Ordering::Relaxed);
    let start = Instant::now();
    let cpu = thread_cpu_ns();
    for _ in 0..n {
        let Some(step) = user.next_request(buf) else { break };
        sent += buf.target().len() as u64 + buf.body().map_or(0, <[u8]>::len) as u64 + step.index as u64;
        std::hint::black_box(&*buf);
        std::hint::black_box(user.on_response(200, headers.iter().copied(), b"{}"));
    }
    let cpu = (thread_cpu_ns() - cpu) as f64 / n as f64;
    let ns = start.elapsed().as_nanos() as f64 / n as f64;
    std::hint::black_box(sent);
    (ns, cpu, ALLOCS.load(Ordering::Relaxed) - allocs)
}

fn main() {
    let dir = std::env::temp_dir().join(format!("benchlab-render-cost-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let mut rows = String::from("user,sku,qty\n");
    for i in 0..1000 {
        rows.push_str(&format!("user{i}@example.com,SKU-{:05},{}\n", i * 7, i % 9 + 1));
    }
    std::fs::write(dir.join("users.csv"), rows).expect("the feeder file");
    let flow = FlowSpec::from_toml(TEMPLATED)
        .expect("the flow")
        .compile(&dir)
        .expect("compiles");
    let _ = std::fs::remove_dir_all(&dir);
    let mut user = FlowUser::new(Arc::new(flow), 0, 1, Origin::new("shop.example", false));

    // The login's Set-Cookie fills the jar; every `add` carries it.
    let mut buf = RequestBuf::new();
    user.next_request(&mut buf).expect("login");
    user.on_response(
        200,
        [(&b"Set-Cookie"[..], &b"session=4f2a9c1e7b; Path=/; HttpOnly"[..])].into_iter(),
        b"",
    );
    user.next_request(&mut buf).expect("add");
    let body = buf.body().expect("a body").len();
    println!(
        "templated request: {} {}",
        String::from_utf8_lossy(buf.method()),
        String::from_utf8_lossy(buf.target())
    );
    for (n, v) in buf.headers() {
        println!("  {}: {}", String::from_utf8_lossy(n), String::from_utf8_lossy(v));
    }
    println!("  body: {body} bytes");
    user.on_response(200, std::iter::empty(), b"");

    // Warm: the buffers have grown to this request's size.
    let (ns, cpu, allocs) = run(&mut user, &mut buf, N - 2);
    println!(
        "templated: {cpu:.0} ns CPU ({ns:.0} ns wall) per request (render + on_response), {allocs} allocations over {} requests",
        N - 2
    );

    let plain = FlowSpec::from_toml("[[steps]]\nname = \"get\"\nurl = \"/index.html\"\n").expect("the flow");
    let plain = Arc::new(plain.compile(std::path::Path::new(".")).expect("compiles"));
    let mut user = FlowUser::new(plain, 0, 1, Origin::new("shop.example", false));
    let mut buf = RequestBuf::new();
    run(&mut user, &mut buf, 100);
    let (ns, cpu, allocs) = run(&mut user, &mut buf, N);
    println!("plain GET: {cpu:.0} ns CPU ({ns:.0} ns wall) per request, {allocs} allocations over {N} requests");
}
