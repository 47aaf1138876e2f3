/*
 * kmu_programs.c - device programs for test_simt under Vortex 3.0's kernel
 * ABI: kernel_main(args) runs in every warp of every block the emulated
 * hardware scheduler (vxs_run_kmu) starts, reading its indices from the
 * block CSRs.  args: which case, then an output array.
 */
#include <stdint.h>

#include "vx_device.h"
#include "vxs_abi.h"

typedef struct {
  uint32_t which, pad[3];
  int32_t out[4096];
} args_t;

/* The thread's linear index in its block and the block's in the grid. */
static uint32_t thread_in_block(void) {
  return VX_CSR(VXS_CSR_CTA_THREAD_ID_X) +
         VX_CSR(VXS_CSR_CTA_BLOCK_DIM_X) *
             (VX_CSR(VXS_CSR_CTA_THREAD_ID_Y) +
              VX_CSR(VXS_CSR_CTA_BLOCK_DIM_Y) * VX_CSR(VXS_CSR_CTA_THREAD_ID_Z));
}
static uint32_t block_in_grid(void) {
  return VX_CSR(VXS_CSR_CTA_BLOCK_ID_X) +
         VX_CSR(VXS_CSR_CTA_GRID_DIM_X) * (VX_CSR(VXS_CSR_CTA_BLOCK_ID_Y) +
                                           VX_CSR(VXS_CSR_CTA_GRID_DIM_Y) * VX_CSR(VXS_CSR_CTA_BLOCK_ID_Z));
}
static uint32_t block_threads(void) {
  return VX_CSR(VXS_CSR_CTA_BLOCK_DIM_X) * VX_CSR(VXS_CSR_CTA_BLOCK_DIM_Y) * VX_CSR(VXS_CSR_CTA_BLOCK_DIM_Z);
}

int kernel_main(args_t *args);
int kernel_main(args_t *args) {
  uint32_t t = thread_in_block(), b = block_in_grid(), n = block_threads(), g = b * n + t;
  if (args->which == 0) { /* what each thread is told */
    int32_t *o = &args->out[6 * g];
    o[0] = (int32_t)t;
    o[1] = (int32_t)b;
    o[2] = (int32_t)VX_CSR(VXS_CSR_CTA_RANK);
    o[3] = (int32_t)VX_CSR(VXS_CSR_CTA_SIZE);
    o[4] = (int32_t)VX_CSR(VXS_CSR_ACTIVE_THREADS);
    o[5] = (int32_t)(VX_CSR(VXS_CSR_CTA_RANK) * VX_CSR(VXS_CSR_NUM_THREADS) + VX_CSR(VXS_CSR_THREAD_ID));
  } else { /* the block's local memory, across its barrier */
    volatile int32_t *lmem = (volatile int32_t *)VX_CSR(VXS_CSR_CTA_LMEM_ADDR);
    lmem[t] = (int32_t)(1000 * b + t);
    vx_barrier(VX_CSR(VXS_CSR_CTA_ID), VX_CSR(VXS_CSR_CTA_SIZE));
    args->out[g] = lmem[(t + 1) % n];
  }
  return 0;
}

/* A second kernel, started when the launch names its PC (CSR 0xCE1, the
 * scheduler's kernel entry): out[g] = 7000 + g, and the entry it was
 * started through. */
int other_kernel(args_t *args);
int other_kernel(args_t *args) {
  uint32_t g = block_in_grid() * block_threads() + thread_in_block();
  args->out[2 * g] = (int32_t)(7000 + g);
  args->out[2 * g + 1] = (int32_t)VX_CSR(VXS_CSR_CTA_ENTRY);
  return 0;
}
