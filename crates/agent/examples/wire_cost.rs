//! What a remote second costs the controller on top of the merge: N
//! seconds as agents send them (a protobuf envelope around the `Second`'s
//! JSON, its HDR delta V2 in base64), each decoded as the controller's
//! reader does and its histogram added; prints the bytes a second and the
//! CPU per second, and the share of one core for AGENTS agents.
//!
//! Usage: cargo run --release -p benchlab-agent --example wire_cost [AGENTS [SAMPLES]]

use benchlab_agent::proto::decode_second;
use benchlab_agent::proto::{agent_message, AgentMessage, ClientPayload};
use benchlab_engine::{new_latency_histogram, LatencySummary, Second};
use prost::Message;
use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
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
