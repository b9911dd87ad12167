//! `benchlab lab up/down/status/profile` with the real servers.
//!
//! For each server: `lab up` on a free port with a small file set (from
//! `benchlab fileset generate`), every file fetched statically and through
//! every SPI the server supports (ad rotation, session, sleep) with the
//! manifest's size and checksum, then `lab down` leaves no live process of
//! any process group the lab started and no state dir. Each test has its
//! own state base (`BENCHLAB_LAB_DIR`), and a guard runs `lab down --all`
//! should an assertion fail half-way.

mod common;
mod spice_support;

use common::{assert_success, benchlab_bin, free_port, lab};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A state base whose servers are stopped when the test ends, passed or not.
struct LabGuard {
    base: tempfile::TempDir,
}

impl LabGuard {
    fn new() -> LabGuard {
        LabGuard {
            base: tempfile::tempdir().expect("tempdir"),
        }
    }
    fn path(&self) -> &Path {
        self.base.path()
    }
}

impl Drop for LabGuard {
    fn drop(&mut self) {
        let _ = lab(self.base.path(), &["down", "--all", "--grace", "3s"]);
    }
}

/// A small file set of mixed sizes (specweb99, one directory: 36 files
/// from 102 bytes to 921,600 bytes), world-readable for the servers' workers.
fn fileset(dir: &Path) -> (PathBuf, benchlab_fileset::Manifest) {
    let root = dir.join("set");
    let out = Command::new(benchlab_bin())
        .args(["fileset", "generate", "specweb99", "--dirs", "1", "--out"])
        .arg(&root)
        .output()
        .expect("run benchlab fileset generate");
    assert_success("fileset generate", &out);
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        spice_support::chmod(&d, 0o755);
        for e in fs::read_dir(&d).unwrap().flatten() {
            if e.path().is_dir() {
                stack.push(e.path());
            } else {
                spice_support::chmod(&e.path(), 0o644);
            }
        }
    }
    let manifest = benchlab_fileset::Manifest::read(&root.join("manifest")).expect("read manifest");
    (root, manifest)
}

