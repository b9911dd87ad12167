//! The charts of each phase: against load (with each run's peak marked and
//! its collapse threshold drawn), second by second through the phase
//! (requests, latency, errors, connections), and the response-time
//! distribution of every mix from its stored HDR histogram.

use super::*;
use crate::chart::{HLine, Mark};
use benchlab_results::SecondResult;

/// What a phase's mixes are charted against: total threads (closed loop),
/// or the offered rate when every mix of the phase is an open loop (their
/// threads are 0: the schedule, not a user count, sets the load).
#[derive(Debug, Clone, Copy, PartialEq)]
enum LoadAxis {
    Threads,
    Rate,
}

impl LoadAxis {
    fn of(runs: &[Run], phase: &str) -> LoadAxis {
        let mixes: Vec<&MixResult> = runs.iter().flat_map(|r| phase_mixes(r, phase)).collect();
        if !mixes.is_empty() && mixes.iter().all(|m| m.open_loop.is_some()) {
            LoadAxis::Rate
        } else {
            LoadAxis::Threads
        }
    }

    /// A mix's load on this axis, and its `data-x` (the results.json
    /// value: `threads`, or `open_loop.rate`).
    fn x(self, m: &MixResult) -> (f64, String) {
        match (self, &m.open_loop) {
            (LoadAxis::Rate, Some(ol)) => (ol.rate, ol.rate.to_string()),
            _ => (m.threads as f64, m.threads.to_string()),
        }
    }

    fn label(self) -> String {
        match self {
            LoadAxis::Threads => "load: total threads (clients below)".into(),
            LoadAxis::Rate => "load: offered rate, requests/s (clients below)".into(),
        }
    }

    /// The load in words for tooltips and mix markers.
    fn words(self, m: &MixResult) -> String {
        match (self, &m.open_loop) {
            (_, Some(ol)) => format!("offered {} requests/s", requests_per_sec(ol.rate)),
            _ => threads_text(m.threads),
        }
    }

    fn short(self, m: &MixResult) -> String {
        match (self, &m.open_loop) {
            (_, Some(ol)) => format!("{}/s", requests_per_sec(ol.rate)),
            _ => format!("{} thr", int(m.threads)),
        }
    }

    /// Ticks at each load of the phase, the clients below.
    fn ticks(self, runs: &[Run], phase: &str) -> XTicks {
        let mut t: Vec<(f64, String, u32)> = Vec::new();
        for r in runs {
            for m in phase_mixes(r, phase) {
                let (x, _) = self.x(m);
                if !t.iter().any(|(v, _, _)| *v == x) {
                    let label = match self {
                        LoadAxis::Threads => m.threads.to_string(),
                        LoadAxis::Rate => requests_per_sec(x),
                    };
                    t.push((x, label, m.clients));
                }
            }
        }
        t.sort_by(|a, b| a.0.total_cmp(&b.0));
        XTicks::At(t.into_iter().map(|(x, l, cl)| (x, l, format!("{cl} cl"))).collect())
    }

    /// Loads that double from mix to mix (1 … 1,024 threads) crowd the
    /// left of a linear axis: past a ratio of 8 between the heaviest and
    /// the lightest load the axis is logarithmic.
    fn log(self, runs: &[Run], phase: &str) -> bool {
        let xs: Vec<f64> = runs
            .iter()
            .flat_map(|r| phase_mixes(r, phase))
            .map(|m| self.x(m).0)
            .collect();
        let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = xs.iter().copied().fold(0.0, f64::max);
        lo > 0.0 && hi / lo >= 8.0
    }
}

fn load_tip(run: &str, m: &MixResult, axis: LoadAxis, what: &str, value: &str) -> String {
    format!(
        "{run} · mix {} · {}, {} · {what}: {value}",
        m.mix,
        axis.words(m),
        clients_text(m.clients_participating)
    )
}

/// A series of one value per mix against the load.
#[allow(clippy::too_many_arguments)]
fn load_series(
    (ri, run): (usize, &Run),
    phase: &str,
    axis: LoadAxis,
    key: &str,
    name: String,
    dash: &'static str,
    value: impl Fn(&MixResult) -> Option<(f64, String)>,
    tip: impl Fn(&MixResult, f64) -> String,
) -> Series {
    let points = phase_mixes(run, phase)
        .into_iter()
        .filter_map(|m| {
            let (y, raw) = value(m)?;
            let (x, data_x) = axis.x(m);
            Some(Point {
                x,
                y,
                data_x,
                data_y: raw,
                mix: Some(m.mix),
                class: None,
                tip: load_tip(&run.label, m, axis, key, &tip(m, y)),
                hollow: m.partial,
            })
        })
        .collect();
    Series {
        name,
        chart_key: key.to_string(),
        run: run.label.clone(),
        colour: ri,
        dash,
        points,
        in_legend: true,
        radius: 3.5,
    }
}

