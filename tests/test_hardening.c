/*
 * test_hardening.c - what a hostile local user or client can do to a
 * daemon and its clients: a planted runtime directory (wrong mode, a
 * symbolic link), symbolic links named like the lock, log and spawn files,
 * a regular file at the socket path, connections from another uid, a fake
 * daemon run by another uid.  Every hostile file is created by the test
 * itself; the tests that need a second uid switch to "nobody" in a child,
 * which needs root (the CI runs as root).
 */
#define _GNU_SOURCE /* memmem */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "client/vxc.h"
#include "protocol/vxp_entry.h"
#include "vxt.h"

static char root[128];
static char out[16384];
static char cmd[4096];

static void setup(void) {
  vxt_tmp_template(root, sizeof root, "vxt-hard-");
  cr_assert_not_null(mkdtemp(root));
}

static void teardown(void) { vxt_remove_tree(root); }

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

/* The refusal of a directory that is not private never advises changing
 * the mode of a shared or system one (/tmp, /run: sticky, or holding
 * other files), as root or not; it names a directory of one's own. */
Test(hardening, the_advice_never_changes_a_shared_or_system_directory) {
  char dir[256], sock[300], other[300];
  const mode_t modes[2] = {01777, 0755}; /* like /tmp, like /run */
  for (int i = 0; i < 2; i++) {
    snprintf(dir, sizeof dir, "%s/system%d", root, i);
    cr_assert_eq(mkdir(dir, 0700), 0);
    cr_assert_eq(chmod(dir, modes[i]), 0);
    snprintf(other, sizeof other, "%s/someone-elses-file", dir);
    int fd = open(other, O_WRONLY | O_CREAT | O_EXCL, 0600);
    cr_assert_geq(fd, 0);
    close(fd);
    snprintf(sock, sizeof sock, "%s/x.sock", dir);
    cr_assert_eq(daemon_refuses(sock), 1, "%s", out);
    cr_assert_not_null(strstr(out, "is not private"), "%s", out);
    cr_assert_null(strstr(out, "chmod"), "mode %o: no chmod of a shared directory: %s", modes[i], out);
    cr_assert_not_null(strstr(out, "mkdir -m 700"), "names a directory of one's own: %s", out);
    snprintf(cmd, sizeof cmd, "%s --socket %s stats 2>&1", VXT_VXC, sock);
    vxt_run(cmd, out, sizeof out);
    cr_assert(strstr(out, "is not private") && !strstr(out, "chmod"), "vxc: %s", out);
  }
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

/* A test that acts as another user (nobody) or gives a file to one needs
 * root: anywhere else it is skipped, saying so (the CI runs as root). */
static void need_root(void) {
  if (geteuid() != 0)
    cr_skip_test("needs root to act as another user (nobody); run the suite as root, as CI does");
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
  need_root();
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

static int path_exists(void *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

/* Listens on sock as a fake daemon that answers nothing, until killed. */
static int fake_daemon(const char *sock) {
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  snprintf(a.sun_path, sizeof a.sun_path, "%s", sock);
  if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || chmod(sock, 0666) != 0 || listen(fd, 8) != 0)
    return 1;
  for (;;)
    pause();
}

Test(hardening, a_daemon_of_another_uid_is_not_trusted_by_the_client) {
  need_root();
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
  if (pid == 0) { /* killed below: as nobody in this process, not a child of it */
    if (setgid(pw->pw_gid) != 0 || setuid(pw->pw_uid) != 0) _exit(90);
    _exit(fake_daemon(sock));
  }
  cr_assert(vxt_wait_until(path_exists, sock, 60000), "the fake daemon listens");
  vxc_conn *c = NULL;
  cr_assert_eq(vxc_connect(sock, &c), -EACCES, "the client refuses a daemon running as another uid");
  snprintf(cmd, sizeof cmd, "%s --socket %s stats 2>&1; echo rc=$?", VXT_VXC, sock);
  vxt_run(cmd, out, sizeof out);
  cr_assert_not_null(strstr(out, "runs as another user"), "%s", out);
  cr_assert_not_null(strstr(out, "rc=2"), "%s", out);
  kill(pid, SIGTERM);
  waitpid(pid, NULL, 0);
}

/* A root-owned directory makes a daemon of another uid trusted (a system
 * service) only for a socket that is really there: a symbolic link in it
 * to another user's socket is not. */
Test(hardening, a_link_in_a_root_directory_to_another_users_socket_is_not_trusted) {
  need_root();
  char dir[256], sock[300], sysdir[256], link[300];
  snprintf(dir, sizeof dir, "%s/planted", root);
  cr_assert_eq(mkdir(dir, 0777), 0);
  cr_assert_eq(chmod(dir, 0777), 0);
  struct passwd *pw = getpwnam("nobody");
  cr_assert_not_null(pw);
  cr_assert_eq(chown(dir, pw->pw_uid, pw->pw_gid), 0);
  cr_assert_eq(chmod(root, 0755), 0); /* nobody must reach it */
  snprintf(sock, sizeof sock, "%s/vortexd.sock", dir);
  snprintf(sysdir, sizeof sysdir, "%s/system", root);
  cr_assert_eq(mkdir(sysdir, 0755), 0); /* root's, closed to others: a system service's */
  snprintf(link, sizeof link, "%s/vortexd.sock", sysdir);
  cr_assert_eq(symlink(sock, link), 0);
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) { /* killed below: as nobody in this process, not a child of it */
    if (setgid(pw->pw_gid) != 0 || setuid(pw->pw_uid) != 0) _exit(90);
    _exit(fake_daemon(sock));
  }
  cr_assert(vxt_wait_until(path_exists, sock, 60000), "the fake daemon listens");
  vxc_conn *c = NULL;
  cr_assert_eq(vxc_connect(link, &c), -EACCES, "another uid's daemon behind a link is refused");
  snprintf(cmd, sizeof cmd, "%s --socket %s stats 2>&1; echo rc=$?", VXT_VXC, link);
  vxt_run(cmd, out, sizeof out);
  cr_assert_not_null(strstr(out, "runs as another user"), "%s", out);
  cr_assert_not_null(strstr(out, "rc=2"), "%s", out);
  kill(pid, SIGTERM);
  waitpid(pid, NULL, 0);
}

/* ---- integrity, administration, configuration ---- */

#define POLYGEIST_STYLE VXT_KERNELS_DIR "/polygeist_style.mlir"

/* Starts a daemon in root/NAME. */
static void start_in(vxt_daemon *d, const char *name, const char *extra) {
  memset(d, 0, sizeof *d);
  snprintf(d->dir, sizeof d->dir, "%.100s/%s", root, name);
  cr_assert_eq(mkdir(d->dir, 0700), 0);
  cr_assert_eq(vxt_daemon_start(d, extra), 0);
}

/* The value of "key": in a JSON line (a number), or -1. */
static long long json_num(const char *json, const char *key) {
  char pat[64];
  snprintf(pat, sizeof pat, "\"%s\":", key);
  const char *p = strstr(json, pat);
  return p ? atoll(p + strlen(pat)) : -1;
}

/* Flips a byte of the n bytes `bytes` where they stand in d's cache.db
 * (the daemon stopped); with once, they must stand there once. */
static void flip_a_byte_of(const vxt_daemon *d, const void *bytes, size_t n, int once) {
  char path[512];
  size_t dlen;
  snprintf(path, sizeof path, "%s/cache.db", d->cache);
  char *db = vxt_read_file(path, &dlen);
  cr_assert_not_null(db);
  char *at = memmem(db, dlen, bytes, n);
  cr_assert_not_null(at, "the bytes are in cache.db");
  if (once) cr_assert_null(memmem(at + 1, dlen - (size_t)(at + 1 - db), bytes, n), "once");
  FILE *f = fopen(path, "r+b");
  cr_assert_not_null(f);
  fseek(f, (long)(at - db) + 20, SEEK_SET);
  fputc(at[20] ^ 0x10, f);
  fclose(f);
  free(db);
}

Test(hardening, a_damaged_cache_entry_is_never_served_but_compiled_again) {
  vxt_daemon d;
  start_in(&d, "damage", NULL);
  snprintf(cmd, sizeof cmd, "%s --no-spawn --socket %s compile --json -o %s/objs/ %s", VXT_VXC, d.sock, d.dir,
           POLYGEIST_STYLE);
  cr_assert_eq(vxt_run(cmd, out, sizeof out), 0, "%s", out);
  char *k = strstr(out, "\"key\":\"");
  cr_assert_not_null(k);
  char key[65];
  memcpy(key, k + 7, 64);
  key[64] = '\0';
  cr_assert_eq(vxt_daemon_stop(&d), 0);
  /* flip one byte of the stored object inside cache.db */
  char path[512];
  snprintf(path, sizeof path, "%s/objs/polygeist_style.o", d.dir);
  size_t olen;
  char *obj = vxt_read_file(path, &olen);
  cr_assert_not_null(obj);
  cr_assert_gt(olen, 200);
  flip_a_byte_of(&d, obj + 100, 48, 0);
  free(obj);
  cr_assert_eq(vxt_daemon_start(&d, NULL), 0);
  /* fetch: not found, never the damaged bytes */
  snprintf(cmd, sizeof cmd, "%s --no-spawn --socket %s fetch %s --json 2>&1; echo rc=$?", VXT_VXC, d.sock,
           key);
  vxt_run(cmd, out, sizeof out);
  cr_assert_not_null(strstr(out, "rc=1"), "%s", out);
  cr_assert_null(strstr(out, "\"status\":\"ok\""), "%s", out);
  /* compile: compiled again, then a hit again */
  snprintf(cmd, sizeof cmd, "%s --no-spawn --socket %s compile --json %s", VXT_VXC, d.sock, POLYGEIST_STYLE);
  cr_assert_eq(vxt_run(cmd, out, sizeof out), 0, "%s", out);
  cr_assert_not_null(strstr(out, "\"cached\":false"), "%s", out);
  cr_assert_eq(vxt_run(cmd, out, sizeof out), 0, "%s", out);
  cr_assert_not_null(strstr(out, "\"cached\":true"), "%s", out);
  snprintf(cmd, sizeof cmd, "%s --no-spawn --socket %s stats --json", VXT_VXC, d.sock);
  cr_assert_eq(vxt_run(cmd, out, sizeof out), 0, "%s", out);
  cr_assert_eq(json_num(out, "corrupt"), 1, "%s", out);
  snprintf(cmd, sizeof cmd, "%s --no-spawn --socket %s verify", VXT_VXC, d.sock);
  cr_assert_eq(vxt_run(cmd, out, sizeof out), 0, "%s", out);
  cr_assert_str_eq(out, "1 entries checked, 0 damaged (dropped)\n");
  cr_assert_eq(vxt_daemon_stop(&d), 0);
}

/* The key of the first entry `vxc ls --json` lists as a piece of file. */
static void first_piece_key(const vxt_daemon *d, const char *file, char key[65]) {
  snprintf(cmd, sizeof cmd, "%s --no-spawn --socket %s ls --json --limit 100", VXT_VXC, d->sock);
  cr_assert_eq(vxt_run(cmd, out, sizeof out), 0, "%s", out);
  char want[128];
  snprintf(want, sizeof want, "\"source_name\":\"piece of %s\"", file);
  for (const char *k = out; (k = strstr(k, "\"key\":\"")); k++) {
    const char *end = strchr(k, '}');
    const char *w = strstr(k, want);
    if (end && w && w < end) {
      memcpy(key, k + 7, 64);
      key[64] = '\0';
      return;
    }
  }
  cr_assert_fail("no piece of %s listed: %s", file, out);
}

/* A damaged piece is never linked into a module: a module compiled again
 * compiles that piece again (the others from the cache) into the bytes it
 * had, the damage is counted, and the cache is whole after. */
Test(hardening, a_damaged_piece_is_never_used_but_compiled_again) {
  vxt_daemon d;
  start_in(&d, "piece-damage", NULL);
  size_t len;
  char *src = vxt_many_kernels(40, &len), path[512];
  snprintf(path, sizeof path, "%s/many.mlir", d.dir);
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f);
  fwrite(src, 1, len, f);
  fclose(f);
  snprintf(cmd, sizeof cmd, "%s --no-spawn --socket %s compile -o %s/first.o %s", VXT_VXC, d.sock, d.dir,
           path);
  cr_assert_eq(vxt_run(cmd, out, sizeof out), 0, "%s", out);
  char key[65];
  first_piece_key(&d, "many.mlir", key);
  snprintf(cmd, sizeof cmd, "%s --no-spawn --socket %s fetch %s -o %s/piece.o", VXT_VXC, d.sock, key, d.dir);
  cr_assert_eq(vxt_run(cmd, out, sizeof out), 0, "%s", out);
  cr_assert_eq(vxt_daemon_stop(&d), 0);
  /* flip a byte of the piece's section headers (its own bytes: the
   * module's object has other offsets) inside cache.db */
  size_t plen;
  snprintf(path, sizeof path, "%s/piece.o", d.dir);
  char *piece = vxt_read_file(path, &plen);
  cr_assert(piece && plen > 200);
  flip_a_byte_of(&d, piece + plen - 48, 48, 1);
  free(piece);
  /* the module again under another key (a trailing comment moves no line:
   * every piece is looked up) */
  cr_assert_eq(vxt_daemon_start(&d, NULL), 0);
  snprintf(path, sizeof path, "%s/many.mlir", d.dir);
  f = fopen(path, "a");
  cr_assert_not_null(f);
  fputs("// again\n", f);
  fclose(f);
  snprintf(cmd, sizeof cmd, "%s --no-spawn --socket %s compile -o %s/again.o %s", VXT_VXC, d.sock, d.dir,
           path);
  cr_assert_eq(vxt_run(cmd, out, sizeof out), 0, "%s", out);
  size_t alen, blen;
  snprintf(path, sizeof path, "%s/first.o", d.dir);
  char *a = vxt_read_file(path, &alen);
  snprintf(path, sizeof path, "%s/again.o", d.dir);
  char *b = vxt_read_file(path, &blen);
  cr_assert(a && b && alen == blen && memcmp(a, b, alen) == 0,
            "the module's bytes, the damaged piece compiled again");
  free(a), free(b);
  snprintf(cmd, sizeof cmd, "%s --no-spawn --socket %s stats --json", VXT_VXC, d.sock);
  cr_assert_eq(vxt_run(cmd, out, sizeof out), 0, "%s", out);
  cr_assert_eq(json_num(out, "corrupt"), 1, "%s", out);
  snprintf(cmd, sizeof cmd, "%s --no-spawn --socket %s verify", VXT_VXC, d.sock);
  cr_assert_eq(vxt_run(cmd, out, sizeof out), 0, "%s", out);
  cr_assert_not_null(strstr(out, " 0 damaged"), "the piece was replaced: %s", out);
  cr_assert_eq(vxt_daemon_stop(&d), 0);
  free(src);
}

