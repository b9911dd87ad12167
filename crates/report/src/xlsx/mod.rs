//! The spreadsheet workbook (XLSX), like WebBench's: the results of one or
//! more runs in the form people paste into reports and compare by hand.
//!
//! Sheets, in this order:
//!
//! - **Analysis**: the page's headline and analysis as cells, a row per run
//!   and phase — the peak and where, the shape past the peak (both shares,
//!   as formulas over the rates beside them), the collapse flag against the
//!   threshold, the useful peak, fairness, price/performance (a formula) —
//!   then SPICE efficiency (at each one's peak, the highest load and equal
//!   load; the ratios as formulas), with a chart of peak and useful peak.
//! - **Summary**: `summary.csv`, a row per mix per run (a leading `run`
//!   column when there are several runs), with two native Excel charts below
//!   the table: requests/s against threads and throughput (MB/s) against
//!   threads, one series per run, or per phase of a run that has several.
//! - **Client Data**: `clients.csv`, a row per mix × client.
//! - **Per-Class**: a row per mix × class: configured and observed share,
//!   requests, rates, p50/p99 and errors.
//! - **Files** and **Operations** (file suites only): per mix bytes read
//!   and written, operations not sent, loadfile passes, bytes prepared,
//!   fairness and errors by status; per mix × operation kind its count,
//!   rate, errors, not sent and latency (mean, p50, p90, p99, p99.9, max).
//! - **Configuration**: the disclosure: suite, environment, phases, each
//!   mix's parameters and the suite file's text, a line per row.
//!
//! The Summary and Client Data sheets are built from the very text of
//! [`summary_csv`] and [`clients_csv`] (parsed back and typed per column), so
//! the workbook and the CSV files cannot disagree on a column or a value:
//! a column added to the CSV appears here without touching this file.
//!
//! A file suite's workbook is the same, its operations as requests and a
//! row per mix × operation kind in Per-Class (docs/counting.md, "File
//! suites"). The sheets are written here; the kit they are written with
//! (typed cells, tables, a sheet writer that sizes its columns, the CSV and
//! A1 helpers) is [`kit`].
//!
//! The output is deterministic: the same runs give the same bytes (the
//! document's creation time is the first run's start, not the clock).

use crate::{analyze_run, ReportOptions, Run, RunAnalysis};
use benchlab_results::{clients_csv, round, summary_csv, MixResult, Results};
use rust_xlsxwriter::{
    Chart, ChartLegendPosition, ChartType, ColNum, DocProperties, ExcelDateTime, Format, RowNum, Workbook, Worksheet,
};
use std::path::Path;

mod kit;
use kit::*;

/// Sheet names; the charts' ranges refer to [`SUMMARY`] by name.
pub const ANALYSIS: &str = "Analysis";
pub const SUMMARY: &str = "Summary";
pub const CLIENT_DATA: &str = "Client Data";
pub const PER_CLASS: &str = "Per-Class";
pub const CONFIGURATION: &str = "Configuration";
/// Only when a run has open-loop mixes (`rate = …`).
pub const OPEN_LOOP: &str = "Open Loop";
/// Only when a run's mixes were monitored (`--monitor-local`, …).
pub const RESOURCES: &str = "Resources";
/// Only for file suites: what only file servers have, a row per mix.
pub const FILES: &str = "Files";
/// Only for file suites: each operation kind's count and latency.
pub const OPERATIONS: &str = "Operations";

/// Chart size in pixels, and the gap between the two charts side by side.
const CHART_WIDTH: u32 = 640;
const CHART_HEIGHT: u32 = 380;
const CHART_GAP: u32 = 20;

/// Writes `runs` as an XLSX workbook at `path` (see the module's doc for the
/// sheets) with the report's default analysis limits. The runs keep the
/// order given: it is the order of the rows, of the chart series and of the
/// configuration sections.
pub fn write_xlsx(runs: &[Run], path: &Path) -> Result<(), crate::ReportError> {
    write_xlsx_with(runs, path, &ReportOptions::default())
}

/// [`write_xlsx`] with the analysis limits of `opts` (collapse threshold,
/// fairness tolerance, prices …), as the page uses them.
pub fn write_xlsx_with(runs: &[Run], path: &Path, opts: &ReportOptions) -> Result<(), crate::ReportError> {
    let mut workbook = build(runs, opts).map_err(crate::ReportError::Workbook)?;
    workbook
        .save(path)
        .map_err(|e| crate::ReportError::Workbook(format!("cannot write the workbook {}: {e}", path.display())))
}

/// The workbook in memory, before saving (tests compare its bytes).
fn build(runs: &[Run], opts: &ReportOptions) -> Result<Workbook, String> {
    if runs.is_empty() {
        return Err("no runs to write to the workbook".to_string());
    }
    let several = runs.len() > 1;
    let bold = Format::new().set_bold();
    let mut workbook = Workbook::new();
    workbook.set_properties(&properties(runs));

    let analyses: Vec<RunAnalysis> = runs.iter().map(|r| analyze_run(r, opts)).collect();
    let analysis = workbook.add_worksheet();
    analysis.set_name(ANALYSIS).map_err(xlsx_err(ANALYSIS))?;
    write_analysis(analysis, runs, &analyses, opts, &bold).map_err(|e| format!("{ANALYSIS} sheet: {e}"))?;

    let summary = workbook.add_worksheet();
    summary.set_name(SUMMARY).map_err(xlsx_err(SUMMARY))?;
    write_summary(summary, runs, several, &bold).map_err(|e| format!("{SUMMARY} sheet: {e}"))?;

    table_sheet(
        &mut workbook,
        CLIENT_DATA,
        &csv_table(runs, several, clients_csv)?,
        &bold,
    )?;
    table_sheet(&mut workbook, PER_CLASS, &class_table(runs, several), &bold)?;
    if runs
        .iter()
        .any(|r| r.results.mixes.iter().any(|m| m.open_loop.is_some()))
    {
        table_sheet(&mut workbook, OPEN_LOOP, &open_loop_table(runs, several), &bold)?;
    }
    if runs
        .iter()
        .any(|r| r.results.mixes.iter().any(|m| m.resources.is_some()))
    {
        table_sheet(&mut workbook, RESOURCES, &resources_table(runs, several), &bold)?;
    }
    if runs.iter().any(|r| r.results.mixes.iter().any(|m| m.files.is_some())) {
        table_sheet(&mut workbook, FILES, &files_table(runs, several), &bold)?;
        table_sheet(&mut workbook, OPERATIONS, &operations_table(runs, several), &bold)?;
    }

    let config = workbook.add_worksheet();
    config.set_name(CONFIGURATION).map_err(xlsx_err(CONFIGURATION))?;
    write_configuration(config, runs, several, &bold).map_err(|e| format!("{CONFIGURATION} sheet: {e}"))?;

    Ok(workbook)
}

/// A sheet that is one table under a frozen header row.
fn table_sheet(workbook: &mut Workbook, name: &'static str, table: &Table, bold: &Format) -> Result<(), String> {
    let ws = workbook.add_worksheet();
    ws.set_name(name).map_err(xlsx_err(name))?;
    let mut sheet = Sheet::new(ws, bold);
    sheet.table(0, table).map_err(|e| format!("{name} sheet: {e}"))?;
    sheet.finish(true);
    Ok(())
}

/// Document properties. The creation time is the first run's start, so that
/// writing the same results twice gives the same file.
fn properties(runs: &[Run]) -> DocProperties {
    let labels: Vec<&str> = runs.iter().map(|r| r.label.as_str()).collect();
    let mut p = DocProperties::new()
        .set_title(format!("benchlab results: {}", labels.join(", ")))
        .set_author("benchlab");
    let started = runs
        .first()
        .and_then(|r| i64::try_from(r.results.environment.started_unix).ok())
        .and_then(|t| ExcelDateTime::from_timestamp(t).ok())
        .or_else(|| ExcelDateTime::from_timestamp(0).ok());
    if let Some(t) = started {
        p = p.set_creation_datetime(&t);
    }
    p
}

