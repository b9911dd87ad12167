//! The analysis in words, phase by phase.

use super::*;

fn phase_words(run: &Run, p: &PhaseAnalysis, o: &ReportOptions) -> Markup {
    let Some(pk) = &p.peak else {
        return html! { p { "Phase " b { (p.name) } ": no mix measured." } };
    };
    let mixes = phase_mixes(run, &p.name);
    let errors: u64 = mixes.iter().map(|m| m.figures.errors_total).sum();
    if pk.requests_per_sec <= 0.0 {
        return html! {
            p {
                "Phase " b { (p.name) } ": " span.flag { "no request succeeded in any mix" } "; "
                (plural(errors, "request", "requests")) " failed (see the summary report for their kinds)."
            }
        };
    }
    let done: u64 = mixes.iter().map(|m| m.figures.requests + m.figures.errors_total).sum();
    let file = is_file(run);
    let tolerance = fixed(o.fairness_tolerance * 100.0, 0);
    html! {
        p {
            "Phase " b { (p.name) } " peaked at " b { (lead(pk, file)) }
            @if file { " (" (requests_per_sec(pk.requests_per_sec)) " operations/s)" }
            " at mix " (pk.mix) " (" (load_text(pk)) ", " (clients_text(pk.clients_participating)) ")"
            @if let Some(t) = p.peak_throughput.as_ref().filter(|_| !file) {
                "; throughput peaked at " b { (mbs(t.bytes_per_sec)) " MB/s" } " (" (mbit_per_sec(t.bytes_per_sec * 8.0 / 1e6))
                " Mbit/s) at mix " (t.mix) " (" (load_text(t)) ")"
            }
            ". "
            @match (&p.lowest_mix, p.lowest_after_peak, &p.last_mix, p.kept_at_last) {
                (Some(lm), Some(low), Some(last), Some(kept)) => {
                    "Past the peak, the last mix (mix " (last.mix) ", " (load_text(last)) ") kept " b { (pct(kept)) }
                    " of the peak (" (lead(last, file)) ") and the lowest share was "
                    b { (pct(low)) } " (mix " (lm.mix) ", " (load_text(lm)) ", " (lead(lm, file)) "). "
                    @if p.collapsed {
                        span.flag {
                            "Collapse: past the peak the server fell below " (pct(o.collapse_share))
                            " of its peak rate — it does not hold its throughput under overload."
                        }
                        " "
                    } @else {
                        "It held at least " (pct(o.collapse_share)) " of its peak under the heavier loads (the collapse threshold). "
                    }
                }
                _ => "The peak is at the highest load measured, so the server may not have saturated: a heavier mix may give more. ",
            }
            @let unequal = unequal_service(run, p);
            @if unequal.is_empty() {
                "Clients were served equally in every mix (each within ±" (tolerance) " % of the median client rate). "
            } @else {
                span.flag { "Unequal service" } " (outside ±" (tolerance) " % of the median client rate): " (unequal.join("; ")) ". "
            }
            @match &p.useful_peak {
                Some(u) if u.mix == pk.mix => {
                    "The useful peak equals the peak: " (lead(u, file)) " at mix " (u.mix)
                    " (clients equal, p99 " (ms(u.p99_us as f64)) " ≤ " (ms(o.latency_limit_us as f64)) "). "
                }
                Some(u) => {
                    @let why = p.useful.iter().find(|m| m.mix == pk.mix).map(|m| m.reasons.join(", ")).unwrap_or_default();
                    "The useful peak is lower than the peak: " b { (lead(u, file)) }
                    " at mix " (u.mix) " (" (load_text(u)) ", p99 " (ms(u.p99_us as f64)) "); the peak mix does not qualify (" (why) "). "
                }
                None => {
                    span.flag { "No mix qualifies for a useful peak" }
                    " (clients equal, p99 ≤ " (ms(o.latency_limit_us as f64)) ", errors ≤ " (pct(o.max_error_share)) "). "
                }
            }
            @if errors == 0 {
                "No request failed. "
            } @else {
                span.flag { (plural(errors, "request", "requests")) " failed" }
                " (" (pct(errors as f64 / done.max(1) as f64)) " of all completed in the windows). "
            }
            @if let (Some(price), Some(ppr)) = (p.price, p.price_per_rps) {
                "Price/performance: " (money(price)) " ÷ " (requests_per_sec(pk.requests_per_sec)) " requests/s = "
                b { (money(ppr)) " per request/s" } ". "
            }
            (search_words(run, p))
        }
    }
}

