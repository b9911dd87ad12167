//! The outputs: the workload file (TOML, with the figures as header
//! comments) and the report for people.

use crate::scan::{LogScan, OTHER_STATUS_CLASSES};
use crate::select::{percent, Cover, Selection};
use benchlab_format::thousands;
use std::fmt::Write as _;
use std::io::{self, Write};

/// What the selection was asked for, echoed in the outputs.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    pub cover: Cover,
    pub max_urls: Option<usize>,
    pub strip_query: bool,
}

impl Settings {
    fn describe(&self) -> String {
        let cap = match self.max_urls {
            Some(n) => format!("at most {n} URLs"),
            None => "no URL cap".to_owned(),
        };
        let query = if self.strip_query {
            "query strings stripped"
        } else {
            "query strings kept"
        };
        format!("cover {}, {cap}, {query}", self.cover)
    }
}

/// A TOML basic string: quotes, backslashes and control characters escaped;
/// everything else (percent-encoding included) kept as it is.
pub fn toml_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Text safe for a TOML comment or a terminal: control characters escaped.
fn printable(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// Writes the workload: header comments with the figures, then one static
/// class holding the kept URLs with their request counts as weights and
/// their sizes where known — listed, or with `url_file` naming the file
/// of URLs written beside it (a large workload, docs/workloads.md).
pub fn write_workload<W: Write>(
    mut w: W,
    source: &str,
    scan: &LogScan,
    sel: &Selection,
    settings: &Settings,
    url_file: Option<&str>,
) -> io::Result<()> {
    let other: u64 = scan.other_status.iter().sum();
    writeln!(
        w,
        "# benchlab workload, from-log: {}, {} of {} URLs cover {:.1} % of {} successful GETs",
        printable(source),
        sel.kept.len(),
        sel.distinct,
        sel.request_share(),
        sel.total_requests
    )?;
    writeln!(
        w,
        "# bytes: the kept URLs draw {:.1} % of the {} body bytes logged",
        sel.byte_share(),
        sel.total_bytes
    )?;
    match sel.mean_size() {
        Some(mean) => writeln!(
            w,
            "# mean size: {mean:.0} bytes, request-weighted over the kept URLs' sizes{}",
            unsized_note(sel.kept_unsized)
        )?,
        None => writeln!(w, "# mean size: unknown (no kept URL has a logged 200 size)")?,
    }
    writeln!(
        w,
        "# concentration: the top 10 % of URLs ({}) draw {:.1} % of successful GETs (Arlitt and Williamson: 90 %)",
        sel.top_tenth,
        sel.concentration()
    )?;
    writeln!(
        w,
        "# log: {} lines, {} malformed, {} non-GET, {} GETs with other statuses; {} of the successful GETs were 304",
        scan.lines, scan.malformed, scan.non_get, other, scan.not_modified
    )?;
    if scan.absolute_reduced > 0 || scan.not_urls > 0 {
        writeln!(
            w,
            "# {}; {} skipped (no URL: `*` or host:port)",
            absolute_note(scan.absolute_reduced),
            scan.not_urls
        )?;
    }
    writeln!(w, "# selection: {}", settings.describe())?;
    writeln!(w, "name = \"from-log\"")?;
    writeln!(w)?;
    writeln!(w, "[[class]]\nname = \"static\"\npercent = 100.0\nkind = \"static\"")?;
    if let Some(file) = url_file {
        writeln!(w, "url_file = {}", toml_string(file))?;
        return w.flush();
    }
    for r in &sel.kept {
        writeln!(
            w,
            "\n[[class.url]]\npath = {}\nweight = {}",
            toml_string(&r.path),
            r.requests
        )?;
        if let Some(size) = r.size {
            writeln!(w, "size = {size}")?;
        }
    }
    w.flush()
}

/// "N absolute URLs reduced to their paths", the words of the summary.
fn absolute_note(n: u64) -> String {
    match n {
        1 => "1 absolute URL reduced to its path".to_owned(),
        n => format!("{} absolute URLs reduced to their paths", thousands(n)),
    }
}

/// Kept URLs without a size are left out of the mean: say how many.
fn unsized_note(n: usize) -> String {
    match n {
        0 => String::new(),
        1 => "; 1 kept URL has no size (only 304s or '-')".to_owned(),
        n => format!("; {n} kept URLs have no size (only 304s or '-')"),
    }
}

/// How many top URLs the report lists.
const REPORT_TOP: usize = 10;

/// The report for people: what was read, what was kept, and the figures.
pub fn report(source: &str, scan: &LogScan, sel: &Selection, settings: &Settings) -> String {
    let mut s = String::new();
    let n = thousands;
    let pct = |part: u64| format!("{:.1} %", percent(part, scan.lines));
    let kind = if scan.gzip {
        format!(
            "gzip, {} bytes compressed, {} bytes of text",
            n(scan.file_bytes),
            n(scan.text_bytes)
        )
    } else {
        format!("{} bytes", n(scan.text_bytes))
    };
    let _ = writeln!(s, "access log: {} ({kind})", printable(source));
    if let Some(e) = &scan.truncated {
        let _ = writeln!(
            s,
            "warning: the gzip stream breaks off ({e}); the lines before the break are counted"
        );
    }
    let _ = writeln!(s, "lines                {:>14}", n(scan.lines));
    let _ = writeln!(
        s,
        "  malformed          {:>14}  {}",
        n(scan.malformed),
        pct(scan.malformed)
    );
    let methods: Vec<String> = scan
        .methods
        .iter()
        .map(|(m, c)| format!("{} {}", printable(m), n(*c)))
        .collect();
    let _ = writeln!(
        s,
        "  non-GET            {:>14}  {}  {}",
        n(scan.non_get),
        pct(scan.non_get),
        methods.join(", ")
    );
    let other: u64 = scan.other_status.iter().sum();
    let classes: Vec<String> = OTHER_STATUS_CLASSES
        .iter()
        .zip(scan.other_status)
        .filter(|(_, c)| *c > 0)
        .map(|(name, c)| format!("{name} {}", n(c)))
        .collect();
    let _ = writeln!(
        s,
        "  GET, other status  {:>14}  {}  {}",
        n(other),
        pct(other),
        classes.join(", ")
    );
    let _ = writeln!(
        s,
        "  successful GET     {:>14}  {}  (2xx and 304; 304: {})",
        n(scan.ok_gets),
        pct(scan.ok_gets),
        n(scan.not_modified)
    );
    if scan.not_urls > 0 {
        let _ = writeln!(
            s,
            "  GET, not a URL     {:>14}  {}  (`*` or host:port: skipped)",
            n(scan.not_urls),
            pct(scan.not_urls)
        );
    }
    if scan.absolute_reduced > 0 {
        // A proxy's log names other hosts; a workload's URLs are paths on
        // whatever target runs it.
        let _ = writeln!(s, "{} (of the successful GETs)", absolute_note(scan.absolute_reduced));
    }
    let _ = writeln!(
        s,
        "distinct URLs        {:>14}  requested once: {} ({:.1} %)",
        n(sel.distinct as u64),
        n(sel.once as u64),
        percent(sel.once as u64, sel.distinct as u64)
    );
    let _ = writeln!(
        s,
        "kept URLs            {:>14}  ({})",
        n(sel.kept.len() as u64),
        settings.describe()
    );
    let _ = writeln!(
        s,
        "  share of requests  {:>12.1} %  {} of {}",
        sel.request_share(),
        n(sel.kept_requests),
        n(sel.total_requests)
    );
    let _ = writeln!(
        s,
        "  share of bytes     {:>12.1} %  {} of {}",
        sel.byte_share(),
        n(sel.kept_bytes),
        n(sel.total_bytes)
    );
    match sel.mean_size() {
        Some(mean) => {
            let _ = writeln!(
                s,
                "  mean size          {:>12} B  request-weighted over recorded sizes{}",
                n(mean.round() as u64),
                unsized_note(sel.kept_unsized)
            );
        }
        None => {
            let _ = writeln!(
                s,
                "  mean size          {:>14}  no kept URL has a logged 200 size",
                "unknown"
            );
        }
    }
    let _ = writeln!(
        s,
        "concentration        {:>12.1} %  of requests go to the top 10 % of URLs ({}); Arlitt and Williamson found 90 %",
        sel.concentration(),
        n(sel.top_tenth as u64)
    );
    if !sel.kept.is_empty() {
        let shown = sel.kept.len().min(REPORT_TOP);
        let _ = writeln!(s, "top {shown} URLs:");
        for (i, r) in sel.kept.iter().take(shown).enumerate() {
            let size = r
                .size
                .map_or_else(|| "size unknown".to_owned(), |z| format!("{} B", n(z)));
            let _ = writeln!(
                s,
                "  {:>3}. {:>12} {:>6.2} %  {:>14}  {}",
                i + 1,
                n(r.requests),
                percent(r.requests, sel.total_requests),
                size,
                printable(&r.path)
            );
        }
    }
    if scan.malformed > 0 {
        let _ = writeln!(
            s,
            "malformed lines (first {} of {}):",
            scan.malformed_sample.len(),
            n(scan.malformed)
        );
        for m in &scan.malformed_sample {
            let _ = writeln!(
                s,
                "  line {}: {}: {}",
                m.line,
                m.reason.describe(),
                printable(&m.excerpt)
            );
        }
    }
    // Empty lists leave trailing blanks in the table rows.
    s.lines().map(|l| format!("{}\n", l.trim_end())).collect()
}

/// The parse rate, for stderr.
pub fn rate_line(scan: &LogScan) -> String {
    let secs = scan.elapsed.as_secs_f64();
    if scan.gzip {
        format!(
            "parsed {:.1} MB of log text from {:.1} MB of gzip in {secs:.2} s: {:.1} MB/s of text, {:.1} MB/s of gzip",
            scan.text_bytes as f64 / 1e6,
            scan.file_bytes as f64 / 1e6,
            scan.text_rate_mb_s(),
            scan.file_rate_mb_s()
        )
    } else {
        format!(
            "parsed {:.1} MB in {secs:.2} s: {:.1} MB/s",
            scan.text_bytes as f64 / 1e6,
            scan.text_rate_mb_s()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toml_strings_round_trip() {
        for path in [
            "/index.html",
            "/a\"b\\c",
            "/tab\there",
            "/nl\n\r\u{1}\u{7f}",
            "/é%20x",
            "/\u{85}",
        ] {
            let doc = format!("p = {}", toml_string(path));
            let v: toml::Table = toml::from_str(&doc).unwrap_or_else(|e| panic!("{doc}: {e}"));
            assert_eq!(v["p"].as_str(), Some(path), "{doc}");
        }
        assert_eq!(toml_string("/a%22b"), "\"/a%22b\"");
    }
}
