/*
 * vxr_vxbin.c - linking: a module's pieces into one relocatable object
 * (vortexd; ld.lld -r), a module object into an executable (GNU ld, the
 * linker of upstream Vortex's toolchain) and a loadable Vortex image
 * (.vxbin), shared by libvortexd_runtime's backends and vortexd (which
 * links and caches images when a Vortex kernel SDK is configured).  Every
 * link runs its linker by posix_spawn, the objects and the output on
 * pipes or memory files: no fork of a large process, no temporary file.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "vxr_vxbin.h"

static int vxr__name_cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Whether dir/name is a readable file. */
static int vxr__has(const char *dir, const char *name) {
  char path[4200];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  return access(path, R_OK) == 0;
}

/* Whether an SDK link for kernel ABI vortex_abi (0: any, for listing)
 * leaves out file name of directory dir, which holds the start code of
 * both kernel ABIs side by side:
 *  - upstream's sw/kernel/Makefile builds its start code and runtime
 *    twice, libvortex.a for Vortex 2.x and libvortex2.a (-DKMU_ENABLE) for
 *    3.0; a directory holding both links the one of the kernel's ABI;
 *  - vortexd's own device runtime (installed as lib/vortexd/device) has
 *    vx_start.o and vx_spawn.o for 2.x and vx_kmu.o for 3.0, each defining
 *    _start; a directory holding both links the objects of the kernel's
 *    ABI. */
static int vxr__sdk_skips(const char *dir, const char *name, uint32_t vortex_abi) {
  if (vortex_abi == 0) return 0;
  const int v3 = vortex_abi == 3;
  if (strcmp(name, v3 ? "libvortex.a" : "libvortex2.a") == 0)
    return vxr__has(dir, v3 ? "libvortex2.a" : "libvortex.a");
  if (v3 && (strcmp(name, "vx_start.o") == 0 || strcmp(name, "vx_spawn.o") == 0))
    return vxr__has(dir, "vx_kmu.o");
  if (!v3 && strcmp(name, "vx_kmu.o") == 0) return vxr__has(dir, "vx_start.o");
  return 0;
}

/* The .o files, then the .a files, of dir, in name order, into argv (at
 * most cap entries, strdup()ed), but for the library of the other kernel
 * ABI (vxr__sdk_skips).  Returns the count. */
static int vxr__sdk_objects(const char *dir, uint32_t vortex_abi, char **argv, int cap) {
  int n = 0;
  for (int pass = 0; pass < 2; pass++) {
    DIR *d = opendir(dir);
    if (!d) return n;
    int first = n;
    struct dirent *e;
    while ((e = readdir(d)) && n < cap) {
      size_t l = strlen(e->d_name);
      if (l > 2 && strcmp(e->d_name + l - 2, pass ? ".a" : ".o") == 0 &&
          !vxr__sdk_skips(dir, e->d_name, vortex_abi) && asprintf(&argv[n], "%s/%s", dir, e->d_name) > 0)
        n++;
    }
    closedir(d);
    qsort(argv + first, (size_t)(n - first), sizeof *argv, vxr__name_cmp);
  }
  return n;
}

/* Calls fn(name, value, ud) for each named symbol of ELF e's symbol
 * tables, in table order, until fn returns nonzero; returns that, or 0. */
static int vxr__each_symbol(Elf *e, int (*fn)(const char *name, uint64_t value, void *ud), void *ud) {
  Elf_Scn *scn = NULL;
  while ((scn = elf_nextscn(e, scn))) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB || !sh.sh_entsize) continue;
    Elf_Data *data = elf_getdata(scn, NULL);
    for (size_t i = 0; data && i < sh.sh_size / sh.sh_entsize; i++) {
      GElf_Sym sym;
      const char *n = gelf_getsym(data, (int)i, &sym) ? elf_strptr(e, sh.sh_link, sym.st_name) : NULL;
      int rc = n ? fn(n, sym.st_value, ud) : 0;
      if (rc) return rc;
    }
  }
  return 0;
}

typedef struct {
  const char *name;
  int64_t value;
} vxr__lookup;

static int vxr__lookup_one(const char *name, uint64_t value, void *ud) {
  vxr__lookup *l = ud;
  if (strcmp(name, l->name) != 0) return 0;
  l->value = (int64_t)value;
  return 1;
}

/* The value of symbol name in ELF e, or -1 when it has none. */
static int64_t vxr__elf_symbol(Elf *e, const char *name) {
  vxr__lookup l = {name, -1};
  vxr__each_symbol(e, vxr__lookup_one, &l);
  return l.value;
}

/* A kernel entry of a VXSYMTAB footer, and where its symbol came in the
 * symbol table. */
