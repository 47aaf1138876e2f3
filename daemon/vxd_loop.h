/*
 * vxd_loop.h - what the files of the vortexd loop share (daemon/ only):
 * the server, connection, job and worker records, and the functions one
 * file calls in another.
 *
 *   vxd_server.c    start-up: cache, workers, socket, timers; the loop
 *   vxd_requests.c  hello / stats / fetch / compile / admin requests
 *   vxd_shutdown.c  stopping: socket, clients, workers, queued writes
 *   vxd_pool.c      the worker processes that run jobs
 *   vxd_jobs.c      compile jobs: their lists and waiters, answers
 *   vxd_cache.c     the loop's side of the cache: opening, damage,
 *                   counters and results handed to the store thread
 *   vxd_conn.c      client connections: frames in, responses out
 *   vxd_log.c       log lines and the clock
 *   vxd_store.c, vxd_remote.c  the cache's writes and the shared level,
 *                   on threads of their own
 *   vxd_qthread.c   the queue thread both run on
 *
 * Each file calls only files below it in this list (vxd_conn.c hands
 * payloads up through vxd_server.on_payload), so there is no circle;
 * tests/layering.py checks it on the objects.
 *
 * THREAD NOTES: loop thread only.
 */
#ifndef VXD_LOOP_H
#define VXD_LOOP_H

#include <sys/types.h>

#include <uv.h>

#include "cache/vxk.h"
#include "protocol/vxp.h"
#include "vxd.h"

#define VXD_READ_CHUNK (64 * 1024)
#define VXD_MAX_WORKERS 64

typedef struct vxd_server vxd_server;

/* Accumulates stream bytes until whole frames are in. */
typedef struct {
  uint8_t *p; /* malloc() */
  size_t n, cap;
} vxd_rbuf;

typedef struct vxd_conn {
  uv_pipe_t pipe;   /* pipe.data = this */
  uv_timer_t timer; /* frame and idle deadlines; timer.data = this */
  int open_handles; /* freed when both handles are closed */
  vxd_server *srv;
  uint64_t id;
  vxd_rbuf in;
  size_t unsent;    /* reply bytes queued, not yet written to the socket */
  int paused;       /* reading stopped until unsent drains */
  unsigned waiting; /* requests of this connection that jobs wait to answer
                       (vxd_jobs.c); such a connection is not idle */
  int closing;
  pid_t peer_pid; /* the client process (SO_PEERCRED), for the debug log */
  struct vxd_conn *prev, *next;
} vxd_conn;

typedef struct vxd_waiter {
  uint64_t conn_id, req_id;
  uint64_t arrived_ns; /* uv_hrtime() when its request was read (the debug log) */
  struct vxd_waiter *next;
} vxd_waiter;

typedef struct vxd_job {
  uint64_t id;
  char key[VXK_KEY_HEX + 1];
  int emit_ir;         /* such jobs are never shared (also host lowerings) */
  int bypass;          /* compiled for requests that bypass the cache alone:
                          not stored (a request that uses the cache, joining
                          it, clears it) */
  vxp_op op;           /* compile or host */
  int crashes;         /* workers that died while compiling it */
  uint64_t started_ns; /* uv_hrtime() when a worker took it */
  uint8_t *frame;      /* request frame for the worker; malloc() */
  size_t frame_len;
  /* the source's file name the key has, which the cache lists beside the
   * entry (vxk_put) */
  char source_name[VXL_DEBUG_FILE_MAX + 1];
  char target[VXP_TARGET_NAME_MAX]; /* what it compiles for (the debug log) */
  vxd_waiter *waiters;
  int leased;           /* this daemon holds the key's lease in the shared level */
  int shared;           /* its entry went to the store (which shares it) */
  struct vxd_job *next; /* on one of vxd_jobs' lists */
} vxd_job;

/* Every job is on exactly one of these (vxd_jobs.c alone edits them). */
typedef struct {
  vxd_job *lookups;                 /* waiting for the remote level's answer
                                       (at most one per key) */
  vxd_job *queue_head, *queue_tail; /* waiting for a worker */
  vxd_job *inflight;                /* on a worker */
  uint64_t next_id;
} vxd_jobs;