/// The live processes (not zombies) of process group `pgid`.
fn live_members(pgid: i64) -> Vec<i64> {
    let mut out = Vec::new();
    for e in fs::read_dir("/proc").unwrap().flatten() {
        let Ok(stat) = fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        let Some((_, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let f: Vec<&str> = rest.split_whitespace().collect();
        if f.len() > 2 && f[0] != "Z" && f[2].parse() == Ok(pgid) {
            out.push(e.file_name().to_string_lossy().parse().unwrap_or(0));
        }
    }
    out
}

fn check_server(server: &str) {
    let guard = LabGuard::new();
    let files = tempfile::tempdir().unwrap();
    let (root, manifest) = fileset(files.path());
    let port = free_port();
    let up = lab(
        guard.path(),
        &[
            "up",
            server,
            "--port",
            &port.to_string(),
            "--root",
            root.to_str().unwrap(),
        ],
    );
    assert_success(&format!("lab up {server}"), &up);
    let stdout = String::from_utf8_lossy(&up.stdout);
    let mut lines = stdout.lines();
    assert_eq!(lines.next(), Some(format!("http://127.0.0.1:{port}/").as_str()));
    let state = PathBuf::from(lines.next().and_then(|l| l.strip_prefix("state ")).expect("state line"));
    assert!(state.starts_with(guard.path()), "{}", state.display());
    // The page it shows answers 200 (the base URL has no index page).
    let page = lines.next().and_then(|l| l.strip_prefix("page ")).expect("page line");
    let path = page
        .strip_prefix(&format!("http://127.0.0.1:{port}"))
        .unwrap_or_else(|| panic!("{server}: page {page}"));
    assert!(manifest.get(path).is_some(), "{server}: {path} is not in the file set");
    let r = spice_support::get(port, path);
    assert_eq!(r.status, 200, "{server}: GET {page}");
    let record: serde_json::Value = serde_json::from_str(&fs::read_to_string(state.join("lab.json")).unwrap()).unwrap();
    let disclosure = fs::read_to_string(state.join("disclosure.txt")).unwrap();
    assert!(
        disclosure.starts_with(&format!("server: {server}\nversion: ")),
        "{disclosure}"
    );

    let status = lab(guard.path(), &["status"]);
    assert_success("lab status", &status);
    assert!(String::from_utf8_lossy(&status.stdout).starts_with(&format!("{server}\thttp://127.0.0.1:{port}/\t")));

    let spis: Vec<String> = record["spis"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_owned())
        .collect();
    let want: &[&str] = if server == "benchlab" {
        &["inproc"]
    } else if server == "lighttpd" {
        &[
            "cgi-c",
            "cgi-script",
            "cgi-perl",
            "fastcgi",
            "php-fpm",
            "node",
            "wsgi",
            "asgi",
        ]
    } else if server == "tomcat" || server == "jetty" {
        &["servlet", "jsp"]
    } else {
        &[
            "cgi-c",
            "cgi-script",
            "cgi-perl",
            "fastcgi",
            "php-fpm",
            "shtml",
            "node",
            "wsgi",
            "asgi",
        ]
    };
    assert_eq!(spis, want);
    let mut urls = 0;
    for e in &manifest.entries {
        let mut paths = vec![e.path.clone()];
        for spi in &spis {
            // shtml's one program is include (docs/spice.md).
            let program = if spi == "shtml" { "include" } else { "adrot" };
            paths.push(format!("/spice/{spi}/{program}{}", e.path));
        }
        for path in paths {
            let r = spice_support::get(port, &path);
            assert_eq!(
                r.status,
                200,
                "{server} GET {path}: {}",
                String::from_utf8_lossy(&r.body)
            );
            assert_eq!(r.body.len() as u64, e.size, "{server} GET {path}: size");
            if path.starts_with("/spice/shtml/") {
                // A parsed page has no length up front.
                assert_eq!(r.header("transfer-encoding"), Some("chunked"), "{server} GET {path}");
            } else {
                assert_eq!(
                    r.header("content-length"),
                    Some(e.size.to_string().as_str()),
                    "{server} GET {path}"
                );
            }
            assert_eq!(
                xxhash_rust::xxh3::xxh3_64(&r.body),
                e.xxh3,
                "{server} GET {path}: checksum"
            );
            urls += 1;
        }
    }
    assert_eq!(urls, manifest.entries.len() * (1 + spis.len()));
    // The session and sleep programs of every SPI, on the smallest file.
    let small = manifest.entries.iter().min_by_key(|e| e.size).unwrap();
    for spi in spis.iter().filter(|s| *s != "shtml") {
        for path in [
            format!("/spice/{spi}/session{}", small.path),
            format!("/spice/{spi}/sleep{}?ms=1", small.path),
        ] {
            let r = spice_support::get(port, &path);
            assert_eq!(r.status, 200, "{server} GET {path}");
            assert_eq!(
                xxhash_rust::xxh3::xxh3_64(&r.body),
                small.xxh3,
                "{server} GET {path}: checksum"
            );
        }
    }

    let pid = record["pid"].as_i64().unwrap();
    let groups: Vec<i64> = record["process_groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g.as_i64().unwrap())
        .collect();
    assert!(groups.contains(&pid));
    let down = lab(guard.path(), &["down", server]);
    assert_success(&format!("lab down {server}"), &down);
    for g in &groups {
        assert_eq!(
            live_members(*g),
            Vec::<i64>::new(),
            "{server}: process group {g} outlived lab down"
        );
    }
    assert!(!state.exists(), "{server}: lab down left {}", state.display());
    assert!(
        root.join("manifest").is_file(),
        "lab down must not touch a --root it was given"
    );
    let status = lab(guard.path(), &["status"]);
    assert!(String::from_utf8_lossy(&status.stdout).starts_with("no server is up"));
}

#[test]
fn benchlab_serve_up_serves_every_file_and_inproc_and_goes_down() {
    check_server("benchlab");
}

#[test]
fn nginx_up_serves_every_file_and_spi_and_goes_down() {
    spice_support::require("nginx");
    check_server("nginx");
}

#[test]
fn lighttpd_up_serves_every_file_and_spi_and_goes_down() {
    spice_support::require("lighttpd");
    check_server("lighttpd");
}

#[test]
fn apache_event_up_serves_every_file_and_spi_and_goes_down() {
    spice_support::require("apache2");
    check_server("apache-event");
}

#[test]
fn apache_prefork_up_serves_every_file_and_spi_and_goes_down() {
    spice_support::require("apache2");
    check_server("apache-prefork");
}

#[test]
fn tomcat_up_serves_every_file_and_servlet_and_jsp_and_goes_down() {
    check_server("tomcat");
}

#[test]
fn jetty_up_serves_every_file_and_servlet_and_jsp_and_goes_down() {
    check_server("jetty");
}

#[test]
fn the_default_file_set_is_made_and_removed_with_the_state_dir() {
    let guard = LabGuard::new();
    let up = lab(guard.path(), &["up", "benchlab"]);
    assert_success("lab up benchlab", &up);
    let state = guard.path().join("benchlab");
    let manifest = benchlab_fileset::Manifest::read(&state.join("www/manifest")).expect("default manifest");
    assert_eq!(manifest.entries.len(), 24);
    assert_success("lab down", &lab(guard.path(), &["down"]));
    assert!(!state.exists());
}

#[test]
fn a_busy_port_a_bad_profile_and_a_second_up_are_clear_errors() {
    let guard = LabGuard::new();
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = busy.local_addr().unwrap().port().to_string();
    let out = lab(guard.path(), &["up", "benchlab", "--port", &port]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("port {port} on 127.0.0.1 is busy")), "{err}");
    assert!(!guard.path().join("benchlab").exists(), "a failed up leaves no state");

    let out = lab(guard.path(), &["up", "nginx", "--port", "80"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("from 1024 up only"));

    // As root, nginx's workers run as nobody: a root closed to others is
    // refused before anything starts, not served as 403s.
    // SAFETY: geteuid never fails.
    if unsafe { libc::geteuid() } == 0 {
        let closed = guard.path().join("closed");
        fs::create_dir_all(closed.join("set")).unwrap();
        spice_support::chmod(&closed, 0o700);
        let out = lab(
            guard.path(),
            &["up", "nginx", "--root", closed.join("set").to_str().unwrap()],
        );
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("is closed to other users"), "{err}");
    }

    let profile = guard.path().join("p.toml");
    fs::write(&profile, "workers = 2\nbacklog = 64\n").unwrap();
    let out = lab(
        guard.path(),
        &["up", "benchlab", "--profile", profile.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "{}:2: `backlog` is not a setting of benchlab",
            profile.display()
        )),
        "{err}"
    );

    // The profile `lab profile` prints is accepted as it is.
    let printed = lab(guard.path(), &["profile", "benchlab"]);
    assert_success("lab profile", &printed);
    fs::write(&profile, &printed.stdout).unwrap();
    assert_success(
        "lab up with the default profile",
        &lab(
            guard.path(),
            &["up", "benchlab", "--profile", profile.to_str().unwrap(), "--cpus", "0"],
        ),
    );
    let out = lab(guard.path(), &["up", "benchlab"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("benchlab is already up"));
    let disclosure = fs::read_to_string(guard.path().join("benchlab/disclosure.txt")).unwrap();
    assert!(disclosure.contains("\ncpus: 0\n"), "{disclosure}");
    let json: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(guard.path().join("benchlab/disclosure.json")).unwrap()).unwrap();
    assert!(
        json["host"]["kernel_tunables"]["net.core.somaxconn"]
            .as_str()
            .is_some_and(|v| !v.is_empty()),
        "{json}"
    );
    assert!(json["host"]["cpus_online"].as_u64().is_some_and(|n| n >= 1), "{json}");
    assert_success("lab down", &lab(guard.path(), &["down", "--all"]));
}

/// The head of a response to an HTTP/1.1 GET that asks for nothing about
/// the connection (so a keep-alive server keeps it open).
fn head_of_plain_get(port: u16, path: &str) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(20))).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").unwrap();
    let mut raw = Vec::new();
    let mut buf = [0u8; 8192];
    while !raw.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "connection closed before the end of the head");
        raw.extend_from_slice(&buf[..n]);
    }
    String::from_utf8_lossy(&raw).to_ascii_lowercase()
}

