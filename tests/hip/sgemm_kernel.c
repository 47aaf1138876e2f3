/* sgemm_kernel.c - host program of vortex-hip sgemm_kernel.mlir (as cgeist
 * simplified the HIP source): c[i] = sum_k a[k] * b[k * n + i]; the
 * wrapper takes n, the grid and the block size.  Float sums are compared
 * with a tolerance (the device may contract a multiply-add). */
#include <math.h>

#include "hip_host.h"

void _Z12launch_sgemmPfS_S_jii(MEMREF_ARGS(float), MEMREF_ARGS(float), MEMREF_ARGS(float), uint32_t n,
                               int32_t blocks, int32_t block);

int main(void) {
  enum { N = 40, BS = 32 };
  float *a = dev_alloc(N * 4), *b = dev_alloc(N * N * 4), *c = dev_alloc(N * 4);
  uint32_t s = 19;
  for (int i = 0; i < N; i++)
    a[i] = (float)(next_rand(&s) % 100) / 10.0f;
  for (int i = 0; i < N * N; i++)
    b[i] = (float)(next_rand(&s) % 100) / 10.0f;
  _Z12launch_sgemmPfS_S_jii(MEMREF(a, N), MEMREF(b, N * N), MEMREF(c, N), N, (N + BS - 1) / BS, BS);
  for (int i = 0; i < N; i++) {
    float want = 0;
    for (int k = 0; k < N; k++)
      want += a[k] * b[k * N + i];
    if (fabsf(c[i] - want) > 1e-5f * fabsf(want) + 1e-5f) {
      printf("c[%d] = %g, expected %g\n", i, c[i], want);
      return 1;
    }
  }
  printf("sgemm: %d elements ok\n", N);
  return 0;
}
