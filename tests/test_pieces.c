/*
 * test_pieces.c - a module compiled in pieces: the split, the link, and
 * the pieces compiled on helper threads with borrowed cores
 * (daemon/vxd_pieces.c) giving the bytes of the serial compile.
 */
#define _GNU_SOURCE /* open_memstream */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/vxd_pieces.h"
#include "lowering/vxl.h"
#include "lowering/vxl_lld.h"
#include "runtime/mgpu/vxr_vxbin.h"
#include "vxt.h"

static vxl_compiler *cc;
static vxd_cores *cores;
static vxd_crew *crew;

static void setup(void) {
  cr_assert_eq(vxd_compiler_new(&cc), 0);
  cores = vxd_cores_create(4);
  cr_assert_not_null(cores);
  crew = vxd_crew_create(cores, 0, VXD_MAX_HELPERS);
  cr_assert_not_null(crew);
}

static void teardown(void) {
  vxd_crew_destroy(crew);
  vxd_cores_destroy(cores);
  vxl_compiler_destroy(cc);
}

TestSuite(pieces, .init = setup, .fini = teardown);

static const vxl_options o2 = {.opt_level = 2};

static void assert_same_result(const vxl_result *a, const vxl_result *b, unsigned n) {
  cr_assert(a->ok && b->ok, "%u kernels: %s / %s", n, a->ndiags ? a->diags[0] : "",
            b->ndiags ? b->diags[0] : "");
  cr_assert_eq(a->nkernels, n);
  cr_assert_eq(b->nkernels, n);
  cr_assert_eq(a->object_size, b->object_size, "%u kernels: %zu vs %zu bytes", n, a->object_size,
               b->object_size);
  cr_assert(memcmp(a->object, b->object, a->object_size) == 0, "%u kernels: objects differ", n);
  for (unsigned i = 0; i < n; i++) {
    const vxl_kernel *x = &a->kernels[i], *y = &b->kernels[i];
    char want_name[16], want_entry[32];
    snprintf(want_name, sizeof want_name, "k%u", i);
    snprintf(want_entry, sizeof want_entry, VXL_ENTRY_PREFIX "%u", i);
    cr_assert_str_eq(x->name, want_name);
    cr_assert_str_eq(y->name, want_name);
    cr_assert_str_eq(x->entry, want_entry);
    cr_assert_str_eq(y->entry, want_entry);
    cr_assert_eq(x->nargs, y->nargs);
    cr_assert_eq(x->buffer_size, y->buffer_size);
    cr_assert_null(vxt_elf_check(a->object, a->object_size, x->entry), "%s", x->entry);
  }
}

Test(pieces, a_module_is_split_by_its_kernel_count_alone) {
  cr_assert_eq(vxl_piece_count(0), 1);
  cr_assert_eq(vxl_piece_count(1), 1);
  cr_assert_eq(vxl_piece_count(VXL_PIECE_KERNELS), 1);
  cr_assert_eq(vxl_piece_count(VXL_PIECE_KERNELS + 1), 2);
  cr_assert_eq(vxl_piece_count(256), 256 / VXL_PIECE_KERNELS);
  cr_assert_eq(vxl_piece_count(VXL_PIECE_KERNELS * VXL_MAX_PIECES), VXL_MAX_PIECES);
  cr_assert_eq(vxl_piece_count(UINT32_MAX), VXL_MAX_PIECES, "bounded: one pipe per piece at the link");
  uint32_t first, count;
  vxl_piece_range(UINT32_MAX, VXL_MAX_PIECES - 1, &first, &count);
  cr_assert_eq(first + count, UINT32_MAX);
  for (uint32_t n = 1; n <= 1000; n++) {
    uint32_t p = vxl_piece_count(n), next = 0, lo = UINT32_MAX, hi = 0;
    for (uint32_t i = 0; i < p; i++) {
      vxl_piece_range(n, i, &first, &count);
      cr_assert_eq(first, next, "n=%u piece %u starts at %u, not %u", n, i, first, next);
      cr_assert(count >= 1 && count <= VXL_PIECE_KERNELS, "n=%u piece %u has %u kernels", n, i, count);
      next = first + count;
      lo = count < lo ? count : lo;
      hi = count > hi ? count : hi;
    }
    cr_assert_eq(next, n, "n=%u: the pieces cover %u kernels", n, next);
    cr_assert_leq(hi - lo, 1, "n=%u: pieces of %u to %u kernels", n, lo, hi);
    vxl_piece_range(n, p, &first, &count);
    cr_assert_eq(count, 0);
  }
}

