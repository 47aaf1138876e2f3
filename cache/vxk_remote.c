/*
 * vxk_remote.c - the cache's Redis level (vxk_remote.h).
 *
 * hiredis runs non-blocking here: this file polls the socket itself so that
 * each exchange has one deadline for all of it.  hiredis's blocking mode
 * only sets SO_RCVTIMEO, which bounds each recv(), not the reply.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <hiredis/hiredis.h>

#include "protocol/vxp.h"
#include "vxk_http.h"
#include "vxk_remote.h"
#include "vxk_sign.h"

struct vxk_remote {
  vxk_http *http;               /* an HTTP(S) storage: everything goes there */
  const vxk_http_ops *http_ops; /* its module's calls */
  redisContext *ctx;            /* NULL once closed after a failure */
  /* hiredis's reply constructors, and ours: the same but for arrays, whose
   * declared size hiredis would allocate before a single element arrived */
  const redisReplyObjectFunctions *hiredis_fn;
  redisReplyObjectFunctions fn;
  unsigned op_ms;
  uint64_t max_value;
  unsigned ttl_s;
  char prefix[VXK_REMOTE_PREFIX_MAX + 1];
};

int vxk_remote_prefix_valid(const char *prefix) {
  size_t n = prefix ? strlen(prefix) : 0;
  if (n == 0 || n > VXK_REMOTE_PREFIX_MAX) return 0;
  for (size_t i = 0; i < n; i++) {
    char ch = prefix[i];
    if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_' ||
          ch == '.' || ch == ':' || ch == '-'))
      return 0;
  }
  return 1;
}

static uint64_t vxk__now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Closes r's connection after a failure: its state is unknown. */
static int vxk__fail(vxk_remote *r, int rc, char *err, size_t errcap, const char *what, const char *detail) {
  snprintf(err, errcap, "%s: %s", what, detail);
  if (r->ctx) redisFree(r->ctx);
  r->ctx = NULL;
  return rc;
}

/* Waits until fd is ready for events or the deadline passes. */
static int vxk__wait(int fd, short events, uint64_t deadline) {
  for (;;) {
    uint64_t now = vxk__now_ms();
    if (now >= deadline) return VXK_ETIMEDOUT;
    struct pollfd p = {.fd = fd, .events = events};
    int n = poll(&p, 1, (int)(deadline - now));
    if (n > 0) return (p.revents & (POLLERR | POLLNVAL)) && !(p.revents & POLLIN) ? VXK_EIO : VXK_OK;
    if (n == 0) return VXK_ETIMEDOUT;
    if (errno != EINTR) return VXK_EIO;
  }
}

/* Writes hiredis's output buffer (the commands appended) by the deadline. */
static int vxk__flush(vxk_remote *r, uint64_t deadline, char *err, size_t errcap) {
  int done = 0;
  while (!done) {
    if (redisBufferWrite(r->ctx, &done) != REDIS_OK)
      return vxk__fail(r, VXK_EIO, err, errcap, "write", r->ctx->errstr);
    if (done) break;
    int rc = vxk__wait(r->ctx->fd, POLLOUT, deadline);
    if (rc != VXK_OK)
      return vxk__fail(r, rc, err, errcap, "write", rc == VXK_ETIMEDOUT ? "timed out" : "socket error");
  }
  return VXK_OK;
}

/* Reads the next reply by the deadline; at most limit bytes are buffered
 * for it.  *out: caller frees with freeReplyObject. */
static int vxk__reply(vxk_remote *r, uint64_t deadline, uint64_t limit, redisReply **out, char *err,
                      size_t errcap) {
  for (;;) {
    void *reply = NULL;
    if (redisGetReplyFromReader(r->ctx, &reply) != REDIS_OK)
      return vxk__fail(r, VXK_EIO, err, errcap, "read", r->ctx->errstr);
    if (reply) {
      *out = reply;
      return VXK_OK;
    }
    redisReader *rd = r->ctx->reader;
    if (rd->len > rd->pos && rd->len - rd->pos > limit)
      return vxk__fail(r, VXK_EIO, err, errcap, "read", "reply larger than the largest value accepted");
    int rc = vxk__wait(r->ctx->fd, POLLIN, deadline);
    if (rc != VXK_OK)
      return vxk__fail(r, rc, err, errcap, "read", rc == VXK_ETIMEDOUT ? "timed out" : "socket error");
    if (redisBufferRead(r->ctx) != REDIS_OK)
      return vxk__fail(r, VXK_EIO, err, errcap, "read", r->ctx->errstr);
  }
}

