/*
 * vxd_server.c - the vortexd loop's start-up: the template compiler and
 * the workers, the cache, the socket (or systemd's), the signals and
 * timers; then the loop, until vxd_shutdown.c has closed every handle.
 *
 * The request path, file by file (docs/architecture.md): vxd_conn.c
 * reads a frame, vxd_requests.c keys it and asks the cache (a hit is
 * answered at once), vxd_jobs.c makes a miss a job, vxd_pool.c runs it on
 * a worker (vxd_worker.c, lowering/), vxd_jobs.c answers every waiter and
 * hands the result to vxd_cache.c, whose store thread (vxd_store.c) writes
 * it.
 *
 * THREAD NOTES: everything here runs on the loop thread, except what
 * vxd_store.c and vxd_remote.c run on their threads.  Handles are freed
 * only in their close callbacks; write buffers live until their write
 * callbacks.
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

#include "protocol/vxp_paths.h"
#include "vxd_loop.h"

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

static void vxd__watchdog_cb(uv_timer_t *t) {
  vxd_server *s = t->data;
  vxd_sd_notify(&s->sd, "WATCHDOG=1");
}

static void vxd__signal_cb(uv_signal_t *h, int signum) {
  vxd__stop(h->data, signum == SIGINT ? "SIGINT" : "SIGTERM");
}

static void vxd__idle_cb(uv_timer_t *t) {
  vxd_server *s = t->data;
  if (!s->conns && !vxd__jobs_running(s)) vxd__stop(s, "idle timeout");
}

/* uv_walk callback: counts a handle still open at exit and logs its type. */
static void vxd__count_handle(uv_handle_t *h, void *arg) {
  unsigned *n = arg;
  (*n)++;
  fprintf(stderr, "vortexd: open at exit: %s handle%s\n", uv_handle_type_name(uv_handle_get_type(h)),
          uv_is_closing(h) ? " (closing)" : "");
}

/* Opens and checks the runtime directory (the socket's, or systemd's
 * $RUNTIME_DIRECTORY under socket activation), takes the single-instance
 * lock in it, then binds the socket (mode 0600, or 0660 with the allowed
 * group) or adopts the one systemd passed.  Returns 0, -EADDRINUSE when
 * another daemon holds the lock, or another negative errno (logged). */
