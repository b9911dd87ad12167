//! The analysis in words, phase by phase.

use super::*;

fn phase_words(h: &mut String, run: &Run, p: &PhaseAnalysis, o: &ReportOptions) {
    let Some(pk) = &p.peak else {
        let _ = write!(h, "<p>Phase <b>{}</b>: no mix measured.</p>", esc(&p.name));
        return;
    };
    if pk.requests_per_sec <= 0.0 {
        let errors: u64 = phase_mixes(run, &p.name).iter().map(|m| m.figures.errors_total).sum();
        let _ = write!(
            h,
            r#"<p>Phase <b>{}</b>: <span class="flag">no request succeeded in any mix</span>; {} failed (see the summary report for their kinds).</p>"#,
            esc(&p.name),
            plural(errors, "request", "requests")
        );
        return;
    }
    let mut s = format!(
        "Phase <b>{}</b> peaked at <b>{} requests/s</b> at mix {} ({}, {})",
        esc(&p.name),
        requests_per_sec(pk.requests_per_sec),
        pk.mix,
        load_text(pk),
        clients_text(pk.clients_participating)
    );
    if let Some(t) = &p.peak_throughput {
        let _ = write!(
            s,
            "; throughput peaked at <b>{} MB/s</b> ({} Mbit/s) at mix {} ({})",
            mbs(t.bytes_per_sec),
            mbit_per_sec(t.bytes_per_sec * 8.0 / 1e6),
            t.mix,
            load_text(t)
        );
    }
    s.push_str(". ");
    match (&p.lowest_mix, p.lowest_after_peak, &p.last_mix, p.kept_at_last) {
        (Some(lm), Some(low), Some(last), Some(kept)) => {
            let _ = write!(
                s,
                "Past the peak, the last mix (mix {}, {}) kept <b>{}</b> of the peak ({} requests/s) and the lowest share was <b>{}</b> (mix {}, {}, {} requests/s). ",
                last.mix,
                load_text(last),
                pct(kept),
                requests_per_sec(last.requests_per_sec),
                pct(low),
                lm.mix,
                load_text(lm),
                requests_per_sec(lm.requests_per_sec)
            );
            if p.collapsed {
                let _ = write!(
                    s,
                    r#"<span class="flag">Collapse: past the peak the server fell below {} of its peak rate — it does not hold its throughput under overload.</span> "#,
                    pct(o.collapse_share)
                );
            } else {
                let _ = write!(
                    s,
                    "It held at least {} of its peak under the heavier loads (the collapse threshold). ",
                    pct(o.collapse_share)
                );
            }
        }
        _ => {
            s.push_str(
                "The peak is at the highest load measured, so the server may not have saturated: a heavier mix may give more. ",
            );
        }
    }
    let unequal: Vec<String> = p
        .fairness
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
        .collect();
    if unequal.is_empty() {
        let _ = write!(
            s,
            "Clients were served equally in every mix (each within ±{:.0} % of the median client rate). ",
            o.fairness_tolerance * 100.0
        );
    } else {
        let _ = write!(
            s,
            r#"<span class="flag">Unequal service</span> (outside ±{:.0} % of the median client rate): {}. "#,
            o.fairness_tolerance * 100.0,
            esc(&unequal.join("; "))
        );
    }
    match &p.useful_peak {
        Some(u) if u.mix == pk.mix => {
            let _ = write!(
                s,
                "The useful peak equals the peak: {} requests/s at mix {} (clients equal, p99 {} ≤ {}). ",
                requests_per_sec(u.requests_per_sec),
                u.mix,
                ms(u.p99_us as f64),
                ms(o.latency_limit_us as f64)
            );
        }
        Some(u) => {
            let why = p
                .useful
                .iter()
                .find(|m| m.mix == pk.mix)
                .map(|m| m.reasons.join(", "))
                .unwrap_or_default();
            let _ = write!(
                s,
                "The useful peak is lower than the peak: <b>{} requests/s</b> at mix {} ({}, p99 {}); the peak mix does not qualify ({}). ",
                requests_per_sec(u.requests_per_sec),
                u.mix,
                load_text(u),
                ms(u.p99_us as f64),
                esc(&why)
            );
        }
        None => {
            let _ = write!(
                s,
                r#"<span class="flag">No mix qualifies for a useful peak</span> (clients equal, p99 ≤ {}, errors ≤ {}). "#,
                ms(o.latency_limit_us as f64),
                pct(o.max_error_share)
            );
        }
    }
    let mixes = phase_mixes(run, &p.name);
    let errors: u64 = mixes.iter().map(|m| m.figures.errors_total).sum();
    let done: u64 = mixes.iter().map(|m| m.figures.requests + m.figures.errors_total).sum();
    if errors == 0 {
        s.push_str("No request failed. ");
    } else {
        let _ = write!(
            s,
            r#"<span class="flag">{} failed</span> ({} of all completed in the windows). "#,
            plural(errors, "request", "requests"),
            pct(errors as f64 / done.max(1) as f64)
        );
    }
    if let (Some(price), Some(ppr)) = (p.price, p.price_per_rps) {
        let _ = write!(
            s,
            "Price/performance: {} ÷ {} requests/s = <b>{} per request/s</b>. ",
            money(price),
            requests_per_sec(pk.requests_per_sec),
            money(ppr)
        );
    }
    // A phase whose mixes `--find-peak` chose: how the search ended.
    if let Some(ps) = run
        .results
        .phases
        .iter()
        .find(|x| x.name == p.name)
        .and_then(|x| x.search.as_ref())
    {
        let at = |mix: Option<usize>, rate: Option<f64>| match (mix, rate) {
            (Some(m), Some(r)) => format!("{} requests/s at mix {m}", requests_per_sec(r)),
            _ => "none".to_string(),
        };
        let _ = write!(
            s,
            "These mixes were found by the automatic peak search (threads doubled, then bisected around the knee; \
             marked “search step” in the summary report): it stopped because {}; its peak {}, its useful peak \
             (p99 ≤ {}, errors ≤ {} %) {}. ",
            if ps.stopped.is_empty() {
                "it was interrupted".to_string()
            } else {
                esc(&ps.stopped)
            },
            at(ps.peak_mix, ps.peak_requests_per_sec),
            ms(ps.max_p99_us as f64),
            ps.max_error_percent,
            at(ps.useful_peak_mix, ps.useful_peak_requests_per_sec)
        );
    }
    let _ = write!(h, "<p>{s}</p>");
}

