/*
 * vxl_divergence.c - warp divergence for Vortex (MLIR side).
 *
 * Vortex hardware does not reconverge by itself: a branch on which the
 * threads of a warp disagree aborts ("divergent branch!") unless it is
 * wrapped in vx_split/vx_join, and a loop whose exit test differs between
 * threads must predicate finished threads off with vx_pred (see
 * ../shared/notes/vortex-abi.md; the Vortex LLVM fork does this in a backend
 * pass that upstream LLVM lacks).
 *
 * Uniformity analysis, on a function after the GPU rewrite and after
 * scf.for became scf.while: divergent values start at the thread-id reads
 * (calls to __vxl_thread_id / __vxl_global_id) and at the arguments of
 * non-kernel functions (their callers are unknown); they spread to every
 * result of an op with a divergent operand (loads through divergent
 * addresses included), to region results yielded from divergent values, to
 * loop-carried values, to everything a loop with a divergent exit test
 * produces, and to the block arguments a divergent branch forwards.  Block
 * ids, grid/block sizes, kernel arguments and constants stay uniform.
 *
 * Insertion: a divergent scf.if gets %sp = __vxl_split(cond) before it and
 * __vxl_join(%sp) after it; a divergent scf.while reads the active-thread
 * mask before the loop and calls __vxl_pred(cond, mask) right before its
 * scf.condition, so finished threads are masked off and the mask comes back
 * when the last one finishes.  Uniform branches stay plain.  Not handled:
 * divergent scf.index_switch and cf.cond_br/cf.switch (left as they are;
 * see the README).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <mlir-c/BuiltinAttributes.h>
#include <mlir-c/BuiltinTypes.h>

#include "vxl_internal.h"

/* A set of MLIR values (by their opaque pointer), open addressing. */
typedef struct {
  const void **slot;
  size_t cap, n;
} vxl__vset;

static size_t vxl__hash(const void *p) { return ((uintptr_t)p >> 4) * 0x9E3779B97F4A7C15ull; }

static int vxl__vset_has(const vxl__vset *s, MlirValue v) {
  if (!s->cap) return 0;
  for (size_t i = vxl__hash(v.ptr) & (s->cap - 1);; i = (i + 1) & (s->cap - 1)) {
    if (!s->slot[i]) return 0;
    if (s->slot[i] == v.ptr) return 1;
  }
}

/* Adds v; returns 1 when it was not there yet (0 when it was or on OOM). */
static int vxl__vset_add(vxl__vset *s, MlirValue v) {
  if (vxl__vset_has(s, v)) return 0;
  if ((s->n + 1) * 2 > s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 64;
    const void **slot = calloc(cap, sizeof *slot);
    if (!slot) return 0;
    for (size_t i = 0; i < s->cap; i++)
      if (s->slot[i])
        for (size_t j = vxl__hash(s->slot[i]) & (cap - 1);; j = (j + 1) & (cap - 1))
          if (!slot[j]) { slot[j] = s->slot[i]; break; }
    free(s->slot);
    s->slot = slot;
    s->cap = cap;
  }
  for (size_t i = vxl__hash(v.ptr) & (s->cap - 1);; i = (i + 1) & (s->cap - 1))
    if (!s->slot[i]) {
      s->slot[i] = v.ptr;
      s->n++;
      return 1;
    }
}

static int vxl__calls(MlirOperation op, const char *callee) {
  MlirStringRef s = vxl__callee(op);
  return s.length == strlen(callee) && memcmp(s.data, callee, s.length) == 0;
}

static MlirBlock vxl__region_block(MlirOperation op, intptr_t r) {
  return mlirRegionGetFirstBlock(mlirOperationGetRegion(op, r));
}

static int vxl__any_operand(const vxl__vset *s, MlirOperation op, intptr_t from, intptr_t to) {
  for (intptr_t i = from; i < to && i < mlirOperationGetNumOperands(op); i++)
    if (vxl__vset_has(s, mlirOperationGetOperand(op, i))) return 1;
  return 0;
}

static int vxl__mark_results(vxl__vset *s, MlirOperation op) {
  int ch = 0;
  for (intptr_t i = 0; i < mlirOperationGetNumResults(op); i++) ch |= vxl__vset_add(s, mlirOperationGetResult(op, i));
  return ch;
}

static int vxl__mark_args(vxl__vset *s, MlirBlock b, intptr_t from) {
  int ch = 0;
  for (intptr_t i = from; !mlirBlockIsNull(b) && i < mlirBlockGetNumArguments(b); i++)
    ch |= vxl__vset_add(s, mlirBlockGetArgument(b, i));
  return ch;
}

