/*
 * vxs_abi.h - the memory map and CSR numbers the lockstep SIMT emulator and
 * its device runtime (runtime/simt/device/) agree on.  Included by host C
 * and by RV32 C/assembly, so it holds only #defines.
 *
 * CSR numbers and the instruction encodings are Vortex's
 * (kernel/include/vx_intrinsics.h, documented in docs/VORTEX_ABI.md); the
 * addresses are this emulator's choice and are documented there too.
 */
#ifndef VXS_ABI_H
#define VXS_ABI_H

/* Where the linked kernel image starts (Vortex's STARTUP_ADDR). */
#define VXS_STARTUP_ADDR 0x80000000u

/* Per-hart slots, hart h = (core * warps + warp) * threads + thread:
 * [VXS_STACK_TOP - (h + 1) * VXS_STACK_SIZE, VXS_STACK_TOP - h * VXS_STACK_SIZE).
 * The thread's TLS block sits at the bottom of its slot (tp), its stack
 * grows down from the top (sp). */
#define VXS_STACK_TOP 0xF0000000u
#define VXS_STACK_LOG2_SIZE 14
#define VXS_STACK_SIZE (1u << VXS_STACK_LOG2_SIZE)

/* Local (shared) memory of core c starts at VXS_LOCAL_MEM_BASE +
 * c * local_mem_bytes; CSR 0xFC3 returns it. */
#define VXS_LOCAL_MEM_BASE 0xF8000000u

/* Upper bounds of the emulated configuration. */
#define VXS_MAX_THREADS_PER_WARP 32
#define VXS_MAX_WARPS_PER_CORE 1024
#define VXS_MAX_CORES 8
#define VXS_MAX_HARTS 8192 /* cores x warps x threads: 128 MiB of stacks */

/* Vortex CSRs (vx_intrinsics.h / VX_types.h). */
#define VXS_CSR_MSCRATCH 0x340  /* argument buffer address */
#define VXS_CSR_MHARTID 0xF14   /* global hart id */
#define VXS_CSR_THREAD_ID 0xCC0 /* lane within the warp */
#define VXS_CSR_WARP_ID 0xCC1   /* warp within the core */
#define VXS_CSR_CORE_ID 0xCC2
#define VXS_CSR_ACTIVE_WARPS 0xCC3   /* mask of running warps of the core */
#define VXS_CSR_ACTIVE_THREADS 0xCC4 /* thread mask of the warp */
#define VXS_CSR_NUM_THREADS 0xFC0    /* threads per warp */
#define VXS_CSR_NUM_WARPS 0xFC1      /* warps per core */
#define VXS_CSR_NUM_CORES 0xFC2
#define VXS_CSR_LOCAL_MEM_BASE 0xFC3

/* Vortex 3.0's block (CTA) CSRs, set by its hardware scheduler for each
 * warp it starts (VX_types.toml, csr_cta): the block's index among those
 * the core runs, the warp's rank in it and the block's warp count; each
 * thread's index in the block, the block's index in the grid, the block
 * and grid sizes (x, y, z); the block's local-memory slot. */
#define VXS_CSR_CTA_ID 0xCD0
#define VXS_CSR_CTA_RANK 0xCD1
#define VXS_CSR_CTA_SIZE 0xCD2
#define VXS_CSR_CTA_THREAD_ID_X 0xCD3
#define VXS_CSR_CTA_THREAD_ID_Y 0xCD4
#define VXS_CSR_CTA_THREAD_ID_Z 0xCD5
#define VXS_CSR_CTA_BLOCK_ID_X 0xCD6
#define VXS_CSR_CTA_BLOCK_ID_Y 0xCD7
#define VXS_CSR_CTA_BLOCK_ID_Z 0xCD8
#define VXS_CSR_CTA_BLOCK_DIM_X 0xCD9
#define VXS_CSR_CTA_BLOCK_DIM_Y 0xCDA
#define VXS_CSR_CTA_BLOCK_DIM_Z 0xCDB
#define VXS_CSR_CTA_GRID_DIM_X 0xCDC
#define VXS_CSR_CTA_GRID_DIM_Y 0xCDD
#define VXS_CSR_CTA_GRID_DIM_Z 0xCDE
#define VXS_CSR_CTA_LMEM_ADDR 0xCDF
/* The kernel's entry PC, which the scheduler gives every block of a launch
 * (VX_types.toml: VX_CSR_CTA_ENTRY, fed from the KMU's kernel-entry DCRs):
 * upstream's start code calls it; 0 when the launch names none. */
#define VXS_CSR_CTA_ENTRY 0xCE1

#endif /* VXS_ABI_H */
