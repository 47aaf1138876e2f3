/*
 * vxd.h - vortexd internals shared by the files of daemon/ (not installed).
 *
 * vxd_main.c     command line, configuration, start-up
 * vxd_server.c   the libuv loop's lifecycle (vxd_loop.h lists the files of
 *                the loop: connections, requests, the worker pool, the
 *                store thread)
 * vxd_worker.c   a compile worker process (blocking; no libuv)
 *
 * THREAD NOTES: one libuv loop thread serves clients; the cache's writes
 * run on one store thread (vxd_store.c); compiles run in separate worker
 * processes, each with one warm vxl_compiler.
 */
#ifndef VXD_H
#define VXD_H

#include <stdint.h>
#include <sys/types.h>

#include <uv.h>

#include "cache/vxk.h"
#include "cache/vxk_sign.h"
#include "lowering/vxl.h"
#include "protocol/vxp.h"
#include "protocol/vxp_config.h"
#include "vxd_pieces.h"

typedef struct {
  char socket_path[108]; /* Unix socket address (sun_path size) */
  char cache_dir[4096];
  unsigned workers;             /* compile worker processes */
  uint64_t max_cache_bytes;     /* cache size limit (bytes) */
  uint32_t max_frame;           /* largest request frame accepted (bytes) */
  uint32_t max_source;          /* largest MLIR source in a compile (bytes) */
  unsigned job_timeout_s;       /* a compile taking longer kills its worker; 0 = never */
  unsigned idle_timeout_s;      /* exit after this long without clients; 0 = never */
  unsigned max_connections;     /* clients at once; more are refused */
  unsigned frame_timeout_s;     /* a started frame must be complete within this */
  unsigned conn_idle_timeout_s; /* an idle connection is closed; 0 = never */
  uint64_t max_unsent;          /* reply bytes a client may leave unread before
                                   its requests stop being read */
  uint64_t worker_memory;       /* RLIMIT_AS of a worker (bytes); 0 = none */
  unsigned piece_helpers;       /* helper threads one compile may borrow idle
                                   workers' cores for (vxd_pieces.h) */
  unsigned crash_memory_s;      /* an input that crashed a worker is refused at
                                   once for this long */
  uint64_t lru_resolution_us;   /* a read moves an entry's LRU time only when
                                   it is older than this (vxk_set_lru_resolution) */
  gid_t allowed_gid;            /* clients of this group may connect too; (gid_t)-1: none */
  char vortex_sdk[4096];        /* Vortex kernel SDK: kernels also linked into .vxbin
                                   images (cached with the object); "" = none */
  struct vxd_sdk *sdk;          /* what those images depend on, digested for the
                                   key (vxd_sdk_open); NULL without an SDK */
  char hostcc[4096];            /* the host's code generator, vortexd-hostcc
                                   (found at start); "" = none: host objects
                                   and bitcode are refused */
  char http_module[4096];       /* the HTTP storage module, vortexd-http.so
                                   (found at start); "" = none */
  uint32_t vortex_abi, xlen;    /* the target of requests that name none
                                   (the `target` key, vxp_target_parse) */
  int verbose;
  int log_level; /* lines above this priority are dropped (VXD_LOG_*; syslog's) */
  /* the process's argument strings (argv[0] up to the end of the last
   * one), which a worker overwrites with its own title so that ps shows
   * "vortexd-worker N", not the daemon's command line; NULL: left alone */
  char *title;
  size_t title_cap;
  /* the second cache level: a Redis server several daemons share */
  int remote_on;               /* remote_storage was set */
  vxp_remote_url remote;       /* where */
  int remote_read_only;        /* look up there, never write */
  char remote_prefix[129];     /* key namespace (vxk_remote_prefix_valid) */
  unsigned remote_ttl_s;       /* expiry of written values; 0 = none */
  unsigned remote_connect_ms;  /* connection deadline (milliseconds) */
  unsigned remote_timeout_ms;  /* deadline of one read or write (milliseconds) */
  unsigned remote_lease_ms;    /* life of a compile's lease unless renewed (milliseconds); 0 = none */
  uint64_t remote_write_queue; /* bytes of writes queued at most; more are dropped */
  vxp_remote_credentials remote_credentials; /* HTTP(S) storage: basic or bearer (none: both "") */
  char remote_ca_file[4096];                 /* HTTP(S) storage: CA certificates; "" = the system's */
  vxk_signer *remote_signer;                 /* signs what is written there (NULL: unsigned) */
  vxk_trust *remote_trust;                   /* NULL, or only values one of these keys signed are used */
} vxd_config;

