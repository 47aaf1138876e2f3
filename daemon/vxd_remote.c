/*
 * vxd_remote.c - the cache's shared second level (a Redis server), on two
 * threads of its own so that the loop never waits for the network.
 *
 * The reader thread answers lookups: it takes up to VXD__BATCH queued keys,
 * reads them in one pipelined exchange (vxk_remote_get), checks each value
 * (vxk_entry_check_records: format, key, checksum, signature, and records
 * a client accepts) and hands the
 * checked bytes, unchanged, to the
 * loop through a uv_async.  The writer thread writes entries the store
 * thread has just written locally, one at a time, from a queue bounded in
 * bytes; past the bound a write is dropped and counted.  Each thread has
 * its own connection, so a slow write never delays a lookup.
 *
 * Leases (remote_lease > 0, not read-only): a compile's lookup that misses
 * takes a lease on its key in the same atomic step (vxk_remote_get), so
 * that one daemon of the farm compiles it.  The leaseholder's loop renews
 * its leases every third of their life while the compile runs (the
 * writer thread sends the renewals), and releases one after writing its
 * value, or at once when there is none to write.  A lookup that finds the
 * key leased by another daemon is parked on the waiting list and asked
 * again from the loop's timer (after 2 ms, doubling to 200 ms) until the value
 * is there (a hit), the lease is gone (it takes it and compiles: the
 * holder died or failed) or job_timeout has passed (it compiles).
 *
 * A failure (refused, timed out, garbage) closes that thread's connection
 * and marks its side down for a backoff period (1 s, doubling to 60 s):
 * meanwhile lookups are refused at once (the daemon compiles) and writes
 * are dropped.  The first attempt after the period reconnects.  Going down
 * and coming back are logged once each.
 *
 * THREAD NOTES: vxd_remote_* run on the loop thread; the two queues are
 * vxd_qthreads'; link states, counters and answers are shared under mu
 * (taken before a queue's own lock, never after); a connection belongs to
 * its thread.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <uv.h>

#include "cache/vxk_entry.h"
#include "cache/vxk_remote.h"
#include "vxd_loop.h"
#include "vxd_qthread.h"

#define VXD__BATCH 64            /* lookups read in one exchange */
#define VXD__MAX_LOOKUPS 4096    /* lookups waiting; more are refused */
#define VXD__BACKOFF_MIN_MS 1000 /* first pause after a failure */
#define VXD__BACKOFF_MAX_MS 60000
/* The largest value read: an entry is bounded by what a worker may send. */
#define VXD__MAX_VALUE ((uint64_t)VXP_MAX_FRAME_DEFAULT)
#define VXD__POLL_MIN_MS 2   /* first wait before asking for a leased key again */
#define VXD__POLL_MAX_MS 200 /* the longest wait between two asks */
#define VXD__MAX_HELD 256    /* leases renewed in one exchange */
#define VXD__REFUSED_KEYS 64 /* refused values remembered for their replacement */

typedef struct vxd__lookup {
  vxd_qitem queued; /* first: what the reader's queue holds */
  char key[VXK_KEY_HEX + 1];
  vxd_remote_done_fn done;
  void *ud;
  int want_lease; /* take a lease on a miss (a compile's lookup) */
  int hit;        /* entry holds a value that passed its checks */
  int leased;     /* a miss whose lease this daemon took: it compiles */
  vxk_entry entry;
  /* waiting for another daemon's leased compile (reader thread and loop, under mu) */
  uint64_t wait_start_ms, next_ask_ms;
  unsigned poll_ms;
  struct vxd__lookup *next; /* on the answered or the waiting list (under mu) */
} vxd__lookup;

typedef struct vxd__write {
  vxd_qitem queued; /* first: what the writer's queue holds */
  char key[VXK_KEY_HEX + 1];
  uint8_t *entry; /* the encoded entry, as stored locally; owned here (NULL: a lease update) */
  uint64_t bytes; /* its size, counted against the queue bound */
  int release;    /* then release this daemon's lease on key */
  int replace;    /* the value there was refused: write over it (no HEAD first) */
  unsigned renew; /* a lease update: renew for this many ms (0: release) */
  unsigned nkeys; /* a lease update: of these keys */
  char (*keys)[VXK_KEY_HEX + 1];
} vxd__write;

/* A lease this daemon holds (loop thread only). */
typedef struct vxd__held {
  char key[VXK_KEY_HEX + 1];
  int compiled;       /* the compile ended: no renewal; released by the put */
  uint64_t expiry_ms; /* compiled: forgotten after this (the lease has expired) */
  struct vxd__held *next;
} vxd__held;

