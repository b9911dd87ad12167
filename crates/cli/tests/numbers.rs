//! One number format in everything benchlab writes for people, checked on
//! real outputs: `benchlab http` against the reference server (`benchlab
//! serve`), a suite run's progress lines and summary table, the HTML report's
//! text and the XLSX workbook's headers. No bare number of 1,000 or more
//! (thousands separators everywhere; years, ports, paths and URLs aside), no
//! "1 clients" or "URL(s)", no snake_case column headers, booleans as
//! booleans. Also: each mix of results.json records the load generator's CPU
//! (non-zero, at most 100 % of its cores), and a client-bound mix is named
//! in the report's headline and the workbook's summary.

mod common;

use benchlab_format::column_title;
use calamine::{open_workbook, Data, Reader, Xlsx};
use common::{assert_success, run_benchlab, s, Serve};
use serde_json::Value;

/// Numbers of four or more digits written without separators, with the
/// text around them. Skipped: words holding `/` or `://` (paths, URLs),
/// digits glued to letters, `_`, `.`, `,`, `:` or `-` (names such as
/// `class3_5`, decimals, ports, times) and a four-digit year before `-`.
fn bare_numbers(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for word in text.split_whitespace() {
        if word.contains('/') {
            continue;
        }
        let b = word.as_bytes();
        let mut i = 0;
        while i < b.len() {
            if !b[i].is_ascii_digit() {
                i += 1;
                continue;
            }
            let start = i;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            let glued_before = start > 0 && (b[start - 1].is_ascii_alphanumeric() || b"_.,:-".contains(&b[start - 1]));
            let glued_after = i < b.len() && (b[i].is_ascii_alphabetic() || b[i] == b'_');
            let year = i - start == 4 && b.get(i) == Some(&b'-');
            if i - start >= 4 && !glued_before && !glued_after && !year {
                found.push(word.to_string());
            }
        }
    }
    found
}

/// Counts of one written with a plural noun (`1 clients`), and `(s)` plurals.
fn bad_plurals(text: &str) -> Vec<String> {
    // Words that end in "s" in the singular, and units.
    const SINGULAR_S: &[&str] = &["s", "ms", "µs", "class", "status", "process", "less", "plus"];
    let mut found = Vec::new();
    let words: Vec<&str> = text.split_whitespace().collect();
    for (i, w) in words.iter().enumerate() {
        // `URL(s)`; a lone `(s)` is the unit seconds.
        if w.find("(s)")
            .is_some_and(|i| i > 0 && w.as_bytes()[i - 1].is_ascii_alphabetic())
        {
            found.push(w.to_string());
        }
        let Some(next) = words.get(i + 1) else { continue };
        let noun: String = next.chars().take_while(|c| c.is_ascii_alphabetic()).collect();
        let one = w.trim_start_matches(['(', '[']) == "1";
        if one && noun.len() > 1 && noun.ends_with('s') && !SINGULAR_S.contains(&noun.as_str()) {
            found.push(format!("{w} {next}"));
        }
    }
    found
}

fn assert_people_format(what: &str, text: &str) {
    let bare = bare_numbers(text);
    assert!(
        bare.is_empty(),
        "{what}: numbers without thousands separators {bare:?} in:\n{text}"
    );
    let plurals = bad_plurals(text);
    assert!(plurals.is_empty(), "{what}: wrong plurals {plurals:?} in:\n{text}");
}

/// The text a reader sees on the page: tags, scripts and styles removed,
/// the suite file (`<pre>`, machine input shown as is) and code left out.
fn visible_text(html: &str) -> String {
    let mut t = html.to_string();
    for tag in ["script", "style", "pre", "code"] {
        let open = format!("<{tag}");
        let close = format!("</{tag}>");
        while let Some(i) = t.find(&open) {
            let Some(j) = t[i..].find(&close) else { break };
            t.replace_range(i..i + j + close.len(), " ");
        }
    }
    let mut out = String::with_capacity(t.len());
    let mut in_tag = false;
    for c in t.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => {
                in_tag = false;
                out.push(' ');
            }
            _ if !in_tag => out.push(c),
            _ => {}
        }
    }
    out.replace("&amp;", "&")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
}

#[test]
fn scanners_catch_the_old_formats() {
    // The README's old sample and the old summary lines.
    assert_eq!(
        bare_numbers("  requests    120306  120306.0 req/s"),
        ["120306", "120306.0"]
    );
    assert_eq!(bare_numbers("preflight: 614400 body bytes"), ["614400"]);
    assert!(bare_numbers(
        "120,306.0 req/s, 2026-11-23 10:43:46 UTC, http://127.0.0.1:18931/a dir00000/class3_5 0.1234"
    )
    .is_empty());
    assert_eq!(
        bad_plurals("benchlab http: 1 URL(s), 1 threads (virtual users) on 1 OS thread(s), 1 core(s)"),
        ["URL(s),", "1 threads", "thread(s),", "core(s)"]
    );
    assert_eq!(bad_plurals("mix 1 (tiny): 1 clients × 2 threads"), ["1 clients"]);
    assert!(bad_plurals("1 client, 1 thread, in 1 s, 1 ms, 1 class, time (s)").is_empty());
    assert_eq!(
        visible_text("<p title=\"12345\">a <b>1,234</b></p><pre>x = 12345</pre>").trim(),
        "a  1,234"
    );
}