/* Runs one command (argv) and checks its reply is not an error. */
static int vxk__command(vxk_remote *r, int argc, const char **argv, const size_t *lens, uint64_t deadline,
                        char *err, size_t errcap, const char *what) {
  if (!r->ctx) {
    snprintf(err, errcap, "not connected");
    return VXK_EIO;
  }
  if (redisAppendCommandArgv(r->ctx, argc, argv, lens) != REDIS_OK)
    return vxk__fail(r, VXK_ENOMEM, err, errcap, what, "out of memory");
  int rc = vxk__flush(r, deadline, err, errcap);
  redisReply *reply = NULL;
  if (rc == VXK_OK) rc = vxk__reply(r, deadline, 1u << 16, &reply, err, errcap);
  if (rc != VXK_OK) return rc;
  if (reply->type == REDIS_REPLY_ERROR) {
    char msg[256];
    snprintf(msg, sizeof msg, "%.*s", (int)(reply->len < 200 ? reply->len : 200), reply->str);
    freeReplyObject(reply);
    return vxk__fail(r, VXK_EIO, err, errcap, what, msg);
  }
  freeReplyObject(reply);
  return VXK_OK;
}

/* The largest array a reply may declare: the daemon's commands get no
 * arrays back, so this only stops "*2147483647" from costing 16 GiB. */
#define VXK__MAX_ARRAY 1024

static void *vxk__create_array(const redisReadTask *task, int elements) {
  const vxk_remote *r = task->privdata;
  if (elements < 0 || elements > VXK__MAX_ARRAY) return NULL; /* the reader reports "out of memory" */
  return r->hiredis_fn->createArray(task, elements);
}

/* The HTTP module's calls once loaded (vxk_remote_http_load, before any
 * thread opens a storage; never unloaded). */
static const vxk_http_ops *vxk__http_ops;

int vxk_remote_http_load(const char *module, char *err, size_t errcap) {
  if (vxk__http_ops) return VXK_OK;
  void *h = dlopen(module, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    snprintf(err, errcap, "cannot load the HTTP storage module: %s", dlerror());
    return VXK_EIO;
  }
  const vxk_http_ops *ops = dlsym(h, VXK_HTTP_OPS_SYMBOL);
  if (!ops || ops->abi != VXK_HTTP_ABI) {
    snprintf(err, errcap, "%s is not vortexd's HTTP storage module of this version", module);
    dlclose(h);
    return VXK_EIO;
  }
  if (ops->global_init() != VXK_OK) {
    snprintf(err, errcap, "cannot initialize libcurl");
    return VXK_EIO; /* libcurl may keep what it set up: the module stays */
  }
  vxk__http_ops = ops;
  return VXK_OK;
}

