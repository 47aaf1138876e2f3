/*
 * vxr_emulated.c - the emulated Vortex device backend of
 * libvortexd_runtime: kernels linked with the emulator's device runtime
 * (ld.lld-22, runtime/simt/device) and run on the lockstep SIMT emulator
 * (runtime/simt), with the arena as global memory.
 *
 * Kernels of every target run here: Vortex 2.x or 3.0 (the latter started
 * by the emulated hardware scheduler, vxs_run_kmu), RV32 or RV64.
 *
 * Where the device runtime lives: VORTEXD_DEVICE_DIR (a directory with
 * link.ld, vx_start.o, vx_spawn.o, vx_kmu.o, vx_tls.o, vx_print.o, and
 * the same objects for RV64 in rv64/) when set, else the build's
 * (VXR_DEVICE_OBJ_DIR / VXR_LINKER_SCRIPT); libc and libgcc for libm and
 * soft-float from picolibc and riscv64-unknown-elf-gcc (VXR_LIBC,
 * VXR_LIBGCC; VXR_LIBC64, VXR_LIBGCC64 for RV64); GNU ld,
 * riscv64-unknown-elf-ld (VXR_LD, or VORTEXD_LD).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <dlfcn.h>

#include "runtime/simt/vxs.h"
#include "vxr.h"
#include "vxr_vxbin.h"

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

static int vxr__emu_link(vxr_backend *b, const uint8_t *obj, size_t obj_size, const vxp_kernel *k,
                         const char *entry, uint8_t **elf, size_t *elf_size, char *err, size_t errcap) {
  (void)b;
  err[0] = '\0';
  char found[4096];
  const char *ddir = vxr__device_dir(found, sizeof found);
  const char *ld = getenv("VORTEXD_LD") ? getenv("VORTEXD_LD") : VXR_LD;
  /* each kernel ABI's startup objects, each width's build of them */
  static const char *const v2[4] = {"vx_start.o", "vx_spawn.o", "vx_tls.o", "vx_print.o"};
  static const char *const v3[3] = {"vx_kmu.o", "vx_tls.o", "vx_print.o"};
  const int is3 = k->vortex_abi == 3, is64 = k->xlen == 64, n = is3 ? 3 : 4;
  const char *dir = ddir ? ddir : VXR_DEVICE_OBJ_DIR;
  char script[4200], objs[4][4300], *inputs[4];
  if (ddir)
    snprintf(script, sizeof script, "%s/link.ld", ddir);
  else
    snprintf(script, sizeof script, "%s", VXR_LINKER_SCRIPT);
  for (int i = 0; i < n; i++) {
    snprintf(objs[i], sizeof objs[i], "%s%s/%s", dir, is64 ? "/rv64" : "", is3 ? v3[i] : v2[i]);
    inputs[i] = objs[i];
  }
  return vxr_link_elf(ld, script, inputs, n, is64 ? VXR_LIBC64 : VXR_LIBC, is64 ? VXR_LIBGCC64 : VXR_LIBGCC,
                      obj, obj_size, entry, k->vortex_abi, elf, elf_size, err, errcap);
}

/* Devices kept between launches: creating a unicorn engine and loading an
 * image, then translating its code again, cost more than a small kernel's
 * whole run.  A launch of an image already run, with the same
 * configuration and arena size, reuses that device: vxs_run restores the
 * image's initial contents and resets every hart, the arena is written
 * anew, and the engine keeps the code it translated (the image's text is
 * written with the same bytes through the host mapping, so no translation
 * goes stale).  At most VXR_EMU_DEVICES ($VORTEXD_EMULATED_DEVICES: fewer,
 * 0 for a new device every launch, as before), the least recently used
 * replaced.  Images are told apart by vxr_launch.image_id.
 *
 * Module variables (VXP_MODULE_VAR_PREFIX) are the exception to the
 * restore: as CUDA keeps a module's __device__ variables for its lifetime,
 * each image's variables carry from one launch to the next, whatever
 * device runs it (vxs_keep_symbols; the image's record holds what the last
 * launch left, and a device that has an older copy is given it). */
#define VXR_EMU_DEVICES 8

/* An image launched in this process: one per module (the runtime never
 * unloads one), each with its variables as its last launch left them. */
typedef struct vxr__emu_image {
  uint64_t id;   /* vxr_launch.image_id */
  uint8_t *vars; /* its module variables (vxs_kept_read), NULL until a launch ran */
  uint32_t vars_size;
  uint64_t version; /* launches that left them */
  int64_t *entries; /* by kernel id: its entry's address, 0 until looked up */
  uint32_t nentries;
  struct vxr__emu_image *next;
} vxr__emu_image;

