//! `--metrics-listen`, `--prometheus-remote-write` and `--otlp` of `run`
//! and `http` (docs/metrics.md): the flags, the `/metrics` server, and the
//! observer that feeds `benchlab_metrics::Exporter` from the controller's
//! merged seconds (with agents, the controller's merged view: no agent is
//! scraped). The exporter's crate does the counting and the formats; this
//! module only wires it to the command line.

use crate::CliError;
use benchlab_controller::{MergedSecond, MixResult, Observer, Results, SecondResult};
use benchlab_metrics::{Exporter, Kind, MixEnd, PushKind, PushTarget};
use benchlab_model::Mix;
use clap::Args;
use std::net::SocketAddr;
use std::time::Duration;

/// How long a run with `--metrics-listen` waits after its end for a scrape
/// to read the final figures (a Prometheus scraping every 15 s, its
/// default, needs up to that).
pub const FINAL_SCRAPE_WAIT: Duration = Duration::from_secs(20);

/// The live metrics' flags (shared by `run` and `http`).
#[derive(Debug, Clone, Default, Args)]
pub struct MetricsArgs {
    /// Serve the run's live metrics as OpenMetrics text at
    /// http://ADDR/metrics for Prometheus to scrape (docs/metrics.md);
    /// after the run, wait until a scrape has read the final figures (at
    /// most 20 s). Loopback only unless --metrics-allow-remote.
    #[arg(long, value_name = "ADDR")]
    pub metrics_listen: Option<SocketAddr>,
    /// With --metrics-listen: allow an address other than loopback (anyone
    /// who can reach it reads the run's counts, suite and phase names).
    #[arg(long, requires = "metrics_listen")]
    pub metrics_allow_remote: bool,
    /// Push the same series once a second as Prometheus remote write
    /// (protobuf, snappy) to this http:// URL, e.g.
    /// http://127.0.0.1:9090/api/v1/write; failures are counted and told
    /// once at the end, never fatal.
    #[arg(long, value_name = "URL")]
    pub prometheus_remote_write: Option<String>,
    /// Push the same series once a second as OTLP metrics over
    /// HTTP/protobuf to this http:// URL (a collector's
    /// http://HOST:4318; /v1/metrics is added when the URL has no path).
    #[arg(long, value_name = "URL")]
    pub otlp: Option<String>,
}

impl MetricsArgs {
    /// Whether any of the flags was given.
    pub fn any(&self) -> bool {
        self.metrics_listen.is_some() || self.prometheus_remote_write.is_some() || self.otlp.is_some()
    }
}

/// Checks the flags before any load: a non-loopback listen address without
/// --metrics-allow-remote, and push URLs that cannot be pushed to, are
/// refused by name. Returns the push targets.
pub fn check(a: &MetricsArgs) -> Result<Vec<PushTarget>, CliError> {
    if let Some(addr) = a.metrics_listen {
        if !addr.ip().is_loopback() && !a.metrics_allow_remote {
            return Err(CliError::Usage(format!(
                "--metrics-listen {addr}: not a loopback address; anyone who can reach it reads the run's counts and \
                 its suite and phase names: use 127.0.0.1:PORT, or add --metrics-allow-remote to serve on {}",
                addr.ip()
            )));
        }
    }
    let mut targets = Vec::new();
    for (kind, url) in [
        (PushKind::RemoteWrite, &a.prometheus_remote_write),
        (PushKind::Otlp, &a.otlp),
    ] {
        if let Some(u) = url {
            targets.push(PushTarget::parse(kind, u).map_err(|e| CliError::Usage(e.0))?);
        }
    }
    Ok(targets)
}

/// The run's exporter and where it serves.
#[derive(Clone)]
pub struct Metrics {
    pub exporter: Exporter,
    /// The `--metrics-listen` address as bound.
    pub listen: Option<SocketAddr>,
}

impl Metrics {
    /// The run has ended: the final figures pushed, and with
    /// `--metrics-listen` (unless `no_wait`: interrupted, or failed) a wait
    /// for a scrape of them; what went wrong is said once, on stderr.
    pub fn finish(&self, no_wait: bool) {
        let wait = self.listen.filter(|_| !no_wait).map(|_| FINAL_SCRAPE_WAIT);
        if let Some(addr) = self.listen.filter(|_| !no_wait) {
            eprintln!(
                "metrics: waiting for a scrape of http://{addr}/metrics to read the final figures (at most {} s)",
                FINAL_SCRAPE_WAIT.as_secs()
            );
        }
        for line in self.exporter.finish(wait) {
            eprintln!("benchlab: metrics: {line}");
        }
    }
}

