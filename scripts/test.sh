#!/usr/bin/env bash
# benchlab's test command (README.md, "The two commands"; CI runs it through .ci/run):
#
#   bash scripts/test.sh
#
# 1. Makes sure every program and package the tests use is present. As root on
#    Debian/Ubuntu it installs the missing ones (`apt-get update` once, then
#    `apt-get install -y --no-install-recommends` of only those); otherwise it
#    prints the exact install line and exits 1.
# 2. Checks the Rust toolchain (cargo; rustfmt and clippy through rustup when
#    rustup is there).
# 3. Runs `cargo fmt --all -- --check`, `cargo clippy --workspace --all-targets
#    --locked -- -D warnings` and `cargo test --workspace --locked`.
# 4. Checks that no server the tests started outlived them
#    (scripts/leftover-servers.sh: every process of this user started during
#    `cargo test` that is nginx, apache2, lighttpd, smbd, h2o, fcgiwrap,
#    spawn-fcgi, postgres, benchlab, gunicorn, uvicorn, java, php-fpm, node or a SPICE program with a test temp dir on its
#    command line, or an orphaned nginx/smbd worker). Each one found is
#    printed and stopped, and the script exits 1: a test that leaks a server
#    fails the run even when every test passed.
#
# It never stops, restarts or reconfigures the machine's own services: the
# tests start their own nginx, Apache, lighttpd, fcgiwrap … on free loopback
# ports with configs in temp dirs, so a distribution's nginx on port 80 may
# keep running while they do.
set -euo pipefail
cd "$(dirname "$0")/.."

# Everything the tests (and the Rust build) need from the system, in one place.
# README.md ("The two commands") lists the same packages; crates/cli/tests/
# repo_self_contained.rs checks that every package named in a test's message
# is here. Each entry: Debian package | what shows it is installed (a program
# found on PATH or in /usr/sbin, or an absolute file path; `a,b` = either) |
# who needs it.
requirements=(
  "nginx-light|nginx|real-server tests, SPICE, the TLS and report tests (crates/cli/tests/common/servers.rs)"
  "lighttpd|lighttpd|real-server and SPICE tests"
  "apache2|/usr/sbin/apache2,/usr/lib/apache2/modules/mod_cgid.so|SPICE tests (Debian's module layout)"
  "fcgiwrap|fcgiwrap|SPICE: CGI behind nginx"
  "spawn-fcgi|spawn-fcgi|SPICE: the FastCGI program behind nginx and lighttpd"
  "libfcgi-dev|/usr/include/fcgiapp.h|SPICE: spice/src/fastcgi.c links libfcgi"
  "python3|/usr/bin/python3|SPICE: spice/cgi-script/spice.py"
  "perl|/usr/bin/perl|SPICE: spice/cgi-perl/spice.pl (spi cgi-perl)"
  "nodejs|node|SPICE: spice/node/spice.js (spi node; lab up starts it beside nginx, Apache, lighttpd)"
  "php-fpm|php-fpm,php-fpm8.2,php-fpm8.3,php-fpm8.4|SPICE: spice/php/spice.php under PHP-FPM (spi php-fpm; lab up starts it beside nginx, Apache, lighttpd)"
  "python3-uvicorn|/usr/lib/python3/dist-packages/uvicorn/__init__.py|SPICE: the asgi SPI's application server (python3 -m uvicorn)"
  "tomcat10|/usr/share/tomcat10/bin/catalina.sh|SPICE: lab up tomcat, the servlet and jsp SPIs (crates/lab/src/container.rs)"
  "default-jdk-headless|javac|SPICE: lab up tomcat compiles the servlet (spice/servlet/)"
  "libeclipse-jdt-core-java|/usr/share/java/eclipse-jdt-core.jar|SPICE: Tomcat's JSP engine compiles spice.jsp with it"
  "jetty9|/usr/share/jetty9/start.jar|SPICE: lab up jetty, the servlet and jsp SPIs in Jetty 9 (crates/lab/src/container.rs)"
  "gcc|gcc|SPICE's C programs; the Rust linker (cc)"
  "libc6-dev|/usr/include/stdio.h|C headers and crt files for gcc and the Rust linker"
  "make|make|spice/Makefile"
  "openssl|openssl|TLS tests make their certificates with openssl req"
  "chromium|chromium,chromium-browser,google-chrome,google-chrome-stable|report_browser.rs: headless Chromium renders report.html"
  "procps|/usr/bin/kill,/bin/kill|tests signal the processes they started (kill -INT)"
  "wrk|wrk|comparisons with wrk on the same target (tests and bench/)"
  "ca-certificates|/etc/ssl/certs/ca-certificates.crt|cargo downloads crates from crates.io over HTTPS"
  "samba|smbd|file-server tests: an unprivileged smbd on a loopback high port (crates/fileserver/src/smbd.rs), and smbstatus -P (smb2_audit.rs)"
  "libsmbclient|/usr/lib/x86_64-linux-gnu/libsmbclient.so.0,/usr/lib/aarch64-linux-gnu/libsmbclient.so.0|smb:// targets: Samba's client library, loaded at run time"
  "samba-vfs-modules|/usr/lib/x86_64-linux-gnu/samba/vfs/full_audit.so,/usr/lib/aarch64-linux-gnu/samba/vfs/full_audit.so|file_suite_agents.rs, smb2.rs and smb2_audit.rs: Samba's full_audit log of what the agents and benchlab's SMB2 client did"
  "dbench|dbench|file-suite and smb2.rs tests replay its client.txt; bench/dbench-vs-benchlab.sh"
  "iproute2|ip|agents.rs, agents_netns.rs: test systems in network namespaces (ip netns, veth pairs, a bridge)"
  "h2o|h2o|HTTP/2 tests: h2o over h2c and TLS (crates/cli/tests/http2.rs)"
  "nghttp2-client|h2load|bench/vs-peers.sh: the HTTP/2 row against h2load"
  "libxml2-utils|xmllint|gates.rs: --junit files validated against tests/data/junit.xsd"
  "postgresql|/usr/lib/postgresql/15/bin/initdb,/usr/lib/postgresql/16/bin/initdb,/usr/lib/postgresql/17/bin/initdb,/usr/lib/postgresql/18/bin/initdb|history.rs: a PostgreSQL history database (initdb, pg_ctl, createdb)"
  "prometheus|/usr/bin/prometheus|metrics.rs: a real Prometheus scrapes --metrics-listen and receives remote write"
  "caddy|caddy|HTTP/3 tests: a test-started Caddy serves h1, h2 and h3 (crates/cli/tests/http3.rs); bench/h3.sh"
  "gunicorn|gunicorn|SPICE: the wsgi SPI's application server (crates/lab/src/appserver.rs); shop.rs: lab up shop runs the shop application (deploy/shop/shop.py)"
)

