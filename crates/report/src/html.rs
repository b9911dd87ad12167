//! The report page: one self-contained HTML file (styles, SVG charts, data
//! and a few lines of script inline; nothing fetched) that a person can read
//! and hand on — headline, analysis in words, charts against load, the
//! summary and client data reports, and the configuration disclosure.
//!
//! Table cells that show a results.json value carry `data-field` and print
//! the value in benchlab's one number format (`benchlab_format`: thousands
//! separators, each quantity's fixed decimals), so a test can check every
//! number against the file and a reader sees a quantity written the same
//! way everywhere.

use crate::analyze::{PhaseAnalysis, RunAnalysis};
use crate::chart::{colour, esc, Chart, Point, Series, VLine, XTicks, DASHES};
use crate::compare::Comparison;
use crate::{ReportOptions, Run};
use benchlab_controller::MixResult;
use benchlab_format::{
    fixed, mbit_per_sec, mbytes_per_sec, mean_us, plural, requests_per_sec, seconds, share, thousands, yes_no, Quantity,
};
use std::fmt::Write as _;

fn int(v: u64) -> String {
    thousands(v)
}

/// A share 0–1 as a percentage.
fn pct(x: f64) -> String {
    share(x)
}

fn opt_pct(x: Option<f64>) -> String {
    x.map(pct).unwrap_or_else(|| "–".into())
}

/// A percentage 0–100 without its sign (under a "… %" column).
fn pct100(v: f64) -> String {
    fixed(v, Quantity::Percent.decimals())
}

/// Bytes/s as MB/s (10⁶ bytes).
fn mbs(bytes_per_sec: f64) -> String {
    mbytes_per_sec(bytes_per_sec)
}

fn money(v: f64) -> String {
    if v >= 100.0 {
        format!("${}", fixed(v, 0))
    } else if v >= 1.0 {
        format!("${}", fixed(v, 2))
    } else {
        format!("${v:.4}")
    }
}

fn ms(us: f64) -> String {
    if us >= 10_000.0 {
        format!("{} ms", fixed(us / 1000.0, 0))
    } else {
        format!("{} ms", fixed(us / 1000.0, 2))
    }
}

fn clients_text(n: u32) -> String {
    plural(n.into(), "client", "clients")
}

fn threads_text(n: u64) -> String {
    plural(n, "thread", "threads")
}

fn swatch(i: usize) -> String {
    format!(r#"<span class="sw" style="background:{}"></span>"#, colour(i))
}

fn run_cell(i: usize, label: &str) -> String {
    format!(r#"<td class="run">{}{}</td>"#, swatch(i), esc(label))
}

/// A Unix time as `YYYY-MM-DD HH:MM:SS UTC`.
fn utc(unix: u64) -> String {
    let (y, m, d, h, mi, sec) = benchlab_controller::utc_civil(unix);
    format!("{y:04}-{m:02}-{d:02} {h:02}:{mi:02}:{sec:02} UTC")
}

fn shell_quote(a: &str) -> String {
    if !a.is_empty() && a.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:,@%+".contains(c)) {
        a.to_string()
    } else {
        format!("'{}'", a.replace('\'', r"'\''"))
    }
}

/// Phase names across all runs, in order of first appearance.
fn phase_names(analyses: &[RunAnalysis]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for a in analyses {
        for p in &a.phases {
            if !names.contains(&p.name) {
                names.push(p.name.clone());
            }
        }
    }
    names
}

fn phase_mixes<'a>(run: &'a Run, phase: &str) -> Vec<&'a MixResult> {
    run.results.mixes.iter().filter(|m| m.phase == phase).collect()
}

fn nonzero_errors(m: &MixResult) -> String {
    let v: Vec<String> = m
        .figures
        .errors
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(k, n)| format!("{k} {}", int(*n)))
        .collect();
    v.join(", ")
}

