//! report.html in a real browser: headless Chromium loads the page of two
//! real runs side by side (benchlab serve with 2 workers and with 1), the
//! test reads every plotted point back from the DOM Chromium dumps after its
//! scripts ran and compares them, chart by chart and run by run, with
//! results.json (the response-time distributions with the latency at each
//! plotted quantile of the mix's stored HDR histogram, decoded here); each
//! run's peak is ringed on the requests/s chart and its collapse threshold
//! drawn; the page must log nothing to the console (no script error);
//! a screenshot is saved for a person to look at, in the test's temp dir and
//! as `target/report-screenshot.png`.
//!
//! Chromium is required (`scripts/test.sh` installs the Debian package `chromium`):
//! without it the test fails, it never skips.

mod common;
mod report_support;

use report_support::{assert_success, attr, benchlab, histogram, read_json, results_dir, s, scratch, tags, unescape};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The browser binary, or a failure that says how to install it.
fn chromium() -> PathBuf {
    let names = ["chromium", "chromium-browser", "google-chrome", "google-chrome-stable"];
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        for n in names {
            let p = dir.join(n);
            if p.is_file() {
                return p;
            }
        }
    }
    panic!(
        "Chromium is not installed (looked for {} in PATH): run `bash scripts/test.sh` or `apt-get install -y chromium`; \
         this test needs a real browser and does not skip",
        names.join(", ")
    );
}

/// Runs headless Chromium on `url` with `extra` flags; returns (stdout,
/// stderr). Killed and failed after two minutes.
fn run_chromium(url: &str, extra: &[String]) -> (String, String) {
    let profile = tempfile::tempdir().expect("profile dir");
    let mut args: Vec<String> = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--no-first-run",
        "--disable-sync",
        "--enable-logging=stderr",
        "--v=0",
    ]
    .iter()
    .map(|a| a.to_string())
    .collect();
    args.push(format!("--user-data-dir={}", s(profile.path())));
    args.extend_from_slice(extra);
    args.push(url.to_string());
    let mut child = Command::new(chromium())
        .args(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start chromium");
    let mut out = child.stdout.take().expect("stdout");
    let mut err = child.stderr.take().expect("stderr");
    let t_out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let t_err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let deadline = Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(st) = child.try_wait().expect("wait chromium") {
            break st;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish within 2 minutes: {args:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let (o, e) = (t_out.join().unwrap_or_default(), t_err.join().unwrap_or_default());
    assert!(status.success(), "chromium failed ({status}): {args:?}\nstderr:\n{e}");
    (o, e)
}

/// The console lines Chromium logged (it logs every console message and
/// uncaught exception of the page as `…:CONSOLE…` on stderr).
fn console_lines(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| l.contains(":CONSOLE") || l.contains("Uncaught"))
        .collect()
}

fn file_url(p: &Path) -> String {
    let abs = std::fs::canonicalize(p).expect("absolute path");
    format!("file://{}", s(&abs))
}

/// Key of a plotted point: chart, run, mix and (class or second).
type Key = (String, String, u64, String);

fn num(v: &Value, what: &str) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("{what} is not a number: {v}"))
}

