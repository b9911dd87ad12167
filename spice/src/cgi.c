/* SPICE as a CGI program in C (spi `cgi-c`): the fastest CGI there is, as
 * seed 001 chose, so a CGI run measures the SPI's overhead and little else.
 * One process per request; the server sets the CGI meta-variables. */
#include "spice.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/uio.h>
#include <unistd.h>

static const char *cgi_getenv(void *ctx, const char *name)
{
    (void)ctx;
    return getenv(name);
}

int main(void)
{
    struct spice_response r;
    spice_handle(cgi_getenv, NULL, &r);
    struct iovec iov[2] = {
        {r.head, r.head_len},
        {r.body, r.send_body ? r.body_len : 0},
    };
    int n_iov = 2;
    struct iovec *v = iov;
    while (n_iov > 0) {
        ssize_t n = writev(STDOUT_FILENO, v, n_iov);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return 1;
        }
        while (n_iov > 0 && (size_t)n >= v->iov_len) {
            n -= (ssize_t)v->iov_len;
            v++;
            n_iov--;
        }
        if (n_iov > 0) {
            v->iov_base = (char *)v->iov_base + n;
            v->iov_len -= (size_t)n;
        }
    }
    spice_response_free(&r);
    return 0;
}
