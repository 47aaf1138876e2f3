/* test_cache.c - cache/: put, get, restart, keys, eviction, corruption, the
 * entry's checksum and encoding, migration. */
#define _GNU_SOURCE /* memmem */
#include <criterion/criterion.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sqlite3.h>

#include <openssl/evp.h>

#include "cache/vxk.h"
#include "cache/vxk_entry.h"
#include "cache/vxk_remote.h"
#include "vxt.h"

static char dir[64];

static void setup(void) {
  vxt_tmp_template(dir, sizeof dir, "vxk-test-");
  cr_assert_not_null(mkdtemp(dir));
}

static void teardown(void) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  cr_assert_eq(system(cmd), 0);
}

static vxk_cache *open_cache(uint64_t max) {
  vxk_cache *c = NULL;
  char err[256];
  cr_assert_eq(vxk_open(dir, max, &c, err, sizeof err), VXK_OK, "%s", err);
  return c;
}

static void key_for(const char *src, char key[VXK_KEY_HEX + 1]) {
  const char *parts[] = {"test"};
  cr_assert_eq(vxk_key((const uint8_t *)src, strlen(src), parts, 1, key), VXK_OK);
}

/* A kernel of a test entry: its name and record bytes (vxk_put and
 * vxk_get store and return records as they are; verify and a migration
 * check them as a client would, so entries meant to pass those have real
 * ones: real_record). */
typedef struct {
  const char *name;
  const void *record;
  size_t size;
} vxt_kernel;

/* A record a client accepts for a kernel named name with no arguments
 * (vxp_kernel_meta_encode): *size bytes, malloc(). */
static uint8_t *real_record(const char *name, size_t *size) {
  vxp_kernel k = {.name = (char *)name,
                  .entry = (char *)"__vxl_main_0",
                  .kernel_id = VXP_NO_KERNEL_ID,
                  .buffer_size = 32,
                  .grid_dims = 1,
                  .vortex_abi = 2,
                  .xlen = 32};
  uint8_t *out = NULL;
  cr_assert_eq(vxp_kernel_meta_encode(&k, &out, size), VXP_OK);
  vxp_kernel back;
  cr_assert_eq(vxp_kernel_meta_decode(out, *size, &back), VXP_OK);
  cr_assert_eq(vxp_kernel_check(&back), VXP_OK, "a record a client takes");
  vxp_kernel_clear(&back);
  return out;
}

/* What a test entry was compiled from: its source's file name (listed
 * beside it) and options (held in it). */
typedef struct {
  const char *source_name;
  const char *options;
} vxt_origin;

/* Encodes an entry of obj and n kernels as a worker does and stores it
 * under key.  Returns vxk_entry_encode's or vxk_put's result. */
static int put_entry_inputs(vxk_cache *c, const char *key, const void *obj, size_t size, const vxt_kernel *ks,
                            uint32_t n, uint64_t compile_us, const vxt_origin *origin, const vxk_inputs *in) {
  vxp_entry_kernel k[32];
  cr_assert_leq(n, 32);
  for (uint32_t i = 0; i < n; i++)
    k[i] = (vxp_entry_kernel){ks[i].name, strlen(ks[i].name), ks[i].record, ks[i].size};
  uint8_t *e = NULL;
  size_t len = 0;
  int rc = vxk_entry_encode(key, origin && origin->options ? origin->options : "", obj, size, NULL, 0, k, n,
                            NULL, &e, &len);
  if (rc == VXK_OK) rc = vxk_put(c, key, e, len, compile_us, origin ? origin->source_name : NULL, in);
  free(e);
  return rc;
}

/* put_entry_inputs without a record of the inputs (an entry from the
 * shared level). */
static int put_entry(vxk_cache *c, const char *key, const void *obj, size_t size, const vxt_kernel *ks,
                     uint32_t n, uint64_t compile_us, const vxt_origin *origin) {
  return put_entry_inputs(c, key, obj, size, ks, n, compile_us, origin, NULL);
}

/* An entry read back (vxk_get), and the parts its bytes hold. */
typedef struct {
  vxk_entry e;
  vxp_entry_view v;
  const uint8_t *object;
  size_t object_size;
  uint64_t compile_us;
  uint32_t nkernels;
  struct {
    char name[64];
    const uint8_t *metadata;
    size_t metadata_size;
  } kernels[32];
} vxt_read;

/* vxk_get, then a look into what it served, which must be a whole entry
 * of the key asked for. */
static int read_entry(vxk_cache *c, const char *key, vxt_read *r) {
  memset(r, 0, sizeof *r);
  int rc = vxk_get(c, key, &r->e);
  if (rc != VXK_OK) return rc;
  cr_assert_eq(vxk_entry_check(key, r->e.data, r->e.size, NULL, &r->v), VXK_OK, "served whole");
  r->object = r->v.object;
  r->object_size = r->v.object_size;
  r->compile_us = r->e.compile_us;
  r->nkernels = r->v.nkernels;
  for (uint32_t i = 0; i < r->v.nkernels && i < 32; i++) {
    snprintf(r->kernels[i].name, sizeof r->kernels[i].name, "%.*s", (int)r->v.kernels[i].name_len,
             r->v.kernels[i].name);
    r->kernels[i].metadata = r->v.kernels[i].record;
    r->kernels[i].metadata_size = r->v.kernels[i].record_size;
  }
  return VXK_OK;
}

static void read_clear(vxt_read *r) {
  vxp_entry_view_clear(&r->v);
  vxk_entry_clear(&r->e);
}

TestSuite(cache, .init = setup, .fini = teardown);

Test(cache, put_get_and_survive_restart) {
  vxk_cache *c = open_cache(0);
  char key[VXK_KEY_HEX + 1];
  key_for("module {}", key);
  vxt_kernel in[2] = {
      {"k0", (const uint8_t *)"M0", 2},
      {"k1", (const uint8_t *)"META1", 5},
  };
  cr_assert_eq(put_entry(c, key, (const uint8_t *)"OBJECT1", 7, in, 2, 0, NULL), VXK_OK);
  vxk_close(c);

  c = open_cache(0); /* a restarted daemon */
  vxt_read out;
  cr_assert_eq(read_entry(c, key, &out), VXK_OK);
  cr_assert_eq(out.nkernels, 2);
  cr_assert_str_eq(out.kernels[0].name, "k0");
  cr_assert_eq(out.object_size, 7);
  cr_assert_eq(memcmp(out.object, "OBJECT1", 7), 0);
  cr_assert_eq(memcmp(out.kernels[1].metadata, "META1", 5), 0);
  size_t stored = out.e.size;
  read_clear(&out);

  vxk_stats st;
  cr_assert_eq(vxk_stats_get(c, &st), VXK_OK);
  cr_assert_eq(st.entries, 1);
  cr_assert_eq(st.bytes, stored, "the entry is stored once, as one value");
  vxk_close(c);
}

Test(cache, unknown_and_invalid_keys) {
  vxk_cache *c = open_cache(0);
  char key[VXK_KEY_HEX + 1];
  key_for("absent", key);
  vxt_read out;
  cr_assert_eq(read_entry(c, key, &out), VXK_ENOTFOUND);
  cr_assert_eq(read_entry(c, "zz", &out), VXK_EINVAL);
  cr_assert_eq(read_entry(c, "'; DROP TABLE entries; --", &out), VXK_EINVAL);
  vxt_kernel in = {"k", (const uint8_t *)"m", 1};
  cr_assert_eq(put_entry(c, "ABC", (const uint8_t *)"o", 1, &in, 1, 0, NULL), VXK_EINVAL);
  cr_assert_eq(vxk_put(c, "ABC", (const uint8_t *)"o", 1, 0, NULL, NULL), VXK_EINVAL);
  vxk_close(c);
}

Test(cache, counters_persist) {
  vxk_cache *c = open_cache(0);
  cr_assert_eq(vxk_counter_add(c, "hits", 3), VXK_OK);
  cr_assert_eq(vxk_counter_add(c, "misses", 1), VXK_OK);
  vxk_close(c);
  c = open_cache(0);
  cr_assert_eq(vxk_counter_add(c, "hits", 2), VXK_OK);
  vxk_stats st;
  cr_assert_eq(vxk_stats_get(c, &st), VXK_OK);
  cr_assert_eq(st.hits, 5);
  cr_assert_eq(st.misses, 1);
  vxk_close(c);
}

