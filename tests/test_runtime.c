/*
 * test_runtime.c - libvortexd_runtime through the MLIR GPU runtime ABI,
 * called the way code lowered by gpu-to-llvm calls it: mgpuModuleLoad on
 * the gpu.binary's text, mgpuModuleGetFunction, then mgpuLaunchKernel with
 * each memref as its expanded descriptor (allocated, aligned, offset,
 * sizes, strides) and scalars by address; memory from mgpuMemAlloc or
 * registered with mgpuMemHostRegisterMemRef.  Kernels come from a real
 * vortexd and run on the emulated device.  Criterion runs each test in a
 * process of its own, so each starts with a fresh runtime.
 */
#define _GNU_SOURCE /* memmem */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <ctype.h>
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "client/vxc.h"
#include "vxt.h"

/* The ABI, as MLIR's runtime wrappers declare it. */
void *mgpuModuleLoad(void *data, size_t size);
void *mgpuModuleGetFunction(void *module, const char *name);
void mgpuLaunchKernel(void *function, intptr_t gx, intptr_t gy, intptr_t gz, intptr_t bx, intptr_t by,
                      intptr_t bz, int32_t smem, void *stream, void **params, void **extra, size_t nparams);
void *mgpuStreamCreate(void);
void mgpuStreamSynchronize(void *stream);
void mgpuStreamDestroy(void *stream);
void *mgpuMemAlloc(uint64_t size, void *stream, bool host_shared);
void mgpuMemFree(void *ptr, void *stream);
void mgpuMemcpy(void *dst, void *src, size_t size, void *stream);
void mgpuMemHostRegisterMemRef(int64_t rank, void *descriptor, int64_t elem_size);

typedef struct {
  float *allocated, *aligned;
  int64_t offset, size, stride;
} memref1d;

static vxt_daemon d;
static char *saxpy, *saxpy_blob; /* the module's text; what the host lowering makes of it */
static size_t saxpy_len, saxpy_blob_len;

/* SAXPY_ARGS: what the host passes for saxpy (n, a, x, y), as the host
 * lowering's argument line says it (lowering/vxl.h, VXL_HOST_ARGS_TAG). */
#define SAXPY_ARGS "// vortexd-host-args: saxpy s4 s4 m1 m1\n"

/* What the host lowering puts in a gpu.binary for a module of text (n
 * bytes): header lines, then the text.  malloc(); *len bytes. */
static char *blob(const char *header, const char *text, size_t n, size_t *len) {
  size_t h = strlen(header);
  char *b = malloc(h + n + 1);
  cr_assert_not_null(b);
  memcpy(b, header, h);
  memcpy(b + h, text, n);
  b[h + n] = '\0';
  *len = h + n;
  return b;
}

static void start(void) {
  cr_assert_eq(vxt_daemon_start(&d, NULL), 0);
  setenv("VORTEXD_SOCKET", d.sock, 1);
  setenv("VORTEXD_CACHE_DIR", d.cache, 1);
  setenv("VORTEXD_RUNTIME_ERRORS", "return", 1); /* failures are checked here, not exits */
  saxpy = vxt_read_file(VXT_EXAMPLES_DIR "/saxpy.mlir", &saxpy_len);
  cr_assert_not_null(saxpy);
  saxpy_blob = blob(SAXPY_ARGS, saxpy, saxpy_len, &saxpy_blob_len);
}

static void stop(void) {
  if (d.pid > 0) vxt_daemon_stop(&d);
  free(saxpy);
  free(saxpy_blob);
}

TestSuite(runtime, .init = start, .fini = stop, .timeout = 120);

/* Launches saxpy (n, a, x, y) over n elements, 32 threads per block. */
static void launch_saxpy(void *fn, int32_t n, float a, memref1d *x, memref1d *y) {
  void *params[] = {&n,          &a,         &x->allocated, &x->aligned,
                    &x->offset,  &x->size,   &x->stride,    &y->allocated,
                    &y->aligned, &y->offset, &y->size,      &y->stride};
  void *stream = mgpuStreamCreate();
  mgpuLaunchKernel(fn, (n + 31) / 32, 1, 1, 32, 1, 1, 0, stream, params, NULL, 12);
  mgpuStreamSynchronize(stream);
  mgpuStreamDestroy(stream);
}

Test(runtime, host_registered_memrefs_round_trip_through_a_launch) {
  enum { N = 100 };
  float *x = malloc(N * sizeof *x), *y = malloc((N + 3) * sizeof *y);
  for (int i = 0; i < N; i++)
    x[i] = (float)i, y[i + 3] = 1.0f;
  /* y's descriptor has an offset of 3 elements: the device must see y + 3 */
  memref1d mx = {x, x, 0, N, 1}, my = {y, y, 3, N, 1};
  mgpuMemHostRegisterMemRef(1, &mx, 4);
  mgpuMemHostRegisterMemRef(1, &my, 4);
  void *m = mgpuModuleLoad(saxpy_blob, saxpy_blob_len);
  cr_assert_not_null(m, "the module loads through vortexd");
  void *fn = mgpuModuleGetFunction(m, "saxpy");
  cr_assert_not_null(fn);
  launch_saxpy(fn, N, 2.0f, &mx, &my);
  for (int i = 0; i < N; i++)
    cr_assert_float_eq(y[i + 3], 2.0f * (float)i + 1.0f, 1e-6, "y[%d] = %f", i, y[i + 3]);
  free(x);
  free(y);
}

/* Two registered memrefs that touch in host memory (halves of one array,
 * as two arrays on the stack may be): each is mirrored on its own, and
 * the first byte of the second is not taken for the end of the first. */
Test(runtime, adjacent_registered_memrefs_stay_apart) {
  enum { N = 8 };
  float *both = malloc(2 * N * sizeof *both), *y = both, *x = both + N; /* x right after y */
  for (int i = 0; i < N; i++)
    x[i] = (float)i, y[i] = 1.0f;
  memref1d mx = {x, x, 0, N, 1}, my = {y, y, 0, N, 1};
  mgpuMemHostRegisterMemRef(1, &mx, 4);
  mgpuMemHostRegisterMemRef(1, &my, 4);
  void *fn = mgpuModuleGetFunction(mgpuModuleLoad(saxpy_blob, saxpy_blob_len), "saxpy");
  cr_assert_not_null(fn);
  launch_saxpy(fn, N, 3.0f, &mx, &my);
  for (int i = 0; i < N; i++) {
    cr_assert_float_eq(x[i], (float)i, 1e-6, "x[%d] = %f: written through y's mirror", i, x[i]);
    cr_assert_float_eq(y[i], 3.0f * (float)i + 1.0f, 1e-6, "y[%d] = %f", i, y[i]);
  }
  free(both);
}

/* A module variable the kernels write (CUDA's __device__ int counter). */
static const char counter_module[] =
    "module attributes {gpu.container_module} {\n"
    "  gpu.module @kernels {\n"
    "    memref.global @counter : memref<1xi32> = dense<40>\n"
    "    gpu.func @bump(%out: memref<?xi32>) kernel {\n"
    "      %c0 = arith.constant 0 : index\n      %t = gpu.thread_id x\n"
    "      %first = arith.cmpi eq, %t, %c0 : index\n"
    "      scf.if %first {\n"
    "        %g = memref.get_global @counter : memref<1xi32>\n"
    "        %v = memref.load %g[%c0] : memref<1xi32>\n        %c1 = arith.constant 1 : i32\n"
    "        %w = arith.addi %v, %c1 : i32\n        memref.store %w, %g[%c0] : memref<1xi32>\n"
    "        memref.store %w, %out[%c0] : memref<?xi32>\n      }\n"
    "      gpu.return\n    }\n"
    "    gpu.func @peek(%out: memref<?xi32>) kernel {\n"
    "      %c0 = arith.constant 0 : index\n      %c1 = arith.constant 1 : index\n"
    "      %g = memref.get_global @counter : memref<1xi32>\n"
    "      %v = memref.load %g[%c0] : memref<1xi32>\n      memref.store %v, %out[%c1] : memref<?xi32>\n"
    "      gpu.return\n    }\n  }\n}\n";

/* A module's variables start at their initializers and last as long as the
 * module, as CUDA's do: what one launch writes, the next launch of any
 * kernel of the module reads, also
 * on another emulated device (another block size) and after a device is
 * replaced. */
Test(runtime, module_variables_carry_from_one_launch_to_the_next) {
  int32_t *out = mgpuMemAlloc(2 * sizeof *out, NULL, false);
  cr_assert_not_null(out);
  memref1d m = {(float *)out, (float *)out, 0, 2, 1};
  size_t clen;
  char *cblob = blob("// vortexd-host-args: bump m1\n// vortexd-host-args: peek m1\n", counter_module,
                     sizeof counter_module - 1, &clen);
  void *mod = mgpuModuleLoad(cblob, clen);
  void *bump = mgpuModuleGetFunction(mod, "bump"), *peek = mgpuModuleGetFunction(mod, "peek");
  cr_assert(bump && peek);
  void *p[] = {&m.allocated, &m.aligned, &m.offset, &m.size, &m.stride};
  for (int i = 0; i < 3; i++)
    mgpuLaunchKernel(bump, 1, 1, 1, 1, 1, 1, 0, NULL, p, NULL, 5);
  cr_assert_eq(out[0], 43, "three launches counted from the initializer, 40: %d", out[0]);
  mgpuLaunchKernel(peek, 1, 1, 1, 4, 1, 1, 0, NULL, p, NULL, 5); /* another block size: another device */
  cr_assert_eq(out[1], 43, "the other device sees the count: %d", out[1]);
  mgpuLaunchKernel(bump, 1, 1, 1, 4, 1, 1, 0, NULL, p, NULL, 5);
  cr_assert_eq(out[0], 44);
  mgpuLaunchKernel(peek, 1, 1, 1, 1, 1, 1, 0, NULL, p, NULL, 5); /* the first device, behind by one */
  cr_assert_eq(out[1], 44, "the first device was given the newer count: %d", out[1]);
  free(cblob);
}

/* A kernel whose record does not match what the host passes (a record
 * from a forged cache entry: a scalar wider than the host's value, a
 * memref of another rank, another argument count), or a module whose host
 * object gives no argument types, is never launched: nothing is read from
 * the host's values, and the refusal says which argument. */
Test(runtime, a_launch_reads_no_more_than_the_hosts_own_values) {
  static const char wide[] = "module attributes {gpu.container_module} {\n"
                             "  gpu.module @kernels {\n"
                             "    gpu.func @put(%v: i64, %out: memref<?xi64>) kernel {\n"
                             "      %c0 = arith.constant 0 : index\n"
                             "      memref.store %v, %out[%c0] : memref<?xi64>\n"
                             "      gpu.return\n    }\n  }\n}\n";
  static const struct {
    const char *header, *says;
  } cases[] = {
      {"// vortexd-host-args: put s8 m1\n", NULL},
      {"// vortexd-host-args: put s4 m1\n", "argument 0 of kernel put"},
      {"// vortexd-host-args: put s8 m2\n", "argument 1 of kernel put"},
      {"// vortexd-host-args: put s8\n", "kernel put takes 2 arguments, the program passes 1"},
      {"", "gives no host argument types for kernel put"},
  };
  char log[300];
  snprintf(log, sizeof log, "%.200s/stderr.log", d.dir);
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    int64_t *out = mgpuMemAlloc(sizeof *out, NULL, false);
    cr_assert_not_null(out);
    *out = 0;
    struct {
      int64_t *allocated, *aligned;
      int64_t offset, size, stride;
    } m = {out, out, 0, 1, 1};
    int64_t v = 0x1122334455667788;
    size_t len;
    char *b = blob(cases[i].header, wide, sizeof wide - 1, &len);
    void *fn = mgpuModuleGetFunction(mgpuModuleLoad(b, len), "put");
    cr_assert_not_null(fn);
    void *p[] = {&v, &m.allocated, &m.aligned, &m.offset, &m.size, &m.stride};
    fflush(stderr);
    int saved = dup(2), fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    cr_assert(saved >= 0 && fd >= 0);
    dup2(fd, 2);
    close(fd);
    mgpuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, NULL, p, NULL, 6);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    size_t n = 0;
    char *said = vxt_read_file(log, &n);
    cr_assert_not_null(said);
    if (!cases[i].says) {
      cr_assert_eq(*out, v, "a matching launch ran: %s", said);
    } else {
      cr_assert_eq(*out, 0, "case %zu: nothing ran", i);
      cr_assert_not_null(strstr(said, cases[i].says), "case %zu: %s", i, said);
    }
    free(said);
    free(b);
    mgpuMemFree(out, NULL);
  }
}

