/* relu_kernel.c - host program of vortex-hip relu_kernel.mlir:
 * out = max(in, 0); the wrapper takes the grid and the block size. */
#include "hip_host.h"

void _Z11launch_reluPfS_jii(MEMREF_ARGS(float), MEMREF_ARGS(float), uint32_t n, int32_t blocks,
                            int32_t block);

int main(void) {
  enum { N = 700, BS = 64 };
  float *in = dev_alloc(N * 4), *out = dev_alloc(N * 4);
  uint32_t s = 5;
  for (int i = 0; i < N; i++)
    in[i] = (float)((int32_t)(next_rand(&s) % 2001) - 1000) / 8.0f, out[i] = -99.0f;
  _Z11launch_reluPfS_jii(MEMREF(in, N), MEMREF(out, N), N, (N + BS - 1) / BS, BS);
  for (int i = 0; i < N; i++) {
    float want = in[i] > 0 ? in[i] : 0.0f;
    if (out[i] != want) {
      printf("out[%d] = %g, expected %g\n", i, out[i], want);
      return 1;
    }
  }
  printf("relu: %d elements ok\n", N);
  return 0;
}