Test(pieces, pieces_on_helper_threads_give_the_bytes_of_the_serial_compile) {
  static const unsigned sizes[] = {1, VXL_PIECE_KERNELS, VXL_PIECE_KERNELS + 1, 70, 130};
  for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
    unsigned n = sizes[s];
    size_t len;
    char *src = vxt_many_kernels(n, &len);
    cr_assert_not_null(src);
    vxl_result serial, parallel;
    cr_assert_eq(vxl_compile(cc, src, len, "many.mlir", &o2, &serial), 0);
    vxd_cores_set_idle(cores, 3); /* three idle workers: up to three helpers */
    cr_assert_eq(vxd_crew_compile(crew, cc, src, len, "many.mlir", &o2, &parallel), 0);
    assert_same_result(&serial, &parallel, n);
    if (vxl_piece_count(n) > 1)
      cr_assert_gt(vxd_crew_last_helped(crew), 0, "%u kernels: no piece was compiled by a helper", n);
    else
      cr_assert_eq(vxd_crew_last_helped(crew), 0);
    vxl_result_clear(&serial);
    vxl_result_clear(&parallel);
    free(src);
  }
}

/* vxl_merge_fn over an `ld.lld -r` process (what the daemon ran before
 * it linked with lld in-process). */
static int merge_by_ld_lld(void *ud, uint32_t n, const uint8_t *const *objects, const size_t *sizes,
                           uint8_t **out, size_t *out_size, char *err, size_t errcap) {
  (void)ud;
  return vxr_link_relocatable(VXD_LLD, n, objects, sizes, out, out_size, err, errcap);
}

/* The daemon links a module's pieces with lld's driver in a fork of the
 * worker, no ld.lld process: the objects are byte for byte those of
 * `ld.lld -r` (the lld of the same LLVM, the same arguments), for 2, 10
 * and 18 pieces, for both register widths; and a link lld refuses fails with
 * lld's own message. */
