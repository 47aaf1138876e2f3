/*
 * vxp.h - the vortexd wire protocol: bytes <-> C structs, nothing else.
 *
 * This module owns the data model every other module speaks (kernel argument
 * metadata, requests, responses) and its msgpack encoding.  It does no I/O and
 * keeps no state; every function may be called from any thread.
 *
 * Frame grammar (see docs/PROTOCOL.md for the full message grammar):
 *
 *   frame   = length payload
 *   length  = u32, big-endian, 1 .. VXP_MAX_FRAME_DEFAULT (or the limit the
 *             peer announced in hello), counts payload bytes only
 *   payload = one msgpack map (request or response)
 *
 * Ownership: every char* / uint8_t* field of a decoded struct is from malloc()
 * and is released by the matching *_free() function.  Encoders never take
 * ownership of their input.
 */
#ifndef VXP_H
#define VXP_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Protocol version announced in hello.  Bump on any incompatible change.
 *   1: first release, one object per kernel.
 *   2: one object per module, each kernel an entry symbol in it.
 *   3: the administration requests (verify, zero_stats, clear, prune,
 *      stop) and the version on every request.  Added within 3, as a
 *      request an older daemon refuses and keys an older client ignores:
 *      host, list, the stats' remote counters and compile-time buckets.
 *   4: compile and fetch replies carry the compiled entry as one value
 *      ("entry", vxp_entry.h) instead of "object" and "kernels"; a fetch
 *      of one kernel is filtered by the client.
 *   5: one image per module: kernel records carry "kernel_id" and no
 *      "image"; an entry's body may end with the module's image. */
#define VXP_PROTOCOL_VERSION 5u
/* Bytes in the frame length prefix. */
#define VXP_FRAME_HEADER_SIZE 4u
/* Largest payload either side accepts unless hello said otherwise (bytes). */
#define VXP_MAX_FRAME_DEFAULT (64u * 1024u * 1024u)
/* Bytes of the launch header that follows the kernel arguments in an
 * argument buffer: grid_dim[3], block_dim[3] (u32 each), then the dynamic
 * shared-memory size (u32): arguments first, scheduling information after
 * them (docs/PROTOCOL.md, "Argument buffer"). */
#define VXP_LAUNCH_HEADER_SIZE 28u

/* The source name under which the launch-time runtime compiles a device
 * module it took from a host program, and under which the host lowering
 * keys that module: the two must agree, the name being part of a key. */
#define VXP_DEVICE_MODULE_NAME "<gpu.binary>"

/* Error codes.  One convention across vortexd: 0 is success, a failure is
 * a negative errno value (-ENOMEM, -EIO, ...), and the few failures errno
 * has no name for are project codes below -VXP_EPROJECT_BASE, defined here
 * and nowhere else (Linux errno values stay under 4096, so the two never
 * collide).  vxp_strerror() describes any of them.  The cache (vxk.h), the
 * lowering (vxl.h), libvxc (vxc.h) and the emulator (vxs.h) return negative
 * errno values only. */
#define VXP_EPROJECT_BASE 4096
enum {
  VXP_OK = 0,
  VXP_ENOMEM = -ENOMEM,                       /* allocation failed */
  VXP_EFORMAT = -EBADMSG,                     /* not msgpack, or not the expected shape */
  VXP_ETOOBIG = -EMSGSIZE,                    /* frame length over the limit */
  VXP_EEMPTY = -ENODATA,                      /* zero-length frame */
  VXP_EUNKNOWNKEY = -(VXP_EPROJECT_BASE + 1), /* a map key this protocol version does not define */
  VXP_ETYPE = -(VXP_EPROJECT_BASE + 2),       /* a known key carries a value of the wrong type */
  VXP_EMISSING = -(VXP_EPROJECT_BASE + 3),    /* a required key is missing */
  VXP_ELAYOUT = -(VXP_EPROJECT_BASE + 4),     /* a kernel record's layout is impossible
                                                 (vxp_kernel_check) */
};

/* Whether s is a cache key (64 lowercase hex digits) or a prefix of one:
 * min..64 lowercase hex digits (min 64: a whole key).  NULL is not.  What
 * every side checks a key or key prefix against.  Any thread. */
int vxp_key_prefix_valid(const char *s, size_t min);

/* A static English description of err: the protocol's own wording for the
 * codes above, strerror(-err) for other errno values.  Any thread. */
