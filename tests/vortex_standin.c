/*
 * vortex_standin.c - a stand-in for libvortex.so, the Vortex runtime API,
 * for testing libvortexd_runtime's Vortex backend without hardware: the
 * same entry points (runtime/include/vortex.h), with buffers in host
 * memory and kernels (.vxbin: u64 min_vma, u64 max_vma, image) run on the
 * lockstep SIMT emulator.  vx_standin_starts() says how many kernels ran,
 * vx_standin_uploads() how many kernel images were put on the device.
 * Also the queue API of Vortex 3.0 (vortex2.h) that libvortexd_runtime
 * drives for 3.0 kernels: see below; built without it (VORTEX_STANDIN_NO_V2)
 * it stands in for a 2.x libvortex.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/mgpu/vxr_vxbin.h"
#include "runtime/simt/vxs.h"

typedef struct buffer {
  uint64_t addr; /* device address (XLEN bits) */
  uint32_t size;
  uint8_t *bytes;
  int is_kernel;
  uint64_t entry; /* a kernel's min_vma (RV64: above 4 GiB, at upstream's 0x180000000) */
  struct buffer *next;
} buffer;

typedef struct {
  buffer *buffers;
  uint32_t next_addr;
} device;

static int starts, uploads, v1_opens;
static device *the_device;

int vx_standin_starts(void);
int vx_standin_starts(void) { return starts; }
int vx_standin_uploads(void);
int vx_standin_uploads(void) { return uploads; }
/* How many devices were opened through vortex2.h's vx_device_open. */
int vx_standin_v1_opens(void);
int vx_standin_v1_opens(void) { return v1_opens; }

int vx_dev_open(void **out);
int vx_dev_open(void **out) {
  device *d = calloc(1, sizeof *d);
  if (!d) return -1;
  d->next_addr = 0x10000000u;
  the_device = d;
  *out = d;
  return 0;
}

static buffer *add(device *d, uint32_t size) {
  buffer *b = calloc(1, sizeof *b);
  if (!b || !(b->bytes = calloc(1, size ? size : 1))) {
    free(b);
    return NULL;
  }
  b->addr = d->next_addr;
  b->size = size;
  d->next_addr += (size + 4095u) & ~4095u;
  b->next = d->buffers;
  d->buffers = b;
  return b;
}

int vx_mem_alloc(void *dev, uint64_t size, int flags, void **out);
int vx_mem_alloc(void *dev, uint64_t size, int flags, void **out) {
  (void)flags;
  buffer *b = size < (1u << 30) ? add(dev, (uint32_t)size) : NULL;
  *out = b;
  return b ? 0 : -1;
}

int vx_mem_address(void *buf, uint64_t *addr);
int vx_mem_address(void *buf, uint64_t *addr) {
  *addr = ((buffer *)buf)->addr;
  return 0;
}

int vx_mem_free(void *buf);
int vx_mem_free(void *buf) {
  buffer *b = buf;
  if (!b->is_kernel && the_device)
    for (buffer **pp = &the_device->buffers; *pp; pp = &(*pp)->next)
      if (*pp == b) {
        *pp = b->next;
        break;
      }
  free(b->bytes);
  free(b);
  return 0;
}

int vx_copy_to_dev(void *buf, const void *host, uint64_t off, uint64_t size);
int vx_copy_to_dev(void *buf, const void *host, uint64_t off, uint64_t size) {
  buffer *b = buf;
  if (off + size > b->size) return -1;
  memcpy(b->bytes + off, host, size);
  return 0;
}

int vx_copy_from_dev(void *host, void *buf, uint64_t off, uint64_t size);
int vx_copy_from_dev(void *host, void *buf, uint64_t off, uint64_t size) {
  buffer *b = buf;
  if (off + size > b->size) return -1;
  memcpy(host, b->bytes + off, size);
  return 0;
}

int vx_upload_bytes(void *dev, const void *bytes, uint64_t size, void **out);
int vx_upload_bytes(void *dev, const void *bytes, uint64_t size, void **out) {
  if (vx_mem_alloc(dev, size, 3, out) != 0) return -1;
  return vx_copy_to_dev(*out, bytes, 0, size);
}