#[test]
fn a_profile_and_a_cpu_set_reach_every_running_server() {
    // The directives each server's own view of its configuration (the
    // disclosure) must show for this profile, whitespace collapsed.
    let cases: &[(&str, &[&str])] = &[
        (
            "nginx",
            &[
                "worker_processes 2;",
                "keepalive_timeout 0s;",
                "backlog=64;",
                "== nginx -T ==",
            ],
        ),
        (
            "lighttpd",
            &[
                "server.max-worker = 2",
                "server.max-keep-alive-requests = 0",
                "server.listen-backlog = 64",
                "== lighttpd -p ==",
            ],
        ),
        (
            "apache-event",
            &["ServerLimit 2", "KeepAlive Off", "ListenBacklog 64", "== apache2 -M =="],
        ),
        (
            "apache-prefork",
            &[
                "MaxRequestWorkers 2",
                "KeepAlive Off",
                "ListenBacklog 64",
                "mpm_prefork_module",
            ],
        ),
    ];
    for (server, want) in cases {
        spice_support::require(if server.starts_with("apache") {
            "apache2"
        } else {
            server
        });
        let guard = LabGuard::new();
        let profile = guard.path().join("profile.toml");
        fs::write(
            &profile,
            "workers = 2\nkeepalive = false\naccess_log = true\nbacklog = 64\n",
        )
        .unwrap();
        let up = lab(
            guard.path(),
            &["up", server, "--profile", profile.to_str().unwrap(), "--cpus", "0"],
        );
        assert_success(&format!("lab up {server}"), &up);
        let state = guard.path().join(server);
        let record: serde_json::Value =
            serde_json::from_str(&fs::read_to_string(state.join("lab.json")).unwrap()).unwrap();
        let port = record["port"].as_u64().unwrap() as u16;
        let disclosure = fs::read_to_string(state.join("disclosure.txt")).unwrap();
        let collapsed = disclosure.split_whitespace().collect::<Vec<_>>().join(" ");
        for w in want.iter().chain(&["cpus: 0"]) {
            assert!(collapsed.contains(w), "{server}: disclosure lacks {w:?}:\n{disclosure}");
        }
        let pid = record["pid"].as_i64().unwrap();
        let proc_status = fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        assert!(
            proc_status.contains("\nCpus_allowed_list:\t0\n"),
            "{server}: {proc_status}"
        );
        let head = head_of_plain_get(port, "/d0000/p000000.html");
        assert!(head.starts_with("http/1.1 200"), "{server}: {head}");
        assert!(
            head.contains("\r\nconnection: close\r\n"),
            "{server}: keep-alive off, yet:\n{head}"
        );
        // Servers log a request after answering it (lighttpd buffers up to
        // a second): wait for the line.
        let read_log = || fs::read_to_string(state.join("run/access.log")).unwrap_or_default();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while read_log().is_empty() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let access_log = read_log();
        assert_eq!(access_log.lines().count(), 1, "{server}: {access_log}");
        assert_success("lab down", &lab(guard.path(), &["down", server]));
    }
}