/// One series per run (named by its label) of one value per mix.
fn per_run(
    runs: &[Run],
    phase: &str,
    axis: LoadAxis,
    key: &str,
    value: impl Fn(&MixResult) -> Option<(f64, String)>,
    tip: impl Fn(&MixResult, f64) -> String,
) -> Vec<Series> {
    runs.iter()
        .enumerate()
        .map(|(ri, r)| load_series((ri, r), phase, axis, key, r.label.clone(), "", &value, &tip))
        .collect()
}

/// Each run's peak ringed on a chart against load, and the share of that
/// peak below which the analysis calls a collapse (`--collapse-below`)
/// drawn as a line in the run's colour.
fn peak_and_threshold(
    c: &mut Chart,
    runs: &[Run],
    analyses: &[RunAnalysis],
    phase: &str,
    axis: LoadAxis,
    o: &ReportOptions,
    throughput: bool,
) {
    for (ri, (r, a)) in runs.iter().zip(analyses).enumerate() {
        let Some(p) = a.phases.iter().find(|p| p.name == phase) else {
            continue;
        };
        let pk = if throughput { &p.peak_throughput } else { &p.peak };
        let Some(pk) = pk else { continue };
        let Some(m) = phase_mixes(r, phase).into_iter().find(|m| m.mix == pk.mix) else {
            continue;
        };
        let (value, shown, unit) = if throughput {
            (pk.bytes_per_sec, mbs(pk.bytes_per_sec), "MB/s")
        } else if is_file(r) {
            // A file suite's peak is its most Mbit/s, ringed on that chart.
            (pk.mbit_per_sec, mbit_per_sec(pk.mbit_per_sec), "Mbit/s")
        } else {
            (pk.requests_per_sec, requests_per_sec(pk.requests_per_sec), "requests/s")
        };
        if value <= 0.0 {
            continue;
        }
        let who = if runs.len() > 1 {
            format!("{}: ", r.label)
        } else {
            String::new()
        };
        c.marks.push(Mark {
            x: axis.x(m).0,
            y: value,
            colour: ri,
            label: format!("{who}peak {shown} {unit}"),
            run: r.label.clone(),
            mix: pk.mix,
        });
        let at = value * o.collapse_share;
        c.hlines.push(HLine {
            y: at / c.y_div,
            label: format!("{who}collapse below {} of peak", pct(o.collapse_share)),
            colour: colour(ri),
            kind: "collapse",
            run: r.label.clone(),
            data_y: at.to_string(),
        });
    }
}

pub(super) fn charts(runs: &[Run], analyses: &[RunAnalysis], o: &ReportOptions) -> Markup {
    html! {
        section #charts {
            h2 { "Charts" }
            p.sub { "Each phase is charted on its own: against load (total threads — virtual users — with the number of clients, the test systems, below; or the offered rate of an open loop), second by second through its mixes, and as each mix's response-time distribution. A ring marks each run's peak; a dashed line in the run's colour is the share of that peak below which the analysis calls a collapse. Hover a point for its exact value. Hollow points: partial mixes or ramp seconds." }
            @for (pi, phase) in phase_names(analyses).iter().enumerate() {
                h3 id={ "phase-" (pi) } { "Phase " (phase) }
                div.charts { @for c in phase_charts(runs, analyses, o, pi, phase) { (c) } }
            }
        }
    }
}