int vx_upload_kernel_bytes(void *dev, const void *bytes, uint64_t size, void **out);
int vx_upload_kernel_bytes(void *dev, const void *bytes, uint64_t size, void **out) {
  /* the payload, then zeros up to max_vma (BSS), as upstream's loader does */
  vxr_vxbin v;
  if (vxr_vxbin_parse(bytes, size, &v) != 0 || v.max_vma - v.min_vma > (256u << 20)) return -1;
  buffer *b = calloc(1, sizeof *b);
  if (!b || !(b->bytes = calloc(1, v.max_vma - v.min_vma))) return free(b), -1;
  memcpy(b->bytes, v.payload, v.payload_size);
  b->size = (uint32_t)(v.max_vma - v.min_vma);
  b->is_kernel = 1;
  b->entry = v.min_vma;
  (void)dev;
  *out = b;
  uploads++;
  return 0;
}

/* The device's register width: VORTEX_STANDIN_XLEN=64 makes it RV64. */
static uint32_t standin_xlen(void) {
  const char *xlen = getenv("VORTEX_STANDIN_XLEN");
  return xlen && strcmp(xlen, "64") == 0 ? 64 : 32;
}

/* Runs kernel image k on a new emulated device of configuration c with
 * every buffer of d mapped, mscratch = args: as Vortex 2.x does (l NULL:
 * the image's main) or as 3.0's scheduler runs launch *l; the buffers and
 * the image's own memory (its writable data: device memory keeps it, as a
 * device's does) read back after.  0 or -1 (said on stderr). */
static int run_image(device *d, buffer *k, uint64_t args, const vxs_config *c, const vxs_kmu_launch *l) {
  vxs_device *emu = NULL;
  vxs_report rep;
  memset(&rep, 0, sizeof rep);
  int rc = vxs_device_create(c, &emu) != 0 || vxs_load_image(emu, k->entry, k->bytes, k->size) != 0;
  for (buffer *b = d->buffers; !rc && b; b = b->next)
    rc = vxs_mem_map(emu, b->addr, (b->size + 4095u) & ~4095u) != 0 ||
         vxs_mem_write(emu, b->addr, b->bytes, b->size);
  if (!rc) rc = (l ? vxs_run_kmu(emu, args, l, &rep) : vxs_run(emu, args, &rep)) != 0;
  if (!rc)
    for (buffer *b = d->buffers; !rc && b; b = b->next)
      rc = vxs_mem_read(emu, b->addr, b->bytes, b->size) != 0;
  if (!rc) rc = vxs_mem_read(emu, k->entry, k->bytes, k->size) != 0;
  if (rc && rep.error[0]) fprintf(stderr, "vortex stand-in: %s\n", rep.error);
  if (emu) vxs_device_destroy(emu);
  starts += !rc;
  return rc ? -1 : 0;
}

/* The device: warps warps per core, 64 KiB of local memory per warp. */
static void standin_config(vxs_config *c, uint32_t warps) {
  vxs_config_default(c);
  c->warps_per_core = warps;
  c->barriers = 0;    /* vxs default: one per warp */
  c->ipdom_depth = 0; /* vxs default: 2 x threads per warp */
  c->local_mem_bytes = warps * 65536u;
  c->xlen = standin_xlen();
}

int vx_start(void *dev, void *kernel, void *args);
int vx_start(void *dev, void *kernel, void *args) {
  vxs_config c;
  standin_config(&c, 8);
  return run_image(dev, kernel, ((buffer *)args)->addr, &c, NULL);
}

int vx_ready_wait(void *dev, uint64_t timeout_ms);
int vx_ready_wait(void *dev, uint64_t timeout_ms) {
  (void)dev, (void)timeout_ms; /* vx_start ran the kernel to completion */
  return 0;
}

