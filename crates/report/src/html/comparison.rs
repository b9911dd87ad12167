//! The comparison section (`benchlab compare`, or `report` of two runs
//! with a regression limit).

use super::*;

pub(super) fn comparison(c: &Comparison) -> Markup {
    let r3 = |r: Option<f64>| r.map(|r| format!("{r:.3}")).unwrap_or_else(|| "–".into());
    let limit = format!("{:.1}", c.max_regression * 100.0);
    html! {
        section #compare {
            h2 { "Comparison" }
            @if c.regressed() {
                div.verdict.bad {
                    (c.new) " is worse than " (c.base) " beyond the " (limit) " % limit:"
                    ul { @for r in &c.regressions { li { (r) } } }
                }
            } @else {
                div.verdict.good {
                    "No regression beyond " (limit) " %: " (c.new) " keeps " (c.base) "'s peak requests/s and its p99 at the peak load."
                }
            }
            @for n in &c.notes { div.note { (n) } }
            div.tw { table {
                tr {
                    th { "phase" } th.n { "base peak requests/s" } th.n { "new peak requests/s" } th.n { "new ÷ base" }
                    th.n { "base p99 at its peak" } th.n { "new p99 at that load" } th.n { "new ÷ base" } th { "verdict" }
                }
                @for p in &c.phases {
                    tr {
                        td { (p.phase) }
                        td.n { (requests_per_sec(p.base_peak)) " (mix " (p.base_peak_mix) ")" }
                        td.n { (requests_per_sec(p.new_peak)) " (mix " (p.new_peak_mix) ")" }
                        td.n { (p.peak_ratio.map(|r| format!("{r:.3}")).unwrap_or_default()) }
                        td.n { (int(p.base_p99_us)) " µs (mix " (p.base_peak_mix) ")" }
                        td.n { (int(p.new_p99_us)) " µs (mix " (p.new_p99_mix) ")" }
                        td.n { (p.p99_ratio.map(|r| format!("{r:.3}")).unwrap_or_default()) }
                        td {
                            @if p.peak_regressed || p.p99_regressed { span.flag { "regressed" } } @else { span.ok { "ok" } }
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
                    }
                }
            } }
        }
    }
}
