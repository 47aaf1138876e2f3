/*
 * vxk.h - the compiled-kernel cache: SQLite storage and content-hash keys.
 *
 * The only module that sees SQLite.  Stores each entry as the one value a
 * compile worker encoded (protocol/vxp_entry.h: the module's object and
 * each kernel's record, under a checksum), with what listing and eviction
 * need beside it, written in one transaction so an entry is either whole
 * or absent.  Survives restarts; the database runs in WAL mode so readers
 * never see a half-written entry.
 *
 * THREAD NOTES: a vxk_cache is used by one thread at a time.  The daemon
 * opens two on one directory: its loop thread reads (vxk_get, which writes
 * nothing) and its store thread writes (vxk_put, vxk_touch, counters).
 * Several processes may open the same directory too; SQLite's locking
 * (WAL mode, busy timeout VXK_BUSY_TIMEOUT_MS) keeps them consistent.
 *
 * Errors: 0 on success, else a negative errno value, named below for what
 * it means here (the project's one convention, see vxp.h); vxk_errmsg()
 * says more about the last failure of that cache.
 */
#ifndef VXK_H
#define VXK_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol/vxp.h" /* VXP_PERSISTENT_COUNTERS */

/* Hex digits in a key (SHA-256). */
#define VXK_KEY_HEX 64
/* Default size limit of a cache directory (bytes of encoded entries). */
#define VXK_DEFAULT_MAX_BYTES (1024ull * 1024ull * 1024ull)

enum {
  VXK_OK = 0,
  VXK_ENOMEM = -ENOMEM,            /* allocation failed */
  VXK_ENOTFOUND = -ENOENT,         /* no such key */
  VXK_EIO = -EIO,                  /* SQLite or file-system error; see vxk_errmsg */
  VXK_EFULL = -ENOSPC,             /* disk full: nothing was written */
  VXK_EINVAL = -EINVAL,            /* bad argument (key not 64 hex digits, ...) */
  VXK_ECORRUPT = -EUCLEAN,         /* an entry whose bytes fail their checksum */
  VXK_EUNTRUSTED = -EPERM,         /* the cache directory or a database file another
                                      user could have written (vxk_open) */
  VXK_EBUSY = -EBUSY,              /* another connection held the database's
                                      lock past the busy timeout */
  VXK_EDAMAGED = -ENOTRECOVERABLE, /* the database file itself is damaged
                                      (malformed, truncated): no call on it
                                      will succeed; close every handle,
                                      vxk_discard, open anew */
};

/* Bytes of an entry's checksum (SHA-256). */
#define VXK_CHECKSUM_SIZE 32

typedef struct vxk_cache vxk_cache;

/* An entry read back: its encoded bytes, as vxk_put stored them. */
typedef struct {
  uint8_t *data; /* the encoded entry (vxp_entry.h); malloc() */
  size_t size;
  uint64_t compile_us; /* what compiling it took (vxk_put): what a hit saves */
} vxk_entry;

typedef struct {
  uint64_t entries;   /* entries stored */
  uint64_t bytes;     /* encoded entry bytes stored */
  uint64_t max_bytes; /* the size limit in force */
  /* the persistent counters (survive restarts), the remote level's l2_*
   * (vxk_remote.h) among them; saved_us: compile time the hits saved since
   * the counters were zeroed, to which whoever serves a hit adds its
   * entry's compile_us */
#define VXK__STATS_FIELD(name) uint64_t name;
  VXP_PERSISTENT_COUNTERS(VXK__STATS_FIELD)
#undef VXK__STATS_FIELD
} vxk_stats;