Test(cache, key_depends_on_every_part_and_is_unambiguous) {
  char a[VXK_KEY_HEX + 1], b[VXK_KEY_HEX + 1];
  const char *p1[] = {"opt=2", "llvm=22"};
  const char *p2[] = {"opt=3", "llvm=22"};
  cr_assert_eq(vxk_key((const uint8_t *)"src", 3, p1, 2, a), VXK_OK);
  cr_assert_eq(vxk_key((const uint8_t *)"src", 3, p1, 2, b), VXK_OK);
  cr_assert_str_eq(a, b, "deterministic");
  cr_assert(vxk_key_valid(a));
  cr_assert_eq(vxk_key((const uint8_t *)"src", 3, p2, 2, b), VXK_OK);
  cr_assert_str_neq(a, b, "an option changes the key");
  cr_assert_eq(vxk_key((const uint8_t *)"srd", 3, p1, 2, b), VXK_OK);
  cr_assert_str_neq(a, b, "the source changes the key");
  /* length prefixes: moving bytes between parts changes the key */
  const char *q1[] = {"ab", "c"}, *q2[] = {"a", "bc"};
  cr_assert_eq(vxk_key((const uint8_t *)"", 0, q1, 2, a), VXK_OK);
  cr_assert_eq(vxk_key((const uint8_t *)"", 0, q2, 2, b), VXK_OK);
  cr_assert_str_neq(a, b);
  /* known answer, computed independently with Python's hashlib over
   * LE64(len) || bytes for the tag, each part and the source (vxk.h) */
  cr_assert_str_eq(a, "f820acc1b8f9e947d5d085435701562fda082bbbbd8a12174178075905331acc");
}

/* The daemon readies OpenSSL and then forks its workers: a child's first
 * key must be the same as its parent's. */
Test(cache, a_child_forked_after_prepare_hashes_like_its_parent) {
  cr_assert_eq(vxk_prepare(), VXK_OK);
  cr_assert_eq(vxk_prepare(), VXK_OK, "again: a cache lookup");
  const char *q1[] = {"ab", "c"};
  char parent[VXK_KEY_HEX + 1];
  cr_assert_eq(vxk_key((const uint8_t *)"", 0, q1, 2, parent), VXK_OK);
  int fds[2];
  cr_assert_eq(pipe(fds), 0);
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    char child[VXK_KEY_HEX + 1] = "";
    int ok = vxk_key((const uint8_t *)"", 0, q1, 2, child) == VXK_OK;
    _exit(ok && write(fds[1], child, VXK_KEY_HEX) == VXK_KEY_HEX ? 0 : 1);
  }
  close(fds[1]);
  char child[VXK_KEY_HEX + 1] = "";
  ssize_t n = read(fds[0], child, VXK_KEY_HEX);
  close(fds[0]);
  int st = 0;
  cr_assert_eq(waitpid(pid, &st, 0), pid);
  cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  cr_assert_eq(n, VXK_KEY_HEX);
  cr_assert_str_eq(child, parent);
  cr_assert_str_eq(child, "f820acc1b8f9e947d5d085435701562fda082bbbbd8a12174178075905331acc");
}

Test(cache, replacing_an_entry_is_atomic) {
  vxk_cache *c = open_cache(0);
  char key[VXK_KEY_HEX + 1];
  key_for("x", key);
  vxt_kernel two[2] = {{"a", (const uint8_t *)"m", 1}, {"b", (const uint8_t *)"m", 1}};
  cr_assert_eq(put_entry(c, key, (const uint8_t *)"12", 2, two, 2, 0, NULL), VXK_OK);
  vxt_kernel one = {"c", (const uint8_t *)"m", 1};
  cr_assert_eq(put_entry(c, key, (const uint8_t *)"3", 1, &one, 1, 0, NULL), VXK_OK);
  vxt_read out;
  cr_assert_eq(read_entry(c, key, &out), VXK_OK);
  cr_assert_eq(out.nkernels, 1, "old kernels are gone with the old entry");
  cr_assert_str_eq(out.kernels[0].name, "c");
  cr_assert_eq(out.object_size, 1);
  cr_assert_eq(out.object[0], '3', "and so is the old object");
  read_clear(&out);
  vxk_close(c);
}

/* What a put is handed is checked first: bytes that are not a whole entry
 * of the key (another key's, cut short, one byte changed) store nothing. */
Test(cache, a_put_of_anything_but_a_whole_entry_of_its_key_stores_nothing) {
  vxk_cache *c = open_cache(0);
  char key[VXK_KEY_HEX + 1], other[VXK_KEY_HEX + 1];
  key_for("mine", key);
  key_for("theirs", other);
  vxp_entry_kernel k = {"k", 1, (const uint8_t *)"m", 1};
  uint8_t *e = NULL;
  size_t len = 0;
  cr_assert_eq(vxk_entry_encode(other, "", (const uint8_t *)"12", 2, NULL, 0, &k, 1, NULL, &e, &len), VXK_OK);
  cr_assert_eq(vxk_put(c, key, e, len, 0, NULL, NULL), VXK_EINVAL, "another key's entry");
  cr_assert_eq(vxk_put(c, other, e, len - 1, 0, NULL, NULL), VXK_EINVAL, "cut short");
  e[len / 2] ^= 0x10;
  cr_assert_eq(vxk_put(c, other, e, len, 0, NULL, NULL), VXK_EINVAL, "a byte changed");
  free(e);
  vxt_read out;
  cr_assert_eq(read_entry(c, key, &out), VXK_ENOTFOUND);
  cr_assert_eq(read_entry(c, other, &out), VXK_ENOTFOUND);
  vxk_stats st;
  cr_assert_eq(vxk_stats_get(c, &st), VXK_OK);
  cr_assert_eq(st.entries, 0);
  cr_assert_eq(st.bytes, 0);
  vxk_close(c);
}

Test(cache, lru_eviction_keeps_the_recently_used) {
  vxk_cache *c = open_cache(3000); /* bytes */
  uint8_t blob[1000];
  memset(blob, 7, sizeof blob);
  char keys[4][VXK_KEY_HEX + 1];
  for (int i = 0; i < 4; i++) {
    char src[8];
    snprintf(src, sizeof src, "s%d", i);
    key_for(src, keys[i]);
    vxt_kernel in = {"k", (const uint8_t *)"m", 1};
    cr_assert_eq(put_entry(c, keys[i], blob, sizeof blob, &in, 1, 0, NULL), VXK_OK);
    if (i == 1) { /* touch entry 0 so that entry 1 is the oldest */
      vxt_read o;
      usleep(2000);
      cr_assert_eq(read_entry(c, keys[0], &o), VXK_OK);
      read_clear(&o);
    }
    usleep(2000);
  }
  vxk_stats st;
  cr_assert_eq(vxk_stats_get(c, &st), VXK_OK);
  cr_assert_leq(st.bytes, 3000);
  cr_assert_geq(st.evictions, 1);
  vxt_read o;
  cr_assert_eq(read_entry(c, keys[1], &o), VXK_ENOTFOUND, "least recently used went first");
  cr_assert_eq(read_entry(c, keys[3], &o), VXK_OK, "newest stays");
  read_clear(&o);
  vxk_close(c);
}

Test(cache, unreadable_database_is_moved_aside) {
  char path[128];
  snprintf(path, sizeof path, "%s/cache.db", dir);
  FILE *f = fopen(path, "wb");
  cr_assert_not_null(f);
  for (int i = 0; i < 512; i++)
    fputs("this is not a database ", f);
  fclose(f);
  vxk_cache *c = open_cache(0);
  char key[VXK_KEY_HEX + 1];
  key_for("after", key);
  vxt_kernel in = {"k", (const uint8_t *)"m", 1};
  cr_assert_eq(put_entry(c, key, (const uint8_t *)"o", 1, &in, 1, 0, NULL), VXK_OK);
  vxk_close(c);
  char aside[160];
  snprintf(aside, sizeof aside, "%s.corrupt", path);
  struct stat st;
  cr_assert_eq(stat(aside, &st), 0, "the unreadable file is kept for inspection");
}

/* A cache another user could have written may hold planted entries: it is
 * refused for writing and for reading (the runtime reads it directly). */
