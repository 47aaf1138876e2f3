/*
 * vxk.c - SQLite-backed cache of compiled kernels (see vxk.h).
 *
 * Schema (version 5):
 *   entries(key TEXT PRIMARY KEY, created_us, last_used_us, hits, bytes, nkernels,
 *           entry BLOB, compile_us, source_name TEXT, options TEXT)
 *   kernels(key, ordinal, name)  PRIMARY KEY(key, ordinal)
 *   counters(name TEXT PRIMARY KEY, value INTEGER)
 *   meta(k TEXT PRIMARY KEY, v TEXT)                -- schema_version, saved_counter
 * entries.entry is the encoded entry (protocol/vxp_entry.h) exactly as the
 * worker wrote it: served as it is, its checksum checked at every read (a
 * flipped bit in the file is refused, never served).  The other columns
 * are there to list and evict entries without reading them: bytes is the
 * entry's size, options the keyed options the entry holds, source_name
 * the source's file name (vxk_put's), kernels the names of the first
 * VXK_LIST_NAMES kernels.  entries.hits counts the reads of that entry
 * (vxk_list); the totals are counters, and a cache from before they were
 * carries its old per-entry counts into the saved_us counter once.
 * An entry and its names are written in one IMMEDIATE transaction.
 *
 * Older caches are migrated at open, in one transaction: version 3 gains
 * version 4's two origin columns, and version 4 (object and kernel records
 * in rows of their own, under a checksum of its own) is re-encoded entry
 * by entry, each checked against its old checksum first (one that fails
 * is dropped and counted as corrupt, never re-sealed as whole).
 */
#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include <fcntl.h>
#include <openssl/evp.h>
#include <sqlite3.h>

#include "protocol/vxp.h"
#include "protocol/vxp_paths.h"
#include "vxk.h"
#include "vxk_entry.h"
#include "vxk_pin.h"

#define VXK_SCHEMA_VERSION "5"

/* Deletes per transaction when evicting. */
#define VXK_EVICT_BATCH 256

struct vxk_cache {
  sqlite3 *db;
  vxk_pin *pin; /* the checked directory, which SQLite opens its files through */
  int rollback; /* a network file system: a rollback journal, not WAL */
  uint64_t max_bytes;
  char err[512];
  char notice[4800]; /* what vxk_open had to do (vxk_open_notice) */
  /* prepared once, kept for the cache's lifetime */
  sqlite3_stmt *get_entry, *touch, *put_old, *put_entry, *put_kernel, *put_inputs, *drop;
  /* keys read since the last flush, their LRU time written then (one
   * transaction, not one write per hit); seen finds a key among them */
  char (*touched)[VXK_KEY_HEX + 1]; /* malloc(), grows to VXK_TOUCH_MAX */
  uint32_t *touched_hits;           /* reads of each, not yet written */
  uint32_t ntouched, touched_cap;
  uint64_t touched_us; /* time of the latest pending read */
  uint32_t *seen;      /* open addressing over touched: index + 1, 0 = free */
  uint32_t seen_cap;
  uint64_t total_bytes;       /* SUM(entries.bytes), kept current so
                                 a store does not scan the table */
  uint64_t lru_resolution_us; /* a read moves an entry's LRU time only
                                 when it is older than this */
};

const char *vxk_errmsg(const vxk_cache *c) { return c ? c->err : "no cache"; }

static uint64_t vxk__now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* Whether an SQLite result code says the database file itself is damaged:
 * malformed pages, not a database, or shorter than its own header says (a
 * file truncated behind SQLite's back). */
static int vxk__damage(int src) {
  int prim = src & 0xff;
  return prim == SQLITE_CORRUPT || prim == SQLITE_NOTADB || src == SQLITE_IOERR_SHORT_READ;
}

/* Records the SQLite error and maps it to a VXK code. */
static int vxk__fail(vxk_cache *c, int src, const char *what) {
  snprintf(c->err, sizeof c->err, "%s: %s", what, sqlite3_errmsg(c->db));
  int prim = src & 0xff;
  if (prim == SQLITE_FULL) return VXK_EFULL;
  if (prim == SQLITE_NOMEM) return VXK_ENOMEM;
  if (prim == SQLITE_BUSY || prim == SQLITE_LOCKED) return VXK_EBUSY;
  if (vxk__damage(src) || vxk__damage(sqlite3_extended_errcode(c->db))) return VXK_EDAMAGED;
  return VXK_EIO;
}

/* Ends the transaction in progress, if any (SQLite ends one itself on some
 * errors, and a ROLLBACK outside one is an error of its own). */
static void vxk__rollback(vxk_cache *c) {
  if (!sqlite3_get_autocommit(c->db)) sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
}

/* The journal: WAL, but for a cache on a network file system, where
 * SQLite's WAL (its -shm shared through mmap) is unsafe: a rollback
 * journal there (vxk__network_fs). */
static const char vxk__wal[] = "PRAGMA journal_mode=WAL;",
                  vxk__rollback_journal[] = "PRAGMA journal_mode=DELETE;";

static const char vxk__schema[] =
    "PRAGMA synchronous=NORMAL;"
    "PRAGMA foreign_keys=ON;"
    /* 16 MiB of page cache per handle.  No memory map: a database file
     * truncated behind SQLite's back (another process, a full disk's
     * repair) would make reading a mapped page past its new end raise
     * SIGBUS and kill the daemon; read() reports a short read instead,
     * which the cache treats as damage (VXK_EDAMAGED). */
    "PRAGMA mmap_size=0;"
    "PRAGMA cache_size=-16384;"
    "CREATE TABLE IF NOT EXISTS meta(k TEXT PRIMARY KEY, v TEXT NOT NULL);"
    "INSERT OR IGNORE INTO meta VALUES('schema_version', '" VXK_SCHEMA_VERSION "');"
    "CREATE TABLE IF NOT EXISTS counters(name TEXT PRIMARY KEY, value INTEGER NOT NULL);";

/* The entry tables of version 5: created with the schema, and by the
 * migration from version 4 once it moved the old ones aside. */
#define VXK__ENTRY_TABLES(IF_NOT_EXISTS)                                                                     \
  "CREATE TABLE " IF_NOT_EXISTS " entries("                                                                  \
  " key TEXT PRIMARY KEY, created_us INTEGER NOT NULL, last_used_us INTEGER NOT NULL,"                       \
  " hits INTEGER NOT NULL DEFAULT 0, bytes INTEGER NOT NULL, nkernels INTEGER NOT NULL,"                     \
  " entry BLOB NOT NULL, compile_us INTEGER NOT NULL DEFAULT 0,"                                             \
  " source_name TEXT NOT NULL DEFAULT '', options TEXT NOT NULL DEFAULT '');"                                \
  "CREATE INDEX " IF_NOT_EXISTS " entries_lru ON entries(last_used_us);"                                     \
  "CREATE TABLE " IF_NOT_EXISTS " kernels("                                                                  \
  " key TEXT NOT NULL REFERENCES entries(key) ON DELETE CASCADE,"                                            \
  " ordinal INTEGER NOT NULL, name TEXT NOT NULL, PRIMARY KEY(key, ordinal));"                               \
  "CREATE TABLE " IF_NOT_EXISTS " inputs("                                                                   \
  " key TEXT PRIMARY KEY REFERENCES entries(key) ON DELETE CASCADE,"                                         \
  " parts TEXT NOT NULL, lines BLOB NOT NULL);"

static const char vxk__entry_tables[] = VXK__ENTRY_TABLES("IF NOT EXISTS");

#define VXK__GET_SQL "SELECT entry, compile_us FROM entries WHERE key=?1"
#define VXK__INSERT_ENTRY_SQL                                                                                \
  "INSERT OR REPLACE INTO entries(key, created_us, last_used_us, hits, bytes, nkernels, entry, compile_us,"  \
  " source_name, options) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"
#define VXK__INSERT_NAME_SQL "INSERT INTO kernels(key, ordinal, name) VALUES(?1, ?2, ?3)"
#define VXK__INSERT_INPUTS_SQL "INSERT OR REPLACE INTO inputs(key, parts, lines) VALUES(?1, ?2, ?3)"

/* Time saved used to be SUM(hits x compile_us) over the entries, each read
 * adding to its entry's hits; it is a counter now, so that a read need not
 * write its entry.  The old figure carries over once per cache: meta's
 * saved_counter says it did (zeroed counters then stay zero), and an open
 * after that costs one lookup.  0 or an SQLite result code. */
static int vxk__carry_saved(vxk_cache *c) {
  sqlite3_stmt *st = NULL;
  int rc = sqlite3_prepare_v2(c->db, "SELECT 1 FROM meta WHERE k='saved_counter'", -1, &st, NULL);
  if (rc != SQLITE_OK) return rc;
  int done = sqlite3_step(st) == SQLITE_ROW;
  sqlite3_finalize(st);
  if (done) return SQLITE_OK;
  rc = sqlite3_exec(c->db,
                    "BEGIN IMMEDIATE;"
                    "INSERT INTO counters(name, value)"
                    " SELECT 'saved_us', COALESCE(SUM(hits * compile_us), 0) FROM entries"
                    " WHERE NOT EXISTS (SELECT 1 FROM meta WHERE k='saved_counter')"
                    " ON CONFLICT(name) DO UPDATE SET value = value + excluded.value;"
                    "INSERT OR IGNORE INTO meta VALUES('saved_counter', '1');"
                    "COMMIT;",
                    NULL, NULL, NULL);
  if (rc != SQLITE_OK) vxk__rollback(c);
  return rc;
}

static int vxk__load_total(vxk_cache *c);

static int vxk__prepare(vxk_cache *c, const char *sql, sqlite3_stmt **st) {
  int rc = sqlite3_prepare_v3(c->db, sql, -1, SQLITE_PREPARE_PERSISTENT, st, NULL);
  return rc == SQLITE_OK ? 0 : vxk__fail(c, rc, "prepare");
}

/* mkdir -p with mode 0700 for what it creates; 0 or a negative errno (also
 * left in errno). */
static int vxk__mkdirs(const char *dir) {
  char p[4096];
  if (snprintf(p, sizeof p, "%s", dir) >= (int)sizeof p) {
    errno = ENAMETOOLONG;
    return -ENAMETOOLONG;
  }
  for (char *s = p + 1; *s; s++) {
    if (*s != '/') continue;
    *s = '\0';
    if (mkdir(p, 0700) != 0 && errno != EEXIST) return -errno;
    *s = '/';
  }
  return (mkdir(p, 0700) != 0 && errno != EEXIST) ? -errno : 0;
}

/* The database and the files SQLite keeps beside it. */
static const char *const vxk__db_files[] = {"cache.db", "cache.db-wal", "cache.db-shm"};

/* Process-wide testing hooks (vxk_testing_*): none unless a test sets them. */
static void (*vxk__after_check)(const char *dir, void *ud);
static void *vxk__after_check_ud;
static long vxk__fs_type_override;

void vxk_testing_after_check(void (*fn)(const char *dir, void *ud), void *ud) {
  vxk__after_check = fn, vxk__after_check_ud = ud;
}

void vxk_testing_fs_type(long f_type) { vxk__fs_type_override = f_type; }

const char *vxk_network_fs(long f_type) {
  static const struct {
    unsigned long magic;
    const char *name;
  } fs[] = {{0x6969, "NFS"},          {0x517B, "SMB"},       {0xFF534D42ul, "CIFS"}, {0xFE534D42ul, "SMB2"},
            {0x65735546, "FUSE"},     {0x00C36400, "Ceph"},  {0x5346414F, "AFS"},    {0x6B414653, "AFS"},
            {0x0BD00BD0, "Lustre"},   {0x47504653, "GPFS"},  {0x01021997, "9P"},     {0x73757245, "Coda"},
            {0x564C, "NCP"},          {0x7461636F, "OCFS2"}, {0x01161970, "GFS2"},   {0xAAD7AAEAul, "PanFS"},
            {0x20030528, "OrangeFS"}, {0x19830326, "BeeGFS"}};
  for (size_t i = 0; i < sizeof fs / sizeof *fs; i++)
    if ((unsigned long)f_type == fs[i].magic || ((unsigned long)f_type & 0xffffffffu) == fs[i].magic)
      return fs[i].name;
  return NULL;
}

/* Checks that nobody else can have written dir or the database files in it
 * (an entry planted there would be served as this user's own), nor can
 * swap dir for his own: every directory above it owned by root or the
 * user and not writable by others unless sticky (OpenSSH's rule,
 * vxp_path_ancestors_safe); dir a real directory owned by the effective
 * uid and not writable by group or others; each existing database file a
 * regular file (no symbolic link) of the same owner, not writable by group
 * or others.  Creates dir (and missing parents, mode 0700) when create.
 * SQLite then opens the files through the descriptor of the checked
 * directory (vxk_pin), never by the path again.  Returns VXK_OK and the
 * directory's descriptor in *dfd, or VXK_EUNTRUSTED or VXK_EIO with a
 * message in err naming the path and the fix. */
static int vxk__trust_dir(const char *dir, int create, int *dfd_out, char *err, size_t errcap) {
  *dfd_out = -1;
  if (create && vxk__mkdirs(dir) != 0) {
    snprintf(err, errcap, "cannot create cache directory %s: %s", dir, strerror(errno));
    return VXK_EIO;
  }
  char why[2048];
  int arc = vxp_path_ancestors_safe(dir, geteuid(), why, sizeof why);
  if (arc != 0) {
    snprintf(err, errcap, "cache directory %s", why);
    return arc == -EPERM ? VXK_EUNTRUSTED : VXK_EIO;
  }
  static const vxp_dir_rule rule = {"cache directory",
                                    S_IWGRP | S_IWOTH,
                                    "not writable by group or others",
                                    "go-w",
                                    "another user could plant entries there",
                                    "--cache-dir"};
  int dfd = vxp_owned_dir_open(dir, 0, &rule, err, errcap);
  if (dfd < 0) return dfd == -EPERM || dfd == -ELOOP ? VXK_EUNTRUSTED : VXK_EIO;
  int rc = VXK_OK;
  for (size_t i = 0; rc == VXK_OK && i < sizeof vxk__db_files / sizeof *vxk__db_files; i++) {
    struct stat st;
    if (fstatat(dfd, vxk__db_files[i], &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno == ENOENT) continue;
      snprintf(err, errcap, "cache file %s/%s: %s", dir, vxk__db_files[i], strerror(errno));
      rc = VXK_EIO;
    } else if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH))) {
      snprintf(err, errcap,
               "cache file %s/%s is not this user's own (%s, owner uid %u, mode %03o; needs a regular "
               "file of uid %u, not writable by group or others): another user could have planted it; "
               "remove it",
               dir, vxk__db_files[i],
               S_ISLNK(st.st_mode)    ? "a symbolic link"
               : !S_ISREG(st.st_mode) ? "not a regular file"
                                      : "a regular file",
               (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777), (unsigned)geteuid());
      rc = VXK_EUNTRUSTED;
    }
  }
  if (rc == VXK_OK)
    *dfd_out = dfd;
  else
    close(dfd);
  return rc;
}