/// The rows of every run's CSV (`csv` is `summary_csv` or `clients_csv`),
/// typed, under the first run's header, with a leading `run` column when
/// there are several runs.
fn csv_table(runs: &[Run], several: bool, csv: fn(&Results) -> String) -> Result<Table, String> {
    let mut table = Table::default();
    for run in runs {
        let mut records = parse_csv(&csv(&run.results)).into_iter();
        let header = records
            .next()
            .ok_or_else(|| format!("run {}: the CSV has no header", run.label))?;
        if table.header.is_empty() {
            if several {
                table.header.push("run".to_string());
            }
            table.header.extend(header.iter().cloned());
        }
        for record in records {
            let mut cells = row_of(several, run, record.len() + 1);
            cells.extend(
                header
                    .iter()
                    .zip(&record)
                    .map(|(column, value)| Cell::of_csv(column, value)),
            );
            table.rows.push(cells);
        }
    }
    Ok(table)
}

/// The Analysis sheet's table of run × phase: (header in words with its
/// unit, Excel number format).
const ANALYSIS_COLUMNS: &[(&str, &str)] = &[
    ("Run", ""),
    ("Phase", ""),
    ("Peak (requests/s)", "#,##0.0"),
    ("Peak at mix", "0"),
    ("Peak at threads", "#,##0"),
    ("Peak at offered rate (requests/s, open loop)", "#,##0.0"),
    ("p99 latency at peak (µs)", "#,##0"),
    ("Peak throughput (MB/s)", "#,##0.00"),
    ("Peak throughput at mix", "0"),
    ("Last mix (requests/s)", "#,##0.0"),
    ("Kept at last mix (share of peak)", "0.0%"),
    ("Lowest after peak (requests/s)", "#,##0.0"),
    ("Lowest share after peak", "0.0%"),
    ("Collapse threshold (share of peak)", "0.0%"),
    ("Collapse (lowest share below threshold)", ""),
    ("Useful peak (requests/s)", "#,##0.0"),
    ("Useful peak at mix", "0"),
    ("Clients served equally in every mix", ""),
    ("Mixes with unequal service", ""),
    ("Peak client-bound", ""),
    ("System price ($)", "$#,##0.00"),
    ("Price/performance ($ per request/s)", "$#,##0.0000"),
];

const EFFICIENCY_COLUMNS: &[(&str, &str)] = &[
    ("Run", ""),
    ("SPICE phase", ""),
    ("Static phase", ""),
    ("At", ""),
    ("Static mix", "0"),
    ("SPICE mix", "0"),
    ("Static threads", "#,##0"),
    ("SPICE threads", "#,##0"),
    ("Static (requests/s)", "#,##0.0"),
    ("SPICE (requests/s)", "#,##0.0"),
    ("Request efficiency (SPICE ÷ static)", "0.0%"),
    ("Static mean latency (µs)", "#,##0.0"),
    ("SPICE mean latency (µs)", "#,##0.0"),
    ("Latency efficiency (static ÷ SPICE)", "0.0%"),
];

/// The Analysis sheet (first in the workbook): the numbers of the page's
/// headline and analysis, a row per run and phase, SPICE efficiency below,
/// and a chart of each phase's peak and useful peak.
fn write_analysis(
    ws: &mut Worksheet,
    runs: &[Run],
    analyses: &[RunAnalysis],
    opts: &ReportOptions,
    bold: &Format,
) -> Result<(), String> {
    let formats = |cols: &[(&str, &str)]| -> Vec<Option<Format>> {
        cols.iter()
            .map(|(_, f)| (!f.is_empty()).then(|| Format::new().set_num_format(*f)))
            .collect()
    };
    let mut sheet = Sheet::new(ws, bold);
    let titles: Vec<&str> = ANALYSIS_COLUMNS.iter().map(|c| c.0).collect();
    sheet.header(0, &titles)?;
    sheet.number_formats = formats(ANALYSIS_COLUMNS);
    let col = |name: &str| -> ColNum {
        ANALYSIS_COLUMNS
            .iter()
            .position(|c| c.0 == name)
            .and_then(|i| ColNum::try_from(i).ok())
            .unwrap_or(0)
    };
    let (peak_c, last_c, lowest_c, price_c) = (
        col("Peak (requests/s)"),
        col("Last mix (requests/s)"),
        col("Lowest after peak (requests/s)"),
        col("System price ($)"),
    );
    let mut row: RowNum = 0;
    for (run, a) in runs.iter().zip(analyses) {
        for p in &a.phases {
            row = next_row(row)?;
            let peak = p.peak.as_ref().map(|x| x.requests_per_sec);
            let last = p.last_mix.as_ref().map(|x| x.requests_per_sec);
            let lowest = p.lowest_mix.as_ref().map(|x| x.requests_per_sec);
            let unequal: Vec<String> = p
                .fairness
                .iter()
                .filter(|f| !f.equal)
                .map(|f| f.mix.to_string())
                .collect();
            let bound = p.peak.as_ref().is_some_and(|pk| {
                run.results
                    .mixes
                    .iter()
                    .any(|m| m.mix == pk.mix && m.client_cpu.client_bound)
            });
            let cells = vec![
                Cell::text(a.label.as_str()),
                Cell::text(p.name.as_str()),
                opt_num(peak),
                opt_num(p.peak.as_ref().map(|x| x.mix as f64)),
                opt_num(p.peak.as_ref().map(|x| x.threads as f64)),
                opt_num(p.peak.as_ref().and_then(|x| x.offered_rate)),
                opt_num(p.peak.as_ref().map(|x| x.p99_us as f64)),
                opt_num(p.peak_throughput.as_ref().map(|x| x.bytes_per_sec / 1e6)),
                opt_num(p.peak_throughput.as_ref().map(|x| x.mix as f64)),
                opt_num(last),
                ratio_cell(row, (last_c, last), (peak_c, peak)),
                opt_num(lowest.filter(|_| p.lowest_after_peak.is_some())),
                ratio_cell(
                    row,
                    (lowest_c, lowest.filter(|_| p.lowest_after_peak.is_some())),
                    (peak_c, peak),
                ),
                Cell::Num(opts.collapse_share),
                Cell::Bool(p.collapsed),
                opt_num(p.useful_peak.as_ref().map(|x| x.requests_per_sec)),
                opt_num(p.useful_peak.as_ref().map(|x| x.mix as f64)),
                Cell::Bool(unequal.is_empty()),
                Cell::text(unequal.join(", ")),
                Cell::Bool(bound),
                opt_num(p.price),
                ratio_cell(row, (price_c, p.price), (peak_c, peak)),
            ];
            for (c, cell) in (0..).zip(&cells) {
                sheet.cell(row, c, cell)?;
            }
        }
    }
    let table_end = row;
    sheet.number_formats.clear();

    let mut row = next_row(next_row(table_end)?)?;
    let any_efficiency = analyses.iter().any(|a| !a.efficiency.is_empty());
    if any_efficiency {
        sheet.title(row, "SPICE efficiency (seed 001): request efficiency = SPICE ÷ static requests/s; latency efficiency = static ÷ SPICE mean latency")?;
        row = next_row(row)?;
        let titles: Vec<&str> = EFFICIENCY_COLUMNS.iter().map(|c| c.0).collect();
        sheet.header(row, &titles)?;
        sheet.number_formats = formats(EFFICIENCY_COLUMNS);
        for a in analyses {
            for e in &a.efficiency {
                for (at, pt) in [
                    ("peak", &e.at_peak),
                    ("highest load", &e.at_highest_load),
                    ("equal load", &e.at_equal_load),
                ] {
                    let Some(pt) = pt else { continue };
                    row = next_row(row)?;
                    let cells = vec![
                        Cell::text(a.label.as_str()),
                        Cell::text(e.phase.as_str()),
                        Cell::text(e.static_phase.as_str()),
                        Cell::text(at),
                        Cell::count(pt.static_mix as u64),
                        Cell::count(pt.spice_mix as u64),
                        Cell::count(pt.static_threads),
                        Cell::count(pt.spice_threads),
                        Cell::Num(pt.static_rate),
                        Cell::Num(pt.spice_rate),
                        ratio_cell(row, (9, Some(pt.spice_rate)), (8, Some(pt.static_rate))),
                        Cell::Num(pt.static_latency_mean_us),
                        Cell::Num(pt.spice_latency_mean_us),
                        ratio_cell(
                            row,
                            (11, Some(pt.static_latency_mean_us)),
                            (12, Some(pt.spice_latency_mean_us)),
                        ),
                    ];
                    for (c, cell) in (0..).zip(&cells) {
                        sheet.cell(row, c, cell)?;
                    }
                }
            }
        }
        sheet.number_formats.clear();
        row = next_row(row)?;
        sheet.overflowing(
            row,
            0,
            "In a closed loop a mix's mean latency is about its threads ÷ its requests/s, so at each one's peak the latency ratio mostly restates the threads each peak took; the equal-load row compares the two paths at the same threads.",
        )?;
    }
    sheet.finish(true);

    if table_end == 0 {
        // Excel refuses a chart without a series.
        return Ok(());
    }
    let mut chart = Chart::new(ChartType::Column);
    chart.title().set_name("Peak and useful peak by run and phase");
    chart.x_axis().set_name("Run · phase");
    chart.y_axis().set_name("Requests/s").set_min(0);
    chart.legend().set_position(ChartLegendPosition::Bottom);
    chart
        .set_width(CHART_WIDTH)
        .set_height(CHART_HEIGHT)
        .set_alt_text("benchlab: peak and useful peak requests/s of each run and phase");
    let useful_c = col("Useful peak (requests/s)");
    for (name, c) in [("Peak", peak_c), ("Useful peak", useful_c)] {
        chart
            .add_series()
            .set_name(name)
            .set_categories((ANALYSIS, 1, 0, table_end, 1))
            .set_values((ANALYSIS, 1, c, table_end, c));
    }
    ws.insert_chart_with_offset(row.saturating_add(2), 0, &chart, 0, 0)
        .map_err(|e| format!("chart: {e}"))?;
    Ok(())
}

