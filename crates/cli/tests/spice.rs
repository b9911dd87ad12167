//! The SPICE programs (`spice/`) under real servers (nginx, Apache httpd,
//! lighttpd) configured from `deploy/spice/`, and run directly as CGI.
//!
//! For each server and each SPI (`cgi-c`, `cgi-script`, `cgi-perl`,
//! `fastcgi`), at the
//! URLs of docs/spice.md's "URL layout": ad rotation, session and sleep
//! requests for a 4,096-byte and a 10,000-byte file return exactly the
//! file's bytes with the right Content-Length (as the static file does);
//! the session log's counter equals the number of session requests; and
//! under concurrent load from the real `benchlab http`, no log line is lost,
//! torn or interleaved.

mod spice_support;

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use spice_support::lab::APP_WORKERS;
use spice_support::servers::{self, SpiceServer, FASTCGI_PROCS, FPM_PROCS};
use spice_support::{
    benchlab_json, expected_ad, file_contents, get, now_s, programs, read_session_log, Response, SessionLog, APP_SPIS,
    CONTAINER_SPIS, COOKIE, FILE_10K, FILE_4K, SPIS, USER_AGENT,
};

/// The `ms` of the sleep program's timing check.
const SLEEP_MS: u64 = 2000;

/// Requests of the concurrent session load, and its virtual users.
const LOAD_REQUESTS: u64 = 300;
const LOAD_THREADS: &str = "16";

/// Checks a 200 response carries exactly `file`'s bytes, framed by an exact
/// Content-Length (not chunked).
fn assert_file(r: &Response, file: &str, what: &str) {
    let want = file_contents(file);
    assert_eq!(
        r.status,
        200,
        "{what}: status {} (body {:?})",
        r.status,
        String::from_utf8_lossy(&r.body)
    );
    assert_eq!(
        r.header("transfer-encoding"),
        None,
        "{what}: chunked instead of Content-Length"
    );
    assert_eq!(
        r.header("content-length"),
        Some(want.len().to_string().as_str()),
        "{what}: Content-Length"
    );
    assert!(
        r.body == want,
        "{what}: body differs from the file ({} bytes, want {})",
        r.body.len(),
        want.len()
    );
}

/// Checks the session log after `paths` were requested in this order (one
/// at a time), and that its times lie between `t0` and now.
fn assert_log_sequential(srv: &SpiceServer, spi: &str, paths: &[&str], t0: i64) -> SessionLog {
    let log = read_session_log(&srv.session_log);
    let what = format!("{} {spi} session log", srv.name);
    assert_eq!(log.counter, paths.len() as u64, "{what}: counter");
    let got: Vec<&str> = log.lines.iter().map(|l| l.path.as_str()).collect();
    assert_eq!(got, paths, "{what}: paths");
    for l in &log.lines {
        assert!(
            l.time >= t0 - 2 && l.time <= now_s() + 2,
            "{what}: time {} out of the run",
            l.time
        );
    }
    log
}

