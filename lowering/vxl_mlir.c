/*
 * vxl_mlir.c - GPU dialect -> LLVM dialect for Vortex (MLIR side).
 *
 * Steps, for one source:
 *   1. Make Polygeist output parseable: the host DLTI spec uses
 *      `dense<..> : vector<Kxi32>` values that MLIR 22 rejects; they are
 *      rewritten to vector<Kxi64> in place (same length, so every
 *      diagnostic keeps its line:col).  Unregistered polygeist.* ops are
 *      allowed by the context.
 *   2. Parse; outline any gpu.launch bodies (upstream gpu-kernel-outlining).
 *   3. Move the ops of every gpu.module into a fresh module (host code is
 *      not compiled) and add the Vortex device-ABI prelude (vxl_prelude.h).
 *   4. Reject anything the lowering does not handle with
 *      "unsupported: <op> at file:line:col".
 *   5. gpu.func -> func.func: kernel memref arguments become one !llvm.ptr
 *      (a 32-bit device address) and a memref view is rebuilt from it at
 *      function entry; gpu.return -> func.return; gpu.thread_id/block_id/
 *      block_dim/grid_dim/barrier -> calls to the prelude helpers.
 *   6. Run the upstream conversion pipeline with 32-bit index.
 *
 * No static mutable state: everything lives in the vxl_compiler or on the
 * stack of one compile.
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
#include <mlir-c/Pass.h>
#include <mlir-c/Support.h>
#include <mlir-c/Target/LLVMIR.h>

#include "vxl_internal.h"

/* ---- small helpers ---- */

static MlirStringRef vxl__str(const char *s) { return mlirStringRefCreateFromCString(s); }

static int vxl__streq(MlirStringRef a, const char *b) {
  size_t n = strlen(b);
  return a.length == n && memcmp(a.data, b, n) == 0;
}

static MlirStringRef vxl__op_name(MlirOperation op) { return mlirIdentifierStr(mlirOperationGetName(op)); }

void vxl__buf_append(MlirStringRef s, void *ud) {
  vxl__buf *b = ud;
  if (b->oom) return;
  if (b->n + s.length + 1 > b->cap) {
    size_t cap = b->cap ? b->cap * 2 : 256;
    while (cap < b->n + s.length + 1)
      cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
      b->oom = 1;
      return;
    }
    b->p = p;
    b->cap = cap;
  }
  memcpy(b->p + b->n, s.data, s.length);
  b->n += s.length;
  b->p[b->n] = '\0';
}

char *vxl__type_str(MlirType t) {
  vxl__buf b = {0};
  mlirTypePrint(t, vxl__buf_append, &b);
  if (b.oom) {
    free(b.p);
    return NULL;
  }
  return b.p ? b.p : strdup("");
}

char *vxl__attr_str(MlirAttribute a) {
  vxl__buf b = {0};
  mlirAttributePrint(a, vxl__buf_append, &b);
  if (b.oom) {
    free(b.p);
    return NULL;
  }
  return b.p ? b.p : strdup("");
}

/* ---- diagnostics ---- */

void vxl__diag_add(vxl__diags *d, const char *fmt, ...) {
  char *line = NULL;
  va_list ap;
  va_start(ap, fmt);
  int r = vasprintf(&line, fmt, ap);
  va_end(ap);
  if (r < 0) return;
  if (d->n == d->cap) {
    uint32_t cap = d->cap ? d->cap * 2 : 8;
    char **v = realloc(d->v, cap * sizeof *v);
    if (!v) {
      free(line);
      return;
    }
    d->v = v;
    d->cap = cap;
  }
  d->v[d->n++] = line;
}

void vxl__loc_format(const vxl__diags *d, MlirLocation loc, char *buf, size_t cap) {
  if (mlirLocationIsAFileLineColRange(loc)) {
    MlirStringRef f = mlirIdentifierStr(mlirLocationFileLineColRangeGetFilename(loc));
    if ((f.length == 0 || vxl__streq(f, "-")) && d && d->source_name) f = vxl__str(d->source_name);
    snprintf(buf, cap, "%.*s:%d:%d", (int)f.length, f.data, mlirLocationFileLineColRangeGetStartLine(loc),
             mlirLocationFileLineColRangeGetStartColumn(loc));
    return;
  }
  /* Fused, name or call-site locations: print MLIR's own form. */
  vxl__buf b = {0};
  mlirLocationPrint(loc, vxl__buf_append, &b);
  snprintf(buf, cap, "%s", b.p && !b.oom ? b.p : "<unknown>");
  free(b.p);
}

void vxl__diag_at(vxl__diags *d, MlirLocation loc, const char *fmt, ...) {
  char where[512], *what = NULL;
  vxl__loc_format(d, loc, where, sizeof where);
  va_list ap;
  va_start(ap, fmt);
  int r = vasprintf(&what, fmt, ap);
  va_end(ap);
  if (r < 0) return;
  vxl__diag_add(d, "%s: error: %s", where, what);
  free(what);
}

void vxl__kernel_info_clear(vxl__kernel_info *k) {
  if (!k) return;
  free(k->name);
  for (uint32_t i = 0; i < k->nargs; i++)
    free(k->arg_types[i]);
  free(k->arg_types);
  memset(k, 0, sizeof *k);
}

/* ---- step 1: DLTI fix-up ---- */

/* Rewrites ": vector<Nxi32>" to ": vector<Nxi64>" inside every
 * "#dlti.dl_entry<...>" of buf (in place, same length).  MLIR 22's DLTI
 * parser wants i64 elements; Polygeist writes i32 ("expected a dense i64
 * elements attribute" otherwise). */
static void vxl__fix_dlti(char *buf, size_t len) {
  const char *tag = "#dlti.dl_entry<";
  size_t tlen = strlen(tag);
  for (size_t i = 0; i + tlen <= len; i++) {
    if (memcmp(buf + i, tag, tlen) != 0) continue;
    int depth = 1;
    size_t j = i + tlen;
    for (; j < len && depth > 0; j++) {
      if (buf[j] == '"') { /* skip string literal */
        for (j++; j < len && buf[j] != '"'; j++)
          if (buf[j] == '\\') j++;
      } else if (buf[j] == '<')
        depth++;
      else if (buf[j] == '>')
        depth--;
    }
    /* [i, j) is one entry; look for ": vector<" digits "xi32>" */
    for (size_t k = i; k + 9 < j; k++) {
      if (memcmp(buf + k, ": vector<", 9) != 0) continue;
      size_t m = k + 9;
      while (m < j && buf[m] >= '0' && buf[m] <= '9')
        m++;
      if (m + 5 <= j && memcmp(buf + m, "xi32>", 5) == 0) {
        buf[m + 2] = '6';
        buf[m + 3] = '4';
      }
    }
    i = j - 1;
  }
}

/* ---- op collection and matching (shared with vxl_divergence.c) ---- */

static void vxl__ops_push(vxl__ops *o, MlirOperation op) {
  if (o->oom) return;
  if (o->n == o->cap) {
    size_t cap = o->cap ? o->cap * 2 : 64;
    MlirOperation *v = realloc(o->v, cap * sizeof *v);
    if (!v) {
      o->oom = 1;
      return;
    }
    o->v = v;
    o->cap = cap;
  }
  o->v[o->n++] = op;
}

