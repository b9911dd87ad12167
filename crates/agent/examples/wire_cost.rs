//! What a remote second costs the controller on top of the merge: N
//! seconds as agents send them (a protobuf envelope around the `Second`'s
//! JSON, its HDR delta V2 in base64), each decoded as the controller's
//! reader does and its histogram added; prints the bytes a second and the
//! CPU per second, and the share of one core for AGENTS agents.
//!
//! Usage: cargo run --release -p benchlab-agent --example wire_cost [AGENTS [SAMPLES]]
//!
//! `wire_cost curve [SECONDS [SAMPLES [AGENTS…]]]`: the controller's whole
//! merge against the number of agents (default 1 10 64 256 1000, 10 s):
//! synthetic agents' seconds on the real wire format (each agent's second
//! one protobuf `AgentMessage` as `read_agent` receives it) are decoded
//! and merged by the controller's own driving loop (`drive_mix`, which
//! adds every histogram and releases each merged second) on one thread;
//! prints that thread's CPU per second of mix as a share of one core, the
//! bytes per agent-second on the wire (the message and gRPC's 5-byte
//! prefix; HTTP/2 frames and TLS records add about 30 bytes), and a bar
//! chart. Not counted: TLS, HTTP/2 and the runtime's threads.

use benchlab_agent::proto::decode_second;
use benchlab_agent::proto::{agent_message, AgentMessage, ClientPayload};
use benchlab_controller::plan::{ClientPlan, UrlList};
use benchlab_controller::{drive_mix, ClientDriver, ClientLost, ClientPool, Driver, DriverError, WebClient};
use benchlab_engine::{new_latency_histogram, ClientReport, Counters, LatencySummary, Second};
use prost::Message;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

/// One second of `samples` latencies spread like a loaded server's, as an
/// agent sends it: the envelope around the `Second`'s JSON.
fn message(second: u32, samples: u64, seed: u64) -> Vec<u8> {
    let mut h = new_latency_histogram();
    let mut x = seed + 1;
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
    let s = Second {
        second,
        counters: Counters {
            requests: samples,
            ..Counters::default()
        },
        conn: Default::default(),
        latency: LatencySummary::of(&h),
        histogram: Some(h),
        load: Default::default(),
    };
    AgentMessage {
        kind: Some(agent_message::Kind::Second(ClientPayload {
            client: seed as u32,
            json: serde_json::to_vec(&s).expect("JSON"),
        })),
    }
    .encode_to_vec()
}

/// Synthetic agents: each client's seconds are wire messages, decoded as
/// the controller's reader decodes them.
#[derive(Debug)]
struct Wire {
    seconds: u32,
    /// `[second][variant]`: 16 variants a second, client c sending
    /// variant (c + second) mod 16.
    messages: Arc<Vec<Vec<Vec<u8>>>>,
}

struct WireClient {
    next: u32,
    seconds: u32,
    index: usize,
    messages: Arc<Vec<Vec<Vec<u8>>>>,
}

impl ClientPool for Wire {
    fn load_urls(&self, _: &Arc<UrlList>) -> Result<(), DriverError> {
        Ok(())
    }
    fn driver(&self, client: usize) -> Box<ClientDriver> {
        Box::new(WireClient {
            next: 0,
            seconds: self.seconds,
            index: client,
            messages: Arc::clone(&self.messages),
        })
    }
}

impl Driver<WebClient> for WireClient {
    fn start(&mut self, _: ClientPlan, _: SystemTime) -> Result<(), DriverError> {
        Ok(())
    }
    fn stop(&mut self) {}
    fn next_second(&mut self, _: Duration) -> Option<Second> {
        if self.next == self.seconds {
            return None;
        }
        let variants = &self.messages[self.next as usize];
        let bytes = &variants[(self.index + self.next as usize) % variants.len()];
        let Some(agent_message::Kind::Second(p)) = AgentMessage::decode(&bytes[..]).expect("decode").kind else {
            unreachable!("a Second")
        };
        self.next += 1;
        Some(decode_second(&p.json).expect("second"))
    }
    fn is_finished(&self) -> bool {
        self.next == self.seconds
    }
    fn finish(&mut self) -> Result<ClientReport, ClientLost> {
        Err(ClientLost {
            why: "synthetic".into(),
        })
    }
}

fn plan(seconds: u32) -> ClientPlan {
    ClientPlan {
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
            receive_buffer: 4096,
            ..Default::default()
        },
    }
}

