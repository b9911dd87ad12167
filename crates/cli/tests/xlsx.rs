//! The XLSX workbook (`benchlab_report::write_xlsx`) of a real run: the real
//! binary generates a file set, serves it (`benchlab serve` on 127.0.0.1:0)
//! and runs a tiny suite of two 2-second mixes against it; the workbook made
//! from that results directory is read back with calamine and its Summary
//! and Client Data cells must equal summary.csv and clients.csv exactly
//! (numbers as numbers, compared as the f64 of the same decimal text, under
//! headers in words with units instead of the CSV's snake_case names). The
//! charts and number formats, which calamine does not read, are checked in
//! the package's XML.

mod common;

use benchlab_controller::Results;
use benchlab_format::column_title;
use benchlab_report::{write_xlsx, Run};
use calamine::{open_workbook, Data, Range, Reader, Xlsx};
use common::{assert_success, s, Serve};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_benchlab")
}

/// Two mixes of 2 s (1 then 2 clients × 2 threads), 80 % static files and
/// 20 % in-process ad rotation, so the Per-Class sheet has an SPI class.
const SUITE: &str = r#"
name = "xlsx-tiny"
description = "two 2-second mixes for the workbook test"
target = "http://127.0.0.1:9"
max_clients = 2
seed = 3

[defaults]
ramp_up = "500ms"
ramp_down = "500ms"
length = "2s"
threads_per_client = 2
requests_per_connection = "1..8"
timeout = "5s"

[workloads.tiny]
[[workloads.tiny.class]]
name = "static"
percent = 80
[workloads.tiny.class.fileset]
name = "specweb99"

[[workloads.tiny.class]]
name = "adrot"
percent = 20
kind = "dynamic"
spi = "inproc"
[workloads.tiny.class.fileset]
name = "specweb99"
prefix = "/spice/inproc/adrot"

[[mix]]
clients = 1
[[mix]]
clients = 2
"#;

/// Runs the tiny suite for real into `<tmp>/results` and returns that
/// directory.
fn real_results(tmp: &Path) -> PathBuf {
    let fs = tmp.join("www").join("fs");
    let out = Command::new(bin())
        .args(["fileset", "generate", "specweb99", "--dirs", "1", "--out", s(&fs)])
        .output()
        .expect("run benchlab fileset generate");
    assert_success("benchlab fileset generate", &out);

    let suite = tmp.join("tiny.toml");
    std::fs::write(&suite, SUITE).expect("write the suite");
    let results = tmp.join("results");
    let serve = Serve::start(&fs, &["--workers", "2"]);
    let target = format!("http://{}", serve.addr);
    let fileset = format!("specweb99={}", s(&fs));
    let out = Command::new(bin())
        .args(["run", s(&suite), "--target", &target, "--fileset", &fileset])
        .args(["--out", s(&results)])
        .output()
        .expect("run benchlab run");
    drop(serve);
    assert_success("benchlab run", &out);
    results
}

fn load_run(label: &str, dir: &Path) -> Run {
    let json = std::fs::read(dir.join("results.json")).expect("results.json");
    let results: Results = serde_json::from_slice(&json).expect("results.json parses");
    Run {
        label: label.to_string(),
        dir: dir.to_path_buf(),
        results,
    }
}

/// CSV as benchlab writes it: commas, a field with a comma, quote or newline
/// in double quotes (quotes doubled), a newline after each record.
fn parse_csv(text: &str) -> Vec<Vec<String>> {
    let (mut records, mut record, mut field) = (Vec::new(), Vec::new(), String::new());
    let mut quoted = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            (true, '"') => quoted = false,
            (true, c) => field.push(c),
            (false, '"') => quoted = true,
            (false, ',') => record.push(std::mem::take(&mut field)),
            (false, '\n') => {
                record.push(std::mem::take(&mut field));
                records.push(std::mem::take(&mut record));
            }
            (false, c) => field.push(c),
        }
    }
    assert!(field.is_empty() && record.is_empty(), "the CSV ends without a newline");
    records
}

fn cell(range: &Range<Data>, row: usize, col: usize) -> Data {
    let (r, c) = (u32::try_from(row).expect("row"), u32::try_from(col).expect("col"));
    range.get_value((r, c)).cloned().unwrap_or(Data::Empty)
}

/// A header that is a machine name (`latency_p50_us`), not words.
fn is_snake_case(h: &str) -> bool {
    h.contains('_') || (h.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit()) && !h.is_empty())
}

