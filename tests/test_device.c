/*
 * test_device.c - compiled kernels executed on the lockstep SIMT emulator.
 *
 * Each test compiles a kernel exactly as the hardware gets it (Vortex
 * custom instructions and CSRs), links it with the emulator's device
 * runtime, packs its argument buffer with libvxc from the metadata, and runs
 * every launch on each configuration of vxt_simt_matrix (warp widths 1, 4,
 * 8 and 32, every split policy, one and two cores): the threads of a warp
 * step together, so a divergent branch without a split, a misplaced join or
 * a wrong barrier fails the test.  All configurations must leave the same
 * device memory and print the same lines (in any order: the order between
 * warps is the scheduler's); every output is then checked
 * against a C reference computed here.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client/vxc.h"
#include "daemon/vxd_wire.h"
#include "lowering/vxl.h"
#include "runtime/mgpu/vxr_vxbin.h"
#include "vxt.h"
#include "vxt_device.h"
#include "vxt_lowering.h"

#ifdef VXT_CORPUS_DIR
#define CORPUS VXT_CORPUS_DIR "/vortex-hip/"
#endif
#define DEV(off) (VXT_MEM_BASE + (off))

static vxl_compiler *cc;
/* A module of more than VXL_PIECE_KERNELS kernels is linked from pieces
 * by ld.lld -r, as in the daemon. */
static int merge(void *ud, uint32_t n, const uint8_t *const *objs, const size_t *sizes, uint8_t **out,
                 size_t *out_size, char *err, size_t errcap) {
  (void)ud;
  return vxr_link_relocatable(VXT_LLD, n, objs, sizes, out, out_size, err, errcap);
}
static void setup(void) {
  cr_assert_eq(vxl_compiler_create(&cc), 0);
  vxl_compiler_set_merge(cc, merge, NULL);
}
/* What each module the tests launch was compiled from (by its object, a
 * heap block that stays put while the result is copied around), so that
 * every launch also runs the module compiled for Vortex 3.0's kernel ABI
 * (launch_on).  A test process compiles a handful of modules. */
typedef struct {
  const uint8_t *object; /* the 2.x result's */
  char *src, *name;
  size_t len;
  vxl_options o;
  vxl_result other[2][2]; /* by [vortex_abi == 3][xlen == 64], compiled on the first launch */
  bool have[2][2];
} origin;
static origin origins[64];

static void forget(origin *g) {
  free(g->src), free(g->name);
  for (int a = 0; a < 2; a++)
    for (int x = 0; x < 2; x++)
      if (g->have[a][x]) vxl_result_clear(&g->other[a][x]);
  memset(g, 0, sizeof *g);
}

/* vxl_compile, remembering what r was compiled from.  A slot whose
 * object has the address of r's new one is stale (that object was freed):
 * it is reused first. */
static int compile_kept(const char *src, size_t len, const char *name, const vxl_options *o, vxl_result *r) {
  int rc = vxl_compile(cc, src, len, name, o, r);
  if (rc != 0 || !r->ok) return rc;
  origin *g = NULL;
  for (unsigned i = 0; i < sizeof origins / sizeof *origins && !g; i++)
    if (origins[i].object == r->object) g = &origins[i];
  for (unsigned i = 0; i < sizeof origins / sizeof *origins && !g; i++)
    if (!origins[i].object) g = &origins[i];
  cr_assert_not_null(g, "more modules than origins[] keeps");
  forget(g);
  *g = (origin){.object = r->object, .src = malloc(len ? len : 1), .name = strdup(name), .len = len, .o = *o};
  cr_assert(g->src && g->name);
  memcpy(g->src, src, len);
  return rc;
}

/* vxt_compile_file through compile_kept. */
static int compile_file_kept(const char *path, const vxl_options *o, vxl_result *r) {
  size_t len = 0;
  char *src = vxt_read_file(path, &len);
  if (!src) return -ENOENT;
  int rc = compile_kept(src, len, path, o, r);
  free(src);
  return rc;
}

/* The module of r (compiled for Vortex 2.x on RV32) compiled for kernel
 * ABI abi and register width xlen, the same options otherwise. */
static const vxl_result *target_of(const vxl_result *r, uint32_t abi, uint32_t xlen) {
  if (abi == 2 && xlen == 32) return r;
  origin *g = NULL;
  for (unsigned i = 0; i < sizeof origins / sizeof *origins && !g; i++)
    if (origins[i].object && origins[i].object == r->object) g = &origins[i];
  cr_assert_not_null(g,
                     "a launched module was compiled without compile_kept: it would not run on every target");
  vxl_result *t = &g->other[abi == 3][xlen == 64];
  if (!g->have[abi == 3][xlen == 64]) {
    vxl_options o = g->o;
    o.vortex_abi = abi, o.xlen = xlen;
    cr_assert_eq(vxl_compile(cc, g->src, g->len, g->name, &o, t), 0);
    cr_assert(t->ok, "%s for vortex%u-rv%u: %s", g->name, abi, xlen, t->ndiags ? t->diags[0] : "");
    g->have[abi == 3][xlen == 64] = true;
  }
  return t;
}

static void teardown(void) {
  for (unsigned i = 0; i < sizeof origins / sizeof *origins; i++)
    forget(&origins[i]);
  vxl_compiler_destroy(cc);
}
TestSuite(device, .init = setup, .fini = teardown, .timeout = 600);
#ifdef VXT_CORPUS_DIR
TestSuite(conformance, .init = setup, .fini = teardown, .timeout = 600);
#endif

static vxl_result build(const char *path) {
  vxl_options o = {.opt_level = 2};
  vxl_result r;
  cr_assert_eq(compile_file_kept(path, &o, &r), 0, "cannot read or compile %s", path);
  cr_assert(r.ok, "%s: %s", path, r.ndiags ? r.diags[0] : "");
  return r;
}

/* The result the last kernel() came from: launches take the module object
 * from it (the suites run one test at a time). */
static const vxl_result *kernel_owner;

static const vxl_kernel *kernel(const vxl_result *r, const char *name) {
  kernel_owner = r;
  for (uint32_t i = 0; i < r->nkernels; i++)
    if (!name || strcmp(r->kernels[i].name, name) == 0) return &r->kernels[i];
  cr_assert_fail("no kernel %s", name);
  return NULL;
}

/* Sorts the lines of text in place (printing order between warps is up to
 * the scheduler, as on hardware). */
static int cmp_lines(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }
static void sort_lines(const char *text, char *out, size_t cap) {
  char *copy = strdup(text), *lines[1024], *save = NULL;
  size_t n = 0;
  for (char *l = strtok_r(copy, "\n", &save); l && n < 1024; l = strtok_r(NULL, "\n", &save))
    lines[n++] = l;
  qsort(lines, n, sizeof *lines, cmp_lines);
  out[0] = '\0';
  for (size_t i = 0; i < n; i++)
    strncat(strncat(out, lines[i], cap - strlen(out) - 1), "\n", cap - strlen(out) - 1);
  free(copy);
}

/* Launches k on img on each of the ncfgs configurations, as a Vortex 2.x
 * device runs it and as 3.0's hardware scheduler runs the same module
 * compiled for 3.0, checks they all agree, and returns the device memory
 * afterwards (malloc()).  Each target's image is the module's, as the
 * runtime runs it: started at its dispatcher with k's launch record, or,
 * in a module of one kernel (no dispatcher), at k's entry with k's
 * argument buffer.
 * launch(): on every configuration of vxt_simt_matrix. */
static uint8_t *launch_on(const vxt_simt *cfgs, uint32_t ncfgs, const vxl_kernel *k, vxt_image *img,
                          const void *const *vals, uint32_t gx, uint32_t gy, uint32_t gz, uint32_t bx,
                          uint32_t by, uint32_t bz, uint32_t shared, char *printed, size_t cap) {
  uint32_t grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};
  const vxl_result *r = kernel_owner;
  cr_assert(r && k >= r->kernels && k < r->kernels + r->nkernels, "%s: look the kernel up with kernel()",
            k->name);
  const int dispatch = r->nkernels >= VXL_DISPATCH_MIN_KERNELS;
  uint32_t args = dispatch ? vxt_image_launch_record(img, k, vals, grid, block, shared)
                           : vxt_image_args(img, k, vals, grid, block, shared);
  cr_assert_neq(args, UINT32_MAX,
                "argument packing failed: %s nargs=%u launch=%u buffer=%u grid=%u,%u,%u block=%u,%u,%u",
                k->name, k->nargs, k->launch_offset, k->buffer_size, gx, gy, gz, bx, by, bz);
  /* every target: its own module and record, its own argument buffer
   * (appended to a copy of img; pointers widened on RV64), the block's
   * local memory as a 3.0 host computes it for the scheduler; the device
   * memory of img's bytes and the output must be the same everywhere */
  /* {vortex_abi, xlen, linked with upstream's kernel SDK}: the last four
   * only when it is there (vxt_upstream_sdk) */
  static const uint32_t targets[8][3] = {{2, 32, 0}, {3, 32, 0}, {2, 64, 0}, {3, 64, 0},
                                         {2, 32, 1}, {3, 32, 1}, {2, 64, 1}, {3, 64, 1}};
  const unsigned ntargets = vxt_upstream_sdk() ? 8 : 4;
  uint8_t *first = NULL;
  static char first_printed[8192], now_printed[8192], first_sorted[8192], now_sorted[8192];
  for (unsigned ti = 0; ti < ntargets; ti++) {
    uint32_t abi = targets[ti][0], xlen = targets[ti][1], upstream = targets[ti][2];
    const vxl_result *rr = target_of(r, abi, xlen);
    const vxl_kernel *kk = NULL;
    for (uint32_t i = 0; i < rr->nkernels && !kk; i++)
      if (strcmp(rr->kernels[i].name, k->name) == 0) kk = &rr->kernels[i];
    cr_assert_not_null(kk, "%s: not in the vortex%u-rv%u module", k->name, abi, xlen);
    if (xlen == 32)
      cr_assert(kk->buffer_size == k->buffer_size && kk->launch_offset == k->launch_offset,
                "%s: one argument layout for both ABIs", k->name);
    vxt_image im = {.p = malloc(img->size), .size = img->size, .cap = img->size};
    memcpy(im.p, img->p, img->size);
    /* 3.0 modules have no dispatcher: a launch names its kernel's entry */
    const int disp = dispatch && abi != 3;
    const uint32_t thdr = disp ? VXL_LAUNCH_RECORD_BYTES : 0;
    uint32_t a = args;
    if (xlen == 64 || disp != dispatch) {
      uint64_t wide[64];
      const void *wvals[64];
      cr_assert_leq(kk->nargs, 64);
      for (uint32_t i = 0; i < kk->nargs; i++) {
        wvals[i] = vals ? vals[i] : NULL;
        if (vals && xlen == 64 && kk->args[i].kind == VXL_ARG_POINTER) {
          uint32_t p32;
          memcpy(&p32, vals[i], sizeof p32);
          wide[i] = p32, wvals[i] = &wide[i];
        }
      }
      a = disp ? vxt_image_launch_record(&im, kk, wvals, grid, block, shared)
               : vxt_image_args(&im, kk, wvals, grid, block, shared);
      cr_assert_neq(a, UINT32_MAX, "%s: argument packing failed on vortex%u-rv%u", k->name, abi, xlen);
    }
    vxp_kernel w;
    cr_assert_eq(vxd_kernel_wire_view(kk, &w), 0);
    uint64_t lb = vxc_local_bytes(&w, block, shared);
    free(w.args);
    cr_assert_leq(lb, UINT32_MAX);
    vxs_kmu_launch kmu = {.grid = {gx, gy, gz}, .block = {bx, by, bz}, .local_bytes = (uint32_t)lb};
    uint8_t *elf = NULL;
    size_t elf_size = 0;
    cr_assert_eq(kk->kernel_id, k->kernel_id, "%s: one kernel id on every target", k->name);
    const char *start = disp ? VXL_DISPATCH_SYMBOL : kk->entry;
    const char *fail = upstream
                           ? vxt_device_link_sdk(vxt_upstream_sdk_of(xlen), rr->object, rr->object_size,
                                                 start, abi, &elf, &elf_size)
                           : vxt_device_link(rr->object, rr->object_size, start, abi, xlen, &elf, &elf_size);
    cr_assert_null(fail, "%s (vortex%u-rv%u%s): %s", k->name, abi, xlen, upstream ? ", upstream's SDK" : "",
                   fail);
    /* upstream's start code where its loader starts an image: the
     * STARTUP_ADDR of that XLEN */
    if (upstream)
      cr_assert_eq(vxr_elf_symbol(elf, elf_size, "_start"), xlen == 64 ? 0x180000000 : 0x80000000,
                   "%s (vortex%u-rv%u, upstream's SDK): _start at 0x%llx", k->name, abi, xlen,
                   (unsigned long long)vxr_elf_symbol(elf, elf_size, "_start"));
    for (uint32_t i = 0; i < ncfgs; i++) {
      const vxt_simt *cfg = &cfgs[i];
      uint8_t *mem = malloc(im.size);
      vxs_report rep;
      fail = vxt_device_run_on((int)upstream, elf, elf_size, xlen, &im, a, thdr + kk->launch_offset,
                               abi == 3 ? &kmu : NULL, cfg, 0, im.size, mem, &rep, now_printed,
                               sizeof now_printed);
      cr_assert_null(fail, "%s (vortex%u-rv%u%s): %s\n%s", k->name, abi, xlen,
                     upstream ? ", upstream's SDK" : "", fail, now_printed);
      cr_assert_eq(rep.exit_code, 0, "[%s] vx_spawn_threads returned %d", cfg->name, rep.exit_code);
      if (!first) {
        first = mem;
        memcpy(first_printed, now_printed, sizeof first_printed);
        sort_lines(first_printed, first_sorted, sizeof first_sorted);
        continue;
      }
      for (uint32_t b = 0; b < img->size; b++)
        cr_assert_eq(
            mem[b], first[b],
            "%s: device memory differs at offset %u between [%s] on vortex2-rv32 and [%s] on vortex%u-rv%u",
            k->name, b, cfgs[0].name, cfg->name, abi, xlen);
      sort_lines(now_printed, now_sorted, sizeof now_sorted);
      cr_assert_str_eq(
          now_sorted, first_sorted,
          "%s: output differs between [%s] on vortex2-rv32 and [%s] on vortex%u-rv%u\n%s\n---\n%s", k->name,
          cfgs[0].name, cfg->name, abi, xlen, first_printed, now_printed);
      free(mem);
    }
    free(elf);
    vxt_image_free(&im);
  }
  if (printed) snprintf(printed, cap, "%s", first_printed);
  return first;
}

