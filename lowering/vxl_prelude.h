/*
 * vxl_prelude.h - the Vortex device ABI as MLIR text (internal to lowering/).
 *
 * The GPU-dialect rewrite replaces each gpu.thread_id / block_id / block_dim /
 * grid_dim / global_id / barrier op by a call to one of the helpers below; after the
 * upstream lowering and LLVM O2 the helpers are inlined and vanish.  Keeping
 * the ABI here, as readable IR, means the rule "what does gpu.thread_id x read"
 * lives in exactly one place.
 *
 * Two kernel ABIs (docs/VORTEX_ABI.md): Vortex 2.x below, and Vortex 3.0
 * (VXL_PRELUDE_V3) whose indices come from CSRs.
 *
 * Source of every rule of 2.x: Vortex kernel/include/vx_spawn.h and vx_intrinsics.h
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

#define VXL__PRELUDE_COMMON VXL__PRELUDE_V2_INDICES VXL__PRELUDE_SHARED

/* What both ABIs build on the index readers: fences and global ids. */
#define VXL__PRELUDE_SHARED                                                                                  \
  "func.func private @__vxl_fence() {\n"                                                                     \
  "  llvm.inline_asm has_side_effects \"\", \"~{memory}\" : () -> ()\n"                                      \
  "  return\n"                                                                                               \
  "}\n"                                                                                                      \
  "func.func private @__vxl_global_id(%dim: i32) -> index {\n"                                               \
  "  %b = func.call @__vxl_block_id(%dim) : (i32) -> index\n"                                                \
  "  %d = func.call @__vxl_block_dim(%dim) : (i32) -> index\n"                                               \
  "  %t = func.call @__vxl_thread_id(%dim) : (i32) -> index\n"                                               \
  "  %bd = arith.muli %b, %d : index\n"                                                                      \
  "  %g = arith.addi %bd, %t : index\n"                                                                      \
  "  return %g : index\n"                                                                                    \
  "}\n"

/* 2.x: thread-local threadIdx / blockIdx, global blockDim / gridDim. */
#define VXL__PRELUDE_V2_INDICES                                                                              \
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
  "func.func private @__vxl_local_base() -> !llvm.ptr {\n" CSR_READ                                          \
  "  %gp = llvm.mlir.addressof @__local_group_id : !llvm.ptr\n"                                              \
  "  %gid = llvm.load %gp : !llvm.ptr -> i32\n"                                                              \
  "  %bp = llvm.mlir.addressof @__vxl_group_bytes : !llvm.ptr\n"                                             \
  "  %bytes = llvm.load %bp : !llvm.ptr -> i32\n"                                                            \
  "  %off = llvm.mul %gid, %bytes : i32\n"                                                                   \
  "  %p = llvm.getelementptr %base[%off] : (!llvm.ptr, i32) -> !llvm.ptr, i8\n"                              \
  "  return %p : !llvm.ptr\n"                                                                                \
  "}\n" VXL__LOCAL_AREAS

/* The areas of a block's local memory past its static part, at the
 * offsets the entry writes, for both ABIs (each defines
 * @__vxl_local_base, the block's first byte). */
#define VXL__LOCAL_AREAS                                                                                     \
  "llvm.mlir.global internal @__vxl_static_bytes(0 : i32) : i32\n"                                           \
  "llvm.mlir.global internal @__vxl_scratch_offset(0 : i32) : i32\n" VXL__LOCAL_AREA("__vxl_scratch_base",   \
                                                                                     "__vxl_scratch_offset") \
      VXL__LOCAL_AREA("__vxl_dynamic_base", "__vxl_static_bytes")

/* func @NAME() -> !llvm.ptr: the block's local memory + the i32 in @OFFSET. */
#define VXL__LOCAL_AREA(NAME, OFFSET)                                                                        \
  "func.func private @" NAME "() -> !llvm.ptr {\n"                                                           \
  "  %b = func.call @__vxl_local_base() : () -> !llvm.ptr\n"                                                 \
  "  %sp = llvm.mlir.addressof @" OFFSET " : !llvm.ptr\n"                                                    \
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

/* ---- Vortex 3.0 (vx_spawn2.h, VX_types.toml): the hardware scheduler
 * starts every warp of a block at kernel_main and hands each thread its
 * indices in CSRs: thread 0xCD3.., block 0xCD6.., block size 0xCD9.., grid
 * 0xCDC.. (x, y, z); the block's local-memory slot 0xCDF; its local index
 * (its barrier id) 0xCD0 and its warp count 0xCD2.  __syncthreads() is
 * vx_barrier(CTA_ID, CTA_SIZE).  The reads have no side effects: the
 * values are fixed while a block runs, so LLVM may merge or drop them. ---- */

/* %NAME = CSR (an i32). */
#define VXL__CSR(NAME, CSR) "  %" NAME " = llvm.inline_asm \"csrr $0, " CSR "\", \"=r\" : () -> i32\n"

/* func @NAME(%dim: i32) -> index: CSR X, Y or Z by %dim. */
#define VXL__CSR3_READER(NAME, X, Y, Z)                                                                      \
  "func.func private @" NAME "(%dim: i32) -> index {\n" VXL__CSR("x", X) VXL__CSR("y", Y)                    \
      VXL__CSR("z", Z) "  %c0 = arith.constant 0 : i32\n"                                                    \
                       "  %c1 = arith.constant 1 : i32\n"                                                    \
                       "  %is0 = arith.cmpi eq, %dim, %c0 : i32\n"                                           \
                       "  %is1 = arith.cmpi eq, %dim, %c1 : i32\n"                                           \
                       "  %yz = arith.select %is1, %y, %z : i32\n"                                           \
                       "  %v = arith.select %is0, %x, %yz : i32\n"                                           \
                       "  %i = arith.index_cast %v : i32 to index\n"                                         \
                       "  return %i : index\n"                                                               \
                       "}\n"

