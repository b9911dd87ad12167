//! CI gates: `--threshold` expressions, evaluated on a run's results, and
//! the JUnit XML that GitLab and Jenkins read (docs/running.md,
//! "Thresholds and JUnit").
//!
//! One mechanism for `run` and `http`: `http`'s older `--max-p99 DUR` and
//! `--max-error-rate PCT` are spellings of `p99<=DUR` and `errors<=PCT%`.
//! Every threshold is evaluated on the results as written (a run stopped by
//! Ctrl-C included) and kept in results.json's `thresholds`, so what the
//! gate decided is never apart from the figures it decided on.
//!
//! A threshold is `[SCOPE:]METRIC OP VALUE`:
//! - SCOPE: none (every mix of the run), `phase:NAME` or `mix:N`;
//! - METRIC and VALUE: `p50` `p90` `p99` `p999` with a duration (`250ms`,
//!   `1.5s`, `800us`); `errors` with a count (`errors<10`) or a share of
//!   completed requests (`errors<0.1%`); `rps`, `peak_rps`,
//!   `useful_peak_rps` with requests/s; `mbit`, `peak_mbit` with Mbit/s;
//! - OP: `<`, `<=`, `>`, `>=`.
//!
//! A per-mix figure (latency, `rps`, `mbit`) must hold in every mix of the
//! scope, and the worst mix's value is the one observed; `errors` sums the
//! scope's mixes; a peak is the scope's highest.

use crate::analyze::analyze_run;
use crate::{ReportOptions, Run};
use benchlab_results::gate::{ThresholdResult, ThresholdStatus};
use benchlab_results::noise::Verdict;
use benchlab_results::{MixResult, Results};
use std::fmt::Write as _;

/// Where a threshold looks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// Every mix of the run.
    Run,
    /// The mixes of one phase.
    Phase(String),
    /// One mix, by its number (1-based, as in the summary table).
    Mix(usize),
}

impl Scope {
    fn text(&self) -> String {
        match self {
            Scope::Run => "run".into(),
            Scope::Phase(p) => format!("phase:{p}"),
            Scope::Mix(n) => format!("mix:{n}"),
        }
    }

    fn holds(&self, m: &MixResult) -> bool {
        match self {
            Scope::Run => true,
            Scope::Phase(p) => &m.phase == p,
            Scope::Mix(n) => m.mix == *n,
        }
    }
}

/// What a threshold measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// A latency percentile of every mix (p50, p90, p99, p999 = p99.9).
    Latency(Quantile),
    /// Failed requests, summed over the scope.
    Errors,
    /// Failed ÷ completed requests over the scope, percent.
    ErrorRate,
    /// Requests/s of every mix.
    Rps,
    /// The scope's highest requests/s.
    PeakRps,
    /// The highest requests/s among the scope's mixes within the report's
    /// useful-peak limits (p99 ≤ 1 s, errors ≤ 1 %, clients served equally).
    UsefulPeakRps,
    /// Wire throughput of every mix, Mbit/s.
    Mbit,
    /// The scope's highest Mbit/s.
    PeakMbit,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quantile {
    P50,
    P90,
    P99,
    P999,
}

impl Metric {
    fn name(self) -> &'static str {
        match self {
            Metric::Latency(Quantile::P50) => "p50",
            Metric::Latency(Quantile::P90) => "p90",
            Metric::Latency(Quantile::P99) => "p99",
            Metric::Latency(Quantile::P999) => "p999",
            Metric::Errors => "errors",
            Metric::ErrorRate => "error_rate",
            Metric::Rps => "rps",
            Metric::PeakRps => "peak_rps",
            Metric::UsefulPeakRps => "useful_peak_rps",
            Metric::Mbit => "mbit",
            Metric::PeakMbit => "peak_mbit",
        }
    }

    fn unit(self) -> &'static str {
        match self {
            Metric::Latency(_) => "us",
            Metric::Errors => "errors",
            Metric::ErrorRate => "percent",
            Metric::Rps | Metric::PeakRps | Metric::UsefulPeakRps => "requests/s",
            Metric::Mbit | Metric::PeakMbit => "Mbit/s",
        }
    }

    /// A figure each mix of the scope must keep (else one of the scope).
    fn per_mix(self) -> bool {
        matches!(self, Metric::Latency(_) | Metric::Rps | Metric::Mbit)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Lt,
    Le,
    Gt,
    Ge,
}