typedef struct {
  const char *name;
  size_t len, order;
  uint64_t pc;
} vxr__kentry;

typedef struct {
  vxr__kentry *v;
  size_t n, cap;
} vxr__kentries;

static int vxr__collect_kentry(const char *s, uint64_t value, void *ud) {
  static const char prefix[] = VXR_KENTRY_PREFIX;
  const size_t plen = sizeof prefix - 1;
  vxr__kentries *k = ud;
  if (strncmp(s, prefix, plen) != 0 || !s[plen]) return 0;
  if (k->n == k->cap) {
    vxr__kentry *g = realloc(k->v, (k->cap = k->cap ? 2 * k->cap : 16) * sizeof *g);
    if (!g) return -ENOMEM;
    k->v = g;
  }
  const char *name = strcmp(s + plen, "kernel_main") == 0 ? "main" : s + plen;
  k->v[k->n] = (vxr__kentry){name, strlen(name), k->n, value};
  k->n++;
  return 0;
}

static int vxr__by_name(const void *a, const void *b) {
  const vxr__kentry *x = a, *y = b;
  int c = strcmp(x->name, y->name);
  return c ? c : (x->order > y->order) - (x->order < y->order);
}

static int vxr__by_order(const void *a, const void *b) {
  const vxr__kentry *x = a, *y = b;
  return (x->order > y->order) - (x->order < y->order);
}

/* The VXSYMTAB footer of ELF e (malloc(), *size bytes; NULL and 0 when
 * it names no kernel): for each symbol VXR_KENTRY_PREFIX "<name>" in
 * symbol-table order, the first of each name, <name> -> its value
 * (kernel_main listed as "main"); with none, kernel_main as "main" when
 * e has it.  The layout upstream's vxbin.py writes and its runtime's
 * module.cpp reads: the names back to back, then per kernel { u32 offset
 * of its name, u16 its length, u16 0, u64 pc }, then u32 the count, then
 * "VXSYMTAB".  -ENOMEM, or 0. */
static int vxr__vxsymtab(Elf *e, uint8_t **out, size_t *size) {
  *out = NULL, *size = 0;
  vxr__kentries k = {0};
  if (vxr__each_symbol(e, vxr__collect_kentry, &k) != 0) return free(k.v), -ENOMEM;
  /* the first symbol of each name, in table order (n log n: modules of
   * thousands of kernels) */
  size_t n = 0;
  if (k.n) {
    qsort(k.v, k.n, sizeof *k.v, vxr__by_name);
    for (size_t i = 0; i < k.n; i++)
      if (!n || strcmp(k.v[n - 1].name, k.v[i].name) != 0) k.v[n++] = k.v[i];
    qsort(k.v, n, sizeof *k.v, vxr__by_order);
  }
  int64_t km = n ? -1 : vxr__elf_symbol(e, "kernel_main");
  if (km > 0) { /* vxbin.py's `if kernel_main:` leaves out address 0 */
    vxr__kentry *g = realloc(k.v, sizeof *g);
    if (!g) return free(k.v), -ENOMEM;
    k.v = g, k.v[n++] = (vxr__kentry){"main", 4, 0, (uint64_t)km};
  }
  size_t names = 0;
  for (size_t i = 0; i < n; i++)
    names += k.v[i].len;
  if (!n) return free(k.v), 0;
  *size = names + 16 * n + 12;
  uint8_t *f = *out = calloc(1, *size), *p = f + names;
  if (!f) return free(k.v), -ENOMEM;
  for (size_t i = 0, off = 0; i < n; off += k.v[i++].len) {
    memcpy(f + off, k.v[i].name, k.v[i].len);
    for (int b = 0; b < 4; b++)
      p[b] = (uint8_t)(off >> (8 * b));
    p[4] = (uint8_t)k.v[i].len, p[5] = (uint8_t)(k.v[i].len >> 8);
    for (int b = 0; b < 8; b++)
      p[8 + b] = (uint8_t)(k.v[i].pc >> (8 * b));
    p += 16;
  }
  for (int b = 0; b < 4; b++)
    p[b] = (uint8_t)(n >> (8 * b));
  memcpy(p + 4, "VXSYMTAB", 8);
  free(k.v);
  return 0;
}

/* An ELF executable as a .vxbin, byte for byte as upstream's vxbin.py
 * writes it: u64 min_vma and u64 max(max_vma, _end) over its PT_LOAD
 * segments, then the bytes `objcopy -O binary` gives (every allocated
 * section with contents, from min_vma to the last one's end, gaps zero)
 * padded with zeros up to _edata, then the VXSYMTAB footer when the image
 * names kernels (vxr__vxsymtab).  _edata and _end are optional here (the
 * emulator's link script has neither).  0, -EINVAL (not such an
 * executable) or -ENOMEM. */
