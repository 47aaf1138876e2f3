/*
 * vxl_subgroup.c - subgroup and workgroup collectives for Vortex (MLIR side).
 *
 * gpu.lane_id, gpu.subgroup_id, gpu.subgroup_size, gpu.num_subgroups,
 * gpu.shuffle, gpu.subgroup_reduce and gpu.all_reduce become calls of
 * helpers written here as MLIR text, one per use, that the upstream
 * pipeline lowers with everything else.
 *
 * Subgroups are the hardware warps: vx_spawn_threads gives thread i of a
 * block (linear id, x fastest) lane i % W of the block's warp i / W, where
 * W is the device's threads per warp, which the compile is told
 * (vxl_options.warp_size) and the kernel metadata repeats
 * (subgroup_size).  Values move between threads through a scratch area in
 * local memory, one 8-byte slot per thread of the block, after the static
 * and dynamic workgroup memory (main sizes it from the launch's block, see
 * vxl_codegen.c):
 *   - within a warp nothing more is needed: its threads execute each
 *     instruction together, so every lane has stored its slot before any
 *     lane loads (an empty asm with a memory clobber keeps the compiler
 *     from reordering the two);
 *   - gpu.all_reduce spans warps and waits at the block's barrier.
 * Reductions combine the values in lane order, the same order in every
 * thread, so all threads get bit-identical results.  A subgroup reduction
 * takes the lanes that are active (CSR 0xCC4, Vortex's thread mask): lanes
 * a divergent branch masked off, and the missing lanes of a block that is
 * not a multiple of W, do not contribute.  Everything is branch-free or a
 * loop with a uniform trip count, so no split/join is needed.
 *
 * gpu.shuffle follows the op's definition: the source lane is lane ^ offset
 * (xor), lane - offset (up), lane + offset (down) or offset (idx); it is
 * valid when it is below min(width, W, the lanes the block has in this
 * warp); an invalid one returns the thread's own value with valid = false.
 * With vxl_options.shuffle_insns the value moves through Vortex's shuffle
 * instruction instead (clamp = that limit - 1, segment mask 0), which
 * gives the same results.
 *
 * gpu.rotate and gpu.subgroup_broadcast are the same move with another
 * source lane: rotate's ((lane + offset) & (width - 1)) + (lane & ~(width
 * - 1)), valid when lane < width (a constant width above the warp is
 * refused at the op); a broadcast's given lane, or the first active one
 * (the lowest bit of the warp's thread mask, CSR 0xCC4).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mlir-c/BuiltinAttributes.h>
#include <mlir-c/BuiltinTypes.h>

#include "vxl_internal.h"

static MlirStringRef vxl__s(const char *s) { return mlirStringRefCreateFromCString(s); }

/* The last word of an enum attribute's printed form ("#gpu<all_reduce_op
 * add>" -> "add") into buf; 0, or -1 when absent or unreadable. */
static int vxl__enum_word(MlirOperation op, const char *attr, char *buf, size_t cap) {
  MlirAttribute a = mlirOperationGetAttributeByName(op, vxl__s(attr));
  if (mlirAttributeIsNull(a)) return -1;
  char *s = vxl__attr_str(a);
  if (!s) return -1;
  size_t n = strlen(s);
  if (n && s[n - 1] == '>') s[--n] = '\0';
  const char *w = strrchr(s, ' ');
  w = w ? w + 1 : s;
  int rc = strlen(w) < cap ? 0 : -1;
  if (rc == 0) snprintf(buf, cap, "%s", w);
  free(s);
  return rc;
}

/* Integer attribute `attr` of op, or dflt when absent. */
static int64_t vxl__int_attr(MlirOperation op, const char *attr, int64_t dflt) {
  MlirAttribute a = mlirOperationGetAttributeByName(op, vxl__s(attr));
  return mlirAttributeIsNull(a) || !mlirAttributeIsAInteger(a) ? dflt : mlirIntegerAttrGetValueInt(a);
}

/* Parses text (a module holding helper functions) and moves its operations
 * into sg->mod.  Returns 0, or -EINVAL (diagnostic at loc) if it does not
 * parse, which would be a bug here. */
static int vxl__add_text(vxl__subgroups *sg, MlirLocation loc, const char *text) {
  MlirModule wrap = mlirModuleCreateParse(sg->ctx, vxl__s(text));
  if (mlirModuleIsNull(wrap)) {
    vxl__diag_at(sg->d, loc, "internal: could not build a subgroup helper");
    return -EINVAL;
  }
  MlirBlock mb = mlirModuleGetBody(sg->mod);
  for (MlirOperation o = mlirBlockGetFirstOperation(mlirModuleGetBody(wrap)); !mlirOperationIsNull(o);) {
    MlirOperation next = mlirOperationGetNextInBlock(o);
    /* declarations of prelude helpers were only there to verify the text */
    int decl =
        vxl__op_is(o, "func.func") && mlirBlockIsNull(mlirRegionGetFirstBlock(mlirOperationGetRegion(o, 0)));
    if (!decl) {
      mlirOperationRemoveFromParent(o);
      mlirBlockAppendOwnedOperation(mb, o);
    }
    o = next;
  }
  mlirModuleDestroy(wrap);
  return 0;
}