Test(runtime, device_memory_persists_across_launches_and_loads_hit) {
  enum { N = 64 };
  float *dx = mgpuMemAlloc(N * sizeof(float), NULL, false),
        *dy = mgpuMemAlloc(N * sizeof(float), NULL, false);
  cr_assert(dx && dy);
  float h[N];
  for (int i = 0; i < N; i++)
    h[i] = 1.0f;
  mgpuMemcpy(dx, h, sizeof h, NULL);
  memset(h, 0, sizeof h);
  mgpuMemcpy(dy, h, sizeof h, NULL);
  memref1d mx = {dx, dx, 0, N, 1}, my = {dy, dy, 0, N, 1};
  void *fn = mgpuModuleGetFunction(mgpuModuleLoad(saxpy_blob, saxpy_blob_len), "saxpy");
  for (int rep = 0; rep < 3; rep++) /* y += 1 * x, three times, in device memory */
    launch_saxpy(fn, N, 1.0f, &mx, &my);
  mgpuMemcpy(h, dy, sizeof h, NULL);
  for (int i = 0; i < N; i++)
    cr_assert_float_eq(h[i], 3.0f, 1e-6, "y[%d] = %f", i, h[i]);
  /* the same module text again: served by the process, no daemon needed */
  cr_assert_eq(vxt_daemon_stop(&d), 0);
  d.pid = 0;
  cr_assert_not_null(mgpuModuleGetFunction(mgpuModuleLoad(saxpy_blob, saxpy_blob_len), "saxpy"));
  mgpuMemFree(dx, NULL);
  mgpuMemFree(dy, NULL);
}

/* The emulated device of a kernel is kept between its launches: launches
 * of two kernels interleaved, each with its own arguments and block size,
 * each see exactly their own inputs, never what the last launch left. */
Test(runtime, kept_devices_start_every_launch_clean) {
  enum { N = 96 };
  size_t len = 0;
  char *two = vxt_read_file(VXT_EXAMPLES_DIR "/two_kernels.mlir", &len);
  cr_assert_not_null(two);
  size_t tlen;
  char *tblob = blob("// vortexd-host-args: fill s4 m1 s8\n// vortexd-host-args: transpose_add m2 m2 s8\n",
                     two, len, &tlen);
  void *fill = mgpuModuleGetFunction(mgpuModuleLoad(tblob, tlen), "fill");
  void *sax = mgpuModuleGetFunction(mgpuModuleLoad(saxpy_blob, saxpy_blob_len), "saxpy");
  cr_assert(fill && sax);
  float *dx = mgpuMemAlloc(N * sizeof(float), NULL, false),
        *dy = mgpuMemAlloc(N * sizeof(float), NULL, false);
  memref1d mx = {dx, dx, 0, N, 1}, my = {dy, dy, 0, N, 1};
  float h[N];
  for (int round = 0; round < 4; round++) {
    /* x = round + 1 everywhere, with blocks of 16 or 64 threads */
    float v = (float)(round + 1);
    intptr_t n = N, block = round % 2 ? 64 : 16;
    void *fp[] = {&v, &mx.allocated, &mx.aligned, &mx.offset, &mx.size, &mx.stride, &n};
    mgpuLaunchKernel(fill, (N + block - 1) / block, 1, 1, block, 1, 1, 0, NULL, fp, NULL, 7);
    memset(h, 0, sizeof h);
    mgpuMemcpy(dy, h, sizeof h, NULL);
    launch_saxpy(sax, N - round, 0.5f * (float)round, &mx, &my); /* y = a x over the first N - round */
    mgpuMemcpy(h, dy, sizeof h, NULL);
    for (int i = 0; i < N; i++) {
      float want = i < N - round ? 0.5f * (float)round * v : 0.0f;
      cr_assert_float_eq(h[i], want, 1e-6, "round %d: y[%d] = %f, want %f", round, i, h[i], want);
    }
  }
  mgpuMemFree(dx, NULL);
  mgpuMemFree(dy, NULL);
  free(two);
  free(tblob);
}

/* What the host lowering puts in a gpu.binary: the key line, then the text. */
static char *with_key(const char *key, size_t *len) {
  char *t = NULL;
  FILE *f = open_memstream(&t, len);
  fprintf(f, "// vortexd-key: %s\n" SAXPY_ARGS "%s", key, saxpy);
  fclose(f);
  return t;
}

Test(runtime, without_a_daemon_the_cache_is_read_directly_else_a_clear_error) {
  /* warm the cache through the daemon, learn the key */
  char cmd[1024], out[4096];
  snprintf(cmd, sizeof cmd, "%s --no-spawn --socket %s compile --json %s/saxpy.mlir", VXT_VXC, d.sock,
           VXT_EXAMPLES_DIR);
  cr_assert_eq(vxt_run(cmd, out, sizeof out), 0, "%s", out);
  char key[65];
  const char *k = strstr(out, "\"key\":\"");
  cr_assert_not_null(k);
  memcpy(key, k + 7, 64);
  key[64] = '\0';
  cr_assert_eq(vxt_daemon_stop(&d), 0);
  d.pid = 0;
  size_t len;
  char *text = with_key(key, &len);
  enum { N = 8 };
  float x[N], y[N];
  for (int i = 0; i < N; i++)
    x[i] = (float)i, y[i] = 0.0f;
  memref1d mx = {x, x, 0, N, 1}, my = {y, y, 0, N, 1};
  mgpuMemHostRegisterMemRef(1, &mx, 4);
  mgpuMemHostRegisterMemRef(1, &my, 4);
  void *fn = mgpuModuleGetFunction(mgpuModuleLoad(text, len), "saxpy");
  cr_assert_not_null(fn, "read from the cache, no daemon running");
  launch_saxpy(fn, N, 3.0f, &mx, &my);
  for (int i = 0; i < N; i++)
    cr_assert_float_eq(y[i], 3.0f * (float)i, 1e-6);
  free(text);
  /* an entry in neither: a clear error, no module */
  char other[65];
  memset(other, 'a', 64);
  other[64] = '\0';
  char *t2 = with_key(other, &len);
  t2[len - 2] = ' '; /* another text, so not the one loaded */
  /* loaded lazily: the failure shows at the module's first use */
  cr_assert_null(mgpuModuleGetFunction(mgpuModuleLoad(t2, len), "saxpy"));
  free(t2);
}

/* ---- whole programs through `vxc run` ---- */

/* Runs FILE with `vxc run` against this suite's daemon and checks its
 * output with FileCheck-22 against the file's own CHECK lines.  Returns 1
 * when FileCheck accepts it; out gets what the program printed (stdout and
 * stderr). */
static int run_and_check(const char *file, char *out, size_t cap) {
  char cmd[2048], log[128];
  snprintf(log, sizeof log, "%.100s/run.out", d.dir);
  snprintf(cmd, sizeof cmd,
           "timeout 300 %s --no-spawn --socket %s run %s > %s 2>&1; %s %s --input-file=%s 2>&1", VXT_VXC,
           d.sock, file, log, VXT_FILECHECK, file, log);
  char fc[4096];
  int rc = vxt_run(cmd, fc, sizeof fc);
  size_t n;
  char *printed = vxt_read_file(log, &n);
  snprintf(out, cap, "%s", printed ? printed : "");
  free(printed);
  return rc == 0;
}

Test(runtime, vxc_run_executes_a_whole_program) {
  static char out[65536];
  cr_assert(run_and_check(VXT_KERNELS_DIR "/../programs/launch_and_copy.mlir", out, sizeof out), "%s", out);
  /* the program's kernels went through the daemon's cache */
  char cmd[512], st[4096];
  snprintf(cmd, sizeof cmd, "%s --no-spawn --socket %s stats --json", VXT_VXC, d.sock);
  cr_assert_eq(vxt_run(cmd, st, sizeof st), 0);
  cr_assert_not_null(strstr(st, "\"misses\":1,"), "one module compiled: %s", st);
  cr_assert(run_and_check(VXT_KERNELS_DIR "/../programs/launch_and_copy.mlir", out, sizeof out), "%s", out);
  cr_assert_eq(vxt_run(cmd, st, sizeof st), 0);
  cr_assert_not_null(strstr(st, "\"hits\":1,"), "the second run's launch hit: %s", st);
}

/* An SDK directory for target (vortexN-rvM) in dir/sdk-TARGET, with the
 * emulator's device runtime standing in for Vortex's kernel SDK (link.ld
 * and that kernel ABI's startup objects, of that width); its path in sdk. */
static void make_sdk_for(const char *dir, const char *target, char *sdk, size_t cap) {
  char cmd[1024], out[512];
  const char *obj = strstr(target, "64") ? VXT_DEVICE_OBJ_DIR "/rv64" : VXT_DEVICE_OBJ_DIR;
  snprintf(sdk, cap, "%.100s/sdk-%s", dir, target);
  snprintf(cmd, sizeof cmd, "mkdir -p %s && ln -sf %s %s/link.ld && ln -sf %s/vx_tls.o %s/vx_print.o %s/",
           sdk, VXT_DEVICE_LINK_LD, sdk, obj, obj, sdk);
  cr_assert_eq(vxt_run(cmd, out, sizeof out), 0, "%s", out);
  if (target[6] == '3')
    snprintf(cmd, sizeof cmd, "ln -sf %s/vx_kmu.o %s/", obj, sdk);
  else
    snprintf(cmd, sizeof cmd, "ln -sf %s/vx_start.o %s/vx_spawn.o %s/", obj, obj, sdk);
  cr_assert_eq(vxt_run(cmd, out, sizeof out), 0, "%s", out);
}

/* Runs each of files (NULL-terminated) with `vxc run` against a daemon of
 * its own that compiles for target (a --target value), on three devices
 * in turn: the emulated one with its kept devices, the emulated one with
 * a new device every launch, and the Vortex backend through the stand-in
 * libvortex of that width; checks each output with FileCheck-22 against
 * the file's CHECK lines, then that the daemon compiled for that target.
 * Fails the test, naming the file, target and device, otherwise. */
static void run_on_target(const char *target, const char *const *files) {
  static char out[65536];
  vxt_daemon t = {0};
  char cmd[4096], log[256], fc[4096], sdk[256], standin[1024];
  /* the daemon's own default target is vortex2-rv32: `vxc run --target`
   * alone decides, carried in the program to every compile the runtime asks */
  cr_assert_eq(vxt_daemon_start(&t, NULL), 0);
  make_sdk_for(t.dir, target, sdk, sizeof sdk);
  snprintf(standin, sizeof standin,
           "VORTEXD_DEVICE=vortex VORTEXD_LIBVORTEX=%s VORTEXD_VORTEX_SDK=%s VORTEX_STANDIN_XLEN=%s",
           VXT_STANDIN, sdk, strstr(target, "64") ? "64" : "32");
  const char *envs[] = {"", "VORTEXD_EMULATED_DEVICES=0", standin};
  snprintf(log, sizeof log, "%.100s/run.out", t.dir);
  for (const char *const *f = files; *f; f++)
    for (unsigned e = 0; e < 3; e++) {
      snprintf(
          cmd, sizeof cmd,
          "%s timeout 300 %s --no-spawn --socket %s run --target %s %s > %s 2>&1; %s %s --input-file=%s 2>&1",
          envs[e], VXT_VXC, t.sock, target, *f, log, VXT_FILECHECK, *f, log);
      int rc = vxt_run(cmd, fc, sizeof fc);
      size_t n;
      char *printed = vxt_read_file(log, &n);
      snprintf(out, sizeof out, "%s", printed ? printed : "");
      free(printed);
      cr_assert_eq(rc, 0, "%s on %s (%s): %s\n%s", *f, target, envs[e], out, fc);
    }
  /* every entry's options name the target (the listing is read whole: a
   * reader that stopped early would leave vxc to die of SIGPIPE) */
  static char ls[1 << 20];
  snprintf(cmd, sizeof cmd, "%s --no-spawn --socket %s ls --json", VXT_VXC, t.sock);
  cr_assert_eq(vxt_run(cmd, ls, sizeof ls), 0, "%s", ls);
  char want[64];
  snprintf(want, sizeof want, "vortex_abi=%c;xlen=%s", target[6], strstr(target, "64") ? "64" : "32");
  cr_assert_not_null(strstr(ls, want), "%s: the module compiled for it: %s", target, ls);
  cr_assert_eq(vxt_daemon_stop(&t), 0);
}

static const char *const every_target[] = {"vortex2-rv32", "vortex2-rv64", "vortex3-rv32", "vortex3-rv64"};

/* A program's kernels run whatever the daemon compiles them for: Vortex
 * 2.x or 3.0 (then started by the emulated scheduler), RV32 or RV64
 * (8-byte device pointers in the argument buffer), on each device; the
 * program prints the same.  Writable module variables (CUDA's __device__
 * int t = 100;) start at their initializers and keep their values from
 * one launch of their module to the next, other modules' launches in
 * between.  A module of three kernels runs each by its name on 3.0 (the
 * Vortex backend: vortex2.h's vx_module_get_kernel). */
Test(runtime, programs_run_on_every_target_and_device) {
  static const char *const files[] = {VXT_KERNELS_DIR "/../programs/launch_and_copy.mlir",
                                      VXT_KERNELS_DIR "/../programs/module_variable_initializer.mlir",
                                      VXT_KERNELS_DIR "/../programs/module_variable_counters.mlir",
                                      VXT_KERNELS_DIR "/../programs/three_kernels.mlir", NULL};
  for (unsigned i = 0; i < 4; i++)
    run_on_target(every_target[i], files);
}

/* A whole program whose kernel @mix has n steps of straight-line code
 * (three instructions or more each): a = in[t], then a += (a ^ k_i)^2 for
 * constants k_i, all mod 2^32, out[t] = a, for t < 4 and in[t] = t.  Its
 * CHECK line holds the results computed here.  Written to path. */
