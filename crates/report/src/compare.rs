//! `benchlab compare BASE NEW`: ratios per mix and the regression check a CI
//! pipeline runs. Mixes are matched by phase, threads and clients (not by
//! number) so that two suites that differ by a mix still line up; phases by
//! name.

use crate::analysis;
use crate::analyze::phase_mixes;
use crate::Run;
use benchlab_controller::MixResult;
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
    /// p99 at BASE's peak mix in BASE, and at the same load (phase, threads,
    /// clients) in NEW — or at NEW's own peak mix when NEW has no such mix.
    pub base_p99_us: u64,
    pub new_p99_mix: usize,
    pub new_p99_us: u64,
    pub p99_ratio: Option<f64>,
    pub peak_regressed: bool,
    pub p99_regressed: bool,
}

/// BASE against NEW.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    pub base: String,
    pub new: String,
    /// Largest allowed regression, a fraction.
    pub max_regression: f64,
    pub mixes: Vec<MixRatio>,
    pub phases: Vec<PhaseComparison>,
    /// Why NEW is worse than BASE beyond the limit, one line each; empty
    /// when it is not.
    pub regressions: Vec<String>,
    /// Phases only one run has, different suites.
    pub notes: Vec<String>,
}

impl Comparison {
    /// NEW is worse than BASE beyond the limit.
    pub fn regressed(&self) -> bool {
        !self.regressions.is_empty()
    }
}

fn same_load(a: &MixResult, b: &MixResult) -> bool {
    a.threads == b.threads && a.clients == b.clients
}

fn pct(x: f64) -> String {
    format!("{:+.1} %", (x - 1.0) * 100.0)
}

/// Compares NEW with BASE: ratios for every mix at the same load, and per
/// phase the peak requests/s and the p99 latency at BASE's peak load. NEW
/// regressed when its peak is lower than BASE's by more than
/// `max_regression`, or its p99 there higher by more than `max_regression`.
pub fn compare_runs(base: &Run, new: &Run, max_regression: f64) -> Comparison {
    let bp = phase_mixes(&base.results);
    let np = phase_mixes(&new.results);
    let mut notes = Vec::new();
    if base.results.suite.text != new.results.suite.text {
        notes.push(format!(
            "The suites differ ({} vs {}): mixes are matched by phase, threads and clients.",
            base.results.suite.name, new.results.suite.name
        ));
    }
    // With a single phase each but different names, compare them anyway.
    let pairs: Vec<(&String, &Vec<&MixResult>, &Vec<&MixResult>)> = if bp.len() == 1 && np.len() == 1 {
        vec![(&bp[0].0, &bp[0].1, &np[0].1)]
    } else {
        bp.iter()
            .filter_map(|(n, b)| np.iter().find(|(m, _)| m == n).map(|(_, nm)| (n, b, nm)))
            .collect()
    };
    for (n, _) in &bp {
        if !np.iter().any(|(m, _)| m == n) && pairs.len() > 1 {
            notes.push(format!("Phase {n:?} is only in {}.", base.label));
        }
    }
    for (n, _) in &np {
        if !bp.iter().any(|(m, _)| m == n) && pairs.len() > 1 {
            notes.push(format!("Phase {n:?} is only in {}.", new.label));
        }
    }
    let mut mixes = Vec::new();
    let mut phases = Vec::new();
    let mut regressions = Vec::new();
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
            });
        }
        let br: Vec<f64> = bm.iter().map(|m| m.figures.requests_per_sec).collect();
        let nr: Vec<f64> = nm.iter().map(|m| m.figures.requests_per_sec).collect();
        let (Some(bi), Some(ni)) = (analysis::peak_index(&br), analysis::peak_index(&nr)) else {
            continue;
        };
        let (b, n) = (bm[bi], nm[ni]);
        let n99 = nm.iter().find(|m| same_load(b, m)).copied().unwrap_or(n);
        let (bp99, np99) = (b.figures.latency_us.p99, n99.figures.latency_us.p99);
        let (peak_regressed, p99_regressed) = analysis::regressed(br[bi], nr[ni], bp99, np99, max_regression);
        let peak_ratio = analysis::ratio(nr[ni], br[bi]);
        let p99_ratio = analysis::ratio(np99 as f64, bp99 as f64);
        if peak_regressed {
            regressions.push(format!(
                "phase {name}: peak {} requests/s (mix {}) → {} requests/s (mix {}), {} — beyond the −{:.1} % limit",
                benchlab_format::requests_per_sec(br[bi]),
                b.mix,
                benchlab_format::requests_per_sec(nr[ni]),
                n.mix,
                peak_ratio.map(pct).unwrap_or_else(|| "n/a".into()),
                max_regression * 100.0
            ));
        }
        if p99_regressed {
            regressions.push(format!(
                "phase {name}: p99 at the peak load ({}) {} µs (mix {}) → {} µs (mix {}), {} — beyond the +{:.1} % limit",
                benchlab_format::plural(b.threads, "thread", "threads"),
                benchlab_format::thousands(bp99),
                b.mix,
                benchlab_format::thousands(np99),
                n99.mix,
                p99_ratio.map(pct).unwrap_or_else(|| "n/a".into()),
                max_regression * 100.0
            ));
        }
        phases.push(PhaseComparison {
            phase: name.clone(),
            base_peak_mix: b.mix,
            base_peak: br[bi],
            new_peak_mix: n.mix,
            new_peak: nr[ni],
            peak_ratio,
            base_p99_us: bp99,
            new_p99_mix: n99.mix,
            new_p99_us: np99,
            p99_ratio,
            peak_regressed,
            p99_regressed,
        });
    }
    if phases.is_empty() {
        notes.push("No phase in common: nothing to compare.".into());
    }
    Comparison {
        base: base.label.clone(),
        new: new.label.clone(),
        max_regression,
        mixes,
        phases,
        regressions,
        notes,
    }
}
