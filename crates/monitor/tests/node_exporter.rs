//! `--node-exporter URL`: a canned /metrics page served over real HTTP,
//! read twice, gives the same figures /proc would: the second page's
//! counters minus the first's, per second.

use benchlab_monitor::NodeExporter;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// node_exporter's page at `step` 0 and 1: one second of a 2-CPU host,
/// a 100 Mbit/s NIC and a disk moving by known amounts.
fn page(step: f64) -> String {
    format!(
        "# HELP node_cpu_seconds_total Seconds the CPUs spent in each mode.\n\
         # TYPE node_cpu_seconds_total counter\n\
         node_cpu_seconds_total{{cpu=\"0\",mode=\"idle\"}} {}\n\
         node_cpu_seconds_total{{cpu=\"0\",mode=\"user\"}} {}\n\
         node_cpu_seconds_total{{cpu=\"0\",mode=\"system\"}} {}\n\
         node_cpu_seconds_total{{cpu=\"1\",mode=\"idle\"}} {}\n\
         node_cpu_seconds_total{{cpu=\"1\",mode=\"user\"}} {}\n\
         node_cpu_seconds_total{{cpu=\"1\",mode=\"system\"}} {}\n\
         node_context_switches_total {}\n\
         node_intr_total {}\n\
         node_procs_running 3\n\
         node_memory_MemTotal_bytes 8e+09\n\
         node_memory_MemFree_bytes 2e+09\n\
         node_memory_Buffers_bytes 1e+09\n\
         node_memory_Cached_bytes 3e+09\n\
         node_network_receive_bytes_total{{device=\"eth0\"}} {}\n\
         node_network_transmit_bytes_total{{device=\"eth0\"}} {}\n\
         node_network_receive_packets_total{{device=\"eth0\"}} {}\n\
         node_network_transmit_packets_total{{device=\"eth0\"}} {}\n\
         node_network_speed_bytes{{device=\"eth0\"}} 1.25e+07\n\
         node_disk_reads_completed_total{{device=\"sda\"}} {}\n\
         node_disk_writes_completed_total{{device=\"sda\"}} {}\n\
         node_disk_read_bytes_total{{device=\"sda\"}} {}\n\
         node_disk_written_bytes_total{{device=\"sda\"}} {}\n\
         node_disk_io_time_seconds_total{{device=\"sda\"}} {}\n\
         node_netstat_TcpExt_ListenOverflows {}\n\
         node_netstat_TcpExt_ListenDrops {}\n",
        1000.0 + 0.1 * step,
        500.0 + 0.2 * step,
        300.0 + 0.7 * step,
        1000.0 + 0.5 * step,
        500.0 + 0.25 * step,
        300.0 + 0.25 * step,
        1e6 + 40_000.0 * step,
        2e6 + 9_000.0 * step,
        1e9 + 1_000_000.0 * step,
        2e9 + 9_125_000.0 * step,
        1e7 + 10_000.0 * step,
        2e7 + 8_000.0 * step,
        5000.0 + 100.0 * step,
        7000.0 + 50.0 * step,
        1e8 + 409_600.0 * step,
        2e8 + 204_800.0 * step,
        60.0 + 0.5 * step,
        10.0 + 4.0 * step,
        12.0 + 5.0 * step,
    )
}

#[test]
fn a_canned_metrics_page_gives_the_figures_of_its_counters() {
    let server = Arc::new(tiny_http::Server::http("127.0.0.1:0").expect("bind"));
    let port = server.server_addr().to_ip().expect("an IP address").port();
    let served = Arc::new(AtomicUsize::new(0));
    let (s, n) = (server.clone(), served.clone());
    let t = std::thread::spawn(move || {
        while let Ok(req) = s.recv() {
            let step = n.fetch_add(1, Ordering::SeqCst);
            // The second reading comes 300 ms after the first: a span of a
            // millisecond or so (a quick machine) would be rounded in
            // `interval_s` (to 1 ms) by more than the 1 % compared below.
            if step == 1 {
                std::thread::sleep(std::time::Duration::from_millis(300));
            }
            let ok = req.url() == "/metrics";
            let _ = req.respond(if ok {
                tiny_http::Response::from_string(page(step as f64))
            } else {
                tiny_http::Response::from_string("no").with_status_code(404)
            });
            if step >= 1 {
                break;
            }
        }
    });
    let mut n = NodeExporter::new(&format!("http://127.0.0.1:{port}/metrics")).expect("first reading");
    assert_eq!(n.host(), "127.0.0.1");
    let s = n.sample().expect("second reading");
    t.join().expect("server thread");
    // Rates are per second of the span between the two readings, which
    // here is however long the fetch took: compare them per span.
    assert!(s.interval_s >= 0.29, "{s:?}");
    let per = |rate: f64| rate * s.interval_s;
    let close = |a: f64, b: f64| (a - b).abs() <= b.abs() * 0.01 + 0.01;
    // CPU shares are ratios of the deltas, independent of the span.
    assert_eq!(
        (s.per_core[0].user, s.per_core[0].system, s.per_core[0].idle),
        (20.0, 70.0, 10.0)
    );
    assert_eq!(
        (s.per_core[1].user, s.per_core[1].system, s.per_core[1].idle),
        (25.0, 25.0, 50.0)
    );
    assert_eq!((s.cpu.user, s.cpu.system, s.cpu.idle), (22.5, 47.5, 30.0));
    assert!(close(per(s.context_switches_per_sec), 40_000.0), "{s:?}");
    assert!(close(per(s.interrupts_per_sec), 9_000.0));
    assert_eq!(s.run_queue, 3.0);
    assert_eq!(s.memory.total_bytes, 8_000_000_000);
    assert_eq!(s.memory.used_bytes, 2_000_000_000);
    assert_eq!(s.memory.page_cache_bytes, 3_000_000_000);
    let eth0 = &s.nics[0];
    assert_eq!((eth0.name.as_str(), eth0.speed_mbit), ("eth0", Some(100)));
    assert!(close(per(eth0.tx_bytes_per_sec), 9_125_000.0));
    assert!(close(per(eth0.rx_packets_per_sec), 10_000.0));
    let sda = &s.disks[0];
    assert!(close(per(sda.reads_per_sec), 100.0) && close(per(sda.write_bytes_per_sec), 204_800.0));
    assert!(close(per(s.listen_overflows_per_sec), 4.0) && close(per(s.listen_drops_per_sec), 5.0));
    assert!(s.process.is_none(), "node_exporter has no per-process figures");
}

#[test]
fn an_exporter_that_is_not_there_is_named() {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = l.local_addr().expect("addr").port();
    drop(l);
    let e = NodeExporter::new(&format!("http://127.0.0.1:{port}")).expect_err("nothing listens");
    assert!(
        e.to_string()
            .starts_with(&format!("node_exporter http://127.0.0.1:{port}:")),
        "{e}"
    );
}