/// The live processes whose command line mentions `needle`.
fn live_processes_mentioning(needle: &str) -> Vec<String> {
    let mut out = Vec::new();
    for e in fs::read_dir("/proc").unwrap().flatten() {
        let Ok(cmdline) = fs::read(e.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        let zombie = fs::read_to_string(e.path().join("stat"))
            .ok()
            .and_then(|s| s.rsplit_once(')').map(|(_, r)| r.trim_start().starts_with('Z')))
            .unwrap_or(true);
        if !zombie && cmdline.contains(needle) {
            out.push(cmdline);
        }
    }
    out
}

#[test]
fn a_server_that_fails_to_start_leaves_no_helper_and_no_state() {
    spice_support::require("nginx");
    let guard = LabGuard::new();
    // An `nginx` first on PATH that fails as a broken configuration would;
    // fcgiwrap and spawn-fcgi (real) are up by the time it runs.
    let fake = guard.path().join("fakebin");
    fs::create_dir_all(&fake).unwrap();
    fs::write(
        fake.join("nginx"),
        "#!/bin/sh\necho 'nginx: [emerg] a fake failure' >&2\nexit 1\n",
    )
    .unwrap();
    spice_support::chmod(&fake.join("nginx"), 0o755);
    let path = format!("{}:{}", fake.display(), std::env::var("PATH").unwrap_or_default());
    let out = Command::new(benchlab_bin())
        .args(["lab", "up", "nginx"])
        .env("BENCHLAB_LAB_DIR", guard.path())
        .env("PATH", path)
        .output()
        .expect("run benchlab lab up");
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("nginx exited at start") && err.contains("a fake failure"),
        "{err}"
    );
    assert!(!guard.path().join("nginx").exists(), "a failed up leaves no state dir");
    let state = guard.path().join("nginx").display().to_string();
    assert_eq!(live_processes_mentioning(&state), Vec::<String>::new());
}

/// A one-mix suite (1 client × 2 threads, 1 s) of the lab's file set.
const LAB_SUITE: &str = r#"
name = "lab-tiny"
description = "one short mix against a lab server"
target = "http://127.0.0.1:9"
seed = 3

[defaults]
ramp_up = "200ms"
ramp_down = "200ms"
length = "1s"
threads_per_client = 2
timeout = "5s"

[workloads.tiny]
[[workloads.tiny.class]]
name = "static"
percent = 100
[workloads.tiny.class.fileset]
name = "specweb99"

[[mix]]
clients = 1
"#;

/// Runs `benchlab run` on [`LAB_SUITE`] with the lab's state under `base`.
fn run_suite(base: &Path, dir: &Path, root: &Path, args: &[&str]) -> Output {
    let suite = dir.join("suite.toml");
    fs::write(&suite, LAB_SUITE).unwrap();
    Command::new(benchlab_bin())
        .arg("run")
        .arg(&suite)
        .arg("--fileset")
        .arg(format!("specweb99={}", root.display()))
        .args(args)
        .env("BENCHLAB_LAB_DIR", base)
        .output()
        .expect("run benchlab run")
}