pub(super) fn words(h: &mut String, runs: &[Run], analyses: &[RunAnalysis], o: &ReportOptions) {
    h.push_str(r#"<section id="analysis"><h2>Analysis</h2>"#);
    for (i, (r, a)) in runs.iter().zip(analyses).enumerate() {
        let _ = write!(h, "<h3>{}{}</h3>", swatch(i), esc(&a.label));
        for p in &a.phases {
            phase_words(h, r, p, o);
        }
        for e in &a.efficiency {
            let mut s = format!(
                "SPICE efficiency of phase <b>{}</b>{} against static phase {}: ",
                esc(&e.phase),
                e.spi
                    .as_deref()
                    .map(|s| format!(" (SPI {})", esc(s)))
                    .unwrap_or_default(),
                esc(&e.static_phase)
            );
            for (what, pt) in [
                ("at each one's peak", &e.at_peak),
                ("at the highest load", &e.at_highest_load),
                ("at equal load", &e.at_equal_load),
            ] {
                if let Some(pt) = pt {
                    let _ = write!(
                        s,
                        "{what} (static mix {}, {}; SPICE mix {}, {}), request efficiency <b>{}</b> ({} ÷ {} requests/s) and latency efficiency <b>{}</b> ({} ÷ {} µs mean latency); ",
                        pt.static_mix,
                        threads_text(pt.static_threads),
                        pt.spice_mix,
                        threads_text(pt.spice_threads),
                        opt_pct(pt.request),
                        requests_per_sec(pt.spice_rate),
                        requests_per_sec(pt.static_rate),
                        opt_pct(pt.latency),
                        mean_us(pt.static_latency_mean_us),
                        mean_us(pt.spice_latency_mean_us)
                    );
                }
            }
            let _ = write!(
                h,
                "<p>{}. {}</p>",
                s.trim_end_matches("; "),
                super::tables::CLOSED_LOOP_LATENCY
            );
        }
    }
    if runs.len() > 1 {
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
        if let Some((bi, bv)) = best.iter().copied().fold(None, |m: Option<(usize, f64)>, x| match m {
            Some(m) if m.1 >= x.1 => Some(m),
            _ => Some(x),
        }) {
            let others: Vec<String> = best
                .iter()
                .filter(|(i, _)| *i != bi)
                .map(|(i, v)| {
                    format!(
                        "{:.2}× {} ({} requests/s)",
                        if *v > 0.0 { bv / v } else { f64::INFINITY },
                        esc(&analyses[*i].label),
                        requests_per_sec(*v)
                    )
                })
                .collect();
            let _ = write!(
                h,
                "<p>Side by side: <b>{}</b> has the highest peak, {} requests/s — {}.</p>",
                esc(&analyses[bi].label),
                requests_per_sec(bv),
                others.join(", ")
            );
        }
    }
    h.push_str("</section>");
}