/// Every chart of one phase, in order.
fn phase_charts(runs: &[Run], analyses: &[RunAnalysis], o: &ReportOptions, pi: usize, phase: &str) -> Vec<Markup> {
    let mut h: Vec<Markup> = Vec::new();
    {
        let axis = LoadAxis::of(runs, phase);
        let ticks = axis.ticks(runs, phase);
        let x_log = axis.log(runs, phase);
        let mk = |id: &str, title: String, y_label: &str, y_div: f64, y_log: bool, series: Vec<Series>| {
            let mut c = Chart::new(format!("{id}-{pi}"), title, axis.label(), y_label, ticks.clone());
            c.y_div = y_div;
            c.y_log = y_log;
            c.x_log = x_log;
            c.series = series;
            c
        };
        // A file suite leads with Mbit/s (bytes read + written), as
        // NetBench did; its operations are its requests.
        let file = runs.iter().any(is_file);
        if file {
            let mbit = per_run(
                runs,
                phase,
                axis,
                "mbit_per_sec",
                |m| Some((m.figures.mbit_per_sec, m.figures.mbit_per_sec.to_string())),
                |_, y| format!("{} Mbit/s", mbit_per_sec(y)),
            );
            let mut c = mk(
                "mbit",
                format!("Mbit/s per mix — {phase}"),
                "Mbit/s (10⁶ bits/s read + written)",
                1.0,
                false,
                mbit,
            );
            peak_and_threshold(&mut c, runs, analyses, phase, axis, o, false);
            h.push(c.render());
        }
        let rate = per_run(
            runs,
            phase,
            axis,
            "requests_per_sec",
            |m| Some((m.figures.requests_per_sec, m.figures.requests_per_sec.to_string())),
            move |_, y| {
                format!(
                    "{} {}",
                    requests_per_sec(y),
                    if file { "operations/s" } else { "requests/s" }
                )
            },
        );
        let mut c = mk(
            "rate",
            if file {
                format!("Operations per second — {phase}")
            } else {
                format!("Requests per second — {phase}")
            },
            if file {
                "operations/s (errors included)"
            } else {
                "requests/s (successful)"
            },
            1.0,
            false,
            rate,
        );
        if !file {
            peak_and_threshold(&mut c, runs, analyses, phase, axis, o, false);
        }
        h.push(c.render());
        let thr = per_run(
            runs,
            phase,
            axis,
            "bytes_per_sec",
            |m| Some((m.figures.bytes_per_sec, m.figures.bytes_per_sec.to_string())),
            |m, y| format!("{} MB/s ({} Mbit/s)", mbs(y), mbit_per_sec(m.figures.mbit_per_sec)),
        );
        let mut c = mk(
            "throughput",
            format!("Throughput — {phase}"),
            "throughput (MB/s, 10⁶ bytes/s)",
            1e6,
            false,
            thr,
        );
        peak_and_threshold(&mut c, runs, analyses, phase, axis, o, true);
        h.push(c.render());
        let mut lat = Vec::new();
        let mut max_p99 = 0u64;
        for (ri, r) in runs.iter().enumerate() {
            for m in phase_mixes(r, phase) {
                max_p99 = max_p99.max(m.figures.latency_us.p99);
            }
            for (k, (name, dash)) in [("p50", DASHES[0]), ("p90", DASHES[1]), ("p99", DASHES[2])]
                .into_iter()
                .enumerate()
            {
                let pick = move |m: &MixResult| match k {
                    0 => m.figures.latency_us.p50,
                    1 => m.figures.latency_us.p90,
                    _ => m.figures.latency_us.p99,
                };
                lat.push(load_series(
                    (ri, r),
                    phase,
                    axis,
                    &format!("latency_us.{name}"),
                    format!("{} {name}", r.label),
                    dash,
                    |m| {
                        let v = pick(m);
                        Some((v as f64, v.to_string()))
                    },
                    |_, y| format!("{} µs", int(y as u64)),
                ));
            }
        }
        let mut c = mk(
            "latency",
            format!("Latency p50 / p90 / p99 — {phase}"),
            "latency (ms, log scale)",
            1000.0,
            true,
            lat,
        );
        latency_limit(&mut c, max_p99, o);
        h.push(c.render());
        let err = per_run(
            runs,
            phase,
            axis,
            "errors_total",
            |m| Some((m.figures.errors_total as f64, m.figures.errors_total.to_string())),
            |m, y| {
                let kinds = nonzero_errors(m);
                if kinds.is_empty() {
                    plural(y as u64, "error", "errors")
                } else {
                    format!("{} ({kinds})", plural(y as u64, "error", "errors"))
                }
            },
        );
        let mut c = mk(
            "errors",
            format!("Errors — {phase}"),
            "failed requests in the window",
            1.0,
            false,
            err,
        );
        c.integer_y = true;
        h.push(c.render());
        // Per-class rates and latency, when a phase has several classes.
        let multi = runs
            .iter()
            .any(|r| phase_mixes(r, phase).iter().any(|m| m.classes.len() > 1));
        if multi {
            let mut cls = Vec::new();
            let mut cls_lat = Vec::new();
            let mut max_p99 = 0u64;
            for (ri, r) in runs.iter().enumerate() {
                let mut names: Vec<String> = Vec::new();
                for m in phase_mixes(r, phase) {
                    for c in &m.classes {
                        max_p99 = max_p99.max(c.figures.latency_us.p99);
                        if !names.contains(&c.name) {
                            names.push(c.name.clone());
                        }
                    }
                }
                for (ci, cname) in names.iter().enumerate() {
                    fn class<'m>(m: &'m MixResult, name: &str) -> Option<&'m benchlab_results::Figures> {
                        m.classes.iter().find(|c| c.name == name).map(|c| &c.figures)
                    }
                    let mut s = load_series(
                        (ri, r),
                        phase,
                        axis,
                        "classes.requests_per_sec",
                        format!("{} {cname}", r.label),
                        DASHES[ci % DASHES.len()],
                        |m| class(m, cname).map(|f| (f.requests_per_sec, f.requests_per_sec.to_string())),
                        |_, y| format!("{cname}: {} requests/s", requests_per_sec(y)),
                    );
                    for p in &mut s.points {
                        p.class = Some(cname.clone());
                    }
                    cls.push(s);
                    // p50 and p99 of the class: one dash per class, the p50
                    // points small so the two read apart.
                    for (q, radius) in [("p50", 2.5), ("p99", 3.5)] {
                        let mut s = load_series(
                            (ri, r),
                            phase,
                            axis,
                            &format!("classes.latency_us.{q}"),
                            format!("{} {cname} {q}", r.label),
                            DASHES[ci % DASHES.len()],
                            |m| {
                                class(m, cname).map(|f| {
                                    let v = if q == "p50" { f.latency_us.p50 } else { f.latency_us.p99 };
                                    (v as f64, v.to_string())
                                })
                            },
                            |_, y| format!("{cname} {q}: {} µs", int(y as u64)),
                        );
                        s.radius = radius;
                        s.in_legend = q == "p99";
                        if q == "p99" {
                            s.name = format!("{} {cname} p50 (small) / p99", r.label);
                        }
                        for p in &mut s.points {
                            p.class = Some(cname.clone());
                        }
                        cls_lat.push(s);
                    }
                }
            }
            h.push(
                mk(
                    "classes",
                    format!("Requests per second by class — {phase}"),
                    "requests/s (successful)",
                    1.0,
                    false,
                    cls,
                )
                .render(),
            );
            let mut c = mk(
                "class-latency",
                format!("Latency by class, p50 and p99 — {phase}"),
                "latency (ms, log scale)",
                1000.0,
                true,
                cls_lat,
            );
            latency_limit(&mut c, max_p99, o);
            h.push(c.render());
        }
        h.extend(resource_charts(runs, phase, pi, axis));
        let line = Timeline::of(runs, phase, axis);
        h.push(line.requests(runs, pi));
        h.push(line.latency(runs, pi, o));
        h.push(line.errors_and_connections(runs, pi));
        h.extend(distribution(runs, phase, pi, axis));
    }
    h
}

