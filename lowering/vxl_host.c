/*
 * vxl_host.c - a whole program's host side for libvortexd_runtime
 * (vxl__lower_host, what vxl_lower_host runs): the kernel driver's front
 * end (vxl_mlir.c: source text, parse, outlining), Polygeist's host
 * wrappers resolved, launch strings registered, every gpu.module turned
 * into a gpu.binary holding its MLIR text and cache key, then upstream's
 * host pipeline (gpu-async-region, gpu-to-llvm and the LLVM-dialect
 * conversions; the async dialect to MLIR's async runtime), and whatever it
 * left unlowered refused at its place in the program.
 *
 * No static mutable state: everything lives in the vxl_compiler or on the
 * stack of one lowering.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mlir-c/BuiltinAttributes.h>
#include <mlir-c/BuiltinTypes.h>
#include <mlir-c/Dialect/LLVM.h>
#include <mlir-c/Pass.h>
#include <mlir-c/Support.h>

#include "vxl_internal.h"

/* Appends s (n bytes) to b as the body of an MLIR string literal: bytes
 * outside printable ASCII, '"' and '\\' as \\XX. */
static void vxl__append_escaped(vxl__buf *b, const char *s, size_t n) {
  static const char hex[] = "0123456789ABCDEF";
  for (size_t i = 0; i < n && !b->oom; i++) {
    unsigned char ch = (unsigned char)s[i];
    char esc[3] = {'\\', hex[ch >> 4], hex[ch & 15]};
    if (ch >= 32 && ch < 127 && ch != '"' && ch != '\\')
      vxl__buf_append((MlirStringRef){(const char *)&s[i], 1}, b);
    else
      vxl__buf_append((MlirStringRef){esc, 3}, b);
  }
}

/* Appends to b, for every kernel of gpu.module gm, the line the runtime
 * checks a launch's arguments against (VXL_HOST_ARGS_TAG): the kernel's
 * name, then per argument what the host passes for it as gpu-to-llvm
 * lowers a launch, each parameter by address: "m<rank>" a ranked memref
 * (its descriptor's 3 + 2 x rank 8-byte fields), "p" a pointer, "s<n>" a
 * scalar of n bytes (its store size on the host: index is i64), "?" any
 * other type (no launch of it is packed).  The name's bytes outside
 * [A-Za-z0-9_.$-] are written %XX. */
static void vxl__host_args_lines(MlirOperation gm, vxl__buf *b) {
  MlirBlock gb = mlirRegionGetFirstBlock(mlirOperationGetRegion(gm, 0));
  for (MlirOperation f = mlirBlockGetFirstOperation(gb); !mlirOperationIsNull(f);
       f = mlirOperationGetNextInBlock(f)) {
    if (!vxl__streq(vxl__op_name(f), "gpu.func") ||
        mlirAttributeIsNull(mlirOperationGetAttributeByName(f, vxl__str("gpu.kernel"))))
      continue;
    MlirStringRef name =
        mlirStringAttrGetValue(mlirOperationGetAttributeByName(f, mlirSymbolTableGetSymbolAttributeName()));
    MlirType fty = mlirTypeAttrGetValue(mlirOperationGetAttributeByName(f, vxl__str("function_type")));
    vxl__buf_append(vxl__str(VXL_HOST_ARGS_TAG), b);
    for (size_t i = 0; i < name.length; i++) { /* a name has no space: %XX for anything unusual */
      unsigned char ch = (unsigned char)name.data[i];
      char e[4];
      if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
          strchr("_.$-", ch))
        snprintf(e, sizeof e, "%c", ch);
      else
        snprintf(e, sizeof e, "%%%02X", ch);
      vxl__buf_append(vxl__str(e), b);
    }
    for (intptr_t i = 0; i < mlirFunctionTypeGetNumInputs(fty); i++) {
      MlirType t = mlirFunctionTypeGetInput(fty, i);
      char d[32];
      if (mlirTypeIsAMemRef(t))
        snprintf(d, sizeof d, " m%ld", (long)mlirShapedTypeGetRank(t));
      else if (mlirTypeIsALLVMPointerType(t))
        snprintf(d, sizeof d, " p");
      else if (mlirTypeIsAIndex(t))
        snprintf(d, sizeof d, " s8");
      else if (mlirTypeIsAInteger(t) && mlirIntegerTypeGetWidth(t) <= 64)
        snprintf(d, sizeof d, " s%u", (mlirIntegerTypeGetWidth(t) + 7) / 8);
      else if (mlirTypeIsAFloat(t) && mlirFloatTypeGetWidth(t) <= 64)
        snprintf(d, sizeof d, " s%u", (mlirFloatTypeGetWidth(t) + 7) / 8);
      else
        snprintf(d, sizeof d, " ?");
      vxl__buf_append(vxl__str(d), b);
    }
    vxl__append_escaped(b, "\n", 1);
  }
}

