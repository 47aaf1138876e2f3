/*
 * vxd_store.c - the cache's write path, on a thread of its own.
 *
 * Everything that writes the SQLite cache runs here, never on the loop
 * thread: storing a compiled entry (one transaction, then eviction in
 * batches), the LRU times of entries read since the last flush, and the
 * persistent counters.  The thread owns a cache handle of its own; the loop
 * thread keeps another for reads (vxk_get writes nothing).
 *
 * Jobs are queued in order and run one at a time.  An entry stays in the
 * loop-side pending list from vxd_store_put until the thread has written it
 * (a uv_async wakes the loop), so a request for it in between is still a
 * hit (vxd_store_pending).
 *
 * THREAD NOTES: vxd_store_* are called on the loop thread only; the queue is
 * a vxd_qthread's, the list of finished jobs is under done_mu; a job's data
 * is immutable from queueing until the loop frees it after completion.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "cache/vxk.h"
#include "vxd.h"
#include "vxd_qthread.h"

typedef enum {
  VXD__STORE_PUT,
  VXD__STORE_FLUSH,
  VXD__STORE_DROP,
  VXD__STORE_ADMIN,
  VXD__STORE_LIST,
  VXD__STORE_EXPLAIN
} vxd__store_kind;

struct vxd_pending {
  vxd_qitem queued; /* first: a job is what the store's queue holds */
  vxd__store_kind kind;
  /* put */
  char key[VXK_KEY_HEX + 1];
  uint8_t *entry; /* the encoded entry, owned here */
  size_t entry_size;
  uint64_t compile_us;
  int share;               /* handed to the written hook once written */
  char *source_name;       /* listed beside the entry (vxk_put); malloc(), may be NULL */
  vxd_store_inputs inputs; /* what its key came from (vxk_put); moved here */
  /* explain (key and source_name too) */
  uint8_t *source; /* moved here */
  size_t source_len;
  vxd_explain_result explained;
  void (*explain_done)(void *ud, vxd_explain_result *r);
  /* list */
  char prefix[VXK_KEY_HEX + 1];
  vxd_list_result listed;
  void (*list_done)(void *ud, vxd_list_result *r);
  /* admin */
  vxd_admin_op admin;
  uint64_t arg;
  vxd_admin_result result;
  void (*done)(void *ud, const vxd_admin_result *r);
  void *done_ud;
  /* flush */
  vxk_touches touches;
  vxd_counts counts;
  int counts_rc; /* the counts' own result: none written unless VXK_OK */
  /* written by the store thread, read by the loop after completion */
  int rc;
  char err[256];
  struct vxd_pending *next_done;   /* under done_mu */
  struct vxd_pending *prev, *next; /* loop-side pending list */
};

struct vxd_store {
  uv_loop_t *loop;
  vxk_cache *cache; /* the store thread's handle */
  vxd_qthread *q;   /* the store thread and its queue */
  uv_mutex_t done_mu;
  uv_async_t done_async;
  vxd_pending *done;    /* finished, for the loop to reap (under done_mu) */
  vxd_pending *pending; /* loop side: queued or running, not yet reaped */
  void (*log)(void *ud, const char *msg);
  void *log_ud;
  vxd_store_written_fn written;
  void *written_ud;
  void (*damaged)(void *ud, const char *why); /* vxd_store_on_damaged */
  void *damaged_ud;
  vxd_store_counts_fn counts_done; /* vxd_store_on_counts */
  void *counts_ud;
  bool contended; /* store thread: the last job found the database locked
                     by another process (until a job gets through) */
};

static void vxd__pending_free(vxd_pending *p) {
  if (!p) return;
  free(p->entry);
  free(p->source_name);
  free(p->inputs.parts);
  free(p->inputs.lines);
  free(p->source);
  vxk_inputs_clear(p->explained.rows, p->explained.n);
  vxk_touches_clear(&p->touches);
  vxk_info_clear(p->listed.entries, p->listed.n);
  free(p);
}

