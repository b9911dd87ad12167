//! benchlab's reports: from one or several results directories (several are
//! shown side by side, as the seeds compare NT with Linux on one chart) it
//! writes `report.html` — one self-contained page with inline SVG charts,
//! the analysis in words and numbers, the summary and client data reports as
//! tables and the full configuration disclosure — and `report.xlsx`.
//!
//! Everything shown is computed from `results.json` (schema
//! `benchlab.results/1`); the analysis definitions live in [`analysis`] as
//! pure functions and are stated on the page itself.

pub mod analysis;
mod analyze;
mod chart;
mod compare;
pub mod gates;
mod html;
pub mod trend;
mod xlsx;

pub use analyze::{
    analyze_run, ClassLatencyRatio, EfficiencyPoint, FlaggedClient, MixFairness, MixUseful, PeakInfo, PhaseAnalysis,
    PhaseEfficiency, PhaseKind, RunAnalysis,
};
pub use benchlab_results::load::LoadError;
pub use compare::{
    check_text, compare_runs, compare_runs_at, ratio_interval, Check, Comparison, MixRatio, NoiseSource, P99Basis,
    PhaseComparison, Samples, DEFAULT_CONFIDENCE,
};
pub use xlsx::{write_xlsx, write_xlsx_with};

use benchlab_results::{Results, CLIENT_BOUND_SHARE};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One run to report: its label on charts and tables, the results directory
/// it came from, and its `results.json`.
#[derive(Debug, Clone)]
pub struct Run {
    pub label: String,
    pub dir: PathBuf,
    pub results: Results,
}

/// The analysis limits and the optional inputs of a report. Defaults are the
/// ones stated on the page: fairness tolerance ±20 % of the median client
/// rate, p99 latency limit 1 s, error limit 1 %, collapse below 50 % of the
/// peak.
#[derive(Debug, Clone, PartialEq)]
pub struct ReportOptions {
    /// A client is served unequally when its rate is outside ±this fraction
    /// of the mix's median client rate.
    pub fairness_tolerance: f64,
    /// p99 latency limit for the useful peak, microseconds.
    pub latency_limit_us: u64,
    /// Highest error share (failed ÷ completed) for the useful peak.
    pub max_error_share: f64,
    /// A lowest share after the peak below this is flagged as a collapse.
    pub collapse_share: f64,
    /// System price in dollars for every run without its own entry in
    /// `prices` (price/performance = price ÷ peak requests/s).
    pub price: Option<f64>,
    /// System price per run label.
    pub prices: BTreeMap<String, f64>,
    /// The phase SPICE efficiency takes as its static baseline; default:
    /// the first phase whose classes are all static.
    pub static_phase: Option<String>,
    /// With exactly two runs (base, new): add the comparison section, with
    /// this largest allowed regression (a fraction, 0.05 = 5 %).
    pub compare_max_regression: Option<f64>,
    /// The confidence of the comparison's noise intervals (0.95 = 95 %).
    pub compare_confidence: f64,
}

impl Default for ReportOptions {
    fn default() -> Self {
        ReportOptions {
            fairness_tolerance: 0.2,
            latency_limit_us: 1_000_000,
            max_error_share: 0.01,
            collapse_share: 0.5,
            price: None,
            prices: BTreeMap::new(),
            static_phase: None,
            compare_max_regression: None,
            compare_confidence: compare::DEFAULT_CONFIDENCE,
        }
    }
}

impl ReportOptions {
    /// The system price of the run labelled `label`, if one was given.
    pub fn price_for(&self, label: &str) -> Option<f64> {
        self.prices.get(label).copied().or(self.price)
    }
}

