//! A file suite's results: per mix throughput (bytes read and written per
//! second, Mbit/s), operations/s, latency per operation kind, errors by
//! what was expected and what came back, per-client data; the peak mix and
//! the shape past it. Written as results.json (after every mix) and
//! report.html (a page of its own, see [`html`]) in the results directory.

use crate::loadfile::OpKind;
use crate::run::FileMixMeasure;
use crate::stats::FileStats;
use benchlab_format::{mbit_per_sec, mean_us, percent, plural, ratio, requests_per_sec, thousands};
use benchlab_model::Mix;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Latency of one operation kind, microseconds.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct Latency {
    pub mean: f64,
    pub p50: u64,
    pub p90: u64,
    pub p99: u64,
    pub max: u64,
}

/// One operation kind in a mix.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct OpResult {
    pub operation: String,
    pub count: u64,
    pub errors: u64,
    /// Operations of this kind the client could not send over the target's
    /// protocol (over smb://: LockX, UnlockX, Flush, which libsmbclient
    /// has no call for): not in `count`, not errors, nothing timed.
    #[serde(default)]
    pub not_sent: u64,
    pub per_second: f64,
    pub latency_us: Latency,
}

/// One second of a mix's measurement window, all users summed.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct FileSecond {
    /// 1-based, from the start of the window (the last may be a part of
    /// one: the window need not be whole seconds).
    pub second: u64,
    /// Operations done in it (not-sent ones excluded), errors included.
    pub operations: u64,
    pub errors: u64,
    pub bytes_read: u64,
    pub bytes_written: u64,
    /// (read + written) × 8 / 10⁶ over the second.
    pub mbit_per_s: f64,
}

/// One run of a mix under `run --repeat N`: the figures the noise of
/// `compare` is measured from.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct FileRepeat {
    pub mbit_per_s: f64,
    pub operations_per_s: f64,
}

/// One client (test system) in a mix.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct ClientResult {
    pub client: u32,
    pub operations: u64,
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub mbit_per_s: f64,
    pub errors: u64,
}

/// One mix.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct FileMixResult {
    pub mix: usize,
    pub phase: String,
    pub workload: String,
    pub target: String,
    pub clients: u32,
    /// Users: clients × threads per client, each its own workspace.
    pub users: u32,
    /// Seconds the rates divide by.
    pub window_s: f64,
    pub operations: u64,
    pub operations_per_s: f64,
    pub bytes_read: u64,
    pub bytes_written: u64,
    /// (read + written) / window.
    pub bytes_per_s: f64,
    pub mbit_per_s: f64,
    pub read_mbit_per_s: f64,
    pub write_mbit_per_s: f64,
    pub errors: u64,
    /// Operations not sent (the sum of `by_operation`'s `not_sent`): not in
    /// `operations`.
    #[serde(default)]
    pub not_sent: u64,
    /// "KIND: expected X, got Y" → count.
    pub errors_by_status: BTreeMap<String, u64>,
    /// Whole loadfile passes completed in the window (0 for a disk mix).
    pub loops: u64,
    /// Bytes written to fill the workspaces before the mix (not counted).
    pub prepared_bytes: u64,
    pub by_operation: Vec<OpResult>,
    pub per_client: Vec<ClientResult>,
    /// Each second of the window; their operations and bytes sum to the
    /// mix's.
    #[serde(default)]
    pub per_second: Vec<FileSecond>,
    /// With `run --repeat N` (N ≥ 2): every run's figures, in run order;
    /// the mix's other fields are those of the median run (by Mbit/s).
    /// Empty for a mix run once.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub repeats: Vec<FileRepeat>,
    /// Lowest client's Mbit/s over the highest's (1 = all alike).
    pub fairness: f64,
    /// Stopped before its end (Ctrl-C): the window ends where it stopped.
    pub partial: bool,
}