/* Declarations of the prelude helpers the generated text calls. */
#define VXL__SG_DECLS                                                                                        \
  "func.func private @__vxl_linear_tid() -> i32\n"                                                           \
  "func.func private @__vxl_block_threads() -> i32\n"                                                        \
  "func.func private @__vxl_scratch_base() -> !llvm.ptr\n"                                                   \
  "func.func private @__vxl_fence()\n"                                                                       \
  "func.func private @__vxl_barrier()\n"                                                                     \
  "func.func private @__vxl_active_threads() -> i32\n"

/* Whether values of type t can travel through a scratch slot: integers of
 * up to 64 bits and f16/bf16/f32/f64 (index is converted to i32 first). */
static int vxl__slot_type(MlirType t) {
  if (mlirTypeIsAInteger(t)) return mlirIntegerTypeGetWidth(t) <= 64;
  return mlirTypeIsAF16(t) || mlirTypeIsABF16(t) || mlirTypeIsAF32(t) || mlirTypeIsAF64(t);
}

/* The arith op of reduction `kind` on type t (float or integer), or NULL. */
static const char *vxl__reduce_op(const char *kind, MlirType t) {
  int f = !mlirTypeIsAInteger(t);
  static const char *const map[][3] = {
      {"add", "arith.addi", "arith.addf"},  {"mul", "arith.muli", "arith.mulf"},
      {"and", "arith.andi", NULL},          {"or", "arith.ori", NULL},
      {"xor", "arith.xori", NULL},          {"minui", "arith.minui", NULL},
      {"minsi", "arith.minsi", NULL},       {"maxui", "arith.maxui", NULL},
      {"maxsi", "arith.maxsi", NULL},       {"minnumf", NULL, "arith.minnumf"},
      {"maxnumf", NULL, "arith.maxnumf"},   {"minimumf", NULL, "arith.minimumf"},
      {"maximumf", NULL, "arith.maximumf"},
  };
  for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
    if (strcmp(map[i][0], kind) == 0) return map[i][1 + f];
  return NULL;
}

/* v converted to type `to` with arith.index_cast before `before`, when one
 * of the two is index and the other is not; else v.  (Index is 32-bit on
 * this target; helpers take and return i32.) */
static MlirValue vxl__index_cast(MlirLocation loc, MlirBlock blk, MlirOperation before, MlirValue v,
                                 MlirType to) {
  if (mlirTypeIsAIndex(mlirValueGetType(v)) == mlirTypeIsAIndex(to)) return v;
  MlirOperationState st = mlirOperationStateGet(vxl__s("arith.index_cast"), loc);
  mlirOperationStateAddOperands(&st, 1, &v);
  mlirOperationStateAddResults(&st, 1, &to);
  MlirOperation c = mlirOperationCreate(&st);
  mlirBlockInsertOwnedOperationBefore(blk, before, c);
  return mlirOperationGetResult(c, 0);
}

/* Calls helper `name` (args -> results of the types of op's results, with
 * index carried as i32) before op, replaces op's results and erases op. */
static void vxl__replace_by_call(vxl__subgroups *sg, MlirOperation op, const char *name, intptr_t nargs,
                                 MlirValue *args) {
  MlirLocation loc = mlirOperationGetLocation(op);
  MlirBlock blk = mlirOperationGetBlock(op);
  intptr_t nres = mlirOperationGetNumResults(op);
  MlirType types[4];
  MlirType i32 = mlirIntegerTypeGet(sg->ctx, 32);
  for (intptr_t i = 0; i < nres && i < 4; i++) {
    types[i] = mlirValueGetType(mlirOperationGetResult(op, i));
    if (mlirTypeIsAIndex(types[i])) types[i] = i32;
  }
  for (intptr_t i = 0; i < nargs; i++)
    args[i] = vxl__index_cast(loc, blk, op, args[i], i32);
  MlirOperation call = vxl__func_call(sg->ctx, loc, name, nargs, args, nres, types);
  mlirBlockInsertOwnedOperationBefore(blk, op, call);
  for (intptr_t i = 0; i < nres; i++) {
    MlirValue r = mlirOperationGetResult(op, i);
    MlirValue v = vxl__index_cast(loc, blk, op, mlirOperationGetResult(call, i), mlirValueGetType(r));
    mlirValueReplaceAllUsesOfWith(r, v);
  }
  mlirOperationDestroy(op);
}

/* t with every "%$" replaced by "%" prefix (malloc(); NULL on OOM). */
static char *vxl__subst(const char *t, const char *prefix) {
  size_t n = 0, pl = strlen(prefix);
  for (const char *p = t; *p; p++)
    n += (p[0] == '%' && p[1] == '$') ? pl : 1;
  char *out = malloc(n + 1), *o = out;
  if (!out) return NULL;
  for (const char *p = t; *p; p++) {
    if (p[0] == '%' && p[1] == '$') {
      *o++ = '%';
      memcpy(o, prefix, pl);
      o += pl;
      p++;
    } else {
      *o++ = *p;
    }
  }
  *o = '\0';
  return out;
}

/* Text of a loop that folds the slots of j = 0 .. bound-1 into %result#0
 * (%result#1: whether anything was included).  `include` defines %$inc
 * (i1) and `slot` defines %$slot (i32, the slot to read) from %$j (i32);
 * %v (a T) only seeds the loop; %sb is the scratch base.  `op` combines two
 * T values: an arith op, or the function of that name when op_is_func.
 * Every value of the loop is named with `prefix`, so several loops fit in
 * one function.  malloc(); NULL on OOM. */
