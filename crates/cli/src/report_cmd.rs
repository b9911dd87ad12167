//! `benchlab report` and `benchlab compare`: flags → `benchlab_report`
//! options → report.html and report.xlsx; `compare` also prints its verdict
//! and exits 3 on a regression, the check a CI pipeline runs.

use crate::{CliError, Outcome};
use benchlab_report::gates::Case;
use benchlab_report::{
    check_text, compare_runs_at, load_run, unique_labels, write_reports, P99Basis, ReportOptions, Run,
};
use clap::Args;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The analysis flags both commands share.
#[derive(Debug, Args)]
pub struct AnalysisArgs {
    /// System price in dollars for price/performance ($ per request/s at the
    /// peak): PRICE for every run, or LABEL=PRICE per run (repeatable; LABEL
    /// is a run's label or its directory's name; with compare also `base` or
    /// `new`).
    #[arg(long, value_name = "[LABEL=]PRICE")]
    price: Vec<String>,

    /// p99 latency limit for the useful peak.
    #[arg(long, value_name = "DUR", default_value = "1s", value_parser = crate::args::duration)]
    latency_limit: Duration,

    /// A client whose requests/s is outside ±this share of the mix's median
    /// client rate is served unequally (the useful peak needs none).
    #[arg(long, value_name = "PCT", default_value = "20%", value_parser = percent)]
    fairness_tolerance: f64,

    /// Highest share of failed requests a mix may have to count towards the
    /// useful peak.
    #[arg(long, value_name = "PCT", default_value = "1%", value_parser = percent)]
    max_errors: f64,

    /// A lowest share after the peak below this is flagged as a collapse.
    #[arg(long, value_name = "PCT", default_value = "50%", value_parser = percent)]
    collapse_below: f64,

    /// The phase SPICE efficiency compares dynamic phases with [default: the
    /// first phase whose classes are all static].
    #[arg(long, value_name = "PHASE")]
    static_phase: Option<String>,
}

#[derive(Debug, Args)]
#[command(after_help = "\
Writes report.html (one self-contained page: headline, analysis, charts, the \
summary and client data reports, configuration disclosure; opens in any \
browser without network) and report.xlsx. Several results directories are \
shown side by side, one colour per run.

Examples:
  benchlab report results/static-20250101-120000
  benchlab report results/nginx results/apache --out cmp --price nginx=4995 --price apache=4995")]
pub struct ReportArgs {
    /// Results directories written by `benchlab run` (each holds results.json).
    #[arg(required = true, value_name = "RESULTS_DIR")]
    dirs: Vec<PathBuf>,

    /// Where report.html and report.xlsx go [default: the results directory;
    /// required with several].
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,

    /// Label of each run on charts and tables, in the order of the
    /// directories (repeat once per directory) [default: the directory's
    /// name].
    #[arg(long, value_name = "LABEL")]
    label: Vec<String>,

    #[command(flatten)]
    analysis: AnalysisArgs,
}

