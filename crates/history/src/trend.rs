//! `benchlab history list`, `show` and `trend` as text, and `trend --html`
//! as a page: written from the rows alone, so SQLite and PostgreSQL print
//! the same bytes.
//!
//! A trend is read per server version and configuration (the disclosure's
//! server and version, and a digest of its profile and effective
//! configuration): a change of nginx version is a new series, not noise.
//! Within a series each run's peak is set against the run before it, and
//! the latest run against the median of the runs before it. Partial runs
//! (stopped early) are shown and marked, and left out of both.

use crate::{utc_minute, MixRecord, PhaseRecord, RunRow};
use benchlab_format::{mbit_per_sec, plural, requests_per_sec, thousands};
use benchlab_report::trend::{TrendChart, TrendPoint, TrendSeries};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Change of `cur` against `base`, a fraction (0.05 = +5 %); `None` when
/// `base` is not positive.
pub fn change(base: f64, cur: f64) -> Option<f64> {
    (base > 0.0 && base.is_finite() && cur.is_finite()).then(|| cur / base - 1.0)
}

/// `+5.3 %`, `-0.8 %`, or `-` for none.
pub fn change_text(c: Option<f64>) -> String {
    c.map_or("-".into(), |c| format!("{:+.1} %", c * 100.0))
}

/// The latest value against the median of those before it: `None` with
/// fewer than two values.
pub fn latest_against_before(values: &[f64]) -> Option<f64> {
    let (last, before) = values.split_last()?;
    let r = benchlab_results::Range::of(before)?;
    change(r.median, *last)
}

/// The lead figure of a phase: Mbit/s for a file suite, requests/s else.
fn lead(kind: &str, rps: Option<f64>, mbit: Option<f64>) -> Option<f64> {
    if kind == "file" {
        mbit
    } else {
        rps
    }
}

fn unit(kind: &str) -> &'static str {
    if kind == "file" {
        "Mbit/s"
    } else {
        "requests/s"
    }
}

fn rate_text(kind: &str, v: Option<f64>) -> String {
    match v {
        None => "-".into(),
        Some(v) if kind == "file" => mbit_per_sec(v),
        Some(v) => requests_per_sec(v),
    }
}

fn us_text(v: Option<u64>) -> String {
    v.map_or("-".into(), |v| format!("{} µs", thousands(v)))
}

/// A plain text table: a header and rows, columns padded; `right` marks
/// the columns of numbers (right-aligned).
pub fn table(head: &[&str], right: &[bool], rows: &[Vec<String>]) -> String {
    let mut w: Vec<usize> = head.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            if i < w.len() {
                w[i] = w[i].max(c.chars().count());
            }
        }
    }
    let line = |cells: Vec<&str>| {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate() {
            let pad = w[i].saturating_sub(c.chars().count());
            if i > 0 {
                s.push_str("  ");
            }
            if right.get(i).copied().unwrap_or(false) {
                s.push_str(&" ".repeat(pad));
                s.push_str(c);
            } else {
                s.push_str(c);
                if i + 1 < cells.len() {
                    s.push_str(&" ".repeat(pad));
                }
            }
        }
        // An empty last column leaves no trailing blanks.
        let mut s = s.trim_end().to_string();
        s.push('\n');
        s
    };
    let mut out = line(head.to_vec());
    for r in rows {
        out.push_str(&line(r.iter().map(String::as_str).collect()));
    }
    out
}

/// `benchlab history list`: a line per run, oldest first.
pub fn list_text(runs: &[RunRow], phases: &[(i64, PhaseRecord)]) -> String {
    if runs.is_empty() {
        return "no run recorded\n".into();
    }
    let mut by_run: BTreeMap<i64, Vec<&PhaseRecord>> = BTreeMap::new();
    for (id, p) in phases {
        by_run.entry(*id).or_default().push(p);
    }
    let rows: Vec<Vec<String>> = runs
        .iter()
        .map(|r| {
            let ps = by_run.get(&r.id).map(Vec::as_slice).unwrap_or(&[]);
            // The run's best phase by its lead figure.
            let peak = ps
                .iter()
                .filter_map(|p| lead(&r.kind, p.peak_rps, p.peak_mbit))
                .fold(None, |a: Option<f64>, v| Some(a.map_or(v, |a| a.max(v))));
            vec![
                format!("#{}", r.id),
                utc_minute(r.started_unix),
                r.suite.clone(),
                r.server.clone(),
                r.server_config.clone(),
                ps.len().to_string(),
                format!("{} {}", rate_text(&r.kind, peak), unit(&r.kind)),
                thousands(ps.iter().map(|p| p.requests).sum()),
                thousands(ps.iter().map(|p| p.errors).sum()),
                if r.partial { "partial" } else { "complete" }.into(),
            ]
        })
        .collect();
    let mut out = table(
        &[
            "RUN",
            "STARTED (UTC)",
            "SUITE",
            "SERVER",
            "CONFIG",
            "PHASES",
            "PEAK",
            "REQUESTS",
            "ERRORS",
            "STATE",
        ],
        &[true, false, false, false, false, true, true, true, true, false],
        &rows,
    );
    let _ = writeln!(out, "{}", plural(runs.len() as u64, "run", "runs"));
    out
}