/// The Summary sheet: the summary table, and below it the two charts.
fn write_summary(ws: &mut Worksheet, runs: &[Run], several: bool, bold: &Format) -> Result<(), String> {
    let table = csv_table(runs, several, summary_csv)?;
    let threads = table.column("threads")?;
    let rps = table.column("requests_per_sec")?;
    let mbps = table.column("mbytes_per_sec")?;
    let series = chart_series(runs, several);

    let mut sheet = Sheet::new(ws, bold);
    let after = sheet.table(0, &table)?;
    // Under the table, after a blank row: which mixes were client-bound.
    let mut note_row = next_row(after)?;
    for run in runs {
        for note in crate::generator_notes(&run.results) {
            let text = if several {
                format!("{}: {note}", run.label)
            } else {
                note
            };
            sheet.overflowing(note_row, 0, &text)?;
            note_row = next_row(note_row)?;
        }
    }
    sheet.finish(true);

    let charts = [
        (
            "Requests per second",
            rps,
            "Requests/s",
            "benchlab: requests per second against threads",
        ),
        (
            "Throughput",
            mbps,
            "Throughput (MB/s, 10⁶ bytes)",
            "benchlab: throughput against threads",
        ),
    ];
    if series.is_empty() {
        // Excel refuses a chart without a series: no mixes, no charts.
        return Ok(());
    }
    let chart_row = note_row.saturating_add(1);
    for ((title, col, y_name, alt), x_offset) in charts.into_iter().zip([0, CHART_WIDTH + CHART_GAP]) {
        let mut chart = Chart::new(ChartType::ScatterStraightWithMarkers);
        chart.title().set_name(title);
        chart
            .x_axis()
            .set_name("Threads (clients × threads per client)")
            .set_min(0);
        chart.y_axis().set_name(y_name).set_min(0);
        chart.legend().set_position(ChartLegendPosition::Bottom);
        chart.set_width(CHART_WIDTH).set_height(CHART_HEIGHT).set_alt_text(alt);
        for s in &series {
            chart
                .add_series()
                .set_name(s.name.as_str())
                .set_categories((SUMMARY, s.first_row, threads, s.last_row, threads))
                .set_values((SUMMARY, s.first_row, col, s.last_row, col));
        }
        ws.insert_chart_with_offset(chart_row, 0, &chart, x_offset, 0)
            .map_err(|e| format!("chart {title}: {e}"))?;
    }
    Ok(())
}

/// A chart series: a run's consecutive mixes of one phase, as Summary rows.
#[derive(Debug, Clone, PartialEq)]
struct Series {
    name: String,
    first_row: RowNum,
    last_row: RowNum,
}

/// One series per run, or per phase when a run has several (a phase is a
/// run of consecutive mixes with the same workload and target; different
/// phases are different curves, not one). Rows follow the Summary table:
/// runs in order, each run's mixes in order, after the header row.
fn chart_series(runs: &[Run], several: bool) -> Vec<Series> {
    let mut out: Vec<Series> = Vec::new();
    let mut row: RowNum = 1;
    for run in runs {
        let groups = phase_groups(&run.results.mixes);
        for (phase, len) in &groups {
            let name = match (several, groups.len() > 1) {
                (true, true) => format!("{} · {phase}", run.label),
                (true, false) => run.label.clone(),
                (false, true) => phase.to_string(),
                (false, false) => {
                    if run.label.is_empty() {
                        phase.to_string()
                    } else {
                        run.label.clone()
                    }
                }
            };
            let len = RowNum::try_from(*len).unwrap_or(RowNum::MAX);
            let last = row.saturating_add(len - 1);
            out.push(Series {
                name: literal_name(&name),
                first_row: row,
                last_row: last,
            });
            row = last.saturating_add(1);
        }
    }
    out
}

/// The phases of a run's mixes in order, consecutive mixes of one phase
/// together: (phase, number of mixes), each at least 1.
fn phase_groups(mixes: &[MixResult]) -> Vec<(&str, usize)> {
    let mut groups: Vec<(&str, usize)> = Vec::new();
    for m in mixes {
        match groups.last_mut() {
            Some((phase, n)) if *phase == m.phase => *n += 1,
            _ => groups.push((m.phase.as_str(), 1)),
        }
    }
    groups
}

/// rust_xlsxwriter reads a series name such as `Sheet1!A1` or `=(…)` as a
/// cell reference; a run label never is one, so such characters are swapped
/// for look-alikes.
fn literal_name(name: &str) -> String {
    let name = name.replace('!', "ǃ");
    match name.strip_prefix('=') {
        Some(rest) => format!("＝{rest}"),
        None => name,
    }
}

