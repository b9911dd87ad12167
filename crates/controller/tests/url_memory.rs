//! The controller's memory per URL when it sends a URL list to agents
//! (issue 27): the suite loaded, the phase's list built from its URL file
//! or manifest, and every chunk made as an agent's stream would take them,
//! at most 64 bytes a URL at the peak, counted by a test allocator for
//! 100,000 URLs.

use benchlab_controller::plan::{UrlChunks, URL_CHUNK_BYTES};
use benchlab_controller::{prepare, RunOptions};
use benchlab_model::Suite;
use std::alloc::{GlobalAlloc, Layout, System};
use std::fmt::Write as _;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
static LARGEST: AtomicUsize = AtomicUsize::new(0);

fn grow(n: usize) {
    let now = LIVE.fetch_add(n, Ordering::Relaxed) + n;
    PEAK.fetch_max(now, Ordering::Relaxed);
    LARGEST.fetch_max(n, Ordering::Relaxed);
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
        // Counted as a new block beside the old one: the worst case (a
        // block that cannot grow where it is is copied).
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

/// A suite of one mix of workload `workload` (its tables after `tables`).
fn suite(dir: &Path, tables: &str, workload: &str) -> Suite {
    std::fs::write(dir.join("w.toml"), workload).expect("workload");
    std::fs::write(
        dir.join("suite.toml"),
        format!(
            "name = \"m\"\ntarget = \"http://127.0.0.1:9\"\n{tables}[defaults]\nlength = \"1s\"\nramp_up = \"0s\"\nramp_down = \"0s\"\n\
             [workloads.w]\nfile = \"w.toml\"\n[[mix]]\nclients = 1\n"
        ),
    )
    .expect("suite");
    Suite::from_file(&dir.join("suite.toml")).expect("the suite loads")
}

/// A `workload from-log` URL file's URLs: a replayed log's paths, counts
/// as weights, sizes known (as bench/url-memory.sh writes them).
fn from_log(dir: &Path) -> Suite {
    let mut text = String::from("# benchlab url-file 1: weight, size (- unknown), path; tab-separated\n");
    for i in 0..URLS {
        let _ = writeln!(
            text,
            "{}\t{}\t/static/img/{:03}/photo-{i:07}.jpg?v=2",
            i % 2 + 1,
            1000 + i % 5000,
            i % 997
        );
    }
    std::fs::write(dir.join("w.urls"), text).expect("URL file");
    suite(
        dir,
        "",
        "[[class]]\nname = \"static\"\npercent = 100.0\nkind = \"static\"\nurl_file = \"w.urls\"\n",
    )
}

/// A ct-1m-like file set: its manifest only (paths, sizes, checksums).
fn ct(dir: &Path) -> Suite {
    let set = dir.join("set");
    std::fs::create_dir_all(&set).expect("set");
    let mut text = String::from("# benchlab-manifest 1\n");
    for i in 0..URLS {
        let _ = writeln!(
            text,
            "/d{:04}/p{i:06}.html\t4096\t{:016x}\tpage\t1.0000000000",
            i / 1000,
            (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
        );
    }
    std::fs::write(set.join("manifest"), text).expect("manifest");
    suite(
        dir,
        "[filesets]\nct = \"set\"\n",
        "[[class]]\nname = \"page\"\npercent = 100\nvalidate = \"checksum\"\n[class.fileset]\nname = \"ct\"\n",
    )
}

/// Peak and live heap bytes per URL from the suite's load to the last
/// chunk made, and the largest single allocation.
fn controller_bytes(make: fn(&Path) -> Suite) -> (usize, usize, usize) {
    let dir = tempfile::tempdir().expect("temp dir");
    let before = LIVE.load(Ordering::Relaxed);
    let suite = make(dir.path());
    // The input files written above are dropped: from here on the peak
    // is the controller's (the suite, the list, a chunk).
    PEAK.store(LIVE.load(Ordering::Relaxed), Ordering::Relaxed);
    LARGEST.store(0, Ordering::Relaxed);
    let prepared = prepare(&suite, &RunOptions::default()).expect("the phase resolves");
    let lists = prepared.url_lists();
    assert_eq!(lists.len(), 1);
    assert_eq!(lists[0].urls.len(), URLS);
    // Every chunk as an agent's stream takes it: made, sent, dropped. A
    // chunk's bytes are the same for any list (1 MiB), so it is scaled to
    // the share a URL has of it at 1 M URLs: 100 KiB here (a full 1 MiB
    // would be 10 bytes a URL of 100,000, 1 of a million).
    let chunks = UrlChunks::new(Arc::clone(&lists[0]), URL_CHUNK_BYTES * URLS / 1_000_000);
    let head = chunks.head();
    let (mut urls, mut n) = (0u64, 0);
    for (c, _) in chunks {
        urls += u64::from(u32::from_le_bytes([c[0], c[1], c[2], c[3]]));
        n += 1;
    }
    assert_eq!(urls, URLS as u64, "{n} chunks");
    assert!(head.len() < 4096, "{} bytes of head", head.len());
    let live = LIVE.load(Ordering::Relaxed).saturating_sub(before);
    let peak = PEAK.load(Ordering::Relaxed).saturating_sub(before);
    drop(prepared);
    (peak / URLS, live / URLS, LARGEST.load(Ordering::Relaxed))
}

// One test: the counters are the process's, so the cases run in turn.
#[test]
fn the_controller_holds_a_url_list_for_agents_in_at_most_64_bytes_a_url() {
    let (log_peak, log_live, log_largest) = controller_bytes(from_log);
    let (ct_peak, ct_live, ct_largest) = controller_bytes(ct);
    eprintln!(
        "controller bytes per URL: from-log-like {log_live} live, {log_peak} at the peak (largest allocation {log_largest}); \
         ct-1m-like {ct_live} live, {ct_peak} at the peak (largest {ct_largest})"
    );
    for (what, bytes) in [("from-log-like", log_peak), ("ct-1m-like", ct_peak)] {
        assert!(
            bytes <= BUDGET,
            "{what}: {bytes} bytes per URL at the peak, budget {BUDGET}"
        );
    }
}
