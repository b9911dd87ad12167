#!/usr/bin/env bash
# The SMB client, chosen by measurement: Samba's libsmbclient (benchlab's
# smb:// backend, through `benchlab run`) against the pure-Rust `smb` crate
# (crates.io), on the same unprivileged smbd (started here on a loopback
# high port, temp config, no nmbd, one guest share). For each: the median
# and p99 latency of open+close, a 4 KiB write and a 4 KiB read, and
# whether 4 KiB written into an empty file reads back through the same
# handle and through another (the two defects a benchmark must not
# inherit: no TCP_NODELAY, ~40 ms per small request; a handle's cached end
# of file hiding data written through it).
#
# The `smb` crate is measured by a throwaway Cargo project generated in a
# temp dir outside the repository (it depends on `smb` and tokio, nothing of
# benchlab); its build needs crates.io and takes minutes the first time.
#
# Usage: bench/smb-clients.sh [-h]
#   Environment (defaults in brackets):
#     N [500]             operations of each kind
#     SMB_VERSION [0.12.1] the smb crate's version
#     PROBE_DIR [$TMPDIR/benchlab-smb-probe]  the throwaway project (kept,
#                          so a second run does not rebuild)
#     BENCHLAB [target/release/benchlab, else target/debug/benchlab]
#     OUT_DIR [bench/out]  the report (smb-clients-STAMP.txt)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; }
case ${1:-} in
  -h|--help) usage; exit 0 ;;
  "") ;;
  *) echo "smb-clients: unknown argument '$1' (try --help)" >&2; exit 2 ;;
esac
N=${N:-500}
SMB_VERSION=${SMB_VERSION:-0.12.1}
PROBE_DIR=${PROBE_DIR:-${TMPDIR:-/tmp}/benchlab-smb-probe}
OUT_DIR=${OUT_DIR:-bench/out}
if [ -z "${BENCHLAB:-}" ]; then
  BENCHLAB=target/release/benchlab
  [ -x "$BENCHLAB" ] || BENCHLAB=target/debug/benchlab
