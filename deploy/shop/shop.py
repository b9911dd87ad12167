"""benchlab's shop: the small web application `benchlab lab up shop` serves
behind nginx at /shop/, for flows that log in, fill a cart and check out
(docs/shop.md is its contract).

A WSGI application, Python 3 standard library only, run by gunicorn with
several worker processes. Everything a request changes (sessions, carts,
orders) is in one SQLite database in WAL mode, each change one IMMEDIATE
transaction, so the workers' carts and totals stay exact under any
concurrency. Configuration comes from the environment (the lab sets it):

  SHOP_DB           the SQLite database (made at start)
  SHOP_LOG          the app's own log: one JSON line per request
  SHOP_SECRET_FILE  the per-lab key the session's CSRF tokens are signed with
  SHOP_PRODUCTS     the catalogue, CSV sku,name,price_cents
  SHOP_USERS        the users, CSV user,password (the flow's feeder file)
  SHOP_IMAGE        a path of the lab's file set the product page shows

Nothing secret (a password, the key, a session id, a token) is logged.
"""

import csv
import fcntl
import hashlib
import hmac
import html
import json
import os
import secrets
import sqlite3
import time
import urllib.parse

# A request body the shop reads at most (a login form, a cart line).
MAX_BODY = 16 * 1024
# A cart line's quantity: 1 to MAX_QTY, so totals stay small integers.
MAX_QTY = 99
# Cookie and header values longer than this are no session or token.
MAX_TOKEN = 256
# Sessions kept: past this the oldest go with their carts (a long run logs
# in millions of times; the database stays bounded).
MAX_SESSIONS = 100_000


def _env(name):
    value = os.environ.get(name)
    if not value:
        raise RuntimeError(f"shop: the environment variable {name} is not set (docs/shop.md)")
    return value


def _read_csv(path, columns):
    """The rows of a CSV file with exactly these header columns."""
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.reader(f)
        header = next(reader, None)
        if header != list(columns):
            raise RuntimeError(f"{path}:1: expected the header {','.join(columns)}, found {header}")
        rows = []
        for n, row in enumerate(reader, start=2):
            if not row:
                continue
            if len(row) != len(columns):
                raise RuntimeError(f"{path}:{n}: expected {len(columns)} fields, found {len(row)}")
            rows.append(row)
        return rows


PRODUCTS = {}
for _sku, _name, _price in _read_csv(_env("SHOP_PRODUCTS"), ("sku", "name", "price_cents")):
    PRODUCTS[_sku] = (_name, int(_price))
USERS = dict(_read_csv(_env("SHOP_USERS"), ("user", "password")))
with open(_env("SHOP_SECRET_FILE"), "rb") as _f:
    SECRET = _f.read()
if len(SECRET) < 16:
    raise RuntimeError("shop: SHOP_SECRET_FILE holds under 16 bytes")
DB_PATH = _env("SHOP_DB")
LOG_PATH = _env("SHOP_LOG")
IMAGE = os.environ.get("SHOP_IMAGE", "")

SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (id TEXT PRIMARY KEY, user TEXT NOT NULL, created REAL NOT NULL);
CREATE TABLE IF NOT EXISTS cart (
    session TEXT NOT NULL, sku TEXT NOT NULL, qty INTEGER NOT NULL, price_cents INTEGER NOT NULL,
    PRIMARY KEY (session, sku));
CREATE TABLE IF NOT EXISTS orders (
    id INTEGER PRIMARY KEY AUTOINCREMENT, user TEXT NOT NULL, items INTEGER NOT NULL,
    total_cents INTEGER NOT NULL, created REAL NOT NULL);