/* Opens (creating as needed, mode 0700) the directory dir and its cache.db,
 * only if nobody else can have written them: dir must be a real directory
 * (not a symbolic link) owned by the effective uid and not writable by
 * group or others, every directory above it owned by root or that uid and
 * not writable by group or others unless sticky (OpenSSH's rule: nobody
 * else can swap dir for his own), and cache.db and its -wal and -shm
 * files, where they exist, regular files of that uid not writable by group
 * or others (else VXK_EUNTRUSTED, with a message naming the path and the
 * fix).  SQLite then opens every file of the database through the
 * descriptor of the directory that was checked (vxk_pin.h), on every
 * connection.  On a network file system (vxk_network_fs) the database
 * uses a rollback journal instead of SQLite's write-ahead log, whose
 * shared memory is unsafe there; vxk_open_notice says so.
 * max_bytes bounds the stored bytes (0 = VXK_DEFAULT_MAX_BYTES): least
 * recently used entries are evicted after a put goes over it.  A database
 * file SQLite cannot read is moved aside as cache.db.corrupt and a new one
 * started.  Returns 0 and *out (caller owns; vxk_close) or VXK_EIO/ENOMEM/EUNTRUSTED,
 * with a message in errbuf (errcap bytes). */
int vxk_open(const char *dir, uint64_t max_bytes, vxk_cache **out, char *errbuf, size_t errcap);
void vxk_close(vxk_cache *c);

/* How long a call waits for a lock another connection holds before it
 * fails with VXK_EBUSY (milliseconds; VXK_BUSY_TIMEOUT_MS by default). */
#define VXK_BUSY_TIMEOUT_MS 5000u
void vxk_set_busy_timeout(vxk_cache *c, unsigned ms);

/* What vxk_open had to do to open c, for the log, or NULL: a database it
 * could not read was kept as cache.db.corrupt (counted as "corrupt") and a
 * new one started.  Owned by c. */
const char *vxk_open_notice(const vxk_cache *c);

/* The name of the network or user-space file system of statfs(2) type
 * f_type (NFS, SMB/CIFS, FUSE, Ceph, AFS, Lustre, GPFS, 9P, ...), where a
 * cache must not use SQLite's write-ahead log, or NULL for a local one. */
const char *vxk_network_fs(long f_type);

/* For tests only, process-wide: fn(dir, ud) runs in vxk_open and
 * vxk_open_readonly between the checks of dir and SQLite's open (where a
 * swap of dir would race them); NULL: nothing.  Not thread-safe. */
void vxk_testing_after_check(void (*fn)(const char *dir, void *ud), void *ud);

/* For tests only, process-wide: the statfs(2) type the next opens take
 * the cache directory's file system to be (0: the real one). */
void vxk_testing_fs_type(long f_type);

/* Moves dir's damaged database aside: cache.db (and its -wal) renamed to
 * cache.db.corrupt (-wal), kept for inspection and replaced at the next
 * open, its -shm removed.  Call with no handle on it open in this process.
 * Returns 0 or VXK_EIO with a message in err (errcap bytes). */
int vxk_discard(const char *dir, char *err, size_t errcap);

/* Opens dir's cache.db for reading only (SQLite read-only: nothing is
 * created, migrated or written; a reader beside a running daemon), under
 * vxk_open's ownership rules (VXK_EUNTRUSTED): vxk_get
 * works (checksums verified), the writing calls must not be used.  Returns
 * 0 and *out, or VXK_EIO (no cache there, another schema) / VXK_ENOMEM
 * with a message in errbuf. */
int vxk_open_readonly(const char *dir, vxk_cache **out, char *errbuf, size_t errcap);

/* Message about the last failure of c; static or owned by c. */
const char *vxk_errmsg(const vxk_cache *c);

/* Bytes of one line's hash in an inputs record, and most lines hashed
 * (the lines past that are not told apart). */
#define VXK_LINE_HASH_BYTES 8u
#define VXK_MAX_LINES (1u << 20)

/* What a compile's key was derived from, kept beside its entry so that a
 * later miss can be explained (`vxc explain`): parts, the key's parts
 * besides the source (vxk_key), each on a line of its own; lines, the
 * source's line hashes (vxk_line_hashes), lines_size bytes.  Borrowed. */
typedef struct {
  const char *parts;
  const uint8_t *lines;
  size_t lines_size;
} vxk_inputs;

