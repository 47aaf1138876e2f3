/*
 * test_hardening.c - what a hostile local user or client can do to a
 * daemon and its clients: a planted runtime directory (wrong mode, a
 * symbolic link), symbolic links named like the lock, log and spawn files,
 * a regular file at the socket path, connections from another uid, a fake
 * daemon run by another uid.  Every hostile file is created by the test
 * itself; the tests that need a second uid switch to "nobody" in a child,
 * which needs root (the CI runs as root).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "vxc.h"
#include "vxt.h"

static char root[128];
static char out[16384];
static char cmd[4096];

static void setup(void) {
  snprintf(root, sizeof root, "/tmp/vxt-hard-XXXXXX");
  cr_assert_not_null(mkdtemp(root));
}

static void teardown(void) {
  snprintf(cmd, sizeof cmd, "pkill -TERM -f -- '--socket %s/' ; rm -rf %s", root, root);
  vxt_run(cmd, out, sizeof out);
}

TestSuite(hardening, .init = setup, .fini = teardown, .timeout = 120);

/* Runs vortexd on socket path sock in the foreground for a start that must
 * fail; returns its exit status with its stderr in out. */
static int daemon_refuses(const char *sock) {
  snprintf(cmd, sizeof cmd, "timeout 20 %s --socket %s --cache-dir %s/cache --workers 1 2>&1", VXT_VORTEXD,
           sock, root);
  return vxt_run(cmd, out, sizeof out);
}

Test(hardening, a_runtime_directory_open_to_others_is_refused_by_daemon_and_client) {
  char dir[256], sock[300];
  snprintf(dir, sizeof dir, "%s/shared", root);
  cr_assert_eq(mkdir(dir, 0700), 0);
  cr_assert_eq(chmod(dir, 0755), 0);
  snprintf(sock, sizeof sock, "%s/vortexd.sock", dir);
  cr_assert_eq(daemon_refuses(sock), 1, "%s", out);
  cr_assert_not_null(strstr(out, "is not private"), "%s", out);
  cr_assert_not_null(strstr(out, "chmod 700"), "the message names the fix: %s", out);
  cr_assert_not_null(strstr(out, dir), "the message names the path: %s", out);
  /* vxc would start a daemon there: it refuses first, creating nothing */
  snprintf(cmd, sizeof cmd, "%s --socket %s stats 2>&1; echo rc=$?; ls -A %s | wc -l", VXT_VXC, sock, dir);
  vxt_run(cmd, out, sizeof out);
  cr_assert_not_null(strstr(out, "is not private"), "%s", out);
  cr_assert_not_null(strstr(out, "rc=2\n0\n"), "refused, and nothing was created in the directory: %s", out);
}

Test(hardening, a_symlinked_runtime_directory_is_refused) {
  char real[256], link[256], sock[300];
  snprintf(real, sizeof real, "%s/real", root);
  snprintf(link, sizeof link, "%s/link", root);
  cr_assert_eq(mkdir(real, 0700), 0);
  cr_assert_eq(symlink(real, link), 0);
  snprintf(sock, sizeof sock, "%s/vortexd.sock", link);
  cr_assert_eq(daemon_refuses(sock), 1, "%s", out);
  cr_assert_not_null(strstr(out, "is a symbolic link"), "%s", out);
  snprintf(cmd, sizeof cmd, "ls -A %s | wc -l", real);
  vxt_run(cmd, out, sizeof out);
  cr_assert_str_eq(out, "0\n", "nothing was created through the link");
}

Test(hardening, symlinks_named_like_the_lock_log_and_spawn_files_are_not_followed) {
  char dir[256], sock[300], victim[300], name[400];
  snprintf(dir, sizeof dir, "%s/run", root);
  cr_assert_eq(mkdir(dir, 0700), 0);
  snprintf(sock, sizeof sock, "%s/vortexd.sock", dir);
  snprintf(victim, sizeof victim, "%s/victim", root);
  /* the lock: the daemon refuses, and the victim is neither created nor
   * truncated */
  snprintf(name, sizeof name, "%s.lock", sock);
  cr_assert_eq(symlink(victim, name), 0);
  cr_assert_eq(daemon_refuses(sock), 1, "%s", out);
  cr_assert_not_null(strstr(out, "symbolic link"), "%s", out);
  struct stat st;
  cr_assert_eq(lstat(victim, &st), -1, "the lock's target was created");
  unlink(name);
  /* the spawn lock and the log, which vxc opens before starting a daemon */
  const char *suffix[] = {".spawn", ".log"};
  for (int i = 0; i < 2; i++) {
    snprintf(name, sizeof name, "%s%s", sock, suffix[i]);
    cr_assert_eq(symlink(victim, name), 0);
    snprintf(cmd, sizeof cmd, "%s --socket %s stats 2>&1; echo rc=$?", VXT_VXC, sock);
    vxt_run(cmd, out, sizeof out);
    cr_assert_not_null(strstr(out, "rc=2"), "%s: %s", suffix[i], out);
    cr_assert_eq(lstat(victim, &st), -1, "vxc created the target of %s", name);
    cr_assert_eq(lstat(sock, &st), -1, "a daemon was started despite %s", name);
    unlink(name);
  }
}

Test(hardening, a_regular_file_at_the_socket_path_is_never_removed) {
  char notes[256];
  snprintf(notes, sizeof notes, "%s/notes.txt", root);
  FILE *f = fopen(notes, "w");
  cr_assert_not_null(f);
  fputs("keep me\n", f);
  fclose(f);
  cr_assert_eq(daemon_refuses(notes), 1, "%s", out);
  cr_assert_not_null(strstr(out, "is not a socket; not removing it"), "%s", out);
  size_t len;
  char *kept = vxt_read_file(notes, &len);
  cr_assert_not_null(kept, "the file is still there");
  cr_assert_eq(len, 8);
  free(kept);
}