static MlirWalkResult vxl__collect_cb(MlirOperation op, void *ud) {
  vxl__ops_push(ud, op);
  return MlirWalkResultAdvance;
}

int vxl__collect_ops(MlirOperation root, vxl__ops *out) {
  mlirOperationWalk(root, vxl__collect_cb, out, MlirWalkPreOrder);
  return out->oom ? -ENOMEM : 0;
}

int vxl__op_is(MlirOperation op, const char *name) { return vxl__streq(vxl__op_name(op), name); }

MlirStringRef vxl__callee(MlirOperation op) {
  if (!vxl__op_is(op, "func.call")) return (MlirStringRef){"", 0};
  MlirAttribute a = mlirOperationGetAttributeByName(op, vxl__str("callee"));
  return mlirAttributeIsNull(a) ? (MlirStringRef){"", 0} : mlirFlatSymbolRefAttrGetValue(a);
}

/* ---- step 4: what the lowering accepts ---- */

/* Dialects whose ops the upstream pipeline lowers completely. */
static int vxl__dialect_supported(MlirStringRef name) {
  static const char *const prefixes[] = {"arith.", "math.",  "scf.",    "cf.", "memref.", "func.",
                                         "llvm.",  "index.", "affine.", "ub.", NULL};
  for (int i = 0; prefixes[i]; i++) {
    size_t n = strlen(prefixes[i]);
    if (name.length > n && memcmp(name.data, prefixes[i], n) == 0) return 1;
  }
  return vxl__streq(name, "builtin.unrealized_conversion_cast");
}

/* GPU-dialect ops this file rewrites. */
static int vxl__gpu_op_supported(MlirStringRef name) {
  static const char *const ops[] = {"gpu.func",
                                    "gpu.return",
                                    "gpu.thread_id",
                                    "gpu.block_id",
                                    "gpu.block_dim",
                                    "gpu.grid_dim",
                                    "gpu.global_id",
                                    "gpu.barrier",
                                    "gpu.printf",
                                    "gpu.module_end",
                                    "gpu.lane_id",
                                    "gpu.subgroup_id",
                                    "gpu.subgroup_size",
                                    "gpu.num_subgroups",
                                    "gpu.shuffle",
                                    "gpu.subgroup_reduce",
                                    "gpu.all_reduce",
                                    "gpu.yield",
                                    NULL};
  for (int i = 0; ops[i]; i++)
    if (vxl__streq(name, ops[i])) return 1;
  return 0;
}

/* ---- step 5: gpu.func -> func.func ---- */

static MlirNamedAttribute vxl__named(MlirContext ctx, const char *name, MlirAttribute a) {
  return mlirNamedAttributeGet(mlirIdentifierGet(ctx, vxl__str(name)), a);
}

/* Creates "arith.constant V : i32" before `before`. */
static MlirValue vxl__const_i32(MlirContext ctx, MlirLocation loc, MlirBlock blk, MlirOperation before,
                                int32_t v) {
  MlirType i32 = mlirIntegerTypeGet(ctx, 32);
  MlirOperationState st = mlirOperationStateGet(vxl__str("arith.constant"), loc);
  MlirNamedAttribute a = vxl__named(ctx, "value", mlirIntegerAttrGet(i32, v));
  mlirOperationStateAddAttributes(&st, 1, &a);
  mlirOperationStateAddResults(&st, 1, &i32);
  MlirOperation op = mlirOperationCreate(&st);
  mlirBlockInsertOwnedOperationBefore(blk, before, op);
  return mlirOperationGetResult(op, 0);
}

MlirOperation vxl__func_call(MlirContext ctx, MlirLocation loc, const char *callee, intptr_t nargs,
                             MlirValue *args, intptr_t nres, MlirType *res) {
  MlirOperationState st = mlirOperationStateGet(vxl__str("func.call"), loc);
  MlirNamedAttribute a = vxl__named(ctx, "callee", mlirFlatSymbolRefAttrGet(ctx, vxl__str(callee)));
  mlirOperationStateAddAttributes(&st, 1, &a);
  mlirOperationStateAddOperands(&st, nargs, args);
  mlirOperationStateAddResults(&st, nres, res);
  return mlirOperationCreate(&st);
}

/* Creates "func.call @callee(args)" before `before` (at the end of blk when
 * before is null). */
static MlirOperation vxl__call(MlirContext ctx, MlirLocation loc, MlirBlock blk, MlirOperation before,
                               const char *callee, intptr_t nargs, MlirValue *args, intptr_t nres,
                               MlirType *res) {
  MlirOperation op = vxl__func_call(ctx, loc, callee, nargs, args, nres, res);
  if (mlirOperationIsNull(before))
    mlirBlockAppendOwnedOperation(blk, op);
  else
    mlirBlockInsertOwnedOperationBefore(blk, before, op);
  return op;
}

/* Reads the x/y/z of a `dimension` attribute (#gpu<dim x>): the 22 C API has
 * no accessor for the gpu dimension enum, so it is printed and read. */
static int vxl__dimension(MlirOperation op) {
  MlirAttribute a = mlirOperationGetAttributeByName(op, vxl__str("dimension"));
  if (mlirAttributeIsNull(a)) return -1;
  char *s = vxl__attr_str(a);
  if (!s) return -1;
  int dim = -1;
  size_t n = strlen(s);
  if (n >= 2 && s[n - 1] == '>') {
    char c = s[n - 2];
    dim = c == 'x' ? 0 : c == 'y' ? 1 : c == 'z' ? 2 : -1;
  }
  free(s);
  return dim;
}

/* State of one compile's rewrite. */
typedef struct {
  vxl_compiler *c;
  MlirModule mod;
  vxl__diags *d;
  unsigned views; /* memref view helpers created so far */
  int needs_full; /* ops only the full pipeline lowers were seen */
  /* workgroup memory: module-level address-space-3 memref.globals first
   * (static ones at fixed offsets, 1-element uninitialized ones = Polygeist's
   * extern __shared__ at the dynamic base), then each kernel's attributions */
  uint64_t globals_bytes;
  uint64_t dynamic_min_bytes; /* largest element of an extern __shared__ global */
  vxl__subgroups sg;          /* subgroup and workgroup collectives */
  LLVMContextRef lctx;        /* for element sizes from the data layout */
  LLVMTargetDataRef td;       /* lives and dies with lctx */
  MlirTypeToLLVMIRTranslator tr;
} vxl__rw;

/* Builds "func.func private @NAME(%p: !llvm.ptr) -> MEMREF" that rebuilds a
 * memref descriptor (allocated = aligned = %p, offset 0, row-major strides)
 * from a device pointer, and appends it to the module.  Only the leading
 * extent may be dynamic: the host passes just an address, so inner extents
 * must be static for the strides to be known.  The dynamic leading extent is
 * set to INT32_MAX (unknown; nothing the lowering emits reads it). */