/* The persistent counters, by their names in the cache (vxk_counter_add):
 * what the loop counts and hands to the store thread every second. */
/* The counts the daemon gathers and hands to the cache: its persistent
 * counters (VXP_PERSISTENT_COUNTERS; evictions the store counts itself). */
#define VXD_COUNTERS(X) VXP_PERSISTENT_COUNTERS(X)

typedef struct {
#define VXD__COUNT_FIELD(name) int64_t name;
  VXD_COUNTERS(VXD__COUNT_FIELD)
#undef VXD__COUNT_FIELD
} vxd_counts;

/* ---- vxd_systemd.c: the service manager's notifications, activation and
 * watchdog, through libsystemd loaded when they are asked for ---- */

typedef struct {
  void *lib; /* dlopen's handle; NULL: not under a service manager */
  int (*notify)(int unset_environment, const char *state);
  int (*listen_fds)(int unset_environment);
  int (*watchdog_enabled)(int unset_environment, uint64_t *usec);
} vxd_systemd;

/* Loads libsystemd's sd_notify, sd_listen_fds and sd_watchdog_enabled into
 * *sd when the environment holds NOTIFY_SOCKET, LISTEN_FDS or
 * WATCHDOG_USEC; else leaves *sd empty, and the calls below then do what
 * libsystemd's do without those variables: nothing, returning 0.  Returns 0,
 * or -1 with a message in err (a variable is set but libsystemd.so.0 or one
 * of its functions is missing).  Before the loop starts; release with
 * vxd_systemd_close. */
int vxd_systemd_load(vxd_systemd *sd, char *err, size_t errcap);
void vxd_systemd_close(vxd_systemd *sd);

/* sd_notify(0, state) (sd_notify(3)); vxd_sd_notifyf formats the state
 * first (at most 4 KiB; -1 beyond). */
