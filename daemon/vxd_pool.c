/*
 * vxd_pool.c - the worker processes that run compile jobs.
 *
 * Queued jobs (vxd_jobs.c) go to a pool of pre-started worker processes
 * (vxd_worker.c) that keep warm compilers, talking protocol frames over
 * pipes; each finished job goes back to vxd_jobs.c.  A worker that
 * crashes or exceeds the job timeout fails only the request it was
 * compiling and is restarted; a job whose worker crashed is retried once.
 * Workers are forked, not executed: before serving, the daemon creates a
 * template compiler (its contexts, pass pipelines and RISC-V target
 * machine), and each worker is a fork of the daemon that serves with its
 * copy-on-write copy of that compiler.  A worker is ready in about a
 * millisecond, where executing a new program would map LLVM and MLIR and
 * run their static constructors again (over ten milliseconds).  The
 * template compiles nothing before serving: a warm-up compile cost a cold
 * `vxc compile` more CPU than it saved its worker (docs/benchmarks.md).  The fork happens on the
 * loop thread with the store thread and the shared level's reader and
 * writer parked, all three the same way (vxd_qthread_pause: the queue run,
 * the thread waiting on its condition holding no lock), so the child
 * inherits no lock taken mid-operation; it closes every inherited descriptor, uses only the
 * compiler and its pipes, and ends with _exit.  Workers are reaped on
 * SIGCHLD.
 * Loop thread only.
 */
#define _GNU_SOURCE /* pipe2, closefrom */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <uv.h>

#include "vxd_loop.h"

static void vxd__respawn_cb(uv_timer_t *t);
static void vxd__dispatch_queue(vxd_server *s);

/* Remembers that compiling key crashed (or hung) a worker, twice, so that
 * the same input resubmitted is answered at once for crash_memory seconds
 * instead of taking workers from everyone else. */
static void vxd__crash_remember(vxd_server *s, const char *key, const char *why) {
  if (!s->cfg->crash_memory_s) return;
  vxd_crash *slot = &s->pool.crashes[s->pool.crash_next++ % VXD_CRASH_MEMORY];
  memcpy(slot->key, key, sizeof slot->key);
  snprintf(slot->why, sizeof slot->why, "%s", why);
  slot->until_ms = vxd__now_ms(s) + s->cfg->crash_memory_s * 1000ull;
}

const char *vxd__crash_recall(vxd_server *s, const char *key) {
  uint64_t now = vxd__now_ms(s);
  for (unsigned i = 0; i < VXD_CRASH_MEMORY; i++) {
    const vxd_crash *c = &s->pool.crashes[i];
    if (c->until_ms > now && memcmp(c->key, key, VXK_KEY_HEX) == 0) return c->why;
  }
  return NULL;
}

void vxd__worker_handle_close_cb(uv_handle_t *h) {
  vxd_worker *w = h->data;
  assert(w->open_handles > 0); /* three handles, each closed once */
  if (--w->open_handles > 0) return;
  vxd_server *s = w->srv;
  vxd_slot *slot = &s->pool.slots[w->slot];
  free(w->in.p);
  if (slot->w == w) slot->w = NULL;
  free(w);
  if (s->stopping) return;
  /* A worker that dies within a second of starting without a job waits
   * before the next try, so a broken installation does not spin; one that
   * died on a job (a crashing input) is replaced at once: forking costs a
   * millisecond, and other requests are waiting. */
  uint64_t delay = !slot->died_on_job && vxd__now_ms(s) - slot->spawned_ms < 1000 ? 1000 : 0;
  uv_timer_start(&slot->respawn, vxd__respawn_cb, delay, 0);
}

static void vxd__worker_close(vxd_worker *w) {
  uv_handle_t *hs[3] = {(uv_handle_t *)&w->to, (uv_handle_t *)&w->from, (uv_handle_t *)&w->timer};
  for (int i = 0; i < 3; i++)
    if (!uv_is_closing(hs[i])) uv_close(hs[i], vxd__worker_handle_close_cb);
}