impl Op {
    fn text(self) -> &'static str {
        match self {
            Op::Lt => "<",
            Op::Le => "<=",
            Op::Gt => ">",
            Op::Ge => ">=",
        }
    }

    fn keeps(self, observed: f64, limit: f64) -> bool {
        match self {
            Op::Lt => observed < limit,
            Op::Le => observed <= limit,
            Op::Gt => observed > limit,
            Op::Ge => observed >= limit,
        }
    }

    /// An upper bound (`<`, `<=`): the worst of several values is the highest.
    fn upper(self) -> bool {
        matches!(self, Op::Lt | Op::Le)
    }
}

/// One threshold, parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct Threshold {
    /// As written (or the old flag and its value).
    pub expression: String,
    pub scope: Scope,
    pub metric: Metric,
    pub op: Op,
    /// In the metric's unit (latency in µs).
    pub limit: f64,
}

/// What a threshold is written as, for messages.
pub const SYNTAX: &str = "[phase:NAME:|mix:N:]METRIC OP VALUE, e.g. p99<250ms, errors<0.1%, peak_rps>40000, \
     phase:static:p99<=1s (METRIC: p50 p90 p99 p999 errors rps peak_rps useful_peak_rps mbit peak_mbit; \
     OP: < <= > >=)";

impl Threshold {
    /// Parses `[SCOPE:]METRIC OP VALUE`; the error says what was expected
    /// (the caller names the flag).
    pub fn parse(s: &str) -> Result<Threshold, String> {
        let quoted = benchlab_input::excerpt(s);
        let bad = |why: &str| format!("`{quoted}`: {why}; expected {SYNTAX}");
        let text = s.trim();
        let (scope, expr) = if let Some(rest) = text.strip_prefix("phase:") {
            // A phase name may hold ':'; the expression never does.
            let (name, expr) = rest
                .rsplit_once(':')
                .ok_or_else(|| bad("`phase:` needs a name and an expression, phase:NAME:EXPR"))?;
            if name.trim().is_empty() {
                return Err(bad("the phase name is empty"));
            }
            (Scope::Phase(name.trim().to_string()), expr)
        } else if let Some(rest) = text.strip_prefix("mix:") {
            let (n, expr) = rest
                .split_once(':')
                .ok_or_else(|| bad("`mix:` needs a number and an expression, mix:N:EXPR"))?;
            let n: usize = n
                .trim()
                .parse()
                .ok()
                .filter(|n| *n >= 1)
                .ok_or_else(|| bad("the mix is a number from 1, as in the summary table"))?;
            (Scope::Mix(n), expr)
        } else {
            (Scope::Run, text)
        };
        let at = expr
            .find(['<', '>'])
            .ok_or_else(|| bad("no comparison (<, <=, > or >=)"))?;
        let (name, rest) = expr.split_at(at);
        let (op, value) = match rest.as_bytes() {
            [b'<', b'=', ..] => (Op::Le, &rest[2..]),
            [b'>', b'=', ..] => (Op::Ge, &rest[2..]),
            [b'<', ..] => (Op::Lt, &rest[1..]),
            _ => (Op::Gt, &rest[1..]),
        };
        let value = value.trim();
        let (metric, limit) = match name.trim() {
            "p50" => (Metric::Latency(Quantile::P50), duration_us(value).map_err(|e| bad(&e))?),
            "p90" => (Metric::Latency(Quantile::P90), duration_us(value).map_err(|e| bad(&e))?),
            "p99" => (Metric::Latency(Quantile::P99), duration_us(value).map_err(|e| bad(&e))?),
            "p999" | "p99.9" => (
                Metric::Latency(Quantile::P999),
                duration_us(value).map_err(|e| bad(&e))?,
            ),
            "errors" => match value.strip_suffix('%') {
                Some(p) => {
                    let p = number(p)
                        .filter(|p| *p <= 100.0)
                        .ok_or_else(|| bad("an error share is a percentage from 0% to 100%"))?;
                    (Metric::ErrorRate, p)
                }
                None => {
                    let n: u64 = value
                        .parse()
                        .map_err(|_| bad("errors takes a count (errors<10) or a share (errors<0.1%)"))?;
                    (Metric::Errors, n as f64)
                }
            },
            m @ ("rps" | "peak_rps" | "useful_peak_rps" | "mbit" | "peak_mbit") => {
                let metric = match m {
                    "rps" => Metric::Rps,
                    "peak_rps" => Metric::PeakRps,
                    "useful_peak_rps" => Metric::UsefulPeakRps,
                    "mbit" => Metric::Mbit,
                    _ => Metric::PeakMbit,
                };
                let v = number(value).ok_or_else(|| bad(&format!("{m} takes a plain number ({})", metric.unit())))?;
                (metric, v)
            }
            "" => return Err(bad("no metric before the comparison")),
            other => return Err(bad(&format!("unknown metric `{}`", benchlab_input::excerpt(other)))),
        };
        Ok(Threshold {
            expression: text.to_string(),
            scope,
            metric,
            op,
            limit,
        })
    }

