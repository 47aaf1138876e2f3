/*
 * vxd_startup.c - start-up in CPU time, two builds paired: `vortexd
 * --version`, and a cold `vxc compile` end to end (the vxc that starts
 * the daemon, the daemon and its workers through to their exit).
 *
 *   vxd_startup A_DIR B_DIR FILE.mlir [PAIRS [MISSES]]   (default 10 pairs, 0)
 *
 * A_DIR and B_DIR hold a vortexd and a vxc each (two build trees).  Each
 * pair runs A then B.  --version: the process's own user + system time
 * (wait4).  Cold compile: a fresh private directory for the socket, the
 * build's own cache directory (VORTEXD_CACHE_DIR, made by a first run
 * that is not counted: a daemon that exited on idle and is started
 * again), FILE with a trailing comment of its own per run (a miss;
 * compiled with --recache, so a module of several pieces is compiled
 * whole, none of its pieces taken from an earlier run);
 * `vxc --socket DIR/s.sock compile` timed to its exit (wall), then `vxc
 * stop`; this process is the child subreaper, so the detached daemon is
 * reparented to it and reaped at its exit with the CPU time of the workers
 * it reaped.  CPU = that vxc's + the daemon's (the stop's own vxc is not
 * counted).  With MISSES, each pair also starts a daemon that compiles
 * FILE 1 + MISSES times (each a miss): (its CPU - the single compile's) /
 * MISSES is what a warm miss costs end to end, ld.lld or any other child
 * process included (reaped, so counted).  Prints min / median / max of
 * each and of the ratios A/B taken pair by pair.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_util.h"

extern char **environ;

static double cpu_ms(const struct rusage *ru) {
  return (ru->ru_utime.tv_sec + ru->ru_stime.tv_sec) * 1e3 +
         (ru->ru_utime.tv_usec + ru->ru_stime.tv_usec) / 1e3;
}

/* Runs argv (output to /dev/null) to its exit; its CPU time (ms) into
 * *cpu, 0 or -1 when it failed. */
static int run(char *const argv[], double *cpu) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  pid_t pid;
  int e = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  if (e != 0) return -1;
  int st = 0;
  struct rusage ru;
  while (wait4(pid, &st, 0, &ru) < 0)
    if (errno != EINTR) return -1;
  *cpu = cpu_ms(&ru);
  return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

/* Every remaining child (the daemon, reparented here) waited for: the sum
 * of their CPU times (ms). */
static double reap_all(void) {
  double sum = 0;
  struct rusage ru;
  int st;
  for (;;) {
    pid_t p = wait4(-1, &st, 0, &ru);
    if (p > 0)
      sum += cpu_ms(&ru);
    else if (errno != EINTR)
      return sum;
  }
}

typedef struct {
  const char *dir;
  char vortexd[4096], vxc[4096], cache[64];
} build;

/* One cold compile of src (len bytes, tagged with run) by b: the vxc's
 * wall time and everyone's CPU time (ms).  0 or -1. */
static int cold_compile(build *b, const char *src, size_t len, int run_no, int misses, double *wall,
                        double *cpu) {
  char dir[] = "/tmp/vxd-startup-XXXXXX";
  if (!mkdtemp(dir)) return -1;
  char sock[128], out[128], file[128];
  snprintf(sock, sizeof sock, "%s/s.sock", dir);
  snprintf(out, sizeof out, "%s/x.o", dir);
  snprintf(file, sizeof file, "%s/k.mlir", dir);
  FILE *kf = fopen(file, "w");
  if (!kf) return -1;
  fwrite(src, 1, len, kf);
  fprintf(kf, "\n// cold run %d\n", run_no);
  fclose(kf);
  setenv("VORTEXD_CACHE_DIR", b->cache, 1);
  /* --recache: a whole compile, no piece of an earlier run's module taken
   * (the trailing comment moves no line of a module of several pieces) */
  char *compile[] = {b->vxc, (char *)"--socket",  sock,         (char *)"compile",
                     file,   (char *)"--recache", (char *)"-o", out,
                     NULL};
  char *stop[] = {b->vxc, (char *)"--socket", sock, (char *)"--no-spawn", (char *)"stop", NULL};
  double t0 = bench_now_us(), c1 = 0, c2 = 0;
  int rc = run(compile, &c1);
  *wall = (bench_now_us() - t0) / 1e3;
  for (int m = 0; m < misses && rc == 0; m++) { /* a new source each time: a miss */
    kf = fopen(file, "w");
    if (!kf) return -1;
    fwrite(src, 1, len, kf);
    fprintf(kf, "\n// cold run %d, miss %d\n", run_no, m);
    fclose(kf);
    double c = 0;
    rc = run(compile, &c);
    c1 += c;
  }
  if (run(stop, &c2) != 0) rc = -1;
  *cpu = c1 + reap_all();
  unlink(out), unlink(file), unlink(sock);
  /* what vxc's start of the daemon leaves beside the socket */
  static const char *const beside[] = {".lock", ".log", ".spawn"};
  for (size_t i = 0; i < sizeof beside / sizeof *beside; i++) {
    char path[160];
    snprintf(path, sizeof path, "%s%s", sock, beside[i]);
    unlink(path);
  }
  rmdir(dir);
  return rc;
}

