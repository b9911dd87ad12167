//! An HTTP/1.1 server of known capacity for the peak-search tests: a fixed
//! pool of `workers` permits, each request holding one for `service` (a
//! sleep, so the server's capacity — `workers ÷ service` requests/s — does
//! not depend on this machine's CPU), then answered with a 2-byte body,
//! keep-alive. One thread per connection reads the requests; a request
//! waits for a free permit, as a request waits for a free worker in a
//! pooled server. With a queue limit, a request that finds that many
//! already waiting is refused at once with 503 (an overloaded server's
//! errors, at a load known in advance). A thrashing server instead serves
//! every request at once, fast while few are in service and slowly once
//! more are (a server past its working set): its latency jumps at a
//! concurrency known in advance while its rate falls, for a p99 limit that
//! stops the search at one load only. Listens on `127.0.0.1:0`; stops
//! accepting when dropped.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::Duration;

/// Free permits and requests waiting for one (a pool), or requests in
/// service (a thrashing server).
struct State {
    free: usize,
    waiting: usize,
    active: usize,
}

/// Permits, taken and given back around each request's service time.
struct Pool {
    state: Mutex<State>,
    freed: Condvar,
    max_waiting: usize,
    /// A thrashing server: requests arriving while more than this many
    /// are in service (themselves included) take this long instead.
    thrash: Option<(usize, Duration)>,
}

impl Pool {
    /// Serves a request (`true`), or refuses it (`false`) when the queue
    /// is full.
    fn serve(&self, service: Duration) -> bool {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((fast_up_to, slow)) = self.thrash {
            st.active += 1;
            let n = st.active;
            drop(st);
            thread::sleep(if n > fast_up_to { slow } else { service });
            self.state.lock().unwrap_or_else(|p| p.into_inner()).active -= 1;
            self.freed.notify_all();
            return true;
        }
        if st.free == 0 {
            if st.waiting >= self.max_waiting {
                return false;
            }
            st.waiting += 1;
            while st.free == 0 {
                st = self.freed.wait(st).unwrap_or_else(|p| p.into_inner());
            }
            st.waiting -= 1;
        }
        st.free -= 1;
        drop(st);
        thread::sleep(service);
        self.state.lock().unwrap_or_else(|p| p.into_inner()).free += 1;
        // Every waiter re-checks; `wait_idle` waits on the same condition.
        self.freed.notify_all();
        true
    }
}

pub struct PoolServer {
    pub port: u16,
    stop: Arc<AtomicBool>,
    pool: Arc<Pool>,
    workers: usize,
}

impl PoolServer {
    /// `workers` permits of `service` each: capacity `workers ÷ service`.
    pub fn start(workers: usize, service: Duration) -> PoolServer {
        PoolServer::with_queue(workers, service, usize::MAX)
    }

    /// As [`PoolServer::start`], refusing a request with 503 when
    /// `max_waiting` requests already wait for a permit.
    pub fn with_queue(workers: usize, service: Duration, max_waiting: usize) -> PoolServer {
        PoolServer::new(workers, service, max_waiting, None)
    }

    /// A thrashing server: every request is served at once, in `fast`
    /// while at most `fast_up_to` are in service (counted as it arrives,
    /// itself included), in `slow` otherwise. A closed loop of up to
    /// `fast_up_to` users gets `fast` every time, at a rate that grows
    /// with the users; one more user and, within a round, every request
    /// arrives to a full server and takes `slow`.
    pub fn thrashing(fast_up_to: usize, fast: Duration, slow: Duration) -> PoolServer {
        PoolServer::new(fast_up_to, fast, usize::MAX, Some((fast_up_to, slow)))
    }

    fn new(workers: usize, service: Duration, max_waiting: usize, thrash: Option<(usize, Duration)>) -> PoolServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the pool server");
        let port = listener.local_addr().expect("local address").port();
        let stop = Arc::new(AtomicBool::new(false));
        let pool = Arc::new(Pool {
            state: Mutex::new(State {
                free: workers,
                waiting: 0,
                active: 0,
            }),
            freed: Condvar::new(),
            max_waiting,
            thrash,
        });
        let s = Arc::clone(&stop);
        let p = Arc::clone(&pool);
        thread::spawn(move || {
            for conn in listener.incoming() {
                if s.load(Ordering::Relaxed) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let pool = Arc::clone(&p);
                thread::spawn(move || connection(conn, &pool, service));
            }
        });
        PoolServer {
            port,
            stop,
            pool,
            workers,
        }
    }

    /// Blocks until no request is served or waiting (what a previous load
    /// left behind has drained), so the next load starts on an idle pool.
    pub fn wait_idle(&self) {
        let mut st = self.pool.state.lock().unwrap_or_else(|p| p.into_inner());
        while st.free < self.workers || st.waiting > 0 || st.active > 0 {
            st = self.pool.freed.wait(st).unwrap_or_else(|p| p.into_inner());
        }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/", self.port)
    }
}

impl Drop for PoolServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Unblocks `accept` so the accept thread sees the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// Serves a connection's requests (found by their `\r\n\r\n`; no bodies)
/// until the client closes it or asks to (`Connection: close`).
fn connection(mut conn: TcpStream, pool: &Pool, service: Duration) {
    let _ = conn.set_nodelay(true);
    let mut buf = Vec::with_capacity(4096);
    let mut chunk = [0u8; 4096];
    loop {
        let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
            match conn.read(&mut chunk) {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
            continue;
        };
        let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
        buf.drain(..end + 4);
        let http10 = head.lines().next().is_some_and(|l| l.trim_end().ends_with("http/1.0"));
        let close = head.contains("connection: close") || (http10 && !head.contains("connection: keep-alive"));
        let status = if pool.serve(service) { "200 OK" } else { "503 Busy" };
        let answer = format!(
            "HTTP/1.1 {status}\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n{}\r\nok",
            if close { "Connection: close\r\n" } else { "" }
        );
        if conn.write_all(answer.as_bytes()).is_err() || close {
            return;
        }
    }
}

/// A suite whose one workload asks the pool server's `/` (its 2-byte
/// body checked): `defaults` are the lines of its `[defaults]` table, and
/// each entry of `mixes` the lines of one `[[mix]]` after `clients = 1`.
pub fn suite_toml(name: &str, target: &str, seed: u64, defaults: &str, mixes: &[&str]) -> String {
    let mut s = format!(
        "name = \"{name}\"\ntarget = \"{}\"\nseed = {seed}\n\n[defaults]\n{defaults}\n\n\
         [workloads.one]\n[[workloads.one.class]]\nname = \"ok\"\npercent = 100\n\
         [[workloads.one.class.url]]\npath = \"/\"\nsize = 2\n",
        target.trim_end_matches('/')
    );
    for extra in mixes {
        s.push_str("\n[[mix]]\nclients = 1\n");
        s.push_str(extra);
        if !extra.is_empty() && !extra.ends_with('\n') {
            s.push('\n');
        }
    }
    s
}
