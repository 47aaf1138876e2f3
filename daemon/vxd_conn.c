/*
 * vxd_conn.c - client connections of the vortexd loop: accepting, reading
 * whole frames (a frame whose length is zero or over the limit gets an
 * error reply and the connection is closed, framing being lost), and
 * writing responses.  Completions look their client up by id: it may be
 * gone.  Loop thread only.
 */
#define _GNU_SOURCE /* struct ucred */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <uv.h>

#include "vxd_loop.h"

typedef struct {
  uv_write_t req;
  uint8_t *frame;
  size_t len;
  vxd_conn *conn;  /* freed only after this write's callback */
  int close_after; /* close the connection once written */
} vxd_write;

void vxd__rbuf_alloc(vxd_rbuf *rb, uv_buf_t *buf) {
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

void vxd__rbuf_consume(vxd_rbuf *rb, size_t n) {
  memmove(rb->p, rb->p + n, rb->n - n);
  rb->n -= n;
  /* give memory back after a large frame */
  if (rb->cap > 4 * VXD_READ_CHUNK && rb->n < VXD_READ_CHUNK) {
    uint8_t *p = realloc(rb->p, VXD_READ_CHUNK);
    if (p) rb->p = p, rb->cap = VXD_READ_CHUNK;
  }
}

static void vxd__conn_close_cb(uv_handle_t *h) {
  vxd_conn *c = h->data;
  assert(c->closing && c->open_handles > 0); /* closed through vxd__conn_close, once per handle */
  if (--c->open_handles > 0) return;
  vxd_server *s = c->srv;
  assert(s->nconns > 0 && (c->prev ? c->prev->next == c : s->conns == c)); /* on the list */
  if (c->prev)
    c->prev->next = c->next;
  else
    s->conns = c->next;
  if (c->next) c->next->prev = c->prev;
  s->nconns--;
  free(c->in.p);
  free(c);
}

void vxd__conn_close(vxd_conn *c) {
  if (c->closing) return;
  c->closing = 1;
  uv_close((uv_handle_t *)&c->pipe, vxd__conn_close_cb);
  uv_close((uv_handle_t *)&c->timer, vxd__conn_close_cb);
}

static void vxd__conn_timer_cb(uv_timer_t *t);

/* (Re)arms c's one timer: a started frame must arrive within
 * frame_timeout; an idle connection is closed after
 * connection_idle_timeout. */
static void vxd__conn_arm(vxd_conn *c) {
  if (c->closing) return;
  const vxd_config *cfg = c->srv->cfg;
  uint64_t ms = c->in.n ? cfg->frame_timeout_s * 1000ull : cfg->conn_idle_timeout_s * 1000ull;
  if (ms)
    uv_timer_start(&c->timer, vxd__conn_timer_cb, ms, 0);
  else
    uv_timer_stop(&c->timer);
}

static void vxd__conn_timer_cb(uv_timer_t *t) {
  vxd_conn *c = t->data;
  vxd_server *s = c->srv;
  if (c->in.n) { /* a frame started and stalled (a slow or stuck client) */
    char msg[128];
    snprintf(msg, sizeof msg, "frame not completed within %u s; closing the connection",
             s->cfg->frame_timeout_s);
    s->timeouts++;
    vxd__log_at(s, VXD_LOG_INFO, "connection %llu: %s", (unsigned long long)c->id, msg);
    uv_read_stop((uv_stream_t *)&c->pipe);
    vxd__send_error(c, 0, (vxp_op)0, VXP_STATUS_BAD_REQUEST, msg, 1);
    return;
  }
  if (c->unsent || c->waiting) { /* answers still to come or to go */
    vxd__conn_arm(c);
    return;
  }
  s->timeouts++;
  vxd__log_at(s, VXD_LOG_DEBUG, "connection %llu idle for %u s; closing it", (unsigned long long)c->id,
              s->cfg->conn_idle_timeout_s);
  vxd__conn_close(c);
}

static void vxd__conn_read_cb(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf);
static void vxd__conn_alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf);

/* Reads c's requests again once its unsent replies dropped to half the
 * bound; processes what was already buffered first. */
