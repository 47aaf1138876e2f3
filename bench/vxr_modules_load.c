/*
 * vxr_modules_load.c - a program's start: it loads its modules as the
 * constructors MLIR's gpu-to-llvm emits do (mgpuModuleLoad for each, in
 * order), then takes each module's kernels (mgpuModuleGetFunction, which
 * waits for the module), and prints the milliseconds from the first load
 * until every kernel was had.  Each file is one module's MLIR text; its
 * kernels are named on the command line after it, each taking no
 * arguments.
 *   vxr_modules_load FILE KERNEL... [-- FILE KERNEL...]...
 *   (VORTEXD_SOCKET names the daemon)
 */
#include <stdbool.h>
#include <stdint.h>

#include "bench_util.h"

int main(int argc, char **argv) {
  enum { MAX_MODULES = 64, MAX_TEXT = 1 << 20 };
  void *modules[MAX_MODULES];
  int first[MAX_MODULES], last[MAX_MODULES], n = 0;
  static char text[MAX_MODULES][4096 + 1];
  char **blobs = calloc(MAX_MODULES, sizeof *blobs);
  size_t lens[MAX_MODULES];
  /* every module's bytes as the host lowering makes them: a host argument
   * line per kernel (none takes arguments), then the text */
  for (int i = 1; i < argc && n < MAX_MODULES;) {
    int k = i + 1;
    while (k < argc && strcmp(argv[k], "--") != 0)
      k++;
    size_t h = 0;
    for (int j = i + 1; j < k; j++)
      h += (size_t)snprintf(text[n] + h, sizeof text[n] - h, "// vortexd-host-args: %s\n", argv[j]);
    blobs[n] = malloc(MAX_TEXT);
    if (!blobs[n] || h >= sizeof text[n]) return 2;
    memcpy(blobs[n], text[n], h);
    size_t got = bench_read_file(argv[i], blobs[n] + h, MAX_TEXT - h);
    if (!got) return 2;
    lens[n] = h + got;
    first[n] = i + 1, last[n] = k;
    n++;
    i = k + 1;
  }
  double t0 = bench_now_us();
  for (int m = 0; m < n; m++)
    modules[m] = mgpuModuleLoad(blobs[m], lens[m]);
  for (int m = 0; m < n; m++)
    for (int j = first[m]; j < last[m]; j++)
      if (!mgpuModuleGetFunction(modules[m], argv[j])) {
        fprintf(stderr, "vxr_modules_load: no kernel %s\n", argv[j]);
        return 1;
      }
  printf("%.0f\n", (bench_now_us() - t0) / 1000.0);
  for (int m = 0; m < n; m++)
    free(blobs[m]);
  free(blobs);
  return 0;
}
