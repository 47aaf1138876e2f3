/*
 * vxd_sdk.c - what a linked .vxbin image depends on besides the object:
 * the Vortex kernel SDK's link script, objects and archives (the files
 * vxr_link_vxbin links, vxr_sdk_inputs), the libc and libgcc archives of
 * both XLENs and the linker that links them, named in the cache key by one
 * SHA-256 over their contents.  The digest
 * hashes each file's name within its directory, size and bytes, never a
 * directory, so one SDK installed in two places gives one key (as the
 * images are the same bytes), and a changed file gives another.
 *
 * The contents are hashed when the daemon starts and again when a file's
 * identity changes (device, inode, size or modification time, checked by
 * vxd_sdk_refresh on the loop's flush tick, every second): a rebuilt SDK
 * gets new keys within a second, and a hit pays no file system access.
 * Loop thread (a forked worker keeps the copy it was forked with).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "runtime/mgpu/vxr_vxbin.h"
#include "vxd.h"

/* Inputs of one digest: the SDK's and the tools'. */
#define VXD_SDK_FILES (VXR_SDK_MAX_INPUTS + VXD_SDK_MAX_TOOLS)

struct vxd_sdk {
  char dir[4096], tools[VXD_SDK_MAX_TOOLS][4096];
  int ntools;
  char digest[65];
  int nfiles;
  struct {
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime;
  } seen[VXD_SDK_FILES]; /* identities of the files the digest hashed */
};

/* The input files now: *n paths (malloc(), caller frees each). */
static void vxd__sdk_files(const vxd_sdk *s, char **paths, int *n) {
  *n = vxr_sdk_inputs(s->dir, paths, VXR_SDK_MAX_INPUTS);
  for (int i = 0; i < s->ntools; i++)
    paths[(*n)++] = strdup(s->tools[i]);
}

static const char *vxd__base(const char *path) {
  const char *b = strrchr(path, '/');
  return b ? b + 1 : path;
}

/* Hashes the files into s->digest and records their identities.  0 or a
 * negative errno (a file that cannot be read) with a message in err. */
static int vxd__sdk_hash(vxd_sdk *s, char *err, size_t errcap) {
  char *paths[VXD_SDK_FILES];
  int n = 0, rc = 0;
  vxd__sdk_files(s, paths, &n);
  EVP_MD_CTX *md = EVP_MD_CTX_new();
  if (!md || EVP_DigestInit_ex(md, EVP_sha256(), NULL) != 1) rc = -ENOMEM;
  static const char tag[] = "vortexd-sdk-1";
  if (rc == 0) EVP_DigestUpdate(md, tag, sizeof tag);
  for (int i = 0; i < n && rc == 0; i++) {
    int fd = paths[i] ? open(paths[i], O_RDONLY | O_CLOEXEC) : -1;
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      rc = fd < 0 ? -errno : -EINVAL;
      snprintf(err, errcap, "cannot read %s: %s", paths[i] ? paths[i] : "(no memory)",
               rc == -EINVAL ? "not a regular file" : strerror(-rc));
    } else {
      const char *base = vxd__base(paths[i]);
      uint64_t size = (uint64_t)st.st_size;
      EVP_DigestUpdate(md, base, strlen(base) + 1);
      EVP_DigestUpdate(md, &size, sizeof size);
      char buf[65536];
      ssize_t r;
      while ((r = read(fd, buf, sizeof buf)) > 0)
        EVP_DigestUpdate(md, buf, (size_t)r);
      if (r < 0) {
        rc = -errno;
        snprintf(err, errcap, "cannot read %s: %s", paths[i], strerror(-rc));
      }
      s->seen[i].dev = st.st_dev, s->seen[i].ino = st.st_ino, s->seen[i].size = st.st_size;
      s->seen[i].mtime = st.st_mtim;
    }
    if (fd >= 0) close(fd);
  }
  unsigned char d[32];
  unsigned dn = 0;
  if (rc == 0 && EVP_DigestFinal_ex(md, d, &dn) != 1) rc = -ENOMEM;
  EVP_MD_CTX_free(md);
  if (rc == 0) {
    for (unsigned i = 0; i < 32; i++)
      snprintf(s->digest + 2 * i, 3, "%02x", d[i]);
    s->nfiles = n;
  }
  for (int i = 0; i < n; i++)
    free(paths[i]);
  return rc;
}

int vxd_sdk_open(const char *dir, const char *const *tools, int ntools, vxd_sdk **out, char *err,
                 size_t errcap) {
  *out = NULL;
  if (ntools < 0 || ntools > VXD_SDK_MAX_TOOLS) return -EINVAL;
  vxd_sdk *s = calloc(1, sizeof *s);
  if (!s) return -ENOMEM;
  snprintf(s->dir, sizeof s->dir, "%s", dir);
  for (int i = 0; i < ntools; i++)
    snprintf(s->tools[i], sizeof s->tools[i], "%s", tools[i]);
  s->ntools = ntools;
  int rc = vxd__sdk_hash(s, err, errcap);
  if (rc) {
    free(s);
    return rc;
  }
  *out = s;
  return 0;
}

int vxd_sdk_refresh(vxd_sdk *s) {
  char *paths[VXD_SDK_FILES];
  int n = 0, same = 1;
  vxd__sdk_files(s, paths, &n);
  same = n == s->nfiles;
  for (int i = 0; i < n; i++) {
    struct stat st;
    if (same &&
        (!paths[i] || stat(paths[i], &st) != 0 || st.st_dev != s->seen[i].dev ||
         st.st_ino != s->seen[i].ino || st.st_size != s->seen[i].size ||
         st.st_mtim.tv_sec != s->seen[i].mtime.tv_sec || st.st_mtim.tv_nsec != s->seen[i].mtime.tv_nsec))
      same = 0;
    free(paths[i]);
  }
  if (same) return 0;
  char old[65], err[512];
  memcpy(old, s->digest, sizeof old);
  int rc = vxd__sdk_hash(s, err, sizeof err);
  if (rc) return rc; /* the old digest stays until the files can be read */
  return strcmp(old, s->digest) != 0;
}

const char *vxd_sdk_digest(const vxd_sdk *s) { return s->digest; }

void vxd_sdk_close(vxd_sdk *s) { free(s); }