/// The mix of most Mbit/s and how the mixes after it compare.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct Peak {
    pub mix: usize,
    pub clients: u32,
    pub mbit_per_s: f64,
    /// Per later mix of the same phase: its Mbit/s as a percentage of the
    /// peak's ("held" near 100, "fell" well below).
    pub past_peak: Vec<(usize, f64)>,
}

/// A file suite's results.json.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct FileResults {
    /// `benchlab.file-results/1` (docs/file-results.schema.json).
    pub schema: String,
    /// "file": results of a file suite (a web suite's results.json has no
    /// such field).
    pub kind: String,
    pub suite: String,
    pub description: String,
    pub started: u64,
    pub command: Vec<String>,
    pub mixes: Vec<FileMixResult>,
    pub peak: Option<Peak>,
    pub interrupted: bool,
}

/// The `schema` of a file suite's results.json.
pub const FILE_RESULTS_SCHEMA: &str = "benchlab.file-results/1";

/// The JSON Schema of a file suite's results.json, generated from these
/// types as they serialise (docs/file-results.schema.json holds it; a
/// test keeps the two equal).
pub fn json_schema() -> serde_json::Value {
    let generator = schemars::generate::SchemaSettings::draft2020_12()
        .for_serialize()
        .into_generator();
    let mut v: serde_json::Value = generator.into_root_schema_for::<FileResults>().into();
    v["title"] = serde_json::json!(format!("benchlab results.json of a file suite ({FILE_RESULTS_SCHEMA})"));
    v["description"] = serde_json::json!(
        "The results of `benchlab run` of a file suite (disk mix or dbench loadfile): per mix throughput, \
         operations by kind with latency, errors by status, per-client data, the peak. Counts follow \
         docs/fileservers.md. Generated from crates/fileserver/src/results.rs; do not edit by hand."
    );
    v["properties"]["schema"]["const"] = serde_json::json!(FILE_RESULTS_SCHEMA);
    v
}

fn rate(n: u64, s: f64) -> f64 {
    if s > 0.0 {
        n as f64 / s
    } else {
        0.0
    }
}

fn mbit(bytes: u64, s: f64) -> f64 {
    rate(bytes, s) * 8.0 / 1e6
}

/// A mix's result from what it measured.
pub fn mix_result(mix: &Mix, phase: &str, users: u32, m: &FileMixMeasure) -> FileMixResult {
    let t = &m.total;
    let w = m.window;
    let by_operation = OpKind::ALL
        .iter()
        .zip(&t.ops)
        .filter(|(_, o)| o.count > 0 || o.not_sent > 0)
        .map(|(k, o)| OpResult {
            operation: k.name().to_string(),
            count: o.count,
            errors: o.errors,
            not_sent: o.not_sent,
            per_second: rate(o.count, w),
            latency_us: Latency {
                mean: o.latency.mean(),
                p50: o.latency.value_at_quantile(0.5),
                p90: o.latency.value_at_quantile(0.9),
                p99: o.latency.value_at_quantile(0.99),
                max: o.latency.max(),
            },
        })
        .collect();
    let per_client: Vec<ClientResult> = m
        .clients
        .iter()
        .enumerate()
        .map(|(i, c): (usize, &FileStats)| ClientResult {
            client: i as u32 + 1,
            operations: c.operations(),
            bytes_read: c.bytes_read,
            bytes_written: c.bytes_written,
            mbit_per_s: mbit(c.bytes_read + c.bytes_written, w),
            errors: c.error_count(),
        })
        .collect();
    let hi = per_client.iter().map(|c| c.mbit_per_s).fold(0.0, f64::max);
    let lo = per_client.iter().map(|c| c.mbit_per_s).fold(f64::INFINITY, f64::min);
    FileMixResult {
        mix: mix.number,
        phase: phase.to_string(),
        workload: mix.params.workload.clone(),
        // Shown and stored: never a password (issue 21).
        target: crate::smb::redact(&mix.params.target),
        clients: mix.clients,
        users,
        window_s: w,
        operations: t.operations(),
        operations_per_s: rate(t.operations(), w),
        bytes_read: t.bytes_read,
        bytes_written: t.bytes_written,
        bytes_per_s: rate(t.bytes_read + t.bytes_written, w),
        mbit_per_s: mbit(t.bytes_read + t.bytes_written, w),
        read_mbit_per_s: mbit(t.bytes_read, w),
        write_mbit_per_s: mbit(t.bytes_written, w),
        errors: t.error_count(),
        not_sent: t.not_sent(),
        errors_by_status: t.errors.clone(),
        loops: t.loops,
        prepared_bytes: m.prepared_bytes,
        by_operation,
        per_client,
        per_second: t
            .seconds
            .iter()
            .enumerate()
            .map(|(i, s)| FileSecond {
                second: i as u64 + 1,
                operations: s.operations,
                errors: s.errors,
                bytes_read: s.bytes_read,
                bytes_written: s.bytes_written,
                mbit_per_s: (s.bytes_read + s.bytes_written) as f64 * 8.0 / 1e6,
            })
            .collect(),
        repeats: Vec::new(),
        fairness: if hi > 0.0 { lo / hi } else { 1.0 },
        partial: m.partial,
    }
}

