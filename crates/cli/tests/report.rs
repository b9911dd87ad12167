//! `benchlab report` and `benchlab compare` on a results directory made by
//! the real binary (`benchlab run` against `benchlab serve`): every number of
//! the summary report table is results.json's, written with the one number
//! format (thousands separators, the quantity's decimals), the headline peak
//! and the client data report too; report.xlsx is written beside report.html;
//! `compare A A` exits 0 and a copy doctored to a 20 % lower peak (or a
//! 50 % higher p99 at the peak load) exits 3; bad usage exits 2.

mod common;
mod report_support;

use benchlab_format as fmt;
use report_support::{
    assert_success, attr, benchlab, copy_results, field, read_json, results_dir, s, scratch, tags, unescape,
};
use serde_json::Value;
use std::path::Path;

/// The summary table's fields and their values in a results.json mix.
fn expected(m: &Value, f: &str) -> f64 {
    let f = if f == "mbytes_per_sec" { "bytes_per_sec" } else { f };
    field(m, f)
        .as_f64()
        .unwrap_or_else(|| panic!("no number {f} in mix {}", m["mix"]))
}

/// A field's value as the page must show it: the one number format, with
/// the quantity's decimals.
fn shown(m: &Value, f: &str) -> String {
    let v = expected(m, f);
    match f {
        "requests_per_sec" | "peak_requests_per_sec" => fmt::requests_per_sec(v),
        "mbytes_per_sec" => fmt::mbytes_per_sec(v),
        "mbit_per_sec" => fmt::mbit_per_sec(v),
        "latency_us.mean" => fmt::mean_us(v),
        "window_s" | "client_cpu_s" => fmt::seconds(v),
        "client_cpu.utilisation" => fmt::share(v),
        _ => fmt::thousands(v as u64),
    }
}

/// Text of a table cell as a number: thousands separators removed.
fn cell_number(text: &str) -> f64 {
    let t: String = text.chars().filter(|c| *c != ',').collect();
    t.trim()
        .parse()
        .unwrap_or_else(|_| panic!("cell {text:?} is not a number"))
}

/// Every `<td ... data-field="F">TEXT</td>` of a row, in order.
fn cells(row: &str) -> Vec<(String, String)> {
    let mut v = Vec::new();
    let mut rest = row;
    while let Some(i) = rest.find("<td ") {
        let after = &rest[i..];
        let Some(j) = after.find('>') else { break };
        let tag = &after[..=j];
        let Some(k) = after.find("</td>") else { break };
        if let Some(f) = attr(tag, "data-field") {
            let text = &after[j + 1..k];
            let text = text.replace("<b>", "").replace("</b>", "");
            v.push((f.to_string(), unescape(&text)));
        }
        rest = &after[k..];
    }
    v
}

/// The rows `<tr data-mix="N">…</tr>` of the table that starts at `start`.
fn rows(table: &str) -> Vec<(usize, &str)> {
    let mut v = Vec::new();
    let mut rest = table;
    while let Some(i) = rest.find("<tr data-mix=\"") {
        let after = &rest[i..];
        let end = after.find("</tr>").expect("row end");
        let row = &after[..end];
        let n: usize = attr(row, "data-mix").and_then(|x| x.parse().ok()).expect("mix number");
        v.push((n, row));
        rest = &after[end..];
    }
    v
}

fn table<'a>(html: &'a str, class: &str, run: &str) -> &'a str {
    let open = format!(r#"<table class="{class}" data-run="{run}">"#);
    let i = html
        .find(&open)
        .unwrap_or_else(|| panic!("no {class} table for run {run}"));
    let end = html[i..].find("</table>").expect("table end") + i;
    &html[i..end]
}

fn report(res: &Path, out: &Path, extra: &[&str]) -> String {
    let mut args = vec!["report", s(res), "--out", s(out)];
    args.extend_from_slice(extra);
    let o = benchlab(&args);
    assert_success("benchlab report", &o);
    std::fs::read_to_string(out.join("report.html")).expect("report.html written")
}

