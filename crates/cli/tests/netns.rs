//! Test systems with their own addresses: four network namespaces, each a
//! load machine, and nginx in a fifth (tests/support/netns.rs). Needs root
//! and iproute2; skipped with the reason printed otherwise.

mod common;
#[path = "support/netns.rs"]
mod netns;

use common::benchlab_bin;
use netns::{NetLab, NsNginx, SERVER_ADDR};
use std::collections::BTreeMap;
use std::time::Duration;

const PORT: u16 = 8080;

fn docroot() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("4k.html"), vec![b'x'; 4096]).unwrap();
    dir
}

/// Each namespace is a machine of its own: nginx sees four source
/// addresses, each with exactly the requests that machine counted (plus
/// its one preflight request), and the machine behind the delaying proxy
/// measures the proxy's delay.
#[test]
fn four_test_systems_each_counted_by_the_server_from_its_own_address() {
    let lab = match NetLab::new(4) {
        Ok(lab) => lab,
        Err(why) => {
            eprintln!("skipped: {why}");
            return;
        }
    };
    let root = docroot();
    let nginx = NsNginx::start(&lab, lab.server_ns(), PORT, root.path());
    lab.delay_to_server(3, PORT, Duration::from_millis(30)).unwrap();

    let url = format!("http://{SERVER_ADDR}:{PORT}/4k.html");
    let runs: Vec<_> = (0..4)
        .map(|i| {
            lab.command(lab.agent_ns(i), benchlab_bin())
                .args(["http", "--json", "-t", "2", "-n", "200", &url])
                .output()
                .expect("run benchlab http in a namespace")
        })
        .collect();
    let mut counted = BTreeMap::new();
    let mut p50 = Vec::new();
    for (i, out) in runs.iter().enumerate() {
        assert!(
            out.status.success(),
            "agent {i}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        counted.insert(lab.agent_addr(i), json["requests"].as_u64().unwrap());
        p50.push(json["latency_us"]["p50"].as_u64().unwrap());
    }
    let mut logged = BTreeMap::<String, u64>::new();
    for (addr, status, body, _) in nginx.log() {
        assert_eq!((status, body), (200, 4096));
        *logged.entry(addr).or_default() += 1;
    }
    let expected: BTreeMap<String, u64> = counted.iter().map(|(a, n)| (a.clone(), n + 1)).collect();
    assert_eq!(
        logged, expected,
        "nginx's log by source address against each machine's count + preflight"
    );
    // 30 ms added to every request of machine 3 only.
    assert!(p50[3] >= 30_000, "the delayed machine's p50 {} µs", p50[3]);
    for (i, p) in p50.iter().take(3).enumerate() {
        assert!(*p < 30_000, "machine {i}'s p50 {p} µs");
    }
}
