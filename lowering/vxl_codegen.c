/*
 * vxl_codegen.c - argument-buffer layout, Vortex kernel entry, objects
 * (LLVM side of the lowering).
 *
 * Argument buffer (docs/PROTOCOL.md, "Argument buffer"): the kernel's arguments in gpu.func order at their
 * natural RV32 offsets from 0, then the launch header {grid_dim[3], block_dim[3], dynamic shared-memory
 * bytes} (all u32), the whole buffer padded to 8. Every offset, size and alignment comes from the target's
 * LLVM data layout applied to ONE LLVM struct type (vxl__buffer_type); the generated entry reads the
 * arguments through struct GEPs on that same type, so the layout the host is told and the layout the device
 * reads cannot disagree (a second, hand-written rule is how such layouts drift apart).
 *
 * Entry convention (Vortex kernel/src/vx_start.S and vx_spawn.h, see
 * docs/VORTEX_ABI.md): on Vortex 2.x, `main` reads the argument-buffer
 * address from CSR mscratch and returns
 *   vx_spawn_threads(3, &buf->grid_dim, &buf->block_dim, body, buf);
 * on Vortex 3.0, every warp of a block enters `kernel_main(buf)` (the
 * startup code passes mscratch in a0), which calls body(buf) itself.
 * `body(buf)` loads each argument from the buffer and calls the kernel.
 */
#define _GNU_SOURCE /* asprintf */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Analysis.h>
#include <llvm-c/Core.h>
#include <llvm-c/Error.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include <llvm-c/DebugInfo.h>

#include "vxl_internal.h"

LLVMTypeRef vxl__buffer_type(LLVMContextRef lctx, LLVMTypeRef *params, uint32_t n) {
  LLVMTypeRef i32 = LLVMInt32TypeInContext(lctx);
  LLVMTypeRef dim3 = LLVMArrayType2(i32, 3);
  LLVMTypeRef hdr_fields[3] = {dim3, dim3, i32};
  LLVMTypeRef hdr = LLVMStructTypeInContext(lctx, hdr_fields, 3, 0);
  LLVMTypeRef *fields = malloc((n + 1) * sizeof *fields);
  if (!fields) return NULL;
  for (uint32_t i = 0; i < n; i++)
    fields[i] = params[i];
  fields[n] = hdr;
  LLVMTypeRef s = LLVMStructTypeInContext(lctx, fields, n + 1, 0);
  free(fields);
  return s;
}

static int vxl__is_pointer_type(const char *mlir_type) {
  return strncmp(mlir_type, "memref<", 7) == 0 || strncmp(mlir_type, "!llvm.ptr", 9) == 0;
}

int vxl__layout(LLVMTargetDataRef td, LLVMContextRef lctx, LLVMTypeRef *params, uint32_t n,
                const vxl__kernel_info *ki, vxl_kernel *k) {
  char *const *mlir_types = ki->arg_types;
  LLVMTypeRef s = vxl__buffer_type(lctx, params, n);
  if (!s) return -ENOMEM;
  vxl_arg *args = calloc(n ? n : 1, sizeof *args);
  if (!args) return -ENOMEM;
  uint32_t end = 0;
  for (uint32_t i = 0; i < n; i++) {
    args[i].index = i;
    args[i].type = strdup(mlir_types[i]);
    if (!args[i].type) {
      for (uint32_t j = 0; j < i; j++)
        free(args[j].type);
      free(args);
      return -ENOMEM;
    }
    args[i].kind = vxl__is_pointer_type(mlir_types[i]) ? VXL_ARG_POINTER : VXL_ARG_SCALAR;
    args[i].size = (uint32_t)LLVMStoreSizeOfType(td, params[i]);
    args[i].align = LLVMABIAlignmentOfType(td, params[i]);
    args[i].offset = (uint32_t)LLVMOffsetOfElement(td, s, i);
    args[i].rank = ki->arg_rank[i];
    args[i].elem_size = ki->arg_elem[i];
    end = args[i].offset + args[i].size;
  }
  k->args = args;
  k->nargs = n;
  k->args_size = end;
  k->launch_offset = (uint32_t)LLVMOffsetOfElement(td, s, n);
  uint64_t total = LLVMABISizeOfType(td, s);
  /* past 4 GiB it cannot be named in 32 bits: UINT32_MAX, which the caller
   * refuses as too large (VXL_MAX_ARG_BUFFER) */
  k->buffer_size = total > UINT32_MAX - 7u ? UINT32_MAX : (uint32_t)((total + 7) & ~(uint64_t)7);
  return 0;
}

/* Gives each fns[i] (which calls, at calls[i], the kernel kf or a function
 * that inlines it) a line-table subprogram of its own at the kernel's line,
 * in a compile unit of their own, when kf has one: the inliner keeps the
 * kernel's source locations only inside a function with debug info, so the
 * object then maps the kernel's code to its source lines wherever the
 * kernel ends up inlined (the body, and on kernel ABI 3 the entry). */
