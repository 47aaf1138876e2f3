/* sort_kernel.c - host program of vortex-hip sort_kernel.mlir: each thread
 * ranks its element and stores it at its rank, so out is in sorted; the
 * wrapper takes n, the grid and the block size. */
#include "hip_host.h"

void _Z11launch_sortPiS_jii(MEMREF_ARGS(int32_t), MEMREF_ARGS(int32_t), uint32_t n, int32_t blocks,
                            int32_t block);

int main(void) {
  enum { N = 300, BS = 64 };
  int32_t *in = dev_alloc(N * 4), *out = dev_alloc(N * 4), want[N];
  uint32_t s = 17;
  for (int i = 0; i < N; i++)
    in[i] = want[i] = (int32_t)(next_rand(&s) % 50);
  for (int i = 1; i < N; i++)
    for (int j = i; j > 0 && want[j - 1] > want[j]; j--) {
      int32_t t = want[j];
      want[j] = want[j - 1], want[j - 1] = t;
    }
  _Z11launch_sortPiS_jii(MEMREF(in, N), MEMREF(out, N), N, (N + BS - 1) / BS, BS);
  for (int i = 0; i < N; i++)
    if (out[i] != want[i]) {
      printf("out[%d] = %d, expected %d\n", i, out[i], want[i]);
      return 1;
    }
  printf("sort: %d elements ok\n", N);
  return 0;
}
