/*
 * vxl_mlir.c - GPU dialect -> LLVM dialect for Vortex (MLIR side): the
 * driver, vxl__lower_to_llvm_dialect, as a list of stages.
 *
 *   1. vxl__source_text: make Polygeist output parseable (its host DLTI spec
 *      uses `dense<..> : vector<Kxi32>` values MLIR 22 rejects; rewritten to
 *      vector<Kxi64> in place, same length, so every diagnostic keeps its
 *      line:col), refuse overlong literals and split-file markers;
 *   2. vxl__parse, under the source's name (unregistered polygeist.* ops
 *      are allowed by the context);
 *   3. vxl__outline: upstream gpu-kernel-outlining; clashing symbols of
 *      several gpu.modules qualified;
 *   4. vxl__gather: the ops of every gpu.module into a fresh module (host
 *      code is not compiled);
 *   5. vxl__check_supported (vxl_gpu.c): "unsupported: <op>" at file:line:col
 *      for anything the lowering does not handle;
 *   6. vxl__add_prelude: the Vortex device-ABI helpers (vxl_prelude.h);
 *   7. memory placement (vxl_memory.c), then gpu.func -> func.func with
 *      device-address arguments and gpu ops -> helper calls (vxl_gpu.c,
 *      vxl_subgroup.c);
 *   8. vxl__divergence: split/join and pred placement (vxl_divergence.c);
 *   9. vxl__to_llvm_dialect: the upstream conversion pipeline, 32-bit index.
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

/* Longest numeric literal accepted, in characters: a decimal i1024 has 309
 * digits, a hexadecimal one 258 characters.  MLIR's parser takes time
 * growing faster than the square of a literal's length (a 20 000-digit
 * integer took 30 s), so longer ones are refused before parsing. */
#define VXL_MAX_LITERAL_CHARS 400

/* Deepest nesting of '{' '(' '[' '<' accepted.  MLIR's parser recurses
 * once per level (an scf.if nested 4 000 deep overflowed an 8 MiB stack);
 * real kernels stay far below this. */
#define VXL_MAX_NESTING 256

static int vxl__word_char(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '$' ||
         c == '.' || c == '-';
}

/* Refuses numeric literals longer than VXL_MAX_LITERAL_CHARS and nesting
 * deeper than VXL_MAX_NESTING, with a diagnostic at their file:line:col;
 * one pass over the text, skipping string literals and comments.  A word is a maximal run of identifier
 * characters; it is a numeric literal when it starts with a digit (or a
 * minus and a digit) and no sigil (% @ # ^ !) names it.  Returns 0 or
 * -EINVAL. */