static void write_big_kernel_program(const char *path, unsigned n) {
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f);
  fprintf(f, "module attributes {gpu.container_module} {\n  gpu.module @big {\n"
             "    gpu.func @mix(%%in: memref<?xi32>, %%out: memref<?xi32>) kernel {\n"
             "      %%t = gpu.thread_id x\n      %%a0 = memref.load %%in[%%t] : memref<?xi32>\n");
  for (unsigned i = 0; i < n; i++)
    fprintf(f,
            "      %%k%u = arith.constant %u : i32\n      %%x%u = arith.xori %%a%u, %%k%u : i32\n"
            "      %%m%u = arith.muli %%x%u, %%x%u : i32\n      %%a%u = arith.addi %%m%u, %%a%u : i32\n",
            i, (uint32_t)(i * 2654435761u) & 0x7FFFFFFFu, i, i, i, i, i, i, i + 1, i, i);
  fprintf(f, "      memref.store %%a%u, %%out[%%t] : memref<?xi32>\n      gpu.return\n    }\n  }\n", n);
  fprintf(f, "  // CHECK: [");
  for (uint32_t t = 0; t < 4; t++) {
    uint32_t a = t;
    for (unsigned i = 0; i < n; i++) {
      uint32_t x = a ^ ((uint32_t)(i * 2654435761u) & 0x7FFFFFFFu);
      a = x * x + a;
    }
    fprintf(f, "%s%d", t ? ",  " : "", (int32_t)a);
  }
  fprintf(f,
          "]\n"
          "  func.func @main() {\n    %%c0 = arith.constant 0 : index\n    %%c1 = arith.constant 1 : index\n"
          "    %%c4 = arith.constant 4 : index\n    %%h = memref.alloc() : memref<4xi32>\n"
          "    scf.for %%i = %%c0 to %%c4 step %%c1 {\n      %%v = arith.index_cast %%i : index to i32\n"
          "      memref.store %%v, %%h[%%i] : memref<4xi32>\n    }\n"
          "    %%in = gpu.alloc () : memref<4xi32>\n    %%out = gpu.alloc () : memref<4xi32>\n"
          "    gpu.memcpy %%in, %%h : memref<4xi32>, memref<4xi32>\n"
          "    %%di = memref.cast %%in : memref<4xi32> to memref<?xi32>\n"
          "    %%do = memref.cast %%out : memref<4xi32> to memref<?xi32>\n"
          "    gpu.launch_func @big::@mix blocks in (%%c1, %%c1, %%c1) threads in (%%c4, %%c1, %%c1)\n"
          "        args(%%di : memref<?xi32>, %%do : memref<?xi32>)\n"
          "    gpu.memcpy %%h, %%out : memref<4xi32>, memref<4xi32>\n"
          "    %%u = memref.cast %%h : memref<4xi32> to memref<*xi32>\n"
          "    call @printMemrefI32(%%u) : (memref<*xi32>) -> ()\n    return\n  }\n"
          "  func.func private @printMemrefI32(memref<*xi32>)\n}\n");
  cr_assert_eq(fclose(f), 0);
}

/* Kernels of realistic size link and run on every target: 1000 steps
 * make over 16 KiB of code (the object's .text, checked), past what a
 * PC-relative reference to an absolute symbol reaches from an RV64
 * image at 0x80000000. */
Test(runtime, a_kernel_of_more_than_16_kib_of_code_runs_on_every_target) {
  char path[256], obj[256], cmd[2048], out[256];
  snprintf(path, sizeof path, "%.100s/big.mlir", d.dir);
  snprintf(obj, sizeof obj, "%.100s/big.o", d.dir);
  write_big_kernel_program(path, 1000);
  for (unsigned i = 0; i < 4; i++) {
    snprintf(cmd, sizeof cmd,
             "%s --no-spawn --socket %s compile --target %s %s -o %s && riscv64-unknown-elf-size -A %s | "
             "awk '$1 == \".text\" { print $2 }'",
             VXT_VXC, d.sock, every_target[i], path, obj, obj);
    cr_assert_eq(vxt_run(cmd, out, sizeof out), 0, "%s", out);
    unsigned long size = strtoul(out, NULL, 10);
    cr_assert_geq(size, 16384ul, "%s: the module has %lu bytes of code", every_target[i], size);
    const char *const files[] = {path, NULL};
    run_on_target(every_target[i], files);
  }
}

/* A link that fails says why in the linker's own words: an SDK without
 * vx_spawn.o (vx_spawn_threads and the thread model's variables
 * undefined) through the daemon's image link (vxc compile) and the
 * runtime's (the Vortex backend), and a device directory without it
 * through the emulated backend's. */
Test(runtime, link_failures_quote_the_linker) {
  char sdk[256], run[256], cache[256], cmd[4096], out[8192];
  snprintf(sdk, sizeof sdk, "%.100s/sdk-no-spawn", d.dir);
  snprintf(cmd, sizeof cmd,
           "mkdir -p %s && ln -s %s %s/link.ld && cd %s && ln -s %s/vx_start.o %s/vx_tls.o %s/vx_print.o .",
           sdk, VXT_DEVICE_LINK_LD, sdk, sdk, VXT_DEVICE_OBJ_DIR, VXT_DEVICE_OBJ_DIR, VXT_DEVICE_OBJ_DIR);
  cr_assert_eq(vxt_run(cmd, out, sizeof out), 0, "%s", out);
  /* the daemon links the image: vxc compile fails, quoting the linker, and writes nothing */
  snprintf(run, sizeof run, "%.100s/sdk-run", d.dir);
  snprintf(cache, sizeof cache, "%.100s/sdk-cache", d.dir);
  cr_assert_eq(mkdir(run, 0700), 0);
  const char *const args[] = {"--vortex-sdk", sdk, NULL};
  char log[256];
  snprintf(log, sizeof log, "%.100s/sdk-daemon.log", d.dir);
  char sock[300];
  snprintf(sock, sizeof sock, "%s/sock", run);
  pid_t pid = vxt_daemon_start_logged(sock, cache, log, 0, NULL, args);
  cr_assert_gt(pid, 0);
  snprintf(cmd, sizeof cmd,
           "cd %s && %s --no-spawn --socket %s compile %s/saxpy.mlir 2>&1; echo rc=$?; ls saxpy.o 2>&1",
           d.dir, VXT_VXC, sock, VXT_EXAMPLES_DIR);
  vxt_run(cmd, out, sizeof out);
  cr_assert_not_null(
      strstr(out, "riscv64-unknown-elf-ld failed (exit status 1):\n    riscv64-unknown-elf-ld: "), "%s", out);
  cr_assert_not_null(strstr(out, "\n    (.text+0x28): undefined reference to `__vxs_worker'\n"), "%s", out);
  cr_assert_not_null(strstr(out, "rc=2\n"), "%s", out);
  cr_assert_not_null(strstr(out, "No such file"), "no object written: %s", out);
  kill(pid, SIGTERM);
  waitpid(pid, NULL, 0);
  /* the runtime links the image for the Vortex backend */
  snprintf(cmd, sizeof cmd,
           "env -u VORTEXD_RUNTIME_ERRORS VORTEXD_DEVICE=vortex VORTEXD_LIBVORTEX=%s VORTEXD_VORTEX_SDK=%s "
           "%s --no-spawn --socket %s run %s 2>&1; echo rc=$?",
           VXT_STANDIN, sdk, VXT_VXC, d.sock, VXT_KERNELS_DIR "/../programs/launch_and_copy.mlir");
  vxt_run(cmd, out, sizeof out);
  cr_assert_not_null(strstr(out, "riscv64-unknown-elf-ld failed (exit status 1):\nriscv64-unknown-elf-ld: "),
                     "%s", out);
  cr_assert_not_null(strstr(out, "undefined reference to `__vxs_worker'\n"), "%s", out);
  cr_assert_not_null(strstr(out, "rc=1\n"), "%s", out);
  /* and for the emulated device, from a device directory */
  snprintf(
      cmd, sizeof cmd,
      "env -u VORTEXD_RUNTIME_ERRORS VORTEXD_DEVICE_DIR=%s %s --no-spawn --socket %s run %s 2>&1; echo rc=$?",
      sdk, VXT_VXC, d.sock, VXT_KERNELS_DIR "/../programs/launch_and_copy.mlir");
  vxt_run(cmd, out, sizeof out);
  cr_assert_not_null(strstr(out, "riscv64-unknown-elf-ld: cannot find "), "%s", out);
  cr_assert_not_null(strstr(out, "vx_spawn.o: No such file or directory"), "%s", out);
  cr_assert_not_null(strstr(out, "rc=1\n"), "%s", out);
}

/* A gpu.shuffle whose width comes from the host, larger than the warp at
 * run time, stops the kernel at the op on the emulated device of every
 * target: its position and the check printed, the program ended with
 * status 1; the same kernel at the warp's width ran first. */
Test(runtime, a_dynamic_shuffle_width_above_the_warp_stops_at_the_op) {
  static const char file[] = VXT_KERNELS_DIR "/../programs/shuffle_width.mlir";
  for (unsigned i = 0; i < 4; i++) {
    vxt_daemon t = {0};
    char cmd[4096], out[8192];
    cr_assert_eq(vxt_daemon_start(&t, NULL), 0);
    snprintf(
        cmd, sizeof cmd,
        "env -u VORTEXD_RUNTIME_ERRORS %s --no-spawn --socket %s run --target %s %s > %s/run.out 2>&1; echo "
        "rc=$?; %s %s --input-file=%s/run.out 2>&1",
        VXT_VXC, t.sock, every_target[i], file, t.dir, VXT_FILECHECK, file, t.dir);
    vxt_run(cmd, out, sizeof out);
    cr_assert_not_null(strstr(out, "rc=1\n"), "%s: %s", every_target[i], out);
    cr_assert_null(strstr(out, "error:"), "%s: FileCheck: %s", every_target[i], out);
    cr_assert_eq(vxt_daemon_stop(&t), 0);
  }
}

/* A gpu.barrier only half of a block reaches deadlocks on the emulated
 * device of every target, at warps of 4 and 32, and the report names the
 * barrier's line and column in the user's file: the device helpers the
 * barrier is lowered to carry no lines of their own, and on kernel ABI 3
 * the entry the kernel is inlined into has line info too. */
Test(runtime, a_barrier_deadlock_names_the_barrier_on_every_target) {
  static const char file[] = VXT_KERNELS_DIR "/../programs/barrier_deadlock.mlir";
  static const unsigned warps[] = {4, 32};
  for (unsigned i = 0; i < 4; i++)
    for (unsigned w = 0; w < 2; w++) {
      char cmd[4096], out[8192];
      snprintf(cmd, sizeof cmd,
               "env -u VORTEXD_RUNTIME_ERRORS %s --no-spawn --socket %s run --target %s --warp-size %u %s > "
               "%s/deadlock.out 2>&1; echo rc=$?; %s %s --input-file=%s/deadlock.out 2>&1",
               VXT_VXC, d.sock, every_target[i], warps[w], file, d.dir, VXT_FILECHECK, file, d.dir);
      vxt_run(cmd, out, sizeof out);
      cr_assert_not_null(strstr(out, "rc=1\n"), "%s warp %u: %s", every_target[i], warps[w], out);
      cr_assert_null(strstr(out, "error:"), "%s warp %u: FileCheck: %s", every_target[i], warps[w], out);
    }
}

/* A host side in the async dialect lowers the upstream way and runs with
 * MLIR's async runtime; the fill helpers of MLIR's Vulkan and SPIR-V
 * runners are there for programs written for those runners. */
Test(runtime, vxc_run_lowers_async_and_has_the_runner_helpers) {
  static char out[65536];
  cr_assert(run_and_check(VXT_KERNELS_DIR "/../programs/async_fork_join.mlir", out, sizeof out), "%s", out);
  cr_assert(run_and_check(VXT_KERNELS_DIR "/../programs/runner_helpers.mlir", out, sizeof out), "%s", out);
}

/* Writes text to dir/name; path gets the file's path. */
static void write_program(const char *name, const char *text, char *path, size_t cap) {
  snprintf(path, cap, "%.100s/%s", d.dir, name);
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f, "%s", path);
  fputs(text, f);
  fclose(f);
}

/* Modules load lazily: a program's constructors queue every module's
 * compile and return; a module is waited for at its first use, and a
 * module that cannot be had fails there, naming its place in the program
 * and why (the compile's own file:line:col), after what ran before it. */
Test(runtime, a_module_that_cannot_be_had_fails_at_its_first_use) {
  char path[256], cmd[1024], out[8192];
  write_program("two_modules.mlir",
                "module attributes {gpu.container_module} {\n"
                "  gpu.module @good {\n"
                "    gpu.func @hello() kernel {\n"
                "      gpu.printf \"good ran\\n\"\n"
                "      gpu.return\n    }\n  }\n"
                "  gpu.module @bad {\n"
                "    gpu.func @broken() kernel {\n"
                "      %c = gpu.cluster_id x\n"
                "      gpu.printf \"cluster %lld\\n\", %c : index\n"
                "      gpu.return\n    }\n  }\n"
                "  func.func @main() {\n"
                "    %c1 = arith.constant 1 : index\n"
                "    gpu.launch_func @good::@hello blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)\n"
                "    gpu.launch_func @bad::@broken blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)\n"
                "    return\n  }\n}\n",
                path, sizeof path);
  snprintf(cmd, sizeof cmd, "env -u VORTEXD_RUNTIME_ERRORS %s --no-spawn --socket %s run %s 2>&1; echo rc=$?",
           VXT_VXC, d.sock, path);
  vxt_run(cmd, out, sizeof out);
  const char *ran = strstr(out, "good ran\n"), *failed = strstr(out, "module @bad at ");
  cr_assert(ran && failed && ran < failed, "the first module ran before the second failed: %s", out);
  cr_assert_not_null(strstr(out, "two_modules.mlir:8:3 could not be loaded"), "its place: %s", out);
  cr_assert_not_null(strstr(out, "two_modules.mlir:10:12: error: unsupported: gpu.cluster_id"), "%s", out);
  cr_assert_not_null(strstr(out, "rc=1\n"), "%s", out);
}

