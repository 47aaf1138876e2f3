/* vecadd_kernel.c - host program of vortex-hip vecadd_kernel.mlir: c = a + b. */
#include "hip_host.h"

void _Z13launch_vecaddPKfS0_Pfji(MEMREF_ARGS(float), MEMREF_ARGS(float), MEMREF_ARGS(float), uint32_t n,
                                 int32_t block);

int main(void) {
  enum { N = 1000 };
  float *a = dev_alloc(N * 4), *b = dev_alloc(N * 4), *c = dev_alloc(N * 4);
  for (int i = 0; i < N; i++)
    a[i] = (float)i * 0.5f, b[i] = 3.0f - (float)i, c[i] = -1.0f;
  _Z13launch_vecaddPKfS0_Pfji(MEMREF(a, N), MEMREF(b, N), MEMREF(c, N), N, 64);
  for (int i = 0; i < N; i++)
    if (c[i] != a[i] + b[i]) {
      printf("c[%d] = %g, expected %g\n", i, c[i], a[i] + b[i]);
      return 1;
    }
  printf("vecadd: %d elements ok\n", N);
  return 0;
}
