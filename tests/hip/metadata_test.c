/* metadata_test.c - host program of vortex-hip metadata_test.mlir:
 * out[i] = (int)(in[i] * scale), an int, a float and two buffers. */
#include "hip_host.h"

void _Z22launch_metadata_kernelPiS_if(MEMREF_ARGS(int32_t), MEMREF_ARGS(int32_t), int32_t count, float scale);

int main(void) {
  enum { N = 900 };
  int32_t *in = dev_alloc(N * 4), *out = dev_alloc(N * 4);
  uint32_t s = 3;
  for (int i = 0; i < N; i++)
    in[i] = (int32_t)(next_rand(&s) % 20001) - 10000, out[i] = 0;
  _Z22launch_metadata_kernelPiS_if(MEMREF(in, N), MEMREF(out, N), N, 2.5f);
  for (int i = 0; i < N; i++)
    if (out[i] != (int32_t)((float)in[i] * 2.5f)) {
      printf("out[%d] = %d, expected %d\n", i, out[i], (int32_t)((float)in[i] * 2.5f));
      return 1;
    }
  printf("metadata_test: %d elements ok\n", N);
  return 0;
}