Test(pieces, the_in_process_link_gives_the_bytes_of_an_ld_lld_process) {
  vxl_compiler *by_process = NULL;
  cr_assert_eq(vxl_compiler_create(&by_process), 0);
  vxl_compiler_set_merge(by_process, merge_by_ld_lld, NULL);
  static const unsigned sizes[] = {VXL_PIECE_KERNELS + 1, 150, 280};
  for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
    for (uint32_t xlen = 32; xlen <= 64; xlen += 32) {
      unsigned n = sizes[s];
      size_t len;
      char *src = vxt_many_kernels(n, &len);
      cr_assert_not_null(src);
      vxl_options o = {.opt_level = 2, .vortex_abi = 2, .xlen = xlen};
      vxl_result a, b;
      cr_assert_eq(vxl_compile(cc, src, len, "many.mlir", &o, &a), 0);
      cr_assert_eq(vxl_compile(by_process, src, len, "many.mlir", &o, &b), 0);
      cr_assert(a.ok && b.ok, "%u kernels rv%u: %s / %s", n, xlen, a.ndiags ? a.diags[0] : "",
                b.ndiags ? b.diags[0] : "");
      cr_assert(a.object_size == b.object_size && memcmp(a.object, b.object, a.object_size) == 0,
                "%u kernels rv%u: %zu bytes in-process, %zu by ld.lld", n, xlen, a.object_size,
                b.object_size);
      vxl_result_clear(&a);
      vxl_result_clear(&b);
      free(src);
    }
  }
  vxl_compiler_destroy(by_process);
  /* two objects that both define a symbol: lld's error, quoted */
  static const char twice[] = "module { gpu.module @m { gpu.func @k() kernel { gpu.return } } }";
  vxl_options o = {.opt_level = 2};
  vxl_result r;
  cr_assert_eq(vxl_compile(cc, twice, sizeof twice - 1, "t.mlir", &o, &r), 0);
  cr_assert(r.ok, "%s", r.ndiags ? r.diags[0] : "");
  const uint8_t *objects[2] = {r.object, r.object};
  const size_t osz[2] = {r.object_size, r.object_size};
  uint8_t *out = (uint8_t *)"untouched";
  size_t out_size = 1;
  char err[2048];
  cr_assert_eq(vxl_lld_link_relocatable(2, objects, osz, &out, &out_size, err, sizeof err), -EIO);
  cr_assert_null(out);
  cr_assert_eq(out_size, 0);
  cr_assert_not_null(strstr(err, "lld failed (exit status 1):"), "%s", err);
  cr_assert_not_null(strstr(err, "duplicate symbol"), "%s", err);
  cr_assert_eq(vxl_lld_link_relocatable(0, objects, osz, &out, &out_size, err, sizeof err), -EINVAL);
  vxl_result_clear(&r);
}

Test(pieces, no_core_is_borrowed_when_no_worker_is_idle) {
  size_t len;
  char *src = vxt_many_kernels(100, &len);
  vxl_result alone, helped;
  vxd_cores_set_idle(cores, 0);
  cr_assert_eq(vxd_crew_compile(crew, cc, src, len, "many.mlir", &o2, &alone), 0);
  cr_assert_eq(vxd_crew_last_helped(crew), 0);
  vxd_cores_set_idle(cores, 1);
  cr_assert_eq(vxd_crew_compile(crew, cc, src, len, "many.mlir", &o2, &helped), 0);
  cr_assert_gt(vxd_crew_last_helped(crew), 0);
  assert_same_result(&alone, &helped, 100);
  /* every loan was given back: a second crew in another slot borrows too */
  vxd_crew *other = vxd_crew_create(cores, 1, VXD_MAX_HELPERS);
  vxl_result again;
  cr_assert_eq(vxd_crew_compile(other, cc, src, len, "many.mlir", &o2, &again), 0);
  cr_assert_gt(vxd_crew_last_helped(other), 0);
  assert_same_result(&alone, &again, 100);
  vxd_crew_destroy(other);
  vxl_result_clear(&alone);
  vxl_result_clear(&helped);
  vxl_result_clear(&again);
  free(src);
}

typedef struct {
  vxl_compiler *c;
  vxd_crew *crew;
  const char *src;
  size_t len;
  vxl_result res;
  int rc;
  int done;      /* set (atomically) once the compile returned */
  unsigned base; /* vxd_crew_pieces_started before it began */
} compile_job;

static void *compile_on_thread(void *arg) {
  compile_job *j = arg;
  j->rc = vxd_crew_compile(j->crew, j->c, j->src, j->len, "many.mlir", &o2, &j->res);
  __atomic_store_n(&j->done, 1, __ATOMIC_SEQ_CST);
  return NULL;
}

/* Whether j's crew has a helper's piece under way, or j is done. */
static int helper_took_a_piece(void *arg) {
  compile_job *j = arg;
  return vxd_crew_pieces_started(j->crew) > j->base || __atomic_load_n(&j->done, __ATOMIC_SEQ_CST);
}

