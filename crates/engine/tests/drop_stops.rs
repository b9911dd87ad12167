//! A client dropped without `finish` stops its load: a mix abandoned
//! because another client failed to start must leave no load running.

use benchlab_engine::{ClassPlan, Client, ClientPlan, Stop, Target, UrlPlan};
use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A keep-alive server on one connection: counts requests, and notes when
/// the client closed it.
fn server(requests: Arc<AtomicU64>, closed: Arc<AtomicBool>) -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = l.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        let Ok((mut s, _)) = l.accept() else { return };
        let mut buf = [0u8; 4096];
        let mut have = 0;
        loop {
            match s.read(&mut buf[have..]) {
                Ok(0) | Err(_) => break,
                Ok(n) => have += n,
            }
            while let Some(end) = buf[..have].windows(4).position(|w| w == b"\r\n\r\n") {
                requests.fetch_add(1, Ordering::Relaxed);
                if s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok").is_err() {
                    break;
                }
                buf.copy_within(end + 4..have, 0);
                have -= end + 4;
            }
        }
        closed.store(true, Ordering::Relaxed);
    });
    port
}

/// Waits until `done` or `limit` passed (a bound for a broken build, far
/// above what a loaded machine needs).
fn wait_for(limit: Duration, done: impl Fn() -> bool) -> bool {
    let until = Instant::now() + limit;
    while Instant::now() < until {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    done()
}

#[test]
fn a_dropped_client_stops_its_load() {
    let requests = Arc::new(AtomicU64::new(0));
    let closed = Arc::new(AtomicBool::new(false));
    let port = server(Arc::clone(&requests), Arc::clone(&closed));
    let target = Target::parse(&format!("http://127.0.0.1:{port}/")).expect("URL");
    let url = UrlPlan::get(target);
    let mut plan = ClientPlan::new(vec![url], vec![ClassPlan { name: "a".into() }]);
    plan.virtual_users = 1;
    // An hour: only the drop can end it within the test.
    plan.stop = Stop::After(Duration::from_secs(3600));
    let client = Client::start(plan, Instant::now()).expect("starts");
    assert!(
        wait_for(Duration::from_secs(60), || requests.load(Ordering::Relaxed) > 0),
        "no load"
    );
    drop(client);
    assert!(
        wait_for(Duration::from_secs(60), || closed.load(Ordering::Relaxed)),
        "the dropped client kept loading ({} requests)",
        requests.load(Ordering::Relaxed)
    );
}