/* Pins the checked directory dfd for c (taken either way) and, when it is
 * on a network file system, makes c use a rollback journal, saying why in
 * note (cap bytes; "" otherwise).  Writes the name to open into name.
 * VXK_OK, or VXK_EIO with a message in err. */
static int vxk__pin(vxk_cache *c, const char *dir, int dfd, char *name, size_t cap, char *note,
                    size_t notecap, char *err, size_t errcap) {
  struct statfs fs;
  note[0] = '\0';
  long type = vxk__fs_type_override ? vxk__fs_type_override : fstatfs(dfd, &fs) == 0 ? (long)fs.f_type : 0;
  const char *net = vxk_network_fs(type);
  if (net) {
    c->rollback = 1;
    snprintf(note, notecap,
             "cache directory %s is on a network file system (%s), where SQLite's write-ahead log is unsafe: "
             "using a rollback journal (one writer at a time)",
             dir, net);
  }
  int rc = vxk_pin_open(dfd, &c->pin, name, cap);
  if (rc != 0) {
    close(dfd);
    snprintf(err, errcap, "cannot open cache %s: %s", dir, strerror(-rc));
    return VXK_EIO;
  }
  return VXK_OK;
}

static int vxk__migrate(vxk_cache *c, int version);

/* Opens path and applies the schema, migrating an older one; 0 or an
 * SQLite result code (SQLITE_MISMATCH: a version this cache cannot read). */
static int vxk__open_db(vxk_cache *c, const char *path) {
  int rc = sqlite3_open_v2(path, &c->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOFOLLOW,
                           vxk_pin_vfs());
  if (rc != SQLITE_OK) return rc;
  sqlite3_busy_timeout(c->db, VXK_BUSY_TIMEOUT_MS);
  sqlite3_extended_result_codes(c->db, 1);
  rc = sqlite3_exec(c->db, c->rollback ? vxk__rollback_journal : vxk__wal, NULL, NULL, NULL);
  if (rc == SQLITE_OK) rc = sqlite3_exec(c->db, vxk__schema, NULL, NULL, NULL);
  if (rc != SQLITE_OK) return rc;
  sqlite3_stmt *st = NULL;
  rc = sqlite3_prepare_v2(c->db, "SELECT v FROM meta WHERE k='schema_version'", -1, &st, NULL);
  if (rc != SQLITE_OK) return rc;
  rc = sqlite3_step(st);
  const char *v = rc == SQLITE_ROW ? (const char *)sqlite3_column_text(st, 0) : NULL;
  int version = v && (!strcmp(v, "3") || !strcmp(v, "4") || !strcmp(v, VXK_SCHEMA_VERSION)) ? atoi(v) : 0;
  sqlite3_finalize(st);
  if (version == 0) return SQLITE_MISMATCH;
  if (version == 5) rc = sqlite3_exec(c->db, vxk__entry_tables, NULL, NULL, NULL);
  if (version < 5) rc = vxk__migrate(c, version);
  return rc == SQLITE_OK ? vxk__carry_saved(c) : rc;
}

int vxk_discard(const char *dir, char *err, size_t errcap) {
  char path[4096], from[4200], to[4200];
  snprintf(path, sizeof path, "%s/cache.db", dir);
  static const char *const suffix[] = {"", "-wal"};
  for (size_t i = 0; i < 2; i++) {
    snprintf(from, sizeof from, "%s%s", path, suffix[i]);
    snprintf(to, sizeof to, "%s.corrupt%s", path, suffix[i]);
    if (rename(from, to) != 0 && errno != ENOENT) {
      snprintf(err, errcap, "cannot move %s aside: %s", from, strerror(errno));
      return VXK_EIO;
    }
  }
  snprintf(from, sizeof from, "%s-shm", path);
  if (unlink(from) != 0 && errno != ENOENT) {
    snprintf(err, errcap, "cannot remove %s: %s", from, strerror(errno));
    return VXK_EIO;
  }
  return VXK_OK;
}

void vxk_set_busy_timeout(vxk_cache *c, unsigned ms) { sqlite3_busy_timeout(c->db, (int)ms); }

const char *vxk_open_notice(const vxk_cache *c) { return c && c->notice[0] ? c->notice : NULL; }

