/*
 * test_qthread.c - the queue thread the daemon's store and shared level
 * run on (daemon/vxd_qthread.c): order, batches, waiting for idle, taking
 * what is queued, draining on close, and the pause a fork relies on.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "daemon/vxd_qthread.h"

typedef struct {
  vxd_qitem q;
  int value;
} item;

/* What the run function saw; run holds lock while it works, as the store
 * holds SQLite's and the allocator's locks while it writes. */
typedef struct {
  pthread_mutex_t lock;
  int seen[4096];
  unsigned nseen, calls, most;
  unsigned miscounted; /* calls whose n was not the items handed over */
  unsigned work_us;    /* spent holding lock per item */
} record;

static void run_items(void *ud, vxd_qitem *items, unsigned n) {
  record *r = ud;
  pthread_mutex_lock(&r->lock);
  unsigned k = 0;
  for (vxd_qitem *it = items, *next; it; it = next, k++) {
    next = it->next;
    if (r->nseen < 4096) r->seen[r->nseen++] = ((item *)it)->value;
    if (r->work_us) {
      struct timespec d = {0, (long)r->work_us * 1000};
      nanosleep(&d, NULL);
    }
    free(it);
  }
  r->calls++;
  if (k > r->most) r->most = k;
  r->miscounted += k != n; /* asserted on the test's thread */
  pthread_mutex_unlock(&r->lock);
}

static void push_values(vxd_qthread *t, int from, int count) {
  for (int i = from; i < from + count; i++) {
    item *it = calloc(1, sizeof *it);
    cr_assert_not_null(it);
    it->value = i;
    vxd_qthread_push(t, &it->q);
  }
}

Test(qthread, runs_every_item_in_order_in_batches_and_drains_on_close) {
  record r = {.lock = PTHREAD_MUTEX_INITIALIZER, .work_us = 50};
  vxd_qthread *t;
  cr_assert_eq(vxd_qthread_create(&t, run_items, &r, 8, 0), 0);
  push_values(t, 0, 1000);
  vxd_qthread_close(t); /* runs what is queued first */
  cr_assert_eq(r.nseen, 1000);
  for (int i = 0; i < 1000; i++)
    cr_assert_eq(r.seen[i], i, "in order");
  cr_assert_leq(r.most, 8, "at most a batch at a time");
  cr_assert_lt(r.calls, 1000, "queued items go in batches");
  cr_assert_eq(r.miscounted, 0, "n counts the items handed over");
}

Test(qthread, waits_for_idle_and_gives_back_what_is_queued) {
  record r = {.lock = PTHREAD_MUTEX_INITIALIZER};
  vxd_qthread *t;
  cr_assert_eq(vxd_qthread_create(&t, run_items, &r, 1, 0), 0);
  pthread_mutex_lock(&r.lock); /* the thread blocks in its first run */
  push_values(t, 0, 10);
  cr_assert_not(vxd_qthread_wait_idle(t, 50), "busy: not idle within the time given");
  vxd_qitem *rest = vxd_qthread_take_all(t);
  unsigned taken = 0;
  for (vxd_qitem *it = rest, *next; it; it = next) {
    next = it->next;
    free(it);
    taken++;
  }
  cr_assert_eq(vxd_qthread_queued(t), 0);
  pthread_mutex_unlock(&r.lock);
  cr_assert(vxd_qthread_wait_idle(t, 60000));
  cr_assert_eq(r.nseen + taken, 10, "every item either run or given back: ran %u, took %u", r.nseen, taken);
  cr_assert_geq(taken, 8, "all but those the thread had already taken (%u)", taken);
  vxd_qthread_close(t);
}

/* Paused, the thread holds no lock of its run function's: a process
 * forked then finds every such lock free.  Without the pause waiting for
 * the thread to park, a fork in the middle of a run would leave the
 * child a lock no thread of its own can release. */
Test(qthread, a_fork_while_paused_finds_no_lock_held) {
  static record r = {.lock = PTHREAD_MUTEX_INITIALIZER, .work_us = 200};
  vxd_qthread *t;
  cr_assert_eq(vxd_qthread_create(&t, run_items, &r, 1, 0), 0);
  for (int round = 0; round < 200; round++) {
    push_values(t, round * 5, 5); /* work in flight when the pause comes */
    vxd_qthread_pause(t);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) _exit(pthread_mutex_trylock(&r.lock) == 0 ? 0 : 1);
    vxd_qthread_resume(t);
    int st = 0;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "round %d: the child found the run's lock held", round);
    cr_assert_eq(r.nseen, (unsigned)(round + 1) * 5, "paused only once the queue was written");
  }
  vxd_qthread_close(t);
}