/// The p99 latency limit as a line, when the curves come within a decade
/// of it (otherwise it would only squash them).
fn latency_limit(c: &mut Chart, max_p99: u64, o: &ReportOptions) {
    if max_p99 * 10 >= o.latency_limit_us {
        c.hlines.push(HLine {
            y: o.latency_limit_us as f64 / 1000.0,
            label: format!("limit {}", ms(o.latency_limit_us as f64)),
            colour: "#c00",
            kind: "latency-limit",
            run: String::new(),
            data_y: o.latency_limit_us.to_string(),
        });
    }
}

/// The seconds of a phase's mixes laid back to back: slot k (the k-th mix
/// of the phase) is as long as its longest run, so the runs' mixes line up.
struct Timeline {
    offsets: Vec<f64>,
    vlines: Vec<VLine>,
    phase: String,
    axis: LoadAxis,
}

impl Timeline {
    fn of(runs: &[Run], phase: &str, axis: LoadAxis) -> Timeline {
        let lens: Vec<Vec<(&MixResult, u32)>> = runs
            .iter()
            .map(|r| {
                phase_mixes(r, phase)
                    .into_iter()
                    .map(|m| {
                        let n = m
                            .per_second
                            .iter()
                            .map(|s| s.second)
                            .max()
                            .unwrap_or(0)
                            .max(m.params.length_s.ceil() as u32);
                        (m, n)
                    })
                    .collect()
            })
            .collect();
        let slots = lens.iter().map(Vec::len).max().unwrap_or(0);
        let mut offsets = vec![0.0f64; slots + 1];
        for k in 0..slots {
            let w = lens.iter().filter_map(|l| l.get(k)).map(|l| l.1).max().unwrap_or(0);
            offsets[k + 1] = offsets[k] + w as f64;
        }
        let vlines = lens
            .first()
            .map(|l| {
                l.iter()
                    .enumerate()
                    .map(|(k, (m, _))| VLine {
                        x: offsets[k],
                        label: format!("mix {}: {}", m.mix, axis.short(m)),
                    })
                    .collect()
            })
            .unwrap_or_default();
        Timeline {
            offsets,
            vlines,
            phase: phase.to_string(),
            axis,
        }
    }