static char *vxl__fold_text(const char *T, const char *op, int op_is_func, const char *bound,
                            const char *include, const char *slot, const char *result, const char *prefix) {
  char comb[256], *tmpl = NULL;
  if (op_is_func)
    snprintf(comb, sizeof comb, "%%$c = func.call @%s(%%$acc, %%$x) : (%s, %s) -> %s", op, T, T, T);
  else
    snprintf(comb, sizeof comb, "%%$c = %s %%$acc, %%$x : %s", op, T);
  int n = asprintf(&tmpl,
                   "  %%$lo = arith.constant 0 : index\n"
                   "  %%$st = arith.constant 1 : index\n"
                   "  %%$hi = arith.index_cast %s : i32 to index\n"
                   "  %%$no = arith.constant false\n"
                   "  %%%s:2 = scf.for %%$ji = %%$lo to %%$hi step %%$st iter_args(%%$acc = %%v, %%$have = "
                   "%%$no) -> (%s, i1) {\n"
                   "    %%$j = arith.index_cast %%$ji : index to i32\n"
                   "%s"
                   "%s"
                   "    %%$q = llvm.getelementptr %%sb[%%$slot] : (!llvm.ptr, i32) -> !llvm.ptr, i64\n"
                   "    %%$x = llvm.load volatile %%$q : !llvm.ptr -> %s\n"
                   "    %s\n"
                   "    %%$first = arith.select %%$have, %%$c, %%$x : %s\n"
                   "    %%$next = arith.select %%$inc, %%$first, %%$acc : %s\n"
                   "    %%$had = arith.ori %%$have, %%$inc : i1\n"
                   "    scf.yield %%$next, %%$had : %s, i1\n"
                   "  }\n",
                   bound, result, T, include, slot, T, comb, T, T, T);
  if (n < 0) return NULL;
  char *out = vxl__subst(tmpl, prefix);
  free(tmpl);
  return out;
}

/* Adds the helper module `text` (freed here), then replaces op by a call of
 * helper `name` with op's first nargs operands; `scratch`: the helper uses
 * the scratch area.  Returns 0 or what vxl__add_text returned. */
static int vxl__install(vxl__subgroups *sg, MlirOperation op, char *text, const char *name, intptr_t nargs,
                        int scratch) {
  int rc = vxl__add_text(sg, mlirOperationGetLocation(op), text);
  free(text);
  if (rc) return rc;
  if (scratch) sg->uses_scratch = 1;
  MlirValue args[3];
  for (intptr_t i = 0; i < nargs && i < 3; i++)
    args[i] = mlirOperationGetOperand(op, i);
  vxl__replace_by_call(sg, op, name, nargs, args);
  return 0;
}

/* Body lines moving %v (type T) to %x through Vortex's shuffle instruction
 * funct3 f (4 up, 5 down, 6 bfly, 7 idx) with operand %bc, in 32-bit
 * pieces (malloc(); NULL when T is not one it handles). */
static char *vxl__shuffle_insn_text(MlirType t, const char *T, int f) {
  char asmop[96];
  snprintf(asmop, sizeof asmop,
           "llvm.inline_asm has_side_effects \".insn r 0x0B, %d, 1, $0, $1, $2\", \"=r,r,r\"", f);
  char *s = NULL;
  int n = -1;
  unsigned bits = mlirTypeIsAInteger(t) ? mlirIntegerTypeGetWidth(t)
                  : mlirTypeIsAF64(t)   ? 64
                  : mlirTypeIsAF32(t)   ? 32
                                        : 16;
  const char *src = mlirTypeIsAInteger(t) ? "%v" : "%vi";
  char conv[96] = "", back[96] = "";
  if (!mlirTypeIsAInteger(t))
    snprintf(conv, sizeof conv, "  %%vi = arith.bitcast %%v : %s to i%u\n", T, bits);
  if (!mlirTypeIsAInteger(t))
    snprintf(back, sizeof back, "  %%x = arith.bitcast %%xi : i%u to %s\n", bits, T);
  const char *res = mlirTypeIsAInteger(t) ? "%x" : "%xi";
  if (bits == 32) {
    n = asprintf(&s, "%s  %s = %s %s, %%bc : (i32, i32) -> i32\n%s", conv, res, asmop, src, back);
  } else if (bits < 32) {
    n = asprintf(&s,
                 "%s  %%w32 = arith.extui %s : i%u to i32\n"
                 "  %%r32 = %s %%w32, %%bc : (i32, i32) -> i32\n"
                 "  %s = arith.trunci %%r32 : i32 to i%u\n%s",
                 conv, src, bits, asmop, res, bits, back);
  } else if (bits == 64) {
    n = asprintf(&s,
                 "%s  %%lo = arith.trunci %s : i64 to i32\n"
                 "  %%c32 = arith.constant 32 : i64\n"
                 "  %%hs = arith.shrui %s, %%c32 : i64\n"
                 "  %%hi = arith.trunci %%hs : i64 to i32\n"
                 "  %%rlo = %s %%lo, %%bc : (i32, i32) -> i32\n"
                 "  %%rhi = %s %%hi, %%bc : (i32, i32) -> i32\n"
                 "  %%elo = arith.extui %%rlo : i32 to i64\n"
                 "  %%ehi = arith.extui %%rhi : i32 to i64\n"
                 "  %%shi = arith.shli %%ehi, %%c32 : i64\n"
                 "  %s = arith.ori %%shi, %%elo : i64\n%s",
                 conv, src, src, asmop, asmop, res, back);
  }
  return n < 0 ? NULL : s;
}