/// The median of a mix's runs by Mbit/s (the lower middle one of an even
/// count), with every run's figures as its `repeats`; a single run as it is.
pub(crate) fn median_run(mut runs: Vec<FileMixResult>) -> Option<FileMixResult> {
    if runs.len() < 2 {
        return runs.pop();
    }
    let repeats: Vec<FileRepeat> = runs
        .iter()
        .map(|r| FileRepeat {
            mbit_per_s: r.mbit_per_s,
            operations_per_s: r.operations_per_s,
        })
        .collect();
    let mut order: Vec<usize> = (0..runs.len()).collect();
    order.sort_by(|&a, &b| runs[a].mbit_per_s.total_cmp(&runs[b].mbit_per_s));
    let mut median = runs.swap_remove(order[(order.len() - 1) / 2]);
    median.partial = runs.iter().any(|r| r.partial) || median.partial;
    median.repeats = repeats;
    Some(median)
}

/// The peak mix (most Mbit/s) and the shape of its phase past it.
pub fn peak(mixes: &[FileMixResult]) -> Option<Peak> {
    let best = mixes
        .iter()
        .max_by(|a, b| a.mbit_per_s.total_cmp(&b.mbit_per_s).then(b.mix.cmp(&a.mix)))?;
    Some(Peak {
        mix: best.mix,
        clients: best.clients,
        mbit_per_s: best.mbit_per_s,
        past_peak: mixes
            .iter()
            .filter(|m| m.mix > best.mix && m.phase == best.phase)
            .map(|m| {
                let pct = if best.mbit_per_s > 0.0 {
                    m.mbit_per_s / best.mbit_per_s * 100.0
                } else {
                    0.0
                };
                (m.mix, pct)
            })
            .collect(),
    })
}

/// Writes `r` as `out/results.json`.
pub(crate) fn write(out: &Path, r: &FileResults) -> Result<(), String> {
    let p: PathBuf = out.join("results.json");
    let text = serde_json::to_string_pretty(r).map_err(|e| e.to_string())?;
    // Written whole or not at all (temporary file, then rename), as a web
    // suite's: a crash or Ctrl-C mid-write never leaves half a JSON file.
    let tmp = p.with_extension("json.tmp");
    std::fs::write(&tmp, text + "\n")
        .and_then(|()| std::fs::rename(&tmp, &p))
        .map_err(|e| format!("cannot write {}: {e}", p.display()))
}