int vxl__module_target(MlirOperation gm, const vxl_options *opts, vxl_options *out) {
  *out = vxl__resolved(opts);
  MlirAttribute targets = mlirOperationGetAttributeByName(gm, vxl__str("targets"));
  if (mlirAttributeIsNull(targets) || !mlirAttributeIsAArray(targets)) return 0;
  vxl__target_fields pick = {0};
  int found = 0, agrees = 0;
  for (intptr_t i = 0; i < mlirArrayAttrGetNumElements(targets) && !agrees; i++) {
    vxl__target_fields t;
    if (!vxl__target_read(mlirArrayAttrGetElement(targets, i), &t)) continue;
    agrees = (!t.vortex_abi || t.vortex_abi == out->vortex_abi) && (!t.xlen || t.xlen == out->xlen);
    if (!found || agrees) pick = t;
    found = 1;
  }
  if (!found) return 0;
  if (pick.vortex_abi) out->vortex_abi = pick.vortex_abi;
  if (pick.xlen) out->xlen = pick.xlen;
  if (pick.warp_size) out->warp_size = pick.warp_size;
  if (pick.opt_level >= 0) out->opt_level = (uint32_t)pick.opt_level;
  return 1;
}

int vxl__check_module_targets(MlirOperation gm, const vxl_options *opts, vxl__diags *d) {
  vxl_options o = vxl__resolved(opts);
  MlirAttribute targets = mlirOperationGetAttributeByName(gm, vxl__str("targets"));
  if (mlirAttributeIsNull(targets) || !mlirAttributeIsAArray(targets)) return 0;
  int vortex = 0;
  for (intptr_t i = 0; i < mlirArrayAttrGetNumElements(targets); i++) {
    vxl__target_fields t;
    if (!vxl__target_read(mlirArrayAttrGetElement(targets, i), &t)) continue;
    vortex++;
    if ((!t.vortex_abi || t.vortex_abi == o.vortex_abi) && (!t.xlen || t.xlen == o.xlen) &&
        (!t.warp_size || t.warp_size == o.warp_size) &&
        (t.opt_level < 0 || (uint32_t)t.opt_level == o.opt_level))
      return 0;
  }
  if (!vortex) return 0; /* other projects' targets: not this compile's business */
  MlirStringRef name =
      mlirStringAttrGetValue(mlirOperationGetAttributeByName(gm, mlirSymbolTableGetSymbolAttributeName()));
  vxl__diag_at(
      d, mlirOperationGetLocation(gm),
      "gpu.module @%.*s lists no #vortex.target this compile is for (vortex%u-rv%u, warp_size %u, "
      "O%u): compile it with the options of one of its targets (`vxc compile --target T --warp-size N "
      "-O N`), or add that target to its list",
      (int)(name.length < 64 ? name.length : 64), name.data, o.vortex_abi, o.xlen, o.warp_size, o.opt_level);
  return -EINVAL;
}

/* Replaces gpu.module gm (in top's body) with a gpu.binary of the same
 * name whose one #gpu.object holds the module's text and its header lines
 * (properties: the options it is compiled with).  Returns 0, -EINVAL,
 * -ENOMEM. */
