/*
 * vxr_vortex.c - the Vortex device backend of libvortexd_runtime: a real
 * device (or Vortex's own simulators) through the Vortex runtime API of
 * libvortex.so, loaded with dlopen ($VORTEXD_LIBVORTEX, else
 * "libvortex.so"; libvortex itself picks its driver from VORTEX_DRIVER).
 *
 * Kernels are linked with the Vortex kernel SDK in $VORTEXD_VORTEX_SDK: a
 * directory holding the link script link.ld and the objects and archives
 * of the device runtime (every *.o, then every *.a, in name order), by
 * GNU ld with the module's dispatcher as main; the image is converted
 * to a .vxbin (u64 min_vma, u64 max_vma, then the bytes of [min_vma,
 * max_vma), the Vortex loader's format) and uploaded with
 * vx_upload_kernel_bytes.  The image stays on the device: a launch of any
 * kernel of the same module uploads only its launch record (the kernel id
 * and the argument buffer, with vx_upload_bytes).  The arena is one device
 * buffer (vx_mem_alloc), copied in and out around each launch.
 *
 * Images all start at STARTUP_ADDR, so one is on the device at a time.
 * When another module's image replaces it, its bytes as the device left
 * them (its module's variables, which CUDA keeps for the module's
 * lifetime) are read back and kept, and uploaded instead of the linked
 * image when that module launches again: each module sees its own memory,
 * as if it had stayed on the device.  A failed launch forgets them: its
 * module starts again from the linked image.
 *
 * A libvortex with vortex2.h's v1 API (its entry points found with dlsym)
 * is driven through it, as upstream's runtime/include/vortex2.h declares
 * it: the device opened with vx_device_open, the arena a vx_buffer_create
 * buffer.  Its legacy vortex.h is a layer over the same handles, which
 * 2.x kernels go through.  Vortex 3.0 kernels go through the v1 API alone:
 * the module loaded once (vx_module_load_bytes), the kernel
 * found by name (vx_module_get_kernel, the image's VXSYMTAB footer), the
 * launch with the argument buffer as args_host (vx_enqueue_launch), the
 * arena written and read back around it, the last event waited for.  A
 * library without it runs 2.x kernels only.
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
  /* vortex2.h (its v1 API, as upstream's runtime/include/vortex2.h declares
   * it), when the library has it (all or none) */
  int v2;
  int (*device_open)(uint32_t index, vx_device_h *);
  int (*buffer_create)(vx_device_h, uint64_t size, uint32_t flags, vx_buffer_h *);
  int (*buffer_address)(vx_buffer_h, uint64_t *addr);
  int (*queue_create)(vx_device_h, const void *info, void **queue);
  int (*buffer_reserve)(vx_device_h, uint64_t addr, uint64_t size, uint32_t flags, vx_buffer_h *);
  int (*buffer_release)(vx_buffer_h);
  int (*enqueue_write)(void *queue, vx_buffer_h dst, uint64_t off, const void *src, uint64_t size,
                       uint32_t nwait, const void *wait, void **event);
  int (*enqueue_read)(void *queue, void *dst, vx_buffer_h src, uint64_t off, uint64_t size, uint32_t nwait,
                      const void *wait, void **event);
  int (*enqueue_launch)(void *queue, const void *info, uint32_t nwait, const void *wait, void **event);
  int (*module_load_bytes)(vx_device_h, const void *bytes, size_t size, void **module);
  int (*module_release)(void *module);
  int (*module_get_kernel)(void *module, const char *name, void **kernel);
  int (*kernel_release)(void *kernel);
  int (*event_wait_value)(void *event, uint64_t value, uint64_t timeout_ns);
  int (*event_release)(void *event);
  void *queue;
  /* the image on the device: its vxr_launch.image_id (0: none), its
   * handle and how it got there (1: a module vortex2.h loaded; 0: a buffer
   * vortex.h uploaded), and the linked image (for its footer) */
  uint64_t resident;
  void *resident_buf;
  int resident_v2;
  const uint8_t *resident_image;
  size_t resident_image_size;
  uint8_t resident_hdr[16]; /* its .vxbin's header (min_vma, max_vma) */
  struct vxr__vx_saved *saved;
} vxr__vortex;

