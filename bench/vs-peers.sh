#!/usr/bin/env bash
# Client CPU per request: benchlab vs wrk, h2load, ab and the floor (bare C
# loops in bench/floor/), against one local nginx serving a
# 4096-byte file. See bench/README.md for what it prints and how to read it.
#
# Usage: bench/vs-peers.sh [--report FILE.tsv] [-h]
#   Environment (defaults in brackets):
#     DUR [5]            seconds per run (whole seconds: ab -t takes an integer)
#     REPEATS [5]        runs per tool and scenario, interleaved across tools
#     CONNS [64]         connections, the same for every tool
#     TOOLS ["floor benchlab wrk h2load ab"]   subset, any order
#     SCENARIOS ["keepalive close"]            keepalive, close and/or h2 (HTTP/2
#                        over h2c: benchlab --http 2 against h2load -m)
#     STREAMS [10]       h2: concurrent streams per connection (h2load's -m)
#     CLIENT_CPUS [0]    taskset list for the load generator
#     CLIENT_CPU_QUOTA [none]  percent of one CPU each client may use (a cpu
#                        cgroup, root): makes every tool client-bound, so
#                        its requests/s is what its client can do
#     SERVER_CPUS [1]    taskset list for nginx
#     NGINX_WORKERS [1]  nginx worker_processes
#     WARMUP [1]         seconds of unrecorded load before the first run (0: none)
#     MAX_OTHERS [none]  CPU seconds others may use during a run; a run above
#                        it is recorded as "busy" and not counted
#     BENCHLAB [target/release/benchlab]
#     BENCHLAB_VARIANTS [none]  more benchlab runs beside "benchlab", each a
#                        tool of its own: space-separated NAME[=PATH][:VAR=VAL[,VAR=VAL…]]
#                        e.g. "lt:BENCHLAB_IO=epoll-lt old=bench/out/benchlab-old";
#                        PATH defaults to BENCHLAB; each runs as tool benchlab:NAME
#     NGINX [nginx on PATH, else /usr/sbin/nginx]
#     FLOOR_DIR [bench/floor]  directory with floor.c/floor_close.c (or
#                        prebuilt floor/floor_close binaries)
#     OUT_DIR [bench/out] built floor binaries, TSV, report, per-run logs
#   --report FILE.tsv  re-print the tables of an earlier run, run nothing
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; }

REPORT_ONLY=
while [[ $# -gt 0 ]]; do
  case $1 in
    -h|--help) usage; exit 0 ;;
    --report) REPORT_ONLY=${2:?--report needs a TSV file}; shift 2 ;;
    *) echo "vs-peers: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
done

DUR=${DUR:-5}
REPEATS=${REPEATS:-5}
CONNS=${CONNS:-64}
STREAMS=${STREAMS:-10}
TOOLS=${TOOLS:-floor benchlab wrk h2load ab}
SCENARIOS=${SCENARIOS:-keepalive close}
CLIENT_CPUS=${CLIENT_CPUS:-0}
SERVER_CPUS=${SERVER_CPUS:-1}
NGINX_WORKERS=${NGINX_WORKERS:-1}
WARMUP=${WARMUP:-1}
MAX_OTHERS=${MAX_OTHERS:-}
[[ -z $MAX_OTHERS || $MAX_OTHERS =~ ^[0-9]+(\.[0-9]+)?$ ]] || { echo "vs-peers: MAX_OTHERS must be a number of seconds, got '$MAX_OTHERS'" >&2; exit 1; }
BENCHLAB=${BENCHLAB:-target/release/benchlab}
BENCHLAB_VARIANTS=${BENCHLAB_VARIANTS:-}
CLIENT_CPU_QUOTA=${CLIENT_CPU_QUOTA:-}
[[ -z $CLIENT_CPU_QUOTA || $CLIENT_CPU_QUOTA =~ ^[0-9]+$ ]] || { echo "vs-peers: CLIENT_CPU_QUOTA must be a whole percent, got '$CLIENT_CPU_QUOTA'" >&2; exit 1; }
OUT_DIR=${OUT_DIR:-bench/out}
if [[ -z ${NGINX:-} ]]; then NGINX=$(command -v nginx || echo /usr/sbin/nginx); fi
# nginx reads an environment variable NGINX of its own (inherited sockets):
# keep ours out of its environment.
export -n NGINX

die() { echo "vs-peers: $*" >&2; exit 1; }

for v in DUR REPEATS CONNS STREAMS NGINX_WORKERS WARMUP; do
  [[ ${!v} =~ ^[0-9]+$ ]] || die "$v must be a whole number, got '${!v}'"
