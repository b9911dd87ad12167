//! `--web ADDR` of `benchlab run` and `benchlab demo`: a live view of the
//! run in a browser. The controller's [`Observer`] calls feed a snapshot
//! (every merged second of every mix, the mix now running, the mixes done)
//! into shared state; a thread serves it with tiny_http — a small
//! synchronous server, enough for a page polled once a second, with no
//! async runtime in the binary's hot path — as:
//!
//! - `GET /`: the live page (HTML and a small script that polls
//!   `/live.json` every second and redraws an inline SVG per-second chart,
//!   the current mix and the progress, without reloading); once the run has
//!   ended, the final `report.html` exactly as written to the results
//!   directory;
//! - `GET /live`: the live page, during the run and after it;
//! - `GET /live.json`: the snapshot (`?since=K`: the seconds from the K-th);
//! - `GET /report.html`: the report as last written (after every mix);
//! - `GET /metrics`: the run's live metrics as OpenMetrics text, as
//!   `--metrics-listen` serves them (docs/metrics.md).
//!
//! Read-only: any other method gets 405. Bound to a loopback address unless
//! `--web-allow-remote` says otherwise: the page shows the target, the
//! command and the suite file to anyone who can reach it.

use crate::CliError;
use benchlab_controller::{MixResult, Observer, Results, SecondResult};
use benchlab_model::Mix;
use clap::Args;
use serde::Serialize;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

/// The live view's flags (shared by `run` and `demo`).
#[derive(Debug, Clone, Default, Args)]
pub struct WebArgs {
    /// Serve a live view of the run at this address (e.g. 127.0.0.1:8080):
    /// the per-second series, the current mix and the progress, updated
    /// every second, then the final report at the same address. Read-only;
    /// loopback only unless --web-allow-remote.
    #[arg(long, value_name = "ADDR")]
    pub web: Option<SocketAddr>,
    /// With --web: allow an address other than loopback (anyone who can
    /// reach it sees the run: target, command, suite).
    #[arg(long, requires = "web")]
    pub web_allow_remote: bool,
    /// With --web: keep serving the final report after the run ends, until
    /// Ctrl-C (without it benchlab exits as soon as the run ends).
    #[arg(long, requires = "web")]
    pub web_linger: bool,
}

/// One merged second of a mix, as the live chart plots it.
#[derive(Debug, Clone, Serialize)]
struct Second {
    mix: usize,
    /// The run of the mix under `--repeat` (1 without).
    run: u32,
    /// Seconds since the mix's start, from 1.
    second: u32,
    requests: u64,
    errors: u64,
    bytes: u64,
    in_window: bool,
    /// Percentiles of the second's successful requests, every client's
    /// merged (0 when none completed).
    latency_p50_us: u64,
    latency_p99_us: u64,
}

/// The mix now running.
#[derive(Debug, Clone, Serialize)]
struct Current {
    mix: usize,
    phase: String,
    clients: u32,
    /// `16 threads` or `open loop at 2,000 requests/s`.
    load: String,
    run: u32,
    of: u32,
    length_s: f64,
    ramp_up_s: f64,
    ramp_down_s: f64,
    /// The last second merged, from 1 (0 before the first).
    second: u32,
}

/// One finished run of a mix.
#[derive(Debug, Clone, Serialize)]
struct Done {
    mix: usize,
    run: u32,
    phase: String,
    threads: u64,
    requests_per_sec: f64,
    mbytes_per_sec: f64,
    p99_us: u64,
    errors: u64,
    partial: bool,
}

/// What `/live.json` serves.
#[derive(Debug, Clone, Default, Serialize)]
struct Snapshot {
    /// Bumped at every change, so a page can tell it has seen a state.
    seq: u64,
    suite: String,
    target: String,
    out: String,
    /// Mixes the suite runs (unknown with --find-peak: `null`).
    mixes_total: Option<usize>,
    repeat: u32,
    /// `running`, or `done` once the run has ended.
    state: String,
    current: Option<Current>,
    finished: Vec<Done>,
    /// Index in the whole series of `seconds[0]`: `/live.json?since=K`
    /// sends the seconds from the K-th on, so a page polling a long run
    /// fetches only what is new.
    since: usize,
    seconds: Vec<Second>,
    /// A report.html has been written (after the first mix).
    report: bool,
}