/* The worker process ended: fail its job (if any) and close its handles. */
static void vxd__worker_exited(vxd_worker *w, int status, int term_signal) {
  vxd_server *s = w->srv;
  w->exited = 1;
  vxd__pieces_forget(w);
  s->pool.slots[w->slot].died_on_job = w->job != NULL || status == VXD_WORKER_EXIT_FATAL;
  if (!w->job && !term_signal && status == VXD_WORKER_EXIT_FATAL && w->last_key[0])
    vxd__crash_remember(s, w->last_key, w->last_message); /* answered, then exited */
  if (w->job && !w->timed_out && w->job->crashes++ == 0 && !s->stopping) {
    /* The worker may have died for reasons of its own (killed, out of
     * memory): give the job one more worker.  A source that crashes the
     * compiler crashes the second one too and then fails. */
    vxd__job_retry(s, w->job);
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
    if (!w->timed_out && !w->job->emit_ir) vxd__crash_remember(s, w->job->key, msg); /* not a slow one */
    vxd__job_fail(s, w->job, msg);
    w->job = NULL;
  }
  if (!s->stopping) {
    s->pool.worker_restarts++;
    vxd__log_at(s, VXD_LOG_WARNING, "worker %u ended (%s %d); restarting", w->slot,
                term_signal ? "signal" : "status", term_signal ? term_signal : (int)status);
  }
  vxd_cores_reset(s->pool.cores, w->slot); /* its helpers died with it */
  vxd__worker_close(w);
  vxd__dispatch(s);
}

static void vxd__worker_timeout_cb(uv_timer_t *t) {
  vxd_worker *w = t->data;
  w->timed_out = 1;
  kill(w->pid, SIGKILL);
}

static void vxd__worker_alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
  vxd_worker *w = h->data;
  vxd__rbuf_alloc(&w->in, buf);
}

/* A whole response frame from a worker: its question about its job's
 * pieces, or its job done. */
static void vxd__worker_result(vxd_worker *w, const uint8_t *payload, size_t len) {
  vxd_server *s = w->srv;
  vxd_job *j = w->job;
  if (!j) return;             /* nothing asked: ignore */
  assert(j->started_ns != 0); /* dispatched */
  vxp_response r;
  int drc = vxp_response_decode(payload, len, &r);
  if (drc == VXP_OK && r.op == VXP_OP_PIECES) {
    if (w->ask) /* one question at a time: a worker that asks again is broken */
      kill(w->pid, SIGKILL);
    else
      vxd__pieces_answer(s, w, &r);
    vxp_response_clear(&r);
    return;
  }
  uv_timer_stop(&w->timer);
  w->job = NULL;
  memcpy(w->last_key, j->key, sizeof w->last_key);
  w->last_message[0] = '\0';
  if (drc != VXP_OK) {
    vxd__job_fail(s, j, "compile worker sent a malformed result");
  } else {
    if (r.npieces) vxd__pieces_keep(s, j, &r);
    if (r.status == VXP_STATUS_INTERNAL && r.message && !j->emit_ir)
      snprintf(w->last_message, sizeof w->last_message, "%s", r.message);
    else
      w->last_key[0] = '\0'; /* only an internal answer can precede a fatal exit */
    vxd__job_done(s, j, &r);
    vxp_response_clear(&r);
  }
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
      kill(w->pid, SIGKILL); /* lost framing: start over */
      return;
    }
    if (w->in.n < VXP_FRAME_HEADER_SIZE + len) break;
    vxd__worker_result(w, w->in.p + VXP_FRAME_HEADER_SIZE, len);
    vxd__rbuf_consume(&w->in, VXP_FRAME_HEADER_SIZE + len);
  }
}

/* SIGCHLD: reaps every worker that ended and hands it to
 * vxd__worker_exited.  Each worker is waited for by its own pid: a wait
 * for any child would also take the status of a child another part of the
 * daemon started and waits for itself. */
