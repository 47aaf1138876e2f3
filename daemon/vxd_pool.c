/*
 * vxd_pool.c - compile jobs and the worker processes that run them.
 *
 * A miss becomes a job (identical requests in flight share one), queued to
 * a pool of pre-started `vortexd --worker` processes (vxd_worker.c) that
 * keep warm compilers, talking protocol frames over pipes.  A worker that
 * crashes or exceeds the job timeout fails only the request it was
 * compiling and is restarted; a job whose worker crashed is retried once.
 * Loop thread only.
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

#include "vxd_loop.h"

static void vxd__respawn_cb(uv_timer_t *t);

void vxd__job_free(vxd_job *j) {
  while (j->waiters) {
    vxd_waiter *w = j->waiters;
    j->waiters = w->next;
    free(w);
  }
  free(j->frame);
  free(j);
}

static void vxd__inflight_remove(vxd_server *s, vxd_job *j) {
  for (vxd_job **pp = &s->pool.inflight; *pp; pp = &(*pp)->next)
    if (*pp == j) {
      *pp = j->next;
      return;
    }
}

/* Answers every waiter of job j with resp (id replaced per waiter). */
static void vxd__answer_job(vxd_server *s, vxd_job *j, vxp_response *resp) {
  /* encoded once; each waiter gets a copy with its own request id */
  uint8_t *frame = NULL;
  size_t len = 0;
  if (vxd__encode(resp, &frame, &len) != 0) {
    for (vxd_waiter *w = j->waiters; w; w = w->next) {
      vxd_conn *c = vxd__conn_find(s, w->conn_id);
      if (c) vxd__conn_close(c);
    }
    return;
  }
  for (vxd_waiter *w = j->waiters; w; w = w->next) {
    vxd_conn *c = vxd__conn_find(s, w->conn_id);
    if (!c) continue;
    uint8_t *copy = w->next ? malloc(len) : frame; /* the last one takes the frame */
    if (!copy) {
      vxd__conn_close(c);
      continue;
    }
    if (copy != frame) memcpy(copy, frame, len);
    if (copy == frame) frame = NULL;
    vxp_frame_set_id(copy, len, w->req_id);
    vxd__send_frame(c, copy, len, 0);
  }
  free(frame);
}

static void vxd__fail_job(vxd_server *s, vxd_job *j, const char *msg) {
  vxp_response r = {
      .op = VXP_OP_COMPILE, .status = VXP_STATUS_INTERNAL, .message = (char *)msg, .key = j->key};
  vxd__answer_job(s, j, &r);
}

void vxd__worker_handle_close_cb(uv_handle_t *h) {
  vxd_worker *w = h->data;
  if (--w->open_handles > 0) return;
  vxd_server *s = w->srv;
  vxd_slot *slot = &s->pool.slots[w->slot];
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
    w->job->next = s->pool.queue_head;
    s->pool.queue_head = w->job;
    if (!s->pool.queue_tail) s->pool.queue_tail = w->job;
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
    s->pool.worker_restarts++;
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

void vxd__spawn(vxd_server *s, vxd_slot *slot) {
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
void vxd__dispatch(vxd_server *s) {
  for (unsigned i = 0; i < s->pool.nslots && s->pool.queue_head; i++) {
    vxd_worker *w = s->pool.slots[i].w;
    if (!w || w->job || w->exited) continue;
    vxd_job *j = s->pool.queue_head;
    s->pool.queue_head = j->next;
    if (!s->pool.queue_head) s->pool.queue_tail = NULL;
    j->next = s->pool.inflight;
    s->pool.inflight = j;
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