/// The Per-Class table: a row per run × mix × class.
fn class_table(runs: &[Run], several: bool) -> Table {
    let header = header_of(
        several,
        &[
            "mix",
            "phase",
            "class",
            "kind",
            "spi",
            "protocol",
            "percent",
            "observed_percent",
            "requests",
            "requests_per_sec",
            "mbytes_per_sec",
            "latency_p50_us",
            "latency_p99_us",
            "errors_total",
        ],
    );
    let mut rows = Vec::new();
    for run in runs {
        for m in &run.results.mixes {
            for c in &m.classes {
                let f = &c.figures;
                let mut cells = row_of(several, run, header.len());
                cells.extend([
                    Cell::count(m.mix as u64),
                    Cell::text(m.phase.as_str()),
                    Cell::text(c.name.as_str()),
                    Cell::text(c.kind.as_str()),
                    Cell::opt_text(c.spi.as_deref()),
                    Cell::text(m.class_protocol(&c.name)),
                    Cell::Num(c.percent),
                    Cell::Num(c.observed_percent),
                    Cell::count(f.requests),
                    Cell::Num(f.requests_per_sec),
                    // As summary.csv's mbytes_per_sec: MB = 10⁶ bytes, 3 decimals.
                    Cell::Num(round(f.bytes_per_sec / 1e6, 3)),
                    Cell::count(f.latency_us.p50),
                    Cell::count(f.latency_us.p99),
                    Cell::count(f.errors_total),
                ]);
                rows.push(cells);
            }
        }
    }
    Table { header, rows }
}

/// A row's first cells: the run's label when there are several runs
/// (the `run` column of [`header_of`]), room for `len` cells.
fn row_of(several: bool, run: &Run, len: usize) -> Vec<Cell> {
    let mut cells = Vec::with_capacity(len);
    if several {
        cells.push(Cell::text(run.label.as_str()));
    }
    cells
}

/// A header of `names`, after a `run` column when there are several runs.
fn header_of(several: bool, names: &[&str]) -> Vec<String> {
    let run = several.then_some("run");
    run.into_iter().chain(names.iter().copied()).map(String::from).collect()
}

/// One row per file mix: what only file servers have (docs/counting.md,
/// "File suites"), the page's File operations table as cells.
fn files_table(runs: &[Run], several: bool) -> Table {
    let header = header_of(
        several,
        &[
            "mix",
            "phase",
            "clients",
            "users",
            "requests",
            "requests_per_sec",
            "mbit_per_sec",
            "bytes_read",
            "bytes_written",
            "errors_total",
            "not_sent",
            "loops",
            "prepared_bytes",
            "wire_bytes_sent",
            "wire_bytes_received",
            "lease_breaks",
            "oplock_breaks",
            "fairness_percent",
            "errors_by_status",
        ],
    );
    let mut rows = Vec::new();
    for run in runs {
        for m in &run.results.mixes {
            let Some(f) = &m.files else { continue };
            let mut cells = row_of(several, run, header.len());
            let by_status: Vec<String> = f.errors_by_status.iter().map(|(k, n)| format!("{k}: {n}")).collect();
            cells.extend([
                Cell::count(m.mix as u64),
                Cell::text(m.phase.as_str()),
                Cell::count(m.clients.into()),
                Cell::count(f.users.into()),
                Cell::count(m.figures.requests),
                Cell::Num(m.figures.requests_per_sec),
                Cell::Num(m.figures.mbit_per_sec),
                Cell::count(f.bytes_read),
                Cell::count(f.bytes_written),
                Cell::count(m.figures.errors_total),
                Cell::count(f.not_sent),
                Cell::count(f.loops),
                Cell::count(f.prepared_bytes),
            ]);
            // Blank where the client cannot see its wire (libsmbclient, file://).
            let maybe = |v: Option<u64>| v.map(Cell::count).unwrap_or(Cell::Blank);
            cells.extend([
                maybe(f.wire_bytes_sent),
                maybe(f.wire_bytes_received),
                maybe(f.lease_breaks),
                maybe(f.oplock_breaks),
                Cell::Num(f.fairness * 100.0),
                Cell::text(by_status.join("; ")),
            ]);
            rows.push(cells);
        }
    }
    Table { header, rows }
}

/// One row per file mix × operation kind: count, rate, errors, not sent
/// and latency (the page's per-operation latency table as cells).
fn operations_table(runs: &[Run], several: bool) -> Table {
    let header = header_of(
        several,
        &[
            "mix",
            "phase",
            "class",
            "requests",
            "requests_per_sec",
            "errors_total",
            "not_sent",
            "latency_mean_us",
            "latency_p50_us",
            "latency_p90_us",
            "latency_p99_us",
            "latency_p999_us",
            "latency_max_us",
        ],
    );
    let mut rows = Vec::new();
    for run in runs {
        for m in &run.results.mixes {
            let Some(files) = &m.files else { continue };
            for c in &m.classes {
                let (f, l) = (&c.figures, &c.figures.latency_us);
                let mut cells = row_of(several, run, header.len());
                cells.extend([
                    Cell::count(m.mix as u64),
                    Cell::text(m.phase.as_str()),
                    Cell::text(c.name.as_str()),
                    Cell::count(f.requests),
                    Cell::Num(f.requests_per_sec),
                    Cell::count(f.errors_total),
                    Cell::count(files.not_sent_by_operation.get(&c.name).copied().unwrap_or(0)),
                    Cell::Num(l.mean),
                    Cell::count(l.p50),
                    Cell::count(l.p90),
                    Cell::count(l.p99),
                    Cell::count(l.p999),
                    Cell::count(l.max),
                ]);
                rows.push(cells);
            }
        }
    }
    Table { header, rows }
}

/// One row per open-loop mix: its offered and achieved rates, late sends,
/// waits at the in-flight cap, corrected and as-sent latency, connections —
/// the page's open-loop table as cells.
fn open_loop_table(runs: &[Run], several: bool) -> Table {
    let header = header_of(
        several,
        &[
            "mix",
            "phase",
            "arrival",
            "offered_rate_per_sec",
            "sends_per_sec",
            "requests_per_sec",
            "sends",
            "late_sends",
            "late_percent",
            "max_in_flight",
            "max_in_flight_hit",
            "unsent",
            "latency_p50_us",
            "latency_as_sent_p50_us",
            "latency_p99_us",
            "latency_as_sent_p99_us",
            "connections_opened",
            "peak_connections",
            "peak_connections_upper_bound",
        ],
    );
    let mut rows = Vec::new();
    for run in runs {
        for m in &run.results.mixes {
            let Some(ol) = &m.open_loop else { continue };
            let mut cells = row_of(several, run, header.len());
            let late = if ol.sends > 0 {
                100.0 * ol.late_sends as f64 / ol.sends as f64
            } else {
                0.0
            };
            cells.extend([
                Cell::count(m.mix as u64),
                Cell::text(m.phase.as_str()),
                Cell::text(ol.arrival.as_str()),
                Cell::Num(ol.rate),
                Cell::Num(ol.sends_per_sec),
                Cell::Num(m.figures.requests_per_sec),
                Cell::count(ol.sends),
                Cell::count(ol.late_sends),
                Cell::Num(late),
                Cell::count(ol.max_in_flight.into()),
                Cell::count(ol.max_in_flight_hit),
                Cell::count(ol.unsent),
                Cell::count(m.figures.latency_us.p50),
                Cell::count(ol.latency_as_sent_us.p50),
                Cell::count(m.figures.latency_us.p99),
                Cell::count(ol.latency_as_sent_us.p99),
                Cell::count(m.connections_opened),
                Cell::count(ol.peak_connections),
                Cell::Bool(ol.peak_connections_upper_bound),
            ]);
            rows.push(cells);
        }
    }
    Table { header, rows }
}