int vxk_remote_open(const vxk_remote_config *cfg, vxk_remote **out, char *err, size_t errcap) {
  *out = NULL;
  if (!vxk_remote_prefix_valid(cfg->prefix)) {
    snprintf(err, errcap, "prefix must be 1 to %d of [A-Za-z0-9_.:-]", VXK_REMOTE_PREFIX_MAX);
    return VXK_EINVAL;
  }
  vxk_remote *r = calloc(1, sizeof *r);
  if (!r) {
    snprintf(err, errcap, "out of memory");
    return VXK_ENOMEM;
  }
  if (cfg->http) {
    vxk_http_config hc = {.base = cfg->base,
                          .prefix = cfg->prefix,
                          .format = VXK_REMOTE_FORMAT,
                          .ca_file = cfg->ca_file,
                          .userpwd = cfg->userpwd,
                          .bearer = cfg->bearer,
                          .connect_ms = cfg->connect_ms,
                          .op_ms = cfg->op_ms,
                          .max_value = cfg->max_value};
    if (!(r->http_ops = vxk__http_ops)) {
      snprintf(err, errcap, "HTTP storage: its module is not loaded (vxk_remote_http_load)");
      free(r);
      return VXK_EINVAL;
    }
    int hrc = r->http_ops->open(&hc, &r->http, err, errcap);
    if (hrc != VXK_OK) {
      free(r);
      return hrc;
    }
    *out = r;
    return VXK_OK;
  }
  r->op_ms = cfg->op_ms ? cfg->op_ms : 1;
  r->max_value = cfg->max_value;
  r->ttl_s = cfg->ttl_s;
  snprintf(r->prefix, sizeof r->prefix, "%s", cfg->prefix);
  uint64_t deadline = vxk__now_ms() + (cfg->connect_ms ? cfg->connect_ms : 1);
  int unix_socket = cfg->path && cfg->path[0];
  r->ctx =
      unix_socket ? redisConnectUnixNonBlock(cfg->path) : redisConnectNonBlock(cfg->host, (int)cfg->port);
  int rc = VXK_OK;
  if (!r->ctx) {
    snprintf(err, errcap, "out of memory");
    rc = VXK_ENOMEM;
  } else if (r->ctx->err) {
    rc = vxk__fail(r, VXK_EIO, err, errcap, "connect", r->ctx->errstr);
  } else {
    r->hiredis_fn = r->ctx->reader->fn;
    r->fn = *r->hiredis_fn;
    r->fn.createArray = vxk__create_array;
    r->ctx->reader->fn = &r->fn;
    r->ctx->reader->privdata = r; /* each read task carries it */
    /* a TCP connect completes when the socket turns writable */
    rc = vxk__wait(r->ctx->fd, POLLOUT, deadline);
    int soerr = 0;
    socklen_t sl = sizeof soerr;
    if (rc == VXK_OK && getsockopt(r->ctx->fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) == 0 && soerr) {
      rc = vxk__fail(r, VXK_EIO, err, errcap, "connect", strerror(soerr));
    } else if (rc != VXK_OK) {
      rc = vxk__fail(r, rc, err, errcap, "connect", rc == VXK_ETIMEDOUT ? "timed out" : "socket error");
    }
  }
  if (rc == VXK_OK && cfg->password && cfg->password[0]) {
    int user = cfg->user && cfg->user[0];
    const char *argv[3] = {"AUTH", user ? cfg->user : cfg->password, cfg->password};
    size_t lens[3] = {4, strlen(argv[1]), strlen(cfg->password)};
    rc = vxk__command(r, user ? 3 : 2, argv, lens, deadline, err, errcap, "AUTH");
  }
  if (rc == VXK_OK && cfg->db) {
    char db[16];
    snprintf(db, sizeof db, "%u", cfg->db);
    const char *argv[2] = {"SELECT", db};
    size_t lens[2] = {6, strlen(db)};
    rc = vxk__command(r, 2, argv, lens, deadline, err, errcap, "SELECT");
  }
  if (rc != VXK_OK) {
    vxk_remote_close(r);
    return rc;
  }
  *out = r;
  return VXK_OK;
}

void vxk_remote_close(vxk_remote *r) {
  if (!r) return;
  if (r->http) r->http_ops->close(r->http);
  if (r->ctx) redisFree(r->ctx);
  free(r);
}

/* "<prefix>:v<format>:<key>" into out. */
static void vxk__redis_key(const vxk_remote *r, const char *key, char out[VXK_REMOTE_PREFIX_MAX + 80]) {
  snprintf(out, VXK_REMOTE_PREFIX_MAX + 80, "%s:v%u:%s", r->prefix, VXK_REMOTE_FORMAT, key);
}

/* "<prefix>:lease:<key>" into out. */
static void vxk__lease_key(const vxk_remote *r, const char *key, char out[VXK_REMOTE_PREFIX_MAX + 80]) {
  snprintf(out, VXK_REMOTE_PREFIX_MAX + 80, "%s:lease:%s", r->prefix, key);
}

/* The value (KEYS[1], its first ARGV[3] + 1 bytes) when it is there, else
 * the lease (KEYS[2]) for ARGV[1] for ARGV[2] ms when nobody holds it, in
 * one atomic step: {1, value}, {2} (taken) or {3} (held by another). */
static const char vxk__get_or_lease[] =
    "local v = redis.call('GETRANGE', KEYS[1], 0, ARGV[3]) "
    "if #v > 0 then return {1, v} end "
    "if redis.call('SET', KEYS[2], ARGV[1], 'NX', 'PX', ARGV[2]) then return {2} end "
    "return {3}";

