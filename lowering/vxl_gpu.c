/*
 * vxl_gpu.c - GPU-dialect ops to Vortex (MLIR side): what the lowering
 * accepts, gpu.func -> func.func with device-address arguments, and each
 * gpu op -> a call of a Vortex device-ABI helper (vxl_prelude.h):
 * thread/block ids and dimensions, barriers, printf; subgroup and workgroup
 * collectives go to vxl_subgroup.c.
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

/* Dialects whose ops the upstream pipeline lowers completely. */
static int vxl__dialect_supported(MlirStringRef name) {
  static const char *const prefixes[] = {"arith.", "math.",  "scf.",    "cf.", "memref.", "func.",
                                         "llvm.",  "index.", "affine.", "ub.", "vector.", NULL};
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
                                    "gpu.rotate",
                                    "gpu.subgroup_broadcast",
                                    "gpu.subgroup_reduce",
                                    "gpu.all_reduce",
                                    "gpu.yield",
                                    NULL};
  for (int i = 0; ops[i]; i++)
    if (vxl__streq(name, ops[i])) return 1;
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

int vxl__check_supported(vxl__rw *rw, MlirOperation root) {
  vxl__ops ops = {0};
  vxl__collect_ops(root, &ops);
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
    if (ok && n.length > 7 && memcmp(n.data, "vector.", 7) == 0) rw->needs_vector = rw->needs_full = 1;
    /* a scalable vector (vector<[4]xf32>) has no size LLVM can scalarize
     * to: Vortex has no vector unit */
    int scalable = 0;
    for (intptr_t r = 0; ok && r < mlirOperationGetNumResults(op); r++) {
      MlirType t = mlirValueGetType(mlirOperationGetResult(op, r));
      if (mlirTypeIsAVector(t) && mlirVectorTypeIsScalable(t)) {
        char *ts = vxl__type_str(t);
        vxl__diag_at(rw->d, mlirOperationGetLocation(op),
                     "unsupported: %.*s of scalable vector type %s (Vortex has no vector unit; a fixed-size "
                     "vector is scalarized)",
                     (int)n.length, n.data, ts ? ts : "?");
        free(ts);
        ok = 0;
        scalable = bad = 1;
      }
    }
    if (!ok && !scalable) {
      vxl__diag_at(rw->d, mlirOperationGetLocation(op), "unsupported: %.*s", (int)n.length, n.data);
      bad = 1;
    }
  }
  free(ops.v);
  return bad ? -EINVAL : 0;
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

/* Records which grid/block dimensions a kernel reads. */
static void vxl__note_dims(vxl__kernel_info *k, MlirStringRef name, int dim) {
  if (dim < 0 || !k) return;
  if (vxl__streq(name, "gpu.block_id") || vxl__streq(name, "gpu.grid_dim") ||
      vxl__streq(name, "gpu.global_id"))
    if ((uint32_t)dim + 1 > k->grid_dims) k->grid_dims = (uint32_t)dim + 1;
}

/* "file:line:col" of the source position loc stands for, as the object's
 * line tables name it (a file's name, never the requester's directories):
 * a call site's callee, a name's or a fusion's first position; "?" when
 * none has one.  Written into buf (cap bytes). */
static void vxl__loc_position(MlirLocation loc, char *buf, size_t cap) {
  for (int depth = 0; depth < 16; depth++) {
    if (mlirLocationIsAFileLineColRange(loc)) {
      MlirStringRef f = mlirIdentifierStr(mlirLocationFileLineColRangeGetFilename(loc));
      snprintf(buf, cap, "%.*s:%d:%d", (int)f.length, f.data, mlirLocationFileLineColRangeGetStartLine(loc),
               mlirLocationFileLineColRangeGetStartColumn(loc));
      return;
    }
    if (mlirLocationIsACallSite(loc))
      loc = mlirLocationCallSiteGetCallee(loc);
    else if (mlirLocationIsAName(loc))
      loc = mlirLocationNameGetChildLoc(loc);
    else if (mlirLocationIsAFused(loc) && mlirLocationFusedGetNumLocations(loc) > 0) {
      intptr_t n = mlirLocationFusedGetNumLocations(loc);
      MlirLocation *all = malloc((size_t)n * sizeof *all);
      if (!all) break;
      mlirLocationFusedGetLocations(loc, all);
      loc = all[0];
      free(all);
    } else
      break;
  }
  snprintf(buf, cap, "?");
}

