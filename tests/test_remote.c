/*
 * test_remote.c - the shared second cache level against a real redis-server
 * (Debian's), started by each test on a private Unix socket and stopped by
 * pid: daemons sharing it, values damaged in it, the server killed or
 * hanging, read-only consumers, namespaces, expiry, the write bound.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "cache/vxk.h"
#include "cache/vxk_entry.h"
#include "cache/vxk_remote.h"
#include "client/vxc.h"
#include "lowering/vxl.h"
#include "vxt.h"

static char root[128]; /* this test's directory: redis socket, daemons */
/* what a failed test leaves running is stopped by teardown */
static pid_t children[32];
static void child_started(pid_t pid) {
  for (int i = 0; i < 32; i++)
    if (children[i] <= 0) {
      children[i] = pid;
      return;
    }
}

/* A child of children[] that a test has stopped and reaped itself: not
 * signalled again by teardown (its pid may be another process's by then). */
static void child_ended(pid_t pid) {
  for (int i = 0; i < 32; i++)
    if (children[i] == pid) children[i] = 0;
}

typedef struct {
  pid_t pid;
  int port; /* 0: the Unix socket */
  char sock[256];
} redis;

/* Whether the redis-server (redis *) answers a connection, or has exited
 * (then the caller's check fails). */
static int redis_up_or_gone(void *arg) {
  const redis *r = arg;
  redisContext *c = r->port ? redisConnect("127.0.0.1", r->port) : redisConnectUnix(r->sock);
  int up = c && !c->err;
  if (c) redisFree(c);
  return up || kill(r->pid, 0) != 0 || waitpid(r->pid, NULL, WNOHANG) != 0;
}

/* A free TCP port on 127.0.0.1 (the kernel's pick, released again). */
static int free_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t al = sizeof a;
  cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
  cr_assert_eq(getsockname(fd, (struct sockaddr *)&a, &al), 0);
  close(fd);
  return ntohs(a.sin_port);
}

/* Starts redis-server on a Unix socket in root (port 0), or on
 * 127.0.0.1:port only, and waits until it answers. */
static void redis_start_on(redis *r, int port) {
  char p[16];
  snprintf(p, sizeof p, "%d", port);
  snprintf(r->sock, sizeof r->sock, "%s/redis.sock", root);
  r->pid = fork();
  cr_assert_geq(r->pid, 0);
  if (r->pid == 0) {
    int null = open("/dev/null", O_WRONLY);
    dup2(null, 1);
    dup2(null, 2);
    if (port)
      execlp("redis-server", "redis-server", "--port", p, "--bind", "127.0.0.1", "--save", "", "--appendonly",
             "no", "--dir", root, (char *)NULL);
    else
      execlp("redis-server", "redis-server", "--port", "0", "--unixsocket", r->sock, "--unixsocketperm",
             "700", "--save", "", "--appendonly", "no", "--dir", root, (char *)NULL);
    _exit(127);
  }
  child_started(r->pid);
  r->port = port;
  cr_assert(vxt_wait_until(redis_up_or_gone, r, 60000) && waitpid(r->pid, NULL, WNOHANG) == 0,
            "redis-server did not start (installed? tests/bootstrap.sh does)");
}

static void redis_start(redis *r) { redis_start_on(r, 0); }

static void redis_kill(redis *r) {
  if (r->pid <= 0) return;
  kill(r->pid, SIGKILL);
  waitpid(r->pid, NULL, 0);
  child_ended(r->pid);
  r->pid = 0;
}

/* A command's reply from the test's own connection (hiredis). */
static redisReply *redis_cmd(const redis *r, const char *fmt, ...) {
  redisContext *c = redisConnectUnix(r->sock);
  cr_assert(c && !c->err, "connect to redis");
  va_list ap;
  va_start(ap, fmt);
  redisReply *reply = redisvCommand(c, fmt, ap);
  va_end(ap);
  redisFree(c);
  cr_assert_not_null(reply);
  return reply;
}

static long long redis_int(const redis *r, const char *fmt, const char *arg) {
  redisReply *reply = redis_cmd(r, fmt, arg);
  cr_assert_eq(reply->type, REDIS_REPLY_INTEGER, "%s", fmt);
  long long v = reply->integer;
  freeReplyObject(reply);
  return v;
}

typedef struct {
  pid_t pid;
  char dir[256], sock[300], log[300];
} daemon_t;

/* Starts a vortexd with its own socket and cache in root/name; env is a
 * NULL-terminated list of "VAR=value" settings for it (the remote_* keys). */
static void daemon_start(daemon_t *d, const char *name, const char *const *env) {
  snprintf(d->dir, sizeof d->dir, "%s/%s", root, name);
  mkdir(d->dir, 0700);
  snprintf(d->sock, sizeof d->sock, "%s/s", d->dir);
  snprintf(d->log, sizeof d->log, "%s/log", d->dir);
  char cache[300];
  snprintf(cache, sizeof cache, "%s/cache", d->dir);
  static const char *const info[] = {"--log-level", "info", NULL};
  d->pid = vxt_daemon_start_logged(d->sock, cache, d->log, 0, env, info);
  cr_assert_gt(d->pid, 0, "vortexd did not start (see %s)", d->log);
  child_started(d->pid);
}

static void daemon_stop(daemon_t *d) {
  if (d->pid <= 0) return;
  kill(d->pid, SIGTERM);
  int st = 0;
  waitpid(d->pid, &st, 0);
  child_ended(d->pid);
  d->pid = 0;
  cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "clean exit");
}

/* A kernel source; n makes distinct ones (a different constant). */
static char *kernel_source(int n, size_t *len) {
  char *s = NULL;
  int k = asprintf(&s,
                   "module attributes {gpu.container_module} {\n"
                   "  gpu.module @m {\n"
                   "    gpu.func @scale(%%x: memref<?xi32>) kernel {\n"
                   "      %%i = gpu.thread_id x\n"
                   "      %%v = memref.load %%x[%%i] : memref<?xi32>\n"
                   "      %%c = arith.constant %d : i32\n"
                   "      %%r = arith.muli %%v, %%c : i32\n"
                   "      memref.store %%r, %%x[%%i] : memref<?xi32>\n"
                   "      gpu.return\n"
                   "    }\n"
                   "  }\n"
                   "}\n",
                   n);
  cr_assert_gt(k, 0);
  *len = (size_t)k;
  return s;
}

/* Compiles kernel n through d; the reply in *r (caller clears). */
static void compile_n(const daemon_t *d, int n, vxp_response *r) {
  size_t len;
  char *src = kernel_source(n, &len);
  vxc_conn *c = NULL;
  cr_assert_eq(vxc_connect(d->sock, &c), 0);
  cr_assert_eq(vxc_compile(c, src, len, "k.mlir", NULL, r), 0);
  cr_assert_eq(r->status, VXP_STATUS_OK, "%s", r->message ? r->message : "");
  vxc_close(c);
  free(src);
}

static vxp_stats stats_of(const daemon_t *d) {
  vxc_conn *c = NULL;
  cr_assert_eq(vxc_connect(d->sock, &c), 0);
  vxp_response r;
  cr_assert_eq(vxc_stats(c, &r), 0);
  vxc_close(c);
  vxp_stats s = r.stats;
  s.remote = NULL; /* the test keeps no pointer into r */
  s.cache_error = NULL;
  static char remote[1024];
  snprintf(remote, sizeof remote, "%s", r.stats.remote ? r.stats.remote : "");
  s.remote = remote;
  vxp_response_clear(&r);
  return s;
}

static int log_count(const daemon_t *d, const char *needle) {
  size_t len = 0;
  char *text = vxt_read_file(d->log, &len);
  int n = 0;
  for (const char *p = text; p && (p = strstr(p, needle)); p++)
    n++;
  free(text);
  return n;
}

static char env_url[400];
static const char *const url_env[] = {env_url, NULL}; /* a daemon's environment: env_url */

/* Points env_url (and url_env) at rd. */
static void use_redis(const redis *rd) {
  snprintf(env_url, sizeof env_url, "VORTEXD_REMOTE_STORAGE=redis+unix://%s", rd->sock);
}

/* Starts a Redis on a private socket and daemon name sharing it. */
static void redis_and_daemon(redis *rd, daemon_t *d, const char *name) {
  redis_start(rd);
  use_redis(rd);
  daemon_start(d, name, url_env);
}

static void setup(void) {
  vxt_tmp_template(root, sizeof root, "vxt-remote-");
  cr_assert_not_null(mkdtemp(root));
}

static int child_exited(void *pid) { return waitpid(*(pid_t *)pid, NULL, WNOHANG) != 0; }

static void teardown(void) {
  /* SIGTERM first, so that nginx's master takes its workers along (a
   * SIGKILL would leave them running), then SIGKILL what is left */
  for (int i = 0; i < 32; i++)
    if (children[i] > 0 && kill(children[i], SIGTERM) == 0 &&
        !vxt_wait_until(child_exited, &children[i], 10000)) {
      kill(children[i], SIGKILL);
      waitpid(children[i], NULL, 0);
    }
  char cmd[256];
  snprintf(cmd, sizeof cmd, "rm -rf %s", root);
  (void)!system(cmd);
}

TestSuite(remote, .init = setup, .fini = teardown, .timeout = 120);

