/*
 * vxl_memory.c - where a kernel's memory lives on Vortex (MLIR side).
 *
 *   - kernel memref arguments arrive as 32-bit device addresses; a "view"
 *     helper rebuilds the memref descriptor from one at function entry;
 *   - workgroup (shared) memory, module-level address-space-3 globals and
 *     gpu.func workgroup attributions alike, is laid out in the group's
 *     local memory: static buffers at fixed offsets, then the dynamic area
 *     (extern __shared__), each reached from the group's base
 *     (vxl_prelude.h);
 *   - private attributions become allocas; address spaces are stripped.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Target.h>
#include <mlir-c/AffineMap.h>
#include <mlir-c/BuiltinAttributes.h>
#include <mlir-c/BuiltinTypes.h>
#include <mlir-c/Dialect/LLVM.h>
#include <mlir-c/IR.h>
#include <mlir-c/Pass.h>
#include <mlir-c/Support.h>
#include <mlir-c/Target/LLVMIR.h>

#include "vxl_internal.h"

/* Builds "func.func private @NAME(%p: !llvm.ptr) -> MEMREF" that rebuilds a
 * memref descriptor (allocated = aligned = %p, offset 0, row-major strides)
 * from a device pointer, and appends it to the module.  Only the leading
 * extent may be dynamic: the host passes just an address, so inner extents
 * must be static for the strides to be known.  The dynamic leading extent is
 * set to INT32_MAX (unknown; nothing the lowering emits reads it). */
int vxl__make_view(vxl__rw *rw, MlirType memref, MlirLocation loc, char *name, size_t cap) {
  intptr_t rank = mlirShapedTypeGetRank(memref);
  if (rank < 1 || rank > 8) {
    vxl__diag_at(rw->d, loc, "unsupported: kernel argument of rank-%ld memref type", (long)rank);
    return -EINVAL;
  }
  for (intptr_t i = 1; i < rank; i++)
    if (mlirShapedTypeIsDynamicDim(memref, i)) {
      vxl__diag_at(rw->d, loc,
                   "unsupported: kernel memref argument with a dynamic inner dimension (only the leading one "
                   "may be dynamic)");
      return -EINVAL;
    }
  MlirAttribute layout = mlirMemRefTypeGetLayout(memref);
  if (!mlirAttributeIsNull(layout) &&
      !(mlirAttributeIsAAffineMap(layout) && mlirAffineMapIsIdentity(mlirMemRefTypeGetAffineMap(memref)))) {
    vxl__diag_at(rw->d, loc, "unsupported: kernel memref argument with a non-identity layout");
    return -EINVAL;
  }
  char *ty = vxl__type_str(memref);
  if (!ty) return -ENOMEM;
  snprintf(name, cap, "__vxl_view%u", rw->views++);
  vxl_compiler *c = rw->c;
  MlirAttribute sym = mlirStringAttrGet(c->ctx, vxl__str(name));
  for (unsigned i = 0; i < c->nviews; i++)
    if (strcmp(c->view_types[i], ty) == 0) { /* built before: a renamed copy */
      free(ty);
      MlirOperation fn = mlirOperationClone(c->view_ops[i]);
      mlirOperationSetAttributeByName(fn, mlirSymbolTableGetSymbolAttributeName(), sym);
      mlirBlockAppendOwnedOperation(mlirModuleGetBody(rw->mod), fn);
      return 0;
    }

  int64_t sizes[8], strides[8];
  for (intptr_t i = 0; i < rank; i++)
    sizes[i] = mlirShapedTypeIsDynamicDim(memref, i) ? 2147483647 : mlirShapedTypeGetDimSize(memref, i);
  strides[rank - 1] = 1;
  for (intptr_t i = rank - 2; i >= 0; i--)
    strides[i] = strides[i + 1] * sizes[i + 1];

  char desc[128];
  snprintf(desc, sizeof desc, "!llvm.struct<(ptr, ptr, i32, array<%ld x i32>, array<%ld x i32>)>", (long)rank,
           (long)rank);
  vxl__buf b = {0};
#define EMIT(...)                                                                                            \
  do {                                                                                                       \
    char *t_ = NULL;                                                                                         \
    if (asprintf(&t_, __VA_ARGS__) < 0) {                                                                    \
      b.oom = 1;                                                                                             \
      break;                                                                                                 \
    }                                                                                                        \
    vxl__buf_append(vxl__str(t_), &b);                                                                       \
    free(t_);                                                                                                \
  } while (0)
  EMIT("func.func private @%s(%%p: !llvm.ptr) -> %s {\n", name, ty);
  EMIT("  %%u = llvm.mlir.undef : %s\n", desc);
  EMIT("  %%d0 = llvm.insertvalue %%p, %%u[0] : %s\n", desc);
  EMIT("  %%d1 = llvm.insertvalue %%p, %%d0[1] : %s\n", desc);
  EMIT("  %%z = llvm.mlir.constant(0 : i32) : i32\n");
  EMIT("  %%d2 = llvm.insertvalue %%z, %%d1[2] : %s\n", desc);
  int cur = 2, tmp = 0;
  for (intptr_t i = 0; i < rank; i++, cur++, tmp++) {
    EMIT("  %%s%d = llvm.mlir.constant(%lld : i32) : i32\n", tmp, (long long)sizes[i]);
    EMIT("  %%d%d = llvm.insertvalue %%s%d, %%d%d[3, %ld] : %s\n", cur + 1, tmp, cur, (long)i, desc);
  }
  for (intptr_t i = 0; i < rank; i++, cur++, tmp++) {
    EMIT("  %%s%d = llvm.mlir.constant(%lld : i32) : i32\n", tmp, (long long)strides[i]);
    EMIT("  %%d%d = llvm.insertvalue %%s%d, %%d%d[4, %ld] : %s\n", cur + 1, tmp, cur, (long)i, desc);
  }
  EMIT("  %%m = builtin.unrealized_conversion_cast %%d%d : %s to %s\n", cur, desc, ty);
  EMIT("  return %%m : %s\n}\n", ty);
#undef EMIT
  if (b.oom) {
    free(ty);
    free(b.p);
    return -ENOMEM;
  }
  MlirOperation fn = mlirOperationCreateParse(c->ctx, vxl__str(b.p), vxl__str("<vortexd view helper>"));
  free(b.p);
  if (mlirOperationIsNull(fn)) {
    free(ty);
    vxl__diag_at(rw->d, loc, "internal: could not build the memref view for this argument");
    return -EINVAL;
  }
  if (c->nviews < VXL__VIEW_CACHE) { /* kept for the next compiles */
    c->view_types[c->nviews] = ty;
    c->view_ops[c->nviews++] = mlirOperationClone(fn);
  } else
    free(ty);
  mlirBlockAppendOwnedOperation(mlirModuleGetBody(rw->mod), fn);
  return 0;
}

