/* vxt_device.c - link + run on the lockstep SIMT emulator (see vxt_device.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vxc.h"
#include "vxd_wire.h"
#include "vxr_vxbin.h"
#include "vxt.h"
#include "vxt_device.h"

const vxt_simt vxt_simt_matrix[] = {
    {4, 0, 1, VXS_SPLIT_SMALLER, "4 threads/warp, smaller side first"},
    {1, 0, 1, VXS_SPLIT_LARGER, "1 thread/warp"},
    {8, 0, 2, VXS_SPLIT_TAKEN, "8 threads/warp, taken side first, 2 cores"},
    {32, 0, 1, VXS_SPLIT_NOT_TAKEN, "32 threads/warp, not-taken side first"},
};
const uint32_t vxt_simt_matrix_len = sizeof vxt_simt_matrix / sizeof vxt_simt_matrix[0];

uint32_t vxt_image_put(vxt_image *img, const void *data, uint32_t n) {
  uint32_t off = (img->size + 63u) & ~63u;
  uint32_t need = off + n;
  if (need > img->cap) {
    uint32_t cap = img->cap ? img->cap : 4096;
    while (cap < need)
      cap *= 2;
    img->p = realloc(img->p, cap);
    memset(img->p + img->cap, 0, cap - img->cap);
    img->cap = cap;
  }
  if (data)
    memcpy(img->p + off, data, n);
  else
    memset(img->p + off, 0, n);
  img->size = need;
  return off;
}

void vxt_image_free(vxt_image *img) {
  free(img->p);
  memset(img, 0, sizeof *img);
}

/* The argument buffer after hdr bytes holding k's kernel id (hdr 0: the
 * buffer alone), put into img. */
static uint32_t vxt__image_pack(vxt_image *img, const vxl_kernel *k, const void *const *values,
                                const uint32_t grid[3], const uint32_t block[3], uint32_t shared_bytes,
                                uint32_t hdr) {
  /* k as the daemon would send it (vxd_wire.c), borrowing its strings */
  vxp_kernel w;
  if (vxd_kernel_wire_view(k, &w) != 0) return UINT32_MAX;
  uint8_t *buf = calloc(1, hdr + k->buffer_size);
  int rc = buf ? vxc_pack_args(&w, values, grid, block, shared_bytes, buf + hdr, k->buffer_size) : -1;
  free(w.args);
  if (rc != 0) {
    free(buf);
    return UINT32_MAX;
  }
  for (uint32_t b = 0; hdr && b < 4; b++) /* little-endian */
    buf[b] = (uint8_t)(k->kernel_id >> (8 * b));
  uint32_t off = vxt_image_put(img, buf, hdr + k->buffer_size);
  free(buf);
  return off;
}

uint32_t vxt_image_args(vxt_image *img, const vxl_kernel *k, const void *const *values,
                        const uint32_t grid[3], const uint32_t block[3], uint32_t shared_bytes) {
  return vxt__image_pack(img, k, values, grid, block, shared_bytes, 0);
}

uint32_t vxt_image_launch_record(vxt_image *img, const vxl_kernel *k, const void *const *values,
                                 const uint32_t grid[3], const uint32_t block[3], uint32_t shared_bytes) {
  return vxt__image_pack(img, k, values, grid, block, shared_bytes, VXL_LAUNCH_RECORD_BYTES);
}

const char *vxt_device_link(const uint8_t *object, size_t object_size, const char *entry, uint32_t abi,
                            uint32_t xlen, uint8_t **elf, size_t *elf_size) {
  static char msg[VXR_LINK_DIAG_MAX + 512]; /* the suites run tests one at a time */
  char objs[2048], *inputs[8];
  snprintf(objs, sizeof objs, "%s",
           xlen == 64 ? (abi == 3 ? VXT_RUNTIME_OBJS_V3_RV64 : VXT_RUNTIME_OBJS_RV64)
                      : (abi == 3 ? VXT_RUNTIME_OBJS_V3 : VXT_RUNTIME_OBJS));
  int n = 0;
  for (char *save = NULL, *t = strtok_r(objs, " ", &save); t && n < 8; t = strtok_r(NULL, " ", &save))
    inputs[n++] = t;
  /* the runtime's own link (the emulated backend's inputs, in its order) */
  if (vxr_link_elf(VXT_LD, VXT_LINKER_SCRIPT, inputs, n, xlen == 64 ? VXT_LIBC64 : VXT_LIBC,
                   xlen == 64 ? VXT_LIBGCC64 : VXT_LIBGCC, object, object_size, entry, abi, elf, elf_size,
                   msg, sizeof msg) != 0)
    return msg;
  return NULL;
}

