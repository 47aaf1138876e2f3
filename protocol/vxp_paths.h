/*
 * vxp_paths.h - where clients and the daemon meet: the default socket path
 * and cache directory both sides derive from the environment.
 *
 * Part of protocol/ because both sides must agree on them exactly, as they
 * agree on the wire format; kept apart from vxp.h, whose functions are pure.
 */
#ifndef VXP_PATHS_H
#define VXP_PATHS_H

#include <stddef.h>
#include <sys/types.h>

/* Socket path clients and daemon agree on, written to buf (cap bytes):
 * $VORTEXD_SOCKET, else $XDG_RUNTIME_DIR/vortexd/vortexd.sock, else
 * /tmp/vortexd-$UID/vortexd.sock (the systemd user-service convention, then
 * a per-user directory).  Returns 0, or -ENAMETOOLONG when the path does
 * not fit buf or a Unix socket address (108 bytes on Linux).  Reads the
 * environment: any thread that does not change it. */
int vxp_default_socket_path(char *buf, size_t cap);

/* The system service's socket (systemd/vortexd.socket): root's directory,
 * group vortexd may connect.  $VORTEXD_SYSTEM_SOCKET replaces it (another
 * layout, tests). */
#define VXP_SYSTEM_SOCKET "/run/vortexd/vortexd.sock"

/* The socket a client uses when it is given none: $VORTEXD_SOCKET; else
 * the system service's socket when this user may use it (a socket this
 * user can connect to, in a directory owned by root that nobody else can
 * write: a member of the service's group, say); else this user's own
 * (vxp_default_socket_path), where a private daemon may be started.
 * Writes it into buf (cap bytes) and sets *is_system.  Returns 0 or
 * -ENAMETOOLONG.  Any thread that does not change the environment. */
int vxp_client_socket_path(char *buf, size_t cap, int *is_system);

/* Cache directory: $VORTEXD_CACHE_DIR, else $XDG_CACHE_HOME/vortexd, else
 * $HOME/.cache/vortexd (the XDG base-directory rules; /tmp when HOME is
 * unset).  Returns 0 or -ENAMETOOLONG.  As vxp_default_socket_path. */
int vxp_default_cache_dir(char *buf, size_t cap);

/* ---- the runtime directory: where the socket, its lock and log live ----
 *
 * Everything beside the socket is trusted only because nobody else can
 * write that directory: another local user who pre-creates it (the /tmp
 * fallback is predictable) could otherwise serve a fake daemon there or
 * plant symbolic links named like its lock or log files.  The rule, after
 * ssh-agent and systemd's RuntimeDirectory: a real directory (not a
 * symbolic link), owned by the effective uid, writable by nobody else and
 * closed to others (mode 0700; 0750 when group_ok, for a daemon serving a
 * configured group). */

/* What a directory must be for a process to trust what it finds there. */
typedef struct {
  const char *what;   /* "runtime directory", "cache directory" (messages) */
  unsigned closed;    /* mode bits that must be clear (mode_t) */
  const char *modes;  /* the modes allowed, for messages: "0700" */
  const char *chmod;  /* the chmod argument that fixes it: "700", "go-w" */
  const char *risk;   /* what another user could do there, for messages */
  const char *choose; /* the setting that chooses another: "--socket" */
} vxp_dir_rule;

/* Opens dir under rule: a real directory (lstat: not a symbolic link),
 * owned by the effective uid, with none of rule->closed's mode bits (fstat
 * on the opened descriptor, so a swap between the two checks is caught),
 * creating it with mode 0700 when create and it is missing (its parent
 * must exist).  Returns a directory descriptor (O_CLOEXEC; caller closes)
 * or a negative errno with a message in err (errcap bytes) naming the
 * directory, its owner and mode, and the fix (`chmod` only for a directory
 * that is the user's, not sticky and holds nothing but vortexd's files;
 * else a directory of the user's own, never a change to a shared or
 * system directory): -ELOOP (symbolic link),
 * -EPERM (owner or mode), -ENOTDIR, -ENOENT, ...  The rule of ssh-agent's
 * and systemd's runtime directories; any thread. */
int vxp_owned_dir_open(const char *dir, int create, const vxp_dir_rule *rule, char *err, size_t errcap);

/* Whether every directory above dir (resolved: realpath(3)) up to / is
 * one no other user can change: owned by root or uid, and not writable
 * by group or others unless sticky (as /tmp: others may add entries but
 * not rename or remove this user's).  OpenSSH's rule for the files it
 * trusts (safe_path), with the sticky exception: without it nobody else
 * can swap dir, or any directory on its way, for his own between a check
 * and an open.  Returns 0, or a negative errno with a message in err
 * (errcap bytes) naming the directory at fault: -EPERM, or realpath's or
 * stat's error.  Any thread. */
int vxp_path_ancestors_safe(const char *dir, uid_t uid, char *err, size_t errcap);

/* Opens path (a configuration file) for reading only if another user
 * cannot have written it: a regular file (never a FIFO, device or
 * directory: a symbolic link is followed and its target checked, as
 * OpenSSH reads ~/.ssh/config), owned by the effective uid or root, not
 * writable by group or others (OpenSSH's rule for its configuration).
 * Never blocks on the open.  Returns a descriptor (O_CLOEXEC; caller
 * closes) or a negative errno with a message in err (errcap bytes):
 * -ENOENT (no such file: not an error for an optional file), -EINVAL (not
 * a regular file), -EPERM (owner or mode, naming the fix), others from
 * open(2).  Any thread. */
int vxp_trusted_file_open(const char *path, char *err, size_t errcap);

/* Opens dir as a runtime directory, creating it with mode 0700 when
 * create and it does not exist (its parent must).  The check is lstat (no
 * symbolic link) and fstat on the opened descriptor (owner, mode), so a
 * swap between the two is caught.  Returns a directory descriptor
 * (O_CLOEXEC; caller closes), or a negative errno with a message in err
 * (errcap bytes) naming the path and the fix: -ELOOP (a symbolic link),
 * -EPERM (wrong owner or mode), -ENOTDIR, -ENOENT, ...  Any thread. */
int vxp_runtime_dir_open(const char *dir, int create, int group_ok, char *err, size_t errcap);

/* The directory part of path into buf (cap bytes): "." for a bare name,
 * "/" for "/name".  Returns 0 or -ENAMETOOLONG. */
int vxp_path_dir(const char *path, char *buf, size_t cap);

/* The last component of path (a pointer into it). */
const char *vxp_path_base(const char *path);

/* Opens name inside the directory dirfd without following a symbolic link
 * (O_NOFOLLOW | O_CLOEXEC | flags; O_CREAT creates it with mode 0600) and
 * refuses anything but a regular file owned by the effective uid.
 * Returns a descriptor or a negative errno (-ELOOP: a symbolic link,
 * -EPERM: not ours, -EINVAL: not a regular file).  Any thread. */
int vxp_private_file_open(int dirfd, const char *name, int flags);

#endif /* VXP_PATHS_H */