/* The bytes of MLIR string literal body s (up to its closing quote, \XX
 * and \" escapes decoded) into out; their count. */
static size_t mlir_string_bytes(const char *s, char *out, size_t cap) {
  size_t n = 0;
  while (*s && *s != '"' && n < cap) {
    unsigned v;
    if (s[0] == '\\' && s[1] && s[2] && sscanf(s + 1, "%2x", &v) == 1 && isxdigit((unsigned char)s[1]) &&
        isxdigit((unsigned char)s[2]))
      out[n++] = (char)v, s += 3;
    else if (s[0] == '\\' && s[1])
      out[n++] = s[1], s += 2;
    else
      out[n++] = *s++;
  }
  return n;
}

/* Writes prog as name in the suite's directory (its path into path) and
 * compiles it with stock mlir-opt-22 and the dialect plugin
 * (--gpu-module-to-binary) into path + ".out" (into out_path); returns that
 * output (malloc()), failing the test when mlir-opt fails. */
static char *plugin_compile(const char *name, const char *prog, char *path, size_t cap, char *out_path,
                            size_t out_cap) {
  char cmd[2048], out[4096];
  write_program(name, prog, path, cap);
  snprintf(out_path, out_cap, "%s.out", path);
  snprintf(cmd, sizeof cmd, "%s --load-dialect-plugin=%s --gpu-module-to-binary %s -o %s 2>&1", VXT_MLIR_OPT,
           VXT_MLIR_PLUGIN, path, out_path);
  cr_assert_eq(vxt_run(cmd, out, sizeof out), 0, "%s", out);
  size_t len;
  char *ir = vxt_read_file(out_path, &len);
  cr_assert_not_null(ir);
  return ir;
}

/* Stock mlir-opt-22 with the dialect plugin: --gpu-module-to-binary turns
 * a gpu.module for two #vortex.target's into a gpu.binary of two objects,
 * compiled by vortexd (the key and target in their properties, each
 * kernel's argument layout in their kernel table); such an object is what
 * libvortexd_runtime loads (the compiled entry it carries: no daemon asked)
 * and launches, here on the emulated device, RV32 2.x and RV64 3.0. */
Test(runtime, mlir_opt_compiles_vortex_targets_through_vortexd) {
  static const char prog[] =
      "module attributes {gpu.container_module} {\n"
      "  gpu.module @kernels [#vortex.target<abi = 2, xlen = 32, warp_size = 4>,\n"
      "                       #vortex.target<abi = 3, xlen = 64, warp_size = 8, O = 3>] {\n"
      "    gpu.func @fill(%v: f32, %out: memref<?xf32>, %n: index) kernel {\n"
      "      %b = gpu.block_id x\n      %d = gpu.block_dim x\n      %t = gpu.thread_id x\n"
      "      %o = arith.muli %b, %d : index\n      %i = arith.addi %o, %t : index\n"
      "      %in = arith.cmpi ult, %i, %n : index\n"
      "      scf.if %in {\n        memref.store %v, %out[%i] : memref<?xf32>\n      }\n"
      "      gpu.return\n    }\n  }\n}\n";
  char path[256], out_path[300];
  char *ir = plugin_compile("targets.mlir", prog, path, sizeof path, out_path, sizeof out_path);
  cr_assert_not_null(strstr(ir, "gpu.binary @kernels"), "%s", ir);
  const char *targets[2] = {"vortex2-rv32", "vortex3-rv64"};
  const char *at = ir;
  for (int t = 0; t < 2; t++) {
    const char *obj = strstr(at, "#gpu.object<#vortex.target<");
    cr_assert_not_null(obj, "object %d: %s", t, ir);
    char want[64];
    snprintf(want, sizeof want, "target = \"%s\"", targets[t]);
    const char *bin = strstr(obj, "bin = \"");
    cr_assert_not_null(bin);
    cr_assert(strstr(obj, want) && strstr(obj, want) < bin, "%s in its properties", targets[t]);
    cr_assert(strstr(obj, "key = \"") && strstr(obj, "key = \"") < bin, "the key in its properties");
    const char *table = strstr(obj, "#gpu.kernel_metadata<\"fill\"");
    cr_assert(table && table < bin, "the kernel table names fill");
    /* its layout: the memref after the f32, a pointer of the target's width */
    char ptr[96];
    snprintf(ptr, sizeof ptr, "kind = \"pointer\", offset = %d : i32, size = %d : i32", t ? 8 : 4, t ? 8 : 4);
    cr_assert(strstr(table, ptr) && strstr(table, ptr) < bin, "its layout, %s", ptr);
    /* the object, run as a launch gets it */
    static char bytes[1 << 20];
    size_t n = mlir_string_bytes(bin + 7, bytes, sizeof bytes);
    cr_assert_gt(n, 100);
    cr_assert_not_null(memmem(bytes, n, "// vortexd-host-args: fill s4 m1 s8\n", 36));
    enum { N = 40 };
    float *y = mgpuMemAlloc(N * sizeof *y, NULL, false);
    cr_assert_not_null(y);
    memset(y, 0, N * sizeof *y);
    memref1d m = {y, y, 0, N - 3, 1};
    float v = 1.5f + (float)t;
    int64_t count = N - 3;
    void *fn = mgpuModuleGetFunction(mgpuModuleLoad(bytes, n), "fill");
    cr_assert_not_null(fn, "%s", targets[t]);
    void *p[] = {&v, &m.allocated, &m.aligned, &m.offset, &m.size, &m.stride, &count};
    mgpuLaunchKernel(fn, 2, 1, 1, 32, 1, 1, 0, NULL, p, NULL, 7);
    for (int i = 0; i < N; i++)
      cr_assert_float_eq(y[i], i < N - 3 ? v : 0.0f, 1e-6, "%s: y[%d] = %f", targets[t], i, y[i]);
    mgpuMemFree(y, NULL);
    at = bin + 7;
  }
  free(ir);
}

/* The MLIR way end to end: a whole program whose gpu.module names two
 * #vortex.target's, compiled by stock mlir-opt-22 with the plugin
 * (--gpu-module-to-binary), is run by `vxc run` as it is: its host side is
 * lowered by vortexd, whose own host lowering labels objects the same way,
 * and the first object (what #gpu.select_object takes) is launched, from
 * the compiled entry it carries. */
Test(runtime, vxc_run_runs_what_mlir_opt_compiled_for_vortex_targets) {
  static const char prog[] =
      "module attributes {gpu.container_module} {\n"
      "  gpu.module @kernels [#vortex.target<abi = 2, xlen = 32, warp_size = 8>,\n"
      "                       #vortex.target<abi = 3, xlen = 64>] {\n"
      "    gpu.func @twice(%x: memref<?xi32>) kernel {\n"
      "      %b = gpu.block_id x\n      %d = gpu.block_dim x\n      %t = gpu.thread_id x\n"
      "      %o = arith.muli %b, %d : index\n      %i = arith.addi %o, %t : index\n"
      "      %v = memref.load %x[%i] : memref<?xi32>\n      %w = arith.addi %v, %v : i32\n"
      "      memref.store %w, %x[%i] : memref<?xi32>\n      gpu.return\n    }\n  }\n"
      "  func.func private @printMemrefI32(memref<*xi32>)\n"
      "  func.func @main() {\n"
      "    %c0 = arith.constant 0 : index\n    %c1 = arith.constant 1 : index\n"
      "    %c3 = arith.constant 3 : index\n    %c8 = arith.constant 8 : index\n"
      "    %c24 = arith.constant 24 : index\n"
      "    %x = memref.alloc() : memref<24xi32>\n"
      "    scf.for %i = %c0 to %c24 step %c1 {\n"
      "      %v = arith.index_cast %i : index to i32\n      memref.store %v, %x[%i] : memref<24xi32>\n    }\n"
      "    %xd = memref.cast %x : memref<24xi32> to memref<?xi32>\n"
      "    %xu = memref.cast %x : memref<24xi32> to memref<*xi32>\n"
      "    gpu.host_register %xu : memref<*xi32>\n"
      "    gpu.launch_func @kernels::@twice blocks in (%c3, %c1, %c1) threads in (%c8, %c1, %c1)\n"
      "        args(%xd : memref<?xi32>)\n"
      "    call @printMemrefI32(%xu) : (memref<*xi32>) -> ()\n"
      "    return\n  }\n}\n";
  char path[256], bin_path[300], cmd[2048];
  static char out[16384];
  char *ir = plugin_compile("opt_then_run.mlir", prog, path, sizeof path, bin_path, sizeof bin_path);
  cr_assert_not_null(strstr(ir, "#gpu.object<#vortex.target<abi = 2, xlen = 32, warp_size = 8>"), "%s", ir);
  free(ir);
  /* the same objects labelled as vortexd's host lowering labelled them
   * before #vortex.target (#nvvm.target): run alike */
  char old_path[320];
  snprintf(old_path, sizeof old_path, "%s.nvvm.mlir", path);
  snprintf(cmd, sizeof cmd, "sed 's/#vortex.target<[^>]*>/#nvvm.target/g' %s > %s", bin_path, old_path);
  cr_assert_eq(vxt_run(cmd, out, sizeof out), 0, "%s", out);
  const char *runs[] = {bin_path, old_path};
  for (int i = 0; i < 2; i++) {
    snprintf(cmd, sizeof cmd, "%s --no-spawn --socket %s run %s 2>&1", VXT_VXC, d.sock, runs[i]);
    cr_assert_eq(vxt_run(cmd, out, sizeof out), 0, "%s: %s", runs[i], out);
    cr_assert_not_null(strstr(out,
                              "[0,  2,  4,  6,  8,  10,  12,  14,  16,  18,  20,  22,  24,  26,  28,  30,  "
                              "32,  34,  36,  38,  40,  42,  44,  46]"),
                       "%s: %s", runs[i], out);
  }
}

Test(runtime, vxc_run_takes_mlir_runners_entry_point_options) {
  char path[256], cmd[1024], out[8192];
  write_program("answer.mlir",
                "module attributes {gpu.container_module} {\n"
                "  func.func @answer() -> i32 {\n"
                "    %c = arith.constant 42 : i32\n"
                "    return %c : i32\n"
                "  }\n"
                "}\n",
                path, sizeof path);
  snprintf(cmd, sizeof cmd, "%s --no-spawn --socket %s run -e answer --entry-point-result=i32 %s 2>&1",
           VXT_VXC, d.sock, path);
  cr_assert_eq(vxt_run(cmd, out, sizeof out), 0, "%s", out);
  cr_assert_str_eq(out, "42\n");
  snprintf(cmd, sizeof cmd, "%s --no-spawn --socket %s run --entry-point-result=f64 %s 2>&1; echo rc=$?",
           VXT_VXC, d.sock, path);
  vxt_run(cmd, out, sizeof out);
  cr_assert_not_null(strstr(out, "--entry-point-result takes void, i32, i64 or f32, not 'f64'"), "%s", out);
  cr_assert_not_null(strstr(out, "rc=64"), "%s", out);
}

/* gpu.rotate and gpu.subgroup_broadcast (a given lane, the first active
 * one) move values between the lanes of a warp as their definitions say,
 * at warps of 4, 8 and 32 threads; a branch on the lane id is divergent
 * (split and joined, as one on a thread id). */
