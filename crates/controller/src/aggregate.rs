//! A mix's result from how its clients ended: totals, classes, histograms,
//! the generator's CPU, and the monitored hosts' seconds with the verdict.

use crate::drive::*;
use crate::measure::{request_kinds, FiguresOf, OpenLoopOf};
use crate::phase::*;
use crate::plan::ClientPlan;
use benchlab_engine::{share_warning, ClassPlan, ClassStats, ClientReport, ConnCounters, ConnectionPolicy, Stats};
use benchlab_model::Mix;
use benchlab_results::*;
use std::time::Duration;

/// The generator's CPU over a mix: the CPU time of every client's worker
/// threads (each measured over its own life, which is the mix) plus the
/// controller thread's, over the mix's wall time (start to the last worker's
/// stop). Thread times, not the process's: `benchlab demo` runs the server
/// under test in this same process, and its CPU is not the generator's.
pub(crate) fn generator_cpu(reports: &[&ClientReport], controller: (Duration, Duration), cores: usize) -> ClientCpu {
    let (mut user, mut system) = controller;
    let mut completed = 0;
    for r in reports {
        user += r.cpu_user;
        system += r.cpu_system;
        // Every completion of the mix, ramps included, as the CPU is.
        completed += r
            .seconds
            .iter()
            .map(|s| s.counters.requests + s.counters.errors_total())
            .sum::<u64>();
    }
    let wall = reports.iter().map(|r| r.elapsed).max().unwrap_or_default();
    ClientCpu::measure(user, system, wall, cores, completed)
}

/// Whether a mix measured less than its window: its clients stopped early
/// (every one lost, the controller stopped or suspended), or seconds of
/// the window never came from any client. Such a mix is `partial`: its
/// figures hold, over the shorter time, but it is not the whole mix. A
/// tenth of a second is the slack of a client's own stop.
pub(crate) fn window_cut(window_s: f64, (from, until): (Duration, Duration), seconds: &[SecondResult]) -> bool {
    let planned = until.saturating_sub(from);
    let whole_seconds = (0..=until.as_secs() as u32)
        .filter(|&s| in_window(s, (from, until)))
        .count();
    let in_window = seconds.iter().filter(|s| s.in_window).count();
    window_s + 0.1 < planned.as_secs_f64() || in_window < whole_seconds
}

/// A mix's result from how its clients ended (`plans`: theirs, in client
/// order). A lost client keeps its number and its row, marked out of the
/// mix; its figures are those of the seconds it sent inside the window,
/// and none of them is in the mix's totals, classes or histograms.
pub(crate) fn mix_result(
    mix: &Mix,
    phase_name: &str,
    phase: &PhasePlan,
    plans: &[ClientPlan],
    driven: &Driven,
) -> MixResult {
    let p = &mix.params;
    let (from, until) = mix.window();
    let reports: Vec<&ClientReport> = driven.reports().collect();
    // The window measured: to its end, or to the stop of a partial mix.
    let elapsed = reports.iter().map(|r| r.elapsed).max().unwrap_or_default();
    let window_s = (until.min(elapsed).saturating_sub(from)).as_secs_f64();
    let partial = driven.partial || window_cut(window_s, (from, until), &driven.seconds);
    let Folded {
        merged,
        client_data,
        in_flight,
        cpu,
        mut warnings,
    } = fold_clients(driven, plans, phase.classes.len(), window_s);
    let total: ClassStats = merged.total();
    let done_all = total.counters.requests + total.counters.errors_total();
    let classes = merged
        .classes
        .iter()
        .zip(phase.class_info.iter())
        .map(|(s, (name, kind, spi, percent, _))| {
            let done = s.counters.requests + s.counters.errors_total();
            ClassResult {
                name: name.clone(),
                kind: kind.name().to_string(),
                spi: spi.clone(),
                percent: *percent,
                observed_percent: if done_all == 0 {
                    0.0
                } else {
                    round(done as f64 * 100.0 / done_all as f64, 3)
                },
                figures: Figures::of(s, window_s),
            }
        })
        .collect();
    // Per-second series: merged as the clients sent their seconds (a lost
    // client's up to its loss), percentiles from the merged histograms.
    let per_second = driven.seconds.clone();
    let histograms = histograms(&merged, &phase.classes);
    let conn: ConnCounters = merged.conn;
    let policy = ConnectionPolicy {
        http10_percent: p.http10_percent,
        http10_keepalive: p.http10_keepalive,
        persistent_percent: p.persistent_percent,
        requests_per_connection: p.requests_per_connection,
    };
    let shares = policy.request_shares(&conn.requests_by_kind);
    let users_arrived = reports.iter().map(|r| r.users_arrived).sum();
    let users_waiting = reports.iter().map(|r| r.users_waiting).sum();
    warnings.extend(share_warning(&shares, "the mix's `requests_per_connection`"));
    warnings.extend(preconnect_warning(p.preconnect, conn.preconnected, mix.threads()));
    warnings.extend(arrival_warning(
        users_waiting,
        mix.threads(),
        "start users over a longer ramp-up",
    ));
    let peaks: Vec<u64> = reports.iter().map(|r| r.peak_connections).collect();
    let open_loop = p
        .rate
        .map(|rate| OpenLoopResult::measure(rate, p.arrival.name(), p.max_in_flight, &conn, &total, window_s, &peaks));
    warnings.extend(open_loop.as_ref().and_then(|o| o.late_warning("rate", "max_in_flight")));
    MixResult {
        mix: mix.number,
        phase: phase_name.to_string(),
        clients: mix.clients,
        clients_participating: client_data.iter().filter(|c| !c.taken_out).count() as u32,
        threads: mix.threads(),
        partial,
        window_s: round(window_s, 3),
        figures: Figures::of(&total, window_s),
        reconnects: conn.reconnects,
        in_flight,
        connections_opened: conn.connections_opened,
        tls_full_handshakes: conn.tls_full_handshakes,
        tls_resumptions: conn.tls_resumptions,
        client_cpu_s: round(cpu.as_secs_f64(), 3),
        client_cpu: ClientCpu::default(),
        http2: (p.http2 || phase.h2_classes != 0).then(|| benchlab_results::MixHttp2 {
            connections: {
                let h2 = benchlab_engine::H2Plan {
                    classes: if p.http2 { 0 } else { phase.h2_classes },
                    ..Default::default()
                };
                let users = h2.users(&phase.urls, mix.slots_per_client());
                u64::from(users.div_ceil(p.streams_per_connection)) * u64::from(mix.clients)
            },
            classes: phase
                .classes
                .iter()
                .enumerate()
                .filter(|(i, _)| p.http2 || (*i < 64 && phase.h2_classes & (1 << i) != 0))
                .map(|(_, c)| c.name.clone())
                .collect(),
            streams_per_connection: p.streams_per_connection,
            streams_opened: conn.h2_streams,
            goaways: conn.h2_goaways,
            connection_frame_bytes: conn.h2_connection_bytes,
            stream_resets: stream_resets(&conn),
            quic: quic_figures(p.http3 || (!p.http2 && phase.h3_classes != 0), &conn),
            h3_classes: if p.http2 || phase.h3_classes == phase.h2_classes {
                Vec::new()
            } else {
                phase
                    .classes
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| *i < 64 && phase.h3_classes & (1 << i) != 0)
                    .map(|(_, c)| c.name.clone())
                    .collect()
            },
        }),
        params: ParamsResult {
            delay_s: p.delay.as_secs_f64(),
            ramp_up_s: p.ramp_up.as_secs_f64(),
            ramp_down_s: p.ramp_down.as_secs_f64(),
            length_s: p.length.as_secs_f64(),
            think_time_s: p.think_time.as_secs_f64(),
            threads_per_client: p.threads_per_client,
            receive_buffer: p.receive_buffer,
            http10_percent: p.http10_percent,
            http10_keepalive: p.http10_keepalive,
            persistent_percent: p.persistent_percent,
            requests_per_connection: p.requests_per_connection.map(|(a, b)| [a, b]),
            timeout_s: p.timeout.as_secs_f64(),
            workload: p.workload.clone(),
            target: p.target.clone(),
            preconnect: p.preconnect,
        },
        client_data,
        classes,
        per_second,
        histograms,
        users_arrived,
        users_waiting,
        request_kinds: request_kinds(&shares),
        warnings,
        open_loop,
        search: None,
        repeats: None,
        resources: None,
        files: None,
        http_command: None,
        flows: phase.list.flow.is_some().then(|| benchlab_results::MixFlows {
            completed: conn.flows_completed,
            completed_per_sec: crate::measure::per_sec(conn.flows_completed, window_s),
            abandoned: conn.flows_abandoned,
            check_failures: reports.iter().flat_map(|r| &r.check_failures).fold(
                std::collections::BTreeMap::new(),
                |mut first, (step, why)| {
                    first.entry(step.clone()).or_insert_with(|| why.clone());
                    first
                },
            ),
        }),
        // Measured against the mix's start, which the caller knows.
        start_spread: None,
    }
}