static void vxl__debug_entry(LLVMModuleRef m, LLVMValueRef kf, uint32_t n, const LLVMValueRef *fns,
                             const LLVMValueRef *calls) {
  LLVMMetadataRef ksp = LLVMGetSubprogram(kf);
  if (!ksp) return;
  LLVMDIBuilderRef dib = LLVMCreateDIBuilder(m);
  LLVMMetadataRef file = LLVMDIScopeGetFile(ksp);
  static const char producer[] = "vortexd";
  LLVMDIBuilderCreateCompileUnit(dib, LLVMDWARFSourceLanguageC, file, producer, sizeof producer - 1, 1, "", 0,
                                 0, "", 0, LLVMDWARFEmissionLineTablesOnly, 0, 0, 0, "", 0, "", 0);
  LLVMMetadataRef ty = LLVMDIBuilderCreateSubroutineType(dib, file, NULL, 0, LLVMDIFlagZero);
  unsigned line = LLVMDISubprogramGetLine(ksp);
  for (uint32_t i = 0; i < n; i++) {
    size_t nlen = 0;
    const char *name = LLVMGetValueName2(fns[i], &nlen);
    LLVMMetadataRef sp = LLVMDIBuilderCreateFunction(dib, file, name, nlen, name, nlen, file, line, ty, 1, 1,
                                                     line, LLVMDIFlagZero, 1);
    LLVMSetSubprogram(fns[i], sp);
    LLVMInstructionSetDebugLoc(calls[i],
                               LLVMDIBuilderCreateDebugLocation(LLVMGetModuleContext(m), line, 0, sp, NULL));
  }
  LLVMDIBuilderFinalize(dib);
  LLVMDisposeDIBuilder(dib);
}

/* Reads CSR mscratch (the argument buffer, or the launch record, Vortex's
 * startup code leaves there) as a pointer, on a device of xlen-bit
 * registers. */
static LLVMValueRef vxl__read_mscratch(LLVMBuilderRef b, LLVMContextRef lctx, uint32_t xlen) {
  const char *asmtext = "csrr $0, mscratch", *cons = "=r";
  LLVMTypeRef aty = LLVMFunctionType(LLVMIntTypeInContext(lctx, xlen), NULL, 0, 0);
  LLVMValueRef ia =
      LLVMGetInlineAsm(aty, asmtext, strlen(asmtext), cons, strlen(cons), 1, 0, LLVMInlineAsmDialectATT, 0);
  LLVMValueRef raw = LLVMBuildCall2(b, aty, ia, NULL, 0, "mscratch");
  return LLVMBuildIntToPtr(b, raw, LLVMPointerTypeInContext(lctx, 0), "args");
}

/* Adds `void __vxl_body_<index>(ptr buf)` and the entry for kernel kf, whose
 * static workgroup memory is static_bytes per block, on a device of
 * xlen-bit registers (the argument buffer's address is that wide):
 * `i32 <entry>(ptr buf)`, what the module's dispatcher calls when it has
 * one (dispatched) and what the startup code calls as kernel_main on
 * kernel ABI 3; else, on 2, `i32 <entry>()`, what it calls as main, the
 * buffer read from mscratch. */