static int vxl__module_to_binary(vxl_compiler *c, MlirOperation gm, const vxl_options *opts,
                                 vxl_module_key_fn key_of, void *key_ud, vxl__diags *d) {
  vxl_options mo;
  vxl__module_target(gm, opts, &mo);
  vxl__buf text = {0}, bin = {0};
  vxl__buf_append(vxl__str("module attributes {gpu.container_module} {\n"), &text);
  /* with locations: diagnostics of the module's compile, at its first
   * launch, then point into the program's own file:line:col */
  MlirOpPrintingFlags flags = mlirOpPrintingFlagsCreate();
  mlirOpPrintingFlagsEnableDebugInfo(flags, true, false);
  mlirOperationPrintWithFlags(gm, flags, vxl__buf_append, &text);
  mlirOpPrintingFlagsDestroy(flags);
  vxl__buf_append(vxl__str("\n}\n"), &text);
  if (text.oom) {
    free(text.p);
    return -ENOMEM;
  }
  char key[65] = "";
  if (key_of && key_of(key_ud, &mo, text.p, text.n, key) != 0) key[0] = '\0';
  MlirStringRef name =
      mlirStringAttrGetValue(mlirOperationGetAttributeByName(gm, mlirSymbolTableGetSymbolAttributeName()));
  vxl__buf_append(vxl__str("module {\n  gpu.binary @\""), &bin);
  vxl__append_escaped(&bin, name.data, name.length);
  char label[256];
  /* the object's target is the #vortex.target it is compiled for, every
   * field given, as vortexd's dialect plugin labels its objects; its
   * properties carry the key and the target's name */
  snprintf(label, sizeof label,
           "\" [#gpu.object<#vortex.target<abi = %u, xlen = %u, warp_size = %u, O = %u>, properties = "
           "{%s%s%starget = \"vortex%u-rv%u\"}, bin = \"",
           mo.vortex_abi, mo.xlen, mo.warp_size, mo.opt_level, key[0] ? "key = \"" : "", key,
           key[0] ? "\", " : "", mo.vortex_abi, mo.xlen);
  vxl__buf_append(vxl__str(label), &bin);
  char line[160];
  if (key[0]) {
    snprintf(line, sizeof line, "// vortexd-key: %s\n", key);
    vxl__append_escaped(&bin, line, strlen(line));
  }
  /* the options, fixed now: the runtime sends them, so no daemon's
   * default decides them later */
  snprintf(line, sizeof line,
           VXL_OPTIONS_TAG "target=vortex%u-rv%u warp_size=%u opt_level=%u shuffle_insns=%u\n", mo.vortex_abi,
           mo.xlen, mo.warp_size, mo.opt_level, mo.shuffle_insns ? 1u : 0u);
  vxl__append_escaped(&bin, line, strlen(line));
  /* where the module is in the program: what a failure to load it names */
  char where[512], at[400];
  vxl__loc_format(d, mlirOperationGetLocation(gm), at, sizeof at);
  snprintf(where, sizeof where, "// vortexd-module: @%.*s at %s\n",
           (int)(name.length < 64 ? name.length : 64), name.data, at);
  for (char *p = where; p[1]; p++) /* one line */
    if ((unsigned char)*p < 32) *p = '?';
  vxl__append_escaped(&bin, where, strlen(where));
  vxl__host_args_lines(gm, &bin);
  vxl__append_escaped(&bin, text.p, text.n);
  vxl__buf_append(vxl__str("\">]\n}\n"), &bin);
  free(text.p);
  if (bin.oom) {
    free(bin.p);
    return -ENOMEM;
  }
  MlirModule wrap = mlirModuleCreateParse(c->ctx, (MlirStringRef){bin.p, bin.n});
  free(bin.p);
  if (mlirModuleIsNull(wrap)) {
    vxl__diag_at(d, mlirOperationGetLocation(gm),
                 "internal: could not build the gpu.binary of this gpu.module");
    return -EINVAL;
  }
  MlirOperation binop = mlirBlockGetFirstOperation(mlirModuleGetBody(wrap));
  mlirOperationRemoveFromParent(binop);
  mlirModuleDestroy(wrap);
  mlirBlockInsertOwnedOperationBefore(mlirOperationGetBlock(gm), gm, binop);
  mlirOperationDestroy(gm);
  return 0;
}

/* Moves the ops of op's first region's entry block, but its terminator
 * (polygeist.polygeist_yield, unregistered, so found by name), before op. */
