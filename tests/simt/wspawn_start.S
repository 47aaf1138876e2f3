/*
 * wspawn_start.S - a device program for test_simt whose start code has the
 * shape of upstream Vortex's 2.x _start (kernel/src/vx_start.S): one
 * wspawn runs init_regs on every warp, which sets each thread's sp and tp
 * and halts the warp; the next wspawn runs use_regs on every warp, which
 * relies on those registers: it pushes onto its stack (the first store
 * through sp, as __init_tls's is) and records sp and tp in the argument
 * buffer, at word 2 * hart and 2 * hart + 1.  It runs only where a warp
 * started by wspawn keeps the registers it held, as on Vortex hardware.
 */
#include "vxs_abi.h"

#define VX_TMC(reg) .insn r 0x0B, 0, 0, x0, reg, x0
#define VX_WSPAWN(n, pc) .insn r 0x0B, 1, 0, x0, n, pc

  .section .text.init, "ax", @progbits
  .globl _start
  .type _start, @function
_start:
  csrr t0, VXS_CSR_NUM_WARPS
  la t1, init_regs_all
  VX_WSPAWN(t0, t1)
  li t0, -1
  VX_TMC(t0)
  jal init_regs
  li t0, 1
  VX_TMC(t0)

  csrr t0, VXS_CSR_NUM_WARPS
  la t1, use_regs_all
  VX_WSPAWN(t0, t1)
  li t0, -1
  VX_TMC(t0)
  jal use_regs
  VX_TMC(zero)
  .size _start, .-_start

  .text
/* sp = top of this hart's slot, tp = its bottom; nothing else */
init_regs:
  csrr t0, VXS_CSR_MHARTID
  slli t0, t0, VXS_STACK_LOG2_SIZE
  li t1, VXS_STACK_TOP
  sub sp, t1, t0
  li t1, VXS_STACK_SIZE
  sub tp, sp, t1
  ret

init_regs_all:
  li t0, -1
  VX_TMC(t0)
  jal init_regs
  VX_TMC(zero)

/* a frame on the stack sp points to, then sp and tp into the buffer */
use_regs:
  addi sp, sp, -16
  sw ra, 12(sp)
  sw tp, 8(sp)
  lw t2, 8(sp)
  addi sp, sp, 16
  csrr a0, VXS_CSR_MSCRATCH
  csrr t0, VXS_CSR_MHARTID
  slli t0, t0, 3
  add a0, a0, t0
  sw sp, 0(a0)
  sw t2, 4(a0)
  ret

use_regs_all:
  li t0, -1
  VX_TMC(t0)
  jal use_regs
  VX_TMC(zero)