Test(runtime, rotate_and_subgroup_broadcast_move_values_between_lanes) {
  char path[256], cmd[1024], out[8192];
  write_program("moves.mlir",
                "module attributes {gpu.container_module} {\n"
                "  gpu.module @k {\n"
                "    gpu.func @moves(%out: memref<?xi32>) kernel {\n"
                "      %t = gpu.thread_id x\n      %lane = gpu.lane_id\n"
                "      %l32 = arith.index_cast %lane : index to i32\n"
                "      %c10 = arith.constant 10 : i32\n      %v = arith.muli %l32, %c10 : i32\n"
                "      %r, %ok = gpu.rotate %v, 1, 4 : i32\n"
                "      %m2 = arith.constant -2 : i32\n      %rs = arith.select %ok, %r, %m2 : i32\n"
                "      %c2 = arith.constant 2 : i32\n"
                "      %b = gpu.subgroup_broadcast %v, specific_lane %c2 : i32\n"
                "      %c3 = arith.constant 3 : index\n      %i0 = arith.muli %t, %c3 : index\n"
                "      %c1 = arith.constant 1 : index\n      %i1 = arith.addi %i0, %c1 : index\n"
                "      %ci2 = arith.constant 2 : index\n      %i2 = arith.addi %i0, %ci2 : index\n"
                "      memref.store %rs, %out[%i0] : memref<?xi32>\n"
                "      memref.store %b, %out[%i1] : memref<?xi32>\n"
                "      %c0 = arith.constant 0 : index\n"
                "      %some = arith.cmpi ugt, %lane, %c0 : index\n"
                "      scf.if %some {\n"
                "        %f = gpu.subgroup_broadcast %v, first_active_lane : i32\n"
                "        memref.store %f, %out[%i2] : memref<?xi32>\n"
                "      }\n"
                "      gpu.return\n    }\n  }\n"
                "  func.func private @printMemrefI32(memref<*xi32>)\n"
                "  func.func @main() {\n"
                "    %c1 = arith.constant 1 : index\n    %c8 = arith.constant 8 : index\n"
                "    %n = arith.constant 24 : index\n    %m1 = arith.constant -1 : i32\n"
                "    %h = memref.alloc(%n) : memref<?xi32>\n"
                "    linalg.fill ins(%m1 : i32) outs(%h : memref<?xi32>)\n"
                "    %u = memref.cast %h : memref<?xi32> to memref<*xi32>\n"
                "    gpu.host_register %u : memref<*xi32>\n"
                "    gpu.launch_func @k::@moves blocks in (%c1, %c1, %c1) threads in (%c8, %c1, %c1)"
                " args(%h : memref<?xi32>)\n"
                "    call @printMemrefI32(%u) : (memref<*xi32>) -> ()\n"
                "    return\n  }\n}\n",
                path, sizeof path);
  const unsigned warps[3] = {4, 8, 32};
  for (int w = 0; w < 3; w++) {
    /* thread t is lane t % W; rotate(1, 4): lane (lane + 1) & 3 of its
     * four, valid for lanes below 4; lane 2's value; the first active lane
     * of those past lane 0 is lane 1 */
    char want[512];
    size_t n = (size_t)snprintf(want, sizeof want, "[");
    for (unsigned t = 0; t < 8; t++) {
      unsigned lane = t % warps[w];
      int rot = lane < 4 ? (int)((((lane + 1) & 3) + (lane & ~3u)) * 10) : -2;
      n += (size_t)snprintf(want + n, sizeof want - n, "%s%d,  20,  %d", t ? ",  " : "", rot, lane ? 10 : -1);
    }
    snprintf(want + n, sizeof want - n, "]");
    snprintf(cmd, sizeof cmd, "%s --no-spawn --socket %s run --warp-size %u %s 2>&1; echo rc=$?", VXT_VXC,
             d.sock, warps[w], path);
    vxt_run(cmd, out, sizeof out);
    cr_assert_not_null(strstr(out, want), "warp %u: want %s: %s", warps[w], want, out);
    cr_assert_not_null(strstr(out, "rc=0\n"), "%s", out);
  }
}

/* A gpu.module's own #vortex.target decides how it is compiled and run,
 * over vxc run's options: the module below says warp 8 on rv64, the
 * program is run for rv32 at warp 4; a module without one takes the
 * program's. */
Test(runtime, vxc_run_compiles_each_module_for_its_own_vortex_target) {
  char path[256], cmd[1024], out[8192];
  write_program("own_target.mlir",
                "module attributes {gpu.container_module} {\n"
                "  gpu.module @eight [#vortex.target<xlen = 64, warp_size = 8>] {\n"
                "    gpu.func @say() kernel {\n"
                "      %w = gpu.subgroup_size : index\n"
                "      %l = gpu.lane_id\n      %c0 = arith.constant 0 : index\n"
                "      %first = arith.cmpi eq, %l, %c0 : index\n"
                "      scf.if %first { gpu.printf \"own warp %lld\\n\", %w : index }\n"
                "      gpu.return\n    }\n  }\n"
                "  gpu.module @plain {\n"
                "    gpu.func @say() kernel {\n"
                "      %w = gpu.subgroup_size : index\n"
                "      %l = gpu.lane_id\n      %c0 = arith.constant 0 : index\n"
                "      %first = arith.cmpi eq, %l, %c0 : index\n"
                "      scf.if %first { gpu.printf \"program warp %lld\\n\", %w : index }\n"
                "      gpu.return\n    }\n  }\n"
                "  func.func @main() {\n"
                "    %c1 = arith.constant 1 : index\n    %c8 = arith.constant 8 : index\n"
                "    gpu.launch_func @eight::@say blocks in (%c1, %c1, %c1) threads in (%c8, %c1, %c1)\n"
                "    gpu.launch_func @plain::@say blocks in (%c1, %c1, %c1) threads in (%c8, %c1, %c1)\n"
                "    return\n  }\n}\n",
                path, sizeof path);
  snprintf(cmd, sizeof cmd,
           "%s --no-spawn --socket %s run --target vortex2-rv32 --warp-size 4 %s 2>&1; echo rc=$?", VXT_VXC,
           d.sock, path);
  vxt_run(cmd, out, sizeof out);
  /* warp 8: one lane 0 among 8 threads; warp 4: two */
  cr_assert_not_null(strstr(out, "own warp 8\nprogram warp 4\nprogram warp 4\nrc=0\n"), "%s", out);
  /* the runtime's compiles follow VORTEXD_RECACHE and VORTEXD_DISABLE as
   * vxc's do: both modules compiled again (misses), not when unset (hits) */
  long misses[4];
  static const char *const envs[3] = {"", "VORTEXD_RECACHE=1", "VORTEXD_DISABLE=1"};
  for (int i = 0; i < 4; i++) {
    char st[8192];
    snprintf(cmd, sizeof cmd, "%s --no-spawn --socket %s stats --json", VXT_VXC, d.sock);
    cr_assert_eq(vxt_run(cmd, st, sizeof st), 0, "%s", st);
    const char *m = strstr(st, "\"misses\":");
    cr_assert_not_null(m, "%s", st);
    misses[i] = strtol(m + 9, NULL, 10);
    if (i == 3) break;
    snprintf(cmd, sizeof cmd, "%s %s --no-spawn --socket %s run --target vortex2-rv32 %s 2>&1; echo rc=$?",
             envs[i], VXT_VXC, d.sock, path);
    vxt_run(cmd, out, sizeof out);
    cr_assert_not_null(strstr(out, "rc=0\n"), "%s: %s", envs[i], out);
  }
  cr_assert_eq(misses[1] - misses[0], 0, "cached: both hits");
  cr_assert_eq(misses[2] - misses[1], 2, "VORTEXD_RECACHE: both compiled again");
  cr_assert_eq(misses[3] - misses[2], 2, "VORTEXD_DISABLE: both compiled");
}

/* Device functions (func.func in a gpu.module, as cgeist writes a
 * __device__ function) read gpu ids, dimensions and lanes, branch on them
 * and wait at barriers, called from a kernel, at warps 4, 8 and 32. */
Test(runtime, device_functions_read_ids_and_wait_at_barriers) {
  char path[256], cmd[1024], out[8192];
  write_program("device_funcs.mlir",
                "module attributes {gpu.container_module} {\n"
                "  gpu.module @k {\n"
                "    func.func @gid() -> index {\n"
                "      %t = gpu.thread_id x\n      %b = gpu.block_id x\n      %n = gpu.block_dim x\n"
                "      %m = arith.muli %b, %n : index\n      %g = arith.addi %m, %t : index\n"
                "      gpu.barrier\n"
                "      return %g : index\n    }\n"
                "    func.func @lane_info() -> i32 {\n"
                "      %l = gpu.lane_id\n      %w = gpu.subgroup_size : index\n"
                "      %c100 = arith.constant 100 : index\n      %x = arith.muli %l, %c100 : index\n"
                "      %y = arith.addi %x, %w : index\n      %v = arith.index_cast %y : index to i32\n"
                "      %t = gpu.thread_id x\n      %c2 = arith.constant 2 : index\n"
                "      %r = arith.remui %t, %c2 : index\n      %c0 = arith.constant 0 : index\n"
                "      %odd = arith.cmpi ne, %r, %c0 : index\n"
                "      %o = scf.if %odd -> i32 {\n"
                "        %k = arith.constant 1000 : i32\n        %a = arith.addi %v, %k : i32\n"
                "        scf.yield %a : i32\n"
                "      } else {\n        scf.yield %v : i32\n      }\n"
                "      return %o : i32\n    }\n"
                "    gpu.func @fill(%out: memref<?xi32>) kernel {\n"
                "      %g = func.call @gid() : () -> index\n"
                "      %info = func.call @lane_info() : () -> i32\n"
                "      %c2 = arith.constant 2 : index\n      %i = arith.muli %g, %c2 : index\n"
                "      %c1 = arith.constant 1 : index\n      %j = arith.addi %i, %c1 : index\n"
                "      %gv = arith.index_cast %g : index to i32\n"
                "      memref.store %gv, %out[%i] : memref<?xi32>\n"
                "      memref.store %info, %out[%j] : memref<?xi32>\n"
                "      gpu.return\n    }\n  }\n"
                "  func.func private @printMemrefI32(memref<*xi32>)\n"
                "  func.func @main() {\n"
                "    %c1 = arith.constant 1 : index\n    %c2 = arith.constant 2 : index\n"
                "    %c8 = arith.constant 8 : index\n    %n = arith.constant 32 : index\n"
                "    %h = memref.alloc(%n) : memref<?xi32>\n"
                "    %u = memref.cast %h : memref<?xi32> to memref<*xi32>\n"
                "    gpu.host_register %u : memref<*xi32>\n"
                "    gpu.launch_func @k::@fill blocks in (%c2, %c1, %c1) threads in (%c8, %c1, %c1)"
                " args(%h : memref<?xi32>)\n"
                "    call @printMemrefI32(%u) : (memref<*xi32>) -> ()\n"
                "    return\n  }\n}\n",
                path, sizeof path);
  const unsigned warps[3] = {4, 8, 32};
  for (int w = 0; w < 3; w++) {
    char want[1024];
    size_t n = (size_t)snprintf(want, sizeof want, "[");
    for (unsigned g = 0; g < 16; g++) {
      unsigned t = g % 8, lane = t % warps[w];
      n += (size_t)snprintf(want + n, sizeof want - n, "%s%u,  %u", g ? ",  " : "", g,
                            lane * 100 + warps[w] + (t % 2 ? 1000 : 0));
    }
    snprintf(want + n, sizeof want - n, "]");
    snprintf(cmd, sizeof cmd, "%s --no-spawn --socket %s run --warp-size %u %s 2>&1; echo rc=$?", VXT_VXC,
             d.sock, warps[w], path);
    vxt_run(cmd, out, sizeof out);
    cr_assert_not_null(strstr(out, want), "warp %u: want %s: %s", warps[w], want, out);
    cr_assert_not_null(strstr(out, "rc=0\n"), "%s", out);
  }
}

/* Vector-dialect ops in a kernel (loads, stores, a masked transfer past
 * the end, reductions, extract/insert/broadcast) go through upstream's
 * vector lowering and are scalarized for the RISC-V target: the same
 * values at warps 4, 8 and 32 and on RV64. */
Test(runtime, vector_ops_in_kernels_run_scalarized) {
  char path[256], cmd[1024], out[8192];
  write_program("vectors.mlir",
                "module attributes {gpu.container_module} {\n"
                "  gpu.module @k {\n"
                "    gpu.func @vec(%in: memref<?xf32>, %out: memref<?xf32>, %sums: memref<?xf32>) kernel {\n"
                "      %t = gpu.thread_id x\n"
                "      %c4 = arith.constant 4 : index\n"
                "      %i = arith.muli %t, %c4 : index\n"
                "      %v = vector.load %in[%i] : memref<?xf32>, vector<4xf32>\n"
                "      %s = vector.reduction <add>, %v : vector<4xf32> into f32\n"
                "      %e = vector.extract %v[1] : f32 from vector<4xf32>\n"
                "      %b = vector.broadcast %e : f32 to vector<4xf32>\n"
                "      %w = arith.addf %v, %b : vector<4xf32>\n"
                "      %c100 = arith.constant 100.0 : f32\n"
                "      %x = vector.insert %c100, %w [3] : f32 into vector<4xf32>\n"
                "      vector.store %x, %out[%i] : memref<?xf32>, vector<4xf32>\n"
                "      %pad = arith.constant -1.0 : f32\n"
                "      %c2 = arith.constant 2 : index\n"
                "      %j = arith.addi %i, %c2 : index\n"
                "      %r = vector.transfer_read %in[%j], %pad : memref<?xf32>, vector<4xf32>\n"
                "      %m = vector.reduction <maxnumf>, %r : vector<4xf32> into f32\n"
                "      %tot = arith.addf %s, %m : f32\n"
                "      memref.store %tot, %sums[%t] : memref<?xf32>\n"
                "      gpu.return\n"
                "    }\n"
                "  }\n"
                "  func.func private @printMemrefF32(memref<*xf32>)\n"
                "  func.func @main() {\n"
                "    %c1 = arith.constant 1 : index\n"
                "    %c4 = arith.constant 4 : index\n"
                "    %n = arith.constant 16 : index\n"
                "    %in = memref.alloc(%n) : memref<?xf32>\n"
                "    %out = memref.alloc(%n) : memref<?xf32>\n"
                "    %sums = memref.alloc(%c4) : memref<?xf32>\n"
                "    %c0 = arith.constant 0 : index\n"
                "    scf.for %k = %c0 to %n step %c1 {\n"
                "      %ki = arith.index_cast %k : index to i32\n"
                "      %kf = arith.sitofp %ki : i32 to f32\n"
                "      memref.store %kf, %in[%k] : memref<?xf32>\n"
                "    }\n"
                "    %ui = memref.cast %in : memref<?xf32> to memref<*xf32>\n"
                "    %uo = memref.cast %out : memref<?xf32> to memref<*xf32>\n"
                "    %us = memref.cast %sums : memref<?xf32> to memref<*xf32>\n"
                "    gpu.host_register %ui : memref<*xf32>\n"
                "    gpu.host_register %uo : memref<*xf32>\n"
                "    gpu.host_register %us : memref<*xf32>\n"
                "    gpu.launch_func @k::@vec blocks in (%c1, %c1, %c1) threads in (%c4, %c1, %c1) args(%in "
                ": memref<?xf32>, %out : memref<?xf32>, %sums : memref<?xf32>)\n"
                "    call @printMemrefF32(%uo) : (memref<*xf32>) -> ()\n"
                "    call @printMemrefF32(%us) : (memref<*xf32>) -> ()\n"
                "    return\n"
                "  }\n"
                "}\n",
                path, sizeof path);
  static const char *const runs[4] = {"--warp-size 4", "--warp-size 8", "--warp-size 32",
                                      "--target vortex3-rv64 --warp-size 8"};
  for (int i = 0; i < 4; i++) {
    snprintf(cmd, sizeof cmd, "%s --no-spawn --socket %s run %s %s 2>&1; echo rc=$?", VXT_VXC, d.sock,
             runs[i], path);
    vxt_run(cmd, out, sizeof out);
    /* thread t: v = in[4t..4t+3] = 4t..4t+3; v + v[1] with lane 3 set to
     * 100; sum(v) + max(in[4t+2..4t+5], -1 past the end) */
    cr_assert_not_null(
        strstr(out, "[1,  2,  3,  100,  9,  10,  11,  100,  17,  18,  19,  100,  25,  26,  27,  100]"),
        "%s: %s", runs[i], out);
    cr_assert_not_null(strstr(out, "[11,  31,  51,  69]\nrc=0\n"), "%s: %s", runs[i], out);
  }
}