typedef struct vxd__note {
  int level;
  char msg[512];
  struct vxd__note *next;
} vxd__note;

/* One side's connection and health. */
typedef struct {
  const char *name;  /* "reads", "writes" */
  vxk_remote *conn;  /* its thread only */
  int down;          /* under mu */
  int worked;        /* under mu: an exchange has succeeded since start */
  uint64_t retry_ms; /* under mu: uv_hrtime()/1e6 when down ends */
  unsigned backoff_ms;
  char why[256]; /* under mu: the last failure */
} vxd__link;

struct vxd_remote {
  uv_loop_t *loop;
  uv_async_t async;
  vxk_remote_config kcfg; /* strings point into cfg */
  const vxd_config *cfg;
  char shown[700]; /* the URL, password masked */
  void (*log)(void *, int, const char *);
  void *log_ud;

  uv_mutex_t mu;
  vxd_qthread *reader, *writer; /* their threads and queues */
  int stopping;
  uint64_t close_deadline_ms; /* writes queued past this when stopping are dropped */
  vxd__lookup *answered;
  uint64_t queued_bytes; /* of the writes queued or being written */
  vxd__note *events, *events_tail;
  vxd__link rd, wr;
  vxd_counts counts;           /* l2_* since the last vxd_remote_take_counts */
  uint64_t rejected_logged_ms; /* reader: when refused values were last logged */
  /* keys whose value there was refused lately (under mu): a ring the
   * writes look in, so that a value that is there but bad is replaced */
  char refused[VXD__REFUSED_KEYS][VXK_KEY_HEX + 1];
  unsigned refused_next;
  /* leases */
  unsigned lease_ms;    /* 0: none taken or waited for */
  uint64_t max_wait_ms; /* the longest wait for another daemon's compile */
  char owner[160];      /* this daemon's name on its leases: host:pid:random */
  vxd__lookup *waiting; /* under mu: lookups of keys others hold leases on */
  vxd__held *held;      /* loop thread */
  uint64_t renew_ms;    /* loop thread: when the held leases are renewed next */
  uv_timer_t timer;     /* loop thread: asks again, renews */
  int timer_on;         /* loop thread */
  int open_handles;     /* loop thread: freed when both handles are closed */
};

static uint64_t vxd__ms(void) { return uv_hrtime() / 1000000u; }

static void vxd__write_free(vxd__write *w) {
  free(w->entry);
  free(w->keys);
  free(w);
}

/* Queues a log line for the loop (under mu). */
static void vxd__post(vxd_remote *rm, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void vxd__post(vxd_remote *rm, int level, const char *fmt, ...) {
  vxd__note *e = calloc(1, sizeof *e);
  if (!e) return;
  e->level = level;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e->msg, sizeof e->msg, fmt, ap);
  va_end(ap);
  if (rm->events_tail)
    rm->events_tail->next = e;
  else
    rm->events = e;
  rm->events_tail = e;
  uv_async_send(&rm->async);
}

/* Records a failure of link l (under mu): down for its backoff, logged
 * once when it goes down. */
static void vxd__link_failed(vxd_remote *rm, vxd__link *l, const char *why) {
  l->backoff_ms = l->backoff_ms ? l->backoff_ms * 2 : VXD__BACKOFF_MIN_MS;
  if (l->backoff_ms > VXD__BACKOFF_MAX_MS) l->backoff_ms = VXD__BACKOFF_MAX_MS;
  l->retry_ms = vxd__ms() + l->backoff_ms;
  snprintf(l->why, sizeof l->why, "%s", why);
  if (!l->down)
    vxd__post(rm, VXD_LOG_WARNING,
              "remote storage %s: %s failed (%s); going on with the local cache alone, retrying in %u s",
              rm->shown, l->name, why, l->backoff_ms / 1000u);
  l->down = 1;
}

static void vxd__link_ok(vxd_remote *rm, vxd__link *l) {
  if (l->down) vxd__post(rm, VXD_LOG_NOTICE, "remote storage %s: %s work again", rm->shown, l->name);
  l->down = 0;
  l->worked = 1;
  l->backoff_ms = 0;
}

/* Counts a failed exchange once, whatever it carried (under mu). */
static void vxd__count_failure(vxd_remote *rm, int rc) {
  if (rc == VXK_ETIMEDOUT)
    rm->counts.l2_timeouts++;
  else
    rm->counts.l2_errors++;
}

/* Connects l when it has no connection (its thread, outside mu). */
static int vxd__connect(vxd_remote *rm, vxd__link *l, char *err, size_t errcap) {
  if (l->conn) return VXK_OK;
  return vxk_remote_open(&rm->kcfg, &l->conn, err, errcap);
}

