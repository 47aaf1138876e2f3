/*
 * vxr_helpers.c - host-side helpers that MLIR's vendor runtime wrappers
 * export next to the mgpu* ABI and that programs (the upstream GPU
 * integration tests among them) call by name: ROCm's
 * mgpuMemGetDeviceMemRef1d*, the SPIR-V CPU runner's fill*Buffer* and the
 * Vulkan runner's fillResource{1,2,3}D{Int,Float,Int8}.  Each takes memrefs the way
 * convert-func-to-llvm passes them to an external function: expanded into
 * allocated, aligned, offset, sizes, strides.
 *
 * On Vortex, host memory the program registered (gpu.host_register) is
 * mirrored to device memory around each launch, so a "device memref" of a
 * host memref is the memref itself.
 */
#include <stdint.h>

typedef struct {
  void *allocated, *aligned;
  int64_t offset, size, stride;
} vxr_memref1d;

vxr_memref1d mgpuMemGetDeviceMemRef1dFloat(float *allocated, float *aligned, int64_t offset, int64_t size,
                                           int64_t stride);
vxr_memref1d mgpuMemGetDeviceMemRef1dFloat(float *allocated, float *aligned, int64_t offset, int64_t size,
                                           int64_t stride) {
  return (vxr_memref1d){allocated, aligned, offset, size, stride};
}

vxr_memref1d mgpuMemGetDeviceMemRef1dInt32(int32_t *allocated, int32_t *aligned, int64_t offset, int64_t size,
                                           int64_t stride);
vxr_memref1d mgpuMemGetDeviceMemRef1dInt32(int32_t *allocated, int32_t *aligned, int64_t offset, int64_t size,
                                           int64_t stride) {
  return (vxr_memref1d){allocated, aligned, offset, size, stride};
}

/* fill<T>(memref<?xT>, value), 1-D, honouring offset and stride. */
#define VXR_FILL1D(name, T)                                                                                  \
  void name(T *allocated, T *aligned, int64_t offset, int64_t size, int64_t stride, T value);                \
  void name(T *allocated, T *aligned, int64_t offset, int64_t size, int64_t stride, T value) {               \
    (void)allocated;                                                                                         \
    for (int64_t i = 0; i < size; i++)                                                                       \
      aligned[offset + i * stride] = value;                                                                  \
  }
/* fill<T>(memref<?x?xT>, value) and fill<T>(memref<?x?x?xT>, value). */
#define VXR_FILL2D(name, T)                                                                                  \
  void name(T *allocated, T *aligned, int64_t offset, int64_t size0, int64_t size1, int64_t stride0,         \
            int64_t stride1, T value);                                                                       \
  void name(T *allocated, T *aligned, int64_t offset, int64_t size0, int64_t size1, int64_t stride0,         \
            int64_t stride1, T value) {                                                                      \
    (void)allocated;                                                                                         \
    for (int64_t i = 0; i < size0; i++)                                                                      \
      for (int64_t j = 0; j < size1; j++)                                                                    \
        aligned[offset + i * stride0 + j * stride1] = value;                                                 \
  }
#define VXR_FILL3D(name, T)                                                                                  \
  void name(T *allocated, T *aligned, int64_t offset, int64_t size0, int64_t size1, int64_t size2,           \
            int64_t stride0, int64_t stride1, int64_t stride2, T value);                                     \
  void name(T *allocated, T *aligned, int64_t offset, int64_t size0, int64_t size1, int64_t size2,           \
            int64_t stride0, int64_t stride1, int64_t stride2, T value) {                                    \
    (void)allocated;                                                                                         \
    for (int64_t i = 0; i < size0; i++)                                                                      \
      for (int64_t j = 0; j < size1; j++)                                                                    \
        for (int64_t k = 0; k < size2; k++)                                                                  \
          aligned[offset + i * stride0 + j * stride1 + k * stride2] = value;                                 \
  }

/* the SPIR-V CPU runner's */
VXR_FILL1D(fillI32Buffer, int32_t)
VXR_FILL1D(fillF32Buffer, float)
VXR_FILL1D(fillF32Buffer1D, float)
VXR_FILL2D(fillF32Buffer2D, float)
VXR_FILL3D(fillF32Buffer3D, float)
/* the Vulkan runner's: 1-D to 3-D of i32, f32 and i8 */
VXR_FILL1D(fillResource1DInt, int32_t)
VXR_FILL1D(fillResource1DFloat, float)
VXR_FILL1D(fillResource1DInt8, int8_t)
VXR_FILL2D(fillResource2DInt, int32_t)
VXR_FILL2D(fillResource2DFloat, float)
VXR_FILL2D(fillResource2DInt8, int8_t)
VXR_FILL3D(fillResource3DInt, int32_t)
VXR_FILL3D(fillResource3DFloat, float)
VXR_FILL3D(fillResource3DInt8, int8_t)
