//! Results directories made the real way for the report tests: a
//! SPECweb99-like file set from `benchlab fileset generate`, benchlab's own
//! reference server (`benchlab serve`) on a free loopback port, and `benchlab
//! run` on a tiny suite — a static phase of three mixes and an in-process
//! SPICE phase of two mixes requesting the same files (two classes each, so
//! the per-class chart shows), so SPICE efficiency compares like with like. Each directory is made once per
//! test binary, under Cargo's target tmp dir (not /tmp, so nothing leaks).
#![allow(dead_code)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Mutex, OnceLock};

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_benchlab")
}

pub fn benchlab(args: &[&str]) -> Output {
    Command::new(bin()).args(args).output().expect("run benchlab")
}

use crate::common::Serve;
pub use crate::common::{assert_success, s};

/// A scratch directory of this test binary under `target/tmp`, emptied.
pub fn scratch(name: &str) -> PathBuf {
    let exe = std::env::current_exe().ok();
    let bin = exe
        .as_deref()
        .and_then(|e| e.file_stem())
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "report".into());
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{bin}-{name}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("create scratch dir");
    d
}

const SUITE: &str = r#"# benchlab's report tests: a static phase and an in-process SPICE phase.
name = "report-test"
description = "static (small and large files), then in-process SPICE ad rotation"
target = "http://127.0.0.1:9"
max_clients = 3
seed = 5

[defaults]
length = "2s"
ramp_up = "0.5s"
ramp_down = "0.25s"
threads_per_client = 2
timeout = "5s"

[workloads.static]
[[workloads.static.class]]
name = "small"
percent = 70
[workloads.static.class.fileset]
name = "specweb99"
classes = ["class0", "class1"]

[[workloads.static.class]]
name = "large"
percent = 30
[workloads.static.class.fileset]
name = "specweb99"
classes = ["class2"]

[workloads.inproc]
[[workloads.inproc.class]]
name = "inproc-small"
percent = 70
kind = "dynamic"
spi = "inproc"
[workloads.inproc.class.fileset]
name = "specweb99"
classes = ["class0", "class1"]
prefix = "/spice/inproc/adrot"

[[workloads.inproc.class]]
name = "inproc-large"
percent = 30
kind = "dynamic"
spi = "inproc"
[workloads.inproc.class.fileset]
name = "specweb99"
classes = ["class2"]
prefix = "/spice/inproc/adrot"

[[mix]]
clients = 1
workload = "static"
[[mix]]
clients = 2
workload = "static"
[[mix]]
clients = 3
workload = "static"
[[mix]]
clients = 1
workload = "inproc"
[[mix]]
clients = 3
workload = "inproc"
"#;

fn fileset() -> &'static Path {
    static SET: OnceLock<PathBuf> = OnceLock::new();
    SET.get_or_init(|| {
        let d = scratch("fileset");
        let set = d.join("set");
        let out = benchlab(&["fileset", "generate", "specweb99", "--dirs", "1", "--out", s(&set)]);
        assert_success("benchlab fileset generate", &out);
        set
    })
}

/// A results directory named `name` from a real run against `benchlab serve`
/// with `workers` threads (made once per test binary).
pub fn results_dir(name: &str, workers: u32) -> PathBuf {
    results_dir_of(name, SUITE, workers)
}

/// An open-loop phase: two mixes at 200 and 400 requests/s offered (their
/// threads are 0), on the same file set.
pub const OPEN_LOOP_SUITE: &str = r#"name = "report-open-loop"
description = "two open-loop mixes"
target = "http://127.0.0.1:9"
seed = 5

[defaults]
length = "2s"
ramp_up = "0.5s"
ramp_down = "0.25s"
timeout = "5s"
max_in_flight = 64

[workloads.static]
[[workloads.static.class]]
name = "small"
percent = 100
[workloads.static.class.fileset]
name = "specweb99"
classes = ["class0"]

[[mix]]
clients = 1
rate = 200
workload = "static"
[[mix]]
clients = 2
rate = 400
workload = "static"
"#;

/// [`results_dir`] of another suite text.
pub fn results_dir_of(name: &str, suite_text: &str, workers: u32) -> PathBuf {
    static MADE: OnceLock<Mutex<HashMap<String, PathBuf>>> = OnceLock::new();
    let made = MADE.get_or_init(|| Mutex::new(HashMap::new()));
    let mut made = made.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(p) = made.get(name) {
        return p.clone();
    }
    let set = fileset();
    let d = scratch(&format!("run-{name}"));
    let suite = d.join("report-test.toml");
    std::fs::write(&suite, suite_text).expect("write suite");
    let res = d.join(name);
    let server = Serve::start(set, &["--workers", &workers.to_string()]);
    let target = format!("http://{}", server.addr);
    let fs = format!("specweb99={}", s(set));
    let out = benchlab(&[
        "run",
        s(&suite),
        "--target",
        &target,
        "--fileset",
        &fs,
        "--out",
        s(&res),
    ]);
    drop(server);
    assert_success("benchlab run", &out);
    assert!(
        res.join("results.json").is_file(),
        "no results.json in {}",
        res.display()
    );
    made.insert(name.to_string(), res.clone());
    res
}

pub fn read_json(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

/// Copies a results directory (results.json and the CSVs).
pub fn copy_results(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create copy");
    for f in ["results.json", "summary.csv", "clients.csv"] {
        std::fs::copy(from.join(f), to.join(f)).unwrap_or_else(|e| panic!("copy {f}: {e}"));
    }
}

/// The value of attribute `name` in an HTML/SVG start tag `tag`.
pub fn attr<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let pat = format!(" {name}=\"");
    let i = tag.find(&pat)? + pat.len();
    let j = tag[i..].find('"')? + i;
    Some(&tag[i..j])
}

/// Undoes the report's HTML escaping of attribute values and text.
pub fn unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

/// Every start tag `<NAME ...>` of the document.
pub fn tags<'a>(html: &'a str, name: &str) -> Vec<&'a str> {
    let open = format!("<{name} ");
    let mut v = Vec::new();
    let mut rest = html;
    while let Some(i) = rest.find(&open) {
        let after = &rest[i..];
        let Some(j) = after.find('>') else { break };
        v.push(&after[..=j]);
        rest = &after[j + 1..];
    }
    v
}

/// A results.json field by a dotted path (`latency_us.p99`).
pub fn field<'a>(m: &'a serde_json::Value, path: &str) -> &'a serde_json::Value {
    path.split('.').fold(m, |v, k| &v[k])
}

/// A results.json histogram (HDR V2, base64), decoded.
pub fn histogram(b64: &str) -> hdrhistogram::Histogram<u64> {
    use base64::Engine as _;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .expect("histogram is base64");
    hdrhistogram::serialization::Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .expect("histogram is HDR V2")
}
