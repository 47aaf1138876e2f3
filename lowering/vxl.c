/*
 * vxl.c - the lowering driver: compiler lifetime, one compile end to end.
 */
#define _GNU_SOURCE
#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/BitWriter.h>
#include <llvm-c/Core.h>
#include <llvm-c/Error.h>
#include <llvm-c/ErrorHandling.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include <llvm/Config/llvm-config.h>
#include <mlir-c/BuiltinAttributes.h>
#include <mlir-c/BuiltinTypes.h>
#include <mlir-c/Diagnostics.h>
#include <mlir-c/Dialect/LLVM.h>
#include <mlir-c/IR.h>
#include <mlir-c/Pass.h>
#include <mlir-c/Target/LLVMIR.h>

#include <llvm-c/DebugInfo.h>

#include "vxl_internal.h"
#include "vxl_prelude.h"
#include "vxl_register.h"

/* The targets Vortex builds kernels for (its sw/kernel Makefile:
 * -march=rv32imaf -mabi=ilp32f, or rv64imafd lp64d when XLEN is 64; both
 * -mcmodel=medany), by register width: index xlen == 64 (docs/VORTEX_ABI.md). */
typedef struct {
  const char *triple, *cpu, *features, *abi;
} vxl__target;
static const vxl__target vxl__targets[2] = {
    {"riscv32-unknown-elf", "generic-rv32", "+m,+a,+f", "ilp32f"},
    {"riscv64-unknown-elf", "generic-rv64", "+m,+a,+f,+d", "lp64d"},
};

/* Upstream passes after the GPU-specific rewrite; index is 32-bit in every
 * pass that takes it (each conversion pass has its own index-bitwidth option
 * and defaults to 64), on RV64 too: thread and block indices are 32-bit
 * CSRs and Vortex's uint32_t, and 32-bit arithmetic is native there
 * (docs/VORTEX_ABI.md, "Register width").  The base pipeline covers
 * what Polygeist kernels use (arith, scf, cf, memref load/store, func, llvm);
 * modules with affine, math, ub or other memref ops get the full one (the
 * extra passes cost ~8% of a compile even when they find nothing).  The
 * last pass gives every function line-table debug info, so the objects map
 * each instruction to the source's line and column (what the emulator and
 * a debugger report). */
#define VXL__PIPELINE_TAIL                                                                                   \
  "convert-arith-to-llvm{index-bitwidth=32},"                                                                \
  "convert-index-to-llvm{index-bitwidth=32},"                                                                \
  "finalize-memref-to-llvm{index-bitwidth=32},"                                                              \
  "convert-cf-to-llvm{index-bitwidth=32},"                                                                   \
  "convert-func-to-llvm{index-bitwidth=32},"                                                                 \
  "convert-ub-to-llvm{index-bitwidth=32},"                                                                   \
  "reconcile-unrealized-casts,"                                                                              \
  "ensure-debug-info-scope-on-llvm-func{emission-kind=LineTablesOnly})"
#define VXL_PIPELINE_BASE "builtin.module(convert-scf-to-cf," VXL__PIPELINE_TAIL
/* A program's host side, once its gpu.modules are gpu.binary ops: the
 * upstream passes that turn gpu.launch_func, gpu.alloc, gpu.memcpy, ...
 * into calls of the MLIR GPU runtime ABI (gpu-to-llvm), and the rest of
 * the host code into the LLVM dialect, as upstream's GPU pipelines do. */
#define VXL_PIPELINE_HOST                                                                                    \
  "builtin.module(convert-linalg-to-loops,convert-vector-to-scf,convert-scf-to-cf,expand-strided-metadata,"  \
  "lower-affine,"                                                                                            \
  "finalize-memref-to-llvm,convert-math-to-llvm,convert-arith-to-llvm,convert-index-to-llvm,"                \
  "convert-vector-to-llvm,convert-cf-to-llvm,convert-func-to-llvm,gpu-to-llvm,reconcile-unrealized-casts)"
/* A host side that uses the async dialect (async.execute, async.await),
 * lowered as upstream's integration tests lower it: gpu-to-llvm first (its
 * tokens become streams), then async-to-async-runtime and
 * convert-async-to-llvm, calls into MLIR's async runtime library
 * (libmlir_async_runtime), then the rest of VXL_PIPELINE_HOST. */
#define VXL_PIPELINE_HOST_ASYNC                                                                              \
  "builtin.module(convert-linalg-to-loops,convert-vector-to-scf,convert-scf-to-cf,expand-strided-metadata,"  \
  "lower-affine,gpu-to-llvm,"                                                                                \
  "async-to-async-runtime,async-runtime-ref-counting,convert-async-to-llvm,finalize-memref-to-llvm,"         \
  "convert-math-to-llvm,convert-arith-to-llvm,convert-index-to-llvm,convert-vector-to-llvm,"                 \
  "convert-cf-to-llvm,convert-func-to-llvm,reconcile-unrealized-casts)"
#define VXL_PIPELINE_FULL                                                                                    \
  "builtin.module(expand-strided-metadata,lower-affine,convert-scf-to-cf,"                                   \
  "convert-math-to-llvm,convert-math-to-libm," VXL__PIPELINE_TAIL

/* What LLVM reports while compiling one module, and where it goes. */
typedef struct {
  vxl__diags *d;
  const char *source_name;
  int errors;
} vxl__llvm_diags;

/* LLVM's diagnostic handler for a compile's context: errors (an inline-asm
 * constraint no register satisfies, ...) become diagnostics of the compile
 * instead of LLVM's default, which prints them and exits the process. */
static void vxl__llvm_diagnostic(LLVMDiagnosticInfoRef di, void *ud) {
  vxl__llvm_diags *s = ud;
  if (LLVMGetDiagInfoSeverity(di) != LLVMDSError) return;
  char *what = LLVMGetDiagInfoDescription(di);
  vxl__diag_add(s->d, "%s: error: code generation: %s", s->source_name, what ? what : "(no description)");
  LLVMDisposeMessage(what);
  s->errors++;
}

void vxl_install_fatal_error_handler(void (*handler)(const char *reason)) {
  LLVMInstallFatalErrorHandler(handler);
}

const char *vxl_toolchain_fingerprint(void) {
  return "llvm=" LLVM_VERSION_STRING ";pipeline=scf-for-to-while+divergence," VXL_PIPELINE_FULL;
}