done
(( DUR >= 1 && REPEATS >= 1 && CONNS >= 1 && NGINX_WORKERS >= 1 )) \
  || die "DUR, REPEATS, CONNS and NGINX_WORKERS must be at least 1"
for t in $TOOLS; do
  case $t in floor|benchlab|wrk|h2load|ab) ;; *) die "unknown tool '$t' in TOOLS (floor benchlab wrk h2load ab)" ;; esac
done
# Variants: VARIANT_BIN[name] and VARIANT_ENV[name] (VAR=VAL words); each
# joins TOOLS right after benchlab (or at the end when benchlab is left out).
declare -A VARIANT_BIN=() VARIANT_ENV=()
VARIANT_TOOLS=
for spec in $BENCHLAB_VARIANTS; do
  head=${spec%%:*} envs=
  [[ $spec == *:* ]] && envs=${spec#*:}
  name=${head%%=*} bin=$BENCHLAB
  [[ $head == *=* ]] && bin=${head#*=}
  [[ $name =~ ^[A-Za-z0-9_.+-]+$ ]] || die "BENCHLAB_VARIANTS: bad name '$name' in '$spec' (letters, digits, _ . + -)"
  [[ -z ${VARIANT_BIN[$name]:-} ]] || die "BENCHLAB_VARIANTS: '$name' given twice"
  [[ -x $bin ]] || die "BENCHLAB_VARIANTS: '$spec': no executable at '$bin'"
  VARIANT_BIN[$name]=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
  words=
  IFS=, read -ra kvs <<<"$envs"
  for kv in "${kvs[@]}"; do
    [[ $kv =~ ^[A-Za-z_][A-Za-z0-9_]*=.*$ ]] || die "BENCHLAB_VARIANTS: '$spec': '$kv' is not VAR=VALUE"
    words+="$kv "
  done
  VARIANT_ENV[$name]=$words
  VARIANT_TOOLS+=" benchlab:$name"
done
if [[ -n $VARIANT_TOOLS ]]; then
  if [[ " $TOOLS " == *" benchlab "* ]]; then
    TOOLS=$(sed "s/\bbenchlab\b/benchlab$VARIANT_TOOLS/" <<<"$TOOLS")
  else
    TOOLS="$TOOLS$VARIANT_TOOLS"
  fi
fi
for s in $SCENARIOS; do
  case $s in keepalive|close|h2) ;; *) die "unknown scenario '$s' in SCENARIOS (keepalive close h2)" ;; esac
done
command -v python3 >/dev/null || die "python3 is needed (timing, parsing, medians)"

mkdir -p "$OUT_DIR"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/vs-peers.XXXXXX")
NGINX_PID=
CLIENT_CG=