static int vxr__to_vxbin(const uint8_t *elf, size_t size, uint8_t **out, size_t *out_size) {
  elf_version(EV_CURRENT);
  Elf *e = elf_memory((char *)elf, size);
  size_t nph = 0;
  uint8_t *footer = NULL;
  size_t flen = 0;
  int rc = -EINVAL;
  if (!e || elf_getphdrnum(e, &nph) != 0) goto done;
  uint64_t lo = UINT64_MAX, hi = 0, fill = 0;
  for (size_t i = 0; i < nph; i++) {
    GElf_Phdr ph;
    if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD || !ph.p_memsz) continue;
    if (ph.p_offset > size || ph.p_filesz > size - ph.p_offset || ph.p_filesz > ph.p_memsz) goto done;
    if (ph.p_vaddr < lo) lo = ph.p_vaddr;
    if (ph.p_vaddr + ph.p_memsz > hi) hi = ph.p_vaddr + ph.p_memsz;
  }
  if (lo >= hi || hi - lo > (256u << 20)) goto done;
  /* what objcopy -O binary writes: up to the end of the last section with contents */
  Elf_Scn *scn = NULL;
  while ((scn = elf_nextscn(e, scn))) {
    GElf_Shdr sh;
    if (gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_ALLOC) && sh.sh_type != SHT_NOBITS && sh.sh_size &&
        sh.sh_addr >= lo && sh.sh_addr + sh.sh_size > lo + fill)
      fill = sh.sh_addr + sh.sh_size - lo;
  }
  int64_t edata = vxr__elf_symbol(e, "_edata"), end = vxr__elf_symbol(e, "_end");
  if (edata > 0 && (uint64_t)edata > lo && (uint64_t)edata - lo > fill) fill = (uint64_t)edata - lo;
  if (end > 0 && (uint64_t)end > hi) hi = (uint64_t)end;
  if (fill > hi - lo || hi - lo > (256u << 20)) goto done;
  if ((rc = vxr__vxsymtab(e, &footer, &flen)) != 0) goto done;
  *out_size = 16 + (size_t)fill + flen;
  *out = calloc(1, *out_size);
  if (!*out) {
    rc = -ENOMEM;
    goto done;
  }
  for (int i = 0; i < 8; i++)
    (*out)[i] = (uint8_t)(lo >> (8 * i)), (*out)[8 + i] = (uint8_t)(hi >> (8 * i));
  for (size_t i = 0; i < nph; i++) {
    GElf_Phdr ph;
    if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD || !ph.p_memsz || ph.p_vaddr - lo >= fill)
      continue;
    size_t n = ph.p_filesz < fill - (ph.p_vaddr - lo) ? ph.p_filesz : fill - (ph.p_vaddr - lo);
    memcpy(*out + 16 + (ph.p_vaddr - lo), elf + ph.p_offset, n);
  }
  if (flen) memcpy(*out + 16 + fill, footer, flen);
  rc = 0;
done:
  free(footer);
  if (e) elf_end(e);
  return rc;
}

/* An ld.lld -r started before its inputs exist: input i is the read end
 * of a pipe at the child's descriptor 3 + i (/dev/fd/3+i; LLVM reads a
 * pipe as a stream), the output comes back on its stdout (-o -). */
struct vxr_rlink {
  pid_t pid;
  uint32_t n;
  char tool[32];                    /* the program's name, as messages give it */
  int out;                          /* read end of the child's stdout */
  int diag;                         /* read end of its stderr */
  char text[VXR_LINK_DIAG_MAX + 1]; /* the first bytes it wrote there */
  size_t text_len;
  int in[]; /* write ends, one per input */
};

/* Moves fd to a close-on-exec descriptor at least min (so the child's
 * dup2s into 3 .. 3 + n - 1 cannot overwrite a source).  -1 on failure
 * (fd closed either way). */
static int vxr__fd_above(int fd, int min) {
  int moved = fcntl(fd, F_DUPFD_CLOEXEC, min);
  close(fd);
  return moved;
}

/* A pipe whose two ends are close-on-exec descriptors at least min (see
 * vxr__fd_above): *rd and *wr, or both -1 and a negative errno, no
 * descriptor left open. */
static int vxr__pipe_above(int min, int *rd, int *wr) {
  int p[2];
  *rd = *wr = -1;
  if (pipe(p) != 0) return -errno;
  *rd = vxr__fd_above(p[0], min);
  int e = errno;
  *wr = vxr__fd_above(p[1], min); /* closes p[1] whatever became of p[0] */
  if (*rd >= 0 && *wr >= 0) return 0;
  if (*wr < 0) e = errno;
  if (*rd >= 0) close(*rd);
  if (*wr >= 0) close(*wr);
  *rd = *wr = -1;
  return -e;
}

