/*
 * vxl_util.c - helpers every MLIR-side file of lowering/ shares: printing
 * types and attributes, diagnostics at file:line:col, walking and matching
 * ops, and creating calls and constants.  Uses the MLIR C API only; calls
 * nothing else in lowering/.
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

/* What a print into b left: its text (caller frees), or NULL on OOM. */
static char *vxl__buf_take(vxl__buf *b) {
  if (b->oom) {
    free(b->p);
    return NULL;
  }
  return b->p ? b->p : strdup("");
}

char *vxl__type_str(MlirType t) {
  vxl__buf b = {0};
  mlirTypePrint(t, vxl__buf_append, &b);
  return vxl__buf_take(&b);
}

char *vxl__attr_str(MlirAttribute a) {
  vxl__buf b = {0};
  mlirAttributePrint(a, vxl__buf_append, &b);
  return vxl__buf_take(&b);
}

int vxl__diag_push(vxl__diags *d, char *line) {
  if (d->n == d->cap) {
    uint32_t cap = d->cap ? d->cap * 2 : 8;
    char **v = realloc(d->v, cap * sizeof *v);
    if (!v) {
      free(line);
      return -ENOMEM;
    }
    d->v = v;
    d->cap = cap;
  }
  d->v[d->n++] = line;
  return 0;
}

void vxl__diag_add(vxl__diags *d, const char *fmt, ...) {
  char *line = NULL;
  va_list ap;
  va_start(ap, fmt);
  int r = vasprintf(&line, fmt, ap);
  va_end(ap);
  if (r >= 0) vxl__diag_push(d, line);
}

void vxl_debug_file_name(const char *source_name, char out[VXL_DEBUG_FILE_MAX + 1]) {
  const char *base = source_name ? strrchr(source_name, '/') : NULL;
  base = base ? base + 1 : source_name;
  if (!base || !*base) base = "<source>";
  size_t n = 0;
  for (; base[n] && n < VXL_DEBUG_FILE_MAX; n++)
    out[n] = (unsigned char)base[n] < 0x20 || base[n] == 0x7f ? '?' : base[n];
  out[n] = '\0';
}