int vxk_open(const char *dir, uint64_t max_bytes, vxk_cache **out, char *errbuf, size_t errcap) {
  vxk_cache *c = calloc(1, sizeof *c);
  if (!c) return VXK_ENOMEM;
  c->max_bytes = max_bytes ? max_bytes : VXK_DEFAULT_MAX_BYTES;
  int dfd;
  int trust = vxk__trust_dir(dir, 1, &dfd, errbuf, errcap);
  if (trust != VXK_OK) {
    free(c);
    return trust;
  }
  if (vxk__after_check) vxk__after_check(dir, vxk__after_check_ud);
  char path[4096], name[128], note[1200];
  snprintf(path, sizeof path, "%s/cache.db", dir);
  if ((trust = vxk__pin(c, dir, dfd, name, sizeof name, note, sizeof note, errbuf, errcap)) != VXK_OK) {
    free(c);
    return trust;
  }
  int rc = vxk__open_db(c, name);
  int moved = 0;
  if (vxk__damage(rc) || rc == SQLITE_MISMATCH) {
    /* Unreadable or foreign database: keep it for inspection, start anew. */
    snprintf(c->notice, sizeof c->notice,
             "%s could not be read (%s); kept as cache.db.corrupt, a new one started", path,
             rc == SQLITE_MISMATCH ? "another schema version"
             : c->db               ? sqlite3_errmsg(c->db)
                                   : sqlite3_errstr(rc));
    sqlite3_close(c->db);
    c->db = NULL;
    char why[512];
    if (vxk_discard(dir, why, sizeof why) != VXK_OK) snprintf(c->notice, sizeof c->notice, "%s", why);
    rc = vxk__open_db(c, name);
    moved = 1;
  }
  if (rc != SQLITE_OK) {
    snprintf(errbuf, errcap, "cannot open cache %s: %s", path,
             c->db ? sqlite3_errmsg(c->db) : sqlite3_errstr(rc));
    sqlite3_close(c->db);
    vxk_pin_close(c->pin);
    free(c);
    return VXK_EIO;
  }
  if (note[0]) { /* said with whatever else the open had to do */
    size_t used = strlen(c->notice);
    snprintf(c->notice + used, sizeof c->notice - used, "%s%s", used ? "; " : "", note);
  }
  if (vxk__load_total(c) != VXK_OK || (moved && vxk_counter_add(c, "corrupt", 1) != VXK_OK)) {
    snprintf(errbuf, errcap, "%s", c->err);
    vxk_close(c);
    return VXK_EIO;
  }
  if (vxk__prepare(c, VXK__GET_SQL, &c->get_entry) ||
      vxk__prepare(c, "DELETE FROM entries WHERE key=?1", &c->drop) ||
      vxk__prepare(c,
                   "UPDATE entries SET hits=hits+?4,"
                   " last_used_us=CASE WHEN last_used_us<?3 THEN ?2 ELSE last_used_us END"
                   " WHERE key=?1 AND (last_used_us<?3 OR ?5)",
                   &c->touch) ||
      vxk__prepare(c, "SELECT bytes FROM entries WHERE key=?1", &c->put_old) ||
      vxk__prepare(c, VXK__INSERT_ENTRY_SQL, &c->put_entry) ||
      vxk__prepare(c, VXK__INSERT_NAME_SQL, &c->put_kernel) ||
      vxk__prepare(c, VXK__INSERT_INPUTS_SQL, &c->put_inputs)) {
    snprintf(errbuf, errcap, "%s", c->err);
    vxk_close(c);
    return VXK_EIO;
  }
  *out = c;
  return VXK_OK;
}

/* Opens name read-only (flags added) and checks the schema version: 0, or
 * SQLITE_MISMATCH (another version) or another SQLite result code. */
static int vxk__open_schema_ro(vxk_cache *c, const char *name, int flags) {
  int rc = sqlite3_open_v2(name, &c->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOFOLLOW | flags, vxk_pin_vfs());
  sqlite3_stmt *st = NULL;
  if (rc != SQLITE_OK) return rc;
  sqlite3_busy_timeout(c->db, VXK_BUSY_TIMEOUT_MS);
  rc = sqlite3_prepare_v2(c->db, "SELECT v FROM meta WHERE k='schema_version'", -1, &st, NULL);
  if (rc != SQLITE_OK) return rc;
  rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) { /* an older cache is migrated by its next writer first */
    const char *v = (const char *)sqlite3_column_text(st, 0);
    rc = v && strcmp(v, VXK_SCHEMA_VERSION) == 0 ? SQLITE_OK : SQLITE_MISMATCH;
  } else if (rc == SQLITE_DONE)
    rc = SQLITE_MISMATCH;
  sqlite3_finalize(st);
  return rc;
}

int vxk_open_readonly(const char *dir, vxk_cache **out, char *errbuf, size_t errcap) {
  vxk_cache *c = calloc(1, sizeof *c);
  if (!c) return VXK_ENOMEM;
  c->max_bytes = VXK_DEFAULT_MAX_BYTES;
  int dfd;
  int trust = vxk__trust_dir(dir, 0, &dfd, errbuf, errcap);
  if (trust != VXK_OK) {
    free(c);
    return trust;
  }
  if (vxk__after_check) vxk__after_check(dir, vxk__after_check_ud);
  char path[4096], name[128], note[1200];
  snprintf(path, sizeof path, "%s/cache.db", dir);
  if ((trust = vxk__pin(c, dir, dfd, name, sizeof name, note, sizeof note, errbuf, errcap)) != VXK_OK) {
    free(c);
    return trust;
  }
  int rc = vxk__open_schema_ro(c, name, 0);
  if (rc != SQLITE_OK && rc != SQLITE_MISMATCH && access(dir, W_OK) != 0) {
    /* A WAL database needs its -shm file even to be read, and a directory
     * we cannot write cannot get one.  Nobody can write the database there
     * either (a writer needs its -wal beside it), so it is read as an
     * immutable file: no locks, no shared memory. */
    char uri[3 * sizeof name + 32];
    size_t n = (size_t)snprintf(uri, sizeof uri, "file:");
    for (const unsigned char *p = (const unsigned char *)name; *p && n + 4 < sizeof uri; p++)
      n += (size_t)(isalnum(*p) || strchr("/._-~", *p) ? snprintf(uri + n, sizeof uri - n, "%c", *p)
                                                       : snprintf(uri + n, sizeof uri - n, "%%%02X", *p));
    snprintf(uri + n, sizeof uri - n, "?immutable=1");
    sqlite3_close(c->db);
    c->db = NULL;
    rc = vxk__open_schema_ro(c, uri, SQLITE_OPEN_URI);
  }
  if (rc == SQLITE_OK && vxk__prepare(c, VXK__GET_SQL, &c->get_entry)) rc = SQLITE_ERROR;
  if (rc != SQLITE_OK) {
    snprintf(errbuf, errcap, "cannot read cache %s: %s", path,
             rc == SQLITE_MISMATCH ? "another schema version"
             : c->db               ? sqlite3_errmsg(c->db)
                                   : "open failed");
    vxk_close(c);
    return VXK_EIO;
  }
  *out = c;
  return VXK_OK;
}

void vxk_set_lru_resolution(vxk_cache *c, uint64_t us) { c->lru_resolution_us = us; }

static void vxk__touched_add(vxk_cache *c, const char *key, uint32_t hits);

/* Writes t's reads: each entry's LRU time when older than the resolution,
 * with its read count; with all, the read counts of the others too, else
 * those stay in c's own set (written by the next flush). */
static int vxk__touch(vxk_cache *c, const vxk_touches *t, int all) {
  if (t->n == 0) return VXK_OK;
  int rc = sqlite3_exec(c->db, "BEGIN", NULL, NULL, NULL);
  for (uint32_t i = 0; rc == SQLITE_OK && i < t->n; i++) {
    uint32_t hits = t->hits ? t->hits[i] : 1;
    sqlite3_bind_text(c->touch, 1, t->keys[i], -1, SQLITE_STATIC);
    sqlite3_bind_int64(c->touch, 2, (sqlite3_int64)t->used_us);
    sqlite3_bind_int64(c->touch, 3, (sqlite3_int64)(t->used_us - c->lru_resolution_us));
    sqlite3_bind_int64(c->touch, 4, hits);
    sqlite3_bind_int(c->touch, 5, all);
    rc = sqlite3_step(c->touch) == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(c->db);
    sqlite3_reset(c->touch);
    if (rc == SQLITE_OK && !all && sqlite3_changes(c->db) == 0 && hits) vxk__touched_add(c, t->keys[i], hits);
  }
  if (rc == SQLITE_OK) rc = sqlite3_exec(c->db, "COMMIT", NULL, NULL, NULL);
  if (rc != SQLITE_OK) {
    int out = vxk__fail(c, rc, "flush");
    vxk__rollback(c);
    return out;
  }
  return VXK_OK;
}

int vxk_touch(vxk_cache *c, const vxk_touches *t) {
  /* counts held back grow c's set: written whole before it fills */
  int rc = vxk__touch(c, t, 0);
  if (rc == VXK_OK && c->ntouched >= VXK_TOUCH_MAX / 2) rc = vxk_flush(c);
  return rc;
}

int vxk_touch_take(vxk_cache *c, vxk_touches *out) {
  *out = (vxk_touches){.used_us = c->touched_us};
  if (c->ntouched == 0) return VXK_OK;
  out->keys = malloc(c->ntouched * sizeof *out->keys);
  out->hits = malloc(c->ntouched * sizeof *out->hits);
  if (!out->keys || !out->hits) {
    free(out->keys);
    free(out->hits);
    *out = (vxk_touches){0};
    return VXK_ENOMEM;
  }
  memcpy(out->keys, c->touched, c->ntouched * sizeof *out->keys);
  memcpy(out->hits, c->touched_hits, c->ntouched * sizeof *out->hits);
  out->n = c->ntouched;
  c->ntouched = 0;
  if (c->seen) memset(c->seen, 0, c->seen_cap * sizeof *c->seen);
  return VXK_OK;
}