/// The clients of a mix folded once, the one merge of their reports: the
/// finished clients' counts and histograms added, a row per client (a lost
/// one keeps its number and its row, marked out of the mix, with the
/// figures of the seconds it sent inside the window; none of them is in
/// the merged counts).
pub(crate) struct Folded {
    pub merged: Stats,
    pub client_data: Vec<ClientResult>,
    pub in_flight: u64,
    /// The clients' worker threads' CPU, user + system.
    pub cpu: Duration,
    /// A line per lost client.
    pub warnings: Vec<String>,
}

/// Folds `driven`'s clients (`plans`: theirs, in client order; `classes`:
/// the number of classes; `window_s`: the seconds measured, for rates).
pub(crate) fn fold_clients(driven: &Driven, plans: &[ClientPlan], classes: usize, window_s: f64) -> Folded {
    let mut merged = Stats::new(classes);
    let mut client_data = Vec::with_capacity(driven.clients.len());
    let mut in_flight = 0;
    let mut cpu = Duration::ZERO;
    let mut warnings: Vec<String> = Vec::new();
    for (i, end) in driven.clients.iter().enumerate() {
        let plan = plans.get(i);
        let address = plan
            .and_then(|p| p.settings.source_addresses.first())
            .map(|a| a.to_string());
        let delay_s = round(plan.map_or(0.0, |p| p.settings.start_delay.as_secs_f64()), 3);
        let r = match end {
            ClientEnd::Finished(r) => r,
            ClientEnd::Lost {
                why,
                window,
                conn,
                seconds,
            } => {
                warnings.push(format!(
                    "client {} was lost ({why}): it is out of the mix; its figures, from the {} it sent inside \
                     the window, are kept apart in its own row and are not in the mix's",
                    i + 1,
                    benchlab_format::plural(u64::from(*seconds), "second", "seconds")
                ));
                client_data.push(ClientResult {
                    client: i as u32 + 1,
                    address,
                    figures: Figures::of(window, f64::from(*seconds)),
                    connections_opened: conn.connections_opened,
                    in_flight: 0,
                    delay_s,
                    taken_out: true,
                    lost: Some(why.clone()),
                    cpu_s: 0.0,
                    loop_lag_max_us: 0,
                    seconds: Vec::new(),
                });
                continue;
            }
        };
        merged.add(&r.stats);
        in_flight += r.in_flight;
        cpu += r.cpu_user + r.cpu_system;
        let t = r.stats.total();
        let connect_only = t.counters.error(benchlab_engine::ErrorKind::ConnectRefused)
            + t.counters.error(benchlab_engine::ErrorKind::ConnectTimeout);
        let taken_out = t.counters.requests == 0 && connect_only > 0 && connect_only == t.counters.errors_total();
        client_data.push(ClientResult {
            client: i as u32 + 1,
            address,
            figures: Figures::of(&t, window_s),
            connections_opened: r.stats.conn.connections_opened,
            in_flight: r.in_flight,
            delay_s,
            taken_out,
            lost: None,
            cpu_s: round((r.cpu_user + r.cpu_system).as_secs_f64(), 3),
            loop_lag_max_us: r.seconds.iter().map(|s| s.load.loop_lag_max_us).max().unwrap_or(0),
            seconds: r
                .seconds
                .iter()
                .map(|s| ClientSecond {
                    second: s.second + 1,
                    cpu_user_s: round(s.load.cpu_user_us as f64 / 1e6, 4),
                    cpu_system_s: round(s.load.cpu_system_us as f64 / 1e6, 4),
                    loop_lag_max_us: s.load.loop_lag_max_us,
                })
                .collect(),
        });
    }
    Folded {
        merged,
        client_data,
        in_flight,
        cpu,
        warnings,
    }
}

/// A mix's histograms from its clients' merged counts (`classes`: the
/// phase's, in order). The as-sent ones exist only where the clients kept
/// them (an open loop).
pub(crate) fn histograms(merged: &Stats, classes: &[ClassPlan]) -> Histograms {
    let total = merged.total();
    let per_class = |h: fn(&ClassStats) -> Option<&hdrhistogram::Histogram<u64>>| {
        merged
            .classes
            .iter()
            .zip(classes)
            .filter_map(|(s, c)| h(s).map(|h| (c.name.clone(), histogram_b64(h))))
            .collect()
    };
    Histograms {
        latency_us: histogram_b64(&total.latency),
        error_latency_us: histogram_b64(&total.error_latency),
        classes: per_class(|s| Some(&s.latency)),
        latency_as_sent_us: total.latency_as_sent.as_ref().map(histogram_b64),
        classes_as_sent: per_class(|s| s.latency_as_sent.as_ref()),
    }
}

