<?php
// SPICE under PHP-FPM (spi `php-fpm`): the same work as the C programs
// (../src/spice.c), in PHP, run by long-lived PHP-FPM workers (one request
// at a time each) behind the server's FastCGI client.
//
// URL layout (docs/spice.md, "URL layout"): the server maps /spice/php-fpm
// to this script, so PATH_INFO is "/<kind>/<file path>" with kind adrot,
// session or sleep (?ms=N, default 3000). SPICE_ROOT is the document root,
// SPICE_SESSION_LOG the session log, from the request's FastCGI parameters
// (else the environment). The body is exactly the file's bytes.

const SLEEP_DEFAULT_MS = 3000;
const SLEEP_MAX_MS = 600000;
const COUNTER_DIGITS = 12;
const COUNTER_LINE = COUNTER_DIGITS + 1;
const TYPES = [
    'html' => 'text/html',
    'htm' => 'text/html',
    'txt' => 'text/plain',
    'css' => 'text/css',
    'js' => 'application/javascript',
    'json' => 'application/json',
    'xml' => 'application/xml',
    'png' => 'image/png',
    'jpg' => 'image/jpeg',
    'jpeg' => 'image/jpeg',
    'gif' => 'image/gif',
    'svg' => 'image/svg+xml',
];
const REASONS = [
    200 => 'OK',
    400 => 'Bad Request',
    404 => 'Not Found',
    405 => 'Method Not Allowed',
    500 => 'Internal Server Error',
];

// PHP adds "; charset=UTF-8" to a text/* Content-Type by default: the
// static response has none, and the headers should match it.
ini_set('default_charset', '');

final class Fail extends Exception
{
    public function __construct(public int $status, public string $why)
    {
        parent::__construct($why);
    }
}

function param(string $name): string
{
    $v = $_SERVER[$name] ?? getenv($name);
    return is_string($v) ? $v : '';
}

function content_type(string $path): string
{
    $name = substr($path, strrpos($path, '/') + 1);
    $dot = strrpos($name, '.');
    if ($dot === false) {
        return 'application/octet-stream';
    }
    return TYPES[strtolower(substr($name, $dot + 1))] ?? 'application/octet-stream';
}

// Starts with '/', names something below the root, no "." or ".."
// segment, no control character (which would tear a session log line).
function path_ok(string $p): bool
{
    if ($p === '' || $p[0] !== '/' || $p === '/') {
        return false;
    }
    if (preg_match('/[\x00-\x1f\x7f]/', $p)) {
        return false;
    }
    foreach (explode('/', substr($p, 1)) as $seg) {
        if ($seg === '.' || $seg === '..') {
            return false;
        }
    }
    return true;
}

// FNV-1a, 32 bits, over QUERY_STRING \n HTTP_COOKIE \n HTTP_USER_AGENT,
// modulo 100: the same "ad" as every other SPI.
function ad_id(): int
{
    $h = 2166136261;
    $s = param('QUERY_STRING') . "\n" . param('HTTP_COOKIE') . "\n" . param('HTTP_USER_AGENT');
    $n = strlen($s);
    for ($i = 0; $i < $n; $i++) {
        $h = (($h ^ ord($s[$i])) * 16777619) & 0xFFFFFFFF;
    }
    return $h % 100;
}

function sleep_ms(string $qs): int
{
    foreach (explode('&', $qs) as $part) {
        if (strncmp($part, 'ms=', 3) === 0) {
            $v = substr($part, 3);
            if (!preg_match('/\A[0-9]+\z/', $v) || (float) $v > SLEEP_MAX_MS) {
                throw new Fail(400, 'ms must be a whole number of milliseconds, at most 600000');
            }
            return (int) $v;
        }
    }
    return SLEEP_DEFAULT_MS;
}