int vxd_sd_notify(const vxd_systemd *sd, const char *state);
int vxd_sd_notifyf(const vxd_systemd *sd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* sd_listen_fds(1): the number of sockets passed by socket activation,
 * from SD_LISTEN_FDS_START, the variables then unset (sd_listen_fds(3)). */
int vxd_sd_listen_fds(const vxd_systemd *sd);

/* sd_watchdog_enabled(0, usec): > 0 and *usec (microseconds) when the
 * service manager expects a ping every *usec (sd_watchdog_enabled(3)). */
int vxd_sd_watchdog_enabled(const vxd_systemd *sd, uint64_t *usec);

/* ---- vxd_sdk.c: what a linked image depends on ---- */

typedef struct vxd_sdk vxd_sdk;

/* Most tool files (libraries, the linker) one SDK digest covers. */
#define VXD_SDK_MAX_TOOLS 8

/* Digests the Vortex SDK in dir (its link.ld, objects and archives, as
 * vxr_sdk_inputs lists them) and the ntools files at tools (at most
 * VXD_SDK_MAX_TOOLS: the libc and libgcc archives images link with, the
 * linker itself): one SHA-256 over each file's base name, size and bytes,
 * so a changed tool gives new keys as a changed SDK does.  Returns 0 and
 * *out (vxd_sdk_close), or a negative errno with a message in err (a file
 * that cannot be read). */
int vxd_sdk_open(const char *dir, const char *const *tools, int ntools, vxd_sdk **out, char *err,
                 size_t errcap);

/* Digests s's files again if one of them was replaced, added, removed or
 * modified since (by device, inode, size and modification time).  Returns
 * 1 when the digest changed, 0 when not, or a negative errno (a file could
 * not be read: the digest stays).  The loop thread. */
int vxd_sdk_refresh(vxd_sdk *s);

/* The current digest: 64 hex digits. */
const char *vxd_sdk_digest(const vxd_sdk *s);
void vxd_sdk_close(vxd_sdk *s);

/* Exit status of a daemon that stopped but found its own fault on the way
 * out (a libuv handle left open: a leak), sysexits.h's EX_SOFTWARE. */
#define VXD_EXIT_SOFTWARE 70

/* Runs the daemon until SIGINT/SIGTERM (or the idle timeout).  Returns the
 * process exit status: 0 clean, 1 start-up failure, 2 already running,
 * VXD_EXIT_SOFTWARE stopped with handles left open. */
int vxd_server_run(const vxd_config *cfg);

/* A recoverable assertion, as Knot Resolver's kr_fails_assert: 0 when
 * cond holds; else it says "internal error: assertion COND failed at
 * FILE:LINE" on stderr and evaluates to 1, so the caller takes its
 * recovery path (closes the connection, fails the request) instead of
 * going on with a broken invariant; in a build with assertions (no
 * NDEBUG: every test build) it aborts there.  Any thread. */
#define vxd_fails_assert(cond) ((cond) ? 0 : vxd__assert_failed(#cond, __FILE__, __LINE__))
int vxd__assert_failed(const char *cond, const char *file, int line);

/* A worker's exit status after LLVM reported a fatal error: it answered
 * the request in flight ("internal") first; the daemon remembers that
 * input as one that crashes workers. */
#define VXD_WORKER_EXIT_FATAL 70

/* Runs a compile worker on stdin/stdout until EOF with compiler c (which
 * it owns from then on: a forked copy of the daemon's template), lending
 * helper threads cores through cores as the worker in slot `slot`.
 * Returns the exit status.  The worker process's main thread. */
int vxd_worker_serve(vxl_compiler *c, const vxd_config *cfg, vxd_cores *cores, unsigned slot);

/* The lowering options of a compile request: what the worker compiles
 * with and what the daemon's cache key fingerprints (vxl_fingerprint), so
 * the two cannot disagree; a request that names no target gets cfg's.
 * Any thread. */
void vxd_options_from_request(const vxd_config *cfg, const vxp_request *req, vxl_options *o);

/* The cache key of source compiled with options o: SHA-256 (vxk_key) over
 * this daemon's version, the lowering's fingerprint of o (everything that
 * changes a compile's output, which only the lowering knows), the digest
 * of what the images are linked from when cfg has a Vortex SDK (entries
 * then hold .vxbin images; vxd_sdk_digest: contents, not paths) and
 * the file name the object's debug info gives the source
 * (vxl_debug_file_name of source_name: its last component, never a
 * directory) and the source bytes.  The rest of source_name is left out on
 * purpose: it changes diagnostics only (not cached), and keeping it out
 * lets the same file compiled from two directories or by two users share
 * one entry, byte for byte (ccache's path problem).  Returns 0 or a VXK
 * error.  Any thread. */
int vxd_cache_key(const vxd_config *cfg, const vxl_options *o, const char *source_name, const uint8_t *source,
                  size_t len, char key[VXK_KEY_HEX + 1]);

/* The cache key of one piece of a module (vxd_pieces.h) compiled with o
 * from inputs (len bytes: vxl_piece_inputs) of a source named
 * source_name: vxd_cache_key's parts, and one more that no module's key
 * has.  Returns 0 or a VXK error.  Any thread. */
int vxd_piece_key(const vxd_config *cfg, const vxl_options *o, const char *source_name, const char *inputs,
                  size_t len, char key[VXK_KEY_HEX + 1]);

/* Bytes of the options text an entry records (vxd_cache_origin). */
#define VXD_OPTIONS_MAX 2048

/* What vxd_cache_key hashes besides the source, as text, one part a line
 * (the daemon's name and version; the lowering's fingerprint, its items
 * separated by ';'; "debug-file=NAME"; "vortex-sdk=DIGEST" with an SDK):
 * kept beside an entry (vxk_inputs) and compared by `vxc explain`.
 * malloc(); NULL when out of memory.  Any thread. */
char *vxd_key_inputs(const vxd_config *cfg, const vxl_options *o, const char *source_name);

/* What vxd_cache_key keys besides the source bytes, as text: source (its
 * file name in the key, which the cache lists beside the entry) and
 * options (the lowering's fingerprint of o, which the entry holds; "" if
 * it does not fit).  Any thread. */
void vxd_cache_origin(const vxl_options *o, const char *source_name, char source[VXL_DEBUG_FILE_MAX + 1],
                      char options[VXD_OPTIONS_MAX]);

/* ---- vxd_store.c: the cache's write path on its own thread ---- */

typedef struct vxd_store vxd_store;
typedef struct vxd_pending vxd_pending;

/* Opens a second handle on the cache in cache_dir (max_bytes as vxk_open;
 * LRU times written at lru_resolution_us, vxk_set_lru_resolution) and
 * starts the store thread; failures of queued jobs are reported to
 * log(log_ud, message) on the loop thread.  Returns 0 and *out, or a
 * negative errno (vxk_open's, -ENOMEM, -EAGAIN: no thread) with a message
 * in err (errcap bytes).  Loop thread. */
int vxd_store_open(uv_loop_t *loop, const char *cache_dir, uint64_t max_bytes, uint64_t lru_resolution_us,
                   void (*log)(void *, const char *), void *log_ud, vxd_store **out, char *err,
                   size_t errcap);

/* Queues the encoded entry (size bytes; moved into the store on success)
 * for storing under key (vxk_put: compile_us, what compiling took in
 * microseconds; source_name, copied, may be NULL), and returns at once.
 * With share, the entry is handed to the written hook once written (to
 * be shared); an entry that came from the remote level is not.  inputs
 * (NULL when not known: an entry from the remote level) is moved too, and
 * stored beside the entry (vxk_put).  Returns 0, or -ENOMEM (nothing
 * queued; entry and inputs still the caller's). */
/* What a compile's key was derived from (vxk_inputs), handed to
 * vxd_store_put with the entry: parts and lines malloc(), moved. */
typedef struct {
  char *parts;
  uint8_t *lines;
  size_t lines_size;
} vxd_store_inputs;

int vxd_store_put(vxd_store *st, const char *key, uint8_t *entry, size_t size, uint64_t compile_us,
                  const char *source_name, int share, vxd_store_inputs *inputs);

/* What a listing found (vxd_store_list): entries moved to the callee,
 * which frees them with vxk_info_clear(entries, n). */
typedef struct {
  int rc;        /* 0 or a VXK error */
  char err[256]; /* message when rc != 0 */
  vxk_info *entries;
  uint32_t n;
  uint64_t matched; /* entries the prefix matches (may exceed n) */
} vxd_list_result;

/* Queues a listing of the entries whose key starts with prefix (vxk_list,
 * after the read counts queued before it are written); done(ud, result)
 * runs on the loop thread once it finished.  Returns 0, or -ENOMEM
 * (nothing queued). */
int vxd_store_list(vxd_store *st, const char *prefix, uint32_t limit,
                   void (*done)(void *ud, vxd_list_result *r), void *ud);

/* What an explanation found (vxd_store_explain), moved to the callee,
 * which frees rows with vxk_inputs_clear(rows, n). */
#define VXD_EXPLAIN_CANDIDATES 3u
typedef struct {
  int rc;               /* 0 or a VXK error */
  char err[256];        /* message when rc != 0 */
  int hit;              /* the cache holds the key */
  uint64_t lines;       /* lines of the compile's source */
  vxk_inputs_row *rows; /* the latest entries of the source name */
  uint32_t n;
  uint64_t first_line[VXD_EXPLAIN_CANDIDATES]; /* per row: the first line its
                                                  source differs at, 0 the
                                                  same (or no record) */
  uint64_t row_lines[VXD_EXPLAIN_CANDIDATES];  /* per row: its source's lines */
} vxd_explain_result;

/* Queues an explanation of a compile whose key is key and came from
 * inputs (vxd_key_inputs; copied) and source (len bytes, moved: freed by
 * the store), on the store thread after every write queued before it:
 * whether the cache holds key and, when not, the VXD_EXPLAIN_CANDIDATES
 * entries of source_name (the name in the key) closest to it among its
 * latest, with their inputs and the first line at which their source
 * differs.  done(ud, result) runs on the loop thread.  Returns 0, or
 * -ENOMEM (nothing queued; source still the caller's). */
int vxd_store_explain(vxd_store *st, const char *key, const char *source_name, const char *inputs,
                      uint8_t *source, size_t len, void (*done)(void *ud, vxd_explain_result *r), void *ud);

/* Called on the loop thread after each entry queued by vxd_store_put with
 * share was written to the cache (or failed to be), handing over its
 * bytes: the callee owns entry (size bytes) from then on. */
typedef void (*vxd_store_written_fn)(void *ud, const char *key, uint8_t *entry, size_t size);
void vxd_store_on_written(vxd_store *st, vxd_store_written_fn fn, void *ud);

/* Called on the loop thread after each flush of counts (vxd_store_flush):
 * unwritten NULL when they were written, else the counts, none of which
 * was written (a full disk), handed back with the reason, for the caller
 * to keep and flush again. */
typedef void (*vxd_store_counts_fn)(void *ud, const vxd_counts *unwritten, const char *why);
void vxd_store_on_counts(vxd_store *st, vxd_store_counts_fn fn, void *ud);

/* Called on the loop thread, with the reason, when a job found the
 * database file itself damaged (VXK_EDAMAGED): every later job will fail
 * too until the cache is closed, discarded and opened anew.  The callee
 * must not close st from inside the call. */
void vxd_store_on_damaged(vxd_store *st, void (*fn)(void *ud, const char *why), void *ud);

/* Queues the deletion of key's entry, which failed its checksum on a read,
 * and counts it as corrupt (once: the store thread deletes it only while it
 * still fails).  Returns 1 when queued, 0 when a deletion of key is already
 * queued (the same damage read twice) or out of memory (every read keeps
 * refusing the entry). */
int vxd_store_drop(vxd_store *st, const char *key);

/* Whole-cache operations, run on the store thread in queue order. */
typedef enum {
  VXD_ADMIN_VERIFY, /* check every entry's checksum, drop the bad ones */
  VXD_ADMIN_CLEAR,  /* delete every entry */
  VXD_ADMIN_PRUNE,  /* evict least recently used entries down to arg bytes */
  VXD_ADMIN_ZERO,   /* reset the persistent counters */
  VXD_ADMIN_REMOVE, /* delete the entry whose key is key (one entry) */
} vxd_admin_op;

typedef struct {
  int rc;           /* 0 or a VXK error */
  char err[256];    /* message when rc != 0 */
  uint64_t checked; /* entries read (verify) */
  uint64_t removed; /* entries deleted */
} vxd_admin_result;

/* Queues op; done(ud, result) runs on the loop thread once it finished
 * (not at all if the store closes first: it drains its queue on close, so
 * only a failure to allocate loses it, reported by -ENOMEM here). */
int vxd_store_admin(vxd_store *st, vxd_admin_op op, uint64_t arg,
                    void (*done)(void *ud, const vxd_admin_result *r), void *ud);

/* Queues the deletion of the entry for key (VXD_ADMIN_REMOVE): done as
 * vxd_store_admin's, r->removed 1 or 0 (there was none). */
int vxd_store_remove(vxd_store *st, const char *key, void (*done)(void *ud, const vxd_admin_result *r),
                     void *ud);

/* Queues the persistent counter deltas and the LRU times of the entries
 * `reader` (the loop's read handle) recorded as read (taken from it now). */
void vxd_store_flush(vxd_store *st, vxk_cache *reader, const vxd_counts *delta);

/* A copy of the queued, not yet written entry for key, as vxk_get would
 * return it.  Returns VXK_OK (caller clears *out), VXK_ENOTFOUND,
 * VXK_ENOMEM. */
int vxd_store_pending(const vxd_store *st, const char *key, vxk_entry *out);

/* Waits until everything queued so far is written (stats answer from the
 * database after this).  Blocks the loop thread meanwhile. */
void vxd_store_drain(vxd_store *st);

/* Finishes the jobs the store thread has done, now rather than when the
 * loop next runs its async callback: logs failures, runs the admin
 * callbacks and the written hook.  Loop thread. */
void vxd_store_reap(vxd_store *st);

/* Waits until everything queued is written and keeps the store thread
 * parked (waiting, holding no lock) until vxd_store_resume: what a fork
 * needs, so the child inherits no lock held mid-operation (an allocator's,
 * SQLite's).  Nothing may be queued in between.  Loop thread. */
void vxd_store_pause(vxd_store *st);
void vxd_store_resume(vxd_store *st);

/* Writes what is queued, stops the thread, closes its handle; st is freed
 * once the loop has run the async handle's close.  Loop thread. */
void vxd_store_close(vxd_store *st);

/* ---- vxd_remote.c: the shared second level, on threads of its own ---- */

typedef struct vxd_remote vxd_remote;

/* A lookup's completion, on the loop thread: e is the entry found (its
 * bytes as stored there, which passed vxk_entry_check with the configured
 * trust; compile_us 0: not known), which the callee may move out of (the
 * caller clears what is left), or NULL when there was none to use (a miss,
 * a failure, a damaged or untrusted value: each counted where it
 * happened).  leased: a miss whose lease this daemon now holds (the farm
 * waits for its compile): the caller compiles and then calls
 * vxd_remote_put (a value) or vxd_remote_lease_end. */
typedef void (*vxd_remote_done_fn)(void *ud, const char *key, vxk_entry *e, int leased);

/* Starts the remote level's reader and writer threads for cfg (remote_on
 * set; copied), without connecting yet (the first lookup or write does).
 * log(ud, level, line) reports state changes on the loop thread: one line
 * when the storage becomes unreachable, one when it is back, not one per
 * request.  Returns 0 and *out, or -ENOMEM / -EAGAIN (no thread) with a
 * message in err.  Loop thread. */
int vxd_remote_open(uv_loop_t *loop, const vxd_config *cfg, void (*log)(void *, int, const char *), void *ud,
                    vxd_remote **out, char *err, size_t errcap);

/* Queues a lookup of key; done(ud, ...) runs later on the loop thread.
 * lease (a compile's lookup, with remote_lease set and not read-only): a
 * miss takes the key's lease for this daemon, and a key another daemon
 * holds the lease on is waited for (its value, or its lease's end, or
 * job_timeout) before done runs.  Returns 0 when queued, or -EAGAIN when
 * the storage is backing off after a failure or too many lookups are
 * waiting (the caller goes on without it: a compile, not a wait),
 * -ENOMEM.  Loop thread. */
int vxd_remote_lookup(vxd_remote *rm, const char *key, int lease, vxd_remote_done_fn done, void *ud);

/* The compile of a key whose lease this daemon holds has ended.
 * will_share: its entry goes to the store, whose written hook calls
 * vxd_remote_put, which writes the value and then releases the lease
 * (until then it is no longer renewed, so it expires if the put never
 * comes); else the lease is released now, and a daemon waiting for it
 * compiles.  Loop thread. */
void vxd_remote_lease_end(vxd_remote *rm, const char *key, int will_share);

/* Queues writing the encoded entry (size bytes, owned from then on, as
 * the store's written hook hands it over) to the storage under key, and
 * returns at once.  In read-only mode nothing is written; past
 * remote_write_queue bytes, or while the storage is backing off, the
 * write is dropped and counted.  Loop thread. */
void vxd_remote_put(vxd_remote *rm, const char *key, uint8_t *entry, size_t size);

/* Milliseconds stopping may spend on writes still queued (the daemon's
 * last entries, so that the shared level has them and the cache counts them). */
#define VXD_REMOTE_STOP_MS 2000

/* Waits (blocking the loop) until the writes queued so far are done, for
 * at most timeout_ms milliseconds: what `stats` and stopping do to report
 * them. */
void vxd_remote_drain(vxd_remote *rm, unsigned timeout_ms);

/* As vxd_store_pause/resume, for a fork: both threads finish what is
 * queued and park, holding no lock, until vxd_remote_resume.  With the
 * storage unreachable this takes at most about two remote_timeouts (the
 * first failure answers or drops the rest at once).  Loop thread. */
void vxd_remote_pause(vxd_remote *rm);
void vxd_remote_resume(vxd_remote *rm);

/* Adds the counts (l2_*) since the last call to *delta and restarts them. */
void vxd_remote_take_counts(vxd_remote *rm, vxd_counts *delta);

/* Writes where the storage is (password masked) and its state into out:
 * "redis://h:6379/0, up", "..., read-only, down: connect: Connection
 * refused (retry in 4 s)". */
void vxd_remote_describe(vxd_remote *rm, char *out, size_t cap);

/* Finishes the lookups in flight (their callbacks run), writes what is
 * queued within one remote_timeout each, stops the threads.  rm is freed
 * once the loop has closed its handle.  Loop thread. */
void vxd_remote_close(vxd_remote *rm);

/* ---- vxd_hot.c: encoded replies of recent compile hits ---- */

typedef struct vxd_hot vxd_hot;
#define VXD_HOT_SLOTS 4096u           /* hash slots: at most half hold replies */
#define VXD_HOT_MAX_BYTES (32u << 20) /* reply bytes kept */

/* A table keeping up to max_bytes of encoded replies (one reply over a
 * quarter of that is never kept).  NULL when out of memory. */
vxd_hot *vxd_hot_create(size_t max_bytes);
void vxd_hot_destroy(vxd_hot *h);
/* The encoded compile-hit reply for key (borrowed; valid until the next
 * vxd_hot_put), or NULL; marks it recently used. */
const uint8_t *vxd_hot_get(vxd_hot *h, const char *key, size_t *len, uint64_t *compile_us);
/* Keeps a copy of the encoded reply for key, and what compiling its entry
 * took (microseconds, what a hit saves), evicting the least recently used
 * ones to make room.  Out of memory: nothing kept. */
void vxd_hot_put(vxd_hot *h, const char *key, const uint8_t *frame, size_t len, uint64_t compile_us);
/* Forgets every reply (the cache was cleared or pruned). */
void vxd_hot_clear(vxd_hot *h);

/* Version string reported in hello and folded into cache keys. */
#define VXD_SERVER_NAME "vortexd " VORTEXD_VERSION

#endif /* VXD_H */