static uint8_t *launch(const vxl_kernel *k, vxt_image *img, const void *const *vals, uint32_t gx, uint32_t gy,
                       uint32_t gz, uint32_t bx, uint32_t by, uint32_t bz, uint32_t shared, char *printed,
                       size_t cap) {
  return launch_on(vxt_simt_matrix, vxt_simt_matrix_len, k, img, vals, gx, gy, gz, bx, by, bz, shared,
                   printed, cap);
}

/* A deterministic pseudo-random sequence for inputs. */
static uint32_t rnd_state = 1;
static uint32_t rnd(void) { return rnd_state = rnd_state * 1664525u + 1013904223u; }
static float rndf(void) { return (float)(rnd() >> 8) / (float)(1u << 24) * 4.0f - 2.0f; }

static void assert_floats(const float *got, const float *want, uint32_t n, float tol, const char *what) {
  for (uint32_t i = 0; i < n; i++)
    cr_assert(fabsf(got[i] - want[i]) <= tol * (1.0f + fabsf(want[i])), "%s[%u] = %g, want %g", what, i,
              (double)got[i], (double)want[i]);
}

/* ---- the project's own kernels ---- */

static void run_saxpy(uint32_t n, uint32_t block) {
  vxl_result r = build(VXT_EXAMPLES_DIR "/saxpy.mlir");
  const vxl_kernel *k = kernel(&r, "saxpy");
  float *x = malloc(n * 4), *y = malloc(n * 4), *want = malloc(n * 4);
  for (uint32_t i = 0; i < n; i++)
    x[i] = rndf(), y[i] = rndf();
  float a = 1.75f;
  for (uint32_t i = 0; i < n; i++)
    want[i] = a * x[i] + y[i];
  vxt_image img = {0};
  uint32_t xo = vxt_image_put(&img, x, n * 4), yo = vxt_image_put(&img, y, n * 4);
  int32_t n32 = (int32_t)n;
  uint32_t xd = DEV(xo), yd = DEV(yo);
  const void *vals[] = {&n32, &a, &xd, &yd};
  uint8_t *mem = launch(k, &img, vals, (n + block - 1) / block, 1, 1, block, 1, 1, 0, NULL, 0);
  assert_floats((float *)(mem + yo), want, n, 1e-6f, "y");
  free(mem), free(x), free(y), free(want);
  vxt_image_free(&img);
  vxl_result_clear(&r);
}

/* A kernel's fault is reported at its source line, named as the object's
 * line tables name it: the file's name, never the directory it was
 * compiled from (that is the requester's, and objects are shared). */
Test(device, a_fault_names_the_kernel_source_line_by_file_name) {
  size_t len;
  char *src = vxt_read_file(VXT_EXAMPLES_DIR "/saxpy.mlir", &len);
  cr_assert_not_null(src);
  vxl_options o = {.opt_level = 2};
  vxl_result r;
  cr_assert_eq(compile_kept(src, len, "/home/someone/project/saxpy.mlir", &o, &r), 0);
  cr_assert(r.ok, "%s", r.ndiags ? r.diags[0] : "");
  free(src);
  const vxl_kernel *k = kernel(&r, "saxpy");
  vxt_image img = {0};
  float x[4] = {1, 2, 3, 4};
  uint32_t xd = DEV(vxt_image_put(&img, x, sizeof x)), yd = 0x10; /* y: unmapped */
  int32_t n = 4;
  float a = 2;
  const void *vals[] = {&n, &a, &xd, &yd};
  uint32_t grid[3] = {1, 1, 1}, block[3] = {4, 1, 1};
  uint32_t args = vxt_image_args(&img, k, vals, grid, block, 0);
  uint8_t *elf = NULL;
  size_t elf_size = 0;
  cr_assert_null(vxt_device_link(r.object, r.object_size, k->entry, 2, 32, &elf, &elf_size));
  uint8_t *mem = malloc(img.size);
  vxs_report rep;
  char printed[256];
  vxt_device_run(elf, elf_size, 32, &img, args, k->launch_offset, NULL, &vxt_simt_matrix[0], 0, img.size, mem,
                 &rep, printed, sizeof printed);
  cr_assert(strstr(rep.error, "Invalid memory read"), "%s", rep.error);
  cr_assert(strstr(rep.error, " at saxpy.mlir:14:15)"), "the load's line in the file: %s", rep.error);
  cr_assert_null(strstr(rep.error, "someone"), "no directory: %s", rep.error);
  free(mem), free(elf);
  vxt_image_free(&img);
  vxl_result_clear(&r);
}

/* Runs kernel `name` of device_assert.mlir on one block of 4 threads with
 * %limit = limit; *rep and what the device printed (printed, cap bytes);
 * the output words in out[4]. */
static void run_assert(const vxl_result *r, const char *name, int32_t limit, vxs_report *rep, char *printed,
                       size_t cap, int32_t out[4]) {
  const vxl_kernel *k = kernel(r, name);
  vxt_image img = {0};
  int32_t init[4] = {-1, -1, -1, -1};
  uint32_t oo = vxt_image_put(&img, init, sizeof init), od = DEV(oo);
  const void *vals[] = {&od, &limit};
  uint32_t grid[3] = {1, 1, 1}, block[3] = {4, 1, 1};
  /* the module's two kernels: its image starts at the dispatcher */
  cr_assert_geq(r->nkernels, VXL_DISPATCH_MIN_KERNELS);
  uint32_t args = vxt_image_launch_record(&img, k, vals, grid, block, 0);
  uint8_t *elf = NULL;
  size_t elf_size = 0;
  cr_assert_null(vxt_device_link(r->object, r->object_size, VXL_DISPATCH_SYMBOL, 2, 32, &elf, &elf_size));
  uint8_t *mem = malloc(img.size);
  vxt_device_run(elf, elf_size, 32, &img, args, VXL_LAUNCH_RECORD_BYTES + k->launch_offset, NULL,
                 &vxt_simt_matrix[0], 0, img.size, mem, rep, printed, cap);
  memcpy(out, mem + oo, 4 * sizeof *out);
  free(mem), free(elf);
  vxt_image_free(&img);
}

/* cf.assert on the device: as CUDA's assert, the failing threads print
 * where and what, and the launch stops with an error at that line; the
 * object references nothing a device image cannot link (the upstream
 * lowering called the host's puts and abort). */
Test(device, a_failed_assert_prints_its_position_and_stops_the_launch) {
  vxl_result r = build(VXT_KERNELS_DIR "/device_assert.mlir");
  cr_assert_not(vxt_elf_has_symbol(r.object, r.object_size, "puts", 0), "no host puts");
  cr_assert_not(vxt_elf_has_symbol(r.object, r.object_size, "abort", 0), "no host abort");
  vxs_report rep;
  char printed[1024];
  int32_t out[4];
  run_assert(&r, "checked", 4, &rep, printed, sizeof printed, out);
  cr_assert_eq(rep.error[0], '\0', "every assertion holds: %s", rep.error);
  for (int i = 0; i < 4; i++)
    cr_assert_eq(out[i], i);
  run_assert(&r, "checked", 2, &rep, printed, sizeof printed, out);
  cr_assert_neq(rep.error[0], '\0', "the launch fails");
  cr_assert(strstr(rep.error, " at device_assert.mlir:9:"), "at the assert's line: %s", rep.error);
  cr_assert(strstr(printed, "device_assert.mlir:9:7: assertion failed: index below the limit (100% sure)\n"),
            "printed: %s", printed);
  const char *second = strstr(printed, "assertion failed");
  cr_assert(second && strstr(second + 1, "assertion failed") &&
                !strstr(strstr(second + 1, "assertion failed") + 1, "assertion failed"),
            "threads 2 and 3 fail, each says so once: %s", printed);
  run_assert(&r, "checked_at_call_site", 0, &rep, printed, sizeof printed, out);
  cr_assert_neq(rep.error[0], '\0');
  cr_assert(strstr(printed, "helper.cu:7:3: assertion failed: inlined from elsewhere\n"), "printed: %s",
            printed);
  vxl_result_clear(&r);
}

Test(device, saxpy_several_shapes) {
  run_saxpy(1000, 64);
  run_saxpy(37, 16); /* not a multiple of the block */
  run_saxpy(5, 8);   /* fewer elements than one block */
}

/* C = A * B with kernel `name` of file (signature a, b, c, m, n, k), on
 * bx x by blocks covering C, checked against a C reference. */
static void run_sgemm(const char *file, const char *name, uint32_t m, uint32_t n, uint32_t kk, uint32_t bx,
                      uint32_t by) {
  vxl_result r = build(file);
  const vxl_kernel *k = kernel(&r, name);
  float *a = malloc(m * kk * 4), *b = malloc(kk * n * 4), *want = calloc(m * n, 4);
  for (uint32_t i = 0; i < m * kk; i++)
    a[i] = rndf();
  for (uint32_t i = 0; i < kk * n; i++)
    b[i] = rndf();
  for (uint32_t i = 0; i < m; i++)
    for (uint32_t j = 0; j < n; j++) {
      float s = 0;
      for (uint32_t p = 0; p < kk; p++)
        s += a[i * kk + p] * b[p * n + j];
      want[i * n + j] = s;
    }
  vxt_image img = {0};
  uint32_t ao = vxt_image_put(&img, a, m * kk * 4), bo = vxt_image_put(&img, b, kk * n * 4);
  uint32_t co = vxt_image_put(&img, NULL, m * n * 4);
  uint32_t ad = DEV(ao), bd = DEV(bo), cd = DEV(co);
  const void *vals[] = {&ad, &bd, &cd, &m, &n, &kk};
  uint8_t *mem = launch(k, &img, vals, (n + bx - 1) / bx, (m + by - 1) / by, 1, bx, by, 1, 0, NULL, 0);
  assert_floats((float *)(mem + co), want, m * n, 1e-5f, "C");
  free(mem), free(a), free(b), free(want);
  vxt_image_free(&img);
  vxl_result_clear(&r);
}

Test(device, naive_sgemm_2d_grid) {
  run_sgemm(VXT_KERNELS_DIR "/sgemm_naive.mlir", "sgemm_naive", 16, 16, 16, 8, 8);
  run_sgemm(VXT_KERNELS_DIR "/sgemm_naive.mlir", "sgemm_naive", 19, 13, 7, 4, 8); /* ragged edges */
}

Test(device, tiled_sgemm_with_shared_memory_and_two_barriers_per_tile) {
  vxl_result r = build(VXT_KERNELS_DIR "/sgemm_tiled.mlir");
  const vxl_kernel *k = kernel(&r, "sgemm_tiled");
  cr_assert_eq(k->shared_bytes, 2 * 8 * 8 * 4, "two 8x8 f32 tiles");
  vxl_result_clear(&r);
  run_sgemm(VXT_KERNELS_DIR "/sgemm_tiled.mlir", "sgemm_tiled", 16, 16, 16, 8, 8);
  run_sgemm(VXT_KERNELS_DIR "/sgemm_tiled.mlir", "sgemm_tiled", 21, 10, 19, 8, 8); /* partial tiles */
}

Test(device, block_reduction_over_a_workgroup_global) {
  vxl_result r = build(VXT_KERNELS_DIR "/block_reduce.mlir");
  const vxl_kernel *k = kernel(&r, "block_sum");
  cr_assert_eq(k->shared_bytes, 64 * 4);
  uint32_t n = 1000, blocks = (n + 63) / 64;
  int32_t *in = malloc(n * 4);
  for (uint32_t i = 0; i < n; i++)
    in[i] = (int32_t)(rnd() % 2001) - 1000;
  vxt_image img = {0};
  uint32_t io = vxt_image_put(&img, in, n * 4), oo = vxt_image_put(&img, NULL, blocks * 4);
  uint32_t id = DEV(io), od = DEV(oo);
  const void *vals[] = {&id, &od, &n};
  uint8_t *mem = launch(k, &img, vals, blocks, 1, 1, 64, 1, 1, 0, NULL, 0);
  const int32_t *out = (const int32_t *)(mem + oo);
  for (uint32_t b = 0; b < blocks; b++) {
    int32_t want = 0;
    for (uint32_t i = b * 64; i < n && i < b * 64 + 64; i++)
      want += in[i];
    cr_assert_eq(out[b], want, "block %u", b);
  }
  free(mem), free(in);
  vxt_image_free(&img);
  vxl_result_clear(&r);
}