/// Every point the page must plot for `run`, from its results.json.
fn expected_points(
    label: &str,
    json: &Value,
    multi_class_phases: &BTreeSet<String>,
    into: &mut BTreeMap<Key, (f64, f64)>,
) {
    for m in json["mixes"].as_array().expect("mixes") {
        let mix = m["mix"].as_u64().expect("mix");
        let threads = num(&m["threads"], "threads");
        let mut put = |chart: &str, extra: String, x: f64, y: f64| {
            into.insert((chart.to_string(), label.to_string(), mix, extra), (x, y));
        };
        put(
            "requests_per_sec",
            String::new(),
            threads,
            num(&m["requests_per_sec"], "rate"),
        );
        put(
            "bytes_per_sec",
            String::new(),
            threads,
            num(&m["bytes_per_sec"], "bytes/s"),
        );
        put(
            "errors_total",
            String::new(),
            threads,
            num(&m["errors_total"], "errors"),
        );
        for p in ["p50", "p90", "p99"] {
            let v = num(&m["latency_us"][p], p);
            // A latency of 0 (no successful request) has no place on a log axis.
            if v > 0.0 {
                put(&format!("latency_us.{p}"), String::new(), threads, v);
            }
        }
        let phase = m["phase"].as_str().expect("phase");
        if multi_class_phases.contains(phase) {
            for c in m["classes"].as_array().expect("classes") {
                let name = c["name"].as_str().expect("class name").to_string();
                put(
                    "classes.requests_per_sec",
                    name,
                    threads,
                    num(&c["requests_per_sec"], "class rate"),
                );
            }
        }
        if multi_class_phases.contains(phase) {
            for c in m["classes"].as_array().expect("classes") {
                let name = c["name"].as_str().expect("class name").to_string();
                for p in ["p50", "p99"] {
                    let v = num(&c["latency_us"][p], "class latency");
                    if v > 0.0 {
                        put(&format!("classes.latency_us.{p}"), name.clone(), threads, v);
                    }
                }
            }
        }
        for sec in m["per_second"].as_array().expect("per_second") {
            let second = num(&sec["second"], "second");
            put(
                "per_second.requests",
                format!("{second}"),
                second,
                num(&sec["requests"], "requests"),
            );
            put(
                "per_second.errors",
                format!("{second}"),
                second,
                num(&sec["errors"], "errors"),
            );
            put(
                "per_second.connections_opened",
                format!("{second}"),
                second,
                num(&sec["connections_opened"], "connections"),
            );
            for key in ["latency_p50_us", "latency_p99_us"] {
                // A second without a successful request has no latency.
                let v = num(&sec[key], key);
                if v > 0.0 {
                    put(&format!("per_second.{key}"), format!("{second}"), second, v);
                }
            }
        }
        // The distribution curve: HdrHistogram's plotter's quantiles, ten a
        // decade of 1/(1-q) up to 99.999 %, those the count can tell apart.
        // An open-loop mix has its as-sent curve too.
        for key in ["latency_us", "latency_as_sent_us"] {
            let Some(b64) = m["histograms"][key].as_str() else {
                assert_eq!(key, "latency_as_sent_us", "every mix has a latency histogram");
                continue;
            };
            let hist = histogram(b64);
            if hist.is_empty() {
                continue;
            }
            for k in 0..=50 {
                let q = 1.0 - 10f64.powf(-(k as f64) / 10.0);
                if (1.0 - q) * hist.len() as f64 >= 1.0 - 1e-9 {
                    put(
                        &format!("histograms.{key}"),
                        q.to_string(),
                        q,
                        hist.value_at_quantile(q) as f64,
                    );
                }
            }
        }
    }
}

fn parse_f64(s: &str, what: &str) -> f64 {
    s.parse().unwrap_or_else(|_| panic!("{what} {s:?} is not a number"))
}

