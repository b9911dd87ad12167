//! Parsers for flag values that are more than a number: they turn a user's
//! text into typed values or say exactly what was expected.

use clap::ValueEnum;
use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

/// `URL` or `URL@WEIGHT`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WeightedUrl {
    pub url: String,
    pub weight: u32,
}

pub fn weighted_url(s: &str) -> Result<WeightedUrl, String> {
    if let Some((url, w)) = s.rsplit_once('@') {
        if !w.is_empty() && w.bytes().all(|b| b.is_ascii_digit()) {
            let weight: u32 = w
                .parse()
                .map_err(|_| format!("weight `{w}` is too large (expected URL@WEIGHT, WEIGHT a whole number ≥ 1)"))?;
            if weight == 0 {
                return Err(format!("weight of `{url}` is 0: expected a whole number ≥ 1"));
            }
            return Ok(WeightedUrl {
                url: url.to_string(),
                weight,
            });
        }
    }
    Ok(WeightedUrl {
        url: s.to_string(),
        weight: 1,
    })
}

/// A duration such as `10s`, `500ms`, `1m30s`, at most a week (clap adds
/// the flag's name to the message).
pub fn duration(s: &str) -> Result<Duration, benchlab_model::DurationError> {
    benchlab_model::parse_duration(s)
}

/// `-d`/`--duration`: a duration, with a hint when the value looks like
/// a request body (curl, hey and oha spell the body `-d`; benchlab keeps
/// wrk's `-d` for the duration and spells the body `--data`).
pub fn run_duration(s: &str) -> Result<Duration, String> {
    benchlab_model::parse_duration(s).map_err(|e| {
        if s.starts_with(['@', '{', '[']) || s.contains('=') {
            format!("{e}; -d is the duration (as wrk's): a request body is --data TEXT or --data @FILE")
        } else {
            e.to_string()
        }
    })
}

/// A `--time-scale` factor within the model's bounds.
pub fn time_scale(s: &str) -> Result<f64, String> {
    let f: f64 = s.trim().parse().map_err(|_| {
        format!(
            "`{s}`: expected a number from {} to {}",
            benchlab_model::TIME_SCALE_MIN,
            benchlab_model::TIME_SCALE_MAX
        )
    })?;
    benchlab_model::check_time_scale(f).map_err(|e| format!("`{s}`: {e}"))?;
    Ok(f)
}

/// `N` or `MIN..MAX` requests per connection.
pub fn range(s: &str) -> Result<(u32, u32), String> {
    let num = |x: &str| {
        x.trim()
            .parse::<u32>()
            .map_err(|_| format!("`{s}`: expected N or MIN..MAX, whole numbers ≥ 1"))
    };
    let (min, max) = match s.split_once("..") {
        Some((a, b)) => (num(a)?, num(b)?),
        None => {
            let n = num(s)?;
            (n, n)
        }
    };
    if min == 0 || min > max {
        return Err(format!("`{s}`: expected 1 ≤ MIN ≤ MAX"));
    }
    Ok((min, max))
}

/// Local addresses to spread connections over (one flag value = the list,
/// which is why it is a type of its own for clap).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Addresses(pub Vec<IpAddr>);

/// `127.0.0.1-127.0.0.8` (an IPv4 range) or `A,B,C` (a list).
pub fn addresses(s: &str) -> Result<Addresses, String> {
    address_list(s).map(Addresses)
}

fn address_list(s: &str) -> Result<Vec<IpAddr>, String> {
    let bad = || format!("`{s}`: expected FIRST-LAST (IPv4) or a comma-separated list of addresses");
    if let Some((a, b)) = s.split_once('-') {
        let a: Ipv4Addr = a.trim().parse().map_err(|_| bad())?;
        let b: Ipv4Addr = b.trim().parse().map_err(|_| bad())?;
        let (a, b) = (u32::from(a), u32::from(b));
        if a > b || b - a >= 65_536 {
            return Err(format!(
                "`{s}`: the range must run upwards and hold at most 65536 addresses"
            ));
        }
        return Ok((a..=b).map(|x| IpAddr::V4(Ipv4Addr::from(x))).collect());
    }
    s.split(',')
        .map(|x| x.trim().parse::<IpAddr>().map_err(|_| bad()))
        .collect()
}