Test(device, dynamic_shared_memory_sized_by_the_launch) {
  vxl_result r = build(VXT_KERNELS_DIR "/dynamic_shared.mlir");
  const vxl_kernel *k = kernel(&r, "reverse_block");
  cr_assert_eq(k->shared_bytes, 16, "only the static 4 x i32 buffer is static");
  uint32_t bs[] = {32, 100};
  for (int t = 0; t < 2; t++) {
    uint32_t blocks = 3, n = blocks * bs[t];
    float *in = malloc(n * 4);
    for (uint32_t i = 0; i < n; i++)
      in[i] = rndf();
    vxt_image img = {0};
    uint32_t io = vxt_image_put(&img, in, n * 4), oo = vxt_image_put(&img, NULL, n * 4);
    uint32_t id = DEV(io), od = DEV(oo);
    const void *vals[] = {&id, &od};
    uint8_t *mem = launch(k, &img, vals, blocks, 1, 1, bs[t], 1, 1, bs[t] * 4, NULL, 0);
    const float *out = (const float *)(mem + oo);
    for (uint32_t b = 0; b < blocks; b++)
      for (uint32_t i = 0; i < bs[t]; i++)
        cr_assert_eq(out[b * bs[t] + i], in[b * bs[t] + bs[t] - 1 - i] + 7.0f, "block %u thread %u", b, i);
    free(mem), free(in);
    vxt_image_free(&img);
  }
  vxl_result_clear(&r);
}

Test(device, polygeist_extern_shared_goes_after_the_static_buffers) {
  /* `= uninitialized` one-element globals are the dynamic area; a static
   * tile beside one must not overlap it */
  vxl_result r = build(VXT_KERNELS_DIR "/extern_shared.mlir");
  const vxl_kernel *k = kernel(&r, "reverse_with_tile");
  cr_assert_eq(k->shared_bytes, 32, "static bytes only: the 8 x f32 tile, got %u", k->shared_bytes);
  uint32_t bs[] = {8, 24, 40};
  for (int t = 0; t < 3; t++) {
    uint32_t blocks = 3, n = blocks * bs[t];
    float *in = malloc(n * 4);
    for (uint32_t i = 0; i < n; i++)
      in[i] = rndf();
    vxt_image img = {0};
    uint32_t io = vxt_image_put(&img, in, n * 4), oo = vxt_image_put(&img, NULL, n * 4);
    uint32_t id = DEV(io), od = DEV(oo);
    const void *vals[] = {&id, &od};
    uint8_t *mem = launch(k, &img, vals, blocks, 1, 1, bs[t], 1, 1, bs[t] * 4, NULL, 0);
    const float *out = (const float *)(mem + oo);
    for (uint32_t b = 0; b < blocks; b++)
      for (uint32_t i = 0; i < bs[t]; i++) {
        const float *blk = in + b * bs[t];
        cr_assert_eq(out[b * bs[t] + i], blk[bs[t] - 1 - i] + 2.0f * blk[i % 8], "B=%u block %u thread %u",
                     bs[t], b, i);
      }
    free(mem), free(in);
    vxt_image_free(&img);
  }
  /* a real one-element __shared__ variable, launched without dynamic bytes */
  k = kernel(&r, "one_shared_var");
  cr_assert_eq(k->shared_bytes, 32, "the module's static globals are laid out for every kernel");
  vxt_image img = {0};
  uint32_t oo = vxt_image_put(&img, NULL, 5 * 12 * 4), od = DEV(oo);
  const void *vals[] = {&od};
  uint8_t *mem = launch(k, &img, vals, 5, 1, 1, 12, 1, 1, 0, NULL, 0);
  const int32_t *out = (const int32_t *)(mem + oo);
  for (int32_t g = 0; g < 60; g++)
    cr_assert_eq(out[g], 5 + g / 12 + g % 12, "out[%d] = %d", g, out[g]);
  free(mem);
  vxt_image_free(&img);
  vxl_result_clear(&r);
}

Test(device, stencil_3d_grid_and_block) {
  vxl_result r = build(VXT_KERNELS_DIR "/stencil3d.mlir");
  const vxl_kernel *k = kernel(&r, "stencil7");
  cr_assert_eq(k->grid_dims, 3);
  uint32_t nx = 11, ny = 7, nz = 6, n = nx * ny * nz;
  float *in = malloc(n * 4), *want = calloc(n, 4), c0 = 0.5f, c1 = 0.125f;
  for (uint32_t i = 0; i < n; i++)
    in[i] = rndf();
  for (uint32_t z = 1; z + 1 < nz; z++)
    for (uint32_t y = 1; y + 1 < ny; y++)
      for (uint32_t x = 1; x + 1 < nx; x++) {
        uint32_t p = (z * ny + y) * nx + x;
        float s1 = in[p - 1] + in[p + 1], s2 = in[p - nx] + in[p + nx],
              s3 = in[p - nx * ny] + in[p + nx * ny];
        want[p] = c0 * in[p] + c1 * ((s1 + s2) + s3);
      }
  vxt_image img = {0};
  uint32_t io = vxt_image_put(&img, in, n * 4), oo = vxt_image_put(&img, NULL, n * 4);
  uint32_t id = DEV(io), od = DEV(oo);
  const void *vals[] = {&id, &od, &nx, &ny, &nz, &c0, &c1};
  uint8_t *mem = launch(k, &img, vals, 3, 2, 2, 4, 4, 3, 0, NULL, 0);
  assert_floats((float *)(mem + oo), want, n, 1e-6f, "out");
  free(mem), free(in), free(want);
  vxt_image_free(&img);
  vxl_result_clear(&r);
}

static int32_t control_ref(uint32_t i, int32_t v) {
  int32_t steps = 0;
  uint32_t x = (uint32_t)v;
  while (x != 1)
    x = (x & 1) ? 3 * x + 1 : x / 2, steps++;
  int32_t sel = (i % 4 == 0) ? 7 : (i % 4 == 1) ? ((i % 3 == 0) ? 100 : (i % 3 == 1) ? 200 : 300) : 11;
  int32_t nest = 0;
  for (uint32_t j = 0; j < i % 5; j++)
    for (uint32_t kk = 0; kk <= j; kk++)
      nest += (kk & 1) ? (int32_t)kk : -(int32_t)kk;
  return steps * 1000 + sel + nest;
}

Test(device, control_flow_while_switch_divergent_ifs) {
  vxl_result r = build(VXT_KERNELS_DIR "/control_flow.mlir");
  const vxl_kernel *k = kernel(&r, "control");
  uint32_t n = 203;
  int32_t *in = malloc(n * 4);
  for (uint32_t i = 0; i < n; i++)
    in[i] = 1 + (int32_t)(rnd() % 97);
  vxt_image img = {0};
  uint32_t io = vxt_image_put(&img, in, n * 4), oo = vxt_image_put(&img, NULL, n * 4);
  uint32_t id = DEV(io), od = DEV(oo);
  const void *vals[] = {&id, &od, &n};
  uint8_t *mem = launch(k, &img, vals, 7, 1, 1, 32, 1, 1, 0, NULL, 0);
  const int32_t *out = (const int32_t *)(mem + oo);
  for (uint32_t i = 0; i < n; i++)
    cr_assert_eq(out[i], control_ref(i, in[i]), "out[%u] (in %d)", i, in[i]);
  free(mem), free(in);
  vxt_image_free(&img);
  vxl_result_clear(&r);
}

/* The C reference of tests/kernels/unstructured.mlir for thread g < n. */
static int32_t unstructured_ref(int32_t g, int32_t n) {
  int32_t s = 0;
  for (int32_t k = 0; k < g % 7; k++)
    s += k;
  if (g & 1) s += 1000;
  return n > 100 ? -s : s;
}

Test(device, unstructured_cf_early_return_loop_if_and_switch) {
  /* cf branches on thread ids: split/join on an early return and an
   * if-then, vx_pred on a cf loop exit; n % block != 0 leaves threads out */
  vxl_result r = build(VXT_KERNELS_DIR "/unstructured.mlir");
  const vxl_kernel *k = kernel(&r, "unstructured");
  const int32_t sizes[] = {45, 150};
  for (int t = 0; t < 2; t++) {
    int32_t n = sizes[t];
    uint32_t cap = 160;
    int32_t *init = malloc(cap * 4);
    for (uint32_t i = 0; i < cap; i++)
      init[i] = 0x5EED;
    vxt_image img = {0};
    uint32_t oo = vxt_image_put(&img, init, cap * 4), od = DEV(oo);
    const void *vals[] = {&od, &n};
    uint32_t block = 16, grid = ((uint32_t)n + block - 1) / block;
    uint8_t *mem = launch(k, &img, vals, grid, 1, 1, block, 1, 1, 0, NULL, 0);
    const int32_t *out = (const int32_t *)(mem + oo);
    for (int32_t i = 0; i < (int32_t)cap; i++)
      cr_assert_eq(out[i], i < n ? unstructured_ref(i, n) : 0x5EED, "n=%d out[%d]", n, i);
    free(mem), free(init);
    vxt_image_free(&img);
  }
  /* a thread-dependent cf.switch with case arguments, three scf.yield exits */
  k = kernel(&r, "switch_exits");
  int32_t n = 77;
  vxt_image img = {0};
  uint32_t oo = vxt_image_put(&img, NULL, 80 * 4), od = DEV(oo);
  const void *vals[] = {&od, &n};
  uint8_t *mem = launch(k, &img, vals, 5, 1, 1, 16, 1, 1, 0, NULL, 0);
  const int32_t *out = (const int32_t *)(mem + oo);
  for (int32_t g = 0; g < 80; g++) {
    int32_t q = g % 5, want = q == 0 ? g + 10 : q == 2 ? g - 3 * q : 3 * q;
    cr_assert_eq(out[g], g < n ? want : 0, "out[%d]", g);
  }
  free(mem);
  vxt_image_free(&img);
  vxl_result_clear(&r);
}

/* Runs kernel `name` of else_if_chain.mlir over n elements (out starts at
 * 0x5EED) with blocks of `block` threads and returns out (malloc()). */
static int32_t *run_chain(const vxl_result *r, const char *name, int32_t n, uint32_t block) {
  const vxl_kernel *k = kernel(r, name);
  uint32_t cap = (uint32_t)n + 8;
  int32_t *init = malloc(cap * 4);
  for (uint32_t i = 0; i < cap; i++)
    init[i] = 0x5EED;
  vxt_image img = {0};
  uint32_t oo = vxt_image_put(&img, init, cap * 4), od = DEV(oo);
  const void *vals[] = {&od, &n};
  uint8_t *mem = launch(k, &img, vals, ((uint32_t)n + block - 1) / block, 1, 1, block, 1, 1, 0, NULL, 0);
  memcpy(init, mem + oo, cap * 4);
  free(mem);
  vxt_image_free(&img);
  return init;
}

Test(device, if_else_if_chains_whose_arms_meet_in_one_block) {
  /* arms that share their merge block (block merging makes them one block
   * entered from several branches) are cloned per branch, then placed */
  vxl_result r = build(VXT_KERNELS_DIR "/else_if_chain.mlir");
  const int32_t n = 61;
  const uint32_t blocks[] = {7, 16, 33};
  for (int bi = 0; bi < 3; bi++) {
    int32_t *out = run_chain(&r, "ladder", n, blocks[bi]);
    for (int32_t g = 0; g < n + 8; g++) {
      int32_t m = g % 4, want = m == 0 ? 10 * g : m == 1 ? g + 7 : m == 2 ? -g : 3;
      cr_assert_eq(out[g], g < n ? want : 0x5EED, "ladder block %u out[%d] = %d", blocks[bi], g, out[g]);
    }
    free(out);
    out = run_chain(&r, "switch_break", n, blocks[bi]);
    for (int32_t g = 0; g < n + 8; g++) {
      int32_t m = g % 3, want = g < n && m < 2 ? 100 + m : 0x5EED;
      cr_assert_eq(out[g], want, "switch_break block %u out[%d] = %d", blocks[bi], g, out[g]);
    }
    free(out);
    out = run_chain(&r, "nested_ladder", n, blocks[bi]);
    for (int32_t g = 0; g < n + 8; g++) {
      int32_t want = g & 1 ? 1 + g % 3 : 4;
      cr_assert_eq(out[g], g < n ? want + 1000 : 0x5EED, "nested_ladder block %u out[%d] = %d", blocks[bi], g,
                   out[g]);
    }
    free(out);
  }
  vxl_result_clear(&r);
}

