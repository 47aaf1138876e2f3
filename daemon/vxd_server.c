/*
 * vxd_server.c - the vortexd loop's lifecycle: start-up (cache, store
 * thread, socket or socket activation, workers), the periodic flush of
 * counters and LRU times to the store thread, and shutdown on a signal or
 * the idle timeout.
 *
 * The request path, file by file: vxd_conn.c reads a frame, vxd_requests.c
 * keys it and asks the cache (a hit is answered at once), vxd_pool.c runs a
 * miss on a worker (vxd_worker.c, lowering/), the result is answered to
 * every waiter and queued to vxd_store.c, which writes it to the cache on
 * its own thread.
 *
 * THREAD NOTES: everything here runs on the loop thread, except what
 * vxd_store.c runs on its thread.  Handles are freed only in their close
 * callbacks; write buffers live until their write callbacks.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>
#include <uv.h>

#include "vxd_loop.h"
#include "vxp_paths.h"

/* Queues a worker's successful result for the store thread. */
void vxd__store(vxd_server *s, const vxd_job *j, const vxp_response *r, uint64_t compile_us) {
  vxk_origin origin = {j->source_name, j->options};
  if (s->store && vxd_store_put(s->store, j->key, r, compile_us, &origin) != 0)
    vxd__log_at(s, VXD_LOG_WARNING, "not cached %s: out of memory", j->key);
}

/* The store thread wrote a compiled entry: share it (written hook). */
static void vxd__share(void *ud, const char *key, uint8_t *object, size_t object_size, vxk_kernel_in *ks,
                       uint32_t n, uint64_t compile_us) {
  vxd_remote_put(((vxd_server *)ud)->remote, key, object, object_size, ks, n, compile_us);
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

static void vxd__flush_cb(uv_timer_t *t);

void vxd__cache_damaged(vxd_server *s, const char *why) {
  if (!s->store || s->cache_damaged) return; /* said once per database */
  s->cache_damaged = 1;
  vxd__log_at(
      s, VXD_LOG_ERR,
      "cache database %s/cache.db is damaged (%s): keeping it as cache.db.corrupt and starting a new one",
      s->cfg->cache_dir, why);
  /* replaced before the next request is read: the flush tick, brought forward */
  if (!s->stopping && uv_is_active((uv_handle_t *)&s->flush))
    uv_timer_start(&s->flush, vxd__flush_cb, 0, 1000);
}

static void vxd__cache_damaged_cb(void *ud, const char *why) { vxd__cache_damaged(ud, why); }

static int vxd__open_cache(vxd_server *s);

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
  vxd__open_cache(s);
}

/* Descriptors kept free for what the daemon opens after start-up: workers
 * restarted, the cache reopened, the shared level's connections, a
 * refused client's own descriptor. */
#define VXD_FD_RESERVE 32

/* Fits max_connections to the descriptor limit, as Redis fits maxclients:
 * the soft limit raised towards the hard one as far as needed, and when
 * even that is short, fewer connections, said once.  A client past the
 * limit is then refused with an answer and a log line, never dropped
 * unanswered by the system (libuv closes what it cannot accept, silently).
 * Called at start, after the workers and the cache are open. */
static void vxd__fit_connections(vxd_server *s) {
  s->max_connections = s->cfg->max_connections;
  unsigned used = 0;
  DIR *d = opendir("/proc/self/fd");
  for (struct dirent *e; d && (e = readdir(d));)
    used += e->d_name[0] != '.';
  if (d) closedir(d);
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return;
  rlim_t want = (rlim_t)used + VXD_FD_RESERVE + s->max_connections;
  if (rl.rlim_cur < want) {
    struct rlimit raised = {want < rl.rlim_max ? want : rl.rlim_max, rl.rlim_max};
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) rl = raised;
  }
  if (rl.rlim_cur >= want) return;
  rlim_t room = rl.rlim_cur > (rlim_t)used + VXD_FD_RESERVE ? rl.rlim_cur - used - VXD_FD_RESERVE : 1;
  s->max_connections = room < 1 ? 1 : (unsigned)room;
  vxd__log_at(s, VXD_LOG_WARNING,
              "max_connections = %u needs %llu descriptors, the limit is %llu (LimitNOFILE=, ulimit -n): "
              "serving at most %u clients at once",
              s->cfg->max_connections, (unsigned long long)want, (unsigned long long)rl.rlim_cur,
              s->max_connections);
}

