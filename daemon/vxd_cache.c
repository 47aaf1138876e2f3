/*
 * vxd_cache.c - the loop's side of the cache: opening it (again after
 * damage, or every 10 s while it cannot be used), the store thread and the
 * shared level behind it, finished compiles and counters handed to the
 * store thread, and the pieces of modules its workers look up and keep.
 * SQLite itself is cache/'s; the writes run on vxd_store.c's thread.
 * Loop thread only.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "vxd_loop.h"

void vxd__cache_put(vxd_server *s, const vxd_job *j, vxp_response *r, uint64_t compile_us) {
  if (!s->store) return;
  vxd_store_inputs in = {r->key_inputs, r->line_hashes, r->line_hashes_size};
  if (vxd_store_put(s->store, j->key, r->entry, r->entry_size, compile_us, j->source_name, 1, &in) != 0) {
    vxd__log_at(s, VXD_LOG_WARNING, "not cached %s: out of memory", j->key);
    return;
  }
  r->entry = NULL; /* the store's now, and what the key came from */
  r->entry_size = 0;
  r->key_inputs = NULL, r->line_hashes = NULL, r->line_hashes_size = 0;
}

int vxd__cache_read(vxd_server *s, const char *key, vxk_entry *e) {
  int rc = s->cache ? vxk_get(s->cache, key, e) : VXK_ENOTFOUND;
  if (rc == VXK_ECORRUPT) {
    /* never served: dropped (only while still damaged), counted, and, unless
     * its replacement is already queued, compiled again */
    if (s->store && vxd_store_drop(s->store, key))
      vxd__log_at(s, VXD_LOG_WARNING, "cache entry %s fails its checksum; dropping it", key);
    rc = VXK_ENOTFOUND;
  }
  if (rc == VXK_ENOTFOUND && s->store) rc = vxd_store_pending(s->store, key, e); /* not written yet */
  if (rc == VXK_EDAMAGED)
    vxd__cache_damaged(s, vxk_errmsg(s->cache));
  else if (rc != VXK_OK && rc != VXK_ENOTFOUND)
    vxd__log_at(s, VXD_LOG_ERR, "cache read %s: %s", key, vxk_errmsg(s->cache));
  return rc;
}

int vxd__cache_adopt(vxd_server *s, const char *key, vxk_entry *e, const char *source_name) {
  if (!s->store) return -ENOENT;
  int rc = vxd_store_put(s->store, key, e->data, e->size, e->compile_us, source_name, 0, NULL);
  if (rc == 0) e->data = NULL;
  return rc;
}

/* ---- a module's pieces ---- */

/* The entries one answer carries at most, in bytes: it must fit in one
 * frame with its keys (VXP_MAX_PIECES of them); a piece past it is
 * answered as not found, and compiled. */
#define VXD__PIECES_ANSWER_MAX (VXP_MAX_FRAME_DEFAULT - (64u << 10))

/* One worker's pieces request being answered: the answer, and how many
 * lookups of the shared level it still waits for. */
typedef struct vxd__pieces_ask {
  vxd_server *srv;
  vxd_worker *w; /* NULL once the worker is gone */
  vxp_request answer;
  uint32_t waiting;
  uint32_t found, shared; /* entries found, of them from the shared level */
  size_t bytes;           /* of the entries found */
  struct vxd__pieces_slot {
    struct vxd__pieces_ask *ask;
    uint32_t i;
  } slots[];
} vxd__pieces_ask;

typedef struct {
  uv_write_t req;
  uint8_t *frame;
} vxd__pieces_write;

static void vxd__pieces_written(uv_write_t *req, int status) {
  (void)status; /* a failed write means the worker died: its exit fails the job */
  vxd__pieces_write *pw = (vxd__pieces_write *)req;
  free(pw->frame);
  free(pw);
}