/* Renews (ARGV[2] > 0) or deletes the lease KEYS[1] while ARGV[1] holds it. */
static const char vxk__lease_update[] = "if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end "
                                        "if ARGV[2] == '0' then return redis.call('DEL', KEYS[1]) end "
                                        "return redis.call('PEXPIRE', KEYS[1], ARGV[2])";

/* Appends the command that reads key (with a lease when want). */
static int vxk__append_get(vxk_remote *r, const char *key, const vxk_remote_lease *lease, int want,
                           const char *end) {
  char rk[VXK_REMOTE_PREFIX_MAX + 80];
  vxk__redis_key(r, key, rk);
  if (!want) {
    const char *argv[4] = {"GETRANGE", rk, "0", end};
    size_t lens[4] = {8, strlen(rk), 1, strlen(end)};
    return redisAppendCommandArgv(r->ctx, 4, argv, lens);
  }
  char lk[VXK_REMOTE_PREFIX_MAX + 80], ms[16];
  vxk__lease_key(r, key, lk);
  snprintf(ms, sizeof ms, "%u", lease->ms);
  const char *argv[8] = {"EVAL", vxk__get_or_lease, "2", rk, lk, lease->owner, ms, end};
  size_t lens[8] = {4,          sizeof vxk__get_or_lease - 1, 1,          strlen(rk),
                    strlen(lk), strlen(lease->owner),         strlen(ms), strlen(end)};
  return redisAppendCommandArgv(r->ctx, 8, argv, lens);
}

/* What a get-or-lease reply says, into *v; the value itself (a string
 * reply) is left in *str. */
static void vxk__lease_reply(const redisReply *reply, vxk_remote_value *v, const redisReply **str) {
  *str = NULL;
  v->rc = VXK_EIO;
  if (reply->type != REDIS_REPLY_ARRAY || reply->elements < 1 ||
      reply->element[0]->type != REDIS_REPLY_INTEGER)
    return;
  long long what = reply->element[0]->integer;
  if (what == 1 && reply->elements == 2) {
    *str = reply->element[1];
    v->rc = VXK_OK;
  } else if (what == 2 || what == 3) {
    v->rc = VXK_ENOTFOUND;
    v->lease = what == 2 ? VXK_LEASE_TAKEN : VXK_LEASE_OTHER;
  }
}

int vxk_remote_get(vxk_remote *r, const char *const *keys, size_t n, const vxk_remote_lease *lease,
                   vxk_remote_value *out, char *err, size_t errcap) {
  memset(out, 0, n * sizeof *out);
  if (n > 256) {
    snprintf(err, errcap, "too many keys");
    return VXK_EINVAL;
  }
  if (r->http) return r->http_ops->get(r->http, keys, n, out, err, errcap); /* no leases there */
  if (!r->ctx) {
    snprintf(err, errcap, "not connected");
    return VXK_EIO;
  }
  uint64_t deadline = vxk__now_ms() + r->op_ms;
  /* GETRANGE, not GET: the server sends at most max_value + 1 bytes, so a
   * huge value costs no more than that to refuse */
  char end[24];
  snprintf(end, sizeof end, "%llu", (unsigned long long)r->max_value);
  /* Two rounds: every key's GETRANGE, then, for the misses that want a
   * lease, the script that reads again and takes the lease in one atomic
   * step (a value written meanwhile is read, not compiled again).  A hit
   * costs a plain GETRANGE; a miss one more round trip before its compile. */
  unsigned char again[256] = {0};
  size_t nagain = 0;
  uint64_t kept = 0; /* value bytes held: at most twice max_value */
  int rc = VXK_OK;
  for (int round = 0; round < 2 && rc == VXK_OK; round++) {
    if (round == 1 && !nagain) break;
    for (size_t i = 0; i < n; i++)
      if ((round == 0 || again[i]) && vxk__append_get(r, keys[i], lease, round == 1, end) != REDIS_OK)
        return vxk__fail(r, VXK_ENOMEM, err, errcap, "get", "out of memory");
    rc = vxk__flush(r, deadline, err, errcap);
    for (size_t i = 0; i < n && rc == VXK_OK; i++) {
      if (round == 1 && !again[i]) continue;
      redisReply *reply = NULL;
      rc = vxk__reply(r, deadline, r->max_value + 4096, &reply, err, errcap);
      if (rc != VXK_OK) break;
      const redisReply *str = reply;
      if (round == 1) {
        vxk__lease_reply(reply, &out[i], &str);
      } else if (reply->type == REDIS_REPLY_STRING && reply->len == 0) {
        out[i].rc = VXK_ENOTFOUND; /* GETRANGE of a missing key: "" */
        str = NULL;
        again[i] = lease && lease->want[i];
        nagain += again[i];
      }
      if (!str) {
        /* a miss, or a lease reply that was not a value */
      } else if (str->type != REDIS_REPLY_STRING || (uint64_t)str->len > r->max_value ||
                 kept + str->len > 2 * r->max_value) {
        /* another type under our key, too large, or more than the batch may
         * hold at once: the caller compiles that one */
        out[i].rc = VXK_EIO;
      } else {
        kept += str->len;
        out[i].value = malloc(str->len ? str->len : 1);
        out[i].size = str->len;
        out[i].rc = out[i].value ? VXK_OK : VXK_ENOMEM;
        if (out[i].value) memcpy(out[i].value, str->str, str->len);
      }
      freeReplyObject(reply);
    }
  }
  if (rc != VXK_OK)
    for (size_t i = 0; i < n; i++) {
      free(out[i].value);
      out[i] = (vxk_remote_value){.rc = rc};
    }
  return rc;
}

