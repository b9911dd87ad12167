//! The analysis of one run, phase by phase: [`crate::analysis`]'s pure
//! functions applied to `results.json`. Each phase is analysed on its own
//! because each phase is charted against load on its own (docs/design.md) (a static
//! phase and a CGI phase are two curves, not one).

use crate::analysis::{self, Efficiency, MixPoint, Spread, UsefulLimits};
use crate::{ReportOptions, Run};
use benchlab_results::{MixResult, Results, RunKind};
use serde::Serialize;

/// What a phase requests, from its classes' kinds: SPICE efficiency compares
/// a dynamic phase with a static one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PhaseKind {
    /// Every class is `static`.
    Static,
    /// Every class is `dynamic` (through an SPI).
    Dynamic,
    /// Anything else (static with dynamic, TLS …).
    Mixed,
}

/// One mix picked out as a peak, with the numbers that locate it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PeakInfo {
    pub mix: usize,
    pub threads: u64,
    pub clients: u32,
    pub clients_participating: u32,
    pub requests_per_sec: f64,
    pub bytes_per_sec: f64,
    /// Wire (web) or read + written (file) Mbit/s: a file suite's lead
    /// figure, by which its peaks are found.
    pub mbit_per_sec: f64,
    pub latency_mean_us: f64,
    pub p99_us: u64,
    /// The offered rate of an open-loop mix (its threads are 0: the
    /// schedule sets the load).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offered_rate: Option<f64>,
}

impl PeakInfo {
    fn of(m: &MixResult) -> PeakInfo {
        PeakInfo {
            mix: m.mix,
            threads: m.threads,
            clients: m.clients,
            clients_participating: m.clients_participating,
            requests_per_sec: m.figures.requests_per_sec,
            bytes_per_sec: m.figures.bytes_per_sec,
            mbit_per_sec: m.figures.mbit_per_sec,
            latency_mean_us: m.figures.latency_us.mean,
            p99_us: m.figures.latency_us.p99,
            offered_rate: m.open_loop.as_ref().map(|ol| ol.rate),
        }
    }
}

/// A client whose rate is outside the tolerance of the mix's median client
/// rate.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FlaggedClient {
    pub client: u32,
    pub requests_per_sec: f64,
    /// Its rate ÷ the median client rate (`None` when the median is 0).
    pub ratio: Option<f64>,
}

/// Fairness across the clients of one mix.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MixFairness {
    pub mix: usize,
    pub threads: u64,
    pub clients_participating: u32,
    /// Spread of participating clients' requests/s.
    pub rate: Option<Spread>,
    /// Spread of participating clients' mean latency (µs).
    pub latency: Option<Spread>,
    pub flagged: Vec<FlaggedClient>,
    /// Clients taken out of the mix (they could not connect at all).
    pub taken_out: Vec<u32>,
    /// No client flagged and none taken out.
    pub equal: bool,
}

/// Whether a mix counts towards the useful peak, and why not.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MixUseful {
    pub mix: usize,
    pub threads: u64,
    pub point: MixPoint,
    pub reasons: Vec<String>,
}

/// One phase of a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PhaseAnalysis {
    pub name: String,
    pub workload: String,
    pub target: String,
    pub kind: PhaseKind,
    /// The SPI of a dynamic phase (when its classes name one).
    pub spi: Option<String>,
    /// Mix numbers, in order.
    pub mixes: Vec<usize>,
    /// Highest requests/s.
    pub peak: Option<PeakInfo>,
    /// Highest bytes/s (may be another mix than the requests/s peak).
    pub peak_throughput: Option<PeakInfo>,
    /// Requests/s of the last mix ÷ the peak.
    pub kept_at_last: Option<f64>,
    pub last_mix: Option<PeakInfo>,
    /// Lowest requests/s after the peak ÷ the peak, and that mix.
    pub lowest_after_peak: Option<f64>,
    pub lowest_mix: Option<PeakInfo>,
    /// Lowest share after the peak below the collapse threshold.
    pub collapsed: bool,
    pub fairness: Vec<MixFairness>,
    pub useful: Vec<MixUseful>,
    pub useful_peak: Option<PeakInfo>,
    /// System price in dollars and dollars per peak request/s.
    pub price: Option<f64>,
    pub price_per_rps: Option<f64>,
    /// For mixed phases: each dynamic class's latency efficiency within the
    /// same mix, at the peak and at the highest load.
    pub class_latency: Vec<ClassLatencyRatio>,
}