Test(cache, a_directory_or_database_others_could_write_is_refused) {
  vxk_cache *c = open_cache(0);
  char key[VXK_KEY_HEX + 1], err[512], db[128], moved[128];
  key_for("planted?", key);
  vxt_kernel in = {"k", (const uint8_t *)"m", 1};
  cr_assert_eq(put_entry(c, key, (const uint8_t *)"o", 1, &in, 1, 0, NULL), VXK_OK);
  vxk_close(c);
  cr_assert_eq(vxk_open_readonly(dir, &c, err, sizeof err), VXK_OK, "%s", err);
  vxk_close(c);
  cr_assert_eq(chmod(dir, 0777), 0);
  cr_assert_eq(vxk_open(dir, 0, &c, err, sizeof err), VXK_EUNTRUSTED);
  cr_assert_not_null(strstr(err, "chmod go-w"), "%s", err);
  cr_assert_eq(vxk_open_readonly(dir, &c, err, sizeof err), VXK_EUNTRUSTED);
  cr_assert_eq(chmod(dir, 0755), 0);
  cr_assert_eq(vxk_open_readonly(dir, &c, err, sizeof err), VXK_OK,
               "readable by others is the owner's choice");
  vxk_close(c);
  snprintf(db, sizeof db, "%s/cache.db", dir);
  cr_assert_eq(chmod(db, 0666), 0);
  cr_assert_eq(vxk_open(dir, 0, &c, err, sizeof err), VXK_EUNTRUSTED);
  cr_assert_eq(vxk_open_readonly(dir, &c, err, sizeof err), VXK_EUNTRUSTED);
  cr_assert_not_null(strstr(err, "cache.db is not this user's own"), "%s", err);
  cr_assert_eq(chmod(db, 0644), 0);
  snprintf(moved, sizeof moved, "%s/elsewhere.db", dir);
  cr_assert_eq(rename(db, moved), 0);
  cr_assert_eq(symlink(moved, db), 0);
  cr_assert_eq(vxk_open(dir, 0, &c, err, sizeof err), VXK_EUNTRUSTED);
  cr_assert_eq(vxk_open_readonly(dir, &c, err, sizeof err), VXK_EUNTRUSTED);
  cr_assert_not_null(strstr(err, "a symbolic link"), "%s", err);
  cr_assert_eq(unlink(db), 0);
  cr_assert_eq(rename(moved, db), 0);
  c = open_cache(0);
  vxt_read e;
  cr_assert_eq(read_entry(c, key, &e), VXK_OK, "mended: the entry is there");
  read_clear(&e);
  vxk_close(c);
}

/* Stores object obj under key in a new cache in directory sub. */
static void cache_with(const char *sub, const char *key, const char *obj) {
  vxk_cache *c = NULL;
  char err[512];
  cr_assert_eq(vxk_open(sub, 0, &c, err, sizeof err), VXK_OK, "%s", err);
  vxt_kernel in = {"k", (const uint8_t *)"m", 1};
  cr_assert_eq(put_entry(c, key, obj, strlen(obj), &in, 1, 0, NULL), VXK_OK);
  vxk_close(c);
}

/* The object of key's entry in c, or "" (static). */
static const char *object_in(vxk_cache *c, const char *key) {
  static char obj[64];
  vxt_read e;
  obj[0] = '\0';
  if (read_entry(c, key, &e) == VXK_OK) {
    snprintf(obj, sizeof obj, "%.*s", (int)e.object_size, (const char *)e.object);
    read_clear(&e);
  }
  return obj;
}

/* Swaps the directory just checked for the one in ud, as another user
 * could between the check and SQLite's open if he could write a
 * directory on the way (the ancestors rule forbids that; this is the
 * second line). */
static void swap_checked_dir(const char *checked, void *ud) {
  char aside[300];
  snprintf(aside, sizeof aside, "%s.checked", checked);
  cr_assert_eq(rename(checked, aside), 0);
  cr_assert_eq(rename((const char *)ud, checked), 0);
}

/* SQLite opens the files of the directory that was checked, through its
 * descriptor: a directory swapped in after the check (a forged cache) is
 * never read or written, by the writer or the read-only reader; later
 * opens check the forged one and take it as what is now there. */
Test(cache, the_files_sqlite_opens_are_the_checked_directorys) {
  char mine[256], forged[256], aside[300], key[VXK_KEY_HEX + 1], other[VXK_KEY_HEX + 1], err[512];
  snprintf(mine, sizeof mine, "%s/mine", dir);
  snprintf(forged, sizeof forged, "%s/forged", dir);
  snprintf(aside, sizeof aside, "%s.checked", mine);
  key_for("pinned", key);
  key_for("written after the swap", other);
  for (int readonly = 0; readonly < 2; readonly++) {
    cache_with(mine, key, "real");
    cache_with(forged, key, "forged");
    vxk_testing_after_check(swap_checked_dir, forged);
    vxk_cache *c = NULL;
    int rc = readonly ? vxk_open_readonly(mine, &c, err, sizeof err) : vxk_open(mine, 0, &c, err, sizeof err);
    vxk_testing_after_check(NULL, NULL);
    cr_assert_eq(rc, VXK_OK, "%s", err);
    cr_assert_str_eq(object_in(c, key), "real", "the checked directory's entry, not the forged one");
    if (!readonly) {
      vxt_kernel in = {"k", (const uint8_t *)"m", 1};
      cr_assert_eq(put_entry(c, other, "new", 3, &in, 1, 0, NULL), VXK_OK);
      cr_assert_str_eq(object_in(c, other), "new");
    }
    vxk_close(c);
    /* where the writes went: the checked directory, now at aside */
    cr_assert_eq(vxk_open_readonly(aside, &c, err, sizeof err), VXK_OK, "%s", err);
    cr_assert_str_eq(object_in(c, key), "real");
    cr_assert_str_eq(object_in(c, other), readonly ? "" : "new");
    vxk_close(c);
    cr_assert_eq(vxk_open_readonly(mine, &c, err, sizeof err), VXK_OK, "%s", err);
    cr_assert_str_eq(object_in(c, other), "", "nothing written into the forged cache");
    vxk_close(c);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "rm -rf %s %s %s", mine, forged, aside);
    cr_assert_eq(system(cmd), 0);
  }
}

/* Every directory above a cache must be one no other user can change
 * (root's or the user's, not writable by others unless sticky): else
 * anyone could swap the cache directory for his own. */
Test(cache, a_cache_under_a_directory_others_can_write_is_refused) {
  char open_dir[256], sub[300], err[1024];
  snprintf(open_dir, sizeof open_dir, "%s/shared", dir);
  cr_assert_eq(mkdir(open_dir, 0700), 0);
  cr_assert_eq(chmod(open_dir, 0777), 0);
  snprintf(sub, sizeof sub, "%s/cache", open_dir);
  vxk_cache *c = NULL;
  cr_assert_eq(vxk_open(sub, 0, &c, err, sizeof err), VXK_EUNTRUSTED);
  cr_assert_not_null(strstr(err, open_dir), "names the directory at fault: %s", err);
  cr_assert_not_null(strstr(err, "sticky"), "%s", err);
  cr_assert_eq(vxk_open_readonly(sub, &c, err, sizeof err), VXK_EUNTRUSTED, "%s", err);
  cr_assert_eq(chmod(open_dir, 01777), 0); /* as /tmp: others cannot rename this user's entries */
  cr_assert_eq(vxk_open(sub, 0, &c, err, sizeof err), VXK_OK, "%s", err);
  vxk_close(c);
  cr_assert_eq(chmod(open_dir, 0775), 0); /* its group could */
  cr_assert_eq(vxk_open(sub, 0, &c, err, sizeof err), VXK_EUNTRUSTED);
  cr_assert_eq(chmod(open_dir, 0755), 0);
  cr_assert_eq(vxk_open(sub, 0, &c, err, sizeof err), VXK_OK, "%s", err);
  vxk_close(c);
}

/* The journal mode cache.db's header records (bytes 18 and 19: 1 a
 * rollback journal, 2 WAL). */
static int journal_mode_of(const char *sub) {
  char path[300];
  snprintf(path, sizeof path, "%s/cache.db", sub);
  FILE *f = fopen(path, "rb");
  cr_assert_not_null(f, "%s", path);
  uint8_t h[20];
  cr_assert_eq(fread(h, 1, sizeof h, f), sizeof h);
  fclose(f);
  cr_assert_eq(h[18], h[19]);
  return h[18];
}

/* On a network file system (NFS, SMB, FUSE, Lustre, GPFS, ...: told by
 * statfs) a cache runs without SQLite's write-ahead log, unsafe there,
 * on a rollback journal, and says so; an existing WAL cache is converted
 * and keeps its entries; a local one stays WAL. */
Test(cache, a_cache_on_a_network_file_system_uses_a_rollback_journal) {
  cr_assert_str_eq(vxk_network_fs(0x6969), "NFS");
  cr_assert_str_eq(vxk_network_fs((long)0xFF534D42ul), "CIFS");
  cr_assert_str_eq(vxk_network_fs(0x65735546), "FUSE");
  cr_assert_str_eq(vxk_network_fs(0x0BD00BD0), "Lustre");
  cr_assert_str_eq(vxk_network_fs(0x47504653), "GPFS");
  cr_assert_null(vxk_network_fs(0xEF53), "ext4 is local");
  cr_assert_null(vxk_network_fs(0x01021994), "tmpfs is local");
  char key[VXK_KEY_HEX + 1];
  key_for("journal", key);
  cache_with(dir, key, "kept");
  cr_assert_eq(journal_mode_of(dir), 2, "WAL on a local file system");
  vxk_testing_fs_type(0x6969);
  vxk_cache *c = open_cache(0);
  vxk_testing_fs_type(0);
  const char *notice = vxk_open_notice(c);
  cr_assert(notice && strstr(notice, "network file system (NFS)") && strstr(notice, "rollback journal"),
            "said: %s", notice ? notice : "(nothing)");
  cr_assert_str_eq(object_in(c, key), "kept");
  vxk_close(c);
  cr_assert_eq(journal_mode_of(dir), 1, "a rollback journal on NFS");
  char wal[160];
  snprintf(wal, sizeof wal, "%s/cache.db-wal", dir);
  struct stat st;
  cr_assert_neq(stat(wal, &st), 0, "no -wal file left");
  c = open_cache(0);
  cr_assert_null(vxk_open_notice(c));
  vxk_close(c);
  cr_assert_eq(journal_mode_of(dir), 2, "WAL again on a local file system");
}

