/* vxt_elf.c - ELF checks for the test suites (glibc <elf.h> structures). */
#include <gelf.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vxt.h"

#ifndef EF_RISCV_FLOAT_ABI
#define EF_RISCV_FLOAT_ABI 0x0006
#define EF_RISCV_FLOAT_ABI_SINGLE 0x0002
#endif

/* The symbols named name in obj's symbol table (ELF32 or ELF64; defined
 * or not, want_defined -1 for either): how many, and the first in *first
 * (may be NULL). */
static unsigned vxt__symbols(const uint8_t *obj, size_t len, const char *name, int want_defined,
                             GElf_Sym *first) {
  unsigned count = 0;
  elf_version(EV_CURRENT);
  Elf *e = elf_memory((char *)(uintptr_t)obj, len);
  if (!e || elf_kind(e) != ELF_K_ELF) {
    if (e) elf_end(e);
    return 0;
  }
  Elf_Scn *scn = NULL;
  while ((scn = elf_nextscn(e, scn))) {
    GElf_Shdr sh;
    Elf_Data *data;
    if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB || !sh.sh_entsize ||
        !(data = elf_getdata(scn, NULL)))
      continue;
    for (size_t j = 0; j < sh.sh_size / sh.sh_entsize; j++) {
      GElf_Sym sym;
      const char *s = gelf_getsym(data, (int)j, &sym) ? elf_strptr(e, sh.sh_link, sym.st_name) : NULL;
      if (!s || strcmp(s, name) != 0) continue;
      int defined = sym.st_shndx != SHN_UNDEF;
      if (want_defined >= 0 && defined != want_defined) continue;
      if (first && !count) *first = sym;
      count++;
    }
  }
  elf_end(e);
  return count;
}

/* The first symbol `name` of obj (want_defined as above) into *s; false
 * when there is none. */
static bool vxt__symbol(const uint8_t *obj, size_t len, const char *name, int want_defined, GElf_Sym *s) {
  return vxt__symbols(obj, len, name, want_defined, s) > 0;
}

unsigned vxt_elf_count_defined(const uint8_t *obj, size_t len, const char *name) {
  return vxt__symbols(obj, len, name, 1, NULL);
}

uint32_t vxt_elf_symbol_value(const uint8_t *obj, size_t len, const char *name) {
  GElf_Sym s;
  return obj && len > EI_CLASS && obj[EI_CLASS] == ELFCLASS32 && vxt__symbol(obj, len, name, 1, &s)
             ? (uint32_t)s.st_value
             : 0;
}

int vxt_elf_has_symbol(const uint8_t *obj, size_t len, const char *name, int want_defined) {
  GElf_Sym s;
  return vxt__symbol(obj, len, name, want_defined, &s);
}

const char *vxt_kernel_body(const char *entry) {
  static char name[64];
  const char *digits = strrchr(entry, '_');
  snprintf(name, sizeof name, "__vxl_body_%s", digits ? digits + 1 : "");
  return name;
}

const char *vxt_elf_check(const uint8_t *obj, size_t len, const char *entry) {
  if (len < sizeof(Elf32_Ehdr)) return "too short for an ELF header";
  const Elf32_Ehdr *eh = (const Elf32_Ehdr *)obj;
  if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0) return "not ELF";
  if (eh->e_ident[EI_CLASS] != ELFCLASS32) return "not ELF32";
  if (eh->e_ident[EI_DATA] != ELFDATA2LSB) return "not little-endian";
  if (eh->e_machine != EM_RISCV) return "not EM_RISCV";
  if (eh->e_type != ET_REL) return "not a relocatable object";
  if ((eh->e_flags & EF_RISCV_FLOAT_ABI) != EF_RISCV_FLOAT_ABI_SINGLE) return "not the single-float ABI";
  GElf_Sym e;
  if (!vxt__symbol(obj, len, entry, 1, &e)) return "does not define the kernel's entry";
  if (GELF_ST_BIND(e.st_info) != STB_GLOBAL || GELF_ST_TYPE(e.st_info) != STT_FUNC)
    return "the entry is not a global function";
  if (!vxt_elf_has_symbol(obj, len, "vx_spawn_threads", 0)) return "does not reference vx_spawn_threads";
  return NULL;
}