static void vxd__drop_conn(vxd__link *l) {
  vxk_remote_close(l->conn);
  l->conn = NULL;
}

/* What the values of one batch of lookups were, for the stats. */
typedef struct {
  uint64_t down_bytes, misses, corrupt, errors, rejected, leases, waits, expired;
} vxd__read_tally;

/* Sorts lookup lk by the value v the reader got for it at now (reader
 * thread, outside mu), counting into t: a checked value becomes lk's hit
 * (the bytes moved out of v); a miss may hold the lease; a key whose lease
 * another daemon holds parks lk until its next ask, up to max_wait_ms
 * (returns 1); a value this daemon cannot use sets *refused, so that its
 * own result is written over it.  Frees what is left of v. */
static int vxd__sort_value(vxd_remote *rm, vxd__lookup *lk, vxk_remote_value *v, uint64_t now,
                           vxd__read_tally *t, unsigned char *refused) {
  int parked = 0;
  t->down_bytes += v->size;
  if (v->rc == VXK_ENOTFOUND && v->lease == VXK_LEASE_OTHER) {
    /* another daemon compiles it: ask again later, up to max_wait_ms */
    if (!lk->wait_start_ms) {
      lk->wait_start_ms = now;
      lk->poll_ms = VXD__POLL_MIN_MS;
      t->waits++;
    } else {
      lk->poll_ms = lk->poll_ms * 2 > VXD__POLL_MAX_MS ? VXD__POLL_MAX_MS : lk->poll_ms * 2;
    }
    parked = now - lk->wait_start_ms < rm->max_wait_ms;
    lk->next_ask_ms = now + lk->poll_ms;
    if (!parked) { /* waited long enough: compiled here */
      t->misses++;
      t->expired++;
    }
  } else if (v->rc == VXK_ENOTFOUND) {
    t->misses++;
    lk->leased = v->lease == VXK_LEASE_TAKEN;
    t->leases += (uint64_t)lk->leased;
    t->expired += lk->wait_start_ms != 0; /* waited, and the value never came */
  } else if (v->rc != VXK_OK) {
    t->errors++;
    *refused = 1; /* not a value this daemon can use: write over it */
  } else {
    /* whole, signed when required, and with records every client takes:
     * nothing else enters the local cache */
    int drc = vxk_entry_check_records(lk->key, v->value, v->size, rm->cfg->remote_trust);
    lk->hit = drc == VXK_OK;
    if (lk->hit) { /* the bytes themselves, moved: no compile time known */
      lk->entry = (vxk_entry){.data = v->value, .size = v->size};
      v->value = NULL;
    }
    t->errors += drc != VXK_OK;
    t->corrupt += drc == VXK_ECORRUPT;
    t->rejected += drc == VXK_EREJECTED;
    *refused = drc != VXK_OK;
  }
  free(v->value);
  v->value = NULL;
  return parked;
}

/* Adds what a batch's values were to the counters, with a log line for
 * refused and corrupt values (under mu). */
static void vxd__count_batch(vxd_remote *rm, const vxd__read_tally *t) {
  /* hits are counted by the loop, per request answered */
  rm->counts.l2_misses += (int64_t)t->misses;
  rm->counts.l2_errors += (int64_t)t->errors;
  rm->counts.l2_corrupt += (int64_t)t->corrupt;
  rm->counts.l2_rejected += (int64_t)t->rejected;
  if (t->rejected && vxd__ms() - rm->rejected_logged_ms >= 1000) { /* at most a line a second */
    rm->rejected_logged_ms = vxd__ms();
    vxd__post(rm, VXD_LOG_WARNING,
              "remote storage %s: %llu value(s) refused: not signed by a key of remote_trusted_keys "
              "(compiled here instead)",
              rm->shown, (unsigned long long)t->rejected);
  }
  rm->counts.l2_bytes_down += (int64_t)t->down_bytes;
  rm->counts.l2_leases += (int64_t)t->leases;
  rm->counts.l2_lease_waits += (int64_t)t->waits;
  rm->counts.l2_lease_expired += (int64_t)t->expired;
  if (t->corrupt)
    vxd__post(rm, VXD_LOG_WARNING,
              "remote storage %s: %llu value(s) failed their checksum; not used, compiled again", rm->shown,
              (unsigned long long)t->corrupt);
}

/* The reader thread: one pipelined exchange for n (at most VXD__BATCH)
 * lookups, each value checked, the answers handed to the loop. */
