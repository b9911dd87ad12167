/* SPICE programs: request handling shared by the CGI and FastCGI front ends.
 * See spice.h and ../README.md. */
#define _GNU_SOURCE
#include "spice.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Default and largest delay of the sleep variant (c't 1999 slept 3 s). */
#define SLEEP_DEFAULT_MS 3000UL
#define SLEEP_MAX_MS 600000UL
/* Session log: first line is the counter, 12 zero-padded digits + '\n'. */
#define COUNTER_DIGITS 12
#define COUNTER_LINE (COUNTER_DIGITS + 1)

const char *spice_config(spice_getenv_fn getenv_fn, void *ctx, const char *name)
{
    const char *v = getenv_fn(ctx, name);
    if (v == NULL || *v == '\0')
        v = getenv(name);
    return (v != NULL && *v != '\0') ? v : NULL;
}

static const char *content_type(const char *path)
{
    static const struct {
        const char *ext, *type;
    } types[] = {
        {"html", "text/html"},
        {"htm", "text/html"},
        {"txt", "text/plain"},
        {"css", "text/css"},
        {"js", "application/javascript"},
        {"json", "application/json"},
        {"xml", "application/xml"},
        {"png", "image/png"},
        {"jpg", "image/jpeg"},
        {"jpeg", "image/jpeg"},
        {"gif", "image/gif"},
        {"svg", "image/svg+xml"},
    };
    const char *slash = strrchr(path, '/');
    const char *dot = strrchr(path, '.');
    if (dot != NULL && (slash == NULL || dot > slash)) {
        for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
            if (strcasecmp(dot + 1, types[i].ext) == 0)
                return types[i].type;
    }
    return "application/octet-stream";
}

static const char *reason(int status)
{
    switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    default: return "Internal Server Error";
    }
}

/* An error response with a short text body. */
static void fail(struct spice_response *r, int status, const char *why)
{
    static char msg[160];
    if (status >= 500)
        fprintf(stderr, "spice[%ld]: %s\n", (long)getpid(), why);
    int n = snprintf(msg, sizeof msg, "%d %s: %s\n", status, reason(status), why);
    if (n < 0 || (size_t)n >= sizeof msg)
        n = (int)strlen(msg);
    if (r->body_owned)
        free(r->body);
    r->status = status;
    r->body = msg;
    r->body_len = (size_t)n;
    r->body_owned = 0;
    r->head_len = (size_t)snprintf(r->head, sizeof r->head,
                                   "Status: %d %s\r\nContent-Type: text/plain\r\n"
                                   "Content-Length: %zu\r\n%s\r\n",
                                   status, reason(status), r->body_len,
                                   status == 405 ? "Allow: GET, HEAD\r\n" : "");
}

/* A file path from the URL: starts with '/', names something below the
 * root, no "." or ".." segment, no control character (which would tear a
 * session log line). */
static int path_ok(const char *p)
{
    if (p[0] != '/' || p[1] == '\0')
        return 0;
    for (const char *c = p; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f)
            return 0;
    for (const char *s = p; *s;) {
        s++; /* skip '/' */
        size_t len = strcspn(s, "/");
        if ((len == 1 && s[0] == '.') || (len == 2 && s[0] == '.' && s[1] == '.'))
            return 0;
        s += len;
    }
    return 1;
}

/* FNV-1a, 32 bits: the "ad id" is derived from the request's environment so
 * that reading it cannot be skipped; every SPI computes the same number. */
static uint32_t fnv1a(uint32_t h, const char *s)
{
    for (; s && *s; s++) {
        h ^= (unsigned char)*s;
        h *= 16777619u;
    }
    return h;
}

static unsigned ad_id(spice_getenv_fn getenv_fn, void *ctx)
{
    uint32_t h = 2166136261u;
    h = fnv1a(h, getenv_fn(ctx, "QUERY_STRING"));
    h = fnv1a(h, "\n");
    h = fnv1a(h, getenv_fn(ctx, "HTTP_COOKIE"));
    h = fnv1a(h, "\n");
    h = fnv1a(h, getenv_fn(ctx, "HTTP_USER_AGENT"));
    return h % 100u;
}

