//! Ranking URLs by requests and cutting the list where the chosen share of
//! requests is covered (seed 002: 704 of 6,400 URLs covered 94 %).

use crate::scan::{UrlMap, UrlStats};
use std::fmt;

/// A share of requests to cover, in parts per million, so that the cut is
/// exact integer arithmetic (`94%` of 100 requests is 94 requests, not
/// 93.99999…).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cover(u32);

/// A `--cover` value that is not a share of requests (the user's input:
/// `workload from-log` exits 2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CoverError {
    NotAShare(String),
    TooManyDecimals(String),
}

impl std::fmt::Display for CoverError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CoverError::NotAShare(s) => write!(
                f,
                "`{s}` is not a share of requests: expected a percentage above 0 and at most 100, like 94%"
            ),
            CoverError::TooManyDecimals(s) => write!(f, "`{s}`: at most four decimals, please"),
        }
    }
}

impl std::error::Error for CoverError {}

impl Cover {
    /// Everything: keep every URL (unless a URL cap stops earlier).
    pub const ALL: Cover = Cover(1_000_000);

    /// Parses `94%`, `94 %`, `94` or `99.5`: a percentage above 0 and at most
    /// 100, with at most four decimals.
    pub fn parse(s: &str) -> Result<Cover, CoverError> {
        let t = s.trim();
        let t = t.strip_suffix('%').unwrap_or(t).trim_end();
        let bad = || CoverError::NotAShare(s.to_string());
        let (int, frac) = t.split_once('.').unwrap_or((t, ""));
        if int.is_empty() && frac.is_empty()
            || !int.bytes().all(|b| b.is_ascii_digit())
            || !frac.bytes().all(|b| b.is_ascii_digit())
        {
            return Err(bad());
        }
        if frac.len() > 4 {
            return Err(CoverError::TooManyDecimals(s.to_string()));
        }
        let whole: u64 = if int.is_empty() {
            0
        } else {
            int.parse().map_err(|_| bad())?
        };
        let mut ppm = whole.checked_mul(10_000).ok_or_else(bad)?;
        let mut scale = 1_000;
        for d in frac.bytes() {
            ppm += u64::from(d - b'0') * scale;
            scale /= 10;
        }
        if ppm == 0 || ppm > 1_000_000 {
            return Err(bad());
        }
        Ok(Cover(ppm as u32))
    }

    /// Parts per million.
    pub fn ppm(self) -> u32 {
        self.0
    }

    /// True when `part` of `total` reaches this share.
    fn reached(self, part: u64, total: u64) -> bool {
        u128::from(part) * 1_000_000 >= u128::from(self.0) * u128::from(total)
    }
}

impl fmt::Display for Cover {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (int, frac) = (self.0 / 10_000, self.0 % 10_000);
        if frac == 0 {
            write!(f, "{int} %")
        } else {
            let frac = format!("{frac:04}");
            write!(f, "{int}.{} %", frac.trim_end_matches('0'))
        }
    }
}

/// One URL of the ranking.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ranked {
    /// As in the log (escapes undone); bytes that are not UTF-8 are written
    /// `%XX`, which a server decodes to the same bytes.
    pub path: String,
    /// Successful GETs.
    pub requests: u64,
    /// Body bytes logged for them.
    pub bytes: u64,
    /// Most frequent `200` size, if any.
    pub size: Option<u64>,
}

/// Sorts the URLs by requests, most first; ties by path so the output is
/// the same on every run whatever the hash map's order.
pub fn rank(urls: UrlMap) -> Vec<Ranked> {
    let mut list: Vec<(String, UrlStats)> = urls.into_iter().map(|(k, v)| (path_string(k.into_vec()), v)).collect();
    // Different raw keys can only meet here through `%XX`-encoded invalid
    // UTF-8 (a raw 0xFF byte and a literal `%FF`): merge them.
    list.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    let mut merged: Vec<(String, UrlStats)> = Vec::with_capacity(list.len());
    for (path, stats) in list {
        match merged.last_mut() {
            Some(last) if last.0 == path => last.1.merge(stats),
            _ => merged.push((path, stats)),
        }
    }
    let mut ranked: Vec<Ranked> = merged
        .into_iter()
        .map(|(path, s)| Ranked {
            size: s.size(),
            path,
            requests: s.requests,
            bytes: s.bytes,
        })
        .collect();
    ranked.sort_by(|a, b| b.requests.cmp(&a.requests).then_with(|| a.path.cmp(&b.path)));
    ranked
}

/// A URL's bytes as a string, `%XX` for bytes that are not UTF-8.
fn path_string(raw: Vec<u8>) -> String {
    match String::from_utf8(raw) {
        Ok(s) => s,
        Err(e) => {
            let raw = e.into_bytes();
            let mut s = String::with_capacity(raw.len() + 8);
            for chunk in raw.utf8_chunks() {
                s.push_str(chunk.valid());
                for b in chunk.invalid() {
                    s.push_str(&format!("%{b:02X}"));
                }
            }
            s
        }
    }
}