/* Forks a child that becomes "nobody" and runs fn(arg) there; returns its
 * exit status. */
static int as_nobody(int (*fn)(const char *), const char *arg) {
  cr_assert_eq(geteuid(), 0, "switching to another uid needs root (run the suite as root, as the CI does)");
  struct passwd *pw = getpwnam("nobody");
  cr_assert_not_null(pw);
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    if (setgid(pw->pw_gid) != 0 || setuid(pw->pw_uid) != 0) _exit(90);
    _exit(fn(arg));
  }
  int st = 0;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 99;
}

/* Connects to sock and sends a stats request; exit 0 when answered,
 * 3 when the daemon closed the connection without answering. */
static int try_stats(const char *sock) {
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  snprintf(a.sun_path, sizeof a.sun_path, "%s", sock);
  if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) return 4;
  vxp_request r = {.op = VXP_OP_STATS, .id = 1, .proto_version = VXP_PROTOCOL_VERSION};
  uint8_t *frame = NULL;
  size_t len = 0;
  if (vxp_request_encode(&r, &frame, &len) != VXP_OK) return 5;
  ssize_t w = send(fd, frame, len, MSG_NOSIGNAL);
  free(frame);
  uint8_t buf[64];
  ssize_t n = w > 0 ? read(fd, buf, sizeof buf) : -1;
  close(fd);
  return n > 0 ? 0 : 3;
}

Test(hardening, another_uid_is_refused_by_peer_credentials) {
  vxt_daemon d = {0};
  snprintf(d.dir, sizeof d.dir, "%.100s/d", root);
  cr_assert_eq(mkdir(d.dir, 0700), 0);
  cr_assert_eq(vxt_daemon_start(&d, NULL), 0);
  /* what a careless chmod would allow: the socket open to every uid */
  cr_assert_eq(chmod(root, 0755), 0);
  cr_assert_eq(chmod(d.dir, 0755), 0);
  cr_assert_eq(chmod(d.sock, 0666), 0);
  cr_assert_eq(try_stats(d.sock), 0, "the daemon's own uid is served");
  int st = as_nobody(try_stats, d.sock);
  cr_assert_eq(st, 3, "another uid is closed without an answer (status %d)", st);
  cr_assert_eq(try_stats(d.sock), 0, "and the daemon keeps serving");
  cr_assert_eq(vxt_daemon_stop(&d), 0);

  /* a daemon serving a configured group: its members get in */
  struct passwd *pw = getpwnam("nobody");
  cr_assert_not_null(pw);
  vxt_daemon g = {0};
  snprintf(g.dir, sizeof g.dir, "%.100s/g", root);
  cr_assert_eq(mkdir(g.dir, 0700), 0);
  cr_assert_eq(chown(g.dir, (uid_t)-1, pw->pw_gid), 0);
  cr_assert_eq(chmod(g.dir, 0750), 0);
  char opt[64];
  snprintf(opt, sizeof opt, "--allow-group=%u", (unsigned)pw->pw_gid);
  cr_assert_eq(vxt_daemon_start(&g, opt), 0);
  struct stat sst;
  cr_assert_eq(stat(g.sock, &sst), 0);
  cr_assert_eq(sst.st_mode & 0777, 0660);
  cr_assert_eq(sst.st_gid, pw->pw_gid);
  st = as_nobody(try_stats, g.sock);
  cr_assert_eq(st, 0, "a member of the allowed group is served (status %d)", st);
  cr_assert_eq(vxt_daemon_stop(&g), 0);
}

/* Listens on sock as a fake daemon that answers nothing, for a few
 * seconds. */
static int fake_daemon(const char *sock) {
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  snprintf(a.sun_path, sizeof a.sun_path, "%s", sock);
  if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || chmod(sock, 0666) != 0 || listen(fd, 8) != 0)
    return 1;
  sleep(4);
  return 0;
}

Test(hardening, a_daemon_of_another_uid_is_not_trusted_by_the_client) {
  /* a directory another user pre-created where vxc looks for its daemon */
  char dir[256], sock[300];
  snprintf(dir, sizeof dir, "%s/planted", root);
  cr_assert_eq(mkdir(dir, 0777), 0);
  cr_assert_eq(chmod(dir, 0777), 0);
  struct passwd *pw = getpwnam("nobody");
  cr_assert_not_null(pw);
  cr_assert_eq(chown(dir, pw->pw_uid, pw->pw_gid), 0);
  cr_assert_eq(chmod(root, 0755), 0); /* nobody must reach it */
  snprintf(sock, sizeof sock, "%s/vortexd.sock", dir);
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) _exit(as_nobody(fake_daemon, sock));
  struct stat st;
  for (int i = 0; i < 300 && stat(sock, &st) != 0; i++)
    usleep(10000);
  vxc_conn *c = NULL;
  cr_assert_eq(vxc_connect(sock, &c), -EACCES, "the client refuses a daemon running as another uid");
  snprintf(cmd, sizeof cmd, "%s --socket %s stats 2>&1; echo rc=$?", VXT_VXC, sock);
  vxt_run(cmd, out, sizeof out);
  cr_assert_not_null(strstr(out, "runs as another user"), "%s", out);
  cr_assert_not_null(strstr(out, "rc=2"), "%s", out);
  kill(pid, SIGTERM);
  waitpid(pid, NULL, 0);
}