/* cf.assert %ok, "msg" -> scf.if %ok {} else { gpu.printf "POS: assertion
 * failed: msg\n"; llvm.intr.trap }: what CUDA's device assert does, on
 * what Vortex has (vx_printf, and the trap an illegal instruction), where
 * the upstream lowering would call the host's puts and abort, which a
 * device image cannot link.  Structured, so it stays valid inside any
 * region; the divergence placement treats it as any other scf.if. */
static int vxl__lower_assert(vxl__rw *rw, MlirOperation op) {
  MlirContext ctx = rw->c->ctx;
  MlirLocation loc = mlirOperationGetLocation(op);
  MlirAttribute ma = mlirOperationGetAttributeByName(op, vxl__str("msg"));
  MlirStringRef msg =
      mlirAttributeIsNull(ma) || !mlirAttributeIsAString(ma) ? vxl__str("") : mlirStringAttrGetValue(ma);
  char pos[512];
  vxl__loc_position(loc, pos, sizeof pos);
  size_t cap = strlen(pos) + 2 * msg.length + 32;
  char *fmt = malloc(cap);
  if (!fmt) return -ENOMEM;
  size_t n = (size_t)snprintf(fmt, cap, "%s: assertion failed: ", pos);
  for (size_t i = 0; i < msg.length; i++) { /* a '%' of the message is text */
    if (msg.data[i] == '%') fmt[n++] = '%';
    fmt[n++] = msg.data[i];
  }
  fmt[n++] = '\n';
  MlirAttribute fattr = mlirStringAttrGet(ctx, (MlirStringRef){fmt, n});
  free(fmt);

  MlirBlock then_b = mlirBlockCreate(0, NULL, NULL), else_b = mlirBlockCreate(0, NULL, NULL);
  MlirOperationState ps = mlirOperationStateGet(vxl__str("gpu.printf"), loc);
  MlirNamedAttribute fa = vxl__named(ctx, "format", fattr);
  mlirOperationStateAddAttributes(&ps, 1, &fa);
  mlirBlockAppendOwnedOperation(else_b, mlirOperationCreate(&ps));
  MlirOperationState ts = mlirOperationStateGet(vxl__str("llvm.intr.trap"), loc);
  mlirBlockAppendOwnedOperation(else_b, mlirOperationCreate(&ts));
  MlirBlock blocks[2] = {then_b, else_b};
  MlirRegion regions[2];
  for (int i = 0; i < 2; i++) {
    MlirOperationState ys = mlirOperationStateGet(vxl__str("scf.yield"), loc);
    mlirBlockAppendOwnedOperation(blocks[i], mlirOperationCreate(&ys));
    regions[i] = mlirRegionCreate();
    mlirRegionAppendOwnedBlock(regions[i], blocks[i]);
  }
  MlirOperationState is = mlirOperationStateGet(vxl__str("scf.if"), loc);
  MlirValue cond = mlirOperationGetOperand(op, 0);
  mlirOperationStateAddOperands(&is, 1, &cond);
  mlirOperationStateAddOwnedRegions(&is, 2, regions);
  mlirBlockInsertOwnedOperationBefore(mlirOperationGetBlock(op), op, mlirOperationCreate(&is));
  mlirOperationDestroy(op);
  return 0;
}

/* gpu.shuffle's width must not exceed the warp: the op requires the first
 * `width` lanes of the subgroup to be active, which a wider width cannot
 * have (CUDA leaves such a __shfl undefined; on Vortex, the lanes past the
 * warp do not exist).  A constant width over it is refused here, at the
 * op; a dynamic one is checked where it runs: cf.assert %width <= W
 * before the op, lowered as every device assert is (the op's position and
 * the message printed, then a trap).  Returns 0, -ENOMEM, or -EINVAL with
 * a diagnostic. */
