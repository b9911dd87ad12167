//! `benchlab workload from-log`, run as the real binary on a generated log:
//! the exact URLs, weights and sizes in the workload it writes, the
//! malformed lines it reports, plain and gzip, and its usage errors.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_benchlab");

/// Successful GETs per URL as logged: (logged target, 200s, size, 304s).
/// 100 successful GETs in all. `/b\"q.html` is Apache's escape of `/b"q.html`.
const URLS: [(&str, u64, u64, u64); 10] = [
    ("/index.html", 38, 4096, 2),
    ("/a.gif", 20, 1000, 0),
    (r#"/b\"q.html"#, 10, 2000, 0),
    ("/only304", 0, 0, 10),
    ("/q?x=1", 5, 10, 0),
    ("/q?x=2", 5, 10, 0),
    ("/c", 4, 7, 0),
    ("/d", 3, 7, 0),
    ("/e", 2, 7, 0),
    ("/f", 1, 7, 0),
];

/// Line numbers (from 1) of the malformed lines in the generated log.
const MALFORMED_AT: [usize; 6] = [3, 20, 57, 80, 100, 111];

fn line(target: &str, method: &str, status: u16, size: &str, i: usize) -> String {
    format!(
        "10.0.{}.{} - - [10/Oct/2000:13:55:{:02} -0700] \"{method} {target} HTTP/1.1\" {status} {size} \
         \"http://example.com/\" \"Mozilla/4.0 (compatible; test {i})\"",
        i / 250,
        i % 250,
        i % 60
    )
}

/// The log: successful GETs spread round-robin over the URLs, some noise
/// (other methods and statuses), and malformed lines at [`MALFORMED_AT`].
fn log_text() -> String {
    let mut left: Vec<(u64, u64)> = URLS.iter().map(|u| (u.1, u.3)).collect();
    let mut lines = Vec::new();
    while left.iter().any(|l| l.0 + l.1 > 0) {
        for (u, l) in URLS.iter().zip(left.iter_mut()) {
            let i = lines.len();
            if l.0 > 0 {
                l.0 -= 1;
                lines.push(line(u.0, "GET", 200, &u.2.to_string(), i));
            } else if l.1 > 0 {
                l.1 -= 1;
                lines.push(line(u.0, "GET", 304, "-", i));
            }
        }
    }
    for (method, target, status) in [
        ("POST", "/form", 200),
        ("POST", "/form", 302),
        ("POST", "/index.html", 200),
        ("HEAD", "/index.html", 200),
        ("GET", "/index.html", 404),
        ("GET", "/missing", 404),
        ("GET", "/cgi", 500),
    ] {
        let i = lines.len();
        lines.insert(i / 2, line(target, method, status, "0", i));
    }
    let bad = [
        "this is not a log line".to_owned(),
        "10.0.0.1 - - [10/Oct/2000:13:55:36 -0700] \"GET /cut-off".to_owned(),
        String::new(),
        "10.0.0.1 - - [10/Oct/2000:13:55:36 -0700] \"GET /x HTTP/1.1\" 200 12kB".to_owned(),
        "x".repeat(300),
        "10.0.0.1 - - 10/Oct/2000".to_owned(),
    ];
    for (at, bad) in MALFORMED_AT.iter().zip(bad) {
        lines.insert(at - 1, bad);
    }
    assert_eq!(lines.len(), 113);
    let mut text = lines.join("\n");
    text.push('\n');
    text
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(data).expect("gzip to memory");
    gz.finish().expect("gzip to memory")
}

fn run(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().expect("run benchlab")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The URLs of the written workload: (path, weight, size).
fn urls_of(path: &Path) -> (String, Vec<(String, i64, Option<i64>)>) {
    let doc = std::fs::read_to_string(path).expect("workload written");
    let v: toml::Table = toml::from_str(&doc).unwrap_or_else(|e| panic!("workload is not TOML: {e}\n{doc}"));
    assert_eq!(v["name"].as_str(), Some("from-log"));
    let classes = v["class"].as_array().expect("[[class]]");
    assert_eq!(classes.len(), 1);
    let class = classes[0].as_table().expect("class table");
    assert_eq!(class["name"].as_str(), Some("static"));
    assert_eq!(class["percent"].as_float(), Some(100.0));
    assert_eq!(class["kind"].as_str(), Some("static"));
    let urls = class["url"]
        .as_array()
        .expect("[[class.url]]")
        .iter()
        .map(|u| {
            let u = u.as_table().expect("url table");
            (
                u["path"].as_str().expect("path").to_owned(),
                u["weight"].as_integer().expect("integer weight"),
                u.get("size").map(|s| s.as_integer().expect("integer size")),
            )
        })
        .collect();
    let first = doc.lines().next().unwrap_or_default().to_owned();
    (first, urls)
}

fn expect(list: &[(&str, i64, Option<i64>)]) -> Vec<(String, i64, Option<i64>)> {
    list.iter().map(|(p, w, s)| (p.to_string(), *w, *s)).collect()
}

fn write_log(dir: &Path, name: &str, data: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, data).expect("write log");
    p
}

fn check_cover_80(log: &Path, out: &Path) {
    let (log, out_s) = (log.to_str().expect("utf-8 path"), out.to_str().expect("utf-8 path"));
    let o = run(&["workload", "from-log", log, "--cover", "80%", "--out", out_s]);
    let stdout = text(&o.stdout);
    assert!(o.status.success(), "stdout:\n{stdout}\nstderr:\n{}", text(&o.stderr));
    let (first, urls) = urls_of(out);
    assert_eq!(
        urls,
        expect(&[
            ("/index.html", 40, Some(4096)),
            ("/a.gif", 20, Some(1000)),
            ("/b\"q.html", 10, Some(2000)),
            ("/only304", 10, None),
        ])
    );
    assert!(first.starts_with("# benchlab workload, from-log: "), "{first}");
    assert!(
        first.ends_with(", 4 of 10 URLs cover 80.0 % of 100 successful GETs"),
        "{first}"
    );

    // The report: counts and the first five malformed lines by number.
    assert!(stdout.contains("malformed lines (first 5 of 6):"), "{stdout}");
    for (n, want) in [
        (3, "this is not a log line"),
        (20, "GET /cut-off"),
        (57, "blank line"),
        (80, "12kB"),
        (100, "xxxxxxxx"),
    ] {
        let l = stdout
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("line {n}:")))
            .unwrap_or_else(|| panic!("no malformed line {n} in:\n{stdout}"));
        assert!(l.contains(want), "{l}");
    }
    assert!(!stdout.contains("line 111:"), "only five are sampled:\n{stdout}");
    // The 300-character line is cut to 200.
    assert!(stdout.contains(&format!("{}\n", "x".repeat(200))) && !stdout.contains(&"x".repeat(201)));
    let row = |label: &str| {
        stdout
            .lines()
            .find(|l| l.trim_start().starts_with(label))
            .unwrap_or_else(|| panic!("no `{label}` in:\n{stdout}"))
            .to_owned()
    };
    assert!(row("lines").contains(" 113"), "{stdout}");
    assert!(
        row("non-GET").contains(" 4 ") && row("non-GET").contains("POST 3, HEAD 1"),
        "{stdout}"
    );
    assert!(row("GET, other status").contains("4xx 2, 5xx 1"), "{stdout}");
    assert!(
        row("successful GET").contains(" 100 ") && row("successful GET").contains("304: 12"),
        "{stdout}"
    );
    assert!(row("share of requests").contains("80.0 %"), "{stdout}");
    // Request-weighted mean over the sized kept URLs: (40×4096 + 20×1000 + 10×2000) / 70.
    let mean = ((40 * 4096 + 20 * 1000 + 10 * 2000) as f64 / 70.0).round() as u64;
    assert!(row("mean size").contains(&benchlab_logs_thousands(mean)), "{stdout}");
    // Top 10 % of 10 URLs is one: /index.html with 40 of 100.
    assert!(
        row("concentration").contains("40.0 %") && row("concentration").contains("(1)"),
        "{stdout}"
    );
    assert!(text(&o.stderr).contains("MB/s"), "{}", text(&o.stderr));
}