#[test]
fn summary_table_and_headline_equal_results_json() {
    let res = results_dir("serve-2-workers", 2);
    let out = scratch("summary");
    let html = report(&res, &out, &["--price", "4995"]);
    let json = read_json(&res.join("results.json"));
    let mixes = json["mixes"].as_array().expect("mixes");
    assert_eq!(mixes.len(), 5, "the suite has 5 mixes");

    // report.xlsx is written beside it (a zip: "PK").
    let xlsx = std::fs::read(out.join("report.xlsx")).expect("report.xlsx written");
    assert!(xlsx.starts_with(b"PK"), "report.xlsx is not an XLSX (zip) file");

    // The summary report: every mix a row, every field equal to results.json.
    let label = "serve-2-workers";
    let t = table(&html, "summary", label);
    let rs = rows(t);
    assert_eq!(rs.len(), mixes.len(), "one summary row per mix");
    let mut checked = 0;
    for (n, row) in rs {
        let m = mixes.iter().find(|m| m["mix"] == n).expect("mix in results.json");
        let cs = cells(row);
        assert_eq!(cs.len(), 21, "mix {n}: every numeric column of the summary row");
        for (f, text) in cs {
            let want = shown(m, &f);
            assert_eq!(
                text,
                want,
                "mix {n} {f}: page shows {text:?}, results.json has {}",
                expected(m, &f)
            );
            checked += 1;
        }
    }
    assert_eq!(checked, 21 * mixes.len());

    // The client data report: requests and requests/s of every client.
    let t = table(&html, "clients", label);
    let mut client_rows = 0;
    for m in mixes {
        for c in m["client_data"].as_array().expect("client_data") {
            let open = format!(r#"<tr data-mix="{}" data-client="{}">"#, m["mix"], c["client"]);
            let i = t.find(&open).unwrap_or_else(|| panic!("no client row {open}"));
            let row = &t[i..i + t[i..].find("</tr>").expect("row end")];
            for (f, text) in cells(row) {
                assert_eq!(text, shown(c, &f), "client {} mix {}: {f}", c["client"], m["mix"]);
            }
            client_rows += 1;
        }
    }
    assert_eq!(client_rows, 1 + 2 + 3 + 1 + 3);

    // The headline: each phase's peak is the highest requests/s of its mixes.
    for phase in ["static", "inproc"] {
        let peak = mixes
            .iter()
            .filter(|m| m["phase"] == phase)
            .map(|m| m["requests_per_sec"].as_f64().expect("rate"))
            .fold(f64::NEG_INFINITY, f64::max);
        let open = format!(r#"<tr data-run="{label}" data-phase="{phase}">"#);
        let i = html
            .find(&open)
            .unwrap_or_else(|| panic!("no headline row for {phase}"));
        let row = &html[i..i + html[i..].find("</tr>").expect("row end")];
        let cs = cells(row);
        let shown = cs
            .iter()
            .find(|(f, _)| f == "peak_requests_per_sec")
            .expect("peak cell");
        assert_eq!(shown.1, fmt::requests_per_sec(peak), "{phase} peak");
        let price = cs.iter().find(|(f, _)| f == "price_per_rps").expect("price cell");
        let dollars = cell_number(price.1.trim_start_matches('$'));
        assert!(
            (dollars - 4995.0 / peak).abs() < 0.0001 + 1e-4 * (4995.0 / peak),
            "{phase}: $ per request/s {} for peak {peak}",
            price.1
        );
    }

    // SPICE efficiency of the inproc phase against the static phase.
    assert!(
        html.contains(r#"data-phase="inproc" data-at="peak""#),
        "no SPICE efficiency row at the peak"
    );
    assert!(html.contains("latency efficiency"));
    // The configuration disclosure carries the suite text and the command.
    assert!(html.contains("name = &quot;report-test&quot;"), "suite text missing");
    assert!(html.contains("--fileset"), "command missing");
    // Nothing is fetched: no external URL in src/href.
    for t in tags(&html, "script").into_iter().chain(tags(&html, "link")) {
        assert!(attr(t, "src").is_none(), "external script {t}");
        let href = attr(t, "href").unwrap_or("data:");
        assert!(href.starts_with("data:"), "external link {t}");
    }
}

fn compare(base: &Path, new: &Path, out: &Path, extra: &[&str]) -> (i32, String) {
    let mut args = vec!["compare", s(base), s(new), "--out", s(out)];
    args.extend_from_slice(extra);
    let o = benchlab(&args);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    (o.status.code().unwrap_or(-1), text)
}

/// Multiplies a field of every mix of `phase` by `k` (and its per-client
/// values too, so the doctored run stays self-consistent).
fn doctor(dir: &Path, phase: &str, k_rate: f64, k_p99: f64) {
    let p = dir.join("results.json");
    let mut v = read_json(&p);
    for m in v["mixes"].as_array_mut().expect("mixes") {
        if m["phase"] != phase {
            continue;
        }
        let r = m["requests_per_sec"].as_f64().expect("rate");
        m["requests_per_sec"] = Value::from(r * k_rate);
        let p99 = m["latency_us"]["p99"].as_u64().expect("p99");
        m["latency_us"]["p99"] = Value::from((p99 as f64 * k_p99).round() as u64);
    }
    std::fs::write(&p, serde_json::to_vec_pretty(&v).expect("JSON")).expect("write doctored results");
}

/// As `doctor`, for the phase's peak mix (most requests/s) only.
fn doctor_peak(dir: &Path, phase: &str, k_rate: f64, k_p99: f64) {
    let p = dir.join("results.json");
    let mut v = read_json(&p);
    let peak = v["mixes"]
        .as_array_mut()
        .expect("mixes")
        .iter_mut()
        .filter(|m| m["phase"] == phase)
        .max_by(|a, b| {
            a["requests_per_sec"]
                .as_f64()
                .partial_cmp(&b["requests_per_sec"].as_f64())
                .expect("rates")
        })
        .expect("a mix of the phase");
    let r = peak["requests_per_sec"].as_f64().expect("rate");
    peak["requests_per_sec"] = Value::from(r * k_rate);
    let p99 = peak["latency_us"]["p99"].as_u64().expect("p99");
    peak["latency_us"]["p99"] = Value::from((p99 as f64 * k_p99).round() as u64);
    std::fs::write(&p, serde_json::to_vec_pretty(&v).expect("JSON")).expect("write doctored results");
}

#[test]
fn compare_exits_3_on_a_regression_and_0_otherwise() {
    let res = results_dir("serve-2-workers", 2);
    let d = scratch("compare");
    let a = d.join("a");
    copy_results(&res, &a);

    let (code, text) = compare(&a, &a, &d.join("same"), &[]);
    assert_eq!(code, 0, "compare A A:\n{text}");
    assert!(text.contains("no regression beyond 5.0 %"), "{text}");
    let html = std::fs::read_to_string(d.join("same/report.html")).expect("compare report");
    assert!(html.contains("No regression beyond 5.0 %"));
    assert!(html.contains("Ratios per mix"));

    // A 20 % lower peak in the static phase.
    let slow = d.join("slow");
    copy_results(&res, &slow);
    doctor(&slow, "static", 0.8, 1.0);
    let (code, text) = compare(&a, &slow, &d.join("slow-out"), &[]);
    assert_eq!(code, 3, "compare with a 20 % lower peak:\n{text}");
    assert!(text.contains("REGRESSION: phase static: peak"), "{text}");
    let html = std::fs::read_to_string(d.join("slow-out/report.html")).expect("compare report");
    assert!(html.contains("verdict bad"), "the page shows the regression");
    // Within a 25 % limit it passes.
    let (code, text) = compare(&a, &slow, &d.join("slow-25"), &["--max-regression", "25%"]);
    assert_eq!(code, 0, "a 20 % lower peak within --max-regression 25%:\n{text}");

    // The same rates but p99 50 % higher everywhere in the inproc phase.
    let laggy = d.join("laggy");
    copy_results(&res, &laggy);
    doctor(&laggy, "inproc", 1.0, 1.5);
    let (code, text) = compare(&a, &laggy, &d.join("laggy-out"), &[]);
    assert_eq!(code, 3, "compare with a 50 % higher p99:\n{text}");
    assert!(text.contains("REGRESSION: phase inproc: p99"), "{text}");

    // A better NEW is no regression. Only the peak mix is made faster: with
    // every mix 30 % faster, a lighter mix would reach BASE's peak and its
    // p99 would be compared (matched throughput) — a p99 of this short real
    // run's, which may be anything.
    let fast = d.join("fast");
    copy_results(&res, &fast);
    doctor_peak(&fast, "static", 1.3, 0.9);
    let (code, text) = compare(&a, &fast, &d.join("fast-out"), &[]);
    assert_eq!(code, 0, "a faster NEW:\n{text}");
    // The page says so too, with each ratio's noise interval and where
    // NEW's p99 was taken.
    assert!(text.contains("improved:"), "{text}");
    let html = std::fs::read_to_string(d.join("fast-out/report.html")).expect("compare report");
    assert!(
        html.contains("Improved beyond the limit and the noise"),
        "the page names the improvement"
    );
    assert!(html.contains(r#"<span class="ok">improved</span>"#));
    assert!(html.contains("new p99 doing the same work"));
    assert!(html.contains("confidence"));
}

#[test]
fn bad_usage_exits_2_and_unreadable_results_exit_1() {
    let res = results_dir("serve-2-workers", 2);
    let d = scratch("usage");
    let o = benchlab(&["report", s(&res), s(&res)]);
    assert_eq!(o.status.code(), Some(2), "several runs without --out");
    assert!(String::from_utf8_lossy(&o.stderr).contains("--out"));
    let o = benchlab(&["report", s(&res), "--out", s(&d), "--price", "nosuch=100"]);
    assert_eq!(o.status.code(), Some(2), "--price for an unknown label");
    assert!(String::from_utf8_lossy(&o.stderr).contains("nosuch"));
    let o = benchlab(&["compare", s(&res), s(&res), "--max-regression", "abc"]);
    assert_eq!(o.status.code(), Some(2), "bad --max-regression");
    let missing = d.join("missing");
    let o = benchlab(&["report", s(&missing)]);
    assert_eq!(o.status.code(), Some(1), "a directory without results.json");
    assert!(String::from_utf8_lossy(&o.stderr).contains("results.json"));
}

/// An open-loop run's page: the load is the offered rate, not threads (0):
/// the load charts plot each mix at its `open_loop.rate` on an axis that
/// says so, the words name the offered rate where they named threads, and
/// the open-loop table shows offered and achieved rate, late sends, waits
/// at the in-flight cap and as-sent p50/p99 beside corrected latency, each
/// cell results.json's value in the one number format.
#[test]
fn open_loop_mixes_are_shown_by_their_rate() {
    let res = report_support::results_dir_of("open-loop", report_support::OPEN_LOOP_SUITE, 2);
    let out = scratch("open-loop-report");
    let html = report(&res, &out, &[]);
    let json = read_json(&res.join("results.json"));
    let mixes = json["mixes"].as_array().expect("mixes");
    assert_eq!(mixes.len(), 2);
    assert!(
        html.contains("load: offered rate, requests/s (clients below)"),
        "the load axis is the offered rate"
    );
    assert!(
        !html.contains("load: total threads"),
        "no thread axis for an all-open-loop phase"
    );
    let rate_chart = &html[html.find(r#"id="rate-0""#).expect("rate chart")..];
    let rate_chart = &rate_chart[..rate_chart.find("</figure>").expect("end")];
    for m in mixes {
        let offered = m["open_loop"]["rate"].as_f64().expect("open_loop.rate");
        let point = tags(rate_chart, "circle")
            .into_iter()
            .find(|c| attr(c, "data-mix") == Some(m["mix"].to_string().as_str()))
            .expect("a point per mix");
        assert_eq!(attr(point, "data-x"), Some(offered.to_string().as_str()));
        assert!(
            html.contains(&format!("offered {} requests/s", fmt::requests_per_sec(offered))),
            "mix {}: its load in words",
            m["mix"]
        );
    }
    let analysis = &html[html.find(r#"id="analysis""#).expect("analysis")..];
    let analysis = &analysis[..analysis.find("</section>").expect("end")];
    assert!(
        !analysis.contains(" threads"),
        "no threads in an open loop's words: {analysis}"
    );
    let t = table(&html, "open-loop", "open-loop");
    let got = rows(t);
    assert_eq!(got.len(), 2, "a row per open-loop mix");
    for (n, row) in got {
        let m = &mixes[n - 1];
        let ol = &m["open_loop"];
        for (f, text) in cells(row) {
            let want = match f.as_str() {
                "mix" => n.to_string(),
                "open_loop.rate" | "open_loop.sends_per_sec" => {
                    fmt::requests_per_sec(field(m, &f).as_f64().expect("rate"))
                }
                "requests_per_sec" => fmt::requests_per_sec(expected(m, &f)),
                "open_loop.peak_connections" => {
                    // Several clients' peaks summed: an upper bound, marked.
                    let bound = if ol["peak_connections_upper_bound"].as_bool().expect("bound") {
                        "≤ "
                    } else {
                        ""
                    };
                    format!(
                        "{bound}{}",
                        fmt::thousands(ol["peak_connections"].as_u64().expect("peak"))
                    )
                }
                "late_share" => {
                    fmt::share(ol["late_sends"].as_f64().expect("late") / ol["sends"].as_f64().expect("sends").max(1.0))
                }
                _ => fmt::thousands(field(m, &f).as_u64().unwrap_or_else(|| panic!("{f} in {m}"))),
            };
            let text = text.replace(r#"<span class="flag">"#, "").replace("</span>", "");
            assert_eq!(text, want, "mix {n} {f}");
        }
    }
    assert!(t.contains(r#"data-field="open_loop.latency_as_sent_us.p99""#));
    // The fairness and class tables give the rate in their threads column.
    let fair = &html[html.find(r#"id="fairness""#).expect("fairness")..];
    assert!(fair[..fair.find("</section>").expect("end")].contains("200.0/s offered"));
    let classes = &html[html.find(r#"id="classes""#).expect("classes")..];
    assert!(classes[..classes.find("</section>").expect("end")].contains("400.0/s offered"));
    assert!(t.contains(r#"data-field="open_loop.max_in_flight_hit""#));
    assert!(t.contains(r#"data-field="open_loop.peak_connections""#));
    // The workbook has the same table as cells, on its Open Loop sheet.
    open_loop_sheet_equals_results_json(&out.join("report.xlsx"), mixes);
    // Each mix's distribution chart has its as-sent curve beside the
    // corrected one, each point the stored as-sent histogram's value.
    for m in mixes {
        let b64 = m["histograms"]["latency_as_sent_us"]
            .as_str()
            .expect("as-sent histogram");
        let hist = report_support::histogram(b64);
        let points: Vec<_> = tags(&html, "circle")
            .into_iter()
            .filter(|c| attr(c, "data-chart") == Some("histograms.latency_as_sent_us"))
            .filter(|c| attr(c, "data-mix") == Some(m["mix"].to_string().as_str()))
            .collect();
        assert!(!points.is_empty(), "mix {}: an as-sent curve", m["mix"]);
        for c in points {
            let q: f64 = attr(c, "data-x").expect("data-x").parse().expect("quantile");
            let y: u64 = attr(c, "data-y").expect("data-y").parse().expect("latency");
            assert_eq!(y, hist.value_at_quantile(q), "mix {} at {q}", m["mix"]);
        }
    }
}

/// The workbook's Open Loop sheet: a header in words, a row per open-loop
/// mix, every cell results.json's value (TRUE/FALSE for the upper-bound
/// flag).
fn open_loop_sheet_equals_results_json(xlsx: &Path, mixes: &[Value]) {
    use calamine::{open_workbook, Data, Reader, Xlsx};
    let mut book: Xlsx<_> = open_workbook(xlsx).expect("calamine opens report.xlsx");
    let sheet = book.worksheet_range("Open Loop").expect("an Open Loop sheet");
    let header: Vec<String> = (0..sheet.width())
        .map(|c| sheet.get((0, c)).map(|d| d.to_string()).unwrap_or_default())
        .collect();
    let col = |name: &str| {
        header
            .iter()
            .position(|h| h == name)
            .unwrap_or_else(|| panic!("{name} in {header:?}"))
    };
    assert_eq!(sheet.height(), 1 + mixes.len(), "a row per open-loop mix");
    for (row, m) in (1..).zip(mixes) {
        let ol = &m["open_loop"];
        let num = |name: &str| match sheet.get((row, col(name))) {
            Some(Data::Float(f)) => *f,
            Some(Data::Int(i)) => *i as f64,
            other => panic!("{name}: {other:?}"),
        };
        let f = |v: &Value| v.as_f64().expect("a number");
        assert_eq!(num("Mix"), f(&m["mix"]));
        assert_eq!(num("Offered rate (requests/s)"), f(&ol["rate"]));
        assert_eq!(num("Sends/s (achieved)"), f(&ol["sends_per_sec"]));
        assert_eq!(num("Requests/s"), f(&m["requests_per_sec"]));
        assert_eq!(num("Late sends"), f(&ol["late_sends"]));
        assert_eq!(num("Waits at the in-flight cap"), f(&ol["max_in_flight_hit"]));
        assert_eq!(num("Latency p99 (µs)"), f(&m["latency_us"]["p99"]));
        assert_eq!(num("As-sent latency p99 (µs)"), f(&ol["latency_as_sent_us"]["p99"]));
        assert_eq!(num("Most connections open at once"), f(&ol["peak_connections"]));
        assert_eq!(
            sheet.get((row, col("Most open is a sum of clients' peaks"))),
            Some(&Data::Bool(ol["peak_connections_upper_bound"].as_bool().expect("bool")))
        );
    }
}

/// A client lost mid-mix (a remote client gone silent) is shown as lost in
/// the client data report, with why, instead of a plain "taken out".
#[test]
fn a_lost_client_is_shown_as_lost_with_why() {
    let res = results_dir("serve-2-workers", 2);
    let dir = scratch("lost-client");
    copy_results(&res, &dir);
    let p = dir.join("results.json");
    let mut v = read_json(&p);
    let mix = v["mixes"]
        .as_array_mut()
        .expect("mixes")
        .iter_mut()
        .find(|m| m["client_data"].as_array().is_some_and(|c| c.len() >= 2))
        .expect("a mix of two clients or more");
    let number = mix["mix"].clone();
    mix["client_data"][1]["taken_out"] = Value::from(true);
    mix["client_data"][1]["lost"] = Value::from("silent for 3 s <script>");
    std::fs::write(&p, serde_json::to_vec_pretty(&v).expect("JSON")).expect("write");
    let html = report(&dir, &scratch("lost-client-out"), &[]);
    let label = dir.file_name().expect("a name").to_string_lossy().into_owned();
    let t = table(&html, "clients", &label);
    let row = |client: u32| {
        let open = format!(r#"<tr data-mix="{number}" data-client="{client}">"#);
        let i = t.find(&open).unwrap_or_else(|| panic!("no client row {open}"));
        &t[i..i + t[i..].find("</tr>").expect("row end")]
    };
    assert!(
        row(2).contains(r#"<span class="flag" title="silent for 3 s &lt;script&gt;">lost</span>"#),
        "{}",
        row(2)
    );
    assert!(!row(1).contains("lost"), "{}", row(1));
}

/// Every mix says how together its clients began (docs/counting.md, "Start
/// spread"): results.json has it for each mix of the run (its clients all
/// in this process: one clock, no uncertainty), and the client data report
/// shows it, mix by mix, as results.json has it.
#[test]
fn each_mix_shows_its_start_spread() {
    let res = results_dir("serve-2-workers", 2);
    let html = report(&res, &scratch("start-spread"), &[]);
    let json = read_json(&res.join("results.json"));
    let mixes = json["mixes"].as_array().expect("mixes");
    let i = html.find(r#"<section id="clients">"#).expect("the client data report");
    let section = &html[i..i + html[i..].find("</section>").expect("its end")];
    for m in mixes {
        let s = &m["start_spread"];
        assert_eq!(s["clients"], m["clients"], "mix {}: every client began: {s}", m["mix"]);
        assert_eq!(s["clock_uncertainty_us"], 0, "mix {}: one clock", m["mix"]);
        let (min, max) = (s["min_us"].as_i64().expect("min"), s["max_us"].as_i64().expect("max"));
        assert_eq!(s["spread_us"].as_i64(), Some(max - min), "mix {}", m["mix"]);
        let line = format!(
            r#"<li data-mix="{}">mix {}: start spread {} µs over {} client"#,
            m["mix"],
            m["mix"],
            benchlab_format::group(&s["spread_us"].to_string()),
            s["clients"]
        );
        assert!(section.contains(&line), "no {line} in the client data report");
        assert!(
            section.contains(&format!(
                "{} to {} µs after their start",
                benchlab_format::group(&min.to_string()),
                benchlab_format::group(&max.to_string())
            )),
            "mix {}",
            m["mix"]
        );
    }
}