Test(remote, two_daemons_share_one_redis_the_second_compiles_nothing) {
  redis rd;
  redis_start(&rd);
  use_redis(&rd);
  const char *const *env = url_env;
  daemon_t a, b, f;
  daemon_start(&a, "a", env);
  daemon_start(&b, "b", env);
  vxp_response ra, rb;
  compile_n(&a, 7, &ra);
  cr_assert_eq(ra.cached, false);
  vxp_stats sa = stats_of(&a); /* waits for the write to the shared level */
  cr_assert_eq(sa.misses, 1);
  cr_assert_eq(sa.l2_misses, 1, "looked up there first");
  cr_assert_eq(sa.l2_writes, 1);
  cr_assert_gt(sa.l2_bytes_up, ra.object_size);

  compile_n(&b, 7, &rb);
  cr_assert_eq(rb.cached, true);
  vxp_stats sb = stats_of(&b);
  cr_assert_eq(sb.misses, 0, "the second daemon compiled nothing");
  cr_assert_eq(sb.l2_hits, 1);
  cr_assert_eq(sb.hits, 1);
  cr_assert_eq(sb.l2_writes, 0, "an entry from the shared level is not written back");
  cr_assert_str_eq(rb.key, ra.key);
  cr_assert_eq(rb.object_size, ra.object_size);
  cr_assert_eq(memcmp(rb.object, ra.object, ra.object_size), 0, "byte-identical object");
  cr_assert_eq(rb.nkernels, ra.nkernels);
  cr_assert_str_eq(rb.kernels[0].name, ra.kernels[0].name);
  cr_assert_eq(rb.kernels[0].buffer_size, ra.kernels[0].buffer_size);

  /* it is in b's own cache now: the next one is an L1 hit */
  vxp_response rb2;
  compile_n(&b, 7, &rb2);
  sb = stats_of(&b);
  cr_assert_eq(sb.hits, 2);
  cr_assert_eq(sb.l2_hits, 1, "L1 answered");

  /* a fetch by key reaches the shared level too (a runtime on a third
   * machine loading a module another one compiled) */
  daemon_start(&f, "f", env);
  vxc_conn *c = NULL;
  cr_assert_eq(vxc_connect(f.sock, &c), 0);
  vxp_response rf;
  cr_assert_eq(vxc_fetch(c, ra.key, NULL, &rf), 0);
  cr_assert_eq(rf.status, VXP_STATUS_OK, "%s", rf.message ? rf.message : "");
  cr_assert_eq(memcmp(rf.object, ra.object, ra.object_size), 0);
  vxp_response_clear(&rf);
  vxp_stats before = stats_of(&f);
  cr_assert_eq(vxc_fetch(c, ra.key, "no_such_kernel", &rf), 0);
  cr_assert_eq(rf.status, VXP_STATUS_NOT_FOUND);
  cr_assert_not_null(strstr(rf.message, "no such kernel"), "%s", rf.message);
  vxp_response_clear(&rf);
  vxp_stats after = stats_of(&f);
  cr_assert_eq(after.l2_bytes_down, before.l2_bytes_down,
               "a kernel missing from an entry here is not looked for under the same key there");
  char absent[VXK_KEY_HEX + 1];
  memset(absent, 'a', VXK_KEY_HEX);
  absent[VXK_KEY_HEX] = 0;
  cr_assert_eq(vxc_fetch(c, absent, NULL, &rf), 0);
  cr_assert_eq(rf.status, VXP_STATUS_NOT_FOUND);
  vxp_response_clear(&rf);
  vxc_close(c);
  vxp_stats sf = stats_of(&f);
  cr_assert_eq(sf.l2_hits, 1);
  cr_assert_eq(sf.misses, 0);
  cr_assert_not_null(strstr(sf.remote, ", up"), "%s", sf.remote);

  /* what vxc shows of it, as a table and as JSON */
  char cmd[1024], out[8192];
  snprintf(cmd, sizeof cmd, "%s --no-spawn --socket %s stats", VXT_VXC, b.sock);
  cr_assert_eq(vxt_run(cmd, out, sizeof out), 0, "%s", out);
  cr_assert_not_null(strstr(out, "L1 hits         1\n"), "%s", out);
  cr_assert_not_null(strstr(out, "L2 hits         1\n"), "%s", out);
  cr_assert_not_null(strstr(out, "redis+unix://"), "%s", out);
  snprintf(cmd, sizeof cmd, "%s --no-spawn --socket %s stats --json", VXT_VXC, b.sock);
  cr_assert_eq(vxt_run(cmd, out, sizeof out), 0, "%s", out);
  cr_assert_not_null(strstr(out, "\"l1_hits\":1,"), "%s", out);
  cr_assert_not_null(strstr(out, "\"remote\":{\"storage\":"), "%s", out);
  cr_assert_not_null(strstr(out, "\"hits\":1,\"misses\":0,"), "%s", out);
  vxp_response_clear(&ra);
  vxp_response_clear(&rb);
  vxp_response_clear(&rb2);
  daemon_stop(&a);
  daemon_stop(&b);
  daemon_stop(&f);
  redis_kill(&rd);
}

/* Compiles src (len bytes) as many.mlir through d with cache mode mode;
 * the reply in *r (caller clears). */
static void compile_text(const daemon_t *d, const char *src, size_t len, vxp_cache_mode mode,
                         vxp_response *r) {
  vxc_conn *c = NULL;
  cr_assert_eq(vxc_connect(d->sock, &c), 0);
  vxc_compile_options o = {.opt_level = 2, .cache = mode};
  cr_assert_eq(vxc_compile(c, src, len, "many.mlir", &o, r), 0);
  cr_assert_eq(r->status, VXP_STATUS_OK, "%s", r->message ? r->message : "");
  vxc_close(c);
}

/* The pieces of a module are shared entries: a daemon compiling the
 * module with one kernel edited takes the others' pieces another daemon
 * compiled from Redis, compiles that kernel's piece alone, and gets the
 * bytes of a whole compile of the edited module. */
Test(remote, a_second_daemon_takes_the_pieces_of_a_module_from_redis) {
  redis rd;
  daemon_t a, b;
  redis_and_daemon(&rd, &a, "a");
  daemon_start(&b, "b", url_env);
  size_t len;
  unsigned n = 100, pieces = (n + VXL_PIECE_KERNELS - 1) / VXL_PIECE_KERNELS;
  char *src = vxt_many_kernels(n, &len);
  vxp_response ra, rb, rw;
  compile_text(&a, src, len, VXP_CACHE_USE, &ra);
  vxp_stats sa = stats_of(&a); /* waits for the writes to the shared level */
  cr_assert_eq(sa.l2_writes, 1 + pieces, "the module and its %u pieces", pieces);

  char *at = strstr(src, "%k = arith.constant 50.0 : f32");
  cr_assert_not_null(at);
  memcpy(at + strlen("%k = arith.constant "), "51", 2); /* kernel 50's constant */
  compile_text(&b, src, len, VXP_CACHE_USE, &rb);
  cr_assert_not(rb.cached);
  vxp_stats sb = stats_of(&b);
  cr_assert_eq(sb.misses, 1);
  cr_assert_eq(sb.l2_hits, pieces - 1, "every piece but the edited kernel's from Redis");
  cr_assert_eq(sb.l2_writes, 2, "the module and the piece compiled; the pieces read are not written back");

  compile_text(&a, src, len, VXP_CACHE_RECACHE, &rw); /* whole: no piece read */
  cr_assert_str_eq(rw.key, rb.key);
  cr_assert_eq(rw.object_size, rb.object_size);
  cr_assert_eq(memcmp(rw.object, rb.object, rb.object_size), 0, "from shared pieces: the same bytes");
  cr_assert_eq(rw.nkernels, n);
  for (uint32_t i = 0; i < n; i++)
    cr_assert_str_eq(rw.kernels[i].entry, rb.kernels[i].entry);
  vxp_response_clear(&ra);
  vxp_response_clear(&rb);
  vxp_response_clear(&rw);
  free(src);
  daemon_stop(&a);
  daemon_stop(&b);
  redis_kill(&rd);
}

/* Rewrites the value under the only key of the namespace with fn. */
static void damage_values(const redis *rd, void (*fn)(redisContext *, const char *key, redisReply *value)) {
  redisReply *keys = redis_cmd(rd, "KEYS vortexd:v%d:*", VXK_REMOTE_FORMAT);
  cr_assert_eq(keys->type, REDIS_REPLY_ARRAY);
  cr_assert_eq(keys->elements, 1);
  redisContext *c = redisConnectUnix(rd->sock);
  redisReply *v = redisCommand(c, "GET %s", keys->element[0]->str);
  cr_assert_eq(v->type, REDIS_REPLY_STRING);
  fn(c, keys->element[0]->str, v);
  freeReplyObject(v);
  redisFree(c);
  freeReplyObject(keys);
}

static void flip_object_byte(redisContext *c, const char *key, redisReply *v) {
  v->str[v->len / 2] ^= 0x10; /* inside the object */
  freeReplyObject(redisCommand(c, "SET %s %b", key, v->str, v->len));
}

static void truncate_value(redisContext *c, const char *key, redisReply *v) {
  freeReplyObject(redisCommand(c, "SET %s %b", key, v->str, v->len - 7));
}

static void garbage_value(redisContext *c, const char *key, redisReply *v) {
  (void)v;
  freeReplyObject(redisCommand(c, "SET %s %s", key, "not an entry at all"));
}

static void list_value(redisContext *c, const char *key, redisReply *v) {
  (void)v;
  freeReplyObject(redisCommand(c, "DEL %s", key));
  freeReplyObject(redisCommand(c, "RPUSH %s a b", key));
}

/* Another daemon's value for the same key, moved under this key. */
static void other_key_value(redisContext *c, const char *key, redisReply *v) {
  (void)v;
  redisReply *keys = redisCommand(c, "KEYS vortexd:v%d:*", VXK_REMOTE_FORMAT);
  for (size_t i = 0; i < keys->elements; i++)
    if (strcmp(keys->element[i]->str, key) != 0)
      freeReplyObject(redisCommand(c, "COPY %s %s REPLACE", keys->element[i]->str, key));
  freeReplyObject(keys);
}

Test(remote, the_last_shared_writes_are_counted_when_the_daemon_stops) {
  redis rd;
  daemon_t a;
  redis_and_daemon(&rd, &a, "a");
  vxp_response r;
  for (int n = 0; n < 3; n++) { /* stopped at once: the writes are still queued */
    compile_n(&a, 300 + n, &r);
    vxp_response_clear(&r);
  }
  daemon_stop(&a);
  cr_assert_eq(redis_int(&rd, "DBSIZE", NULL), 3, "every entry was shared before the daemon ended");
  daemon_start(&a, "a", url_env); /* the same cache: its counters persisted */
  vxp_stats s = stats_of(&a);
  cr_assert_eq(s.misses, 3);
  cr_assert_eq(s.l2_misses, 3);
  cr_assert_eq(s.l2_writes, 3, "writes done while stopping are counted too");
  cr_assert_gt(s.l2_bytes_up, 3000);
  daemon_stop(&a);
  redis_kill(&rd);
}