static void vxd__read_batch(void *ud, vxd_qitem *items, unsigned n) {
  vxd_remote *rm = ud;
  vxd__lookup *batch[VXD__BATCH];
  const char *keys[VXD__BATCH];
  unsigned char want[VXD__BATCH];
  unsigned char parked[VXD__BATCH] = {0}, refused[VXD__BATCH] = {0};
  vxk_remote_value vals[VXD__BATCH];
  n = 0;
  for (vxd_qitem *it = items; it && n < VXD__BATCH; it = it->next) {
    batch[n] = (vxd__lookup *)it;
    keys[n] = batch[n]->key;
    want[n] = batch[n]->want_lease && rm->lease_ms;
    n++;
  }
  vxk_remote_lease lease = {.owner = rm->owner, .ms = rm->lease_ms, .want = want};
  char err[256] = "";
  int rc = vxd__connect(rm, &rm->rd, err, sizeof err);
  if (rc == VXK_OK)
    rc = vxk_remote_get(rm->rd.conn, keys, n, rm->lease_ms ? &lease : NULL, vals, err, sizeof err);
  if (rc != VXK_OK) vxd__drop_conn(&rm->rd);
  vxd__read_tally t = {0};
  uint64_t now = vxd__ms();
  for (size_t i = 0; rc == VXK_OK && i < n; i++)
    parked[i] = (unsigned char)vxd__sort_value(rm, batch[i], &vals[i], now, &t, &refused[i]);

  uv_mutex_lock(&rm->mu);
  if (rc != VXK_OK) {
    vxd__count_failure(rm, rc);
    vxd__link_failed(rm, &rm->rd, err);
    /* the lookups still queued would wait for the same failure */
    if (rm->rd.down)
      for (vxd_qitem *it = vxd_qthread_take_all(rm->reader), *next; it; it = next) {
        next = it->next;
        vxd__lookup *lk = (vxd__lookup *)it;
        lk->next = rm->answered;
        rm->answered = lk;
      }
  } else {
    vxd__link_ok(rm, &rm->rd);
    for (size_t i = 0; i < n; i++)
      if (refused[i]) {
        memcpy(rm->refused[rm->refused_next], batch[i]->key, sizeof batch[i]->key);
        rm->refused_next = (rm->refused_next + 1) % VXD__REFUSED_KEYS;
      }
    vxd__count_batch(rm, &t);
  }
  for (size_t i = 0; i < n; i++) {
    vxd__lookup **list = parked[i] ? &rm->waiting : &rm->answered;
    batch[i]->next = *list;
    *list = batch[i];
  }
  uv_async_send(&rm->async); /* also: the loop starts its timer for the parked */
  uv_mutex_unlock(&rm->mu);
}

/* The writer thread: renews or releases the leases of a lease update. */
static int vxd__lease_update_all(vxd_remote *rm, const vxd__write *w, char *err, size_t errcap) {
  const char *keys[VXD__MAX_HELD];
  unsigned n = w->nkeys < VXD__MAX_HELD ? w->nkeys : VXD__MAX_HELD;
  for (unsigned i = 0; i < n; i++)
    keys[i] = w->keys[i];
  return vxk_remote_lease_update(rm->wr.conn, keys, n, rm->owner, w->renew, err, errcap);
}

/* The writer thread: one entry written, or dropped when late (stopping,
 * past the deadline) or while writes are down. */
static void vxd__write_one(void *ud, vxd_qitem *it, unsigned n) {
  vxd_remote *rm = ud;
  (void)n; /* one at a time */
  vxd__write *w = (vxd__write *)it;
  uv_mutex_lock(&rm->mu);
  int late = rm->stopping && vxd__ms() > rm->close_deadline_ms;
  if (late || (rm->wr.down && vxd__ms() < rm->wr.retry_ms)) {
    rm->counts.l2_dropped += w->entry != NULL; /* a lease not renewed or released expires */
    rm->queued_bytes -= w->bytes;
    uv_mutex_unlock(&rm->mu);
    vxd__write_free(w);
    return;
  }
  uv_mutex_unlock(&rm->mu);

  char err[256] = "";
  int rc = vxd__connect(rm, &rm->wr, err, sizeof err);
  int written = 0;
  if (rc == VXK_OK && w->entry)
    rc = vxk_remote_set(rm->wr.conn, w->key, w->entry, (size_t)w->bytes, w->replace, &written, err,
                        sizeof err);
  /* the value first: a daemon waiting on the lease finds it when the lease goes */
  const char *one = w->key;
  if (rc == VXK_OK && (w->release || !w->entry))
    rc = w->entry ? vxk_remote_lease_update(rm->wr.conn, &one, 1, rm->owner, 0, err, sizeof err)
                  : vxd__lease_update_all(rm, w, err, sizeof err);
  if (rc != VXK_OK) vxd__drop_conn(&rm->wr);

  uv_mutex_lock(&rm->mu);
  rm->queued_bytes -= w->bytes;
  if (rc == VXK_OK) {
    vxd__link_ok(rm, &rm->wr);
    rm->counts.l2_writes += written; /* not when the value was there already (HTTP) */
    rm->counts.l2_bytes_up += written ? (int64_t)w->bytes : 0;
  } else {
    vxd__count_failure(rm, rc);
    vxd__link_failed(rm, &rm->wr, err);
  }
  uv_mutex_unlock(&rm->mu);
  vxd__write_free(w);
}

