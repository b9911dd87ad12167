//! # benchlab-logs
//!
//! Workloads from a real server log (docs/design.md;
//! seed 002 built its workload the same way: 704 of 6,400 URLs covered 94 %
//! of the requests). Read a Common or Combined Log Format access log, plain
//! or gzip; count the successful GETs (2xx and 304) per URL; rank the URLs
//! by requests; keep the most requested until a chosen share of requests is
//! covered; write a workload with the sizes seen in the log.
//!
//! Everything else in the log is counted and reported, never ranked: other
//! methods, other statuses, malformed lines (with a sample of line numbers).
//! Nothing in a log is fatal but an unreadable file.
//!
//! Speed matters because real logs are large: lines are parsed by hand in
//! place (see [`mod@line`]), so a plain log is read at hundreds of MB/s on one
//! core (`bench/log-parse.sh` measures it).
//!
//! ```
//! use benchlab_logs::{from_log, Cover, ScanOptions, Settings};
//! let log = "h - - [d] \"GET /a HTTP/1.1\" 200 10\nh - - [d] \"GET /a HTTP/1.1\" 200 10\nh - - [d] \"GET /b HTTP/1.1\" 200 99\n";
//! let settings = Settings { cover: Cover::parse("60%").unwrap(), max_urls: None, strip_query: false };
//! let (scan, sel) = from_log(log.as_bytes(), &settings).unwrap();
//! assert_eq!(scan.ok_gets, 3);
//! assert_eq!(sel.kept.len(), 1);
//! assert_eq!((sel.kept[0].path.as_str(), sel.kept[0].requests, sel.kept[0].size), ("/a", 2, Some(10)));
//! ```

pub mod line;
mod report;
mod scan;
mod select;

pub use line::{parse_line, Entry, Malformed};
pub use report::{rate_line, report, toml_string, write_workload, Settings};
pub use scan::{
    LogScan, MalformedLine, ScanOptions, UrlStats, BUFFER_SIZE, MALFORMED_EXCERPT_CHARS, MALFORMED_SAMPLE,
    NOT_A_LOG_BYTES, OTHER_STATUS_CLASSES,
};
pub use select::{percent, rank, select, Cover, CoverError, Ranked, Selection};

use std::io::{self, Read};

/// Reads a whole log and selects the URLs: [`LogScan::read`], [`rank`],
/// [`select`]. The time in [`LogScan::elapsed`] covers the reading only.
pub fn from_log<R: Read>(reader: R, settings: &Settings) -> io::Result<(LogScan, Selection)> {
    let mut scan = LogScan::new(ScanOptions {
        strip_query: settings.strip_query,
    });
    scan.read(reader)?;
    scan.finish();
    let urls = std::mem::take(&mut scan.urls);
    let selection = select(rank(urls), settings.cover, settings.max_urls);
    Ok((scan, selection))
}