Test(remote, a_damaged_value_is_detected_recompiled_and_replaced_never_served) {
  redis rd;
  redis_start(&rd);
  use_redis(&rd);
  const char *const *env = url_env;
  void (*damages[])(redisContext *, const char *, redisReply *) = {flip_object_byte, truncate_value,
                                                                   garbage_value, list_value};
  const char *names[] = {"flipped byte", "truncated", "garbage", "a list"};
  for (int i = 0; i < 4; i++) {
    freeReplyObject(redis_cmd(&rd, "FLUSHALL"));
    char an[16], bn[16];
    snprintf(an, sizeof an, "a%d", i);
    snprintf(bn, sizeof bn, "b%d", i);
    daemon_t a, b;
    daemon_start(&a, an, env);
    vxp_response ra, rb;
    compile_n(&a, 11, &ra);
    (void)stats_of(&a); /* written */
    damage_values(&rd, damages[i]);
    daemon_start(&b, bn, env);
    compile_n(&b, 11, &rb);
    cr_assert_eq(rb.cached, false, "%s: compiled, not served", names[i]);
    cr_assert_eq(memcmp(rb.object, ra.object, ra.object_size), 0, "%s", names[i]);
    vxp_stats sb = stats_of(&b);
    cr_assert_eq(sb.misses, 1, "%s", names[i]);
    cr_assert_eq(sb.l2_hits, 0, "%s", names[i]);
    cr_assert_eq(sb.l2_errors, 1, "%s", names[i]);
    cr_assert_eq(sb.l2_corrupt, i < 3 ? 1 : 0, "%s: a value of another type is an error, not a bad checksum",
                 names[i]);
    cr_assert_eq(sb.l2_writes, 1, "%s: the good entry replaced it", names[i]);
    /* a third daemon now gets the repaired value */
    daemon_t c;
    char cn[16];
    snprintf(cn, sizeof cn, "c%d", i);
    daemon_start(&c, cn, env);
    vxp_response rc;
    compile_n(&c, 11, &rc);
    cr_assert_eq(rc.cached, true, "%s", names[i]);
    cr_assert_eq(memcmp(rc.object, ra.object, ra.object_size), 0);
    vxp_response_clear(&ra);
    vxp_response_clear(&rb);
    vxp_response_clear(&rc);
    daemon_stop(&a);
    daemon_stop(&b);
    daemon_stop(&c);
  }
  /* a valid value of another key, copied under this one: its checksum is
   * over its own key, so it is refused */
  freeReplyObject(redis_cmd(&rd, "FLUSHALL"));
  daemon_t a, b;
  daemon_start(&a, "ka", env);
  vxp_response r1, r2, r3;
  compile_n(&a, 1, &r1);
  compile_n(&a, 2, &r2);
  (void)stats_of(&a);
  redisContext *c = redisConnectUnix(rd.sock);
  char k1[200];
  snprintf(k1, sizeof k1, "vortexd:v%d:%s", VXK_REMOTE_FORMAT, r1.key);
  redisReply *v = redisCommand(c, "GET %s", k1);
  other_key_value(c, k1, v);
  freeReplyObject(v);
  redisFree(c);
  daemon_start(&b, "kb", env);
  compile_n(&b, 1, &r3);
  cr_assert_eq(r3.cached, false);
  cr_assert_eq(memcmp(r3.object, r1.object, r1.object_size), 0);
  cr_assert_eq(stats_of(&b).l2_corrupt, 1);
  vxp_response_clear(&r1);
  vxp_response_clear(&r2);
  vxp_response_clear(&r3);
  daemon_stop(&a);
  daemon_stop(&b);
  redis_kill(&rd);
}

/* A new kernel compiled through d (a miss: looked up, compiled, written)
 * until its entry reaches Redis: polled by vxt_wait_until. */
typedef struct {
  const daemon_t *d;
  const redis *rd;
  int n; /* the next kernel's number */
} reconnect_poll;

static int written_again(void *arg) {
  reconnect_poll *p = arg;
  vxp_response r;
  compile_n(p->d, p->n++, &r);
  vxp_response_clear(&r);
  (void)stats_of(p->d); /* waits for the write */
  /* values, not the leases taken meanwhile */
  redisReply *keys = redis_cmd(p->rd, "KEYS vortexd:v%d:*", VXK_REMOTE_FORMAT);
  size_t n = keys->type == REDIS_REPLY_ARRAY ? keys->elements : 0;
  freeReplyObject(keys);
  return n >= 1;
}

/* A compile (a miss: a lookup and a write), then whether the daemon says
 * its shared level is up. */
static int up_again(void *arg) {
  reconnect_poll *p = arg;
  vxp_response r;
  compile_n(p->d, p->n++, &r);
  vxp_response_clear(&r);
  return strstr(stats_of(p->d).remote, ", up") != NULL;
}

Test(remote, redis_killed_mid_run_compiles_go_on_logged_once_and_it_reconnects) {
  redis rd;
  daemon_t a;
  redis_and_daemon(&rd, &a, "a");
  vxp_response r;
  compile_n(&a, 1, &r);
  vxp_response_clear(&r);
  cr_assert_eq(stats_of(&a).l2_writes, 1);
  redis_kill(&rd);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (int n = 2; n < 12; n++) { /* every compile succeeds */
    compile_n(&a, n, &r);
    cr_assert_eq(r.cached, false);
    vxp_response_clear(&r);
  }
  vxp_stats s = stats_of(&a);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  cr_assert_eq(s.misses, 11);
  cr_assert_geq(s.l2_errors + s.l2_timeouts, 1);
  /* One per request would be 10 lookups + 10 writes. A side backing off
   * (1 s, doubling) fails at most at 0, 1, 3, 7, ... s: k times in T
   * seconds needs T >= 2^(k-1) - 1. The bound grows with the time the
   * compiles took, so a slow machine only loosens it. */
  double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
  unsigned per_side = 1;
  while ((double)((1u << per_side) - 1) <= secs)
    per_side++;
  cr_assert_leq(s.l2_errors + s.l2_timeouts, 2 * per_side,
                "backing off: not one failure per request (%.1f s of compiles)", secs);
  cr_assert_not_null(strstr(s.remote, "down"), "%s", s.remote);
  cr_assert_eq(log_count(&a, "failed"), log_count(&a, "reads failed") + log_count(&a, "writes failed"));
  cr_assert_leq(log_count(&a, "reads failed"), 1, "logged once, not per request");
  cr_assert_leq(log_count(&a, "writes failed"), 1, "logged once, not per request");
  cr_assert_geq(log_count(&a, "failed"), 1);
  /* back: once the backoff (1 s, 2 s after a retry failed) has passed, the
   * next request reconnects and its entry is written */
  redis_start(&rd);
  compile_n(&a, 1, &r); /* an L1 hit: needs no lookup */
  vxp_response_clear(&r);
  reconnect_poll poll = {&a, &rd, 100};
  cr_assert(vxt_wait_until(written_again, &poll, 120000), "written again once reachable");
  /* the reader's and the writer's connections come back each at its next
   * use: one may still fail on its stale socket after the other wrote */
  cr_assert(vxt_wait_until(up_again, &poll, 120000), "up again once reachable: %s", stats_of(&a).remote);
  cr_assert_geq(log_count(&a, "work again"), 1);
  daemon_stop(&a);
  redis_kill(&rd);
}

/* A "Redis" that accepts connections and never answers, or answers junk. */
typedef struct {
  int fd;
  int junk;
} fake_server;

/* Mode 3, one connection: every GETRANGE answered "not there", every SET
 * left unanswered (a server that accepts reads and stalls writes). */
static volatile int fake_sets_seen; /* SET commands mode 3 received */

static void *fake_reads_only(void *arg) {
  int c = (int)(intptr_t)arg;
  char buf[65536];
  ssize_t n;
  while ((n = read(c, buf, sizeof buf)) > 0) {
    for (const char *p = buf; (p = memmem(p, (size_t)(buf + n - p), "GETRANGE", 8)) != NULL; p += 8)
      (void)!write(c, "$0\r\n\r\n", 6);
    if (memmem(buf, (size_t)n, "\r\nSET\r\n", 7)) __atomic_add_fetch(&fake_sets_seen, 1, __ATOMIC_SEQ_CST);
  }
  return NULL;
}

static int a_set_seen(void *unused) {
  (void)unused;
  return __atomic_load_n(&fake_sets_seen, __ATOMIC_SEQ_CST) >= 1;
}

static void *fake_serve(void *arg) {
  fake_server *f = arg;
  for (;;) {
    int c = accept(f->fd, NULL, NULL);
    if (c < 0) return NULL;
    char buf[4096];
    if (f->junk == 3) {
      pthread_t t;
      pthread_create(&t, NULL, fake_reads_only, (void *)(intptr_t)c);
      pthread_detach(t);
    } else if (f->junk == 1) {
      (void)!read(c, buf, sizeof buf);
      (void)!write(c, "$-7\r\n!!junk\r\n", 13);
    } else if (f->junk == 2) { /* an array hiredis would allocate 16 GiB for */
      (void)!read(c, buf, sizeof buf);
      (void)!write(c, "*2147483647\r\n", 14);
    }
    /* else: keep it open, read nothing, answer nothing */
  }
}

static void fake_start(fake_server *f, const char *path, int junk) {
  f->junk = junk;
  f->fd = socket(AF_UNIX, SOCK_STREAM, 0);
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  cr_assert_lt(strlen(path), sizeof a.sun_path);
  memcpy(a.sun_path, path, strlen(path) + 1);
  cr_assert_eq(bind(f->fd, (struct sockaddr *)&a, sizeof a), 0);
  cr_assert_eq(listen(f->fd, 64), 0);
  pthread_t t;
  pthread_create(&t, NULL, fake_serve, f);
  pthread_detach(t);
}

Test(remote, a_hanging_or_garbage_server_never_stalls_or_fails_a_compile) {
  for (int junk = 0; junk < 3; junk++) {
    char path[300];
    snprintf(path, sizeof path, "%s/fake%d.sock", root, junk);
    fake_server f;
    fake_start(&f, path, junk);
    static char url[400];
    snprintf(url, sizeof url, "VORTEXD_REMOTE_STORAGE=redis+unix://%s", path);
    const char *env[] = {url, "VORTEXD_REMOTE_TIMEOUT=200", NULL};
    daemon_t a;
    const char *names[] = {"hang", "junk", "huge-array"};
    daemon_start(&a, names[junk], env);
    for (int n = 1; n <= 6; n++) {
      vxp_response r;
      compile_n(&a, n, &r);
      cr_assert_eq(r.cached, false);
      vxp_response_clear(&r);
    }
    vxp_stats s = stats_of(&a);
    cr_assert_eq(s.misses, 6);
    if (junk) {
      cr_assert_geq(s.l2_errors, 1);
      cr_assert_eq(s.l2_timeouts, 0);
    } else {
      cr_assert_geq(s.l2_timeouts, 1, "%s", s.remote);
    }
    /* per request it would be 6 lookups + 6 writes; each side fails once,
     * and at most once more should a slow machine outlast the 1 s backoff */
    cr_assert_leq(s.l2_errors + s.l2_timeouts, 4, "backed off after the first failure of each side");
    cr_assert_eq(s.l2_hits, 0);
    daemon_stop(&a);
  }
}

/* Writes to the shared level hang for a minute each; the test's own limit
 * is 30 s, so it can only pass if no reply waits for a write. */
Test(remote, no_reply_waits_for_its_shared_write, .timeout = 30) {
  char path[300];
  snprintf(path, sizeof path, "%s/stalled-writes.sock", root);
  fake_server f;
  fake_start(&f, path, 3);
  static char url[400];
  snprintf(url, sizeof url, "VORTEXD_REMOTE_STORAGE=redis+unix://%s", path);
  const char *env[] = {url, "VORTEXD_REMOTE_TIMEOUT=60000", NULL};
  daemon_t a;
  daemon_start(&a, "w", env);
  for (int n = 1; n <= 3; n++) {
    vxp_response r;
    compile_n(&a, n, &r); /* looked up (a miss), compiled, answered */
    cr_assert_eq(r.cached, false);
    vxp_response_clear(&r);
  }
  /* a write was sent and is still unanswered (so the replies above came
   * while it hung); not stopped cleanly: teardown kills the daemon */
  cr_assert(vxt_wait_until(a_set_seen, NULL, 60000), "a write reached the server");
}