/* The move of a shuffle helper's value %v (of type t, T its text) from
 * lane %src: Vortex's shuffle instruction (sg->shuffle_insns; mode picks
 * its variant), or through the block's scratch memory.  malloc(); NULL
 * when out of memory. */
static char *vxl__shuffle_move(const vxl__subgroups *sg, MlirType t, const char *T, const char *mode) {
  char *move = NULL;
  if (sg->shuffle_insns) {
    /* Vortex's instruction: b = offset, c = clamp (last lane taking part),
     * segment mask 0; an out-of-range source gives the own value */
    int f = strcmp(mode, "up") == 0 ? 4 : strcmp(mode, "down") == 0 ? 5 : strcmp(mode, "xor") == 0 ? 6 : 7;
    char *insn = vxl__shuffle_insn_text(mlirTypeIsAIndex(t) ? mlirIntegerTypeGet(sg->ctx, 32) : t, T, f);
    if (!insn || asprintf(&move,
                          "  %%one = arith.constant 1 : i32\n"
                          "  %%six = arith.constant 6 : i32\n"
                          "  %%m63 = arith.constant 63 : i32\n"
                          "  %%clamp = arith.subi %%lim, %%one : i32\n"
                          "  %%cs = arith.shli %%clamp, %%six : i32\n"
                          "  %%b = arith.andi %s, %%m63 : i32\n" /* idx: the source lane itself */
                          "  %%bc = arith.ori %%cs, %%b : i32\n"
                          "%s",
                          f == 7 ? "%src" : "%off", insn) < 0)
      move = NULL;
    free(insn);
  } else if (asprintf(&move,
                      "  %%from = arith.addi %%base, %%src : i32\n"
                      "  %%slot = arith.select %%valid, %%from, %%lin : i32\n"
                      "  %%sb = func.call @__vxl_scratch_base() : () -> !llvm.ptr\n"
                      "  %%p = llvm.getelementptr %%sb[%%lin] : (!llvm.ptr, i32) -> !llvm.ptr, i64\n"
                      "  llvm.store volatile %%v, %%p : %s, !llvm.ptr\n"
                      "  func.call @__vxl_fence() : () -> ()\n"
                      "  %%q = llvm.getelementptr %%sb[%%slot] : (!llvm.ptr, i32) -> !llvm.ptr, i64\n"
                      "  %%x = llvm.load volatile %%q : !llvm.ptr -> %s\n"
                      "  func.call @__vxl_fence() : () -> ()\n",
                      T, T) < 0) {
    move = NULL;
  }
  return move;
}

/* A shuffle helper's signature text: its parameters, its results, what it
 * returns, the text before its source lane (pre), and, when not NULL, the
 * source lane's own text (src). */
typedef struct {
  char params[96], results[64], ret[96], pre[512];
  const char *src;
} vxl__shuffle_sig;

/* The signature of a shuffle helper of value type T for mode (a gpu.rotate
 * with roff and rwidth, a gpu.subgroup_broadcast, else a gpu.shuffle):
 * pre holds a rotation's source lane or a broadcast's width.  Returns how
 * many operands the helper takes. */
static intptr_t vxl__shuffle_signature(const vxl__subgroups *sg, const char *T, const char *mode, int rotate,
                                       int broadcast, int64_t roff, int64_t rwidth, vxl__shuffle_sig *sig) {
  intptr_t nargs = 3;
  sig->src = NULL;
  sig->pre[0] = '\0';
  if (rotate) { /* offset and width are the op's constants; valid: lane < width */
    nargs = 1;
    snprintf(sig->params, sizeof sig->params, "%%v: %s", T);
    snprintf(sig->results, sizeof sig->results, "(%s, i1)", T);
    snprintf(sig->ret, sizeof sig->ret, "%%x, %%rvalid : %s, i1", T);
    snprintf(sig->pre, sizeof sig->pre,
             "  %%off = arith.constant %lld : i32\n"
             "  %%width = arith.constant %lld : i32\n"
             "  %%r1 = arith.constant 1 : i32\n"
             "  %%wm1 = arith.subi %%width, %%r1 : i32\n"
             "  %%ra = arith.addi %%lane, %%off : i32\n"
             "  %%rb = arith.andi %%ra, %%wm1 : i32\n"
             "  %%all = arith.constant -1 : i32\n"
             "  %%nm = arith.xori %%wm1, %%all : i32\n"
             "  %%rc = arith.andi %%lane, %%nm : i32\n"
             "  %%rs = arith.addi %%rb, %%rc : i32\n"
             "  %%rvalid = arith.cmpi ult, %%lane, %%width : i32\n",
             (long long)roff, (long long)rwidth);
  } else if (broadcast) { /* one result: the value of the source lane, the whole warp taking part */
    int first = strcmp(mode, "first_active_lane") == 0;
    nargs = first ? 1 : 2;
    snprintf(sig->params, sizeof sig->params, first ? "%%v: %s" : "%%v: %s, %%off: i32", T);
    snprintf(sig->results, sizeof sig->results, "%s", T);
    snprintf(sig->ret, sizeof sig->ret, "%%x : %s", T);
    snprintf(sig->pre, sizeof sig->pre, "  %%width = arith.constant %u : i32\n%s", sg->warp_size,
             first ? "  %mask = func.call @__vxl_active_threads() : () -> i32\n"
                     "  %bit = \"llvm.intr.cttz\"(%mask) <{is_zero_poison = false}> : (i32) -> i32\n"
                   : "");
    if (first) sig->src = "arith.addi %bit, %zero : i32";
  } else {
    snprintf(sig->params, sizeof sig->params, "%%v: %s, %%off: i32, %%width: i32", T);
    snprintf(sig->results, sizeof sig->results, "(%s, i1)", T);
    snprintf(sig->ret, sizeof sig->ret, "%%x, %%valid : %s, i1", T);
  }
  return nargs;
}

