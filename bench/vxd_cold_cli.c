/*
 * vxd_cold_cli.c - a cold `vxc compile`, the one that starts the daemon,
 * against the separate-process tool chain for the same kernel, paired.
 *
 *   vxd_cold_cli VXC FILE.mlir [RUNS]        (default 5 runs)
 *
 * Each run: a fresh private directory for the socket, a cache directory
 * (VORTEXD_CACHE_DIR) that the first run creates and the others find (a
 * daemon that exited on idle and is started again; the source gets a
 * trailing comment of its own per run, so each is a miss), `VXC --socket
 * DIR/s.sock compile k.mlir -o DIR/x.o` started as a build starts a
 * compiler (posix_spawn) and timed to its exit (spawning vortexd, waiting
 * for it, the compile), then the chain (bench_chain_us) on the LLVM-dialect
 * module the daemon lowered, then the daemon stopped.  Prints each run and
 * min / median / max of cold/chain over the runs after the first (the
 * first, which also creates the cache, is printed apart).
 */
#define _GNU_SOURCE
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_util.h"
#include "client/vxc.h"

extern char **environ;

/* Runs argv to its exit; its status, or -1. */
static int run(char *const argv[]) {
  pid_t pid;
  if (posix_spawn(&pid, argv[0], NULL, NULL, argv, environ) != 0) return -1;
  int st = 0;
  while (waitpid(pid, &st, 0) < 0) {
  }
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s VXC FILE.mlir [RUNS]\n", argv[0]);
    return 64;
  }
  int runs = argc > 3 ? atoi(argv[3]) : 5;
  size_t len = 0;
  FILE *f = fopen(argv[2], "rb");
  if (!f) return 2;
  static char src[1 << 20];
  len = fread(src, 1, sizeof src - 1, f);
  fclose(f);
  double *cold = calloc((size_t)runs + 1, sizeof *cold), *chain = calloc((size_t)runs, sizeof *chain),
         *ratio = calloc((size_t)runs, sizeof *ratio);
  char cache[] = "/tmp/vxd-coldcache-XXXXXX", cmd[256];
  if (!mkdtemp(cache)) return 2;
  setenv("VORTEXD_CACHE_DIR", cache, 1);
  printf("%4s %14s %10s %12s\n", "run", "cold vxc ms", "chain ms", "cold/chain");
  for (int r = 0; r <= runs; r++) {
    char dir[] = "/tmp/vxd-coldcli-XXXXXX";
    if (!mkdtemp(dir)) return 2;
    char sock[128], out[128], file[128];
    snprintf(sock, sizeof sock, "%s/s.sock", dir);
    snprintf(out, sizeof out, "%s/x.o", dir);
    snprintf(file, sizeof file, "%s/k.mlir", dir);
    FILE *kf = fopen(file, "w");
    if (!kf) return 2;
    fwrite(src, 1, len, kf);
    fprintf(kf, "\n// cold run %d\n", r);
    fclose(kf);
    char *vxc_argv[] = {argv[1], (char *)"--socket", sock, (char *)"compile", file, (char *)"-o", out, NULL};
    double t0 = bench_now_us();
    int st = run(vxc_argv);
    cold[r] = (bench_now_us() - t0) / 1e3;
    if (st != 0) {
      fprintf(stderr, "vxc failed (%d)\n", st);
      return 1;
    }
    vxc_conn *c = NULL;
    vxp_response resp;
    vxc_compile_options o = {.opt_level = 2, .emit_ir = 1};
    if (vxc_connect(sock, &c) != 0 || vxc_compile(c, src, len, argv[2], &o, &resp) != 0 || !resp.lowered_ir)
      return 1;
    double ch = bench_chain_us(resp.lowered_ir) / 1e3;
    vxp_response_clear(&resp);
    vxc_admin(c, VXP_OP_STOP, 0, &resp);
    vxp_response_clear(&resp);
    vxc_close(c);
    usleep(100000); /* the daemon exits */
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0 || ch <= 0) return 2;
    if (r == 0) { /* the first run also created the cache */
      printf("%4s %14.1f %10.1f %11.2fx   (new cache)\n", "new", cold[0], ch, cold[0] / ch);
      continue;
    }
    cold[r - 1] = cold[r], chain[r - 1] = ch, ratio[r - 1] = cold[r - 1] / ch;
    printf("%4d %14.1f %10.1f %11.2fx\n", r, cold[r - 1], chain[r - 1], ratio[r - 1]);
  }
  snprintf(cmd, sizeof cmd, "rm -rf %s", cache);
  if (system(cmd) != 0) return 2;
  qsort(ratio, (size_t)runs, sizeof *ratio, bench_cmp);
  qsort(cold, (size_t)runs, sizeof *cold, bench_cmp);
  qsort(chain, (size_t)runs, sizeof *chain, bench_cmp);
  printf("min / median / max: cold %.1f / %.1f / %.1f ms, chain %.1f / %.1f / %.1f ms, cold/chain %.2f / "
         "%.2f / %.2f\n",
         cold[0], cold[(runs - 1) / 2], cold[runs - 1], chain[0], chain[(runs - 1) / 2], chain[runs - 1],
         ratio[0], ratio[(runs - 1) / 2], ratio[runs - 1]);
  free(cold);
  free(chain);
  free(ratio);
  return 0;
}
