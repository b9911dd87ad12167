"""SPICE as a WSGI application (spi `wsgi`), standard library only, run by
gunicorn behind a proxy (nginx proxy_pass, Apache mod_proxy_http, lighttpd
mod_proxy). The ASGI application (../asgi/spice_asgi.py) imports the work
from here, so both SPIs answer byte for byte as spice.py and the C programs
do (docs/spice.md).

URL layout (docs/spice.md, "URL layout"): the proxy forwards the whole
path, /spice/<spi>/<kind>/<file path>; the application drops the
/spice/<spi> prefix itself (a proxy need not rewrite anything), so the rest
is "/<kind>/<file path>" with kind adrot, session or sleep (?ms=N, default
3000). SPICE_ROOT is the document root, SPICE_SESSION_LOG the session log,
both from the application server's environment.
"""

import fcntl
import os
import time

SLEEP_DEFAULT_MS = 3000
SLEEP_MAX_MS = 600000
COUNTER_DIGITS = 12
COUNTER_LINE = COUNTER_DIGITS + 1
KINDS = ("adrot", "session", "sleep")

TYPES = {
    "html": "text/html",
    "htm": "text/html",
    "txt": "text/plain",
    "css": "text/css",
    "js": "application/javascript",
    "json": "application/json",
    "xml": "application/xml",
    "png": "image/png",
    "jpg": "image/jpeg",
    "jpeg": "image/jpeg",
    "gif": "image/gif",
    "svg": "image/svg+xml",
}
REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed", 500: "Internal Server Error"}


class Fail(Exception):
    def __init__(self, status, why):
        super().__init__(why)
        self.status = status
        self.why = why


def content_type(path):
    name = path.rsplit("/", 1)[-1]
    if "." in name:
        return TYPES.get(name.rsplit(".", 1)[1].lower(), "application/octet-stream")
    return "application/octet-stream"


def path_ok(p):
    if not p.startswith("/") or p == "/":
        return False
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in p):
        return False
    return not any(seg in (".", "..") for seg in p[1:].split("/"))


def fnv1a(h, data):
    for b in data:
        h = ((h ^ b) * 16777619) & 0xFFFFFFFF
    return h


def ad_id(query, cookie, user_agent):
    """The "ad" chosen from the request (bytes), the same number as C's."""
    h = 2166136261
    for i, part in enumerate((query, cookie, user_agent)):
        if i:
            h = fnv1a(h, b"\n")
        h = fnv1a(h, part)
    return h % 100


def sleep_ms(qs):
    for part in qs.split("&"):
        if part.startswith("ms="):
            v = part[3:]
            if not v or not v.isdigit() or not v.isascii() or int(v) > SLEEP_MAX_MS:
                raise Fail(400, "ms must be a whole number of milliseconds, at most 600000")
            return int(v)
    return SLEEP_DEFAULT_MS


def parse(method, path, qs):
    """Checks the request; returns (kind, file path, sleep ms or None)."""
    if method not in ("GET", "HEAD"):
        raise Fail(405, "only GET and HEAD")
    # The proxy forwards /spice/<spi>/<kind>/<file path>: drop the prefix.
    if path.startswith("/spice/"):
        slash = path.find("/", len("/spice/"))
        path = path[slash:] if slash >= 0 else ""
    usage = "expected /spice/<spi>/{adrot,session,sleep}/<file path>"
    if not path.startswith("/"):
        raise Fail(404, usage)
    kind, _, rest = path[1:].partition("/")
    if kind not in KINDS:
        raise Fail(404, usage)
    if not rest:
        raise Fail(404, "no file path")
    file = "/" + rest
    if not path_ok(file):
        raise Fail(400, "bad file path")
    return kind, file, sleep_ms(qs) if kind == "sleep" else None


def config(name):
    v = os.environ.get(name)
    if not v:
        raise Fail(500, name + " is not set")
    return v