static void vxl__add_entry(LLVMModuleRef m, LLVMValueRef kf, uint32_t index, const char *entry,
                           uint32_t static_bytes, uint32_t xlen, uint32_t abi, int dispatched) {
  LLVMContextRef lctx = LLVMGetModuleContext(m);
  LLVMTypeRef kty = LLVMGlobalGetValueType(kf);
  uint32_t n = LLVMCountParamTypes(kty);
  LLVMTypeRef *params = malloc((n ? n : 1) * sizeof *params);
  LLVMValueRef *vals = malloc((n ? n : 1) * sizeof *vals);
  LLVMGetParamTypes(kty, params);
  LLVMTypeRef bufty = vxl__buffer_type(lctx, params, n);
  LLVMTypeRef ptr = LLVMPointerTypeInContext(lctx, 0);
  LLVMTypeRef i32 = LLVMInt32TypeInContext(lctx);
  LLVMTypeRef voidty = LLVMVoidTypeInContext(lctx);
  LLVMBuilderRef b = LLVMCreateBuilderInContext(lctx);

  /* body: load each argument at its layout offset, call the kernel */
  LLVMTypeRef bodyty = LLVMFunctionType(voidty, &ptr, 1, 0);
  char bodyname[32];
  snprintf(bodyname, sizeof bodyname, "__vxl_body_%u", index);
  LLVMValueRef body = LLVMAddFunction(m, bodyname, bodyty);
  LLVMSetLinkage(body, LLVMInternalLinkage);
  LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(lctx, body, "entry"));
  LLVMValueRef buf = LLVMGetParam(body, 0);
  for (uint32_t i = 0; i < n; i++) {
    LLVMValueRef p = LLVMBuildStructGEP2(b, bufty, buf, i, "");
    vals[i] = LLVMBuildLoad2(b, params[i], p, "");
  }
  LLVMValueRef kcall = LLVMBuildCall2(b, kty, kf, vals, n, "");
  LLVMBuildRetVoid(b);

  /* entry: the argument buffer (its parameter, or 2.x's mscratch) */
  const int takes_args = abi == 3 || dispatched;
  LLVMValueRef mainfn = LLVMAddFunction(m, entry, LLVMFunctionType(i32, &ptr, takes_args, 0));
  LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(lctx, mainfn, "entry"));
  LLVMValueRef args = takes_args ? LLVMGetParam(mainfn, 0) : vxl__read_mscratch(b, lctx, xlen);
  LLVMTypeRef hdrty = LLVMStructGetTypeAtIndex(bufty, n);
  LLVMValueRef hdr = LLVMBuildStructGEP2(b, bufty, args, n, "launch");
  LLVMValueRef grid = LLVMBuildStructGEP2(b, hdrty, hdr, 0, "grid_dim");
  LLVMValueRef block = LLVMBuildStructGEP2(b, hdrty, hdr, 1, "block_dim");
  /* local memory per group = static + dynamic shared bytes of this launch
   * (read by __vxl_local_base / __vxl_dynamic_base in the prelude) */
  LLVMValueRef dynp = LLVMBuildStructGEP2(b, hdrty, hdr, 2, "dynamic_shared");
  LLVMValueRef dyn = LLVMBuildLoad2(b, i32, dynp, "");
  LLVMValueRef dmin = LLVMGetNamedGlobal(m, VXL_DYNAMIC_MIN_SYMBOL);
  if (dmin && LLVMGetInitializer(dmin)) {
    LLVMValueRef lo = LLVMGetInitializer(dmin);
    dyn = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntULT, dyn, lo, ""), lo, dyn, "dynamic_bytes");
  }
  LLVMValueRef stat = LLVMConstInt(i32, static_bytes, 0);
  LLVMValueRef gb = LLVMGetNamedGlobal(m, "__vxl_group_bytes");
  LLVMValueRef sb = LLVMGetNamedGlobal(m, "__vxl_static_bytes");
  LLVMValueRef group = LLVMBuildAdd(b, stat, dyn, "");
  /* collectives: 8-aligned scratch after the dynamic area, so many bytes
   * per thread of the block (vxl_subgroup.c) */
  LLVMValueRef per = LLVMGetNamedGlobal(m, VXL_SCRATCH_SYMBOL);
  LLVMValueRef so = LLVMGetNamedGlobal(m, "__vxl_scratch_offset");
  if (per && LLVMGetInitializer(per)) {
    LLVMValueRef off = LLVMBuildAnd(b, LLVMBuildAdd(b, group, LLVMConstInt(i32, 7, 0), ""),
                                    LLVMConstInt(i32, ~7u, 0), "scratch_offset");
    LLVMTypeRef dim3 = LLVMArrayType2(i32, 3);
    LLVMValueRef threads = LLVMConstInt(i32, 1, 0);
    for (unsigned d = 0; d < 3; d++) {
      LLVMValueRef idx[2] = {LLVMConstInt(i32, 0, 0), LLVMConstInt(i32, d, 0)};
      LLVMValueRef p = LLVMBuildGEP2(b, dim3, block, idx, 2, "");
      threads = LLVMBuildMul(b, threads, LLVMBuildLoad2(b, i32, p, ""), "");
    }
    group = LLVMBuildAdd(b, off, LLVMBuildMul(b, threads, LLVMGetInitializer(per), ""), "");
    if (so) LLVMBuildStore(b, off, so);
  }
  /* groups start 16-aligned, so what is aligned in one is in every one */
  group = LLVMBuildAnd(b, LLVMBuildAdd(b, group, LLVMConstInt(i32, 15, 0), ""), LLVMConstInt(i32, ~15u, 0),
                       "group_bytes");
  if (gb) LLVMBuildStore(b, group, gb);
  if (sb) LLVMBuildStore(b, stat, sb);
  if (abi == 3) { /* this warp's threads, in lockstep: the block is the hardware's */
    LLVMValueRef bcall = LLVMBuildCall2(b, bodyty, body, &args, 1, "");
    LLVMBuildRet(b, LLVMConstInt(i32, 0, 0));
    vxl__debug_entry(m, kf, 2, (LLVMValueRef[]){body, mainfn}, (LLVMValueRef[]){kcall, bcall});
    LLVMDisposeBuilder(b);
    free(params);
    free(vals);
    return;
  }
  LLVMTypeRef spty_params[5] = {i32, ptr, ptr, ptr, ptr};
  LLVMTypeRef spty = LLVMFunctionType(i32, spty_params, 5, 0);
  LLVMValueRef spawn = LLVMGetNamedFunction(m, "vx_spawn_threads");
  if (!spawn) spawn = LLVMAddFunction(m, "vx_spawn_threads", spty);
  LLVMValueRef sargs[5] = {LLVMConstInt(i32, 3, 0), grid, block, body, args};
  LLVMValueRef r = LLVMBuildCall2(b, spty, spawn, sargs, 5, "");
  LLVMBuildRet(b, r);
  vxl__debug_entry(m, kf, 1, &body, &kcall);

  LLVMDisposeBuilder(b);
  free(params);
  free(vals);
}

/* Adds the module's dispatcher, VXL_DISPATCH_SYMBOL, to piece 0 of a
 * module of total kernels (on kernel ABI abi, xlen-bit registers): its
 * argument is a launch record (2.x: from mscratch, as main; 3.0: the
 * parameter, as kernel_main), a u32 kernel id at offset 0 and the
 * kernel's argument buffer at VXL_LAUNCH_RECORD_BYTES; it calls that
 * kernel's entry with the buffer and returns what it returns, or -1 for
 * an id past the table.  The table is an internal
 * constant array of the entries, those of other pieces declared here and
 * resolved when the pieces are linked.  One image of the module then
 * runs any of its kernels. */