typedef struct vxd_worker {
  pid_t pid;          /* forked from the template compiler (vxd_pool.c) */
  uv_pipe_t to, from; /* child's stdin (we write) / stdout (we read) */
  uv_timer_t timer;   /* job timeout */
  vxd_server *srv;
  unsigned slot;
  int open_handles; /* freed when this drops to 0 */
  int exited, timed_out;
  vxd_rbuf in;
  vxd_job *job;                /* in flight; NULL when idle */
  struct vxd__pieces_ask *ask; /* the job's pieces being looked up for it, or NULL */
  /* the last job answered, should the worker exit with
   * VXD_WORKER_EXIT_FATAL right after answering it */
  char last_key[VXK_KEY_HEX + 1];
  char last_message[256];
} vxd_worker;

typedef struct {
  vxd_worker *w;      /* NULL while (re)starting */
  int died_on_job;    /* the last worker here died compiling something */
  uv_timer_t respawn; /* respawn.data = this slot */
  uint64_t spawned_ms;
  vxd_server *srv;
  unsigned index;
} vxd_slot;

/* An input that crashed or hung workers, refused at once until until_ms. */
#define VXD_CRASH_MEMORY 64
typedef struct {
  char key[VXK_KEY_HEX + 1];
  char why[256];
  uint64_t until_ms; /* loop time; 0: free */
} vxd_crash;

/* The compile jobs and the worker processes (vxd_pool.c). */
typedef struct {
  vxl_compiler *template_compiler; /* warmed up once; every worker is forked
                                      with a copy of it */
  uv_signal_t sigchld;             /* reaps workers */
  vxd_cores *cores;                /* idle workers' cores, lent to busy
                                      workers' helper threads (vxd_pieces.c) */
  vxd_slot slots[VXD_MAX_WORKERS];
  unsigned nslots;
  uint64_t worker_restarts;            /* since start */
  vxd_crash crashes[VXD_CRASH_MEMORY]; /* a ring: the oldest is forgotten first */
  unsigned crash_next;
} vxd_pool;

struct vxd_server {
  /* lifecycle (vxd_server.c) */
  const vxd_config *cfg;
  uv_loop_t *loop;
  uv_pipe_t listener;
  uv_signal_t sigint, sigterm;
  uv_timer_t idle, flush, watchdog;
  int bound_socket; /* we created the socket file (not socket activation) */
  int lock_fd;      /* single-instance lock, held while running */
  int dir_fd;       /* the checked runtime directory (vxp_runtime_dir_open) */
  int stopping;
  vxd_systemd sd; /* the service manager, when there is one (vxd_systemd.c) */
  /* the connections of stop requests, duplicated and never closed: the
   * process's exit closes them, after the cache and the lock, so their
   * clients read the end only once the daemon is gone (vxc_admin) */
  int stop_fds[4];
  int nstop_fds;
  int log_journal; /* stderr is the journal: "<N>" priority prefixes */
  uint64_t start_ms;
  /* the cache: reads here, every write on the store thread (NULL once
   * stopped) */
  vxk_cache *cache;
  vxd_store *store;
  vxd_hot *hot;            /* encoded replies of recent compile hits; NULL: none kept */
  vxd_remote *remote;      /* the shared second level; NULL: none (or no cache) */
  char cache_err[512];     /* why there is no cache ("" when there is one) */
  int counts_unwritten;    /* the last flush of counts failed (said once) */
  uint64_t cache_retry_ms; /* when to try opening it again (loop time) */
  int cache_damaged;       /* the database is damaged: replaced at the next
                              flush tick (vxd__cache_damaged) */
  /* clients (vxd_conn.c) */
  vxd_conn *conns;
  unsigned nconns;
  uint64_t next_conn_id;
  unsigned max_connections;            /* cfg's, lowered to what the descriptor limit allows */
  uint64_t refused, refused_logged_ms; /* connections refused (peer credentials, limit) */
  uint64_t timeouts;                   /* connections closed for a stalled frame or idleness */
  /* compiles since start by duration (stats: vxp_stats.compile_buckets) */
  uint64_t compile_buckets[VXP_COMPILE_BUCKETS];
  uint64_t compile_sum_us;
  vxd_jobs jobs;
  vxd_pool pool;
  /* handles one whole request payload of a connection (vxd_conn.c calls
   * it; vxd_requests.c's vxd__on_payload) */
  void (*on_payload)(vxd_conn *c, const uint8_t *p, size_t len);
  /* counters: requests since start; persistent counts not yet flushed */
  uint64_t requests;
  vxd_counts pending;
};

/* ---- vxd_log.c: log lines and the clock ---- */

/* Log priorities (syslog's, as journald reads them). */
enum { VXD_LOG_ERR = 3, VXD_LOG_WARNING = 4, VXD_LOG_NOTICE = 5, VXD_LOG_INFO = 6, VXD_LOG_DEBUG = 7 };
/* Writes one line to stderr at a priority: "vortexd: warning: message", or
 * "<4>message" when stderr is the journal; lines above the configured
 * log_level are dropped.  vxd__log logs at notice. */
