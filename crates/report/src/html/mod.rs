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
//!
//! The page is written with maud templates, which escape every value
//! (labels, suite text, error kinds) unless it is marked pre-escaped — only
//! the style sheet, the script and the embedded JSON are. One module per
//! section: [`headline`], [`comparison`], [`words`], [`charts`], [`tables`].

use crate::analyze::{PhaseAnalysis, RunAnalysis};
use crate::chart::{colour, Chart, Point, Series, VLine, XTicks, DASHES};
use crate::compare::Comparison;
use crate::{ReportOptions, Run};
use benchlab_format::{
    fixed, mbit_per_sec, mbytes_per_sec, mean_us, plural, requests_per_sec, seconds, share, thousands, yes_no, Quantity,
};
use benchlab_results::MixResult;
use maud::{html, Markup, PreEscaped, DOCTYPE};

mod charts;
mod comparison;
mod files;
mod gates;
mod headline;
mod resources;
mod tables;
mod words;

use charts::charts;
pub(crate) use charts::{busiest_nic, server_cpu};
use comparison::comparison;
use files::files;
use gates::{any_thresholds, thresholds};
use headline::headline;
use resources::resources;
pub(crate) use tables::cpu_list;
use tables::{classes, clients, config, definitions, efficiency, fairness, open_loop, summary};
use words::words;

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

/// Whether `run` is a file suite's: it leads with Mbit/s, as NetBench did.
fn is_file(run: &Run) -> bool {
    run.results.kind() == benchlab_results::RunKind::File
}

/// A peak's lead figure in words: `1,234.5 requests/s`, or `12.3 Mbit/s`
/// for a file suite.
fn lead(pk: &crate::PeakInfo, file: bool) -> String {
    if file {
        format!("{} Mbit/s", mbit_per_sec(pk.mbit_per_sec))
    } else {
        format!("{} requests/s", requests_per_sec(pk.requests_per_sec))
    }
}

/// The load of a peak in words: its threads, or the offered rate of an
/// open loop ("rate", not "threads", where the load is a rate).
fn load_text(pk: &crate::PeakInfo) -> String {
    match pk.offered_rate {
        Some(r) => format!("offered {} requests/s", requests_per_sec(r)),
        None => threads_text(pk.threads),
    }
}

/// The same, short, for table cells.
fn load_short(pk: &crate::PeakInfo) -> String {
    match pk.offered_rate {
        Some(r) => format!("{}/s offered", requests_per_sec(r)),
        None => format!("{} thr", int(pk.threads)),
    }
}

fn swatch(i: usize) -> Markup {
    html! { span.sw style={ "background:" (colour(i)) } {} }
}

fn run_cell(i: usize, label: &str) -> Markup {
    html! { td.run { (swatch(i)) (label) } }
}

/// A Unix time as `YYYY-MM-DD HH:MM:SS UTC`.
fn utc(unix: u64) -> String {
    let (y, m, d, h, mi, sec) = benchlab_results::utc_civil(unix);
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

pub(crate) const STYLE: &str = r#"
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
.alabel{font-size:12px;fill:#1b1b1b}.plabel{font-size:11px;font-weight:600}.vlabel{font-size:10px;fill:#666}.ltext{font-size:12px;fill:#1b1b1b}
pre{background:#f7f7f7;border:1px solid #e0e0e0;padding:10px;overflow:auto;font-size:12px;max-height:520px}
nav a{margin-right:14px}
#tip{position:absolute;display:none;background:#222;color:#fff;padding:4px 8px;border-radius:4px;font-size:12px;pointer-events:none;white-space:nowrap;z-index:10}
details>summary{cursor:pointer;font-weight:600;margin:8px 0}
"#;

/// Hover tooltips from each point's `data-tip`; plain DOM calls only, so it
/// runs (and cannot fail) in any browser.
pub(crate) const SCRIPT: &str = r#"
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
    let mut suites: Vec<&str> = Vec::new();
    for r in runs {
        if !suites.contains(&r.results.suite.name.as_str()) {
            suites.push(&r.results.suite.name);
        }
    }
    let title = match cmp {
        Some(c) => format!("benchlab compare — {} vs {}", c.base, c.new),
        None => format!("benchlab report — {}", suites.join(", ")),
    };
    let nav: Vec<(&str, &str)> = [
        ("headline", "Headline"),
        ("thresholds", "Thresholds"),
        ("analysis", "Analysis"),
        ("resources", "What limited the run"),
        ("charts", "Charts"),
        ("efficiency", "SPICE efficiency"),
        ("fairness", "Fairness"),
        ("files", "File operations"),
        ("summary", "Summary report"),
        ("open-loop", "Open loop"),
        ("flows", "Flows"),
        ("classes", "Classes"),
        ("clients", "Client data report"),
        ("config", "Configuration"),
        ("definitions", "Definitions"),
    ]
    .into_iter()
    .filter(|(id, _)| *id != "open-loop" || tables::any_open_loop(runs))
    .filter(|(id, _)| *id != "flows" || tables::any_flows(runs))
    .filter(|(id, _)| *id != "resources" || resources::any_resources(runs))
    .filter(|(id, _)| *id != "files" || runs.iter().any(is_file))
    .filter(|(id, _)| *id != "thresholds" || any_thresholds(runs))
    .collect();
    let markup = html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                link rel="icon" href="data:,";
                title { (title) }
                style { (PreEscaped(STYLE)) }
            }
            body {
                main {
                    h1 { (title) }
                    p.sub {
                        @for (i, r) in runs.iter().enumerate() {
                            span style="margin-right:18px" {
                                (swatch(i)) b { (r.label) } " — suite " (r.results.suite.name) ", "
                                (utc(r.results.environment.started_unix)) ", target " (r.results.environment.target)
                            }
                        }
                    }
                    nav { @for (id, text) in &nav { a href={ "#" (id) } { (text) } } }
                    @for a in analyses {
                        @for n in &a.notes { div.note { b { (a.label) ":" } " " (n) } }
                    }
                    (headline(runs, analyses, o))
                    (thresholds(runs))
                    @if let Some(c) = cmp { (comparison(c)) }
                    (words(runs, analyses, o))
                    (resources(runs))
                    (charts(runs, analyses, o))
                    (efficiency(analyses))
                    (fairness(runs, analyses, o))
                    (files(runs))
                    (summary(runs))
                    (open_loop(runs))
                    (tables::flows(runs))
                    (classes(runs))
                    (clients(runs))
                    (config(runs))
                    (definitions(o))
                }
                div #tip {}
                script type="application/json" id="benchlab-data" { (PreEscaped(embedded_data(runs, analyses, cmp, o))) }
                script { (PreEscaped(SCRIPT)) }
            }
        }
    };
    markup.into_string()
}

/// Everything the page shows, as JSON inside it (`benchlab.report/1`): the
/// options, each run's results.json and its analysis, the comparison. `<`
/// escaped inside JSON strings keeps `</script>` in any value from ending
/// the element; the JSON stays valid.
fn embedded_data(runs: &[Run], analyses: &[RunAnalysis], cmp: Option<&Comparison>, o: &ReportOptions) -> String {
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
    serde_json::to_string(&data)
        .unwrap_or_else(|_| "null".into())
        .replace('<', "\\u003c")
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
