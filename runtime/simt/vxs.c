/*
 * vxs.c - lockstep SIMT emulator of a Vortex device (see vxs.h).
 *
 * One libunicorn engine executes every hardware thread: each thread has a
 * saved CPU context; a warp instruction restores, steps (count 1) and
 * saves the context of each active thread in turn, then compares the PCs
 * they reached.  Vortex's custom-0 instructions and CSRs never reach
 * libunicorn: they are decoded here and applied to the whole warp.
 */
#include "vxs.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unicorn/unicorn.h>

#define VXS_PAGE 4096u
#define VXS_MAX_REGIONS 16
#define VXS_SERIAL_CALL_LIMIT (1u << 24) /* instructions in one library call */
#define VXS_OPCODE_CUSTOM0 0x0Bu
#define VXS_OPCODE_SYSTEM 0x73u

enum { VXS_WARP_OFF, VXS_WARP_RUN, VXS_WARP_BARRIER };

typedef struct {
  uint32_t orig_tmask;  /* mask before the split, restored by the last join */
  uint32_t other_tmask; /* the side that has not run yet */
  vxs_addr pc;          /* where that side starts: the instruction after the split */
  bool fallthrough;     /* the other side has run: the next join pops */
} vxs_ipdom;

typedef struct {
  vxs_addr pc;
  uint32_t tmask;
  uint32_t state, barrier_id;
  uint32_t depth;
  /* under vxs_run_kmu: the block this warp runs (its CTA CSRs) */
  uint32_t cta_slot, cta_rank, block_id[3];
  vxs_ipdom *stack;    /* cfg.ipdom_depth entries */
  uc_context **thread; /* cfg.threads_per_warp contexts */
} vxs_warp;

typedef struct {
  vxs_addr addr;
  uint32_t size;
  uint8_t *host; /* mmap() */
} vxs_region;

typedef struct {
  vxs_addr addr;
  uint32_t size;
  char *name;
} vxs_symbol;

struct vxs_device {
  vxs_config cfg;
  uc_engine *uc;
  uc_hook intr_hook;
  uc_context *blank;  /* reset state of every hart: zero registers, FPU on */
  uc_context *loaded; /* context whose state is in the engine, or NULL */
  vxs_region regions[VXS_MAX_REGIONS];
  uint32_t nregions, last_region;
  vxs_warp *warps;         /* cores * warps_per_core */
  uint32_t *barrier_count; /* cores * barriers: warps arrived */
  /* the loaded image */
  bool loaded_image;
  vxs_addr entry, image_addr;
  uint32_t image_size;
  uint8_t *image_init; /* initial contents of the image region */
  char *elf_copy;      /* the loaded file, kept for elf and dwarf */
  Elf *elf;
  Dwarf *dwarf; /* its line tables, or NULL */
  vxs_addr serial_lo, serial_hi;
  vxs_addr exit_code_addr, console_addr, console_len_addr;
  uint32_t console_cap;
  vxs_symbol *syms;
  uint32_t nsyms;
  /* ranges of the image a run leaves to the next (vxs_keep_symbols) */
  vxs_symbol *kept; /* addr, size; names not kept (NULL) */
  uint32_t nkept, kept_bytes;
  /* the run in progress */
  vxs_addr argument_buffer;
  vxs_addr mscratch[VXS_MAX_CORES]; /* each core's, the argument buffer at the start */
  const vxs_kmu_launch *kmu;        /* vxs_run_kmu's launch, else NULL */
  uint32_t cta_warps;               /* warps per block under kmu */
  uint32_t cta_local;               /* local memory per block under kmu (bytes) */
  int trap;                         /* set by the interrupt hook */
  uint32_t trap_cause;
  vxs_report *rep;
  char *console;
  size_t console_len;
};

/* ---- configuration ---- */

void vxs_config_default(vxs_config *cfg) {
  memset(cfg, 0, sizeof *cfg);
  cfg->threads_per_warp = 4;
  cfg->warps_per_core = 4;
  cfg->cores = 1;
  cfg->local_mem_bytes = 16384;
  cfg->barriers = 4;
  cfg->ipdom_depth = 8;
  cfg->split_policy = VXS_SPLIT_SMALLER;
  cfg->max_steps = 1ull << 31;
}

static int vxs__complete(const vxs_config *in, vxs_config *c) {
  *c = *in;
  if (!c->xlen) c->xlen = 32;
  if (c->xlen != 32 && c->xlen != 64) return -EINVAL;
  if (!c->threads_per_warp) c->threads_per_warp = 4;
  if (!c->warps_per_core) c->warps_per_core = 4;
  if (!c->cores) c->cores = 1;
  if (!c->local_mem_bytes) c->local_mem_bytes = 16384;
  if (!c->barriers) c->barriers = c->warps_per_core;
  if (!c->ipdom_depth) c->ipdom_depth = 2 * c->threads_per_warp;
  if (!c->max_steps) c->max_steps = 1ull << 31;
  if (c->threads_per_warp > VXS_MAX_THREADS_PER_WARP || c->warps_per_core > VXS_MAX_WARPS_PER_CORE ||
      c->cores > VXS_MAX_CORES ||
      (uint64_t)c->cores * c->warps_per_core * c->threads_per_warp > VXS_MAX_HARTS ||
      c->local_mem_bytes % VXS_PAGE || c->local_mem_bytes > (16u << 20) || c->barriers > c->warps_per_core ||
      c->ipdom_depth > 1024 || c->split_policy > VXS_SPLIT_NOT_TAKEN)
    return -EINVAL;
  return 0;
}

static uint32_t vxs__harts(const vxs_device *d) {
  return d->cfg.cores * d->cfg.warps_per_core * d->cfg.threads_per_warp;
}

/* ---- memory ---- */

static vxs_region *vxs__region(vxs_device *d, vxs_addr addr, uint32_t size) {
  vxs_region *r = &d->regions[d->last_region];
  if (d->nregions && addr >= r->addr && size <= r->size && addr - r->addr <= r->size - size) return r;
  for (uint32_t i = 0; i < d->nregions; i++) {
    r = &d->regions[i];
    if (addr >= r->addr && size <= r->size && addr - r->addr <= r->size - size) {
      d->last_region = i;
      return r;
    }
  }
  return NULL;
}

int vxs_mem_map(vxs_device *d, vxs_addr addr, uint32_t size) {
  if (!size || addr % VXS_PAGE || size % VXS_PAGE || addr + size > VXS_ADDR_LIMIT(d->cfg.xlen) ||
      d->nregions == VXS_MAX_REGIONS)
    return -EINVAL;
  for (uint32_t i = 0; i < d->nregions; i++) {
    const vxs_region *r = &d->regions[i];
    if (addr < r->addr + r->size && r->addr < addr + size) return -EINVAL;
  }
  void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return -ENOMEM;
  if (uc_mem_map_ptr(d->uc, addr, size, UC_PROT_ALL, p) != UC_ERR_OK) {
    munmap(p, size);
    return -EINVAL;
  }
  d->regions[d->nregions++] = (vxs_region){addr, size, p};
  return 0;
}