/* An image another replaced on the device: a .vxbin of it (its header,
 * then every byte of [min_vma, max_vma) as the device held them; no
 * footer) under its vxr_launch.image_id.  At most one per
 * module the program loaded (the runtime never unloads one). */
typedef struct vxr__vx_saved {
  uint64_t id;
  uint8_t *vxbin;
  size_t size;
  struct vxr__vx_saved *next;
} vxr__vx_saved;

/* vortex2.h's vx_queue_info_t and vx_launch_info_t, as it declares them. */
typedef struct {
  size_t struct_size;
  const void *next;
  int priority; /* VX_QUEUE_PRIORITY_NORMAL = 1 */
  uint32_t flags;
} vxr__queue_info;
typedef struct {
  size_t struct_size;
  const void *next;
  void *kernel; /* vx_kernel_h, from vx_module_get_kernel */
  const void *args_host;
  size_t args_size;
  uint32_t ndim;
  uint32_t grid_dim[3], block_dim[3];
  uint32_t lmem_size;
  uint32_t cluster_dim[3];
} vxr__launch_info;

static vxr__vortex vxr__vx;

/* Flags of vx_mem_alloc and vx_buffer_create (VX_MEM_READ_WRITE). */
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
  struct {
    void **fn;
    const char *name;
  } v2syms[] = {{(void **)&v->device_open, "vx_device_open"},
                {(void **)&v->buffer_create, "vx_buffer_create"},
                {(void **)&v->buffer_address, "vx_buffer_address"},
                {(void **)&v->queue_create, "vx_queue_create"},
                {(void **)&v->buffer_reserve, "vx_buffer_reserve"},
                {(void **)&v->buffer_release, "vx_buffer_release"},
                {(void **)&v->enqueue_write, "vx_enqueue_write"},
                {(void **)&v->enqueue_read, "vx_enqueue_read"},
                {(void **)&v->enqueue_launch, "vx_enqueue_launch"},
                {(void **)&v->module_load_bytes, "vx_module_load_bytes"},
                {(void **)&v->module_release, "vx_module_release"},
                {(void **)&v->module_get_kernel, "vx_module_get_kernel"},
                {(void **)&v->kernel_release, "vx_kernel_release"},
                {(void **)&v->event_wait_value, "vx_event_wait_value"},
                {(void **)&v->event_release, "vx_event_release"}};
  v->v2 = 1;
  for (size_t i = 0; i < sizeof v2syms / sizeof v2syms[0]; i++)
    v->v2 &= (*v2syms[i].fn = dlsym(v->lib, v2syms[i].name)) != NULL;
  /* the first device, and the arena: the v1 way when there is one */
  uint64_t addr = 0;
  int rc = v->v2 ? v->device_open(0, &v->dev) != 0 ||
                       v->buffer_create(v->dev, arena_size, VXR__MEM_READ_WRITE, &v->arena) != 0 ||
                       v->buffer_address(v->arena, &addr) != 0
                 : v->dev_open(&v->dev) != 0 ||
                       v->mem_alloc(v->dev, arena_size, VXR__MEM_READ_WRITE, &v->arena) != 0 ||
                       v->mem_address(v->arena, &addr) != 0;
  if (rc || addr + arena_size > (1ull << 32)) {
    snprintf(err, errcap, "cannot open the Vortex device or allocate %u bytes on it (%s)", arena_size,
             v->v2 ? "vortex2.h: vx_device_open, vx_buffer_create" : "vortex.h: vx_dev_open, vx_mem_alloc");
    return -EIO;
  }
  *base = (uint32_t)addr;
  return 0;
}

