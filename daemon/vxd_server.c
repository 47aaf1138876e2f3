/*
 * vxd_server.c - the vortexd event loop.
 *
 * One libuv loop serves every client on a Unix socket.  A compile request is
 * keyed (SHA-256 of source + everything that changes the output, cache/),
 * looked up in the SQLite cache, and on a miss queued to a pool of
 * pre-started worker processes (vxd_worker.c) that keep warm compilers.
 * Identical requests in flight share one compile.  Results are stored in one
 * transaction before the clients are answered.
 *
 * Robustness rules (developers' guide, "Bad input"):
 *   - bytes from a socket are validated, never trusted: a frame whose length
 *     is zero or over the limit gets an error reply and the connection is
 *     closed (framing is lost); a well-framed but malformed request gets a
 *     bad_request reply and the connection stays open;
 *   - a worker that crashes or exceeds the job timeout fails only the
 *     request it was compiling and is restarted;
 *   - completions look their client up by id: the client may be gone.
 *
 * THREAD NOTES: single-threaded; everything runs on the loop thread.
 * Handles are freed only in their close callbacks; write buffers live until
 * their write callbacks.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>
#include <uv.h>

#include "vxd.h"
#include "vxk.h"
#include "vxl.h"
#include "vxp.h"

#define VXD_READ_CHUNK (64 * 1024)
#define VXD_MAX_WORKERS 64

typedef struct vxd_server vxd_server;

/* Accumulates stream bytes until whole frames are in. */
typedef struct {
  uint8_t *p; /* malloc() */
  size_t n, cap;
} vxd_rbuf;

typedef struct vxd_conn {
  uv_pipe_t pipe; /* pipe.data = this */
  vxd_server *srv;
  uint64_t id;
  vxd_rbuf in;
  int closing;
  struct vxd_conn *prev, *next;
} vxd_conn;

typedef struct vxd_waiter {
  uint64_t conn_id, req_id;
  struct vxd_waiter *next;
} vxd_waiter;

typedef struct vxd_job {
  uint64_t id;
  char key[VXK_KEY_HEX + 1];
  int emit_ir;    /* such jobs are never shared */
  int crashes;    /* workers that died while compiling it */
  uint8_t *frame; /* request frame for the worker; malloc() */
  size_t frame_len;
  vxd_waiter *waiters;
  struct vxd_job *next; /* in the queue or the in-flight list */
} vxd_job;

typedef struct vxd_worker {
  uv_process_t proc;
  uv_pipe_t to, from; /* child's stdin (we write) / stdout (we read) */
  uv_timer_t timer;   /* job timeout */
  vxd_server *srv;
  unsigned slot;
  int open_handles; /* freed when this drops to 0 */
  int exited, timed_out;
  vxd_rbuf in;
  vxd_job *job; /* in flight; NULL when idle */
} vxd_worker;

typedef struct {
  vxd_worker *w;      /* NULL while (re)starting */
  uv_timer_t respawn; /* respawn.data = this slot */
  uint64_t spawned_ms;
  vxd_server *srv;
  unsigned index;
} vxd_slot;

struct vxd_server {
  const vxd_config *cfg;
  uv_loop_t *loop;
  uv_pipe_t listener;
  uv_signal_t sigint, sigterm;
  uv_timer_t idle, flush;
  int bound_socket; /* we created the socket file (not socket activation) */
  int lock_fd;
  vxk_cache *cache; /* reads only (hits never write) */
  vxd_store *store; /* every cache write, on its own thread; NULL once stopped */
  vxd_conn *conns;
  uint64_t next_conn_id, next_job_id;
  vxd_job *queue_head, *queue_tail, *inflight;
  vxd_slot slots[VXD_MAX_WORKERS];
  unsigned nslots;
  int stopping;
  /* counters: requests since start; hits/misses/errors not yet flushed */
  uint64_t requests, worker_restarts, start_ms;
  int64_t pending_hits, pending_misses, pending_errors;
};

