//! The headline: each run's peak, useful peak and shape past the peak in
//! one table, and what the load generator's CPU says about them.

use super::*;

pub(super) fn headline(h: &mut String, runs: &[Run], analyses: &[RunAnalysis], o: &ReportOptions) {
    h.push_str(r#"<section id="headline"><h2>Headline</h2>"#);
    headline_flags(h, runs);
    client_bound(h, runs);
    let priced = analyses.iter().flat_map(|a| &a.phases).any(|p| p.price.is_some());
    h.push_str(
        r#"<table class="headline"><tr><th>run</th><th>phase</th><th class="n">peak requests/s</th><th>at</th><th class="n">peak MB/s</th><th>at</th><th class="n">p99 at peak</th><th class="n">useful peak requests/s</th><th class="n">kept at last mix</th><th class="n">lowest share after peak</th>"#,
    );
    if priced {
        h.push_str(r#"<th class="n">system price</th><th class="n">$ per request/s</th>"#);
    }
    h.push_str("</tr>");
    for (i, a) in analyses.iter().enumerate() {
        for p in &a.phases {
            let _ = write!(h, r#"<tr data-run="{}" data-phase="{}">"#, esc(&a.label), esc(&p.name));
            h.push_str(&run_cell(i, &a.label));
            let _ = write!(h, "<td>{}</td>", esc(&p.name));
            match &p.peak {
                Some(pk) => {
                    let _ = write!(
                        h,
                        r#"<td class="n" data-field="peak_requests_per_sec"><b>{}</b>{}</td><td class="at">mix {}<br><small>{} · {} cl</small></td>"#,
                        requests_per_sec(pk.requests_per_sec),
                        bound_flag(&runs[i], pk.mix),
                        pk.mix,
                        load_short(pk),
                        int(pk.clients_participating.into())
                    );
                }
                None => h.push_str("<td>–</td><td></td>"),
            }
            match &p.peak_throughput {
                Some(pk) => {
                    let _ = write!(
                        h,
                        r#"<td class="n" data-field="peak_mbytes_per_sec"><b>{}</b>{}</td><td class="at">mix {}<br><small>{} · {} cl</small></td>"#,
                        mbs(pk.bytes_per_sec),
                        bound_flag(&runs[i], pk.mix),
                        pk.mix,
                        load_short(pk),
                        int(pk.clients_participating.into())
                    );
                }
                None => h.push_str("<td>–</td><td></td>"),
            }
            let _ = write!(
                h,
                r#"<td class="n">{}</td>"#,
                p.peak.as_ref().map(|pk| ms(pk.p99_us as f64)).unwrap_or_default()
            );
            let _ = write!(
                h,
                r#"<td class="n">{}</td>"#,
                p.useful_peak
                    .as_ref()
                    .map(|u| {
                        format!(
                            "{}<br><small>mix {} · {}</small>",
                            requests_per_sec(u.requests_per_sec),
                            u.mix,
                            load_short(u)
                        )
                    })
                    .unwrap_or_else(|| r#"<span class="flag">none qualifies</span>"#.into())
            );
            let _ = write!(h, r#"<td class="n">{}</td>"#, opt_pct(p.kept_at_last));
            let lowest = match p.lowest_after_peak {
                Some(s) if p.collapsed => format!(r#"<span class="flag">{} — collapse</span>"#, pct(s)),
                Some(s) => pct(s),
                None => "none: peak at<br>the last mix".into(),
            };
            let _ = write!(h, r#"<td class="n">{lowest}</td>"#);
            if priced {
                let _ = write!(
                    h,
                    r#"<td class="n">{}</td><td class="n" data-field="price_per_rps">{}</td>"#,
                    p.price.map(money).unwrap_or_else(|| "–".into()),
                    p.price_per_rps.map(money).unwrap_or_else(|| "–".into())
                );
            }
            h.push_str("</tr>");
        }
    }
    h.push_str("</table>");
    let _ = write!(
        h,
        r#"<p class="sub">thr = threads, cl = clients taking part; MB = 10⁶ bytes (wire bytes: headers and body). Useful peak: every client within ±{:.0} % of the median client rate, p99 ≤ {}, errors ≤ {}. Collapse: lowest share after the peak below {}.</p>"#,
        o.fairness_tolerance * 100.0,
        ms(o.latency_limit_us as f64),
        pct(o.max_error_share),
        pct(o.collapse_share)
    );
    h.push_str("</section>");
}

/// A peak measured while the load generator was past its CPU limit is
/// flagged where the number stands: it may be benchlab's limit.
fn bound_flag(run: &Run, mix: usize) -> &'static str {
    if run
        .results
        .mixes
        .iter()
        .any(|m| m.mix == mix && m.client_cpu.client_bound)
    {
        r#" <span class="flag" data-flag="client-bound">CLIENT-BOUND</span>"#
    } else {
        ""
    }
}

/// What a reader must know before the numbers: a time scale other than 1
/// (every duration of the suite scaled: shorter windows, noisier figures)
/// ([`client_bound`] then names the mixes flagged CLIENT-BOUND).
fn headline_flags(h: &mut String, runs: &[Run]) {
    for r in runs {
        let who = if runs.len() > 1 {
            format!("{}: ", esc(&r.label))
        } else {
            String::new()
        };
        let scale = r.results.environment.time_scale;
        if scale != 1.0 {
            let _ = write!(
                h,
                r#"<div class="note" data-time-scale="{scale}"><b>{who}Time scale {scale}</b>: every duration of the suite (ramps, lengths, think and delay times) was multiplied by {scale}{}.</div>"#,
                if scale < 1.0 {
                    " — shorter windows than the suite asks for, so noisier figures"
                } else {
                    ""
                }
            );
        }
    }
}

/// Says above the headline table which mixes were client-bound (the load
/// generator past `CLIENT_BOUND_SHARE` of its cores) or co-located on a
/// saturated machine, and what that means ([`crate::generator_notes`]).
fn client_bound(h: &mut String, runs: &[Run]) {
    for r in runs {
        let label = if runs.len() > 1 {
            format!("{}: ", esc(&r.label))
        } else {
            String::new()
        };
        let mixes = |f: fn(&MixResult) -> bool| {
            r.results
                .mixes
                .iter()
                .filter(|m| f(m))
                .map(|m| m.mix.to_string())
                .collect::<Vec<_>>()
                .join(",")
        };
        let bound = mixes(|m| m.client_cpu.client_bound);
        let co_located = mixes(|m| m.client_cpu.co_located_saturated && !m.client_cpu.client_bound);
        for note in crate::generator_notes(&r.results) {
            if note.starts_with("No mix") {
                let _ = write!(
                    h,
                    r#"<p class="sub client-bound" data-run="{}" data-client-bound="">{label}{}</p>"#,
                    esc(&r.label),
                    esc(&note)
                );
            } else {
                let _ = write!(
                    h,
                    r#"<div class="note client-bound" data-run="{}" data-client-bound="{bound}" data-co-located="{co_located}"><b>{label}</b><span class="flag">{}</span></div>"#,
                    esc(&r.label),
                    esc(&note)
                );
            }
        }
    }
}
