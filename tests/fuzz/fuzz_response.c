/*
 * fuzz_response.c - libFuzzer target: what libvxc does with a reply from
 * a daemon it cannot trust: decode it, then pack every kernel's argument
 * buffer from it.  Every record that decodes must pack within its buffer
 * (ASan reports any write outside it) and the launch header must land at
 * launch_offset.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "client/vxc.h"

static uint8_t values_area[VXP_MAX_BUFFER_SIZE]; /* any argument fits */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  vxp_response r;
  if (vxp_response_decode(data, size, &r) != VXP_OK) {
    vxp_response_clear(&r);
    return 0;
  }
  const uint32_t grid[3] = {2, 3, 4}, block[3] = {5, 6, 7};
  for (uint32_t i = 0; i < r.nkernels; i++) {
    const vxp_kernel *k = &r.kernels[i];
    const void **values = calloc(k->nargs ? k->nargs : 1, sizeof *values);
    uint8_t *buf = malloc(k->buffer_size ? k->buffer_size : 1);
    if (!values || !buf) abort();
    for (uint32_t j = 0; j < k->nargs; j++)
      values[j] = values_area;
    if (vxc_pack_args(k, values, grid, block, 9, buf, k->buffer_size) != 0) abort(); /* decoded => packable */
    uint32_t g0;
    memcpy(&g0, buf + k->launch_offset, 4);
    if (g0 != 2) abort();
    free(buf);
    free(values);
  }
  vxp_response_clear(&r);
  return 0;
}