const char *vxp_strerror(int err);

/* ---- kernel argument metadata (docs/PROTOCOL.md, "Argument buffer") ---- */

typedef enum { VXP_ARG_SCALAR = 0, VXP_ARG_POINTER = 1 } vxp_arg_kind;

/* One kernel argument as the host must pack it (all sizes in bytes). */
typedef struct {
  uint32_t index;     /* position in the gpu.func signature */
  char *type;         /* MLIR type text, e.g. "memref<?xf32>"; malloc() */
  vxp_arg_kind kind;  /* pointer for memref and !llvm.ptr, else scalar */
  uint32_t size;      /* store size on the target (xlen) */
  uint32_t align;     /* ABI alignment on the target */
  uint32_t offset;    /* offset from the start of the argument buffer */
  uint32_t rank;      /* memref rank: a host memref descriptor has 3 + 2 x
                         rank fields (allocated, aligned, offset, sizes,
                         strides); 0 for other arguments */
  uint32_t elem_size; /* memref element bytes: the device address is the
                         aligned pointer + offset x elem_size; 0 otherwise */
} vxp_arg;

/* One compiled kernel: its argument-buffer layout and the symbol that
 * starts it in the module's object (vxp_response.object). */
typedef struct {
  char *name;         /* gpu.func symbol name; malloc() */
  char *entry;        /* the kernel's entry in the module object: in a
                         module of one kernel, a function `int ENTRY(void)`
                         that reads the argument buffer from mscratch and
                         spawns the grid, what Vortex's startup code calls as
                         main (link with --defsym=main=ENTRY; 3.0:
                         kernel_main, taking the buffer); in a module of
                         VXP_DISPATCH_MIN_KERNELS or more, `int ENTRY(void
                         *buffer)`, which the module's dispatcher calls
                         (VXP_DISPATCH_ENTRY); malloc() */
  uint32_t kernel_id; /* its id in the module's dispatcher: the launch
                         record's first field (VXP_DISPATCH_ENTRY);
                         VXP_NO_KERNEL_ID in records written before it
                         existed (no dispatcher: one image per kernel) */
  uint32_t nargs;
  vxp_arg *args;           /* nargs entries; malloc() */
  uint32_t args_size;      /* end of the last argument (bytes) */
  uint32_t launch_offset;  /* offset of the launch header (bytes) */
  uint32_t buffer_size;    /* whole argument buffer, a multiple of 8 */
  uint32_t grid_dims;      /* highest grid dimension the kernel reads, 1..3 */
  uint32_t known_block[3]; /* gpu.known_block_size, or {0,0,0} */
  uint32_t shared_bytes;   /* static workgroup (shared) memory per block */
  uint32_t subgroup_size;  /* threads per warp the kernel was compiled for:
                              its gpu.lane_id / shuffle / subgroup_reduce
                              assume exactly this many (0 in records
                              written before it existed) */
  uint32_t vortex_abi;     /* the device kernel ABI it was compiled for, 2
                              or 3 (0 in records written before: 2) */
  uint32_t xlen;           /* the register width it was compiled for, 32 or
                              64 (0 in records written before: 32); its
                              pointer arguments are xlen / 8 bytes */
  uint32_t dynamic_min;    /* the least dynamic shared memory a launch gets
                              (bytes; its extern __shared__ arrays) */
  uint32_t scratch_bytes;  /* local memory its collectives use per thread,
                              after the shared memory (bytes; 0: none):
                              with shared_bytes and dynamic_min what a
                              block's local memory must hold
                              (vxc_local_bytes) */
} vxp_kernel;

/* One image for every kernel of a module (docs/PROTOCOL.md, "One image
 * per module"): the object of a module of VXP_DISPATCH_MIN_KERNELS
 * kernels or more defines VXP_DISPATCH_ENTRY, which an image links as its
 * startup code's entry (main on Vortex 2.x, kernel_main on 3.0).  A
 * launch then passes (in mscratch) the address of a launch record: the
 * kernel's kernel_id as a little-endian u32, zeros up to
 * VXP_DISPATCH_HEADER_SIZE bytes, then the kernel's argument buffer.  The
 * record's address is 16-aligned, so the buffer is.  A module of one
 * kernel has no dispatcher: its image starts at that kernel's entry. */