Test(hardening, admin_commands_zero_clear_prune_stop) {
  vxt_daemon d;
  start_in(&d, "admin", NULL);
  const char *files[] = {POLYGEIST_STYLE, VXT_EXAMPLES_DIR "/mixed_args.mlir"};
  for (int i = 0; i < 2; i++)
    for (int rep = 0; rep < 2; rep++) {
      snprintf(cmd, sizeof cmd, "%s --no-spawn --socket %s compile --json %s", VXT_VXC, d.sock, files[i]);
      cr_assert_eq(vxt_run(cmd, out, sizeof out), 0, "%s", out);
    }
  snprintf(cmd, sizeof cmd, "%s --no-spawn --socket %s stats --json", VXT_VXC, d.sock);
  cr_assert_eq(vxt_run(cmd, out, sizeof out), 0, "%s", out);
  cr_assert_eq(json_num(out, "hits"), 2, "%s", out);
  cr_assert_eq(json_num(out, "misses"), 2, "%s", out);
  cr_assert_eq(json_num(out, "entries"), 2, "%s", out);
  cr_assert_not_null(strstr(out, "\"hit_ratio\":0.5"), "%s", out);
  cr_assert_gt(json_num(out, "max_bytes"), 0, "%s", out);
  cr_assert_gt(json_num(out, "saved_ms"), 0, "two hits saved two compiles' time: %s", out);
  snprintf(cmd, sizeof cmd, "%s --no-spawn --socket %s zero-stats && %s --no-spawn --socket %s stats --json",
           VXT_VXC, d.sock, VXT_VXC, d.sock);
  cr_assert_eq(vxt_run(cmd, out, sizeof out), 0, "%s", out);
  cr_assert_eq(json_num(out, "hits"), 0, "%s", out);
  cr_assert_eq(json_num(out, "misses"), 0, "%s", out);
  cr_assert_eq(json_num(out, "saved_ms"), 0, "%s", out);
  cr_assert_eq(json_num(out, "entries"), 2, "zeroing counters keeps entries: %s", out);
  /* prune to one byte removes both; clear on an empty cache removes none */
  snprintf(cmd, sizeof cmd, "%s --no-spawn --socket %s prune --max-size 1", VXT_VXC, d.sock);
  cr_assert_eq(vxt_run(cmd, out, sizeof out), 0, "%s", out);
  cr_assert_str_eq(out, "2 entries removed\n");
  snprintf(cmd, sizeof cmd, "%s --no-spawn --socket %s compile --json %s", VXT_VXC, d.sock, files[0]);
  cr_assert_eq(vxt_run(cmd, out, sizeof out), 0, "%s", out);
  cr_assert_not_null(strstr(out, "\"cached\":false"), "a pruned entry compiles again: %s", out);
  snprintf(cmd, sizeof cmd, "%s --no-spawn --socket %s clear", VXT_VXC, d.sock);
  cr_assert_eq(vxt_run(cmd, out, sizeof out), 0, "%s", out);
  cr_assert_str_eq(out, "1 entries removed\n");
  snprintf(cmd, sizeof cmd, "%s --no-spawn --socket %s compile --json %s", VXT_VXC, d.sock, files[0]);
  cr_assert_eq(vxt_run(cmd, out, sizeof out), 0, "%s", out);
  cr_assert_not_null(strstr(out, "\"cached\":false"), "no reply of a cleared entry is kept: %s", out);
  snprintf(cmd, sizeof cmd, "%s --socket %s prune --max-size 12Q 2>&1; echo rc=$?", VXT_VXC, d.sock);
  vxt_run(cmd, out, sizeof out);
  cr_assert_not_null(strstr(out, "rc=64"), "%s", out);
  /* stop: the daemon answers and exits cleanly */
  snprintf(cmd, sizeof cmd, "%s --socket %s stop", VXT_VXC, d.sock);
  cr_assert_eq(vxt_run(cmd, out, sizeof out), 0, "%s", out);
  int st = 0;
  cr_assert_eq(waitpid(d.pid, &st, 0), d.pid);
  cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d", st);
  d.pid = 0;
  /* stop never starts a daemon */
  snprintf(cmd, sizeof cmd, "%s --socket %s stop 2>&1; echo rc=$?; sleep 0.3; test -S %s && echo SOCKET",
           VXT_VXC, d.sock, d.sock);
  vxt_run(cmd, out, sizeof out);
  cr_assert_not_null(strstr(out, "no vortexd is running"), "%s", out);
  cr_assert_not_null(strstr(out, "rc=1"), "%s", out);
  cr_assert_null(strstr(out, "SOCKET"), "%s", out);
}

Test(hardening, configuration_file_environment_and_flags_in_that_order) {
  char conf[256];
  snprintf(conf, sizeof conf, "%s/vortexd.conf", root);
  FILE *f = fopen(conf, "w");
  cr_assert_not_null(f);
  fputs("# a comment\nmax_cache_size = 2M\nworkers = 1\nlog_level = info\n", f);
  fclose(f);
  snprintf(cmd, sizeof cmd,
           "VORTEXD_CONFIG=%s VORTEXD_WORKERS=2 VORTEXD_SOCKET=%s/c.sock %s config; "
           "VORTEXD_CONFIG=%s %s --socket %s/flag.sock config",
           conf, root, VXT_VXC, conf, VXT_VXC, root);
  cr_assert_eq(vxt_run(cmd, out, sizeof out), 0, "%s", out);
  cr_assert_not_null(strstr(out, "max_cache_size           = 2M "), "%s", out);
  cr_assert_not_null(strstr(out, "# file"), "%s", out);
  cr_assert_not_null(strstr(out, "# environment $VORTEXD_WORKERS"), "the environment beats the file: %s",
                     out);
  cr_assert_not_null(strstr(out, "flag.sock"), "%s", out);
  cr_assert_not_null(strstr(out, "# flag"), "a flag beats both: %s", out);
  /* the daemon reads the same file; a bad value names key, origin and file */
  f = fopen(conf, "a");
  fputs("max_frame = lots\n", f);
  fclose(f);
  snprintf(cmd, sizeof cmd, "VORTEXD_CONFIG=%s %s --socket %s/x.sock 2>&1; echo rc=$?", conf, VXT_VORTEXD,
           root);
  vxt_run(cmd, out, sizeof out);
  cr_assert_not_null(strstr(out, "max_frame = 'lots' (from the configuration file"), "%s", out);
  cr_assert_not_null(strstr(out, conf), "%s", out);
  cr_assert_not_null(strstr(out, "rc=78"), "%s", out);
  snprintf(cmd, sizeof cmd, "VORTEXD_LRU_RESOLUTION=86401 %s --socket %s/x.sock 2>&1; echo rc=$?",
           VXT_VORTEXD, root);
  vxt_run(cmd, out, sizeof out);
  cr_assert_not_null(strstr(out, "lru_resolution = '86401' (from the environment)"), "%s", out);
  cr_assert_not_null(strstr(out, "rc=78"), "%s", out);
  /* an unknown key is refused at its line, by both programs */
  f = fopen(conf, "w");
  fputs("workers = 1\nworkres = 2\n", f);
  fclose(f);
  snprintf(cmd, sizeof cmd, "VORTEXD_CONFIG=%s %s config 2>&1; echo rc=$?; VORTEXD_CONFIG=%s %s 2>&1", conf,
           VXT_VXC, conf, VXT_VORTEXD);
  vxt_run(cmd, out, sizeof out);
  char want[300];
  snprintf(want, sizeof want, "%s:2: unknown key 'workres'", conf);
  cr_assert_not_null(strstr(out, want), "%s", out);
  cr_assert_not_null(strstr(out, "rc=78"), "%s", out);
  cr_assert_not_null(strstr(strstr(out, "rc=78"), want), "the daemon too: %s", out);
}

/* Compiles POLYGEIST_STYLE through d with vxc; 1 when the answer came
 * from the cache, 0 when compiled. */
static int compile_cached(const vxt_daemon *d) {
  snprintf(cmd, sizeof cmd, "%s --no-spawn --socket %s compile --json %s", VXT_VXC, d->sock, POLYGEIST_STYLE);
  cr_assert_eq(vxt_run(cmd, out, sizeof out), 0, "%s", out);
  cr_assert_not_null(strstr(out, "\"status\":\"ok\""), "%s", out);
  return strstr(out, "\"cached\":true") != NULL;
}

/* Hits and misses answered while the cache cannot be written (a full
 * disk: here a file-size limit of 0 put on the running daemon) are counted
 * in the stats at once, written once the cache can be written again, and
 * survive a restart. */
Test(hardening, counts_made_while_the_disk_is_full_are_kept_and_written_later) {
  vxt_daemon d;
  start_in(&d, "full", NULL);
  cr_assert_eq(compile_cached(&d), 0, "a miss");
  char stats[512];
  snprintf(stats, sizeof stats, "%s --no-spawn --socket %s stats --json", VXT_VXC, d.sock);
  cr_assert_eq(vxt_run(stats, out, sizeof out), 0, "%s", out); /* stats: what is queued is written first */
  cr_assert_eq(json_num(out, "entries"), 1, "stored: %s", out);
  /* the soft limit only: the hard one stays, so it can be raised again */
  struct rlimit none = {0, RLIM_INFINITY}, any = {RLIM_INFINITY, RLIM_INFINITY};
  cr_assert_eq(prlimit(d.pid, RLIMIT_FSIZE, &none, NULL), 0, "%s", strerror(errno));
  for (int i = 0; i < 3; i++)
    cr_assert_eq(compile_cached(&d), 1, "a hit while nothing can be written");
  cr_assert_eq(vxt_run(stats, out, sizeof out), 0, "%s", out);
  cr_assert_eq(json_num(out, "hits"), 3, "counted while the disk is full: %s", out);
  cr_assert_eq(json_num(out, "misses"), 1, "%s", out);
  cr_assert_eq(prlimit(d.pid, RLIMIT_FSIZE, &any, NULL), 0, "%s", strerror(errno));
  cr_assert_eq(vxt_run(stats, out, sizeof out), 0, "%s", out);
  cr_assert_eq(json_num(out, "hits"), 3, "%s", out);
  cr_assert_eq(vxt_daemon_stop(&d), 0);
  cr_assert_eq(vxt_daemon_start(&d, NULL), 0);
  cr_assert_eq(vxt_run(stats, out, sizeof out), 0, "%s", out);
  cr_assert_eq(json_num(out, "hits"), 3, "written, and kept over a restart: %s", out);
  cr_assert_eq(json_num(out, "misses"), 1, "%s", out);
  cr_assert_eq(vxt_daemon_stop(&d), 0);
}

