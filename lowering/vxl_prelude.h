/*
 * vxl_prelude.h - the Vortex device ABI as MLIR text (internal to lowering/).
 *
 * The GPU-dialect rewrite replaces each gpu.thread_id / block_id / block_dim /
 * grid_dim / global_id / barrier op by a call to one of the helpers below; after the
 * upstream lowering and LLVM O2 the helpers are inlined and vanish.  Keeping
 * the ABI here, as readable IR, means the rule "what does gpu.thread_id x read"
 * lives in exactly one place.
 *
 * Source of every rule: Vortex kernel/include/vx_spawn.h and vx_intrinsics.h
 * (see docs/VORTEX_ABI.md):
 *   - threadIdx, blockIdx: extern __thread dim3_t (thread-locals);
 *   - blockDim, gridDim:   extern dim3_t (plain globals);
 *   - __syncthreads() = vx_barrier(__local_group_id, __warps_per_group), where
 *     vx_barrier is `.insn r 0x0B, 4, 0, x0, id, nwarps` (custom-0, funct3 4)
 *     and counts WARPS, not threads.
 * dim3_t is three u32 {x, y, z}; it is modelled as !llvm.array<3 x i32> so a
 * dimension index can select the field.

 */
#ifndef VXL_PRELUDE_H
#define VXL_PRELUDE_H

#define VXL__PRELUDE_COMMON                                                                                  \
  "llvm.mlir.global external thread_local @threadIdx() {addr_space = 0 : i32}"                               \
  " : !llvm.array<3 x i32>\n"                                                                                \
  "llvm.mlir.global external thread_local @blockIdx() {addr_space = 0 : i32}"                                \
  " : !llvm.array<3 x i32>\n"                                                                                \
  "llvm.mlir.global external @blockDim() {addr_space = 0 : i32}"                                             \
  " : !llvm.array<3 x i32>\n"                                                                                \
  "llvm.mlir.global external @gridDim() {addr_space = 0 : i32}"                                              \
  " : !llvm.array<3 x i32>\n"                                                                                \
  "llvm.mlir.global external thread_local @__local_group_id()"                                               \
  " {addr_space = 0 : i32} : i32\n"                                                                          \
  "llvm.mlir.global external @__warps_per_group() {addr_space = 0 : i32}"                                    \
  " : i32\n" VXL__DIM3_READER("__vxl_thread_id", "threadIdx") VXL__DIM3_READER("__vxl_block_id", "blockIdx") \
      VXL__DIM3_READER("__vxl_block_dim", "blockDim") VXL__DIM3_READER(                                      \
          "__vxl_grid_dim",                                                                                  \
          "gridDim") "func.func private @__vxl_linear_tid() -> i32 {\n" VXL__LINEAR_TID                      \
                     "  return %l : i32\n"                                                                   \
                     "}\n"                                                                                   \
                     "func.func private @__vxl_block_threads() -> i32 {\n" VXL__BLOCK_THREADS                \
                     "  return %n : i32\n"                                                                   \
                     "}\n"                                                                                   \
                     "func.func private @__vxl_fence() {\n"                                                  \
                     "  llvm.inline_asm has_side_effects \"\", \"~{memory}\" : () -> ()\n"                   \
                     "  return\n"                                                                            \
                     "}\n"                                                                                   \
                     "func.func private @__vxl_global_id(%dim: i32) -> index {\n"                            \
                     "  %b = func.call @__vxl_block_id(%dim) : (i32) -> index\n"                             \
                     "  %d = func.call @__vxl_block_dim(%dim) : (i32) -> index\n"                            \
                     "  %t = func.call @__vxl_thread_id(%dim) : (i32) -> index\n"                            \
                     "  %bd = arith.muli %b, %d : index\n"                                                   \
                     "  %g = arith.addi %bd, %t : index\n"                                                   \
                     "  return %g : index\n"                                                                 \
                     "}\n"