/// What the load generator's CPU says about a run's figures, in words: a
/// note naming the client-bound mixes, one naming the mixes whose server
/// shared the generator's saturated machine (when not already client-bound),
/// or, when neither happened, a line saying so. Empty for results written
/// before the generator's CPU was recorded. The terminal, the HTML headline
/// and the workbook's Summary sheet all show these same lines.
pub fn generator_notes(results: &Results) -> Vec<String> {
    if results.mixes.iter().all(|m| m.client_cpu.cores == 0) {
        return Vec::new();
    }
    let bound: Vec<usize> = results
        .mixes
        .iter()
        .filter(|m| m.client_cpu.client_bound)
        .map(|m| m.mix)
        .collect();
    let co_located: Vec<usize> = results
        .mixes
        .iter()
        .filter(|m| m.client_cpu.co_located_saturated && !m.client_cpu.client_bound)
        .map(|m| m.mix)
        .collect();
    let notes: Vec<String> = analysis::client_bound_note(&bound, CLIENT_BOUND_SHARE)
        .into_iter()
        .chain(analysis::co_located_note(&co_located, CLIENT_BOUND_SHARE))
        .collect();
    if notes.is_empty() {
        vec![format!(
            "No mix was client-bound: the load generator stayed at or below {} of its CPU cores in every mix{}.",
            benchlab_format::share(CLIENT_BOUND_SHARE),
            if results.mixes.iter().any(|m| m.client_cpu.machine_busy.is_some()) {
                ", and no server on its machine had to share saturated CPUs with it"
            } else {
                ""
            }
        )]
    } else {
        notes
    }
}

/// Reads `DIR/results.json` (or the file itself when `dir` names a JSON
/// file) into a [`Run`] labelled with the directory's name, through the one
/// loader ([`benchlab_results::load::load`]): results of older schemas
/// (a file suite's `benchlab.file-results/1`, `benchlab http --json`'s
/// `benchlab.http/1` and `benchlab.http-peak/1`) are upgraded; an unknown
/// schema is refused, as a report built on misread fields would mislead.
pub fn load_run(dir: &Path) -> Result<Run, LoadError> {
    let (dir, file) = if dir.is_file() {
        (dir.parent().unwrap_or(Path::new(".")).to_path_buf(), dir.to_path_buf())
    } else {
        (dir.to_path_buf(), dir.join("results.json"))
    };
    let results = benchlab_results::load::load(&file)?;
    let label = std::fs::canonicalize(&dir)
        .ok()
        .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| results.suite.name.clone());
    Ok(Run { label, dir, results })
}

/// Makes labels unique (charts and the price flag tell runs apart by label)
/// by appending ` #2`, ` #3` … to repeats.
pub fn unique_labels(runs: &mut [Run]) {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for r in runs.iter_mut() {
        let n = seen.entry(r.label.clone()).or_insert(0);
        *n += 1;
        if *n > 1 {
            r.label = format!("{} #{}", r.label, n);
        }
    }
}

/// Renders the HTML report of `runs` as a string.
pub fn render_html(runs: &[Run], opts: &ReportOptions) -> String {
    let analyses: Vec<RunAnalysis> = runs.iter().map(|r| analyze_run(r, opts)).collect();
    let comparison = match (opts.compare_max_regression, runs) {
        (Some(max), [base, new]) => Some(compare_runs_at(base, new, max, opts.compare_confidence)),
        _ => None,
    };
    html::page(runs, &analyses, comparison.as_ref(), opts)
}

/// A report that could not be written.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("no run to report")]
    NoRun,
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The workbook could not be built or saved (rust_xlsxwriter's
    /// reason, with the sheet).
    #[error("{0}")]
    Workbook(String),
}

impl benchlab_input::Classify for ReportError {
    /// Nothing here is the user's input: the results were read already.
    fn exit_class(&self) -> benchlab_input::ExitClass {
        benchlab_input::ExitClass::CannotRun
    }
}

/// Writes `report.html` and `report.xlsx` into `out` (created if needed),
/// each atomically (temporary file, then rename) so a browser reloading the
/// page while `benchlab run` rewrites it after a mix never sees half a file.
/// Returns the files written.
pub fn write_reports(runs: &[Run], out: &Path, opts: &ReportOptions) -> Result<Vec<PathBuf>, ReportError> {
    if runs.is_empty() {
        return Err(ReportError::NoRun);
    }
    let write = |path: &Path| {
        let path = path.to_path_buf();
        move |source| ReportError::Write { path, source }
    };
    std::fs::create_dir_all(out).map_err(write(out))?;
    let mut written = Vec::new();
    let html_path = out.join("report.html");
    let tmp = out.join(".report.html.tmp");
    std::fs::write(&tmp, render_html(runs, opts)).map_err(write(&tmp))?;
    std::fs::rename(&tmp, &html_path).map_err(write(&html_path))?;
    written.push(html_path);

    let xlsx_path = out.join("report.xlsx");
    let tmp = out.join(".report.tmp.xlsx");
    let _ = std::fs::remove_file(&tmp);
    write_xlsx_with(runs, &tmp, opts)?;
    if tmp.is_file() {
        std::fs::rename(&tmp, &xlsx_path).map_err(write(&xlsx_path))?;
        written.push(xlsx_path);
    }
    Ok(written)
}