static int vxl__check_shuffle_width(vxl__rw *rw, MlirOperation op) {
  MlirContext ctx = rw->c->ctx;
  MlirLocation loc = mlirOperationGetLocation(op);
  uint32_t w = rw->sg.warp_size;
  if (mlirOperationGetNumOperands(op) < 3) return 0; /* the verifier's business */
  MlirValue width = mlirOperationGetOperand(op, 2);
  if (mlirValueIsAOpResult(width)) {
    MlirOperation def = mlirOpResultGetOwner(width);
    MlirAttribute v = mlirOperationGetAttributeByName(def, vxl__str("value"));
    if ((vxl__op_is(def, "arith.constant") || vxl__op_is(def, "llvm.mlir.constant")) &&
        !mlirAttributeIsNull(v) && mlirAttributeIsAInteger(v)) {
      int64_t n = mlirIntegerAttrGetValueInt(v);
      if (n < 0 || n > (int64_t)w) {
        vxl__diag_at(
            rw->d, loc,
            "gpu.shuffle width %lld is larger than the warp (%u threads): its lanes past the warp do "
            "not exist (a device with more threads per warp: `vxc compile --warp-size N`, a compile "
            "request's warp_size)",
            (long long)n, w);
        return -EINVAL;
      }
      return 0;
    }
  }
  MlirBlock blk = mlirOperationGetBlock(op);
  MlirOperationState ps = mlirOperationStateGet(vxl__str("arith.cmpi"), loc);
  MlirValue operands[2] = {width, vxl__const_i32(ctx, loc, blk, op, (int32_t)w)};
  MlirNamedAttribute pred =
      vxl__named(ctx, "predicate", mlirIntegerAttrGet(mlirIntegerTypeGet(ctx, 64), 7)); /* ule */
  MlirType i1 = mlirIntegerTypeGet(ctx, 1);
  mlirOperationStateAddOperands(&ps, 2, operands);
  mlirOperationStateAddAttributes(&ps, 1, &pred);
  mlirOperationStateAddResults(&ps, 1, &i1);
  MlirOperation cmp = mlirOperationCreate(&ps);
  mlirBlockInsertOwnedOperationBefore(blk, op, cmp);
  char msg[160];
  snprintf(msg, sizeof msg, "gpu.shuffle width larger than the warp (%u threads, the compile's warp size)",
           w);
  MlirOperationState as = mlirOperationStateGet(vxl__str("cf.assert"), loc);
  MlirValue ok = mlirOperationGetResult(cmp, 0);
  MlirNamedAttribute ma = vxl__named(ctx, "msg", mlirStringAttrGet(ctx, vxl__str(msg)));
  mlirOperationStateAddOperands(&as, 1, &ok);
  mlirOperationStateAddAttributes(&as, 1, &ma);
  MlirOperation check = mlirOperationCreate(&as);
  mlirBlockInsertOwnedOperationBefore(blk, op, check);
  return vxl__lower_assert(rw, check);
}

/* The integer width C's printf gives each argument of format fmt (as the
 * attribute prints it, escapes and all), in argument order, into bits[]
 * (at most n): 64 for the length modifiers ll and j, xlen for l, z and t,
 * else 32 (an int: also a `*` width or precision); 0 for a conversion
 * that takes no integer (f, s, p, ...); unsigned_[i] set for u, o, x, X. */
static void vxl__printf_widths(const char *fmt, uint32_t xlen, int *bits, int *unsigned_, int n) {
  int i = 0;
  for (const char *p = fmt; *p && i < n; p++) {
    if (*p != '%') continue;
    if (*++p == '%') continue;
    while (*p && strchr("-+ #0'", *p))
      p++;
    for (int part = 0; part < 2; part++) { /* width, then .precision */
      if (part == 1 && *p != '.') break;
      if (part == 1) p++;
      if (*p == '*') {
        if (i < n) bits[i] = 32, unsigned_[i++] = 0;
        p++;
      }
      while (*p >= '0' && *p <= '9')
        p++;
    }
    int w = 32;
    while (*p && strchr("hljztLq", *p)) {
      w = *p == 'j' || *p == 'q' || (*p == 'l' && p[1] == 'l') ? 64 : *p == 'h' || *p == 'L' ? w : (int)xlen;
      p += *p == 'l' && p[1] == 'l' ? 2 : 1;
    }
    if (!*p) break;
    if (i < n) {
      bits[i] = strchr("diuoxXc", *p) ? w : 0;
      unsigned_[i++] = strchr("uoxX", *p) != NULL;
    }
  }
  for (; i < n; i++)
    bits[i] = 32, unsigned_[i] = 0;
}

