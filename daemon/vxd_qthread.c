/*
 * vxd_qthread.c - a thread that runs what is queued to it (see
 * vxd_qthread.h).
 */
#define _GNU_SOURCE /* syscall(SYS_gettid) */
#include <errno.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <uv.h>

#include "vxd_qthread.h"

struct vxd_qthread {
  uv_mutex_t mu;
  uv_cond_t work_cv; /* queued, or stopping */
  uv_cond_t idle_cv; /* the queue ran empty and run returned */
  uv_thread_t thread;
  vxd_qitem *head, *tail;
  unsigned queued;
  int running;  /* run has items */
  int parked;   /* waiting on work_cv, holding nothing else */
  int stopping; /* vxd_qthread_close: drain, then end */
  vxd_qthread_run_fn run;
  void *ud;
  unsigned batch;
  int nice;
};

static void vxd__qthread_main(void *arg) {
  vxd_qthread *t = arg;
  if (t->nice) setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), t->nice);
  uv_mutex_lock(&t->mu);
  for (;;) {
    while (!t->head && !t->stopping) {
      t->parked = 1;
      uv_cond_broadcast(&t->idle_cv);
      uv_cond_wait(&t->work_cv, &t->mu);
      t->parked = 0;
    }
    if (!t->head) break; /* stopping and drained */
    vxd_qitem *first = t->head, *last = first;
    unsigned n = 1;
    while (n < t->batch && last->next)
      last = last->next, n++;
    t->head = last->next;
    if (!t->head) t->tail = NULL;
    last->next = NULL;
    t->queued -= n;
    t->running = 1;
    uv_mutex_unlock(&t->mu);
    t->run(t->ud, first, n);
    uv_mutex_lock(&t->mu);
    t->running = 0;
    if (!t->head) uv_cond_broadcast(&t->idle_cv);
  }
  uv_cond_broadcast(&t->idle_cv);
  uv_mutex_unlock(&t->mu);
}

int vxd_qthread_create(vxd_qthread **out, vxd_qthread_run_fn run, void *ud, unsigned batch, int nice) {
  *out = NULL;
  vxd_qthread *t = calloc(1, sizeof *t);
  if (!t) return -ENOMEM;
  t->run = run, t->ud = ud, t->batch = batch ? batch : 1, t->nice = nice;
  uv_mutex_init(&t->mu);
  uv_cond_init(&t->work_cv);
  uv_cond_init(&t->idle_cv);
  if (uv_thread_create(&t->thread, vxd__qthread_main, t) != 0) {
    uv_cond_destroy(&t->work_cv);
    uv_cond_destroy(&t->idle_cv);
    uv_mutex_destroy(&t->mu);
    free(t);
    return -EAGAIN;
  }
  *out = t;
  return 0;
}

void vxd_qthread_push(vxd_qthread *t, vxd_qitem *it) {
  it->next = NULL;
  uv_mutex_lock(&t->mu);
  if (t->tail)
    t->tail->next = it;
  else
    t->head = it;
  t->tail = it;
  t->queued++;
  uv_cond_signal(&t->work_cv);
  uv_mutex_unlock(&t->mu);
}

unsigned vxd_qthread_queued(vxd_qthread *t) {
  uv_mutex_lock(&t->mu);
  unsigned n = t->queued;
  uv_mutex_unlock(&t->mu);
  return n;
}

vxd_qitem *vxd_qthread_take_all(vxd_qthread *t) {
  uv_mutex_lock(&t->mu);
  vxd_qitem *all = t->head;
  t->head = t->tail = NULL;
  t->queued = 0;
  if (!t->running) uv_cond_broadcast(&t->idle_cv);
  uv_mutex_unlock(&t->mu);
  return all;
}

int vxd_qthread_wait_idle(vxd_qthread *t, uint64_t timeout_ms) {
  uint64_t deadline = uv_hrtime() / 1000000u + timeout_ms;
  uv_mutex_lock(&t->mu);
  int idle;
  for (;;) {
    idle = !t->head && !t->running;
    uint64_t now = uv_hrtime() / 1000000u;
    if (idle || now >= deadline ||
        uv_cond_timedwait(&t->idle_cv, &t->mu, (deadline - now) * 1000000u) == UV_ETIMEDOUT) {
      idle = !t->head && !t->running;
      break;
    }
  }
  uv_mutex_unlock(&t->mu);
  return idle;
}

void vxd_qthread_pause(vxd_qthread *t) {
  uv_mutex_lock(&t->mu);
  /* parked, not only idle: a thread still starting up, or one that has
   * just returned from run, may hold its allocator's locks (a sanitizer's
   * do) until it waits on work_cv */
  while (t->head || t->running || !t->parked)
    uv_cond_wait(&t->idle_cv, &t->mu);
  /* the thread now waits on work_cv, inside uv_cond_wait, and cannot take
   * mu back before vxd_qthread_resume */
}

void vxd_qthread_resume(vxd_qthread *t) { uv_mutex_unlock(&t->mu); }

void vxd_qthread_close(vxd_qthread *t) {
  if (!t) return;
  uv_mutex_lock(&t->mu);
  t->stopping = 1;
  uv_cond_signal(&t->work_cv);
  uv_mutex_unlock(&t->mu);
  uv_thread_join(&t->thread);
  uv_cond_destroy(&t->work_cv);
  uv_cond_destroy(&t->idle_cv);
  uv_mutex_destroy(&t->mu);
  free(t);
}
