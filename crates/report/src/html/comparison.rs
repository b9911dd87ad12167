//! The comparison section (`benchlab compare`, or `report` of two runs
//! with a regression limit).

use super::*;

pub(super) fn comparison(h: &mut String, c: &Comparison) {
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
