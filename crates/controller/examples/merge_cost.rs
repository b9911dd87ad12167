//! What merging clients' per-second snapshots costs the controller: N fake
//! clients replay S recorded seconds each (the HDR delta in the V2
//! serialisation, as a remote client will send it, decoded here as the
//! controller will), driven through `drive_mix`; prints the controller
//! thread's CPU per second of mix. Run by `bench/merge-cost.sh`.

use benchlab_controller::plan::{ClientPlan, UrlList};
use benchlab_controller::{drive_mix, ClientDriver, ClientLost, ClientPool, Driver, DriverError, WebClient};
use benchlab_engine::{new_latency_histogram, ClientReport, ConnCounters, Counters, LatencySummary, Second};
use hdrhistogram::serialization::{Deserializer, Serializer, V2Serializer};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// One recorded second: `samples` latencies spread like a loaded server's
/// (mostly 100 µs to 2 ms, a tail to 200 ms), V2-serialised.
fn recorded(samples: u64, seed: u64) -> Vec<u8> {
    let mut h = new_latency_histogram();
    let mut x = seed;
    for _ in 0..samples {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let u = (x >> 11) as f64 / (1u64 << 53) as f64;
        let v = if u < 0.99 {
            100.0 + 1900.0 * u
        } else {
            2_000.0 + 200_000.0 * (u - 0.99) * 100.0
        };
        h.record(v as u64).expect("in range");
    }
    let mut out = Vec::new();
    V2Serializer::new().serialize(&h, &mut out).expect("serialise");
    out
}

#[derive(Debug)]
struct Replay {
    seconds: u32,
    snapshots: Arc<Vec<Vec<u8>>>,
}

struct Client {
    next: u32,
    seconds: u32,
    snapshot: Arc<Vec<Vec<u8>>>,
    index: usize,
}

impl ClientPool for Replay {
    fn load_urls(&self, _: &Arc<UrlList>) -> Result<(), DriverError> {
        Ok(())
    }
    fn driver(&self, client: usize) -> Box<ClientDriver> {
        Box::new(Client {
            next: 0,
            seconds: self.seconds,
            snapshot: Arc::clone(&self.snapshots),
            index: client,
        })
    }
}

impl Driver<WebClient> for Client {
    fn start(&mut self, _: ClientPlan, _: SystemTime) -> Result<(), DriverError> {
        Ok(())
    }
    fn stop(&mut self) {}
    fn next_second(&mut self, _: Duration) -> Option<Second> {
        if self.next == self.seconds {
            return None;
        }
        let bytes = &self.snapshot[(self.index + self.next as usize) % self.snapshot.len()];
        let h: hdrhistogram::Histogram<u64> = Deserializer::new().deserialize(&mut bytes.as_slice()).expect("V2");
        let s = Second {
            second: self.next,
            counters: Counters {
                requests: h.len(),
                ..Counters::default()
            },
            conn: ConnCounters::default(),
            latency: LatencySummary::default(),
            histogram: Some(h),
            load: Default::default(),
        };
        self.next += 1;
        Some(s)
    }
    fn is_finished(&self) -> bool {
        self.next == self.seconds
    }
    fn finish(&mut self) -> Result<ClientReport, ClientLost> {
        Err(ClientLost { why: "replayed".into() })
    }
}

fn thread_cpu() -> Duration {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid clock id and a pointer to a live timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

fn main() {
    let arg = |i: usize, d: u64| std::env::args().nth(i).and_then(|a| a.parse().ok()).unwrap_or(d);
    let (clients, seconds, samples) = (arg(1, 64) as usize, arg(2, 60) as u32, arg(3, 20_000));
    let snapshots: Vec<Vec<u8>> = (0..16).map(|i| recorded(samples, i + 1)).collect();
    let v2_bytes = snapshots.iter().map(Vec::len).sum::<usize>() / snapshots.len();
    let pool = Replay {
        seconds,
        snapshots: Arc::new(snapshots),
    };
    let plan = ClientPlan {
        urls: String::new(),
        settings: benchlab_engine::ClientSettings {
            virtual_users: 1,
            load: benchlab_engine::Load::Closed,
            os_threads: 1,
            stop: benchlab_engine::Stop::After(Duration::from_secs(seconds.into())),
            window: (Duration::ZERO, Duration::from_secs(seconds.into())),
            start_delay: Duration::ZERO,
            think_time: Duration::ZERO,
            ramp_up: Duration::ZERO,
            timeout: Duration::from_secs(5),
            connection: Default::default(),
            receive_buffer: 4096,
            headers: Vec::new(),
            source_addresses: Vec::new(),
            tls: Default::default(),
            seed: 1,
            first_user: 0,
            http2: None,
            preconnect: false,
        },
    };
    let plans = vec![plan; clients];
    let cpu0 = thread_cpu();
    let mut merged = 0u64;
    let driven = drive_mix(
        &pool,
        &plans,
        plans[0].settings.window,
        SystemTime::now(),
        &AtomicBool::new(false),
        &mut |s, _| merged += s.requests,
    )
    .expect("drives");
    let cpu = thread_cpu() - cpu0;
    assert_eq!(driven.seconds.len(), seconds as usize);
    assert_eq!(merged, clients as u64 * seconds as u64 * samples);
    let per_second = cpu / seconds;
    println!(
        "{clients} clients × {seconds} s, {samples} samples a second each ({v2_bytes} bytes V2): \
         {:.2} ms of controller CPU per second of mix = {:.2} % of one core ({:.1} µs per snapshot, decode included)",
        per_second.as_secs_f64() * 1e3,
        per_second.as_secs_f64() * 100.0,
        per_second.as_secs_f64() * 1e6 / clients as f64
    );
}
