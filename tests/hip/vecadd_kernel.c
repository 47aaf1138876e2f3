/*
 * vecadd_kernel.c - the host program of the corpus's vortex-hip
 * vecadd_kernel.mlir (cgeist output of a HIP vecadd): calls the file's
 * launch wrapper, compiled with `vxc compile --host`, on device buffers
 * from libvortexd_runtime, and checks c = a + b against C.  The wrapper
 * takes each memref as cgeist's func lowering passes it (allocated,
 * aligned, offset, size, stride), then n and the block size.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

void _Z13launch_vecaddPKfS0_Pfji(const float *, const float *, int64_t, int64_t, int64_t, const float *,
                                 const float *, int64_t, int64_t, int64_t, float *, float *, int64_t, int64_t,
                                 int64_t, uint32_t n, int32_t block);
void *mgpuMemAlloc(uint64_t size, void *stream, bool host_shared);

int main(void) {
  enum { N = 1000 };
  float *a = mgpuMemAlloc(N * sizeof(float), NULL, false), *b = mgpuMemAlloc(N * sizeof(float), NULL, false),
        *c = mgpuMemAlloc(N * sizeof(float), NULL, false);
  if (!a || !b || !c) return 2;
  for (int i = 0; i < N; i++)
    a[i] = (float)i * 0.5f, b[i] = 3.0f - (float)i, c[i] = -1.0f;
  _Z13launch_vecaddPKfS0_Pfji(a, a, 0, N, 1, b, b, 0, N, 1, c, c, 0, N, 1, N, 64);
  for (int i = 0; i < N; i++)
    if (c[i] != a[i] + b[i]) {
      printf("c[%d] = %g, expected %g\n", i, c[i], a[i] + b[i]);
      return 1;
    }
  printf("vecadd: %d elements ok\n", N);
  return 0;
}