/// What maud makes of a text in an element.
fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A run against `lab up nginx` (`--lab nginx`, and by its URL as
/// `--target`) stores nginx's disclosure in results.json — version,
/// `nginx -T`, profile, CPU set — with the host facts and the client CPU
/// set, and prints them in report.html (escaped) and the workbook's
/// Configuration sheet.
#[test]
fn a_run_against_a_lab_server_discloses_it_in_results_and_reports() {
    use calamine::{open_workbook, Data, Reader, Xlsx};
    let guard = LabGuard::new();
    let files = tempfile::tempdir().unwrap();
    let (root, _) = fileset(files.path());
    let up = lab(guard.path(), &["up", "nginx", "--root", root.to_str().unwrap()]);
    assert_success("lab up nginx", &up);
    let url = String::from_utf8_lossy(&up.stdout).lines().next().unwrap().to_owned();

    let out = files.path().join("by-lab");
    let run = run_suite(
        guard.path(),
        files.path(),
        &root,
        &["--lab", "nginx", "--out", out.to_str().unwrap()],
    );
    assert_success("run --lab nginx", &run);
    let results: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    // The new fields are in docs/results.schema.json.
    let schema: serde_json::Value = serde_json::from_str(
        &fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/results.schema.json")).unwrap(),
    )
    .unwrap();
    let validator = jsonschema::validator_for(&schema).expect("schema");
    let errors: Vec<String> = validator
        .iter_errors(&results)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "results.json does not match the schema:\n{}",
        errors.join("\n")
    );
    let env = &results["environment"];
    assert_eq!(env["target"], url.as_str(), "--lab sets the target");
    let server = &env["server"];
    assert_eq!(server["server"], "nginx");
    let version = server["version"].as_str().unwrap();
    assert!(version.contains("nginx/"), "{version}");
    assert_eq!(server["url"], url.as_str());
    assert_eq!(server["effective_configuration"][0]["source"], "nginx -T");
    let nginx_t = server["effective_configuration"][0]["text"].as_str().unwrap();
    assert!(nginx_t.contains("worker_processes"), "{nginx_t}");
    assert!(server["profile"].as_str().unwrap().contains("workers"), "{server}");
    assert_eq!(env["client_cpus"], serde_json::json!([]));
    let host = &env["host_facts"];
    assert!(
        host["kernel_tunables"]["net.core.somaxconn"]
            .as_str()
            .is_some_and(|v| !v.is_empty()),
        "{host}"
    );
    assert!(host["cpus_online"].as_u64().is_some_and(|n| n >= 1), "{host}");
    assert!(host["memory_bytes"].as_u64().is_some_and(|n| n > 0), "{host}");

    let html = fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains(&html_escape(version)), "the report shows nginx's version");
    assert!(html.contains("Effective configuration: nginx -T"));
    // Every line of `nginx -T`, escaped, is in the report.
    for line in nginx_t.lines().filter(|l| !l.trim().is_empty()) {
        assert!(
            html.contains(&html_escape(line)),
            "report.html lacks the nginx -T line {line:?}"
        );
    }
    assert!(html.contains("net.core.somaxconn"));

    let mut book: Xlsx<_> = open_workbook(out.join("report.xlsx")).expect("calamine opens report.xlsx");
    let sheet = book.worksheet_range("Configuration").expect("Configuration sheet");
    let cells: Vec<String> = sheet
        .rows()
        .flat_map(|r| r.iter())
        .filter_map(|c| match c {
            Data::String(s) => Some(s.clone()),
            _ => None,
        })
        .collect();
    let has = |s: &str| cells.iter().any(|c| c == s);
    assert!(
        has("environment.server.version") && has(version),
        "the sheet shows nginx's version"
    );
    assert!(has("Server under test nginx: effective configuration: nginx -T"));
    for line in nginx_t.lines().filter(|l| !l.trim().is_empty()) {
        assert!(has(line), "the Configuration sheet lacks the nginx -T line {line:?}");
    }
    assert!(has("environment.host_facts.net.core.somaxconn"));

    // The lab's URL as --target is disclosed too.
    let by_url = files.path().join("by-url");
    let run = run_suite(
        guard.path(),
        files.path(),
        &root,
        &["--target", &url, "--out", by_url.to_str().unwrap()],
    );
    assert_success("run --target <lab url>", &run);
    let results: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(by_url.join("results.json")).unwrap()).unwrap();
    assert_eq!(results["environment"]["server"]["server"], "nginx");

    // --lab of a server that is not up is a clear error.
    let run = run_suite(guard.path(), files.path(), &root, &["--lab", "lighttpd"]);
    assert_eq!(run.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        stderr.contains("lighttpd is not up; start it with `benchlab lab up lighttpd`"),
        "{stderr}"
    );

    assert_success("lab down", &lab(guard.path(), &["down", "--all"]));
}