#define VXP_DISPATCH_ENTRY "__vxl_dispatch"
#define VXP_DISPATCH_HEADER_SIZE 16u
#define VXP_DISPATCH_MIN_KERNELS 2u
#define VXP_NO_KERNEL_ID UINT32_MAX

/* The symbol an image of a module whose n kernel records are ks starts
 * at, so that one image runs every kernel: on Vortex 2.x,
 * VXP_DISPATCH_ENTRY for VXP_DISPATCH_MIN_KERNELS kernels or more whose
 * kernel ids are their positions, the kernel's entry for one kernel; on
 * Vortex 3.0 (vortex_abi 3) the first kernel's entry, the fallback of a
 * launch that names no entry (every launch names its kernel's entry PC,
 * as 3.0's scheduler takes it: docs/VORTEX_ABI.md); NULL for 2.x records
 * from before the dispatcher (an image per kernel).  Any thread. */
const char *vxp_image_entry(const vxp_kernel *ks, uint32_t n);

/* The bytes in front of a kernel's argument buffer where mscratch points
 * when one image runs every kernel of a module whose records are ks (n):
 * VXP_DISPATCH_HEADER_SIZE (the kernel id) when its image starts at
 * VXP_DISPATCH_ENTRY, else 0.  Any thread. */
uint32_t vxp_launch_header_size(const vxp_kernel *ks, uint32_t n);

/* Name prefix of a module's variables in its object (the lowering's
 * renaming of the variables its kernels can write): what a device keeps
 * from one launch of the module to the next, as CUDA keeps __device__
 * variables for the module's lifetime. */
#define VXP_MODULE_VAR_PREFIX "__vxl_var."

/* Bounds on a kernel record and a response, beyond which a decoder
 * refuses them: generous for real kernels (the Vortex ABI passes the whole
 * argument buffer in device memory), small enough that a hostile peer
 * cannot make a reader allocate or index without limit. */
#define VXP_MAX_ARGS 4096u             /* arguments per kernel */
#define VXP_MAX_KERNELS 65536u         /* kernels per response */
#define VXP_MAX_BUFFER_SIZE (1u << 20) /* argument buffer (bytes) */
#define VXP_MAX_ARG_ALIGN 4096u        /* an argument's alignment (bytes) */
#define VXP_MAX_SCALAR_SIZE 8u         /* a scalar argument's size (bytes): 64 bits */
#define VXP_MAX_LOCAL_BYTES (1u << 30) /* shared memory a record may ask a block for */

/* Checks that k's layout is one a packer can trust: nargs <= VXP_MAX_ARGS;
 * vortex_abi 0, 2 or 3 and xlen 0, 32 or 64; every argument's size exactly
 * what its type has on the target (iN: ceil(N/8), index and f32 4, f16 2,
 * f64 8, memref and !llvm.ptr a device pointer of xlen / 8 bytes; any
 * other type refused), and a scalar's at most VXP_MAX_SCALAR_SIZE (the
 * widest host value a launch copies from), so that a packer, which
 * copies that many bytes from the caller's value, never reads past a host
 * variable of the type; its kind pointer exactly for memref and !llvm.ptr;
 * its alignment a power of two <= VXP_MAX_ARG_ALIGN, its
 * offset a multiple of it, offset + size <= args_size (in
 * 64-bit arithmetic, so nothing wraps); args_size <= launch_offset;
 * launch_offset + VXP_LAUNCH_HEADER_SIZE <= buffer_size <=
 * VXP_MAX_BUFFER_SIZE; grid_dims 1..3; subgroup_size 0 or a power of two
 * <= 64; kernel_id below VXP_MAX_KERNELS or VXP_NO_KERNEL_ID.  The
 * decoders apply it to every record they read (replies, cache
 * records).  Returns VXP_OK or VXP_ELAYOUT.  Any thread. */
int vxp_kernel_check(const vxp_kernel *k);

/* Releases the fields of k (not k itself).  NULL-safe. */
void vxp_kernel_clear(vxp_kernel *k);
/* Deep-copies src into *dst.  Returns VXP_OK or VXP_ENOMEM (dst cleared). */
int vxp_kernel_copy(vxp_kernel *dst, const vxp_kernel *src);

/* Encodes the metadata of k as a msgpack map
 * into a malloc()ed buffer *out of *out_len bytes.  This is also the format
 * the cache stores.  Returns VXP_OK or VXP_ENOMEM. */
