/*
 * vxd_jobs.c - compile jobs: the three lists a job is on during its life
 * and the clients waiting for it.
 *
 * A miss becomes a job (vxd_requests.c), which identical requests join
 * as waiters.  A job is on exactly one list at a time:
 *
 *   lookups --(remote miss)--> queue --(vxd__job_next)--> in flight
 *      |                         ^                            |
 *      +-- remote hit: answered  +------(worker died)---------+
 *                                                             |
 *                       vxd__job_done / vxd__job_fail <-------+
 *
 * and only this file edits the lists.  A finished job is handed here by
 * the pool (vxd_pool.c): counted, queued for the cache, answered to every
 * waiter, freed.  Each waiter counts on its connection (vxd_conn.waiting),
 * so a connection with a compile outstanding is not closed as idle.
 * Loop thread only.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "vxd_loop.h"

/* The waiter's connection, if it is still open. */
static vxd_conn *vxd__waiter_conn(vxd_server *s, const vxd_waiter *w) {
  return vxd__conn_find(s, w->conn_id);
}

void vxd__job_free(vxd_server *s, vxd_job *j) {
  /* the farm waits on this daemon's lease: shared, or handed on */
  if (j->leased && s->remote) vxd_remote_lease_end(s->remote, j->key, j->shared);
  while (j->waiters) {
    vxd_waiter *w = j->waiters;
    j->waiters = w->next;
    vxd_conn *c = vxd__waiter_conn(s, w);
    if (c) {
      assert(c->waiting > 0);
      c->waiting--;
    }
    free(w);
  }
  free(j->frame);
  free(j);
}

vxd_job *vxd__job_create(vxd_server *s, const vxp_request *req, const char key[VXK_KEY_HEX + 1]) {
  vxd_job *j = calloc(1, sizeof *j);
  if (!j) return NULL;
  j->id = ++s->jobs.next_id;
  memcpy(j->key, key, sizeof j->key);
  /* IR is never cached, and a host lowering is cheap: neither is shared */
  j->emit_ir = req->emit_ir || req->op == VXP_OP_HOST;
  j->bypass = req->cache == VXP_CACHE_BYPASS;
  j->op = req->op;
  vxl_options o;
  vxd_options_from_request(s->cfg, req, &o);
  char options[VXD_OPTIONS_MAX];
  vxd_cache_origin(&o, req->source_name, j->source_name, options);
  vxp_target_name(o.vortex_abi, o.xlen, j->target);
  vxp_request wreq = *req; /* the worker answers the job, not the client */
  wreq.id = j->id;
  wreq.key = req->op == VXP_OP_COMPILE ? j->key : NULL; /* the entry's, computed here */
  if (vxp_request_encode(&wreq, &j->frame, &j->frame_len) != VXP_OK) {
    free(j);
    return NULL;
  }
  return j;
}

int vxd__job_wait(vxd_job *j, vxd_conn *c, uint64_t req_id, uint64_t arrived_ns) {
  vxd_waiter *w = calloc(1, sizeof *w);
  if (!w) return -ENOMEM;
  *w = (vxd_waiter){.conn_id = c->id, .req_id = req_id, .arrived_ns = arrived_ns, .next = j->waiters};
  j->waiters = w;
  c->waiting++;
  return 0;
}

vxd_job *vxd__job_shared(vxd_server *s, const char *key) {
  vxd_job *lists[3] = {s->jobs.inflight, s->jobs.queue_head, s->jobs.lookups};
  for (int l = 0; l < 3; l++)
    for (vxd_job *j = lists[l]; j; j = j->next)
      if (!j->emit_ir && strcmp(j->key, key) == 0) return j;
  return NULL;
}

void vxd__job_await_remote(vxd_server *s, vxd_job *j) {
  assert(!j->emit_ir && !vxd__job_shared(s, j->key)); /* one lookup per key */
  j->next = s->jobs.lookups;
  s->jobs.lookups = j;
}

vxd_job *vxd__job_take_remote(vxd_server *s, const char *key) {
  for (vxd_job **pp = &s->jobs.lookups; *pp; pp = &(*pp)->next)
    if (strcmp((*pp)->key, key) == 0) {
      vxd_job *j = *pp;
      *pp = j->next;
      j->next = NULL;
      return j;
    }
  return NULL;
}

void vxd__job_queue(vxd_server *s, vxd_job *j) {
  assert(j->waiters && j->started_ns == 0); /* a new job, someone waits for it */
  j->next = NULL;
  if (s->jobs.queue_tail)
    s->jobs.queue_tail->next = j;
  else
    s->jobs.queue_head = j;
  s->jobs.queue_tail = j;
}

vxd_job *vxd__job_next(vxd_server *s) {
  vxd_job *j = s->jobs.queue_head;
  if (!j) return NULL;
  assert(j->started_ns == 0 || j->crashes > 0); /* started again only after its worker died */
  s->jobs.queue_head = j->next;
  if (!s->jobs.queue_head) s->jobs.queue_tail = NULL;
  j->next = s->jobs.inflight;
  s->jobs.inflight = j;
  j->started_ns = uv_hrtime();
  return j;
}

/* Takes j, which a worker was running, off the in-flight list. */
static void vxd__inflight_remove(vxd_server *s, vxd_job *j) {
  for (vxd_job **pp = &s->jobs.inflight; *pp; pp = &(*pp)->next)
    if (*pp == j) {
      *pp = j->next;
      j->next = NULL;
      return;
    }
  assert(!"a running job is on the in-flight list");
}