/* One propagation step for op; returns nonzero when the set grew. */
static int vxl__propagate(vxl__vset *s, MlirOperation op) {
  int ch = 0;
  intptr_t nops = mlirOperationGetNumOperands(op);
  if (vxl__calls(op, "__vxl_thread_id") || vxl__calls(op, "__vxl_global_id")) return vxl__mark_results(s, op);
  if (vxl__op_is(op, "scf.if") || vxl__op_is(op, "scf.index_switch")) {
    if (vxl__any_operand(s, op, 0, 1)) ch |= vxl__mark_results(s, op);
    return ch;
  }
  if (vxl__op_is(op, "scf.execute_region")) return 0; /* results come from its yields */
  if (vxl__op_is(op, "scf.while")) {
    MlirBlock before = vxl__region_block(op, 0);
    for (intptr_t i = 0; i < nops; i++)
      if (vxl__vset_has(s, mlirOperationGetOperand(op, i))) ch |= vxl__vset_add(s, mlirBlockGetArgument(before, i));
    return ch;
  }
  if (vxl__op_is(op, "scf.for")) {
    MlirBlock body = vxl__region_block(op, 0);
    if (vxl__any_operand(s, op, 0, 3)) return vxl__mark_results(s, op) | vxl__mark_args(s, body, 0);
    for (intptr_t i = 3; i < nops; i++)
      if (vxl__vset_has(s, mlirOperationGetOperand(op, i)))
        ch |= vxl__vset_add(s, mlirOperationGetResult(op, i - 3)) |
              vxl__vset_add(s, mlirBlockGetArgument(body, i - 2));
    return ch;
  }
  if (vxl__op_is(op, "scf.yield")) {
    MlirOperation parent = mlirOperationGetParentOperation(op);
    for (intptr_t i = 0; i < nops; i++) {
      if (!vxl__vset_has(s, mlirOperationGetOperand(op, i))) continue;
      if (vxl__op_is(parent, "scf.while")) /* after-region yield feeds the before-region */
        ch |= vxl__vset_add(s, mlirBlockGetArgument(vxl__region_block(parent, 0), i));
      else if (i < mlirOperationGetNumResults(parent)) {
        ch |= vxl__vset_add(s, mlirOperationGetResult(parent, i));
        if (vxl__op_is(parent, "scf.for")) ch |= vxl__vset_add(s, mlirBlockGetArgument(vxl__region_block(parent, 0), i + 1));
      }
    }
    return ch;
  }
  if (vxl__op_is(op, "scf.condition")) {
    MlirOperation loop = mlirOperationGetParentOperation(op);
    MlirBlock after = vxl__region_block(loop, 1);
    if (vxl__any_operand(s, op, 0, 1)) return vxl__mark_results(s, loop) | vxl__mark_args(s, after, 0);
    for (intptr_t i = 1; i < nops; i++)
      if (vxl__vset_has(s, mlirOperationGetOperand(op, i)))
        ch |= vxl__vset_add(s, mlirOperationGetResult(loop, i - 1)) | vxl__vset_add(s, mlirBlockGetArgument(after, i - 1));
    return ch;
  }
  if (mlirOperationGetNumSuccessors(op) > 0) { /* cf branches */
    if (vxl__any_operand(s, op, 0, nops))
      for (intptr_t i = 0; i < mlirOperationGetNumSuccessors(op); i++)
        ch |= vxl__mark_args(s, mlirOperationGetSuccessor(op, i), 0);
    return ch;
  }
  if (vxl__any_operand(s, op, 0, nops)) ch |= vxl__mark_results(s, op);
  return ch;
}

int vxl__insert_divergence(MlirContext ctx, MlirOperation fn, int is_kernel, unsigned *splits, unsigned *preds) {
  vxl__ops ops = {0};
  if (vxl__collect_ops(fn, &ops) != 0) {
    free(ops.v);
    return -ENOMEM;
  }
  vxl__vset s = {0};
  if (!is_kernel) vxl__mark_args(&s, vxl__region_block(fn, 0), 0);
  for (int changed = 1; changed;) {
    changed = 0;
    for (size_t i = 0; i < ops.n; i++) changed |= vxl__propagate(&s, ops.v[i]);
  }
  MlirType i32 = mlirIntegerTypeGet(ctx, 32);
  for (size_t i = 0; i < ops.n; i++) {
    MlirOperation op = ops.v[i];
    MlirLocation loc = mlirOperationGetLocation(op);
    if (vxl__op_is(op, "scf.if") && vxl__vset_has(&s, mlirOperationGetOperand(op, 0))) {
      MlirBlock blk = mlirOperationGetBlock(op);
      MlirValue cond = mlirOperationGetOperand(op, 0);
      MlirOperation split = vxl__func_call(ctx, loc, "__vxl_split", 1, &cond, 1, &i32);
      mlirBlockInsertOwnedOperationBefore(blk, op, split);
      MlirValue sp = mlirOperationGetResult(split, 0);
      mlirBlockInsertOwnedOperationAfter(blk, op, vxl__func_call(ctx, loc, "__vxl_join", 1, &sp, 0, NULL));
      (*splits)++;
    } else if (vxl__op_is(op, "scf.condition") && vxl__vset_has(&s, mlirOperationGetOperand(op, 0))) {
      MlirOperation loop = mlirOperationGetParentOperation(op);
      MlirOperation mask = vxl__func_call(ctx, loc, "__vxl_active_threads", 0, NULL, 1, &i32);
      mlirBlockInsertOwnedOperationBefore(mlirOperationGetBlock(loop), loop, mask);
      MlirValue args[2] = {mlirOperationGetOperand(op, 0), mlirOperationGetResult(mask, 0)};
      mlirBlockInsertOwnedOperationBefore(mlirOperationGetBlock(op), op, vxl__func_call(ctx, loc, "__vxl_pred", 2, args, 0, NULL));
      (*preds)++;
    }
  }
  free(s.slot);
  free(ops.v);
  return 0;
}
