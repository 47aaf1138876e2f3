/*
 * vxd_cold.c - cold start: from starting vortexd to its first answered
 * compile, against a warm miss of the same daemon.
 *
 *   vxd_cold VORTEXD FILE.mlir [RUNS]      (default 5 runs)
 *
 * Each run starts VORTEXD on a fresh socket and cache, polls the socket
 * every 0.5 ms until it accepts (socket ready), sends one compile (a miss:
 * first answer), then a second with another trailing comment (a warm
 * miss).  Prints per run and the medians, in milliseconds.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_util.h"
#include "client/vxc.h"

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s VORTEXD FILE.mlir [RUNS]\n", argv[0]);
    return 64;
  }
  int runs = argc > 3 ? atoi(argv[3]) : 5;
  FILE *f = fopen(argv[2], "rb");
  if (!f) {
    perror(argv[2]);
    return 2;
  }
  static char src[1 << 20];
  size_t len = fread(src, 1, sizeof src - 64, f);
  fclose(f);
  double *ready = malloc(sizeof(double) * (size_t)runs), *first = malloc(sizeof(double) * (size_t)runs);
  double *warm = malloc(sizeof(double) * (size_t)runs), *ratio = malloc(sizeof(double) * (size_t)runs);
  printf("%4s %14s %16s %14s %18s\n", "run", "socket ms", "first answer ms", "warm miss ms",
         "first-after-socket/warm");
  for (int r = 0; r < runs; r++) {
    char dir[] = "/tmp/vxd-cold-XXXXXX";
    if (!mkdtemp(dir)) return 2;
    char sock[128], cache[128];
    snprintf(sock, sizeof sock, "%s/s.sock", dir);
    snprintf(cache, sizeof cache, "%s/cache", dir);
    double t0 = bench_now_us();
    pid_t pid = fork();
    if (pid == 0) {
      freopen("/dev/null", "w", stderr);
      execl(argv[1], argv[1], "--socket", sock, "--cache-dir", cache, (char *)NULL);
      _exit(127);
    }
    vxc_conn *c = NULL;
    for (int i = 0; i < 20000 && vxc_connect(sock, &c) != 0; i++)
      usleep(500);
    if (!c) {
      fprintf(stderr, "vortexd did not start\n");
      return 1;
    }
    double t1 = bench_now_us();
    vxp_response resp;
    size_t n = len + (size_t)sprintf(src + len, "\n// cold %d\n", r);
    if (vxc_compile(c, src, n, argv[2], NULL, &resp) != 0 || resp.status != VXP_STATUS_OK) return 1;
    vxp_response_clear(&resp);
    double t2 = bench_now_us();
    n = len + (size_t)sprintf(src + len, "\n// warm %d\n", r);
    if (vxc_compile(c, src, n, argv[2], NULL, &resp) != 0 || resp.status != VXP_STATUS_OK) return 1;
    vxp_response_clear(&resp);
    double t3 = bench_now_us();
    vxc_close(c);
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) return 2;
    ready[r] = (t1 - t0) / 1e3;
    first[r] = (t2 - t0) / 1e3;
    warm[r] = (t3 - t2) / 1e3;
    ratio[r] = (t2 - t1) / (t3 - t2);
    printf("%4d %14.1f %16.1f %14.1f %17.2fx\n", r, ready[r], first[r], warm[r], ratio[r]);
  }
  printf("%4s %14.1f %16.1f %14.1f %17.2fx\n", "p50", bench_median(ready, runs), bench_median(first, runs),
         bench_median(warm, runs), bench_median(ratio, runs));
  free(ready);
  free(first);
  free(warm);
  free(ratio);
  return 0;
}
