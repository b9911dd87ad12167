//! Durations and `--time-scale` out of range: refused before anything
//! runs, exit 2, with the flag (or file:line:column) and the allowed range
//! in the message — never a panic (`--time-scale 1e20` panicked in
//! `Duration::from_secs_f64`, ramps of 2⁶⁴ s overflowed when added, and a
//! run of 6×10⁸ years overflowed an `Instant` in a worker thread).

mod common;

use common::run_benchlab;
use std::path::{Path, PathBuf};
use std::process::Output;

/// A one-mix suite with `extra` lines in its `[defaults]`; `target` is a
/// port where nothing listens, so a run that got past the checks would fail
/// at its preflight (exit 1), not load anything.
fn suite(dir: &Path, defaults: &str) -> PathBuf {
    let text = format!(
        "name = \"limits\"\ntarget = \"http://127.0.0.1:1\"\n[defaults]\n{defaults}\n\
         [workloads.w]\n[[workloads.w.class]]\nname = \"a\"\npercent = 100\n\
         [[workloads.w.class.url]]\npath = \"/a.html\"\n[[mix]]\nclients = 1\n"
    );
    let p = dir.join("limits.toml");
    std::fs::write(&p, text).expect("write suite");
    p
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Exit code 2 and `want` in stderr (no panic).
fn assert_usage(what: &str, out: &Output, want: &str) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(2), "{what}: expected exit 2:\n{err}");
    assert!(err.contains(want), "{what}: stderr lacks {want:?}:\n{err}");
    assert!(!err.contains("panicked"), "{what} panicked:\n{err}");
}

#[test]
fn time_scale_out_of_range_names_the_flag_and_the_range() {
    let dir = tempfile::tempdir().expect("tempdir");
    let s = suite(dir.path(), "length = \"10s\"\nramp_up = \"1s\"\nramp_down = \"1s\"");
    let s = s.to_str().expect("UTF-8 path");
    // Never the working directory's results/, should a run get that far.
    let out_dir = dir.path().join("results").display().to_string();
    for f in ["1e20", "0", "-1", "NaN", "inf", "0.0001", "1001"] {
        let out = run_benchlab(&["run", s, &format!("--time-scale={f}"), "--out", &out_dir]);
        assert_usage(
            &format!("run --time-scale {f}"),
            &out,
            &format!("invalid value '{f}' for '--time-scale <F>': "),
        );
        assert!(
            stderr(&out).contains("expected a number from 0.001 to 1000"),
            "{}",
            stderr(&out)
        );
    }
    // demo checks it before it makes its file set and starts its server.
    let out = run_benchlab(&["demo", "--time-scale", "1e20", "--out", &out_dir]);
    assert_usage(
        "demo --time-scale 1e20",
        &out,
        "invalid value '1e20' for '--time-scale <F>': `1e20`: expected a number from 0.001 to 1000",
    );
}

#[test]
fn scaled_durations_over_a_week_are_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let s = suite(dir.path(), "length = \"1day\"\nramp_up = \"1s\"\nramp_down = \"1s\"");
    let out_dir = dir.path().join("results").display().to_string();
    let out = run_benchlab(&[
        "run",
        s.to_str().expect("UTF-8 path"),
        "--time-scale",
        "1000",
        "--out",
        &out_dir,
    ]);
    assert_usage(
        "run --time-scale 1000 on a 1-day mix",
        &out,
        "benchlab: error: --time-scale 1000: mix 1's length 1day would become 86400000 s, too long: \
         expected every scaled duration from 0s to 7days\n",
    );
}

#[test]
fn suite_durations_over_a_week_are_refused_at_their_place() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cases = [
        // Fits a u64 of seconds, overflows an Instant.
        ("length = \"600000000years\"", "length `600000000years` is "),
        // 2⁶⁴-1 s + 1 s overflowed in the ramp check.
        (
            "length = \"10s\"\nramp_down = \"1s\"\nramp_up = \"18446744073709551615s\"",
            "ramp_up `18446744073709551615s` is ",
        ),
        (
            "length = \"10s\"\nthink_time = \"8days\"",
            "think_time `8days` is 8days, too long",
        ),
        (
            "length = \"10s\"\ntimeout = \"99999999999999999999s\"",
            "timeout `99999999999999999999s`: ",
        ),
    ];
    for (defaults, want) in cases {
        let s = suite(dir.path(), defaults);
        let out = run_benchlab(&["check", s.to_str().expect("UTF-8 path")]);
        // The bad value is the last line of `[defaults]`.
        let line = defaults.lines().count() + 3;
        assert_usage(defaults, &out, &format!("benchlab: error: {}:{line}:", s.display()));
        assert!(stderr(&out).contains(want), "{defaults}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("from 0s to 7days"),
            "{defaults}: {}",
            stderr(&out)
        );
    }
}

#[test]
fn duration_flags_over_a_week_name_the_flag() {
    let url = "http://127.0.0.1:1/";
    for (flag, value) in [
        ("--duration", "8days"),
        ("--think-time", "600000000years"),
        ("--timeout", "18446744073709551615s"),
        ("--max-p99", "8days"),
    ] {
        let out = run_benchlab(&["http", flag, value, url]);
        assert_usage(
            &format!("http {flag} {value}"),
            &out,
            &format!("invalid value '{value}' for '{flag} <DUR>': `{value}` is "),
        );
        assert!(stderr(&out).contains("too long: expected a duration from 0s to 7days"));
    }
    let out = run_benchlab(&["http", "--duration", "ten", url]);
    assert_usage(
        "http --duration ten",
        &out,
        "invalid value 'ten' for '--duration <DUR>': `ten`: ",
    );
    let root = tempfile::tempdir().expect("tempdir");
    let out = run_benchlab(&[
        "serve",
        "--root",
        root.path().to_str().expect("UTF-8 path"),
        "--listen",
        "127.0.0.1:0",
        "--keepalive-timeout",
        "8days",
    ]);
    assert_usage(
        "serve --keepalive-timeout 8days",
        &out,
        "invalid value '8days' for '--keepalive-timeout <DUR>': `8days` is 8days, too long",
    );
}
