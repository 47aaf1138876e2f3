/*
 * vxd_log.c - the daemon's log lines and its clock: what every other file
 * of daemon/ calls, so that none of them needs the lifecycle file
 * (vxd_server.c) for it.
 *
 * Lines go to stderr: "vortexd: LEVEL: text", or with sd-daemon(3) "<N>"
 * priority prefixes when stderr is the journal.  Lines above the
 * configured log_level are dropped.  Loop thread (the store and remote
 * threads report through their done callbacks, on the loop).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <uv.h>

#include "vxd_loop.h"

/* Whether stderr is the journal (systemd sets JOURNAL_STREAM to the
 * device:inode of the stream it connected): then lines carry sd-daemon(3)
 * "<N>" priority prefixes instead of words. */
int vxd__stderr_is_journal(void) {
  const char *js = getenv("JOURNAL_STREAM");
  unsigned long long dev = 0, ino = 0;
  struct stat st;
  return js && sscanf(js, "%llu:%llu", &dev, &ino) == 2 && fstat(2, &st) == 0 &&
         (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

static void vxd__vlog(const vxd_server *s, int level, const char *fmt, va_list ap) {
  if (s && level > s->cfg->log_level) return;
  static const char *const words[] = {"emerg",   "alert",  "crit", "error",
                                      "warning", "notice", "info", "debug"};
  if (s && s->log_journal)
    fprintf(stderr, "<%d>", level);
  else
    fprintf(stderr, "vortexd: %s: ", words[level & 7]);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
}

void vxd__log(const vxd_server *s, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vxd__vlog(s, VXD_LOG_NOTICE, fmt, ap);
  va_end(ap);
}

void vxd__log_at(const vxd_server *s, int level, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vxd__vlog(s, level, fmt, ap);
  va_end(ap);
}

void vxd__log_line(void *s, const char *msg) { vxd__log_at(s, VXD_LOG_WARNING, "%s", msg); }

uint64_t vxd__now_ms(vxd_server *s) { return uv_now(s->loop); }
