//! `benchlab check` on broken suite files: each is refused with exit code 2
//! and one line on stderr, `benchlab: error: FILE:LINE:COL: message`, that
//! points at the offending place and says what was expected. The files are
//! in `tests/data/suites/bad/`, one mistake each (its first line says which
//! and where). Every shipped suite in `suites/` passes the same check.

mod common;

use common::run_benchlab;
use std::path::{Path, PathBuf};

/// One broken suite: its file, where the error must point, and phrases the
/// message must contain.
struct Case {
    file: &'static str,
    line: usize,
    column: usize,
    phrases: &'static [&'static str],
}

const CASES: &[Case] = &[
    // Open-loop mixes: a rate of 0, at the value.
    Case {
        file: "rate_zero.toml",
        line: 18,
        column: 8,
        phrases: &["rate 0: expected requests per second from 0.001 to 10,000,000"],
    },
    // Both `threads_per_client` and `rate` in one mix.
    Case {
        file: "rate_and_threads.toml",
        line: 18,
        column: 22,
        phrases: &["mix 1: both `rate` and `threads_per_client`: expected one"],
    },
    Case {
        file: "rate_in_defaults.toml",
        line: 8,
        column: 8,
        phrases: &["`rate` belongs in each [[mix]]"],
    },
    Case {
        file: "arrival_unknown.toml",
        line: 19,
        column: 11,
        phrases: &["arrival `burst`: expected \"constant\" or \"poisson\""],
    },
    Case {
        file: "http_unknown.toml",
        line: 18,
        column: 8,
        phrases: &["http `4`: expected \"1.1\", \"2\" or \"3\""],
    },
    Case {
        file: "class_http_unknown.toml",
        line: 13,
        column: 8,
        phrases: &["http `h3`: expected \"1.1\", \"2\" or \"3\""],
    },
    Case {
        file: "http2_with_http10.toml",
        line: 19,
        column: 8,
        phrases: &["http = \"2\" with http10_percent above 0"],
    },
    // [defaults]' think time reaches an open-loop mix.
    Case {
        file: "rate_with_think_time.toml",
        line: 19,
        column: 8,
        phrases: &["mix 1: `rate` with think_time 1s: an open loop has no think time"],
    },
    // `rampup = "2s"`: the key itself, with the keys that are allowed.
    Case {
        file: "unknown_key_defaults.toml",
        line: 8,
        column: 1,
        phrases: &["unknown field `rampup`", "expected one of", "`ramp_up`"],
    },
    // `thread_per_client = 2` in the second mix.
    Case {
        file: "unknown_key_mix.toml",
        line: 20,
        column: 1,
        phrases: &["unknown field `thread_per_client`", "`threads_per_client`"],
    },
    // 60 + 30: at the first class, listing every class's share.
    Case {
        file: "percent_sum.toml",
        line: 10,
        column: 1,
        phrases: &["add up to 90, expected 100", "small 60 + large 30"],
    },
    // `clients = 0`: the value.
    Case {
        file: "clients_zero.toml",
        line: 19,
        column: 11,
        phrases: &["mix 2", "clients = 0", "expected at least 1"],
    },
    // `clients = 5` with `max_clients = 4`: the value.
    Case {
        file: "clients_over_max.toml",
        line: 20,
        column: 11,
        phrases: &["mix 2", "5 clients", "max_clients is 4"],
    },
    // `length = "0s"`: the value (its opening quote).
    Case {
        file: "length_zero.toml",
        line: 18,
        column: 10,
        phrases: &["length is zero", "expected"],
    },
    // Ramps of 2 s + 2 s in a 4 s mix: at the mix (`[[mix]]` of mix 2),
    // since the ramps may come from [defaults].
    Case {
        file: "ramps_too_long.toml",
        line: 18,
        column: 1,
        phrases: &[
            "mix 2",
            "ramp_up 2s + ramp_down 2s",
            "length 4s",
            "expected a measurement window of at least 100ms",
        ],
    },
    // delay 3 s, ramp_up 2 s: at the mix.
    Case {
        file: "delay_over_ramp.toml",
        line: 16,
        column: 1,
        phrases: &["mix 1", "delay 3s is longer than ramp_up 2s", "expected"],
    },
    // `ramp_up = "ten seconds"`: the value.
    Case {
        file: "bad_duration.toml",
        line: 6,
        column: 11,
        phrases: &["ramp_up `ten seconds`", "expected a duration such as"],
    },
    // `requests_per_connection = "6..2"`: the value, with the accepted forms.
    Case {
        file: "per_connection_backwards.toml",
        line: 8,
        column: 27,
        phrases: &["requests_per_connection", "MIN..MAX", "MIN ≤ MAX"],
    },
    // `workload = "dynamic"`: the value, with the workloads there are.
    Case {
        file: "unknown_workload.toml",
        line: 20,
        column: 12,
        phrases: &["mix 2", "unknown workload `dynamic`", "expected one of static"],
    },
    // `kind = "dynamic"` without `spi`: at the class.
    Case {
        file: "dynamic_without_spi.toml",
        line: 10,
        column: 1,
        phrases: &["class `adrot` is dynamic", "expected `spi"],
    },
    // [[class.url]] and [class.fileset] in one class: at the file set.
    Case {
        file: "urls_and_fileset.toml",
        line: 15,
        column: 1,
        phrases: &["class `a` has both", "expected one of them"],
    },
    // `http10_percent = 150`: the value.
    Case {
        file: "http10_percent.toml",
        line: 18,
        column: 18,
        phrases: &["http10_percent 150", "expected a percentage from 0 to 100"],
    },
    // No [[mix]] at all: at the end of the file, where one would go.
    Case {
        file: "no_mix.toml",
        line: 15,
        column: 1,
        phrases: &["no [[mix]]", "expected at least one mix"],
    },
    // An empty file: at its start, saying so.
    Case {
        file: "empty.toml",
        line: 1,
        column: 1,
        phrases: &["the file is empty", "expected a suite"],
    },
    // A Latin-1 byte (0xe9): its line and column, and its byte offset.
    Case {
        file: "non_utf8.toml",
        line: 3,
        column: 19,
        phrases: &["byte 0xe9 at offset 117 is not UTF-8", "expected a UTF-8 text file"],
    },
    // No [workloads.NAME] at all: at the end of the file, where one would go.
    Case {
        file: "no_workload.toml",
        line: 11,
        column: 1,
        phrases: &["no workload", "expected a [workloads.NAME] table"],
    },
    // A workload's absolute URL on a host that is not the mix's target:
    // at the URL, naming both hosts (a suite sends only to its targets).
    Case {
        file: "url_other_host.toml",
        line: 16,
        column: 1,
        phrases: &[
            "URL `http://other.example:8080/b.html?x=1` of workload `w` is on other.example:8080",
            "but mix 1 runs against `http://127.0.0.1:8080`",
            "expected a path such as `/b.html?x=1`",
        ],
    },
    // A class with its own target: its absolute URLs must be on it.
    Case {
        file: "url_other_than_class_target.toml",
        line: 15,
        column: 1,
        phrases: &[
            "class `tls`: URL `https://127.0.0.1:9443/a.html` is not on the class's target `https://127.0.0.1:8443`",
        ],
    },
    // `rate = 1e-300` used to pass and panic the worker threads.
    Case {
        file: "rate_tiny.toml",
        line: 18,
        column: 8,
        phrases: &["rate 1e-300: expected requests per second from 0.001 to 10,000,000"],
    },
    // `length = "1ns"` with no ramps used to be accepted.
    Case {
        file: "length_1ns.toml",
        line: 15,
        column: 1,
        phrases: &["mix 1", "leave 1ns", "expected a measurement window of at least 100ms"],
    },
    Case {
        file: "window_too_short.toml",
        line: 15,
        column: 1,
        phrases: &["mix 1", "ramp_up 1s + ramp_down 1s leave 50ms", "length 2s 50ms"],
    },
    // `clients 1`: TOML syntax, where `=` was expected.
    Case {
        file: "toml_syntax.toml",
        line: 17,
        column: 9,
        phrases: &["expected `.`, `=`"],
    },
];

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/suites/bad")
}