Test(device, thread_dependent_selects_and_min_max) {
  /* RV32IMAF has no conditional move: a select becomes a branch */
  vxl_result r = build(VXT_KERNELS_DIR "/selects.mlir");
  const int32_t n = 45;
  int32_t *out = run_chain(&r, "selects", n, 16);
  for (int32_t g = 0; g < n + 8; g++) {
    int32_t want = (g % 3 == 0 ? g * 5 : g + 100) + (g % 7 > 3 ? g % 7 : 3) + (g < 20 ? g : 20) +
                   (g % 2 == 0 ? 1 : -1) * (g < 9 ? g : 9);
    cr_assert_eq(out[g], g < n ? want : 0x5EED, "out[%d] = %d, want %d", g, out[g], want);
  }
  free(out);
  /* i64 and f64: shifts by a thread-dependent amount and pair comparisons */
  const vxl_kernel *k = kernel(&r, "wide");
  vxt_image img = {0};
  uint32_t o64 = vxt_image_put(&img, NULL, 48 * 8), of = vxt_image_put(&img, NULL, 48 * 8);
  uint32_t d64 = DEV(o64), df = DEV(of);
  const void *vals[] = {&d64, &df, &n};
  uint8_t *mem = launch(k, &img, vals, 3, 1, 1, 16, 1, 1, 0, NULL, 0);
  const int64_t *w64 = (const int64_t *)(mem + o64);
  const double *wf = (const double *)(mem + of);
  for (int32_t g = 0; g < n; g++) {
    int64_t x = (int64_t)(g + 1) << (g % 40), y = x > (1 << 20) ? x >> 7 : x * 3;
    int64_t want = (y > 1000 ? y : 1000) - (x < (int64_t)g * 100000 ? x : (int64_t)g * 100000);
    cr_assert_eq(w64[g], want, "out64[%d] = %lld, want %lld", g, (long long)w64[g], (long long)want);
    cr_assert_eq(wf[g], g % 3 == 1 ? 0.5 * g : -(double)g, "outf[%d] = %g", g, wf[g]);
  }
  free(mem);
  vxt_image_free(&img);
  vxl_result_clear(&r);
}

Test(device, divergent_loops_and_ifs_nested_in_each_other) {
  vxl_result r = build(VXT_KERNELS_DIR "/nested_divergence.mlir");
  const vxl_kernel *k = kernel(&r, "nested_loops");
  const uint32_t n = 70;
  vxt_image img = {0};
  uint32_t o1 = vxt_image_put(&img, NULL, n * 4), o2 = vxt_image_put(&img, NULL, n * 4);
  uint32_t d1 = DEV(o1), d2 = DEV(o2);
  int32_t nn = (int32_t)n;
  const void *vals[] = {&d1, &d2, &nn};
  uint8_t *mem = launch(k, &img, vals, 5, 1, 1, 14, 1, 1, 0, NULL, 0);
  const int32_t *out = (const int32_t *)(mem + o1), *steps = (const int32_t *)(mem + o2);
  for (uint32_t g = 0; g < n; g++) {
    int32_t want = 0;
    for (uint32_t i = 0; i < g % 5; i++)
      want += i & 1 ? (int32_t)(i * (i - 1) / 2) : 100;
    int32_t st = 0;
    for (uint32_t v = g; v > 1; st++)
      v = v % 2 == 0 ? v / 2 : 3 * v + 1;
    cr_assert_eq(out[g], want, "out[%u] = %d, want %d", g, out[g], want);
    cr_assert_eq(steps[g], st, "steps[%u] = %d, want %d", g, steps[g], st);
  }
  free(mem);
  vxt_image_free(&img);
  vxl_result_clear(&r);
}

Test(device, thread_dependent_values_in_private_memory) {
  /* the uniformity analysis took loads from one private address as uniform;
   * the loop then left without vx_pred and the warp split on hardware */
  vxl_result r = build(VXT_KERNELS_DIR "/private_memory.mlir");
  const int32_t n = 45;
  int32_t *out = run_chain(&r, "private_trip_count", n, 16);
  for (int32_t g = 0; g < n; g++) {
    int32_t want = (g % 4) * (g % 4 - 1) / 2 + (g & 1 ? 100 : 0);
    cr_assert_eq(out[g], want, "out[%d] = %d, want %d", g, out[g], want);
  }
  free(out);
  vxl_result_clear(&r);
}

Test(device, same_kernel_and_helper_names_in_two_gpu_modules) {
  /* each @apply must call its own module's @op */
  vxl_result r = build(VXT_KERNELS_DIR "/two_modules.mlir");
  cr_assert_eq(r.nkernels, 3);
  const char *names[3] = {"add::apply", "mul::apply", "scale"};
  for (int t = 0; t < 3; t++) {
    const vxl_kernel *k = kernel(&r, names[t]);
    uint32_t n = 37;
    vxt_image img = {0};
    uint32_t oo = vxt_image_put(&img, NULL, n * 4), od = DEV(oo);
    const void *vals[] = {&od, &n};
    uint8_t *mem = launch(k, &img, vals, 3, 1, 1, 16, 1, 1, 0, NULL, 0);
    const int32_t *out = (const int32_t *)(mem + oo);
    for (int32_t i = 0; i < (int32_t)n; i++)
      cr_assert_eq(out[i], t == 0 ? i + 1 : t == 1 ? 3 * i : 5 * i, "%s: out[%d]", names[t], i);
    free(mem);
    vxt_image_free(&img);
  }
  vxl_result_clear(&r);
}

Test(device, i64_and_f64_arithmetic) {
  vxl_result r = build(VXT_KERNELS_DIR "/wide_types.mlir");
  const vxl_kernel *k = kernel(&r, "wide");
  cr_assert_eq(k->args[1].offset, 8, "i64 after a pointer is 8-aligned");
  uint32_t n = 45;
  int64_t *a = malloc(n * 8), *wq = malloc(n * 8), b = -123456789012LL;
  double *x = malloc(n * 8), *wr = malloc(n * 8);
  int16_t *sm = malloc(n * 2);
  for (uint32_t i = 0; i < n; i++) {
    a[i] = ((int64_t)rnd() << 20) - ((int64_t)rnd() << 3);
    x[i] = (double)rndf() * 1e6;
    sm[i] = (int16_t)(rnd() & 0xffff);
    wq[i] = (a[i] * 3 + (a[i] >> 7) - b) / 5;
    wr[i] = x[i] * 0.5 + (double)sm[i] / 3.0;
  }
  vxt_image img = {0};
  uint32_t ao = vxt_image_put(&img, a, n * 8), qo = vxt_image_put(&img, NULL, n * 8);
  uint32_t xo = vxt_image_put(&img, x, n * 8), so = vxt_image_put(&img, sm, n * 2);
  uint32_t ro = vxt_image_put(&img, NULL, n * 8);
  uint32_t ad = DEV(ao), qd = DEV(qo), xd = DEV(xo), sd = DEV(so), rd = DEV(ro);
  int32_t n32 = (int32_t)n;
  const void *vals[] = {&ad, &b, &qd, &xd, &sd, &rd, &n32};
  uint8_t *mem = launch(k, &img, vals, 3, 1, 1, 16, 1, 1, 0, NULL, 0);
  const int64_t *q = (const int64_t *)(mem + qo);
  const double *rr = (const double *)(mem + ro);
  for (uint32_t i = 0; i < n; i++) {
    cr_assert_eq(q[i], wq[i], "q[%u] = %lld, want %lld", i, (long long)q[i], (long long)wq[i]);
    cr_assert_eq(rr[i], wr[i], "r[%u] = %.17g, want %.17g", i, rr[i], wr[i]);
  }
  free(mem), free(a), free(wq), free(x), free(wr), free(sm);
  vxt_image_free(&img);
  vxl_result_clear(&r);
}

Test(device, mixed_width_arguments_land_where_the_kernel_reads_them) {
  vxl_result r = build(VXT_EXAMPLES_DIR "/mixed_args.mlir");
  const vxl_kernel *k = kernel(&r, "scale_offset");
  uint32_t n = 50;
  int8_t flag = -3;
  int64_t bias = 1LL << 40;
  int16_t shift = 3;
  double scale = 2.5;
  vxt_image img = {0};
  uint32_t oo = vxt_image_put(&img, NULL, n * 8);
  uint32_t od = DEV(oo);
  const void *vals[] = {&flag, &bias, &shift, &scale, &od, &n};
  uint8_t *mem = launch(k, &img, vals, 4, 1, 1, 16, 1, 1, 0, NULL, 0);
  const int64_t *out = (const int64_t *)(mem + oo);
  for (uint32_t i = 0; i < n; i++) {
    int64_t want = ((int64_t)((double)i * scale) << shift) + bias + flag;
    cr_assert_eq(out[i], want, "out[%u] = %lld, want %lld", i, (long long)out[i], (long long)want);
  }
  free(mem);
  vxt_image_free(&img);
  vxl_result_clear(&r);
}

/* The module's one image runs each of its kernels in turn on one device,
 * loaded once: fill, then transpose_add, then fill again over the first
 * fill's output, each picked by the id in its launch record (2.x: the
 * image starts at the dispatcher) or by the entry PC the launch names
 * (3.0: CSR 0xCE1, no dispatcher), on every target. */
Test(device, one_image_runs_every_kernel_of_its_module_on_one_device) {
  vxl_result r = build(VXT_EXAMPLES_DIR "/two_kernels.mlir");
  const uint32_t n = 40, rows = 3;
  static const uint32_t targets[4][2] = {{2, 32}, {3, 32}, {2, 64}, {3, 64}};
  for (unsigned ti = 0; ti < 4; ti++) {
    uint32_t abi = targets[ti][0], xlen = targets[ti][1];
    const vxl_result *rr = target_of(&r, abi, xlen);
    const vxl_kernel *fill = &rr->kernels[0], *ta = &rr->kernels[1];
    cr_assert(strcmp(fill->name, "fill") == 0 && fill->kernel_id == 0 && ta->kernel_id == 1);
    vxt_image img = {0};
    uint32_t oo = vxt_image_put(&img, NULL, n * 4), ao = vxt_image_put(&img, NULL, rows * 64),
             bo = vxt_image_put(&img, NULL, rows * 64);
    for (uint32_t i = 0; i < rows * 16; i++)
      ((float *)(img.p + ao))[i] = (float)i;
    uint64_t od = DEV(oo), ad = DEV(ao), bd = DEV(bo); /* little-endian: the low 4 bytes on RV32 */
    float v1 = 1.5f, v2 = -2.0f;
    uint32_t g1[3] = {2, 1, 1}, b1[3] = {32, 1, 1}, g2[3] = {1, rows, 1}, b2[3] = {16, 16, 1};
    const void *f1[] = {&v1, &od, &n}, *f2[] = {&v2, &od, &rows}, *tv[] = {&ad, &bd, &rows};
    const int by_entry = abi == 3;
    const uint32_t *grids[3] = {g1, g2, g1}, *blocks[3] = {b1, b2, b1};
    const vxl_kernel *ks[3] = {fill, ta, fill};
    const void *const *vals[3] = {f1, tv, f2};
    uint32_t rec[3];
    for (int l = 0; l < 3; l++)
      rec[l] = by_entry ? vxt_image_args(&img, ks[l], vals[l], grids[l], blocks[l], 0)
                        : vxt_image_launch_record(&img, ks[l], vals[l], grids[l], blocks[l], 0);
    uint8_t *elf = NULL;
    size_t elf_size = 0;
    const char *fail =
        vxt_device_link(rr->object, rr->object_size, by_entry ? fill->entry : VXL_DISPATCH_SYMBOL, abi, xlen,
                        &elf, &elf_size);
    cr_assert_null(fail, "vortex%u-rv%u: %s", abi, xlen, fail);
    vxs_config c;
    vxs_config_default(&c);
    c.warps_per_core = 64;
    c.barriers = 0;    /* vxs default: one per warp */
    c.ipdom_depth = 0; /* vxs default: 2 x threads per warp */
    c.local_mem_bytes = 1u << 20;
    c.xlen = xlen;
    vxs_device *dev = NULL;
    const char *why = NULL;
    cr_assert_eq(vxs_device_create(&c, &dev), 0);
    cr_assert_eq(vxs_load_elf(dev, elf, elf_size, &why), 0, "%s", why ? why : "");
    cr_assert_eq(vxs_mem_map(dev, VXT_MEM_BASE, (img.size + 4095u) & ~4095u), 0);
    cr_assert_eq(vxs_mem_write(dev, VXT_MEM_BASE, img.p, img.size), 0);
    for (int l = 0; l < 3; l++) { /* the rows x 16 launch: less than the matrix, one block per row */
      vxp_kernel w;
      cr_assert_eq(vxd_kernel_wire_view(ks[l], &w), 0);
      uint64_t lb = vxc_local_bytes(&w, blocks[l], 0);
      free(w.args);
      vxs_kmu_launch kmu = {.local_bytes = (uint32_t)lb};
      memcpy(kmu.grid, grids[l], sizeof kmu.grid);
      memcpy(kmu.block, blocks[l], sizeof kmu.block);
      if (by_entry) {
        int64_t pc = vxr_elf_symbol(elf, elf_size, ks[l]->entry);
        cr_assert_gt(pc, 0, "%s: no entry %s", ks[l]->name, ks[l]->entry);
        kmu.entry = (uint32_t)pc;
      }
      vxs_report rep;
      memset(&rep, 0, sizeof rep);
      int rc = abi == 3 ? vxs_run_kmu(dev, DEV(rec[l]), &kmu, &rep) : vxs_run(dev, DEV(rec[l]), &rep);
      cr_assert_eq(rc, 0, "vortex%u-rv%u launch %d: %s", abi, xlen, l, rep.error);
      cr_assert_eq(rep.exit_code, 0, "vortex%u-rv%u launch %d returned %d", abi, xlen, l, rep.exit_code);
    }
    float out[40], b[48];
    cr_assert_eq(vxs_mem_read(dev, DEV(oo), out, sizeof out), 0);
    cr_assert_eq(vxs_mem_read(dev, DEV(bo), b, sizeof b), 0);
    for (uint32_t i = 0; i < n; i++)
      cr_assert_eq(out[i], i < rows ? v2 : v1, "vortex%u-rv%u out[%u] = %g", abi, xlen, i, (double)out[i]);
    for (uint32_t i = 0; i < rows * 16; i++)
      cr_assert_eq(b[i], 2.0f * (float)i, "vortex%u-rv%u b[%u] = %g", abi, xlen, i, (double)b[i]);
    /* an id the module has not: the dispatcher returns -1 and runs nothing */
    uint8_t *bad = img.p + rec[0];
    bad[0] = 7;
    cr_assert_eq(vxs_mem_write(dev, DEV(rec[0]), bad, 4), 0);
    vxs_report rep;
    memset(&rep, 0, sizeof rep);
    if (abi == 2) {
      cr_assert_eq(vxs_run(dev, DEV(rec[0]), &rep), 0, "%s", rep.error);
      cr_assert_eq(rep.exit_code, -1, "kernel id 7 of 2");
      cr_assert_eq(vxs_mem_read(dev, DEV(oo), out, sizeof out), 0);
      cr_assert_eq(out[n - 1], v1, "nothing ran");
    }
    vxs_device_destroy(dev);
    free(elf);
    vxt_image_free(&img);
  }
  vxl_result_clear(&r);
}

