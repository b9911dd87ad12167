//! What one second of exporting costs, without the noise of a load:
//! the observer's update of a merged second (its HDR histogram counted
//! into the duration's buckets), one OpenMetrics render (a
//! scrape), one remote-write body (protobuf + snappy) and one OTLP body,
//! each timed over many rounds on a state of MIXES finished mixes (each
//! with its ramp and measured series, errors by kind and a host's CPU).
//! With one scrape and one push a second, the sum over a second's requests
//! is the exporter's CPU per request (bench/metrics-cost.sh measures the
//! whole process).
//!
//! `cargo run --release -p benchlab-metrics --example export_cost [MIXES [RATE]]`
//! (defaults 20 mixes, 20,000 requests/s).

use benchlab_metrics::{otlp, remote_write, Exporter, Kind, MixEnd};
use benchlab_results::SecondResult;
use std::hint::black_box;
use std::time::{Instant, SystemTime};

/// A second's merged HDR histogram (the engine's bounds): 20,000
/// requests spread from 100 µs to 10 ms, as a loaded server's are.
fn latencies() -> hdrhistogram::Histogram<u64> {
    let mut h = hdrhistogram::Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("bounds");
    for i in 0..20_000u64 {
        let _ = h.record(100 + (i * 7_919) % 9_900);
    }
    h
}

fn second(n: u32, in_window: bool) -> SecondResult {
    SecondResult {
        second: n,
        in_window,
        requests: 20_000,
        errors: 3,
        bytes: 20_000 * 250,
        connections_opened: 2,
        latency_p50_us: 400,
        latency_p99_us: 2_500,
        client_cpu_user_s: 0.2,
        client_cpu_system_s: 0.5,
        loop_lag_max_us: 120,
    }
}

/// Mean µs of `f` over `rounds` calls.
fn time(rounds: u32, mut f: impl FnMut()) -> f64 {
    let t = Instant::now();
    for _ in 0..rounds {
        f();
    }
    t.elapsed().as_secs_f64() * 1e6 / f64::from(rounds)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mixes: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(20);
    let rate: f64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(20_000.0);
    let e = Exporter::new("cost", Kind::Http);
    let h = latencies();
    for m in 1..=mixes {
        e.mix_started(m, 1, "static");
        for s in 1..=30 {
            e.second_merged(&second(s, s > 5), Some(&h), Some(8));
        }
        e.mix_finished(&MixEnd {
            requests: 500_000,
            errors: 75,
            bytes: 125_000_000,
            connections_opened: 60,
            in_flight: 8,
            errors_by_type: [("status".to_string(), 70), ("reset".to_string(), 5)]
                .into_iter()
                .collect(),
            host_cpu: [("web1".to_string(), ("server".to_string(), 0.8))]
                .into_iter()
                .collect(),
        });
    }
    e.mix_started(mixes + 1, 1, "static");
    // The same state without the duration histogram (seconds without
    // their HDR histogram): what its buckets add to each render and body.
    let plain = {
        let p = Exporter::new("cost", Kind::Http);
        for m in 1..=mixes {
            p.mix_started(m, 1, "static");
            for s in 1..=30 {
                p.second(&second(s, s > 5));
            }
            p.mix_finished(&MixEnd::default());
        }
        p.mix_started(mixes + 1, 1, "static");
        p
    };
    let plain_snap = plain.snapshot();
    let rounds = 2_000;
    let plain_scrape = time(rounds, || {
        black_box(plain.render_openmetrics());
    });
    let plain_rw = time(rounds, || {
        black_box(remote_write::body(&plain_snap, 1).ok());
    });
    let plain_ot = time(rounds, || {
        black_box(otlp::body(&plain_snap, SystemTime::now()));
    });
    let snap = e.snapshot();
    let update = time(rounds, || {
        e.second_merged(black_box(&second(31, true)), Some(black_box(&h)), Some(8))
    });
    let scrape = time(rounds, || {
        black_box(e.render_openmetrics());
    });
    let rw = time(rounds, || {
        black_box(remote_write::body(&snap, 1).ok());
    });
    let ot = time(rounds, || {
        black_box(otlp::body(&snap, SystemTime::now()));
    });
    println!(
        "state: {mixes} finished mixes and one running ({} bytes of OpenMetrics text)",
        e.render_openmetrics().len()
    );
    println!("a merged second's update     {update:9.2} µs (once a second)");
    println!("an OpenMetrics render        {scrape:9.2} µs (a scrape)");
    println!("a remote-write body          {rw:9.2} µs (protobuf + snappy)");
    println!("an OTLP body                 {ot:9.2} µs (protobuf)");
    println!(
        "without the duration histogram: render {plain_scrape:.2} µs, remote-write body {plain_rw:.2} µs, OTLP body \
         {plain_ot:.2} µs"
    );
    for (what, us) in [
        ("--metrics-listen, 1 s scrape", update + scrape),
        ("--otlp", update + ot),
        ("--prometheus-remote-write", update + rw),
    ] {
        println!(
            "{what:<30} {:.5} µs per request at {rate} requests/s ({:.3} % of a 5 µs request)",
            us / rate,
            us / rate / 5.0 * 100.0
        );
    }
}
