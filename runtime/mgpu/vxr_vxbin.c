/*
 * vxr_vxbin.c - linking with ld.lld: a module's pieces into one
 * relocatable object (vortexd), a module object into an executable and a
 * loadable Vortex image (.vxbin), shared by libvortexd_runtime's backends
 * and vortexd (which links and caches images when a Vortex kernel SDK is
 * configured).  Every link runs ld.lld by posix_spawn with the objects
 * and the output on pipes: no fork of a large process, no temporary file.
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
#include <sys/wait.h>
#include <unistd.h>

#include "vxr_vxbin.h"

static int vxr__name_cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The .o files, then the .a files, of dir, in name order, into argv (at
 * most cap entries, strdup()ed).  Returns the count. */
static int vxr__sdk_objects(const char *dir, char **argv, int cap) {
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

/* An ld.lld -r started before its inputs exist: input i is the read end
 * of a pipe at the child's descriptor 3 + i (/dev/fd/3+i; LLVM reads a
 * pipe as a stream), the output comes back on its stdout (-o -). */
struct vxr_rlink {
  pid_t pid;
  uint32_t n;
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
  for (uint32_t i = 0; i < n; i++)
    l->in[i] = child_in[i] = -1;
  for (uint32_t i = 0; i < n && rc == 0; i++) {
    int p[2];
    if (pipe(p) != 0 || (child_in[i] = vxr__fd_above(p[0], high)) < 0 ||
        (l->in[i] = vxr__fd_above(p[1], high)) < 0)
      rc = -errno;
  }
  int p[2];
  if (rc == 0 && (pipe(p) != 0 || (l->out = vxr__fd_above(p[0], high)) < 0 ||
                  (child_out = vxr__fd_above(p[1], high)) < 0))
    rc = -errno;
  if (rc == 0 && (pipe(p) != 0 || (l->diag = vxr__fd_above(p[0], high)) < 0 ||
                  (child_diag = vxr__fd_above(p[1], high)) < 0))
    rc = -errno;
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
  while (l->text_len && l->text[l->text_len - 1] == '\n') /* no closing newline */
    l->text_len--;
  l->text[l->text_len] = '\0';
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
    snprintf(err, errcap, "ld.lld failed (%s %d)%s%s", WIFSIGNALED(st) ? "signal" : "exit status",
             WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st), l->text_len ? ":\n" : "", l->text);
    rc = -EIO;
  } else if (rc != 0) {
    snprintf(err, errcap, "feeding ld.lld -r: %s", strerror(-rc));
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

int vxr_link_elf(const char *lld, const char *script, char *const *inputs, int ninputs, const char *libc,
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
  const char *pre[] = {"-T", script, defsym};
  char *post[66];
  for (int i = 0; i < ninputs; i++)
    post[i] = inputs[i];
  post[ninputs] = (char *)libc, post[ninputs + 1] = (char *)libgcc;
  /* the object through a pipe, as a relocatable link takes its pieces */
  vxr_rlink *l;
  int rc = vxr__lld_start(lld, pre, 3, 1, post, ninputs + 2, &l, err, errcap);
  if (rc != 0) return rc; /* err says why ld.lld did not start */
  char why[VXR_LINK_DIAG_MAX + 64];
  rc = vxr_rlink_finish(l, &obj, &obj_size, elf, elf_size, why, sizeof why);
  if (rc != 0) snprintf(err, errcap, "linking kernel %s with %s: %s", entry, script, why);
  return rc;
}

int vxr_sdk_inputs(const char *sdk, char **paths, int cap) {
  if (cap < 1 || asprintf(&paths[0], "%s/link.ld", sdk) < 0) return 0;
  return 1 + vxr__sdk_objects(sdk, paths + 1, cap - 1);
}

int vxr_link_vxbin(const char *sdk, const char *lld, const char *libc, const char *libgcc, const uint8_t *obj,
                   size_t obj_size, const char *entry, uint32_t vortex_abi, uint8_t **image,
                   size_t *image_size, char *err, size_t errcap) {
  err[0] = '\0';
  char script[4200], *inputs[64];
  snprintf(script, sizeof script, "%s/link.ld", sdk);
  int ninputs = vxr__sdk_objects(sdk, inputs, 64);
  uint8_t *elf = NULL;
  size_t elf_size = 0;
  int rc = vxr_link_elf(lld, script, inputs, ninputs, libc, libgcc, obj, obj_size, entry, vortex_abi, &elf,
                        &elf_size, err, errcap);
  if (rc == 0 && (rc = vxr__to_vxbin(elf, elf_size, image, image_size)) != 0)
    snprintf(err, errcap, "cannot make a .vxbin of kernel %s", entry);
  free(elf);
  for (int i = 0; i < ninputs; i++)
    free(inputs[i]);
  return rc;
}
