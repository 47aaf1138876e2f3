/*
 * vxd_qthread.h - a thread that runs what is queued to it, in order: the
 * cache's store thread and the shared level's reader and writer
 * (daemon/ only).
 *
 * One place for the queue, the park and the pause a fork relies on: when
 * the queue is empty the thread parks, waiting on its condition variable
 * and holding no other lock; vxd_qthread_pause returns once the queue is
 * empty and the thread parked, and keeps the queue's lock until
 * vxd_qthread_resume, so the thread cannot wake meanwhile.  vxd_pool.c
 * forks its workers in that state: no lock of any library (the allocator,
 * SQLite, hiredis) is held by a thread that would not exist in the child.
 *
 * THREAD NOTES: push, queued, take_all, wait_idle from any thread; pause
 * and resume from the thread that forks (the loop); close from the thread
 * that created it.  run runs on the queue's own thread, without its lock.
 */
#ifndef VXD_QTHREAD_H
#define VXD_QTHREAD_H

#include <stdint.h>

/* What is queued: embedded first in the caller's own record. */
typedef struct vxd_qitem {
  struct vxd_qitem *next;
} vxd_qitem;

typedef struct vxd_qthread vxd_qthread;

/* Runs items, the n (1 .. batch) oldest queued, linked through next in
 * queue order and owned by run from then on. */
typedef void (*vxd_qthread_run_fn)(void *ud, vxd_qitem *items, unsigned n);

/* Starts a thread that calls run(ud, ...) with at most batch items at a
 * time (0: 1), at the scheduling niceness nice (0: the process's; Linux
 * keeps niceness per thread).  Returns 0 and *out, or -ENOMEM / -EAGAIN. */
int vxd_qthread_create(vxd_qthread **out, vxd_qthread_run_fn run, void *ud, unsigned batch, int nice);

/* Queues it (owned by the queue until run gets it) and wakes the thread.
 * Items pushed after vxd_qthread_close began are run before it returns. */
void vxd_qthread_push(vxd_qthread *t, vxd_qitem *it);

/* Items queued and not yet handed to run. */
unsigned vxd_qthread_queued(vxd_qthread *t);

/* Takes every item still queued (not those run has), oldest first,
 * linked through next; NULL when none.  The caller owns them. */
vxd_qitem *vxd_qthread_take_all(vxd_qthread *t);

/* Waits until the queue is empty and run has returned, at most timeout_ms
 * milliseconds.  Returns 1 when idle, 0 when time ran out. */
int vxd_qthread_wait_idle(vxd_qthread *t, uint64_t timeout_ms);

/* Returns once the queue is empty and the thread parked, with the queue's
 * lock held: the thread stays parked until vxd_qthread_resume.  Nothing
 * may be pushed in between (the pusher would wait for the lock). */
void vxd_qthread_pause(vxd_qthread *t);
void vxd_qthread_resume(vxd_qthread *t);

/* Runs what is queued, then stops and joins the thread and frees t.
 * NULL-safe. */
void vxd_qthread_close(vxd_qthread *t);

#endif /* VXD_QTHREAD_H */