    /// `http`'s `--max-p99 DUR`: a p99 threshold of the run, breached when
    /// the p99 is above DUR, as the flag always was.
    pub fn max_p99(limit: std::time::Duration) -> Threshold {
        Threshold {
            expression: format!("--max-p99 {}", humanize_us(limit.as_micros() as f64)),
            scope: Scope::Run,
            metric: Metric::Latency(Quantile::P99),
            op: Op::Le,
            limit: limit.as_micros() as f64,
        }
    }

    /// `http`'s `--max-error-rate PCT`: breached when failed ÷ completed
    /// requests is above PCT %.
    pub fn max_error_rate(percent: f64) -> Threshold {
        Threshold {
            expression: format!("--max-error-rate {percent}"),
            scope: Scope::Run,
            metric: Metric::ErrorRate,
            op: Op::Le,
            limit: percent,
        }
    }

    /// Before a run: a scope the suite cannot have is a usage error, not a
    /// threshold never measured. `phases`: the phases that will run;
    /// `mixes`: how many (`None` when a peak search decides).
    pub fn check_scope(&self, phases: &[String], mixes: Option<usize>) -> Result<(), String> {
        match &self.scope {
            Scope::Run => Ok(()),
            Scope::Phase(p) if phases.iter().any(|x| x == p) => Ok(()),
            Scope::Phase(p) => Err(format!(
                "`{}`: the run has no phase `{}` (its phases: {})",
                benchlab_input::excerpt(&self.expression),
                benchlab_input::excerpt(p),
                phases.join(", ")
            )),
            Scope::Mix(n) => match mixes {
                Some(m) if *n > m => Err(format!(
                    "`{}`: the run has {m} mixes, no mix {n}",
                    benchlab_input::excerpt(&self.expression)
                )),
                _ => Ok(()),
            },
        }
    }