int vxp_kernel_meta_encode(const vxp_kernel *k, uint8_t **out, size_t *out_len);
/* Decodes what vxp_kernel_meta_encode() wrote into *k.
 * Returns VXP_OK or a VXP_E* code; on error *k is cleared. */
int vxp_kernel_meta_decode(const uint8_t *buf, size_t len, vxp_kernel *k);

/* ---- messages ---- */

typedef enum {
  VXP_OP_HELLO = 1,
  VXP_OP_COMPILE = 2,
  VXP_OP_FETCH = 3,
  VXP_OP_STATS = 4,
  /* administration (the daemon's own uid only, like every request) */
  VXP_OP_VERIFY = 5,     /* check every entry's checksum, drop bad ones */
  VXP_OP_ZERO_STATS = 6, /* reset the persistent counters */
  VXP_OP_CLEAR = 7,      /* delete every cache entry */
  VXP_OP_PRUNE = 8,      /* evict LRU entries down to max_size bytes */
  VXP_OP_STOP = 9,       /* answer, then shut down cleanly */
  VXP_OP_HOST = 10,      /* lower a whole program's host side (host_ir) */
  VXP_OP_LIST = 11,      /* describe cache entries (by key prefix) */
  VXP_OP_REMOVE = 12,    /* delete one cache entry (by its key) */
  VXP_OP_EXPLAIN = 13,   /* would a compile hit; if not, how it differs from
                            the entries of the same source name */
  VXP_OP_PIECES = 14,    /* between the daemon and its compile workers only
                            (a client's is refused): a module's pieces by
                            key (docs/PROTOCOL.md, "Pieces") */
} vxp_op;
#define VXP_OP_LAST VXP_OP_PIECES

/* One piece of a module compiled in pieces, between the daemon and its
 * compile workers: the piece's cache key and its entry (vxp_entry.h), or
 * no entry.  A worker's pieces request asks for the keys (no entries); the
 * daemon's answer has the same keys in the same order, each with the entry
 * its cache holds or none; a worker's compile reply carries the pieces it
 * compiled, for the daemon to keep. */
typedef struct {
  char key[65];   /* 64 lowercase hex digits and a NUL */
  uint8_t *entry; /* malloc(); NULL: none */
  size_t entry_size;
} vxp_piece;

/* Most pieces one message carries (a module has at most this many). */
#define VXP_MAX_PIECES 256u

/* What a compile does with the cache (request key "cache"; ccache's
 * CCACHE_RECACHE and CCACHE_DISABLE): use it (the default), compile again
 * and replace the entry (recache), or compile without reading or writing
 * it (bypass). */
typedef enum { VXP_CACHE_USE = 0, VXP_CACHE_RECACHE = 1, VXP_CACHE_BYPASS = 2 } vxp_cache_mode;

/* Most entries of the same source name an explain reply compares. */
#define VXP_MAX_EXPLAIN_CANDIDATES 8u

/* Most lines a source's line hashes cover, and the bytes of one hash
 * (a worker's compile reply, "line_hashes"). */
#define VXP_MAX_SOURCE_LINES (1u << 20)
#define VXP_LINE_HASH_BYTES 8u

/* Most entries a list reply carries, and kernel names per entry. */
#define VXP_MAX_LIST_ENTRIES 1000u
#define VXP_MAX_LIST_NAMES 16u

/* The device targets a compile can be for, by name: "vortex<ABI>-rv<XLEN>"
 * with ABI 2 (Vortex 2.x) or 3 (Vortex 3.0) and XLEN 32 or 64, e.g.
 * "vortex2-rv32", the default (docs/VORTEX_ABI.md).  vxp_target_parse
 * sets *vortex_abi and *xlen from a name and returns 0, or -EINVAL for
 * anything else; vxp_target_name writes the name of abi and xlen (0 meaning
 * the defaults, 2 and 32) into out.  Any thread. */
#define VXP_TARGET_NAME_MAX 40
#define VXP_DEFAULT_TARGET "vortex2-rv32"
int vxp_target_parse(const char *name, uint32_t *vortex_abi, uint32_t *xlen);
void vxp_target_name(uint32_t vortex_abi, uint32_t xlen, char out[VXP_TARGET_NAME_MAX]);

/* Returns "hello", "compile", ... or NULL for an unknown op. */
const char *vxp_op_name(vxp_op op);

