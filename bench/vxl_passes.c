/*
 * vxl_passes.c - what LLVM's pipelines cost on given kernels, in-process:
 * the study behind an LLVM pipeline choice (bench/passes.sh runs it).
 *
 *   vxl_passes [--llvm OPTION]... [--objects DIR] [--runs N] [--O LEVEL] FILE.mlir...
 *
 * --llvm passes OPTION to LLVM's command line (LLVMParseCommandLineOptions)
 * before anything compiles: -time-passes with -info-output-file=F writes
 * LLVM's per-pass timing reports to F; -vectorize-loops=false and the like
 * change the O2 pipeline's tuning (PipelineTuningOptions reads them).
 * Each FILE is compiled at O2 (or --O's level, 0-3) for each of the four targets (vortex2-rv32,
 * vortex2-rv64, vortex3-rv32, vortex3-rv64) on one warm compiler, once
 * untimed (its object written to DIR/<file index>-<target>.o with
 * --objects), then N times (default 5) timed in this process's CPU time
 * (CLOCK_PROCESS_CPUTIME_ID).  Prints per file and target the median, and
 * the sum of the medians over every compile that succeeded (refused files
 * are skipped and counted).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <llvm-c/Core.h>
#include <llvm-c/Support.h>

#include "bench_util.h"
#include "daemon/vxd_pieces.h"
#include "lowering/vxl.h"

static double cpu_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv) {
  const char *llvm_argv[64] = {"vxl_passes"};
  int llvm_argc = 1, runs = 5, first = 1, level = 2;
  const char *objects = NULL;
  for (; first < argc && argv[first][0] == '-' && argv[first][1] == '-'; first += 2) {
    if (first + 1 >= argc) return 64;
    if (strcmp(argv[first], "--llvm") == 0 && llvm_argc < 63)
      llvm_argv[llvm_argc++] = argv[first + 1];
    else if (strcmp(argv[first], "--objects") == 0)
      objects = argv[first + 1];
    else if (strcmp(argv[first], "--runs") == 0)
      runs = atoi(argv[first + 1]);
    else if (strcmp(argv[first], "--O") == 0)
      level = atoi(argv[first + 1]);
    else
      return 64;
  }
  if (first >= argc || runs < 1 || runs > 100 || level < 0 || level > 3) {
    fprintf(stderr, "usage: %s [--llvm OPTION]... [--objects DIR] [--runs N] [--O LEVEL] FILE.mlir...\n",
            argv[0]);
    return 64;
  }
  LLVMParseCommandLineOptions(llvm_argc, llvm_argv, "vxl_passes");
  vxl_compiler *c = NULL;
  if (vxd_compiler_new(&c) != 0) return 1;
  static const struct {
    const char *name;
    uint32_t abi, xlen;
  } targets[] = {
      {"vortex2-rv32", 2, 32}, {"vortex2-rv64", 2, 64}, {"vortex3-rv32", 3, 32}, {"vortex3-rv64", 3, 64}};
  static char src[4 << 20];
  double total = 0, *t = calloc((size_t)runs, sizeof *t);
  int compiled = 0, refused = 0;
  for (int f = first; f < argc; f++) {
    size_t len = bench_read_file(argv[f], src, sizeof src);
    for (int k = 0; k < 4; k++) {
      vxl_options o = {.opt_level = (uint32_t)level, .vortex_abi = targets[k].abi, .xlen = targets[k].xlen};
      vxl_result r;
      if (!len || vxl_compile(c, src, len, argv[f], &o, &r) != 0 || !r.ok) {
        if (len) vxl_result_clear(&r);
        refused++;
        continue;
      }
      if (objects) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%03d-%s.o", objects, f - first, targets[k].name);
        FILE *out = fopen(path, "wb");
        if (!out || fwrite(r.object, 1, r.object_size, out) != r.object_size || fclose(out) != 0) return 2;
      }
      vxl_result_clear(&r);
      for (int i = 0; i < runs; i++) {
        double t0 = cpu_ms();
        vxl_compile(c, src, len, argv[f], &o, &r);
        t[i] = cpu_ms() - t0;
        vxl_result_clear(&r);
      }
      double m = bench_median(t, runs);
      printf("%8.3f ms  %s %s\n", m, targets[k].name, argv[f]);
      total += m;
      compiled++;
    }
  }
  printf("total %.1f ms CPU over %d compiles (median of %d runs each); %d refused\n", total, compiled, runs,
         refused);
  free(t);
  vxl_compiler_destroy(c);
  LLVMShutdown(); /* LLVM's timer groups print their reports at its shutdown */
  return 0;
}