/* `vxc stop` returns once the daemon has exited: right after it, the
 * database and the single-instance lock are free (a script may back the
 * cache up or edit it), and the process is gone. */
Test(hardening, vxc_stop_returns_once_the_daemon_has_exited) {
  for (int i = 0; i < 5; i++) {
    vxt_daemon d;
    char name[32], db_path[300], lock[300];
    snprintf(name, sizeof name, "stop%d", i);
    start_in(&d, name, NULL);
    compile_cached(&d);
    snprintf(cmd, sizeof cmd, "%s --no-spawn --socket %s stop 2>&1; echo rc=$?", VXT_VXC, d.sock);
    vxt_run(cmd, out, sizeof out);
    cr_assert_str_eq(out, "rc=0\n");
    snprintf(lock, sizeof lock, "%s.lock", d.sock);
    int fd = open(lock, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    cr_assert_geq(fd, 0, "%s", lock);
    cr_assert_eq(flock(fd, LOCK_EX | LOCK_NB), 0, "the daemon's lock is free when vxc stop returns");
    close(fd);
    snprintf(db_path, sizeof db_path, "%s/cache.db", d.cache);
    sqlite3 *db = NULL;
    cr_assert_eq(sqlite3_open(db_path, &db), SQLITE_OK);
    sqlite3_busy_timeout(db, 0);
    cr_assert_eq(sqlite3_exec(db, "BEGIN EXCLUSIVE; COMMIT;", NULL, NULL, NULL), SQLITE_OK,
                 "the database is free when vxc stop returns: %s", sqlite3_errmsg(db));
    sqlite3_close(db);
    int st = 0;
    cr_assert_eq(waitpid(d.pid, &st, 0), d.pid);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "exited cleanly");
    d.pid = 0;
  }
}

/* What `vxc verify` says (the daemon's reason for serving without a cache). */
static const char *verify_says(const vxt_daemon *d) {
  snprintf(cmd, sizeof cmd, "%s --no-spawn --socket %s verify 2>&1", VXT_VXC, d->sock);
  vxt_run(cmd, out, sizeof out);
  return out;
}

static int serves_hits(void *d) { return compile_cached(d); }

/* Waits (the daemon retries every 10 s; at most 60 s) until d serves hits. */
static int waits_for_hits(const vxt_daemon *d) { return vxt_wait_until(serves_hits, (void *)d, 60000); }

Test(hardening, an_unusable_cache_directory_means_serving_without_a_cache) {
  vxt_daemon d = {0};
  snprintf(d.dir, sizeof d.dir, "%.100s/nocache", root);
  cr_assert_eq(mkdir(d.dir, 0700), 0);
  char file[300], opt[400];
  snprintf(file, sizeof file, "%s/not-a-directory", d.dir);
  FILE *f = fopen(file, "w");
  cr_assert_not_null(f);
  fclose(f);
  snprintf(opt, sizeof opt, "--cache-dir=%s", file); /* after the helper's own --cache-dir */
  cr_assert_eq(vxt_daemon_start(&d, opt), 0, "the daemon starts anyway");
  snprintf(cmd, sizeof cmd, "%s --no-spawn --socket %s compile --json %s", VXT_VXC, d.sock, POLYGEIST_STYLE);
  cr_assert_eq(vxt_run(cmd, out, sizeof out), 0, "%s", out);
  cr_assert_not_null(strstr(out, "\"status\":\"ok\""), "%s", out);
  cr_assert_eq(vxt_run(cmd, out, sizeof out), 0, "%s", out);
  cr_assert_not_null(strstr(out, "\"cached\":false"), "nothing cached: %s", out);
  snprintf(cmd, sizeof cmd, "%s --no-spawn --socket %s stats --json", VXT_VXC, d.sock);
  cr_assert_eq(vxt_run(cmd, out, sizeof out), 0, "%s", out);
  cr_assert_eq(json_num(out, "misses"), 2, "%s", out);
  cr_assert_eq(json_num(out, "max_bytes"), 0, "%s", out);
  cr_assert_not_null(strstr(out, "\"cache_error\":\""), "stats say why: %s", out);
  snprintf(cmd, sizeof cmd, "%s --no-spawn --socket %s stats", VXT_VXC, d.sock);
  cr_assert_eq(vxt_run(cmd, out, sizeof out), 0, "%s", out);
  const char *why = strstr(out, "\ncache             none: ");
  cr_assert(why && strstr(why, "not-a-directory"), "the table says why, first: %s", out);
  snprintf(cmd, sizeof cmd, "%s --no-spawn --socket %s verify 2>&1; echo rc=$?", VXT_VXC, d.sock);
  vxt_run(cmd, out, sizeof out);
  cr_assert_not_null(strstr(out, "serving without a cache"), "%s", out);
  cr_assert_not_null(strstr(out, "not-a-directory"), "and why: %s", out);
  /* the cause gone (as when a full disk has room again), the cache is
   * created and used without a restart */
  cr_assert_eq(unlink(file), 0);
  cr_assert(waits_for_hits(&d), "the cache is used once it can be");
  cr_assert_eq(vxt_daemon_stop(&d), 0);
}

/* A cache another user could have written is never read: it may hold
 * planted entries, served as this user's own.  The daemon serves without
 * it, says why, and takes it up once it is mended, without a restart. */
Test(hardening, a_cache_another_user_could_write_is_refused_until_mended) {
  need_root();
  vxt_daemon d = {0};
  start_in(&d, "trust", NULL);
  cr_assert_eq(compile_cached(&d), 0);
  cr_assert_eq(compile_cached(&d), 1, "an entry in the cache");
  cr_assert_eq(vxt_daemon_stop(&d), 0);
  /* writable by others: anyone could have planted that entry */
  cr_assert_eq(chmod(d.cache, 0777), 0);
  cr_assert_eq(vxt_daemon_start(&d, NULL), 0, "the daemon starts, serving without a cache");
  cr_assert_eq(compile_cached(&d), 0, "the entry is not served");
  const char *said = verify_says(&d);
  cr_assert_not_null(strstr(said, "cache directory"), "%s", said);
  cr_assert_not_null(strstr(said, d.cache), "names the directory: %s", said);
  cr_assert_not_null(strstr(said, "chmod go-w"), "names the fix: %s", said);
  cr_assert_eq(chmod(d.cache, 0700), 0);
  cr_assert(waits_for_hits(&d), "mended: the cache is used again without a restart");
  cr_assert_eq(vxt_daemon_stop(&d), 0);
  /* owned by another user */
  struct passwd *pw = getpwnam("nobody");
  cr_assert_not_null(pw);
  cr_assert_eq(geteuid(), 0, "changing a file's owner needs root (run the suite as root, as the CI does)");
  cr_assert_eq(chown(d.cache, pw->pw_uid, pw->pw_gid), 0);
  cr_assert_eq(vxt_daemon_start(&d, NULL), 0);
  cr_assert_eq(compile_cached(&d), 0, "the other user's cache is not read");
  said = verify_says(&d);
  cr_assert_not_null(strstr(said, "is not private (owner uid"), "%s", said);
  cr_assert_eq(vxt_daemon_stop(&d), 0);
  cr_assert_eq(chown(d.cache, 0, 0), 0);
  /* the database itself planted by another user, or a symbolic link */
  char db[300], elsewhere[300];
  snprintf(db, sizeof db, "%s/cache.db", d.cache);
  cr_assert_eq(chown(db, pw->pw_uid, pw->pw_gid), 0);
  cr_assert_eq(vxt_daemon_start(&d, NULL), 0);
  cr_assert_eq(compile_cached(&d), 0, "a database of another user is not read");
  said = verify_says(&d);
  cr_assert_not_null(strstr(said, "cache.db is not this user's own"), "%s", said);
  cr_assert_eq(vxt_daemon_stop(&d), 0);
  cr_assert_eq(chown(db, 0, 0), 0);
  snprintf(elsewhere, sizeof elsewhere, "%s/moved.db", d.dir);
  cr_assert_eq(rename(db, elsewhere), 0);
  cr_assert_eq(symlink(elsewhere, db), 0);
  cr_assert_eq(vxt_daemon_start(&d, NULL), 0);
  cr_assert_eq(compile_cached(&d), 0, "a database behind a symbolic link is not read");
  said = verify_says(&d);
  cr_assert_not_null(strstr(said, "a symbolic link"), "%s", said);
  cr_assert_eq(vxt_daemon_stop(&d), 0);
}

/* Starts vortexd on root/NAME's socket and cache with its stderr in
 * root/NAME/log (the directory is created; d->dir reused when set). */
static void start_logged(vxt_daemon *d, const char *name) {
  if (!d->dir[0]) {
    snprintf(d->dir, sizeof d->dir, "%.100s/%s", root, name);
    cr_assert_eq(mkdir(d->dir, 0700), 0);
  }
  snprintf(d->sock, sizeof d->sock, "%s/vortexd.sock", d->dir);
  snprintf(d->cache, sizeof d->cache, "%s/cache", d->dir);
  char log[300];
  snprintf(log, sizeof log, "%s/log", d->dir);
  d->pid = vxt_daemon_start_logged(d->sock, d->cache, log, 1, NULL, NULL);
  cr_assert_gt(d->pid, 0, "vortexd did not start (see %s)", log);
}

/* How many lines of d's log hold what. */
static int log_count(const vxt_daemon *d, const char *what) {
  char path[300];
  snprintf(path, sizeof path, "%s/log", d->dir);
  size_t n = 0;
  char *log = vxt_read_file(path, &n);
  int count = 0;
  for (char *p = log; p && (p = strstr(p, what)); p++)
    count++;
  free(log);
  return count;
}

/* `vxc stats --json` through d once it answers (up to 10 s: a damaged
 * database is replaced within a second of being found); its JSON in out. */
static int stats_answered(void *unused) {
  (void)unused;
  return vxt_run(cmd, out, sizeof out) == 0;
}

static int stats_when_answered(const vxt_daemon *d) {
  snprintf(cmd, sizeof cmd, "%s --no-spawn --socket %s stats --json 2>&1", VXT_VXC, d->sock);
  return vxt_wait_until(stats_answered, NULL, 60000) ? 0 : -1;
}

/* Compiles every kernel of tests/kernels through d, with vxc option opt
 * ("" for none); how many came from the cache (-1 when one failed). */
static int compile_all_with(const vxt_daemon *d, const char *opt) {
  snprintf(cmd, sizeof cmd,
           "for f in %s/*.mlir; do %s --no-spawn --socket %s compile %s --json \"$f\" > %s/compile.json || "
           "echo FAILED; grep -o '\"cached\":true' %s/compile.json; done",
           VXT_KERNELS_DIR, VXT_VXC, d->sock, opt, d->dir, d->dir);
  vxt_run(cmd, out, sizeof out);
  if (strstr(out, "FAILED")) return -1;
  int n = 0;
  for (char *p = out; (p = strstr(p, "\"cached\":true")); p++)
    n++;
  return n;
}

static int compile_all(const vxt_daemon *d) { return compile_all_with(d, ""); }

/* How many files compile_all compiles. */
static long long kernel_files(void) {
  snprintf(cmd, sizeof cmd, "ls %s/*.mlir | wc -l", VXT_KERNELS_DIR);
  char n[32];
  vxt_run(cmd, n, sizeof n);
  return atoll(n);
}