/// SPICE efficiency at one point (seed 001): one static mix against one
/// SPICE mix.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EfficiencyPoint {
    pub static_mix: usize,
    pub static_threads: u64,
    pub spice_mix: usize,
    pub spice_threads: u64,
    pub static_rate: f64,
    pub spice_rate: f64,
    pub static_latency_mean_us: f64,
    pub spice_latency_mean_us: f64,
    pub request: Option<f64>,
    pub latency: Option<f64>,
}

/// SPICE efficiency of a dynamic phase against the static baseline phase, at
/// each one's peak and at each one's highest load (seed 001).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PhaseEfficiency {
    pub static_phase: String,
    pub phase: String,
    pub spi: Option<String>,
    pub at_peak: Option<EfficiencyPoint>,
    pub at_highest_load: Option<EfficiencyPoint>,
    /// At equal load: the static and the SPICE mix with the same threads
    /// (the most threads both phases ran), so neither side is charged for
    /// running more users than the other.
    pub at_equal_load: Option<EfficiencyPoint>,
}

/// In a phase that mixes static and dynamic classes, a dynamic class's mean
/// latency against the static classes' in the same mix (static ÷ dynamic,
/// seed 001's latency efficiency taken inside one mix). Request efficiency
/// is not defined there: the classes' rates follow their configured shares.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClassLatencyRatio {
    /// "peak" or "highest load".
    pub at: String,
    pub mix: usize,
    pub threads: u64,
    pub class: String,
    pub spi: Option<String>,
    /// Request-weighted mean latency of the mix's static classes, µs.
    pub static_latency_mean_us: f64,
    pub class_latency_mean_us: f64,
    pub latency_efficiency: Option<f64>,
}

/// The whole analysis of one run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunAnalysis {
    pub label: String,
    pub phases: Vec<PhaseAnalysis>,
    /// The static phase SPICE efficiency is measured against.
    pub static_baseline: Option<String>,
    pub efficiency: Vec<PhaseEfficiency>,
    /// Things a reader must know (incomplete run, partial mixes, clients
    /// taken out).
    pub notes: Vec<String>,
}

/// The phases of a run in order, each with its mixes (grouped by the mix's
/// `phase`, so a run still in progress or an odd file still reads).
pub(crate) fn phase_mixes(r: &Results) -> Vec<(String, Vec<&MixResult>)> {
    let mut names: Vec<String> = r.phases.iter().map(|p| p.name.clone()).collect();
    for m in &r.mixes {
        if !names.contains(&m.phase) {
            names.push(m.phase.clone());
        }
    }
    names
        .into_iter()
        .map(|n| {
            let ms: Vec<&MixResult> = r.mixes.iter().filter(|m| m.phase == n).collect();
            (n, ms)
        })
        .filter(|(_, ms)| !ms.is_empty())
        .collect()
}

fn phase_kind(name: &str, mixes: &[&MixResult]) -> (PhaseKind, Option<String>) {
    let kinds: Vec<&str> = mixes
        .iter()
        .flat_map(|m| m.classes.iter().map(|c| c.kind.as_str()))
        .collect();
    let spi = mixes.iter().flat_map(|m| m.classes.iter()).find_map(|c| c.spi.clone());
    if kinds.is_empty() {
        // No class information: fall back on the phase name.
        let kind = if name == "static" {
            PhaseKind::Static
        } else {
            PhaseKind::Mixed
        };
        return (kind, None);
    }
    if kinds.iter().all(|k| *k == "static") {
        (PhaseKind::Static, None)
    } else if kinds.iter().all(|k| *k == "dynamic") {
        (PhaseKind::Dynamic, spi)
    } else {
        (PhaseKind::Mixed, None)
    }
}