static void vxl__add_dispatcher(LLVMModuleRef m, uint32_t total, uint32_t xlen, uint32_t abi) {
  LLVMContextRef lctx = LLVMGetModuleContext(m);
  LLVMTypeRef ptr = LLVMPointerTypeInContext(lctx, 0);
  LLVMTypeRef i32 = LLVMInt32TypeInContext(lctx);
  LLVMTypeRef i8 = LLVMInt8TypeInContext(lctx);
  LLVMTypeRef entryty = LLVMFunctionType(i32, &ptr, 1, 0);
  LLVMValueRef *fns = malloc((total ? total : 1) * sizeof *fns);
  if (!fns) return; /* the caller checks for the dispatcher */
  for (uint32_t i = 0; i < total; i++) {
    char name[48];
    snprintf(name, sizeof name, VXL_ENTRY_PREFIX "%u", i);
    fns[i] = LLVMGetNamedFunction(m, name);
    if (!fns[i]) fns[i] = LLVMAddFunction(m, name, entryty); /* another piece's */
  }
  LLVMTypeRef tablety = LLVMArrayType2(ptr, total);
  LLVMValueRef table = LLVMAddGlobal(m, tablety, "__vxl_kernel_table");
  LLVMSetInitializer(table, LLVMConstArray2(ptr, fns, total));
  LLVMSetGlobalConstant(table, 1);
  LLVMSetLinkage(table, LLVMInternalLinkage);
  free(fns);

  LLVMValueRef fn = LLVMAddFunction(m, VXL_DISPATCH_SYMBOL, LLVMFunctionType(i32, &ptr, abi == 3, 0));
  LLVMBuilderRef b = LLVMCreateBuilderInContext(lctx);
  LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(lctx, fn, "entry");
  LLVMBasicBlockRef run = LLVMAppendBasicBlockInContext(lctx, fn, "run");
  LLVMBasicBlockRef bad = LLVMAppendBasicBlockInContext(lctx, fn, "bad_id");
  LLVMPositionBuilderAtEnd(b, entry);
  LLVMValueRef rec = abi == 3 ? LLVMGetParam(fn, 0) : vxl__read_mscratch(b, lctx, xlen);
  LLVMValueRef id = LLVMBuildLoad2(b, i32, rec, "kernel_id");
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntULT, id, LLVMConstInt(i32, total, 0), ""), run, bad);
  LLVMPositionBuilderAtEnd(b, run);
  LLVMValueRef idx[2] = {LLVMConstInt(i32, 0, 0), id};
  LLVMValueRef slot = LLVMBuildInBoundsGEP2(b, tablety, table, idx, 2, "");
  LLVMValueRef callee = LLVMBuildLoad2(b, ptr, slot, "entry");
  LLVMValueRef off = LLVMConstInt(i32, VXL_LAUNCH_RECORD_BYTES, 0);
  LLVMValueRef args = LLVMBuildInBoundsGEP2(b, i8, rec, &off, 1, "args");
  LLVMBuildRet(b, LLVMBuildCall2(b, entryty, callee, &args, 1, ""));
  LLVMPositionBuilderAtEnd(b, bad);
  LLVMBuildRet(b, LLVMConstInt(i32, (unsigned long long)-1, 1));
  LLVMDisposeBuilder(b);
}

/* Makes every function internal except the kernels' entries, so O2
 * inlines each kernel into its entry and drops what no entry uses.
 *
 * The module is one piece of a source's module (vxl.h), linked with the
 * others into one object, so its variables are linked as the kernels of
 * one module need them: read-only data is each piece's own (internal); a
 * variable the kernels can write is defined weak and hidden in every piece
 * that uses it, as VXL_VAR_PREFIX and its name, so the linked pieces share
 * one copy and no library's symbol of the same name can take its place.
 * The lowering's own per-launch state (__vxl_ names, written by each entry
 * before use) stays internal to its piece. */
static void vxl__internalize(LLVMModuleRef m, const vxl_kernel *kernels, uint32_t n) {
  for (LLVMValueRef f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f))
    if (!LLVMIsDeclaration(f)) LLVMSetLinkage(f, LLVMInternalLinkage);
  for (uint32_t i = 0; i < n; i++) {
    LLVMValueRef e = LLVMGetNamedFunction(m, kernels[i].entry);
    if (e) LLVMSetLinkage(e, LLVMExternalLinkage);
  }
  LLVMValueRef dispatch = LLVMGetNamedFunction(m, VXL_DISPATCH_SYMBOL);
  if (dispatch) LLVMSetLinkage(dispatch, LLVMExternalLinkage);
  for (LLVMValueRef g = LLVMGetFirstGlobal(m); g; g = LLVMGetNextGlobal(g)) {
    if (LLVMIsDeclaration(g)) continue;
    size_t len = 0;
    const char *name = LLVMGetValueName2(g, &len);
    if (LLVMIsGlobalConstant(g)) {
      LLVMSetLinkage(g, LLVMInternalLinkage);
    } else if (!(len >= 6 && memcmp(name, "__vxl_", 6) == 0)) {
      char *renamed = NULL;
      if (asprintf(&renamed, VXL_VAR_PREFIX "%.*s", (int)len, name) > 0) {
        LLVMSetValueName2(g, renamed, strlen(renamed));
        free(renamed);
      }
      LLVMSetLinkage(g, LLVMWeakAnyLinkage);
      LLVMSetVisibility(g, LLVMHiddenVisibility);
    }
  }
  /* Thread-locals are reached through tp in an executable: local-exec
   * (the default initial-exec model needs a GOT the kernel image has not). */
  for (LLVMValueRef g = LLVMGetFirstGlobal(m); g; g = LLVMGetNextGlobal(g))
    if (LLVMIsThreadLocal(g)) LLVMSetThreadLocalMode(g, LLVMLocalExecTLSModel);
  /* Polygeist calls printf from device code; Vortex's device printf is
   * vx_printf (vx_print.h). */
  LLVMValueRef pf = LLVMGetNamedFunction(m, "printf");
  if (pf && LLVMIsDeclaration(pf) && !LLVMGetNamedFunction(m, "vx_printf"))
    LLVMSetValueName2(pf, "vx_printf", 9);
}