static int vxl__make_view(vxl__rw *rw, MlirType memref, MlirLocation loc, char *name, size_t cap) {
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
  free(ty);
  if (b.oom) {
    free(b.p);
    return -ENOMEM;
  }
  MlirOperation fn = mlirOperationCreateParse(rw->c->ctx, vxl__str(b.p), vxl__str("<vortexd view helper>"));
  free(b.p);
  if (mlirOperationIsNull(fn)) {
    vxl__diag_at(rw->d, loc, "internal: could not build the memref view for this argument");
    return -EINVAL;
  }
  mlirBlockAppendOwnedOperation(mlirModuleGetBody(rw->mod), fn);
  return 0;
}

/* ---- workgroup and private memory ---- */

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
  if (!rw->lctx) {
    rw->lctx = LLVMContextCreate();
    rw->td = vxl__target_data(rw->c);
    rw->tr = mlirTypeToLLVMIRTranslatorCreate(rw->lctx);
  }
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

/* Appends `llvm.mlir.global internal constant @name(value : i32) : i32` to
 * body: a number the MLIR side leaves for main (vxl_codegen.c).  Returns 0
 * or -ENOMEM. */
static int vxl__add_constant_i32(MlirContext ctx, MlirBlock body, const char *name, uint32_t value) {
  char text[160];
  snprintf(text, sizeof text, "module {\nllvm.mlir.global internal constant @%s(%u : i32) : i32\n}\n", name,
           value);
  MlirModule wrap = mlirModuleCreateParse(ctx, vxl__str(text));
  if (mlirModuleIsNull(wrap)) return -ENOMEM;
  MlirOperation gl = mlirBlockGetFirstOperation(mlirModuleGetBody(wrap));
  mlirOperationRemoveFromParent(gl);
  mlirModuleDestroy(wrap);
  mlirBlockAppendOwnedOperation(body, gl);
  return 0;
}

/* Places every address-space-3 memref.global and rewrites its
 * memref.get_globals into calls of a view helper.  Runs before the
 * functions are converted. */
