//! `benchlab compare BASE NEW`: ratios per mix and the regression check a CI
//! pipeline runs. Mixes are matched by phase, threads and clients (and the
//! open loop's rate), not by number, so that two suites that differ by a mix
//! still line up; phases by name.
//!
//! A check that cries wolf is switched off, so a figure regresses only when
//! NEW is worse than BASE beyond both `--max-regression` and the noise of
//! the two runs. The noise of a mix's figure is the spread of its repeats
//! (`run --repeat N`), or, for a mix run once, the spread of its seconds
//! inside the measurement window (each second taken as a sample of the
//! mix: this sees the run's own jitter, not the drift between two runs,
//! which is why `--repeat` is the better input for a CI check). From the
//! samples of both sides comes an interval of NEW ÷ BASE at the chosen
//! confidence (Welch's t on the log ratio, the delta method for each side's
//! relative standard error), and the verdict reads that interval
//! ([`analysis::regressed`]).
//!
//! The p99 latency is compared where the two runs do the same work: at
//! BASE's peak load when NEW does not deliver more requests/s there (beyond
//! the noise), otherwise at NEW's lightest load that reaches BASE's peak
//! requests/s (matched throughput) — never at a load where NEW is simply
//! doing more work, which in a closed loop costs latency by itself.
//!
//! A mix that measured the client, not the server, gates nothing: where its
//! verdict (in either run) says the load generator was saturated
//! ("client-bound") or that client and server shared one machine's cores
//! ("co-located"), its figures are compared and marked, and a figure worse
//! beyond the limit and the noise is printed as not gated, never a
//! regression ([`not_gated`]).

use crate::analysis;
use crate::analyze::phase_mixes;
use crate::Run;
pub use benchlab_results::noise::ratio_interval;
use benchlab_results::noise::{cv2, regressed, Verdict};
use benchlab_results::resources::{HostRole, Limit};
use benchlab_results::{MixResult, RunKind};
use serde::Serialize;

/// One mix present in both runs, NEW ÷ BASE.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MixRatio {
    pub phase: String,
    pub threads: u64,
    pub clients: u32,
    pub base_mix: usize,
    pub new_mix: usize,
    pub base_requests_per_sec: f64,
    pub new_requests_per_sec: f64,
    pub requests_per_sec: Option<f64>,
    pub bytes_per_sec: Option<f64>,
    pub base_p50_us: u64,
    pub new_p50_us: u64,
    pub p50: Option<f64>,
    pub base_p99_us: u64,
    pub new_p99_us: u64,
    pub p99: Option<f64>,
    pub base_errors: u64,
    pub new_errors: u64,
    /// Why these figures gate nothing (`client-bound`, `co-located`, from
    /// either run's verdict); `None` when they gate.
    pub not_gated: Option<String>,
}

/// Where the noise of one side's figure came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NoiseSource {
    /// The mix's repeats (`run --repeat N`).
    Repeats,
    /// The mix's seconds inside its measurement window.
    Seconds,
}

/// The samples behind one side's figure.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Samples {
    pub source: NoiseSource,
    /// How many; fewer than 2 measure no spread.
    pub count: usize,
    /// Their coefficient of variation (standard deviation ÷ mean); `None`
    /// with fewer than 2 samples or a mean that is not positive.
    pub cv: Option<f64>,
}

/// One figure compared: NEW ÷ BASE, the interval the noise leaves it, and
/// the verdict.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Check {
    pub ratio: Option<f64>,
    /// NEW ÷ BASE at `confidence` (two-sided), from the samples of both
    /// sides; `None` when neither side measured a spread (the limit alone
    /// decides then).
    pub low: Option<f64>,
    pub high: Option<f64>,
    pub confidence: f64,
    pub base_samples: Samples,
    pub new_samples: Samples,
    pub verdict: Verdict,
}