/// Every check of one SPI on one running server.
fn check_spi(srv: &SpiceServer, spi: &str) {
    let port = srv.port;
    let query = "q=7&x=y";
    let ad = expected_ad(query, COOKIE, USER_AGENT).to_string();

    // One request of each kind for each file.
    srv.reset_session_log();
    let t0 = now_s();
    for file in [FILE_4K, FILE_10K] {
        let stat = get(port, file);
        assert_file(&stat, file, &format!("{} static {file}", srv.name));

        let url = format!("/spice/{spi}/adrot{file}?{query}");
        let r = get(port, &url);
        let what = format!("{} GET {url}", srv.name);
        assert_file(&r, file, &what);
        assert_eq!(
            r.header("x-ad"),
            Some(ad.as_str()),
            "{what}: X-Ad (from query, cookie, user agent)"
        );
        assert_eq!(
            r.header("content-type"),
            stat.header("content-type"),
            "{what}: Content-Type as static"
        );

        let url = format!("/spice/{spi}/session{file}");
        assert_file(&get(port, &url), file, &format!("{} GET {url}", srv.name));

        let url = format!("/spice/{spi}/sleep{file}?ms=50");
        let r = get(port, &url);
        assert_file(&r, file, &format!("{} GET {url}", srv.name));
        assert!(
            r.elapsed >= Duration::from_millis(50),
            "{} GET {url}: answered in {:?}",
            srv.name,
            r.elapsed
        );
    }
    assert_log_sequential(srv, spi, &[FILE_4K, FILE_10K], t0);

    // sleep?ms=N waits N ms: the median of 4 concurrent requests from the
    // real load generator (the FastCGI and PHP-FPM pools' size) is never
    // below N, and, less that of ms=0 (the SPI's own cost, measured just
    // before), within 5 % of N. N is two seconds, so that 5 % (100 ms)
    // absorbs scheduling on a busy 2-core machine, and the best of three
    // tries counts: a moment of another test's load does not fail it,
    // while a program that sleeps the wrong time fails all three.
    let p50 = |ms: u64| {
        let url = format!("http://127.0.0.1:{port}/spice/{spi}/sleep{FILE_4K}?ms={ms}");
        let v = benchlab_json(&["--requests", "4", "--threads", "4", "--validate", "size", &url]);
        assert_eq!(v["errors_total"].as_u64(), Some(0), "{} GET {url}: {v}", srv.name);
        v["latency_us"]["p50"]
            .as_u64()
            .unwrap_or_else(|| panic!("no p50 in {v}"))
    };
    let mut tries = Vec::new();
    for _ in 0..3 {
        let (base, slept) = (p50(0), p50(SLEEP_MS));
        assert!(
            slept >= SLEEP_MS * 1000,
            "{} {spi}: sleep ms={SLEEP_MS}: p50 {slept} µs, shorter than asked",
            srv.name
        );
        tries.push((slept, base));
        if slept.saturating_sub(base) <= SLEEP_MS * 1050 {
            break;
        }
    }
    let (slept, base) = tries[tries.len() - 1];
    assert!(
        slept.saturating_sub(base) <= SLEEP_MS * 1050,
        "{} {spi}: sleep ms={SLEEP_MS}: (p50, p50 of ms=0) {tries:?} µs: want {SLEEP_MS} ms more, within 5 %",
        srv.name
    );

    for bad in [
        format!("/spice/{spi}/adrot/missing.html"),
        format!("/spice/{spi}/session/missing.html"),
        format!("/spice/{spi}/nokind/a.html"),
    ] {
        let r = get(port, &bad);
        assert_eq!(
            r.status,
            404,
            "{} GET {bad}: {:?}",
            srv.name,
            String::from_utf8_lossy(&r.body)
        );
    }
    // Missing files are not logged.
    assert_eq!(
        read_session_log(&srv.session_log).counter,
        2,
        "{} {spi}: a 404 was logged",
        srv.name
    );

    // Concurrent session load from the real load generator.
    srv.reset_session_log();
    let t0 = now_s();
    let url = format!("http://127.0.0.1:{port}/spice/{spi}/session{FILE_4K}");
    let v = benchlab_json(&[
        "--requests",
        &LOAD_REQUESTS.to_string(),
        "--threads",
        LOAD_THREADS,
        "--validate",
        "size",
        "--timeout",
        "20s",
        &url,
    ]);
    let what = format!("{} {spi} session load", srv.name);
    assert_eq!(
        v["errors_total"].as_u64(),
        Some(0),
        "{what}: errors in {v}\n{}",
        srv.error_log()
    );
    assert_eq!(v["requests"].as_u64(), Some(LOAD_REQUESTS), "{what}: requests in {v}");
    assert_eq!(
        v["body_bytes"].as_u64(),
        Some(LOAD_REQUESTS * 4096),
        "{what}: body bytes in {v}"
    );

    // benchlab's preflight request is a session request too.
    let log = read_session_log(&srv.session_log);
    let expected = LOAD_REQUESTS + 1;
    assert_eq!(log.counter, expected, "{what}: counter");
    assert_eq!(log.lines.len() as u64, expected, "{what}: lines after the counter");
    assert!(
        log.lines.iter().all(|l| l.path == FILE_4K),
        "{what}: a line names another file"
    );
    // Appended under the lock, in the order the counter was incremented.
    assert!(
        log.lines.windows(2).all(|w| w[0].time <= w[1].time),
        "{what}: times out of order"
    );
    assert!(
        log.lines[0].time >= t0 - 2 && log.lines[log.lines.len() - 1].time <= now_s() + 2,
        "{what}: times"
    );
    let pids: BTreeSet<u32> = log.lines.iter().map(|l| l.pid).collect();
    if CONTAINER_SPIS.contains(&spi) {
        // One JVM serves every request.
        assert_eq!(pids.len(), 1, "{what}: pids {pids:?}, want the container's one");
    } else if APP_SPIS.contains(&spi) {
        // The application server's worker processes, however many requests.
        assert!(
            pids.len() <= APP_WORKERS,
            "{what}: {} pids, want at most the {APP_WORKERS} workers",
            pids.len()
        );
    } else if spi == "fastcgi" {
        assert!(
            pids.len() <= FASTCGI_PROCS,
            "{what}: {} FastCGI pids, want at most {FASTCGI_PROCS}",
            pids.len()
        );
        if let Some(known) = &srv.fastcgi_pids {
            assert!(
                pids.iter().all(|p| known.contains(p)),
                "{what}: pids {pids:?} are not spawn-fcgi's {known:?}"
            );
        }
    } else if spi == "node" {
        // One process, serialising its session requests behind the flock.
        match srv.node_pid {
            Some(node) => assert_eq!(pids, BTreeSet::from([node]), "{what}: node's pids"),
            None => assert_eq!(pids.len(), 1, "{what}: node's pids {pids:?}"),
        }
    } else if spi == "php-fpm" {
        assert!(
            pids.len() <= FPM_PROCS,
            "{what}: {} PHP-FPM pids, want at most {FPM_PROCS}",
            pids.len()
        );
        if let Some(known) = &srv.php_fpm_pids {
            assert!(
                pids.iter().all(|p| known.contains(p)),
                "{what}: pids {pids:?} are not PHP-FPM's workers {known:?}"
            );
        }
    } else {
        // A process per CGI request: many different process ids.
        assert!(pids.len() > 100, "{what}: only {} different CGI pids", pids.len());
    }
}