/* How many of the items of inputs text a (one part a line, the
 * lowering's fingerprint split at ';') b lacks or has with another value:
 * the "distance" explanations rank entries by. */
static unsigned vxd__inputs_distance(const char *a, const char *b) {
  unsigned d = 0;
  for (const char *item = a; *item;) {
    size_t n = strcspn(item, ";\n");
    int found = 0;
    for (const char *o = b; *o && !found;) {
      size_t m = strcspn(o, ";\n");
      found = m == n && memcmp(o, item, n) == 0;
      o += m + (o[m] != '\0');
    }
    d += !found;
    item += n + (item[n] != '\0');
  }
  return d;
}

/* Entries of the source name an explanation looks at: the latest this
 * many, of which it answers with the VXD_EXPLAIN_CANDIDATES closest. */
#define VXD__EXPLAIN_SCAN 32u

/* How long each store job waits for another process's lock once one job
 * found the database locked (milliseconds; the first waits
 * VXK_BUSY_TIMEOUT_MS). */
#define VXD_STORE_CONTENDED_WAIT_MS 100u

/* Explains one compile (vxd_store_explain) on the store thread's handle:
 * of the latest VXD__EXPLAIN_SCAN entries of the source name, the closest
 * first (fewest differing inputs, the source text counting as one; then
 * the longest common start of the text; then the latest). */
static void vxd__store_explain_run(vxd_store *st, vxd_pending *p) {
  vxd_explain_result *r = &p->explained;
  uint8_t *lines = NULL;
  size_t lines_size = 0;
  vxk_inputs_row *rows = NULL;
  uint32_t n = 0;
  int has = vxk_has(st->cache, p->key);
  p->rc = has < 0 ? has : VXK_OK;
  r->hit = has == 1;
  if (p->rc == VXK_OK) p->rc = vxk_line_hashes(p->source, p->source_len, &lines, &lines_size);
  r->lines = lines_size / VXK_LINE_HASH_BYTES;
  if (p->rc == VXK_OK && !r->hit)
    p->rc =
        vxk_inputs_of_source(st->cache, p->source_name ? p->source_name : "", VXD__EXPLAIN_SCAN, &rows, &n);
  uint64_t first[VXD__EXPLAIN_SCAN], dist[VXD__EXPLAIN_SCAN];
  for (uint32_t i = 0; p->rc == VXK_OK && i < n; i++) {
    first[i] =
        rows[i].parts ? vxk_first_differing_line(rows[i].lines, rows[i].lines_size, lines, lines_size) : 0;
    /* an entry with no record of its inputs ranks last */
    dist[i] = rows[i].parts ? vxd__inputs_distance(p->inputs.parts ? p->inputs.parts : "", rows[i].parts) +
                                  (first[i] != 0)
                            : UINT32_MAX;
  }
  /* selection of the closest, in rank order; the rest freed */
  vxk_inputs_row *best = p->rc == VXK_OK && n ? calloc(VXD_EXPLAIN_CANDIDATES, sizeof *best) : NULL;
  for (uint32_t k = 0; best && k < VXD_EXPLAIN_CANDIDATES && k < n; k++) {
    uint32_t pick = UINT32_MAX;
    for (uint32_t i = 0; i < n; i++) {
      if (!rows[i].key[0]) continue; /* taken */
      if (pick == UINT32_MAX || dist[i] < dist[pick] ||
          (dist[i] == dist[pick] && first[pick] && (first[i] == 0 || first[i] > first[pick])))
        pick = i;
    }
    best[k] = rows[pick];
    r->first_line[k] = first[pick];
    r->row_lines[k] = rows[pick].lines_size / VXK_LINE_HASH_BYTES;
    rows[pick] = (vxk_inputs_row){0}; /* moved; key "" marks it taken */
    r->n = k + 1;
  }
  if (p->rc == VXK_OK && n && !best) p->rc = VXK_ENOMEM;
  r->rows = best;
  vxk_inputs_clear(rows, n);
  free(lines);
  r->rc = p->rc;
  if (p->rc != VXK_OK)
    snprintf(r->err, sizeof r->err, "%s", p->rc == VXK_ENOMEM ? "out of memory" : vxk_errmsg(st->cache));
}

