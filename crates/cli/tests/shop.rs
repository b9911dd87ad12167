//! `benchlab lab up shop`: nginx with the shop application (docs/shop.md)
//! under gunicorn, driven with real HTTP requests over the plain and the
//! TLS port: the contract's statuses, cookies and totals, carts exact under
//! concurrency, the app's log equal to the requests sent, the shop's flow
//! (deploy/shop/flow.toml) walked by the flow library's users, a wrong CSRF
//! capture failing its step, and `lab down` leaving no gunicorn.

mod common;

use benchlab_flow::{FlowSpec, FlowUser, Origin, RequestBuf, StepOutcome};
use common::{assert_success, benchlab_bin, free_port, group_members, lab, require};
use std::collections::BTreeMap;
use std::fs;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A state base whose shop is taken down when the test ends, passed or not.
struct Shop {
    base: tempfile::TempDir,
    state: PathBuf,
    port: u16,
    tls_port: u16,
    tls: Arc<rustls::ClientConfig>,
    app_log: PathBuf,
}

impl Drop for Shop {
    fn drop(&mut self) {
        let _ = lab(self.base.path(), &["down", "--all", "--grace", "3s"]);
    }
}

impl Shop {
    fn up() -> Shop {
        Shop::serving(None)
    }

    /// The shop with nginx serving the file set at `root` (its own small
    /// set without).
    fn serving(root: Option<&Path>) -> Shop {
        require("nginx");
        require("gunicorn");
        let base = tempfile::tempdir().expect("tempdir");
        let (port, tls_port) = (free_port(), free_port());
        let (port_text, tls_text) = (port.to_string(), tls_port.to_string());
        let mut args = vec!["up", "shop", "--port", &port_text, "--tls-port", &tls_text];
        if let Some(r) = root {
            args.extend(["--root", r.to_str().expect("a UTF-8 path")]);
        }
        let out = lab(base.path(), &args);
        assert_success("lab up shop", &out);
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let lines: Vec<&str> = stdout.lines().collect();
        assert_eq!(lines[0], format!("http://127.0.0.1:{port}/"), "{stdout}");
        let state = PathBuf::from(lines[1].strip_prefix("state ").expect("state line"));
        assert!(lines[2].starts_with("page "), "{stdout}");
        assert_eq!(lines[3], format!("tls https://127.0.0.1:{tls_port}/"), "{stdout}");
        let cert = PathBuf::from(lines[4].strip_prefix("cert ").expect("cert line"));
        let app_log = PathBuf::from(lines[5].strip_prefix("app-log ").expect("app-log line"));
        assert!(app_log.starts_with(&state), "{stdout}");
        assert!(String::from_utf8_lossy(&out.stderr).contains(&format!("its log: {}", app_log.display())));
        Shop {
            base,
            state,
            port,
            tls_port,
            tls: client_config(&cert),
            app_log,
        }
    }

    fn plain(&self) -> Target {
        Target {
            port: self.port,
            tls: None,
        }
    }

    fn tls(&self) -> Target {
        Target {
            port: self.tls_port,
            tls: Some(self.tls.clone()),
        }
    }

    /// The app's log, as (method, path, status) → lines, and its lines.
    fn log(&self) -> (Tally, Vec<serde_json::Value>) {
        let text = fs::read_to_string(&self.app_log).unwrap_or_default();
        let mut counts = BTreeMap::new();
        let mut lines = Vec::new();
        for l in text.lines() {
            let v: serde_json::Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("a log line {l:?}: {e}"));
            let key = (
                v["method"].as_str().unwrap().to_owned(),
                v["path"].as_str().unwrap().to_owned(),
                v["status"].as_u64().unwrap() as u16,
            );
            *counts.entry(key).or_insert(0) += 1;
            lines.push(v);
        }
        (counts, lines)
    }
}

/// Requests by (method, path, status): how many.
type Tally = BTreeMap<(String, String, u16), u64>;

/// Trusts the lab's certificate only.
fn client_config(cert: &Path) -> Arc<rustls::ClientConfig> {
    use rustls::pki_types::{pem::PemObject, CertificateDer};
    let mut roots = rustls::RootCertStore::empty();
    for c in CertificateDer::pem_file_iter(cert).expect("read the lab's certificate") {
        roots
            .add(c.expect("a PEM certificate"))
            .expect("add the lab's certificate");
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    Arc::new(config)
}

#[derive(Clone)]
struct Target {
    port: u16,
    tls: Option<Arc<rustls::ClientConfig>>,
}

trait Stream: Read + Write {}
impl<T: Read + Write> Stream for T {}

#[derive(Debug)]
struct Response {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Response {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
    fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text()))
    }
    /// The value of the Set-Cookie named `name`, and the whole header.
    fn cookie(&self, name: &str) -> Option<(String, String)> {
        self.headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case("set-cookie"))
            .find_map(|(_, v)| {
                let pair = v.split(';').next()?;
                let value = pair.strip_prefix(name)?.strip_prefix('=')?;
                Some((value.to_owned(), v.clone()))
            })
    }
}