/// One row per monitored mix × host: the host's averages over the window
/// and the mix's verdict — the page's "What limited the run" as cells.
fn resources_table(runs: &[Run], several: bool) -> Table {
    let header = header_of(
        several,
        &[
            "mix",
            "phase",
            "threads",
            "requests_per_sec",
            "limit",
            "verdict",
            "host",
            "role",
            "source",
            "seconds",
            "cpu_busy_percent",
            "cpu_user_percent",
            "cpu_system_percent",
            "cpu_iowait_percent",
            "cpu_softirq_percent",
            "cpu_steal_percent",
            "context_switches_per_sec",
            "context_switches_per_request",
            "interrupts_per_sec",
            "run_queue",
            "memory_used_bytes",
            "page_cache_bytes",
            "nic",
            "nic_mbit_per_sec",
            "nic_speed_mbit",
            "disk_ops_per_sec",
            "disk_busy_percent",
            "listen_overflows_per_sec",
            "process",
            "process_cpu_user",
            "process_cpu_system",
            "process_threads",
            "process_open_files",
            "client_cpu_percent",
            "client_saturated",
            "loop_lag_max_us",
        ],
    );
    let mut rows = Vec::new();
    for run in runs {
        for m in &run.results.mixes {
            let Some(res) = &m.resources else { continue };
            for h in &res.hosts {
                let mut cells = row_of(several, run, header.len());
                let limit = serde_json::to_value(res.verdict.limit)
                    .ok()
                    .and_then(|v| v.as_str().map(String::from))
                    .unwrap_or_default();
                let role = serde_json::to_value(h.role)
                    .ok()
                    .and_then(|v| v.as_str().map(String::from))
                    .unwrap_or_default();
                cells.extend([
                    Cell::count(m.mix as u64),
                    Cell::text(m.phase.as_str()),
                    Cell::count(m.threads),
                    Cell::Num(m.figures.requests_per_sec),
                    Cell::text(limit),
                    Cell::text(res.verdict.summary.as_str()),
                    Cell::text(h.host.as_str()),
                    Cell::text(role),
                    Cell::text(h.source.as_str()),
                    Cell::count(h.seconds.len() as u64),
                ]);
                let a = h.average.as_ref();
                let cpu = a.map(crate::html::server_cpu);
                let nic = a.and_then(crate::html::busiest_nic);
                let num = |v: Option<f64>| v.map_or(Cell::Blank, Cell::Num);
                cells.extend([
                    num(cpu.as_ref().map(|c| c.busy())),
                    num(cpu.as_ref().map(|c| c.user)),
                    num(cpu.as_ref().map(|c| c.kernel())),
                    num(cpu.as_ref().map(|c| c.iowait)),
                    num(cpu.as_ref().map(|c| c.softirq)),
                    num(cpu.as_ref().map(|c| c.steal)),
                    num(a.map(|a| a.context_switches_per_sec)),
                    num(h.context_switches_per_request),
                    num(a.map(|a| a.interrupts_per_sec)),
                    num(a.map(|a| a.run_queue)),
                    num(a.map(|a| a.memory.used_bytes as f64)),
                    num(a.map(|a| a.memory.page_cache_bytes as f64)),
                    Cell::opt_text(nic.map(|n| n.name.as_str())),
                    num(nic.map(|n| n.mbit_per_sec())),
                    num(nic.and_then(|n| n.speed_mbit).map(|s| s as f64)),
                    num(a.map(|a| a.disks.iter().map(|d| d.ops_per_sec()).sum())),
                    num(a.and_then(|a| a.disks.iter().map(|d| d.busy_percent).max_by(f64::total_cmp))),
                    num(a.map(|a| a.listen_overflows_per_sec)),
                    Cell::opt_text(a.and_then(|a| a.process.as_ref()).map(|p| p.name.as_str())),
                    num(a.and_then(|a| a.process.as_ref()).map(|p| p.cpu_user)),
                    num(a.and_then(|a| a.process.as_ref()).map(|p| p.cpu_system)),
                    num(a.and_then(|a| a.process.as_ref()).map(|p| p.threads as f64)),
                    num(a.and_then(|a| a.process.as_ref()).map(|p| p.open_files as f64)),
                    Cell::Num(m.client_cpu.utilisation * 100.0),
                    Cell::Bool(res.verdict.client_saturated),
                    Cell::count(m.client_data.iter().map(|c| c.loop_lag_max_us).max().unwrap_or(0)),
                ]);
                rows.push(cells);
            }
        }
    }
    Table { header, rows }
}

/// The columns of the mix parameters table on the Configuration sheet.
const PARAM_COLUMNS: &[&str] = &[
    "mix",
    "phase",
    "clients",
    "threads_per_client",
    "delay_s",
    "ramp_up_s",
    "ramp_down_s",
    "length_s",
    "think_time_s",
    "receive_buffer",
    "http10_percent",
    "http10_keepalive",
    "persistent_percent",
    "requests_per_connection",
    "preconnect",
    "timeout_s",
    "http",
    "h2_connections",
    "h2_streams_per_connection",
    "h2_streams_opened",
    "h2_stream_resets",
    "workload",
    "target",
];

fn param_row(m: &MixResult) -> Vec<Cell> {
    let p = &m.params;
    // In the suite format's own syntax: N, "MIN..MAX" or "unlimited".
    let per_connection = match p.requests_per_connection {
        None => Cell::text("unlimited"),
        Some([a, b]) if a == b => Cell::count(u64::from(a)),
        Some([a, b]) => Cell::text(format!("{a}..{b}")),
    };
    vec![
        Cell::count(m.mix as u64),
        Cell::text(m.phase.as_str()),
        Cell::count(u64::from(m.clients)),
        Cell::count(u64::from(p.threads_per_client)),
        Cell::Num(p.delay_s),
        Cell::Num(p.ramp_up_s),
        Cell::Num(p.ramp_down_s),
        Cell::Num(p.length_s),
        Cell::Num(p.think_time_s),
        Cell::count(p.receive_buffer as u64),
        Cell::count(u64::from(p.http10_percent)),
        Cell::Bool(p.http10_keepalive),
        Cell::count(u64::from(p.persistent_percent)),
        per_connection,
        Cell::Bool(p.preconnect),
        Cell::Num(p.timeout_s),
        // Every class of a mix speaks the mix's protocol.
        Cell::text(if m.http2.is_some() { "2" } else { "1.1" }),
        m.http2.as_ref().map_or(Cell::Blank, |h| Cell::count(h.connections)),
        m.http2
            .as_ref()
            .map_or(Cell::Blank, |h| Cell::count(u64::from(h.streams_per_connection))),
        m.http2.as_ref().map_or(Cell::Blank, |h| Cell::count(h.streams_opened)),
        m.http2
            .as_ref()
            .map_or(Cell::Blank, |h| Cell::count(h.stream_resets.values().sum())),
        Cell::text(p.workload.as_str()),
        Cell::text(p.target.as_str()),
    ]
}

