//! The shop (docs/shop.md) in the reference server: the `/shop/` contract
//! of deploy/shop/shop.py, so the shop's flow runs against `benchlab serve`
//! too. Sessions, carts and orders are in memory behind one lock (each
//! request holds it for a map lookup or two: carts are exact under any
//! concurrency); the catalogue and the users are deploy/shop's, compiled
//! in. Unlike the Python shop it keeps no log of its own (the access log,
//! `--access-log`, has every request) and its product page shows no image.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fmt::Write as _;
use std::sync::Mutex;

const PRODUCTS: &str = include_str!("../../../deploy/shop/products.csv");
const USERS: &str = include_str!("../../../deploy/shop/users.csv");

/// A request body the shop reads at most (a login form, a cart line).
pub(crate) const MAX_BODY: u64 = 16 * 1024;
/// A cart line's quantity: 1 to this.
const MAX_QTY: u64 = 99;
/// Sessions kept: past this the oldest go (a long run logs in millions of
/// times; memory stays bounded).
const MAX_SESSIONS: usize = 100_000;

/// Whether `target` (the request target as sent) is the shop's.
pub(crate) fn is_shop(target: &str) -> bool {
    target.starts_with("/shop/")
}

/// One request, as the shop sees it.
#[derive(Debug, Default)]
pub(crate) struct Request<'a> {
    pub(crate) method: &'a str,
    /// The path, without the query.
    pub(crate) path: &'a str,
    pub(crate) cookie: Option<&'a str>,
    pub(crate) csrf_token: Option<&'a str>,
    pub(crate) content_type: Option<&'a str>,
    pub(crate) body: &'a [u8],
}

/// The shop's answer.
#[derive(Debug)]
pub(crate) struct Reply {
    pub(crate) status: u16,
    pub(crate) content_type: &'static str,
    /// Whole field lines (`Set-Cookie: …\r\n`).
    pub(crate) fields: String,
    pub(crate) body: String,
}

impl Reply {
    fn json(status: u16, body: serde_json::Value) -> Reply {
        Reply {
            status,
            content_type: "application/json",
            fields: String::new(),
            body: body.to_string(),
        }
    }

    /// A body over [`MAX_BODY`]: never read.
    pub(crate) fn too_large() -> Reply {
        Reply::error(413, "a body over 16 KiB")
    }

    fn error(status: u16, why: &str) -> Reply {
        Reply::json(status, serde_json::json!({"ok": false, "error": why}))
    }

    fn html(title: &str, head: &str, body: &str) -> Reply {
        Reply {
            status: 200,
            content_type: "text/html; charset=utf-8",
            fields: String::new(),
            body: format!(
                "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{}</title>{head}</head>\n<body>\n{body}</body></html>\n",
                escape(title)
            ),
        }
    }

    /// The reason phrase of the status.
    pub(crate) fn reason(&self) -> &'static str {
        match self.status {
            200 => "OK",
            303 => "See Other",
            400 => "Bad Request",
            401 => "Unauthorized",
            403 => "Forbidden",
            404 => "Not Found",
            405 => "Method Not Allowed",
            409 => "Conflict",
            413 => "Content Too Large",
            415 => "Unsupported Media Type",
            _ => "Internal Server Error",
        }
    }
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[derive(Debug)]
struct Session {
    /// The CSRF token of the product pages and the cart (random, 64 hex digits).
    token: String,
    /// sku → quantity.
    cart: BTreeMap<String, u64>,
}

#[derive(Debug, Default)]
struct State {
    sessions: HashMap<String, Session>,
    /// Session ids in login order, the oldest first (sessions are only
    /// ever dropped from the front, so this is exactly `sessions`' keys).
    order: VecDeque<String>,
    orders: u64,
}

/// The shop's catalogue, users and state.
#[derive(Debug)]
pub(crate) struct Shop {
    products: BTreeMap<String, (String, u64)>,
    users: HashMap<String, String>,
    /// Sessions kept ([`MAX_SESSIONS`]).
    max_sessions: usize,
    state: Mutex<State>,
}