/// Failed ÷ (successful + failed) requests of a mix.
pub(crate) fn error_share(m: &MixResult) -> f64 {
    // A file mix's operations count those answered other than expected
    // (docs/counting.md, "File suites"); a web mix's requests do not.
    let done = match m.kind() {
        RunKind::File => m.figures.requests,
        RunKind::Web => m.figures.requests + m.figures.errors_total,
    };
    if done == 0 {
        0.0
    } else {
        m.figures.errors_total as f64 / done as f64
    }
}

fn fairness(m: &MixResult, tolerance: f64) -> MixFairness {
    let part: Vec<_> = m.client_data.iter().filter(|c| !c.taken_out).collect();
    // A file mix's clients are compared by their Mbit/s, its lead figure.
    let rates: Vec<f64> = part
        .iter()
        .map(|c| match m.kind() {
            RunKind::File => c.figures.mbit_per_sec,
            RunKind::Web => c.figures.requests_per_sec,
        })
        .collect();
    let lats: Vec<f64> = part
        .iter()
        .filter(|c| c.figures.requests > 0)
        .map(|c| c.figures.latency_us.mean)
        .collect();
    let ratios = analysis::client_ratios(&rates);
    let flagged: Vec<FlaggedClient> = analysis::unequal_clients(&rates, tolerance)
        .into_iter()
        .map(|i| FlaggedClient {
            client: part[i].client,
            requests_per_sec: rates[i],
            ratio: ratios.get(i).copied().flatten(),
        })
        .collect();
    let taken_out: Vec<u32> = m.client_data.iter().filter(|c| c.taken_out).map(|c| c.client).collect();
    MixFairness {
        mix: m.mix,
        threads: m.threads,
        clients_participating: m.clients_participating,
        rate: analysis::spread(&rates),
        latency: analysis::spread(&lats),
        equal: flagged.is_empty() && taken_out.is_empty(),
        flagged,
        taken_out,
    }
}

/// Whether a mix lost clients mid-run (a remote agent gone).
fn clients_lost(m: &MixResult) -> bool {
    m.client_data.iter().any(|c| c.lost.is_some())
}

fn analyze_phase(
    r: &Results,
    name: &str,
    mixes: &[&MixResult],
    price: Option<f64>,
    o: &ReportOptions,
) -> PhaseAnalysis {
    let info = r.phases.iter().find(|p| p.name == name);
    let (kind, spi) = phase_kind(name, mixes);
    // Peaks by the lead figure: requests/s, or Mbit/s for a file suite.
    let rates: Vec<f64> = mixes.iter().map(|m| m.lead_rate()).collect();
    let bytes: Vec<f64> = mixes.iter().map(|m| m.figures.bytes_per_sec).collect();
    // A mix whose clients were lost measured its clients, not the server:
    // it is never read as the server's collapse.
    let lost: Vec<bool> = mixes.iter().map(|m| clients_lost(m)).collect();
    let shape = analysis::shape_of_whole_mixes(&rates, &lost);
    let peak = analysis::peak_index(&rates).map(|i| PeakInfo::of(mixes[i]));
    let peak_throughput = analysis::peak_index(&bytes).map(|i| PeakInfo::of(mixes[i]));
    let fair: Vec<MixFairness> = mixes.iter().map(|m| fairness(m, o.fairness_tolerance)).collect();
    let limits = UsefulLimits {
        latency_limit_us: o.latency_limit_us,
        max_error_share: o.max_error_share,
    };
    let points: Vec<MixPoint> = mixes
        .iter()
        .zip(&fair)
        .map(|(m, f)| MixPoint {
            rate: m.lead_rate(),
            p99_us: m.figures.latency_us.p99,
            clients_equal: f.equal,
            error_share: error_share(m),
        })
        .collect();
    let useful_peak = analysis::useful_peak(&points, &limits).map(|i| PeakInfo::of(mixes[i]));
    let useful = mixes
        .iter()
        .zip(points)
        .map(|(m, p)| MixUseful {
            mix: m.mix,
            threads: m.threads,
            reasons: analysis::useful_exclusions(&p, &limits)
                .into_iter()
                .map(String::from)
                .collect(),
            point: p,
        })
        .collect();
    let price_per_rps = match (price, &peak) {
        (Some(p), Some(pk)) if pk.requests_per_sec > 0.0 => Some(p / pk.requests_per_sec),
        _ => None,
    };
    let class_latency = if kind == PhaseKind::Mixed {
        class_latency(mixes, &rates)
    } else {
        Vec::new()
    };
    PhaseAnalysis {
        name: name.to_string(),
        workload: info
            .map(|p| p.workload.clone())
            .unwrap_or_else(|| mixes[0].params.workload.clone()),
        target: info
            .map(|p| p.target.clone())
            .unwrap_or_else(|| mixes[0].params.target.clone()),
        kind,
        spi,
        mixes: mixes.iter().map(|m| m.mix).collect(),
        kept_at_last: shape.as_ref().map(|s| s.kept_at_last),
        last_mix: mixes
            .iter()
            .zip(&lost)
            .rev()
            .find(|(_, l)| !**l)
            .map(|(m, _)| PeakInfo::of(m)),
        lowest_after_peak: shape.as_ref().and_then(|s| s.lowest_after_peak),
        lowest_mix: shape
            .as_ref()
            .and_then(|s| s.lowest_index)
            .map(|i| PeakInfo::of(mixes[i])),
        collapsed: analysis::collapsed(shape.as_ref().and_then(|s| s.lowest_after_peak), o.collapse_share),
        peak,
        peak_throughput,
        fairness: fair,
        useful,
        useful_peak,
        price,
        price_per_rps,
        class_latency,
    }
}

