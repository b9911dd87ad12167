#!/usr/bin/env bash
# One agent runs the 1 M-URL from-log workload: the wire size the controller logs, both RSS peaks.
#   BENCHLAB=target/release/benchlab bash bench/runs/2026-11-26-url-memory-agents-1m.sh
# (N=1 for the one-URL baseline.)
set -u
B=$(realpath "${BENCHLAB:-target/release/benchlab}")
N=${N:-1000000}
W=$(mktemp -d)
cd "$W"
awk -v n=$N 'BEGIN { for (i = 0; i < n; i++) for (k = 0; k <= i % 2; k++) printf "10.0.0.1 - - [10/Oct/2000:13:55:36 -0700] \"GET /static/img/%03d/photo-%07d.jpg?v=2 HTTP/1.1\" 200 %d \"-\" \"bench\"\n", i % 997, i, 1000 + i % 5000 }' > access.log
$B workload from-log access.log --out w.toml >/dev/null 2>&1
rm access.log
printf 'name = "u"\ntarget = "http://127.0.0.1:9"\n[defaults]\nlength = "1s"\nramp_up = "0s"\nramp_down = "0s"\nthreads_per_client = 1\ntimeout = "1s"\n[workloads.w]\nfile = "w.toml"\n[[mix]]\nclients = 1\n' > suite.toml
$B lab certs --out certs --agents 1 >/dev/null 2>&1
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
/usr/bin/time -f 'controller peak RSS %M KiB, %e s' $B run suite.toml --agents 1 --listen 127.0.0.1:$PORT --tls-dir certs --no-preflight --out res > ctl.out 2> ctl.err &
CTL=$!
sleep 1
/usr/bin/time -f 'agent peak RSS %M KiB, %e s' $B agent --controller 127.0.0.1:$PORT --cert certs/agent-0.pem --key certs/agent-0.key --ca certs/ca.pem --index 0 > ag.out 2> ag.err
wait $CTL
grep -h "URL list\|peak RSS" ctl.err ag.err
grep -h "error\|lost" ag.err | head -3
cd /; rm -rf "$W"