static void vxd__hold(vxd_remote *rm, const char *key);
static void vxd__timer_update(vxd_remote *rm);

/* Loop thread: logs queued events, runs the callbacks of answered lookups. */
static void vxd__remote_reap(vxd_remote *rm) {
  uv_mutex_lock(&rm->mu);
  vxd__note *ev = rm->events;
  rm->events = rm->events_tail = NULL;
  vxd__lookup *done = rm->answered;
  rm->answered = NULL;
  uv_mutex_unlock(&rm->mu);
  while (ev) {
    vxd__note *next = ev->next;
    if (rm->log) rm->log(rm->log_ud, ev->level, ev->msg);
    free(ev);
    ev = next;
  }
  /* answered in the order asked */
  vxd__lookup *rev = NULL;
  while (done) {
    vxd__lookup *next = done->next;
    done->next = rev;
    rev = done;
    done = next;
  }
  while (rev) {
    vxd__lookup *lk = rev;
    rev = lk->next;
    if (lk->leased && !rm->stopping) vxd__hold(rm, lk->key);
    lk->done(lk->ud, lk->key, lk->hit ? &lk->entry : NULL, lk->leased);
    vxk_entry_clear(&lk->entry);
    free(lk);
  }
  vxd__timer_update(rm);
}

static void vxd__remote_async_cb(uv_async_t *a) { vxd__remote_reap(a->data); }

static void vxd__remote_closed_cb(uv_handle_t *h) {
  vxd_remote *rm = h->data;
  if (--rm->open_handles == 0) free(rm);
}

/* Queues a lease update of keys (n of them; renew ms, 0: release) for the
 * writer thread; not when writes are down (the leases expire). */
static void vxd__queue_lease_update(vxd_remote *rm, char (*keys)[VXK_KEY_HEX + 1], unsigned n,
                                    unsigned renew) {
  vxd__write *w = calloc(1, sizeof *w);
  if (!w) {
    free(keys);
    return;
  }
  w->keys = keys, w->nkeys = n, w->renew = renew;
  uv_mutex_lock(&rm->mu);
  int queue = !rm->stopping && !(rm->wr.down && vxd__ms() < rm->wr.retry_ms);
  if (queue) vxd_qthread_push(rm->writer, &w->queued);
  uv_mutex_unlock(&rm->mu);
  if (!queue) vxd__write_free(w);
}

/* The loop's timer: parked lookups due are asked again (answered as misses
 * while reads are down), the leases of running compiles renewed, the ones
 * of compiles whose value never came forgotten once expired. */
static void vxd__remote_tick(uv_timer_t *t) {
  vxd_remote *rm = t->data;
  uint64_t now = vxd__ms();
  uv_mutex_lock(&rm->mu);
  int reads_down = rm->rd.down && now < rm->rd.retry_ms;
  for (vxd__lookup **pp = &rm->waiting; *pp;) {
    vxd__lookup *lk = *pp;
    if (!rm->stopping && !reads_down && now < lk->next_ask_ms) {
      pp = &lk->next;
      continue;
    }
    *pp = lk->next;
    lk->next = NULL;
    if (rm->stopping || reads_down) {
      lk->next = rm->answered; /* compiled here */
      rm->answered = lk;
      uv_async_send(&rm->async);
    } else {
      vxd_qthread_push(rm->reader, &lk->queued);
    }
  }
  uv_mutex_unlock(&rm->mu);
  unsigned n = 0;
  for (vxd__held **pp = &rm->held; *pp;) {
    vxd__held *h = *pp;
    if (h->compiled && now >= h->expiry_ms) {
      *pp = h->next;
      free(h);
      continue;
    }
    n += !h->compiled;
    pp = &h->next;
  }
  if (n && now >= rm->renew_ms) {
    rm->renew_ms = now + rm->lease_ms / 3;
    char(*keys)[VXK_KEY_HEX + 1] = calloc(n < VXD__MAX_HELD ? n : VXD__MAX_HELD, sizeof *keys);
    unsigned k = 0;
    for (vxd__held *h = rm->held; keys && h && k < VXD__MAX_HELD; h = h->next)
      if (!h->compiled) memcpy(keys[k++], h->key, sizeof keys[k - 1]);
    if (keys) vxd__queue_lease_update(rm, keys, k, rm->lease_ms);
  }
  vxd__timer_update(rm);
}