/// A results directory's file-suite results: `Ok(None)` where its
/// results.json is missing, unreadable, not JSON or of another schema (a
/// web suite's: the web suites' loader then says what is wrong), an error
/// where it says it is a file suite's and is not what that schema says.
pub fn load(dir: &Path) -> Result<Option<FileResults>, String> {
    let p = dir.join("results.json");
    let Ok(text) = std::fs::read_to_string(&p) else {
        return Ok(None);
    };
    let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) else {
        return Ok(None);
    };
    if v.get("schema").and_then(|s| s.as_str()) != Some(FILE_RESULTS_SCHEMA) {
        return Ok(None);
    }
    let mut r: FileResults = serde_json::from_value(v)
        .map_err(|e| format!("{}: not a {FILE_RESULTS_SCHEMA} results file: {e}", p.display()))?;
    // Results written before passwords were redacted (issue 21) may hold
    // one: the reports made again from them do not.
    r.command = r.command.iter().map(|a| crate::smb::redact(a)).collect();
    for m in &mut r.mixes {
        m.target = crate::smb::redact(&m.target);
    }
    Ok(Some(r))
}

/// The samples of a mix's Mbit/s the noise of `compare` comes from: its
/// repeats' (`run --repeat N`), else its whole seconds inside the window
/// (a last part-second would read low), as for web suites. The word says
/// which.
fn noise_samples(m: &FileMixResult) -> (&'static str, Vec<f64>) {
    if m.repeats.len() >= 2 {
        return ("repeats", m.repeats.iter().map(|r| r.mbit_per_s).collect());
    }
    let whole = m.window_s.floor() as u64;
    (
        "seconds",
        m.per_second
            .iter()
            .filter(|s| s.second <= whole)
            .map(|s| s.mbit_per_s)
            .collect(),
    )
}

/// A comparison of two file suites' results.
#[derive(Debug, Clone, PartialEq)]
pub struct FileComparison {
    /// The table and the peak line, for the terminal and compare.txt.
    pub text: String,
    /// The peak's Mbit/s is worse beyond `max_regression` and the noise.
    pub regressed: bool,
}

