//! The headline: each run's peak, useful peak and shape past the peak in
//! one table, and what the load generator's CPU and the time scale say
//! about them.

use super::*;

pub(super) fn headline(runs: &[Run], analyses: &[RunAnalysis], o: &ReportOptions) -> Markup {
    let priced = analyses.iter().flat_map(|a| &a.phases).any(|p| p.price.is_some());
    // File suites lead with Mbit/s (NetBench's figure), web suites with
    // requests/s; runs of both kinds are not reported together.
    let file = runs.iter().any(is_file);
    let lead_head = if file { "peak Mbit/s" } else { "peak requests/s" };
    html! {
        section #headline {
            h2 { "Headline" }
            (headline_flags(runs))
            (client_bound(runs))
            div.tw { table.headline {
                tr {
                    th { "run" } th { "phase" } th.n { (lead_head) } th { "at" } th.n { "peak MB/s" } th { "at" }
                    th.n { "p99 at peak" } th.n { "useful " (lead_head) } th.n { "kept at last mix" }
                    th.n { "lowest share after peak" }
                    @if priced { th.n { "system price" } th.n { "$ per request/s" } }
                }
                @for (i, a) in analyses.iter().enumerate() {
                    @for p in &a.phases {
                        tr data-run=(a.label) data-phase=(p.name) {
                            (run_cell(i, &a.label))
                            td { (p.name) }
                            @match &p.peak {
                                Some(pk) => {
                                    @if file {
                                        td.n data-field="peak_mbit_per_sec" { b { (mbit_per_sec(pk.mbit_per_sec)) } }
                                    } @else {
                                        td.n data-field="peak_requests_per_sec" { b { (requests_per_sec(pk.requests_per_sec)) } }
                                    }
                                    td.at { (at(&runs[i], pk)) }
                                }
                                None => { td { "–" } td {} }
                            }
                            @match &p.peak_throughput {
                                Some(pk) => {
                                    td.n data-field="peak_mbytes_per_sec" { b { (mbs(pk.bytes_per_sec)) } }
                                    td.at { (at(&runs[i], pk)) }
                                }
                                None => { td { "–" } td {} }
                            }
                            td.n { @if let Some(pk) = &p.peak { (ms(pk.p99_us as f64)) } }
                            td.n {
                                @match &p.useful_peak {
                                    Some(u) if file => { (mbit_per_sec(u.mbit_per_sec)) br; small { "mix " (u.mix) " · " (load_short(u)) } }
                                    Some(u) => { (requests_per_sec(u.requests_per_sec)) br; small { "mix " (u.mix) " · " (load_short(u)) } }
                                    None => span.flag { "none qualifies" }
                                }
                            }
                            td.n { (opt_pct(p.kept_at_last)) }
                            td.n {
                                @match p.lowest_after_peak {
                                    Some(s) if p.collapsed => span.flag { (pct(s)) " — collapse" },
                                    Some(s) => (pct(s)),
                                    None => { "none: peak at" br; "the last mix" }
                                }
                            }
                            @if priced {
                                td.n { (p.price.map(money).unwrap_or_else(|| "–".into())) }
                                td.n data-field="price_per_rps" { (p.price_per_rps.map(money).unwrap_or_else(|| "–".into())) }
                            }
                        }
                    }
                }
            } }
            p.sub {
                "thr = threads, cl = clients taking part; MB = 10⁶ bytes (wire bytes: headers and body). Useful peak: every client within ±"
                (fixed(o.fairness_tolerance * 100.0, 0)) " % of the median client rate, p99 ≤ " (ms(o.latency_limit_us as f64))
                ", errors ≤ " (pct(o.max_error_share)) ". Collapse: lowest share after the peak below " (pct(o.collapse_share)) "."
            }
        }
    }
}

/// Where a peak is: its mix, its load and clients, and the CLIENT-BOUND
/// flag when the load generator was past its CPU limit in that mix (the
/// figure may be benchlab's limit).
fn at(run: &Run, pk: &crate::PeakInfo) -> Markup {
    let bound = run
        .results
        .mixes
        .iter()
        .any(|m| m.mix == pk.mix && m.client_cpu.client_bound);
    html! {
        "mix " (pk.mix) br;
        small { (load_short(pk)) " · " (int(pk.clients_participating.into())) " cl" }
        @if bound { br; span.flag data-flag="client-bound" { "CLIENT-BOUND" } }
    }
}

/// What a reader must know before the numbers: a time scale other than 1
/// (every duration of the suite scaled: shorter windows, noisier figures);
/// [`client_bound`] then names the mixes flagged CLIENT-BOUND.
fn headline_flags(runs: &[Run]) -> Markup {
    html! {
        @for r in runs {
            @let scale = r.results.environment.time_scale;
            @if scale != 1.0 {
                div.note data-time-scale=(scale) {
                    b { @if runs.len() > 1 { (r.label) ": " } "Time scale " (scale) }
                    ": every duration of the suite (ramps, lengths, think and delay times) was multiplied by " (scale)
                    @if scale < 1.0 { " — shorter windows than the suite asks for, so noisier figures" }
                    "."
                }
            }
        }
    }
}

/// Says above the headline table which mixes were client-bound (the load
/// generator past `CLIENT_BOUND_SHARE` of its cores) or co-located on a
/// saturated machine, and what that means ([`crate::generator_notes`]).
fn client_bound(runs: &[Run]) -> Markup {
    let mixes = |r: &Run, f: fn(&MixResult) -> bool| {
        r.results
            .mixes
            .iter()
            .filter(|m| f(m))
            .map(|m| m.mix.to_string())
            .collect::<Vec<_>>()
            .join(",")
    };
    html! {
        @for r in runs {
            @let label = if runs.len() > 1 { format!("{}: ", r.label) } else { String::new() };
            @let bound = mixes(r, |m| m.client_cpu.client_bound);
            @let co_located = mixes(r, |m| m.client_cpu.co_located_saturated && !m.client_cpu.client_bound);
            @for note in crate::generator_notes(&r.results) {
                @if note.starts_with("No mix") {
                    p.sub.client-bound data-run=(r.label) data-client-bound="" { (label) (note) }
                } @else {
                    div.note.client-bound data-run=(r.label) data-client-bound=(bound) data-co-located=(co_located) {
                        @if !label.is_empty() { b { (label) } }
                        span.flag { (note) }
                    }
                }
            }
        }
    }
}