/* Seconds between attempts to open a cache that could not be opened. */
#define VXD_CACHE_RETRY_MS 10000

/* Opens the cache, its store thread and the shared level behind it.
 * Returns 0, or -1 with the reason in s->cache_err: the daemon then serves
 * without a cache (as ccache compiles without its cache) and tries again
 * every VXD_CACHE_RETRY_MS, so that a full disk, an unusable directory or
 * one another user could write stops mattering once it is mended, without
 * a restart.  Loop thread. */
static int vxd__open_cache(vxd_server *s) {
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
    return -1;
  }
  const char *notice = vxk_open_notice(s->cache);
  if (notice) vxd__log_at(s, VXD_LOG_WARNING, "%s", notice);
  if (s->cache_err[0]) vxd__log(s, "cache %s opened: serving with a cache again", cfg->cache_dir);
  s->cache_err[0] = '\0';
  vxd_store_on_damaged(s->store, vxd__cache_damaged_cb, s);
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

static void vxd__flush_cb(uv_timer_t *t) {
  vxd_server *s = t->data;
  if (s->cache_damaged && !s->stopping) vxd__replace_cache(s);
  if (!s->store && !s->stopping && vxd__now_ms(s) >= s->cache_retry_ms) vxd__open_cache(s);
  vxd__flush_counters(s);
}

void vxd__share_queued(vxd_server *s, unsigned timeout_ms) {
  if (!s->store || !s->remote) return;
  vxd_store_drain(s->store);
  vxd_store_reap(s->store); /* hands the written entries to the writer */
  vxd_remote_drain(s->remote, timeout_ms);
}

static void vxd__watchdog_cb(uv_timer_t *t) {
  (void)t;
  sd_notify(0, "WATCHDOG=1");
}

static int vxd__remove_stale_socket(vxd_server *s, const char *base);

static void vxd__close_if_open(uv_handle_t *h) {
  if (h->loop && !uv_is_closing(h)) uv_close(h, NULL);
}

void vxd__stop(vxd_server *s, const char *why) {
  if (s->stopping) return;
  s->stopping = 1;
  vxd__log(s, "stopping (%s)", why);
  sd_notify(0, "STOPPING=1");
  vxd__close_if_open((uv_handle_t *)&s->listener);
  if (s->bound_socket) vxd__remove_stale_socket(s, vxp_path_base(s->cfg->socket_path));
  for (vxd_conn *c = s->conns; c; c = c->next)
    vxd__conn_close(c);
  for (unsigned i = 0; i < s->pool.nslots; i++)
    vxd__close_if_open((uv_handle_t *)&s->pool.slots[i].respawn);
  vxd__pool_stop(s);
  vxd__close_if_open((uv_handle_t *)&s->sigint);
  vxd__close_if_open((uv_handle_t *)&s->sigterm);
  vxd__close_if_open((uv_handle_t *)&s->idle);
  vxd__close_if_open((uv_handle_t *)&s->flush);
  vxd__close_if_open((uv_handle_t *)&s->watchdog);
  vxd__share_queued(s, VXD_REMOTE_STOP_MS); /* so that their counts are flushed too */
  vxd__flush_counters(s);
  vxd_store_close(s->store); /* writes what is queued first (and shares it) */
  s->store = NULL;
  vxd_remote_close(s->remote); /* answers its lookups, then writes its queue */
  s->remote = NULL;
  while (s->pool.queue_head) { /* queued jobs will not run */
    vxd_job *j = s->pool.queue_head;
    s->pool.queue_head = j->next;
    vxd__job_free(j);
  }
  s->pool.queue_tail = NULL;
}

static void vxd__signal_cb(uv_signal_t *h, int signum) {
  vxd__stop(h->data, signum == SIGINT ? "SIGINT" : "SIGTERM");
}

static void vxd__idle_cb(uv_timer_t *t) {
  vxd_server *s = t->data;
  if (!s->conns && !s->pool.queue_head && !s->pool.inflight) vxd__stop(s, "idle timeout");
}

/* Removes a stale socket name in the runtime directory: only a socket (a
 * regular file or anything else named like the socket is left alone and
 * refused).  Returns 0 or -1 (logged). */
