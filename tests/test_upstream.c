/*
 * test_upstream.c - vortexd's images against upstream Vortex's own tools,
 * built from upstream's files (tests/upstream_sdk.cmake; this suite exists
 * only when they are there): modules compiled by a daemon whose
 * vortex_sdk is upstream's kernel SDK, on Vortex 2.x and 3.0, RV32 and
 * RV64 (each linked at upstream's STARTUP_ADDR of its XLEN), are
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

#include "runtime/mgpu/vxr_vxbin.h"
#include "vxt.h"

/* One daemon per target, each with upstream's SDK of its XLEN. */
static const struct {
  const char *target, *sdk, *libc, *libgcc;
  uint32_t abi, xlen;
  unsigned long long startup; /* upstream's STARTUP_ADDR for the XLEN */
} targets[4] = {
    {"vortex2-rv32", VXT_UPSTREAM_SDK_DIR "/rv32", VXT_LIBC, VXT_LIBGCC, 2, 32, 0x80000000ull},
    {"vortex3-rv32", VXT_UPSTREAM_SDK_DIR "/rv32", VXT_LIBC, VXT_LIBGCC, 3, 32, 0x80000000ull},
    {"vortex2-rv64", VXT_UPSTREAM_SDK_DIR "/rv64", VXT_LIBC64, VXT_LIBGCC64, 2, 64, 0x180000000ull},
    {"vortex3-rv64", VXT_UPSTREAM_SDK_DIR "/rv64", VXT_LIBC64, VXT_LIBGCC64, 3, 64, 0x180000000ull},
};
static vxt_daemon ds[4];

static void start(void) {
  for (int i = 0; i < 4; i++) {
    char flag[512];
    snprintf(flag, sizeof flag, "--vortex-sdk=%s", targets[i].sdk);
    setenv("VORTEXD_TARGET", targets[i].target, 1);
    cr_assert_eq(vxt_daemon_start(&ds[i], flag), 0);
  }
  unsetenv("VORTEXD_TARGET");
}

static void stop(void) {
  for (int i = 0; i < 4; i++)
    if (ds[i].pid > 0) vxt_daemon_stop(&ds[i]);
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
  /* vxc sends its own target: the one of this daemon's SDK */
  snprintf(cmd, sizeof cmd, "%s --no-spawn --socket %s compile --target %s %s -o %s/%s.o 2>&1", VXT_VXC,
           t->sock, targets[t - ds].target, src, t->dir, stem);
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
  for (int di = 0; di < 4; di++) {
    const vxt_daemon *t = &ds[di];
    const char *tn = targets[di].target;
    char paths[3][512];
    sources(t->dir, paths);
    for (int si = 0; si < 3; si++) {
      uint8_t *obj, *image, *elf;
      size_t obj_size, image_size, elf_size;
      compile(t, paths[si], "m", &obj, &obj_size, &image, &image_size);
      char err[4096];
      cr_assert_eq(vxr_link_sdk_elf(targets[di].sdk, VXT_LD, targets[di].libc, targets[di].libgcc, obj,
                                    obj_size, image_entry(obj, obj_size), targets[di].abi, &elf, &elf_size,
                                    err, sizeof err),
                   0, "%s", err);
      char elfp[512], binp[512], cmd[2048], out[4096];
      snprintf(elfp, sizeof elfp, "%s/m.elf", t->dir);
      snprintf(binp, sizeof binp, "%s/upstream.vxbin", t->dir);
      write_file(elfp, elf, elf_size);
      snprintf(cmd, sizeof cmd, "OBJCOPY=%s %s %s/sw/kernel/scripts/vxbin.py %s %s 2>&1", VXT_RVOBJCOPY,
               VXT_PYTHON3, VXT_UPSTREAM, elfp, binp);
      cr_assert_eq(vxt_run(cmd, out, sizeof out), 0, "vxbin.py: %s", out);
      size_t n;
      uint8_t *theirs = (uint8_t *)vxt_read_file(binp, &n);
      cr_assert_not_null(theirs);
      cr_assert_eq(n, image_size, "%s, %s: vxbin.py wrote %zu bytes, vortexd %zu", paths[si], tn, n,
                   image_size);
      size_t at = 0;
      while (at < n && theirs[at] == image[at])
        at++;
      cr_assert_eq(at, n, "%s, %s: the images differ first at byte %zu", paths[si], tn, at);
      /* loaded where upstream's loader starts it: min_vma, STARTUP_ADDR */
      uint64_t min_vma = 0;
      for (int b = 7; b >= 0; b--)
        min_vma = min_vma << 8 | image[b];
      cr_assert_eq(min_vma, targets[di].startup, "%s, %s: min_vma 0x%llx", paths[si], tn,
                   (unsigned long long)min_vma);
      /* a 3.0 image carries the kernel table; a 2.x one does not */
      cr_assert_eq(n >= 8 && memcmp(image + n - 8, "VXSYMTAB", 8) == 0, targets[di].abi == 3,
                   "%s, %s: footer", paths[si], tn);
      free(theirs), free(elf), free(obj), free(image);
    }
  }
}

