/*
 * vxd_cache.c - the loop's side of the cache: opening it (again after
 * damage, or every 10 s while it cannot be used), the store thread and the
 * shared level behind it, finished compiles and counters handed to the
 * store thread.  SQLite itself is cache/'s; the writes run on
 * vxd_store.c's thread.  Loop thread only.
 */
#include <errno.h>
#include <stdio.h>
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