int vxk_flush(vxk_cache *c) {
  vxk_touches t;
  int rc = vxk_touch_take(c, &t);
  if (rc == VXK_OK) rc = vxk__touch(c, &t, 1);
  vxk_touches_clear(&t);
  return rc;
}

void vxk_touches_clear(vxk_touches *t) {
  if (!t) return;
  free(t->keys);
  free(t->hits);
  *t = (vxk_touches){0};
}

size_t vxk_key_hash(const char *key) {
  size_t h = 0;
  for (int i = 0; i < 12; i++)
    h = h << 4 | (size_t)(key[i] <= '9' ? key[i] - '0' : key[i] - 'a' + 10);
  return h;
}

/* Records hits reads of key (see vxk_get).  No-op when the set is full or
 * memory runs out. */
static void vxk__touched_add(vxk_cache *c, const char *key, uint32_t hits) {
  if (c->seen_cap < 2 * (c->ntouched + 1)) { /* grow the set and the table */
    if (c->ntouched >= VXK_TOUCH_MAX) return;
    uint32_t cap = c->touched_cap ? 2 * c->touched_cap : 64;
    char(*keys)[VXK_KEY_HEX + 1] = realloc(c->touched, cap * sizeof *keys);
    if (keys) c->touched = keys;
    uint32_t *counts = realloc(c->touched_hits, cap * sizeof *counts);
    if (counts) c->touched_hits = counts;
    uint32_t *seen = calloc(2 * cap, sizeof *seen);
    if (!keys || !counts || !seen) {
      free(seen);
      return;
    }
    free(c->seen);
    c->seen = seen;
    c->seen_cap = 2 * cap;
    c->touched_cap = cap;
    for (uint32_t i = 0; i < c->ntouched; i++) {
      size_t h = vxk_key_hash(c->touched[i]) & (c->seen_cap - 1);
      while (c->seen[h])
        h = (h + 1) & (c->seen_cap - 1);
      c->seen[h] = i + 1;
    }
  }
  size_t h = vxk_key_hash(key) & (c->seen_cap - 1);
  for (; c->seen[h]; h = (h + 1) & (c->seen_cap - 1))
    if (memcmp(c->touched[c->seen[h] - 1], key, VXK_KEY_HEX) == 0) {
      uint32_t *n = &c->touched_hits[c->seen[h] - 1];
      *n = *n > UINT32_MAX - hits ? UINT32_MAX : *n + hits;
      return;
    }
  memcpy(c->touched[c->ntouched], key, VXK_KEY_HEX + 1);
  c->touched_hits[c->ntouched] = hits;
  c->seen[h] = ++c->ntouched;
}

void vxk_close(vxk_cache *c) {
  if (!c) return;
  if (c->touch) vxk_flush(c);
  free(c->touched);
  free(c->touched_hits);
  free(c->seen);
  sqlite3_finalize(c->get_entry);
  sqlite3_finalize(c->drop);
  sqlite3_finalize(c->touch);
  sqlite3_finalize(c->put_old);
  sqlite3_finalize(c->put_entry);
  sqlite3_finalize(c->put_kernel);
  sqlite3_finalize(c->put_inputs);
  sqlite3_close(c->db);
  vxk_pin_close(c->pin); /* after every file of the database is closed */
  free(c);
}

int vxk_key_valid(const char *s) { return vxp_key_prefix_valid(s, VXK_KEY_HEX); }

/* Reads SUM(bytes) into c->total_bytes (at open, and after other
 * processes may have written). */
static int vxk__load_total(vxk_cache *c) {
  sqlite3_stmt *st = NULL;
  int rc = sqlite3_prepare_v2(c->db, "SELECT COALESCE(SUM(bytes),0) FROM entries", -1, &st, NULL);
  if (rc != SQLITE_OK) return vxk__fail(c, rc, "total");
  c->total_bytes = sqlite3_step(st) == SQLITE_ROW ? (uint64_t)sqlite3_column_int64(st, 0) : 0;
  sqlite3_finalize(st);
  return VXK_OK;
}

/* Evicts least recently used entries until at most 90% of max_bytes is used.
 * The running total decides whether to look at all; only then is the table
 * read (and the total re-read, in case another process shares the cache). */
static int vxk__evict_to(vxk_cache *c, uint64_t target, uint64_t *removed);

static int vxk__evict(vxk_cache *c) {
  if (c->total_bytes <= c->max_bytes) return VXK_OK;
  vxk_flush(c); /* pending reads count as use */
  int rc = vxk__load_total(c);
  if (rc != VXK_OK) return rc;
  if (c->total_bytes <= c->max_bytes) return VXK_OK;
  uint64_t removed = 0;
  return vxk__evict_to(c, c->max_bytes / 10 * 9, &removed);
}

int vxk_prune(vxk_cache *c, uint64_t max_bytes, uint64_t *removed) {
  *removed = 0;
  vxk_flush(c);
  int rc = vxk__load_total(c);
  if (rc != VXK_OK) return rc;
  return c->total_bytes <= max_bytes ? VXK_OK : vxk__evict_to(c, max_bytes, removed);
}

int vxk_clear(vxk_cache *c, uint64_t *removed) {
  *removed = 0;
  vxk_flush(c);
  sqlite3_stmt *st = NULL;
  int rc = sqlite3_prepare_v2(c->db, "SELECT COUNT(*) FROM entries", -1, &st, NULL);
  if (rc != SQLITE_OK) return vxk__fail(c, rc, "clear");
  uint64_t n = sqlite3_step(st) == SQLITE_ROW ? (uint64_t)sqlite3_column_int64(st, 0) : 0;
  sqlite3_finalize(st);
  rc = sqlite3_exec(c->db, "BEGIN IMMEDIATE; DELETE FROM kernels; DELETE FROM entries; COMMIT;", NULL, NULL,
                    NULL);
  if (rc != SQLITE_OK) {
    int out = vxk__fail(c, rc, "clear"); /* the failure's message, not the rollback's */
    vxk__rollback(c);
    return out;
  }
  c->total_bytes = 0;
  *removed = n;
  return VXK_OK;
}

int vxk_zero_counters(vxk_cache *c) {
  int rc = sqlite3_exec(c->db, "DELETE FROM counters", NULL, NULL, NULL);
  return rc == SQLITE_OK ? VXK_OK : vxk__fail(c, rc, "zero counters");
}

/* Deletes least recently used entries until at most target bytes remain,
 * VXK_EVICT_BATCH per transaction; counts them as evictions. */
static int vxk__evict_to(vxk_cache *c, uint64_t target, uint64_t *removed) {
  uint64_t total = c->total_bytes;
  int rc = VXK_OK;
  sqlite3_stmt *st = NULL;
  uint64_t evicted = 0;
  rc = sqlite3_prepare_v2(c->db, "SELECT key, bytes FROM entries ORDER BY last_used_us", -1, &st, NULL);
  if (rc != SQLITE_OK) return vxk__fail(c, rc, "evict");
  sqlite3_stmt *del = NULL;
  rc = sqlite3_prepare_v2(c->db, "DELETE FROM entries WHERE key=?1", -1, &del, NULL);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(st);
    return vxk__fail(c, rc, "evict");
  }
  /* the victims first (a read), then deleted VXK_EVICT_BATCH per
   * transaction: one commit per batch, not per entry */
  char(*victims)[VXK_KEY_HEX + 1] = NULL;
  size_t nv = 0, cap = 0;
  while (total > target && sqlite3_step(st) == SQLITE_ROW) {
    if (nv == cap) {
      cap = cap ? 2 * cap : 64;
      char(*v)[VXK_KEY_HEX + 1] = realloc(victims, cap * sizeof *v);
      if (!v) break;
      victims = v;
    }
    snprintf(victims[nv++], VXK_KEY_HEX + 1, "%s", (const char *)sqlite3_column_text(st, 0));
    total -= (uint64_t)sqlite3_column_int64(st, 1);
  }
  sqlite3_finalize(st);
  total = c->total_bytes;
  for (size_t i = 0; i < nv && rc == VXK_OK; i += VXK_EVICT_BATCH) {
    int erc = sqlite3_exec(c->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
    sqlite3_stmt *sz = NULL;
    if (erc == SQLITE_OK)
      erc = sqlite3_prepare_v2(c->db, "SELECT bytes FROM entries WHERE key=?1", -1, &sz, NULL);
    uint64_t freed = 0, n = 0;
    for (size_t k = i; erc == SQLITE_OK && k < nv && k < i + VXK_EVICT_BATCH; k++) {
      sqlite3_bind_text(sz, 1, victims[k], -1, SQLITE_STATIC);
      uint64_t b = sqlite3_step(sz) == SQLITE_ROW ? (uint64_t)sqlite3_column_int64(sz, 0) : 0;
      sqlite3_reset(sz);
      sqlite3_bind_text(del, 1, victims[k], -1, SQLITE_STATIC);
      erc = sqlite3_step(del) == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(c->db);
      sqlite3_reset(del);
      if (erc == SQLITE_OK && sqlite3_changes(c->db) > 0) freed += b, n++;
    }
    sqlite3_finalize(sz);
    if (erc == SQLITE_OK) erc = sqlite3_exec(c->db, "COMMIT", NULL, NULL, NULL);
    if (erc != SQLITE_OK) {
      rc = vxk__fail(c, erc, "evict");
      vxk__rollback(c);
      break;
    }
    total -= freed < total ? freed : total;
    evicted += n;
  }
  free(victims);
  sqlite3_finalize(del);
  c->total_bytes = total;
  *removed = evicted;
  if (rc != VXK_OK) return rc;
  return evicted ? vxk_counter_add(c, "evictions", (int64_t)evicted) : VXK_OK;
}

static void vxk__hash_lp(EVP_MD_CTX *h, const void *p, uint64_t n);

