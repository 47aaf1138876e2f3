/*
 * vxd_bench.c - latency of vortexd against the separate-process tool chain.
 *
 *   vxd_bench SOCKET FILE.mlir [MISSES [HITS [CHAIN_RUNS]]]
 *
 * Measured in one run, wall-clock, on whatever machine runs it:
 *   miss  - warm cache-miss compiles through the daemon: the source gets a
 *           unique trailing comment per request, so the key changes while the
 *           compile work stays the same; the workers are warmed up first;
 *   hit   - the same request repeated through libvxc (one connection);
 *   chain - mlir-opt-22 | mlir-translate-22 | opt-22 -O2 | llc-22, each a new
 *           process, fed the LLVM-dialect module vortexd itself lowered (so
 *           the chain does less work than the daemon: no parse of the GPU
 *           dialect, no GPU rewrite; its lowering passes find nothing to do).
 * Prints p50/p99/mean in microseconds and the ratios.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"
#include "client/vxc.h"

static void report(const char *what, double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, bench_cmp);
  double sum = 0;
  for (int i = 0; i < n; i++)
    sum += v[i];
  int p99 = (int)(0.99 * (n - 1) + 0.5);
  printf("%-6s n=%-5d p50 %10.1f us   p99 %10.1f us   mean %10.1f us\n", what, n, v[(n - 1) / 2], v[p99],
         sum / n);
}

static char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  rewind(f);
  char *b = malloc((size_t)n + 64);
  if (fread(b, 1, (size_t)n, f) != (size_t)n) {
    fclose(f);
    free(b);
    return NULL;
  }
  fclose(f);
  *len = (size_t)n;
  return b;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s SOCKET FILE.mlir [MISSES [HITS [CHAIN_RUNS]]]\n", argv[0]);
    return 64;
  }
  int nmiss = argc > 3 ? atoi(argv[3]) : 100, nhit = argc > 4 ? atoi(argv[4]) : 5000;
  int nchain = argc > 5 ? atoi(argv[5]) : 20;
  size_t len;
  char *src = slurp(argv[2], &len);
  if (!src) {
    perror(argv[2]);
    return 2;
  }
  vxc_conn *c;
  if (vxc_connect(argv[1], &c) != 0) {
    fprintf(stderr, "cannot connect to %s\n", argv[1]);
    return 2;
  }
  const vxp_response *hello = vxc_server_info(c);
  printf("server: %s\ninput:  %s (%zu bytes)\n\n", hello ? hello->server : "?", argv[2], len);

  char *var = malloc(len + 64);
  memcpy(var, src, len);
  vxp_response r;
  double *t = malloc(sizeof(double) * (size_t)(nhit > nmiss ? nhit : nmiss));

  /* warm-up: every worker compiles a few times */
  for (int i = 0; i < 8; i++) {
    size_t n = len + (size_t)sprintf(var + len, "\n// warm %d %d\n", getpid(), i);
    vxc_compile(c, var, n, argv[2], NULL, &r);
    vxp_response_clear(&r);
  }
  for (int i = 0; i < nmiss; i++) {
    size_t n = len + (size_t)sprintf(var + len, "\n// miss %d %ld %d\n", getpid(), (long)time(NULL), i);
    double t0 = bench_now_us();
    if (vxc_compile(c, var, n, argv[2], NULL, &r) != 0 || r.status != VXP_STATUS_OK || r.cached) {
      fprintf(stderr, "miss %d failed\n", i);
      return 1;
    }
    t[i] = bench_now_us() - t0;
    vxp_response_clear(&r);
  }
  report("miss", t, nmiss);
  double miss_p50 = t[(nmiss - 1) / 2];

  vxc_compile(c, src, len, argv[2], NULL, &r); /* make sure it is stored */
  vxp_response_clear(&r);
  for (int i = 0; i < nhit; i++) {
    double t0 = bench_now_us();
    if (vxc_compile(c, src, len, argv[2], NULL, &r) != 0 || !r.cached) {
      fprintf(stderr, "hit %d was not a hit\n", i);
      return 1;
    }
    t[i] = bench_now_us() - t0;
    vxp_response_clear(&r);
  }
  report("hit", t, nhit);

  /* the tool chain, on the module vortexd lowered */
  vxc_compile_options o = {.opt_level = 2, .emit_ir = 1};
  if (vxc_compile(c, src, len, argv[2], &o, &r) != 0 || !r.lowered_ir) return 1;
  for (int i = 0; i < nchain; i++) {
    t[i] = bench_chain_us(r.lowered_ir);
    if (t[i] < 0) return 1;
  }
  vxp_response_clear(&r);
  report("chain", t, nchain);
  double chain_p50 = t[(nchain - 1) / 2];
  printf("\nmiss is %.1fx faster than the tool chain (p50)\n", chain_p50 / miss_p50);
  vxc_close(c);
  free(t);
  free(var);
  free(src);
  return 0;
}