/* The line hashes of source (len bytes): for each line (split at '\n',
 * without it; a last line without one counted too), the first
 * VXK_LINE_HASH_BYTES bytes of its SHA-256 (OpenSSL), for the first
 * VXK_MAX_LINES lines, into *out (malloc(), *out_size bytes; NULL and 0
 * for an empty source).  Compared, not trusted: two lines that differ may
 * collide one time in 2^64.  Returns 0 or VXK_ENOMEM.  Any thread. */
int vxk_line_hashes(const uint8_t *source, size_t len, uint8_t **out, size_t *out_size);

/* The 1-based number of the first line at which two line-hash arrays
 * (vxk_line_hashes, a_size and b_size bytes) differ, a line one of them
 * lacks counting as a difference; 0 when they are the same. */
size_t vxk_first_differing_line(const uint8_t *a, size_t a_size, const uint8_t *b, size_t b_size);

/* Stores the encoded entry (size bytes; vxk_entry_encode) under key in one
 * transaction, replacing any entry with that key, after checking it is a
 * whole entry of that key (vxk_entry_check).  Beside it, for listings:
 * compile_us, what compiling it took (microseconds; the "time saved" of
 * later hits), and source_name, the source's file name as the key has it
 * (no directory; NULL when not known: an entry fetched by key alone),
 * and inputs, what its key was derived from (NULL when not known; kept
 * for explaining later misses, deleted with the entry).
 * The options a listing shows are the ones the entry holds.  Returns 0,
 * VXK_EFULL (disk full; the cache is unchanged), VXK_EIO, VXK_EINVAL (key,
 * or bytes that are not a whole entry of it). */
int vxk_put(vxk_cache *c, const char *key, const uint8_t *entry, size_t size, uint64_t compile_us,
            const char *source_name, const vxk_inputs *inputs);

/* Most entries one vxk_list returns, and kernel names it gives per entry. */
#define VXK_LIST_MAX 1000u
#define VXK_LIST_NAMES 16u

/* One entry as vxk_list describes it (not its bytes). */
typedef struct {
  char key[VXK_KEY_HEX + 1];
  char *source_name;   /* "" when not recorded; malloc() */
  char *options;       /* "" when not recorded; malloc() */
  uint64_t bytes;      /* the encoded entry's */
  uint64_t created_us; /* realtime microseconds when stored */
  uint64_t last_used_us;
  uint64_t hits;       /* reads written so far (vxk_flush writes the rest) */
  uint64_t compile_us; /* what compiling it took */
  uint32_t nkernels;
  char **kernel_names; /* the first min(nkernels, VXK_LIST_NAMES); malloc() */
  uint32_t nnames;
} vxk_info;

/* Describes the entries whose key starts with prefix (0..64 lowercase hex
 * digits; NULL or "" for all), most recently used first, at most limit
 * of them (capped at VXK_LIST_MAX) in *out (*n of them; vxk_info_clear).
 * *matched is how many entries the prefix matches: a caller resolving a
 * key prefix asks for 2 and wants matched == 1.  Reads in one transaction;
 * call vxk_flush first for the latest hit counts.  Returns 0, VXK_EINVAL
 * (prefix not hex), VXK_EIO, VXK_ENOMEM. */
int vxk_list(vxk_cache *c, const char *prefix, uint32_t limit, vxk_info **out, uint32_t *n,
             uint64_t *matched);

/* Frees n entries of what vxk_list returned, and the array.  NULL-safe. */
void vxk_info_clear(vxk_info *v, uint32_t n);

/* 1 when the cache holds an entry under key, 0 when not (a lookup that
 * neither reads the entry nor counts as a use), or a VXK error. */
int vxk_has(vxk_cache *c, const char *key);

/* One entry of a source name with what its key was derived from, as
 * vxk_inputs_of_source returns it. */