/* What a host lowering's entry wrapper expects its entry to return, and
 * prints as mlir-runner's --entry-point-result does. */
typedef enum {
  VXP_RESULT_VOID = 0,
  VXP_RESULT_I32 = 1,
  VXP_RESULT_I64 = 2,
  VXP_RESULT_F32 = 3,
} vxp_entry_result;

/* The function a host lowering's bitcode (host_bitcode) gets as its entry:
 * it calls the request's entry, prints its result (an integer in decimal,
 * an f32 as printf's %e, else nan, INF or -INF) and returns 0. */
#define VXP_RUN_ENTRY "__vortexd_run_main"

/* The longest entry name a host request may carry, in bytes. */
#define VXP_MAX_ENTRY_NAME 255

typedef struct {
  uint64_t id; /* chosen by the client, echoed in the response */
  vxp_op op;
  uint32_t proto_version; /* VXP_PROTOCOL_VERSION of the client: required
                             in hello, optional in the others (0 = not
                             sent), where it spares the hello round trip */
  /* hello */
  char *client; /* free text, e.g. "vxc 0.1.0"; may be NULL */
  /* compile */
  uint8_t *source; /* MLIR text (not NUL-terminated) */
  size_t source_len;
  char *source_name;   /* file name used in diagnostics; may be NULL */
  uint32_t opt_level;  /* LLVM optimisation level 0..3, default 2 */
  bool emit_ir;        /* also return the lowered MLIR (LLVM dialect) */
  uint32_t warp_size;  /* threads per warp of the target device
                          (subgroup size), a power of two 1..32;
                          0 = the default, 4 */
  bool shuffle_insns;  /* gpu.shuffle through Vortex's shuffle
                          instructions (custom-0 funct7 1), for
                          devices that have them */
  uint32_t vortex_abi; /* the device's Vortex kernel ABI: 2 (the 2.x
                          releases) or 3 (Vortex 3.0's hardware
                          scheduler); 0 = 2 (docs/VORTEX_ABI.md) */
  uint32_t xlen;       /* the device's register width, 32 or 64;
                          0 = 32 */
  /* fetch, and compile from the daemon to its worker */
  char *key;    /* cache key, 64 lowercase hex digits: the entry wanted
                   (fetch), or the key the daemon computed, under which
                   the worker encodes the entry (compile; a client's is
                   ignored: the daemon computes its own) */
  char *kernel; /* fetch: one kernel only, NULL for all; the daemon
                   answers the whole entry, the client keeps that one
                   (vxp_entry_unpack) */
  /* prune */
  uint64_t max_size; /* bytes the cache may keep */
  /* list */
  char *prefix;   /* key prefix, 0..64 lowercase hex digits; NULL: all */
  uint32_t limit; /* entries wanted, 1..VXP_MAX_LIST_ENTRIES; 0: 100 */
  /* host */
  bool host_object;  /* also return the host side as a host object */
  bool host_bitcode; /* also return the host side as LLVM bitcode (for a
                        JIT); not with host_object */
  /* host with host_bitcode: a function the bitcode then gets an entry
   * wrapper (VXP_RUN_ENTRY) for, 1..VXP_MAX_ENTRY_NAME bytes of
   * [A-Za-z0-9_.$]; NULL: no wrapper */
  char *entry;
  vxp_entry_result entry_result; /* what entry returns, printed */
  /* compile and host: VXP_CACHE_USE, _RECACHE or _BYPASS */
  vxp_cache_mode cache;
  /* pieces (the daemon's answer to its worker): npieces <= VXP_MAX_PIECES;
   * malloc() */
  vxp_piece *pieces;
  uint32_t npieces;
} vxp_request;

typedef enum {
  VXP_STATUS_OK = 0,            /* request served */
  VXP_STATUS_COMPILE_ERROR = 1, /* the source did not compile: see diags */
  VXP_STATUS_BAD_REQUEST = 2,   /* malformed or unknown request */
  VXP_STATUS_NOT_FOUND = 3,     /* fetch: no such key or kernel */
  VXP_STATUS_INTERNAL = 4,      /* daemon fault (I/O, worker crash, ...) */
} vxp_status;

/* Returns "ok", "compile_error", ... */
const char *vxp_status_name(vxp_status s);

