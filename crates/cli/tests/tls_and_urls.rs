//! Messages a user can act on when the target is wrong: TLS failures said
//! in words with what to try (`--insecure`, `--ca-file`, http vs https),
//! against a real nginx with certificates made by openssl in a temp dir;
//! an unknown host (exit 1, the resolver's words) and a URL without its
//! scheme (exit 2); and the README's TLS example, which must show
//! resumptions.

mod common;

use common::servers::{Nginx, NginxOpts};
use common::{require, run_benchlab, s, u};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use tempfile::TempDir;

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Exit code `code` and `want` in stderr, never rustls's Debug forms.
fn assert_says(what: &str, out: &Output, code: i32, want: &str) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(code), "{what}: expected exit {code}:\n{err}");
    assert!(err.contains(want), "{what}: stderr lacks {want:?}:\n{err}");
    for raw in [
        "OtherError",
        "InvalidCertificate",
        "CaUsedAsEndEntity",
        "UnknownIssuer",
        "InvalidContentType",
    ] {
        assert!(!err.contains(raw), "{what}: rustls's {raw} shown as is:\n{err}");
    }
}

fn openssl(args: &[&str], dir: &Path) {
    let status = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("run openssl");
    assert!(status.success(), "openssl {args:?} failed: {status}");
}

/// A test CA, a server certificate it signed for `localhost` (not a CA,
/// serverAuth), and the same one expired (valid until a day before it
/// begins).
struct Certs {
    dir: TempDir,
}

