/* test_e2e.c - vortexd + libvxc + vxc end to end, including bad input. */
#define _GNU_SOURCE /* memmem */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "cache/vxk.h"
#include "cache/vxk_entry.h"
#include "client/vxc.h"
#include "lowering/vxl.h"
#include "protocol/vxp_entry.h"
#include "vxt.h"

#define KERNELS VXT_KERNELS_DIR "/"
#define POLYGEIST_STYLE VXT_KERNELS_DIR "/polygeist_style.mlir"
#ifdef VXT_CORPUS_DIR
#define CORPUS VXT_CORPUS_DIR "/vortex-hip/"
#endif

static vxt_daemon d;

static void start(void) {
  memset(&d, 0, sizeof d);
  cr_assert_eq(vxt_daemon_start(&d, NULL), 0, "vortexd did not start");
}

static void stop(void) {
  cr_assert_eq(vxt_daemon_stop(&d), 0, "vortexd did not exit cleanly");
  char cmd[256];
  snprintf(cmd, sizeof cmd, "rm -rf %s", d.dir);
  cr_assert_eq(system(cmd), 0);
}

TestSuite(e2e, .init = start, .fini = stop, .timeout = 300);
#ifdef VXT_CORPUS_DIR
TestSuite(conformance, .init = start, .fini = stop, .timeout = 300);
#endif

static vxc_conn *conn(void) {
  vxc_conn *c = NULL;
  cr_assert_eq(vxc_connect(d.sock, &c), 0);
  return c;
}

static void compile_path(vxc_conn *c, const char *path, vxp_response *r) {
  size_t len;
  char *src = vxt_read_file(path, &len);
  cr_assert_not_null(src, "%s", path);
  cr_assert_eq(vxc_compile(c, src, len, path, NULL, r), 0);
  free(src);
}

static uint64_t misses(vxc_conn *c) {
  vxp_response s;
  cr_assert_eq(vxc_stats(c, &s), 0);
  cr_assert_eq(s.status, VXP_STATUS_OK);
  uint64_t m = s.stats.misses;
  vxp_response_clear(&s);
  return m;
}

/* Compiles path twice: a miss that produces valid objects, then a hit with
 * identical bytes and no recompilation. */
static void compile_twice(vxc_conn *c, const char *path, uint32_t want_kernels) {
  vxp_response a, b;
  uint64_t m0 = misses(c);
  compile_path(c, path, &a);
  cr_assert_eq(a.status, VXP_STATUS_OK, "%s: %s", path, a.ndiags ? a.diags[0] : a.message);
  cr_assert_not(a.cached, "%s first compile", path);
  cr_assert_eq(a.nkernels, want_kernels, "%s", path);
  cr_assert_eq(strlen(a.key), 64);
  for (uint32_t i = 0; i < a.nkernels; i++) {
    const char *why = vxt_elf_check(a.object, a.object_size, a.kernels[i].entry);
    cr_assert_null(why, "%s %s: %s", path, a.kernels[i].name, why);
    cr_assert_geq(a.kernels[i].buffer_size, a.kernels[i].launch_offset + VXP_LAUNCH_HEADER_SIZE);
    cr_assert_eq(a.kernels[i].buffer_size % 8, 0);
  }
  cr_assert_eq(misses(c), m0 + 1);
  compile_path(c, path, &b);
  cr_assert_eq(b.status, VXP_STATUS_OK);
  cr_assert(b.cached, "%s second compile must be a cache hit", path);
  cr_assert_str_eq(a.key, b.key);
  cr_assert_eq(misses(c), m0 + 1, "a hit does not compile again");
  cr_assert_eq(b.nkernels, a.nkernels);
  cr_assert_eq(a.object_size, b.object_size);
  cr_assert_eq(memcmp(a.object, b.object, a.object_size), 0);
  for (uint32_t i = 0; i < a.nkernels; i++) {
    cr_assert_str_eq(a.kernels[i].name, b.kernels[i].name);
    cr_assert_str_eq(a.kernels[i].entry, b.kernels[i].entry);
    cr_assert_eq(a.kernels[i].nargs, b.kernels[i].nargs);
    for (uint32_t j = 0; j < a.kernels[i].nargs; j++) {
      cr_assert_eq(a.kernels[i].args[j].offset, b.kernels[i].args[j].offset);
      cr_assert_str_eq(a.kernels[i].args[j].type, b.kernels[i].args[j].type);
    }
  }
  vxp_response_clear(&a);
  vxp_response_clear(&b);
}

#ifdef VXT_CORPUS_DIR
Test(conformance, vortex_hip_files_compile_then_hit) {
  vxc_conn *c = conn();
  const char *files[] = VXT_VORTEX_HIP_FILES;
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    char path[512];
    snprintf(path, sizeof path, CORPUS "%s.mlir", files[i]);
    compile_twice(c, path, 1);
  }
  vxc_close(c);
}
#endif

Test(e2e, kernels_and_examples_compile_then_hit) {
  vxc_conn *c = conn();
  compile_twice(c, POLYGEIST_STYLE, 1);
  compile_twice(c, KERNELS "sgemm_tiled.mlir", 1);
  compile_twice(c, KERNELS "control_flow.mlir", 1);
  compile_twice(c, VXT_EXAMPLES_DIR "/saxpy.mlir", 1);
  compile_twice(c, VXT_EXAMPLES_DIR "/mixed_args.mlir", 1);
  compile_twice(c, VXT_EXAMPLES_DIR "/two_kernels.mlir", 2);
  vxc_close(c);
}

Test(e2e, metadata_of_a_polygeist_style_kernel) {
  vxc_conn *c = conn();
  vxp_response r;
  compile_path(c, POLYGEIST_STYLE, &r);
  cr_assert_eq(r.status, VXP_STATUS_OK);
  const vxp_kernel *k = &r.kernels[0];
  uint32_t off[] = {0, 4, 8, 12};
  for (int i = 0; i < 4; i++)
    cr_assert_eq(k->args[i].offset, off[i]);
  cr_assert_eq(k->args[1].kind, VXP_ARG_POINTER);
  cr_assert_eq(k->args_size, 16);
  /* libvxc packs exactly where the kernel reads */
  int32_t count = 1000;
  uint32_t in = 0x10000, out = 0x20000;
  float scale = 2.5f;
  const void *vals[] = {&count, &in, &scale, &out};
  uint32_t grid[3] = {4, 8, 1}, block[3] = {32, 1, 1};
  uint8_t buf[64];
  cr_assert_eq(vxc_pack_args(k, vals, grid, block, 0, buf, sizeof buf), 0);
  int32_t gc;
  memcpy(&gc, buf + 0, 4);
  cr_assert_eq(gc, 1000);
  float gs;
  memcpy(&gs, buf + 8, 4);
  cr_assert_eq(gs, 2.5f);
  uint32_t g[7];
  memcpy(g, buf + k->launch_offset, sizeof g);
  cr_assert_eq(g[0], 4);
  cr_assert_eq(g[1], 8);
  cr_assert_eq(g[3], 32);
  cr_assert_eq(vxc_pack_args(k, vals, grid, block, 0, buf, 8), -EINVAL, "small buffer refused");
  /* a record whose offset + size wraps 32 bits is refused, nothing written */
  vxp_kernel bad = *k;
  vxp_arg a0 = k->args[0];
  a0.offset = 0xfffffff0u, a0.size = 0x20, a0.align = 16;
  bad.args = &a0;
  bad.nargs = 1;
  memset(buf, 0xAB, sizeof buf);
  cr_assert_eq(vxc_pack_args(&bad, vals, grid, block, 0, buf, sizeof buf), -EINVAL);
  cr_assert_eq(buf[0], 0xAB, "nothing written for a refused record");
  /* a record whose i32 claims 65536 bytes would read that much from the
   * 4-byte count: refused before anything is read or written */
  a0 = k->args[0];
  a0.size = 65536;
  bad = *k;
  bad.args = &a0;
  bad.nargs = 1;
  bad.args_size = bad.launch_offset = 65536;
  bad.buffer_size = 65536 + 32;
  uint8_t *big = malloc(bad.buffer_size);
  cr_assert_not_null(big);
  memset(big, 0xAB, bad.buffer_size);
  cr_assert_eq(vxc_pack_args(&bad, vals, grid, block, 0, big, bad.buffer_size), -EINVAL);
  cr_assert_eq(big[0], 0xAB, "nothing written for a record larger than its types");
  free(big);
  vxp_response_clear(&r);
  vxc_close(c);
}

Test(e2e, fetch_by_key_and_one_kernel) {
  vxc_conn *c = conn();
  vxp_response r, f;
  compile_path(c, VXT_EXAMPLES_DIR "/two_kernels.mlir", &r);
  cr_assert_eq(r.status, VXP_STATUS_OK);
  cr_assert_eq(vxc_fetch(c, r.key, NULL, &f), 0);
  cr_assert_eq(f.status, VXP_STATUS_OK);
  cr_assert_eq(f.nkernels, 2);
  vxp_response_clear(&f);
  cr_assert_eq(vxc_fetch(c, r.key, "transpose_add", &f), 0);
  cr_assert_eq(f.nkernels, 1);
  cr_assert_str_eq(f.kernels[0].name, "transpose_add");
  cr_assert_str_eq(f.kernels[0].entry, r.kernels[1].entry);
  cr_assert_eq(f.object_size, r.object_size, "one kernel comes with the module's object");
  cr_assert_eq(memcmp(f.object, r.object, r.object_size), 0);
  vxp_response_clear(&f);
  cr_assert_eq(vxc_fetch(c, r.key, "no_such_kernel", &f), 0);
  cr_assert_eq(f.status, VXP_STATUS_NOT_FOUND);
  vxp_response_clear(&f);
  cr_assert_eq(vxc_fetch(c, "0000000000000000000000000000000000000000000000000000000000000000", NULL, &f), 0);
  cr_assert_eq(f.status, VXP_STATUS_NOT_FOUND);
  vxp_response_clear(&f);
  cr_assert_eq(vxc_fetch(c, "../../etc/passwd", NULL, &f), 0);
  cr_assert_eq(f.status, VXP_STATUS_BAD_REQUEST);
  vxp_response_clear(&f);
  vxp_response_clear(&r);
  vxc_close(c);
}

/* One encoding of an entry from the worker to the client: the bytes a miss
 * answers with are the bytes the cache stores, a hit and a fetch send. */
Test(e2e, the_entry_a_miss_answers_with_is_what_the_cache_stores_and_serves) {
  vxc_conn *c = conn();
  vxp_response miss, hit, f;
  compile_path(c, VXT_EXAMPLES_DIR "/two_kernels.mlir", &miss);
  cr_assert_not(miss.cached);
  cr_assert_not_null(miss.entry);
  compile_path(c, VXT_EXAMPLES_DIR "/two_kernels.mlir", &hit);
  cr_assert(hit.cached);
  cr_assert(hit.entry_size == miss.entry_size && memcmp(hit.entry, miss.entry, miss.entry_size) == 0,
            "a hit sends the miss's bytes");
  cr_assert_eq(vxc_fetch(c, miss.key, "transpose_add", &f), 0);
  cr_assert(f.entry_size == miss.entry_size && memcmp(f.entry, miss.entry, miss.entry_size) == 0,
            "so does a fetch of one kernel (the client keeps that one)");
  vxp_response s;
  cr_assert_eq(vxc_stats(c, &s), 0); /* what is queued is written first */
  vxp_response_clear(&s);
  vxk_cache *kc = NULL;
  char err[256];
  cr_assert_eq(vxk_open_readonly(d.cache, &kc, err, sizeof err), VXK_OK, "%s", err);
  vxk_entry e;
  cr_assert_eq(vxk_get(kc, miss.key, &e), VXK_OK);
  cr_assert(e.size == miss.entry_size && memcmp(e.data, miss.entry, e.size) == 0, "stored as sent");
  vxp_entry_view v;
  cr_assert_eq(vxk_entry_check(miss.key, e.data, e.size, NULL, &v), VXK_OK);
  cr_assert_eq(v.nkernels, 2);
  cr_assert_not_null(memmem(v.options, v.options_len, "opt_level=2", 11), "the options it was compiled with");
  vxp_entry_view_clear(&v);
  vxk_entry_clear(&e);
  vxk_close(kc);
  vxp_response *all[] = {&miss, &hit, &f};
  for (int i = 0; i < 3; i++)
    vxp_response_clear(all[i]);
  vxc_close(c);
}

Test(e2e, cache_survives_restart) {
  vxc_conn *c = conn();
  vxp_response r;
  compile_path(c, KERNELS "sgemm_naive.mlir", &r);
  cr_assert_eq(r.status, VXP_STATUS_OK);
  cr_assert_not(r.cached);
  vxp_response_clear(&r);
  vxc_close(c);
  cr_assert_eq(vxt_daemon_stop(&d), 0);
  cr_assert_eq(vxt_daemon_start(&d, NULL), 0); /* same directory, same cache */
  c = conn();
  compile_path(c, KERNELS "sgemm_naive.mlir", &r);
  cr_assert(r.cached, "served from the cache after a restart");
  vxp_response_clear(&r);
  vxp_response s;
  cr_assert_eq(vxc_stats(c, &s), 0);
  cr_assert_eq(s.stats.misses, 1, "counters survive the restart too");
  cr_assert_eq(s.stats.hits, 1);
  vxp_response_clear(&s);
  vxc_close(c);
}

