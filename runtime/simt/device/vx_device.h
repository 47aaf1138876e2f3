/*
 * vx_device.h - the Vortex kernel-side interface of the emulator's device
 * runtime (the contract of Vortex's vx_spawn.h and vx_intrinsics.h, see
 * docs/VORTEX_ABI.md): the thread model's variables, vx_spawn_threads, and
 * the custom-0 instructions and CSR reads as inline assembly.  RV32 only.
 */
#ifndef VX_DEVICE_H
#define VX_DEVICE_H

#include <stdint.h>

typedef union {
  struct {
    uint32_t x, y, z;
  };
  uint32_t m[3];
} dim3_t;

extern __thread dim3_t threadIdx, blockIdx;
extern __thread uint32_t __local_group_id;
extern dim3_t blockDim, gridDim;
extern uint32_t __warps_per_group;

int vx_spawn_threads(uint32_t dimension, const uint32_t *grid_dim, const uint32_t *block_dim,
                     void (*kernel_func)(void *), const void *arg);

/* csrr of CSR n (a constant). */
#define VX_CSR(n)                                                                                            \
  ({                                                                                                         \
    uint32_t v_;                                                                                             \
    __asm__ volatile("csrr %0, %1" : "=r"(v_) : "i"(n));                                                     \
    v_;                                                                                                      \
  })

static inline void vx_tmc(uint32_t mask) {
  __asm__ volatile(".insn r 0x0B, 0, 0, x0, %0, x0" ::"r"(mask) : "memory");
}

static inline void vx_wspawn(uint32_t n, void (*pc)(void)) {
  __asm__ volatile(".insn r 0x0B, 1, 0, x0, %0, %1" ::"r"(n), "r"(pc) : "memory");
}

static inline uint32_t vx_split(uint32_t pred) {
  uint32_t sp;
  __asm__ volatile(".insn r 0x0B, 2, 0, %0, %1, x0" : "=r"(sp) : "r"(pred) : "memory");
  return sp;
}

static inline void vx_join(uint32_t sp) {
  __asm__ volatile(".insn r 0x0B, 3, 0, x0, %0, x0" ::"r"(sp) : "memory");
}

static inline void vx_barrier(uint32_t id, uint32_t nwarps) {
  __asm__ volatile(".insn r 0x0B, 4, 0, x0, %0, %1" ::"r"(id), "r"(nwarps) : "memory");
}

static inline void vx_pred(uint32_t cond, uint32_t mask) {
  __asm__ volatile(".insn r 0x0B, 5, 0, x0, %0, %1" ::"r"(cond), "r"(mask) : "memory");
}

#endif /* VX_DEVICE_H */