/* ---- selects without branches ----
 *
 * RV32IMAF has no conditional move, so the RISC-V backend expands every
 * select (and integer min/max) into a short branch around a move.  Vortex
 * aborts on a branch the threads of a warp disagree on, and after O2 nothing
 * tells a select on a thread-dependent value from a uniform one.  So, after
 * O2 and just before code generation, each scalar select becomes
 *   r = b ^ ((a ^ b) & m),   m = all ones when c, else zero
 * on the bits of its operands, with m passed through an empty inline asm so
 * no later combine can turn the pattern back into a select. */

/* m: c (i1) sign-extended to ity, hidden from the optimizers. */
static LLVMValueRef vxl__opaque_mask(LLVMBuilderRef b, LLVMValueRef c, LLVMTypeRef ity) {
  LLVMContextRef lctx = LLVMGetTypeContext(ity);
  LLVMTypeRef i32 = LLVMInt32TypeInContext(lctx);
  LLVMValueRef m = LLVMBuildSExt(b, c, i32, "");
  LLVMTypeRef aty = LLVMFunctionType(i32, &i32, 1, 0);
  LLVMValueRef ia = LLVMGetInlineAsm(aty, "", 0, "=r,0", 4, 0, 0, LLVMInlineAsmDialectATT, 0);
  m = LLVMBuildCall2(b, aty, ia, &m, 1, "");
  unsigned w = LLVMGetIntTypeWidth(ity);
  if (w > 32) return LLVMBuildSExt(b, m, ity, "");
  if (w < 32) return LLVMBuildTrunc(b, m, ity, "");
  return m;
}

/* The branch-free form of `select c, x, y` before `at`, or NULL when the
 * operand type is not one it handles (vectors, aggregates, > 64 bits). */
static LLVMValueRef vxl__masked_select(LLVMBuilderRef b, LLVMValueRef c, LLVMValueRef x, LLVMValueRef y) {
  LLVMTypeRef t = LLVMTypeOf(x);
  LLVMContextRef lctx = LLVMGetTypeContext(t);
  LLVMTypeKind k = LLVMGetTypeKind(t);
  if (LLVMGetTypeKind(LLVMTypeOf(c)) != LLVMIntegerTypeKind) return NULL; /* vector condition */
  LLVMTypeRef ity;
  LLVMValueRef xi, yi;
  if (k == LLVMIntegerTypeKind && LLVMGetIntTypeWidth(t) == 1) {
    return LLVMBuildOr(b, LLVMBuildAnd(b, c, x, ""), LLVMBuildAnd(b, LLVMBuildNot(b, c, ""), y, ""), "");
  } else if (k == LLVMIntegerTypeKind && LLVMGetIntTypeWidth(t) <= 64) {
    ity = t, xi = x, yi = y;
  } else if (k == LLVMFloatTypeKind || k == LLVMDoubleTypeKind || k == LLVMHalfTypeKind) {
    ity = LLVMIntTypeInContext(lctx, k == LLVMFloatTypeKind ? 32 : k == LLVMDoubleTypeKind ? 64 : 16);
    xi = LLVMBuildBitCast(b, x, ity, ""), yi = LLVMBuildBitCast(b, y, ity, "");
  } else if (k == LLVMPointerTypeKind) {
    ity = LLVMInt32TypeInContext(lctx);
    xi = LLVMBuildPtrToInt(b, x, ity, ""), yi = LLVMBuildPtrToInt(b, y, ity, "");
  } else {
    return NULL;
  }
  LLVMValueRef m = vxl__opaque_mask(b, c, ity);
  LLVMValueRef r = LLVMBuildXor(b, yi, LLVMBuildAnd(b, LLVMBuildXor(b, xi, yi, ""), m, ""), "");
  if (k == LLVMPointerTypeKind) return LLVMBuildIntToPtr(b, r, t, "");
  if (k != LLVMIntegerTypeKind) return LLVMBuildBitCast(b, r, t, "");
  return r;
}

/* The 32-bit halves of the i64 value v. */
static void vxl__halves(LLVMBuilderRef b, LLVMValueRef v, LLVMValueRef *lo, LLVMValueRef *hi) {
  LLVMContextRef lctx = LLVMGetTypeContext(LLVMTypeOf(v));
  LLVMTypeRef i32 = LLVMInt32TypeInContext(lctx), i64 = LLVMInt64TypeInContext(lctx);
  *lo = LLVMBuildTrunc(b, v, i32, "");
  *hi = LLVMBuildTrunc(b, LLVMBuildLShr(b, v, LLVMConstInt(i64, 32, 0), ""), i32, "");
}

static LLVMValueRef vxl__join_halves(LLVMBuilderRef b, LLVMValueRef lo, LLVMValueRef hi) {
  LLVMContextRef lctx = LLVMGetTypeContext(LLVMTypeOf(lo));
  LLVMTypeRef i64 = LLVMInt64TypeInContext(lctx);
  LLVMValueRef h = LLVMBuildShl(b, LLVMBuildZExt(b, hi, i64, ""), LLVMConstInt(i64, 32, 0), "");
  return LLVMBuildOr(b, h, LLVMBuildZExt(b, lo, i64, ""), "");
}

/* An i64 comparison as i32 comparisons and i1 logic: the backend compares
 * register pairs with a select on the high words (a branch). */