/// `n` random bytes as hex, from the kernel's generator.
fn random_hex(n: usize) -> String {
    let mut buf = vec![0u8; n];
    let mut filled = 0;
    while filled < n {
        // SAFETY: getrandom writes at most `n - filled` bytes into the
        // buffer's unfilled tail, which we own.
        let r = unsafe { libc::getrandom(buf[filled..].as_mut_ptr().cast(), n - filled, 0) };
        if r > 0 {
            filled += r as usize;
        } else if std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            // No kernel generator: the process cannot make a secret; the
            // shop then answers 500 rather than a guessable session.
            return String::new();
        }
    }
    buf.iter().fold(String::with_capacity(2 * n), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// The value of cookie `name` in a `Cookie` header.
fn cookie<'a>(header: Option<&'a str>, name: &str) -> Option<&'a str> {
    header?.split(';').find_map(|part| {
        let (n, v) = part.trim().split_once('=')?;
        (n == name).then_some(v)
    })
}

/// Compares two secrets in time independent of where they differ.
fn same_secret(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

impl Shop {
    /// The shop over deploy/shop's catalogue and users.
    pub(crate) fn new() -> Shop {
        let rows = |text: &'static str| text.lines().skip(1).filter(|l| !l.is_empty()).map(|l| l.split(','));
        let products = rows(PRODUCTS)
            .filter_map(|mut f| {
                let (sku, name, price) = (f.next()?, f.next()?, f.next()?.parse().ok()?);
                Some((sku.to_owned(), (name.to_owned(), price)))
            })
            .collect();
        let users = rows(USERS)
            .filter_map(|mut f| Some((f.next()?.to_owned(), f.next()?.to_owned())))
            .collect();
        Shop {
            products,
            users,
            max_sessions: MAX_SESSIONS,
            state: Mutex::new(State::default()),
        }
    }

    /// Answers one request under `/shop/`.
    pub(crate) fn handle(&self, req: &Request<'_>) -> Reply {
        let route = match (req.method, req.path) {
            ("GET", "/shop/") => return self.index(),
            ("GET", "/shop/login") => return login_page(),
            ("POST", "/shop/login") => return self.login(req),
            ("POST", "/shop/cart") => return self.add(req),
            ("POST", "/shop/checkout") => return self.checkout(req),
            (m, p) => (m, p),
        };
        match route {
            ("GET", p) if p.starts_with("/shop/product/") => self.product(req, &p["/shop/product/".len()..]),
            (_, p) if p.starts_with("/shop/product/") => method_not_allowed("GET"),
            (_, "/shop/" | "/shop/login") => method_not_allowed(if req.path == "/shop/" { "GET" } else { "GET, POST" }),
            (_, "/shop/cart" | "/shop/checkout") => method_not_allowed("POST"),
            _ => Reply::error(404, "no such page"),
        }
    }

    fn index(&self) -> Reply {
        let mut list = String::new();
        for (sku, (name, price)) in &self.products {
            let _ = writeln!(
                list,
                "<li><a href=\"/shop/product/{sku}\">{}</a> {}.{:02}</li>",
                escape(name),
                price / 100,
                price % 100
            );
        }
        Reply::html("Shop", "", &format!("<h1>Shop</h1>\n<ul>\n{list}</ul>\n"))
    }

    fn login(&self, req: &Request<'_>) -> Reply {
        let form: HashMap<&str, String> = std::str::from_utf8(req.body)
            .unwrap_or("")
            .split('&')
            .filter_map(|kv| kv.split_once('='))
            .map(|(k, v)| (k, form_decode(v)))
            .collect();
        let field = |k: &str| form.get(k).map_or("", String::as_str);
        match cookie(req.cookie, "shop_csrf") {
            Some(expected) if !expected.is_empty() && same_secret(field("csrf"), expected) => {}
            _ => return Reply::error(403, "csrf"),
        }
        let user = field("user");
        match self.users.get(user) {
            Some(password) if same_secret(field("password"), password) => {}
            _ => return Reply::error(401, "unknown user or wrong password"),
        }
        let (id, token) = (random_hex(24), random_hex(32));
        if id.is_empty() || token.is_empty() {
            return Reply::error(500, "no random numbers");
        }
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if st.sessions.len() >= self.max_sessions {
            if let Some(oldest) = st.order.pop_front() {
                st.sessions.remove(&oldest);
            }
        }
        st.order.push_back(id.clone());
        st.sessions.insert(
            id.clone(),
            Session {
                token,
                cart: BTreeMap::new(),
            },
        );
        Reply {
            status: 303,
            content_type: "text/plain",
            fields: format!("Location: /shop/\r\nSet-Cookie: shop_session={id}; Path=/shop; HttpOnly\r\n"),
            body: String::new(),
        }
    }

    fn product(&self, req: &Request<'_>, sku: &str) -> Reply {
        let st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let Some(session) = cookie(req.cookie, "shop_session").and_then(|id| st.sessions.get(id)) else {
            return Reply::error(401, "no session: log in at /shop/login");
        };
        let Some((name, price)) = self.products.get(sku) else {
            return Reply::error(404, "unknown sku");
        };
        Reply::html(
            name,
            &format!("<meta name=\"csrf-token\" content=\"{}\">", session.token),
            &format!(
                "<h1>{}</h1>\n<p class=\"sku\">{}</p>\n<p class=\"price\" data-cents=\"{price}\">{}.{:02}</p>\n",
                escape(name),
                escape(sku),
                price / 100,
                price % 100
            ),
        )
    }

    /// The request's session, its token checked.
    fn session<'s>(&self, st: &'s mut State, req: &Request<'_>) -> Result<&'s mut Session, Reply> {
        let session = cookie(req.cookie, "shop_session")
            .and_then(|id| st.sessions.get_mut(id))
            .ok_or_else(|| Reply::error(401, "no session: log in at /shop/login"))?;
        if !same_secret(req.csrf_token.unwrap_or(""), &session.token) {
            return Err(Reply::error(403, "csrf"));
        }
        Ok(session)
    }

    fn totals(&self, cart: &BTreeMap<String, u64>) -> (u64, u64) {
        cart.iter().fold((0, 0), |(items, total), (sku, qty)| {
            (items + qty, total + qty * self.products.get(sku).map_or(0, |p| p.1))
        })
    }

    fn add(&self, req: &Request<'_>) -> Reply {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let session = match self.session(&mut st, req) {
            Ok(s) => s,
            Err(reply) => return reply,
        };
        let ctype = req.content_type.unwrap_or("").split(';').next().unwrap_or("").trim();
        if !ctype.eq_ignore_ascii_case("application/json") {
            return Reply::error(415, "expected Content-Type: application/json");
        }
        let Ok(serde_json::Value::Object(line)) = serde_json::from_slice::<serde_json::Value>(req.body) else {
            return Reply::error(400, "expected {\"sku\": \"...\", \"qty\": N}");
        };
        let sku = match line.get("sku").and_then(|s| s.as_str()) {
            Some(s) if self.products.contains_key(s) => s,
            _ => return Reply::error(400, "unknown sku"),
        };
        let qty = match line.get("qty") {
            None => 1,
            Some(q) => match q.as_u64() {
                Some(q) if (1..=MAX_QTY).contains(&q) => q,
                _ => return Reply::error(400, "qty: expected an integer from 1 to 99"),
            },
        };
        *session.cart.entry(sku.to_owned()).or_insert(0) += qty;
        let (items, total) = self.totals(&session.cart);
        Reply::json(
            200,
            serde_json::json!({"ok": true, "items": items, "total_cents": total}),
        )
    }

    fn checkout(&self, req: &Request<'_>) -> Reply {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let session = match self.session(&mut st, req) {
            Ok(s) => s,
            Err(reply) => return reply,
        };
        let (items, total) = self.totals(&session.cart);
        if items == 0 {
            return Reply::error(409, "the cart is empty");
        }
        session.cart.clear();
        st.orders += 1;
        Reply::json(
            200,
            serde_json::json!({"ok": true, "order": st.orders, "items": items, "total_cents": total}),
        )
    }
}