fn class_latency(mixes: &[&MixResult], rates: &[f64]) -> Vec<ClassLatencyRatio> {
    let threads: Vec<u64> = mixes.iter().map(|m| m.threads).collect();
    let mut out = Vec::new();
    let picks = [
        ("peak", analysis::peak_index(rates)),
        ("highest load", analysis::highest_load_index(&threads)),
    ];
    for (at, idx) in picks {
        let Some(i) = idx else { continue };
        let m = mixes[i];
        let statics: Vec<_> = m
            .classes
            .iter()
            .filter(|c| c.kind == "static" && c.figures.requests > 0)
            .collect();
        let n: u64 = statics.iter().map(|c| c.figures.requests).sum();
        if n == 0 {
            continue;
        }
        let static_mean = statics
            .iter()
            .map(|c| c.figures.latency_us.mean * c.figures.requests as f64)
            .sum::<f64>()
            / n as f64;
        for c in m.classes.iter().filter(|c| c.kind == "dynamic") {
            let e = analysis::efficiency(0.0, static_mean, 0.0, c.figures.latency_us.mean);
            out.push(ClassLatencyRatio {
                at: at.to_string(),
                mix: m.mix,
                threads: m.threads,
                class: c.name.clone(),
                spi: c.spi.clone(),
                static_latency_mean_us: static_mean,
                class_latency_mean_us: c.figures.latency_us.mean,
                latency_efficiency: if c.figures.requests > 0 { e.latency } else { None },
            });
        }
    }
    out
}

fn efficiency_point(st: &MixResult, sp: &MixResult) -> EfficiencyPoint {
    let Efficiency { request, latency } = analysis::efficiency(
        st.figures.requests_per_sec,
        st.figures.latency_us.mean,
        sp.figures.requests_per_sec,
        sp.figures.latency_us.mean,
    );
    EfficiencyPoint {
        static_mix: st.mix,
        static_threads: st.threads,
        spice_mix: sp.mix,
        spice_threads: sp.threads,
        static_rate: st.figures.requests_per_sec,
        spice_rate: sp.figures.requests_per_sec,
        static_latency_mean_us: st.figures.latency_us.mean,
        spice_latency_mean_us: sp.figures.latency_us.mean,
        request,
        latency,
    }
}

fn pick<'a>(mixes: &[&'a MixResult], at_peak: bool) -> Option<&'a MixResult> {
    let i = if at_peak {
        let rates: Vec<f64> = mixes.iter().map(|m| m.figures.requests_per_sec).collect();
        analysis::peak_index(&rates)
    } else {
        let threads: Vec<u64> = mixes.iter().map(|m| m.threads).collect();
        analysis::highest_load_index(&threads)
    }?;
    Some(mixes[i])
}