/* Host-side linalg ops on memrefs (linalg.fill, as upstream's integration
 * tests fill buffers) are lowered the upstream way, to loops; an op of a
 * dialect nothing lowers on the host is refused at its own line, not at
 * the line of whatever produced its operands. */
Test(runtime, host_linalg_runs_and_foreign_host_ops_are_refused_where_they_are) {
  char path[256], cmd[1024], out[8192];
  write_program("fill.mlir",
                "module attributes {gpu.container_module} {\n"
                "  gpu.module @k {\n"
                "    gpu.func @twice(%b: memref<?xf32>) kernel {\n"
                "      %t = gpu.thread_id x\n"
                "      %v = memref.load %b[%t] : memref<?xf32>\n"
                "      %w = arith.addf %v, %v : f32\n"
                "      memref.store %w, %b[%t] : memref<?xf32>\n"
                "      gpu.return\n    }\n  }\n"
                "  func.func private @printMemrefF32(memref<*xf32>)\n"
                "  func.func @main() {\n"
                "    %c1 = arith.constant 1 : index\n    %c4 = arith.constant 4 : index\n"
                "    %f = arith.constant 1.5 : f32\n"
                "    %h = memref.alloc() : memref<4xf32>\n"
                "    linalg.fill ins(%f : f32) outs(%h : memref<4xf32>)\n"
                "    %d = memref.cast %h : memref<4xf32> to memref<?xf32>\n"
                "    %u = memref.cast %h : memref<4xf32> to memref<*xf32>\n"
                "    gpu.host_register %u : memref<*xf32>\n"
                "    gpu.launch_func @k::@twice blocks in (%c1, %c1, %c1) threads in (%c4, %c1, %c1)"
                " args(%d : memref<?xf32>)\n"
                "    call @printMemrefF32(%u) : (memref<*xf32>) -> ()\n"
                "    return\n  }\n}\n",
                path, sizeof path);
  snprintf(cmd, sizeof cmd, "%s --no-spawn --socket %s run %s 2>&1; echo rc=$?", VXT_VXC, d.sock, path);
  vxt_run(cmd, out, sizeof out);
  cr_assert_not_null(strstr(out, "[3,  3,  3,  3]"), "linalg.fill then the kernel: %s", out);
  cr_assert_not_null(strstr(out, "rc=0\n"), "%s", out);
  write_program("foreign.mlir",
                "module attributes {gpu.container_module} {\n"
                "  func.func @main() {\n"
                "    %h = memref.alloc() : memref<4xf32>\n"
                "    %x = \"test.unknown\"(%h) : (memref<4xf32>) -> memref<4xf32>\n"
                "    memref.dealloc %x : memref<4xf32>\n"
                "    return\n  }\n}\n",
                path, sizeof path);
  snprintf(cmd, sizeof cmd, "%s --no-spawn --socket %s run %s 2>&1; echo rc=$?", VXT_VXC, d.sock, path);
  vxt_run(cmd, out, sizeof out);
  char want[512];
  snprintf(want, sizeof want, "%s:4:10: error: unsupported: 'test.unknown' on the host", path);
  cr_assert_not_null(strstr(out, want), "at its own line: %s", out);
  cr_assert_not_null(strstr(out, "rc=1\n"), "%s", out);
}

/* What goes wrong in a program run by `vxc run` is reported at the
 * program's own file:line:col: a host op nothing lowers (before the JIT
 * sees the temporary file), and a kernel's fault on the device. */
Test(runtime, vxc_run_errors_point_into_the_program) {
  char path[256], cmd[1024], out[8192];
  write_program("tensor_host.mlir",
                "module attributes {gpu.container_module} {\n"
                "  func.func @main() {\n"
                "    %t = arith.constant dense<[1.0, 2.0]> : tensor<2xf32>\n"
                "    %m = bufferization.to_buffer %t : tensor<2xf32> to memref<2xf32>\n"
                "    %u = memref.cast %m : memref<2xf32> to memref<*xf32>\n"
                "    call @printMemrefF32(%u) : (memref<*xf32>) -> ()\n"
                "    return\n"
                "  }\n"
                "  func.func private @printMemrefF32(memref<*xf32>)\n"
                "}\n",
                path, sizeof path);
  snprintf(cmd, sizeof cmd, "%s --no-spawn --socket %s run %s 2>&1; echo rc=$?", VXT_VXC, d.sock, path);
  vxt_run(cmd, out, sizeof out);
  char want[512];
  snprintf(want, sizeof want, "%s:3:10: error: unsupported: 'arith.constant' on the host", path);
  cr_assert_not_null(strstr(out, want), "%s", out);
  cr_assert_not_null(strstr(out, "rc=1\n"), "%s", out);
  cr_assert_null(strstr(out, "vxc-run-"), "no temporary file named: %s", out);

  write_program("oob.mlir",
                "module attributes {gpu.container_module} {\n"
                "  gpu.module @k {\n"
                "    gpu.func @wild(%out: memref<?xi32>) kernel {\n"
                "      %t = gpu.thread_id x\n"
                "      %far = arith.constant 100000000 : index\n"
                "      %i = arith.addi %t, %far : index\n"
                "      %v = arith.constant 1 : i32\n"
                "      memref.store %v, %out[%i] : memref<?xi32>\n"
                "      gpu.return\n"
                "    }\n"
                "  }\n"
                "  func.func @main() {\n"
                "    %c1 = arith.constant 1 : index\n"
                "    %c4 = arith.constant 4 : index\n"
                "    %d = gpu.alloc (%c4) : memref<?xi32>\n"
                "    gpu.launch_func @k::@wild blocks in (%c1, %c1, %c1) threads in (%c4, %c1, %c1)\n"
                "        args(%d : memref<?xi32>)\n"
                "    return\n"
                "  }\n"
                "}\n",
                path, sizeof path);
  snprintf(cmd, sizeof cmd, "env -u VORTEXD_RUNTIME_ERRORS %s --no-spawn --socket %s run %s 2>&1; echo rc=$?",
           VXT_VXC, d.sock, path);
  vxt_run(cmd, out, sizeof out);
  cr_assert_not_null(strstr(out, "oob.mlir:8:7)"), "the store's line in the program: %s", out);
  cr_assert_not_null(strstr(out, "rc=1\n"), "%s", out);
  cr_assert_null(strstr(out, "gpu.binary"), "%s", out);
  cr_assert_null(strstr(out, "vxc-run-"), "%s", out);
}

/* A device that cannot be had ends the program with status 1 and a
 * message, never with a crash in the first copy to the memory it could
 * not allocate. */
Test(runtime, a_missing_device_ends_the_program_with_status_1) {
  static const char *const envs[] = {"VORTEXD_DEVICE=bogus",
                                     "VORTEXD_DEVICE=vortex VORTEXD_LIBVORTEX=/nonexistent.so",
                                     "VORTEXD_DEVICE_MEMORY=1K"};
  static const char *const says[] = {"VORTEXD_DEVICE=bogus: unknown device backend",
                                     "device vortex:", "VORTEXD_DEVICE_MEMORY=1K: expected a size"};
  for (int i = 0; i < 3; i++) {
    char cmd[2048], out[8192];
    snprintf(cmd, sizeof cmd,
             "env -u VORTEXD_RUNTIME_ERRORS %s timeout 120 %s --no-spawn --socket %s run %s 2>&1; echo rc=$?",
             envs[i], VXT_VXC, d.sock, VXT_KERNELS_DIR "/../programs/launch_and_copy.mlir");
    vxt_run(cmd, out, sizeof out);
    cr_assert_not_null(strstr(out, says[i]), "%s: %s", envs[i], out);
    cr_assert_not_null(strstr(out, "rc=1\n"), "%s: status 1, no crash: %s", envs[i], out);
  }
}

#ifdef VXT_CORPUS_DIR
TestSuite(conformance, .init = start, .fini = stop, .timeout = 900);

/* The upstream MLIR GPU integration tests (llvm-project
 * mlir/test/Integration/GPU/{CUDA,ROCM,SPIRV,SYCL,Vulkan}) in the corpus,
 * each run with `vxc run` on the emulated device and checked with
 * FileCheck against its own CHECK lines, as upstream checks them on real
 * GPUs.  A file may fail only with a diagnostic saying what is not
 * supported; a wrong output or a crash fails the test. */
Test(conformance, upstream_gpu_integration_tests_through_vxc_run) {
  static const char *const dirs[] = {"CUDA", "ROCM", "SPIRV", "SYCL", "Vulkan"};
  static char out[262144];
  int total = 0, passed = 0;
  char report[8192] = "";
  for (int i = 0; i < 5; i++) {
    char dir[512];
    snprintf(dir, sizeof dir, "%s/llvm-project/Integration-GPU-%s", VXT_CORPUS_DIR, dirs[i]);
    DIR *dp = opendir(dir);
    if (!dp) continue;
    struct dirent *e;
    while ((e = readdir(dp))) {
      size_t n = strlen(e->d_name);
      if (n < 6 || strcmp(e->d_name + n - 5, ".mlir") != 0) continue;
      char file[1024];
      snprintf(file, sizeof file, "%s/%s", dir, e->d_name);
      total++;
      int ok = run_and_check(file, out, sizeof out);
      const char *why = strstr(out, "error: unsupported:");
      size_t at = strlen(report);
      snprintf(report + at, sizeof report - at, "%s %s/%s%s%.160s\n", ok ? "PASS" : "FAIL", dirs[i],
               e->d_name, ok ? "" : ": ",
               ok    ? ""
               : why ? why
                     : out);
      passed += ok;
      cr_assert(ok || why, "%s failed without saying what is unsupported:\n%s", file, out);
    }
    closedir(dp);
  }
  cr_log_info("upstream GPU integration tests: %d of %d pass\n%s", passed, total, report);
  fprintf(stderr, "upstream GPU integration tests: %d of %d pass\n%s", passed, total, report);
  cr_assert_gt(total, 0, "no integration tests found in the corpus");
}
#endif

#ifdef VXT_CORPUS_DIR
/* The HIP-style path: each vortex-hip file's cgeist host wrapper, compiled
 * with `vxc compile --host`, linked into a C program of tests/hip with
 * libvortexd_runtime, launching kernels vortexd compiles at the first
 * launch and checking them against C - then again with the daemon stopped
 * (the cache read directly), then with neither (an error, status 1). */