/// Starts the exporter when a metrics flag is given, or `web` (the live
/// view serves `/metrics` too): binds `--metrics-listen` (before any load:
/// a taken port stops the run at once) and starts the pushes.
pub fn start(a: &MetricsArgs, suite: &str, kind: Kind, web: bool) -> Result<Option<Metrics>, CliError> {
    let targets = check(a)?;
    if !a.any() && !web {
        return Ok(None);
    }
    let exporter = Exporter::new(suite, kind);
    let mut listen = None;
    if let Some(addr) = a.metrics_listen {
        let server = tiny_http::Server::http(addr)
            .map_err(|e| CliError::CannotRun(format!("--metrics-listen {addr}: cannot listen: {e}")))?;
        let bound = server
            .server_addr()
            .to_ip()
            .ok_or_else(|| CliError::CannotRun(format!("--metrics-listen {addr}: not an IP address")))?;
        let serving = exporter.clone();
        std::thread::Builder::new()
            .name("benchlab-metrics".into())
            .spawn(move || {
                for request in server.incoming_requests() {
                    serve(&serving, request);
                }
            })
            .map_err(|e| CliError::CannotRun(format!("--metrics-listen: cannot start its thread: {e}")))?;
        eprintln!("metrics: http://{bound}/metrics");
        listen = Some(bound);
    }
    for t in targets {
        let url = t.url.clone();
        let flag = t.kind.flag();
        exporter.push_to(t).map_err(|e| CliError::CannotRun(e.0))?;
        eprintln!("metrics: pushing to {url} once a second ({flag})");
    }
    Ok(Some(Metrics { exporter, listen }))
}

/// Every scrape and push carries the monitored hosts' latest second (the
/// run's monitors: --monitor-local, --node-exporter, remote monitors).
pub fn watch_hosts(exporter: &Exporter, monitors: &[std::sync::Arc<dyn benchlab_monitor::MonitorSource>]) {
    if monitors.is_empty() {
        return;
    }
    let sources = monitors.to_vec();
    exporter.watch_hosts(std::sync::Arc::new(move || {
        let now = std::time::SystemTime::now();
        let from = now - Duration::from_secs(3);
        sources.iter().filter_map(|s| s.window(from, now).pop()).collect()
    }));
}

fn header(name: &str, value: &str) -> tiny_http::Header {
    // Both are ASCII constants of this crate.
    tiny_http::Header::from_bytes(name.as_bytes(), value.as_bytes()).expect("an ASCII header")
}

/// `GET /metrics` (any other path 404, any other method 405): what both
/// `--metrics-listen` and `--web`'s server answer there.
pub fn answer(exporter: &Exporter, request: tiny_http::Request) {
    use tiny_http::{Method, Response};
    if !matches!(request.method(), Method::Get | Method::Head) {
        let r = Response::from_string("read-only: GET only\n")
            .with_status_code(405)
            .with_header(header("Allow", "GET, HEAD"));
        let _ = request.respond(r);
        return;
    }
    let (text, finished) = exporter.render_scrape();
    let r = Response::from_string(text)
        .with_header(header("Content-Type", benchlab_metrics::openmetrics::CONTENT_TYPE))
        .with_header(header("Cache-Control", "no-store"));
    // Counted once the answer is sent: the run may end right after.
    if request.respond(r).is_ok() && finished {
        exporter.final_scrape_served();
    }
}

fn serve(exporter: &Exporter, request: tiny_http::Request) {
    let path = request.url().split('?').next().unwrap_or("");
    if path == "/metrics" {
        answer(exporter, request);
    } else {
        let r = tiny_http::Response::from_string("not found: the metrics are at /metrics\n").with_status_code(404);
        let _ = request.respond(r);
    }
}

/// An observer that feeds the exporter and passes every call on to `inner`.
pub struct Feed<'a> {
    pub inner: &'a mut dyn Observer,
    exporter: Exporter,
    /// The run of the mix now starting under `--repeat`.
    run: u32,
}

impl<'a> Feed<'a> {
    pub fn new(inner: &'a mut dyn Observer, exporter: Exporter) -> Feed<'a> {
        Feed {
            inner,
            exporter,
            run: 1,
        }
    }
}

impl Observer for Feed<'_> {
    fn mix_started(&mut self, mix: &Mix, phase: &str) {
        self.exporter.mix_started(mix.number, self.run, phase);
        self.inner.mix_started(mix, phase);
    }

    fn repeat_started(&mut self, mix: &Mix, repeat: u32, of: u32) {
        self.run = repeat;
        self.inner.repeat_started(mix, repeat, of);
    }

    fn second(&mut self, mix: &Mix, second: &SecondResult) {
        self.exporter.second(second);
        self.inner.second(mix, second);
    }

    fn second_merged(&mut self, mix: &Mix, second: &SecondResult, merged: &MergedSecond<'_>) {
        self.exporter
            .second_merged(second, merged.latency, Some(merged.in_flight));
        self.inner.second_merged(mix, second, merged);
    }

    fn mix_finished(&mut self, r: &MixResult) {
        self.exporter.mix_finished(&MixEnd::of(r));
        self.run = 1;
        self.inner.mix_finished(r);
    }

    fn results_written(&mut self, results: &Results) {
        self.inner.results_written(results);
    }

    fn note(&mut self, message: &str) {
        self.inner.note(message);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_that_cannot_apply_are_refused_by_name() {
        let remote = MetricsArgs {
            metrics_listen: Some("0.0.0.0:9464".parse().expect("addr")),
            ..MetricsArgs::default()
        };
        let e = check(&remote).expect_err("refused");
        assert!(
            matches!(&e, CliError::Usage(m) if m.starts_with("--metrics-listen 0.0.0.0:9464: not a loopback address")),
            "{e:?}"
        );
        let allowed = MetricsArgs {
            metrics_allow_remote: true,
            ..remote
        };
        assert!(check(&allowed).is_ok());
        let tls = MetricsArgs {
            otlp: Some("https://collector:4318".into()),
            ..MetricsArgs::default()
        };
        assert!(matches!(check(&tls), Err(CliError::Usage(m)) if m.starts_with("--otlp `https://collector:4318/`")));
    }
}