typedef struct {
  char key[VXK_KEY_HEX + 1];
  uint64_t last_used_us; /* realtime microseconds */
  char *parts;           /* vxk_inputs.parts; NULL when not recorded (an
                            entry fetched from the shared level); malloc() */
  uint8_t *lines;        /* vxk_inputs.lines; malloc(), NULL with parts */
  size_t lines_size;
} vxk_inputs_row;

/* The entries whose source name is source_name (as vxk_put recorded it),
 * most recently used first, at most limit (capped at VXK_LIST_MAX), with
 * the inputs vxk_put recorded beside them, in *out (*n of them;
 * vxk_inputs_clear).  What `vxc explain` compares a missing compile
 * with.  Returns 0, VXK_EIO, VXK_ENOMEM. */
int vxk_inputs_of_source(vxk_cache *c, const char *source_name, uint32_t limit, vxk_inputs_row **out,
                         uint32_t *n);

/* Frees n rows of what vxk_inputs_of_source returned, and the array.
 * NULL-safe. */
void vxk_inputs_clear(vxk_inputs_row *v, uint32_t n);

/* Deletes least recently used entries until at most max_bytes are stored
 * (counted as evictions); *removed = entries deleted.  Returns 0 or
 * VXK_EIO. */
int vxk_prune(vxk_cache *c, uint64_t max_bytes, uint64_t *removed);

/* Deletes every entry (counters stay); *removed = entries deleted.
 * Returns 0 or VXK_EIO. */
int vxk_clear(vxk_cache *c, uint64_t *removed);

/* Resets the persistent counters (hits, misses, ...) to zero. */
int vxk_zero_counters(vxk_cache *c);

/* Reads the encoded entry for key.  Every read checks it
 * (vxk_entry_check: its checksum over the key, the options, the object
 * and every kernel record) and refuses a mismatch with VXK_ECORRUPT: the caller
 * drops the entry (vxk_drop, on a writing handle) and compiles again.  On
 * success fills *out
 * (caller clears it with vxk_entry_clear) and records the key as used: the
 * LRU time is written later, by vxk_flush on this cache or, after
 * vxk_touch_take, by vxk_touch on another (a read never writes).  Up to
 * VXK_TOUCH_MAX distinct keys are recorded between flushes; reads past that
 * are not (their entries only look older to eviction).  Returns 0,
 * VXK_ENOTFOUND, VXK_ECORRUPT, VXK_EIO, VXK_ENOMEM, VXK_EINVAL. */
int vxk_get(vxk_cache *c, const char *key, vxk_entry *out);

/* Deletes the entry for key if it still fails its checksum (it may have
 * been replaced, or dropped, since a read found it damaged).  Returns 0
 * (deleted), VXK_ENOTFOUND (absent, or intact: kept), VXK_EIO, VXK_EINVAL. */
int vxk_drop(vxk_cache *c, const char *key);

/* Deletes the entry for key, whatever it holds (`vxc rm`).  Returns 0,
 * VXK_ENOTFOUND (there was none), VXK_EIO, VXK_EINVAL (not a key). */
int vxk_remove(vxk_cache *c, const char *key);

/* Checks the database file's structure first (SQLite's quick_check, read
 * from the disk: VXK_EDAMAGED when it fails), then reads every entry and
 * checks its checksum; with drop, deletes the ones
 * that fail (one transaction) and adds them to the "corrupt" counter.
 * Sets *checked and *corrupt (entries).  Blocks for the whole scan: run it
 * where a writer may wait (the daemon's store thread).  Returns 0 or
 * VXK_EIO/VXK_ENOMEM. */
int vxk_verify(vxk_cache *c, int drop, uint64_t *checked, uint64_t *corrupt);

/* Releases what vxk_get filled (not the struct).  NULL-safe. */
void vxk_entry_clear(vxk_entry *e);

/* Distinct keys a cache records as read between flushes. */
#define VXK_TOUCH_MAX 65536u

/* Keys read, how often, and when: what vxk_touch writes. */
typedef struct {
  char (*keys)[VXK_KEY_HEX + 1]; /* n keys; malloc() */
  uint32_t *hits;                /* reads of each; malloc(); NULL: one each */
  uint32_t n;
  uint64_t used_us; /* time of the latest read (microseconds, realtime) */
} vxk_touches;