/// `run --client-cpus` refuses the lab server's CPU (unless
/// --allow-shared-cpus), and with another CPU runs pinned and discloses the
/// set next to the server's.
#[test]
fn client_cpus_never_share_the_lab_servers_cpu_unless_allowed() {
    let guard = LabGuard::new();
    let files = tempfile::tempdir().unwrap();
    let (root, manifest) = fileset(files.path());
    assert_success(
        "lab up benchlab --cpus 0",
        &lab(
            guard.path(),
            &["up", "benchlab", "--cpus", "0", "--root", root.to_str().unwrap()],
        ),
    );
    let run = run_suite(
        guard.path(),
        files.path(),
        &root,
        &["--lab", "benchlab", "--client-cpus", "0"],
    );
    assert_eq!(run.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        stderr.contains("--client-cpus 0: CPU 0 is also the lab's benchlab CPU (`lab up --cpus 0`)")
            && stderr.contains("--allow-shared-cpus"),
        "{stderr}"
    );
    // `http` on a URL of the lab server checks the same.
    let record: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(guard.path().join("benchlab/lab.json")).unwrap()).unwrap();
    let page = format!("{}does-not-matter", record["url"].as_str().unwrap());
    let http = Command::new(benchlab_bin())
        .args(["http", &page, "--client-cpus", "0", "--requests", "1"])
        .env("BENCHLAB_LAB_DIR", guard.path())
        .output()
        .unwrap();
    let http_err = String::from_utf8_lossy(&http.stderr);
    assert_eq!(http.status.code(), Some(2), "{http_err}");
    assert!(http_err.contains("CPU 0 is also the lab's benchlab CPU"), "{http_err}");
    let run = run_suite(
        guard.path(),
        files.path(),
        &root,
        &["--lab", "benchlab", "--client-cpus", "x"],
    );
    assert_eq!(run.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&run.stderr).contains("--client-cpus \"x\": \"x\" is not a CPU number"));

    let online = std::thread::available_parallelism().map_or(1, |n| n.get());
    let (cpus, extra): (&str, &[&str]) = if online >= 2 {
        ("1", &[])
    } else {
        ("0", &["--allow-shared-cpus"])
    };
    let out = files.path().join("pinned");
    let mut args = vec![
        "--lab",
        "benchlab",
        "--client-cpus",
        cpus,
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    assert_success(
        "run --client-cpus",
        &run_suite(guard.path(), files.path(), &root, &args),
    );
    let results: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    let want: usize = cpus.parse().unwrap();
    assert_eq!(results["environment"]["client_cpus"], serde_json::json!([want]));
    assert_eq!(results["environment"]["server"]["cpus"], serde_json::json!([0]));
    let html = fs::read_to_string(out.join("report.html")).unwrap();
    assert!(
        html.contains(&format!("<th>client CPUs</th><td><code>{want}</code>")),
        "report.html shows the client CPUs"
    );
    // `http --json` records its CPU set as well (and `[]` unpinned).
    let page = format!(
        "{}{}",
        record["url"].as_str().unwrap().trim_end_matches('/'),
        manifest.entries[0].path
    );
    for (args, set) in [
        (vec!["--client-cpus", cpus], serde_json::json!([want])),
        (vec![], serde_json::json!([])),
    ] {
        let http = Command::new(benchlab_bin())
            .args(["http", &page, "--requests", "5", "--json"])
            .args(&args)
            .args(extra)
            .env("BENCHLAB_LAB_DIR", guard.path())
            .output()
            .unwrap();
        assert_success("http --json", &http);
        let v: serde_json::Value = serde_json::from_slice(&http.stdout).unwrap();
        let v = &v["environment"];
        assert_eq!(v["client_cpus"], set, "{args:?}");
    }
    assert_success("lab down", &lab(guard.path(), &["down", "--all"]));
}

