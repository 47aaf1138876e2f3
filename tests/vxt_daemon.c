/* vxt_daemon.c - start and stop a vortexd for one test. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "client/vxc.h"
#include "vxt.h"

/* The directories vxt_daemon_start made in this process, removed when it
 * exits (each test runs in a process of its own), daemons still running on
 * them stopped first. */
#define VXT_MAX_DIRS 16
static char vxt__dirs[VXT_MAX_DIRS][128];
static int vxt__ndirs;
static pid_t vxt__owner;

static void vxt__remove_dirs(void) {
  if (getpid() != vxt__owner) return; /* a forked child exiting: not ours */
  for (int i = 0; i < vxt__ndirs; i++)
    vxt_remove_tree(vxt__dirs[i]);
}

void vxt_remove_tree(const char *dir) {
  char cmd[512];
  /* "[/]" keeps pkill's pattern from matching the shell running it */
  snprintf(cmd, sizeof cmd, "pkill -TERM -f -- '--socket [%c]%s/' ; rm -rf '%s'", dir[0], dir + 1, dir);
  if (system(cmd) != 0) { /* nothing else to do at exit */
  }
}

int vxt_daemon_start(vxt_daemon *d, const char *extra) {
  if (!d->dir[0]) {
    vxt_tmp_template(d->dir, sizeof d->dir, "vxt-");
    if (!mkdtemp(d->dir)) return -1;
    if (vxt__owner != getpid()) {
      vxt__owner = getpid();
      vxt__ndirs = 0;
      atexit(vxt__remove_dirs);
    }
    if (vxt__ndirs < VXT_MAX_DIRS) snprintf(vxt__dirs[vxt__ndirs++], sizeof vxt__dirs[0], "%s", d->dir);
  }
  snprintf(d->sock, sizeof d->sock, "%s/vortexd.sock", d->dir);
  snprintf(d->cache, sizeof d->cache, "%s/cache", d->dir);
  d->pid = fork();
  if (d->pid < 0) return -1;
  if (d->pid == 0) {
    char *args[] = {(char *)VXT_VORTEXD,   (char *)"--socket", d->sock,
                    (char *)"--cache-dir", d->cache,           (char *)"--workers",
                    (char *)"2",           (char *)extra,      NULL};
    execv(VXT_VORTEXD, args);
    _exit(127);
  }
  return vxt_daemon_wait(d->sock, d->pid);
}

pid_t vxt_daemon_start_logged(const char *sock, const char *cache, const char *log, int append,
                              const char *const *env, const char *const *args) {
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    int fd = open(log, O_WRONLY | O_CREAT | (append ? O_APPEND : O_TRUNC), 0600);
    if (fd < 0 || dup2(fd, 2) < 0) _exit(126);
    for (const char *const *e = env; e && *e; e++)
      putenv((char *)*e);
    char *argv[32] = {(char *)VXT_VORTEXD, (char *)"--socket",  (char *)sock, (char *)"--cache-dir",
                      (char *)cache,       (char *)"--workers", (char *)"1"};
    int n = 7;
    for (const char *const *a = args; a && *a && n < 31; a++)
      argv[n++] = (char *)*a;
    argv[n] = NULL;
    execv(VXT_VORTEXD, argv);
    _exit(127);
  }
  if (vxt_daemon_wait(sock, pid) == 0) return pid;
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
  return -1;
}

int vxt_daemon_wait(const char *sock, pid_t pid) {
  /* until it answers or exits; the cap (120 s) only keeps a hung daemon
   * from hanging the suite: a loaded machine (sanitizer builds beside it)
   * may take seconds to start one */
  for (int i = 0; i < 12000; i++) {
    vxc_conn *c = NULL;
    if (vxc_connect(sock, &c) == 0) { /* listening; answering once hello is */
      int answered = vxc_server_info(c) != NULL;
      vxc_close(c);
      if (answered) return 0;
    }
    int st = 0;
    if (waitpid(pid, &st, WNOHANG) == pid) { /* say how, for the test's log */
      if (WIFSIGNALED(st))
        fprintf(stderr, "vxt: vortexd (pid %d) for %s died of signal %d while starting\n", (int)pid, sock,
                WTERMSIG(st));
      else
        fprintf(stderr, "vxt: vortexd (pid %d) for %s exited with status %d while starting\n", (int)pid, sock,
                WIFEXITED(st) ? WEXITSTATUS(st) : -1);
      return -1;
    }
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  return -1;
}

int vxt_daemon_stop(vxt_daemon *d) {
  if (d->pid <= 0) return -1;
  kill(d->pid, SIGTERM);
  int st = 0;
  while (waitpid(d->pid, &st, 0) < 0 && errno == EINTR) {
  }
  d->pid = 0;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int vxt_run(const char *cmd, char *out, size_t cap) {
  FILE *p = popen(cmd, "r");
  if (!p) return -2;
  size_t n = fread(out, 1, cap - 1, p);
  out[n] = '\0';
  int st = pclose(p);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}
