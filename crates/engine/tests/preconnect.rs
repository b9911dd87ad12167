//! `preconnect`: every virtual user's connection is up before the start
//! instant, and not one request byte is sent before it; after it the run
//! is counted as any other (no error, one connection a user).
//! Without `preconnect`, nothing connects before the start. A held
//! connection the server closes before the start is an idle close: the
//! user reconnects and sends its request again, no error.

// Its `server` is not used here.
#[allow(dead_code)]
mod common;

use benchlab_engine::{ClassPlan, Client, ClientPlan, Stop, Target, UrlPlan};
use std::io::ErrorKind;
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

const USERS: u32 = 6;

/// How long each run loads after its start: long enough that every user
/// writes its first request however late a loaded machine runs its
/// thread. A run of `--requests` could end before that: on a busy
/// machine one loop thread's users served them all while the other
/// thread's users had not yet connected (4 connections of 6 seen).
const LENGTH: Duration = Duration::from_millis(400);

/// A held socket was made nonblocking to peek at it.
fn serve(s: TcpStream) {
    s.set_nonblocking(false).expect("blocking");
    common::serve(s);
}

/// `USERS` users loading `http://127.0.0.1:PORT/`.
fn plan_for(port: u16) -> ClientPlan {
    let url = UrlPlan::get(Target::parse(&format!("http://127.0.0.1:{port}/")).expect("URL"));
    let mut plan = ClientPlan::new(vec![url], vec![ClassPlan { name: "a".into() }]);
    plan.virtual_users = USERS;
    plan
}

/// Runs `USERS` users for [`LENGTH`] starting 3 s from now; returns
/// the connections accepted before the start (each checked to hold no
/// request byte yet; `close_early`: then closed at once), the connections
/// accepted in all, and the report.
fn run(preconnect: bool, close_early: bool) -> (usize, usize, benchlab_engine::ClientReport) {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    l.set_nonblocking(true).expect("nonblocking");
    let mut plan = plan_for(l.local_addr().expect("addr").port());
    plan.os_threads = 2;
    plan.stop = Stop::After(LENGTH);
    plan.preconnect = preconnect;
    // A lead far above what a few loopback connects take on a busy machine.
    let start = Instant::now() + Duration::from_secs(3);
    let client = Client::start(plan, start).expect("starts");
    // Before the start: take what connected, up to half a second before it.
    let mut early = Vec::new();
    while Instant::now() + Duration::from_millis(500) < start && early.len() < USERS as usize {
        match l.accept() {
            Ok((s, _)) => early.push(s),
            Err(e) if e.kind() == ErrorKind::WouldBlock => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => panic!("accept: {e}"),
        }
    }
    for s in &early {
        s.set_nonblocking(true).expect("nonblocking");
        let mut b = [0u8; 1];
        match s.peek(&mut b) {
            Err(e) if e.kind() == ErrorKind::WouldBlock => {}
            other => panic!("a request byte before the start: {other:?}"),
        }
    }
    assert!(Instant::now() < start, "the check ran past the start");
    let n_early = early.len();
    if close_early {
        early.clear();
    }
    let mut all = n_early;
    let mut servers: Vec<_> = early
        .into_iter()
        .map(|s| std::thread::spawn(move || serve(s)))
        .collect();
    // The rest, until the client is done (its last connection closed),
    // then what is still queued: a connection the client made counts
    // whether or not this thread took it in time to serve it (on a loaded
    // machine the users already served can end the run first).
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let d2 = std::sync::Arc::clone(&done);
    let acceptor = std::thread::spawn(move || {
        let mut n = 0;
        loop {
            let finished = d2.load(std::sync::atomic::Ordering::Relaxed);
            match l.accept() {
                Ok((s, _)) => {
                    n += 1;
                    servers.push(std::thread::spawn(move || serve(s)));
                }
                Err(_) if finished => break,
                Err(_) => std::thread::sleep(Duration::from_millis(5)),
            }
        }
        (n, servers)
    });
    let report = client.finish();
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    let (late, servers) = acceptor.join().expect("acceptor");
    for s in servers {
        let _ = s.join();
    }
    all += late;
    (n_early, all, report)
}

#[test]
fn preconnected_users_connect_before_the_start_and_send_nothing_before_it() {
    let (early, all, r) = run(true, false);
    assert_eq!(early, USERS as usize, "connections up before the start");
    assert_eq!(all, USERS as usize, "one connection a user");
    let c = &r.stats.classes[0].counters;
    assert!(c.requests > 0 && c.errors_total() == 0, "{c:?}");
    assert_eq!(r.stats.conn.connections_opened, u64::from(USERS));
    assert_eq!(r.stats.conn.preconnected, u64::from(USERS));
}

#[test]
fn without_preconnect_nothing_connects_before_the_start() {
    let (early, all, r) = run(false, false);
    assert_eq!(early, 0);
    assert_eq!(all, USERS as usize);
    let c = &r.stats.classes[0].counters;
    assert!(c.requests > 0 && c.errors_total() == 0, "{c:?}");
    assert_eq!(r.stats.conn.connections_opened, u64::from(USERS));
    assert_eq!(r.stats.conn.preconnected, 0);
}

#[test]
fn a_held_connection_the_server_closed_before_the_start_is_reconnected() {
    let (early, all, r) = run(true, true);
    assert_eq!(early, USERS as usize);
    assert_eq!(all, 2 * USERS as usize, "each user connected again");
    let c = &r.stats.classes[0].counters;
    assert!(c.requests > 0 && c.errors_total() == 0, "{c:?}");
    assert_eq!(r.stats.conn.reconnects, u64::from(USERS));
}

/// A target that does not complete the handshakes (a listener whose queue
/// is full and that never accepts, so the kernel drops further SYNs): the
/// connects still pending at the start are given up there, the run starts
/// on time and ends on time, and fewer users than all were preconnected.
#[test]
fn connects_not_done_by_the_start_are_given_up_there() {
    use socket2::{Domain, Socket, Type};
    let l = Socket::new(Domain::IPV4, Type::STREAM, None).expect("socket");
    l.bind(&"127.0.0.1:0".parse::<std::net::SocketAddr>().expect("addr").into())
        .expect("bind");
    l.listen(0).expect("listen");
    let mut plan = plan_for(l.local_addr().expect("addr").as_socket().expect("inet").port());
    plan.os_threads = 1;
    plan.stop = Stop::After(Duration::from_millis(500));
    plan.preconnect = true;
    let start = Instant::now() + Duration::from_millis(500);
    let r = Client::start(plan, start).expect("starts").finish();
    assert!(
        r.stats.conn.preconnected < u64::from(USERS),
        "{}",
        r.stats.conn.preconnected
    );
    // Nothing answered: no request ended; the users are still connecting.
    let c = &r.stats.classes[0].counters;
    assert_eq!(c.requests, 0);
    assert!(r.in_flight > 0);
    drop(l);
}