#[cfg(test)]
mod read_tests {
    use super::*;

    /// A results.json past the bound (a sparse file: no disk used) is
    /// refused naming the limit, not parsed.
    #[test]
    fn a_huge_results_file_is_refused_at_the_bound() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("results.json");
        let f = std::fs::File::create(&file).expect("create");
        f.set_len(benchlab_results::MAX_RESULTS_BYTES + 1).expect("set_len");
        let e = match load_run(dir.path()) {
            Ok(_) => panic!("a results.json past the bound was read"),
            Err(e) => e,
        };
        assert!(e.to_string().contains("larger than 256 MiB"), "{e}");
    }

    /// A file suite's results (here as benchlab 0.1 wrote them, upgraded on
    /// load).
    fn file_run(name: &str, label: &str) -> Run {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../results/tests/fixtures");
        let mut r = load_run(&dir.join(name)).unwrap_or_else(|e| panic!("{e}"));
        r.label = label.into();
        r
    }

    /// A file suite's page leads with Mbit/s: its chart, the peak in
    /// Mbit/s, and the per-operation latency table.
    #[test]
    fn a_file_suite_page_leads_with_mbit_and_has_the_operations() {
        let run = file_run("file-results-1-base.json", "files");
        let page = render_html(std::slice::from_ref(&run), &ReportOptions::default());
        assert!(page.contains("Mbit/s per mix — replay"), "no Mbit/s chart");
        assert!(page.contains("Per-operation latency — files"));
        assert!(page.contains(r#"data-operation="ReadX""#));
        assert!(page.contains(r#"data-field="peak_mbit_per_sec""#));
        // The fixture's peak: mix 2, 5.4 Mbit/s.
        assert!(page.contains("peaked at <b>5.4 Mbit/s</b>"), "peak words");
        let a = analyze_run(&run, &ReportOptions::default());
        assert_eq!(a.phases[0].peak.as_ref().map(|p| p.mix), Some(2));
        // No SMB session in the fixture: no column for one.
        assert!(!page.contains("SMB negotiated"));
    }

    /// What benchlab's SMB2 client negotiated is shown per mix.
    #[test]
    fn a_file_suite_page_shows_what_smb_negotiated() {
        let mut run = file_run("file-results-1-base.json", "files");
        let f = run.results.mixes[0].files.as_mut().expect("files");
        f.smb = Some(benchlab_results::SmbNegotiated {
            dialect: "3.1.1".into(),
            signing: "aes-gmac".into(),
            cipher: "none".into(),
        });
        let page = render_html(std::slice::from_ref(&run), &ReportOptions::default());
        assert!(page.contains("SMB negotiated"));
        assert!(page.contains(r#"data-field="files.smb">dialect 3.1.1, signing aes-gmac, cipher none<"#));
    }

    /// `compare` of two file suites reads Mbit/s against the noise of each
    /// mix's seconds.
    #[test]
    fn file_suites_compare_by_mbit() {
        let (base, new) = (
            file_run("file-results-1-base.json", "base"),
            file_run("file-results-1-new.json", "new"),
        );
        let c = compare_runs(&base, &new, 0.05);
        assert_eq!(c.phases.len(), 1);
        let p = &c.phases[0];
        let (b, n) = (
            &base.results.mixes[p.base_peak_mix - 1],
            &new.results.mixes[p.new_peak_mix - 1],
        );
        assert_eq!(
            (p.base_peak, p.new_peak),
            (b.figures.mbit_per_sec, n.figures.mbit_per_sec)
        );
        assert_eq!(
            p.peak_check.ratio,
            Some(n.figures.mbit_per_sec / b.figures.mbit_per_sec)
        );
        assert_eq!(p.peak_check.base_samples.source, NoiseSource::Seconds);
    }
}
