/*
 * vxd_scale.c - compile time against the number of kernels in one module.
 *
 *   vxd_scale SOCKET [N ...]            (default N: 1 4 16 64 256)
 *   vxd_scale --print N                 (writes the N-kernel module to stdout)
 *   vxd_scale --branches N [N ...]      (in-process compile time of one kernel
 *                                        with N thread-dependent branches)
 *   vxd_scale --codegen N [N ...]       (in-process compile time of the N-kernel
 *                                        module with the code-generation pipeline
 *                                        kept against built per module)
 *
 * For each N it generates one gpu.module of N distinct kernels (a bounds
 * check, a divergent branch, a small loop; a different constant each) and
 * measures, in BENCH_RUNS (default 5) paired runs (each run times the three
 * back to back; figures are medians, ratios the median of per-run ratios):
 *   inproc - vxl_compile on a warm compiler in this process;
 *   miss   - a cache-miss compile through the daemon (unique comment);
 *   chain  - mlir-opt-22 | mlir-translate-22 | opt-22 -O2 | llc-22, fed the
 *            LLVM-dialect module vortexd lowered (less work than the daemon).
 * Then prints the ratios: chain/miss, miss/inproc, and each size's miss
 * against the previous size's.
 *
 *   vxd_scale --workers ONE TWO ALONE [N ...]   (default N: 64 256)
 *
 * One module of N kernels compiled in parallel pieces (vxd_pieces.c), in
 * BENCH_RUNS paired runs of:
 *   one   - a miss on the daemon at socket ONE (one worker: every piece
 *           on one thread);
 *   two   - a miss on TWO (two workers: the idle one's core is borrowed);
 *   chain - as above;
 *   busy  - two different N-kernel modules sent at once to TWO (both
 *           workers busy: what a build that fills every core sees);
 *   alone - the same two at once to ALONE (two workers, piece_helpers 0:
 *           as before pieces were compiled in parallel).
 * Prints medians and the per-run ratios one/two, chain/two, busy/alone.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"
#include "client/vxc.h"
#include "daemon/vxd_pieces.h"
#include "lowering/vxl.h"

/* One module of n kernels, kernel `edit` (-1: none) with the constant
 * `value` instead of its own and add_lines more lines (comments) before
 * it; malloc()ed text, *len bytes. */
static char *gen_module_edit(int n, int edit, int value, int add_lines, size_t *len) {
  char *text = NULL;
  FILE *f = open_memstream(&text, len);
  fputs("module attributes {gpu.container_module} {\n  gpu.module @kernels {\n", f);
  for (int i = 0; i < n; i++) {
    for (int j = 0; i == edit && j < add_lines; j++)
      fputs("    // a line added\n", f);
    fprintf(f,
            "    gpu.func @k%d(%%n: i32, %%a: memref<?xf32>, %%b: memref<?xf32>, %%s: f32) kernel {\n"
            "      %%bid = gpu.block_id x\n"
            "      %%bdim = gpu.block_dim x\n"
            "      %%tid = gpu.thread_id x\n"
            "      %%0 = arith.muli %%bid, %%bdim : index\n"
            "      %%g = arith.addi %%0, %%tid : index\n"
            "      %%gi = arith.index_cast %%g : index to i32\n"
            "      %%inb = arith.cmpi slt, %%gi, %%n : i32\n"
            "      scf.if %%inb {\n"
            "        %%x = memref.load %%a[%%g] : memref<?xf32>\n"
            "        %%c = arith.constant %d.0 : f32\n"
            "        %%y = arith.mulf %%x, %%s : f32\n"
            "        %%z = arith.addf %%y, %%c : f32\n"
            "        %%c0 = arith.constant 0 : index\n"
            "        %%c1 = arith.constant 1 : index\n"
            "        %%c8 = arith.constant %d : index\n"
            "        %%r = scf.for %%j = %%c0 to %%c8 step %%c1 iter_args(%%acc = %%z) -> f32 {\n"
            "          %%t = arith.mulf %%acc, %%s : f32\n"
            "          scf.yield %%t : f32\n"
            "        }\n"
            "        memref.store %%r, %%b[%%g] : memref<?xf32>\n"
            "      }\n"
            "      gpu.return\n"
            "    }\n",
            i, i == edit ? value : i, 4 + i % 8);
  }
  fputs("  }\n}\n", f);
  fclose(f);
  return text;
}