impl Snapshot {
    fn clone_without_seconds(&self) -> Snapshot {
        Snapshot {
            seq: self.seq,
            suite: self.suite.clone(),
            target: self.target.clone(),
            out: self.out.clone(),
            mixes_total: self.mixes_total,
            repeat: self.repeat,
            state: self.state.clone(),
            current: self.current.clone(),
            finished: self.finished.clone(),
            since: 0,
            seconds: Vec::new(),
            report: self.report,
        }
    }
}

/// The state the observer writes and the server reads.
#[derive(Debug, Clone)]
pub struct Live {
    snapshot: Arc<Mutex<Snapshot>>,
    out: PathBuf,
    pub addr: SocketAddr,
    /// The run's live metrics, served at `/metrics` (docs/metrics.md).
    metrics: Option<benchlab_metrics::Exporter>,
}

impl Live {
    fn lock(&self) -> MutexGuard<'_, Snapshot> {
        // A panic while holding the lock leaves a readable snapshot.
        self.snapshot.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn update(&self, f: impl FnOnce(&mut Snapshot)) {
        let mut s = self.lock();
        f(&mut s);
        s.seq += 1;
    }

    /// The run has ended: `/` serves the final report from now on.
    pub fn finish(&self) {
        self.update(|s| {
            s.state = "done".into();
            s.current = None;
        });
    }

    /// The address to open, for the terminal.
    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }
}

/// Refuses a `--web` address other than loopback without
/// `--web-allow-remote` (before the run says anything).
pub fn check(a: &WebArgs) -> Result<(), CliError> {
    match a.web {
        Some(addr) if !addr.ip().is_loopback() && !a.web_allow_remote => Err(CliError::Usage(format!(
            "--web {addr}: not a loopback address; the live view shows the target, the command and the suite to \
             anyone who can reach it: use 127.0.0.1:PORT, or add --web-allow-remote to serve on {}",
            addr.ip()
        ))),
        _ => Ok(()),
    }
}

/// Checks `--web`, binds it and starts serving; `None` without `--web`.
/// A non-loopback address is refused unless `--web-allow-remote`.
pub fn start(
    a: &WebArgs,
    suite: &str,
    target: &str,
    out: &std::path::Path,
    mixes_total: Option<usize>,
    repeat: u32,
    metrics: Option<benchlab_metrics::Exporter>,
) -> Result<Option<Live>, CliError> {
    check(a)?;
    let Some(addr) = a.web else {
        return Ok(None);
    };
    let server =
        tiny_http::Server::http(addr).map_err(|e| CliError::CannotRun(format!("--web {addr}: cannot listen: {e}")))?;
    let bound = server
        .server_addr()
        .to_ip()
        .ok_or_else(|| CliError::CannotRun(format!("--web {addr}: not an IP address")))?;
    let live = Live {
        snapshot: Arc::new(Mutex::new(Snapshot {
            suite: suite.to_string(),
            target: target.to_string(),
            out: out.display().to_string(),
            mixes_total,
            repeat,
            state: "running".into(),
            ..Snapshot::default()
        })),
        out: out.to_path_buf(),
        addr: bound,
        metrics,
    };
    let serving = live.clone();
    std::thread::Builder::new()
        .name("benchlab-web".into())
        .spawn(move || {
            for request in server.incoming_requests() {
                serve(&serving, request);
            }
        })
        .map_err(|e| CliError::CannotRun(format!("--web: cannot start its thread: {e}")))?;
    Ok(Some(live))
}