#[derive(Debug, Args)]
#[command(after_help = "\
Prints, per phase, NEW's peak requests/s (Mbit/s for file suites) against BASE's, and NEW's p99 \
latency where it does BASE's work (at BASE's peak load, or, where NEW serves \
more requests/s there, at NEW's lightest load reaching BASE's peak \
requests/s), each with the interval the noise of both runs allows at \
--confidence: the spread of each mix's repeats (run --repeat N), else of its \
seconds inside the measurement window. A figure regressed only when NEW is \
worse beyond both --max-regression and that noise; one better beyond both \
is printed as improved. Writes the report of both runs side by side with \
ratios per mix. Exit status: 0 no regression; 3 regression; 1 unreadable \
results or nothing in common; 2 bad usage.")]
pub struct CompareArgs {
    /// The results directory to compare against (the reference); with
    /// --against, the results directory under test.
    #[arg(value_name = "BASE")]
    base: PathBuf,

    /// The results directory under test.
    #[arg(value_name = "NEW", required_unless_present = "against")]
    new: Option<PathBuf>,

    /// Compare the one results directory given with the last N complete
    /// runs of its suite in the history database (`last:N`), their spread
    /// as the noise (docs/history.md).
    #[arg(long, value_name = "last:N", value_parser = benchlab_history::parse_against, conflicts_with = "new")]
    against: Option<usize>,

    /// The history database of --against [default: the user's, as for
    /// `benchlab history`].
    #[arg(long, value_name = "PATH|postgres://…", requires = "against")]
    db: Option<String>,

    /// Largest allowed regression of the peak requests/s and of the p99 at
    /// the peak load, e.g. 5% (a bare number is a percentage).
    #[arg(long, value_name = "PCT", default_value = "5%", value_parser = percent)]
    max_regression: f64,

    /// Confidence of the noise interval of each ratio, e.g. 95% or 99%:
    /// higher calls fewer regressions on noisy runs.
    #[arg(long, value_name = "PCT", default_value = "95%", value_parser = confidence)]
    confidence: f64,

    /// Where report.html and report.xlsx go [default: NEW/compare].
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,

    /// Write a JUnit XML file with a test case per phase and figure
    /// compared (peak, p99): a regression fails its case, a mix that
    /// gates nothing skips it.
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,

    #[command(flatten)]
    analysis: AnalysisArgs,
}

/// `5%`, `5` (a percentage) or `0.5%` → a fraction in [0, 1].
fn percent(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let t = t.strip_suffix('%').unwrap_or(t).trim();
    let v: f64 = t
        .parse()
        .map_err(|_| format!("`{s}`: expected a percentage such as 5% or 0.5%"))?;
    if !(0.0..=100.0).contains(&v) {
        return Err(format!("`{s}`: expected a percentage from 0% to 100%"));
    }
    Ok(v / 100.0)
}

/// A confidence: a percentage above 50 % and below 100 %.
fn confidence(s: &str) -> Result<f64, String> {
    match percent(s) {
        Ok(c) if c > 0.5 && c < 1.0 => Ok(c),
        _ => Err(format!(
            "`{s}`: expected a confidence above 50% and below 100%, such as 95% or 99%"
        )),
    }
}

/// `4995`, `$4,995`, `4995.50` → dollars.
fn dollars(s: &str) -> Result<f64, String> {
    let t: String = s.trim().trim_start_matches('$').chars().filter(|c| *c != ',').collect();
    match t.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!("price `{s}`: expected dollars such as 4995 or $4,995.00")),
    }
}

fn dir_name(p: &Path) -> String {
    std::fs::canonicalize(p)
        .ok()
        .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_default()
}

/// Builds the report options, resolving `--price LABEL=PRICE` to run labels
/// (`aliases` names runs by other words, such as `base` and `new`).
fn options(a: &AnalysisArgs, runs: &[Run], aliases: &[(&str, usize)]) -> Result<ReportOptions, CliError> {
    let mut o = ReportOptions {
        fairness_tolerance: a.fairness_tolerance,
        latency_limit_us: a.latency_limit.as_micros().min(u64::MAX as u128) as u64,
        max_error_share: a.max_errors,
        collapse_share: a.collapse_below,
        static_phase: a.static_phase.clone(),
        ..ReportOptions::default()
    };
    for p in &a.price {
        // A price may itself contain no `=`; a label may.
        match p.rsplit_once('=') {
            None => {
                if o.price.is_some() {
                    return Err(CliError::Usage(format!(
                        "--price {p}: a price for every run was already given"
                    )));
                }
                o.price = Some(dollars(p).map_err(CliError::Usage)?);
            }
            Some((label, v)) => {
                let v = dollars(v).map_err(CliError::Usage)?;
                let idx = runs
                    .iter()
                    .position(|r| r.label == label)
                    .or_else(|| runs.iter().position(|r| dir_name(&r.dir) == label))
                    .or_else(|| aliases.iter().find(|(n, _)| *n == label).map(|(_, i)| *i));
                let Some(i) = idx else {
                    let labels: Vec<&str> = runs.iter().map(|r| r.label.as_str()).collect();
                    return Err(CliError::Usage(format!(
                        "--price {p}: no run labelled {label:?} (runs: {})",
                        labels.join(", ")
                    )));
                };
                o.prices.insert(runs[i].label.clone(), v);
            }
        }
    }
    Ok(o)
}