    fn chart(&self, id: &str, pi: usize, title: &str, y_label: &str, series: Vec<Series>) -> Chart {
        let mut c = Chart::new(
            format!("{id}-{pi}"),
            format!("{title}, mix after mix — {}", self.phase),
            "time through the phase (s); hollow points are ramp seconds, not counted".into(),
            y_label,
            XTicks::Nice,
        );
        c.series = series;
        c.vlines = self.vlines.clone();
        c
    }

    /// One series per run and mix of `value` (None: not plotted) in each
    /// second; `data-x` is the second of the mix.
    #[allow(clippy::too_many_arguments)]
    fn series(
        &self,
        (ri, r): (usize, &Run),
        key: &str,
        name: &str,
        dash: &'static str,
        radius: f64,
        value: impl Fn(&SecondResult) -> Option<u64>,
        tip: impl Fn(&SecondResult) -> String,
    ) -> Vec<Series> {
        phase_mixes(r, &self.phase)
            .into_iter()
            .enumerate()
            .map(|(k, m)| {
                let points = m
                    .per_second
                    .iter()
                    .filter_map(|s| {
                        let v = value(s)?;
                        Some(Point {
                            x: self.offsets[k] + s.second as f64 - 0.5,
                            y: v as f64,
                            data_x: s.second.to_string(),
                            data_y: v.to_string(),
                            mix: Some(m.mix),
                            class: None,
                            tip: format!(
                                "{} · mix {} ({}) · second {}{} · {}",
                                r.label,
                                m.mix,
                                self.axis.words(m),
                                s.second,
                                if s.in_window { "" } else { " (ramp)" },
                                tip(s)
                            ),
                            hollow: !s.in_window,
                        })
                    })
                    .collect();
                Series {
                    name: name.to_string(),
                    chart_key: key.to_string(),
                    run: r.label.clone(),
                    colour: ri,
                    dash,
                    points,
                    in_legend: k == 0,
                    radius,
                }
            })
            .collect()
    }

    /// Requests completed in each second: warm-up and collapse show.
    fn requests(&self, runs: &[Run], pi: usize) -> Markup {
        let mut series = Vec::new();
        for (ri, r) in runs.iter().enumerate() {
            series.extend(self.series(
                (ri, r),
                "per_second.requests",
                &r.label,
                "",
                2.2,
                |s| Some(s.requests),
                |s| {
                    format!(
                        "{}, {}, p99 {} µs",
                        plural(s.requests, "request", "requests"),
                        plural(s.errors, "error", "errors"),
                        int(s.latency_p99_us)
                    )
                },
            ));
        }
        let mut c = self.chart(
            "per-second",
            pi,
            "Requests in each second",
            "requests completed in the second",
            series,
        );
        c.integer_y = true;
        c.render()
    }

    /// p50 and p99 of each second (seconds without a successful request
    /// have no latency and are not plotted).
    fn latency(&self, runs: &[Run], pi: usize, o: &ReportOptions) -> Markup {
        let mut series = Vec::new();
        let mut max_p99 = 0;
        for (ri, r) in runs.iter().enumerate() {
            for m in phase_mixes(r, &self.phase) {
                max_p99 = m.per_second.iter().map(|s| s.latency_p99_us).fold(max_p99, u64::max);
            }
            for (key, q, dash, radius) in [
                ("per_second.latency_p50_us", "p50", DASHES[0], 1.8),
                ("per_second.latency_p99_us", "p99", DASHES[2], 2.4),
            ] {
                let pick = move |s: &SecondResult| if q == "p50" { s.latency_p50_us } else { s.latency_p99_us };
                series.extend(self.series(
                    (ri, r),
                    key,
                    &format!("{} {q}", r.label),
                    dash,
                    radius,
                    |s| Some(pick(s)).filter(|v| *v > 0),
                    |s| format!("{q} {} µs", int(pick(s))),
                ));
            }
        }
        let mut c = self.chart(
            "latency-time",
            pi,
            "Latency p50 / p99 in each second",
            "latency (ms, log scale)",
            series,
        );
        c.y_div = 1000.0;
        c.y_log = true;
        latency_limit(&mut c, max_p99, o);
        c.render()
    }

