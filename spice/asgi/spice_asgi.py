"""SPICE as an ASGI application (spi `asgi`), standard library only, run by
uvicorn behind a proxy (nginx proxy_pass, Apache mod_proxy_http, lighttpd
mod_proxy). The work is spice_wsgi's (installed beside this file), so the
answers are byte for byte those of every other SPI (docs/spice.md).

One event loop serves many requests at once, so nothing here may block it
for long: `sleep` is asyncio.sleep, and the session log's flock (which
waits while another process holds the lock) runs in a worker thread. Opening
and reading a file of the file set stays on the loop, as a static file
server's read would (page cache).
"""

import asyncio
import os

from spice_wsgi import REASONS, Fail, ad_id, fail_response, ok_headers, open_file, parse, read_file, session_log


def header(scope, name):
    for k, v in scope.get("headers", ()):
        if k == name:
            return v
    return b""


async def send_response(send, status, headers, body, head_only):
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers],
        }
    )
    await send({"type": "http.response.body", "body": b"" if head_only else body})


async def app(scope, receive, send):
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    if scope["type"] != "http":
        return
    method = scope["method"]
    path = scope.get("root_path", "") + scope["path"]
    qs = scope.get("query_string", b"")
    try:
        kind, file, ms = parse(method, path, qs.decode("latin-1"))
        if ms is not None:
            await asyncio.sleep(ms / 1000.0)
        fd, size = open_file(file)
        try:
            if kind == "session":
                await asyncio.get_running_loop().run_in_executor(None, session_log, file)
        except BaseException:
            os.close(fd)
            raise
        body = read_file(fd, size)
        ad = ad_id(qs, header(scope, b"cookie"), header(scope, b"user-agent")) if kind == "adrot" else None
        await send_response(send, 200, ok_headers(kind, file, len(body), ad), body, method == "HEAD")
    except Fail as f:
        status, h, body = fail_response(f, "spice_asgi")
        await send_response(send, status, h, body, method == "HEAD")


# REASONS is re-exported for tools that import this module alone.
__all__ = ["app", "REASONS"]