static void report(const char *what, double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, bench_cmp);
  printf("  %-34s %9.3f %9.3f %9.3f\n", what, v[0], v[(n - 1) / 2], v[n - 1]);
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s A_DIR B_DIR FILE.mlir [PAIRS]\n", argv[0]);
    return 64;
  }
  int pairs = argc > 4 ? atoi(argv[4]) : 10, misses = argc > 5 ? atoi(argv[5]) : 0;
  if (pairs < 1 || pairs > 1000 || misses < 0 || misses > 1000) return 64;
  static char src[1 << 20];
  size_t len = bench_read_file(argv[3], src, sizeof src);
  if (!len || prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) return 2;
  build b[2] = {{.dir = argv[1]}, {.dir = argv[2]}};
  for (int i = 0; i < 2; i++) {
    snprintf(b[i].vortexd, sizeof b[i].vortexd, "%s/vortexd", b[i].dir);
    snprintf(b[i].vxc, sizeof b[i].vxc, "%s/vxc", b[i].dir);
    snprintf(b[i].cache, sizeof b[i].cache, "/tmp/vxd-startup-cache-XXXXXX");
    double w, c;
    if (!mkdtemp(b[i].cache) || cold_compile(&b[i], src, len, -1, 0, &w, &c) != 0) {
      fprintf(stderr, "%s: the first cold compile failed\n", b[i].dir);
      return 1;
    }
  }
  double *v[2], *cw[2], *cc[2], *cm[2], *rv = calloc((size_t)pairs, sizeof(double)),
                                        *rc = calloc((size_t)pairs, sizeof(double)),
                                        *rm = calloc((size_t)pairs, sizeof(double));
  for (int i = 0; i < 2; i++) {
    v[i] = calloc((size_t)pairs, sizeof(double));
    cw[i] = calloc((size_t)pairs, sizeof(double));
    cc[i] = calloc((size_t)pairs, sizeof(double));
    cm[i] = calloc((size_t)pairs, sizeof(double));
  }
  for (int p = 0; p < pairs; p++) {
    for (int i = 0; i < 2; i++) {
      char *version[] = {b[i].vortexd, (char *)"--version", NULL};
      double w, many = 0;
      if (run(version, &v[i][p]) != 0 || cold_compile(&b[i], src, len, p, 0, &cw[i][p], &cc[i][p]) != 0 ||
          (misses && cold_compile(&b[i], src, len, p, misses, &w, &many) != 0)) {
        fprintf(stderr, "%s: run %d failed\n", b[i].dir, p);
        return 1;
      }
      cm[i][p] = misses ? (many - cc[i][p]) / misses : 0;
    }
    rv[p] = v[0][p] / v[1][p];
    rc[p] = cc[0][p] / cc[1][p];
    rm[p] = misses ? cm[0][p] / cm[1][p] : 0;
  }
  printf("%d pairs, A = %s, B = %s; min / median / max\n", pairs, argv[1], argv[2]);
  report("A vortexd --version CPU ms", v[0], pairs);
  report("B vortexd --version CPU ms", v[1], pairs);
  report("A/B --version CPU", rv, pairs);
  report("A cold vxc compile CPU ms", cc[0], pairs);
  report("B cold vxc compile CPU ms", cc[1], pairs);
  report("A/B cold compile CPU", rc, pairs);
  report("A cold vxc compile wall ms", cw[0], pairs);
  report("B cold vxc compile wall ms", cw[1], pairs);
  if (misses) {
    report("A warm miss CPU ms", cm[0], pairs);
    report("B warm miss CPU ms", cm[1], pairs);
    report("A/B warm miss CPU", rm, pairs);
  }
  for (int i = 0; i < 2; i++) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", b[i].cache);
    if (system(cmd) != 0) return 2;
    free(v[i]), free(cw[i]), free(cc[i]), free(cm[i]);
  }
  free(rv), free(rc), free(rm);
  return 0;
}
