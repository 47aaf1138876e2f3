/*
 * vx_kmu.S - the entry point of the emulator's device runtime for Vortex
 * 3.0's kernel ABI (Vortex kernel/src/vx_start.S with KMU_ENABLE).
 *
 * The hardware scheduler (the emulator's vxs_run_kmu) starts every warp of
 * a block here with the block's threads on and its CSRs set: each thread
 * gets its stack and TLS block (VXS_THREAD_SETUP, __vxs_init_tls), then
 * kernel_main(mscratch), what an image links as its kernel's entry
 * (--defsym=kernel_main=<entry>); `tmc 0` ends the warp.
 */
#include "vx_asm.inc"

  .section .text.init, "ax", @progbits
  .globl _start
  .type _start, @function
_start:
  VXS_THREAD_SETUP
  call __vxs_init_tls
  csrr a0, mscratch
  call kernel_main
  VX_TMC(zero)
1:
  j 1b
  .size _start, .-_start
