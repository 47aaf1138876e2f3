/*
 * vxr_module_launch.c - a program that launches several kernels of one
 * module in turn, through the MLIR GPU runtime ABI on the emulated device:
 * the first launch of each kernel (the first links the module's image;
 * with one image per module the others link nothing) and the p50 of
 * steady launches taking the kernels round-robin.  Every kernel named
 * takes (memref<?xi32> out, i32 n) and is launched over n threads.
 *   vxr_module_launch MODULE.mlir N LAUNCHES KERNEL...
 *   (VORTEXD_SOCKET names the daemon)
 */
#include <stdbool.h>
#include <stdint.h>

#include "bench_util.h"

int main(int argc, char **argv) {
  if (argc < 5) return 64;
  static char src[1 << 16];
  int32_t n = atoi(argv[2]);
  int launches = atoi(argv[3]), nk = argc - 4;
  /* what the host lowering puts before the module's text: each kernel's
   * host argument line (out, n) */
  size_t len = 0;
  for (int k = 0; k < nk && len < 4096; k++)
    len += (size_t)snprintf(src + len, 4096 - len, "// vortexd-host-args: %s m1 s4\n", argv[4 + k]);
  size_t text = bench_read_file(argv[1], src + len, sizeof src - len - 1);
  if (!text || len >= 4096) return 2;
  len += text;
  int32_t *out = mgpuMemAlloc((uint64_t)n * 4, NULL, false);
  void *m = mgpuModuleLoad(src, len);
  void **fn = calloc((size_t)nk, sizeof *fn);
  for (int k = 0; k < nk; k++)
    if (!(fn[k] = mgpuModuleGetFunction(m, argv[4 + k]))) {
      fprintf(stderr, "vxr_module_launch: no kernel %s\n", argv[4 + k]);
      return 1;
    }
  int64_t off = 0, size = n, stride = 1;
  void *params[] = {&out, &out, &off, &size, &stride, &n};
  intptr_t blocks = (n + 63) / 64;
  printf("first launch of each kernel:");
  for (int k = 0; k < nk; k++) {
    double s = bench_now_us();
    mgpuLaunchKernel(fn[k], blocks, 1, 1, 64, 1, 1, 0, NULL, params, NULL, 6);
    printf(" %s %.0f us%s", argv[4 + k], bench_now_us() - s, k + 1 < nk ? "," : "\n");
  }
  double *v = malloc((size_t)launches * sizeof *v);
  for (int i = 0; i < launches; i++) {
    double s = bench_now_us();
    mgpuLaunchKernel(fn[i % nk], blocks, 1, 1, 64, 1, 1, 0, NULL, params, NULL, 6);
    v[i] = bench_now_us() - s;
  }
  printf("round-robin launch p50 %.0f us over %d launches of %d threads\n", bench_median(v, launches),
         launches, n);
  free(v);
  free(fn);
  return 0;
}