/* Compiles src (len bytes) under source_name on c; returns the reply. */
static vxp_response compile_as(vxc_conn *c, const char *src, size_t len, const char *source_name) {
  vxp_response r;
  cr_assert_eq(vxc_compile(c, src, len, source_name, NULL, &r), 0);
  cr_assert_eq(r.status, VXP_STATUS_OK, "%s: %s", source_name, r.ndiags ? r.diags[0] : r.message);
  return r;
}

/* src compiled as source_name by a daemon of one worker started for it,
 * from an empty cache (stopped and removed after). */
static vxp_response compile_elsewhere(const char *src, size_t len, const char *source_name) {
  vxt_daemon d2 = {0};
  cr_assert_eq(vxt_daemon_start(&d2, "--workers=1"), 0);
  vxc_conn *c2 = NULL;
  cr_assert_eq(vxc_connect(d2.sock, &c2), 0);
  vxp_response r = compile_as(c2, src, len, source_name);
  cr_assert_not(r.cached);
  vxc_close(c2);
  cr_assert_eq(vxt_daemon_stop(&d2), 0);
  vxt_remove_tree(d2.dir);
  return r;
}

/* Same key, same bytes: the object depends on the source's text and its
 * file's name, never on the directory or the user it came from. */
Test(e2e, one_text_from_two_directories_gives_one_object_naming_no_directory) {
  size_t len;
  char *src = vxt_read_file(KERNELS "sgemm_naive.mlir", &len);
  cr_assert_not_null(src);
  vxc_conn *c = conn();
  vxp_response a = compile_as(c, src, len, "/a/secret_project/k.mlir");
  cr_assert_not(a.cached);
  cr_assert_not_null(memmem(a.object, a.object_size, "k.mlir", 6), "the line tables name the file");
  static const char *const dirs[] = {"/a/secret_project", "secret_project", "/b/other", "other/"};
  for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++)
    cr_assert_null(memmem(a.object, a.object_size, dirs[i], strlen(dirs[i])), "%s in the object", dirs[i]);
  /* warm: the same text from another directory is the same entry */
  vxp_response b = compile_as(c, src, len, "/b/other/k.mlir");
  cr_assert(b.cached);
  cr_assert_str_eq(a.key, b.key);
  cr_assert_eq(a.object_size, b.object_size);
  cr_assert_eq(memcmp(a.object, b.object, a.object_size), 0);
  vxc_close(c);
  /* cold: a second daemon on an empty cache (another user's) compiles the
   * same bytes from its own directory */
  vxt_daemon d2 = {0};
  cr_assert_eq(vxt_daemon_start(&d2, NULL), 0);
  vxc_conn *c2 = NULL;
  cr_assert_eq(vxc_connect(d2.sock, &c2), 0);
  vxp_response e = compile_as(c2, src, len, "relative/dir/k.mlir");
  cr_assert_not(e.cached, "compiled anew");
  cr_assert_str_eq(e.key, a.key);
  cr_assert_eq(e.object_size, a.object_size);
  cr_assert_eq(memcmp(e.object, a.object, a.object_size), 0, "a cold compile from elsewhere: the same bytes");
  /* another file name is another object, so another key */
  vxp_response f = compile_as(c2, src, len, "/a/secret_project/other_name.mlir");
  cr_assert_str_neq(f.key, a.key);
  cr_assert_not_null(memmem(f.object, f.object_size, "other_name.mlir", 15));
  cr_assert_null(memmem(f.object, f.object_size, "secret_project", 14));
  vxc_close(c2);
  cr_assert_eq(vxt_daemon_stop(&d2), 0);
  char cmd[256];
  snprintf(cmd, sizeof cmd, "rm -rf %s", d2.dir);
  cr_assert_eq(system(cmd), 0);
  vxp_response *all[] = {&a, &b, &e, &f};
  for (size_t i = 0; i < 4; i++)
    vxp_response_clear(all[i]);
  free(src);
}

Test(e2e, a_large_module_is_the_same_bytes_from_one_worker_or_several) {
  size_t len;
  char *src = vxt_many_kernels(100, &len);
  cr_assert_not_null(src);
  /* two workers: the one compiling borrows the idle one's core */
  vxc_conn *c = conn();
  vxp_response a = compile_as(c, src, len, "many.mlir");
  cr_assert_eq(a.status, VXP_STATUS_OK, "%s", a.message ? a.message : "");
  cr_assert_eq(a.nkernels, 100);
  for (uint32_t i = 0; i < a.nkernels; i++) {
    char want[32];
    snprintf(want, sizeof want, "__vxl_main_%u", i);
    cr_assert_str_eq(a.kernels[i].entry, want);
    cr_assert_null(vxt_elf_check(a.object, a.object_size, want), "%s", want);
  }
  vxc_close(c);
  /* one worker, on its own: every piece on one thread */
  vxp_response b = compile_elsewhere(src, len, "many.mlir");
  cr_assert_str_eq(b.key, a.key);
  cr_assert_eq(b.object_size, a.object_size);
  cr_assert_eq(memcmp(b.object, a.object, a.object_size), 0, "one worker or two: the same bytes");
  vxp_response_clear(&a);
  vxp_response_clear(&b);
  free(src);
}

Test(e2e, source_errors_come_back_as_diagnostics_and_the_daemon_goes_on) {
  vxc_conn *c = conn();
  const char *bad[] = {
      "module {\n  gpu.module @m {\n    gpu.func @k() kernel {\n      %x = arith.addi %y, %y : i32\n",
      "module {\n  func.func @host() {\n    return\n  }\n}\n",
      "module {\n  gpu.module @m {\n    gpu.func @k() kernel {\n      %l = gpu.cluster_id x\n"
      "      gpu.return\n    }\n  }\n}\n",
  };
  const char *want[] = {"bad.mlir:4:", "no kernels", "bad.mlir:4:12: error: unsupported: gpu.cluster_id"};
  for (int i = 0; i < 3; i++) {
    vxp_response r;
    cr_assert_eq(vxc_compile(c, bad[i], strlen(bad[i]), "bad.mlir", NULL, &r), 0);
    cr_assert_eq(r.status, VXP_STATUS_COMPILE_ERROR, "case %d", i);
    cr_assert_eq(r.nkernels, 0);
    cr_assert_geq(r.ndiags, 1);
    int found = 0;
    for (uint32_t j = 0; j < r.ndiags; j++)
      found |= strstr(r.diags[j], want[i]) != NULL;
    cr_assert(found, "case %d: no diagnostic with '%s' (first: %s)", i, want[i], r.diags[0]);
    vxp_response_clear(&r);
  }
  compile_twice(c, KERNELS "stencil3d.mlir", 1);
  vxp_response s;
  cr_assert_eq(vxc_stats(c, &s), 0);
  cr_assert_eq(s.stats.compile_errors, 3);
  cr_assert_eq(s.stats.entries, 1, "failed compiles are not cached");
  vxp_response_clear(&s);
  vxc_close(c);
}

Test(e2e, repeated_hits_are_served_from_the_encoded_reply) {
  /* the second compile reads the cache, later ones get a copy of that
   * encoded reply with their own id: the same answer every time */
  vxc_conn *a = conn(), *b = conn();
  vxp_response r[4];
  compile_path(a, KERNELS "sgemm_tiled.mlir", &r[0]);
  cr_assert_eq(r[0].status, VXP_STATUS_OK);
  vxp_response s0;
  cr_assert_eq(vxc_stats(a, &s0), 0);
  uint64_t hits0 = s0.stats.hits, saved0 = s0.stats.saved_ms;
  vxp_response_clear(&s0);
  compile_path(a, KERNELS "sgemm_tiled.mlir", &r[1]);
  vxp_response s_one;
  cr_assert_eq(vxc_stats(a, &s_one), 0);
  uint64_t one_hit_ms = s_one.stats.saved_ms - saved0; /* the compile time one hit saves */
  vxp_response_clear(&s_one);
  cr_assert_geq(one_hit_ms, 2, "sgemm_tiled takes milliseconds to compile");
  compile_path(b, KERNELS "sgemm_tiled.mlir", &r[2]); /* other connection, other ids */
  compile_path(a, KERNELS "sgemm_tiled.mlir", &r[3]);
  for (int i = 1; i < 4; i++) {
    cr_assert_eq(r[i].status, VXP_STATUS_OK);
    cr_assert(r[i].cached, "reply %d", i);
    cr_assert_str_eq(r[i].key, r[0].key);
    cr_assert_eq(r[i].object_size, r[0].object_size);
    cr_assert_eq(memcmp(r[i].object, r[0].object, r[0].object_size), 0);
    cr_assert_eq(r[i].nkernels, r[0].nkernels);
    cr_assert_str_eq(r[i].kernels[0].entry, r[0].kernels[0].entry);
    cr_assert_eq(r[i].kernels[0].shared_bytes, r[0].kernels[0].shared_bytes);
  }
  vxp_response s1;
  cr_assert_eq(vxc_stats(b, &s1), 0);
  cr_assert_eq(s1.stats.hits, hits0 + 3, "each served copy counts as a hit");
  cr_assert_geq(s1.stats.saved_ms + 2, saved0 + 3 * one_hit_ms, "and saves the compile's time, copies too");
  vxp_response_clear(&s1);
  for (int i = 0; i < 4; i++)
    vxp_response_clear(&r[i]);
  vxc_close(a);
  vxc_close(b);
}

/* ---- raw sockets: frames libvxc would never send ---- */