Test(pieces, a_helper_gives_its_core_back_when_work_arrives_for_it) {
  size_t len;
  unsigned n = 10 * VXL_PIECE_KERNELS; /* 10 pieces */
  char *src = vxt_many_kernels(n, &len);
  vxl_result alone;
  vxd_cores_set_idle(cores, 0);
  cr_assert_eq(vxl_compile(cc, src, len, "many.mlir", &o2, &alone), 0);
  cr_assert(alone.ok);
  /* one idle worker's core lent; once the helper has taken a piece, a job
   * goes to that worker (idle 0): the helper stops before its next one.
   * The worker's own thread may finish all ten before the helper has
   * parsed the source; such a round shows nothing and is run again. */
  int observed = 0;
  for (int round = 0; round < 5 && !observed; round++) {
    vxd_cores_set_idle(cores, 1);
    compile_job j = {.c = cc, .crew = crew, .src = src, .len = len};
    j.base = vxd_crew_pieces_started(crew);
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, compile_on_thread, &j), 0);
    vxt_wait_until(helper_took_a_piece, &j, 120000);
    int running = !__atomic_load_n(&j.done, __ATOMIC_SEQ_CST);
    vxd_cores_set_idle(cores, 0);
    unsigned taken = vxd_crew_pieces_started(crew) - j.base;
    pthread_join(t, NULL);
    cr_assert_eq(j.rc, 0);
    observed = running && taken > 0;
    /* the helper may have passed its check of the cores, not yet taken the
     * piece, when they were wanted: one more */
    cr_assert_leq(vxd_crew_last_helped(crew), taken + 1,
                  "the helper compiled %u of 10 pieces, %u taken before its core was wanted",
                  vxd_crew_last_helped(crew), taken);
    assert_same_result(&alone, &j.res, n);
    vxl_result_clear(&j.res);
  }
  cr_assert(observed, "in 5 rounds, a helper took a piece while the compile ran");
  /* the loan ended: with the core idle again, a helper can borrow it */
  vxd_cores_set_idle(cores, 1);
  vxl_result again;
  cr_assert_eq(vxd_crew_compile(crew, cc, src, len, "many.mlir", &o2, &again), 0);
  cr_assert_geq(vxd_crew_last_helped(crew), 1);
  vxl_result_clear(&alone);
  vxl_result_clear(&again);
  free(src);
}

Test(pieces, a_module_variable_is_one_copy_in_the_linked_object) {
  size_t len;
  char *src = vxt_many_kernels(100, &len);
  vxl_result r;
  cr_assert_eq(vxl_compile(cc, src, len, "many.mlir", &o2, &r), 0);
  cr_assert(r.ok);
  /* every piece defines it (weak); the link keeps one definition */
  cr_assert_eq(vxt_elf_count_defined(r.object, r.object_size, VXL_VAR_PREFIX "bias"), 1);
  cr_assert_eq(vxt_elf_count_defined(r.object, r.object_size, "bias"), 0);
  vxl_result_clear(&r);
  free(src);
}