int vxs_mem_write(vxs_device *d, vxs_addr addr, const void *src, uint32_t size) {
  vxs_region *r = vxs__region(d, addr, size);
  if (!r) return -EFAULT;
  memcpy(r->host + (addr - r->addr), src, size);
  return 0;
}

int vxs_mem_read(vxs_device *d, vxs_addr addr, void *dst, uint32_t size) {
  vxs_region *r = vxs__region(d, addr, size);
  if (!r) return -EFAULT;
  memcpy(dst, r->host + (addr - r->addr), size);
  return 0;
}

/* ---- device ---- */

static void vxs__on_interrupt(uc_engine *uc, uint32_t intno, void *user) {
  vxs_device *d = user;
  d->trap = 1;
  d->trap_cause = intno;
  uc_emu_stop(uc);
}

int vxs_device_create(const vxs_config *cfg, vxs_device **out) {
  vxs_config c;
  vxs_config def;
  vxs_config_default(&def);
  if (vxs__complete(cfg ? cfg : &def, &c) != 0) return -EINVAL;
  vxs_device *d = calloc(1, sizeof *d);
  if (!d) return -ENOMEM;
  d->cfg = c;
  if (uc_open(UC_ARCH_RISCV, c.xlen == 64 ? UC_MODE_RISCV64 : UC_MODE_RISCV32, &d->uc) != UC_ERR_OK) {
    free(d);
    return -EIO;
  }
  int rc = -ENOMEM;
  /* mstatus.FS = dirty: libunicorn runs F and D instructions only then.
   * Registers are read and written through 64-bit variables: an RV32
   * engine uses their low half (the host is little-endian). */
  uint64_t mstatus = 0;
  uc_reg_read(d->uc, UC_RISCV_REG_MSTATUS, &mstatus);
  mstatus |= 3u << 13;
  uc_reg_write(d->uc, UC_RISCV_REG_MSTATUS, &mstatus);
  if (uc_hook_add(d->uc, &d->intr_hook, UC_HOOK_INTR, (void *)vxs__on_interrupt, d, 1, 0) != UC_ERR_OK ||
      uc_context_alloc(d->uc, &d->blank) != UC_ERR_OK || uc_context_save(d->uc, d->blank) != UC_ERR_OK)
    goto fail;
  uint32_t nwarps = c.cores * c.warps_per_core;
  d->warps = calloc(nwarps, sizeof *d->warps);
  d->barrier_count = calloc((size_t)c.cores * c.barriers, sizeof *d->barrier_count);
  if (!d->warps || !d->barrier_count) goto fail;
  for (uint32_t w = 0; w < nwarps; w++) {
    vxs_warp *wp = &d->warps[w];
    wp->stack = calloc(c.ipdom_depth, sizeof *wp->stack);
    wp->thread = calloc(c.threads_per_warp, sizeof *wp->thread);
    if (!wp->stack || !wp->thread) goto fail;
    for (uint32_t t = 0; t < c.threads_per_warp; t++)
      if (uc_context_alloc(d->uc, &wp->thread[t]) != UC_ERR_OK) goto fail;
  }
  uint32_t stack_bytes = vxs__harts(d) * VXS_STACK_SIZE;
  if ((rc = vxs_mem_map(d, VXS_STACK_TOP - stack_bytes, stack_bytes)) != 0 ||
      (rc = vxs_mem_map(d, VXS_LOCAL_MEM_BASE, c.cores * c.local_mem_bytes)) != 0)
    goto fail;
  *out = d;
  return 0;
fail:
  vxs_device_destroy(d);
  return rc;
}

void vxs_device_destroy(vxs_device *d) {
  if (!d) return;
  if (d->warps) {
    for (uint32_t w = 0; w < d->cfg.cores * d->cfg.warps_per_core; w++) {
      vxs_warp *wp = &d->warps[w];
      if (wp->thread)
        for (uint32_t t = 0; t < d->cfg.threads_per_warp; t++)
          if (wp->thread[t]) uc_context_free(wp->thread[t]);
      free(wp->thread);
      free(wp->stack);
    }
  }
  free(d->warps);
  free(d->barrier_count);
  if (d->blank) uc_context_free(d->blank);
  uc_close(d->uc);
  for (uint32_t i = 0; i < d->nregions; i++)
    munmap(d->regions[i].host, d->regions[i].size);
  for (uint32_t i = 0; i < d->nsyms; i++)
    free(d->syms[i].name);
  free(d->syms);
  free(d->kept);
  free(d->image_init);
  if (d->dwarf) dwarf_end(d->dwarf);
  if (d->elf) elf_end(d->elf);
  free(d->elf_copy);
  free(d->console);
  free(d);
}

const char *vxs_console(const vxs_device *d) { return d->console ? d->console : ""; }

/* ---- the image ---- */

static int vxs__sym_cmp(const void *a, const void *b) {
  const vxs_symbol *x = a, *y = b;
  return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* An ELF file's symbol table: its data, its entry count and the section
 * of its names. */
typedef struct {
  Elf_Data *data;
  size_t n;
  size_t strtab;
} vxs__symtab;

/* Finds e's symbol table into *t; false when it has none (n 0). */
static bool vxs__find_symtab(Elf *e, vxs__symtab *t) {
  memset(t, 0, sizeof *t);
  Elf_Scn *scn = NULL;
  while ((scn = elf_nextscn(e, scn))) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB || !sh.sh_entsize) continue;
    if (!(t->data = elf_getdata(scn, NULL))) continue;
    t->n = sh.sh_size / sh.sh_entsize, t->strtab = sh.sh_link;
    return true;
  }
  return false;
}

/* Symbol i of t into *s, and its name: NULL when unreadable or empty. */
static const char *vxs__symbol(Elf *e, const vxs__symtab *t, size_t i, GElf_Sym *s) {
  if (!gelf_getsym(t->data, (int)i, s)) return NULL;
  const char *name = elf_strptr(e, t->strtab, s->st_name);
  return name && *name ? name : NULL;
}

/* Reads the symbol table: function symbols for reports, and the runtime's
 * serial range, exit-code word and console buffer. */