static int raw_connect(void) {
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  cr_assert_lt(strlen(d.sock), sizeof a.sun_path);
  memcpy(a.sun_path, d.sock, strlen(d.sock) + 1);
  cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
  struct timeval tv = {10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return fd;
}

/* Reads one response frame; returns 0 and *r, or -1 on EOF/error. */
static int raw_read(int fd, vxp_response *r) {
  uint8_t h[4];
  size_t got = 0;
  while (got < 4) {
    ssize_t n = read(fd, h + got, 4 - got);
    if (n <= 0) return -1;
    got += (size_t)n;
  }
  uint32_t len;
  cr_assert_eq(vxp_frame_length(h, VXP_MAX_FRAME_DEFAULT, &len), VXP_OK);
  uint8_t *p = malloc(len);
  for (got = 0; got < len;) {
    ssize_t n = read(fd, p + got, len - got);
    cr_assert_gt(n, 0);
    got += (size_t)n;
  }
  int rc = vxp_response_decode(p, len, r);
  free(p);
  return rc == VXP_OK ? 0 : -1;
}

/* Encodes req as one frame and writes it to fd. */
static void raw_send(int fd, const vxp_request *req) {
  uint8_t *frame;
  size_t flen;
  cr_assert_eq(vxp_request_encode(req, &frame, &flen), VXP_OK);
  cr_assert_eq(write(fd, frame, flen), (ssize_t)flen);
  free(frame);
}

static void assert_still_serving(void) {
  vxc_conn *c = conn();
  vxp_response r;
  cr_assert_eq(vxc_stats(c, &r), 0);
  cr_assert_eq(r.status, VXP_STATUS_OK);
  vxp_response_clear(&r);
  vxc_close(c);
}

static uint64_t entries(vxc_conn *c) {
  vxp_response s;
  cr_assert_eq(vxc_stats(c, &s), 0);
  uint64_t n = s.stats.entries;
  vxp_response_clear(&s);
  return n;
}

/* A module compiled again after one kernel was edited: the daemon keeps
 * each piece as an entry of its own, takes the unchanged ones from the
 * cache and compiles the edited kernel's piece alone, into the bytes
 * another daemon compiles the edited module into from nothing; the
 * workers' question about pieces is no client request. */
Test(e2e, a_module_with_one_kernel_edited_compiles_only_that_kernels_piece) {
  size_t len;
  unsigned n = 100, pieces = (n + VXL_PIECE_KERNELS - 1) / VXL_PIECE_KERNELS;
  char *src = vxt_many_kernels(n, &len);
  vxc_conn *c = conn();
  uint64_t e0 = entries(c), m0 = misses(c);
  vxp_response a = compile_as(c, src, len, "many.mlir");
  cr_assert_eq(a.status, VXP_STATUS_OK, "%s", a.message ? a.message : "");
  cr_assert_eq(entries(c), e0 + 1 + pieces, "the module and each of its %u pieces", pieces);
  char *at = strstr(src, "%k = arith.constant 50.0 : f32");
  cr_assert_not_null(at);
  memcpy(at + strlen("%k = arith.constant "), "51", 2); /* kernel 50's constant */
  /* explain compares with the module's entry, not with its pieces */
  vxp_response x;
  cr_assert_eq(vxc_explain(c, src, len, "many.mlir", NULL, &x), 0);
  cr_assert_eq(x.ncandidates, 1, "the module's entry alone, not its %u pieces", pieces);
  cr_assert_str_eq(x.candidates[0].key, a.key);
  vxp_response_clear(&x);
  char cmd[512], out[16384];
  snprintf(cmd, sizeof cmd, "%s --no-spawn --socket %s ls --limit 1000", VXT_VXC, d.sock);
  cr_assert_eq(vxt_run(cmd, out, sizeof out), 0, "%s", out);
  unsigned listed = 0;
  for (const char *p = out; (p = strstr(p, "piece of many.mlir")); p++)
    listed++;
  cr_assert_eq(listed, pieces, "vxc ls names the pieces as such: %s", out);
  vxp_response b = compile_as(c, src, len, "many.mlir");
  cr_assert_eq(b.status, VXP_STATUS_OK, "%s", b.message ? b.message : "");
  cr_assert_not(b.cached);
  cr_assert_str_neq(b.key, a.key);
  cr_assert_eq(misses(c), m0 + 2);
  cr_assert_eq(entries(c), e0 + 1 + pieces + 2, "one more module and the one piece compiled again");
  vxc_close(c);
  /* a daemon with an empty cache: the edited module from nothing */
  vxp_response w = compile_elsewhere(src, len, "many.mlir");
  cr_assert_str_eq(w.key, b.key);
  cr_assert_eq(w.object_size, b.object_size);
  cr_assert_eq(memcmp(w.object, b.object, b.object_size), 0, "an edited module from pieces: the same bytes");
  cr_assert_eq(w.nkernels, b.nkernels);
  for (uint32_t i = 0; i < w.nkernels; i++) {
    cr_assert_str_eq(w.kernels[i].name, b.kernels[i].name);
    cr_assert_str_eq(w.kernels[i].entry, b.kernels[i].entry);
    cr_assert_eq(w.kernels[i].buffer_size, b.kernels[i].buffer_size);
  }
  /* a client asking the workers' question is refused, the daemon goes on */
  int fd = raw_connect();
  vxp_piece one;
  memset(&one, 0, sizeof one);
  memcpy(one.key, a.key, 65);
  vxp_request ask = {.id = 81, .op = VXP_OP_PIECES, .pieces = &one, .npieces = 1};
  raw_send(fd, &ask);
  vxp_response r;
  cr_assert_eq(raw_read(fd, &r), 0);
  cr_assert_eq(r.id, 81);
  cr_assert_eq(r.status, VXP_STATUS_BAD_REQUEST);
  cr_assert_eq(r.npieces, 0, "no entry to a client that asks for pieces");
  vxp_response_clear(&r);
  close(fd);
  assert_still_serving();
  vxp_response_clear(&a);
  vxp_response_clear(&b);
  vxp_response_clear(&w);
  free(src);
}

Test(e2e, oversized_frame_gets_an_error_and_a_closed_connection) {
  int fd = raw_connect();
  uint8_t h[4] = {0x7f, 0xff, 0xff, 0xff}; /* 2 GiB announced */
  cr_assert_eq(write(fd, h, 4), 4);
  vxp_response r;
  cr_assert_eq(raw_read(fd, &r), 0);
  cr_assert_eq(r.status, VXP_STATUS_BAD_REQUEST);
  cr_assert_not_null(strstr(r.message, "larger than the maximum"), "%s", r.message);
  vxp_response_clear(&r);
  char x;
  cr_assert_eq(read(fd, &x, 1), 0, "the daemon closed the connection");
  close(fd);
  assert_still_serving();
}

Test(e2e, truncated_frame_and_empty_frame_do_not_hurt_other_clients) {
  int fd = raw_connect();
  uint8_t part[10] = {0, 0, 0, 100, 0x85, 1, 2, 3, 4, 5}; /* 100 announced, 6 sent */
  cr_assert_eq(write(fd, part, sizeof part), (ssize_t)sizeof part);
  assert_still_serving(); /* while that frame hangs half-sent */
  close(fd);
  fd = raw_connect();
  uint8_t empty[4] = {0, 0, 0, 0};
  cr_assert_eq(write(fd, empty, 4), 4);
  vxp_response r;
  cr_assert_eq(raw_read(fd, &r), 0);
  cr_assert_eq(r.status, VXP_STATUS_BAD_REQUEST);
  vxp_response_clear(&r);
  close(fd);
  assert_still_serving();
}

Test(e2e, malformed_payload_keeps_the_connection) {
  int fd = raw_connect();
  /* {"id": 77, "op": "compile", "source": 5}: a wrong msgpack type */
  uint8_t bad[] = {0,   0,   0,   0,   0x83, 0xa2, 'i',  'd', 77,  0xa2, 'o', 'p', 0xa7, 'c',
                   'o', 'm', 'p', 'i', 'l',  'e',  0xa6, 's', 'o', 'u',  'r', 'c', 'e',  5};
  bad[3] = sizeof bad - 4;
  cr_assert_eq(write(fd, bad, sizeof bad), (ssize_t)sizeof bad);
  vxp_response r;
  cr_assert_eq(raw_read(fd, &r), 0);
  cr_assert_eq(r.id, 77, "the error names the request");
  cr_assert_eq(r.status, VXP_STATUS_BAD_REQUEST);
  cr_assert_not_null(strstr(r.message, "wrong type"), "%s", r.message);
  vxp_response_clear(&r);
  /* an unknown key, then a valid request on the same connection */
  uint8_t unk[] = {0,   0,    0,   0,   0x83, 0xa2, 'i', 'd',  78,  0xa2, 'o',
                   'p', 0xa5, 's', 't', 'a',  't',  's', 0xa1, 'x', 0xc3};
  unk[3] = sizeof unk - 4;
  cr_assert_eq(write(fd, unk, sizeof unk), (ssize_t)sizeof unk);
  cr_assert_eq(raw_read(fd, &r), 0);
  cr_assert_eq(r.id, 78);
  cr_assert_eq(r.status, VXP_STATUS_BAD_REQUEST);
  cr_assert_not_null(strstr(r.message, "unknown key"), "%s", r.message);
  vxp_response_clear(&r);
  vxp_request ok = {.id = 79, .op = VXP_OP_STATS};
  raw_send(fd, &ok);
  cr_assert_eq(raw_read(fd, &r), 0);
  cr_assert_eq(r.id, 79);
  cr_assert_eq(r.status, VXP_STATUS_OK);
  vxp_response_clear(&r);
  close(fd);
}

Test(e2e, every_request_may_carry_the_protocol_version_instead_of_hello) {
  /* one round trip for a compile: the version rides along */
  int fd = raw_connect();
  const char *src = "module { gpu.module @m { gpu.func @k() kernel { gpu.return } } }";
  vxp_request req = {.id = 5,
                     .op = VXP_OP_COMPILE,
                     .proto_version = VXP_PROTOCOL_VERSION,
                     .source = (uint8_t *)src,
                     .source_len = strlen(src),
                     .opt_level = 2};
  raw_send(fd, &req);
  vxp_response r;
  cr_assert_eq(raw_read(fd, &r), 0);
  cr_assert_eq(r.id, 5);
  cr_assert_eq(r.status, VXP_STATUS_OK, "%s", r.message ? r.message : "");
  cr_assert_not_null(r.entry, "the compiled entry, as one value");
  cr_assert_eq(vxp_entry_unpack(&r, NULL), VXP_OK);
  cr_assert_eq(r.nkernels, 1);
  vxp_response_clear(&r);
  /* another version is refused on any request, and the connection stays */
  req.id = 6;
  req.proto_version = VXP_PROTOCOL_VERSION + 1;
  raw_send(fd, &req);
  cr_assert_eq(raw_read(fd, &r), 0);
  cr_assert_eq(r.id, 6);
  cr_assert_eq(r.status, VXP_STATUS_BAD_REQUEST);
  cr_assert_not_null(strstr(r.message, "protocol version"), "%s", r.message);
  vxp_response_clear(&r);
  close(fd);
  /* libvxc says hello only when asked who the server is */
  vxc_conn *c = conn();
  const vxp_response *hello = vxc_server_info(c);
  cr_assert_not_null(hello);
  cr_assert_eq(hello->proto_version, VXP_PROTOCOL_VERSION);
  cr_assert_not_null(strstr(hello->server, "vortexd"));
  vxc_close(c);
}

/* ---- workers ---- */

/* PIDs of the daemon's worker processes (its children). */
static int worker_pids(pid_t *out, int cap) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/task/%d/children", d.pid, d.pid);
  FILE *f = fopen(path, "r");
  cr_assert_not_null(f);
  int n = 0;
  while (n < cap && fscanf(f, "%d", &out[n]) == 1)
    n++;
  fclose(f);
  return n;
}

/* Whether the daemon (through vxc_conn *) counts one worker restart and
 * runs two workers again. */
static int restarted_once(void *c) {
  vxp_response s;
  cr_assert_eq(vxc_stats(c, &s), 0);
  uint64_t restarts = s.stats.worker_restarts;
  vxp_response_clear(&s);
  pid_t pids[8];
  return restarts == 1 && worker_pids(pids, 8) == 2;
}

Test(e2e, a_crashed_worker_is_restarted) {
  pid_t pids[8];
  int n = worker_pids(pids, 8);
  cr_assert_eq(n, 2);
  cr_assert_eq(kill(pids[0], SIGKILL), 0);
  /* the next compiles are served all the same */
  vxc_conn *c = conn();
  compile_twice(c, KERNELS "block_reduce.mlir", 1);
  compile_twice(c, KERNELS "dynamic_shared.mlir", 1);
  cr_assert(vxt_wait_until(restarted_once, c, 60000), "the restart is counted");
  cr_assert_eq(worker_pids(pids, 8), 2, "the pool is back to two workers");
  vxc_close(c);
}

Test(e2e, a_hung_compile_fails_only_its_request) {
  /* freeze both workers: the compile cannot finish within the timeout */
  cr_assert_eq(vxt_daemon_stop(&d), 0);
  cr_assert_eq(vxt_daemon_start(&d, "--job-timeout=1"), 0);
  pid_t pids[8];
  int n = worker_pids(pids, 8);
  cr_assert_eq(n, 2);
  for (int i = 0; i < n; i++)
    kill(pids[i], SIGSTOP);
  vxc_conn *c = conn();
  vxp_response r;
  compile_path(c, POLYGEIST_STYLE, &r);
  for (int i = 0; i < n; i++) /* before any assertion: a stopped worker would outlive a failed test */
    kill(pids[i], SIGCONT);
  cr_assert_eq(r.status, VXP_STATUS_INTERNAL);
  cr_assert_not_null(strstr(r.message, "exceeded the 1 s limit"), "%s", r.message);
  vxp_response_clear(&r);
  compile_path(c, POLYGEIST_STYLE, &r); /* a fresh worker takes it: a slow compile is not a crash */
  cr_assert_eq(r.status, VXP_STATUS_OK, "%s", r.message ? r.message : "");
  cr_assert_not(r.cached, "the failed compile left nothing in the cache");
  vxp_response_clear(&r);
  vxc_close(c);
}

Test(e2e, many_concurrent_clients) {
  const char *files[] = {"polygeist_style", "sgemm_naive", "control_flow", "polygeist_style"};
  pid_t kids[8];
  for (int i = 0; i < 8; i++) {
    kids[i] = fork();
    if (kids[i] == 0) {
      vxc_conn *c = NULL;
      if (vxc_connect(d.sock, &c) != 0) _exit(10);
      char path[512];
      snprintf(path, sizeof path, KERNELS "%s.mlir", files[i % 4]);
      size_t len;
      char *src = vxt_read_file(path, &len);
      for (int j = 0; j < 5; j++) {
        vxp_response r;
        if (vxc_compile(c, src, len, path, NULL, &r) != 0) _exit(11);
        if (r.status != VXP_STATUS_OK || r.nkernels != 1) _exit(12);
        if (vxt_elf_check(r.object, r.object_size, r.kernels[0].entry)) _exit(13);
        vxp_response_clear(&r);
      }
      free(src);
      vxc_close(c);
      _exit(0);
    }
  }
  for (int i = 0; i < 8; i++) {
    int st;
    cr_assert_eq(waitpid(kids[i], &st, 0), kids[i]);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "client %d failed with %d", i, WEXITSTATUS(st));
  }
  vxc_conn *c = conn();
  cr_assert_eq(misses(c), 3, "three distinct sources compiled once each (identical ones shared)");
  vxc_close(c);
}

/* ---- the vxc program ---- */

static int run(const char *cmd, char *out, size_t cap) {
  int rc = vxt_run(cmd, out, cap);
  cr_assert_neq(rc, -2, "cannot run %s", cmd);
  return rc;
}

