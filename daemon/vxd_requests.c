/*
 * vxd_requests.c - what the daemon does with each request: hello, stats,
 * fetch, compile (key, then the cache, then a job).  Bytes from a socket are
 * never trusted: a well-framed but malformed request gets a bad_request
 * reply and the connection stays open.  Loop thread only.
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

#include <uv.h>

#include "vxd_loop.h"

static void vxd__on_hello(vxd_conn *c, const vxp_request *req) {
  char server[256], build[96] = "", target[VXP_TARGET_NAME_MAX];
  snprintf(server, sizeof server, "%s (%s)", VXD_SERVER_NAME, vxl_toolchain_summary());
  /* the program this process runs, as it started: a rebuilt vortexd
   * replaced the file, not this inode */
  struct stat st;
  if (stat("/proc/self/exe", &st) == 0)
    snprintf(build, sizeof build, "%llu:%llu:%llu:%lld", (unsigned long long)st.st_dev,
             (unsigned long long)st.st_ino, (unsigned long long)st.st_size,
             (long long)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec);
  const vxd_config *cfg = c->srv->cfg;
  vxp_target_name(cfg->vortex_abi, cfg->xlen, target);
  vxp_response r = {.id = req->id,
                    .op = VXP_OP_HELLO,
                    .status = VXP_STATUS_OK,
                    .proto_version = VXP_PROTOCOL_VERSION,
                    .server = server,
                    .max_frame = cfg->max_frame,
                    .build = build[0] ? build : NULL,
                    .target = target,
                    .cache_dir = (char *)cfg->cache_dir};
  vxd__send(c, &r, 0);
}

static void vxd__on_stats(vxd_conn *c, const vxp_request *req) {
  vxd_server *s = c->srv;
  vxk_stats ks = {0};
  /* counters and entries as of now: what is queued is written first */
  vxd__share_queued(s, s->cfg->remote_timeout_ms); /* entries written here are shared first */
  vxd__flush_counters(s);
  if (s->store) {
    vxd_store_drain(s->store);
    vxd_store_reap(s->store); /* counts it could not write come back to s->pending */
  }
  int src = s->cache ? vxk_stats_get(s->cache, &ks) : VXK_OK;
  if (src != VXK_OK) {
    if (src == VXK_EDAMAGED) vxd__cache_damaged(s, vxk_errmsg(s->cache));
    vxd__send_error(c, req->id, VXP_OP_STATS, VXP_STATUS_INTERNAL, vxk_errmsg(s->cache), 0);
    return;
  }
  /* with a cache, what it could not store yet (a full disk); without
   * one, this run's counts */
#define VXD__ADD_PENDING(name) ks.name += (uint64_t)s->pending.name;
  VXD_COUNTERS(VXD__ADD_PENDING)
#undef VXD__ADD_PENDING
  vxp_response r = {.id = req->id, .op = VXP_OP_STATS, .status = VXP_STATUS_OK};
  /* the counters the cache keeps (vxk_stats), under the same names */
#define VXD__FROM_CACHE(X) X(entries) X(bytes) X(max_bytes) VXP_PERSISTENT_REPORTED(X)
#define VXD__COPY(name) r.stats.name = ks.name;
  VXD__FROM_CACHE(VXD__COPY)
#undef VXD__COPY
#undef VXD__FROM_CACHE
  /* and this daemon's own */
  r.stats.requests = s->requests;
  r.stats.workers = s->pool.nslots;
  r.stats.worker_restarts = s->pool.worker_restarts;
  r.stats.uptime_ms = vxd__now_ms(s) - s->start_ms;
  r.stats.saved_ms = ks.saved_us / 1000u;
  r.stats.refused = s->refused;
  r.stats.timeouts = s->timeouts;
  char remote[900];
  if (s->remote) {
    vxd_remote_describe(s->remote, remote, sizeof remote);
    r.stats.remote = remote; /* borrowed: r is not cleared */
  }
  if (!s->store && s->cache_err[0]) r.stats.cache_error = s->cache_err; /* borrowed */
  memcpy(r.stats.compile_buckets, s->compile_buckets, sizeof r.stats.compile_buckets);
  r.stats.compile_sum_us = s->compile_sum_us;
  vxd__send(c, &r, 0);
}

