/*
 * vxr_emulated.c - the emulated Vortex device backend of
 * libvortexd_runtime: kernels linked with the emulator's device runtime
 * (ld.lld-22, runtime/simt/device) and run on the lockstep SIMT emulator
 * (runtime/simt), with the arena as global memory.
 *
 * Where the device runtime lives: VORTEXD_DEVICE_DIR (a directory with
 * link.ld, vx_start.o, vx_spawn.o, vx_print.o) when set, else the build's
 * (VXR_DEVICE_OBJS / VXR_LINKER_SCRIPT); libc and libgcc for libm and
 * soft-float f64 from picolibc and riscv64-unknown-elf-gcc (VXR_LIBC,
 * VXR_LIBGCC); ld.lld-22 (VXR_LLD, or VORTEXD_LLD).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <dlfcn.h>

#include "vxr.h"
#include "vxr_vxbin.h"
#include "vxs.h"

/* The directory of the device's startup objects and link script:
 * $VORTEXD_DEVICE_DIR; else, installed, LIBDIR/vortexd/device beside this
 * library (found with dladdr, so an installed tree may move); else the
 * build tree's (NULL: VXR_DEVICE_OBJ_DIR and VXR_LINKER_SCRIPT).  Written
 * into buf (cap bytes). */
static const char *vxr__device_dir(char *buf, size_t cap) {
  const char *env = getenv("VORTEXD_DEVICE_DIR");
  if (env && *env) return env;
  Dl_info info;
  if (dladdr((void *)vxr__device_dir, &info) && info.dli_fname) {
    const char *slash = strrchr(info.dli_fname, '/');
    char probe[4300];
    if (slash &&
        snprintf(buf, cap, "%.*s/vortexd/device", (int)(slash - info.dli_fname), info.dli_fname) < (int)cap &&
        snprintf(probe, sizeof probe, "%s/link.ld", buf) < (int)sizeof probe && access(probe, R_OK) == 0)
      return buf;
  }
  return NULL;
}

static int vxr__emu_link(vxr_backend *b, const uint8_t *obj, size_t obj_size, const char *entry,
                         uint8_t **elf, size_t *elf_size, char *err, size_t errcap) {
  (void)b;
  err[0] = '\0';
  char found[4096];
  const char *ddir = vxr__device_dir(found, sizeof found);
  const char *lld = getenv("VORTEXD_LLD") ? getenv("VORTEXD_LLD") : VXR_LLD;
  static const char *const names[3] = {"vx_start.o", "vx_spawn.o", "vx_print.o"};
  const char *dir = ddir ? ddir : VXR_DEVICE_OBJ_DIR;
  char script[4200], objs[3][4200], *inputs[3];
  if (ddir)
    snprintf(script, sizeof script, "%s/link.ld", ddir);
  else
    snprintf(script, sizeof script, "%s", VXR_LINKER_SCRIPT);
  for (int i = 0; i < 3; i++) {
    snprintf(objs[i], sizeof objs[i], "%s/%s", dir, names[i]);
    inputs[i] = objs[i];
  }
  return vxr_link_elf(lld, script, inputs, 3, VXR_LIBC, VXR_LIBGCC, obj, obj_size, entry, elf, elf_size, err,
                      errcap);
}

static int vxr__emu_run(vxr_backend *b, const vxr_launch *l, char *err, size_t errcap) {
  (void)b;
  vxs_config c;
  vxs_config_default(&c);
  c.threads_per_warp = l->kernel->subgroup_size ? l->kernel->subgroup_size : 4;
  uint32_t wpg = (l->threads_per_block + c.threads_per_warp - 1) / c.threads_per_warp;
  c.warps_per_core = wpg * 2 < 4 ? 4 : wpg * 2;
  c.barriers = 0;    /* vxs default: one per warp */
  c.ipdom_depth = 0; /* vxs default: 2 x threads per warp */
  const char *cores = getenv("VORTEXD_EMULATED_CORES");
  c.cores = cores && atoi(cores) > 0 ? (uint32_t)atoi(cores) : 1;
  uint32_t lmem = c.warps_per_core * (l->kernel->shared_bytes + 65536u);
  c.local_mem_bytes = lmem > (16u << 20) ? (16u << 20) : (lmem + 4095u) & ~4095u;
  c.max_steps = 2000u * 1000u * 1000u;
  vxs_device *dev = NULL;
  int rc = vxs_device_create(&c, &dev);
  if (rc != 0) {
    snprintf(err, errcap, "cannot create the emulated device (%d; %u threads per block)", rc,
             l->threads_per_block);
    return -1;
  }
  const char *why = NULL;
  vxs_report rep;
  memset(&rep, 0, sizeof rep);
  if ((rc = vxs_load_elf(dev, l->elf, l->elf_size, &why)) != 0 ||
      (rc = vxs_mem_map(dev, VXR_DEVICE_BASE, l->arena_size)) != 0 ||
      (rc = vxs_mem_write(dev, VXR_DEVICE_BASE, l->arena, l->arena_size)) != 0) {
    snprintf(err, errcap, "cannot load the emulated device (%d %s)", rc, why ? why : "");
    vxs_device_destroy(dev);
    return -1;
  }
  rc = vxs_run(dev, l->args_addr, &rep);
  fputs(vxs_console(dev), stdout); /* what the kernel printed, as a GPU's printf goes to stdout */
  fflush(stdout);
  if (rc != 0) {
    snprintf(err, errcap, "the kernel failed on the emulated device: %s", rep.error);
    vxs_device_destroy(dev);
    return -1;
  }
  rc = vxs_mem_read(dev, VXR_DEVICE_BASE, l->arena, l->arena_size);
  vxs_device_destroy(dev);
  if (rc != 0) {
    snprintf(err, errcap, "cannot read device memory back");
    return -1;
  }
  return 0;
}

static int vxr__emu_open(vxr_backend *b, uint32_t arena_size, uint32_t *base, char *err, size_t errcap) {
  (void)b, (void)arena_size, (void)err, (void)errcap;
  *base = VXR_DEVICE_BASE;
  return 0;
}

vxr_backend *vxr_emulated_backend(void) {
  static vxr_backend b = {"emulated", 0, vxr__emu_open, vxr__emu_link, vxr__emu_run};
  return &b;
}
