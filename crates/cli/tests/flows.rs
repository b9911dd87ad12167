//! Flow workloads (docs/flows.md) run by the engine against nginx: every
//! virtual user walks the steps with its own cookie jar, feeder row and
//! captures; each step is counted as its class, against nginx's log line
//! by line (method, path, the cookie and captured header it carried); a
//! failed check is `check_failed` for its step and abandons the flow; a
//! step may go to another origin (TLS); mistakes are refused at `check`.

mod common;

use common::servers::{Nginx, NginxLogLine, NginxOpts};
use common::{run_benchlab, run_suite, s, u};
use serde_json::Value;

/// Three users, one feeder row each (`index`): user k is `user-k`.
const USERS: &str = "u\nuser-0\nuser-1\nuser-2\n";

fn suite(target: &str, cart_check: &str, cart_target: &str) -> String {
    format!(
        r#"name = "flows"
target = "{target}"
seed = 9

[defaults]
length = "2s"
ramp_up = "0s"
ramp_down = "0s"
timeout = "5s"
threads_per_client = 3

[workloads.session]
description = "log in, add to the cart, log out"

[workloads.session.flow]
[[workloads.session.flow.feeders]]
file = "users.csv"
mode = "index"

[[workloads.session.flow.steps]]
name = "page"
url = "/flow/page?u={{{{u}}}}"
capture = {{ csrf = 'regex:name="csrf" value="([^"]+)"', tok = "header:X-Token" }}
check = {{ body_contains = "csrf-{{{{u}}}}" }}

[[workloads.session.flow.steps]]
name = "login"
method = "POST"
url = "/flow/login?u={{{{u}}}}"
headers = {{ "Content-Type" = "application/x-www-form-urlencoded" }}
body = "user={{{{u}}}}&token={{{{tok}}}}"
check = {{ status = 303 }}

[[workloads.session.flow.steps]]
name = "cart"
method = "POST"
url = "/flow/cart?u={{{{u}}}}"
headers = {{ "Content-Type" = "application/json", "X-CSRF" = "{{{{csrf}}}}" }}
body = '{{"sku": "a-{{{{u}}}}"}}'
{cart_target}
check = {cart_check}

[[workloads.session.flow.steps]]
name = "logout"
url = "/flow/logout?u={{{{u}}}}"
check = {{ status = 204 }}

[[mix]]
clients = 1
"#
    )
}

fn run(work: &std::path::Path, text: &str, extra: &[&str]) -> Value {
    std::fs::write(work.join("users.csv"), USERS).expect("feeder");
    let suite = work.join("flows.toml");
    std::fs::write(&suite, text).expect("suite");
    run_suite(&suite, &work.join("out"), extra)["mixes"][0].clone()
}

fn class<'a>(mix: &'a Value, name: &str) -> &'a Value {
    mix["classes"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["name"] == name))
        .unwrap_or_else(|| panic!("no class {name}: {mix}"))
}

/// The log's lines for a step's path (the query names the user).
fn lines_of<'a>(lines: &'a [NginxLogLine], path: &str) -> Vec<&'a NginxLogLine> {
    lines
        .iter()
        .filter(|l| l.path().split('?').next() == Some(path))
        .collect()
}

/// The user a logged request was for (`?u=user-k`).
fn user_of(l: &NginxLogLine) -> &str {
    l.path().split("u=").nth(1).unwrap_or("")
}

/// Each step's count against the log: every request the step ended is a
/// line; a request still in flight when the mix stopped may be logged too.
fn counted_against_log(mix: &Value, step: &str, logged: usize) {
    let c = class(mix, step);
    let ended = u(c, "/requests") + u(c, "/errors_total");
    let in_flight = u(mix, "/in_flight");
    assert!(
        logged as u64 >= ended && logged as u64 <= ended + in_flight,
        "{step}: {logged} logged, {ended} ended, {in_flight} in flight: {c}"
    );
}

