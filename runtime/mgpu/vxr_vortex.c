/*
 * vxr_vortex.c - the Vortex device backend of libvortexd_runtime: a real
 * device (or Vortex's own simulators) through the Vortex runtime API of
 * libvortex.so, loaded with dlopen ($VORTEXD_LIBVORTEX, else
 * "libvortex.so"; libvortex itself picks its driver from VORTEX_DRIVER).
 *
 * Kernels are linked with the Vortex kernel SDK in $VORTEXD_VORTEX_SDK: a
 * directory holding the link script link.ld and the objects and archives
 * of the device runtime (every *.o, then every *.a, in name order), by
 * ld.lld-22 with the kernel's entry as main; the image is converted to a
 * .vxbin (u64 min_vma, u64 max_vma, then the bytes of [min_vma, max_vma),
 * the Vortex loader's format) and uploaded with vx_upload_kernel_bytes.
 * The arena is one device buffer (vx_mem_alloc), copied in and out around
 * each launch; the argument buffer is uploaded with vx_upload_bytes.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vxr.h"
#include "vxr_vxbin.h"

typedef void *vx_device_h;
typedef void *vx_buffer_h;

/* The entry points used, as runtime/include/vortex.h declares them. */
typedef struct {
  void *lib;
  int (*dev_open)(vx_device_h *);
  int (*mem_alloc)(vx_device_h, uint64_t, int, vx_buffer_h *);
  int (*mem_address)(vx_buffer_h, uint64_t *);
  int (*mem_free)(vx_buffer_h);
  int (*copy_to_dev)(vx_buffer_h, const void *, uint64_t, uint64_t);
  int (*copy_from_dev)(void *, vx_buffer_h, uint64_t, uint64_t);
  int (*upload_kernel_bytes)(vx_device_h, const void *, uint64_t, vx_buffer_h *);
  int (*upload_bytes)(vx_device_h, const void *, uint64_t, vx_buffer_h *);
  int (*start)(vx_device_h, vx_buffer_h, vx_buffer_h);
  int (*ready_wait)(vx_device_h, uint64_t);
  vx_device_h dev;
  vx_buffer_h arena;
} vxr__vortex;

static vxr__vortex vxr__vx;

/* Flags of vx_mem_alloc: read and write. */
#define VXR__MEM_READ_WRITE 0x3

static int vxr__vx_open(vxr_backend *b, uint32_t arena_size, uint32_t *base, char *err, size_t errcap) {
  (void)b;
  vxr__vortex *v = &vxr__vx;
  const char *path = getenv("VORTEXD_LIBVORTEX");
  v->lib = dlopen(path && *path ? path : "libvortex.so", RTLD_NOW | RTLD_LOCAL);
  if (!v->lib) {
    snprintf(err, errcap, "cannot load the Vortex runtime (%s); set VORTEXD_LIBVORTEX", dlerror());
    return -ENOENT;
  }
  struct {
    void **fn;
    const char *name;
  } syms[] = {{(void **)&v->dev_open, "vx_dev_open"},
              {(void **)&v->mem_alloc, "vx_mem_alloc"},
              {(void **)&v->mem_address, "vx_mem_address"},
              {(void **)&v->copy_to_dev, "vx_copy_to_dev"},
              {(void **)&v->copy_from_dev, "vx_copy_from_dev"},
              {(void **)&v->upload_kernel_bytes, "vx_upload_kernel_bytes"},
              {(void **)&v->upload_bytes, "vx_upload_bytes"},
              {(void **)&v->start, "vx_start"},
              {(void **)&v->ready_wait, "vx_ready_wait"}};
  for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++)
    if (!(*syms[i].fn = dlsym(v->lib, syms[i].name))) {
      snprintf(err, errcap, "the Vortex runtime has no %s", syms[i].name);
      return -ENOSYS;
    }
  *(void **)&v->mem_free = dlsym(v->lib, "vx_mem_free"); /* optional */
  uint64_t addr = 0;
  if (v->dev_open(&v->dev) != 0 || v->mem_alloc(v->dev, arena_size, VXR__MEM_READ_WRITE, &v->arena) != 0 ||
      v->mem_address(v->arena, &addr) != 0 || addr + arena_size > (1ull << 32)) {
    snprintf(err, errcap, "cannot open the Vortex device or allocate %u bytes on it", arena_size);
    return -EIO;
  }
  *base = (uint32_t)addr;
  return 0;
}

static int vxr__vx_link(vxr_backend *b, const uint8_t *obj, size_t obj_size, const vxp_kernel *k,
                        uint8_t **image, size_t *image_size, char *err, size_t errcap) {
  (void)b;
  if (k->vortex_abi == 3 || k->xlen == 64) {
    snprintf(err, errcap,
             "kernel %s is compiled for vortex%u-rv%u; this backend launches Vortex 2.x RV32 kernels through "
             "libvortex's vortex.h (compile for vortex2-rv32: the daemon's `target` key)",
             k->name, k->vortex_abi, k->xlen);
    return -ENOTSUP;
  }
  const char *sdk = getenv("VORTEXD_VORTEX_SDK");
  if (!sdk || !*sdk) {
    snprintf(err, errcap,
             "no .vxbin image from vortexd and VORTEXD_VORTEX_SDK is not set (the Vortex kernel SDK: link.ld "
             "and the device runtime)");
    return -ENOENT;
  }
  const char *lld = getenv("VORTEXD_LLD") ? getenv("VORTEXD_LLD") : VXR_LLD;
  return vxr_link_vxbin(sdk, lld, VXR_LIBC, VXR_LIBGCC, obj, obj_size, k->entry, 2, image, image_size, err,
                        errcap);
}

static int vxr__vx_run(vxr_backend *b, const vxr_launch *l, char *err, size_t errcap) {
  (void)b;
  vxr__vortex *v = &vxr__vx;
  vx_buffer_h kernel = NULL, args = NULL;
  /* the argument buffer lives in the arena; vx_start takes its own copy */
  uint32_t off = l->args_addr - l->device_base;
  int rc = v->copy_to_dev(v->arena, l->arena, 0, l->arena_size) != 0                     ? 1
           : v->upload_kernel_bytes(v->dev, l->elf, l->elf_size, &kernel) != 0           ? 2
           : v->upload_bytes(v->dev, l->arena + off, l->kernel->buffer_size, &args) != 0 ? 3
           : v->start(v->dev, kernel, args) != 0                                         ? 4
           : v->ready_wait(v->dev, 60000) != 0                                           ? 5
           : v->copy_from_dev(l->arena, v->arena, 0, l->arena_size) != 0                 ? 6
                                                                                         : 0;
  static const char *const what[] = {"",
                                     "copying device memory in",
                                     "uploading the kernel",
                                     "uploading the argument buffer",
                                     "starting the kernel",
                                     "waiting for the kernel",
                                     "copying device memory back"};
  if (rc) snprintf(err, errcap, "Vortex runtime: %s failed", what[rc]);
  if (v->mem_free) {
    if (kernel) v->mem_free(kernel);
    if (args) v->mem_free(args);
  }
  return rc ? -EIO : 0;
}

vxr_backend *vxr_vortex_backend(void) {
  static vxr_backend b = {"vortex", 1, vxr__vx_open, vxr__vx_link, vxr__vx_run};
  return &b;
}