fn header(name: &str, value: &str) -> tiny_http::Header {
    // Both are ASCII constants of this file.
    tiny_http::Header::from_bytes(name.as_bytes(), value.as_bytes()).expect("an ASCII header")
}

/// Answers one request (a failed write means the browser went away).
fn serve(live: &Live, request: tiny_http::Request) {
    use tiny_http::{Method, Response};
    let html = "text/html; charset=utf-8";
    if !matches!(request.method(), Method::Get | Method::Head) {
        let r = Response::from_string("read-only: GET only\n")
            .with_status_code(405)
            .with_header(header("Allow", "GET, HEAD"));
        let _ = request.respond(r);
        return;
    }
    let (path, query) = request.url().split_once('?').unwrap_or((request.url(), ""));
    let path = path.to_string();
    if let (Some(m), "/metrics") = (&live.metrics, path.as_str()) {
        crate::metrics_cmd::answer(m, request);
        return;
    }
    let since: usize = query
        .split('&')
        .find_map(|kv| kv.strip_prefix("since="))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let report = live.out.join("report.html");
    let done = live.lock().state == "done";
    let (status, kind, body): (u16, &str, Vec<u8>) = match path.as_str() {
        "/" if done && report.is_file() => match std::fs::read(&report) {
            Ok(b) => (200, html, b),
            Err(e) => (
                500,
                "text/plain",
                format!("cannot read {}: {e}\n", report.display()).into_bytes(),
            ),
        },
        "/" | "/live" => (200, html, LIVE_PAGE.as_bytes().to_vec()),
        "/live.json" => {
            let mut s = {
                let all = live.lock();
                let from = since.min(all.seconds.len());
                let mut s = all.clone_without_seconds();
                s.since = from;
                s.seconds = all.seconds[from..].to_vec();
                s
            };
            s.report = report.is_file();
            (
                200,
                "application/json",
                serde_json::to_vec(&s).unwrap_or_else(|_| b"{}".to_vec()),
            )
        }
        "/report.html" => match std::fs::read(&report) {
            Ok(b) => (200, html, b),
            Err(_) => (
                404,
                "text/plain",
                b"no report yet: it is written after the first mix\n".to_vec(),
            ),
        },
        _ => (404, "text/plain", b"not found\n".to_vec()),
    };
    let r = Response::from_data(body)
        .with_status_code(status)
        .with_header(header("Content-Type", kind))
        .with_header(header("Cache-Control", "no-store"));
    let _ = request.respond(r);
}

/// An observer that feeds the live view and passes every call on to
/// `inner` (the terminal's progress).
pub struct Feed<'a> {
    pub inner: &'a mut dyn Observer,
    pub live: Live,
    /// `(run, of)` of the mix now running.
    run: (u32, u32),
}

impl<'a> Feed<'a> {
    pub fn new(inner: &'a mut dyn Observer, live: Live) -> Feed<'a> {
        Feed {
            inner,
            live,
            run: (1, 1),
        }
    }
}

impl Observer for Feed<'_> {
    fn mix_started(&mut self, mix: &Mix, phase: &str) {
        let p = &mix.params;
        let load = match p.rate {
            Some(r) => format!("open loop at {} requests/s", benchlab_format::rate(r)),
            None => benchlab_format::plural(p.threads_per_client.into(), "thread", "threads") + " per client",
        };
        let current = Current {
            mix: mix.number,
            phase: phase.to_string(),
            clients: mix.clients,
            load,
            run: self.run.0,
            of: self.run.1,
            length_s: p.length.as_secs_f64(),
            ramp_up_s: p.ramp_up.as_secs_f64(),
            ramp_down_s: p.ramp_down.as_secs_f64(),
            second: 0,
        };
        self.live.update(|s| s.current = Some(current));
        self.inner.mix_started(mix, phase);
    }

    fn repeat_started(&mut self, mix: &Mix, repeat: u32, of: u32) {
        self.run = (repeat, of);
        self.inner.repeat_started(mix, repeat, of);
    }