Test(pieces, errors_in_several_pieces_are_each_reported_once) {
  size_t len;
  char *src = vxt_many_kernels(70, &len);
  /* break kernel 3 (piece 0) and kernel 60 (piece 1) with an op the
   * lowering refuses, and add a broken function every piece holds */
  char *text = NULL;
  size_t tlen = 0;
  FILE *f = open_memstream(&text, &tlen);
  const char *k3 = strstr(src, "gpu.func @k3(");
  const char *k60 = strstr(src, "gpu.func @k60(");
  cr_assert(k3 && k60);
  const char *bad = "      %bad = gpu.cluster_id x\n";
  const char *k0 = strstr(src, "    gpu.func @k0(");
  const char *k3_body = strchr(k3, '\n') + 1, *k60_body = strchr(k60, '\n') + 1;
  fwrite(src, 1, (size_t)(k0 - src), f);
  fputs("    gpu.func @helper() {\n      %h = gpu.cluster_id y\n      gpu.return\n    }\n", f);
  fwrite(k0, 1, (size_t)(k3_body - k0), f);
  fputs(bad, f);
  fwrite(k3_body, 1, (size_t)(k60_body - k3_body), f);
  fputs(bad, f);
  fputs(k60_body, f);
  fclose(f);
  vxl_result serial, parallel;
  cr_assert_eq(vxl_compile(cc, text, tlen, "many.mlir", &o2, &serial), 0);
  vxd_cores_set_idle(cores, 2);
  cr_assert_eq(vxd_crew_compile(crew, cc, text, tlen, "many.mlir", &o2, &parallel), 0);
  for (int p = 0; p < 2; p++) {
    const vxl_result *r = p ? &parallel : &serial;
    cr_assert_not(r->ok);
    cr_assert_null(r->object);
    cr_assert_eq(r->nkernels, 0);
    unsigned cluster = 0;
    for (uint32_t i = 0; i < r->ndiags; i++) {
      cr_assert_eq(strncmp(r->diags[i], "many.mlir:", 10), 0, "%s", r->diags[i]);
      cluster += strstr(r->diags[i], "gpu.cluster_id") != NULL;
      for (uint32_t j = 0; j < i; j++)
        cr_assert_str_neq(r->diags[i], r->diags[j], "said twice");
    }
    cr_assert_eq(cluster, 3, "%s", r->ndiags ? r->diags[0] : "");
  }
  cr_assert_eq(serial.ndiags, parallel.ndiags);
  for (uint32_t i = 0; i < serial.ndiags; i++)
    cr_assert_str_eq(serial.diags[i], parallel.diags[i]);
  vxl_result_clear(&serial);
  vxl_result_clear(&parallel);
  free(text);
  free(src);
}

/* ---- a module compiled again after an edit ---- */

/* src with the first `find` replaced by `repl` (malloc()). */
static char *edited(const char *src, const char *find, const char *repl) {
  const char *at = strstr(src, find);
  cr_assert_not_null(at, "%s", find);
  char *out = NULL;
  cr_assert_gt(asprintf(&out, "%.*s%s%s", (int)(at - src), src, repl, at + strlen(find)), 0);
  return out;
}

/* The inputs (vxl_piece_inputs) of every piece of src, parsed by c. */
static uint32_t inputs_of(vxl_compiler *c, const char *src, char **inputs) {
  vxl_source *s = NULL;
  vxl_result r;
  cr_assert_eq(vxl_source_parse(c, src, strlen(src), "many.mlir", &s, &r), 0);
  cr_assert(r.ok && s, "%s", r.ndiags ? r.diags[0] : "");
  vxl_result_clear(&r);
  uint32_t n = vxl_piece_count(vxl_source_kernels(s));
  for (uint32_t i = 0; i < n; i++) {
    size_t len = 0;
    cr_assert_eq(vxl_piece_inputs(c, s, i, &inputs[i], &len), 0);
    cr_assert_eq(strlen(inputs[i]), len);
  }
  char *none = NULL;
  size_t len = 0;
  cr_assert_eq(vxl_piece_inputs(c, s, n, &none, &len), -EINVAL, "no such piece");
  vxl_source_destroy(s);
  return n;
}

/* Which pieces' inputs differ between two sources: a bit per piece. */
static uint64_t inputs_changed(const char *a, const char *b) {
  char *ia[VXL_MAX_PIECES], *ib[VXL_MAX_PIECES];
  uint32_t n = inputs_of(cc, a, ia);
  cr_assert_eq(inputs_of(cc, b, ib), n);
  uint64_t changed = 0;
  for (uint32_t i = 0; i < n; i++) {
    if (strcmp(ia[i], ib[i]) != 0) changed |= 1ull << i;
    free(ia[i]), free(ib[i]);
  }
  return changed;
}

/* What a piece is compiled from changes with its own kernels, the
 * functions, variables and gpu.module attributes every piece may use, and
 * the lines it sits on: an edit in another piece's kernel changes nothing
 * of it, a line added moves every later piece. */
