//! The control protocol end to end in one process: registration, version
//! and certificate refusals, monitors, what plain TCP and h2c get, and
//! decoders fed arbitrary bytes.

use benchlab_agent::proto::PROTOCOL_VERSION;
use benchlab_agent::tls::{agent_files, CertsPlan, CA_CERT, MONITOR_CERT, MONITOR_KEY};
use benchlab_agent::*;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

fn certs(dir: &Path, agents: u32) {
    write_certs(
        dir,
        &CertsPlan {
            controller_names: vec!["localhost".into(), "127.0.0.1".into()],
            agents,
        },
    )
    .unwrap();
}

fn controller(dir: &Path, agents: u32, monitors: u32) -> (RemotePool, Arc<Mutex<Vec<String>>>) {
    let lines = Arc::new(Mutex::new(Vec::new()));
    let l = Arc::clone(&lines);
    let pool = RemotePool::listen(ControllerOptions {
        listen: "127.0.0.1:0".parse().unwrap(),
        tls: TlsFiles::controller(dir).unwrap(),
        agents,
        monitors,
        clients_per_agent: 1,
        abort_on_lost_agent: false,
        threads_by_agent: true,
        log: Arc::new(move |s| l.lock().unwrap().push(s)),
    })
    .unwrap();
    (pool, lines)
}

fn peer(dir: &Path, pool: &RemotePool, cert: &str, key: &str) -> PeerOptions {
    PeerOptions {
        controller: pool.local_addr().to_string(),
        server_name: None,
        tls: TlsFiles::read(&dir.join(CA_CERT), &dir.join(cert), &dir.join(key)).unwrap(),
        connect_timeout: Duration::from_secs(5),
    }
}

fn agent(dir: &Path, pool: &RemotePool, index: u32, version: u32) -> AgentOptions {
    let (c, k) = agent_files(index);
    AgentOptions {
        peer: peer(dir, pool, &c, &k),
        index,
        host: format!("host-{index}"),
        protocol_version: version,
    }
}

#[test]
fn agents_register_with_a_clock_check_and_exit_cleanly_when_the_run_ends() {
    let dir = tempfile::tempdir().unwrap();
    certs(dir.path(), 2);
    let (pool, _) = controller(dir.path(), 2, 0);
    let agents: Vec<_> = (0..2)
        .map(|i| {
            let opts = agent(dir.path(), &pool, i, PROTOCOL_VERSION);
            std::thread::spawn(move || run_agent(&opts, &|_| {}))
        })
        .collect();
    pool.wait_for_peers(Duration::from_secs(60), &|| false).unwrap();
    let seen = benchlab_controller::ClientPool::agents(&pool);
    assert_eq!(seen.iter().map(|a| a.index).collect::<Vec<_>>(), [0, 1]);
    assert_eq!(seen[1].clients, [2]);
    assert_eq!(seen[0].host, "host-0");
    assert_eq!(seen[0].clock[0].at, "registration");
    // Same host, same clock: the offset is within the round trip.
    assert!(seen[0].clock[0].offset_us.unsigned_abs() <= seen[0].clock[0].rtt_us + 1000);
    benchlab_controller::ClientPool::before_mix(&pool).unwrap();
    let seen = benchlab_controller::ClientPool::agents(&pool);
    assert_eq!(seen[1].clock.len(), 2);
    assert_eq!(seen[1].clock[1].at, "mix 1");
    pool.shutdown();
    for a in agents {
        a.join().unwrap().unwrap();
    }
}

#[test]
fn a_missing_agent_is_named_after_the_timeout() {
    let dir = tempfile::tempdir().unwrap();
    certs(dir.path(), 3);
    let (pool, _) = controller(dir.path(), 3, 1);
    let opts = agent(dir.path(), &pool, 1, PROTOCOL_VERSION);
    let a = std::thread::spawn(move || run_agent(&opts, &|_| {}));
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while benchlab_controller::ClientPool::agents(&pool).is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let err = pool
        .wait_for_peers(Duration::from_millis(300), &|| false)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("1 of 3 agents registered; missing agent indexes: 0, 2"),
        "{err}"
    );
    assert!(err.contains("0 of 1 monitors registered"), "{err}");
    pool.shutdown();
    a.join().unwrap().unwrap();
}