/* A request that needs the cache while the daemon serves without one
 * (or is stopping): answered with why; returns 1 then, else 0. */
static int vxd__refused_without_cache(vxd_conn *c, const vxp_request *req) {
  vxd_server *s = c->srv;
  if (s->store) return 0;
  char msg[600];
  snprintf(msg, sizeof msg, "serving without a cache: %s", s->cache_err[0] ? s->cache_err : "stopping");
  vxd__send_error(c, req->id, req->op, VXP_STATUS_INTERNAL, msg, 0);
  return 1;
}

/* Who waits for a whole-cache operation on the store thread. */
typedef struct {
  vxd_server *srv;
  uint64_t conn_id, req_id;
  vxp_op op;
} vxd__admin_wait;

static void vxd__admin_done(void *ud, const vxd_admin_result *res) {
  vxd__admin_wait *w = ud;
  vxd_server *s = w->srv;
  if (res->rc == 0 && (w->op == VXP_OP_CLEAR || w->op == VXP_OP_PRUNE || w->op == VXP_OP_REMOVE))
    vxd_hot_clear(s->hot); /* no reply of a deleted entry is kept */
  vxd_conn *c = vxd__conn_find(s, w->conn_id);
  if (res->rc != 0)
    vxd__log_at(s, VXD_LOG_ERR, "%s failed: %s", vxp_op_name(w->op), res->err);
  else
    vxd__log_at(s, VXD_LOG_NOTICE, "%s: %llu entries checked, %llu removed", vxp_op_name(w->op),
                (unsigned long long)res->checked, (unsigned long long)res->removed);
  if (c) {
    vxp_response r = {.id = w->req_id,
                      .op = w->op,
                      .status = res->rc == 0 ? VXP_STATUS_OK : VXP_STATUS_INTERNAL,
                      .message = res->rc == 0 ? NULL : (char *)res->err,
                      .checked = res->checked,
                      .removed = res->removed};
    vxd__send(c, &r, 0);
  }
  free(w);
}

static void vxd__on_admin(vxd_conn *c, const vxp_request *req) {
  vxd_server *s = c->srv;
  if (vxd__refused_without_cache(c, req)) return;
  vxd_admin_op op = req->op == VXP_OP_VERIFY  ? VXD_ADMIN_VERIFY
                    : req->op == VXP_OP_CLEAR ? VXD_ADMIN_CLEAR
                    : req->op == VXP_OP_PRUNE ? VXD_ADMIN_PRUNE
                                              : VXD_ADMIN_ZERO;
  vxd__admin_wait *w = calloc(1, sizeof *w);
  if (w) *w = (vxd__admin_wait){s, c->id, req->id, req->op};
  if (op == VXD_ADMIN_ZERO) { /* counters not yet flushed go too */
    if (s->remote) vxd_remote_take_counts(s->remote, &s->pending);
    s->pending = (vxd_counts){0};
  } else
    vxd__flush_counters(s); /* reads so far count as use */
  if (!w || vxd_store_admin(s->store, op, req->max_size, vxd__admin_done, w) != 0) {
    free(w);
    vxd__send_error(c, req->id, req->op, VXP_STATUS_INTERNAL, "out of memory", 0);
  }
}

/* `vxc rm`: one entry deleted from the local cache (the shared level is
 * Redis's to evict), on the store thread after every write queued before. */
static void vxd__on_remove(vxd_conn *c, const vxp_request *req) {
  vxd_server *s = c->srv;
  if (vxd__refused_without_cache(c, req)) return;
  vxd__admin_wait *w = calloc(1, sizeof *w);
  if (w) *w = (vxd__admin_wait){s, c->id, req->id, req->op};
  if (!w || vxd_store_remove(s->store, req->key, vxd__admin_done, w) != 0) {
    free(w);
    vxd__send_error(c, req->id, req->op, VXP_STATUS_INTERNAL, "out of memory", 0);
  }
}