/// The static and the SPICE mix at the same load: the most threads both
/// phases ran (closed loops), or the highest offered rate both ran (open
/// loops); the first static mix at that load.
fn equal_load<'a>(statics: &[&'a MixResult], spice: &[&'a MixResult]) -> Option<(&'a MixResult, &'a MixResult)> {
    let load = |m: &MixResult| match &m.open_loop {
        Some(ol) => (1, ol.rate),
        None => (0, m.threads as f64),
    };
    spice
        .iter()
        .filter_map(|sp| statics.iter().find(|st| load(st) == load(sp)).map(|st| (*st, *sp)))
        .max_by(|a, b| load(a.1).1.total_cmp(&load(b.1).1))
}

/// Analyses every phase of `run`, then SPICE efficiency of each dynamic
/// phase against the static baseline.
pub fn analyze_run(run: &Run, o: &ReportOptions) -> RunAnalysis {
    let r = &run.results;
    let groups = phase_mixes(r);
    // `--price` wins; else the price the suite states.
    let price = o.price_for(&run.label).or(run.results.suite.price);
    let phases: Vec<PhaseAnalysis> = groups.iter().map(|(n, ms)| analyze_phase(r, n, ms, price, o)).collect();
    let baseline = match &o.static_phase {
        Some(n) => phases.iter().find(|p| &p.name == n),
        None => phases.iter().find(|p| p.kind == PhaseKind::Static),
    };
    let mut efficiency = Vec::new();
    if let Some(b) = baseline {
        let static_mixes: &[&MixResult] = groups
            .iter()
            .find(|(n, _)| *n == b.name)
            .map(|(_, ms)| ms.as_slice())
            .unwrap_or(&[]);
        for (p, (_, ms)) in phases.iter().zip(&groups) {
            if p.kind != PhaseKind::Dynamic || p.name == b.name {
                continue;
            }
            let point = |at_peak: bool| match (pick(static_mixes, at_peak), pick(ms, at_peak)) {
                (Some(st), Some(sp)) => Some(efficiency_point(st, sp)),
                _ => None,
            };
            efficiency.push(PhaseEfficiency {
                static_phase: b.name.clone(),
                phase: p.name.clone(),
                spi: p.spi.clone(),
                at_peak: point(true),
                at_highest_load: point(false),
                at_equal_load: equal_load(static_mixes, ms).map(|(st, sp)| efficiency_point(st, sp)),
            });
        }
    }
    let mut notes = Vec::new();
    if !r.complete {
        notes.push(format!(
            "The run is not complete (still running, or stopped): {} mix(es) so far.",
            r.mixes.len()
        ));
    }
    for m in r.mixes.iter().filter(|m| m.partial) {
        notes.push(format!(
            "Mix {} is partial: measured over {} s of its window (stopped early, or seconds of its clients \
             missing).",
            m.mix, m.window_s
        ));
    }
    for m in r.mixes.iter().filter(|m| clients_lost(m)) {
        let lost: Vec<String> = m
            .client_data
            .iter()
            .filter(|c| c.lost.is_some())
            .map(|c| c.client.to_string())
            .collect();
        notes.push(format!(
            "Mix {}: client(s) {} were lost (their agent gone); the mix measured its clients, not the server, \
             and is left out of the peak and the shape past it (never read as a collapse).",
            m.mix,
            lost.join(", ")
        ));
    }
    for m in r.mixes.iter().filter(|m| m.clients_participating < m.clients) {
        notes.push(format!(
            "Mix {}: only {} of {} clients took part (the others could not connect and were taken out; their errors are counted).",
            m.mix, m.clients_participating, m.clients
        ));
    }
    if let (Some(n), None) = (&o.static_phase, baseline) {
        notes.push(format!("No phase named {n:?}: SPICE efficiency not computed."));
    }
    RunAnalysis {
        label: run.label.clone(),
        static_baseline: baseline.map(|b| b.name.clone()),
        phases,
        efficiency,
        notes,
    }
}