#[test]
fn bad_suites_are_refused_with_their_place() {
    let mut failures = Vec::new();
    for case in CASES {
        let path = data_dir().join(case.file);
        assert!(path.is_file(), "missing test data {}", path.display());
        let p = path.to_str().expect("UTF-8 path");
        let out = run_benchlab(&["check", p]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let mut problems = Vec::new();
        if out.status.code() != Some(2) {
            problems.push(format!("exit {:?}, expected 2", out.status.code()));
        }
        let place = format!("benchlab: error: {p}:{}:{}: ", case.line, case.column);
        if !stderr.starts_with(&place) {
            problems.push(format!("stderr does not start with `{place}`"));
        }
        for phrase in case.phrases {
            if !stderr.contains(phrase) {
                problems.push(format!("message lacks `{phrase}`"));
            }
        }
        if !stdout.is_empty() {
            problems.push("printed something on stdout".to_string());
        }
        if !problems.is_empty() {
            failures.push(format!(
                "{}: {}\n  stderr: {}\n  stdout: {}",
                case.file,
                problems.join("; "),
                stderr.trim(),
                stdout.trim()
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} case(s) failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Every file in the data directory is a case of the table (a new file
/// without a row would test nothing).
#[test]
fn every_bad_suite_has_a_case() {
    let mut files: Vec<String> = std::fs::read_dir(data_dir())
        .expect("read test data")
        .map(|e| e.expect("dir entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".toml"))
        .collect();
    files.sort();
    let mut listed: Vec<String> = CASES.iter().map(|c| c.file.to_string()).collect();
    listed.sort();
    assert_eq!(files, listed);
}

#[test]
fn shipped_suites_pass_check() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../suites");
    let mut suites: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("read suites/")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    suites.sort();
    assert!(
        suites.len() >= 6,
        "expected the six standard suites in {}",
        dir.display()
    );
    for s in &suites {
        let out = run_benchlab(&["check", s.to_str().expect("UTF-8 path")]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "benchlab check {} failed ({}):\n{}{}",
            s.display(),
            out.status,
            stdout,
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(stdout.contains("is valid"), "{}: {stdout}", s.display());
    }
}
