//! The comparison section (`benchlab compare`, or `report` of two runs
//! with a regression limit).

use super::*;
use crate::analysis::Verdict;
use crate::compare::{Check, P99Basis};

/// A ratio and its noise interval: `×0.798 (×0.780–×0.816)`.
fn interval(c: &Check) -> String {
    match (c.ratio, c.low, c.high) {
        (Some(r), Some(lo), Some(hi)) => format!("×{r:.3} (×{lo:.3}–×{hi:.3})"),
        (Some(r), _, _) => format!("×{r:.3} (noise unknown)"),
        _ => "–".into(),
    }
}

/// Where NEW's p99 was taken, in words.
fn basis_words(b: P99Basis) -> &'static str {
    match b {
        P99Basis::SameLoad => "same load",
        P99Basis::MatchedThroughput => "matched throughput",
        P99Basis::NewPeak => "its own peak, less work",
    }
}

pub(super) fn comparison(c: &Comparison) -> Markup {
    let r3 = |r: Option<f64>| r.map(|r| format!("{r:.3}")).unwrap_or_else(|| "–".into());
    let limit = format!("{:.1}", c.max_regression * 100.0);
    html! {
        section #compare {
            h2 { "Comparison" }
            @let conf = benchlab_format::percent(c.confidence * 100.0);
            @if c.regressed() {
                div.verdict.bad {
                    (c.new) " is worse than " (c.base) " beyond the " (limit) " % limit and the noise (" (conf) " confidence):"
                    ul { @for r in &c.regressions { li { (r) } } }
                }
            } @else {
                div.verdict.good {
                    "No regression beyond " (limit) " % and the noise (" (conf) " confidence): " (c.new) " keeps " (c.base) "'s peak requests/s and its p99 where both do the same work."
                }
            }
            @if !c.improvements.is_empty() {
                div.verdict.good {
                    "Improved beyond the limit and the noise:"
                    ul { @for r in &c.improvements { li { (r) } } }
                }
            }
            @if !c.not_gated.is_empty() {
                div.verdict {
                    "Worse beyond the limit and the noise, but not gated (the mix measured the client, or shared its cores with the server):"
                    ul { @for r in &c.not_gated { li { (r) } } }
                }
            }
            @for n in &c.notes { div.note { (n) } }
            p.note {
                "Each ratio is NEW ÷ BASE with the interval the noise leaves it (the spread of each mix's repeats, or of its seconds when it ran once). "
                "NEW's p99 is taken where it does BASE's work: at BASE's peak load, or, when NEW serves more requests/s there, at NEW's lightest load that reaches BASE's peak requests/s (matched throughput)."
            }
            div.tw { table {
                tr {
                    th { "phase" } th.n { "base peak requests/s" } th.n { "new peak requests/s" } th.n { "new ÷ base (interval)" }
                    th.n { "base p99 at its peak" } th.n { "new p99 doing the same work" } th.n { "new ÷ base (interval)" } th { "verdict" }
                }
                @for p in &c.phases {
                    tr {
                        td { (p.phase) }
                        td.n { (requests_per_sec(p.base_peak)) " (mix " (p.base_peak_mix) ")" }
                        td.n { (requests_per_sec(p.new_peak)) " (mix " (p.new_peak_mix) ")" }
                        td.n { (interval(&p.peak_check)) }
                        td.n { (int(p.base_p99_us)) " µs (mix " (p.base_peak_mix) ")" }
                        td.n { (int(p.new_p99_us)) " µs (mix " (p.new_p99_mix) ", " (basis_words(p.p99_basis)) ")" }
                        td.n { (interval(&p.p99_check)) }
                        td {
                            @let why = p.peak_not_gated.as_ref().or(p.p99_not_gated.as_ref());
                            @if (p.peak_regressed && p.peak_not_gated.is_none()) || (p.p99_regressed && p.p99_not_gated.is_none()) { span.flag { "regressed" } }
                            @else if let Some(w) = why { span.flag { "not gated: " (w) } }
                            @else if p.peak_check.verdict == Verdict::Improved || p.p99_check.verdict == Verdict::Improved { span.ok { "improved" } }
                            @else { span.ok { "ok" } }
                        }
                    }
                }
            } }
            h3 { "Ratios per mix (new ÷ base, mixes at the same phase, threads and clients)" }
            div.tw { table {
                tr {
                    th { "phase" } th.n { "threads" } th.n { "clients" } th.n { "mix base/new" } th.n { "base requests/s" }
                    th.n { "new requests/s" } th.n { "requests/s" } th.n { "bytes/s" } th.n { "base p50 µs" } th.n { "new p50 µs" }
                    th.n { "p50" } th.n { "base p99 µs" } th.n { "new p99 µs" } th.n { "p99" } th.n { "errors base/new" }
                    th { "gates" }
                }
                @for m in &c.mixes {
                    tr {
                        td { (m.phase) }
                        td.n { (int(m.threads)) }
                        td.n { (int(m.clients.into())) }
                        td.n { (m.base_mix) " / " (m.new_mix) }
                        td.n { (requests_per_sec(m.base_requests_per_sec)) }
                        td.n { (requests_per_sec(m.new_requests_per_sec)) }
                        td.n { (r3(m.requests_per_sec)) }
                        td.n { (r3(m.bytes_per_sec)) }
                        td.n { (int(m.base_p50_us)) }
                        td.n { (int(m.new_p50_us)) }
                        td.n { (r3(m.p50)) }
                        td.n { (int(m.base_p99_us)) }
                        td.n { (int(m.new_p99_us)) }
                        td.n { (r3(m.p99)) }
                        td.n { (int(m.base_errors)) " / " (int(m.new_errors)) }
                        td { @if let Some(w) = &m.not_gated { span.flag { "not gated: " (w) } } @else { "yes" } }
                    }
                }
            } }
        }
    }
}