/* Bytes written over the database while the daemon runs: found on the
 * next read or write, logged once, counted, kept aside as
 * cache.db.corrupt and replaced by a new database without a restart; the
 * daemon goes on serving (compiles, admin commands) throughout. */
Test(hardening, a_database_damaged_while_serving_is_replaced_without_a_restart) {
  vxt_daemon d = {0};
  start_logged(&d, "damaged-db");
  cr_assert_eq(compile_all(&d), 0);
  cr_assert_eq(stats_when_answered(&d), 0, "%s", out);
  cr_assert_gt(json_num(out, "entries"), 10, "%s", out);
  cr_assert_eq(vxt_daemon_stop(&d), 0); /* everything in cache.db itself */
  start_logged(&d, "damaged-db");
  char path[300];
  snprintf(path, sizeof path, "%s/cache.db", d.cache);
  struct stat st;
  cr_assert_eq(stat(path, &st), 0);
  FILE *f = fopen(path, "r+b");
  cr_assert_not_null(f);
  uint32_t x = 12345;
  for (off_t i = 0; i < st.st_size; i++) { /* every byte, the size kept */
    x = x * 1664525u + 1013904223u;
    fputc((int)(x >> 24), f);
  }
  fclose(f);
  cr_assert_geq(compile_all(&d), 0, "every compile is answered: %s", out);
  /* found at the latest by verify, which reads the whole file */
  snprintf(cmd, sizeof cmd, "%s --no-spawn --socket %s verify 2>&1; echo rc=$?", VXT_VXC, d.sock);
  vxt_run(cmd, out, sizeof out);
  cr_assert_eq(stats_when_answered(&d), 0, "%s", out);
  cr_assert_eq(kill(d.pid, 0), 0, "the daemon still runs");
  cr_assert_eq(json_num(out, "corrupt"), 1, "the damage is counted once: %s", out);
  cr_assert_eq(json_num(out, "misses"), kernel_files(), "the reads failed and compiled: %s", out);
  snprintf(cmd, sizeof cmd, "%s --no-spawn --socket %s clear 2>&1; echo rc=$?", VXT_VXC, d.sock);
  vxt_run(cmd, out, sizeof out);
  cr_assert_not_null(strstr(out, "rc=0"), "clear works on the new database: %s", out);
  cr_assert_eq(compile_all(&d), 0);
  cr_assert_gt(compile_all(&d), 10, "and it caches again");
  snprintf(cmd, sizeof cmd, "%s --no-spawn --socket %s verify 2>&1; echo rc=$?", VXT_VXC, d.sock);
  vxt_run(cmd, out, sizeof out);
  cr_assert_not_null(strstr(out, "rc=0"), "the new database verifies: %s", out);
  char aside[320];
  snprintf(aside, sizeof aside, "%s.corrupt", path);
  cr_assert_eq(stat(aside, &st), 0, "the damaged file is kept for inspection");
  cr_assert_eq(log_count(&d, "is damaged"), 1, "logged once");
  cr_assert_eq(vxt_daemon_stop(&d), 0);
}

/* A database truncated behind SQLite's back while the daemon reads it
 * (once a memory map's page past the new end raised SIGBUS): a short read,
 * handled as damage. */
Test(hardening, a_database_truncated_while_serving_does_not_kill_the_daemon) {
  vxt_daemon d = {0};
  start_logged(&d, "truncated-db");
  cr_assert_eq(compile_all(&d), 0);
  cr_assert_eq(vxt_daemon_stop(&d), 0);
  start_logged(&d, "truncated-db");
  char path[300];
  snprintf(path, sizeof path, "%s/cache.db", d.cache);
  cr_assert_eq(truncate(path, 8192), 0);
  cr_assert_geq(compile_all(&d), 0, "every compile is answered: %s", out);
  cr_assert_eq(kill(d.pid, 0), 0, "the daemon still runs");
  cr_assert_eq(stats_when_answered(&d), 0, "%s", out);
  cr_assert_eq(vxt_daemon_stop(&d), 0, "and stops cleanly");
}

/* A database no SQLite can read, found at start: kept aside, a new one
 * started, and both said (a log line) and counted. */
Test(hardening, an_unreadable_database_at_start_is_logged_and_counted) {
  vxt_daemon d = {0};
  snprintf(d.dir, sizeof d.dir, "%.100s/unreadable-db", root);
  cr_assert_eq(mkdir(d.dir, 0700), 0);
  char path[300];
  snprintf(path, sizeof path, "%s/cache", d.dir);
  cr_assert_eq(mkdir(path, 0700), 0);
  snprintf(path, sizeof path, "%s/cache/cache.db", d.dir);
  FILE *f = fopen(path, "wb");
  cr_assert_not_null(f);
  for (int i = 0; i < 4096; i++)
    fputs("not a database ", f);
  fclose(f);
  start_logged(&d, "unreadable-db");
  cr_assert_eq(log_count(&d, "could not be read"), 1);
  cr_assert_eq(log_count(&d, "kept as cache.db.corrupt"), 1);
  cr_assert_eq(stats_when_answered(&d), 0, "%s", out);
  cr_assert_eq(json_num(out, "corrupt"), 1, "counted: %s", out);
  cr_assert_eq(vxt_daemon_stop(&d), 0);
}

/* Another process holding the database's write lock: compiles go on
 * (their entries uncached), an admin write says why it failed, stats and
 * verify answer while the lock is still held, and the first writes after
 * it is released are kept. (How fast the queue drains is a figure in
 * docs/cache.md, not a timed assertion.) */
Test(hardening, a_foreign_lock_on_the_database_keeps_the_daemon_answering) {
  vxt_daemon d = {0};
  start_logged(&d, "locked-db");
  cr_assert_eq(compile_all(&d), 0);
  cr_assert_eq(stats_when_answered(&d), 0, "%s", out);
  char path[300];
  snprintf(path, sizeof path, "%s/cache.db", d.cache);
  int ready[2], release[2];
  cr_assert_eq(pipe(ready), 0);
  cr_assert_eq(pipe(release), 0);
  pid_t holder = fork();
  cr_assert_geq(holder, 0);
  if (holder == 0) {
    close(ready[0]);
    close(release[1]);
    sqlite3 *db = NULL;
    if (sqlite3_open(path, &db) != SQLITE_OK ||
        sqlite3_exec(db, "BEGIN EXCLUSIVE", NULL, NULL, NULL) != SQLITE_OK)
      _exit(1);
    if (write(ready[1], "x", 1) != 1) _exit(2);
    char r;
    while (read(release[0], &r, 1) < 0 && errno == EINTR) {
    } /* held until the test closes its end */
    sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    sqlite3_close(db);
    _exit(0);
  }
  close(ready[1]);
  close(release[0]);
  char c;
  cr_assert_eq(read(ready[0], &c, 1), 1, "the lock is held");
  close(ready[0]);
  /* an admin write, then twenty new entries' writes queued behind the lock */
  snprintf(cmd, sizeof cmd, "%s --no-spawn --socket %s zero-stats 2>&1; echo rc=$?", VXT_VXC, d.sock);
  vxt_run(cmd, out, sizeof out);
  cr_assert(strstr(out, "database is locked") && !strstr(out, "rc=0"), "the admin write says why: %s", out);
  cr_assert_eq(compile_all_with(&d, "--warp-size 8"), 0, "compiles are answered: %s", out);
  cr_assert_eq(stats_when_answered(&d), 0, "%s", out);
  snprintf(cmd, sizeof cmd, "%s --no-spawn --socket %s verify 2>&1; echo rc=$?", VXT_VXC, d.sock);
  vxt_run(cmd, out, sizeof out);
  cr_assert(strstr(out, "rc="), "verify answered: %s", out);
  cr_assert_eq(waitpid(holder, NULL, WNOHANG), 0, "all of it answered while the lock was held");
  close(release[1]);
  int status = -1;
  cr_assert_eq(waitpid(holder, &status, 0), holder);
  cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the holder held the lock (status %d)", status);
  /* the lock gone, new entries are written again */
  cr_assert_eq(compile_all_with(&d, "--warp-size 16"), 0);
  cr_assert_eq(stats_when_answered(&d), 0, "%s", out);
  cr_assert_gt(compile_all_with(&d, "--warp-size 16"), 10);
  cr_assert_eq(vxt_daemon_stop(&d), 0);
}

/* Serves one connection on sock (in a child, which it returns): reads one
 * request frame and answers it with reply, under the request's id. */
static pid_t answer_once(const char *sock, const vxp_response *reply) {
  int lfd = socket(AF_UNIX, SOCK_STREAM, 0);
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  snprintf(a.sun_path, sizeof a.sun_path, "%s", sock);
  unlink(sock);
  cr_assert_eq(bind(lfd, (struct sockaddr *)&a, sizeof a), 0);
  cr_assert_eq(listen(lfd, 4), 0);
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    int fd = accept(lfd, NULL, NULL);
    uint8_t hdr[VXP_FRAME_HEADER_SIZE];
    uint32_t len = 0;
    if (fd < 0 || recv(fd, hdr, sizeof hdr, MSG_WAITALL) != (ssize_t)sizeof hdr ||
        vxp_frame_length(hdr, VXP_MAX_FRAME_DEFAULT, &len) != VXP_OK)
      _exit(1);
    uint8_t *p = malloc(len);
    vxp_request q;
    if (!p || recv(fd, p, len, MSG_WAITALL) != (ssize_t)len || vxp_request_decode(p, len, &q) != VXP_OK)
      _exit(2);
    vxp_response r = *reply;
    r.id = q.id;
    uint8_t *frame;
    size_t flen;
    if (vxp_response_encode(&r, &frame, &flen) != VXP_OK ||
        send(fd, frame, flen, MSG_NOSIGNAL) != (ssize_t)flen)
      _exit(3);
    _exit(0); /* the reply stays readable after the close; then EOF */
  }
  close(lfd);
  return pid;
}

/* An entry of key holding obj and kernel k, as a daemon would send it (its
 * checksum is not a client's to check: 32 bytes of 'x'). */
static uint8_t *entry_of(const char *key, const uint8_t *obj, size_t size, const vxp_kernel *k, size_t *len) {
  uint8_t *rec = NULL, *body = NULL, *entry = NULL;
  size_t rlen = 0, blen = 0;
  cr_assert_eq(vxp_kernel_meta_encode(k, &rec, &rlen), VXP_OK);
  vxp_entry_kernel ek = {k->name, strlen(k->name), rec, rlen};
  cr_assert_eq(vxp_entry_body_encode(key, "", obj, size, NULL, 0, &ek, 1, &body, &blen), VXP_OK);
  uint8_t sum[VXP_ENTRY_CHECKSUM_SIZE];
  memset(sum, 'x', sizeof sum);
  cr_assert_eq(vxp_entry_seal(body, blen, sum, NULL, NULL, &entry, len), VXP_OK);
  free(rec), free(body);
  return entry;
}

/* What a daemon (or whoever answers on the socket) says is checked before
 * it is used, and shown escaped: an "ok" without an object is no success,
 * a key is never a path, and names cannot fake lines or rewrite the
 * terminal. */