def open_file(file):
    """Opens the file (before any session log: a 404 is not logged);
    returns (fd, size)."""
    root = config("SPICE_ROOT")
    try:
        fd = os.open(root + file, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        raise Fail(404, "no such file")
    st = os.fstat(fd)
    if (st.st_mode & 0o170000) != 0o100000:
        os.close(fd)
        raise Fail(404, "no such file")
    return fd, st.st_size


def read_file(fd, size):
    """Reads the whole file and closes it."""
    try:
        chunks, got = [], 0
        while got < size:
            b = os.read(fd, size - got)
            if not b:
                break
            chunks.append(b)
            got += len(b)
        if got != size:
            raise Fail(500, "the file changed while it was read")
        return b"".join(chunks)
    finally:
        os.close(fd)


def session_log(file):
    """Seed 002: open the log, lock it (flock, the lock every SPI's session
    program takes), increment the counter, append a line with time,
    process id and file, unlock. Blocks while another process holds it."""
    log = config("SPICE_SESSION_LOG")
    try:
        fd = os.open(log, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
    except OSError:
        raise Fail(500, "cannot open SPICE_SESSION_LOG")
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            head = os.pread(fd, COUNTER_LINE, 0)
            count = 0
            if head:
                digits = head[:COUNTER_DIGITS]
                if len(head) != COUNTER_LINE or head[COUNTER_DIGITS:] != b"\n" or not digits.isdigit():
                    raise Fail(500, "SPICE_SESSION_LOG does not start with a counter line")
                count = int(digits)
            count += 1
            if count > 999999999999:
                raise Fail(500, "session counter overflow")
            # In place; the fd has no O_APPEND yet, since Linux's pwrite()
            # appends on an O_APPEND fd whatever the offset.
            if os.pwrite(fd, b"%012d\n" % count, 0) != COUNTER_LINE:
                raise Fail(500, "cannot write the counter of SPICE_SESSION_LOG")
            stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            line = ("%s\t%d\t%s\n" % (stamp, os.getpid(), file)).encode("utf-8", "surrogateescape")
            fcntl.fcntl(fd, fcntl.F_SETFL, os.O_APPEND)
            view = memoryview(line)
            while view:
                view = view[os.write(fd, view):]
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    except OSError:
        raise Fail(500, "cannot lock or write SPICE_SESSION_LOG")
    finally:
        os.close(fd)


def ok_headers(kind, file, size, ad):
    """A 200's headers: as the static file's, plus X-Ad for adrot."""
    h = [("Content-Type", content_type(file)), ("Content-Length", str(size))]
    if kind == "adrot":
        h.append(("X-Ad", str(ad)))
    return h


def fail_response(f, who):
    """(status line, headers, body) of an error; 5xx also on stderr."""
    if f.status >= 500:
        import sys

        sys.stderr.write("%s[%d]: %s\n" % (who, os.getpid(), f.why))
    body = ("%d %s: %s\n" % (f.status, REASONS[f.status], f.why)).encode()
    h = [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))]
    if f.status == 405:
        h.append(("Allow", "GET, HEAD"))
    return f.status, h, body


def application(environ, start_response):
    method = environ.get("REQUEST_METHOD", "GET")
    # WSGI strings are the request's bytes as latin-1; the file path and
    # the log line are UTF-8 (as the CGI programs see them).
    path = (environ.get("SCRIPT_NAME", "") + environ.get("PATH_INFO", "")).encode("latin-1")
    path = path.decode("utf-8", "surrogateescape")
    qs = environ.get("QUERY_STRING", "")
    try:
        kind, file, ms = parse(method, path, qs)
        if ms is not None:
            time.sleep(ms / 1000.0)
        fd, size = open_file(file)
        try:
            if kind == "session":
                session_log(file)
        except BaseException:
            os.close(fd)
            raise
        body = read_file(fd, size)
        ad = None
        if kind == "adrot":
            ad = ad_id(
                qs.encode("latin-1"),
                environ.get("HTTP_COOKIE", "").encode("latin-1"),
                environ.get("HTTP_USER_AGENT", "").encode("latin-1"),
            )
        start_response("200 OK", ok_headers(kind, file, len(body), ad))
        return [b"" if method == "HEAD" else body]
    except Fail as f:
        status, h, body = fail_response(f, "spice_wsgi")
        start_response("%d %s" % (status, REASONS[status]), h)
        return [b"" if method == "HEAD" else body]