fn check_server(srv: SpiceServer) {
    for spi in SPIS {
        check_spi(&srv, spi);
    }
}

/// The shtml SPI (nginx's ssi, Apache's mod_include): the server-parsed
/// page's body is exactly the file's bytes, chunked (no length up front),
/// Content-Type as the static file's; a missing file is a 404, not a 200
/// page with SSI's error text; its one program is `include`.
fn check_shtml(srv: &SpiceServer) {
    let port = srv.port;
    for file in [FILE_4K, FILE_10K] {
        let stat = get(port, file);
        let url = format!("/spice/shtml/include{file}");
        let r = get(port, &url);
        let what = format!("{} GET {url}", srv.name);
        assert_eq!(
            r.status,
            200,
            "{what}: {:?}\n{}",
            String::from_utf8_lossy(&r.body),
            srv.error_log()
        );
        assert_eq!(r.header("transfer-encoding"), Some("chunked"), "{what}: framing");
        assert!(
            r.body == file_contents(file),
            "{what}: body differs from the file ({} bytes: {:?})",
            r.body.len(),
            String::from_utf8_lossy(&r.body[..r.body.len().min(200)])
        );
        assert_eq!(
            r.header("content-type"),
            stat.header("content-type"),
            "{what}: Content-Type"
        );
        assert_eq!(r.header("x-ad"), None, "{what}");
    }
    for bad in [
        "/spice/shtml/include/missing.html",
        "/spice/shtml/include/dir1",
        "/spice/shtml/adrot/a.html",
    ] {
        let r = get(port, bad);
        assert_eq!(
            r.status,
            404,
            "{} GET {bad}: {:?}",
            srv.name,
            String::from_utf8_lossy(&r.body)
        );
    }
    // Under load from the real load generator: every body the file's size.
    let url = format!("http://127.0.0.1:{port}/spice/shtml/include{FILE_10K}");
    let v = benchlab_json(&[
        "--requests",
        "200",
        "--threads",
        "8",
        "--validate",
        "size",
        "--timeout",
        "20s",
        &url,
    ]);
    assert_eq!(v["errors_total"].as_u64(), Some(0), "{} shtml load: {v}", srv.name);
    assert_eq!(
        v["body_bytes"].as_u64(),
        Some(200 * 10_000),
        "{} shtml load: {v}",
        srv.name
    );
}