/* gpu.shuffle, gpu.rotate (its offset and width constants) and
 * gpu.subgroup_broadcast (its lane operand, or the first active lane) as
 * one helper each: the source lane, then the move. */
static int vxl__lower_shuffle(vxl__subgroups *sg, MlirOperation op) {
  MlirLocation loc = mlirOperationGetLocation(op);
  char mode[32];
  MlirType t = mlirValueGetType(mlirOperationGetOperand(op, 0));
  const int rotate = vxl__op_is(op, "gpu.rotate"), broadcast = vxl__op_is(op, "gpu.subgroup_broadcast");
  const char *what = rotate ? "gpu.rotate" : broadcast ? "gpu.subgroup_broadcast" : "gpu.shuffle";
  int64_t roff = vxl__int_attr(op, "offset", 0), rwidth = vxl__int_attr(op, "width", 0);
  if (rotate)
    snprintf(mode, sizeof mode, "rotate");
  else if (vxl__enum_word(op, broadcast ? "broadcast_type" : "mode", mode, sizeof mode) != 0) {
    vxl__diag_at(sg->d, loc, "unsupported: %s with an unreadable %s", what,
                 broadcast ? "broadcast type" : "mode");
    return -EINVAL;
  }
  if (rotate && (rwidth < 1 || rwidth > (int64_t)sg->warp_size || roff < 0 || roff >= rwidth)) {
    vxl__diag_at(
        sg->d, loc,
        "gpu.rotate width %lld (offset %lld) is larger than the warp (%u threads): its lanes past the "
        "warp do not exist (a device with more threads per warp: `vxc compile --warp-size N`)",
        (long long)rwidth, (long long)roff, sg->warp_size);
    return -EINVAL;
  }
  const char *src = rotate                                                ? "arith.addi %rs, %zero : i32"
                    : broadcast && strcmp(mode, "first_active_lane") == 0 ? "math.cttz %mask : i32"
                    : broadcast && strcmp(mode, "specific_lane") == 0     ? "arith.addi %off, %zero : i32"
                    : broadcast                                           ? NULL
                    : strcmp(mode, "xor") == 0                            ? "arith.xori %lane, %off : i32"
                    : strcmp(mode, "up") == 0                             ? "arith.subi %lane, %off : i32"
                    : strcmp(mode, "down") == 0                           ? "arith.addi %lane, %off : i32"
                    : strcmp(mode, "idx") == 0                            ? "arith.addi %off, %zero : i32"
                                                                          : NULL;
  if (!src || (!vxl__slot_type(t) && !mlirTypeIsAIndex(t))) {
    char *ts = vxl__type_str(t);
    vxl__diag_at(sg->d, loc, "unsupported: %s %s of %s", what, mode, ts ? ts : "this type");
    free(ts);
    return -EINVAL;
  }
  char *T = mlirTypeIsAIndex(t) ? strdup("i32") : vxl__type_str(t), *text = NULL;
  if (!T) return -ENOMEM;
  char *move = vxl__shuffle_move(sg, t, T, mode);
  char name[48];
  /* a shuffle's or rotation's value differs from lane to lane (the
   * divergence analysis reads the name: VXL_LANE_HELPER); a broadcast's
   * is the warp's one value */
  snprintf(name, sizeof name, "%s%u", broadcast ? "__vxl_bcast" : VXL_LANE_HELPER "_shfl", sg->helpers++);
  vxl__shuffle_sig sig;
  intptr_t nargs = vxl__shuffle_signature(sg, T, mode, rotate, broadcast, roff, rwidth, &sig);
  if (sig.src) src = sig.src;
  /* source lane and validity, then the move (%x) */
  int n = move ? asprintf(&text,
                          "module {\n" VXL__SG_DECLS "func.func private @%s(%s) -> %s {\n"
                          "  %%zero = arith.constant 0 : i32\n"
                          "  %%w = arith.constant %u : i32\n"
                          "  %%lin = func.call @__vxl_linear_tid() : () -> i32\n"
                          "  %%lane = arith.remui %%lin, %%w : i32\n"
                          "  %%base = arith.subi %%lin, %%lane : i32\n"
                          "%s"
                          "  %%src = %s\n"
                          "  %%n = func.call @__vxl_block_threads() : () -> i32\n"
                          "  %%avail = arith.subi %%n, %%base : i32\n"
                          "  %%lim0 = arith.minui %%width, %%w : i32\n"
                          "  %%lim = arith.minui %%lim0, %%avail : i32\n"
                          "  %%valid = arith.cmpi ult, %%src, %%lim : i32\n"
                          "%s"
                          "  return %s\n"
                          "}\n}\n",
                          name, sig.params, sig.results, sg->warp_size, sig.pre, src, move, sig.ret)
               : -1;
  free(move);
  free(T);
  return n < 0 ? -ENOMEM : vxl__install(sg, op, text, name, nargs, !sg->shuffle_insns);
}