fn load(dir: &Path) -> Result<Run, CliError> {
    load_run(dir).map_err(|e| CliError::of("", e))
}

fn print_written(files: &[PathBuf]) {
    for f in files {
        println!("wrote {}", f.display());
    }
}

pub fn report(a: ReportArgs) -> Result<Outcome, CliError> {
    if !a.label.is_empty() && a.label.len() != a.dirs.len() {
        return Err(CliError::Usage(format!(
            "--label given {} for {}: give one per directory, in order",
            benchlab_format::plural(a.label.len() as u64, "time", "times"),
            benchlab_format::plural(a.dirs.len() as u64, "results directory", "results directories")
        )));
    }
    let out = match (&a.out, a.dirs.as_slice()) {
        (Some(o), _) => o.clone(),
        (None, [one]) => one.clone(),
        (None, _) => {
            return Err(CliError::Usage(
                "several results directories: say where the report goes with --out DIR".into(),
            ))
        }
    };
    let mut runs = a.dirs.iter().map(|d| load(d)).collect::<Result<Vec<_>, _>>()?;
    // A file suite leads with Mbit/s, a web suite with requests/s: one page
    // does not chart both against each other.
    if runs.windows(2).any(|w| w[0].results.kind() != w[1].results.kind()) {
        return Err(CliError::Usage(
            "file suites' results and web suites' are reported apart: give results of one kind \
             (benchlab report FILE_RUNS… --out A, then WEB_RUNS… --out B)"
                .into(),
        ));
    }
    for (r, l) in runs.iter_mut().zip(&a.label) {
        r.label = l.clone();
    }
    unique_labels(&mut runs);
    let opts = options(&a.analysis, &runs, &[])?;
    let files = write_reports(&runs, &out, &opts).map_err(|e| CliError::of("", e))?;
    print_written(&files);
    Ok(Outcome::Completed)
}

