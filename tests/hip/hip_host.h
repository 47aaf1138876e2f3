/*
 * hip_host.h - what the host programs of tests/hip share: device buffers
 * from libvortexd_runtime, a deterministic input, and the memref
 * arguments cgeist's host wrappers take (allocated, aligned, offset, size,
 * stride) as one macro.
 */
#ifndef HIP_HOST_H
#define HIP_HOST_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

void *mgpuMemAlloc(uint64_t size, void *stream, bool host_shared);

/* A 1-D memref over p of n elements, as five wrapper arguments. */
#define MEMREF(p, n) (p), (p), (int64_t)0, (int64_t)(n), (int64_t)1
#define MEMREF_ARGS(T) T *, T *, int64_t, int64_t, int64_t

/* n elements of device memory (host-addressable), or exit 2. */
static inline void *dev_alloc(uint64_t bytes) {
  void *p = mgpuMemAlloc(bytes, NULL, false);
  if (!p) {
    fprintf(stderr, "mgpuMemAlloc failed\n");
    __builtin_trap();
  }
  return p;
}

/* A deterministic pseudo-random sequence (no libc rand state). */
static inline uint32_t next_rand(uint32_t *s) {
  *s = *s * 1664525u + 1013904223u;
  return *s >> 8;
}

#endif