static int vxl__check_literals(const char *t, size_t len, const char *source_name, vxl__diags *d) {
  size_t line = 1, col = 1, depth = 0;
  for (size_t i = 0; i < len;) {
    unsigned char c = (unsigned char)t[i];
    if (c == '\n') {
      line++, col = 1, i++;
      continue;
    }
    if (c == '{' || c == '(' || c == '[' || c == '<') {
      if (++depth > VXL_MAX_NESTING) {
        vxl__diag_add(d,
                      "%s:%zu:%zu: error: unsupported: nesting deeper than %d levels of regions, "
                      "parentheses, brackets or type parameters",
                      source_name, line, col, VXL_MAX_NESTING);
        return -EINVAL;
      }
    } else if ((c == '}' || c == ')' || c == ']' || (c == '>' && !(i > 0 && t[i - 1] == '-'))) && depth)
      depth--;      /* "->" is an arrow, not a closing bracket */
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

static int vxl__has_op(MlirOperation root, const char *name) {
  vxl__ops ops = {0};
  vxl__collect_ops(root, &ops);
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

/* Stage 1: the source as NUL-terminated text (malloc()) that MLIR can parse
 * and the lowering accepts: Polygeist's DLTI fixed, no overlong literal, no
 * split-input-file marker.  NULL with a diagnostic (or on OOM: *rc). */
static char *vxl__source_text(const char *source, size_t len, const char *source_name, vxl__diags *d,
                              int *rc) {
  char *text = malloc(len + 1);
  *rc = -ENOMEM;
  if (!text) return NULL;
  memcpy(text, source, len);
  text[len] = '\0';
  vxl__fix_dlti(text, len);
  *rc = -EINVAL;
  if (vxl__check_literals(text, len, source_name, d) != 0) {
    free(text);
    return NULL;
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
      return NULL;
    }
    i = e + 1;
  }
  *rc = 0;
  return text;
}

/* Stage 2: parses text into a builtin.module named after the source, so
 * locations (and the objects' line tables) name the file.  Several
 * top-level ops are wrapped in an implicit module, as mlir-opt does; only
 * the module parser does that, and it names no file (d->source_name does,
 * in diagnostics).  Returns the module op or a null op (diagnostics in d). */
static MlirOperation vxl__parse(MlirContext ctx, const char *text, size_t len, const char *source_name,
                                vxl__diags *d) {
  uint32_t ndiags = d->n;
  MlirModule parsed = {NULL};
  /* named as the object's line tables will name it; diagnostics map the
   * name back to source_name (vxl__loc_format) */
  MlirOperation one = mlirOperationCreateParse(ctx, (MlirStringRef){text, len},
                                               vxl__str(d->debug_name ? d->debug_name : source_name));
  if (!mlirOperationIsNull(one) && vxl__streq(vxl__op_name(one), "builtin.module")) {
    parsed = mlirModuleFromOperation(one);
  } else {
    if (!mlirOperationIsNull(one)) mlirOperationDestroy(one);
    while (d->n > ndiags)
      free(d->v[--d->n]); /* the second parse says it again */
    parsed = mlirModuleCreateParse(ctx, (MlirStringRef){text, len});
  }
  MlirOperation top = mlirModuleIsNull(parsed) ? (MlirOperation){NULL} : mlirModuleGetOperation(parsed);
  if (mlirOperationIsNull(top)) {
    if (d->n == 0) vxl__diag_add(d, "%s: error: could not parse the module", source_name);
    return top;
  }
  if (!vxl__streq(vxl__op_name(top), "builtin.module")) {
    vxl__diag_at(d, mlirOperationGetLocation(top), "expected a builtin.module at top level");
    mlirOperationDestroy(top);
    return (MlirOperation){NULL};
  }
  return top;
}

/* Stage 3: gpu.launch bodies become gpu.func kernels (upstream outlining),
 * and symbols defined in several gpu.modules get qualified names.  Returns
 * 0, -EINVAL (diagnostic) or -ENOMEM. */
static int vxl__outline(vxl_compiler *c, MlirOperation top, const char *source_name, vxl__diags *d) {
  if (vxl__has_op(top, "gpu.launch") &&
      mlirLogicalResultIsFailure(mlirPassManagerRunOnOp(c->pm_outline, top))) {
    vxl__diag_add(d, "%s: error: gpu-kernel-outlining failed", source_name);
    return -EINVAL;
  }
  return vxl__qualify_clashes(c->ctx, top);
}

/* Stage 4: moves the ops of every gpu.module of top into rw->mod (host code
 * is not compiled), collecting the gpu.funcs into *funcs and counting the
 * kernels.  Returns 0, or -EINVAL with a diagnostic (no kernels; one
 * symbol meaning two things). */
static int vxl__gather(vxl__rw *rw, MlirOperation top, const char *source_name, vxl__ops *funcs,
                       uint32_t *nkernels_out) {
  vxl__diags *d = rw->d;
  MlirBlock mbody = mlirModuleGetBody(rw->mod);
  int rc = 0;
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
          vxl__ops_push(funcs, inner);
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
    vxl__collect_ops(top, &all);
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
  *nkernels_out = nkernels;
  return funcs->oom ? -ENOMEM : rc;
}

/* Stage 6: the Vortex device-ABI helpers (vxl_prelude.h), copied in. */
static void vxl__add_prelude(vxl_compiler *c, MlirModule mod) {
  MlirBlock mbody = mlirModuleGetBody(mod);
  for (MlirOperation op = mlirBlockGetFirstOperation(mlirModuleGetBody(c->prelude_hw));
       !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op))
    mlirBlockAppendOwnedOperation(mbody, mlirOperationClone(op));
}

/* Stage 8: divergence: loops as scf.while, then split/join and pred
 * placement in every function but the prelude's (vxl_divergence.c). */
static int vxl__divergence(vxl_compiler *c, MlirModule mod, const vxl__kernel_info *kinfo, uint32_t nkernels,
                           const char *source_name, vxl__diags *d) {
  MlirContext ctx = c->ctx;
  MlirBlock mbody = mlirModuleGetBody(mod);
  int rc = 0;
  if (mlirLogicalResultIsFailure(mlirPassManagerRunOnOp(c->pm_prep, mlirModuleGetOperation(mod)))) {
    vxl__diag_add(d, "%s: error: internal: scf-for-to-while failed", source_name);
    return -EINVAL;
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
  return rc;
}

/* Stage 9: the upstream conversion pipeline (32-bit index), with the
 * module verified before and after; then everything must be LLVM dialect.
 * Returns 0 or -EINVAL with diagnostics. */
static int vxl__to_llvm_dialect(vxl_compiler *c, vxl__rw *rw, const char *source_name) {
  vxl__diags *d = rw->d;
  MlirModule mod = rw->mod;
  int rc = 0;
  if (!mlirOperationVerify(mlirModuleGetOperation(mod))) {
    vxl__diag_add(d, "%s: error: internal: the rewritten module does not verify", source_name);
    return -EINVAL;
  }
  MlirPassManager pm = rw->needs_full ? c->pm_full : c->pm;
  if (mlirLogicalResultIsFailure(mlirPassManagerRunOnOp(pm, mlirModuleGetOperation(mod)))) {
    vxl__diag_add(d, "%s: error: the upstream lowering pipeline failed", source_name);
    return -EINVAL;
  }
  if (!mlirOperationVerify(mlirModuleGetOperation(mod))) {
    vxl__diag_add(d, "%s: error: internal: the lowered module does not verify", source_name);
    return -EINVAL;
  }
  vxl__ops ops = {0};
  if (vxl__collect_ops(mlirModuleGetOperation(mod), &ops) != 0) rc = -ENOMEM;
  for (size_t i = 1; i < ops.n; i++) {
    MlirStringRef n = vxl__op_name(ops.v[i]);
    if (!(n.length > 5 && memcmp(n.data, "llvm.", 5) == 0)) {
      vxl__diag_at(d, mlirOperationGetLocation(ops.v[i]), "unsupported: %.*s (not lowered to LLVM)",
                   (int)n.length, n.data);
      rc = -EINVAL;
    }
  }
  free(ops.v);
  return rc;
}

int vxl__lower_to_llvm_dialect(vxl_compiler *c, const char *source, size_t len, const char *source_name,
                               const vxl_options *opts, LLVMContextRef lctx, LLVMTargetDataRef td,
                               vxl__diags *d, MlirModule *out_module, vxl__kernel_info **kinfo_out,
                               uint32_t *nkernels_out) {
  MlirContext ctx = c->ctx;
  int rc;
  char *text = vxl__source_text(source, len, source_name, d, &rc); /* 1 */
  if (!text) return rc;
  MlirOperation top = vxl__parse(ctx, text, len, source_name, d); /* 2 */
  free(text);
  if (mlirOperationIsNull(top)) return -EINVAL;
  rc = vxl__check_sizes(top, d);                          /* 2b: memory the target cannot hold */
  if (rc == 0) rc = vxl__outline(c, top, source_name, d); /* 3 */
  if (rc) {
    mlirOperationDestroy(top);
    return rc;
  }
  MlirModule mod = mlirModuleCreateEmpty(mlirOperationGetLocation(top));
  vxl__rw rw = {.c = c, .mod = mod, .d = d, .lctx = lctx, .td = td};
  rw.sg = (vxl__subgroups){.ctx = ctx,
                           .mod = mod,
                           .d = d,
                           .warp_size = opts->warp_size ? opts->warp_size : VXL_DEFAULT_WARP_SIZE,
                           .shuffle_insns = opts->shuffle_insns};
  vxl__ops funcs = {0};
  uint32_t nkernels = 0;
  rc = vxl__gather(&rw, top, source_name, &funcs, &nkernels); /* 4 */
  mlirOperationDestroy(top);
  if (rc == 0) rc = vxl__check_supported(&rw, mlirModuleGetOperation(mod)); /* 5 */
  if (rc == 0) vxl__add_prelude(c, mod);                                    /* 6 */
  /* 7: memory placement, then each gpu.func to a func.func */
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
    rc = vxl__add_constant_i32(ctx, mlirModuleGetBody(mod), VXL_SCRATCH_SYMBOL, VXL_SCRATCH_BYTES_PER_THREAD);
  if (rc == 0) vxl__strip_address_spaces(mlirModuleGetOperation(mod));
  if (rw.tr.ptr) mlirTypeToLLVMIRTranslatorDestroy(rw.tr);
  if (rc == 0) rc = vxl__divergence(c, mod, kinfo, nkernels, source_name, d); /* 8 */
  if (rc == 0) vxl__prune_prelude(mod);
  if (rc == 0) rc = vxl__to_llvm_dialect(c, &rw, source_name); /* 9 */
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

/* Replaces gpu.module gm (in top's body) with a gpu.binary of the same
 * name holding the module's text.  Returns 0, -EINVAL, -ENOMEM. */
static int vxl__module_to_binary(vxl_compiler *c, MlirOperation gm, vxl_module_key_fn key_of, void *key_ud,
                                 vxl__diags *d) {
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
  if (key_of && key_of(key_ud, text.p, text.n, key) != 0) key[0] = '\0';
  MlirStringRef name =
      mlirStringAttrGetValue(mlirOperationGetAttributeByName(gm, mlirSymbolTableGetSymbolAttributeName()));
  vxl__buf_append(vxl__str("module {\n  gpu.binary @\""), &bin);
  vxl__append_escaped(&bin, name.data, name.length);
  vxl__buf_append(vxl__str("\" [#gpu.object<#nvvm.target, bin = \""), &bin);
  if (key[0]) {
    char line[96];
    snprintf(line, sizeof line, "// vortexd-key: %s\n", key);
    vxl__append_escaped(&bin, line, strlen(line));
  }
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
        MlirModule wrap = mlirModuleCreateParse(
            c->ctx, vxl__str("module {\n  func.func private @vortexdRegisterConstant(!llvm.ptr, i64)\n}\n"));
        if (mlirModuleIsNull(wrap)) return -ENOMEM;
        MlirOperation decl = mlirBlockGetFirstOperation(mlirModuleGetBody(wrap));
        mlirOperationRemoveFromParent(decl);
        mlirModuleDestroy(wrap);
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

/* Whether the program uses async tokens or host-shared allocations. */
static int vxl__has_async_or_shared(MlirOperation top) {
  int found = 0;
  mlirOperationWalk(top, vxl__async_or_shared_cb, &found, MlirWalkPreOrder);
  return found;
}

int vxl__lower_host(vxl_compiler *c, const char *source, size_t len, const char *source_name,
                    vxl_module_key_fn key_of, void *key_ud, vxl__diags *d, char **host_ir,
                    uint32_t *nmodules) {
  *host_ir = NULL;
  *nmodules = 0;
  int rc;
  char *text = vxl__source_text(source, len, source_name, d, &rc); /* 1 */
  if (!text) return rc;
  MlirOperation top = vxl__parse(c->ctx, text, len, source_name, d); /* 2 */
  free(text);
  if (mlirOperationIsNull(top)) return -EINVAL;
  rc = vxl__check_sizes(top, d);
  if (rc == 0) rc = vxl__outline(c, top, source_name, d); /* 3 */
  if (rc == 0) rc = vxl__resolve_polygeist(c, top, d);
  if (rc == 0) rc = vxl__register_launch_strings(c, top);
  /* cgeist's DLTI spec describes the host; the host's own llvm.data_layout
   * (or the target machine's) is what LLVM uses */
  mlirOperationRemoveAttributeByName(top, vxl__str("dlti.dl_spec"));
  /* every top-level gpu.module becomes a gpu.binary */
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(top, 0));
  for (MlirOperation op = mlirBlockGetFirstOperation(body); rc == 0 && !mlirOperationIsNull(op);) {
    MlirOperation next = mlirOperationGetNextInBlock(op);
    if (vxl__op_is(op, "gpu.module")) {
      rc = vxl__module_to_binary(c, op, key_of, key_ud, d);
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
