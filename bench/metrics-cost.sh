#!/usr/bin/env bash
# What exporting live metrics costs the client (docs/metrics.md, "Cost"):
# the same `benchlab http` load against benchlab's reference server
# (`benchlab serve`) without exporting, with `--metrics-listen` scraped
# every second by curl, with `--otlp` and with `--prometheus-remote-write`
# pushing to a sink (a small Python HTTP server that answers 200), the
# scenarios interleaved (their order rotated each round) and repeated.
# Client CPU per request is the benchlab process's whole CPU (user +
# system, every thread: the event loops, the controller, the exporter and
# its /metrics server) from wait4's rusage, over the requests it counted;
# the table gives each scenario's median and its ratio to the median
# without exporting (the issue's target: within 2 %).
#
# Usage: bench/metrics-cost.sh [-h]
#   Environment (defaults in brackets):
#     BENCHLAB [target/release/benchlab, built]   the binary to measure
#     DURATION [5s]      each run's --duration
#     THREADS [8]        virtual users (--threads)
#     OS_THREADS [1]     the client's event-loop threads (--os-threads)
#     REPEATS [5]        rounds of every scenario
#     CLIENT_CPUS [0]    taskset list for benchlab
#     SERVER_CPUS [1]    taskset list for benchlab serve (1 worker)
#     SCENARIOS [none listen otlp remote_write]
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; }
case ${1:-} in
  -h|--help) usage; exit 0 ;;
  '') ;;
  *) echo "metrics-cost: unknown argument '$1' (try --help)" >&2; exit 2 ;;
esac

die() { echo "metrics-cost: $*" >&2; exit 1; }
command -v python3 >/dev/null || die "python3 is needed (Debian: python3)"
command -v curl >/dev/null || die "curl is needed (Debian: curl)"
CLIENT_CPUS=${CLIENT_CPUS:-0}
SERVER_CPUS=${SERVER_CPUS:-1}
taskset -c "$CLIENT_CPUS" true 2>/dev/null || die "CLIENT_CPUS='$CLIENT_CPUS' is not a usable CPU list here ($(nproc) CPUs)"
taskset -c "$SERVER_CPUS" true 2>/dev/null || die "SERVER_CPUS='$SERVER_CPUS' is not a usable CPU list here ($(nproc) CPUs)"
if [[ -z ${BENCHLAB:-} ]]; then
  cargo build --release --locked -q -p benchlab
  BENCHLAB=target/release/benchlab
fi
[[ -x $BENCHLAB ]] || die "BENCHLAB=$BENCHLAB is not an executable"

export BENCHLAB CLIENT_CPUS SERVER_CPUS
export DURATION=${DURATION:-5s} THREADS=${THREADS:-8} OS_THREADS=${OS_THREADS:-1} REPEATS=${REPEATS:-5}
export SCENARIOS=${SCENARIOS:-none listen otlp remote_write}
date -u +"%Y-%m-%d %H:%M UTC, $(nproc) CPUs, $(uname -r)"
exec python3 - <<'PY'
import http.server, json, os, re, signal, socket, statistics, subprocess, sys, tempfile, threading, time

B = os.environ["BENCHLAB"]
CLIENT, SERVER = os.environ["CLIENT_CPUS"], os.environ["SERVER_CPUS"]
DUR, THREADS, OS_THREADS = os.environ["DURATION"], os.environ["THREADS"], os.environ["OS_THREADS"]
REPEATS = int(os.environ["REPEATS"])
SCENARIOS = os.environ["SCENARIOS"].split()
for s in SCENARIOS:
    if s not in ("none", "listen", "otlp", "remote_write"):
        sys.exit(f"metrics-cost: unknown scenario '{s}' (none, listen, otlp, remote_write)")

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]

# The push sink: every POST read whole and answered 200.
class Sink(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()
    def log_message(self, *a):
        pass

sink = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Sink)
threading.Thread(target=sink.serve_forever, daemon=True).start()
sink_url = f"http://127.0.0.1:{sink.server_address[1]}"

tmp = tempfile.mkdtemp(prefix="metrics-cost-")
www = os.path.join(tmp, "www")
os.makedirs(www)
with open(os.path.join(www, "a.html"), "wb") as f:
    f.write(b"a" * 1024)
serve = subprocess.Popen(["taskset", "-c", SERVER, B, "serve", "--listen", "127.0.0.1:0", "--root", www,
                          "--workers", "1"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
line = serve.stdout.readline()
m = re.match(r"listening on (http://\S+)/", line)
if not m:
    serve.kill()
    sys.exit(f"metrics-cost: benchlab serve did not start: {line!r}")
url = m.group(1) + "/a.html"

def scraper(port, stop):
    # curl every second, as a Prometheus with scrape_interval 1s would.
    while not stop.is_set():
        subprocess.run(["curl", "-s", "-o", "/dev/null", f"http://127.0.0.1:{port}/metrics"])
        stop.wait(1.0)

def run(scenario):
    cmd = ["taskset", "-c", CLIENT, B, "http", "--json", "-t", THREADS, "--os-threads", OS_THREADS, "-d", DUR]
    stop = threading.Event()
    t = None
    if scenario == "listen":
        port = free_port()
        cmd += ["--metrics-listen", f"127.0.0.1:{port}"]
        t = threading.Thread(target=scraper, args=(port, stop), daemon=True)
    elif scenario == "otlp":
        cmd += ["--otlp", sink_url]
    elif scenario == "remote_write":
        cmd += ["--prometheus-remote-write", sink_url + "/api/v1/write"]
    p = subprocess.Popen(cmd + [url], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if t:
        t.start()
    out = p.stdout.read()
    err = p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    stop.set()
    if status != 0:
        sys.exit(f"metrics-cost: {scenario}: benchlab exited {status}: {err.decode(errors='replace')}")
    mix = json.loads(out)["mixes"][0]
    requests = mix["requests"] + mix["errors_total"]
    cpu = ru.ru_utime + ru.ru_stime
    return requests, cpu

rows = {s: [] for s in SCENARIOS}
try:
    for r in range(REPEATS):
        order = SCENARIOS[r % len(SCENARIOS):] + SCENARIOS[:r % len(SCENARIOS)]
        for s in order:
            n, cpu = run(s)
            us = cpu * 1e6 / max(n, 1)
            rows[s].append(us)
            print(f"round {r + 1} {s:<13} {n:>9} requests  {cpu:6.3f} s CPU  {us:6.3f} µs/request", flush=True)
finally:
    serve.send_signal(signal.SIGINT)
    serve.wait()
    sink.shutdown()

base = statistics.median(rows[SCENARIOS[0]])
print()
print(f"client CPU per request, median of {REPEATS} (benchlab on CPUs {CLIENT}, benchlab serve on {SERVER}; "
      f"{THREADS} users, {OS_THREADS} event-loop thread(s), {DUR} a run)")
print(f"{'scenario':<13} {'µs/request median':>18} {'min–max':>17} {'× ' + SCENARIOS[0]:>9}")
for s in SCENARIOS:
    v = rows[s]
    med = statistics.median(v)
    print(f"{s:<13} {med:18.3f} {min(v):8.3f}–{max(v):<8.3f} {med / base:9.3f}")
PY