/* Who waits for a listing on the store thread. */
typedef struct {
  vxd_server *srv;
  uint64_t conn_id, req_id;
} vxd__list_wait;

static void vxd__list_done(void *ud, vxd_list_result *res) {
  vxd__list_wait *w = ud;
  vxd_server *s = w->srv;
  vxd_conn *c = vxd__conn_find(s, w->conn_id);
  if (res->rc != 0) vxd__log_at(s, VXD_LOG_ERR, "list failed: %s", res->err);
  if (c && res->rc != 0)
    vxd__send_error(c, w->req_id, VXP_OP_LIST, VXP_STATUS_INTERNAL, res->err, 0);
  else if (c) {
    vxp_response r = {.id = w->req_id, .op = VXP_OP_LIST, .status = VXP_STATUS_OK, .checked = res->matched};
    r.entries = calloc(res->n ? res->n : 1, sizeof *r.entries);
    for (uint32_t i = 0; r.entries && i < res->n; i++) { /* borrowed from res */
      const vxk_info *in = &res->entries[i];
      r.entries[i] =
          (vxp_entry_info){.key = (char *)in->key,
                           .source_name = in->source_name,
                           .options = in->options,
                           .bytes = in->bytes,
                           .created_s = in->created_us / 1000000u,
                           .used_s = in->last_used_us / 1000000u,
                           .hits = in->hits,
                           .compile_us = in->compile_us,
                           .nkernels = in->nkernels,
                           .kernel_names = in->kernel_names,
                           .nnames = in->nnames < VXP_MAX_LIST_NAMES ? in->nnames : VXP_MAX_LIST_NAMES};
    }
    r.nentries = r.entries ? res->n : 0;
    if (r.entries)
      vxd__send(c, &r, 0);
    else
      vxd__send_error(c, w->req_id, VXP_OP_LIST, VXP_STATUS_INTERNAL, "out of memory", 0);
    free(r.entries);
  }
  vxk_info_clear(res->entries, res->n);
  free(w);
}

static void vxd__on_list(vxd_conn *c, const vxp_request *req) {
  vxd_server *s = c->srv;
  if (vxd__refused_without_cache(c, req)) return;
  vxd__list_wait *w = calloc(1, sizeof *w);
  if (w) *w = (vxd__list_wait){s, c->id, req->id};
  vxd__flush_counters(s); /* the reads so far count as hits and use */
  uint32_t limit = req->limit ? req->limit : 100u;
  if (limit > VXK_LIST_MAX) limit = VXK_LIST_MAX;
  if (!w || vxd_store_list(s->store, req->prefix, limit, vxd__list_done, w) != 0) {
    free(w);
    vxd__send_error(c, req->id, req->op, VXP_STATUS_INTERNAL, "out of memory", 0);
  }
}

/* Answers req from the cache entry key: the entry's bytes as stored, in a
 * reply (the whole entry also for a fetch of one kernel: the client keeps
 * that one).  Returns 0 when answered, VXK_ENOTFOUND, or another VXK error
 * (logged, not answered). */
