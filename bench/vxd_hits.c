/*
 * vxd_hits.c - hit latency against the number of entries in the cache.
 *
 *   vxd_hits --fill CACHE_DIR N       stores N synthetic entries (a 512-byte
 *                                     object and one kernel record each,
 *                                     encoded as a worker does) with
 *                                     the cache library, keys in
 *                                     CACHE_DIR/keys.txt
 *   vxd_hits SOCKET CACHE_DIR [READS] fetches READS (default 20000) random
 *                                     keys of keys.txt through libvxc, one
 *                                     connection, and prints p50 / p99 /
 *                                     p99.9 / max in microseconds
 *
 * Random keys defeat SQLite's page cache as a real build farm's mix does;
 * bench/hits.sh runs both for 10 and 100 000 entries against a fresh daemon.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "cache/vxk.h"
#include "cache/vxk_entry.h"
#include "client/vxc.h"
#include "protocol/vxp.h"

static int fill(const char *dir, long n) {
  vxk_cache *c;
  char err[256];
  if (vxk_open(dir, 0, &c, err, sizeof err) != VXK_OK) {
    fprintf(stderr, "%s\n", err);
    return 2;
  }
  vxp_arg args[2] = {{0, "memref<?xf32>", VXP_ARG_POINTER, 4, 4, 0, 1, 4},
                     {1, "i32", VXP_ARG_SCALAR, 4, 4, 4, 0, 0}};
  vxp_kernel k = {.name = "k",
                  .entry = "__vxl_main_0",
                  .nargs = 2,
                  .args = args,
                  .args_size = 8,
                  .launch_offset = 8,
                  .buffer_size = 40,
                  .grid_dims = 1,
                  .subgroup_size = 4};
  uint8_t *meta;
  size_t ml;
  if (vxp_kernel_meta_encode(&k, &meta, &ml) != VXP_OK) return 2;
  uint8_t object[512];
  char path[4200];
  snprintf(path, sizeof path, "%s/keys.txt", dir);
  FILE *keys = fopen(path, "w");
  if (!keys) return 2;
  for (long i = 0; i < n; i++) {
    char src[64], key[VXK_KEY_HEX + 1];
    int len = snprintf(src, sizeof src, "entry %ld", i);
    const char *parts[] = {"vxd_hits"};
    memset(object, (int)(i & 0xff), sizeof object);
    vxp_entry_kernel in = {"k", 1, meta, ml};
    uint8_t *entry = NULL;
    size_t size = 0;
    if (vxk_key((const uint8_t *)src, (size_t)len, parts, 1, key) != VXK_OK ||
        vxk_entry_encode(key, "opt_level=2", object, sizeof object, NULL, 0, &in, 1, NULL, &entry, &size) !=
            VXK_OK ||
        vxk_put(c, key, entry, size, 0, NULL, NULL) != VXK_OK) {
      fprintf(stderr, "store %ld failed: %s\n", i, vxk_errmsg(c));
      return 2;
    }
    free(entry);
    fprintf(keys, "%s\n", key);
  }
  fclose(keys);
  free(meta);
  vxk_close(c);
  return 0;
}

int main(int argc, char **argv) {
  if (argc >= 4 && strcmp(argv[1], "--fill") == 0) return fill(argv[2], atol(argv[3]));
  if (argc < 3) {
    fprintf(stderr, "usage: %s --fill CACHE_DIR N | SOCKET CACHE_DIR [READS]\n", argv[0]);
    return 64;
  }
  int reads = argc > 3 ? atoi(argv[3]) : 20000;
  char path[4200];
  snprintf(path, sizeof path, "%s/keys.txt", argv[2]);
  FILE *f = fopen(path, "r");
  if (!f) {
    perror(path);
    return 2;
  }
  size_t nkeys = 0, cap = 1024;
  char(*keys)[VXK_KEY_HEX + 1] = malloc(cap * sizeof *keys);
  char line[128];
  while (fgets(line, sizeof line, f)) {
    if (nkeys == cap) keys = realloc(keys, (cap *= 2) * sizeof *keys);
    snprintf(keys[nkeys++], VXK_KEY_HEX + 1, "%.64s", line);
  }
  fclose(f);
  vxc_conn *c;
  if (nkeys == 0 || vxc_connect(argv[1], &c) != 0) return 2;
  double *t = malloc(sizeof(double) * (size_t)reads);
  srand(12345);
  for (int i = 0; i < reads; i++) {
    vxp_response r;
    const char *key = keys[(size_t)rand() % nkeys];
    double t0 = bench_now_us();
    if (vxc_fetch(c, key, NULL, &r) != 0 || r.status != VXP_STATUS_OK || !r.object) {
      fprintf(stderr, "fetch %s failed\n", key);
      return 1;
    }
    t[i] = bench_now_us() - t0;
    vxp_response_clear(&r);
  }
  bench_median(t, reads); /* sorts */
  printf("entries %-7zu reads %-6d p50 %7.1f us  p99 %7.1f us  p99.9 %7.1f us  max %8.1f us\n", nkeys, reads,
         t[(reads - 1) / 2], t[(int)(0.99 * (reads - 1))], t[(int)(0.999 * (reads - 1))], t[reads - 1]);
  vxc_close(c);
  free(t);
  free(keys);
  return 0;
}
