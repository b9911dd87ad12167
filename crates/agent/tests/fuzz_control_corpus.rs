//! Replays the control-message fuzz corpus (`fuzz/corpus/control`) on
//! stable Rust with the fuzz target's checks. The seeds are real messages
//! of every kind; `BENCHLAB_UPDATE_CORPUS=1` writes them again.

use benchlab_agent::proto::agent_message::Kind as A;
use benchlab_agent::proto::controller_message::Kind as C;
use benchlab_agent::proto::*;
use benchlab_controller::plan::{ClientPlan, UrlChunks, UrlList, UrlSpec, URL_CHUNK_BYTES};
use benchlab_engine::{new_latency_histogram, ClassPlan, Expect, LatencySummary, Second};
use prost::Message;
use std::path::Path;
use std::time::Duration;

fn seeds() -> Vec<(&'static str, Vec<u8>)> {
    let mut h = new_latency_histogram();
    for v in [90, 120, 4_000] {
        h.record(v).unwrap();
    }
    let second = Second {
        second: 2,
        counters: Default::default(),
        conn: Default::default(),
        latency: LatencySummary::of(&h),
        histogram: Some(h),
        load: Default::default(),
    };
    let list = UrlList::new(
        vec![ClassPlan { name: "page".into() }],
        vec![UrlSpec {
            url: "http://127.0.0.1:8080/4k.html".into(),
            weight: 1.0,
            class: 0,
            expect_status: 200,
            expect: Expect::Size(4096),
            request: 0,
        }],
    );
    let list = std::sync::Arc::new(list);
    let chunks = UrlChunks::new(std::sync::Arc::clone(&list), URL_CHUNK_BYTES);
    let plan = ClientPlan {
        urls: list.id.clone(),
        settings: benchlab_engine::ClientSettings {
            virtual_users: 2,
            load: benchlab_engine::Load::Closed,
            os_threads: 1,
            stop: benchlab_engine::Stop::After(Duration::from_secs(3)),
            window: (Duration::ZERO, Duration::from_secs(3)),
            start_delay: Duration::ZERO,
            think_time: Duration::ZERO,
            ramp_up: Duration::ZERO,
            timeout: Duration::from_secs(5),
            connection: Default::default(),
            receive_buffer: 4096,
            headers: vec![("X-Bench".into(), "1".into())],
            source_addresses: vec!["127.0.0.2".parse().unwrap()],
            tls: Default::default(),
            seed: 7,
            first_user: 0,
            preconnect: false,
            http2: None,
        },
    };
    let a = |k| AgentMessage { kind: Some(k) }.encode_to_vec();
    let c = |k| ControllerMessage { kind: Some(k) }.encode_to_vec();
    vec![
        (
            "hello",
            a(A::Hello(Hello {
                protocol_version: PROTOCOL_VERSION,
                role: Role::Agent as i32,
                index: 3,
                host: "load-3".into(),
                software: "0.1.0".into(),
            })),
        ),
        (
            "pong",
            a(A::Pong(Pong {
                id: 1,
                t1: 1,
                t2: 2,
                t3: 3,
            })),
        ),
        (
            "second",
            a(A::Second(ClientPayload {
                client: 1,
                json: serde_json::to_vec(&second).unwrap(),
            })),
        ),
        (
            "sample",
            a(A::Sample(MonitorSample {
                unix_nanos: 5,
                payload: b"{\"cpu\":1}".to_vec(),
            })),
        ),
        (
            "url-head",
            c(C::UrlChunk(UrlChunk {
                list: list.id.clone(),
                seq: 0,
                data: chunks.head(),
                last: false,
            })),
        ),
        (
            "url-chunk",
            c(C::UrlChunk(UrlChunk {
                list: list.id.clone(),
                seq: 1,
                data: chunks.clone().next().unwrap().0,
                last: true,
            })),
        ),
        (
            "start",
            c(C::Start(Start {
                client: 1,
                plan: serde_json::to_vec(&plan).unwrap(),
                start_unix_nanos: 1_800_000_000_000_000_000,
                threads_from_cpus_of: 2,
            })),
        ),
        ("ping", c(C::Ping(Ping { id: 4, t1: 9 }))),
        ("stop", c(C::Stop(Stop { client: 2 }))),
    ]
}

#[test]
fn control_corpus_replays() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/control");
    if std::env::var_os("BENCHLAB_UPDATE_CORPUS").is_some() {
        std::fs::create_dir_all(&dir).unwrap();
        for (name, bytes) in seeds() {
            std::fs::write(dir.join(format!("seed-{name}")), bytes).unwrap();
        }
    }
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).expect("fuzz corpus directory") {
        let data = std::fs::read(entry.expect("corpus entry").path()).expect("corpus file");
        check_decoders(&data);
        n += 1;
    }
    assert!(n >= seeds().len(), "the corpus holds at least the seeds, found {n}");
    // The seeds decode to what they were.
    for (name, bytes) in seeds() {
        let ok = AgentMessage::decode(&bytes[..]).is_ok() || ControllerMessage::decode(&bytes[..]).is_ok();
        assert!(ok, "seed {name}");
    }
}