/* Writes the LRU times (as vxk_touch) and all read counts of entries read
 * since the last flush in one transaction (reads do not write, so a hit
 * costs no write transaction).
 * Call it periodically; vxk_close and eviction call it too.  Returns 0 or
 * VXK_EIO/VXK_EFULL. */
int vxk_flush(vxk_cache *c);

/* Records key as read, as vxk_get does (for a read served from a copy the
 * caller kept).  No-op for an invalid key or when the set is full. */
void vxk_mark_used(vxk_cache *c, const char *key);

/* Moves the keys c recorded as read into *out (vxk_touches_clear),
 * leaving c with none: for another cache handle to write with vxk_touch.
 * Returns 0 or VXK_ENOMEM (nothing moved). */
int vxk_touch_take(vxk_cache *c, vxk_touches *out);

/* Writes the LRU time of t's keys, in one transaction, to each entry whose
 * time is older than the resolution (vxk_set_lru_resolution), with its
 * read count: an entry read again and again is written at most once per
 * resolution.  The read counts of the entries not written wait in c (as
 * its own reads do) for vxk_flush, which writes them all.
 * Returns 0 or VXK_EIO/VXK_EFULL. */
int vxk_touch(vxk_cache *c, const vxk_touches *t);

/* Frees what vxk_touch_take filled.  NULL-safe. */
void vxk_touches_clear(vxk_touches *t);

/* How far apart two reads of an entry must be for the second to move its
 * LRU time again (microseconds; 0, the default: every read moves it).  As
 * the relatime mount option does for access times: eviction then orders
 * entries read within one resolution of each other by their older time,
 * and a cache of entries read again and again writes almost nothing. */
void vxk_set_lru_resolution(vxk_cache *c, uint64_t us);

/* Adds delta to a persistent counter, one named in VXP_PERSISTENT_COUNTERS
 * ("hits", "misses", ..., "saved_us", the remote level's "l2_*"). */
int vxk_counter_add(vxk_cache *c, const char *name, int64_t delta);

/* Adds deltas[i] to counter names[i], for i < n (zero deltas skipped), in
 * one transaction: all of them or, on an error (a full disk), none, so a
 * caller may keep them and add them again later.  Returns VXK_OK or an
 * error code (VXK_EFULL, VXK_EBUSY, ...) with vxk_errmsg set. */
int vxk_counters_add(vxk_cache *c, size_t n, const char *const *names, const int64_t *deltas);

int vxk_stats_get(vxk_cache *c, vxk_stats *out);

/* Derives a cache key: SHA-256 (OpenSSL) over a domain tag, then each of the
 * nparts strings and finally the source bytes, each preceded by its length
 * as a little-endian u64 (so no two different inputs concatenate alike).
 * parts must name everything that changes the output: target, options,
 * vortexd and lowering-ABI versions, LLVM version.  Writes 64 lowercase hex
 * digits and a NUL to out.  Any thread.  Returns 0 or VXK_ENOMEM. */
int vxk_key(const uint8_t *source, size_t len, const char *const *parts, size_t nparts,
            char out[VXK_KEY_HEX + 1]);

/* Readies OpenSSL for the hashes above: reads its configuration, loads its
 * default provider and fetches SHA-256 into its method cache.  A process
 * that calls it before forking hands that state to its children (compile
 * workers), which otherwise each build it again at their first hash (about
 * a third of a millisecond).  Any thread; calling it again costs a cache
 * lookup.  Returns 0 or VXK_ENOMEM (OpenSSL has no SHA-256). */
int vxk_prepare(void);

/* True when s is 64 lowercase hex digits. */
int vxk_key_valid(const char *s);

/* A hash-table index for a valid key: its first 12 hex digits (a SHA-256
 * is uniform, so no further mixing is needed).  Any thread. */
size_t vxk_key_hash(const char *key);

#endif /* VXK_H */