/* A TCP listener whose accept queue is full: a connect to it hangs (the
 * kernel drops the SYNs) until the client gives up. */
static int full_listener(int *port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t al = sizeof a;
  cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
  cr_assert_eq(listen(fd, 0), 0);
  cr_assert_eq(getsockname(fd, (struct sockaddr *)&a, &al), 0);
  *port = ntohs(a.sin_port);
  int first = -1;
  for (int i = 0; i < 4; i++) { /* fill the queue, never accepted */
    int c = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    (void)!connect(c, (struct sockaddr *)&a, sizeof a);
    if (i == 0) first = c;
  }
  /* the first one established is the queue's one place (backlog 0) taken;
   * the others' SYNs are dropped */
  struct pollfd pf = {.fd = first, .events = POLLOUT};
  cr_assert_eq(poll(&pf, 1, 60000), 1, "a connection fills the accept queue");
  return fd;
}

/* Without the connect deadline a connect here waits a minute and more
 * for TCP's retries; the test's limit is 30 s. */
Test(remote, a_connection_that_hangs_gives_up_at_the_connect_timeout, .timeout = 30) {
  int port;
  (void)full_listener(&port);
  static char url[128];
  snprintf(url, sizeof url, "VORTEXD_REMOTE_STORAGE=redis://127.0.0.1:%d", port);
  const char *env[] = {url, "VORTEXD_REMOTE_CONNECT_TIMEOUT=300", "VORTEXD_REMOTE_TIMEOUT=60000", NULL};
  daemon_t a;
  daemon_start(&a, "c", env);
  vxp_response r;
  compile_n(&a, 1, &r);
  cr_assert_eq(r.cached, false);
  vxp_response_clear(&r);
  vxp_stats s = stats_of(&a);
  cr_assert_eq(s.misses, 1);
  cr_assert_geq(s.l2_timeouts, 1, "%s", s.remote);
  cr_assert_not_null(strstr(s.remote, "connect: timed out"), "%s", s.remote);
  daemon_stop(&a);
}

Test(remote, read_only_mode_reads_and_never_writes) {
  redis rd;
  redis_start(&rd);
  use_redis(&rd);
  const char *ro_env[] = {env_url, "VORTEXD_REMOTE_READ_ONLY=true", NULL};
  const char *rw_env[] = {env_url, NULL};
  daemon_t ro, rw;
  daemon_start(&ro, "ro", ro_env);
  vxp_response r;
  for (int n = 1; n <= 3; n++) {
    compile_n(&ro, n, &r);
    vxp_response_clear(&r);
  }
  vxp_stats s = stats_of(&ro);
  cr_assert_eq(s.misses, 3);
  cr_assert_eq(s.l2_misses, 3);
  cr_assert_eq(s.l2_writes, 0);
  cr_assert_eq(s.l2_dropped, 0);
  cr_assert_not_null(strstr(s.remote, "read-only"), "%s", s.remote);
  cr_assert_eq(redis_int(&rd, "DBSIZE", NULL), 0, "nothing written");
  /* what a writer shares, the read-only consumer gets */
  daemon_start(&rw, "rw", rw_env);
  compile_n(&rw, 50, &r);
  vxp_response_clear(&r);
  (void)stats_of(&rw);
  compile_n(&ro, 50, &r);
  cr_assert_eq(r.cached, true);
  vxp_response_clear(&r);
  cr_assert_eq(stats_of(&ro).l2_hits, 1);
  cr_assert_eq(redis_int(&rd, "DBSIZE", NULL), 1);
  daemon_stop(&ro);
  daemon_stop(&rw);
  redis_kill(&rd);
}

Test(remote, namespaces_do_not_mix_and_ttl_and_write_bound_apply) {
  redis rd;
  redis_start(&rd);
  use_redis(&rd);
  const char *env_a[] = {env_url, "VORTEXD_REMOTE_PREFIX=farm-a", "VORTEXD_REMOTE_TTL=600", NULL};
  const char *env_b[] = {env_url, "VORTEXD_REMOTE_PREFIX=farm-b", NULL};
  const char *env_a2[] = {env_url, "VORTEXD_REMOTE_PREFIX=farm-a", NULL};
  daemon_t a, b, a2;
  daemon_start(&a, "a", env_a);
  daemon_start(&b, "b", env_b);
  daemon_start(&a2, "a2", env_a2);
  vxp_response r;
  compile_n(&a, 5, &r);
  char key[VXK_KEY_HEX + 1];
  snprintf(key, sizeof key, "%s", r.key);
  vxp_response_clear(&r);
  (void)stats_of(&a);
  compile_n(&b, 5, &r);
  cr_assert_eq(r.cached, false, "another namespace: not shared");
  vxp_response_clear(&r);
  (void)stats_of(&b);
  compile_n(&a2, 5, &r);
  cr_assert_eq(r.cached, true, "the same namespace: shared");
  vxp_response_clear(&r);
  char ka[200], kb[200];
  snprintf(ka, sizeof ka, "farm-a:v%d:%s", VXK_REMOTE_FORMAT, key);
  snprintf(kb, sizeof kb, "farm-b:v%d:%s", VXK_REMOTE_FORMAT, key);
  cr_assert_eq(redis_int(&rd, "EXISTS %s", ka), 1);
  cr_assert_eq(redis_int(&rd, "EXISTS %s", kb), 1);
  cr_assert_eq(redis_int(&rd, "DBSIZE", NULL), 2);
  long long ttl = redis_int(&rd, "TTL %s", ka);
  cr_assert(ttl > 0 && ttl <= 600, "remote_ttl applied: %lld", ttl);
  cr_assert_eq(redis_int(&rd, "TTL %s", kb), -1, "no expiry by default");
  daemon_stop(&a);
  daemon_stop(&b);
  daemon_stop(&a2);

  /* a write queue of one byte holds nothing: every write is dropped */
  const char *env_q[] = {env_url, "VORTEXD_REMOTE_PREFIX=tiny", "VORTEXD_REMOTE_WRITE_QUEUE=1", NULL};
  daemon_t q;
  daemon_start(&q, "q", env_q);
  compile_n(&q, 6, &r);
  vxp_response_clear(&r);
  vxp_stats s = stats_of(&q);
  cr_assert_eq(s.l2_dropped, 1);
  cr_assert_eq(s.l2_writes, 0);
  daemon_stop(&q);
  redis_kill(&rd);
}

Test(remote, a_password_is_used_and_never_shown) {
  redis rd;
  redis_start(&rd);
  freeReplyObject(redis_cmd(&rd, "CONFIG SET requirepass %s", "s3cret-pw"));
  static char good[400], bad[400];
  snprintf(good, sizeof good, "VORTEXD_REMOTE_STORAGE=redis+unix://:s3cret-pw@%s?db=3", rd.sock);
  snprintf(bad, sizeof bad, "VORTEXD_REMOTE_STORAGE=redis+unix://:wrong-pw@%s", rd.sock);
  const char *env_good[] = {good, NULL}, *env_bad[] = {bad, NULL};
  daemon_t a, b;
  daemon_start(&a, "a", env_good);
  daemon_start(&b, "b", env_bad);
  /* before any exchange, nothing says the wrong password works: not "up" */
  vxp_stats s0 = stats_of(&b);
  cr_assert_not_null(strstr(s0.remote, ", not contacted yet"), "%s", s0.remote);
  vxp_response r;
  compile_n(&a, 9, &r);
  vxp_response_clear(&r);
  vxp_stats s = stats_of(&a);
  cr_assert_eq(s.l2_writes, 1);
  cr_assert_null(strstr(s.remote, "s3cret"), "%s", s.remote);
  cr_assert_not_null(strstr(s.remote, ":***@"), "%s", s.remote);
  compile_n(&b, 9, &r); /* refused by AUTH: compiled here all the same */
  cr_assert_eq(r.cached, false);
  vxp_response_clear(&r);
  s = stats_of(&b);
  cr_assert_geq(s.l2_errors, 1);
  cr_assert_not_null(strstr(s.remote, ", down: "), "once tried: %s", s.remote);
  cr_assert_eq(log_count(&a, "s3cret"), 0);
  cr_assert_eq(log_count(&b, "wrong-pw"), 0);
  cr_assert_geq(log_count(&b, "AUTH"), 1, "the failure is named");
  /* the value went to database 3 */
  redisContext *c = redisConnectUnix(rd.sock);
  freeReplyObject(redisCommand(c, "AUTH s3cret-pw"));
  freeReplyObject(redisCommand(c, "SELECT 3"));
  redisReply *n = redisCommand(c, "DBSIZE");
  cr_assert_eq(n->integer, 1);
  freeReplyObject(n);
  redisFree(c);
  daemon_stop(&a);
  daemon_stop(&b);
  redis_kill(&rd);
}

Test(remote, a_bad_remote_setting_stops_the_daemon_at_start_naming_it) {
  char out[4096];
  const char *cases[][2] = {
      {"VORTEXD_REMOTE_STORAGE='http://u:hunter2@h'", "remote_storage"},
      {"VORTEXD_REMOTE_STORAGE=redis://h VORTEXD_REMOTE_PREFIX='a b'", "remote_prefix"},
      {"VORTEXD_REMOTE_STORAGE=redis://h VORTEXD_REMOTE_READ_ONLY=perhaps", "remote_read_only"},
      {"VORTEXD_REMOTE_STORAGE=redis://h VORTEXD_REMOTE_TIMEOUT=0", "remote_timeout"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s %s --socket %s/s%zu --cache-dir %s/c 2>&1; echo rc=$?", cases[i][0],
             VXT_VORTEXD, root, i, root);
    vxt_run(cmd, out, sizeof out);
    cr_assert_not_null(strstr(out, cases[i][1]), "%s", out);
    cr_assert_not_null(strstr(out, "rc=78"), "%s", out);
    cr_assert_null(strstr(out, "hunter2"), "%s", out);
  }
  /* `vxc config` shows where the storage is, never its password */
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "VORTEXD_REMOTE_STORAGE=redis://ci:hunter2@cache.farm:6380/2 %s config --json",
           VXT_VXC);
  cr_assert_eq(vxt_run(cmd, out, sizeof out), 0, "%s", out);
  cr_assert_not_null(strstr(out, "redis://ci:***@cache.farm:6380/2"), "%s", out);
  cr_assert_null(strstr(out, "hunter2"), "%s", out);
}