/// The fields of a run's disclosure, as (field, value) rows.
fn disclosure(run: &Run) -> Vec<(String, Cell)> {
    let r = &run.results;
    let (s, e) = (&r.suite, &r.environment);
    let started = i64::try_from(e.started_unix).map_or(Cell::Blank, Cell::Time);
    let mut rows: Vec<(String, Cell)> = vec![
        ("run".into(), Cell::text(run.label.as_str())),
        ("results directory".into(), Cell::text(run.dir.display().to_string())),
        ("schema".into(), Cell::text(r.schema.as_str())),
        ("complete".into(), Cell::Bool(r.complete)),
        ("suite.name".into(), Cell::text(s.name.as_str())),
        ("suite.description".into(), Cell::text(s.description.as_str())),
        ("suite.file".into(), Cell::text(s.file.as_str())),
        ("suite.seed".into(), Cell::count(s.seed)),
        (
            "suite.max_clients".into(),
            s.max_clients.map_or(Cell::text("none"), |n| Cell::count(u64::from(n))),
        ),
        (
            "environment.benchlab_version".into(),
            Cell::text(e.benchlab_version.as_str()),
        ),
        ("environment.host".into(), Cell::text(e.host.as_str())),
        ("environment.kernel".into(), Cell::text(e.kernel.as_str())),
        ("environment.cpu".into(), Cell::text(e.cpu.as_str())),
        ("environment.cores".into(), Cell::count(e.cores as u64)),
        ("environment.target".into(), Cell::text(e.target.as_str())),
        ("environment.started_unix".into(), Cell::count(e.started_unix)),
        ("environment.started (UTC)".into(), started),
        ("environment.command".into(), Cell::text(e.command.join(" "))),
        ("environment.time_scale".into(), Cell::Num(e.time_scale)),
        (
            "environment.client_cpus".into(),
            Cell::text(crate::html::cpu_list(&e.client_cpus)),
        ),
        ("environment.cold_cache".into(), Cell::Bool(e.cold_cache)),
        (
            "environment.cold_cache_method".into(),
            Cell::text(e.cold_cache_method.clone().unwrap_or_default()),
        ),
    ];
    if let Some(h) = &e.host_facts {
        for (k, v) in &h.kernel_tunables {
            rows.push((format!("environment.host_facts.{k}"), Cell::text(v.as_str())));
        }
        rows.push((
            "environment.host_facts.cpu_model".into(),
            Cell::text(h.cpu_model.as_str()),
        ));
        rows.push((
            "environment.host_facts.cpus_online".into(),
            Cell::count(h.cpus_online as u64),
        ));
        rows.push((
            "environment.host_facts.memory_bytes".into(),
            Cell::count(h.memory_bytes),
        ));
    }
    if let Some(sv) = &e.server {
        rows.push(("environment.server.server".into(), Cell::text(sv.server.as_str())));
        rows.push(("environment.server.version".into(), Cell::text(sv.version.as_str())));
        rows.push(("environment.server.url".into(), Cell::text(sv.url.as_str())));
        rows.push((
            "environment.server.cpus".into(),
            Cell::text(crate::html::cpu_list(&sv.cpus)),
        ));
        if let Some(b) = &sv.listen_backlog {
            rows.push(("environment.server.listen_backlog".into(), Cell::text(b.text())));
        }
    }
    for p in &r.phases {
        let mixes: Vec<String> = p.mixes.iter().map(|m| m.to_string()).collect();
        rows.push((
            format!("phase {}", p.name),
            Cell::text(format!(
                "workload {}; target {}; mixes {}",
                p.workload,
                p.target,
                mixes.join(", ")
            )),
        ));
    }
    rows
}