static int vxl__place_workgroup_globals(vxl__rw *rw) {
  MlirContext ctx = rw->c->ctx;
  MlirBlock body = mlirModuleGetBody(rw->mod);
  vxl__ops gets = {0};
  mlirOperationWalk(mlirModuleGetOperation(rw->mod), vxl__collect_cb, &gets, MlirWalkPreOrder);
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
static int vxl__lower_attributions(vxl__rw *rw, MlirOperation fn, MlirBlock entry, intptr_t nin,
                                   int64_t nworkgroup, uint32_t *shared_bytes) {
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

/* Records which grid/block dimensions a kernel reads. */
static void vxl__note_dims(vxl__kernel_info *k, MlirStringRef name, int dim) {
  if (dim < 0 || !k) return;
  if (vxl__streq(name, "gpu.block_id") || vxl__streq(name, "gpu.grid_dim") ||
      vxl__streq(name, "gpu.global_id"))
    if ((uint32_t)dim + 1 > k->grid_dims) k->grid_dims = (uint32_t)dim + 1;
}

/* gpu.printf "fmt" %a... -> vx_printf(fmt, a...) (Vortex's device printf,
 * vx_print.h).  Each call site gets a helper, parsed from text, that holds
 * the format as a global and applies C's default argument promotions
 * (f32 -> f64, small integers -> i32, index -> i32). */
static int vxl__lower_printf(vxl__rw *rw, MlirOperation op) {
  MlirContext ctx = rw->c->ctx;
  MlirLocation loc = mlirOperationGetLocation(op);
  MlirAttribute fa = mlirOperationGetAttributeByName(op, vxl__str("format"));
  char *fmt = mlirAttributeIsNull(fa) ? NULL : vxl__attr_str(fa); /* "...", escaped */
  if (!fmt || strlen(fmt) < 2) {
    free(fmt);
    vxl__diag_at(rw->d, loc, "unsupported: gpu.printf without a readable format");
    return -EINVAL;
  }
  fmt[strlen(fmt) - 1] = '\0'; /* drop the closing quote; \00 goes before it */
  intptr_t n = mlirOperationGetNumOperands(op);
  unsigned id = rw->views++;
  vxl__buf b = {0};
  char line[512];
#define EMITF(...) (snprintf(line, sizeof line, __VA_ARGS__), vxl__buf_append(vxl__str(line), &b))
  EMITF("module {\nllvm.func @vx_printf(!llvm.ptr, ...) -> i32\n");
  vxl__buf_append(vxl__str("llvm.mlir.global internal constant @__vxl_fmt"), &b);
  EMITF("%u(", id);
  vxl__buf_append(vxl__str(fmt), &b);
  vxl__buf_append(vxl__str("\\00\") {addr_space = 0 : i32}\n"), &b);
  EMITF("func.func private @__vxl_printf%u(", id);
  char *types[16];
  if (n > 15) {
    free(fmt);
    free(b.p);
    vxl__diag_at(rw->d, loc, "unsupported: gpu.printf with more than 15 arguments");
    return -EINVAL;
  }
  for (intptr_t i = 0; i < n; i++) {
    types[i] = vxl__type_str(mlirValueGetType(mlirOperationGetOperand(op, i)));
    EMITF("%s%%a%ld: %s", i ? ", " : "", (long)i, types[i]);
  }
  EMITF(") {\n  %%f = llvm.mlir.addressof @__vxl_fmt%u : !llvm.ptr\n", id);
  char args[1024] = "%f", sig[1024] = "!llvm.ptr";
  for (intptr_t i = 0; i < n; i++) {
    MlirType t = mlirValueGetType(mlirOperationGetOperand(op, i));
    const char *pt = types[i];
    if (mlirTypeIsAF32(t) || mlirTypeIsAF16(t)) {
      EMITF("  %%p%ld = arith.extf %%a%ld : %s to f64\n", (long)i, (long)i, types[i]);
      pt = "f64";
    } else if (mlirTypeIsAIndex(t)) {
      EMITF("  %%p%ld = arith.index_cast %%a%ld : index to i32\n", (long)i, (long)i);
      pt = "i32";
    } else if (mlirTypeIsAInteger(t) && mlirIntegerTypeGetWidth(t) < 32) {
      EMITF("  %%p%ld = arith.extsi %%a%ld : %s to i32\n", (long)i, (long)i, types[i]);
      pt = "i32";
    }
    size_t al = strlen(args), sl = strlen(sig);
    int promoted = mlirTypeIsAF32(t) || mlirTypeIsAF16(t) || mlirTypeIsAIndex(t) ||
                   (mlirTypeIsAInteger(t) && mlirIntegerTypeGetWidth(t) < 32);
    snprintf(args + al, sizeof args - al, ", %%%c%ld", promoted ? 'p' : 'a', (long)i);
    snprintf(sig + sl, sizeof sig - sl, ", %s", pt);
  }
  /* args and sig can exceed line[]: appended as they are */
  vxl__buf_append(vxl__str("  %r = llvm.call @vx_printf("), &b);
  vxl__buf_append(vxl__str(args), &b);
  vxl__buf_append(vxl__str(") vararg(!llvm.func<i32 (ptr, ...)>) : ("), &b);
  vxl__buf_append(vxl__str(sig), &b);
  vxl__buf_append(vxl__str(") -> i32\n"), &b);
  EMITF("  return\n}\n}\n");
#undef EMITF
  for (intptr_t i = 0; i < n; i++)
    free(types[i]);
  free(fmt);
  if (b.oom) {
    free(b.p);
    return -ENOMEM;
  }
  MlirModule wrap = mlirModuleCreateParse(ctx, vxl__str(b.p));
  free(b.p);
  if (mlirModuleIsNull(wrap)) {
    vxl__diag_at(rw->d, loc, "unsupported: gpu.printf with these argument types");
    return -EINVAL;
  }
  /* move the global and the helper (and vx_printf's declaration, once) */
  MlirBlock mb = mlirModuleGetBody(rw->mod);
  int have_decl = 0;
  for (MlirOperation o = mlirBlockGetFirstOperation(mb); !mlirOperationIsNull(o);
       o = mlirOperationGetNextInBlock(o)) {
    MlirAttribute sn = mlirOperationGetAttributeByName(o, vxl__str("sym_name"));
    if (!mlirAttributeIsNull(sn) && vxl__streq(mlirStringAttrGetValue(sn), "vx_printf")) have_decl = 1;
  }
  MlirOperation o = mlirBlockGetFirstOperation(mlirModuleGetBody(wrap));
  while (!mlirOperationIsNull(o)) {
    MlirOperation next = mlirOperationGetNextInBlock(o);
    if (!(have_decl && vxl__streq(vxl__op_name(o), "llvm.func"))) {
      mlirOperationRemoveFromParent(o);
      mlirBlockAppendOwnedOperation(mb, o);
    }
    o = next;
  }
  mlirModuleDestroy(wrap);
  char helper[64];
  snprintf(helper, sizeof helper, "__vxl_printf%u", id);
  MlirValue ops[16];
  for (intptr_t i = 0; i < n; i++)
    ops[i] = mlirOperationGetOperand(op, i);
  vxl__call(ctx, loc, mlirOperationGetBlock(op), op, helper, n, ops, 0, NULL);
  mlirOperationDestroy(op);
  return 0;
}

/* Rewrites one gpu.* op inside a converted function body. */
static int vxl__rewrite_gpu_op(vxl__rw *rw, MlirOperation op, vxl__kernel_info *k) {
  MlirContext ctx = rw->c->ctx;
  MlirStringRef name = vxl__op_name(op);
  MlirLocation loc = mlirOperationGetLocation(op);
  MlirBlock blk = mlirOperationGetBlock(op);
  const char *helper = NULL;
  if (vxl__streq(name, "gpu.thread_id"))
    helper = "__vxl_thread_id";
  else if (vxl__streq(name, "gpu.block_id"))
    helper = "__vxl_block_id";
  else if (vxl__streq(name, "gpu.block_dim"))
    helper = "__vxl_block_dim";
  else if (vxl__streq(name, "gpu.grid_dim"))
    helper = "__vxl_grid_dim";
  else if (vxl__streq(name, "gpu.global_id"))
    helper = "__vxl_global_id";

  if (helper) {
    int dim = vxl__dimension(op);
    if (dim < 0) {
      vxl__diag_at(rw->d, loc, "unsupported: %.*s with an unreadable dimension", (int)name.length, name.data);
      return -EINVAL;
    }
    vxl__note_dims(k, name, dim);
    MlirValue c = vxl__const_i32(ctx, loc, blk, op, dim);
    MlirType idx = mlirIndexTypeGet(ctx);
    MlirOperation call = vxl__call(ctx, loc, blk, op, helper, 1, &c, 1, &idx);
    mlirValueReplaceAllUsesOfWith(mlirOperationGetResult(op, 0), mlirOperationGetResult(call, 0));
    mlirOperationDestroy(op);
    return 0;
  }
  if (vxl__streq(name, "gpu.printf")) return vxl__lower_printf(rw, op);
  int sg = vxl__lower_subgroup_op(&rw->sg, op);
  if (sg != 0) return sg < 0 ? sg : 0;
  if (vxl__streq(name, "gpu.barrier")) {
    vxl__call(ctx, loc, blk, op, "__vxl_barrier", 0, NULL, 0, NULL);
    mlirOperationDestroy(op);
    return 0;
  }
  /* gpu.yield ends a gpu.all_reduce region that became a function */
  if (vxl__streq(name, "gpu.return") || vxl__streq(name, "gpu.yield")) {
    MlirOperationState st = mlirOperationStateGet(vxl__str("func.return"), loc);
    intptr_t n = mlirOperationGetNumOperands(op);
    for (intptr_t i = 0; i < n; i++) {
      MlirValue v = mlirOperationGetOperand(op, i);
      mlirOperationStateAddOperands(&st, 1, &v);
    }
    mlirBlockInsertOwnedOperationBefore(blk, op, mlirOperationCreate(&st));
    mlirOperationDestroy(op);
    return 0;
  }
  return 0;
}

/* Converts one gpu.func (already moved into the new module) to func.func.
 * For kernels fills *k. */
static int vxl__convert_func(vxl__rw *rw, MlirOperation gf, vxl__kernel_info *k) {
  MlirContext ctx = rw->c->ctx;
  MlirLocation loc = mlirOperationGetLocation(gf);
  MlirAttribute sym = mlirOperationGetAttributeByName(gf, vxl__str("sym_name"));
  MlirAttribute fta = mlirOperationGetAttributeByName(gf, vxl__str("function_type"));
  if (mlirAttributeIsNull(sym) || mlirAttributeIsNull(fta)) {
    vxl__diag_at(rw->d, loc, "internal: gpu.func without sym_name or function_type");
    return -EINVAL;
  }
  MlirStringRef fname = mlirStringAttrGetValue(sym);
  MlirType fty = mlirTypeAttrGetValue(fta);
  intptr_t nin = mlirFunctionTypeGetNumInputs(fty);
  MlirRegion body = mlirOperationGetRegion(gf, 0);
  MlirBlock entry = mlirRegionGetFirstBlock(body);
  if (mlirBlockIsNull(entry)) {
    vxl__diag_at(rw->d, loc, "unsupported: gpu.func @%.*s without a body", (int)fname.length, fname.data);
    return -EINVAL;
  }
  int64_t nworkgroup = 0;
  MlirAttribute wa = mlirOperationGetAttributeByName(gf, vxl__str("workgroup_attributions"));
  if (!mlirAttributeIsNull(wa) && mlirAttributeIsAInteger(wa)) nworkgroup = mlirIntegerAttrGetValueInt(wa);
  if (!k && nworkgroup > 0) {
    vxl__diag_at(rw->d, loc, "unsupported: workgroup attributions on non-kernel gpu.func @%.*s",
                 (int)fname.length, fname.data);
    return -EINVAL;
  }

  /* New signature: kernel memrefs become !llvm.ptr. */
  MlirType *ins = calloc(nin ? (size_t)nin : 1, sizeof *ins);
  if (!ins) return -ENOMEM;
  MlirType ptr = mlirLLVMPointerTypeGet(ctx, 0);
  int rc = 0;
  if (k) {
    k->name = strndup(fname.data, fname.length);
    k->nargs = (uint32_t)nin;
    k->arg_types = calloc(nin ? (size_t)nin : 1, sizeof *k->arg_types);
    k->grid_dims = 1;
    if (!k->name || !k->arg_types) {
      free(ins);
      return -ENOMEM;
    }
    MlirAttribute kb = mlirOperationGetAttributeByName(gf, vxl__str("gpu.known_block_size"));
    if (mlirAttributeIsNull(kb)) /* outlined gpu.launch bodies carry it as an inherent attribute */
      kb = mlirOperationGetAttributeByName(gf, vxl__str("known_block_size"));
    if (!mlirAttributeIsNull(kb) && mlirAttributeIsADenseI32Array(kb) &&
        mlirDenseArrayGetNumElements(kb) == 3)
      for (int i = 0; i < 3; i++)
        k->known_block[i] = (uint32_t)mlirDenseI32ArrayGetElement(kb, i);
  }
  for (intptr_t i = 0; i < nin; i++) {
    MlirType t = mlirFunctionTypeGetInput(fty, i);
    ins[i] = t;
    if (k) {
      k->arg_types[i] = vxl__type_str(t);
      if (!k->arg_types[i]) {
        free(ins);
        return -ENOMEM;
      }
      if (mlirTypeIsAMemRef(t))
        ins[i] = ptr;
      else if (!(mlirTypeIsAInteger(t) || mlirTypeIsAIndex(t) || mlirTypeIsAF32(t) || mlirTypeIsAF64(t) ||
                 mlirTypeIsAF16(t) || mlirTypeIsALLVMPointerType(t))) {
        vxl__diag_at(rw->d, loc, "unsupported: kernel @%.*s argument %ld of type %s", (int)fname.length,
                     fname.data, (long)i, k->arg_types[i]);
        free(ins);
        return -EINVAL;
      }
    }
  }
  MlirType nfty = mlirFunctionTypeGet(ctx, nin, ins, mlirFunctionTypeGetNumResults(fty), NULL);
  if (mlirFunctionTypeGetNumResults(fty) > 0) {
    intptr_t nr = mlirFunctionTypeGetNumResults(fty);
    MlirType *rs = calloc((size_t)nr, sizeof *rs);
    if (!rs) {
      free(ins);
      return -ENOMEM;
    }
    for (intptr_t i = 0; i < nr; i++)
      rs[i] = mlirFunctionTypeGetResult(fty, i);
    nfty = mlirFunctionTypeGet(ctx, nin, ins, nr, rs);
    free(rs);
  }
  free(ins);

  MlirOperationState st = mlirOperationStateGet(vxl__str("func.func"), loc);
  MlirNamedAttribute attrs[2] = {
      vxl__named(ctx, "sym_name", mlirStringAttrGet(ctx, fname)),
      vxl__named(ctx, "function_type", mlirTypeAttrGet(nfty)),
  };
  mlirOperationStateAddAttributes(&st, 2, attrs);
  MlirRegion r = mlirRegionCreate();
  mlirOperationStateAddOwnedRegions(&st, 1, &r);
  MlirOperation ff = mlirOperationCreate(&st);
  mlirRegionTakeBody(mlirOperationGetRegion(ff, 0), body);
  mlirBlockInsertOwnedOperationBefore(mlirOperationGetBlock(gf), gf, ff);
  mlirOperationDestroy(gf);

  uint32_t shared = (uint32_t)rw->globals_bytes;
  if (mlirBlockGetNumArguments(entry) > nin) {
    rc = vxl__lower_attributions(rw, ff, entry, nin, nworkgroup, &shared);
    if (rc) return rc;
  }
  if (k) k->shared_bytes = shared;

  /* Kernel memref arguments: retype to !llvm.ptr, rebuild the view. */
  if (k) {
    for (intptr_t i = 0; i < nin && rc == 0; i++) {
      MlirValue arg = mlirBlockGetArgument(entry, i);
      MlirType t = mlirValueGetType(arg);
      if (!mlirTypeIsAMemRef(t)) continue;
      char view[64];
      rc = vxl__make_view(rw, t, loc, view, sizeof view);
      if (rc) break;
      mlirBlockArgumentSetType(arg, ptr);
      MlirOperation first = mlirBlockGetFirstOperation(entry);
      MlirOperation call = vxl__call(ctx, loc, entry, first, view, 1, &arg, 1, &t);
      mlirValueReplaceAllUsesExcept(arg, mlirOperationGetResult(call, 0), 1, &call);
    }
  }
  if (rc) return rc;

  /* Rewrite the gpu.* ops of the body (collected first: the walk must not
   * see the ops it mutates). */
  vxl__ops ops = {0};
  mlirOperationWalk(ff, vxl__collect_cb, &ops, MlirWalkPreOrder);
  if (ops.oom) {
    free(ops.v);
    return -ENOMEM;
  }
  for (size_t i = 0; i < ops.n && rc == 0; i++) {
    MlirStringRef n = vxl__op_name(ops.v[i]);
    if (n.length > 4 && memcmp(n.data, "gpu.", 4) == 0) rc = vxl__rewrite_gpu_op(rw, ops.v[i], k);
  }
  free(ops.v);
  return rc;
}

/* Erases the prelude's __vxl_* functions that nothing calls (the prelude
 * holds every helper; a typical kernel uses a few), saving their trip
 * through the pipeline.  Repeats while something went, since helpers call
 * helpers.  On OOM it keeps everything (harmless, only slower). */
static void vxl__prune_prelude(MlirModule mod) {
  for (int erased = 1; erased;) {
    erased = 0;
    vxl__ops all = {0};
    if (vxl__collect_ops(mlirModuleGetOperation(mod), &all) != 0) {
      free(all.v);
      return;
    }
    /* callee names first: they stay valid when their calls are destroyed */
    size_t ncallees = 0;
    for (size_t i = 0; i < all.n; i++) {
      MlirStringRef callee = vxl__callee(all.v[i]);
      if (callee.length) all.v[ncallees++] = all.v[i];
    }
    MlirStringRef *callees = malloc((ncallees ? ncallees : 1) * sizeof *callees);
    for (size_t i = 0; callees && i < ncallees; i++)
      callees[i] = vxl__callee(all.v[i]);
    free(all.v);
    if (!callees) return;
    for (MlirOperation f = mlirBlockGetFirstOperation(mlirModuleGetBody(mod)); !mlirOperationIsNull(f);) {
      MlirOperation next = mlirOperationGetNextInBlock(f);
      MlirAttribute sn = mlirOperationGetAttributeByName(f, vxl__str("sym_name"));
      MlirStringRef name = mlirAttributeIsNull(sn) ? (MlirStringRef){"", 0} : mlirStringAttrGetValue(sn);
      if (vxl__op_is(f, "func.func") && name.length > 6 && memcmp(name.data, "__vxl_", 6) == 0) {
        int used = 0;
        for (size_t i = 0; i < ncallees && !used; i++)
          used = mlirStringRefEqual(callees[i], name);
        if (!used) {
          mlirOperationDestroy(f);
          erased = 1;
        }
      }
      f = next;
    }
    free(callees);
  }
}

/* ---- driver ---- */

/* Longest numeric literal accepted, in characters: a decimal i1024 has 309
 * digits, a hexadecimal one 258 characters.  MLIR's parser takes time
 * growing faster than the square of a literal's length (a 20 000-digit
 * integer took 30 s), so longer ones are refused before parsing. */
#define VXL_MAX_LITERAL_CHARS 400

static int vxl__word_char(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '$' ||
         c == '.' || c == '-';
}

/* Refuses numeric literals longer than VXL_MAX_LITERAL_CHARS, with a
 * diagnostic at their file:line:col; one pass over the text, skipping
 * string literals and comments.  A word is a maximal run of identifier
 * characters; it is a numeric literal when it starts with a digit (or a
 * minus and a digit) and no sigil (% @ # ^ !) names it.  Returns 0 or
 * -EINVAL. */
static int vxl__check_literals(const char *t, size_t len, const char *source_name, vxl__diags *d) {
  size_t line = 1, col = 1;
  for (size_t i = 0; i < len;) {
    unsigned char c = (unsigned char)t[i];
    if (c == '\n') {
      line++, col = 1, i++;
      continue;
    }
    if (c == '"') { /* string literal, with escapes */
      for (i++, col++; i < len && t[i] != '"' && t[i] != '\n'; i++, col++)
        if (t[i] == '\\' && i + 1 < len && t[i + 1] != '\n') i++, col++;
      if (i < len && t[i] == '"') i++, col++;
      continue;
    }
    if (c == '/' && i + 1 < len && t[i + 1] == '/') { /* comment */
      while (i < len && t[i] != '\n')
        i++;
      continue;
    }
    if (!vxl__word_char(c)) {
      i++, col++;
      continue;
    }
    size_t start = i, scol = col;
    int sigil = i > 0 && strchr("%@#^!", t[i - 1]) != NULL;
    while (i < len && vxl__word_char((unsigned char)t[i]))
      i++, col++;
    size_t n = i - start;
    const char *w = t + start;
    int numeric =
        !sigil && ((w[0] >= '0' && w[0] <= '9') || (w[0] == '-' && n > 1 && w[1] >= '0' && w[1] <= '9'));
    if (numeric && n > VXL_MAX_LITERAL_CHARS) {
      vxl__diag_add(d, "%s:%zu:%zu: error: unsupported: numeric literal of %zu characters (at most %d)",
                    source_name, line, scol, n, VXL_MAX_LITERAL_CHARS);
      return -EINVAL;
    }
  }
  return 0;
}

/* Ops the base pipeline does not lower (see VXL_PIPELINE_BASE). */
static int vxl__needs_full_pipeline(MlirStringRef n) {
  static const char *const prefixes[] = {"affine.", "math.", "ub.", NULL};
  for (int i = 0; prefixes[i]; i++)
    if (n.length > strlen(prefixes[i]) && memcmp(n.data, prefixes[i], strlen(prefixes[i])) == 0) return 1;
  if (n.length > 7 && memcmp(n.data, "memref.", 7) == 0)
    return !(vxl__streq(n, "memref.load") || vxl__streq(n, "memref.store"));
  return 0;
}

static int vxl__check_supported(vxl__rw *rw, MlirOperation root) {
  vxl__ops ops = {0};
  mlirOperationWalk(root, vxl__collect_cb, &ops, MlirWalkPreOrder);
  if (ops.oom) {
    free(ops.v);
    return -ENOMEM;
  }
  int bad = 0;
  for (size_t i = 0; i < ops.n; i++) {
    MlirOperation op = ops.v[i];
    if (mlirOperationEqual(op, root)) continue;
    MlirStringRef n = vxl__op_name(op);
    int ok = (n.length > 4 && memcmp(n.data, "gpu.", 4) == 0) ? vxl__gpu_op_supported(n)
                                                              : vxl__dialect_supported(n);
    if (ok && vxl__needs_full_pipeline(n)) rw->needs_full = 1;
    if (!ok) {
      vxl__diag_at(rw->d, mlirOperationGetLocation(op), "unsupported: %.*s", (int)n.length, n.data);
      bad = 1;
    }
  }
  free(ops.v);
  return bad ? -EINVAL : 0;
}

static int vxl__has_op(MlirOperation root, const char *name) {
  vxl__ops ops = {0};
  mlirOperationWalk(root, vxl__collect_cb, &ops, MlirWalkPreOrder);
  int found = 0;
  for (size_t i = 0; i < ops.n && !found; i++)
    found = vxl__streq(vxl__op_name(ops.v[i]), name);
  free(ops.v);
  return found;
}

/* True for a function declaration (a function op whose body is empty). */
static int vxl__is_declaration(MlirOperation op) {
  return mlirOperationGetNumRegions(op) > 0 &&
         mlirBlockIsNull(mlirRegionGetFirstBlock(mlirOperationGetRegion(op, 0)));
}

/* A symbol defined by op at the top of a gpu.module that could clash with
 * another gpu.module's: definitions, not declarations of external functions
 * (body-less llvm.func / func.func), which name the same outside symbol. */
static MlirStringRef vxl__own_symbol(MlirOperation op) {
  MlirAttribute s = mlirOperationGetAttributeByName(op, mlirSymbolTableGetSymbolAttributeName());
  if (mlirAttributeIsNull(s) || !mlirAttributeIsAString(s) || vxl__is_declaration(op))
    return (MlirStringRef){"", 0};
  return mlirStringAttrGetValue(s);
}

/* Symbols (kernels, helpers, globals) defined in more than one gpu.module
 * are renamed "<gpu.module>::<symbol>" in each, with their uses, so all
 * gpu.modules fit in one module.  A kernel renamed so is reported under that
 * name, the way gpu.launch_func spells it (@mod::@kernel).  Returns 0 or
 * -ENOMEM. */
static int vxl__qualify_clashes(MlirContext ctx, MlirOperation top) {
  vxl__ops defs = {0}, mods = {0}, clash = {0};
  for (MlirOperation m = mlirBlockGetFirstOperation(mlirModuleGetBody(mlirModuleFromOperation(top)));
       !mlirOperationIsNull(m); m = mlirOperationGetNextInBlock(m)) {
    if (!vxl__streq(vxl__op_name(m), "gpu.module")) continue;
    for (MlirOperation o = mlirBlockGetFirstOperation(mlirRegionGetFirstBlock(mlirOperationGetRegion(m, 0)));
         !mlirOperationIsNull(o); o = mlirOperationGetNextInBlock(o))
      if (vxl__own_symbol(o).length) {
        vxl__ops_push(&defs, o);
        vxl__ops_push(&mods, m);
      }
  }
  for (size_t i = 0; i < defs.n; i++)
    for (size_t j = 0; j < defs.n; j++)
      if (!mlirOperationEqual(mods.v[i], mods.v[j]) &&
          mlirStringRefEqual(vxl__own_symbol(defs.v[i]), vxl__own_symbol(defs.v[j]))) {
        vxl__ops_push(&clash, defs.v[i]);
        vxl__ops_push(&clash, mods.v[i]);
        break;
      }
  int rc = defs.oom || mods.oom || clash.oom ? -ENOMEM : 0;
  for (size_t i = 0; rc == 0 && i < clash.n; i += 2) {
    MlirStringRef sym = vxl__own_symbol(clash.v[i]);
    MlirStringRef mod = mlirStringAttrGetValue(
        mlirOperationGetAttributeByName(clash.v[i + 1], mlirSymbolTableGetSymbolAttributeName()));
    char *name = NULL;
    if (asprintf(&name, "%.*s::%.*s", (int)mod.length, mod.data, (int)sym.length, sym.data) < 0) {
      rc = -ENOMEM;
      break;
    }
    char *old = strndup(sym.data, sym.length); /* sym dies with the attribute replaced below */
    if (!old) {
      free(name);
      rc = -ENOMEM;
      break;
    }
    mlirSymbolTableReplaceAllSymbolUses(vxl__str(old), vxl__str(name), clash.v[i + 1]);
    mlirOperationSetAttributeByName(clash.v[i], mlirSymbolTableGetSymbolAttributeName(),
                                    mlirStringAttrGet(ctx, vxl__str(name)));
    free(old);
    free(name);
  }
  free(defs.v);
  free(mods.v);
  free(clash.v);
  return rc;
}

int vxl__lower_to_llvm_dialect(vxl_compiler *c, const char *source, size_t len, const char *source_name,
                               const vxl_options *opts, vxl__diags *d, MlirModule *out_module,
                               vxl__kernel_info **kinfo_out, uint32_t *nkernels_out) {
  MlirContext ctx = c->ctx;
  char *text = malloc(len + 1);
  if (!text) return -ENOMEM;
  memcpy(text, source, len);
  text[len] = '\0';
  vxl__fix_dlti(text, len);

  if (vxl__check_literals(text, len, source_name, d) != 0) {
    free(text);
    return -EINVAL;
  }

  /* mlir-opt test files hold several modules separated by "// -----" */
  for (size_t i = 0, line = 1; i < len; line++) {
    size_t e = i;
    while (e < len && text[e] != '\n')
      e++;
    if (e - i >= 8 && memcmp(text + i, "// -----", 8) == 0) {
      vxl__diag_add(d,
                    "%s:%zu:1: error: unsupported: split-input-file marker '// -----' (an mlir-opt test "
                    "convention); compile each section as its own file",
                    source_name, line);
      free(text);
      return -EINVAL;
    }
    i = e + 1;
  }

  /* Parsed under the source's name, so locations (and the objects' line
   * tables) name the file.  Several top-level ops are wrapped in an
   * implicit module, as mlir-opt does; only the module parser does that,
   * and it names no file (d->source_name does, in diagnostics). */
  uint32_t ndiags = d->n;
  MlirModule parsed = {NULL};
  MlirOperation one = mlirOperationCreateParse(ctx, (MlirStringRef){text, len}, vxl__str(source_name));
  if (!mlirOperationIsNull(one) && vxl__streq(vxl__op_name(one), "builtin.module")) {
    parsed = mlirModuleFromOperation(one);
  } else {
    if (!mlirOperationIsNull(one)) mlirOperationDestroy(one);
    while (d->n > ndiags)
      free(d->v[--d->n]); /* the second parse says it again */
    parsed = mlirModuleCreateParse(ctx, (MlirStringRef){text, len});
  }
  free(text);
  MlirOperation top = mlirModuleIsNull(parsed) ? (MlirOperation){NULL} : mlirModuleGetOperation(parsed);
  if (mlirOperationIsNull(top)) {
    if (d->n == 0) vxl__diag_add(d, "%s: error: could not parse the module", source_name);
    return -EINVAL;
  }
  if (!vxl__streq(vxl__op_name(top), "builtin.module")) {
    vxl__diag_at(d, mlirOperationGetLocation(top), "expected a builtin.module at top level");
    mlirOperationDestroy(top);
    return -EINVAL;
  }

  int rc = 0;
  /* gpu.launch bodies become gpu.func kernels (upstream outlining). */
  if (vxl__has_op(top, "gpu.launch")) {
    if (mlirLogicalResultIsFailure(mlirPassManagerRunOnOp(c->pm_outline, top))) rc = -EINVAL;
    if (rc) {
      vxl__diag_add(d, "%s: error: gpu-kernel-outlining failed", source_name);
      mlirOperationDestroy(top);
      return rc;
    }
  }

  rc = vxl__qualify_clashes(ctx, top);
  if (rc) {
    mlirOperationDestroy(top);
    return rc;
  }

  MlirModule mod = mlirModuleCreateEmpty(mlirOperationGetLocation(top));
  MlirBlock mbody = mlirModuleGetBody(mod);
  vxl__rw rw = {.c = c, .mod = mod, .d = d};
  rw.sg = (vxl__subgroups){.ctx = ctx,
                           .mod = mod,
                           .d = d,
                           .warp_size = opts->warp_size ? opts->warp_size : VXL_DEFAULT_WARP_SIZE,
                           .shuffle_insns = opts->shuffle_insns};

  /* Move every gpu.module's ops into mod. */
  vxl__ops funcs = {0};
  uint32_t nkernels = 0;
  for (MlirOperation op = mlirBlockGetFirstOperation(mlirModuleGetBody(mlirModuleFromOperation(top)));
       !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op)) {
    if (!vxl__streq(vxl__op_name(op), "gpu.module")) continue;
    MlirBlock gb = mlirRegionGetFirstBlock(mlirOperationGetRegion(op, 0));
    MlirOperation inner = mlirBlockGetFirstOperation(gb);
    while (!mlirOperationIsNull(inner)) {
      MlirOperation next = mlirOperationGetNextInBlock(inner);
      MlirStringRef n = vxl__op_name(inner);
      if (!vxl__streq(n, "gpu.module_end")) {
        /* gpu.modules declaring one external function the same way share
         * one declaration; anything else with one name in two gpu.modules
         * was qualified by vxl__qualify_clashes, so a clash left here is a
         * declaration with another type (or a name like "mod::sym" written
         * out by hand) */
        MlirAttribute s = mlirOperationGetAttributeByName(inner, vxl__str("sym_name"));
        MlirOperation prev = {NULL};
        if (!mlirAttributeIsNull(s) && mlirAttributeIsAString(s))
          for (MlirOperation o = mlirBlockGetFirstOperation(mbody); !mlirOperationIsNull(o) && !prev.ptr;
               o = mlirOperationGetNextInBlock(o)) {
            MlirAttribute s2 = mlirOperationGetAttributeByName(o, vxl__str("sym_name"));
            if (!mlirAttributeIsNull(s2) && mlirAttributeIsAString(s2) &&
                mlirStringRefEqual(mlirStringAttrGetValue(s2), mlirStringAttrGetValue(s)))
              prev = o;
          }
        if (prev.ptr) {
          MlirStringRef sn = mlirStringAttrGetValue(s);
          MlirAttribute t1 = mlirOperationGetAttributeByName(inner, vxl__str("function_type"));
          MlirAttribute t2 = mlirOperationGetAttributeByName(prev, vxl__str("function_type"));
          if (vxl__is_declaration(inner) && vxl__is_declaration(prev) &&
              mlirIdentifierEqual(mlirOperationGetName(inner), mlirOperationGetName(prev)) &&
              !mlirAttributeIsNull(t1) && !mlirAttributeIsNull(t2) && mlirAttributeEqual(t1, t2)) {
            mlirOperationDestroy(inner);
            inner = next;
            continue;
          }
          vxl__diag_at(d, mlirOperationGetLocation(inner),
                       "unsupported: symbol @%.*s means two different things in two gpu.modules",
                       (int)sn.length, sn.data);
          rc = -EINVAL;
        }
        mlirOperationRemoveFromParent(inner);
        mlirBlockAppendOwnedOperation(mbody, inner);
        if (vxl__streq(n, "gpu.func")) {
          vxl__ops_push(&funcs, inner);
          if (!mlirAttributeIsNull(mlirOperationGetAttributeByName(inner, vxl__str("gpu.kernel"))))
            nkernels++;
        }
      }
      inner = next;
    }
  }
  if (rc == 0 && nkernels == 0) {
    /* point at the first GPU op that is not in a kernel, if there is one */
    vxl__ops all = {0};
    mlirOperationWalk(top, vxl__collect_cb, &all, MlirWalkPreOrder);
    MlirOperation stray = {NULL};
    for (size_t i = 0; i < all.n && mlirOperationIsNull(stray); i++) {
      MlirStringRef n = vxl__op_name(all.v[i]);
      if (n.length > 4 && memcmp(n.data, "gpu.", 4) == 0 && !vxl__streq(n, "gpu.module") &&
          !vxl__streq(n, "gpu.launch_func"))
        stray = all.v[i];
    }
    free(all.v);
    if (!mlirOperationIsNull(stray)) {
      MlirStringRef n = vxl__op_name(stray);
      vxl__diag_at(d, mlirOperationGetLocation(stray),
                   "unsupported: %.*s outside a gpu.func kernel: no kernels in this module (vortexd "
                   "compiles the kernels of gpu.modules)",
                   (int)n.length, n.data);
    } else {
      vxl__diag_add(d, "%s:1:1: error: no kernels: the module has no gpu.func with the kernel attribute",
                    source_name);
    }
    rc = -EINVAL;
  }
  mlirOperationDestroy(top);
  if (funcs.oom) rc = -ENOMEM;
  if (rc == 0) rc = vxl__check_supported(&rw, mlirModuleGetOperation(mod));

  /* The Vortex device ABI helpers. */
  if (rc == 0) {
    MlirModule prelude = c->prelude_hw;
    for (MlirOperation op = mlirBlockGetFirstOperation(mlirModuleGetBody(prelude)); !mlirOperationIsNull(op);
         op = mlirOperationGetNextInBlock(op))
      mlirBlockAppendOwnedOperation(mbody, mlirOperationClone(op));
  }

  if (rc == 0) rc = vxl__place_workgroup_globals(&rw);

  vxl__kernel_info *kinfo = NULL;
  if (rc == 0) {
    kinfo = calloc(nkernels, sizeof *kinfo);
    if (!kinfo) rc = -ENOMEM;
  }
  uint32_t ki = 0;
  for (size_t i = 0; rc == 0 && i < funcs.n; i++) {
    int is_kernel = !mlirAttributeIsNull(mlirOperationGetAttributeByName(funcs.v[i], vxl__str("gpu.kernel")));
    rc = vxl__convert_func(&rw, funcs.v[i], is_kernel ? &kinfo[ki] : NULL);
    if (is_kernel) ki++;
  }
  free(funcs.v);
  if (rc == 0 && rw.sg.uses_scratch) /* main gives each group this much more local memory */
    rc = vxl__add_constant_i32(ctx, mbody, VXL_SCRATCH_SYMBOL, VXL_SCRATCH_BYTES_PER_THREAD);
  if (rc == 0) mlirOperationWalk(mlirModuleGetOperation(mod), vxl__strip_cb, NULL, MlirWalkPreOrder);

  /* Divergence: loops as scf.while, then split/join and pred placement in
   * every function but the prelude's (vxl_divergence.c). */
  if (rc == 0 &&
      mlirLogicalResultIsFailure(mlirPassManagerRunOnOp(c->pm_prep, mlirModuleGetOperation(mod)))) {
    vxl__diag_add(d, "%s: error: internal: scf-for-to-while failed", source_name);
    rc = -EINVAL;
  }
  for (MlirOperation op = mlirBlockGetFirstOperation(mbody); rc == 0 && !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op)) {
    if (!vxl__streq(vxl__op_name(op), "func.func")) continue;
    MlirStringRef fname = mlirStringAttrGetValue(mlirOperationGetAttributeByName(op, vxl__str("sym_name")));
    if (fname.length >= 6 && memcmp(fname.data, "__vxl_", 6) == 0) continue;
    if (mlirRegionIsNull(mlirOperationGetRegion(op, 0)) ||
        mlirBlockIsNull(mlirRegionGetFirstBlock(mlirOperationGetRegion(op, 0))))
      continue; /* a declaration */
    int is_kernel = 0;
    for (uint32_t i = 0; i < nkernels && kinfo; i++)
      is_kernel |=
          strlen(kinfo[i].name) == fname.length && memcmp(kinfo[i].name, fname.data, fname.length) == 0;
    unsigned splits = 0, preds = 0;
    rc = vxl__insert_divergence(ctx, op, is_kernel, d, &splits, &preds);
  }
  if (rw.lctx) {
    mlirTypeToLLVMIRTranslatorDestroy(rw.tr);
    LLVMDisposeTargetData(rw.td);
    LLVMContextDispose(rw.lctx);
  }

  if (rc == 0) vxl__prune_prelude(mod);
  if (rc == 0 && !mlirOperationVerify(mlirModuleGetOperation(mod))) {
    vxl__diag_add(d, "%s: error: internal: the rewritten module does not verify", source_name);
    rc = -EINVAL;
  }
  MlirPassManager pm = rw.needs_full ? c->pm_full : c->pm;
  if (rc == 0 && mlirLogicalResultIsFailure(mlirPassManagerRunOnOp(pm, mlirModuleGetOperation(mod)))) {
    vxl__diag_add(d, "%s: error: the upstream lowering pipeline failed", source_name);
    rc = -EINVAL;
  }
  if (rc == 0 && !mlirOperationVerify(mlirModuleGetOperation(mod))) {
    vxl__diag_add(d, "%s: error: internal: the lowered module does not verify", source_name);
    rc = -EINVAL;
  }
  /* Everything must be LLVM dialect now. */
  if (rc == 0) {
    vxl__ops ops = {0};
    mlirOperationWalk(mlirModuleGetOperation(mod), vxl__collect_cb, &ops, MlirWalkPreOrder);
    for (size_t i = 1; i < ops.n; i++) {
      MlirStringRef n = vxl__op_name(ops.v[i]);
      if (!(n.length > 5 && memcmp(n.data, "llvm.", 5) == 0)) {
        vxl__diag_at(d, mlirOperationGetLocation(ops.v[i]), "unsupported: %.*s (not lowered to LLVM)",
                     (int)n.length, n.data);
        rc = -EINVAL;
      }
    }
    free(ops.v);
  }
  if (rc) {
    for (uint32_t i = 0; kinfo && i < nkernels; i++)
      vxl__kernel_info_clear(&kinfo[i]);
    free(kinfo);
    mlirModuleDestroy(mod);
    return rc;
  }
  *out_module = mod;
  *kinfo_out = kinfo;
  *nkernels_out = nkernels;
  return 0;
}