Test(remote, a_tcp_url_with_a_database_number_reaches_that_database) {
  int port = free_port();
  redis rd;
  redis_start_on(&rd, port);
  static char url[128];
  snprintf(url, sizeof url, "VORTEXD_REMOTE_STORAGE=redis://127.0.0.1:%d/2", port);
  const char *env[] = {url, NULL};
  daemon_t a, b;
  daemon_start(&a, "a", env);
  daemon_start(&b, "b", env);
  vxp_response r;
  compile_n(&a, 3, &r);
  vxp_response_clear(&r);
  cr_assert_eq(stats_of(&a).l2_writes, 1);
  compile_n(&b, 3, &r);
  cr_assert_eq(r.cached, true);
  vxp_response_clear(&r);
  redisContext *c = redisConnect("127.0.0.1", port);
  redisReply *n = redisCommand(c, "DBSIZE");
  cr_assert_eq(n->integer, 0, "nothing in database 0");
  freeReplyObject(n);
  freeReplyObject(redisCommand(c, "SELECT 2"));
  n = redisCommand(c, "DBSIZE");
  cr_assert_eq(n->integer, 1);
  freeReplyObject(n);
  redisFree(c);
  daemon_stop(&a);
  daemon_stop(&b);
  redis_kill(&rd);
  /* nothing listening there any more: refused at once, compiled */
  daemon_start(&a, "c", env);
  compile_n(&a, 4, &r);
  vxp_response_clear(&r);
  vxp_stats s = stats_of(&a);
  cr_assert_eq(s.misses, 1);
  cr_assert_geq(s.l2_errors, 1);
  cr_assert_not_null(strstr(s.remote, "down"), "%s", s.remote);
  daemon_stop(&a);
}

/* ---- signed entries ---- */

/* Writes a new Ed25519 key pair as PEM: the private key to dir/name.key
 * (mode 0600), the public key to dir/name.pub. */
static void make_key_pair(const char *dir, const char *name) {
  EVP_PKEY *k = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
  cr_assert_not_null(k);
  char path[400];
  snprintf(path, sizeof path, "%s/%s.key", dir, name);
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
  FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
  cr_assert_not_null(f);
  cr_assert_eq(PEM_write_PrivateKey(f, k, NULL, NULL, 0, NULL, NULL), 1);
  fclose(f);
  snprintf(path, sizeof path, "%s/%s.pub", dir, name);
  f = fopen(path, "w");
  cr_assert_not_null(f);
  cr_assert_eq(PEM_write_PUBKEY(f, k), 1);
  fclose(f);
  EVP_PKEY_free(k);
}

/* The value Redis holds for the cache key of reply r; malloc()ed. */
static uint8_t *value_of(const redis *rd, const vxp_response *r, size_t *len) {
  redisReply *v = redis_cmd(rd, "GET vortexd:v%d:%s", VXK_REMOTE_FORMAT, r->key);
  cr_assert_eq(v->type, REDIS_REPLY_STRING);
  uint8_t *p = malloc(v->len);
  memcpy(p, v->str, v->len);
  *len = v->len;
  freeReplyObject(v);
  return p;
}

/* A farm whose writers sign: a consumer holding only the public key uses
 * signed entries, and refuses (counts, logs) unsigned ones, ones signed by
 * another key and forged ones, compiling those itself. */
Test(remote, only_entries_signed_by_a_trusted_key_are_used) {
  redis rd;
  redis_start(&rd);
  use_redis(&rd);
  make_key_pair(root, "farm");
  make_key_pair(root, "rogue");
  char signer[500], rogue[500], trusted[500], url[400];
  snprintf(url, sizeof url, "%s", env_url);
  snprintf(signer, sizeof signer, "VORTEXD_REMOTE_SIGNING_KEY=%s/farm.key", root);
  snprintf(rogue, sizeof rogue, "VORTEXD_REMOTE_SIGNING_KEY=%s/rogue.key", root);
  snprintf(trusted, sizeof trusted, "VORTEXD_REMOTE_TRUSTED_KEYS=%s/farm.pub", root);
  const char *writer_env[] = {url, signer, NULL}, *plain_env[] = {url, NULL},
             *rogue_env[] = {url, rogue, NULL};
  const char *consumer_env[] = {url, trusted, "VORTEXD_REMOTE_READ_ONLY=true", NULL};
  daemon_t w, u, g, c;
  daemon_start(&w, "writer", writer_env);
  daemon_start(&u, "unsigned", plain_env);
  daemon_start(&g, "rogue", rogue_env);
  daemon_start(&c, "consumer", consumer_env);
  vxp_response signed_r, unsigned_r, rogue_r, forged_r, got;
  compile_n(&w, 41, &signed_r);
  compile_n(&u, 42, &unsigned_r);
  compile_n(&g, 43, &rogue_r);
  compile_n(&w, 44, &forged_r);
  (void)stats_of(&w), (void)stats_of(&u), (void)stats_of(&g); /* all written */
  /* forged: another object under entry 44's key, with a checksum to match
   * and the writer's key id and signature of the real entry */
  size_t len;
  uint8_t *real = value_of(&rd, &forged_r, &len);
  cr_assert(len == forged_r.entry_size && memcmp(real, forged_r.entry, len) == 0,
            "Redis holds the very bytes the client got");
  vxp_entry_view e, p;
  cr_assert_eq(vxk_entry_check(forged_r.key, real, len, NULL, &e), VXK_OK, "a signed entry is whole");
  cr_assert_not_null(e.key_id, "and signed");
  uint8_t *object = malloc(e.object_size);
  memcpy(object, e.object, e.object_size);
  object[e.object_size / 2] ^= 0x40;
  char options[VXP_ENTRY_OPTIONS_MAX + 1];
  snprintf(options, sizeof options, "%.*s", (int)e.options_len, e.options);
  uint8_t *planted = NULL, *forged = NULL;
  size_t plen = 0, flen = 0;
  cr_assert_eq(vxk_entry_encode(forged_r.key, options, object, e.object_size, NULL, 0, e.kernels, e.nkernels,
                                NULL, &planted, &plen),
               VXK_OK);
  cr_assert_eq(vxk_entry_check(forged_r.key, planted, plen, NULL, &p), VXK_OK);
  /* the planted body and its checksum, with the real entry's key id and
   * signature */
  cr_assert_eq(vxp_entry_seal(p.body, p.body_size, p.checksum, e.key_id, e.signature, &forged, &flen),
               VXP_OK);
  freeReplyObject(redis_cmd(&rd, "SET vortexd:v%d:%s %b", VXK_REMOTE_FORMAT, forged_r.key, forged, flen));
  vxp_entry_view_clear(&p);
  vxp_entry_view_clear(&e);
  free(forged), free(planted), free(real), free(object);

  compile_n(&c, 41, &got);
  cr_assert(got.cached, "a signed entry is used");
  cr_assert_eq(memcmp(got.object, signed_r.object, signed_r.object_size), 0);
  vxp_response_clear(&got);
  const vxp_response *refused[] = {&unsigned_r, &rogue_r, &forged_r};
  const char *why[] = {"unsigned", "signed by another key", "forged"};
  for (int i = 0; i < 3; i++) {
    compile_n(&c, 42 + i, &got);
    cr_assert_not(got.cached, "%s: compiled here, not taken", why[i]);
    cr_assert_eq(got.object_size, refused[i]->object_size);
    cr_assert_eq(memcmp(got.object, refused[i]->object, got.object_size), 0, "%s: the true object", why[i]);
    vxp_response_clear(&got);
  }
  vxp_stats s = stats_of(&c);
  cr_assert_eq(s.l2_hits, 1);
  cr_assert_eq(s.l2_rejected, 3, "refused and counted");
  cr_assert_eq(s.l2_corrupt, 0, "a forgery with a matching checksum is no damage");
  cr_assert_eq(s.l2_writes, 0, "read only");
  cr_assert_geq(log_count(&c, "not signed by a key of remote_trusted_keys"), 1);
  /* rotation: a consumer trusting both keys takes both writers' entries */
  char both[600];
  snprintf(both, sizeof both, "cat %s/rogue.pub %s/farm.pub > %s/both.pub", root, root, root);
  cr_assert_eq(system(both), 0);
  char trust_both[500];
  snprintf(trust_both, sizeof trust_both, "VORTEXD_REMOTE_TRUSTED_KEYS=%s/both.pub", root);
  const char *rotating_env[] = {url, trust_both, NULL};
  daemon_t r2;
  daemon_start(&r2, "rotating", rotating_env);
  compile_n(&r2, 41, &got);
  cr_assert(got.cached);
  vxp_response_clear(&got);
  compile_n(&r2, 43, &got);
  cr_assert(got.cached, "the second trusted key's entry");
  vxp_response_clear(&got);
  vxp_response *all[] = {&signed_r, &unsigned_r, &rogue_r, &forged_r};
  for (int i = 0; i < 4; i++)
    vxp_response_clear(all[i]);
  daemon_t *ds[] = {&w, &u, &g, &c, &r2};
  for (int i = 0; i < 5; i++)
    daemon_stop(ds[i]);
  redis_kill(&rd);
}

/* An entry whose checksum holds but whose kernel record every client
 * would refuse (bytes that are not a record; a record with grid_dims 7),
 * planted in Redis, is never taken into a daemon's own cache: the request
 * compiles, the value is counted as corrupt, and the next compile is a
 * hit of the daemon's own, whole entry. */
Test(remote, an_entry_whose_records_a_client_refuses_is_not_taken_from_redis) {
  redis rd;
  redis_start(&rd);
  use_redis(&rd);
  char url[400];
  snprintf(url, sizeof url, "%s", env_url);
  const char *env[] = {url, NULL};
  daemon_t w, c;
  daemon_start(&w, "writer", env);
  vxp_response real[2], got;
  compile_n(&w, 51, &real[0]);
  compile_n(&w, 52, &real[1]);
  (void)stats_of(&w); /* written */
  for (int i = 0; i < 2; i++) {
    size_t len;
    uint8_t *value = value_of(&rd, &real[i], &len);
    vxp_entry_view e;
    cr_assert_eq(vxk_entry_check(real[i].key, value, len, NULL, &e), VXK_OK);
    vxp_entry_kernel ks[8];
    cr_assert_leq(e.nkernels, 8);
    memcpy(ks, e.kernels, e.nkernels * sizeof *ks);
    uint8_t *bad = NULL;
    size_t bad_len = 0;
    if (i == 0) {
      ks[0].record = (const uint8_t *)"not a record", ks[0].record_size = 12;
    } else {
      vxp_kernel k;
      cr_assert_eq(vxp_kernel_meta_decode(ks[0].record, ks[0].record_size, &k), VXP_OK);
      k.grid_dims = 7;
      cr_assert_eq(vxp_kernel_meta_encode(&k, &bad, &bad_len), VXP_OK);
      vxp_kernel_clear(&k);
      ks[0].record = bad, ks[0].record_size = bad_len;
    }
    char options[VXP_ENTRY_OPTIONS_MAX + 1];
    snprintf(options, sizeof options, "%.*s", (int)e.options_len, e.options);
    uint8_t *planted = NULL;
    size_t plen = 0;
    cr_assert_eq(vxk_entry_encode(real[i].key, options, e.object, e.object_size, NULL, 0, ks, e.nkernels,
                                  NULL, &planted, &plen),
                 VXK_OK, "sealed with a right checksum");
    cr_assert_eq(vxk_entry_check(real[i].key, planted, plen, NULL, NULL), VXK_OK);
    freeReplyObject(redis_cmd(&rd, "SET vortexd:v%d:%s %b", VXK_REMOTE_FORMAT, real[i].key, planted, plen));
    vxp_entry_view_clear(&e);
    free(planted), free(value), free(bad);
  }
  daemon_start(&c, "consumer", env);
  for (int i = 0; i < 2; i++) {
    compile_n(&c, 51 + i, &got); /* a client refusing the record fails this */
    cr_assert_not(got.cached, "compiled, not taken from Redis");
    cr_assert_eq(got.object_size, real[i].object_size);
    cr_assert_eq(memcmp(got.object, real[i].object, got.object_size), 0);
    vxp_response_clear(&got);
  }
  vxp_stats s = stats_of(&c);
  cr_assert_eq(s.l2_hits, 0);
  cr_assert_eq(s.l2_corrupt, 2, "counted as corrupt");
  for (int i = 0; i < 2; i++) {
    compile_n(&c, 51 + i, &got);
    cr_assert(got.cached, "its own entry, whole");
    vxp_response_clear(&got);
  }
  vxp_response_clear(&real[0]), vxp_response_clear(&real[1]);
  daemon_stop(&w);
  daemon_stop(&c);
  redis_kill(&rd);
}