/* Starts `lld pre... /dev/fd/3 .. /dev/fd/(3+n-1) post... -o -`: n inputs
 * from pipes (given by vxr_rlink_finish), the output and the diagnostics
 * (stderr) on pipes, stdin /dev/null.  0 and *out, or a negative errno
 * with a message in err. */
static int vxr__lld_start(const char *lld, const char *const *pre, int npre, uint32_t n, char *const *post,
                          int npost, vxr_rlink **out, char *err, size_t errcap) {
  *out = NULL;
  if (n == 0 || n > VXR_LINK_MAX_INPUTS) {
    snprintf(err, errcap, "%u objects to link (1 to %u)", n, VXR_LINK_MAX_INPUTS);
    return -EINVAL;
  }
  vxr_rlink *l = calloc(1, sizeof *l + n * sizeof(int));
  int *child_in = calloc(n, sizeof *child_in);
  char **argv = calloc(n + (size_t)npre + (size_t)npost + 4, sizeof *argv);
  char(*names)[16] = calloc(n, sizeof *names);
  if (!l || !child_in || !argv || !names) {
    free(l), free(child_in), free(argv), free(names);
    return -ENOMEM;
  }
  int high = 3 + (int)n + 8, child_out = -1, child_diag = -1, rc = 0;
  l->n = n;
  l->out = l->diag = -1;
  const char *base = strrchr(lld, '/');
  snprintf(l->tool, sizeof l->tool, "%s", base ? base + 1 : lld);
  for (uint32_t i = 0; i < n; i++)
    l->in[i] = child_in[i] = -1;
  for (uint32_t i = 0; i < n && rc == 0; i++)
    rc = vxr__pipe_above(high, &child_in[i], &l->in[i]);
  if (rc == 0) rc = vxr__pipe_above(high, &l->out, &child_out);
  if (rc == 0) rc = vxr__pipe_above(high, &l->diag, &child_diag);
  posix_spawn_file_actions_t fa;
  if (rc == 0 && posix_spawn_file_actions_init(&fa) == 0) {
    int a = 0;
    argv[a++] = (char *)lld;
    for (int i = 0; i < npre; i++)
      argv[a++] = (char *)pre[i];
    for (uint32_t i = 0; i < n; i++) {
      snprintf(names[i], sizeof names[i], "/dev/fd/%u", 3 + i);
      argv[a++] = names[i];
      posix_spawn_file_actions_adddup2(&fa, child_in[i], 3 + (int)i);
    }
    for (int i = 0; i < npost; i++)
      argv[a++] = post[i];
    argv[a++] = (char *)"-o", argv[a++] = (char *)"-", argv[a] = NULL;
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, child_out, 1);
    posix_spawn_file_actions_adddup2(&fa, child_diag, 2);
    int e = posix_spawn(&l->pid, lld, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (e != 0) rc = -e;
  } else if (rc == 0) {
    rc = -ENOMEM;
  }
  for (uint32_t i = 0; i < n; i++)
    if (child_in[i] >= 0) close(child_in[i]);
  if (child_out >= 0) close(child_out);
  if (child_diag >= 0) close(child_diag);
  free(child_in), free(argv), free(names);
  if (rc != 0) {
    snprintf(err, errcap, "cannot start %s: %s", lld, strerror(-rc));
    l->pid = 0;
    vxr_rlink_cancel(l);
    return rc;
  }
  *out = l;
  return 0;
}

int vxr_rlink_start(const char *lld, uint32_t n, vxr_rlink **out, char *err, size_t errcap) {
  static const char *const relocatable[] = {"-r", "--no-warnings"};
  return vxr__lld_start(lld, relocatable, 2, n, NULL, 0, out, err, errcap);
}

void vxr_rlink_cancel(vxr_rlink *l) {
  if (!l) return;
  for (uint32_t i = 0; i < l->n; i++)
    if (l->in[i] >= 0) close(l->in[i]);
  if (l->out >= 0) close(l->out);
  if (l->diag >= 0) close(l->diag);
  if (l->pid > 0) {
    kill(l->pid, SIGKILL);
    while (waitpid(l->pid, NULL, 0) < 0 && errno == EINTR) {
    }
  }
  free(l);
}

/* Reads what l's ld.lld wrote to its stderr: the first VXR_LINK_DIAG_MAX
 * bytes are kept in l->text, the rest read and dropped (so it never
 * blocks on a full pipe); at its end, or on an error, the pipe is
 * closed. */