/// One request on a connection of its own (`Connection: close`), the
/// response read to its Content-Length (at most 1 MiB).
fn send(t: &Target, method: &str, path: &str, headers: &[(&str, &str)], body: Option<&[u8]>) -> Response {
    let tcp = TcpStream::connect(("127.0.0.1", t.port)).expect("connect to the shop");
    tcp.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut stream: Box<dyn Stream> = match &t.tls {
        None => Box::new(tcp),
        Some(config) => {
            let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
            let conn = rustls::ClientConnection::new(config.clone(), name).expect("TLS client");
            Box::new(rustls::StreamOwned::new(conn, tcp))
        }
    };
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\n",
        t.port
    );
    for (n, v) in headers {
        req.push_str(&format!("{n}: {v}\r\n"));
    }
    let body = body.unwrap_or(&[]);
    if method == "POST" || !body.is_empty() {
        req.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    req.push_str("\r\n");
    let mut bytes = req.into_bytes();
    bytes.extend_from_slice(body);
    stream.write_all(&bytes).expect("send the request");
    stream.flush().unwrap();
    let mut buf = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    let head_end = loop {
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        let n = stream.read(&mut chunk).expect("read the response");
        assert!(n > 0, "the connection closed before the response's head: {buf:?}");
        buf.extend_from_slice(&chunk[..n]);
        assert!(buf.len() < 1 << 20, "a response head over 1 MiB");
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let status: u16 = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line: {head}"));
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_owned(), v.trim().to_owned()))
        .collect();
    let len: usize = headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or_else(|| panic!("no Content-Length: {head}"));
    assert!(len < 1 << 20, "a body over 1 MiB");
    while buf.len() < head_end + len {
        let n = stream.read(&mut chunk).expect("read the body");
        assert!(n > 0, "the connection closed in the body");
        buf.extend_from_slice(&chunk[..n]);
    }
    Response {
        status,
        headers,
        body: buf[head_end..head_end + len].to_vec(),
    }
}

/// The requests a test sent, as the app's log counts them.
#[derive(Default)]
struct Sent(Mutex<Tally>);

impl Sent {
    fn send(&self, t: &Target, method: &str, path: &str, headers: &[(&str, &str)], body: Option<&[u8]>) -> Response {
        let r = send(t, method, path, headers, body);
        *self
            .0
            .lock()
            .unwrap()
            .entry((method.to_owned(), path.to_owned(), r.status))
            .or_insert(0) += 1;
        r
    }
    fn counts(&self) -> Tally {
        self.0.lock().unwrap().clone()
    }
}

/// A logged-in session: its cookies and its CSRF token.
struct Session {
    cookie: String,
    session_id: String,
    token: String,
}

const USER: (&str, &str) = ("user01", "pw-e232a3da");