/* Fills a cache in sub, makes sub read-only, reads the entry back through
 * vxk_open_readonly.  0 on success, else the step that failed. */
static int read_only_directory_case(const char *sub) {
  vxk_cache *c = NULL;
  char key[VXK_KEY_HEX + 1], err[512];
  const char *parts[] = {"test"};
  if (vxk_key((const uint8_t *)"ro", 2, parts, 1, key) != VXK_OK) return 1;
  vxt_kernel in = {"k", (const uint8_t *)"m", 1};
  if (vxk_open(sub, 0, &c, err, sizeof err) != VXK_OK) return 2;
  if (put_entry(c, key, (const uint8_t *)"obj", 3, &in, 1, 0, NULL) != VXK_OK) return 3;
  vxk_close(c);
  if (chmod(sub, 0500) != 0) return 4;
  if (vxk_open_readonly(sub, &c, err, sizeof err) != VXK_OK) {
    fprintf(stderr, "%s\n", err);
    return 5;
  }
  vxt_read e;
  int rc = read_entry(c, key, &e) == VXK_OK && e.object_size == 3 && memcmp(e.object, "obj", 3) == 0 ? 0 : 6;
  if (rc == 0) read_clear(&e);
  vxk_close(c);
  return rc;
}

/* The runtime reads a cache directly where it may not write (a read-only
 * mount, a directory of mode 0500): a WAL database is read there too.  Run
 * as "nobody" when root, whom no mode keeps from writing. */
Test(cache, a_cache_in_a_read_only_directory_is_read) {
  char sub[128];
  snprintf(sub, sizeof sub, "%s/ro", dir);
  cr_assert_eq(mkdir(sub, 0700), 0);
  int rc;
  if (geteuid() == 0) {
    struct passwd *pw = getpwnam("nobody");
    cr_assert_not_null(pw);
    cr_assert_eq(chmod(dir, 0711), 0);
    cr_assert_eq(chown(sub, pw->pw_uid, pw->pw_gid), 0);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) _exit(setgid(pw->pw_gid) || setuid(pw->pw_uid) ? 90 : read_only_directory_case(sub));
    int st = 0;
    waitpid(pid, &st, 0);
    rc = WIFEXITED(st) ? WEXITSTATUS(st) : 99;
  } else {
    rc = read_only_directory_case(sub);
  }
  cr_assert_eq(rc, 0, "failed at step %d", rc);
  cr_assert_eq(chmod(sub, 0700), 0);
}

/* Flips one byte of the first occurrence of pattern in the database file
 * (the cache closed, its WAL checkpointed).  Returns 1 when found. */
static int flip_in_file(const char *pattern, size_t plen) {
  char path[128];
  snprintf(path, sizeof path, "%s/cache.db", dir);
  FILE *f = fopen(path, "r+b");
  cr_assert_not_null(f);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  uint8_t *b = malloc((size_t)n);
  fseek(f, 0, SEEK_SET);
  cr_assert_eq(fread(b, 1, (size_t)n, f), (size_t)n);
  int found = 0;
  for (long i = 0; i + (long)plen <= n && !found; i++)
    if (memcmp(b + i, pattern, plen) == 0) {
      fseek(f, i + (long)plen / 2, SEEK_SET);
      fputc(b[i + plen / 2] ^ 0x01, f);
      found = 1;
    }
  fclose(f);
  free(b);
  return found;
}

Test(cache, a_flipped_byte_is_refused_dropped_and_counted) {
  vxk_cache *c = open_cache(0);
  char key[VXK_KEY_HEX + 1], other[VXK_KEY_HEX + 1];
  key_for("flip", key);
  key_for("intact", other);
  static const char obj[] = "OBJECT-BYTES-THAT-WILL-BE-DAMAGED-0123456789";
  size_t rsize;
  uint8_t *rec = real_record("k", &rsize);
  vxt_kernel in = {"k", rec, rsize};
  cr_assert_eq(put_entry(c, key, (const uint8_t *)obj, sizeof obj, &in, 1, 0, NULL), VXK_OK);
  cr_assert_eq(put_entry(c, other, (const uint8_t *)"fine", 4, &in, 1, 0, NULL), VXK_OK);
  vxk_close(c); /* checkpoints the WAL into cache.db */
  cr_assert(flip_in_file(obj, sizeof obj - 1), "the object's bytes are in the file");
  c = open_cache(0);
  vxt_read e;
  cr_assert_eq(read_entry(c, key, &e), VXK_ECORRUPT, "a damaged entry is refused, never served");
  cr_assert_eq(read_entry(c, other, &e), VXK_OK, "other entries are served");
  read_clear(&e);
  uint64_t checked, corrupt;
  cr_assert_eq(vxk_verify(c, 0, &checked, &corrupt), VXK_OK);
  cr_assert_eq(checked, 2);
  cr_assert_eq(corrupt, 1);
  cr_assert_eq(vxk_verify(c, 1, &checked, &corrupt), VXK_OK, "and dropped");
  cr_assert_eq(read_entry(c, key, &e), VXK_ENOTFOUND);
  vxk_stats st;
  cr_assert_eq(vxk_stats_get(c, &st), VXK_OK);
  cr_assert_eq(st.corrupt, 1);
  cr_assert_eq(st.entries, 1);
  cr_assert_eq(vxk_verify(c, 1, &checked, &corrupt), VXK_OK);
  cr_assert_eq(corrupt, 0, "the cache is clean again");
  /* a drop is for damage only: a second report of it finds nothing, and an
   * entry written again in between is kept */
  cr_assert_eq(vxk_drop(c, key), VXK_ENOTFOUND);
  cr_assert_eq(put_entry(c, key, (const uint8_t *)obj, sizeof obj, &in, 1, 0, NULL), VXK_OK);
  cr_assert_eq(vxk_drop(c, key), VXK_ENOTFOUND, "intact: kept");
  cr_assert_eq(read_entry(c, key, &e), VXK_OK);
  read_clear(&e);
  vxk_close(c);
  free(rec);
}

/* An entry sealed with a right checksum but a record no client accepts
 * (bytes that are not a record; a record with grid_dims 7) is stored and
 * read as bytes, but verify finds it, drops it and counts it as corrupt:
 * a client that got it would refuse every compile of its source. */
Test(cache, verify_drops_an_entry_whose_records_a_client_refuses) {
  vxk_cache *c = open_cache(0);
  char good[VXK_KEY_HEX + 1], junk[VXK_KEY_HEX + 1], seven[VXK_KEY_HEX + 1];
  key_for("good", good);
  key_for("junk", junk);
  key_for("seven", seven);
  size_t rsize, ssize;
  uint8_t *rec = real_record("k", &rsize), *bad = NULL;
  vxp_kernel k;
  cr_assert_eq(vxp_kernel_meta_decode(rec, rsize, &k), VXP_OK);
  k.grid_dims = 7;
  cr_assert_eq(vxp_kernel_meta_encode(&k, &bad, &ssize), VXP_OK);
  vxp_kernel_clear(&k);
  vxt_kernel ok = {"k", rec, rsize}, notrec = {"k", (const uint8_t *)"meta", 4}, dims = {"k", bad, ssize};
  cr_assert_eq(put_entry(c, good, "O", 1, &ok, 1, 0, NULL), VXK_OK);
  cr_assert_eq(put_entry(c, junk, "O", 1, &notrec, 1, 0, NULL), VXK_OK);
  cr_assert_eq(put_entry(c, seven, "O", 1, &dims, 1, 0, NULL), VXK_OK);
  uint64_t checked, corrupt;
  cr_assert_eq(vxk_verify(c, 1, &checked, &corrupt), VXK_OK);
  cr_assert_eq(checked, 3);
  cr_assert_eq(corrupt, 2, "both poisoned entries");
  vxt_read e;
  cr_assert_eq(read_entry(c, junk, &e), VXK_ENOTFOUND, "dropped");
  cr_assert_eq(read_entry(c, seven, &e), VXK_ENOTFOUND, "dropped");
  cr_assert_eq(read_entry(c, good, &e), VXK_OK, "kept");
  read_clear(&e);
  vxk_stats st;
  cr_assert_eq(vxk_stats_get(c, &st), VXK_OK);
  cr_assert_eq(st.corrupt, 2);
  vxk_close(c);
  free(rec);
  free(bad);
}

