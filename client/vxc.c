/*
 * vxc.c - libvxc: blocking client of vortexd (see vxc.h).
 */
#define _GNU_SOURCE /* struct ucred, execvpe, strerrordesc_np, environ */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "protocol/vxp_entry.h"
#include "protocol/vxp_io.h"
#include "protocol/vxp_paths.h"
#include "vxc.h"

struct vxc_conn {
  int fd;
  uint64_t next_id;
  vxp_response hello; /* the daemon's hello answer */
};

/* A whole frame to the daemon (no SIGPIPE for a daemon that went away). */
static int vxc__write_full(int fd, const uint8_t *p, size_t n) {
  return vxp_write_full(fd, p, n, VXP_IO_NOSIGNAL);
}

/* A whole frame from the daemon: its end first is a reset connection. */
static int vxc__read_full(int fd, uint8_t *p, size_t n) {
  int rc = vxp_read_full(fd, p, n);
  return rc == -EPIPE ? -ECONNRESET : rc;
}

/* Whether an ok reply to req holds what such a reply must: the op asked,
 * and for a compile or a fetch a well-formed key (the one asked for, for a
 * fetch) and an object, so that a caller never takes a reply without an
 * object for success, nor writes a file named after a key like
 * "../../etc/passwd". */
static int vxc__reply_complete(const vxp_request *req, const vxp_response *r) {
  if (r->status != VXP_STATUS_OK) return 1;
  if (r->op != req->op) return 0;
  if (req->op == VXP_OP_LIST) { /* only entries the prefix names, no more than asked */
    size_t plen = req->prefix ? strlen(req->prefix) : 0;
    if (r->nentries > (req->limit ? req->limit : 100u) || r->nentries > r->checked) return 0;
    for (uint32_t i = 0; i < r->nentries; i++)
      if (!vxp_key_prefix_valid(r->entries[i].key, 64) ||
          (plen && strncmp(r->entries[i].key, req->prefix, plen) != 0))
        return 0;
    return 1;
  }
  if (req->op == VXP_OP_EXPLAIN) { /* bounded by the decoder; the keys must be keys */
    if (!vxp_key_prefix_valid(r->key, 64) || !r->key_inputs) return 0;
    for (uint32_t i = 0; i < r->ncandidates; i++)
      if (!vxp_key_prefix_valid(r->candidates[i].key, 64)) return 0;
    return 1;
  }
  if (req->op != VXP_OP_COMPILE && req->op != VXP_OP_FETCH) return 1;
  if (!vxp_key_prefix_valid(r->key, 64) || !r->object || r->object_size == 0) return 0;
  return req->op != VXP_OP_FETCH || strcmp(r->key, req->key) == 0;
}

/* Unpacks the entry a successful compile or fetch reply carries
 * (vxp_entry_unpack: bounded, every record checked) into resp's object
 * and kernels, keeping only the kernel named kernel when not NULL: a fetch
 * of a kernel the entry does not have becomes a not_found reply, as a
 * daemon that filtered would have answered.  0 or -EPROTO. */
static int vxc__unpack_entry(vxp_response *resp, const char *kernel) {
  if (resp->status != VXP_STATUS_OK || (resp->op != VXP_OP_COMPILE && resp->op != VXP_OP_FETCH)) return 0;
  int rc = vxp_entry_unpack(resp, kernel);
  if (rc == VXP_EMISSING && kernel && resp->entry) {
    resp->status = VXP_STATUS_NOT_FOUND;
    resp->message = strdup("no such kernel under that key");
    return resp->message ? 0 : -ENOMEM;
  }
  return rc == VXP_OK ? 0 : rc == VXP_ENOMEM ? -ENOMEM : -EPROTO;
}

/* Sends req (id assigned here) and reads its response into *resp: checked
 * to answer req (its id, a complete reply), its entry unpacked.  0, or a
 * negative errno with *resp cleared. */
