/*
 * test_upstream.c - vortexd's images against upstream Vortex's own tools,
 * built from upstream's files (tests/upstream_sdk.cmake; this suite exists
 * only when they are there): modules compiled by a daemon whose
 * vortex_sdk is upstream's kernel SDK, on Vortex 2.x and 3.0 (RV32), are
 *   - byte for byte the .vxbin upstream's vxbin.py writes from the very
 *     ELF the daemon converted (vxr_link_sdk_elf, the same link);
 *   - loaded by upstream's module.cpp (tests/upstream/module_names.cpp),
 *     which finds every kernel of a 3.0 module by name, at the address
 *     of its __vx_kentry_<name> symbol, refuses other names, and sees a
 *     2.x image as the one kernel "main" at its start.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vxr_vxbin.h"
#include "vxt.h"

#define SDK VXT_UPSTREAM_SDK_DIR "/rv32"

static vxt_daemon d2, d3;

static void start(void) {
  const char *flag = "--vortex-sdk=" SDK;
  setenv("VORTEXD_TARGET", "vortex2-rv32", 1);
  cr_assert_eq(vxt_daemon_start(&d2, flag), 0);
  setenv("VORTEXD_TARGET", "vortex3-rv32", 1);
  cr_assert_eq(vxt_daemon_start(&d3, flag), 0);
  unsetenv("VORTEXD_TARGET");
}

static void stop(void) {
  if (d2.pid > 0) vxt_daemon_stop(&d2);
  if (d3.pid > 0) vxt_daemon_stop(&d3);
}

TestSuite(conformance, .init = start, .fini = stop, .timeout = 300);

/* Writes n bytes to path. */
static void write_file(const char *path, const void *p, size_t n) {
  FILE *f = fopen(path, "wb");
  cr_assert_not_null(f, "%s", path);
  cr_assert_eq(fwrite(p, 1, n, f), n);
  cr_assert_eq(fclose(f), 0);
}

/* Compiles src (a path) through daemon t into t's directory as stem.o and
 * stem.vxbin; *obj and *image get their bytes (malloc()). */
static void compile(const vxt_daemon *t, const char *src, const char *stem, uint8_t **obj, size_t *obj_size,
                    uint8_t **image, size_t *image_size) {
  char cmd[2048], out[4096], path[512];
  snprintf(cmd, sizeof cmd, "%s --no-spawn --socket %s compile %s -o %s/%s.o 2>&1", VXT_VXC, t->sock, src,
           t->dir, stem);
  cr_assert_eq(vxt_run(cmd, out, sizeof out), 0, "%s: %s", src, out);
  snprintf(path, sizeof path, "%s/%s.o", t->dir, stem);
  cr_assert_not_null(*obj = (uint8_t *)vxt_read_file(path, obj_size), "%s", path);
  snprintf(path, sizeof path, "%s/%s.vxbin", t->dir, stem);
  cr_assert_not_null(*image = (uint8_t *)vxt_read_file(path, image_size), "%s", path);
}

/* The entry an image of a module object starts at: its dispatcher when it
 * has one, else its one kernel's entry. */
static const char *image_entry(const uint8_t *obj, size_t size) {
  return vxt_elf_has_symbol(obj, size, "__vxl_dispatch", 1) ? "__vxl_dispatch" : "__vxl_main_0";
}

/* The sources every case compiles: one kernel; three kernels of two
 * gpu.modules (qualified names); 40 kernels with a module variable and
 * initialized data, written into dir. */
static void sources(const char *dir, char paths[3][512]) {
  snprintf(paths[0], 512, "%s", VXT_EXAMPLES_DIR "/saxpy.mlir");
  snprintf(paths[1], 512, "%s", VXT_KERNELS_DIR "/two_modules.mlir");
  snprintf(paths[2], 512, "%s/many.mlir", dir);
  size_t len;
  char *many = vxt_many_kernels(40, &len);
  cr_assert_not_null(many);
  write_file(paths[2], many, len);
  free(many);
}

