/* SPICE as a FastCGI application in C with libfcgi (spi `fastcgi`): a
 * long-lived process answers request after request, one at a time; run
 * several for concurrency.
 *
 *   fastcgi              accept on fd 0 (spawn-fcgi, lighttpd's bin-path)
 *   fastcgi SOCKET       listen on SOCKET itself: a unix socket path, or
 *                        ":PORT" / "HOST:PORT" for TCP
 *
 * SPICE_FCGI_CHILDREN=N (N > 1) makes the process a supervisor that forks N
 * workers accepting on the same socket, restarts a worker that dies, and
 * stops them all on SIGTERM/SIGINT/SIGHUP; workers also die with it. So
 * `SPICE_FCGI_CHILDREN=4 spawn-fcgi -n -s SOCK -- fastcgi` is one
 * foreground process tree (for a supervisor or a test), where
 * `spawn-fcgi -F 4 -s SOCK -- fastcgi` leaves 4 detached processes.
 *
 * SPICE_ROOT and SPICE_SESSION_LOG are read from each request's parameters
 * (fastcgi_param, SetEnv, setenv.add-environment) and, when a request does
 * not carry them, from the process environment. */
#define _GNU_SOURCE
#include "spice.h"

#include <errno.h>
#include <fcgiapp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#define MAX_CHILDREN 1024

static const char *fcgi_getenv(void *ctx, const char *name)
{
    return FCGX_GetParam(name, ((FCGX_Request *)ctx)->envp);
}

static volatile sig_atomic_t stopping;

static void on_stop(int sig)
{
    (void)sig;
    stopping = 1;
}

/* Returns in each worker; the supervisor never returns. */
static void supervise(int n)
{
    pid_t parent = getpid();
    pid_t kids[MAX_CHILDREN] = {0};
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);

    for (;;) {
        for (int i = 0; i < n && !stopping; i++) {
            if (kids[i] != 0)
                continue;
            pid_t p = fork();
            if (p == 0) {
                signal(SIGTERM, SIG_DFL);
                signal(SIGINT, SIG_DFL);
                signal(SIGHUP, SIG_DFL);
#ifdef __linux__
                prctl(PR_SET_PDEATHSIG, SIGTERM);
#endif
                if (getppid() != parent)
                    _exit(0);
                return;
            }
            if (p < 0) {
                perror("spice fastcgi: fork");
                break;
            }
            kids[i] = p;
        }
        if (stopping)
            break;
        int status;
        pid_t p = wait(&status);
        if (p < 0) {
            if (errno == EINTR)
                continue;
            sleep(1); /* ECHILD after failed forks: try again */
            continue;
        }
        for (int i = 0; i < n; i++)
            if (kids[i] == p)
                kids[i] = 0;
        if (!stopping) {
            fprintf(stderr, "spice fastcgi: worker %ld ended (status %d), starting another\n", (long)p, status);
            struct timespec pause = {0, 100 * 1000 * 1000};
            nanosleep(&pause, NULL);
        }
    }
    for (int i = 0; i < n; i++)
        if (kids[i] != 0)
            kill(kids[i], SIGTERM);
    while (wait(NULL) > 0 || errno == EINTR)
        ;
    exit(0);
}

int main(int argc, char **argv)
{
    int listen_fd = 0;
    if (argc > 2 || (argc == 2 && argv[1][0] == '-')) {
        fprintf(stderr, "usage: %s [SOCKET]  (unix socket path, :PORT or HOST:PORT; default: fd 0)\n", argv[0]);
        return 2;
    }
    if (FCGX_Init() != 0) {
        fprintf(stderr, "spice fastcgi: FCGX_Init failed\n");
        return 1;
    }
    if (argc == 2) {
        listen_fd = FCGX_OpenSocket(argv[1], 1024);
        if (listen_fd < 0) {
            fprintf(stderr, "spice fastcgi: cannot listen on %s\n", argv[1]);
            return 1;
        }
    } else if (FCGX_IsCGI()) {
        fprintf(stderr, "spice fastcgi: fd 0 is not a listening socket: start it with spawn-fcgi, "
                        "from a server that spawns FastCGI programs, or give a SOCKET\n");
        return 2;
    }

    const char *children = getenv("SPICE_FCGI_CHILDREN");
    if (children != NULL && *children) {
        char *end;
        long n = strtol(children, &end, 10);
        if (*end != '\0' || n < 1 || n > MAX_CHILDREN) {
            fprintf(stderr, "spice fastcgi: SPICE_FCGI_CHILDREN must be 1..%d\n", MAX_CHILDREN);
            return 2;
        }
        if (n > 1)
            supervise((int)n);
    }

    FCGX_Request req;
    if (FCGX_InitRequest(&req, listen_fd, 0) != 0)
        return 1;
    while (FCGX_Accept_r(&req) >= 0) {
        struct spice_response r;
        spice_handle(fcgi_getenv, &req, &r);
        FCGX_PutStr(r.head, (int)r.head_len, req.out);
        if (r.send_body && r.body_len > 0)
            FCGX_PutStr(r.body, (int)r.body_len, req.out);
        spice_response_free(&r);
        FCGX_Finish_r(&req);
    }
    return 0;
}