#[test]
fn spice_under_nginx() {
    let srv = servers::nginx();
    check_shtml(&srv);
    check_server(srv);
}

#[test]
fn spice_under_apache() {
    let srv = servers::apache();
    check_shtml(&srv);
    check_server(srv);
}

#[test]
fn spice_under_lighttpd() {
    check_server(servers::lighttpd());
}

/// `sleep?ms=N` under load: 16 requests from 16 virtual users at once, each
/// waits N ms and no more (p50 within 5 %); an application server whose
/// workers served one request at a time (a blocked event loop, sync
/// workers) would queue 16 on its 4 workers and double the median. N is two
/// seconds, so that 5 % (100 ms) absorbs scheduling; and the best of three
/// runs counts, so that a moment of a busy machine (another test's JVM
/// starting, a build) does not fail it while a server that queues fails
/// all three.
fn check_sleep_under_load(srv: &SpiceServer, spi: &str) {
    const MS: u64 = 2000;
    let url = format!("http://127.0.0.1:{}/spice/{spi}/sleep{FILE_4K}?ms={MS}", srv.port);
    let what = format!("{} {spi} sleep load", srv.name);
    let mut p50s = Vec::new();
    for _ in 0..3 {
        let v = benchlab_json(&[
            "--requests",
            "16",
            "--threads",
            "16",
            "--timeout",
            "20s",
            "--validate",
            "size",
            &url,
        ]);
        assert_eq!(v["errors_total"].as_u64(), Some(0), "{what}: errors in {v}");
        assert_eq!(v["requests"].as_u64(), Some(16), "{what}: requests in {v}");
        let p50 = v["latency_us"]["p50"].as_u64().expect("latency_us.p50");
        assert!(p50 >= MS * 1000, "{what}: p50 {p50} µs, shorter than the {MS} ms asked");
        p50s.push(p50);
        if p50 <= MS * 1050 {
            return;
        }
    }
    panic!("{what}: p50 {p50s:?} µs, want {MS} ms to 5 % over");
}

/// HEAD through the server: the status and Content-Length of the GET
/// (the file's size, the X-Ad of ad rotation), and no body.
fn check_head(srv: &SpiceServer, spi: &str) {
    let path = format!("/spice/{spi}/adrot{FILE_10K}");
    let r = spice_support::lab::request(spice_support::lab::tcp(srv.port), "HEAD", &path);
    let what = format!("{} HEAD {path}", srv.name);
    assert_eq!(r.status, 200, "{what}");
    assert_eq!(r.header("content-length"), Some("10000"), "{what}");
    assert_eq!(
        r.header("x-ad"),
        Some(expected_ad("", COOKIE, USER_AGENT).to_string().as_str()),
        "{what}"
    );
    assert!(r.body.is_empty(), "{what}: a body of {} bytes", r.body.len());
}