static void vxl__inline_first_region(MlirOperation op) {
  MlirBlock b = mlirRegionGetFirstBlock(mlirOperationGetRegion(op, 0));
  if (mlirBlockIsNull(b)) return;
  for (MlirOperation o = mlirBlockGetFirstOperation(b); !mlirOperationIsNull(o);) {
    MlirOperation next = mlirOperationGetNextInBlock(o);
    if (!vxl__op_is(o, "polygeist.polygeist_yield")) mlirOperationMoveBefore(o, op);
    o = next;
  }
}

typedef struct {
  MlirOperation found; /* the first op of interest, pre-order */
  int kind;            /* 1 alternatives, 2 gpu_error, 3 another polygeist op */
} vxl__polygeist_find;

static MlirWalkResult vxl__polygeist_cb(MlirOperation op, void *ud) {
  vxl__polygeist_find *f = ud;
  if (vxl__op_is(op, "gpu.module")) return MlirWalkResultSkip; /* device code: the compile's business */
  MlirStringRef n = vxl__op_name(op);
  int kind =
      vxl__streq(n, "polygeist.alternatives") ? 1
      : vxl__streq(n, "polygeist.gpu_error")  ? 2
      : n.length > 10 && memcmp(n.data, "polygeist.", 10) == 0 && !vxl__streq(n, "polygeist.polygeist_yield")
          ? 3
          : 0;
  if (!kind) return MlirWalkResultAdvance;
  f->found = op;
  f->kind = kind;
  return MlirWalkResultInterrupt;
}

/* Polygeist's host-side ops, resolved one at a time, outermost first:
 * polygeist.alternatives (one variant per block size cgeist tried) keeps
 * its first alternative, the smallest block size (cgeist orders them so;
 * Vortex warps are small), inlined in its place; polygeist.gpu_error (a
 * launch wrapped to report CUDA errors) is inlined and reports no error
 * (0); any other polygeist op on the host side is refused at its location.
 * Returns 0 or -EINVAL. */
static int vxl__resolve_polygeist(vxl_compiler *c, MlirOperation top, vxl__diags *d) {
  for (;;) {
    vxl__polygeist_find f = {{NULL}, 0};
    mlirOperationWalk(top, vxl__polygeist_cb, &f, MlirWalkPreOrder);
    if (!f.kind) return 0;
    MlirOperation op = f.found;
    if (f.kind == 3) {
      vxl__diag_at(d, mlirOperationGetLocation(op), "unsupported: host-side op %.*s",
                   (int)vxl__op_name(op).length, vxl__op_name(op).data);
      return -EINVAL;
    }
    vxl__inline_first_region(op);
    for (intptr_t r = 0; f.kind == 2 && r < mlirOperationGetNumResults(op); r++) {
      MlirValue res = mlirOperationGetResult(op, r);
      MlirType t = mlirValueGetType(res);
      MlirOperationState st = mlirOperationStateGet(vxl__str("arith.constant"), mlirOperationGetLocation(op));
      MlirNamedAttribute a = vxl__named(c->ctx, "value", mlirIntegerAttrGet(t, 0));
      mlirOperationStateAddAttributes(&st, 1, &a);
      mlirOperationStateAddResults(&st, 1, &t);
      MlirOperation zero = mlirOperationCreate(&st);
      mlirBlockInsertOwnedOperationBefore(mlirOperationGetBlock(op), op, zero);
      mlirValueReplaceAllUsesOfWith(res, mlirOperationGetResult(zero, 0));
    }
    mlirOperationDestroy(op);
  }
}

/* The host string constant a launch operand points to (through
 * llvm.getelementptr of it), as the llvm.mlir.global's value, or a null
 * attribute. */
static MlirAttribute vxl__launch_string(MlirOperation top, MlirValue v) {
  MlirAttribute none = {NULL};
  for (int hops = 0; hops < 4 && mlirValueIsAOpResult(v); hops++) {
    MlirOperation def = mlirOpResultGetOwner(v);
    if (vxl__op_is(def, "llvm.getelementptr") && mlirOperationGetNumOperands(def) >= 1) {
      v = mlirOperationGetOperand(def, 0);
      continue;
    }
    if (!vxl__op_is(def, "llvm.mlir.addressof")) return none;
    MlirAttribute name = mlirOperationGetAttributeByName(def, vxl__str("global_name"));
    if (mlirAttributeIsNull(name)) return none;
    MlirOperation g = mlirSymbolTableLookup(mlirSymbolTableCreate(top), mlirFlatSymbolRefAttrGetValue(name));
    if (mlirOperationIsNull(g) || !vxl__op_is(g, "llvm.mlir.global") ||
        mlirAttributeIsNull(mlirOperationGetAttributeByName(g, vxl__str("constant"))))
      return none;
    MlirAttribute value = mlirOperationGetAttributeByName(g, vxl__str("value"));
    return !mlirAttributeIsNull(value) && mlirAttributeIsAString(value) ? value : none;
  }
  return none;
}