/// `benchlab history show ID`: what was recorded of one run.
pub fn show_text(r: &RunRow, phases: &[PhaseRecord], mixes: &[MixRecord]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "run #{}: suite `{}` ({} suite), started {} UTC, recorded {} UTC{}",
        r.id,
        r.suite,
        r.kind,
        utc_minute(r.started_unix),
        utc_minute(r.recorded_unix),
        if r.partial {
            ", partial (stopped before its end)"
        } else {
            ""
        }
    );
    let _ = writeln!(out, "server: {} (configuration {})", r.server, r.server_config);
    let or_dash = |s: &str| if s.is_empty() { "-".to_string() } else { s.to_string() };
    let _ = writeln!(out, "target: {}", or_dash(&r.target));
    let _ = writeln!(
        out,
        "host: {}, benchlab {}",
        or_dash(&r.host),
        or_dash(&r.benchlab_version)
    );
    let _ = writeln!(out, "from: {}", r.source);
    out.push('\n');
    let prow: Vec<Vec<String>> = phases
        .iter()
        .map(|p| {
            vec![
                p.phase.clone(),
                p.mixes.to_string(),
                thousands(p.requests),
                thousands(p.errors),
                p.peak_mix.map_or("-".into(), |m| m.to_string()),
                rate_text(&r.kind, lead(&r.kind, p.peak_rps, p.peak_mbit)),
                us_text(p.p99_at_peak_us),
                p.useful_peak_mix.map_or("-".into(), |m| m.to_string()),
                rate_text(&r.kind, lead(&r.kind, p.useful_peak_rps, p.useful_peak_mbit)),
            ]
        })
        .collect();
    let peak = format!("PEAK {}", unit(&r.kind));
    let useful = format!("USEFUL PEAK {}", unit(&r.kind));
    out.push_str(&table(
        &[
            "PHASE",
            "MIXES",
            "REQUESTS",
            "ERRORS",
            "PEAK MIX",
            &peak,
            "P99 AT PEAK",
            "USEFUL MIX",
            &useful,
        ],
        &[false, true, true, true, true, true, true, true, true],
        &prow,
    ));
    out.push('\n');
    let mrow: Vec<Vec<String>> = mixes
        .iter()
        .map(|m| {
            vec![
                m.mix.to_string(),
                m.phase.clone(),
                thousands(m.threads),
                thousands(m.clients),
                thousands(m.requests),
                thousands(m.errors),
                requests_per_sec(m.requests_per_sec),
                mbit_per_sec(m.mbit_per_sec),
                us_text(Some(m.p99_us)),
                if m.partial { "partial" } else { "" }.into(),
            ]
        })
        .collect();
    out.push_str(&table(
        &[
            "MIX",
            "PHASE",
            "THREADS",
            "CLIENTS",
            "REQUESTS",
            "ERRORS",
            "REQUESTS/S",
            "MBIT/S",
            "P99",
            "",
        ],
        &[true, false, true, true, true, true, true, true, true, false],
        &mrow,
    ));
    out.push_str("(benchlab history show ID --json prints the run's whole results.json)\n");
    out
}

/// One series of a trend: a server version and configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Group<'a> {
    pub server: &'a str,
    pub config: &'a str,
    pub runs: Vec<&'a RunRow>,
}

/// The runs grouped by server version and configuration, each group in
/// the order of its first run, its runs oldest first.
pub fn groups(runs: &[RunRow]) -> Vec<Group<'_>> {
    let mut out: Vec<Group> = Vec::new();
    for r in runs {
        match out
            .iter_mut()
            .find(|g| g.server == r.server && g.config == r.server_config)
        {
            Some(g) => g.runs.push(r),
            None => out.push(Group {
                server: &r.server,
                config: &r.server_config,
                runs: vec![r],
            }),
        }
    }
    out
}

