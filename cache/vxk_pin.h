/*
 * vxk_pin.h - the cache's files opened through the directory that was
 * checked, not by its path.
 *
 * vxk checks the cache directory on an open descriptor (owner, mode, no
 * symbolic link) and then lets SQLite open cache.db, its -wal, -shm and
 * -journal.  By path, SQLite would open whatever the path names by then:
 * a directory swapped in between (by anyone who can write a directory on
 * the way) would be read as the user's own cache.  A pin keeps the checked
 * directory's descriptor and gives it a name that only this file's SQLite
 * VFS understands; a database opened under that name with that VFS has
 * every one of its files opened through the descriptor
 * (/proc/self/fd/<fd>/<file>), on every connection.  Linux only (procfs).
 *
 * THREAD NOTES: any thread; a pin must outlive every connection opened
 * under its name (close the database first).
 */
#ifndef VXK_PIN_H
#define VXK_PIN_H

#include <stddef.h>

typedef struct vxk_pin vxk_pin;

/* The name of the pinning VFS, registered with SQLite on the first call
 * (the zVfs argument of sqlite3_open_v2), or NULL when SQLite has no
 * "unix" VFS to build it on. */
const char *vxk_pin_vfs(void);

/* Pins directory descriptor dirfd and writes into name (cap bytes) the
 * database path to open with vxk_pin_vfs().  On success the pin owns
 * dirfd (vxk_pin_close closes it); on failure the caller keeps it.
 * Returns 0 and *out, or -ENOMEM, -ENOSYS (no VFS), -ENAMETOOLONG. */
int vxk_pin_open(int dirfd, vxk_pin **out, char *name, size_t cap);

/* The pinned directory's descriptor (for renames and removals in it), or
 * -1 for NULL. */
int vxk_pin_dirfd(const vxk_pin *p);

/* Unpins p and closes its descriptor.  NULL-safe. */
void vxk_pin_close(vxk_pin *p);

#endif /* VXK_PIN_H */