    fn second(&mut self, mix: &Mix, second: &SecondResult) {
        let point = Second {
            mix: mix.number,
            run: self.run.0,
            second: second.second,
            requests: second.requests,
            errors: second.errors,
            bytes: second.bytes,
            in_window: second.in_window,
            latency_p50_us: second.latency_p50_us,
            latency_p99_us: second.latency_p99_us,
        };
        self.live.update(|s| {
            if let Some(c) = s.current.as_mut() {
                c.second = second.second;
            }
            s.seconds.push(point);
        });
        self.inner.second(mix, second);
    }

    fn mix_finished(&mut self, r: &MixResult) {
        let done = Done {
            mix: r.mix,
            run: self.run.0,
            phase: r.phase.clone(),
            threads: r.threads,
            requests_per_sec: r.figures.requests_per_sec,
            mbytes_per_sec: r.figures.bytes_per_sec / 1e6,
            p99_us: r.figures.latency_us.p99,
            errors: r.figures.errors_total,
            partial: r.partial,
        };
        self.live.update(|s| s.finished.push(done));
        self.run = (1, 1);
        self.inner.mix_finished(r);
    }

    fn results_written(&mut self, results: &Results) {
        self.inner.results_written(results);
        // The report was rewritten: let the page know.
        self.live.update(|_| {});
    }

    fn note(&mut self, message: &str) {
        self.inner.note(message);
    }
}