/// `Name: value`.
pub fn header(s: &str) -> Result<(String, String), String> {
    let (n, v) = s
        .split_once(':')
        .ok_or_else(|| format!("`{s}`: expected a header as 'Name: value'"))?;
    let n = n.trim();
    if n.is_empty() || !n.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(format!("`{s}`: header name `{n}` is not a valid token"));
    }
    if v.contains(['\r', '\n']) {
        return Err(format!("`{s}`: header values cannot hold line breaks"));
    }
    Ok((n.to_string(), v.trim().to_string()))
}

/// A percentage 0–100 (a trailing `%` is allowed).
pub fn percent(s: &str) -> Result<u8, String> {
    let t = s.trim().trim_end_matches('%');
    match t.parse::<u8>() {
        Ok(p) if p <= 100 => Ok(p),
        _ => Err(format!("`{s}`: expected a percentage from 0 to 100")),
    }
}

/// A percentage that may have decimals (an error-rate limit).
pub fn percent_f64(s: &str) -> Result<f64, String> {
    let t = s.trim().trim_end_matches('%');
    match t.parse::<f64>() {
        Ok(p) if (0.0..=100.0).contains(&p) => Ok(p),
        _ => Err(format!("`{s}`: expected a percentage from 0 to 100")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights() {
        assert_eq!(weighted_url("http://a/x@3").unwrap().weight, 3);
        assert_eq!(weighted_url("http://a/x").unwrap().weight, 1);
        assert_eq!(weighted_url("http://a/x@y").unwrap().url, "http://a/x@y");
        assert!(weighted_url("http://a/x@0").is_err());
    }

    #[test]
    fn ranges() {
        assert_eq!(range("4").unwrap(), (4, 4));
        assert_eq!(range("2..6").unwrap(), (2, 6));
        assert!(range("6..2").is_err());
        assert!(range("0").is_err());
        assert!(range("x").is_err());
    }

    #[test]
    fn address_ranges() {
        let a = addresses("127.0.0.1-127.0.0.8").unwrap().0;
        assert_eq!(a.len(), 8);
        assert_eq!(a[7].to_string(), "127.0.0.8");
        assert_eq!(addresses("127.0.0.1,::1").unwrap().0.len(), 2);
        assert!(addresses("127.0.0.9-127.0.0.1").is_err());
        assert!(addresses("nope").is_err());
    }

    #[test]
    fn headers_and_percents() {
        assert_eq!(header("X-A: b c").unwrap(), ("X-A".into(), "b c".into()));
        assert!(header("no colon").is_err());
        assert_eq!(percent("30%").unwrap(), 30);
        assert!(percent("101").is_err());
        assert!(duration("ten").is_err());
        assert_eq!(duration("250ms").unwrap(), Duration::from_millis(250));
    }
}

/// HTTP version and connection behaviour of the run's connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum HttpMode {
    /// HTTP/1.0 without keep-alive: a new connection for every request.
    #[value(name = "1.0")]
    Http10,
    /// HTTP/1.0 with `Connection: keep-alive`.
    #[value(name = "1.0-keepalive")]
    Http10KeepAlive,
    /// HTTP/1.1 (persistent connections per --persistent-percent).
    #[value(name = "1.1")]
    Http11,
    /// HTTP/2: over TLS with ALPN `h2` for https:// URLs, cleartext with
    /// prior knowledge (h2c) for http:// URLs; see --connections, --streams.
    #[value(name = "2")]
    Http2,
    /// HTTP/3 over QUIC (https:// URLs only, UDP to the URL's port); see
    /// --connections, --streams and docs/http3.md.
    #[value(name = "3")]
    Http3,
}