#[test]
fn a_mismatched_protocol_version_is_refused_naming_both_versions_on_both_sides() {
    let dir = tempfile::tempdir().unwrap();
    certs(dir.path(), 1);
    let (pool, lines) = controller(dir.path(), 1, 0);
    let opts = agent(dir.path(), &pool, 0, PROTOCOL_VERSION + 1);
    let err = run_agent(&opts, &|_| {}).unwrap_err();
    assert_eq!(err.exit_code(), 2);
    let words = err.to_string();
    let want = format!(
        "speaks control protocol version {}, this controller speaks version {PROTOCOL_VERSION}",
        PROTOCOL_VERSION + 1
    );
    assert!(words.contains(&want), "{words}");
    assert!(
        lines.lock().unwrap().iter().any(|l| l.contains(&want)),
        "{:?}",
        lines.lock().unwrap()
    );
    // An index beyond the run's agents is refused too.
    let mut opts = agent(dir.path(), &pool, 0, PROTOCOL_VERSION);
    opts.index = 5;
    let words = run_agent(&opts, &|_| {}).unwrap_err().to_string();
    assert!(words.contains("agent index 5"), "{words}");
}

#[test]
fn a_certificate_of_another_ca_or_none_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let other = tempfile::tempdir().unwrap();
    certs(dir.path(), 1);
    certs(other.path(), 1);
    let (pool, log) = controller(dir.path(), 1, 0);
    // Another lab's agent certificate, trusting our CA: a refusal no retry
    // can change, so the agent gives up at once, long before its connect
    // timeout, saying why (not "transport error").
    let mut opts = agent(dir.path(), &pool, 0, PROTOCOL_VERSION);
    opts.peer.tls.cert = std::fs::read(other.path().join("agent-0.pem")).unwrap();
    opts.peer.tls.key = std::fs::read(other.path().join("agent-0.key")).unwrap();
    opts.peer.connect_timeout = Duration::from_secs(600);
    let a = std::thread::spawn(move || run_agent(&opts, &|_| {}));
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !a.is_finished() {
        assert!(
            std::time::Instant::now() < deadline,
            "the agent still retries a certificate of another CA"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let err = a.join().unwrap().unwrap_err();
    assert_eq!(err.exit_code(), 1, "{err}");
    assert_eq!(
        err.to_string(),
        format!(
            "cannot register with the controller at {}: the controller refused this certificate: its signature does \
             not verify: it is signed by another lab's CA, or its key does not match it; use the files of the \
             controller's lab (its --tls-dir)",
            pool.local_addr()
        )
    );
    // The controller names the refused peer and why, once.
    let refused = |what: &str| {
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        loop {
            let lines: Vec<String> = log
                .lock()
                .unwrap()
                .iter()
                .filter(|l| l.contains(what))
                .cloned()
                .collect();
            if !lines.is_empty() || std::time::Instant::now() >= deadline {
                return lines;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    let lines = refused("signed by another lab's CA");
    assert_eq!(lines.len(), 1, "{:?}", log.lock().unwrap());
    assert!(
        lines[0].starts_with("refused: the peer at 127.0.0.1:")
            && lines[0].ends_with(
                ": its certificate is refused: its signature does not verify (signed by another lab's CA, or a key \
                 that does not match it)"
            ),
        "{lines:?}"
    );
    // No client certificate at all: no session, not even a refusal.
    let addr = pool.local_addr();
    let ca = std::fs::read(dir.path().join("ca.pem")).unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let got = rt.block_on(async move {
        use benchlab_agent::proto::control::control_client::ControlClient;
        use tonic::transport::{Certificate, ClientTlsConfig, Endpoint};
        let tls = ClientTlsConfig::new()
            .ca_certificate(Certificate::from_pem(ca))
            .domain_name("127.0.0.1");
        let channel = Endpoint::from_shared(format!("https://{addr}"))
            .unwrap()
            .tls_config(tls)
            .unwrap()
            .connect()
            .await;
        // TLS 1.3: the client may finish its handshake before the server
        // checks for its certificate; the first request fails then.
        let Ok(channel) = channel else {
            return Err("no connection".to_string());
        };
        let hello = benchlab_agent::proto::AgentMessage {
            kind: Some(benchlab_agent::proto::agent_message::Kind::Hello(
                benchlab_agent::proto::Hello {
                    protocol_version: PROTOCOL_VERSION,
                    role: benchlab_agent::proto::Role::Agent as i32,
                    ..Default::default()
                },
            )),
        };
        match ControlClient::new(channel)
            .session(tokio_stream::iter(vec![hello]))
            .await
        {
            Ok(r) => match r.into_inner().message().await {
                Ok(m) => Ok(format!("{m:?}")),
                Err(s) => Err(s.to_string()),
            },
            Err(s) => Err(s.to_string()),
        }
    });
    assert!(got.is_err(), "a client without a certificate got {got:?}");
    assert!(benchlab_controller::ClientPool::agents(&pool).is_empty());
    // (tonic's channel tries again on its own: a line per connection.)
    assert!(!refused("it presented no client certificate").is_empty());
}

/// Connections that open and never say a word: each is dropped after the
/// handshake timeout, the oldest at once when more than the bound are
/// pending, and a real agent registers meanwhile.
#[test]
fn stalled_handshakes_are_bounded_and_time_out_and_keep_no_agent_out() {
    let dir = tempfile::tempdir().unwrap();
    certs(dir.path(), 1);
    let (pool, log) = controller(dir.path(), 1, 0);
    let bound = benchlab_agent::controller::MAX_PENDING_HANDSHAKES;
    let stalled: Vec<TcpStream> = (0..bound + 16)
        .map(|_| TcpStream::connect(pool.local_addr()).unwrap())
        .collect();
    let opts = agent(dir.path(), &pool, 0, PROTOCOL_VERSION);
    let a = std::thread::spawn(move || run_agent(&opts, &|_| {}));
    pool.wait_for_peers(Duration::from_secs(60), &|| false).unwrap();
    // The first is dropped for a later one; the last when its time is up
    // (10 s). Neither ever gets a byte; a read that times out (30 s) means
    // the controller still holds it.
    let closed = |mut s: &TcpStream| {
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let mut b = [0u8; 1];
        match s.read(&mut b) {
            Ok(n) => n == 0,
            Err(e) => !matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut),
        }
    };
    assert!(closed(&stalled[0]), "the oldest stalled handshake is still held");
    assert!(closed(&stalled[bound + 15]), "a stalled handshake outlived the timeout");
    let lines = log.lock().unwrap().clone();
    assert!(
        lines.iter().any(|l| l.ends_with(&format!(
            "its TLS handshake was still unfinished with {bound} others pending"
        ))),
        "{lines:?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.ends_with("finished no TLS handshake within 10 s")),
        "{lines:?}"
    );
    pool.shutdown();
    a.join().unwrap().unwrap();
}

#[test]
fn plain_tcp_and_h2c_get_nothing() {
    let dir = tempfile::tempdir().unwrap();
    certs(dir.path(), 1);
    let (pool, _) = controller(dir.path(), 1, 0);
    // An HTTP/2 prior-knowledge preface and a request, as h2c would send.
    for hello in [
        &b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00"[..],
        b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
    ] {
        let mut s = TcpStream::connect(pool.local_addr()).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.write_all(hello).unwrap();
        let mut got = Vec::new();
        let _ = s.read_to_end(&mut got);
        // At most a TLS alert record (content type 21): never HTTP, never gRPC.
        assert!(got.is_empty() || got[0] == 0x15, "{got:?}");
        assert!(!String::from_utf8_lossy(&got).contains("HTTP"));
    }
}

#[test]
fn a_monitor_streams_its_samples_kept_per_host() {
    let dir = tempfile::tempdir().unwrap();
    certs(dir.path(), 0);
    let (pool, _) = controller(dir.path(), 0, 1);
    let opts = peer(dir.path(), &pool, MONITOR_CERT, MONITOR_KEY);
    let (tx, rx) = std::sync::mpsc::channel();
    let m = std::thread::spawn(move || monitor_session(&opts, "server-1", rx));
    pool.wait_for_peers(Duration::from_secs(60), &|| false).unwrap();
    let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    for i in 0..3u64 {
        tx.send((t0 + Duration::from_secs(i), format!("{{\"cpu\":{i}}}").into_bytes()))
            .unwrap();
    }
    drop(tx);
    m.join().unwrap().unwrap();
    let samples = pool.monitors().samples("server-1");
    assert_eq!(pool.monitors().hosts(), ["server-1"]);
    assert_eq!(samples.len(), 3);
    assert_eq!(samples[2], (t0 + Duration::from_secs(2), b"{\"cpu\":2}".to_vec()));
    assert!(pool.monitors().samples("elsewhere").is_empty());
}

#[test]
fn only_the_monitor_certificate_registers_as_a_monitor() {
    let dir = tempfile::tempdir().unwrap();
    certs(dir.path(), 1);
    let (pool, lines) = controller(dir.path(), 0, 1);
    let (c, k) = agent_files(0);
    let opts = peer(dir.path(), &pool, &c, &k);
    // No samples to send: accepted, the session would end at once (Ok).
    let (tx, rx) = std::sync::mpsc::channel();
    drop(tx);
    let err = monitor_session(&opts, "server-1", rx).expect_err("the agent's certificate must be refused");
    assert_eq!(err.exit_code(), 2);
    let says = "has the certificate of agent-0, but its Hello says monitor; use monitor.pem";
    assert!(err.to_string().contains(says), "{err}");
    assert!(lines.lock().unwrap().iter().any(|l| l.contains(says)));
    assert!(pool.monitors().hosts().is_empty());
}

proptest::proptest! {
    #[test]
    fn control_message_decoders_never_panic(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..512)) {
        benchlab_agent::proto::check_decoders(&bytes);
        let _ = serde_json::from_slice::<benchlab_controller::plan::ClientPlan>(&bytes);
        let _ = serde_json::from_slice::<benchlab_controller::plan::UrlList>(&bytes);
    }

    /// A histogram header of benchlab's bounds followed by anything: the
    /// V2 decoder behind every second and report never panics.
    #[test]
    fn histogram_payloads_never_panic(tail in proptest::collection::vec(proptest::num::u8::ANY, 0..256), len in 0u32..300) {
        let mut bytes = vec![0x1c, 0x84, 0x93, 0x13];
        bytes.extend(len.to_be_bytes());
        bytes.extend(0u32.to_be_bytes());
        bytes.extend(3u32.to_be_bytes());
        bytes.extend(1u64.to_be_bytes());
        bytes.extend(benchlab_engine::LATENCY_MAX_US.to_be_bytes());
        bytes.extend(1.0f64.to_be_bytes());
        bytes.extend(tail);
        let _ = benchlab_engine::wire::histogram_of_bytes(&bytes);
    }
}

/// Seconds from several agents, through the wire and merged by adding
/// their histograms, give exactly the percentiles of one histogram fed
/// every sample: merges are exact, never means of percentiles.
#[test]
fn merged_percentiles_equal_one_histogram_of_all_samples() {
    use benchlab_engine::{new_latency_histogram, LatencySummary, Second};
    let mut all = new_latency_histogram();
    let mut merged = new_latency_histogram();
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for agent in 0..5u64 {
        let mut h = new_latency_histogram();
        for _ in 0..2_000 {
            // xorshift: a skewed spread per agent (agent 4 is slow).
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let v = 50 + x % (1_000 * (agent * agent + 1));
            h.record(v).unwrap();
            all.record(v).unwrap();
        }
        let s = Second {
            second: 0,
            counters: Default::default(),
            conn: Default::default(),
            latency: LatencySummary::of(&h),
            histogram: Some(h),
            load: Default::default(),
        };
        let json = serde_json::to_vec(&s).unwrap();
        let back = benchlab_agent::proto::decode_second(&json).unwrap();
        merged.add(back.histogram.as_ref().unwrap()).unwrap();
    }
    assert_eq!(merged, all);
    for q in [0.5, 0.9, 0.99, 0.999, 1.0] {
        assert_eq!(merged.value_at_quantile(q), all.value_at_quantile(q), "q {q}");
    }
}

/// Certificates of the lab's CA that are still refused: expired, not valid
/// yet, made for a server. The controller names why for the peer; the agent
/// says why and gives up at once (exit 1), never "transport error".
#[test]
fn an_expired_early_or_server_certificate_is_refused_naming_why() {
    let dir = tempfile::tempdir().unwrap();
    certs(dir.path(), 1);
    let (pool, log) = controller(dir.path(), 1, 0);
    // The lab's CA, from its key: same name, same key, so it signs as it.
    let ca_key = rcgen::KeyPair::from_pem(&std::fs::read_to_string(dir.path().join("ca.key")).unwrap()).unwrap();
    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Constrained(0));
    ca.distinguished_name.push(rcgen::DnType::CommonName, "benchlab lab CA");
    let issuer = rcgen::Issuer::new(ca, ca_key);
    let day = rcgen::date_time_ymd;
    let cases = [
        (
            day(2000, 1, 1),
            day(2001, 1, 1),
            rcgen::ExtendedKeyUsagePurpose::ClientAuth,
            "it has expired",
            "it has expired or is not valid yet",
        ),
        (
            day(2999, 1, 1),
            day(3000, 1, 1),
            rcgen::ExtendedKeyUsagePurpose::ClientAuth,
            "it is not valid yet",
            "it has expired or is not valid yet",
        ),
        (
            day(2000, 1, 1),
            day(3000, 1, 1),
            rcgen::ExtendedKeyUsagePurpose::ServerAuth,
            "it is not made for this use",
            "it is not made for a client",
        ),
    ];
    for (from, until, usage, controller_says, agent_says) in cases {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut p = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        p.distinguished_name.push(rcgen::DnType::CommonName, "benchlab agent 0");
        p.key_usages = vec![rcgen::KeyUsagePurpose::DigitalSignature];
        p.extended_key_usages = vec![usage];
        p.not_before = from;
        p.not_after = until;
        let cert = p.signed_by(&key, &issuer).unwrap();
        let mut opts = agent(dir.path(), &pool, 0, PROTOCOL_VERSION);
        opts.peer.tls.cert = cert.pem().into_bytes();
        opts.peer.tls.key = key.serialize_pem().into_bytes();
        let err = run_agent(&opts, &|_| {}).unwrap_err();
        assert_eq!(err.exit_code(), 1, "{err}");
        assert!(
            err.to_string()
                .contains(&format!("the controller refused this certificate: {agent_says}")),
            "{err}"
        );
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        let want = format!(": its certificate is refused: {controller_says}");
        while !log.lock().unwrap().iter().any(|l| l.contains(&want)) {
            assert!(
                std::time::Instant::now() < deadline,
                "no `{want}` in {:?}",
                log.lock().unwrap()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    assert!(benchlab_controller::ClientPool::agents(&pool).is_empty());
}