/// The phase names of the runs, in the order first seen.
fn phase_names(phases: &[(i64, PhaseRecord)]) -> Vec<&str> {
    let mut names: Vec<&str> = Vec::new();
    for (_, p) in phases {
        if !names.contains(&p.phase.as_str()) {
            names.push(&p.phase);
        }
    }
    names
}

/// One row of a trend: a run's figures in one phase.
struct Row<'a> {
    run: &'a RunRow,
    phase: &'a PhaseRecord,
    peak: Option<f64>,
    useful: Option<f64>,
}

fn rows_of<'a>(g: &Group<'a>, phase: &str, by_run: &BTreeMap<i64, Vec<&'a PhaseRecord>>) -> Vec<Row<'a>> {
    g.runs
        .iter()
        .filter_map(|r| {
            let p = by_run.get(&r.id)?.iter().find(|p| p.phase == phase)?;
            Some(Row {
                run: r,
                phase: p,
                peak: lead(&r.kind, p.peak_rps, p.peak_mbit),
                useful: lead(&r.kind, p.useful_peak_rps, p.useful_peak_mbit),
            })
        })
        .collect()
}

/// `benchlab history trend SUITE`.
pub fn trend_text(suite: &str, runs: &[RunRow], phases: &[(i64, PhaseRecord)]) -> String {
    let mut out = String::new();
    let gs = groups(runs);
    let _ = writeln!(
        out,
        "trend of suite `{suite}`: {}, {} (server version and configuration), oldest first",
        plural(runs.len() as u64, "run", "runs"),
        plural(gs.len() as u64, "series", "series")
    );
    let mut by_run: BTreeMap<i64, Vec<&PhaseRecord>> = BTreeMap::new();
    for (id, p) in phases {
        by_run.entry(*id).or_default().push(p);
    }
    let names = phase_names(phases);
    for g in &gs {
        let kind = g.runs.first().map_or("web", |r| r.kind.as_str());
        let _ = writeln!(
            out,
            "\nserver {}, configuration {}: {}",
            g.server,
            g.config,
            plural(g.runs.len() as u64, "run", "runs")
        );
        for phase in &names {
            let rows = rows_of(g, phase, &by_run);
            if rows.is_empty() {
                continue;
            }
            let mut prev: Option<f64> = None;
            let mut table_rows = Vec::new();
            for r in &rows {
                let c = if r.run.partial {
                    None
                } else {
                    prev.zip(r.peak).and_then(|(b, c)| change(b, c))
                };
                if !r.run.partial && r.peak.is_some() {
                    prev = r.peak;
                }
                table_rows.push(vec![
                    format!("#{}", r.run.id),
                    utc_minute(r.run.started_unix),
                    rate_text(kind, r.peak),
                    change_text(c),
                    us_text(r.phase.p99_at_peak_us),
                    rate_text(kind, r.useful),
                    thousands(r.phase.errors),
                    if r.run.partial { "partial" } else { "" }.into(),
                ]);
            }
            let _ = writeln!(out, "phase {phase}:");
            let peak = format!("PEAK {}", unit(kind));
            let useful = format!("USEFUL PEAK {}", unit(kind));
            let t = table(
                &[
                    "RUN",
                    "STARTED (UTC)",
                    &peak,
                    "CHANGE",
                    "P99 AT PEAK",
                    &useful,
                    "ERRORS",
                    "",
                ],
                &[true, false, true, true, true, true, true, false],
                &table_rows,
            );
            for l in t.lines() {
                let _ = writeln!(out, "  {}", l.trim_end());
            }
            let whole: Vec<f64> = rows.iter().filter(|r| !r.run.partial).filter_map(|r| r.peak).collect();
            // One complete run has no spread to state.
            if let Some(range) = benchlab_results::Range::of(&whole).filter(|_| whole.len() >= 2) {
                let latest = match latest_against_before(&whole) {
                    Some(c) => format!(
                        "; the latest is {} against the median of the {} before it",
                        change_text(Some(c)),
                        plural(whole.len() as u64 - 1, "run", "runs")
                    ),
                    None => String::new(),
                };
                let _ = writeln!(
                    out,
                    "  peak over {}: lowest {}, median {}, highest {} {}{latest}",
                    plural(whole.len() as u64, "complete run", "complete runs"),
                    rate_text(kind, Some(range.min)),
                    rate_text(kind, Some(range.median)),
                    rate_text(kind, Some(range.max)),
                    unit(kind)
                );
            }
        }
    }
    out
}

