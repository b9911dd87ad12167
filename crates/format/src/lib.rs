//! # benchlab-format
//!
//! The one way benchlab writes numbers for people: the terminal summaries,
//! the HTML report and the XLSX workbook all format through this crate, so
//! a quantity reads the same wherever it appears.
//!
//! - Every count and rate has thousands separators (`120,306`), whatever
//!   its size.
//! - Each quantity has one number of decimals, defined once in
//!   [`Quantity`] (docs/reports.md, "Numbers", lists them): requests/s
//!   1, MB/s 2, Mbit/s 1, latency percentiles 0 (whole µs), mean latency 1,
//!   percentages 1, seconds 2, ratios 3.
//! - A count names its unit in the singular for exactly one (`1 client`,
//!   `2 clients`): [`plural`].
//! - Booleans are words for people ([`yes_no`]); the workbook writes them as
//!   spreadsheet booleans.
//!
//! Machine formats (results.json, summary.csv, clients.csv, `--json`) keep
//! plain numbers without separators; nothing here is used for them.
//!
//! No dependencies: every crate that prints numbers (even the access-log
//! reader) can use it without pulling in the engine.

/// A kind of number people read, with its decimals and its spreadsheet
/// number format. The single place where "how many decimals" is decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quantity {
    /// Requests, errors, bytes, connections, threads, clients, latency
    /// percentiles in µs (whole numbers).
    Count,
    /// Requests per second.
    RequestsPerSec,
    /// Megabytes (10⁶ bytes) per second.
    MBytesPerSec,
    /// Megabits (10⁶ bits) per second.
    MbitPerSec,
    /// A mean latency (or CPU time per request) in µs.
    MeanMicros,
    /// A percentage (0–100), written with ` %`.
    Percent,
    /// Seconds (durations, CPU time).
    Seconds,
    /// A ratio such as min ÷ mean.
    Ratio,
}

impl Quantity {
    /// Digits after the decimal point.
    pub const fn decimals(self) -> usize {
        match self {
            Quantity::Count => 0,
            Quantity::RequestsPerSec | Quantity::MbitPerSec | Quantity::MeanMicros | Quantity::Percent => 1,
            Quantity::MBytesPerSec | Quantity::Seconds => 2,
            Quantity::Ratio => 3,
        }
    }

    /// The value as people read it: rounded to the quantity's decimals,
    /// thousands separators in the integer part, `–` when not finite.
    pub fn format(self, v: f64) -> String {
        let s = fixed(v, self.decimals());
        if self == Quantity::Percent && v.is_finite() {
            format!("{s} %")
        } else {
            s
        }
    }

    /// The spreadsheet (Excel) number format showing the same decimals and
    /// separators; the cell keeps the exact value.
    pub const fn excel_format(self) -> &'static str {
        match self {
            Quantity::Count => "#,##0",
            Quantity::RequestsPerSec | Quantity::MbitPerSec | Quantity::MeanMicros | Quantity::Percent => "#,##0.0",
            Quantity::MBytesPerSec | Quantity::Seconds => "#,##0.00",
            Quantity::Ratio => "0.000",
        }
    }
}

/// `1234567` → `1,234,567`.
pub fn thousands(n: u64) -> String {
    group(&n.to_string())
}

/// `v` with `decimals` digits after the point and thousands separators
/// (`fixed(19552.84, 1)` → `19,552.8`); `–` when `v` is not finite.
pub fn fixed(v: f64, decimals: usize) -> String {
    if !v.is_finite() {
        return "–".into();
    }
    let s = format!("{v:.decimals$}");
    // `-0.0` rounds to "-0.0": no one measured a negative nothing.
    let s = match s.strip_prefix('-') {
        Some(rest) if rest.bytes().all(|b| b == b'0' || b == b'.') => rest.to_string(),
        _ => s,
    };
    group(&s)
}

/// Requests per second, [`Quantity::RequestsPerSec`].
pub fn requests_per_sec(v: f64) -> String {
    Quantity::RequestsPerSec.format(v)
}

/// Bytes per second shown as MB/s (10⁶ bytes), [`Quantity::MBytesPerSec`].
pub fn mbytes_per_sec(bytes_per_sec: f64) -> String {
    Quantity::MBytesPerSec.format(bytes_per_sec / 1e6)
}

/// Megabits per second, [`Quantity::MbitPerSec`].
pub fn mbit_per_sec(v: f64) -> String {
    Quantity::MbitPerSec.format(v)
}