/// Where NEW's p99 was taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum P99Basis {
    /// NEW's mix at BASE's peak load (same threads, clients and rate),
    /// where NEW did not deliver more requests/s than BASE.
    SameLoad,
    /// NEW's lightest load whose requests/s reached BASE's peak.
    MatchedThroughput,
    /// NEW never reached BASE's peak requests/s and has no mix at its load:
    /// NEW's own peak (less work than BASE's peak).
    NewPeak,
}

/// The peak of one phase in both runs, and the verdict.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PhaseComparison {
    pub phase: String,
    pub base_peak_mix: usize,
    pub base_peak: f64,
    pub new_peak_mix: usize,
    pub new_peak: f64,
    pub peak_ratio: Option<f64>,
    /// p99 at BASE's peak mix in BASE, and in NEW where it does the same
    /// work (see `p99_basis`).
    pub base_p99_us: u64,
    pub new_p99_mix: usize,
    pub new_p99_us: u64,
    pub p99_ratio: Option<f64>,
    pub p99_basis: P99Basis,
    pub peak_regressed: bool,
    pub p99_regressed: bool,
    pub peak_check: Check,
    pub p99_check: Check,
    /// Why the peak's figures gate nothing ([`not_gated`] of BASE's or
    /// NEW's peak mix); `None` when they gate.
    pub peak_not_gated: Option<String>,
    /// The same for the two mixes whose p99 was compared.
    pub p99_not_gated: Option<String>,
}

/// BASE against NEW.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    pub base: String,
    pub new: String,
    /// Largest allowed regression, a fraction.
    pub max_regression: f64,
    /// Confidence of the noise intervals (0.95 = 95 %).
    pub confidence: f64,
    pub mixes: Vec<MixRatio>,
    pub phases: Vec<PhaseComparison>,
    /// Why NEW is worse than BASE beyond the limit and the noise, one line
    /// each; empty when it is not.
    pub regressions: Vec<String>,
    /// Where NEW is better than BASE beyond the limit and the noise.
    pub improvements: Vec<String>,
    /// Figures worse beyond the limit and the noise in mixes that gate
    /// nothing (client-bound, co-located): said, never a regression.
    pub not_gated: Vec<String>,
    /// Phases only one run has, different suites, unknown noise.
    pub notes: Vec<String>,
    /// Each run's phase names, in order (to say why none matched).
    pub base_phases: Vec<String>,
    pub new_phases: Vec<String>,
}

impl Comparison {
    /// NEW is worse than BASE beyond the limit and the noise.
    pub fn regressed(&self) -> bool {
        !self.regressions.is_empty()
    }
}

/// Why mix `m`'s figures cannot gate a comparison: its verdict says the
/// load generator was saturated (`client-bound`: the mix measured the
/// client), or that client and server shared one machine's cores
/// (`co-located`: either may have set the figures, and a neighbour's load
/// moves them). `None` for a mix that gates — or one not monitored, whose
/// verdict is unknown, unless its own client CPU was saturated.
pub fn not_gated(m: &MixResult) -> Option<&'static str> {
    let verdict = m.resources.as_ref();
    if m.client_cpu.client_bound
        || verdict.is_some_and(|r| r.verdict.client_saturated || r.verdict.limit == Limit::Client)
    {
        return Some("client-bound");
    }
    verdict
        .is_some_and(|r| {
            r.verdict.limit == Limit::SharedCores || r.hosts.iter().any(|h| h.role == HostRole::ServerAndClient)
        })
        .then_some("co-located")
}

/// [`not_gated`] of either of two mixes (BASE's reason first).
fn either_not_gated(a: &MixResult, b: &MixResult) -> Option<String> {
    not_gated(a).or_else(|| not_gated(b)).map(String::from)
}

/// The default confidence of `benchlab compare`.
pub const DEFAULT_CONFIDENCE: f64 = 0.95;

fn same_load(a: &MixResult, b: &MixResult) -> bool {
    a.threads == b.threads && a.clients == b.clients && offered_rate(a) == offered_rate(b)
}

