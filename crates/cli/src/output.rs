//! The result of `benchlab http`: the JSON schema `benchlab.http/1` and the
//! human summary printed from the same struct, so both always agree.
//!
//! Field names and meanings are DESIGN.md's "Counting, exactly" table; the
//! README documents each one.

use crate::http::HttpMode;
use benchlab_engine::{sys, ClassStats, ClientPlan, ClientReport, Counters, ErrorKind, LatencySummary, Stop};
use serde::Serialize;
use std::fmt::Write as _;
use std::time::Duration;

/// Latency figures in microseconds: the same type as in results.json.
pub use benchlab_controller::Latency;
use benchlab_controller::{arrival_warning, request_kinds, RequestKinds};
use benchlab_engine::{share_warning, ConnectionKind};

/// The load generator's own CPU use.
#[derive(Debug, Clone, Serialize)]
pub struct ClientCpu {
    pub user_s: f64,
    pub system_s: f64,
    /// Cores the load could use: min(OS threads, CPUs available).
    pub cores: usize,
    /// (user + system) ÷ (wall time × cores), 0–1.
    pub utilisation: f64,
    /// CPU microseconds per completed request (successful or failed).
    pub us_per_request: f64,
    /// The generator was saturated (utilisation > 0.9): it measured itself.
    pub client_bound: bool,
}

/// Counters of one class (one URL for `benchlab http`).
#[derive(Debug, Clone, Serialize)]
pub struct ClassResult {
    pub name: String,
    pub requests: u64,
    pub requests_per_sec: f64,
    pub errors: ErrorCounts,
    pub errors_total: u64,
    pub bytes: u64,
    pub body_bytes: u64,
    pub error_bytes: u64,
    pub latency_us: Latency,
}

/// One second of the run.
#[derive(Debug, Clone, Serialize)]
pub struct SecondResult {
    /// 1 = the first second.
    pub second: u32,
    pub requests: u64,
    pub errors: u64,
    pub bytes: u64,
    pub body_bytes: u64,
    pub connections_opened: u64,
    pub latency_p50_us: u64,
    pub latency_p99_us: u64,
}

/// `benchlab http --json`.
#[derive(Debug, Clone, Serialize)]
pub struct HttpResult {
    pub schema: &'static str,
    pub benchlab_version: &'static str,
    pub urls: Vec<String>,
    pub threads: u32,
    pub os_threads: usize,
    /// Seconds over which requests were counted (start to the last worker's stop).
    pub duration_s: f64,
    pub requests: u64,
    pub requests_per_sec: f64,
    pub errors: ErrorCounts,
    pub errors_total: u64,
    pub reconnects: u64,
    pub in_flight: u64,
    pub bytes: u64,
    pub body_bytes: u64,
    pub error_bytes: u64,
    pub bytes_per_sec: f64,
    pub body_bytes_per_sec: f64,
    pub connections_opened: u64,
    pub tls_full_handshakes: u64,
    pub tls_resumptions: u64,
    pub latency_us: Latency,
    pub error_latency_us: Latency,
    pub client_cpu: ClientCpu,
    pub classes: Vec<ClassResult>,
    pub per_second: Vec<SecondResult>,
    /// Seconds at the start over which users started, not counted.
    pub ramp_up_s: f64,
    /// Virtual users that got at least one response.
    pub users_arrived: u64,
    /// Virtual users still waiting to connect when the run ended.
    pub users_waiting: u64,
    /// Requests by HTTP version and connection kind next to the shares
    /// the flags configure (as in results.json's mixes).
    pub request_kinds: RequestKinds,
    /// What benchlab warned about (also printed on stderr).
    pub warnings: Vec<String>,
}

/// Errors by kind with every canonical kind present (zeros included), in
/// DESIGN.md's order, so consumers never meet a missing key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ErrorCounts(pub [u64; ErrorKind::COUNT]);

impl ErrorCounts {
    pub fn get(&self, kind: ErrorKind) -> u64 {
        self.0[kind as usize]
    }

    /// Non-zero kinds, in order.
    pub fn nonzero(&self) -> impl Iterator<Item = (ErrorKind, u64)> + '_ {
        ErrorKind::ALL
            .iter()
            .map(|k| (*k, self.get(*k)))
            .filter(|(_, n)| *n > 0)
    }
}

impl Serialize for ErrorCounts {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(ErrorKind::COUNT))?;
        for k in ErrorKind::ALL {
            m.serialize_entry(k.name(), &self.get(k))?;
        }
        m.end()
    }
}

