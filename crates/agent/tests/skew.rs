//! 64 agents in one process start a mix together (issue 27): they all
//! register (timed), the controller checks their clocks and gives each
//! client the mix's start on its agent's clock, every client notes when its
//! first request began, and the mix's start spread is measured on the
//! controller's clock.
//!
//! Why one process, not 64 `benchlab agent` processes or network
//! namespaces: what the test checks is the protocol's start (the clock
//! checks, the start on each agent's clock, the first sends corrected by
//! each agent's offset), and it is the same code in one process as in 64;
//! namespaces would add a veth hop (the same loopback-speed round trips)
//! and root, and 64 processes would add 64 process starts on a busy 2-core
//! machine and nothing the check needs. docs/agents.md says how a real lab's
//! agents differ: their clocks do, which the offsets measure. Agents as
//! processes in namespaces of their own: crates/cli/tests/agents_netns.rs
//! (root) and bench/agents-netns.sh.

use benchlab_agent::tls::{agent_files, CertsPlan, CA_CERT};
use benchlab_agent::*;
use benchlab_controller::plan::{ClientPlan, UrlList, UrlSpec};
use benchlab_controller::{drive_mix, instant_at, start_spread, ClientPool};
use benchlab_engine::{ClassPlan, ClientSettings, Expect, Load, Stop};
use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

const AGENTS: u32 = 64;

/// CPU time (ns) of this process's threads named `benchlab-control` (the
/// controller's network runtime, as `RemotePool` names it; the kernel keeps
/// 15 bytes of a name), by thread id, from the scheduler's own count.
fn controller_threads_cpu() -> std::collections::BTreeMap<u32, u64> {
    let mut cpu = std::collections::BTreeMap::new();
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return cpu;
    };
    for t in tasks.flatten() {
        let comm = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
        if !comm.starts_with("benchlab-contro") {
            continue;
        }
        let ns = std::fs::read_to_string(t.path().join("schedstat"))
            .ok()
            .and_then(|s| s.split_whitespace().next()?.parse().ok());
        if let (Some(tid), Some(ns)) = (t.file_name().to_str().and_then(|n| n.parse().ok()), ns) {
            cpu.insert(tid, ns);
        }
    }
    cpu
}

/// A keep-alive server: a thread per connection, one fixed response. Each
/// connection's thread ends when the client closes it.
fn server() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = l.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { continue };
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                let mut have = 0;
                loop {
                    match s.read(&mut buf[have..]) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => have += n,
                    }
                    while let Some(end) = buf[..have].windows(4).position(|w| w == b"\r\n\r\n") {
                        if s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok").is_err() {
                            return;
                        }
                        buf.copy_within(end + 4..have, 0);
                        have -= end + 4;
                    }
                    if have == buf.len() {
                        return;
                    }
                }
            });
        }
    });
    port
}

/// One virtual user per client with a think time: a small load, so that
/// the clients' first requests do not wait behind each other's load.
fn plan(list: &UrlList, length: Duration) -> ClientPlan {
    ClientPlan {
        urls: list.id.clone(),
        settings: ClientSettings {
            virtual_users: 1,
            load: Load::Closed,
            os_threads: 1,
            stop: Stop::After(length),
            window: (Duration::ZERO, length),
            start_delay: Duration::ZERO,
            think_time: Duration::from_millis(200),
            ramp_up: Duration::ZERO,
            timeout: Duration::from_secs(5),
            receive_buffer: 4096,
            ..Default::default()
        },
    }
}