/* Steps a prepared statement that returns no row; resets it. */
static int vxk__step_done(vxk_cache *c, sqlite3_stmt *st) {
  int rc = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(c->db);
  sqlite3_reset(st);
  sqlite3_clear_bindings(st);
  return rc;
}

/* One row of the entries table, as vxk__insert writes it. */
typedef struct {
  const char *key;
  const uint8_t *entry; /* the encoded entry, size bytes */
  size_t size;
  uint64_t created_us, last_used_us, hits, compile_us;
  const char *source_name; /* NULL: not known */
} vxk__row;

/* Writes row r, whose entry v views, with ins_entry and the names of its
 * first VXK_LIST_NAMES kernels with ins_name (VXK__INSERT_*_SQL), inside
 * the caller's transaction.  0 or an SQLite result code. */
static int vxk__insert(vxk_cache *c, sqlite3_stmt *ins_entry, sqlite3_stmt *ins_name, const vxk__row *r,
                       const vxp_entry_view *v) {
  sqlite3_stmt *e = ins_entry;
  sqlite3_bind_text(e, 1, r->key, -1, SQLITE_STATIC);
  sqlite3_bind_int64(e, 2, (sqlite3_int64)r->created_us);
  sqlite3_bind_int64(e, 3, (sqlite3_int64)r->last_used_us);
  sqlite3_bind_int64(e, 4, (sqlite3_int64)r->hits);
  sqlite3_bind_int64(e, 5, (sqlite3_int64)r->size);
  sqlite3_bind_int64(e, 6, v->nkernels);
  sqlite3_bind_blob64(e, 7, r->entry, r->size, SQLITE_STATIC);
  sqlite3_bind_int64(e, 8, (sqlite3_int64)r->compile_us);
  sqlite3_bind_text(e, 9, r->source_name ? r->source_name : "", -1, SQLITE_STATIC);
  sqlite3_bind_text(e, 10, v->options, (int)v->options_len, SQLITE_STATIC);
  int rc = vxk__step_done(c, e);
  for (uint32_t i = 0; rc == SQLITE_OK && i < v->nkernels && i < VXK_LIST_NAMES; i++) {
    sqlite3_bind_text(ins_name, 1, r->key, -1, SQLITE_STATIC);
    sqlite3_bind_int64(ins_name, 2, i);
    sqlite3_bind_text(ins_name, 3, v->kernels[i].name, (int)v->kernels[i].name_len, SQLITE_STATIC);
    rc = vxk__step_done(c, ins_name);
  }
  return rc;
}