/// The Configuration sheet: per run, the disclosure fields, the mix
/// parameters table and the suite file's text, a line per row (one cell
/// would hide the lines and could pass Excel's limit on a cell).
fn write_configuration(ws: &mut Worksheet, runs: &[Run], several: bool, bold: &Format) -> Result<(), String> {
    let mut sheet = Sheet::new(ws, bold);
    sheet.header(0, &["Field", "Value"])?;
    let mut row: RowNum = 1;
    for (i, run) in runs.iter().enumerate() {
        if several {
            if i > 0 {
                row = next_row(row)?;
            }
            sheet.title(row, &format!("Run {}", run.label))?;
            row = next_row(row)?;
        }
        for (field, value) in disclosure(run) {
            sheet.cell(row, 0, &Cell::text(field))?;
            sheet.cell(row, 1, &value)?;
            row = next_row(row)?;
        }

        row = next_row(row)?;
        sheet.title(row, "Mix parameters")?;
        row = next_row(row)?;
        let params = Table {
            header: PARAM_COLUMNS.iter().map(|c| c.to_string()).collect(),
            rows: run.results.mixes.iter().map(param_row).collect(),
        };
        row = sheet.table(row, &params)?;

        if let Some(sv) = &run.results.environment.server {
            let texts = std::iter::once(("profile".to_owned(), &sv.profile)).chain(
                sv.effective_configuration
                    .iter()
                    .map(|c| (format!("effective configuration: {}", c.source), &c.text)),
            );
            for (title, text) in texts {
                row = next_row(row)?;
                sheet.title(row, &format!("Server under test {}: {title}", sv.server))?;
                row = next_row(row)?;
                for line in text.lines() {
                    sheet.overflowing(row, 0, line)?;
                    row = next_row(row)?;
                }
            }
        }

        row = next_row(row)?;
        sheet.title(row, &format!("Suite file {}", run.results.suite.file))?;
        row = next_row(row)?;
        for line in run.results.suite.text.lines() {
            sheet.overflowing(row, 0, line)?;
            row = next_row(row)?;
        }
    }
    sheet.finish(true);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use benchlab_results::{
        ClassResult, ClientResult, Environment, Figures, Histograms, Latency, ParamsResult, PhaseResult, SuiteInfo,
    };
    use std::path::PathBuf;

    fn figures(requests: u64, rps: f64, bps: f64) -> Figures {
        Figures {
            requests,
            requests_per_sec: rps,
            bytes: requests * 1000,
            bytes_per_sec: bps,
            mbit_per_sec: round(bps * 8.0 / 1e6, 3),
            body_bytes: requests * 900,
            error_bytes: 0,
            bytes_sent: 0,
            errors: [("connect".to_string(), 1u64), ("timeout".to_string(), 0)]
                .into_iter()
                .collect(),
            errors_total: 1,
            latency_us: Latency {
                mean: 812.3,
                p50: 700,
                p90: 1200,
                p99: 2500,
                p999: 4000,
                max: 9000,
            },
            error_latency_us: Latency::default(),
        }
    }

    fn mix(n: usize, phase: &str, clients: u32, rps: f64) -> MixResult {
        MixResult {
            mix: n,
            phase: phase.to_string(),
            clients,
            clients_participating: clients,
            threads: u64::from(clients) * 2,
            partial: false,
            window_s: 1.5,
            figures: figures(1234, rps, rps * 1000.0 + 0.25),
            reconnects: 3,
            in_flight: 2,
            connections_opened: 40,
            tls_full_handshakes: 0,
            tls_resumptions: 0,
            client_cpu_s: 0.5,
            client_cpu: Default::default(),
            params: ParamsResult {
                delay_s: 0.0,
                ramp_up_s: 1.0,
                ramp_down_s: 0.5,
                length_s: 3.0,
                think_time_s: 0.0,
                threads_per_client: 2,
                receive_buffer: 16384,
                http10_percent: 0,
                http10_keepalive: false,
                persistent_percent: 100,
                requests_per_connection: Some([1, 8]),
                timeout_s: 5.0,
                workload: "demo".into(),
                target: "http://127.0.0.1:8080".into(),
                preconnect: false,
            },
            client_data: (1..=clients)
                .map(|c| ClientResult {
                    client: c,
                    address: (c % 2 == 1).then(|| format!("127.0.0.{}", c + 1)),
                    figures: figures(600, rps / 2.0, 1e5 / 3.0),
                    connections_opened: 20,
                    in_flight: 1,
                    delay_s: 0.125,
                    taken_out: c == 2,
                    lost: None,
                    cpu_s: 0.25,
                    loop_lag_max_us: 0,
                    seconds: Vec::new(),
                })
                .collect(),
            classes: vec![
                ClassResult {
                    name: "static".into(),
                    kind: "static".into(),
                    spi: None,
                    percent: 80.0,
                    observed_percent: 79.6,
                    figures: figures(980, rps * 0.8, 123456.78),
                },
                ClassResult {
                    name: "adrot".into(),
                    kind: "dynamic".into(),
                    spi: Some("inproc".into()),
                    percent: 20.0,
                    observed_percent: 20.4,
                    figures: figures(254, rps * 0.2, 2345.5),
                },
            ],
            per_second: Vec::new(),
            histograms: Histograms::default(),
            users_arrived: 0,
            users_waiting: 0,
            request_kinds: Default::default(),
            warnings: Vec::new(),
            open_loop: None,
            search: None,
            repeats: None,
            resources: None,
            http2: None,
            files: None,
            http_command: None,
            flows: None,
            start_spread: None,
        }
    }

    fn results(phases: &[(&str, usize)]) -> Results {
        let mut mixes = Vec::new();
        let mut phase_results = Vec::new();
        for (name, count) in phases {
            let first = mixes.len() + 1;
            for i in 0..*count {
                let n = mixes.len() + 1;
                mixes.push(mix(n, name, 1 << i, 1000.0 * (i as f64 + 1.0) + 0.33));
            }
            phase_results.push(PhaseResult {
                name: name.to_string(),
                workload: "demo".into(),
                target: "http://127.0.0.1:8080".into(),
                mixes: (first..first + count).collect(),
                search: None,
            });
        }
        Results {
            schema: benchlab_results::RESULTS_SCHEMA.into(),
            suite: SuiteInfo {
                name: "tiny".into(),
                description: "a tiny suite, with \"quotes\"".into(),
                file: "suites/tiny.toml".into(),
                seed: 7,
                max_clients: Some(8),
                price: None,
                text: "name = \"tiny\"\n\n[[mix]]\nclients = 1\n".into(),
            },
            environment: Environment {
                benchlab_version: "0.1.0".into(),
                host: "box".into(),
                kernel: "Linux 6".into(),
                cpu: "a CPU".into(),
                cores: 2,
                target: "http://127.0.0.1:8080".into(),
                started_unix: 1_700_000_000,
                command: vec!["benchlab".into(), "run".into(), "tiny.toml".into()],
                time_scale: 1.0,
                host_facts: None,
                client_cpus: Vec::new(),
                server: None,
                cold_cache: false,
                agents: Vec::new(),
                cold_cache_method: None,
            },
            phases: phase_results,
            mixes,
            complete: true,
            thresholds: Vec::new(),
        }
    }

    fn run(label: &str, phases: &[(&str, usize)]) -> Run {
        Run {
            label: label.into(),
            dir: PathBuf::from(format!("results/{label}")),
            results: results(phases),
        }
    }

    fn bytes(runs: &[Run]) -> Vec<u8> {
        build(runs, &crate::ReportOptions::default())
            .expect("builds")
            .save_to_buffer()
            .expect("saves")
    }

    #[test]
    fn csv_round_trip_with_quotes() {
        let text = "a,b,c\n1,\"x,\"\"y\"\"\",\n2,\"multi\nline\",z\n";
        assert_eq!(
            parse_csv(text),
            vec![
                vec!["a", "b", "c"],
                vec!["1", "x,\"y\"", ""],
                vec!["2", "multi\nline", "z"],
            ]
        );
        assert_eq!(parse_csv("a,b"), vec![vec!["a", "b"]]);
        assert!(parse_csv("").is_empty());
    }

    #[test]
    fn csv_fields_are_typed() {
        assert_eq!(Cell::of_csv("requests", "12"), Cell::Num(12.0));
        assert_eq!(Cell::of_csv("window_s", "1.5"), Cell::Num(1.5));
        assert_eq!(Cell::of_csv("partial", "false"), Cell::Bool(false));
        assert_eq!(Cell::of_csv("phase", "2"), Cell::Text("2".into()));
        assert_eq!(Cell::of_csv("address", ""), Cell::Blank);
        assert_eq!(Cell::of_csv("x", "inf"), Cell::Text("inf".into()));
        assert_eq!(Cell::of_csv("x", "NaN"), Cell::Text("NaN".into()));
    }

    #[test]
    fn summary_table_is_summary_csv() {
        let runs = [run("a", &[("demo", 3)])];
        let table = csv_table(&runs, false, summary_csv).expect("table");
        let csv = parse_csv(&summary_csv(&runs[0].results));
        assert_eq!(table.header, csv[0]);
        assert_eq!(table.rows.len(), 3);
        for (cells, record) in table.rows.iter().zip(&csv[1..]) {
            assert_eq!(cells.len(), record.len());
            for (cell, text) in cells.iter().zip(record) {
                match cell {
                    Cell::Num(x) => assert_eq!(*x, text.parse::<f64>().expect("number")),
                    Cell::Bool(b) => assert_eq!(b.to_string(), *text),
                    Cell::Text(s) => assert_eq!(s, text),
                    Cell::Blank => assert_eq!(text, ""),
                    Cell::Time(_) | Cell::Formula(..) => panic!("no times or formulas in the summary"),
                }
            }
        }
        let several =
            csv_table(&[run("a", &[("demo", 2)]), run("b", &[("demo", 1)])], true, summary_csv).expect("table");
        assert_eq!(several.header[0], "run");
        assert_eq!(several.rows.len(), 3);
        assert_eq!(several.rows[2][0], Cell::Text("b".into()));
    }

    #[test]
    fn series_per_run_and_per_phase() {
        let runs = [run("a", &[("static", 2), ("dynamic", 3)]), run("b", &[("static", 4)])];
        let s = chart_series(&runs, true);
        let got: Vec<(&str, RowNum, RowNum)> = s.iter().map(|s| (s.name.as_str(), s.first_row, s.last_row)).collect();
        assert_eq!(got, vec![("a · static", 1, 2), ("a · dynamic", 3, 5), ("b", 6, 9)]);
        let one = chart_series(&runs[1..], false);
        assert_eq!(one.len(), 1);
        assert_eq!((one[0].first_row, one[0].last_row), (1, 4));
        assert_eq!(literal_name("x!A1"), "xǃA1");
    }

    #[test]
    fn per_class_rows() {
        let t = class_table(&[run("a", &[("demo", 2)])], false);
        assert_eq!(t.rows.len(), 4);
        assert_eq!(t.header.len(), t.rows[0].len());
        assert_eq!(t.rows[1][4], Cell::Text("inproc".into()));
        assert_eq!(t.rows[0][4], Cell::Blank);
        assert_eq!(t.rows[0][10], Cell::Num(0.123));
        assert_eq!(t.rows[0][5], Cell::Text("HTTP/1".into()));
    }

    /// A run whose second mix was monitored: a CPU-bound server.
    fn monitored() -> Run {
        use benchlab_results::resources::*;
        let mut r = run("a", &[("demo", 2)]);
        let avg = HostSample {
            host: "srv".into(),
            cpu: CpuShares {
                user: 22.0,
                system: 75.0,
                idle: 3.0,
                ..CpuShares::default()
            },
            per_core: vec![CpuShares {
                user: 22.0,
                system: 75.0,
                idle: 3.0,
                ..CpuShares::default()
            }],
            context_switches_per_sec: 37_000.0,
            nics: vec![NicSample {
                name: "eth0".into(),
                tx_bytes_per_sec: 9_125_000.0,
                speed_mbit: Some(100),
                ..NicSample::default()
            }],
            ..HostSample::default()
        };
        let verdict = verdict(
            Some(&avg),
            false,
            &r.results.mixes[1].client_cpu,
            &GeneratorCores::default(),
        );
        r.results.mixes[1].resources = Some(MixResources {
            hosts: vec![HostResources {
                host: "srv".into(),
                role: HostRole::Server,
                source: "local".into(),
                seconds: vec![avg.clone()],
                average: Some(avg),
                context_switches_per_request: Some(12.5),
            }],
            verdict,
        });
        r
    }

    #[test]
    fn resources_rows_and_the_verdict_on_the_page() {
        let runs = [monitored()];
        let t = resources_table(&runs, false);
        assert_eq!(t.rows.len(), 1, "only the monitored mix");
        assert_eq!(t.header.len(), t.rows[0].len());
        let col = |name: &str| t.header.iter().position(|h| h == name).expect("column");
        assert_eq!(t.rows[0][col("mix")], Cell::Num(2.0));
        assert_eq!(t.rows[0][col("limit")], Cell::Text("server_cpu".into()));
        assert_eq!(t.rows[0][col("cpu_busy_percent")], Cell::Num(97.0));
        assert_eq!(t.rows[0][col("cpu_system_percent")], Cell::Num(75.0));
        assert_eq!(t.rows[0][col("context_switches_per_request")], Cell::Num(12.5));
        assert_eq!(t.rows[0][col("nic_speed_mbit")], Cell::Num(100.0));
        let html = crate::render_html(&runs, &crate::ReportOptions::default());
        assert!(html.contains("What limited the run: server resources"));
        assert!(html.contains("CPU-bound: server CPU 97 % busy, 75 % in system time"));
        assert!(html.contains("NIC eth0 at 73 % of 100 Mbit/s"));
        assert!(
            html.contains(r#"data-line="link-capacity""#),
            "the network chart shows the link"
        );
        // Nothing monitored: no section, no sheet.
        let plain = crate::render_html(&[run("a", &[("demo", 2)])], &crate::ReportOptions::default());
        assert!(!plain.contains("What limited the run"));
        assert!(resources_table(&[run("a", &[("demo", 2)])], false).rows.is_empty());
    }

    #[test]
    fn the_network_figures_show_the_nic_that_carried_the_load() {
        use benchlab_results::resources::*;
        // A loopback run: lo carried 8,218 Mbit/s, eth0 the machine's own
        // 0.6 Mbit/s.
        let mut r = monitored();
        let client = r.results.mixes[1].client_cpu.clone();
        let res = r.results.mixes[1].resources.as_mut().expect("monitored");
        let avg = res.hosts[0].average.as_mut().expect("average");
        avg.nics = vec![
            NicSample {
                name: "eth0".into(),
                rx_bytes_per_sec: 40_000.0,
                tx_bytes_per_sec: 75_000.0,
                speed_mbit: Some(1000),
                ..NicSample::default()
            },
            NicSample {
                name: "lo".into(),
                rx_bytes_per_sec: 1_027_250_000.0,
                tx_bytes_per_sec: 1_027_250_000.0,
                ..NicSample::default()
            },
        ];
        res.verdict = verdict(Some(avg), true, &client, &GeneratorCores::default());
        let runs = [r];
        let t = resources_table(&runs, false);
        let col = |name: &str| t.header.iter().position(|h| h == name).expect("column");
        assert_eq!(t.rows[0][col("nic")], Cell::Text("lo".into()));
        assert_eq!(t.rows[0][col("nic_mbit_per_sec")], Cell::Num(8218.0));
        assert_eq!(t.rows[0][col("nic_speed_mbit")], Cell::Blank);
        let html = crate::render_html(&runs, &crate::ReportOptions::default());
        assert!(
            html.contains("<td>lo 8,218.0 Mbit/s</td>"),
            "the table's network column"
        );
        assert!(!html.contains("<td>eth0 0.6"), "the table's network column");
        assert!(html.contains("NIC lo carried the load: 8,218.0 Mbit/s (link speed unknown)"));
        let point = html
            .split(r#"data-chart="resources.nic.mbit_per_sec""#)
            .nth(1)
            .and_then(|rest| rest.split('>').next())
            .expect("the network chart's point");
        assert!(point.contains(r#"data-y="8218""#), "the chart's point: {point}");
        assert!(point.contains("lo 8,218.0 Mbit/s"), "the chart's tip: {point}");
        assert!(!html.contains("eth0 0.6 Mbit/s"), "nowhere");
    }

    /// The headline of `runs`' report page.
    fn headline(runs: &[Run]) -> String {
        let html = crate::render_html(runs, &crate::ReportOptions::default());
        let h = &html[html.find(r#"id="headline""#).expect("headline")..];
        h[..h.find("</section>").expect("end of headline")].to_string()
    }

    #[test]
    fn client_bound_mixes_are_named_in_the_headline() {
        let mut r = run("a", &[("demo", 3)]);
        for m in &mut r.results.mixes {
            m.client_cpu.cores = 2;
            m.client_cpu.utilisation = 0.4;
        }
        let none = headline(std::slice::from_ref(&r));
        assert!(none.contains("No mix was client-bound"), "{none}");
        assert!(!none.contains("CLIENT-BOUND"), "{none}");
        r.results.mixes[1].client_cpu.utilisation = 0.95;
        r.results.mixes[1].client_cpu.client_bound = true;
        r.results.mixes[2].client_cpu.client_bound = true;
        let flagged = headline(std::slice::from_ref(&r));
        assert!(flagged.contains(r#"data-client-bound="2,3""#), "{flagged}");
        assert!(
            flagged.contains("CLIENT-BOUND: mixes 2 and 3: the load generator used more than 90.0 % of the CPU cores"),
            "{flagged}"
        );
        // A co-located mix on a saturated machine, not client-bound itself.
        r.results.mixes[0].client_cpu.machine_busy = Some(0.99);
        r.results.mixes[0].client_cpu.co_located_saturated = true;
        let both = headline(std::slice::from_ref(&r));
        assert!(both.contains(r#"data-co-located="1""#), "{both}");
        assert!(
            both.contains("CO-LOCATED: mix 1: the server ran on the load generator's machine"),
            "{both}"
        );
        assert!(both.contains("CLIENT-BOUND: mixes 2 and 3"), "{both}");
        // Results from before the generator's CPU was recorded: no line.
        let old = run("b", &[("demo", 2)]);
        assert!(!headline(&[old]).contains("client-bound"));
    }

    #[test]
    fn workbook_is_deterministic() {
        let runs = [run("a", &[("static", 2), ("dynamic", 2)]), run("b", &[("static", 3)])];
        let first = bytes(&runs);
        assert_eq!(first, bytes(&runs));
        assert!(first.starts_with(b"PK"), "a zip file");
        assert!(bytes(&runs[..1]).starts_with(b"PK"));
    }

    #[test]
    fn empty_inputs() {
        assert!(build(&[], &crate::ReportOptions::default()).is_err());
        let mut r = run("a", &[]);
        r.results.mixes.clear();
        assert!(
            bytes(&[r]).starts_with(b"PK"),
            "no mixes: tables without rows, no charts"
        );
    }

    #[test]
    fn writes_a_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("r.xlsx");
        write_xlsx(&[run("a", &[("demo", 2)])], &path).expect("writes");
        assert!(std::fs::metadata(&path).expect("exists").len() > 1000);
        let bad = dir.path().join("no/such/dir/r.xlsx");
        assert!(write_xlsx(&[run("a", &[("demo", 1)])], &bad).is_err());
    }

    #[test]
    fn column_names_and_ratio_formulas() {
        assert_eq!(col_name(0), "A");
        assert_eq!(col_name(25), "Z");
        assert_eq!(col_name(27), "AB");
        assert_eq!(
            ratio_cell(1, (9, Some(50.0)), (2, Some(200.0))),
            Cell::Formula("=J2/C2".into(), 0.25)
        );
        assert_eq!(ratio_cell(1, (9, Some(50.0)), (2, Some(0.0))), Cell::Blank);
        assert_eq!(ratio_cell(1, (9, None), (2, Some(1.0))), Cell::Blank);
    }
}