Test(device, module_with_two_kernels_and_a_barrier) {
  vxl_result r = build(VXT_EXAMPLES_DIR "/two_kernels.mlir");
  cr_assert_eq(r.nkernels, 2);
  /* kernel 1: fill */
  const vxl_kernel *fill = kernel(&r, "fill");
  uint32_t n = 77;
  float v = 3.25f;
  vxt_image img = {0};
  uint32_t oo = vxt_image_put(&img, NULL, n * 4);
  uint32_t od = DEV(oo);
  const void *fv[] = {&v, &od, &n};
  uint8_t *mem = launch(fill, &img, fv, 3, 1, 1, 32, 1, 1, 0, NULL, 0);
  for (uint32_t i = 0; i < n; i++)
    cr_assert_eq(((float *)(mem + oo))[i], v);
  free(mem);
  vxt_image_free(&img);
  /* kernel 2: copy a rows x 16 matrix, barrier, double it in place */
  const vxl_kernel *ta = kernel(&r, "transpose_add");
  uint32_t rows = 40;
  float *a = malloc(rows * 16 * 4);
  for (uint32_t i = 0; i < rows * 16; i++)
    a[i] = rndf();
  uint32_t ao = vxt_image_put(&img, a, rows * 64), bo = vxt_image_put(&img, NULL, rows * 64);
  uint32_t ad = DEV(ao), bd = DEV(bo);
  const void *tv[] = {&ad, &bd, &rows};
  mem = launch(ta, &img, tv, 1, 3, 1, 16, 16, 1, 0, NULL, 0);
  const float *b = (const float *)(mem + bo);
  for (uint32_t i = 0; i < rows * 16; i++)
    cr_assert_eq(b[i], a[i] + a[i], "b[%u]", i);
  free(mem), free(a);
  vxt_image_free(&img);
  vxl_result_clear(&r);
}

Test(device, kernels_of_every_piece_of_a_large_module_run) {
  size_t len;
  char *src = vxt_many_kernels(2 * VXL_PIECE_KERNELS + 6, &len); /* three pieces */
  vxl_result r;
  cr_assert_eq(compile_kept(src, len, "many.mlir", &(vxl_options){.opt_level = 2}, &r), 0);
  cr_assert(r.ok, "%s", r.ndiags ? r.diags[0] : "");
  cr_assert_eq(vxl_piece_count(r.nkernels), 3);
  uint32_t n = 45;
  float *a = malloc(n * 4);
  for (uint32_t i = 0; i < n; i++)
    a[i] = rndf();
  /* the first and last kernel of each piece */
  for (uint32_t p = 0; p < 3; p++) {
    uint32_t first, count;
    vxl_piece_range(r.nkernels, p, &first, &count);
    for (uint32_t ki = first; ki < first + count; ki += count - 1) {
      char name[16];
      snprintf(name, sizeof name, "k%u", ki);
      const vxl_kernel *k = kernel(&r, name);
      vxt_image img = {0};
      uint32_t ao = vxt_image_put(&img, a, n * 4), oo = vxt_image_put(&img, NULL, n * 4);
      uint32_t ad = DEV(ao), od = DEV(oo);
      const void *vals[] = {&ad, &od, &n};
      uint8_t *mem = launch_on(vxt_simt_matrix, 2, k, &img, vals, 2, 1, 1, 32, 1, 1, 0, NULL, 0);
      for (uint32_t i = 0; i < n; i++) {
        float want = a[i] * (float)ki + (float)(ki % 4 + 1) + 0.5f;
        cr_assert_eq(((float *)(mem + oo))[i], want, "k%u out[%u]", ki, i);
      }
      free(mem);
      vxt_image_free(&img);
    }
  }
  free(a);
  free(src);
  vxl_result_clear(&r);
}

/* ---- Polygeist output (../shared/corpus/vortex-hip) ----
 *
 * cgeist re-tiles a 256-thread block into 32 threads x 8 in grid y; every
 * kernel computes i = blockIdx.x * bs + blockIdx.y * 32 + threadIdx.x and is
 * launched with grid (ceil(n / bs), bs / 32, 1), block (32, 1, 1), and
 * leading arguments (bs : index, bs : i32, n : i32) - read from the host
 * functions in each file. */

Test(device, gpu_printf_becomes_vx_printf) {
  vxl_result r = build(VXT_KERNELS_DIR "/printf.mlir");
  const vxl_kernel *k = kernel(&r, "say");
  cr_assert(vxt_elf_has_symbol(r.object, r.object_size, "vx_printf", 0));
  vxt_image img = {0};
  vxt_image_put(&img, NULL, 16);
  char printed[512];
  uint8_t *mem = launch(k, &img, NULL, 1, 1, 1, 3, 1, 1, 0, printed, sizeof printed);
  /* index is 32-bit on Vortex: %lld receives the promoted i32 */
  cr_assert_str_eq(printed, "thread 0 of 3: 1.500000 and 7\nthread 1 of 3: 1.500000 and 7\n"
                            "thread 2 of 3: 1.500000 and 7\n");
  free(mem);
  vxt_image_free(&img);
  vxl_result_clear(&r);
}

Test(device, polygeist_style_kernel) {
  /* cgeist's argument order (n, in, factor, out) and its bounds guard */
  vxl_result r = build(VXT_KERNELS_DIR "/polygeist_style.mlir");
  const vxl_kernel *k = kernel(&r, NULL);
  const int32_t n = 150;
  int32_t in[150];
  for (int i = 0; i < n; i++)
    in[i] = i * 7 - 300;
  vxt_image img = {0};
  uint32_t io = vxt_image_put(&img, in, sizeof in), oo = vxt_image_put(&img, NULL, 160 * 4);
  uint32_t id = DEV(io), od = DEV(oo);
  float factor = 1.5f;
  const void *vals[] = {&n, &id, &factor, &od};
  uint8_t *mem = launch(k, &img, vals, 3, 1, 1, 64, 1, 1, 0, NULL, 0);
  const int32_t *out = (const int32_t *)(mem + oo);
  for (int i = 0; i < 160; i++)
    cr_assert_eq(out[i], i < n ? (int32_t)((float)in[i] * factor) : 0, "out[%d] = %d", i, out[i]);
  free(mem);
  vxt_image_free(&img);
  vxl_result_clear(&r);
}

/* ---- conformance: the Polygeist files of the corpus ---- */

#ifdef VXT_CORPUS_DIR
#define PG_BS 256u

static uint8_t *pg_launch(const vxl_kernel *k, vxt_image *img, const void *const *vals, uint32_t n,
                          char *printed, size_t cap) {
  return launch(k, img, vals, (n + PG_BS - 1) / PG_BS, PG_BS / 32, 1, 32, 1, 1, 0, printed, cap);
}

/* vecadd, dotproduct: c[i] = a[i] op b[i] */
static void pg_binary(const char *file, int mul) {
  vxl_result r = build(file);
  const vxl_kernel *k = kernel(&r, NULL);
  uint32_t n = 1000, bs = PG_BS;
  float *a = malloc(n * 4), *b = malloc(n * 4), *want = malloc(n * 4);
  for (uint32_t i = 0; i < n; i++)
    a[i] = rndf(), b[i] = rndf(), want[i] = mul ? a[i] * b[i] : a[i] + b[i];
  vxt_image img = {0};
  uint32_t ao = vxt_image_put(&img, a, n * 4), bo = vxt_image_put(&img, b, n * 4);
  uint32_t co = vxt_image_put(&img, NULL, n * 4);
  uint32_t ad = DEV(ao), bd = DEV(bo), cd = DEV(co);
  const void *vals[] = {&bs, &bs, &n, &ad, &bd, &cd};
  uint8_t *mem = pg_launch(k, &img, vals, n, NULL, 0);
  assert_floats((float *)(mem + co), want, n, 0, file);
  free(mem), free(a), free(b), free(want);
  vxt_image_free(&img);
  vxl_result_clear(&r);
}

Test(conformance, polygeist_vecadd) { pg_binary(CORPUS "vecadd_kernel.mlir", 0); }
Test(conformance, polygeist_dotproduct) { pg_binary(CORPUS "dotproduct_kernel.mlir", 1); }

Test(conformance, polygeist_basic_copy_and_relu) {
  uint32_t n = 700, bs = PG_BS;
  {
    vxl_result r = build(CORPUS "basic_kernel.mlir");
    int32_t *in = malloc(n * 4);
    for (uint32_t i = 0; i < n; i++)
      in[i] = (int32_t)rnd();
    vxt_image img = {0};
    uint32_t io = vxt_image_put(&img, in, n * 4), oo = vxt_image_put(&img, NULL, n * 4);
    uint32_t id = DEV(io), od = DEV(oo);
    const void *vals[] = {&bs, &bs, &n, &id, &od};
    uint8_t *mem = pg_launch(kernel(&r, NULL), &img, vals, n, NULL, 0);
    cr_assert_eq(memcmp(mem + oo, in, n * 4), 0, "basic copies its input");
    free(mem), free(in);
    vxt_image_free(&img);
    vxl_result_clear(&r);
  }
  {
    vxl_result r = build(CORPUS "relu_kernel.mlir");
    float *in = malloc(n * 4), *want = malloc(n * 4);
    for (uint32_t i = 0; i < n; i++)
      in[i] = rndf(), want[i] = in[i] > 0 ? in[i] : 0;
    vxt_image img = {0};
    uint32_t io = vxt_image_put(&img, in, n * 4), oo = vxt_image_put(&img, NULL, n * 4);
    uint32_t id = DEV(io), od = DEV(oo);
    const void *vals[] = {&bs, &bs, &n, &id, &od};
    uint8_t *mem = pg_launch(kernel(&r, NULL), &img, vals, n, NULL, 0);
    assert_floats((float *)(mem + oo), want, n, 0, "relu");
    free(mem), free(in), free(want);
    vxt_image_free(&img);
    vxl_result_clear(&r);
  }
}

Test(conformance, polygeist_metadata_test) {
  vxl_result r = build(CORPUS "metadata_test.mlir");
  uint32_t n = 900;
  int32_t *in = malloc(n * 4), count = (int32_t)n;
  float scale = 2.5f;
  for (uint32_t i = 0; i < n; i++)
    in[i] = (int32_t)(rnd() % 20001) - 10000;
  vxt_image img = {0};
  uint32_t io = vxt_image_put(&img, in, n * 4), oo = vxt_image_put(&img, NULL, n * 4);
  uint32_t id = DEV(io), od = DEV(oo);
  const void *vals[] = {&count, &id, &scale, &od}; /* gpu.func order: count, input, scale, output */
  uint8_t *mem = launch(kernel(&r, NULL), &img, vals, (n + 255) / 256, 8, 1, 32, 1, 1, 0, NULL, 0);
  const int32_t *out = (const int32_t *)(mem + oo);
  for (uint32_t i = 0; i < n; i++)
    cr_assert_eq(out[i], (int32_t)((float)in[i] * scale), "out[%u]", i);
  free(mem), free(in);
  vxt_image_free(&img);
  vxl_result_clear(&r);
}

