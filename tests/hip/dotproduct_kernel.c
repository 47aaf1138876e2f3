/* dotproduct_kernel.c - host program of vortex-hip dotproduct_kernel.mlir:
 * c[i] = a[i] * b[i]. */
#include "hip_host.h"

void _Z17launch_dotproductPKfS0_Pfji(MEMREF_ARGS(float), MEMREF_ARGS(float), MEMREF_ARGS(float), uint32_t n,
                                     int32_t block);

int main(void) {
  enum { N = 1000 };
  float *a = dev_alloc(N * 4), *b = dev_alloc(N * 4), *c = dev_alloc(N * 4);
  uint32_t s = 7;
  for (int i = 0; i < N; i++)
    a[i] = (float)(next_rand(&s) % 1000) / 16.0f, b[i] = (float)(next_rand(&s) % 1000) / 32.0f, c[i] = -1.0f;
  _Z17launch_dotproductPKfS0_Pfji(MEMREF(a, N), MEMREF(b, N), MEMREF(c, N), N, 128);
  for (int i = 0; i < N; i++)
    if (c[i] != a[i] * b[i]) {
      printf("c[%d] = %g, expected %g\n", i, c[i], a[i] * b[i]);
      return 1;
    }
  printf("dotproduct: %d elements ok\n", N);
  return 0;
}