Test(conformance, hip_host_wrappers_launch_through_vortexd_then_the_cache) {
  static const char *const names[] = {"vecadd_kernel", "basic_kernel", "relu_kernel",    "dotproduct_kernel",
                                      "metadata_test", "cta_kernel",   "dogfood_kernel", "sort_kernel",
                                      "sgemm_kernel",  "conv3_kernel", "printf_kernel"};
  enum { N = sizeof names / sizeof names[0] };
  char cmd[4096], out[8192], ok[N][64];
  unsetenv("VORTEXD_RUNTIME_ERRORS"); /* a failure must end a program with status 1 */
  for (int i = 0; i < N; i++) {
    snprintf(cmd, sizeof cmd,
             "cd %s && %s --no-spawn --socket %s compile --host -o %s %s/vortex-hip/%s.mlir && "
             "cc -o %s %s/../hip/%s.c %s.host.o -L%s -lvortexd_runtime -lm -Wl,-rpath,%s 2>&1 && ./%s 2>&1",
             d.dir, VXT_VXC, d.sock, d.dir, VXT_CORPUS_DIR, names[i], names[i], VXT_KERNELS_DIR, names[i],
             names[i], VXT_RUNTIME_DIR, VXT_RUNTIME_DIR, names[i]);
    cr_assert_eq(vxt_run(cmd, out, sizeof out), 0, "%s: %s", names[i], out);
    cr_assert_not_null(strstr(out, " elements ok\n"), "%s: %s", names[i], out);
    if (strcmp(names[i], "printf_kernel") == 0) /* the device's printf, through the runtime */
      for (int t = 0; t < 5; t++) {
        char line[32];
        snprintf(line, sizeof line, "task=%d, value=%c\n", t, "ABCZH"[t]);
        cr_assert_not_null(strstr(out, line), "%s missing from: %s", line, out);
      }
    const char *line = strstr(out, " elements ok\n");
    while (line > out && line[-1] != '\n')
      line--;
    snprintf(ok[i], sizeof ok[i], "%.60s", line);
  }
  /* the daemon stopped: the entries come from the cache directory */
  cr_assert_eq(vxt_daemon_stop(&d), 0);
  d.pid = 0;
  for (int i = 0; i < N; i++) {
    snprintf(cmd, sizeof cmd, "%s/%s 2>&1", d.dir, names[i]);
    cr_assert_eq(vxt_run(cmd, out, sizeof out), 0, "%s without a daemon: %s", names[i], out);
    cr_assert_not_null(strstr(out, ok[i]), "%s: %s", names[i], out);
  }
  /* neither daemon nor entry: a clear error and a non-zero exit */
  snprintf(cmd, sizeof cmd,
           "mkdir -p %s/empty && VORTEXD_CACHE_DIR=%s/empty %s/vecadd_kernel 2>&1; echo rc=$?", d.dir, d.dir,
           d.dir);
  vxt_run(cmd, out, sizeof out);
  cr_assert_not_null(strstr(out, "vortexd runtime: no vortexd answers and "), "%s", out);
  cr_assert_not_null(strstr(out, "set VORTEXD_RUNTIME_SPAWN=1 to let the program start it"),
                     "how to fix it: %s", out);
  cr_assert_not_null(strstr(out, "rc=1"), "%s", out);
}
#endif

/* An SDK directory in dir/sdk: the emulator's device runtime stands in for
 * Vortex's kernel SDK (link.ld and the device runtime's objects). */
static void make_sdk(const char *dir, char *sdk, size_t cap) {
  char cmd[1024], out[512];
  snprintf(sdk, cap, "%.100s/sdk", dir);
  snprintf(
      cmd, sizeof cmd,
      "mkdir -p %s && ln -s %s %s/link.ld && ln -s %s/vx_start.o %s/vx_spawn.o %s/vx_tls.o %s/vx_print.o %s/",
      sdk, VXT_DEVICE_LINK_LD, sdk, VXT_DEVICE_OBJ_DIR, VXT_DEVICE_OBJ_DIR, VXT_DEVICE_OBJ_DIR,
      VXT_DEVICE_OBJ_DIR, sdk);
  cr_assert_eq(vxt_run(cmd, out, sizeof out), 0, "%s", out);
}

/* Launches saxpy over 77 elements through the current device backend,
 * checks y = 0.5 x + 2, and returns how many kernels the stand-in ran. */
/* How many kernels the stand-in libvortex at path ran in this process. */
static int standin_starts(const char *path) {
  void *lib = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
  cr_assert_not_null(lib, "the runtime loaded the stand-in %s", path);
  int (*starts)(void) = (int (*)(void))dlsym(lib, "vx_standin_starts");
  cr_assert_not_null(starts);
  int n = starts();
  dlclose(lib);
  return n;
}

/* x[i] = i and y[i] = 2 (n floats each) registered as *mx and *my, and
 * saxpy loaded: its function. */
static void *saxpy_loaded(float *x, float *y, int n, memref1d *mx, memref1d *my) {
  for (int i = 0; i < n; i++)
    x[i] = (float)i, y[i] = 2.0f;
  *mx = (memref1d){x, x, 0, n, 1};
  *my = (memref1d){y, y, 0, n, 1};
  mgpuMemHostRegisterMemRef(1, mx, 4);
  mgpuMemHostRegisterMemRef(1, my, 4);
  void *fn = mgpuModuleGetFunction(mgpuModuleLoad(saxpy_blob, saxpy_blob_len), "saxpy");
  cr_assert_not_null(fn);
  return fn;
}

static int saxpy_on_standin(void) {
  enum { N = 77 };
  float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
  memref1d mx, my;
  void *fn = saxpy_loaded(x, y, N, &mx, &my);
  launch_saxpy(fn, N, 0.5f, &mx, &my);
  for (int i = 0; i < N; i++)
    cr_assert_float_eq(y[i], 0.5f * (float)i + 2.0f, 1e-6, "y[%d] = %f", i, y[i]);
  free(x);
  free(y);
  return standin_starts(getenv("VORTEXD_LIBVORTEX"));
}

Test(runtime, the_vortex_backend_drives_the_vortex_runtime_api) {
  char sdk[256];
  make_sdk(d.dir, sdk, sizeof sdk);
  setenv("VORTEXD_DEVICE", "vortex", 1);
  setenv("VORTEXD_LIBVORTEX", VXT_STANDIN, 1);
  setenv("VORTEXD_VORTEX_SDK", sdk, 1); /* no image from vortexd: the runtime links */
  cr_assert_eq(saxpy_on_standin(), 1, "one kernel started through vx_start");
}

/* Sets the Vortex backend up for kernel ABI abi (2 or 3) on an RV32 or
 * RV64 (wide) device: an SDK of that target (the emulator's startup
 * objects stand in), the daemon's target, the stand-in's device width;
 * the runtime links images with the SDK, or, daemon_links, the daemon
 * does and caches them. */
static void vortex_backend_for_sdk(int abi, int wide, int daemon_links, int installed_layout) {
  char sdk[256], cmd[2048], out[512], flag[64];
  const char *obj = wide ? VXT_DEVICE_OBJ_DIR "/rv64" : VXT_DEVICE_OBJ_DIR;
  if (installed_layout) { /* lib/vortexd/device as installed: both ABIs' objects, RV64's in rv64/ */
    snprintf(sdk, sizeof sdk, "%.100s/device", d.dir);
    snprintf(
        cmd, sizeof cmd,
        "mkdir -p %s/rv64 && ln -s %s %s/link.ld && for o in vx_start vx_spawn vx_kmu vx_tls vx_print; do "
        "ln -s %s/$o.o %s/ && ln -s %s/rv64/$o.o %s/rv64/ || exit 1; done",
        sdk, VXT_DEVICE_LINK_LD, sdk, VXT_DEVICE_OBJ_DIR, sdk, VXT_DEVICE_OBJ_DIR, sdk);
    cr_assert_eq(vxt_run(cmd, out, sizeof out), 0, "%s", out);
  } else {
    snprintf(sdk, sizeof sdk, "%.100s/sdk%d", d.dir, abi);
    snprintf(cmd, sizeof cmd,
             "mkdir -p %s && ln -s %s %s/link.ld && ln -s %s/%s %s/vx_tls.o %s/vx_print.o %s/", sdk,
             VXT_DEVICE_LINK_LD, sdk, obj, abi == 3 ? "vx_kmu.o" : "vx_start.o", obj, obj, sdk);
    cr_assert_eq(vxt_run(cmd, out, sizeof out), 0, "%s", out);
  }
  if (abi == 2 && !installed_layout) {
    snprintf(cmd, sizeof cmd, "ln -s %s/vx_spawn.o %s/", obj, sdk);
    cr_assert_eq(vxt_run(cmd, out, sizeof out), 0, "%s", out);
  }
  cr_assert_eq(vxt_daemon_stop(&d), 0);
  snprintf(flag, sizeof flag, "vortex%d-rv%d", abi, wide ? 64 : 32);
  setenv("VORTEXD_TARGET", flag, 1); /* the daemon's target */
  snprintf(cmd, sizeof cmd, "--vortex-sdk=%s", sdk);
  cr_assert_eq(vxt_daemon_start(&d, daemon_links ? cmd : NULL), 0);
  unsetenv("VORTEXD_TARGET");
  setenv("VORTEXD_DEVICE", "vortex", 1);
  setenv("VORTEXD_LIBVORTEX", VXT_STANDIN, 1);
  if (daemon_links)
    unsetenv("VORTEXD_VORTEX_SDK"); /* the image comes from vortexd */
  else
    setenv("VORTEXD_VORTEX_SDK", sdk, 1); /* the runtime links the image */
  setenv("VORTEX_STANDIN_XLEN", wide ? "64" : "32", 1);
}

static void vortex_backend_for_linked_by(int abi, int wide, int daemon_links) {
  vortex_backend_for_sdk(abi, wide, daemon_links, 0);
}

static void vortex_backend_for(int abi, int wide) { vortex_backend_for_linked_by(abi, wide, 0); }

/* Runs saxpy compiled for kernel ABI abi on an RV32 or RV64 (wide) device
 * through the Vortex backend. */
static void saxpy_through_vortex(int abi, int wide) {
  vortex_backend_for(abi, wide);
  cr_assert_eq(saxpy_on_standin(), 1, "one kernel launched");
}

/* Two kernels of one module: out[i] = v, and out[i] *= 2, for i < n. */
static const char fill_twice[] =
    "module attributes {gpu.container_module} {\n"
    "  gpu.module @kernels {\n"
    "    gpu.func @fill(%v: f32, %out: memref<?xf32>, %n: index) kernel {\n"
    "      %b = gpu.block_id x\n      %d = gpu.block_dim x\n      %t = gpu.thread_id x\n"
    "      %o = arith.muli %b, %d : index\n      %i = arith.addi %o, %t : index\n"
    "      %in = arith.cmpi ult, %i, %n : index\n"
    "      scf.if %in {\n        memref.store %v, %out[%i] : memref<?xf32>\n      }\n"
    "      gpu.return\n    }\n"
    "    gpu.func @twice(%out: memref<?xf32>, %n: index) kernel {\n"
    "      %b = gpu.block_id x\n      %d = gpu.block_dim x\n      %t = gpu.thread_id x\n"
    "      %o = arith.muli %b, %d : index\n      %i = arith.addi %o, %t : index\n"
    "      %in = arith.cmpi ult, %i, %n : index\n"
    "      scf.if %in {\n        %x = memref.load %out[%i] : memref<?xf32>\n"
    "        %y = arith.addf %x, %x : f32\n        memref.store %y, %out[%i] : memref<?xf32>\n      }\n"
    "      gpu.return\n    }\n  }\n}\n";

/* A program launches fill, twice, twice, fill over one array through the
 * Vortex backend: every launch ran, and the module's one image went to
 * the device once. */
static void fill_twice_through_vortex_with(int abi, int wide, int daemon_links, int installed_layout) {
  vortex_backend_for_sdk(abi, wide, daemon_links, installed_layout);
  enum { N = 50 };
  float *out = calloc(N, sizeof *out);
  memref1d m = {out, out, 0, N, 1};
  mgpuMemHostRegisterMemRef(1, &m, 4);
  size_t flen;
  char *fblob = blob("// vortexd-host-args: fill s4 m1 s8\n// vortexd-host-args: twice m1 s8\n", fill_twice,
                     sizeof fill_twice - 1, &flen);
  void *mod = mgpuModuleLoad(fblob, flen);
  free(fblob);
  void *fill = mgpuModuleGetFunction(mod, "fill"), *twice = mgpuModuleGetFunction(mod, "twice");
  cr_assert(fill && twice);
  float v = 1.25f;
  int64_t n = N, nfill = N / 2; /* index: the host passes i64, the device takes its low bytes */
  void *fp[] = {&v, &m.allocated, &m.aligned, &m.offset, &m.size, &m.stride, &n};
  void *tp[] = {&m.allocated, &m.aligned, &m.offset, &m.size, &m.stride, &n};
  void *stream = mgpuStreamCreate();
  mgpuLaunchKernel(fill, 2, 1, 1, 32, 1, 1, 0, stream, fp, NULL, 7);
  mgpuLaunchKernel(twice, 2, 1, 1, 32, 1, 1, 0, stream, tp, NULL, 6);
  mgpuLaunchKernel(twice, 2, 1, 1, 32, 1, 1, 0, stream, tp, NULL, 6);
  fp[6] = &nfill;
  mgpuLaunchKernel(fill, 2, 1, 1, 32, 1, 1, 0, stream, fp, NULL, 7);
  mgpuStreamDestroy(stream);
  for (int i = 0; i < N; i++)
    cr_assert_float_eq(out[i], i < N / 2 ? 1.25f : 5.0f, 1e-6, "out[%d] = %f", i, out[i]);
  free(out);
  void *lib = dlopen(VXT_STANDIN, RTLD_NOW | RTLD_NOLOAD);
  cr_assert_not_null(lib);
  int (*starts)(void) = (int (*)(void))dlsym(lib, "vx_standin_starts");
  int (*uploads)(void) = (int (*)(void))dlsym(lib, "vx_standin_uploads");
  cr_assert(starts && uploads);
  cr_assert_eq(starts(), 4, "every launch ran");
  cr_assert_eq(uploads(), 1, "one image for both kernels, uploaded once");
  int (*v1_opens)(void) = (int (*)(void))dlsym(lib, "vx_standin_v1_opens");
  cr_assert_not_null(v1_opens);
  cr_assert_eq(v1_opens(), 1, "the device opened through vortex2.h's vx_device_open");
  dlclose(lib);
}