/* %l: the thread's linear id in its block, x fastest (vx_spawn.h). */
#define VXL__LINEAR_TID                                                                                      \
  "  %t = llvm.mlir.addressof @threadIdx : !llvm.ptr\n"                                                      \
  "  %d = llvm.mlir.addressof @blockDim : !llvm.ptr\n"                                                       \
  "  %tx = llvm.load %t : !llvm.ptr -> i32\n"                                                                \
  "  %tyP = llvm.getelementptr %t[0, 1] : (!llvm.ptr) -> !llvm.ptr, !llvm.array<3 x i32>\n"                  \
  "  %tzP = llvm.getelementptr %t[0, 2] : (!llvm.ptr) -> !llvm.ptr, !llvm.array<3 x i32>\n"                  \
  "  %ty = llvm.load %tyP : !llvm.ptr -> i32\n"                                                              \
  "  %tz = llvm.load %tzP : !llvm.ptr -> i32\n"                                                              \
  "  %dx = llvm.load %d : !llvm.ptr -> i32\n"                                                                \
  "  %dyP = llvm.getelementptr %d[0, 1] : (!llvm.ptr) -> !llvm.ptr, !llvm.array<3 x i32>\n"                  \
  "  %dy = llvm.load %dyP : !llvm.ptr -> i32\n"                                                              \
  "  %z = arith.muli %tz, %dy : i32\n"                                                                       \
  "  %zy = arith.addi %z, %ty : i32\n"                                                                       \
  "  %zyx = arith.muli %zy, %dx : i32\n"                                                                     \
  "  %l = arith.addi %zyx, %tx : i32\n"

/* %n: threads per block. */
#define VXL__BLOCK_THREADS                                                                                   \
  "  %d = llvm.mlir.addressof @blockDim : !llvm.ptr\n"                                                       \
  "  %dx = llvm.load %d : !llvm.ptr -> i32\n"                                                                \
  "  %dyP = llvm.getelementptr %d[0, 1] : (!llvm.ptr) -> !llvm.ptr, !llvm.array<3 x i32>\n"                  \
  "  %dzP = llvm.getelementptr %d[0, 2] : (!llvm.ptr) -> !llvm.ptr, !llvm.array<3 x i32>\n"                  \
  "  %dy = llvm.load %dyP : !llvm.ptr -> i32\n"                                                              \
  "  %dz = llvm.load %dzP : !llvm.ptr -> i32\n"                                                              \
  "  %xy = arith.muli %dx, %dy : i32\n"                                                                      \
  "  %n = arith.muli %xy, %dz : i32\n"

/* func @NAME(%dim: i32) -> index: loads field %dim of the dim3 global VAR. */
#define VXL__DIM3_READER(NAME, VAR)                                                                          \
  "func.func private @" NAME "(%dim: i32) -> index {\n"                                                      \
  "  %p = llvm.mlir.addressof @" VAR " : !llvm.ptr\n"                                                        \
  "  %f = llvm.getelementptr %p[0, %dim] : (!llvm.ptr, i32) -> !llvm.ptr,"                                   \
  " !llvm.array<3 x i32>\n"                                                                                  \
  "  %v = llvm.load %f : !llvm.ptr -> i32\n"                                                                 \
  "  %i = arith.index_cast %v : i32 to index\n"                                                              \
  "  return %i : index\n"                                                                                    \
  "}\n"

/* Workgroup (shared) memory: __local_mem(size) in vx_spawn.h is
 * csr_read(VX_CSR_LOCAL_MEM_BASE = 0xFC3) + __local_group_id * size.  Here
 * size is __vxl_group_bytes (static + dynamic bytes of this launch) and the
 * dynamic part starts __vxl_static_bytes in; both are written by main from
 * the kernel metadata and the launch header before vx_spawn_threads.
 * CSR_READ defines %base, the core's local memory as a pointer. */
#define VXL__LOCAL_MEMORY(CSR_READ)                                                                          \
  "llvm.mlir.global internal @__vxl_group_bytes(0 : i32) : i32\n"                                            \
  "llvm.mlir.global internal @__vxl_static_bytes(0 : i32) : i32\n"                                           \
  "llvm.mlir.global internal @__vxl_scratch_offset(0 : i32) : i32\n"                                         \
  "func.func private @__vxl_local_base() -> !llvm.ptr {\n" CSR_READ                                          \
  "  %gp = llvm.mlir.addressof @__local_group_id : !llvm.ptr\n"                                              \
  "  %gid = llvm.load %gp : !llvm.ptr -> i32\n"                                                              \
  "  %bp = llvm.mlir.addressof @__vxl_group_bytes : !llvm.ptr\n"                                             \
  "  %bytes = llvm.load %bp : !llvm.ptr -> i32\n"                                                            \
  "  %off = llvm.mul %gid, %bytes : i32\n"                                                                   \
  "  %p = llvm.getelementptr %base[%off] : (!llvm.ptr, i32) -> !llvm.ptr, i8\n"                              \
  "  return %p : !llvm.ptr\n"                                                                                \
  "}\n"                                                                                                      \
  "func.func private @__vxl_scratch_base() -> !llvm.ptr {\n"                                                 \
  "  %b = func.call @__vxl_local_base() : () -> !llvm.ptr\n"                                                 \
  "  %sp = llvm.mlir.addressof @__vxl_scratch_offset : !llvm.ptr\n"                                          \
  "  %s = llvm.load %sp : !llvm.ptr -> i32\n"                                                                \
  "  %p = llvm.getelementptr %b[%s] : (!llvm.ptr, i32) -> !llvm.ptr, i8\n"                                   \
  "  return %p : !llvm.ptr\n"                                                                                \
  "}\n"                                                                                                      \
  "func.func private @__vxl_dynamic_base() -> !llvm.ptr {\n"                                                 \
  "  %b = func.call @__vxl_local_base() : () -> !llvm.ptr\n"                                                 \
  "  %sp = llvm.mlir.addressof @__vxl_static_bytes : !llvm.ptr\n"                                            \
  "  %s = llvm.load %sp : !llvm.ptr -> i32\n"                                                                \
  "  %p = llvm.getelementptr %b[%s] : (!llvm.ptr, i32) -> !llvm.ptr, i8\n"                                   \
  "  return %p : !llvm.ptr\n"                                                                                \
  "}\n"