/* One cache entry as a list reply describes it. */
typedef struct {
  char *key;           /* 64 hex digits; malloc() */
  char *source_name;   /* the source's file name in the key; "" when not
                          recorded (an entry fetched by key); malloc() */
  char *options;       /* the keyed options text; "" when not recorded */
  uint64_t bytes;      /* object + metadata */
  uint64_t created_s;  /* Unix time stored (seconds) */
  uint64_t used_s;     /* Unix time last read (seconds) */
  uint64_t hits;       /* reads */
  uint64_t compile_us; /* what compiling it took (microseconds) */
  uint32_t nkernels;
  char **kernel_names; /* the first min(nkernels, VXP_MAX_LIST_NAMES) */
  uint32_t nnames;
} vxp_entry_info;

/* One entry an explain reply compares a compile with. */
typedef struct {
  char *key;           /* 64 hex digits; malloc() */
  uint64_t used_s;     /* Unix time last read (seconds) */
  char *inputs;        /* what its key was derived from besides the source,
                          one part a line (as the reply's own key_inputs);
                          NULL when the cache has no record of it (an entry
                          fetched from a shared level); malloc() */
  uint64_t first_line; /* the first line (1-based) at which its source and
                          the compile's differ; 0: the same text (or no
                          record) */
  uint64_t lines;      /* lines its source had (0 with no record) */
} vxp_explain_candidate;

/* Upper bounds of the compile-time histogram's buckets (microseconds);
 * the last bucket counts everything above the last bound. */
#define VXP_COMPILE_BUCKET_BOUNDS_US                                                                         \
  { 5000u, 10000u, 25000u, 50000u, 100000u, 250000u, 500000u, 1000000u, 2500000u, 10000000u }
#define VXP_COMPILE_BUCKETS 11u

/* The counters the cache keeps across restarts (its counters table, under
 * these names), X(name): the one list the cache's stats struct, its
 * reader, the daemon's pending counts and its stats reply are made from.
 * Each is also a field of vxp_stats under the same name (the reply copies
 * them by name: a counter missing there does not compile), but saved_us,
 * which the reply gives in milliseconds (saved_ms). */
#define VXP_PERSISTENT_REPORTED(X)                                                                           \
  X(hits)                                                                                                    \
  X(misses)                                                                                                  \
  X(compile_errors)                                                                                          \
  X(joined)                                                                                                  \
  X(corrupt)                                                                                                 \
  X(evictions)                                                                                               \
  X(l2_hits)                                                                                                 \
  X(l2_misses)                                                                                               \
  X(l2_errors)                                                                                               \
  X(l2_timeouts)                                                                                             \
  X(l2_corrupt)                                                                                              \
  X(l2_rejected)                                                                                             \
  X(l2_writes)                                                                                               \
  X(l2_dropped)                                                                                              \
  X(l2_bytes_down)                                                                                           \
  X(l2_bytes_up)                                                                                             \
  X(l2_leases)                                                                                               \
  X(l2_lease_waits)                                                                                          \
  X(l2_lease_expired)
#define VXP_PERSISTENT_COUNTERS(X) VXP_PERSISTENT_REPORTED(X) X(saved_us)

/* The daemon's counters (stats), persistent ones surviving restarts: each
 * a uint64_t field of vxp_stats and a key of the stats map of the same
 * name, X(name, kind, what).  The struct, its encoding and decoding, and
 * vxc's JSON and OpenMetrics output are generated from this one list (a
 * counter is added here only).  kind says how a metric shows it:
 *   COUNTER  only grows (OpenMetrics "vortexd_<name>_total")
 *   GAUGE    a level or a setting ("vortexd_<name>")
 *   TIME     a duration in ms or us, shown in seconds under its own name */