/* Runs one job on the store thread's handle. */
static void vxd__store_run(vxd_store *st, vxd_pending *p) {
  if (p->kind == VXD__STORE_PUT) {
    vxk_inputs in = {p->inputs.parts, p->inputs.lines, p->inputs.lines_size};
    p->rc = vxk_put(st->cache, p->key, p->entry, p->entry_size, p->compile_us, p->source_name,
                    p->inputs.parts ? &in : NULL);
  } else if (p->kind == VXD__STORE_DROP) {
    /* counted once per damaged entry: a second report of the same damage
     * (read again before this ran) finds it gone */
    p->rc = vxk_drop(st->cache, p->key);
    if (p->rc == VXK_OK)
      p->rc = vxk_counter_add(st->cache, "corrupt", 1);
    else if (p->rc == VXK_ENOTFOUND)
      p->rc = VXK_OK; /* replaced or dropped meanwhile */
  } else if (p->kind == VXD__STORE_ADMIN) {
    vxd_admin_result *r = &p->result;
    switch (p->admin) {
    case VXD_ADMIN_VERIFY: p->rc = vxk_verify(st->cache, 1, &r->checked, &r->removed); break;
    case VXD_ADMIN_CLEAR: p->rc = vxk_clear(st->cache, &r->removed); break;
    case VXD_ADMIN_PRUNE: p->rc = vxk_prune(st->cache, p->arg, &r->removed); break;
    case VXD_ADMIN_ZERO: p->rc = vxk_zero_counters(st->cache); break;
    case VXD_ADMIN_REMOVE:
      p->rc = vxk_remove(st->cache, p->key);
      r->removed = p->rc == VXK_OK;
      if (p->rc == VXK_ENOTFOUND) p->rc = VXK_OK;
      break;
    }
    r->rc = p->rc;
    if (p->rc != VXK_OK) snprintf(r->err, sizeof r->err, "%s", vxk_errmsg(st->cache));
  } else if (p->kind == VXD__STORE_EXPLAIN) {
    vxd__store_explain_run(st, p);
  } else if (p->kind == VXD__STORE_LIST) {
    vxd_list_result *r = &p->listed;
    p->rc = vxk_flush(st->cache); /* the read counts held back */
    if (p->rc == VXK_OK)
      p->rc = vxk_list(st->cache, p->prefix, (uint32_t)p->arg, &r->entries, &r->n, &r->matched);
    r->rc = p->rc;
    if (p->rc != VXK_OK) snprintf(r->err, sizeof r->err, "%s", vxk_errmsg(st->cache));
  } else {
    /* the counts in one transaction: all written or none (given back to
     * the loop then, vxd_store_on_counts); the first failure is reported */
#define VXD__COUNT_NAME(name) #name,
#define VXD__COUNT_VALUE(name) p->counts.name,
    static const char *const names[] = {VXD_COUNTERS(VXD__COUNT_NAME)};
    const int64_t deltas[] = {VXD_COUNTERS(VXD__COUNT_VALUE)};
#undef VXD__COUNT_NAME
#undef VXD__COUNT_VALUE
    p->counts_rc = vxk_counters_add(st->cache, sizeof names / sizeof *names, names, deltas);
    p->rc = p->counts_rc;
    if (p->rc != VXK_OK) snprintf(p->err, sizeof p->err, "%s", vxk_errmsg(st->cache));
    int trc = vxk_touch(st->cache, &p->touches);
    if (p->rc == VXK_OK) p->rc = trc;
  }
  if (p->rc != VXK_OK) snprintf(p->err, sizeof p->err, "%s", vxk_errmsg(st->cache));
}

