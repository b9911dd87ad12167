//! Memory per URL (issue 27): a running mix's URL storage holds at most
//! 64 bytes a URL, counted by a test allocator for 100,000 URLs — both a
//! ct-1m-like list (paths, sizes and checksums, equal weights) and a
//! from-log-like one (paths and uneven weights, status only).

use benchlab_engine::{ClassPlan, ClientPlan, Expect, Target, UrlPlan, UrlTableBuilder};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grow(n: usize) {
    let now = LIVE.fetch_add(n, Ordering::Relaxed) + n;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

// SAFETY: forwards to the system allocator, only counting bytes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        grow(l.size());
        // SAFETY: the caller's layout contract is passed on unchanged.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size(), Ordering::Relaxed);
        // SAFETY: `p` came from `System` with layout `l` (alloc above).
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        // Counted as a new block beside the old one: the worst case.
        grow(n);
        LIVE.fetch_sub(l.size(), Ordering::Relaxed);
        // SAFETY: as for dealloc; the caller's size contract passes on.
        unsafe { System.realloc(p, l, n) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const URLS: usize = 100_000;
const BUDGET: usize = 64;

/// A ct-1m page's URL (`/d0123/p012345.html` under a prefix).
fn ct(i: usize) -> String {
    format!("http://127.0.0.1:8080/ct/d{:04}/p{i:06}.html", i / 1000)
}

/// A URL of a replayed log: a deeper path, its count as its weight.
fn logged(i: usize) -> String {
    format!("http://127.0.0.1:8080/static/img/{:03}/photo-{i:07}.jpg?v=2", i % 997)
}

fn ct_expect(i: usize) -> Expect {
    Expect::Checksum {
        size: 4096,
        xxh3: (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15),
    }
}

/// Live heap bytes per URL the plan's URL storage holds, made from a list
/// of resolved URLs (the engine's public way in, old and new).
fn plan_bytes(url: fn(usize) -> String, weight: fn(usize) -> f64, expect: fn(usize) -> Expect) -> usize {
    let before = LIVE.load(Ordering::Relaxed);
    let urls: Vec<UrlPlan> = (0..URLS)
        .map(|i| UrlPlan {
            weight: weight(i),
            expect: expect(i),
            ..UrlPlan::get(Target::parse(&url(i)).expect("url"))
        })
        .collect();
    let plan = ClientPlan::new(urls, vec![ClassPlan { name: "all".into() }]);
    let after = LIVE.load(Ordering::Relaxed);
    assert_eq!(plan.urls.len(), URLS);
    assert!(plan.validate().is_ok());
    let classes = std::mem::size_of::<ClassPlan>() + 3;
    (after - before - classes) / URLS
}

/// Peak heap bytes per URL while a table is built a URL at a time from
/// text (a URL list from the controller or an agent's wire), and what is
/// live once built.
fn streamed_bytes(url: fn(usize) -> String, weight: fn(usize) -> f64, expect: fn(usize) -> Expect) -> (usize, usize) {
    let path_bytes: usize = (0..URLS).map(|i| url(i).len() - "http://127.0.0.1:8080".len()).sum();
    let before = LIVE.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let mut b = UrlTableBuilder::with_capacity(URLS, path_bytes);
    let mut text = String::new();
    for i in 0..URLS {
        // One reused buffer, as a reader's line.
        text.clear();
        text.push_str(&url(i));
        b.push_url(&text, weight(i), 0, 200, expect(i), 0).expect("push");
    }
    drop(text);
    let table = b.finish().expect("resolves");
    let peak = PEAK.load(Ordering::Relaxed) - before;
    let live = LIVE.load(Ordering::Relaxed) - before;
    assert_eq!(table.len(), URLS);
    assert_eq!(table.get(URLS - 1).url(), url(URLS - 1));
    assert_eq!(table.get(7).expect, expect(7));
    // The list as it goes to agents: its JSON, counted, not held.
    let mut wire = Count(0);
    serde_json::to_writer(&mut wire, &**table.data()).expect("JSON");
    eprintln!("wire: {:.1} bytes a URL", wire.0 as f64 / URLS as f64);
    (peak / URLS, live / URLS)
}

/// Counts the bytes written to it.
struct Count(usize);

impl std::io::Write for Count {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0 += b.len();
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

// One test: the counters are the process's, so the cases run in turn.
#[test]
fn a_url_costs_at_most_64_bytes() {
    let even = |_| 1.0;
    let counts = |i: usize| (i % 97 + 1) as f64;
    let status = |_| Expect::Status;
    let ct_plan = plan_bytes(ct, even, ct_expect);
    let log_plan = plan_bytes(logged, counts, status);
    let (ct_peak, ct_live) = streamed_bytes(ct, even, ct_expect);
    let (log_peak, log_live) = streamed_bytes(logged, counts, status);
    eprintln!(
        "bytes per URL: ct-1m-like plan {ct_plan}, built {ct_live} (peak {ct_peak}); \
         from-log-like plan {log_plan}, built {log_live} (peak {log_peak})"
    );
    for (what, bytes) in [
        ("ct-1m-like plan", ct_plan),
        ("from-log-like plan", log_plan),
        ("ct-1m-like table", ct_live),
        ("from-log-like table", log_live),
        ("ct-1m-like build's peak", ct_peak),
        ("from-log-like build's peak", log_peak),
    ] {
        assert!(bytes <= BUDGET, "{what}: {bytes} bytes per URL, budget {BUDGET}");
    }
}