/* The promotions of gpu.printf op's n arguments (types: their printed
 * types) as helper body lines appended to b: f16/f32 to f64, an index as
 * wide as its conversion in fmt reads it (vxl__printf_widths), a narrow
 * integer to i32; and the call's operands (%p<i> promoted, %a<i> as is)
 * and types appended to args and sig (acap, scap bytes). */
static void vxl__printf_promote(vxl__buf *b, MlirOperation op, intptr_t n, const char *const *types,
                                const char *fmt, uint32_t xlen, char *args, size_t acap, char *sig,
                                size_t scap) {
  int bits[16], unsigned_[16];
  char line[256];
  vxl__printf_widths(fmt, xlen, bits, unsigned_, (int)n);
  for (intptr_t i = 0; i < n; i++) {
    MlirType t = mlirValueGetType(mlirOperationGetOperand(op, i));
    const char *pt = types[i];
    line[0] = '\0';
    if (mlirTypeIsAF32(t) || mlirTypeIsAF16(t)) {
      pt = "f64";
      snprintf(line, sizeof line, "  %%p%ld = arith.extf %%a%ld : %s to f64\n", (long)i, (long)i, types[i]);
    } else if (mlirTypeIsAIndex(t)) { /* as wide as its conversion says (%lld: 64 bits) */
      pt = bits[i] == 64 ? "i64" : "i32";
      snprintf(line, sizeof line, "  %%p%ld = arith.index_cast%s %%a%ld : index to %s\n", (long)i,
               unsigned_[i] ? "ui" : "", (long)i, pt);
    } else if (mlirTypeIsAInteger(t) && mlirIntegerTypeGetWidth(t) < 32) {
      pt = "i32";
      snprintf(line, sizeof line, "  %%p%ld = arith.extsi %%a%ld : %s to i32\n", (long)i, (long)i, types[i]);
    }
    vxl__buf_append(vxl__str(line), b);
    size_t al = strlen(args), sl = strlen(sig);
    snprintf(args + al, acap - al, ", %%%c%ld", line[0] ? 'p' : 'a', (long)i);
    snprintf(sig + sl, scap - sl, ", %s", pt);
  }
}

/* gpu.printf "fmt" %a... -> vx_printf(fmt, a...) (Vortex's device printf,
 * vx_print.h).  Each call site gets a helper, parsed from text, that holds
 * the format as a global and applies C's default argument promotions
 * (f32 -> f64, small integers -> i32); an index (32 bits here, 64 where
 * such formats are mostly written) is passed as wide as its conversion
 * reads it (%lld: 64 bits; vxl__printf_widths), as a printf that honours
 * length modifiers, upstream Vortex's, takes it. */
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
  vxl__printf_promote(&b, op, n, (const char *const *)types, fmt, rw->xlen, args, sizeof args, sig,
                      sizeof sig);
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

/* What vxl__convert_func refuses before it changes anything: a gpu.func
 * without a name, type or body, a name that is not NUL-free UTF-8 (names
 * travel as msgpack str and JSON strings and become C symbols), workgroup
 * attributions outside a kernel.  Fills *fname, *fty; returns 0 or
 * -EINVAL with a diagnostic at the function. */
static int vxl__check_func(vxl__rw *rw, MlirOperation gf, int is_kernel, MlirStringRef *fname_out,
                           MlirType *fty_out) {
  MlirLocation loc = mlirOperationGetLocation(gf);
  MlirAttribute sym = mlirOperationGetAttributeByName(gf, vxl__str("sym_name"));
  MlirAttribute fta = mlirOperationGetAttributeByName(gf, vxl__str("function_type"));
  if (mlirAttributeIsNull(sym) || mlirAttributeIsNull(fta)) {
    vxl__diag_at(rw->d, loc, "internal: gpu.func without sym_name or function_type");
    return -EINVAL;
  }
  MlirStringRef fname = mlirStringAttrGetValue(sym);
  if (memchr(fname.data, '\0', fname.length)) {
    vxl__diag_at(rw->d, loc, "unsupported: gpu.func symbol name contains a NUL byte");
    return -EINVAL;
  }
  if (!vxl__utf8_valid(fname.data, fname.length)) {
    vxl__diag_at(rw->d, loc, "unsupported: gpu.func symbol name is not valid UTF-8");
    return -EINVAL;
  }
  if (mlirBlockIsNull(mlirRegionGetFirstBlock(mlirOperationGetRegion(gf, 0)))) {
    vxl__diag_at(rw->d, loc, "unsupported: gpu.func @%.*s without a body", (int)fname.length, fname.data);
    return -EINVAL;
  }
  int64_t nworkgroup = 0;
  MlirAttribute wa = mlirOperationGetAttributeByName(gf, vxl__str("workgroup_attributions"));
  if (!mlirAttributeIsNull(wa) && mlirAttributeIsAInteger(wa)) nworkgroup = mlirIntegerAttrGetValueInt(wa);
  if (!is_kernel && nworkgroup > 0) {
    vxl__diag_at(rw->d, loc, "unsupported: workgroup attributions on non-kernel gpu.func @%.*s",
                 (int)fname.length, fname.data);
    return -EINVAL;
  }
  *fname_out = fname;
  *fty_out = mlirTypeAttrGetValue(fta);
  return 0;
}

