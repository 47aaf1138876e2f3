/*
 * vxd.h - vortexd internals shared by the files of daemon/ (not installed).
 *
 * vxd_main.c   command line, configuration, start-up
 * vxd_server.c the libuv loop: Unix-socket clients, the cache, worker pool
 * vxd_worker.c a compile worker process (blocking; no libuv)
 *
 * THREAD NOTES: the daemon is single-threaded (one libuv loop); compiles run
 * in separate worker processes, each with one warm vxl_compiler.
 */
#ifndef VXD_H
#define VXD_H

#include <stdint.h>

#include "vxl.h"
#include "vxp.h"

typedef struct {
  char socket_path[108]; /* Unix socket address (sun_path size) */
  char cache_dir[4096];
  char self_exe[4096];      /* this program, to start workers */
  unsigned workers;         /* compile worker processes */
  uint64_t max_cache_bytes; /* 0 = cache default */
  uint32_t max_frame;       /* largest request payload accepted (bytes) */
  unsigned job_timeout_s;   /* a compile taking longer kills its worker */
  unsigned idle_timeout_s;  /* exit after this long without clients; 0 = never */
  int verbose;
} vxd_config;

/* Runs the daemon until SIGINT/SIGTERM (or the idle timeout).  Returns the
 * process exit status: 0 clean, 1 start-up failure, 2 already running. */
int vxd_server_run(const vxd_config *cfg);

/* Runs a compile worker on stdin/stdout until EOF.  Returns the exit
 * status. */
int vxd_worker_run(void);

/* The lowering options of a compile request: what the worker compiles
 * with and what the daemon's cache key fingerprints (vxl_fingerprint), so
 * the two cannot disagree.  Any thread. */
void vxd_options_from_request(const vxp_request *req, vxl_options *o);

/* Version string reported in hello and folded into cache keys. */
#define VXD_SERVER_NAME "vortexd " VORTEXD_VERSION

#endif /* VXD_H */