static int vxd__serve_cached(vxd_conn *c, const vxp_request *req, const char *key) {
  vxd_server *s = c->srv;
  /* a compile hit seen lately: its encoded reply, with this request's id */
  int hot = s->hot && req->op == VXP_OP_COMPILE;
  size_t hlen = 0;
  uint64_t saved_us = 0;
  const uint8_t *hframe = hot ? vxd_hot_get(s->hot, key, &hlen, &saved_us) : NULL;
  uint8_t *copy = hframe ? malloc(hlen) : NULL;
  if (copy) {
    memcpy(copy, hframe, hlen);
    /* never another request's id: a frame that cannot take this one's is
     * dropped with the others kept, and the entry read from the cache */
    if (!vxd_fails_assert(vxp_frame_set_id(copy, hlen, req->id) == VXP_OK)) {
      if (s->cache) vxk_mark_used(s->cache, key); /* for eviction, as a read would */
      s->pending.hits++;
      s->pending.saved_us += (int64_t)saved_us;
      vxd__send_frame(c, copy, hlen, 0);
      return 0;
    }
    free(copy);
    vxd_hot_clear(s->hot);
  }
  if (!s->cache) return VXK_ENOTFOUND; /* serving without a cache */
  vxk_entry e;
  int rc = vxd__cache_read(s, key, &e);
  if (rc != VXK_OK) return rc;
  vxp_response r = {.id = req->id,
                    .op = req->op,
                    .status = VXP_STATUS_OK,
                    .cached = true,
                    .entry = e.data, /* moved */
                    .entry_size = e.size};
  saved_us = e.compile_us;
  r.key = (char *)key;
  s->pending.hits++;
  s->pending.saved_us += (int64_t)saved_us;
  uint8_t *frame = NULL;
  size_t len = 0;
  if (vxd__encode(&r, &frame, &len) != 0) {
    vxd__conn_close(c);
  } else {
    if (hot) vxd_hot_put(s->hot, key, frame, len, saved_us);
    vxd__send_frame(c, frame, len, 0);
  }
  r.key = NULL; /* borrowed */
  vxp_response_clear(&r);
  return 0;
}

static void vxd__fetch_answer(vxd_conn *c, const vxp_request *req, int rc) {
  if (rc == VXK_ENOTFOUND)
    vxd__send_error(c, req->id, VXP_OP_FETCH, VXP_STATUS_NOT_FOUND, "no cache entry with that key", 0);
  else if (rc != 0)
    vxd__send_error(c, req->id, VXP_OP_FETCH, VXP_STATUS_INTERNAL, "cache read failed", 0);
}

/* A fetch waiting for the remote level. */
typedef struct {
  vxd_server *srv;
  uint64_t conn_id, req_id;
} vxd__fetch_wait;

static void vxd__fetch_remote_done(void *ud, const char *key, vxk_entry *e, int leased) {
  (void)leased; /* a fetch never asks for a lease */
  vxd__fetch_wait *fw = ud;
  vxd_server *s = fw->srv;
  vxd_conn *c = s->stopping ? NULL : vxd__conn_find(s, fw->conn_id);
  if (c) {
    vxp_request req = {.id = fw->req_id, .op = VXP_OP_FETCH};
    int rc = VXK_ENOTFOUND;
    if (e && vxd__cache_adopt(s, key, e, NULL) == 0) { /* a key alone: the source's name unknown */
      rc = vxd__serve_cached(c, &req, key);
      if (rc == 0) s->pending.l2_hits++;
    }
    vxd__fetch_answer(c, &req, rc);
  }
  free(fw);
}

static void vxd__on_fetch(vxd_conn *c, const vxp_request *req) {
  vxd_server *s = c->srv;
  if (!vxk_key_valid(req->key)) {
    vxd__send_error(c, req->id, VXP_OP_FETCH, VXP_STATUS_BAD_REQUEST,
                    "key must be 64 lowercase hexadecimal digits", 0);
    return;
  }
  int rc = vxd__serve_cached(c, req, req->key);
  if (rc == VXK_ENOTFOUND && s->remote) { /* then the shared level */
    vxd__fetch_wait *fw = calloc(1, sizeof *fw);
    if (fw) {
      *fw = (vxd__fetch_wait){s, c->id, req->id};
      if (vxd_remote_lookup(s->remote, req->key, 0, vxd__fetch_remote_done, fw) == 0) return;
      free(fw);
    }
  }
  vxd__fetch_answer(c, req, rc);
}

static int vxd__key(const vxd_server *s, const vxp_request *req, char key[VXK_KEY_HEX + 1]) {
  vxl_options o;
  vxd_options_from_request(s->cfg, req, &o);
  return vxd_cache_key(s->cfg, &o, req->source_name, req->source, req->source_len, key);
}