static void vxd__conn_resume(vxd_conn *c) {
  if (!c->paused || c->closing || c->unsent > c->srv->cfg->max_unsent / 2) return;
  c->paused = 0;
  vxd__conn_read_cb((uv_stream_t *)&c->pipe, 0, NULL); /* frames already in */
  if (!c->paused && !c->closing)
    uv_read_start((uv_stream_t *)&c->pipe, vxd__conn_alloc_cb, vxd__conn_read_cb);
}

static void vxd__write_cb(uv_write_t *req, int status) {
  vxd_write *w = (vxd_write *)req;
  vxd_conn *c = w->conn;
  c->unsent -= w->len;
  if (w->close_after)
    vxd__conn_close(c);
  else if (status == 0)
    vxd__conn_resume(c);
  free(w->frame);
  free(w);
}

vxd_conn *vxd__conn_find(vxd_server *s, uint64_t id) {
  for (vxd_conn *c = s->conns; c; c = c->next)
    if (c->id == id) return c->closing ? NULL : c;
  return NULL;
}

/* Sends resp to c; closes the connection afterwards when close_after. */
int vxd__encode(const vxp_response *resp, uint8_t **frame, size_t *len) {
  if (vxp_response_encode(resp, frame, len) == VXP_OK) return 0;
  vxp_response err = {.id = resp->id,
                      .op = resp->op,
                      .status = VXP_STATUS_INTERNAL,
                      .message = (char *)"response could not be encoded (too large or out of memory)"};
  return vxp_response_encode(&err, frame, len) == VXP_OK ? 0 : -ENOMEM;
}

void vxd__send(vxd_conn *c, const vxp_response *resp, int close_after) {
  uint8_t *frame = NULL;
  size_t len = 0;
  if (vxd__encode(resp, &frame, &len) != 0) {
    vxd__conn_close(c);
    return;
  }
  vxd__send_frame(c, frame, len, close_after);
}

void vxd__send_frame(vxd_conn *c, uint8_t *frame, size_t len, int close_after) {
  vxd_write *w = calloc(1, sizeof *w);
  if (!w) {
    free(frame);
    vxd__conn_close(c);
    return;
  }
  w->frame = frame;
  w->len = len;
  w->conn = c;
  w->close_after = close_after;
  uv_buf_t b = uv_buf_init((char *)frame, (unsigned)len);
  if (uv_write(&w->req, (uv_stream_t *)&c->pipe, &b, 1, vxd__write_cb) != 0) {
    free(frame);
    free(w);
    vxd__conn_close(c);
    return;
  }
  c->unsent += len;
}

void vxd__send_error(vxd_conn *c, uint64_t id, vxp_op op, vxp_status st, const char *msg, int close_after) {
  vxp_response r = {.id = id, .op = op, .status = st, .message = (char *)msg};
  vxd__send(c, &r, close_after);
}

static void vxd__conn_alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
  vxd_conn *c = h->data;
  vxd__rbuf_alloc(&c->in, buf);
}

static void vxd__conn_read_cb(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf) {
  (void)buf;
  vxd_conn *c = st->data;
  vxd_server *s = c->srv;
  if (nread < 0) {
    vxd__conn_close(c);
    return;
  }
  c->in.n += (size_t)nread;
  if (s->cfg->idle_timeout_s) uv_timer_again(&s->idle);
  while (!c->closing && c->in.n >= VXP_FRAME_HEADER_SIZE) {
    if (c->unsent > s->cfg->max_unsent) {
      /* the client does not read its answers: stop reading its requests
       * (the rest stays buffered) until the replies drain */
      if (!c->paused)
        vxd__log_at(s, VXD_LOG_DEBUG, "connection %llu: %zu reply bytes unread; pausing it",
                    (unsigned long long)c->id, c->unsent);
      c->paused = 1;
      uv_read_stop(st);
      break;
    }
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
    c->srv->on_payload(c, c->in.p + VXP_FRAME_HEADER_SIZE, len);
    vxd__rbuf_consume(&c->in, VXP_FRAME_HEADER_SIZE + len);
  }
  if (nread > 0 || !c->in.n) vxd__conn_arm(c); /* bytes arrived: the frame clock restarts */
}