void vxd__job_retry(vxd_server *s, vxd_job *j) {
  vxd__inflight_remove(s, j);
  j->next = s->jobs.queue_head;
  s->jobs.queue_head = j;
  if (!s->jobs.queue_tail) s->jobs.queue_tail = j;
}

/* Answers every waiter of job j with resp (id replaced per waiter).  The
 * waiter that started the job is the last of the list (each one waiting
 * is put first); the others of a compile joined it and are told so. */
static void vxd__answer(vxd_server *s, vxd_job *j, const vxp_response *resp) {
  /* encoded once (twice when some joined); each waiter gets a copy with
   * its own request id */
  uint8_t *frame = NULL, *jframe = NULL;
  size_t len = 0, jlen = 0;
  int rc = vxd__encode(resp, &frame, &len);
  if (rc == 0 && resp->op == VXP_OP_COMPILE && j->waiters && j->waiters->next) {
    vxp_response joined = *resp;
    joined.joined = true;
    rc = vxd__encode(&joined, &jframe, &jlen);
  }
  if (rc != 0) {
    for (vxd_waiter *w = j->waiters; w; w = w->next) {
      vxd_conn *c = vxd__waiter_conn(s, w);
      if (c) vxd__conn_close(c);
    }
    free(frame);
    return;
  }
  for (vxd_waiter *w = j->waiters; w; w = w->next) {
    vxd_conn *c = vxd__waiter_conn(s, w);
    if (!c) continue;
    const int starter = w->next == NULL;
    const uint8_t *src = starter || !jframe ? frame : jframe;
    size_t n = starter || !jframe ? len : jlen;
    uint8_t *copy = starter ? frame : malloc(n); /* the starter, last, takes the frame */
    if (!copy) {
      vxd__conn_close(c);
      continue;
    }
    if (copy != src) memcpy(copy, src, n);
    if (copy == frame) frame = NULL;
    if (vxd_fails_assert(vxp_frame_set_id(copy, n, w->req_id) == VXP_OK)) { /* never another's id */
      free(copy);
      vxd__conn_close(c);
      continue;
    }
    vxd__send_frame(c, copy, n, 0);
    vxd__log_at(s, VXD_LOG_DEBUG, "%s %.12s %s %llu us: %s for %s, client pid %d", vxp_op_name(j->op), j->key,
                resp->status != VXP_STATUS_OK ? vxp_status_name(resp->status)
                : !starter                    ? "joined"
                : resp->cached                ? "hit"
                                              : "miss",
                (unsigned long long)((uv_hrtime() - w->arrived_ns) / 1000u),
                j->source_name[0] ? j->source_name : "<source>", j->target, (int)c->peer_pid);
  }
  free(frame);
  free(jframe);
}

void vxd__job_done(vxd_server *s, vxd_job *j, vxp_response *r) {
  vxd__inflight_remove(s, j);
  uint64_t us = (uv_hrtime() - j->started_ns) / 1000u;
  if (j->op == VXP_OP_COMPILE) { /* a host lowering is neither a miss nor cached */
    static const uint32_t bounds[] = VXP_COMPILE_BUCKET_BOUNDS_US;
    size_t b = 0;
    while (b < sizeof bounds / sizeof *bounds && us > bounds[b])
      b++;
    s->compile_buckets[b]++;
    s->compile_sum_us += us;
    s->pending.misses++;
    if (r->status == VXP_STATUS_COMPILE_ERROR) s->pending.compile_errors++;
  }
  free(r->key);
  r->key = j->op == VXP_OP_COMPILE ? strdup(j->key) : NULL;
  r->cached = false;
  /* what the key was derived from stays here, for the cache: not sent */
  char *inputs = r->key_inputs;
  uint8_t *lines = r->line_hashes;
  size_t lines_size = r->line_hashes_size;
  r->key_inputs = NULL, r->line_hashes = NULL, r->line_hashes_size = 0;
  vxd__answer(s, j, r);
  r->key_inputs = inputs, r->line_hashes = lines, r->line_hashes_size = lines_size;
  /* then stored: the entry's bytes, as the worker encoded them, move on */
  if (j->op == VXP_OP_COMPILE && r->status == VXP_STATUS_OK && r->entry && !j->bypass) {
    j->shared = s->store != NULL; /* the store's written hook shares it */
    vxd__cache_put(s, j, r, us);
  }
  vxd__job_free(s, j);
}

void vxd__job_fail(vxd_server *s, vxd_job *j, const char *msg) {
  vxd__inflight_remove(s, j);
  vxp_response r = {.op = j->op, .status = VXP_STATUS_INTERNAL, .message = (char *)msg, .key = j->key};
  vxd__answer(s, j, &r);
  vxd__job_free(s, j);
}

int vxd__jobs_running(const vxd_server *s) { return s->jobs.queue_head || s->jobs.inflight; }

void vxd__jobs_clear(vxd_server *s, int inflight) {
  vxd_job **lists[3] = {&s->jobs.queue_head, &s->jobs.lookups, &s->jobs.inflight};
  for (int l = 0; l < (inflight ? 3 : 2); l++)
    while (*lists[l]) {
      vxd_job *j = *lists[l];
      *lists[l] = j->next;
      vxd__job_free(s, j);
    }
  s->jobs.queue_tail = NULL;
}