#[test]
fn sixty_four_agents_start_a_mix_within_the_bound_their_clock_checks_give() {
    let dir = tempfile::tempdir().expect("tempdir");
    write_certs(
        dir.path(),
        &CertsPlan {
            controller_names: vec!["127.0.0.1".into()],
            agents: AGENTS,
        },
    )
    .expect("certificates");
    let log = Arc::new(Mutex::new(Vec::new()));
    let l = Arc::clone(&log);
    let pool = RemotePool::listen(ControllerOptions {
        listen: "127.0.0.1:0".parse().expect("addr"),
        tls: TlsFiles::controller(dir.path()).expect("controller files"),
        agents: AGENTS,
        monitors: 0,
        clients_per_agent: 1,
        abort_on_lost_agent: false,
        threads_by_agent: false,
        log: Arc::new(move |s| l.lock().expect("log").push(s)),
    })
    .expect("listen");
    let registering = Instant::now();
    let agents: Vec<_> = (0..AGENTS)
        .map(|i| {
            let (cert, key) = agent_files(i);
            let opts = AgentOptions {
                peer: PeerOptions {
                    controller: pool.local_addr().to_string(),
                    server_name: None,
                    tls: TlsFiles::read(&dir.path().join(CA_CERT), &dir.path().join(cert), &dir.path().join(key))
                        .expect("agent files"),
                    connect_timeout: Duration::from_secs(30),
                },
                index: i,
                host: format!("host-{i}"),
                protocol_version: proto::PROTOCOL_VERSION,
            };
            std::thread::spawn(move || run_agent(&opts, &|_| {}))
        })
        .collect();
    pool.wait_for_peers(Duration::from_secs(60), &|| false)
        .unwrap_or_else(|e| panic!("{e}\n{}", log.lock().expect("log").join("\n")));
    let registration = registering.elapsed();

    let port = server();
    let list = Arc::new(UrlList::new(
        vec![ClassPlan { name: "all".into() }],
        vec![UrlSpec {
            url: format!("http://127.0.0.1:{port}/"),
            weight: 1.0,
            class: 0,
            expect_status: 200,
            expect: Expect::Status,
            request: 0,
        }],
    ));
    pool.load_urls(&list).expect("URL list");
    let length = Duration::from_secs(2);
    let plans = vec![plan(&list, length); AGENTS as usize];
    // The start as `run` chooses it (crates/controller/src/run.rs): the
    // clock checks' lead plus the threads' creation.
    let lead = pool.before_mix().expect("clock checks");
    let start_at = SystemTime::now() + Duration::from_millis(100 + 2 * u64::from(AGENTS)) + lead;
    // The machine's own wake-up at that instant: plain threads of this
    // process sleep until the same start and note how late they woke. It is
    // what any program on this machine would see then, benchlab or not.
    let wake = instant_at(start_at);
    let sleepers: Vec<_> = (0..AGENTS)
        .map(|_| {
            std::thread::spawn(move || {
                std::thread::sleep(wake.saturating_duration_since(Instant::now()));
                SystemTime::now().duration_since(start_at).unwrap_or_default()
            })
        })
        .collect();
    // The controller's CPU over the mix: its network threads (TLS, HTTP/2,
    // decoding the agents' seconds) and this thread (the merge).
    let (network0, driving0) = (controller_threads_cpu(), benchlab_engine::sys::cpu_time(true));
    let mix_began = Instant::now();
    let driven = drive_mix(
        &pool,
        &plans,
        (Duration::ZERO, length),
        start_at,
        &AtomicBool::new(false),
        &mut |_, _| {},
    )
    .expect("the mix runs");
    let mix_wall = mix_began.elapsed();
    let driving = {
        let (u, s) = benchlab_engine::sys::cpu_time(true);
        (u + s).saturating_sub(driving0.0 + driving0.1)
    };
    let network: u64 = controller_threads_cpu()
        .iter()
        .map(|(tid, ns)| ns.saturating_sub(network0.get(tid).copied().unwrap_or(0)))
        .sum();
    let controller_cpu = driving + Duration::from_nanos(network);
    let woke: Vec<Duration> = sleepers.into_iter().map(|t| t.join().expect("sleeper")).collect();
    let machine_late = woke.iter().max().copied().unwrap_or_default();
    let spread = start_spread(start_at, &plans, &driven).expect("a start spread");
    let checks = pool.agents();
    pool.shutdown();
    for a in agents {
        a.join().expect("agent thread").expect("agent session");
    }

    let worst_rtt = checks
        .iter()
        .flat_map(|a| &a.clock)
        .map(|c| c.rtt_us)
        .max()
        .unwrap_or(0);
    eprintln!(
        "{AGENTS} agents registered in {} ms; mix 1: {}; plain threads woke up to {} µs late; \
         worst clock-check round trip {worst_rtt} µs; controller CPU {:.1} % of one core over the mix's {:.1} s \
         (network threads {:.1} ms, merge thread {:.1} ms)",
        registration.as_millis(),
        spread.summary(),
        machine_late.as_micros(),
        controller_cpu.as_secs_f64() / mix_wall.as_secs_f64() * 100.0,
        mix_wall.as_secs_f64(),
        network as f64 / 1e6,
        driving.as_secs_f64() * 1e3
    );
    // Every client began and reported when.
    assert_eq!(spread.clients, AGENTS, "{spread:?}");
    // One clock in one process: every agent's true offset is 0, so each
    // measured one must lie within half its round trip (NTP's bound; a µs
    // of rounding each way). A sign turned in the exchange breaks this.
    for a in &checks {
        assert_eq!(a.clock.len(), 2, "registration and mix 1: {a:?}");
        for c in &a.clock {
            assert!(
                c.offset_us.unsigned_abs() <= c.rtt_us / 2 + 1,
                "agent {}: offset {} µs beyond half the round trip {} µs",
                a.index,
                c.offset_us,
                c.rtt_us
            );
        }
    }
    // The bound. A client's first send is known on the controller's clock
    // to ± `clock_uncertainty_us` (half its check's round trip), so two
    // clients' true difference may exceed the measured spread by twice
    // that. The goal is 1 ms beyond it. What the test must not do is fail
    // because this shared machine was busy at the start: then every thread
    // that wakes at that instant may wake milliseconds late, benchlab's or
    // not, and here the 64 clients share 2 cores, so each one's first
    // connect and write (tens of µs) delays the wake-up of those behind it
    // (about 1 to 2 ms for the last of 64, measured). So the bound admits
    // how late plain threads of this process woke at the same instant,
    // measured beside the clients and printed with them, twice over: the
    // clients and the plain threads race for the same cores, and which of
    // them runs last is chance. On an idle machine of enough cores that is
    // tens of µs and the bound is the goal's; on a busy one the numbers
    // printed say it was the machine. What does break it is benchlab's
    // own doing: starts that reach an agent after the start instant (a
    // lead too short for 64 acknowledged starts: the latest client tens of
    // ms late: without the lead, 197 ms, measured), a client that sleeps
    // on the wrong clock, a first send noted late. (An offset applied the
    // wrong way cannot show with one clock: the correction's unit test in
    // crates/agent/src/controller.rs covers its sign.)
    let bound_us = 1_000 + 2 * spread.clock_uncertainty_us + 2 * machine_late.as_micros() as u64;
    assert!(
        spread.spread_us <= bound_us,
        "{} exceeds 1 ms + 2 × the clocks' uncertainty + 2 × the {} µs the machine's own threads woke late \
         ({bound_us} µs)",
        spread.summary(),
        machine_late.as_micros()
    );
}
