//! Line charts as inline SVG, written from Rust so the page needs no chart
//! library and no network. Every plotted point is a `<circle>` carrying the
//! value exactly as `results.json` has it (`data-chart`, `data-run`,
//! `data-x`, `data-y`), so a browser test can read each point back and a
//! reader's tooltip shows the real number, not a pixel position.
//!
//! [`Chart::render`] works in four steps: [`Frame::of`] picks the scales
//! and lays out ticks and legend, then the axes, the series and the legend
//! are written, each by its own function.

use benchlab_format::group;
use maud::{html, Markup};

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
    /// `data-mix`: the mix the value belongs to.
    pub mix: Option<usize>,
    /// `data-class`: the URL class of a per-class value.
    pub class: Option<String>,
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

/// A labelled horizontal line in plotted units: a limit or a threshold.
#[derive(Debug, Clone)]
pub struct HLine {
    pub y: f64,
    pub label: String,
    /// CSS colour of line and label.
    pub colour: &'static str,
    /// `data-line`: what the line is (`latency-limit`, `collapse`), so a
    /// test finds it.
    pub kind: &'static str,
    /// `data-run` of a line that belongs to one run (a run's collapse
    /// threshold), empty otherwise.
    pub run: String,
    /// `data-y`: the value in results.json's unit.
    pub data_y: String,
}

/// A ring around one plotted point with a label: the peak of a run.
#[derive(Debug, Clone)]
pub struct Mark {
    /// Chart units, as the point's `x` and `y` (y before `y_div`).
    pub x: f64,
    pub y: f64,
    pub colour: usize,
    pub label: String,
    /// `data-run`, `data-mix` of the marked point.
    pub run: String,
    pub mix: usize,
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
    /// A logarithmic x axis (loads that double from mix to mix); used only
    /// when every x is positive.
    pub x_log: bool,
    pub x_ticks: XTicks,
    pub series: Vec<Series>,
    pub vlines: Vec<VLine>,
    pub hlines: Vec<HLine>,
    pub marks: Vec<Mark>,
    /// Counts: y ticks are whole numbers.
    pub integer_y: bool,
}

impl Chart {
    /// An empty chart with linear axes; callers fill in the series and
    /// markers.
    pub fn new(id: String, title: String, x_label: String, y_label: &str, x_ticks: XTicks) -> Chart {
        Chart {
            id,
            title,
            x_label,
            y_label: y_label.to_string(),
            y_div: 1.0,
            y_log: false,
            x_log: false,
            x_ticks,
            series: Vec::new(),
            vlines: Vec::new(),
            hlines: Vec::new(),
            marks: Vec::new(),
            integer_y: false,
        }
    }
}

const W: f64 = 630.0;
const PLOT_H: f64 = 290.0;
const LEFT: f64 = 84.0;
const RIGHT: f64 = 24.0;
const TOP: f64 = 40.0;
const AXIS_BELOW: f64 = 64.0;
/// Extra room below the axis per further level of staggered x labels.
const TICK_LEVEL: f64 = 28.0;
const LEGEND_ROW: f64 = 20.0;
/// Levels of x labels (and of vertical marker labels) before one is left
/// out.
const MAX_LEVELS: usize = 4;

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

fn f(v: f64) -> String {
    format!("{v:.1}")
}

/// Width in pixels of a label at the tick font (about 7 px a character).
fn text_width(s: &str, px_per_char: f64) -> f64 {
    px_per_char * s.chars().count() as f64
}

/// Greedy levels for labels centred or starting at `px` with widths `w`:
/// each goes on the first level where it clears the previous label of that
/// level; `None` when none of `MAX_LEVELS` has room.
fn stagger(items: &[(f64, f64)], gap: f64) -> Vec<Option<usize>> {
    let mut ends = [f64::NEG_INFINITY; MAX_LEVELS];
    items
        .iter()
        .map(|(start, width)| {
            let level = (0..MAX_LEVELS).find(|l| *start >= ends[*l] + gap)?;
            ends[level] = start + width;
            Some(level)
        })
        .collect()
}

/// One x tick as drawn: value, label lines and the level it sits on.
struct XTick {
    v: f64,
    a: String,
    b: String,
    level: usize,
}

