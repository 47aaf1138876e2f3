/*
 * vxl_vector.h - vector-dialect ops of a device module to the LLVM dialect
 * (vxl_vector.cpp says why it is C++).
 *
 * THREAD NOTES: on the thread that owns the module's context.
 */
#ifndef VXL_VECTOR_H
#define VXL_VECTOR_H

#include <mlir-c/IR.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Lowers every vector-dialect op under module to the LLVM dialect with
 * upstream's patterns (those of --convert-vector-to-llvm, with its default
 * options), converting memrefs and indices at index_bitwidth bits (32 on
 * every Vortex target), so that the later conversion passes of the same
 * width meet them; other ops are left as they are.  Returns 0, or -1 when
 * an op cannot be lowered (MLIR's diagnostic names it, at its location). */
int vxl__vector_to_llvm(MlirOperation module, unsigned index_bitwidth);

#ifdef __cplusplus
}
#endif

#endif
