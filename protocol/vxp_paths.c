/* vxp_paths.c - default socket path and cache directory (see vxp_paths.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "vxp_paths.h"

static int vxp__join(char *buf, size_t cap, const char *a, const char *b) {
  int n = snprintf(buf, cap, "%s%s", a, b);
  return (n < 0 || (size_t)n >= cap) ? -ENAMETOOLONG : 0;
}

int vxp_default_socket_path(char *buf, size_t cap) {
  const char *env = getenv("VORTEXD_SOCKET");
  int rc;
  if (env && *env)
    rc = vxp__join(buf, cap, env, "");
  else if ((env = getenv("XDG_RUNTIME_DIR")) && *env)
    rc = vxp__join(buf, cap, env, "/vortexd/vortexd.sock");
  else {
    char dir[64];
    snprintf(dir, sizeof dir, "/tmp/vortexd-%u", (unsigned)getuid());
    rc = vxp__join(buf, cap, dir, "/vortexd.sock");
  }
  if (rc == 0 && strlen(buf) >= sizeof(((struct sockaddr_un *)0)->sun_path)) rc = -ENAMETOOLONG;
  return rc;
}

int vxp_client_socket_path(char *buf, size_t cap, int *is_system) {
  *is_system = 0;
  const char *env = getenv("VORTEXD_SOCKET");
  if (!(env && *env)) {
    const char *sys = getenv("VORTEXD_SYSTEM_SOCKET");
    if (!sys || !*sys) sys = VXP_SYSTEM_SOCKET;
    char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
    struct stat st, dst;
    if (strlen(sys) < sizeof dir && vxp_path_dir(sys, dir, sizeof dir) == 0 && lstat(sys, &st) == 0 &&
        S_ISSOCK(st.st_mode) && access(sys, R_OK | W_OK) == 0 && lstat(dir, &dst) == 0 &&
        S_ISDIR(dst.st_mode) && dst.st_uid == 0 && !(dst.st_mode & (S_IWGRP | S_IWOTH))) {
      *is_system = 1;
      return vxp__join(buf, cap, sys, "");
    }
  }
  return vxp_default_socket_path(buf, cap);
}

int vxp_default_cache_dir(char *buf, size_t cap) {
  const char *env = getenv("VORTEXD_CACHE_DIR");
  if (env && *env) return vxp__join(buf, cap, env, "");
  if ((env = getenv("XDG_CACHE_HOME")) && *env) return vxp__join(buf, cap, env, "/vortexd");
  env = getenv("HOME");
  return vxp__join(buf, cap, env && *env ? env : "/tmp", "/.cache/vortexd");
}

const char *vxp_path_base(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

int vxp_path_dir(const char *path, char *buf, size_t cap) {
  const char *slash = strrchr(path, '/');
  int n;
  if (!slash)
    n = snprintf(buf, cap, ".");
  else if (slash == path)
    n = snprintf(buf, cap, "/");
  else
    n = snprintf(buf, cap, "%.*s", (int)(slash - path), path);
  return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : 0;
}

/* Whether directory dir holds only what vortexd puts in one: sockets and
 * their lock, log and spawn files (names with ".sock"), "vortexd*",
 * the cache's "cache.db*".  False when it cannot be read. */
static int vxp__only_ours(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return 0;
  int ours = 1;
  for (struct dirent *e; ours && (e = readdir(d));)
    ours = !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || strstr(e->d_name, ".sock") ||
           !strncmp(e->d_name, "vortexd", 7) || !strncmp(e->d_name, "cache.db", 8);
  closedir(d);
  return ours;
}

int vxp_owned_dir_open(const char *dir, int create, const vxp_dir_rule *rule, char *err, size_t errcap) {
  struct stat st;
  if (lstat(dir, &st) != 0) {
    int e = errno;
    if (e != ENOENT || !create) {
      snprintf(err, errcap, "%s %s: %s", rule->what, dir, strerror(e));
      return -e;
    }
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
      e = errno;
      snprintf(err, errcap, "cannot create %s %s: %s", rule->what, dir, strerror(e));
      return -e;
    }
    if (lstat(dir, &st) != 0) {
      e = errno;
      snprintf(err, errcap, "%s %s: %s", rule->what, dir, strerror(e));
      return -e;
    }
  }
  if (S_ISLNK(st.st_mode)) {
    snprintf(err, errcap,
             "%s %s is a symbolic link; refusing it (remove it, or choose a directory of your own with %s)",
             rule->what, dir, rule->choose);
    return -ELOOP;
  }
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    snprintf(err, errcap, "%s %s: %s", rule->what, dir, strerror(e));
    return -e;
  }
  if (fstat(fd, &st) != 0) {
    int e = errno;
    close(fd);
    snprintf(err, errcap, "%s %s: %s", rule->what, dir, strerror(e));
    return -e;
  }
  if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & rule->closed)) {
    close(fd);
    /* chmod is advice only for a directory of vortexd's own: the user's,
     * not sticky (a shared one: /tmp), holding nothing but vortexd's files
     * (not a home or a system directory such as /run, whose mode others
     * rely on) */
    int own = S_ISDIR(st.st_mode) && st.st_uid == geteuid() && !(st.st_mode & S_ISVTX) && vxp__only_ours(dir);
    char fix[1200];
    if (own)
      snprintf(fix, sizeof fix, "fix with `chmod %s %s` if it is yours, else remove it or choose another %s",
               rule->chmod, dir, rule->choose);
    else
      snprintf(fix, sizeof fix,
               "do not change the mode of a shared or system directory: choose a directory of your own "
               "with %s (made with `mkdir -m 700 DIR`)",
               rule->choose);
    snprintf(err, errcap,
             "%s %s is not private (owner uid %u, mode %03o; needs owner uid %u and mode %s): %s; %s",
             rule->what, dir, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777), (unsigned)geteuid(),
             rule->modes, rule->risk, fix);
    return -EPERM;
  }
  return fd;
}