Test(pieces, the_inputs_of_a_piece_are_what_it_is_compiled_from) {
  size_t len;
  unsigned n = 5 * VXL_PIECE_KERNELS; /* five pieces; kernel 2P + 3 in the third */
  char *src = vxt_many_kernels(n, &len), k[64], kc[80], find[80];
  cr_assert_eq(vxl_piece_count(n), 5);
  unsigned ki = 2 * VXL_PIECE_KERNELS + 3;
  /* the same in another compiler, and piece after piece distinct */
  char *ia[VXL_MAX_PIECES], *ib[VXL_MAX_PIECES];
  vxl_compiler *other = NULL;
  cr_assert_eq(vxl_compiler_create(&other), 0);
  inputs_of(cc, src, ia);
  inputs_of(other, src, ib);
  for (uint32_t i = 0; i < 5; i++) {
    cr_assert_str_eq(ia[i], ib[i], "piece %u", i);
    for (uint32_t j = 0; j < i; j++)
      cr_assert_str_neq(ia[i], ia[j]);
  }
  for (uint32_t i = 0; i < 5; i++)
    free(ia[i]), free(ib[i]);
  vxl_compiler_destroy(other);

  snprintf(find, sizeof find, "%%k = arith.constant %u.0 : f32", ki);
  snprintf(kc, sizeof kc, "%%k = arith.constant 1000.0 : f32");
  char *constant = edited(src, find, kc);
  cr_assert_eq(inputs_changed(src, constant), 1u << 2, "a constant of kernel %u: its piece alone", ki);

  snprintf(k, sizeof k, "    gpu.func @k%u(", ki);
  snprintf(kc, sizeof kc, "    // a line added\n    gpu.func @k%u(", ki);
  char *line = edited(src, k, kc);
  cr_assert_eq(inputs_changed(src, line), 0x1cu,
               "a line added before kernel %u: its piece and the later ones", ki);
  char *first_line = edited(src, "    gpu.func @k0(", "\n    gpu.func @k0(");
  cr_assert_eq(inputs_changed(src, first_line), 0x1fu, "a line added before the first kernel: every piece");

  char *helper = edited(src, "%y = arith.mulf %x, %k : f32", "%y = arith.addf %x, %k : f32");
  cr_assert_eq(inputs_changed(src, helper), 0x1fu, "a function every kernel calls: every piece");
  char *unused = edited(src, "%y = arith.addf %x, %x : f32", "%y = arith.subf %x, %x : f32");
  cr_assert_eq(inputs_changed(src, unused), 0x1fu,
               "a function no kernel calls is still checked: every piece");
  char *variable = edited(src, "dense<0.5>", "dense<0.25>");
  cr_assert_eq(inputs_changed(src, variable), 0x1fu, "a variable: every piece");
  char *attribute = edited(src, "gpu.module @many {", "gpu.module @many attributes {note = 1 : i32} {");
  cr_assert_eq(inputs_changed(src, attribute), 0x1fu, "an attribute of the gpu.module: every piece");
  char *top = edited(src, "module attributes {gpu.container_module}",
                     "module attributes {gpu.container_module, test.note = 2 : i32}");
  cr_assert_eq(inputs_changed(src, top), 0x1fu, "an attribute of the top module: every piece");
  char *comment = edited(src, "  gpu.module @many {", "  gpu.module @many { // a comment");
  cr_assert_eq(inputs_changed(src, comment), 0, "a comment that moves no line: no piece");
  free(constant), free(line), free(first_line), free(helper), free(unused), free(variable), free(attribute);
  free(comment), free(top), free(src);
}

/* ---- a piece store in memory, keyed by the inputs themselves ---- */

typedef struct {
  char *inputs[64]; /* key i: inputs[i] */
  vxl_result kept[64];
  uint8_t have[64];
  unsigned ninputs, lookups, keeps, fail_lookup;
} mem_store;

