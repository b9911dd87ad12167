// SPICE under Node.js (spi `node`): the same work as the C programs
// (../src/spice.c), in one long-lived Node process with the core `http`
// module, behind the server's HTTP reverse proxy.
//
//   node spice.js LISTEN      LISTEN: a unix socket path, or 127.0.0.1:PORT
//
// URL layout (docs/spice.md, "URL layout"): the proxy passes the request's
// path as is, /spice/node/<kind>/<file path>, kind adrot, session or sleep
// (?ms=N, default 3000). SPICE_ROOT (the document root) and
// SPICE_SESSION_LOG (the session log) come from the environment. The body
// is exactly the file's bytes.
//
// The session log's lock is flock(2) on the log file, shared with every
// other SPI's programs on the server; Node has no flock, so a resident Perl
// helper (started once, at start-up) takes and releases it on request over
// a pipe, and this process's session requests queue for it one at a time.
'use strict';

const fs = require('fs');
const http = require('http');
const { spawn } = require('child_process');

const PREFIX = '/spice/node';
const SLEEP_DEFAULT_MS = 3000;
const SLEEP_MAX_MS = 600000;
const COUNTER_DIGITS = 12;
const COUNTER_LINE = COUNTER_DIGITS + 1;
const TYPES = {
  html: 'text/html',
  htm: 'text/html',
  txt: 'text/plain',
  css: 'text/css',
  js: 'application/javascript',
  json: 'application/json',
  xml: 'application/xml',
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  gif: 'image/gif',
  svg: 'image/svg+xml',
};
const USAGE = 'expected /spice/<spi>/{adrot,session,sleep}/<file path>';

class Fail extends Error {
  constructor(status, why) {
    super(why);
    this.status = status;
    this.why = why;
  }
}

function contentType(path) {
  const name = path.slice(path.lastIndexOf('/') + 1);
  const dot = name.lastIndexOf('.');
  if (dot < 0) return 'application/octet-stream';
  return TYPES[name.slice(dot + 1).toLowerCase()] || 'application/octet-stream';
}

// Starts with '/', names something below the root, no "." or ".." segment,
// no control character (which would tear a session log line).
function pathOk(p) {
  if (!p.startsWith('/') || p === '/') return false;
  if (/[\x00-\x1f\x7f]/.test(p)) return false;
  return !p.slice(1).split('/').some((s) => s === '.' || s === '..');
}

// FNV-1a, 32 bits, over the bytes of QUERY_STRING \n HTTP_COOKIE \n
// HTTP_USER_AGENT, modulo 100: the same "ad" as every other SPI.
function adId(query, cookie, agent) {
  let h = 2166136261;
  for (const b of Buffer.from(`${query}\n${cookie}\n${agent}`, 'latin1')) {
    h = Math.imul(h ^ b, 16777619) >>> 0;
  }
  return h % 100;
}

function sleepMs(qs) {
  for (const part of qs.split('&')) {
    if (part.startsWith('ms=')) {
      const v = part.slice(3);
      if (!/^[0-9]+$/.test(v) || Number(v) > SLEEP_MAX_MS) {
        throw new Fail(400, 'ms must be a whole number of milliseconds, at most 600000');
      }
      return Number(v);
    }
  }
  return SLEEP_DEFAULT_MS;
}

// The flock helper: "L\n" opens the log (creating it 0666) and takes
// LOCK_EX, then answers "L\n"; "U\n" releases and closes it.
const HELPER = `
use strict; use Fcntl qw(:flock O_RDWR O_CREAT);
$| = 1; my $log = shift; my $fh;
while (my $cmd = <STDIN>) {
  if ($cmd eq "L\\n") {
    if (sysopen($fh, $log, O_RDWR | O_CREAT, 0666) && flock($fh, LOCK_EX)) { print "L\\n" } else { print "E\\n" }
  } elsif (defined $fh) { flock($fh, LOCK_UN); close $fh; undef $fh }
}`;

