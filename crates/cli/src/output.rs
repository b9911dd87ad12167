//! The result of `benchlab http`: the human summary, and `--json`'s
//! one-mix `benchlab.results/1` (the schema every run writes), both from
//! the same `MixResult` the controller folds (`benchlab_controller::
//! http_mix`), so both always agree.
//!
//! Field names and meanings are those of docs/counting.md; the
//! docs/http.md documents each one.

use crate::args::HttpMode;
use benchlab_engine::{sys, ClientPlan, ConnectionKind, ErrorKind, Load, Stop};
use benchlab_results::{MixResult, Results};
use std::fmt::Write as _;

/// Writes to stdout for the `print!`/`println!` of this binary (main.rs),
/// flushed at once so a closed pipe shows here and not at exit. A reader
/// that has gone (`EPIPE`) ends the process quietly with
/// [`benchlab_results::exit::CLOSED_STDOUT`] (141, a shell's status for a
/// process killed by SIGPIPE); any other failure to write is said on stderr
/// and exits 1. SIGPIPE itself stays ignored, as Rust sets it, because the
/// engine's sockets must see a server's reset as an error to count, never
/// as a signal that kills the run.
pub fn print_stdout(args: std::fmt::Arguments<'_>, newline: bool) {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    let written = out
        .write_fmt(args)
        .and_then(|()| if newline { out.write_all(b"\n") } else { Ok(()) })
        .and_then(|()| out.flush());
    if let Err(e) = written {
        stdout_failed(&e);
    }
}

/// Ends the process after a failed write to stdout: quietly with 141 for a
/// closed pipe, else with a message and 1.
pub fn stdout_failed(e: &std::io::Error) -> ! {
    use benchlab_results::exit;
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        std::process::exit(exit::CLOSED_STDOUT.into());
    }
    eprintln!("benchlab: cannot write to standard output: {e}");
    std::process::exit(exit::CANNOT_RUN.into());
}

/// `benchlab http`'s results, dated now: the one phase of its mixes
/// (`benchlab_controller::http_results`), as every run writes them, so
/// `report` and `compare` read it as they read a suite's results.
pub fn dated(mut r: Results) -> Results {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0);
    let ran: f64 = r.mixes.iter().map(|m| m.params.length_s).sum();
    r.environment.started_unix = (now - ran).max(0.0) as u64;
    r.environment.cores = sys::usable_cpus();
    r
}

/// `--json`'s document.
pub fn json_text(r: &Results) -> String {
    serde_json::to_string_pretty(r).unwrap_or_default()
}

/// Numbers for people: the one formatter of the terminal, HTML and XLSX.
pub use benchlab_format::{mbit_per_sec, mbytes_per_sec, mean_us, plural, requests_per_sec, seconds, share, thousands};

/// One line saying what the run will do.
pub fn describe(plan: &ClientPlan, mode: HttpMode) -> String {
    let c = plan.connection;
    let conn = match mode {
        HttpMode::Http2 => {
            let h2 = plan.http2.unwrap_or_default();
            let tls = plan
                .urls
                .iter()
                .any(|u| u.target.scheme == benchlab_engine::Scheme::Https);
            format!(
                "HTTP/2 ({}), {} × {} at most",
                if tls { "TLS, ALPN h2" } else { "h2c, prior knowledge" },
                plural(h2.connections.into(), "connection", "connections"),
                plural(h2.streams.into(), "stream", "streams")
            )
        }
        HttpMode::Http3 => {
            let h = plan.http2.unwrap_or_default();
            format!(
                "HTTP/3 (QUIC v1, TLS 1.3, ALPN h3), {} × {} at most",
                plural(h.connections.into(), "connection", "connections"),
                plural(h.streams.into(), "stream", "streams")
            )
        }
        HttpMode::Http10 if c.http10_percent == 100 => "HTTP/1.0, a connection per request".to_string(),
        HttpMode::Http10KeepAlive if c.http10_percent == 100 => "HTTP/1.0 keep-alive".to_string(),
        _ => {
            let mut s = format!("HTTP/1.1, {} % persistent", c.persistent_percent);
            if c.http10_percent > 0 {
                s += &format!(", {} % HTTP/1.0", c.http10_percent);
            }
            s
        }
    };
    let per_conn = match c.requests_per_connection {
        None => String::new(),
        Some((a, b)) if a == b => format!(", {} per connection", plural(a.into(), "request", "requests")),
        Some((a, b)) => format!(
            ", {}..{} requests per connection",
            thousands(a.into()),
            thousands(b.into())
        ),
    };
    let per_conn = if plan.preconnect {
        per_conn + ", connected before the start"
    } else {
        per_conn
    };
    let stop = match plan.stop {
        Stop::After(d) if !plan.ramp_up.is_zero() => format!(
            "for {} after a {} ramp-up (not counted)",
            humantime::format_duration(d.saturating_sub(plan.ramp_up)),
            humantime::format_duration(plan.ramp_up)
        ),
        Stop::After(d) => format!("for {}", humantime::format_duration(d)),
        Stop::Requests(n) => format!("for {} requests", thousands(n)),
    };
    let load = match plan.load {
        Load::Closed => plural(
            plan.virtual_users.into(),
            "thread (virtual user)",
            "threads (virtual users)",
        ),
        Load::Open(o) => format!(
            "open loop at {} requests/s ({} arrivals, at most {} in flight)",
            benchlab_format::rate(o.rate),
            o.arrival.name(),
            thousands(o.max_in_flight.into())
        ),
    };
    format!(
        "benchlab http: {}, {load} on {}, {conn}{per_conn}, {stop}",
        plural(plan.urls.len() as u64, "URL", "URLs"),
        plural(
            plan.os_threads.min(plan.slots() as usize) as u64,
            "OS thread",
            "OS threads"
        )
    )
}

