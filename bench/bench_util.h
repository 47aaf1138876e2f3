/*
 * bench_util.h - timing helpers and the separate-process tool chain the
 * benchmarks compare against (header-only; bench/ programs only).
 */
#ifndef BENCH_UTIL_H
#define BENCH_UTIL_H

#define _GNU_SOURCE
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The MLIR GPU runtime ABI's entry points a benchmark calls as lowered
 * host code does (libvortexd_runtime). */
void *mgpuModuleLoad(void *data, size_t size);
void *mgpuModuleGetFunction(void *module, const char *name);
void mgpuLaunchKernel(void *function, intptr_t gx, intptr_t gy, intptr_t gz, intptr_t bx, intptr_t by,
                      intptr_t bz, int32_t smem, void *stream, void **params, void **extra, size_t nparams);
void *mgpuMemAlloc(uint64_t size, void *stream, bool host_shared);

/* Reads the file at path into buf (cap bytes at most).  Returns the bytes
 * read, 0 when it cannot be opened or is empty. */
static inline size_t bench_read_file(const char *path, char *buf, size_t cap) {
  FILE *f = fopen(path, "rb");
  if (!f) return 0;
  size_t n = fread(buf, 1, cap, f);
  fclose(f);
  return n;
}

/* Monotonic clock in microseconds. */
static inline double bench_now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static inline int bench_cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Sorts v (n values) in place and returns its median. */
static inline double bench_median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, bench_cmp);
  return v[(n - 1) / 2];
}

/* Runs mlir-opt-22 | mlir-translate-22 | opt-22 -O2 | llc-22, each a new
 * process, on lowered (LLVM-dialect MLIR text) and returns the wall time in
 * microseconds, or -1 when the chain failed.  The flags are the daemon's
 * target: RV32IMAF, ilp32f, medany. */
static inline double bench_chain_us(const char *lowered) {
  char tmp[] = "/tmp/vxd-bench-XXXXXX.mlir";
  int fd = mkstemps(tmp, 5);
  if (fd < 0) return -1;
  size_t n = strlen(lowered);
  if (write(fd, lowered, n) != (ssize_t)n) {
    close(fd);
    unlink(tmp);
    return -1;
  }
  close(fd);
  char cmd[2048];
  snprintf(cmd, sizeof cmd,
           "mlir-opt-22 '--pass-pipeline=builtin.module(convert-scf-to-cf,"
           "convert-arith-to-llvm{index-bitwidth=32},finalize-memref-to-llvm{index-bitwidth=32},"
           "convert-func-to-llvm{index-bitwidth=32},reconcile-unrealized-casts)' %s"
           " | mlir-translate-22 --mlir-to-llvmir"
           " | opt-22 -O2 -mtriple=riscv32-unknown-elf -mcpu=generic-rv32 -mattr=+m,+a,+f"
           " | llc-22 -O2 -mtriple=riscv32-unknown-elf -mcpu=generic-rv32 -mattr=+m,+a,+f"
           " -target-abi=ilp32f -code-model=medium -filetype=obj -o /dev/null",
           tmp);
  double t0 = bench_now_us();
  int st = system(cmd);
  double us = bench_now_us() - t0;
  unlink(tmp);
  if (st != 0) {
    fprintf(stderr, "tool chain failed: %s\n", cmd);
    return -1;
  }
  return us;
}

#endif /* BENCH_UTIL_H */
