/*
 * vxc.h - libvxc, the blocking client library of vortexd.
 *
 * A runtime or build tool links libvxc to compile kernels through the daemon,
 * fetch cached kernels by key, and pack a kernel's argument buffer at launch
 * time from the metadata the daemon returns.  Depends on protocol/ only.
 *
 * THREAD NOTES: a vxc_conn is used by one thread at a time; open one
 * connection per thread.  Every call blocks until the daemon answers.
 *
 * Errors: 0 on success, else a negative errno value (-ECONNREFUSED,
 * -ENOENT: no daemon at that path; -EPROTO: the daemon sent a malformed
 * frame; -EMSGSIZE: a frame over the limit; -ENOMEM...).  A request the
 * daemon answered is a success even if it failed at the daemon: look at
 * resp->status (compile errors come back as VXP_STATUS_COMPILE_ERROR with
 * diagnostics).
 */
#ifndef VXC_H
#define VXC_H

#include <stddef.h>
#include <stdint.h>

#include "vxc_version.h"
#include "vxp.h"
#include "vxp_paths.h"

/* The version of the library a program runs against ("0.1.0"), which may
 * be newer than the headers it was built with (VXC_VERSION_STRING).
 * Static string; any thread. */
const char *vxc_version(void);

typedef struct vxc_conn vxc_conn;

/* Connects to the daemon at path (NULL: vxp_client_socket_path,
 * vxp_paths.h).  No
 * round trip: every request carries the protocol version, which the daemon
 * checks (a daemon that speaks another answers each request with
 * VXP_STATUS_BAD_REQUEST saying so).  The daemon must run as the caller's
 * effective uid or root, or listen in a root-owned directory nobody else
 * can write (a system service's); checked with SO_PEERCRED.  Returns 0 and
 * *out (caller owns; vxc_close), -ECONNREFUSED / -ENOENT when no daemon
 * listens at path, -EACCES when the one there is not trusted. */
int vxc_connect(const char *path, vxc_conn **out);

/* Like vxc_connect, but when no daemon answers starts one (the vortexd
 * program given, or "vortexd" found beside the calling program or on PATH)
 * and waits up to timeout_ms for it.  Concurrent callers serialize on a lock
 * file beside the socket, so many vxc starting at once start one daemon.
 * Before starting one, the socket's directory must pass
 * vxp_runtime_dir_open (ours, mode 0700, not a symbolic link; created when
 * missing) and the lock and log files in it are opened without following
 * symbolic links.  The started daemon gets NOTIFY_SOCKET=PATH.notify, a
 * datagram socket there, and the caller wakes on its READY=1 (sd_notify,
 * systemd's readiness protocol) rather than trying the socket on a timer
 * (it still tries it every 10 ms, for a daemon another caller started).
 * Returns -ECHILD when the started daemon exited at once (its stderr is in
 * PATH.log beside the socket; a program that cannot be run says so there),
 * -EPERM / -ELOOP when the directory is not private (vxp_runtime_dir_open
 * explains).  Any thread: the started program's environment is built
 * before the fork. */
int vxc_connect_or_spawn(const char *path, const char *vortexd_program, int timeout_ms, vxc_conn **out);

void vxc_close(vxc_conn *c);

/* The daemon's hello answer (server string, limits), asked for on the
 * first call (one round trip); borrowed from c.  NULL when the daemon did
 * not answer or speaks another protocol version. */
const vxp_response *vxc_server_info(vxc_conn *c);

/* Compiles MLIR source (len bytes) named source_name (for diagnostics).
 * opts may be NULL (O2, no IR, 4 threads per warp, Vortex 2.x on RV32).  Fills *resp (caller
 * clears it with vxp_response_clear). */