fn errors_map(c: &Counters) -> ErrorCounts {
    ErrorCounts(c.errors)
}

fn rate(n: u64, secs: f64) -> f64 {
    if secs > 0.0 {
        ((n as f64 / secs) * 10.0).round() / 10.0
    } else {
        0.0
    }
}

impl HttpResult {
    pub fn new(
        plan: &ClientPlan,
        report: &ClientReport,
        os_threads: usize,
        cpu0: (Duration, Duration),
        cpu1: (Duration, Duration),
        wall: Duration,
    ) -> HttpResult {
        let total: ClassStats = report.stats.total();
        let c = &total.counters;
        let secs = match plan.stop {
            // The counted window starts after the ramp-up.
            Stop::After(d) => report.elapsed.min(d).saturating_sub(plan.window.0).as_secs_f64(),
            Stop::Requests(_) => report.elapsed.as_secs_f64(),
        };
        let user = cpu1.0.saturating_sub(cpu0.0).as_secs_f64();
        let system = cpu1.1.saturating_sub(cpu0.1).as_secs_f64();
        let cores = os_threads.min(sys::usable_cpus()).max(1);
        let utilisation = if wall.is_zero() {
            0.0
        } else {
            (user + system) / (wall.as_secs_f64() * cores as f64)
        };
        let done = c.requests + c.errors_total();
        let shares = plan.connection.request_shares(&report.stats.conn.requests_by_kind);
        let mut warnings: Vec<String> = share_warning(
            &shares,
            "--requests-per-connection N (1 makes request shares the configured ones)",
        )
        .into_iter()
        .collect();
        warnings.extend(arrival_warning(
            report.users_waiting,
            plan.virtual_users as u64,
            "use --ramp-up, or fewer --threads",
        ));
        let classes = plan
            .classes
            .iter()
            .zip(report.stats.classes.iter())
            .map(|(p, s)| ClassResult {
                name: p.name.clone(),
                requests: s.counters.requests,
                requests_per_sec: rate(s.counters.requests, secs),
                errors: errors_map(&s.counters),
                errors_total: s.counters.errors_total(),
                bytes: s.counters.bytes,
                body_bytes: s.counters.body_bytes,
                error_bytes: s.counters.error_bytes,
                latency_us: LatencySummary::of(&s.latency).into(),
            })
            .collect();
        let per_second = report
            .seconds
            .iter()
            .map(|s| SecondResult {
                second: s.second + 1,
                requests: s.counters.requests,
                errors: s.counters.errors_total(),
                bytes: s.counters.bytes,
                body_bytes: s.counters.body_bytes,
                connections_opened: s.conn.connections_opened,
                latency_p50_us: s.latency.p50,
                latency_p99_us: s.latency.p99,
            })
            .collect();
        HttpResult {
            schema: "benchlab.http/1",
            benchlab_version: env!("CARGO_PKG_VERSION"),
            urls: plan.urls.iter().map(|u| u.target.url.clone()).collect(),
            threads: plan.virtual_users,
            os_threads,
            duration_s: (secs * 1000.0).round() / 1000.0,
            requests: c.requests,
            requests_per_sec: rate(c.requests, secs),
            errors: errors_map(c),
            errors_total: c.errors_total(),
            reconnects: report.stats.conn.reconnects,
            in_flight: report.in_flight,
            bytes: c.bytes,
            body_bytes: c.body_bytes,
            error_bytes: c.error_bytes,
            bytes_per_sec: rate(c.bytes, secs),
            body_bytes_per_sec: rate(c.body_bytes, secs),
            connections_opened: report.stats.conn.connections_opened,
            tls_full_handshakes: report.stats.conn.tls_full_handshakes,
            tls_resumptions: report.stats.conn.tls_resumptions,
            latency_us: LatencySummary::of(&total.latency).into(),
            error_latency_us: LatencySummary::of(&total.error_latency).into(),
            client_cpu: ClientCpu {
                user_s: (user * 1000.0).round() / 1000.0,
                system_s: (system * 1000.0).round() / 1000.0,
                cores,
                utilisation: (utilisation * 1000.0).round() / 1000.0,
                us_per_request: if done == 0 {
                    0.0
                } else {
                    ((user + system) * 1e6 / done as f64 * 100.0).round() / 100.0
                },
                client_bound: utilisation > 0.9,
            },
            classes,
            per_second,
            ramp_up_s: plan.ramp_up.as_secs_f64(),
            users_arrived: report.users_arrived,
            users_waiting: report.users_waiting,
            request_kinds: request_kinds(&shares),
            warnings,
        }
    }
}