cleanup() {
  local rc=$?
  if [[ -n $NGINX_PID ]] && kill -0 "$NGINX_PID" 2>/dev/null; then
    kill -TERM "$NGINX_PID" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$NGINX_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$NGINX_PID" 2>/dev/null || true
    wait "$NGINX_PID" 2>/dev/null || true
  fi
  rm -rf "$TMP"
  # The clients' cgroup of CLIENT_CPU_QUOTA, empty once they exited.
  if [[ -n ${CLIENT_CG:-} ]]; then rmdir "$CLIENT_CG" 2>/dev/null || true; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---------------------------------------------------------------- helper (python)
# run:    fork+exec one load generator, stdout/stderr to files, hard time limit;
#         prints "user_s sys_s wall_s exit" from wait4's rusage of that child
#         (µs resolution; /usr/bin/time has 10 ms, bash `times` 1 ms).
# parse:  successful requests and errors from one tool's output.
# port:   a free TCP port on 127.0.0.1.
# probe:  one raw keep-alive GET, exactly the floor's request; prints the
#         response size (head + body) after checking status 200 and 4096 bytes.
# report: the tables, from the TSV.
cat >"$TMP/helper.py" <<'PY'
import json, os, re, signal, socket, statistics, sys, time

def cpu_snapshot(server_pid):
    """(busy seconds of the whole box, CPU seconds of the server and its children)."""
    hz = os.sysconf("SC_CLK_TCK")
    f = open("/proc/stat").readline().split()[1:]
    user, nice, system, idle, iowait, irq, softirq, steal = (int(x) for x in f[:8])
    busy = user + nice + system + irq + softirq + steal
    srv = 0
    for d in os.listdir("/proc"):
        if not d.isdigit(): continue
        try: st = open(f"/proc/{d}/stat").read()
        except OSError: continue
        fields = st[st.rindex(")") + 2:].split()
        if d == server_pid or fields[1] == server_pid:
            srv += int(fields[11]) + int(fields[12])
    return busy / hz, srv / hz

def run(out, err, limit, server_pid, cmd):
    busy0, srv0 = cpu_snapshot(server_pid)
    t0 = time.monotonic()
    pid = os.fork()
    if pid == 0:
        try:
            fi = os.open(os.devnull, os.O_RDONLY)
            fo = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            fe = os.open(err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(fi, 0); os.dup2(fo, 1); os.dup2(fe, 2)
            os.execvp(cmd[0], cmd)
        except BaseException as e:
            os.write(2, f"exec {cmd[0]}: {e}\n".encode())
        os._exit(127)
    killed = []
    def on_alarm(*_):
        killed.append(1)
        try: os.kill(pid, signal.SIGKILL)
        except ProcessLookupError: pass
    signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, limit)
    _, status, ru = os.wait4(pid, 0)
    signal.setitimer(signal.ITIMER_REAL, 0)
    wall = time.monotonic() - t0
    busy1, srv1 = cpu_snapshot(server_pid)
    code = os.waitstatus_to_exitcode(status)
    if killed: code = "timeout"
    # Everything else the box ran meanwhile (other users' builds, this helper):
    # busy time of all CPUs minus the client's and the server's own.
    server = srv1 - srv0
    other = max(0.0, (busy1 - busy0) - (ru.ru_utime + ru.ru_stime) - server)
    print(f"{ru.ru_utime:.6f} {ru.ru_stime:.6f} {wall:.3f} {code} {server:.2f} {other:.2f} {ru.ru_nvcsw} {ru.ru_nivcsw}")

def num(pat, text, default=None):
    m = re.search(pat, text)
    return int(m.group(1)) if m else default

def find_key(obj, key):
    if isinstance(obj, dict):
        if key in obj: return obj[key]
        for v in obj.values():
            r = find_key(v, key)
            if r is not None: return r
    return None

def parse(tool, out, err):
    so = open(out, errors="replace").read()
    text = so + "\n" + open(err, errors="replace").read()
    ok = errs = None
    if tool == "floor":
        ok = num(r"(\d+) requests in", text)
        errs = num(r"(\d+) errors", text, 0)
    elif tool == "wrk":
        ok = num(r"(\d+) requests in", text)
        m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text)
        errs = sum(map(int, m.groups())) if m else 0
        bad = num(r"Non-2xx or 3xx responses: (\d+)", text, 0)
        if ok is not None: ok -= bad
        errs += bad
    elif tool == "h2load":
        m = re.search(r"requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed", text)
        if m: ok, errs = int(m.group(4)), int(m.group(5))
    elif tool == "ab":
        done = num(r"Complete requests:\s+(\d+)", text)
        failed = num(r"Failed requests:\s+(\d+)", text, 0)
        bad = num(r"Non-2xx responses:\s+(\d+)", text, 0)
        if done is not None: ok, errs = done - failed - bad, failed + bad
    elif tool == "benchlab" or tool.startswith("benchlab:"):
        doc = None
        try: doc = json.loads(so)
        except ValueError:
            for line in reversed(so.splitlines()):
                if line.lstrip().startswith("{"):
                    try: doc = json.loads(line); break
                    except ValueError: pass
        if isinstance(doc, dict) and isinstance(doc.get("mixes"), list):
            # benchlab.results/1 (`http --json`): the mixes' counts.
            ok = sum(m.get("requests", 0) for m in doc["mixes"])
            errs = sum(m.get("errors_total", 0) for m in doc["mixes"])
        elif doc is not None:
            ok = find_key(doc, "requests")
            errs = find_key(doc, "errors_total")
            if errs is None:
                e = find_key(doc, "errors")
                errs = sum(v for v in e.values() if isinstance(v, int)) if isinstance(e, dict) else e
            if not isinstance(ok, int): ok = None
            if not isinstance(errs, int): errs = 0
    print(f"{-1 if ok is None else ok} {-1 if errs is None else errs}")

def port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()

def probe(port, path, tries):
    last = None
    for _ in range(int(tries)):
        try:
            s = socket.create_connection(("127.0.0.1", int(port)), timeout=2)
            s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
            buf = b""
            while b"\r\n\r\n" not in buf:
                c = s.recv(65536)
                if not c: raise OSError("closed before the head ended")
                buf += c
            head, body = buf.split(b"\r\n\r\n", 1)
            status = head.split(b"\r\n")[0]
            cl = int(re.search(rb"(?im)^content-length:\s*(\d+)", head).group(1))
            while len(body) < cl:
                c = s.recv(65536)
                if not c: raise OSError("closed before the body ended")
                body += c
            s.close()
            if b" 200 " not in status + b" " or cl != 4096 or len(body) != cl:
                sys.exit(f"probe: unexpected response '{status.decode()}', {cl} bytes")
            print(len(head) + 4 + cl); return
        except OSError as e:
            last = e; time.sleep(0.1)
    sys.exit(f"probe: no answer from 127.0.0.1:{port}: {last}")