static int vxl__lower_subgroup_reduce(vxl__subgroups *sg, MlirOperation op) {
  MlirLocation loc = mlirOperationGetLocation(op);
  MlirType t = mlirValueGetType(mlirOperationGetOperand(op, 0));
  char kind[16];
  if (vxl__enum_word(op, "op", kind, sizeof kind) != 0) {
    vxl__diag_at(sg->d, loc, "unsupported: gpu.subgroup_reduce with an unreadable operation");
    return -EINVAL;
  }
  MlirType vt = mlirTypeIsAIndex(t) ? mlirIntegerTypeGet(sg->ctx, 32) : t;
  const char *aop = vxl__slot_type(vt) ? vxl__reduce_op(kind, vt) : NULL;
  int64_t csize = vxl__int_attr(op, "cluster_size", sg->warp_size),
          cstride = vxl__int_attr(op, "cluster_stride", 1);
  if (!aop) {
    char *ts = vxl__type_str(t);
    vxl__diag_at(sg->d, loc, "unsupported: gpu.subgroup_reduce %s of %s", kind, ts ? ts : "this type");
    free(ts);
    return -EINVAL;
  }
  if (csize < 1 || cstride < 1 || (csize & (csize - 1)) || (cstride & (cstride - 1)) ||
      csize * cstride > (int64_t)sg->warp_size) {
    vxl__diag_at(sg->d, loc,
                 "unsupported: gpu.subgroup_reduce clusters of %lld lanes %lld apart in a %u-thread warp",
                 (long long)csize, (long long)cstride, sg->warp_size);
    return -EINVAL;
  }
  char *T = vxl__type_str(vt), *fold = NULL, *text = NULL;
  if (!T) return -ENOMEM;
  char name[48], include[512];
  snprintf(name, sizeof name, "__vxl_sgred%u", sg->helpers++);
  /* lane j counts when active and in this lane's cluster: same bits above
   * the cluster span, same bits below the stride */
  snprintf(include, sizeof include,
           "    %%$bit = arith.shrui %%mask, %%$j : i32\n"
           "    %%$b1 = arith.andi %%$bit, %%one : i32\n"
           "    %%$act = arith.cmpi ne, %%$b1, %%zero : i32\n"
           "    %%$jh = arith.andi %%$j, %%hm : i32\n"
           "    %%$jl = arith.andi %%$j, %%lm : i32\n"
           "    %%$sh = arith.cmpi eq, %%$jh, %%lh : i32\n"
           "    %%$sl = arith.cmpi eq, %%$jl, %%ll : i32\n"
           "    %%$same = arith.andi %%$sh, %%$sl : i1\n"
           "    %%$inc = arith.andi %%$act, %%$same : i1\n");
  const char *slot = "    %$from = arith.addi %base, %$j : i32\n"
                     "    %$slot = arith.select %$inc, %$from, %lin : i32\n";
  fold = vxl__fold_text(T, aop, 0, "%w", include, slot, "r", "f_");
  int n = fold ? asprintf(&text,
                          "module {\n" VXL__SG_DECLS "func.func private @%s(%%v: %s) -> %s {\n"
                          "  %%zero = arith.constant 0 : i32\n"
                          "  %%one = arith.constant 1 : i32\n"
                          "  %%w = arith.constant %u : i32\n"
                          "  %%hm = arith.constant %lld : i32\n"
                          "  %%lm = arith.constant %lld : i32\n"
                          "  %%lin = func.call @__vxl_linear_tid() : () -> i32\n"
                          "  %%lane = arith.remui %%lin, %%w : i32\n"
                          "  %%base = arith.subi %%lin, %%lane : i32\n"
                          "  %%lh = arith.andi %%lane, %%hm : i32\n"
                          "  %%ll = arith.andi %%lane, %%lm : i32\n"
                          "  %%mask = func.call @__vxl_active_threads() : () -> i32\n"
                          "  %%sb = func.call @__vxl_scratch_base() : () -> !llvm.ptr\n"
                          "  %%p = llvm.getelementptr %%sb[%%lin] : (!llvm.ptr, i32) -> !llvm.ptr, i64\n"
                          "  llvm.store volatile %%v, %%p : %s, !llvm.ptr\n"
                          "  func.call @__vxl_fence() : () -> ()\n"
                          "%s"
                          "  func.call @__vxl_fence() : () -> ()\n"
                          "  return %%r#0 : %s\n"
                          "}\n}\n",
                          name, T, T, sg->warp_size, (long long)~(csize * cstride - 1),
                          (long long)(cstride - 1), T, fold, T)
               : -1;
  free(T);
  free(fold);
  return n < 0 ? -ENOMEM : vxl__install(sg, op, text, name, 1, 1);
}