/// The live page: its script polls `/live.json` every second and redraws
/// the header, the progress, the per-second chart (requests per second of
/// every mix back to back, and each second's merged p99 on its own scale;
/// each point a `<circle>` carrying its mix, run, second, requests and
/// percentiles as `data-*`) and the table of finished mixes. Every
/// value goes in through `textContent` or an attribute, never as markup.
/// When the run has ended the page at `/` loads itself again, and `/` is
/// then the final report; at `/live` it stays.
const LIVE_PAGE: &str = r##"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,"><title>benchlab — live</title>
<style>
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;background:#f6f7f9;color:#1d2330}
main{max-width:1100px;margin:0 auto;padding:18px 22px}
h1{font-size:22px;margin:0 0 4px}.sub{color:#5a6475;margin:0 0 14px}
.card{background:#fff;border:1px solid #dfe3ea;border-radius:8px;padding:14px 16px;margin:0 0 14px}
.bar{height:10px;background:#e6e9ef;border-radius:5px;overflow:hidden;margin:6px 0}
.bar>div{height:100%;background:#2f6fdb;width:0}
table{border-collapse:collapse;width:100%}th,td{padding:4px 8px;border-bottom:1px solid #eceff4;text-align:left}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
.state{display:inline-block;padding:1px 8px;border-radius:10px;background:#2f6fdb;color:#fff;font-size:12px}
.state.done{background:#2a9d55}.stale{color:#b3261e}
svg text{font-size:11px;fill:#5a6475}
</style></head><body><main>
<h1>benchlab — live <span id="state" class="state">connecting</span></h1>
<p class="sub" id="what">Waiting for the first second…</p>
<div class="card"><div id="progress-text">—</div><div class="bar"><div id="run-bar"></div></div>
<div id="mix-text">—</div><div class="bar"><div id="mix-bar"></div></div></div>
<div class="card"><b>Requests per second, every mix back to back</b> (shaded: ramps, not counted; dashed: each second's p99 latency, right axis)
<svg id="live-chart" width="1050" height="300" viewBox="0 0 1050 300" role="img" aria-label="requests per second" data-points="0"></svg></div>
<div class="card"><b>Finished mixes</b><table><thead><tr><th>mix</th><th>phase</th><th class="n">threads</th><th class="n">requests/s</th><th class="n">MB/s</th><th class="n">p99 µs</th><th class="n">errors</th></tr></thead><tbody id="finished"></tbody></table></div>
<p class="sub" id="foot"></p>
</main>
<script>
(function () {
  'use strict';
  var NS = 'http://www.w3.org/2000/svg';
  var updates = 0, failures = 0, all = [];
  function el(name, attrs, parent) {
    var e = document.createElementNS(NS, name);
    for (var k in attrs) { e.setAttribute(k, attrs[k]); }
    if (parent) { parent.appendChild(e); }
    return e;
  }
  function num(x, d) { return Number(x).toLocaleString('en-US', {minimumFractionDigits: d, maximumFractionDigits: d}); }
  function text(id, t) { document.getElementById(id).textContent = t; }
  function chart(seconds) {
    var svg = document.getElementById('live-chart');
    while (svg.firstChild) { svg.removeChild(svg.firstChild); }
    var W = 1050, H = 300, L = 60, R = 64, T = 12, B = 36;
    var max = 1, max99 = 1;
    seconds.forEach(function (s) {
      if (s.requests > max) { max = s.requests; }
      if (s.latency_p99_us > max99) { max99 = s.latency_p99_us; }
    });
    var n = Math.max(seconds.length, 10);
    var x = function (i) { return L + (W - L - R) * (i + 0.5) / n; };
    var y = function (v) { return H - B - (H - T - B) * v / max; };
    // The p99 of each second (every client's requests merged) on its own
    // scale, at the right.
    var y99 = function (v) { return H - B - (H - T - B) * v / max99; };
    el('line', {x1: L, y1: H - B, x2: W - R, y2: H - B, stroke: '#9aa3b2'}, svg);
    el('line', {x1: L, y1: T, x2: L, y2: H - B, stroke: '#9aa3b2'}, svg);
    [0, 0.5, 1].forEach(function (f) {
      var t = el('text', {x: L - 6, y: y(max * f) + 4, 'text-anchor': 'end'}, svg);
      t.textContent = num(max * f, 0);
      var r = el('text', {x: W - R + 6, y: y99(max99 * f) + 4, fill: '#c05a00'}, svg);
      r.textContent = num(max99 * f, 0) + (f === 1 ? ' µs p99' : '');
    });
    var pts = [], pts99 = [], lastMix = null;
    seconds.forEach(function (s, i) {
      if (!s.in_window) {
        el('rect', {x: x(i) - (W - L - R) / n / 2, y: T, width: (W - L - R) / n, height: H - T - B, fill: '#eef1f6'}, svg);
      }
      var key = s.mix + '/' + s.run;
      if (key !== lastMix) {
        el('line', {x1: x(i) - (W - L - R) / n / 2, y1: T, x2: x(i) - (W - L - R) / n / 2, y2: H - B, stroke: '#d5dae3'}, svg);
        var t = el('text', {x: x(i) - (W - L - R) / n / 2 + 3, y: H - B + 14}, svg);
        t.textContent = 'mix ' + s.mix + (s.run > 1 ? ' run ' + s.run : '');
        lastMix = key;
      }
      pts.push(x(i).toFixed(1) + ',' + y(s.requests).toFixed(1));
      pts99.push(x(i).toFixed(1) + ',' + y99(s.latency_p99_us).toFixed(1));
    });
    if (pts99.length) {
      el('polyline', {id: 'live-p99', points: pts99.join(' '), fill: 'none', stroke: '#c05a00', 'stroke-width': 1.5,
        'stroke-dasharray': '4 3'}, svg);
    }
    if (pts.length) { el('polyline', {points: pts.join(' '), fill: 'none', stroke: '#2f6fdb', 'stroke-width': 2}, svg); }
    seconds.forEach(function (s, i) {
      var c = el('circle', {cx: x(i).toFixed(1), cy: y(s.requests).toFixed(1), r: 3, fill: s.errors > 0 ? '#b3261e' : '#2f6fdb',
        'data-mix': s.mix, 'data-run': s.run, 'data-second': s.second, 'data-requests': s.requests, 'data-errors': s.errors,
        'data-p50': s.latency_p50_us, 'data-p99': s.latency_p99_us}, svg);
      var tip = el('title', {}, c);
      tip.textContent = 'mix ' + s.mix + ', second ' + s.second + ': ' + num(s.requests, 0) + ' requests, ' + num(s.errors, 0) +
        ' errors, p50 ' + num(s.latency_p50_us, 0) + ' µs, p99 ' + num(s.latency_p99_us, 0) + ' µs';
    });
    var lab = el('text', {x: L, y: H - 6}, svg);
    lab.textContent = 'seconds (ramps included), ' + seconds.length + ' so far';
    svg.setAttribute('data-points', String(seconds.length));
  }
  function render(s) {
    updates += 1;
    document.body.setAttribute('data-updates', String(updates));
    document.body.setAttribute('data-seq', String(s.seq));
    var st = document.getElementById('state');
    st.textContent = s.state;
    st.className = 'state' + (s.state === 'done' ? ' done' : '');
    text('what', 'suite ' + s.suite + ' against ' + s.target + ' → ' + s.out + (s.repeat > 1 ? ', each mix run ' + s.repeat + ' times' : ''));
    var runsDone = s.finished.length;
    var total = s.mixes_total === null ? null : s.mixes_total * s.repeat;
    text('progress-text', total === null ? runsDone + ' mix runs done (peak search: the number of mixes is not known in advance)'
      : runsDone + ' of ' + total + ' mix runs done');
    document.getElementById('run-bar').style.width = total ? Math.min(100, 100 * runsDone / total) + '%' : '0';
    var c = s.current;
    if (c) {
      text('mix-text', 'now: mix ' + c.mix + ' (' + c.phase + '), ' + c.clients + (c.clients === 1 ? ' client' : ' clients') + ' × ' + c.load
        + (c.of > 1 ? ', run ' + c.run + ' of ' + c.of : '') + ' — second ' + c.second + ' of ' + Math.ceil(c.length_s));
      document.getElementById('mix-bar').style.width = Math.min(100, 100 * c.second / Math.max(1, c.length_s)) + '%';
    } else {
      text('mix-text', s.state === 'done' ? 'the run has ended' : 'between mixes');
      document.getElementById('mix-bar').style.width = s.state === 'done' ? '100%' : '0';
    }
    all = all.slice(0, s.since).concat(s.seconds);
    chart(all);
    var body = document.getElementById('finished');
    while (body.firstChild) { body.removeChild(body.firstChild); }
    s.finished.forEach(function (d) {
      var tr = document.createElement('tr');
      [d.mix + (d.run > 1 || s.repeat > 1 ? ' run ' + d.run : '') + (d.partial ? ' (partial)' : ''), d.phase, num(d.threads, 0),
       num(d.requests_per_sec, 1), num(d.mbytes_per_sec, 2), num(d.p99_us, 0), num(d.errors, 0)].forEach(function (v, i) {
        var td = document.createElement('td');
        if (i >= 2) { td.className = 'n'; }
        td.textContent = v;
        tr.appendChild(td);
      });
      body.appendChild(tr);
    });
    text('foot', 'updated every second' + (s.report ? '; the report so far: ' : ''));
    if (s.report) {
      var a = document.createElement('a');
      a.href = '/report.html';
      a.textContent = 'report.html';
      document.getElementById('foot').appendChild(a);
    }
    if (s.state === 'done' && s.report && window.location.pathname === '/') { window.location.replace('/'); }
  }
  function poll() {
    fetch('/live.json?since=' + all.length, {cache: 'no-store'}).then(function (r) { return r.json(); }).then(function (s) {
      failures = 0;
      render(s);
      if (s.state !== 'done') { setTimeout(poll, 1000); }
    }).catch(function () {
      failures += 1;
      var st = document.getElementById('state');
      st.textContent = 'benchlab is not answering';
      st.className = 'state stale';
      if (failures < 30) { setTimeout(poll, 1000); }
    });
  }
  poll();
})();
</script></body></html>
"##;