static void fill_twice_through_vortex(int abi, int wide, int daemon_links) {
  fill_twice_through_vortex_with(abi, wide, daemon_links, 0);
}

Test(runtime, one_image_serves_every_kernel_of_a_module_on_vortex_2_x) { fill_twice_through_vortex(2, 0, 0); }
Test(runtime, one_image_serves_every_kernel_of_a_module_on_vortex_3_0) { fill_twice_through_vortex(3, 1, 0); }
/* the module's image as vortexd linked and cached it */
Test(runtime, the_image_vortexd_links_serves_every_kernel_of_a_module) { fill_twice_through_vortex(2, 0, 1); }

/* vortexd's own device runtime, as installed (the start code of both
 * kernel ABIs side by side, RV64's in rv64/), serves as vortex_sdk on
 * every target: each link takes the start code of its kernel's ABI and
 * the objects of its width. */
Test(runtime, the_installed_device_runtime_serves_as_vortex_sdk_for_vortex2_rv32) {
  fill_twice_through_vortex_with(2, 0, 1, 1);
}
Test(runtime, the_installed_device_runtime_serves_as_vortex_sdk_for_vortex2_rv64) {
  fill_twice_through_vortex_with(2, 1, 1, 1);
}
Test(runtime, the_installed_device_runtime_serves_as_vortex_sdk_for_vortex3_rv32) {
  fill_twice_through_vortex_with(3, 0, 1, 1);
}
Test(runtime, the_installed_device_runtime_serves_as_vortex_sdk_for_vortex3_rv64) {
  fill_twice_through_vortex_with(3, 1, 1, 1);
}

/* Vortex 3.0 kernels go through vortex2.h's queue (vx_enqueue_launch, the
 * emulated scheduler behind it), 2.x kernels through vortex.h, on RV32
 * and RV64 devices alike. */
Test(runtime, the_vortex_backend_launches_3_0_kernels_through_vortex2_h) { saxpy_through_vortex(3, 0); }
Test(runtime, the_vortex_backend_launches_3_0_rv64_kernels_through_vortex2_h) { saxpy_through_vortex(3, 1); }
Test(runtime, the_vortex_backend_launches_2_x_rv64_kernels_through_vortex_h) { saxpy_through_vortex(2, 1); }

/* A libvortex without vortex2.h's queue (a 2.x release): 2.x kernels run
 * through vortex.h ... */
Test(runtime, a_libvortex_without_vortex2_h_runs_2_x_kernels) {
  vortex_backend_for(2, 0);
  setenv("VORTEXD_LIBVORTEX", VXT_STANDIN_V1, 1);
  cr_assert_eq(saxpy_on_standin(), 1, "a 2.x kernel through vortex.h");
  void *lib = dlopen(VXT_STANDIN_V1, RTLD_NOW | RTLD_NOLOAD);
  cr_assert_not_null(lib);
  int (*v1_opens)(void) = (int (*)(void))dlsym(lib, "vx_standin_v1_opens");
  cr_assert(v1_opens && v1_opens() == 0, "opened through vortex.h's vx_dev_open");
  dlclose(lib);
}

/* ... and a 3.0 kernel is refused, by name and with what to do, and
 * runs nothing. */
Test(runtime, a_libvortex_without_vortex2_h_refuses_3_0_kernels) {
  vortex_backend_for(3, 0);
  setenv("VORTEXD_LIBVORTEX", VXT_STANDIN_V1, 1);
  enum { N = 8 };
  float x[N], y[N];
  memref1d mx, my;
  void *fn = saxpy_loaded(x, y, N, &mx, &my);
  char log[300];
  snprintf(log, sizeof log, "%.200s/stderr.log", d.dir);
  fflush(stderr);
  int saved = dup(2), fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  cr_assert(saved >= 0 && fd >= 0);
  dup2(fd, 2);
  close(fd);
  launch_saxpy(fn, N, 0.5f, &mx, &my);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  size_t len = 0;
  char *said = vxt_read_file(log, &len);
  cr_assert_not_null(said);
  cr_assert(strstr(said, "saxpy") && strstr(said, "no vortex2.h queue API") && strstr(said, "vortex2-rv32"),
            "the refusal names the kernel, the missing API and the target to use: %s", said);
  free(said);
  for (int i = 0; i < N; i++)
    cr_assert_eq(y[i], 2.0f, "nothing ran: y[%d] = %f", i, y[i]);
  cr_assert_eq(standin_starts(VXT_STANDIN_V1), 0);
}

/* With a daemon that links images, `vxc compile -o` writes the module's
 * .vxbin beside the object: the bytes of the entry's image, under the
 * source's stem in an output directory, the object's name with .vxbin
 * for an output file; none for an object sent to a device. */
Test(runtime, vxc_compile_writes_the_module_image_beside_the_object) {
  char sdk[256], opt[300], cmd[2048], out[4096], path[512];
  make_sdk(d.dir, sdk, sizeof sdk);
  cr_assert_eq(vxt_daemon_stop(&d), 0);
  snprintf(opt, sizeof opt, "--vortex-sdk=%s", sdk);
  cr_assert_eq(vxt_daemon_start(&d, opt), 0);
  snprintf(cmd, sizeof cmd, "%s --socket %s compile --json -o %s/objs/ %s/two_kernels.mlir", VXT_VXC, d.sock,
           d.dir, VXT_EXAMPLES_DIR);
  cr_assert_eq(vxt_run(cmd, out, sizeof out), 0, "%s", out);
  snprintf(path, sizeof path, "%s/objs/two_kernels.vxbin", d.dir);
  cr_assert(strstr(out, "\"image\":") && strstr(out, path), "the JSON names the image: %s", out);
  size_t len = 0;
  uint8_t *written = (uint8_t *)vxt_read_file(path, &len);
  cr_assert_not_null(written, "%s written", path);
  /* the same bytes as the entry holds */
  size_t slen = 0;
  char *src = vxt_read_file(VXT_EXAMPLES_DIR "/two_kernels.mlir", &slen);
  vxc_conn *c = NULL;
  cr_assert_eq(vxc_connect(d.sock, &c), 0);
  vxp_response r;
  cr_assert_eq(vxc_compile(c, src, slen, VXT_EXAMPLES_DIR "/two_kernels.mlir", NULL, &r), 0);
  cr_assert_eq(r.status, VXP_STATUS_OK);
  cr_assert(r.cached && r.image && r.image_size == len && memcmp(r.image, written, len) == 0,
            "the entry's image, byte for byte");
  vxp_response_clear(&r);
  vxc_close(c);
  free(src);
  free(written);
  /* an output file: its name with .vxbin */
  snprintf(cmd, sizeof cmd, "%s --socket %s compile -o %s/k.o %s/two_kernels.mlir && test -s %s/k.vxbin",
           VXT_VXC, d.sock, d.dir, VXT_EXAMPLES_DIR, d.dir);
  cr_assert_eq(vxt_run(cmd, out, sizeof out), 0, "%s", out);
  /* a FIFO or a symbolic link planted where the image goes, a path the
   * user never named: replaced, never opened (no hang, nothing written
   * through the link) */
  char fifo[300], link[300], victim[300];
  snprintf(fifo, sizeof fifo, "%s/f.vxbin", d.dir);
  snprintf(link, sizeof link, "%s/l.vxbin", d.dir);
  snprintf(victim, sizeof victim, "%s/victim", d.dir);
  cr_assert_eq(mkfifo(fifo, 0666), 0);
  int vfd = open(victim, O_WRONLY | O_CREAT | O_EXCL, 0666);
  cr_assert_geq(vfd, 0);
  close(vfd);
  cr_assert_eq(symlink(victim, link), 0);
  const char *stems[2] = {"f", "l"};
  for (int i = 0; i < 2; i++) {
    snprintf(cmd, sizeof cmd,
             "timeout 60 %s --socket %s compile -o %s/%s.o %s/two_kernels.mlir 2>&1; echo rc=$?", VXT_VXC,
             d.sock, d.dir, stems[i], VXT_EXAMPLES_DIR);
    vxt_run(cmd, out, sizeof out);
    cr_assert_not_null(strstr(out, "rc=0"), "%s.vxbin planted: %s", stems[i], out);
  }
  struct stat st;
  cr_assert(lstat(fifo, &st) == 0 && S_ISREG(st.st_mode) && (size_t)st.st_size == len, "the FIFO replaced");
  cr_assert(lstat(link, &st) == 0 && S_ISREG(st.st_mode) && (size_t)st.st_size == len, "the link replaced");
  cr_assert(stat(victim, &st) == 0 && st.st_size == 0, "nothing written through the link");
  /* an object sent to a device: no image beside it */
  snprintf(cmd, sizeof cmd,
           "%s --socket %s compile -o /dev/null %s/two_kernels.mlir && test ! -e /dev/null.vxbin", VXT_VXC,
           d.sock, VXT_EXAMPLES_DIR);
  cr_assert_eq(vxt_run(cmd, out, sizeof out), 0, "%s", out);
}

/* A compile of saxpy as the runtime's module, polled until its key is
 * (same) or is not (!same) key: how a test waits for the daemon to notice
 * a changed SDK (on its one-second tick). The last reply is in *r. */
typedef struct {
  vxc_conn *c;
  const char *key;
  int same;
  vxp_response *r;
  int failed; /* set when a compile was not answered */
} sdk_poll;

static int sdk_key_changed(void *arg) {
  sdk_poll *p = arg;
  vxp_response_clear(p->r);
  if (vxc_compile(p->c, saxpy, saxpy_len, VXP_DEVICE_MODULE_NAME, NULL, p->r) != 0) {
    p->failed = 1;
    return 1;
  }
  if (p->r->status != VXP_STATUS_OK) return 1; /* the caller's assertions say what */
  return (strcmp(p->r->key, p->key) == 0) == p->same;
}

Test(runtime, vortexd_links_and_caches_vxbin_images_with_an_sdk) {
  /* the daemon has the SDK, the runtime does not: the image comes from vortexd */
  char sdk[256];
  make_sdk(d.dir, sdk, sizeof sdk);
  cr_assert_eq(vxt_daemon_stop(&d), 0);
  char opt[300];
  snprintf(opt, sizeof opt, "--vortex-sdk=%s", sdk);
  cr_assert_eq(vxt_daemon_start(&d, opt), 0);
  unsetenv("VORTEXD_VORTEX_SDK");
  setenv("VORTEXD_DEVICE", "vortex", 1);
  setenv("VORTEXD_LIBVORTEX", VXT_STANDIN, 1);
  cr_assert_eq(saxpy_on_standin(), 1, "the image vortexd linked ran");
  /* the image is part of the cached entry */
  vxc_conn *c = NULL;
  cr_assert_eq(vxc_connect(d.sock, &c), 0);
  vxp_response r;
  /* under the name the runtime compiles a module it loads by (part of the key) */
  cr_assert_eq(vxc_compile(c, saxpy, saxpy_len, VXP_DEVICE_MODULE_NAME, NULL, &r), 0);
  cr_assert_eq(r.status, VXP_STATUS_OK);
  cr_assert(r.cached, "a hit");
  cr_assert_not_null(r.image, "the module's image");
  cr_assert_gt(r.image_size, 16);
  char key[65]; /* 64 hex digits */
  snprintf(key, sizeof key, "%s", r.key);
  vxp_response_clear(&r);
  /* the key names the SDK's contents: a changed link script is a new key
   * (noticed within the daemon's one-second tick) ... */
  char cmd[2048], out[512], saved[300];
  snprintf(saved, sizeof saved, "%s/link.ld.orig", d.dir);
  snprintf(cmd, sizeof cmd,
           "cp -L %s/link.ld %s && rm %s/link.ld && cp %s %s/link.ld && echo '/* v2 */' >> %s/link.ld", sdk,
           saved, sdk, saved, sdk, sdk);
  cr_assert_eq(vxt_run(cmd, out, sizeof out), 0, "%s", out);
  sdk_poll poll = {c, key, 0, &r, 0};
  cr_assert(vxt_wait_until(sdk_key_changed, &poll, 60000) && !poll.failed, "the changed SDK noticed");
  cr_assert_eq(r.status, VXP_STATUS_OK, "%s", r.message ? r.message : "");
  cr_assert_not(r.cached, "another SDK: compiled and linked again");
  cr_assert_str_neq(r.key, key);
  cr_assert_not_null(r.image);
  vxp_response_clear(&r);
  /* ... and the same contents again, as another file, the old key */
  snprintf(cmd, sizeof cmd, "cp %s %s/link.ld.new && mv %s/link.ld.new %s/link.ld", saved, sdk, sdk, sdk);
  cr_assert_eq(vxt_run(cmd, out, sizeof out), 0, "%s", out);
  poll.same = 1;
  cr_assert(vxt_wait_until(sdk_key_changed, &poll, 60000) && !poll.failed, "the SDK's change back noticed");
  cr_assert(r.cached, "the first SDK's contents: its entry");
  cr_assert_str_eq(r.key, key);
  vxp_response_clear(&r);
  vxc_close(c);
}