Test(e2e, vxc_cli_json_table_and_objects) {
  static char out[65536];
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "%s --socket %s compile --json -o %s/objs/ %s", VXT_VXC, d.sock, d.dir,
           POLYGEIST_STYLE);
  cr_assert_eq(run(cmd, out, sizeof out), 0, "%s", out);
  cr_assert_not_null(strstr(out, "\"cached\":false"), "%s", out);
  cr_assert_not_null(strstr(out, "\"kind\":\"pointer\",\"size\":4,\"align\":4,\"offset\":12"), "%s", out);
  cr_assert_not_null(strstr(out, "\"args_size\":16"), "%s", out);
  cr_assert_not_null(strstr(out, "\"entry\":\"__vxl_main_0\""), "%s", out);
  cr_assert_eq(run(cmd, out, sizeof out), 0);
  cr_assert_not_null(strstr(out, "\"cached\":true"), "%s", out);
  char obj[512];
  snprintf(obj, sizeof obj, "%s/objs/polygeist_style.o", d.dir);
  cr_assert_not_null(strstr(out, obj), "the JSON names the object written: %s", out);
  size_t len;
  char *bytes = vxt_read_file(obj, &len);
  cr_assert_not_null(bytes, "vxc wrote %s", obj);
  cr_assert_null(vxt_elf_check((const uint8_t *)bytes, len, "__vxl_main_0"));
  free(bytes);

  snprintf(cmd, sizeof cmd, "%s --socket %s compile -v -o %s/objs %s", VXT_VXC, d.sock, d.dir,
           VXT_EXAMPLES_DIR "/mixed_args.mlir");
  cr_assert_eq(run(cmd, out, sizeof out), 0);
  cr_assert_not_null(strstr(out, "Kernel: scale_offset"), "%s", out);
  cr_assert_not_null(strstr(out, "[1] offset=8    size=8  align=8  scalar  (i64)"), "%s", out);

  snprintf(cmd, sizeof cmd, "%s --socket %s stats --json", VXT_VXC, d.sock);
  cr_assert_eq(run(cmd, out, sizeof out), 0);
  cr_assert_not_null(strstr(out, "\"hits\":1,\"misses\":2"), "%s", out);

  /* a source name cannot choose where the object goes */
  snprintf(cmd, sizeof cmd,
           "cp %s '%s/.. odd name;.mlir' && cd %s && %s --socket %s compile -o objs '.. odd name;.mlir'",
           POLYGEIST_STYLE, d.dir, d.dir, VXT_VXC, d.sock);
  cr_assert_eq(run(cmd, out, sizeof out), 0, "%s", out);
  snprintf(obj, sizeof obj, "%s/objs/%%2E.%%20odd%%20name%%3B.o", d.dir);
  char *named = vxt_read_file(obj, &len);
  cr_assert_not_null(named, "vxc wrote %s: %s", obj, out);
  free(named);
  snprintf(
      cmd, sizeof cmd,
      "cp %s '%s/main_kernel_0::k.mlir' && cd %s && %s --socket %s compile -o objs 'main_kernel_0::k.mlir'"
      " && ls -a objs",
      POLYGEIST_STYLE, d.dir, d.dir, VXT_VXC, d.sock);
  cr_assert_eq(run(cmd, out, sizeof out), 0, "%s", out);
  cr_assert_not_null(strstr(out, "main_kernel_0__k.o\n"), "'::' maps to '__': %s", out);
  cr_assert_null(strstr(out, ".vxc-"), "no temporary file is left behind: %s", out);
  /* --json without -o describes the result and writes no file */
  snprintf(cmd, sizeof cmd,
           "mkdir %s/jsononly && cd %s/jsononly && %s --socket %s compile --json %s && ls -A", d.dir, d.dir,
           VXT_VXC, d.sock, POLYGEIST_STYLE);
  cr_assert_eq(run(cmd, out, sizeof out), 0, "%s", out);
  cr_assert_not_null(strstr(out, "\"object\":null"), "%s", out);
  cr_assert_null(strstr(out, "polygeist_style.o"), "--json alone wrote a file: %s", out);
  /* usage errors come before any daemon is contacted or started */
  snprintf(cmd, sizeof cmd,
           "%s --socket %s/nodaemon/s.sock compile 2>&1; echo rc=$?; %s --socket %s/nodaemon/s.sock "
           "frobnicate 2>&1; echo rc=$?; test -e %s/nodaemon && echo EXISTS || echo ABSENT",
           VXT_VXC, d.dir, VXT_VXC, d.dir, d.dir);
  cr_assert_eq(run(cmd, out, sizeof out), 0, "%s", out);
  cr_assert_not_null(strstr(out, "rc=64\n"), "%s", out);
  cr_assert_not_null(strstr(out, "unknown command 'frobnicate'"), "%s", out);
  cr_assert_null(strstr(out, "rc=0"), "%s", out);
  cr_assert_not_null(strstr(out, "ABSENT"), "no daemon was started (its directory does not exist): %s", out);
  snprintf(cmd, sizeof cmd, "printf 'gpu.module' > %s/x.mlir; %s --socket %s compile -o %s %s/x.mlir 2>&1",
           d.dir, VXT_VXC, d.sock, d.dir, d.dir);
  cr_assert_eq(run(cmd, out, sizeof out), 1, "a compile error exits 1: %s", out);
  cr_assert_not_null(strstr(out, "x.mlir:1:"), "%s", out);
}

/* `vxc compile` as a compiler is used from a build rule: -o FILE, -o -,
 * '-' for standard input, silent on success, usage errors that say what
 * is wrong, before any daemon is asked. */
Test(e2e, vxc_compile_follows_a_compilers_conventions) {
  static char out[65536];
  char cmd[2048], path[512];
  /* -o FILE: that file, nothing on stdout */
  snprintf(cmd, sizeof cmd, "cd %s && %s --socket %s compile %s -o my.o && test -f my.o && echo FILE", d.dir,
           VXT_VXC, d.sock, POLYGEIST_STYLE);
  cr_assert_eq(run(cmd, out, sizeof out), 0, "%s", out);
  cr_assert_str_eq(out, "FILE\n", "silent on success, the object at -o: %s", out);
  snprintf(path, sizeof path, "%s/my.o", d.dir);
  size_t len, len2;
  char *file = vxt_read_file(path, &len);
  cr_assert_not_null(file);
  cr_assert_null(vxt_elf_check((const uint8_t *)file, len, "__vxl_main_0"));
  /* -o -: the same bytes on stdout */
  snprintf(cmd, sizeof cmd, "%s --socket %s compile %s -o - > %s/stdout.o", VXT_VXC, d.sock, POLYGEIST_STYLE,
           d.dir);
  cr_assert_eq(run(cmd, out, sizeof out), 0, "%s", out);
  snprintf(path, sizeof path, "%s/stdout.o", d.dir);
  char *piped = vxt_read_file(path, &len2);
  cr_assert_not_null(piped);
  cr_assert_eq(len2, len);
  cr_assert_eq(memcmp(piped, file, len), 0);
  free(piped);
  free(file);
  /* '-': standard input, named by --source-name (else <stdin>, object stdin.o) */
  snprintf(cmd, sizeof cmd,
           "cd %s && %s --socket %s compile - --source-name from_pipe.mlir -o piped/ < %s && "
           "%s --socket %s compile - -o piped/ < %s && ls piped",
           d.dir, VXT_VXC, d.sock, POLYGEIST_STYLE, VXT_VXC, d.sock, POLYGEIST_STYLE);
  cr_assert_eq(run(cmd, out, sizeof out), 0, "%s", out);
  cr_assert_str_eq(out, "from_pipe.o\nstdin.o\n");
  snprintf(cmd, sizeof cmd,
           "printf 'gpu.module @m {\\n  oops\\n}\\n' | %s --socket %s compile - 2>&1; echo rc=$?", VXT_VXC,
           d.sock);
  run(cmd, out, sizeof out);
  cr_assert_not_null(strstr(out, "<stdin>:2:"), "diagnostics name <stdin>: %s", out);
  cr_assert_not_null(strstr(out, "rc=1"), "%s", out);
  /* as mlir-opt: the line quoted and a caret under the column; the
   * diagnostics are the whole story (no "compilation failed" after them) */
  cr_assert_not_null(strstr(out, "custom op 'oops'"), "%s", out);
  cr_assert_not_null(strstr(out, "\n  oops\n  ^\n"), "%s", out);
  cr_assert_null(strstr(out, "compilation failed"), "%s", out);
  /* -v: the table; --emit-ir: the IR alone */
  snprintf(cmd, sizeof cmd, "cd %s && %s --socket %s compile -v %s -o v.o", d.dir, VXT_VXC, d.sock,
           POLYGEIST_STYLE);
  cr_assert_eq(run(cmd, out, sizeof out), 0, "%s", out);
  cr_assert_not_null(strstr(out, "Kernel: "), "%s", out);
  snprintf(cmd, sizeof cmd, "cd %s && %s --socket %s compile --emit-ir %s -o ir.o", d.dir, VXT_VXC, d.sock,
           POLYGEIST_STYLE);
  cr_assert_eq(run(cmd, out, sizeof out), 0, "%s", out);
  cr_assert_not_null(strstr(out, "llvm.func"), "%s", out);
  cr_assert_null(strstr(out, "Kernel: "), "the IR alone: %s", out);
  /* what cannot be done is said, with the exit status a script can test */
  static const struct {
    const char *args, *says;
    int rc;
  } bad[] = {
      {"compile " POLYGEIST_STYLE " -o no/such/dir/k.o", "cannot write no/such/dir/k.o", 2},
      {"compile /tmp", "/tmp is a directory", 1},
      {"compile no-such-file.mlir", "cannot read no-such-file.mlir: No such file or directory", 1},
      {"compile a.mlir b.mlir", "takes one source, got 2 ('a.mlir', 'b.mlir')", 64},
      {"compile", "missing the source file", 64},
      {"compile --json -o - " POLYGEIST_STYLE, "-o - writes the object to standard output: not with --json",
       64},
      {"compile --frobnicate x.mlir", "unknown option '--frobnicate'", 64},
      {"-V stats", "unknown option '-V'", 64},
      {"prune 100K", "the size goes with --max-size", 64},
      {"stats --kernel k", "'--kernel' is not an option of this command", 64},
      {"compile -O 7 x.mlir", "-O takes 0, 1, 2 or 3, not '7'", 64},
      {"help nosuch", "unknown command 'nosuch'", 64},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    snprintf(cmd, sizeof cmd, "cd %s && %s --socket %s %s 2>&1; echo rc=$?", d.dir, VXT_VXC, d.sock,
             bad[i].args);
    run(cmd, out, sizeof out);
    char want[16];
    snprintf(want, sizeof want, "rc=%d\n", bad[i].rc);
    cr_assert_not_null(strstr(out, bad[i].says), "%s: %s", bad[i].args, out);
    cr_assert_not_null(strstr(out, want), "%s: %s", bad[i].args, out);
  }
  /* help, three ways */
  snprintf(cmd, sizeof cmd, "%s compile --help; %s help compile; %s --help", VXT_VXC, VXT_VXC, VXT_VXC);
  cr_assert_eq(run(cmd, out, sizeof out), 0, "%s", out);
  cr_assert_not_null(
      strstr(strstr(out, "usage: vxc [--socket PATH] [--no-spawn] compile"), "-o - for standard output"),
      "%s", out);
  cr_assert_not_null(strstr(out, "78 configuration"), "the exit statuses: %s", out);
  /* a configuration error: status 78 (EX_CONFIG), `vxc config` included */
  snprintf(cmd, sizeof cmd,
           "printf 'workres = 2\\n' > %s/bad.conf; chmod 600 %s/bad.conf; for c in config stats; do "
           "VORTEXD_CONFIG=%s/bad.conf %s --socket %s $c 2>&1; echo rc=$?; done",
           d.dir, d.dir, d.dir, VXT_VXC, d.sock);
  run(cmd, out, sizeof out);
  cr_assert_not_null(strstr(out, "unknown key 'workres'"), "%s", out);
  cr_assert_null(strstr(out, "vxc config` lists"), "not sent to a command that fails alike: %s", out);
  const char *first = strstr(out, "rc=78\n");
  cr_assert(first && strstr(first + 1, "rc=78\n"), "both: %s", out);
  /* the daemon's --version and --help (which that error names) answer
   * whatever the configuration holds; a usage error is a usage error;
   * only serving needs a sound configuration */
  static const struct {
    const char *args, *says, *status;
  } daemon_with_bad_conf[] = {
      {"--version", "lowering ABI", "rc=0\n"},
      {"--help", "usage: vortexd", "rc=0\n"},
      {"--frobnicate", "usage: vortexd", "rc=64\n"},
      {"--socket none.sock", "unknown key 'workres'", "rc=78\n"},
  };
  for (size_t i = 0; i < sizeof daemon_with_bad_conf / sizeof *daemon_with_bad_conf; i++) {
    snprintf(cmd, sizeof cmd, "cd %s && VORTEXD_CONFIG=%s/bad.conf %s %s 2>&1; echo rc=$?", d.dir, d.dir,
             VXT_VORTEXD, daemon_with_bad_conf[i].args);
    run(cmd, out, sizeof out);
    cr_assert_not_null(strstr(out, daemon_with_bad_conf[i].says), "vortexd %s: %s",
                       daemon_with_bad_conf[i].args, out);
    cr_assert_not_null(strstr(out, daemon_with_bad_conf[i].status), "vortexd %s: %s",
                       daemon_with_bad_conf[i].args, out);
  }
  /* a bad value: 78 before any daemon is asked (a compile included), and
   * `vxc config` prints what it read, then fails the same way */
  snprintf(cmd, sizeof cmd,
           "printf 'max_cache_size = lots\\n' > %s/bad.conf; for c in config stats 'compile %s'; do "
           "VORTEXD_CONFIG=%s/bad.conf %s --socket %s/none.sock $c 2>&1; echo rc=$?; done",
           d.dir, POLYGEIST_STYLE, d.dir, VXT_VXC, d.dir);
  run(cmd, out, sizeof out);
  const char *said = strstr(out, "max_cache_size = 'lots' (from the configuration file ");
  cr_assert_not_null(said, "%s", out);
  cr_assert_not_null(strstr(said, "): expected a size: bytes, or a number with K, M, G or T"), "%s", out);
  cr_assert_not_null(strstr(out, "max_cache_size           = lots"), "config shows the value: %s", out);
  int n78 = 0;
  for (const char *p = out; (p = strstr(p, "rc=78\n")); p++)
    n78++;
  cr_assert_eq(n78, 3, "config, stats and compile: %s", out);
  cr_assert_null(strstr(out, "no vortexd"), "no daemon asked: %s", out);
}

