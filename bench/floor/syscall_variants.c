// Thread CPU a request/response exchange on loopback TCP, two ways at once,
// in interleaved rounds (issue 27: does benchlab's choice of system call
// cost it system time against the floor?).
//   syscall_variants io       client write+read    vs send(MSG_NOSIGNAL)+recv
//   syscall_variants nodelay  client TCP_NODELAY   vs Nagle on (send+recv)
// Each exchange: the client sends 40 bytes, the server end reads them and
// answers 4,336 bytes (nginx's 4 KiB response), the client reads them; both
// ends on this thread, so the figure is the kernel's whole path. Prints the
// medians of 15 rounds of 50,000 exchanges and of the per-round ratio.
// Build: gcc -O2 -o syscall_variants bench/floor/syscall_variants.c
// Run pinned: taskset -c 0 ./syscall_variants io
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
static double cpu_ns(void) { struct timespec t; clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t); return t.tv_sec * 1e9 + t.tv_nsec; }
static int cmp(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return x < y ? -1 : x > y; }
static void pair(int l, struct sockaddr_in *a, int nodelay, int *c, int *s) {
  *c = socket(AF_INET, SOCK_STREAM, 0);
  if (connect(*c, (void *)a, sizeof *a)) { perror("connect"); exit(1); }
  *s = accept(l, 0, 0);
  int one = 1;
  if (nodelay) setsockopt(*c, IPPROTO_TCP, TCP_NODELAY, &one, 4);
  setsockopt(*s, IPPROTO_TCP, TCP_NODELAY, &one, 4);
}
int main(int argc, char **argv) {
  int nodelay_mode = argc > 1 && strcmp(argv[1], "nodelay") == 0;
  if (argc < 2 || (!nodelay_mode && strcmp(argv[1], "io") != 0)) { fprintf(stderr, "usage: %s io|nodelay\n", argv[0]); return 2; }
  int l = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET};
  a.sin_addr.s_addr = htonl(0x7f000001);
  socklen_t n = sizeof a;
  if (bind(l, (void *)&a, sizeof a) || listen(l, 2) || getsockname(l, (void *)&a, &n)) { perror("listen"); return 1; }
  int c[2], s[2];
  pair(l, &a, 1, &c[0], &s[0]);
  pair(l, &a, !nodelay_mode, &c[1], &s[1]);
  static char buf[1 << 16];
  char req[40] = {0};
  enum { R = 15, N = 50000 };
  double t[2][R], ratio[R];
  for (int r = 0; r < R; r++) {
    for (int m = 0; m < 2; m++) {
      double t0 = cpu_ns();
      for (int i = 0; i < N; i++) {
        if (!nodelay_mode && m == 0) {
          write(c[m], req, sizeof req); read(s[m], buf, sizeof buf);
          write(s[m], buf, 4336); read(c[m], buf, sizeof buf);
        } else {
          send(c[m], req, sizeof req, MSG_NOSIGNAL); recv(s[m], buf, sizeof buf, 0);
          send(s[m], buf, 4336, MSG_NOSIGNAL); recv(c[m], buf, sizeof buf, 0);
        }
      }
      t[m][r] = (cpu_ns() - t0) / N;
    }
    ratio[r] = t[0][r] / t[1][r];
  }
  qsort(t[0], R, sizeof(double), cmp); qsort(t[1], R, sizeof(double), cmp); qsort(ratio, R, sizeof(double), cmp);
  printf("%s: %.0f ns an exchange, %s: %.0f ns (medians of %d rounds of %d); per-round ratio %.3f (%.3f-%.3f)\n",
         nodelay_mode ? "TCP_NODELAY" : "write+read", t[0][R / 2], nodelay_mode ? "Nagle" : "send+recv", t[1][R / 2],
         R, N, ratio[R / 2], ratio[0], ratio[R - 1]);
  return 0;
}