    /// Failed requests and new connections in each second: a server that
    /// refuses or drops connections under load shows here.
    fn errors_and_connections(&self, runs: &[Run], pi: usize) -> Markup {
        let mut series = Vec::new();
        for (ri, r) in runs.iter().enumerate() {
            series.extend(self.series(
                (ri, r),
                "per_second.errors",
                &format!("{} errors", r.label),
                "",
                2.4,
                |s| Some(s.errors),
                |s| plural(s.errors, "error", "errors"),
            ));
            series.extend(self.series(
                (ri, r),
                "per_second.connections_opened",
                &format!("{} connections opened", r.label),
                DASHES[1],
                1.8,
                |s| Some(s.connections_opened),
                |s| plural(s.connections_opened, "connection opened", "connections opened"),
            ));
        }
        let mut c = self.chart(
            "errors-time",
            pi,
            "Errors and new connections per second",
            "count in the second",
            series,
        );
        c.integer_y = true;
        c.render()
    }
}

/// The quantiles a distribution curve is drawn at: 1 − 10^(−k/10), ten a
/// decade of 1/(1−q) as HdrHistogram's plotter spaces them, up to
/// 99.999 %, then those the histogram's count can tell apart.
fn curve_quantiles(count: u64) -> Vec<f64> {
    (0..=50)
        .map(|k| 1.0 - 10f64.powf(-(k as f64) / 10.0))
        // Past 1/count the curve only repeats the maximum.
        .filter(|q| (1.0 - q) * count as f64 >= 1.0 - 1e-9)
        .collect()
}

/// The highest value a results.json histogram may hold: benchlab's reach
/// 1 h in microseconds, with room for a future wider one.
const MAX_RESULTS_HISTOGRAM_US: u64 = 1 << 40;

/// Decodes a results.json histogram (HDR V2, base64).
pub(crate) fn decode_histogram(b64: &str) -> Option<hdrhistogram::Histogram<u64>> {
    use base64::Engine as _;
    let bytes = base64::engine::general_purpose::STANDARD.decode(b64).ok()?;
    // A results file may be anyone's: its header must not size what the
    // deserializer allocates (benchlab's histograms reach at most 1 h in µs).
    benchlab_input::hdr::v2_header(&bytes, MAX_RESULTS_HISTOGRAM_US).ok()?;
    hdrhistogram::serialization::Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .ok()
}

/// The response-time distribution of every mix of a phase, one chart per
/// run: latency at each quantile from the mix's stored HDR histogram, on
/// HdrHistogram's percentile axis (x = 1/(1−q), logarithmic, so the tail
/// gets the room).
fn distribution(runs: &[Run], phase: &str, pi: usize, axis: LoadAxis) -> Vec<Markup> {
    let mut h = Vec::new();
    for (ri, r) in runs.iter().enumerate() {
        let mut series = Vec::new();
        let mut top = 0.0f64;
        for (k, m) in phase_mixes(r, phase).into_iter().enumerate() {
            // An open-loop mix has two curves: corrected latency (from each
            // request's intended send time, solid) and as-sent latency (from
            // when it actually left, dashed); the gap between them is the
            // time requests waited behind a slow server.
            let as_sent = m.histograms.latency_as_sent_us.as_deref();
            let curves = [
                (
                    Some(m.histograms.latency_us.as_str()),
                    "histograms.latency_us",
                    "",
                    DASHES[(k / PALETTE_LEN) % DASHES.len()],
                ),
                (as_sent, "histograms.latency_as_sent_us", " as sent", DASHES[2]),
            ];
            for (b64, chart_key, which, dash) in curves {
                let Some(hist) = b64.and_then(decode_histogram) else {
                    continue;
                };
                if hist.is_empty() {
                    continue;
                }
                let points: Vec<Point> = curve_quantiles(hist.len())
                    .into_iter()
                    .map(|q| {
                        let v = hist.value_at_quantile(q);
                        let x = (1.0 / (1.0 - q)).log10();
                        top = top.max(x);
                        Point {
                            x,
                            y: v as f64,
                            data_x: q.to_string(),
                            data_y: v.to_string(),
                            mix: Some(m.mix),
                            class: None,
                            tip: format!(
                                "{} · mix {} ({}){which} · {} of requests within {} µs",
                                r.label,
                                m.mix,
                                axis.words(m),
                                percentile_label(q),
                                int(v)
                            ),
                            hollow: false,
                        }
                    })
                    .collect();
                series.push(Series {
                    name: format!("mix {} ({}){which}", m.mix, axis.short(m)),
                    chart_key: chart_key.into(),
                    run: r.label.clone(),
                    // One run per chart: colours tell its mixes apart.
                    colour: k,
                    dash,
                    points,
                    in_legend: true,
                    radius: 1.8,
                });
            }
        }
        if series.is_empty() {
            continue;
        }
        let decades = top.ceil().max(2.0) as i32;
        let ticks = (0..=decades)
            .map(|d| {
                let q = 1.0 - 10f64.powi(-d);
                (d as f64, percentile_label(q), String::new())
            })
            .collect();
        let who = if runs.len() > 1 {
            format!(" — {}", r.label)
        } else {
            String::new()
        };
        let mut c = Chart::new(
            format!("distribution-{pi}-{ri}"),
            format!("Response-time distribution by mix — {phase}{who}"),
            "percentile (log scale of 1 ÷ (1 − percentile))".into(),
            "latency (ms, log scale)",
            XTicks::At(ticks),
        );
        c.series = series;
        c.y_div = 1000.0;
        c.y_log = true;
        h.push(c.render());
    }
    h
}