/* Key files are checked at start: a private key others can read, or a
 * file with no key, stops the daemon naming the setting and the fix. */
Test(remote, a_bad_signing_or_trusted_key_file_stops_the_daemon_at_start) {
  make_key_pair(root, "k");
  char cmd[2000], out[4096];
  snprintf(
      cmd, sizeof cmd,
      "chmod 644 %s/k.key; VORTEXD_REMOTE_STORAGE=redis://127.0.0.1:1 VORTEXD_REMOTE_SIGNING_KEY=%s/k.key "
      "%s --socket %s/x.sock --cache-dir %s/c 2>&1; echo rc=$?; "
      "echo junk > %s/junk.pub; VORTEXD_REMOTE_STORAGE=redis://127.0.0.1:1 "
      "VORTEXD_REMOTE_TRUSTED_KEYS=%s/junk.pub %s --socket %s/y.sock --cache-dir %s/c 2>&1; echo rc=$?",
      root, root, VXT_VORTEXD, root, root, root, root, VXT_VORTEXD, root, root);
  vxt_run(cmd, out, sizeof out);
  cr_assert_not_null(strstr(out, "remote_signing_key = '"), "%s", out);
  cr_assert_not_null(strstr(out, "a private key others can read (mode 644)"), "%s", out);
  cr_assert_not_null(strstr(out, "chmod 600"), "%s", out);
  cr_assert_not_null(strstr(out, "remote_trusted_keys = '"), "%s", out);
  cr_assert_not_null(strstr(out, "no Ed25519 public key"), "%s", out);
  cr_assert_null(strstr(out, "rc=0"), "%s", out);
}

/* ---- leases: a farm compiles each key once ---- */

/* The cache key of kernel n as d compiles it (compiled through a daemon
 * of its own without remote storage: nothing shared). */
static void key_of_kernel(int n, char key[65]) {
  daemon_t k;
  daemon_start(&k, "keyer", NULL);
  vxp_response r;
  compile_n(&k, n, &r);
  snprintf(key, 65, "%s", r.key);
  vxp_response_clear(&r);
  daemon_stop(&k);
}

/* A child that compiles kernel n through d once the byte on go arrives;
 * exits 0 when it got an object. */
static pid_t compile_when_told(const daemon_t *d, int n, int go) {
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    char b;
    if (read(go, &b, 1) != 1) _exit(3);
    size_t len;
    char *src = kernel_source(n, &len);
    vxc_conn *c = NULL;
    vxp_response r;
    if (vxc_connect(d->sock, &c) != 0 || vxc_compile(c, src, len, "k.mlir", NULL, &r) != 0) _exit(2);
    _exit(r.status == VXP_STATUS_OK && r.object_size > 0 ? 0 : 1);
  }
  child_started(pid);
  return pid;
}

/* Whether the daemon (daemon_t *) has a lookup waiting on a lease. */
static int lease_waited(void *d) { return stats_of(d).l2_lease_waits >= 1; }

static int exit_status(pid_t pid) {
  int st = 0;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

Test(remote, two_daemons_asked_for_one_key_at_once_compile_it_once) {
  redis rd;
  redis_start(&rd);
  use_redis(&rd);
  daemon_t a, b;
  daemon_start(&a, "a", url_env);
  daemon_start(&b, "b", url_env);
  for (int n = 0; n < 5; n++) { /* five keys, each asked of both daemons at once */
    int go[2];
    cr_assert_eq(pipe(go), 0);
    pid_t pa = compile_when_told(&a, 500 + n, go[0]), pb = compile_when_told(&b, 500 + n, go[0]);
    cr_assert_eq(write(go[1], "xx", 2), 2);
    cr_assert_eq(exit_status(pa), 0);
    cr_assert_eq(exit_status(pb), 0);
    close(go[0]);
    close(go[1]);
  }
  vxp_stats sa = stats_of(&a), sb = stats_of(&b);
  cr_assert_eq(sa.misses + sb.misses, 5, "compiled once per key across the farm (%llu + %llu)",
               (unsigned long long)sa.misses, (unsigned long long)sb.misses);
  cr_assert_eq(sa.l2_leases + sb.l2_leases, 5, "one lease per key");
  cr_assert_eq(sa.l2_hits + sb.l2_hits, 5, "the other daemon read each");
  cr_assert_eq(sa.l2_lease_expired + sb.l2_lease_expired, 0);
  /* every lease released once its value was written */
  redisReply *keys = redis_cmd(&rd, "KEYS vortexd:lease:*");
  cr_assert_eq(keys->elements, 0, "no lease left behind");
  freeReplyObject(keys);
  daemon_stop(&a);
  daemon_stop(&b);
  redis_kill(&rd);
}

/* Starts a Redis (url_env pointed at it) in which kernel n's key (into
 * key) is leased by another owner for px ms: what a daemon compiling it
 * elsewhere, or one that died doing so, leaves there. */
static void redis_with_planted_lease(redis *rd, int n, unsigned px, char key[65]) {
  key_of_kernel(n, key);
  redis_start(rd);
  use_redis(rd);
  redisReply *set = redis_cmd(rd, "SET vortexd:lease:%s other-host:1:00 PX %u", key, px);
  cr_assert_eq(set->type, REDIS_REPLY_STATUS);
  freeReplyObject(set);
}

/* A lease nobody renews is a leaseholder that died mid-compile: the
 * daemon that wants the key waits for it to expire, then compiles. */
Test(remote, a_dead_leaseholder_costs_one_lease_time_then_the_other_compiles) {
  char key[65];
  redis rd;
  redis_with_planted_lease(&rd, 600, 1500, key);
  daemon_t b;
  daemon_start(&b, "b", url_env);
  vxp_response r;
  compile_n(&b, 600, &r);
  cr_assert_str_eq(r.key, key);
  vxp_response_clear(&r);
  vxp_stats s = stats_of(&b);
  cr_assert_eq(s.l2_lease_waits, 1, "it waited for the leaseholder");
  cr_assert_eq(s.l2_lease_expired, 1, "the lease ended without a value");
  cr_assert_eq(s.l2_leases, 1, "then it took the lease");
  cr_assert_eq(s.misses, 1, "and compiled");
  cr_assert_eq(redis_int(&rd, "EXISTS vortexd:lease:%s", key), 0, "released after its value was written");
  daemon_stop(&b);
  redis_kill(&rd);
}

/* The leaseholder alive: the waiter gets its value (an L2 hit, no compile
 * of its own) as soon as it is written. */
Test(remote, a_waiter_is_answered_by_the_leaseholders_value) {
  char key[65];
  redis rd;
  redis_with_planted_lease(&rd, 601, 60000, key);
  daemon_t a, b;
  daemon_start(&b, "b", url_env);
  int go[2];
  cr_assert_eq(pipe(go), 0);
  pid_t pb = compile_when_told(&b, 601, go[0]);
  cr_assert_eq(write(go[1], "x", 1), 1);
  cr_assert(vxt_wait_until(lease_waited, &b, 60000), "b waits for the lease");
  /* the "other" daemon compiles it (no lease of its own) and writes it */
  static const char *const no_lease[] = {env_url, "VORTEXD_REMOTE_LEASE=0", NULL};
  daemon_start(&a, "a", no_lease);
  vxp_response r;
  compile_n(&a, 601, &r);
  vxp_response_clear(&r);
  (void)stats_of(&a); /* its write is done */
  cr_assert_eq(exit_status(pb), 0, "b answered");
  vxp_stats s = stats_of(&b);
  cr_assert_eq(s.misses, 0, "b compiled nothing");
  cr_assert_eq(s.l2_hits, 1);
  cr_assert_eq(s.l2_lease_waits, 1);
  cr_assert_eq(s.l2_lease_expired, 0);
  close(go[0]);
  close(go[1]);
  daemon_stop(&a);
  daemon_stop(&b);
  redis_kill(&rd);
}

/* Redis gone while a daemon waits on a lease: it compiles itself. */
Test(remote, redis_stopped_mid_lease_the_waiter_compiles) {
  char key[65];
  redis rd;
  redis_with_planted_lease(&rd, 602, 60000, key);
  daemon_t b;
  daemon_start(&b, "b", url_env);
  int go[2];
  cr_assert_eq(pipe(go), 0);
  pid_t pb = compile_when_told(&b, 602, go[0]);
  cr_assert_eq(write(go[1], "x", 1), 1);
  cr_assert(vxt_wait_until(lease_waited, &b, 60000), "b waits for the lease");
  redis_kill(&rd);
  cr_assert_eq(exit_status(pb), 0, "b compiled it itself");
  vxp_stats s = stats_of(&b);
  cr_assert_eq(s.misses, 1);
  cr_assert_geq(s.l2_errors + s.l2_timeouts, 1, "the lost storage counted");
  close(go[0]);
  close(go[1]);
  daemon_stop(&b);
}

/* A compile that fails releases its lease at once: nobody waits for a
 * value that will never come. */
Test(remote, a_failed_compile_releases_its_lease) {
  redis rd;
  daemon_t a;
  redis_and_daemon(&rd, &a, "a");
  static const char bad[] = "module {\n  gpu.module @m {\n    gpu.func @k() kernel {\n      %x = "
                            "arith.constant 1 : i32\n      gpu.return %x : i32\n    }\n  }\n}\n";
  vxc_conn *c = NULL;
  cr_assert_eq(vxc_connect(a.sock, &c), 0);
  vxp_response r;
  cr_assert_eq(vxc_compile(c, bad, sizeof bad - 1, "bad.mlir", NULL, &r), 0);
  cr_assert_eq(r.status, VXP_STATUS_COMPILE_ERROR);
  vxp_response_clear(&r);
  vxc_close(c);
  vxp_stats s = stats_of(&a); /* the release is written before stats answers */
  cr_assert_eq(s.l2_leases, 1);
  redisReply *keys = redis_cmd(&rd, "KEYS vortexd:lease:*");
  cr_assert_eq(keys->elements, 0, "released");
  freeReplyObject(keys);
  daemon_stop(&a);
  redis_kill(&rd);
}

/* Whether redis (redis *) holds a lease. */
static int a_lease_exists(void *rd) {
  redisReply *keys = redis_cmd(rd, "KEYS vortexd:lease:*");
  size_t n = keys->type == REDIS_REPLY_ARRAY ? keys->elements : 0;
  freeReplyObject(keys);
  return n > 0;
}

/* A child that compiles src (len bytes) through d as many.mlir. */
static pid_t compile_source_in_child(const daemon_t *d, const char *src, size_t len) {
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    vxc_conn *c = NULL;
    vxp_response r;
    if (vxc_connect(d->sock, &c) != 0 || vxc_compile(c, src, len, "many.mlir", NULL, &r) != 0) _exit(2);
    _exit(r.status == VXP_STATUS_OK ? 0 : 1);
  }
  child_started(pid);
  return pid;
}

