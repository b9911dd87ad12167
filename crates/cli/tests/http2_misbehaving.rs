//! `benchlab http --http 2` against a small HTTP/2 server written by hand
//! that misbehaves on purpose: each misbehaviour lands in its error kind
//! (docs/counting.md, "HTTP/2"), with exact counts, and the run ends.
//!
//! - RST_STREAM on every other stream → `stream_reset`, by code;
//! - GOAWAY after 10 streams on each connection → the refused streams are
//!   sent again on a new connection (`reconnects`), no error;
//! - GOAWAY refusing every stream → each request is retried once, then
//!   counted as `goaway`;
//! - SETTINGS_MAX_CONCURRENT_STREAMS = 1 → benchlab never has two streams
//!   open on a connection, though it is allowed four;
//! - DATA beyond benchlab's window → `flow_control`;
//! - SETTINGS_INITIAL_WINDOW_SIZE = 0 that never opens → GETs send no
//!   DATA, so they still succeed;
//! - a malformed frame (PING of 7 bytes) → `framing`;
//! - a server that never answers → `timeout`, and a timed run still ends;
//! - a SETTINGS or a PING flood that reads none of the answers → `framing`,
//!   with benchlab's memory bounded;
//! - a header block of endless empty CONTINUATION frames →
//!   `header_too_large`, and the run ends on time and on Ctrl-C;
//! - endless frames benchlab must ignore (an unknown type) → the run still
//!   ends on time and on Ctrl-C;
//! - a WINDOW_UPDATE past 2³¹ − 1, on the connection or on a stream →
//!   `flow_control`.

mod common;

use common::{http_json, u};
use serde_json::Value;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    ResetEveryOther,
    GoAwayAfter(u32),
    GoAwayAlways,
    MaxStreamsOne,
    OverrunWindow,
    ZeroWindow,
    MalformedPing,
    Silent,
    /// After its SETTINGS, empty SETTINGS frames without end, reading nothing.
    SettingsFlood,
    /// After its SETTINGS, PING frames without end, reading nothing.
    PingFlood,
    /// HEADERS without END_HEADERS for the first stream, then empty
    /// CONTINUATION frames without end.
    EndlessContinuation,
    /// Frames of an unknown type (to be ignored) without end, after the
    /// first stream's HEADERS.
    IgnoredFlood,
    /// WINDOW_UPDATE(2³¹ − 1) on the connection, on each stream's HEADERS.
    ConnWindowOverflow,
    /// WINDOW_UPDATE(2³¹ − 1) on the stream, on each stream's HEADERS.
    StreamWindowOverflow,
}

const BODY: &[u8] = b"hello";

struct Server {
    port: u16,
    /// Set when benchlab had two streams open at once.
    overlapped: Arc<AtomicBool>,
    connections: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let l = (payload.len() as u32).to_be_bytes();
    let mut v = vec![l[1], l[2], l[3], kind, flags];
    v.extend_from_slice(&stream.to_be_bytes());
    v.extend_from_slice(payload);
    v
}

/// `:status 200` (static index 8) and `content-length: N` (a literal
/// with the static name 28).
fn response_head(len: usize) -> Vec<u8> {
    let n = len.to_string();
    let mut b = vec![0x88, 0x0F, 28 - 15, n.len() as u8];
    b.extend_from_slice(n.as_bytes());
    b
}

fn start(mode: Mode) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let overlapped = Arc::new(AtomicBool::new(false));
    let connections = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let (o, c, s) = (Arc::clone(&overlapped), Arc::clone(&connections), Arc::clone(&stop));
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            if s.load(Ordering::Relaxed) {
                return;
            }
            let Ok(conn) = conn else { continue };
            c.fetch_add(1, Ordering::Relaxed);
            let o = Arc::clone(&o);
            std::thread::spawn(move || serve(conn, mode, &o));
        }
    });
    Server {
        port,
        overlapped,
        connections,
        stop,
    }
}