/* The store thread: runs one job (vxd_qthread's run), then hands it to
 * the loop to reap. */
static void vxd__store_run_queued(void *ud, vxd_qitem *it, unsigned n) {
  vxd_store *st = ud;
  (void)n; /* one at a time */
  vxd_pending *p = (vxd_pending *)it;
  /* Another process holding the database's lock would make each job wait
   * the whole busy timeout. After one job gave up, the next ones wait only
   * VXD_STORE_CONTENDED_WAIT_MS each, until one gets through: the queue,
   * and the stats and admin requests behind it, drain at that pace however
   * slowly jobs arrive (their entries go uncached), and the first job after
   * the lock is released writes again. */
  vxk_set_busy_timeout(st->cache, st->contended ? VXD_STORE_CONTENDED_WAIT_MS : VXK_BUSY_TIMEOUT_MS);
  vxd__store_run(st, p);
  if (p->rc == VXK_EBUSY)
    st->contended = true;
  else if (p->rc == VXK_OK && p->kind != VXD__STORE_EXPLAIN) /* a write went through */
    st->contended = false;
  uv_mutex_lock(&st->done_mu);
  p->next_done = st->done;
  st->done = p;
  uv_mutex_unlock(&st->done_mu);
  uv_async_send(&st->done_async);
}

/* Parked: its queue written, the thread waiting for work holding no lock
 * (vxd_qthread_pause). */
void vxd_store_pause(vxd_store *st) { vxd_qthread_pause(st->q); }

void vxd_store_resume(vxd_store *st) { vxd_qthread_resume(st->q); }

void vxd_store_drain(vxd_store *st) {
  vxd_store_pause(st); /* parked implies drained */
  vxd_store_resume(st);
}

void vxd_store_reap(vxd_store *st) {
  uv_mutex_lock(&st->done_mu);
  vxd_pending *done = st->done;
  st->done = NULL;
  uv_mutex_unlock(&st->done_mu);
  while (done) {
    vxd_pending *p = done;
    done = p->next_done;
    if (p->rc == VXK_EDAMAGED && st->damaged) st->damaged(st->damaged_ud, p->err);
    if (p->kind == VXD__STORE_FLUSH && st->counts_done) {
      st->counts_done(st->counts_ud, p->counts_rc == VXK_OK ? NULL : &p->counts, p->err);
      if (p->counts_rc != VXK_OK) p->rc = VXK_OK; /* said by counts_done, not logged again below */
    }
    if (p->kind == VXD__STORE_ADMIN) {
      if (p->done) p->done(p->done_ud, &p->result); /* reports its own failure */
    } else if (p->kind == VXD__STORE_LIST) {
      p->list_done(p->done_ud, &p->listed); /* moved out */
      p->listed = (vxd_list_result){0};
    } else if (p->kind == VXD__STORE_EXPLAIN) {
      p->explain_done(p->done_ud, &p->explained); /* moved out */
      p->explained = (vxd_explain_result){0};
    } else if (p->rc != VXK_OK && st->log) {
      char msg[512];
      if (p->kind == VXD__STORE_PUT)
        snprintf(msg, sizeof msg, "not cached %s: %s%s", p->key, p->err,
                 p->rc == VXK_EFULL ? " (disk full; existing entries are intact)" : "");
      else
        snprintf(msg, sizeof msg, "cache bookkeeping not written: %s", p->err);
      st->log(st->log_ud, msg);
    }
    if (p->kind == VXD__STORE_PUT && p->share && st->written) { /* handed over, not copied */
      st->written(st->written_ud, p->key, p->entry, p->entry_size);
      p->entry = NULL;
    }
    if (p->prev)
      p->prev->next = p->next;
    else
      st->pending = p->next;
    if (p->next) p->next->prev = p->prev;
    vxd__pending_free(p);
  }
}

