/* dogfood_kernel.c - host program of vortex-hip dogfood_kernel.mlir: out =
 * a OP b for each operation code (0 add, 1 mul, 2 div, 3 sub, else add);
 * the wrapper takes n, the code, the grid and the block size. */
#include "hip_host.h"

void _Z14launch_dogfoodPiS_S_jjii(MEMREF_ARGS(int32_t), MEMREF_ARGS(int32_t), MEMREF_ARGS(int32_t),
                                  uint32_t n, uint32_t op, int32_t blocks, int32_t block);

int main(void) {
  enum { N = 600, BS = 64 };
  int32_t *a = dev_alloc(N * 4), *b = dev_alloc(N * 4), *out = dev_alloc(N * 4);
  uint32_t s = 13;
  for (int i = 0; i < N; i++)
    a[i] = (int32_t)(next_rand(&s) % 2001) - 1000, b[i] = (int32_t)(next_rand(&s) % 21) - 10;
  for (uint32_t op = 0; op <= 4; op++) {
    _Z14launch_dogfoodPiS_S_jjii(MEMREF(a, N), MEMREF(b, N), MEMREF(out, N), N, op, (N + BS - 1) / BS, BS);
    for (int i = 0; i < N; i++) {
      int32_t want = op == 1   ? a[i] * b[i]
                     : op == 2 ? (b[i] ? a[i] / b[i] : 0)
                     : op == 3 ? a[i] - b[i]
                               : a[i] + b[i];
      if (out[i] != want) {
        printf("op %u: out[%d] = %d, expected %d\n", op, i, out[i], want);
        return 1;
      }
    }
  }
  printf("dogfood: %d elements ok\n", N);
  return 0;
}