static LLVMValueRef vxl__icmp64(LLVMBuilderRef b, LLVMIntPredicate p, LLVMValueRef x, LLVMValueRef y) {
  LLVMValueRef xl, xh, yl, yh;
  vxl__halves(b, x, &xl, &xh);
  vxl__halves(b, y, &yl, &yh);
  if (p == LLVMIntEQ || p == LLVMIntNE) {
    LLVMValueRef d = LLVMBuildOr(b, LLVMBuildXor(b, xl, yl, ""), LLVMBuildXor(b, xh, yh, ""), "");
    return LLVMBuildICmp(b, p, d, LLVMConstInt(LLVMTypeOf(d), 0, 0), "");
  }
  int is_signed = p == LLVMIntSLT || p == LLVMIntSLE || p == LLVMIntSGT || p == LLVMIntSGE;
  int swap = p == LLVMIntSGT || p == LLVMIntUGT || p == LLVMIntSLE || p == LLVMIntULE; /* x > y == y < x */
  int negate = p == LLVMIntSLE || p == LLVMIntULE || p == LLVMIntSGE || p == LLVMIntUGE;
  if (swap) {
    LLVMValueRef t = xl;
    xl = yl;
    yl = t;
    t = xh;
    xh = yh;
    yh = t;
  }
  LLVMValueRef hlt = LLVMBuildICmp(b, is_signed ? LLVMIntSLT : LLVMIntULT, xh, yh, "");
  LLVMValueRef heq = LLVMBuildICmp(b, LLVMIntEQ, xh, yh, "");
  LLVMValueRef llt = LLVMBuildICmp(b, LLVMIntULT, xl, yl, "");
  LLVMValueRef lt = LLVMBuildOr(b, hlt, LLVMBuildAnd(b, heq, llt, ""), "");
  return negate ? LLVMBuildNot(b, lt, "") : lt;
}

/* icmp p x, y for an integer type of up to 64 bits, without branches. */
static LLVMValueRef vxl__cmp(LLVMBuilderRef b, LLVMIntPredicate p, LLVMValueRef x, LLVMValueRef y) {
  if (LLVMGetIntTypeWidth(LLVMTypeOf(x)) > 32) return vxl__icmp64(b, p, x, y);
  return LLVMBuildICmp(b, p, x, y, "");
}

/* An i64 shift by a variable amount as i32 shifts and masked selects: the
 * backend picks between "amount < 32" and "amount >= 32" with a branch.
 * op is LLVMShl, LLVMLShr or LLVMAShr. */
static LLVMValueRef vxl__shift64(LLVMBuilderRef b, LLVMOpcode op, LLVMValueRef x, LLVMValueRef amount) {
  LLVMContextRef lctx = LLVMGetTypeContext(LLVMTypeOf(x));
  LLVMTypeRef i32 = LLVMInt32TypeInContext(lctx);
  LLVMValueRef lo, hi, c1 = LLVMConstInt(i32, 1, 0), c31 = LLVMConstInt(i32, 31, 0);
  vxl__halves(b, x, &lo, &hi);
  LLVMValueRef a = LLVMBuildTrunc(b, amount, i32, "");
  LLVMValueRef sh = LLVMBuildAnd(b, a, c31, ""), inv = LLVMBuildSub(b, c31, sh, "");
  LLVMValueRef big = LLVMBuildICmp(b, LLVMIntNE, LLVMBuildAnd(b, a, LLVMConstInt(i32, 32, 0), ""),
                                   LLVMConstInt(i32, 0, 0), "");
  LLVMValueRef nlo, nhi;
  if (op == LLVMShl) {
    LLVMValueRef l = LLVMBuildShl(b, lo, sh, "");
    LLVMValueRef carry =
        LLVMBuildLShr(b, LLVMBuildLShr(b, lo, c1, ""), inv, ""); /* lo >> (32 - sh), 0 for sh 0 */
    LLVMValueRef h = LLVMBuildOr(b, LLVMBuildShl(b, hi, sh, ""), carry, "");
    nlo = vxl__masked_select(b, big, LLVMConstInt(i32, 0, 0), l);
    nhi = vxl__masked_select(b, big, l, h);
  } else {
    int arith = op == LLVMAShr;
    LLVMValueRef h = arith ? LLVMBuildAShr(b, hi, sh, "") : LLVMBuildLShr(b, hi, sh, "");
    LLVMValueRef carry = LLVMBuildShl(b, LLVMBuildShl(b, hi, c1, ""), inv, ""); /* hi << (32 - sh) */
    LLVMValueRef l = LLVMBuildOr(b, LLVMBuildLShr(b, lo, sh, ""), carry, "");
    LLVMValueRef fill = arith ? LLVMBuildAShr(b, hi, c31, "") : LLVMConstInt(i32, 0, 0);
    nlo = vxl__masked_select(b, big, h, l);
    nhi = vxl__masked_select(b, big, fill, h);
  }
  return vxl__join_halves(b, nlo, nhi);
}

/* Rewrites every scalar select, every llvm.smin/smax/umin/umax/abs, every
 * i64 comparison and every i64 shift by a variable amount (which the
 * backend also expands into branches) of m's functions. */
