/* Fiber context switch for the emulated device.
 *   void vxemu_switch(vxemu_ctx *from, vxemu_ctx *to);
 * Saves the callee-saved state (ra, sp, s0-s11, tp, fs0-fs11) into *from and
 * loads it from *to.  tp is part of the context: every emulated thread has
 * its own TLS block, so threadIdx/blockIdx (local-exec TLS) differ per fiber. */
  .text
  .globl vxemu_switch
  .type vxemu_switch, @function
vxemu_switch:
  sw ra, 0(a0)
  sw sp, 4(a0)
  sw s0, 8(a0)
  sw s1, 12(a0)
  sw s2, 16(a0)
  sw s3, 20(a0)
  sw s4, 24(a0)
  sw s5, 28(a0)
  sw s6, 32(a0)
  sw s7, 36(a0)
  sw s8, 40(a0)
  sw s9, 44(a0)
  sw s10, 48(a0)
  sw s11, 52(a0)
  sw tp, 56(a0)
  fsw fs0, 60(a0)
  fsw fs1, 64(a0)
  fsw fs2, 68(a0)
  fsw fs3, 72(a0)
  fsw fs4, 76(a0)
  fsw fs5, 80(a0)
  fsw fs6, 84(a0)
  fsw fs7, 88(a0)
  fsw fs8, 92(a0)
  fsw fs9, 96(a0)
  fsw fs10, 100(a0)
  fsw fs11, 104(a0)
  lw ra, 0(a1)
  lw sp, 4(a1)
  lw s0, 8(a1)
  lw s1, 12(a1)
  lw s2, 16(a1)
  lw s3, 20(a1)
  lw s4, 24(a1)
  lw s5, 28(a1)
  lw s6, 32(a1)
  lw s7, 36(a1)
  lw s8, 40(a1)
  lw s9, 44(a1)
  lw s10, 48(a1)
  lw s11, 52(a1)
  lw tp, 56(a1)
  flw fs0, 60(a1)
  flw fs1, 64(a1)
  flw fs2, 68(a1)
  flw fs3, 72(a1)
  flw fs4, 76(a1)
  flw fs5, 80(a1)
  flw fs6, 84(a1)
  flw fs7, 88(a1)
  flw fs8, 92(a1)
  flw fs9, 96(a1)
  flw fs10, 100(a1)
  flw fs11, 104(a1)
  ret
  .size vxemu_switch, .-vxemu_switch

/* First entry of a fiber: s0 holds its argument. */
  .globl vxemu_fiber_entry
  .type vxemu_fiber_entry, @function
vxemu_fiber_entry:
  mv a0, s0
  call vxemu_fiber_main
1: j 1b
  .size vxemu_fiber_entry, .-vxemu_fiber_entry

/* Process entry: a static stack, then C. */
  .section .text._start
  .globl _start
_start:
  la sp, vxemu_main_stack
  li t0, 65536
  add sp, sp, t0
  call vxemu_main
  li a7, 93
  ecall