/// `run --cold-cache` as root drops the page cache before each mix and says
/// so in results.json and the report; where /proc/sys/vm/drop_caches
/// cannot be written (a read-only /proc/sys), it is refused before any
/// request. (Without root the cgroup path runs: the next test.)
#[test]
fn cold_cache_drops_the_page_cache_before_each_mix_or_says_why_not() {
    // SAFETY: geteuid never fails.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: not root (the cgroup path is tested below)");
        return;
    }
    let guard = LabGuard::new();
    let files = tempfile::tempdir().unwrap();
    let (root, _) = fileset(files.path());
    assert_success(
        "lab up benchlab",
        &lab(guard.path(), &["up", "benchlab", "--root", root.to_str().unwrap()]),
    );
    let out = files.path().join("cold");
    let run = run_suite(
        guard.path(),
        files.path(),
        &root,
        &["--lab", "benchlab", "--cold-cache", "--out", out.to_str().unwrap()],
    );
    let stderr = String::from_utf8_lossy(&run.stderr);
    let writable = fs::OpenOptions::new()
        .write(true)
        .open("/proc/sys/vm/drop_caches")
        .is_ok();
    if writable {
        assert_success("run --cold-cache", &run);
        assert_eq!(stderr.matches("cold cache: page cache dropped").count(), 1, "{stderr}");
        let results: serde_json::Value =
            serde_json::from_str(&fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
        assert_eq!(results["environment"]["cold_cache"], true);
        assert!(results["environment"]["cold_cache_method"]
            .as_str()
            .unwrap()
            .starts_with("sync; echo 3 > /proc/sys/vm/drop_caches"));
        let html = fs::read_to_string(out.join("report.html")).unwrap();
        assert!(html.contains("dropped before each mix (--cold-cache)"));
    } else {
        assert!(
            run.status.code() == Some(1) && stderr.contains("is not writable here"),
            "{stderr}"
        );
        assert!(!out.exists(), "refused before the run");
    }
    assert_success("lab down", &lab(guard.path(), &["down", "--all"]));
}