impl Certs {
    fn make() -> Certs {
        require("openssl");
        let dir = tempfile::tempdir().expect("tempdir");
        let d = dir.path();
        openssl(
            &[
                "req",
                "-x509",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-subj",
                "/CN=benchlab test CA",
                "-days",
                "2",
                "-keyout",
                "ca.key",
                "-out",
                "ca.pem",
            ],
            d,
        );
        openssl(
            &[
                "req",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-subj",
                "/CN=localhost",
                "-keyout",
                "leaf.key",
                "-out",
                "leaf.csr",
            ],
            d,
        );
        std::fs::write(
            d.join("ext.cnf"),
            "subjectAltName=DNS:localhost\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n",
        )
        .expect("write ext.cnf");
        for (out, days) in [("leaf.pem", "1"), ("expired.pem", "-1")] {
            openssl(
                &[
                    "x509",
                    "-req",
                    "-in",
                    "leaf.csr",
                    "-CA",
                    "ca.pem",
                    "-CAkey",
                    "ca.key",
                    "-CAcreateserial",
                    "-days",
                    days,
                    "-extfile",
                    "ext.cnf",
                    "-out",
                    out,
                ],
                d,
            );
        }
        Certs { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// An nginx serving `cert` (with the leaf's key) over TLS.
    fn nginx(&self, cert: &str) -> Nginx {
        Nginx::start(NginxOpts {
            tls: true,
            cert: Some((self.path(cert), self.path("leaf.key"))),
            ..NginxOpts::default()
        })
    }
}

fn http(args: &[&str]) -> Output {
    let mut all = vec!["http", "-n", "5", "-t", "1"];
    all.extend_from_slice(args);
    run_benchlab(&all)
}

/// The issue's case: `openssl req -x509` makes a CA certificate, which
/// rustls refuses as a server's (CaUsedAsEndEntity), with or without it in
/// --ca-file. Both the preflight and the run say so in words.
#[test]
fn self_signed_ca_certificate_is_explained() {
    let nginx = Nginx::start(NginxOpts {
        tls: true,
        ..NginxOpts::default()
    });
    let url = nginx.url("/4k.html");
    let why = "the server's certificate is a CA certificate (basicConstraints CA:TRUE, as a self-signed one from \
               `openssl req -x509` is by default), which a client refuses as a server's own certificate, even with \
               that file in --ca-file: pass --insecure to accept it (test servers only), or give the server a \
               certificate signed by a CA and pass that CA with --ca-file";
    let out = http(&[&url]);
    assert_says("preflight", &out, 1, "");
    assert_eq!(
        stderr(&out),
        format!("benchlab: preflight: GET {url} failed: tls: {why}\n")
    );

    // During the run (no preflight): counted as tls errors, and said why.
    let out = run_benchlab(&["http", "--no-preflight", "-n", "10", "-t", "1", &url]);
    assert_says(
        "run",
        &out,
        0,
        &format!("benchlab: 10 TLS handshakes failed; the first: {why}\n"),
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("(tls 10)"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );

    // --insecure accepts it.
    let out = http(&["--insecure", &url]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn certificate_failures_say_what_to_try() {
    let certs = Certs::make();
    let ca = certs.path("ca.pem");
    let nginx = certs.nginx("leaf.pem");
    let by_name = format!("https://localhost:{}/4k.html", nginx.port());
    let by_ip = format!("https://127.0.0.1:{}/4k.html", nginx.port());

    // Signed by a CA nobody told benchlab about.
    let out = http(&[&by_name]);
    assert_says(
        "unknown issuer",
        &out,
        1,
        "tls: the server's certificate is not signed by a trusted authority (self-signed, or signed by a private \
         CA): pass --ca-file FILE with the CA certificate that signed it, or --insecure to accept any certificate \
         (test servers only)\n",
    );
    // With a --ca-file that is not its CA.
    let out = http(&["--ca-file", s(&certs.path("leaf.pem")), &by_name]);
    assert_says(
        "wrong --ca-file",
        &out,
        1,
        "check that --ca-file holds the CA certificate that signed the server's certificate",
    );
    // Trusted, but the URL names 127.0.0.1 and the certificate localhost.
    let out = http(&["--ca-file", s(&ca), &by_ip]);
    assert_says(
        "name mismatch",
        &out,
        1,
        "tls: the server's certificate is not valid for `127.0.0.1`, the host in the URL (it names localhost): use \
         a name the certificate holds in the URL, or pass --insecure to accept it anyway\n",
    );
    // Trusted and the right name: the run works, and counts exactly.
    let out = http(&["--json", "--ca-file", s(&ca), &by_name]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v = common::http_mix(&out.stdout);
    assert_eq!(u(&v, "/requests"), 5);
    assert_eq!(u(&v, "/errors_total"), 0);

    // A missing --ca-file is bad usage, before any connection.
    let out = http(&["--ca-file", "/nonexistent/ca.pem", &by_name]);
    assert_says(
        "missing --ca-file",
        &out,
        2,
        "benchlab: error: --ca-file /nonexistent/ca.pem: cannot read: ",
    );
}

#[test]
fn expired_certificate_is_explained() {
    let certs = Certs::make();
    let nginx = certs.nginx("expired.pem");
    let url = format!("https://localhost:{}/4k.html", nginx.port());
    let out = http(&["--ca-file", s(&certs.path("ca.pem")), &url]);
    assert_says("expired", &out, 1, "tls: the server's certificate has expired");
    assert!(
        stderr(&out).contains("renew it, check this machine's clock, or pass --insecure to accept it anyway"),
        "{}",
        stderr(&out)
    );
}

/// https:// to a plain-HTTP server, and http:// to a TLS one.
#[test]
fn http_and_https_mixed_up() {
    let plain = Nginx::start(NginxOpts::default());
    let url = format!("https://127.0.0.1:{}/4k.html", plain.port());
    let out = http(&[&url]);
    assert_says(
        "https:// to plain HTTP",
        &out,
        1,
        "tls: the server did not answer in TLS (it looks like plain HTTP): use http:// instead of https://, or the \
         port where the server speaks TLS\n",
    );
    let out = http(&["--no-preflight", &url]);
    assert_says(
        "https:// to plain HTTP, in the run",
        &out,
        0,
        "TLS handshakes failed; the first: the server did not answer in TLS",
    );

    let tls = Nginx::start(NginxOpts {
        tls: true,
        ..NginxOpts::default()
    });
    let url = format!("http://127.0.0.1:{}/4k.html", tls.port());
    let out = http(&[&url]);
    assert_says(
        "http:// to TLS",
        &out,
        1,
        "returned status 400, expected 200 (set --expect-status, or --no-preflight to load it anyway); a 400 to \
         http:// can mean that the port speaks TLS: try https://\n",
    );
}

/// A host that does not resolve is a run that cannot be done (exit 1)
/// with the resolver's words; a URL without `http://` is bad usage (exit
/// 2) that says what is missing.
#[test]
fn unknown_host_and_missing_scheme() {
    let out = http(&["http://nosuch.invalid/a"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let resolver = err
        .strip_prefix("benchlab: cannot resolve `nosuch.invalid`: ")
        .and_then(|r| r.strip_suffix(" (in http://nosuch.invalid/a)\n"))
        .unwrap_or_else(|| panic!("unexpected message: {err:?}"));
    assert!(!resolver.trim().is_empty(), "no resolver message: {err:?}");

    let out = http(&["localhost:8080/a"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(
        stderr(&out),
        "benchlab: error: `localhost:8080/a` is not a URL benchlab can load: http:// is missing: expected \
         http://localhost:8080/a (or https://localhost:8080/a for TLS)\n"
    );
}

/// The README's TLS example, run as written (its URL pointed at a real
/// nginx, and `--requests 2000` to keep the test short and every
/// connection whole): it shows resumptions, and every connection opened
/// did one handshake, full or resumed. (As it was, with keep-alive and no
/// limit per connection, it opened 10 connections and resumed none.)
#[test]
fn readme_tls_example_shows_resumptions() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md")).expect("read README.md");
    let line = readme
        .lines()
        .find(|l| l.starts_with("benchlab http ") && l.contains("--tls-resumption"))
        .expect("the README's TLS example");
    let command = line.split('#').next().unwrap_or(line);
    let args: Vec<&str> = command.split_whitespace().skip(2).collect();
    let example_url = "https://127.0.0.1:8443/";
    assert_eq!(args.last(), Some(&example_url), "{line}");

    let root = tempfile::tempdir().expect("tempdir");
    std::fs::write(root.path().join("index.html"), "<html><body>benchlab</body></html>\n").expect("write index");
    let nginx = Nginx::start(NginxOpts {
        tls: true,
        docroot: Some(root.path().to_path_buf()),
        ..NginxOpts::default()
    });
    let url = nginx.url("/");
    let mut run: Vec<&str> = vec!["http"];
    run.extend(args.iter().map(|a| if *a == example_url { url.as_str() } else { a }));
    run.extend(["--requests", "2000", "--json"]);
    let out = run_benchlab(&run);
    assert_eq!(out.status.code(), Some(0), "{run:?}: {}", stderr(&out));
    let v = common::http_mix(&out.stdout);
    let opened = u(&v, "/connections_opened");
    let full = u(&v, "/tls_full_handshakes");
    let resumed = u(&v, "/tls_resumptions");
    assert_eq!(u(&v, "/errors_total"), 0, "{v}");
    assert!(resumed > 0, "the README's TLS example shows no resumption: {v}");
    assert_eq!(u(&v, "/requests"), 2000, "{v}");
    assert!(
        opened > 10,
        "only {opened} connections: the example opens none after the first ones: {v}"
    );
    assert_eq!(full + resumed, opened, "a handshake per connection opened: {v}");
}

/// A one-mix suite (2 s, ramps 0.2 s) of `/4k.html` against `target`.
fn short_suite(dir: &Path, target: &str) -> PathBuf {
    let text = format!(
        "name = \"tls\"\ntarget = \"{target}\"\n[defaults]\nlength = \"2s\"\nramp_up = \"200ms\"\n\
         ramp_down = \"200ms\"\n[workloads.w]\n[[workloads.w.class]]\nname = \"a\"\npercent = 100\n\
         [[workloads.w.class.url]]\npath = \"/4k.html\"\n[[mix]]\nclients = 1\n"
    );
    let p = dir.join("tls.toml");
    std::fs::write(&p, text).expect("write suite");
    p
}

/// `benchlab run` says the same: in its preflight, and per mix when the
/// preflight is skipped; a host that does not resolve is exit 1 there too,
/// and `--target` without its scheme says what is missing.
#[test]
fn suite_runs_explain_tls_failures_and_bad_targets() {
    let nginx = Nginx::start(NginxOpts {
        tls: true,
        ..NginxOpts::default()
    });
    let work = tempfile::tempdir().expect("tempdir");
    let suite = short_suite(work.path(), &nginx.url(""));
    let out_dir = work.path().join("results");
    let why = "the server's certificate is a CA certificate";

    let out = run_benchlab(&["run", s(&suite), "--out", s(&out_dir)]);
    assert_says("run preflight", &out, 1, &format!("failed: tls: {why}"));

    let out = run_benchlab(&["run", s(&suite), "--no-preflight", "--out", s(&out_dir)]);
    assert_says(
        "run without preflight",
        &out,
        0,
        &format!("mix 1: TLS handshakes failed; the first: {why}"),
    );

    let out = run_benchlab(&["run", s(&suite), "--insecure", "--out", s(&out_dir)]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!stderr(&out).contains("TLS handshakes failed"), "{}", stderr(&out));

    let out = run_benchlab(&[
        "run",
        s(&suite),
        "--target",
        "http://nosuch.invalid",
        "--out",
        s(&out_dir),
    ]);
    assert_says("run, unknown host", &out, 1, "cannot resolve `nosuch.invalid`: ");

    let out = run_benchlab(&["run", s(&suite), "--target", "localhost:8080", "--out", s(&out_dir)]);
    assert_says(
        "run --target without scheme",
        &out,
        2,
        "benchlab: error: --target `localhost:8080`: http:// is missing: expected http://localhost:8080 (or \
         https://localhost:8080 for TLS)\n",
    );
}

/// A workload whose classes go to two origins (plain HTTP and TLS, as the
/// ecommerce suite's do): a user's kept connection carries only requests
/// to its own origin, so every TLS class's request is logged by the TLS
/// server and none by the plain one (before, a kept plain connection took
/// the next request whatever its class's origin).
#[test]
fn a_kept_connection_carries_requests_to_its_own_origin_only() {
    let plain = Nginx::start(NginxOpts {
        keepalive_requests: 100_000,
        ..NginxOpts::default()
    });
    let secure = Nginx::start(NginxOpts {
        tls: true,
        keepalive_requests: 100_000,
        ..NginxOpts::default()
    });
    let work = tempfile::tempdir().expect("tempdir");
    let suite = work.path().join("two-origins.toml");
    std::fs::write(
        &suite,
        format!(
            r#"name = "two-origins"
target = "{}"
seed = 3
[defaults]
length = "1s"
ramp_up = "0s"
ramp_down = "0s"
threads_per_client = 4
persistent_percent = 100
[workloads.w]
[[workloads.w.class]]
name = "plain"
percent = 50
headers = {{ "X-Bench" = "plain" }}
[[workloads.w.class.url]]
path = "/4k.html"
[[workloads.w.class]]
name = "secure"
percent = 50
target = "{}"
headers = {{ "X-Bench" = "secure" }}
[[workloads.w.class.url]]
path = "/4k.html"
[[mix]]
clients = 1
"#,
            plain.url(""),
            secure.url("")
        ),
    )
    .expect("suite");
    let r = common::run_suite(&suite, &work.path().join("out"), &["--insecure"]);
    assert_eq!(u(&r["mixes"][0], "/errors_total"), 0);
    let (p, t) = (plain.access_log_lines(), secure.access_log_lines());
    let strays =
        |lines: &[common::servers::NginxLogLine], other: &str| lines.iter().filter(|l| l.x_bench == other).count();
    assert_eq!(strays(&p, "secure"), 0, "TLS-class requests on the plain server");
    assert_eq!(strays(&t, "plain"), 0, "plain-class requests on the TLS server");
    assert!(t.iter().any(|l| l.x_bench == "secure") && p.iter().any(|l| l.x_bench == "plain"));
}