/// Everything laid out before drawing: scales, ticks, legend rows, height.
struct Frame<'a> {
    xs: Scale,
    ys: Scale,
    y_ticks: Vec<f64>,
    x_ticks: Vec<XTick>,
    /// Room below the plot for the x labels (grows with staggered levels).
    axis_below: f64,
    legend: Vec<Vec<(f64, &'a Series)>>,
    h: f64,
}

impl<'a> Frame<'a> {
    fn of(c: &'a Chart) -> Frame<'a> {
        let (x0, x1, y0, y1) = (LEFT, W - RIGHT, TOP + PLOT_H, TOP);
        let xs = x_scale(c, x0, x1);
        let (ys, y_ticks) = y_scale(c, y0, y1);
        let x_ticks = x_ticks(c, &xs);
        let levels = x_ticks.iter().map(|t| t.level + 1).max().unwrap_or(1);
        let axis_below = AXIS_BELOW + TICK_LEVEL * (levels - 1) as f64;
        let legend = legend_rows(c);
        let legend_h = if legend.iter().all(Vec::is_empty) {
            0.0
        } else {
            legend.len() as f64 * LEGEND_ROW + 8.0
        };
        Frame {
            xs,
            ys,
            y_ticks,
            x_ticks,
            axis_below,
            legend,
            h: TOP + PLOT_H + axis_below + legend_h,
        }
    }
}

fn plotted(c: &Chart) -> impl Iterator<Item = &Point> {
    c.series.iter().flat_map(|s| s.points.iter())
}

/// The x scale: from 0 (linear) or just below the smallest load (log) to a
/// little past the largest value of points, ticks and markers.
fn x_scale(c: &Chart, px_lo: f64, px_hi: f64) -> Scale {
    let tick_xs: Vec<f64> = match &c.x_ticks {
        XTicks::At(t) => t.iter().map(|t| t.0).collect(),
        XTicks::Nice => Vec::new(),
    };
    let all: Vec<f64> = plotted(c)
        .map(|p| p.x)
        .chain(tick_xs)
        .chain(c.vlines.iter().map(|v| v.x))
        .collect();
    let hi_raw = all.iter().copied().fold(0.0, f64::max);
    let lo_raw = all.iter().copied().fold(f64::INFINITY, f64::min);
    if c.x_log && lo_raw > 0.0 && lo_raw.is_finite() {
        // A half step of a doubling either side keeps the end points off
        // the axes.
        return Scale {
            lo: lo_raw / 1.4,
            hi: hi_raw * 1.4,
            log: true,
            px_lo,
            px_hi,
        };
    }
    let hi = if hi_raw <= 0.0 { 1.0 } else { hi_raw * 1.04 };
    Scale {
        lo: 0.0,
        hi,
        log: false,
        px_lo,
        px_hi,
    }
}

/// The y scale and its ticks: decades (with 2 and 5 when few) on a log
/// axis, "nice" steps from 0 on a linear one.
fn y_scale(c: &Chart, px_lo: f64, px_hi: f64) -> (Scale, Vec<f64>) {
    let ys: Vec<f64> = plotted(c)
        .map(|p| p.y / c.y_div)
        .filter(|v| v.is_finite() && (!c.y_log || *v > 0.0))
        .collect();
    let mut y_max = ys.iter().copied().fold(0.0, f64::max);
    for l in &c.hlines {
        if !c.y_log || l.y > 0.0 {
            y_max = y_max.max(l.y);
        }
    }
    let (lo, hi, ticks) = if c.y_log {
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
        if c.integer_y {
            step = step.max(1.0).round();
        }
        let hi = ((y_max / step).ceil() * step).max(step);
        let n = (hi / step).round() as usize;
        (0.0, hi, (0..=n).map(|i| i as f64 * step).collect())
    };
    (
        Scale {
            lo,
            hi,
            log: c.y_log,
            px_lo,
            px_hi,
        },
        ticks,
    )
}

/// Every given x tick keeps its label: labels too close to the previous
/// one move down a level instead of disappearing.
fn x_ticks(c: &Chart, xs: &Scale) -> Vec<XTick> {
    match &c.x_ticks {
        XTicks::At(t) => {
            let items: Vec<(f64, f64)> = t
                .iter()
                .map(|(v, a, b)| {
                    let w = text_width(a, 7.0).max(text_width(b, 6.0)) + 6.0;
                    (xs.px(*v) - w / 2.0, w)
                })
                .collect();
            t.iter()
                .zip(stagger(&items, 4.0))
                .filter_map(|((v, a, b), level)| {
                    Some(XTick {
                        v: *v,
                        a: a.clone(),
                        b: b.clone(),
                        level: level?,
                    })
                })
                .collect()
        }
        XTicks::Nice => {
            let step = nice_step(xs.hi / 8.0);
            let n = (xs.hi / step).floor() as usize;
            (0..=n)
                .map(|i| XTick {
                    v: i as f64 * step,
                    a: tick_label(i as f64 * step),
                    b: String::new(),
                    level: 0,
                })
                .collect()
        }
    }
}

/// Legend entries left to right, wrapping.
fn legend_rows(c: &Chart) -> Vec<Vec<(f64, &Series)>> {
    let mut rows: Vec<Vec<(f64, &Series)>> = vec![Vec::new()];
    let mut x = LEFT;
    for s in c.series.iter().filter(|s| s.in_legend) {
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
    rows
}

/// A series' dash pattern, or none for a solid line.
fn dash(d: &str) -> Option<&str> {
    (!d.is_empty()).then_some(d)
}

impl Chart {
    /// Writes the chart as one `<figure>` holding an `<svg>`.
    pub fn render(&self) -> Markup {
        let fr = Frame::of(self);
        let (w, h) = (W, f(fr.h));
        html! {
            figure.chart id=(self.id) {
                svg xmlns="http://www.w3.org/2000/svg" width=(w) height=(h) viewBox={ "0 0 " (w) " " (h) } role="img" aria-label=(self.title) {
                    text x=(f(LEFT)) y="22" class="ctitle" { (self.title) }
                    (self.axes(&fr))
                    (self.markers(&fr))
                    (self.draw_series(&fr))
                    (self.peak_marks(&fr))
                    (self.legend(&fr))
                }
            }
        }
    }

    /// Grid, ticks and their labels, the axes and the axis titles.
    fn axes(&self, fr: &Frame) -> Markup {
        let (x0, x1, y0, y1) = (LEFT, W - RIGHT, TOP + PLOT_H, TOP);
        html! {
            @for t in &fr.y_ticks {
                @let py = f(fr.ys.px(*t));
                line x1=(f(x0)) y1=(py) x2=(f(x1)) y2=(py) stroke="#e3e3e3" {}
                text x=(f(x0 - 6.0)) y=(f(fr.ys.px(*t) + 4.0)) text-anchor="end" class="tick" { (tick_label(*t)) }
            }
            @for t in &fr.x_ticks {
                @let px = f(fr.xs.px(t.v));
                @let down = t.level as f64 * TICK_LEVEL;
                // A label moved down a level keeps a thin leader to its tick.
                line x1=(px) y1=(f(y0)) x2=(px) y2=(f(y0 + 5.0 + down)) stroke=(if t.level == 0 { "#555" } else { "#bbb" }) {}
                text x=(px) y=(f(y0 + 18.0 + down)) text-anchor="middle" class="tick" { (t.a) }
                @if !t.b.is_empty() {
                    text x=(px) y=(f(y0 + 31.0 + down)) text-anchor="middle" class="tick2" { (t.b) }
                }
            }
            line x1=(f(x0)) y1=(f(y0)) x2=(f(x1)) y2=(f(y0)) stroke="#333" {}
            line x1=(f(x0)) y1=(f(y0)) x2=(f(x0)) y2=(f(y1)) stroke="#333" {}
            text x=(f((x0 + x1) / 2.0)) y=(f(y0 + fr.axis_below - 14.0)) text-anchor="middle" class="alabel" { (self.x_label) }
            text transform={ "translate(16," (f((y0 + y1) / 2.0)) ") rotate(-90)" } text-anchor="middle" class="alabel" { (self.y_label) }
        }
    }

    /// Vertical markers (labels staggered so neighbours never overlap) and
    /// horizontal limit and threshold lines.
    fn markers(&self, fr: &Frame) -> Markup {
        let (x0, x1, y0, y1) = (LEFT, W - RIGHT, TOP + PLOT_H, TOP);
        let items: Vec<(f64, f64)> = self
            .vlines
            .iter()
            .map(|v| (fr.xs.px(v.x) + 3.0, text_width(&v.label, 5.6)))
            .collect();
        let levels = stagger(&items, 4.0);
        html! {
            @for (v, level) in self.vlines.iter().zip(levels) {
                @let px = fr.xs.px(v.x);
                line x1=(f(px)) y1=(f(y0)) x2=(f(px)) y2=(f(y1)) stroke="#999" stroke-dasharray="3 3" {}
                // A label no level has room for is left out; the line and
                // its points' tooltips still tell the mix.
                @if let Some(level) = level {
                    text x=(f(px + 3.0)) y=(f(y1 + 10.0 + 11.0 * level as f64)) class="vlabel" { (v.label) }
                }
            }
            @for (i, l) in self.hlines.iter().enumerate() {
                @if !self.y_log || l.y > 0.0 {
                    @let py = fr.ys.px(l.y);
                    // Several lines' labels alternate above and below their line.
                    @let ty = if i % 2 == 0 { py - 4.0 } else { py + 12.0 };
                    g class="hline" data-line=(l.kind) data-run=[(!l.run.is_empty()).then_some(&l.run)] data-y=(l.data_y) {
                        line x1=(f(x0)) y1=(f(py)) x2=(f(x1)) y2=(f(py)) stroke=(l.colour) stroke-dasharray="6 3" {}
                        text x=(f(x1 - 2.0)) y=(f(ty)) text-anchor="end" class="vlabel" style={ "fill:" (l.colour) } { (l.label) }
                    }
                }
            }
        }
    }

    /// Lines first, then the points on top.
    fn draw_series(&self, fr: &Frame) -> Markup {
        let shown = |p: &Point| !self.y_log || p.y / self.y_div > 0.0;
        let xy = |p: &Point| (f(fr.xs.px(p.x)), f(fr.ys.px(p.y / self.y_div)));
        html! {
            @for s in &self.series {
                @let pts: Vec<String> = s.points.iter().filter(|p| shown(p)).map(|p| { let (x, y) = xy(p); format!("{x},{y}") }).collect();
                @if pts.len() > 1 {
                    polyline fill="none" stroke=(colour(s.colour)) stroke-width="2" stroke-dasharray=[dash(s.dash)] points=(pts.join(" ")) {}
                }
            }
            @for s in &self.series {
                @for p in s.points.iter().filter(|p| shown(p)) {
                    @let (cx, cy) = xy(p);
                    (point(s, p, &cx, &cy))
                }
            }
        }
    }

    /// A ring and a label at each marked point (a run's peak).
    fn peak_marks(&self, fr: &Frame) -> Markup {
        html! {
            @for (i, m) in self.marks.iter().enumerate() {
                @let (px, py) = (fr.xs.px(m.x), fr.ys.px(m.y / self.y_div));
                // Labels of several runs' peaks step down so they do not sit
                // on one another.
                @let ty = (py - 12.0 - 13.0 * i as f64).max(TOP + 10.0);
                @let anchor = if px > (LEFT + W - RIGHT) / 2.0 { "end" } else { "start" };
                @let c = colour(m.colour);
                g class="peak-mark" data-run=(m.run) data-mix=(m.mix) {
                    circle cx=(f(px)) cy=(f(py)) r="8" fill="none" stroke=(c) stroke-width="2" {}
                    text x=(f(px)) y=(f(ty)) text-anchor=(anchor) class="plabel" style={ "fill:" (c) } { (m.label) }
                }
            }
        }
    }

    fn legend(&self, fr: &Frame) -> Markup {
        html! {
            @for (ri, row) in fr.legend.iter().enumerate() {
                @let ly = TOP + PLOT_H + fr.axis_below + 6.0 + ri as f64 * LEGEND_ROW;
                @for (lx, s) in row {
                    @let c = colour(s.colour);
                    g class="legend" {
                        line x1=(f(*lx)) y1=(f(ly + 6.0)) x2=(f(lx + 30.0)) y2=(f(ly + 6.0)) stroke=(c) stroke-width="2.5" stroke-dasharray=[dash(s.dash)] {}
                        rect x=(f(lx + 11.5)) y=(f(ly + 2.5)) width="7" height="7" fill=(c) {}
                        text x=(f(lx + 36.0)) y=(f(ly + 10.5)) class="ltext" { (s.name) }
                    }
                }
            }
        }
    }
}

/// One plotted point: a `<circle>` with the value as results.json has it
/// in `data-x`/`data-y`, its mix and class, and its tooltip.
fn point(s: &Series, p: &Point, cx: &str, cy: &str) -> Markup {
    let c = colour(s.colour);
    html! {
        circle cx=(cx) cy=(cy) r=(s.radius) fill=(if p.hollow { "#fff" } else { c }) stroke=(c)
            data-chart=(s.chart_key) data-run=(s.run) data-x=(p.data_x) data-y=(p.data_y)
            data-mix=[p.mix] data-class=[p.class.as_deref()] data-tip=(p.tip) {}
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

    fn point(x: f64, y: f64) -> Point {
        Point {
            x,
            y,
            data_x: x.to_string(),
            data_y: y.to_string(),
            mix: None,
            class: None,
            tip: String::new(),
            hollow: false,
        }
    }

    fn doubling_chart(x_log: bool) -> (Chart, Vec<u64>) {
        let loads: Vec<u64> = (0..11).map(|i| 1u64 << i).collect();
        let ticks = loads
            .iter()
            .map(|t| (*t as f64, t.to_string(), format!("{} cl", t.div_ceil(4))))
            .collect();
        let mut c = Chart::new("c".into(), "t".into(), "x".into(), "y", XTicks::At(ticks));
        c.x_log = x_log;
        c.series.push(Series {
            name: "a".into(),
            chart_key: "k".into(),
            run: "a".into(),
            colour: 0,
            dash: "",
            points: loads.iter().map(|t| point(*t as f64, 1.0)).collect(),
            in_legend: true,
            radius: 3.0,
        });
        (c, loads)
    }

    /// 11 mixes doubling from 1 to 1,024 threads: on the log axis every
    /// load keeps its label, on one level (the old linear axis lost the 4,
    /// 8, 16 and 32 thread labels).
    #[test]
    fn every_load_of_a_doubling_axis_is_labelled() {
        let (c, loads) = doubling_chart(true);
        let svg = c.render().into_string();
        for t in &loads {
            assert!(
                svg.contains(&format!(r#"class="tick">{t}</text>"#)),
                "no label for {t} threads"
            );
        }
        assert!(
            Frame::of(&c).x_ticks.iter().all(|t| t.level == 0),
            "log axis needs no stagger"
        );
        let (linear, _) = doubling_chart(false);
        assert!(
            Frame::of(&linear).x_ticks.len() < loads.len(),
            "a linear axis cannot fit them: the reason for the log axis"
        );
    }

    #[test]
    fn stagger_moves_overlapping_labels_down() {
        let levels = stagger(&[(0.0, 50.0), (20.0, 50.0), (40.0, 50.0), (100.0, 50.0)], 4.0);
        assert_eq!(levels, vec![Some(0), Some(1), Some(2), Some(0)]);
        let crowded: Vec<(f64, f64)> = (0..6).map(|i| (i as f64, 50.0)).collect();
        assert_eq!(stagger(&crowded, 4.0)[MAX_LEVELS], None);
    }

    /// Eleven short mixes side by side on the per-second chart: no two mix
    /// labels on one line overlap (the old chart wrote them all on one).
    #[test]
    fn mix_labels_never_overlap() {
        let mut c = Chart::new("p".into(), "t".into(), "x".into(), "y", XTicks::Nice);
        c.series.push(Series {
            name: "a".into(),
            chart_key: "k".into(),
            run: "a".into(),
            colour: 0,
            dash: "",
            points: (0..44).map(|s| point(s as f64 + 0.5, 1.0)).collect(),
            in_legend: true,
            radius: 2.0,
        });
        c.vlines = (0..11)
            .map(|k| VLine {
                x: 4.0 * k as f64,
                label: format!("mix {}: {} thr", k + 1, 1 << k),
            })
            .collect();
        let fr = Frame::of(&c);
        let items: Vec<(f64, f64)> = c
            .vlines
            .iter()
            .map(|v| (fr.xs.px(v.x) + 3.0, text_width(&v.label, 5.6)))
            .collect();
        let levels = stagger(&items, 4.0);
        assert!(levels.iter().all(Option::is_some), "every label placed: {levels:?}");
        for (i, a) in items.iter().enumerate() {
            for (j, b) in items.iter().enumerate().skip(i + 1) {
                if levels[i] == levels[j] {
                    assert!(a.0 + a.1 <= b.0, "labels {i} and {j} overlap on level {:?}", levels[i]);
                }
            }
        }
        assert!(levels.iter().any(|l| *l != Some(0)), "some labels had to move down");
    }
}