static int vxs__read_symbols(vxs_device *d, Elf *e) {
  vxs__symtab t;
  vxs__find_symtab(e, &t);
  d->syms = calloc(t.n ? t.n : 1, sizeof *d->syms);
  if (!d->syms) return -ENOMEM;
  for (size_t i = 0; i < t.n; i++) {
    GElf_Sym s;
    const char *name = vxs__symbol(e, &t, i, &s);
    if (!name) continue;
    vxs_addr addr = s.st_value;
    uint32_t size = s.st_size > UINT32_MAX ? UINT32_MAX : (uint32_t)s.st_size;
    if (strcmp(name, "__vxs_serial_start") == 0)
      d->serial_lo = addr;
    else if (strcmp(name, "__vxs_serial_end") == 0)
      d->serial_hi = addr;
    else if (strcmp(name, "__vxs_exit_code") == 0)
      d->exit_code_addr = addr;
    else if (strcmp(name, "__vxs_console") == 0)
      d->console_addr = addr, d->console_cap = size;
    else if (strcmp(name, "__vxs_console_len") == 0)
      d->console_len_addr = addr;
    if (GELF_ST_TYPE(s.st_info) != STT_FUNC) continue;
    char *copy = strdup(name);
    if (!copy) return -ENOMEM;
    d->syms[d->nsyms++] = (vxs_symbol){addr, size, copy};
  }
  qsort(d->syms, d->nsyms, sizeof *d->syms, vxs__sym_cmp);
  return 0;
}

int vxs_load_elf(vxs_device *d, const void *image, size_t size, const char **why) {
  const char *dummy;
  if (!why) why = &dummy;
  *why = NULL;
  if (d->loaded_image) return *why = "an image is already loaded", -EINVAL;
  if (elf_version(EV_CURRENT) == EV_NONE) return *why = "libelf unusable", -EINVAL;
  char *copy = malloc(size ? size : 1);
  if (!copy) return -ENOMEM;
  memcpy(copy, image, size);
  Elf *e = elf_memory(copy, size);
  int rc = -EINVAL;
  GElf_Ehdr eh;
  size_t nph = 0;
  if (!e || elf_kind(e) != ELF_K_ELF || !gelf_getehdr(e, &eh)) {
    *why = "not an ELF file";
    goto out;
  }
  if (eh.e_ident[EI_CLASS] != (d->cfg.xlen == 64 ? ELFCLASS64 : ELFCLASS32) || eh.e_machine != EM_RISCV ||
      eh.e_type != ET_EXEC) {
    *why = d->cfg.xlen == 64 ? "not an ELF64 RISC-V executable (an RV64 device)"
                             : "not an ELF32 RISC-V executable (an RV32 device)";
    goto out;
  }
  if (elf_getphdrnum(e, &nph) != 0) {
    *why = "unreadable program headers";
    goto out;
  }
  uint64_t lo = UINT64_MAX, hi = 0;
  for (size_t i = 0; i < nph; i++) {
    GElf_Phdr ph;
    if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD || !ph.p_memsz) continue;
    if (ph.p_filesz > ph.p_memsz || ph.p_offset > size || ph.p_filesz > size - ph.p_offset ||
        ph.p_vaddr > VXS_ADDR_LIMIT(d->cfg.xlen) || ph.p_memsz > VXS_ADDR_LIMIT(d->cfg.xlen) - ph.p_vaddr) {
      *why = "a segment lies outside the file or the address space";
      goto out;
    }
    if (ph.p_vaddr < lo) lo = ph.p_vaddr;
    if (ph.p_vaddr + ph.p_memsz > hi) hi = ph.p_vaddr + ph.p_memsz;
  }
  if (lo >= hi || hi - lo > (256u << 20)) {
    *why = "no loadable segments, or more than 256 MiB";
    goto out;
  }
  lo &= ~(uint64_t)(VXS_PAGE - 1);
  hi = (hi + VXS_PAGE - 1) & ~(uint64_t)(VXS_PAGE - 1);
  if ((rc = vxs_mem_map(d, lo, (uint32_t)(hi - lo))) != 0) {
    *why = "the image overlaps the emulator's stacks or local memory";
    goto out;
  }
  d->image_addr = lo;
  d->image_size = (uint32_t)(hi - lo);
  d->image_init = calloc(1, d->image_size);
  if (!d->image_init) {
    rc = -ENOMEM;
    goto out;
  }
  for (size_t i = 0; i < nph; i++) {
    GElf_Phdr ph;
    if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD || !ph.p_memsz) continue;
    memcpy(d->image_init + (ph.p_vaddr - lo), copy + ph.p_offset, ph.p_filesz);
  }
  /* device memory holds the image from now on, as a loader's copy would:
   * the kept ranges a run starts from are read from it */
  vxs_mem_write(d, d->image_addr, d->image_init, d->image_size);
  if ((rc = vxs__read_symbols(d, e)) != 0) goto out;
  d->entry = eh.e_entry;
  d->loaded_image = true;
  /* keep the file for source locations in reports (no line tables: NULL) */
  d->dwarf = dwarf_begin_elf(e, DWARF_C_READ, NULL);
  d->elf = e, d->elf_copy = copy;
  return 0;
out:
  if (e) elf_end(e);
  free(copy);
  return rc;
}

int vxs_set_serial(vxs_device *d, vxs_addr lo, vxs_addr hi) {
  if (!d->loaded_image || lo > hi) return -EINVAL;
  d->serial_lo = lo, d->serial_hi = hi;
  return 0;
}

int vxs_keep_symbols(vxs_device *d, const char *prefix) {
  if (!d->elf || d->kept) return -EINVAL;
  size_t plen = strlen(prefix);
  vxs__symtab t;
  vxs__find_symtab(d->elf, &t);
  d->kept = calloc(t.n ? t.n : 1, sizeof *d->kept);
  if (!d->kept) return -ENOMEM;
  for (size_t i = 0; i < t.n; i++) {
    GElf_Sym s;
    const char *name = vxs__symbol(d->elf, &t, i, &s);
    /* a data object inside the image, as every byte a run restores is */
    if (!name || GELF_ST_TYPE(s.st_info) != STT_OBJECT || !s.st_size || strncmp(name, prefix, plen) != 0 ||
        s.st_value < d->image_addr || s.st_value - d->image_addr > d->image_size ||
        s.st_size > d->image_size - (s.st_value - d->image_addr))
      continue;
    d->kept[d->nkept++] = (vxs_symbol){s.st_value, (uint32_t)s.st_size, NULL};
    d->kept_bytes += (uint32_t)s.st_size;
  }
  qsort(d->kept, d->nkept, sizeof *d->kept, vxs__sym_cmp);
  return (int)d->nkept;
}

uint32_t vxs_kept_size(const vxs_device *d) { return d->kept_bytes; }

/* Copies the kept ranges out of device memory (to_device 0) into buf, or
 * into it from buf, in address order. */