/* One counter of `vxc stats --json` of the suite's daemon. */
static long stat_now(const char *name) {
  char cmd[512], out[8192], key[64];
  snprintf(cmd, sizeof cmd, "%s --socket %s stats --json", VXT_VXC, d.sock);
  cr_assert_eq(run(cmd, out, sizeof out), 0, "%s", out);
  snprintf(key, sizeof key, "\"%s\":", name);
  const char *at = strstr(out, key);
  cr_assert_not_null(at, "%s: %s", name, out);
  return strtol(at + strlen(key), NULL, 10);
}

/* Identical requests at once share one compile; each is counted once, as
 * a miss (the one that compiles), a hit, or joined, and the hit ratio
 * counts the joined as answered without a compile of their own. */
Test(e2e, every_request_counts_once_joined_ones_too) {
  char src[256], cmd[2048], out[8192];
  snprintf(src, sizeof src, "%s/joined.mlir", d.dir);
  FILE *f = fopen(src, "w");
  cr_assert_not_null(f);
  fprintf(f, "gpu.module @m {\n  gpu.func @joined(%%p: memref<?xi32>) kernel {\n"
             "    %%c0 = arith.constant 0 : index\n    %%v = arith.constant 4242 : i32\n"
             "    memref.store %%v, %%p[%%c0] : memref<?xi32>\n    gpu.return\n  }\n}\n");
  fclose(f);
  long hits = stat_now("hits"), misses = stat_now("misses"), joined = stat_now("joined");
  snprintf(cmd, sizeof cmd,
           "for i in 1 2 3 4 5 6 7 8; do %s --socket %s compile -o %s/joined$i.o %s & done; wait", VXT_VXC,
           d.sock, d.dir, src);
  cr_assert_eq(run(cmd, out, sizeof out), 0, "%s", out);
  long dh = stat_now("hits") - hits, dm = stat_now("misses") - misses, dj = stat_now("joined") - joined;
  cr_assert_eq(dm, 1, "one compile");
  cr_assert_eq(dh + dj, 7, "the others: hits %ld, joined %ld", dh, dj);
}

/* One count of `vxc log-stats --json FILE`. */
static long log_count(const char *json, const char *name) {
  char key[64];
  snprintf(key, sizeof key, "\"%s\":", name);
  const char *at = strstr(json, key);
  cr_assert_not_null(at, "%s: %s", name, json);
  return strtol(at + strlen(key), NULL, 10);
}

/* Per-build statistics: with VORTEXD_STATS_LOG set, each compile appends
 * its outcome, and `vxc log-stats` counts exactly what the daemon counted
 * for those requests (joined ones as joined, from the reply), plus a
 * compile error; a FIFO at the log's path never blocks a compile. */
Test(e2e, a_stats_log_counts_what_one_build_got) {
  char src[256], bad[256], log[256], cmd[4096], out[8192];
  snprintf(src, sizeof src, "%s/logged.mlir", d.dir);
  snprintf(bad, sizeof bad, "%s/logged_bad.mlir", d.dir);
  snprintf(log, sizeof log, "%s/build.stats", d.dir);
  FILE *f = fopen(src, "w");
  cr_assert_not_null(f);
  fprintf(f, "gpu.module @m {\n  gpu.func @logged(%%p: memref<?xi32>) kernel {\n"
             "    %%c0 = arith.constant 0 : index\n    %%v = arith.constant 4343 : i32\n"
             "    memref.store %%v, %%p[%%c0] : memref<?xi32>\n    gpu.return\n  }\n}\n");
  fclose(f);
  f = fopen(bad, "w");
  cr_assert_not_null(f);
  fprintf(f, "gpu.module @m {\n  gpu.func @bad() kernel {\n    %%x = gpu.cluster_id x\n"
             "    gpu.return\n  }\n}\n");
  fclose(f);
  long hits = stat_now("hits"), misses = stat_now("misses"), joined = stat_now("joined");
  snprintf(cmd, sizeof cmd,
           "export VORTEXD_STATS_LOG=%s; for i in 1 2 3 4 5 6 7 8 9 10 11 12; do %s --socket %s compile -o "
           "%s/logged$i.o %s & done; wait",
           log, VXT_VXC, d.sock, d.dir, src);
  cr_assert_eq(run(cmd, out, sizeof out), 0, "%s", out);
  long dh = stat_now("hits") - hits, dm = stat_now("misses") - misses, dj = stat_now("joined") - joined;
  snprintf(cmd, sizeof cmd,
           "VORTEXD_STATS_LOG=%s %s --socket %s compile %s -o %s/bad.o 2>/dev/null; echo rc=$?", log, VXT_VXC,
           d.sock, bad, d.dir);
  run(cmd, out, sizeof out);
  cr_assert_not_null(strstr(out, "rc=1"), "a compile error: %s", out);
  snprintf(cmd, sizeof cmd, "%s log-stats --json %s", VXT_VXC, log);
  cr_assert_eq(run(cmd, out, sizeof out), 0, "%s", out);
  cr_assert_eq(log_count(out, "miss"), dm, "%s (daemon: %ld misses)", out, dm);
  cr_assert_eq(log_count(out, "hit"), dh, "%s (daemon: %ld hits)", out, dh);
  cr_assert_eq(log_count(out, "joined"), dj, "%s (daemon: %ld joined)", out, dj);
  cr_assert_eq(log_count(out, "miss") + log_count(out, "hit") + log_count(out, "joined"), 12, "%s", out);
  cr_assert_eq(log_count(out, "error"), 1, "%s", out);
  cr_assert_eq(log_count(out, "failed"), 0, "%s", out);
  cr_assert_eq(log_count(out, "unreadable"), 0, "%s", out);
  /* the table, from the environment's file */
  snprintf(cmd, sizeof cmd, "VORTEXD_STATS_LOG=%s %s log-stats", log, VXT_VXC);
  cr_assert_eq(run(cmd, out, sizeof out), 0, "%s", out);
  cr_assert_not_null(strstr(out, "errors        1 "), "%s", out);
  /* a FIFO where the log should be: the compile goes on, nothing written */
  char fifo[256];
  snprintf(fifo, sizeof fifo, "%s/fifo.stats", d.dir);
  cr_assert_eq(mkfifo(fifo, 0600), 0);
  snprintf(cmd, sizeof cmd, "VORTEXD_STATS_LOG=%s %s --socket %s compile %s -o %s/logged_fifo.o; echo rc=$?",
           fifo, VXT_VXC, d.sock, src, d.dir);
  run(cmd, out, sizeof out);
  cr_assert_not_null(strstr(out, "rc=0"), "%s", out);
  snprintf(cmd, sizeof cmd, "%s log-stats %s 2>&1; echo rc=$?", VXT_VXC, fifo);
  run(cmd, out, sizeof out);
  cr_assert_not_null(strstr(out, "not a regular file\nrc=1"), "%s", out);
  cr_assert_eq(unlink(fifo), 0);
}

/* `vxc explain`: a hit says so (exit 0) without counting one; after an
 * edit it names the first changed line, quoted from the file; with
 * another option, that option, entry -> now, and the same text; a name
 * never compiled says so; the closest entry comes first. */
Test(e2e, explain_says_why_a_compile_would_miss) {
  char src[256], cmd[4096], out[16384];
  snprintf(src, sizeof src, "%s/explained.mlir", d.dir);
  static const char text[] = "gpu.module @m {\n  gpu.func @explained(%p: memref<?xi32>) kernel {\n"
                             "    %c0 = arith.constant 0 : index\n    %v = arith.constant 5151 : i32\n"
                             "    memref.store %v, %p[%c0] : memref<?xi32>\n    gpu.return\n  }\n}\n";
  FILE *f = fopen(src, "w");
  cr_assert_not_null(f);
  fputs(text, f);
  fclose(f);
  snprintf(cmd, sizeof cmd,
           "%s --socket %s compile -o %s/explained.o %s && %s --socket %s compile --warp-size 8 -o "
           "%s/explained8.o %s",
           VXT_VXC, d.sock, d.dir, src, VXT_VXC, d.sock, d.dir, src);
  cr_assert_eq(run(cmd, out, sizeof out), 0, "%s", out);
  long hits = stat_now("hits");
  snprintf(cmd, sizeof cmd, "%s --socket %s explain %s; echo rc=$?", VXT_VXC, d.sock, src);
  run(cmd, out, sizeof out);
  cr_assert_not_null(strstr(out, "explained.mlir: hit: entry "), "%s", out);
  cr_assert_not_null(strstr(out, "rc=0"), "%s", out);
  cr_assert_eq(stat_now("hits"), hits, "explain is not a hit");
  /* the same text, another option: that option, the closest entry first */
  snprintf(cmd, sizeof cmd, "%s --socket %s explain --warp-size 16 %s; echo rc=$?", VXT_VXC, d.sock, src);
  run(cmd, out, sizeof out);
  cr_assert_not_null(strstr(out, "explained.mlir: miss: no entry has key "), "%s", out);
  cr_assert_not_null(strstr(out, "    source: the same text\n    warp_size: 8 -> 16\n"), "closest first: %s",
                     out);
  cr_assert_not_null(strstr(out, "    warp_size: 4 -> 16\n"), "%s", out);
  cr_assert_not_null(strstr(out, "rc=1"), "%s", out);
  /* an edit on line 4: named and quoted */
  f = fopen(src, "w");
  cr_assert_not_null(f);
  fputs(text, f);
  fclose(f);
  snprintf(cmd, sizeof cmd, "sed -i 's/5151/5252/' %s && %s --socket %s explain %s; echo rc=$?", src, VXT_VXC,
           d.sock, src);
  run(cmd, out, sizeof out);
  cr_assert_not_null(strstr(out, "    source: differs from line 4 (entry 8 lines, this 8)\n"
                                 "          4 |     %v = arith.constant 5252 : i32\n"),
                     "%s", out);
  cr_assert_null(strstr(out, "warp_size: 4 ->"), "the default-warp entry is the same but for the text: %s",
                 out);
  /* as JSON */
  snprintf(cmd, sizeof cmd, "%s --socket %s explain --json %s", VXT_VXC, d.sock, src);
  run(cmd, out, sizeof out);
  cr_assert_not_null(strstr(out, "\"hit\":false"), "%s", out);
  cr_assert_not_null(strstr(out, "\"first_line\":4"), "%s", out);
  cr_assert_not_null(strstr(out, "{\"input\":\"warp_size\",\"entry\":\"8\",\"this\":\"4\"}"), "%s", out);
  /* a name never compiled */
  snprintf(cmd, sizeof cmd, "%s --socket %s explain --source-name never_seen.mlir %s; echo rc=$?", VXT_VXC,
           d.sock, src);
  run(cmd, out, sizeof out);
  cr_assert_not_null(strstr(out, "no entry has this source name"), "%s", out);
  cr_assert_not_null(strstr(out, "rc=1"), "%s", out);
}

/* The key of a --json compile's answer (64 hex digits) into key. */
static void json_key(const char *json, char key[65]) {
  const char *k = strstr(json, "\"key\":\"");
  cr_assert_not_null(k, "%s", json);
  memcpy(key, k + 7, 64);
  key[64] = '\0';
}

/* Cache control, as ccache's: --recache (and VORTEXD_RECACHE) compiles
 * again and replaces the entry; VORTEXD_DISABLE compiles without reading
 * or writing the cache; `vxc rm` deletes one entry by a key prefix. */