/* The remote level answered a compile's lookup of key (ud: the server):
 * a hit answers every waiter from it, anything else compiles. */
static void vxd__compile_remote_done(void *ud, const char *key, vxk_entry *e, int leased) {
  vxd_server *s = ud;
  vxd_job *j = vxd__job_take_remote(s, key);
  if (!j) {
    if (leased && s->remote) vxd_remote_lease_end(s->remote, key, 0);
    return;
  }
  j->leased = leased;
  if (s->stopping) {
    vxd__job_free(s, j);
    return;
  }
  if (e && vxd__cache_adopt(s, key, e, j->source_name) == 0) {
    for (vxd_waiter *w = j->waiters; w; w = w->next) {
      vxd_conn *c = vxd__conn_find(s, w->conn_id);
      if (!c) continue;
      vxp_request req = {.id = w->req_id, .op = VXP_OP_COMPILE};
      if (vxd__serve_cached(c, &req, key) == 0) {
        s->pending.l2_hits++;
        vxd__log_at(s, VXD_LOG_DEBUG, "compile %.12s L2 hit %llu us: %s for %s, client pid %d", key,
                    (unsigned long long)((uv_hrtime() - w->arrived_ns) / 1000u),
                    j->source_name[0] ? j->source_name : "<source>", j->target, (int)c->peer_pid);
      } else
        vxd__send_error(c, w->req_id, VXP_OP_COMPILE, VXP_STATUS_INTERNAL, "cache read failed", 0);
    }
    vxd__job_free(s, j);
    return;
  }
  vxd__job_queue(s, j);
  vxd__dispatch(s);
}

/* Who waits for an explanation on the store thread, and what the
 * compile's key is and came from. */
typedef struct {
  vxd_server *srv;
  uint64_t conn_id, req_id;
  char key[VXK_KEY_HEX + 1];
  char *inputs; /* malloc() */
} vxd__explain_wait;

static void vxd__explain_done(void *ud, vxd_explain_result *res) {
  vxd__explain_wait *w = ud;
  vxd_server *s = w->srv;
  vxd_conn *c = vxd__conn_find(s, w->conn_id);
  if (res->rc != 0) vxd__log_at(s, VXD_LOG_ERR, "explain failed: %s", res->err);
  if (c && res->rc != 0) {
    vxd__send_error(c, w->req_id, VXP_OP_EXPLAIN, VXP_STATUS_INTERNAL, res->err, 0);
  } else if (c) {
    vxp_explain_candidate cands[VXD_EXPLAIN_CANDIDATES];
    vxp_response r = {.id = w->req_id,
                      .op = VXP_OP_EXPLAIN,
                      .status = VXP_STATUS_OK,
                      .key = w->key,
                      .cached = res->hit,
                      .key_inputs = w->inputs,
                      .source_lines = res->lines,
                      .candidates = cands,
                      .ncandidates = res->hit ? 0 : res->n};
    for (uint32_t i = 0; i < r.ncandidates; i++) /* borrowed from res */
      cands[i] = (vxp_explain_candidate){.key = res->rows[i].key,
                                         .used_s = res->rows[i].last_used_us / 1000000u,
                                         .inputs = res->rows[i].parts,
                                         .first_line = res->first_line[i],
                                         .lines = res->row_lines[i]};
    vxd__send(c, &r, 0);
  }
  vxk_inputs_clear(res->rows, res->n);
  free(w->inputs);
  free(w);
}

/* `vxc explain`: would this compile hit the local cache, and if not, how
 * it differs from the latest entries of its source name (on the store
 * thread, after the writes queued before it).  Takes req's source. */