/* Sends ask's answer to its worker (when it is still there), then frees it. */
static void vxd__pieces_send(vxd__pieces_ask *ask) {
  vxd_worker *w = ask->w;
  if (w) {
    w->ask = NULL;
    if (w->job)
      vxd__log_at(ask->srv, VXD_LOG_DEBUG,
                  "compile %.12s: %u of %u pieces from the cache (%u from the shared level)", w->job->key,
                  ask->found, ask->answer.npieces, ask->shared);
    vxd__pieces_write *pw = calloc(1, sizeof *pw);
    size_t len = 0;
    /* fits in one frame: its entries are bounded (VXD__PIECES_ANSWER_MAX) */
    int rc = pw ? vxp_request_encode(&ask->answer, &pw->frame, &len) : VXP_ENOMEM;
    if (rc != VXP_OK) {
      free(pw);
      kill(w->pid, SIGKILL); /* it waits for this answer: its job is retried */
    } else {
      uv_buf_t b = uv_buf_init((char *)pw->frame, (unsigned)len);
      if (uv_write(&pw->req, (uv_stream_t *)&w->to, &b, 1, vxd__pieces_written) != 0) {
        free(pw->frame);
        free(pw);
        kill(w->pid, SIGKILL);
      }
    }
  }
  vxp_request_clear(&ask->answer);
  free(ask);
}

static void vxd__pieces_remote_done(void *ud, const char *key, vxk_entry *e, int leased) {
  (void)key, (void)leased; /* no lease asked */
  struct vxd__pieces_slot *slot = ud;
  vxd__pieces_ask *ask = slot->ask;
  vxd_server *s = ask->srv;
  vxp_piece *p = &ask->answer.pieces[slot->i];
  if (e && ask->w && !s->stopping && e->size <= VXD__PIECES_ANSWER_MAX - ask->bytes) {
    uint8_t *copy = malloc(e->size ? e->size : 1);
    if (copy) {
      memcpy(copy, e->data, e->size);
      p->entry = copy, p->entry_size = e->size;
      s->pending.l2_hits++;
      ask->found++, ask->shared++, ask->bytes += e->size;
      vxd__cache_adopt(s, p->key, e, NULL); /* kept here too (the file name unknown) */
    }
  }
  if (--ask->waiting == 0) vxd__pieces_send(ask);
}

void vxd__pieces_answer(vxd_server *s, vxd_worker *w, vxp_response *r) {
  uint32_t n = r->npieces;
  vxd__pieces_ask *ask = calloc(1, sizeof *ask + (size_t)n * sizeof ask->slots[0]);
  if (!ask) {
    kill(w->pid, SIGKILL);
    return;
  }
  ask->srv = s, ask->w = w;
  ask->answer = (vxp_request){.id = r->id, .op = VXP_OP_PIECES, .pieces = r->pieces, .npieces = n};
  r->pieces = NULL, r->npieces = 0;
  w->ask = ask;
  ask->waiting = 1; /* this function's own, dropped at its end */
  for (uint32_t i = 0; i < n; i++) {
    vxp_piece *p = &ask->answer.pieces[i];
    free(p->entry); /* a request carries none */
    p->entry = NULL, p->entry_size = 0;
    vxk_entry e = {0};
    int rc = vxd__cache_read(s, p->key, &e); /* a damaged piece: dropped, counted, compiled again */
    if (rc == VXK_OK && e.size > VXD__PIECES_ANSWER_MAX - ask->bytes) {
      free(e.data); /* more than one answer holds: compiled */
      continue;
    }
    if (rc == VXK_OK) {
      p->entry = e.data, p->entry_size = e.size;
      ask->found++, ask->bytes += e.size;
      if (s->cache) vxk_mark_used(s->cache, p->key);
      continue;
    }
    ask->slots[i] = (struct vxd__pieces_slot){ask, i};
    if (s->remote && vxd_remote_lookup(s->remote, p->key, 0, vxd__pieces_remote_done, &ask->slots[i]) == 0)
      ask->waiting++;
  }
  if (--ask->waiting == 0) vxd__pieces_send(ask);
}