static void vxd__log(const vxd_server *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void vxd__log_line(void *s, const char *msg) { vxd__log(s, "%s", msg); }
static void vxd__log(const vxd_server *s, const char *fmt, ...) {
  (void)s;
  va_list ap;
  va_start(ap, fmt);
  fputs("vortexd: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

/* ---- frame accumulation ---- */

static void vxd__rbuf_alloc(vxd_rbuf *rb, uv_buf_t *buf) {
  if (rb->cap - rb->n < VXD_READ_CHUNK) {
    size_t cap = rb->cap ? rb->cap : VXD_READ_CHUNK;
    while (cap - rb->n < VXD_READ_CHUNK)
      cap *= 2;
    uint8_t *p = realloc(rb->p, cap);
    if (!p) {
      *buf = uv_buf_init(NULL, 0);
      return;
    } /* libuv reports UV_ENOBUFS */
    rb->p = p;
    rb->cap = cap;
  }
  *buf = uv_buf_init((char *)rb->p + rb->n, (unsigned)(rb->cap - rb->n));
}

static void vxd__rbuf_consume(vxd_rbuf *rb, size_t n) {
  memmove(rb->p, rb->p + n, rb->n - n);
  rb->n -= n;
  /* give memory back after a large frame */
  if (rb->cap > 4 * VXD_READ_CHUNK && rb->n < VXD_READ_CHUNK) {
    uint8_t *p = realloc(rb->p, VXD_READ_CHUNK);
    if (p) rb->p = p, rb->cap = VXD_READ_CHUNK;
  }
}

static uint64_t vxd__now_ms(vxd_server *s) { return uv_now(s->loop); }

/* ---- client connections ---- */

typedef struct {
  uv_write_t req;
  uint8_t *frame;
  vxd_conn *close_after; /* close this connection once written */
} vxd_write;

static void vxd__conn_close_cb(uv_handle_t *h) {
  vxd_conn *c = h->data;
  vxd_server *s = c->srv;
  if (c->prev)
    c->prev->next = c->next;
  else
    s->conns = c->next;
  if (c->next) c->next->prev = c->prev;
  free(c->in.p);
  free(c);
}

static void vxd__conn_close(vxd_conn *c) {
  if (c->closing) return;
  c->closing = 1;
  uv_close((uv_handle_t *)&c->pipe, vxd__conn_close_cb);
}

static void vxd__write_cb(uv_write_t *req, int status) {
  vxd_write *w = (vxd_write *)req;
  if (w->close_after) vxd__conn_close(w->close_after);
  free(w->frame);
  free(w);
}

static vxd_conn *vxd__conn_find(vxd_server *s, uint64_t id) {
  for (vxd_conn *c = s->conns; c; c = c->next)
    if (c->id == id) return c->closing ? NULL : c;
  return NULL;
}

/* Sends resp to c; closes the connection afterwards when close_after. */
static void vxd__send(vxd_conn *c, const vxp_response *resp, int close_after) {
  uint8_t *frame = NULL;
  size_t len = 0;
  int rc = vxp_response_encode(resp, &frame, &len);
  if (rc != VXP_OK) {
    vxp_response err = {.id = resp->id,
                        .op = resp->op,
                        .status = VXP_STATUS_INTERNAL,
                        .message = (char *)"response could not be encoded (too large or out of memory)"};
    if (vxp_response_encode(&err, &frame, &len) != VXP_OK) {
      vxd__conn_close(c);
      return;
    }
  }
  vxd_write *w = calloc(1, sizeof *w);
  if (!w) {
    free(frame);
    vxd__conn_close(c);
    return;
  }
  w->frame = frame;
  w->close_after = close_after ? c : NULL;
  uv_buf_t b = uv_buf_init((char *)frame, (unsigned)len);
  if (uv_write(&w->req, (uv_stream_t *)&c->pipe, &b, 1, vxd__write_cb) != 0) {
    free(frame);
    free(w);
    vxd__conn_close(c);
  }
}

static void vxd__send_error(vxd_conn *c, uint64_t id, vxp_op op, vxp_status st, const char *msg,
                            int close_after) {
  vxp_response r = {.id = id, .op = op, .status = st, .message = (char *)msg};
  vxd__send(c, &r, close_after);
}

/* ---- cache <-> protocol ---- */

/* Fills resp from a cache entry: kernel records decoded, object moved. */
static int vxd__kernels_from_cache(vxk_entry *e, vxp_response *resp) {
  resp->kernels = calloc(e->nkernels ? e->nkernels : 1, sizeof *resp->kernels);
  if (!resp->kernels) return VXP_ENOMEM;
  for (uint32_t i = 0; i < e->nkernels; i++) {
    int rc = vxp_kernel_meta_decode(e->kernels[i].metadata, e->kernels[i].metadata_size, &resp->kernels[i]);
    if (rc != VXP_OK) return rc;
    resp->nkernels = i + 1;
  }
  resp->object = e->object; /* moved */
  resp->object_size = e->object_size;
  e->object = NULL;
  return VXP_OK;
}

/* Queues a worker's successful result for the store thread. */
static void vxd__store(vxd_server *s, const char *key, const vxp_response *r) {
  if (s->store && vxd_store_put(s->store, key, r) != 0) vxd__log(s, "not cached %s: out of memory", key);
}

/* Hands the counters and the LRU times of the entries read to the store
 * thread (every second, and when stopping). */
static void vxd__flush_counters(vxd_server *s) {
  if (s->store) vxd_store_flush(s->store, s->cache, s->pending_hits, s->pending_misses, s->pending_errors);
  s->pending_hits = s->pending_misses = s->pending_errors = 0;
}

static void vxd__flush_cb(uv_timer_t *t) { vxd__flush_counters(t->data); }

/* ---- workers ---- */

static void vxd__dispatch(vxd_server *s);
static void vxd__respawn_cb(uv_timer_t *t);

static void vxd__job_free(vxd_job *j) {
  while (j->waiters) {
    vxd_waiter *w = j->waiters;
    j->waiters = w->next;
    free(w);
  }
  free(j->frame);
  free(j);
}

static void vxd__inflight_remove(vxd_server *s, vxd_job *j) {
  for (vxd_job **pp = &s->inflight; *pp; pp = &(*pp)->next)
    if (*pp == j) {
      *pp = j->next;
      return;
    }
}

/* Answers every waiter of job j with resp (id replaced per waiter). */
static void vxd__answer_job(vxd_server *s, vxd_job *j, vxp_response *resp) {
  for (vxd_waiter *w = j->waiters; w; w = w->next) {
    vxd_conn *c = vxd__conn_find(s, w->conn_id);
    if (!c) continue;
    resp->id = w->req_id;
    vxd__send(c, resp, 0);
  }
}

static void vxd__fail_job(vxd_server *s, vxd_job *j, const char *msg) {
  vxp_response r = {
      .op = VXP_OP_COMPILE, .status = VXP_STATUS_INTERNAL, .message = (char *)msg, .key = j->key};
  vxd__answer_job(s, j, &r);
}

static void vxd__worker_handle_close_cb(uv_handle_t *h) {
  vxd_worker *w = h->data;
  if (--w->open_handles > 0) return;
  vxd_server *s = w->srv;
  vxd_slot *slot = &s->slots[w->slot];
  free(w->in.p);
  if (slot->w == w) slot->w = NULL;
  free(w);
  if (s->stopping) return;
  /* A worker that dies within a second of starting waits before the next
   * try, so a broken installation does not spin. */
  uint64_t delay = vxd__now_ms(s) - slot->spawned_ms < 1000 ? 1000 : 0;
  uv_timer_start(&slot->respawn, vxd__respawn_cb, delay, 0);
}

static void vxd__worker_close(vxd_worker *w) {
  uv_handle_t *hs[4] = {(uv_handle_t *)&w->proc, (uv_handle_t *)&w->to, (uv_handle_t *)&w->from,
                        (uv_handle_t *)&w->timer};
  for (int i = 0; i < 4; i++)
    if (!uv_is_closing(hs[i])) uv_close(hs[i], vxd__worker_handle_close_cb);
}

/* The worker process ended: fail its job (if any) and close its handles. */
static void vxd__worker_exit_cb(uv_process_t *p, int64_t status, int term_signal) {
  vxd_worker *w = p->data;
  vxd_server *s = w->srv;
  w->exited = 1;
  if (w->job && !w->timed_out && w->job->crashes++ == 0 && !s->stopping) {
    /* The worker may have died for reasons of its own (killed, out of
     * memory): give the job one more worker.  A source that crashes the
     * compiler crashes the second one too and then fails. */
    vxd__inflight_remove(s, w->job);
    w->job->next = s->queue_head;
    s->queue_head = w->job;
    if (!s->queue_tail) s->queue_tail = w->job;
    w->job = NULL;
  }
  if (w->job) {
    char msg[256];
    if (w->timed_out)
      snprintf(msg, sizeof msg, "compile exceeded the %u s limit; its worker was stopped and restarted",
               s->cfg->job_timeout_s);
    else
      snprintf(msg, sizeof msg,
               "compile worker crashed twice (last: %s %d) while compiling this source; it was restarted",
               term_signal ? "signal" : "exit status", term_signal ? term_signal : (int)status);
    vxd__fail_job(s, w->job, msg);
    vxd__inflight_remove(s, w->job);
    vxd__job_free(w->job);
    w->job = NULL;
  }
  if (!s->stopping) {
    s->worker_restarts++;
    vxd__log(s, "worker %u ended (%s %d); restarting", w->slot, term_signal ? "signal" : "status",
             term_signal ? term_signal : (int)status);
  }
  vxd__worker_close(w);
  vxd__dispatch(s);
}

static void vxd__worker_timeout_cb(uv_timer_t *t) {
  vxd_worker *w = t->data;
  w->timed_out = 1;
  uv_process_kill(&w->proc, SIGKILL);
}

static void vxd__worker_alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
  vxd_worker *w = h->data;
  vxd__rbuf_alloc(&w->in, buf);
}

/* A whole response frame from a worker. */
static void vxd__worker_result(vxd_worker *w, const uint8_t *payload, size_t len) {
  vxd_server *s = w->srv;
  vxd_job *j = w->job;
  if (!j) return; /* nothing asked: ignore */
  uv_timer_stop(&w->timer);
  w->job = NULL;
  vxd__inflight_remove(s, j);
  vxp_response r;
  if (vxp_response_decode(payload, len, &r) != VXP_OK) {
    vxd__fail_job(s, j, "compile worker sent a malformed result");
  } else {
    s->pending_misses++;
    if (r.status == VXP_STATUS_OK)
      vxd__store(s, j->key, &r);
    else if (r.status == VXP_STATUS_COMPILE_ERROR)
      s->pending_errors++;
    free(r.key);
    r.key = strdup(j->key);
    r.cached = false;
    vxd__answer_job(s, j, &r);
    vxp_response_clear(&r);
  }
  vxd__job_free(j);
  vxd__dispatch(s);
}

static void vxd__worker_read_cb(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf) {
  vxd_worker *w = st->data;
  if (nread < 0) {
    uv_read_stop(st); /* EOF or error: the exit callback cleans up */
    return;
  }
  w->in.n += (size_t)nread;
  while (w->in.n >= VXP_FRAME_HEADER_SIZE) {
    uint32_t len = 0;
    if (vxp_frame_length(w->in.p, VXP_MAX_FRAME_DEFAULT, &len) != VXP_OK) {
      uv_process_kill(&w->proc, SIGKILL); /* lost framing: start over */
      return;
    }
    if (w->in.n < VXP_FRAME_HEADER_SIZE + len) break;
    vxd__worker_result(w, w->in.p + VXP_FRAME_HEADER_SIZE, len);
    vxd__rbuf_consume(&w->in, VXP_FRAME_HEADER_SIZE + len);
  }
}

static void vxd__spawn(vxd_server *s, vxd_slot *slot) {
  vxd_worker *w = calloc(1, sizeof *w);
  if (!w) return;
  w->srv = s;
  w->slot = slot->index;
  uv_pipe_init(s->loop, &w->to, 0);
  uv_pipe_init(s->loop, &w->from, 0);
  uv_timer_init(s->loop, &w->timer);
  w->proc.data = w->to.data = w->from.data = w->timer.data = w;
  uv_stdio_container_t stdio[3] = {
      {.flags = UV_CREATE_PIPE | UV_READABLE_PIPE, .data.stream = (uv_stream_t *)&w->to},
      {.flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE, .data.stream = (uv_stream_t *)&w->from},
      {.flags = UV_INHERIT_FD, .data.fd = 2},
  };
  char *args[] = {(char *)s->cfg->self_exe, (char *)"--worker", NULL};
  uv_process_options_t o = {.exit_cb = vxd__worker_exit_cb,
                            .file = s->cfg->self_exe,
                            .args = args,
                            .stdio_count = 3,
                            .stdio = stdio};
  slot->spawned_ms = vxd__now_ms(s);
  int rc = uv_spawn(s->loop, &w->proc, &o);
  if (rc != 0) {
    vxd__log(s, "cannot start worker %s: %s", s->cfg->self_exe, uv_strerror(rc));
    /* uv_spawn initialised proc; close all four, the retry waits a second */
    w->open_handles = 4;
    vxd__worker_close(w);
    return;
  }
  w->open_handles = 4;
  slot->w = w;
  uv_read_start((uv_stream_t *)&w->from, vxd__worker_alloc_cb, vxd__worker_read_cb);
  vxd__dispatch(s);
}

static void vxd__respawn_cb(uv_timer_t *t) {
  vxd_slot *slot = t->data;
  if (!slot->srv->stopping && !slot->w) vxd__spawn(slot->srv, slot);
}

static void vxd__worker_write_cb(uv_write_t *req, int status) {
  free(req); /* a failed write means the worker died: its exit callback fails the job */
}

/* Hands queued jobs to idle workers. */
static void vxd__dispatch(vxd_server *s) {
  for (unsigned i = 0; i < s->nslots && s->queue_head; i++) {
    vxd_worker *w = s->slots[i].w;
    if (!w || w->job || w->exited) continue;
    vxd_job *j = s->queue_head;
    s->queue_head = j->next;
    if (!s->queue_head) s->queue_tail = NULL;
    j->next = s->inflight;
    s->inflight = j;
    w->job = j;
    w->timed_out = 0;
    uv_write_t *wr = calloc(1, sizeof *wr);
    uv_buf_t b = uv_buf_init((char *)j->frame, (unsigned)j->frame_len);
    if (!wr || uv_write(wr, (uv_stream_t *)&w->to, &b, 1, vxd__worker_write_cb) != 0) {
      free(wr);
      uv_process_kill(&w->proc, SIGKILL);
      continue;
    }
    if (s->cfg->job_timeout_s)
      uv_timer_start(&w->timer, vxd__worker_timeout_cb, (uint64_t)s->cfg->job_timeout_s * 1000u, 0);
  }
}

/* ---- requests ---- */

static void vxd__on_hello(vxd_conn *c, const vxp_request *req) {
  char server[256];
  snprintf(server, sizeof server, "%s (%s)", VXD_SERVER_NAME, vxl_toolchain_summary());
  vxp_response r = {.id = req->id,
                    .op = VXP_OP_HELLO,
                    .status = VXP_STATUS_OK,
                    .proto_version = VXP_PROTOCOL_VERSION,
                    .server = server,
                    .max_frame = c->srv->cfg->max_frame};
  vxd__send(c, &r, 0);
}

static void vxd__on_stats(vxd_conn *c, const vxp_request *req) {
  vxd_server *s = c->srv;
  vxk_stats ks;
  /* counters and entries as of now: what is queued is written first */
  vxd__flush_counters(s);
  if (s->store) vxd_store_drain(s->store);
  if (vxk_stats_get(s->cache, &ks) != VXK_OK) {
    vxd__send_error(c, req->id, VXP_OP_STATS, VXP_STATUS_INTERNAL, vxk_errmsg(s->cache), 0);
    return;
  }
  vxp_response r = {.id = req->id, .op = VXP_OP_STATS, .status = VXP_STATUS_OK};
  r.stats.hits = ks.hits;
  r.stats.misses = ks.misses;
  r.stats.compile_errors = ks.compile_errors;
  r.stats.entries = ks.entries;
  r.stats.bytes = ks.bytes;
  r.stats.requests = s->requests;
  r.stats.workers = s->nslots;
  r.stats.worker_restarts = s->worker_restarts;
  r.stats.uptime_ms = vxd__now_ms(s) - s->start_ms;
  vxd__send(c, &r, 0);
}

/* Answers req from the cache entry key.  Returns 0 when answered,
 * VXK_ENOTFOUND, or another VXK error (logged, not answered). */
static int vxd__serve_cached(vxd_conn *c, const vxp_request *req, const char *key, const char *kernel) {
  vxd_server *s = c->srv;
  vxk_entry e;
  int rc = vxk_get(s->cache, key, kernel, &e);
  if (rc == VXK_ENOTFOUND && s->store)
    rc = vxd_store_pending(s->store, key, kernel, &e); /* not written yet */
  if (rc != VXK_OK) {
    if (rc != VXK_ENOTFOUND) vxd__log(s, "cache read %s: %s", key, vxk_errmsg(s->cache));
    return rc;
  }
  vxp_response r = {.id = req->id, .op = req->op, .status = VXP_STATUS_OK, .cached = true};
  int drc = vxd__kernels_from_cache(&e, &r);
  vxk_entry_clear(&e);
  if (drc != VXP_OK) {
    vxp_response_clear(&r);
    vxd__log(s, "cache entry %s has unreadable metadata", key);
    return VXK_EIO;
  }
  r.key = (char *)key;
  s->pending_hits++;
  vxd__send(c, &r, 0);
  r.key = NULL; /* borrowed */
  vxp_response_clear(&r);
  return 0;
}

static void vxd__on_fetch(vxd_conn *c, const vxp_request *req) {
  if (!vxk_key_valid(req->key)) {
    vxd__send_error(c, req->id, VXP_OP_FETCH, VXP_STATUS_BAD_REQUEST,
                    "key must be 64 lowercase hexadecimal digits", 0);
    return;
  }
  int rc = vxd__serve_cached(c, req, req->key, req->kernel);
  if (rc == VXK_ENOTFOUND)
    vxd__send_error(c, req->id, VXP_OP_FETCH, VXP_STATUS_NOT_FOUND,
                    req->kernel ? "no such kernel under that key" : "no cache entry with that key", 0);
  else if (rc != 0)
    vxd__send_error(c, req->id, VXP_OP_FETCH, VXP_STATUS_INTERNAL, "cache read failed", 0);
}

/* The cache key: the source bytes, the lowering's fingerprint of the
 * request's options (everything that changes a compile's output, which only
 * the lowering knows) and this daemon's version.  The source name is left
 * out on purpose: it changes diagnostics only (which are not cached), and
 * keeping it out lets the same kernel under two paths share one entry
 * (ccache users who build from several checkouts miss for exactly this
 * reason). */
static int vxd__key(const vxp_request *req, char key[VXK_KEY_HEX + 1]) {
  vxl_options o;
  vxd_options_from_request(req, &o);
  char fp[2048];
  if (vxl_fingerprint(&o, fp, sizeof fp) < 0) return VXK_EINVAL;
  const char *parts[] = {VXD_SERVER_NAME, fp};
  return vxk_key(req->source, req->source_len, parts, sizeof parts / sizeof parts[0], key);
}

static void vxd__on_compile(vxd_conn *c, const vxp_request *req) {
  vxd_server *s = c->srv;
  char key[VXK_KEY_HEX + 1];
  if (vxd__key(req, key) != VXK_OK) {
    vxd__send_error(c, req->id, VXP_OP_COMPILE, VXP_STATUS_INTERNAL, "out of memory", 0);
    return;
  }
  /* A request for lowered IR always compiles (IR is not cached). */
  if (!req->emit_ir && vxd__serve_cached(c, req, key, NULL) == 0) return;

  vxd_waiter *wt = calloc(1, sizeof *wt);
  if (!wt) {
    vxd__send_error(c, req->id, VXP_OP_COMPILE, VXP_STATUS_INTERNAL, "out of memory", 0);
    return;
  }
  wt->conn_id = c->id;
  wt->req_id = req->id;
  /* the same source already compiling or queued: wait for that compile */
  if (!req->emit_ir) {
    vxd_job *lists[2] = {s->inflight, s->queue_head};
    for (int l = 0; l < 2; l++)
      for (vxd_job *j = lists[l]; j; j = j->next)
        if (!j->emit_ir && strcmp(j->key, key) == 0) {
          wt->next = j->waiters;
          j->waiters = wt;
          return;
        }
  }
  vxd_job *j = calloc(1, sizeof *j);
  if (!j) {
    free(wt);
    vxd__send_error(c, req->id, VXP_OP_COMPILE, VXP_STATUS_INTERNAL, "out of memory", 0);
    return;
  }
  j->id = ++s->next_job_id;
  memcpy(j->key, key, sizeof j->key);
  j->emit_ir = req->emit_ir;
  j->waiters = wt;
  vxp_request wreq = *req;
  wreq.id = j->id;
  if (vxp_request_encode(&wreq, &j->frame, &j->frame_len) != VXP_OK) {
    vxd__job_free(j);
    vxd__send_error(c, req->id, VXP_OP_COMPILE, VXP_STATUS_INTERNAL, "could not queue the compile", 0);
    return;
  }
  if (s->queue_tail)
    s->queue_tail->next = j;
  else
    s->queue_head = j;
  s->queue_tail = j;
  vxd__dispatch(s);
}

static void vxd__on_payload(vxd_conn *c, const uint8_t *p, size_t len) {
  vxd_server *s = c->srv;
  s->requests++;
  vxp_request req;
  int rc = vxp_request_decode(p, len, &req);
  if (rc != VXP_OK) {
    char msg[160];
    snprintf(msg, sizeof msg, "malformed request: %s", vxp_strerror(rc));
    vxd__send_error(c, req.id, req.op, VXP_STATUS_BAD_REQUEST, msg, 0);
    return;
  }
  /* hello must name the client's protocol version, any other request may
   * (a client then needs no hello round trip): it must be ours */
  if ((req.op == VXP_OP_HELLO || req.proto_version != 0) && req.proto_version != VXP_PROTOCOL_VERSION) {
    char msg[128];
    snprintf(msg, sizeof msg, "protocol version %u not supported (this daemon speaks %u)", req.proto_version,
             VXP_PROTOCOL_VERSION);
    vxd__send_error(c, req.id, req.op, VXP_STATUS_BAD_REQUEST, msg, 0);
    vxp_request_clear(&req);
    return;
  }
  switch (req.op) {
  case VXP_OP_HELLO: vxd__on_hello(c, &req); break;
  case VXP_OP_STATS: vxd__on_stats(c, &req); break;
  case VXP_OP_FETCH: vxd__on_fetch(c, &req); break;
  case VXP_OP_COMPILE: vxd__on_compile(c, &req); break;
  }
  vxp_request_clear(&req);
}

static void vxd__conn_alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
  vxd_conn *c = h->data;
  vxd__rbuf_alloc(&c->in, buf);
}

static void vxd__conn_read_cb(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf) {
  vxd_conn *c = st->data;
  vxd_server *s = c->srv;
  if (nread < 0) {
    vxd__conn_close(c);
    return;
  }
  c->in.n += (size_t)nread;
  if (s->cfg->idle_timeout_s) uv_timer_again(&s->idle);
  while (!c->closing && c->in.n >= VXP_FRAME_HEADER_SIZE) {
    uint32_t len = 0;
    int rc = vxp_frame_length(c->in.p, s->cfg->max_frame, &len);
    if (rc != VXP_OK) {
      /* framing is lost: answer, then close this connection only */
      char msg[160];
      snprintf(msg, sizeof msg, "%s (limit %u bytes); closing the connection", vxp_strerror(rc),
               s->cfg->max_frame);
      uv_read_stop(st);
      vxd__send_error(c, 0, (vxp_op)0, VXP_STATUS_BAD_REQUEST, msg, 1);
      return;
    }
    if (c->in.n < VXP_FRAME_HEADER_SIZE + len) break;
    vxd__on_payload(c, c->in.p + VXP_FRAME_HEADER_SIZE, len);
    vxd__rbuf_consume(&c->in, VXP_FRAME_HEADER_SIZE + len);
  }
}

static void vxd__on_connection(uv_stream_t *server, int status) {
  vxd_server *s = server->data;
  if (status < 0 || s->stopping) return;
  vxd_conn *c = calloc(1, sizeof *c);
  if (!c) return;
  c->srv = s;
  c->id = ++s->next_conn_id;
  uv_pipe_init(s->loop, &c->pipe, 0);
  c->pipe.data = c;
  c->next = s->conns;
  if (s->conns) s->conns->prev = c;
  s->conns = c;
  if (uv_accept(server, (uv_stream_t *)&c->pipe) != 0) {
    vxd__conn_close(c);
    return;
  }
  uv_read_start((uv_stream_t *)&c->pipe, vxd__conn_alloc_cb, vxd__conn_read_cb);
}

/* ---- start-up and shutdown ---- */

static void vxd__close_if_open(uv_handle_t *h) {
  if (h->loop && !uv_is_closing(h)) uv_close(h, NULL);
}

static void vxd__stop(vxd_server *s, const char *why) {
  if (s->stopping) return;
  s->stopping = 1;
  vxd__log(s, "stopping (%s)", why);
  sd_notify(0, "STOPPING=1");
  vxd__close_if_open((uv_handle_t *)&s->listener);
  if (s->bound_socket) unlink(s->cfg->socket_path);
  for (vxd_conn *c = s->conns; c; c = c->next)
    vxd__conn_close(c);
  for (unsigned i = 0; i < s->nslots; i++) {
    vxd__close_if_open((uv_handle_t *)&s->slots[i].respawn);
    vxd_worker *w = s->slots[i].w;
    if (!w) continue;
    if (!w->exited) {
      /* closing its stdin ends the worker; SIGTERM in case it is busy */
      if (!uv_is_closing((uv_handle_t *)&w->to)) uv_close((uv_handle_t *)&w->to, vxd__worker_handle_close_cb);
      uv_process_kill(&w->proc, SIGTERM);
    }
  }
  vxd__close_if_open((uv_handle_t *)&s->sigint);
  vxd__close_if_open((uv_handle_t *)&s->sigterm);
  vxd__close_if_open((uv_handle_t *)&s->idle);
  vxd__close_if_open((uv_handle_t *)&s->flush);
  vxd__flush_counters(s);
  vxd_store_close(s->store); /* writes what is queued first */
  s->store = NULL;
  while (s->queue_head) { /* queued jobs will not run */
    vxd_job *j = s->queue_head;
    s->queue_head = j->next;
    vxd__job_free(j);
  }
  s->queue_tail = NULL;
}

static void vxd__signal_cb(uv_signal_t *h, int signum) {
  vxd__stop(h->data, signum == SIGINT ? "SIGINT" : "SIGTERM");
}

static void vxd__idle_cb(uv_timer_t *t) {
  vxd_server *s = t->data;
  if (!s->conns && !s->queue_head && !s->inflight) vxd__stop(s, "idle timeout");
}

/* Binds the socket (mode 0600) after taking the single-instance lock.
 * Returns 0, 1 (failure, logged) or 2 (another daemon holds the lock). */
static int vxd__listen(vxd_server *s) {
  const char *path = s->cfg->socket_path;
  uv_pipe_init(s->loop, &s->listener, 0);
  s->listener.data = s;
  if (sd_listen_fds(1) >= 1) { /* systemd socket activation */
    if (uv_pipe_open(&s->listener, SD_LISTEN_FDS_START) != 0) return 1;
  } else {
    char dir[sizeof s->cfg->socket_path];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash && slash != dir) {
      *slash = '\0';
      if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        vxd__log(s, "cannot create %s: %s", dir, strerror(errno));
        return 1;
      }
    }
    char lock[sizeof s->cfg->socket_path + 8];
    snprintf(lock, sizeof lock, "%s.lock", path);
    s->lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (s->lock_fd < 0) {
      vxd__log(s, "cannot open %s: %s", lock, strerror(errno));
      return 1;
    }
    if (flock(s->lock_fd, LOCK_EX | LOCK_NB) != 0) {
      vxd__log(s, "another vortexd already serves %s", path);
      return 2;
    }
    unlink(path); /* a stale socket of a daemon that died: we hold the lock */
    int rc = uv_pipe_bind(&s->listener, path);
    if (rc != 0) {
      vxd__log(s, "cannot bind %s: %s", path, uv_strerror(rc));
      return 1;
    }
    s->bound_socket = 1;
    chmod(path, 0600);
  }
  int rc = uv_listen((uv_stream_t *)&s->listener, 128, vxd__on_connection);
  if (rc != 0) {
    vxd__log(s, "cannot listen on %s: %s", path, uv_strerror(rc));
    return 1;
  }
  return 0;
}