/// `1234` → `1,234`, as the report writes numbers.
fn benchlab_logs_thousands(n: u64) -> String {
    let d = n.to_string();
    let mut s = String::new();
    for (i, c) in d.chars().enumerate() {
        if i > 0 && (d.len() - i).is_multiple_of(3) {
            s.push(',');
        }
        s.push(c);
    }
    s
}

#[test]
fn plain_log_cover_80() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = write_log(dir.path(), "access.log", log_text().as_bytes());
    check_cover_80(&log, &dir.path().join("w.toml"));
}

#[test]
fn gzip_log_gives_the_same_workload() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = write_log(dir.path(), "access.log.gz", &gzip(log_text().as_bytes()));
    check_cover_80(&log, &dir.path().join("w.toml"));
}

#[test]
fn cover_94_max_urls_and_strip_query() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = write_log(dir.path(), "access.log", log_text().as_bytes());
    let log = log.to_str().expect("utf-8 path");
    let out = dir.path().join("w.toml");
    let out_s = out.to_str().expect("utf-8 path");

    let o = run(&["workload", "from-log", log, "--cover", "94", "-o", out_s]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let all7 = [
        ("/index.html", 40, Some(4096)),
        ("/a.gif", 20, Some(1000)),
        ("/b\"q.html", 10, Some(2000)),
        ("/only304", 10, None),
        ("/q?x=1", 5, Some(10)),
        ("/q?x=2", 5, Some(10)),
        ("/c", 4, Some(7)),
    ];
    assert_eq!(urls_of(&out).1, expect(&all7));

    // Both limits: whichever comes first.
    let o = run(&[
        "workload",
        "from-log",
        log,
        "--cover",
        "94%",
        "--max-urls",
        "2",
        "-o",
        out_s,
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(urls_of(&out).1, expect(&all7[..2]));

    // Neither: every URL.
    let o = run(&["workload", "from-log", log, "-o", out_s]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(urls_of(&out).1.len(), 10);

    // --strip-query merges /q?x=1 and /q?x=2 into /q (10 requests).
    let o = run(&[
        "workload",
        "from-log",
        log,
        "--cover",
        "90",
        "--strip-query",
        "-o",
        out_s,
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(
        urls_of(&out).1,
        expect(&[
            ("/index.html", 40, Some(4096)),
            ("/a.gif", 20, Some(1000)),
            ("/b\"q.html", 10, Some(2000)),
            ("/only304", 10, None),
            ("/q", 10, Some(10)),
        ])
    );

    // `--out -`: the workload on stdout, the report on stderr.
    let o = run(&["workload", "from-log", log, "--max-urls", "1", "--out", "-"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let v: toml::Table = toml::from_str(&text(&o.stdout)).expect("TOML on stdout");
    assert_eq!(v["class"][0]["url"][0]["path"].as_str(), Some("/index.html"));
    assert!(text(&o.stderr).contains("kept URLs"));
}

#[test]
fn usage_errors_name_the_problem() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = write_log(dir.path(), "access.log", log_text().as_bytes());
    let log = log.to_str().expect("utf-8 path");
    let out = dir.path().join("w.toml");
    let out = out.to_str().expect("utf-8 path");

    let missing = dir.path().join("nope.log");
    let o = run(&["workload", "from-log", missing.to_str().expect("utf-8 path"), "-o", out]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("nope.log"), "{}", text(&o.stderr));

    for cover in ["0", "101%", "lots"] {
        let o = run(&["workload", "from-log", log, "--cover", cover, "-o", out]);
        assert_eq!(o.status.code(), Some(2), "--cover {cover}");
        assert!(text(&o.stderr).contains(cover), "{}", text(&o.stderr));
    }
    let o = run(&["workload", "from-log", log, "--max-urls", "0", "-o", out]);
    assert_eq!(o.status.code(), Some(2));

    let o = run(&["workload", "from-log", log, "-o", "/nonexistent-dir/w.toml"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("/nonexistent-dir"), "{}", text(&o.stderr));

    // A log without a single successful GET: exit 1, nothing written.
    let empty = write_log(
        dir.path(),
        "bad.log",
        b"garbage\n\nh - - [d] \"POST / HTTP/1.0\" 200 1\n",
    );
    let o = run(&["workload", "from-log", empty.to_str().expect("utf-8 path"), "-o", out]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o.stderr).contains("no successful GET"), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("line 1:"), "{}", text(&o.stderr));
    assert!(!Path::new(out).exists());
}

/// Over 10,000 URLs, `from-log` writes them to a URL file beside the
/// workload (weights, sizes and paths exact, most requested first), the
/// workload names it, `check` loads it a line at a time, and a bad line
/// is refused naming the file and line.
#[test]
fn a_large_log_becomes_a_url_file_that_loads() {
    const N: usize = 10_001;
    let dir = tempfile::tempdir().expect("tempdir");
    // URL i: (i % 3) + 1 successful GETs of 100 + i bytes.
    let mut log = String::new();
    let mut k = 0;
    for i in 0..N {
        for _ in 0..(i % 3) + 1 {
            log.push_str(&line(&format!("/p/{i}"), "GET", 200, &(100 + i).to_string(), k));
            log.push('\n');
            k += 1;
        }
    }
    let log = write_log(dir.path(), "access.log", log.as_bytes());
    let out = dir.path().join("w.toml");
    let o = run(&["workload", "from-log", s(&log), "--out", s(&out)]);
    assert!(o.status.success(), "{}{}", text(&o.stdout), text(&o.stderr));
    let doc = std::fs::read_to_string(&out).expect("workload");
    assert!(doc.contains("url_file = \"w.urls\"\n"), "{doc}");
    assert!(!doc.contains("[[class.url]]"), "{doc}");
    // Most requested first, ties by path.
    let mut ranked: Vec<(usize, usize)> = (0..N).map(|i| ((i % 3) + 1, i)).collect();
    ranked.sort_by(|a, b| {
        b.0.cmp(&a.0)
            .then_with(|| format!("/p/{}", a.1).cmp(&format!("/p/{}", b.1)))
    });
    let mut want = format!("{}\n", benchlab_model::URL_FILE_HEADER);
    for (requests, i) in &ranked {
        want.push_str(&format!("{requests}\t{}\t/p/{i}\n", 100 + i));
    }
    let urls = dir.path().join("w.urls");
    let got = std::fs::read_to_string(&urls).expect("URL file");
    assert!(got == want, "the URL file differs from the log's counts and sizes");
    // Loaded a line at a time: every URL, the mean response by weight.
    let suite = dir.path().join("suite.toml");
    std::fs::write(
        &suite,
        "name = \"s\"\ntarget = \"http://127.0.0.1:1\"\n[workloads.w]\nfile = \"w.toml\"\n[[mix]]\nclients = 1\n",
    )
    .expect("suite");
    let total: usize = ranked.iter().map(|r| r.0).sum();
    let mean: f64 = ranked
        .iter()
        .map(|&(r, i)| r as f64 / total as f64 * (100 + i) as f64)
        .sum();
    let o = run(&["check", s(&suite)]);
    let said = text(&o.stdout);
    assert!(o.status.success(), "{said}{}", text(&o.stderr));
    let want = format!(
        "10,001 URLs, expected mean response {} bytes",
        benchlab_logs_thousands(mean.round() as u64)
    );
    assert!(said.contains(&want), "expected `{want}` in:\n{said}");
    // A bad line: the file and line named, and what was expected.
    let broken = got.replacen("\t/p/1\n", "\t/p/1\nx\t7\t/q\n", 1);
    std::fs::write(&urls, &broken).expect("rewrite");
    let at = broken.lines().position(|l| l == "x\t7\t/q").expect("the bad line") + 1;
    let o = run(&["check", s(&suite)]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    let e = text(&o.stderr);
    assert!(
        e.contains(&format!("w.urls:{at}: weight `x`: expected a number above 0")),
        "{e}"
    );
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}