fn read_exact(c: &mut TcpStream, n: usize) -> Option<Vec<u8>> {
    let mut b = vec![0; n];
    c.read_exact(&mut b).ok()?;
    Some(b)
}

/// Writes `frames` over and over until benchlab closes the connection
/// (bounded: a closed socket fails the write, and a test's benchlab run
/// is bounded); reads nothing.
fn flood(c: &mut TcpStream, frames: &[u8]) {
    let mut chunk = Vec::with_capacity(64 * 1024);
    while chunk.len() + frames.len() <= 64 * 1024 {
        chunk.extend_from_slice(frames);
    }
    while c.write_all(&chunk).is_ok() {}
}

/// Reads benchlab's frames up to its first HEADERS; returns its stream.
fn first_headers(c: &mut TcpStream) -> Option<u32> {
    loop {
        let h = read_exact(c, 9)?;
        let len = u32::from_be_bytes([0, h[0], h[1], h[2]]) as usize;
        read_exact(c, len)?;
        if h[3] == 1 {
            return Some(u32::from_be_bytes([h[5], h[6], h[7], h[8]]) & 0x7FFF_FFFF);
        }
    }
}

fn serve(mut c: TcpStream, mode: Mode, overlapped: &AtomicBool) {
    let _ = c.set_read_timeout(Some(Duration::from_secs(10)));
    let _ = c.set_write_timeout(Some(Duration::from_secs(60)));
    let _ = c.set_nodelay(true);
    if read_exact(&mut c, 24).is_none() {
        return;
    }
    let settings: Vec<u8> = match mode {
        Mode::MaxStreamsOne => vec![0, 3, 0, 0, 0, 1],
        Mode::ZeroWindow => vec![0, 4, 0, 0, 0, 0],
        _ => vec![],
    };
    if c.write_all(&frame(4, 0, 0, &settings)).is_err() {
        return;
    }
    match mode {
        Mode::SettingsFlood => return flood(&mut c, &frame(4, 0, 0, &[])),
        Mode::PingFlood => return flood(&mut c, &frame(6, 0, 0, &[7; 8])),
        Mode::EndlessContinuation => {
            let Some(id) = first_headers(&mut c) else { return };
            // `:status 200` (static index 8), and the block never ends.
            if c.write_all(&frame(1, 0, id, &[0x88])).is_err() {
                return;
            }
            return flood(&mut c, &frame(9, 0, id, &[]));
        }
        Mode::IgnoredFlood => {
            if first_headers(&mut c).is_none() {
                return;
            }
            return flood(&mut c, &frame(0xFA, 0, 0, &[1, 2, 3]));
        }
        _ => {}
    }
    let mut streams = 0u32;
    let mut open: Vec<u32> = Vec::new();
    loop {
        let Some(h) = read_exact(&mut c, 9) else { return };
        let len = u32::from_be_bytes([0, h[0], h[1], h[2]]) as usize;
        let (kind, id) = (h[3], u32::from_be_bytes([h[5], h[6], h[7], h[8]]) & 0x7FFF_FFFF);
        if read_exact(&mut c, len).is_none() {
            return;
        }
        if kind != 1 {
            continue; // SETTINGS, its ACK, WINDOW_UPDATE, RST_STREAM
        }
        streams += 1;
        if mode == Mode::Silent {
            continue;
        }
        let mut out = Vec::new();
        match mode {
            Mode::ResetEveryOther if streams.is_multiple_of(2) => out.extend(frame(3, 0, id, &2u32.to_be_bytes())),
            Mode::GoAwayAlways => {
                out.extend(frame(7, 0, 0, &[0, 0, 0, 0, 0, 0, 0, 0]));
                let _ = c.write_all(&out);
                std::thread::sleep(Duration::from_millis(50));
                return;
            }
            Mode::MalformedPing => {
                out.extend(frame(6, 0, 0, &[0; 7]));
            }
            // benchlab's windows start at 65,535: one more 2³¹ − 1 is past
            // the largest window.
            Mode::ConnWindowOverflow => out.extend(frame(8, 0, 0, &0x7FFF_FFFFu32.to_be_bytes())),
            Mode::StreamWindowOverflow => out.extend(frame(8, 0, id, &0x7FFF_FFFFu32.to_be_bytes())),
            Mode::OverrunWindow => {
                out.extend(frame(1, 4, id, &response_head(200)));
                out.extend(frame(0, 1, id, &[b'x'; 200]));
            }
            Mode::MaxStreamsOne => {
                open.push(id);
                if open.len() > 1 {
                    overlapped.store(true, Ordering::Relaxed);
                }
                // Answer a little later, so a second stream would overlap.
                std::thread::sleep(Duration::from_millis(2));
                out.extend(frame(1, 4, id, &response_head(BODY.len())));
                out.extend(frame(0, 1, id, BODY));
                open.retain(|&s| s != id);
            }
            _ => {
                out.extend(frame(1, 4, id, &response_head(BODY.len())));
                out.extend(frame(0, 1, id, BODY));
            }
        }
        if let Mode::GoAwayAfter(k) = mode {
            if streams == k {
                let mut g = id.to_be_bytes().to_vec();
                g.extend_from_slice(&[0, 0, 0, 0]);
                out.extend(frame(7, 0, 0, &g));
                let _ = c.write_all(&out);
                // Drain what benchlab sent meanwhile, then close.
                let _ = c.set_read_timeout(Some(Duration::from_millis(100)));
                let mut sink = [0u8; 4096];
                while matches!(c.read(&mut sink), Ok(n) if n > 0) {}
                return;
            }
        }
        if c.write_all(&out).is_err() {
            return;
        }
    }
}

