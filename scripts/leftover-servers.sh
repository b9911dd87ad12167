#!/usr/bin/env bash
# Finds servers the tests started and left running (scripts/test.sh runs it
# around `cargo test`; it can be run by hand the same way):
#
#   bash scripts/leftover-servers.sh snapshot FILE   # before the tests
#   bash scripts/leftover-servers.sh check FILE      # after them
#
# `snapshot` writes every process now running (pid and start time) to FILE.
# `check` lists this user's processes (as root: everyone's, as the servers'
# workers run as www-data or nobody) that are not in FILE (so started
# since, whatever reused pids), are not zombies, and are a server the tests
# start (nginx, apache2, lighttpd, smbd, h2o, caddy, fcgiwrap, spawn-fcgi, postgres, benchlab,
# gunicorn, uvicorn, java, php-fpm, node,
# or a program inside a test temp dir such as the SPICE programs) with a
# test temp dir (`$TMPDIR/.tmp…`, tempfile's names) on its command line, or
# a worker that retitled itself (`nginx: worker process`, `smbd: client`,
# `php-fpm: pool spice`).
# Every test stops what it starts, children included; a process found here
# is a leak: `check` prints it, stops it (SIGTERM, then SIGKILL to that pid
# only) and exits 1. It waits up to 3 s first, for servers still exiting.
# Run one test command per machine at a time: servers of another run started
# meanwhile would look like leftovers of this one.
set -euo pipefail

tmp="${TMPDIR:-/tmp}"
tmp="${tmp%/}/.tmp"

# "PID START" per line: the start time makes a reused pid a new process.
processes() {
  ps "$@" -o pid=,ppid=,lstart=,stat=,args= 2>/dev/null || true
}

snapshot() {
  processes -e | awk '{ print $1, $3, $4, $5, $6, $7 }' >"$1"
}

# The leftover servers, one `PID ARGS` line each.
leftovers() {
  local before="$1"
  # As root every user's: the servers' workers run as www-data or nobody.
  local who=(-u "$(id -u)")
  [ "$(id -u)" -ne 0 ] || who=(-e)
  processes "${who[@]}" | awk -v tmp="$tmp" -v before="$before" '
    BEGIN {
      while ((getline line < before) > 0) seen[line] = 1
      while (("ps -e -o pid=" | getline p) > 0) alive[p + 0] = 1
    }
    {
      key = $1 " " $3 " " $4 " " $5 " " $6 " " $7
      if (key in seen || $8 ~ /^Z/) next
      args = $0
      sub(/^ *[0-9]+ +[0-9]+ +[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+ +/, "", args)
      split(args, argv, " ")
      prog = argv[1]
      name = prog
      sub(/.*\//, "", name)
      server = name ~ /^(nginx|apache2|httpd|lighttpd|smbd|h2o|caddy|fcgiwrap|spawn-fcgi|postgres|benchlab|gunicorn|uvicorn|java|php-fpm[0-9.]*|node|nodejs)(:.*)?$/
      # The Python application servers run as python3 (gunicorn, uvicorn):
      # the path of the program follows.
      if (name ~ /^python3/ && args ~ /(gunicorn|uvicorn)/) server = 1
      if (index(args, tmp) > 0 && (server || index(prog, tmp) == 1)) {
        found[$1] = args
        order[++n] = $1
      } else if (args ~ /^nginx: (worker|cache)/ || args ~ /^smbd(-[a-z]+)?(:|$)/ || args ~ /^php-fpm[0-9.]*: pool /) {
        # A worker that retitled itself has lost the temp dir from its
        # command line: it counts when its master is a leftover too or is
        # gone (the worker orphaned), never while some other master lives.
        worker[$1] = args
        parent[$1] = $2
        order[++n] = $1
      }
    }
    END {
      for (i = 1; i <= n; i++) {
        pid = order[i]
        if (pid in found) print pid, found[pid]
        else if (parent[pid] in found || parent[pid] == 1 || !(parent[pid] in alive)) print pid, worker[pid]
      }
    }'
}

check() {
  local before="$1" found waited=0
  found="$(leftovers "$before")"
  while [ -n "$found" ] && [ "$waited" -lt 30 ]; do
    sleep 0.1
    waited=$((waited + 1))
    found="$(leftovers "$before")"
  done
  if [ -z "$found" ]; then
    echo "== no test server left running"
    return 0
  fi
  echo "servers the tests started are still running (a test did not stop what it started):" >&2
  echo "$found" >&2
  local pid
  for pid in $(echo "$found" | awk '{ print $1 }'); do
    kill -TERM "$pid" 2>/dev/null || true
  done
  sleep 1
  for pid in $(echo "$found" | awk '{ print $1 }'); do
    kill -KILL "$pid" 2>/dev/null || true
  done
  return 1
}

case "${1:-}" in
  snapshot) snapshot "${2:?snapshot FILE}" ;;
  check) check "${2:?check FILE}" ;;
  *)
    echo "usage: bash scripts/leftover-servers.sh snapshot FILE | check FILE" >&2
    exit 2
    ;;
esac