/// `1234567` → `1,234,567` (one formatter for every summary benchlab prints).
pub use benchlab_logs::thousands;

/// One line saying what the run will do.
pub fn describe(plan: &ClientPlan, mode: HttpMode) -> String {
    let c = plan.connection;
    let conn = match mode {
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
        Some((a, b)) if a == b => format!(", {a} requests per connection"),
        Some((a, b)) => format!(", {a}..{b} requests per connection"),
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
    format!(
        "benchlab http: {} URL(s), {} threads (virtual users) on {} OS thread(s), {conn}{per_conn}, {stop}",
        plan.urls.len(),
        plan.virtual_users,
        plan.os_threads.min(plan.virtual_users as usize)
    )
}

/// The human summary.
pub fn human(r: &HttpResult) -> String {
    let mut o = String::new();
    let mb = |b: f64| b / 1e6;
    let _ = writeln!(
        o,
        "  requests     {:>14}  {:>12} req/s  in {:.2} s",
        thousands(r.requests),
        format!("{:.1}", r.requests_per_sec),
        r.duration_s
    );
    let _ = writeln!(
        o,
        "  throughput   {:>11.2} MB/s  ({:.1} Mbit/s); bodies {:.2} MB/s",
        mb(r.bytes_per_sec),
        r.bytes_per_sec * 8.0 / 1e6,
        mb(r.body_bytes_per_sec)
    );
    let l = &r.latency_us;
    let _ = writeln!(
        o,
        "  latency µs   mean {:.1}  p50 {}  p90 {}  p99 {}  p99.9 {}  max {}",
        l.mean,
        thousands(l.p50),
        thousands(l.p90),
        thousands(l.p99),
        thousands(l.p999),
        thousands(l.max)
    );
    if r.errors_total == 0 {
        let _ = writeln!(o, "  errors       0");
    } else {
        let kinds: Vec<String> = r
            .errors
            .nonzero()
            .map(|(k, n)| format!("{k} {}", thousands(n)))
            .collect();
        let _ = writeln!(
            o,
            "  errors       {}  ({}); {} bytes received for them",
            thousands(r.errors_total),
            kinds.join(", "),
            thousands(r.error_bytes)
        );
        if r.errors.get(ErrorKind::WrongBody) > 0 {
            let _ = writeln!(
                o,
                "               wrong_body: size/checksum differs from the preflight response; pages whose size varies need --validate status"
            );
        }
    }
    let kinds: Vec<String> = ConnectionKind::ALL
        .iter()
        .filter_map(|k| r.request_kinds.get(k.name()).map(|f| (k, f)))
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
    let _ = writeln!(o, "  HTTP         {}", kinds.join("; "));
    if r.users_waiting > 0 {
        let _ = writeln!(
            o,
            "  users        {} of {} got a response; {} still waiting to connect at the end",
            thousands(r.users_arrived),
            thousands(r.threads as u64),
            thousands(r.users_waiting)
        );
    }
    let _ = writeln!(
        o,
        "  connections  {} opened, {} reconnects after idle closes, {} requests in flight at the end",
        thousands(r.connections_opened),
        thousands(r.reconnects),
        thousands(r.in_flight)
    );
    if r.tls_full_handshakes + r.tls_resumptions > 0 {
        let _ = writeln!(
            o,
            "  TLS          {} full handshakes, {} resumptions",
            thousands(r.tls_full_handshakes),
            thousands(r.tls_resumptions)
        );
    }
    let cpu = &r.client_cpu;
    let _ = writeln!(
        o,
        "  client CPU   {:.2} s user + {:.2} s system = {:.0} % of {} core(s), {:.2} µs per request{}",
        cpu.user_s,
        cpu.system_s,
        cpu.utilisation * 100.0,
        cpu.cores,
        cpu.us_per_request,
        if cpu.client_bound {
            "\n  CLIENT-BOUND: the load generator was saturated, so this measured benchlab, not the server; \
             use more --os-threads or cores, or more client machines"
        } else {
            ""
        }
    );
    if r.classes.len() > 1 {
        let _ = writeln!(o, "  per URL:");
        for c in &r.classes {
            let _ = writeln!(
                o,
                "    {:>10} req  {:>10.1} req/s  p50 {:>7} µs  p99 {:>7} µs  errors {}  {}",
                thousands(c.requests),
                c.requests_per_sec,
                thousands(c.latency_us.p50),
                thousands(c.latency_us.p99),
                thousands(c.errors_total),
                c.name
            );
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_groups() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1234567), "1,234,567");
    }
}