/// The kept URLs and the figures that describe them.
#[derive(Debug, Clone)]
pub struct Selection {
    /// The kept URLs, most requested first.
    pub kept: Vec<Ranked>,
    /// Distinct URLs with successful GETs.
    pub distinct: usize,
    /// Distinct URLs requested exactly once (Arlitt and Williamson: about
    /// one third of the files).
    pub once: usize,
    /// Successful GETs, all URLs.
    pub total_requests: u64,
    /// Their bytes.
    pub total_bytes: u64,
    /// Successful GETs of the kept URLs.
    pub kept_requests: u64,
    /// Their bytes.
    pub kept_bytes: u64,
    /// Σ requests × size over kept URLs with a known size, and Σ requests of
    /// those: the mean response a workload replaying them produces.
    pub sized_weight: u128,
    pub sized_requests: u64,
    /// Kept URLs without a known size (only 304s or `-`).
    pub kept_unsized: usize,
    /// The top 10 % of the distinct URLs (rounded up) and their requests.
    pub top_tenth: usize,
    pub top_tenth_requests: u64,
}

impl Selection {
    /// Share of requests the kept URLs cover, in percent.
    pub fn request_share(&self) -> f64 {
        percent(self.kept_requests, self.total_requests)
    }

    /// Share of bytes the kept URLs cover, in percent.
    pub fn byte_share(&self) -> f64 {
        percent(self.kept_bytes, self.total_bytes)
    }

    /// Mean size of the kept URLs, weighted by requests, from their recorded
    /// sizes; `None` when no kept URL has one.
    pub fn mean_size(&self) -> Option<f64> {
        (self.sized_requests > 0).then(|| self.sized_weight as f64 / self.sized_requests as f64)
    }

    /// Share of requests going to the top 10 % of distinct URLs, in percent
    /// (Arlitt and Williamson found 90 %).
    pub fn concentration(&self) -> f64 {
        percent(self.top_tenth_requests, self.total_requests)
    }
}

/// Percent, 0 for an empty whole.
pub fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 * 100.0 / whole as f64
    }
}