#ifndef VORTEX_STANDIN_NO_V2
/* ---- vortex2.h, its v1 API as upstream's runtime/include/vortex2.h
 * declares it (the parts libvortexd_runtime uses): modules loaded from a
 * .vxbin and their kernels found by name in its VXSYMTAB footer (as
 * upstream's module.cpp does, through the runtime's own parser), launches
 * of a kernel handle with a host argument blob, started by the emulated
 * hardware scheduler at the kernel's PC (CSR 0xCE1).  Commands run when
 * enqueued, so every event is complete; VORTEX_STANDIN_XLEN=64 makes the
 * device RV64.  Device memory outlives what held it: a range released and
 * reserved again reads what was there, as a device's memory does. ---- */

typedef struct {
  size_t struct_size;
  const void *next;
  void *kernel; /* a kernel_h */
  const void *args_host;
  size_t args_size;
  uint32_t ndim;
  uint32_t grid_dim[3], block_dim[3];
  uint32_t lmem_size;
  uint32_t cluster_dim[3];
} launch_info;

typedef struct {
  buffer *image; /* reserved at min_vma */
  uint8_t *vxbin;
  size_t size;
  vxr_vxbin parsed; /* points into vxbin */
} module_h;

typedef struct {
  module_h *module;
  uint64_t pc;
} kernel_h;

/* What the last released image buffer held, which a buffer reserved over
 * the same range reads. */
static buffer left_behind;

static int event; /* every event: complete */

/* The device and its buffers as vortex2.h opens and creates them: the same
 * handles as vortex.h's (upstream's vortex.h is a layer over vortex2.h). */
int vx_device_open(uint32_t index, void **out);
int vx_device_open(uint32_t index, void **out) {
  if (index != 0) return 2; /* one device */
  v1_opens++;
  return vx_dev_open(out);
}

int vx_buffer_create(void *dev, uint64_t size, uint32_t flags, void **out);
int vx_buffer_create(void *dev, uint64_t size, uint32_t flags, void **out) {
  return vx_mem_alloc(dev, size, (int)flags, out) == 0 ? 0 : 3;
}

int vx_buffer_address(void *buf, uint64_t *addr);
int vx_buffer_address(void *buf, uint64_t *addr) { return vx_mem_address(buf, addr); }

int vx_queue_create(void *dev, const void *info, void **out);
int vx_queue_create(void *dev, const void *info, void **out) {
  (void)info;
  *out = dev; /* the device is its one queue */
  return 0;
}

/* A buffer at addr, holding what device memory there holds. */
int vx_buffer_reserve(void *dev, uint64_t addr, uint64_t size, uint32_t flags, void **out);
int vx_buffer_reserve(void *dev, uint64_t addr, uint64_t size, uint32_t flags, void **out) {
  (void)dev, (void)flags;
  buffer *b = calloc(1, sizeof *b);
  if (!b || addr >> 48 || size > (256u << 20) || !(b->bytes = calloc(1, size ? size : 1))) {
    free(b);
    return 3;
  }
  b->addr = addr, b->size = (uint32_t)size, b->is_kernel = 1, b->entry = addr;
  if (left_behind.bytes && left_behind.addr == b->addr)
    memcpy(b->bytes, left_behind.bytes, left_behind.size < b->size ? left_behind.size : b->size);
  *out = b;
  return 0;
}

int vx_buffer_release(void *buf);
int vx_buffer_release(void *buf) {
  buffer *b = buf;
  if (b->is_kernel) { /* device memory keeps what it held */
    free(left_behind.bytes);
    left_behind = *b;
    b->bytes = NULL;
  }
  return vx_mem_free(b);
}

int vx_enqueue_write(void *q, void *dst, uint64_t off, const void *src, uint64_t size, uint32_t n,
                     const void *w, void **ev);
int vx_enqueue_write(void *q, void *dst, uint64_t off, const void *src, uint64_t size, uint32_t n,
                     const void *w, void **ev) {
  (void)q, (void)n, (void)w;
  if (ev) *ev = &event;
  return vx_copy_to_dev(dst, src, off, size) ? 3 : 0;
}

