/* printf_kernel.c - host program of vortex-hip printf_kernel.mlir: each
 * thread prints "task=<i>, value=<'A' + str[i]>" with printf on the device;
 * the format string is a host constant the wrapper passes by pointer, which
 * the host lowering registers with the runtime as a read-only device copy.
 * The device's output reaches this program's stdout through the runtime;
 * the wrapper takes n, the grid and the block size. */
#include "hip_host.h"

void _Z13launch_printfPcjii(MEMREF_ARGS(int8_t), uint32_t n, int32_t blocks, int32_t block);

int main(void) {
  enum { N = 5, BS = 32 };
  int8_t *str = dev_alloc(N);
  const int8_t letters[N] = {0, 1, 2, 25, 7}; /* A B C Z H */
  for (int i = 0; i < N; i++)
    str[i] = letters[i];
  _Z13launch_printfPcjii(MEMREF(str, N), N, 1, BS);
  printf("printf: %d elements ok\n", N);
  return 0;
}
