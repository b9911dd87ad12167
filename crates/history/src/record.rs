//! What is stored of a run: the figures `list` and `trend` read (per phase
//! the peak, the p99 at the peak, the useful peak, requests and errors; per
//! mix its figures), found by the report's own analysis so that the history
//! and `benchlab report` name the same mix the peak, and the whole
//! results.json as it was written, for `show` and `compare --against`.

use benchlab_report::{analyze_run, ReportOptions, Run};
use benchlab_results::{Results, RunKind};
use std::path::Path;

/// One phase's figures.
#[derive(Debug, Clone, PartialEq)]
pub struct PhaseRecord {
    pub phase: String,
    pub mixes: u64,
    pub requests: u64,
    pub errors: u64,
    /// The mix with the highest lead figure (requests/s; Mbit/s for a file
    /// suite) and its figures.
    pub peak_mix: Option<u64>,
    pub peak_rps: Option<f64>,
    pub peak_mbit: Option<f64>,
    pub p99_at_peak_us: Option<u64>,
    /// The highest mix within the report's default limits (p99 ≤ 1 s,
    /// errors ≤ 1 %, clients served equally); none when no mix kept them.
    pub useful_peak_mix: Option<u64>,
    pub useful_peak_rps: Option<f64>,
    pub useful_peak_mbit: Option<f64>,
}

/// One mix's figures.
#[derive(Debug, Clone, PartialEq)]
pub struct MixRecord {
    pub mix: u64,
    pub phase: String,
    pub threads: u64,
    pub clients: u64,
    pub partial: bool,
    pub requests: u64,
    pub errors: u64,
    pub requests_per_sec: f64,
    pub mbit_per_sec: f64,
    pub p99_us: u64,
}

/// A run as recorded.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRecord {
    /// xxh3-128 of the results.json text: the same file is recorded once.
    pub digest: String,
    pub suite: String,
    pub started_unix: u64,
    /// Not every mix of the suite ran to its end (Ctrl-C, a lost client).
    pub partial: bool,
    /// `web` or `file`.
    pub kind: String,
    /// `nginx 1.22.1` from the disclosure, or `not disclosed`.
    pub server: String,
    /// A digest of the disclosed profile and effective configuration (8 hex
    /// digits), or `-` when none was disclosed.
    pub server_config: String,
    pub benchlab_version: String,
    pub host: String,
    pub target: String,
    /// The results directory it was read from.
    pub source: String,
    pub results: String,
    pub phases: Vec<PhaseRecord>,
    pub mixes: Vec<MixRecord>,
}

/// The server of a run as `list` and `trend` group it.
pub const NOT_DISCLOSED: &str = "not disclosed";

impl RunRecord {
    /// The record of `results` (parsed from `text`, read from `source`).
    pub fn of(results: &Results, text: &str, source: &Path) -> RunRecord {
        let run = Run {
            label: results.suite.name.clone(),
            dir: source.to_path_buf(),
            results: results.clone(),
        };
        let analysis = analyze_run(&run, &ReportOptions::default());
        let file = results.kind() == RunKind::File;
        let phases = analysis
            .phases
            .iter()
            .map(|p| {
                let ms: Vec<_> = results.mixes.iter().filter(|m| m.phase == p.name).collect();
                PhaseRecord {
                    phase: p.name.clone(),
                    mixes: ms.len() as u64,
                    requests: ms.iter().map(|m| m.figures.requests).sum(),
                    errors: ms.iter().map(|m| m.figures.errors_total).sum(),
                    peak_mix: p.peak.as_ref().map(|k| k.mix as u64),
                    peak_rps: p.peak.as_ref().map(|k| k.requests_per_sec),
                    peak_mbit: p.peak.as_ref().filter(|_| file).map(|k| k.mbit_per_sec),
                    p99_at_peak_us: p.peak.as_ref().map(|k| k.p99_us),
                    useful_peak_mix: p.useful_peak.as_ref().map(|k| k.mix as u64),
                    useful_peak_rps: p.useful_peak.as_ref().map(|k| k.requests_per_sec),
                    useful_peak_mbit: p.useful_peak.as_ref().filter(|_| file).map(|k| k.mbit_per_sec),
                }
            })
            .collect();
        let mixes = results
            .mixes
            .iter()
            .map(|m| MixRecord {
                mix: m.mix as u64,
                phase: m.phase.clone(),
                threads: m.threads,
                clients: u64::from(m.clients),
                partial: m.partial,
                requests: m.figures.requests,
                errors: m.figures.errors_total,
                requests_per_sec: m.figures.requests_per_sec,
                mbit_per_sec: m.figures.mbit_per_sec,
                p99_us: m.figures.latency_us.p99,
            })
            .collect();
        let env = &results.environment;
        let (server, server_config) = match &env.server {
            Some(s) => {
                let mut h = xxhash_rust::xxh3::Xxh3::new();
                h.update(s.profile.as_bytes());
                for c in &s.effective_configuration {
                    h.update(c.source.as_bytes());
                    h.update(&[0]);
                    h.update(c.text.as_bytes());
                    h.update(&[0]);
                }
                let v = if s.version.is_empty() {
                    s.server.clone()
                } else {
                    format!("{} {}", s.server, s.version)
                };
                (v, format!("{:016x}", h.digest())[..8].to_string())
            }
            None => (NOT_DISCLOSED.to_string(), "-".to_string()),
        };
        RunRecord {
            digest: crate::digest(text),
            suite: results.suite.name.clone(),
            started_unix: env.started_unix,
            partial: !results.complete || results.mixes.iter().any(|m| m.partial),
            kind: if file { "file" } else { "web" }.to_string(),
            server,
            server_config,
            benchlab_version: env.benchlab_version.clone(),
            host: env.host.clone(),
            target: env.target.clone(),
            source: source.display().to_string(),
            results: text.to_string(),
            phases,
            mixes,
        }
    }
}
