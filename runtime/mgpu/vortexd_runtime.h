/*
 * vortexd_runtime.h - libvortexd_runtime, for C and C++ host programs.
 *
 * libvortexd_runtime implements MLIR's GPU runtime ABI (the mgpu* calls
 * that MLIR's gpu-to-llvm lowering and its #gpu.select_object offloading
 * handler emit, as mlir/lib/ExecutionEngine/CudaRuntimeWrappers.cpp defines
 * them): a host object made by `vxc compile --host` calls these, and gets
 * each kernel from vortexd at its first launch.  A C program links that
 * object with -lvortexd_runtime (pkg-config: vortexd-runtime) and calls
 * the MLIR program's functions; a function marked llvm.emit_c_interface
 * is `_mlir_ciface_NAME`, taking each memref as a pointer to a descriptor
 * (VORTEXD_MEMREF below).  docs/runtime.md, "A C host program".
 *
 * Errors: a module that cannot be had or a launch that fails prints
 * "vortexd runtime: ..." on stderr and ends the program with status 1;
 * with VORTEXD_RUNTIME_ERRORS=return the call returns NULL or nothing.
 *
 * THREAD NOTES: any thread may call; every entry point takes one
 * process-wide mutex.
 */
#ifndef VORTEXD_RUNTIME_H
#define VORTEXD_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A ranked memref descriptor as MLIR's C ABI passes it (StridedMemRefType
 * in mlir/ExecutionEngine/CRunnerUtils.h): the allocation, the aligned
 * start, the offset of the first element (in elements), then RANK sizes
 * and RANK strides (in elements).  Declare one with
 * `VORTEXD_MEMREF(float, 1) y = {buf, buf, 0, {n}, {1}};`. */
#define VORTEXD_MEMREF(T, RANK)                                                                              \
  struct {                                                                                                   \
    T *allocated;                                                                                            \
    T *aligned;                                                                                              \
    int64_t offset;                                                                                          \
    int64_t sizes[RANK];                                                                                     \
    int64_t strides[RANK];                                                                                   \
  }

/* A descriptor of any rank, as the *MemRef calls below take it: rank
 * sizes, then rank strides, in sizes_strides. */
typedef struct {
  void *allocated, *aligned;
  int64_t offset;
  int64_t sizes_strides[];
} vortexd_memref;

/* Modules: data is gpuBlobSize bytes of what vortexd's host lowering (or
 * the #vortex.target plugin) put in a gpu.binary's object.  Load returns
 * at once (the module is compiled or fetched on a thread of its own);
 * the first GetFunction of it waits, and fails there, naming the module's
 * place in the program. */
void *mgpuModuleLoad(void *data, size_t gpuBlobSize);
void mgpuModuleUnload(void *module);
void *mgpuModuleGetFunction(void *module, const char *name);

/* Launches function on a grid of gridX x gridY x gridZ blocks of blockX x
 * blockY x blockZ threads, smem bytes of dynamic shared memory; params:
 * paramsCount pointers, one to each argument's value (a memref argument is
 * its descriptor's fields, one pointer each).  Synchronous: registered
 * host memory holds the results when it returns. */
void mgpuLaunchKernel(void *function, intptr_t gridX, intptr_t gridY, intptr_t gridZ, intptr_t blockX,
                      intptr_t blockY, intptr_t blockZ, int32_t smem, void *stream, void **params,
                      void **extra, size_t paramsCount);

/* Streams and events: launches complete before they return, so these only
 * hand out and take back tokens. */
void *mgpuStreamCreate(void);
void mgpuStreamDestroy(void *stream);
void mgpuStreamSynchronize(void *stream);
void mgpuStreamWaitEvent(void *stream, void *event);
void *mgpuEventCreate(void);
void mgpuEventDestroy(void *event);
void mgpuEventSynchronize(void *event);
void mgpuEventRecord(void *event, void *stream);
void mgpuSetDefaultDevice(int32_t device);

/* Device memory (sizes in bytes) and host memory the device may use in
 * place (registered: copied to the device before each launch and back
 * after it). */
void *mgpuMemAlloc(uint64_t sizeBytes, void *stream, bool isHostShared);
void mgpuMemFree(void *ptr, void *stream);
void mgpuMemcpy(void *dst, void *src, size_t sizeBytes, void *stream);
/* count 32-bit / 16-bit values at dst set to value */
void mgpuMemset32(void *dst, unsigned int value, size_t count, void *stream);
void mgpuMemset16(void *dst, unsigned short value, size_t count, void *stream);
void mgpuMemHostRegister(void *ptr, uint64_t sizeBytes);
void mgpuMemHostRegisterMemRef(int64_t rank, vortexd_memref *descriptor, int64_t elementSizeBytes);
void mgpuMemHostUnregister(void *ptr);
void mgpuMemHostUnregisterMemRef(int64_t rank, vortexd_memref *descriptor, int64_t elementSizeBytes);

#ifdef __cplusplus
}
#endif

#endif
