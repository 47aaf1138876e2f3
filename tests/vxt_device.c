/* vxt_device.c - link + run on the lockstep SIMT emulator (see vxt_device.h). */
#include <errno.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client/vxc.h"
#include "daemon/vxd_wire.h"
#include "runtime/mgpu/vxr_vxbin.h"
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

const char *vxt_upstream_sdk(void) {
  const char *s = getenv("VXT_UPSTREAM_SDK");
  return s && *s ? s : NULL;
}

const char *vxt_upstream_sdk_of(uint32_t xlen) {
  static char dir[2][4096];
  if (!vxt_upstream_sdk()) return NULL;
  snprintf(dir[xlen == 64], sizeof dir[0], "%s/rv%u", vxt_upstream_sdk(), xlen == 64 ? 64u : 32u);
  return dir[xlen == 64];
}

const char *vxt_device_link_sdk(const char *sdk, const uint8_t *object, size_t object_size, const char *entry,
                                uint32_t abi, uint8_t **elf, size_t *elf_size) {
  static char msg[VXR_LINK_DIAG_MAX + 512];
  const int is64 = object_size > 4 && object[4] == ELFCLASS64;
  return vxr_link_sdk_elf(sdk, VXT_LD, is64 ? VXT_LIBC64 : VXT_LIBC, is64 ? VXT_LIBGCC64 : VXT_LIBGCC, object,
                          object_size, entry, abi, elf, elf_size, msg, sizeof msg) == 0
             ? NULL
             : msg;
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

/* Upstream Vortex's memory map and console, for images linked with its
 * kernel SDK: read from the VX_types.h upstream's generator made for the
 * SDK of that XLEN (<sdk>/rv<XLEN>/sw/VX_types.h). */
typedef struct {
  uint64_t stack_base; /* VX_MEM_STACK_BASE_ADDR: harts' stacks below */
  uint64_t stack_log2; /* VX_MEM_STACK_LOG2_SIZE */
  uint64_t io_end;     /* VX_MEM_IO_END_ADDR: the I/O area from 0 (its base VX_MEM_IO_BASE_ADDR) */
  uint64_t cout;       /* VX_MEM_IO_COUT_ADDR */
  uint64_t slots;      /* VX_MEM_IO_COUT_SLOTS: one console ring per slot */
  uint64_t ring;       /* VX_MEM_IO_COUT_RING: bytes of a ring */
} vxt__upstream_mem;

/* The value of `#define name VALUE` in header path (decimal or 0x hex),
 * or UINT64_MAX. */
static uint64_t vxt__define(const char *path, const char *name) {
  FILE *f = fopen(path, "r");
  char line[512], key[128];
  uint64_t v = UINT64_MAX;
  snprintf(key, sizeof key, "#define %s ", name);
  while (f && v == UINT64_MAX && fgets(line, sizeof line, f))
    if (strncmp(line, key, strlen(key)) == 0) {
      char *end;
      unsigned long long x = strtoull(line + strlen(key), &end, 0);
      if (end != line + strlen(key) && (*end == '\n' || *end == ' ' || *end == '\0')) v = x;
    }
  if (f) fclose(f);
  return v;
}

/* Reads m from the SDK's VX_types.h of xlen; false when a value is missing. */
static bool vxt__upstream_mem_of(uint32_t xlen, vxt__upstream_mem *m) {
  char path[4096];
  snprintf(path, sizeof path, "%s/sw/VX_types.h", vxt_upstream_sdk_of(xlen));
  m->stack_base = vxt__define(path, "VX_MEM_STACK_BASE_ADDR");
  m->stack_log2 = vxt__define(path, "VX_MEM_STACK_LOG2_SIZE");
  m->io_end = vxt__define(path, "VX_MEM_IO_END_ADDR");
  m->cout = vxt__define(path, "VX_MEM_IO_COUT_ADDR");
  m->slots = vxt__define(path, "VX_MEM_IO_COUT_SLOTS");
  m->ring = vxt__define(path, "VX_MEM_IO_COUT_RING");
  return m->stack_base != UINT64_MAX && m->stack_log2 < 32 && m->io_end != UINT64_MAX &&
         m->cout != UINT64_MAX && m->slots != UINT64_MAX && m->ring != UINT64_MAX && m->ring <= 65536;
}

/* Whether name is defined by picolibc's or libgcc's archive of xlen (what
 * the serial range of an upstream image covers), read once with nm. */
static int vxt__library_symbol(uint32_t xlen, const char *name) {
  static char *names[2]; /* "\nname\nname\n...": the suites run one test at a time */
  char **set = &names[xlen == 64];
  if (!*set) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "riscv64-unknown-elf-nm -g --defined-only -f just-symbols %s %s 2>/dev/null",
             xlen == 64 ? VXT_LIBC64 : VXT_LIBC, xlen == 64 ? VXT_LIBGCC64 : VXT_LIBGCC);
    FILE *p = popen(cmd, "r");
    size_t cap = 1 << 20, n = 1;
    *set = calloc(1, cap);
    if (!*set) return 0;
    (*set)[0] = '\n';
    char line[512];
    while (p && fgets(line, sizeof line, p)) {
      size_t l = strlen(line);
      if (l < 2 || line[l - 1] != '\n' || strchr(line, ':')) continue;
      if (n + l + 1 >= cap && !(*set = realloc(*set, cap *= 2))) return 0;
      memcpy(*set + n, line, l + 1), n += l;
    }
    if (p) pclose(p);
  }
  char key[512];
  snprintf(key, sizeof key, "\n%s\n", name);
  return strstr(*set, key) != NULL;
}

