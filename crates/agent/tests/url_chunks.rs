//! A URL list of 50,000 URLs reaches an agent in many chunks (issue 27):
//! intact (its id checked, a client started on it), and without either
//! side holding the whole encoded list. A counting allocator notes the
//! largest single allocation of the process while the list travels: with
//! chunks it is the agent's path arena (part of the list it keeps), where
//! the one-message path (protocol version 2) allocated the whole list's
//! JSON on the controller, again as gRPC's message, and on the agent.
//!
//! Its own test binary: the allocator counts every thread of the process.

#![allow(unsafe_code)]

use benchlab_agent::tls::{agent_files, CertsPlan, CA_CERT};
use benchlab_agent::*;
use benchlab_controller::plan::{ClientPlan, UrlChunks, UrlList, UrlSpec};
use benchlab_controller::ClientPool;
use benchlab_engine::{ClassPlan, ClientSettings, Expect, Load, Stop};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

struct Counting;

static TRACK: AtomicBool = AtomicBool::new(false);
static LARGEST: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards to the system allocator, only noting sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        if TRACK.load(Ordering::Relaxed) {
            LARGEST.fetch_max(l.size(), Ordering::Relaxed);
        }
        // SAFETY: the caller's layout, passed on unchanged.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: `p` came from `System` with layout `l`.
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        if TRACK.load(Ordering::Relaxed) {
            LARGEST.fetch_max(new, Ordering::Relaxed);
        }
        // SAFETY: `p` came from `System` with layout `l`.
        unsafe { System.realloc(p, l, new) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

// Small enough for a debug build on a busy machine (the list's id is
// hashed three times on the way), large enough for a hundred chunks.
const URLS: usize = 50_000;
const CHUNK: usize = 16 << 10;

#[test]
fn a_list_of_50k_urls_arrives_intact_in_chunks_never_held_whole() {
    let dir = tempfile::tempdir().expect("tempdir");
    write_certs(
        dir.path(),
        &CertsPlan {
            controller_names: vec!["127.0.0.1".into()],
            agents: 1,
        },
    )
    .expect("certificates");
    let log = Arc::new(Mutex::new(Vec::<String>::new()));
    let l = Arc::clone(&log);
    let pool = RemotePool::listen(ControllerOptions {
        listen: "127.0.0.1:0".parse().expect("addr"),
        tls: TlsFiles::controller(dir.path()).expect("controller files"),
        agents: 1,
        monitors: 0,
        clients_per_agent: 1,
        abort_on_lost_agent: false,
        threads_by_agent: false,
        log: Arc::new(move |s| l.lock().expect("log").push(s)),
    })
    .expect("listen");
    pool.set_url_chunk_bytes(CHUNK);
    let agent_log = Arc::new(Mutex::new(Vec::<String>::new()));
    let al = Arc::clone(&agent_log);
    let (cert, key) = agent_files(0);
    let opts = AgentOptions {
        peer: PeerOptions {
            controller: pool.local_addr().to_string(),
            server_name: None,
            tls: TlsFiles::read(&dir.path().join(CA_CERT), &dir.path().join(cert), &dir.path().join(key))
                .expect("agent files"),
            connect_timeout: Duration::from_secs(30),
        },
        index: 0,
        host: "host-0".into(),
        protocol_version: proto::PROTOCOL_VERSION,
    };
    let agent = std::thread::spawn(move || run_agent(&opts, &move |s| al.lock().expect("log").push(s)));
    pool.wait_for_peers(Duration::from_secs(60), &|| false)
        .unwrap_or_else(|e| panic!("{e}\n{}", log.lock().expect("log").join("\n")));

    // Unequal weights, sizes and checksums: every column travels. Nothing
    // listens on port 9 of 127.0.0.1 (discard, not served here): the
    // client starts and its connections fail, counted.
    let specs = (0..URLS)
        .map(|i| UrlSpec {
            url: format!("http://127.0.0.1:9/d{:03}/p{i:06}.html", i % 997),
            weight: 1.0 + (i % 3) as f64,
            class: 0,
            expect_status: 200,
            expect: Expect::Checksum {
                size: 4096,
                xxh3: (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15),
            },
            request: 0,
        })
        .collect();
    let list = Arc::new(UrlList::new(vec![ClassPlan { name: "page".into() }], specs));
    let path_bytes = list.urls.chunk_head().path_bytes as usize;
    let (chunks, _) = UrlChunks::new(Arc::clone(&list), CHUNK).totals();
    // What the one-message path allocated whole: the list's JSON.
    let json = serde_json::to_vec(&*list).expect("json").len();
    // The bound: the agent's path arena (the list it keeps, its largest
    // column), or a few chunks (gRPC's buffers), whichever is larger.
    let bound = path_bytes.max(4 * CHUNK);
    assert!(
        json > 2 * bound,
        "the test could not tell: JSON {json} bytes, bound {bound}"
    );

    TRACK.store(true, Ordering::Relaxed);
    pool.load_urls(&list).expect("URL list");
    let received = format!("agent 0: URL list {} received: {URLS} URLs", list.id);
    let deadline = Instant::now() + Duration::from_secs(120);
    while !agent_log.lock().expect("log").contains(&received) {
        assert!(
            Instant::now() < deadline,
            "the agent did not take the list:\n{}",
            agent_log.lock().expect("log").join("\n")
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    TRACK.store(false, Ordering::Relaxed);
    let largest = LARGEST.load(Ordering::Relaxed);
    let wire = log
        .lock()
        .expect("log")
        .iter()
        .find(|l| l.starts_with(&format!("URL list {}: {URLS} URLs, ", list.id)))
        .cloned()
        .unwrap_or_default();
    eprintln!("{wire}; largest allocation while it travelled: {largest} bytes (arena {path_bytes}, JSON {json})");
    assert!(wire.ends_with(&format!(" in {chunks} chunks)")), "{wire}");
    assert!(chunks > 100, "{chunks} chunks");
    assert!(
        largest <= bound,
        "an allocation of {largest} bytes while the list travelled: more than the arena ({path_bytes}) or 4 chunks"
    );

    // The agent runs a client on the list by its id.
    let plan = ClientPlan {
        urls: list.id.clone(),
        settings: ClientSettings {
            virtual_users: 1,
            load: Load::Closed,
            os_threads: 1,
            stop: Stop::After(Duration::from_millis(300)),
            window: (Duration::ZERO, Duration::from_millis(300)),
            think_time: Duration::from_millis(50),
            timeout: Duration::from_secs(1),
            receive_buffer: 4096,
            ..Default::default()
        },
    };
    let mut d = pool.driver(0);
    d.start(plan, SystemTime::now() + Duration::from_millis(200))
        .expect("start sent");
    d.started().expect("the agent started a client on the list");
    let _ = d.finish();
    pool.shutdown();
    agent.join().expect("agent thread").expect("agent session");
}
