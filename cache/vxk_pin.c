/*
 * vxk_pin.c - SQLite opens the cache's files through the descriptor of the
 * directory vxk checked, never by its path again (see vxk_pin.h).
 *
 * A pinned directory gets a name of its own, "/vortexd-pinned/<id>/",
 * under which its database is opened with this file's VFS, a thin layer
 * over SQLite's own "unix" VFS: that name is never looked up in the file
 * system (xFullPathname keeps it as it is), and every file SQLite opens,
 * deletes or probes under it (cache.db, its -journal and -wal; the -shm,
 * which the unix VFS derives from the database's own path) is handed to
 * the unix VFS as "/proc/self/fd/<dirfd>/<file>": the kernel resolves that
 * through the open directory, whatever has been renamed since on the way
 * to it.  The names given to the unix VFS are made by
 * sqlite3_create_filename, as SQLite's own are (the unix VFS keeps the
 * pointer for the file's life and reads URI parameters behind it), and
 * live as long as the pin.
 *
 * THREAD NOTES: the pins are a process-wide list under a mutex (SQLite
 * calls the VFS from any thread); the VFS is registered once.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "vxk_pin.h"

#define VXK__PIN_PREFIX "/vortexd-pinned/"
#define VXK__PIN_VFS "vortexd-pinned"

struct vxk_pin {
  unsigned id;
  int dirfd;
  char proc[48];         /* "/proc/self/fd/<dirfd>" */
  sqlite3_filename name; /* the database, journal and WAL as the unix VFS gets them */
  struct vxk_pin *next;
};

static pthread_mutex_t vxk__pins_mu = PTHREAD_MUTEX_INITIALIZER;
static vxk_pin *vxk__pins;
static unsigned vxk__pins_next;
static pthread_once_t vxk__vfs_once = PTHREAD_ONCE_INIT;
static sqlite3_vfs vxk__vfs, *vxk__unix;
static int vxk__vfs_rc = SQLITE_ERROR;

/* The file a pinned name designates: its pin's id and the file's name in
 * the directory (pointing into name), or 0 for a name that is not one. */
static unsigned vxk__parse(const char *name, const char **base) {
  size_t n = sizeof VXK__PIN_PREFIX - 1;
  if (!name || strncmp(name, VXK__PIN_PREFIX, n) != 0) return 0;
  char *end;
  unsigned long id = strtoul(name + n, &end, 10);
  if (end == name + n || *end != '/' || id == 0 || id > 0xffffffffu || strchr(end + 1, '/')) return 0;
  *base = end + 1;
  return (unsigned)id;
}

/* Which of a pin's files base is: 0 the database, 1 its journal, 2 its
 * WAL, -1 none of them. */
static int vxk__which(const char *base) {
  if (strcmp(base, "cache.db") == 0) return 0;
  if (strcmp(base, "cache.db-journal") == 0) return 1;
  if (strcmp(base, "cache.db-wal") == 0) return 2;
  return -1;
}

/* The unix VFS's name for pinned name: the pin's stable one (which >= 0,
 * into *stable) or "/proc/self/fd/N/base" (into buf, cap bytes).  0, or
 * SQLITE_CANTOPEN for a name of no pin or no such file. */
static int vxk__map(const char *name, const char **stable, char *buf, size_t cap) {
  const char *base = NULL;
  unsigned id = vxk__parse(name, &base);
  int which = id ? vxk__which(base) : -1;
  if (which < 0) return SQLITE_CANTOPEN;
  int rc = SQLITE_CANTOPEN;
  pthread_mutex_lock(&vxk__pins_mu);
  for (vxk_pin *p = vxk__pins; p; p = p->next) {
    if (p->id != id) continue;
    if (stable)
      *stable = which == 0   ? sqlite3_filename_database(p->name)
                : which == 1 ? sqlite3_filename_journal(p->name)
                             : sqlite3_filename_wal(p->name);
    if (buf) snprintf(buf, cap, "%s/%s", p->proc, base);
    rc = SQLITE_OK;
    break;
  }
  pthread_mutex_unlock(&vxk__pins_mu);
  return rc;
}