void vxd__pieces_forget(vxd_worker *w) {
  if (w->ask) w->ask->w = NULL;
  w->ask = NULL;
}

void vxd__pieces_keep(vxd_server *s, const vxd_job *j, vxp_response *r) {
  /* listed as a piece of its module's file; not that file's own entry,
   * which explain compares a compile with */
  char origin[sizeof j->source_name + 16];
  snprintf(origin, sizeof origin, "piece of %s", j->source_name[0] ? j->source_name : "<source>");
  for (uint32_t i = 0; s->store && i < r->npieces; i++) {
    vxp_piece *p = &r->pieces[i];
    if (!p->entry) continue;
    if (vxd_store_put(s->store, p->key, p->entry, p->entry_size, 0, origin, 1, NULL) != 0) {
      vxd__log_at(s, VXD_LOG_WARNING, "not cached: a piece %s: out of memory", p->key);
      continue;
    }
    p->entry = NULL; /* the store's now */
  }
}

/* The store thread wrote a compiled entry: share it (written hook). */
static void vxd__share(void *ud, const char *key, uint8_t *entry, size_t size) {
  vxd_remote_put(((vxd_server *)ud)->remote, key, entry, size);
}

static void vxd__remote_log(void *ud, int level, const char *line) { vxd__log_at(ud, level, "%s", line); }

/* Hands the counters and the LRU times of the entries read to the store
 * thread (every second, and when stopping). */
void vxd__flush_counters(vxd_server *s) {
  if (s->remote) vxd_remote_take_counts(s->remote, &s->pending);
  if (!s->store) return; /* without a cache the counts stay here (stats) */
  vxd_store_flush(s->store, s->cache, &s->pending);
  s->pending = (vxd_counts){0};
}

/* What became of a flush of counts: written (unwritten NULL), or handed
 * back, kept in s->pending and flushed again on the next tick (said once
 * until they are written again). */
static void vxd__counts_done(void *ud, const vxd_counts *unwritten, const char *why) {
  vxd_server *s = ud;
  if (!unwritten) {
    if (s->counts_unwritten) vxd__log(s, "cache counters written again");
    s->counts_unwritten = 0;
    return;
  }
#define VXD__GIVE_BACK(name) s->pending.name += unwritten->name;
  VXD_COUNTERS(VXD__GIVE_BACK)
#undef VXD__GIVE_BACK
  if (!s->counts_unwritten)
    vxd__log_at(s, VXD_LOG_WARNING,
                "cache counters not written (%s): kept, and written once the cache can be", why);
  s->counts_unwritten = 1;
}

void vxd__cache_damaged(vxd_server *s, const char *why) {
  if (!s->store || s->cache_damaged) return; /* said once per database */
  s->cache_damaged = 1;
  vxd__log_at(
      s, VXD_LOG_ERR,
      "cache database %s/cache.db is damaged (%s): keeping it as cache.db.corrupt and starting a new one",
      s->cfg->cache_dir, why);
  /* replaced before the next request is read: the flush tick, brought forward */
  if (!s->stopping && uv_is_active((uv_handle_t *)&s->flush))
    uv_timer_start(&s->flush, vxd__cache_tick_cb, 0, 1000);
}

static void vxd__cache_damaged_cb(void *ud, const char *why) { vxd__cache_damaged(ud, why); }

/* Replaces a damaged database: both handles closed (the queued writes fail
 * on it), the file kept aside (vxk_discard), a new cache opened and the
 * damage counted.  Loop thread, outside any store callback. */
static void vxd__replace_cache(vxd_server *s) {
  vxd_store *st = s->store;
  s->store = NULL;
  vxd_store_close(st);
  vxk_close(s->cache);
  s->cache = NULL;
  s->cache_damaged = 0;
  char err[512];
  if (vxk_discard(s->cfg->cache_dir, err, sizeof err) != VXK_OK) vxd__log_at(s, VXD_LOG_ERR, "%s", err);
  s->pending.corrupt++;
  vxd__cache_open(s);
}