/* Memory space of a memref type: 0 default, 3 workgroup, 5 private, -1
 * anything else.  Accepts integer spaces and #gpu.address_space<...>. */
static int vxl__memspace(MlirType t) {
  if (!mlirTypeIsAMemRef(t)) return 0;
  MlirAttribute ms = mlirMemRefTypeGetMemorySpace(t);
  if (mlirAttributeIsNull(ms)) return 0;
  if (mlirAttributeIsAInteger(ms)) {
    int64_t v = mlirIntegerAttrGetValueInt(ms);
    return v == 0 || v == 3 || v == 5 ? (int)v : -1;
  }
  char *str = vxl__attr_str(ms);
  int r = !str                       ? -1
          : strstr(str, "workgroup") ? 3
          : strstr(str, "private")   ? 5
          : strstr(str, "global")    ? 0
                                     : -1;
  free(str);
  return r;
}

/* The same memref type in the default memory space: Vortex local memory is
 * reached through ordinary pointers, so after placement nothing downstream
 * needs to know a buffer was shared. */
static MlirType vxl__strip_space(MlirType t) {
  intptr_t rank = mlirShapedTypeGetRank(t);
  int64_t shape[16];
  if (rank > 16) return t;
  for (intptr_t i = 0; i < rank; i++)
    shape[i] = mlirShapedTypeGetDimSize(t, i);
  return mlirMemRefTypeGet(mlirShapedTypeGetElementType(t), rank, shape, mlirMemRefTypeGetLayout(t),
                           mlirAttributeGetNull());
}