def fmt_rate(x): return f"{x:,.0f}"
def fmt_us(x): return f"{x:.2f}"

def report(tsv):
    rows = [l.rstrip("\n").split("\t") for l in open(tsv)]
    hdr, rows = rows[0], rows[1:]
    rows = [dict(zip(hdr, r)) for r in rows]
    seen = []
    for r in rows:
        if r["tool"] not in seen: seen.append(r["tool"])
    base = ["floor", "benchlab", "wrk", "h2load", "ab"]
    variants = [t for t in seen if t.startswith("benchlab:")]
    order = ["floor", "benchlab"] + variants + ["wrk", "h2load", "ab"]
    names = {"keepalive": "keep-alive", "close": "a new connection per request", "h2": "HTTP/2 (h2c)"}
    for sc in [s for s in ["keepalive", "close", "h2"] if any(r["scenario"] == s for r in rows)]:
        rs = [r for r in rows if r["scenario"] == sc]
        r0 = rs[0]
        streams = f" × {r0['streams']} streams" if sc == "h2" and r0.get("streams") else ""
        print(f"\n== {names[sc]}: {r0['conns']} connections{streams}, {r0['dur_s']} s runs, "
              f"client CPUs {r0['client_cpus']}, server CPUs {r0['server_cpus']} ==")
        stats = {}
        for t in order:
            tr = [r for r in rs if r["tool"] == t]
            if not tr: continue
            if all(r["status"] == "skip" for r in tr):
                stats[t] = None; continue
            good = [r for r in tr if r["status"] == "ok"]
            st = {"n": len(good), "runs": len(tr), "errors": sum(max(int(r["errors"]), 0) for r in tr),
                  "bad": [r["status"] for r in tr if r["status"] != "ok"]}
            if good:
                rate = [float(r["req_per_s"]) for r in good]
                us = [float(r["us_per_req"]) for r in good]
                sysf = [float(r["sys_s"]) / (float(r["user_s"]) + float(r["sys_s"])) for r in good]
                other = [float(r.get("other_cpu_s", 0)) for r in good]
                # Voluntary context switches (sleeps in epoll_wait or
                # io_uring_enter) per 1,000 requests: a count, untouched by
                # how busy the box was.
                sw = [1000 * int(r["vcsw"]) / int(r["requests"]) for r in good if r.get("vcsw", "").isdigit()]
                st["sw_med"] = statistics.median(sw) if sw else None
                st.update(rate=rate, us=us, rate_med=statistics.median(rate), us_med=statistics.median(us),
                          sys_med=statistics.median(sysf), other_max=max(other))
            stats[t] = st
        bl = stats.get("benchlab")
        bl_us = bl.get("us_med") if bl else None
        head = ["tool", "runs ok", "req/s median (min–max)", "µs/request median (min–max)", "sys %", "sleeps/1k req", "errors", "others' CPU s (max)", "× floor", "× wrk"]
        table = []
        def ref(name):
            st = stats.get(name)
            return st.get("us_med") if st else None
        floor_us, wrk_us = ref("floor"), ref("wrk")
        for t, st in stats.items():
            if st is None:
                table.append([t, "—", "—", "—", "—", "—", "—", "—", "—", "—"]); continue
            if "us_med" not in st:
                table.append([t, f"0/{st['runs']}", "—", "—", "—", "—", str(st["errors"]), "—", "—", "—"]); continue
            sw = "—" if st.get("sw_med") is None else f"{st['sw_med']:.0f}"
            xf = "—" if floor_us is None else f"{st['us_med'] / floor_us:.2f}"
            xw = "—" if wrk_us is None else f"{st['us_med'] / wrk_us:.2f}"
            table.append([t, f"{st['n']}/{st['runs']}",
                          f"{fmt_rate(st['rate_med'])} ({fmt_rate(min(st['rate']))}–{fmt_rate(max(st['rate']))})",
                          f"{fmt_us(st['us_med'])} ({fmt_us(min(st['us']))}–{fmt_us(max(st['us']))})",
                          f"{100 * st['sys_med']:.0f}", sw, str(st["errors"]), f"{st['other_max']:.2f}", xf, xw])
        w = [max(len(r[i]) for r in [head] + table) for i in range(len(head))]
        line = lambda r: "  ".join(c.ljust(w[i]) if i < 1 else c.rjust(w[i]) for i, c in enumerate(r)).rstrip()
        print(line(head)); print(line(["-" * x for x in w]))
        for r in table: print(line(r))
        for t, st in stats.items():
            if st and st["bad"]:
                print(f"  {t}: {len(st['bad'])} run(s) not counted: {', '.join(st['bad'])}")
        if bl_us is not None:
            parts = [f"{t} {bl_us / st['us_med']:.2f}" for t, st in stats.items()
                     if t != "benchlab" and st and "us_med" in st]
            if parts: print("benchlab ÷ tool, median µs/request: " + ", ".join(parts))
        # Per request, each benchlab run against the floor and wrk of the
        # same round: a ratio of neighbours in time, less touched by drift
        # than a ratio of medians.
        for t in [t for t in stats if t.startswith("benchlab") and stats[t] and "us_med" in stats[t]]:
            paired = []
            for other in ("floor", "wrk", "h2load"):
                rr = []
                for rep in sorted({r["repeat"] for r in rs}):
                    a = [float(r["us_per_req"]) for r in rs if r["repeat"] == rep and r["tool"] == t and r["status"] == "ok"]
                    b = [float(r["us_per_req"]) for r in rs if r["repeat"] == rep and r["tool"] == other and r["status"] == "ok"]
                    if a and b: rr.append(a[0] / b[0])
                if rr: paired.append(f"× {other} {statistics.median(rr):.2f} ({min(rr):.2f}–{max(rr):.2f})")
            if paired: print(f"{t}: median of per-round ratios: " + ", ".join(paired))