static int mem_key(void *ud, const vxl_options *opts, const char *source_name, const char *inputs, size_t len,
                   char key[65]) {
  (void)opts, (void)source_name;
  mem_store *m = ud;
  unsigned i = 0;
  while (i < m->ninputs && strcmp(m->inputs[i], inputs) != 0)
    i++;
  if (i == m->ninputs) {
    cr_assert_lt(i, 64);
    m->inputs[m->ninputs++] = strndup(inputs, len);
  }
  snprintf(key, 65, "%064u", i);
  return 0;
}

static void copy_result(vxl_result *dst, const vxl_result *src) {
  memset(dst, 0, sizeof *dst);
  dst->ok = src->ok;
  dst->object = malloc(src->object_size);
  memcpy(dst->object, src->object, src->object_size);
  dst->object_size = src->object_size;
  dst->kernels = calloc(src->nkernels, sizeof *dst->kernels);
  dst->nkernels = src->nkernels;
  for (uint32_t i = 0; i < src->nkernels; i++) {
    vxl_kernel *k = &dst->kernels[i];
    *k = src->kernels[i];
    k->name = strdup(k->name), k->entry = strdup(k->entry);
    k->args = calloc(k->nargs ? k->nargs : 1, sizeof *k->args);
    for (uint32_t a = 0; a < k->nargs; a++) {
      k->args[a] = src->kernels[i].args[a];
      k->args[a].type = strdup(k->args[a].type);
    }
  }
}

static int mem_lookup(void *ud, uint32_t n, const char (*keys)[65], vxl_result *got, uint8_t *hit) {
  mem_store *m = ud;
  m->lookups++;
  if (m->fail_lookup) return -EIO;
  for (uint32_t i = 0; i < n; i++) {
    unsigned k = (unsigned)atoi(keys[i]);
    if (k < 64 && m->have[k]) copy_result(&got[i], &m->kept[k]), hit[i] = 1;
  }
  return 0;
}

static void mem_keep(void *ud, const char *key, const vxl_result *r) {
  mem_store *m = ud;
  unsigned k = (unsigned)atoi(key);
  cr_assert(r->ok && r->ndiags == 0 && r->object);
  cr_assert_lt(k, 64);
  if (m->have[k]) vxl_result_clear(&m->kept[k]);
  copy_result(&m->kept[k], r);
  m->have[k] = 1;
  m->keeps++;
}

static void mem_clear(mem_store *m) {
  for (unsigned i = 0; i < 64; i++) {
    free(m->inputs[i]);
    if (m->have[i]) vxl_result_clear(&m->kept[i]);
  }
}

/* The crew compiles `src` with store ps and checks the result against a
 * compile without one: the same bytes, the same kernels; returns how many
 * pieces came from the store. */
static unsigned compile_with_store(vxd_crew *w, const vxd_piece_store *ps, const char *src, unsigned n) {
  vxl_result whole, incremental;
  cr_assert_eq(vxl_compile(cc, src, strlen(src), "many.mlir", &o2, &whole), 0);
  vxd_crew_set_store(w, ps);
  cr_assert_eq(vxd_crew_compile(w, cc, src, strlen(src), "many.mlir", &o2, &incremental), 0);
  vxd_crew_set_store(w, NULL);
  assert_same_result(&whole, &incremental, n);
  for (unsigned i = 0; i < n; i++) {
    const vxl_kernel *x = &whole.kernels[i], *y = &incremental.kernels[i];
    cr_assert_eq(x->kernel_id, y->kernel_id);
    cr_assert_eq(x->args_size, y->args_size);
    for (uint32_t a = 0; a < x->nargs; a++) {
      cr_assert_str_eq(x->args[a].type, y->args[a].type);
      cr_assert_eq(x->args[a].offset, y->args[a].offset);
    }
  }
  vxl_result_clear(&whole);
  vxl_result_clear(&incremental);
  return vxd_crew_last_reused(w);
}