/* Bytes and alignment of a statically shaped memref's buffer, element size
 * and alignment from the RV32 LLVM data layout (index is 32-bit). */
static int vxl__memref_bytes(vxl__rw *rw, MlirType t, uint64_t *bytes, uint32_t *align) {
  if (!mlirShapedTypeHasStaticShape(t)) return -EINVAL;
  MlirType el = mlirShapedTypeGetElementType(t);
  if (mlirTypeIsAIndex(el)) el = mlirIntegerTypeGet(rw->c->ctx, 32);
  if (!rw->tr.ptr) rw->tr = mlirTypeToLLVMIRTranslatorCreate(rw->lctx); /* the compile's context */
  LLVMTypeRef lt = mlirTypeToLLVMIRTranslatorTranslateType(rw->tr, el);
  if (!lt) return -EINVAL;
  uint64_t n = 1;
  for (intptr_t i = 0; i < mlirShapedTypeGetRank(t); i++)
    n *= (uint64_t)mlirShapedTypeGetDimSize(t, i);
  *bytes = n * LLVMABISizeOfType(rw->td, lt);
  *align = LLVMABIAlignmentOfType(rw->td, lt);
  return 0;
}

/* Builds "func.func private @NAME() -> T" returning a view of a workgroup
 * buffer at byte offset off from the group's local-memory base (or from the
 * dynamic-shared base), and appends it to the module. */
static int vxl__make_shmem(vxl__rw *rw, MlirType t, uint64_t off, int dynamic, MlirLocation loc, char *name,
                           size_t cap) {
  char view[64];
  int rc = vxl__make_view(rw, t, loc, view, sizeof view);
  if (rc) return rc;
  char *ty = vxl__type_str(t), *text = NULL;
  if (!ty) return -ENOMEM;
  snprintf(name, cap, "__vxl_shmem%u", rw->views++);
  /* parsed inside a module that declares what it calls, so that the
   * symbol references verify; only the helper itself is moved out */
  const char *base = dynamic ? "__vxl_dynamic_base" : "__vxl_local_base";
  int n = asprintf(&text,
                   "module {\n"
                   "func.func private @%s() -> !llvm.ptr\n"
                   "func.func private @%s(!llvm.ptr) -> %s\n"
                   "func.func private @%s() -> %s {\n"
                   "  %%b = func.call @%s() : () -> !llvm.ptr\n"
                   "  %%p = llvm.getelementptr %%b[%llu] : (!llvm.ptr) -> !llvm.ptr, i8\n"
                   "  %%m = func.call @%s(%%p) : (!llvm.ptr) -> %s\n"
                   "  return %%m : %s\n}\n}\n",
                   base, view, ty, name, ty, base, (unsigned long long)off, view, ty, ty);
  free(ty);
  if (n < 0) return -ENOMEM;
  MlirModule wrap = mlirModuleCreateParse(rw->c->ctx, vxl__str(text));
  free(text);
  if (mlirModuleIsNull(wrap)) {
    vxl__diag_at(rw->d, loc, "internal: could not build the workgroup buffer view");
    return -EINVAL;
  }
  MlirOperation fn = mlirBlockGetFirstOperation(mlirModuleGetBody(wrap));
  fn = mlirOperationGetNextInBlock(mlirOperationGetNextInBlock(fn));
  mlirOperationRemoveFromParent(fn);
  mlirModuleDestroy(wrap);
  mlirBlockAppendOwnedOperation(mlirModuleGetBody(rw->mod), fn);
  return 0;
}

/* Places every address-space-3 memref.global and rewrites its
 * memref.get_globals into calls of a view helper.  Runs before the
 * functions are converted. */