static int vxr__vx_link(vxr_backend *b, const uint8_t *obj, size_t obj_size, const vxp_kernel *k,
                        const char *entry, uint8_t **image, size_t *image_size, char *err, size_t errcap) {
  (void)b;
  if (k->vortex_abi == 3 && !vxr__vx.v2) {
    snprintf(
        err, errcap,
        "kernel %s is compiled for Vortex 3.0 and the Vortex runtime has no vortex2.h queue API to launch "
        "it (compile for vortex2-rv%u: the daemon's `target` key)",
        k->name, k->xlen ? k->xlen : 32);
    return -ENOTSUP;
  }
  const char *sdk = getenv("VORTEXD_VORTEX_SDK");
  if (!sdk || !*sdk) {
    snprintf(err, errcap,
             "no .vxbin image from vortexd and VORTEXD_VORTEX_SDK is not set (the Vortex kernel SDK: link.ld "
             "and the device runtime)");
    return -ENOENT;
  }
  const char *ld = getenv("VORTEXD_LD") ? getenv("VORTEXD_LD") : VXR_LD;
  return vxr_link_vxbin(sdk, ld, k->xlen == 64 ? VXR_LIBC64 : VXR_LIBC,
                        k->xlen == 64 ? VXR_LIBGCC64 : VXR_LIBGCC, obj, obj_size, entry, k->vortex_abi, image,
                        image_size, err, errcap);
}

/* Whether l's image is the one on the device, put there the v2 way or
 * not. */
static int vxr__vx_is_resident(const vxr__vortex *v, const vxr_launch *l, int v2) {
  return v->resident && v->resident == l->image_id && v->resident_v2 == v2;
}

/* The saved bytes of image id, or NULL. */
static vxr__vx_saved *vxr__vx_saved_of(vxr__vortex *v, uint64_t id) {
  for (vxr__vx_saved *s = v->saved; s; s = s->next)
    if (s->id == id) return s;
  return NULL;
}

/* What l uploads: its image's saved bytes when another replaced it on the
 * device before, else the linked image (*size bytes either way). */
static const uint8_t *vxr__vx_image_bytes(vxr__vortex *v, const vxr_launch *l, size_t *size) {
  vxr__vx_saved *s = vxr__vx_saved_of(v, l->image_id);
  if (s && s->size) return *size = s->size, s->vxbin;
  return *size = l->elf_size, l->elf;
}

/* Waits for the vortex2.h event ev (NULL: none) and releases it; 0, or
 * nonzero when waiting failed. */
static int vxr__vx_wait(vxr__vortex *v, void *ev) {
  if (!ev) return 0;
  int rc = v->event_wait_value(ev, 1, UINT64_MAX); /* an enqueue's event reaches 1 when done */
  v->event_release(ev);
  return rc;
}

/* Reads the resident image's memory, [min_vma, max_vma), back from the
 * device into its saved copy, before another image replaces it: a .vxbin
 * of header, that memory and the linked image's footer (its kernel
 * names).  A module loaded through vortex2.h is released first and the
 * range read through a buffer reserved over it (vortex2.h gives no
 * handle to a module's memory; releasing it leaves the memory as it
 * was).  0, or -1 with a message in err (nothing is kept then: the module
 * starts again from its linked image). */