static void vxr__read_diag(vxr_rlink *l) {
  char buf[4096];
  ssize_t r = read(l->diag, buf, sizeof buf);
  if (r < 0 && (errno == EINTR || errno == EAGAIN)) return;
  if (r <= 0) {
    close(l->diag);
    l->diag = -1;
    return;
  }
  size_t keep = VXR_LINK_DIAG_MAX - l->text_len < (size_t)r ? VXR_LINK_DIAG_MAX - l->text_len : (size_t)r;
  memcpy(l->text + l->text_len, buf, keep);
  l->text_len += keep;
  l->text[l->text_len] = '\0';
}

/* l's diagnostics as a message quotes them: without a closing newline. */
static const char *vxr__diag_text(vxr_rlink *l) {
  while (l->text_len && l->text[l->text_len - 1] == '\n')
    l->text[--l->text_len] = '\0';
  return l->text;
}

int vxr_rlink_finish(vxr_rlink *l, const uint8_t *const *objects, const size_t *sizes, uint8_t **out,
                     size_t *out_size, char *err, size_t errcap) {
  *out = NULL;
  *out_size = 0;
  uint32_t n = l->n;
  size_t *sent = calloc(n, sizeof *sent), cap = 0, len = 0;
  struct pollfd *fds = calloc(n + 2, sizeof *fds);
  uint8_t *buf = NULL;
  int rc = sent && fds ? 0 : -ENOMEM;
  /* a child that stops reading makes a write fail with EPIPE, not kill
   * this process: SIGPIPE blocked on this thread, and one it raised
   * consumed before the mask is restored */
  sigset_t pipe_only, old_mask;
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_only, &old_mask);
  for (uint32_t i = 0; i < n && rc == 0; i++)
    if (fcntl(l->in[i], F_SETFL, O_NONBLOCK) != 0) rc = -errno;
  /* every input written as the child reads it, in whatever order, while
   * its output is read: no pipe can fill up with both sides waiting */
  while (rc == 0) {
    nfds_t k = 0;
    for (uint32_t i = 0; i < n; i++)
      if (l->in[i] >= 0) fds[k++] = (struct pollfd){.fd = l->in[i], .events = POLLOUT};
    const nfds_t at_out = k, at_diag = k + 1;
    fds[k++] = (struct pollfd){.fd = l->out, .events = POLLIN};
    if (l->diag >= 0) fds[k++] = (struct pollfd){.fd = l->diag, .events = POLLIN};
    if (poll(fds, k, -1) < 0) {
      if (errno != EINTR) rc = -errno;
      continue;
    }
    if (l->diag >= 0 && fds[at_diag].revents) vxr__read_diag(l);
    /* fds[] holds the open inputs in input order, then the output */
    for (uint32_t i = 0, j = 0; i < n; i++) {
      if (l->in[i] < 0 || !fds[j++].revents) continue;
      ssize_t w = sizes[i] > sent[i] ? write(l->in[i], objects[i] + sent[i], sizes[i] - sent[i]) : 0;
      if (w < 0 && errno != EAGAIN && errno != EINTR) { /* the child stopped reading: its status says why */
        close(l->in[i]);
        l->in[i] = -1;
        continue;
      }
      if (w > 0) sent[i] += (size_t)w;
      if (sent[i] == sizes[i]) {
        close(l->in[i]);
        l->in[i] = -1;
      }
    }
    if (rc || !fds[at_out].revents) continue;
    if (len == cap) {
      size_t ncap = cap ? cap * 2 : 1u << 16;
      uint8_t *nb = ncap <= (1u << 30) ? realloc(buf, ncap) : NULL;
      if (!nb) {
        rc = -ENOMEM;
        break;
      }
      buf = nb, cap = ncap;
    }
    ssize_t r = read(l->out, buf + len, cap - len);
    if (r == 0) break; /* the child is done */
    if (r > 0)
      len += (size_t)r;
    else if (errno != EINTR && errno != EAGAIN)
      rc = -errno;
  }
  for (uint32_t i = 0; i < n; i++)
    if (l->in[i] >= 0) close(l->in[i]), l->in[i] = -1;
  close(l->out);
  l->out = -1;
  if (rc != 0) kill(l->pid, SIGKILL);
  while (l->diag >= 0) /* the rest of what it says, up to its exit */
    vxr__read_diag(l);
  sigset_t pending;
  if (sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) && !sigismember(&old_mask, SIGPIPE))
    sigtimedwait(&pipe_only, NULL, &(struct timespec){0, 0});
  pthread_sigmask(SIG_SETMASK, &old_mask, NULL);
  int st = 0;
  while (waitpid(l->pid, &st, 0) < 0 && errno == EINTR) {
  }
  l->pid = 0;
  if (rc == 0 && !(WIFEXITED(st) && WEXITSTATUS(st) == 0 && len > 0)) {
    snprintf(err, errcap, "%s failed (%s %d)%s%s", l->tool, WIFSIGNALED(st) ? "signal" : "exit status",
             WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st), l->text_len ? ":\n" : "", vxr__diag_text(l));
    rc = -EIO;
  } else if (rc != 0) {
    snprintf(err, errcap, "feeding %s: %s", l->tool, strerror(-rc));
  }
  if (rc == 0)
    *out = buf, *out_size = len;
  else
    free(buf);
  free(sent);
  free(fds);
  vxr_rlink_cancel(l);
  return rc;
}