let helper = null;
let waiting = [];
let queue = Promise.resolve();

function startHelper(log) {
  helper = spawn('perl', ['-e', HELPER, log], { stdio: ['pipe', 'pipe', 'inherit'] });
  let buf = '';
  helper.stdout.setEncoding('latin1');
  helper.stdout.on('data', (d) => {
    buf += d;
    let nl;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      const w = waiting.shift();
      if (w) w(line === 'L');
    }
  });
  helper.on('exit', () => {
    helper = null;
    for (const w of waiting.splice(0)) w(false);
  });
}

// Seed 002's session-oriented request, under the flock the helper holds.
function sessionLog(log, file) {
  const run = queue.then(
    () =>
      new Promise((resolve, reject) => {
        if (helper === null) return reject(new Fail(500, 'cannot lock SPICE_SESSION_LOG'));
        waiting.push((locked) => {
          if (!locked) return reject(new Fail(500, 'cannot lock SPICE_SESSION_LOG'));
          try {
            appendLocked(log, file);
            resolve();
          } catch (e) {
            reject(e);
          } finally {
            if (helper !== null) helper.stdin.write('U\n');
          }
        });
        helper.stdin.write('L\n');
      }),
  );
  queue = run.catch(() => {});
  return run;
}

function appendLocked(log, file) {
  let fd;
  try {
    fd = fs.openSync(log, fs.constants.O_RDWR | fs.constants.O_CREAT, 0o666);
  } catch {
    throw new Fail(500, 'cannot open SPICE_SESSION_LOG');
  }
  try {
    const head = Buffer.alloc(COUNTER_LINE);
    const n = fs.readSync(fd, head, 0, COUNTER_LINE, 0);
    let count = 0;
    if (n > 0) {
      const text = head.subarray(0, n).toString('latin1');
      if (!/^[0-9]{12}\n$/.test(text)) throw new Fail(500, 'SPICE_SESSION_LOG does not start with a counter line');
      count = Number(text.slice(0, COUNTER_DIGITS));
    }
    count += 1;
    if (count > 999999999999) throw new Fail(500, 'session counter overflow');
    const counter = Buffer.from(String(count).padStart(COUNTER_DIGITS, '0') + '\n', 'latin1');
    if (fs.writeSync(fd, counter, 0, COUNTER_LINE, 0) !== COUNTER_LINE) {
      throw new Fail(500, 'cannot write the counter of SPICE_SESSION_LOG');
    }
    const stamp = new Date().toISOString().slice(0, 19) + 'Z';
    const line = Buffer.from(`${stamp}\t${process.pid}\t${file}\n`, 'latin1');
    // At the end, under the lock: the append the other programs make with
    // O_APPEND (every writer holds the lock).
    let at = fs.fstatSync(fd).size;
    let off = 0;
    while (off < line.length) {
      const w = fs.writeSync(fd, line, off, line.length - off, at);
      off += w;
      at += w;
    }
  } catch (e) {
    if (e instanceof Fail) throw e;
    throw new Fail(500, 'cannot append to SPICE_SESSION_LOG');
  } finally {
    fs.closeSync(fd);
  }
}

