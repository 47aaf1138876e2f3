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
 * Stages 1 to 3 serve the host lowering too (vxl_host.c).
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
char *vxl__source_text(const char *source, size_t len, const char *source_name, vxl__diags *d, int *rc) {
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
MlirOperation vxl__parse(MlirContext ctx, const char *text, size_t len, const char *source_name,
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
int vxl__outline(vxl_compiler *c, MlirOperation top, const char *source_name, vxl__diags *d) {
  if (vxl__has_op(top, "gpu.launch") &&
      mlirLogicalResultIsFailure(mlirPassManagerRunOnOp(c->pm_outline, top))) {
    vxl__diag_add(d, "%s: error: gpu-kernel-outlining failed", source_name);
    return -EINVAL;
  }
  return vxl__qualify_clashes(c->ctx, top);
}

/* Stage 4: copies the ops of every gpu.module of top into rw->mod (host
 * code is not compiled; top is left as it was), collecting the gpu.funcs
 * into *funcs and counting the kernels.  Of the kernels, only those
 * numbered first .. first + count - 1 (in the order of the source) are
 * copied: one piece of the module.  Returns 0, or -EINVAL with a
 * diagnostic (one symbol meaning two things). */
static int vxl__gather(vxl__rw *rw, MlirOperation top, const char *source_name, uint32_t first,
                       uint32_t count, vxl__ops *funcs, uint32_t *nkernels_out) {
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
      int is_kernel = vxl__streq(n, "gpu.func") &&
                      !mlirAttributeIsNull(mlirOperationGetAttributeByName(inner, vxl__str("gpu.kernel")));
      if (is_kernel && (nkernels++ < first || nkernels > first + count)) {
        inner = next; /* another piece's kernel */
        continue;
      }
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
            inner = next;
            continue;
          }
          vxl__diag_at(d, mlirOperationGetLocation(inner),
                       "unsupported: symbol @%.*s means two different things in two gpu.modules",
                       (int)sn.length, sn.data);
          rc = -EINVAL;
        }
        MlirOperation copy = mlirOperationClone(inner);
        mlirBlockAppendOwnedOperation(mbody, copy);
        if (vxl__streq(n, "gpu.func")) vxl__ops_push(funcs, copy);
      }
      inner = next;
    }
  }
  *nkernels_out = nkernels;
  return funcs->oom ? -ENOMEM : rc;
}

/* Stage 5b: drops the functions and private globals no kernel of this
 * piece reaches (upstream symbol-dce, with every function but the kernels
 * made private first: a piece would otherwise lower every helper of the
 * module again, only for LLVM to drop it), then lists the gpu.funcs left
 * in *funcs with the func.funcs defined in the gpu.modules (device
 * functions: their gpu ops are rewritten too).  After the checks of stage 5, so a function no kernel uses
 * is still refused when it holds what the lowering refuses.  Returns 0,
 * -EINVAL (the pass failed) or -ENOMEM. */
static int vxl__drop_unused(vxl__rw *rw, vxl__ops *funcs) {
  MlirContext ctx = rw->c->ctx;
  MlirBlock body = mlirModuleGetBody(rw->mod);
  MlirAttribute priv = mlirStringAttrGet(ctx, vxl__str("private"));
  for (MlirOperation op = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op)) {
    int func = vxl__op_is(op, "gpu.func") || vxl__op_is(op, "func.func");
    if (func && mlirAttributeIsNull(mlirOperationGetAttributeByName(op, vxl__str("gpu.kernel"))))
      mlirOperationSetAttributeByName(op, vxl__str("sym_visibility"), priv);
  }
  if (mlirLogicalResultIsFailure(mlirPassManagerRunOnOp(rw->c->pm_dce, mlirModuleGetOperation(rw->mod)))) {
    vxl__diag_add(rw->d, "error: internal: symbol-dce failed");
    return -EINVAL;
  }
  funcs->n = 0;
  for (MlirOperation op = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op))
    if (vxl__op_is(op, "gpu.func") || (vxl__op_is(op, "func.func") && !vxl__is_declaration(op)))
      vxl__ops_push(funcs, op);
  return funcs->oom ? -ENOMEM : 0;
}

/* Stage 6: the Vortex device-ABI helpers (vxl_prelude.h, parsed by the
 * driver for the compile's options), copied in. */
static int vxl__add_prelude(MlirModule mod, MlirModule prelude) {
  MlirBlock mbody = mlirModuleGetBody(mod);
  for (MlirOperation op = mlirBlockGetFirstOperation(mlirModuleGetBody(prelude)); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op))
    mlirBlockAppendOwnedOperation(mbody, mlirOperationClone(op));
  return 0;
}

/* Stage 8: divergence: loops as scf.while, then split/join and pred
 * placement in every function but the prelude's (vxl_divergence.c). */