static int vxc__roundtrip(vxc_conn *c, vxp_request *req, vxp_response *resp) {
  memset(resp, 0, sizeof *resp);
  const char *kernel = req->kernel; /* kept here: the daemon answers the whole entry */
  req->kernel = NULL;
  req->id = ++c->next_id;
  req->proto_version = VXP_PROTOCOL_VERSION; /* checked by the daemon on every request */
  uint8_t *frame = NULL;
  size_t flen = 0;
  int rc = vxp_request_encode(req, &frame, &flen);
  if (rc != VXP_OK) return rc; /* -EMSGSIZE or -ENOMEM */
  rc = vxc__write_full(c->fd, frame, flen);
  free(frame);
  if (rc) return rc;
  uint8_t hdr[VXP_FRAME_HEADER_SIZE];
  rc = vxc__read_full(c->fd, hdr, sizeof hdr);
  if (rc) return rc;
  uint32_t len = 0;
  if (vxp_frame_length(hdr, VXP_MAX_FRAME_DEFAULT, &len) != VXP_OK) return -EPROTO;
  uint8_t *payload = malloc(len);
  if (!payload) return -ENOMEM;
  rc = vxc__read_full(c->fd, payload, len);
  if (rc == 0) rc = vxp_response_decode(payload, len, resp) == VXP_OK ? 0 : -EPROTO;
  free(payload);
  if (rc == 0 && resp->id != req->id && resp->id != 0) rc = -EPROTO;
  if (rc == 0 && resp->op == req->op) rc = vxc__unpack_entry(resp, kernel);
  if (rc != 0) {
    vxp_response_clear(resp);
  } else if (!vxc__reply_complete(req, resp)) {
    vxp_response_clear(resp);
    rc = -EPROTO;
  }
  return rc;
}

/* Whether the daemon at the other end of fd (connected to path) may be
 * trusted with our sources and believed about the objects it returns: it
 * runs as our effective uid or as root, or the socket sits in a directory
 * only root can change (a system service's, which only root could have
 * set up): path itself a socket, not a symbolic link (lstat: a link there
 * could lead to any user's socket), in a directory named without symbolic
 * links, owned by root and not writable by group or others, under
 * directories no other user can change (vxp_path_ancestors_safe for root).
 * Nobody but root can then replace the entry after connect(2) followed it.
 * Returns 0 or -EACCES. */
static int vxc__peer_trusted(int fd, const char *path) {
  struct ucred cred;
  socklen_t len = sizeof cred;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return -EACCES;
  if (cred.uid == geteuid() || cred.uid == 0) return 0;
  char dir[sizeof(((struct sockaddr_un *)0)->sun_path)], real[PATH_MAX], why[512];
  struct stat st, sock;
  if (vxp_path_dir(path, dir, sizeof dir) == 0 && lstat(path, &sock) == 0 && S_ISSOCK(sock.st_mode) &&
      lstat(dir, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == 0 && !(st.st_mode & (S_IWGRP | S_IWOTH)) &&
      realpath(dir, real) && strcmp(real, dir) == 0 && vxp_path_ancestors_safe(dir, 0, why, sizeof why) == 0)
    return 0;
  return -EACCES;
}

const char *vxc_version(void) { return VXC_VERSION_STRING; }

int vxc_connect(const char *path, vxc_conn **out) {
  char def[sizeof(((struct sockaddr_un *)0)->sun_path)];
  int is_system;
  if (!path) {
    int rc = vxp_client_socket_path(def, sizeof def, &is_system);
    if (rc) return rc;
    path = def;
  }
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  if (strlen(path) >= sizeof a.sun_path) return -ENAMETOOLONG;
  memcpy(a.sun_path, path, strlen(path) + 1);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -errno;
  if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
    int e = errno;
    close(fd);
    return -e;
  }
  int trust = vxc__peer_trusted(fd, path);
  if (trust != 0) {
    close(fd);
    return trust;
  }
  vxc_conn *c = calloc(1, sizeof *c);
  if (!c) {
    close(fd);
    return -ENOMEM;
  }
  c->fd = fd;
  *out = c;
  return 0;
}

/* Says hello (once per connection) for vxc_server_info. */
static int vxc__hello(vxc_conn *c) {
  if (c->hello.server) return 0;
  vxp_request hello = {
      .op = VXP_OP_HELLO, .proto_version = VXP_PROTOCOL_VERSION, .client = (char *)"libvxc " VORTEXD_VERSION};
  vxp_response_clear(&c->hello);
  int rc = vxc__roundtrip(c, &hello, &c->hello);
  if (rc == 0 && c->hello.status != VXP_STATUS_OK) rc = -EPROTONOSUPPORT;
  if (rc == 0 && !c->hello.server) rc = -EPROTO;
  return rc;
}