fn thread_cpu() -> Duration {
    let (u, s) = benchlab_engine::sys::cpu_time(true);
    u + s
}

fn curve(mut args: impl Iterator<Item = String>) {
    let seconds: u32 = args.next().and_then(|a| a.parse().ok()).unwrap_or(10);
    let samples: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(20_000);
    let mut counts: Vec<usize> = args.filter_map(|a| a.parse().ok()).collect();
    if counts.is_empty() {
        counts = vec![1, 10, 64, 256, 1000];
    }
    let messages: Vec<Vec<Vec<u8>>> = (0..seconds)
        .map(|sec| (0..16).map(|v| message(sec, samples, v)).collect())
        .collect();
    let wire = messages.iter().flatten().map(|m| m.len() + 5).sum::<usize>() / (seconds as usize * 16);
    let pool = Wire {
        seconds,
        messages: Arc::new(messages),
    };
    println!(
        "{seconds} s of mix, {samples} requests a second per agent: {wire} bytes per agent-second on the wire \
         (message + gRPC prefix)"
    );
    println!(
        "{:>6}  {:>10}  {:>12}  {:>13}",
        "agents", "CPU ms/s", "% of a core", "µs per agent"
    );
    let mut rows = Vec::new();
    for &agents in &counts {
        let plans = vec![plan(seconds); agents];
        // The thread's CPU time is counted in scheduler ticks: a few agents
        // run the mix again until about 1,000 agents' worth is measured.
        let rounds = (1000 / agents).max(1) as u32;
        let cpu0 = thread_cpu();
        for _ in 0..rounds {
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
            assert_eq!(driven.seconds.len(), seconds as usize);
            assert_eq!(merged, agents as u64 * seconds as u64 * samples);
        }
        let cpu = thread_cpu() - cpu0;
        let per_second = cpu / (seconds * rounds);
        let share = per_second.as_secs_f64() * 100.0;
        println!(
            "{agents:>6}  {:>10.2}  {share:>12.2}  {:>13.1}",
            per_second.as_secs_f64() * 1e3,
            per_second.as_secs_f64() * 1e6 / agents as f64
        );
        rows.push((agents, share));
    }
    // The chart: one `#` per half a percent of one core (the budget is
    // 100 %: 200 of them).
    println!("controller CPU per second of mix, % of one core (# = 0.5 %):");
    for (agents, share) in rows {
        let bar = "#".repeat((share * 2.0).round() as usize);
        println!("{agents:>6} | {bar} {share:.1} %");
    }
}

fn main() {
    let mut args = std::env::args().skip(1).peekable();
    if args.peek().is_some_and(|a| a == "curve") {
        args.next();
        return curve(args);
    }
    let agents: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(64);
    let samples: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(20_000);
    // One second per agent, latencies spread like a loaded server's (the
    // same shape as the controller's merge_cost example).
    let messages: Vec<Vec<u8>> = (0..agents as u64)
        .map(|seed| {
            let mut h = new_latency_histogram();
            let mut x = seed + 1;
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
            let s = Second {
                second: 0,
                counters: Default::default(),
                conn: Default::default(),
                latency: LatencySummary::of(&h),
                histogram: Some(h),
                load: Default::default(),
            };
            AgentMessage {
                kind: Some(agent_message::Kind::Second(ClientPayload {
                    client: seed as u32,
                    json: serde_json::to_vec(&s).expect("JSON"),
                })),
            }
            .encode_to_vec()
        })
        .collect();
    let bytes: usize = messages.iter().map(Vec::len).sum();
    let rounds = 20;
    let mut merged = new_latency_histogram();
    let t = Instant::now();
    for _ in 0..rounds {
        for m in &messages {
            let Some(agent_message::Kind::Second(p)) = AgentMessage::decode(&m[..]).expect("decode").kind else {
                unreachable!()
            };
            let s = decode_second(&p.json).expect("second");
            merged.add(s.histogram.as_ref().expect("histogram")).expect("add");
        }
    }
    let per_message = t.elapsed() / (rounds * agents) as u32;
    let share = per_message.as_secs_f64() * agents as f64 * 100.0;
    println!(
        "{agents} agents × 1 second of {samples} samples: {} bytes a second each on the wire; decode + add {:.1} µs each; \
         {share:.2} % of one core for {agents} agents, {:.1} % projected for 1,000",
        bytes / agents,
        per_message.as_secs_f64() * 1e6,
        share / agents as f64 * 1000.0
    );
}
