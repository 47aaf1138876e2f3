/*
 * vxk_http.h - the cache's second level on an HTTP(S) server, through
 * libcurl (vxk_http.c), built as the module vortexd-http.so.  vxk_remote.c
 * loads it (vxk_remote_http_load) and calls these through its
 * vxk_http_ops for a remote storage of kind VXP_REMOTE_HTTP: its callers
 * see one interface (vxk_remote.h).
 *
 * THREAD NOTES: a vxk_http is used by one thread at a time;
 * global_init runs once, before any thread uses one.
 *
 * Errors: the cache's convention (vxk.h), plus VXK_ETIMEDOUT.
 */
#ifndef VXK_HTTP_H
#define VXK_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include "vxk_remote.h"

typedef struct {
  const char *base;    /* http(s)://HOST:PORT[/PATH], no trailing '/' */
  const char *prefix;  /* the farm's namespace: a path segment */
  unsigned format;     /* the entry format: a path segment "v<format>" */
  const char *ca_file; /* CA certificates (PEM); NULL or "": the system's */
  const char *userpwd; /* "USER:PASSWORD" for basic authentication, or NULL */
  const char *bearer;  /* a bearer token, or NULL */
  unsigned connect_ms, op_ms;
  uint64_t max_value; /* largest value read (bytes) */
} vxk_http_config;

typedef struct vxk_http vxk_http;

/* The module's calls, as vortexd-http.so exports them: one constant of
 * this type named VXK_HTTP_OPS_SYMBOL, whose abi is VXK_HTTP_ABI. */
typedef struct {
  unsigned abi;
  /* libcurl's global set-up: once per process, before threads use it.
   * Returns 0 or VXK_EIO. */
  int (*global_init)(void);
  /* A handle for the server cfg names (copied; no connection is made
   * until the first exchange).  Returns 0 and *out, or VXK_ENOMEM with
   * err set. */
  int (*open)(const vxk_http_config *cfg, vxk_http **out, char *err, size_t errcap);
  void (*close)(vxk_http *h);
  /* GETs the values of n keys, one after the other on the kept
   * connection, all within op_ms: as vxk_remote_get (no leases). */
  int (*get)(vxk_http *h, const char *const *keys, size_t n, vxk_remote_value *out, char *err, size_t errcap);
  /* PUTs value (size bytes) as key's resource: 0, VXK_ETIMEDOUT,
   * VXK_EIO.  Unless replace, a HEAD first: when the server already has
   * the resource (200), nothing is sent and *written is 0 (another daemon
   * wrote the same entry: its bytes depend on the key alone). */
  int (*put)(vxk_http *h, const char *key, const uint8_t *value, size_t size, int replace, int *written,
             char *err, size_t errcap);
} vxk_http_ops;

/* The version of vxk_http_ops a module and its loader agree on. */
#define VXK_HTTP_ABI 1u
#define VXK_HTTP_OPS_SYMBOL "vxk_http_ops_v1"

#endif /* VXK_HTTP_H */