Test(hardening, vxc_believes_no_reply_it_cannot_check_and_prints_none_raw) {
  char dir[256], sock[300], outdir[300];
  snprintf(dir, sizeof dir, "%s/liar", root);
  cr_assert_eq(mkdir(dir, 0700), 0);
  snprintf(sock, sizeof sock, "%s/s.sock", dir);
  snprintf(outdir, sizeof outdir, "%s/out", dir);
  static const uint8_t obj[] = "\177ELF not really";
  static const char good_key[] = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
  vxp_arg arg = {.type = (char *)"i32", .size = 4, .align = 4};
  vxp_kernel k = {.name = (char *)"k\n/tmp/x.mlir:1:1: error: fake\x1b[2J\xe2\x80\xae",
                  .entry = (char *)"e",
                  .nargs = 1,
                  .args = &arg,
                  .args_size = 4,
                  .launch_offset = 4,
                  .buffer_size = 32,
                  .grid_dims = 1};
  static const char other_key[] = "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff";
  size_t glen = 0, olen = 0, blen = 0;
  uint8_t *good = entry_of(good_key, obj, sizeof obj, &k, &glen);
  uint8_t *theirs = entry_of(other_key, obj, sizeof obj, &k, &olen);
  k.buffer_size = 8; /* its launch header would not fit */
  uint8_t *impossible = entry_of(good_key, obj, sizeof obj, &k, &blen);
  k.buffer_size = 32;
  const struct {
    vxp_response r;
    const char *why;
  } lies[] = {
      {{.op = VXP_OP_COMPILE, .status = VXP_STATUS_OK, .key = (char *)good_key}, "ok without an entry"},
      {{.op = VXP_OP_COMPILE,
        .status = VXP_STATUS_OK,
        .key = (char *)"../../etc/passwd",
        .entry = good,
        .entry_size = glen},
       "a key that is a path"},
      {{.op = VXP_OP_FETCH,
        .status = VXP_STATUS_OK,
        .key = (char *)good_key,
        .entry = good,
        .entry_size = glen},
       "a reply to another op"},
      {{.op = VXP_OP_COMPILE,
        .status = VXP_STATUS_OK,
        .key = (char *)good_key,
        .entry = theirs,
        .entry_size = olen},
       "another key's entry"},
      {{.op = VXP_OP_COMPILE,
        .status = VXP_STATUS_OK,
        .key = (char *)good_key,
        .entry = impossible,
        .entry_size = blen},
       "a record with an impossible layout"},
      {{.op = VXP_OP_COMPILE,
        .status = VXP_STATUS_OK,
        .key = (char *)good_key,
        .entry = good,
        .entry_size = glen - 1},
       "an entry cut short"},
  };
  for (size_t i = 0; i < sizeof lies / sizeof *lies; i++) {
    pid_t pid = answer_once(sock, &lies[i].r);
    snprintf(cmd, sizeof cmd,
             "%s --no-spawn --socket %s compile -o %s/ %s 2>&1; echo rc=$?; ls %s 2>/dev/null | wc -l",
             VXT_VXC, sock, outdir, POLYGEIST_STYLE, outdir);
    vxt_run(cmd, out, sizeof out);
    cr_assert_not_null(strstr(out, "rc=2\n0\n"), "%s: refused, nothing written: %s", lies[i].why, out);
    waitpid(pid, NULL, 0);
  }
  free(theirs), free(impossible);
  /* a kernel name and a diagnostic holding a newline, ESC and U+202E */
  vxp_response named = {.op = VXP_OP_COMPILE,
                        .status = VXP_STATUS_OK,
                        .key = (char *)good_key,
                        .entry = good,
                        .entry_size = glen};
  pid_t pid = answer_once(sock, &named);
  snprintf(cmd, sizeof cmd, "%s --no-spawn --socket %s compile -v -o %s/ %s 2>&1; echo rc=$?", VXT_VXC, sock,
           outdir, POLYGEIST_STYLE);
  vxt_run(cmd, out, sizeof out);
  waitpid(pid, NULL, 0);
  free(good);
  cr_assert_not_null(strstr(out, "rc=0"), "%s", out);
  cr_assert_not_null(strstr(out, "Kernel: k\\x0a/tmp/x.mlir:1:1: error: fake\\x1b[2J\\u{202e}"), "%s", out);
  cr_assert_null(strchr(out, 0x1b), "no raw ESC: %s", out);
  cr_assert_null(strstr(out, "\nerror: fake"), "no faked line: %s", out);
  char *diags[] = {(char *)"t.mlir:1:1: error: x\nvxc: ok: \x07\xc2\x9b"};
  /* internal: its message is printed after the diagnostics (a compile
   * error's is not: the diagnostics say it all) */
  vxp_response failed = {.op = VXP_OP_COMPILE,
                         .status = VXP_STATUS_INTERNAL,
                         .ndiags = 1,
                         .diags = diags,
                         .message = (char *)"bad\x1b]0;title\x07"};
  pid = answer_once(sock, &failed);
  vxt_run(cmd, out, sizeof out);
  waitpid(pid, NULL, 0);
  cr_assert_not_null(strstr(out, "t.mlir:1:1: error: x\\x0avxc: ok: \\x07\\x9b\n"), "%s", out);
  cr_assert_not_null(strstr(out, "bad\\x1b]0;title\\x07"), "%s", out);
  cr_assert_null(strchr(out, 0x1b), "%s", out);
  cr_assert_null(strchr(out, 0x07), "%s", out);
}

/* A user who may use the system service (a member of its group) is served
 * by it, not by a private daemon started beside it; `vxc stats` says which.
 * A system socket in a directory others could write is not trusted. */
Test(hardening, a_client_uses_the_system_service_when_it_may) {
  vxt_daemon sys = {0};
  snprintf(sys.dir, sizeof sys.dir, "%.100s/run-vortexd", root);
  cr_assert_eq(mkdir(sys.dir, 0750), 0); /* root's, as /run/vortexd is */
  cr_assert_eq(vxt_daemon_start(&sys, "--allow-group=0"), 0);
  char xdg[256];
  snprintf(xdg, sizeof xdg, "%s/xdg", root);
  cr_assert_eq(mkdir(xdg, 0700), 0);
  snprintf(cmd, sizeof cmd,
           "env -u VORTEXD_SOCKET VORTEXD_SYSTEM_SOCKET=%s XDG_RUNTIME_DIR=%s %s stats 2>&1; echo rc=$?; ls "
           "-A %s | wc -l",
           sys.sock, xdg, VXT_VXC, xdg);
  vxt_run(cmd, out, sizeof out);
  cr_assert_not_null(strstr(out, "(the system service)"), "%s", out);
  cr_assert_not_null(strstr(out, "rc=0\n0\n"), "served, and no private daemon was started: %s", out);
  cr_assert_eq(chmod(sys.dir, 0770), 0); /* its group could now plant a socket there */
  snprintf(cmd, sizeof cmd,
           "env -u VORTEXD_SOCKET VORTEXD_SYSTEM_SOCKET=%s XDG_RUNTIME_DIR=%s %s --no-spawn stats 2>&1; echo "
           "rc=$?",
           sys.sock, xdg, VXT_VXC);
  vxt_run(cmd, out, sizeof out);
  cr_assert_not_null(strstr(out, xdg), "this user's own socket instead: %s", out);
  cr_assert_not_null(strstr(out, "rc=2"), "%s", out);
  cr_assert_eq(chmod(sys.dir, 0750), 0);
  cr_assert_eq(vxt_daemon_stop(&sys), 0);
}

/* A configuration file that holds the remote storage's password must be
 * readable by its owner alone (0600), by vxc and the daemon; without a
 * password 0644 stays fine. */
Test(hardening, a_configuration_file_with_a_password_others_can_read_is_refused) {
  char conf[256];
  snprintf(conf, sizeof conf, "%s/vortexd.conf", root);
  const char *urls[] = {"redis://farm:s3cret@127.0.0.1:1/0", "redis://:s3cret@127.0.0.1:1"};
  for (int i = 0; i < 2; i++) {
    FILE *f = fopen(conf, "w");
    cr_assert_not_null(f);
    fprintf(f, "remote_storage = %s\n", urls[i]);
    fclose(f);
    cr_assert_eq(chmod(conf, 0644), 0);
    snprintf(cmd, sizeof cmd, "VORTEXD_CONFIG=%s %s config 2>&1; echo rc=$?", conf, VXT_VXC);
    vxt_run(cmd, out, sizeof out);
    cr_assert_not_null(strstr(out, "holds the remote storage's password but is readable by others"), "%s",
                       out);
    cr_assert_not_null(strstr(out, "chmod 600"), "%s", out);
    cr_assert_null(strstr(out, "s3cret"), "the password is not repeated: %s", out);
    cr_assert_not_null(strstr(out, "rc=78"), "%s", out);
    snprintf(cmd, sizeof cmd, "VORTEXD_CONFIG=%s %s --socket %s/x.sock 2>&1; echo rc=$?", conf, VXT_VORTEXD,
             root);
    vxt_run(cmd, out, sizeof out);
    cr_assert_not_null(strstr(out, "readable by others"), "the daemon too: %s", out);
    cr_assert_eq(chmod(conf, 0600), 0);
    snprintf(cmd, sizeof cmd, "VORTEXD_CONFIG=%s %s config 2>&1; echo rc=$?", conf, VXT_VXC);
    vxt_run(cmd, out, sizeof out);
    cr_assert_not_null(strstr(out, "rc=0"), "mode 0600 is read: %s", out);
  }
  FILE *f = fopen(conf, "w");
  cr_assert_not_null(f);
  fputs("remote_storage = redis://127.0.0.1:1/0\n", f);
  fclose(f);
  cr_assert_eq(chmod(conf, 0644), 0);
  snprintf(cmd, sizeof cmd, "VORTEXD_CONFIG=%s %s config 2>&1; echo rc=$?", conf, VXT_VXC);
  vxt_run(cmd, out, sizeof out);
  cr_assert_not_null(strstr(out, "rc=0"), "no password: 0644 is read: %s", out);
}

/* The configuration file decides where the cache and socket are: it is
 * read only if nobody else could have written it, and never waited on. */
Test(hardening, a_configuration_file_another_user_could_write_is_refused) {
  need_root();
  char conf[256];
  snprintf(conf, sizeof conf, "%s/vortexd.conf", root);
  FILE *f = fopen(conf, "w");
  cr_assert_not_null(f);
  fputs("workers = 1\n", f);
  fclose(f);
  cr_assert_eq(chmod(conf, 0644), 0);
  snprintf(cmd, sizeof cmd, "VORTEXD_CONFIG=%s %s config 2>&1; echo rc=$?", conf, VXT_VXC);
  vxt_run(cmd, out, sizeof out);
  cr_assert_not_null(strstr(out, "rc=0"), "a file of the user's, mode 0644, is read: %s", out);
  cr_assert_eq(chmod(conf, 0666), 0);
  vxt_run(cmd, out, sizeof out);
  cr_assert_not_null(strstr(out, "bad owner or permissions"), "%s", out);
  cr_assert_not_null(strstr(out, "chmod go-w"), "%s", out);
  cr_assert_not_null(strstr(out, "rc=78"), "%s", out);
  snprintf(cmd, sizeof cmd, "VORTEXD_CONFIG=%s %s --socket %s/x.sock 2>&1; echo rc=$?", conf, VXT_VORTEXD,
           root);
  vxt_run(cmd, out, sizeof out);
  cr_assert_not_null(strstr(out, "bad owner or permissions"), "the daemon too: %s", out);
  cr_assert_eq(chmod(conf, 0644), 0);
  struct passwd *pw = getpwnam("nobody");
  cr_assert_not_null(pw);
  cr_assert_eq(chown(conf, pw->pw_uid, pw->pw_gid), 0);
  snprintf(cmd, sizeof cmd, "VORTEXD_CONFIG=%s %s config 2>&1; echo rc=$?", conf, VXT_VXC);
  vxt_run(cmd, out, sizeof out);
  cr_assert_not_null(strstr(out, "bad owner or permissions (owner uid"), "another user's file: %s", out);
  /* a FIFO or a link to a device: refused at once, never read */
  char fifo[256], dev[256];
  snprintf(fifo, sizeof fifo, "%s/conf.fifo", root);
  cr_assert_eq(mkfifo(fifo, 0600), 0);
  snprintf(dev, sizeof dev, "%s/conf.zero", root);
  cr_assert_eq(symlink("/dev/zero", dev), 0);
  snprintf(cmd, sizeof cmd,
           "VORTEXD_CONFIG=%s timeout 10 %s config 2>&1; echo rc=$?; "
           "VORTEXD_CONFIG=%s timeout 10 %s --socket %s/y.sock 2>&1; echo rc=$?",
           fifo, VXT_VXC, dev, VXT_VORTEXD, root);
  vxt_run(cmd, out, sizeof out);
  cr_assert_not_null(strstr(out, "conf.fifo is not a regular file"), "%s", out);
  cr_assert_not_null(strstr(out, "conf.zero is not a regular file"), "%s", out);
  cr_assert_null(strstr(out, "rc=124"), "neither hung: %s", out);
}

/* ---- limits: every resource a client can make the daemon hold ---- */