int vxr_link_relocatable(const char *lld, uint32_t n, const uint8_t *const *objects, const size_t *sizes,
                         uint8_t **out, size_t *out_size, char *err, size_t errcap) {
  vxr_rlink *l;
  int rc = vxr_rlink_start(lld, n, &l, err, errcap);
  return rc ? rc : vxr_rlink_finish(l, objects, sizes, out, out_size, err, errcap);
}

int vxr_run_filter(const char *prog, const char *const *args, int nargs, const uint8_t *in, size_t size,
                   uint8_t **out, size_t *out_size, char *err, size_t errcap) {
  vxr_rlink *l;
  *out = NULL, *out_size = 0;
  int rc = vxr__lld_start(prog, args, nargs, 1, NULL, 0, &l, err, errcap);
  return rc ? rc : vxr_rlink_finish(l, &in, &size, out, out_size, err, errcap);
}

/* Runs `ld args...` with obj at /dev/fd/3 and the executable written to
 * /dev/fd/4, both memory files (memfd: GNU ld seeks in its input and its
 * output, which a pipe cannot do; nothing goes through the file system);
 * its stderr, bounded to VXR_LINK_DIAG_MAX bytes, on a pipe.  0 and
 * *out (malloc(), at most 1 GiB) / *out_size, or a negative errno with a
 * message in why. */
static int vxr__ld_run(const char *ld, const char *const *args, int nargs, const uint8_t *obj,
                       size_t obj_size, uint8_t **out, size_t *out_size, char *why, size_t whycap) {
  *out = NULL;
  *out_size = 0;
  const char *name = strrchr(ld, '/') ? strrchr(ld, '/') + 1 : ld;
  /* every descriptor the child is given above 4, where it is given them:
   * an image memory file at 3 would be overwritten by the object's dup2
   * into 3, and its own dup2 into 4 would then make the output the input
   * (ld truncates it, reads nothing, and says the entry is undefined) */
  int in = vxr__fd_above(memfd_create("vortexd-link-object", MFD_CLOEXEC), 5),
      res = vxr__fd_above(memfd_create("vortexd-link-image", MFD_CLOEXEC), 5);
  int p[2] = {-1, -1}, rc = 0;
  if (in < 0 || res < 0 || vxr__pipe_above(5, &p[0], &p[1]) != 0) rc = -errno;
  for (size_t done = 0; rc == 0 && done < obj_size;) {
    ssize_t w = write(in, obj + done, obj_size - done);
    if (w < 0 && errno != EINTR) rc = -errno;
    if (w > 0) done += (size_t)w;
  }
  const char **argv = calloc((size_t)nargs + 5, sizeof *argv);
  if (rc == 0 && !argv) rc = -ENOMEM;
  vxr_rlink diag = {.pid = 0, .n = 0, .out = -1, .diag = -1};
  if (rc == 0) {
    int a = 0;
    argv[a++] = name; /* what it calls itself in its messages */
    for (int i = 0; i < nargs; i++)
      argv[a++] = args[i];
    argv[a++] = "-o", argv[a++] = "/dev/fd/4", argv[a] = NULL;
    posix_spawn_file_actions_t fa;
    if (posix_spawn_file_actions_init(&fa) != 0) {
      rc = -ENOMEM;
    } else {
      posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
      posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
      posix_spawn_file_actions_adddup2(&fa, p[1], 2);
      posix_spawn_file_actions_adddup2(&fa, in, 3);
      posix_spawn_file_actions_adddup2(&fa, res, 4);
      int e = posix_spawn(&diag.pid, ld, &fa, NULL, (char *const *)argv, environ);
      posix_spawn_file_actions_destroy(&fa);
      if (e != 0) {
        rc = -e;
        snprintf(why, whycap, "cannot start %s: %s", ld, strerror(e));
      }
    }
  } else {
    snprintf(why, whycap, "cannot hand the object to %s: %s", ld, strerror(-rc));
  }
  if (p[1] >= 0) close(p[1]);
  diag.diag = p[0];
  while (rc == 0 && diag.diag >= 0) /* up to its exit: whatever it says */
    vxr__read_diag(&diag);
  if (diag.diag >= 0) close(diag.diag);
  int st = 0;
  if (diag.pid > 0)
    while (waitpid(diag.pid, &st, 0) < 0 && errno == EINTR) {
    }
  struct stat sb;
  if (rc == 0 && !(WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
    snprintf(why, whycap, "%s failed (%s %d)%s%s", name, WIFSIGNALED(st) ? "signal" : "exit status",
             WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st), diag.text_len ? ":\n" : "",
             vxr__diag_text(&diag));
    rc = -EIO;
  } else if (rc == 0 && (fstat(res, &sb) != 0 || sb.st_size <= 0 || sb.st_size > (1 << 30))) {
    snprintf(why, whycap, "%s wrote no executable of at most 1 GiB", name);
    rc = -EIO;
  }
  if (rc == 0) {
    uint8_t *buf = malloc((size_t)sb.st_size);
    size_t got = 0;
    while (buf && got < (size_t)sb.st_size) {
      ssize_t r = pread(res, buf + got, (size_t)sb.st_size - got, (off_t)got);
      if (r <= 0 && !(r < 0 && errno == EINTR)) break;
      if (r > 0) got += (size_t)r;
    }
    if (buf && got == (size_t)sb.st_size) {
      *out = buf, *out_size = got;
    } else {
      free(buf);
      rc = buf ? -EIO : -ENOMEM;
      snprintf(why, whycap, "cannot read what %s wrote", name);
    }
  }
  free(argv);
  if (in >= 0) close(in);
  if (res >= 0) close(res);
  return rc;
}