/// `run --cold-cache` without root (forced here with
/// BENCHLAB_COLD_CACHE=cgroup, as the tests run as root): the lab server's
/// processes move into a memory cgroup of their own, whose pages and the
/// file set's are evicted before each mix; results.json and the report say
/// so; afterwards the server runs on, back in its cgroup, and the cgroup is
/// gone. A target that is no lab server is refused with the reason; where
/// no memory cgroup is writable the message says why.
#[test]
fn cold_cache_without_root_evicts_through_the_lab_servers_memory_cgroup() {
    let guard = LabGuard::new();
    let files = tempfile::tempdir().unwrap();
    let (root, _) = fileset(files.path());
    assert_success(
        "lab up benchlab",
        &lab(guard.path(), &["up", "benchlab", "--root", root.to_str().unwrap()]),
    );
    let record: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(guard.path().join("benchlab/lab.json")).unwrap()).unwrap();
    let pid = record["pid"].as_i64().unwrap();
    let cgroup_before = fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap();
    let cgroup_run = |args: &[&str]| {
        let suite = files.path().join("suite.toml");
        fs::write(&suite, LAB_SUITE).unwrap();
        Command::new(benchlab_bin())
            .arg("run")
            .arg(&suite)
            .arg("--fileset")
            .arg(format!("specweb99={}", root.display()))
            .arg("--cold-cache")
            .args(args)
            .env("BENCHLAB_LAB_DIR", guard.path())
            .env("BENCHLAB_COLD_CACHE", "cgroup")
            .output()
            .unwrap()
    };
    let refused = cgroup_run(&[
        "--target",
        record["url"]
            .as_str()
            .unwrap()
            .replace("127.0.0.1", "127.0.0.2")
            .as_str(),
    ]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("add --lab SERVER, or run as root"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
    let out = files.path().join("cold");
    let run = cgroup_run(&["--lab", "benchlab", "--out", out.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&run.stderr);
    if run.status.code() == Some(1) && stderr.contains("memory cgroup") {
        eprintln!("skipped: no writable memory cgroup here: {stderr}");
        return;
    }
    assert_success("run --cold-cache (cgroup)", &run);
    // One mix: one eviction, covering the whole file set (36 files and
    // its manifest).
    assert_eq!(stderr.matches("cold cache: pages of 37 files (").count(), 1, "{stderr}");
    let results: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    assert_eq!(results["environment"]["cold_cache"], true);
    let method = results["environment"]["cold_cache_method"].as_str().unwrap();
    assert!(method.starts_with("memory cgroup /"), "{method}");
    assert!(method.contains("posix_fadvise DONTNEED"), "{method}");
    let dir = method.trim_start_matches("memory cgroup ").split(' ').next().unwrap();
    assert!(dir.contains("benchlab-lab-benchlab-"), "{method}");
    assert!(!Path::new(dir).exists(), "the cgroup {dir} is removed after the run");
    assert_eq!(
        fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap(),
        cgroup_before,
        "the server is back in its own cgroup"
    );
    let html = fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains(&html_escape(&format!(
        "dropped before each mix (--cold-cache): {method}"
    ))));
    assert_success("lab down", &lab(guard.path(), &["down", "--all"]));
}

/// `lab up --backlog N` wins over the profile's `backlog`, reaches the
/// server's configuration, and the disclosure (text, JSON) says what
/// net.core.somaxconn makes of it: a backlog above it is capped. A server
/// without the setting, or a backlog out of range, is refused.
#[test]
fn backlog_flag_reaches_the_configuration_and_the_disclosure_says_what_somaxconn_caps() {
    spice_support::require("lighttpd");
    let somaxconn: u32 = fs::read_to_string("/proc/sys/net/core/somaxconn")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let guard = LabGuard::new();
    for (args, want) in [
        (
            &["up", "benchlab", "--backlog", "64"][..],
            "--backlog: benchlab has no listen backlog setting",
        ),
        (
            &["up", "lighttpd", "--backlog", "0"][..],
            "--backlog 0: expected 1 to 65535",
        ),
    ] {
        let out = lab(guard.path(), args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(want), "{args:?}: {err}");
    }
    let asked = (somaxconn + 1).min(65_535);
    let profile = guard.path().join("p.toml");
    fs::write(&profile, "backlog = 64\n").unwrap();
    let up = lab(
        guard.path(),
        &[
            "up",
            "lighttpd",
            "--profile",
            profile.to_str().unwrap(),
            "--backlog",
            &asked.to_string(),
        ],
    );
    assert_success("lab up lighttpd --backlog", &up);
    let state = guard.path().join("lighttpd");
    let text = fs::read_to_string(state.join("disclosure.txt")).unwrap();
    let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        collapsed.contains(&format!("server.listen-backlog = {asked}")),
        "the configuration asks for {asked}:\n{text}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(state.join("disclosure.json")).unwrap()).unwrap();
    let effective = asked.min(somaxconn);
    assert_eq!(
        json["listen_backlog"],
        serde_json::json!({"requested": asked, "somaxconn": somaxconn, "effective": effective})
    );
    let line = if asked > somaxconn {
        format!("listen backlog: {asked} asked, capped to {somaxconn} by net.core.somaxconn\n")
    } else {
        format!("listen backlog: {asked} (net.core.somaxconn {somaxconn} does not cap it)\n")
    };
    assert!(text.contains(&line), "{text}");
    assert_success("lab down", &lab(guard.path(), &["down", "lighttpd"]));
}

/// `lab certs` refuses a directory that already holds a CA (the agents'
/// certificates would stop being trusted) unless `--force`, and replaces a
/// planted link rather than writing through it; keys are owner-only.
#[test]
fn certs_refuse_an_existing_ca_unless_forced_and_never_write_through_links() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("certs");
    let certs = |extra: &[&str]| {
        let mut args = vec!["certs", "--out", out.to_str().unwrap()];
        args.extend(extra);
        lab(dir.path(), &args)
    };
    assert_success("lab certs", &certs(&[]));
    let ca = fs::read(out.join("ca.pem")).unwrap();
    let again = certs(&[]);
    assert_eq!(again.status.code(), Some(2));
    let err = String::from_utf8_lossy(&again.stderr);
    assert!(
        err.contains("already holds a lab CA (ca.pem, ca.key)") && err.contains("--force"),
        "{err}"
    );
    assert_eq!(fs::read(out.join("ca.pem")).unwrap(), ca, "the CA was overwritten");

    // A link planted where the CA key goes: replaced, its target untouched.
    let victim = dir.path().join("victim");
    fs::write(&victim, "not a key").unwrap();
    fs::remove_file(out.join("ca.key")).unwrap();
    std::os::unix::fs::symlink(&victim, out.join("ca.key")).unwrap();
    assert_eq!(
        certs(&[]).status.code(),
        Some(2),
        "still refused with a link for ca.key"
    );
    assert_success("lab certs --force", &certs(&["--force"]));
    assert_eq!(fs::read_to_string(&victim).unwrap(), "not a key");
    let meta = fs::symlink_metadata(out.join("ca.key")).unwrap();
    assert!(meta.file_type().is_file(), "ca.key is still a link");
    assert_ne!(fs::read(out.join("ca.pem")).unwrap(), ca, "--force makes a new CA");
    for e in fs::read_dir(&out).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let mode = e.metadata().unwrap().permissions().mode() & 0o777;
        if name.ends_with(".key") {
            assert_eq!(mode, 0o600, "{name}");
        }
        assert!(!name.ends_with(".tmp"), "{name} left behind");
    }
}