#define VXP_STATS_COUNTERS(X)                                                                                \
  X(hits, COUNTER, "compiles and fetches served from the cache (both levels)")                               \
  X(misses, COUNTER, "compile requests that had to compile")                                                 \
  X(compile_errors, COUNTER, "compiles that failed with diagnostics")                                        \
  X(joined, COUNTER,                                                                                         \
    "compile requests answered by the same compile already in flight (no compile of their own)")             \
  X(entries, GAUGE, "cache entries stored")                                                                  \
  X(bytes, GAUGE, "object + metadata bytes stored")                                                          \
  X(requests, COUNTER, "requests since this daemon started")                                                 \
  X(workers, GAUGE, "compile worker processes configured")                                                   \
  X(worker_restarts, COUNTER, "workers restarted after a crash")                                             \
  X(uptime_ms, TIME, "since this daemon started")                                                            \
  X(corrupt, COUNTER, "entries dropped: failed their checksum")                                              \
  X(evictions, COUNTER, "entries evicted by the size limit or prune")                                        \
  X(max_bytes, GAUGE, "the cache's size limit (0: no cache)")                                                \
  X(saved_ms, TIME, "compile time the hits saved: each adds its entry's compile time")                       \
  X(refused, COUNTER, "connections refused since start (peer credentials, connection limit)")                \
  X(timeouts, COUNTER, "connections closed since start for a stalled frame or idleness")                     \
  /* the second cache level, a remote storage shared by daemons (all 0 without one) */                       \
  X(l2_hits, COUNTER, "compiles and fetches answered from it (in hits too)")                                 \
  X(l2_misses, COUNTER, "looked up there and not found")                                                     \
  X(l2_errors, COUNTER, "reads and writes that failed (connection, protocol, a bad checksum)")               \
  X(l2_timeouts, COUNTER, "reads and writes over remote_timeout")                                            \
  X(l2_corrupt, COUNTER, "values refused by their checksum (in l2_errors)")                                  \
  X(l2_rejected, COUNTER, "values refused for their signature: unsigned or untrusted (in l2_errors)")        \
  X(l2_writes, COUNTER, "entries written to it")                                                             \
  X(l2_dropped, COUNTER, "writes dropped: queue full or storage down")                                       \
  X(l2_bytes_down, COUNTER, "value bytes read from it")                                                      \
  X(l2_bytes_up, COUNTER, "value bytes written to it")                                                       \
  X(l2_leases, COUNTER, "compiles leased there: this daemon compiled the key for the farm")                  \
  X(l2_lease_waits, COUNTER, "lookups that waited for a key another daemon had leased")                      \
  X(l2_lease_expired, COUNTER,                                                                               \
    "waits that ended without the value (its leaseholder died or failed): compiled here")                    \
  X(compile_sum_us, TIME, "the time the compiles of compile_buckets took together (microseconds)")

typedef struct {
#define VXP__STATS_FIELD(name, kind, what) uint64_t name;
  VXP_STATS_COUNTERS(VXP__STATS_FIELD)
#undef VXP__STATS_FIELD
  char *remote;      /* the second level: where it is, password masked, and its
                        state ("redis://h:6379/0, up"); NULL: none; malloc() */
  char *cache_error; /* why the daemon serves without a local cache (its
                        directory refused, the disk, ...); NULL when it
                        has one; malloc() */
  /* compiles since this daemon started, by the time they took (each
   * bucket counts those at most its bound, VXP_COMPILE_BUCKET_BOUNDS_US,
   * and above the previous one) */
  uint64_t compile_buckets[VXP_COMPILE_BUCKETS];
} vxp_stats;