static char *gen_module(int n, size_t *len) { return gen_module_edit(n, -1, 0, 0, len); }

/* One kernel with n branches on thread-dependent conditions, one after
 * the other, as unstructured control flow (cf.cond_br: each needs a split
 * and a join block from the divergence placement); malloc()ed text, *len
 * bytes. */
static char *gen_branches(int n, size_t *len) {
  char *text = NULL;
  FILE *f = open_memstream(&text, len);
  fputs("module attributes {gpu.container_module} {\n  gpu.module @m {\n"
        "    gpu.func @branches(%o: memref<?xi32>) kernel {\n"
        "      %tid = gpu.thread_id x\n      %t = arith.index_cast %tid : index to i32\n"
        "      %z = arith.constant 0 : index\n      cf.br ^b0\n",
        f);
  for (int i = 0; i < n; i++)
    fprintf(
        f,
        "    ^b%d:\n      %%c%d = arith.constant %d : i32\n      %%p%d = arith.cmpi sgt, %%t, %%c%d : i32\n"
        "      cf.cond_br %%p%d, ^t%d, ^b%d\n    ^t%d:\n      memref.store %%c%d, %%o[%%z] : memref<?xi32>\n"
        "      cf.br ^b%d\n",
        i, i, i, i, i, i, i, i + 1, i, i, i + 1);
  fprintf(f, "    ^b%d:\n      gpu.return\n    }\n  }\n}\n", n);
  fclose(f);
  return text;
}

/* In-process compile time (median of BENCH_RUNS) against branch count. */
static int bench_branches(int argc, char **argv) {
  int runs = getenv("BENCH_RUNS") ? atoi(getenv("BENCH_RUNS")) : 3;
  if (runs < 1) runs = 1;
  vxl_compiler *comp;
  if (vxd_compiler_new(&comp) != 0) return 2;
  vxl_options lo = {.opt_level = 2};
  double *t = malloc(sizeof(double) * (size_t)runs), prev = 0;
  printf("%9s %12s %10s\n", "branches", "compile ms", "vs prev");
  for (int a = 2; a < argc; a++) {
    int n = atoi(argv[a]);
    size_t len;
    char *src = gen_branches(n, &len);
    for (int i = 0; i < runs; i++) {
      vxl_result res;
      double t0 = bench_now_us();
      vxl_compile(comp, src, len, "branches.mlir", &lo, &res);
      t[i] = bench_now_us() - t0;
      if (!res.ok) {
        fprintf(stderr, "%d branches: %s\n", n, res.ndiags ? res.diags[0] : "failed");
        return 1;
      }
      vxl_result_clear(&res);
    }
    double m = bench_median(t, runs);
    printf("%9d %12.1f", n, m / 1e3);
    if (prev > 0)
      printf(" %9.2fx\n", m / prev);
    else
      printf(" %10s\n", "-");
    fflush(stdout);
    prev = m;
    free(src);
  }
  free(t);
  vxl_compiler_destroy(comp);
  return 0;
}

/* --codegen: the N-kernel module compiled in this process by two warm
 * compilers, one keeping its code-generation pipeline (the default), one
 * emitting through LLVM's C API (a pipeline built per module), paired:
 * each of BENCH_RUNS runs (default 5) times 20 compiles of each, alternating;
 * prints the runs' medians and min / median / max of kept/per-module. */
