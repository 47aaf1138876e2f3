/*
 * vxd_remote.c - the shared second cache level, measured (bench/remote.sh
 * starts redis-server and the daemons).
 *
 *   vxd_remote latency K SOCK_A SOCK_B
 *       A compiles K distinct kernels (misses, written to Redis); B, with an
 *       empty cache of its own, compiles them again (L2 hits), then once
 *       more (L1 hits).  Prints p50 / p99 of each kind, in microseconds,
 *       one client connection each.
 *   vxd_remote farm K SOCK...
 *       Every daemon (a machine of a farm) compiles the same K kernels at
 *       the same time, each from its own client process and in its own
 *       order; prints the compiles done against the N x K asked, i.e. the
 *       compile-avoided rate (ideal: 1 - 1/N), and the wall time.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_util.h"
#include "client/vxc.h"
#include "protocol/vxp.h"

/* Kernel i: a few ops, distinct by a constant (what a real tree's many
 * small kernels look like to the cache). */
static char *source(int i, size_t *len) {
  char *s = NULL;
  int n = asprintf(&s,
                   "module attributes {gpu.container_module} {\n"
                   "  gpu.module @m {\n"
                   "    gpu.func @axpb(%%x: memref<?xf32>, %%y: memref<?xf32>, %%n: i32) kernel {\n"
                   "      %%b = gpu.block_id x\n"
                   "      %%d = gpu.block_dim x\n"
                   "      %%t = gpu.thread_id x\n"
                   "      %%o = arith.muli %%b, %%d : index\n"
                   "      %%i = arith.addi %%o, %%t : index\n"
                   "      %%i32 = arith.index_cast %%i : index to i32\n"
                   "      %%in = arith.cmpi slt, %%i32, %%n : i32\n"
                   "      scf.if %%in {\n"
                   "        %%v = memref.load %%x[%%i] : memref<?xf32>\n"
                   "        %%c = arith.constant %d.0 : f32\n"
                   "        %%r = arith.mulf %%v, %%c : f32\n"
                   "        memref.store %%r, %%y[%%i] : memref<?xf32>\n"
                   "      }\n"
                   "      gpu.return\n"
                   "    }\n"
                   "  }\n"
                   "}\n",
                   i + 1);
  if (n < 0) exit(2);
  *len = (size_t)n;
  return s;
}

/* Compiles kernel i on c; returns microseconds, exits on failure; *cached
 * says whether it came from a cache. */
static double compile(vxc_conn *c, int i, int *cached) {
  size_t len;
  char *src = source(i, &len);
  vxp_response r;
  double t0 = bench_now_us();
  int rc = vxc_compile(c, src, len, "bench.mlir", NULL, &r);
  double us = bench_now_us() - t0;
  if (rc != 0 || r.status != VXP_STATUS_OK) {
    fprintf(stderr, "compile %d failed: %s\n", i, rc ? "connection" : r.message ? r.message : "?");
    exit(2);
  }
  *cached = r.cached;
  vxp_response_clear(&r);
  free(src);
  return us;
}

static vxc_conn *connect_to(const char *sock) {
  vxc_conn *c = NULL;
  if (vxc_connect(sock, &c) != 0) {
    fprintf(stderr, "no daemon at %s\n", sock);
    exit(2);
  }
  return c;
}

static vxp_stats stats(const char *sock) {
  vxc_conn *c = connect_to(sock);
  vxp_response r;
  if (vxc_stats(c, &r) != 0) exit(2);
  vxc_close(c);
  vxp_stats s = r.stats;
  free(s.remote);
  r.stats.remote = NULL;
  vxp_response_clear(&r);
  s.remote = NULL;
  return s;
}

static void report(const char *what, double *us, int n) {
  bench_median(us, n); /* sorts */
  printf("%-34s p50 %8.0f us   p99 %8.0f us   (%d requests)\n", what, us[(n - 1) / 2], us[(n * 99 - 1) / 100],
         n);
}

static int latency(int k, const char *a, const char *b) {
  double *miss = calloc((size_t)k, sizeof *miss), *l2 = calloc((size_t)k, sizeof *l2),
         *l1 = calloc((size_t)k, sizeof *l1);
  vxc_conn *ca = connect_to(a), *cb = connect_to(b);
  int cached;
  for (int i = 0; i < k; i++) {
    miss[i] = compile(ca, i, &cached);
    if (cached) fprintf(stderr, "warning: kernel %d was cached on A (not a fresh Redis?)\n", i);
  }
  stats(a); /* waits until A's writes reached Redis */
  for (int i = 0; i < k; i++) {
    l2[i] = compile(cb, i, &cached);
    if (!cached) fprintf(stderr, "warning: kernel %d compiled on B\n", i);
  }
  for (int i = 0; i < k; i++)
    l1[i] = compile(cb, i, &cached);
  vxp_stats sb = stats(b);
  report("miss (compiled, then shared)", miss, k);
  report("L2 hit (shared level, copied to L1)", l2, k);
  report("L1 hit (local SQLite)", l1, k);
  printf("B: misses %llu, L2 hits %llu, L1 hits %llu\n", (unsigned long long)sb.misses,
         (unsigned long long)sb.l2_hits, (unsigned long long)(sb.hits - sb.l2_hits));
  vxc_close(ca);
  vxc_close(cb);
  free(miss);
  free(l2);
  free(l1);
  return 0;
}

static int farm(int k, int n, char **socks) {
  double t0 = bench_now_us();
  for (int d = 0; d < n; d++) {
    pid_t pid = fork();
    if (pid == 0) { /* one machine's build: the same kernels, its own order */
      vxc_conn *c = connect_to(socks[d]);
      int cached;
      for (int j = 0; j < k; j++)
        compile(c, (j + d * k / n) % k, &cached);
      vxc_close(c);
      _exit(0);
    }
  }
  int failed = 0, st;
  while (wait(&st) > 0)
    failed |= !WIFEXITED(st) || WEXITSTATUS(st) != 0;
  double wall = bench_now_us() - t0;
  if (failed) return 2;
  unsigned long long compiled = 0, l2 = 0, waits = 0, asked = (unsigned long long)k * (unsigned long long)n;
  for (int d = 0; d < n; d++) {
    vxp_stats s = stats(socks[d]);
    compiled += s.misses;
    l2 += s.l2_hits;
    waits += s.l2_lease_waits;
  }
  printf("%d daemons x %d kernels: %llu compiled (%.2fx the distinct keys) of %llu asked, %llu L2 hits, "
         "%llu lease waits; compile avoided %.1f %% (ideal %.1f %%); wall %.0f ms\n",
         n, k, compiled, (double)compiled / k, asked, l2, waits,
         100.0 * (1.0 - (double)compiled / (double)asked), 100.0 * (1.0 - 1.0 / n), wall / 1000.0);
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 5 && strcmp(argv[1], "latency") == 0) return latency(atoi(argv[2]), argv[3], argv[4]);
  if (argc >= 4 && strcmp(argv[1], "farm") == 0) return farm(atoi(argv[2]), argc - 3, argv + 3);
  fprintf(stderr, "usage: %s latency K SOCK_A SOCK_B | farm K SOCK...\n", argv[0]);
  return 64;
}