static int vxs__kept_copy(vxs_device *d, uint8_t *buf, uint32_t size, int to_device) {
  if (size != d->kept_bytes) return -EINVAL;
  for (uint32_t i = 0, off = 0; i < d->nkept; off += d->kept[i].size, i++) {
    int rc = to_device ? vxs_mem_write(d, d->kept[i].addr, buf + off, d->kept[i].size)
                       : vxs_mem_read(d, d->kept[i].addr, buf + off, d->kept[i].size);
    if (rc != 0) return rc;
  }
  return 0;
}

int vxs_kept_read(vxs_device *d, void *dst, uint32_t size) { return vxs__kept_copy(d, dst, size, 0); }

int vxs_kept_write(vxs_device *d, const void *src, uint32_t size) {
  return vxs__kept_copy(d, (uint8_t *)(uintptr_t)src, size, 1);
}

int vxs_load_image(vxs_device *d, vxs_addr addr, const void *image, uint32_t size) {
  if (d->loaded_image || !size || addr % VXS_PAGE || size > (256u << 20)) return -EINVAL;
  uint32_t mapped = (size + VXS_PAGE - 1) & ~(uint32_t)(VXS_PAGE - 1);
  int rc = vxs_mem_map(d, addr, mapped);
  if (rc != 0) return rc;
  d->image_init = calloc(1, mapped);
  if (!d->image_init) return -ENOMEM;
  memcpy(d->image_init, image, size);
  d->image_addr = addr;
  d->image_size = mapped;
  vxs_mem_write(d, addr, d->image_init, mapped);
  d->entry = addr;
  d->loaded_image = true;
  return 0;
}

/* ---- reports ---- */

/* The compile unit whose code holds pc.  .debug_aranges, when an image has
 * one, may cover only some units (libgcc's, not clang's), so every unit is
 * asked when it does not answer. */
static Dwarf_Die *vxs__unit_of(Dwarf *dw, vxs_addr pc, Dwarf_Die *cu) {
  if (dwarf_addrdie(dw, pc, cu)) return cu;
  Dwarf_Off off = 0, next;
  size_t header;
  while (dwarf_nextcu(dw, off, &next, &header, NULL, NULL, NULL) == 0) {
    if (dwarf_offdie(dw, off + header, cu) && dwarf_haspc(cu, pc) == 1) return cu;
    off = next;
  }
  return NULL;
}

/* "name+0xoff" for a code address, or "?"; then " at file:line:col" when
 * the image has a line table for it. */
static void vxs__where(const vxs_device *d, vxs_addr pc, char *buf, size_t cap) {
  const vxs_symbol *best = NULL;
  size_t lo = 0, hi = d->nsyms;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (d->syms[mid].addr <= pc)
      best = &d->syms[mid], lo = mid + 1;
    else
      hi = mid;
  }
  int n;
  if (best && (best->size == 0 || pc - best->addr < best->size))
    n = snprintf(buf, cap, "%s+0x%llx", best->name, (unsigned long long)(pc - best->addr));
  else
    n = snprintf(buf, cap, "?");
  Dwarf_Die cu;
  Dwarf_Line *line;
  int lineno = 0, col = 0;
  const char *file;
  if (d->dwarf && n >= 0 && (size_t)n < cap && vxs__unit_of(d->dwarf, pc, &cu) &&
      (line = dwarf_getsrc_die(&cu, pc)) && (file = dwarf_linesrc(line, NULL, NULL)) &&
      dwarf_lineno(line, &lineno) == 0 && lineno > 0) {
    dwarf_linecol(line, &col);
    /* vortexd's objects name a file by its name alone, in no directory
     * (no DW_AT_comp_dir): libdw joins that empty directory into "/name" */
    Dwarf_Attribute at;
    const char *comp_dir = dwarf_formstring(dwarf_attr(&cu, DW_AT_comp_dir, &at));
    if ((!comp_dir || !*comp_dir) && file[0] == '/' && !strchr(file + 1, '/')) file++;
    snprintf(buf + n, cap - (size_t)n, " at %s:%d:%d", file, lineno, col);
  }
}