/* Rewrites the body of converted function ff: its cf.assert ops and the
 * width checks of its gpu.shuffle ops, then its gpu.* ops, those asserts' printfs included (collected first:
 * a walk must not see the ops it mutates).  k: the kernel's record, or NULL.  Returns 0, -ENOMEM or -EINVAL
 * with a diagnostic. */
static int vxl__rewrite_body(vxl__rw *rw, MlirOperation ff, vxl__kernel_info *k) {
  int rc = 0;
  vxl__ops ops = {0};
  vxl__collect_ops(ff, &ops);
  for (size_t i = 0; i < ops.n && rc == 0 && !ops.oom; i++)
    if (vxl__op_is(ops.v[i], "cf.assert"))
      rc = vxl__lower_assert(rw, ops.v[i]);
    else if (vxl__op_is(ops.v[i], "gpu.shuffle"))
      rc = vxl__check_shuffle_width(rw, ops.v[i]);
  free(ops.v);
  ops = (vxl__ops){0};
  if (rc == 0) vxl__collect_ops(ff, &ops);
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

int vxl__convert_device_func(vxl__rw *rw, MlirOperation ff) { return vxl__rewrite_body(rw, ff, NULL); }

/* The kernel record of gpu.func gf (named fname, nin arguments) before its
 * arguments are looked at: name, location, room for the argument types,
 * grid dimensions 1, the known block size if it has one.  0 or -ENOMEM. */
static int vxl__kernel_info_start(vxl__kernel_info *k, MlirOperation gf, MlirStringRef fname, intptr_t nin) {
  k->name = strndup(fname.data, fname.length);
  k->loc = mlirOperationGetLocation(gf);
  k->nargs = (uint32_t)nin;
  k->arg_types = calloc(nin ? (size_t)nin : 1, sizeof *k->arg_types);
  k->arg_rank = calloc(nin ? (size_t)nin : 1, sizeof *k->arg_rank);
  k->arg_elem = calloc(nin ? (size_t)nin : 1, sizeof *k->arg_elem);
  k->grid_dims = 1;
  if (!k->name || !k->arg_types || !k->arg_rank || !k->arg_elem) return -ENOMEM;
  MlirAttribute kb = mlirOperationGetAttributeByName(gf, vxl__str("gpu.known_block_size"));
  if (mlirAttributeIsNull(kb)) /* outlined gpu.launch bodies carry it as an inherent attribute */
    kb = mlirOperationGetAttributeByName(gf, vxl__str("known_block_size"));
  if (!mlirAttributeIsNull(kb) && mlirAttributeIsADenseI32Array(kb) && mlirDenseArrayGetNumElements(kb) == 3)
    for (int i = 0; i < 3; i++)
      k->known_block[i] = (uint32_t)mlirDenseI32ArrayGetElement(kb, i);
  return 0;
}

/* The parameter types of gf's func.func into ins (nin of them, from its
 * type fty): a kernel's (k not NULL) memrefs as ptr, recording each
 * argument's type text, rank and element size in k; an argument type a
 * launch cannot pass is refused at its position.  0, -EINVAL with a
 * diagnostic, or -ENOMEM. */
static int vxl__kernel_arg_types(vxl__rw *rw, MlirType fty, intptr_t nin, MlirStringRef fname,
                                 MlirBlock entry, MlirLocation loc, MlirType ptr, vxl__kernel_info *k,
                                 MlirType *ins) {
  for (intptr_t i = 0; i < nin; i++) {
    MlirType t = mlirFunctionTypeGetInput(fty, i);
    ins[i] = t;
    if (k) {
      k->arg_types[i] = vxl__type_str(t);
      if (!k->arg_types[i]) {
        return -ENOMEM;
      }
      if (mlirTypeIsAMemRef(t)) {
        ins[i] = ptr;
        vxl__memref_host_info(t, &k->arg_rank[i], &k->arg_elem[i]);
      } else if (!(mlirTypeIsAInteger(t) || mlirTypeIsAIndex(t) || mlirTypeIsAF32(t) || mlirTypeIsAF64(t) ||
                   mlirTypeIsAF16(t) || mlirTypeIsALLVMPointerType(t))) {
        vxl__diag_at(rw->d, loc, "unsupported: kernel @%.*s argument %ld of type %s", (int)fname.length,
                     fname.data, (long)i, k->arg_types[i]);
        return -EINVAL;
      } else if (mlirTypeIsAInteger(t) && mlirIntegerTypeGetWidth(t) > 64) {
        /* a host passes a scalar by address; no host type holds more than
         * 64 bits of it that a launch could copy (i128 is not a C type a
         * kernel argument can have) */
        MlirValue arg = mlirBlockIsNull(entry) ? (MlirValue){NULL} : mlirBlockGetArgument(entry, i);
        vxl__diag_at(
            rw->d, mlirValueIsNull(arg) ? loc : mlirValueGetLocation(arg),
            "unsupported: kernel @%.*s argument %ld of type %s: a scalar argument has at most 64 bits",
            (int)fname.length, fname.data, (long)i, k->arg_types[i]);
        return -EINVAL;
      }
    }
  }
  return 0;
}

/* A kernel's memref arguments (of entry, its first nin arguments) retyped
 * to !llvm.ptr, each use going through the view rebuilt from it. */
static int vxl__rebuild_memref_args(vxl__rw *rw, MlirBlock entry, intptr_t nin, MlirLocation loc) {
  MlirContext ctx = rw->c->ctx;
  MlirType ptr = mlirLLVMPointerTypeGet(ctx, 0);
  int rc = 0;
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
  return rc;
}

/* Converts one gpu.func (already moved into the new module) to func.func.
 * For kernels fills *k. */
int vxl__convert_func(vxl__rw *rw, MlirOperation gf, vxl__kernel_info *k) {
  MlirContext ctx = rw->c->ctx;
  MlirLocation loc = mlirOperationGetLocation(gf);
  MlirStringRef fname;
  MlirType fty;
  int crc = vxl__check_func(rw, gf, k != NULL, &fname, &fty);
  if (crc) return crc;
  intptr_t nin = mlirFunctionTypeGetNumInputs(fty);
  MlirRegion body = mlirOperationGetRegion(gf, 0);
  MlirBlock entry = mlirRegionGetFirstBlock(body);
  int64_t nworkgroup = 0;
  MlirAttribute wa = mlirOperationGetAttributeByName(gf, vxl__str("workgroup_attributions"));
  if (!mlirAttributeIsNull(wa) && mlirAttributeIsAInteger(wa)) nworkgroup = mlirIntegerAttrGetValueInt(wa);

  /* New signature: kernel memrefs become !llvm.ptr. */
  MlirType *ins = calloc(nin ? (size_t)nin : 1, sizeof *ins);
  if (!ins) return -ENOMEM;
  MlirType ptr = mlirLLVMPointerTypeGet(ctx, 0);
  int rc = 0;
  if (k && nin > (intptr_t)VXL_MAX_KERNEL_ARGS) {
    vxl__diag_at(rw->d, loc, "unsupported: kernel @%.*s has %ld arguments (at most %u)", (int)fname.length,
                 fname.data, (long)nin, VXL_MAX_KERNEL_ARGS);
    free(ins);
    return -EINVAL;
  }
  if (k && vxl__kernel_info_start(k, gf, fname, nin) != 0) {
    free(ins);
    return -ENOMEM;
  }
  rc = vxl__kernel_arg_types(rw, fty, nin, fname, entry, loc, ptr, k, ins);
  if (rc) {
    free(ins);
    return rc;
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
  if (k && (rc = vxl__rebuild_memref_args(rw, entry, nin, loc)) != 0) return rc;

  return vxl__rewrite_body(rw, ff, k);
}