/// Asserts that the sheet's cells from `first_col` on are the CSV's records,
/// row for row: the header is the CSV's column names in words with units,
/// numbers are numbers equal to the CSV text's f64, booleans are booleans,
/// text is text, an empty field an empty cell.
fn assert_sheet_is_csv(sheet: &str, range: &Range<Data>, first_col: usize, csv: &str) {
    let records = parse_csv(csv);
    assert!(records.len() > 1, "{sheet}: the CSV has no rows");
    assert_eq!(range.start(), Some((0, 0)), "{sheet}: the table starts at A1");
    assert_eq!(
        range.width(),
        first_col + records[0].len(),
        "{sheet}: as many columns as the CSV"
    );
    for (row, record) in records.iter().enumerate() {
        for (i, text) in record.iter().enumerate() {
            let got = cell(range, row, first_col + i);
            let at = format!(
                "{sheet} row {} column {} ({})",
                row + 1,
                first_col + i + 1,
                records[0][i]
            );
            if row == 0 {
                let want = column_title(text);
                assert!(!is_snake_case(&want), "{at}: header {want:?} is not words");
                assert_eq!(got, Data::String(want), "{at}: header");
                continue;
            }
            match &got {
                Data::Float(x) => {
                    let want: f64 = text.parse().unwrap_or_else(|_| panic!("{at}: a number for {text:?}"));
                    assert_eq!(*x, want, "{at}: {text}");
                }
                Data::Int(n) => assert_eq!(n.to_string(), *text, "{at}"),
                Data::Bool(b) => assert_eq!(b.to_string(), *text, "{at}"),
                Data::String(s) => {
                    assert_eq!(s, text, "{at}");
                    assert!(
                        row == 0
                            || text.parse::<f64>().is_err()
                            || ["phase", "address"].contains(&records[0][i].as_str()),
                        "{at}: a number written as text: {text:?}"
                    );
                }
                Data::Empty => assert_eq!(text, "", "{at}"),
                other => panic!("{at}: unexpected cell {other:?} for {text:?}"),
            }
        }
    }
    // No rows under the table (the Summary's charts are drawings, not cells).
    for col in 0..range.width() {
        assert_eq!(
            cell(range, records.len(), col),
            Data::Empty,
            "{sheet}: a row after the table"
        );
    }
}

/// Excel's column letters for a 0-based column index.
fn col_letters(mut col: usize) -> String {
    let mut out = Vec::new();
    loop {
        out.push(b'A' + (col % 26) as u8);
        if col < 26 {
            break;
        }
        col = col / 26 - 1;
    }
    out.reverse();
    String::from_utf8(out).expect("ASCII")
}

/// The text of a member of the xlsx package (a zip file).
fn zip_member(path: &Path, name: &str) -> Option<String> {
    let file = std::fs::File::open(path).expect("open the workbook");
    let mut zip = zip::ZipArchive::new(file).expect("the workbook is a zip file");
    let mut member = zip.by_name(name).ok()?;
    let mut text = String::new();
    member.read_to_string(&mut text).expect("UTF-8 XML");
    Some(text)
}

fn column_of(header: &[String], name: &str) -> usize {
    header
        .iter()
        .position(|h| h == name)
        .unwrap_or_else(|| panic!("summary.csv has no {name} column"))
}