static void vxd__sigchld_cb(uv_signal_t *h, int signum) {
  vxd_server *s = h->data;
  (void)signum;
  for (unsigned i = 0; i < s->pool.nslots; i++) {
    vxd_worker *w = s->pool.slots[i].w;
    int st;
    if (!w || w->exited || w->pid <= 0 || waitpid(w->pid, &st, WNOHANG) != w->pid) continue;
    vxd__worker_exited(w, WIFEXITED(st) ? WEXITSTATUS(st) : 0, WIFSIGNALED(st) ? WTERMSIG(st) : 0);
  }
}

int vxd__pool_init(vxd_server *s) {
  /* the workers forked from here on inherit a hash ready to use */
  if (vxk_prepare() != VXK_OK) {
    vxd__log_at(s, VXD_LOG_ERR, "cannot hash: OpenSSL has no SHA-256");
    return -ENOSYS;
  }
  int rc = vxd_compiler_new(&s->pool.template_compiler);
  if (rc != 0) {
    vxd__log_at(s, VXD_LOG_ERR, "cannot create the compiler (is LLVM's RISC-V target installed?)");
    return rc;
  }
  s->pool.cores = vxd_cores_create(VXD_MAX_WORKERS); /* NULL: workers compile alone */
  if (!s->pool.cores)
    vxd__log_at(s, VXD_LOG_WARNING, "cannot share cores between workers: %s", strerror(errno));
  uv_signal_init(s->loop, &s->pool.sigchld);
  s->pool.sigchld.data = s;
  uv_signal_start(&s->pool.sigchld, vxd__sigchld_cb, SIGCHLD);
  return 0;
}

void vxd__pool_stop(vxd_server *s) {
  for (unsigned i = 0; i < s->pool.nslots; i++) {
    vxd_worker *w = s->pool.slots[i].w;
    if (!w || w->exited) continue;
    /* closing its stdin ends the worker; SIGTERM in case it is busy */
    kill(w->pid, SIGTERM);
    vxd__worker_close(w);
  }
  if (!uv_is_closing((uv_handle_t *)&s->pool.sigchld)) uv_close((uv_handle_t *)&s->pool.sigchld, NULL);
#ifdef VXD_FULL_TEARDOWN /* else the process's end frees it (main) */
  vxl_compiler_destroy(s->pool.template_compiler);
#endif
  s->pool.template_compiler = NULL;
  vxd_cores_destroy(s->pool.cores);
  s->pool.cores = NULL;
}

/* Bounds the worker's address space (RLIMIT_AS): a source that makes the
 * compiler allocate without end fails that compile (an allocation failure
 * ends the worker, which the daemon answers and replaces) instead of
 * exhausting the machine.  Not under AddressSanitizer, which reserves
 * terabytes of shadow address space up front. */
static void vxd__limit_memory(uint64_t bytes) {
#if defined(__SANITIZE_ADDRESS__)
  (void)bytes;
#else
  if (!bytes) return;
  struct rlimit rl = {(rlim_t)bytes, (rlim_t)bytes};
  setrlimit(RLIMIT_AS, &rl);
#endif
}

/* The child side of vxd__spawn: stdin/stdout on the pipes, every other
 * descriptor of the daemon (socket, clients, cache, loop) closed, signal
 * handling back to defaults; then serve.  Never returns. */
