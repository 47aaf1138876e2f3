/*
 * vxl_emit.h - object emission with one code-generation pass manager kept
 * per compiler (vxl_emit.cpp, the lowering's one C++ file).
 *
 * LLVM's C API (LLVMTargetMachineEmitToMemoryBuffer) builds the whole
 * code-generation pipeline - instruction selection, register allocation,
 * the asm printer and its object streamer - anew for every module it
 * emits; a compile of one small kernel spent about an eighth of its
 * instructions there.  A pass manager built once and run on module after
 * module emits the same bytes (the asm printer resets its streamer after
 * each module, which is what Mesa's radeonsi relies on doing the same in
 * ac_llvm_helper.cpp), so the lowering keeps one per compiler.
 *
 * THREAD NOTES: an emitter belongs to its compiler and is used by one
 * thread at a time, like the compiler.  No global state.
 */
#ifndef VXL_EMIT_H
#define VXL_EMIT_H

#include <stddef.h>
#include <stdint.h>

#include <llvm-c/TargetMachine.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct vxl_emitter vxl_emitter;

/* Builds the object-file code-generation pipeline of tm (which must
 * outlive the emitter) once.  Returns the emitter (vxl_emitter_destroy),
 * or NULL when tm cannot emit objects or memory ran out. */
vxl_emitter *vxl_emitter_create(LLVMTargetMachineRef tm);

/* Emits m (its data layout set to the target machine's first, as the C
 * API does) as one relocatable object into *obj (malloc(), *obj_size
 * bytes): the bytes LLVMTargetMachineEmitToMemoryBuffer would give.
 * Returns 0, or -ENOMEM (nothing allocated). */
int vxl_emitter_emit(vxl_emitter *e, LLVMModuleRef m, uint8_t **obj, size_t *obj_size);

void vxl_emitter_destroy(vxl_emitter *e);

#ifdef __cplusplus
}
#endif

#endif /* VXL_EMIT_H */