Test(conformance, polygeist_cta_and_dogfood) {
  uint32_t bs = PG_BS;
  {
    /* cta: out[g] = g + in[local] over the whole grid */
    vxl_result r = build(CORPUS "cta_kernel.mlir");
    uint32_t blocks = 3, n = blocks * bs;
    int32_t *in = malloc(bs * 4);
    for (uint32_t i = 0; i < bs; i++)
      in[i] = (int32_t)(rnd() % 1000);
    vxt_image img = {0};
    uint32_t io = vxt_image_put(&img, in, bs * 4), oo = vxt_image_put(&img, NULL, n * 4);
    uint32_t id = DEV(io), od = DEV(oo);
    const void *vals[] = {&bs, &bs, &id, &od};
    uint8_t *mem = launch(kernel(&r, NULL), &img, vals, blocks, bs / 32, 1, 32, 1, 1, 0, NULL, 0);
    const int32_t *out = (const int32_t *)(mem + oo);
    for (uint32_t g = 0; g < n; g++)
      cr_assert_eq(out[g], (int32_t)g + in[g % bs], "out[%u]", g);
    free(mem), free(in);
    vxt_image_free(&img);
    vxl_result_clear(&r);
  }
  {
    /* dogfood: a switch on an operation code */
    vxl_result r = build(CORPUS "dogfood_kernel.mlir");
    uint32_t n = 600;
    int32_t *a = malloc(n * 4), *b = malloc(n * 4);
    for (uint32_t i = 0; i < n; i++)
      a[i] = (int32_t)(rnd() % 2001) - 1000, b[i] = (int32_t)(rnd() % 21) - 10;
    for (int32_t op = 0; op <= 4; op++) {
      vxt_image img = {0};
      uint32_t ao = vxt_image_put(&img, a, n * 4), bo = vxt_image_put(&img, b, n * 4);
      uint32_t oo = vxt_image_put(&img, NULL, n * 4);
      uint32_t ad = DEV(ao), bd = DEV(bo), od = DEV(oo);
      const void *vals[] = {&bs, &bs, &n, &ad, &bd, &op, &od};
      uint8_t *mem = pg_launch(kernel(&r, NULL), &img, vals, n, NULL, 0);
      const int32_t *out = (const int32_t *)(mem + oo);
      for (uint32_t i = 0; i < n; i++) {
        int32_t want = op == 1   ? a[i] * b[i]
                       : op == 2 ? (b[i] ? a[i] / b[i] : 0)
                       : op == 3 ? a[i] - b[i]
                                 : a[i] + b[i];
        cr_assert_eq(out[i], want, "op %d out[%u]", op, i);
      }
      free(mem);
      vxt_image_free(&img);
    }
    free(a), free(b);
    vxl_result_clear(&r);
  }
}

Test(conformance, polygeist_sort_sgemm_conv3) {
  uint32_t bs = PG_BS;
  {
    /* sort: each thread ranks its element and stores it at its rank */
    vxl_result r = build(CORPUS "sort_kernel.mlir");
    uint32_t n = 300;
    int32_t *in = malloc(n * 4), *want = malloc(n * 4);
    for (uint32_t i = 0; i < n; i++)
      in[i] = (int32_t)(rnd() % 50), want[i] = in[i];
    for (uint32_t i = 1; i < n; i++)
      for (uint32_t j = i; j > 0 && want[j - 1] > want[j]; j--) {
        int32_t t = want[j];
        want[j] = want[j - 1], want[j - 1] = t;
      }
    vxt_image img = {0};
    uint32_t io = vxt_image_put(&img, in, n * 4), oo = vxt_image_put(&img, NULL, n * 4);
    uint32_t id = DEV(io), od = DEV(oo);
    const void *vals[] = {&bs, &bs, &n, &id, &n, &od};
    uint8_t *mem = pg_launch(kernel(&r, NULL), &img, vals, n, NULL, 0);
    cr_assert_eq(memcmp(mem + oo, want, n * 4), 0, "sorted");
    free(mem), free(in), free(want);
    vxt_image_free(&img);
    vxl_result_clear(&r);
  }
  {
    /* sgemm (as cgeist simplified it): c[i] = sum_k a[k] * b[k * n + i] */
    vxl_result r = build(CORPUS "sgemm_kernel.mlir");
    uint32_t n = 40;
    float *a = malloc(n * 4), *b = malloc(n * n * 4), *want = malloc(n * 4);
    for (uint32_t i = 0; i < n; i++)
      a[i] = rndf();
    for (uint32_t i = 0; i < n * n; i++)
      b[i] = rndf();
    for (uint32_t i = 0; i < n; i++) {
      float s = 0;
      for (uint32_t kk = 0; kk < n; kk++)
        s += a[kk] * b[kk * n + i];
      want[i] = s;
    }
    vxt_image img = {0};
    uint32_t ao = vxt_image_put(&img, a, n * 4), bo = vxt_image_put(&img, b, n * n * 4);
    uint32_t co = vxt_image_put(&img, NULL, n * 4);
    uint32_t ad = DEV(ao), bd = DEV(bo), cd = DEV(co);
    uint8_t pos = 1;
    const void *vals[] = {&bs, &bs, &n, &pos, &ad, &bd, &n, &cd};
    uint8_t *mem = pg_launch(kernel(&r, NULL), &img, vals, n, NULL, 0);
    assert_floats((float *)(mem + co), want, n, 1e-5f, "sgemm");
    free(mem), free(a), free(b), free(want);
    vxt_image_free(&img);
    vxl_result_clear(&r);
  }
  {
    /* conv3: 3x3 convolution of a (width+2)-wide padded image, one row */
    vxl_result r = build(CORPUS "conv3_kernel.mlir");
    uint32_t w = 100, stride = w + 2, stride2 = 2 * stride;
    float *in = malloc(3 * stride * 4), wt[9], *want = malloc(w * 4);
    for (uint32_t i = 0; i < 3 * stride; i++)
      in[i] = rndf();
    for (int i = 0; i < 9; i++)
      wt[i] = rndf();
    for (uint32_t i = 0; i < w; i++) {
      float s = 0.0f;
      for (uint32_t rr = 0; rr < 3; rr++)
        for (uint32_t c = 0; c < 3; c++)
          s = s + in[i + rr * stride + c] * wt[rr * 3 + c];
      want[i] = s;
    }
    vxt_image img = {0};
    uint32_t io = vxt_image_put(&img, in, 3 * stride * 4), wo = vxt_image_put(&img, wt, 36);
    uint32_t oo = vxt_image_put(&img, NULL, w * 4);
    uint32_t id = DEV(io), wd = DEV(wo), od = DEV(oo);
    uint8_t nonpos = 0;
    const void *vals[] = {&bs, &bs, &w, &nonpos, &id, &wd, &stride, &stride2, &od};
    uint8_t *mem = pg_launch(kernel(&r, NULL), &img, vals, w, NULL, 0);
    assert_floats((float *)(mem + oo), want, w, 1e-5f, "conv3");
    free(mem), free(in), free(want);
    vxt_image_free(&img);
    vxl_result_clear(&r);
  }
}

Test(conformance, polygeist_printf_with_a_device_format_string) {
  vxl_result r = build(CORPUS "printf_kernel.mlir");
  const vxl_kernel *k = kernel(&r, NULL);
  cr_assert_eq(k->args[4].kind, VXP_ARG_POINTER, "the format string is a device pointer");
  uint32_t n = 5, bs = PG_BS;
  const char fmt[] = "task=%d, value=%c\n";
  int8_t str[5] = {0, 1, 2, 25, 7};
  vxt_image img = {0};
  uint32_t so = vxt_image_put(&img, str, sizeof str), fo = vxt_image_put(&img, fmt, sizeof fmt);
  uint32_t sd = DEV(so), fd = DEV(fo);
  const void *vals[] = {&bs, &bs, &n, &sd, &fd};
  char printed[512], sorted[512];
  uint8_t *mem = pg_launch(k, &img, vals, n, printed, sizeof printed);
  sort_lines(printed, sorted, sizeof sorted); /* task 4 is in another warp */
  cr_assert_str_eq(sorted,
                   "task=0, value=A\ntask=1, value=B\ntask=2, value=C\ntask=3, value=Z\ntask=4, value=H\n");
  free(mem);
  vxt_image_free(&img);
  vxl_result_clear(&r);
}

#endif /* VXT_CORPUS_DIR */

Test(device, math_ops_as_libm_calls) {
  /* exp/log/sin/cos/pow become libm calls in the backend, tanh/atan2/erf in
   * convert-math-to-libm; f64 ones go through soft-float too (picolibc) */
  vxl_result r = build(VXT_KERNELS_DIR "/math_libm.mlir");
  const vxl_kernel *k = kernel(&r, "math_libm");
  uint32_t n = 53;
  float *x = malloc(n * 4), *want = malloc(n * 4);
  double *wantd = malloc(n * 8);
  for (uint32_t i = 0; i < n; i++) {
    x[i] = rndf();
    float v = x[i], a = fabsf(v);
    want[i] =
        (((((expf(v) + logf(a + 1.0f)) + sinf(v) * cosf(v)) + powf(a, 1.5f)) + tanhf(v)) + atan2f(v, 2.0f)) +
        erff(v);
    wantd[i] = exp((double)v) + tanh((double)v);
  }
  vxt_image img = {0};
  uint32_t xo = vxt_image_put(&img, x, n * 4), yo = vxt_image_put(&img, NULL, n * 4);
  uint32_t dof = vxt_image_put(&img, NULL, n * 8);
  uint32_t xd = DEV(xo), yd = DEV(yo), dd = DEV(dof);
  const void *vals[] = {&xd, &yd, &dd, &n};
  uint8_t *mem = launch(k, &img, vals, 2, 1, 1, 32, 1, 1, 0, NULL, 0);
  /* two libms, each within a few ulp per call */
  assert_floats((float *)(mem + yo), want, n, 1e-5f, "y");
  const double *d = (const double *)(mem + dof);
  for (uint32_t i = 0; i < n; i++)
    cr_assert(fabs(d[i] - wantd[i]) <= 1e-13 * (1.0 + fabs(wantd[i])), "d[%u] = %.17g, want %.17g", i, d[i],
              wantd[i]);
  free(mem), free(x), free(want), free(wantd);
  vxt_image_free(&img);
  vxl_result_clear(&r);
}

Test(device, math_ops_and_private_memory) {
  vxl_result r = build(VXT_KERNELS_DIR "/math_private.mlir");
  const vxl_kernel *k = kernel(&r, "math_private");
  cr_assert_eq(k->shared_bytes, 0, "private memory is not shared memory");
  uint32_t n = 70;
  float *x = malloc(n * 4), *want = malloc(n * 4);
  for (uint32_t i = 0; i < n; i++) {
    x[i] = rndf();
    float sum = 0.0f;
    for (int kk = 0; kk < 4; kk++)
      sum += (float)kk * x[i];
    want[i] = ((sqrtf(fabsf(x[i])) + fmaf(x[i], 2.0f, 1.0f)) + fmaxf(x[i], 0.0f)) + sum;
  }
  vxt_image img = {0};
  uint32_t xo = vxt_image_put(&img, x, n * 4), oo = vxt_image_put(&img, NULL, n * 4);
  uint32_t xd = DEV(xo), od = DEV(oo);
  const void *vals[] = {&xd, &od, &n};
  uint8_t *mem = launch(k, &img, vals, 3, 1, 1, 32, 1, 1, 0, NULL, 0);
  assert_floats((float *)(mem + oo), want, n, 1e-6f, "out");
  free(mem), free(x), free(want);
  vxt_image_free(&img);
  vxl_result_clear(&r);
}

/* ---- subgroup and workgroup collectives, compiled for each warp width ---- */

static vxl_result build_for_warp_shfl(const char *path, uint32_t warp, bool shuffle_insns) {
  vxl_options o = {.opt_level = 2, .warp_size = warp, .shuffle_insns = shuffle_insns};
  vxl_result r;
  cr_assert_eq(compile_file_kept(path, &o, &r), 0, "cannot read or compile %s", path);
  cr_assert(r.ok, "%s (warp %u): %s", path, warp, r.ndiags ? r.diags[0] : "");
  for (uint32_t i = 0; i < r.nkernels; i++)
    cr_assert_eq(r.kernels[i].subgroup_size, warp);
  return r;
}

static vxl_result build_for_warp(const char *path, uint32_t warp) {
  return build_for_warp_shfl(path, warp, false);
}

/* The configurations with `warp` threads per warp, both split orders. */
static void warp_configs(uint32_t warp, vxt_simt cfg[2]) {
  cfg[0] = (vxt_simt){warp, 0, 1, VXS_SPLIT_SMALLER, "warp width as compiled, smaller side first"};
  cfg[1] = (vxt_simt){warp, 0, 2, VXS_SPLIT_TAKEN, "warp width as compiled, taken side first, 2 cores"};
}

/* Runs kernel `name` of r on grid x block threads (1-D) with one i32 output
 * of `words` words per thread (and an f32 one of 2 when fout). */
static uint8_t *run_collective(const vxl_result *r, const char *name, uint32_t warp, uint32_t grid,
                               uint32_t block, uint32_t words, int fout, uint32_t *oo, uint32_t *fo) {
  const vxl_kernel *k = kernel(r, name);
  vxt_image img = {0};
  uint32_t n = grid * block;
  *oo = vxt_image_put(&img, NULL, n * words * 4);
  *fo = vxt_image_put(&img, NULL, n * 2 * 4);
  uint32_t od = DEV(*oo), fd = DEV(*fo);
  const void *vals[] = {&od, &fd};
  vxt_simt cfg[2];
  warp_configs(warp, cfg);
  uint8_t *mem = launch_on(cfg, 2, k, &img, vals, grid, 1, 1, block, 1, 1, 0, NULL, 0);
  (void)fout;
  vxt_image_free(&img);
  return mem;
}

static const uint32_t warps[] = {1, 4, 8, 32};
static const uint32_t blocks[] = {13, 37, 64};

Test(device, lane_and_subgroup_ids) {
  for (int wi = 0; wi < 4; wi++) {
    vxl_result r = build_for_warp(VXT_KERNELS_DIR "/subgroups.mlir", warps[wi]);
    for (int bi = 0; bi < 3; bi++) {
      uint32_t W = warps[wi], B = blocks[bi], oo, fo;
      uint8_t *mem = run_collective(&r, "ids", W, 3, B, 4, 0, &oo, &fo);
      const int32_t *o = (const int32_t *)(mem + oo);
      for (uint32_t g = 0; g < 3 * B; g++) {
        uint32_t t = g % B;
        cr_assert_eq(o[4 * g], (int32_t)(t % W), "W=%u B=%u lane_id of %u", W, B, g);
        cr_assert_eq(o[4 * g + 1], (int32_t)(t / W), "W=%u B=%u subgroup_id of %u", W, B, g);
        cr_assert_eq(o[4 * g + 2], (int32_t)W);
        cr_assert_eq(o[4 * g + 3], (int32_t)((B + W - 1) / W), "W=%u B=%u num_subgroups", W, B);
      }
      free(mem);
    }
    vxl_result_clear(&r);
  }
}