/* A launch may pass a pointer to a host string constant (cgeist passes a
 * printf format this way): before the launch, the program tells the
 * runtime its size, so the device gets a read-only copy
 * (vortexdRegisterConstant in libvortexd_runtime).  Returns 0 or -ENOMEM. */
static int vxl__register_launch_strings(vxl_compiler *c, MlirOperation top) {
  vxl__ops launches = {0};
  vxl__ops all = {0};
  vxl__collect_ops(top, &all);
  for (size_t i = 0; i < all.n; i++)
    if (vxl__op_is(all.v[i], "gpu.launch_func")) vxl__ops_push(&launches, all.v[i]);
  free(all.v);
  int declared = 0, rc = launches.oom ? -ENOMEM : 0;
  MlirType i64 = mlirIntegerTypeGet(c->ctx, 64);
  for (size_t i = 0; rc == 0 && i < launches.n; i++) {
    MlirOperation l = launches.v[i];
    for (intptr_t k = 0; k < mlirOperationGetNumOperands(l); k++) {
      MlirValue v = mlirOperationGetOperand(l, k);
      if (!mlirTypeIsALLVMPointerType(mlirValueGetType(v))) continue;
      MlirAttribute s = vxl__launch_string(top, v);
      if (mlirAttributeIsNull(s)) continue;
      if (!declared) {
        /* func.func private @vortexdRegisterConstant(!llvm.ptr, i64) */
        MlirType params[2] = {mlirLLVMPointerTypeGet(c->ctx, 0), i64};
        MlirOperationState ds = mlirOperationStateGet(vxl__str("func.func"), mlirLocationUnknownGet(c->ctx));
        MlirNamedAttribute da[] = {
            vxl__named(c->ctx, "sym_name", mlirStringAttrGet(c->ctx, vxl__str("vortexdRegisterConstant"))),
            vxl__named(c->ctx, "function_type",
                       mlirTypeAttrGet(mlirFunctionTypeGet(c->ctx, 2, params, 0, NULL))),
            vxl__named(c->ctx, "sym_visibility", mlirStringAttrGet(c->ctx, vxl__str("private"))),
        };
        mlirOperationStateAddAttributes(&ds, sizeof da / sizeof *da, da);
        MlirRegion body = mlirRegionCreate(); /* empty: a declaration */
        mlirOperationStateAddOwnedRegions(&ds, 1, &body);
        MlirOperation decl = mlirOperationCreate(&ds);
        if (mlirOperationIsNull(decl)) return -ENOMEM;
        mlirBlockAppendOwnedOperation(mlirRegionGetFirstBlock(mlirOperationGetRegion(top, 0)), decl);
        declared = 1;
      }
      MlirLocation loc = mlirOperationGetLocation(l);
      MlirBlock blk = mlirOperationGetBlock(l);
      MlirOperationState st = mlirOperationStateGet(vxl__str("arith.constant"), loc);
      MlirNamedAttribute a =
          vxl__named(c->ctx, "value", mlirIntegerAttrGet(i64, (int64_t)mlirStringAttrGetValue(s).length));
      mlirOperationStateAddAttributes(&st, 1, &a);
      mlirOperationStateAddResults(&st, 1, &i64);
      MlirOperation size = mlirOperationCreate(&st);
      mlirBlockInsertOwnedOperationBefore(blk, l, size);
      MlirValue args[2] = {v, mlirOperationGetResult(size, 0)};
      vxl__call(c->ctx, loc, blk, l, "vortexdRegisterConstant", 2, args, 0, NULL);
    }
  }
  free(launches.v);
  return rc;
}