static void vxd__on_explain(vxd_conn *c, vxp_request *req) {
  vxd_server *s = c->srv;
  if (vxd__refused_without_cache(c, req)) return;
  if (req->source_len > s->cfg->max_source) {
    char msg[128];
    snprintf(msg, sizeof msg, "source of %zu bytes is over the limit of %u bytes (max_source)",
             req->source_len, s->cfg->max_source);
    vxd__send_error(c, req->id, req->op, VXP_STATUS_BAD_REQUEST, msg, 0);
    return;
  }
  vxl_options o;
  vxd_options_from_request(s->cfg, req, &o);
  char source[VXL_DEBUG_FILE_MAX + 1];
  vxl_debug_file_name(req->source_name, source);
  vxd__explain_wait *w = calloc(1, sizeof *w);
  if (w) *w = (vxd__explain_wait){.srv = s, .conn_id = c->id, .req_id = req->id};
  if (!w || vxd__key(s, req, w->key) != VXK_OK ||
      !(w->inputs = vxd_key_inputs(s->cfg, &o, req->source_name)) ||
      vxd_store_explain(s->store, w->key, source, w->inputs, req->source, req->source_len, vxd__explain_done,
                        w) != 0) {
    if (w) free(w->inputs);
    free(w);
    vxd__send_error(c, req->id, req->op, VXP_STATUS_INTERNAL, "out of memory", 0);
    return;
  }
  req->source = NULL; /* the store's now */
  req->source_len = 0;
}

static void vxd__on_compile(vxd_conn *c, const vxp_request *req) {
  vxd_server *s = c->srv;
  if (req->source_len > s->cfg->max_source) {
    char msg[128];
    snprintf(msg, sizeof msg, "source of %zu bytes is over the limit of %u bytes (max_source)",
             req->source_len, s->cfg->max_source);
    vxd__send_error(c, req->id, req->op, VXP_STATUS_BAD_REQUEST, msg, 0);
    return;
  }
  char key[VXK_KEY_HEX + 1];
  if (vxd__key(s, req, key) != VXK_OK) {
    vxd__send_error(c, req->id, VXP_OP_COMPILE, VXP_STATUS_INTERNAL, "out of memory", 0);
    return;
  }
  /* A request for lowered IR always compiles (IR is not cached); so does a
   * host lowering, which is cheap and whose device modules are cached
   * when the runtime loads them. */
  int host = req->op == VXP_OP_HOST;
  uint64_t arrived_ns = uv_hrtime();
  /* recache and bypass compile whatever the cache holds (recache then
   * replaces the entry; bypass leaves the cache as it was) */
  int use_cache = req->cache == VXP_CACHE_USE;
  if (!req->emit_ir && !host && use_cache && vxd__serve_cached(c, req, key) == 0) {
    if (s->cfg->log_level >= VXD_LOG_DEBUG) {
      vxl_options o;
      char target[VXP_TARGET_NAME_MAX];
      vxd_options_from_request(s->cfg, req, &o);
      vxp_target_name(o.vortex_abi, o.xlen, target);
      vxd__log_at(s, VXD_LOG_DEBUG, "compile %.12s hit %llu us: %s for %s, client pid %d", key,
                  (unsigned long long)((uv_hrtime() - arrived_ns) / 1000u),
                  req->source_name ? req->source_name : "<source>", target, (int)c->peer_pid);
    }
    return;
  }
  const char *crashed = host ? NULL : vxd__crash_recall(s, key);
  if (crashed) { /* the same input again: answer now, keep the workers for others */
    char msg[400];
    snprintf(msg, sizeof msg, "%s (refused without compiling for %u s after that)", crashed,
             s->cfg->crash_memory_s);
    vxp_response r = {
        .id = req->id, .op = VXP_OP_COMPILE, .status = VXP_STATUS_INTERNAL, .message = msg, .key = key};
    vxd__send(c, &r, 0);
    return;
  }

  /* the same source already compiling, queued or looked up remotely: wait
   * for that */
  int shareable = !req->emit_ir && !host;
  vxd_job *j = shareable ? vxd__job_shared(s, key) : NULL;
  if (j) {
    if (req->cache != VXP_CACHE_BYPASS) j->bypass = 0; /* this one wants it stored */
    s->pending.joined++; /* answered without a compile of its own: neither hit nor miss */
    if (vxd__job_wait(j, c, req->id, arrived_ns) != 0)
      vxd__send_error(c, req->id, VXP_OP_COMPILE, VXP_STATUS_INTERNAL, "out of memory", 0);
    return;
  }
  j = vxd__job_create(s, req, key);
  if (!j || vxd__job_wait(j, c, req->id, arrived_ns) != 0) {
    if (j) vxd__job_free(s, j);
    vxd__send_error(c, req->id, VXP_OP_COMPILE, VXP_STATUS_INTERNAL, "could not queue the compile", 0);
    return;
  }
  /* not in the local cache: the shared level next, when it is there and
   * answering (else compile now) */
  if (shareable && use_cache && s->remote &&
      vxd_remote_lookup(s->remote, key, 1, vxd__compile_remote_done, s) == 0) {
    vxd__job_await_remote(s, j);
    return;
  }
  vxd__job_queue(s, j);
  vxd__dispatch(s);
}