int vxl__place_workgroup_globals(vxl__rw *rw) {
  MlirContext ctx = rw->c->ctx;
  MlirBlock body = mlirModuleGetBody(rw->mod);
  vxl__ops gets = {0};
  vxl__collect_ops(mlirModuleGetOperation(rw->mod), &gets);
  if (gets.oom) {
    free(gets.v);
    return -ENOMEM;
  }
  /* keep only the memref.get_global ops: the walk also listed the globals,
   * which the loop below destroys, and a destroyed op must not be looked at
   * again (it was, intermittently crashing with two workgroup globals) */
  size_t kept = 0;
  for (size_t i = 0; i < gets.n; i++)
    if (vxl__streq(vxl__op_name(gets.v[i]), "memref.get_global")) gets.v[kept++] = gets.v[i];
  gets.n = kept;
  int rc = 0;
  for (MlirOperation g = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(g) && rc == 0;) {
    MlirOperation next = mlirOperationGetNextInBlock(g);
    if (!vxl__streq(vxl__op_name(g), "memref.global")) {
      g = next;
      continue;
    }
    MlirAttribute ta = mlirOperationGetAttributeByName(g, vxl__str("type"));
    MlirType t = mlirTypeAttrGetValue(ta);
    int space = vxl__memspace(t);
    MlirLocation loc = mlirOperationGetLocation(g);
    if (space == 0) {
      g = next;
      continue;
    } /* a global in device memory: upstream lowers it */
    if (space != 3) {
      vxl__diag_at(rw->d, loc, "unsupported: memref.global in memory space %d", space);
      rc = -EINVAL;
      break;
    }
    MlirType st = vxl__strip_space(t);
    uint64_t bytes;
    uint32_t align;
    if (vxl__memref_bytes(rw, st, &bytes, &align) != 0) {
      vxl__diag_at(rw->d, loc, "unsupported: workgroup memref.global without a static shape");
      rc = -EINVAL;
      break;
    }
    int64_t elems = 1;
    for (intptr_t i = 0; i < mlirShapedTypeGetRank(st); i++)
      elems *= mlirShapedTypeGetDimSize(st, i);
    /* Polygeist's extern __shared__: one element, no initial value (a
     * declaration, or `= uninitialized`, which is a unit initial_value) */
    MlirAttribute init = mlirOperationGetAttributeByName(g, vxl__str("initial_value"));
    int dynamic = elems == 1 && (mlirAttributeIsNull(init) || mlirAttributeIsAUnit(init));
    uint64_t off = 0;
    if (!dynamic) {
      off = (rw->globals_bytes + align - 1) / align * align;
      rw->globals_bytes = off + bytes;
    } else if (bytes > rw->dynamic_min_bytes) {
      rw->dynamic_min_bytes = bytes;
    }
    MlirStringRef sym = mlirStringAttrGetValue(mlirOperationGetAttributeByName(g, vxl__str("sym_name")));
    char helper[64];
    rc = vxl__make_shmem(rw, st, off, dynamic, loc, helper, sizeof helper);
    for (size_t i = 0; rc == 0 && i < gets.n; i++) {
      MlirOperation u = gets.v[i];
      if (mlirOperationIsNull(u)) continue; /* already replaced */
      MlirAttribute nm = mlirOperationGetAttributeByName(u, vxl__str("name"));
      if (mlirAttributeIsNull(nm) || !mlirStringRefEqual(mlirFlatSymbolRefAttrGetValue(nm), sym)) continue;
      MlirOperation call =
          vxl__call(ctx, mlirOperationGetLocation(u), mlirOperationGetBlock(u), u, helper, 0, NULL, 1, &st);
      mlirValueReplaceAllUsesOfWith(mlirOperationGetResult(u, 0), mlirOperationGetResult(call, 0));
      mlirOperationDestroy(u);
      gets.v[i] = (MlirOperation){NULL};
    }
    mlirOperationDestroy(g);
    g = next;
  }
  free(gets.v);
  /* A genuine one-element __shared__ variable looks the same: the dynamic
   * area is never smaller than that element (main reads this constant). */
  if (rc == 0 && rw->dynamic_min_bytes)
    rc = vxl__add_constant_i32(ctx, body, VXL_DYNAMIC_MIN_SYMBOL, (uint32_t)rw->dynamic_min_bytes);
  return rc;
}

/* Replaces the workgroup and private attributions of a function (entry
 * block arguments past the inputs) and removes those arguments.  Workgroup
 * buffers are placed after the module's workgroup globals; the kernel's
 * static workgroup bytes go to *shared_bytes. */