struct vxt__fn {
  uint64_t lo, hi;
  int lib;
};

static int vxt__fn_cmp(const void *a, const void *b) {
  uint64_t x = ((const struct vxt__fn *)a)->lo, y = ((const struct vxt__fn *)b)->lo;
  return x < y ? -1 : x > y;
}

/* The functions of elf's .text (the start code is in .init: only .text's
 * count), each marked library or not, into *out (malloc()); their count,
 * or -1. */
static int vxt__text_functions(const uint8_t *elf, size_t elf_size, uint32_t xlen, struct vxt__fn **out) {
  *out = NULL;
  if (elf_version(EV_CURRENT) == EV_NONE) return -1;
  Elf *e = elf_memory((char *)(uintptr_t)elf, elf_size);
  size_t shstrndx, text = 0;
  if (!e || elf_getshdrstrndx(e, &shstrndx) != 0) {
    if (e) elf_end(e);
    return -1;
  }
  Elf_Scn *scn = NULL;
  GElf_Shdr sh;
  while (!text && (scn = elf_nextscn(e, scn)))
    if (gelf_getshdr(scn, &sh) && strcmp(elf_strptr(e, shstrndx, sh.sh_name) ?: "", ".text") == 0)
      text = elf_ndxscn(scn);
  int n = 0, cap = 256;
  struct vxt__fn *fns = malloc((size_t)cap * sizeof *fns);
  for (scn = NULL; fns && (scn = elf_nextscn(e, scn));) {
    Elf_Data *data;
    if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB || !sh.sh_entsize ||
        !(data = elf_getdata(scn, NULL)))
      continue;
    for (size_t k = 0; fns && k < sh.sh_size / sh.sh_entsize; k++) {
      GElf_Sym sym;
      if (!gelf_getsym(data, (int)k, &sym) || GELF_ST_TYPE(sym.st_info) != STT_FUNC || !sym.st_size ||
          sym.st_shndx != text)
        continue;
      if (n == cap) fns = realloc(fns, (size_t)(cap *= 2) * sizeof *fns);
      const char *name = elf_strptr(e, sh.sh_link, sym.st_name);
      if (fns)
        fns[n++] = (struct vxt__fn){sym.st_value, sym.st_value + sym.st_size,
                                    name && vxt__library_symbol(xlen, name)};
    }
  }
  elf_end(e);
  if (!fns) return -1;
  qsort(fns, (size_t)n, sizeof *fns, vxt__fn_cmp);
  *out = fns;
  return n;
}

/* Prepares device dev (image loaded) for an image linked with upstream's
 * SDK: its harts' stacks and TLS blocks and its I/O area mapped, and its
 * libraries' code (picolibc, libgcc: not built divergence-aware) as the
 * serial range.  NULL or what failed. */