/// The human summary of `http`'s mix.
pub fn human(m: &MixResult) -> String {
    let mut o = String::new();
    let f = &m.figures;
    let cmd = m.http_command.clone().unwrap_or_default();
    if m.partial {
        let _ = writeln!(o, "  partial: stopped by Ctrl-C after {} s", seconds(m.window_s));
    }
    let _ = writeln!(
        o,
        "  requests     {:>14}  {:>12} req/s  in {} s",
        thousands(f.requests),
        requests_per_sec(f.requests_per_sec),
        seconds(m.window_s)
    );
    let _ = writeln!(
        o,
        "  throughput   {:>11} MB/s  ({} Mbit/s); bodies {} MB/s",
        mbytes_per_sec(f.bytes_per_sec),
        mbit_per_sec(f.bytes_per_sec * 8.0 / 1e6),
        mbytes_per_sec(cmd.body_bytes_per_sec)
    );
    let l = &f.latency_us;
    let _ = writeln!(
        o,
        "  latency µs   mean {}  p50 {}  p90 {}  p99 {}  p99.9 {}  max {}",
        mean_us(l.mean),
        thousands(l.p50),
        thousands(l.p90),
        thousands(l.p99),
        thousands(l.p999),
        thousands(l.max)
    );
    if let Some(ol) = &m.open_loop {
        let l = &ol.latency_as_sent_us;
        let _ = writeln!(
            o,
            "  as sent µs   mean {}  p50 {}  p90 {}  p99 {}  p99.9 {}  max {}  (latency above: from intended send times)",
            mean_us(l.mean),
            thousands(l.p50),
            thousands(l.p90),
            thousands(l.p99),
            thousands(l.p999),
            thousands(l.max)
        );
        let _ = writeln!(
            o,
            "  open loop    --rate {} {}: {} sent ({} /s), {} late (> {} ms), {} waited for --max-in-flight {}, {} due never sent",
            benchlab_format::rate(ol.rate),
            ol.arrival,
            thousands(ol.sends),
            requests_per_sec(ol.sends_per_sec),
            thousands(ol.late_sends),
            ol.late_tolerance_us / 1000,
            thousands(ol.max_in_flight_hit),
            thousands(ol.max_in_flight.into()),
            thousands(ol.unsent)
        );
    }
    let error = |k: ErrorKind| f.errors.get(k.name()).copied().unwrap_or(0);
    if f.errors_total == 0 {
        let _ = writeln!(o, "  errors       0");
    } else {
        // In the order of docs/counting.md.
        let kinds: Vec<String> = ErrorKind::ALL
            .iter()
            .map(|k| (k, error(*k)))
            .filter(|(_, n)| *n > 0)
            .map(|(k, n)| format!("{k} {}", thousands(n)))
            .collect();
        let _ = writeln!(
            o,
            "  errors       {}  ({}); {} received for them",
            thousands(f.errors_total),
            kinds.join(", "),
            plural(f.error_bytes, "byte", "bytes")
        );
        if error(ErrorKind::WrongBody) > 0 {
            let _ = writeln!(
                o,
                "               wrong_body: size/checksum differs from the preflight response; pages whose size varies need --validate status"
            );
        }
    }
    let kinds: Vec<String> = ConnectionKind::ALL
        .iter()
        .filter_map(|k| m.request_kinds.get(k.name()).map(|f| (k, f)))
        .filter(|(_, f)| f.requests > 0 || f.configured_percent > 0.0)
        .map(|(k, f)| {
            format!(
                "{} {} ({:.2} %, configured {:.0} %)",
                k.label(),
                thousands(f.requests),
                f.percent,
                f.configured_percent
            )
        })
        .collect();
    match (&m.http2, m.http2.as_ref().and_then(|h| h.quic.as_ref())) {
        (Some(h), Some(q)) => {
            let named = |m: &std::collections::BTreeMap<String, u64>| {
                m.iter()
                    .map(|(k, n)| format!("{k} {}", thousands(*n)))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let _ = writeln!(
                o,
                "  HTTP/3       {} × {}, {} opened{}{}",
                plural(h.connections, "connection", "connections"),
                plural(h.streams_per_connection.into(), "stream", "streams"),
                plural(h.streams_opened, "stream", "streams"),
                if h.stream_resets.is_empty() {
                    String::new()
                } else {
                    format!("; stream resets: {}", named(&h.stream_resets))
                },
                if q.connection_closes.is_empty() {
                    String::new()
                } else {
                    format!("; connection closes: {}", named(&q.connection_closes))
                }
            );
            let _ = writeln!(
                o,
                "  QUIC         {} datagrams sent ({} bytes), {} received ({} bytes); {} packets lost ({} bytes, sent again); handshake mean {} µs; UDP offload: {} GSO sends, {} GRO reads{}",
                thousands(q.datagrams_sent),
                thousands(q.udp_bytes_sent),
                thousands(q.datagrams_received),
                thousands(q.udp_bytes_received),
                thousands(q.packets_lost),
                thousands(q.bytes_lost),
                benchlab_format::fixed(q.handshake_mean_us, 0),
                thousands(q.gso_sends),
                thousands(q.gro_reads),
                if q.zero_rtt_accepted + q.zero_rtt_rejected > 0 {
                    format!(
                        "; 0-RTT: {} accepted, {} rejected",
                        thousands(q.zero_rtt_accepted),
                        thousands(q.zero_rtt_rejected)
                    )
                } else {
                    String::new()
                }
            );
        }
        (Some(h), None) => {
            let settings = cmd
                .h2_server_settings
                .clone()
                .and_then(|v| serde_json::from_value::<benchlab_engine::h2::conn::PeerSettings>(v).ok());
            let server = match settings {
                Some(s) => format!(
                    "; server: {} concurrent streams, window {}, frames up to {}",
                    s.max_concurrent_streams
                        .map_or("unlimited".to_string(), |n| thousands(n.into())),
                    thousands(s.initial_window_size.into()),
                    thousands(s.max_frame_size.into())
                ),
                None => String::new(),
            };
            let resets: Vec<String> = h
                .stream_resets
                .iter()
                .map(|(k, n)| format!("{k} {}", thousands(*n)))
                .collect();
            let _ = writeln!(
                o,
                "  HTTP/2       {} × {}, {} opened, {}, {} connection-level frame bytes{server}{}",
                plural(h.connections, "connection", "connections"),
                plural(h.streams_per_connection.into(), "stream", "streams"),
                plural(h.streams_opened, "stream", "streams"),
                plural(h.goaways, "GOAWAY", "GOAWAYs"),
                thousands(h.connection_frame_bytes),
                if resets.is_empty() {
                    String::new()
                } else {
                    format!("; stream resets: {}", resets.join(", "))
                }
            );
        }
        (None, _) => {
            let _ = writeln!(o, "  HTTP         {}", kinds.join("; "));
        }
    }
    if m.users_waiting > 0 {
        let _ = writeln!(
            o,
            "  users        {} of {} got a response; {} still waiting to connect at the end",
            thousands(m.users_arrived),
            thousands(m.threads),
            thousands(m.users_waiting)
        );
    }
    let _ = writeln!(
        o,
        "  connections  {} opened{}, {} after idle closes, {} in flight at the end",
        thousands(m.connections_opened),
        match &m.open_loop {
            Some(ol) => format!(", at most {} open at once", thousands(ol.peak_connections)),
            None => String::new(),
        },
        plural(m.reconnects, "reconnect", "reconnects"),
        plural(m.in_flight, "request", "requests")
    );
    if m.tls_full_handshakes + m.tls_resumptions > 0 {
        let _ = writeln!(
            o,
            "  TLS          {}, {}",
            plural(m.tls_full_handshakes, "full handshake", "full handshakes"),
            plural(m.tls_resumptions, "resumption", "resumptions")
        );
    }
    let cpu = &m.client_cpu;
    let _ = writeln!(
        o,
        "  client CPU   {} s user + {} s system = {} of {}, {} µs per request{}",
        seconds(cpu.user_s),
        seconds(cpu.system_s),
        share(cpu.utilisation),
        plural(cpu.cores as u64, "core", "cores"),
        mean_us(cpu.us_per_request),
        if cpu.client_bound {
            "\n  CLIENT-BOUND: the load generator was saturated, so this measured benchlab, not the server; \
             use more --os-threads or cores, or more client machines"
        } else {
            ""
        }
    );
    if let (true, Some(busy)) = (cpu.co_located_saturated && !cpu.client_bound, cpu.machine_busy) {
        let _ = writeln!(
            o,
            "  CO-LOCATED: the server is on this machine and its CPUs were {} busy: benchlab and the server \
             competed for them, so either may have set these figures; run the load from another machine",
            share(busy)
        );
    }
    if m.classes.len() > 1 {
        let _ = writeln!(o, "  per URL:");
        for c in &m.classes {
            let _ = writeln!(
                o,
                "    {:>10} req  {:>10} req/s  p50 {:>7} µs  p99 {:>7} µs  errors {}  {}",
                thousands(c.figures.requests),
                requests_per_sec(c.figures.requests_per_sec),
                thousands(c.figures.latency_us.p50),
                thousands(c.figures.latency_us.p99),
                thousands(c.figures.errors_total),
                c.name
            );
        }
    }
    if !m.client_data.is_empty() {
        let _ = writeln!(o, "  per client:");
        for (c, at) in m.client_data.iter().zip(&cmd.clients) {
            let load = match at.rate {
                Some(rate) => format!("{} req/s sent", benchlab_format::rate(rate)),
                None => plural(at.threads.into(), "user", "users"),
            };
            let _ = writeln!(
                o,
                "    client {} on agent {} ({}{}): {}, {:>10} req  {:>10} req/s  p50 {:>7} µs  p99 {:>7} µs  errors {}{}",
                c.client,
                at.agent,
                if at.host.is_empty() { "?" } else { &at.host },
                c.address.as_ref().map_or(String::new(), |a| format!(", from {a}")),
                load,
                thousands(c.figures.requests),
                requests_per_sec(c.figures.requests_per_sec),
                thousands(c.figures.latency_us.p50),
                thousands(c.figures.latency_us.p99),
                thousands(c.figures.errors_total),
                c.lost.as_ref().map_or(String::new(), |w| format!("  LOST: {w}"))
            );
        }
        // How together the clients began (docs/counting.md).
        if let Some(s) = &m.start_spread {
            let _ = writeln!(o, "  {}", s.summary());
        }
    }
    o
}

/// `YYYYmmdd-HHMMSS` in UTC, for default results directories.
pub(crate) fn stamp() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (y, m, d, h, mi, sec) = benchlab_controller::utc_civil(secs);
    format!("{y:04}{m:02}{d:02}-{h:02}{mi:02}{sec:02}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use benchlab_engine::{ClassPlan, OpenLoop, Target, UrlPlan};
    use std::time::Duration;

    fn plan(urls: usize, users: u32, os_threads: usize) -> ClientPlan {
        let target = Target::parse("http://127.0.0.1:8080/a").expect("a URL");
        let urls: Vec<UrlPlan> = (0..urls).map(|_| UrlPlan::get(target.clone())).collect();
        let mut p = ClientPlan::new(urls, vec![ClassPlan { name: "a".into() }]);
        p.virtual_users = users;
        p.os_threads = os_threads;
        p.stop = Stop::Requests(1500);
        p
    }

    #[test]
    fn rates_are_written_with_separators() {
        assert_eq!(benchlab_format::rate(2000.0), "2,000");
        assert_eq!(benchlab_format::rate(0.5), "0.5");
        assert_eq!(benchlab_format::rate(1234.25), "1,234.25");
        let mut p = plan(1, 10, 2);
        p.stop = Stop::After(Duration::from_secs(3));
        p.load = Load::Open(OpenLoop {
            rate: 12_000.0,
            arrival: benchlab_engine::Arrival::Poisson,
            max_in_flight: 1500,
        });
        let d = describe(&p, HttpMode::Http11);
        assert!(
            d.contains(
                "1 URL, open loop at 12,000 requests/s (poisson arrivals, at most 1,500 in flight) on 2 OS threads,"
            ),
            "{d}"
        );
    }

    #[test]
    fn description_counts_in_the_singular_and_plural() {
        let one = describe(&plan(1, 1, 4), HttpMode::Http11);
        assert!(one.contains("1 URL, 1 thread (virtual user) on 1 OS thread,"), "{one}");
        assert!(one.contains("for 1,500 requests"), "{one}");
        assert!(!one.contains("(s)"), "{one}");
        let many = describe(&plan(2, 1200, 2), HttpMode::Http11);
        assert!(
            many.contains("2 URLs, 1,200 threads (virtual users) on 2 OS threads,"),
            "{many}"
        );
    }
}