static int vxd__remove_stale_socket(vxd_server *s, const char *base) {
  struct stat st;
  if (fstatat(s->dir_fd, base, &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return 0;
    vxd__log_at(s, VXD_LOG_ERR, "cannot inspect %s: %s", s->cfg->socket_path, strerror(errno));
    return -1;
  }
  if (!S_ISSOCK(st.st_mode)) {
    vxd__log_at(s, VXD_LOG_ERR, "%s exists and is not a socket; not removing it (choose another --socket)",
                s->cfg->socket_path);
    return -1;
  }
  if (unlinkat(s->dir_fd, base, 0) != 0 && errno != ENOENT) {
    vxd__log_at(s, VXD_LOG_ERR, "cannot remove the stale socket %s: %s", s->cfg->socket_path,
                strerror(errno));
    return -1;
  }
  return 0;
}

/* Opens and checks the runtime directory (the socket's, or systemd's
 * $RUNTIME_DIRECTORY under socket activation), takes the single-instance
 * lock in it, then binds the socket (mode 0600, or 0660 with the allowed
 * group) or adopts the one systemd passed.  Returns 0, 1 (failure, logged)
 * or 2 (another daemon holds the lock). */
static int vxd__listen(vxd_server *s) {
  const char *path = s->cfg->socket_path;
  int activated = sd_listen_fds(1) >= 1;
  const char *rtenv = getenv("RUNTIME_DIRECTORY");
  char dir[4096], err[512];
  if (activated && rtenv && *rtenv && !strchr(rtenv, ':'))
    snprintf(dir, sizeof dir, "%s", rtenv);
  else if (vxp_path_dir(path, dir, sizeof dir) != 0) {
    vxd__log_at(s, VXD_LOG_ERR, "socket path too long: %s", path);
    return 1;
  }
  int group_ok = s->cfg->allowed_gid != (gid_t)-1;
  s->dir_fd = vxp_runtime_dir_open(dir, 1, group_ok, err, sizeof err);
  if (s->dir_fd < 0) {
    vxd__log_at(s, VXD_LOG_ERR, "%s", err);
    return 1;
  }
  const char *base = vxp_path_base(path);
  char lock[256];
  if (snprintf(lock, sizeof lock, "%s.lock", base) >= (int)sizeof lock) {
    vxd__log_at(s, VXD_LOG_ERR, "socket name too long: %s", base);
    return 1;
  }
  s->lock_fd = vxp_private_file_open(s->dir_fd, lock, O_RDWR | O_CREAT);
  if (s->lock_fd < 0) {
    int e = -s->lock_fd;
    vxd__log_at(s, VXD_LOG_ERR, "cannot open the lock file %s/%s: %s", dir, lock,
                e == ELOOP   ? "it is a symbolic link"
                : e == EPERM ? "not owned by this user"
                             : strerror(e));
    return 1;
  }
  if (flock(s->lock_fd, LOCK_EX | LOCK_NB) != 0) {
    vxd__log_at(s, VXD_LOG_ERR, "another vortexd already serves %s", path);
    return 2;
  }
  uv_pipe_init(s->loop, &s->listener, 0);
  s->listener.data = s;
  if (activated) { /* systemd socket activation */
    if (uv_pipe_open(&s->listener, SD_LISTEN_FDS_START) != 0) return 1;
  } else {
    if (vxd__remove_stale_socket(s, base) != 0) return 1; /* we hold the lock */
    int rc = uv_pipe_bind(&s->listener, path);
    if (rc != 0) {
      vxd__log_at(s, VXD_LOG_ERR, "cannot bind %s: %s", path, uv_strerror(rc));
      return 1;
    }
    s->bound_socket = 1;
    fchmodat(s->dir_fd, base, group_ok ? 0660 : 0600, 0);
    if (group_ok && fchownat(s->dir_fd, base, (uid_t)-1, s->cfg->allowed_gid, AT_SYMLINK_NOFOLLOW) != 0)
      vxd__log_at(s, VXD_LOG_ERR, "cannot give %s to group %u: %s", path, (unsigned)s->cfg->allowed_gid,
                  strerror(errno));
  }
  int rc = uv_listen((uv_stream_t *)&s->listener, 128, vxd__on_connection);
  if (rc != 0) {
    vxd__log_at(s, VXD_LOG_ERR, "cannot listen on %s: %s", path, uv_strerror(rc));
    return 1;
  }
  return 0;
}

int vxd_server_run(const vxd_config *cfg) {
  signal(SIGPIPE, SIG_IGN);
  vxd_server *s = calloc(1, sizeof *s);
  if (!s) return 1;
  s->cfg = cfg;
  s->lock_fd = s->dir_fd = -1;
  s->log_journal = vxd__stderr_is_journal();
  s->loop = uv_default_loop();
  s->start_ms = uv_now(s->loop);
  s->hot = vxd_hot_create(VXD_HOT_MAX_BYTES); /* NULL: hits all read the cache */
  if (vxd__pool_init(s) != 0) {
    vxd_hot_destroy(s->hot);
    free(s);
    return 1;
  }
  if (vxd__open_cache(s) != 0 && cfg->remote_on)
    vxd__log_at(s, VXD_LOG_WARNING,
                "remote storage not used while there is no local cache: it sits behind one");
  /* workers first: once the socket accepts, a compile finds them ready */
  s->pool.nslots = cfg->workers < 1 ? 1 : cfg->workers > VXD_MAX_WORKERS ? VXD_MAX_WORKERS : cfg->workers;
  for (unsigned i = 0; i < s->pool.nslots; i++) {
    s->pool.slots[i].srv = s;
    s->pool.slots[i].index = i;
    uv_timer_init(s->loop, &s->pool.slots[i].respawn);
    s->pool.slots[i].respawn.data = &s->pool.slots[i];
    vxd__spawn(s, &s->pool.slots[i]);
  }
  vxd__fit_connections(s);
  int status = vxd__listen(s);
  if (status != 0) {
    for (unsigned i = 0; i < s->pool.nslots; i++)
      uv_close((uv_handle_t *)&s->pool.slots[i].respawn, NULL);
    vxd__pool_stop(s);
    vxd_store_close(s->store);
    vxd_remote_close(s->remote);
    vxd__close_if_open((uv_handle_t *)&s->listener);
    uv_run(s->loop, UV_RUN_DEFAULT);
    uv_loop_close(s->loop);
    vxd_hot_destroy(s->hot);
    vxk_close(s->cache);
    if (s->lock_fd >= 0) close(s->lock_fd);
    if (s->dir_fd >= 0) close(s->dir_fd);
    free(s);
    return status;
  }
  uv_signal_init(s->loop, &s->sigint);
  uv_signal_init(s->loop, &s->sigterm);
  s->sigint.data = s->sigterm.data = s;
  uv_signal_start(&s->sigint, vxd__signal_cb, SIGINT);
  uv_signal_start(&s->sigterm, vxd__signal_cb, SIGTERM);
  uv_timer_init(s->loop, &s->flush);
  s->flush.data = s;
  uv_timer_start(&s->flush, vxd__flush_cb, 1000, 1000);
  uv_timer_init(s->loop, &s->idle);
  s->idle.data = s;
  if (cfg->idle_timeout_s)
    uv_timer_start(&s->idle, vxd__idle_cb, cfg->idle_timeout_s * 1000ull, cfg->idle_timeout_s * 1000ull);

  if (cfg->verbose)
    vxd__log(s, "serving %s (cache %s, %u workers)", cfg->socket_path, cfg->cache_dir, s->pool.nslots);
  sd_notifyf(0, "READY=1\nSTATUS=serving %s", cfg->socket_path);
  /* systemd's watchdog (WatchdogSec=): a ping at half the interval from
   * the loop, so a wedged loop gets the service restarted */
  uint64_t wd_usec = 0;
  uv_timer_init(s->loop, &s->watchdog);
  s->watchdog.data = s;
  if (sd_watchdog_enabled(0, &wd_usec) > 0 && wd_usec >= 2000)
    uv_timer_start(&s->watchdog, vxd__watchdog_cb, 0, wd_usec / 2000);

  uv_run(s->loop, UV_RUN_DEFAULT);

  while (s->pool.inflight) {
    vxd_job *j = s->pool.inflight;
    s->pool.inflight = j->next;
    vxd__job_free(j);
  }
  vxd_hot_destroy(s->hot);
  int lrc = uv_loop_close(s->loop);
  if (lrc != 0) vxd__log_at(s, VXD_LOG_WARNING, "loop closed with handles still open");
  vxk_close(s->cache);
  if (s->lock_fd >= 0) close(s->lock_fd);
  if (s->dir_fd >= 0) close(s->dir_fd);
  free(s);
  return 0;
}