/* Sets the timer for the earliest of: a parked lookup's next ask, the
 * held leases' renewal, a compiled lease's expiry; stops it when none. */
static void vxd__timer_update(vxd_remote *rm) {
  uint64_t due = UINT64_MAX;
  uv_mutex_lock(&rm->mu);
  for (const vxd__lookup *lk = rm->waiting; lk; lk = lk->next)
    if (lk->next_ask_ms < due) due = lk->next_ask_ms;
  uv_mutex_unlock(&rm->mu);
  for (const vxd__held *h = rm->held; h; h = h->next) {
    uint64_t at = h->compiled ? h->expiry_ms : rm->renew_ms;
    if (at < due) due = at;
  }
  if (rm->timer_on) uv_timer_stop(&rm->timer);
  rm->timer_on = due != UINT64_MAX && !rm->stopping;
  if (rm->timer_on) { /* one shot, at the earliest thing due */
    uint64_t now = vxd__ms();
    uv_timer_start(&rm->timer, vxd__remote_tick, due > now ? due - now : 0, 0);
  }
}

/* A lease this daemon just took on key: renewed from now on. */
static void vxd__hold(vxd_remote *rm, const char *key) {
  vxd__held *h = calloc(1, sizeof *h);
  if (!h) return; /* not renewed: it expires, another daemon may compile too */
  snprintf(h->key, sizeof h->key, "%s", key);
  h->next = rm->held;
  rm->held = h;
  if (!rm->renew_ms || rm->renew_ms > vxd__ms() + rm->lease_ms / 3)
    rm->renew_ms = vxd__ms() + rm->lease_ms / 3;
}

/* The held lease on key, unlinked from the list (caller frees), or NULL. */
static vxd__held *vxd__unhold(vxd_remote *rm, const char *key) {
  for (vxd__held **pp = &rm->held; *pp; pp = &(*pp)->next)
    if (strcmp((*pp)->key, key) == 0) {
      vxd__held *h = *pp;
      *pp = h->next;
      return h;
    }
  return NULL;
}

void vxd_remote_lease_end(vxd_remote *rm, const char *key, int will_share) {
  if (will_share) { /* released by the put that follows; until then not renewed */
    for (vxd__held *h = rm->held; h; h = h->next)
      if (strcmp(h->key, key) == 0 && !h->compiled) {
        h->compiled = 1;
        h->expiry_ms = vxd__ms() + rm->lease_ms;
        return;
      }
    return;
  }
  vxd__held *h = vxd__unhold(rm, key);
  if (!h) return;
  free(h);
  char(*keys)[VXK_KEY_HEX + 1] = calloc(1, sizeof *keys);
  if (!keys) return;
  snprintf(keys[0], sizeof keys[0], "%s", key);
  vxd__queue_lease_update(rm, keys, 1, 0);
}

