/*
 * vxd_shutdown.c - stopping the daemon, once, whatever asked (a signal, the
 * idle timeout, `vxc stop`): the socket closed and its name removed, the
 * clients closed, the workers stopped, the timers closed, then the queued
 * cache writes written and shared, and the jobs that will not run freed.
 * The loop then ends when the last handle has closed (vxd_server_run).
 * Loop thread only.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <uv.h>

#include "protocol/vxp_paths.h"
#include "vxd_loop.h"

void vxd__close_if_open(uv_handle_t *h) {
  if (h->loop && !uv_is_closing(h)) uv_close(h, NULL);
}

void vxd__stop(vxd_server *s, const char *why) {
  if (s->stopping) return;
  s->stopping = 1;
  if (why) vxd__log(s, "stopping (%s)", why);
  vxd_sd_notify(&s->sd, "STOPPING=1");
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
  vxd__jobs_clear(s, 0); /* queued jobs will not run */
}

int vxd__remove_stale_socket(vxd_server *s, const char *base) {
  struct stat st;
  if (fstatat(s->dir_fd, base, &st, AT_SYMLINK_NOFOLLOW) != 0) {
    int e = errno;
    if (e == ENOENT) return 0;
    vxd__log_at(s, VXD_LOG_ERR, "cannot inspect %s: %s", s->cfg->socket_path, strerror(e));
    return -e;
  }
  if (!S_ISSOCK(st.st_mode)) {
    vxd__log_at(s, VXD_LOG_ERR, "%s exists and is not a socket; not removing it (choose another --socket)",
                s->cfg->socket_path);
    return -EEXIST;
  }
  if (unlinkat(s->dir_fd, base, 0) != 0 && errno != ENOENT) {
    int e = errno;
    vxd__log_at(s, VXD_LOG_ERR, "cannot remove the stale socket %s: %s", s->cfg->socket_path, strerror(e));
    return -e;
  }
  return 0;
}