cmd = sys.argv[1]
if cmd == "run": run(sys.argv[2], sys.argv[3], float(sys.argv[4]), sys.argv[5], sys.argv[6:])
elif cmd == "parse": parse(*sys.argv[2:5])
elif cmd == "port": port()
elif cmd == "probe": probe(*sys.argv[2:5])
elif cmd == "report": report(sys.argv[2])
else: sys.exit(f"helper: unknown command {cmd}")
PY
helper() { python3 "$TMP/helper.py" "$@"; }

if [[ -n $REPORT_ONLY ]]; then
  [[ -f $REPORT_ONLY ]] || die "no such file: $REPORT_ONLY"
  helper report "$REPORT_ONLY"
  exit 0
fi

has_tool() { [[ " $TOOLS " == *" $1 "* ]]; }

# ---------------------------------------------------------------- tools
drop_tool() { echo "vs-peers: $1; leaving $2 out" >&2; TOOLS=$(tr ' ' '\n' <<<"$TOOLS" | grep -vx "$2" | tr '\n' ' ' || true); }
command -v taskset >/dev/null || die "taskset not found (util-linux)"
[[ -x $NGINX ]] || die "nginx not found at '$NGINX' (set NGINX=)"
for t in wrk h2load ab; do
  if has_tool "$t" && ! command -v "$t" >/dev/null; then drop_tool "$t not found on PATH" "$t"; fi
done
if has_tool benchlab; then
  [[ -x $BENCHLAB ]] || die "benchlab binary '$BENCHLAB' not found: cargo build --release -p benchlab, or set BENCHLAB="
  BENCHLAB=$(cd "$(dirname "$BENCHLAB")" && pwd)/$(basename "$BENCHLAB")
fi
taskset -c "$CLIENT_CPUS" true 2>/dev/null || die "CLIENT_CPUS='$CLIENT_CPUS' is not a usable CPU list here ($(nproc) CPUs)"
taskset -c "$SERVER_CPUS" true 2>/dev/null || die "SERVER_CPUS='$SERVER_CPUS' is not a usable CPU list here ($(nproc) CPUs)"

# The floor: build from source when the source is here, else take what an
# earlier build (or a copy) left in $OUT_DIR or $FLOOR_DIR.
FLOOR_SRC=${FLOOR_DIR:-$ROOT/bench/floor}
if has_tool floor; then
  for b in floor floor_close; do
    if [[ -f $FLOOR_SRC/$b.c ]]; then
      if [[ ! -x $OUT_DIR/$b || $FLOOR_SRC/$b.c -nt $OUT_DIR/$b ]]; then
        command -v gcc >/dev/null || die "gcc not found, needed to build $FLOOR_SRC/$b.c"
        gcc -O2 -o "$OUT_DIR/$b" "$FLOOR_SRC/$b.c"
      fi
    elif [[ -n ${FLOOR_DIR:-} && -x $FLOOR_DIR/$b ]]; then
      cp "$FLOOR_DIR/$b" "$OUT_DIR/$b"
    elif [[ ! -x $OUT_DIR/$b ]]; then
      drop_tool "no $b: neither $FLOOR_SRC/$b.c nor a prebuilt $OUT_DIR/$b (set FLOOR_DIR=)" floor
      break
    fi
  done
  FLOOR_BIN=$(cd "$OUT_DIR" && pwd)/floor
  FLOOR_CLOSE_BIN=$(cd "$OUT_DIR" && pwd)/floor_close