typedef struct {
  uint32_t opt_level;   /* 0..3 */
  int emit_ir;          /* nonzero: also return the lowered MLIR */
  uint32_t warp_size;   /* threads per warp of the target (subgroup size):
                           a power of two 1..32; 0 = vortexd's default, 4 */
  int shuffle_insns;    /* nonzero: gpu.shuffle through Vortex's shuffle
                           instructions (devices that have them) */
  uint32_t vortex_abi;  /* the device's Vortex kernel ABI, 2 (2.x) or 3
                           (3.0's hardware scheduler); 0 = 2 */
  uint32_t xlen;        /* the device's register width, 32 or 64; 0 = 32 */
  vxp_cache_mode cache; /* VXP_CACHE_USE (0: answered from the cache when
                           it can be), VXP_CACHE_RECACHE (compiled again,
                           the entry replaced) or VXP_CACHE_BYPASS
                           (compiled, the cache neither read nor written) */
} vxc_compile_options;
int vxc_compile(vxc_conn *c, const void *source, size_t len, const char *source_name,
                const vxc_compile_options *opts, vxp_response *resp);

/* Asks whether compiling source with opts (as vxc_compile takes them)
 * would be answered from the daemon's local cache, without compiling or
 * counting a use: resp->cached, resp->key (the key it would have),
 * resp->key_inputs (what that key is derived from besides the source, one
 * part a line), resp->source_lines and, for a miss, resp->candidates: the
 * most recently used entries of the same source name, each with its own
 * inputs and the first line at which its source differs (`vxc explain`).
 * Returns as vxc_compile. */
int vxc_explain(vxc_conn *c, const void *source, size_t len, const char *source_name,
                const vxc_compile_options *opts, vxp_response *resp);

/* What vxc_lower_host returns besides the host module's text. */
enum {
  VXC_HOST_IR = 0,      /* the text alone (resp->host_ir) */
  VXC_HOST_OBJECT = 1,  /* and an object file for the host, to link */
  VXC_HOST_BITCODE = 2, /* and LLVM bitcode, for a JIT (lli-22) */
};

/* Lowers the host side of a whole GPU-dialect program (len bytes of MLIR)
 * for libvortexd_runtime: resp->host_ir is the program in the LLVM dialect,
 * its gpu.modules turned into gpu.binary ops the runtime loads through
 * vortexd (docs/PROTOCOL.md, "host"); with host_form VXC_HOST_OBJECT,
 * resp->object is also that host side compiled for the host, to link into
 * a program; with VXC_HOST_BITCODE it is the host side as LLVM bitcode
 * (LLVM's O0 pipeline run), what `vxc run` gives lli-22.  Returns as
 * vxc_compile (-EINVAL for another host_form). */
int vxc_lower_host(vxc_conn *c, const void *source, size_t len, const char *source_name, int host_form,
                   vxp_response *resp);

/* vxc_lower_host with the options every module of the program is compiled
 * with (opts NULL: as vxc_compile's NULL): the target, warp size,
 * optimization level and shuffle instructions are written into each
 * gpu.binary's object (a "// vortexd-options:" line), and the runtime
 * sends them with every compile of that module, so that neither the
 * daemon's defaults nor another daemon's decide them at run time. */
int vxc_lower_host_with(vxc_conn *c, const void *source, size_t len, const char *source_name, int host_form,
                        const vxc_compile_options *opts, vxp_response *resp);

/* vxc_lower_host_with for a JIT, as `vxc run` runs a program: resp->object
 * is the host side as LLVM bitcode with one more function, VXP_RUN_ENTRY
 * (i32 ()), that calls entry (a function of the program without
 * arguments; NULL: main), prints its result as mlir-runner's
 * --entry-point-result does and returns 0; `lli-22
 * --entry-function=` VXP_RUN_ENTRY runs it.  An entry the program does not
 * define, or of another type, is a compile error (resp->message).
 * Returns as vxc_compile (-EINVAL for an entry name the protocol does not
 * take: 1..VXP_MAX_ENTRY_NAME bytes of [A-Za-z0-9_.$]). */
int vxc_lower_host_run(vxc_conn *c, const void *source, size_t len, const char *source_name,
                       const vxc_compile_options *opts, const char *entry, vxp_entry_result result,
                       vxp_response *resp);