static int vxd__listen(vxd_server *s) {
  const char *path = s->cfg->socket_path;
  int activated = vxd_sd_listen_fds(&s->sd) >= 1;
  const char *rtenv = getenv("RUNTIME_DIRECTORY");
  char dir[4096], err[512];
  if (activated && rtenv && *rtenv && !strchr(rtenv, ':'))
    snprintf(dir, sizeof dir, "%s", rtenv);
  else if (vxp_path_dir(path, dir, sizeof dir) != 0) {
    vxd__log_at(s, VXD_LOG_ERR, "socket path too long: %s", path);
    return -ENAMETOOLONG;
  }
  int group_ok = s->cfg->allowed_gid != (gid_t)-1;
  s->dir_fd = vxp_runtime_dir_open(dir, 1, group_ok, err, sizeof err);
  if (s->dir_fd < 0) {
    vxd__log_at(s, VXD_LOG_ERR, "%s", err);
    return s->dir_fd;
  }
  const char *base = vxp_path_base(path);
  char lock[256];
  if (snprintf(lock, sizeof lock, "%s.lock", base) >= (int)sizeof lock) {
    vxd__log_at(s, VXD_LOG_ERR, "socket name too long: %s", base);
    return -ENAMETOOLONG;
  }
  s->lock_fd = vxp_private_file_open(s->dir_fd, lock, O_RDWR | O_CREAT);
  if (s->lock_fd < 0) {
    int e = -s->lock_fd;
    vxd__log_at(s, VXD_LOG_ERR, "cannot open the lock file %s/%s: %s", dir, lock,
                e == ELOOP   ? "it is a symbolic link"
                : e == EPERM ? "not owned by this user"
                             : strerror(e));
    return -e;
  }
  if (flock(s->lock_fd, LOCK_EX | LOCK_NB) != 0) {
    vxd__log_at(s, VXD_LOG_ERR, "another vortexd already serves %s", path);
    return -EADDRINUSE;
  }
  uv_pipe_init(s->loop, &s->listener, 0);
  s->listener.data = s;
  if (activated) { /* systemd socket activation */
    int rc = uv_pipe_open(&s->listener, SD_LISTEN_FDS_START);
    if (rc != 0) {
      vxd__log_at(s, VXD_LOG_ERR, "cannot use the socket systemd passed: %s", uv_strerror(rc));
      return rc; /* libuv's codes are negative errno values */
    }
  } else {
    int rc = vxd__remove_stale_socket(s, base); /* we hold the lock */
    if (rc != 0) return rc;
    rc = uv_pipe_bind(&s->listener, path);
    if (rc != 0) {
      vxd__log_at(s, VXD_LOG_ERR, "cannot bind %s: %s", path, uv_strerror(rc));
      return rc;
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
    return rc;
  }
  return 0;
}

int vxd_server_run(const vxd_config *cfg) {
  signal(SIGPIPE, SIG_IGN);
  signal(SIGXFSZ, SIG_IGN); /* a file-size limit fails the write (like a full disk), not the process */
  vxd_server *s = calloc(1, sizeof *s);
  if (!s) return 1;
  s->cfg = cfg;
  s->lock_fd = s->dir_fd = -1;
  s->log_journal = vxd__stderr_is_journal();
  s->loop = uv_default_loop();
  s->on_payload = vxd__on_payload;
  s->start_ms = uv_now(s->loop);
  /* before the workers' fork, which then inherits it */
  char sderr[512];
  if (vxd_systemd_load(&s->sd, sderr, sizeof sderr) != 0) {
    vxd__log_at(s, VXD_LOG_ERR, "%s", sderr);
    free(s);
    return 1;
  }
  s->hot = vxd_hot_create(VXD_HOT_MAX_BYTES); /* NULL: hits all read the cache */
  if (vxd__pool_init(s) != 0) {
    vxd_hot_destroy(s->hot);
    vxd_systemd_close(&s->sd);
    free(s);
    return 1;
  }
  if (vxd__cache_open(s) != 0 && cfg->remote_on)
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
  int rc = vxd__listen(s);
  /* the process exit status (vxd.h): 2 another daemon serves, 1 any other
   * failure to serve */
  int status = rc == 0 ? 0 : rc == -EADDRINUSE ? 2 : 1;
  if (rc != 0) {
    vxd__stop(s, NULL); /* why was logged */
    goto done;
  }
  uv_signal_init(s->loop, &s->sigint);
  uv_signal_init(s->loop, &s->sigterm);
  s->sigint.data = s->sigterm.data = s;
  uv_signal_start(&s->sigint, vxd__signal_cb, SIGINT);
  uv_signal_start(&s->sigterm, vxd__signal_cb, SIGTERM);
  uv_timer_init(s->loop, &s->flush);
  s->flush.data = s;
  uv_timer_start(&s->flush, vxd__cache_tick_cb, 1000, 1000);
  uv_timer_init(s->loop, &s->idle);
  s->idle.data = s;
  if (cfg->idle_timeout_s)
    uv_timer_start(&s->idle, vxd__idle_cb, cfg->idle_timeout_s * 1000ull, cfg->idle_timeout_s * 1000ull);

  /* at the default level too: a log file says when and what started */
  char target[VXP_TARGET_NAME_MAX];
  vxp_target_name(cfg->vortex_abi, cfg->xlen, target);
  vxd__log(s, "%s serving %s (cache %s, %u workers, default target %s)", VXD_SERVER_NAME, cfg->socket_path,
           cfg->cache_dir, s->pool.nslots, target);
  vxd_sd_notifyf(&s->sd, "READY=1\nSTATUS=serving %s", cfg->socket_path);
  /* systemd's watchdog (WatchdogSec=): a ping at half the interval from
   * the loop, so a wedged loop gets the service restarted */
  uint64_t wd_usec = 0;
  uv_timer_init(s->loop, &s->watchdog);
  s->watchdog.data = s;
  if (vxd_sd_watchdog_enabled(&s->sd, &wd_usec) > 0 && wd_usec >= 2000)
    uv_timer_start(&s->watchdog, vxd__watchdog_cb, 0, wd_usec / 2000);

done:
  uv_run(s->loop, UV_RUN_DEFAULT); /* until vxd__stop has closed every handle */
  vxd__jobs_clear(s, 1);           /* the workers are gone */
  vxd_hot_destroy(s->hot);
  int lrc = uv_loop_close(s->loop);
  if (lrc != 0) { /* a handle someone forgot to close: a leak a test must see, as libuv's own tests do */
    unsigned open = 0;
    uv_walk(s->loop, vxd__count_handle, &open);
    vxd__log_at(s, VXD_LOG_ERR, "internal error: %u libuv handle(s) still open at exit", open);
    if (status == 0) status = VXD_EXIT_SOFTWARE;
  }
  vxk_close(s->cache);
  if (s->lock_fd >= 0) close(s->lock_fd);
  if (s->dir_fd >= 0) close(s->dir_fd);
  vxd_systemd_close(&s->sd);
  free(s);
  return status;
}