void vxc_close(vxc_conn *c) {
  if (!c) return;
  close(c->fd);
  vxp_response_clear(&c->hello);
  free(c);
}

const vxp_response *vxc_server_info(vxc_conn *c) { return vxc__hello(c) == 0 ? &c->hello : NULL; }

/* A datagram socket at notify_path (in the caller's private runtime
 * directory, replacing what is there) on which a daemon started with
 * NOTIFY_SOCKET=notify_path says READY=1 once it listens (sd_notify(3),
 * systemd's readiness protocol, which vortexd speaks anyway): the starter
 * waits on it instead of polling the socket.  Returns the fd or -1 (then
 * the starter polls). */
static int vxc__notify_open(const char *notify_path) {
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  if (strlen(notify_path) >= sizeof a.sun_path) return -1;
  snprintf(a.sun_path, sizeof a.sun_path, "%s", notify_path);
  int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return -1;
  unlink(notify_path);
  if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

/* Whether a datagram waiting on notify_fd says READY=1 (each read and
 * dropped; at most a few are ever sent). */
static int vxc__notified_ready(int notify_fd) {
  char msg[512];
  ssize_t n;
  int ready = 0;
  while ((n = recv(notify_fd, msg, sizeof msg - 1, 0)) >= 0) {
    msg[n] = '\0';
    for (const char *p = msg; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
      if (strncmp(p, "READY=1", 7) == 0 && (p[7] == '\n' || p[7] == '\0')) ready = 1;
  }
  return ready;
}

/* Starts `program --socket path` in a new session with stdin/stdout on
 * /dev/null and stderr on log_fd (appended), NOTIFY_SOCKET set to
 * notify_path when not NULL; the daemon reads the rest of its settings
 * (idle timeout included) from the configuration file and the environment
 * it inherits.  Returns its pid or a negative errno. */
static pid_t vxc__spawn_daemon(const char *program, const char *path, int log_fd, const char *notify_path) {
  /* the child's environment, built before the fork (the child of a
   * threaded caller may only make async-signal-safe calls): ours without
   * a service manager's NOTIFY_SOCKET, which is not ours to answer, and
   * with notify_path's */
  size_t n = 0;
  while (environ[n])
    n++;
  char **envp = calloc(n + 2, sizeof *envp), *notify = NULL;
  if (!envp) return -ENOMEM;
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (strncmp(environ[i], "NOTIFY_SOCKET=", 14) != 0) envp[k++] = environ[i];
  if (notify_path && asprintf(&notify, "NOTIFY_SOCKET=%s", notify_path) >= 0) envp[k++] = notify;
  envp[k] = NULL;
  pid_t pid = fork();
  if (pid < 0) {
    int e = errno;
    free(envp);
    free(notify);
    return -e;
  }
  if (pid == 0) {
    setsid();
    int nul = open("/dev/null", O_RDWR);
    if (nul >= 0) dup2(nul, 0), dup2(nul, 1);
    dup2(log_fd, 2);
    char *args[] = {(char *)program, (char *)"--socket", (char *)path, NULL};
    if (strchr(program, '/'))
      execve(program, args, envp);
    else
      execvpe(program, args, envp);
    /* into the log, with async-signal-safe calls only (this is a fork of
     * the caller) */
    const char *why = strerrordesc_np(errno);
    if (!why) why = "error";
    static const char pre[] = "vxc: cannot run ";
    ssize_t w = write(2, pre, sizeof pre - 1);
    w += write(2, program, strlen(program));
    w += write(2, ": ", 2);
    w += write(2, why, strlen(why));
    w += write(2, strchr(program, '/') ? "\n" : " (not beside the program, nor on PATH)\n",
               strchr(program, '/') ? 1 : 39);
    (void)w;
    _exit(127);
  }
  free(envp);
  free(notify);
  return pid;
}

void vxc_daemon_program(char *buf, size_t cap) {
  buf[0] = '\0';
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return;
  self[n] = '\0';
  char *slash = strrchr(self, '/');
  if (!slash) return;
  *slash = '\0';
  char cand[4200];
  snprintf(cand, sizeof cand, "%s/vortexd", self);
  if (access(cand, X_OK) == 0 && strlen(cand) < cap) snprintf(buf, cap, "%s", cand);
}

int vxc_connect_or_spawn(const char *path, const char *program, int timeout_ms, vxc_conn **out) {
  char def[sizeof(((struct sockaddr_un *)0)->sun_path)];
  int is_system = 0;
  if (!path) {
    int rc = vxp_client_socket_path(def, sizeof def, &is_system);
    if (rc) return rc;
    path = def;
  }
  int rc = vxc_connect(path, out);
  /* a system service is started by systemd, never by a client */
  if (is_system || (rc != -ENOENT && rc != -ECONNREFUSED)) return rc;

  /* Serialize starters: one takes the lock, starts the daemon, waits for it;
   * the others then find it answering.  The lock and the daemon's log sit
   * beside the socket, in a directory that must be ours alone. */
  char dir[sizeof def], err[512];
  if (vxp_path_dir(path, dir, sizeof dir) != 0) return -ENAMETOOLONG;
  int dfd = vxp_runtime_dir_open(dir, 1, 0, err, sizeof err);
  if (dfd < 0) return dfd;
  const char *base = vxp_path_base(path);
  char name[sizeof def + 8];
  snprintf(name, sizeof name, "%s.spawn", base);
  int lfd = vxp_private_file_open(dfd, name, O_RDWR | O_CREAT);
  snprintf(name, sizeof name, "%s.log", base);
  int logfd = lfd < 0 ? lfd : vxp_private_file_open(dfd, name, O_WRONLY | O_CREAT | O_APPEND);
  close(dfd);
  if (lfd < 0 || logfd < 0) {
    if (lfd >= 0) close(lfd);
    return lfd < 0 ? lfd : logfd;
  }
  while (flock(lfd, LOCK_EX) != 0 && errno == EINTR) {
  }
  rc = vxc_connect(path, out);
  if (rc == -ENOENT || rc == -ECONNREFUSED) {
    char beside[4096];
    if (!program) {
      vxc_daemon_program(beside, sizeof beside);
      program = beside[0] ? beside : "vortexd";
    }
    char notify_path[sizeof def + 16];
    snprintf(notify_path, sizeof notify_path, "%s.notify", path);
    int nfd = vxc__notify_open(notify_path);
    pid_t pid = vxc__spawn_daemon(program, path, logfd, nfd >= 0 ? notify_path : NULL);
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int ready = 0;;) {
      rc = vxc_connect(path, out);
      if (rc != -ENOENT && rc != -ECONNREFUSED) break;
      if (ready) { /* said it listens, yet refuses: as if it had not said */
        ready = 0;
        close(nfd);
        nfd = -1;
      }
      int st = 0;
      if (pid > 0 && waitpid(pid, &st, WNOHANG) == pid) {
        pid = 0;
        /* status 2: another daemon holds the lock and will answer; anything
         * else: the daemon could not start (its log says why) */
        if (!(WIFEXITED(st) && WEXITSTATUS(st) == 2)) {
          rc = -ECHILD;
          break;
        }
      }
      struct timespec now;
      clock_gettime(CLOCK_MONOTONIC, &now);
      long ms = (now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000;
      if (ms > timeout_ms) break;
      /* the daemon's READY=1 wakes us at once; the 10 ms timeout still
       * notices a daemon that exited, or one another starter started */
      if (nfd >= 0) {
        struct pollfd p = {.fd = nfd, .events = POLLIN};
        if (poll(&p, 1, 10) > 0) ready = vxc__notified_ready(nfd);
      } else {
        struct timespec d = {0, 10 * 1000 * 1000};
        nanosleep(&d, NULL);
      }
    }
    if (nfd >= 0) {
      close(nfd);
      unlink(notify_path);
    }
  }
  flock(lfd, LOCK_UN);
  close(lfd);
  close(logfd);
  return rc;
}

const char *vxc_outcome_name(vxc_outcome o) {
  static const char *const names[] = {"hit", "miss", "joined", "error", "failed"};
  return (unsigned)o < sizeof names / sizeof *names ? names[o] : NULL;
}

vxc_outcome vxc_compile_outcome(int rc, const vxp_response *resp) {
  if (rc != 0) return VXC_OUTCOME_FAILED;
  if (resp->status == VXP_STATUS_COMPILE_ERROR) return VXC_OUTCOME_ERROR;
  if (resp->status != VXP_STATUS_OK) return VXC_OUTCOME_FAILED;
  return resp->joined ? VXC_OUTCOME_JOINED : resp->cached ? VXC_OUTCOME_HIT : VXC_OUTCOME_MISS;
}

int vxc_stats_log_append(const char *path, vxc_outcome outcome, const char *key, const char *source_name) {
  const char *what = vxc_outcome_name(outcome);
  if (!path || !*path || !what) return -EINVAL;
  /* one line, one write(2) on an O_APPEND descriptor: lines of parallel
   * compiles do not interleave (a line is far below PIPE_BUF) */
  char line[VXC_STATS_LOG_LINE_MAX];
  int n = snprintf(line, sizeof line, "%s %.12s ", what, key && vxp_key_prefix_valid(key, 64) ? key : "-");
  size_t at = (size_t)n;
  const char *name = source_name && *source_name ? source_name : "-";
  for (size_t i = 0; name[i] && at < sizeof line - 2; i++) /* one field: no blank or control byte */
    line[at++] = (unsigned char)name[i] <= 0x20 || name[i] == 0x7f ? '?' : name[i];
  line[at++] = '\n';
  /* O_NONBLOCK: a FIFO put there does not hang the compile; only a
   * regular file is written */
  int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY | O_NONBLOCK, 0600);
  if (fd < 0) return -errno;
  struct stat st;
  int rc = fstat(fd, &st) != 0 ? -errno : !S_ISREG(st.st_mode) ? -EINVAL : 0;
  if (rc == 0) {
    ssize_t w = write(fd, line, at);
    rc = w == (ssize_t)at ? 0 : w < 0 ? -errno : -EIO;
  }
  close(fd);
  return rc;
}

int vxc_stats_log_read(const char *path, vxc_log_stats *out) {
  memset(out, 0, sizeof *out);
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) return -errno;
  struct stat st;
  int bad = fstat(fd, &st) != 0 ? -errno : !S_ISREG(st.st_mode) ? -EINVAL : 0;
  if (bad) {
    close(fd);
    return bad;
  }
  FILE *f = fdopen(fd, "r");
  if (!f) {
    close(fd);
    return -ENOMEM;
  }
  char line[VXC_STATS_LOG_LINE_MAX + 2];
  int rc = 0;
  while (fgets(line, sizeof line, f)) {
    size_t l = strlen(line);
    if (l && line[l - 1] != '\n' && !feof(f)) { /* longer than any line written: skip the rest */
      int ch;
      while ((ch = fgetc(f)) != EOF && ch != '\n') {
      }
      out->unreadable++;
      continue;
    }
    char *sp = strchr(line, ' ');
    size_t wl = sp ? (size_t)(sp - line) : 0;
    int known = 0;
    for (int o = 0; o < VXC_OUTCOMES; o++) {
      const char *name = vxc_outcome_name((vxc_outcome)o);
      if (wl == strlen(name) && memcmp(line, name, wl) == 0) {
        out->count[o]++, known = 1;
        break;
      }
    }
    if (!known) out->unreadable++;
  }
  if (ferror(f)) rc = -EIO;
  fclose(f);
  return rc;
}