/* The region of a gpu.all_reduce without an `op` becomes function
 * `name`(T, T) -> T; its gpu.yield is rewritten to func.return later, with
 * the other gpu ops.  Returns 0, -EINVAL (diagnostic) or -ENOMEM. */
static int vxl__region_to_func(vxl__subgroups *sg, MlirOperation op, MlirType t, const char *name) {
  MlirLocation loc = mlirOperationGetLocation(op);
  MlirRegion r = mlirOperationGetRegion(op, 0);
  MlirBlock b = mlirRegionGetFirstBlock(r);
  if (mlirBlockIsNull(b) || !mlirBlockIsNull(mlirBlockGetNextInRegion(b)) ||
      mlirBlockGetNumArguments(b) != 2) {
    vxl__diag_at(sg->d, loc,
                 "unsupported: gpu.all_reduce without an operation or a one-block region of two arguments");
    return -EINVAL;
  }
  /* the region may only use its own values */
  vxl__ops ops = {0};
  if (vxl__collect_ops(op, &ops) != 0) return -ENOMEM;
  for (size_t i = 0; i < ops.n; i++) {
    if (mlirOperationEqual(ops.v[i], op)) continue;
    for (intptr_t k = 0; k < mlirOperationGetNumOperands(ops.v[i]); k++) {
      MlirValue v = mlirOperationGetOperand(ops.v[i], k);
      MlirBlock owner = mlirValueIsABlockArgument(v) ? mlirBlockArgumentGetOwner(v)
                                                     : mlirOperationGetBlock(mlirOpResultGetOwner(v));
      int inside = 0;
      for (MlirBlock x = owner; !mlirBlockIsNull(x);) {
        if (mlirBlockEqual(x, b)) {
          inside = 1;
          break;
        }
        MlirOperation parent = mlirBlockGetParentOperation(x);
        if (mlirOperationIsNull(parent) || mlirOperationEqual(parent, op)) break;
        x = mlirOperationGetBlock(parent);
      }
      if (!inside) {
        free(ops.v);
        vxl__diag_at(sg->d, loc, "unsupported: gpu.all_reduce region that uses values defined outside it");
        return -EINVAL;
      }
    }
  }
  free(ops.v);
  MlirType in[2] = {t, t};
  MlirType fty = mlirFunctionTypeGet(sg->ctx, 2, in, 1, &t);
  MlirOperationState st = mlirOperationStateGet(vxl__s("func.func"), loc);
  MlirNamedAttribute attrs[3] = {
      mlirNamedAttributeGet(mlirIdentifierGet(sg->ctx, vxl__s("sym_name")),
                            mlirStringAttrGet(sg->ctx, vxl__s(name))),
      mlirNamedAttributeGet(mlirIdentifierGet(sg->ctx, vxl__s("function_type")), mlirTypeAttrGet(fty)),
      mlirNamedAttributeGet(mlirIdentifierGet(sg->ctx, vxl__s("sym_visibility")),
                            mlirStringAttrGet(sg->ctx, vxl__s("private"))),
  };
  mlirOperationStateAddAttributes(&st, 3, attrs);
  MlirRegion body = mlirRegionCreate();
  mlirBlockDetach(b);
  mlirRegionAppendOwnedBlock(body, b);
  mlirOperationStateAddOwnedRegions(&st, 1, &body);
  mlirBlockAppendOwnedOperation(mlirModuleGetBody(sg->mod), mlirOperationCreate(&st));
  return 0;
}

