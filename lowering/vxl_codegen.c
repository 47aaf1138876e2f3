/*
 * vxl_codegen.c - argument-buffer layout, Vortex kernel entry, objects
 * (LLVM side of the lowering).
 *
 * Argument buffer (seed 000 for the per-argument rules, seed 001 for the
 * shape): the kernel's arguments in gpu.func order at their natural RV32
 * offsets from 0, then the launch header {grid_dim[3], block_dim[3],
 * dynamic shared-memory bytes} (all u32), the whole buffer padded to 8.
 * Every offset, size and alignment comes from the target's LLVM data layout
 * applied to ONE LLVM struct type (vxl__buffer_type); the generated entry
 * reads the arguments through struct GEPs on that same type, so the layout
 * the host is told and the layout the device reads cannot disagree (the
 * failure prior-art.md describes).
 *
 * Entry convention (Vortex kernel/src/vx_start.S and vx_spawn.h, see
 * ../shared/notes/vortex-abi.md): `main` reads the argument-buffer address
 * from CSR mscratch and returns
 *   vx_spawn_threads(3, &buf->grid_dim, &buf->block_dim, body, buf);
 * `body(buf)` loads each argument from the buffer and calls the kernel.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Analysis.h>
#include <llvm-c/Core.h>
#include <llvm-c/Error.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include "vxl_internal.h"

LLVMTypeRef vxl__buffer_type(LLVMContextRef lctx, LLVMTypeRef *params, uint32_t n) {
  LLVMTypeRef i32 = LLVMInt32TypeInContext(lctx);
  LLVMTypeRef dim3 = LLVMArrayType2(i32, 3);
  LLVMTypeRef hdr_fields[3] = {dim3, dim3, i32};
  LLVMTypeRef hdr = LLVMStructTypeInContext(lctx, hdr_fields, 3, 0);
  LLVMTypeRef *fields = malloc((n + 1) * sizeof *fields);
  if (!fields) return NULL;
  for (uint32_t i = 0; i < n; i++) fields[i] = params[i];
  fields[n] = hdr;
  LLVMTypeRef s = LLVMStructTypeInContext(lctx, fields, n + 1, 0);
  free(fields);
  return s;
}

static int vxl__is_pointer_type(const char *mlir_type) {
  return strncmp(mlir_type, "memref<", 7) == 0 || strncmp(mlir_type, "!llvm.ptr", 9) == 0;
}

int vxl__layout(LLVMTargetDataRef td, LLVMContextRef lctx, LLVMTypeRef *params,
                uint32_t n, char *const *mlir_types, vxp_kernel *k) {
  LLVMTypeRef s = vxl__buffer_type(lctx, params, n);
  if (!s) return -ENOMEM;
  vxp_arg *args = calloc(n ? n : 1, sizeof *args);
  if (!args) return -ENOMEM;
  uint32_t end = 0;
  for (uint32_t i = 0; i < n; i++) {
    args[i].index = i;
    args[i].type = strdup(mlir_types[i]);
    if (!args[i].type) {
      for (uint32_t j = 0; j < i; j++) free(args[j].type);
      free(args);
      return -ENOMEM;
    }
    args[i].kind = vxl__is_pointer_type(mlir_types[i]) ? VXP_ARG_POINTER : VXP_ARG_SCALAR;
    args[i].size = (uint32_t)LLVMStoreSizeOfType(td, params[i]);
    args[i].align = LLVMABIAlignmentOfType(td, params[i]);
    args[i].offset = (uint32_t)LLVMOffsetOfElement(td, s, i);
    end = args[i].offset + args[i].size;
  }
  k->args = args;
  k->nargs = n;
  k->args_size = end;
  k->launch_offset = (uint32_t)LLVMOffsetOfElement(td, s, n);
  uint64_t total = LLVMABISizeOfType(td, s);
  k->buffer_size = (uint32_t)((total + 7) & ~(uint64_t)7);
  return 0;
}

/* Adds `void __vxl_body(ptr buf)` and `i32 main()` for kernel kf, whose
 * static workgroup memory is static_bytes per block. */