static int vxr__vx_save(vxr__vortex *v, char *err, size_t errcap) {
  vxr_vxbin h;
  vxr_vxbin_parse(v->resident_image, v->resident_image_size, &h); /* checked when it was uploaded */
  size_t n = (size_t)(h.max_vma - h.min_vma), foot = v->resident_image_size - 16 - h.payload_size;
  vxr__vx_saved *s = vxr__vx_saved_of(v, v->resident);
  if (!s && (s = calloc(1, sizeof *s))) s->id = v->resident, s->next = v->saved, v->saved = s;
  uint8_t *grown = s ? realloc(s->vxbin, 16 + n + foot) : NULL;
  if (!grown) {
    if (s) s->size = 0;
    snprintf(err, errcap, "out of memory keeping a module's device memory");
    return -1;
  }
  s->vxbin = grown, s->size = 16 + n + foot;
  memcpy(s->vxbin, v->resident_image, 16);
  memcpy(s->vxbin + 16 + n, v->resident_image + 16 + h.payload_size, foot);
  int rc;
  if (v->resident_v2) {
    void *ev = NULL;
    vx_buffer_h range = NULL;
    v->module_release(v->resident_buf);
    v->resident_buf = NULL;
    rc = v->buffer_reserve(v->dev, h.min_vma, n, VXR__MEM_READ_WRITE, &range) != 0 ||
         v->enqueue_read(v->queue, s->vxbin + 16, range, 0, n, 0, NULL, &ev) != 0 || vxr__vx_wait(v, ev) != 0;
    if (range) v->buffer_release(range);
  } else {
    rc = v->copy_from_dev(s->vxbin + 16, v->resident_buf, 0, n);
  }
  if (rc != 0) {
    s->size = 0; /* unusable: the linked image is uploaded instead */
    snprintf(err, errcap, "Vortex runtime: reading a module's device memory back failed");
    return -1;
  }
  return 0;
}

/* Forgets the image on the device, releasing its module or buffer. */
static void vxr__vx_evict(vxr__vortex *v) {
  if (v->resident_buf) {
    if (v->resident_v2)
      v->module_release(v->resident_buf);
    else if (v->mem_free)
      v->mem_free(v->resident_buf);
  }
  v->resident = 0, v->resident_buf = NULL;
}

/* Forgets what a failed launch of the resident image left: the image and
 * its saved bytes. */
static void vxr__vx_evict_failed(vxr__vortex *v) {
  vxr__vx_saved *s = vxr__vx_saved_of(v, v->resident);
  if (s) s->size = 0;
  vxr__vx_evict(v);
}

/* Makes room for l's image: the resident one, another module's, is saved
 * (vxr__vx_save) and evicted.  0, or -1 with a message in err. */
static int vxr__vx_replace(vxr__vortex *v, const vxr_launch *l, char *err, size_t errcap) {
  int rc = v->resident && v->resident != l->image_id ? vxr__vx_save(v, err, errcap) : 0;
  vxr__vx_evict(v);
  return rc;
}

/* Records that l's image is now on the device as handle (a vortex2.h
 * module when v2, else a vortex.h buffer). */
static void vxr__vx_keep(vxr__vortex *v, const vxr_launch *l, void *handle, int v2) {
  v->resident = l->image_id, v->resident_buf = handle, v->resident_v2 = v2;
  v->resident_image = l->elf, v->resident_image_size = l->elf_size;
}

/* Runs a Vortex 3.0 kernel through vortex2.h's v1 API (see the file
 * comment): its module loaded once (vx_module_load_bytes), the kernel
 * found by name (vx_module_get_kernel: the image's VXSYMTAB footer), the
 * arena written, the launch with the argument buffer as args_host, the
 * arena read back, the last event waited for. */
