//! Line charts as inline SVG, written from Rust so the page needs no chart
//! library and no network. Every plotted point is a `<circle>` carrying the
//! value exactly as `results.json` has it (`data-chart`, `data-run`,
//! `data-x`, `data-y`), so a browser test can read each point back and a
//! reader's tooltip shows the real number, not a pixel position.

use benchlab_format::group;
use std::fmt::Write as _;

/// Okabe–Ito, a palette told apart with the common colour-vision
/// deficiencies; yellow last because it is faint on white.
pub const PALETTE: [&str; 8] = [
    "#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#000000", "#F0E442",
];

/// The colour of run `i`.
pub fn colour(i: usize) -> &'static str {
    PALETTE[i % PALETTE.len()]
}

/// Dash patterns telling apart several series of one run (percentiles,
/// classes); colour stays the run's.
pub const DASHES: [&str; 5] = ["", "7 4", "2 3", "10 3 2 3", "4 2"];

/// One plotted point: its position in chart units and its exact data.
#[derive(Debug, Clone)]
pub struct Point {
    pub x: f64,
    pub y: f64,
    /// `data-x` / `data-y`: the values as results.json has them.
    pub data_x: String,
    pub data_y: String,
    /// More `data-*` attributes (name without the prefix, value).
    pub extra: Vec<(&'static str, String)>,
    pub tip: String,
    /// Drawn hollow (e.g. a ramp second outside the measurement window).
    pub hollow: bool,
}

#[derive(Debug, Clone)]
pub struct Series {
    /// Legend text.
    pub name: String,
    /// `data-chart` of its points: the results.json field plotted.
    pub chart_key: String,
    /// `data-run`.
    pub run: String,
    pub colour: usize,
    pub dash: &'static str,
    pub points: Vec<Point>,
    /// Shown in the legend (several series of one run may share an entry).
    pub in_legend: bool,
    pub radius: f64,
}

/// A labelled vertical marker (a mix boundary, a limit).
#[derive(Debug, Clone)]
pub struct VLine {
    pub x: f64,
    pub label: String,
}

/// How the x axis is ticked.
#[derive(Debug, Clone)]
pub enum XTicks {
    /// Ticks at these values with a first and an optional second line of
    /// label (threads, then clients).
    At(Vec<(f64, String, String)>),
    /// Evenly spaced "nice" ticks.
    Nice,
}

#[derive(Debug, Clone)]
pub struct Chart {
    pub id: String,
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    /// Plotted y = value ÷ this (bytes/s shown in MB/s, µs shown in ms).
    pub y_div: f64,
    pub y_log: bool,
    pub x_ticks: XTicks,
    pub series: Vec<Series>,
    pub vlines: Vec<VLine>,
    /// A horizontal limit line (in plotted units) with its label.
    pub hline: Option<(f64, String)>,
    /// Counts: y ticks are whole numbers.
    pub integer_y: bool,
}

const W: f64 = 630.0;
const PLOT_H: f64 = 290.0;
const LEFT: f64 = 84.0;
const RIGHT: f64 = 24.0;
const TOP: f64 = 40.0;
const AXIS_BELOW: f64 = 64.0;
const LEGEND_ROW: f64 = 20.0;

/// Escapes text for HTML and SVG (element content and quoted attributes).
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            _ => o.push(c),
        }
    }
    o
}

fn nice_step(raw: f64) -> f64 {
    if raw <= 0.0 || !raw.is_finite() {
        return 1.0;
    }
    let e = 10f64.powf(raw.log10().floor());
    let f = raw / e;
    let n = if f <= 1.0 {
        1.0
    } else if f <= 2.0 {
        2.0
    } else if f <= 2.5 {
        2.5
    } else if f <= 5.0 {
        5.0
    } else {
        10.0
    };
    n * e
}

/// Formats an axis tick: grouped thousands, at most three decimals, no
/// trailing zeros.
pub fn tick_label(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    let s = if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    };
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    };
    group(&s)
}