void vxl__loc_format(const vxl__diags *d, MlirLocation loc, char *buf, size_t cap) {
  if (mlirLocationIsAFileLineColRange(loc)) {
    MlirStringRef f = mlirIdentifierStr(mlirLocationFileLineColRangeGetFilename(loc));
    if ((f.length == 0 || vxl__streq(f, "-") || (d && d->debug_name && vxl__streq(f, d->debug_name))) && d &&
        d->source_name)
      f = vxl__str(d->source_name);
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
  free(k->arg_rank);
  free(k->arg_elem);
  memset(k, 0, sizeof *k);
}

void vxl__ops_push(vxl__ops *o, MlirOperation op) {
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
MlirOperation vxl__call(MlirContext ctx, MlirLocation loc, MlirBlock blk, MlirOperation before,
                        const char *callee, intptr_t nargs, MlirValue *args, intptr_t nres, MlirType *res) {
  MlirOperation op = vxl__func_call(ctx, loc, callee, nargs, args, nres, res);
  if (mlirOperationIsNull(before))
    mlirBlockAppendOwnedOperation(blk, op);
  else
    mlirBlockInsertOwnedOperationBefore(blk, before, op);
  return op;
}

/* Creates "arith.constant V : i32" before `before`. */
MlirValue vxl__const_i32(MlirContext ctx, MlirLocation loc, MlirBlock blk, MlirOperation before, int32_t v) {
  MlirType i32 = mlirIntegerTypeGet(ctx, 32);
  MlirOperationState st = mlirOperationStateGet(vxl__str("arith.constant"), loc);
  MlirNamedAttribute a = vxl__named(ctx, "value", mlirIntegerAttrGet(i32, v));
  mlirOperationStateAddAttributes(&st, 1, &a);
  mlirOperationStateAddResults(&st, 1, &i32);
  MlirOperation op = mlirOperationCreate(&st);
  mlirBlockInsertOwnedOperationBefore(blk, before, op);
  return mlirOperationGetResult(op, 0);
}

/* Appends `llvm.mlir.global internal constant @name(value : i32) : i32` to
 * body: a number the MLIR side leaves for main (vxl_codegen.c).  Returns 0
 * or -ENOMEM. */
int vxl__add_constant_i32(MlirContext ctx, MlirBlock body, const char *name, uint32_t value) {
  MlirType i32 = mlirIntegerTypeGet(ctx, 32);
  MlirOperationState st = mlirOperationStateGet(vxl__str("llvm.mlir.global"), mlirLocationUnknownGet(ctx));
  MlirNamedAttribute attrs[] = {
      vxl__named(ctx, "sym_name", mlirStringAttrGet(ctx, vxl__str(name))),
      vxl__named(ctx, "global_type", mlirTypeAttrGet(i32)),
      vxl__named(ctx, "linkage", mlirLLVMLinkageAttrGet(ctx, MlirLLVMLinkageInternal)),
      vxl__named(ctx, "constant", mlirUnitAttrGet(ctx)),
      vxl__named(ctx, "value", mlirIntegerAttrGet(i32, (int64_t)value)),
  };
  mlirOperationStateAddAttributes(&st, sizeof attrs / sizeof *attrs, attrs);
  MlirRegion init = mlirRegionCreate(); /* empty: the value attribute is the initializer */
  mlirOperationStateAddOwnedRegions(&st, 1, &init);
  MlirOperation gl = mlirOperationCreate(&st);
  if (mlirOperationIsNull(gl)) return -ENOMEM;
  mlirBlockAppendOwnedOperation(body, gl);
  return 0;
}

int vxl__utf8_valid(const char *s, size_t n) {
  const unsigned char *p = (const unsigned char *)s, *end = p + n;
  while (p < end) {
    unsigned c = *p++;
    if (c < 0x80) continue;
    unsigned need, min;
    uint32_t cp;
    if ((c & 0xE0) == 0xC0)
      need = 1, min = 0x80, cp = c & 0x1F;
    else if ((c & 0xF0) == 0xE0)
      need = 2, min = 0x800, cp = c & 0x0F;
    else if ((c & 0xF8) == 0xF0)
      need = 3, min = 0x10000, cp = c & 0x07;
    else
      return 0;
    if ((size_t)(end - p) < need) return 0;
    for (unsigned i = 0; i < need; i++) {
      if ((p[i] & 0xC0) != 0x80) return 0;
      cp = (cp << 6) | (p[i] & 0x3F);
    }
    p += need;
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  }
  return 1;
}

void vxl__memref_host_info(MlirType t, uint32_t *rank, uint32_t *elem_size) {
  *rank = *elem_size = 0;
  if (!mlirTypeIsAMemRef(t)) return;
  MlirType el = mlirShapedTypeGetElementType(t);
  *rank = (uint32_t)mlirShapedTypeGetRank(t);
  *elem_size = mlirTypeIsAIndex(el)     ? 4
               : mlirTypeIsAInteger(el) ? (mlirIntegerTypeGetWidth(el) + 7) / 8
               : mlirTypeIsAFloat(el)   ? (mlirFloatTypeGetWidth(el) + 7) / 8
                                        : 0;
}

vxl_options vxl__resolved(const vxl_options *opts) {
  vxl_options o = *opts;
  if (o.opt_level > 3) o.opt_level = 3;
  if (o.warp_size == 0) o.warp_size = VXL_DEFAULT_WARP_SIZE;
  if (o.vortex_abi == 0) o.vortex_abi = VXL_DEFAULT_VORTEX_ABI;
  if (o.xlen == 0) o.xlen = VXL_DEFAULT_XLEN;
  return o;
}