#define VXL__PRELUDE_V3_INDICES                                                                              \
  VXL__CSR3_READER("__vxl_thread_id", "0xCD3", "0xCD4", "0xCD5")                                             \
  VXL__CSR3_READER("__vxl_block_id", "0xCD6", "0xCD7", "0xCD8")                                              \
  VXL__CSR3_READER("__vxl_block_dim", "0xCD9", "0xCDA", "0xCDB")                                             \
  VXL__CSR3_READER("__vxl_grid_dim", "0xCDC", "0xCDD", "0xCDE")                                              \
  "func.func private @__vxl_linear_tid() -> i32 {\n" VXL__CSR("tx", "0xCD3") VXL__CSR("ty", "0xCD4")         \
      VXL__CSR("tz", "0xCD5") VXL__CSR("dx", "0xCD9") VXL__CSR(                                              \
          "dy", "0xCDA") "  %z = arith.muli %tz, %dy : i32\n"                                                \
                         "  %zy = arith.addi %z, %ty : i32\n"                                                \
                         "  %zyx = arith.muli %zy, %dx : i32\n"                                              \
                         "  %l = arith.addi %zyx, %tx : i32\n"                                               \
                         "  return %l : i32\n"                                                               \
                         "}\n"                                                                               \
                         "func.func private @__vxl_block_threads() -> i32 {\n" VXL__CSR("dx", "0xCD9")       \
                             VXL__CSR("dy", "0xCDA")                                                         \
                                 VXL__CSR("dz", "0xCDB") "  %xy = arith.muli %dx, %dy : i32\n"               \
                                                         "  %n = arith.muli %xy, %dz : i32\n"                \
                                                         "  return %n : i32\n"                               \
                                                         "}\n"

/* The block's local memory: its slot (CSR 0xCDF, an address: XT wide);
 * the dynamic part and the collectives' scratch at the offsets the entry
 * writes, as in 2.x. */
#define VXL__LOCAL_MEMORY_V3(XT)                                                                             \
  "func.func private @__vxl_local_base() -> !llvm.ptr {\n"                                                   \
  "  %a = llvm.inline_asm \"csrr $0, 0xCDF\", \"=r\" : () -> " XT "\n"                                       \
  "  %p = llvm.inttoptr %a : " XT " to !llvm.ptr\n"                                                          \
  "  return %p : !llvm.ptr\n"                                                                                \
  "}\n" VXL__LOCAL_AREAS

#define VXL__BARRIER_V3                                                                                      \
  "func.func private @__vxl_barrier() {\n" VXL__CSR("gid", "0xCD0")                                          \
      VXL__CSR("nw", "0xCD2") "  llvm.inline_asm has_side_effects \".insn r 0x0B, 4, 0, x0, $0, $1\","       \
                              " \"r,r,~{memory}\" %gid, %nw : (i32, i32) -> ()\n"                            \
                              "  return\n"                                                                   \
                              "}\n"

/* The divergence helpers of the hardware, both ABIs: split, join, pred
 * and the thread mask (custom-0 funct3 2, 3, 5; CSR 0xCC4). */
#define VXL__DIVERGENCE_HW                                                                                   \
  VXL__DIVERGENCE("  %sp = llvm.inline_asm has_side_effects \".insn r 0x0B, 2, 0, $0, $1, x0\","             \
                  " \"=r,r,~{memory}\" %x : (i32) -> i32\n",                                                 \
                  "  llvm.inline_asm has_side_effects \".insn r 0x0B, 3, 0, x0, $0, x0\","                   \
                  " \"r,~{memory}\" %sp : (i32) -> ()\n",                                                    \
                  "  llvm.inline_asm has_side_effects \".insn r 0x0B, 5, 0, x0, $0, $1\","                   \
                  " \"r,r,~{memory}\" %x, %m : (i32, i32) -> ()\n",                                          \
                  "  %m = llvm.inline_asm has_side_effects \"csrr $0, 0xCC4\", \"=r\""                       \
                  " : () -> i32\n")

/* The 2.x helpers for a device whose registers are XT ("i32" or "i64"):
 * an address read from a CSR is XT wide. */
#define VXL_PRELUDE_HARDWARE(XT)                                                                             \
  "module {\n" VXL__PRELUDE_COMMON VXL__DIVERGENCE_HW VXL__LOCAL_MEMORY(                                     \
      "  %csr = llvm.inline_asm has_side_effects \"csrr $0, 0xFC3\", \"=r\""                                 \
      " : () -> " XT "\n"                                                                                    \
      "  %base = llvm.inttoptr %csr : " XT " to !llvm.ptr\n") VXL__BARRIER_HW "}\n"

/* The 3.0 helpers, the same functions over the CSRs above. */
#define VXL_PRELUDE_V3(XT)                                                                                   \
  "module {\n" VXL__PRELUDE_V3_INDICES VXL__PRELUDE_SHARED VXL__DIVERGENCE_HW VXL__LOCAL_MEMORY_V3(XT)       \
      VXL__BARRIER_V3 "}\n"

/* __syncthreads() (vx_intrinsics.h): vx_barrier, custom-0 funct3 4. */
#define VXL__BARRIER_HW                                                                                      \
  "func.func private @__vxl_barrier() {\n" VXL__BARRIER_OPERANDS                                             \
  "  llvm.inline_asm has_side_effects \".insn r 0x0B, 4, 0, x0, $0, $1\","                                   \
  " \"r,r,~{memory}\" %gid, %nw : (i32, i32) -> ()\n"                                                        \
  "  return\n"                                                                                               \
  "}\n"

#endif /* VXL_PRELUDE_H */