fn log_in(sent: &Sent, t: &Target, user: &str, password: &str) -> Session {
    let page = sent.send(t, "GET", "/shop/login", &[], None);
    assert_eq!(page.status, 200, "{}", page.text());
    let (csrf, set) = page.cookie("shop_csrf").expect("shop_csrf cookie");
    assert_eq!(set, format!("shop_csrf={csrf}; Path=/shop; HttpOnly"));
    assert!(
        page.text()
            .contains(&format!("<input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">")),
        "{}",
        page.text()
    );
    let cookie = format!("shop_csrf={csrf}");
    let form = format!("user={user}&password={password}&csrf={csrf}");
    let r = sent.send(
        t,
        "POST",
        "/shop/login",
        &[
            ("Content-Type", "application/x-www-form-urlencoded"),
            ("Cookie", &cookie),
        ],
        Some(form.as_bytes()),
    );
    assert_eq!(r.status, 303, "{}", r.text());
    assert_eq!(r.header("Location"), Some("/shop/"));
    let (sid, set) = r.cookie("shop_session").expect("shop_session cookie");
    assert_eq!(set, format!("shop_session={sid}; Path=/shop; HttpOnly"));
    let cookie = format!("shop_csrf={csrf}; shop_session={sid}");
    let p = sent.send(t, "GET", "/shop/product/SKU-001", &[("Cookie", &cookie)], None);
    assert_eq!(p.status, 200, "{}", p.text());
    let text = p.text();
    let token = text
        .split("<meta name=\"csrf-token\" content=\"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .unwrap_or_else(|| panic!("no csrf-token meta: {text}"))
        .to_owned();
    assert_eq!(token.len(), 64, "{token}");
    Session {
        cookie,
        session_id: sid,
        token,
    }
}

fn add(sent: &Sent, t: &Target, s: &Session, token: &str, body: &str) -> Response {
    sent.send(
        t,
        "POST",
        "/shop/cart",
        &[
            ("Cookie", &s.cookie),
            ("Content-Type", "application/json"),
            ("X-CSRF-Token", token),
        ],
        Some(body.as_bytes()),
    )
}

fn checkout(sent: &Sent, t: &Target, s: &Session) -> Response {
    sent.send(
        t,
        "POST",
        "/shop/checkout",
        &[("Cookie", &s.cookie), ("X-CSRF-Token", &s.token)],
        None,
    )
}

/// Takes the shop down and checks that nothing it started lives on.
fn down_leaves_nothing(shop: &Shop) {
    let record: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(shop.state.join("lab.json")).unwrap()).unwrap();
    let groups: Vec<i32> = record["process_groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g.as_i64().unwrap() as i32)
        .collect();
    // The lab's nginx with its SPICE helpers (spawn-fcgi, fcgiwrap, PHP-FPM,
    // node, the wsgi and asgi application servers) and the shop's gunicorn.
    let cmdlines: Vec<String> = groups
        .iter()
        .map(|g| fs::read_to_string(format!("/proc/{g}/cmdline")).unwrap_or_default())
        .collect();
    assert!(
        cmdlines.iter().any(|c| c.contains("gunicorn") && c.contains("shop")),
        "no shop gunicorn among {cmdlines:?}"
    );
    assert_success("lab down shop", &lab(shop.base.path(), &["down", "shop"]));
    for g in groups {
        assert_eq!(
            group_members(g),
            Vec::<i32>::new(),
            "process group {g} lives on after lab down"
        );
    }
    let state = shop.state.to_string_lossy().into_owned();
    for e in fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(cmd) = fs::read_to_string(e.path().join("cmdline")) {
            assert!(!cmd.contains(&state), "a process of the shop lives on: {cmd:?}");
        }
    }
    assert!(!shop.state.exists());
}

/// One session through the contract, every status and total asserted:
/// the Python shop and `benchlab serve` answer it alike. `tls` gets the
/// second cart line and the checkouts. Returns the session and the login
/// page's CSRF token.
fn contract(sent: &Sent, plain: &Target, tls: &Target, image: bool) -> (Session, String) {
    // Log in: a CSRF token that is not the cookie's, a wrong password.
    let page = sent.send(plain, "GET", "/shop/login", &[], None);
    let (csrf, _) = page.cookie("shop_csrf").unwrap();
    let cookie = format!("shop_csrf={csrf}");
    let form = |pw: &str, token: &str| format!("user={}&password={pw}&csrf={token}", USER.0);
    let ct = ("Content-Type", "application/x-www-form-urlencoded");
    for (body, status) in [(form(USER.1, "not-the-cookie"), 403), (form("wrong", &csrf), 401)] {
        let r = sent.send(
            plain,
            "POST",
            "/shop/login",
            &[ct, ("Cookie", &cookie)],
            Some(body.as_bytes()),
        );
        assert_eq!(r.status, status, "{}", r.text());
        assert!(r.cookie("shop_session").is_none());
    }
    let s = log_in(sent, plain, USER.0, USER.1);

    // A product page: the product, its price, an image of the file set.
    let r = sent.send(plain, "GET", "/shop/product/SKU-007", &[("Cookie", &s.cookie)], None);
    assert_eq!(r.status, 200);
    let text = r.text();
    assert!(text.contains("<h1>Backpack</h1>") && text.contains("79.99"), "{text}");
    assert!(
        text.contains(&format!("content=\"{}\"", s.token)),
        "the session's token is stable"
    );
    if image {
        let img = text
            .split("<img src=\"")
            .nth(1)
            .and_then(|s| s.split('"').next())
            .unwrap_or_else(|| panic!("no image: {text}"));
        assert_eq!(send(plain, "GET", img, &[], None).status, 200, "the page's image {img}");
    }
    assert_eq!(
        sent.send(plain, "GET", "/shop/product/SKU-999", &[("Cookie", &s.cookie)], None)
            .status,
        404
    );
    assert_eq!(sent.send(plain, "GET", "/shop/product/SKU-007", &[], None).status, 401);

    // The cart: token, session, body checked first, nothing added.
    let line = r#"{"sku": "SKU-007", "qty": 1}"#;
    let wrong = add(
        sent,
        plain,
        &s,
        &s.token.replace(|c: char| c.is_ascii_digit(), "x"),
        line,
    );
    assert_eq!(
        (wrong.status, wrong.json()),
        (403, serde_json::json!({"ok": false, "error": "csrf"}))
    );
    let missing = sent.send(
        plain,
        "POST",
        "/shop/cart",
        &[("Cookie", &s.cookie), ("Content-Type", "application/json")],
        Some(line.as_bytes()),
    );
    assert_eq!((missing.status, missing.json()["error"].as_str()), (403, Some("csrf")));
    let anonymous = sent.send(
        plain,
        "POST",
        "/shop/cart",
        &[("Content-Type", "application/json"), ("X-CSRF-Token", &s.token)],
        Some(line.as_bytes()),
    );
    assert_eq!(anonymous.status, 401);
    assert_eq!(add(sent, plain, &s, &s.token, "{\"sku\": ").status, 400);
    assert_eq!(
        add(sent, plain, &s, &s.token, r#"{"sku": "SKU-999", "qty": 1}"#).status,
        400
    );
    assert_eq!(
        add(sent, plain, &s, &s.token, r#"{"sku": "SKU-007", "qty": 0}"#).status,
        400
    );

    // Two items, the second over TLS, and the checkout over TLS.
    let r = add(sent, plain, &s, &s.token, line);
    assert_eq!(
        (r.status, r.json()),
        (200, serde_json::json!({"ok": true, "items": 1, "total_cents": 7999}))
    );
    let r = add(sent, tls, &s, &s.token, r#"{"sku": "SKU-003", "qty": 2}"#);
    assert_eq!(
        r.json(),
        serde_json::json!({"ok": true, "items": 3, "total_cents": 7999 + 2 * 199})
    );
    let r = checkout(sent, tls, &s);
    assert_eq!(r.status, 200, "{}", r.text());
    let order = r.json()["order"].as_u64().expect("an order id");
    assert_eq!(
        r.json(),
        serde_json::json!({"ok": true, "order": order, "items": 3, "total_cents": 8397})
    );
    // The cart is emptied.
    let r = checkout(sent, tls, &s);
    assert_eq!((r.status, r.json()["error"].as_str()), (409, Some("the cart is empty")));
    (s, csrf)
}

#[test]
fn the_shop_answers_its_contract_over_plain_http_and_tls_and_logs_every_request() {
    let shop = Shop::up();
    let (plain, tls) = (shop.plain(), shop.tls());
    let sent = Sent::default();
    let (s, csrf) = contract(&sent, &plain, &tls, true);

    // Concurrency: four sessions adding in parallel, and four threads
    // adding to one session's cart at once; every total exact.
    let shared = log_in(&sent, &plain, "user02", "pw-4393b3a2");
    let users: Vec<(String, String)> =
        fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/shop/users.csv"))
            .unwrap()
            .lines()
            .skip(1)
            .map(|l| {
                let (u, p) = l.split_once(',').unwrap();
                (u.to_owned(), p.to_owned())
            })
            .collect();
    let seen_shared = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for i in 0..4 {
            let (sent, plain, tls, users, shared, seen_shared) = (&sent, &plain, &tls, &users, &shared, &seen_shared);
            scope.spawn(move || {
                let target = if i % 2 == 0 { plain } else { tls };
                let (user, password) = &users[10 + i];
                let own = log_in(sent, target, user, password);
                for n in 1..=8u64 {
                    let r = add(sent, target, &own, &own.token, r#"{"sku": "SKU-002", "qty": 1}"#);
                    assert_eq!(
                        r.json(),
                        serde_json::json!({"ok": true, "items": n, "total_cents": n * 799})
                    );
                    let r = add(sent, target, shared, &shared.token, r#"{"sku": "SKU-015", "qty": 1}"#);
                    assert_eq!(r.status, 200, "{}", r.text());
                    let items = r.json()["items"].as_u64().unwrap();
                    assert_eq!(r.json()["total_cents"].as_u64(), Some(items * 199));
                    seen_shared.lock().unwrap().push(items);
                }
                let r = checkout(sent, target, &own);
                assert_eq!(r.json()["total_cents"].as_u64(), Some(8 * 799));
            });
        }
    });
    // Each of the 32 adds to the shared cart saw a count of its own.
    let mut seen = seen_shared.into_inner().unwrap();
    seen.sort_unstable();
    assert_eq!(seen, (1..=32).collect::<Vec<u64>>());
    let r = checkout(&sent, &plain, &shared);
    assert_eq!(r.json()["items"].as_u64(), Some(32));
    assert_eq!(r.json()["total_cents"].as_u64(), Some(32 * 199));

    // The app's log: a line per request sent, by method, path and status;
    // the orders with their totals; no secret.
    let (logged, lines) = shop.log();
    assert_eq!(logged, sent.counts());
    let orders: Vec<(u64, u64)> = lines
        .iter()
        .filter(|l| l["path"] == "/shop/checkout" && l["status"] == 200)
        .map(|l| (l["items"].as_u64().unwrap(), l["total_cents"].as_u64().unwrap()))
        .collect();
    assert_eq!(orders.len(), 6);
    assert!(
        orders.contains(&(3, 8397)) && orders.contains(&(32, 32 * 199)),
        "{orders:?}"
    );
    assert_eq!(orders.iter().filter(|o| **o == (8, 8 * 799)).count(), 4);
    let logged_users: Vec<&str> = lines.iter().filter_map(|l| l["user"].as_str()).collect();
    assert!(logged_users.contains(&"user01") && logged_users.contains(&"user02"));
    let text = fs::read_to_string(&shop.app_log).unwrap();
    for (_, password) in &users {
        assert!(!text.contains(password.as_str()), "a password in the app's log");
    }
    for secret in [&s.session_id, &s.token, &shared.session_id, &csrf] {
        assert!(
            !text.contains(secret.as_str()),
            "a session id or token in the app's log"
        );
    }
    down_leaves_nothing(&shop);
}

/// Walks the flow's users over `target` until `flows` flows ended (passed
/// or failed) for each: per step the passes, and every failure.
fn walk(text: &str, target: &Target, users: u64, flows: u64) -> (Vec<u64>, Vec<(String, String)>, Tally) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/shop");
    let spec = FlowSpec::from_toml(text).unwrap_or_else(|e| panic!("{}", e.render("flow.toml", text)));
    let flow = Arc::new(spec.compile(&dir).unwrap_or_else(|e| panic!("{e:?}")));
    let steps = flow.steps().len();
    let passed = Mutex::new(vec![0u64; steps]);
    let failed = Mutex::new(Vec::new());
    let sent = Sent::default();
    std::thread::scope(|scope| {
        for user in 0..users {
            let (flow, passed, failed, sent) = (flow.clone(), &passed, &failed, &sent);
            scope.spawn(move || {
                let mut u = FlowUser::new(flow.clone(), user, 7, Origin::new("127.0.0.1", target.tls.is_some()));
                let mut buf = RequestBuf::new();
                let mut ended = 0;
                while ended < flows {
                    let step = u.next_request(&mut buf).expect("a flow with rows to spare").index;
                    let method = String::from_utf8_lossy(buf.method()).into_owned();
                    let path = String::from_utf8_lossy(buf.target()).into_owned();
                    let headers: Vec<(String, String)> = buf
                        .headers()
                        .map(|(n, v)| {
                            (
                                String::from_utf8_lossy(n).into_owned(),
                                String::from_utf8_lossy(v).into_owned(),
                            )
                        })
                        .collect();
                    let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
                    let r = sent.send(target, &method, &path, &headers, buf.body());
                    let hs = r.headers.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes()));
                    match u.on_response(r.status, hs, &r.body) {
                        StepOutcome::Passed { step: done, .. } => {
                            assert_eq!(done, step);
                            passed.lock().unwrap()[step] += 1;
                            if step == steps - 1 {
                                ended += 1;
                            }
                        }
                        StepOutcome::Failed { step, reason } => {
                            failed.lock().unwrap().push((flow.steps()[step].name.clone(), reason));
                            ended += 1;
                        }
                        StepOutcome::NoRequest => panic!("a response without a request"),
                    }
                }
            });
        }
    });
    (
        passed.into_inner().unwrap(),
        failed.into_inner().unwrap(),
        sent.counts(),
    )
}

/// Per (method, path with the product's sku folded, status): the lines.
fn by_step(counts: &Tally) -> Tally {
    let mut out = BTreeMap::new();
    for ((m, p, s), n) in counts {
        let p = if p.starts_with("/shop/product/") {
            "/shop/product/*".to_owned()
        } else {
            p.clone()
        };
        *out.entry((m.clone(), p, *s)).or_insert(0) += n;
    }
    out
}

#[test]
fn the_shop_flow_checks_out_what_its_feeders_sent_and_a_wrong_csrf_capture_fails_add1() {
    let shop = Shop::up();
    let text = fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/shop/flow.toml")).unwrap();
    // 4 users × 5 flows over TLS: 20 flows take each items.csv row twice
    // (the `next` feeder's one counter), whatever the users' interleaving.
    let (passed, failed, sent) = walk(&text, &shop.tls(), 4, 5);
    assert_eq!(failed, Vec::<(String, String)>::new());
    assert_eq!(passed, [20, 20, 20, 20, 20, 20]);
    let key = |m: &str, p: &str, s: u16| (m.to_owned(), p.to_owned(), s);
    let expected: BTreeMap<_, _> = [
        (key("GET", "/shop/login", 200), 20),
        (key("POST", "/shop/login", 303), 20),
        (key("GET", "/shop/product/*", 200), 20),
        (key("POST", "/shop/cart", 200), 40),
        (key("POST", "/shop/checkout", 200), 20),
    ]
    .into_iter()
    .collect();
    assert_eq!(by_step(&sent), expected);
    let (logged, lines) = shop.log();
    assert_eq!(logged, sent, "the app's log against the requests sent");
    let (units, cents) = lines
        .iter()
        .filter(|l| l["path"] == "/shop/checkout")
        .fold((0, 0), |(u, c), l| {
            (u + l["items"].as_u64().unwrap(), c + l["total_cents"].as_u64().unwrap())
        });
    assert_eq!((units, cents), (2 * 37, 2 * 71_675));

    // The product page's token captured from the wrong place: every flow
    // fails at its first cart step, on the status, and never checks out.
    let wrong = text.replace(
        r#"token = 'regex:<meta name="csrf-token" content="([0-9a-f]+)">'"#,
        r#"token = 'regex:<meta charset="([^"]+)">'"#,
    );
    assert_ne!(wrong, text);
    let (passed, failed, sent) = walk(&wrong, &shop.plain(), 2, 3);
    assert_eq!(passed, [6, 6, 6, 0, 0, 0]);
    assert_eq!(failed.len(), 6);
    for (step, reason) in &failed {
        assert_eq!((step.as_str(), reason.as_str()), ("add1", "status 403, expected 200"));
    }
    assert_eq!(by_step(&sent).get(&key("POST", "/shop/cart", 403)), Some(&6));
    let (logged, _) = shop.log();
    assert_eq!(logged.get(&key("POST", "/shop/cart", 403)), Some(&6));
    assert_eq!(logged.get(&key("POST", "/shop/checkout", 200)), Some(&20));
    down_leaves_nothing(&shop);
}

#[test]
fn benchlab_serve_answers_the_shop_contract_and_flow_alike() {
    let root = tempfile::tempdir().unwrap();
    let serve = common::Serve::start(root.path(), &[]);
    let target = Target {
        port: serve.addr.port(),
        tls: None,
    };
    let sent = Sent::default();
    contract(&sent, &target, &target, false);

    // A body that arrives after its head, on a kept-alive connection: the
    // form is read (its csrf matches the cookie: 401 for the password, not
    // 403), and the next request on the connection is answered after it.
    let mut c = TcpStream::connect(serve.addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let body = "user=user01&password=wrong&csrf=abc";
    write!(
        c,
        "POST /shop/login HTTP/1.1\r\nHost: x\r\nCookie: shop_csrf=abc\r\nContent-Length: {}\r\n\r\nuser=user01&",
        body.len()
    )
    .unwrap();
    c.flush().unwrap();
    std::thread::sleep(Duration::from_millis(100));
    write!(
        c,
        "{}GET /shop/login HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        &body["user=user01&".len()..]
    )
    .unwrap();
    let mut both = String::new();
    c.read_to_string(&mut both).unwrap();
    let statuses: Vec<&str> = both
        .match_indices("HTTP/1.1 ")
        .map(|(at, _)| &both[at + 9..at + 12])
        .collect();
    assert_eq!(statuses, ["401", "200"], "{both}");
    let text = fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/shop/flow.toml")).unwrap();
    let (passed, failed, _) = walk(&text, &target, 2, 5);
    assert_eq!(failed, Vec::<(String, String)>::new());
    assert_eq!(passed, [10, 10, 10, 10, 10, 10]);
}

#[test]
fn a_tls_port_is_refused_by_name_for_a_server_without_tls() {
    let base = tempfile::tempdir().unwrap();
    let port = free_port().to_string();
    let out = lab(base.path(), &["up", "nginx", "--tls-port", &port]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim_end(),
        "benchlab: error: --tls-port: only `lab up shop` serves TLS; nginx has no TLS port"
    );
    // Nothing was started or left: no state dir.
    assert!(!base.path().join("nginx").exists());
}

/// The Python shop keeps the newest sessions only (here 3 of 5, its bound
/// lowered): older cookies get 401, their carts are gone with them. Run in
/// process by python3, as gunicorn's workers run it.
#[test]
fn the_python_shop_keeps_its_newest_sessions_only() {
    require("python3");
    let dir = tempfile::tempdir().unwrap();
    let shop_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/shop");
    fs::write(dir.path().join("secret"), [7u8; 32]).unwrap();
    let script = r#"
import io, sys
sys.path.insert(0, sys.argv[1])
import shop
shop.MAX_SESSIONS = 3
def call(method, path, body=b"", **env):
    env.update(REQUEST_METHOD=method, PATH_INFO=path, CONTENT_LENGTH=str(len(body)), **{"wsgi.input": io.BytesIO(body)})
    out = {}
    def start(status, headers):
        out["status"], out["headers"] = status, headers
    b"".join(shop.application(env, start))
    return out["status"].split()[0], out["headers"]
cookies = []
for _ in range(5):
    status, headers = call("POST", "/shop/login", b"user=user01&password=pw-e232a3da&csrf=t", HTTP_COOKIE="shop_csrf=t")
    cookie = [v for k, v in headers if k == "Set-Cookie"][0].split(";")[0]
    token = shop.csrf_for(cookie.split("=", 1)[1])
    line = b'{"sku": "SKU-001", "qty": 1}'
    call("POST", "/shop/cart", line, HTTP_COOKIE=cookie, CONTENT_TYPE="application/json", HTTP_X_CSRF_TOKEN=token)
    cookies.append(cookie)
print(" ".join(call("GET", "/shop/product/SKU-001", HTTP_COOKIE=c)[0] for c in cookies))
print(shop.db().execute("SELECT COUNT(*) FROM sessions").fetchone()[0], shop.db().execute("SELECT COUNT(*) FROM cart").fetchone()[0])
"#;
    let out = Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(&shop_dir)
        .env("SHOP_DB", dir.path().join("shop.db"))
        .env("SHOP_LOG", dir.path().join("shop.log"))
        .env("SHOP_SECRET_FILE", dir.path().join("secret"))
        .env("SHOP_PRODUCTS", shop_dir.join("products.csv"))
        .env("SHOP_USERS", shop_dir.join("users.csv"))
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("run python3");
    assert_success("python3 with the shop", &out);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "401 401 200 200 200\n3 3\n");
}

/// The shipped `ecommerce` suite, shortened for a test (3 s, no think
/// time, its first mix) and pointed at `plain` and `tls` (origins,
/// `http://127.0.0.1:PORT`), its ad through SPI `spi`, its files by their
/// paths in the repository.
fn ecommerce_suite(plain: &str, tls: &str, spi: &str) -> String {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let shipped = fs::read_to_string(repo.join("suites/ecommerce.toml")).expect("the suite");
    let text = shipped
        .replace("http://127.0.0.1:8080", plain)
        .replace("https://127.0.0.1:8443", tls)
        .replace("/spice/fastcgi/", &format!("/spice/{spi}/"))
        .replace("\"data/", &format!("\"{}/suites/data/", repo.display()))
        .replace("\"../deploy/", &format!("\"{}/deploy/", repo.display()))
        .replace("length = \"300s\"", "length = \"3s\"")
        .replace("ramp_up = \"30s\"", "ramp_up = \"0s\"")
        .replace("ramp_down = \"30s\"", "ramp_down = \"0s\"");
    let mut text = text
        .lines()
        .filter(|l| !l.starts_with("think = "))
        .collect::<Vec<_>>()
        .join("\n");
    let second_mix = text.find("[[mix]]\nclients = 4").expect("the suite's second mix");
    text.truncate(second_mix);
    text
}

/// `specweb99` with 5 directories (the pages the suite browses).
fn specweb99(dir: &Path) -> PathBuf {
    let set = dir.join("specweb99");
    let out = Command::new(benchlab_bin())
        .args(["fileset", "generate", "specweb99", "--dirs", "5", "--out"])
        .arg(&set)
        .output()
        .expect("fileset generate");
    assert_success("fileset generate", &out);
    set
}

/// Runs suite `text` (`--insecure`) and returns its mix.
fn run_suite(dir: &Path, name: &str, text: &str) -> serde_json::Value {
    let suite = dir.join(format!("{name}.toml"));
    fs::write(&suite, text).expect("suite");
    common::run_suite(&suite, &dir.join(name), &["--insecure"])["mixes"][0].clone()
}

fn num(v: &serde_json::Value, p: &str) -> u64 {
    v.pointer(p)
        .and_then(|x| x.as_u64())
        .unwrap_or_else(|| panic!("{p}: {v}"))
}

/// A step's (requests, errors).
fn step_of(m: &serde_json::Value, name: &str) -> (u64, u64) {
    let c = m["classes"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["name"] == name))
        .unwrap_or_else(|| panic!("no step {name}"));
    (num(c, "/requests"), num(c, "/errors_total"))
}

/// Lines of `counts` for `method`, `path` (a trailing `*`: any path it
/// starts) and `status`.
fn logged(counts: &Tally, method: &str, path: &str, status: u16) -> u64 {
    counts
        .iter()
        .filter(|((m, p, s), _)| {
            m == method && *s == status && (p == path || path.strip_suffix('*').is_some_and(|pre| p.starts_with(pre)))
        })
        .map(|(_, k)| k)
        .sum()
}

/// Every shop step's count against a log's: each request a step ended is a
/// line; one still in flight when the mix stopped may be logged too.
fn shop_steps_against(m: &serde_json::Value, counts: &Tally) {
    let in_flight = num(m, "/in_flight");
    let within = |what: &str, log: u64, ended: u64| {
        assert!(
            log >= ended && log <= ended + in_flight,
            "{what}: {log} logged, {ended} ended (+{in_flight} in flight)"
        );
    };
    within(
        "login page",
        logged(counts, "GET", "/shop/login", 200),
        step_of(m, "login_page").0,
    );
    within(
        "login",
        logged(counts, "POST", "/shop/login", 303),
        step_of(m, "login").0,
    );
    within(
        "product",
        logged(counts, "GET", "/shop/product/*", 200),
        step_of(m, "product").0,
    );
    within(
        "cart",
        logged(counts, "POST", "/shop/cart", 200),
        step_of(m, "add1").0 + step_of(m, "add2").0,
    );
    within(
        "checkout",
        logged(counts, "POST", "/shop/checkout", 200),
        step_of(m, "checkout").0,
    );
}

/// The shipped `ecommerce` suite (a flow) run by `benchlab run` against
/// `lab up shop`: every shop step's count equals the app's own log
/// (method, path, status), each checkout's total is the one its feeder row
/// says (the step's check, and the log), the browse and ad steps are
/// nginx's; and with a wrong CSRF capture, every flow fails at `add1` with
/// `check_failed`, each one a 403 in the app's log, and none checks out.
#[test]
fn the_ecommerce_suite_walks_the_shop_counted_against_the_apps_log() {
    let work = tempfile::tempdir().expect("tempdir");
    let set = specweb99(work.path());
    let totals: Vec<u64> =
        fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/shop/items.csv"))
            .expect("items.csv")
            .lines()
            .skip(1)
            .filter_map(|l| l.rsplit(',').next()?.parse().ok())
            .collect();
    for wrong_csrf in [false, true] {
        let shop = Shop::serving(Some(&set));
        let mut text = ecommerce_suite(
            &format!("http://127.0.0.1:{}", shop.port),
            &format!("https://127.0.0.1:{}", shop.tls_port),
            "fastcgi",
        );
        if wrong_csrf {
            text = text.replace(
                r#"'regex:<meta name="csrf-token" content="([0-9a-f]+)">'"#,
                r#"'regex:<meta charset="([^"]+)"'"#,
            );
        }
        let m = run_suite(work.path(), if wrong_csrf { "wrong" } else { "right" }, &text);
        let (counts, lines) = shop.log();
        if !wrong_csrf {
            assert_eq!(num(&m, "/errors_total"), 0, "{m}");
            assert!(num(&m, "/flows/completed") > 0, "{m}");
            shop_steps_against(&m, &counts);
            assert!(step_of(&m, "browse").0 > 0 && step_of(&m, "ad").0 > 0);
            // Each checkout's total is one a feeder row carries (the step's
            // check compared it with its own row's).
            for l in lines.iter().filter(|l| l["path"] == "/shop/checkout") {
                let t = l["total_cents"].as_u64().expect("a checkout's total");
                assert!(totals.contains(&t), "{l}");
            }
        } else {
            let (add1_ok, add1_err) = step_of(&m, "add1");
            assert_eq!(add1_ok, 0);
            assert!(add1_err > 0, "{m}");
            assert_eq!(num(&m, "/errors/check_failed"), add1_err, "{m}");
            assert_eq!(step_of(&m, "add2"), (0, 0));
            assert_eq!(step_of(&m, "checkout"), (0, 0));
            assert_eq!(num(&m, "/flows/abandoned"), add1_err, "{m}");
            let wrong = logged(&counts, "POST", "/shop/cart", 403);
            let in_flight = num(&m, "/in_flight");
            assert!(
                wrong >= add1_err && wrong <= add1_err + in_flight,
                "{wrong} vs {add1_err}"
            );
            assert_eq!(logged(&counts, "POST", "/shop/checkout", 200), 0);
            let why = m["flows"]["check_failures"]["add1"].as_str().unwrap_or_default();
            assert!(why.contains("status 403"), "{why}");
        }
    }
}

/// The same suite against benchlab's own server (docs/shop.md: the same
/// /shop/ contract, SPICE in-process; no TLS, so the checkout stays on
/// the plain origin): no error, and every shop step counted against the
/// server's access log.
#[test]
fn the_ecommerce_suite_walks_benchlab_serves_shop_alike() {
    let work = tempfile::tempdir().expect("tempdir");
    let set = specweb99(work.path());
    let access = work.path().join("access.log");
    let serve = common::Serve::start(&set, &["--access-log", access.to_str().unwrap()]);
    let origin = format!("http://{}", serve.addr);
    let m = run_suite(work.path(), "serve", &ecommerce_suite(&origin, &origin, "inproc"));
    assert_eq!(num(&m, "/errors_total"), 0, "{m}");
    assert!(num(&m, "/flows/completed") > 0, "{m}");
    // The access log is flushed every second and at exit.
    drop(serve);
    let mut counts = Tally::new();
    for line in fs::read_to_string(&access).expect("access log").lines() {
        // Common Log Format: … "METHOD PATH HTTP/1.1" STATUS BYTES
        let Some((request, rest)) = line.split_once('"').and_then(|(_, r)| r.split_once('"')) else {
            continue;
        };
        let mut r = request.split(' ');
        let (method, path) = (r.next().unwrap_or(""), r.next().unwrap_or(""));
        let status: u16 = rest.split_whitespace().next().and_then(|s| s.parse().ok()).unwrap_or(0);
        *counts
            .entry((
                method.to_owned(),
                path.split('?').next().unwrap_or("").to_owned(),
                status,
            ))
            .or_insert(0) += 1;
    }
    shop_steps_against(&m, &counts);
}
