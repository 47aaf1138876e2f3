/*
 * vxl_register.h - what the lowering registers with MLIR: the dialects its
 * inputs are written in, the passes its pipelines name, the translations
 * to LLVM IR of what it emits; nothing more (vxl_register.cpp says why it
 * is C++).
 *
 * Registering only these keeps every other LLVM target out of a daemon
 * linked with LLVM's static archives: MLIR's register-everything entry
 * points reach the NVPTX, AMDGPU, SPIR-V, ... back ends, which the
 * linker then cannot drop.
 */
#ifndef VXL_REGISTER_H
#define VXL_REGISTER_H

#include <mlir-c/IR.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Adds to registry the dialects the lowering reads (GPU-dialect kernels,
 * Polygeist's output, upstream's GPU integration tests, the host side of
 * a whole program): affine, arith, async, bufferization, cf, dlti, func,
 * gpu, index, linalg, llvm, math, memref, nvvm, rocdl, scf, spirv,
 * tensor, ub and vector; the interfaces through which gpu-to-llvm
 * collects each dialect's LLVM conversion patterns; and the translations
 * to LLVM IR of builtin, llvm and gpu (gpu.binary and gpu.launch_func,
 * with the default offloading handler, #gpu.select_object).  Other
 * dialects parse as unregistered ops, which the lowering refuses at their
 * location.  Any thread; registry is the caller's. */
void vxl__register_dialects(MlirDialectRegistry registry);

/* Registers the passes the lowering's pipelines name (VXL_PIPELINE_* and
 * the single-pass pipelines in vxl.c), and no other, in MLIR's global
 * pass registry.  Not thread-safe: call it once per process, before any
 * pipeline is parsed (vxl.c does, under pthread_once). */
void vxl__register_passes(void);

#ifdef __cplusplus
}
#endif

#endif
