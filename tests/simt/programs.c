/*
 * programs.c - device programs for test_simt: each case is a kernel body
 * written with Vortex's intrinsics as inline assembly, so the instructions
 * the emulator sees are exactly the ones written here.  main reads the
 * argument buffer (mscratch): which case, grid and block size, and an
 * output array each thread writes.
 */
#include <stdint.h>

#include "vx_device.h"

typedef struct {
  uint32_t which, grid, block, pad;
  int32_t out[4096];
} args_t;

static uint32_t global_id(void) { return blockIdx.x * blockDim.x + threadIdx.x; }

/* 0: odd threads write 1, even ones 2, through a plain branch. */
static void divergent_branch(void *a) {
  args_t *args = a;
  uint32_t g = global_id();
  __asm__ goto("andi t0, %0, 1\n\tbnez t0, %l[odd]" ::"r"(g) : "t0" : odd);
  args->out[g] = 2;
  return;
odd:
  args->out[g] = 1;
}

/* 1: the same branch between vx_split and vx_join; out = 1 odd, 2 even,
 * plus 10 x the split's stack depth result. */
static void split_join(void *a) {
  args_t *args = a;
  uint32_t g = global_id();
  uint32_t sp = vx_split(g & 1);
  __asm__ goto("andi t0, %0, 1\n\tbnez t0, %l[odd]" ::"r"(g) : "t0" : odd);
  args->out[g] = 2;
  goto done;
odd:
  args->out[g] = 1;
done:
  vx_join(sp);
  args->out[g] += 10 * (int32_t)sp;
}

/* 2: a join of a split that never ran (depth 5 on an empty stack). */
static void join_without_split(void *a) {
  (void)a;
  vx_join(5);
}

/* 3: a loop whose trip count is the thread's id (sum 1..g), its exit made
 * uniform with vx_pred and the mask read before the loop. */
static void pred_loop(void *a) {
  args_t *args = a;
  uint32_t g = global_id();
  uint32_t mask = VX_CSR(0xCC4);
  int32_t sum = 0;
  uint32_t i = 0;
  for (;;) {
    uint32_t stay = i < g;
    vx_pred(stay, mask);
    if (!stay) break; /* uniform after vx_pred: every active thread stays */
    sum += (int32_t)++i;
  }
  args->out[g] = sum;
}

/* 4: only the first warp of each block waits at the block's barrier. */
static void barrier_deadlock(void *a) {
  (void)a;
  if (VX_CSR(0xCC1) == 0) vx_barrier(__local_group_id, 2);
}

/* 5: what the CSRs say, 8 words per thread. */
static void csrs(void *a) {
  args_t *args = a;
  int32_t *o = &args->out[8 * global_id()];
  o[0] = (int32_t)VX_CSR(0xCC0);
  o[1] = (int32_t)VX_CSR(0xCC1);
  o[2] = (int32_t)VX_CSR(0xCC2);
  o[3] = (int32_t)VX_CSR(0xCC4);
  o[4] = (int32_t)VX_CSR(0xFC0);
  o[5] = (int32_t)VX_CSR(0xFC1);
  o[6] = (int32_t)VX_CSR(0xFC3);
  o[7] = (int32_t)VX_CSR(0xF14);
}

/* 6: splits that are never joined: with T threads a warp can push T - 1
 * entries before every side holds one thread. */
static void ipdom_overflow(void *a) {
  (void)a;
  uint32_t g = global_id();
  for (uint32_t bit = 0; bit < 32; bit++)
    vx_split(g >> bit & 1);
}

/* 7: never ends. */
static void endless(void *a) {
  (void)a;
  for (;;)
    __asm__ volatile("");
}

/* 8: a store to unmapped memory. */
static void bad_store(void *a) {
  (void)a;
  *(volatile int32_t *)0x1000 = 1;
}

/* 9: the threads of a block exchange values through local memory around a
 * barrier: out[g] = the value of the thread mirrored in the block. */
static void barrier_exchange(void *a) {
  args_t *args = a;
  uint32_t t = threadIdx.x, n = blockDim.x;
  volatile int32_t *lmem = (volatile int32_t *)(VX_CSR(0xFC3) + __local_group_id * n * 4);
  lmem[t] = (int32_t)(global_id() * 3);
  vx_barrier(__local_group_id, __warps_per_group);
  args->out[global_id()] = lmem[n - 1 - t];
}

/* 10: votes of (lane is odd) and (lane < 2): 8 words per thread. */
static void votes(void *a) {
  args_t *args = a;
  uint32_t lane = VX_CSR(0xCC0), odd = lane & 1, low = lane < 2, r[8];
  __asm__ volatile(".insn r 0x0B, 0, 1, %0, %1, x0" : "=r"(r[0]) : "r"(odd));
  __asm__ volatile(".insn r 0x0B, 1, 1, %0, %1, x0" : "=r"(r[1]) : "r"(odd));
  __asm__ volatile(".insn r 0x0B, 2, 1, %0, %1, x0" : "=r"(r[2]) : "r"(odd));
  __asm__ volatile(".insn r 0x0B, 3, 1, %0, %1, x0" : "=r"(r[3]) : "r"(odd));
  __asm__ volatile(".insn r 0x0B, 0, 1, %0, %1, x0" : "=r"(r[4]) : "r"(1u));
  __asm__ volatile(".insn r 0x0B, 1, 1, %0, %1, x0" : "=r"(r[5]) : "r"(0u));
  __asm__ volatile(".insn r 0x0B, 2, 1, %0, %1, x0" : "=r"(r[6]) : "r"(1u));
  __asm__ volatile(".insn r 0x0B, 3, 1, %0, %1, x0" : "=r"(r[7]) : "r"(low));
  for (int i = 0; i < 8; i++)
    args->out[8 * global_id() + i] = (int32_t)r[i];
}

/* 11: a write to a read-only Vortex CSR (the thread id). */
static void csr_write(void *a) {
  (void)a;
  __asm__ volatile("csrw 0xCC0, %0" : : "r"(1u));
}

/* 12: mscratch is writable, one register per core (upstream's 2.x
 * vx_spawn_threads hands its spawned warps their arguments through it):
 * every thread writes 0x5000 + its core (csrrw, keeping what it read),
 * then, after the block's barrier, reads it again; out = {first read,
 * second read, core} per thread. */
static void mscratch_per_core(void *a) {
  args_t *args = a;
  uint32_t g = global_id(), mine = 0x5000u + VX_CSR(0xCC2), before, after;
  __asm__ volatile("csrrw %0, 0x340, %1" : "=r"(before) : "r"(mine) : "memory");
  vx_barrier(__local_group_id, __warps_per_group);
  __asm__ volatile("csrr %0, 0x340" : "=r"(after) : : "memory");
  args->out[3 * g] = (int32_t)before;
  args->out[3 * g + 1] = (int32_t)after;
  args->out[3 * g + 2] = (int32_t)VX_CSR(0xCC2);
}

static void (*const cases[])(void *) = {divergent_branch,
                                        split_join,
                                        join_without_split,
                                        pred_loop,
                                        barrier_deadlock,
                                        csrs,
                                        ipdom_overflow,
                                        endless,
                                        bad_store,
                                        barrier_exchange,
                                        votes,
                                        csr_write,
                                        mscratch_per_core};

int main(void) {
  args_t *args = (args_t *)VX_CSR(0x340);
  if (args->which >= sizeof cases / sizeof cases[0]) return -2;
  return vx_spawn_threads(1, &args->grid, &args->block, cases[args->which], args);
}
