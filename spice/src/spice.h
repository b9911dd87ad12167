/* SPICE programs: the work shared by every SPI front end (CGI, FastCGI).
 *
 * A SPICE program does the minimum work for its SPI and returns exactly the
 * bytes of the static file its URL names (seed 001). URL layout (docs/spice.md,
 * "URL layout"), the same on every server:
 *
 *   /spice/<spi>/adrot/<file path>      ad rotation
 *   /spice/<spi>/session/<file path>    session-oriented (locked log file)
 *   /spice/<spi>/sleep/<file path>?ms=N slow back end (default 3000 ms)
 *
 * The server maps /spice/<spi> to the program, so PATH_INFO is
 * "/<kind>/<file path>". Configuration comes from the environment (or, for
 * FastCGI, from the request's parameters first):
 *
 *   SPICE_ROOT         the document root (a benchlab file set)
 *   SPICE_SESSION_LOG  the session log (one per server)
 */
#ifndef SPICE_H
#define SPICE_H

#include <stddef.h>

/* Looks up a request variable (CGI meta-variable or FastCGI parameter);
 * NULL when absent. */
typedef const char *(*spice_getenv_fn)(void *ctx, const char *name);

struct spice_response {
    int status;        /* 200, 400, 404, 405 or 500 */
    char head[512];    /* CGI header block, blank line included */
    size_t head_len;
    char *body;        /* the file's bytes (malloc'd) or a static message */
    size_t body_len;
    int body_owned;    /* body must be freed */
    int send_body;     /* 0 for HEAD */
};

/* Handles one request: validates the path, does the kind's work (ad
 * rotation, session log, sleep) and fills `resp`. Never fails as a
 * function: errors become 4xx/5xx responses (and a line on stderr). */
void spice_handle(spice_getenv_fn getenv_fn, void *ctx, struct spice_response *resp);

/* Frees what spice_handle allocated. */
void spice_response_free(struct spice_response *resp);

/* Exposed for the FastCGI front end's fallback to the process environment
 * for the two configuration variables. */
const char *spice_config(spice_getenv_fn getenv_fn, void *ctx, const char *name);

#endif