/// Says when some virtual users were still waiting to connect at the end:
/// the engine lets a few hundred users per client connect at once, each
/// holding its slot until its first response, so the target accepted new
/// connections slower than the users came and the figures are those of
/// fewer users than asked for. `remedy` is the caller's own advice.
pub fn arrival_warning(waiting: u64, users: u64, remedy: &str) -> Option<String> {
    (waiting > 0).then(|| {
        format!(
            "{} of {} virtual users were still waiting to connect when the run ended: the target \
             accepted new connections slower than they arrived (a few hundred per client connect at once, each \
             until its first response), so the figures are those of fewer users. The target's accept loop is \
             the limit (for nginx: `multi_accept on`, more workers); or {remedy}",
            benchlab_format::thousands(waiting),
            benchlab_format::thousands(users)
        )
    })
}

/// `preconnect` asked for each user's connection before the start; said
/// when fewer than all were up by then (the rest connected at their first
/// request, as without it: docs/counting.md, "Start spread").
pub fn preconnect_warning(asked: bool, preconnected: u64, users: u64) -> Option<String> {
    (asked && preconnected < users).then(|| {
        format!(
            "preconnect: {} of {} virtual users' connections were up by the start; the others connected at \
             their first request (a connect failed, or the target took longer than the start's lead to accept)",
            benchlab_format::thousands(preconnected),
            benchlab_format::thousands(users)
        )
    })
}

/// HTTP/2 streams the servers reset, by error code name (the codes that
/// came, only), as a mix's `http2.stream_resets` says them.
fn stream_resets(conn: &benchlab_engine::ConnCounters) -> std::collections::BTreeMap<String, u64> {
    let h3 = conn.quic.h3_reset_codes.iter().enumerate().filter(|(_, n)| **n > 0);
    conn.stream_reset_codes
        .iter()
        .enumerate()
        .filter(|(_, n)| **n > 0)
        .map(|(code, n)| (benchlab_results::h2_code_name(code).to_string(), *n))
        .chain(h3.map(|(i, n)| (benchlab_results::h3_code_name(i).to_string(), *n)))
        .collect()
}