/// The Analysis sheet of a one-phase run: headers in words with units, the
/// peak and where it is, both shares past the peak as formulas over the
/// rates beside them (their cached values the ratios themselves), booleans
/// as TRUE/FALSE cells, all from results.json.
fn assert_analysis_sheet<R: std::io::Read + std::io::Seek>(book: &mut Xlsx<R>, run: &Run) {
    let range = book.worksheet_range("Analysis").expect("Analysis");
    let header: Vec<String> = (0..range.width())
        .map(|c| match cell(&range, 0, c) {
            Data::String(h) => h,
            other => panic!("Analysis header {c}: {other:?}"),
        })
        .collect();
    for h in &header {
        assert!(!is_snake_case(h), "Analysis: header {h:?} is not words");
    }
    let at = |name: &str| {
        header
            .iter()
            .position(|h| h == name)
            .unwrap_or_else(|| panic!("no Analysis column {name:?}: {header:?}"))
    };
    let mixes = &run.results.mixes;
    let peak = mixes.iter().fold(&mixes[0], |p, m| {
        if m.figures.requests_per_sec > p.figures.requests_per_sec {
            m
        } else {
            p
        }
    });
    let last = mixes.last().expect("mixes");
    let peak_rps = peak.figures.requests_per_sec;
    assert_eq!(cell(&range, 1, at("Peak (requests/s)")), Data::Float(peak_rps));
    assert_eq!(cell(&range, 1, at("Peak at mix")), Data::Float(peak.mix as f64));
    assert_eq!(cell(&range, 1, at("Peak at threads")), Data::Float(peak.threads as f64));
    assert_eq!(
        cell(&range, 1, at("p99 latency at peak (µs)")),
        Data::Float(peak.figures.latency_us.p99 as f64)
    );
    assert_eq!(
        cell(&range, 1, at("Kept at last mix (share of peak)")),
        Data::Float(last.figures.requests_per_sec / peak_rps)
    );
    assert_eq!(
        cell(&range, 1, at("Collapse threshold (share of peak)")),
        Data::Float(0.5)
    );
    let collapsed = cell(&range, 1, at("Collapse (lowest share below threshold)"));
    let lowest_share = last.figures.requests_per_sec / peak_rps;
    assert_eq!(collapsed, Data::Bool(peak.mix != last.mix && lowest_share < 0.5));
    assert!(
        matches!(
            cell(&range, 1, at("Clients served equally in every mix")),
            Data::Bool(_)
        ),
        "fairness as TRUE/FALSE"
    );
    assert!(matches!(cell(&range, 1, at("Peak client-bound")), Data::Bool(_)));
    // The shares are formulas over the cells beside them.
    let formulas = book.worksheet_formula("Analysis").expect("Analysis formulas");
    let f = |col: usize| formulas.get_value((1, col as u32)).cloned().unwrap_or_default();
    let kept = f(at("Kept at last mix (share of peak)"));
    assert_eq!(
        kept,
        format!(
            "{}2/{}2",
            col_letters(at("Last mix (requests/s)")),
            col_letters(at("Peak (requests/s)"))
        ),
        "kept share as a formula"
    );
}