fn login_page() -> Reply {
    let token = random_hex(24);
    if token.is_empty() {
        return Reply::error(500, "no random numbers");
    }
    let mut r = Reply::html(
        "Log in",
        "",
        &format!(
            "<form method=\"post\" action=\"/shop/login\">\n<input type=\"hidden\" name=\"csrf\" value=\"{token}\">\n\
             <input name=\"user\"> <input name=\"password\" type=\"password\"> <button>Log in</button>\n</form>\n"
        ),
    );
    r.fields = format!("Set-Cookie: shop_csrf={token}; Path=/shop; HttpOnly\r\n");
    r
}

fn method_not_allowed(allow: &str) -> Reply {
    let mut r = Reply::error(405, &format!("expected {allow}"));
    r.fields = format!("Allow: {allow}\r\n");
    r
}

/// A form value decoded (`+` a space, `%XX` a byte); bad escapes stay as sent.
fn form_decode(v: &str) -> String {
    let b = v.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() => {
                match u8::from_str_radix(std::str::from_utf8(&b[i + 1..i + 3]).unwrap_or("zz"), 16) {
                    Ok(x) => {
                        out.push(x);
                        i += 2;
                    }
                    Err(_) => out.push(b'%'),
                }
            }
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    const USER: (&str, &str) = ("user01", "pw-e232a3da");

    fn get<'a>(path: &'a str, cookie: Option<&'a str>) -> Request<'a> {
        Request {
            method: "GET",
            path,
            cookie,
            ..Request::default()
        }
    }

    fn set_cookie(r: &Reply, name: &str) -> String {
        let line = r
            .fields
            .lines()
            .find_map(|l| l.strip_prefix(&format!("Set-Cookie: {name}=")))
            .unwrap_or_else(|| panic!("no {name} cookie in {:?}", r.fields));
        assert!(line.ends_with("; Path=/shop; HttpOnly"), "{line}");
        format!("{name}={}", line.split(';').next().unwrap())
    }

    /// Logs in; returns the Cookie header and the session's token.
    fn log_in(shop: &Shop) -> (String, String) {
        let page = shop.handle(&get("/shop/login", None));
        assert_eq!(page.status, 200);
        let csrf = set_cookie(&page, "shop_csrf");
        let value = csrf.strip_prefix("shop_csrf=").unwrap();
        assert!(page
            .body
            .contains(&format!("<input type=\"hidden\" name=\"csrf\" value=\"{value}\">")));
        let post = |body: &str| {
            shop.handle(&Request {
                method: "POST",
                path: "/shop/login",
                cookie: Some(&csrf),
                body: body.as_bytes(),
                ..Request::default()
            })
        };
        assert_eq!(
            post(&format!("user={}&password={}&csrf=x{value}", USER.0, USER.1)).status,
            403
        );
        assert_eq!(
            post(&format!("user={}&password=wrong&csrf={value}", USER.0)).status,
            401
        );
        let r = post(&format!("user={}&password={}&csrf={value}", USER.0, USER.1));
        assert_eq!(r.status, 303);
        assert!(r.fields.starts_with("Location: /shop/\r\n"), "{:?}", r.fields);
        let cookie = format!("{csrf}; {}", set_cookie(&r, "shop_session"));
        let p = shop.handle(&get("/shop/product/SKU-007", Some(&cookie)));
        assert_eq!(p.status, 200);
        assert!(
            p.body.contains("<h1>Backpack</h1>") && p.body.contains("79.99"),
            "{}",
            p.body
        );
        let token = p
            .body
            .split("content=\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap()
            .to_owned();
        assert_eq!(token.len(), 64);
        (cookie, token)
    }

    fn post<'a>(path: &'a str, cookie: &'a str, token: &'a str, body: &'a str) -> Request<'a> {
        Request {
            method: "POST",
            path,
            cookie: Some(cookie),
            csrf_token: Some(token),
            content_type: Some("application/json"),
            body: body.as_bytes(),
        }
    }

    /// The same requests as crates/cli/tests/shop.rs sends the Python shop,
    /// with the same statuses and totals.
    #[test]
    fn the_shop_answers_as_the_python_shop_does() {
        let shop = Shop::new();
        assert_eq!(shop.products.len(), 20);
        assert_eq!(shop.users.len(), 50);
        let (cookie, token) = log_in(&shop);
        assert_eq!(shop.handle(&get("/shop/product/SKU-999", Some(&cookie))).status, 404);
        assert_eq!(shop.handle(&get("/shop/product/SKU-007", None)).status, 401);
        let line = r#"{"sku": "SKU-007", "qty": 1}"#;
        let wrong = shop.handle(&post("/shop/cart", &cookie, "0123", line));
        let wrong_body: serde_json::Value = serde_json::from_str(&wrong.body).unwrap();
        assert_eq!(
            (wrong.status, wrong_body),
            (403, serde_json::json!({"ok": false, "error": "csrf"}))
        );
        assert_eq!(
            shop.handle(&post("/shop/cart", "shop_session=nope", &token, line))
                .status,
            401
        );
        assert_eq!(
            shop.handle(&post("/shop/cart", &cookie, &token, "{\"sku\": ")).status,
            400
        );
        assert_eq!(
            shop.handle(&post("/shop/cart", &cookie, &token, r#"{"sku": "SKU-999", "qty": 1}"#))
                .status,
            400
        );
        assert_eq!(
            shop.handle(&post("/shop/cart", &cookie, &token, r#"{"sku": "SKU-007", "qty": 0}"#))
                .status,
            400
        );
        let mut form = post("/shop/cart", &cookie, &token, line);
        form.content_type = Some("text/plain");
        assert_eq!(shop.handle(&form).status, 415);

        let json = |r: Reply| -> (u16, serde_json::Value) { (r.status, serde_json::from_str(&r.body).unwrap()) };
        assert_eq!(
            json(shop.handle(&post("/shop/cart", &cookie, &token, line))),
            (200, serde_json::json!({"ok": true, "items": 1, "total_cents": 7999}))
        );
        assert_eq!(
            json(shop.handle(&post("/shop/cart", &cookie, &token, r#"{"sku": "SKU-003", "qty": 2}"#))),
            (200, serde_json::json!({"ok": true, "items": 3, "total_cents": 8397}))
        );
        assert_eq!(
            json(shop.handle(&post("/shop/checkout", &cookie, &token, ""))),
            (
                200,
                serde_json::json!({"ok": true, "order": 1, "items": 3, "total_cents": 8397})
            )
        );
        let (status, body) = json(shop.handle(&post("/shop/checkout", &cookie, &token, "")));
        assert_eq!((status, body["error"].as_str()), (409, Some("the cart is empty")));
        assert_eq!(shop.handle(&get("/shop/cart", Some(&cookie))).status, 405);
        assert_eq!(shop.handle(&get("/shop/nothing", None)).status, 404);
    }

    #[test]
    fn one_cart_filled_from_many_threads_is_exact() {
        let shop = Shop::new();
        let (cookie, token) = log_in(&shop);
        let seen = Mutex::new(Vec::new());
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..25 {
                        let r = shop.handle(&post("/shop/cart", &cookie, &token, r#"{"sku": "SKU-015", "qty": 1}"#));
                        let v: serde_json::Value = serde_json::from_str(&r.body).unwrap();
                        assert_eq!(v["total_cents"].as_u64(), v["items"].as_u64().map(|n| n * 199));
                        seen.lock().unwrap().push(v["items"].as_u64().unwrap());
                    }
                });
            }
        });
        let mut seen = seen.into_inner().unwrap();
        seen.sort_unstable();
        assert_eq!(seen, (1..=100).collect::<Vec<u64>>());
    }

    #[test]
    fn past_the_bound_the_oldest_session_goes() {
        let mut shop = Shop::new();
        shop.max_sessions = 3;
        let cookies: Vec<String> = (0..5).map(|_| log_in(&shop).0).collect();
        let statuses: Vec<u16> = cookies
            .iter()
            .map(|c| shop.handle(&get("/shop/product/SKU-001", Some(c))).status)
            .collect();
        assert_eq!(statuses, [401, 401, 200, 200, 200]);
        let st = shop.state.lock().unwrap();
        assert_eq!((st.sessions.len(), st.order.len()), (3, 3));
    }

    #[test]
    fn form_values_are_decoded() {
        assert_eq!(form_decode("a+b%2Cc%zz%4"), "a b,c%zz%4");
    }
}
