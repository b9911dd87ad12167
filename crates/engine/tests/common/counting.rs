//! The no-allocation tests' measure, shared by `no_alloc.rs` (the default
//! event source) and `no_alloc_uring.rs` (io_uring): a counting global
//! allocator, and the allocations a run of N requests makes. Included
//! with `#[path]` by those two test binaries only, as it declares the
//! binary's global allocator.

use benchlab_engine::{ClassPlan, Client, ClientPlan, Expect, Stop, Target, TlsOptions, UrlPlan};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

#[path = "mod.rs"]
mod common;

struct Counting;

static ALLOCS: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// A server thread: the local server's allocations (rustls's, for
    /// TLS) are not the client's.
    static SERVER: Cell<bool> = const { Cell::new(false) };
}

fn server_thread() {
    SERVER.with(|s| s.set(true));
}

fn counted() -> bool {
    !SERVER.try_with(Cell::get).unwrap_or(true)
}

// SAFETY: forwards to the system allocator, only counting calls.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        if counted() {
            ALLOCS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: the caller's layout contract is passed on unchanged.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: `p` came from `System` with layout `l` (alloc above).
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        if counted() {
            ALLOCS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: as for dealloc; the caller's size contract passes on.
        unsafe { System.realloc(p, l, n) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Allocations of a run of `requests` requests by `users` users over
/// keep-alive connections, each resting `think` between requests (the
/// idle connection's path), and the seconds reported. `header` bytes of an
/// extra request header make each request that much larger.
fn allocations_for(port: u16, tls: bool, users: u32, think: Duration, requests: u64, header: usize) -> (u64, u64) {
    let scheme = if tls { "https" } else { "http" };
    // A thousand URLs of uneven weights: each request draws from the URL
    // table's alias table and writes its path from the table's arena
    // (issue 27), which must allocate nothing either.
    let urls: Vec<UrlPlan> = (0..1000)
        .map(|i| UrlPlan {
            weight: f64::from(i % 7 + 1),
            expect: Expect::Size(100),
            ..UrlPlan::get(Target::parse(&format!("{scheme}://127.0.0.1:{port}/x/{i}")).expect("url"))
        })
        .collect();
    let mut plan = ClientPlan::new(urls, vec![ClassPlan { name: "x".into() }]);
    plan.virtual_users = users;
    plan.os_threads = 1;
    plan.think_time = think;
    plan.stop = Stop::Requests(requests);
    if header > 0 {
        plan.headers.push(("X-Large".into(), "y".repeat(header)));
    }
    plan.tls = TlsOptions {
        insecure: true,
        ..TlsOptions::default()
    };
    let before = ALLOCS.load(Ordering::Relaxed);
    let report = Client::start(plan, Instant::now()).expect("start").finish();
    let after = ALLOCS.load(Ordering::Relaxed);
    let t = report.stats.total();
    assert_eq!(t.counters.requests, requests, "{:?}", t.counters);
    (after - before, report.seconds.len() as u64)
}

/// Allocations per request beyond a run 10× shorter's, on the same
/// connections (a warm-up run first), once-a-second snapshots (a copy of
/// the histograms, up to 64 allocations each) allowed for.
pub fn per_request(tls: bool, users: u32, think: Duration, few: u64) -> f64 {
    per_request_of(tls, users, think, few, 0)
}

pub fn per_request_of(tls: bool, users: u32, think: Duration, few: u64, header: usize) -> f64 {
    // One count for the whole binary: one test at a time.
    static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let port = common::server(tls, server_thread);
    allocations_for(port, tls, users, think, few / 2, header);
    let (small, small_secs) = allocations_for(port, tls, users, think, few, header);
    let (large, large_secs) = allocations_for(port, tls, users, think, 10 * few, header);
    let per_second_allowance = 64 * (small_secs + large_secs + 2);
    let extra = large.saturating_sub(small + per_second_allowance);
    eprintln!(
        "{}: {small} allocations for {few} requests, {large} for {}: {:.3} per request",
        if tls { "TLS" } else { "plain" },
        10 * few,
        extra as f64 / (9 * few) as f64
    );
    extra as f64 / (9 * few) as f64
}