#[test]
fn users_walk_the_flow_with_their_cookies_captures_and_feeder_rows() {
    let server = Nginx::start(NginxOpts {
        keepalive_requests: 100_000,
        ..NginxOpts::default()
    });
    let work = tempfile::tempdir().expect("tempdir");
    let mix = run(
        work.path(),
        &suite(
            &server.url(""),
            r#"{ json = { "/sid" = "s-{{u}}", "/csrf" = "csrf-{{u}}" } }"#,
            "",
        ),
        &[],
    );
    assert_eq!(u(&mix, "/errors_total"), 0, "{mix}");
    let flows = &mix["flows"];
    assert!(u(flows, "/completed") > 0, "{flows}");
    assert_eq!(u(flows, "/abandoned"), 0, "{flows}");
    let lines = server.access_log_lines();
    for (step, path, method, status) in [
        ("page", "/flow/page", "GET", 200),
        ("login", "/flow/login", "POST", 303),
        ("cart", "/flow/cart", "POST", 200),
        ("logout", "/flow/logout", "GET", 204),
    ] {
        let mine = lines_of(&lines, path);
        assert!(
            mine.iter()
                .all(|l| l.method() == method && (l.status == status || l.status == 499)),
            "{step}: {mine:?}"
        );
        counted_against_log(&mix, step, mine.len());
    }
    // The jar carried each user's own session cookie, and the captured
    // token went back in the header: user by user, line by line.
    for l in lines_of(&lines, "/flow/cart") {
        let user = user_of(l);
        assert!(user.starts_with("user-"), "{l:?}");
        assert_eq!(l.cookie, format!("sid=s-{user}"), "{l:?}");
        assert_eq!(l.x_csrf, format!("csrf-{user}"), "{l:?}");
    }
    for l in lines_of(&lines, "/flow/logout") {
        assert_eq!(l.cookie, format!("sid=s-{}", user_of(l)), "{l:?}");
    }
    // A new pass starts with an empty jar (and Max-Age=0 deleted it).
    assert!(lines_of(&lines, "/flow/page").iter().all(|l| l.cookie == "-"));
    // Every user's row, by index.
    let users: std::collections::BTreeSet<&str> = lines_of(&lines, "/flow/page").iter().map(|l| user_of(l)).collect();
    assert_eq!(users.into_iter().collect::<Vec<_>>(), ["user-0", "user-1", "user-2"]);
}