/* Whether the peer of pipe may use this daemon (SO_PEERCRED): the same
 * effective uid, or, with an allowed group configured, a member of it (as
 * its primary group or a supplementary one).  Otherwise false and a reason
 * in why. */
static int vxd__peer_allowed(vxd_server *s, uv_pipe_t *pipe, pid_t *pid, char *why, size_t cap) {
  uv_os_fd_t fd;
  struct ucred cred;
  socklen_t len = sizeof cred;
  if (uv_fileno((uv_handle_t *)pipe, &fd) != 0 || getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
    snprintf(why, cap, "peer credentials unavailable: %s", strerror(errno));
    return 0;
  }
  *pid = cred.pid;
  if (cred.uid == geteuid()) return 1;
  gid_t g = s->cfg->allowed_gid;
  if (g != (gid_t)-1) {
    if (cred.gid == g) return 1;
    struct passwd pw, *pwp = NULL;
    char buf[4096];
    if (getpwuid_r(cred.uid, &pw, buf, sizeof buf, &pwp) == 0 && pwp) {
      gid_t groups[256];
      int n = 256;
      if (getgrouplist(pw.pw_name, pw.pw_gid, groups, &n) >= 0)
        for (int i = 0; i < n; i++)
          if (groups[i] == g) return 1;
    }
    snprintf(why, cap, "uid %u (pid %d) is neither uid %u nor in group %u", (unsigned)cred.uid, (int)cred.pid,
             (unsigned)geteuid(), (unsigned)g);
    return 0;
  }
  snprintf(why, cap, "uid %u (pid %d) is not uid %u (no --allow-group configured)", (unsigned)cred.uid,
           (int)cred.pid, (unsigned)geteuid());
  return 0;
}

/* Counts a refused connection and says why, at most one line a second. */
static void vxd__refused(vxd_server *s, const char *why) {
  s->refused++;
  uint64_t now = vxd__now_ms(s);
  if (s->refused == 1 || now - s->refused_logged_ms >= 1000) {
    vxd__log_at(s, VXD_LOG_WARNING, "refused a connection: %s (%llu refused so far)", why,
                (unsigned long long)s->refused);
    s->refused_logged_ms = now;
  }
}

void vxd__on_connection(uv_stream_t *server, int status) {
  vxd_server *s = server->data;
  if (s->stopping) return;
  if (status < 0) { /* libuv accepted and closed it: out of descriptors (EMFILE) and the like */
    char why[160];
    snprintf(why, sizeof why, "cannot accept: %s (raise LimitNOFILE= or lower max_connections)",
             uv_strerror(status));
    vxd__refused(s, why);
    return;
  }
  vxd_conn *c = calloc(1, sizeof *c);
  if (!c) {
    vxd__refused(s, "out of memory");
    return;
  }
  c->srv = s;
  c->id = ++s->next_conn_id;
  uv_pipe_init(s->loop, &c->pipe, 0);
  c->pipe.data = c;
  c->next = s->conns;
  if (s->conns) s->conns->prev = c;
  s->conns = c;
  uv_timer_init(s->loop, &c->timer);
  c->timer.data = c;
  c->open_handles = 2;
  s->nconns++;
  int arc = uv_accept(server, (uv_stream_t *)&c->pipe);
  if (arc != 0) {
    char why[160];
    snprintf(why, sizeof why, "cannot accept: %s", uv_strerror(arc));
    vxd__refused(s, why);
    vxd__conn_close(c);
    return;
  }
  char why[160];
  if (!vxd__peer_allowed(s, &c->pipe, &c->peer_pid, why, sizeof why)) {
    vxd__refused(s, why);
    vxd__conn_close(c);
    return;
  }
  if (s->nconns > s->max_connections) {
    char msg[160];
    snprintf(msg, sizeof msg, "too many connections (max_connections = %u%s); try again later",
             s->max_connections,
             s->max_connections < s->cfg->max_connections ? ", lowered to the descriptor limit" : "");
    vxd__refused(s, msg);
    vxd__send_error(c, 0, (vxp_op)0, VXP_STATUS_INTERNAL, msg, 1);
    return;
  }
  vxd__conn_arm(c);
  uv_read_start((uv_stream_t *)&c->pipe, vxd__conn_alloc_cb, vxd__conn_read_cb);
}