/// HTTP/3: the mix's QUIC figures (`h3`: it ran over QUIC).
fn quic_figures(h3: bool, conn: &benchlab_engine::ConnCounters) -> Option<benchlab_results::MixQuic> {
    if !h3 {
        return None;
    }
    let q = &conn.quic;
    let mut closes = std::collections::BTreeMap::new();
    for (i, n) in q.transport_close_codes.iter().enumerate().filter(|(_, n)| **n > 0) {
        *closes
            .entry(benchlab_results::quic_code_name(i).to_string())
            .or_insert(0) += n;
    }
    for (i, n) in q.h3_close_codes.iter().enumerate().filter(|(_, n)| **n > 0) {
        *closes.entry(benchlab_results::h3_code_name(i).to_string()).or_insert(0) += n;
    }
    Some(benchlab_results::MixQuic {
        datagrams_sent: q.datagrams_sent,
        datagrams_received: q.datagrams_received,
        udp_bytes_sent: q.udp_bytes_sent,
        udp_bytes_received: q.udp_bytes_received,
        packets_lost: q.packets_lost,
        bytes_lost: q.bytes_lost,
        congestion_events: q.congestion_events,
        handshakes: q.handshakes,
        handshake_mean_us: if q.handshakes == 0 {
            0.0
        } else {
            round(q.handshake_us as f64 / q.handshakes as f64, 1)
        },
        connection_closes: closes,
        gso_sends: q.gso_sends,
        gro_reads: q.gro_reads,
        zero_rtt_accepted: q.zero_rtt_accepted,
        zero_rtt_rejected: q.zero_rtt_rejected,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use benchlab_engine::new_latency_histogram;

    fn decode(b64: &str) -> hdrhistogram::Histogram<u64> {
        use base64::Engine as _;
        let bytes = base64::engine::general_purpose::STANDARD.decode(b64).expect("base64");
        hdrhistogram::serialization::Deserializer::new()
            .deserialize(&mut bytes.as_slice())
            .expect("a V2 histogram")
    }

    /// One client's open-loop counts of two classes: as-sent latencies
    /// `values` in class 0 and `values × 10` in class 1.
    fn client(values: std::ops::RangeInclusive<u64>) -> Stats {
        let mut s = Stats::new(2);
        for (k, class) in s.classes.iter_mut().enumerate() {
            let mut h = new_latency_histogram();
            for v in values.clone() {
                h.record(v * 10u64.pow(k as u32)).expect("in range");
                class.latency.record(v * 1000).expect("in range");
            }
            class.latency_as_sent = Some(h);
        }
        s
    }

    #[test]
    fn the_as_sent_histograms_merge_clients_exactly() {
        let classes = [ClassPlan { name: "a".into() }, ClassPlan { name: "b".into() }];
        // Merged as mix_result merges its clients' reports.
        let mut merged = Stats::new(2);
        merged.add(&client(1..=1000));
        merged.add(&client(3000..=3500));
        let h = histograms(&merged, &classes);
        let all = decode(h.latency_as_sent_us.as_deref().expect("an open loop keeps it"));
        let mut want = new_latency_histogram();
        for v in (1..=1000).chain(3000..=3500) {
            want.record(v).expect("in range");
            want.record(v * 10).expect("in range");
        }
        assert_eq!(all.len(), 2 * 1501);
        assert_eq!(
            all, want,
            "the mix's as-sent histogram is every client's, bucket by bucket"
        );
        assert_eq!(h.classes_as_sent.keys().collect::<Vec<_>>(), ["a", "b"]);
        let b = decode(&h.classes_as_sent["b"]);
        assert_eq!((b.len(), b.min(), b.max()), (1501, 10, b.highest_equivalent(35_000)));
        // The corrected one is a different histogram.
        assert_eq!(decode(&h.latency_us).min(), 1000);
        // A closed loop keeps no as-sent histogram: none is written.
        let mut closed = Stats::new(2);
        closed.classes[0].latency.record(7).expect("in range");
        let h = histograms(&closed, &classes);
        assert!(h.latency_as_sent_us.is_none() && h.classes_as_sent.is_empty());
        let json = serde_json::to_value(&h).expect("JSON");
        assert!(json.get("latency_as_sent_us").is_none() && json.get("classes_as_sent").is_none());
    }
}

/// The controller driven through fake clients: no sockets, no threads,
/// every number known in advance.
#[cfg(test)]
mod fake_clients {
    use super::*;
    use crate::driver::ClientLost;
    use crate::driver::{ClientDriver, ClientPool, Driver, DriverError, WebClient};
    use crate::options::ControllerError;
    use crate::plan::{ClientPlan, UrlList};
    use crate::verdict::mix_resources;
    use benchlab_engine::{new_latency_histogram, Counters, ErrorKind, LatencySummary};
    use benchlab_engine::{ClassPlan, ConnectionPolicy, Load, Stop, TlsOptions};
    use benchlab_engine::{Second, Stats};
    use benchlab_model::MixParams;
    use benchlab_model::{ClassKind, Mix};
    use benchlab_monitor::MonitorSource;
    use benchlab_results::resources::*;
    use std::collections::VecDeque;
    use std::net::{IpAddr, Ipv4Addr};
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;
    use std::sync::Mutex;
    use std::time::{SystemTime, UNIX_EPOCH};

    /// One completed second: `requests` successes with the given latencies
    /// (µs), `errors` connection refusals.
    fn second(n: u32, latencies: &[u64], refused: u64) -> Second {
        let mut h = new_latency_histogram();
        for &v in latencies {
            h.record(v).expect("in range");
        }
        let mut counters = Counters {
            requests: latencies.len() as u64,
            bytes: 100 * latencies.len() as u64,
            ..Counters::default()
        };
        counters.errors[ErrorKind::ConnectRefused as usize] = refused;
        let conn = ConnCounters {
            connections_opened: latencies.len() as u64,
            ..ConnCounters::default()
        };
        Second {
            second: n,
            counters,
            conn,
            latency: LatencySummary::of(&h),
            histogram: Some(h),
            load: Default::default(),
        }
    }

    /// The report of a client that sent `seconds`: its window (1 s to 3 s,
    /// the mix below) summed, as the engine counts it.
    fn report(seconds: &[Second]) -> ClientReport {
        let mut stats = Stats::new(1);
        for s in seconds.iter().filter(|s| in_window(s.second, WINDOW)) {
            stats.classes[0].counters.add(&s.counters);
            stats.classes[0]
                .latency
                .add(s.histogram.as_ref().expect("a histogram"))
                .expect("same bounds");
            stats.conn.add(&s.conn);
        }
        ClientReport {
            stats,
            seconds: seconds
                .iter()
                .cloned()
                .map(|s| Second { histogram: None, ..s })
                .collect(),
            in_flight: 0,
            cpu_user: Duration::from_millis(10),
            cpu_system: Duration::from_millis(5),
            elapsed: Duration::from_secs(seconds.len() as u64),
            tls_error: None,
            check_failures: Default::default(),
            users_arrived: 1,
            users_waiting: 0,
            peak_connections: 0,
            h2_settings: None,
            threads_lost: 0,
            first_send_unix_ns: None,
            first_send_uncertainty_ns: 0,
        }
    }

    const WINDOW: (Duration, Duration) = (Duration::from_secs(1), Duration::from_secs(3));

    /// What a fake client will do.
    #[derive(Debug, Clone)]
    struct Script {
        seconds: Vec<Second>,
        /// Lost after its seconds, with this reason.
        lost: Option<&'static str>,
        refuse_start: bool,
    }

    impl Script {
        fn runs(seconds: Vec<Second>) -> Script {
            Script {
                seconds,
                lost: None,
                refuse_start: false,
            }
        }
    }

    #[derive(Debug, Default)]
    struct FakePool {
        scripts: Vec<Script>,
        /// What the drivers were asked, in order: `start 1`, `stop 2` …
        log: Arc<Mutex<Vec<String>>>,
    }

    impl FakePool {
        fn log(&self) -> Vec<String> {
            self.log.lock().expect("log").clone()
        }
    }

    struct FakeDriver {
        client: usize,
        script: Script,
        queue: VecDeque<Second>,
        stopped: bool,
        log: Arc<Mutex<Vec<String>>>,
    }

    impl FakeDriver {
        fn note(&self, what: &str) {
            self.log
                .lock()
                .expect("log")
                .push(format!("{what} {}", self.client + 1));
        }
    }

    impl ClientPool for FakePool {
        fn load_urls(&self, _urls: &Arc<UrlList>) -> Result<(), DriverError> {
            Ok(())
        }

        fn driver(&self, client: usize) -> Box<ClientDriver> {
            let script = self.scripts[client].clone();
            Box::new(FakeDriver {
                client,
                queue: script.seconds.iter().cloned().collect(),
                script,
                stopped: false,
                log: Arc::clone(&self.log),
            })
        }
    }

    impl Driver<WebClient> for FakeDriver {
        fn start(&mut self, _plan: ClientPlan, _start_at: SystemTime) -> Result<(), DriverError> {
            if self.script.refuse_start {
                self.note("refused");
                return Err(DriverError::UnknownUrls("xxh3:0".into()));
            }
            self.note("start");
            Ok(())
        }

        fn stop(&mut self) {
            self.note("stop");
            // A stopped client sends no more seconds.
            self.stopped = true;
            self.queue.clear();
        }

        fn next_second(&mut self, _timeout: Duration) -> Option<Second> {
            self.queue.pop_front()
        }

        fn is_finished(&self) -> bool {
            self.queue.is_empty()
        }

        fn finish(&mut self) -> Result<ClientReport, ClientLost> {
            self.note("finish");
            match self.script.lost {
                Some(why) => Err(ClientLost { why: why.into() }),
                None => {
                    let sent = if self.stopped { 0 } else { self.script.seconds.len() };
                    Ok(report(&self.script.seconds[..sent]))
                }
            }
        }
    }

    fn mix(clients: u32) -> Mix {
        Mix {
            number: 1,
            clients,
            phase: 0,
            params: MixParams {
                delay: Duration::from_millis(500),
                ramp_up: WINDOW.0,
                ramp_down: Duration::from_secs(1),
                length: Duration::from_secs(4),
                think_time: Duration::ZERO,
                threads_per_client: 2,
                rate: None,
                arrival: benchlab_model::Arrival::Constant,
                max_in_flight: 1,
                receive_buffer: 4096,
                http10_percent: 0,
                http10_keepalive: false,
                persistent_percent: 100,
                requests_per_connection: None,
                http2: false,
                http3: false,
                streams_per_connection: 1,
                preconnect: false,
                timeout: Duration::from_secs(5),
                workload: "w".into(),
                target: "http://127.0.0.1:1".into(),
            },
        }
    }

    fn phase() -> PhasePlan {
        let classes = vec![ClassPlan { name: "static".into() }];
        PhasePlan {
            list: Arc::new(UrlList::new(classes.clone(), Vec::new())),
            urls: Arc::new(benchlab_engine::UrlTable::from(Vec::new())),
            classes,
            class_info: vec![("static".into(), ClassKind::Static, None, 100.0, false)],
            h2_classes: 0,
            h3_classes: 0,
            file: None,
        }
    }

    /// Plans with delays 0.1 s × client number, so a row's delay says
    /// which client it is.
    fn plans(n: usize) -> Vec<ClientPlan> {
        let suite_plan = |c: usize| ClientPlan {
            urls: phase().list.id.clone(),
            settings: benchlab_engine::ClientSettings {
                virtual_users: 2,
                load: Load::Closed,
                os_threads: 1,
                stop: Stop::After(Duration::from_secs(4)),
                window: WINDOW,
                start_delay: Duration::from_millis(100 * (c as u64 + 1)),
                think_time: Duration::ZERO,
                ramp_up: Duration::ZERO,
                timeout: Duration::from_secs(5),
                connection: ConnectionPolicy::default(),
                receive_buffer: 4096,
                headers: Vec::new(),
                source_addresses: vec![IpAddr::V4(Ipv4Addr::new(127, 0, 0, c as u8 + 1))],
                tls: TlsOptions::default(),
                seed: c as u64,
                first_user: 0,
                http2: None,
                preconnect: false,
            },
        };
        (0..n).map(suite_plan).collect()
    }

    /// Runs the fake clients through a mix; returns the result and the
    /// seconds the observer saw.
    fn run(pool: &FakePool, stop: bool) -> Result<(MixResult, Vec<SecondResult>), ControllerError> {
        let n = pool.scripts.len();
        let plans = plans(n);
        let mut seen = Vec::new();
        let driven = drive_mix(
            pool,
            &plans,
            WINDOW,
            SystemTime::now(),
            &AtomicBool::new(stop),
            &mut |s, _| seen.push(s.clone()),
        )?;
        Ok((mix_result(&mix(n as u32), "p", &phase(), &plans, &driven), seen))
    }

    fn range(from: u64, to: u64) -> Vec<u64> {
        (from..=to).collect()
    }

    #[test]
    fn seconds_merge_counts_exactly_and_percentiles_over_every_request() {
        // Client 1 is fast (1..100 µs), client 2 slow (1,000..1,099 µs)
        // and half as busy: the slowest client's p50 would be 1,049 µs.
        let fast = |n| second(n, &range(1, 100), 0);
        let slow = |n| second(n, &range(1000, 1049), 0);
        let pool = FakePool {
            scripts: vec![
                Script::runs((0..4).map(fast).collect()),
                Script::runs((0..4).map(slow).collect()),
            ],
            ..FakePool::default()
        };
        let (r, seen) = run(&pool, false).expect("runs");
        assert_eq!(r.per_second, seen, "the result keeps what the observer saw");
        assert_eq!(r.per_second.len(), 4);
        let mut all = new_latency_histogram();
        for v in range(1, 100).into_iter().chain(range(1000, 1049)) {
            all.record(v).expect("in range");
        }
        for (i, s) in r.per_second.iter().enumerate() {
            assert_eq!(s.second, i as u32 + 1);
            assert_eq!(
                (s.requests, s.errors, s.bytes, s.connections_opened),
                (150, 0, 15_000, 150)
            );
            assert_eq!(s.in_window, i == 1 || i == 2, "window 1 s to 3 s");
            // One histogram fed every sample of the second.
            assert_eq!(s.latency_p50_us, all.value_at_quantile(0.50));
            assert_eq!(s.latency_p99_us, all.value_at_quantile(0.99));
        }
        assert_eq!(
            r.per_second[0].latency_p50_us, 75,
            "the 75th of 150 samples, not the slow client's 1,024"
        );
        assert_eq!(r.per_second[0].latency_p99_us, 1048);
        // The window's totals: seconds 2 and 3 of both clients.
        assert_eq!(r.figures.requests, 300);
        assert_eq!(r.window_s, 2.0);
        assert_eq!(r.figures.requests_per_sec, 150.0);
        assert_eq!(r.figures.latency_us.p99, all.value_at_quantile(0.99));
        assert_eq!(r.clients_participating, 2);
        assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    }

    /// `benchlab http`'s mix is the fold a suite's mix is: the same
    /// totals, series and histograms from the same clients, its rows only
    /// with agents (in-process it has none).
    #[test]
    fn http_mix_folds_its_clients_as_a_suite_mix_does() {
        let pool = FakePool {
            scripts: vec![
                Script::runs((0..4).map(|n| second(n, &range(1, 100), 0)).collect()),
                Script::runs((0..4).map(|n| second(n, &range(1000, 1049), 1)).collect()),
            ],
            ..FakePool::default()
        };
        let plans = plans(2);
        let driven = drive_mix(
            &pool,
            &plans,
            WINDOW,
            SystemTime::now(),
            &AtomicBool::new(false),
            &mut |_, _| {},
        )
        .expect("runs");
        let suite = mix_result(&mix(2), "p", &phase(), &plans, &driven);
        let mut engine = plans[0].to_engine(&crate::plan::ResolvedList {
            urls: Arc::new(benchlab_engine::UrlTable::from(Vec::new())),
            classes: phase().classes,
            requests: Vec::new(),
            flow: None,
        });
        // The run's plan: both clients' users, counted after a 1 s ramp-up.
        engine.virtual_users = 4;
        engine.stop = Stop::After(WINDOW.1);
        let run = |agents| {
            http_mix(&HttpRun {
                number: 1,
                plan: &engine,
                clients: &plans,
                driven: &driven,
                partial: false,
                client_cpu: ClientCpu::default(),
                os_threads: 1,
                agents,
            })
        };
        let h = run(Some(&[]));
        assert_eq!(h.window_s, suite.window_s);
        assert_eq!(h.figures, suite.figures);
        assert_eq!((h.figures.requests, h.figures.errors_total), (300, 2));
        assert_eq!(h.per_second, suite.per_second);
        assert_eq!(h.histograms, suite.histograms);
        assert_eq!(h.client_data, suite.client_data);
        assert_eq!((h.phase.as_str(), h.threads, h.clients), ("http", 4, 2));
        assert_eq!(h.classes[0].figures, suite.classes[0].figures);
        let cmd = h.http_command.as_ref().expect("http_command");
        assert_eq!(cmd.mode, "closed");
        assert_eq!(cmd.seconds_body_bytes.len(), h.per_second.len());
        assert_eq!(cmd.clients.iter().map(|c| c.threads).collect::<Vec<_>>(), [2, 2]);
        // In this process: one client's run has no rows.
        let local = run(None);
        assert!(local.client_data.is_empty() && local.http_command.expect("command").clients.is_empty());
        assert_eq!(local.figures, suite.figures);
    }

    #[test]
    fn a_second_waits_for_every_running_client_but_not_a_finished_one() {
        let mut m = SecondMerger::new(2, WINDOW);
        m.add(0, second(0, &[10], 0));
        m.add(0, second(1, &[10], 0));
        assert!(m.release().is_empty(), "client 2 has not sent second 1 yet");
        m.add(1, second(0, &[30], 0));
        let got: Vec<(u32, u64, u64)> = m
            .release()
            .iter()
            .map(|s| (s.second, s.requests, s.latency_p99_us))
            .collect();
        assert_eq!(got, [(1, 2, 30)]);
        m.finished(1);
        let got: Vec<(u32, u64)> = m.release().iter().map(|s| (s.second, s.requests)).collect();
        assert_eq!(got, [(2, 1)], "a finished client holds back no second");
        assert!(m.release().is_empty(), "each second is handed out once");
    }

    #[test]
    fn the_live_metrics_get_each_seconds_merged_histogram_and_in_flight_requests() {
        let mut m = SecondMerger::new(2, WINDOW);
        let busy = |n, latencies: &[u64], in_flight| {
            let mut s = second(n, latencies, 0);
            s.load.in_flight = in_flight;
            s
        };
        m.add(0, busy(0, &[10, 20], 3));
        m.add(1, busy(0, &[30_000], 5));
        let mut seen = Vec::new();
        m.release_with(&mut |s, merged| {
            let h = merged.latency.expect("both clients sent their histogram");
            seen.push((s.requests, h.len(), h.max(), merged.in_flight));
        });
        // Every client's requests, and the in-flight ones summed.
        assert_eq!(seen, [(3, 3, h_max(30_000), 8)]);
        // A client that sent only its percentiles: no histogram, which
        // would lack its requests.
        m.add(0, busy(1, &[10], 1));
        m.add(
            1,
            Second {
                histogram: None,
                ..busy(1, &[10], 1)
            },
        );
        let mut partial = Vec::new();
        m.release_with(&mut |s, merged| partial.push((s.requests, merged.latency.is_some(), merged.in_flight)));
        assert_eq!(partial, [(2, false, 2)]);
    }

    /// HDR's highest value equivalent to `us` (the engine's histograms).
    fn h_max(us: u64) -> u64 {
        new_latency_histogram().highest_equivalent(us)
    }

    #[test]
    fn a_mix_keeps_its_windows_monitored_seconds_and_the_clients_own_load() {
        let loaded = |n: u32, cpu_us: u64, lag_us: u64| {
            let mut s = second(n, &[100; 10], 0);
            s.load = benchlab_engine::LoopLoad {
                cpu_user_us: cpu_us,
                cpu_system_us: cpu_us / 2,
                loop_lag_max_us: lag_us,
                ..Default::default()
            };
            s
        };
        let pool = FakePool {
            scripts: vec![
                Script::runs((0..4).map(|n| loaded(n, 1000, 10 * u64::from(n))).collect()),
                Script::runs((0..4).map(|n| loaded(n, 3000, 5)).collect()),
            ],
            ..FakePool::default()
        };
        let (r, _) = run(&pool, false).expect("runs");
        // The clients' own CPU adds up per second, the lag is the worst.
        let cpu: Vec<(f64, f64, u64)> = r
            .per_second
            .iter()
            .map(|s| (s.client_cpu_user_s, s.client_cpu_system_s, s.loop_lag_max_us))
            .collect();
        assert_eq!(
            cpu,
            [
                (0.004, 0.002, 5),
                (0.004, 0.002, 10),
                (0.004, 0.002, 20),
                (0.004, 0.002, 30)
            ]
        );
        assert_eq!(r.client_data[0].loop_lag_max_us, 30);
        assert_eq!(r.client_data[0].seconds.len(), 4);
        assert_eq!(r.client_data[1].seconds[0].cpu_user_s, 0.003);

        // A host sampled every second; the window (2 s, from `from`) keeps
        // the two samples stamped half a second or more inside it.
        let store = Arc::new(benchlab_monitor::SampleStore::new("srv", "test"));
        let base_ms = 1_000_000u64;
        for k in 0..6u64 {
            store.push(HostSample {
                host: "srv".into(),
                unix_ms: base_ms + k * 1000 + 20,
                interval_s: 1.0,
                context_switches_per_sec: 100.0 * (k + 1) as f64,
                ..HostSample::default()
            });
        }
        let from = UNIX_EPOCH + Duration::from_millis(base_ms);
        let monitors: Vec<Arc<dyn MonitorSource>> = vec![store];
        let res = mix_resources(&monitors, from, &r, true, &GeneratorCores::default());
        let h = &res.hosts[0];
        assert_eq!(
            h.seconds.iter().map(|s| s.unix_ms).collect::<Vec<_>>(),
            [base_ms + 1020, base_ms + 2020]
        );
        assert_eq!(h.role, HostRole::ServerAndClient);
        let avg = h.average.as_ref().expect("an average");
        assert_eq!(avg.context_switches_per_sec, 250.0);
        // 250 a second over the 2 s window, 40 requests in it.
        assert_eq!(r.window_s, 2.0);
        assert_eq!(r.figures.requests, 40);
        assert_eq!(h.context_switches_per_request, Some(12.5));
        assert_eq!(res.verdict.limit, Limit::Software);
    }

    #[test]
    fn a_mix_whose_every_client_was_lost_mid_window_is_partial() {
        let pool = FakePool {
            scripts: vec![Script {
                // Seconds 0 and 1 of a window of seconds 1 and 2.
                seconds: vec![second(0, &[200; 7], 0), second(1, &[300; 5], 0)],
                lost: Some("the connection closed"),
                refuse_start: false,
            }],
            ..FakePool::default()
        };
        let (r, _) = run(&pool, false).expect("the mix ends");
        assert!(r.partial, "a window cut short is partial");
        assert_eq!(r.window_s, 0.0);
        // The whole window measured: not partial.
        let pool = FakePool {
            scripts: vec![Script::runs((0..4).map(|n| second(n, &[100; 10], 0)).collect())],
            ..FakePool::default()
        };
        let (r, _) = run(&pool, false).expect("the mix ends");
        assert!(!r.partial);
        assert_eq!(r.window_s, 2.0);
    }

    #[test]
    fn a_client_lost_mid_mix_keeps_its_number_and_its_figures_apart() {
        let pool = FakePool {
            scripts: vec![
                Script::runs((0..4).map(|n| second(n, &[100; 10], 0)).collect()),
                // Sends seconds 1 and 2 (one inside the window), then is lost.
                Script {
                    seconds: vec![second(0, &[200; 7], 0), second(1, &[300; 5], 0)],
                    lost: Some("silent for 3 s"),
                    refuse_start: false,
                },
                Script::runs((0..4).map(|n| second(n, &[400; 20], 0)).collect()),
            ],
            ..FakePool::default()
        };
        let (r, _) = run(&pool, false).expect("the mix completes without it");
        let rows: Vec<(u32, Option<&str>, f64, bool, u64)> = r
            .client_data
            .iter()
            .map(|c| {
                (
                    c.client,
                    c.address.as_deref(),
                    c.delay_s,
                    c.taken_out,
                    c.figures.requests,
                )
            })
            .collect();
        assert_eq!(
            rows,
            [
                (1, Some("127.0.0.1"), 0.1, false, 20),
                (2, Some("127.0.0.2"), 0.2, true, 5),
                (3, Some("127.0.0.3"), 0.3, false, 40),
            ],
            "client 3 is still client 3, with its own delay and address"
        );
        let lost = &r.client_data[1];
        assert_eq!(lost.lost.as_deref(), Some("silent for 3 s"));
        assert_eq!(
            lost.figures.requests_per_sec, 5.0,
            "over the one second it sent in the window"
        );
        assert_eq!(lost.figures.latency_us.p50, 300);
        assert_eq!(r.client_data[0].lost, None);
        // The mix's totals are the two others' only.
        assert_eq!(r.figures.requests, 60);
        assert_eq!(r.figures.latency_us.max, 400);
        assert_eq!(r.clients_participating, 2);
        assert_eq!(r.clients, 3);
        assert!(
            r.warnings
                .iter()
                .any(|w| w.starts_with("client 2 was lost (silent for 3 s)")),
            "{:?}",
            r.warnings
        );
        // Its seconds up to the loss are in the series; after it, the others'.
        let reqs: Vec<u64> = r.per_second.iter().map(|s| s.requests).collect();
        assert_eq!(reqs, [37, 35, 30, 30]);
        assert_eq!(pool.log().iter().filter(|l| l.starts_with("finish")).count(), 3);
    }

    #[test]
    fn a_client_that_cannot_connect_is_taken_out_but_its_errors_count() {
        let pool = FakePool {
            scripts: vec![
                Script::runs((0..4).map(|n| second(n, &[100; 10], 0)).collect()),
                Script::runs((0..4).map(|n| second(n, &[], 3)).collect()),
            ],
            ..FakePool::default()
        };
        let (r, _) = run(&pool, false).expect("runs");
        let out = &r.client_data[1];
        assert!(out.taken_out && out.lost.is_none());
        assert_eq!((out.figures.requests, out.figures.errors_total), (0, 6));
        assert_eq!((r.figures.requests, r.figures.errors_total), (20, 6), "WebBench's rule");
        assert_eq!(r.clients_participating, 1);
        let errors: Vec<u64> = r.per_second.iter().map(|s| s.errors).collect();
        assert_eq!(errors, [3, 3, 3, 3]);
    }

    #[test]
    fn a_stopped_mix_is_partial_and_every_client_is_stopped() {
        let pool = FakePool {
            scripts: vec![
                Script::runs((0..4).map(|n| second(n, &[100; 10], 0)).collect()),
                Script::runs((0..4).map(|n| second(n, &[100; 10], 0)).collect()),
            ],
            ..FakePool::default()
        };
        let (r, seen) = run(&pool, true).expect("runs");
        assert!(r.partial);
        assert!(seen.is_empty(), "stopped before any second");
        assert_eq!(r.client_data.len(), 2, "both keep their rows");
        assert_eq!(
            pool.log(),
            ["start 1", "start 2", "stop 1", "stop 2", "finish 1", "finish 2"]
        );
    }

    #[test]
    fn a_client_that_fails_to_start_stops_every_client_already_started() {
        let ok = Script::runs(vec![second(0, &[100], 0)]);
        let pool = FakePool {
            scripts: vec![
                ok.clone(),
                ok.clone(),
                Script {
                    refuse_start: true,
                    ..ok.clone()
                },
                ok,
            ],
            ..FakePool::default()
        };
        let e = run(&pool, false).expect_err("the mix cannot run");
        assert!(matches!(e, ControllerError::Driver { client: 3, .. }), "{e}");
        assert!(e.to_string().starts_with("cannot start client 3: "), "{e}");
        assert_eq!(
            pool.log(),
            [
                "start 1",
                "start 2",
                "refused 3",
                "stop 1",
                "stop 2",
                "finish 1",
                "finish 2"
            ],
            "client 4 is never started"
        );
    }
}

/// What `benchlab http` ran, for its one mix (or one load of its peak
/// search): the run's plan, each client's, how they ended.
pub struct HttpRun<'a> {
    /// 1-based, as in reports (a search's loads in load order).
    pub number: usize,
    /// The run's plan, before it was shared out over the clients.
    pub plan: &'a benchlab_engine::ClientPlan,
    /// Each client's plan, in client order.
    pub clients: &'a [ClientPlan],
    pub driven: &'a Driven,
    /// Ctrl-C stopped it.
    pub partial: bool,
    /// The load generator's CPU over the run (this process's, or the
    /// agents' worker threads').
    pub client_cpu: ClientCpu,
    /// Event-loop OS threads the users ran on.
    pub os_threads: usize,
    /// `--agents`: the agents, for a row per client (`client_data`, and
    /// `http_command.clients`); `None` when the one client ran in this
    /// process, which has no rows.
    pub agents: Option<&'a [AgentResult]>,
}

/// `benchlab http`'s mix from its clients, folded as a suite's mix is
/// ([`fold_clients`]: one merge, the controller's), in the one results
/// model (docs/http.md, "JSON result"): the mix's counted span is the run
/// after its `--ramp-up`, its phase `http`, and what its flags set that a
/// suite's mix has no field for is in `http_command`.
pub fn http_mix(h: &HttpRun) -> MixResult {
    use benchlab_engine::{Load, Stop};
    let plan = h.plan;
    let reports: Vec<&ClientReport> = h.driven.reports().collect();
    let elapsed = reports.iter().map(|r| r.elapsed).max().unwrap_or_default();
    let window_s = match plan.stop {
        // The counted window starts after the ramp-up.
        Stop::After(d) => elapsed.min(d).saturating_sub(plan.window.0).as_secs_f64(),
        Stop::Requests(_) => elapsed.as_secs_f64(),
    };
    let window_s = round(window_s, 3);
    let folded = fold_clients(h.driven, h.clients, plan.classes.len(), window_s);
    let merged = &folded.merged;
    let total: ClassStats = merged.total();
    let conn = &merged.conn;
    let shares = plan.connection.request_shares(&conn.requests_by_kind);
    let mut warnings: Vec<String> = share_warning(
        &shares,
        "--requests-per-connection N (1 makes request shares the configured ones)",
    )
    .into_iter()
    .collect();
    let peaks: Vec<u64> = reports.iter().map(|r| r.peak_connections).collect();
    let open_loop = match plan.load {
        Load::Closed => None,
        Load::Open(o) => Some(OpenLoopResult::measure(
            o.rate,
            o.arrival.name(),
            o.max_in_flight,
            conn,
            &total,
            window_s,
            &peaks,
        )),
    };
    warnings.extend(
        open_loop
            .as_ref()
            .and_then(|o| o.late_warning("--rate", "--max-in-flight")),
    );
    let users_arrived = reports.iter().map(|r| r.users_arrived).sum();
    let users_waiting = reports.iter().map(|r| r.users_waiting).sum();
    warnings.extend(arrival_warning(
        users_waiting,
        u64::from(plan.virtual_users),
        "use --ramp-up, or fewer --threads",
    ));
    warnings.extend(preconnect_warning(
        plan.preconnect,
        conn.preconnected,
        u64::from(plan.virtual_users),
    ));
    let done_all = total.counters.requests + total.counters.errors_total();
    let urls: Vec<String> = plan.urls.iter().map(|u| u.url()).collect();
    let class_names: Vec<String> = plan.classes.iter().map(|c| c.name.clone()).collect();
    let classes = merged
        .classes
        .iter()
        .zip(&class_names)
        .map(|(s, name)| {
            let done = s.counters.requests + s.counters.errors_total();
            ClassResult {
                name: name.clone(),
                kind: "url".into(),
                spi: None,
                percent: 100.0 / class_names.len().max(1) as f64,
                observed_percent: if done_all == 0 {
                    0.0
                } else {
                    done as f64 * 100.0 / done_all as f64
                },
                figures: Figures::of(s, window_s),
            }
        })
        .collect();
    // Body bytes of each second of the merged series, from the clients'
    // own seconds (the series has no such column).
    let seconds_body_bytes = h
        .driven
        .seconds
        .iter()
        .map(|s| {
            reports
                .iter()
                .flat_map(|r| r.seconds.iter())
                .filter(|x| x.second + 1 == s.second)
                .map(|x| x.counters.body_bytes)
                .sum()
        })
        .collect();
    let open = open_loop.is_some();
    let threads = if open { 0 } else { plan.virtual_users };
    let clients = h.clients.len().max(1) as u32;
    let (client_data, command_clients) = match h.agents {
        None => (Vec::new(), Vec::new()),
        Some(agents) => {
            let rows = h
                .clients
                .iter()
                .enumerate()
                .map(|(i, p)| {
                    let agent = agents.iter().find(|a| a.clients.contains(&(i + 1)));
                    HttpCommandClient {
                        client: i as u32 + 1,
                        agent: agent.map_or(0, |a| a.index),
                        host: agent.map(|a| a.host.clone()).unwrap_or_default(),
                        threads: match p.settings.load {
                            Load::Closed => p.settings.virtual_users,
                            Load::Open(_) => 0,
                        },
                        rate: match p.settings.load {
                            Load::Closed => None,
                            Load::Open(o) => Some(o.rate),
                        },
                    }
                })
                .collect();
            (folded.client_data.clone(), rows)
        }
    };
    let lost = folded.client_data.iter().filter(|c| c.lost.is_some()).count() as u32;
    let h2_settings = reports.iter().find_map(|r| r.h2_settings);
    MixResult {
        mix: h.number,
        phase: benchlab_results::load::HTTP_PHASE.into(),
        clients,
        clients_participating: clients.saturating_sub(lost),
        threads: threads.into(),
        partial: h.partial,
        window_s,
        figures: Figures::of(&total, window_s),
        reconnects: conn.reconnects,
        in_flight: folded.in_flight,
        connections_opened: conn.connections_opened,
        tls_full_handshakes: conn.tls_full_handshakes,
        tls_resumptions: conn.tls_resumptions,
        client_cpu_s: round(h.client_cpu.user_s + h.client_cpu.system_s, 3),
        client_cpu: h.client_cpu.clone(),
        params: ParamsResult {
            delay_s: 0.0,
            ramp_up_s: plan.ramp_up.as_secs_f64(),
            ramp_down_s: 0.0,
            length_s: window_s + plan.ramp_up.as_secs_f64(),
            think_time_s: 0.0,
            threads_per_client: threads / clients,
            receive_buffer: 0,
            http10_percent: 0,
            http10_keepalive: false,
            persistent_percent: 0,
            requests_per_connection: None,
            timeout_s: 0.0,
            workload: "urls".into(),
            target: urls.join(" "),
            preconnect: false,
        },
        client_data,
        classes,
        per_second: h.driven.seconds.clone(),
        histograms: histograms(merged, &plan.classes),
        users_arrived,
        users_waiting,
        request_kinds: request_kinds(&shares),
        warnings,
        open_loop,
        search: None,
        repeats: None,
        resources: None,
        http2: plan.http2.map(|h2| MixHttp2 {
            connections: u64::from(h2.connections),
            classes: class_names.clone(),
            streams_per_connection: h2.streams,
            streams_opened: conn.h2_streams,
            goaways: conn.h2_goaways,
            connection_frame_bytes: conn.h2_connection_bytes,
            stream_resets: stream_resets(conn),
            quic: quic_figures(h2.h3, conn),
            h3_classes: Vec::new(),
        }),
        files: None,
        http_command: Some(HttpCommand {
            urls,
            mode: if open { "open" } else { "closed" }.into(),
            os_threads: h.os_threads,
            body_bytes_per_sec: crate::measure::per_sec(total.counters.body_bytes, window_s),
            seconds_body_bytes,
            h2_window: plan.http2.map(|h2| h2.window),
            h2_server_settings: h2_settings.and_then(|s| serde_json::to_value(s).ok()),
            clients: command_clients,
        }),
        flows: None,
        start_spread: None,
    }
}

/// `benchlab http`'s results: its one phase (`http`) of `mixes`.
pub fn http_results(mixes: Vec<MixResult>, client_cpus: Vec<usize>) -> Results {
    let urls = mixes
        .first()
        .and_then(|m| m.http_command.as_ref())
        .map(|c| c.urls.clone())
        .unwrap_or_default();
    benchlab_results::load::http_results(env!("CARGO_PKG_VERSION"), &urls, client_cpus, mixes)
}