async function handle(req) {
  const method = req.method;
  if (method !== 'GET' && method !== 'HEAD') throw new Fail(405, 'only GET and HEAD');
  const url = req.url;
  const q = url.indexOf('?');
  const rawPath = q < 0 ? url : url.slice(0, q);
  const query = q < 0 ? '' : url.slice(q + 1);
  if (!rawPath.startsWith(PREFIX + '/')) throw new Fail(404, USAGE);
  let pi;
  try {
    // As CGI decodes PATH_INFO; bytes kept as latin1 so none is lost.
    pi = Buffer.from(unescape(rawPath.slice(PREFIX.length)), 'latin1').toString('latin1');
  } catch {
    throw new Fail(400, 'bad file path');
  }
  const slash = pi.indexOf('/', 1);
  const kind = slash < 0 ? pi.slice(1) : pi.slice(1, slash);
  if (kind !== 'adrot' && kind !== 'session' && kind !== 'sleep') throw new Fail(404, USAGE);
  if (slash < 0 || slash === pi.length - 1) throw new Fail(404, 'no file path');
  const file = pi.slice(slash);
  if (!pathOk(file)) throw new Fail(400, 'bad file path');
  const root = process.env.SPICE_ROOT || '';
  if (root === '') throw new Fail(500, 'SPICE_ROOT is not set');
  if (kind === 'sleep') {
    const ms = sleepMs(query);
    await new Promise((r) => setTimeout(r, ms));
  }
  let fd;
  try {
    fd = fs.openSync(Buffer.concat([Buffer.from(root), Buffer.from(file, 'latin1')]), 'r');
  } catch {
    throw new Fail(404, 'no such file');
  }
  try {
    const st = fs.fstatSync(fd);
    if (!st.isFile()) throw new Fail(404, 'no such file');
    if (kind === 'session') {
      const log = process.env.SPICE_SESSION_LOG || '';
      if (log === '') throw new Fail(500, 'SPICE_SESSION_LOG is not set');
      await sessionLog(log, file);
    }
    const body = Buffer.alloc(method === 'HEAD' ? 0 : st.size);
    let got = 0;
    while (got < body.length) {
      const n = fs.readSync(fd, body, got, body.length - got, got);
      if (n === 0) break;
      got += n;
    }
    if (got !== body.length) throw new Fail(500, 'the file changed while it was read');
    const headers = { 'Content-Type': contentType(file), 'Content-Length': String(st.size) };
    if (kind === 'adrot') {
      headers['X-Ad'] = String(adId(query, req.headers.cookie || '', req.headers['user-agent'] || ''));
    }
    return { status: 200, headers, body };
  } finally {
    fs.closeSync(fd);
  }
}

const REASONS = { 400: 'Bad Request', 404: 'Not Found', 405: 'Method Not Allowed', 500: 'Internal Server Error' };

const server = http.createServer((req, res) => {
  handle(req).then(
    (r) => {
      res.writeHead(r.status, r.headers);
      res.end(req.method === 'HEAD' ? undefined : r.body);
    },
    (e) => {
      const f = e instanceof Fail ? e : new Fail(500, String(e && e.message));
      if (f.status >= 500) process.stderr.write(`spice.js[${process.pid}]: ${f.why}\n`);
      const body = Buffer.from(`${f.status} ${REASONS[f.status]}: ${f.why}\n`, 'latin1');
      const headers = { 'Content-Type': 'text/plain', 'Content-Length': String(body.length) };
      if (f.status === 405) headers.Allow = 'GET, HEAD';
      res.writeHead(f.status, headers);
      res.end(req.method === 'HEAD' ? undefined : body);
    },
  );
});
// Keep-alive from the proxy as long as the servers keep theirs.
server.keepAliveTimeout = 75000;

const listen = process.argv[2];
if (!listen) {
  process.stderr.write('usage: node spice.js SOCKET_PATH | 127.0.0.1:PORT\n');
  process.exit(2);
}
if (process.env.SPICE_SESSION_LOG) startHelper(process.env.SPICE_SESSION_LOG);
process.on('SIGTERM', () => {
  if (helper !== null) helper.kill('SIGTERM');
  server.close();
  process.exit(0);
});
if (listen.startsWith('/')) {
  try {
    fs.unlinkSync(listen);
  } catch {}
  // 0666: nginx's (nobody) and Apache's (www-data) workers connect.
  const old = process.umask(0);
  server.listen(listen, () => process.umask(old));
} else {
  const c = listen.lastIndexOf(':');
  server.listen(Number(listen.slice(c + 1)), listen.slice(0, c));
}