/* The kernel names of the record vortexd wrote for src: `vxc compile -v`'s
 * "Kernel: NAME" lines, into names (at most 64), count returned. */
static int kernel_names(const vxt_daemon *t, const char *src, char names[64][128]) {
  char cmd[2048];
  static char out[65536];
  snprintf(cmd, sizeof cmd,
           "%s --no-spawn --socket %s compile --target %s -v %s -o %s/v.o | sed -n 's/^Kernel: //p'", VXT_VXC,
           t->sock, targets[t - ds].target, src, t->dir);
  cr_assert_eq(vxt_run(cmd, out, sizeof out), 0, "%s", out);
  int n = 0;
  for (char *save = NULL, *l = strtok_r(out, "\n", &save); l && n < 64; l = strtok_r(NULL, "\n", &save))
    snprintf(names[n++], 128, "%s", l);
  return n;
}

/* Upstream's loader on every 3.0 module of one 3.0 target (index di of
 * targets). */
static void kernels_by_name(int di) {
  const vxt_daemon *d3 = &ds[di];
  char paths[3][512];
  sources(d3->dir, paths);
  for (int si = 0; si < 3; si++) {
    uint8_t *obj, *image, *elf;
    size_t obj_size, image_size, elf_size;
    compile(d3, paths[si], "m", &obj, &obj_size, &image, &image_size);
    char err[4096];
    cr_assert_eq(vxr_link_sdk_elf(targets[di].sdk, VXT_LD, targets[di].libc, targets[di].libgcc, obj,
                                  obj_size, image_entry(obj, obj_size), 3, &elf, &elf_size, err, sizeof err),
                 0, "%s", err);
    char elfp[512];
    snprintf(elfp, sizeof elfp, "%s/m.elf", d3->dir);
    write_file(elfp, elf, elf_size);
    static char names[64][128];
    int n = kernel_names(d3, paths[si], names);
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
      snprintf(cmd, sizeof cmd, "%s %s/m.vxbin '%.127s'", VXT_MODULE_NAMES, d3->dir, names[k]);
      cr_assert_eq(vxt_run(cmd, got, sizeof got), 0, "%s", got);
      char expect[256];
      snprintf(expect, sizeof expect, "%.127s 0x%llx\n", names[k], pc);
      cr_assert_str_eq(got, expect, "%s, %s", paths[si], targets[di].target);
    }
    char cmd[2048], got[512];
    snprintf(cmd, sizeof cmd, "%s %s/m.vxbin no_such_kernel main", VXT_MODULE_NAMES, d3->dir);
    cr_assert_eq(vxt_run(cmd, got, sizeof got), 0, "%s", got);
    cr_assert_str_eq(got, "no_such_kernel refused\nmain refused\n");
    free(elf), free(obj), free(image);
  }
}

/* A 2.x image has no table: upstream sees one kernel, main, at its start
 * (index di of targets). */
static void one_main(int di) {
  char paths[3][512];
  sources(ds[di].dir, paths);
  uint8_t *obj, *image;
  size_t obj_size, image_size;
  compile(&ds[di], paths[1], "m", &obj, &obj_size, &image, &image_size);
  char cmd[2048], got[512], want[128];
  snprintf(cmd, sizeof cmd, "%s %s/m.vxbin main add::apply", VXT_MODULE_NAMES, ds[di].dir);
  cr_assert_eq(vxt_run(cmd, got, sizeof got), 0, "%s", got);
  snprintf(want, sizeof want, "main 0x%llx\nadd::apply refused\n", targets[di].startup);
  cr_assert_str_eq(got, want, "%s", targets[di].target);
  free(obj), free(image);
}

Test(conformance, upstream_module_loader_finds_every_kernel_by_name) {
  for (int di = 0; di < 4; di++)
    if (targets[di].abi == 3)
      kernels_by_name(di);
    else
      one_main(di);
}
