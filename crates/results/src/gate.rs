//! What a CI gate decided, as results.json keeps it: one
//! [`ThresholdResult`] per `--threshold` (and per old `--max-p99` /
//! `--max-error-rate` of `benchlab http`, which are spellings of one).
//! Parsing and evaluating the expressions is `benchlab_report::gates`'s;
//! this is only the record, so outside tools read it without the report.

use serde::{Deserialize, Serialize};

/// How one threshold came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ThresholdStatus {
    /// The observed value keeps the limit.
    Pass,
    /// The observed value breaks the limit (exit 3), or the figure does
    /// not exist where it must (a latency of a mix with no successful
    /// request, no useful peak).
    Fail,
    /// Nothing in its scope ran (a run stopped before the phase or mix it
    /// names): neither kept nor broken, and said so.
    NotMeasured,
}

impl ThresholdStatus {
    pub fn word(self) -> &'static str {
        match self {
            ThresholdStatus::Pass => "pass",
            ThresholdStatus::Fail => "FAIL",
            ThresholdStatus::NotMeasured => "not measured",
        }
    }
}

/// One threshold evaluated on a run's results (docs/running.md,
/// "Thresholds").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ThresholdResult {
    /// As the user wrote it (`phase:static:p99<250ms`), or the old flag
    /// (`--max-p99 1s`).
    pub expression: String,
    /// `run` (every mix), `phase:NAME` or `mix:N`.
    pub scope: String,
    /// `p50`, `p90`, `p99`, `p999`, `errors`, `error_rate`, `rps`,
    /// `peak_rps`, `useful_peak_rps`, `mbit`, `peak_mbit`.
    pub metric: String,
    /// `<`, `<=`, `>` or `>=`.
    pub op: String,
    /// The limit, in `unit`.
    pub limit: f64,
    /// `us` (latency), `errors` (a count), `percent` (error rate),
    /// `requests/s`, `Mbit/s`.
    pub unit: String,
    /// The value measured, in `unit`: for a per-mix figure the worst mix's
    /// in the scope; `null` where there is none.
    pub observed: Option<f64>,
    /// The mix whose figure was observed (a per-mix figure, a peak).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mix: Option<usize>,
    pub status: ThresholdStatus,
    /// Why it failed or was not measured, when the numbers alone do not
    /// say (`mix 3 had no successful request`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub note: String,
}

impl ThresholdResult {
    pub fn breached(&self) -> bool {
        self.status == ThresholdStatus::Fail
    }
}