"""


def _connect():
    # isolation_level None: the shop says BEGIN IMMEDIATE itself, so a
    # read-modify-write takes the write lock before it reads.
    db = sqlite3.connect(DB_PATH, timeout=30, isolation_level=None)
    db.execute("PRAGMA busy_timeout = 30000")
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("PRAGMA synchronous = NORMAL")
    return db


# gunicorn --preload imports this once in its master: the schema is made
# before any worker forks. Each worker opens its own connection on its first
# request (a connection never crosses a fork).
_init = _connect()
_init.executescript(SCHEMA)
_init.close()
_db = None
_db_pid = None


def db():
    global _db, _db_pid
    if _db is None or _db_pid != os.getpid():
        _db = _connect()
        _db_pid = os.getpid()
    return _db


def log(record):
    """Appends one JSON line to the app's log: one write(2) of the whole
    line to a file opened O_APPEND, under flock, so the workers' lines never
    interleave or overwrite each other."""
    line = (json.dumps(record, separators=(",", ":")) + "\n").encode()
    fd = os.open(LOG_PATH, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.write(fd, line)
    finally:
        os.close(fd)


def csrf_for(session_id):
    """The session's CSRF token: an HMAC of its id under the lab's key."""
    return hmac.new(SECRET, b"csrf:" + session_id.encode(), hashlib.sha256).hexdigest()


def cookies(environ):
    out = {}
    for part in environ.get("HTTP_COOKIE", "").split(";"):
        name, eq, value = part.strip().partition("=")
        if eq and name not in out and len(value) <= MAX_TOKEN:
            out[name] = value
    return out


class Reply(Exception):
    """Ends a request with this status, body and headers."""

    def __init__(self, status, body, ctype="application/json", headers=()):
        super().__init__(status)
        self.status = status
        self.body = body
        self.ctype = ctype
        self.headers = list(headers)


def json_reply(status, obj, headers=()):
    return Reply(status, json.dumps(obj, separators=(",", ":")), "application/json", headers)


def html_reply(status, title, body, headers=()):
    page = (
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>"
        f"{html.escape(title)}</title>{body[0]}</head>\n<body>\n{body[1]}</body></html>\n"
    )
    return Reply(status, page, "text/html; charset=utf-8", headers)


def read_body(environ):
    try:
        length = int(environ.get("CONTENT_LENGTH") or 0)
    except ValueError:
        raise json_reply(400, {"ok": False, "error": "bad Content-Length"})
    if length > MAX_BODY:
        raise json_reply(413, {"ok": False, "error": f"a body over {MAX_BODY} bytes"})
    return environ["wsgi.input"].read(length) if length > 0 else b""


def session_user(environ):
    """(session id, user) of the request's shop_session cookie, else 401."""
    sid = cookies(environ).get("shop_session")
    if sid:
        row = db().execute("SELECT user FROM sessions WHERE id = ?", (sid,)).fetchone()
        if row:
            return sid, row[0]
    raise json_reply(401, {"ok": False, "error": "no session: log in at /shop/login"})


def check_csrf(environ, sid):
    token = environ.get("HTTP_X_CSRF_TOKEN", "")
    if not hmac.compare_digest(token.encode(), csrf_for(sid).encode()):
        raise json_reply(403, {"ok": False, "error": "csrf"})


def cart_totals(cur, sid):
    items, total = cur.execute(
        "SELECT COALESCE(SUM(qty), 0), COALESCE(SUM(qty * price_cents), 0) FROM cart WHERE session = ?", (sid,)
    ).fetchone()
    return int(items), int(total)


def index(environ, ctx):
    rows = "".join(
        f'<li><a href="/shop/product/{urllib.parse.quote(sku)}">{html.escape(name)}</a> '
        f"{price / 100:.2f}</li>\n"
        for sku, (name, price) in PRODUCTS.items()
    )
    raise html_reply(200, "Shop", ("", f"<h1>Shop</h1>\n<ul>\n{rows}</ul>\n"))


def login_page(environ, ctx):
    token = secrets.token_urlsafe(24)
    form = (
        '<form method="post" action="/shop/login">\n'
        f'<input type="hidden" name="csrf" value="{token}">\n'
        '<input name="user"> <input name="password" type="password"> <button>Log in</button>\n</form>\n'
    )
    raise html_reply(
        200,
        "Log in",
        ("", form),
        [("Set-Cookie", f"shop_csrf={token}; Path=/shop; HttpOnly")],
    )


def login(environ, ctx):
    form = urllib.parse.parse_qs(read_body(environ).decode("utf-8", "replace"), keep_blank_values=True)
    field = lambda k: form.get(k, [""])[0]  # noqa: E731
    expected = cookies(environ).get("shop_csrf", "")
    if not expected or not hmac.compare_digest(field("csrf").encode(), expected.encode()):
        raise json_reply(403, {"ok": False, "error": "csrf"})
    user, password = field("user"), field("password")
    known = USERS.get(user)
    if known is None or not hmac.compare_digest(password.encode(), known.encode()):
        raise json_reply(401, {"ok": False, "error": "unknown user or wrong password"})
    sid = secrets.token_urlsafe(24)
    cur = db()
    cur.execute("BEGIN IMMEDIATE")
    try:
        last = cur.execute(
            "INSERT INTO sessions (id, user, created) VALUES (?, ?, ?)", (sid, user, time.time())
        ).lastrowid
        old = "SELECT id FROM sessions WHERE rowid <= ?"
        cur.execute(f"DELETE FROM cart WHERE session IN ({old})", (last - MAX_SESSIONS,))
        cur.execute("DELETE FROM sessions WHERE rowid <= ?", (last - MAX_SESSIONS,))
        cur.execute("COMMIT")
    except BaseException:
        cur.execute("ROLLBACK")
        raise
    ctx["user"] = user
    raise Reply(
        303,
        "",
        "text/plain",
        [("Location", "/shop/"), ("Set-Cookie", f"shop_session={sid}; Path=/shop; HttpOnly")],
    )


def product(environ, ctx, sku):
    sid, ctx["user"] = session_user(environ)
    found = PRODUCTS.get(sku)
    if found is None:
        raise json_reply(404, {"ok": False, "error": "unknown sku"})
    name, price = found
    head = f'<meta name="csrf-token" content="{csrf_for(sid)}">'
    img = f'<img src="{html.escape(IMAGE)}" alt="">\n' if IMAGE else ""
    body = (
        f"<h1>{html.escape(name)}</h1>\n{img}"
        f'<p class="sku">{html.escape(sku)}</p>\n<p class="price" data-cents="{price}">{price / 100:.2f}</p>\n'
    )
    raise html_reply(200, name, (head, body))


