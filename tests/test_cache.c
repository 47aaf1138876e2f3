/* test_cache.c - cache/: put, get, restart, keys, eviction, corruption. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vxk.h"

static char dir[64];

static void setup(void) {
  snprintf(dir, sizeof dir, "/tmp/vxk-test-XXXXXX");
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

TestSuite(cache, .init = setup, .fini = teardown);

Test(cache, put_get_and_survive_restart) {
  vxk_cache *c = open_cache(0);
  char key[VXK_KEY_HEX + 1];
  key_for("module {}", key);
  vxk_kernel_in in[2] = {
      {"k0", (const uint8_t *)"M0", 2},
      {"k1", (const uint8_t *)"META1", 5},
  };
  cr_assert_eq(vxk_put(c, key, (const uint8_t *)"OBJECT1", 7, in, 2), VXK_OK);
  vxk_close(c);

  c = open_cache(0); /* a restarted daemon */
  vxk_entry out;
  cr_assert_eq(vxk_get(c, key, NULL, &out), VXK_OK);
  cr_assert_eq(out.nkernels, 2);
  cr_assert_str_eq(out.kernels[0].name, "k0");
  cr_assert_eq(out.object_size, 7);
  cr_assert_eq(memcmp(out.object, "OBJECT1", 7), 0);
  cr_assert_eq(memcmp(out.kernels[1].metadata, "META1", 5), 0);
  vxk_entry_clear(&out);

  cr_assert_eq(vxk_get(c, key, "k1", &out), VXK_OK);
  cr_assert_eq(out.nkernels, 1);
  cr_assert_str_eq(out.kernels[0].name, "k1");
  cr_assert_eq(memcmp(out.object, "OBJECT1", 7), 0, "one kernel comes with the module's object");
  vxk_entry_clear(&out);
  cr_assert_eq(vxk_get(c, key, "nope", &out), VXK_ENOTFOUND);

  vxk_stats st;
  cr_assert_eq(vxk_stats_get(c, &st), VXK_OK);
  cr_assert_eq(st.entries, 1);
  cr_assert_eq(st.bytes, 7 + 2 + 5, "the object is stored once");
  vxk_close(c);
}

Test(cache, unknown_and_invalid_keys) {
  vxk_cache *c = open_cache(0);
  char key[VXK_KEY_HEX + 1];
  key_for("absent", key);
  vxk_entry out;
  cr_assert_eq(vxk_get(c, key, NULL, &out), VXK_ENOTFOUND);
  cr_assert_eq(vxk_get(c, "zz", NULL, &out), VXK_EINVAL);
  cr_assert_eq(vxk_get(c, "'; DROP TABLE entries; --", NULL, &out), VXK_EINVAL);
  vxk_kernel_in in = {"k", (const uint8_t *)"m", 1};
  cr_assert_eq(vxk_put(c, "ABC", (const uint8_t *)"o", 1, &in, 1), VXK_EINVAL);
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

Test(cache, replacing_an_entry_is_atomic) {
  vxk_cache *c = open_cache(0);
  char key[VXK_KEY_HEX + 1];
  key_for("x", key);
  vxk_kernel_in two[2] = {{"a", (const uint8_t *)"m", 1}, {"b", (const uint8_t *)"m", 1}};
  cr_assert_eq(vxk_put(c, key, (const uint8_t *)"12", 2, two, 2), VXK_OK);
  vxk_kernel_in one = {"c", (const uint8_t *)"m", 1};
  cr_assert_eq(vxk_put(c, key, (const uint8_t *)"3", 1, &one, 1), VXK_OK);
  vxk_entry out;
  cr_assert_eq(vxk_get(c, key, NULL, &out), VXK_OK);
  cr_assert_eq(out.nkernels, 1, "old kernels are gone with the old entry");
  cr_assert_str_eq(out.kernels[0].name, "c");
  cr_assert_eq(out.object_size, 1);
  cr_assert_eq(out.object[0], '3', "and so is the old object");
  vxk_entry_clear(&out);
  vxk_close(c);
}

Test(cache, failed_put_leaves_no_partial_entry) {
  vxk_cache *c = open_cache(0);
  char key[VXK_KEY_HEX + 1];
  key_for("dup", key);
  /* two kernels with one ordinal cannot happen through the API; a NULL name
   * violates NOT NULL on the second row, after the first row went in */
  vxk_kernel_in bad[2] = {{"a", (const uint8_t *)"m", 1}, {NULL, (const uint8_t *)"m", 1}};
  cr_assert_neq(vxk_put(c, key, (const uint8_t *)"12", 2, bad, 2), VXK_OK);
  vxk_entry out;
  cr_assert_eq(vxk_get(c, key, NULL, &out), VXK_ENOTFOUND, "the transaction was rolled back");
  vxk_stats st;
  cr_assert_eq(vxk_stats_get(c, &st), VXK_OK);
  cr_assert_eq(st.entries, 0);
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
    vxk_kernel_in in = {"k", (const uint8_t *)"m", 1};
    cr_assert_eq(vxk_put(c, keys[i], blob, sizeof blob, &in, 1), VXK_OK);
    if (i == 1) { /* touch entry 0 so that entry 1 is the oldest */
      vxk_entry o;
      usleep(2000);
      cr_assert_eq(vxk_get(c, keys[0], NULL, &o), VXK_OK);
      vxk_entry_clear(&o);
    }
    usleep(2000);
  }
  vxk_stats st;
  cr_assert_eq(vxk_stats_get(c, &st), VXK_OK);
  cr_assert_leq(st.bytes, 3000);
  cr_assert_geq(st.evictions, 1);
  vxk_entry o;
  cr_assert_eq(vxk_get(c, keys[1], NULL, &o), VXK_ENOTFOUND, "least recently used went first");
  cr_assert_eq(vxk_get(c, keys[3], NULL, &o), VXK_OK, "newest stays");
  vxk_entry_clear(&o);
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
  vxk_kernel_in in = {"k", (const uint8_t *)"m", 1};
  cr_assert_eq(vxk_put(c, key, (const uint8_t *)"o", 1, &in, 1), VXK_OK);
  vxk_close(c);
  char aside[160];
  snprintf(aside, sizeof aside, "%s.corrupt", path);
  struct stat st;
  cr_assert_eq(stat(aside, &st), 0, "the unreadable file is kept for inspection");
}