static MlirWalkResult vxl__async_or_shared_cb(MlirOperation op, void *ud) {
  int *found = ud;
  if (vxl__op_is(op, "gpu.alloc") &&
      !mlirAttributeIsNull(mlirOperationGetAttributeByName(op, vxl__str("hostShared"))))
    *found = 1;
  for (intptr_t i = 0; !*found && i < mlirOperationGetNumResults(op); i++) {
    char *t = vxl__type_str(mlirValueGetType(mlirOperationGetResult(op, i)));
    if (t && strcmp(t, "!gpu.async.token") == 0) *found = 1;
    free(t);
  }
  return *found ? MlirWalkResultInterrupt : MlirWalkResultAdvance;
}

static MlirWalkResult vxl__async_dialect_cb(MlirOperation op, void *ud) {
  MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(op));
  if (n.length > 6 && memcmp(n.data, "async.", 6) == 0) *(int *)ud = 1;
  return *(int *)ud ? MlirWalkResultInterrupt : MlirWalkResultAdvance;
}

/* Whether the program's host side uses the async dialect. */
static int vxl__uses_async_dialect(MlirOperation top) {
  int found = 0;
  mlirOperationWalk(top, vxl__async_dialect_cb, &found, MlirWalkPreOrder);
  return found;
}

/* What the host pipeline left that is not the LLVM dialect (nor the
 * module, a gpu.binary or a gpu.launch_func, which the JIT's GPU
 * translation turns into runtime calls): the first such op, or null. */
typedef struct {
  MlirOperation top, found;
} vxl__unlowered;

static MlirWalkResult vxl__unlowered_cb(MlirOperation op, void *ud) {
  vxl__unlowered *u = ud;
  MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(op));
  int ok = mlirOperationEqual(op, u->top) || vxl__op_is(op, "gpu.binary") ||
           vxl__op_is(op, "gpu.launch_func") || (n.length > 5 && memcmp(n.data, "llvm.", 5) == 0);
  if (ok) return MlirWalkResultAdvance;
  u->found = op;
  return MlirWalkResultInterrupt;
}

/* The host dialects the host pipeline lowers (VXL_PIPELINE_HOST): an op
 * of another is refused at its own place before the pipeline runs, not by
 * what the pipeline leaves of it somewhere else (an unrealized cast at the
 * line of the op that produced its operand). */
static int vxl__host_dialect(MlirStringRef n) {
  static const char *const ok[] = {"builtin.", "func.",  "arith.",  "math.", "memref.", "scf.",  "cf.",
                                   "vector.",  "index.", "affine.", "gpu.",  "async.",  "llvm.", "linalg."};
  for (size_t i = 0; i < sizeof ok / sizeof *ok; i++)
    if (n.length > strlen(ok[i]) && memcmp(n.data, ok[i], strlen(ok[i])) == 0) return 1;
  return 0;
}

static MlirWalkResult vxl__foreign_cb(MlirOperation op, void *ud) {
  vxl__unlowered *u = ud;
  if (vxl__op_is(op, "gpu.module") || vxl__op_is(op, "gpu.binary"))
    return MlirWalkResultSkip; /* device code */
  int tensor = 0;              /* nothing bufferizes the host side: an op making a tensor is refused too */
  for (intptr_t i = 0; i < mlirOperationGetNumResults(op) && !tensor; i++)
    tensor = mlirTypeIsATensor(mlirValueGetType(mlirOperationGetResult(op, i)));
  if (mlirOperationEqual(op, u->top) ||
      (!tensor && vxl__host_dialect(mlirIdentifierStr(mlirOperationGetName(op)))))
    return MlirWalkResultAdvance;
  u->found = op;
  return MlirWalkResultInterrupt;
}

/* Whether the program uses async tokens or host-shared allocations. */
static int vxl__has_async_or_shared(MlirOperation top) {
  int found = 0;
  mlirOperationWalk(top, vxl__async_or_shared_cb, &found, MlirWalkPreOrder);
  return found;
}