int vxl__lower_attributions(vxl__rw *rw, MlirOperation fn, MlirBlock entry, intptr_t nin, int64_t nworkgroup,
                            uint32_t *shared_bytes) {
  MlirContext ctx = rw->c->ctx;
  MlirLocation loc = mlirOperationGetLocation(fn);
  intptr_t nargs = mlirBlockGetNumArguments(entry);
  uint64_t used = rw->globals_bytes;
  for (intptr_t i = nin; i < nargs; i++) {
    MlirValue arg = mlirBlockGetArgument(entry, i);
    MlirType t = mlirValueGetType(arg);
    MlirType st = vxl__strip_space(t);
    MlirOperation first = mlirBlockGetFirstOperation(entry);
    MlirValue repl;
    if (i - nin < nworkgroup) {
      uint64_t bytes;
      uint32_t align;
      if (vxl__memref_bytes(rw, st, &bytes, &align) != 0) {
        vxl__diag_at(rw->d, loc, "unsupported: workgroup attribution without a static shape");
        return -EINVAL;
      }
      uint64_t off = (used + align - 1) / align * align;
      used = off + bytes;
      char helper[64];
      int rc = vxl__make_shmem(rw, st, off, 0, loc, helper, sizeof helper);
      if (rc) return rc;
      repl = mlirOperationGetResult(vxl__call(ctx, loc, entry, first, helper, 0, NULL, 1, &st), 0);
    } else {
      /* private memory: a stack allocation in the function itself */
      MlirOperationState os = mlirOperationStateGet(vxl__str("memref.alloca"), loc);
      int32_t segs[2] = {0, 0};
      MlirNamedAttribute a = vxl__named(ctx, "operandSegmentSizes", mlirDenseI32ArrayGet(ctx, 2, segs));
      mlirOperationStateAddAttributes(&os, 1, &a);
      mlirOperationStateAddResults(&os, 1, &st);
      MlirOperation alloca = mlirOperationCreate(&os);
      mlirBlockInsertOwnedOperationBefore(entry, first, alloca);
      repl = mlirOperationGetResult(alloca, 0);
    }
    mlirValueReplaceAllUsesOfWith(arg, repl);
  }
  for (intptr_t i = nargs - 1; i >= nin; i--)
    mlirBlockEraseArgument(entry, (unsigned)i);
  if (used > UINT32_MAX) {
    vxl__diag_at(rw->d, loc, "unsupported: more than 4 GiB of workgroup memory");
    return -EINVAL;
  }
  *shared_bytes = (uint32_t)used;
  return 0;
}

static void vxl__strip_value(MlirValue v) {
  MlirType t = mlirValueGetType(v);
  int sp = vxl__memspace(t);
  if (mlirTypeIsAMemRef(t) && (sp == 3 || sp == 5)) mlirValueSetType(v, vxl__strip_space(t));
}

static MlirWalkResult vxl__strip_cb(MlirOperation op, void *ud) {
  (void)ud;
  for (intptr_t i = 0; i < mlirOperationGetNumResults(op); i++)
    vxl__strip_value(mlirOperationGetResult(op, i));
  for (intptr_t r = 0; r < mlirOperationGetNumRegions(op); r++)
    for (MlirBlock b = mlirRegionGetFirstBlock(mlirOperationGetRegion(op, r)); !mlirBlockIsNull(b);
         b = mlirBlockGetNextInRegion(b))
      for (intptr_t i = 0; i < mlirBlockGetNumArguments(b); i++)
        vxl__strip_value(mlirBlockGetArgument(b, i));
  return MlirWalkResultAdvance;
}

void vxl__strip_address_spaces(MlirOperation root) {
  mlirOperationWalk(root, vxl__strip_cb, NULL, MlirWalkPreOrder);
}

/* Static size in bytes of a shaped type (element bit widths rounded up to
 * bytes, index as 32 bits, other element types as 4 bytes), saturating at
 * UINT64_MAX; 0 for a dynamic shape. */
static uint64_t vxl__static_bytes(MlirType t) {
  if (!mlirTypeIsAShaped(t) || !mlirShapedTypeHasRank(t) || !mlirShapedTypeHasStaticShape(t)) return 0;
  MlirType el = mlirShapedTypeGetElementType(t);
  uint64_t size = 4;
  if (mlirTypeIsAInteger(el))
    size = (mlirIntegerTypeGetWidth(el) + 7) / 8;
  else if (mlirTypeIsAFloat(el))
    size = (mlirFloatTypeGetWidth(el) + 7) / 8;
  for (intptr_t i = 0; i < mlirShapedTypeGetRank(t); i++) {
    uint64_t dim = (uint64_t)mlirShapedTypeGetDimSize(t, i);
    if (dim && size > UINT64_MAX / dim) return UINT64_MAX;
    size *= dim;
  }
  return size;
}