pub fn compare(a: CompareArgs) -> Result<Outcome, CliError> {
    if let Some(path) = &a.junit {
        crate::gate::check_writable(path)?;
    }
    // With --against the one directory given is NEW, and the base comes
    // from the history.
    let (mut base, mut new, base_dir, new_dir) = match (a.against, &a.new) {
        (Some(n), _) => {
            let new = load(&a.base)?;
            let db = crate::history_cmd::DbArg { db: a.db.clone() };
            let base = crate::history_cmd::baseline(&db, n, &new)?;
            let base_dir = PathBuf::from(base.label.clone());
            (base, new, base_dir, a.base.clone())
        }
        // clap waives `requires` for an arg whose requirement conflicts
        // with one given (NEW), so --db without --against is refused here.
        (None, Some(_)) if a.db.is_some() => {
            return Err(CliError::Usage(
                "--db names the history of --against last:N: without --against it does not apply".into(),
            ))
        }
        (None, Some(n)) => (load(&a.base)?, load(n)?, a.base.clone(), n.clone()),
        (None, None) => {
            return Err(CliError::Usage(
                "compare needs BASE and NEW, or --against last:N and one results directory".into(),
            ))
        }
    };
    // A file suite leads with Mbit/s, a web suite with requests/s: the two
    // measure different work.
    let kind = base.results.kind();
    if kind != new.results.kind() {
        return Err(CliError::CannotRun(format!(
            "{} and {}: one is a file suite's results, the other a web suite's: nothing to compare",
            base_dir.display(),
            new_dir.display()
        )));
    }
    let unit = match kind {
        benchlab_results::RunKind::File => "Mbit/s",
        benchlab_results::RunKind::Web => "requests/s",
    };
    let rate = |v: f64| match kind {
        benchlab_results::RunKind::File => benchlab_format::mbit_per_sec(v),
        benchlab_results::RunKind::Web => benchlab_format::requests_per_sec(v),
    };
    base.label = format!("base: {}", base.label);
    new.label = format!("new: {}", new.label);
    let runs = vec![base, new];
    let mut opts = options(&a.analysis, &runs, &[("base", 0), ("new", 1)])?;
    opts.compare_max_regression = Some(a.max_regression);
    opts.compare_confidence = a.confidence;
    let c = compare_runs_at(&runs[0], &runs[1], a.max_regression, a.confidence);
    if c.phases.is_empty() {
        let names = |v: &[String]| if v.is_empty() { "none".to_string() } else { v.join(", ") };
        return Err(CliError::CannotRun(format!(
            "{} and {} have no phase in common: nothing to compare (BASE's phases: {}; NEW's: {})",
            base_dir.display(),
            new_dir.display(),
            names(&c.base_phases),
            names(&c.new_phases)
        )));
    }
    let out = a.out.clone().unwrap_or_else(|| new_dir.join("compare"));
    let files = write_reports(&runs, &out, &opts).map_err(|e| CliError::of("", e))?;
    // A client-bound or co-located mix's figures are said, never gated.
    let gate = |why: &Option<String>| why.as_ref().map_or(String::new(), |w| format!(" (not gated: {w})"));
    for p in &c.phases {
        println!(
            "phase {}: peak {} → {} {unit}, {}: {}{}",
            p.phase,
            rate(p.base_peak),
            rate(p.new_peak),
            check_text(&p.peak_check),
            p.peak_check.verdict.word(),
            gate(&p.peak_not_gated)
        );
        let at = match p.p99_basis {
            P99Basis::SameLoad => "at the peak load",
            P99Basis::MatchedThroughput => "at matched throughput",
            P99Basis::NewPeak => "at NEW's peak",
        };
        println!(
            "phase {}: p99 {at} {} µs (mix {}) → {} µs (mix {}), {}: {}{}",
            p.phase,
            benchlab_format::thousands(p.base_p99_us),
            p.base_peak_mix,
            benchlab_format::thousands(p.new_p99_us),
            p.new_p99_mix,
            check_text(&p.p99_check),
            p.p99_check.verdict.word(),
            gate(&p.p99_not_gated)
        );
    }
    for i in &c.improvements {
        println!("improved: {i}");
    }
    for w in &c.not_gated {
        println!("not gated: {w}");
    }
    for n in &c.notes {
        println!("note: {n}");
    }
    print_written(&files);
    if let Some(path) = &a.junit {
        let cases: Vec<Case> = c
            .phases
            .iter()
            .flat_map(|p| {
                [
                    Case::of_check(
                        &p.phase,
                        "peak",
                        p.peak_check.verdict,
                        &format!(
                            "{} → {} {unit}, {}",
                            rate(p.base_peak),
                            rate(p.new_peak),
                            check_text(&p.peak_check)
                        ),
                        p.peak_not_gated.as_deref(),
                    ),
                    Case::of_check(
                        &p.phase,
                        "p99",
                        p.p99_check.verdict,
                        &format!(
                            "{} µs (mix {}) → {} µs (mix {}), {}",
                            benchlab_format::thousands(p.base_p99_us),
                            p.base_peak_mix,
                            benchlab_format::thousands(p.new_p99_us),
                            p.new_p99_mix,
                            check_text(&p.p99_check)
                        ),
                        p.p99_not_gated.as_deref(),
                    ),
                ]
            })
            .collect();
        crate::gate::write_junit(path, "benchlab compare", &cases)?;
    }
    if c.regressed() {
        for r in &c.regressions {
            println!("REGRESSION: {r}");
        }
        Ok(Outcome::Breached)
    } else {
        println!(
            "no regression beyond {:.1} % and the noise at {} confidence ({} against {})",
            a.max_regression * 100.0,
            benchlab_format::percent(a.confidence * 100.0),
            runs[1].label,
            runs[0].label
        );
        Ok(Outcome::Completed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percents() {
        assert_eq!(percent("5%"), Ok(0.05));
        assert_eq!(percent("5"), Ok(0.05));
        assert_eq!(percent("0.5 %"), Ok(0.005));
        assert!(percent("150%").is_err());
        assert!(percent("x").is_err());
        assert_eq!(confidence("99%"), Ok(0.99));
        assert!(confidence("50%").is_err());
        assert!(confidence("100").is_err());
    }

    #[test]
    fn prices() {
        assert_eq!(dollars("$4,995"), Ok(4995.0));
        assert_eq!(dollars("4995.5"), Ok(4995.5));
        assert!(dollars("-1").is_err());
        assert!(dollars("free").is_err());
    }
}