/// Keeps the most requested URLs until `cover` of the requests is reached
/// or `max_urls` are kept, whichever comes first.
pub fn select(ranked: Vec<Ranked>, cover: Cover, max_urls: Option<usize>) -> Selection {
    let total_requests: u64 = ranked.iter().map(|r| r.requests).sum();
    let total_bytes: u64 = ranked.iter().map(|r| r.bytes).sum();
    let distinct = ranked.len();
    let top_tenth = distinct.div_ceil(10);
    let top_tenth_requests = ranked[..top_tenth].iter().map(|r| r.requests).sum();
    let once = ranked.iter().rev().take_while(|r| r.requests == 1).count();

    let max = max_urls.unwrap_or(usize::MAX);
    let mut kept_requests = 0u64;
    let mut n = 0;
    while n < ranked.len() && n < max && !cover.reached(kept_requests, total_requests) {
        kept_requests += ranked[n].requests;
        n += 1;
    }
    let mut kept = ranked;
    kept.truncate(n);

    let kept_bytes = kept.iter().map(|r| r.bytes).sum();
    let (mut sized_weight, mut sized_requests, mut kept_unsized) = (0u128, 0u64, 0usize);
    for r in &kept {
        match r.size {
            Some(size) => {
                sized_weight += u128::from(size) * u128::from(r.requests);
                sized_requests += r.requests;
            }
            None => kept_unsized += 1,
        }
    }
    Selection {
        kept,
        distinct,
        once,
        total_requests,
        total_bytes,
        kept_requests,
        kept_bytes,
        sized_weight,
        sized_requests,
        kept_unsized,
        top_tenth,
        top_tenth_requests,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(entries: &[(&[u8], u64, u64, Option<u64>)]) -> UrlMap {
        let mut m = UrlMap::default();
        for &(path, requests, bytes, size) in entries {
            m.insert(path.into(), UrlStats::with(requests, bytes, size));
        }
        m
    }

    /// 10 URLs, 100 requests: 40, 20, 10, 10, 5, 5, 4, 3, 2, 1.
    fn hand_made() -> Vec<Ranked> {
        let counts = [40u64, 20, 10, 10, 5, 5, 4, 3, 2, 1];
        let names: Vec<String> = (0..counts.len()).map(|i| format!("/u{i}")).collect();
        let entries: Vec<(&[u8], u64, u64, Option<u64>)> = names
            .iter()
            .zip(counts)
            .map(|(n, c)| (n.as_bytes(), c, c * 1000, Some(1000)))
            .collect();
        rank(map(&entries))
    }

    fn paths(s: &Selection) -> Vec<&str> {
        s.kept.iter().map(|r| r.path.as_str()).collect()
    }

    #[test]
    fn parse_cover() {
        assert_eq!(Cover::parse("94%"), Ok(Cover(940_000)));
        assert_eq!(Cover::parse("94"), Ok(Cover(940_000)));
        assert_eq!(Cover::parse(" 94 %"), Ok(Cover(940_000)));
        assert_eq!(Cover::parse("99.95%"), Ok(Cover(999_500)));
        assert_eq!(Cover::parse(".5"), Ok(Cover(5_000)));
        assert_eq!(Cover::parse("100"), Ok(Cover::ALL));
        for bad in [
            "0", "0%", "100.01", "101", "-5", "x", "", "%", "9 4", "1e2", "94.12345", ".",
        ] {
            assert!(Cover::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(Cover(940_000).to_string(), "94 %");
        assert_eq!(Cover(999_500).to_string(), "99.95 %");
    }

    #[test]
    fn rank_orders_by_requests_then_path() {
        let r = rank(map(&[(b"/b", 5, 0, None), (b"/a", 5, 0, None), (b"/c", 9, 0, None)]));
        let p: Vec<&str> = r.iter().map(|r| r.path.as_str()).collect();
        assert_eq!(p, ["/c", "/a", "/b"]);
    }

    #[test]
    fn rank_encodes_and_merges_invalid_utf8() {
        let r = rank(map(&[
            (b"/a\xff", 2, 20, Some(10)),
            (b"/a%FF", 3, 30, Some(10)),
            (b"/\xc3\xa9", 1, 0, None),
        ]));
        assert_eq!(r.len(), 2);
        assert_eq!(
            (r[0].path.as_str(), r[0].requests, r[0].bytes, r[0].size),
            ("/a%FF", 5, 50, Some(10))
        );
        assert_eq!(r[1].path, "/é");
    }

    #[test]
    fn cover_cuts_exactly() {
        // 40+20+10+10 = 80 covers 80 % exactly: stop there.
        let s = select(hand_made(), Cover::parse("80%").expect("valid"), None);
        assert_eq!(paths(&s), ["/u0", "/u1", "/u2", "/u3"]);
        assert_eq!(s.kept_requests, 80);
        // One request more than 80 % needs the next URL.
        let s = select(hand_made(), Cover::parse("80.0001").expect("valid"), None);
        assert_eq!(s.kept.len(), 5);
        assert_eq!(s.kept_requests, 85);
        let s = select(hand_made(), Cover::parse("94").expect("valid"), None);
        assert_eq!(s.kept.len(), 7); // 40+20+10+10+5+5+4 = 94
        let s = select(hand_made(), Cover::ALL, None);
        assert_eq!(s.kept.len(), 10);
        assert_eq!(s.kept_requests, 100);
    }

    #[test]
    fn max_urls_and_cover_whichever_first() {
        let s = select(hand_made(), Cover::parse("94").expect("valid"), Some(3));
        assert_eq!(paths(&s), ["/u0", "/u1", "/u2"]);
        let s = select(hand_made(), Cover::parse("50").expect("valid"), Some(3));
        assert_eq!(paths(&s), ["/u0", "/u1"]);
        let s = select(hand_made(), Cover::ALL, Some(100));
        assert_eq!(s.kept.len(), 10);
    }

    #[test]
    fn figures() {
        let s = select(hand_made(), Cover::parse("80").expect("valid"), None);
        assert_eq!(s.distinct, 10);
        assert_eq!(s.once, 1);
        assert_eq!((s.top_tenth, s.top_tenth_requests), (1, 40));
        assert!((s.concentration() - 40.0).abs() < 1e-9);
        assert!((s.request_share() - 80.0).abs() < 1e-9);
        assert!((s.byte_share() - 80.0).abs() < 1e-9);
        assert_eq!(s.mean_size(), Some(1000.0));

        // Sizes differ and one URL has none: the mean is request-weighted
        // over the sized ones.
        let r = rank(map(&[
            (b"/a", 3, 300, Some(100)),
            (b"/b", 1, 1000, Some(1000)),
            (b"/c", 2, 0, None),
        ]));
        let s = select(r, Cover::ALL, None);
        assert_eq!(s.mean_size(), Some(1300.0 / 4.0));
        assert_eq!(s.kept_unsized, 1);
        // 3 URLs: the top 10 % rounds up to one URL.
        assert_eq!((s.top_tenth, s.top_tenth_requests), (1, 3));
        assert!((s.concentration() - 50.0).abs() < 1e-9);

        // 11 URLs: ceil(1.1) = 2.
        let names: Vec<String> = (0..11).map(|i| format!("/{i:02}")).collect();
        let entries: Vec<(&[u8], u64, u64, Option<u64>)> =
            names.iter().map(|n| (n.as_bytes(), 1, 1, Some(1))).collect();
        let s = select(rank(map(&entries)), Cover::ALL, None);
        assert_eq!((s.top_tenth, s.top_tenth_requests, s.once), (2, 2, 11));
    }

    #[test]
    fn empty() {
        let s = select(Vec::new(), Cover::ALL, None);
        assert_eq!((s.kept.len(), s.top_tenth), (0, 0));
        assert_eq!(s.mean_size(), None);
        assert_eq!(s.concentration(), 0.0);
    }
}