static int bench_codegen(int argc, char **argv) {
  int runs = getenv("BENCH_RUNS") ? atoi(getenv("BENCH_RUNS")) : 5;
  if (runs < 1) runs = 1;
  enum { REPS = 20 };
  vxl_compiler *kept, *plain;
  if (vxd_compiler_new(&kept) != 0 || vxd_compiler_new(&plain) != 0 ||
      vxl_compiler_reuse_codegen(plain, 0) != 0)
    return 2;
  vxl_options lo = {.opt_level = 2};
  double *ratio = malloc(sizeof(double) * (size_t)runs), tk[REPS], tp[REPS];
  printf("%8s %4s %14s %18s %12s\n", "kernels", "run", "kept ms (p50)", "per-module ms (p50)", "kept/per");
  for (int a = 2; a < argc; a++) {
    int n = atoi(argv[a]);
    size_t len;
    char *src = gen_module(n, &len);
    vxl_result res;
    for (int w = 0; w < 2; w++) { /* warm both */
      vxl_compile(w ? plain : kept, src, len, "scale.mlir", &lo, &res);
      vxl_result_clear(&res);
    }
    for (int r = 0; r < runs; r++) {
      for (int i = 0; i < REPS; i++)
        for (int w = 0; w < 2; w++) {
          double t0 = bench_now_us();
          vxl_compile(w ? plain : kept, src, len, "scale.mlir", &lo, &res);
          (w ? tp : tk)[i] = bench_now_us() - t0;
          if (!res.ok) return 1;
          vxl_result_clear(&res);
        }
      double k = bench_median(tk, REPS), p = bench_median(tp, REPS);
      ratio[r] = k / p;
      printf("%8d %4d %14.2f %18.2f %11.3fx\n", n, r, k / 1e3, p / 1e3, ratio[r]);
    }
    qsort(ratio, (size_t)runs, sizeof *ratio, bench_cmp);
    printf("%8d  kept/per-module min / median / max: %.3f / %.3f / %.3f\n", n, ratio[0],
           ratio[(runs - 1) / 2], ratio[runs - 1]);
    free(src);
  }
  free(ratio);
  vxl_compiler_destroy(kept);
  vxl_compiler_destroy(plain);
  return 0;
}

/* A miss of src (len bytes) on c, made unique by tag and compiled whole
 * (recache: no piece of an earlier module reused); microseconds, or
 * -1 on failure. */
static double miss_us(vxc_conn *c, const char *src, size_t len, const char *tag, uint32_t want_kernels) {
  size_t tlen = strlen(tag);
  char *var = malloc(len + tlen + 8);
  memcpy(var, src, len);
  size_t n = len + (size_t)sprintf(var + len, "\n// %s\n", tag);
  vxp_response r;
  /* compiled whole: no piece of an earlier compile taken */
  vxc_compile_options o = {.opt_level = 2, .cache = VXP_CACHE_RECACHE};
  double t0 = bench_now_us();
  int rc = vxc_compile(c, var, n, "scale.mlir", &o, &r);
  double us = bench_now_us() - t0;
  free(var);
  if (rc != 0 || r.status != VXP_STATUS_OK || r.cached || r.nkernels != want_kernels) {
    fprintf(stderr, "miss of %u kernels failed: %s\n", want_kernels, rc ? "no answer" : r.message);
    us = -1;
  }
  if (rc == 0) vxp_response_clear(&r);
  return us;
}

typedef struct {
  vxc_conn *c;
  const char *src;
  size_t len;
  char tag[96];
  uint32_t kernels;
  double us;
} par_miss;

static void *par_miss_main(void *arg) {
  par_miss *p = arg;
  p->us = miss_us(p->c, p->src, p->len, p->tag, p->kernels);
  return NULL;
}

/* Two misses sent at once on two connections to sock; wall time in
 * microseconds until both are answered, or -1. */
static double two_at_once_us(vxc_conn *const c[2], const char *src, size_t len, const char *tag,
                             uint32_t kernels) {
  par_miss p[2];
  pthread_t t[2];
  double t0 = bench_now_us();
  for (int i = 0; i < 2; i++) {
    p[i] = (par_miss){.c = c[i], .src = src, .len = len, .kernels = kernels};
    snprintf(p[i].tag, sizeof p[i].tag, "%s module %d", tag, i);
    pthread_create(&t[i], NULL, par_miss_main, &p[i]);
  }
  for (int i = 0; i < 2; i++)
    pthread_join(t[i], NULL);
  double us = bench_now_us() - t0;
  return p[0].us < 0 || p[1].us < 0 ? -1 : us;
}