int vxp_path_ancestors_safe(const char *dir, uid_t uid, char *err, size_t errcap) {
  char real[PATH_MAX];
  if (!realpath(dir, real)) {
    int e = errno;
    snprintf(err, errcap, "%s: %s", dir, strerror(e));
    return -e;
  }
  /* from the directory's parent up to /, as OpenSSH's safe_path walks */
  for (;;) {
    char *slash = strrchr(real, '/');
    if (!slash) break;
    if (slash == real)
      slash[1] = '\0'; /* "/" itself */
    else
      *slash = '\0';
    struct stat st;
    if (stat(real, &st) != 0) {
      int e = errno;
      snprintf(err, errcap, "%s: %s", real, strerror(e));
      return -e;
    }
    if ((st.st_uid != 0 && st.st_uid != uid) ||
        ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX))) {
      snprintf(err, errcap,
               "%s lies under %s (owner uid %u, mode %03o), which another user can change: every directory "
               "above it must be owned by root or uid %u and not writable by group or others (unless "
               "sticky, as /tmp)",
               dir, real, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777), (unsigned)uid);
      return -EPERM;
    }
    if (strcmp(real, "/") == 0) break;
  }
  return 0;
}

int vxp_runtime_dir_open(const char *dir, int create, int group_ok, char *err, size_t errcap) {
  vxp_dir_rule rule = {"runtime directory",
                       group_ok ? (S_IWGRP | S_IRWXO) : (S_IRWXG | S_IRWXO),
                       group_ok ? "0700 or 0750" : "0700",
                       "700",
                       "another user could serve a fake daemon there",
                       "--socket"};
  return vxp_owned_dir_open(dir, create, &rule, err, errcap);
}

int vxp_trusted_file_open(const char *path, char *err, size_t errcap) {
  /* O_NONBLOCK: opening a FIFO must not wait for a writer; fstat refuses it */
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    snprintf(err, errcap, "cannot read %s: %s", path, strerror(e));
    return -e;
  }
  struct stat st;
  int rc = 0;
  if (fstat(fd, &st) != 0) {
    rc = -errno;
    snprintf(err, errcap, "cannot read %s: %s", path, strerror(-rc));
  } else if (!S_ISREG(st.st_mode)) {
    rc = -EINVAL;
    snprintf(err, errcap, "%s is not a regular file; refusing to read it", path);
  } else if ((st.st_uid != geteuid() && st.st_uid != 0) || (st.st_mode & (S_IWGRP | S_IWOTH))) {
    rc = -EPERM;
    snprintf(err, errcap,
             "%s: bad owner or permissions (owner uid %u, mode %03o; needs owner uid %u or root, not "
             "writable by group or others): another user could change what it says; fix with `chmod go-w "
             "%s` if it is yours",
             path, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777), (unsigned)geteuid(), path);
  }
  if (rc == 0 && fcntl(fd, F_SETFL, 0) != 0) {
    rc = -errno;
    snprintf(err, errcap, "cannot read %s: %s", path, strerror(-rc));
  }
  if (rc) {
    close(fd);
    return rc;
  }
  return fd;
}

int vxp_private_file_open(int dirfd, const char *name, int flags) {
  int fd = openat(dirfd, name, flags | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return -errno;
  struct stat st;
  int rc = 0;
  if (fstat(fd, &st) != 0)
    rc = -errno;
  else if (!S_ISREG(st.st_mode))
    rc = -EINVAL;
  else if (st.st_uid != geteuid())
    rc = -EPERM;
  if (rc) {
    close(fd);
    return rc;
  }
  return fd;
}
