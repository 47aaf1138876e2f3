/* vxt_elf.c - ELF checks for the test suites (glibc <elf.h> structures). */
#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vxt.h"

#ifndef EF_RISCV_FLOAT_ABI
#define EF_RISCV_FLOAT_ABI 0x0006
#define EF_RISCV_FLOAT_ABI_SINGLE 0x0002
#endif

/* The symbols named name in obj's symbol table (defined or not,
 * want_defined -1 for either): how many, and the first in *first (may be
 * NULL). */
static unsigned vxt__symbols(const uint8_t *obj, size_t len, const char *name, int want_defined,
                             const Elf32_Sym **first) {
  unsigned count = 0;
  if (first) *first = NULL;
  if (len < sizeof(Elf32_Ehdr)) return 0;
  const Elf32_Ehdr *eh = (const Elf32_Ehdr *)obj;
  if ((size_t)eh->e_shoff + (size_t)eh->e_shnum * sizeof(Elf32_Shdr) > len) return 0;
  const Elf32_Shdr *sh = (const Elf32_Shdr *)(obj + eh->e_shoff);
  for (int i = 0; i < eh->e_shnum; i++) {
    if (sh[i].sh_type != SHT_SYMTAB || sh[i].sh_link >= eh->e_shnum) continue;
    const Elf32_Shdr *strs = &sh[sh[i].sh_link];
    if ((size_t)sh[i].sh_offset + sh[i].sh_size > len || (size_t)strs->sh_offset + strs->sh_size > len)
      return 0;
    const Elf32_Sym *sym = (const Elf32_Sym *)(obj + sh[i].sh_offset);
    size_t n = sh[i].sh_size / sizeof(Elf32_Sym);
    for (size_t j = 0; j < n; j++) {
      if (sym[j].st_name >= strs->sh_size) continue;
      const char *s = (const char *)obj + strs->sh_offset + sym[j].st_name;
      if (strcmp(s, name) != 0) continue;
      int defined = sym[j].st_shndx != SHN_UNDEF;
      if (want_defined >= 0 && defined != want_defined) continue;
      if (first && !*first) *first = &sym[j];
      count++;
    }
  }
  return count;
}

/* The first symbol `name` of obj (want_defined as above), or NULL. */
static const Elf32_Sym *vxt__symbol(const uint8_t *obj, size_t len, const char *name, int want_defined) {
  const Elf32_Sym *first;
  vxt__symbols(obj, len, name, want_defined, &first);
  return first;
}

unsigned vxt_elf_count_defined(const uint8_t *obj, size_t len, const char *name) {
  return vxt__symbols(obj, len, name, 1, NULL);
}

uint32_t vxt_elf_symbol_value(const uint8_t *obj, size_t len, const char *name) {
  const Elf32_Sym *s = vxt__symbol(obj, len, name, 1);
  return s ? s->st_value : 0;
}

int vxt_elf_has_symbol(const uint8_t *obj, size_t len, const char *name, int want_defined) {
  return vxt__symbol(obj, len, name, want_defined) != NULL;
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
  const Elf32_Sym *e = vxt__symbol(obj, len, entry, 1);
  if (!e) return "does not define the kernel's entry";
  if (ELF32_ST_BIND(e->st_info) != STB_GLOBAL || ELF32_ST_TYPE(e->st_info) != STT_FUNC)
    return "the entry is not a global function";
  if (!vxt_elf_has_symbol(obj, len, "vx_spawn_threads", 0)) return "does not reference vx_spawn_threads";
  return NULL;
}

unsigned vxt_elf_count_insn(const uint8_t *obj, size_t len, const char *func, uint32_t opcode,
                            uint32_t funct3, uint32_t funct7) {
  if (len < sizeof(Elf32_Ehdr)) return 0;
  const Elf32_Sym *fs = func ? vxt__symbol(obj, len, func, 1) : NULL;
  if (func && !fs) return 0;
  const Elf32_Ehdr *eh = (const Elf32_Ehdr *)obj;
  if ((size_t)eh->e_shoff + (size_t)eh->e_shnum * sizeof(Elf32_Shdr) > len) return 0;
  const Elf32_Shdr *sh = (const Elf32_Shdr *)(obj + eh->e_shoff);
  unsigned n = 0;
  for (int i = 0; i < eh->e_shnum; i++) {
    if (sh[i].sh_type != SHT_PROGBITS || !(sh[i].sh_flags & SHF_EXECINSTR)) continue;
    if (fs && fs->st_shndx != i) continue;
    if ((size_t)sh[i].sh_offset + sh[i].sh_size > len) return 0;
    size_t from = fs ? fs->st_value : 0, to = fs ? (size_t)fs->st_value + fs->st_size : sh[i].sh_size;
    if (to > sh[i].sh_size) return 0;
    for (size_t at = from; at + 4 <= to; at += 4) {
      uint32_t w;
      memcpy(&w, obj + sh[i].sh_offset + at, 4);
      if ((w & 0x7F) == opcode && (w >> 12 & 7) == funct3 && (w >> 25) == funct7) n++;
    }
  }
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