typedef struct {
  uint64_t id;
  vxp_op op;
  vxp_status status;
  char *message; /* human-readable error; NULL when ok */
  /* hello */
  uint32_t proto_version;
  char *server;       /* "vortexd 0.1.0 (LLVM 22.1.8)" */
  uint32_t max_frame; /* largest payload the server accepts (bytes) */
  char *build;        /* the daemon's program as it started: "DEV:INODE:SIZE:MTIME_NS" of
                         its executable (a client compares the vortexd it would start);
                         NULL when not sent */
  char *target;       /* the target it compiles requests that name none for */
  char *cache_dir;    /* the cache directory it serves */
  /* compile / fetch */
  char *key;      /* cache key (hex) */
  bool cached;    /* served from the cache without compiling */
  bool joined;    /* compile: answered by the compile of the same key
                     another request had already started (or by its
                     lookup in the shared level): neither a hit nor a
                     compile of its own; sent only when true */
  uint8_t *entry; /* the compiled entry, encoded once by the worker that
                     compiled it and carried unchanged (vxp_entry.h):
                     the object and the kernel records; malloc() */
  size_t entry_size;
  /* what the entry holds, filled by its reader (vxp_entry_unpack; not
   * sent), and a host lowering's host object (sent as "object") */
  uint8_t *object; /* one ELF32 RISC-V relocatable object holding every
                      kernel of the module, each behind its entry symbol;
                      malloc(), NULL when the request failed */
  size_t object_size;
  uint8_t *image; /* the module's loadable Vortex image (.vxbin: u64
                     min_vma, u64 max_vma, the bytes), every kernel behind
                     its dispatcher (VXP_DISPATCH_ENTRY), when the daemon
                     has a Vortex kernel SDK; else NULL; malloc() */
  size_t image_size;
  uint32_t nkernels;
  vxp_kernel *kernels;
  uint32_t ndiags;
  char **diags;     /* "file:line:col: error: text" lines */
  char *lowered_ir; /* when emit_ir was asked; may be NULL */
  /* stats */
  vxp_stats stats;
  /* verify / clear / prune */
  uint64_t checked; /* entries read; list: entries the prefix matched */
  uint64_t removed; /* entries deleted */
  /* list */
  vxp_entry_info *entries; /* nentries <= VXP_MAX_LIST_ENTRIES; malloc() */
  uint32_t nentries;
  /* host */
  char *host_ir; /* the program's host side in the LLVM dialect, its
                    gpu.modules as gpu.binary ops; malloc() */
  /* explain ("inputs" also in a worker's compile reply to the daemon) */
  char *key_inputs;                  /* what the key is derived from besides the source,
                                        one part a line; malloc() */
  uint64_t source_lines;             /* explain: lines of the compile's source */
  vxp_explain_candidate *candidates; /* explain: the closest entries of the
                                        same source name, most recently used
                                        first; malloc() */
  uint32_t ncandidates;              /* <= VXP_MAX_EXPLAIN_CANDIDATES */
  /* a worker's compile reply to the daemon only: the source's line hashes
   * (VXP_LINE_HASH_BYTES each, at most VXP_MAX_SOURCE_LINES), kept beside
   * the entry; never sent to a client */
  uint8_t *line_hashes;
  size_t line_hashes_size;
  /* a worker's pieces request (keys only) and compile reply (the pieces it
   * compiled, with their entries), to the daemon only: npieces <=
   * VXP_MAX_PIECES; malloc() */
  vxp_piece *pieces;
  uint32_t npieces;
} vxp_response;

/* Checks, without building anything, that [buf, buf+len) is exactly one
 * msgpack object whose every declared length and element count fits in the
 * bytes that are there: what must hold before msgpack-c unpacks bytes from
 * outside the process, since it sizes its memory from the declared counts
 * (a 5-byte input can claim a 2^32-element array).  Every decoder here calls
 * it; so does the cache's remote level for values read from Redis.
 * Returns VXP_OK or VXP_EFORMAT.  Any thread. */
int vxp_msgpack_precheck(const uint8_t *buf, size_t len);

/* Release the fields of a request / response (not the struct).  NULL-safe. */
void vxp_request_clear(vxp_request *r);
void vxp_response_clear(vxp_response *r);

/* Encode a message into a whole frame (length prefix included) in a malloc()ed
 * buffer.  Returns VXP_OK, VXP_ENOMEM, or VXP_ETOOBIG when the payload would
 * exceed VXP_MAX_FRAME_DEFAULT. */
int vxp_request_encode(const vxp_request *r, uint8_t **frame, size_t *frame_len);
int vxp_response_encode(const vxp_response *r, uint8_t **frame, size_t *frame_len);

/* Rewrites the id of a response frame vxp_response_encode wrote (its id
 * is encoded first and at fixed width), so one encoded reply serves every
 * client waiting for the same compile.  Returns VXP_OK, or VXP_EFORMAT for
 * a frame of another shape (left unchanged).  Any thread. */
int vxp_frame_set_id(uint8_t *frame, size_t len, uint64_t id);

/* Decode one payload (without the length prefix).  In a request, unknown
 * keys, wrong value types and missing required keys are errors; a response
 * may carry keys this version does not know (ignored, so a newer daemon can
 * add fields), but not a known key of the wrong type nor a missing one.
 * On error *r is cleared and, when the id could be read, r->id holds it
 * (so an error reply can echo it). */
int vxp_request_decode(const uint8_t *payload, size_t len, vxp_request *r);
int vxp_response_decode(const uint8_t *payload, size_t len, vxp_response *r);

/* Reads a frame length prefix.  Returns VXP_OK and the payload length, or
 * VXP_EEMPTY / VXP_ETOOBIG when it is 0 or over max_frame. */
int vxp_frame_length(const uint8_t header[VXP_FRAME_HEADER_SIZE], uint32_t max_frame, uint32_t *payload_len);

#endif /* VXP_H */