__attribute__((format(printf, 4, 5))) static int vxs__fail(vxs_device *d, uint32_t w, vxs_addr pc,
                                                           const char *fmt, ...) {
  char what[320], where[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  vxs__where(d, pc, where, sizeof where);
  snprintf(d->rep->error, sizeof d->rep->error, "%s at pc 0x%08llx (%s), core %u warp %u, thread mask 0x%x",
           what, (unsigned long long)pc, where, w / d->cfg.warps_per_core, w % d->cfg.warps_per_core,
           d->warps[w].tmask);
  return VXS_EDEVICE;
}

/* ---- thread contexts ---- */

/* Makes ctx the state in the engine, saving the one there before. */
static void vxs__load(vxs_device *d, uc_context *ctx) {
  if (d->loaded == ctx) return;
  if (d->loaded) uc_context_save(d->uc, d->loaded);
  uc_context_restore(d->uc, ctx);
  d->loaded = ctx;
}

/* Register r of a thread: XLEN bits, zero-extended. */
static uint64_t vxs__xreg(vxs_device *d, uc_context *ctx, uint32_t r) {
  uint64_t v = 0;
  if (r == 0) return 0;
  if (ctx == d->loaded)
    uc_reg_read(d->uc, UC_RISCV_REG_X0 + (int)r, &v);
  else
    uc_context_reg_read(ctx, UC_RISCV_REG_X0 + (int)r, &v);
  return v;
}

static void vxs__set_xreg(vxs_device *d, uc_context *ctx, uint32_t r, uint64_t v) {
  if (r == 0) return;
  if (ctx == d->loaded)
    uc_reg_write(d->uc, UC_RISCV_REG_X0 + (int)r, &v);
  else
    uc_context_reg_write(ctx, UC_RISCV_REG_X0 + (int)r, &v);
}

static void vxs__reset_thread(vxs_device *d, uc_context *ctx) {
  if (d->loaded && d->loaded != ctx) uc_context_save(d->uc, d->loaded);
  d->loaded = NULL;
  uc_context_restore(d->uc, d->blank);
  uc_context_save(d->uc, ctx);
}

static uint32_t vxs__last_thread(uint32_t mask) { return 31u - (uint32_t)__builtin_clz(mask); }

/* Starts warp w at pc with thread mask tmask, as Vortex's wspawn and its
 * hardware scheduler do: only the PC, the mask and the divergence stack
 * are set; every thread's registers keep what they held (zero after the
 * run's reset, else what the warp's last run left), as upstream's start
 * code relies on (sp and tp set by one wspawn, used by the next). */
static void vxs__start_warp(vxs_device *d, uint32_t w, vxs_addr pc, uint32_t tmask) {
  vxs_warp *wp = &d->warps[w];
  wp->pc = pc;
  wp->tmask = tmask;
  wp->depth = 0;
  wp->state = VXS_WARP_RUN;
}

/* ---- Vortex CSRs ---- */

/* The block CSRs of thread t of warp w under vxs_run_kmu.  Thread t is
 * the block's thread rank * threads_per_warp + t, x fastest. */
static bool vxs__cta_csr(const vxs_device *d, uint32_t w, uint32_t t, uint32_t csr, uint64_t *v) {
  const vxs_warp *wp = &d->warps[w];
  const vxs_kmu_launch *l = d->kmu;
  uint32_t flat = wp->cta_rank * d->cfg.threads_per_warp + t;
  uint32_t tid[3] = {flat % l->block[0], flat / l->block[0] % l->block[1],
                     flat / (l->block[0] * l->block[1])};
  uint32_t core = w / d->cfg.warps_per_core;
  if (csr >= VXS_CSR_CTA_THREAD_ID_X && csr < VXS_CSR_CTA_THREAD_ID_X + 3)
    *v = tid[csr - VXS_CSR_CTA_THREAD_ID_X];
  else if (csr >= VXS_CSR_CTA_BLOCK_ID_X && csr < VXS_CSR_CTA_BLOCK_ID_X + 3)
    *v = wp->block_id[csr - VXS_CSR_CTA_BLOCK_ID_X];
  else if (csr >= VXS_CSR_CTA_BLOCK_DIM_X && csr < VXS_CSR_CTA_BLOCK_DIM_X + 3)
    *v = l->block[csr - VXS_CSR_CTA_BLOCK_DIM_X];
  else if (csr >= VXS_CSR_CTA_GRID_DIM_X && csr < VXS_CSR_CTA_GRID_DIM_X + 3)
    *v = l->grid[csr - VXS_CSR_CTA_GRID_DIM_X];
  else if (csr == VXS_CSR_CTA_ID)
    *v = wp->cta_slot;
  else if (csr == VXS_CSR_CTA_RANK)
    *v = wp->cta_rank;
  else if (csr == VXS_CSR_CTA_SIZE)
    *v = d->cta_warps;
  else if (csr == VXS_CSR_CTA_ENTRY)
    *v = l->entry;
  else if (csr == VXS_CSR_CTA_LMEM_ADDR)
    *v = VXS_LOCAL_MEM_BASE + core * d->cfg.local_mem_bytes + wp->cta_slot * d->cta_local;
  else
    return false;
  return true;
}

static bool vxs__csr(vxs_device *d, uint32_t w, uint32_t t, uint32_t csr, uint64_t *v) {
  const vxs_config *c = &d->cfg;
  uint32_t core = w / c->warps_per_core, warp = w % c->warps_per_core;
  switch (csr) {
  case VXS_CSR_MSCRATCH: *v = d->mscratch[core]; return true;
  case VXS_CSR_MHARTID: *v = w * c->threads_per_warp + t; return true;
  case VXS_CSR_THREAD_ID: *v = t; return true;
  case VXS_CSR_WARP_ID: *v = warp; return true;
  case VXS_CSR_CORE_ID: *v = core; return true;
  case VXS_CSR_ACTIVE_WARPS: {
    uint32_t m = 0;
    for (uint32_t i = 0; i < c->warps_per_core && i < 32; i++)
      if (d->warps[core * c->warps_per_core + i].state != VXS_WARP_OFF) m |= 1u << i;
    *v = m;
    return true;
  }
  case VXS_CSR_ACTIVE_THREADS: *v = d->warps[w].tmask; return true;
  case VXS_CSR_NUM_THREADS: *v = c->threads_per_warp; return true;
  case VXS_CSR_NUM_WARPS: *v = c->warps_per_core; return true;
  case VXS_CSR_NUM_CORES: *v = c->cores; return true;
  case VXS_CSR_LOCAL_MEM_BASE: *v = VXS_LOCAL_MEM_BASE + core * c->local_mem_bytes; return true;
  default: return d->kmu && vxs__cta_csr(d, w, t, csr, v);
  }
}

/* csrr-style reads of the CSRs above; returns 1 when inst is not one of
 * them (libunicorn executes it), 0 when handled, VXS_EDEVICE on an error. */
static int vxs__exec_csr(vxs_device *d, uint32_t w, uint32_t inst) {
  vxs_warp *wp = &d->warps[w];
  uint32_t f3 = (inst >> 12) & 7, rd = (inst >> 7) & 31, rs1 = (inst >> 15) & 31, csr = inst >> 20;
  uint64_t v;
  if (f3 == 0 || f3 == 4 || !vxs__csr(d, w, 0, csr, &v)) return 1;
  bool writes = f3 == 1 || f3 == 5 || rs1 != 0;
  if (writes && csr != VXS_CSR_MSCRATCH) return vxs__fail(d, w, wp->pc, "write to read-only CSR 0x%03x", csr);
  /* mscratch is writable, one register per core (as upstream's 2.x
   * vx_spawn_threads uses it): the operand of the warp's last active thread */
  uint64_t x = !writes ? 0 : f3 >= 5 ? rs1 : vxs__xreg(d, wp->thread[vxs__last_thread(wp->tmask)], rs1);
  for (uint32_t t = 0; t < d->cfg.threads_per_warp; t++)
    if (wp->tmask >> t & 1) {
      vxs__csr(d, w, t, csr, &v);
      vxs__set_xreg(d, wp->thread[t], rd, v);
    }
  if (writes) {
    vxs_addr *m = &d->mscratch[w / d->cfg.warps_per_core];
    *m = (f3 & 3) == 1 ? x : (f3 & 3) == 2 ? *m | x : *m & ~x;
  }
  wp->pc += 4;
  return 0;
}

/* ---- Vortex custom-0 instructions ---- */

static int vxs__barrier(vxs_device *d, uint32_t w, uint32_t id, uint32_t count) {
  vxs_warp *wp = &d->warps[w];
  uint32_t core = w / d->cfg.warps_per_core;
  if (id & 0x80000000u)
    return vxs__fail(d, w, wp->pc, "global (cross-core) barrier 0x%x is not emulated", id);
  if (id >= d->cfg.barriers)
    return vxs__fail(d, w, wp->pc, "barrier id %u beyond the %u barriers of a core", id, d->cfg.barriers);
  if (count > d->cfg.warps_per_core)
    return vxs__fail(d, w, wp->pc, "barrier %u waits for %u warps, a core has %u", id, count,
                     d->cfg.warps_per_core);
  wp->pc += 4;
  if (count < 2) return 0; /* Vortex: a barrier of fewer than two warps is a no-op */
  uint32_t *arrived = &d->barrier_count[core * d->cfg.barriers + id];
  if (++*arrived < count) {
    wp->state = VXS_WARP_BARRIER;
    wp->barrier_id = id;
    return 0;
  }
  *arrived = 0;
  for (uint32_t i = 0; i < d->cfg.warps_per_core; i++) {
    vxs_warp *o = &d->warps[core * d->cfg.warps_per_core + i];
    if (o->state == VXS_WARP_BARRIER && o->barrier_id == id) o->state = VXS_WARP_RUN;
  }
  return 0;
}

/* Votes and shuffles (custom-0, funct7 1; newer Vortex versions).
 *   funct3 0..3: rd = vote all / any / uni / ballot of (rs1 & 1) over the
 *                active threads;
 *   funct3 4..7: rd = rs1 of thread j, j = lane - b (up), lane + b (down),
 *                lane ^ b (bfly), first | b (idx), with rs2 = mask << 12 |
 *                c << 6 | b: the segment of a lane is [lane & mask,
 *                (lane & mask) | (c & ~mask)]; a j outside it gives the
 *                thread's own rs1. */
static int vxs__exec_collective(vxs_device *d, uint32_t w, uint32_t f3, uint32_t rd, uint32_t rs1,
                                uint32_t rs2) {
  vxs_warp *wp = &d->warps[w];
  uint32_t lanes = d->cfg.threads_per_warp;
  uint64_t val[VXS_MAX_THREADS_PER_WARP], res[VXS_MAX_THREADS_PER_WARP]; /* whole registers */
  for (uint32_t t = 0; t < lanes; t++)
    val[t] = vxs__xreg(d, wp->thread[t], rs1);
  if (f3 < 4) {
    uint32_t yes = 0;
    for (uint32_t t = 0; t < lanes; t++)
      if ((wp->tmask >> t & 1) && (val[t] & 1)) yes |= 1u << t;
    uint32_t r = f3 == 0   ? yes == wp->tmask
                 : f3 == 1 ? yes != 0
                 : f3 == 2 ? (yes == 0 || yes == wp->tmask)
                           : yes;
    for (uint32_t t = 0; t < lanes; t++)
      res[t] = r;
  } else {
    for (uint32_t t = 0; t < lanes; t++) {
      if (!(wp->tmask >> t & 1)) continue;
      uint32_t bc = (uint32_t)vxs__xreg(d, wp->thread[t], rs2), b = bc & 63, c = (bc >> 6) & 63,
               mask = bc >> 12;
      uint32_t lo = t & mask, hi = lo | (c & ~mask);
      int64_t j = f3 == 4   ? (int64_t)t - b
                  : f3 == 5 ? (int64_t)t + b
                  : f3 == 6 ? (int64_t)(t ^ b)
                            : (int64_t)(lo | (b & ~mask));
      res[t] = (j < (int64_t)lo || j > (int64_t)hi || j >= (int64_t)lanes) ? val[t] : val[j];
    }
  }
  for (uint32_t t = 0; t < lanes; t++)
    if (wp->tmask >> t & 1) vxs__set_xreg(d, wp->thread[t], rd, res[t]);
  wp->pc += 4;
  return 0;
}

static int vxs__exec_custom(vxs_device *d, uint32_t w, uint32_t inst) {
  vxs_warp *wp = &d->warps[w];
  const vxs_config *c = &d->cfg;
  uint32_t f3 = (inst >> 12) & 7, f7 = inst >> 25, rd = (inst >> 7) & 31, rs1 = (inst >> 15) & 31,
           rs2 = (inst >> 20) & 31;
  uint32_t last = vxs__last_thread(wp->tmask);
  /* rs1 and rs2 of the custom instructions are counts, masks and ids (32
   * bits), but for wspawn's code address (XLEN bits: rs2_pc) */
  const uint64_t rs2_pc = vxs__xreg(d, wp->thread[last], rs2);
  uint32_t a = (uint32_t)vxs__xreg(d, wp->thread[last], rs1), b = (uint32_t)rs2_pc;
  uint32_t full = c->threads_per_warp == 32 ? 0xFFFFFFFFu : (1u << c->threads_per_warp) - 1;
  if (f7 == 1) return vxs__exec_collective(d, w, f3, rd, rs1, rs2);
  if (f7 != 0)
    return vxs__fail(d, w, wp->pc, "custom-0 instruction funct7=%u funct3=%u is not emulated", f7, f3);
  switch (f3) {
  case 0: /* tmc rs1 */
    wp->tmask = a & full;
    wp->pc += 4;
    if (!wp->tmask) wp->state = VXS_WARP_OFF;
    return 0;
  case 1: { /* wspawn rs1 = warps, rs2 = pc */
    uint32_t core = w / c->warps_per_core, n = a < c->warps_per_core ? a : c->warps_per_core;
    for (uint32_t i = 1; i < n; i++)
      if (d->warps[core * c->warps_per_core + i].state == VXS_WARP_OFF)
        vxs__start_warp(d, core * c->warps_per_core + i, rs2_pc, 1);
    wp->pc += 4;
    return 0;
  }
  case 2: { /* split rd, rs1 (rs2 field 1: negated predicate) */
    uint32_t taken = 0;
    for (uint32_t t = 0; t < c->threads_per_warp; t++)
      if (wp->tmask >> t & 1) taken |= ((vxs__xreg(d, wp->thread[t], rs1) & 1) ^ (rs2 == 1)) << t;
    uint32_t not_taken = wp->tmask & ~taken;
    uint32_t depth = wp->depth;
    for (uint32_t t = 0; t < c->threads_per_warp; t++)
      if (wp->tmask >> t & 1) vxs__set_xreg(d, wp->thread[t], rd, depth);
    if (taken && not_taken) {
      if (wp->depth == c->ipdom_depth)
        return vxs__fail(d, w, wp->pc, "IPDOM stack overflow (%u entries): splits without joins?",
                         c->ipdom_depth);
      bool first_taken;
      int nt = __builtin_popcount(taken), nn = __builtin_popcount(not_taken);
      switch (c->split_policy) {
      case VXS_SPLIT_SMALLER: first_taken = nt <= nn; break;
      case VXS_SPLIT_LARGER: first_taken = nt >= nn; break;
      case VXS_SPLIT_TAKEN: first_taken = true; break;
      default: first_taken = false; break;
      }
      wp->stack[wp->depth++] = (vxs_ipdom){wp->tmask, first_taken ? not_taken : taken, wp->pc + 4, false};
      wp->tmask = first_taken ? taken : not_taken;
      d->rep->splits_divergent++;
      if (wp->depth > d->rep->max_ipdom_depth) d->rep->max_ipdom_depth = wp->depth;
    }
    wp->pc += 4;
    return 0;
  }
  case 3: { /* join rs1 = depth the matching split returned */
    for (uint32_t t = 0; t < c->threads_per_warp; t++)
      if ((wp->tmask >> t & 1) && (uint32_t)vxs__xreg(d, wp->thread[t], rs1) != a)
        return vxs__fail(d, w, wp->pc, "join operands differ between threads");
    if (a == wp->depth) { /* the split was uniform */
      wp->pc += 4;
      return 0;
    }
    if (wp->depth == 0 || a != wp->depth - 1)
      return vxs__fail(d, w, wp->pc, "join of split depth %u with IPDOM depth %u (not the innermost split)",
                       a, wp->depth);
    vxs_ipdom *top = &wp->stack[wp->depth - 1];
    if (top->fallthrough) {
      wp->tmask = top->orig_tmask;
      wp->depth--;
      wp->pc += 4;
    } else {
      wp->tmask = top->other_tmask;
      wp->pc = top->pc;
      top->fallthrough = true;
    }
    return 0;
  }
  case 4: /* bar rs1 = id, rs2 = warps */ return vxs__barrier(d, w, a, b);
  case 5: { /* pred rs1 = condition, rs2 = mask (rd field 1: negated) */
    uint32_t stay = 0;
    for (uint32_t t = 0; t < c->threads_per_warp; t++)
      if (wp->tmask >> t & 1) stay |= ((vxs__xreg(d, wp->thread[t], rs1) & 1) ^ (rd == 1)) << t;
    wp->tmask = stay ? stay : (b & full);
    wp->pc += 4;
    if (!wp->tmask) return vxs__fail(d, w, wp->pc - 4, "pred restored an empty thread mask");
    return 0;
  }
  case 7: /* wsync: wait until the warp's issued instructions are done (here they always are) */
    wp->pc += 4;
    return 0;
  default: return vxs__fail(d, w, wp->pc, "custom-0 instruction funct3=%u is not emulated", f3);
  }
}

/* ---- ordinary instructions ---- */

static bool vxs__serial(const vxs_device *d, vxs_addr pc) { return pc >= d->serial_lo && pc < d->serial_hi; }

/* Runs one active thread from pc, one instruction at a time, until it is
 * back at the return address of the library call it just entered with the
 * stack pointer it had (see vxs.h: serial range). */
static int vxs__serial_call(vxs_device *d, uint32_t w, uint32_t t, vxs_addr pc) {
  vxs_warp *wp = &d->warps[w];
  vxs__load(d, wp->thread[t]);
  uint64_t ret = vxs__xreg(d, wp->thread[t], 1), sp = vxs__xreg(d, wp->thread[t], 2);
  for (uint32_t n = 0; n < VXS_SERIAL_CALL_LIMIT; n++) {
    if (pc == ret && vxs__xreg(d, wp->thread[t], 2) == sp) return 0;
    d->trap = 0;
    uc_err err = uc_emu_start(d->uc, pc, 0, 0, 1);
    if (err != UC_ERR_OK) return vxs__fail(d, w, pc, "thread %u: %s in a library call", t, uc_strerror(err));
    if (d->trap) return vxs__fail(d, w, pc, "thread %u: exception %u in a library call", t, d->trap_cause);
    uint64_t npc = 0;
    uc_reg_read(d->uc, UC_RISCV_REG_PC, &npc);
    pc = npc;
    d->rep->thread_steps++;
  }
  return vxs__fail(d, w, pc, "thread %u: library call still running after %u instructions", t,
                   VXS_SERIAL_CALL_LIMIT);
}

static int vxs__exec_plain(vxs_device *d, uint32_t w) {
  vxs_warp *wp = &d->warps[w];
  vxs_addr pc = wp->pc, next = 0, other = 0;
  uint32_t next_mask = 0, other_mask = 0;
  bool have = false;
  for (uint32_t t = 0; t < d->cfg.threads_per_warp; t++) {
    if (!(wp->tmask >> t & 1)) continue;
    vxs__load(d, wp->thread[t]);
    d->trap = 0;
    uc_err err = uc_emu_start(d->uc, pc, 0, 0, 1);
    if (err != UC_ERR_OK) return vxs__fail(d, w, pc, "thread %u: %s", t, uc_strerror(err));
    if (d->trap)
      return vxs__fail(d, w, pc, "thread %u: illegal instruction or exception %u", t, d->trap_cause);
    uint64_t npc = 0; /* an RV32 engine's PC wraps at 4 GiB */
    uc_reg_read(d->uc, UC_RISCV_REG_PC, &npc);
    if (!have || npc == next) {
      next = npc, next_mask |= 1u << t, have = true;
    } else {
      other = npc, other_mask |= 1u << t;
    }
    d->rep->thread_steps++;
  }
  if (other_mask)
    return vxs__fail(
        d, w, pc, "divergent branch without a split: threads 0x%x go to 0x%08llx, threads 0x%x to 0x%08llx",
        next_mask, (unsigned long long)next, other_mask, (unsigned long long)other);
  wp->pc = next;
  if (vxs__serial(d, next) && !vxs__serial(d, pc)) {
    for (uint32_t t = 0; t < d->cfg.threads_per_warp; t++)
      if ((wp->tmask >> t & 1) && vxs__serial_call(d, w, t, next)) return VXS_EDEVICE;
    wp->pc = vxs__xreg(d, wp->thread[vxs__last_thread(wp->tmask)], 1);
  }
  return 0;
}

static int vxs__step(vxs_device *d, uint32_t w) {
  vxs_warp *wp = &d->warps[w];
  uint32_t inst;
  if (vxs_mem_read(d, wp->pc, &inst, 4) != 0)
    return vxs__fail(d, w, wp->pc, "instruction fetch from unmapped memory");
  d->rep->warp_steps++;
  if ((inst & 0x7F) == VXS_OPCODE_CUSTOM0) return vxs__exec_custom(d, w, inst);
  if ((inst & 0x7F) == VXS_OPCODE_SYSTEM) {
    int rc = vxs__exec_csr(d, w, inst);
    if (rc <= 0) return rc;
  }
  return vxs__exec_plain(d, w);
}

/* ---- runs ---- */

static void vxs__read_console(vxs_device *d) {
  uint32_t len = 0;
  free(d->console);
  d->console = NULL;
  d->console_len = 0;
  if (!d->console_addr || !d->console_len_addr || vxs_mem_read(d, d->console_len_addr, &len, 4) != 0) return;
  if (len > d->console_cap) len = d->console_cap;
  d->console = malloc((size_t)len + 1);
  if (!d->console) return;
  if (vxs_mem_read(d, d->console_addr, d->console, len) != 0) len = 0;
  d->console[len] = '\0';
  d->console_len = len;
}

/* Resets the device for a run: the image's initial contents (but for the
 * kept ranges, which keep what is in memory now), the barriers, every
 * warp off and every hart's registers zero. */
static void vxs__reset_run(vxs_device *d, vxs_addr argument_buffer, vxs_report *rep) {
  memset(rep, 0, sizeof *rep);
  d->rep = rep;
  d->argument_buffer = argument_buffer;
  for (uint32_t c = 0; c < VXS_MAX_CORES; c++)
    d->mscratch[c] = argument_buffer;
  for (uint32_t i = 0; i < d->nkept; i++)
    vxs_mem_read(d, d->kept[i].addr, d->image_init + (d->kept[i].addr - d->image_addr), d->kept[i].size);
  vxs_mem_write(d, d->image_addr, d->image_init, d->image_size);
  memset(d->barrier_count, 0, (size_t)d->cfg.cores * d->cfg.barriers * sizeof *d->barrier_count);
  uint32_t nwarps = d->cfg.cores * d->cfg.warps_per_core;
  for (uint32_t w = 0; w < nwarps; w++) {
    d->warps[w].state = VXS_WARP_OFF, d->warps[w].tmask = 0;
    for (uint32_t t = 0; t < d->cfg.threads_per_warp; t++) /* a device reset: registers zero */
      vxs__reset_thread(d, d->warps[w].thread[t]);
  }
}

/* Steps the running warps in turn until none runs.  0, or VXS_EDEVICE
 * (a fault, a deadlock at a barrier, the step limit; in rep->error). */
static int vxs__run_warps(vxs_device *d, vxs_report *rep) {
  uint32_t nwarps = d->cfg.cores * d->cfg.warps_per_core;
  int rc = 0;
  for (;;) {
    bool ran = false, waiting = false;
    for (uint32_t w = 0; w < nwarps && !rc; w++) {
      if (d->warps[w].state == VXS_WARP_BARRIER) waiting = true;
      if (d->warps[w].state != VXS_WARP_RUN) continue;
      ran = true;
      rc = vxs__step(d, w);
    }
    if (rc) return rc;
    if (!ran) {
      for (uint32_t w = 0; waiting && w < nwarps; w++)
        if (d->warps[w].state == VXS_WARP_BARRIER)
          return vxs__fail(d, w, d->warps[w].pc - 4, "deadlock: no running warp can release barrier %u",
                           d->warps[w].barrier_id);
      return 0;
    }
    if (rep->warp_steps >= d->cfg.max_steps) {
      snprintf(rep->error, sizeof rep->error, "step limit reached (%llu warp instructions)",
               (unsigned long long)d->cfg.max_steps);
      return VXS_EDEVICE;
    }
  }
}

/* Ends a run: the engine's state saved, the exit code and console read. */
static void vxs__end_run(vxs_device *d, vxs_report *rep) {
  if (d->loaded) uc_context_save(d->uc, d->loaded);
  d->loaded = NULL;
  if (d->exit_code_addr && !d->kmu) vxs_mem_read(d, d->exit_code_addr, &rep->exit_code, 4);
  vxs__read_console(d);
  d->rep = NULL;
  d->kmu = NULL;
}

int vxs_run(vxs_device *d, vxs_addr argument_buffer, vxs_report *rep) {
  memset(rep, 0, sizeof *rep);
  if (!d->loaded_image) return -EINVAL;
  vxs__reset_run(d, argument_buffer, rep);
  for (uint32_t c = 0; c < d->cfg.cores; c++)
    vxs__start_warp(d, c * d->cfg.warps_per_core, d->entry, 1);
  int rc = vxs__run_warps(d, rep);
  vxs__end_run(d, rep);
  return rc;
}

/* How many blocks of launch l a core runs at once under d's configuration
 * (0: none fits, why in rep->error).  Sets d->cta_warps and d->cta_local. */
static uint32_t vxs__kmu_slots(vxs_device *d, const vxs_kmu_launch *l, vxs_report *rep) {
  const vxs_config *c = &d->cfg;
  uint64_t threads = (uint64_t)l->block[0] * l->block[1] * l->block[2];
  uint64_t blocks = (uint64_t)l->grid[0] * l->grid[1] * l->grid[2];
  if (!threads || !blocks || blocks > UINT32_MAX || l->local_bytes > c->local_mem_bytes) {
    snprintf(
        rep->error, sizeof rep->error,
        "launch refused: grid %ux%ux%u, block %ux%ux%u, %u bytes of local memory per block (a core has %u)",
        l->grid[0], l->grid[1], l->grid[2], l->block[0], l->block[1], l->block[2], l->local_bytes,
        c->local_mem_bytes);
    return 0;
  }
  uint64_t warps = (threads + c->threads_per_warp - 1) / c->threads_per_warp;
  if (warps > c->warps_per_core) {
    snprintf(rep->error, sizeof rep->error,
             "launch refused: a block of %llu threads needs %llu warps, a core has %u",
             (unsigned long long)threads, (unsigned long long)warps, c->warps_per_core);
    return 0;
  }
  d->cta_warps = (uint32_t)warps;
  d->cta_local = (l->local_bytes + 15u) & ~15u;
  uint32_t slots = c->warps_per_core / d->cta_warps;
  if (d->cta_local && c->local_mem_bytes / d->cta_local < slots) slots = c->local_mem_bytes / d->cta_local;
  if (c->barriers < slots) slots = c->barriers;
  return slots;
}

int vxs_run_kmu(vxs_device *d, vxs_addr argument_buffer, const vxs_kmu_launch *l, vxs_report *rep) {
  memset(rep, 0, sizeof *rep);
  if (!d->loaded_image || !l) return -EINVAL;
  uint32_t slots = vxs__kmu_slots(d, l, rep);
  if (!slots) return -EINVAL;
  vxs__reset_run(d, argument_buffer, rep);
  d->kmu = l;
  const uint32_t T = d->cfg.threads_per_warp, W = d->cta_warps;
  const uint32_t threads = l->block[0] * l->block[1] * l->block[2];
  const uint32_t blocks = l->grid[0] * l->grid[1] * l->grid[2];
  int rc = 0;
  /* waves: every slot of every core takes the next block, then all run */
  for (uint32_t next = 0; next < blocks && !rc;) {
    for (uint32_t c = 0; c < d->cfg.cores; c++)
      for (uint32_t s = 0; s < slots && next < blocks; s++, next++) {
        uint32_t id[3] = {next % l->grid[0], next / l->grid[0] % l->grid[1],
                          next / (l->grid[0] * l->grid[1])};
        for (uint32_t r = 0; r < W; r++) {
          uint32_t w = c * d->cfg.warps_per_core + s * W + r, left = threads - r * T;
          vxs_warp *wp = &d->warps[w];
          wp->cta_slot = s, wp->cta_rank = r;
          memcpy(wp->block_id, id, sizeof id);
          vxs__start_warp(d, w, d->entry,
                          left >= T ? (T == 32 ? 0xFFFFFFFFu : (1u << T) - 1) : (1u << left) - 1);
        }
      }
    rc = vxs__run_warps(d, rep);
  }
  vxs__end_run(d, rep);
  return rc;
}