int vx_enqueue_read(void *q, void *dst, void *src, uint64_t off, uint64_t size, uint32_t n, const void *w,
                    void **ev);
int vx_enqueue_read(void *q, void *dst, void *src, uint64_t off, uint64_t size, uint32_t n, const void *w,
                    void **ev) {
  (void)q, (void)n, (void)w;
  if (ev) *ev = &event;
  return vx_copy_from_dev(dst, src, off, size) ? 3 : 0;
}

int vx_module_load_bytes(void *dev, const void *bytes, size_t size, void **out);
int vx_module_load_bytes(void *dev, const void *bytes, size_t size, void **out) {
  module_h *m = calloc(1, sizeof *m);
  vxr_vxbin v;
  if (!m || vxr_vxbin_parse(bytes, size, &v) != 0 || !(m->vxbin = malloc(size))) {
    free(m);
    return 3;
  }
  memcpy(m->vxbin, bytes, size);
  m->size = size;
  vxr_vxbin_parse(m->vxbin, size, &m->parsed);
  void *image = NULL;
  if (vx_buffer_reserve(dev, v.min_vma, v.max_vma - v.min_vma, 3, &image) != 0) {
    free(m->vxbin), free(m);
    return 3;
  }
  m->image = image;
  memset(m->image->bytes, 0, m->image->size); /* the payload, then BSS zeroed */
  memcpy(m->image->bytes, m->parsed.payload, m->parsed.payload_size);
  uploads++;
  *out = m;
  return 0;
}

int vx_module_release(void *mod);
int vx_module_release(void *mod) {
  module_h *m = mod;
  vx_buffer_release(m->image);
  free(m->vxbin), free(m);
  return 0;
}

/* A footer-less image is one kernel, "main", at its start (module.cpp). */
int vx_module_get_kernel(void *mod, const char *name, void **out);
int vx_module_get_kernel(void *mod, const char *name, void **out) {
  module_h *m = mod;
  uint64_t pc = m->parsed.nkernels          ? vxr_vxbin_kernel(&m->parsed, name)
                : strcmp(name, "main") == 0 ? m->parsed.min_vma
                                            : 0;
  kernel_h *k = pc ? calloc(1, sizeof *k) : NULL;
  if (!k) return 3;
  k->module = m, k->pc = pc;
  *out = k;
  return 0;
}

int vx_kernel_release(void *k);
int vx_kernel_release(void *k) {
  free(k);
  return 0;
}

/* The argument blob goes to device memory of its own; the launch starts
 * the kernel's module at the kernel's PC. */
int vx_enqueue_launch(void *q, const launch_info *info, uint32_t n, const void *w, void **ev);
int vx_enqueue_launch(void *q, const launch_info *info, uint32_t n, const void *w, void **ev) {
  (void)n, (void)w;
  if (ev) *ev = &event;
  const kernel_h *k = info->kernel;
  if (!k || info->ndim != 3 || !info->args_host || !info->args_size) return 3;
  vxs_config c;
  standin_config(&c, 32);
  vxs_kmu_launch l = {.local_bytes = info->lmem_size, .entry = k->pc};
  memcpy(l.grid, info->grid_dim, sizeof l.grid);
  memcpy(l.block, info->block_dim, sizeof l.block);
  void *args = NULL;
  if (vx_mem_alloc(q, info->args_size, 3, &args) != 0 ||
      vx_copy_to_dev(args, info->args_host, 0, info->args_size))
    return 3;
  int rc = run_image(q, k->module->image, ((buffer *)args)->addr, &c, &l);
  vx_mem_free(args);
  return rc ? 8 : 0;
}

int vx_event_wait_value(void *ev, uint64_t value, uint64_t timeout_ns);
int vx_event_wait_value(void *ev, uint64_t value, uint64_t timeout_ns) {
  (void)timeout_ns;
  return ev == &event && value <= 1 ? 0 : 3;
}

int vx_event_release(void *ev);
int vx_event_release(void *ev) { return ev == &event ? 0 : 1; }
#endif /* VORTEX_STANDIN_NO_V2 */
