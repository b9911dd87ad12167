//! A file suite's workbook (report.xlsx), as a web suite has one: NetBench
//! gave its results as a spreadsheet, and a spreadsheet is where they get
//! compared. Sheets: Summary (a row per mix, and Mbit/s against clients
//! as a chart), Operations (per mix and kind: count, errors, not sent,
//! rate, latency), Per second (each second of each mix), Client data
//! (per mix and client), Errors (per mix and kind of error) and
//! Configuration (the suite, the command, the peak and the shape past it).
//! Numbers are numbers, never text, so they sum and chart as they are, shown
//! with the separators and decimals of their quantity (crates/format) as a
//! web suite's workbook shows them.

use crate::results::FileResults;
use benchlab_format::Quantity;
use rust_xlsxwriter::{Chart, ChartLegendPosition, ChartType, Format, Workbook, Worksheet};
use std::path::Path;

/// A cell of a table: text, or a number with its quantity's number format
/// (none: a mix or client number, a name more than a count).
enum Cell {
    Text(String),
    Num(f64, Option<Quantity>),
}

fn t(s: impl Into<String>) -> Cell {
    Cell::Text(s.into())
}

/// Mbit/s.
fn mbit(v: f64) -> Cell {
    Cell::Num(v, Some(Quantity::MbitPerSec))
}

/// Operations per second, as requests/s.
fn ops(v: f64) -> Cell {
    Cell::Num(v, Some(Quantity::RequestsPerSec))
}

/// A number of the given quantity.
fn q(v: f64, quantity: Quantity) -> Cell {
    Cell::Num(v, Some(quantity))
}

/// Counts as numbers (Excel keeps 15 significant digits: exact below 2^53).
fn c(v: u64) -> Cell {
    Cell::Num(v as f64, Some(Quantity::Count))
}

/// A mix, client or second number: a name more than a count.
fn id(v: u64) -> Cell {
    Cell::Num(v as f64, None)
}

fn write_table(ws: &mut Worksheet, header: &[&str], rows: &[Vec<Cell>], bold: &Format) -> Result<(), String> {
    let e = |e: rust_xlsxwriter::XlsxError| e.to_string();
    for (col, h) in header.iter().enumerate() {
        ws.write_string_with_format(0, col as u16, *h, bold).map_err(e)?;
    }
    for (r, row) in rows.iter().enumerate() {
        let r = r as u32 + 1;
        for (col, cell) in row.iter().enumerate() {
            match cell {
                Cell::Text(s) => ws.write_string(r, col as u16, s).map_err(e)?,
                Cell::Num(v, None) => ws.write_number(r, col as u16, *v).map_err(e)?,
                Cell::Num(v, Some(quantity)) => {
                    let format = Format::new().set_num_format(quantity.excel_format());
                    ws.write_number_with_format(r, col as u16, *v, &format).map_err(e)?
                }
            };
        }
    }
    ws.autofit();
    ws.set_freeze_panes(1, 0).map_err(e)?;
    Ok(())
}

