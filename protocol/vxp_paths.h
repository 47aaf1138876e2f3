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

/* Socket path clients and daemon agree on, written to buf (cap bytes):
 * $VORTEXD_SOCKET, else $XDG_RUNTIME_DIR/vortexd/vortexd.sock, else
 * /tmp/vortexd-$UID/vortexd.sock (the systemd user-service convention, then
 * a per-user directory).  Returns 0, or -ENAMETOOLONG when the path does
 * not fit buf or a Unix socket address (108 bytes on Linux).  Reads the
 * environment: any thread that does not change it. */
int vxp_default_socket_path(char *buf, size_t cap);

/* Cache directory: $VORTEXD_CACHE_DIR, else $XDG_CACHE_HOME/vortexd, else
 * $HOME/.cache/vortexd (the XDG base-directory rules; /tmp when HOME is
 * unset).  Returns 0 or -ENAMETOOLONG.  As vxp_default_socket_path. */
int vxp_default_cache_dir(char *buf, size_t cap);

#endif /* VXP_PATHS_H */