int vxr_link_elf(const char *ld, const char *script, char *const *inputs, int ninputs, const char *libc,
                 const char *libgcc, const uint8_t *obj, size_t obj_size, const char *entry,
                 uint32_t vortex_abi, uint8_t **elf, size_t *elf_size, char *err, size_t errcap) {
  *elf = NULL;
  *elf_size = 0;
  if (ninputs > 64) {
    snprintf(err, errcap, "%d inputs to link kernel %s with (at most 64)", ninputs, entry);
    return -EINVAL;
  }
  char defsym[256];
  snprintf(defsym, sizeof defsym, "--defsym=%s=%s", vortex_abi == 3 ? "kernel_main" : "main", entry);
  /* the SDK's archives and libc call each other (picolibc's exit calls the
   * SDK's _exit): one group, searched until nothing new resolves */
  const char *args[72];
  int a = 0;
  /* GNU ld links for one emulation, by default its own (RV64): the
   * object's ELF class chooses (EI_CLASS 1: ELF32, RV32) */
  args[a++] = "-m", args[a++] = obj_size > 4 && obj[4] == 1 ? "elf32lriscv" : "elf64lriscv";
  args[a++] = "-T", args[a++] = script, args[a++] = defsym, args[a++] = "/dev/fd/3";
  args[a++] = "--start-group";
  for (int i = 0; i < ninputs; i++)
    args[a++] = inputs[i];
  args[a++] = libc, args[a++] = libgcc, args[a++] = "--end-group";
  char why[VXR_LINK_DIAG_MAX + 256];
  int rc = vxr__ld_run(ld, args, a, obj, obj_size, elf, elf_size, why, sizeof why);
  if (rc != 0) snprintf(err, errcap, "linking kernel %s with %s: %s", entry, script, why);
  return rc;
}

/* Where an SDK link of an xlen-bit kernel takes its objects (objdir) and
 * link script (script) from: an SDK directory with a subdirectory rv64
 * (vortexd's own device runtime's layout) links RV64 kernels with the
 * objects there, and with rv64/link.ld when there is one, else sdk's. */
static void vxr__sdk_dirs(const char *sdk, uint32_t xlen, char *objdir, size_t dcap, char *script,
                          size_t scap) {
  snprintf(objdir, dcap, "%s", sdk);
  struct stat st;
  char sub[4200];
  snprintf(sub, sizeof sub, "%s/rv64", sdk);
  if (xlen == 64 && stat(sub, &st) == 0 && S_ISDIR(st.st_mode)) snprintf(objdir, dcap, "%s", sub);
  snprintf(script, scap, "%s/link.ld", objdir);
  if (access(script, R_OK) != 0) snprintf(script, scap, "%s/link.ld", sdk);
}