static int vxr__vx_run_queued(vxr__vortex *v, const vxr_launch *l, char *err, size_t errcap) {
  uint32_t off = l->args_addr - l->device_base;
  vxr__queue_info qi = {sizeof qi, NULL, 1, 0};
  vxr__launch_info li = {sizeof li, NULL, NULL, l->arena + off, l->args_bytes,
                         3,         {0},  {0},  l->local_bytes, {1, 1, 1}};
  memcpy(li.grid_dim, l->grid, sizeof li.grid_dim);
  memcpy(li.block_dim, l->block, sizeof li.block_dim);
  int rc = !v->queue && v->queue_create(v->dev, &qi, &v->queue) != 0 ? 1 : 0;
  if (!rc && !vxr__vx_is_resident(v, l, 1)) {
    void *mod = NULL;
    size_t size;
    const uint8_t *bytes = vxr__vx_image_bytes(v, l, &size);
    rc = vxr__vx_replace(v, l, err, errcap) != 0                        ? 8
         : v->module_load_bytes(v->dev, bytes, size, &mod) != 0 || !mod ? 2
                                                                        : 0;
    if (!rc) vxr__vx_keep(v, l, mod, 1);
  }
  void *kernel = NULL, *ev = NULL;
  rc = rc                                                                                     ? rc
       : v->module_get_kernel(v->resident_buf, l->kernel->name, &kernel) != 0 || !kernel      ? 3
       : v->enqueue_write(v->queue, v->arena, 0, l->arena, l->arena_size, 0, NULL, NULL) != 0 ? 4
       : (li.kernel = kernel, v->enqueue_launch(v->queue, &li, 0, NULL, NULL)) != 0           ? 5
       : v->enqueue_read(v->queue, l->arena, v->arena, 0, l->arena_size, 0, NULL, &ev) != 0   ? 6
       : vxr__vx_wait(v, ev) != 0                                                             ? 7
                                                                                              : 0;
  if (kernel) v->kernel_release(kernel);
  static const char *const what[] = {"",
                                     "creating a queue",
                                     "loading the module",
                                     "finding the kernel by name in the module",
                                     "writing device memory",
                                     "launching the kernel",
                                     "reading device memory back",
                                     "waiting for the launch"};
  if (rc == 3)
    snprintf(err, errcap, "Vortex runtime (vortex2.h): the module has no kernel %s", l->kernel->name);
  else if (rc && rc < 8)
    snprintf(err, errcap, "Vortex runtime (vortex2.h): %s failed", what[rc]);
  if (rc >= 5 && rc < 8) vxr__vx_evict_failed(v); /* what a failed launch left is not trusted */
  return rc ? -EIO : 0;
}

static int vxr__vx_run(vxr_backend *b, const vxr_launch *l, char *err, size_t errcap) {
  (void)b;
  vxr__vortex *v = &vxr__vx;
  if (l->kernel->vortex_abi == 3) return vxr__vx_run_queued(v, l, err, errcap);
  vx_buffer_h args = NULL;
  /* the launch record lives in the arena; vx_start takes its own copy */
  uint32_t off = l->args_addr - l->device_base;
  int rc = v->copy_to_dev(v->arena, l->arena, 0, l->arena_size) != 0 ? 1 : 0;
  if (!rc && !vxr__vx_is_resident(v, l, 0)) {
    vx_buffer_h kernel = NULL;
    size_t size;
    const uint8_t *bytes = vxr__vx_image_bytes(v, l, &size);
    rc = vxr__vx_replace(v, l, err, errcap) != 0                     ? 7
         : v->upload_kernel_bytes(v->dev, bytes, size, &kernel) != 0 ? 2
                                                                     : 0;
    if (!rc) vxr__vx_keep(v, l, kernel, 0);
  }
  rc = rc                                                                   ? rc
       : v->upload_bytes(v->dev, l->arena + off, l->args_bytes, &args) != 0 ? 3
       : v->start(v->dev, v->resident_buf, args) != 0                       ? 4
       : v->ready_wait(v->dev, 60000) != 0                                  ? 5
       : v->copy_from_dev(l->arena, v->arena, 0, l->arena_size) != 0        ? 6
                                                                            : 0;
  static const char *const what[] = {"",
                                     "copying device memory in",
                                     "uploading the kernel",
                                     "uploading the argument buffer",
                                     "starting the kernel",
                                     "waiting for the kernel",
                                     "copying device memory back"};
  if (rc && rc < 7) snprintf(err, errcap, "Vortex runtime: %s failed", what[rc]);
  if (rc == 4 || rc == 5) vxr__vx_evict_failed(v); /* what a failed launch left is not trusted */
  if (v->mem_free && args) v->mem_free(args);
  return rc ? -EIO : 0;
}

vxr_backend *vxr_vortex_backend(void) {
  static vxr_backend b = {"vortex", 1, vxr__vx_open, vxr__vx_link, vxr__vx_run};
  return &b;
}
