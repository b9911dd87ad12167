#!/usr/bin/env bash
# A quick check against a real server (README.md, "Quick start"): start a
# throw-away nginx on a free loopback port serving a 4 KiB page from a temp
# dir, run `benchlab http` against it (5 s, 64 virtual users), then stop that
# nginx and remove the dir. `benchlab demo` is the full suite on benchlab's
# own server; this is the one-URL check against someone else's.
#
#   bash scripts/quickstart.sh [extra benchlab http flags]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${BENCHLAB:-target/release/benchlab}
[ -x "$bin" ] || cargo build --release -p benchlab
if ! command -v nginx >/dev/null && [ ! -x /usr/sbin/nginx ]; then
  if [ "$(id -u)" -eq 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx-light >/dev/null
  else
    echo "nginx is needed: sudo apt-get install nginx-light" >&2; exit 1
  fi
fi
nginx_bin=$(command -v nginx || echo /usr/sbin/nginx)
dir=$(mktemp -d)
chmod 755 "$dir"
trap '[ -f "$dir/nginx.pid" ] && kill "$(cat "$dir/nginx.pid")" 2>/dev/null; sleep 0.2; rm -rf "$dir"' EXIT
mkdir -p "$dir/www"
python3 - "$dir/www/index.html" <<'PY'
import sys
line = "<p>benchlab quick start: a 4096-byte page of HTML-like text.</p>\n"
text = ("<!doctype html>\n<html><body>\n" + line * 80)[:4096 - 15] + "\n</body></html>"
open(sys.argv[1], "w").write(text.ljust(4096)[:4096])
PY
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
user_line=""; [ "$(id -u)" -eq 0 ] && user_line="user root;"
cat > "$dir/nginx.conf" <<CONF
$user_line
worker_processes 1;
pid $dir/nginx.pid;
error_log $dir/error.log;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $dir/cb; proxy_temp_path $dir/px; fastcgi_temp_path $dir/fc;
  uwsgi_temp_path $dir/uw; scgi_temp_path $dir/sc;
  keepalive_requests 1000000;
  server { listen 127.0.0.1:$port; root $dir/www; }
}
CONF
"$nginx_bin" -c "$dir/nginx.conf" -p "$dir"
for _ in $(seq 50); do (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.1; done
echo "nginx serves http://127.0.0.1:$port/index.html"
"$bin" http --threads 64 --duration 5s "$@" "http://127.0.0.1:$port/index.html"