static void vxl__add_entry(LLVMModuleRef m, LLVMValueRef kf, uint32_t static_bytes, int emulator) {
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
  LLVMValueRef body = LLVMAddFunction(m, "__vxl_body", bodyty);
  LLVMSetLinkage(body, LLVMInternalLinkage);
  LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(lctx, body, "entry"));
  LLVMValueRef buf = LLVMGetParam(body, 0);
  for (uint32_t i = 0; i < n; i++) {
    LLVMValueRef p = LLVMBuildStructGEP2(b, bufty, buf, i, "");
    vals[i] = LLVMBuildLoad2(b, params[i], p, "");
  }
  LLVMBuildCall2(b, kty, kf, vals, n, "");
  LLVMBuildRetVoid(b);

  /* main: argument buffer from mscratch, then vx_spawn_threads */
  LLVMValueRef mainfn = LLVMAddFunction(m, "main", LLVMFunctionType(i32, NULL, 0, 0));
  LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(lctx, mainfn, "entry"));
  LLVMValueRef args;
  if (emulator) {
    LLVMTypeRef gty = LLVMFunctionType(ptr, NULL, 0, 0);
    LLVMValueRef get = LLVMAddFunction(m, "vx_emu_argument_buffer", gty);
    args = LLVMBuildCall2(b, gty, get, NULL, 0, "args");
  } else {
    const char *asmtext = "csrr $0, mscratch", *cons = "=r";
    LLVMTypeRef aty = LLVMFunctionType(i32, NULL, 0, 0);
    LLVMValueRef ia = LLVMGetInlineAsm(aty, asmtext, strlen(asmtext), cons, strlen(cons),
                                       1, 0, LLVMInlineAsmDialectATT, 0);
    LLVMValueRef raw = LLVMBuildCall2(b, aty, ia, NULL, 0, "mscratch");
    args = LLVMBuildIntToPtr(b, raw, ptr, "args");
  }
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
  if (gb) LLVMBuildStore(b, LLVMBuildAdd(b, stat, dyn, "group_bytes"), gb);
  if (sb) LLVMBuildStore(b, stat, sb);
  LLVMTypeRef spty_params[5] = {i32, ptr, ptr, ptr, ptr};
  LLVMTypeRef spty = LLVMFunctionType(i32, spty_params, 5, 0);
  LLVMValueRef spawn = LLVMGetNamedFunction(m, "vx_spawn_threads");
  if (!spawn) spawn = LLVMAddFunction(m, "vx_spawn_threads", spty);
  LLVMValueRef sargs[5] = {LLVMConstInt(i32, 3, 0), grid, block, body, args};
  LLVMValueRef r = LLVMBuildCall2(b, spty, spawn, sargs, 5, "");
  LLVMBuildRet(b, r);

  LLVMDisposeBuilder(b);
  free(params);
  free(vals);
}

/* Keeps kernel `keep` and drops every other kernel; everything defined
 * becomes internal except main, so O2 inlines and drops what is unused. */
static void vxl__isolate(LLVMModuleRef m, const char *keep, vxp_kernel *kernels, uint32_t n) {
  for (uint32_t i = 0; i < n; i++) {
    if (strcmp(kernels[i].name, keep) == 0) continue;
    LLVMValueRef f = LLVMGetNamedFunction(m, kernels[i].name);
    if (f) LLVMDeleteFunction(f);
  }
  for (LLVMValueRef f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f))
    if (!LLVMIsDeclaration(f) && strcmp(LLVMGetValueName(f), "main") != 0)
      LLVMSetLinkage(f, LLVMInternalLinkage);
  /* Thread-locals are reached through tp in an executable: local-exec
   * (mlir-c-api.md pitfall 10: the default initial-exec needs a GOT). */
  for (LLVMValueRef g = LLVMGetFirstGlobal(m); g; g = LLVMGetNextGlobal(g))
    if (LLVMIsThreadLocal(g)) LLVMSetThreadLocalMode(g, LLVMLocalExecTLSModel);
  /* Polygeist calls printf from device code; Vortex's device printf is
   * vx_printf (vx_print.h). */
  LLVMValueRef pf = LLVMGetNamedFunction(m, "printf");
  if (pf && LLVMIsDeclaration(pf) && !LLVMGetNamedFunction(m, "vx_printf")) LLVMSetValueName2(pf, "vx_printf", 9);
}