fn run(server: &Server, args: &[&str]) -> Value {
    let url = format!("http://127.0.0.1:{}/x", server.port);
    let mut all = vec!["--http", "2", "--os-threads", "1", "--timeout", "3s"];
    all.extend_from_slice(args);
    all.push(&url);
    http_json(&all)
}

#[test]
fn rst_stream_is_stream_reset_by_code() {
    let server = start(Mode::ResetEveryOther);
    // The preflight is the connection's first stream: answered.
    let v = run(&server, &["--connections", "1", "--streams", "1", "-n", "100"]);
    assert_eq!(u(&v, "/requests"), 50, "{v}");
    assert_eq!(u(&v, "/errors/stream_reset"), 50, "{v}");
    assert_eq!(u(&v, "/errors_total"), 50, "{v}");
    assert_eq!(u(&v, "/http2/stream_resets/INTERNAL_ERROR"), 50, "{v}");
    assert_eq!(u(&v, "/http2/streams_opened"), 100, "{v}");
}

#[test]
fn goaway_mid_run_sends_refused_streams_again_on_a_new_connection() {
    let server = start(Mode::GoAwayAfter(10));
    let v = run(&server, &["--connections", "1", "--streams", "4", "-n", "100"]);
    assert_eq!(u(&v, "/requests"), 100, "{v}");
    assert_eq!(u(&v, "/errors_total"), 0, "{v}");
    assert_eq!(u(&v, "/in_flight"), 0, "{v}");
    assert_eq!(u(&v, "/connections_opened"), 10, "10 streams a connection: {v}");
    assert_eq!(u(&v, "/http2/goaways"), 10, "{v}");
    // Streams sent after the 10th and before the GOAWAY arrived were
    // refused and sent again: reconnects, and opened twice.
    let again = u(&v, "/reconnects");
    assert_eq!(u(&v, "/http2/streams_opened"), 100 + again, "{v}");
}

#[test]
fn a_stream_refused_twice_is_a_goaway_error() {
    let server = start(Mode::GoAwayAlways);
    let v = run(
        &server,
        &["--no-preflight", "--connections", "1", "--streams", "1", "-n", "5"],
    );
    assert_eq!(u(&v, "/requests"), 0, "{v}");
    assert_eq!(u(&v, "/errors/goaway"), 5, "{v}");
    assert_eq!(u(&v, "/errors_total"), 5, "{v}");
    assert_eq!(u(&v, "/reconnects"), 5, "each request was retried once: {v}");
    assert_eq!(server.connections.load(Ordering::Relaxed), 10);
}

