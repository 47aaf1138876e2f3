/*
 * vxk_remote.h - the cache's second level: entries in a Redis server, or
 * an HTTP(S) server (vxk_http.h), shared by several daemons (a build
 * farm), through hiredis or libcurl.
 *
 * A value in Redis is one encoded entry, the same bytes the worker wrote
 * and the local cache stores (protocol/vxp_entry.h).  Its Redis key is
 * "<prefix>:v<format>:<cache key>", so farms (prefixes) and entry formats
 * never mix; the cache key itself already names the daemon's version and
 * the toolchain.  This file moves bytes only: nothing read back is used
 * before vxk_entry_check found it whole, of its key, and (with a trust set)
 * signed (docs/remote-cache.md).
 *
 * Every call blocks, bounded by deadlines: a connection by connect_ms, a
 * read or write by op_ms over the whole exchange (not per system call, so a
 * server sending a byte at a time still times out), and a reply's size by
 * max_value.  After any failure the connection is closed and the caller
 * reconnects (vxk_remote_open) when it sees fit.
 *
 * THREAD NOTES: a vxk_remote is used by one thread at a time.
 *
 * Errors: the cache's convention (vxk.h), plus VXK_ETIMEDOUT.
 */
#ifndef VXK_REMOTE_H
#define VXK_REMOTE_H

#include <stddef.h>
#include <stdint.h>

#include "protocol/vxp_entry.h"
#include "vxk.h"

/* The entry format in the Redis keys: values of another format are never
 * read. */
#define VXK_REMOTE_FORMAT VXP_ENTRY_FORMAT
/* Longest key prefix (bytes). */
#define VXK_REMOTE_PREFIX_MAX 128

enum { VXK_ETIMEDOUT = -ETIMEDOUT }; /* a deadline passed; the connection is closed */

typedef struct {
  /* an HTTP(S) server (vxk_http.c): base and ca_file say
   * where, userpwd or bearer how; the Redis fields are unused, and leases
   * are not kept */
  int http;
  const char *base;    /* http(s)://HOST:PORT[/PATH] */
  const char *ca_file; /* NULL or "": the system's CAs */
  const char *userpwd; /* "USER:PASSWORD": basic authentication, or NULL */
  const char *bearer;  /* a bearer token, or NULL */
  /* Redis, where: a Unix socket when path[0], else host:port */
  const char *host;
  unsigned port;
  const char *path;
  const char *user;     /* "" or NULL: AUTH with the password alone */
  const char *password; /* "" or NULL: no AUTH */
  unsigned db;          /* SELECT'ed when not 0 */
  const char *prefix;   /* key namespace, [A-Za-z0-9_.:-]{1,128} */
  unsigned connect_ms;  /* connection (and AUTH/SELECT) deadline, milliseconds */
  unsigned op_ms;       /* deadline of one get/set exchange, milliseconds */
  uint64_t max_value;   /* largest value read (bytes); larger is an error */
  unsigned ttl_s;       /* expiry of written values, seconds; 0 = none */
} vxk_remote_config;

typedef struct vxk_remote vxk_remote;

/* True when prefix may name a namespace (see vxk_remote_config). */
int vxk_remote_prefix_valid(const char *prefix);

/* Loads the HTTP storage module (vortexd-http.so, at path module: libcurl
 * and what it loads, which a daemon without HTTP storage never maps) and
 * runs libcurl's process-wide set-up: once, before threads open an HTTP
 * storage (later calls return 0 at once; vxk_remote_open refuses one
 * before).  Returns 0, or VXK_EIO with a message in err (errcap bytes): no
 * such module, another version's, libcurl's set-up failed. */
int vxk_remote_http_load(const char *module, char *err, size_t errcap);

/* Connects to the server cfg names (copied), authenticates and selects the
 * database (Redis; an HTTP storage connects at its first exchange).  Returns 0 and *out (caller closes it),
 * VXK_ETIMEDOUT, VXK_EIO (refused, AUTH or SELECT failed), VXK_ENOMEM, VXK_EINVAL (bad prefix), with a
 * message in err (errcap bytes; never the password). */
int vxk_remote_open(const vxk_remote_config *cfg, vxk_remote **out, char *err, size_t errcap);
void vxk_remote_close(vxk_remote *r);

/* What a lookup that asked for a lease got (vxk_remote_value.lease). */
enum {
  VXK_LEASE_NONE = 0,  /* not asked, or the value was there */
  VXK_LEASE_TAKEN = 1, /* a miss, and the lease is the caller's now: it compiles */
  VXK_LEASE_OTHER = 2, /* a miss, and another owner holds the lease: its compile runs */
};

/* One value read back by vxk_remote_get. */
typedef struct {
  int rc;         /* 0, VXK_ENOTFOUND, VXK_EIO (reply too large or not a string) */
  uint8_t *value; /* rc 0: malloc(), caller frees */
  size_t size;    /* bytes */
  int lease;      /* rc VXK_ENOTFOUND with a lease asked for: VXK_LEASE_* */
} vxk_remote_value;

/* Leases on keys being compiled, so that a farm compiles each key once: a
 * lease is a Redis key "<prefix>:lease:<cache key>" holding its owner's
 * name, set only when absent (SET NX PX) and living ms milliseconds unless
 * renewed.  A lookup that asks for one reads the value (GETRANGE, as any
 * lookup) and, on a miss, runs a Lua script that reads it again and takes
 * the lease in one atomic step (a value written in between is returned,
 * not compiled again), so exactly one of the daemons that miss at once
 * gets VXK_LEASE_TAKEN, and a hit costs no more than without leases. */
typedef struct {
  const char *owner;         /* this daemon's name for its leases (at most 128 bytes) */
  unsigned ms;               /* a lease's life, milliseconds */
  const unsigned char *want; /* want[i] != 0: key i takes a lease on a miss */
} vxk_remote_lease;

/* Reads the values of n cache keys in one pipelined exchange (n <= 256),
 * filling out[0..n); the values kept total at most twice max_value bytes
 * (the ones past that are VXK_EIO).  With lease (may be NULL), the keys it
 * wants take a lease on a miss (out[i].lease).  Returns 0 when the
 * exchange completed (each out[i].rc says what its key gave), else
 * VXK_ETIMEDOUT / VXK_EIO / VXK_ENOMEM for all of them (values already
 * read are freed), message in err. */
int vxk_remote_get(vxk_remote *r, const char *const *keys, size_t n, const vxk_remote_lease *lease,
                   vxk_remote_value *out, char *err, size_t errcap);

/* Renews (ms > 0: for ms milliseconds more) or releases (ms == 0) the
 * leases of n cache keys (n <= 256) in one pipelined exchange, each only
 * while owner still holds it (a lease that expired and was taken by
 * another is left to it).  Returns 0, VXK_ETIMEDOUT, VXK_EIO, VXK_ENOMEM. */
int vxk_remote_lease_update(vxk_remote *r, const char *const *keys, size_t n, const char *owner, unsigned ms,
                            char *err, size_t errcap);

/* Writes value (size bytes) under key, with the configured expiry
 * (Redis: replacing what is there).  An HTTP storage asks first (HEAD)
 * unless replace, and sends nothing when the value is there already:
 * *written says whether it was sent.  Returns 0, VXK_ETIMEDOUT, VXK_EIO,
 * VXK_ENOMEM. */
int vxk_remote_set(vxk_remote *r, const char *key, const uint8_t *value, size_t size, int replace,
                   int *written, char *err, size_t errcap);

#endif /* VXK_REMOTE_H */