static int vxl__emit_one(vxl_compiler *c, LLVMModuleRef m, vxp_kernel *k, const vxl_options *opts,
                         vxl__diags *d) {
  char *msg = NULL;
  if (LLVMVerifyModule(m, LLVMReturnStatusAction, &msg)) {
    vxl__diag_add(d, "error: internal: LLVM module for kernel %s does not verify: %s", k->name,
                  msg ? msg : "");
    LLVMDisposeMessage(msg);
    return -EINVAL;
  }
  LLVMDisposeMessage(msg);
  char pipeline[32];
  snprintf(pipeline, sizeof pipeline, "default<O%u>", opts->opt_level > 3 ? 3 : opts->opt_level);
  LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
  LLVMErrorRef err = LLVMRunPasses(m, pipeline, c->tm, po);
  LLVMDisposePassBuilderOptions(po);
  if (err) {
    char *e = LLVMGetErrorMessage(err);
    vxl__diag_add(d, "error: internal: LLVM pipeline failed for kernel %s: %s", k->name, e);
    LLVMDisposeErrorMessage(e);
    return -EINVAL;
  }
  LLVMMemoryBufferRef mb = NULL;
  msg = NULL;
  if (LLVMTargetMachineEmitToMemoryBuffer(c->tm, m, LLVMObjectFile, &msg, &mb)) {
    vxl__diag_add(d, "error: internal: RISC-V code generation failed for kernel %s: %s", k->name,
                  msg ? msg : "");
    LLVMDisposeMessage(msg);
    return -EINVAL;
  }
  size_t sz = LLVMGetBufferSize(mb);
  k->object = malloc(sz ? sz : 1);
  if (!k->object) {
    LLVMDisposeMemoryBuffer(mb);
    return -ENOMEM;
  }
  memcpy(k->object, LLVMGetBufferStart(mb), sz);
  k->object_size = sz;
  LLVMDisposeMemoryBuffer(mb);
  return 0;
}

/* The Vortex thread-control operation a call performs: 2 split, 3 join,
 * 4 barrier, 5 pred (the custom-0 funct3, vx_intrinsics.h), or 0.  The
 * hardware object calls inline asm ".insn r 0x0B, F, ..."; the emulator
 * object calls vx_emu_<name> (vxl_prelude.h). */
static int vxl__thread_control(LLVMValueRef call) {
  LLVMValueRef callee = LLVMGetCalledValue(call);
  if (!callee) return 0;
  if (LLVMIsAInlineAsm(callee)) {
    size_t len = 0;
    const char *a = LLVMGetInlineAsmAsmString(callee, &len);
    static const char insn[] = ".insn r 0x0B, ";
    size_t n = sizeof insn - 1;
    if (len > n + 1 && memcmp(a, insn, n) == 0 && a[n] >= '2' && a[n] <= '5' && a[n + 1] == ',') return a[n] - '0';
    return 0;
  }
  if (!LLVMIsAFunction(callee)) return 0;
  static const char *const emu[] = {"vx_emu_split", "vx_emu_join", "vx_emu_barrier", "vx_emu_pred"};
  const char *name = LLVMGetValueName(callee);
  for (int i = 0; i < 4; i++)
    if (strcmp(name, emu[i]) == 0) return 2 + i;
  return 0;
}

/* Keeps O2 from moving thread-control operations across control flow:
 * all are convergent, and vx_pred is also noduplicate.  Threads vx_pred
 * masks off resume at the vx_pred that restores the mask, with the
 * registers they had when they stopped, so it must stay one instruction per
 * loop exit: loop rotation would otherwise copy it into the loop guard, and
 * threads stopped there would resume at the copy in the latch. */
static void vxl__pin_thread_control(LLVMModuleRef m) {
  LLVMContextRef lctx = LLVMGetModuleContext(m);
  LLVMAttributeRef convergent = LLVMCreateEnumAttribute(lctx, LLVMGetEnumAttributeKindForName("convergent", 10), 0);
  LLVMAttributeRef nodup = LLVMCreateEnumAttribute(lctx, LLVMGetEnumAttributeKindForName("noduplicate", 11), 0);
  LLVMAttributeRef inl = LLVMCreateEnumAttribute(lctx, LLVMGetEnumAttributeKindForName("alwaysinline", 12), 0);
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

int vxl__emit_objects(vxl_compiler *c, LLVMModuleRef m, vxp_kernel *kernels, uint32_t n,
                      const vxl_options *opts, vxl__diags *d) {
  vxl__pin_thread_control(m);
  for (uint32_t i = 0; i < n; i++) {
    /* The last kernel may consume the translated module itself. */
    LLVMModuleRef km = (i + 1 == n) ? m : LLVMCloneModule(m);
    vxl__isolate(km, kernels[i].name, kernels, n);
    LLVMValueRef kf = LLVMGetNamedFunction(km, kernels[i].name);
    int rc;
    if (!kf) {
      vxl__diag_add(d, "error: internal: kernel %s vanished during translation", kernels[i].name);
      rc = -EINVAL;
    } else {
      vxl__add_entry(km, kf, kernels[i].shared_bytes, opts->emulator);
      rc = vxl__emit_one(c, km, &kernels[i], opts, d);
    }
    if (km != m) LLVMDisposeModule(km);
    if (rc) return rc;
  }
  return 0;
}