/* A request of op (compile, host or explain) for source (len bytes) named
 * source_name with opts (NULL: vxc_compile's defaults). */
static vxp_request vxc__source_request(vxp_op op, const void *source, size_t len, const char *source_name,
                                       const vxc_compile_options *opts) {
  return (vxp_request){.op = op,
                       .source = (uint8_t *)source,
                       .source_len = len,
                       .source_name = (char *)source_name,
                       .opt_level = opts ? opts->opt_level : 2,
                       .warp_size = opts ? opts->warp_size : 0,
                       .shuffle_insns = opts && opts->shuffle_insns,
                       .vortex_abi = opts ? opts->vortex_abi : 0,
                       .xlen = opts ? opts->xlen : 0};
}

int vxc_compile(vxc_conn *c, const void *source, size_t len, const char *source_name,
                const vxc_compile_options *opts, vxp_response *resp) {
  vxp_request r = vxc__source_request(VXP_OP_COMPILE, source, len, source_name, opts);
  r.emit_ir = opts && opts->emit_ir;
  r.cache = opts ? opts->cache : VXP_CACHE_USE;
  int rc = vxc__roundtrip(c, &r, resp);
  const char *log = getenv("VORTEXD_STATS_LOG");
  if (log && *log) /* best effort: a log that cannot be written never fails the compile */
    (void)vxc_stats_log_append(log, vxc_compile_outcome(rc, resp), rc == 0 ? resp->key : NULL, source_name);
  return rc;
}