# Is `probe` satisfied? A comma-separated list of alternatives, each an
# absolute path or a program name looked up on PATH and in the sbin
# directories an ordinary user's PATH lacks.
present() {
  local alt
  IFS=, read -ra alts <<<"$1"
  for alt in "${alts[@]}"; do
    if [[ $alt == /* ]]; then
      [ -e "$alt" ] && return 0
    else
      command -v "$alt" >/dev/null 2>&1 && return 0
      [ -x "/usr/sbin/$alt" ] || [ -x "/sbin/$alt" ] && return 0
    fi
  done
  return 1
}

missing=()
for r in "${requirements[@]}"; do
  IFS='|' read -r package probe _why <<<"$r"
  # Probe files and programs, not dpkg's package names: a machine with the
  # `nginx` or `nginx-full` flavour already has what the tests need, and
  # installing nginx-light there would replace it.
  present "$probe" || missing+=("$package")
done

if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null; then
    echo "The tests need these packages, which are missing: ${missing[*]}" >&2
    if command -v apt-get >/dev/null; then
      echo "Install them as root, either by running this script as root (it installs them without" >&2
      echo "starting their services): sudo bash scripts/test.sh" >&2
      echo "or yourself:" >&2
      echo "sudo apt-get update && sudo apt-get install -y --no-install-recommends ${missing[*]}" >&2
    else
      echo "(Debian/Ubuntu package names; install the equivalents with your system's package manager)" >&2
    fi
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  # Installing must not start the packages' services. On a Debian box with
  # systemd, nginx-light's postinst starts nginx on port 80 and apache2's then
  # fails to start on the same port, which fails its configuration and the
  # whole apt-get run; and a service started here is one this script would
  # have changed on the machine. Debian's policy-rc.d hook (exit 101 = "action
  # forbidden") makes invoke-rc.d and deb-systemd-invoke skip every start
  # during the install. It is written only when the machine has none (a
  # container's own policy stays untouched) and removed on any exit. The
  # services stay installed as the distribution ships them; nothing is
  # stopped, disabled or reconfigured.
  policy=/usr/sbin/policy-rc.d
  if [ ! -e "$policy" ]; then
    trap 'rm -f "$policy"' EXIT
    printf '#!/bin/sh\n# benchlab scripts/test.sh: start no service during its apt-get install\nexit 101\n' >"$policy"
    chmod 755 "$policy"
  fi
  echo "== installing ${missing[*]}"
  apt-get update
  apt-get install -y --no-install-recommends "${missing[@]}"
  if [ "$(trap -p EXIT)" ]; then
    rm -f "$policy"
    trap - EXIT
  fi
  still=()
  for r in "${requirements[@]}"; do
    IFS='|' read -r package probe _why <<<"$r"
    present "$probe" || still+=("$package")
  done
  if [ "${#still[@]}" -gt 0 ]; then
    echo "still missing after apt-get install: ${still[*]}" >&2
    exit 1
  fi
fi

# Tests name their servers `localhost` as well as 127.0.0.1. Every installed
# Debian/Ubuntu system has it in /etc/hosts; a bare chroot or container image
# may not, and then tests fail with "Name or service not known". Say so here
# rather than change the machine's name resolution.
if ! getent hosts localhost >/dev/null 2>&1; then
  echo "the name localhost does not resolve on this machine: add \"127.0.0.1 localhost\" to /etc/hosts" >&2
  exit 1
fi

if ! command -v cargo >/dev/null; then
  echo "cargo is not on PATH: install Rust (https://rustup.rs), then run this again" >&2
  exit 1
fi
# rustfmt and clippy come with rustup's default profile; add them only when
# absent, so a machine without network access to rustup's server still runs.
if ! cargo fmt --version >/dev/null 2>&1 || ! cargo clippy --version >/dev/null 2>&1; then
  if command -v rustup >/dev/null; then
    rustup component add rustfmt clippy
  else
    echo "cargo fmt and cargo clippy are needed: install rustfmt and clippy for your toolchain" >&2
    exit 1
  fi
fi

echo "== cargo fmt --all -- --check"
cargo fmt --all -- --check
echo "== cargo clippy --workspace --all-targets --locked -- -D warnings"
cargo clippy --workspace --all-targets --locked -- -D warnings
echo "== cargo test --workspace --locked"
before="$(mktemp)"
bash scripts/leftover-servers.sh snapshot "$before"
status=0
cargo test --workspace --locked || status=$?
bash scripts/leftover-servers.sh check "$before" || status=1
rm -f "$before"
exit "$status"