static const char *vxt__upstream_map(vxs_device *dev, const uint8_t *elf, size_t elf_size,
                                     const vxs_config *c, const vxt__upstream_mem *m) {
  uint64_t harts = (uint64_t)c->cores * c->warps_per_core * c->threads_per_warp;
  uint64_t stacks = ((harts << m->stack_log2) + 4095u) & ~(uint64_t)4095u;
  int64_t end = vxr_elf_symbol(elf, elf_size, "_end"),
          tls = vxr_elf_symbol(elf, elf_size, "__tls_block_size");
  if (end < 0 || tls < 0) return "no _end or __tls_block_size in the image";
  uint64_t tls_lo = ((uint64_t)end + 4095u) & ~(uint64_t)4095u,
           tls_hi = ((uint64_t)end + harts * (uint64_t)tls + 4095u) & ~(uint64_t)4095u;
  if (stacks > UINT32_MAX || tls_hi - tls_lo > UINT32_MAX ||
      vxs_mem_map(dev, m->stack_base - stacks, (uint32_t)stacks) != 0 ||
      vxs_mem_map(dev, 0, (uint32_t)m->io_end) != 0 ||
      (tls_hi > tls_lo && vxs_mem_map(dev, tls_lo, (uint32_t)(tls_hi - tls_lo)) != 0))
    return "cannot map upstream's stacks, TLS blocks or I/O area";
  /* the serial range is the largest run of library functions in .text
   * (upstream's script puts picolibc's exit, in .text.exit, ahead of the
   * rest) */
  struct vxt__fn *fns;
  int n = vxt__text_functions(elf, elf_size, c->xlen, &fns);
  if (n < 0) return "cannot read the image's functions";
  uint64_t lo = 0, hi = 0;
  for (int i = 0; i < n;) {
    int j = i;
    uint64_t run_end = fns[i].hi;
    while (j < n && fns[j].lib)
      run_end = fns[j].hi > run_end ? fns[j].hi : run_end, j++;
    if (j > i && run_end - fns[i].lo > hi - lo) lo = fns[i].lo, hi = run_end;
    i = j > i ? j : i + 1;
  }
  free(fns);
  if (lo < hi && vxs_set_serial(dev, lo, hi) != 0) return "cannot set the serial range";
  return NULL;
}

/* What upstream's vx_putchar left in each hart's console ring, ring by
 * ring, into printed (cap bytes). */
static void vxt__upstream_console(vxs_device *dev, const vxt__upstream_mem *m, char *printed, size_t cap) {
  size_t n = 0;
  printed[0] = '\0';
  char ring[65536];
  for (uint64_t slot = 0; slot < m->slots; slot++) {
    uint32_t wr = 0;
    if (vxs_mem_read(dev, m->cout + 4 * slot, &wr, 4) != 0 || !wr) continue;
    uint32_t len = wr < m->ring ? wr : (uint32_t)m->ring;
    vxs_mem_read(dev, m->cout + 8 * m->slots + slot * m->ring, ring, (uint32_t)m->ring);
    for (uint32_t i = 0; i < len && n + 1 < cap; i++)
      printed[n++] = ring[(wr - len + i) % m->ring];
  }
  printed[n] = '\0';
}

const char *vxt_device_run(const uint8_t *elf, size_t elf_size, uint32_t xlen, const vxt_image *img,
                           uint32_t args_offset, uint32_t launch_offset, const vxs_kmu_launch *kmu,
                           const vxt_simt *cfg, uint32_t out_offset, uint32_t out_size, void *out,
                           vxs_report *rep, char *printed, size_t printed_cap) {
  return vxt_device_run_on(0, elf, elf_size, xlen, img, args_offset, launch_offset, kmu, cfg, out_offset,
                           out_size, out, rep, printed, printed_cap);
}

const char *vxt_device_run_on(int upstream, const uint8_t *elf, size_t elf_size, uint32_t xlen,
                              const vxt_image *img, uint32_t args_offset, uint32_t launch_offset,
                              const vxs_kmu_launch *kmu, const vxt_simt *cfg, uint32_t out_offset,
                              uint32_t out_size, void *out, vxs_report *rep, char *printed,
                              size_t printed_cap) {
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
  vxs_kmu_launch named;
  vxt__upstream_mem um;
  if (upstream) {
    const char *fail = vxt__upstream_mem_of(xlen, &um) ? vxt__upstream_map(dev, elf, elf_size, &c, &um)
                                                       : "no memory map in upstream's VX_types.h";
    if (fail) {
      snprintf(msg, sizeof msg, "[%s] %s", cfg->name, fail);
      vxs_device_destroy(dev);
      return msg;
    }
    if (kmu) { /* upstream's start code calls the PC the launch names */
      named = *kmu;
      int64_t entry = vxr_elf_symbol(elf, elf_size, "kernel_main");
      named.entry = entry < 0 ? 0 : (uint64_t)entry;
      kmu = &named;
    }
  }
  rc = kmu ? vxs_run_kmu(dev, VXT_MEM_BASE + args_offset, kmu, rep)
           : vxs_run(dev, VXT_MEM_BASE + args_offset, rep);
  if (printed && printed_cap && upstream)
    vxt__upstream_console(dev, &um, printed, printed_cap);
  else if (printed && printed_cap)
    snprintf(printed, printed_cap, "%s", vxs_console(dev));
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
