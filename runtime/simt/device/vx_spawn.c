/*
 * vx_spawn.c - vx_spawn_threads and the thread model of the emulator's
 * Vortex device runtime (the contract of Vortex's kernel/include/vx_spawn.h,
 * described in docs/VORTEX_ABI.md).
 *
 * A block ("group") of T threads takes ceil(T / threads_per_warp) warps of
 * one core; a core holds warps_per_core / that many groups at once.  Global
 * group g of core c runs blocks c * groups + g, then that plus cores *
 * groups, and so on.  Thread i of a group is lane i % threads_per_warp of
 * the group's warp i / threads_per_warp; a last warp with fewer threads
 * masks the rest off with tmc.  __syncthreads() in the kernel is
 * vx_barrier(__local_group_id, __warps_per_group); between two blocks the
 * warps of a group meet at the same barrier, so a block never starts while
 * another warp of its group still uses the previous block's local memory.
 * At the end every warp the call started meets at barrier
 * warps_per_core - 1 (an id no group barrier with two or more warps uses),
 * so vx_spawn_threads returns after all of them are done.
 *
 * All code here runs in lockstep: every branch below is uniform within a
 * warp (it depends on the warp, the core or the launch, never on the lane).
 */
#include <stdint.h>

#include "vx_device.h"
#include "vxs_abi.h"

__thread dim3_t threadIdx;
__thread dim3_t blockIdx;
__thread uint32_t __local_group_id;
dim3_t blockDim, gridDim;
uint32_t __warps_per_group;

int32_t __vxs_exit_code;
char __vxs_main_stacks[VXS_MAX_CORES][4096] __attribute__((aligned(16)));

void __vxs_warp_entry(void);
void __vxs_run_warp0(void);

typedef struct {
  void (*fn)(void *);
  const void *arg;
  uint32_t nthreads; /* threads per block */
  uint32_t wpg;      /* warps per group */
  uint32_t groups;   /* groups a core holds at once */
  uint32_t used;     /* groups this call runs on the core */
  uint32_t nblocks;
  uint32_t nwarps; /* warps this call runs on the core */
} vxs_launch;

static vxs_launch launches[VXS_MAX_CORES];

void __vxs_worker(void) {
  uint32_t lanes = VX_CSR(VXS_CSR_NUM_THREADS), warp = VX_CSR(VXS_CSR_WARP_ID),
           lane = VX_CSR(VXS_CSR_THREAD_ID);
  uint32_t core = VX_CSR(VXS_CSR_CORE_ID), cores = VX_CSR(VXS_CSR_NUM_CORES),
           warps = VX_CSR(VXS_CSR_NUM_WARPS);
  const vxs_launch *l = &launches[core];
  uint32_t group = warp / l->wpg, group_warp = warp - group * l->wpg;
  if (group < l->used) {
    uint32_t first = group_warp * lanes;
    if (l->nthreads - first < lanes) vx_tmc((1u << (l->nthreads - first)) - 1);
    uint32_t local = first + lane;
    threadIdx.x = local % blockDim.x;
    threadIdx.y = local / blockDim.x % blockDim.y;
    threadIdx.z = local / (blockDim.x * blockDim.y);
    __local_group_id = group;
    uint32_t stride = cores * l->groups;
    for (uint32_t b = core * l->groups + group; b < l->nblocks; b += stride) {
      blockIdx.x = b % gridDim.x;
      blockIdx.y = b / gridDim.x % gridDim.y;
      blockIdx.z = b / (gridDim.x * gridDim.y);
      l->fn((void *)l->arg);
      if (b + stride < l->nblocks) vx_barrier(group, l->wpg);
    }
  }
  vx_barrier(warps - 1, l->nwarps);
}

int vx_spawn_threads(uint32_t dimension, const uint32_t *grid_dim, const uint32_t *block_dim,
                     void (*kernel_func)(void *), const void *arg) {
  uint32_t lanes = VX_CSR(VXS_CSR_NUM_THREADS), warps = VX_CSR(VXS_CSR_NUM_WARPS);
  uint32_t core = VX_CSR(VXS_CSR_CORE_ID);
  for (uint32_t i = 0; i < 3; i++) {
    gridDim.m[i] = i < dimension ? grid_dim[i] : 1;
    blockDim.m[i] = (block_dim && i < dimension) ? block_dim[i] : 1;
  }
  uint32_t nthreads = blockDim.x * blockDim.y * blockDim.z;
  uint32_t nblocks = gridDim.x * gridDim.y * gridDim.z;
  if (nthreads == 0 || nthreads > lanes * warps) return -1;
  vxs_launch *l = &launches[core];
  l->fn = kernel_func;
  l->arg = arg;
  l->nthreads = nthreads;
  l->wpg = (nthreads + lanes - 1) / lanes;
  l->groups = warps / l->wpg;
  l->nblocks = nblocks;
  __warps_per_group = l->wpg;
  uint32_t first = core * l->groups;
  if (first >= nblocks) return 0;
  uint32_t used = nblocks - first < l->groups ? nblocks - first : l->groups;
  l->used = used;
  l->nwarps = used * l->wpg;
  if (l->nwarps > 1) vx_wspawn(l->nwarps, __vxs_warp_entry);
  __vxs_run_warp0();
  return 0;
}
