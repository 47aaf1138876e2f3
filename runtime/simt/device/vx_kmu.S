/*
 * vx_kmu.S - the entry point of the emulator's device runtime for Vortex
 * 3.0's kernel ABI, in the shape of upstream's __vx_cta_entry
 * (kernel/src/vx_start.S with KMU_ENABLE).
 *
 * The hardware scheduler (the emulator's vxs_run_kmu) starts every warp of
 * a block here with the block's threads on and its CSRs set: each thread
 * gets its stack and TLS block (VXS_THREAD_SETUP, __vxs_init_tls), then
 * calls the kernel's entry with a0 = mscratch (the argument buffer): the
 * PC the launch names (CSR 0xCE1, VX_CSR_CTA_ENTRY), or, when it names
 * none, kernel_main, what an image links as its entry
 * (--defsym=kernel_main=<entry>).  Then wsync and `tmc 0` end the warp.
 */
#include "vx_asm.inc"

/* wsync (custom-0, funct3 7): the warp's issued instructions complete */
#define VX_WSYNC .insn r 0x0B, 7, 0, x0, x0, x0

  .section .text.init, "ax", @progbits
  .globl _start
  .type _start, @function
_start:
  VXS_THREAD_SETUP
  call __vxs_init_tls
  csrr a0, mscratch
  csrr t0, VXS_CSR_CTA_ENTRY
  beqz t0, 1f
  jalr ra, t0
  j 2f
1:
  call kernel_main
2:
  VX_WSYNC
  VX_TMC(zero)
3:
  j 3b
  .size _start, .-_start