int vxk_remote_lease_update(vxk_remote *r, const char *const *keys, size_t n, const char *owner, unsigned ms,
                            char *err, size_t errcap) {
  if (r->http) return VXK_OK; /* none taken there */
  if (n > 256) {
    snprintf(err, errcap, "too many keys");
    return VXK_EINVAL;
  }
  if (!r->ctx) {
    snprintf(err, errcap, "not connected");
    return VXK_EIO;
  }
  uint64_t deadline = vxk__now_ms() + r->op_ms;
  char msbuf[16];
  snprintf(msbuf, sizeof msbuf, "%u", ms);
  for (size_t i = 0; i < n; i++) {
    char lk[VXK_REMOTE_PREFIX_MAX + 80];
    vxk__lease_key(r, keys[i], lk);
    const char *argv[6] = {"EVAL", vxk__lease_update, "1", lk, owner, msbuf};
    size_t lens[6] = {4, sizeof vxk__lease_update - 1, 1, strlen(lk), strlen(owner), strlen(msbuf)};
    if (redisAppendCommandArgv(r->ctx, 6, argv, lens) != REDIS_OK)
      return vxk__fail(r, VXK_ENOMEM, err, errcap, "lease", "out of memory");
  }
  int rc = vxk__flush(r, deadline, err, errcap);
  for (size_t i = 0; i < n && rc == VXK_OK; i++) {
    redisReply *reply = NULL;
    rc = vxk__reply(r, deadline, 1u << 16, &reply, err, errcap);
    if (rc != VXK_OK) break;
    if (reply->type == REDIS_REPLY_ERROR) {
      char msg[256];
      snprintf(msg, sizeof msg, "%.*s", (int)(reply->len < 200 ? reply->len : 200), reply->str);
      freeReplyObject(reply);
      return vxk__fail(r, VXK_EIO, err, errcap, "lease", msg);
    }
    freeReplyObject(reply);
  }
  return rc;
}

int vxk_remote_set(vxk_remote *r, const char *key, const uint8_t *value, size_t size, int replace,
                   int *written, char *err, size_t errcap) {
  *written = 0;
  if (r->http) return r->http_ops->put(r->http, key, value, size, replace, written, err, errcap);
  *written = 1; /* counted as sent; a failure says otherwise */
  char rk[VXK_REMOTE_PREFIX_MAX + 80], ttl[24];
  vxk__redis_key(r, key, rk);
  snprintf(ttl, sizeof ttl, "%u", r->ttl_s);
  const char *argv[5] = {"SET", rk, (const char *)value, "EX", ttl};
  size_t lens[5] = {3, strlen(rk), size, 2, strlen(ttl)};
  return vxk__command(r, r->ttl_s ? 5 : 3, argv, lens, vxk__now_ms() + r->op_ms, err, errcap, "SET");
}
