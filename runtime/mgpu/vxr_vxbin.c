/*
 * vxr_vxbin.c - linking a module object into a loadable Vortex image
 * (.vxbin), shared by libvortexd_runtime's Vortex backend and vortexd
 * (which links and caches images when a Vortex kernel SDK is configured).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "vxr_vxbin.h"

static int vxr__name_cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The .o files, then the .a files, of dir, in name order, into argv (at
 * most cap entries, strdup()ed).  Returns the count. */
static int vxr__sdk_inputs(const char *dir, char **argv, int cap) {
  int n = 0;
  for (int pass = 0; pass < 2; pass++) {
    DIR *d = opendir(dir);
    if (!d) return n;
    int first = n;
    struct dirent *e;
    while ((e = readdir(d)) && n < cap) {
      size_t l = strlen(e->d_name);
      if (l > 2 && strcmp(e->d_name + l - 2, pass ? ".a" : ".o") == 0 &&
          asprintf(&argv[n], "%s/%s", dir, e->d_name) > 0)
        n++;
    }
    closedir(d);
    qsort(argv + first, (size_t)(n - first), sizeof *argv, vxr__name_cmp);
  }
  return n;
}

/* An ELF executable as a .vxbin: u64 min_vma, u64 max_vma over its PT_LOAD
 * segments, then the memory image of [min_vma, max_vma).  0, -EINVAL (not
 * such an executable) or -ENOMEM. */
static int vxr__to_vxbin(const uint8_t *elf, size_t size, uint8_t **out, size_t *out_size) {
  elf_version(EV_CURRENT);
  Elf *e = elf_memory((char *)elf, size);
  size_t nph = 0;
  int rc = -EINVAL;
  if (!e || elf_getphdrnum(e, &nph) != 0) goto done;
  uint64_t lo = UINT64_MAX, hi = 0;
  for (size_t i = 0; i < nph; i++) {
    GElf_Phdr ph;
    if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD || !ph.p_memsz) continue;
    if (ph.p_offset > size || ph.p_filesz > size - ph.p_offset || ph.p_filesz > ph.p_memsz) goto done;
    if (ph.p_vaddr < lo) lo = ph.p_vaddr;
    if (ph.p_vaddr + ph.p_memsz > hi) hi = ph.p_vaddr + ph.p_memsz;
  }
  if (lo >= hi || hi - lo > (256u << 20)) goto done;
  *out_size = 16 + (size_t)(hi - lo);
  *out = calloc(1, *out_size);
  if (!*out) {
    rc = -ENOMEM;
    goto done;
  }
  for (int i = 0; i < 8; i++)
    (*out)[i] = (uint8_t)(lo >> (8 * i)), (*out)[8 + i] = (uint8_t)(hi >> (8 * i));
  for (size_t i = 0; i < nph; i++) {
    GElf_Phdr ph;
    if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD && ph.p_memsz)
      memcpy(*out + 16 + (ph.p_vaddr - lo), elf + ph.p_offset, ph.p_filesz);
  }
  rc = 0;
done:
  if (e) elf_end(e);
  return rc;
}

int vxr_link_elf(const char *lld, const char *script, char *const *inputs, int ninputs, const char *libc,
                 const char *libgcc, const uint8_t *obj, size_t obj_size, const char *entry, uint8_t **elf,
                 size_t *elf_size, char *err, size_t errcap) {
  *elf = NULL;
  *elf_size = 0;
  char dir[] = "/tmp/vortexd-link-XXXXXX";
  if (!mkdtemp(dir)) {
    int e = errno;
    snprintf(err, errcap, "cannot create a temporary directory: %s", strerror(e));
    return -e;
  }
  char objp[64], exe[64], defsym[256];
  snprintf(objp, sizeof objp, "%s/kernel.o", dir);
  snprintf(exe, sizeof exe, "%s/kernel.elf", dir);
  snprintf(defsym, sizeof defsym, "--defsym=main=%s", entry);
  int rc = -EIO;
  FILE *f = fopen(objp, "wb");
  int wrote = f && fwrite(obj, 1, obj_size, f) == obj_size;
  if (f && fclose(f) != 0) wrote = 0;
  if (!wrote || ninputs > 64) {
    snprintf(err, errcap, "cannot write %s", objp);
  } else {
    char *argv[80];
    int a = 0;
    argv[a++] = (char *)lld, argv[a++] = (char *)"-T", argv[a++] = (char *)script, argv[a++] = defsym;
    argv[a++] = objp;
    for (int i = 0; i < ninputs; i++)
      argv[a++] = inputs[i];
    argv[a++] = (char *)libc, argv[a++] = (char *)libgcc;
    argv[a++] = (char *)"-o", argv[a++] = exe, argv[a] = NULL;
    pid_t pid = fork();
    if (pid == 0) {
      execv(lld, argv);
      _exit(127);
    }
    int st = 0;
    if (pid > 0) waitpid(pid, &st, 0);
    FILE *in = NULL;
    if (pid < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
      snprintf(err, errcap, "linking kernel %s with %s (%s) failed", entry, script, lld);
    else if ((in = fopen(exe, "rb"))) {
      fseek(in, 0, SEEK_END);
      long n = ftell(in);
      fseek(in, 0, SEEK_SET);
      *elf = n > 0 ? malloc((size_t)n) : NULL;
      if (*elf && fread(*elf, 1, (size_t)n, in) == (size_t)n) *elf_size = (size_t)n, rc = 0;
      fclose(in);
    }
    if (rc != 0 && !err[0]) snprintf(err, errcap, "cannot read the linked image of kernel %s", entry);
    if (rc != 0) free(*elf), *elf = NULL;
  }
  unlink(objp);
  unlink(exe);
  rmdir(dir);
  return rc;
}

int vxr_link_vxbin(const char *sdk, const char *lld, const char *libc, const char *libgcc, const uint8_t *obj,
                   size_t obj_size, const char *entry, uint8_t **image, size_t *image_size, char *err,
                   size_t errcap) {
  err[0] = '\0';
  char script[4200], *inputs[64];
  snprintf(script, sizeof script, "%s/link.ld", sdk);
  int ninputs = vxr__sdk_inputs(sdk, inputs, 64);
  uint8_t *elf = NULL;
  size_t elf_size = 0;
  int rc = vxr_link_elf(lld, script, inputs, ninputs, libc, libgcc, obj, obj_size, entry, &elf, &elf_size,
                        err, errcap);
  if (rc == 0 && (rc = vxr__to_vxbin(elf, elf_size, image, image_size)) != 0)
    snprintf(err, errcap, "cannot make a .vxbin of kernel %s", entry);
  free(elf);
  for (int i = 0; i < ninputs; i++)
    free(inputs[i]);
  return rc;
}