void vxd__log(const vxd_server *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void vxd__log_at(const vxd_server *s, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* vxd__log for callbacks: s is the vxd_server. */
void vxd__log_line(void *s, const char *msg);
/* Whether stderr is the journal: systemd set JOURNAL_STREAM to the
 * device:inode of the stream it connected. */
int vxd__stderr_is_journal(void);
/* Loop time in milliseconds. */
uint64_t vxd__now_ms(vxd_server *s);

/* ---- vxd_shutdown.c ---- */

/* Shuts the daemon down (idempotent): stops listening, closes clients,
 * stops workers, writes what is queued; logs "stopping (why)" unless why
 * is NULL (a start-up failure, logged already).  Every handle is then
 * closing, so the loop ends. */
void vxd__stop(vxd_server *s, const char *why);
/* Removes a stale socket name in the runtime directory: only a socket (a
 * regular file or anything else named like the socket is left alone and
 * refused: -EEXIST).  Returns 0 or a negative errno (logged). */
int vxd__remove_stale_socket(vxd_server *s, const char *base);
/* uv_close(h) unless it was never initialized or is already closing. */
void vxd__close_if_open(uv_handle_t *h);

/* ---- vxd_cache.c ---- */

/* Opens the cache, its store thread and the shared level behind it.
 * Returns 0, or a VXK error code (negative errno) with the reason in
 * s->cache_err (then the flush tick tries again every 10 s). */
int vxd__cache_open(vxd_server *s);
/* The flush timer (every second): replaces a damaged database, retries an
 * unusable cache, hands counters and LRU times to the store thread. */
void vxd__cache_tick_cb(uv_timer_t *t);
/* The cache database was found damaged (why: SQLite's words): logged once,
 * and the database replaced by a new one on the loop's next turn, outside
 * any callback of the store. */
void vxd__cache_damaged(vxd_server *s, const char *why);
/* Queues a finished job's entry (r->entry, moved: r is left without one)
 * for the store thread; compile_us: what the compile took. */
void vxd__cache_put(vxd_server *s, const vxd_job *j, vxp_response *r, uint64_t compile_us);

/* Reads key's entry into *e (caller frees e->data): from the local cache,
 * else from the store's queue (not written yet).  An entry that fails its
 * checksum is never returned: dropped (logged, counted) and VXK_ENOTFOUND,
 * so it is compiled again; a damaged database is set aside
 * (vxd__cache_damaged).  Returns VXK_OK, VXK_ENOTFOUND or another VXK
 * error (logged).  Loop thread. */
int vxd__cache_read(vxd_server *s, const char *key, vxk_entry *e);

/* An entry the remote level answered with (e->data moved out on
 * success): into the local cache (the store's pending list serves it at
 * once), not shared back.  source_name: the source's file name, NULL when
 * not known.  Returns 0, or -ENOENT (serving without a cache) / -ENOMEM:
 * the caller treats the lookup as a miss.  Loop thread. */
int vxd__cache_adopt(vxd_server *s, const char *key, vxk_entry *e, const char *source_name);

/* A worker's pieces request r (the keys of its job's pieces): answered on
 * w's stdin, key for key, with the entry the local cache holds (or is
 * about to write), else the one the shared level gives, else none; r's
 * pieces are taken.  What a piece's entry depends on is its key alone, as
 * for a module.  Loop thread. */
void vxd__pieces_answer(vxd_server *s, vxd_worker *w, vxp_response *r);

/* w is gone: an answer still being gathered for it is dropped when it is
 * complete.  Loop thread. */
void vxd__pieces_forget(vxd_worker *w);

/* Keeps the pieces a worker compiled for job j (r->pieces, taken): each
 * stored and shared as an entry of its own, under its key.  Loop thread. */
void vxd__pieces_keep(vxd_server *s, const vxd_job *j, vxp_response *r);
/* Hands counters and LRU times to the store thread. */
void vxd__flush_counters(vxd_server *s);
/* Writes the entries queued so far and, with a shared level, waits (at most
 * timeout_ms) until they are shared: what stats and stopping report. */
void vxd__share_queued(vxd_server *s, unsigned timeout_ms);

/* ---- vxd_jobs.c ---- */

/* A job for request req (a miss of key), not on any list yet, with no
 * waiter: the request frame for a worker encoded.  NULL on OOM. */
vxd_job *vxd__job_create(vxd_server *s, const vxp_request *req, const char key[VXK_KEY_HEX + 1]);
/* Adds request req_id of c (read at arrived_ns, uv_hrtime()) to j's
 * waiters.  0 or -ENOMEM. */
int vxd__job_wait(vxd_job *j, vxd_conn *c, uint64_t req_id, uint64_t arrived_ns);
/* A job of key on any list that another request may join, or NULL. */
vxd_job *vxd__job_shared(vxd_server *s, const char *key);
/* Puts j on the lookups list / takes the job of key off it (NULL: none). */
void vxd__job_await_remote(vxd_server *s, vxd_job *j);
vxd_job *vxd__job_take_remote(vxd_server *s, const char *key);
/* Puts j at the end of the queue (the caller dispatches). */
void vxd__job_queue(vxd_server *s, vxd_job *j);
/* Takes the first queued job onto the in-flight list (started now), or
 * NULL when none waits. */
vxd_job *vxd__job_next(vxd_server *s);
/* Puts j, whose worker died, back at the head of the queue. */
void vxd__job_retry(vxd_server *s, vxd_job *j);
/* j's worker answered r (the worker's response; its key is replaced):
 * counted, queued for the cache when ok, answered to every waiter, freed. */
void vxd__job_done(vxd_server *s, vxd_job *j, vxp_response *r);
/* j (in flight) failed: every waiter gets an "internal" answer saying msg;
 * j is freed. */
void vxd__job_fail(vxd_server *s, vxd_job *j, const char *msg);
/* Frees j (on no list) and its waiters, unanswered. */
void vxd__job_free(vxd_server *s, vxd_job *j);
/* Whether a job is queued or on a worker. */
int vxd__jobs_running(const vxd_server *s);
/* Frees the jobs that wait, unanswered, and with inflight nonzero those
 * on workers too (only once no worker can report on one: after the loop). */
void vxd__jobs_clear(vxd_server *s, int inflight);

/* ---- vxd_conn.c ---- */

/* Room for the next read into rb (grows it); consumes n bytes from it. */
void vxd__rbuf_alloc(vxd_rbuf *rb, uv_buf_t *buf);
void vxd__rbuf_consume(vxd_rbuf *rb, size_t n);
/* Closes c (idempotent); it is freed in the close callback. */
void vxd__conn_close(vxd_conn *c);
/* The open connection with this id, or NULL when it has gone or is
 * closing (a reply to it would be dropped). */
vxd_conn *vxd__conn_find(vxd_server *s, uint64_t id);
/* Encodes and writes resp to c; closes c after the write when close_after. */
void vxd__send(vxd_conn *c, const vxp_response *resp, int close_after);
/* Encodes resp into a frame (malloc()), or an "internal" error response
 * when resp cannot be encoded.  Returns 0 or -ENOMEM. */
int vxd__encode(const vxp_response *resp, uint8_t **frame, size_t *len);
/* Writes an encoded frame to c, taking ownership of it. */
void vxd__send_frame(vxd_conn *c, uint8_t *frame, size_t len, int close_after);
void vxd__send_error(vxd_conn *c, uint64_t id, vxp_op op, vxp_status st, const char *msg, int close_after);
/* Accepts a client on the listening socket. */
void vxd__on_connection(uv_stream_t *server, int status);

/* ---- vxd_requests.c ---- */

/* Handles one whole request payload from c. */
void vxd__on_payload(vxd_conn *c, const uint8_t *p, size_t len);

/* ---- vxd_pool.c ---- */

/* Creates the template compiler and compiles a small kernel with it, so
 * that forked workers start warm; starts reaping workers.  Called once at
 * start-up, before the store thread exists.  Returns 0 or a negative errno
 * (logged). */
int vxd__pool_init(vxd_server *s);
/* Starts a worker in slot: forks this process, the child serves with its
 * copy of the template compiler. */
void vxd__spawn(vxd_server *s, vxd_slot *slot);
/* Stops every worker (EOF on its stdin, then SIGTERM) and the reaper;
 * frees the template compiler. */
void vxd__pool_stop(vxd_server *s);
/* Gives queued jobs to idle workers. */
void vxd__dispatch(vxd_server *s);
/* Why compiling key crashed or hung workers lately (crash_memory), or NULL. */
const char *vxd__crash_recall(vxd_server *s, const char *key);
/* Close callback of a worker's handles: frees it after the last one. */
void vxd__worker_handle_close_cb(uv_handle_t *h);

#endif /* VXD_LOOP_H */