/* Divergence (vx_intrinsics.h): vx_split(pred) = .insn r 0x0B, 2, 0, rd,
 * pred, x0 returns the IPDOM stack pointer vx_join (funct3 3) takes;
 * vx_pred(cond, mask) = funct3 5; the active-thread mask is CSR 0xCC4
 * (VX_CSR_ACTIVE_THREADS).  OP(name, operands) emits one operation. */
#define VXL__DIVERGENCE(SPLIT, JOIN, PRED, ACTIVE)                                                           \
  "func.func private @__vxl_split(%c: i1) -> i32 {\n"                                                        \
  "  %x = arith.extui %c : i1 to i32\n" SPLIT "  return %sp : i32\n}\n"                                      \
  "func.func private @__vxl_join(%sp: i32) {\n" JOIN "  return\n}\n"                                         \
  "func.func private @__vxl_pred(%c: i1, %m: i32) {\n"                                                       \
  "  %x = arith.extui %c : i1 to i32\n" PRED "  return\n}\n"                                                 \
  "func.func private @__vxl_active_threads() -> i32 {\n" ACTIVE "  return %m : i32\n}\n"

/* Loads the barrier id and warp count __syncthreads() passes to vx_barrier. */
#define VXL__BARRIER_OPERANDS                                                                                \
  "  %gp = llvm.mlir.addressof @__local_group_id : !llvm.ptr\n"                                              \
  "  %gid = llvm.load %gp : !llvm.ptr -> i32\n"                                                              \
  "  %wp = llvm.mlir.addressof @__warps_per_group : !llvm.ptr\n"                                             \
  "  %nw = llvm.load %wp : !llvm.ptr -> i32\n"

/* The helpers for a device whose registers are XT ("i32" or "i64"): an
 * address read from a CSR is XT wide. */
#define VXL_PRELUDE_HARDWARE(XT)                                                                             \
  "module {\n" VXL__PRELUDE_COMMON VXL__DIVERGENCE(                                                          \
      "  %sp = llvm.inline_asm has_side_effects \".insn r 0x0B, 2, 0, $0, $1, x0\","                         \
      " \"=r,r,~{memory}\" %x : (i32) -> i32\n",                                                             \
      "  llvm.inline_asm has_side_effects \".insn r 0x0B, 3, 0, x0, $0, x0\","                               \
      " \"r,~{memory}\" %sp : (i32) -> ()\n",                                                                \
      "  llvm.inline_asm has_side_effects \".insn r 0x0B, 5, 0, x0, $0, $1\","                               \
      " \"r,r,~{memory}\" %x, %m : (i32, i32) -> ()\n",                                                      \
      "  %m = llvm.inline_asm has_side_effects \"csrr $0, 0xCC4\", \"=r\""                                   \
      " : () -> i32\n")                                                                                      \
      VXL__LOCAL_MEMORY("  %csr = llvm.inline_asm has_side_effects \"csrr $0, 0xFC3\", \"=r\""               \
                        " : () -> " XT "\n"                                                                  \
                        "  %base = llvm.inttoptr %csr : " XT " to !llvm.ptr\n") VXL__BARRIER_HW "}\n"

/* __syncthreads() (vx_intrinsics.h): vx_barrier, custom-0 funct3 4. */
#define VXL__BARRIER_HW                                                                                      \
  "func.func private @__vxl_barrier() {\n" VXL__BARRIER_OPERANDS                                             \
  "  llvm.inline_asm has_side_effects \".insn r 0x0B, 4, 0, x0, $0, $1\","                                   \
  " \"r,r,~{memory}\" %gid, %nw : (i32, i32) -> ()\n"                                                        \
  "  return\n"                                                                                               \
  "}\n"

#endif /* VXL_PRELUDE_H */