static int vxk__open(sqlite3_vfs *vfs, sqlite3_filename name, sqlite3_file *f, int flags, int *out_flags) {
  (void)vfs;
  const char *real = NULL;
  if (name && vxk__map(name, &real, NULL, 0) != SQLITE_OK) return SQLITE_CANTOPEN;
  return vxk__unix->xOpen(vxk__unix, name ? real : NULL, f, flags, out_flags);
}

static int vxk__delete(sqlite3_vfs *vfs, const char *name, int sync_dir) {
  (void)vfs;
  char real[96];
  return vxk__map(name, NULL, real, sizeof real) == SQLITE_OK ? vxk__unix->xDelete(vxk__unix, real, sync_dir)
                                                              : SQLITE_IOERR_DELETE;
}

static int vxk__access(sqlite3_vfs *vfs, const char *name, int flags, int *out) {
  (void)vfs;
  char real[96];
  if (vxk__map(name, NULL, real, sizeof real) != SQLITE_OK) {
    *out = 0;
    return SQLITE_OK;
  }
  return vxk__unix->xAccess(vxk__unix, real, flags, out);
}

static int vxk__full_pathname(sqlite3_vfs *vfs, const char *name, int n, char *out) {
  (void)vfs;
  const char *base;
  if (!vxk__parse(name, &base)) return SQLITE_CANTOPEN; /* only pinned names through this VFS */
  if ((int)strlen(name) >= n) return SQLITE_CANTOPEN;
  memcpy(out, name, strlen(name) + 1);
  return SQLITE_OK;
}

static void vxk__register(void) {
  vxk__unix = sqlite3_vfs_find("unix");
  if (!vxk__unix) return;
  vxk__vfs = *vxk__unix; /* its other methods (time, randomness, ...) as they are */
  vxk__vfs.pNext = NULL;
  vxk__vfs.zName = VXK__PIN_VFS;
  vxk__vfs.xOpen = vxk__open;
  vxk__vfs.xDelete = vxk__delete;
  vxk__vfs.xAccess = vxk__access;
  vxk__vfs.xFullPathname = vxk__full_pathname;
  vxk__vfs_rc = sqlite3_vfs_register(&vxk__vfs, 0);
}

const char *vxk_pin_vfs(void) {
  pthread_once(&vxk__vfs_once, vxk__register);
  return vxk__vfs_rc == SQLITE_OK ? VXK__PIN_VFS : NULL;
}

int vxk_pin_open(int dirfd, vxk_pin **out, char *name, size_t cap) {
  *out = NULL;
  if (!vxk_pin_vfs()) return -ENOSYS;
  vxk_pin *p = calloc(1, sizeof *p);
  if (!p) return -ENOMEM;
  p->dirfd = dirfd;
  snprintf(p->proc, sizeof p->proc, "/proc/self/fd/%d", dirfd);
  char db[96], journal[96], wal[96];
  snprintf(db, sizeof db, "%s/cache.db", p->proc);
  snprintf(journal, sizeof journal, "%s/cache.db-journal", p->proc);
  snprintf(wal, sizeof wal, "%s/cache.db-wal", p->proc);
  if (!(p->name = sqlite3_create_filename(db, journal, wal, 0, NULL))) {
    free(p);
    return -ENOMEM;
  }
  pthread_mutex_lock(&vxk__pins_mu);
  if (++vxk__pins_next == 0) vxk__pins_next = 1;
  p->id = vxk__pins_next;
  int fits = snprintf(name, cap, VXK__PIN_PREFIX "%u/cache.db", p->id) < (int)cap;
  if (fits) p->next = vxk__pins, vxk__pins = p;
  pthread_mutex_unlock(&vxk__pins_mu);
  if (!fits) {
    sqlite3_free_filename(p->name);
    free(p);
    return -ENAMETOOLONG;
  }
  *out = p;
  return 0;
}

int vxk_pin_dirfd(const vxk_pin *p) { return p ? p->dirfd : -1; }

void vxk_pin_close(vxk_pin *p) {
  if (!p) return;
  pthread_mutex_lock(&vxk__pins_mu);
  for (vxk_pin **pp = &vxk__pins; *pp; pp = &(*pp)->next)
    if (*pp == p) {
      *pp = p->next;
      break;
    }
  pthread_mutex_unlock(&vxk__pins_mu);
  sqlite3_free_filename(p->name);
  close(p->dirfd);
  free(p);
}