    /// The threshold on `r`: observed value, pass or fail.
    pub fn evaluate(&self, r: &Results) -> ThresholdResult {
        let mixes: Vec<&MixResult> = r.mixes.iter().filter(|m| self.scope.holds(m)).collect();
        let mut out = ThresholdResult {
            expression: self.expression.clone(),
            scope: self.scope.text(),
            metric: self.metric.name().into(),
            op: self.op.text().into(),
            limit: self.limit,
            unit: self.metric.unit().into(),
            observed: None,
            mix: None,
            status: ThresholdStatus::NotMeasured,
            note: String::new(),
        };
        if mixes.is_empty() {
            out.note = format!("no mix of {} ran", self.scope.text().replace(':', " "));
            return out;
        }
        if self.metric.per_mix() {
            // A latency of a mix without one successful request does not
            // exist: that mix fails the threshold, whatever the others do.
            if let Metric::Latency(_) = self.metric {
                if let Some(m) = mixes.iter().find(|m| m.figures.requests == 0) {
                    out.mix = Some(m.mix);
                    out.status = ThresholdStatus::Fail;
                    out.note = format!("mix {} had no successful request: it has no latency", m.mix);
                    return out;
                }
            }
            let values = mixes.iter().map(|m| (m.mix, self.per_mix_value(m)));
            let worst = if self.op.upper() {
                values.max_by(|a, b| a.1.total_cmp(&b.1))
            } else {
                values.min_by(|a, b| a.1.total_cmp(&b.1))
            };
            if let Some((mix, v)) = worst {
                out.mix = Some(mix);
                out.observed = Some(v);
            }
        } else {
            match self.metric {
                Metric::Errors => out.observed = Some(mixes.iter().map(|m| m.figures.errors_total).sum::<u64>() as f64),
                Metric::ErrorRate => {
                    let errors: u64 = mixes.iter().map(|m| m.figures.errors_total).sum();
                    let done = errors + mixes.iter().map(|m| m.figures.requests).sum::<u64>();
                    out.observed = Some(if done == 0 {
                        0.0
                    } else {
                        errors as f64 * 100.0 / done as f64
                    });
                }
                Metric::PeakRps | Metric::PeakMbit => {
                    let v = |m: &MixResult| match self.metric {
                        Metric::PeakRps => m.figures.requests_per_sec,
                        _ => m.figures.mbit_per_sec,
                    };
                    // The lowest load on ties, as the report's peak.
                    if let Some(m) = mixes.iter().rev().max_by(|a, b| v(a).total_cmp(&v(b))) {
                        out.mix = Some(m.mix);
                        out.observed = Some(v(m));
                    }
                }
                Metric::UsefulPeakRps => {
                    let useful = useful_mixes(r);
                    let peak = mixes
                        .iter()
                        .rev()
                        .filter(|m| useful.contains(&m.mix))
                        .max_by(|a, b| a.figures.requests_per_sec.total_cmp(&b.figures.requests_per_sec));
                    match peak {
                        Some(m) => {
                            out.mix = Some(m.mix);
                            out.observed = Some(m.figures.requests_per_sec);
                        }
                        None => {
                            out.status = ThresholdStatus::Fail;
                            out.note = "no mix within the useful peak's limits (p99 ≤ 1 s, errors ≤ 1 %, \
                                        clients served equally)"
                                .into();
                            return out;
                        }
                    }
                }
                Metric::Latency(_) | Metric::Rps | Metric::Mbit => {}
            }
        }
        out.status = match out.observed {
            Some(v) if self.op.keeps(v, self.limit) => ThresholdStatus::Pass,
            _ => ThresholdStatus::Fail,
        };
        out
    }

    fn per_mix_value(&self, m: &MixResult) -> f64 {
        let l = &m.figures.latency_us;
        match self.metric {
            Metric::Latency(Quantile::P50) => l.p50 as f64,
            Metric::Latency(Quantile::P90) => l.p90 as f64,
            Metric::Latency(Quantile::P99) => l.p99 as f64,
            Metric::Latency(Quantile::P999) => l.p999 as f64,
            Metric::Rps => m.figures.requests_per_sec,
            _ => m.figures.mbit_per_sec,
        }
    }
}

/// Every threshold on `r`, in order.
pub fn evaluate_all(thresholds: &[Threshold], r: &Results) -> Vec<ThresholdResult> {
    thresholds.iter().map(|t| t.evaluate(r)).collect()
}

/// The mixes the report counts towards the useful peak (its default limits).
fn useful_mixes(r: &Results) -> Vec<usize> {
    let run = Run {
        label: String::new(),
        dir: std::path::PathBuf::new(),
        results: r.clone(),
    };
    analyze_run(&run, &ReportOptions::default())
        .phases
        .iter()
        .flat_map(|p| p.useful.iter().filter(|u| u.reasons.is_empty()).map(|u| u.mix))
        .collect()
}

/// A plain non-negative number.
fn number(s: &str) -> Option<f64> {
    s.trim().parse::<f64>().ok().filter(|v| v.is_finite() && *v >= 0.0)
}

/// `250ms`, `1.5s`, `800us`/`800µs` → microseconds.
fn duration_us(s: &str) -> Result<f64, String> {
    let split = s.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(s.len());
    let (n, unit) = s.split_at(split);
    let scale = match unit.trim() {
        "us" | "µs" => 1.0,
        "ms" => 1e3,
        "s" => 1e6,
        "" => return Err("a latency needs its unit: us, ms or s (250ms)".into()),
        _ => return Err("a latency's unit is us, ms or s (250ms)".into()),
    };
    number(n)
        .map(|v| v * scale)
        .ok_or_else(|| "a latency is a number and its unit (250ms)".into())
}

