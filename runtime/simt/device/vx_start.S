/*
 * vx_start.S - entry points of the emulator's Vortex device runtime.
 *
 * _start runs on warp 0, thread 0 of every core (the reset state): a
 * per-core stack for main, main, its result in __vxs_exit_code (core 0),
 * then `tmc 0` halts the warp.  Warps started by vx_wspawn enter at
 * __vxs_warp_entry with thread 0 active; warp 0 joins the work through
 * __vxs_run_warp0.  Both turn every thread of the warp on, give each its
 * own stack and TLS block (VXS_THREAD_SETUP), and run __vxs_worker.
 */
#include "vx_asm.inc"

  .section .text.init, "ax", @progbits
  .globl _start
  .type _start, @function
_start:
  csrr t0, VXS_CSR_CORE_ID
  addi t0, t0, 1
  slli t0, t0, 12            /* 4 KiB main stack per core */
  la sp, __vxs_main_stacks
  add sp, sp, t0
  mv tp, zero
  call main
  csrr t0, VXS_CSR_CORE_ID
  bnez t0, 1f
  la t1, __vxs_exit_code
  sw a0, 0(t1)
1:
  VX_TMC(zero)
2:
  j 2b
  .size _start, .-_start

  .text
  .globl __vxs_warp_entry
  .type __vxs_warp_entry, @function
__vxs_warp_entry:
  li t0, -1
  VX_TMC(t0)
  VXS_THREAD_SETUP
  call __vxs_init_tls
  call __vxs_worker
  VX_TMC(zero)
1:
  j 1b
  .size __vxs_warp_entry, .-__vxs_warp_entry

/* void __vxs_run_warp0(void): called by thread 0 of warp 0; returns on
 * thread 0 alone with its own stack and tp back. */
  .globl __vxs_run_warp0
  .type __vxs_run_warp0, @function
__vxs_run_warp0:
  addi sp, sp, -4 * REGBYTES
  REG_S ra, 3 * REGBYTES(sp)
  REG_S s0, 2 * REGBYTES(sp)
  REG_S s1, 1 * REGBYTES(sp)
  mv s0, sp
  mv s1, tp
  li t0, -1
  VX_TMC(t0)
  VXS_THREAD_SETUP
  call __vxs_init_tls
  call __vxs_worker
  li t0, 1
  VX_TMC(t0)
  mv sp, s0
  mv tp, s1
  REG_L ra, 3 * REGBYTES(sp)
  REG_L s0, 2 * REGBYTES(sp)
  REG_L s1, 1 * REGBYTES(sp)
  addi sp, sp, 4 * REGBYTES
  ret
  .size __vxs_run_warp0, .-__vxs_run_warp0