struct Scale {
    lo: f64,
    hi: f64,
    log: bool,
    px_lo: f64,
    px_hi: f64,
}

impl Scale {
    fn px(&self, v: f64) -> f64 {
        let (a, b, v) = if self.log {
            (self.lo.log10(), self.hi.log10(), v.max(self.lo).log10())
        } else {
            (self.lo, self.hi, v)
        };
        let t = if b > a { (v - a) / (b - a) } else { 0.0 };
        self.px_lo + t * (self.px_hi - self.px_lo)
    }
}

fn plotted(c: &Chart) -> impl Iterator<Item = &Point> {
    c.series.iter().flat_map(|s| s.points.iter())
}

fn f(v: f64) -> String {
    format!("{v:.1}")
}

impl Chart {
    /// Writes the chart as one `<figure>` holding an `<svg>`.
    pub fn render(&self) -> String {
        let legend: Vec<&Series> = self.series.iter().filter(|s| s.in_legend).collect();
        // Legend layout: entries left to right, wrapping.
        let mut rows: Vec<Vec<(f64, &Series)>> = vec![Vec::new()];
        let mut x = LEFT;
        for s in &legend {
            let w = 40.0 + 7.0 * s.name.chars().count() as f64 + 18.0;
            if x + w > W - RIGHT && x > LEFT {
                rows.push(Vec::new());
                x = LEFT;
            }
            if let Some(r) = rows.last_mut() {
                r.push((x, s));
            }
            x += w;
        }
        let legend_h = if legend.is_empty() {
            0.0
        } else {
            rows.len() as f64 * LEGEND_ROW + 8.0
        };
        let h = TOP + PLOT_H + AXIS_BELOW + legend_h;
        let (x0, x1, y0, y1) = (LEFT, W - RIGHT, TOP + PLOT_H, TOP);

        // Ranges.
        let xs: Vec<f64> = plotted(self).map(|p| p.x).collect();
        let x_max_data = xs.iter().copied().fold(0.0, f64::max);
        let x_max_ticks = match &self.x_ticks {
            XTicks::At(t) => t.iter().map(|t| t.0).fold(0.0, f64::max),
            XTicks::Nice => 0.0,
        };
        let x_hi_raw = x_max_data
            .max(x_max_ticks)
            .max(self.vlines.iter().map(|v| v.x).fold(0.0, f64::max));
        let x_hi = if x_hi_raw <= 0.0 { 1.0 } else { x_hi_raw * 1.04 };
        let xs_scale = Scale {
            lo: 0.0,
            hi: x_hi,
            log: false,
            px_lo: x0,
            px_hi: x1,
        };
        let ys: Vec<f64> = plotted(self)
            .map(|p| p.y / self.y_div)
            .filter(|v| v.is_finite() && (!self.y_log || *v > 0.0))
            .collect();
        let mut y_max = ys.iter().copied().fold(0.0, f64::max);
        if let Some((l, _)) = &self.hline {
            if !self.y_log || *l > 0.0 {
                y_max = y_max.max(*l);
            }
        }
        let (y_lo, y_hi, y_ticks): (f64, f64, Vec<f64>) = if self.y_log {
            let y_min = ys.iter().copied().fold(f64::INFINITY, f64::min);
            let (lo_e, hi_e) = if ys.is_empty() {
                (0.0, 1.0)
            } else {
                let lo = y_min.log10().floor();
                let hi = y_max.log10().ceil().max(lo + 1.0);
                (lo, hi)
            };
            let mut ticks = Vec::new();
            let decades = (hi_e - lo_e) as i32;
            for e in (lo_e as i32)..=(hi_e as i32) {
                let base = 10f64.powi(e);
                ticks.push(base);
                if decades <= 3 && e < hi_e as i32 {
                    ticks.push(2.0 * base);
                    ticks.push(5.0 * base);
                }
            }
            (10f64.powf(lo_e), 10f64.powf(hi_e), ticks)
        } else {
            let mut step = nice_step(if y_max > 0.0 { y_max / 5.0 } else { 0.2 });
            if self.integer_y {
                step = step.max(1.0).round();
            }
            let hi = ((y_max / step).ceil() * step).max(step);
            let n = (hi / step).round() as usize;
            (0.0, hi, (0..=n).map(|i| i as f64 * step).collect())
        };
        let ys_scale = Scale {
            lo: y_lo,
            hi: y_hi,
            log: self.y_log,
            px_lo: y0,
            px_hi: y1,
        };

        let mut o = String::new();
        let _ = write!(
            o,
            r#"<figure class="chart" id="{id}"><svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img" aria-label="{title}">"#,
            id = esc(&self.id),
            w = W,
            h = f(h),
            title = esc(&self.title)
        );
        let _ = write!(
            o,
            r#"<text x="{}" y="22" class="ctitle">{}</text>"#,
            f(LEFT),
            esc(&self.title)
        );
        // Grid and y ticks.
        for t in &y_ticks {
            let py = ys_scale.px(*t);
            let _ = write!(
                o,
                r##"<line x1="{}" y1="{py}" x2="{}" y2="{py}" stroke="#e3e3e3"/><text x="{}" y="{}" text-anchor="end" class="tick">{}</text>"##,
                f(x0),
                f(x1),
                f(x0 - 6.0),
                f(py + 4.0),
                tick_label(*t),
                py = f(py)
            );
        }
        // X ticks.
        let x_ticks: Vec<(f64, String, String)> = match &self.x_ticks {
            XTicks::At(t) => {
                let mut kept: Vec<(f64, String, String)> = Vec::new();
                let mut last_px = f64::NEG_INFINITY;
                for (v, a, b) in t {
                    let px = xs_scale.px(*v);
                    let wide = 7.0 * a.chars().count().max(b.chars().count()) as f64 + 6.0;
                    if px - last_px >= wide.max(22.0) {
                        kept.push((*v, a.clone(), b.clone()));
                        last_px = px;
                    }
                }
                kept
            }
            XTicks::Nice => {
                let step = nice_step(x_hi / 8.0);
                let n = (x_hi / step).floor() as usize;
                (0..=n)
                    .map(|i| (i as f64 * step, tick_label(i as f64 * step), String::new()))
                    .collect()
            }
        };
        for (v, a, b) in &x_ticks {
            let px = f(xs_scale.px(*v));
            let _ = write!(
                o,
                r##"<line x1="{px}" y1="{}" x2="{px}" y2="{}" stroke="#555"/><text x="{px}" y="{}" text-anchor="middle" class="tick">{}</text>"##,
                f(y0),
                f(y0 + 5.0),
                f(y0 + 18.0),
                esc(a)
            );
            if !b.is_empty() {
                let _ = write!(
                    o,
                    r#"<text x="{px}" y="{}" text-anchor="middle" class="tick2">{}</text>"#,
                    f(y0 + 31.0),
                    esc(b)
                );
            }
        }
        // Axes and their labels.
        let _ = write!(
            o,
            r##"<line x1="{x0}" y1="{y0}" x2="{x1}" y2="{y0}" stroke="#333"/><line x1="{x0}" y1="{y0}" x2="{x0}" y2="{y1}" stroke="#333"/>"##,
            x0 = f(x0),
            x1 = f(x1),
            y0 = f(y0),
            y1 = f(y1)
        );
        let _ = write!(
            o,
            r#"<text x="{}" y="{}" text-anchor="middle" class="alabel">{}</text>"#,
            f((x0 + x1) / 2.0),
            f(y0 + 50.0),
            esc(&self.x_label)
        );
        let _ = write!(
            o,
            r#"<text transform="translate(16,{}) rotate(-90)" text-anchor="middle" class="alabel">{}</text>"#,
            f((y0 + y1) / 2.0),
            esc(&self.y_label)
        );
        // Markers.
        for v in &self.vlines {
            let px = f(xs_scale.px(v.x));
            let _ = write!(
                o,
                r##"<line x1="{px}" y1="{}" x2="{px}" y2="{}" stroke="#999" stroke-dasharray="3 3"/><text x="{}" y="{}" class="vlabel">{}</text>"##,
                f(y0),
                f(y1),
                f(xs_scale.px(v.x) + 3.0),
                f(y1 + 10.0),
                esc(&v.label)
            );
        }
        if let Some((l, label)) = &self.hline {
            if !self.y_log || *l > 0.0 {
                let py = f(ys_scale.px(*l));
                let _ = write!(
                    o,
                    r##"<line x1="{}" y1="{py}" x2="{}" y2="{py}" stroke="#c00" stroke-dasharray="6 3"/><text x="{}" y="{}" text-anchor="end" class="vlabel" fill="#c00">{}</text>"##,
                    f(x0),
                    f(x1),
                    f(x1 - 2.0),
                    f(ys_scale.px(*l) - 4.0),
                    esc(label)
                );
            }
        }
        // Series: lines first, then points on top.
        for s in &self.series {
            let pts: Vec<String> = s
                .points
                .iter()
                .filter(|p| !self.y_log || p.y / self.y_div > 0.0)
                .map(|p| format!("{},{}", f(xs_scale.px(p.x)), f(ys_scale.px(p.y / self.y_div))))
                .collect();
            if pts.len() > 1 {
                let dash = if s.dash.is_empty() {
                    String::new()
                } else {
                    format!(r#" stroke-dasharray="{}""#, s.dash)
                };
                let _ = write!(
                    o,
                    r#"<polyline fill="none" stroke="{}" stroke-width="2"{dash} points="{}"/>"#,
                    colour(s.colour),
                    pts.join(" ")
                );
            }
        }
        for s in &self.series {
            for p in &s.points {
                if self.y_log && p.y / self.y_div <= 0.0 {
                    continue;
                }
                let fill = if p.hollow { "#fff" } else { colour(s.colour) };
                let _ = write!(
                    o,
                    r#"<circle cx="{}" cy="{}" r="{}" fill="{fill}" stroke="{}" data-chart="{}" data-run="{}" data-x="{}" data-y="{}""#,
                    f(xs_scale.px(p.x)),
                    f(ys_scale.px(p.y / self.y_div)),
                    s.radius,
                    colour(s.colour),
                    esc(&s.chart_key),
                    esc(&s.run),
                    esc(&p.data_x),
                    esc(&p.data_y)
                );
                for (k, v) in &p.extra {
                    let _ = write!(o, r#" data-{k}="{}""#, esc(v));
                }
                let _ = write!(o, r#" data-tip="{}"/>"#, esc(&p.tip));
            }
        }
        // Legend.
        for (ri, row) in rows.iter().enumerate() {
            let ly = TOP + PLOT_H + AXIS_BELOW + 6.0 + ri as f64 * LEGEND_ROW;
            for (lx, s) in row {
                let dash = if s.dash.is_empty() {
                    String::new()
                } else {
                    format!(r#" stroke-dasharray="{}""#, s.dash)
                };
                let _ = write!(
                    o,
                    r#"<g class="legend"><line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{c}" stroke-width="2.5"{dash}/><rect x="{}" y="{}" width="7" height="7" fill="{c}"/><text x="{}" y="{}" class="ltext">{}</text></g>"#,
                    f(*lx),
                    f(ly + 6.0),
                    f(lx + 30.0),
                    f(ly + 6.0),
                    f(lx + 11.5),
                    f(ly + 2.5),
                    f(lx + 36.0),
                    f(ly + 10.5),
                    esc(&s.name),
                    c = colour(s.colour)
                );
            }
        }
        o.push_str("</svg></figure>");
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tick_labels() {
        assert_eq!(tick_label(20000.0), "20,000");
        assert_eq!(tick_label(2.5), "2.5");
        assert_eq!(tick_label(0.05), "0.05");
    }

    #[test]
    fn nice_steps() {
        assert_eq!(nice_step(3900.0), 5000.0);
        assert_eq!(nice_step(1.0), 1.0);
        assert_eq!(nice_step(0.3), 0.5);
    }
}