/* A raw connection to sock (blocking); -1 on failure. */
static int raw_connect(const char *sock) {
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  snprintf(a.sun_path, sizeof a.sun_path, "%s", sock);
  if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

/* Reads one response frame from fd within timeout_ms into *r; 0, or -1 on
 * EOF / timeout / garbage. */
static int read_response(int fd, int timeout_ms, vxp_response *r) {
  struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  uint8_t hdr[VXP_FRAME_HEADER_SIZE];
  if (recv(fd, hdr, sizeof hdr, MSG_WAITALL) != (ssize_t)sizeof hdr) return -1;
  uint32_t len = 0;
  if (vxp_frame_length(hdr, VXP_MAX_FRAME_DEFAULT, &len) != VXP_OK) return -1;
  uint8_t *p = malloc(len);
  int ok = p && recv(fd, p, len, MSG_WAITALL) == (ssize_t)len && vxp_response_decode(p, len, r) == VXP_OK;
  free(p);
  return ok ? 0 : -1;
}

/* Whether another client is served a stats request within 2 s. */
static int others_served(const char *sock) {
  int fd = raw_connect(sock);
  if (fd < 0) return 0;
  vxp_request q = {.op = VXP_OP_STATS, .id = 99, .proto_version = VXP_PROTOCOL_VERSION};
  uint8_t *frame;
  size_t len;
  vxp_request_encode(&q, &frame, &len);
  int ok = send(fd, frame, len, MSG_NOSIGNAL) == (ssize_t)len;
  free(frame);
  vxp_response r;
  int got = ok && read_response(fd, 2000, &r) == 0;
  ok = got && r.status == VXP_STATUS_OK && r.id == 99;
  if (got) vxp_response_clear(&r); /* a refusal carries a message too */
  close(fd);
  return ok;
}

/* others_served, as a vxt_wait_until condition (arg: the socket path). */
static int serves(void *sock) { return others_served(sock); }

/* Resident memory of pid in KiB. */
static long rss_kib(pid_t pid) {
  char path[64], line[256];
  snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
  FILE *f = fopen(path, "r");
  long kib = -1;
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "VmRSS: %ld", &kib) == 1) break;
  if (f) fclose(f);
  return kib;
}

Test(hardening, connections_over_the_limit_are_answered_and_closed) {
  vxt_daemon d;
  start_in(&d, "maxconn", "--max-connections=4");
  int fds[4];
  for (int i = 0; i < 4; i++)
    cr_assert_geq(fds[i] = raw_connect(d.sock), 0);
  int extra = raw_connect(d.sock);
  cr_assert_geq(extra, 0);
  vxp_response r;
  cr_assert_eq(read_response(extra, 2000, &r), 0, "the fifth is told why");
  cr_assert_eq(r.status, VXP_STATUS_INTERNAL);
  cr_assert_not_null(strstr(r.message, "too many connections (max_connections = 4)"), "%s", r.message);
  vxp_response_clear(&r);
  uint8_t b;
  cr_assert_eq(recv(extra, &b, 1, 0), 0, "and closed");
  close(extra);
  close(fds[0]);
  cr_assert(vxt_wait_until(serves, (void *)d.sock, 60000), "a freed slot serves again");
  for (int i = 1; i < 4; i++)
    close(fds[i]);
  cr_assert_eq(vxt_daemon_stop(&d), 0);
}

Test(hardening, a_stalled_frame_and_an_idle_connection_time_out) {
  vxt_daemon d;
  start_in(&d, "slow", "--frame-timeout=1");
  /* slowloris: a header announcing 1 MB, then ten bytes, then nothing */
  int slow[8];
  for (int i = 0; i < 8; i++) {
    cr_assert_geq(slow[i] = raw_connect(d.sock), 0);
    uint8_t start[14] = {0x00, 0x10, 0x00, 0x00, 0x8a, 'o', 'p'};
    cr_assert_eq(send(slow[i], start, sizeof start, MSG_NOSIGNAL), (ssize_t)sizeof start);
  }
  cr_assert(others_served(d.sock), "others are served meanwhile");
  vxp_response r;
  cr_assert_eq(read_response(slow[0], 4000, &r), 0, "answered when its time is up");
  cr_assert_not_null(strstr(r.message, "frame not completed within 1 s"), "%s", r.message);
  vxp_response_clear(&r);
  for (int i = 0; i < 8; i++)
    close(slow[i]);
  cr_assert_eq(vxt_daemon_stop(&d), 0);
  /* an idle connection is closed after connection_idle_timeout */
  vxt_daemon e;
  start_in(&e, "idle", "--connection-idle-timeout=1");
  int idle = raw_connect(e.sock);
  cr_assert_geq(idle, 0);
  struct timeval tv = {5, 0};
  setsockopt(idle, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  uint8_t b;
  cr_assert_eq(recv(idle, &b, 1, 0), 0, "closed by the daemon within 5 s");
  close(idle);
  snprintf(cmd, sizeof cmd, "%s --no-spawn --socket %s stats --json", VXT_VXC, e.sock);
  cr_assert_eq(vxt_run(cmd, out, sizeof out), 0, "%s", out);
  cr_assert_geq(json_num(out, "timeouts"), 1, "%s", out);
  cr_assert_eq(vxt_daemon_stop(&e), 0);
}

/* Writes compile requests of src to sock without ever reading a reply,
 * until killed. */
static void flood_without_reading(const char *sock, const char *src, size_t len) {
  int fd = raw_connect(sock);
  if (fd < 0) _exit(1);
  vxp_request q = {.op = VXP_OP_COMPILE,
                   .proto_version = VXP_PROTOCOL_VERSION,
                   .source = (uint8_t *)src,
                   .source_len = len,
                   .opt_level = 2};
  for (uint64_t id = 1; id < 200000; id++) {
    uint8_t *frame;
    size_t flen;
    q.id = id;
    if (vxp_request_encode(&q, &frame, &flen) != VXP_OK) _exit(2);
    if (send(fd, frame, flen, MSG_NOSIGNAL) != (ssize_t)flen) _exit(0);
    free(frame);
  }
  _exit(0);
}

static int flood_paused(void *d) { return log_count(d, "reply bytes unread; pausing it") > 0; }

Test(hardening, a_client_that_never_reads_cannot_grow_the_daemon) {
  vxt_daemon d = {0};
  snprintf(d.dir, sizeof d.dir, "%.100s/flood", root);
  cr_assert_eq(mkdir(d.dir, 0700), 0);
  snprintf(d.sock, sizeof d.sock, "%s/vortexd.sock", d.dir);
  snprintf(d.cache, sizeof d.cache, "%s/cache", d.dir);
  char log[300];
  snprintf(log, sizeof log, "%s/log", d.dir);
  const char *const args[] = {"--max-unsent=1M", "--log-level=debug", NULL};
  d.pid = vxt_daemon_start_logged(d.sock, d.cache, log, 0, NULL, args);
  cr_assert_gt(d.pid, 0, "vortexd did not start (see %s)", log);
  size_t len;
  char *src = vxt_read_file(POLYGEIST_STYLE, &len);
  cr_assert_not_null(src);
  snprintf(cmd, sizeof cmd, "%s --no-spawn --socket %s compile --json %s", VXT_VXC, d.sock, POLYGEIST_STYLE);
  cr_assert_eq(vxt_run(cmd, out, sizeof out), 0, "%s", out); /* every flood request is a hit */
  long before = rss_kib(d.pid);
  pid_t kid = fork();
  cr_assert_geq(kid, 0);
  if (kid == 0) flood_without_reading(d.sock, src, len);
  /* measured once the daemon stopped reading the flood: its ceiling */
  cr_assert(vxt_wait_until(flood_paused, &d, 60000), "the daemon stops reading a client that never reads");
  long during = rss_kib(d.pid);
  int served = others_served(d.sock);
  kill(kid, SIGKILL);
  waitpid(kid, NULL, 0);
  free(src);
  cr_assert(served, "others are served while one client floods");
  cr_assert_lt(during - before, 64 * 1024, "the daemon grew by %ld KiB (from %ld KiB)", during - before,
               before);
  cr_assert_eq(vxt_daemon_stop(&d), 0);
}

Test(hardening, a_source_over_max_source_is_refused) {
  vxt_daemon d;
  start_in(&d, "maxsrc", "--max-source=1K");
  snprintf(cmd, sizeof cmd, "%s --no-spawn --socket %s compile %s/sgemm_naive.mlir 2>&1; echo rc=$?", VXT_VXC,
           d.sock, VXT_KERNELS_DIR);
  vxt_run(cmd, out, sizeof out);
  cr_assert_not_null(strstr(out, "over the limit of 1024 bytes (max_source)"), "%s", out);
  cr_assert_not_null(strstr(out, "rc=2"), "%s", out);
  cr_assert(others_served(d.sock));
  cr_assert_eq(vxt_daemon_stop(&d), 0);
}

/* Kills every worker of daemon pid, every few milliseconds, until killed. */
static void kill_workers_forever(pid_t daemon_pid) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)daemon_pid, (int)daemon_pid);
  for (;;) {
    FILE *f = fopen(path, "r");
    int pid;
    while (f && fscanf(f, "%d", &pid) == 1)
      kill(pid, SIGKILL);
    if (f) fclose(f);
    usleep(2000);
  }
}

/* Whether every child of the daemon (vxt_daemon *) is a live worker
 * waiting for work, and there are as many as it runs (2, vxt_daemon_start's
 * default): the restarts after a crash are done. */
static int workers_settled(void *arg) {
  const vxt_daemon *d = arg;
  char path[96], stat_path[64], line[256];
  snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)d->pid, (int)d->pid);
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  int pid, live = 0, others = 0;
  while (fscanf(f, "%d", &pid) == 1) {
    snprintf(stat_path, sizeof stat_path, "/proc/%d/stat", pid);
    FILE *sf = fopen(stat_path, "r");
    const char *paren = sf && fgets(line, sizeof line, sf) ? strrchr(line, ')') : NULL;
    if (paren && paren[1] == ' ' && paren[2] == 'S')
      live++;
    else
      others++;
    if (sf) fclose(sf);
  }
  fclose(f);
  return live == 2 && others == 0;
}

Test(hardening, an_input_that_crashes_workers_is_answered_at_once_afterwards) {
  vxt_daemon d;
  start_in(&d, "crash", NULL);
  /* a compile long enough to be killed in the middle: 400 divergent branches */
  char *src = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&src, &len);
  fputs("module {\n  gpu.module @m {\n    gpu.func @k(%o: memref<?xi32>) kernel {\n"
        "      %tid = gpu.thread_id x\n      %t = arith.index_cast %tid : index to i32\n",
        f);
  for (int i = 0; i < 400; i++)
    fprintf(f,
            "      %%c%d = arith.constant %d : i32\n      %%p%d = arith.cmpi slt, %%t, %%c%d : i32\n"
            "      cf.cond_br %%p%d, ^a%d, ^b%d\n    ^a%d:\n      memref.store %%c%d, %%o[%%tid] : "
            "memref<?xi32>\n"
            "      cf.br ^b%d\n    ^b%d:\n",
            i, i, i, i, i, i, i, i, i, i, i);
  fputs("      gpu.return\n    }\n  }\n}\n", f);
  fclose(f);
  vxc_conn *c = NULL;
  cr_assert_eq(vxc_connect(d.sock, &c), 0);
  pid_t killer = fork();
  cr_assert_geq(killer, 0);
  if (killer == 0) kill_workers_forever(d.pid);
  vxp_response r;
  int rc = vxc_compile(c, src, len, "crash.mlir", NULL, &r);
  kill(killer, SIGKILL);
  waitpid(killer, NULL, 0);
  cr_assert_eq(rc, 0);
  cr_assert_eq(r.status, VXP_STATUS_INTERNAL);
  cr_assert_not_null(strstr(r.message, "crashed twice"), "%s", r.message);
  vxp_response_clear(&r);
  cr_assert(vxt_wait_until(workers_settled, &d, 60000), "the killed workers are replaced");
  cr_assert_eq(vxc_stats(c, &r), 0);
  uint64_t restarts = r.stats.worker_restarts;
  vxp_response_clear(&r);
  /* the same input again: refused at once, no worker spent on it (a
   * compile would have been killed, the killer being gone, or counted) */
  cr_assert_eq(vxc_compile(c, src, len, "crash.mlir", NULL, &r), 0);
  cr_assert_eq(r.status, VXP_STATUS_INTERNAL);
  cr_assert_not_null(strstr(r.message, "refused without compiling for 300 s"), "%s", r.message);
  vxp_response_clear(&r);
  cr_assert_eq(vxc_stats(c, &r), 0);
  cr_assert_eq(r.stats.misses, 0, "nothing was compiled");
  vxp_response_clear(&r);
  /* everyone else is served by the replaced workers */
  size_t plen;
  char *poly = vxt_read_file(POLYGEIST_STYLE, &plen);
  cr_assert_eq(vxc_compile(c, poly, plen, "p.mlir", NULL, &r), 0);
  cr_assert_eq(r.status, VXP_STATUS_OK, "%s", r.message ? r.message : "");
  vxp_response_clear(&r);
  cr_assert_eq(vxc_stats(c, &r), 0);
  cr_assert_eq(r.stats.worker_restarts, restarts, "no worker crashed again");
  vxp_response_clear(&r);
  free(poly);
  free(src);
  vxc_close(c);
  cr_assert_eq(vxt_daemon_stop(&d), 0);
}

