/* A C host program: scale.mlir's host side, compiled by vortexd
 * (`vxc compile --host scale.mlir` -> scale.host.o), called through its C
 * interface; its kernel comes from vortexd at the first launch and runs
 * on the emulated device.  Built against the installed files only:
 *   cc host_consumer.c scale.host.o $(pkg-config --cflags --libs vortexd-runtime) */
#include <stdio.h>

#include <vortexd_runtime.h>

typedef VORTEXD_MEMREF(float, 1) memref_1d_f32;

/* scale.mlir's func.func @scale, as convert-func-to-llvm exposes it */
void _mlir_ciface_scale(memref_1d_f32 *buf, float factor);

int main(void) {
  float v[10];
  for (int i = 0; i < 10; i++)
    v[i] = (float)i;
  memref_1d_f32 m = {v, v, 0, {10}, {1}};
  _mlir_ciface_scale(&m, 3.0f);
  for (int i = 0; i < 10; i++) {
    printf("%g%s", v[i], i < 9 ? " " : "\n");
    if (v[i] != 3.0f * (float)i) {
      fprintf(stderr, "host_consumer: v[%d] = %g, expected %g\n", i, v[i], 3.0 * i);
      return 1;
    }
  }
  return 0;
}