/// A limit or value in the metric's unit, for people.
pub fn value_text(unit: &str, v: f64) -> String {
    match unit {
        "us" => format!("{} µs", benchlab_format::thousands(v.round() as u64)),
        // Three decimals: a 0.1 % limit needs more than the tables' one.
        "percent" => {
            let t = format!("{v:.3}");
            format!("{} %", t.trim_end_matches('0').trim_end_matches('.'))
        }
        "errors" => benchlab_format::plural(v as u64, "error", "errors"),
        "Mbit/s" => format!("{} Mbit/s", benchlab_format::mbit_per_sec(v)),
        _ => format!("{} requests/s", benchlab_format::requests_per_sec(v)),
    }
}

fn humanize_us(us: f64) -> String {
    if us >= 1e6 && (us % 1e5) == 0.0 {
        format!("{}s", us / 1e6)
    } else if us >= 1e3 && (us % 1e2) == 0.0 {
        format!("{}ms", us / 1e3)
    } else {
        format!("{}us", us as u64)
    }
}

/// One line per threshold for the terminal: `threshold p99<250ms (run):
/// pass, observed 212ms at mix 3`.
pub fn threshold_line(t: &ThresholdResult) -> String {
    let observed = match t.observed {
        Some(v) => format!("observed {}", value_text(&t.unit, v)),
        None => "nothing observed".into(),
    };
    let mix = t.mix.map(|m| format!(" at mix {m}")).unwrap_or_default();
    let note = if t.note.is_empty() {
        String::new()
    } else {
        format!(" ({})", t.note)
    };
    format!(
        "threshold {} ({}): {}, {observed}{mix}{note}",
        t.expression,
        t.scope,
        t.status.word()
    )
}

/// One JUnit test case: a threshold or a compare check.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    /// The suite it belongs to (`benchlab thresholds`, `benchlab compare`).
    pub classname: String,
    pub name: String,
    pub outcome: CaseOutcome,
    /// Said in `<system-out>`: the observed value and the limit.
    pub detail: String,
}

#[derive(Debug, Clone, PartialEq)]
pub enum CaseOutcome {
    Passed,
    /// A breach or a regression, with its message.
    Failed(String),
    /// Not measured, or not gated: neither passed nor failed.
    Skipped(String),
}

impl Case {
    pub fn of_threshold(t: &ThresholdResult) -> Case {
        let line = threshold_line(t);
        Case {
            classname: "benchlab.thresholds".into(),
            name: format!("{} [{}]", t.expression, t.scope),
            outcome: match t.status {
                ThresholdStatus::Pass => CaseOutcome::Passed,
                ThresholdStatus::Fail => CaseOutcome::Failed(format!(
                    "{} breached: limit {} {}",
                    t.expression,
                    t.op,
                    value_text(&t.unit, t.limit)
                )),
                ThresholdStatus::NotMeasured => CaseOutcome::Skipped(if t.note.is_empty() {
                    "not measured".into()
                } else {
                    t.note.clone()
                }),
            },
            detail: line,
        }
    }

    /// A compare check (`phase static: peak`): regressed (gated) fails,
    /// regressed in a mix that gates nothing is skipped, else passes.
    pub fn of_check(phase: &str, figure: &str, verdict: Verdict, text: &str, not_gated: Option<&str>) -> Case {
        Case {
            classname: "benchlab.compare".into(),
            name: format!("phase {phase}: {figure}"),
            outcome: match (verdict, not_gated) {
                (Verdict::Regressed, None) => CaseOutcome::Failed(format!("{figure} regressed: {text}")),
                (Verdict::Regressed, Some(why)) => CaseOutcome::Skipped(format!("not gated: {why}")),
                _ => CaseOutcome::Passed,
            },
            detail: format!("{text}: {}", verdict.word()),
        }
    }
}