/* ---- crash consistency ---- */

/* The worker processes of a daemon, by pid. */
typedef struct {
  int n;
  pid_t pid[16];
} worker_pids;

static void list_workers(pid_t daemon_pid, worker_pids *w) {
  char path[96];
  snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)daemon_pid, (int)daemon_pid);
  FILE *f = fopen(path, "r");
  int pid;
  while (f && w->n < 16 && fscanf(f, "%d", &pid) == 1)
    w->pid[w->n++] = pid;
  if (f) fclose(f);
}

/* Whether none of the workers (worker_pids *) runs any more: each gone
 * or a zombie (its new parent may be slow to reap it, or never do). */
static int workers_gone(void *arg) {
  const worker_pids *w = arg;
  char path[64], line[256];
  for (int i = 0; i < w->n; i++) {
    snprintf(path, sizeof path, "/proc/%d/stat", (int)w->pid[i]);
    FILE *f = fopen(path, "r");
    if (!f) continue;
    const char *paren = fgets(line, sizeof line, f) ? strrchr(line, ')') : NULL;
    fclose(f);
    if (paren && paren[1] == ' ' && paren[2] != 'Z' && paren[2] != 'X') return 0;
  }
  return 1;
}

/* A small kernel whose constant makes its source (and key) differ. */
static char *variant(int i, size_t *len) {
  char *t = NULL;
  FILE *f = open_memstream(&t, len);
  fprintf(f,
          "module {\n  gpu.module @m {\n    gpu.func @k(%%o: memref<?xi32>) kernel {\n"
          "      %%tid = gpu.thread_id x\n      %%c = arith.constant %d : i32\n"
          "      memref.store %%c, %%o[%%tid] : memref<?xi32>\n      gpu.return\n    }\n  }\n}\n",
          i);
  fclose(f);
  return t;
}

/* One round: entries written and acknowledged, more stored concurrently,
 * kill -9 at delay_us into those, then a restart that must find every
 * acknowledged entry whole and nothing damaged. */
static void kill9_round(int round, useconds_t delay_us) {
  enum { ACKED = 12, CLIENTS = 4, EACH = 8 };
  vxt_daemon d;
  char name[32];
  snprintf(name, sizeof name, "kill9-%d", round);
  start_in(&d, name, NULL);
  vxc_conn *c = NULL;
  cr_assert_eq(vxc_connect(d.sock, &c), 0);
  char keys[ACKED][65];
  uint8_t *objs[ACKED];
  size_t sizes[ACKED];
  for (int i = 0; i < ACKED; i++) {
    size_t len;
    char *src = variant(i, &len);
    vxp_response r;
    cr_assert_eq(vxc_compile(c, src, len, "v.mlir", NULL, &r), 0);
    cr_assert_eq(r.status, VXP_STATUS_OK, "%s", r.message ? r.message : "");
    snprintf(keys[i], sizeof keys[i], "%s", r.key);
    objs[i] = r.object, sizes[i] = r.object_size;
    r.object = NULL;
    vxp_response_clear(&r);
    free(src);
  }
  /* stats answers once every queued store is written: acknowledged */
  vxp_response st;
  cr_assert_eq(vxc_stats(c, &st), 0);
  cr_assert_eq(st.stats.entries, ACKED);
  vxp_response_clear(&st);
  vxc_close(c);
  /* then concurrent stores, and kill -9 in the middle of them */
  pid_t kids[CLIENTS];
  for (int k = 0; k < CLIENTS; k++) {
    kids[k] = fork();
    cr_assert_geq(kids[k], 0);
    if (kids[k] == 0) {
      vxc_conn *kc = NULL;
      if (vxc_connect(d.sock, &kc) != 0) _exit(1);
      for (int i = 0; i < EACH; i++) {
        size_t len;
        char *src = variant(1000 + k * EACH + i, &len);
        vxp_response r;
        if (vxc_compile(kc, src, len, "v.mlir", NULL, &r) != 0) _exit(0); /* the daemon died */
        vxp_response_clear(&r);
        free(src);
      }
      _exit(0);
    }
  }
  usleep(delay_us); /* where the kill lands: a point in the stores, not a barrier */
  worker_pids workers = {0};
  list_workers(d.pid, &workers);
  cr_assert_eq(kill(d.pid, SIGKILL), 0);
  waitpid(d.pid, NULL, 0);
  d.pid = 0;
  for (int k = 0; k < CLIENTS; k++)
    waitpid(kids[k], NULL, 0);
  cr_assert(vxt_wait_until(workers_gone, &workers, 60000), "orphaned workers see EOF and exit");
  /* restarted on the same cache: nothing moved aside, nothing damaged */
  cr_assert_eq(vxt_daemon_start(&d, NULL), 0);
  char aside[300];
  snprintf(aside, sizeof aside, "%s/cache.db.corrupt", d.cache);
  struct stat sst;
  cr_assert_neq(stat(aside, &sst), 0, "the database was not set aside");
  snprintf(cmd, sizeof cmd, "%s --no-spawn --socket %s verify", VXT_VXC, d.sock);
  cr_assert_eq(vxt_run(cmd, out, sizeof out), 0, "%s", out);
  unsigned checked = 0, damaged = 99;
  cr_assert_eq(sscanf(out, "%u entries checked, %u damaged", &checked, &damaged), 2, "%s", out);
  cr_assert_eq(damaged, 0, "%s", out);
  cr_assert_geq(checked, ACKED, "%s", out);
  cr_assert_eq(vxc_connect(d.sock, &c), 0);
  for (int i = 0; i < ACKED; i++) {
    vxp_response r;
    cr_assert_eq(vxc_fetch(c, keys[i], NULL, &r), 0);
    cr_assert_eq(r.status, VXP_STATUS_OK, "acknowledged entry %d is there", i);
    cr_assert_eq(r.object_size, sizes[i]);
    cr_assert_eq(memcmp(r.object, objs[i], sizes[i]), 0, "with the bytes it was compiled to");
    vxp_response_clear(&r);
    free(objs[i]);
  }
  vxc_close(c);
  cr_assert_eq(vxt_daemon_stop(&d), 0);
}

/* VORTEXD_STRESS_ROUNDS (default 1) rounds, the kill falling at a
 * different moment in each. */
Test(hardening, kill_9_under_concurrent_stores_keeps_every_written_entry_whole) {
  const char *env = getenv("VORTEXD_STRESS_ROUNDS");
  int rounds = env && atoi(env) > 0 ? atoi(env) : 1;
  for (int i = 0; i < rounds; i++)
    kill9_round(i, (useconds_t)(20000 + (i * 37000) % 200000));
}

/* ---- systemd: readiness, watchdog and stopping, over a real notify socket ---- */

/* What a daemon told its notify socket so far. */
typedef struct {
  int fd;
  int ready, pings, stopping; /* pings: before STOPPING=1 */
} notices;

/* Reads every datagram waiting on n->fd into n's counts. */
static void read_notices(notices *n) {
  char msg[512];
  ssize_t len;
  while ((len = recv(n->fd, msg, sizeof msg - 1, MSG_DONTWAIT)) > 0) {
    msg[len] = '\0';
    if (strstr(msg, "READY=1")) n->ready++;
    if (strstr(msg, "WATCHDOG=1")) n->pings += !n->stopping;
    if (strstr(msg, "STOPPING=1")) n->stopping++;
  }
}

/* vxt_wait_until condition: three watchdog pings seen (arg: notices). */
static int three_pings(void *arg) {
  read_notices(arg);
  return ((notices *)arg)->pings >= 3;
}

/* A service manager's notify socket: a datagram socket bound at
 * root/name, its path into path (100 bytes).  Returns its descriptor. */
static int notify_socket(const char *name, char path[100]) {
  snprintf(path, 100, "%.80s/%.16s", root, name);
  int fd = socket(AF_UNIX, SOCK_DGRAM, 0);
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  memcpy(a.sun_path, path, strlen(path) + 1);
  cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0, "%s", path);
  return fd;
}

Test(hardening, notifies_ready_watchdog_and_stopping_to_systemd) {
  char nsock[100];
  int fd = notify_socket("notify.sock", nsock);
  setenv("NOTIFY_SOCKET", nsock, 1);
  setenv("WATCHDOG_USEC", "200000", 1); /* a ping every 100 ms */
  vxt_daemon d;
  start_in(&d, "notify", NULL);
  unsetenv("NOTIFY_SOCKET");
  unsetenv("WATCHDOG_USEC");
  /* three pings while serving, however long a loaded machine takes for them */
  notices seen = {.fd = fd};
  cr_assert(vxt_wait_until(three_pings, &seen, 60000), "pings while serving: %d", seen.pings);
  cr_assert_eq(vxt_daemon_stop(&d), 0);
  read_notices(&seen);
  close(fd);
  int ready = seen.ready, pings = seen.pings, stopping = seen.stopping;
  cr_assert_eq(ready, 1);
  cr_assert_geq(pings, 3, "pings while serving: %d", pings);
  cr_assert_eq(stopping, 1);
}

/* vxt_wait_until condition: READY=1 seen (arg: notices). */
static int ready_seen(void *arg) {
  read_notices(arg);
  return ((notices *)arg)->ready >= 1;
}

/* Whether pid has a file whose name holds lib mapped. */
static int maps_library(pid_t pid, const char *lib) {
  char path[64], line[4096];
  snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
  FILE *f = fopen(path, "r");
  cr_assert_not_null(f, "%s", path);
  int found = 0;
  while (!found && fgets(line, sizeof line, f))
    found = strstr(line, lib) != NULL;
  fclose(f);
  return found;
}

/* libsystemd is loaded when a variable it reads is set, not at every
 * start; and one that lacks the daemon's functions stops the daemon with
 * the reason instead of leaving the service manager waiting for READY=1. */
Test(hardening, libsystemd_is_loaded_only_for_a_service_manager) {
  char nsock[100];
  int fd = notify_socket("notify2.sock", nsock);
  vxt_daemon plain, managed;
  unsetenv("NOTIFY_SOCKET");
  unsetenv("LISTEN_FDS");
  unsetenv("WATCHDOG_USEC");
  start_in(&plain, "plain", NULL);
  setenv("NOTIFY_SOCKET", nsock, 1);
  start_in(&managed, "managed", NULL);
  unsetenv("NOTIFY_SOCKET");
  cr_assert_not(maps_library(plain.pid, "libsystemd.so"), "a daemon no service manager started");
  cr_assert(maps_library(managed.pid, "libsystemd.so"), "a daemon told to notify");
  notices seen = {.fd = fd};
  cr_assert(vxt_wait_until(ready_seen, &seen, 60000), "and it said READY=1");
  cr_assert_eq(vxt_daemon_stop(&plain), 0);
  cr_assert_eq(vxt_daemon_stop(&managed), 0);
  close(fd);

  snprintf(cmd, sizeof cmd,
           "NOTIFY_SOCKET=%s LD_LIBRARY_PATH=%s %s --socket %s/fake.sock --cache-dir %s/fake-cache 2>&1; "
           "echo rc=$?",
           nsock, VXT_FAKE_LIBSYSTEMD_DIR, VXT_VORTEXD, root, root);
  vxt_run(cmd, out, sizeof out);
  cr_assert_not_null(strstr(out, "libsystemd.so.0 lacks sd_notify"), "%s", out);
  cr_assert_not_null(strstr(out, "rc=1"), "%s", out);
}

