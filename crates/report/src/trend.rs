//! The page of `benchlab history trend SUITE --html FILE`: the history's
//! figures over runs drawn with the report's own charts ([`crate::chart`])
//! and style, so a trend reads like a report. The history crate gives the
//! points; nothing here reads a database.

use crate::chart::{Chart, Point, Series, XTicks};
use maud::{html, PreEscaped, DOCTYPE};

/// One point: a run's figure.
#[derive(Debug, Clone)]
pub struct TrendPoint {
    /// The run's place in time order (1 = the oldest).
    pub x: f64,
    pub y: f64,
    /// `data-x`: the run's id; `data-y`: the value as recorded.
    pub data_x: String,
    pub data_y: String,
    pub tip: String,
    /// A partial run, drawn hollow.
    pub hollow: bool,
}

/// The runs of one server version and configuration.
#[derive(Debug, Clone)]
pub struct TrendSeries {
    pub name: String,
    /// `data-chart` of its points: the figure plotted.
    pub chart_key: String,
    pub points: Vec<TrendPoint>,
}

/// One chart: a figure of one phase over the runs.
#[derive(Debug, Clone)]
pub struct TrendChart {
    pub id: String,
    pub title: String,
    pub y_label: String,
    /// Plotted y = value ÷ this (µs shown in ms).
    pub y_div: f64,
    pub integer_y: bool,
    pub series: Vec<TrendSeries>,
}

/// The whole page: `lines` of explanation, the charts (x ticked at each
/// run: `ticks` of (x, `#id`, date)), and the terminal's trend table as
/// `table_text`.
pub fn page(
    title: &str,
    lines: &[String],
    ticks: Vec<(f64, String, String)>,
    charts: &[TrendChart],
    table_text: &str,
) -> String {
    let rendered: Vec<Chart> = charts
        .iter()
        .map(|c| {
            let mut ch = Chart::new(
                c.id.clone(),
                c.title.clone(),
                "run (oldest first)".into(),
                &c.y_label,
                XTicks::At(ticks.clone()),
            );
            ch.y_div = c.y_div;
            ch.integer_y = c.integer_y;
            ch.series = c
                .series
                .iter()
                .enumerate()
                .map(|(i, s)| Series {
                    name: s.name.clone(),
                    chart_key: s.chart_key.clone(),
                    run: s.name.clone(),
                    colour: i,
                    dash: "",
                    points: s
                        .points
                        .iter()
                        .map(|p| Point {
                            x: p.x,
                            y: p.y,
                            data_x: p.data_x.clone(),
                            data_y: p.data_y.clone(),
                            mix: None,
                            class: None,
                            tip: p.tip.clone(),
                            hollow: p.hollow,
                        })
                        .collect(),
                    in_legend: true,
                    radius: 3.5,
                })
                .collect();
            ch
        })
        .collect();
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                link rel="icon" href="data:,";
                title { (title) }
                style { (PreEscaped(crate::html::STYLE)) }
            }
            body {
                main {
                    h1 { (title) }
                    @for l in lines { p { (l) } }
                    div.charts { @for c in &rendered { (c.render()) } }
                    h2 { "Runs" }
                    pre { (table_text) }
                }
                div #tip {}
                script { (PreEscaped(crate::html::SCRIPT)) }
            }
        }
    }
    .into_string()
}