int vxk_put(vxk_cache *c, const char *key, const uint8_t *entry, size_t size, uint64_t compile_us,
            const char *source_name, const vxk_inputs *inputs) {
  if (!vxk_key_valid(key)) return VXK_EINVAL;
  vxp_entry_view v;
  int out = vxk_entry_check(key, entry, size, NULL, &v);
  if (out != VXK_OK) {
    snprintf(c->err, sizeof c->err, "put %s: %s", key,
             out == VXK_ENOMEM ? "out of memory" : "not a whole entry of that key");
    return out == VXK_ENOMEM ? out : VXK_EINVAL;
  }
  int rc = sqlite3_exec(c->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
  if (rc != SQLITE_OK) {
    vxp_entry_view_clear(&v);
    return vxk__fail(c, rc, "begin");
  }
  uint64_t replaced = 0; /* bytes of an entry this put replaces */
  sqlite3_bind_text(c->put_old, 1, key, -1, SQLITE_STATIC);
  if (sqlite3_step(c->put_old) == SQLITE_ROW) replaced = (uint64_t)sqlite3_column_int64(c->put_old, 0);
  sqlite3_reset(c->put_old);
  sqlite3_clear_bindings(c->put_old);
  uint64_t now = vxk__now_us();
  vxk__row row = {key, entry, size, now, now, 0, compile_us, source_name};
  rc = vxk__insert(c, c->put_entry, c->put_kernel, &row, &v);
  vxp_entry_view_clear(&v);
  if (rc == SQLITE_OK && inputs && inputs->parts) {
    sqlite3_bind_text(c->put_inputs, 1, key, -1, SQLITE_STATIC);
    sqlite3_bind_text(c->put_inputs, 2, inputs->parts, -1, SQLITE_STATIC);
    sqlite3_bind_blob64(c->put_inputs, 3, inputs->lines ? (const void *)inputs->lines : "",
                        inputs->lines_size, SQLITE_STATIC);
    rc = vxk__step_done(c, c->put_inputs);
  }
  if (rc != SQLITE_OK) out = vxk__fail(c, rc, "put");
  if (out == VXK_OK) {
    rc = sqlite3_exec(c->db, "COMMIT", NULL, NULL, NULL);
    if (rc != SQLITE_OK) out = vxk__fail(c, rc, "commit");
  }
  if (out != VXK_OK) {
    vxk__rollback(c);
    return out;
  }
  c->total_bytes = c->total_bytes - (replaced < c->total_bytes ? replaced : c->total_bytes) + size;
  return vxk__evict(c);
}

void vxk_entry_clear(vxk_entry *e) {
  if (!e) return;
  free(e->data);
  memset(e, 0, sizeof *e);
}

void vxk_mark_used(vxk_cache *c, const char *key) {
  if (!vxk_key_valid(key)) return;
  vxk__touched_add(c, key, 1);
  c->touched_us = vxk__now_us();
}

/* Reads the entry for key into *out and checks it (vxk_entry_check). */
static int vxk__read_entry(vxk_cache *c, const char *key, vxk_entry *out) {
  memset(out, 0, sizeof *out);
  sqlite3_stmt *st = c->get_entry;
  sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
  int rc = sqlite3_step(st), res = VXK_OK;
  if (rc == SQLITE_ROW) {
    out->size = (size_t)sqlite3_column_bytes(st, 0);
    out->data = malloc(out->size ? out->size : 1);
    if (!out->data)
      res = VXK_ENOMEM;
    else if (out->size)
      memcpy(out->data, sqlite3_column_blob(st, 0), out->size);
    out->compile_us = (uint64_t)sqlite3_column_int64(st, 1);
  } else
    res = rc == SQLITE_DONE ? VXK_ENOTFOUND : vxk__fail(c, rc, "get");
  sqlite3_reset(st);
  sqlite3_clear_bindings(st);
  if (res == VXK_OK) res = vxk_entry_check(key, out->data, out->size, NULL, NULL);
  if (res == VXK_ECORRUPT) snprintf(c->err, sizeof c->err, "entry %s fails its checksum", key);
  if (res != VXK_OK) vxk_entry_clear(out);
  return res;
}

int vxk_get(vxk_cache *c, const char *key, vxk_entry *out) {
  memset(out, 0, sizeof *out);
  if (!vxk_key_valid(key)) return VXK_EINVAL;
  int rc = vxk__read_entry(c, key, out);
  if (rc != VXK_OK) return rc;
  /* LRU bookkeeping, written by the next vxk_flush() or vxk_touch() */
  vxk__touched_add(c, key, 1);
  c->touched_us = vxk__now_us();
  return VXK_OK;
}

/* ---- migration from version 3 and 4 ---- */

/* Version 4's checksum: SHA-256 over a domain tag, the key, the object,
 * then each kernel's name and record, each length-prefixed.  0 or
 * VXK_ENOMEM. */
static int vxk__v4_checksum(const char *key, const uint8_t *object, size_t object_size,
                            const vxp_entry_kernel *ks, uint32_t n, uint8_t out[VXK_CHECKSUM_SIZE]) {
  EVP_MD_CTX *h = EVP_MD_CTX_new();
  if (!h || !EVP_DigestInit_ex(h, EVP_sha256(), NULL)) {
    EVP_MD_CTX_free(h);
    return VXK_ENOMEM;
  }
  static const char tag[] = "vortexd cache entry v1";
  vxk__hash_lp(h, tag, sizeof tag - 1);
  vxk__hash_lp(h, key, strlen(key));
  vxk__hash_lp(h, object, object_size);
  for (uint32_t i = 0; i < n; i++) {
    vxk__hash_lp(h, ks[i].name, ks[i].name_len);
    vxk__hash_lp(h, ks[i].record, ks[i].record_size);
  }
  unsigned int len = 0;
  int ok = EVP_DigestFinal_ex(h, out, &len) && len == VXK_CHECKSUM_SIZE;
  EVP_MD_CTX_free(h);
  return ok ? VXK_OK : VXK_ENOMEM;
}

/* The statements a migration runs. */
typedef struct {
  sqlite3_stmt *rows, *records, *ins_entry, *ins_name;
  uint64_t dropped; /* entries that failed their old checksum */
} vxk__migration;

/* Reads the kernel rows of key (version 4) into *ks, their names and
 * records copied one after the other into *block (both malloc()).
 * VXK_OK or an error. */
static int vxk__v4_records(vxk_cache *c, vxk__migration *m, const char *key, vxp_entry_kernel **ks,
                           uint32_t *n, uint8_t **block) {
  *ks = NULL, *n = 0, *block = NULL;
  size_t used = 0, cap = 0, *ends = NULL; /* per kernel: end of its name, end of its record */
  uint32_t kcap = 0;
  int rc = SQLITE_DONE, res = VXK_OK;
  sqlite3_bind_text(m->records, 1, key, -1, SQLITE_STATIC);
  while (res == VXK_OK && (rc = sqlite3_step(m->records)) == SQLITE_ROW) {
    size_t nl = (size_t)sqlite3_column_bytes(m->records, 0), rl = (size_t)sqlite3_column_bytes(m->records, 1);
    if (*n == kcap) {
      kcap = kcap ? 2 * kcap : 8;
      size_t *ne = realloc(ends, 2 * kcap * sizeof *ne);
      if (!ne) res = VXK_ENOMEM;
      if (ne) ends = ne;
    }
    if (res == VXK_OK && used + nl + rl + 1 > cap) {
      cap = 2 * (used + nl + rl + 1);
      uint8_t *nb = realloc(*block, cap);
      if (!nb) res = VXK_ENOMEM;
      if (nb) *block = nb;
    }
    if (res != VXK_OK) break;
    if (nl) memcpy(*block + used, sqlite3_column_blob(m->records, 0), nl);
    if (rl) memcpy(*block + used + nl, sqlite3_column_blob(m->records, 1), rl);
    used += nl + rl;
    ends[2 * *n] = used - rl;
    ends[2 * *n + 1] = used;
    (*n)++;
  }
  if (res == VXK_OK && rc != SQLITE_DONE) res = vxk__fail(c, rc, "migrate");
  sqlite3_reset(m->records);
  if (res == VXK_OK && !(*ks = calloc(*n ? *n : 1, sizeof **ks))) res = VXK_ENOMEM;
  size_t start = 0;
  for (uint32_t i = 0; res == VXK_OK && i < *n; start = ends[2 * i + 1], i++)
    (*ks)[i] = (vxp_entry_kernel){(const char *)*block + start, ends[2 * i] - start, *block + ends[2 * i],
                                  ends[2 * i + 1] - ends[2 * i]};
  free(ends);
  return res;
}

/* Re-encodes the version 4 entry on m->rows' current row, or drops it
 * when it fails its old checksum.  VXK_OK or an error. */
static int vxk__migrate_one(vxk_cache *c, vxk__migration *m) {
  sqlite3_stmt *r = m->rows;
  const char *key = (const char *)sqlite3_column_text(r, 0);
  if (!vxk_key_valid(key)) {
    m->dropped++;
    return VXK_OK;
  }
  char k[VXK_KEY_HEX + 1];
  memcpy(k, key, sizeof k);
  vxp_entry_kernel *ks = NULL;
  uint32_t n = 0;
  uint8_t *block = NULL, *entry = NULL;
  size_t size = 0;
  int res = vxk__v4_records(c, m, k, &ks, &n, &block);
  const uint8_t *object = sqlite3_column_blob(r, 4);
  size_t object_size = (size_t)sqlite3_column_bytes(r, 4);
  uint8_t sum[VXK_CHECKSUM_SIZE];
  int whole = res == VXK_OK && n > 0 && sqlite3_column_bytes(r, 5) == VXK_CHECKSUM_SIZE &&
              vxk__v4_checksum(k, object ? object : (const uint8_t *)"", object_size, ks, n, sum) == VXK_OK &&
              memcmp(sum, sqlite3_column_blob(r, 5), sizeof sum) == 0;
  const char *options = (const char *)sqlite3_column_text(r, 8);
  if (whole && options && strlen(options) > VXP_ENTRY_OPTIONS_MAX) options = "";
  int erc = whole ? vxk_entry_encode(k, options ? options : "", object ? object : (const uint8_t *)"",
                                     object_size, NULL, 0, ks, n, NULL, &entry, &size)
                  : VXK_EINVAL;
  vxp_entry_view v;
  if (erc == VXK_OK) erc = vxk_entry_check_records(k, entry, size, NULL); /* records a client takes */
  if (erc == VXK_OK) erc = vxk_entry_check(k, entry, size, NULL, &v);
  if (res == VXK_OK && erc == VXK_ENOMEM) res = erc;
  if (res == VXK_OK && erc != VXK_OK) m->dropped++;
  if (res == VXK_OK && erc == VXK_OK) {
    vxk__row row = {k,
                    entry,
                    size,
                    (uint64_t)sqlite3_column_int64(r, 1),
                    (uint64_t)sqlite3_column_int64(r, 2),
                    (uint64_t)sqlite3_column_int64(r, 3),
                    (uint64_t)sqlite3_column_int64(r, 6),
                    (const char *)sqlite3_column_text(r, 7)};
    int src = vxk__insert(c, m->ins_entry, m->ins_name, &row, &v);
    if (src != SQLITE_OK) res = vxk__fail(c, src, "migrate");
  }
  if (erc == VXK_OK) vxp_entry_view_clear(&v);
  free(entry);
  free(ks);
  free(block);
  return res;
}

/* Migrates a version 3 or 4 cache to this version in one transaction
 * (see the file comment).  0 or an SQLite result code. */
static int vxk__migrate(vxk_cache *c, int version) {
  vxk__migration m = {0};
  int rc = sqlite3_exec(c->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
  if (rc == SQLITE_OK && version == 3)
    rc = sqlite3_exec(c->db,
                      "ALTER TABLE entries ADD COLUMN source_name TEXT NOT NULL DEFAULT '';"
                      "ALTER TABLE entries ADD COLUMN options TEXT NOT NULL DEFAULT '';",
                      NULL, NULL, NULL);
  if (rc == SQLITE_OK)
    rc = sqlite3_exec(c->db,
                      "DROP INDEX IF EXISTS entries_lru;"
                      "ALTER TABLE kernels RENAME TO kernels_v4;"
                      "ALTER TABLE entries RENAME TO entries_v4;" VXK__ENTRY_TABLES(""),
                      NULL, NULL, NULL);
  if (rc == SQLITE_OK)
    rc = sqlite3_prepare_v2(c->db,
                            "SELECT key, created_us, last_used_us, hits, object, checksum, compile_us,"
                            " source_name, options FROM entries_v4",
                            -1, &m.rows, NULL);
  if (rc == SQLITE_OK)
    rc = sqlite3_prepare_v2(c->db, "SELECT name, metadata FROM kernels_v4 WHERE key=?1 ORDER BY ordinal", -1,
                            &m.records, NULL);
  if (rc == SQLITE_OK) rc = sqlite3_prepare_v2(c->db, VXK__INSERT_ENTRY_SQL, -1, &m.ins_entry, NULL);
  if (rc == SQLITE_OK) rc = sqlite3_prepare_v2(c->db, VXK__INSERT_NAME_SQL, -1, &m.ins_name, NULL);
  int res = VXK_OK;
  while (rc == SQLITE_OK && res == VXK_OK) {
    int step = sqlite3_step(m.rows);
    if (step == SQLITE_DONE) break;
    if (step != SQLITE_ROW) rc = step;
    if (step == SQLITE_ROW) res = vxk__migrate_one(c, &m);
  }
  if (rc == SQLITE_OK && res != VXK_OK) rc = SQLITE_ERROR;
  sqlite3_finalize(m.rows);
  sqlite3_finalize(m.records);
  sqlite3_finalize(m.ins_entry);
  sqlite3_finalize(m.ins_name);
  char sql[256];
  snprintf(sql, sizeof sql,
           "DROP TABLE kernels_v4; DROP TABLE entries_v4;"
           "UPDATE meta SET v='" VXK_SCHEMA_VERSION "' WHERE k='schema_version';"
           "INSERT INTO counters(name, value) VALUES('corrupt', %llu)"
           " ON CONFLICT(name) DO UPDATE SET value = value + excluded.value;"
           "COMMIT;",
           (unsigned long long)m.dropped);
  if (rc == SQLITE_OK) rc = sqlite3_exec(c->db, sql, NULL, NULL, NULL);
  if (rc != SQLITE_OK) vxk__rollback(c);
  return rc;
}

int vxk_drop(vxk_cache *c, const char *key) {
  if (!vxk_key_valid(key)) return VXK_EINVAL;
  /* only while it still fails: a put may have replaced it since it was
   * found damaged, or an earlier drop of the same damage may have run */
  vxk_entry e;
  int rc = vxk__read_entry(c, key, &e);
  if (rc == VXK_OK) vxk_entry_clear(&e);
  if (rc == VXK_OK) return VXK_ENOTFOUND;
  if (rc != VXK_ECORRUPT) return rc;
  uint64_t bytes = 0;
  sqlite3_bind_text(c->put_old, 1, key, -1, SQLITE_STATIC);
  if (sqlite3_step(c->put_old) == SQLITE_ROW) bytes = (uint64_t)sqlite3_column_int64(c->put_old, 0);
  sqlite3_reset(c->put_old);
  sqlite3_clear_bindings(c->put_old);
  sqlite3_bind_text(c->drop, 1, key, -1, SQLITE_STATIC);
  rc = vxk__step_done(c, c->drop);
  if (rc != SQLITE_OK) return vxk__fail(c, rc, "drop");
  if (sqlite3_changes(c->db) == 0) return VXK_ENOTFOUND;
  c->total_bytes -= bytes < c->total_bytes ? bytes : c->total_bytes;
  return VXK_OK;
}

int vxk_remove(vxk_cache *c, const char *key) {
  if (!vxk_key_valid(key)) return VXK_EINVAL;
  uint64_t bytes = 0;
  sqlite3_bind_text(c->put_old, 1, key, -1, SQLITE_STATIC);
  if (sqlite3_step(c->put_old) == SQLITE_ROW) bytes = (uint64_t)sqlite3_column_int64(c->put_old, 0);
  sqlite3_reset(c->put_old);
  sqlite3_clear_bindings(c->put_old);
  sqlite3_bind_text(c->drop, 1, key, -1, SQLITE_STATIC);
  int rc = vxk__step_done(c, c->drop);
  if (rc != SQLITE_OK) return vxk__fail(c, rc, "remove");
  if (sqlite3_changes(c->db) == 0) return VXK_ENOTFOUND;
  c->total_bytes -= bytes < c->total_bytes ? bytes : c->total_bytes;
  return VXK_OK;
}

/* SQLite's own structural check of the whole file, read from the disk (the
 * page cache dropped first: pages read before a damage would hide it).
 * VXK_OK, VXK_EDAMAGED with the first problem in c->err, or VXK_EIO. */
static int vxk__quick_check(vxk_cache *c) {
  sqlite3_db_release_memory(c->db);
  sqlite3_stmt *st = NULL;
  int rc = sqlite3_prepare_v2(c->db, "PRAGMA quick_check(1)", -1, &st, NULL);
  if (rc != SQLITE_OK) return vxk__fail(c, rc, "integrity check");
  rc = sqlite3_step(st);
  int out = VXK_OK;
  if (rc != SQLITE_ROW) {
    out = vxk__fail(c, rc, "integrity check");
  } else if (strcmp((const char *)sqlite3_column_text(st, 0), "ok") != 0) {
    snprintf(c->err, sizeof c->err, "integrity check: %s", (const char *)sqlite3_column_text(st, 0));
    out = VXK_EDAMAGED;
  }
  sqlite3_finalize(st);
  return out;
}

int vxk_verify(vxk_cache *c, int drop, uint64_t *checked, uint64_t *corrupt) {
  *checked = *corrupt = 0;
  int qc = vxk__quick_check(c);
  if (qc != VXK_OK) return qc;
  sqlite3_stmt *st = NULL;
  int rc = sqlite3_prepare_v2(c->db, "SELECT key FROM entries", -1, &st, NULL);
  if (rc != SQLITE_OK) return vxk__fail(c, rc, "verify");
  char(*bad)[VXK_KEY_HEX + 1] = NULL;
  size_t nbad = 0, cap = 0;
  int out = VXK_OK;
  while (out == VXK_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
    const char *key = (const char *)sqlite3_column_text(st, 0);
    vxk_entry e;
    int r = vxk_key_valid(key) ? vxk__read_entry(c, key, &e) : VXK_ECORRUPT;
    (*checked)++;
    if (r == VXK_OK) { /* whole: and records a client takes */
      r = vxk_entry_check_records(key, e.data, e.size, NULL);
      vxk_entry_clear(&e);
      if (r == VXK_OK) continue;
    }
    if (r != VXK_ECORRUPT && r != VXK_ENOTFOUND) {
      out = r;
      break;
    }
    (*corrupt)++;
    if (nbad == cap) {
      cap = cap ? 2 * cap : 16;
      char(*nb)[VXK_KEY_HEX + 1] = realloc(bad, cap * sizeof *nb);
      if (!nb) {
        out = VXK_ENOMEM;
        break;
      }
      bad = nb;
    }
    snprintf(bad[nbad++], VXK_KEY_HEX + 1, "%s", key ? key : "");
  }
  if (out == VXK_OK && rc != SQLITE_DONE) out = vxk__fail(c, rc, "verify");
  sqlite3_finalize(st);
  if (out == VXK_OK && drop && nbad) { /* by rowid-free key match, also for keys that are not valid */
    sqlite3_stmt *del = NULL;
    rc = sqlite3_prepare_v2(c->db, "DELETE FROM entries WHERE key=?1", -1, &del, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_exec(c->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
    for (size_t i = 0; rc == SQLITE_OK && i < nbad; i++) {
      sqlite3_bind_text(del, 1, bad[i], -1, SQLITE_STATIC);
      rc = sqlite3_step(del) == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(c->db);
      sqlite3_reset(del);
    }
    if (rc == SQLITE_OK) rc = sqlite3_exec(c->db, "COMMIT", NULL, NULL, NULL);
    sqlite3_finalize(del);
    if (rc != SQLITE_OK) {
      out = vxk__fail(c, rc, "verify");
      vxk__rollback(c);
    } else {
      out = vxk__load_total(c);
      if (out == VXK_OK) out = vxk_counter_add(c, "corrupt", (int64_t)nbad);
    }
  }
  free(bad);
  return out;
}

int vxk_counter_add(vxk_cache *c, const char *name, int64_t delta) {
  sqlite3_stmt *st = NULL;
  int rc = sqlite3_prepare_v2(c->db,
                              "INSERT INTO counters(name, value) VALUES(?1, ?2)"
                              " ON CONFLICT(name) DO UPDATE SET value = value + ?2",
                              -1, &st, NULL);
  if (rc == SQLITE_OK) {
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, delta);
    rc = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(c->db);
  }
  sqlite3_finalize(st);
  return rc == SQLITE_OK ? VXK_OK : vxk__fail(c, rc, "counter");
}

int vxk_counters_add(vxk_cache *c, size_t n, const char *const *names, const int64_t *deltas) {
  int rc = sqlite3_exec(c->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
  if (rc != SQLITE_OK) return vxk__fail(c, rc, "counters");
  int vrc = VXK_OK;
  for (size_t i = 0; i < n && vrc == VXK_OK; i++)
    if (deltas[i]) vrc = vxk_counter_add(c, names[i], deltas[i]);
  if (vrc == VXK_OK && (rc = sqlite3_exec(c->db, "COMMIT", NULL, NULL, NULL)) != SQLITE_OK)
    vrc = vxk__fail(c, rc, "counters");
  if (vrc != VXK_OK) vxk__rollback(c);
  return vrc;
}

int vxk_stats_get(vxk_cache *c, vxk_stats *out) {
  memset(out, 0, sizeof *out);
  sqlite3_stmt *st = NULL;
  int rc = sqlite3_prepare_v2(c->db, "SELECT COUNT(*), COALESCE(SUM(bytes),0) FROM entries", -1, &st, NULL);
  if (rc != SQLITE_OK) return vxk__fail(c, rc, "stats");
  if (sqlite3_step(st) == SQLITE_ROW) {
    out->entries = (uint64_t)sqlite3_column_int64(st, 0);
    out->bytes = (uint64_t)sqlite3_column_int64(st, 1);
  }
  out->max_bytes = c->max_bytes;
  sqlite3_finalize(st);
  rc = sqlite3_prepare_v2(c->db, "SELECT name, value FROM counters", -1, &st, NULL);
  if (rc != SQLITE_OK) return vxk__fail(c, rc, "stats");
  while (sqlite3_step(st) == SQLITE_ROW) {
    const char *n = (const char *)sqlite3_column_text(st, 0);
    uint64_t v = (uint64_t)sqlite3_column_int64(st, 1);
    static const struct {
      const char *name;
      size_t off;
    } fields[] = {
#define VXK__COUNTER(name) {#name, offsetof(vxk_stats, name)},
        VXP_PERSISTENT_COUNTERS(VXK__COUNTER)
#undef VXK__COUNTER
    };
    for (size_t i = 0; n && i < sizeof fields / sizeof *fields; i++)
      if (strcmp(n, fields[i].name) == 0) memcpy((char *)out + fields[i].off, &v, sizeof v);
  }
  sqlite3_finalize(st);
  return VXK_OK;
}

static void vxk__hash_lp(EVP_MD_CTX *h, const void *p, uint64_t n) {
  uint8_t le[8];
  for (int i = 0; i < 8; i++)
    le[i] = (uint8_t)(n >> (8 * i));
  EVP_DigestUpdate(h, le, sizeof le);
  EVP_DigestUpdate(h, p, (size_t)n);
}

int vxk_prepare(void) {
  EVP_MD *md = EVP_MD_fetch(NULL, "SHA2-256", NULL); /* stays in the method cache when freed */
  if (!md) return VXK_ENOMEM;
  EVP_MD_free(md);
  return VXK_OK;
}

int vxk_key(const uint8_t *source, size_t len, const char *const *parts, size_t nparts,
            char out[VXK_KEY_HEX + 1]) {
  EVP_MD_CTX *h = EVP_MD_CTX_new();
  if (!h) return VXK_ENOMEM;
  unsigned char md[32];
  unsigned int mdlen = 0;
  static const char tag[] = "vortexd cache key v1";
  int ok = EVP_DigestInit_ex(h, EVP_sha256(), NULL);
  if (ok) {
    vxk__hash_lp(h, tag, sizeof tag - 1);
    for (size_t i = 0; i < nparts; i++)
      vxk__hash_lp(h, parts[i], strlen(parts[i]));
    vxk__hash_lp(h, source, len);
    ok = EVP_DigestFinal_ex(h, md, &mdlen);
  }
  EVP_MD_CTX_free(h);
  if (!ok || mdlen != 32) return VXK_ENOMEM;
  static const char hex[] = "0123456789abcdef";
  for (int i = 0; i < 32; i++) {
    out[2 * i] = hex[md[i] >> 4];
    out[2 * i + 1] = hex[md[i] & 15];
  }
  out[VXK_KEY_HEX] = '\0';
  return VXK_OK;
}

static char *vxk__column_dup(sqlite3_stmt *st, int col);

int vxk_line_hashes(const uint8_t *source, size_t len, uint8_t **out, size_t *out_size) {
  *out = NULL;
  *out_size = 0;
  size_t lines = 0;
  for (size_t i = 0; i < len; i++)
    lines += source[i] == '\n';
  if (len && source[len - 1] != '\n') lines++; /* a last line without its newline */
  if (lines > VXK_MAX_LINES) lines = VXK_MAX_LINES;
  uint8_t *h = malloc(lines ? lines * VXK_LINE_HASH_BYTES : 1);
  EVP_MD_CTX *ctx = h ? EVP_MD_CTX_new() : NULL;
  if (!ctx) {
    free(h);
    return VXK_ENOMEM;
  }
  size_t at = 0;
  for (size_t n = 0; n < lines; n++) {
    const uint8_t *nl = memchr(source + at, '\n', len - at);
    size_t end = nl ? (size_t)(nl - source) : len;
    unsigned char md[32];
    unsigned int mdlen = 0;
    if (!EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) || !EVP_DigestUpdate(ctx, source + at, end - at) ||
        !EVP_DigestFinal_ex(ctx, md, &mdlen)) {
      EVP_MD_CTX_free(ctx);
      free(h);
      return VXK_ENOMEM;
    }
    memcpy(h + n * VXK_LINE_HASH_BYTES, md, VXK_LINE_HASH_BYTES);
    at = end + 1;
  }
  EVP_MD_CTX_free(ctx);
  *out = h;
  *out_size = lines * VXK_LINE_HASH_BYTES;
  return VXK_OK;
}

size_t vxk_first_differing_line(const uint8_t *a, size_t a_size, const uint8_t *b, size_t b_size) {
  size_t na = a_size / VXK_LINE_HASH_BYTES, nb = b_size / VXK_LINE_HASH_BYTES;
  size_t n = na < nb ? na : nb;
  for (size_t i = 0; i < n; i++)
    if (memcmp(a + i * VXK_LINE_HASH_BYTES, b + i * VXK_LINE_HASH_BYTES, VXK_LINE_HASH_BYTES) != 0)
      return i + 1;
  return na == nb ? 0 : n + 1;
}

int vxk_has(vxk_cache *c, const char *key) {
  if (!vxk_key_valid(key)) return VXK_EINVAL;
  sqlite3_stmt *st = NULL;
  int rc = sqlite3_prepare_v2(c->db, "SELECT 1 FROM entries WHERE key=?1", -1, &st, NULL);
  if (rc != SQLITE_OK) return vxk__fail(c, rc, "lookup");
  sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
  rc = sqlite3_step(st);
  int res = rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 : vxk__fail(c, rc, "lookup");
  sqlite3_finalize(st);
  return res;
}

void vxk_inputs_clear(vxk_inputs_row *v, uint32_t n) {
  for (uint32_t i = 0; v && i < n; i++) {
    free(v[i].parts);
    free(v[i].lines);
  }
  free(v);
}

int vxk_inputs_of_source(vxk_cache *c, const char *source_name, uint32_t limit, vxk_inputs_row **out,
                         uint32_t *n) {
  *out = NULL;
  *n = 0;
  if (limit > VXK_LIST_MAX) limit = VXK_LIST_MAX;
  vxk_inputs_row *v = calloc(limit ? limit : 1, sizeof *v);
  if (!v) return VXK_ENOMEM;
  sqlite3_stmt *st = NULL;
  /* entries without a record of their inputs (fetched from the shared
   * level by key) are listed too, with parts NULL */
  int rc = sqlite3_prepare_v2(c->db,
                              "SELECT e.key, e.last_used_us, i.parts, i.lines FROM entries e"
                              " LEFT JOIN inputs i ON i.key = e.key WHERE e.source_name = ?1"
                              " ORDER BY e.last_used_us DESC, e.key LIMIT ?2",
                              -1, &st, NULL);
  int res = rc == SQLITE_OK ? VXK_OK : vxk__fail(c, rc, "inputs");
  uint32_t got = 0;
  if (res == VXK_OK) {
    sqlite3_bind_text(st, 1, source_name ? source_name : "", -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, limit);
    while (res == VXK_OK && got < limit && (rc = sqlite3_step(st)) == SQLITE_ROW) {
      vxk_inputs_row *r = &v[got++];
      const unsigned char *key = sqlite3_column_text(st, 0);
      snprintf(r->key, sizeof r->key, "%s", key ? (const char *)key : "");
      r->last_used_us = (uint64_t)sqlite3_column_int64(st, 1);
      if (sqlite3_column_type(st, 2) != SQLITE_NULL) {
        r->parts = vxk__column_dup(st, 2);
        int bytes = sqlite3_column_bytes(st, 3);
        r->lines_size = bytes > 0 ? (size_t)bytes - (size_t)bytes % VXK_LINE_HASH_BYTES : 0;
        r->lines = malloc(r->lines_size ? r->lines_size : 1);
        if (!r->parts || !r->lines)
          res = VXK_ENOMEM;
        else if (r->lines_size)
          memcpy(r->lines, sqlite3_column_blob(st, 3), r->lines_size);
      }
    }
    if (res == VXK_OK && got < limit && rc != SQLITE_DONE) res = vxk__fail(c, rc, "inputs");
  }
  sqlite3_finalize(st);
  if (res != VXK_OK) {
    vxk_inputs_clear(v, got);
    return res;
  }
  *out = v;
  *n = got;
  return VXK_OK;
}

void vxk_info_clear(vxk_info *v, uint32_t n) {
  for (uint32_t i = 0; v && i < n; i++) {
    free(v[i].source_name);
    free(v[i].options);
    for (uint32_t k = 0; k < v[i].nnames; k++)
      free(v[i].kernel_names[k]);
    free(v[i].kernel_names);
  }
  free(v);
}

static char *vxk__column_dup(sqlite3_stmt *st, int col) {
  const unsigned char *t = sqlite3_column_text(st, col);
  return strdup(t ? (const char *)t : "");
}

/* Reads up to VXK_LIST_NAMES kernel names of v->key into v. */
static int vxk__list_names(vxk_cache *c, sqlite3_stmt *names, vxk_info *v) {
  sqlite3_bind_text(names, 1, v->key, -1, SQLITE_STATIC);
  sqlite3_bind_int(names, 2, VXK_LIST_NAMES);
  int rc, out = VXK_OK;
  v->kernel_names = calloc(VXK_LIST_NAMES, sizeof *v->kernel_names);
  if (!v->kernel_names) out = VXK_ENOMEM;
  while (out == VXK_OK && (rc = sqlite3_step(names)) == SQLITE_ROW) {
    if (!(v->kernel_names[v->nnames] = vxk__column_dup(names, 0)))
      out = VXK_ENOMEM;
    else
      v->nnames++;
  }
  if (out == VXK_OK && rc != SQLITE_DONE) out = vxk__fail(c, rc, "list");
  sqlite3_reset(names);
  return out;
}

int vxk_list(vxk_cache *c, const char *prefix, uint32_t limit, vxk_info **out, uint32_t *n,
             uint64_t *matched) {
  *out = NULL;
  *n = 0;
  *matched = 0;
  if (!prefix) prefix = "";
  if (!vxp_key_prefix_valid(prefix, 0)) return VXK_EINVAL;
  if (limit > VXK_LIST_MAX) limit = VXK_LIST_MAX;
  char glob[VXK_KEY_HEX + 2];
  snprintf(glob, sizeof glob, "%s*", prefix); /* hex digits: no GLOB metacharacters */
  sqlite3_stmt *count = NULL, *rows = NULL, *names = NULL;
  int rc = sqlite3_prepare_v2(c->db, "SELECT COUNT(*) FROM entries WHERE key GLOB ?1", -1, &count, NULL);
  if (rc == SQLITE_OK)
    rc = sqlite3_prepare_v2(c->db,
                            "SELECT key, source_name, options, bytes, created_us, last_used_us, hits,"
                            " compile_us, nkernels FROM entries WHERE key GLOB ?1"
                            " ORDER BY last_used_us DESC, key LIMIT ?2",
                            -1, &rows, NULL);
  if (rc == SQLITE_OK)
    rc = sqlite3_prepare_v2(c->db, "SELECT name FROM kernels WHERE key=?1 ORDER BY ordinal LIMIT ?2", -1,
                            &names, NULL);
  int res = rc == SQLITE_OK ? VXK_OK : vxk__fail(c, rc, "list");
  /* one read transaction: the count and the rows agree */
  if (res == VXK_OK && (rc = sqlite3_exec(c->db, "BEGIN", NULL, NULL, NULL)) != SQLITE_OK)
    res = vxk__fail(c, rc, "list");
  int began = res == VXK_OK;
  if (res == VXK_OK) {
    sqlite3_bind_text(count, 1, glob, -1, SQLITE_STATIC);
    if ((rc = sqlite3_step(count)) == SQLITE_ROW)
      *matched = (uint64_t)sqlite3_column_int64(count, 0);
    else
      res = vxk__fail(c, rc, "list");
  }
  uint64_t want = *matched < limit ? *matched : limit;
  vxk_info *v = res == VXK_OK ? calloc(want ? want : 1, sizeof *v) : NULL;
  if (res == VXK_OK && !v) res = VXK_ENOMEM;
  uint32_t got = 0;
  if (res == VXK_OK) {
    sqlite3_bind_text(rows, 1, glob, -1, SQLITE_STATIC);
    sqlite3_bind_int64(rows, 2, (sqlite3_int64)want);
    while (res == VXK_OK && got < want && (rc = sqlite3_step(rows)) == SQLITE_ROW) {
      vxk_info *e = &v[got++];
      const unsigned char *key = sqlite3_column_text(rows, 0);
      snprintf(e->key, sizeof e->key, "%s", key ? (const char *)key : "");
      e->source_name = vxk__column_dup(rows, 1);
      e->options = vxk__column_dup(rows, 2);
      e->bytes = (uint64_t)sqlite3_column_int64(rows, 3);
      e->created_us = (uint64_t)sqlite3_column_int64(rows, 4);
      e->last_used_us = (uint64_t)sqlite3_column_int64(rows, 5);
      e->hits = (uint64_t)sqlite3_column_int64(rows, 6);
      e->compile_us = (uint64_t)sqlite3_column_int64(rows, 7);
      e->nkernels = (uint32_t)sqlite3_column_int64(rows, 8);
      if (!e->source_name || !e->options) res = VXK_ENOMEM;
    }
    if (res == VXK_OK && got < want && rc != SQLITE_DONE) res = vxk__fail(c, rc, "list");
  }
  sqlite3_reset(rows);
  for (uint32_t i = 0; res == VXK_OK && i < got; i++)
    res = vxk__list_names(c, names, &v[i]);
  if (began) sqlite3_exec(c->db, "COMMIT", NULL, NULL, NULL);
  sqlite3_finalize(count);
  sqlite3_finalize(rows);
  sqlite3_finalize(names);
  if (res != VXK_OK) {
    vxk_info_clear(v, got);
    return res;
  }
  *out = v;
  *n = got;
  return VXK_OK;
}
