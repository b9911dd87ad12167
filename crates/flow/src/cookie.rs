//! A virtual user's cookie jar, as RFC 6265 §5 has a user agent keep one:
//! Set-Cookie parsed as §5.2 says (Expires, Max-Age — Max-Age wins —, Domain,
//! Path, Secure, HttpOnly), stored as §5.3 (host-only cookies, domain-match,
//! default-path; a cookie that has expired deletes the one it replaces),
//! sent as §5.4 (path-match, Secure only over https, longer paths first,
//! then earlier creation). Bounded: [`MAX_COOKIES`] a jar (the oldest goes
//! first), [`MAX_COOKIE_BYTES`] a Set-Cookie line (a longer one is
//! ignored). There is no public-suffix list: a flow talks to the servers
//! its suite names, and a `Domain` must still domain-match the host that
//! set it. Time is seconds since the Unix epoch, passed in, so the rules
//! are tested without a clock.

/// The most cookies a jar keeps.
pub const MAX_COOKIES: usize = 64;
/// The most bytes of a Set-Cookie value the jar looks at; a longer one is
/// ignored (RFC 6265 §6.1 asks for at least 4096).
pub const MAX_COOKIE_BYTES: usize = 4096;

#[derive(Debug, Clone)]
struct Cookie {
    name: Vec<u8>,
    value: Vec<u8>,
    domain: String,
    path: Vec<u8>,
    /// `None` for a session cookie (kept until the flow restarts).
    expiry: Option<i64>,
    creation: u64,
    secure: bool,
    host_only: bool,
}

/// One user's cookies.
#[derive(Debug, Clone, Default)]
pub struct CookieJar {
    /// Kept in §5.4's sending order: longer paths first, then earlier
    /// creation; so writing the Cookie header is one scan, no sort.
    cookies: Vec<Cookie>,
    seq: u64,
}