int vxc_explain(vxc_conn *c, const void *source, size_t len, const char *source_name,
                const vxc_compile_options *opts, vxp_response *resp) {
  vxp_request r = vxc__source_request(VXP_OP_EXPLAIN, source, len, source_name, opts);
  return vxc__roundtrip(c, &r, resp);
}

int vxc_lower_host(vxc_conn *c, const void *source, size_t len, const char *source_name, int host_form,
                   vxp_response *resp) {
  return vxc_lower_host_with(c, source, len, source_name, host_form, NULL, resp);
}

int vxc_lower_host_with(vxc_conn *c, const void *source, size_t len, const char *source_name, int host_form,
                        const vxc_compile_options *opts, vxp_response *resp) {
  if (host_form != VXC_HOST_IR && host_form != VXC_HOST_OBJECT && host_form != VXC_HOST_BITCODE) {
    memset(resp, 0, sizeof *resp);
    return -EINVAL;
  }
  vxp_request r = vxc__source_request(VXP_OP_HOST, source, len, source_name, opts);
  r.host_object = host_form == VXC_HOST_OBJECT;
  r.host_bitcode = host_form == VXC_HOST_BITCODE;
  r.cache = opts ? opts->cache : VXP_CACHE_USE;
  return vxc__roundtrip(c, &r, resp);
}