#[test]
fn every_plotted_point_matches_results_json_and_the_page_has_no_script_error() {
    let browser = chromium();

    // The console check must be able to see an error: a page that throws is
    // caught, so a silent page below really means no error.
    let d = scratch("browser");
    let bad = d.join("bad.html");
    std::fs::write(
        &bad,
        "<!DOCTYPE html><html><body><p>x</p><script>null.f();</script></body></html>",
    )
    .expect("write bad.html");
    let (_, err) = run_chromium(&file_url(&bad), &["--dump-dom".into()]);
    assert!(
        console_lines(&err).iter().any(|l| l.contains("Uncaught")),
        "{} logged no console line for a page that throws: the console check would miss errors.\nstderr:\n{err}",
        browser.display()
    );

    // Two real runs side by side.
    let runs = [
        ("serve-2-workers", results_dir("serve-2-workers", 2)),
        ("serve-1-worker", results_dir("serve-1-worker", 1)),
    ];
    let out = d.join("report");
    let o = benchlab(&[
        "report",
        s(&runs[0].1),
        s(&runs[1].1),
        "--out",
        s(&out),
        "--price",
        "serve-2-workers=4995",
        "--price",
        "serve-1-worker=3995",
    ]);
    assert_success("benchlab report", &o);
    let page = out.join("report.html");

    let (dom, err) = run_chromium(&file_url(&page), &["--dump-dom".into()]);
    let console = console_lines(&err);
    assert!(
        console.is_empty(),
        "the page logged to the console:\n{}",
        console.join("\n")
    );
    assert!(
        dom.contains("benchlab-data"),
        "Chromium dumped no report DOM:\n{}",
        &dom[..dom.len().min(2000)]
    );

    // Phases where some mix has several classes get a per-class chart.
    let jsons: Vec<Value> = runs.iter().map(|(_, p)| read_json(&p.join("results.json"))).collect();
    let mut multi = BTreeSet::new();
    for j in &jsons {
        for m in j["mixes"].as_array().expect("mixes") {
            if m["classes"].as_array().map_or(0, Vec::len) > 1 {
                multi.insert(m["phase"].as_str().expect("phase").to_string());
            }
        }
    }
    assert!(multi.contains("static"), "the static phase has two classes");
    let mut want = BTreeMap::new();
    for ((label, _), j) in runs.iter().zip(&jsons) {
        expected_points(label, j, &multi, &mut want);
    }

    // Every plotted point read back from the live DOM.
    let mut got: BTreeMap<Key, (f64, f64)> = BTreeMap::new();
    let mut fills: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for c in tags(&dom, "circle") {
        let Some(chart) = attr(c, "data-chart") else { continue };
        let run = unescape(attr(c, "data-run").expect("data-run"));
        let mix: u64 = attr(c, "data-mix").and_then(|m| m.parse().ok()).expect("data-mix");
        let x = parse_f64(attr(c, "data-x").expect("data-x"), "data-x");
        let y = parse_f64(attr(c, "data-y").expect("data-y"), "data-y");
        let extra = if chart.starts_with("per_second.") {
            format!("{x}")
        } else if chart.starts_with("histograms.") {
            attr(c, "data-x").expect("data-x").to_string()
        } else {
            attr(c, "data-class").map(unescape).unwrap_or_default()
        };
        let key = (chart.to_string(), run.clone(), mix, extra);
        assert!(
            got.insert(key.clone(), (x, y)).is_none(),
            "point plotted twice: {key:?}"
        );
        // The distribution charts colour mixes, one chart per run.
        if !chart.starts_with("histograms.") {
            fills
                .entry(run)
                .or_default()
                .insert(attr(c, "stroke").unwrap_or("").to_string());
        }
    }
    let missing: Vec<_> = want.keys().filter(|k| !got.contains_key(*k)).take(10).collect();
    let extra: Vec<_> = got.keys().filter(|k| !want.contains_key(*k)).take(10).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "points missing from the page: {missing:?}\npoints not in results.json: {extra:?}"
    );
    for (k, w) in &want {
        assert_eq!(got[k], *w, "point {k:?}: page has {:?}, results.json has {w:?}", got[k]);
    }
    let charts: BTreeSet<&str> = want.keys().map(|k| k.0.as_str()).collect();
    assert_eq!(
        charts.len(),
        15,
        "requests/s, bytes/s, errors, p50, p90, p99, class requests/s, class p50 and p99, \
         per second: requests, p50, p99, errors, connections; distribution: {charts:?}"
    );

    // Runs in distinct colours, one colour per run.
    let a = &fills["serve-2-workers"];
    let b = &fills["serve-1-worker"];
    assert_eq!((a.len(), b.len()), (1, 1), "one colour per run: {fills:?}");
    assert_ne!(a, b, "two runs in the same colour");

    // Readable: labelled axes with units and legends on every chart.
    let figures = dom.matches(r#"<figure class="chart""#).count();
    assert_eq!(
        figures, 22,
        "11 charts per phase: requests/s, MB/s, latency, errors, classes, class latency, \
         requests, latency and errors/connections per second, a distribution per run"
    );
    for (i, fig) in dom.split(r#"<figure class="chart""#).skip(1).enumerate() {
        let fig = &fig[..fig.find("</figure>").expect("figure end")];
        assert!(fig.contains(r#"class="legend""#), "chart {i} has no legend");
        assert!(fig.contains(r#"class="alabel""#), "chart {i} has no axis labels");
    }
    for label in [
        "requests/s (successful)",
        "throughput (MB/s, 10⁶ bytes/s)",
        "latency (ms, log scale)",
        "failed requests in the window",
        "load: total threads (clients below)",
        "requests completed in the second",
        "count in the second",
        "percentile (log scale of 1 ÷ (1 − percentile))",
    ] {
        assert!(dom.contains(label), "axis label {label:?} missing");
    }
    assert!(dom.contains("$ per request/s"), "price/performance column missing");

    // Each run's peak ringed on each phase's requests/s chart, at the mix of
    // the highest requests/s in results.json, and its collapse threshold
    // (the default 50 %) drawn at half that rate.
    for ((label, _), j) in runs.iter().zip(&jsons) {
        for (pi, phase) in ["static", "inproc"].iter().enumerate() {
            let mixes: Vec<&Value> = j["mixes"]
                .as_array()
                .expect("mixes")
                .iter()
                .filter(|m| m["phase"] == *phase)
                .collect();
            let mut peak = mixes[0];
            for m in &mixes {
                if num(&m["requests_per_sec"], "rate") > num(&peak["requests_per_sec"], "rate") {
                    peak = m;
                }
            }
            let chart = &dom[dom.find(&format!(r#"id="rate-{pi}""#)).expect("rate chart")..];
            let chart = &chart[..chart.find("</figure>").expect("chart end")];
            let ring = tags(chart, "g")
                .into_iter()
                .find(|g| {
                    attr(g, "class") == Some("peak-mark") && attr(g, "data-run").map(unescape).as_deref() == Some(label)
                })
                .unwrap_or_else(|| panic!("{label}: no peak ring on the {phase} requests/s chart"));
            assert_eq!(
                attr(ring, "data-mix"),
                Some(peak["mix"].to_string().as_str()),
                "{label} {phase} peak"
            );
            let line = tags(chart, "g")
                .into_iter()
                .find(|g| {
                    attr(g, "data-line") == Some("collapse")
                        && attr(g, "data-run").map(unescape).as_deref() == Some(label)
                })
                .unwrap_or_else(|| panic!("{label}: no collapse line on the {phase} requests/s chart"));
            let at = parse_f64(attr(line, "data-y").expect("data-y"), "collapse line");
            assert_eq!(
                at,
                num(&peak["requests_per_sec"], "rate") * 0.5,
                "{label} {phase} threshold"
            );
        }
    }

    // The embedded data parses and holds both runs.
    let start = dom.find(r#"id="benchlab-data">"#).expect("data element") + r#"id="benchlab-data">"#.len();
    let end = start + dom[start..].find("</script>").expect("data end");
    let data: Value = serde_json::from_str(&dom[start..end]).expect("embedded JSON");
    assert_eq!(data["runs"].as_array().map(Vec::len), Some(2));

    // A screenshot for a person: the test's temp dir and target/.
    let shot_dir = tempfile::tempdir().expect("screenshot dir");
    let shot = shot_dir.path().join("report.png");
    let (_, err) = run_chromium(
        &file_url(&page),
        &[format!("--screenshot={}", s(&shot)), "--window-size=1400,5000".into()],
    );
    let console = console_lines(&err);
    assert!(
        console.is_empty(),
        "the page logged to the console:\n{}",
        console.join("\n")
    );
    let png = std::fs::read(&shot).unwrap_or_else(|e| panic!("no screenshot at {}: {e}", shot.display()));
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 20_000,
        "screenshot is not a PNG of a page"
    );
    let target = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("target dir")
        .join("report-screenshot.png");
    std::fs::copy(&shot, &target).unwrap_or_else(|e| panic!("copy screenshot to {}: {e}", target.display()));
    std::fs::copy(&shot, d.join("report-screenshot.png")).expect("keep a copy beside the report");
    eprintln!("screenshot: {} (and {})", target.display(), shot.display());
}
