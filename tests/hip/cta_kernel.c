/* cta_kernel.c - host program of vortex-hip cta_kernel.mlir: over the
 * whole grid, out[g] = g + in[g % block] (a block-local index and a global
 * one); the wrapper takes the grid and the block size. */
#include "hip_host.h"

void _Z10launch_ctaPiS_ii(MEMREF_ARGS(int32_t), MEMREF_ARGS(int32_t), int32_t blocks, int32_t block);

int main(void) {
  enum { BS = 64, BLOCKS = 3, N = BS * BLOCKS };
  int32_t *in = dev_alloc(BS * 4), *out = dev_alloc(N * 4);
  uint32_t s = 11;
  for (int i = 0; i < BS; i++)
    in[i] = (int32_t)(next_rand(&s) % 1000);
  _Z10launch_ctaPiS_ii(MEMREF(in, BS), MEMREF(out, N), BLOCKS, BS);
  for (int g = 0; g < N; g++)
    if (out[g] != g + in[g % BS]) {
      printf("out[%d] = %d, expected %d\n", g, out[g], g + in[g % BS]);
      return 1;
    }
  printf("cta: %d elements ok\n", N);
  return 0;
}