static void vxl__branchless_selects(LLVMModuleRef m) {
  LLVMContextRef lctx = LLVMGetModuleContext(m);
  LLVMBuilderRef b = LLVMCreateBuilderInContext(lctx);
  static const char *const minmax[] = {"llvm.smin", "llvm.smax", "llvm.umin", "llvm.umax", "llvm.abs"};
  static const LLVMIntPredicate preds[] = {LLVMIntSLT, LLVMIntSGT, LLVMIntULT, LLVMIntUGT, LLVMIntSGT};
  unsigned ids[5];
  for (int i = 0; i < 5; i++)
    ids[i] = LLVMLookupIntrinsicID(minmax[i], strlen(minmax[i]));
  for (LLVMValueRef f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f))
    for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb; bb = LLVMGetNextBasicBlock(bb))
      for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i;) {
        LLVMValueRef next = LLVMGetNextInstruction(i), r = NULL;
        LLVMPositionBuilderBefore(b, i);
        LLVMOpcode opc = LLVMGetInstructionOpcode(i);
        LLVMTypeRef ty = LLVMTypeOf(i);
        int wide = LLVMGetTypeKind(ty) == LLVMIntegerTypeKind && LLVMGetIntTypeWidth(ty) == 64;
        if (opc == LLVMSelect) {
          LLVMValueRef c = LLVMGetOperand(i, 0);
          if (!LLVMIsAConstant(c)) r = vxl__masked_select(b, c, LLVMGetOperand(i, 1), LLVMGetOperand(i, 2));
        } else if (opc == LLVMICmp) {
          LLVMTypeRef ot = LLVMTypeOf(LLVMGetOperand(i, 0));
          if (LLVMGetTypeKind(ot) == LLVMIntegerTypeKind && LLVMGetIntTypeWidth(ot) == 64)
            r = vxl__icmp64(b, LLVMGetICmpPredicate(i), LLVMGetOperand(i, 0), LLVMGetOperand(i, 1));
        } else if (wide && (opc == LLVMShl || opc == LLVMLShr || opc == LLVMAShr) &&
                   !LLVMIsAConstant(LLVMGetOperand(i, 1))) {
          r = vxl__shift64(b, opc, LLVMGetOperand(i, 0), LLVMGetOperand(i, 1));
        } else if (LLVMIsACallInst(i)) {
          LLVMValueRef callee = LLVMGetCalledValue(i);
          unsigned id = callee && LLVMIsAFunction(callee) ? LLVMGetIntrinsicID(callee) : 0;
          for (int k = 0; id && k < 5; k++) {
            if (id != ids[k] || LLVMGetTypeKind(LLVMTypeOf(i)) != LLVMIntegerTypeKind) continue;
            LLVMValueRef x = LLVMGetOperand(i, 0);
            LLVMValueRef y = k == 4 ? LLVMBuildNeg(b, x, "") : LLVMGetOperand(i, 1);
            r = vxl__masked_select(b, vxl__cmp(b, preds[k], x, y), x, y);
          }
        }
        if (r) {
          LLVMReplaceAllUsesWith(i, r);
          LLVMInstructionEraseFromParent(i);
        }
        i = next;
      }
  LLVMDisposeBuilder(b);
}

/* Drops the line-table debug info of the device-ABI helpers' functions
 * (those whose subprogram's file is VXL_PRELUDE_SOURCE).  The LLVM inliner
 * gives the instructions of a callee without debug info the location of
 * the call, so a helper inlined into a kernel (a barrier, a thread id
 * read) maps to the user's line of the gpu op it implements instead of a
 * line of the helpers' text, which a user does not have. */
static void vxl__strip_prelude_debug(LLVMModuleRef m) {
  size_t want = strlen(VXL_PRELUDE_SOURCE);
  for (LLVMValueRef f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f)) {
    LLVMMetadataRef sp = LLVMGetSubprogram(f);
    if (!sp) continue;
    unsigned len = 0;
    const char *file = LLVMDIFileGetFilename(LLVMDIScopeGetFile(sp), &len);
    if (!file || len != want || memcmp(file, VXL_PRELUDE_SOURCE, want) != 0) continue;
    for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb; bb = LLVMGetNextBasicBlock(bb))
      for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i; i = LLVMGetNextInstruction(i))
        LLVMInstructionSetDebugLoc(i, NULL);
    LLVMSetSubprogram(f, NULL);
  }
}

/* Verifies m, runs the LLVM pipeline on it once and emits one object into
 * *obj / *obj_size (malloc()). */
static int vxl__emit_module(const vxl__machine *mc, LLVMModuleRef m, const vxl_options *opts, uint8_t **obj,
                            size_t *obj_size, vxl__diags *d) {
  char *msg = NULL;
  if (LLVMVerifyModule(m, LLVMReturnStatusAction, &msg)) {
    vxl__diag_add(d, "error: internal: LLVM module does not verify: %s", msg ? msg : "");
    LLVMDisposeMessage(msg);
    return -EINVAL;
  }
  LLVMDisposeMessage(msg);
  char pipeline[32];
  snprintf(pipeline, sizeof pipeline, "default<O%u>", opts->opt_level > 3 ? 3 : opts->opt_level);
  LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
  LLVMErrorRef err = LLVMRunPasses(m, pipeline, mc->tm, po);
  LLVMDisposePassBuilderOptions(po);
  if (err) {
    char *e = LLVMGetErrorMessage(err);
    vxl__diag_add(d, "error: internal: LLVM pipeline failed: %s", e);
    LLVMDisposeErrorMessage(e);
    return -EINVAL;
  }
  vxl__branchless_selects(m);
  if (mc->emitter) return vxl_emitter_emit(mc->emitter, m, obj, obj_size);
  LLVMMemoryBufferRef mb = NULL;
  msg = NULL;
  if (LLVMTargetMachineEmitToMemoryBuffer(mc->tm, m, LLVMObjectFile, &msg, &mb)) {
    vxl__diag_add(d, "error: internal: RISC-V code generation failed: %s", msg ? msg : "");
    LLVMDisposeMessage(msg);
    return -EINVAL;
  }
  size_t sz = LLVMGetBufferSize(mb);
  *obj = malloc(sz ? sz : 1);
  if (!*obj) {
    LLVMDisposeMemoryBuffer(mb);
    return -ENOMEM;
  }
  memcpy(*obj, LLVMGetBufferStart(mb), sz);
  *obj_size = sz;
  LLVMDisposeMemoryBuffer(mb);
  return 0;
}