/* The `ms` query parameter of the sleep variant; -1 when malformed. */
static long sleep_ms(const char *qs)
{
    if (qs == NULL)
        return (long)SLEEP_DEFAULT_MS;
    for (const char *p = qs; *p;) {
        size_t len = strcspn(p, "&");
        if (len >= 3 && strncmp(p, "ms=", 3) == 0) {
            unsigned long v = 0;
            if (len == 3)
                return -1;
            for (size_t i = 3; i < len; i++) {
                if (p[i] < '0' || p[i] > '9')
                    return -1;
                v = v * 10 + (unsigned long)(p[i] - '0');
                if (v > SLEEP_MAX_MS)
                    return -1;
            }
            return (long)v;
        }
        p += len;
        if (*p == '&')
            p++;
    }
    return (long)SLEEP_DEFAULT_MS;
}

static void sleep_for(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static int write_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, buf, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Seed 002's session-oriented request: open the log file, lock it,
 * increment the counter in it, append a line with time, process id and
 * the file, unlock. Returns NULL on success, else what went wrong. */
static const char *session_log(const char *log, const char *file)
{
    const char *err = NULL;
    int fd = open(log, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd < 0)
        return "cannot open SPICE_SESSION_LOG";
    while (flock(fd, LOCK_EX) != 0) {
        if (errno != EINTR) {
            close(fd);
            return "cannot lock SPICE_SESSION_LOG";
        }
    }

    char buf[COUNTER_LINE + 1];
    ssize_t n;
    do
        n = pread(fd, buf, COUNTER_LINE, 0);
    while (n < 0 && errno == EINTR);
    uint64_t count = 0;
    if (n < 0) {
        err = "cannot read SPICE_SESSION_LOG";
        goto out;
    }
    if (n > 0) { /* empty file: a new log with counter 0 */
        if (n != COUNTER_LINE || buf[COUNTER_DIGITS] != '\n') {
            err = "SPICE_SESSION_LOG does not start with a counter line";
            goto out;
        }
        for (int i = 0; i < COUNTER_DIGITS; i++) {
            if (buf[i] < '0' || buf[i] > '9') {
                err = "SPICE_SESSION_LOG does not start with a counter line";
                goto out;
            }
            count = count * 10 + (uint64_t)(buf[i] - '0');
        }
    }
    count++;
    if (count > 999999999999ULL) {
        err = "session counter overflow";
        goto out;
    }
    snprintf(buf, sizeof buf, "%012" PRIu64 "\n", count);
    /* The counter is rewritten in place. The fd is opened without O_APPEND
     * because Linux's pwrite() appends on an O_APPEND fd, whatever the
     * offset; O_APPEND is switched on afterwards for the line. */
    if (pwrite(fd, buf, COUNTER_LINE, 0) != COUNTER_LINE) {
        err = "cannot write the counter of SPICE_SESSION_LOG";
        goto out;
    }

    char line[4200];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    size_t len = strftime(line, sizeof line, "%Y-%m-%dT%H:%M:%SZ", &tm);
    int m = snprintf(line + len, sizeof line - len, "\t%ld\t%s\n", (long)getpid(), file);
    if (m < 0 || (size_t)m >= sizeof line - len) {
        err = "file path too long for the session log";
        goto out;
    }
    len += (size_t)m;
    if (fcntl(fd, F_SETFL, O_APPEND) != 0 || write_all(fd, line, len) != 0)
        err = "cannot append to SPICE_SESSION_LOG";
out:
    flock(fd, LOCK_UN);
    close(fd);
    return err;
}

enum kind { ADROT, SESSION, SLEEP };

void spice_handle(spice_getenv_fn getenv_fn, void *ctx, struct spice_response *r)
{
    memset(r, 0, sizeof *r);
    r->send_body = 1;

    const char *method = getenv_fn(ctx, "REQUEST_METHOD");
    if (method != NULL && strcmp(method, "HEAD") == 0)
        r->send_body = 0;
    else if (method != NULL && *method && strcmp(method, "GET") != 0) {
        fail(r, 405, "only GET and HEAD");
        return;
    }

    /* PATH_INFO = "/<kind>/<file path>" */
    const char *pi = getenv_fn(ctx, "PATH_INFO");
    if (pi == NULL || pi[0] != '/') {
        fail(r, 404, "expected /spice/<spi>/{adrot,session,sleep}/<file path>");
        return;
    }
    const char *file = strchr(pi + 1, '/');
    size_t klen = file ? (size_t)(file - pi - 1) : strlen(pi + 1);
    enum kind kind;
    if (klen == 5 && strncmp(pi + 1, "adrot", 5) == 0)
        kind = ADROT;
    else if (klen == 7 && strncmp(pi + 1, "session", 7) == 0)
        kind = SESSION;
    else if (klen == 5 && strncmp(pi + 1, "sleep", 5) == 0)
        kind = SLEEP;
    else {
        fail(r, 404, "expected /spice/<spi>/{adrot,session,sleep}/<file path>");
        return;
    }
    if (file == NULL || file[1] == '\0') {
        fail(r, 404, "no file path");
        return;
    }
    if (!path_ok(file)) {
        fail(r, 400, "bad file path");
        return;
    }

    const char *root = spice_config(getenv_fn, ctx, "SPICE_ROOT");
    if (root == NULL) {
        fail(r, 500, "SPICE_ROOT is not set");
        return;
    }

    long ms = 0;
    if (kind == SLEEP) {
        ms = sleep_ms(getenv_fn(ctx, "QUERY_STRING"));
        if (ms < 0) {
            fail(r, 400, "ms must be a whole number of milliseconds, at most 600000");
            return;
        }
        sleep_for(ms);
    }

    size_t rlen = strlen(root), flen = strlen(file);
    char *path = malloc(rlen + flen + 1);
    if (path == NULL) {
        fail(r, 500, "out of memory");
        return;
    }
    memcpy(path, root, rlen);
    memcpy(path + rlen, file, flen + 1);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    free(path);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        if (fd >= 0)
            close(fd);
        fail(r, 404, "no such file");
        return;
    }

    if (kind == SESSION) {
        const char *log = spice_config(getenv_fn, ctx, "SPICE_SESSION_LOG");
        const char *err = log ? session_log(log, file) : "SPICE_SESSION_LOG is not set";
        if (err != NULL) {
            close(fd);
            fail(r, 500, err);
            return;
        }
    }

    size_t size = (size_t)st.st_size;
    if (r->send_body) {
        r->body = malloc(size ? size : 1);
        if (r->body == NULL) {
            close(fd);
            fail(r, 500, "out of memory");
            return;
        }
        r->body_owned = 1;
        size_t got = 0;
        while (got < size) {
            ssize_t n = read(fd, r->body + got, size - got);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                break;
            got += (size_t)n;
        }
        if (got != size) {
            close(fd);
            fail(r, 500, "the file changed while it was read");
            return;
        }
        r->body_len = size;
    }
    close(fd);

    char ad[32] = "";
    if (kind == ADROT)
        snprintf(ad, sizeof ad, "X-Ad: %u\r\n", ad_id(getenv_fn, ctx));
    r->status = 200;
    r->head_len = (size_t)snprintf(r->head, sizeof r->head,
                                   "Status: 200 OK\r\nContent-Type: %s\r\n"
                                   "Content-Length: %zu\r\n%s\r\n",
                                   content_type(file), size, ad);
}

void spice_response_free(struct spice_response *r)
{
    if (r->body_owned)
        free(r->body);
    r->body = NULL;
    r->body_owned = 0;
}