/* The real thing: the leaseholder's daemon killed while it compiles a
 * large module; the other daemon, asked for the same module, waits out
 * the lease nobody renews any more, then compiles it. */
Test(remote, the_leaseholder_killed_mid_compile_the_other_finishes_after_the_lease) {
  redis rd;
  redis_start(&rd);
  use_redis(&rd);
  static const char *const short_lease[] = {env_url, "VORTEXD_REMOTE_LEASE=3000", NULL};
  daemon_t a, b;
  daemon_start(&a, "a", short_lease);
  daemon_start(&b, "b", short_lease);
  size_t len;
  char *src = vxt_many_kernels(200, &len); /* compiles for a second or more */
  cr_assert_not_null(src);
  pid_t pa = compile_source_in_child(&a, src, len);
  cr_assert(vxt_wait_until(a_lease_exists, &rd, 60000), "a takes the lease");
  kill(a.pid, SIGKILL);
  waitpid(a.pid, NULL, 0);
  child_ended(a.pid);
  a.pid = 0;
  cr_assert_neq(exit_status(pa), 0, "a's client lost its daemon");
  redisReply *values = redis_cmd(&rd, "KEYS vortexd:v%d:*", VXK_REMOTE_FORMAT);
  cr_assert_eq(values->elements, 0, "a was killed before it wrote the value");
  freeReplyObject(values);
  pid_t pb = compile_source_in_child(&b, src, len);
  cr_assert_eq(exit_status(pb), 0, "b compiled it");
  vxp_stats s = stats_of(&b);
  cr_assert_eq(s.l2_lease_waits, 1, "b waited for a's lease");
  cr_assert_eq(s.l2_lease_expired, 1, "which ended without a value");
  cr_assert_eq(s.misses, 1, "then b compiled");
  free(src);
  daemon_stop(&b);
  redis_kill(&rd);
}

/* ---- the HTTP(S) level: nginx with WebDAV over TLS, and bad servers ---- */

typedef struct {
  pid_t pid;
  int port;
  char dir[300];
} nginx_t;

static int port_open(void *arg) {
  int port = *(int *)arg;
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {
      .sin_family = AF_INET, .sin_port = htons((uint16_t)port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  int ok = connect(fd, (struct sockaddr *)&a, sizeof a) == 0;
  close(fd);
  return ok;
}

/* Whether nginx (nginx_t *) listens, or has exited (then the caller's
 * assertion fails). */
static int nginx_up(void *arg) {
  nginx_t *n = arg;
  return port_open(&n->port) || waitpid(n->pid, NULL, WNOHANG) == n->pid;
}

/* Runs nginx on 127.0.0.1 with TLS (a CA and a certificate made here with
 * openssl) and the server block docs/cache.md gives, its paths replaced:
 * PUT needs the user farm with the password secret. */
static void nginx_start(nginx_t *n) {
  snprintf(n->dir, sizeof n->dir, "%s/nginx", root);
  n->port = free_port();
  char cmd[8192], out[2048];
  snprintf(
      cmd, sizeof cmd,
      "set -e; cd %s; mkdir -p -m 700 %s; cd %s; mkdir www tmp;"
      "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout ca.key -out ca.pem"
      " -days 2 -subj /CN=vxt-ca 2>/dev/null;"
      "openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout srv.key -out srv.csr"
      " -subj /CN=127.0.0.1 2>/dev/null;"
      "printf 'subjectAltName=IP:127.0.0.1\\n' > ext;"
      "openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out srv.pem -days 2"
      " -extfile ext 2>/dev/null;"
      "printf 'farm:%%s\\n' \"$(openssl passwd -apr1 secret)\" > htpasswd;"
      "sed -n '/# vortexd-nginx-begin/,/# vortexd-nginx-end/p' %s/cache.md |"
      " sed -e 's#listen 443 ssl#listen 127.0.0.1:%d ssl#' -e 's#/etc/nginx/vortexd-cache.pem#%s/srv.pem#'"
      " -e 's#/etc/nginx/vortexd-cache.key#%s/srv.key#' -e 's#/srv/vortexd-cache#%s/www#'"
      " -e 's#/etc/nginx/vortexd-cache.htpasswd#%s/htpasswd#' > server.conf;"
      "grep -q dav_methods server.conf;"
      "printf '%%bworker_processes 1;\\npid %s/nginx.pid;\\nevents { worker_connections 64; }\\n"
      "http {\\n access_log off;\\n client_body_temp_path %s/tmp/body;\\n proxy_temp_path %s/tmp/proxy;\\n"
      " fastcgi_temp_path %s/tmp/fcgi;\\n uwsgi_temp_path %s/tmp/uwsgi;\\n scgi_temp_path %s/tmp/scgi;\\n"
      " include %s/server.conf;\\n}\\n' '%s' > nginx.conf",
      root, n->dir, n->dir, VXT_DOCS_DIR, n->port, n->dir, n->dir, n->dir, n->dir, n->dir, n->dir, n->dir,
      n->dir, n->dir, n->dir, n->dir, geteuid() == 0 ? "user root;\\n" : "");
  cr_assert_eq(vxt_run(cmd, out, sizeof out), 0, "nginx set up: %s", out);
  n->pid = fork();
  cr_assert_geq(n->pid, 0);
  if (n->pid == 0) {
    char conf[400], err[400];
    snprintf(conf, sizeof conf, "%s/nginx.conf", n->dir);
    snprintf(err, sizeof err, "%s/error.log", n->dir);
    int null = open("/dev/null", O_WRONLY);
    dup2(null, 1);
    dup2(null, 2);
    execlp("nginx", "nginx", "-p", n->dir, "-e", err, "-c", conf, "-g", "daemon off;", (char *)NULL);
    _exit(127);
  }
  child_started(n->pid);
  cr_assert(vxt_wait_until(nginx_up, n, 60000) && port_open(&n->port),
            "nginx listens (installed? tests/bootstrap.sh does; see %s)", n->dir);
}

static void nginx_stop(nginx_t *n) {
  if (n->pid <= 0) return;
  kill(n->pid, SIGQUIT);
  waitpid(n->pid, NULL, 0);
  child_ended(n->pid);
  n->pid = 0;
}

static char http_env[5][600];
static const char *const http_env_list[] = {http_env[0], http_env[1], http_env[2],
                                            http_env[3], http_env[4], NULL};

/* Points http_env_list at n's https URL with its CA; with credentials
 * (a file of mode 0600 holding them), else none. */
static void use_nginx(const nginx_t *n, const char *credentials) {
  snprintf(http_env[0], sizeof http_env[0], "VORTEXD_REMOTE_STORAGE=https://127.0.0.1:%d/cache", n->port);
  snprintf(http_env[1], sizeof http_env[1], "VORTEXD_REMOTE_CA_FILE=%s/ca.pem", n->dir);
  char path[400] = "";
  if (credentials) {
    snprintf(path, sizeof path, "%s/credentials-%d", root, (int)strlen(credentials));
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, credentials, strlen(credentials)), (ssize_t)strlen(credentials));
    close(fd);
  }
  snprintf(http_env[2], sizeof http_env[2], "VORTEXD_REMOTE_CREDENTIALS=%s", path);
  snprintf(http_env[3], sizeof http_env[3], "VORTEXD_REMOTE_TIMEOUT=5000");
  /* the connection's deadline covers the TLS handshake and loading the CAs */
  snprintf(http_env[4], sizeof http_env[4], "VORTEXD_REMOTE_CONNECT_TIMEOUT=5000");
}

Test(remote, two_daemons_share_entries_through_nginx_webdav_over_tls) {
  nginx_t n;
  nginx_start(&n);
  use_nginx(&n, "basic farm:secret\n");
  daemon_t a, b, c;
  daemon_start(&a, "a", http_env_list);
  vxp_response r;
  compile_n(&a, 700, &r);
  cr_assert_not(r.cached);
  char key[65];
  snprintf(key, sizeof key, "%s", r.key);
  vxp_response_clear(&r);
  vxp_stats s = stats_of(&a); /* waits for the PUT */
  cr_assert_eq(s.l2_writes, 1, "written: %s", s.remote);
  cr_assert_eq(s.l2_errors + s.l2_timeouts, 0, "%s", s.remote);
  cr_assert_not_null(strstr(s.remote, "https://127.0.0.1:"), "%s", s.remote);
  char path[600];
  snprintf(path, sizeof path, "%s/www/cache/vortexd/v%d/%s", n.dir, VXK_REMOTE_FORMAT, key);
  struct stat st;
  cr_assert_eq(stat(path, &st), 0, "the value is the resource <URL>/<prefix>/v<format>/<key>");
  /* another machine reads it: an L2 hit, nothing compiled */
  daemon_start(&b, "b", http_env_list);
  compile_n(&b, 700, &r);
  cr_assert(r.cached, "served from the HTTPS level");
  vxp_response_clear(&r);
  s = stats_of(&b);
  cr_assert_eq(s.l2_hits, 1);
  cr_assert_eq(s.misses, 0);
  /* without credentials, reads work and writes are refused by nginx (401), counted */
  use_nginx(&n, NULL);
  daemon_start(&c, "c", http_env_list);
  compile_n(&c, 701, &r);
  cr_assert_eq(r.status, VXP_STATUS_OK);
  vxp_response_clear(&r);
  s = stats_of(&c);
  cr_assert_eq(s.l2_writes, 0);
  cr_assert_geq(s.l2_errors, 1, "the refused PUT counted");
  cr_assert_not_null(strstr(s.remote, "401"), "%s", s.remote);
  daemon_stop(&a);
  daemon_stop(&b);
  daemon_stop(&c);
  nginx_stop(&n);
}