int vxc_lower_host_run(vxc_conn *c, const void *source, size_t len, const char *source_name,
                       const vxc_compile_options *opts, const char *entry, vxp_entry_result result,
                       vxp_response *resp) {
  size_t n = strlen(entry ? entry : "main");
  if (n == 0 || n > VXP_MAX_ENTRY_NAME || (unsigned)result > VXP_RESULT_F32) {
    memset(resp, 0, sizeof *resp);
    return -EINVAL;
  }
  vxp_request r = vxc__source_request(VXP_OP_HOST, source, len, source_name, opts);
  r.host_bitcode = true;
  r.entry = (char *)(entry ? entry : "main");
  r.entry_result = result;
  r.cache = opts ? opts->cache : VXP_CACHE_USE;
  return vxc__roundtrip(c, &r, resp);
}

/* Whether environment variable name is set to a value that means yes. */
static int vxc__env_on(const char *name) {
  const char *v = getenv(name);
  if (!v || !*v) return 0;
  static const char *const no[] = {"0", "false", "no", "off"};
  for (size_t i = 0; i < sizeof no / sizeof *no; i++)
    if (strcasecmp(v, no[i]) == 0) return 0;
  return 1;
}

vxp_cache_mode vxc_cache_mode_from_env(void) {
  return vxc__env_on("VORTEXD_DISABLE")   ? VXP_CACHE_BYPASS
         : vxc__env_on("VORTEXD_RECACHE") ? VXP_CACHE_RECACHE
                                          : VXP_CACHE_USE;
}

int vxc_remove(vxc_conn *c, const char *key, vxp_response *resp) {
  if (!vxp_key_prefix_valid(key, 64)) return -EINVAL;
  vxp_request r = {.op = VXP_OP_REMOVE, .key = (char *)key};
  return vxc__roundtrip(c, &r, resp);
}

int vxc_fetch(vxc_conn *c, const char *key, const char *kernel, vxp_response *resp) {
  vxp_request r = {.op = VXP_OP_FETCH, .key = (char *)key, .kernel = (char *)kernel};
  return vxc__roundtrip(c, &r, resp);
}

int vxc_stats(vxc_conn *c, vxp_response *resp) {
  vxp_request r = {.op = VXP_OP_STATS};
  return vxc__roundtrip(c, &r, resp);
}

int vxc_list(vxc_conn *c, const char *prefix, uint32_t limit, vxp_response *resp) {
  memset(resp, 0, sizeof *resp);
  if ((prefix && !vxp_key_prefix_valid(prefix, 0)) || limit > VXP_MAX_LIST_ENTRIES) return -EINVAL;
  vxp_request r = {.op = VXP_OP_LIST, .prefix = prefix && *prefix ? (char *)prefix : NULL, .limit = limit};
  return vxc__roundtrip(c, &r, resp);
}