/// JUnit XML (one `<testsuite>` per classname inside `<testsuites>`), the
/// shape Jenkins' JUnit and xUnit plugins and GitLab's test reports read;
/// crates/cli/tests/data/junit.xsd holds the constraints it keeps.
pub fn junit_xml(name: &str, cases: &[Case]) -> String {
    let mut suites: Vec<(&str, Vec<&Case>)> = Vec::new();
    for c in cases {
        match suites.iter_mut().find(|(n, _)| *n == c.classname) {
            Some((_, v)) => v.push(c),
            None => suites.push((&c.classname, vec![c])),
        }
    }
    let count = |cs: &[&Case], f: fn(&CaseOutcome) -> bool| cs.iter().filter(|c| f(&c.outcome)).count();
    let failed = |o: &CaseOutcome| matches!(o, CaseOutcome::Failed(_));
    let skipped = |o: &CaseOutcome| matches!(o, CaseOutcome::Skipped(_));
    let all: Vec<&Case> = cases.iter().collect();
    let mut o = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        o,
        "<testsuites name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\">",
        xml_escape(name),
        cases.len(),
        count(&all, failed)
    );
    for (suite, cs) in &suites {
        let _ = writeln!(
            o,
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\">",
            xml_escape(suite),
            cs.len(),
            count(cs, failed),
            count(cs, skipped)
        );
        for c in cs {
            let _ = writeln!(
                o,
                "    <testcase classname=\"{}\" name=\"{}\" time=\"0\">",
                xml_escape(&c.classname),
                xml_escape(&c.name)
            );
            match &c.outcome {
                CaseOutcome::Passed => {}
                CaseOutcome::Failed(m) => {
                    let _ = writeln!(
                        o,
                        "      <failure type=\"threshold\" message=\"{}\">{}</failure>",
                        xml_escape(m),
                        xml_escape(m)
                    );
                }
                CaseOutcome::Skipped(m) => {
                    let _ = writeln!(o, "      <skipped message=\"{}\"/>", xml_escape(m));
                }
            }
            let _ = writeln!(o, "      <system-out>{}</system-out>", xml_escape(&c.detail));
            let _ = writeln!(o, "    </testcase>");
        }
        let _ = writeln!(o, "  </testsuite>");
    }
    o.push_str("</testsuites>\n");
    o
}