Test(conformance, images_are_byte_identical_to_upstream_vxbin_py) {
  const vxt_daemon *ds[2] = {&d2, &d3};
  for (int di = 0; di < 2; di++) {
    char paths[3][512];
    sources(ds[di]->dir, paths);
    for (int si = 0; si < 3; si++) {
      uint8_t *obj, *image, *elf;
      size_t obj_size, image_size, elf_size;
      compile(ds[di], paths[si], "m", &obj, &obj_size, &image, &image_size);
      char err[4096];
      cr_assert_eq(vxr_link_sdk_elf(SDK, VXT_LLD, VXT_LIBC, VXT_LIBGCC, obj, obj_size,
                                    image_entry(obj, obj_size), di ? 3 : 2, &elf, &elf_size, err, sizeof err),
                   0, "%s", err);
      char elfp[512], binp[512], cmd[2048], out[4096];
      snprintf(elfp, sizeof elfp, "%s/m.elf", ds[di]->dir);
      snprintf(binp, sizeof binp, "%s/upstream.vxbin", ds[di]->dir);
      write_file(elfp, elf, elf_size);
      snprintf(cmd, sizeof cmd, "OBJCOPY=%s %s %s/sw/kernel/scripts/vxbin.py %s %s 2>&1", VXT_RVOBJCOPY,
               VXT_PYTHON3, VXT_UPSTREAM, elfp, binp);
      cr_assert_eq(vxt_run(cmd, out, sizeof out), 0, "vxbin.py: %s", out);
      size_t n;
      uint8_t *theirs = (uint8_t *)vxt_read_file(binp, &n);
      cr_assert_not_null(theirs);
      cr_assert_eq(n, image_size, "%s, vortex%d: vxbin.py wrote %zu bytes, vortexd %zu", paths[si],
                   di ? 3 : 2, n, image_size);
      size_t at = 0;
      while (at < n && theirs[at] == image[at])
        at++;
      cr_assert_eq(at, n, "%s, vortex%d: the images differ first at byte %zu", paths[si], di ? 3 : 2, at);
      /* a 3.0 image carries the kernel table; a 2.x one does not */
      cr_assert_eq(n >= 8 && memcmp(image + n - 8, "VXSYMTAB", 8) == 0, di == 1, "%s: footer", paths[si]);
      free(theirs), free(elf), free(obj), free(image);
    }
  }
}

/* The kernel names of the record vortexd wrote for src: `vxc compile -v`'s
 * "Kernel: NAME" lines, into names (at most 64), count returned. */
static int kernel_names(const vxt_daemon *t, const char *src, char names[64][128]) {
  char cmd[2048];
  static char out[65536];
  snprintf(cmd, sizeof cmd, "%s --no-spawn --socket %s compile -v %s -o %s/v.o | sed -n 's/^Kernel: //p'",
           VXT_VXC, t->sock, src, t->dir);
  cr_assert_eq(vxt_run(cmd, out, sizeof out), 0, "%s", out);
  int n = 0;
  for (char *save = NULL, *l = strtok_r(out, "\n", &save); l && n < 64; l = strtok_r(NULL, "\n", &save))
    snprintf(names[n++], 128, "%s", l);
  return n;
}

Test(conformance, upstream_module_loader_finds_every_kernel_by_name) {
  char paths[3][512];
  sources(d3.dir, paths);
  for (int si = 0; si < 3; si++) {
    uint8_t *obj, *image, *elf;
    size_t obj_size, image_size, elf_size;
    compile(&d3, paths[si], "m", &obj, &obj_size, &image, &image_size);
    char err[4096];
    cr_assert_eq(vxr_link_sdk_elf(SDK, VXT_LLD, VXT_LIBC, VXT_LIBGCC, obj, obj_size,
                                  image_entry(obj, obj_size), 3, &elf, &elf_size, err, sizeof err),
                 0, "%s", err);
    char elfp[512];
    snprintf(elfp, sizeof elfp, "%s/m.elf", d3.dir);
    write_file(elfp, elf, elf_size);
    static char names[64][128];
    int n = kernel_names(&d3, paths[si], names);
    cr_assert_geq(n, 1, "%s", paths[si]);
    for (int k = 0; k < n; k++) {
      char cmd[2048], want[256], got[512];
      /* the address of its entry symbol in the image */
      snprintf(cmd, sizeof cmd,
               "riscv64-unknown-elf-nm %s | awk '$3 == \"__vx_kentry_%.127s\" { print \"0x\" $1 }'", elfp,
               names[k]);
      cr_assert_eq(vxt_run(cmd, want, sizeof want), 0);
      cr_assert_neq(want[0], '\0', "%s: no __vx_kentry_%s", paths[si], names[k]);
      unsigned long long pc = strtoull(want, NULL, 16);
      snprintf(cmd, sizeof cmd, "%s %s/m.vxbin '%.127s'", VXT_MODULE_NAMES, d3.dir, names[k]);
      cr_assert_eq(vxt_run(cmd, got, sizeof got), 0, "%s", got);
      char expect[256];
      snprintf(expect, sizeof expect, "%.127s 0x%llx\n", names[k], pc);
      cr_assert_str_eq(got, expect, "%s", paths[si]);
    }
    char cmd[2048], got[512];
    snprintf(cmd, sizeof cmd, "%s %s/m.vxbin no_such_kernel main", VXT_MODULE_NAMES, d3.dir);
    cr_assert_eq(vxt_run(cmd, got, sizeof got), 0, "%s", got);
    cr_assert_str_eq(got, "no_such_kernel refused\nmain refused\n");
    free(elf), free(obj), free(image);
  }
  /* a 2.x image has no table: upstream sees one kernel, main, at its start */
  uint8_t *obj, *image;
  size_t obj_size, image_size;
  compile(&d2, paths[1], "m", &obj, &obj_size, &image, &image_size);
  char cmd[2048], got[512];
  snprintf(cmd, sizeof cmd, "%s %s/m.vxbin main add::apply", VXT_MODULE_NAMES, d2.dir);
  cr_assert_eq(vxt_run(cmd, got, sizeof got), 0, "%s", got);
  cr_assert_str_eq(got, "main 0x80000000\nadd::apply refused\n");
  free(obj), free(image);
}
