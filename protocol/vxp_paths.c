/* vxp_paths.c - default socket path and cache directory (see vxp_paths.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

int vxp_default_cache_dir(char *buf, size_t cap) {
  const char *env = getenv("VORTEXD_CACHE_DIR");
  if (env && *env) return vxp__join(buf, cap, env, "");
  if ((env = getenv("XDG_CACHE_HOME")) && *env) return vxp__join(buf, cap, env, "/vortexd");
  env = getenv("HOME");
  return vxp__join(buf, cap, env && *env ? env : "/tmp", "/.cache/vortexd");
}