/// The WSGI and ASGI programs on their application servers' own sockets,
/// with no web server between to normalise the path: `.` and `..`
/// segments and control characters refused (400), a bad `ms` 400, a
/// missing file or an unknown kind 404, other methods 405, HEAD without a
/// body; and none of it logged.
fn check_app_sockets(lab: &spice_support::lab::LabServer) {
    lab.srv.reset_session_log();
    for (spi, sock) in [("wsgi", "gunicorn.sock"), ("asgi", "uvicorn.sock")] {
        let sock = lab.state.join("run").join(sock);
        let cases: &[(&str, String, u16)] = &[
            ("GET", format!("/spice/{spi}/session/dir1/../a.html"), 400),
            ("GET", format!("/spice/{spi}/session/./a.html"), 400),
            ("GET", format!("/spice/{spi}/session/a%09b.html"), 400),
            ("GET", format!("/spice/{spi}/sleep/a.html?ms=abc"), 400),
            ("GET", format!("/spice/{spi}/sleep/a.html?ms=600001"), 400),
            ("GET", format!("/spice/{spi}/session/missing.html"), 404),
            ("GET", format!("/spice/{spi}/session/dir1"), 404),
            ("GET", format!("/spice/{spi}/bogus/a.html"), 404),
            ("POST", format!("/spice/{spi}/session/a.html"), 405),
            ("HEAD", format!("/spice/{spi}/adrot{FILE_4K}"), 200),
        ];
        for (method, path, status) in cases {
            let r = spice_support::lab::request(spice_support::lab::unix(&sock), method, path);
            let what = format!("{method} {path} on {}", sock.display());
            assert_eq!(r.status, *status, "{what}: {:?}", String::from_utf8_lossy(&r.body));
            if *status == 200 {
                assert_eq!(r.header("content-length"), Some("4096"), "{what}");
                assert!(r.body.is_empty(), "{what}: HEAD sent a body");
            } else {
                assert_eq!(
                    r.header("content-length"),
                    Some(r.body.len().to_string().as_str()),
                    "{what}"
                );
            }
            if *status == 405 {
                assert_eq!(r.header("allow"), Some("GET, HEAD"), "{what}");
            }
        }
    }
    // `lab up` makes the log empty (mode 0666, for every SPI's workers).
    let logged = fs::read_to_string(&lab.srv.session_log).unwrap_or_default();
    assert!(logged.is_empty(), "a refused request was logged: {logged:?}");
}

/// The application-server SPIs (`wsgi` under gunicorn, `asgi` under
/// uvicorn) behind one server as `benchlab lab up` runs them: every check
/// of the other SPIs, the sleep under concurrent load, then `lab down`
/// leaves no process behind.
fn check_app_spis(server: &'static str) {
    let lab = spice_support::lab::up(server);
    for spi in APP_SPIS {
        check_spi(&lab.srv, spi);
        check_head(&lab.srv, spi);
        check_sleep_under_load(&lab.srv, spi);
    }
    if server == "nginx" {
        check_app_sockets(&lab);
    }
    lab.down();
}

#[test]
fn wsgi_and_asgi_under_nginx() {
    check_app_spis("nginx");
}

#[test]
fn wsgi_and_asgi_under_apache() {
    check_app_spis("apache-event");
}

#[test]
fn wsgi_and_asgi_under_lighttpd() {
    check_app_spis("lighttpd");
}

/// One servlet container at a time in this test binary: a JVM's start
/// takes the CPUs for seconds, and two at once would slow each other's
/// timed requests.
fn one_jvm() -> std::sync::MutexGuard<'static, ()> {
    static JVM: std::sync::Mutex<()> = std::sync::Mutex::new(());
    JVM.lock().unwrap_or_else(|e| e.into_inner())
}

/// The servlet and the JSP page in a container standing alone (`lab up
/// tomcat`, `lab up jetty`), as the other SPIs are checked; one JVM start
/// for both.
fn check_container(server: &'static str) {
    let _one = one_jvm();
    let lab = spice_support::lab::up(server);
    for spi in CONTAINER_SPIS {
        check_spi(&lab.srv, spi);
        check_head(&lab.srv, spi);
        check_sleep_under_load(&lab.srv, spi);
    }
    lab.down();
}

/// Seed 001's other deployment: the servlet and the JSP page in a
/// container behind nginx or Apache (`lab up SERVER --container NAME`), the
/// proxy serving the static files. Two of the four pairs (JVM starts are
/// slow): Tomcat behind nginx, Jetty behind Apache.
fn check_container_behind(server: &'static str, container: &str) {
    let _one = one_jvm();
    let lab = spice_support::lab::up_with(server, &["--container", container]);
    let record: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(lab.state.join("lab.json")).unwrap()).unwrap();
    assert_eq!(
        record["spis"],
        serde_json::json!([
            "cgi-c",
            "cgi-script",
            "cgi-perl",
            "fastcgi",
            "php-fpm",
            "shtml",
            "node",
            "wsgi",
            "asgi",
            "servlet",
            "jsp"
        ]),
        "{server}"
    );
    for spi in CONTAINER_SPIS {
        check_spi(&lab.srv, spi);
        check_head(&lab.srv, spi);
        check_sleep_under_load(&lab.srv, spi);
    }
    lab.down();
}