/* A module compiled again after one kernel was edited takes the other
 * pieces from the store and compiles that kernel's piece alone, into the
 * bytes of a whole compile of the edited module; a line added compiles
 * the pieces it moved; with helpers, and when the store fails. */
Test(pieces, a_module_with_one_kernel_edited_compiles_its_piece_alone) {
  unsigned n = 5 * VXL_PIECE_KERNELS, ki = 2 * VXL_PIECE_KERNELS + 3;
  size_t len;
  char *src = vxt_many_kernels(n, &len), find[80], repl[80];
  mem_store m = {0};
  vxd_piece_store ps = {&m, mem_key, mem_lookup, mem_keep};
  vxd_cores_set_idle(cores, 2);
  cr_assert_eq(compile_with_store(crew, &ps, src, n), 0, "an empty store");
  cr_assert_eq(m.keeps, 5, "every piece kept");

  snprintf(find, sizeof find, "%%k = arith.constant %u.0 : f32", ki);
  snprintf(repl, sizeof repl, "%%k = arith.constant 1000.0 : f32");
  char *constant = edited(src, find, repl);
  cr_assert_eq(compile_with_store(crew, &ps, constant, n), 4, "the other four pieces from the store");
  cr_assert_eq(m.keeps, 6, "the edited piece kept");
  cr_assert_eq(vxd_crew_last_helped(crew), 0, "one piece: no helper");

  snprintf(find, sizeof find, "    gpu.func @k%u(", ki);
  snprintf(repl, sizeof repl, "    // a line added\n    gpu.func @k%u(", ki);
  char *line = edited(constant, find, repl);
  cr_assert_eq(compile_with_store(crew, &ps, line, n), 2, "the two pieces before the line");
  cr_assert_eq(m.keeps, 9);

  cr_assert_eq(compile_with_store(crew, &ps, src, n), 5, "the module as it was: every piece");
  cr_assert_eq(m.keeps, 9);

  m.fail_lookup = 1; /* a store that cannot answer: every piece compiled */
  cr_assert_eq(compile_with_store(crew, &ps, src, n), 0);
  cr_assert_eq(m.keeps, 14);

  /* a module of one piece is the module's own entry: no piece store */
  unsigned lookups = m.lookups;
  char *small = vxt_many_kernels(VXL_PIECE_KERNELS, &len);
  cr_assert_eq(compile_with_store(crew, &ps, small, VXL_PIECE_KERNELS), 0);
  cr_assert_eq(m.lookups, lookups);
  mem_clear(&m);
  free(small), free(line), free(constant), free(src);
}

/* Only a piece that compiled is kept: in a refused module, the piece that
 * compiled is, the refused one is not (and a piece with a warning is
 * never kept, so that every compile of the module says it). */
Test(pieces, a_refused_piece_is_not_kept) {
  unsigned n = 2 * VXL_PIECE_KERNELS;
  size_t len;
  char *src = vxt_many_kernels(n, &len), find[80];
  snprintf(find, sizeof find, "%%k = arith.constant %u.0 : f32", VXL_PIECE_KERNELS + 1);
  char *refused = edited(src, find, "%bad = gpu.cluster_id x\n        %k = arith.constant 1.0 : f32");
  mem_store m = {0};
  vxd_piece_store ps = {&m, mem_key, mem_lookup, mem_keep};
  vxl_result r;
  vxd_crew_set_store(crew, &ps);
  cr_assert_eq(vxd_crew_compile(crew, cc, refused, strlen(refused), "many.mlir", &o2, &r), 0);
  vxd_crew_set_store(crew, NULL);
  cr_assert_not(r.ok);
  cr_assert_not_null(strstr(r.ndiags ? r.diags[0] : "", "gpu.cluster_id"), "%s", r.ndiags ? r.diags[0] : "");
  cr_assert_eq(m.lookups, 1);
  cr_assert_eq(m.keeps, 1, "the piece that compiled is kept, the refused one is not");
  vxl_result_clear(&r);
  mem_clear(&m);
  free(refused), free(src);
}