/* A database damaged past its header: the whole-cache operations say
 * what SQLite found (not the failed rollback after it), the damage is
 * VXK_EDAMAGED wherever it is met, and verify finds it from the disk. */
Test(cache, a_damaged_database_is_reported_as_damage) {
  vxk_cache *c = open_cache(0);
  uint8_t obj[3000];
  for (int i = 0; i < 50; i++) {
    char src[32], key[VXK_KEY_HEX + 1];
    snprintf(src, sizeof src, "entry %d", i);
    key_for(src, key);
    memset(obj, i, sizeof obj);
    vxt_kernel in = {"k", obj, 40};
    cr_assert_eq(put_entry(c, key, obj, sizeof obj, &in, 1, 0, NULL), VXK_OK);
  }
  vxk_close(c);
  char path[128];
  snprintf(path, sizeof path, "%s/cache.db", dir);
  FILE *f = fopen(path, "r+b");
  cr_assert_not_null(f);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, n - n / 4, SEEK_SET); /* the last quarter: objects' overflow pages, past what an open reads */
  for (long i = n - n / 4; i < n; i++)
    fputc((int)((i * 2654435761u) >> 13) & 0xff, f);
  fclose(f);
  char err[256];
  cr_assert_eq(vxk_open(dir, 0, &c, err, sizeof err), VXK_OK, "the first page intact: %s", err);
  uint64_t checked = 0, bad = 0, removed = 0;
  int vrc = vxk_verify(c, 0, &checked, &bad);
  cr_assert_eq(vrc, VXK_EDAMAGED, "verify: %d %s", vrc, vxk_errmsg(c));
  cr_assert_not_null(strstr(vxk_errmsg(c), "integrity check"), "%s", vxk_errmsg(c));
  int rc = vxk_clear(c, &removed);
  cr_assert_eq(rc, VXK_EDAMAGED, "clear: %d %s", rc, vxk_errmsg(c));
  cr_assert_null(strstr(vxk_errmsg(c), "no transaction is active"), "%s", vxk_errmsg(c));
  vxk_close(c);
  cr_assert_eq(vxk_discard(dir, err, sizeof err), VXK_OK, "%s", err);
  c = open_cache(0);
  cr_assert_eq(vxk_verify(c, 0, &checked, &bad), VXK_OK, "a new database");
  cr_assert_eq(checked, 0);
  vxk_close(c);
  char aside[160];
  snprintf(aside, sizeof aside, "%s.corrupt", path);
  struct stat st;
  cr_assert_eq(stat(aside, &st), 0, "kept for inspection");
}

Test(cache, random_page_damage_never_serves_different_bytes) {
  enum { N = 300 };
  vxk_cache *c = open_cache(0);
  uint8_t obj[700];
  for (int i = 0; i < N; i++) {
    char src[32], key[VXK_KEY_HEX + 1];
    snprintf(src, sizeof src, "entry %d", i);
    key_for(src, key);
    for (size_t j = 0; j < sizeof obj; j++)
      obj[j] = (uint8_t)(i * 31 + j * 7);
    vxt_kernel in = {"k", obj, 40};
    cr_assert_eq(put_entry(c, key, obj, sizeof obj, &in, 1, 0, NULL), VXK_OK);
  }
  vxk_close(c);
  /* damage bytes all over the file, past SQLite's header page */
  char path[128];
  snprintf(path, sizeof path, "%s/cache.db", dir);
  FILE *f = fopen(path, "r+b");
  cr_assert_not_null(f);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  srand(12345);
  for (int d = 0; d < 400; d++) {
    long at = 4096 + rand() % (n - 4096);
    fseek(f, at, SEEK_SET);
    fputc(rand() & 0xff, f);
  }
  fclose(f);
  vxk_cache *c2 = NULL;
  char err[256];
  cr_assert_eq(vxk_open(dir, 0, &c2, err, sizeof err), VXK_OK, "%s", err); /* the damage spares the schema */
  int served = 0;
  for (int i = 0; i < N; i++) {
    char src[32], key[VXK_KEY_HEX + 1];
    snprintf(src, sizeof src, "entry %d", i);
    key_for(src, key);
    vxt_read e;
    if (read_entry(c2, key, &e) != VXK_OK) continue;
    for (size_t j = 0; j < sizeof obj; j++)
      obj[j] = (uint8_t)(i * 31 + j * 7);
    cr_assert_eq(e.object_size, sizeof obj, "entry %d", i);
    cr_assert_eq(memcmp(e.object, obj, sizeof obj), 0, "entry %d served with different bytes", i);
    cr_assert_eq(e.nkernels, 1);
    cr_assert_eq(e.kernels[0].metadata_size, 40);
    cr_assert_eq(memcmp(e.kernels[0].metadata, obj, 40), 0, "entry %d: different metadata", i);
    served++;
    read_clear(&e);
  }
  cr_assert_lt(served, N, "the damage hit some entries");
  vxk_close(c2);
}

Test(cache, time_saved_is_a_counter_and_old_per_entry_figures_carry_over_once) {
  vxk_cache *c = open_cache(0);
  char key[VXK_KEY_HEX + 1];
  key_for("counted", key);
  vxt_kernel in = {"k", (const uint8_t *)"m", 1};
  cr_assert_eq(put_entry(c, key, (const uint8_t *)"o", 1, &in, 1, 5000, NULL), VXK_OK); /* compiled in 5 ms */
  vxt_read e;
  cr_assert_eq(read_entry(c, key, &e), VXK_OK);
  cr_assert_eq(e.compile_us, 5000, "a read says what the hit saves");
  read_clear(&e);
  cr_assert_eq(vxk_counter_add(c, "saved_us", 5000), VXK_OK); /* what whoever served it adds */
  cr_assert_eq(vxk_counter_add(c, "saved_us", 5000), VXK_OK);
  vxk_stats st;
  cr_assert_eq(vxk_stats_get(c, &st), VXK_OK);
  cr_assert_eq(st.saved_us, 10000);
  cr_assert_eq(vxk_zero_counters(c), VXK_OK);
  cr_assert_eq(vxk_stats_get(c, &st), VXK_OK);
  cr_assert_eq(st.saved_us, 0, "zero-stats zeroes it");
  vxk_close(c);
  /* a cache written before: hits per entry, no counter; the figure carries
   * over at the next open, once */
  char path[128];
  snprintf(path, sizeof path, "%s/cache.db", dir);
  sqlite3 *db = NULL;
  cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
  cr_assert_eq(sqlite3_exec(db,
                            "UPDATE entries SET hits=3; DELETE FROM counters;"
                            " DELETE FROM meta WHERE k='saved_counter';",
                            NULL, NULL, NULL),
               SQLITE_OK, "%s", sqlite3_errmsg(db));
  sqlite3_close(db);
  c = open_cache(0);
  cr_assert_eq(vxk_stats_get(c, &st), VXK_OK);
  cr_assert_eq(st.saved_us, 3 * 5000, "three old hits of a 5 ms compile");
  cr_assert_eq(vxk_zero_counters(c), VXK_OK);
  vxk_close(c);
  c = open_cache(0);
  cr_assert_eq(vxk_stats_get(c, &st), VXK_OK);
  cr_assert_eq(st.saved_us, 0, "carried over once only: zeroed stays zero");
  vxk_close(c);
}

Test(cache, a_read_within_the_lru_resolution_leaves_the_entry_unwritten) {
  vxk_cache *c = open_cache(3000); /* bytes: room for two entries */
  vxk_set_lru_resolution(c, 60u * 1000000u);
  uint8_t blob[1000];
  memset(blob, 7, sizeof blob);
  char keys[3][VXK_KEY_HEX + 1];
  vxt_kernel in = {"k", (const uint8_t *)"m", 1};
  vxt_read o;
  for (int i = 0; i < 3; i++) {
    char src[8];
    snprintf(src, sizeof src, "r%d", i);
    key_for(src, keys[i]);
    cr_assert_eq(put_entry(c, keys[i], blob, sizeof blob, &in, 1, 0, NULL), VXK_OK);
    usleep(2000);
    if (i == 1) { /* entry 0 read, but within the minute it was written in */
      cr_assert_eq(read_entry(c, keys[0], &o), VXK_OK);
      read_clear(&o);
      usleep(2000);
    }
  }
  /* with every read moving it (resolution 0), entry 1 would have gone */
  cr_assert_eq(read_entry(c, keys[0], &o), VXK_ENOTFOUND, "its LRU time did not move: evicted first");
  cr_assert_eq(read_entry(c, keys[1], &o), VXK_OK);
  read_clear(&o);
  vxk_close(c);
}

/* ---- the encoded entry: what every level stores and checks ---- */

