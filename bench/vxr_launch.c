/*
 * vxr_launch.c - launch overhead of libvortexd_runtime, through the MLIR
 * GPU runtime ABI as lowered host code calls it: the first mgpuModuleLoad
 * (a daemon miss or hit, per process), the first launch (which links the
 * kernel's image) and steady-state launches of saxpy over n elements on
 * the emulated device.  One process = one measurement of the first-time
 * costs; bench/launch.sh runs it against a cold and a warm cache.
 *   vxr_launch SAXPY.mlir N LAUNCHES      (VORTEXD_SOCKET names the daemon)
 */
#include <stdbool.h>
#include <stdint.h>

#include "bench_util.h"

int main(int argc, char **argv) {
  if (argc != 4) return 64;
  static char src[1 << 16];
  /* what the host lowering puts before the module's text: saxpy's host
   * argument line (n, a, x, y) */
  static const char args[] = "// vortexd-host-args: saxpy s4 s4 m1 m1\n";
  memcpy(src, args, sizeof args - 1);
  size_t len = bench_read_file(argv[1], src + sizeof args - 1, sizeof src - sizeof args);
  if (!len) return 2;
  len += sizeof args - 1;
  int32_t n = atoi(argv[2]);
  int launches = atoi(argv[3]);
  float *x = mgpuMemAlloc((uint64_t)n * 4, NULL, false), *y = mgpuMemAlloc((uint64_t)n * 4, NULL, false);
  for (int32_t i = 0; i < n; i++)
    x[i] = 1.0f, y[i] = 0.0f;
  double t0 = bench_now_us();
  void *m = mgpuModuleLoad(src, len);
  double t1 = bench_now_us();
  void *fn = mgpuModuleGetFunction(m, "saxpy");
  float a = 2.0f;
  int64_t off = 0, size = n, stride = 1;
  void *params[] = {&n, &a, &x, &x, &off, &size, &stride, &y, &y, &off, &size, &stride};
  double t2 = bench_now_us();
  mgpuLaunchKernel(fn, (n + 63) / 64, 1, 1, 64, 1, 1, 0, NULL, params, NULL, 12);
  double t3 = bench_now_us();
  double *v = malloc((size_t)launches * sizeof *v);
  for (int i = 0; i < launches; i++) {
    double s = bench_now_us();
    mgpuLaunchKernel(fn, (n + 63) / 64, 1, 1, 64, 1, 1, 0, NULL, params, NULL, 12);
    v[i] = bench_now_us() - s;
  }
  double again0 = bench_now_us();
  mgpuModuleLoad(src, len);
  double again = bench_now_us() - again0;
  if (y[n - 1] != 2.0f * (float)(launches + 1)) {
    fprintf(stderr, "vxr_launch: wrong result %f\n", y[n - 1]);
    return 1;
  }
  printf("module load %8.0f us   (again in the process: %.1f us)\n", t1 - t0, again);
  printf("first launch %7.0f us   (links the kernel image)\n", t3 - t2);
  printf("launch p50 %9.0f us   over %d launches of %d threads\n", bench_median(v, launches), launches, n);
  free(v);
  return 0;
}
