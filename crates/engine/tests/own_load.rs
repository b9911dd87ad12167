//! A client reports its own CPU and event-loop lag every second: the
//! seconds' CPU adds up to (at most) what its worker threads used in all,
//! and is not zero for a loop that sent thousands of requests.

// Its `server` is not used here.
#[allow(dead_code)]
mod common;

use benchlab_engine::{ClassPlan, Client, ClientPlan, Expect, Stop, Target, UrlPlan};
use std::borrow::Cow;
use std::net::TcpListener;
use std::time::{Duration, Instant};

/// A keep-alive server answering every request with a 4-byte body.
fn server() -> u16 {
    const RESP: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nxxxx";
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = l.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(s) = s else { continue };
            std::thread::spawn(move || common::serve_with(s, |_| (Cow::Borrowed(RESP), true)));
        }
    });
    port
}

#[test]
fn every_second_carries_the_clients_own_cpu_and_loop_lag() {
    let port = server();
    let target = Target::parse(&format!("http://127.0.0.1:{port}/x")).expect("url");
    let url = UrlPlan {
        expect: Expect::Size(4),
        ..UrlPlan::get(target)
    };
    let mut plan = ClientPlan::new(vec![url], vec![ClassPlan { name: "x".into() }]);
    plan.virtual_users = 4;
    plan.os_threads = 2;
    plan.stop = Stop::After(Duration::from_millis(2500));
    let report = Client::start(plan, Instant::now()).expect("start").finish();
    assert!(report.stats.total().counters.requests > 0);
    // Two full seconds and the last half: three seconds, each charged.
    assert_eq!(
        report.seconds.len(),
        3,
        "{:?}",
        report.seconds.iter().map(|s| s.second).collect::<Vec<_>>()
    );
    let cpu_us: u64 = report
        .seconds
        .iter()
        .map(|s| s.load.cpu_user_us + s.load.cpu_system_us)
        .sum();
    let total_us = (report.cpu_user + report.cpu_system).as_micros() as u64;
    assert!(cpu_us > 0, "the loop ran: it used CPU");
    // The report's CPU is each thread's since it began; the seconds' only
    // since its loop began, so never more.
    assert!(cpu_us <= total_us, "{cpu_us} µs in the seconds, {total_us} µs in all");
    // The last second's tick is the stop, not a late tick: lag 0 there.
    assert_eq!(report.seconds[2].load.loop_lag_max_us, 0);
    // The per-second record travels as JSON with defaults for what an older
    // sender left out.
    let json = serde_json::to_string(&report.seconds[0].load).expect("json");
    assert!(json.contains("\"loop_lag_max_us\""), "{json}");
    let old: benchlab_engine::LoopLoad = serde_json::from_str("{}").expect("defaults");
    assert_eq!(old, benchlab_engine::LoopLoad::default());
}