int vxc_resolve_key(vxc_conn *c, const char *prefix, char key[65], uint64_t *matched, vxp_response *listing) {
  if (matched) *matched = 0;
  if (!vxp_key_prefix_valid(prefix, VXC_MIN_KEY_PREFIX)) return -EINVAL;
  vxp_response r;
  int rc = vxc_list(c, prefix, 2, &r);
  if (rc != 0) return rc;
  if (matched) *matched = r.checked;
  if (r.status != VXP_STATUS_OK)
    rc = -EIO;
  else if (r.checked == 0 || r.nentries == 0)
    rc = -ENOENT;
  else if (r.checked > 1)
    rc = -ENOTUNIQ;
  else
    memcpy(key, r.entries[0].key, 65);
  if (rc == 0 && listing)
    *listing = r; /* moved */
  else
    vxp_response_clear(&r);
  return rc;
}

int vxc_admin(vxc_conn *c, vxp_op op, uint64_t max_size, vxp_response *resp) {
  if (op != VXP_OP_VERIFY && op != VXP_OP_ZERO_STATS && op != VXP_OP_CLEAR && op != VXP_OP_PRUNE &&
      op != VXP_OP_STOP)
    return -EINVAL;
  vxp_request r = {.op = op, .max_size = max_size};
  int rc = vxc__roundtrip(c, &r, resp);
  if (rc != 0 || op != VXP_OP_STOP || resp->status != VXP_STATUS_OK) return rc;
  /* the daemon holds this connection open until it exits (its end is the
   * process's): anything more it sends is read and dropped */
  struct timespec t0, now;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (;;) {
    clock_gettime(CLOCK_MONOTONIC, &now);
    long long left =
        VXC_STOP_WAIT_MS - ((now.tv_sec - t0.tv_sec) * 1000LL + (now.tv_nsec - t0.tv_nsec) / 1000000);
    if (left <= 0) return -ETIMEDOUT;
    struct pollfd p = {.fd = c->fd, .events = POLLIN};
    int n = poll(&p, 1, (int)left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n == 0 ? -ETIMEDOUT : -errno;
    char buf[512];
    ssize_t got = read(c->fd, buf, sizeof buf);
    if (got == 0 || (got < 0 && errno != EINTR && errno != EAGAIN)) return 0; /* its end: it has exited */
  }
}

static void vxc__put_u32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
  p[2] = (uint8_t)(v >> 16);
  p[3] = (uint8_t)(v >> 24);
}

uint64_t vxc_local_bytes(const vxp_kernel *k, const uint32_t block[3], uint32_t dynamic) {
  uint64_t g = (uint64_t)k->shared_bytes + (dynamic > k->dynamic_min ? dynamic : k->dynamic_min);
  if (k->scratch_bytes)
    g = ((g + 7) & ~(uint64_t)7) + (uint64_t)block[0] * block[1] * block[2] * k->scratch_bytes;
  return (g + 15) & ~(uint64_t)15;
}

int vxc_pack_args(const vxp_kernel *k, const void *const *values, const uint32_t grid[3],
                  const uint32_t block[3], uint32_t shared_bytes, void *buf, size_t buf_size) {
  if (!k || !buf || !grid || !block) return -EINVAL;
  /* the record may come from anywhere: every bound is checked in 64 bits */
  if (vxp_kernel_check(k) != VXP_OK || buf_size < k->buffer_size) return -EINVAL;
  for (int i = 0; i < 3; i++)
    if (grid[i] == 0 || block[i] == 0) return -EINVAL;
  uint8_t *b = buf;
  memset(b, 0, k->buffer_size);
  for (uint32_t i = 0; i < k->nargs; i++) {
    const vxp_arg *a = &k->args[i];
    if (!values || !values[i]) return -EINVAL;
    memcpy(b + a->offset, values[i], a->size); /* host and RISC-V are both little-endian */
  }
  uint8_t *h = b + k->launch_offset;
  for (int i = 0; i < 3; i++)
    vxc__put_u32(h + 4 * i, grid[i]);
  for (int i = 0; i < 3; i++)
    vxc__put_u32(h + 12 + 4 * i, block[i]);
  vxc__put_u32(h + 24, shared_bytes);
  return 0;
}