int vxl__lower_host(vxl_compiler *c, const char *source, size_t len, const char *source_name,
                    const vxl_options *opts, vxl_module_key_fn key_of, void *key_ud, vxl__diags *d,
                    char **host_ir, uint32_t *nmodules) {
  *host_ir = NULL;
  *nmodules = 0;
  MlirOperation top;
  int rc = vxl__parse_checked(c, source, len, source_name, d, &top); /* 1-3 */
  if (rc) return rc;
  rc = vxl__resolve_polygeist(c, top, d);
  if (rc == 0) rc = vxl__register_launch_strings(c, top);
  /* cgeist's DLTI spec describes the host; the host's own llvm.data_layout
   * (or the target machine's) is what LLVM uses */
  mlirOperationRemoveAttributeByName(top, vxl__str("dlti.dl_spec"));
  /* every top-level gpu.module becomes a gpu.binary */
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(top, 0));
  for (MlirOperation op = mlirBlockGetFirstOperation(body); rc == 0 && !mlirOperationIsNull(op);) {
    MlirOperation next = mlirOperationGetNextInBlock(op);
    if (vxl__op_is(op, "gpu.module")) {
      rc = vxl__module_to_binary(c, op, opts, key_of, key_ud, d);
      if (rc == 0) (*nmodules)++;
    }
    op = next;
  }
  /* gpu-to-llvm lowers gpu.alloc, gpu.memcpy, ... only in their async
   * form: a program written with synchronous ones gets them made async
   * (gpu-async-region, as upstream's SYCL pipeline does), unless it uses
   * async tokens itself or host-shared allocations, which stay synchronous */
  if (rc == 0 && !vxl__has_async_or_shared(top) &&
      mlirLogicalResultIsFailure(mlirPassManagerRunOnOp(c->pm_async, top))) {
    if (d->n == 0) vxl__diag_add(d, "%s: error: gpu-async-region failed", source_name);
    rc = -EINVAL;
  }
  vxl__unlowered foreign = {top, {NULL}};
  if (rc == 0) mlirOperationWalk(top, vxl__foreign_cb, &foreign, MlirWalkPreOrder);
  if (rc == 0 && !mlirOperationIsNull(foreign.found)) {
    MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(foreign.found));
    vxl__diag_at(d, mlirOperationGetLocation(foreign.found),
                 "unsupported: '%.*s' on the host (vortexd lowers a host side of the func, arith, math, "
                 "memref, scf, cf, vector, index, affine, gpu, async, linalg (on memrefs) and llvm dialects)",
                 (int)n.length, n.data);
    rc = -EINVAL;
  }
  MlirPassManager host = vxl__uses_async_dialect(top) ? c->pm_host_async : c->pm_host;
  if (rc == 0 && mlirLogicalResultIsFailure(mlirPassManagerRunOnOp(host, top))) {
    if (d->n == 0) vxl__diag_add(d, "%s: error: the host pipeline failed", source_name);
    rc = -EINVAL;
  }
  if (rc == 0 && !mlirOperationVerify(top)) {
    if (d->n == 0) vxl__diag_add(d, "%s: error: the lowered host module does not verify", source_name);
    rc = -EINVAL;
  }
  /* an op of a dialect the host pipeline does not lower (bufferization,
   * tensor, ...) would reach the JIT and fail there: said here, at its
   * place in the program */
  vxl__unlowered u = {top, {NULL}};
  if (rc == 0) mlirOperationWalk(top, vxl__unlowered_cb, &u, MlirWalkPreOrder);
  if (rc == 0 && !mlirOperationIsNull(u.found)) {
    MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(u.found));
    vxl__diag_at(d, mlirOperationGetLocation(u.found),
                 "unsupported: '%.*s' on the host (vortexd lowers a host side of the func, arith, math, "
                 "memref, scf, cf, vector, index, affine, gpu, async and llvm dialects)",
                 (int)n.length, n.data);
    rc = -EINVAL;
  }
  if (rc == 0) {
    /* with the program's own locations: whatever the JIT reports about the
     * host side then points into the program's file:line:col */
    vxl__buf out = {0};
    MlirOpPrintingFlags flags = mlirOpPrintingFlagsCreate();
    mlirOpPrintingFlagsEnableDebugInfo(flags, true, false);
    mlirOperationPrintWithFlags(top, flags, vxl__buf_append, &out);
    mlirOpPrintingFlagsDestroy(flags);
    if (out.oom) {
      free(out.p);
      rc = -ENOMEM;
    } else
      *host_ir = out.p;
  }
  mlirOperationDestroy(top);
  return rc;
}