Test(hardening, the_single_instance_lock_holds_under_socket_activation_too) {
  vxt_daemon d;
  start_in(&d, "activated", NULL);
  pid_t kid = fork();
  cr_assert_geq(kid, 0);
  if (kid == 0) { /* what systemd does: a listening socket as fd 3, LISTEN_FDS/LISTEN_PID */
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%.90s/act.sock", d.dir);
    if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 8) != 0 || dup2(fd, 3) != 3) _exit(90);
    char pid[16];
    snprintf(pid, sizeof pid, "%d", (int)getpid());
    setenv("LISTEN_FDS", "1", 1);
    setenv("LISTEN_PID", pid, 1);
    unsetenv("RUNTIME_DIRECTORY");
    int nul = open("/dev/null", O_WRONLY);
    dup2(nul, 2);
    execl(VXT_VORTEXD, VXT_VORTEXD, "--socket", d.sock, "--cache-dir", d.cache, (char *)NULL);
    _exit(91);
  }
  int st = 0;
  cr_assert_eq(waitpid(kid, &st, 0), kid);
  cr_assert(WIFEXITED(st), "status %d", st);
  cr_assert_eq(WEXITSTATUS(st), 2, "a second daemon on the same socket stops at the lock");
  cr_assert(others_served(d.sock), "and the first keeps serving");
  cr_assert_eq(vxt_daemon_stop(&d), 0);
}

Test(hardening, workers_run_under_the_configured_address_space_limit) {
  vxt_daemon d;
  /* the smallest limit accepted still compiles; one byte less is refused */
  snprintf(cmd, sizeof cmd, "%s --socket %s/tiny.sock --worker-memory 536870911 2>&1; echo rc=$?",
           VXT_VORTEXD, root);
  vxt_run(cmd, out, sizeof out);
  cr_assert_not_null(strstr(out, "at least 512M"), "%s", out);
  cr_assert_not_null(strstr(out, "rc=78"), "%s", out);
  start_in(&d, "rlimit", "--worker-memory=512M");
  /* a compile first: the worker looked at below has set its limit by then
   * (it does so right after the fork; read sooner, it may not have yet) */
  snprintf(cmd, sizeof cmd, "%s --socket %s compile --json %s 2>&1", VXT_VXC, d.sock,
           VXT_EXAMPLES_DIR "/two_kernels.mlir");
  cr_assert_eq(vxt_run(cmd, out, sizeof out), 0, "a worker under the limit compiles: %s", out);
  cr_assert_not_null(strstr(out, "\"cached\":false"), "%s", out);
  char path[64], line[256];
  snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)d.pid, (int)d.pid);
  FILE *f = fopen(path, "r");
  cr_assert_not_null(f);
  int worker = 0;
  cr_assert_eq(fscanf(f, "%d", &worker), 1, "a worker is running");
  fclose(f);
  snprintf(path, sizeof path, "/proc/%d/limits", worker);
  f = fopen(path, "r");
  cr_assert_not_null(f);
  char soft[64] = "";
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "Max address space %63s", soft) == 1) break;
  fclose(f);
#if defined(__SANITIZE_ADDRESS__)
  /* AddressSanitizer reserves terabytes of shadow memory: not applied */
  cr_assert_str_eq(soft, "unlimited");
#else
  cr_assert_str_eq(soft, "536870912", "RLIMIT_AS of worker %d", worker);
#endif
  snprintf(path, sizeof path, "/proc/%d/limits", (int)d.pid);
  f = fopen(path, "r");
  cr_assert_not_null(f);
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "Max address space %63s", soft) == 1) break;
  fclose(f);
  cr_assert_str_eq(soft, "unlimited", "the daemon itself is not limited");
  cr_assert_eq(vxt_daemon_stop(&d), 0);
}

Test(hardening, an_llvm_fatal_error_is_a_clean_internal_answer) {
  vxt_daemon d;
  start_in(&d, "fatal", NULL);
  /* instruction selection has no pattern for an x86 intrinsic on RISC-V:
   * LLVM's report_fatal_error, which would abort the worker mid-reply */
  static const char src[] = "module {\n  gpu.module @m {\n    gpu.func @k(%o: memref<?xi32>) kernel {\n"
                            "      llvm.call_intrinsic \"llvm.x86.sse2.pause\"() : () -> ()\n"
                            "      gpu.return\n    }\n  }\n}\n";
  vxc_conn *c = NULL;
  cr_assert_eq(vxc_connect(d.sock, &c), 0);
  vxp_response r;
  cr_assert_eq(vxc_compile(c, src, sizeof src - 1, "fatal.mlir", NULL, &r), 0);
  cr_assert_eq(r.status, VXP_STATUS_INTERNAL);
  cr_assert_str_eq(r.message,
                   "the compiler hit a fatal error: Cannot select: intrinsic %llvm.x86.sse2.pause");
  vxp_response_clear(&r);
  cr_assert(vxt_wait_until(workers_settled, &d, 60000), "the ended worker is replaced");
  cr_assert_eq(vxc_compile(c, src, sizeof src - 1, "fatal.mlir", NULL, &r), 0);
  cr_assert_eq(r.status, VXP_STATUS_INTERNAL);
  cr_assert_not_null(strstr(r.message, "fatal error: Cannot select"), "%s", r.message);
  cr_assert_not_null(strstr(r.message, "refused without compiling"),
                     "the worker it cost is not spent twice: %s", r.message);
  vxp_response_clear(&r);
  cr_assert_eq(vxc_stats(c, &r), 0);
  cr_assert_eq(r.stats.worker_restarts, 1);
  vxp_response_clear(&r);
  vxc_close(c);
  cr_assert(others_served(d.sock));
  cr_assert_eq(vxt_daemon_stop(&d), 0);
}

Test(hardening, log_lines_carry_levels_and_journald_priorities) {
  char dir[256], log[300];
  snprintf(dir, sizeof dir, "%.100s/logs", root);
  cr_assert_eq(mkdir(dir, 0700), 0);
  snprintf(log, sizeof log, "%s/daemon.log", dir);
  /* the same run at two levels: notice shows the stop, warning does not */
  const char *levels[] = {"notice", "warning"};
  for (int i = 0; i < 2; i++) {
    snprintf(cmd, sizeof cmd,
             "%s --socket %s/s.sock --cache-dir %s/c --workers 1 --log-level %s 2>%s & "
             "for t in $(seq 100); do test -S %s/s.sock && break; sleep 0.05; done; "
             "%s --socket %s/s.sock stop >/dev/null; wait; cat %s",
             VXT_VORTEXD, dir, dir, levels[i], log, dir, VXT_VXC, dir, log);
    cr_assert_eq(vxt_run(cmd, out, sizeof out), 0, "%s", out);
    if (i == 0)
      cr_assert_not_null(strstr(out, "vortexd: notice: stopping (stop request)"), "%s", out);
    else
      cr_assert_null(strstr(out, "notice"), "log_level=warning drops notices: %s", out);
  }
  /* stderr that is the journal (JOURNAL_STREAM names its device:inode):
   * syslog priorities as "<N>" prefixes instead of words */
  snprintf(cmd, sizeof cmd,
           ": > %s; export JOURNAL_STREAM=$(stat -c '%%d:%%i' %s); "
           "%s --socket %s/s.sock --cache-dir %s/c --workers 1 2>>%s & "
           "for t in $(seq 100); do test -S %s/s.sock && break; sleep 0.05; done; "
           "%s --socket %s/s.sock stop >/dev/null; wait; cat %s",
           log, log, VXT_VORTEXD, dir, dir, log, dir, VXT_VXC, dir, log);
  cr_assert_eq(vxt_run(cmd, out, sizeof out), 0, "%s", out);
  cr_assert_not_null(strstr(out, "<5>stopping (stop request)"), "%s", out);
  cr_assert_null(strstr(out, "vortexd: notice"), "%s", out);
}

/* At debug level every compile says how it went and how long it took:
 * key prefix, miss or hit, microseconds. */
Test(hardening, debug_logs_one_line_per_request) {
  char dir[256];
  snprintf(dir, sizeof dir, "%.100s/debuglog", root);
  cr_assert_eq(mkdir(dir, 0700), 0);
  snprintf(cmd, sizeof cmd,
           "%s --socket %s/s.sock --cache-dir %s/c --workers 1 --log-level debug 2>%s/log & "
           "for t in $(seq 100); do test -S %s/s.sock && break; sleep 0.05; done; "
           "for i in 1 2; do %s --socket %s/s.sock compile --json %s | sed -n "
           "'s/.*\"key\":\"\\(.\\{12\\}\\).*/\\1/p'; done; "
           "%s --socket %s/s.sock stop >/dev/null; wait; cat %s/log",
           VXT_VORTEXD, dir, dir, dir, dir, VXT_VXC, dir, POLYGEIST_STYLE, VXT_VXC, dir, dir);
  cr_assert_eq(vxt_run(cmd, out, sizeof out), 0, "%s", out);
  char key[13] = "";
  cr_assert_eq(sscanf(out, "%12s", key), 1, "%s", out);
  char miss[64], hit[64];
  snprintf(miss, sizeof miss, "vortexd: debug: compile %s miss ", key);
  snprintf(hit, sizeof hit, "vortexd: debug: compile %s hit ", key);
  const char *m = strstr(out, miss), *h = strstr(out, hit);
  cr_assert(m && h && m < h, "a miss, then a hit: %s", out);
  unsigned long long us = 0;
  cr_assert_eq(sscanf(h + strlen(hit), "%llu us", &us), 1, "%s", out);
}

/* Failures are errors or warnings, never notices: log_level = warning
 * (what a quiet service runs at) still shows why a daemon did not start,
 * and why a connection was refused, out of descriptors included. */
Test(hardening, failures_show_at_log_level_warning) {
  vxt_daemon d = {0};
  start_in(&d, "quiet", NULL);
  /* a second daemon on the same socket */
  snprintf(cmd, sizeof cmd,
           "timeout 20 %s --socket %s --cache-dir %s/c2 --log-level warning 2>&1; echo rc=$?", VXT_VORTEXD,
           d.sock, d.dir);
  vxt_run(cmd, out, sizeof out);
  cr_assert_not_null(strstr(out, "vortexd: error: another vortexd already serves"), "%s", out);
  cr_assert_null(strstr(out, "rc=0"), "%s", out);
  cr_assert_eq(vxt_daemon_stop(&d), 0);
  /* a regular file where the socket goes */
  char file[300];
  snprintf(file, sizeof file, "%s/file.sock", d.dir);
  FILE *f = fopen(file, "w");
  cr_assert_not_null(f);
  fclose(f);
  snprintf(cmd, sizeof cmd,
           "timeout 20 %s --socket %s --cache-dir %s/c2 --log-level warning 2>&1; echo rc=$?", VXT_VORTEXD,
           file, d.dir);
  vxt_run(cmd, out, sizeof out);
  cr_assert_not_null(strstr(out, "vortexd: error:"), "%s", out);
  cr_assert_not_null(strstr(out, "is not a socket"), "%s", out);
  /* few descriptors: 80 for the whole daemon, 100 clients connecting */
  char log[300], sock[300];
  snprintf(log, sizeof log, "%s/fd.log", d.dir);
  snprintf(sock, sizeof sock, "%s/fd.sock", d.dir);
  snprintf(cmd, sizeof cmd,
           "ulimit -n 80; exec %s --socket %s --cache-dir %s/c3 --workers 1 --log-level warning 2>%s",
           VXT_VORTEXD, sock, d.dir, log);
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
    _exit(127);
  }
  cr_assert_eq(vxt_daemon_wait(sock, pid), 0);
  int fds[100], n = 0;
  for (int i = 0; i < 100; i++)
    if ((fds[n] = raw_connect(sock)) >= 0) n++;
  for (int i = 0; i < n; i++)
    close(fds[i]);
  cr_assert(vxt_wait_until(serves, (void *)sock, 60000), "serving again once descriptors are free");
  kill(pid, SIGTERM);
  waitpid(pid, NULL, 0);
  size_t len;
  char *text = vxt_read_file(log, &len);
  cr_assert_not_null(text);
  cr_assert_not_null(strstr(text, "vortexd: warning: max_connections = 256 needs"), "said at start: %s",
                     text);
  cr_assert_not_null(strstr(text, "vortexd: warning: refused a connection: too many connections"),
                     "each refusal said, not dropped by the system: %s", text);
  free(text);
}