static void vxd__store_done_cb(uv_async_t *a) { vxd_store_reap(a->data); }

int vxd_store_open(uv_loop_t *loop, const char *cache_dir, uint64_t max_bytes, uint64_t lru_resolution_us,
                   void (*log)(void *, const char *), void *log_ud, vxd_store **out, char *err,
                   size_t errcap) {
  vxd_store *st = calloc(1, sizeof *st);
  if (!st) {
    snprintf(err, errcap, "out of memory");
    return -ENOMEM;
  }
  st->loop = loop;
  st->log = log;
  st->log_ud = log_ud;
  int rc = vxk_open(cache_dir, max_bytes, &st->cache, err, errcap);
  if (rc != VXK_OK) {
    free(st);
    return rc;
  }
  vxk_set_lru_resolution(st->cache, lru_resolution_us);
  uv_mutex_init(&st->done_mu);
  uv_async_init(loop, &st->done_async, vxd__store_done_cb);
  st->done_async.data = st;
  /* below the loop thread: with few cores, a long flush of LRU times must
   * not delay the hits the loop answers */
  if (vxd_qthread_create(&st->q, vxd__store_run_queued, st, 1, 10) != 0) {
    snprintf(err, errcap, "cannot start the store thread");
    uv_close((uv_handle_t *)&st->done_async, NULL);
    uv_mutex_destroy(&st->done_mu);
    vxk_close(st->cache);
    free(st);
    return -EAGAIN;
  }
  *out = st;
  return 0;
}

/* Queues p (loop thread). */
static void vxd__store_queue(vxd_store *st, vxd_pending *p) {
  p->next = st->pending;
  if (st->pending) st->pending->prev = p;
  st->pending = p;
  vxd_qthread_push(st->q, &p->queued);
}

int vxd_store_drop(vxd_store *st, const char *key) {
  for (const vxd_pending *q = st->pending; q; q = q->next)
    if (q->kind == VXD__STORE_DROP && strcmp(q->key, key) == 0) return 0;
  vxd_pending *p = calloc(1, sizeof *p);
  if (!p) return 0; /* the entry stays refused on every read */
  p->kind = VXD__STORE_DROP;
  snprintf(p->key, sizeof p->key, "%s", key);
  vxd__store_queue(st, p);
  return 1;
}

int vxd_store_admin(vxd_store *st, vxd_admin_op op, uint64_t arg,
                    void (*done)(void *ud, const vxd_admin_result *r), void *ud) {
  vxd_pending *p = calloc(1, sizeof *p);
  if (!p) return -ENOMEM;
  p->kind = VXD__STORE_ADMIN;
  p->admin = op;
  p->arg = arg;
  p->done = done;
  p->done_ud = ud;
  vxd__store_queue(st, p);
  return 0;
}

int vxd_store_remove(vxd_store *st, const char *key, void (*done)(void *ud, const vxd_admin_result *r),
                     void *ud) {
  vxd_pending *p = calloc(1, sizeof *p);
  if (!p) return -ENOMEM;
  p->kind = VXD__STORE_ADMIN;
  p->admin = VXD_ADMIN_REMOVE;
  snprintf(p->key, sizeof p->key, "%s", key);
  p->done = done;
  p->done_ud = ud;
  vxd__store_queue(st, p);
  return 0;
}

int vxd_store_list(vxd_store *st, const char *prefix, uint32_t limit,
                   void (*done)(void *ud, vxd_list_result *r), void *ud) {
  vxd_pending *p = calloc(1, sizeof *p);
  if (!p) return -ENOMEM;
  p->kind = VXD__STORE_LIST;
  snprintf(p->prefix, sizeof p->prefix, "%s", prefix ? prefix : "");
  p->arg = limit;
  p->list_done = done;
  p->done_ud = ud;
  vxd__store_queue(st, p);
  return 0;
}

