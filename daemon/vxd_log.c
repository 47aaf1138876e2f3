/*
 * vxd_log.c - the daemon's log lines and its clock: what every other file
 * of daemon/ calls, so that none of them needs the lifecycle file
 * (vxd_server.c) for it.
 *
 * Lines go to stderr: "TIME [PID] vortexd: LEVEL: text" (TIME local, ISO
 * 8601 to the millisecond), or with sd-daemon(3) "<N>" priority prefixes
 * when stderr is the journal, which stamps lines itself.  Lines above the
 * configured log_level are dropped.  Loop thread (the store and remote
 * threads report through their done callbacks, on the loop).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

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
  if (s && s->log_journal) {
    fprintf(stderr, "<%d>", level); /* the journal stamps and names lines itself */
  } else {
    /* a log file (an auto-started daemon's): local time to the
     * millisecond with its offset, and the process */
    struct timespec ts;
    struct tm tm;
    char when[64] = "";
    clock_gettime(CLOCK_REALTIME, &ts);
    if (localtime_r(&ts.tv_sec, &tm)) {
      char date[32], zone[8];
      strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S", &tm);
      strftime(zone, sizeof zone, "%z", &tm);
      snprintf(when, sizeof when, "%s.%03ld%s ", date, ts.tv_nsec / 1000000, zone);
    }
    fprintf(stderr, "%s[%d] vortexd: %s: ", when, (int)getpid(), words[level & 7]);
  }
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

int vxd__assert_failed(const char *cond, const char *file, int line) {
  fprintf(stderr, "vortexd: internal error: assertion %s failed at %s:%d\n", cond, file, line);
#ifndef NDEBUG
  abort();
#endif
  return 1;
}