/// Two file suites' results side by side, mix by mix (mixes are matched
/// by phase and position in it, and must have the same client count):
/// Mbit/s of each, NEW ÷ BASE and its interval at `confidence` from the
/// noise of both sides (each mix's repeats, else its seconds: see
/// [`noise_samples`]; Welch's t on the log ratio, as web suites'
/// `compare`), operations/s of each and their ratio; then the peaks', with
/// the verdict: regressed when NEW's peak Mbit/s is worse than BASE's
/// beyond both `max_regression` and the noise.
pub fn compare_text(
    base: &FileResults,
    new: &FileResults,
    max_regression: f64,
    confidence: f64,
) -> Result<FileComparison, String> {
    use std::fmt::Write;
    let ratio = |b: f64, n: f64| if b > 0.0 { format!("{:.3}", n / b) } else { "-".into() };
    let interval = |b: &FileMixResult, n: &FileMixResult| -> (Option<(f64, f64)>, String) {
        let ((bs, bv), (ns, nv)) = (noise_samples(b), noise_samples(n));
        let source = if bs == ns {
            format!("{}+{}_{bs}", bv.len(), nv.len())
        } else {
            format!("{}_{bs}+{}_{ns}", bv.len(), nv.len())
        };
        if b.mbit_per_s <= 0.0 {
            return (None, source);
        }
        (
            benchlab_results::noise::ratio_interval(n.mbit_per_s / b.mbit_per_s, &bv, &nv, confidence),
            source,
        )
    };
    let range = |i: Option<(f64, f64)>| i.map_or("-".to_string(), |(l, h)| format!("{l:.3}–{h:.3}"));
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:>5} {:>8} {:>7} {:>12} {:>12} {:>7} {:>13} {:>14} {:>12} {:>12} {:>7}",
        "phase",
        "mix",
        "clients",
        "base Mbit/s",
        "new Mbit/s",
        "ratio",
        "interval",
        "noise",
        "base ops/s",
        "new ops/s",
        "ratio"
    );
    let mut matched = 0;
    let position =
        |r: &FileResults, m: &FileMixResult| r.mixes.iter().filter(|o| o.phase == m.phase && o.mix < m.mix).count();
    for b in &base.mixes {
        let i = position(base, b);
        let Some(n) = new.mixes.iter().find(|n| n.phase == b.phase && position(new, n) == i) else {
            continue;
        };
        if n.clients != b.clients {
            return Err(format!(
                "phase {} mix {}: base ran {} clients, new {}: not the same suite",
                b.phase, b.mix, b.clients, n.clients
            ));
        }
        matched += 1;
        let (iv, source) = interval(b, n);
        let _ = writeln!(
            s,
            "{:>5} {:>8} {:>7} {:>12} {:>12} {:>7} {:>13} {:>14} {:>12} {:>12} {:>7}",
            b.phase,
            if b.mix == n.mix {
                b.mix.to_string()
            } else {
                format!("{}/{}", b.mix, n.mix)
            },
            b.clients,
            mbit_per_sec(b.mbit_per_s),
            mbit_per_sec(n.mbit_per_s),
            ratio(b.mbit_per_s, n.mbit_per_s),
            range(iv),
            source,
            requests_per_sec(b.operations_per_s),
            requests_per_sec(n.operations_per_s),
            ratio(b.operations_per_s, n.operations_per_s)
        );
    }
    if matched == 0 {
        return Err("no mix in common (mixes are matched by phase and position)".into());
    }
    let mut regressed = false;
    if let (Some(bp), Some(np)) = (&base.peak, &new.peak) {
        let at = |r: &FileResults, mix: usize| r.mixes.iter().find(|m| m.mix == mix).cloned();
        let verdict = match (at(base, bp.mix), at(new, np.mix)) {
            (Some(b), Some(n)) if bp.mbit_per_s > 0.0 => {
                let r = np.mbit_per_s / bp.mbit_per_s;
                let (iv, source) = interval(&b, &n);
                let v = benchlab_results::noise::regressed(r, iv, true, max_regression);
                regressed = v == benchlab_results::noise::Verdict::Regressed;
                format!(
                    " ({} at {} confidence; noise from {}): {}",
                    range(iv),
                    benchlab_format::percent(confidence * 100.0),
                    source.replace('_', " "),
                    v.word()
                )
            }
            _ => String::new(),
        };
        let _ = writeln!(
            s,
            "peak: {} Mbit/s (mix {}, {}) → {} Mbit/s (mix {}, {}), ratio {}{verdict}",
            mbit_per_sec(bp.mbit_per_s),
            bp.mix,
            plural(bp.clients.into(), "client", "clients"),
            mbit_per_sec(np.mbit_per_s),
            np.mix,
            plural(np.clients.into(), "client", "clients"),
            ratio(bp.mbit_per_s, np.mbit_per_s)
        );
    }
    Ok(FileComparison { text: s, regressed })
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A self-contained report page: Mbit/s per mix (a bar chart and a
/// table), the peak and the shape past it, operations by kind with their
/// latency at the peak, errors, and per-client Mbit/s.
pub fn html(r: &FileResults) -> String {
    use std::fmt::Write;
    let mut h = String::new();
    let _ = write!(
        h,
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>{} — benchlab file suite</title>\
         <style>body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:2px 6px;text-align:right}}th{{background:#eee}}</style></head><body>",
        esc(&r.suite)
    );
    let _ = write!(h, "<h1>{}</h1><p>{}</p>", esc(&r.suite), esc(&r.description));
    if let Some(p) = &r.peak {
        let _ = write!(
            h,
            "<p id=\"peak\">Peak: mix {} ({}), {} Mbit/s.",
            p.mix,
            plural(p.clients.into(), "client", "clients"),
            mbit_per_sec(p.mbit_per_s)
        );
        if !p.past_peak.is_empty() {
            let shape: Vec<String> = p
                .past_peak
                .iter()
                .map(|(m, pct)| format!("mix {m}: {}", percent(*pct)))
                .collect();
            let _ = write!(h, " Past the peak: {}.", shape.join(", "));
        }
        h.push_str("</p>");
    }
    // Mbit/s per mix: one bar each.
    let max = r.mixes.iter().map(|m| m.mbit_per_s).fold(0.0, f64::max).max(1e-9);
    let (bw, ht) = (40.0, 200.0);
    let width = bw * r.mixes.len().max(1) as f64 + 20.0;
    let _ = write!(
        h,
        "<h2>Mbit/s per mix</h2><svg id=\"mbit-chart\" width=\"{width}\" height=\"{}\">",
        ht + 30.0
    );
    for (i, m) in r.mixes.iter().enumerate() {
        let bh = m.mbit_per_s / max * ht;
        let x = 10.0 + i as f64 * bw;
        let _ = write!(
            h,
            "<rect x=\"{x}\" y=\"{}\" width=\"{}\" height=\"{bh}\" fill=\"#4a7\"><title>mix {}: {} Mbit/s</title></rect>\
             <text x=\"{}\" y=\"{}\" font-size=\"10\">{}</text>",
            ht - bh,
            bw - 6.0,
            m.mix,
            mbit_per_sec(m.mbit_per_s),
            x + 4.0,
            ht + 14.0,
            m.clients
        );
    }
    h.push_str("</svg>");
    h.push_str(
        "<table id=\"mixes\"><tr><th>mix</th><th>phase</th><th>clients</th><th>Mbit/s</th><th>read Mbit/s</th>\
         <th>write Mbit/s</th><th>ops/s</th><th>operations</th><th>errors</th><th>loops</th><th>fairness</th></tr>",
    );
    for m in &r.mixes {
        let _ = write!(
            h,
            "<tr><td>{}{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            m.mix,
            if m.partial { " (partial)" } else { "" },
            esc(&m.phase),
            thousands(m.clients.into()),
            mbit_per_sec(m.mbit_per_s),
            mbit_per_sec(m.read_mbit_per_s),
            mbit_per_sec(m.write_mbit_per_s),
            requests_per_sec(m.operations_per_s),
            thousands(m.operations),
            thousands(m.errors),
            thousands(m.loops),
            ratio(m.fairness)
        );
    }
    h.push_str("</table>");
    for m in &r.mixes {
        let _ = write!(h, "<h2>Mix {} — operations (latency in µs)</h2>", m.mix);
        h.push_str("<table><tr><th>operation</th><th>count</th><th>errors</th><th>not sent</th><th>/s</th><th>mean</th><th>p50</th><th>p90</th><th>p99</th><th>max</th></tr>");
        for o in &m.by_operation {
            let l = &o.latency_us;
            let _ = write!(
                h,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                o.operation,
                thousands(o.count),
                thousands(o.errors),
                thousands(o.not_sent),
                requests_per_sec(o.per_second),
                mean_us(l.mean),
                thousands(l.p50),
                thousands(l.p90),
                thousands(l.p99),
                thousands(l.max)
            );
        }
        h.push_str("</table>");
        if m.not_sent > 0 {
            let _ = write!(
                h,
                "<p class=\"not-sent\">{} not sent: the client has no call for them over this protocol \
                 (libsmbclient has no byte-range lock and no Flush); they are in neither the operations nor the \
                 errors, and nothing was timed.</p>",
                plural(m.not_sent, "operation", "operations")
            );
        }
        if !m.errors_by_status.is_empty() {
            h.push_str("<p>Errors:</p><ul>");
            for (k, v) in &m.errors_by_status {
                let _ = write!(h, "<li>{}: {}</li>", esc(k), thousands(*v));
            }
            h.push_str("</ul>");
        }
        let per: Vec<String> = m
            .per_client
            .iter()
            .map(|c| format!("{}: {}", c.client, mbit_per_sec(c.mbit_per_s)))
            .collect();
        let _ = write!(h, "<p>Mbit/s per client: {}</p>", per.join(", "));
    }
    h.push_str("</body></html>\n");
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(mix: usize, mbit: f64) -> FileMixResult {
        FileMixResult {
            mix,
            phase: "p".into(),
            workload: "w".into(),
            target: "file:///x".into(),
            clients: mix as u32,
            users: mix as u32,
            window_s: 1.0,
            operations: 0,
            operations_per_s: 0.0,
            bytes_read: 0,
            bytes_written: 0,
            bytes_per_s: 0.0,
            mbit_per_s: mbit,
            read_mbit_per_s: 0.0,
            write_mbit_per_s: 0.0,
            errors: 0,
            not_sent: 0,
            errors_by_status: BTreeMap::new(),
            loops: 0,
            prepared_bytes: 0,
            by_operation: vec![],
            per_client: vec![],
            fairness: 1.0,
            partial: false,
            per_second: vec![],
            repeats: vec![],
        }
    }

    #[test]
    fn the_peak_and_the_shape_past_it() {
        let p = peak(&[m(1, 10.0), m(2, 40.0), m(3, 30.0), m(4, 20.0)]).unwrap();
        assert_eq!((p.mix, p.clients), (2, 2));
        assert_eq!(p.past_peak, vec![(3, 75.0), (4, 50.0)]);
        let r = FileResults {
            schema: FILE_RESULTS_SCHEMA.into(),
            kind: "file".into(),
            suite: "s<".into(),
            description: String::new(),
            started: 0,
            command: vec![],
            mixes: vec![m(1, 10.0), m(2, 40.0)],
            peak: Some(p),
            interrupted: false,
        };
        let page = html(&r);
        assert!(page.contains("<h1>s&lt;</h1>"));
        assert!(page.contains("Peak: mix 2 (2 clients), 40.0 Mbit/s."));
        assert!(page.contains("<td>40.0</td>"));
    }

    fn results(mixes: Vec<FileMixResult>) -> FileResults {
        FileResults {
            schema: FILE_RESULTS_SCHEMA.into(),
            kind: "file".into(),
            suite: "s".into(),
            description: String::new(),
            started: 0,
            command: vec![],
            peak: peak(&mixes),
            mixes,
            interrupted: false,
        }
    }

    #[test]
    fn results_json_reads_back_and_other_schemas_are_none() {
        let dir = tempfile::tempdir().unwrap();
        let r = results(vec![m(1, 10.0), m(2, 40.0)]);
        write(dir.path(), &r).unwrap();
        assert_eq!(load(dir.path()).unwrap(), Some(r));
        std::fs::write(dir.path().join("results.json"), r#"{"schema":"benchlab.results/1"}"#).unwrap();
        assert_eq!(load(dir.path()).unwrap(), None);
        std::fs::write(
            dir.path().join("results.json"),
            r#"{"schema":"benchlab.file-results/1"}"#,
        )
        .unwrap();
        let e = load(dir.path()).unwrap_err();
        assert!(e.contains("not a benchlab.file-results/1 results file"), "{e}");
        // An older results.json with an SMB password reads back without it.
        let mut old = results(vec![m(1, 10.0)]);
        old.mixes[0].target = "smb://u:SECRETPW@h:445/s".into();
        old.command = vec!["benchlab".into(), "--target=smb://u:SECRETPW@h/s".into()];
        std::fs::write(dir.path().join("results.json"), serde_json::to_string(&old).unwrap()).unwrap();
        let back = load(dir.path()).unwrap().unwrap();
        assert_eq!(back.mixes[0].target, "smb://u:***@h:445/s");
        assert_eq!(back.command[1], "--target=smb://u:***@h/s");
    }

    #[test]
    fn compare_gives_the_ratio_of_each_mix_and_of_the_peaks() {
        let mut b = results(vec![m(1, 10.0), m(2, 40.0)]);
        b.mixes[1].operations_per_s = 1000.0;
        let mut n = results(vec![m(1, 12.0), m(2, 30.0)]);
        n.mixes[1].operations_per_s = 1500.0;
        let c = compare_text(&b, &n, 0.05, 0.95).unwrap();
        let t = &c.text;
        let lines: Vec<Vec<&str>> = t.lines().map(|l| l.split_whitespace().collect()).collect();
        // No seconds, no repeats: no noise, no interval.
        assert_eq!(
            lines[1],
            [
                "p",
                "1",
                "1",
                "10.0",
                "12.0",
                "1.200",
                "-",
                "0+0_seconds",
                "0.0",
                "0.0",
                "-"
            ]
        );
        assert_eq!(
            lines[2],
            [
                "p",
                "2",
                "2",
                "40.0",
                "30.0",
                "0.750",
                "-",
                "0+0_seconds",
                "1,000.0",
                "1,500.0",
                "1.500"
            ]
        );
        assert!(
            t.contains("peak: 40.0 Mbit/s (mix 2, 2 clients) → 30.0 Mbit/s (mix 2, 2 clients), ratio 0.750"),
            "{t}"
        );
        assert!(c.regressed, "0.75 with no noise is a regression beyond 5 %");
        let mut other = n.clone();
        other.mixes[0].clients = 5;
        assert!(compare_text(&b, &other, 0.05, 0.95)
            .unwrap_err()
            .contains("base ran 1 clients, new 5"));
        other.mixes.iter_mut().for_each(|m| m.phase = "q".into());
        assert!(compare_text(&b, &other, 0.05, 0.95)
            .unwrap_err()
            .contains("no mix in common"));
    }

    fn repeated(mix: usize, runs: &[f64]) -> FileMixResult {
        let mut r = m(mix, runs[(runs.len() - 1) / 2]);
        r.repeats = runs
            .iter()
            .map(|&v| FileRepeat {
                mbit_per_s: v,
                operations_per_s: 0.0,
            })
            .collect();
        r
    }

    /// The noise of the repeats decides: a 10 % drop within runs that
    /// scatter by ±20 % is no regression; the same drop between tight
    /// runs is one; a drop within --max-regression never is.
    #[test]
    fn compare_reads_the_ratio_against_the_noise_of_the_repeats() {
        let base = results(vec![repeated(1, &[80.0, 100.0, 120.0])]);
        let noisy = results(vec![repeated(1, &[70.0, 90.0, 110.0])]);
        let c = compare_text(&base, &noisy, 0.05, 0.95).unwrap();
        assert!(!c.regressed, "{}", c.text);
        assert!(c.text.contains("noise from 3+3 repeats): unchanged"), "{}", c.text);
        let tight = results(vec![repeated(1, &[99.0, 100.0, 101.0])]);
        let dropped = results(vec![repeated(1, &[89.0, 90.0, 91.0])]);
        let c = compare_text(&tight, &dropped, 0.05, 0.95).unwrap();
        assert!(c.regressed, "{}", c.text);
        assert!(c.text.contains("): regressed"), "{}", c.text);
        assert!(!compare_text(&tight, &dropped, 0.15, 0.95).unwrap().regressed);
    }

    /// A mix run once takes its whole seconds as samples (not a last part
    /// of one), and `repeat` picks the median run with every run's figures.
    #[test]
    fn seconds_are_the_samples_of_a_single_run_and_the_median_run_is_kept() {
        let mut a = m(1, 10.0);
        a.window_s = 2.5;
        a.per_second = [9.0, 11.0, 2.0]
            .iter()
            .enumerate()
            .map(|(i, &v)| FileSecond {
                second: i as u64 + 1,
                operations: 0,
                errors: 0,
                bytes_read: 0,
                bytes_written: 0,
                mbit_per_s: v,
            })
            .collect();
        assert_eq!(noise_samples(&a), ("seconds", vec![9.0, 11.0]));
        let runs = vec![m(1, 30.0), m(1, 10.0), m(1, 20.0)];
        let med = median_run(runs).unwrap();
        assert_eq!(med.mbit_per_s, 20.0);
        let r: Vec<f64> = med.repeats.iter().map(|r| r.mbit_per_s).collect();
        assert_eq!(r, [30.0, 10.0, 20.0]);
        assert_eq!(median_run(vec![m(1, 5.0)]).unwrap().repeats, vec![]);
        assert!(median_run(vec![]).is_none());
    }
}