/// A mean in µs, [`Quantity::MeanMicros`].
pub fn mean_us(v: f64) -> String {
    Quantity::MeanMicros.format(v)
}

/// A percentage 0–100: `97.4 %`.
pub fn percent(v: f64) -> String {
    Quantity::Percent.format(v)
}

/// A share 0–1 as a percentage: `0.974` → `97.4 %`.
pub fn share(x: f64) -> String {
    percent(x * 100.0)
}

/// Seconds, [`Quantity::Seconds`].
pub fn seconds(v: f64) -> String {
    Quantity::Seconds.format(v)
}

/// A ratio, [`Quantity::Ratio`].
pub fn ratio(v: f64) -> String {
    Quantity::Ratio.format(v)
}

/// A count with its unit, singular for exactly one: `plural(1, "client",
/// "clients")` → `1 client`, `plural(1200, …)` → `1,200 clients`.
pub fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{} {}", thousands(n), if n == 1 { one } else { many })
}

/// A boolean for people: `yes` or `no`.
pub fn yes_no(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

/// Inserts thousands separators into the integer part of a number already
/// written as decimal text (`19552.8` → `19,552.8`), keeping every digit:
/// the text still parses to the same number once the commas are removed.
/// Text that is not a plain decimal number comes back unchanged.
pub fn group(s: &str) -> String {
    let (sign, rest) = match s.strip_prefix('-') {
        Some(r) => ("-", r),
        None => ("", s),
    };
    let (int, frac) = match rest.find(['.', 'e', 'E']) {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    if int.len() <= 3 || !int.bytes().all(|b| b.is_ascii_digit()) {
        return s.to_string();
    }
    let mut o = String::with_capacity(s.len() + int.len() / 3);
    o.push_str(sign);
    let first = int.len() % 3;
    for (i, ch) in int.chars().enumerate() {
        if i > 0 && (i + 3 - first) % 3 == 0 {
            o.push(',');
        }
        o.push(ch);
    }
    o.push_str(frac);
    o
}

/// A column name of a machine format (`latency_p50_us`, `errors_timeout`)
/// in words with its unit, for a spreadsheet or table header: `Latency p50
/// (µs)`, `Errors: timeout`. Known columns have fixed titles; any other is
/// spelled out from its parts, so a column added later still reads as words.
pub fn column_title(key: &str) -> String {
    let known = match key {
        "run" => "Run",
        "mix" => "Mix",
        "phase" => "Phase",
        "client" => "Client",
        "class" => "Class",
        "kind" => "Kind",
        "spi" => "SPI",
        "address" => "Address",
        "clients" => "Clients",
        "clients_participating" => "Clients taking part",
        "threads" => "Threads",
        "partial" => "Partial",
        "taken_out" => "Taken out",
        "window_s" => "Window (s)",
        "requests" => "Requests",
        "requests_per_sec" => "Requests/s",
        "bytes" => "Bytes",
        "bytes_per_sec" => "Bytes/s",
        "mbytes_per_sec" => "MB/s",
        "mbit_per_sec" => "Mbit/s",
        "latency_mean_us" => "Latency mean (µs)",
        "latency_p50_us" => "Latency p50 (µs)",
        "latency_p90_us" => "Latency p90 (µs)",
        "latency_p99_us" => "Latency p99 (µs)",
        "latency_p999_us" => "Latency p99.9 (µs)",
        "latency_max_us" => "Latency max (µs)",
        "errors_total" => "Errors",
        "reconnects" => "Reconnects",
        "in_flight" => "In flight at the end",
        "connections_opened" => "Connections opened",
        "delay_s" => "Delay (s)",
        "cpu_s" => "CPU (s)",
        "client_cpu_s" => "Client CPU (s)",
        "client_cpu_percent" => "Client CPU (% of its cores)",
        "client_cpu_cores" => "Client cores",
        "client_cpu_us_per_request" => "Client CPU per request (µs)",
        "client_bound" => "Client-bound",
        "search_step" => "Peak search step",
        "search_kind" => "Peak search: grow or bisect",
        "percent" => "Configured share (%)",
        "observed_percent" => "Observed share (%)",
        "threads_per_client" => "Threads per client",
        "ramp_up_s" => "Ramp-up (s)",
        "ramp_down_s" => "Ramp-down (s)",
        "length_s" => "Length (s)",
        "think_time_s" => "Think time (s)",
        "receive_buffer" => "Receive buffer (bytes)",
        "http10_percent" => "HTTP/1.0 (%)",
        "http10_keepalive" => "HTTP/1.0 keep-alive",
        "persistent_percent" => "Persistent connections (%)",
        "requests_per_connection" => "Requests per connection",
        "timeout_s" => "Timeout (s)",
        "workload" => "Workload",
        "target" => "Target",
        "arrival" => "Arrival",
        "offered_rate_per_sec" => "Offered rate (requests/s)",
        "sends_per_sec" => "Sends/s (achieved)",
        "sends" => "Sends",
        "late_sends" => "Late sends",
        "late_percent" => "Late sends (%)",
        "max_in_flight" => "In-flight cap",
        "max_in_flight_hit" => "Waits at the in-flight cap",
        "unsent" => "Due, never sent",
        "latency_as_sent_p50_us" => "As-sent latency p50 (µs)",
        "latency_as_sent_p99_us" => "As-sent latency p99 (µs)",
        "peak_connections" => "Most connections open at once",
        "peak_connections_upper_bound" => "Most open is a sum of clients' peaks",
        _ => "",
    };
    if !known.is_empty() {
        return known.to_string();
    }
    if let Some(kind) = key.strip_prefix("errors_") {
        return format!("Errors: {}", kind.replace('_', " "));
    }
    spell_out(key)
}

/// The quantity of a machine-format column (`requests_per_sec`,
/// `latency_mean_us`, `window_s` …), for the decimals a spreadsheet shows;
/// `None` for a column that is not a measured number (text, booleans, a
/// setting such as a configured share, a mix number).
pub fn column_quantity(key: &str) -> Option<Quantity> {
    Some(match key {
        "mix"
        | "client"
        | "run"
        | "phase"
        | "class"
        | "kind"
        | "spi"
        | "address"
        | "partial"
        | "taken_out"
        | "client_bound"
        | "search_step"
        | "search_kind"
        | "workload"
        | "target"
        | "requests_per_connection"
        | "percent"
        | "http10_percent"
        | "persistent_percent"
        | "http10_keepalive"
        | "arrival"
        | "max_in_flight"
        | "peak_connections_upper_bound" => return None,
        "requests_per_sec" | "offered_rate_per_sec" | "sends_per_sec" => Quantity::RequestsPerSec,
        "mbytes_per_sec" => Quantity::MBytesPerSec,
        "mbit_per_sec" => Quantity::MbitPerSec,
        k if k.ends_with("_mean_us") || k.ends_with("us_per_request") => Quantity::MeanMicros,
        k if k.ends_with("_percent") => Quantity::Percent,
        k if k.ends_with("_s") => Quantity::Seconds,
        _ => Quantity::Count,
    })
}

/// `some_key_per_sec_us` → `Some key/s (µs)`: unit suffixes become units in
/// parentheses, the other underscores spaces, the first letter a capital.
fn spell_out(key: &str) -> String {
    let (stem, unit) = [
        ("_us", " (µs)"),
        ("_s", " (s)"),
        ("_percent", " (%)"),
        ("_bytes", " (bytes)"),
    ]
    .iter()
    .find_map(|(suffix, unit)| key.strip_suffix(suffix).map(|stem| (stem, *unit)))
    .unwrap_or((key, ""));
    let stem = stem.replace("_per_sec", "/s").replace('_', " ");
    let mut chars = stem.chars();
    let first: String = chars.next().map(|c| c.to_uppercase().collect()).unwrap_or_default();
    format!("{first}{}{unit}", chars.as_str())
}

/// A rate as the user wrote it (`--rate`, a mix's `rate`), with thousands
/// separators and no trailing zeros: `2,000`, `0.5`, `1,234.25`.
pub fn rate(r: f64) -> String {
    if r.fract() == 0.0 && r >= 0.0 && r < u64::MAX as f64 {
        thousands(r as u64)
    } else {
        let frac = format!("{:.6}", r.fract().abs());
        format!(
            "{}{}",
            thousands(r.trunc().abs() as u64),
            frac.trim_start_matches('0').trim_end_matches('0')
        )
    }
}

#[cfg(test)]
mod tests {
    use super::rate;

    #[test]
    fn rates_as_written() {
        assert_eq!(rate(2000.0), "2,000");
        assert_eq!(rate(0.5), "0.5");
        assert_eq!(rate(1234.25), "1,234.25");
        assert_eq!(rate(10_000_000.0), "10,000,000");
    }

    use super::*;

    #[test]
    fn thousands_groups_every_size() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(120306), "120,306");
        assert_eq!(thousands(1234567), "1,234,567");
        assert_eq!(thousands(u64::MAX), "18,446,744,073,709,551,615");
    }

    #[test]
    fn grouping_keeps_digits() {
        assert_eq!(group("19552.8"), "19,552.8");
        assert_eq!(group("188716424.8"), "188,716,424.8");
        assert_eq!(group("-1234"), "-1,234");
        assert_eq!(group("999"), "999");
        assert_eq!(group("123456"), "123,456");
        assert_eq!(group("1e21"), "1e21");
        assert_eq!(group("abc1234"), "abc1234");
    }

    #[test]
    fn each_quantity_has_its_decimals() {
        // The README's sample said `120306.0 req/s`.
        assert_eq!(requests_per_sec(120306.0), "120,306.0");
        assert_eq!(requests_per_sec(18679.449), "18,679.4");
        assert_eq!(mbytes_per_sec(282_434_000.0), "282.43");
        assert_eq!(mbytes_per_sec(4_055_950_000.0), "4,055.95");
        assert_eq!(mbit_per_sec(32447.62), "32,447.6");
        assert_eq!(mean_us(1603.84), "1,603.8");
        assert_eq!(percent(97.44), "97.4 %");
        assert_eq!(share(0.5), "50.0 %");
        assert_eq!(seconds(2.0), "2.00");
        assert_eq!(ratio(0.8351), "0.835");
        assert_eq!(fixed(-0.04, 1), "0.0");
        assert_eq!(fixed(-1234.5, 1), "-1,234.5");
        assert_eq!(fixed(f64::NAN, 1), "–");
        assert_eq!(Quantity::Count.format(1e6), "1,000,000");
    }

    #[test]
    fn excel_formats_match_the_decimals() {
        for q in [
            Quantity::Count,
            Quantity::RequestsPerSec,
            Quantity::MBytesPerSec,
            Quantity::MbitPerSec,
            Quantity::MeanMicros,
            Quantity::Percent,
            Quantity::Seconds,
            Quantity::Ratio,
        ] {
            let f = q.excel_format();
            let decimals = f.split_once('.').map_or(0, |(_, d)| d.len());
            assert_eq!(decimals, q.decimals(), "{q:?}: {f}");
            assert_eq!(f.contains("#,##"), q != Quantity::Ratio, "{q:?}: {f}");
        }
    }

    #[test]
    fn plurals() {
        assert_eq!(plural(0, "client", "clients"), "0 clients");
        assert_eq!(plural(1, "client", "clients"), "1 client");
        assert_eq!(plural(2, "URL", "URLs"), "2 URLs");
        assert_eq!(plural(1000, "OS thread", "OS threads"), "1,000 OS threads");
        assert_eq!(yes_no(true), "yes");
        assert_eq!(yes_no(false), "no");
    }

    #[test]
    fn column_quantities() {
        assert_eq!(column_quantity("requests_per_sec"), Some(Quantity::RequestsPerSec));
        assert_eq!(column_quantity("latency_mean_us"), Some(Quantity::MeanMicros));
        assert_eq!(column_quantity("latency_p99_us"), Some(Quantity::Count));
        assert_eq!(column_quantity("observed_percent"), Some(Quantity::Percent));
        assert_eq!(column_quantity("client_cpu_percent"), Some(Quantity::Percent));
        assert_eq!(column_quantity("window_s"), Some(Quantity::Seconds));
        assert_eq!(column_quantity("bytes_per_sec"), Some(Quantity::Count));
        assert_eq!(column_quantity("phase"), None);
        assert_eq!(column_quantity("mix"), None);
    }

    #[test]
    fn column_titles_are_words() {
        assert_eq!(column_title("latency_p50_us"), "Latency p50 (µs)");
        assert_eq!(column_title("requests_per_sec"), "Requests/s");
        assert_eq!(column_title("errors_connect_refused"), "Errors: connect refused");
        assert_eq!(column_title("errors_bind"), "Errors: bind");
        assert_eq!(column_title("share_http10_percent"), "Share http10 (%)");
        assert_eq!(column_title("future_thing_s"), "Future thing (s)");
        assert_eq!(column_title("new_rate_per_sec"), "New rate/s");
    }
}