Test(e2e, recache_disable_and_rm_control_the_cache) {
  char src[2][256], cmd[2048], out[8192], key[2][65];
  for (int i = 0; i < 2; i++) {
    snprintf(src[i], sizeof src[i], "%s/control%d.mlir", d.dir, i);
    FILE *f = fopen(src[i], "w");
    cr_assert_not_null(f);
    fprintf(f,
            "gpu.module @m {\n  gpu.func @control%d(%%p: memref<?xi32>) kernel {\n"
            "    %%c0 = arith.constant 0 : index\n    %%v = arith.constant %d : i32\n"
            "    memref.store %%v, %%p[%%c0] : memref<?xi32>\n    gpu.return\n  }\n}\n",
            i, 7000 + i);
    fclose(f);
  }
#define COMPILE(env, flags, i)                                                                               \
  (snprintf(cmd, sizeof cmd, "%s %s --socket %s compile --json %s %s 2>&1", env, VXT_VXC, d.sock, flags,     \
            src[i]),                                                                                         \
   run(cmd, out, sizeof out))
  cr_assert_eq(COMPILE("", "", 0), 0, "%s", out);
  json_key(out, key[0]);
  cr_assert_eq(COMPILE("", "", 0), 0, "%s", out);
  cr_assert_not_null(strstr(out, "\"cached\":true"), "%s", out);
  /* recache: compiled again (a miss), the same key, the entry still there */
  cr_assert_eq(COMPILE("", "--recache", 0), 0, "%s", out);
  cr_assert_not_null(strstr(out, "\"cached\":false"), "--recache compiles: %s", out);
  cr_assert_not_null(strstr(out, key[0]), "%s", out);
  cr_assert_eq(COMPILE("VORTEXD_RECACHE=1", "", 0), 0, "%s", out);
  cr_assert_not_null(strstr(out, "\"cached\":false"), "VORTEXD_RECACHE compiles: %s", out);
  cr_assert_eq(COMPILE("VORTEXD_RECACHE=0", "", 0), 0, "%s", out);
  cr_assert_not_null(strstr(out, "\"cached\":true"), "replaced, not dropped; =0 is off: %s", out);
  /* disable: neither read (a cached source compiles) nor written */
  cr_assert_eq(COMPILE("VORTEXD_DISABLE=1", "", 0), 0, "%s", out);
  cr_assert_not_null(strstr(out, "\"cached\":false"), "%s", out);
  cr_assert_eq(COMPILE("VORTEXD_DISABLE=1", "--recache", 1), 0, "%s", out);
  cr_assert_not_null(strstr(out, "\"cached\":false"), "%s", out);
  json_key(out, key[1]);
  snprintf(cmd, sizeof cmd, "%s --socket %s ls %.16s", VXT_VXC, d.sock, key[1]);
  cr_assert_eq(run(cmd, out, sizeof out), 0, "%s", out);
  cr_assert_null(strstr(out, "control1"), "not written: %s", out);
  cr_assert_eq(COMPILE("", "", 1), 0, "%s", out);
  cr_assert_not_null(strstr(out, "\"cached\":false"), "%s", out);
  cr_assert_eq(COMPILE("", "", 1), 0, "%s", out);
  cr_assert_not_null(strstr(out, "\"cached\":true"), "%s", out);
  /* rm: by a prefix, then gone; a prefix of nothing: status 1 */
  snprintf(cmd, sizeof cmd, "%s --socket %s rm %.12s 2>&1; echo rc=$?", VXT_VXC, d.sock, key[0]);
  run(cmd, out, sizeof out);
  char want[128];
  snprintf(want, sizeof want, "removed %s\nrc=0\n", key[0]);
  cr_assert_not_null(strstr(out, want), "%s", out);
  cr_assert_eq(COMPILE("", "", 0), 0, "%s", out);
  cr_assert_not_null(strstr(out, "\"cached\":false"), "removed: %s", out);
  cr_assert_eq(COMPILE("", "", 1), 0, "%s", out);
  cr_assert_not_null(strstr(out, "\"cached\":true"), "the other entry stays: %s", out);
  snprintf(cmd, sizeof cmd, "%s --socket %s rm %.12s 2>&1; echo rc=$?", VXT_VXC, d.sock, key[0]);
  run(cmd, out, sizeof out);
  cr_assert_not_null(strstr(out, want), "compiled again, removed again: %s", out);
  snprintf(cmd, sizeof cmd, "%s --socket %s rm %.12s 2>&1; echo rc=$?", VXT_VXC, d.sock, key[0]);
  run(cmd, out, sizeof out);
  cr_assert_not_null(strstr(out, "no cache entry with a key starting"), "%s", out);
  cr_assert_not_null(strstr(out, "rc=1\n"), "%s", out);
#undef COMPILE
}

/* The daemon's log, as a log file of an auto-started daemon has it: every
 * line stamped (local time to the millisecond, the pid), a start line at
 * the default level; at debug, each answer names the source, the target
 * and the client's pid; its workers show as "vortexd-worker N" in ps. */
Test(e2e, the_log_is_stamped_and_says_what_started_and_for_whom) {
  vxt_daemon t = {0};
  char sock[256], cache[256], log[256], cmd[1024], out[8192];
  vxt_tmp_template(t.dir, sizeof t.dir, "vxt-");
  cr_assert_not_null(mkdtemp(t.dir));
  snprintf(sock, sizeof sock, "%s/s.sock", t.dir);
  snprintf(cache, sizeof cache, "%s/cache", t.dir);
  snprintf(log, sizeof log, "%s/log", t.dir);
  static const char *const args[] = {"--log-level", "debug", NULL};
  pid_t pid = vxt_daemon_start_logged(sock, cache, log, 0, NULL, args);
  cr_assert_gt(pid, 0);
  snprintf(cmd, sizeof cmd, "%s --no-spawn --socket %s compile -o %s/k.o %s 2>&1", VXT_VXC, sock, t.dir,
           POLYGEIST_STYLE);
  cr_assert_eq(run(cmd, out, sizeof out), 0, "%s", out);
  cr_assert_eq(run(cmd, out, sizeof out), 0, "%s", out); /* a hit */
  /* the worker's command line */
  char path[64], children[256] = "", title[64] = "";
  snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)pid, (int)pid);
  FILE *f = fopen(path, "r");
  cr_assert_not_null(f);
  cr_assert_not_null(fgets(children, sizeof children, f));
  fclose(f);
  snprintf(path, sizeof path, "/proc/%d/cmdline", atoi(children));
  f = fopen(path, "r");
  cr_assert_not_null(f, "%s", path);
  size_t n = fread(title, 1, sizeof title - 1, f);
  fclose(f);
  title[n] = '\0';
  cr_assert(strncmp(title, "vortexd-worker ", 15) == 0, "ps shows the worker as: %s", title);
  kill(pid, SIGTERM);
  waitpid(pid, NULL, 0);
  f = fopen(log, "r");
  cr_assert_not_null(f);
  static char text[65536];
  n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[n] = '\0';
  /* 2026-11-26T19:04:05.123+0000 [1234] vortexd: notice: vortexd 0.1.0 serving ... */
  int y, mo, dd, h, mi, sec, ms, zone, p = 0;
  char sign;
  cr_assert_eq(sscanf(text, "%4d-%2d-%2dT%2d:%2d:%2d.%3d%c%4d [%d] vortexd: notice: vortexd ", &y, &mo, &dd,
                      &h, &mi, &sec, &ms, &sign, &zone, &p),
               10, "%s", text);
  cr_assert_eq(p, (int)pid, "%s", text);
  cr_assert_not_null(strstr(strtok(text, "\n"), " serving "), "the first line: %s", text);
  char *rest = text + strlen(text) + 1;
  cr_assert_not_null(strstr(rest, "miss"), "%s", rest);
  cr_assert_not_null(strstr(rest, ": polygeist_style.mlir for vortex2-rv32, client pid "), "%s", rest);
  cr_assert_not_null(strstr(rest, " hit "), "%s", rest);
  vxt_remove_tree(t.dir);
}

/* What a farm's monitoring reads: the counters in the OpenMetrics text
 * format, equal to the JSON ones; JSON documents carry their schema. */
Test(e2e, stats_in_openmetrics_and_versioned_json) {
  static char out[65536], json[65536];
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "%s --socket %s compile %s -o %s/om.o", VXT_VXC, d.sock, POLYGEIST_STYLE, d.dir);
  cr_assert_eq(run(cmd, out, sizeof out), 0, "%s", out);
  snprintf(cmd, sizeof cmd, "%s --socket %s stats --json", VXT_VXC, d.sock);
  cr_assert_eq(run(cmd, json, sizeof json), 0, "%s", json);
  cr_assert_not_null(strstr(json, "\"schema\":1"), "%s", json);
  snprintf(cmd, sizeof cmd, "%s --socket %s stats --format openmetrics", VXT_VXC, d.sock);
  cr_assert_eq(run(cmd, out, sizeof out), 0, "%s", out);
  size_t n = strlen(out);
  cr_assert(n > 6 && strcmp(out + n - 6, "# EOF\n") == 0, "ends with # EOF: %s", out);
  /* every sample follows its TYPE and HELP lines; counters end in _total */
  int samples = 0;
  for (char *line = strtok(out, "\n"), *type = NULL; line; line = strtok(NULL, "\n")) {
    if (strncmp(line, "# TYPE ", 7) == 0) {
      type = line + 7;
    } else if (line[0] != '#') {
      char name[128];
      unsigned long long v;
      double dv;
      cr_assert(sscanf(line, "%127s %llu", name, &v) == 2 || sscanf(line, "%127s %lf", name, &dv) == 2, "%s",
                line);
      cr_assert_not_null(type, "a sample without a TYPE: %s", line);
      size_t tl = strcspn(type, " ");
      cr_assert_eq(strncmp(name, type, tl), 0, "%s after TYPE %s", line, type);
      cr_assert_eq(strstr(type, " counter") != NULL, strstr(name, "_total") != NULL, "%s", line);
      samples++;
      if (strcmp(name, "vortexd_misses_total") == 0) {
        char want[64];
        snprintf(want, sizeof want, "\"misses\":%llu,", v);
        cr_assert_not_null(strstr(json, want), "misses %llu as in the JSON: %s", v, json);
      }
    }
  }
  cr_assert_geq(samples, 18);
  /* the compile-time histogram: buckets cumulative, +Inf = count = misses */
  snprintf(cmd, sizeof cmd, "%s --socket %s stats --format openmetrics", VXT_VXC, d.sock);
  cr_assert_eq(run(cmd, out, sizeof out), 0, "%s", out);
  cr_assert_not_null(strstr(out, "# TYPE vortexd_compile_seconds histogram\n"), "%s", out);
  unsigned long long prev = 0, inf = 0, count = 0;
  int buckets = 0;
  for (char *p = strstr(out, "vortexd_compile_seconds_bucket{"); p;
       p = strstr(p + 1, "vortexd_compile_seconds_bucket{")) {
    unsigned long long v = 0;
    cr_assert_eq(sscanf(strchr(p, '}') + 1, " %llu", &v), 1, "%s", p);
    cr_assert_geq(v, prev, "cumulative: %s", out);
    prev = v;
    buckets++;
    static const char last[] = "vortexd_compile_seconds_bucket{le=\"+Inf\"}";
    if (strncmp(p, last, sizeof last - 1) == 0) inf = v;
  }
  cr_assert_eq(buckets, VXP_COMPILE_BUCKETS);
  const char *cp = strstr(out, "vortexd_compile_seconds_count ");
  cr_assert_not_null(cp, "%s", out);
  cr_assert_eq(sscanf(cp, "vortexd_compile_seconds_count %llu", &count), 1);
  cr_assert_eq(inf, count);
  cr_assert_geq(count, 1, "the compile above was counted: %s", out);
  snprintf(cmd, sizeof cmd, "%s --socket %s stats --format yaml 2>&1; echo rc=$?", VXT_VXC, d.sock);
  run(cmd, out, sizeof out);
  cr_assert_not_null(strstr(out, "--format takes table, json or openmetrics"), "%s", out);
  cr_assert_not_null(strstr(out, "rc=64"), "%s", out);
}

/* stat of path, asserted to exist */
static struct stat stat_of(const char *path) {
  struct stat st;
  cr_assert_eq(stat(path, &st), 0, "%s: %s", path, strerror(errno));
  return st;
}

Test(e2e, an_identical_object_stays_in_place_anything_else_is_replaced) {
  static char out[65536];
  char cmd[1024], obj[512], other[512];
  snprintf(cmd, sizeof cmd, "%s --socket %s compile -o %s/same/ %s", VXT_VXC, d.sock, d.dir, POLYGEIST_STYLE);
  snprintf(obj, sizeof obj, "%s/same/polygeist_style.o", d.dir);
  cr_assert_eq(run(cmd, out, sizeof out), 0, "%s", out);
  size_t len, len2;
  char *want = vxt_read_file(obj, &len);
  cr_assert_not_null(want);
  /* the same bytes again: same file, its modification time brought to now */
  struct timespec old[2] = {{.tv_sec = 1000000000}, {.tv_sec = 1000000000}};
  cr_assert_eq(utimensat(AT_FDCWD, obj, old, 0), 0);
  struct stat before = stat_of(obj);
  cr_assert_eq(run(cmd, out, sizeof out), 0, "%s", out);
  struct stat after = stat_of(obj);
  cr_assert_eq(after.st_ino, before.st_ino, "left in place");
  cr_assert_gt(after.st_mtime, before.st_mtime + 1000000, "make sees it as new");
  /* a different object of the same size: replaced */
  FILE *f = fopen(obj, "r+b");
  cr_assert_not_null(f);
  fseek(f, (long)len / 2, SEEK_SET);
  fputc(want[len / 2] ^ 0x5a, f);
  fclose(f);
  cr_assert_eq(run(cmd, out, sizeof out), 0, "%s", out);
  char *got = vxt_read_file(obj, &len2);
  cr_assert(len2 == len && memcmp(got, want, len) == 0, "the damaged object was rewritten");
  free(got);
  /* identical bytes, but a second link, a symbolic link or another mode: replaced,
   * and what the links point at is not touched */
  snprintf(other, sizeof other, "%s/same/elsewhere.o", d.dir);
  cr_assert_eq(link(obj, other), 0);
  before = stat_of(obj);
  cr_assert_eq(run(cmd, out, sizeof out), 0, "%s", out);
  cr_assert_neq(stat_of(obj).st_ino, before.st_ino, "a hard-linked object is replaced, not shared");
  cr_assert_eq(stat_of(other).st_nlink, 1);
  cr_assert_eq(unlink(obj), 0);
  cr_assert_eq(symlink(other, obj), 0);
  cr_assert_eq(run(cmd, out, sizeof out), 0, "%s", out);
  struct stat l;
  cr_assert_eq(lstat(obj, &l), 0);
  cr_assert(S_ISREG(l.st_mode), "the symbolic link was replaced by the object");
  cr_assert_eq(chmod(obj, 0600), 0);
  before = stat_of(obj);
  cr_assert_eq(run(cmd, out, sizeof out), 0, "%s", out);
  after = stat_of(obj);
  cr_assert_neq(after.st_ino, before.st_ino);
  cr_assert_neq(after.st_mode & 0777, 0600, "written with the mode a new object gets");
  /* a FIFO in its place is neither opened (no reader waits on it) nor kept */
  cr_assert_eq(unlink(obj), 0);
  cr_assert_eq(mkfifo(obj, 0644), 0);
  cr_assert_eq(run(cmd, out, sizeof out), 0, "%s", out);
  cr_assert_eq(lstat(obj, &l), 0);
  cr_assert(S_ISREG(l.st_mode), "the FIFO was replaced by the object");
  free(want);
}