int vxd_remote_open(uv_loop_t *loop, const vxd_config *cfg, void (*log)(void *, int, const char *), void *ud,
                    vxd_remote **out, char *err, size_t errcap) {
  *out = NULL;
  vxd_remote *rm = calloc(1, sizeof *rm);
  if (!rm) {
    snprintf(err, errcap, "out of memory");
    return -ENOMEM;
  }
  rm->loop = loop;
  rm->cfg = cfg;
  rm->log = log;
  rm->log_ud = ud;
  const vxp_remote_url *u = &cfg->remote;
  rm->kcfg = (vxk_remote_config){.http = u->kind == VXP_REMOTE_HTTP,
                                 .base = u->base,
                                 .ca_file = cfg->remote_ca_file,
                                 .userpwd = cfg->remote_credentials.userpwd,
                                 .bearer = cfg->remote_credentials.bearer,
                                 .host = u->host,
                                 .port = u->port,
                                 .path = u->is_unix ? u->path : "",
                                 .user = u->user,
                                 .password = u->password,
                                 .db = u->db,
                                 .prefix = cfg->remote_prefix,
                                 .connect_ms = cfg->remote_connect_ms,
                                 .op_ms = cfg->remote_timeout_ms,
                                 .max_value = VXD__MAX_VALUE,
                                 .ttl_s = cfg->remote_ttl_s};
  vxp_remote_url_show(u, rm->shown, sizeof rm->shown);
  rm->rd.name = "reads";
  rm->wr.name = "writes";
  /* a read-only daemon writes no lease (and no value a waiter could get);
   * an HTTP storage has no atomic create-if-absent every server keeps */
  rm->lease_ms = cfg->remote_read_only || u->kind == VXP_REMOTE_HTTP ? 0 : cfg->remote_lease_ms;
  if (u->kind == VXP_REMOTE_HTTP && !cfg->http_module[0]) {
    snprintf(err, errcap, "HTTP storage needs vortexd-http.so, which is not installed beside vortexd");
    free(rm);
    return -EIO;
  }
  if (u->kind == VXP_REMOTE_HTTP && vxk_remote_http_load(cfg->http_module, err, errcap) != VXK_OK) {
    free(rm);
    return -EIO;
  }
  rm->max_wait_ms = (cfg->job_timeout_s ? cfg->job_timeout_s : 600u) * 1000ull;
  char host[64] = "", rnd[8] = {0};
  gethostname(host, sizeof host - 1);
  uv_random(NULL, NULL, rnd, sizeof rnd, 0, NULL); /* on failure, zeros: host and pid still differ */
  snprintf(rm->owner, sizeof rm->owner, "%.63s:%ld:%02x%02x%02x%02x%02x%02x%02x%02x", host, (long)getpid(),
           (uint8_t)rnd[0], (uint8_t)rnd[1], (uint8_t)rnd[2], (uint8_t)rnd[3], (uint8_t)rnd[4],
           (uint8_t)rnd[5], (uint8_t)rnd[6], (uint8_t)rnd[7]);
  uv_mutex_init(&rm->mu);
  uv_async_init(loop, &rm->async, vxd__remote_async_cb);
  rm->async.data = rm;
  uv_timer_init(loop, &rm->timer);
  rm->timer.data = rm;
  rm->open_handles = 2;
  if (vxd_qthread_create(&rm->reader, vxd__read_batch, rm, VXD__BATCH, 0) != 0 ||
      vxd_qthread_create(&rm->writer, vxd__write_one, rm, 1, 0) != 0) {
    vxd_qthread_close(rm->reader); /* nothing queued yet */
    uv_mutex_destroy(&rm->mu);
    snprintf(err, errcap, "cannot start the remote storage's threads");
    uv_close((uv_handle_t *)&rm->async, vxd__remote_closed_cb);
    uv_close((uv_handle_t *)&rm->timer, vxd__remote_closed_cb);
    return -EAGAIN;
  }
  *out = rm;
  return 0;
}

int vxd_remote_lookup(vxd_remote *rm, const char *key, int lease, vxd_remote_done_fn done, void *ud) {
  vxd__lookup *lk = calloc(1, sizeof *lk);
  if (!lk) return -ENOMEM;
  snprintf(lk->key, sizeof lk->key, "%s", key);
  lk->want_lease = lease;
  lk->done = done;
  lk->ud = ud;
  uv_mutex_lock(&rm->mu);
  int refuse = rm->stopping || vxd_qthread_queued(rm->reader) >= VXD__MAX_LOOKUPS ||
               (rm->rd.down && vxd__ms() < rm->rd.retry_ms);
  if (!refuse) vxd_qthread_push(rm->reader, &lk->queued);
  uv_mutex_unlock(&rm->mu);
  if (refuse) free(lk);
  return refuse ? -EAGAIN : 0;
}

void vxd_remote_put(vxd_remote *rm, const char *key, uint8_t *entry, size_t size) {
  vxd__write e = {.entry = entry, .bytes = size};
  snprintf(e.key, sizeof e.key, "%s", key);
  int read_only = rm->cfg->remote_read_only;
  vxd__write *w = read_only ? NULL : malloc(sizeof *w);
  vxd__held *h = vxd__unhold(rm, key);
  e.release = h != NULL; /* after the value: who waits on it finds it */
  free(h);
  uv_mutex_lock(&rm->mu);
  for (unsigned i = 0; i < VXD__REFUSED_KEYS; i++)
    if (strcmp(rm->refused[i], key) == 0) {
      e.replace = 1;
      rm->refused[i][0] = '\0';
    }
  int queue = w && !rm->stopping && rm->queued_bytes + e.bytes <= rm->cfg->remote_write_queue &&
              !(rm->wr.down && vxd__ms() < rm->wr.retry_ms);
  if (queue) {
    *w = e;
    rm->queued_bytes += e.bytes;
    vxd_qthread_push(rm->writer, &w->queued);
  } else if (!read_only) {
    rm->counts.l2_dropped++;
  }
  uv_mutex_unlock(&rm->mu);
  if (!queue) {
    free(e.entry);
    free(w);
    if (e.release) { /* not written: the lease goes now, another daemon compiles */
      char(*keys)[VXK_KEY_HEX + 1] = calloc(1, sizeof *keys);
      if (keys) {
        snprintf(keys[0], sizeof keys[0], "%s", key);
        vxd__queue_lease_update(rm, keys, 1, 0);
      }
    }
  }
}