/// Builds the workbook of `r`.
fn build(r: &FileResults) -> Result<Workbook, String> {
    let bold = Format::new().set_bold();
    let mut wb = Workbook::new();
    let named = |wb: &mut Workbook, name: &str| -> Result<(), String> {
        wb.add_worksheet().set_name(name).map(|_| ()).map_err(|e| e.to_string())
    };

    named(&mut wb, "Summary")?;
    let rows: Vec<Vec<Cell>> = r
        .mixes
        .iter()
        .map(|m| {
            vec![
                id(m.mix as u64),
                t(m.phase.as_str()),
                t(m.workload.as_str()),
                t(m.target.as_str()),
                c(m.clients.into()),
                c(m.users.into()),
                q(m.window_s, Quantity::Seconds),
                mbit(m.mbit_per_s),
                mbit(m.read_mbit_per_s),
                mbit(m.write_mbit_per_s),
                ops(m.operations_per_s),
                c(m.operations),
                c(m.bytes_read),
                c(m.bytes_written),
                c(m.errors),
                c(m.not_sent),
                c(m.loops),
                c(m.prepared_bytes),
                q(m.fairness, Quantity::Ratio),
                t(if m.partial { "yes" } else { "no" }),
            ]
        })
        .collect();
    let ws = wb.worksheet_from_name("Summary").map_err(|e| e.to_string())?;
    write_table(
        ws,
        &[
            "mix",
            "phase",
            "workload",
            "target",
            "clients",
            "users",
            "window_s",
            "mbit_per_s",
            "read_mbit_per_s",
            "write_mbit_per_s",
            "operations_per_s",
            "operations",
            "bytes_read",
            "bytes_written",
            "errors",
            "not_sent",
            "loops",
            "prepared_bytes",
            "fairness",
            "partial",
        ],
        &rows,
        &bold,
    )?;
    if !r.mixes.is_empty() {
        // Mbit/s (column H) against clients (column E): NetBench's chart.
        let last = r.mixes.len() as u32;
        let mut chart = Chart::new(ChartType::ScatterStraightWithMarkers);
        chart.title().set_name("Throughput");
        chart.x_axis().set_name("Clients").set_min(0);
        chart.y_axis().set_name("Mbit/s").set_min(0);
        chart.legend().set_position(ChartLegendPosition::Bottom);
        chart
            .add_series()
            .set_name(r.suite.as_str())
            .set_categories(("Summary", 1, 4, last, 4))
            .set_values(("Summary", 1, 7, last, 7));
        ws.insert_chart(last + 2, 0, &chart).map_err(|e| e.to_string())?;
    }

    named(&mut wb, "Operations")?;
    let rows: Vec<Vec<Cell>> = r
        .mixes
        .iter()
        .flat_map(|m| {
            m.by_operation.iter().map(move |o| {
                vec![
                    id(m.mix as u64),
                    t(o.operation.as_str()),
                    c(o.count),
                    c(o.errors),
                    c(o.not_sent),
                    ops(o.per_second),
                    q(o.latency_us.mean, Quantity::MeanMicros),
                    c(o.latency_us.p50),
                    c(o.latency_us.p90),
                    c(o.latency_us.p99),
                    c(o.latency_us.max),
                ]
            })
        })
        .collect();
    write_table(
        wb.worksheet_from_name("Operations").map_err(|e| e.to_string())?,
        &[
            "mix",
            "operation",
            "count",
            "errors",
            "not_sent",
            "per_second",
            "latency_mean_us",
            "latency_p50_us",
            "latency_p90_us",
            "latency_p99_us",
            "latency_max_us",
        ],
        &rows,
        &bold,
    )?;

    named(&mut wb, "Per second")?;
    let rows: Vec<Vec<Cell>> = r
        .mixes
        .iter()
        .flat_map(|m| {
            m.per_second.iter().map(move |s| {
                vec![
                    id(m.mix as u64),
                    id(s.second),
                    c(s.operations),
                    c(s.bytes_read),
                    c(s.bytes_written),
                    mbit(s.mbit_per_s),
                    c(s.errors),
                ]
            })
        })
        .collect();
    write_table(
        wb.worksheet_from_name("Per second").map_err(|e| e.to_string())?,
        &[
            "mix",
            "second",
            "operations",
            "bytes_read",
            "bytes_written",
            "mbit_per_s",
            "errors",
        ],
        &rows,
        &bold,
    )?;

    named(&mut wb, "Client data")?;
    let rows: Vec<Vec<Cell>> = r
        .mixes
        .iter()
        .flat_map(|m| {
            m.per_client.iter().map(move |cl| {
                vec![
                    id(m.mix as u64),
                    id(cl.client.into()),
                    c(cl.operations),
                    c(cl.bytes_read),
                    c(cl.bytes_written),
                    mbit(cl.mbit_per_s),
                    c(cl.errors),
                ]
            })
        })
        .collect();
    write_table(
        wb.worksheet_from_name("Client data").map_err(|e| e.to_string())?,
        &[
            "mix",
            "client",
            "operations",
            "bytes_read",
            "bytes_written",
            "mbit_per_s",
            "errors",
        ],
        &rows,
        &bold,
    )?;

    named(&mut wb, "Errors")?;
    let rows: Vec<Vec<Cell>> = r
        .mixes
        .iter()
        .flat_map(|m| {
            m.errors_by_status
                .iter()
                .map(move |(k, v)| vec![id(m.mix as u64), t(k.as_str()), c(*v)])
        })
        .collect();
    write_table(
        wb.worksheet_from_name("Errors").map_err(|e| e.to_string())?,
        &["mix", "error", "count"],
        &rows,
        &bold,
    )?;

    named(&mut wb, "Configuration")?;
    let mut rows = vec![
        vec![t("schema"), t(r.schema.as_str())],
        vec![t("suite"), t(r.suite.as_str())],
        vec![t("description"), t(r.description.as_str())],
        vec![t("started (Unix seconds)"), id(r.started)],
        vec![t("command"), t(r.command.join(" "))],
        vec![t("interrupted"), t(if r.interrupted { "yes" } else { "no" })],
    ];
    if let Some(p) = &r.peak {
        rows.push(vec![t("peak mix"), id(p.mix as u64)]);
        rows.push(vec![t("peak clients"), c(p.clients.into())]);
        rows.push(vec![t("peak Mbit/s"), mbit(p.mbit_per_s)]);
        for (m, pct) in &p.past_peak {
            rows.push(vec![
                t(format!("past the peak: mix {m}, % of the peak")),
                q(*pct, Quantity::Percent),
            ]);
        }
    }
    write_table(
        wb.worksheet_from_name("Configuration").map_err(|e| e.to_string())?,
        &["field", "value"],
        &rows,
        &bold,
    )?;
    Ok(wb)
}

/// Writes `r`'s workbook to `path`.
pub fn write_xlsx(r: &FileResults, path: &Path) -> Result<(), String> {
    build(r)?
        .save(path)
        .map_err(|e| format!("cannot write the workbook {}: {e}", path.display()))
}