static int bench_workers(int argc, char **argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: %s --workers ONE TWO ALONE [N ...]\n", argv[0]);
    return 64;
  }
  int defaults[] = {64, 256}, nsizes = argc > 5 ? argc - 5 : 2;
  int runs = getenv("BENCH_RUNS") ? atoi(getenv("BENCH_RUNS")) : 5;
  if (runs < 1) runs = 1;
  vxc_conn *one, *two[2], *alone[2];
  if (vxc_connect(argv[2], &one) != 0 || vxc_connect(argv[3], &two[0]) != 0 ||
      vxc_connect(argv[3], &two[1]) != 0 || vxc_connect(argv[4], &alone[0]) != 0 ||
      vxc_connect(argv[4], &alone[1]) != 0) {
    fprintf(stderr, "cannot connect to the three daemons\n");
    return 2;
  }
  double *t1 = calloc((size_t)runs, sizeof(double)), *t2 = calloc((size_t)runs, sizeof(double));
  double *tc = calloc((size_t)runs, sizeof(double)), *tb = calloc((size_t)runs, sizeof(double));
  double *ta = calloc((size_t)runs, sizeof(double)), *r12 = calloc((size_t)runs, sizeof(double));
  double *rc2 = calloc((size_t)runs, sizeof(double)), *rba = calloc((size_t)runs, sizeof(double));
  printf("%8s %9s %9s %8s %9s %10s %9s %9s %10s\n", "kernels", "one ms", "two ms", "one/two", "chain ms",
         "chain/two", "busy ms", "alone ms", "busy/alone");
  for (int s = 0; s < nsizes; s++) {
    uint32_t n = (uint32_t)(argc > 5 ? atoi(argv[s + 5]) : defaults[s]);
    size_t len;
    char *src = gen_module((int)n, &len);
    vxp_response r;
    vxc_compile_options o = {.opt_level = 2, .emit_ir = 1};
    if (vxc_compile(one, src, len, "scale.mlir", &o, &r) != 0 || !r.lowered_ir) return 1;
    char *lowered = strdup(r.lowered_ir);
    vxp_response_clear(&r);
    char tag[64];
    snprintf(tag, sizeof tag, "warm-up %d", getpid());
    if (miss_us(two[0], src, len, tag, n) < 0 || two_at_once_us(alone, src, len, tag, n) < 0) return 1;
    for (int i = 0; i < runs; i++) {
      snprintf(tag, sizeof tag, "workers %d %ld %d", getpid(), (long)time(NULL), i);
      t1[i] = miss_us(one, src, len, tag, n);
      t2[i] = miss_us(two[0], src, len, tag, n);
      tc[i] = bench_chain_us(lowered);
      tb[i] = two_at_once_us(two, src, len, tag, n);
      ta[i] = two_at_once_us(alone, src, len, tag, n);
      if (t1[i] < 0 || t2[i] < 0 || tc[i] < 0 || tb[i] < 0 || ta[i] < 0) return 1;
      r12[i] = t1[i] / t2[i], rc2[i] = tc[i] / t2[i], rba[i] = tb[i] / ta[i];
    }
    /* ratios: min / median / max over the runs */
    printf("%8u %9.1f %9.1f %8.2fx %9.1f %9.2fx %9.1f %9.1f %9.2fx\n", n, bench_median(t1, runs) / 1e3,
           bench_median(t2, runs) / 1e3, bench_median(r12, runs), bench_median(tc, runs) / 1e3,
           bench_median(rc2, runs), bench_median(tb, runs) / 1e3, bench_median(ta, runs) / 1e3,
           bench_median(rba, runs));
    printf("%8s %29s %5.2f-%.2f %19s %5.2f-%.2f %29s %5.2f-%.2f\n", "min-max", "", r12[0], r12[runs - 1], "",
           rc2[0], rc2[runs - 1], "", rba[0], rba[runs - 1]);
    fflush(stdout);
    free(lowered);
    free(src);
  }
  vxc_close(one);
  for (int i = 0; i < 2; i++)
    vxc_close(two[i]), vxc_close(alone[i]);
  free(t1), free(t2), free(tc), free(tb), free(ta), free(r12), free(rc2), free(rba);
  return 0;
}