const PALETTE_LEN: usize = crate::chart::PALETTE.len();

/// A quantile as a percentile label: 0 %, 90 %, 99.9 %.
fn percentile_label(q: f64) -> String {
    let p = q * 100.0;
    let s = format!("{p:.5}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s} %")
}

/// The server host's average over a mix (the first monitored host), if
/// the mix was monitored.
pub(super) fn server_average(m: &MixResult) -> Option<&benchlab_results::resources::HostSample> {
    m.resources.as_ref()?.hosts.first()?.average.as_ref()
}

/// The server's CPUs the verdict judged: those of the watched process,
/// else all.
pub(crate) fn server_cpu(a: &benchlab_results::resources::HostSample) -> benchlab_results::resources::CpuShares {
    a.cpu_of(a.process.as_ref().map(|p| p.cpus.as_slice()).unwrap_or(&[]))
}

/// The NIC that carried the load (the most bytes; `lo` for a loopback
/// run): the one the verdict names too.
pub(crate) fn busiest_nic(
    a: &benchlab_results::resources::HostSample,
) -> Option<&benchlab_results::resources::NicSample> {
    a.load_nic()
}

/// Charts of the monitored server against load, beside requests/s: its
/// CPU split into user and system time, context switches per request,
/// network Mbit/s against the link's capacity, and disk operations.
fn resource_charts(runs: &[Run], phase: &str, pi: usize, axis: LoadAxis) -> Vec<Markup> {
    let monitored = runs
        .iter()
        .any(|r| phase_mixes(r, phase).iter().any(|m| server_average(m).is_some()));
    if !monitored {
        return Vec::new();
    }
    let ticks = axis.ticks(runs, phase);
    let mk = |id: &str, title: String, y_label: &str, series: Vec<Series>| {
        let mut c = Chart::new(format!("{id}-{pi}"), title, axis.label(), y_label, ticks.clone());
        c.x_log = axis.log(runs, phase);
        c.series = series;
        c
    };
    let mut h = Vec::new();
    let mut cpu = Vec::new();
    for (ri, r) in runs.iter().enumerate() {
        for (k, (name, dash)) in [("busy", ""), ("user", DASHES[1]), ("system", DASHES[2])]
            .into_iter()
            .enumerate()
        {
            cpu.push(load_series(
                (ri, r),
                phase,
                axis,
                &format!("resources.server_cpu.{name}"),
                format!("{} {name}", r.label),
                dash,
                move |m| {
                    let c = server_cpu(server_average(m)?);
                    let v = match k {
                        0 => c.busy(),
                        1 => c.user,
                        _ => c.kernel(),
                    };
                    Some((v, v.to_string()))
                },
                move |_, y| format!("server CPU {name} {} %", pct100(y)),
            ));
        }
    }
    let mut c = mk(
        "server-cpu",
        format!("Server CPU: busy, user and system time — {phase}"),
        "% of the server's cores",
        cpu,
    );
    c.hlines.push(HLine {
        y: benchlab_results::resources::SATURATED_PERCENT,
        label: "saturated".into(),
        colour: "#c00",
        kind: "saturated",
        run: String::new(),
        data_y: benchlab_results::resources::SATURATED_PERCENT.to_string(),
    });
    h.push(c.render());
    let cs = per_run(
        runs,
        phase,
        axis,
        "resources.hosts.context_switches_per_request",
        |m| {
            let v = m.resources.as_ref()?.hosts.first()?.context_switches_per_request?;
            Some((v, v.to_string()))
        },
        |m, y| {
            format!(
                "{} context switches per request ({}/s)",
                fixed(y, 2),
                server_average(m).map_or(String::new(), |a| int(a.context_switches_per_sec as u64))
            )
        },
    );
    h.push(
        mk(
            "context-switches",
            format!("Context switches per request — {phase}"),
            "context switches per request, server host",
            cs,
        )
        .render(),
    );
    let net = per_run(
        runs,
        phase,
        axis,
        "resources.nic.mbit_per_sec",
        |m| {
            let n = busiest_nic(server_average(m)?)?;
            Some((n.mbit_per_sec(), n.mbit_per_sec().to_string()))
        },
        |m, y| {
            let n = server_average(m).and_then(busiest_nic);
            match n.and_then(|n| n.speed_mbit.map(|s| (n, s))) {
                Some((n, s)) => format!("{} {} Mbit/s of {s} Mbit/s", n.name, fixed(y, 1)),
                None => format!("{} {} Mbit/s", n.map_or("", |n| n.name.as_str()), fixed(y, 1)),
            }
        },
    );
    let mut c = mk(
        "network",
        format!("Network against link capacity — {phase}"),
        "Mbit/s, busier direction of the NIC that carried the load",
        net,
    );
    let speed = runs
        .iter()
        .flat_map(|r| phase_mixes(r, phase))
        .filter_map(|m| server_average(m).and_then(busiest_nic).and_then(|n| n.speed_mbit))
        .max();
    if let Some(s) = speed {
        c.hlines.push(HLine {
            y: s as f64,
            label: format!("link {s} Mbit/s"),
            colour: "#c00",
            kind: "link-capacity",
            run: String::new(),
            data_y: s.to_string(),
        });
    }
    h.push(c.render());
    let disk = per_run(
        runs,
        phase,
        axis,
        "resources.disk.ops_per_sec",
        |m| {
            let a = server_average(m)?;
            let v: f64 = a.disks.iter().map(|d| d.ops_per_sec()).sum();
            Some((v, v.to_string()))
        },
        |m, y| {
            let busy = server_average(m)
                .and_then(|a| a.disks.iter().map(|d| d.busy_percent).max_by(f64::total_cmp))
                .unwrap_or(0.0);
            format!(
                "{} disk operations/s, busiest disk {} % busy",
                fixed(y, 1),
                pct100(busy)
            )
        },
    );
    h.push(
        mk(
            "disk",
            format!("Disk operations against load — {phase}"),
            "disk operations/s (reads + writes), all disks",
            disk,
        )
        .render(),
    );
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A results file's histogram is decoded only when its header is of
    /// benchlab's shape; one of 5 digits up to 2^62 (about 50 MB of
    /// counts) used to be allocated and drawn.
    #[test]
    fn a_histogram_of_another_shape_is_not_decoded() {
        let mut ours = hdrhistogram::Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).unwrap();
        ours.record(5_000).unwrap();
        assert_eq!(
            decode_histogram(&benchlab_results::histogram_b64(&ours)).map(|h| h.len()),
            Some(1)
        );
        let wide = hdrhistogram::Histogram::<u64>::new_with_bounds(1, 1 << 62, 5).unwrap();
        assert!(decode_histogram(&benchlab_results::histogram_b64(&wide)).is_none());
    }

    #[test]
    fn quantiles_stop_where_the_count_runs_out() {
        let q = curve_quantiles(1_000);
        assert_eq!(q.first(), Some(&0.0));
        assert_eq!(q.len(), 31, "up to 99.9 % for 1,000 values: {q:?}");
        assert!((q[30] - 0.999).abs() < 1e-12);
        assert_eq!(curve_quantiles(10_000_000).len(), 51);
        // data-x round-trips: the browser test parses it back.
        for v in curve_quantiles(1 << 30) {
            assert_eq!(v.to_string().parse::<f64>().ok(), Some(v));
        }
    }

    #[test]
    fn percentile_labels() {
        assert_eq!(percentile_label(0.0), "0 %");
        assert_eq!(percentile_label(0.9), "90 %");
        assert_eq!(percentile_label(1.0 - 1e-3), "99.9 %");
    }
}