#[test]
fn max_concurrent_streams_one_is_obeyed() {
    let server = start(Mode::MaxStreamsOne);
    let v = run(&server, &["--connections", "1", "--streams", "4", "-n", "40"]);
    assert_eq!(u(&v, "/requests"), 40, "{v}");
    assert_eq!(u(&v, "/errors_total"), 0, "{v}");
    assert_eq!(u(&v, "/threads"), 4, "{v}");
    assert_eq!(
        u(&v, "/http_command/h2_server_settings/max_concurrent_streams"),
        1,
        "{v}"
    );
    assert!(
        !server.overlapped.load(Ordering::Relaxed),
        "two streams were open at once"
    );
}

#[test]
fn data_beyond_the_window_is_flow_control() {
    let server = start(Mode::OverrunWindow);
    let v = run(
        &server,
        &[
            "--no-preflight",
            "--h2-window",
            "100",
            "--connections",
            "1",
            "--streams",
            "1",
            "-n",
            "5",
        ],
    );
    assert_eq!(u(&v, "/errors/flow_control"), 5, "{v}");
    assert_eq!(u(&v, "/errors_total"), 5, "{v}");
}

#[test]
fn a_server_window_that_never_opens_does_not_hold_back_gets() {
    let server = start(Mode::ZeroWindow);
    let v = run(&server, &["--connections", "2", "--streams", "2", "-n", "20"]);
    assert_eq!(u(&v, "/requests"), 20, "{v}");
    assert_eq!(u(&v, "/body_bytes"), 20 * BODY.len() as u64, "{v}");
    assert_eq!(u(&v, "/http_command/h2_server_settings/initial_window_size"), 0, "{v}");
}

#[test]
fn a_malformed_frame_is_framing_and_the_run_ends() {
    let server = start(Mode::MalformedPing);
    let v = run(
        &server,
        &["--no-preflight", "--connections", "1", "--streams", "1", "-n", "5"],
    );
    assert_eq!(u(&v, "/errors/framing"), 5, "{v}");
    assert_eq!(u(&v, "/errors_total"), 5, "{v}");
    assert_eq!(u(&v, "/in_flight"), 0, "{v}");
}

#[test]
fn a_silent_server_times_streams_out_and_the_run_ends() {
    let server = start(Mode::Silent);
    let url = format!("http://127.0.0.1:{}/x", server.port);
    let v = http_json(&[
        "--http",
        "2",
        "--os-threads",
        "1",
        "--no-preflight",
        "--timeout",
        "300ms",
        "--connections",
        "1",
        "--streams",
        "2",
        "-d",
        "1s",
        &url,
    ]);
    assert_eq!(u(&v, "/requests"), 0, "{v}");
    assert!(u(&v, "/errors/timeout") >= 2, "{v}");
    assert_eq!(u(&v, "/errors_total"), u(&v, "/errors/timeout"), "{v}");
    assert_eq!(u(&v, "/in_flight"), 2, "{v}");
}

/// How a watched benchlab run ended.
struct Watched {
    status: std::process::ExitStatus,
    stdout: String,
    stderr: String,
    /// The largest VmHWM (peak resident memory) read from /proc while it ran.
    peak_kib: u64,
}

/// Never more than this of benchlab's memory is waited through: a run
/// past it is killed at once (the machine is shared), and the test fails.
const RSS_LIMIT_KIB: u64 = 200 * 1024;