fi
[ -x /usr/sbin/smbd ] || { echo "smb-clients: smbd is not installed (apt-get install samba)" >&2; exit 1; }
[ -x "$BENCHLAB" ] || { echo "smb-clients: no $BENCHLAB (cargo build --release -p benchlab)" >&2; exit 1; }
case $PROBE_DIR in "$ROOT"|"$ROOT"/*) echo "smb-clients: PROBE_DIR must be outside the repository" >&2; exit 2 ;; esac
mkdir -p "$OUT_DIR"
STAMP=$(date -u +%Y%m%d-%H%M%S)
REPORT="$OUT_DIR/smb-clients-$STAMP.txt"
WORK=$(mktemp -d)
# shellcheck source=lib/smbd.sh
. "$ROOT/bench/lib/smbd.sh"
cleanup() {
  smbd_stop
  rm -rf "$WORK"
}
trap cleanup EXIT

# --- the smb crate's probe -------------------------------------------------
mkdir -p "$PROBE_DIR/src"
cat > "$PROBE_DIR/Cargo.toml" <<TOML
[package]
name = "smb-probe"
version = "0.1.0"
edition = "2021"
publish = false
[dependencies]
smb = "=$SMB_VERSION"
tokio = { version = "1", features = ["rt", "macros"] }
[workspace]
TOML
cat > "$PROBE_DIR/src/main.rs" <<'RS'
// Latency of small operations through the `smb` crate, and read-back of
// data written into an empty file through the same handle and another.
use smb::{Client, ClientConfig, CreateOptions, FileAccessMask, FileAttributes, FileCreateArgs, ReadAt, UncPath, WriteAt};
use std::str::FromStr;
use std::time::Instant;

fn show(name: &str, mut v: Vec<f64>) {
    v.sort_by(|a, b| a.total_cmp(b));
    let at = |p: f64| v[((v.len() as f64 - 1.0) * p).round() as usize];
    println!("RESULT smb-crate {name} {} {:.3} {:.3}", v.len(), at(0.5), at(0.99));
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let a: Vec<String> = std::env::args().collect();
    let port: u16 = a[1].parse()?;
    let n: usize = a[2].parse()?;
    let mut cfg = ClientConfig::default();
    cfg.connection.port = Some(port);
    cfg.connection.allow_unsigned_guest_access = true;
    cfg.dfs = false;
    let client = Client::new(cfg);
    let share = UncPath::from_str(r"\\127.0.0.1\bench")?;
    // A user of smbd's own passdb: the crate's guest session setup fails
    // against Samba ("SMB session setup succeeded before SSPI
    // authentication completed", smb 0.12.1).
    client.share_connect(&share, &a[3], a[4].clone()).await?;
    let rw = FileAccessMask::new().with_generic_read(true).with_generic_write(true);
    let existing = share.clone().with_path("existing.dat");

    let mut t = Vec::new();
    for _ in 0..n {
        let s = Instant::now();
        let f = client.create_file(&existing, &FileCreateArgs::make_open_existing(rw)).await?.unwrap_file();
        f.close().await?;
        t.push(s.elapsed().as_secs_f64() * 1e3);
    }
    show("open+close", t);

    let f = client.create_file(&existing, &FileCreateArgs::make_open_existing(rw)).await?.unwrap_file();
    let buf = vec![0x5au8; 4096];
    let mut t = Vec::new();
    for i in 0..n {
        let s = Instant::now();
        let w = f.write_at(&buf, (i % 16) as u64 * 4096).await?;
        t.push(s.elapsed().as_secs_f64() * 1e3);
        assert_eq!(w, 4096);
    }
    show("write-4KiB", t);
    let mut rb = vec![0u8; 4096];
    let mut t = Vec::new();
    for i in 0..n {
        let s = Instant::now();
        let r = f.read_at(&mut rb, (i % 16) as u64 * 4096).await?;
        t.push(s.elapsed().as_secs_f64() * 1e3);
        assert_eq!(r, 4096);
    }
    show("read-4KiB", t);
    f.close().await?;

    let p = share.clone().with_path("readback.dat");
    let h = client
        .create_file(&p, &FileCreateArgs::make_overwrite(FileAttributes::new(), CreateOptions::new()))
        .await?
        .unwrap_file();
    let data: Vec<u8> = (0..4096u32).map(|i| (i * 7 % 251) as u8).collect();
    let w = h.write_at(&data, 0).await?;
    let mut same = vec![0u8; 4096];
    let r_same = h.read_at(&mut same, 0).await.map_err(|e| e.to_string());
    let h2 = client.create_file(&p, &FileCreateArgs::make_open_existing(rw)).await?.unwrap_file();
    let mut other = vec![0u8; 4096];
    let r_other = h2.read_at(&mut other, 0).await.map_err(|e| e.to_string());
    let said = |r: &Result<usize, String>, b: &[u8]| match r {
        Ok(k) if *k == data.len() && b == &data[..] => "4096 bytes, identical".to_string(),
        Ok(k) => format!("{k} bytes (wrote {w})"),
        Err(e) => format!("error: {e}"),
    };
    println!("READBACK smb-crate same handle: {}; another handle: {}", said(&r_same, &same), said(&r_other, &other));
    h2.close().await?;
    h.close().await?;
    Ok(())
}
RS
echo "building the smb crate's probe ($SMB_VERSION) in $PROBE_DIR" >&2
PROBE=
if (cd "$PROBE_DIR" && cargo build --release --quiet) > "$WORK/probe-build.log" 2>&1; then
  PROBE=$PROBE_DIR/target/release/smb-probe
else
  echo "smb-clients: the smb crate's probe did not build:" >&2
  tail -30 "$WORK/probe-build.log" | tee "$WORK/probe-failed" >&2
fi

# --- smbd --------------------------------------------------------------
smbd_start "$WORK/smb" guest
ME=$(id -un)
head -c 65536 /dev/zero > "$S/share/existing.dat"
PASS=benchlab-probe
smbd_user "$PASS"

# --- the smb crate -------------------------------------------------------
if [ -n "$PROBE" ]; then
  echo "smb crate: $N of each against smb://127.0.0.1:$PORT/bench" >&2
  "$PROBE" "$PORT" "$N" "$ME" "$PASS" > "$WORK/probe.out" 2>&1 || { echo "smb-clients: the probe failed:" >&2; cat "$WORK/probe.out" >&2; }
fi

# --- libsmbclient, through benchlab's own backend ------------------------
# A loadfile: make a 64 KiB file, then N open+close, N 4 KiB writes and N
# 4 KiB reads, then the read-back: 4 KiB into an empty file, read through
# the same handle and another (a short read is an error of its kind).
{
  echo 'Mkdir "\clients" NT_STATUS_OK'
  echo 'Deltree "\clients\client1" NT_STATUS_OK'
  echo 'Mkdir "\clients\client1" NT_STATUS_OK'
  echo 'NTCreateX "\clients\client1\existing.dat" 0x0 0x5 1 NT_STATUS_OK'
  for o in $(seq 0 15); do echo "WriteX 1 $((o * 4096)) 4096 4096 NT_STATUS_OK"; done
  echo 'Close 1 NT_STATUS_OK'
  for _ in $(seq "$N"); do
    echo 'NTCreateX "\clients\client1\existing.dat" 0x0 0x1 2 NT_STATUS_OK'
    echo 'Close 2 NT_STATUS_OK'
  done
  echo 'NTCreateX "\clients\client1\existing.dat" 0x0 0x1 3 NT_STATUS_OK'
  for i in $(seq 0 $((N - 1))); do echo "WriteX 3 $(((i % 16) * 4096)) 4096 4096 NT_STATUS_OK"; done
  for i in $(seq 0 $((N - 1))); do echo "ReadX 3 $(((i % 16) * 4096)) 4096 4096 NT_STATUS_OK"; done
  echo 'Close 3 NT_STATUS_OK'
  echo 'NTCreateX "\clients\client1\readback.dat" 0x0 0x5 4 NT_STATUS_OK'
  echo 'WriteX 4 0 4096 4096 NT_STATUS_OK'
  echo 'ReadX 4 0 4096 4096 NT_STATUS_OK'
  echo 'NTCreateX "\clients\client1\readback.dat" 0x0 0x1 5 NT_STATUS_OK'
  echo 'ReadX 5 0 4096 4096 NT_STATUS_OK'
  echo 'Close 5 NT_STATUS_OK'
  echo 'Close 4 NT_STATUS_OK'
} > "$WORK/loadfile.txt"
cat > "$WORK/suite.toml" <<TOML
name = "smb-clients"
target = "smb://127.0.0.1:$PORT/bench?client=libsmbclient"
[workloads.probe]
loadfile = "$WORK/loadfile.txt"
loops = 1
[defaults]
ramp_up = "0s"
ramp_down = "0s"
length = "600s"
[[mix]]
clients = 1
TOML
echo "libsmbclient: $N of each through $BENCHLAB" >&2
"$BENCHLAB" run "$WORK/suite.toml" --out "$WORK/lib-out" > "$WORK/benchlab.log" 2>&1 || { cat "$WORK/benchlab.log" >&2; exit 1; }

python3 - "$WORK/lib-out/results.json" "$WORK/probe.out" "$WORK/probe-failed" "$N" "$SMB_VERSION" "$BENCHLAB" \
  "$(/usr/sbin/smbd -V)" "$(dpkg-query -W -f '${Version}' libsmbclient 2>/dev/null || echo '?')" <<'PY' | tee "$REPORT"
import json, os, sys
res, probe, failed, n, ver, bl, smbd, libver = sys.argv[1:9]
m = json.load(open(res))["mixes"][0]
ops = {o["operation"]: o for o in m["by_operation"]}
lat = lambda k, q: ops[k]["latency_us"][q] / 1000
lib = {
    # open+close: the medians (and p99s) of NTCreateX and Close added.
    "open+close": (lat("NTCreateX", "p50") + lat("Close", "p50"), lat("NTCreateX", "p99") + lat("Close", "p99")),
    "write-4KiB": (lat("WriteX", "p50"), lat("WriteX", "p99")),
    "read-4KiB": (lat("ReadX", "p50"), lat("ReadX", "p99")),
}
crate, readback = {}, None
if os.path.exists(probe):
    for line in open(probe):
        w = line.split()
        if w[:2] == ["RESULT", "smb-crate"]:
            crate[w[2]] = (float(w[4]), float(w[5]))
        elif line.startswith("READBACK"):
            readback = line.split(" ", 2)[2].strip()
print(f"SMB clients on one smbd on loopback ({smbd}), {n} operations of each kind, one client")
print(f"libsmbclient {libver} through {bl} (benchlab's smb:// backend); smb crate {ver} (tokio, release build)")
print(f"{'ms':14} {'libsmbclient p50':>17} {'p99':>8} {'smb crate p50':>14} {'p99':>8}")
for k in ["open+close", "write-4KiB", "read-4KiB"]:
    a = lib[k]
    b = crate.get(k)
    bs = f"{b[0]:>14.3f} {b[1]:>8.3f}" if b else f"{'-':>14} {'-':>8}"
    print(f"{k:14} {a[0]:>17.3f} {a[1]:>8.3f} {bs}")
errs = m["errors"]
print("read-back, libsmbclient: same handle and another: "
      + ("4096 bytes each" if errs == 0 else "ERRORS " + json.dumps(m["errors_by_status"]))
      + " (byte-for-byte identity: crates/fileserver/tests/smb.rs)")
if readback:
    print(f"read-back, smb crate: {readback}")
elif os.path.exists(failed):
    print("smb crate: not measured, its build failed:\n" + open(failed).read())
else:
    print("smb crate: not measured (its probe printed nothing: see above)")
PY
echo "report: $REPORT" >&2