int vxd_store_explain(vxd_store *st, const char *key, const char *source_name, const char *inputs,
                      uint8_t *source, size_t len, void (*done)(void *ud, vxd_explain_result *r), void *ud) {
  vxd_pending *p = calloc(1, sizeof *p);
  if (!p || (source_name && !(p->source_name = strdup(source_name))) || !(p->inputs.parts = strdup(inputs))) {
    if (p) free(p->source_name);
    free(p);
    return -ENOMEM;
  }
  p->kind = VXD__STORE_EXPLAIN;
  snprintf(p->key, sizeof p->key, "%s", key);
  p->source = source; /* moved */
  p->source_len = len;
  p->explain_done = done;
  p->done_ud = ud;
  vxd__store_queue(st, p);
  return 0;
}

int vxd_store_put(vxd_store *st, const char *key, uint8_t *entry, size_t size, uint64_t compile_us,
                  const char *source_name, int share, vxd_store_inputs *inputs) {
  vxd_pending *p = calloc(1, sizeof *p);
  if (!p || (source_name && !(p->source_name = strdup(source_name)))) {
    free(p);
    return -ENOMEM;
  }
  p->kind = VXD__STORE_PUT;
  p->compile_us = compile_us;
  p->share = share;
  snprintf(p->key, sizeof p->key, "%s", key);
  p->entry = entry; /* moved */
  p->entry_size = size;
  if (inputs) { /* moved */
    p->inputs = *inputs;
    *inputs = (vxd_store_inputs){0};
  }
  vxd__store_queue(st, p);
  return 0;
}

void vxd_store_on_damaged(vxd_store *st, void (*fn)(void *ud, const char *why), void *ud) {
  st->damaged = fn;
  st->damaged_ud = ud;
}

void vxd_store_on_counts(vxd_store *st, vxd_store_counts_fn fn, void *ud) {
  st->counts_done = fn;
  st->counts_ud = ud;
}

void vxd_store_on_written(vxd_store *st, vxd_store_written_fn fn, void *ud) {
  st->written = fn;
  st->written_ud = ud;
}

void vxd_store_flush(vxd_store *st, vxk_cache *reader, const vxd_counts *delta) {
  vxd_pending *p = calloc(1, sizeof *p);
  if (!p) return;
  p->kind = VXD__STORE_FLUSH;
  p->counts = *delta;
  if (vxk_touch_take(reader, &p->touches) != VXK_OK) p->touches = (vxk_touches){0};
  static const vxd_counts none;
  if (memcmp(&p->counts, &none, sizeof none) == 0 && !p->touches.n) {
    vxd__pending_free(p);
    return;
  }
  vxd__store_queue(st, p);
}

int vxd_store_pending(const vxd_store *st, const char *key, vxk_entry *out) {
  *out = (vxk_entry){0};
  for (const vxd_pending *p = st->pending; p; p = p->next) {
    if (p->kind != VXD__STORE_PUT || strcmp(p->key, key) != 0) continue;
    out->data = malloc(p->entry_size ? p->entry_size : 1);
    if (!out->data) return VXK_ENOMEM;
    memcpy(out->data, p->entry, p->entry_size);
    out->size = p->entry_size;
    out->compile_us = p->compile_us;
    return VXK_OK;
  }
  return VXK_ENOTFOUND;
}

static void vxd__store_closed_cb(uv_handle_t *h) { free(h->data); }

void vxd_store_close(vxd_store *st) {
  if (!st) return;
  vxd_qthread_close(st->q); /* the queue is drained first */
  st->q = NULL;
  vxd_store_reap(st);
  uv_mutex_destroy(&st->done_mu);
  vxk_close(st->cache);
  st->cache = NULL;
  uv_close((uv_handle_t *)&st->done_async, vxd__store_closed_cb); /* frees st */
}