typedef struct {
  vxl__diags *d;
  int rc;
} vxl__size_walk;

static int vxl__size_refuse(vxl__size_walk *w, MlirOperation op, const char *what, uint64_t bytes,
                            uint64_t limit, const char *why) {
  if (bytes <= limit) return 0;
  vxl__diag_at(w->d, mlirOperationGetLocation(op), "unsupported: %s of %llu bytes (at most %llu: %s)", what,
               (unsigned long long)bytes, (unsigned long long)limit, why);
  w->rc = -EINVAL;
  return 1;
}

static MlirWalkResult vxl__size_cb(MlirOperation op, void *ud) {
  vxl__size_walk *w = ud;
  static const char stack[] = "each thread's stack lives in a 16 KiB hart slot";
  if (vxl__op_is(op, "memref.alloca") && mlirOperationGetNumResults(op) == 1) {
    if (vxl__size_refuse(w, op, "private memory (memref.alloca)",
                         vxl__static_bytes(mlirValueGetType(mlirOperationGetResult(op, 0))),
                         VXL_MAX_PRIVATE_BYTES, stack))
      return MlirWalkResultInterrupt;
  } else if (vxl__op_is(op, "gpu.func")) {
    MlirBlock entry = mlirRegionGetFirstBlock(mlirOperationGetRegion(op, 0));
    MlirAttribute fta = mlirOperationGetAttributeByName(op, vxl__str("function_type"));
    MlirAttribute wa = mlirOperationGetAttributeByName(op, vxl__str("workgroup_attributions"));
    if (mlirBlockIsNull(entry) || mlirAttributeIsNull(fta)) return MlirWalkResultAdvance;
    intptr_t nin = mlirFunctionTypeGetNumInputs(mlirTypeAttrGetValue(fta));
    intptr_t nwg =
        !mlirAttributeIsNull(wa) && mlirAttributeIsAInteger(wa) ? mlirIntegerAttrGetValueInt(wa) : 0;
    uint64_t workgroup = 0;
    for (intptr_t i = nin; i < mlirBlockGetNumArguments(entry); i++) {
      uint64_t b = vxl__static_bytes(mlirValueGetType(mlirBlockGetArgument(entry, i)));
      if (i - nin < nwg)
        workgroup = workgroup > UINT64_MAX - b ? UINT64_MAX : workgroup + b;
      else if (vxl__size_refuse(w, op, "private attribution", b, VXL_MAX_PRIVATE_BYTES, stack))
        return MlirWalkResultInterrupt;
    }
    if (vxl__size_refuse(w, op, "workgroup attributions", workgroup, UINT32_MAX,
                         "device addresses are 32 bits"))
      return MlirWalkResultInterrupt;
  } else if (vxl__op_is(op, "memref.global")) {
    MlirAttribute ta = mlirOperationGetAttributeByName(op, vxl__str("type"));
    if (!mlirAttributeIsNull(ta) && mlirAttributeIsAType(ta) &&
        vxl__size_refuse(w, op, "memref.global", vxl__static_bytes(mlirTypeAttrGetValue(ta)),
                         VXL_MAX_GLOBAL_BYTES, "the object would hold it"))
      return MlirWalkResultInterrupt;
  } else {
    for (intptr_t i = 0; i < mlirOperationGetNumResults(op); i++) {
      MlirType t = mlirValueGetType(mlirOperationGetResult(op, i));
      if (mlirTypeIsATensor(t) &&
          vxl__size_refuse(w, op, "tensor value", vxl__static_bytes(t), VXL_MAX_GLOBAL_BYTES,
                           "a constant would be materialised in the object"))
        return MlirWalkResultInterrupt;
    }
  }
  return MlirWalkResultAdvance;
}

int vxl__check_sizes(MlirOperation root, vxl__diags *d) {
  vxl__size_walk w = {d, 0};
  mlirOperationWalk(root, vxl__size_cb, &w, MlirWalkPreOrder);
  return w.rc;
}
