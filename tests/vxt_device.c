/* vxt_device.c - link + run on the emulated Vortex device (see vxt_device.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "vxc.h"
#include "vxt_device.h"

uint32_t vxt_image_put(vxt_image *img, const void *data, uint32_t n) {
  uint32_t off = (img->size + 63u) & ~63u;
  uint32_t need = off + n;
  if (need > img->cap) {
    uint32_t cap = img->cap ? img->cap : 4096;
    while (cap < need) cap *= 2;
    img->p = realloc(img->p, cap);
    memset(img->p + img->cap, 0, cap - img->cap);
    img->cap = cap;
  }
  if (data) memcpy(img->p + off, data, n);
  else memset(img->p + off, 0, n);
  img->size = need;
  return off;
}

void vxt_image_free(vxt_image *img) {
  free(img->p);
  memset(img, 0, sizeof *img);
}

uint32_t vxt_image_args(vxt_image *img, const vxp_kernel *k, const void *const *values,
                        const uint32_t grid[3], const uint32_t block[3], uint32_t shared_bytes) {
  uint8_t *buf = calloc(1, k->buffer_size);
  if (vxc_pack_args(k, values, grid, block, shared_bytes, buf, k->buffer_size) != 0) {
    free(buf);
    return UINT32_MAX;
  }
  uint32_t off = vxt_image_put(img, buf, k->buffer_size);
  free(buf);
  return off;
}

static int write_all(int fd, const void *p, size_t n) {
  const char *b = p;
  while (n) {
    ssize_t r = write(fd, b, n);
    if (r <= 0) return -1;
    b += r;
    n -= (size_t)r;
  }
  return 0;
}

static int read_all(int fd, void *p, size_t n) {
  char *b = p;
  while (n) {
    ssize_t r = read(fd, b, n);
    if (r <= 0) return -1;
    b += r;
    n -= (size_t)r;
  }
  return 0;
}

const char *vxt_device_run(const vxp_kernel *k, const vxt_image *img, uint32_t args_offset,
                           uint32_t out_offset, uint32_t out_size, void *out, int32_t *device_rc,
                           char *stderr_out, size_t stderr_cap) {
  char dir[] = "/tmp/vxt-dev-XXXXXX";
  if (!mkdtemp(dir)) return "mkdtemp failed";
  char obj[128], elf[128], err[128], cmd[2048];
  snprintf(obj, sizeof obj, "%s/kernel.o", dir);
  snprintf(elf, sizeof elf, "%s/kernel.elf", dir);
  snprintf(err, sizeof err, "%s/stderr", dir);
  FILE *f = fopen(obj, "wb");
  if (!f || fwrite(k->object, 1, k->object_size, f) != k->object_size) return "cannot write the object";
  fclose(f);
  snprintf(cmd, sizeof cmd, "%s -T %s %s %s %s %s -o %s 2>%s/link.log", VXT_LD, VXT_LINKER_SCRIPT,
           VXT_RUNTIME_OBJS, obj, VXT_LIBC, VXT_LIBGCC, elf, dir);
  const char *fail = NULL;
  if (system(cmd) != 0) fail = "link with the device runtime failed";
  int in[2], outp[2];
  pid_t pid = -1;
  if (!fail && (pipe(in) != 0 || pipe(outp) != 0)) fail = "pipe failed";
  if (!fail) {
    pid = fork();
    if (pid == 0) {
      dup2(in[0], 0);
      dup2(outp[1], 1);
      int e = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
      dup2(e, 2);
      close(in[1]);
      close(outp[0]);
      execl(VXT_QEMU, VXT_QEMU, elf, (char *)NULL);
      _exit(127);
    }
    close(in[0]);
    close(outp[1]);
    uint32_t hdr[3] = {args_offset, out_offset, out_size};
    if (write_all(in[1], &img->size, 4) || write_all(in[1], img->p, img->size) ||
        write_all(in[1], hdr, sizeof hdr))
      fail = "the device did not take its input";
    close(in[1]);
    if (!fail && (read_all(outp[0], device_rc, 4) || read_all(outp[0], out, out_size)))
      fail = "the device did not return its output";
    close(outp[0]);
    int st = 0;
    waitpid(pid, &st, 0);
    if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
      /* thread-unsafe static message: the suites run tests one at a time */
      static char msg[128];
      snprintf(msg, sizeof msg, "%s; qemu-riscv32 %s %d", fail ? fail : "the device failed",
               WIFEXITED(st) ? "exit status" : "signal", WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
      fail = msg;
    }
  }
  if (stderr_out && stderr_cap) {
    stderr_out[0] = '\0';
    FILE *e = fopen(err, "r");
    if (e) {
      size_t n = fread(stderr_out, 1, stderr_cap - 1, e);
      stderr_out[n] = '\0';
      fclose(e);
    }
  }
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0 && !fail) fail = "cleanup failed";
  return fail;
}