fn vm_hwm_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Runs `benchlab http --json ARGS URL` against `server`, reading its peak
/// memory every 10 ms; after `interrupt_when` holds (checked as it runs), a
/// SIGINT. Fails the test if it runs past 30 s or past [`RSS_LIMIT_KIB`].
fn watch(server: &Server, args: &[&str], interrupt_when: Option<&dyn Fn() -> bool>) -> Watched {
    use std::process::{Command, Stdio};
    let url = format!("http://127.0.0.1:{}/x", server.port);
    let mut child = Command::new(common::benchlab_bin())
        .args(["http", "--json", "--http", "2", "--os-threads", "1", "--no-preflight"])
        .args(args)
        .arg(&url)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start benchlab");
    let pid = child.id();
    // Read its output beside, so a full pipe cannot stall it.
    let mut out = child.stdout.take().expect("stdout");
    let mut err = child.stderr.take().expect("stderr");
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let mut peak_kib = 0;
    let mut interrupted = false;
    let status = loop {
        if let Some(kib) = vm_hwm_kib(pid) {
            peak_kib = peak_kib.max(kib);
        }
        if let Some(status) = child.try_wait().expect("wait for benchlab") {
            break status;
        }
        let too_big = peak_kib > RSS_LIMIT_KIB;
        if too_big || std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "benchlab {args:?} killed: {} (peak {peak_kib} KiB)",
                if too_big {
                    "its memory grew past the limit"
                } else {
                    "still running after 30 s"
                }
            );
        }
        if let Some(ready) = interrupt_when {
            if !interrupted && ready() {
                let ok = std::process::Command::new("kill")
                    .args(["-INT", &pid.to_string()])
                    .status()
                    .expect("run kill");
                assert!(ok.success());
                interrupted = true;
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    Watched {
        status,
        stdout: out.join().expect("stdout reader"),
        stderr: err.join().expect("stderr reader"),
        peak_kib,
    }
}

impl Watched {
    /// Its `--json` output after Ctrl-C: exit 130 (as `run`), what was
    /// measured still printed, marked partial.
    fn interrupted_json(&self) -> Value {
        assert_eq!(
            self.status.code(),
            Some(130),
            "benchlab exited {} after Ctrl-C (peak {} KiB):\n{}\n{}",
            self.status,
            self.peak_kib,
            self.stdout,
            self.stderr
        );
        let v: Value = common::http_mix(self.stdout.as_bytes());
        assert_eq!(v["partial"], true, "{v}");
        v
    }

    /// Its `--json` output, after checking it exited 0 (a server's
    /// misbehaviour is measured, never fatal: no abort, no panic).
    fn json(&self) -> Value {
        assert!(
            self.status.success(),
            "benchlab exited {} (peak {} KiB):\n{}\n{}",
            self.status,
            self.peak_kib,
            self.stdout,
            self.stderr
        );
        common::http_mix(self.stdout.as_bytes())
    }
}

fn floods_are_framing_with_memory_bounded(mode: Mode) {
    let server = start(mode);
    let w = watch(
        &server,
        &["--timeout", "3s", "--connections", "1", "--streams", "1", "-n", "5"],
        None,
    );
    let v = w.json();
    assert_eq!(u(&v, "/requests"), 0, "{v}");
    assert_eq!(u(&v, "/errors/framing"), 5, "{v}");
    assert_eq!(u(&v, "/errors_total"), 5, "{v}");
    assert_eq!(u(&v, "/in_flight"), 0, "{v}");
    assert!(w.peak_kib < RSS_LIMIT_KIB, "peak {} KiB", w.peak_kib);
}

#[test]
fn a_settings_flood_that_reads_nothing_is_framing_and_memory_stays_bounded() {
    floods_are_framing_with_memory_bounded(Mode::SettingsFlood);
}

#[test]
fn a_ping_flood_that_reads_nothing_is_framing_and_memory_stays_bounded() {
    floods_are_framing_with_memory_bounded(Mode::PingFlood);
}

#[test]
fn a_flood_ends_the_preflight_with_its_reason() {
    let server = start(Mode::SettingsFlood);
    let url = format!("http://127.0.0.1:{}/x", server.port);
    let out = common::run_benchlab(&["http", "--http", "2", "--timeout", "3s", "-n", "5", &url]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("a flood of frames to answer"), "{stderr}");
}

#[test]
fn endless_continuation_frames_are_header_too_large() {
    let server = start(Mode::EndlessContinuation);
    let w = watch(
        &server,
        &["--timeout", "3s", "--connections", "1", "--streams", "1", "-n", "5"],
        None,
    );
    let v = w.json();
    assert_eq!(u(&v, "/errors/header_too_large"), 5, "{v}");
    assert_eq!(u(&v, "/errors_total"), 5, "{v}");
    assert_eq!(u(&v, "/connections_opened"), 5, "one connection each: {v}");
}

#[test]
fn endless_continuation_frames_end_on_time_and_on_ctrl_c() {
    let server = start(Mode::EndlessContinuation);
    // Each request ends its connection: a think time keeps them few.
    let args = [
        "--timeout",
        "1s",
        "--think-time",
        "20ms",
        "--connections",
        "1",
        "--streams",
        "1",
    ];
    let timed = watch(&server, &[&args[..], &["-d", "2s"]].concat(), None).json();
    assert!(u(&timed, "/errors/header_too_large") >= 1, "{timed}");
    assert_eq!(
        u(&timed, "/errors_total"),
        u(&timed, "/errors/header_too_large"),
        "{timed}"
    );
    // Ctrl-C once benchlab's load has reached the server.
    let seen = server.connections.load(Ordering::Relaxed);
    let c = Arc::clone(&server.connections);
    let ready = move || c.load(Ordering::Relaxed) > seen;
    let stopped = watch(&server, &[&args[..], &["-d", "10m"]].concat(), Some(&ready)).interrupted_json();
    assert!(u(&stopped, "/errors/header_too_large") >= 1, "{stopped}");
}

#[test]
fn frames_to_ignore_without_end_do_not_keep_a_run_past_its_end_or_ctrl_c() {
    let server = start(Mode::IgnoredFlood);
    let args = ["--timeout", "500ms", "--connections", "1", "--streams", "1"];
    let timed = watch(&server, &[&args[..], &["-d", "2s"]].concat(), None).json();
    assert_eq!(u(&timed, "/requests"), 0, "{timed}");
    assert_eq!(u(&timed, "/errors_total"), u(&timed, "/errors/timeout"), "{timed}");
    assert!(u(&timed, "/http2/connection_frame_bytes") > 0, "{timed}");
    let seen = server.connections.load(Ordering::Relaxed);
    let c = Arc::clone(&server.connections);
    let ready = move || c.load(Ordering::Relaxed) > seen;
    let stopped = watch(&server, &[&args[..], &["-d", "10m"]].concat(), Some(&ready)).interrupted_json();
    assert_eq!(u(&stopped, "/requests"), 0, "{stopped}");
}

#[test]
fn a_window_update_past_2_31_on_the_connection_is_flow_control() {
    let server = start(Mode::ConnWindowOverflow);
    let v = http_json(&[
        "--http",
        "2",
        "--os-threads",
        "1",
        "--no-preflight",
        "--timeout",
        "1s",
        "--connections",
        "1",
        "--streams",
        "1",
        "-n",
        "5",
        &format!("http://127.0.0.1:{}/x", server.port),
    ]);
    assert_eq!(u(&v, "/errors/flow_control"), 5, "{v}");
    assert_eq!(u(&v, "/errors_total"), 5, "{v}");
    assert_eq!(u(&v, "/connections_opened"), 5, "a connection error ends each: {v}");
}

#[test]
fn a_window_update_past_2_31_on_a_stream_is_flow_control() {
    let server = start(Mode::StreamWindowOverflow);
    let v = http_json(&[
        "--http",
        "2",
        "--os-threads",
        "1",
        "--no-preflight",
        "--timeout",
        "1s",
        "--connections",
        "1",
        "--streams",
        "1",
        "-n",
        "5",
        &format!("http://127.0.0.1:{}/x", server.port),
    ]);
    assert_eq!(u(&v, "/errors/flow_control"), 5, "{v}");
    assert_eq!(u(&v, "/errors_total"), 5, "{v}");
    assert_eq!(
        u(&v, "/connections_opened"),
        1,
        "a stream error leaves the connection: {v}"
    );
}