unsigned vxt_elf_count_insn(const uint8_t *obj, size_t len, const char *func, uint32_t opcode,
                            uint32_t funct3, uint32_t funct7) {
  GElf_Sym fsym;
  const GElf_Sym *fs = func && vxt__symbol(obj, len, func, 1, &fsym) ? &fsym : NULL;
  if (func && !fs) return 0;
  elf_version(EV_CURRENT);
  Elf *e = elf_memory((char *)(uintptr_t)obj, len);
  if (!e || elf_kind(e) != ELF_K_ELF) {
    if (e) elf_end(e);
    return 0;
  }
  unsigned n = 0;
  Elf_Scn *scn = NULL;
  while ((scn = elf_nextscn(e, scn))) {
    GElf_Shdr sh;
    Elf_Data *data;
    if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS || !(sh.sh_flags & SHF_EXECINSTR)) continue;
    if (fs && fs->st_shndx != elf_ndxscn(scn)) continue;
    if (!(data = elf_getdata(scn, NULL)) || !data->d_buf) continue;
    size_t from = fs ? fs->st_value : 0, to = fs ? (size_t)(fs->st_value + fs->st_size) : data->d_size;
    if (to > data->d_size) to = data->d_size;
    for (size_t at = from; at + 4 <= to; at += 4) {
      uint32_t w;
      memcpy(&w, (const uint8_t *)data->d_buf + at, 4);
      if ((w & 0x7F) == opcode && (w >> 12 & 7) == funct3 && (w >> 25) == funct7) n++;
    }
  }
  elf_end(e);
  return n;
}

char *vxt_read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  rewind(f);
  char *b = malloc((size_t)n + 1);
  if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
    free(b);
    b = NULL;
  }
  fclose(f);
  if (b) {
    b[n] = '\0';
    *len = (size_t)n;
  }
  return b;
}

#ifndef EF_RISCV_FLOAT_ABI_DOUBLE
#define EF_RISCV_FLOAT_ABI_DOUBLE 0x0004
#endif

/* The first symbol named name in a 64-bit object, defined or not per
 * want_defined (-1: either), or NULL. */
static const Elf64_Sym *vxt__symbol64(const uint8_t *obj, size_t len, const char *name, int want_defined) {
  if (len < sizeof(Elf64_Ehdr)) return NULL;
  const Elf64_Ehdr *eh = (const Elf64_Ehdr *)obj;
  if (eh->e_shoff > len || (size_t)eh->e_shnum * sizeof(Elf64_Shdr) > len - eh->e_shoff) return NULL;
  const Elf64_Shdr *sh = (const Elf64_Shdr *)(obj + eh->e_shoff);
  for (int i = 0; i < eh->e_shnum; i++) {
    if (sh[i].sh_type != SHT_SYMTAB || sh[i].sh_link >= eh->e_shnum) continue;
    const Elf64_Shdr *strs = &sh[sh[i].sh_link];
    if (sh[i].sh_offset + sh[i].sh_size > len || strs->sh_offset + strs->sh_size > len) return NULL;
    const Elf64_Sym *sym = (const Elf64_Sym *)(obj + sh[i].sh_offset);
    for (size_t j = 0; j < sh[i].sh_size / sizeof(Elf64_Sym); j++) {
      if (sym[j].st_name >= strs->sh_size) continue;
      if (strcmp((const char *)obj + strs->sh_offset + sym[j].st_name, name) != 0) continue;
      int defined = sym[j].st_shndx != SHN_UNDEF;
      if (want_defined < 0 || defined == want_defined) return &sym[j];
    }
  }
  return NULL;
}

const char *vxt_elf64_check(const uint8_t *obj, size_t len, const char *entry, const char *needs) {
  if (len < sizeof(Elf64_Ehdr)) return "too short for an ELF header";
  const Elf64_Ehdr *eh = (const Elf64_Ehdr *)obj;
  if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0) return "not ELF";
  if (eh->e_ident[EI_CLASS] != ELFCLASS64) return "not ELF64";
  if (eh->e_machine != EM_RISCV) return "not EM_RISCV";
  if (eh->e_type != ET_REL) return "not a relocatable object";
  if ((eh->e_flags & EF_RISCV_FLOAT_ABI) != EF_RISCV_FLOAT_ABI_DOUBLE)
    return "not the double-float ABI (lp64d)";
  const Elf64_Sym *e = vxt__symbol64(obj, len, entry, 1);
  if (!e) return "does not define the kernel's entry";
  if (ELF64_ST_BIND(e->st_info) != STB_GLOBAL || ELF64_ST_TYPE(e->st_info) != STT_FUNC)
    return "the entry is not a global function";
  if (needs && !vxt__symbol64(obj, len, needs, 0)) return "does not reference what its entry needs";
  return NULL;
}