Test(device, shuffles_xor_up_down_idx) {
  /* through local memory, and through Vortex's shuffle instructions */
  for (int wi = 0; wi < 8; wi++) {
    int insns = wi >= 4;
    vxl_result r = build_for_warp_shfl(VXT_KERNELS_DIR "/subgroups.mlir", warps[wi % 4], insns);
    const vxl_kernel *sk = kernel(&r, "shuffles");
    unsigned bfly = vxt_elf_count_insn(r.object, r.object_size, vxt_kernel_body(sk->entry), 0x0B, 6, 1);
    cr_assert(insns ? bfly >= 1 : bfly == 0, "W=%u: %u shuffle instructions", warps[wi % 4], bfly);
    for (int bi = 0; bi < 3; bi++) {
      uint32_t W = warps[wi % 4], B = blocks[bi], oo, fo;
      uint8_t *mem = run_collective(&r, "shuffles", W, 3, B, 8, 1, &oo, &fo);
      const int32_t *o = (const int32_t *)(mem + oo);
      const float *f = (const float *)(mem + fo);
      for (uint32_t g = 0; g < 3 * B; g++) {
        uint32_t t = g % B, l = t % W;
        int32_t v = (int32_t)(10 * g + 1);
        /* source lane per mode; -1 wraps to invalid */
        int64_t src[4] = {l ^ 1, (int64_t)l - 1, (int64_t)l + 2, 0};
        int64_t here = (int64_t)(B - (t - l)) < (int64_t)W ? (int64_t)(B - (t - l))
                                                           : (int64_t)W; /* lanes of this warp */
        for (int m = 0; m < 4; m++) {
          int valid = src[m] >= 0 && src[m] < here;
          uint32_t from_t = t - l + (uint32_t)src[m];
          cr_assert_eq(o[8 * g + 2 * m + 1], valid, "W=%u B=%u g=%u mode %d valid", W, B, g, m);
          if (!valid)
            cr_assert_eq(o[8 * g + 2 * m], v, "W=%u B=%u g=%u mode %d: own value", W, B, g, m);
          else
            cr_assert_eq(o[8 * g + 2 * m], (int32_t)(10 * (g - t + from_t) + 1), "W=%u B=%u g=%u mode %d", W,
                         B, g, m);
        }
        int64_t fs = l ^ 2, lim = here < 4 ? here : 4;
        int fvalid = fs < lim;
        uint32_t ft = t - l + (uint32_t)fs;
        cr_assert_eq(f[2 * g + 1], (float)fvalid);
        if (!fvalid)
          cr_assert_eq(f[2 * g], (float)v * 0.5f);
        else
          cr_assert_eq(f[2 * g], (float)(10 * (g - t + ft) + 1) * 0.5f, "W=%u g=%u f32", W, g);
      }
      free(mem);
    }
    vxl_result_clear(&r);
  }
}

Test(device, subgroup_reduce_over_active_lanes) {
  for (int wi = 0; wi < 4; wi++) {
    vxl_result r = build_for_warp(VXT_KERNELS_DIR "/subgroups.mlir", warps[wi]);
    for (int bi = 0; bi < 3; bi++) {
      uint32_t W = warps[wi], B = blocks[bi], oo, fo;
      uint8_t *mem = run_collective(&r, "reduces", W, 3, B, 3, 0, &oo, &fo);
      const int32_t *o = (const int32_t *)(mem + oo);
      for (uint32_t g = 0; g < 3 * B; g++) {
        uint32_t t = g % B, first = g - t % W; /* global id of lane 0 */
        int32_t sum = 0, mx = INT32_MIN, odd = 0;
        for (uint32_t j = 0; j < W && t - t % W + j < B; j++) {
          int32_t vj = (int32_t)(10 * (first + j) + 1);
          sum += vj;
          if (vj % 7 > mx) mx = vj % 7;
          if ((first + j) & 1) odd += vj;
        }
        cr_assert_eq(o[3 * g], sum, "W=%u B=%u g=%u add %d want %d", W, B, g, o[3 * g], sum);
        cr_assert_eq(o[3 * g + 1], mx, "W=%u B=%u g=%u maxsi", W, B, g);
        cr_assert_eq(o[3 * g + 2], g & 1 ? odd : -1, "W=%u B=%u g=%u add over odd lanes %d want %d", W, B, g,
                     o[3 * g + 2], odd);
      }
      free(mem);
    }
    vxl_result_clear(&r);
  }
}

Test(device, subgroup_reduce_over_clusters) {
  for (int wi = 1; wi < 4; wi++) {
    vxl_result r = build_for_warp(VXT_KERNELS_DIR "/subgroup_clusters.mlir", warps[wi]);
    for (int bi = 0; bi < 3; bi++) {
      uint32_t W = warps[wi], B = blocks[bi], oo, fo;
      uint8_t *mem = run_collective(&r, "clusters", W, 3, B, 2, 0, &oo, &fo);
      const int32_t *o = (const int32_t *)(mem + oo);
      for (uint32_t g = 0; g < 3 * B; g++) {
        uint32_t t = g % B, l = t % W;
        int32_t add = 0, mul = 1;
        for (uint32_t j = 0; j < W; j++) {
          if (t - l + j >= B) continue; /* no such thread */
          int32_t vj = (int32_t)(10 * (g - l + j) + 1);
          if (j / 2 == l / 2) add += vj;
          if (j / 4 == l / 4 && j % 2 == l % 2) mul *= vj % 5 + 1;
        }
        cr_assert_eq(o[2 * g], add, "W=%u B=%u g=%u cluster add", W, B, g);
        cr_assert_eq(o[2 * g + 1], mul, "W=%u B=%u g=%u cluster mul", W, B, g);
      }
      free(mem);
    }
    vxl_result_clear(&r);
  }
  /* a cluster wider than the warp is refused where it is written */
  vxl_options o = {.opt_level = 2, .warp_size = 1};
  vxl_result r;
  cr_assert_eq(vxt_compile_file(cc, VXT_KERNELS_DIR "/subgroup_clusters.mlir", &o, &r), 0);
  cr_assert_not(r.ok);
  cr_assert(strstr(r.diags[0],
                   "subgroup_clusters.mlir:18:12: error: unsupported: gpu.subgroup_reduce clusters of 2 "
                   "lanes 1 apart in a 1-thread warp"),
            "%s", r.diags[0]);
  vxl_result_clear(&r);
}

Test(device, all_reduce_over_the_block) {
  for (int wi = 0; wi < 4; wi++) {
    vxl_result r = build_for_warp(VXT_KERNELS_DIR "/subgroups.mlir", warps[wi]);
    for (int bi = 0; bi < 3; bi++) {
      uint32_t W = warps[wi], B = blocks[bi], oo, fo;
      uint8_t *mem = run_collective(&r, "block", W, 3, B, 3, 0, &oo, &fo);
      const int32_t *o = (const int32_t *)(mem + oo);
      float sum = 0;
      int32_t mx = INT32_MIN;
      uint32_t prod = 1;
      for (uint32_t t = 0; t < B; t++) {
        sum += (float)t;
        if ((int32_t)(t * 7 % 11) > mx) mx = (int32_t)(t * 7 % 11);
        prod *= t % 3 + 1;
      }
      for (uint32_t g = 0; g < 3 * B; g++) {
        float got;
        memcpy(&got, &o[3 * g], 4);
        cr_assert_eq(got, sum, "W=%u B=%u g=%u add %g want %g", W, B, g, (double)got, (double)sum);
        cr_assert_eq(o[3 * g + 1], mx, "W=%u B=%u g=%u region max", W, B, g);
        cr_assert_eq((uint32_t)o[3 * g + 2], prod, "W=%u B=%u g=%u mul", W, B, g);
      }
      free(mem);
    }
    vxl_result_clear(&r);
  }
}

#ifdef VXT_CORPUS_DIR
/* ---- upstream MLIR GPU integration tests (llvm-project mlir/test/Integration/GPU) ----
 *
 * Their host code is not compiled yet: each test below transcribes what the
 * file's host code puts in the buffers and how it launches, runs the
 * file's kernels on the emulator, prints the results the way the file does
 * (printMemref / vector.print / the device's printf), and runs FileCheck-22
 * with the file's own CHECK lines on that output. */

#define UPSTREAM VXT_CORPUS_DIR "/llvm-project/"

/* Runs FileCheck-22 with path's CHECK lines over output. */
static void file_check(const char *path, const char *output, const char *what) {
  char in[96];
  vxt_tmp_template(in, sizeof in, "vxt-check-");
  int fd = mkstemp(in);
  cr_assert_geq(fd, 0);
  FILE *f = fdopen(fd, "w");
  fputs(output, f);
  fclose(f);
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "%s %s --input-file %s >/dev/null 2>%s.err", VXT_FILECHECK, path, in, in);
  int rc = system(cmd);
  char err[1024] = "";
  snprintf(cmd, sizeof cmd, "%s.err", in);
  FILE *e = fopen(cmd, "r");
  if (e) {
    size_t n = fread(err, 1, sizeof err - 1, e);
    err[n] = '\0';
    fclose(e);
  }
  unlink(in);
  unlink(cmd);
  cr_assert_eq(rc, 0, "%s: FileCheck failed on\n%s\n%s", what, output, err);
}

/* printMemref's data lines for a row-major rows x cols buffer of i32
 * (is_float 0) or f32 values, appended to out. */
static void print_memref(char *out, size_t cap, const void *data, uint32_t rows, uint32_t cols,
                         int is_float) {
  char *o = out + strlen(out);
  size_t left = cap - strlen(out);
  int n = snprintf(o, left, rows > 1 ? "[" : "");
  o += n, left -= (size_t)n;
  for (uint32_t r = 0; r < rows; r++) {
    n = snprintf(o, left, "%s[", r ? ", \n " : "");
    o += n, left -= (size_t)n;
    for (uint32_t c = 0; c < cols; c++) {
      uint32_t i = r * cols + c;
      if (is_float)
        n = snprintf(o, left, "%s%g", c ? ", " : "", (double)((const float *)data)[i]);
      else
        n = snprintf(o, left, "%s%d", c ? ", " : "", ((const int32_t *)data)[i]);
      o += n, left -= (size_t)n;
    }
    n = snprintf(o, left, "]");
    o += n, left -= (size_t)n;
  }
  snprintf(o, left, rows > 1 ? "]\n" : "\n");
}

Test(conformance, upstream_all_reduce_integration_tests) {
  /* the host code of each file fills data[2][6] with the values below and
   * launches 2 blocks of 6 threads */
  static const char *const files[] = {"all-reduce-and", "all-reduce-or", "all-reduce-xor",
                                      "multiple-all-reduce"};
  static const int32_t data[12] = {0, 1, 2, 4, 8, 16, 2, 3, 6, 7, 10, 11};
  for (int fi = 0; fi < 4; fi++) {
    char path[512], got[256];
    snprintf(path, sizeof path, UPSTREAM "Integration-GPU-CUDA/%s.mlir", files[fi]);
    int is_float = fi == 3, nout = is_float ? 2 : 1;
    for (int wi = 0; wi < 4; wi++) {
      vxl_result r = build_for_warp(path, warps[wi]);
      const vxl_kernel *k = kernel(&r, "main_kernel");
      vxt_image img = {0};
      float fdata[12];
      for (int i = 0; i < 12; i++)
        fdata[i] = (float)data[i];
      uint32_t din = vxt_image_put(&img, is_float ? (const void *)fdata : (const void *)data, 48);
      uint32_t o[2] = {vxt_image_put(&img, NULL, 8), vxt_image_put(&img, NULL, 8)};
      uint32_t dd = DEV(din), d0 = DEV(o[0]), d1 = DEV(o[1]);
      const void *vals[] = {&dd, &d0, &d1};
      vxt_simt cfg[2];
      warp_configs(warps[wi], cfg);
      uint8_t *mem = launch_on(cfg, 2, k, &img, vals, 2, 1, 1, 6, 1, 1, 0, NULL, 0);
      got[0] = '\0';
      for (int j = 0; j < nout; j++)
        print_memref(got, sizeof got, mem + o[j], 1, 2, is_float);
      char what[64];
      snprintf(what, sizeof what, "%s, %u threads per warp", files[fi], warps[wi]);
      file_check(path, got, what);
      free(mem);
      vxt_image_free(&img);
      vxl_result_clear(&r);
    }
  }
}

