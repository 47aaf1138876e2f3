/* basic_kernel.c - host program of vortex-hip basic_kernel.mlir: out = in. */
#include "hip_host.h"

void _Z12launch_basicPiS_ji(MEMREF_ARGS(int32_t), MEMREF_ARGS(int32_t), uint32_t n, int32_t block);

int main(void) {
  enum { N = 700 };
  int32_t *in = dev_alloc(N * 4), *out = dev_alloc(N * 4);
  uint32_t s = 1;
  for (int i = 0; i < N; i++)
    in[i] = (int32_t)next_rand(&s), out[i] = 0;
  _Z12launch_basicPiS_ji(MEMREF(in, N), MEMREF(out, N), N, 64);
  for (int i = 0; i < N; i++)
    if (out[i] != in[i]) {
      printf("out[%d] = %d, expected %d\n", i, out[i], in[i]);
      return 1;
    }
  printf("basic: %d elements ok\n", N);
  return 0;
}