const char *vxt_device_run(const uint8_t *elf, size_t elf_size, uint32_t xlen, const vxt_image *img,
                           uint32_t args_offset, uint32_t launch_offset, const vxs_kmu_launch *kmu,
                           const vxt_simt *cfg, uint32_t out_offset, uint32_t out_size, void *out,
                           vxs_report *rep, char *printed, size_t printed_cap) {
  static char msg[1024]; /* the suites run tests one at a time */
  uint32_t block[3], shared;
  memcpy(block, img->p + args_offset + launch_offset + 12, sizeof block);
  memcpy(&shared, img->p + args_offset + launch_offset + 24, 4);
  uint32_t threads = block[0] * block[1] * block[2];
  vxs_config c;
  vxs_config_default(&c);
  c.threads_per_warp = cfg->threads_per_warp;
  c.cores = cfg->cores;
  c.split_policy = cfg->split_policy;
  c.warps_per_core = cfg->warps_per_core;
  if (!c.warps_per_core) {
    uint32_t wpg = (threads + c.threads_per_warp - 1) / c.threads_per_warp;
    c.warps_per_core = wpg * 2 < 4 ? 4 : wpg * 2;
  }
  c.barriers = 0;    /* vxs default: one per warp */
  c.ipdom_depth = 0; /* vxs default: 2 x threads per warp */
  /* room for every group a core holds, with static shared memory (under
   * the hardware scheduler: a core holds at most one block per warp) */
  uint32_t lmem = c.warps_per_core * (kmu ? kmu->local_bytes + 16u : shared + 65536u);
  c.local_mem_bytes = lmem > (16u << 20) ? (16u << 20) : (lmem + 4095u) & ~4095u;
  c.max_steps = 200u * 1000u * 1000u;
  c.xlen = xlen;
  vxs_device *dev = NULL;
  const char *why = NULL;
  int rc = vxs_device_create(&c, &dev);
  if (rc != 0) {
    snprintf(msg, sizeof msg, "[%s] cannot create the device (%d)", cfg->name, rc);
    return msg;
  }
  uint32_t mem = (img->size + 4095u) & ~4095u;
  if ((rc = vxs_load_elf(dev, elf, elf_size, &why)) != 0 || (rc = vxs_mem_map(dev, VXT_MEM_BASE, mem)) != 0 ||
      (rc = vxs_mem_write(dev, VXT_MEM_BASE, img->p, img->size)) != 0) {
    snprintf(msg, sizeof msg, "[%s] cannot load the device (%d %s)", cfg->name, rc, why ? why : "");
    vxs_device_destroy(dev);
    return msg;
  }
  rc = kmu ? vxs_run_kmu(dev, VXT_MEM_BASE + args_offset, kmu, rep)
           : vxs_run(dev, VXT_MEM_BASE + args_offset, rep);
  if (printed && printed_cap) snprintf(printed, printed_cap, "%s", vxs_console(dev));
  const char *fail = NULL;
  if (rc != 0) {
    snprintf(msg, sizeof msg, "[%s] %s", cfg->name, rep->error);
    fail = msg;
  } else if (vxs_mem_read(dev, VXT_MEM_BASE + out_offset, out, out_size) != 0) {
    snprintf(msg, sizeof msg, "[%s] output outside device memory", cfg->name);
    fail = msg;
  }
  vxs_device_destroy(dev);
  return fail;
}