/* The Vortex thread-control operation a call performs: 2 split, 3 join,
 * 4 barrier, 5 pred (the custom-0 funct3 with funct7 0, vx_intrinsics.h),
 * 8 a shuffle or vote (funct7 1), or 0: the calls of inline asm
 * ".insn r 0x0B, F, F7, ..." the lowering emits. */
static int vxl__thread_control(LLVMValueRef call) {
  LLVMValueRef callee = LLVMGetCalledValue(call);
  if (!callee || !LLVMIsAInlineAsm(callee)) return 0;
  size_t len = 0;
  const char *a = LLVMGetInlineAsmAsmString(callee, &len);
  static const char insn[] = ".insn r 0x0B, ";
  size_t n = sizeof insn - 1;
  if (len < n + 5 || memcmp(a, insn, n) != 0 || a[n] < '0' || a[n] > '7' || a[n + 1] != ',') return 0;
  if (memcmp(a + n + 2, " 1,", 3) == 0) return 8;
  return a[n] >= '2' && a[n] <= '5' ? a[n] - '0' : 0;
}

/* Keeps O2 from moving thread-control operations across control flow:
 * all are convergent, and vx_pred is also noduplicate.  Threads vx_pred
 * masks off resume at the vx_pred that restores the mask, with the
 * registers they had when they stopped, so it must stay one instruction per
 * loop exit: loop rotation would otherwise copy it into the loop guard, and
 * threads stopped there would resume at the copy in the latch. */
static void vxl__pin_thread_control(LLVMModuleRef m) {
  LLVMContextRef lctx = LLVMGetModuleContext(m);
  LLVMAttributeRef convergent =
      LLVMCreateEnumAttribute(lctx, LLVMGetEnumAttributeKindForName("convergent", 10), 0);
  LLVMAttributeRef nodup =
      LLVMCreateEnumAttribute(lctx, LLVMGetEnumAttributeKindForName("noduplicate", 11), 0);
  LLVMAttributeRef inl =
      LLVMCreateEnumAttribute(lctx, LLVMGetEnumAttributeKindForName("alwaysinline", 12), 0);
  for (LLVMValueRef f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f)) {
    /* The ABI helpers (vxl_prelude.h) hold these calls; the inliner's cost
     * model will not copy a noduplicate call into several callers, but
     * alwaysinline still inlines, one copy per call site, as wanted. */
    if (!LLVMIsDeclaration(f) && strncmp(LLVMGetValueName(f), "__vxl_", 6) == 0)
      LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex, inl);
    for (LLVMBasicBlockRef b = LLVMGetFirstBasicBlock(f); b; b = LLVMGetNextBasicBlock(b))
      for (LLVMValueRef i = LLVMGetFirstInstruction(b); i; i = LLVMGetNextInstruction(i)) {
        if (!LLVMIsACallInst(i)) continue;
        int op = vxl__thread_control(i);
        if (!op) continue;
        LLVMAddCallSiteAttribute(i, LLVMAttributeFunctionIndex, convergent);
        if (op == 5) LLVMAddCallSiteAttribute(i, LLVMAttributeFunctionIndex, nodup);
      }
  }
}

/* Names the entry function `entry` of kernel `name` also
 * VXL_KENTRY_PREFIX name (a global alias).  0 or -ENOMEM. */
static int vxl__add_kentry(LLVMModuleRef m, const char *entry, const char *name) {
  LLVMValueRef fn = LLVMGetNamedFunction(m, entry);
  char *alias = NULL;
  if (!fn || asprintf(&alias, "%s%s", VXL_KENTRY_PREFIX, name) < 0) return -ENOMEM;
  LLVMValueRef a = LLVMAddAlias2(m, LLVMGlobalGetValueType(fn), 0, fn, alias);
  free(alias);
  return a ? 0 : -ENOMEM;
}

int vxl__emit_object(const vxl__machine *mc, LLVMModuleRef m, vxl_kernel *kernels, uint32_t n, uint32_t first,
                     uint32_t total, const vxl_options *opts, uint8_t **obj, size_t *obj_size,
                     vxl__diags *d) {
  vxl__pin_thread_control(m);
  for (uint32_t i = 0; i < n; i++) {
    LLVMValueRef kf = LLVMGetNamedFunction(m, kernels[i].name);
    if (!kf) {
      vxl__diag_add(d, "error: internal: kernel %s vanished during translation", kernels[i].name);
      return -EINVAL;
    }
    vxl__add_entry(m, kf, first + i, kernels[i].entry, kernels[i].shared_bytes, opts->xlen, opts->vortex_abi,
                   opts->vortex_abi != 3 && total >= VXL_DISPATCH_MIN_KERNELS);
    if (opts->vortex_abi == 3 && vxl__add_kentry(m, kernels[i].entry, kernels[i].name) != 0) return -ENOMEM;
  }
  if (first == 0 && total >= VXL_DISPATCH_MIN_KERNELS && opts->vortex_abi != 3) {
    vxl__add_dispatcher(m, total, opts->xlen, opts->vortex_abi);
    if (!LLVMGetNamedFunction(m, VXL_DISPATCH_SYMBOL)) return -ENOMEM;
  }
  vxl__internalize(m, kernels, n);
  vxl__strip_prelude_debug(m);
  return vxl__emit_module(mc, m, opts, obj, obj_size, d);
}