/// `benchlab history trend SUITE --html FILE`: a chart per phase and
/// figure (peak, p99 at the peak, useful peak, errors) against the runs in
/// time order, a series per server version and configuration, and the
/// table.
pub fn trend_html(suite: &str, runs: &[RunRow], phases: &[(i64, PhaseRecord)]) -> String {
    let mut by_run: BTreeMap<i64, Vec<&PhaseRecord>> = BTreeMap::new();
    for (id, p) in phases {
        by_run.entry(*id).or_default().push(p);
    }
    // x: the run's place in time order (1 = the oldest).
    let place: BTreeMap<i64, usize> = runs.iter().enumerate().map(|(i, r)| (r.id, i + 1)).collect();
    let ticks: Vec<(f64, String, String)> = runs
        .iter()
        .enumerate()
        .map(|(i, r)| {
            (
                (i + 1) as f64,
                format!("#{}", r.id),
                utc_minute(r.started_unix)[..10].to_string(),
            )
        })
        .collect();
    let gs = groups(runs);
    let kind = runs.first().map_or("web", |r| r.kind.as_str());
    let mut charts = Vec::new();
    for (pi, phase) in phase_names(phases).iter().enumerate() {
        type Pick = fn(&Row) -> Option<(f64, String)>;
        let figures: [(&str, &str, String, bool, Pick); 4] = [
            ("peak", "peak", format!("peak, {}", unit(kind)), false, |r| {
                r.peak.map(|v| (v, v.to_string()))
            }),
            ("p99", "p99_at_peak_us", "p99 at the peak, ms".into(), false, |r| {
                r.phase.p99_at_peak_us.map(|v| (v as f64, v.to_string()))
            }),
            (
                "useful",
                "useful_peak",
                format!("useful peak, {}", unit(kind)),
                false,
                |r| r.useful.map(|v| (v, v.to_string())),
            ),
            ("errors", "errors", "errors".into(), true, |r| {
                Some((r.phase.errors as f64, r.phase.errors.to_string()))
            }),
        ];
        for (fi, (id, key, y_label, integer, pick)) in figures.iter().enumerate() {
            let series = gs
                .iter()
                .map(|g| TrendSeries {
                    name: format!("{} ({})", g.server, g.config),
                    chart_key: key.to_string(),
                    points: rows_of(g, phase, &by_run)
                        .iter()
                        .filter_map(|r| {
                            let (y, data) = pick(r)?;
                            let x = *place.get(&r.run.id)?;
                            Some(TrendPoint {
                                x: x as f64,
                                y,
                                data_x: r.run.id.to_string(),
                                data_y: data,
                                tip: format!(
                                    "run #{} ({} UTC{}): {}",
                                    r.run.id,
                                    utc_minute(r.run.started_unix),
                                    if r.run.partial { ", partial" } else { "" },
                                    match *id {
                                        "p99" => us_text(Some(y as u64)),
                                        "errors" => thousands(y as u64),
                                        _ => format!("{} {}", rate_text(kind, Some(y)), unit(kind)),
                                    }
                                ),
                                hollow: r.run.partial,
                            })
                        })
                        .collect(),
                })
                .collect();
            charts.push(TrendChart {
                id: format!("trend-{pi}-{fi}"),
                title: format!("phase {phase}: {}", y_label.split(',').next().unwrap_or(y_label)),
                y_label: y_label.clone(),
                y_div: if *id == "p99" { 1000.0 } else { 1.0 },
                integer_y: *integer,
                series,
            });
        }
    }
    let lines = vec![
        format!(
            "{} of suite `{suite}`, oldest first; a series per server version and configuration (from the \
             disclosure). Hollow points are partial runs.",
            plural(runs.len() as u64, "run", "runs")
        ),
        "Peak: the mix with the most requests/s (Mbit/s for a file suite); useful peak: the highest mix with \
         p99 within 1 s, errors within 1 % and clients served equally (benchlab report's defaults)."
            .to_string(),
    ];
    let text = trend_text(suite, runs, phases);
    benchlab_report::trend::page(&format!("benchlab trend: {suite}"), &lines, ticks, &charts, &text)
}