int vxl_fingerprint(const vxl_options *opts, char *buf, size_t cap) {
  vxl_options o = vxl__resolved(opts); /* the defaults vxl_compile applies */
  const vxl__target *t = &vxl__targets[o.xlen == 64];
  size_t n = 0;
  int w =
      snprintf(buf, cap, "lowering-abi=%u;%s;triple=%s;cpu=%s;features=%s;abi=%s", VXL_LOWERING_ABI_VERSION,
               vxl_toolchain_fingerprint(), t->triple, t->cpu, t->features, t->abi);
  if (w < 0 || (size_t)w >= cap) return -ENOSPC;
  n = (size_t)w;
#define VXL__OPTION_KEY(type, name, keyed)                                                                   \
  if (keyed) {                                                                                               \
    w = snprintf(buf + n, cap - n, ";" #name "=%llu", (unsigned long long)o.name);                           \
    if (w < 0 || (size_t)w >= cap - n) return -ENOSPC;                                                       \
    n += (size_t)w;                                                                                          \
  }
  VXL_OPTIONS(VXL__OPTION_KEY)
#undef VXL__OPTION_KEY
  return (int)n;
}

const char *vxl_toolchain_summary(void) {
  return "LLVM " LLVM_VERSION_STRING ", riscv32 (ilp32f) and riscv64 (lp64d), Vortex kernel ABI 2 and 3";
}

/* Context diagnostic handler: appends "file:line:col: severity: msg" (and
 * its notes) to the compile in progress.  Runs on the compiling thread. */
static void vxl__record_diag(vxl__diags *d, MlirDiagnostic diag) {
  const char *sev;
  switch (mlirDiagnosticGetSeverity(diag)) {
  case MlirDiagnosticError: sev = "error"; break;
  case MlirDiagnosticWarning: sev = "warning"; break;
  case MlirDiagnosticNote: sev = "note"; break;
  default: sev = "remark"; break;
  }
  char where[512];
  vxl__loc_format(d, mlirDiagnosticGetLocation(diag), where, sizeof where);
  vxl__buf msg = {0};
  mlirDiagnosticPrint(diag, vxl__buf_append, &msg);
  vxl__diag_add(d, "%s: %s: %s", where, sev, msg.p && !msg.oom ? msg.p : "");
  free(msg.p);
  for (intptr_t i = 0; i < mlirDiagnosticGetNumNotes(diag); i++)
    vxl__record_diag(d, mlirDiagnosticGetNote(diag, i));
}

static MlirLogicalResult vxl__on_diag(MlirDiagnostic diag, void *ud) {
  vxl_compiler *c = ud;
  if (c->cur_diags) vxl__record_diag(c->cur_diags, diag);
  return mlirLogicalResultSuccess(); /* handled: do not print to stderr */
}

static MlirModule vxl__parse_prelude(MlirContext ctx, const char *text) {
  MlirOperation op =
      mlirOperationCreateParse(ctx, mlirStringRefCreateFromCString(text), vxl__str(VXL_PRELUDE_SOURCE));
  return mlirOperationIsNull(op) ? (MlirModule){NULL} : mlirModuleFromOperation(op);
}

/* What MLIR and LLVM register for the whole process (the pass registry,
 * the RISC-V target), into global tables with no lock of their own: done
 * once, so that compilers can be created on several threads at once. */
static pthread_once_t vxl__globals_once = PTHREAD_ONCE_INIT;

static void vxl__register_globals(void) {
  vxl__register_passes();
  LLVMInitializeRISCVTargetInfo();
  LLVMInitializeRISCVTarget();
  LLVMInitializeRISCVTargetMC();
  LLVMInitializeRISCVAsmPrinter();
  LLVMInitializeRISCVAsmParser(); /* inline asm (.insn, csrr) in objects */
}

int vxl_compiler_create(vxl_compiler **out) {
  vxl_compiler *c = calloc(1, sizeof *c);
  if (!c) return -ENOMEM;
  pthread_once(&vxl__globals_once, vxl__register_globals);

  MlirDialectRegistry reg = mlirDialectRegistryCreate();
  vxl__register_dialects(reg);
  /* Threading off: one context per worker process, which compiles one
   * module at a time; a thread pool per context would only cost memory. */
  c->ctx = mlirContextCreateWithRegistry(reg, false);
  mlirDialectRegistryDestroy(reg);
  mlirContextSetAllowUnregisteredDialects(c->ctx, true);
  /* Patterns and generic op creation need the dialects loaded, not only
   * registered: an op of a registered dialect that is not loaded is
   * created as an unregistered op, which no pattern matches. */
  static const char *const dialects[] = {"builtin", "func", "arith", "llvm",   "gpu", "memref", "scf",
                                         "cf",      "math", "index", "affine", "ub",  NULL};
  for (int i = 0; dialects[i]; i++)
    mlirContextGetOrLoadDialect(c->ctx, mlirStringRefCreateFromCString(dialects[i]));
  vxl__target_load(c->ctx); /* #vortex.target on gpu.modules */
  mlirContextAttachDiagnosticHandler(c->ctx, vxl__on_diag, c, NULL);

  vxl__diags d = {0};
  c->cur_diags = &d;
  MlirLogicalResult pr = mlirLogicalResultSuccess();
  const char *pipelines[9] = {VXL_PIPELINE_BASE,
                              VXL_PIPELINE_FULL,
                              "builtin.module(scf-for-to-while)",
                              "builtin.module(gpu-kernel-outlining)",
                              VXL_PIPELINE_HOST,
                              "builtin.module(func.func(gpu-async-region))",
                              VXL_PIPELINE_HOST_ASYNC,
                              "builtin.module(symbol-dce)",
                              "builtin.module(convert-vector-to-scf)"};
  MlirPassManager *pms[9] = {&c->pm,       &c->pm_full,       &c->pm_prep, &c->pm_outline, &c->pm_host,
                             &c->pm_async, &c->pm_host_async, &c->pm_dce,  &c->pm_vector};
  for (int i = 0; i < 9; i++) {
    *pms[i] = mlirPassManagerCreate(c->ctx);
    vxl__buf perr = {0};
    if (mlirLogicalResultIsFailure(mlirParsePassPipeline(mlirPassManagerGetAsOpPassManager(*pms[i]),
                                                         mlirStringRefCreateFromCString(pipelines[i]),
                                                         vxl__buf_append, &perr)))
      pr = mlirLogicalResultFailure();
    if (perr.p) vxl__diag_add(&d, "%s", perr.p);
    free(perr.p);
    /* Verify once after the pipeline (vxl_mlir.c) instead of after each of
     * its passes: the per-pass verifier was a measurable share of a compile. */
    mlirPassManagerEnableVerifier(*pms[i], false);
  }
  c->cur_diags = NULL;
  int bad = mlirLogicalResultIsFailure(pr);
  for (uint32_t i = 0; i < d.n; i++) {
    fprintf(stderr, "vxl: prelude/pipeline: %s\n", d.v[i]);
    free(d.v[i]);
  }
  free(d.v);
  if (bad) {
    vxl_compiler_destroy(c);
    return -EINVAL;
  }

  c->reuse_codegen = 1;
  vxl__machine *m = NULL; /* the default target's, made now: every worker compiles for it */
  int rc = vxl__machine_of(c, VXL_DEFAULT_XLEN, &m);
  if (rc == 0 && mlirModuleIsNull(vxl__prelude_of(
                     c, &(vxl_options){.vortex_abi = VXL_DEFAULT_VORTEX_ABI, .xlen = VXL_DEFAULT_XLEN})))
    rc = -EINVAL;
  if (rc != 0) {
    vxl_compiler_destroy(c);
    return rc;
  }
  *out = c;
  return 0;
}

int vxl__machine_of(vxl_compiler *c, uint32_t xlen, vxl__machine **out) {
  vxl__machine *m = &c->machine[xlen == 64];
  const vxl__target *t = &vxl__targets[xlen == 64];
  *out = m;
  if (m->tm) return 0;
  LLVMTargetRef target = NULL;
  char *err = NULL;
  if (LLVMGetTargetFromTriple(t->triple, &target, &err)) {
    fprintf(stderr, "vxl: %s\n", err);
    LLVMDisposeMessage(err);
    return -EINVAL;
  }
  LLVMTargetMachineOptionsRef o = LLVMCreateTargetMachineOptions();
  if (!o) return -ENOMEM;
  LLVMTargetMachineOptionsSetCPU(o, t->cpu);
  LLVMTargetMachineOptionsSetFeatures(o, t->features);
  LLVMTargetMachineOptionsSetABI(o, t->abi);
  LLVMTargetMachineOptionsSetRelocMode(o, LLVMRelocStatic);
  LLVMTargetMachineOptionsSetCodeModel(o, LLVMCodeModelMedium); /* medany */
  LLVMTargetMachineOptionsSetCodeGenOptLevel(o, LLVMCodeGenLevelDefault);
  m->tm = LLVMCreateTargetMachineWithOptions(target, t->triple, o);
  LLVMDisposeTargetMachineOptions(o);
  if (!m->tm) return -EINVAL;
  if (c->reuse_codegen) m->emitter = vxl_emitter_create(m->tm); /* NULL: each object through the C API */
  return 0;
}

/* The prelude's text for each kernel ABI and register width, in the order
 * of struct vxl_compiler's prelude[][]. */
static const char *const vxl__prelude_text[2][2] = {
    {VXL_PRELUDE_HARDWARE("i32"), VXL_PRELUDE_HARDWARE("i64")},
    {VXL_PRELUDE_V3("i32"), VXL_PRELUDE_V3("i64")},
};

MlirModule vxl__prelude_of(vxl_compiler *c, const vxl_options *o) {
  unsigned a = o->vortex_abi == 3, x = o->xlen == 64;
  if (mlirModuleIsNull(c->prelude[a][x])) {
    vxl__diags *saved = c->cur_diags, d = {0};
    c->cur_diags = &d;
    c->prelude[a][x] = vxl__parse_prelude(c->ctx, vxl__prelude_text[a][x]);
    c->cur_diags = saved;
    for (uint32_t i = 0; i < d.n; i++) {
      fprintf(stderr, "vxl: prelude (abi %u, xlen %u): %s\n", o->vortex_abi, o->xlen, d.v[i]);
      free(d.v[i]);
    }
    free(d.v);
  }
  return c->prelude[a][x];
}

int vxl_compiler_reuse_codegen(vxl_compiler *c, int reuse) {
  c->reuse_codegen = reuse != 0;
  for (unsigned i = 0; i < 2; i++) {
    vxl__machine *m = &c->machine[i];
    if (!reuse) {
      vxl_emitter_destroy(m->emitter);
      m->emitter = NULL;
    } else if (m->tm && !m->emitter && !(m->emitter = vxl_emitter_create(m->tm)))
      return -ENOMEM;
  }
  return 0;
}

LLVMTargetDataRef vxl__target_data(const vxl__machine *m) { return LLVMCreateTargetDataLayout(m->tm); }

void vxl_compiler_destroy(vxl_compiler *c) {
  if (!c) return;
  for (unsigned i = 0; i < 2; i++) {
    vxl_emitter_destroy(c->machine[i].emitter); /* before the target machine it uses */
    if (c->machine[i].tm) LLVMDisposeTargetMachine(c->machine[i].tm);
  }
  if (!mlirPassManagerIsNull(c->pm)) mlirPassManagerDestroy(c->pm);
  if (!mlirPassManagerIsNull(c->pm_full)) mlirPassManagerDestroy(c->pm_full);
  if (!mlirPassManagerIsNull(c->pm_prep)) mlirPassManagerDestroy(c->pm_prep);
  if (!mlirPassManagerIsNull(c->pm_outline)) mlirPassManagerDestroy(c->pm_outline);
  if (!mlirPassManagerIsNull(c->pm_host)) mlirPassManagerDestroy(c->pm_host);
  if (!mlirPassManagerIsNull(c->pm_async)) mlirPassManagerDestroy(c->pm_async);
  if (!mlirPassManagerIsNull(c->pm_host_async)) mlirPassManagerDestroy(c->pm_host_async);
  if (!mlirPassManagerIsNull(c->pm_dce)) mlirPassManagerDestroy(c->pm_dce);
  if (!mlirPassManagerIsNull(c->pm_vector)) mlirPassManagerDestroy(c->pm_vector);
  for (unsigned a = 0; a < 2; a++)
    for (unsigned x = 0; x < 2; x++)
      if (!mlirModuleIsNull(c->prelude[a][x])) mlirModuleDestroy(c->prelude[a][x]);
  for (unsigned i = 0; i < c->nviews; i++) {
    mlirOperationDestroy(c->view_ops[i]);
    free(c->view_types[i]);
  }
  if (!mlirContextIsNull(c->ctx)) mlirContextDestroy(c->ctx);
  free(c);
}

void vxl_kernel_clear(vxl_kernel *k) {
  if (!k) return;
  free(k->name);
  free(k->entry);
  for (uint32_t i = 0; i < k->nargs; i++)
    free(k->args[i].type);
  free(k->args);
  memset(k, 0, sizeof *k);
}

void vxl_result_clear(vxl_result *res) {
  if (!res) return;
  for (uint32_t i = 0; i < res->nkernels; i++)
    vxl_kernel_clear(&res->kernels[i]);
  free(res->kernels);
  free(res->object);
  for (uint32_t i = 0; i < res->ndiags; i++)
    free(res->diags[i]);
  free(res->diags);
  free(res->lowered_ir);
  memset(res, 0, sizeof *res);
}

/* Writes the layouts into the lowered MLIR module as the module attribute
 * vortex.kernel_args, so lowered IR shows them. */
static void vxl__attach_metadata(MlirModule mod, const vxl_kernel *ks, uint32_t n) {
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  if (!f) return;
  fputc('{', f);
  for (uint32_t i = 0; i < n; i++) {
    const vxl_kernel *k = &ks[i];
    fprintf(f, "%s\"%s\" = {args = [", i ? ", " : "", k->name);
    for (uint32_t j = 0; j < k->nargs; j++) {
      const vxl_arg *a = &k->args[j];
      fprintf(f,
              "%s{align = %u : i32, index = %u : i32, kind = \"%s\", offset = %u : i32, "
              "size = %u : i32, type = \"%s\"}",
              j ? ", " : "", a->align, a->index, a->kind == VXL_ARG_POINTER ? "pointer" : "scalar", a->offset,
              a->size, a->type);
    }
    fprintf(f,
            "], args_size = %u : i32, buffer_size = %u : i32, grid_dims = %u : i32, "
            "launch_offset = %u : i32, shared_bytes = %u : i32, subgroup_size = %u : i32}",
            k->args_size, k->buffer_size, k->grid_dims, k->launch_offset, k->shared_bytes, k->subgroup_size);
  }
  fputc('}', f);
  fclose(f);
  MlirOperation op = mlirModuleGetOperation(mod);
  MlirAttribute a = mlirAttributeParseGet(mlirOperationGetContext(op), mlirStringRefCreate(text, len));
  if (!mlirAttributeIsNull(a))
    mlirOperationSetAttributeByName(op, mlirStringRefCreateFromCString("vortex.kernel_args"), a);
  free(text);
}

/* A parsed source, stages 1-3 done: what every piece of it starts from. */
struct vxl_source {
  vxl_compiler *c;   /* whose context top lives in */
  MlirOperation top; /* the parsed module, never changed after parsing */
  char *source_name;
  uint32_t nkernels;
};

uint32_t vxl_piece_count(uint32_t nkernels) {
  uint32_t p = nkernels <= VXL_PIECE_KERNELS ? 1 : (nkernels - 1) / VXL_PIECE_KERNELS + 1;
  return p < VXL_MAX_PIECES ? p : VXL_MAX_PIECES;
}

void vxl_piece_range(uint32_t nkernels, uint32_t piece, uint32_t *first, uint32_t *count) {
  uint32_t p = vxl_piece_count(nkernels);
  if (piece >= p) {
    *first = nkernels, *count = 0;
    return;
  }
  uint32_t lo = (uint32_t)((uint64_t)piece * nkernels / p);
  uint32_t hi = (uint32_t)((uint64_t)(piece + 1) * nkernels / p);
  *first = lo, *count = hi - lo;
}

/* The diagnostics of a compile of source_name, naming debug_name in
 * locations (see vxl_debug_file_name). */
static vxl__diags vxl__diags_for(const char *source_name, const char *debug_name) {
  return (vxl__diags){.source_name = source_name, .debug_name = debug_name};
}

/* Moves diagnostics d into res and marks res failed, with a generic
 * message if d has none. */
static void vxl__fail(vxl__diags *d, int rc, vxl_result *res) {
  if (d->n == 0 && rc != -ENOMEM) vxl__diag_add(d, "%s: error: compilation failed", d->source_name);
  res->ok = false;
  res->diags = d->v;
  res->ndiags = d->n;
}

int vxl_source_parse(vxl_compiler *c, const char *source, size_t len, const char *source_name,
                     vxl_source **out, vxl_result *res) {
  memset(res, 0, sizeof *res);
  *out = NULL;
  if (!source_name || !*source_name) source_name = "<source>";
  char debug_name[VXL_DEBUG_FILE_MAX + 1];
  vxl_debug_file_name(source_name, debug_name);
  vxl__diags d = vxl__diags_for(source_name, debug_name);
  vxl_source *s = calloc(1, sizeof *s);
  int rc = s && (s->source_name = strdup(source_name)) ? 0 : -ENOMEM;
  c->cur_diags = &d;
  if (rc == 0) rc = vxl__parse_source(c, source, len, source_name, &d, &s->top, &s->nkernels);
  c->cur_diags = NULL;
  if (rc) {
    if (s) free(s->source_name);
    free(s);
    vxl__fail(&d, rc, res);
    return rc == -ENOMEM ? -ENOMEM : 0;
  }
  s->c = c;
  res->ok = true;
  res->diags = d.v;
  res->ndiags = d.n;
  *out = s;
  return 0;
}

uint32_t vxl_source_kernels(const vxl_source *s) { return s->nkernels; }

void vxl_source_destroy(vxl_source *s) {
  if (!s) return;
  mlirOperationDestroy(s->top);
  free(s->source_name);
  free(s);
}

/* The kernel records of a translated piece: for kinfo[i] (nk of them,
 * kernel first + i of the source), its entry symbol and its argument
 * buffer laid out by LLVM's data layout td from the translated function's
 * parameters (vxl__layout), into res->kernels.  Returns 0, -ENOMEM, or
 * -EINVAL with a diagnostic in d (a buffer over VXL_MAX_ARG_BUFFER). */
static int vxl__kernel_records(LLVMModuleRef lm, LLVMTargetDataRef td, const vxl__kernel_info *kinfo,
                               uint32_t nk, uint32_t first, const vxl_options *opts, vxl__diags *d,
                               vxl_result *res) {
  LLVMContextRef lctx = LLVMGetModuleContext(lm);
  const char *source_name = d->source_name;
  int rc = 0;
  res->kernels = calloc(nk ? nk : 1, sizeof *res->kernels);
  if (!res->kernels) return -ENOMEM;
  res->nkernels = nk;
  for (uint32_t i = 0; i < nk && rc == 0; i++) {
    vxl_kernel *k = &res->kernels[i];
    LLVMValueRef kf = LLVMGetNamedFunction(lm, kinfo[i].name);
    k->name = strdup(kinfo[i].name);
    k->kernel_id = first + i;
    if (!k->name || asprintf(&k->entry, VXL_ENTRY_PREFIX "%u", first + i) < 0) {
      k->entry = NULL;
      rc = -ENOMEM;
      break;
    }
    if (!kf) {
      vxl__diag_add(d, "%s: error: internal: kernel %s missing after translation", source_name, k->name);
      rc = -EINVAL;
      break;
    }
    LLVMTypeRef fty = LLVMGlobalGetValueType(kf);
    uint32_t np = LLVMCountParamTypes(fty);
    if (np != kinfo[i].nargs) {
      vxl__diag_add(d, "%s: error: internal: kernel %s has %u LLVM parameters for %u arguments", source_name,
                    k->name, np, kinfo[i].nargs);
      rc = -EINVAL;
      break;
    }
    LLVMTypeRef *params = malloc((np ? np : 1) * sizeof *params);
    if (!params) {
      rc = -ENOMEM;
      break;
    }
    LLVMGetParamTypes(fty, params);
    rc = vxl__layout(td, lctx, params, np, &kinfo[i], k);
    free(params);
    if (rc == 0 && k->buffer_size > VXL_MAX_ARG_BUFFER) {
      vxl__diag_at(d, kinfo[i].loc,
                   "unsupported: kernel @%s needs an argument buffer of %u bytes (at most %u)", k->name,
                   k->buffer_size, VXL_MAX_ARG_BUFFER);
      rc = -EINVAL;
      break;
    }
    k->grid_dims = kinfo[i].grid_dims ? kinfo[i].grid_dims : 1;
    memcpy(k->known_block, kinfo[i].known_block, sizeof k->known_block);
    k->shared_bytes = kinfo[i].shared_bytes;
    k->subgroup_size = opts->warp_size ? opts->warp_size : VXL_DEFAULT_WARP_SIZE;
    k->vortex_abi = opts->vortex_abi;
    k->xlen = opts->xlen;
    /* the piece's (vxl_codegen.c reads the same globals into each entry) */
    LLVMValueRef dmin = LLVMGetNamedGlobal(lm, VXL_DYNAMIC_MIN_SYMBOL),
                 per = LLVMGetNamedGlobal(lm, VXL_SCRATCH_SYMBOL);
    if (dmin && LLVMGetInitializer(dmin))
      k->dynamic_min = (uint32_t)LLVMConstIntGetZExtValue(LLVMGetInitializer(dmin));
    if (per && LLVMGetInitializer(per))
      k->scratch_bytes = (uint32_t)LLVMConstIntGetZExtValue(LLVMGetInitializer(per));
  }
  return rc;
}

/* The options' values a compile cannot start with: -EINVAL with a
 * diagnostic naming d's source, or 0. */
static int vxl__check_options(const vxl_options *opts, vxl__diags *d) {
  uint32_t w = opts->warp_size;
  if (w > 32 || (w & (w - 1))) {
    vxl__diag_add(d, "%s: error: warp size %u is not a power of two from 1 to 32", d->source_name, w);
    return -EINVAL;
  }
  if (opts->vortex_abi != 0 && opts->vortex_abi != 2 && opts->vortex_abi != 3) {
    vxl__diag_add(d, "%s: error: Vortex kernel ABI %u is not 2 or 3", d->source_name, opts->vortex_abi);
    return -EINVAL;
  }
  if (opts->xlen != 0 && opts->xlen != 32 && opts->xlen != 64) {
    vxl__diag_add(d, "%s: error: register width %u is not 32 or 64", d->source_name, opts->xlen);
    return -EINVAL;
  }
  return 0;
}

int vxl_options_check(const vxl_options *opts, const char *source_name, vxl_result *res) {
  memset(res, 0, sizeof *res);
  vxl__diags d = vxl__diags_for(source_name && *source_name ? source_name : "<source>", NULL);
  int rc = vxl__check_options(opts, &d);
  if (rc)
    vxl__fail(&d, rc, res);
  else
    res->ok = true;
  return rc;
}

/* Translates mod (the LLVM dialect) into *lm, an LLVM module in lctx for
 * the RISC-V target of register width xlen, with the data layout td and
 * DWARF 4 line tables.  0, or -EINVAL with a diagnostic. */
static int vxl__translate(MlirModule mod, LLVMContextRef lctx, LLVMTargetDataRef td, uint32_t xlen,
                          const char *source_name, vxl__diags *d, LLVMModuleRef *lm) {
  *lm = mlirTranslateModuleToLLVMIR(mlirModuleGetOperation(mod), lctx);
  if (!*lm) {
    vxl__diag_add(d, "%s: error: translation to LLVM IR failed", source_name);
    return -EINVAL;
  }
  LLVMSetTarget(*lm, vxl__targets[xlen == 64].triple);
  /* the translation sets "Debug Info Version"; the DWARF version is ours:
   * 4, not 5, whose address pool (.debug_addr) LLVM 22 heads with the
   * address size of the first object its process emitted (a static in
   * AddressPool::emitHeader), so that a worker that compiled for one
   * register width wrote the other's header wrong, and an object's bytes
   * depended on the worker's history (docs/lowering.md) */
  LLVMTypeRef i32t = LLVMInt32TypeInContext(lctx);
  LLVMAddModuleFlag(*lm, LLVMModuleFlagBehaviorWarning, "Dwarf Version", 13,
                    LLVMValueAsMetadata(LLVMConstInt(i32t, 4, 0)));
  char *dl = LLVMCopyStringRepOfTargetData(td);
  LLVMSetDataLayout(*lm, dl);
  LLVMDisposeMessage(dl);
  return 0;
}

/* mod as text into *ir (malloc()).  0 or -ENOMEM. */
static int vxl__print_ir(MlirModule mod, char **ir) {
  vxl__buf b = {0};
  mlirOperationPrint(mlirModuleGetOperation(mod), vxl__buf_append, &b);
  if (b.oom) {
    free(b.p);
    return -ENOMEM;
  }
  *ir = b.p;
  return 0;
}

/* Compiles kernels first .. first + count - 1 of s into res: with
 * want_ir, only as far as the lowered MLIR (res->lowered_ir, no object),
 * else into the piece's object. */
static int vxl__compile_range(vxl_compiler *c, const vxl_source *s, uint32_t first, uint32_t count,
                              const vxl_options *opts, int want_ir, vxl_result *res) {
  memset(res, 0, sizeof *res);
  const char *source_name = s->source_name;
  char debug_name[VXL_DEBUG_FILE_MAX + 1];
  vxl_debug_file_name(source_name, debug_name);
  vxl__diags d = vxl__diags_for(source_name, debug_name);
  if (s->c != c) {
    vxl__diag_add(&d, "%s: error: internal: compiled with another compiler than it was parsed with",
                  source_name);
    vxl__fail(&d, -EINVAL, res);
    return 0;
  }
  MlirModule mod = {0};
  vxl__kernel_info *kinfo = NULL;
  uint32_t nk = 0;
  LLVMContextRef lctx = NULL;
  LLVMModuleRef lm = NULL;
  LLVMTargetDataRef td = NULL;
  vxl__machine *mc = NULL;
  vxl_options o = vxl__resolved(opts);
  opts = &o; /* from here on every default is explicit */

  c->cur_diags = &d;
  vxl__llvm_diags llvm_diags = {&d, source_name, 0};
  int rc = 0;
  if ((rc = vxl__check_options(opts, &d)) != 0) goto done;
  if ((rc = vxl__machine_of(c, opts->xlen, &mc)) != 0) {
    vxl__diag_add(&d, "%s: error: internal: no target machine for RV%u", source_name, opts->xlen);
    goto done;
  }
  /* one LLVM context per compile: the MLIR side sizes workgroup buffers
   * with it, then the module is translated into it */
  lctx = LLVMContextCreate();
  LLVMContextSetDiagnosticHandler(lctx, vxl__llvm_diagnostic, &llvm_diags);
  td = vxl__target_data(mc);
  MlirModule prelude = vxl__prelude_of(c, opts);
  if (mlirModuleIsNull(prelude)) {
    vxl__diag_add(&d, "%s: error: internal: the device-ABI helpers of Vortex %u on RV%u do not parse",
                  source_name, opts->vortex_abi, opts->xlen);
    rc = -EINVAL;
    goto done;
  }
  rc = vxl__lower_to_llvm_dialect(c, s->top, first, count, source_name, opts, prelude, lctx, td, &d, &mod,
                                  &kinfo, &nk);
  if (rc) goto done;

  if ((rc = vxl__translate(mod, lctx, td, opts->xlen, source_name, &d, &lm)) != 0) goto done;
  rc = vxl__kernel_records(lm, td, kinfo, nk, first, opts, &d, res);
  if (rc) goto done;

  if (want_ir) { /* only the printed IR shows the attribute: not built otherwise */
    vxl__attach_metadata(mod, res->kernels, nk);
    rc = vxl__print_ir(mod, &res->lowered_ir);
    goto done;
  }
  /* The MLIR module is done with: freeing it before LLVM's pipeline keeps
   * the heap that pipeline walks small (a 256-kernel module's O2 ran 20%
   * slower per kernel with it still alive). */
  mlirModuleDestroy(mod);
  mod = (MlirModule){NULL};
  rc = vxl__emit_object(mc, lm, res->kernels, nk, first, s->nkernels, opts, &res->object, &res->object_size,
                        &d);
  if (rc == 0 && llvm_diags.errors) { /* LLVM reported errors and went on: no object */
    free(res->object);
    res->object = NULL;
    res->object_size = 0;
    rc = -EINVAL;
  }

done:
  c->cur_diags = NULL;
  if (lm) LLVMDisposeModule(lm);
  if (td) LLVMDisposeTargetData(td);
  if (lctx) LLVMContextDispose(lctx);
  if (!mlirModuleIsNull(mod)) mlirModuleDestroy(mod);
  for (uint32_t i = 0; i < nk; i++)
    vxl__kernel_info_clear(&kinfo[i]);
  free(kinfo);
  res->ok = (rc == 0);
  res->diags = d.v;
  res->ndiags = d.n;
  if (rc) {
    for (uint32_t i = 0; i < res->nkernels; i++)
      vxl_kernel_clear(&res->kernels[i]);
    free(res->kernels);
    res->kernels = NULL;
    res->nkernels = 0;
    free(res->object);
    res->object = NULL;
    res->object_size = 0;
    vxl__fail(&d, rc, res);
  }
  return rc == -ENOMEM ? -ENOMEM : 0;
}

int vxl_compile_piece(vxl_compiler *c, const vxl_source *s, uint32_t piece, const vxl_options *opts,
                      vxl_result *res) {
  uint32_t first, count;
  vxl_piece_range(s->nkernels, piece, &first, &count);
  if (count == 0) {
    memset(res, 0, sizeof *res);
    vxl__diags d = vxl__diags_for(s->source_name, NULL);
    vxl__diag_add(&d, "%s: error: internal: a %u-kernel module has no piece %u", s->source_name, s->nkernels,
                  piece);
    vxl__fail(&d, -EINVAL, res);
    return 0;
  }
  return vxl__compile_range(c, s, first, count, opts, 0, res);
}

int vxl_piece_inputs(vxl_compiler *c, const vxl_source *s, uint32_t piece, char **out, size_t *len) {
  *out = NULL, *len = 0;
  uint32_t first, count;
  vxl_piece_range(s->nkernels, piece, &first, &count);
  if (count == 0 || s->c != c) return -EINVAL;
  vxl__buf b = {0};
  char head[96];
  snprintf(head, sizeof head, "vortexd piece inputs 1: kernels=%u piece=%u first=%u count=%u\n", s->nkernels,
           piece, first, count);
  vxl__buf_append(mlirStringRefCreateFromCString(head), &b);
  int rc = vxl__piece_inputs(c, s->top, first, count, &b);
  if (rc || b.oom) {
    free(b.p);
    return -ENOMEM;
  }
  *out = b.p, *len = b.n;
  return 0;
}

int vxl_source_lowered_ir(vxl_compiler *c, const vxl_source *s, const vxl_options *opts, char **ir) {
  vxl_result r;
  *ir = NULL;
  int rc = vxl__compile_range(c, s, 0, s->nkernels, opts, 1, &r);
  if (rc == 0 && r.ok)
    *ir = r.lowered_ir, r.lowered_ir = NULL;
  else if (rc == 0)
    rc = -EINVAL;
  vxl_result_clear(&r);
  return rc;
}

void vxl_compiler_set_merge(vxl_compiler *c, vxl_merge_fn merge, void *ud) {
  c->merge = merge;
  c->merge_ud = ud;
}

/* Appends diagnostic text to d unless d already holds the same line (each
 * piece reports what is wrong outside its kernels again). */
static int vxl__diag_take(vxl__diags *d, char *text) {
  for (uint32_t i = 0; i < d->n; i++)
    if (strcmp(d->v[i], text) == 0) {
      free(text);
      return 0;
    }
  return vxl__diag_push(d, text);
}

int vxl_result_merge(vxl_result *pieces, uint32_t n, vxl_merge_fn merge, void *merge_ud, vxl_result *res) {
  assert(n > 0 && n <= VXL_MAX_PIECES);
  memset(res, 0, sizeof *res);
  vxl__diags d = {.source_name = "<source>"};
  int rc = 0;
  bool ok = n > 0;
  uint32_t nk = 0;
  for (uint32_t i = 0; i < n; i++) {
    ok = ok && pieces[i].ok;
    nk += pieces[i].nkernels;
    for (uint32_t j = 0; j < pieces[i].ndiags; j++) {
      if (rc == 0)
        rc = vxl__diag_take(&d, pieces[i].diags[j]);
      else
        free(pieces[i].diags[j]);
    }
    free(pieces[i].diags);
    pieces[i].diags = NULL;
    pieces[i].ndiags = 0;
  }
  if (ok && rc == 0 && n == 1) { /* one piece is the whole module */
    *res = pieces[0];
    memset(&pieces[0], 0, sizeof pieces[0]);
  } else if (ok && rc == 0) {
    const uint8_t **objs = calloc(n, sizeof *objs);
    size_t *sizes = calloc(n, sizeof *sizes);
    res->kernels = calloc(nk ? nk : 1, sizeof *res->kernels);
    if (!objs || !sizes || !res->kernels) rc = -ENOMEM;
    char err[512] = "";
    if (rc == 0 && !merge) {
      snprintf(err, sizeof err, "no way to link its pieces was given");
      rc = -EINVAL;
    }
    for (uint32_t i = 0; rc == 0 && i < n; i++)
      objs[i] = pieces[i].object, sizes[i] = pieces[i].object_size;
    if (rc == 0) rc = merge(merge_ud, n, objs, sizes, &res->object, &res->object_size, err, sizeof err);
    if (rc && rc != -ENOMEM)
      vxl__diag_add(&d, "error: internal: linking the %u pieces of a %u-kernel module failed: %s", n, nk,
                    err);
    free(objs);
    free(sizes);
    /* the pieces' kernel records, in piece order */
    for (uint32_t i = 0; rc == 0 && i < n; i++) {
      memcpy(res->kernels + res->nkernels, pieces[i].kernels, pieces[i].nkernels * sizeof *res->kernels);
      res->nkernels += pieces[i].nkernels;
      free(pieces[i].kernels);
      pieces[i].kernels = NULL;
      pieces[i].nkernels = 0;
    }
    res->ok = rc == 0;
  }
  if (!res->ok) {
    free(res->object);
    free(res->kernels);
    res->object = NULL, res->kernels = NULL;
    res->object_size = 0, res->nkernels = 0;
    if (d.n == 0 && rc != -ENOMEM) vxl__diag_add(&d, "error: compilation failed");
  }
  res->diags = d.v;
  res->ndiags = d.n;
  for (uint32_t i = 0; i < n; i++)
    vxl_result_clear(&pieces[i]);
  return rc == -ENOMEM ? -ENOMEM : 0;
}

int vxl_compile(vxl_compiler *c, const char *source, size_t len, const char *source_name,
                const vxl_options *opts, vxl_result *res) {
  if (vxl_options_check(opts, source_name, res) != 0) return 0;
  vxl_result_clear(res);
  vxl_source *s = NULL;
  int rc = vxl_source_parse(c, source, len, source_name, &s, res);
  if (rc || !res->ok) return rc;
  vxl_result_clear(res);
  uint32_t n = vxl_piece_count(s->nkernels);
  vxl_result *pieces = calloc(n, sizeof *pieces);
  if (!pieces) {
    vxl_source_destroy(s);
    return -ENOMEM;
  }
  for (uint32_t i = 0; i < n && rc == 0; i++)
    rc = vxl_compile_piece(c, s, i, opts, &pieces[i]);
  if (rc == 0) rc = vxl_result_merge(pieces, n, c->merge, c->merge_ud, res);
  if (rc == 0 && res->ok && opts->emit_ir) rc = vxl_source_lowered_ir(c, s, opts, &res->lowered_ir);
  if (rc == -EINVAL) rc = 0; /* the objects are there; the IR is not */
  vxl_source_destroy(s);
  for (uint32_t i = 0; i < n; i++)
    vxl_result_clear(&pieces[i]);
  free(pieces);
  return rc;
}

int vxl_layout_from_types(const char *const *mlir_types, uint32_t n, uint32_t xlen, vxl_kernel *k) {
  /* A private context and target machine: this entry point exists for the
   * unit tests and tools, and must not disturb any compiler's state. */
  vxl_compiler *c = NULL;
  vxl__machine *mc = NULL;
  if (xlen != 32 && xlen != 64) return -EINVAL;
  int rc = vxl_compiler_create(&c);
  if (rc) return rc;
  if ((rc = vxl__machine_of(c, xlen, &mc)) != 0) {
    vxl_compiler_destroy(c);
    return rc;
  }
  LLVMContextRef lctx = LLVMContextCreate();
  MlirTypeToLLVMIRTranslator tr = mlirTypeToLLVMIRTranslatorCreate(lctx);
  LLVMTypeRef *params = calloc(n ? n : 1, sizeof *params);
  char **names = calloc(n ? n : 1, sizeof *names);
  uint32_t *ranks = calloc(n ? n : 1, sizeof *ranks), *elems = calloc(n ? n : 1, sizeof *elems);
  if (!params || !names || !ranks || !elems) rc = -ENOMEM;
  for (uint32_t i = 0; i < n && rc == 0; i++) {
    names[i] = (char *)mlir_types[i];
    MlirType t = mlirTypeParseGet(c->ctx, mlirStringRefCreateFromCString(mlir_types[i]));
    if (mlirTypeIsNull(t)) {
      rc = -EINVAL;
      break;
    }
    vxl__memref_host_info(t, &ranks[i], &elems[i]);
    /* the same type mapping the kernel signature rewrite applies */
    if (mlirTypeIsAMemRef(t))
      t = mlirLLVMPointerTypeGet(c->ctx, 0);
    else if (mlirTypeIsAIndex(t))
      t = mlirIntegerTypeGet(c->ctx, 32);
    params[i] = mlirTypeToLLVMIRTranslatorTranslateType(tr, t);
    if (!params[i]) rc = -EINVAL;
  }
  LLVMTargetDataRef td = vxl__target_data(mc);
  vxl__kernel_info ki = {.nargs = n, .arg_types = names, .arg_rank = ranks, .arg_elem = elems};
  if (rc == 0) rc = vxl__layout(td, lctx, params, n, &ki, k);
  LLVMDisposeTargetData(td);
  free(params);
  free(names);
  free(ranks);
  free(elems);
  mlirTypeToLLVMIRTranslatorDestroy(tr);
  LLVMContextDispose(lctx);
  vxl_compiler_destroy(c);
  return rc;
}

int vxl_lower_host(vxl_compiler *c, const char *source, size_t len, const char *source_name,
                   const vxl_options *opts, vxl_module_key_fn key_of, void *key_ud, vxl_host_result *res) {
  memset(res, 0, sizeof *res);
  if (!source_name || !*source_name) source_name = "<source>";
  vxl__diags d = {.source_name = source_name};
  c->cur_diags = &d;
  int rc =
      vxl__lower_host(c, source, len, source_name, opts, key_of, key_ud, &d, &res->host_ir, &res->nmodules);
  c->cur_diags = NULL;
  res->ok = rc == 0;
  res->diags = d.v;
  res->ndiags = d.n;
  return rc == -ENOMEM ? rc : 0;
}

void vxl_host_result_clear(vxl_host_result *res) {
  if (!res) return;
  free(res->host_ir);
  for (uint32_t i = 0; i < res->ndiags; i++)
    free(res->diags[i]);
  free(res->diags);
  memset(res, 0, sizeof *res);
}

/* Adds to lm a function named run of type i32 () that calls entry (a
 * function of lm without parameters, returning what result says), prints
 * its result as mlir-runner's --entry-point-result does (llvm::outs() <<
 * value: an integer in decimal; an f32 as %e, or nan, INF, -INF) with
 * printf, and returns 0.  Returns 0, or -ENOENT with a message in err. */
static int vxl__add_run_entry(LLVMModuleRef lm, const char *entry, vxl_entry_result result, const char *run,
                              char *err, size_t errcap) {
  static const char *const names[] = {"void", "i32", "i64", "f32"};
  LLVMValueRef fn = LLVMGetNamedFunction(lm, entry);
  if (!fn || LLVMIsDeclaration(fn)) {
    snprintf(err, errcap, "the program defines no function @%s to run", entry);
    return -ENOENT;
  }
  if (LLVMGetNamedFunction(lm, run) || LLVMGetNamedGlobal(lm, run)) {
    snprintf(err, errcap, "the program defines @%s, the name vortexd's entry wrapper needs", run);
    return -ENOENT;
  }
  LLVMTypeRef fty = LLVMGlobalGetValueType(fn), rty = LLVMGetReturnType(fty);
  LLVMTypeKind k = LLVMGetTypeKind(rty);
  int fits =
      result == VXL_RESULT_VOID ? k == LLVMVoidTypeKind
      : result == VXL_RESULT_F32
          ? k == LLVMFloatTypeKind
          : k == LLVMIntegerTypeKind && LLVMGetIntTypeWidth(rty) == (result == VXL_RESULT_I32 ? 32u : 64u);
  if (LLVMCountParamTypes(fty) != 0 || LLVMIsFunctionVarArg(fty) || !fits) {
    char *have = LLVMPrintTypeToString(fty);
    snprintf(err, errcap, "@%s is %s; the function run must take no arguments and return %s", entry, have,
             names[result]);
    LLVMDisposeMessage(have);
    return -ENOENT;
  }
  LLVMContextRef lctx = LLVMGetModuleContext(lm);
  LLVMTypeRef i32 = LLVMInt32TypeInContext(lctx), ptr = LLVMPointerTypeInContext(lctx, 0);
  LLVMTypeRef dbl = LLVMDoubleTypeInContext(lctx);
  LLVMValueRef main_fn = LLVMAddFunction(lm, run, LLVMFunctionType(i32, NULL, 0, 0));
  LLVMBuilderRef b = LLVMCreateBuilderInContext(lctx);
  LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(lctx, main_fn, "entry"));
  LLVMValueRef v = LLVMBuildCall2(b, fty, fn, NULL, 0, "");
  if (result != VXL_RESULT_VOID) {
    LLVMTypeRef printf_ty = LLVMFunctionType(i32, &ptr, 1, 1);
    LLVMValueRef pf = LLVMGetNamedFunction(lm, "printf");
    if (!pf) pf = LLVMAddFunction(lm, "printf", printf_ty);
    LLVMValueRef args[2];
    if (result == VXL_RESULT_F32) {
      /* llvm::write_double's spelling of the values %e spells otherwise */
      LLVMValueRef d = LLVMBuildFPExt(b, v, dbl, "");
      LLVMValueRef isnan = LLVMBuildFCmp(b, LLVMRealUNO, d, d, "");
      LLVMValueRef pinf = LLVMBuildFCmp(b, LLVMRealOEQ, d, LLVMConstReal(dbl, __builtin_inf()), "");
      LLVMValueRef ninf = LLVMBuildFCmp(b, LLVMRealOEQ, d, LLVMConstReal(dbl, -__builtin_inf()), "");
      LLVMValueRef fmt = LLVMBuildGlobalStringPtr(b, "%e\n", "");
      fmt = LLVMBuildSelect(b, pinf, LLVMBuildGlobalStringPtr(b, "INF\n", ""), fmt, "");
      fmt = LLVMBuildSelect(b, ninf, LLVMBuildGlobalStringPtr(b, "-INF\n", ""), fmt, "");
      fmt = LLVMBuildSelect(b, isnan, LLVMBuildGlobalStringPtr(b, "nan\n", ""), fmt, "");
      args[0] = fmt, args[1] = d;
    } else {
      args[0] = LLVMBuildGlobalStringPtr(b, result == VXL_RESULT_I32 ? "%d\n" : "%lld\n", "");
      args[1] = v;
    }
    LLVMBuildCall2(b, printf_ty, pf, args, 2, "");
  }
  LLVMBuildRet(b, LLVMConstInt(i32, 0, 0));
  LLVMDisposeBuilder(b);
  return 0;
}