/* The vortexd program vxc_connect_or_spawn starts: "vortexd" beside the
 * running program, when there is one, into buf (cap bytes); "" when there
 * is none (then it runs "vortexd" from PATH).  Any thread. */
void vxc_daemon_program(char *buf, size_t cap);

/* Fetches the cached entry key (64 hex digits; vxc_resolve_key finds it
 * from a prefix); kernel NULL for all. */
int vxc_fetch(vxc_conn *c, const char *key, const char *kernel, vxp_response *resp);

/* The cache mode the environment asks every compile of this process for,
 * as ccache's CCACHE_DISABLE and CCACHE_RECACHE do: VORTEXD_DISABLE set
 * (to anything but "", 0, false, no or off) is VXP_CACHE_BYPASS, else
 * VORTEXD_RECACHE so set is VXP_CACHE_RECACHE, else VXP_CACHE_USE.  What
 * vxc and libvortexd_runtime put in vxc_compile_options.cache.  Any
 * thread. */
vxp_cache_mode vxc_cache_mode_from_env(void);

/* How one compile request was answered, as a stats log records it:
 * from the cache (either level), by a compile of its own, by joining the
 * same compile another request had started, with diagnostics, or not at
 * all (the daemon failed or could not be reached). */
typedef enum {
  VXC_OUTCOME_HIT = 0,
  VXC_OUTCOME_MISS = 1,
  VXC_OUTCOME_JOINED = 2,
  VXC_OUTCOME_ERROR = 3,
  VXC_OUTCOME_FAILED = 4,
} vxc_outcome;
#define VXC_OUTCOMES 5

/* "hit", "miss", "joined", "error" or "failed"; NULL for another value. */
const char *vxc_outcome_name(vxc_outcome o);

/* The outcome of a compile that returned rc and filled resp. */
vxc_outcome vxc_compile_outcome(int rc, const vxp_response *resp);

/* Longest line a stats log holds (bytes, its newline included). */
#define VXC_STATS_LOG_LINE_MAX 320

/* Per-build statistics, as ccache's stats_log keeps them: a build sets
 * VORTEXD_STATS_LOG to a file of its own, and every vxc_compile of every
 * client of that build (vxc, the runtime, the MLIR plugin) appends one
 * line "OUTCOME KEY12 SOURCE\n" to it (KEY12 the key's first 12 hex
 * digits or "-", SOURCE the source name with blanks and control bytes as
 * '?'), in one write(2) on an O_APPEND descriptor, so the lines of
 * parallel compiles do not mix.  vxc_compile calls it itself when
 * VORTEXD_STATS_LOG is set and ignores its failures.  The file is created
 * with mode 0600; anything but a regular file is refused (-EINVAL, a FIFO
 * without blocking).  Returns 0 or a negative errno.  Any thread. */
int vxc_stats_log_append(const char *path, vxc_outcome outcome, const char *key, const char *source_name);

/* What a stats log counts: lines per outcome (indexed by vxc_outcome),
 * and lines that are none of them (another program's, or cut short). */
typedef struct {
  uint64_t count[VXC_OUTCOMES];
  uint64_t unreadable;
} vxc_log_stats;

/* Counts the lines of the stats log at path into *out (`vxc log-stats`),
 * reading one bounded line at a time.  Returns 0, -EINVAL (not a regular
 * file), or a negative errno (-ENOENT: no log yet).  Any thread. */
int vxc_stats_log_read(const char *path, vxc_log_stats *out);

/* Deletes the cache entry key (64 hex digits; vxc_resolve_key finds it
 * from a prefix) from the daemon's local cache (not from a shared level):
 * resp->removed is 1, or 0 when there was none.  Returns as vxc_compile;
 * -EINVAL for a key that is not 64 lowercase hex digits. */
int vxc_remove(vxc_conn *c, const char *key, vxp_response *resp);

/* Daemon counters in resp->stats. */
int vxc_stats(vxc_conn *c, vxp_response *resp);

