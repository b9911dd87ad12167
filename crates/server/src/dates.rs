//! The three date formats the server writes, without a date crate: the HTTP
//! `Date` header (IMF-fixdate, RFC 9110), the Common Log Format's
//! `10/Oct/2000:13:55:36 +0000`, and ISO-8601 UTC (`2000-10-10T13:55:36Z`)
//! for the SPICE session log. All are UTC: a benchmark log compared across machines
//! must not depend on their time zones.
//!
//! The HTTP and CLF strings change once a second, so each worker thread keeps
//! them formatted for the current second and a request only copies bytes.

use std::cell::Cell;
use std::time::{SystemTime, UNIX_EPOCH};

const DAYS: [&[u8; 3]; 7] = [b"Thu", b"Fri", b"Sat", b"Sun", b"Mon", b"Tue", b"Wed"];
const MONTHS: [&[u8; 3]; 12] = [
    b"Jan", b"Feb", b"Mar", b"Apr", b"May", b"Jun", b"Jul", b"Aug", b"Sep", b"Oct", b"Nov", b"Dec",
];

/// A UTC calendar time, broken down.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Civil {
    year: u64,
    month: u32,
    day: u32,
    hour: u32,
    min: u32,
    sec: u32,
    /// 0 = Thursday (1970-01-01 was one), to index `DAYS`.
    weekday: usize,
}

/// Breaks Unix seconds into a UTC calendar date (Howard Hinnant's
/// `civil_from_days`, restricted to dates after 1970).
fn civil(secs: u64) -> Civil {
    let days = secs / 86_400;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + u64::from(month <= 2);
    Civil {
        year,
        month,
        day,
        hour: (rem / 3600) as u32,
        min: (rem % 3600 / 60) as u32,
        sec: (rem % 60) as u32,
        weekday: (days % 7) as usize,
    }
}

fn put2(out: &mut [u8], v: u32) {
    out[0] = b'0' + (v / 10 % 10) as u8;
    out[1] = b'0' + (v % 10) as u8;
}

fn put4(out: &mut [u8], v: u64) {
    out[0] = b'0' + (v / 1000 % 10) as u8;
    out[1] = b'0' + (v / 100 % 10) as u8;
    out[2] = b'0' + (v / 10 % 10) as u8;
    out[3] = b'0' + (v % 10) as u8;
}

/// `Sun, 06 Nov 1994 08:49:37 GMT` (29 bytes).
pub(crate) fn http_date(secs: u64) -> [u8; 29] {
    let c = civil(secs);
    let mut b = *b"Thu, 01 Jan 1970 00:00:00 GMT";
    b[0..3].copy_from_slice(DAYS[c.weekday]);
    put2(&mut b[5..7], c.day);
    b[8..11].copy_from_slice(MONTHS[c.month as usize - 1]);
    put4(&mut b[12..16], c.year);
    put2(&mut b[17..19], c.hour);
    put2(&mut b[20..22], c.min);
    put2(&mut b[23..25], c.sec);
    b
}

/// `10/Oct/2000:13:55:36 +0000` (26 bytes), the CLF `[date]` field.
pub(crate) fn clf_date(secs: u64) -> [u8; 26] {
    let c = civil(secs);
    let mut b = *b"01/Jan/1970:00:00:00 +0000";
    put2(&mut b[0..2], c.day);
    b[3..6].copy_from_slice(MONTHS[c.month as usize - 1]);
    put4(&mut b[7..11], c.year);
    put2(&mut b[12..14], c.hour);
    put2(&mut b[15..17], c.min);
    put2(&mut b[18..20], c.sec);
    b
}

/// `2000-10-10T13:55:36Z` (20 bytes): ISO-8601 UTC to the second, the
/// session log's time field — the format every SPI's session program writes
/// (`strftime("%Y-%m-%dT%H:%M:%SZ")` in `spice/src/spice.c`).
pub(crate) fn iso8601(t: SystemTime) -> [u8; 20] {
    let c = civil(t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()));
    let mut b = *b"1970-01-01T00:00:00Z";
    put4(&mut b[0..4], c.year);
    put2(&mut b[5..7], c.month);
    put2(&mut b[8..10], c.day);
    put2(&mut b[11..13], c.hour);
    put2(&mut b[14..16], c.min);
    put2(&mut b[17..19], c.sec);
    b
}

/// The current second's HTTP and CLF dates, formatted once per second per thread.
#[derive(Clone, Copy)]
pub(crate) struct Now {
    secs: u64,
    pub(crate) http: [u8; 29],
    pub(crate) clf: [u8; 26],
}

thread_local! {
    static NOW: Cell<Now> = const { Cell::new(Now { secs: 0, http: [b' '; 29], clf: [b' '; 26] }) };
}

/// The dates of the current second (a clock read and a 64-byte copy; the
/// formatting runs once a second per worker thread).
pub(crate) fn now() -> Now {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    NOW.with(|cell| {
        let cached = cell.get();
        if cached.secs == secs {
            return cached;
        }
        let fresh = Now {
            secs,
            http: http_date(secs),
            clf: clf_date(secs),
        };
        cell.set(fresh);
        fresh
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn rfc_9110_example_date() {
        assert_eq!(&http_date(784_111_777), b"Sun, 06 Nov 1994 08:49:37 GMT");
    }

    #[test]
    fn clf_example_date_in_utc() {
        // Apache's CLF example, 10/Oct/2000:13:55:36 -0700, is 20:55:36 UTC.
        assert_eq!(&clf_date(971_211_336), b"10/Oct/2000:20:55:36 +0000");
    }

    #[test]
    fn iso_on_a_leap_day_and_at_the_ends() {
        let t = UNIX_EPOCH + Duration::from_millis(951_782_400_999); // 2000-02-29T00:00:00.999Z
        assert_eq!(&iso8601(t), b"2000-02-29T00:00:00Z");
        let t = UNIX_EPOCH + Duration::from_secs(4_102_444_799); // last second of 2099
        assert_eq!(&iso8601(t), b"2099-12-31T23:59:59Z");
        assert_eq!(&iso8601(UNIX_EPOCH), b"1970-01-01T00:00:00Z");
    }

    #[test]
    fn cached_now_matches_fresh_formatting() {
        let n = now();
        assert_eq!(n.http, http_date(n.secs));
        assert_eq!(n.clf, clf_date(n.secs));
    }
}