static int vxl__divergence(vxl_compiler *c, MlirModule mod, const vxl__kernel_info *kinfo, uint32_t nkernels,
                           const char *source_name, uint32_t vortex_abi, vxl__diags *d) {
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
    rc = vxl__insert_divergence(ctx, op, is_kernel, vortex_abi != 3, d, &splits, &preds);
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
  /* vector ops first, at the pipeline's index width (vxl_vector.h) */
  if (rw->needs_vector &&
      (mlirLogicalResultIsFailure(mlirPassManagerRunOnOp(c->pm_vector, mlirModuleGetOperation(mod))) ||
       vxl__vector_to_llvm(mlirModuleGetOperation(mod), 32) != 0)) {
    if (d->n == 0) vxl__diag_add(d, "%s: error: the vector lowering failed", source_name);
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

int vxl__parse_checked(vxl_compiler *c, const char *source, size_t len, const char *source_name,
                       vxl__diags *d, MlirOperation *top_out) {
  *top_out = (MlirOperation){NULL};
  int rc;
  char *text = vxl__source_text(source, len, source_name, d, &rc); /* 1 */
  if (!text) return rc;
  MlirOperation top = vxl__parse(c->ctx, text, len, source_name, d); /* 2 */
  free(text);
  if (mlirOperationIsNull(top)) return -EINVAL;
  rc = vxl__check_sizes(top, d);                          /* 2b: memory the target cannot hold */
  if (rc == 0) rc = vxl__outline(c, top, source_name, d); /* 3 */
  if (rc) {
    mlirOperationDestroy(top);
    return rc;
  }
  *top_out = top;
  return 0;
}

/* A module without kernels: refused, at the first GPU op that is not in a
 * kernel if there is one.  Returns -EINVAL. */
static int vxl__refuse_no_kernels(MlirOperation top, const char *source_name, vxl__diags *d) {
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
  return -EINVAL;
}

int vxl__parse_source(vxl_compiler *c, const char *source, size_t len, const char *source_name, vxl__diags *d,
                      MlirOperation *top_out, uint32_t *nkernels_out) {
  MlirOperation top;
  int rc = vxl__parse_checked(c, source, len, source_name, d, &top);
  if (rc) return rc;
  uint32_t n = 0;
  for (MlirOperation op = mlirBlockGetFirstOperation(mlirModuleGetBody(mlirModuleFromOperation(top)));
       !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op)) {
    if (!vxl__streq(vxl__op_name(op), "gpu.module")) continue;
    for (MlirOperation k = mlirBlockGetFirstOperation(mlirRegionGetFirstBlock(mlirOperationGetRegion(op, 0)));
         !mlirOperationIsNull(k); k = mlirOperationGetNextInBlock(k))
      n += vxl__streq(vxl__op_name(k), "gpu.func") &&
           !mlirAttributeIsNull(mlirOperationGetAttributeByName(k, vxl__str("gpu.kernel")));
  }
  if (n == 0) {
    rc = vxl__refuse_no_kernels(top, source_name, d);
    mlirOperationDestroy(top);
    return rc;
  }
  *top_out = top;
  *nkernels_out = n;
  return 0;
}

/* "label name=value ...\n": op's attributes, printed, appended to out. */
static void vxl__print_attributes(MlirOperation op, const char *label, vxl__buf *out) {
  vxl__buf_append(mlirStringRefCreateFromCString(label), out);
  for (intptr_t i = 0, n = mlirOperationGetNumAttributes(op); i < n; i++) {
    MlirNamedAttribute a = mlirOperationGetAttribute(op, i);
    vxl__buf_append(mlirStringRefCreateFromCString(" "), out);
    vxl__buf_append(mlirIdentifierStr(a.name), out);
    vxl__buf_append(mlirStringRefCreateFromCString("="), out);
    mlirAttributePrint(a.attribute, vxl__buf_append, out);
  }
  vxl__buf_append(mlirStringRefCreateFromCString("\n"), out);
}

int vxl__piece_inputs(vxl_compiler *c, MlirOperation top, uint32_t first, uint32_t count, vxl__buf *out) {
  MlirModule mod = mlirModuleCreateEmpty(mlirOperationGetLocation(top));
  vxl__diags d = {0};
  vxl__rw rw = {.c = c, .mod = mod, .d = &d};
  vxl__ops funcs = {0};
  uint32_t total = 0;
  /* what stage 4 reads besides the ops it copies: the gpu.modules'
   * attributes (their #vortex.target), in order; and the top module's,
   * which no stage reads today (one that starts to cannot make two pieces
   * alike that are not) */
  vxl__print_attributes(top, "module", out);
  for (MlirOperation op = mlirBlockGetFirstOperation(mlirModuleGetBody(mlirModuleFromOperation(top)));
       !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op))
    if (vxl__streq(vxl__op_name(op), "gpu.module")) vxl__print_attributes(op, "gpu.module", out);
  /* a refusal of stage 4 (a clash) is refused again when the piece is
   * compiled: both ops are in the module printed below */
  int rc = vxl__gather(&rw, top, "", first, count, &funcs, &total);
  free(funcs.v);
  for (uint32_t i = 0; i < d.n; i++)
    free(d.v[i]);
  free(d.v);
  if (rc == -ENOMEM) {
    mlirModuleDestroy(mod);
    return -ENOMEM;
  }
  MlirOpPrintingFlags flags = mlirOpPrintingFlagsCreate();
  mlirOpPrintingFlagsEnableDebugInfo(flags, true, false); /* the lines are in the object's line tables */
  mlirOpPrintingFlagsPrintGenericOpForm(flags);           /* every attribute, no printer's choices */
  mlirOperationPrintWithFlags(mlirModuleGetOperation(mod), flags, vxl__buf_append, out);
  mlirOpPrintingFlagsDestroy(flags);
  mlirModuleDestroy(mod);
  return out->oom ? -ENOMEM : 0;
}