Test(e2e, many_vxc_at_once_start_exactly_one_daemon) {
  /* a second socket in the test's directory, no daemon behind it yet */
  char sock[108], cache[256];
  snprintf(sock, sizeof sock, "%.80s/auto/vortexd.sock", d.dir);
  snprintf(cache, sizeof cache, "%s/autocache", d.dir);
  char cmd[2048];
  snprintf(cmd, sizeof cmd,
           "export VORTEXD_SOCKET=%s VORTEXD_CACHE_DIR=%s VORTEXD_IDLE_TIMEOUT=60;"
           " for i in 1 2 3 4 5 6; do %s stats --json > %s/auto.$i.out 2>&1 & done; wait;"
           " n=0; for i in 1 2 3 4 5 6; do grep -q '\"workers\"' %s/auto.$i.out && n=$((n+1)); done; echo $n",
           sock, cache, VXT_VXC, d.dir, d.dir);
  static char out[4096];
  cr_assert_eq(run(cmd, out, sizeof out), 0);
  cr_assert_eq(atoi(out), 6, "all six vxc got an answer: %s", out);
  /* daemons, not their workers (forked, so the same command line; named
   * vortexd-worker) */
  snprintf(cmd, sizeof cmd,
           "for p in $(pgrep -f -x '.*vortexd --socket %s'); do ps -o comm= -p $p; done"
           " | grep -cx vortexd",
           sock);
  cr_assert_eq(run(cmd, out, sizeof out), 0);
  cr_assert_eq(atoi(out), 1, "exactly one daemon was started, found %s", out);
  snprintf(cmd, sizeof cmd, "pkill -TERM -f -x '.*vortexd --socket %s'", sock);
  cr_assert_eq(run(cmd, out, sizeof out), 0);
}

Test(e2e, the_warp_size_is_part_of_the_key_and_the_metadata) {
  vxc_conn *c = conn();
  size_t len;
  char *src = vxt_read_file(VXT_KERNELS_DIR "/subgroups.mlir", &len);
  cr_assert_not_null(src);
  vxp_response r4, r8, again;
  vxc_compile_options o4 = {.opt_level = 2}, o8 = {.opt_level = 2, .warp_size = 8};
  cr_assert_eq(vxc_compile(c, src, len, "subgroups.mlir", &o4, &r4), 0);
  cr_assert_eq(vxc_compile(c, src, len, "subgroups.mlir", &o8, &r8), 0);
  cr_assert_eq(r4.status, VXP_STATUS_OK, "%s", r4.ndiags ? r4.diags[0] : "");
  cr_assert_eq(r8.status, VXP_STATUS_OK);
  cr_assert_str_neq(r4.key, r8.key, "a warp size changes the objects, so it changes the key");
  cr_assert_not(r8.cached);
  for (uint32_t i = 0; i < r4.nkernels; i++) {
    cr_assert_eq(r4.kernels[i].subgroup_size, 4, "the default is Vortex's 4 threads per warp");
    cr_assert_eq(r8.kernels[i].subgroup_size, 8);
  }
  cr_assert_eq(vxc_compile(c, src, len, "subgroups.mlir", &o8, &again), 0);
  cr_assert(again.cached);
  cr_assert_eq(again.kernels[0].subgroup_size, 8, "the cached metadata keeps the warp size");
  vxp_response_clear(&r4), vxp_response_clear(&r8), vxp_response_clear(&again);
  /* a warp size that is not a power of two never reaches the compiler */
  vxc_compile_options bad = {.opt_level = 2, .warp_size = 6};
  vxp_response rb;
  cr_assert_eq(vxc_compile(c, src, len, "subgroups.mlir", &bad, &rb), 0);
  cr_assert_eq(rb.status, VXP_STATUS_BAD_REQUEST);
  vxp_response_clear(&rb);
  free(src);
  vxc_close(c);
}

/* The target (kernel ABI and register width) is part of the key and of
 * every record; a request that names none gets the daemon's `target`. */
Test(e2e, the_target_is_part_of_the_key_and_a_daemon_has_a_default) {
  vxc_conn *c = conn();
  size_t len;
  char *src = vxt_read_file(VXT_EXAMPLES_DIR "/saxpy.mlir", &len);
  cr_assert_not_null(src);
  vxp_response r32, r64, dflt;
  vxc_compile_options o32 = {.opt_level = 2}, o64 = {.opt_level = 2, .vortex_abi = 2, .xlen = 64};
  cr_assert_eq(vxc_compile(c, src, len, "saxpy.mlir", &o32, &r32), 0);
  cr_assert_eq(vxc_compile(c, src, len, "saxpy.mlir", &o64, &r64), 0);
  cr_assert_eq(r64.status, VXP_STATUS_OK, "%s", r64.ndiags ? r64.diags[0] : "");
  cr_assert_str_neq(r32.key, r64.key, "another register width, another key");
  cr_assert_eq(r32.kernels[0].xlen, 32);
  cr_assert_eq(r64.kernels[0].xlen, 64);
  cr_assert_eq(r64.kernels[0].vortex_abi, 2);
  cr_assert_null(vxt_elf64_check(r64.object, r64.object_size, r64.kernels[0].entry, "vx_spawn_threads"));
  for (uint32_t a = 0; a < r64.kernels[0].nargs; a++)
    if (r64.kernels[0].args[a].kind == VXP_ARG_POINTER) cr_assert_eq(r64.kernels[0].args[a].size, 8);
  vxc_close(c);

  /* a daemon whose target is vortex2-rv64 compiles a request naming none
   * as one naming it: the same key, the same bytes */
  vxt_daemon d64 = {0};
  cr_assert_eq(vxt_daemon_start(&d64, "--target=vortex2-rv64"), 0);
  cr_assert_eq(vxc_connect(d64.sock, &c), 0);
  cr_assert_eq(vxc_compile(c, src, len, "saxpy.mlir", NULL, &dflt), 0);
  cr_assert_str_eq(dflt.key, r64.key);
  cr_assert(dflt.entry_size == r64.entry_size && memcmp(dflt.entry, r64.entry, r64.entry_size) == 0);
  vxc_close(c);
  cr_assert_eq(vxt_daemon_stop(&d64), 0);
  vxp_response_clear(&r32), vxp_response_clear(&r64), vxp_response_clear(&dflt);
  free(src);

  /* the flag, its JSON, and a bad target said before anything is asked */
  char cmd[1024], out[8192];
  snprintf(cmd, sizeof cmd, "%s --socket %s compile --json --target vortex2-rv64 %s/saxpy.mlir", VXT_VXC,
           d.sock, VXT_EXAMPLES_DIR);
  cr_assert_eq(run(cmd, out, sizeof out), 0, "%s", out);
  cr_assert_not_null(strstr(out, "\"target\":\"vortex2-rv64\""), "%s", out);
  snprintf(cmd, sizeof cmd, "%s --socket %s compile --target rv64 %s/saxpy.mlir 2>&1; echo rc=$?", VXT_VXC,
           d.sock, VXT_EXAMPLES_DIR);
  run(cmd, out, sizeof out);
  cr_assert_not_null(strstr(out, "--target takes vortex2-rv32, vortex2-rv64, vortex3-rv32 or vortex3-rv64"),
                     "%s", out);
  cr_assert_not_null(strstr(out, "rc=64"), "%s", out);
  snprintf(cmd, sizeof cmd,
           "%s --target=vortex9-rv32 --socket %s/bad.sock --cache-dir %s/bad 2>&1; echo rc=$?", VXT_VORTEXD,
           d.dir, d.dir);
  run(cmd, out, sizeof out);
  cr_assert_not_null(strstr(out, "target"), "%s", out);
  cr_assert_not_null(strstr(out, "rc=78"), "the daemon does not start: %s", out);
}

Test(e2e, vxc_json_is_one_valid_document_even_with_the_lowered_ir) {
  static char out[1 << 20];
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "%s --socket %s compile --json --emit-ir -o %s/ir/ %s", VXT_VXC, d.sock, d.dir,
           VXT_EXAMPLES_DIR "/saxpy.mlir");
  cr_assert_eq(run(cmd, out, sizeof out), 0, "%s", out);
  json_error_t err;
  json_t *o = json_loads(out, 0, &err);
  cr_assert_not_null(o, "not one JSON document: %s at %d:%d in %.200s", err.text, err.line, err.column, out);
  cr_assert_str_eq(json_string_value(json_object_get(o, "status")), "ok");
  const char *ir = json_string_value(json_object_get(o, "lowered_ir"));
  cr_assert_not_null(ir, "the IR is a field of the document");
  cr_assert_not_null(strstr(ir, "vortex.kernel_args"));
  json_t *k = json_array_get(json_object_get(o, "kernels"), 0);
  cr_assert_str_eq(json_string_value(json_object_get(k, "name")), "saxpy");
  cr_assert_eq(json_integer_value(json_object_get(k, "subgroup_size")), 4);
  json_decref(o);
  snprintf(cmd, sizeof cmd, "%s --socket %s stats --json", VXT_VXC, d.sock);
  cr_assert_eq(run(cmd, out, sizeof out), 0, "%s", out);
  o = json_loads(out, 0, &err);
  cr_assert_not_null(o, "%s", out);
  cr_assert_geq(json_integer_value(json_object_get(o, "misses")), 1);
  json_decref(o);
}

Test(e2e, vxc_refuses_a_bad_warp_size_before_asking_the_daemon) {
  static char out[4096];
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "%s --socket %s compile --warp-size 6 %s 2>&1", VXT_VXC, d.sock,
           VXT_EXAMPLES_DIR "/saxpy.mlir");
  cr_assert_eq(run(cmd, out, sizeof out), 64, "%s", out);
  cr_assert_not_null(strstr(out, "--warp-size takes a power of two from 1 to 32"), "%s", out);
  vxc_conn *c = conn();
  cr_assert_eq(misses(c), 0, "nothing was compiled");
  vxc_close(c);
}

/* Looking into the cache: vxc ls lists entries with the source they came
 * from, vxc inspect shows one, and keys are taken by unique prefix. */