typedef struct {
  vxs_device *dev;
  vxr__emu_image *img; /* the image it loaded */
  vxs_config cfg;
  uint32_t arena_size;
  uint64_t used;    /* launch counter at its last use */
  uint64_t version; /* the version of img's variables in its memory */
} vxr__emu_slot;

/* The emulated backend: the ABI's one instance (vxr_emulated_backend),
 * called with the ABI's mutex held. */
typedef struct {
  vxr_backend b; /* first: the ABI sees a vxr_backend */
  vxr__emu_slot slots[VXR_EMU_DEVICES];
  vxr__emu_image *images;
  uint64_t launches;
  int keep; /* devices kept: 0..VXR_EMU_DEVICES, -1 until read */
} vxr__emu;

/* The device configuration launch l needs. */
static void vxr__emu_config(const vxr_launch *l, vxs_config *c) {
  vxs_config_default(c);
  c->threads_per_warp = l->kernel->subgroup_size ? l->kernel->subgroup_size : 4;
  uint32_t wpg = (l->threads_per_block + c->threads_per_warp - 1) / c->threads_per_warp;
  c->warps_per_core = wpg * 2 < 4 ? 4 : wpg * 2;
  c->barriers = 0;    /* vxs default: one per warp */
  c->ipdom_depth = 0; /* vxs default: 2 x threads per warp */
  const char *cores = getenv("VORTEXD_EMULATED_CORES");
  c->cores = cores && atoi(cores) > 0 ? (uint32_t)atoi(cores) : 1;
  c->xlen = l->kernel->xlen == 64 ? 64 : 32;
  /* 2.x: room for every group a core holds, with static shared memory;
   * 3.0: at most one block per warp, each its local memory */
  uint32_t lmem = c->warps_per_core *
                  (l->kernel->vortex_abi == 3 ? l->local_bytes + 16u : l->kernel->shared_bytes + 65536u);
  c->local_mem_bytes = lmem > (16u << 20) ? (16u << 20) : (lmem + 4095u) & ~4095u;
  c->max_steps = 2000u * 1000u * 1000u;
}

static void vxr__emu_drop(vxr__emu_slot *s) {
  vxs_device_destroy(s->dev);
  memset(s, 0, sizeof *s);
}

/* The entry PC of l's kernel in l's image (on Vortex 3.0 a launch names
 * it): its entry symbol's address, looked up once per kernel of the image.
 * -1 when the image has no such symbol. */
static int64_t vxr__emu_entry(vxr__emu_image *img, const vxr_launch *l) {
  uint32_t id = l->kernel->kernel_id;
  if (id >= VXP_MAX_KERNELS) return vxr_elf_symbol(l->elf, l->elf_size, l->kernel->entry);
  if (id >= img->nentries) {
    uint32_t n = id + 1;
    int64_t *grown = realloc(img->entries, n * sizeof *grown);
    if (!grown) return vxr_elf_symbol(l->elf, l->elf_size, l->kernel->entry);
    for (uint32_t i = img->nentries; i < n; i++)
      grown[i] = 0;
    img->entries = grown, img->nentries = n;
  }
  if (!img->entries[id]) img->entries[id] = vxr_elf_symbol(l->elf, l->elf_size, l->kernel->entry);
  return img->entries[id];
}

/* The record of l's image, made on its first launch.  NULL: no memory. */
static vxr__emu_image *vxr__emu_image_of(vxr__emu *e, const vxr_launch *l) {
  for (vxr__emu_image *i = e->images; i; i = i->next)
    if (i->id == l->image_id) return i;
  vxr__emu_image *i = calloc(1, sizeof *i);
  if (!i) return NULL;
  i->id = l->image_id;
  i->next = e->images;
  e->images = i;
  return i;
}

/* A device for l: a kept one that ran the same image with the same
 * configuration and arena size, else a new one in the least recently used
 * slot.  Returns the slot, or NULL with a message. */