def add_to_cart(environ, ctx):
    sid, ctx["user"] = session_user(environ)
    check_csrf(environ, sid)
    ctype = environ.get("CONTENT_TYPE", "").split(";")[0].strip().lower()
    if ctype != "application/json":
        raise json_reply(415, {"ok": False, "error": "expected Content-Type: application/json"})
    try:
        line = json.loads(read_body(environ))
    except ValueError:
        raise json_reply(400, {"ok": False, "error": "the body is no JSON"})
    if not isinstance(line, dict):
        raise json_reply(400, {"ok": False, "error": 'expected {"sku": "...", "qty": N}'})
    sku, qty = line.get("sku"), line.get("qty", 1)
    if not isinstance(sku, str) or sku not in PRODUCTS:
        raise json_reply(400, {"ok": False, "error": "unknown sku"})
    if type(qty) is not int or not 1 <= qty <= MAX_QTY:
        raise json_reply(400, {"ok": False, "error": f"qty: expected an integer from 1 to {MAX_QTY}"})
    cur = db()
    cur.execute("BEGIN IMMEDIATE")
    try:
        cur.execute(
            "INSERT INTO cart (session, sku, qty, price_cents) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (session, sku) DO UPDATE SET qty = qty + excluded.qty",
            (sid, sku, qty, PRODUCTS[sku][1]),
        )
        items, total = cart_totals(cur, sid)
        cur.execute("COMMIT")
    except BaseException:
        cur.execute("ROLLBACK")
        raise
    raise json_reply(200, {"ok": True, "items": items, "total_cents": total})


def checkout(environ, ctx):
    sid, user = session_user(environ)
    ctx["user"] = user
    check_csrf(environ, sid)
    cur = db()
    cur.execute("BEGIN IMMEDIATE")
    try:
        items, total = cart_totals(cur, sid)
        if items == 0:
            cur.execute("ROLLBACK")
            raise json_reply(409, {"ok": False, "error": "the cart is empty"})
        order = cur.execute(
            "INSERT INTO orders (user, items, total_cents, created) VALUES (?, ?, ?, ?)",
            (user, items, total, time.time()),
        ).lastrowid
        cur.execute("DELETE FROM cart WHERE session = ?", (sid,))
        cur.execute("COMMIT")
    except Reply:
        raise
    except BaseException:
        cur.execute("ROLLBACK")
        raise
    ctx.update(order=order, items=items, total_cents=total)
    raise json_reply(200, {"ok": True, "order": order, "items": items, "total_cents": total})


ROUTES = {
    ("GET", "/shop/"): index,
    ("GET", "/shop/login"): login_page,
    ("POST", "/shop/login"): login,
    ("POST", "/shop/cart"): add_to_cart,
    ("POST", "/shop/checkout"): checkout,
}
PATHS = {path for _, path in ROUTES}


def route(environ, ctx):
    method, path = environ["REQUEST_METHOD"], environ.get("PATH_INFO", "")
    handler = ROUTES.get((method, path))
    if handler:
        handler(environ, ctx)
    if path.startswith("/shop/product/"):
        if method != "GET":
            raise json_reply(405, {"ok": False, "error": "expected GET"}, [("Allow", "GET")])
        product(environ, ctx, path[len("/shop/product/"):])
    if path in PATHS:
        allowed = ", ".join(sorted(m for m, p in ROUTES if p == path))
        raise json_reply(405, {"ok": False, "error": f"expected {allowed}"}, [("Allow", allowed)])
    raise json_reply(404, {"ok": False, "error": "no such page"})


def application(environ, start_response):
    ctx = {"user": None}
    try:
        route(environ, ctx)
        reply = json_reply(500, {"ok": False, "error": "no reply"})
    except Reply as r:
        reply = r
    except Exception as e:  # a bug or a broken database: answered and logged, never fatal
        reply = json_reply(500, {"ok": False, "error": type(e).__name__})
    record = {
        "time": round(time.time(), 6),
        "method": environ["REQUEST_METHOD"],
        "path": environ.get("PATH_INFO", ""),
        "status": reply.status,
        "user": ctx["user"],
    }
    for k in ("order", "items", "total_cents"):
        if k in ctx:
            record[k] = ctx[k]
    log(record)
    body = reply.body.encode()
    headers = [("Content-Type", reply.ctype), ("Content-Length", str(len(body)))] + reply.headers
    reason = {200: "OK", 303: "See Other", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden",
              404: "Not Found", 405: "Method Not Allowed", 409: "Conflict", 413: "Content Too Large",
              415: "Unsupported Media Type", 500: "Internal Server Error"}.get(reply.status, "")
    start_response(f"{reply.status} {reason}", headers)
    return [body]