static int vxl__lower_all_reduce(vxl__subgroups *sg, MlirOperation op) {
  MlirLocation loc = mlirOperationGetLocation(op);
  MlirType t = mlirValueGetType(mlirOperationGetOperand(op, 0));
  MlirType vt = mlirTypeIsAIndex(t) ? mlirIntegerTypeGet(sg->ctx, 32) : t;
  char kind[16] = "", opname[48], name[48];
  snprintf(name, sizeof name, "__vxl_allred%u", sg->helpers++);
  const char *aop = NULL;
  int is_func = 0;
  if (!vxl__slot_type(vt)) {
    char *ts = vxl__type_str(t);
    vxl__diag_at(sg->d, loc, "unsupported: gpu.all_reduce of %s", ts ? ts : "this type");
    free(ts);
    return -EINVAL;
  }
  if (vxl__enum_word(op, "op", kind, sizeof kind) == 0) {
    aop = vxl__reduce_op(kind, vt);
    if (!aop) {
      char *ts = vxl__type_str(t);
      vxl__diag_at(sg->d, loc, "unsupported: gpu.all_reduce %s of %s", kind, ts ? ts : "this type");
      free(ts);
      return -EINVAL;
    }
  } else {
    if (mlirTypeIsAIndex(t)) {
      vxl__diag_at(sg->d, loc, "unsupported: gpu.all_reduce with a region on index values");
      return -EINVAL;
    }
    /* not __vxl_-prefixed: the divergence pass must see the user's code */
    snprintf(opname, sizeof opname, "vortexd.all_reduce_op%u", sg->helpers++);
    int rc = vxl__region_to_func(sg, op, vt, opname);
    if (rc) return rc;
    aop = opname, is_func = 1;
  }
  char *T = vxl__type_str(vt), *f1 = NULL, *f2 = NULL, *text = NULL;
  if (!T) return -ENOMEM;
  /* step 1: the warp's lanes that exist; step 2: every warp's partial */
  f1 = vxl__fold_text(T, aop, is_func, "%w",
                      "    %$from = arith.addi %base, %$j : i32\n"
                      "    %$inc = arith.cmpi ult, %$from, %n : i32\n",
                      "    %$slot = arith.select %$inc, %$from, %lin : i32\n", "part", "a_");
  f2 = f1 ? vxl__fold_text(T, aop, is_func, "%nsub", "    %$inc = arith.constant true\n",
                           "    %$slot = arith.addi %n, %$j : i32\n", "r", "b_")
          : NULL;
  char decl[160] = "";
  if (is_func) snprintf(decl, sizeof decl, "func.func private @%s(%s, %s) -> %s\n", aop, T, T, T);
  int n = (f1 && f2)
              ? asprintf(&text,
                         "module {\n" VXL__SG_DECLS "%s"
                         "func.func private @%s(%%v: %s) -> %s {\n"
                         "  %%zero = arith.constant 0 : i32\n"
                         "  %%one = arith.constant 1 : i32\n"
                         "  %%w = arith.constant %u : i32\n"
                         "  %%lin = func.call @__vxl_linear_tid() : () -> i32\n"
                         "  %%n = func.call @__vxl_block_threads() : () -> i32\n"
                         "  %%lane = arith.remui %%lin, %%w : i32\n"
                         "  %%base = arith.subi %%lin, %%lane : i32\n"
                         "  %%sb = func.call @__vxl_scratch_base() : () -> !llvm.ptr\n"
                         "  %%p = llvm.getelementptr %%sb[%%lin] : (!llvm.ptr, i32) -> !llvm.ptr, i64\n"
                         "  llvm.store volatile %%v, %%p : %s, !llvm.ptr\n"
                         "  func.call @__vxl_barrier() : () -> ()\n"
                         "%s"
                         "  %%sub = arith.divui %%lin, %%w : i32\n"
                         "  %%wm = arith.subi %%w, %%one : i32\n"
                         "  %%nw = arith.addi %%n, %%wm : i32\n"
                         "  %%nsub = arith.divui %%nw, %%w : i32\n"
                         "  %%ps = arith.addi %%n, %%sub : i32\n"
                         "  %%pp = llvm.getelementptr %%sb[%%ps] : (!llvm.ptr, i32) -> !llvm.ptr, i64\n"
                         "  llvm.store volatile %%part#0, %%pp : %s, !llvm.ptr\n"
                         "  func.call @__vxl_barrier() : () -> ()\n"
                         "%s"
                         "  return %%r#0 : %s\n"
                         "}\n}\n",
                         decl, name, T, T, sg->warp_size, T, f1, T, f2, T)
              : -1;
  free(T);
  free(f1);
  free(f2);
  return n < 0 ? -ENOMEM : vxl__install(sg, op, text, name, 1, 1);
}

int vxl__lower_subgroup_op(vxl__subgroups *sg, MlirOperation op) {
  const char *simple = NULL;
  if (vxl__op_is(op, "gpu.lane_id"))
    simple = "%l = arith.remui %lin, %w : i32\n  return %l : i32\n";
  else if (vxl__op_is(op, "gpu.subgroup_id"))
    simple = "%s = arith.divui %lin, %w : i32\n  return %s : i32\n";
  else if (vxl__op_is(op, "gpu.subgroup_size"))
    simple = "return %w : i32\n";
  else if (vxl__op_is(op, "gpu.num_subgroups"))
    simple = "%n = func.call @__vxl_block_threads() : () -> i32\n  %one = arith.constant 1 : i32\n"
             "  %wm = arith.subi %w, %one : i32\n  %t = arith.addi %n, %wm : i32\n"
             "  %s = arith.divui %t, %w : i32\n  return %s : i32\n";
  if (simple) {
    char name[48], *text = NULL;
    /* the lane id differs from lane to lane: its helpers' name says so to
     * the divergence analysis (VXL_LANE_HELPER) */
    snprintf(name, sizeof name, "%s%u", vxl__op_is(op, "gpu.lane_id") ? VXL_LANE_HELPER : "__vxl_sgq",
             sg->helpers++);
    if (asprintf(&text,
                 "module {\n" VXL__SG_DECLS "func.func private @%s() -> i32 {\n"
                 "  %%w = arith.constant %u : i32\n"
                 "  %%lin = func.call @__vxl_linear_tid() : () -> i32\n"
                 "  %s}\n}\n",
                 name, sg->warp_size, simple) < 0)
      return -ENOMEM;
    int rc = vxl__install(sg, op, text, name, 0, 0);
    return rc ? rc : 1;
  }
  int rc = 0;
  if (vxl__op_is(op, "gpu.shuffle") || vxl__op_is(op, "gpu.rotate") ||
      vxl__op_is(op, "gpu.subgroup_broadcast"))
    rc = vxl__lower_shuffle(sg, op);
  else if (vxl__op_is(op, "gpu.subgroup_reduce"))
    rc = vxl__lower_subgroup_reduce(sg, op);
  else if (vxl__op_is(op, "gpu.all_reduce"))
    rc = vxl__lower_all_reduce(sg, op);
  else
    return 0;
  return rc < 0 ? rc : 1;
}