Test(remote, an_https_server_whose_certificate_does_not_verify_is_not_used) {
  nginx_t n;
  nginx_start(&n);
  use_nginx(&n, "basic farm:secret\n");
  snprintf(http_env[1], sizeof http_env[1], "VORTEXD_REMOTE_CA_FILE=/etc/ssl/certs/ca-certificates.crt");
  daemon_t a;
  daemon_start(&a, "a", http_env_list);
  vxp_response r;
  compile_n(&a, 702, &r); /* compiled all the same */
  vxp_response_clear(&r);
  vxp_stats s = stats_of(&a);
  cr_assert_eq(s.l2_hits + s.l2_writes, 0);
  cr_assert_geq(s.l2_errors, 1);
  cr_assert_not_null(strstr(s.remote, "certificate"), "%s", s.remote);
  daemon_stop(&a);
  nginx_stop(&n);
}

Test(remote, a_forged_value_on_the_http_level_is_refused_and_replaced) {
  char key[65];
  key_of_kernel(703, key);
  nginx_t n;
  nginx_start(&n);
  use_nginx(&n, "basic farm:secret\n");
  char cmd[1200], out[256];
  snprintf(cmd, sizeof cmd,
           "mkdir -p %s/www/cache/vortexd/v%d && head -c 3000 /dev/urandom > %s/www/cache/vortexd/v%d/%s",
           n.dir, VXK_REMOTE_FORMAT, n.dir, VXK_REMOTE_FORMAT, key);
  cr_assert_eq(vxt_run(cmd, out, sizeof out), 0);
  daemon_t a;
  daemon_start(&a, "a", http_env_list);
  vxp_response r;
  compile_n(&a, 703, &r);
  cr_assert_not(r.cached, "not served");
  vxp_response_clear(&r);
  vxp_stats s = stats_of(&a);
  cr_assert_eq(s.misses, 1, "compiled here");
  cr_assert_geq(s.l2_errors, 1, "the forged value counted");
  cr_assert_eq(s.l2_writes, 1, "and replaced by this compile's");
  daemon_stop(&a);
  nginx_stop(&n);
}

/* An HTTP "server" on a TCP port: mode 0 answers nothing, 1 garbage, 2
 * "500", 3 "404" to every request (keeping the connection), 4 "404" to a
 * GET and "200" to a HEAD (a value written since the lookup); it counts
 * the requests that carried "Authorization: Bearer sekrit", and the PUTs. */
typedef struct {
  int fd, port, mode;
  int bearer_seen, puts_seen; /* atomically */
} fake_http;

static void *fake_http_conn(void *arg) {
  fake_http *f = ((void **)arg)[0];
  int c = (int)(intptr_t)((void **)arg)[1];
  free(arg);
  char buf[65536];
  ssize_t n;
  while ((n = read(c, buf, sizeof buf)) > 0) {
    if (memmem(buf, (size_t)n, "Authorization: Bearer sekrit\r\n", 30))
      __atomic_add_fetch(&f->bearer_seen, 1, __ATOMIC_SEQ_CST);
    if (!memmem(buf, (size_t)n, "\r\n\r\n", 4) && f->mode != 0) continue; /* a body: more to read */
    if (n >= 4 && memcmp(buf, "PUT ", 4) == 0) __atomic_add_fetch(&f->puts_seen, 1, __ATOMIC_SEQ_CST);
    int head = n >= 5 && memcmp(buf, "HEAD ", 5) == 0;
    const char *reply = f->mode == 1   ? "HTTP/9 !!! garbage\r\n\x01\x02\r\n\r\n"
                        : f->mode == 2 ? "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n"
                        : f->mode == 3 || (f->mode == 4 && !head)
                            ? "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"
                        : f->mode == 4 ? "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n"
                                       : NULL;
    if (reply) (void)!write(c, reply, strlen(reply));
  }
  close(c);
  return NULL;
}

static void *fake_http_serve(void *arg) {
  fake_http *f = arg;
  for (;;) {
    int c = accept(f->fd, NULL, NULL);
    if (c < 0) return NULL;
    void **a = malloc(2 * sizeof *a);
    a[0] = f, a[1] = (void *)(intptr_t)c;
    pthread_t t;
    pthread_create(&t, NULL, fake_http_conn, a);
    pthread_detach(t);
  }
}

static void fake_http_start(fake_http *f, int mode) {
  f->mode = mode;
  f->fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t al = sizeof a;
  cr_assert_eq(bind(f->fd, (struct sockaddr *)&a, sizeof a), 0);
  cr_assert_eq(listen(f->fd, 64), 0);
  cr_assert_eq(getsockname(f->fd, (struct sockaddr *)&a, &al), 0);
  f->port = ntohs(a.sin_port);
  pthread_t t;
  pthread_create(&t, NULL, fake_http_serve, f);
  pthread_detach(t);
}

Test(remote, an_http_server_down_slow_failing_or_garbage_never_fails_a_compile) {
  static fake_http servers[4];
  const char *what[] = {"silent", "garbage", "500", "404"};
  for (int mode = 0; mode < 4; mode++) {
    fake_http_start(&servers[mode], mode);
    char url[200], name[16];
    snprintf(url, sizeof url, "VORTEXD_REMOTE_STORAGE=http://127.0.0.1:%d/c", servers[mode].port);
    const char *const env[] = {url, "VORTEXD_REMOTE_TIMEOUT=300", NULL};
    snprintf(name, sizeof name, "m%d", mode);
    daemon_t d;
    daemon_start(&d, name, env);
    vxp_response r;
    compile_n(&d, 710 + mode, &r); /* compile_n asserts it succeeded */
    vxp_response_clear(&r);
    vxp_stats s = stats_of(&d);
    cr_assert_eq(s.misses, 1, "%s: compiled", what[mode]);
    if (mode == 0)
      cr_assert_geq(s.l2_timeouts, 1, "%s: counted as a timeout (%s)", what[mode], s.remote);
    else if (mode == 3)
      cr_assert_eq(s.l2_misses, 1, "%s: a miss", what[mode]);
    else
      cr_assert_geq(s.l2_errors, 1, "%s: counted as an error (%s)", what[mode], s.remote);
    if (mode == 3) cr_assert_geq(s.l2_errors, 1, "404 to the PUT: an error (%s)", s.remote);
    daemon_stop(&d);
  }
  /* and a server that is not there at all */
  char url[200];
  snprintf(url, sizeof url, "VORTEXD_REMOTE_STORAGE=http://127.0.0.1:%d/c", free_port());
  const char *const env[] = {url, NULL};
  daemon_t d;
  daemon_start(&d, "down", env);
  vxp_response r;
  compile_n(&d, 720, &r);
  vxp_response_clear(&r);
  vxp_stats s = stats_of(&d);
  cr_assert_geq(s.l2_errors, 1, "%s", s.remote);
  cr_assert_not_null(strstr(s.remote, "down"), "%s", s.remote);
  daemon_stop(&d);
}

Test(remote, credentials_others_can_read_or_in_the_url_stop_the_daemon_at_start) {
  char path[300], cmd[1600], out[1200];
  snprintf(path, sizeof path, "%s/creds", root);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  cr_assert_geq(fd, 0);
  cr_assert_eq(write(fd, "basic farm:secret\n", 18), 18);
  close(fd);
  cr_assert_eq(chmod(path, 0644), 0);
  snprintf(cmd, sizeof cmd,
           "VORTEXD_REMOTE_STORAGE=https://127.0.0.1:1/c VORTEXD_REMOTE_CREDENTIALS=%s %s --socket %s/s.sock "
           "--cache-dir %s/c 2>&1; echo rc=$?",
           path, VXT_VORTEXD, root, root);
  vxt_run(cmd, out, sizeof out);
  cr_assert_not_null(strstr(out, "remote_credentials"), "%s", out);
  cr_assert_not_null(strstr(out, "chmod 600"), "%s", out);
  cr_assert_null(strstr(out, "secret"), "never shown: %s", out);
  cr_assert_null(strstr(out, "rc=0"), "%s", out);
  snprintf(cmd, sizeof cmd,
           "VORTEXD_REMOTE_STORAGE=https://farm:secret@127.0.0.1:1/c %s --socket %s/s.sock --cache-dir %s/c "
           "2>&1; echo rc=$?",
           VXT_VORTEXD, root, root);
  vxt_run(cmd, out, sizeof out);
  cr_assert_not_null(strstr(out, "remote_credentials"), "a URL with a password is refused: %s", out);
  cr_assert_null(strstr(out, "secret"), "never shown: %s", out);
  cr_assert_null(strstr(out, "rc=0"), "%s", out);
}

Test(remote, a_bearer_token_from_the_credentials_file_is_sent) {
  static fake_http server;
  fake_http_start(&server, 3);
  char path[300], url[200], creds[400];
  snprintf(path, sizeof path, "%s/bearer-token", root);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  cr_assert_geq(fd, 0);
  cr_assert_eq(write(fd, "bearer sekrit\n", 14), 14);
  close(fd);
  snprintf(url, sizeof url, "VORTEXD_REMOTE_STORAGE=http://127.0.0.1:%d/c", server.port);
  snprintf(creds, sizeof creds, "VORTEXD_REMOTE_CREDENTIALS=%s", path);
  const char *const env[] = {url, creds, NULL};
  daemon_t d;
  daemon_start(&d, "bearer", env);
  vxp_response r;
  compile_n(&d, 730, &r);
  vxp_response_clear(&r);
  vxp_stats s = stats_of(&d); /* the GET (404: a miss) and the PUT (404: an error) done */
  cr_assert_eq(s.l2_misses, 1);
  cr_assert_geq(__atomic_load_n(&server.bearer_seen, __ATOMIC_SEQ_CST), 2, "GET and PUT carried the token");
  daemon_stop(&d);
}

/* Without leases, two daemons of an HTTP farm may compile the same key;
 * the second asks (HEAD) before it sends and sends nothing when the value
 * is there. (A value that was refused is written over: the forged-value
 * test above.) */
Test(remote, a_value_already_on_the_http_level_is_not_sent_again) {
  static fake_http server;
  fake_http_start(&server, 4);
  char url[200];
  snprintf(url, sizeof url, "VORTEXD_REMOTE_STORAGE=http://127.0.0.1:%d/c", server.port);
  const char *const env[] = {url, NULL};
  daemon_t d;
  daemon_start(&d, "head", env);
  vxp_response r;
  compile_n(&d, 740, &r);
  vxp_response_clear(&r);
  vxp_stats s = stats_of(&d); /* the write's turn is done */
  cr_assert_eq(s.l2_misses, 1);
  cr_assert_eq(s.l2_errors + s.l2_timeouts, 0, "%s", s.remote);
  cr_assert_eq(s.l2_writes, 0, "not written: there already");
  cr_assert_eq(__atomic_load_n(&server.puts_seen, __ATOMIC_SEQ_CST), 0, "no PUT sent");
  daemon_stop(&d);
}
