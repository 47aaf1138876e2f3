/* conv3_kernel.c - host program of vortex-hip conv3_kernel.mlir: a 3x3
 * convolution over a (width + 2)-wide padded image, one output row:
 * out[i] = sum_{r,c} in[i + r * (width + 2) + c] * w[r * 3 + c]; the wrapper
 * takes the width, the grid and the block size. */
#include <math.h>

#include "hip_host.h"

void _Z12launch_conv3PfS_S_iii(MEMREF_ARGS(float), MEMREF_ARGS(float), MEMREF_ARGS(float), int32_t width,
                               int32_t blocks, int32_t block);

int main(void) {
  enum { W = 100, STRIDE = W + 2, BS = 32 };
  float *in = dev_alloc(3 * STRIDE * 4), *wt = dev_alloc(9 * 4), *out = dev_alloc(W * 4);
  uint32_t s = 23;
  for (int i = 0; i < 3 * STRIDE; i++)
    in[i] = (float)(next_rand(&s) % 100) / 10.0f;
  for (int i = 0; i < 9; i++)
    wt[i] = (float)(next_rand(&s) % 100) / 50.0f;
  _Z12launch_conv3PfS_S_iii(MEMREF(in, 3 * STRIDE), MEMREF(wt, 9), MEMREF(out, W), W, (W + BS - 1) / BS, BS);
  for (int i = 0; i < W; i++) {
    float want = 0;
    for (int r = 0; r < 3; r++)
      for (int c = 0; c < 3; c++)
        want = want + in[i + r * STRIDE + c] * wt[r * 3 + c];
    if (fabsf(out[i] - want) > 1e-5f * fabsf(want) + 1e-5f) {
      printf("out[%d] = %g, expected %g\n", i, out[i], want);
      return 1;
    }
  }
  printf("conv3: %d elements ok\n", W);
  return 0;
}