fn offered_rate(m: &MixResult) -> Option<f64> {
    m.open_loop.as_ref().map(|o| o.rate)
}

fn pct(x: f64) -> String {
    format!("{:+.1} %", (x - 1.0) * 100.0)
}

/// A figure of a mix, with its samples.
#[derive(Clone, Copy)]
enum Figure {
    Rate,
    P99,
}

impl Figure {
    fn of(self, m: &MixResult) -> f64 {
        match self {
            Figure::Rate => m.lead_rate(),
            Figure::P99 => m.figures.latency_us.p99 as f64,
        }
    }
}

/// A mix's lead rate in words: `1,234.5 requests/s`, or `12.3 Mbit/s` for
/// a file mix ([`MixResult::lead_rate`]).
pub fn lead_text(m: &MixResult, rate: f64) -> String {
    match m.kind() {
        RunKind::File => format!("{} Mbit/s", benchlab_format::mbit_per_sec(rate)),
        RunKind::Web => format!("{} requests/s", benchlab_format::requests_per_sec(rate)),
    }
}

/// The samples of `figure` in mix `m`: its repeats' figures when it ran
/// more than once, else its full seconds inside the window (requests of the
/// second; the second's p99 where it had requests).
fn samples(m: &MixResult, figure: Figure) -> (NoiseSource, Vec<f64>) {
    // A file mix leads with Mbit/s; its seconds are the window's, the last
    // maybe a part of one (it would read low: left out).
    let file = m.kind() == RunKind::File;
    let whole = m.window_s.floor() as u32;
    if let Some(r) = m.repeats.as_ref().filter(|r| r.runs.len() >= 2) {
        let v = r
            .runs
            .iter()
            .map(|x| match figure {
                Figure::Rate if file => x.bytes_per_sec * 8.0 / 1e6,
                Figure::Rate => x.requests_per_sec,
                Figure::P99 => x.latency_us.p99 as f64,
            })
            .collect();
        return (NoiseSource::Repeats, v);
    }
    let v = m
        .per_second
        .iter()
        .filter(|s| s.in_window && (!file || s.second <= whole))
        .filter_map(|s| match figure {
            Figure::Rate if file => Some(s.bytes as f64 * 8.0 / 1e6),
            Figure::Rate => Some(s.requests as f64),
            Figure::P99 => (s.requests > 0).then_some(s.latency_p99_us as f64),
        })
        .collect();
    (NoiseSource::Seconds, v)
}

/// `figure` of NEW's mix `n` against BASE's mix `b`: ratio, interval,
/// verdict.
fn check(b: &MixResult, n: &MixResult, figure: Figure, max_regression: f64, confidence: f64) -> Check {
    let (bs, bv) = samples(b, figure);
    let (ns, nv) = samples(n, figure);
    let ratio = analysis::ratio(figure.of(n), figure.of(b));
    let interval = ratio.and_then(|r| ratio_interval(r, &bv, &nv, confidence));
    let higher_is_better = matches!(figure, Figure::Rate);
    let verdict = match ratio {
        Some(r) => regressed(r, interval, higher_is_better, max_regression),
        // No BASE figure to compare with.
        None => Verdict::Unchanged,
    };
    let samples_of = |source, v: &[f64]| Samples {
        source,
        count: v.len(),
        cv: cv2(v).map(|c| (c.sqrt() * 1e4).round() / 1e4),
    };
    Check {
        ratio,
        low: interval.map(|i| i.0),
        high: interval.map(|i| i.1),
        confidence,
        base_samples: samples_of(bs, &bv),
        new_samples: samples_of(ns, &nv),
        verdict,
    }
}