/* Describes the cache entries whose key starts with prefix (0..64
 * lowercase hex digits; NULL for all), most recently used first:
 * resp->entries (at most limit, 1..VXP_MAX_LIST_ENTRIES; 0 asks for 100)
 * and resp->checked, how many the prefix matches.  Every entry's key is
 * checked to be one that prefix names (else -EPROTO).  Returns as
 * vxc_compile; -EINVAL for a bad prefix or limit. */
int vxc_list(vxc_conn *c, const char *prefix, uint32_t limit, vxp_response *resp);

/* Fewest hex digits a key prefix must have (as git asks of an object name). */
#define VXC_MIN_KEY_PREFIX 4

/* Finds the one cache key that starts with prefix (VXC_MIN_KEY_PREFIX..64
 * lowercase hex digits), as git resolves an abbreviated object name.
 * Returns 0 with key filled, -EINVAL (not such a prefix), -ENOENT (no
 * entry), -ENOTUNIQ (several: *matched says how many), -EIO (the daemon
 * refused the request), or a transport error as vxc_compile.  With listing
 * not NULL, a success also leaves there the list reply it was found in
 * (its one entry's description; caller clears it with vxp_response_clear). */
int vxc_resolve_key(vxc_conn *c, const char *prefix, char key[65], uint64_t *matched, vxp_response *listing);

/* An administration request: VXP_OP_VERIFY (check every entry, drop the
 * corrupt ones: resp->checked, resp->removed), VXP_OP_ZERO_STATS,
 * VXP_OP_CLEAR (resp->removed), VXP_OP_PRUNE (evict least recently used
 * entries down to max_size bytes; resp->removed) or VXP_OP_STOP (the daemon
 * answers, shuts down and exits; this returns once it has exited: its
 * cache closed, its lock released, as `systemctl stop` waits, the
 * connection's end read, at most VXC_STOP_WAIT_MS).  max_size is ignored
 * but for prune.  Blocks until the daemon has done it (verify reads the
 * whole cache).  Returns as vxc_compile (-ETIMEDOUT: a stop not done in
 * time); -EINVAL for another op. */
int vxc_admin(vxc_conn *c, vxp_op op, uint64_t max_size, vxp_response *resp);

/* Longest vxc_admin(VXP_OP_STOP) waits for the daemon to exit (ms). */
#define VXC_STOP_WAIT_MS 60000

/* Packs a launch of kernel k into buf (k->buffer_size bytes; buf_size must
 * be at least that).  values[i] points to argument i in host form: for a
 * scalar, k->args[i].size bytes of the value (i1 as one byte 0/1, index as a
 * 32-bit integer); for a pointer, a device address of k->xlen bits (a
 * uint32_t on RV32, a uint64_t on RV64).  grid and block are the launch
 * dimensions (unused ones 1); shared_bytes is the dynamic shared memory per
 * block.  Offsets are the ones the daemon computed from the target's data
 * layout, the same the kernel's entry reads.  k is checked
 * first (vxp_kernel_check: every offset + size inside the buffer without
 * wrap-around, every size exactly its type's), so a record from an
 * untrusted source can make it neither write outside buf nor read more
 * than a variable of the argument's type from values[i].  Returns 0, -EINVAL (NULL value, small buffer, zero
 * dimension, impossible layout).  Any thread. */
int vxc_pack_args(const vxp_kernel *k, const void *const *values, const uint32_t grid[3],
                  const uint32_t block[3], uint32_t shared_bytes, void *buf, size_t buf_size);

/* The local memory one block of kernel k uses in a launch of block[3]
 * threads with `dynamic` bytes of dynamic shared memory (bytes): the
 * static shared memory, the dynamic (at least k->dynamic_min), then,
 * 8-aligned, k->scratch_bytes per thread, the whole rounded up to 16.
 * What a Vortex 3.0 host gives each block (the KMU's local-memory size);
 * a 2.x entry computes the same itself (docs/VORTEX_ABI.md, "Local
 * memory").  Any thread. */
uint64_t vxc_local_bytes(const vxp_kernel *k, const uint32_t block[3], uint32_t dynamic);

#endif /* VXC_H */
