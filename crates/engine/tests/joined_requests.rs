//! A request that the OS thread's send buffer already holds whole (the
//! same URL and variant as the last one joined there) is written again
//! from there without being rebuilt. Whatever the order of URLs and
//! variants, the server must receive each request as it was meant: the
//! right path (each URL's response has its own size, which the client
//! checks) and the right version and `Connection` header for its place on
//! its connection (the server checks).

// Its `server` is not used here.
#[allow(dead_code)]
mod common;

use benchlab_engine::{ClassPlan, Client, ClientPlan, ConnectionPolicy, Expect, Stop, Target, UrlPlan};
use std::borrow::Cow;
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// One request as the server read it.
#[derive(Debug, Clone, PartialEq)]
struct Seen {
    path: String,
    http10: bool,
    /// The request asks the server to close after it.
    close: bool,
}

/// Each connection's requests, in order.
type Log = Arc<Mutex<Vec<Vec<Seen>>>>;

/// A server that answers `/p` with `len(p) × 100` bytes, HTTP/1.0 or 1.1
/// as asked, keeping or closing the connection as the request says.
fn server(log: Log) -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = l.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(s) = s else { continue };
            let log = log.clone();
            let conn = {
                let mut l = log.lock().expect("log");
                l.push(Vec::new());
                l.len() - 1
            };
            std::thread::spawn(move || {
                common::serve_with(s, |head| {
                    let seen = Seen::of(head);
                    let size = (seen.path.len() - 1) * 100;
                    let keep = if seen.http10 && !seen.close {
                        "Connection: keep-alive\r\n"
                    } else {
                        ""
                    };
                    let version = if seen.http10 { "1.0" } else { "1.1" };
                    let resp = format!(
                        "HTTP/{version} 200 OK\r\nContent-Length: {size}\r\n{keep}\r\n{}",
                        "x".repeat(size)
                    );
                    let close = seen.close;
                    log.lock().expect("log")[conn].push(seen);
                    (Cow::Owned(resp.into_bytes()), !close)
                });
            });
        }
    });
    port
}

impl Seen {
    /// What a request's head asks for.
    fn of(head: &str) -> Seen {
        let mut lines = head.split("\r\n");
        let line: Vec<&str> = lines.next().unwrap_or_default().split(' ').collect();
        let connection = lines
            .filter_map(|h| h.split_once(": "))
            .find(|(n, _)| n.eq_ignore_ascii_case("connection"))
            .map(|(_, v)| v.to_ascii_lowercase());
        let http10 = line.get(2) == Some(&"HTTP/1.0");
        let close = if http10 {
            connection.as_deref() != Some("keep-alive")
        } else {
            connection.as_deref() == Some("close")
        };
        Seen {
            path: line.get(1).copied().unwrap_or_default().to_string(),
            http10,
            close,
        }
    }
}

#[test]
fn requests_written_again_from_the_send_buffer_are_the_ones_meant() {
    let log: Log = Arc::default();
    let port = server(log.clone());
    let paths = ["/a", "/bb", "/ccc"];
    let urls: Vec<UrlPlan> = paths
        .iter()
        .enumerate()
        .map(|(k, p)| {
            let target = Target::parse(&format!("http://127.0.0.1:{port}{p}")).expect("url");
            UrlPlan {
                expect: Expect::Size(((p.len() - 1) * 100) as u64),
                // Mostly /a, so the same request often follows itself.
                weight: [8.0, 1.0, 1.0][k],
                ..UrlPlan::get(target)
            }
        })
        .collect();
    let mut plan = ClientPlan::new(urls, vec![ClassPlan { name: "all".into() }]);
    plan.virtual_users = 4;
    plan.os_threads = 1;
    plan.stop = Stop::Requests(3_000);
    // Half the connections HTTP/1.0 with keep-alive; three requests each,
    // the third asking to close: four variants, each often following
    // another.
    plan.connection = ConnectionPolicy {
        http10_percent: 50,
        http10_keepalive: true,
        persistent_percent: 100,
        requests_per_connection: Some((3, 3)),
    };
    let report = Client::start(plan, Instant::now()).expect("start").finish();
    let c = report.stats.total().counters;
    assert_eq!((c.requests, c.errors_total()), (3_000, 0), "{c:?}");

    let log = log.lock().expect("log").clone();
    let seen: Vec<&Seen> = log.iter().flatten().collect();
    assert_eq!(seen.len(), 3_000);
    for p in paths {
        assert!(seen.iter().filter(|s| s.path == p).count() > 100, "{p}");
    }
    let mut whole = 0;
    for (k, conn) in log.iter().enumerate() {
        assert!(conn.len() <= 3, "connection {k}: {conn:?}");
        // One version a connection; only its third request asks to close.
        for (n, s) in conn.iter().enumerate() {
            assert_eq!(s.http10, conn[0].http10, "connection {k}: {conn:?}");
            assert_eq!(s.close, n == 2, "connection {k}, request {n}: {conn:?}");
        }
        whole += usize::from(conn.len() == 3);
    }
    // Only the users' last connections may have been cut by the stop.
    assert!(
        log.len() - whole <= 4,
        "{} of {} connections cut",
        log.len() - whole,
        log.len()
    );
    assert!(log.iter().any(|c| c.first().is_some_and(|s| s.http10)));
    assert!(log.iter().any(|c| c.first().is_some_and(|s| !s.http10)));
}