/// `×0.800 (×0.781–×0.819 at 95 % confidence; 3 + 3 repeats)`.
pub fn check_text(c: &Check) -> String {
    let r3 = |r: f64| format!("×{r:.3}");
    let Some(r) = c.ratio else {
        return "n/a".into();
    };
    let source = |s: &Samples| match s.source {
        NoiseSource::Repeats => benchlab_format::plural(s.count as u64, "repeat", "repeats"),
        NoiseSource::Seconds => benchlab_format::plural(s.count as u64, "second", "seconds"),
    };
    let noise = format!("BASE {}, NEW {}", source(&c.base_samples), source(&c.new_samples));
    match (c.low, c.high) {
        (Some(lo), Some(hi)) => format!(
            "{} ({}–{} at {} confidence; noise from {noise})",
            r3(r),
            r3(lo),
            r3(hi),
            benchlab_format::percent(c.confidence * 100.0)
        ),
        _ => format!("{} (noise unknown: fewer than 2 samples on each side, {noise})", r3(r)),
    }
}

/// Compares NEW with BASE at the default confidence (95 %); see
/// [`compare_runs_at`].
pub fn compare_runs(base: &Run, new: &Run, max_regression: f64) -> Comparison {
    compare_runs_at(base, new, max_regression, DEFAULT_CONFIDENCE)
}