int vxr_sdk_inputs(const char *sdk, char **paths, int cap) {
  if (cap < 1 || asprintf(&paths[0], "%s/link.ld", sdk) < 0) return 0;
  int n = 1 + vxr__sdk_objects(sdk, 0, paths + 1, cap - 1);
  char objdir[4200], script[4300];
  vxr__sdk_dirs(sdk, 64, objdir, sizeof objdir, script, sizeof script);
  if (strcmp(objdir, sdk) == 0) return n;
  if (n < cap && strcmp(script, paths[0]) != 0 && (paths[n] = strdup(script))) n++;
  return n + vxr__sdk_objects(objdir, 0, paths + n, cap - n);
}

int vxr_link_sdk_elf(const char *sdk, const char *ld, const char *libc, const char *libgcc,
                     const uint8_t *obj, size_t obj_size, const char *entry, uint32_t vortex_abi,
                     uint8_t **elf, size_t *elf_size, char *err, size_t errcap) {
  err[0] = '\0';
  char objdir[4200], script[4300], *inputs[64];
  vxr__sdk_dirs(sdk, obj_size > 4 && obj[4] == 2 ? 64 : 32, objdir, sizeof objdir, script, sizeof script);
  int ninputs = vxr__sdk_objects(objdir, vortex_abi, inputs, 64);
  int rc = vxr_link_elf(ld, script, inputs, ninputs, libc, libgcc, obj, obj_size, entry, vortex_abi, elf,
                        elf_size, err, errcap);
  for (int i = 0; i < ninputs; i++)
    free(inputs[i]);
  return rc;
}

int vxr_link_vxbin(const char *sdk, const char *ld, const char *libc, const char *libgcc, const uint8_t *obj,
                   size_t obj_size, const char *entry, uint32_t vortex_abi, uint8_t **image,
                   size_t *image_size, char *err, size_t errcap) {
  uint8_t *elf = NULL;
  size_t elf_size = 0;
  int rc =
      vxr_link_sdk_elf(sdk, ld, libc, libgcc, obj, obj_size, entry, vortex_abi, &elf, &elf_size, err, errcap);
  if (rc == 0 && (rc = vxr__to_vxbin(elf, elf_size, image, image_size)) != 0)
    snprintf(err, errcap, "cannot make a .vxbin of kernel %s", entry);
  free(elf);
  return rc;
}

static uint64_t vxr__le(const uint8_t *p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; i--)
    v = v << 8 | p[i];
  return v;
}

/* The footer is found as upstream's module.cpp finds it: "VXSYMTAB" at the
 * end, the count before it, the entries before that, the names before
 * them, as long as the names the entries point to end there. */
int vxr_vxbin_parse(const uint8_t *bytes, size_t size, vxr_vxbin *out) {
  memset(out, 0, sizeof *out);
  if (size < 16) return -EINVAL;
  out->min_vma = vxr__le(bytes, 8), out->max_vma = vxr__le(bytes + 8, 8);
  if (out->max_vma <= out->min_vma) return -EINVAL;
  size_t footer = 0;
  if (size >= 16 + 12 && memcmp(bytes + size - 8, "VXSYMTAB", 8) == 0) {
    uint64_t n = vxr__le(bytes + size - 12, 4);
    if (n <= (size - 16 - 12) / 16) {
      const uint8_t *table = bytes + size - 12 - n * 16;
      size_t names = 0;
      for (uint64_t i = 0; i < n; i++) {
        size_t end = (size_t)vxr__le(table + 16 * i, 4) + (size_t)vxr__le(table + 16 * i + 4, 2);
        if (end > names) names = end;
      }
      if (12 + n * 16 + names <= size - 16) {
        footer = 12 + n * 16 + names;
        out->nkernels = (uint32_t)n, out->table = table;
        out->names = table - names, out->names_size = names;
      }
    }
  }
  out->payload = bytes + 16, out->payload_size = size - 16 - footer;
  return out->payload_size <= out->max_vma - out->min_vma ? 0 : -EINVAL;
}

uint64_t vxr_vxbin_kernel(const vxr_vxbin *v, const char *name) {
  size_t len = strlen(name);
  for (uint32_t i = 0; i < v->nkernels; i++) {
    const uint8_t *e = v->table + 16 * (size_t)i;
    size_t off = (size_t)vxr__le(e, 4), n = (size_t)vxr__le(e + 4, 2);
    if (n == len && memcmp(v->names + off, name, len) == 0) return vxr__le(e + 8, 8);
  }
  return 0;
}

int64_t vxr_elf_symbol(const uint8_t *elf, size_t size, const char *name) {
  elf_version(EV_CURRENT);
  Elf *e = elf_memory((char *)elf, size);
  int64_t v = e && elf_kind(e) == ELF_K_ELF ? vxr__elf_symbol(e, name) : -1;
  if (e) elf_end(e);
  return v;
}