/// A suite of two mixes of 2 s: 1 client × 1 thread, then 2 clients × 1
/// thread, over a small static file class (thousands of requests/s on
/// loopback, so rates pass 1,000).
const SUITE: &str = r#"
name = "numbers"
description = "people's numbers"
target = "http://127.0.0.1:9"
max_clients = 2
seed = 5

[defaults]
ramp_up = "500ms"
ramp_down = "500ms"
length = "2s"
threads_per_client = 1
timeout = "5s"

[workloads.small]
[[workloads.small.class]]
name = "small"
percent = 100
[workloads.small.class.fileset]
name = "specweb99"
classes = ["class1"]

[[mix]]
clients = 1
[[mix]]
clients = 2
"#;

#[test]
fn terminal_report_and_workbook_use_one_number_format() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let fs = tmp.path().join("www").join("fs");
    let out = run_benchlab(&["fileset", "generate", "specweb99", "--dirs", "1", "--out", s(&fs)]);
    assert_success("benchlab fileset generate", &out);
    let serve = Serve::start(&fs, &["--workers", "1"]);

    // `benchlab http`: one URL, one thread, one OS thread (the singulars),
    // a file of 1,000+ bytes (the preflight's sizes).
    let url = serve.url("/dir00000/class1_8");
    let out = run_benchlab(&["http", "-d", "1s", "-t", "1", "--os-threads", "1", &url]);
    assert_success("benchlab http", &out);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    assert_people_format("benchlab http", &text);
    assert!(
        text.contains("1 URL, 1 thread (virtual user) on 1 OS thread,"),
        "{text}"
    );
    assert!(text.contains("of 1 core,"), "{text}");

    // The open loop's lines: a rate of 1,000+ and a small cap, so sends
    // wait and a warning with counts is printed too.
    let slow = serve.url("/spice/inproc/sleep/dir00000/class1_8?ms=50");
    let out = run_benchlab(&[
        "http",
        "-d",
        "1s",
        "--rate",
        "1500",
        "--max-in-flight",
        "2",
        "--os-threads",
        "1",
        &slow,
    ]);
    assert_success("benchlab http --rate", &out);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    assert_people_format("benchlab http --rate", &text);
    assert!(text.contains("open loop at 1,500 requests/s"), "{text}");
    assert!(text.contains("--rate 1,500 constant:"), "{text}");

    // A suite run: progress lines (stderr) and the summary table (stdout).
    let suite = tmp.path().join("numbers.toml");
    std::fs::write(&suite, SUITE).expect("write the suite");
    let res = tmp.path().join("results");
    let fileset = format!("specweb99={}", s(&fs));
    let out = run_benchlab(&[
        "run",
        s(&suite),
        "--target",
        &format!("http://{}", serve.addr),
        "--fileset",
        &fileset,
        "--out",
        s(&res),
    ]);
    drop(serve);
    assert_success("benchlab run", &out);
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert_people_format("benchlab run (stderr)", &stderr);
    assert_people_format("benchlab run (stdout)", &stdout);
    assert!(stderr.contains("mix 1 (small): 1 client × 1 thread"), "{stderr}");
    assert!(stdout.contains("client CPU"), "no client CPU column:\n{stdout}");

    // results.json: the generator's CPU per mix.
    let json: Value = serde_json::from_slice(&std::fs::read(res.join("results.json")).expect("results.json"))
        .expect("results.json parses");
    let cores_here = json["environment"]["cores"].as_u64().expect("cores");
    for m in json["mixes"].as_array().expect("mixes") {
        let cpu = &m["client_cpu"];
        let f = |k: &str| cpu[k].as_f64().unwrap_or_else(|| panic!("no client_cpu.{k} in {cpu}"));
        let cores = cpu["cores"].as_u64().expect("client_cpu.cores");
        assert!(
            (1..=cores_here).contains(&cores),
            "mix {}: {cores} cores of {cores_here}",
            m["mix"]
        );
        assert!(
            f("user_s") + f("system_s") > 0.0,
            "mix {}: no CPU time: {cpu}",
            m["mix"]
        );
        assert!(
            f("utilisation") > 0.0 && f("utilisation") <= 1.0,
            "mix {}: {cpu}",
            m["mix"]
        );
        assert!(f("us_per_request") > 0.0, "mix {}: {cpu}", m["mix"]);
        // CPU seconds fit in the mix's wall time on its cores.
        let length = m["params"]["length_s"].as_f64().expect("length_s");
        assert!(
            f("user_s") + f("system_s") <= (length + 0.5) * cores as f64,
            "mix {}: {cpu}",
            m["mix"]
        );
        assert_eq!(
            cpu["client_bound"].as_bool(),
            Some(f("utilisation") > 0.9),
            "mix {}: {cpu}",
            m["mix"]
        );
        // The machine's busy share, all processes; the server is on it.
        let busy = f("machine_busy");
        assert!(busy > 0.0 && busy <= 1.0, "mix {}: {cpu}", m["mix"]);
        assert_eq!(
            cpu["co_located_saturated"].as_bool(),
            Some(busy > 0.9),
            "mix {}: {cpu}",
            m["mix"]
        );
    }

    // The HTML report's text.
    let html = std::fs::read_to_string(res.join("report.html")).expect("report.html");
    let text = visible_text(&html);
    assert_people_format("report.html", &text);
    assert!(
        text.contains("No mix was client-bound")
            || text.contains("CLIENT-BOUND: mix")
            || text.contains("CO-LOCATED: mix"),
        "no client-bound line in the headline"
    );

    // The workbook: headers in words, booleans as booleans.
    let mut book: Xlsx<_> = open_workbook(res.join("report.xlsx")).expect("calamine opens report.xlsx");
    for sheet in ["Summary", "Client Data", "Per-Class"] {
        let range = book.worksheet_range(sheet).expect("sheet");
        let header: Vec<String> = (0..range.width())
            .map(|c| match range.get_value((0, c as u32)) {
                Some(Data::String(h)) => h.clone(),
                other => panic!("{sheet}: header cell {c} is {other:?}"),
            })
            .collect();
        for h in &header {
            assert!(
                !h.contains('_') && h.chars().next().is_some_and(|c| !c.is_ascii_lowercase()),
                "{sheet}: header {h:?} is not words"
            );
        }
        for name in ["partial", "client_bound", "taken_out"] {
            if let Some(c) = header.iter().position(|h| *h == column_title(name)) {
                // The table's rows: a mix number in the first column (the
                // Summary has a line of text under its table).
                let rows = (1..range.height())
                    .take_while(|&r| matches!(range.get_value((r as u32, 0)), Some(Data::Float(_))))
                    .count();
                assert!(rows > 0, "{sheet}: no rows");
                for r in 1..=rows {
                    let v = range.get_value((r as u32, c as u32));
                    assert!(matches!(v, Some(Data::Bool(_))), "{sheet} row {r} {name}: {v:?}");
                }
            }
        }
    }

    // A client-bound mix (results.json doctored as a saturated generator
    // would write it) is named in the headline and the workbook's summary.
    let doctored = tmp.path().join("doctored");
    std::fs::create_dir_all(&doctored).expect("mkdir");
    let mut json = json;
    json["mixes"][1]["client_cpu"]["utilisation"] = 0.97.into();
    json["mixes"][1]["client_cpu"]["client_bound"] = true.into();
    // Mix 1: the generator under its cores, the machine saturated.
    json["mixes"][0]["client_cpu"]["utilisation"] = 0.4.into();
    json["mixes"][0]["client_cpu"]["client_bound"] = false.into();
    json["mixes"][0]["client_cpu"]["machine_busy"] = 0.99.into();
    json["mixes"][0]["client_cpu"]["co_located_saturated"] = true.into();
    std::fs::write(doctored.join("results.json"), serde_json::to_vec(&json).expect("JSON"))
        .expect("write results.json");
    let out = run_benchlab(&["report", s(&doctored), "--out", s(&doctored.join("report"))]);
    assert_success("benchlab report", &out);
    let html = std::fs::read_to_string(doctored.join("report").join("report.html")).expect("report.html");
    let headline = &html[html.find(r#"id="headline""#).expect("headline")..];
    let headline = &headline[..headline.find("</section>").expect("end of headline")];
    assert!(
        headline.contains(r#"data-client-bound="2""#)
            && headline.contains("CLIENT-BOUND: mix 2: the load generator used more than 90.0 %"),
        "the headline does not name the client-bound mix:\n{headline}"
    );
    assert!(
        headline.contains(r#"data-co-located="1""#)
            && headline.contains("CO-LOCATED: mix 1: the server ran on the load generator's machine"),
        "the headline does not name the co-located mix:\n{headline}"
    );
    let mut book: Xlsx<_> =
        open_workbook(doctored.join("report").join("report.xlsx")).expect("calamine opens report.xlsx");
    let summary = book.worksheet_range("Summary").expect("Summary");
    let note = (0..summary.height())
        .filter_map(|r| match summary.get_value((r as u32, 0)) {
            Some(Data::String(t)) => Some(t.clone()),
            _ => None,
        })
        .find(|t| t.starts_with("CLIENT-BOUND"))
        .expect("no CLIENT-BOUND line on the Summary sheet");
    assert!(note.starts_with("CLIENT-BOUND: mix 2: "), "{note}");
    assert!(
        (0..summary.height()).any(|r| matches!(summary.get_value((r as u32, 0)),
            Some(Data::String(t)) if t.starts_with("CO-LOCATED: mix 1: "))),
        "no CO-LOCATED line on the Summary sheet"
    );
    let bound_col = (0..summary.width())
        .find(|&c| summary.get_value((0, c as u32)) == Some(&Data::String(column_title("client_bound"))))
        .expect("a client-bound column");
    assert_eq!(summary.get_value((2, bound_col as u32)), Some(&Data::Bool(true)));
    assert_eq!(summary.get_value((1, bound_col as u32)), Some(&Data::Bool(false)));
}
