//! `--threshold` and `--junit` of `run`, `http` and `compare`: the CI
//! gates (docs/running.md, "Thresholds and JUnit"). The expressions and
//! their evaluation are `benchlab_report::gates`'s; this is the flags, the
//! lines on the terminal and the JUnit file.

use crate::CliError;
use benchlab_report::gates::{junit_xml, threshold_line, Case, Threshold};
use benchlab_results::gate::ThresholdResult;
use benchlab_results::Results;
use clap::Args;
use std::path::{Path, PathBuf};

/// The gate flags `run` and `http` share.
#[derive(Debug, Args, Default)]
pub struct GateArgs {
    /// Exit 3 when the results break this, evaluated after the run (and on
    /// a run stopped by Ctrl-C); repeatable; kept in results.json:
    /// [phase:NAME:|mix:N:]METRIC OP VALUE, e.g. p99<250ms, errors<0.1%,
    /// peak_rps>40000 (docs/running.md, "Thresholds and JUnit").
    #[arg(long = "threshold", value_name = "EXPR", value_parser = threshold)]
    pub thresholds: Vec<Threshold>,
    /// Write a JUnit XML file with a test case per threshold (GitLab's and
    /// Jenkins' test reports read it).
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
}

/// clap's parser of `--threshold`: its error names the flag and says what
/// was expected (exit 2).
fn threshold(s: &str) -> Result<Threshold, String> {
    Threshold::parse(s)
}

impl GateArgs {
    /// Before anything runs: `--junit` has something to write, and its
    /// directory exists (a typo is found before a long run, not after).
    pub fn check(&self, thresholds: usize) -> Result<(), CliError> {
        if let Some(path) = &self.junit {
            if thresholds == 0 {
                return Err(CliError::Usage(format!(
                    "--junit {}: there is no threshold to report; give --threshold EXPR",
                    path.display()
                )));
            }
            check_writable(path)?;
        }
        Ok(())
    }
}

/// `--junit FILE`'s directory exists and FILE is not a directory.
pub fn check_writable(path: &Path) -> Result<(), CliError> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if !dir.is_dir() {
        return Err(CliError::Usage(format!(
            "--junit {}: the directory {} does not exist",
            path.display(),
            dir.display()
        )));
    }
    if path.is_dir() {
        return Err(CliError::Usage(format!(
            "--junit {}: is a directory; expected a file name",
            path.display()
        )));
    }
    Ok(())
}

/// Evaluates `thresholds` on `r` and keeps them in it.
pub fn evaluate(thresholds: &[Threshold], r: &mut Results) {
    r.thresholds = benchlab_report::gates::evaluate_all(thresholds, r);
}

/// The terminal's lines, one per threshold.
pub fn lines(results: &[ThresholdResult]) -> String {
    results.iter().map(|t| threshold_line(t) + "\n").collect()
}

/// Whether any threshold was breached.
pub fn breached(results: &[ThresholdResult]) -> bool {
    results.iter().any(ThresholdResult::breached)
}

/// Writes `--junit FILE` (atomically: a CI job never reads half a file).
pub fn write_junit(path: &Path, name: &str, cases: &[Case]) -> Result<(), CliError> {
    benchlab_results::write_atomic(path, junit_xml(name, cases).as_bytes())
        .map_err(|e| CliError::CannotRun(format!("--junit {}: cannot write: {e}", path.display())))
}

/// The JUnit test cases of a run's thresholds.
pub fn cases(results: &[ThresholdResult]) -> Vec<Case> {
    results.iter().map(Case::of_threshold).collect()
}