/// Compares NEW with BASE: ratios for every mix at the same load, and per
/// phase the peak requests/s and the p99 latency where both do the same
/// work. NEW regressed when one of them is worse than BASE's by more than
/// `max_regression` and by more than the noise at `confidence`.
pub fn compare_runs_at(base: &Run, new: &Run, max_regression: f64, confidence: f64) -> Comparison {
    let bp = phase_mixes(&base.results);
    let np = phase_mixes(&new.results);
    let mut notes = Vec::new();
    if base.results.suite.text != new.results.suite.text {
        notes.push(format!(
            "The suites differ ({} vs {}): mixes are matched by phase, threads and clients.",
            base.results.suite.name, new.results.suite.name
        ));
    }
    // Phases are matched by name only: a `static` phase against a `demo`
    // one compares different work, so no name in common compares nothing.
    let pairs: Vec<(&String, &Vec<&MixResult>, &Vec<&MixResult>)> = bp
        .iter()
        .filter_map(|(n, b)| np.iter().find(|(m, _)| m == n).map(|(_, nm)| (n, b, nm)))
        .collect();
    for (n, _) in &bp {
        if !np.iter().any(|(m, _)| m == n) && !pairs.is_empty() {
            notes.push(format!("Phase {n:?} is only in {}.", base.label));
        }
    }
    for (n, _) in &np {
        if !bp.iter().any(|(m, _)| m == n) && !pairs.is_empty() {
            notes.push(format!("Phase {n:?} is only in {}.", new.label));
        }
    }
    let mut mixes = Vec::new();
    let mut phases = Vec::new();
    let mut regressions = Vec::new();
    let mut improvements = Vec::new();
    let mut ungated = Vec::new();
    let limit = format!("{:.1} %", max_regression * 100.0);
    for (name, bm, nm) in pairs {
        for b in bm.iter() {
            let Some(n) = nm.iter().find(|n| same_load(b, n)) else {
                continue;
            };
            let (bf, nf) = (&b.figures, &n.figures);
            mixes.push(MixRatio {
                phase: name.clone(),
                threads: b.threads,
                clients: b.clients,
                base_mix: b.mix,
                new_mix: n.mix,
                base_requests_per_sec: bf.requests_per_sec,
                new_requests_per_sec: nf.requests_per_sec,
                requests_per_sec: analysis::ratio(nf.requests_per_sec, bf.requests_per_sec),
                bytes_per_sec: analysis::ratio(nf.bytes_per_sec, bf.bytes_per_sec),
                base_p50_us: bf.latency_us.p50,
                new_p50_us: nf.latency_us.p50,
                p50: analysis::ratio(nf.latency_us.p50 as f64, bf.latency_us.p50 as f64),
                base_p99_us: bf.latency_us.p99,
                new_p99_us: nf.latency_us.p99,
                p99: analysis::ratio(nf.latency_us.p99 as f64, bf.latency_us.p99 as f64),
                base_errors: bf.errors_total,
                new_errors: nf.errors_total,
                not_gated: either_not_gated(b, n),
            });
        }
        let br: Vec<f64> = bm.iter().map(|m| m.lead_rate()).collect();
        let nr: Vec<f64> = nm.iter().map(|m| m.lead_rate()).collect();
        let (Some(bi), Some(ni)) = (analysis::peak_index(&br), analysis::peak_index(&nr)) else {
            continue;
        };
        let (b, n) = (bm[bi], nm[ni]);
        let peak_check = check(b, n, Figure::Rate, max_regression, confidence);
        // Where NEW does BASE's work: at BASE's peak load unless NEW serves
        // more there beyond the noise; else NEW's lightest load reaching
        // BASE's peak rate.
        let same = nm.iter().copied().find(|m| same_load(b, m));
        let more_work = |m: &MixResult| {
            let c = check(b, m, Figure::Rate, 0.0, confidence);
            c.low.or(c.ratio).is_some_and(|lo| lo > 1.0)
        };
        let lightest_reaching = nm.iter().copied().filter(|m| m.lead_rate() >= br[bi]).min_by(|x, y| {
            (x.threads, offered_rate(x).unwrap_or(0.0), x.mix)
                .partial_cmp(&(y.threads, offered_rate(y).unwrap_or(0.0), y.mix))
                .unwrap_or(std::cmp::Ordering::Equal)
        });
        let (n99, p99_basis) = match (same, lightest_reaching) {
            (Some(s), _) if !more_work(s) => (s, P99Basis::SameLoad),
            (_, Some(l)) => (l, P99Basis::MatchedThroughput),
            (Some(s), None) => (s, P99Basis::SameLoad),
            (None, None) => (n, P99Basis::NewPeak),
        };
        let p99_check = check(b, n99, Figure::P99, max_regression, confidence);
        let (bp99, np99) = (b.figures.latency_us.p99, n99.figures.latency_us.p99);
        let peak_line = format!(
            "phase {name}: peak {} (mix {}) → {} (mix {}), {}, NEW ÷ BASE {}",
            lead_text(b, br[bi]),
            b.mix,
            lead_text(n, nr[ni]),
            n.mix,
            peak_check.ratio.map(pct).unwrap_or_else(|| "n/a".into()),
            check_text(&peak_check)
        );
        let at = match p99_basis {
            P99Basis::SameLoad => format!(
                "at the peak load ({})",
                benchlab_format::plural(b.threads, "thread", "threads")
            ),
            P99Basis::MatchedThroughput => format!(
                "at matched throughput (NEW's lightest load reaching BASE's peak {}: {})",
                lead_text(b, br[bi]),
                benchlab_format::plural(n99.threads, "thread", "threads")
            ),
            P99Basis::NewPeak => format!(
                "at NEW's peak (NEW never reached BASE's peak {})",
                if b.kind() == RunKind::File {
                    "Mbit/s"
                } else {
                    "requests/s"
                }
            ),
        };
        let p99_line = format!(
            "phase {name}: p99 {at} {} µs (mix {}) → {} µs (mix {}), {}, NEW ÷ BASE {}",
            benchlab_format::thousands(bp99),
            b.mix,
            benchlab_format::thousands(np99),
            n99.mix,
            p99_check.ratio.map(pct).unwrap_or_else(|| "n/a".into()),
            check_text(&p99_check)
        );
        let peak_not_gated = either_not_gated(b, n);
        let p99_not_gated = either_not_gated(b, n99);
        for (c, line, sign, why) in [
            (&peak_check, peak_line, '−', &peak_not_gated),
            (&p99_check, p99_line, '+', &p99_not_gated),
        ] {
            match (c.verdict, why) {
                (Verdict::Regressed, None) => {
                    regressions.push(format!("{line} — beyond the {sign}{limit} limit and the noise"))
                }
                (Verdict::Regressed, Some(why)) => ungated.push(format!(
                    "{line} — beyond the {sign}{limit} limit and the noise, not gated: {why}"
                )),
                (Verdict::Improved, None) => improvements.push(line),
                (Verdict::Improved, Some(why)) => improvements.push(format!("{line} (not gated: {why})")),
                (Verdict::Unchanged, _) => {}
            }
            if c.low.is_none() && c.ratio.is_some() && !notes.iter().any(|n| n.starts_with("The noise")) {
                notes.push(
                    "The noise of some figure is unknown (a mix run once with fewer than 2 seconds inside its \
                     window, on both sides): its verdict uses the limit alone. Run with --repeat 3 or longer mixes."
                        .into(),
                );
            }
        }
        phases.push(PhaseComparison {
            phase: name.clone(),
            base_peak_mix: b.mix,
            base_peak: br[bi],
            new_peak_mix: n.mix,
            new_peak: nr[ni],
            peak_ratio: peak_check.ratio,
            base_p99_us: bp99,
            new_p99_mix: n99.mix,
            new_p99_us: np99,
            p99_ratio: p99_check.ratio,
            p99_basis,
            peak_regressed: peak_check.verdict == Verdict::Regressed,
            p99_regressed: p99_check.verdict == Verdict::Regressed,
            peak_check,
            p99_check,
            peak_not_gated,
            p99_not_gated,
        });
    }
    if phases.is_empty() {
        notes.push("No phase in common: nothing to compare.".into());
    }
    if mixes.iter().any(|m| m.not_gated.is_some()) {
        let listed: Vec<String> = mixes
            .iter()
            .filter_map(|m| {
                let why = m.not_gated.as_deref()?;
                Some(format!("{} mix {}/{} ({why})", m.phase, m.base_mix, m.new_mix))
            })
            .collect();
        notes.push(format!(
            "Not gated: {} — a client-bound mix measured the load generator, a co-located one shared its cores with \
             the server; their figures are compared but never a regression. Run the load from another machine.",
            listed.join(", ")
        ));
    }
    Comparison {
        base: base.label.clone(),
        new: new.label.clone(),
        max_regression,
        confidence,
        mixes,
        phases,
        regressions,
        improvements,
        not_gated: ungated,
        notes,
        base_phases: bp.iter().map(|(n, _)| n.clone()).collect(),
        new_phases: np.iter().map(|(n, _)| n.clone()).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A run of one phase: per mix (threads, requests/s, p99 µs, the
    /// requests of each second inside the window).
    fn run(label: &str, mixes: &[(u64, f64, u64, &[u64])]) -> Run {
        let latency = |p99: u64| json!({"mean": 1.0, "p50": 1, "p90": 1, "p99": p99, "p999": p99, "max": p99});
        let ms: Vec<serde_json::Value> = mixes
            .iter()
            .enumerate()
            .map(|(i, (threads, rate, p99, seconds))| {
                let per_second: Vec<serde_json::Value> = seconds
                    .iter()
                    .enumerate()
                    .map(|(s, r)| {
                        json!({"second": s + 1, "in_window": true, "requests": r, "errors": 0,
                        "bytes": 0, "connections_opened": 0, "latency_p50_us": 1, "latency_p99_us": p99})
                    })
                    .collect();
                json!({
                    "mix": i + 1, "phase": "p", "clients": 1, "clients_participating": 1, "threads": threads,
                    "partial": false, "window_s": 10.0, "requests": 1, "requests_per_sec": rate,
                    "bytes": 0, "bytes_per_sec": 0.0, "mbit_per_sec": 0.0, "body_bytes": 0, "error_bytes": 0,
                    "errors": {}, "errors_total": 0, "latency_us": latency(*p99), "error_latency_us": latency(0),
                    "reconnects": 0, "in_flight": 0, "connections_opened": 1, "tls_full_handshakes": 0,
                    "tls_resumptions": 0, "client_cpu_s": 0.0,
                    "params": {"delay_s": 0.0, "ramp_up_s": 0.0, "ramp_down_s": 0.0, "length_s": 10.0,
                        "think_time_s": 0.0, "threads_per_client": threads, "receive_buffer": 65536,
                        "http10_percent": 0, "http10_keepalive": false, "persistent_percent": 100,
                        "requests_per_connection": null, "timeout_s": 5.0, "workload": "w", "target": "t"},
                    "client_data": [], "classes": [], "per_second": per_second,
                    "histograms": {"latency_us": "", "error_latency_us": "", "classes": {}}
                })
            })
            .collect();
        let results = serde_json::from_value(json!({
            "schema": "benchlab.results/1",
            "suite": {"name": "s", "description": "", "file": "s.toml", "seed": 1, "max_clients": null, "text": ""},
            "environment": {"benchlab_version": "0", "host": "h", "kernel": "k", "cpu": "c", "cores": 2,
                "target": "t", "started_unix": 0, "command": [], "time_scale": 1.0},
            "phases": [{"name": "p", "workload": "w", "target": "t", "mixes": (1..=mixes.len()).collect::<Vec<_>>()}],
            "mixes": ms, "complete": true
        }))
        .expect("results");
        Run {
            label: label.into(),
            dir: ".".into(),
            results,
        }
    }

    #[test]
    fn the_seconds_inside_the_window_are_the_noise_of_a_mix_run_once() {
        // A noisy BASE and NEW 10 % lower: within the noise of the seconds.
        let noisy: &[u64] = &[700, 1300, 800, 1200, 1000];
        let base = run("base", &[(4, 1000.0, 5000, noisy)]);
        let lower: &[u64] = &[630, 1170, 720, 1080, 900];
        let new = run("new", &[(4, 900.0, 5000, lower)]);
        let c = compare_runs(&base, &new, 0.05);
        let p = &c.phases[0];
        assert_eq!(p.peak_check.verdict, Verdict::Unchanged, "{p:?}");
        assert_eq!(p.peak_check.base_samples.source, NoiseSource::Seconds);
        assert_eq!(p.peak_check.base_samples.count, 5);
        assert!(!c.regressed());
        // Quiet seconds: the same 10 % is a regression.
        let quiet: &[u64] = &[1000, 1010, 990, 1000, 1000];
        let quiet_lower: &[u64] = &[900, 910, 890, 900, 900];
        let c = compare_runs(
            &run("base", &[(4, 1000.0, 5000, quiet)]),
            &run("new", &[(4, 900.0, 5000, quiet_lower)]),
            0.05,
        );
        assert!(c.regressed(), "{c:?}");
        assert!(c.regressions[0].starts_with("phase p: peak"), "{:?}", c.regressions);
    }

    #[test]
    fn p99_is_compared_where_new_does_the_same_work() {
        let q: &[u64] = &[100, 101, 99];
        // BASE peaks at 8 threads (200/s, p99 40 ms). NEW is 3× faster: at 8
        // threads it serves 600/s with a p99 of 60 ms (more work); its
        // lightest load reaching 200/s is 4 threads, p99 13 ms.
        let base = run("base", &[(4, 100.0, 40_000, q), (8, 200.0, 40_000, q)]);
        let new = run("new", &[(4, 300.0, 13_000, q), (8, 600.0, 60_000, q)]);
        let c = compare_runs(&base, &new, 0.05);
        let p = &c.phases[0];
        assert_eq!(p.p99_basis, P99Basis::MatchedThroughput);
        assert_eq!((p.new_p99_mix, p.new_p99_us), (1, 13_000));
        assert_eq!(p.p99_check.verdict, Verdict::Improved);
        assert_eq!(p.peak_check.verdict, Verdict::Improved);
        assert!(!c.regressed() && c.improvements.len() == 2, "{c:?}");
        // The same load, where NEW does no more work: compared there.
        let same = run("new", &[(4, 100.0, 40_000, q), (8, 199.0, 80_000, q)]);
        let c = compare_runs(&base, &same, 0.05);
        assert_eq!(c.phases[0].p99_basis, P99Basis::SameLoad);
        assert!(
            c.phases[0].p99_regressed && c.regressions[0].contains("p99 at the peak load"),
            "{c:?}"
        );
    }

    /// Mix `i` of `r` monitored with this verdict, on a host of `role`.
    fn monitored(r: &mut Run, i: usize, role: HostRole, limit: Limit, client_saturated: bool) {
        use benchlab_results::resources::{HostResources, MixResources, Verdict as Said};
        r.results.mixes[i].resources = Some(MixResources {
            hosts: vec![HostResources {
                host: "box".into(),
                role,
                source: "local".into(),
                seconds: Vec::new(),
                average: None,
                context_switches_per_request: None,
            }],
            verdict: Said {
                limit,
                summary: String::new(),
                evidence: Vec::new(),
                client_saturated,
            },
        });
    }

    #[test]
    fn client_bound_and_co_located_mixes_are_compared_but_never_gate() {
        let q: &[u64] = &[1000, 1000, 1000];
        let base = run("base", &[(8, 1000.0, 10_000, q)]);
        let new = run("new", &[(8, 1000.0, 16_800, q)]);
        let c = compare_runs(&base, &new, 0.05);
        assert!(c.regressed() && c.phases[0].p99_regressed, "{c:?}");
        assert_eq!((c.mixes[0].not_gated.as_deref(), c.not_gated.len()), (None, 0));
        // Either run's verdict on one box: co-located.
        for side in 0..2 {
            let (mut b, mut n) = (base.clone(), new.clone());
            let r = if side == 0 { &mut b } else { &mut n };
            monitored(r, 0, HostRole::ServerAndClient, Limit::Software, false);
            let c = compare_runs(&b, &n, 0.05);
            assert!(!c.regressed(), "{c:?}");
            assert!(c.phases[0].p99_regressed, "the figure is still worse: {c:?}");
            assert_eq!(c.phases[0].p99_not_gated.as_deref(), Some("co-located"));
            assert_eq!(c.mixes[0].not_gated.as_deref(), Some("co-located"));
            assert_eq!(c.not_gated.len(), 1, "{:?}", c.not_gated);
            assert!(c.not_gated[0].ends_with("not gated: co-located"), "{:?}", c.not_gated);
            assert!(
                c.notes
                    .iter()
                    .any(|n| n.starts_with("Not gated: p mix 1/1 (co-located)")),
                "{:?}",
                c.notes
            );
        }
        // A saturated generator, on its own machine: client-bound.
        let mut n = new.clone();
        monitored(&mut n, 0, HostRole::Server, Limit::ServerCpu, true);
        let c = compare_runs(&base, &n, 0.05);
        assert!(!c.regressed());
        assert_eq!(c.phases[0].p99_not_gated.as_deref(), Some("client-bound"));
        let mut n = new.clone();
        n.results.mixes[0].client_cpu.client_bound = true;
        assert_eq!(
            compare_runs(&base, &n, 0.05).mixes[0].not_gated.as_deref(),
            Some("client-bound")
        );
        // A server on its own machine, not saturated by its client: gates.
        let mut n = new.clone();
        monitored(&mut n, 0, HostRole::Server, Limit::ServerCpu, false);
        assert!(compare_runs(&base, &n, 0.05).regressed());
    }

    #[test]
    fn phases_are_matched_by_name_only() {
        let q: &[u64] = &[1000, 1000, 1000];
        let base = run("base", &[(8, 1000.0, 10_000, q)]);
        let mut new = run("new", &[(8, 500.0, 10_000, q)]);
        new.results.phases[0].name = "demo".into();
        new.results.mixes[0].phase = "demo".into();
        let c = compare_runs(&base, &new, 0.05);
        assert!(c.phases.is_empty() && c.mixes.is_empty() && !c.regressed(), "{c:?}");
        assert_eq!(
            (c.base_phases, c.new_phases),
            (vec!["p".to_string()], vec!["demo".to_string()])
        );
    }
}