/// Text for an XML attribute or element: the five entities escaped, and
/// characters XML 1.0 forbids (controls other than tab and newline)
/// replaced, so a phase name can never break the file.
fn xml_escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            '\t' | '\n' => o.push(c),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => o.push('\u{FFFD}'),
            c => o.push(c),
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    fn results(mixes: &[(usize, &str, u64, u64, f64, u64)]) -> Results {
        // (mix, phase, requests, errors, requests/s, p99 µs)
        let ms: Vec<serde_json::Value> = mixes
            .iter()
            .map(|(n, phase, req, err, rps, p99)| {
                serde_json::json!({
                    "mix": n, "phase": phase, "clients": 1, "clients_participating": 1, "threads": 4,
                    "partial": false, "window_s": 10.0, "requests": req, "requests_per_sec": rps,
                    "bytes": req * 1000, "bytes_per_sec": rps * 1000.0, "mbit_per_sec": rps * 0.008,
                    "body_bytes": 0, "error_bytes": 0, "errors": {}, "errors_total": err,
                    "latency_us": {"mean": 1.0, "p50": p99 / 2, "p90": p99.saturating_sub(1), "p99": p99, "p999": p99 + 1, "max": p99 + 2},
                    "error_latency_us": {"mean": 0.0, "p50": 0, "p90": 0, "p99": 0, "p999": 0, "max": 0},
                    "reconnects": 0, "in_flight": 0, "connections_opened": 1, "tls_full_handshakes": 0,
                    "tls_resumptions": 0, "client_cpu_s": 0.0,
                    "params": {"delay_s": 0.0, "ramp_up_s": 0.0, "ramp_down_s": 0.0, "length_s": 10.0,
                        "think_time_s": 0.0, "threads_per_client": 4, "receive_buffer": 65536,
                        "http10_percent": 0, "http10_keepalive": false, "persistent_percent": 100,
                        "requests_per_connection": null, "timeout_s": 5.0, "workload": "w", "target": "t"},
                    "client_data": [], "classes": [], "per_second": [],
                    "histograms": {"latency_us": "", "error_latency_us": "", "classes": {}}
                })
            })
            .collect();
        serde_json::from_value(serde_json::json!({
            "schema": "benchlab.results/1",
            "suite": {"name": "s", "description": "", "file": "s.toml", "seed": 1, "max_clients": null, "text": ""},
            "environment": {"benchlab_version": "0", "host": "h", "kernel": "k", "cpu": "c", "cores": 1,
                "started_unix": 0, "target": "t", "command": [], "time_scale": 1.0},
            "phases": [], "mixes": ms, "complete": true
        }))
        .expect("results")
    }

    #[test]
    fn expressions_parse_into_scope_metric_op_and_limit_in_the_metric_unit() {
        let t = Threshold::parse("p99<250ms").expect("parses");
        assert_eq!(
            (t.scope.clone(), t.metric, t.op, t.limit),
            (Scope::Run, Metric::Latency(Quantile::P99), Op::Lt, 250_000.0)
        );
        let t = Threshold::parse("phase:cgi:bin:p999 <= 1.5s").expect("parses");
        assert_eq!(t.scope, Scope::Phase("cgi:bin".into()));
        assert_eq!(
            (t.metric, t.op, t.limit),
            (Metric::Latency(Quantile::P999), Op::Le, 1_500_000.0)
        );
        let t = Threshold::parse("mix:3:errors<0.1%").expect("parses");
        assert_eq!(
            (t.scope.clone(), t.metric, t.limit),
            (Scope::Mix(3), Metric::ErrorRate, 0.1)
        );
        assert_eq!(Threshold::parse("errors<10").expect("parses").metric, Metric::Errors);
        let t = Threshold::parse("peak_rps>40000").expect("parses");
        assert_eq!((t.metric, t.op, t.limit), (Metric::PeakRps, Op::Gt, 40_000.0));
        assert_eq!(Threshold::parse("p50>=800us").expect("parses").limit, 800.0);
        assert_eq!(Threshold::parse("mbit>=900").expect("parses").metric, Metric::Mbit);
    }

    #[test]
    fn a_bad_expression_says_what_was_expected() {
        for (bad, says) in [
            ("p99", "no comparison"),
            ("p99<250", "needs its unit"),
            ("p99<fast", "a latency"),
            ("latency<1s", "unknown metric `latency`"),
            ("errors<lots", "errors takes a count"),
            ("errors<101%", "percentage from 0% to 100%"),
            ("mix:0:p99<1s", "number from 1"),
            ("mix:x:p99<1s", "number from 1"),
            ("phase::p99<1s", "phase name is empty"),
            ("rps>-5", "plain number"),
            ("<5", "no metric"),
        ] {
            let e = Threshold::parse(bad).expect_err(bad);
            assert!(
                e.contains(says) && e.contains("expected [phase:NAME:|mix:N:]METRIC OP VALUE"),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn a_per_mix_figure_is_the_worst_mix_and_errors_sum_over_the_scope() {
        let r = results(&[
            (1, "a", 1000, 0, 100.0, 2_000),
            (2, "a", 900, 100, 90.0, 9_000),
            (3, "b", 500, 0, 50.0, 1_000),
        ]);
        let t = Threshold::parse("p99<5ms").expect("parses").evaluate(&r);
        assert_eq!(
            (t.observed, t.mix, t.status),
            (Some(9_000.0), Some(2), ThresholdStatus::Fail)
        );
        let t = Threshold::parse("phase:b:p99<5ms").expect("parses").evaluate(&r);
        assert_eq!(
            (t.observed, t.mix, t.status),
            (Some(1_000.0), Some(3), ThresholdStatus::Pass)
        );
        assert_eq!(t.scope, "phase:b");
        let t = Threshold::parse("rps>=60").expect("parses").evaluate(&r);
        assert_eq!(
            (t.observed, t.mix, t.status),
            (Some(50.0), Some(3), ThresholdStatus::Fail)
        );
        let t = Threshold::parse("peak_rps>99").expect("parses").evaluate(&r);
        assert_eq!(
            (t.observed, t.mix, t.status),
            (Some(100.0), Some(1), ThresholdStatus::Pass)
        );
        let t = Threshold::parse("errors<100").expect("parses").evaluate(&r);
        assert_eq!((t.observed, t.status), (Some(100.0), ThresholdStatus::Fail));
        // 100 failed of 2,500 completed: 4 %.
        let t = Threshold::parse("errors<=4%").expect("parses").evaluate(&r);
        assert_eq!((t.observed, t.status), (Some(4.0), ThresholdStatus::Pass));
        let t = Threshold::parse("mix:9:p99<1s").expect("parses").evaluate(&r);
        assert_eq!((t.observed, t.status), (None, ThresholdStatus::NotMeasured));
    }

    #[test]
    fn a_mix_without_a_successful_request_fails_a_latency_threshold() {
        let r = results(&[(1, "a", 0, 50, 0.0, 0)]);
        let t = Threshold::parse("p99<1s").expect("parses").evaluate(&r);
        assert_eq!((t.status, t.mix), (ThresholdStatus::Fail, Some(1)));
        assert!(t.note.contains("no successful request"), "{}", t.note);
        // The old --max-p99 spelling is the same threshold.
        let t = Threshold::max_p99(std::time::Duration::from_secs(1)).evaluate(&r);
        assert_eq!(
            (t.status, t.expression.as_str()),
            (ThresholdStatus::Fail, "--max-p99 1s")
        );
    }

    #[test]
    fn scopes_are_checked_against_the_suite_before_a_run() {
        let phases = ["static".to_string()];
        assert!(Threshold::parse("phase:static:p99<1s")
            .expect("p")
            .check_scope(&phases, Some(2))
            .is_ok());
        let e = Threshold::parse("phase:cgi:p99<1s")
            .expect("p")
            .check_scope(&phases, Some(2))
            .expect_err("no such phase");
        assert!(e.contains("no phase `cgi`") && e.contains("static"), "{e}");
        assert!(Threshold::parse("mix:3:p99<1s")
            .expect("p")
            .check_scope(&phases, Some(2))
            .is_err());
        assert!(Threshold::parse("mix:3:p99<1s")
            .expect("p")
            .check_scope(&phases, None)
            .is_ok());
    }

    #[test]
    fn a_compare_check_fails_only_on_a_gated_regression() {
        let case = |v, not_gated| Case::of_check("static", "peak", v, "1,000 → 800 requests/s", not_gated).outcome;
        assert!(
            matches!(case(Verdict::Regressed, None), CaseOutcome::Failed(m) if m.contains("peak regressed: 1,000 → 800"))
        );
        assert_eq!(
            case(Verdict::Regressed, Some("client-bound")),
            CaseOutcome::Skipped("not gated: client-bound".into())
        );
        assert_eq!(case(Verdict::Improved, None), CaseOutcome::Passed);
        assert_eq!(case(Verdict::Unchanged, None), CaseOutcome::Passed);
        let c = Case::of_check("static", "p99", Verdict::Unchanged, "x", None);
        assert_eq!(
            (c.classname.as_str(), c.name.as_str()),
            ("benchlab.compare", "phase static: p99")
        );
    }

    #[test]
    fn junit_counts_failures_and_escapes_names() {
        let r = results(&[(1, "a<&>\"", 1000, 0, 100.0, 2_000)]);
        let ts = [
            Threshold::parse("p99<1ms").expect("p"),
            Threshold::parse("p99<1s").expect("p"),
            Threshold::parse("mix:4:rps>1").expect("p"),
        ];
        let cases: Vec<Case> = evaluate_all(&ts, &r).iter().map(Case::of_threshold).collect();
        let x = junit_xml("benchlab run s", &cases);
        assert!(
            x.contains("<testsuites name=\"benchlab run s\" tests=\"3\" failures=\"1\" errors=\"0\">"),
            "{x}"
        );
        assert!(
            x.contains("tests=\"3\" failures=\"1\" errors=\"0\" skipped=\"1\""),
            "{x}"
        );
        assert!(x.contains("name=\"p99&lt;1ms [run]\""), "{x}");
        assert_eq!(x.matches("<failure ").count(), 1);
        assert_eq!(xml_escape("a\u{1}b&"), "a\u{FFFD}b&amp;");
    }
}