int vxd_server_run(const vxd_config *cfg) {
  signal(SIGPIPE, SIG_IGN);
  vxd_server *s = calloc(1, sizeof *s);
  if (!s) return 1;
  s->cfg = cfg;
  s->lock_fd = -1;
  s->loop = uv_default_loop();
  s->start_ms = uv_now(s->loop);
  char err[512] = "";
  if (vxk_open(cfg->cache_dir, cfg->max_cache_bytes, &s->cache, err, sizeof err) != VXK_OK) {
    vxd__log(s, "%s", err);
    free(s);
    return 1;
  }
  if (vxd_store_open(s->loop, cfg->cache_dir, cfg->max_cache_bytes, vxd__log_line, s, &s->store, err,
                     sizeof err) != 0) {
    vxd__log(s, "%s", err);
    vxk_close(s->cache);
    free(s);
    return 1;
  }
  int status = vxd__listen(s);
  if (status != 0) {
    vxd_store_close(s->store);
    uv_close((uv_handle_t *)&s->listener, NULL);
    uv_run(s->loop, UV_RUN_DEFAULT);
    uv_loop_close(s->loop);
    vxk_close(s->cache);
    if (s->lock_fd >= 0) close(s->lock_fd);
    free(s);
    return status;
  }
  uv_signal_init(s->loop, &s->sigint);
  uv_signal_init(s->loop, &s->sigterm);
  s->sigint.data = s->sigterm.data = s;
  uv_signal_start(&s->sigint, vxd__signal_cb, SIGINT);
  uv_signal_start(&s->sigterm, vxd__signal_cb, SIGTERM);
  uv_timer_init(s->loop, &s->flush);
  s->flush.data = s;
  uv_timer_start(&s->flush, vxd__flush_cb, 1000, 1000);
  uv_timer_init(s->loop, &s->idle);
  s->idle.data = s;
  if (cfg->idle_timeout_s)
    uv_timer_start(&s->idle, vxd__idle_cb, cfg->idle_timeout_s * 1000ull, cfg->idle_timeout_s * 1000ull);

  s->nslots = cfg->workers < 1 ? 1 : cfg->workers > VXD_MAX_WORKERS ? VXD_MAX_WORKERS : cfg->workers;
  for (unsigned i = 0; i < s->nslots; i++) {
    s->slots[i].srv = s;
    s->slots[i].index = i;
    uv_timer_init(s->loop, &s->slots[i].respawn);
    s->slots[i].respawn.data = &s->slots[i];
    vxd__spawn(s, &s->slots[i]);
  }
  if (cfg->verbose)
    vxd__log(s, "serving %s (cache %s, %u workers)", cfg->socket_path, cfg->cache_dir, s->nslots);
  sd_notifyf(0, "READY=1\nSTATUS=serving %s", cfg->socket_path);

  uv_run(s->loop, UV_RUN_DEFAULT);

  while (s->inflight) {
    vxd_job *j = s->inflight;
    s->inflight = j->next;
    vxd__job_free(j);
  }
  int lrc = uv_loop_close(s->loop);
  if (lrc != 0) vxd__log(s, "loop closed with handles still open");
  vxk_close(s->cache);
  if (s->lock_fd >= 0) close(s->lock_fd);
  free(s);
  return 0;
}