#[test]
fn a_failed_check_is_counted_for_its_step_and_abandons_the_flow() {
    let server = Nginx::start(NginxOpts::default());
    let work = tempfile::tempdir().expect("tempdir");
    let mix = run(
        work.path(),
        &suite(&server.url(""), r#"{ json = { "/csrf" = "wrong" } }"#, ""),
        &[],
    );
    let cart = class(&mix, "cart");
    assert_eq!(u(cart, "/requests"), 0, "{cart}");
    assert!(u(cart, "/errors/check_failed") > 0, "{cart}");
    assert_eq!(u(cart, "/errors_total"), u(cart, "/errors/check_failed"), "{cart}");
    assert_eq!(u(&mix, "/errors/check_failed"), u(cart, "/errors/check_failed"));
    let flows = &mix["flows"];
    assert_eq!(u(flows, "/completed"), 0, "{flows}");
    assert_eq!(u(flows, "/abandoned"), u(cart, "/errors/check_failed"), "{flows}");
    let why = flows["check_failures"]["cart"].as_str().unwrap_or_default();
    assert!(why.contains("/csrf") && why.contains("wrong"), "{flows}");
    // No user got past the cart.
    let lines = server.access_log_lines();
    assert!(lines_of(&lines, "/flow/logout").is_empty());
    counted_against_log(&mix, "cart", lines_of(&lines, "/flow/cart").len());
}

#[test]
fn a_step_goes_to_its_own_origin_over_tls_with_the_session() {
    let plain = Nginx::start(NginxOpts::default());
    let secure = Nginx::start(NginxOpts {
        tls: true,
        ..NginxOpts::default()
    });
    let work = tempfile::tempdir().expect("tempdir");
    let target = format!("target = \"{}\"", secure.url("").trim_end_matches('/'));
    let mix = run(
        work.path(),
        &suite(&plain.url(""), r#"{ json = { "/sid" = "s-{{u}}" } }"#, &target),
        &["--insecure"],
    );
    assert_eq!(u(&mix, "/errors_total"), 0, "{mix}");
    let (plain_lines, tls_lines) = (plain.access_log_lines(), secure.access_log_lines());
    assert!(lines_of(&plain_lines, "/flow/cart").is_empty());
    let carts = lines_of(&tls_lines, "/flow/cart");
    assert!(!carts.is_empty());
    assert!(carts.iter().all(|l| l.ssl_session_reused != "-"), "{carts:?}");
    assert!(
        carts.iter().all(|l| l.cookie == format!("sid=s-{}", user_of(l))),
        "{carts:?}"
    );
    counted_against_log(&mix, "cart", carts.len());
    counted_against_log(&mix, "logout", lines_of(&plain_lines, "/flow/logout").len());
}

#[test]
fn a_table_implied_by_its_sub_tables_is_explained() {
    let work = tempfile::tempdir().expect("tempdir");
    std::fs::write(work.path().join("users.csv"), USERS).expect("feeder");
    let text = suite("http://127.0.0.1:9", "{ status = 200 }", "").replace(
        "[workloads.session]\ndescription = \"log in, add to the cart, log out\"\n",
        "",
    );
    let suite = work.path().join("flows.toml");
    std::fs::write(&suite, &text).expect("suite");
    let out = run_benchlab(&["check", s(&suite)]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("flows.toml:13:") && err.contains("`[workloads.NAME]` before"),
        "{err}"
    );
}

#[test]
fn flow_mistakes_are_refused_at_check_with_their_line() {
    let work = tempfile::tempdir().expect("tempdir");
    std::fs::write(work.path().join("users.csv"), USERS).expect("feeder");
    let good = suite("http://127.0.0.1:9", "{ status = 200 }", "");
    for (text, says, line) in [
        (
            good.replace("X-CSRF\" = \"{{csrf}}\"", "X-CSRF\" = \"{{crsf}}\""),
            "unknown variable `crsf`",
            "flows.toml:38",
        ),
        (
            good.replace("[[mix]]\nclients = 1", "[[mix]]\nclients = 1\nrate = 10.0"),
            "`rate` with the flow workload",
            "flows.toml:",
        ),
        (
            good.replace("name = \"logout\"", "name = \"cart\""),
            "named twice",
            "flows.toml:",
        ),
        (
            good.replace("{cart_target}", "").replace(
                "check = { status = 200 }",
                "target = \"https://127.0.0.1:9/x\"\ncheck = { status = 200 }",
            ),
            "expected an origin",
            "flows.toml:",
        ),
    ] {
        let suite = work.path().join("flows.toml");
        std::fs::write(&suite, &text).expect("suite");
        let out = run_benchlab(&["check", s(&suite)]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{says}: {err}");
        assert!(err.contains(says) && err.contains(line), "{says}: {err}");
    }
}

/// A feeder with `on_end = "stop"` used once (`next`): two rows, three
/// users — exactly two flows are walked, each step logged twice, and the
/// third user (and the two after their pass) send nothing more.
#[test]
fn a_feeder_that_stops_ends_the_flows_exactly_when_its_rows_run_out() {
    let server = Nginx::start(NginxOpts::default());
    let work = tempfile::tempdir().expect("tempdir");
    let text = suite(&server.url(""), "{ status = 200 }", "")
        .replace("mode = \"index\"", "mode = \"next\"\non_end = \"stop\"");
    std::fs::write(work.path().join("users.csv"), "u\nuser-a\nuser-b\n").expect("feeder");
    let suite = work.path().join("flows.toml");
    std::fs::write(&suite, &text).expect("suite");
    let results = run_suite(&suite, &work.path().join("out"), &[]);
    let mix = &results["mixes"][0];
    assert_eq!(u(mix, "/errors_total"), 0, "{mix}");
    assert_eq!(u(mix, "/requests"), 8, "two flows of four steps: {mix}");
    assert_eq!(u(mix, "/in_flight"), 0, "{mix}");
    assert_eq!(u(mix, "/flows/completed"), 2, "{mix}");
    let lines = server.access_log_lines();
    assert_eq!(lines.len(), 8);
    for path in ["/flow/page", "/flow/login", "/flow/cart", "/flow/logout"] {
        let mut users: Vec<&str> = lines_of(&lines, path).iter().map(|l| user_of(l)).collect();
        users.sort();
        assert_eq!(users, ["user-a", "user-b"], "{path}");
    }
}

/// Loops and branches as the engine walks them (the suite's `think_time`
/// is not a flow's: its steps have none): two flows (a feeder of two
/// rows used once) of `a`, `b` three times, then `c` or `d` by weight —
/// exactly 2 × a, 6 × b and 2 of c and d together, each logged.
#[test]
fn repeats_and_branches_are_walked_exactly() {
    let server = Nginx::start(NginxOpts::default());
    let work = tempfile::tempdir().expect("tempdir");
    std::fs::write(work.path().join("users.csv"), "u\nuser-a\nuser-b\n").expect("feeder");
    let suite = work.path().join("walk.toml");
    std::fs::write(
        &suite,
        format!(
            r#"name = "walk"
target = "{}"
[defaults]
length = "2s"
ramp_up = "0s"
ramp_down = "0s"
threads_per_client = 3
think_time = "10s"   # not a flow's: its steps say their own
[workloads.w]
[workloads.w.flow]
feeders = [{{ file = "users.csv", mode = "next", on_end = "stop" }}]
[[workloads.w.flow.steps]]
name = "a"
url = "/flow/page?u={{{{u}}}}&s=a"
[[workloads.w.flow.steps]]
repeat = 3
steps = [{{ name = "b", url = "/flow/page?u={{{{u}}}}&s=b" }}]
[[workloads.w.flow.steps]]
branch = [
  {{ weight = 1, steps = [{{ name = "c", url = "/flow/page?u={{{{u}}}}&s=c" }}] }},
  {{ weight = 1, steps = [{{ name = "d", url = "/flow/page?u={{{{u}}}}&s=d" }}] }},
]
[[mix]]
clients = 1
"#,
            server.url("")
        ),
    )
    .expect("suite");
    let results = run_suite(&suite, &work.path().join("out"), &[]);
    let mix = &results["mixes"][0];
    let req = |step: &str| u(class(mix, step), "/requests");
    assert_eq!((req("a"), req("b"), req("c") + req("d")), (2, 6, 2), "{mix}");
    assert_eq!(u(mix, "/flows/completed"), 2, "{mix}");
    let lines = server.access_log_lines();
    let logged = |s: &str| lines.iter().filter(|l| l.path().ends_with(&format!("&s={s}"))).count() as u64;
    assert_eq!((logged("a"), logged("b"), logged("c") + logged("d")), (2, 6, 2));
    assert_eq!((logged("c"), logged("d")), (req("c"), req("d")));
}
