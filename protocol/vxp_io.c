/*
 * vxp_io.c - whole reads and writes (see vxp_io.h).
 */
#include <errno.h>
#include <stdint.h>
#include <sys/socket.h>
#include <unistd.h>

#include "vxp_io.h"

int vxp_read_full(int fd, void *buf, size_t n) {
  uint8_t *p = buf;
  while (n) {
    ssize_t r = read(fd, p, n);
    if (r == 0) return -EPIPE;
    if (r < 0) {
      if (errno == EINTR) continue;
      return -errno;
    }
    p += r;
    n -= (size_t)r;
  }
  return 0;
}

int vxp_write_full(int fd, const void *buf, size_t n, int flags) {
  const uint8_t *p = buf;
  while (n) {
    ssize_t r = flags & VXP_IO_NOSIGNAL ? send(fd, p, n, MSG_NOSIGNAL) : write(fd, p, n);
    if (r < 0) {
      if (errno == EINTR) continue;
      return -errno;
    }
    if (r == 0) return -EIO;
    p += r;
    n -= (size_t)r;
  }
  return 0;
}