/* msgpack-c reads 2 written as uint8 (cc 02) as readily as the encoder's
 * fixint (02); an entry has one encoding, the encoder's. */
Test(cache, an_entry_in_a_wider_encoding_is_refused) {
  char key[VXK_KEY_HEX + 1];
  key_for("wide", key);
  vxp_entry_kernel k = {"k", 1, (const uint8_t *)"meta", 4};
  uint8_t *v = NULL;
  size_t len = 0;
  cr_assert_eq(
      vxk_entry_encode(key, "opt_level=2", (const uint8_t *)"object", 6, NULL, 0, &k, 1, NULL, &v, &len),
      VXK_OK);
  cr_assert_eq(vxk_entry_check(key, v, len, NULL, NULL), VXK_OK);
  /* [fixarray 6, fixstr "vortexd-entry", format]: the format at byte 15 */
  const size_t at = 2 + strlen(VXP_ENTRY_TAG);
  cr_assert_eq(v[at], VXP_ENTRY_FORMAT, "the format as a fixint");
  uint8_t *wide = malloc(len + 1);
  memcpy(wide, v, at);
  wide[at] = 0xcc;
  memcpy(wide + at + 1, v + at, len - at);
  cr_assert_eq(vxk_entry_check(key, wide, len + 1, NULL, NULL), VXK_ECORRUPT);
  vxp_entry_view view;
  cr_assert_eq(vxp_entry_view_of(wide, len + 1, &view), VXP_EFORMAT, "refused before any checksum");
  free(wide);
  free(v);
}

Test(cache, an_entry_round_trips_and_any_damage_is_refused) {
  char key[VXK_KEY_HEX + 1], other[VXK_KEY_HEX + 1];
  key_for("remote", key);
  key_for("another", other);
  uint8_t obj[300];
  for (size_t i = 0; i < sizeof obj; i++)
    obj[i] = (uint8_t)(i * 7);
  vxp_entry_kernel ks[2] = {{"first", 5, (const uint8_t *)"meta-1", 6},
                            {"second", 6, (const uint8_t *)"m2", 2}};
  uint8_t *v = NULL;
  size_t len = 0;
  cr_assert_eq(vxk_entry_encode(key, "opt_level=3", obj, sizeof obj, NULL, 0, ks, 2, NULL, &v, &len), VXK_OK);
  uint8_t *again = NULL;
  size_t alen = 0;
  cr_assert_eq(vxk_entry_encode(key, "opt_level=3", obj, sizeof obj, NULL, 0, ks, 2, NULL, &again, &alen),
               VXK_OK);
  cr_assert(alen == len && memcmp(again, v, len) == 0, "same parts, same bytes");
  free(again);
  vxp_entry_view e;
  cr_assert_eq(vxk_entry_check(key, v, len, NULL, &e), VXK_OK);
  cr_assert_str_eq(e.key, key);
  cr_assert_eq(e.options_len, 11);
  cr_assert_eq(memcmp(e.options, "opt_level=3", 11), 0);
  cr_assert_eq(e.object_size, sizeof obj);
  cr_assert_eq(memcmp(e.object, obj, sizeof obj), 0);
  cr_assert_eq(e.nkernels, 2);
  cr_assert_eq(e.kernels[1].name_len, 6);
  cr_assert_eq(memcmp(e.kernels[1].name, "second", 6), 0);
  cr_assert_eq(e.kernels[0].record_size, 6);
  cr_assert_eq(memcmp(e.kernels[0].record, "meta-1", 6), 0);
  cr_assert_null(e.key_id, "unsigned");
  vxp_entry_view_clear(&e);
  /* under another key: refused (an entry copied to the wrong key) */
  cr_assert_eq(vxk_entry_check(other, v, len, NULL, NULL), VXK_ECORRUPT);
  /* every single flipped bit and every truncation: refused */
  for (size_t i = 0; i < len; i++)
    for (int bit = 0; bit < 8; bit++) {
      v[i] ^= (uint8_t)(1u << bit);
      cr_assert_eq(vxk_entry_check(key, v, len, NULL, NULL), VXK_ECORRUPT, "byte %zu bit %d", i, bit);
      v[i] ^= (uint8_t)(1u << bit);
    }
  for (size_t n = 0; n < len; n++)
    cr_assert_eq(vxk_entry_check(key, v, n, NULL, NULL), VXK_ECORRUPT, "truncated to %zu", n);
  free(v);
  cr_assert_eq(vxk_entry_check(key, (const uint8_t *)"\xc0", 1, NULL, NULL), VXK_ECORRUPT, "nil");
  /* what the encoder refuses */
  vxp_entry_kernel nul = {"a\0b", 3, (const uint8_t *)"m", 1};
  cr_assert_eq(vxk_entry_encode(key, "", obj, 1, NULL, 0, &nul, 1, NULL, &v, &len), VXK_EINVAL,
               "a NUL in a name");
  cr_assert_eq(vxk_entry_encode("ABC", "", obj, 1, NULL, 0, ks, 1, NULL, &v, &len), VXK_EINVAL, "not a key");
  cr_assert(vxk_remote_prefix_valid("farm-1.ci:x"));
  cr_assert(!vxk_remote_prefix_valid(""));
  cr_assert(!vxk_remote_prefix_valid("a b"));
  cr_assert(!vxk_remote_prefix_valid("a*"));
}

/* ---- looking into the cache: vxk_list ---- */

/* A key of 64 hex digits: head, then fill to the end. */
static void key_of(const char *head, char fill, char key[VXK_KEY_HEX + 1]) {
  size_t n = strlen(head);
  memcpy(key, head, n);
  memset(key + n, fill, VXK_KEY_HEX - n);
  key[VXK_KEY_HEX] = '\0';
}

/* Line hashes: one per line (a last line without its newline too), equal
 * texts alike, and the first differing line found (a line one text lacks
 * counting as a difference). */
Test(cache, line_hashes_find_the_first_differing_line) {
  static const char a[] = "line one\nline two\nline three\n", b[] = "line one\nline 2\nline three\nline four";
  uint8_t *ha = NULL, *hb = NULL, *hp = NULL;
  size_t na = 0, nb = 0, np = 0;
  cr_assert_eq(vxk_line_hashes((const uint8_t *)a, strlen(a), &ha, &na), VXK_OK);
  cr_assert_eq(vxk_line_hashes((const uint8_t *)b, strlen(b), &hb, &nb), VXK_OK);
  cr_assert_eq(vxk_line_hashes((const uint8_t *)a, 9, &hp, &np), VXK_OK); /* "line one\n" */
  cr_assert_eq(na, 3 * VXK_LINE_HASH_BYTES);
  cr_assert_eq(nb, 4 * VXK_LINE_HASH_BYTES);
  cr_assert_eq(np, 1 * VXK_LINE_HASH_BYTES);
  cr_assert_eq(vxk_first_differing_line(ha, na, ha, na), 0);
  cr_assert_eq(vxk_first_differing_line(ha, na, hb, nb), 2);
  cr_assert_eq(vxk_first_differing_line(hp, np, ha, na), 2, "a line the shorter text lacks");
  cr_assert_eq(memcmp(ha, hb, VXK_LINE_HASH_BYTES), 0, "line one alike");
  uint8_t *he = NULL;
  size_t ne = 1;
  cr_assert_eq(vxk_line_hashes((const uint8_t *)"", 0, &he, &ne), VXK_OK);
  cr_assert_eq(ne, 0);
  free(ha), free(hb), free(hp), free(he);
}

/* What an entry's key came from is kept beside it, listed by source name
 * (with the entries that have no record, parts NULL), replaced with the
 * entry and deleted with it. */