int vxl__lower_to_llvm_dialect(vxl_compiler *c, MlirOperation top, uint32_t first, uint32_t count,
                               const char *source_name, const vxl_options *opts, MlirModule prelude,
                               LLVMContextRef lctx, LLVMTargetDataRef td, vxl__diags *d,
                               MlirModule *out_module, vxl__kernel_info **kinfo_out, uint32_t *nkernels_out) {
  MlirContext ctx = c->ctx;
  int rc;
  MlirModule mod = mlirModuleCreateEmpty(mlirOperationGetLocation(top));
  vxl__rw rw = {.c = c, .mod = mod, .d = d, .lctx = lctx, .td = td, .xlen = opts->xlen == 64 ? 64 : 32};
  rw.sg = (vxl__subgroups){
      .ctx = ctx, .mod = mod, .d = d, .warp_size = opts->warp_size, .shuffle_insns = opts->shuffle_insns};
  vxl__ops funcs = {0};
  uint32_t total = 0;
  rc = 0;
  /* a gpu.module made for another #vortex.target is refused, not compiled */
  for (MlirOperation op = mlirBlockGetFirstOperation(mlirModuleGetBody(mlirModuleFromOperation(top)));
       rc == 0 && !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op))
    if (vxl__streq(vxl__op_name(op), "gpu.module")) rc = vxl__check_module_targets(op, opts, d);
  if (rc == 0) rc = vxl__gather(&rw, top, source_name, first, count, &funcs, &total); /* 4 */
  uint32_t nkernels = first >= total ? 0 : total - first < count ? total - first : count;
  if (rc == 0) rc = vxl__check_supported(&rw, mlirModuleGetOperation(mod)); /* 5 */
  if (rc == 0) rc = vxl__drop_unused(&rw, &funcs);                          /* 5b */
  if (rc == 0) rc = vxl__add_prelude(mod, prelude);                         /* 6 */
  /* 7: memory placement, then each gpu.func to a func.func */
  if (rc == 0) rc = vxl__place_workgroup_globals(&rw);
  vxl__kernel_info *kinfo = NULL;
  if (rc == 0) {
    kinfo = calloc(nkernels, sizeof *kinfo);
    if (!kinfo) rc = -ENOMEM;
  }
  uint32_t ki = 0;
  for (size_t i = 0; rc == 0 && i < funcs.n; i++) {
    if (vxl__op_is(funcs.v[i], "func.func")) { /* a device function (cgeist's): its gpu ops */
      rc = vxl__convert_device_func(&rw, funcs.v[i]);
      continue;
    }
    int is_kernel = !mlirAttributeIsNull(mlirOperationGetAttributeByName(funcs.v[i], vxl__str("gpu.kernel")));
    rc = vxl__convert_func(&rw, funcs.v[i], is_kernel ? &kinfo[ki] : NULL);
    if (is_kernel) ki++;
  }
  free(funcs.v);
  if (rc == 0 && rw.sg.uses_scratch) /* main gives each group this much more local memory */
    rc = vxl__add_constant_i32(ctx, mlirModuleGetBody(mod), VXL_SCRATCH_SYMBOL, VXL_SCRATCH_BYTES_PER_THREAD);
  if (rc == 0) vxl__strip_address_spaces(mlirModuleGetOperation(mod));
  if (rw.tr.ptr) mlirTypeToLLVMIRTranslatorDestroy(rw.tr);
  if (rc == 0) rc = vxl__divergence(c, mod, kinfo, nkernels, source_name, opts->vortex_abi, d); /* 8 */
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
