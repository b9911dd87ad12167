#!/usr/bin/python3 -IS
"""SPICE as a CGI script (spi `cgi-script`): the same work as the C programs
(../src/spice.c), in a script language, as c't 1999 ran Perl CGI scripts.

URL layout (docs/spice.md, "URL layout"): the server maps /spice/cgi-script
to this script, so PATH_INFO is "/<kind>/<file path>" with kind adrot,
session or sleep (?ms=N, default 3000). SPICE_ROOT is the document root,
SPICE_SESSION_LOG the session log. The body is exactly the file's bytes.

`-IS`: isolated mode without the site module, for a faster start; only the
standard library's built-in modules are used.
"""

import fcntl
import os
import sys
import time

SLEEP_DEFAULT_MS = 3000
SLEEP_MAX_MS = 600000
COUNTER_DIGITS = 12
COUNTER_LINE = COUNTER_DIGITS + 1

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


def out(data):
    view = memoryview(data)
    while view:
        n = os.write(1, view)
        view = view[n:]


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


def fnv1a(h, s):
    for b in s.encode("utf-8", "surrogateescape"):
        h = ((h ^ b) * 16777619) & 0xFFFFFFFF
    return h


def ad_id():
    """The "ad" chosen from the request's environment (same number as C)."""
    h = 2166136261
    h = fnv1a(h, os.environ.get("QUERY_STRING", ""))
    h = fnv1a(h, "\n")
    h = fnv1a(h, os.environ.get("HTTP_COOKIE", ""))
    h = fnv1a(h, "\n")
    h = fnv1a(h, os.environ.get("HTTP_USER_AGENT", ""))
    return h % 100


def sleep_ms(qs):
    for part in qs.split("&"):
        if part.startswith("ms="):
            v = part[3:]
            if not v or not v.isdigit() or not v.isascii() or int(v) > SLEEP_MAX_MS:
                raise Fail(400, "ms must be a whole number of milliseconds, at most 600000")
            return int(v)
    return SLEEP_DEFAULT_MS


def session_log(log, file):
    """Seed 002: open the log, lock it, increment the counter, append a line
    with time, process id and file, unlock."""
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


def handle():
    env = os.environ
    method = env.get("REQUEST_METHOD", "GET") or "GET"
    if method not in ("GET", "HEAD"):
        raise Fail(405, "only GET and HEAD")
    pi = env.get("PATH_INFO", "")
    usage = "expected /spice/<spi>/{adrot,session,sleep}/<file path>"
    if not pi.startswith("/"):
        raise Fail(404, usage)
    kind, slash, rest = pi[1:].partition("/")
    if kind not in ("adrot", "session", "sleep"):
        raise Fail(404, usage)
    if not rest:
        raise Fail(404, "no file path")
    file = "/" + rest
    if not path_ok(file):
        raise Fail(400, "bad file path")
    root = env.get("SPICE_ROOT")
    if not root:
        raise Fail(500, "SPICE_ROOT is not set")
    if kind == "sleep":
        time.sleep(sleep_ms(env.get("QUERY_STRING", "")) / 1000.0)
    try:
        fd = os.open(root + file, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        raise Fail(404, "no such file")
    try:
        st = os.fstat(fd)
        if (st.st_mode & 0o170000) != 0o100000:
            raise Fail(404, "no such file")
        if kind == "session":
            log = env.get("SPICE_SESSION_LOG")
            if not log:
                raise Fail(500, "SPICE_SESSION_LOG is not set")
            session_log(log, file)
        chunks, got = [], 0
        while got < st.st_size:
            b = os.read(fd, st.st_size - got)
            if not b:
                break
            chunks.append(b)
            got += len(b)
        if got != st.st_size:
            raise Fail(500, "the file changed while it was read")
        body = b"".join(chunks)
    finally:
        os.close(fd)
    ad = "X-Ad: %d\r\n" % ad_id() if kind == "adrot" else ""
    head = "Status: 200 OK\r\nContent-Type: %s\r\nContent-Length: %d\r\n%s\r\n" % (content_type(file), len(body), ad)
    out(head.encode("latin-1") + (body if method != "HEAD" else b""))


def main():
    try:
        handle()
    except Fail as f:
        if f.status >= 500:
            sys.stderr.write("spice.py[%d]: %s\n" % (os.getpid(), f.why))
        body = ("%d %s: %s\n" % (f.status, REASONS[f.status], f.why)).encode()
        allow = "Allow: GET, HEAD\r\n" if f.status == 405 else ""
        head = "Status: %d %s\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n%s\r\n" % (
            f.status,
            REASONS[f.status],
            len(body),
            allow,
        )
        out(head.encode() + body)


if __name__ == "__main__":
    main()