fi
[[ -n ${TOOLS// /} ]] || die "no tool left to run"

# ---------------------------------------------------------------- nginx
mkdir -p "$TMP/www" "$TMP/logs" "$TMP/tmp"
head -c 4096 /dev/zero | tr '\0' 'x' >"$TMP/www/4k.html"
USER_LINE=
if [[ $(id -u) == 0 ]]; then USER_LINE="user root;"; fi
NGINX_ERR_FLAG=()
if "$NGINX" -h 2>&1 | grep -q -- '-e filename'; then NGINX_ERR_FLAG=(-e "$TMP/logs/error.log"); fi

start_nginx() {
  PORT=$(helper port)
  H2_PORT=$(helper port)
  cat >"$TMP/nginx.conf" <<EOF
$USER_LINE
worker_processes $NGINX_WORKERS;
daemon off;
pid $TMP/nginx.pid;
error_log $TMP/logs/error.log warn;
events { worker_connections 16384; }
http {
  types { text/html html; }
  default_type application/octet-stream;
  access_log off;
  keepalive_requests 1000000;
  keepalive_timeout 75s;
  client_body_temp_path $TMP/tmp/body;
  proxy_temp_path $TMP/tmp/proxy;
  fastcgi_temp_path $TMP/tmp/fastcgi;
  uwsgi_temp_path $TMP/tmp/uwsgi;
  scgi_temp_path $TMP/tmp/scgi;
  server {
    listen 127.0.0.1:$PORT;
    root $TMP/www;
  }
  server {
    listen 127.0.0.1:$H2_PORT http2;
    root $TMP/www;
  }
}
EOF
  taskset -c "$SERVER_CPUS" "$NGINX" -p "$TMP/" -c "$TMP/nginx.conf" "${NGINX_ERR_FLAG[@]}" \
    >"$TMP/logs/stdout.log" 2>&1 &
  NGINX_PID=$!
}

URL_PATH=/4k.html
RESPONSE_BYTES=
for attempt in 1 2 3; do
  start_nginx
  if RESPONSE_BYTES=$(helper probe "$PORT" "$URL_PATH" 30 2>"$TMP/probe.err"); then break; fi
  kill "$NGINX_PID" 2>/dev/null || true; wait "$NGINX_PID" 2>/dev/null || true; NGINX_PID=
  RESPONSE_BYTES=
done
if [[ -z $RESPONSE_BYTES ]]; then
  cat "$TMP/probe.err" "$TMP/logs/"*.log >&2 2>/dev/null || true
  die "nginx did not come up"
fi
URL=http://127.0.0.1:$PORT$URL_PATH
H2_URL=http://127.0.0.1:$H2_PORT$URL_PATH

# ---------------------------------------------------------------- environment
STAMP=$(date +%Y%m%d-%H%M%S)
TSV=$OUT_DIR/vs-peers-$STAMP.tsv
REPORT=$OUT_DIR/vs-peers-$STAMP.txt
LOGS=$OUT_DIR/vs-peers-$STAMP.logs
mkdir -p "$LOGS"

first_line() { "$@" 2>&1 | head -n1 || true; }
cpu_model=$(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | sed 's/.*: //' || true)
[[ -n $cpu_model ]] || cpu_model=$(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -n1 || true)
{
  echo "benchlab vs peers — client CPU per request ($(date -Is))"
  echo "kernel:   $(uname -r)   CPUs: $(nproc)   CPU: ${cpu_model:-unknown}"
  echo "load:     $(uptime | sed 's/.*load average/load average/')  (before the runs)"
  echo "nginx:    $(first_line "$NGINX" -v), $NGINX_WORKERS worker(s) on CPUs $SERVER_CPUS, ${URL} ($RESPONSE_BYTES bytes a response)"
  echo "clients:  on CPUs $CLIENT_CPUS, $CONNS connections, ${DUR} s a run, $REPEATS repeats, one thread each"
  if has_tool benchlab; then echo "benchlab: $(first_line "$BENCHLAB" --version)"; fi
  for spec in $BENCHLAB_VARIANTS; do echo "variant:  $spec"; done
  if has_tool wrk; then echo "wrk:      $(first_line wrk -v)"; fi
  if has_tool h2load; then echo "h2load:   $(first_line h2load --version)"; fi
  if has_tool ab; then echo "ab:       $(first_line ab -V)"; fi
  if has_tool floor; then echo "floor:    $FLOOR_SRC/{floor,floor_close}.c, $(first_line gcc --version 2>/dev/null) -O2"; fi
} | tee "$REPORT"

printf 'time\tscenario\trepeat\ttool\tconns\tdur_s\tclient_cpus\tserver_cpus\trequests\terrors\tuser_s\tsys_s\twall_s\texit\tstatus\treq_per_s\tus_per_req\tserver_cpu_s\tother_cpu_s\tload1\tcmd\tvcsw\tivcsw\tstreams\n' >"$TSV"

# ---------------------------------------------------------------- runs
# tool_cmd TOOL SCENARIO: sets CMD (empty: the tool has no such mode).
tool_cmd() {
  CMD=()
  if [[ $1 == benchlab:* ]]; then
    local name=${1#benchlab:} env_words
    read -ra env_words <<<"${VARIANT_ENV[$name]}"
    CMD=(env "${env_words[@]}" "${VARIANT_BIN[$name]}" http --json --os-threads 1 --duration "${DUR}s")
    case $2 in
      close) CMD+=(--threads "$CONNS" --http 1.0 "$URL") ;;
      h2) CMD+=(--http 2 --connections "$CONNS" --streams "$STREAMS" "$H2_URL") ;;
      *) CMD+=(--threads "$CONNS" "$URL") ;;
    esac
    return
  fi
  case $1:$2 in
    floor:keepalive)    CMD=("$FLOOR_BIN" "$PORT" "$CONNS" "$DUR" "$RESPONSE_BYTES" "$URL_PATH") ;;
    floor:close)        CMD=("$FLOOR_CLOSE_BIN" "$PORT" "$CONNS" "$DUR" "$URL_PATH") ;;
    benchlab:keepalive) CMD=("$BENCHLAB" http --json --threads "$CONNS" --os-threads 1 --duration "${DUR}s" "$URL") ;;
    benchlab:close)     CMD=("$BENCHLAB" http --json --threads "$CONNS" --os-threads 1 --duration "${DUR}s" --http 1.0 "$URL") ;;
    wrk:keepalive)      CMD=(wrk -t1 "-c$CONNS" "-d${DUR}s" "$URL") ;;
    wrk:close)          CMD=(wrk -t1 "-c$CONNS" "-d${DUR}s" -H 'Connection: close' "$URL") ;;
    h2load:keepalive)   CMD=(h2load --h1 -c "$CONNS" -t 1 -D "$DUR" "$URL") ;;
    h2load:close)       ;;  # h2load has no connection-per-request mode
    benchlab:h2)        CMD=("$BENCHLAB" http --json --http 2 --connections "$CONNS" --streams "$STREAMS" --os-threads 1 --duration "${DUR}s" "$H2_URL") ;;
    h2load:h2)          CMD=(h2load -c "$CONNS" -m "$STREAMS" -t 1 -D "$DUR" "$H2_URL") ;;
    *:h2)               ;;  # HTTP/2: benchlab and h2load only
    ab:keepalive)       CMD=(ab -k -c "$CONNS" -t "$DUR" -n 100000000 "$URL") ;;
    ab:close)           CMD=(ab -c "$CONNS" -t "$DUR" -n 100000000 "$URL") ;;
  esac
}