void vxd_remote_take_counts(vxd_remote *rm, vxd_counts *delta) {
  uv_mutex_lock(&rm->mu);
#define VXD__TAKE(name) delta->name += rm->counts.name;
  VXD_COUNTERS(VXD__TAKE)
#undef VXD__TAKE
  rm->counts = (vxd_counts){0};
  uv_mutex_unlock(&rm->mu);
}

void vxd_remote_drain(vxd_remote *rm, unsigned timeout_ms) { vxd_qthread_wait_idle(rm->writer, timeout_ms); }

void vxd_remote_pause(vxd_remote *rm) {
  vxd_qthread_pause(rm->reader);
  vxd_qthread_pause(rm->writer);
}

void vxd_remote_resume(vxd_remote *rm) {
  vxd_qthread_resume(rm->writer);
  vxd_qthread_resume(rm->reader);
}

void vxd_remote_describe(vxd_remote *rm, char *out, size_t cap) {
  uv_mutex_lock(&rm->mu);
  const vxd__link *l = rm->rd.down ? &rm->rd : &rm->wr;
  uint64_t now = vxd__ms();
  if (l->down)
    snprintf(out, cap, "%s%s, down: %s (%s)", rm->shown, rm->cfg->remote_read_only ? ", read-only" : "",
             l->why, now < l->retry_ms ? "retrying later" : "retrying on the next request");
  else if (!rm->rd.worked && !rm->wr.worked) /* nothing says it is reachable, or takes the password */
    snprintf(out, cap, "%s%s, not contacted yet (at the first lookup)", rm->shown,
             rm->cfg->remote_read_only ? ", read-only" : "");
  else
    snprintf(out, cap, "%s%s, up", rm->shown, rm->cfg->remote_read_only ? ", read-only" : "");
  uv_mutex_unlock(&rm->mu);
}

void vxd_remote_close(vxd_remote *rm) {
  if (!rm) return;
  uv_mutex_lock(&rm->mu);
  rm->stopping = 1;
  rm->close_deadline_ms = vxd__ms() + VXD_REMOTE_STOP_MS;
  /* the lookups waiting for another daemon's compile are compiled here */
  for (vxd__lookup *lk = rm->waiting, *next; lk; lk = next) {
    next = lk->next;
    lk->next = rm->answered;
    rm->answered = lk;
  }
  rm->waiting = NULL;
  uv_mutex_unlock(&rm->mu);
  /* the leases held are released (the compiles end with the daemon) */
  unsigned n = 0;
  for (vxd__held *h = rm->held; h; h = h->next)
    n++;
  char(*keys)[VXK_KEY_HEX + 1] = n ? calloc(n < VXD__MAX_HELD ? n : VXD__MAX_HELD, sizeof *keys) : NULL;
  unsigned k = 0;
  while (rm->held) {
    vxd__held *h = rm->held;
    rm->held = h->next;
    if (keys && k < VXD__MAX_HELD) memcpy(keys[k++], h->key, sizeof h->key);
    free(h);
  }
  vxd__write *rel = keys ? calloc(1, sizeof *rel) : NULL;
  uv_mutex_lock(&rm->mu);
  if (rel) {
    rel->keys = keys, rel->nkeys = k;
    vxd_qthread_push(rm->writer, &rel->queued);
  } else {
    free(keys);
  }
  uv_mutex_unlock(&rm->mu);
  vxd_qthread_close(rm->reader); /* lookups queued are answered first */
  vxd_qthread_close(rm->writer); /* writes past the deadline are dropped */
  vxd__drop_conn(&rm->rd);       /* their threads have ended */
  vxd__drop_conn(&rm->wr);
  vxd__remote_reap(rm);
  uv_mutex_destroy(&rm->mu);
  if (rm->timer_on) uv_timer_stop(&rm->timer);
  uv_close((uv_handle_t *)&rm->async, vxd__remote_closed_cb);
  uv_close((uv_handle_t *)&rm->timer, vxd__remote_closed_cb);
}