/* CPU time used so far by process pid and its children (the daemon and
 * its workers), in microseconds: each one's CPU clock (every thread, the
 * ended ones too) and the children they have waited for (a worker's lld
 * fork; /proc's clock ticks).  -1 when pid is gone. */
static double tree_cpu_us(pid_t pid) {
  double us = 0;
  int found = 0;
  long tick = sysconf(_SC_CLK_TCK);
  DIR *d = opendir("/proc");
  for (struct dirent *e; d && (e = readdir(d));) {
    char path[300], buf[1024];
    pid_t p = (pid_t)atoi(e->d_name);
    if (p <= 0) continue;
    snprintf(path, sizeof path, "/proc/%d/stat", (int)p);
    size_t n = bench_read_file(path, buf, sizeof buf - 1);
    if (!n) continue;
    buf[n] = '\0';
    char *close = strrchr(buf, ')');
    int ppid = 0;
    unsigned long long f[15] = {0}; /* fields 4 .. 17 */
    if (!close || sscanf(close + 2, "%*c %d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %llu %llu", &ppid,
                         &f[10], &f[11], &f[12], &f[13]) != 5)
      continue;
    if (p != pid && ppid != pid) continue;
    clockid_t clk;
    struct timespec ts;
    if (clock_getcpuclockid(p, &clk) != 0 || clock_gettime(clk, &ts) != 0) continue;
    us += (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
    us += (double)(f[12] + f[13]) * 1e6 / (double)tick; /* waited-for children */
    found |= p == pid;
  }
  if (d) closedir(d);
  return found ? us : -1;
}

/* One compile of src on c with cache mode `mode`; wall and daemon CPU in
 * microseconds into *wall, *cpu.  0, or -1 on failure (said). */
static int timed_compile(vxc_conn *c, pid_t daemon, const char *src, size_t len, vxp_cache_mode mode,
                         uint32_t want_kernels, double *wall, double *cpu) {
  vxc_compile_options o = {.opt_level = 2, .cache = mode};
  vxp_response r;
  double c0 = tree_cpu_us(daemon), t0 = bench_now_us();
  int rc = vxc_compile(c, src, len, "incremental.mlir", &o, &r);
  *wall = bench_now_us() - t0;
  *cpu = tree_cpu_us(daemon) - c0;
  if (rc != 0) {
    fprintf(stderr, "compile of %u kernels: no answer\n", want_kernels);
    return -1;
  }
  int ok = r.status == VXP_STATUS_OK && !r.cached && r.nkernels == want_kernels && c0 >= 0;
  if (!ok) fprintf(stderr, "compile of %u kernels failed: %s\n", want_kernels, r.message ? r.message : "");
  vxp_response_clear(&r);
  return ok ? 0 : -1;
}

/* Modules compiled again after an edit of one kernel (the middle one), on
 * the daemon at SOCKET (process DAEMON_PID, for its CPU): BENCH_RUNS paired
 * runs of
 *   full  - the module with that kernel's constant changed, compiled whole
 *           (recache: no piece of an earlier compile taken);
 *   const - the module with that kernel's constant changed (another value
 *           each run): the pieces of the others come from the cache;
 *   line  - the same with a line added before that kernel (run i: i + 1
 *           lines), which moves the lines of every later kernel.
 * Prints wall and CPU medians, and the per-run ratios const/full and
 * line/full, min / median / max. */
static int bench_incremental(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s --incremental SOCKET DAEMON_PID [N]\n", argv[0]);
    return 64;
  }
  pid_t daemon = (pid_t)atoi(argv[3]);
  int n = argc > 4 ? atoi(argv[4]) : 256, k = n / 2;
  int runs = getenv("BENCH_RUNS") ? atoi(getenv("BENCH_RUNS")) : 5;
  if (runs < 1 || n < 1) return 64;
  vxc_conn *c;
  if (vxc_connect(argv[2], &c) != 0) {
    fprintf(stderr, "cannot connect to %s\n", argv[2]);
    return 2;
  }
  size_t len;
  char *base = gen_module(n, &len);
  double w, cpu;
  /* the module as it was before the edits: its pieces in the cache */
  if (timed_compile(c, daemon, base, len, VXP_CACHE_RECACHE, (uint32_t)n, &w, &cpu) != 0) return 1;
  double *v[10];
  for (int i = 0; i < 10; i++)
    v[i] = calloc((size_t)runs, sizeof(double));
  enum { FW, FC, CW, CC, LW, LC, RCW, RCC, RLW, RLC };
  for (int i = 0; i < runs; i++) {
    int unique = 100000 + (int)(getpid() % 1000) * 1000 + i * 3;
    struct {
      int value, line;
      vxp_cache_mode mode;
      int wi, ci;
    } kinds[3] = {{unique, 0, VXP_CACHE_RECACHE, FW, FC},
                  {unique + 1, 0, VXP_CACHE_USE, CW, CC},
                  /* i + 1 lines: the later kernels' lines never where an
                   * earlier run had them */
                  {unique + 2, i + 1, VXP_CACHE_USE, LW, LC}};
    for (int j = 0; j < 3; j++) {
      size_t elen;
      char *src = gen_module_edit(n, k, kinds[j].value, kinds[j].line, &elen);
      int rc = timed_compile(c, daemon, src, elen, kinds[j].mode, (uint32_t)n, &v[kinds[j].wi][i],
                             &v[kinds[j].ci][i]);
      free(src);
      if (rc) return 1;
    }
    v[RCW][i] = v[CW][i] / v[FW][i], v[RCC][i] = v[CC][i] / v[FC][i];
    v[RLW][i] = v[LW][i] / v[FW][i], v[RLC][i] = v[LC][i] / v[FC][i];
  }
  printf("%d kernels, kernel %d edited, %d runs (medians; ratios per run, min-median-max)\n", n, k, runs);
  printf("%-6s %10s %10s %26s %26s\n", "", "full ms", "edit ms", "edit/full", "");
  const char *what[2] = {"const", "line"};
  for (int j = 0; j < 2; j++) {
    int ew = j ? LW : CW, ec = j ? LC : CC, rw = j ? RLW : RCW, rc = j ? RLC : RCC;
    double fw = bench_median(v[FW], runs), fc = bench_median(v[FC], runs);
    double mw = bench_median(v[ew], runs), mc = bench_median(v[ec], runs);
    double rwm = bench_median(v[rw], runs), rcm = bench_median(v[rc], runs);
    printf("%-6s wall %8.1f %10.1f   %.3f-%.3f-%.3fx\n", what[j], fw / 1e3, mw / 1e3, v[rw][0], rwm,
           v[rw][runs - 1]);
    printf("%-6s CPU  %8.1f %10.1f   %.3f-%.3f-%.3fx\n", what[j], fc / 1e3, mc / 1e3, v[rc][0], rcm,
           v[rc][runs - 1]);
  }
  for (int i = 0; i < 10; i++)
    free(v[i]);
  free(base);
  vxc_close(c);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s SOCKET [N ...]\n", argv[0]);
    return 64;
  }
  if (strcmp(argv[1], "--branches") == 0) return bench_branches(argc, argv);
  if (strcmp(argv[1], "--codegen") == 0) return bench_codegen(argc, argv);
  if (strcmp(argv[1], "--workers") == 0) return bench_workers(argc, argv);
  if (strcmp(argv[1], "--incremental") == 0) return bench_incremental(argc, argv);
  if (strcmp(argv[1], "--print") == 0) {
    size_t len;
    char *m = gen_module(argc > 2 ? atoi(argv[2]) : 1, &len);
    fwrite(m, 1, len, stdout);
    free(m);
    return 0;
  }
  int defaults[] = {1, 4, 16, 64, 256}, nsizes = argc > 2 ? argc - 2 : 5;
  int *sizes = malloc(sizeof(int) * (size_t)nsizes);
  for (int i = 0; i < nsizes; i++)
    sizes[i] = argc > 2 ? atoi(argv[i + 2]) : defaults[i];
  int runs = getenv("BENCH_RUNS") ? atoi(getenv("BENCH_RUNS")) : 5;
  if (runs < 1) runs = 1;

  vxc_conn *c;
  if (vxc_connect(argv[1], &c) != 0) {
    fprintf(stderr, "cannot connect to %s\n", argv[1]);
    return 2;
  }
  vxl_compiler *comp;
  if (vxd_compiler_new(&comp) != 0) return 2;
  vxl_options lo = {.opt_level = 2};
  double *ti = malloc(sizeof(double) * (size_t)runs), *tm = malloc(sizeof(double) * (size_t)runs);
  double *tc = malloc(sizeof(double) * (size_t)runs), *rcm = malloc(sizeof(double) * (size_t)runs);
  double *rmi = malloc(sizeof(double) * (size_t)runs);
  double prev_miss = 0;
  printf("%8s %12s %12s %12s %11s %11s %10s\n", "kernels", "inproc ms", "miss ms", "chain ms", "chain/miss",
         "miss/inproc", "miss/prev");
  for (int s = 0; s < nsizes; s++) {
    size_t len;
    char *src = gen_module(sizes[s], &len);
    vxl_result res;
    vxp_response r;
    /* the chain's input: the module vortexd lowered */
    vxc_compile_options o = {.opt_level = 2, .emit_ir = 1};
    if (vxc_compile(c, src, len, "scale.mlir", &o, &r) != 0 || !r.lowered_ir) return 1;
    char *lowered = strdup(r.lowered_ir);
    vxp_response_clear(&r);
    /* warm-up: one of each */
    vxl_compile(comp, src, len, "scale.mlir", &lo, &res);
    if (!res.ok) {
      fprintf(stderr, "in-process compile of %d kernels failed: %s\n", sizes[s],
              res.ndiags ? res.diags[0] : "");
      return 1;
    }
    vxl_result_clear(&res);
    /* paired: each run measures all three back to back, so the machine's
     * drift affects the three alike; ratios are per run, then the median */
    for (int i = 0; i < runs; i++) {
      double t0 = bench_now_us();
      vxl_compile(comp, src, len, "scale.mlir", &lo, &res);
      ti[i] = bench_now_us() - t0;
      vxl_result_clear(&res);
      char tag[64];
      snprintf(tag, sizeof tag, "scale %d %ld %d", getpid(), (long)time(NULL), i);
      tm[i] = miss_us(c, src, len, tag, (uint32_t)sizes[s]);
      if (tm[i] < 0) return 1;
      tc[i] = bench_chain_us(lowered);
      if (tc[i] < 0) return 1;
      rcm[i] = tc[i] / tm[i];
      rmi[i] = tm[i] / ti[i];
    }
    free(lowered);
    double inproc = bench_median(ti, runs), miss = bench_median(tm, runs), chain = bench_median(tc, runs);
    printf("%8d %12.1f %12.1f %12.1f %10.2fx %10.2fx", sizes[s], inproc / 1e3, miss / 1e3, chain / 1e3,
           bench_median(rcm, runs), bench_median(rmi, runs));
    if (prev_miss > 0)
      printf(" %9.2fx\n", miss / prev_miss);
    else
      printf(" %10s\n", "-");
    fflush(stdout);
    prev_miss = miss;
    free(src);
  }
  vxl_compiler_destroy(comp);
  vxc_close(c);
  free(ti);
  free(tm);
  free(tc);
  free(rcm);
  free(rmi);
  free(sizes);
  return 0;
}