Test(conformance, upstream_cuda_integration_tests) {
  char got[1024], printed[512];
  /* gpu-to-cubin: other_func(1.0, a 5-element buffer) stores 1.0 from 5
   * threads; then printMemref and vector.print of the first two */
  vxl_result r = build(UPSTREAM "Integration-GPU-CUDA/gpu-to-cubin.mlir");
  vxt_image img = {0};
  uint32_t bo = vxt_image_put(&img, NULL, 5 * 4), bd = DEV(bo);
  float one = 1.0f;
  const void *v1[] = {&one, &bd};
  uint8_t *mem = launch(kernel(&r, "other_func_kernel"), &img, v1, 1, 1, 1, 5, 1, 1, 0, NULL, 0);
  const float *b = (const float *)(mem + bo);
  got[0] = '\0';
  print_memref(got, sizeof got, b, 1, 5, 1);
  snprintf(got + strlen(got), sizeof got - strlen(got), "( %g, %g )\n", (double)b[0], (double)b[1]);
  file_check(UPSTREAM "Integration-GPU-CUDA/gpu-to-cubin.mlir", got, "gpu-to-cubin");
  free(mem);
  vxt_image_free(&img);
  vxl_result_clear(&r);

  /* two-modules: each of the two outlined kernels writes the thread id
   * into a 13-element buffer, one block of 13 threads */
  r = build(UPSTREAM "Integration-GPU-CUDA/two-modules.mlir");
  img = (vxt_image){0};
  uint32_t to = vxt_image_put(&img, NULL, 13 * 4), td = DEV(to);
  const void *v2[] = {&td};
  mem = launch(kernel(&r, "main_kernel::main_kernel"), &img, v2, 1, 1, 1, 13, 1, 1, 0, NULL, 0);
  memcpy(img.p + to, mem + to, 13 * 4);
  free(mem);
  mem = launch(kernel(&r, "main_kernel_0::main_kernel"), &img, v2, 1, 1, 1, 13, 1, 1, 0, NULL, 0);
  got[0] = '\0';
  print_memref(got, sizeof got, mem + to, 1, 13, 0);
  file_check(UPSTREAM "Integration-GPU-CUDA/two-modules.mlir", got, "two-modules");
  free(mem);
  vxt_image_free(&img);
  vxl_result_clear(&r);

  /* alloc-host-shared: the host stores 1000 at index 1 of a host-shared
   * memref<1xi32> (past its end, as written); one thread doubles it */
  r = build(UPSTREAM "Integration-GPU-CUDA/alloc-host-shared.mlir");
  img = (vxt_image){0};
  int32_t init[2] = {0, 1000};
  uint32_t ho = vxt_image_put(&img, init, 8), hd = DEV(ho), idx = 1;
  const void *v3[] = {&hd, &idx};
  mem = launch(kernel(&r, "main_kernel"), &img, v3, 1, 1, 1, 1, 1, 1, 0, NULL, 0);
  snprintf(got, sizeof got, "%d\n", ((const int32_t *)(mem + ho))[1]);
  file_check(UPSTREAM "Integration-GPU-CUDA/alloc-host-shared.mlir", got, "alloc-host-shared");
  free(mem);
  vxt_image_free(&img);
  vxl_result_clear(&r);

  /* printf: one block of two threads */
  r = build(UPSTREAM "Integration-GPU-CUDA/printf.mlir");
  img = (vxt_image){0};
  mem = launch(kernel(&r, "hello"), &img, NULL, 1, 1, 1, 2, 1, 1, 0, printed, sizeof printed);
  file_check(UPSTREAM "Integration-GPU-CUDA/printf.mlir", printed, "printf");
  free(mem);
  vxt_image_free(&img);
  vxl_result_clear(&r);
}

/* Runs kernel `name` of path on img (1 thread per block when bx is 1) and
 * FileChecks path against the rows x cols buffer at offset out, printed as
 * printMemref prints it; frees img. */
static void upstream_memref(const char *path, const char *name, vxt_image *img, const void *const *vals,
                            uint32_t gx, uint32_t gy, uint32_t bx, uint32_t out, uint32_t rows, uint32_t cols,
                            int is_float) {
  vxl_result r = build(path);
  uint8_t *mem = launch(kernel(&r, name), img, vals, gx, gy, 1, bx, 1, 1, 0, NULL, 0);
  char got[1024] = "";
  print_memref(got, sizeof got, mem + out, rows, cols, is_float);
  file_check(path, got, name);
  free(mem);
  vxt_image_free(img);
  vxl_result_clear(&r);
}

Test(conformance, upstream_rocm_spirv_sycl_vulkan_integration_tests) {
  /* ROCM vecadd: 1.23 + 1.23 over 5 threads */
  vxt_image img = {0};
  float a[5] = {1.23f, 1.23f, 1.23f, 1.23f, 1.23f};
  uint32_t ao = vxt_image_put(&img, a, 20), bo = vxt_image_put(&img, a, 20),
           co = vxt_image_put(&img, NULL, 20);
  uint32_t ad = DEV(ao), bd = DEV(bo), cd = DEV(co);
  const void *v3[] = {&ad, &bd, &cd};
  upstream_memref(UPSTREAM "Integration-GPU-ROCM/vecadd.mlir", "vecadd_kernel", &img, v3, 1, 1, 5, co, 1, 5,
                  1);

  /* SPIRV double: input filled with 4, output with 0, one thread */
  int32_t four[6] = {4, 4, 4, 4, 4, 4};
  uint32_t io = vxt_image_put(&img, four, 24), oo = vxt_image_put(&img, NULL, 24);
  uint32_t id = DEV(io), od = DEV(oo);
  const void *v2[] = {&id, &od};
  upstream_memref(UPSTREAM "Integration-GPU-SPIRV/double.mlir", "double", &img, v2, 1, 1, 1, oo, 1, 6, 0);

  /* SYCL relu over the file's 4x5 constant, 4x5 blocks of one thread */
  static const float in45[20] = {-0.1f, -0.2f, -0.3f, 0.4f,  0.5f,  0.1f, -0.2f, 0.3f, -0.4f, 0.5f,
                                 0.1f,  0.2f,  0.3f,  -0.4f, -0.5f, 0.1f, 0.2f,  0.3f, 0.4f,  0.5f};
  io = vxt_image_put(&img, in45, 80), oo = vxt_image_put(&img, NULL, 80);
  id = DEV(io), od = DEV(oo);
  upstream_memref(UPSTREAM "Integration-GPU-SYCL/gpu-reluf32-to-spirv.mlir", "test_relu", &img, v2, 4, 5, 1,
                  oo, 4, 5, 1);

  /* Vulkan addf_if: 1.1 + 2.2 where block id < 4, 8 blocks of one thread */
  float x[16], y[16];
  for (int i = 0; i < 16; i++)
    x[i] = 1.1f, y[i] = 2.2f;
  ao = vxt_image_put(&img, x, 32), bo = vxt_image_put(&img, y, 32), co = vxt_image_put(&img, NULL, 32);
  ad = DEV(ao), bd = DEV(bo), cd = DEV(co);
  upstream_memref(UPSTREAM "Integration-GPU-Vulkan/addf_if.mlir", "kernel_add", &img, v3, 8, 1, 1, co, 1, 8,
                  1);

  /* Vulkan mulf: 2.0 * 3.0 over 4x4 blocks of one thread */
  for (int i = 0; i < 16; i++)
    x[i] = 2.0f, y[i] = 3.0f;
  ao = vxt_image_put(&img, x, 64), bo = vxt_image_put(&img, y, 64), co = vxt_image_put(&img, NULL, 64);
  ad = DEV(ao), bd = DEV(bo), cd = DEV(co);
  upstream_memref(UPSTREAM "Integration-GPU-Vulkan/mulf.mlir", "kernel_mul", &img, v3, 4, 4, 1, co, 4, 4, 1);
}

#endif /* VXT_CORPUS_DIR */

Test(device, every_reduction_kind_in_subgroups_and_blocks) {
  /* every gpu.all_reduce_operation upstream has, as gpu.subgroup_reduce and
   * as gpu.all_reduce, on v = t * 3 % 7 - 2 (i32) or t * 0.75 - 3 (f32) */
  static const char *const ints[] = {"add", "mul", "and", "or", "xor", "minui", "minsi", "maxui", "maxsi"};
  static const char *const floats[] = {"add", "mul", "minnumf", "maxnumf", "minimumf", "maximumf"};
  const uint32_t B = 13, W = 4;
  for (int fl = 0; fl < 2; fl++) {
    int nk = fl ? 6 : 9;
    for (int ki = 0; ki < nk; ki++) {
      const char *kind = fl ? floats[ki] : ints[ki], *T = fl ? "f32" : "i32";
      char src[2048];
      snprintf(
          src, sizeof src,
          "module {\n  gpu.module @m {\n    gpu.func @k(%%o: memref<?x%s>) kernel {\n"
          "      %%c2 = arith.constant 2 : index\n      %%c1 = arith.constant 1 : index\n"
          "      %%t = gpu.thread_id x\n      %%ti = arith.index_cast %%t : index to i32\n"
          "%s"
          "      %%s = gpu.subgroup_reduce %s %%v : (%s) -> %s\n"
          "      %%a = gpu.all_reduce %s %%v uniform {} : (%s) -> %s\n"
          "      %%p = arith.muli %%t, %%c2 : index\n      %%q = arith.addi %%p, %%c1 : index\n"
          "      memref.store %%s, %%o[%%p] : memref<?x%s>\n      memref.store %%a, %%o[%%q] : memref<?x%s>\n"
          "      gpu.return\n    }\n  }\n}\n",
          T,
          fl ? "      %f = arith.sitofp %ti : i32 to f32\n      %q75 = arith.constant 0.75 : f32\n"
               "      %m = arith.mulf %f, %q75 : f32\n      %c3 = arith.constant 3.0 : f32\n"
               "      %v = arith.subf %m, %c3 : f32\n"
             : "      %k3 = arith.constant 3 : i32\n      %k7 = arith.constant 7 : i32\n"
               "      %k2 = arith.constant 2 : i32\n      %m = arith.muli %ti, %k3 : i32\n"
               "      %r = arith.remui %m, %k7 : i32\n      %v = arith.subi %r, %k2 : i32\n",
          kind, T, T, kind, T, T, T, T);
      vxl_options o = {.opt_level = 2, .warp_size = W};
      vxl_result r;
      cr_assert_eq(compile_kept(src, strlen(src), "kinds.mlir", &o, &r), 0);
      cr_assert(r.ok, "%s %s: %s", kind, T, r.ndiags ? r.diags[0] : "");
      vxt_image img = {0};
      uint32_t oo = vxt_image_put(&img, NULL, B * 8), od = DEV(oo);
      const void *vals[] = {&od};
      vxt_simt cfg[2];
      warp_configs(W, cfg);
      uint8_t *mem = launch_on(cfg, 2, kernel(&r, NULL), &img, vals, 1, 1, 1, B, 1, 1, 0, NULL, 0);
      const int32_t *oi = (const int32_t *)(mem + oo);
      const float *of = (const float *)(mem + oo);
      for (uint32_t t = 0; t < B; t++) {
        /* fold the lanes of t's warp (sub) and of the block (all), in order */
        double acc[2] = {0, 0};
        int64_t iacc[2] = {0, 0};
        for (int scope = 0; scope < 2; scope++) {
          uint32_t lo = scope ? 0 : t - t % W, hi = scope ? B : (lo + W < B ? lo + W : B);
          for (uint32_t j = lo; j < hi; j++) {
            if (fl) {
              double x = (double)((float)j * 0.75f - 3.0f), a = acc[scope];
              const char *k = kind;
              acc[scope] = j == lo             ? x
                           : !strcmp(k, "add") ? (double)((float)a + (float)x)
                           : !strcmp(k, "mul") ? (double)((float)a * (float)x)
                           : strstr(k, "min")  ? (x < a ? x : a)
                                               : (x > a ? x : a);
            } else {
              int32_t x = (int32_t)(j * 3 % 7) - 2, a = (int32_t)iacc[scope];
              uint32_t ux = (uint32_t)x, ua = (uint32_t)a;
              const char *k = kind;
              int32_t v = !strcmp(k, "add")     ? (int32_t)(ua + ux)
                          : !strcmp(k, "mul")   ? (int32_t)(ua * ux)
                          : !strcmp(k, "and")   ? a & x
                          : !strcmp(k, "or")    ? a | x
                          : !strcmp(k, "xor")   ? a ^ x
                          : !strcmp(k, "minui") ? (int32_t)(ua < ux ? ua : ux)
                          : !strcmp(k, "minsi") ? (a < x ? a : x)
                          : !strcmp(k, "maxui") ? (int32_t)(ua > ux ? ua : ux)
                                                : (a > x ? a : x);
              iacc[scope] = j == lo ? x : v;
            }
          }
        }
        if (fl) {
          /* all_reduce folds per warp, then the warps: same order here only
           * for add/mul up to rounding, so compare with a tolerance */
          cr_assert_float_eq(of[2 * t], (float)acc[0], 1e-5, "%s f32 subgroup t=%u: %g want %g", kind, t,
                             (double)of[2 * t], acc[0]);
          cr_assert_float_eq(of[2 * t + 1], (float)acc[1], 1e-4, "%s f32 block t=%u: %g want %g", kind, t,
                             (double)of[2 * t + 1], acc[1]);
        } else {
          cr_assert_eq(oi[2 * t], (int32_t)iacc[0], "%s i32 subgroup t=%u: %d want %d", kind, t, oi[2 * t],
                       (int32_t)iacc[0]);
          cr_assert_eq(oi[2 * t + 1], (int32_t)iacc[1], "%s i32 block t=%u: %d want %d", kind, t,
                       oi[2 * t + 1], (int32_t)iacc[1]);
        }
      }
      free(mem);
      vxt_image_free(&img);
      vxl_result_clear(&r);
    }
  }
}