static vxr__emu_slot *vxr__emu_device(vxr__emu *e, const vxr_launch *l, char *err, size_t errcap) {
  vxs_config c;
  vxr__emu_config(l, &c);
  if (e->keep < 0) {
    const char *env = getenv("VORTEXD_EMULATED_DEVICES");
    e->keep = env && *env ? atoi(env) : VXR_EMU_DEVICES;
    if (e->keep < 0 || e->keep > VXR_EMU_DEVICES) e->keep = VXR_EMU_DEVICES;
  }
  vxr__emu_image *img = vxr__emu_image_of(e, l);
  if (!img) {
    snprintf(err, errcap, "out of memory");
    return NULL;
  }
  vxr__emu_slot *victim = &e->slots[0];
  for (int i = 0; i < (e->keep ? e->keep : 1); i++) {
    vxr__emu_slot *s = &e->slots[i];
    if (s->dev && s->img == img && s->arena_size == l->arena_size && memcmp(&s->cfg, &c, sizeof c) == 0)
      return s;
    if (!s->dev || (victim->dev && s->used < victim->used)) victim = s;
  }
  vxr__emu_drop(victim);
  int rc = vxs_device_create(&c, &victim->dev);
  if (rc != 0) {
    snprintf(err, errcap, "cannot create the emulated device (%d; %u threads per block)", rc,
             l->threads_per_block);
    return NULL;
  }
  const char *why = NULL;
  if ((rc = vxs_load_elf(victim->dev, l->elf, l->elf_size, &why)) != 0 ||
      (rc = vxs_keep_symbols(victim->dev, VXP_MODULE_VAR_PREFIX)) < 0 ||
      (rc = vxs_mem_map(victim->dev, VXR_DEVICE_BASE, l->arena_size)) != 0) {
    snprintf(err, errcap, "cannot load the emulated device (%d %s)", rc, why ? why : "");
    vxr__emu_drop(victim);
    return NULL;
  }
  victim->img = img;
  victim->cfg = c;
  victim->arena_size = l->arena_size;
  victim->version = 0; /* the variables' initial values */
  return victim;
}

static int vxr__emu_run(vxr_backend *b, const vxr_launch *l, char *err, size_t errcap) {
  vxr__emu *e = (vxr__emu *)b;
  if (e->keep == 0 && e->slots[0].dev) vxr__emu_drop(&e->slots[0]); /* none kept */
  vxr__emu_slot *s = vxr__emu_device(e, l, err, errcap);
  if (!s) return -EIO;
  s->used = ++e->launches;
  vxs_report rep;
  memset(&rep, 0, sizeof rep);
  if (vxs_mem_write(s->dev, VXR_DEVICE_BASE, l->arena, l->arena_size) != 0) {
    snprintf(err, errcap, "cannot write the arena to the emulated device");
    vxr__emu_drop(s);
    return -EIO;
  }
  vxr__emu_image *img = s->img;
  uint32_t nvars = vxs_kept_size(s->dev);
  if (img->vars && s->version != img->version) { /* an older copy of the module's variables */
    if (vxs_kept_write(s->dev, img->vars, img->vars_size) != 0) {
      snprintf(err, errcap, "cannot write the module's variables to the emulated device");
      vxr__emu_drop(s);
      return -EIO;
    }
    s->version = img->version;
  }
  vxs_kmu_launch kmu = {.local_bytes = l->local_bytes};
  memcpy(kmu.grid, l->grid, sizeof kmu.grid);
  memcpy(kmu.block, l->block, sizeof kmu.block);
  if (l->kernel->vortex_abi == 3) { /* the launch names its kernel's entry (CSR 0xCE1) */
    int64_t pc = vxr__emu_entry(img, l);
    if (pc <= 0) {
      snprintf(err, errcap, "kernel %s: no entry %s in its image", l->kernel->name, l->kernel->entry);
      return -EINVAL;
    }
    kmu.entry = (uint64_t)pc;
  }
  int rc = l->kernel->vortex_abi == 3 ? vxs_run_kmu(s->dev, l->args_addr, &kmu, &rep)
                                      : vxs_run(s->dev, l->args_addr, &rep);
  fputs(vxs_console(s->dev), stdout); /* what the kernel printed, as a GPU's printf goes to stdout */
  fflush(stdout);
  if (rc != 0) {
    snprintf(err, errcap, "the kernel failed on the emulated device: %s", rep.error);
    vxr__emu_drop(s); /* a failed run's device is not trusted again */
    return rc;
  }
  if (vxs_mem_read(s->dev, VXR_DEVICE_BASE, l->arena, l->arena_size) != 0) {
    snprintf(err, errcap, "cannot read device memory back");
    vxr__emu_drop(s);
    return -EIO;
  }
  if (nvars) { /* what this launch left in them, for the next launch of the module */
    if (!img->vars && !(img->vars = malloc(nvars))) {
      snprintf(err, errcap, "out of memory");
      return -ENOMEM;
    }
    img->vars_size = nvars;
    if (vxs_kept_read(s->dev, img->vars, nvars) != 0) {
      snprintf(err, errcap, "cannot read the module's variables back");
      vxr__emu_drop(s);
      return -EIO;
    }
    s->version = ++img->version;
  }
  return 0;
}

static int vxr__emu_open(vxr_backend *b, uint32_t arena_size, uint32_t *base, char *err, size_t errcap) {
  (void)b, (void)arena_size, (void)err, (void)errcap;
  *base = VXR_DEVICE_BASE;
  return 0;
}

vxr_backend *vxr_emulated_backend(void) {
  /* the process's one emulated device backend, as the ABI it serves is the
   * process's; its kept devices live as long as the process */
  static vxr__emu e = {.b = {"emulated", 0, vxr__emu_open, vxr__emu_link, vxr__emu_run}, .keep = -1};
  return &e.b;
}