Test(e2e, vxc_ls_inspect_and_keys_by_unique_prefix) {
  static char out[65536];
  char cmd[2048];
  snprintf(cmd, sizeof cmd,
           "cd %s && %s --socket %s compile %s && %s --socket %s compile %s && %s --socket %s compile %s",
           d.dir, VXT_VXC, d.sock, VXT_EXAMPLES_DIR "/saxpy.mlir", VXT_VXC, d.sock,
           VXT_EXAMPLES_DIR "/two_kernels.mlir", VXT_VXC, d.sock, VXT_EXAMPLES_DIR "/saxpy.mlir");
  cr_assert_eq(run(cmd, out, sizeof out), 0, "%s", out);
  snprintf(cmd, sizeof cmd, "%s --socket %s ls --json", VXT_VXC, d.sock);
  cr_assert_eq(run(cmd, out, sizeof out), 0, "%s", out);
  json_error_t jerr;
  json_t *doc = json_loads(out, 0, &jerr);
  cr_assert_not_null(doc, "%s: %s", jerr.text, out);
  cr_assert_eq(json_integer_value(json_object_get(doc, "matched")), 2, "%s", out);
  json_t *entries = json_object_get(doc, "entries");
  cr_assert_eq(json_array_size(entries), 2);
  /* the order is by last use, which moves once a minute (lru_resolution) */
  json_t *first = json_array_get(entries, 0), *second = json_array_get(entries, 1);
  if (strcmp(json_string_value(json_object_get(first, "source_name")), "saxpy.mlir") != 0) {
    json_t *t = first;
    first = second, second = t;
  }
  cr_assert_str_eq(json_string_value(json_object_get(first, "source_name")), "saxpy.mlir",
                   "named without its directory: %s", out);
  cr_assert_eq(json_integer_value(json_object_get(first, "hits")), 1, "%s", out);
  cr_assert_str_eq(json_string_value(json_object_get(second, "source_name")), "two_kernels.mlir");
  cr_assert_eq(json_integer_value(json_object_get(second, "nkernels")), 2);
  cr_assert_eq(json_array_size(json_object_get(second, "kernels")), 2);
  cr_assert_not_null(strstr(json_string_value(json_object_get(first, "options")), "warp_size=4"), "%s", out);
  char key[65], prefix[8];
  snprintf(key, sizeof key, "%s", json_string_value(json_object_get(first, "key")));
  json_decref(doc);
  snprintf(prefix, sizeof prefix, "%.6s", key);

  snprintf(cmd, sizeof cmd, "%s --socket %s ls", VXT_VXC, d.sock);
  cr_assert_eq(run(cmd, out, sizeof out), 0, "%s", out);
  cr_assert_not_null(strstr(out, "KEY "), "a header: %s", out);
  char row[64];
  snprintf(row, sizeof row, "%.12s  saxpy.mlir", key);
  cr_assert_not_null(strstr(out, row), "%s", out);

  snprintf(cmd, sizeof cmd, "%s --socket %s inspect %s -d", VXT_VXC, d.sock, prefix);
  cr_assert_eq(run(cmd, out, sizeof out), 0, "%s", out);
  cr_assert_not_null(strstr(out, key), "the whole key: %s", out);
  cr_assert_not_null(strstr(out, "source       saxpy.mlir\n"), "%s", out);
  cr_assert_not_null(strstr(out, "compile time "), "%s", out);
  cr_assert_not_null(strstr(out, "Kernel: saxpy"), "%s", out);
  cr_assert_not_null(strstr(out, "[2] offset=8    size=4  align=4  pointer (memref<?xf32>)"), "%s", out);
  cr_assert_not_null(strstr(out, "Disassembly of section .text"), "%s", out);
  cr_assert_not_null(strstr(out, "<__vxl_main_0>:"), "the entry symbol, disassembled: %s", out);

  /* fetch by prefix writes the very object compile wrote */
  snprintf(cmd, sizeof cmd, "%s --socket %s fetch %s -o %s/fetched.o && cmp %s/fetched.o %s/saxpy.o", VXT_VXC,
           d.sock, prefix, d.dir, d.dir, d.dir);
  cr_assert_eq(run(cmd, out, sizeof out), 0, "%s", out);

  /* two planted entries share a prefix: named by it, neither is chosen */
  vxk_cache *kc = NULL;
  char err[256], a[65], b[65];
  cr_assert_eq(vxk_open(d.cache, 0, &kc, err, sizeof err), VXK_OK, "%s", err);
  memset(a, '0', 64), memset(b, '0', 64);
  memcpy(a, "fedc", 4), memcpy(b, "fedc", 4);
  b[63] = '1';
  a[64] = b[64] = '\0';
  vxp_entry_kernel in = {"k", 1, (const uint8_t *)"m", 1};
  for (int i = 0; i < 2; i++) {
    uint8_t *e = NULL;
    size_t len = 0;
    cr_assert_eq(vxk_entry_encode(i ? b : a, "", (const uint8_t *)"O", 1, NULL, 0, &in, 1, NULL, &e, &len),
                 VXK_OK);
    cr_assert_eq(vxk_put(kc, i ? b : a, e, len, 0, NULL, NULL), VXK_OK);
    free(e);
  }
  vxk_close(kc);
  snprintf(cmd, sizeof cmd, "%s --socket %s inspect fedc 2>&1; echo rc=$?", VXT_VXC, d.sock);
  run(cmd, out, sizeof out);
  cr_assert_not_null(strstr(out, "key prefix names 2 entries"), "%s", out);
  cr_assert_not_null(strstr(out, "rc=2"), "%s", out);
  snprintf(cmd, sizeof cmd, "%s --socket %s ls fedc", VXT_VXC, d.sock);
  cr_assert_eq(run(cmd, out, sizeof out), 0, "%s", out);
  cr_assert_not_null(strstr(out, "fedc00000000  -"), "an entry of unknown origin: %s", out);
  snprintf(cmd, sizeof cmd,
           "%s --socket %s fetch 0f0f0f 2>&1; echo rc=$?; %s --socket %s fetch fed 2>&1; echo rc=$?; "
           "%s --socket %s ls --limit 1 2>&1",
           VXT_VXC, d.sock, VXT_VXC, d.sock, VXT_VXC, d.sock);
  run(cmd, out, sizeof out);
  cr_assert_not_null(strstr(out, "no cache entry with a key starting 0f0f0f\nrc=1"), "%s", out);
  cr_assert_not_null(strstr(out, "'fed' is not a cache key or a prefix of one"), "%s", out);
  cr_assert_not_null(strstr(out, "rc=64"), "%s", out);
  cr_assert_not_null(strstr(out, "(3 more;"), "a limited listing says what it left out: %s", out);
  /* options out of range: said, before anything is asked */
  snprintf(cmd, sizeof cmd,
           "%s --socket %s ls --limit 0 2>&1; echo rc=$?; %s --socket %s ls --limit 1001 2>&1; echo rc=$?; "
           "%s --socket %s inspect fedc -d --json 2>&1; echo rc=$?",
           VXT_VXC, d.sock, VXT_VXC, d.sock, VXT_VXC, d.sock);
  run(cmd, out, sizeof out);
  cr_assert_not_null(strstr(out, "--limit takes a count from 1 to 1000, not '0'"), "%s", out);
  cr_assert_not_null(strstr(out, "not '1001'"), "%s", out);
  cr_assert_not_null(strstr(out, "-d prints a listing: not with --json"), "%s", out);
  int usage = 0;
  for (const char *p = out; (p = strstr(p, "rc=64\n")); p++)
    usage++;
  cr_assert_eq(usage, 3, "each a usage error: %s", out);
}

/* A vxc with no vortexd beside it nor on PATH says so, not "No child
 * processes" with an empty log. */
Test(e2e, a_missing_vortexd_is_named) {
  char cmd[2048], out[4096];
  snprintf(
      cmd, sizeof cmd,
      "mkdir -p -m 700 %s/lone && cp %s %s/lone/vxc && env -u VORTEXD_SOCKET PATH=/usr/bin:/bin %s/lone/vxc "
      "--socket %s/lone/s.sock compile %s -o %s/lone/x.o 2>&1; echo rc=$?",
      d.dir, VXT_VXC, d.dir, d.dir, d.dir, VXT_EXAMPLES_DIR "/saxpy.mlir", d.dir);
  vxt_run(cmd, out, sizeof out);
  cr_assert_not_null(strstr(out, "vortexd did not start: vxc: cannot run vortexd: No such file or directory"),
                     "%s", out);
  cr_assert_not_null(strstr(out, "rc=2\n"), "%s", out);
}

/* A started daemon tells its starter it is ready on a socket of the
 * starter's own (removed after), never on a service manager's NOTIFY_SOCKET
 * that vxc itself may have inherited. */
Test(e2e, a_started_daemon_notifies_its_starter_only) {
  char mgr[96], cmd[2048], out[4096];
  snprintf(mgr, sizeof mgr, "%.80s/manager.sock", d.dir);
  int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK, 0);
  cr_assert_geq(fd, 0);
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  snprintf(a.sun_path, sizeof a.sun_path, "%s", mgr);
  cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0, "%s", strerror(errno));
  snprintf(cmd, sizeof cmd,
           "mkdir -p -m 700 %s/started && NOTIFY_SOCKET=%s %s --socket %s/started/s.sock compile %s -o "
           "%s/started/x.o "
           "2>&1 && ls -A %s/started && %s --socket %s/started/s.sock stop",
           d.dir, mgr, VXT_VXC, d.dir, VXT_EXAMPLES_DIR "/saxpy.mlir", d.dir, d.dir, VXT_VXC, d.dir);
  cr_assert_eq(vxt_run(cmd, out, sizeof out), 0, "%s", out);
  cr_assert_not_null(strstr(out, "x.o\n"), "%s", out);
  cr_assert_null(strstr(out, ".notify"), "the notification socket is removed: %s", out);
  char msg[256];
  cr_assert_lt(recv(fd, msg, sizeof msg, 0), 0, "the manager's socket got a message");
  cr_assert_eq(errno, EAGAIN);
  close(fd);
}

/* -o names a device or a pipe: the object is written into it, as cc
 * does, and the device stays a device (renaming a file over /dev/null, as
 * root may, would break the machine). */
Test(e2e, an_output_device_or_pipe_is_written_into_never_replaced) {
  char cmd[2048], out[4096];
  snprintf(cmd, sizeof cmd, "%s --socket %s compile %s -o /dev/null 2>&1; echo rc=$?", VXT_VXC, d.sock,
           VXT_EXAMPLES_DIR "/saxpy.mlir");
  vxt_run(cmd, out, sizeof out);
  cr_assert_str_eq(out, "rc=0\n");
  struct stat st;
  cr_assert_eq(stat("/dev/null", &st), 0);
  cr_assert(S_ISCHR(st.st_mode), "/dev/null is still a character device");
  snprintf(cmd, sizeof cmd,
           "cd %s && mkfifo pipe && { cat pipe > piped.o & } && %s --socket %s compile %s -o pipe && wait && "
           "%s --socket %s compile %s -o file.o && cmp piped.o file.o && test -p pipe && echo SAME",
           d.dir, VXT_VXC, d.sock, VXT_EXAMPLES_DIR "/saxpy.mlir", VXT_VXC, d.sock,
           VXT_EXAMPLES_DIR "/saxpy.mlir");
  cr_assert_eq(vxt_run(cmd, out, sizeof out), 0, "%s", out);
  cr_assert_str_eq(out, "SAME\n");
}

/* ---- options on every call, and the daemon that answers ---- */

/* vxc sends the target its configuration names (VORTEXD_TARGET here), not
 * whatever a running daemon was started with, and says, once, that the
 * daemon's default differs; the host lowering writes the options into the
 * program, so the runtime asks for exactly those. */
Test(e2e, the_clients_options_decide_and_a_different_daemon_is_noted) {
  vxt_daemon t = {0};
  cr_assert_eq(vxt_daemon_start(&t, "--target=vortex3-rv64"), 0);
  char cmd[2048], out[8192];
  const char *env =
      "env VORTEXD_SOCKET=%s VORTEXD_CACHE_DIR=%s VORTEXD_TARGET=%s %s --no-spawn compile -v -o %s/ %s "
      "2>&1";
  snprintf(cmd, sizeof cmd, env, t.sock, t.cache, "vortex2-rv32", VXT_VXC, t.dir,
           VXT_EXAMPLES_DIR "/saxpy.mlir");
  cr_assert_eq(vxt_run(cmd, out, sizeof out), 0, "%s", out);
  cr_assert_not_null(strstr(out, "target vortex2-rv32"), "the client's target: %s", out);
  cr_assert_null(strstr(out, "target vortex3-rv64"), "%s", out);
  cr_assert_not_null(strstr(out, "its default target is vortex3-rv64, the configuration says vortex2-rv32"),
                     "said: %s", out);
  const char *note = strstr(out, "vxc: note:");
  cr_assert(note && !strstr(note + 1, "vxc: note:"), "said once: %s", out);
  snprintf(cmd, sizeof cmd, env, t.sock, t.cache, "vortex3-rv64", VXT_VXC, t.dir,
           VXT_EXAMPLES_DIR "/saxpy.mlir");
  cr_assert_eq(vxt_run(cmd, out, sizeof out), 0, "%s", out);
  cr_assert_not_null(strstr(out, "target vortex3-rv64"), "%s", out);
  cr_assert_null(strstr(out, "note:"), "the same settings: nothing said: %s", out);
  /* --host takes the kernels' options and writes them into the program */
  snprintf(cmd, sizeof cmd,
           "%s --no-spawn --socket %s compile --host --target vortex3-rv32 --warp-size 8 -O 1 -o %s/prog.o "
           "%s 2>&1",
           VXT_VXC, t.sock, t.dir, VXT_KERNELS_DIR "/../programs/launch_and_copy.mlir");
  cr_assert_eq(vxt_run(cmd, out, sizeof out), 0, "%s", out);
  char path[512];
  snprintf(path, sizeof path, "%s/prog.o", t.dir);
  size_t len = 0;
  char *obj = vxt_read_file(path, &len);
  cr_assert_not_null(obj, "%s", path);
  static const char line[] =
      "// vortexd-options: target=vortex3-rv32 warp_size=8 opt_level=1 shuffle_insns=0";
  cr_assert_not_null(memmem(obj, len, line, sizeof line - 1), "the options in the program's module");
  free(obj);
  cr_assert_eq(vxt_daemon_stop(&t), 0);
}

/* A daemon started from another build of vortexd than the one beside vxc
 * (before a rebuild or install) is noted, with how to restart it. */
Test(e2e, a_daemon_of_another_build_is_noted) {
  vxt_daemon t = {0};
  vxt_tmp_template(t.dir, sizeof t.dir, "vxt-");
  cr_assert_not_null(mkdtemp(t.dir));
  snprintf(t.sock, sizeof t.sock, "%s/s.sock", t.dir);
  snprintf(t.cache, sizeof t.cache, "%s/cache", t.dir);
  char old[256], cmd[2048], out[4096];
  snprintf(old, sizeof old, "%s/vortexd", t.dir);
  snprintf(cmd, sizeof cmd, "cp %s %s", VXT_VORTEXD, old);
  cr_assert_eq(system(cmd), 0);
  t.pid = fork();
  cr_assert_geq(t.pid, 0);
  if (t.pid == 0) {
    execl(old, old, "--socket", t.sock, "--cache-dir", t.cache, "--workers", "1", (char *)NULL);
    _exit(127);
  }
  cr_assert_eq(vxt_daemon_wait(t.sock, t.pid), 0);
  snprintf(cmd, sizeof cmd, "%s --no-spawn --socket %s stats 2>&1 >/dev/null", VXT_VXC, t.sock);
  cr_assert_eq(vxt_run(cmd, out, sizeof out), 0, "%s", out);
  cr_assert_not_null(strstr(out, "it runs another build than"), "%s", out);
  cr_assert_not_null(strstr(out, "vxc stop"), "how to restart it: %s", out);
  cr_assert_eq(vxt_daemon_stop(&t), 0);
  snprintf(cmd, sizeof cmd, "rm -rf %s", t.dir);
  cr_assert_eq(system(cmd), 0);
}