void vxd__on_payload(vxd_conn *c, const uint8_t *p, size_t len) {
  vxd_server *s = c->srv;
  s->requests++;
  vxp_request req;
  int rc = vxp_request_decode(p, len, &req);
  if (rc != VXP_OK) {
    char msg[160];
    snprintf(msg, sizeof msg, "malformed request: %s", vxp_strerror(rc));
    vxd__send_error(c, req.id, req.op, VXP_STATUS_BAD_REQUEST, msg, 0);
    return;
  }
  /* hello must name the client's protocol version, any other request may
   * (a client then needs no hello round trip): it must be ours */
  if ((req.op == VXP_OP_HELLO || req.proto_version != 0) && req.proto_version != VXP_PROTOCOL_VERSION) {
    char msg[128];
    snprintf(msg, sizeof msg, "protocol version %u not supported (this daemon speaks %u)", req.proto_version,
             VXP_PROTOCOL_VERSION);
    vxd__send_error(c, req.id, req.op, VXP_STATUS_BAD_REQUEST, msg, 0);
    vxp_request_clear(&req);
    return;
  }
  switch (req.op) {
  case VXP_OP_HELLO: vxd__on_hello(c, &req); break;
  case VXP_OP_STATS: vxd__on_stats(c, &req); break;
  case VXP_OP_FETCH: vxd__on_fetch(c, &req); break;
  case VXP_OP_COMPILE:
  case VXP_OP_HOST: vxd__on_compile(c, &req); break;
  case VXP_OP_VERIFY:
  case VXP_OP_ZERO_STATS:
  case VXP_OP_CLEAR:
  case VXP_OP_PRUNE: vxd__on_admin(c, &req); break;
  case VXP_OP_LIST: vxd__on_list(c, &req); break;
  case VXP_OP_REMOVE: vxd__on_remove(c, &req); break;
  case VXP_OP_EXPLAIN: vxd__on_explain(c, &req); break;
  case VXP_OP_PIECES: /* the daemon's question to its workers, never a client's */
    vxd__send_error(c, req.id, req.op, VXP_STATUS_BAD_REQUEST,
                    "malformed request: pieces is not a client request", 0);
    break;
  case VXP_OP_STOP: {
    vxp_response r = {.id = req.id, .op = VXP_OP_STOP, .status = VXP_STATUS_OK};
    vxd__send(c, &r, 0); /* written at once: the socket buffer is empty */
    uv_os_fd_t fd;
    int kept = s->nstop_fds < (int)(sizeof s->stop_fds / sizeof *s->stop_fds) &&
                       uv_fileno((uv_handle_t *)&c->pipe, &fd) == 0
                   ? fcntl(fd, F_DUPFD_CLOEXEC, 3)
                   : -1;
    if (kept >= 0) s->stop_fds[s->nstop_fds++] = kept; /* closed by the exit (vxd_loop.h) */
    vxd__stop(s, "stop request");
    break;
  }
  }
  vxp_request_clear(&req);
}