int vxl_emit_host_bitcode(vxl_compiler *c, const char *host_ir, size_t len, const vxl_run_entry *run,
                          uint8_t **out, size_t *size, char *err, size_t errcap) {
  *out = NULL;
  *size = 0;
  vxl__diags d = {.source_name = "<host>"};
  c->cur_diags = &d;
  MlirModule m = mlirModuleCreateParse(c->ctx, (MlirStringRef){host_ir, len});
  c->cur_diags = NULL;
  int rc = -EINVAL;
  LLVMContextRef lctx = NULL;
  LLVMModuleRef lm = NULL;
  LLVMMemoryBufferRef mb = NULL;
  if (mlirModuleIsNull(m)) {
    snprintf(err, errcap, "host module does not parse: %s", d.n ? d.v[0] : "");
    goto done;
  }
  lctx = LLVMContextCreate();
  c->cur_diags = &d;
  lm = mlirTranslateModuleToLLVMIR(mlirModuleGetOperation(m), lctx);
  c->cur_diags = NULL;
  if (!lm) {
    snprintf(err, errcap, "host module does not translate to LLVM IR: %s", d.n ? d.v[0] : "");
    goto done;
  }
  if (run && (rc = vxl__add_run_entry(lm, run->entry ? run->entry : "main", run->result, run->name, err,
                                      errcap)) != 0)
    goto done;
  rc = -ENOMEM;
  if (!(mb = LLVMWriteBitcodeToMemoryBuffer(lm))) {
    snprintf(err, errcap, "host module: writing its bitcode failed");
    goto done;
  }
  *size = LLVMGetBufferSize(mb);
  *out = malloc(*size ? *size : 1);
  if (*out) memcpy(*out, LLVMGetBufferStart(mb), *size);
  LLVMDisposeMemoryBuffer(mb);
  rc = *out ? 0 : -ENOMEM;
done:
  for (uint32_t i = 0; i < d.n; i++)
    free(d.v[i]);
  free(d.v);
  if (lm) LLVMDisposeModule(lm);
  if (lctx) LLVMContextDispose(lctx);
  if (!mlirModuleIsNull(m)) mlirModuleDestroy(m);
  return rc;
}