Test(cache, inputs_are_kept_beside_their_entry_and_go_with_it) {
  vxk_cache *c = open_cache(0);
  char a[VXK_KEY_HEX + 1], b[VXK_KEY_HEX + 1], other[VXK_KEY_HEX + 1];
  key_of("aaaa", '0', a);
  key_of("bbbb", '1', b);
  key_of("cccc", '2', other);
  vxt_kernel ks[1] = {{"k", (const uint8_t *)"m", 1}};
  vxt_origin origin = {"k.mlir", "warp_size=4"}, elsewhere = {"other.mlir", "warp_size=4"};
  static const char src[] = "gpu.module @m {\n}\n";
  uint8_t *lines = NULL;
  size_t nlines = 0;
  cr_assert_eq(vxk_line_hashes((const uint8_t *)src, strlen(src), &lines, &nlines), VXK_OK);
  vxk_inputs in = {"vortexd 0.1.0\nllvm=22;warp_size=4\ndebug-file=k.mlir\n", lines, nlines};
  cr_assert_eq(put_entry_inputs(c, a, "OBJ", 3, ks, 1, 0, &origin, &in), VXK_OK);
  cr_assert_eq(put_entry_inputs(c, a, "OBJ", 3, ks, 1, 0, &origin, &in), VXK_OK, "replaced, inputs too");
  cr_assert_eq(put_entry(c, b, "OBJ2", 4, ks, 1, 0, &origin), VXK_OK);
  cr_assert_eq(put_entry_inputs(c, other, "O", 1, ks, 1, 0, &elsewhere, &in), VXK_OK);
  cr_assert_eq(vxk_has(c, a), 1);
  char none[VXK_KEY_HEX + 1];
  key_of("dddd", '3', none);
  cr_assert_eq(vxk_has(c, none), 0);
  vxk_inputs_row *rows = NULL;
  uint32_t n = 0;
  cr_assert_eq(vxk_inputs_of_source(c, "k.mlir", 10, &rows, &n), VXK_OK);
  cr_assert_eq(n, 2, "the entries of k.mlir only");
  const vxk_inputs_row *ra = strcmp(rows[0].key, a) == 0 ? &rows[0] : &rows[1];
  const vxk_inputs_row *rb = ra == &rows[0] ? &rows[1] : &rows[0];
  cr_assert_str_eq(ra->key, a);
  cr_assert_str_eq(ra->parts, in.parts);
  cr_assert_eq(ra->lines_size, nlines);
  cr_assert_eq(memcmp(ra->lines, lines, nlines), 0);
  cr_assert_str_eq(rb->key, b);
  cr_assert_null(rb->parts, "no record");
  vxk_inputs_clear(rows, n);
  cr_assert_eq(vxk_remove(c, a), VXK_OK);
  cr_assert_eq(vxk_inputs_of_source(c, "k.mlir", 10, &rows, &n), VXK_OK);
  cr_assert_eq(n, 1);
  cr_assert_str_eq(rows[0].key, b);
  vxk_inputs_clear(rows, n);
  free(lines);
  vxk_close(c);
}