#[test]
fn servlet_and_jsp_under_tomcat() {
    check_container("tomcat");
}

#[test]
fn servlet_and_jsp_under_jetty() {
    check_container("jetty");
}

#[test]
fn servlet_and_jsp_in_tomcat_behind_nginx() {
    check_container_behind("nginx", "tomcat");
}

#[test]
fn servlet_and_jsp_in_jetty_behind_apache() {
    check_container_behind("apache-event", "jetty");
}

/// `--container` where it cannot apply is refused by name, before anything
/// starts.
#[test]
fn a_container_behind_a_server_that_cannot_proxy_to_it_is_refused() {
    let base = tempfile::tempdir().unwrap();
    for (args, want) in [
        (
            &["up", "lighttpd", "--container", "tomcat"][..],
            "--container: lighttpd does not proxy to a servlet container",
        ),
        (
            &["up", "tomcat", "--container", "tomcat"][..],
            "--container: tomcat does not proxy to a servlet container",
        ),
        (
            &["up", "nginx", "--container", "jboss"][..],
            "--container \"jboss\": expected tomcat or jetty",
        ),
    ] {
        let out = spice_support::lab::lab(base.path(), args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert_eq!(fs::read_dir(base.path()).unwrap().count(), 0, "{args:?} left state");
    }
}

/// The sleep variant sleeps 3 s unless `ms` says otherwise (c't 1999); the
/// three SPIs are asked at once, so this costs 3 s.
#[test]
fn sleep_defaults_to_three_seconds() {
    let srv = servers::nginx();
    let port = srv.port;
    let handles: Vec<_> = SPIS
        .iter()
        .map(|spi| {
            let url = format!("/spice/{spi}/sleep{FILE_4K}");
            std::thread::spawn(move || (get(port, &url), url))
        })
        .collect();
    for h in handles {
        let (r, url) = h.join().unwrap();
        assert_file(&r, FILE_4K, &url);
        assert!(
            r.elapsed >= Duration::from_millis(3000) && r.elapsed < Duration::from_millis(6000),
            "GET {url} answered in {:?}, want 3 s",
            r.elapsed
        );
    }
}

/// Runs a CGI program directly with exactly `env` and returns its stdout.
fn run_cgi(program: &Path, env: &[(&str, &str)]) -> Vec<u8> {
    let out = Command::new(program)
        .env_clear()
        .envs(env.iter().copied())
        .output()
        .unwrap_or_else(|e| panic!("run {}: {e}", program.display()));
    assert!(out.status.success(), "{} {env:?}: {}", program.display(), out.status);
    out.stdout
}

/// Splits a CGI response into (Status code, head, body).
fn split_cgi(out: &[u8]) -> (u16, String, Vec<u8>) {
    let end = out
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("CGI head ends with an empty line");
    let head = String::from_utf8_lossy(&out[..end]).into_owned();
    let status = head
        .strip_prefix("Status: ")
        .and_then(|s| s.get(..3))
        .and_then(|s| s.parse().ok());
    (status.expect("Status header first"), head, out[end + 4..].to_vec())
}

/// The three CGI programs, run directly: the same bytes out for the same
/// request (they are the same SPICE program in C, Python and Perl), the
/// right status for every bad request, and a log that C, Python and Perl
/// processes share under load without losing or tearing a line.
#[test]
fn cgi_programs_agree_and_reject_bad_requests() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("www");
    spice_support::make_docroot(&root);
    let root_s = root.display().to_string();
    let log = dir.path().join("session.log");
    let log_s = log.display().to_string();
    let c = programs().join("cgi-c");
    let py = programs().join("spice.py");
    spice_support::chmod(&py, 0o755);
    let pl = programs().join("spice.pl");
    spice_support::chmod(&pl, 0o755);

    let cases: &[(&str, &str, &str, u16)] = &[
        // method, PATH_INFO, QUERY_STRING, status
        ("GET", "/adrot/a.html", "q=1&r=2", 200),
        ("GET", "/adrot/dir1/b.html", "", 200),
        ("GET", "/session/a.html", "", 200),
        ("GET", "/sleep/dir1/b.html", "ms=30", 200),
        ("GET", "/sleep/a.html", "a=b&ms=0", 200),
        ("HEAD", "/adrot/dir1/b.html", "", 200),
        ("GET", "/adrot/../www/a.html", "", 400),
        ("GET", "/adrot/dir1/../a.html", "", 400),
        ("GET", "/adrot/./a.html", "", 400),
        ("GET", "/adrot/a\tb.html", "", 400),
        ("GET", "/adrot/a\nb.html", "", 400),
        ("GET", "/sleep/a.html", "ms=abc", 400),
        ("GET", "/sleep/a.html", "ms=600001", 400),
        ("GET", "/sleep/a.html", "ms=", 400),
        ("GET", "/sleep/a.html", "ms=1x", 400),
        ("GET", "/sleep/a.html", "ms=0000000000001", 200),
        ("", "/adrot/a.html", "x=1", 200),
        ("GET", "/adrot/missing.html", "", 404),
        ("GET", "/adrot/dir1", "", 404),
        ("GET", "/adrot/", "", 404),
        ("GET", "/adrot", "", 404),
        ("GET", "/bogus/a.html", "", 404),
        ("GET", "", "", 404),
        ("POST", "/adrot/a.html", "", 405),
    ];
    for &(method, path_info, qs, status) in cases {
        let env = [
            ("REQUEST_METHOD", method),
            ("PATH_INFO", path_info),
            ("QUERY_STRING", qs),
            ("HTTP_COOKIE", COOKIE),
            ("HTTP_USER_AGENT", USER_AGENT),
            ("SPICE_ROOT", root_s.as_str()),
            ("SPICE_SESSION_LOG", log_s.as_str()),
        ];
        let start = Instant::now();
        let out_c = run_cgi(&c, &env);
        if path_info.starts_with("/sleep/") && qs == "ms=30" {
            assert!(
                start.elapsed() >= Duration::from_millis(30),
                "sleep ms=30 returned early"
            );
        }
        let out_py = run_cgi(&py, &env);
        let out_pl = run_cgi(&pl, &env);
        let what = format!("{method} {path_info:?} ?{qs}");
        assert!(
            out_c == out_py,
            "{what}: cgi-c and spice.py differ:\n{:?}\n{:?}",
            String::from_utf8_lossy(&out_c),
            String::from_utf8_lossy(&out_py)
        );
        assert!(
            out_c == out_pl,
            "{what}: cgi-c and spice.pl differ:\n{:?}\n{:?}",
            String::from_utf8_lossy(&out_c),
            String::from_utf8_lossy(&out_pl)
        );
        let (got, head, body) = split_cgi(&out_c);
        assert_eq!(got, status, "{what}: {head}");
        if status == 200 {
            let file = format!("/{}", path_info.splitn(3, '/').nth(2).unwrap());
            let want = file_contents(&file);
            assert!(
                head.contains(&format!("\r\nContent-Length: {}", want.len())),
                "{what}: {head}"
            );
            assert!(head.contains("\r\nContent-Type: text/html"), "{what}: {head}");
            if method == "HEAD" {
                assert!(body.is_empty(), "{what}: HEAD sent a body");
            } else {
                assert!(body == want, "{what}: body differs from the file");
            }
            if path_info.starts_with("/adrot/") {
                let ad = expected_ad(qs, COOKIE, USER_AGENT);
                assert!(
                    head.contains(&format!("\r\nX-Ad: {ad}")),
                    "{what}: want X-Ad {ad}: {head}"
                );
            } else {
                assert!(!head.contains("X-Ad"), "{what}: {head}");
            }
        } else {
            assert!(
                head.contains(&format!("\r\nContent-Length: {}", body.len())),
                "{what}: {head}"
            );
        }
    }
    // The three session requests (C, Python, Perl) and nothing from the rest.
    let l = read_session_log(&log);
    assert_eq!(l.counter, 3);
    assert_eq!(l.lines.len(), 3);
    assert!(l.lines.iter().all(|x| x.path == "/a.html"));

    // No configuration: 500, from each.
    for p in [&c, &py, &pl] {
        let (status, _, body) = split_cgi(&run_cgi(p, &[("PATH_INFO", "/adrot/a.html")]));
        assert_eq!(status, 500, "{}: {}", p.display(), String::from_utf8_lossy(&body));
    }

    // A log that does not start with a counter is refused, not overwritten.
    let bad_log = dir.path().join("bad.log");
    fs::write(&bad_log, "not a counter\n").unwrap();
    let bad_log_s = bad_log.display().to_string();
    for p in [&c, &py, &pl] {
        let env = [
            ("PATH_INFO", "/session/a.html"),
            ("SPICE_ROOT", root_s.as_str()),
            ("SPICE_SESSION_LOG", bad_log_s.as_str()),
        ];
        let (status, _, _) = split_cgi(&run_cgi(p, &env));
        assert_eq!(status, 500, "{}", p.display());
    }
    assert_eq!(fs::read_to_string(&bad_log).unwrap(), "not a counter\n");

    // C, Python and Perl processes appending to one log at once.
    let shared = dir.path().join("shared.log");
    let per_thread = 25;
    let threads: Vec<_> = (0..9)
        .map(|i| {
            let program = [&c, &py, &pl][i % 3].clone();
            let (root_s, shared_s) = (root_s.clone(), shared.display().to_string());
            std::thread::spawn(move || {
                for _ in 0..per_thread {
                    let env = [
                        ("PATH_INFO", "/session/dir1/b.html"),
                        ("SPICE_ROOT", root_s.as_str()),
                        ("SPICE_SESSION_LOG", shared_s.as_str()),
                    ];
                    let (status, _, _) = split_cgi(&run_cgi(&program, &env));
                    assert_eq!(status, 200);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let l = read_session_log(&shared);
    assert_eq!(l.counter, 9 * per_thread);
    assert_eq!(l.lines.len() as u64, 9 * per_thread);
    assert!(l.lines.iter().all(|x| x.path == "/dir1/b.html"));
}

/// The node SPI takes the same flock as the other programs (through its
/// resident helper): node serving session requests under load and cgi-c
/// processes run directly, appending to one log at once, lose no update
/// and tear no line.
#[test]
fn node_shares_the_session_log_lock_with_the_c_program() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("www");
    spice_support::make_docroot(&root);
    let bin = dir.path().join("bin");
    spice_support::install_programs(&bin);
    let log = dir.path().join("session.log");
    let port = spice_support::free_port();
    let _node = spice_support::spawn_node(&bin, &format!("127.0.0.1:{port}"), &root, &log, &|| {
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    let (root_s, log_s) = (root.display().to_string(), log.display().to_string());
    let c = programs().join("cgi-c");
    let per_thread = 50;
    let writers: Vec<_> = (0..4)
        .map(|_| {
            let (c, root_s, log_s) = (c.clone(), root_s.clone(), log_s.clone());
            std::thread::spawn(move || {
                for _ in 0..per_thread {
                    let env = [
                        ("PATH_INFO", "/session/dir1/b.html"),
                        ("SPICE_ROOT", root_s.as_str()),
                        ("SPICE_SESSION_LOG", log_s.as_str()),
                    ];
                    assert_eq!(split_cgi(&run_cgi(&c, &env)).0, 200);
                }
            })
        })
        .collect();
    let url = format!("http://127.0.0.1:{port}/spice/node/session{FILE_4K}");
    let v = benchlab_json(&["--requests", "300", "--threads", "8", "--validate", "size", &url]);
    for w in writers {
        w.join().unwrap();
    }
    assert_eq!(v["errors_total"].as_u64(), Some(0), "{v}");
    let l = read_session_log(&log);
    // 300 and the preflight from node, 200 from the C program.
    assert_eq!(l.counter, 301 + 4 * per_thread);
    assert_eq!(l.lines.len() as u64, 301 + 4 * per_thread);
    assert_eq!(l.lines.iter().filter(|x| x.path == FILE_4K).count(), 301);
    assert_eq!(
        l.lines.iter().filter(|x| x.path == FILE_10K).count() as u64,
        4 * per_thread
    );
}