static void vxd__worker_child(vxd_server *s, unsigned slot, int in, int out) {
  if (dup2(in, 0) < 0 || dup2(out, 1) < 0) _exit(126);
  prctl(PR_SET_NAME, "vortexd-worker");         /* what top and ps -o comm show */
  if (s->cfg->title && s->cfg->title_cap > 1) { /* and ps's command line */
    char title[64];
    snprintf(title, sizeof title, "vortexd-worker %u", slot);
    memset(s->cfg->title, 0, s->cfg->title_cap);
    memcpy(s->cfg->title, title,
           strlen(title) < s->cfg->title_cap - 1 ? strlen(title) : s->cfg->title_cap - 1);
  }
  closefrom(3);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  signal(SIGCHLD, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  signal(SIGHUP, SIG_DFL);
  vxd__limit_memory(s->cfg->worker_memory);
  _exit(vxd_worker_serve(s->pool.template_compiler, s->cfg, s->pool.cores, slot));
}

void vxd__spawn(vxd_server *s, vxd_slot *slot) {
  vxd_worker *w = calloc(1, sizeof *w);
  if (!w) return;
  w->srv = s;
  w->slot = slot->index;
  uv_pipe_init(s->loop, &w->to, 0);
  uv_pipe_init(s->loop, &w->from, 0);
  uv_timer_init(s->loop, &w->timer);
  w->to.data = w->from.data = w->timer.data = w;
  w->open_handles = 3;
  slot->spawned_ms = vxd__now_ms(s);
  int in[2] = {-1, -1}, out[2] = {-1, -1}; /* the worker's stdin, stdout */
  pid_t pid = -1;
  if (pipe2(in, O_CLOEXEC) == 0 && pipe2(out, O_CLOEXEC) == 0) {
    fflush(NULL);
    /* the loop is then the only thread running */
    if (s->store) vxd_store_pause(s->store);
    if (s->remote) vxd_remote_pause(s->remote);
    pid = fork();
    if (pid == 0) vxd__worker_child(s, slot->index, in[0], out[1]);
    if (s->remote) vxd_remote_resume(s->remote);
    if (s->store) vxd_store_resume(s->store);
  }
  int err = errno;
  if (in[0] >= 0) close(in[0]); /* the child's ends */
  if (out[1] >= 0) close(out[1]);
  /* our ends go to libuv, which closes them with the handles */
  int to_open = pid > 0 && uv_pipe_open(&w->to, in[1]) == 0;
  int from_open = to_open && uv_pipe_open(&w->from, out[0]) == 0;
  if (!from_open) {
    vxd__log_at(s, VXD_LOG_ERR, "cannot start a worker: %s", strerror(pid < 0 ? err : EBADF));
    if (pid > 0) kill(pid, SIGKILL);
    if (!to_open && in[1] >= 0) close(in[1]);
    if (out[0] >= 0) close(out[0]);
    vxd__worker_close(w); /* the retry waits a second */
    return;
  }
  w->pid = pid;
  slot->w = w;
  vxd_cores_reset(s->pool.cores, slot->index); /* nothing of a previous worker here is lent */
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

/* Hands queued jobs to idle workers, then tells the workers how many are
 * left idle (their cores are what helper threads may borrow). */
void vxd__dispatch(vxd_server *s) {
  vxd__dispatch_queue(s);
  int idle = 0;
  for (unsigned i = 0; i < s->pool.nslots; i++) {
    vxd_worker *w = s->pool.slots[i].w;
    idle += w && !w->job && !w->exited;
  }
  vxd_cores_set_idle(s->pool.cores, idle);
}

static void vxd__dispatch_queue(vxd_server *s) {
  for (unsigned i = 0; i < s->pool.nslots && s->jobs.queue_head; i++) {
    vxd_worker *w = s->pool.slots[i].w;
    if (!w || w->job || w->exited) continue;
    vxd_job *j = vxd__job_next(s);
    assert(j); /* the loop runs while jobs are queued */
    w->job = j;
    w->timed_out = 0;
    uv_write_t *wr = calloc(1, sizeof *wr);
    uv_buf_t b = uv_buf_init((char *)j->frame, (unsigned)j->frame_len);
    if (!wr || uv_write(wr, (uv_stream_t *)&w->to, &b, 1, vxd__worker_write_cb) != 0) {
      free(wr);
      kill(w->pid, SIGKILL);
      continue;
    }
    if (s->cfg->job_timeout_s)
      uv_timer_start(&w->timer, vxd__worker_timeout_cb, (uint64_t)s->cfg->job_timeout_s * 1000u, 0);
  }
}
