/*
 * vxd_systemd.c - what the service manager and vortexd say to each other
 * (readiness and status, socket activation, the watchdog), through
 * libsystemd, loaded only when the environment holds one of the variables
 * those calls read: NOTIFY_SOCKET, LISTEN_FDS or WATCHDOG_USEC
 * (sd_notify(3), sd_listen_fds(3), sd_watchdog_enabled(3)).  Without
 * them libsystemd's calls do nothing and return 0, and so do these.
 *
 * Why not linked: on Debian 12, libsystemd (v252) brings libgcrypt,
 * libgpg-error, liblzma, liblz4 and libcap, ~900 symbol bindings and ~3 000
 * relocations ld.so processes at every start (~0.45 ms; docs/benchmarks.md).
 * A daemon under systemd, or one vxc starts (it waits on NOTIFY_SOCKET),
 * loads it as before; `vortexd --version`, a configuration check or a
 * daemon started by hand no longer pay for it.  systemd 256 and later load
 * libgcrypt, liblzma and liblz4 lazily themselves, for the same reason.
 *
 * Loop thread: the functions are loaded once, before the loop starts.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vxd.h"

/* libsystemd's soname: its ABI, stable since 2015 */
#define VXD_LIBSYSTEMD "libsystemd.so.0"

int vxd_systemd_load(vxd_systemd *sd, char *err, size_t errcap) {
  memset(sd, 0, sizeof *sd);
  if (!getenv("NOTIFY_SOCKET") && !getenv("LISTEN_FDS") && !getenv("WATCHDOG_USEC")) return 0;
  sd->lib = dlopen(VXD_LIBSYSTEMD, RTLD_NOW | RTLD_LOCAL);
  if (!sd->lib) {
    const char *why = dlerror();
    snprintf(err, errcap, "the service manager set NOTIFY_SOCKET, LISTEN_FDS or WATCHDOG_USEC, but %s",
             why ? why : "libsystemd.so.0 cannot be loaded");
    return -1;
  }
  /* function pointers from dlsym, as POSIX allows */
  *(void **)&sd->notify = dlsym(sd->lib, "sd_notify");
  *(void **)&sd->listen_fds = dlsym(sd->lib, "sd_listen_fds");
  *(void **)&sd->watchdog_enabled = dlsym(sd->lib, "sd_watchdog_enabled");
  if (!sd->notify || !sd->listen_fds || !sd->watchdog_enabled) {
    snprintf(err, errcap, "%s lacks sd_notify, sd_listen_fds or sd_watchdog_enabled", VXD_LIBSYSTEMD);
    vxd_systemd_close(sd);
    return -1;
  }
  return 0;
}

void vxd_systemd_close(vxd_systemd *sd) {
  if (sd->lib) dlclose(sd->lib);
  memset(sd, 0, sizeof *sd);
}

int vxd_sd_notify(const vxd_systemd *sd, const char *state) { return sd->notify ? sd->notify(0, state) : 0; }

int vxd_sd_notifyf(const vxd_systemd *sd, const char *fmt, ...) {
  if (!sd->notify) return 0;
  char state[4608];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(state, sizeof state, fmt, ap);
  va_end(ap);
  if (n < 0 || (size_t)n >= sizeof state) return -1;
  return sd->notify(0, state);
}

int vxd_sd_listen_fds(const vxd_systemd *sd) { return sd->listen_fds ? sd->listen_fds(1) : 0; }

int vxd_sd_watchdog_enabled(const vxd_systemd *sd, uint64_t *usec) {
  *usec = 0;
  return sd->watchdog_enabled ? sd->watchdog_enabled(0, usec) : 0;
}