#[test]
fn workbook_of_a_real_run_matches_the_csv_files() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = real_results(tmp.path());
    let run = load_run("tiny", &dir);
    assert_eq!(run.results.mixes.len(), 2);
    let summary_csv = std::fs::read_to_string(dir.join("summary.csv")).expect("summary.csv");
    let clients_csv = std::fs::read_to_string(dir.join("clients.csv")).expect("clients.csv");
    let header = parse_csv(&summary_csv).remove(0);

    // One run.
    let path = tmp.path().join("one.xlsx");
    write_xlsx(std::slice::from_ref(&run), &path).expect("write_xlsx");
    let mut book: Xlsx<_> = open_workbook(&path).expect("calamine opens the workbook");
    assert_eq!(
        book.sheet_names(),
        ["Analysis", "Summary", "Client Data", "Per-Class", "Configuration"]
    );
    assert_analysis_sheet(&mut book, &run);
    let summary = book.worksheet_range("Summary").expect("Summary");
    assert_sheet_is_csv("Summary", &summary, 0, &summary_csv);
    let clients = book.worksheet_range("Client Data").expect("Client Data");
    assert_sheet_is_csv("Client Data", &clients, 0, &clients_csv);

    // Per-Class: a row per mix × class, the SPI of the dynamic class.
    let classes = book.worksheet_range("Per-Class").expect("Per-Class");
    assert_eq!(classes.height(), 1 + 2 * 2, "header + 2 mixes × 2 classes");
    let class_header: Vec<Data> = (0..classes.width()).map(|c| cell(&classes, 0, c)).collect();
    let col = |name: &str| {
        class_header
            .iter()
            .position(|h| *h == Data::String(column_title(name)))
            .unwrap_or_else(|| panic!("Per-Class has no {name} column"))
    };
    for (row, (m, c)) in run
        .results
        .mixes
        .iter()
        .flat_map(|m| m.classes.iter().map(move |c| (m, c)))
        .enumerate()
    {
        let row = row + 1;
        assert_eq!(cell(&classes, row, col("mix")), Data::Float(m.mix as f64));
        assert_eq!(cell(&classes, row, col("class")), Data::String(c.name.clone()));
        let spi = c.spi.clone().map_or(Data::Empty, Data::String);
        assert_eq!(cell(&classes, row, col("spi")), spi);
        assert_eq!(cell(&classes, row, col("percent")), Data::Float(c.percent));
        assert_eq!(
            cell(&classes, row, col("requests")),
            Data::Float(c.figures.requests as f64)
        );
        assert_eq!(
            cell(&classes, row, col("latency_p99_us")),
            Data::Float(c.figures.latency_us.p99 as f64)
        );
    }

    // Configuration: the suite, its seed as a number, its text line by line.
    let config = book.worksheet_range("Configuration").expect("Configuration");
    let rows: Vec<Vec<Data>> = config.rows().map(|r| r.to_vec()).collect();
    let value_of = |field: &str| {
        rows.iter()
            .find(|r| r.first() == Some(&Data::String(field.to_string())))
            .and_then(|r| r.get(1).cloned())
            .unwrap_or_else(|| panic!("Configuration has no {field} row"))
    };
    assert_eq!(value_of("suite.name"), Data::String("xlsx-tiny".into()));
    assert_eq!(value_of("suite.seed"), Data::Float(3.0));
    assert_eq!(
        value_of("environment.cores"),
        Data::Float(run.results.environment.cores as f64)
    );
    let first_column: Vec<&Data> = rows.iter().filter_map(|r| r.first()).collect();
    for line in [
        "name = \"xlsx-tiny\"",
        "[[workloads.tiny.class]]",
        "prefix = \"/spice/inproc/adrot\"",
    ] {
        assert!(
            first_column.contains(&&Data::String(line.to_string())),
            "the suite text line {line:?} is not on the Configuration sheet"
        );
    }
    assert!(
        rows.iter()
            .flatten()
            .any(|d| *d == Data::String("Threads per client".into())),
        "no mix parameters table"
    );
    // Every header of every table on every sheet is words, not snake_case.
    let mut book: Xlsx<_> = open_workbook(&path).expect("calamine opens the workbook");
    for sheet in ["Summary", "Client Data", "Per-Class"] {
        let range = book.worksheet_range(sheet).expect("sheet");
        for col in 0..range.width() {
            if let Data::String(h) = cell(&range, 0, col) {
                assert!(!is_snake_case(&h), "{sheet}: header {h:?} is not words");
            }
        }
    }
    let params_header = rows
        .iter()
        .find(|r| r.first() == Some(&Data::String("Mix".into())))
        .expect("the mix parameters header");
    for h in params_header {
        if let Data::String(h) = h {
            assert!(!is_snake_case(h), "Configuration: header {h:?} is not words");
        }
    }
    assert_eq!(
        rows[0][..2],
        [Data::String("Field".into()), Data::String("Value".into())]
    );
    // Under the summary table, after a blank row: the client-bound line.
    let summary_rows = parse_csv(&summary_csv).len();
    match cell(&summary, summary_rows + 1, 0) {
        Data::String(t) => assert!(
            t.starts_with("No mix was client-bound")
                || t.starts_with("CLIENT-BOUND: mix")
                || t.starts_with("CO-LOCATED: mix"),
            "{t}"
        ),
        other => panic!("no client-bound line under the summary: {other:?}"),
    }
    // Counts and rates show thousands separators and their decimals.
    let styles = zip_member(&path, "xl/styles.xml").expect("styles");
    for code in ["#,##0", "#,##0.0", "#,##0.00"] {
        assert!(
            styles.contains(&format!(r#"formatCode="{code}""#)),
            "no number format {code} in styles.xml"
        );
    }

    // Charts: one on the Analysis sheet (the first sheet), peak and useful
    // peak by run and phase; two on the Summary sheet, threads on X,
    // requests/s and MB/s on Y, over the two mix rows.
    let drawing_rels = zip_member(&path, "xl/worksheets/_rels/sheet1.xml.rels").expect("Analysis has a drawing");
    assert!(drawing_rels.contains("../drawings/drawing1.xml"), "{drawing_rels}");
    let analysis_chart = zip_member(&path, "xl/charts/chart1.xml").expect("the Analysis chart");
    assert!(analysis_chart.contains("<c:barChart>"), "Analysis: a column chart");
    assert!(
        analysis_chart.contains("Analysis!$C$2<") && analysis_chart.contains("Analysis!$P$2<"),
        "Analysis chart: peak (C) and useful peak (P) of the one phase:\n{analysis_chart}"
    );
    let drawing_rels = zip_member(&path, "xl/worksheets/_rels/sheet2.xml.rels").expect("Summary has a drawing");
    assert!(drawing_rels.contains("../drawings/drawing2.xml"), "{drawing_rels}");
    let charts = zip_member(&path, "xl/drawings/_rels/drawing2.xml.rels").expect("the drawing's charts");
    assert!(
        charts.contains("../charts/chart2.xml") && charts.contains("../charts/chart3.xml"),
        "{charts}"
    );
    assert!(zip_member(&path, "xl/charts/chart4.xml").is_none(), "exactly 3 charts");
    let range = |name: &str| {
        let c = col_letters(column_of(&header, name));
        format!("Summary!${c}$2:${c}$3")
    };
    for (chart, y, y_title) in [
        ("xl/charts/chart2.xml", "requests_per_sec", "Requests/s"),
        ("xl/charts/chart3.xml", "mbytes_per_sec", "MB/s"),
    ] {
        let xml = zip_member(&path, chart).unwrap_or_else(|| panic!("no {chart}"));
        assert!(xml.contains("<c:scatterChart>"), "{chart}: not a scatter chart");
        assert_eq!(
            xml.matches("<c:ser>").count(),
            1,
            "{chart}: one series for one run of one phase"
        );
        assert!(
            xml.contains(&range("threads")),
            "{chart}: X is not {}",
            range("threads")
        );
        assert!(xml.contains(&range(y)), "{chart}: Y is not {}", range(y));
        assert!(xml.contains(y_title) && xml.contains("Threads"), "{chart}: axis titles");
        assert!(xml.contains("<c:legend>"), "{chart}: no legend");
    }

    // The same input gives the same bytes.
    let again = tmp.path().join("again.xlsx");
    write_xlsx(std::slice::from_ref(&run), &again).expect("write_xlsx again");
    assert_eq!(
        std::fs::read(&path).expect("read"),
        std::fs::read(&again).expect("read"),
        "the workbook is not deterministic"
    );

    // Two runs: a leading `run` column, each run's rows, a series per run.
    let two = tmp.path().join("two.xlsx");
    let other = Run {
        label: "tiny again".into(),
        ..run.clone()
    };
    write_xlsx(&[run, other], &two).expect("write_xlsx of two runs");
    let mut book: Xlsx<_> = open_workbook(&two).expect("calamine opens the workbook");
    let summary = book.worksheet_range("Summary").expect("Summary");
    assert_eq!(cell(&summary, 0, 0), Data::String("Run".into()));
    // The header, 2 runs × 2 mixes, a blank row and the generator's lines
    // of each run (the same for both: one run twice).
    assert_eq!(cell(&summary, 3, 0), Data::String("tiny again".into()));
    assert_eq!(cell(&summary, 5, 0), Data::Empty);
    let notes: Vec<String> = (6..summary.height())
        .map(|row| match cell(&summary, row, 0) {
            Data::String(t) => t,
            other => panic!("row {row}: {other:?}"),
        })
        .collect();
    assert!(!notes.is_empty() && notes.len().is_multiple_of(2), "{notes:?}");
    let (first, second) = notes.split_at(notes.len() / 2);
    assert!(first.iter().all(|t| t.starts_with("tiny: ")), "{notes:?}");
    assert!(second.iter().all(|t| t.starts_with("tiny again: ")), "{notes:?}");
    for (row, record) in parse_csv(&summary_csv).iter().enumerate().skip(1) {
        for offset in [0, 2] {
            let want: f64 = record[column_of(&header, "requests")].parse().expect("requests");
            let got = cell(&summary, row + offset, 1 + column_of(&header, "requests"));
            assert_eq!(got, Data::Float(want));
        }
    }
    let clients = book.worksheet_range("Client Data").expect("Client Data");
    assert_eq!(clients.height(), 1 + 2 * (parse_csv(&clients_csv).len() - 1));
    let xml = zip_member(&two, "xl/charts/chart2.xml").expect("chart2");
    assert_eq!(xml.matches("<c:ser>").count(), 2, "a series per run");
    let analysis = book.worksheet_range("Analysis").expect("Analysis");
    assert_eq!(cell(&analysis, 1, 0), Data::String("tiny".into()));
    assert_eq!(cell(&analysis, 2, 0), Data::String("tiny again".into()));
    let c = col_letters(1 + column_of(&header, "threads"));
    assert!(xml.contains(&format!("Summary!${c}$4:${c}$5")), "the second run's rows");
}