/// The mixes where a client was served unequally or taken out, in words.
fn unequal_service(run: &Run, p: &PhaseAnalysis) -> Vec<String> {
    p.fairness
        .iter()
        .filter(|f| !f.equal)
        .map(|f| {
            let mut parts: Vec<String> = f
                .flagged
                .iter()
                .map(|c| {
                    format!(
                        "client {} at {} of the median client rate",
                        c.client,
                        c.ratio.map(pct).unwrap_or_else(|| "∞".into())
                    )
                })
                .collect();
            if !f.taken_out.is_empty() {
                parts.push(format!(
                    "client(s) {} taken out",
                    f.taken_out.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(", ")
                ));
            }
            let load = match run
                .results
                .mixes
                .iter()
                .find(|m| m.mix == f.mix)
                .and_then(|m| m.open_loop.as_ref())
            {
                Some(ol) => format!("offered {} requests/s", requests_per_sec(ol.rate)),
                None => threads_text(f.threads),
            };
            format!("mix {} ({load}): {}", f.mix, parts.join("; "))
        })
        .collect()
}

/// A phase whose mixes `--find-peak` chose: how the search ended.
fn search_words(run: &Run, p: &PhaseAnalysis) -> Markup {
    let Some(ps) = run
        .results
        .phases
        .iter()
        .find(|x| x.name == p.name)
        .and_then(|x| x.search.as_ref())
    else {
        return html! {};
    };
    let at = |mix: Option<usize>, rate: Option<f64>| match (mix, rate) {
        (Some(m), Some(r)) => format!("{} requests/s at mix {m}", requests_per_sec(r)),
        _ => "none".to_string(),
    };
    html! {
        "These mixes were found by the automatic peak search (threads doubled, then bisected around the knee; \
         marked “search step” in the summary report): it stopped because "
        @if ps.stopped.is_empty() { "it was interrupted" } @else { (ps.stopped) }
        "; its peak " (at(ps.peak_mix, ps.peak_requests_per_sec)) ", its useful peak (p99 ≤ " (ms(ps.max_p99_us as f64))
        ", errors ≤ " (ps.max_error_percent) " %) " (at(ps.useful_peak_mix, ps.useful_peak_requests_per_sec)) ". "
    }
}

pub(super) fn words(runs: &[Run], analyses: &[RunAnalysis], o: &ReportOptions) -> Markup {
    html! {
        section #analysis {
            h2 { "Analysis" }
            @for (i, (r, a)) in runs.iter().zip(analyses).enumerate() {
                h3 { (swatch(i)) (a.label) }
                @for p in &a.phases { (phase_words(r, p, o)) }
                @for e in &a.efficiency {
                    @let points: Vec<(&str, &crate::EfficiencyPoint)> = [
                        ("at each one's peak", &e.at_peak),
                        ("at the highest load", &e.at_highest_load),
                        ("at equal load", &e.at_equal_load),
                    ]
                    .into_iter()
                    .filter_map(|(what, pt)| pt.as_ref().map(|pt| (what, pt)))
                    .collect();
                    p {
                        "SPICE efficiency of phase " b { (e.phase) }
                        @if let Some(spi) = &e.spi { " (SPI " (spi) ")" }
                        " against static phase " (e.static_phase) ": "
                        @for (k, (what, pt)) in points.iter().enumerate() {
                            @if k > 0 { "; " }
                            (what) " (static mix " (pt.static_mix) ", " (threads_text(pt.static_threads)) "; SPICE mix "
                            (pt.spice_mix) ", " (threads_text(pt.spice_threads)) "), request efficiency " b { (opt_pct(pt.request)) }
                            " (" (requests_per_sec(pt.spice_rate)) " ÷ " (requests_per_sec(pt.static_rate))
                            " requests/s) and latency efficiency " b { (opt_pct(pt.latency)) } " ("
                            (mean_us(pt.static_latency_mean_us)) " ÷ " (mean_us(pt.spice_latency_mean_us)) " µs mean latency)"
                        }
                        ". " (super::tables::CLOSED_LOOP_LATENCY)
                    }
                }
            }
            @if runs.len() > 1 { (side_by_side(analyses)) }
        }
    }
}

/// Several runs: which has the highest peak, and by how much.
fn side_by_side(analyses: &[RunAnalysis]) -> Markup {
    let best = analyses
        .iter()
        .enumerate()
        .filter_map(|(i, a)| {
            a.phases
                .iter()
                .filter_map(|p| p.peak.as_ref())
                .map(|p| p.requests_per_sec)
                .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))))
                .map(|v| (i, v))
        })
        .collect::<Vec<_>>();
    let Some((bi, bv)) = best.iter().copied().fold(None, |m: Option<(usize, f64)>, x| match m {
        Some(m) if m.1 >= x.1 => Some(m),
        _ => Some(x),
    }) else {
        return html! {};
    };
    let others: Vec<String> = best
        .iter()
        .filter(|(i, _)| *i != bi)
        .map(|(i, v)| {
            format!(
                "{:.2}× {} ({} requests/s)",
                if *v > 0.0 { bv / v } else { f64::INFINITY },
                analyses[*i].label,
                requests_per_sec(*v)
            )
        })
        .collect();
    html! {
        p {
            "Side by side: " b { (analyses[bi].label) } " has the highest peak, " (requests_per_sec(bv))
            " requests/s — " (others.join(", ")) "."
        }
    }
}