Test(cache, list_describes_entries_by_key_prefix_with_their_origin) {
  vxk_cache *c = open_cache(0);
  char a[VXK_KEY_HEX + 1], b[VXK_KEY_HEX + 1], other[VXK_KEY_HEX + 1];
  key_of("abcd", '0', a);
  key_of("abcd", '1', b);
  key_of("ef01", '2', other);
  vxt_kernel ks[20];
  char names[20][8];
  for (int i = 0; i < 20; i++) {
    snprintf(names[i], sizeof names[i], "k%d", i);
    ks[i] = (vxt_kernel){names[i], (const uint8_t *)"m", 1};
  }
  vxt_origin origin = {"saxpy.mlir", "opt_level=2;warp_size=8"};
  cr_assert_eq(put_entry(c, a, (const uint8_t *)"OBJ", 3, ks, 2, 1500, &origin), VXK_OK);
  usleep(2000);
  cr_assert_eq(put_entry(c, b, (const uint8_t *)"OBJECT", 6, ks, 20, 0, NULL), VXK_OK);
  usleep(2000);
  cr_assert_eq(put_entry(c, other, (const uint8_t *)"O", 1, ks, 1, 0, &origin), VXK_OK);

  vxk_info *v = NULL;
  uint32_t n = 0;
  uint64_t matched = 0;
  cr_assert_eq(vxk_list(c, "", 10, &v, &n, &matched), VXK_OK);
  cr_assert_eq(matched, 3);
  cr_assert_eq(n, 3);
  cr_assert_str_eq(v[0].key, other, "most recently used first");
  cr_assert_str_eq(v[2].key, a);
  cr_assert_str_eq(v[2].source_name, "saxpy.mlir");
  cr_assert_str_eq(v[2].options, "opt_level=2;warp_size=8");
  cr_assert_eq(v[2].compile_us, 1500);
  vxt_read r;
  cr_assert_eq(read_entry(c, a, &r), VXK_OK);
  cr_assert_eq(v[2].bytes, r.e.size, "the encoded entry's bytes");
  read_clear(&r);
  cr_assert_eq(v[2].nkernels, 2);
  cr_assert_eq(v[2].nnames, 2);
  cr_assert_str_eq(v[2].kernel_names[1], "k1");
  cr_assert_str_eq(v[1].source_name, "", "no origin given: none recorded");
  cr_assert_str_eq(v[1].options, "", "and the entry holds no options");
  cr_assert_eq(v[1].nkernels, 20);
  cr_assert_eq(v[1].nnames, VXK_LIST_NAMES, "names bounded, the count kept");
  vxk_info_clear(v, n);

  cr_assert_eq(vxk_list(c, "abcd", 1, &v, &n, &matched), VXK_OK);
  cr_assert_eq(matched, 2, "the prefix names two entries");
  cr_assert_eq(n, 1, "limit");
  cr_assert_str_eq(v[0].key, b);
  vxk_info_clear(v, n);
  cr_assert_eq(vxk_list(c, "abcd1", 2, &v, &n, &matched), VXK_OK);
  cr_assert_eq(matched, 1);
  cr_assert_str_eq(v[0].key, b);
  vxk_info_clear(v, n);
  cr_assert_eq(vxk_list(c, a, 2, &v, &n, &matched), VXK_OK);
  cr_assert_eq(matched, 1, "a whole key is its own prefix");
  vxk_info_clear(v, n);
  cr_assert_eq(vxk_list(c, "9999", 2, &v, &n, &matched), VXK_OK);
  cr_assert_eq(matched, 0);
  cr_assert_eq(n, 0);
  vxk_info_clear(v, n);
  const char *bad[] = {"ABCD", "ab*", "ab?d", "[a]", "g"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    cr_assert_eq(vxk_list(c, bad[i], 2, &v, &n, &matched), VXK_EINVAL, "%s", bad[i]);
  vxk_close(c);
}

/* Reads of an entry within the LRU resolution move no time, yet each is
 * counted in its hits: held back, written by the next flush. */
Test(cache, every_read_counts_as_a_hit_even_within_the_lru_resolution) {
  vxk_cache *reader = open_cache(0), *writer = open_cache(0);
  vxk_set_lru_resolution(writer, 60u * 1000000u);
  char key[VXK_KEY_HEX + 1];
  key_for("hits", key);
  vxt_kernel in = {"k", (const uint8_t *)"m", 1};
  cr_assert_eq(put_entry(writer, key, (const uint8_t *)"OBJ", 3, &in, 1, 0, NULL), VXK_OK);
  vxk_info *v = NULL;
  uint32_t n = 0;
  uint64_t matched = 0;
  cr_assert_eq(vxk_list(writer, key, 1, &v, &n, &matched), VXK_OK);
  uint64_t stored_at = v[0].last_used_us;
  vxk_info_clear(v, n);
  for (int round = 0; round < 2; round++) {
    for (int i = 0; i < 3; i++) {
      vxt_read e;
      cr_assert_eq(read_entry(reader, key, &e), VXK_OK);
      read_clear(&e);
    }
    vxk_mark_used(reader, key); /* a hit served from a kept copy */
    vxk_touches t;
    cr_assert_eq(vxk_touch_take(reader, &t), VXK_OK);
    cr_assert_eq(t.n, 1, "one key, read four times");
    cr_assert_eq(t.hits[0], 4);
    cr_assert_eq(vxk_touch(writer, &t), VXK_OK);
    vxk_touches_clear(&t);
  }
  cr_assert_eq(vxk_flush(writer), VXK_OK);
  cr_assert_eq(vxk_list(writer, key, 1, &v, &n, &matched), VXK_OK);
  cr_assert_eq(v[0].hits, 8);
  cr_assert_eq(v[0].last_used_us, stored_at, "within the resolution: the LRU time did not move");
  vxk_info_clear(v, n);
  vxk_close(reader);
  vxk_close(writer);
}

/* ---- migration: caches written by earlier versions ---- */

/* SHA-256 over LE64(len) || bytes of each part: version 4's checksum. */
static void v4_checksum(const char *const *parts, const size_t *lens, int n, uint8_t out[32]) {
  EVP_MD_CTX *h = EVP_MD_CTX_new();
  cr_assert_eq(EVP_DigestInit_ex(h, EVP_sha256(), NULL), 1);
  for (int i = 0; i < n; i++) {
    uint8_t le[8];
    for (int b = 0; b < 8; b++)
      le[b] = (uint8_t)((uint64_t)lens[i] >> (8 * b));
    EVP_DigestUpdate(h, le, sizeof le);
    EVP_DigestUpdate(h, parts[i], lens[i]);
  }
  unsigned n_out = 0;
  cr_assert_eq(EVP_DigestFinal_ex(h, out, &n_out), 1);
  EVP_MD_CTX_free(h);
}

/* Writes, as version 3 or 4 did, a cache holding the entry of key (an
 * object and two kernels, read twice, compiled in 7 us, origin recorded
 * in version 4), one of damaged whose checksum fails, and one of poisoned
 * whose checksum holds but whose second record is no record. */
static void write_old_cache(int version, const char *key, const char *damaged, const char *poisoned) {
  char path[128];
  snprintf(path, sizeof path, "%s/cache.db", dir);
  sqlite3 *db = NULL;
  cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
  char schema[2048];
  snprintf(
      schema, sizeof schema,
      "PRAGMA journal_mode=WAL;"
      "CREATE TABLE meta(k TEXT PRIMARY KEY, v TEXT NOT NULL);"
      "INSERT INTO meta VALUES('schema_version', '%d'), ('saved_counter', '1');"
      "CREATE TABLE entries(key TEXT PRIMARY KEY, created_us INTEGER NOT NULL,"
      " last_used_us INTEGER NOT NULL, hits INTEGER NOT NULL DEFAULT 0, bytes INTEGER NOT NULL,"
      " nkernels INTEGER NOT NULL, object BLOB NOT NULL, checksum BLOB NOT NULL,"
      " compile_us INTEGER NOT NULL DEFAULT 0%s);"
      "CREATE INDEX entries_lru ON entries(last_used_us);"
      "CREATE TABLE kernels(key TEXT NOT NULL REFERENCES entries(key) ON DELETE CASCADE,"
      " ordinal INTEGER NOT NULL, name TEXT NOT NULL, metadata BLOB NOT NULL, PRIMARY KEY(key, ordinal));"
      "CREATE TABLE counters(name TEXT PRIMARY KEY, value INTEGER NOT NULL);",
      version,
      version == 4 ? ", source_name TEXT NOT NULL DEFAULT '', options TEXT NOT NULL DEFAULT ''" : "");
  cr_assert_eq(sqlite3_exec(db, schema, NULL, NULL, NULL), SQLITE_OK, "%s", sqlite3_errmsg(db));
  size_t r0, r1;
  uint8_t *rec0 = real_record("k0", &r0), *rec1 = real_record("k1", &r1);
  const char *parts[] = {"vortexd cache entry v1", key,  "OBJECT",          "k0",
                         (const char *)rec0,       "k1", (const char *)rec1};
  size_t lens[7];
  for (int i = 0; i < 7; i++)
    lens[i] = strlen(parts[i]);
  lens[4] = r0, lens[6] = r1;
  uint8_t sum[32], bad[32] = {0}, psum[32];
  v4_checksum(parts, lens, 7, sum);
  const char *pparts[] = {"vortexd cache entry v1", poisoned, "OBJECT", "k0",
                          (const char *)rec0,       "k1",     "meta-1"};
  size_t plens[7];
  for (int i = 0; i < 7; i++)
    plens[i] = strlen(pparts[i]);
  plens[4] = r0;
  v4_checksum(pparts, plens, 7, psum);
  const char *names[3] = {key, damaged, poisoned};
  for (int e = 0; e < 3; e++) {
    sqlite3_stmt *st = NULL;
    cr_assert_eq(sqlite3_prepare_v2(
                     db,
                     version == 4 ? "INSERT INTO entries VALUES(?1, 1000, 2000, 2, 17, 2, 'OBJECT', ?2,"
                                    " 7, 'old.mlir', 'opt_level=2')"
                                  : "INSERT INTO entries VALUES(?1, 1000, 2000, 2, 17, 2, 'OBJECT', ?2, 7)",
                     -1, &st, NULL),
                 SQLITE_OK, "%s", sqlite3_errmsg(db));
    sqlite3_bind_text(st, 1, names[e], -1, SQLITE_STATIC);
    sqlite3_bind_blob(st, 2, e == 0 ? sum : e == 1 ? bad : psum, 32, SQLITE_STATIC);
    cr_assert_eq(sqlite3_step(st), SQLITE_DONE, "%s", sqlite3_errmsg(db));
    sqlite3_finalize(st);
    cr_assert_eq(sqlite3_prepare_v2(db, "INSERT INTO kernels VALUES(?1, ?2, ?3, ?4)", -1, &st, NULL),
                 SQLITE_OK);
    for (int k = 0; k < 2; k++) {
      sqlite3_bind_text(st, 1, names[e], -1, SQLITE_STATIC);
      sqlite3_bind_int(st, 2, k);
      sqlite3_bind_text(st, 3, k ? "k1" : "k0", -1, SQLITE_STATIC);
      if (k == 1 && e == 2)
        sqlite3_bind_blob(st, 4, "meta-1", 6, SQLITE_STATIC);
      else
        sqlite3_bind_blob(st, 4, k ? rec1 : rec0, (int)(k ? r1 : r0), SQLITE_STATIC);
      cr_assert_eq(sqlite3_step(st), SQLITE_DONE, "%s", sqlite3_errmsg(db));
      sqlite3_reset(st);
    }
    sqlite3_finalize(st);
  }
  sqlite3_close(db);
  free(rec0);
  free(rec1);
}

/* A cache written before every level held one encoding of an entry
 * (schema 4), or before entries recorded their origin (schema 3), is
 * migrated by its first writer: every whole entry re-encoded with what it
 * held, its times and counts kept; one that fails its old checksum, or
 * holds a record no client accepts, dropped and counted, never re-sealed
 * as whole. */
Test(cache, version_3_and_4_caches_are_migrated_entry_by_entry) {
  for (int version = 3; version <= 4; version++) {
    char key[VXK_KEY_HEX + 1], damaged[VXK_KEY_HEX + 1], poisoned[VXK_KEY_HEX + 1], err[256];
    key_for("old", key);
    key_for("old, damaged", damaged);
    key_for("old, poisoned", poisoned);
    write_old_cache(version, key, damaged, poisoned);
    vxk_cache *c = NULL;
    cr_assert_eq(vxk_open_readonly(dir, &c, err, sizeof err), VXK_EIO, "a reader waits for the migration");
    cr_assert_not_null(strstr(err, "another schema version"), "%s", err);

    c = open_cache(0);
    cr_assert_null(vxk_open_notice(c), "migrated, not discarded: %s", vxk_open_notice(c));
    vxt_read r;
    cr_assert_eq(read_entry(c, key, &r), VXK_OK, "version %d", version);
    cr_assert_eq(r.object_size, 6);
    cr_assert_eq(memcmp(r.object, "OBJECT", 6), 0);
    cr_assert_eq(r.nkernels, 2);
    cr_assert_str_eq(r.kernels[1].name, "k1");
    size_t r1;
    uint8_t *rec1 = real_record("k1", &r1);
    cr_assert_eq(r.kernels[1].metadata_size, r1);
    cr_assert_eq(memcmp(r.kernels[1].metadata, rec1, r1), 0);
    free(rec1);
    cr_assert_eq(r.compile_us, 7);
    const char *options = version == 4 ? "opt_level=2" : "";
    cr_assert(r.v.options_len == strlen(options) && memcmp(r.v.options, options, r.v.options_len) == 0,
              "the options recorded are the entry's");
    size_t size = r.e.size;
    read_clear(&r);
    cr_assert_eq(read_entry(c, damaged, &r), VXK_ENOTFOUND, "a damaged entry is not carried over");
    cr_assert_eq(read_entry(c, poisoned, &r), VXK_ENOTFOUND, "nor one with a record no client takes");
    vxk_stats st;
    cr_assert_eq(vxk_stats_get(c, &st), VXK_OK);
    cr_assert_eq(st.entries, 1);
    cr_assert_eq(st.corrupt, 2);
    cr_assert_eq(st.bytes, size);
    vxk_info *v = NULL;
    uint32_t n = 0;
    uint64_t matched = 0;
    cr_assert_eq(vxk_list(c, NULL, 5, &v, &n, &matched), VXK_OK);
    cr_assert_eq(n, 1);
    cr_assert_eq(v[0].hits, 2);
    cr_assert_eq(v[0].created_us, 1000);
    cr_assert_str_eq(v[0].source_name, version == 4 ? "old.mlir" : "");
    cr_assert_eq(v[0].nnames, 2);
    vxk_info_clear(v, n);
    vxk_close(c);
    cr_assert_eq(vxk_open_readonly(dir, &c, err, sizeof err), VXK_OK, "%s", err);
    cr_assert_eq(read_entry(c, key, &r), VXK_OK);
    read_clear(&r);
    vxk_close(c);

    char path[128];
    sqlite3 *db = NULL;
    snprintf(path, sizeof path, "%s/cache.db", dir);
    cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
    sqlite3_stmt *q = NULL;
    cr_assert_eq(sqlite3_prepare_v2(db, "SELECT v FROM meta WHERE k='schema_version'", -1, &q, NULL),
                 SQLITE_OK);
    cr_assert_eq(sqlite3_step(q), SQLITE_ROW);
    cr_assert_str_eq((const char *)sqlite3_column_text(q, 0), "5");
    sqlite3_finalize(q);
    sqlite3_close(db);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -f %s/cache.db*", dir);
    cr_assert_eq(system(cmd), 0);
  }
}
