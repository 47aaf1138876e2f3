/*
 * vxd_procs.c - whole processes timed as a build tool starts them: each
 * command is started with posix_spawn (as ninja and make's vfork do, with no
 * shell in between), its standard output sent to /dev/null, and waited for.
 * Rounds are paired: every round runs each command once, in order, so slow
 * moments of the machine hit all of them alike.
 *
 *   vxd_procs ROUNDS [--rm PATH]... [--status N] CMD ARGS... [-- ...]...
 *
 * CMD is a path (no PATH search: posix_spawnp would time the search too).
 * `--rm PATH` before a command deletes PATH before each of its runs, outside
 * the timed part (an output the command must then write anew); `--status N`:
 * the exit status that command must end with (default 0).  Prints, per
 * command, the median, 10th and 90th percentiles in microseconds, then each
 * command's median ratio to the last command over the rounds.
 */
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "bench_util.h"

extern char **environ;

enum { MAX_CMDS = 8, MAX_RM = 4 };

typedef struct {
  char **argv;
  const char *rm[MAX_RM];
  int nrm;
  int status; /* the exit status a run must end with */
} command;

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: vxd_procs ROUNDS [--rm PATH]... [--status N] CMD ARGS... [-- ...]\n");
    return 64;
  }
  int rounds = atoi(argv[1]);
  if (rounds < 1) return 64;
  command cmds[MAX_CMDS];
  int ncmd = 0;
  for (int i = 2; i < argc;) {
    if (ncmd == MAX_CMDS) {
      fprintf(stderr, "vxd_procs: at most %d commands\n", MAX_CMDS);
      return 64;
    }
    command *c = &cmds[ncmd++];
    c->nrm = 0;
    c->status = 0;
    while (i + 1 < argc && (strcmp(argv[i], "--rm") == 0 || strcmp(argv[i], "--status") == 0)) {
      if (argv[i][2] == 's')
        c->status = atoi(argv[i + 1]);
      else if (c->nrm < MAX_RM)
        c->rm[c->nrm++] = argv[i + 1];
      i += 2;
    }
    c->argv = &argv[i];
    while (i < argc && strcmp(argv[i], "--") != 0)
      i++;
    if (i < argc) argv[i++] = NULL; /* ends this command's argv */
    if (!c->argv[0]) return 64;
  }
  double *t = calloc((size_t)rounds * (size_t)ncmd, sizeof *t);
  double *ratio = calloc((size_t)rounds * (size_t)ncmd, sizeof *ratio);
  if (!t || !ratio) return 2;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  for (int r = 0; r < rounds; r++) {
    for (int c = 0; c < ncmd; c++) {
      for (int k = 0; k < cmds[c].nrm; k++)
        unlink(cmds[c].rm[k]);
      pid_t pid;
      int st;
      double t0 = bench_now_us();
      if (posix_spawn(&pid, cmds[c].argv[0], &fa, NULL, cmds[c].argv, environ) != 0 ||
          waitpid(pid, &st, 0) != pid) {
        perror(cmds[c].argv[0]);
        return 2;
      }
      t[c * rounds + r] = bench_now_us() - t0;
      if (!WIFEXITED(st) || WEXITSTATUS(st) != cmds[c].status) {
        fprintf(stderr, "vxd_procs: %s failed (status %d)\n", cmds[c].argv[0], st);
        return 2;
      }
    }
    for (int c = 0; c < ncmd; c++)
      ratio[c * rounds + r] = t[c * rounds + r] / t[(ncmd - 1) * rounds + r];
  }
  for (int c = 0; c < ncmd; c++) {
    double *v = &t[c * rounds];
    double med = bench_median(v, rounds); /* sorts v */
    const char *base = strrchr(cmds[c].argv[0], '/');
    printf("%-10s%s p50 %6.0f us  p10 %6.0f  p90 %6.0f  / last: %.2f\n", base ? base + 1 : cmds[c].argv[0],
           cmds[c].nrm ? " (output removed first)" : "", med, v[rounds / 10], v[rounds * 9 / 10],
           bench_median(&ratio[c * rounds], rounds));
  }
  free(t);
  free(ratio);
  return 0;
}