// Seed 002's session-oriented request: open the log, lock it (flock(2), as
// the C, Python and Perl programs do: one lock for every SPI on the
// server), increment the counter in place, append a line with time,
// process id and file, unlock.
function session_log(string $log, string $file): void
{
    $fh = @fopen($log, 'c+b');
    if ($fh === false) {
        throw new Fail(500, 'cannot open SPICE_SESSION_LOG');
    }
    try {
        if (!flock($fh, LOCK_EX)) {
            throw new Fail(500, 'cannot lock SPICE_SESSION_LOG');
        }
        try {
            $head = fread($fh, COUNTER_LINE);
            if ($head === false) {
                throw new Fail(500, 'cannot read SPICE_SESSION_LOG');
            }
            $count = 0;
            if ($head !== '') {
                if (!preg_match('/\A[0-9]{12}\n\z/', $head)) {
                    throw new Fail(500, 'SPICE_SESSION_LOG does not start with a counter line');
                }
                $count = (int) substr($head, 0, COUNTER_DIGITS);
            }
            $count++;
            if ($count > 999999999999) {
                throw new Fail(500, 'session counter overflow');
            }
            if (fseek($fh, 0) !== 0 || fwrite($fh, sprintf("%012d\n", $count)) !== COUNTER_LINE) {
                throw new Fail(500, 'cannot write the counter of SPICE_SESSION_LOG');
            }
            // At the end under the lock: every writer holds it, so this is
            // the append the other programs make with O_APPEND.
            $line = gmdate('Y-m-d\TH:i:s\Z') . "\t" . getmypid() . "\t" . $file . "\n";
            if (fseek($fh, 0, SEEK_END) !== 0 || fwrite($fh, $line) !== strlen($line) || !fflush($fh)) {
                throw new Fail(500, 'cannot append to SPICE_SESSION_LOG');
            }
        } finally {
            flock($fh, LOCK_UN);
        }
    } finally {
        fclose($fh);
    }
}

function handle(): void
{
    $method = param('REQUEST_METHOD');
    if ($method === '') {
        $method = 'GET';
    }
    if ($method !== 'GET' && $method !== 'HEAD') {
        throw new Fail(405, 'only GET and HEAD');
    }
    $pi = param('PATH_INFO');
    $usage = 'expected /spice/<spi>/{adrot,session,sleep}/<file path>';
    if ($pi === '' || $pi[0] !== '/') {
        throw new Fail(404, $usage);
    }
    $parts = explode('/', substr($pi, 1), 2);
    $kind = $parts[0];
    if ($kind !== 'adrot' && $kind !== 'session' && $kind !== 'sleep') {
        throw new Fail(404, $usage);
    }
    $rest = $parts[1] ?? '';
    if ($rest === '') {
        throw new Fail(404, 'no file path');
    }
    $file = '/' . $rest;
    if (!path_ok($file)) {
        throw new Fail(400, 'bad file path');
    }
    $root = param('SPICE_ROOT');
    if ($root === '') {
        throw new Fail(500, 'SPICE_ROOT is not set');
    }
    if ($kind === 'sleep') {
        usleep(sleep_ms(param('QUERY_STRING')) * 1000);
    }
    $fh = @fopen($root . $file, 'rb');
    if ($fh === false) {
        throw new Fail(404, 'no such file');
    }
    try {
        $st = fstat($fh);
        if ($st === false || ($st['mode'] & 0170000) !== 0100000) {
            throw new Fail(404, 'no such file');
        }
        if ($kind === 'session') {
            $log = param('SPICE_SESSION_LOG');
            if ($log === '') {
                throw new Fail(500, 'SPICE_SESSION_LOG is not set');
            }
            session_log($log, $file);
        }
        $size = $st['size'];
        $body = '';
        if ($method !== 'HEAD') {
            $body = $size > 0 ? stream_get_contents($fh, $size) : '';
            if ($body === false || strlen($body) !== $size) {
                throw new Fail(500, 'the file changed while it was read');
            }
        }
    } finally {
        fclose($fh);
    }
    http_response_code(200);
    header('Content-Type: ' . content_type($file));
    header('Content-Length: ' . $size);
    if ($kind === 'adrot') {
        header('X-Ad: ' . ad_id());
    }
    echo $body;
}

try {
    handle();
} catch (Fail $f) {
    if ($f->status >= 500) {
        error_log('spice.php[' . getmypid() . ']: ' . $f->why);
    }
    $body = $f->status . ' ' . REASONS[$f->status] . ': ' . $f->why . "\n";
    http_response_code($f->status);
    header('Content-Type: text/plain');
    header('Content-Length: ' . strlen($body));
    if ($f->status === 405) {
        header('Allow: GET, HEAD');
    }
    echo $body;
}