fn trim(mut s: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = s {
        s = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = s {
        s = rest;
    }
    s
}

/// A cookie's name and value from a Set-Cookie value (§5.2 steps 1–5), or
/// `None` when it has no `=` or an empty name.
pub fn name_value(set_cookie: &[u8]) -> Option<(&[u8], &[u8])> {
    let pair = set_cookie.split(|&b| b == b';').next().unwrap_or(&[]);
    let eq = pair.iter().position(|&b| b == b'=')?;
    let name = trim(&pair[..eq]);
    (!name.is_empty()).then(|| (name, trim(&pair[eq + 1..])))
}

fn is_ip(host: &str) -> bool {
    host.parse::<std::net::Ipv4Addr>().is_ok() || host.contains(':')
}

/// §5.1.3: `host` domain-matches `domain`.
pub fn domain_match(host: &str, domain: &str) -> bool {
    host == domain
        || (host.len() > domain.len()
            && host.ends_with(domain)
            && host.as_bytes()[host.len() - domain.len() - 1] == b'.'
            && !is_ip(host))
}

/// §5.1.4: the default path of a request path (no query).
pub fn default_path(path: &[u8]) -> &[u8] {
    if path.first() != Some(&b'/') {
        return b"/";
    }
    match path.iter().rposition(|&b| b == b'/') {
        Some(0) | None => b"/",
        Some(i) => &path[..i],
    }
}

/// §5.1.4: `request` path-matches `cookie`'s path.
pub fn path_match(request: &[u8], cookie: &[u8]) -> bool {
    request == cookie
        || (request.starts_with(cookie) && (cookie.last() == Some(&b'/') || request.get(cookie.len()) == Some(&b'/')))
}

/// §5.1.1: a cookie-date as seconds since the epoch, or `None`.
pub fn parse_date(text: &[u8]) -> Option<i64> {
    let delimiter = |b: u8| {
        b == 0x09
            || (0x20..=0x2f).contains(&b)
            || (0x3b..=0x40).contains(&b)
            || (0x5b..=0x60).contains(&b)
            || (0x7b..=0x7e).contains(&b)
    };
    let (mut time, mut day, mut month, mut year) = (None, None, None, None);
    for token in text.split(|&b| delimiter(b)).filter(|t| !t.is_empty()) {
        if time.is_none() {
            if let Some(t) = parse_time(token) {
                time = Some(t);
                continue;
            }
        }
        if day.is_none() {
            if let Some(d) = leading_digits(token, 1, 2) {
                day = Some(d);
                continue;
            }
        }
        if month.is_none() && token.len() >= 3 {
            const MONTHS: [&[u8; 3]; 12] = [
                b"jan", b"feb", b"mar", b"apr", b"may", b"jun", b"jul", b"aug", b"sep", b"oct", b"nov", b"dec",
            ];
            let m = token[..3].to_ascii_lowercase();
            if let Some(i) = MONTHS.iter().position(|x| x[..] == m[..]) {
                month = Some(i as i64 + 1);
                continue;
            }
        }
        if year.is_none() {
            if let Some(y) = leading_digits(token, 2, 4) {
                year = Some(y);
                continue;
            }
        }
    }
    let (h, mi, s) = time?;
    let (day, month, mut year) = (day?, month?, year?);
    if (70..=99).contains(&year) {
        year += 1900;
    } else if (0..=69).contains(&year) {
        year += 2000;
    }
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    let days_in = [31, if leap { 29 } else { 28 }, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month as usize - 1];
    if day < 1 || day > days_in || year < 1601 || h > 23 || mi > 59 || s > 59 {
        return None;
    }
    Some(days_from_civil(year, month, day) * 86400 + h * 3600 + mi * 60 + s)
}

/// 1–2 or 2–4 digits followed by nothing or a non-digit (§5.1.1's
/// day-of-month and year).
fn leading_digits(token: &[u8], min: usize, max: usize) -> Option<i64> {
    let n = token.iter().take_while(|b| b.is_ascii_digit()).count();
    if n < min || n > max {
        return None;
    }
    Some(token[..n].iter().fold(0i64, |a, &b| a * 10 + (b - b'0') as i64))
}

fn parse_time(token: &[u8]) -> Option<(i64, i64, i64)> {
    let mut parts = [0i64; 3];
    let mut rest = token;
    for (i, part) in parts.iter_mut().enumerate() {
        let n = rest.iter().take_while(|b| b.is_ascii_digit()).count();
        if n == 0 || n > 2 {
            return None;
        }
        *part = rest[..n].iter().fold(0i64, |a, &b| a * 10 + (b - b'0') as i64);
        rest = &rest[n..];
        if i < 2 {
            rest = rest.strip_prefix(b":")?;
        }
    }
    if rest.first().is_some_and(u8::is_ascii_digit) {
        return None;
    }
    Some((parts[0], parts[1], parts[2]))
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146097 + doe - 719468
}

impl CookieJar {
    pub fn new() -> Self {
        Self::default()
    }

    /// Forgets every cookie (a flow that starts again is a new session).
    pub fn clear(&mut self) {
        self.cookies.clear();
    }

    pub fn len(&self) -> usize {
        self.cookies.len()
    }

    pub fn is_empty(&self) -> bool {
        self.cookies.is_empty()
    }

    /// Takes a Set-Cookie value from a response to a request for `host`
    /// (lower case, no port) and `path` (no query) over https or not, at
    /// `now`. False when the cookie was ignored (§5.2, §5.3, or over the
    /// bounds).
    pub fn set(&mut self, set_cookie: &[u8], host: &str, path: &[u8], https: bool, now: i64) -> bool {
        let _ = https; // RFC 6265 lets plain http set a Secure cookie.
        if set_cookie.len() > MAX_COOKIE_BYTES {
            return false;
        }
        let Some((name, value)) = name_value(set_cookie) else {
            return false;
        };
        let (mut expires, mut max_age, mut domain, mut cookie_path, mut secure) = (None, None, None, None, false);
        for av in set_cookie.split(|&b| b == b';').skip(1) {
            let (attr, val) = match av.iter().position(|&b| b == b'=') {
                Some(i) => (trim(&av[..i]), trim(&av[i + 1..])),
                None => (trim(av), &[][..]),
            };
            let attr = attr.to_ascii_lowercase();
            match &attr[..] {
                b"expires" => {
                    if let Some(t) = parse_date(val) {
                        expires = Some(t);
                    }
                }
                b"max-age" => {
                    let digits = val.strip_prefix(b"-").unwrap_or(val);
                    if !digits.is_empty() && digits.iter().all(u8::is_ascii_digit) {
                        let delta = std::str::from_utf8(val).ok().and_then(|v| v.parse::<i64>().ok());
                        // A delta too large for i64 is as good as forever.
                        let delta = delta.unwrap_or(if val[0] == b'-' { i64::MIN } else { i64::MAX });
                        max_age = Some(if delta <= 0 {
                            i64::MIN
                        } else {
                            now.saturating_add(delta)
                        });
                    }
                }
                // An empty Domain is ignored (§5.2.3 leaves it undefined).
                b"domain" if !val.is_empty() => {
                    let d = val.strip_prefix(b".").unwrap_or(val);
                    domain = Some(String::from_utf8_lossy(d).to_ascii_lowercase());
                }
                b"path" => {
                    cookie_path = Some(if val.first() == Some(&b'/') {
                        val.to_vec()
                    } else {
                        default_path(path).to_vec()
                    });
                }
                b"secure" => secure = true,
                // HttpOnly keeps a cookie from scripts; a flow has none, so
                // it is accepted and changes nothing.
                _ => {}
            }
        }
        let expiry = max_age.or(expires);
        let (domain, host_only) = match domain {
            Some(d) if !d.is_empty() => {
                if !domain_match(host, &d) {
                    return false;
                }
                (d, false)
            }
            _ => (host.to_string(), true),
        };
        let path = cookie_path.unwrap_or_else(|| default_path(path).to_vec());
        let old = self
            .cookies
            .iter()
            .position(|c| c.name == name && c.domain == domain && c.path == path);
        let creation = match old {
            Some(i) => self.cookies.remove(i).creation,
            None => {
                self.seq += 1;
                self.seq
            }
        };
        if expiry.is_some_and(|t| t <= now) {
            // An expired cookie only deletes the one it replaces.
            return true;
        }
        if self.cookies.len() >= MAX_COOKIES {
            self.cookies.retain(|c| c.expiry.is_none_or(|t| t > now));
            if self.cookies.len() >= MAX_COOKIES {
                if let Some(oldest) = (0..self.cookies.len()).min_by_key(|&i| self.cookies[i].creation) {
                    self.cookies.remove(oldest);
                }
            }
        }
        let cookie = Cookie {
            name: name.to_vec(),
            value: value.to_vec(),
            domain,
            path,
            expiry,
            creation,
            secure,
            host_only,
        };
        let at = self
            .cookies
            .iter()
            .position(|c| {
                (c.path.len(), std::cmp::Reverse(c.creation)) < (cookie.path.len(), std::cmp::Reverse(cookie.creation))
            })
            .unwrap_or(self.cookies.len());
        self.cookies.insert(at, cookie);
        true
    }

    /// Appends the Cookie header's value for a request to `host` and `path`
    /// (no query) at `now`: `a=1; b=2`. False (nothing written) when no
    /// cookie applies. Never allocates beyond `out`'s growth.
    pub fn write_header(&self, host: &str, path: &[u8], https: bool, now: i64, out: &mut Vec<u8>) -> bool {
        let mut any = false;
        for c in &self.cookies {
            let host_ok = if c.host_only {
                host == c.domain
            } else {
                domain_match(host, &c.domain)
            };
            if !host_ok || !path_match(path, &c.path) || (c.secure && !https) || c.expiry.is_some_and(|t| t <= now) {
                continue;
            }
            if any {
                out.extend_from_slice(b"; ");
            }
            out.extend_from_slice(&c.name);
            out.push(b'=');
            out.extend_from_slice(&c.value);
            any = true;
        }
        any
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2021-06-09 10:18:14 UTC, the date of RFC 6265's example, less a day.
    const NOW: i64 = 1_623_147_494;

    struct Case {
        what: &'static str,
        /// Set-Cookie values, each from a response to (host, path, https),
        /// with the time it came.
        sets: &'static [(&'static str, &'static str, &'static str, bool, i64)],
        /// Requests: (host, path, https, time) and the Cookie header expected.
        gets: &'static [(&'static str, &'static str, bool, i64, &'static str)],
    }

    const CASES: &[Case] = &[
        Case {
            what: "RFC 6265 §3.1: a session cookie comes back",
            sets: &[("SID=31d4d96e407aad42", "example.com", "/", false, NOW)],
            gets: &[("example.com", "/", false, NOW, "SID=31d4d96e407aad42")],
        },
        Case {
            what: "RFC 6265 §3.1: Path and Domain, two cookies in creation order",
            sets: &[
                (
                    "SID=31d4d96e407aad42; Path=/; Domain=example.com",
                    "example.com",
                    "/",
                    false,
                    NOW,
                ),
                ("lang=en-US; Path=/; Domain=example.com", "example.com", "/", false, NOW),
            ],
            gets: &[
                ("example.com", "/", false, NOW, "SID=31d4d96e407aad42; lang=en-US"),
                ("www.example.com", "/x", false, NOW, "SID=31d4d96e407aad42; lang=en-US"),
                ("notexample.com", "/", false, NOW, ""),
            ],
        },
        Case {
            what: "RFC 6265 §3.1: Secure only over https, HttpOnly accepted",
            sets: &[
                (
                    "SID=31d4d96e407aad42; Path=/; Secure; HttpOnly",
                    "example.com",
                    "/",
                    true,
                    NOW,
                ),
                ("lang=en-US; Path=/; Domain=example.com", "example.com", "/", true, NOW),
            ],
            gets: &[
                ("example.com", "/", true, NOW, "SID=31d4d96e407aad42; lang=en-US"),
                ("example.com", "/", false, NOW, "lang=en-US"),
            ],
        },
        Case {
            what: "RFC 6265 §3.1: Expires keeps a cookie to its date; an Expires in the past deletes it",
            sets: &[
                (
                    "lang=en-US; Expires=Wed, 09 Jun 2021 10:18:14 GMT",
                    "example.com",
                    "/",
                    false,
                    NOW,
                ),
                (
                    "lang=; Expires=Sun, 06 Nov 1994 08:49:37 GMT",
                    "example.com",
                    "/",
                    false,
                    NOW + 10,
                ),
            ],
            gets: &[("example.com", "/", false, NOW + 5, "")],
        },
        Case {
            what: "Expires: the cookie is sent until its date and not after",
            sets: &[(
                "lang=en-US; Expires=Wed, 09 Jun 2021 10:18:14 GMT",
                "example.com",
                "/",
                false,
                NOW,
            )],
            gets: &[
                ("example.com", "/", false, NOW + 86_399, "lang=en-US"),
                ("example.com", "/", false, NOW + 86_400, ""),
            ],
        },
        Case {
            what: "Max-Age counts from when it came, and wins over Expires",
            sets: &[(
                "a=1; Max-Age=60; Expires=Sun, 06 Nov 1994 08:49:37 GMT",
                "h",
                "/",
                false,
                NOW,
            )],
            gets: &[("h", "/", false, NOW + 59, "a=1"), ("h", "/", false, NOW + 60, "")],
        },
        Case {
            what: "Max-Age=0 deletes; a bad Max-Age is ignored",
            sets: &[
                ("a=1", "h", "/", false, NOW),
                ("b=2", "h", "/", false, NOW),
                ("a=x; Max-Age=0", "h", "/", false, NOW),
                ("b=3; Max-Age=1e3", "h", "/", false, NOW),
            ],
            gets: &[("h", "/", false, NOW + 1_000_000, "b=3")],
        },
        Case {
            what: "negative Max-Age deletes",
            sets: &[("a=1", "h", "/", false, NOW), ("a=1; Max-Age=-5", "h", "/", false, NOW)],
            gets: &[("h", "/", false, NOW, "")],
        },
        Case {
            what: "host-only: no Domain, sent to that host only",
            sets: &[("a=1", "example.com", "/", false, NOW)],
            gets: &[
                ("example.com", "/", false, NOW, "a=1"),
                ("www.example.com", "/", false, NOW, ""),
            ],
        },
        Case {
            what: "Domain with a leading dot, any case; a foreign Domain is ignored",
            sets: &[
                ("a=1; Domain=.EXAMPLE.com", "www.example.com", "/", false, NOW),
                ("b=2; Domain=other.com", "www.example.com", "/", false, NOW),
                ("c=3; Domain=ample.com", "www.example.com", "/", false, NOW),
            ],
            gets: &[
                ("example.com", "/", false, NOW, "a=1"),
                ("other.com", "/", false, NOW, ""),
            ],
        },
        Case {
            what: "an IP address host domain-matches only itself",
            sets: &[
                ("a=1; Domain=0.0.1", "127.0.0.1", "/", false, NOW),
                ("b=2; Domain=127.0.0.1", "127.0.0.1", "/", false, NOW),
            ],
            gets: &[("127.0.0.1", "/", false, NOW, "b=2")],
        },
        Case {
            what: "default-path: the request path up to its last slash",
            sets: &[
                ("a=1", "h", "/shop/cart/add", false, NOW),
                ("b=2", "h", "/top", false, NOW),
            ],
            gets: &[
                ("h", "/shop/cart", false, NOW, "a=1; b=2"),
                ("h", "/shop/cart/x", false, NOW, "a=1; b=2"),
                ("h", "/shop/cartx", false, NOW, "b=2"),
                ("h", "/shop", false, NOW, "b=2"),
            ],
        },
        Case {
            what: "Path: path-match on segment boundaries; a Path not starting with / is the default path",
            sets: &[
                ("a=1; Path=/docs", "h", "/", false, NOW),
                ("b=2; Path=/docs/", "h", "/", false, NOW),
                ("c=3; Path=docs", "h", "/x/y", false, NOW),
            ],
            gets: &[
                ("h", "/docs", false, NOW, "a=1"),
                ("h", "/docs/web", false, NOW, "b=2; a=1"),
                ("h", "/docsx", false, NOW, ""),
                ("h", "/x/y", false, NOW, "c=3"),
            ],
        },
        Case {
            what: "§5.4 order: longer paths first, then earlier creation; a replaced cookie keeps its place",
            sets: &[
                ("a=1; Path=/", "h", "/", false, NOW),
                ("b=2; Path=/p/q", "h", "/", false, NOW),
                ("c=3; Path=/p", "h", "/", false, NOW),
                ("d=4; Path=/p", "h", "/", false, NOW),
                ("c=9; Path=/p", "h", "/", false, NOW),
            ],
            gets: &[("h", "/p/q/r", false, NOW, "b=2; c=9; d=4; a=1")],
        },
        Case {
            what: "same name, different path: two cookies",
            sets: &[
                ("a=1; Path=/", "h", "/", false, NOW),
                ("a=2; Path=/x", "h", "/", false, NOW),
            ],
            gets: &[("h", "/x", false, NOW, "a=2; a=1"), ("h", "/", false, NOW, "a=1")],
        },
        Case {
            what: "§5.2: no `=` or an empty name ignores the line; spaces trimmed; empty value kept",
            sets: &[
                ("novalue", "h", "/", false, NOW),
                ("=x", "h", "/", false, NOW),
                ("  n  =  v v  ; Path = /  ", "h", "/", false, NOW),
                ("e=", "h", "/", false, NOW),
            ],
            gets: &[("h", "/", false, NOW, "n=v v; e=")],
        },
        Case {
            what: "unparseable Expires is ignored (a session cookie)",
            sets: &[("a=1; Expires=someday", "h", "/", false, NOW)],
            gets: &[("h", "/", false, NOW + 100_000_000, "a=1")],
        },
    ];

    #[test]
    fn jar_table() {
        for case in CASES {
            let mut jar = CookieJar::new();
            for (line, host, path, https, now) in case.sets {
                jar.set(line.as_bytes(), host, path.as_bytes(), *https, *now);
            }
            for (host, path, https, now, want) in case.gets {
                let mut out = Vec::new();
                let any = jar.write_header(host, path.as_bytes(), *https, *now, &mut out);
                assert_eq!(String::from_utf8_lossy(&out), *want, "{}: {host}{path}", case.what);
                assert_eq!(any, !want.is_empty(), "{}", case.what);
            }
        }
    }

    #[test]
    fn dates() {
        let cases: &[(&str, Option<i64>)] = &[
            ("Wed, 09 Jun 2021 10:18:14 GMT", Some(1_623_233_894)),
            ("Sun, 06 Nov 1994 08:49:37 GMT", Some(784_111_777)),
            ("Sunday, 06-Nov-94 08:49:37 GMT", Some(784_111_777)),
            ("Sun Nov  6 08:49:37 1994", Some(784_111_777)),
            ("06 nov 2069 08:49:37", Some(3_150_953_377)),
            ("Thu, 01 Jan 1970 00:00:00 GMT", Some(0)),
            ("29 Feb 2024 00:00:00", Some(1_709_164_800)),
            ("29 Feb 2023 00:00:00", None),
            ("32 Jan 2020 00:00:00", None),
            ("01 Jan 2020 24:00:00", None),
            ("01 Jan 1600 00:00:00", None),
            ("01 Jan 2020", None),
            ("01 Foo 2020 00:00:00", None),
            ("", None),
        ];
        for (text, want) in cases {
            assert_eq!(parse_date(text.as_bytes()), *want, "{text:?}");
        }
    }

    #[test]
    fn bounds() {
        let mut jar = CookieJar::new();
        for i in 0..MAX_COOKIES + 10 {
            assert!(jar.set(format!("c{i}=v").as_bytes(), "h", b"/", false, NOW));
        }
        assert_eq!(jar.len(), MAX_COOKIES);
        let mut out = Vec::new();
        jar.write_header("h", b"/", false, NOW, &mut out);
        assert!(
            String::from_utf8_lossy(&out).starts_with("c10=v; c11=v"),
            "the oldest went first"
        );
        let long = format!("big={}", "x".repeat(MAX_COOKIE_BYTES));
        assert!(!jar.set(long.as_bytes(), "h", b"/", false, NOW));
        jar.clear();
        assert!(jar.is_empty());
    }

    #[test]
    fn name_value_of_set_cookie() {
        assert_eq!(name_value(b"s=abc; Path=/"), Some((&b"s"[..], &b"abc"[..])));
        assert_eq!(name_value(b"s"), None);
        assert_eq!(name_value(b" =v"), None);
    }
}