const STYLE: &str = r#"
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;color:#1b1b1b;margin:0;background:#fff}
main{max-width:1360px;margin:0 auto;padding:12px 24px 48px}
h1{font-size:26px;margin:18px 0 4px}h2{font-size:21px;margin:34px 0 8px;border-bottom:2px solid #ddd;padding-bottom:4px}
h3{font-size:17px;margin:22px 0 6px}p{line-height:1.45;max-width:1100px}
.sub{color:#555;margin:0 0 10px}
.sw{display:inline-block;width:12px;height:12px;border-radius:2px;margin-right:6px;vertical-align:-1px}
table{border-collapse:collapse;font-size:13px;margin:6px 0 14px}
th,td{border:1px solid #d6d6d6;padding:3px 7px;text-align:left;vertical-align:top}
th{background:#f2f2f2;font-weight:600}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
td.n{white-space:nowrap}
td.run{white-space:nowrap;font-weight:600}
.tw{max-width:100%;overflow-x:auto}
td.at{white-space:nowrap}
.flag{color:#b00020;font-weight:600}.ok{color:#0a6b2e;font-weight:600}
.verdict{padding:10px 14px;border-radius:6px;margin:10px 0;font-weight:600}
.verdict.bad{background:#fde8ea;border:1px solid #e4a2a9}.verdict.good{background:#e6f4ea;border:1px solid #9bcfab}
.note{background:#fff7e0;border:1px solid #ecd28a;padding:6px 10px;border-radius:4px;margin:6px 0}
.charts{display:flex;flex-wrap:wrap;gap:10px 18px}
figure.chart{margin:0;border:1px solid #e2e2e2;border-radius:6px;background:#fff}
svg text{font-family:system-ui,-apple-system,"Segoe UI",Roboto,Arial,sans-serif}
.ctitle{font-size:15px;font-weight:600;fill:#1b1b1b}.tick{font-size:11px;fill:#333}.tick2{font-size:10px;fill:#777}
.alabel{font-size:12px;fill:#1b1b1b}.vlabel{font-size:10px;fill:#666}.ltext{font-size:12px;fill:#1b1b1b}
pre{background:#f7f7f7;border:1px solid #e0e0e0;padding:10px;overflow:auto;font-size:12px;max-height:520px}
nav a{margin-right:14px}
#tip{position:absolute;display:none;background:#222;color:#fff;padding:4px 8px;border-radius:4px;font-size:12px;pointer-events:none;white-space:nowrap;z-index:10}
details>summary{cursor:pointer;font-weight:600;margin:8px 0}
"#;

/// Hover tooltips from each point's `data-tip`; plain DOM calls only, so it
/// runs (and cannot fail) in any browser.
const SCRIPT: &str = r#"
(function () {
  var tip = document.getElementById('tip');
  if (!tip) { return; }
  document.addEventListener('mouseover', function (e) {
    var t = e.target;
    if (t && t.getAttribute && t.getAttribute('data-tip')) {
      tip.textContent = t.getAttribute('data-tip');
      tip.style.display = 'block';
    }
  });
  document.addEventListener('mousemove', function (e) {
    tip.style.left = (e.pageX + 14) + 'px';
    tip.style.top = (e.pageY + 14) + 'px';
  });
  document.addEventListener('mouseout', function (e) {
    var t = e.target;
    if (t && t.getAttribute && t.getAttribute('data-tip')) { tip.style.display = 'none'; }
  });
})();
"#;

/// The whole page.
pub fn page(runs: &[Run], analyses: &[RunAnalysis], cmp: Option<&Comparison>, o: &ReportOptions) -> String {
    let mut h = String::with_capacity(256 * 1024);
    let suites: Vec<&str> = {
        let mut v: Vec<&str> = Vec::new();
        for r in runs {
            if !v.contains(&r.results.suite.name.as_str()) {
                v.push(&r.results.suite.name);
            }
        }
        v
    };
    let title = match cmp {
        Some(c) => format!("benchlab compare — {} vs {}", c.base, c.new),
        None => format!("benchlab report — {}", suites.join(", ")),
    };
    let _ = write!(
        h,
        r#"<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><link rel="icon" href="data:,"><title>{}</title><style>{STYLE}</style></head><body><main>"#,
        esc(&title)
    );
    let _ = write!(h, "<h1>{}</h1>", esc(&title));
    let _ = write!(h, r#"<p class="sub">"#);
    for (i, r) in runs.iter().enumerate() {
        let _ = write!(
            h,
            r#"<span style="margin-right:18px">{}<b>{}</b> — suite {}, {}, target {}</span>"#,
            swatch(i),
            esc(&r.label),
            esc(&r.results.suite.name),
            esc(&utc(r.results.environment.started_unix)),
            esc(&r.results.environment.target)
        );
    }
    h.push_str("</p>");
    h.push_str(
        r##"<nav><a href="#headline">Headline</a><a href="#analysis">Analysis</a><a href="#charts">Charts</a><a href="#efficiency">SPICE efficiency</a><a href="#fairness">Fairness</a><a href="#summary">Summary report</a><a href="#classes">Classes</a><a href="#clients">Client data report</a><a href="#config">Configuration</a><a href="#definitions">Definitions</a></nav>"##,
    );
    for a in analyses {
        for n in &a.notes {
            let _ = write!(h, r#"<div class="note"><b>{}:</b> {}</div>"#, esc(&a.label), esc(n));
        }
    }
    headline(&mut h, runs, analyses, o);
    if let Some(c) = cmp {
        comparison(&mut h, c);
    }
    words(&mut h, runs, analyses, o);
    charts(&mut h, runs, analyses, o);
    efficiency(&mut h, analyses);
    fairness(&mut h, analyses, o);
    summary(&mut h, runs);
    classes(&mut h, runs);
    clients(&mut h, runs);
    config(&mut h, runs);
    definitions(&mut h, o);
    h.push_str(r#"</main><div id="tip"></div>"#);
    // Wide tables scroll inside their own box, not the whole page.
    let mut h = h
        .replace("<table", r#"<div class="tw"><table"#)
        .replace("</table>", "</table></div>");
    let data = serde_json::json!({
        "schema": "benchlab.report/1",
        "options": {
            "fairness_tolerance": o.fairness_tolerance,
            "latency_limit_us": o.latency_limit_us,
            "max_error_share": o.max_error_share,
            "collapse_share": o.collapse_share,
            "price": o.price,
            "prices": o.prices,
            "static_phase": o.static_phase,
            "compare_max_regression": o.compare_max_regression,
        },
        "runs": runs.iter().zip(analyses).map(|(r, a)| serde_json::json!({
            "label": r.label,
            "dir": r.dir.display().to_string(),
            "results": r.results,
            "analysis": a,
        })).collect::<Vec<_>>(),
        "comparison": cmp,
    });
    // `<` escaped inside JSON strings keeps `</script>` in any value from
    // ending the element; the JSON stays valid.
    let json = serde_json::to_string(&data)
        .unwrap_or_else(|_| "null".into())
        .replace('<', "\\u003c");
    let _ = write!(
        h,
        r#"<script type="application/json" id="benchlab-data">{json}</script><script>{SCRIPT}</script></body></html>"#
    );
    h
}

fn headline(h: &mut String, runs: &[Run], analyses: &[RunAnalysis], o: &ReportOptions) {
    h.push_str(r#"<section id="headline"><h2>Headline</h2>"#);
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
                        r#"<td class="n" data-field="peak_requests_per_sec"><b>{}</b></td><td class="at">mix {}<br><small>{} thr · {} cl</small></td>"#,
                        requests_per_sec(pk.requests_per_sec),
                        pk.mix,
                        int(pk.threads),
                        int(pk.clients_participating.into())
                    );
                }
                None => h.push_str("<td>–</td><td></td>"),
            }
            match &p.peak_throughput {
                Some(pk) => {
                    let _ = write!(
                        h,
                        r#"<td class="n" data-field="peak_mbytes_per_sec"><b>{}</b></td><td class="at">mix {}<br><small>{} thr · {} cl</small></td>"#,
                        mbs(pk.bytes_per_sec),
                        pk.mix,
                        int(pk.threads),
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
                            "{}<br><small>mix {} · {} thr</small>",
                            requests_per_sec(u.requests_per_sec),
                            u.mix,
                            int(u.threads)
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
    client_bound(h, runs);
    h.push_str("</section>");
}

/// Says under the headline which mixes were client-bound (the load
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

fn comparison(h: &mut String, c: &Comparison) {
    h.push_str(r#"<section id="compare"><h2>Comparison</h2>"#);
    if c.regressed() {
        let _ = write!(
            h,
            r#"<div class="verdict bad">{} is worse than {} beyond the {:.1} % limit:<ul>"#,
            esc(&c.new),
            esc(&c.base),
            c.max_regression * 100.0
        );
        for r in &c.regressions {
            let _ = write!(h, "<li>{}</li>", esc(r));
        }
        h.push_str("</ul></div>");
    } else {
        let _ = write!(
            h,
            r#"<div class="verdict good">No regression beyond {:.1} %: {} keeps {}'s peak requests/s and its p99 at the peak load.</div>"#,
            c.max_regression * 100.0,
            esc(&c.new),
            esc(&c.base)
        );
    }
    for n in &c.notes {
        let _ = write!(h, r#"<div class="note">{}</div>"#, esc(n));
    }
    h.push_str(r#"<table><tr><th>phase</th><th class="n">base peak requests/s</th><th class="n">new peak requests/s</th><th class="n">new ÷ base</th><th class="n">base p99 at its peak</th><th class="n">new p99 at that load</th><th class="n">new ÷ base</th><th>verdict</th></tr>"#);
    for p in &c.phases {
        let verdict = if p.peak_regressed || p.p99_regressed {
            r#"<span class="flag">regressed</span>"#
        } else {
            r#"<span class="ok">ok</span>"#
        };
        let _ = write!(
            h,
            r#"<tr><td>{}</td><td class="n">{} (mix {})</td><td class="n">{} (mix {})</td><td class="n">{}</td><td class="n">{} µs (mix {})</td><td class="n">{} µs (mix {})</td><td class="n">{}</td><td>{verdict}</td></tr>"#,
            esc(&p.phase),
            requests_per_sec(p.base_peak),
            p.base_peak_mix,
            requests_per_sec(p.new_peak),
            p.new_peak_mix,
            p.peak_ratio.map(|r| format!("{r:.3}")).unwrap_or_default(),
            int(p.base_p99_us),
            p.base_peak_mix,
            int(p.new_p99_us),
            p.new_p99_mix,
            p.p99_ratio.map(|r| format!("{r:.3}")).unwrap_or_default()
        );
    }
    h.push_str("</table><h3>Ratios per mix (new ÷ base, mixes at the same phase, threads and clients)</h3>");
    h.push_str(r#"<table><tr><th>phase</th><th class="n">threads</th><th class="n">clients</th><th class="n">mix base/new</th><th class="n">base requests/s</th><th class="n">new requests/s</th><th class="n">requests/s</th><th class="n">bytes/s</th><th class="n">base p50 µs</th><th class="n">new p50 µs</th><th class="n">p50</th><th class="n">base p99 µs</th><th class="n">new p99 µs</th><th class="n">p99</th><th class="n">errors base/new</th></tr>"#);
    let r3 = |r: Option<f64>| r.map(|r| format!("{r:.3}")).unwrap_or_else(|| "–".into());
    for m in &c.mixes {
        let _ = write!(
            h,
            r#"<tr><td>{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{} / {}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{} / {}</td></tr>"#,
            esc(&m.phase),
            int(m.threads),
            int(m.clients.into()),
            m.base_mix,
            m.new_mix,
            requests_per_sec(m.base_requests_per_sec),
            requests_per_sec(m.new_requests_per_sec),
            r3(m.requests_per_sec),
            r3(m.bytes_per_sec),
            int(m.base_p50_us),
            int(m.new_p50_us),
            r3(m.p50),
            int(m.base_p99_us),
            int(m.new_p99_us),
            r3(m.p99),
            int(m.base_errors),
            int(m.new_errors)
        );
    }
    h.push_str("</table></section>");
}

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
        threads_text(pk.threads),
        clients_text(pk.clients_participating)
    );
    if let Some(t) = &p.peak_throughput {
        let _ = write!(
            s,
            "; throughput peaked at <b>{} MB/s</b> ({} Mbit/s) at mix {} ({})",
            mbs(t.bytes_per_sec),
            mbit_per_sec(t.bytes_per_sec * 8.0 / 1e6),
            t.mix,
            threads_text(t.threads)
        );
    }
    s.push_str(". ");
    match (&p.lowest_mix, p.lowest_after_peak, &p.last_mix, p.kept_at_last) {
        (Some(lm), Some(low), Some(last), Some(kept)) => {
            let _ = write!(
                s,
                "Past the peak, the last mix (mix {}, {}) kept <b>{}</b> of the peak ({} requests/s) and the lowest share was <b>{}</b> (mix {}, {}, {} requests/s). ",
                last.mix,
                threads_text(last.threads),
                pct(kept),
                requests_per_sec(last.requests_per_sec),
                pct(low),
                lm.mix,
                threads_text(lm.threads),
                requests_per_sec(lm.requests_per_sec)
            );
            if p.collapsed {
                let _ = write!(
                    s,
                    r#"<span class="flag">Collapse: past the peak the server fell below {} of its peak rate — it does not hold its throughput under overload.</span> "#,
                    pct(o.collapse_share)
                );
            } else {
                s.push_str("It held at least half of its peak under the heavier loads. ");
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
            format!("mix {} ({}): {}", f.mix, threads_text(f.threads), parts.join("; "))
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
                threads_text(u.threads),
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

fn words(h: &mut String, runs: &[Run], analyses: &[RunAnalysis], o: &ReportOptions) {
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
            let _ = write!(h, "<p>{}.</p>", s.trim_end_matches("; "));
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

/// X ticks at each load of the phase: threads, and the clients below.
fn load_ticks(runs: &[Run], phase: &str) -> XTicks {
    let mut t: Vec<(u64, u32)> = Vec::new();
    for r in runs {
        for m in phase_mixes(r, phase) {
            if !t.iter().any(|(th, _)| *th == m.threads) {
                t.push((m.threads, m.clients));
            }
        }
    }
    t.sort();
    XTicks::At(
        t.into_iter()
            .map(|(th, cl)| (th as f64, th.to_string(), format!("{cl} cl")))
            .collect(),
    )
}

fn load_tip(run: &str, m: &MixResult, what: &str, value: &str) -> String {
    format!(
        "{run} · mix {} · {}, {} · {what}: {value}",
        m.mix,
        threads_text(m.threads),
        clients_text(m.clients_participating)
    )
}

/// A series of one value per mix against threads.
fn load_series(
    (ri, run): (usize, &Run),
    phase: &str,
    key: &str,
    name: String,
    dash: &'static str,
    value: impl Fn(&MixResult) -> Option<(f64, String)>,
    tip: impl Fn(&MixResult, f64) -> String,
) -> Series {
    let points = phase_mixes(run, phase)
        .into_iter()
        .filter_map(|m| {
            let (y, raw) = value(m)?;
            Some(Point {
                x: m.threads as f64,
                y,
                data_x: m.threads.to_string(),
                data_y: raw,
                extra: vec![("mix", m.mix.to_string())],
                tip: load_tip(&run.label, m, key, &tip(m, y)),
                hollow: m.partial,
            })
        })
        .collect();
    Series {
        name,
        chart_key: key.to_string(),
        run: run.label.clone(),
        colour: ri,
        dash,
        points,
        in_legend: true,
        radius: 3.5,
    }
}

fn load_x_label() -> String {
    "load: total threads (clients below)".into()
}

fn charts(h: &mut String, runs: &[Run], analyses: &[RunAnalysis], o: &ReportOptions) {
    h.push_str(r#"<section id="charts"><h2>Charts against load</h2><p class="sub">Each phase is charted on its own; x is the total number of threads (virtual users), with the number of clients (test systems) below. Hover a point for its exact value. Hollow points: partial mixes or ramp seconds.</p>"#);
    for (pi, phase) in phase_names(analyses).iter().enumerate() {
        let _ = write!(
            h,
            r#"<h3 id="phase-{pi}">Phase {}</h3><div class="charts">"#,
            esc(phase)
        );
        let ticks = load_ticks(runs, phase);
        let mk = |id: &str, title: String, y_label: &str, y_div: f64, y_log: bool, series: Vec<Series>| Chart {
            id: format!("{id}-{pi}"),
            title,
            x_label: load_x_label(),
            y_label: y_label.to_string(),
            y_div,
            y_log,
            x_ticks: ticks.clone(),
            series,
            vlines: Vec::new(),
            hline: None,
            integer_y: false,
        };
        let rate: Vec<Series> = runs
            .iter()
            .enumerate()
            .map(|(ri, r)| {
                load_series(
                    (ri, r),
                    phase,
                    "requests_per_sec",
                    r.label.clone(),
                    "",
                    |m| Some((m.figures.requests_per_sec, m.figures.requests_per_sec.to_string())),
                    |_, y| format!("{} requests/s", requests_per_sec(y)),
                )
            })
            .collect();
        h.push_str(
            &mk(
                "rate",
                format!("Requests per second — {phase}"),
                "requests/s (successful)",
                1.0,
                false,
                rate,
            )
            .render(),
        );
        let thr: Vec<Series> = runs
            .iter()
            .enumerate()
            .map(|(ri, r)| {
                load_series(
                    (ri, r),
                    phase,
                    "bytes_per_sec",
                    r.label.clone(),
                    "",
                    |m| Some((m.figures.bytes_per_sec, m.figures.bytes_per_sec.to_string())),
                    |m, y| format!("{} MB/s ({} Mbit/s)", mbs(y), mbit_per_sec(m.figures.mbit_per_sec)),
                )
            })
            .collect();
        h.push_str(
            &mk(
                "throughput",
                format!("Throughput — {phase}"),
                "throughput (MB/s, 10⁶ bytes/s)",
                1e6,
                false,
                thr,
            )
            .render(),
        );
        let mut lat = Vec::new();
        let mut max_p99 = 0u64;
        for (ri, r) in runs.iter().enumerate() {
            for (k, (name, dash)) in [("p50", DASHES[0]), ("p90", DASHES[1]), ("p99", DASHES[2])]
                .into_iter()
                .enumerate()
            {
                let key = format!("latency_us.{name}");
                let pick = move |m: &MixResult| match k {
                    0 => m.figures.latency_us.p50,
                    1 => m.figures.latency_us.p90,
                    _ => m.figures.latency_us.p99,
                };
                for m in phase_mixes(r, phase) {
                    max_p99 = max_p99.max(m.figures.latency_us.p99);
                }
                lat.push(load_series(
                    (ri, r),
                    phase,
                    &key,
                    format!("{} {name}", r.label),
                    dash,
                    |m| {
                        let v = pick(m);
                        Some((v as f64, v.to_string()))
                    },
                    |_, y| format!("{} µs", int(y as u64)),
                ));
            }
        }
        let mut c = mk(
            "latency",
            format!("Latency p50 / p90 / p99 — {phase}"),
            "latency (ms, log scale)",
            1000.0,
            true,
            lat,
        );
        if max_p99 * 10 >= o.latency_limit_us {
            c.hline = Some((
                o.latency_limit_us as f64 / 1000.0,
                format!("limit {}", ms(o.latency_limit_us as f64)),
            ));
        }
        h.push_str(&c.render());
        let err: Vec<Series> = runs
            .iter()
            .enumerate()
            .map(|(ri, r)| {
                load_series(
                    (ri, r),
                    phase,
                    "errors_total",
                    r.label.clone(),
                    "",
                    |m| Some((m.figures.errors_total as f64, m.figures.errors_total.to_string())),
                    |m, y| {
                        let kinds = nonzero_errors(m);
                        if kinds.is_empty() {
                            plural(y as u64, "error", "errors")
                        } else {
                            format!("{} ({kinds})", plural(y as u64, "error", "errors"))
                        }
                    },
                )
            })
            .collect();
        let mut c = mk(
            "errors",
            format!("Errors — {phase}"),
            "failed requests in the window",
            1.0,
            false,
            err,
        );
        c.integer_y = true;
        h.push_str(&c.render());
        // Per-class rates, when a phase has several classes.
        let multi = runs
            .iter()
            .any(|r| phase_mixes(r, phase).iter().any(|m| m.classes.len() > 1));
        if multi {
            let mut cls = Vec::new();
            for (ri, r) in runs.iter().enumerate() {
                let mut names: Vec<String> = Vec::new();
                for m in phase_mixes(r, phase) {
                    for c in &m.classes {
                        if !names.contains(&c.name) {
                            names.push(c.name.clone());
                        }
                    }
                }
                for (ci, cname) in names.iter().enumerate() {
                    let mut s = load_series(
                        (ri, r),
                        phase,
                        "classes.requests_per_sec",
                        format!("{} {cname}", r.label),
                        DASHES[ci % DASHES.len()],
                        |m| {
                            m.classes
                                .iter()
                                .find(|c| &c.name == cname)
                                .map(|c| (c.figures.requests_per_sec, c.figures.requests_per_sec.to_string()))
                        },
                        |_, y| format!("{cname}: {} requests/s", requests_per_sec(y)),
                    );
                    for p in &mut s.points {
                        p.extra.push(("class", cname.clone()));
                    }
                    cls.push(s);
                }
            }
            h.push_str(
                &mk(
                    "classes",
                    format!("Requests per second by class — {phase}"),
                    "requests/s (successful)",
                    1.0,
                    false,
                    cls,
                )
                .render(),
            );
        }
        per_second(h, runs, phase, pi);
        h.push_str("</div>");
    }
    h.push_str("</section>");
}

/// Every second of every mix of a phase, mixes back to back, so warm-up and
/// collapse show; ramp seconds (outside the window) hollow.
fn per_second(h: &mut String, runs: &[Run], phase: &str, pi: usize) {
    // Slot k (the k-th mix of the phase) is as long as its longest run.
    let lens: Vec<Vec<(usize, u64, u32)>> = runs
        .iter()
        .map(|r| {
            phase_mixes(r, phase)
                .iter()
                .map(|m| {
                    let n = m
                        .per_second
                        .iter()
                        .map(|s| s.second)
                        .max()
                        .unwrap_or(0)
                        .max(m.params.length_s.ceil() as u32);
                    (m.mix, m.threads, n)
                })
                .collect()
        })
        .collect();
    let slots = lens.iter().map(Vec::len).max().unwrap_or(0);
    let mut offsets = vec![0.0f64; slots + 1];
    for k in 0..slots {
        let w = lens.iter().filter_map(|l| l.get(k)).map(|l| l.2).max().unwrap_or(0);
        offsets[k + 1] = offsets[k] + w as f64;
    }
    let mut series = Vec::new();
    for (ri, r) in runs.iter().enumerate() {
        for (k, m) in phase_mixes(r, phase).into_iter().enumerate() {
            let points = m
                .per_second
                .iter()
                .map(|s| Point {
                    x: offsets[k] + s.second as f64 - 0.5,
                    y: s.requests as f64,
                    data_x: s.second.to_string(),
                    data_y: s.requests.to_string(),
                    extra: vec![("mix", m.mix.to_string())],
                    tip: format!(
                        "{} · mix {} ({}) · second {}{} · {}, {}, p99 {} µs",
                        r.label,
                        m.mix,
                        threads_text(m.threads),
                        s.second,
                        if s.in_window { "" } else { " (ramp)" },
                        plural(s.requests, "request", "requests"),
                        plural(s.errors, "error", "errors"),
                        int(s.latency_p99_us)
                    ),
                    hollow: !s.in_window,
                })
                .collect();
            series.push(Series {
                name: r.label.clone(),
                chart_key: "per_second.requests".into(),
                run: r.label.clone(),
                colour: ri,
                dash: "",
                points,
                in_legend: k == 0,
                radius: 2.2,
            });
        }
    }
    let vlines = lens
        .first()
        .map(|l| {
            l.iter()
                .enumerate()
                .map(|(k, (mix, threads, _))| VLine {
                    x: offsets[k],
                    label: format!("mix {mix}: {threads} thr"),
                })
                .collect()
        })
        .unwrap_or_default();
    let c = Chart {
        id: format!("per-second-{pi}"),
        title: format!("Requests in each second, mix after mix — {phase}"),
        x_label: "time through the phase (s); hollow points are ramp seconds, not counted".into(),
        y_label: "requests completed in the second".into(),
        y_div: 1.0,
        y_log: false,
        x_ticks: XTicks::Nice,
        series,
        vlines,
        hline: None,
        integer_y: true,
    };
    h.push_str(&c.render());
}

fn efficiency(h: &mut String, analyses: &[RunAnalysis]) {
    h.push_str(r#"<section id="efficiency"><h2>SPICE efficiency</h2>"#);
    let any = analyses.iter().any(|a| !a.efficiency.is_empty());
    let mixed = analyses
        .iter()
        .any(|a| a.phases.iter().any(|p| !p.class_latency.is_empty()));
    if !any && !mixed {
        h.push_str("<p>Not applicable: SPICE efficiency needs a phase of static requests and a phase of dynamic (SPICE) requests, or dynamic classes beside static ones.</p></section>");
        return;
    }
    h.push_str("<p>Seed 001's definitions: request efficiency = SPICE request rate ÷ static request rate; latency efficiency = static latency ÷ SPICE latency, with the <b>mean</b> latency (seed 001 measured the average). Below 100 % the dynamic path is slower. Evaluated at each one's peak (each phase's own highest requests/s) and at the highest load (each phase's mix with the most threads).</p>");
    if any {
        h.push_str(r#"<table><tr><th>run</th><th>phase</th><th>SPI</th><th>at</th><th class="n">static mix (threads)</th><th class="n">SPICE mix (threads)</th><th class="n">static req/s</th><th class="n">SPICE req/s</th><th class="n">request efficiency</th><th class="n">static mean latency µs</th><th class="n">SPICE mean latency µs</th><th class="n">latency efficiency</th></tr>"#);
        for (i, a) in analyses.iter().enumerate() {
            for e in &a.efficiency {
                for (at, pt) in [("peak", &e.at_peak), ("highest load", &e.at_highest_load)] {
                    let Some(pt) = pt else { continue };
                    let _ = write!(
                        h,
                        r#"<tr data-run="{}" data-phase="{}" data-at="{at}">{}<td>{}</td><td>{}</td><td>{at}</td><td class="n">{} ({})</td><td class="n">{} ({})</td><td class="n">{}</td><td class="n">{}</td><td class="n" data-field="request_efficiency"><b>{}</b></td><td class="n">{}</td><td class="n">{}</td><td class="n" data-field="latency_efficiency"><b>{}</b></td></tr>"#,
                        esc(&a.label),
                        esc(&e.phase),
                        run_cell(i, &a.label),
                        esc(&e.phase),
                        esc(e.spi.as_deref().unwrap_or("")),
                        pt.static_mix,
                        int(pt.static_threads),
                        pt.spice_mix,
                        int(pt.spice_threads),
                        requests_per_sec(pt.static_rate),
                        requests_per_sec(pt.spice_rate),
                        opt_pct(pt.request),
                        mean_us(pt.static_latency_mean_us),
                        mean_us(pt.spice_latency_mean_us),
                        opt_pct(pt.latency)
                    );
                }
            }
        }
        h.push_str("</table>");
    }
    if mixed {
        h.push_str("<h3>Dynamic classes within mixed phases</h3><p>Where static and dynamic classes share a mix, only the latency efficiency is defined: static classes' mean latency (request-weighted) ÷ the dynamic class's mean latency in the same mix. The classes' request rates follow their configured shares, so a request efficiency would only restate them.</p>");
        h.push_str(r#"<table><tr><th>run</th><th>phase</th><th>at</th><th class="n">mix (threads)</th><th>class</th><th>SPI</th><th class="n">static mean latency µs</th><th class="n">class mean latency µs</th><th class="n">latency efficiency</th></tr>"#);
        for (i, a) in analyses.iter().enumerate() {
            for p in &a.phases {
                for c in &p.class_latency {
                    let _ = write!(
                        h,
                        r#"<tr>{}<td>{}</td><td>{}</td><td class="n">{} ({})</td><td>{}</td><td>{}</td><td class="n">{}</td><td class="n">{}</td><td class="n"><b>{}</b></td></tr>"#,
                        run_cell(i, &a.label),
                        esc(&p.name),
                        esc(&c.at),
                        c.mix,
                        int(c.threads),
                        esc(&c.class),
                        esc(c.spi.as_deref().unwrap_or("")),
                        fixed(c.static_latency_mean_us, 1),
                        mean_us(c.class_latency_mean_us),
                        opt_pct(c.latency_efficiency)
                    );
                }
            }
        }
        h.push_str("</table>");
    }
    h.push_str("</section>");
}

fn fairness(h: &mut String, analyses: &[RunAnalysis], o: &ReportOptions) {
    let _ = write!(
        h,
        r#"<section id="fairness"><h2>Fairness across clients and the useful peak</h2><p class="sub">Per mix, the spread of the participating clients' requests/s and mean latency: min ÷ mean, max ÷ mean and the coefficient of variation (standard deviation ÷ mean). A client is flagged when its rate is outside ±{:.0} % of the mix's median client rate (its ratio to the median is shown). A mix counts towards the useful peak when no client is flagged or taken out, p99 ≤ {} and errors ≤ {}.</p>"#,
        o.fairness_tolerance * 100.0,
        ms(o.latency_limit_us as f64),
        pct(o.max_error_share)
    );
    h.push_str(r#"<table><tr><th>run</th><th>phase</th><th class="n">mix</th><th class="n">threads</th><th class="n">clients</th><th class="n">client req/s: mean</th><th class="n">min ÷ mean</th><th class="n">max ÷ mean</th><th class="n">CV</th><th class="n">client mean latency µs: mean</th><th class="n">min ÷ mean</th><th class="n">max ÷ mean</th><th class="n">CV</th><th>flagged clients: ×rate ÷ median</th><th>useful peak?</th></tr>"#);
    for (i, a) in analyses.iter().enumerate() {
        for p in &a.phases {
            for (f, u) in p.fairness.iter().zip(&p.useful) {
                let sp = |s: &Option<crate::analysis::Spread>| match s {
                    Some(s) => format!(
                        r#"<td class="n">{}</td><td class="n">{:.3}</td><td class="n">{:.3}</td><td class="n">{:.3}</td>"#,
                        fixed(s.mean, 1),
                        s.min_ratio,
                        s.max_ratio,
                        s.cv
                    ),
                    None => r#"<td class="n">–</td><td></td><td></td><td></td>"#.into(),
                };
                let mut flagged: Vec<String> = f
                    .flagged
                    .iter()
                    .map(|c| {
                        format!(
                            "client {}: ×{} ({}/s)",
                            c.client,
                            c.ratio.map(|r| format!("{r:.3}")).unwrap_or_else(|| "∞".into()),
                            requests_per_sec(c.requests_per_sec)
                        )
                    })
                    .collect();
                for c in &f.taken_out {
                    flagged.push(format!("client {c}: taken out"));
                }
                let flagged = if flagged.is_empty() {
                    String::new()
                } else {
                    let lines: Vec<String> = flagged.iter().map(|l| esc(l)).collect();
                    format!(r#"<span class="flag">{}</span>"#, lines.join("<br>"))
                };
                let useful = if u.reasons.is_empty() {
                    r#"<span class="ok">yes</span>"#.to_string()
                } else {
                    format!("no: {}", esc(&u.reasons.join(", ")))
                };
                let _ = write!(
                    h,
                    r#"<tr data-run="{}" data-mix="{}">{}<td>{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td>{}{}<td>{flagged}</td><td>{useful}</td></tr>"#,
                    esc(&a.label),
                    f.mix,
                    run_cell(i, &a.label),
                    esc(&p.name),
                    f.mix,
                    int(f.threads),
                    int(f.clients_participating.into()),
                    sp(&f.rate),
                    sp(&f.latency)
                );
            }
        }
    }
    h.push_str("</table></section>");
}

fn summary(h: &mut String, runs: &[Run]) {
    h.push_str(r#"<section id="summary"><h2>Summary report</h2><p class="sub">WebBench's summary report, a row per mix, values as in results.json with each quantity's decimals (latency in µs; MB = 10⁶ bytes, Mbit = 10⁶ bits; wire bytes, headers included).</p>"#);
    for (i, r) in runs.iter().enumerate() {
        let _ = write!(
            h,
            r#"<h3>{}{}</h3><table class="summary" data-run="{}"><tr><th class="n">mix</th><th>phase</th><th class="n">clients</th><th class="n">taking part</th><th class="n">threads</th><th class="n">window s</th><th class="n">requests</th><th class="n">requests/s</th><th class="n">MB/s</th><th class="n">Mbit/s</th><th class="n">mean µs</th><th class="n">p50 µs</th><th class="n">p90 µs</th><th class="n">p99 µs</th><th class="n">p99.9 µs</th><th class="n">max µs</th><th class="n">errors</th><th>errors by kind</th><th class="n">connections</th><th class="n">reconnects</th><th class="n">in flight</th><th class="n">client CPU s</th><th class="n">client CPU % of cores</th><th>client-bound</th></tr>"#,
            swatch(i),
            esc(&r.label),
            esc(&r.label)
        );
        for m in &r.results.mixes {
            let f = &m.figures;
            let l = &f.latency_us;
            let td = |field: &str, v: String| format!(r#"<td class="n" data-field="{field}">{v}</td>"#);
            let mut partial = if m.partial { " (partial)" } else { "" }.to_string();
            // A mix the peak search chose says so, and when it ran.
            if let Some(s) = &m.search {
                partial.push_str(&format!(" (search step {}, {})", s.step, s.kind.name()));
            }
            let _ = write!(
                h,
                r#"<tr data-mix="{}">{}<td>{}{partial}</td>{}{}{}{}{}{}{}{}{}{}{}{}{}{}{}<td>{}</td>{}{}{}{}{}<td>{}</td></tr>"#,
                m.mix,
                td("mix", m.mix.to_string()),
                esc(&m.phase),
                td("clients", int(m.clients as u64)),
                td("clients_participating", int(m.clients_participating as u64)),
                td("threads", int(m.threads)),
                td("window_s", seconds(m.window_s)),
                td("requests", int(f.requests)),
                td("requests_per_sec", requests_per_sec(f.requests_per_sec)),
                td("mbytes_per_sec", mbs(f.bytes_per_sec)),
                td("mbit_per_sec", mbit_per_sec(f.mbit_per_sec)),
                td("latency_us.mean", mean_us(l.mean)),
                td("latency_us.p50", int(l.p50)),
                td("latency_us.p90", int(l.p90)),
                td("latency_us.p99", int(l.p99)),
                td("latency_us.p999", int(l.p999)),
                td("latency_us.max", int(l.max)),
                td("errors_total", int(f.errors_total)),
                esc(&nonzero_errors(m)),
                td("connections_opened", int(m.connections_opened)),
                td("reconnects", int(m.reconnects)),
                td("in_flight", int(m.in_flight)),
                td("client_cpu_s", seconds(m.client_cpu_s)),
                td("client_cpu.utilisation", pct(m.client_cpu.utilisation)),
                if m.client_cpu.client_bound {
                    r#"<span class="flag">yes</span>"#
                } else {
                    yes_no(false)
                },
            );
        }
        h.push_str("</table>");
    }
    h.push_str("</section>");
}

fn classes(h: &mut String, runs: &[Run]) {
    h.push_str(r#"<section id="classes"><h2>Classes</h2><p class="sub">Per mix and URL class: configured and observed share of requests, rates and latency.</p>"#);
    for (i, r) in runs.iter().enumerate() {
        let _ = write!(
            h,
            r#"<h3>{}{}</h3><table><tr><th class="n">mix</th><th class="n">threads</th><th>class</th><th>kind</th><th>SPI</th><th class="n">configured %</th><th class="n">observed %</th><th class="n">requests</th><th class="n">requests/s</th><th class="n">MB/s</th><th class="n">mean µs</th><th class="n">p50 µs</th><th class="n">p99 µs</th><th class="n">errors</th></tr>"#,
            swatch(i),
            esc(&r.label)
        );
        for m in &r.results.mixes {
            for c in &m.classes {
                let f = &c.figures;
                let _ = write!(
                    h,
                    r#"<tr><td class="n">{}</td><td class="n">{}</td><td>{}</td><td>{}</td><td>{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td></tr>"#,
                    m.mix,
                    int(m.threads),
                    esc(&c.name),
                    esc(&c.kind),
                    esc(c.spi.as_deref().unwrap_or("")),
                    pct100(c.percent),
                    pct100(c.observed_percent),
                    int(f.requests),
                    requests_per_sec(f.requests_per_sec),
                    mbs(f.bytes_per_sec),
                    mean_us(f.latency_us.mean),
                    int(f.latency_us.p50),
                    int(f.latency_us.p99),
                    int(f.errors_total)
                );
            }
        }
        h.push_str("</table>");
    }
    h.push_str("</section>");
}

fn clients(h: &mut String, runs: &[Run]) {
    h.push_str(r#"<section id="clients"><h2>Client data report</h2><p class="sub">WebBench's client data report, a row per mix × client: a server that treats clients unequally shows here.</p>"#);
    for (i, r) in runs.iter().enumerate() {
        let rows: usize = r.results.mixes.iter().map(|m| m.client_data.len()).sum();
        let _ = write!(
            h,
            r#"<details{}><summary>{}{} — {}</summary><table class="clients" data-run="{}"><tr><th class="n">mix</th><th class="n">client</th><th>address</th><th>taken out</th><th class="n">requests</th><th class="n">requests/s</th><th class="n">MB/s</th><th class="n">mean µs</th><th class="n">p50 µs</th><th class="n">p99 µs</th><th class="n">errors</th><th class="n">connections</th><th class="n">in flight</th><th class="n">delay s</th><th class="n">CPU s</th></tr>"#,
            if rows <= 64 { " open" } else { "" },
            swatch(i),
            esc(&r.label),
            plural(rows as u64, "row", "rows"),
            esc(&r.label)
        );
        for m in &r.results.mixes {
            for c in &m.client_data {
                let f = &c.figures;
                let _ = write!(
                    h,
                    r#"<tr data-mix="{}" data-client="{}"><td class="n">{}</td><td class="n">{}</td><td>{}</td><td>{}</td><td class="n" data-field="requests">{}</td><td class="n" data-field="requests_per_sec">{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td></tr>"#,
                    m.mix,
                    c.client,
                    m.mix,
                    c.client,
                    esc(c.address.as_deref().unwrap_or("")),
                    if c.taken_out {
                        r#"<span class="flag">yes</span>"#
                    } else {
                        yes_no(false)
                    },
                    int(f.requests),
                    requests_per_sec(f.requests_per_sec),
                    mbs(f.bytes_per_sec),
                    mean_us(f.latency_us.mean),
                    int(f.latency_us.p50),
                    int(f.latency_us.p99),
                    int(f.errors_total),
                    int(c.connections_opened),
                    int(c.in_flight),
                    seconds(c.delay_s),
                    seconds(c.cpu_s)
                );
            }
        }
        h.push_str("</table></details>");
    }
    h.push_str("</section>");
}

fn config(h: &mut String, runs: &[Run]) {
    h.push_str(r#"<section id="config"><h2>Configuration disclosure</h2><p class="sub">Everything needed to reproduce each run: the command, the machine, the suite file as run and the parameters of every mix.</p>"#);
    for (i, r) in runs.iter().enumerate() {
        let e = &r.results.environment;
        let s = &r.results.suite;
        let _ = write!(h, "<h3>{}{}</h3><table>", swatch(i), esc(&r.label));
        let cmd: Vec<String> = e.command.iter().map(|a| shell_quote(a)).collect();
        let rows: Vec<(&str, String)> = vec![
            ("results directory", r.dir.display().to_string()),
            ("command", cmd.join(" ")),
            ("benchlab version", e.benchlab_version.clone()),
            ("host", e.host.clone()),
            ("kernel", e.kernel.clone()),
            ("CPU", e.cpu.clone()),
            ("cores", e.cores.to_string()),
            ("target", e.target.clone()),
            ("started", utc(e.started_unix)),
            ("time scale", e.time_scale.to_string()),
            ("suite", format!("{} — {}", s.name, s.description)),
            ("suite file", s.file.clone()),
            ("seed", s.seed.to_string()),
            (
                "max clients",
                s.max_clients.map(|c| c.to_string()).unwrap_or_else(|| "–".into()),
            ),
            (
                "complete",
                if r.results.complete {
                    "yes: every mix ran to its end".into()
                } else {
                    "no".into()
                },
            ),
        ];
        for (k, v) in rows {
            let _ = write!(h, "<tr><th>{k}</th><td><code>{}</code></td></tr>", esc(&v));
        }
        h.push_str("</table>");
        h.push_str(r#"<table><tr><th>phase</th><th>workload</th><th>target</th><th>mixes</th></tr>"#);
        for p in &r.results.phases {
            let _ = write!(
                h,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&p.name),
                esc(&p.workload),
                esc(&p.target),
                p.mixes.iter().map(|m| m.to_string()).collect::<Vec<_>>().join(", ")
            );
        }
        h.push_str("</table>");
        h.push_str(r#"<table><tr><th class="n">mix</th><th class="n">clients</th><th class="n">threads/client</th><th class="n">delay s</th><th class="n">ramp-up s</th><th class="n">ramp-down s</th><th class="n">length s</th><th class="n">think s</th><th class="n">receive buffer</th><th class="n">HTTP/1.0 %</th><th>1.0 keep-alive</th><th class="n">persistent %</th><th>requests/connection</th><th class="n">timeout s</th><th>workload</th><th>target</th></tr>"#);
        for m in &r.results.mixes {
            let p = &m.params;
            let _ = write!(
                h,
                r#"<tr><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td><td>{}</td><td class="n">{}</td><td>{}</td><td class="n">{}</td><td>{}</td><td>{}</td></tr>"#,
                m.mix,
                int(m.clients.into()),
                int(p.threads_per_client.into()),
                seconds(p.delay_s),
                seconds(p.ramp_up_s),
                seconds(p.ramp_down_s),
                seconds(p.length_s),
                seconds(p.think_time_s),
                int(p.receive_buffer as u64),
                p.http10_percent,
                if p.http10_keepalive { "on" } else { "off" },
                p.persistent_percent,
                match p.requests_per_connection {
                    Some([a, b]) if a == b => a.to_string(),
                    Some([a, b]) => format!("{a}..{b}"),
                    None => "unlimited".into(),
                },
                seconds(p.timeout_s),
                esc(&p.workload),
                esc(&p.target)
            );
        }
        h.push_str("</table>");
        let _ = write!(
            h,
            "<details><summary>Suite file as run ({})</summary><pre>{}</pre></details>",
            esc(&s.file),
            esc(&s.text)
        );
    }
    h.push_str("</section>");
}

fn definitions(h: &mut String, o: &ReportOptions) {
    let _ = write!(
        h,
        r#"<section id="definitions"><h2>Definitions</h2><ul>
<li><b>Requests/s</b>: successful requests completed inside the measurement window (after ramp-up, before ramp-down) ÷ the window's length. Failed requests are errors, not requests. <b>Throughput</b>: wire bytes of successful responses (status line, headers, body) per second; MB = 10⁶ bytes, Mbit = 10⁶ bits.</li>
<li><b>Latency</b>: from the start of connect (new connection) or the first byte written (reused connection) to the last byte of the response, successful requests only; percentiles from exactly merged HDR histograms.</li>
<li><b>Peak</b>: the mix with the highest requests/s in a phase (the lightest such mix on ties); peak throughput is the mix with the highest bytes/s.</li>
<li><b>Shape past the peak</b>: the share of the peak kept at the last mix (last ÷ peak) and the lowest share after the peak (lowest later mix ÷ peak). Seed 004's Apache 1.3.4: 1,000 → 68 → 87 requests/s is 6.8 % lowest, 8.7 % at the last mix. A lowest share below <b>{collapse}</b> is flagged as a collapse.</li>
<li><b>Fairness</b>: per mix, each participating client's requests/s ÷ the median client rate; a client outside <b>±{tol:.0} %</b> is flagged (with three or more clients, one client served at a fraction f of the others shows f). Also min ÷ mean, max ÷ mean and coefficient of variation of client rates and client mean latencies. Clients taken out (could not connect at all) are listed apart.</li>
<li><b>Useful peak</b> (seed 001): the highest requests/s among the mixes where no client is flagged or taken out, p99 latency ≤ <b>{lim}</b> and errors ≤ <b>{err}</b> of completed requests. Change with <code>--latency-limit</code>, <code>--fairness-tolerance</code>, <code>--max-errors</code>.</li>
<li><b>SPICE efficiency</b> (seed 001): request efficiency = SPICE request rate ÷ static request rate; latency efficiency = static mean latency ÷ SPICE mean latency; at each phase's own peak and at each phase's highest load (most threads). The static baseline is {baseline}.</li>
<li><b>Price/performance</b> (seed 000): system price ÷ peak requests/s, in dollars per request/s.</li>
<li><b>Client-bound</b>: the load generator's CPU (user + system time of its worker threads and controller over the mix) above 90 % of the cores it may use (its OS threads, within its affinity mask); its figures may be benchlab's limit, not the server's. <b>Co-located</b>: the server is on the generator's machine (a loopback URL) and that machine's CPUs were above 90 % busy over the mix, by every process; generator and server competed for them.</li>
<li><b>Comparison</b> (<code>benchlab compare</code>): NEW regressed when, in any phase, its peak requests/s is below BASE's by more than the limit, or its p99 at BASE's peak load (same threads and clients) is above BASE's by more than the limit.</li>
</ul></section>"#,
        collapse = pct(o.collapse_share),
        tol = o.fairness_tolerance * 100.0,
        lim = ms(o.latency_limit_us as f64),
        err = pct(o.max_error_share),
        baseline = match &o.static_phase {
            Some(p) => format!("phase <code>{}</code> (<code>--static-phase</code>)", esc(p)),
            None => "the first phase whose classes are all static".into(),
        }
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_dates() {
        assert_eq!(utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc(951_782_400), "2000-02-29 00:00:00 UTC");
        assert_eq!(utc(1_700_000_000), "2023-11-14 22:13:20 UTC");
    }

    #[test]
    fn quoting() {
        assert_eq!(shell_quote("--out"), "--out");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
    }
}
