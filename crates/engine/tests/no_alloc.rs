//! The hot loop allocates nothing per request in steady state (issue 2):
//! two runs with the same connections but 10× the requests must make about
//! the same number of heap allocations. A per-request allocation anywhere
//! (request building, parsing, recording, the event loop) would add at least
//! one allocation per extra request.

use benchlab_engine::{ClassPlan, Client, ClientPlan, Expect, Stop, Target, UrlPlan};
use std::alloc::{GlobalAlloc, Layout, System};
use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

struct Counting;

static ALLOCS: AtomicU64 = AtomicU64::new(0);

// SAFETY: forwards to the system allocator, only counting calls.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's layout contract is passed on unchanged.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: `p` came from `System` with layout `l` (alloc above).
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: as for dealloc; the caller's size contract passes on.
        unsafe { System.realloc(p, l, n) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// A keep-alive server that allocates nothing per request: a thread per
/// connection, fixed buffers, one fixed response.
fn server() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = l.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { continue };
            std::thread::spawn(move || {
                const RESP: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n\
                    xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx";
                let mut buf = [0u8; 4096];
                let mut have = 0;
                loop {
                    match s.read(&mut buf[have..]) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => have += n,
                    }
                    while let Some(end) = buf[..have].windows(4).position(|w| w == b"\r\n\r\n") {
                        if s.write_all(RESP).is_err() {
                            return;
                        }
                        buf.copy_within(end + 4..have, 0);
                        have -= end + 4;
                    }
                }
            });
        }
    });
    port
}

fn allocations_for(port: u16, requests: u64) -> (u64, u64) {
    // A thousand URLs of uneven weights: each request draws from the URL
    // table's alias table and writes its path from the table's arena
    // (issue 27), which must allocate nothing either.
    let urls: Vec<UrlPlan> = (0..1000)
        .map(|i| UrlPlan {
            target: Target::parse(&format!("http://127.0.0.1:{port}/x/{i}")).expect("url"),
            weight: f64::from(i % 7 + 1),
            class: 0,
            expect_status: 200,
            expect: Expect::Size(100),
            request: 0,
        })
        .collect();
    let mut plan = ClientPlan::new(urls, vec![ClassPlan { name: "x".into() }]);
    plan.virtual_users = 4;
    plan.os_threads = 1;
    plan.stop = Stop::Requests(requests);
    let before = ALLOCS.load(Ordering::Relaxed);
    let report = Client::start(plan, Instant::now()).expect("start").finish();
    let after = ALLOCS.load(Ordering::Relaxed);
    let t = report.stats.total();
    assert_eq!(t.counters.requests, requests, "{:?}", t.counters);
    (after - before, report.seconds.len() as u64)
}

#[test]
fn no_allocation_per_request() {
    let port = server();
    // Warm up the server's threads and the allocator.
    allocations_for(port, 1_000);
    let (small, small_secs) = allocations_for(port, 2_000);
    let (large, large_secs) = allocations_for(port, 20_000);
    // Once-a-second snapshots allocate (a copy of the histograms); allow
    // for them, and for nothing that grows with the request count.
    eprintln!("allocations: {small} for 2,000 requests, {large} for 20,000");
    let per_second_allowance = 64 * (small_secs + large_secs + 2);
    assert!(
        large <= small + per_second_allowance,
        "20,000 requests made {large} allocations, 2,000 made {small}: something allocates per request"
    );
}