LIMIT=$((DUR + 30))   # a run that outlives this is killed and recorded as "timeout"

# CLIENT_CPU_QUOTA: every client runs in one cpu cgroup limited to that
# share of a CPU (cgroup v2's cpu.max, or v1's cfs quota), removed at exit.
if [[ -n $CLIENT_CPU_QUOTA ]]; then
  (( EUID == 0 )) || die "CLIENT_CPU_QUOTA needs root (it makes a cpu cgroup)"
  if [[ -f /sys/fs/cgroup/cgroup.controllers ]] && grep -qw cpu /sys/fs/cgroup/cgroup.controllers; then
    CLIENT_CG=/sys/fs/cgroup/benchlab-vs-peers-$$
    mkdir "$CLIENT_CG"
    echo "$((CLIENT_CPU_QUOTA * 1000)) 100000" >"$CLIENT_CG/cpu.max"
  elif [[ -d /sys/fs/cgroup/cpu ]]; then
    CLIENT_CG=/sys/fs/cgroup/cpu/benchlab-vs-peers-$$
    mkdir "$CLIENT_CG"
    echo 100000 >"$CLIENT_CG/cpu.cfs_period_us"
    echo "$((CLIENT_CPU_QUOTA * 1000))" >"$CLIENT_CG/cpu.cfs_quota_us"
  else
    die "CLIENT_CPU_QUOTA: no cpu cgroup controller here"
  fi
  echo "clients:  limited to $CLIENT_CPU_QUOTA % of one CPU ($CLIENT_CG)"
