//! The report's thresholds section: what `--threshold` decided, as
//! results.json keeps it (docs/running.md, "Thresholds and JUnit").

use super::run_cell;
use crate::gates::value_text;
use crate::Run;
use benchlab_results::gate::ThresholdStatus;
use maud::{html, Markup};

/// Whether any run was judged by thresholds (the section and its link).
pub(super) fn any_thresholds(runs: &[Run]) -> bool {
    runs.iter().any(|r| !r.results.thresholds.is_empty())
}

/// A row per threshold of each run: expression, scope, limit, observed
/// value and its mix, and the outcome, a breach marked as one.
pub(super) fn thresholds(runs: &[Run]) -> Markup {
    if !any_thresholds(runs) {
        return html! {};
    }
    html! {
        h2 #thresholds { "Thresholds" }
        p.sub { "Each --threshold evaluated on the results (a per-mix figure at its worst mix in the scope); a breach made the run exit 3." }
        table {
            tr { th { "run" } th { "threshold" } th { "scope" } th.n { "limit" } th.n { "observed" } th { "mix" } th { "result" } }
            @for (i, r) in runs.iter().enumerate() {
                @for t in &r.results.thresholds {
                    tr {
                        (run_cell(i, &r.label))
                        td { code { (t.expression) } }
                        td { (t.scope) }
                        td.n { (t.op) " " (value_text(&t.unit, t.limit)) }
                        td.n { (t.observed.map_or("—".to_string(), |v| value_text(&t.unit, v))) }
                        td { (t.mix.map_or(String::new(), |m| m.to_string())) }
                        td {
                            @match t.status {
                                ThresholdStatus::Pass => span.verdict.good { "pass" },
                                ThresholdStatus::Fail => span.verdict.bad { "FAIL" },
                                ThresholdStatus::NotMeasured => span.verdict { "not measured" },
                            }
                            @if !t.note.is_empty() { " " (t.note) }
                        }
                    }
                }
            }
        }
    }
}