/* Seconds between attempts to open a cache that could not be opened. */
#define VXD_CACHE_RETRY_MS 10000

/* Opens the cache, its store thread and the shared level behind it.
 * Returns 0, or -1 with the reason in s->cache_err: the daemon then serves
 * without a cache (as ccache compiles without its cache) and tries again
 * every VXD_CACHE_RETRY_MS, so that a full disk, an unusable directory or
 * one another user could write stops mattering once it is mended, without
 * a restart.  Loop thread. */
int vxd__cache_open(vxd_server *s) {
  const vxd_config *cfg = s->cfg;
  char err[512] = "";
  int rc = vxk_open(cfg->cache_dir, cfg->max_cache_bytes, &s->cache, err, sizeof err);
  if (rc == VXK_OK) {
    vxk_set_lru_resolution(s->cache, cfg->lru_resolution_us);
    if (vxd_store_open(s->loop, cfg->cache_dir, cfg->max_cache_bytes, cfg->lru_resolution_us, vxd__log_line,
                       s, &s->store, err, sizeof err) != 0) {
      vxk_close(s->cache);
      s->cache = NULL;
      rc = VXK_EIO;
    }
  }
  s->cache_retry_ms = vxd__now_ms(s) + VXD_CACHE_RETRY_MS;
  if (rc != VXK_OK) {
    /* said once per cause, not at every attempt */
    if (strcmp(err, s->cache_err) != 0)
      vxd__log_at(s, rc == VXK_EUNTRUSTED ? VXD_LOG_ERR : VXD_LOG_WARNING,
                  "%s; serving without a cache (trying again every %u s)", err, VXD_CACHE_RETRY_MS / 1000);
    snprintf(s->cache_err, sizeof s->cache_err, "%s", err);
    return rc;
  }
  const char *notice = vxk_open_notice(s->cache);
  if (notice) vxd__log_at(s, VXD_LOG_WARNING, "%s", notice);
  if (s->cache_err[0]) vxd__log(s, "cache %s opened: serving with a cache again", cfg->cache_dir);
  s->cache_err[0] = '\0';
  vxd_store_on_damaged(s->store, vxd__cache_damaged_cb, s);
  vxd_store_on_counts(s->store, vxd__counts_done, s);
  if (s->remote) {
    vxd_store_on_written(s->store, vxd__share, s);
  } else if (cfg->remote_on) {
    if (vxd_remote_open(s->loop, cfg, vxd__remote_log, s, &s->remote, err, sizeof err) != 0) {
      vxd__log_at(s, VXD_LOG_WARNING, "remote storage not used: %s", err);
    } else {
      char where[800];
      vxd_remote_describe(s->remote, where, sizeof where);
      vxd__log_at(s, VXD_LOG_INFO, "remote storage %s", where);
      vxd_store_on_written(s->store, vxd__share, s);
    }
  }
  return 0;
}

void vxd__cache_tick_cb(uv_timer_t *t) {
  vxd_server *s = t->data;
  if (s->cfg->sdk && vxd_sdk_refresh(s->cfg->sdk) == 1)
    vxd__log_at(s, VXD_LOG_INFO, "the Vortex SDK in %s changed: images linked from now on get new keys",
                s->cfg->vortex_sdk);
  if (s->cache_damaged && !s->stopping) vxd__replace_cache(s);
  if (!s->store && !s->stopping && vxd__now_ms(s) >= s->cache_retry_ms) vxd__cache_open(s);
  vxd__flush_counters(s);
}

void vxd__share_queued(vxd_server *s, unsigned timeout_ms) {
  if (!s->store || !s->remote) return;
  vxd_store_drain(s->store);
  vxd_store_reap(s->store); /* hands the written entries to the writer */
  vxd_remote_drain(s->remote, timeout_ms);
}