fi
# Runs a client: pinned to CLIENT_CPUS, inside the quota's cgroup if any.
client() {
  if [[ -n $CLIENT_CG ]]; then
    sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$CLIENT_CG" taskset -c "$CLIENT_CPUS" "$@"
  else
    taskset -c "$CLIENT_CPUS" "$@"
  fi
}

if (( WARMUP > 0 )); then
  read -r first_tool _ <<<"$TOOLS"
  read -r first_sc _ <<<"$SCENARIOS"
  DUR_SAVE=$DUR; DUR=$WARMUP; tool_cmd "$first_tool" "$first_sc"; DUR=$DUR_SAVE
  if (( ${#CMD[@]} )); then
    echo "warm-up: $first_tool $first_sc for ${WARMUP} s (not recorded)"
    client python3 "$TMP/helper.py" run "$TMP/warm.out" "$TMP/warm.err" "$LIMIT" "$NGINX_PID" "${CMD[@]}" >/dev/null || true
  fi
fi

read -ra TOOL_LIST <<<"$TOOLS"
ntools=${#TOOL_LIST[@]}
for sc in $SCENARIOS; do
  for ((rep = 1; rep <= REPEATS; rep++)); do
    # Every tool once per repeat; the starting tool rotates so no tool always
    # runs right after the same neighbour (TIME_WAIT build-up, cache state).
    for ((k = 0; k < ntools; k++)); do
      tool=${TOOL_LIST[$(((k + rep - 1) % ntools))]}
      tool_cmd "$tool" "$sc"
      ts=$(date +%H:%M:%S)
      if (( ${#CMD[@]} == 0 )); then
        printf '%s\t%s\t%d\t%s\t%d\t%d\t%s\t%s\t-1\t-1\t0\t0\t0\t-\tskip\t0\t0\t0\t0\t-\t-\t-\t-\t%s\n' \
          "$ts" "$sc" "$rep" "$tool" "$CONNS" "$DUR" "$CLIENT_CPUS" "$SERVER_CPUS" "$STREAMS" >>"$TSV"
        continue
      fi
      base=$LOGS/$sc-$rep-${tool/:/-}
      printf '%s\n' "${CMD[*]}" >"$base.cmd"
      other_s=
      read -r user sys wall code server_s other_s vcsw ivcsw < <(client python3 "$TMP/helper.py" run \
        "$base.out" "$base.err" "$LIMIT" "$NGINX_PID" "${CMD[@]}") || true
      [[ -n ${other_s:-} ]] || die "the run wrapper failed for $tool ($sc); see $base.err"
      read -r reqs errs < <(helper parse "$tool" "$base.out" "$base.err") || true
      reqs=${reqs:--1} errs=${errs:--1}
      status=ok
      if [[ $code == timeout ]]; then status=timeout
      elif (( reqs <= 0 )); then status="no-requests(exit=$code)"
      elif [[ $code != 0 && $tool != benchlab* ]]; then status="exit=$code"
      elif [[ -n $MAX_OTHERS ]] && python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) > float(sys.argv[2]) else 1)' "$other_s" "$MAX_OTHERS"; then
        status=busy
      fi
      # benchlab may exit non-zero when some requests failed; its counts stand.
      read -r rate us < <(python3 -c 'import sys; u,s,r,d=map(float,sys.argv[1:]); print(f"{r/d:.1f}", f"{(u+s)*1e6/r:.3f}" if r>0 else "0")' \
        "$user" "$sys" "$reqs" "$DUR")
      load1=$(cut -d' ' -f1 /proc/loadavg)
      printf '%s\t%s\t%d\t%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' \
        "$ts" "$sc" "$rep" "$tool" "$CONNS" "$DUR" "$CLIENT_CPUS" "$SERVER_CPUS" "$reqs" "$errs" \
        "$user" "$sys" "$wall" "$code" "$status" "$rate" "$us" "$server_s" "$other_s" "$load1" "${CMD[*]}" "$vcsw" "$ivcsw" "$STREAMS" >>"$TSV"
      printf '%-9s %-9s rep %d/%d  %10s req/s  %7s µs/req  user %ss sys %ss  others %ss  %s\n' \
        "$sc" "$tool" "$rep" "$REPEATS" "$rate" "$us" "$user" "$sys" "$other_s" "$status"
    done
  done
done

kill -0 "$NGINX_PID" 2>/dev/null || die "nginx died during the runs; see $TMP/logs"
{
  helper report "$TSV"
  echo
  echo "load:     $(uptime | sed 's/.*load average/load average/')  (after the runs)"
  echo "raw rows: $TSV"
  echo "logs:     $LOGS/"
} | tee -a "$REPORT"
