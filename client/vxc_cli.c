/*
 * vxc_cli.c - the vxc command line client.
 *
 *   vxc [--socket PATH] [--no-spawn] compile FILE.mlir [-o DIR] [--json]
 *       [-O LEVEL] [--emit-ir] [--warp-size N]
 *   vxc [--socket PATH] fetch KEY [--kernel NAME] [-o DIR] [--json]
 *   vxc [--socket PATH] stats [--json] | zero-stats | verify | clear |
 *       prune [--max-size S] | stop | config [--json]
 *   vxc --version
 *
 * Starts vortexd (beside vxc, else on PATH) when none answers, unless
 * --no-spawn.  Exit status: 0 success, 1 compile error or not found,
 * 2 daemon or I/O failure, 64 usage.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "vxc.h"
#include "vxp_config.h"

static void usage(FILE *f) {
  fputs("usage: vxc [--socket PATH] [--no-spawn] COMMAND ...\n"
        "       vxc --version | --help\n"
        "  compile FILE.mlir [-o DIR] [--json] [-O 0-3] [--emit-ir] [--warp-size N] [--shuffle-insns]\n"
        "  compile --host FILE.mlir [-o DIR] [--json]\n"
        "      the program's host side as a host object DIR/<FILE without .mlir>.host.o, to link\n"
        "      with -lvortexd_runtime: its launches get their kernels from vortexd\n"
        "      compile through vortexd; writes DIR/<FILE without .mlir>.o (default DIR: .; with\n"
        "      --json only when -o is given), one object for every kernel of the module, each\n"
        "      started by its entry symbol; N: threads per warp (subgroup size), default 4;\n"
        "      --shuffle-insns: gpu.shuffle with Vortex's shuffle instructions\n"
        "  fetch KEY [--kernel NAME] [-o DIR] [--json]\n"
        "      fetch a cached entry by key (writes DIR/KEY.o with -o)\n"
        "  run FILE.mlir [--shared-libs LIB]...\n"
        "      run a whole GPU-dialect program (host main + kernels) like mlir-runner: its host side\n"
        "      lowered by vortexd, executed by mlir-runner-22 with libvortexd_runtime, which gets\n"
        "      each kernel from vortexd at its first launch and runs it on VORTEXD_DEVICE\n"
        "  stats [--json]       counters of the daemon and its cache\n"
        "  zero-stats           reset the counters\n"
        "  verify               check every cache entry's checksum, drop the damaged ones\n"
        "  clear                delete every cache entry\n"
        "  prune [--max-size S] evict least recently used entries down to S (K/M/G;\n"
        "                       default: the configured max_cache_size)\n"
        "  stop                 stop the daemon (never starts one)\n"
        "  config               the effective configuration and where each value came from\n"
        "Starts vortexd (beside vxc, else on PATH) when none answers, unless --no-spawn.\n"
        "Exit status: 0 success, 1 compile error or not found, 2 daemon or I/O failure, 64 usage.\n",
        f);
}

/* ---- JSON output (libjansson) ---- */

/* A JSON string of s; bytes that are not valid UTF-8 (kernel names and
 * diagnostics come from the source) become '?', as JSON must be UTF-8. */
static json_t *json_text(const char *s) {
  json_t *j = json_string(s ? s : "");
  if (j) return j;
  char *copy = strdup(s);
  if (!copy) return NULL;
  for (unsigned char *p = (unsigned char *)copy; *p; p++)
    if (*p >= 0x80) *p = '?';
  j = json_string(copy);
  free(copy);
  return j;
}

static json_t *json_kernel(const vxp_kernel *k) {
  json_t *args = json_array();
  for (uint32_t i = 0; i < k->nargs; i++) {
    const vxp_arg *a = &k->args[i];
    json_array_append_new(
        args, json_pack("{s:I,s:o,s:s,s:I,s:I,s:I,s:I,s:I}", "index", (json_int_t)a->index, "type",
                        json_text(a->type), "kind", a->kind == VXP_ARG_POINTER ? "pointer" : "scalar", "size",
                        (json_int_t)a->size, "align", (json_int_t)a->align, "offset", (json_int_t)a->offset,
                        "rank", (json_int_t)a->rank, "elem_size", (json_int_t)a->elem_size));
  }
  return json_pack("{s:o,s:o,s:o,s:I,s:I,s:I,s:I,s:[I,I,I],s:I,s:I}", "name", json_text(k->name), "entry",
                   json_text(k->entry), "args", args, "args_size", (json_int_t)k->args_size, "launch_offset",
                   (json_int_t)k->launch_offset, "buffer_size", (json_int_t)k->buffer_size, "grid_dims",
                   (json_int_t)k->grid_dims, "known_block", (json_int_t)k->known_block[0],
                   (json_int_t)k->known_block[1], (json_int_t)k->known_block[2], "shared_bytes",
                   (json_int_t)k->shared_bytes, "subgroup_size", (json_int_t)k->subgroup_size);
}

/* One JSON object on one line: key, cached, status, the object written
 * (path and size; path null when none was written), kernels, diagnostics,
 * and the lowered IR (when it was asked for) as "lowered_ir". */
static void json_result(FILE *f, const vxp_response *r, const char *object_path) {
  json_t *kernels = json_array(), *diags = json_array();
  for (uint32_t i = 0; i < r->nkernels; i++)
    json_array_append_new(kernels, json_kernel(&r->kernels[i]));
  for (uint32_t i = 0; i < r->ndiags; i++)
    json_array_append_new(diags, json_text(r->diags[i]));
  json_t *o =
      json_pack("{s:o,s:b,s:s,s:o,s:I,s:o,s:o}", "key", json_text(r->key), "cached", r->cached, "status",
                vxp_status_name(r->status), "object", object_path ? json_text(object_path) : json_null(),
                "object_size", (json_int_t)r->object_size, "kernels", kernels, "diagnostics", diags);
  if (o && r->lowered_ir) json_object_set_new(o, "lowered_ir", json_text(r->lowered_ir));
  if (o) json_dumpf(o, f, JSON_COMPACT);
  fputc('\n', f);
  json_decref(o);
}

/* ---- text from the daemon, made safe for a terminal ----
 *
 * Kernel names, types, diagnostics and messages come from the daemon (or
 * from whoever answers on the socket) and may hold any bytes.  Printed raw,
 * a newline fakes an "error:" line, ESC sequences rewrite the screen and
 * U+202E reverses what follows.  Each is shown escaped instead: C0 and C1
 * controls and DEL as \xHH, bidirectional controls (U+200E, U+200F,
 * U+202A..U+202E, U+2066..U+2069) as \u{HHHH}; other text as it is. */

/* Bytes of the escape put_shown writes for the character at p (n bytes
 * left), and that escape in esc (16 bytes); 0 when the character is shown
 * as it is (*len: its bytes). */
static int escape_of(const unsigned char *p, size_t n, char esc[16], size_t *len) {
  *len = 1;
  if (p[0] < 0x20 || p[0] == 0x7f) return snprintf(esc, 16, "\\x%02x", p[0]);
  if (p[0] == 0xc2 && n >= 2 && p[1] >= 0x80 && p[1] <= 0x9f) {
    *len = 2;
    return snprintf(esc, 16, "\\x%02x", p[1]);
  }
  if (p[0] == 0xe2 && n >= 3 && p[1] >= 0x80 && p[1] <= 0x81) {
    unsigned cp = 0x2000u | ((p[1] & 0x3fu) << 6) | (p[2] & 0x3fu);
    if (cp == 0x200e || cp == 0x200f || (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069)) {
      *len = 3;
      return snprintf(esc, 16, "\\u{%04x}", cp);
    }
  }
  return 0;
}

/* Writes s to f, escaped as above. */
static void put_shown(FILE *f, const char *s) {
  const unsigned char *p = (const unsigned char *)(s ? s : "");
  size_t n = strlen((const char *)p);
  while (n) {
    char esc[16];
    size_t len;
    if (escape_of(p, n, esc, &len))
      fputs(esc, f);
    else
      fputc(*p, f);
    p += len, n -= len;
  }
}

/* s escaped as above, in one of eight static buffers used in turn (several
 * in one printf), cut at 1 KiB with "...". */
static const char *shown(const char *s) {
  static char ring[8][1024];
  static unsigned next;
  char *out = ring[next++ % 8];
  const unsigned char *p = (const unsigned char *)(s ? s : "");
  size_t n = strlen((const char *)p), o = 0;
  while (n) {
    char esc[16];
    size_t len;
    int e = escape_of(p, n, esc, &len);
    size_t add = e ? (size_t)e : len;
    if (o + add + 4 > sizeof ring[0]) {
      memcpy(out + o, "...", 3);
      o += 3;
      break;
    }
    memcpy(out + o, e ? esc : (const char *)p, add);
    o += add, p += len, n -= len;
  }
  out[o] = '\0';
  return out;
}

/* ---- table output ---- */

static void table_result(FILE *f, const vxp_response *r, const char *object_path) {
  fprintf(f, "key %s (%s)\n", r->key ? shown(r->key) : "-", r->cached ? "cached" : "compiled");
  if (object_path)
    fprintf(f, "object %s (%zu bytes; link kernel K with --defsym=main=<K's entry>)\n", object_path,
            r->object_size);
  for (uint32_t i = 0; i < r->nkernels; i++) {
    const vxp_kernel *k = &r->kernels[i];
    fprintf(f, "\nKernel: %s\n", shown(k->name));
    fprintf(f, "  entry: %s\n", shown(k->entry));
    fprintf(f, "  argument buffer: %u bytes (arguments %u, launch header at %u)\n", k->buffer_size,
            k->args_size, k->launch_offset);
    fprintf(f, "  grid dimensions used: %u", k->grid_dims);
    if (k->known_block[0])
      fprintf(f, ", known block size %ux%ux%u", k->known_block[0], k->known_block[1], k->known_block[2]);
    fprintf(f, ", static shared memory %u bytes, %u threads per warp\n", k->shared_bytes, k->subgroup_size);
    fprintf(f, "  Arguments:\n");
    for (uint32_t j = 0; j < k->nargs; j++) {
      const vxp_arg *a = &k->args[j];
      fprintf(f, "    [%u] offset=%-4u size=%-2u align=%-2u %-7s (%s)\n", a->index, a->offset, a->size,
              a->align, a->kind == VXP_ARG_POINTER ? "pointer" : "scalar", shown(a->type));
    }
  }
}

/* The file name an object is written under: the last path component of
 * name without its extension, mapped so that it names a plain file inside
 * the output directory whatever the name holds: bytes in [A-Za-z0-9_.-]
 * stay, "::" becomes "__", a leading '.' and every other byte become %HH
 * (two upper-case hex digits), an empty stem becomes "module"; then ".o".
 * So no '/', no "..", no hidden file.  Writes into out (cap bytes, at least
 * 8; a long stem is cut at a whole character of the mapping). */
static void object_file_name(const char *name, char *out, size_t cap) {
  const char *base = strrchr(name, '/');
  base = base ? base + 1 : name;
  const char *dot = strrchr(base, '.');
  size_t n = dot && dot != base ? (size_t)(dot - base) : strlen(base);
  if (n == 0) base = "module", n = 6;
  size_t o = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char ch = (unsigned char)base[i];
    char piece[4];
    if (ch == ':' && i + 1 < n && base[i + 1] == ':') {
      memcpy(piece, "__", 3);
      i++;
    } else if (((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                ch == '-' || ch == '_' || ch == '.') &&
               !(ch == '.' && o == 0)) {
      piece[0] = (char)ch, piece[1] = '\0';
    } else {
      snprintf(piece, sizeof piece, "%%%02X", ch);
    }
    size_t pl = strlen(piece);
    if (o + pl + 3 > cap) break;
    memcpy(out + o, piece, pl);
    o += pl;
  }
  memcpy(out + o, ".o", 3);
}

/* Whether path already is a regular file of ours, with one link, the given
 * mode and exactly size bytes equal to data; if so its access and
 * modification times are set to now, as rewriting it would (make and ninja
 * compare those).  Replacing a file costs the file system far more than
 * reading it: a rebuild whose MLIR came out the same hits the cache and
 * finds its object already in place. */
static int refresh_if_same(const char *path, const uint8_t *data, size_t size, mode_t mode) {
  struct stat st, named;
  /* looked at before it is opened: a device or FIFO is never opened */
  if (lstat(path, &named) != 0 || !S_ISREG(named.st_mode)) return 0;
  int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return 0;
  /* the same inode as looked at: still that regular file */
  int same = fstat(fd, &st) == 0 && st.st_ino == named.st_ino && st.st_dev == named.st_dev &&
             st.st_nlink == 1 && st.st_uid == geteuid() && (st.st_mode & 07777) == mode &&
             (uint64_t)st.st_size == size;
  uint8_t buf[16384];
  for (size_t at = 0; same && at < size;) {
    ssize_t n = read(fd, buf, size - at < sizeof buf ? size - at : sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || memcmp(buf, data + at, (size_t)n) != 0)
      same = 0;
    else
      at += (size_t)n;
  }
  if (same) same = futimens(fd, NULL) == 0;
  close(fd);
  return same;
}

/* Writes r's object as dir/<name>.o (object_file_name) through a temporary
 * file in dir renamed over it, so a reader never sees half an object (an
 * identical object already there is left in place, its times refreshed);
 * the path goes to path (cap bytes).  Returns 0 or -1 after a message. */
static int write_object(const vxp_response *r, const char *dir, const char *name, char *path, size_t cap) {
  if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
    fprintf(stderr, "vxc: cannot create %s: %s\n", dir, strerror(errno));
    return -1;
  }
  char file[256], tmp[4096];
  object_file_name(name, file, sizeof file);
  if (snprintf(path, cap, "%s/%s", dir, file) >= (int)cap ||
      snprintf(tmp, sizeof tmp, "%s/.vxc-XXXXXX", dir) >= (int)sizeof tmp) {
    fprintf(stderr, "vxc: output path too long\n");
    return -1;
  }
  mode_t mask = umask(0);
  umask(mask);
  if (refresh_if_same(path, r->object, r->object_size, 0666 & ~mask)) return 0;
  int fd = mkstemp(tmp);
  if (fd < 0) {
    fprintf(stderr, "vxc: cannot write in %s: %s\n", dir, strerror(errno));
    return -1;
  }
  const uint8_t *p = r->object;
  size_t left = r->object_size;
  int ok = fchmod(fd, 0666 & ~mask) == 0;
  while (ok && left) {
    ssize_t w = write(fd, p, left);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0)
      ok = 0;
    else
      p += w, left -= (size_t)w;
  }
  int e = errno;
  if (close(fd) != 0 && ok) ok = 0, e = errno;
  if (ok && rename(tmp, path) != 0) ok = 0, e = errno;
  if (!ok) {
    unlink(tmp);
    fprintf(stderr, "vxc: cannot write %s: %s\n", path, strerror(e));
    return -1;
  }
  return 0;
}

static char *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *buf = NULL;
  size_t cap = 0, n = 0;
  for (;;) {
    if (n == cap) {
      cap = cap ? cap * 2 : 65536;
      char *nb = realloc(buf, cap);
      if (!nb) {
        free(buf);
        fclose(f);
        errno = ENOMEM;
        return NULL;
      }
      buf = nb;
    }
    size_t r = fread(buf + n, 1, cap - n, f);
    n += r;
    if (r == 0) break;
  }
  int err = ferror(f);
  fclose(f);
  if (err) {
    free(buf);
    errno = EIO;
    return NULL;
  }
  *len = n;
  return buf;
}

/* Prints diagnostics, writes the object into dir (when not NULL) under
 * name, and maps the response status to an exit code. */
static int finish(const vxp_response *r, int json, const char *dir, const char *name) {
  for (uint32_t i = 0; i < r->ndiags; i++)
    put_shown(stderr, r->diags[i]), fputc('\n', stderr);
  if (r->status != VXP_STATUS_OK && !(json && r->status == VXP_STATUS_COMPILE_ERROR)) {
    fprintf(stderr, "vxc: %s: %s\n", vxp_status_name(r->status), shown(r->message));
    return r->status == VXP_STATUS_INTERNAL || r->status == VXP_STATUS_BAD_REQUEST ? 2 : 1;
  }
  char path[4096];
  const char *written = NULL;
  if (r->status == VXP_STATUS_OK && dir && r->object) {
    if (write_object(r, dir, name, path, sizeof path) != 0) return 2;
    written = path;
  }
  if (json) {
    json_result(stdout, r, written);
  } else {
    if (r->lowered_ir) fputs(r->lowered_ir, stdout);
    table_result(stdout, r, written);
  }
  return r->status == VXP_STATUS_OK ? 0 : 1;
}

/* Explains why no daemon could be reached at socket (NULL: the default). */
static void report_connect_error(const char *socket, int rc) {
  char def[108] = "", dir[108], err[512];
  if (!socket) vxp_default_socket_path(def, sizeof def);
  const char *path = socket ? socket : def;
  if (rc == -ECHILD)
    fprintf(stderr, "vxc: vortexd did not start; see %s.log\n", path);
  else if (rc == -EACCES)
    fprintf(stderr, "vxc: the daemon at %s runs as another user; not trusting it with sources or objects\n",
            path);
  else if ((rc == -EPERM || rc == -ELOOP) && vxp_path_dir(path, dir, sizeof dir) == 0 &&
           vxp_runtime_dir_open(dir, 0, 0, err, sizeof err) < 0)
    fprintf(stderr, "vxc: %s\n", err);
  else
    fprintf(stderr, "vxc: cannot reach vortexd at %s: %s\n", path, strerror(-rc));
}

/* libvortexd_runtime for `vxc run`: $VORTEXD_RUNTIME_LIB, else beside an
 * installed vxc (PREFIX/lib), else in the build tree (runtime/). */
static int runtime_library(char *buf, size_t cap) {
  const char *env = getenv("VORTEXD_RUNTIME_LIB");
  if (env && *env) return snprintf(buf, cap, "%s", env) < (int)cap ? 0 : -1;
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return -1;
  self[n] = '\0';
  char *slash = strrchr(self, '/');
  if (!slash) return -1;
  *slash = '\0';
  const char *tries[] = {"%s/../lib/libvortexd_runtime.so", "%s/runtime/libvortexd_runtime.so"};
  for (int i = 0; i < 2; i++) {
    if (snprintf(buf, cap, tries[i], self) >= (int)cap) continue;
    if (access(buf, R_OK) == 0) return 0;
  }
  return -1;
}

/* `vxc run`: the lowered host program through mlir-runner-22 with
 * libvortexd_runtime and MLIR's runner utilities (printMemref*), the
 * runtime pointed at the daemon vxc used.  Returns the exit status. */
static int run_program(const vxp_response *r, const char *socket, const char *const *shlibs, int nshlibs) {
  for (uint32_t i = 0; i < r->ndiags; i++)
    put_shown(stderr, r->diags[i]), fputc('\n', stderr);
  if (r->status != VXP_STATUS_OK || !r->host_ir) {
    fprintf(stderr, "vxc: %s: %s\n", vxp_status_name(r->status), shown(r->message));
    return r->status == VXP_STATUS_COMPILE_ERROR ? 1 : 2;
  }
  char rt[4200];
  if (runtime_library(rt, sizeof rt) != 0) {
    fprintf(stderr, "vxc: libvortexd_runtime.so not found (set VORTEXD_RUNTIME_LIB)\n");
    return 2;
  }
  char path[] = "/tmp/vxc-run-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) {
    fprintf(stderr, "vxc: cannot create a temporary file: %s\n", strerror(errno));
    return 2;
  }
  size_t n = strlen(r->host_ir);
  ssize_t w = write(fd, r->host_ir, n);
  close(fd);
  if (w != (ssize_t)n) {
    unlink(path);
    fprintf(stderr, "vxc: cannot write %s\n", path);
    return 2;
  }
  const char *runner = getenv("VORTEXD_MLIR_RUNNER");
  if (!runner || !*runner) runner = "mlir-runner-22";
  static char libs[16 + 3][4300];
  char *argv[32];
  int a = 0;
  argv[a++] = (char *)runner;
  argv[a++] = (char *)"--entry-point-result=void";
  snprintf(libs[0], sizeof libs[0], "--shared-libs=%s", rt);
  snprintf(libs[1], sizeof libs[1], "--shared-libs=%s/libmlir_runner_utils.so", VXC_LLVM_LIBDIR);
  snprintf(libs[2], sizeof libs[2], "--shared-libs=%s/libmlir_c_runner_utils.so", VXC_LLVM_LIBDIR);
  for (int i = 0; i < nshlibs; i++)
    snprintf(libs[3 + i], sizeof libs[3 + i], "--shared-libs=%s", shlibs[i]);
  for (int i = 0; i < 3 + nshlibs; i++)
    argv[a++] = libs[i];
  argv[a++] = path;
  argv[a] = NULL;
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    setenv("VORTEXD_SOCKET", socket, 1); /* the runtime asks the daemon vxc used */
    execvp(runner, argv);
    fprintf(stderr, "vxc: cannot run %s: %s\n", runner, strerror(errno));
    _exit(127);
  }
  int st = 0;
  if (pid > 0)
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
  unlink(path);
  if (pid < 0) return 2;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static const char *const origins[] = {"default", "file", "environment", "flag"};

/* `vxc config`: every key, its value and where it came from. */
static int show_config(const vxp_config *pc, int json) {
  json_t *o = json ? json_object() : NULL;
  if (!json) printf("# configuration file: %s (%s)\n", pc->file, pc->file_found ? "read" : "absent");
  for (int k = 0; k < VXP_CONF_COUNT; k++) {
    const char *name = vxp_config_name((vxp_conf_key)k), *v = pc->value[k];
    const char *from = origins[pc->origin[k]];
    char shown[800];
    if (k == VXP_CONF_remote_storage) { /* never print its password */
      vxp_config_mask_url(v, shown, sizeof shown);
      v = shown;
    }
    if (json)
      json_object_set_new(o, name,
                          json_pack("{s:o,s:s,s:s}", "value", json_text(v), "from", from, "env",
                                    vxp_config_env((vxp_conf_key)k)));
    else
      printf("%-24s = %-32s # %s%s%s\n", name, v[0] ? v : "(derived)", from,
             pc->origin[k] == VXP_FROM_ENV ? " $" : "",
             pc->origin[k] == VXP_FROM_ENV ? vxp_config_env((vxp_conf_key)k) : "");
  }
  if (json) {
    json_object_set_new(o, "file", json_text(pc->file));
    json_dumpf(o, stdout, JSON_COMPACT);
    putchar('\n');
    json_decref(o);
  }
  return 0;
}

static void print_stats(const vxp_stats *s, const char *server, int json) {
  uint64_t asked = s->hits + s->misses;
  double ratio = asked ? 100.0 * (double)s->hits / (double)asked : 0.0;
  if (json) {
    json_t *o = json_pack(
        "{s:I,s:I,s:I,s:f,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "hits", (json_int_t)s->hits,
        "misses", (json_int_t)s->misses, "compile_errors", (json_int_t)s->compile_errors, "hit_ratio",
        ratio / 100.0, "entries", (json_int_t)s->entries, "bytes", (json_int_t)s->bytes, "max_bytes",
        (json_int_t)s->max_bytes, "evictions", (json_int_t)s->evictions, "corrupt", (json_int_t)s->corrupt,
        "saved_ms", (json_int_t)s->saved_ms, "requests", (json_int_t)s->requests, "workers",
        (json_int_t)s->workers, "worker_restarts", (json_int_t)s->worker_restarts, "refused",
        (json_int_t)s->refused, "timeouts", (json_int_t)s->timeouts, "uptime_ms", (json_int_t)s->uptime_ms);
    if (o && s->remote) {
      json_t *l2 = json_pack("{s:s,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "storage", s->remote, "hits",
                             (json_int_t)s->l2_hits, "misses", (json_int_t)s->l2_misses, "errors",
                             (json_int_t)s->l2_errors, "timeouts", (json_int_t)s->l2_timeouts, "corrupt",
                             (json_int_t)s->l2_corrupt, "rejected", (json_int_t)s->l2_rejected, "writes",
                             (json_int_t)s->l2_writes, "dropped", (json_int_t)s->l2_dropped, "bytes_down",
                             (json_int_t)s->l2_bytes_down, "bytes_up", (json_int_t)s->l2_bytes_up);
      json_object_set_new(o, "l1_hits",
                          json_integer((json_int_t)(s->hits >= s->l2_hits ? s->hits - s->l2_hits : 0)));
      json_object_set_new(o, "remote", l2);
    }
    if (o) json_dumpf(o, stdout, JSON_COMPACT);
    putchar('\n');
    json_decref(o);
    return;
  }
  printf("server            %s\n"
         "hits              %llu\nmisses            %llu\nhit ratio         %.1f %%\n"
         "compile errors    %llu\nentries           %llu\nbytes             %llu of %llu\n"
         "evictions         %llu\ncorrupt (dropped) %llu\ntime saved        %.1f s\n"
         "requests          %llu\nworkers           %llu\nworker restarts   %llu\n"
         "refused           %llu\ntimeouts          %llu\nuptime            %.1f s\n",
         server ? shown(server) : "?", (unsigned long long)s->hits, (unsigned long long)s->misses, ratio,
         (unsigned long long)s->compile_errors, (unsigned long long)s->entries, (unsigned long long)s->bytes,
         (unsigned long long)s->max_bytes, (unsigned long long)s->evictions, (unsigned long long)s->corrupt,
         s->saved_ms / 1000.0, (unsigned long long)s->requests, (unsigned long long)s->workers,
         (unsigned long long)s->worker_restarts, (unsigned long long)s->refused,
         (unsigned long long)s->timeouts, s->uptime_ms / 1000.0);
  if (s->remote)
    printf(
        "remote storage    %s\n"
        "  L1 hits         %llu\n  L2 hits         %llu\n  L2 misses       %llu\n"
        "  L2 errors       %llu (corrupt values %llu, unsigned or untrusted %llu)\n  L2 timeouts     %llu\n"
        "  L2 writes       %llu (dropped %llu)\n  L2 bytes        %llu down, %llu up\n",
        shown(s->remote), (unsigned long long)(s->hits >= s->l2_hits ? s->hits - s->l2_hits : 0),
        (unsigned long long)s->l2_hits, (unsigned long long)s->l2_misses, (unsigned long long)s->l2_errors,
        (unsigned long long)s->l2_corrupt, (unsigned long long)s->l2_rejected,
        (unsigned long long)s->l2_timeouts, (unsigned long long)s->l2_writes,
        (unsigned long long)s->l2_dropped, (unsigned long long)s->l2_bytes_down,
        (unsigned long long)s->l2_bytes_up);
  else
    printf("remote storage    none\n");
}

typedef struct {
  const char *name;
  int nargs; /* positional arguments */
  int spawn; /* may start a daemon */
  vxp_op op; /* admin op, or 0 */
} command;

static const command commands[] = {
    {"compile", 1, 1, 0},
    {"fetch", 1, 1, 0},
    {"stats", 0, 1, 0},
    {"run", 1, 1, 0},
    {"zero-stats", 0, 1, VXP_OP_ZERO_STATS},
    {"verify", 0, 1, VXP_OP_VERIFY},
    {"clear", 0, 1, VXP_OP_CLEAR},
    {"prune", 0, 1, VXP_OP_PRUNE},
    {"stop", 0, 0, VXP_OP_STOP},
    {"config", 0, 0, 0},
};

int main(int argc, char **argv) {
  vxp_config pc;
  char err[4200];
  int cfg_rc = vxp_config_load(&pc, err, sizeof err);
  int spawn = 1, i = 1;
  for (; i < argc && argv[i][0] == '-'; i++) {
    if (strcmp(argv[i], "--socket") == 0 && i + 1 < argc) {
      if (cfg_rc == 0 && vxp_config_set(&pc, "socket", argv[++i], VXP_FROM_FLAG) != 0) {
        fprintf(stderr, "vxc: --socket: path too long\n");
        return 64;
      }
      if (cfg_rc != 0) i++;
    } else if (strcmp(argv[i], "--no-spawn") == 0)
      spawn = 0;
    else if (strcmp(argv[i], "--version") == 0) {
      printf("vxc %s (protocol %u)\n", VORTEXD_VERSION, VXP_PROTOCOL_VERSION);
      return 0;
    } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      usage(stdout);
      return 0;
    } else {
      usage(stderr);
      return 64;
    }
  }
  if (i >= argc) {
    usage(stderr);
    return 64;
  }
  const char *cmd = argv[i];
  const command *cm = NULL;
  for (size_t k = 0; k < sizeof commands / sizeof commands[0]; k++)
    if (strcmp(commands[k].name, cmd) == 0) cm = &commands[k];
  if (!cm) {
    fprintf(stderr, "vxc: unknown command '%s'\n", cmd);
    usage(stderr);
    return 64;
  }
  /* getopt over the command's own arguments */
  int cargc = argc - i;
  char **cargv = argv + i;
  enum { O_JSON = 256, O_IR, O_WARP, O_KERNEL, O_SHFL, O_MAXSIZE, O_SHLIB, O_HOST };
  static const struct option opts[] = {{"json", no_argument, NULL, O_JSON},
                                       {"emit-ir", no_argument, NULL, O_IR},
                                       {"host", no_argument, NULL, O_HOST},
                                       {"warp-size", required_argument, NULL, O_WARP},
                                       {"kernel", required_argument, NULL, O_KERNEL},
                                       {"shuffle-insns", no_argument, NULL, O_SHFL},
                                       {"max-size", required_argument, NULL, O_MAXSIZE},
                                       {"shared-libs", required_argument, NULL, O_SHLIB},
                                       {NULL, 0, NULL, 0}};
  int json = 0, c, host = 0;
  const char *dir = NULL, *kernel = NULL, *max_size = NULL;
  const char *shlibs[16];
  int nshlibs = 0;
  vxc_compile_options co = {.opt_level = 2};
  optind = 1;
  while ((c = getopt_long(cargc, cargv, "o:O:", opts, NULL)) != -1) {
    switch (c) {
    case 'o': dir = optarg; break;
    case 'O':
      if (optarg[0] < '0' || optarg[0] > '3' || optarg[1]) {
        fprintf(stderr, "vxc: -O takes 0..3\n");
        return 64;
      }
      co.opt_level = (uint32_t)(optarg[0] - '0');
      break;
    case O_JSON: json = 1; break;
    case O_IR: co.emit_ir = 1; break;
    case O_HOST: host = 1; break;
    case O_WARP: {
      char *end = NULL;
      unsigned long w = strtoul(optarg, &end, 10);
      if (!*optarg || *end || w == 0 || w > 32 || (w & (w - 1))) {
        fprintf(stderr, "vxc: --warp-size takes a power of two from 1 to 32\n");
        return 64;
      }
      co.warp_size = (uint32_t)w;
      break;
    }
    case O_KERNEL: kernel = optarg; break;
    case O_SHFL: co.shuffle_insns = 1; break;
    case O_MAXSIZE: max_size = optarg; break;
    case O_SHLIB:
      if (nshlibs == 16) {
        fprintf(stderr, "vxc: at most 16 --shared-libs\n");
        return 64;
      }
      shlibs[nshlibs++] = optarg;
      break;
    default: usage(stderr); return 64;
    }
  }
  int nargs = cargc - optind;
  char **args = cargv + optind;
  /* usage errors are reported before any daemon is contacted (or started) */
  if (nargs != cm->nargs || (max_size && cm->op != VXP_OP_PRUNE) || (nshlibs && strcmp(cmd, "run") != 0) ||
      (host && strcmp(cmd, "compile") != 0)) {
    usage(stderr);
    return 64;
  }
  if (cfg_rc != 0) {
    fprintf(stderr, "vxc: %s\n", err);
    return 64;
  }
  if (strcmp(cmd, "config") == 0) return show_config(&pc, json);
  uint64_t prune_to = 0;
  if (cm->op == VXP_OP_PRUNE &&
      vxp_config_size(max_size ? max_size : pc.value[VXP_CONF_max_cache_size], &prune_to) != 0) {
    fprintf(stderr, "vxc: bad size '%s' (bytes, or with K/M/G)\n",
            max_size ? max_size : pc.value[VXP_CONF_max_cache_size]);
    return 64;
  }

  const char *socket = pc.value[VXP_CONF_socket];
  vxc_conn *conn = NULL;
  int rc = spawn && cm->spawn ? vxc_connect_or_spawn(socket, NULL, 15000, &conn) : vxc_connect(socket, &conn);
  if (rc) {
    if (cm->op == VXP_OP_STOP && (rc == -ENOENT || rc == -ECONNREFUSED)) {
      fprintf(stderr, "vxc: no vortexd is running at %s\n", socket);
      return 1;
    }
    report_connect_error(socket, rc);
    return 2;
  }
  vxp_response r;
  int status = 0;
  if (strcmp(cmd, "compile") == 0 && host) {
    /* the program's host side as a host object: DIR/<FILE without .mlir>.host.o */
    size_t len = 0;
    char *src = read_file(args[0], &len);
    if (!src) {
      fprintf(stderr, "vxc: cannot read %s: %s\n", args[0], strerror(errno));
      vxc_close(conn);
      return 2;
    }
    rc = vxc_lower_host(conn, src, len, args[0], 1, &r);
    free(src);
    if (rc == 0) {
      for (uint32_t di = 0; di < r.ndiags; di++)
        put_shown(stderr, r.diags[di]), fputc('\n', stderr);
      if (r.status != VXP_STATUS_OK || !r.object) {
        fprintf(stderr, "vxc: %s: %s\n", vxp_status_name(r.status), shown(r.message));
        status = r.status == VXP_STATUS_COMPILE_ERROR ? 1 : 2;
      } else {
        const char *base = strrchr(args[0], '/');
        base = base ? base + 1 : args[0];
        const char *dot = strrchr(base, '.');
        char name[1024], path[4096];
        snprintf(name, sizeof name, "%.*s.host.x",
                 (int)(dot && dot != base ? dot - base : (long)strlen(base)), base);
        if (write_object(&r, dir ? dir : ".", name, path, sizeof path) != 0)
          status = 2;
        else if (json) {
          json_t *o = json_pack("{s:s,s:o,s:I}", "status", "ok", "host_object", json_text(path),
                                "object_size", (json_int_t)r.object_size);
          if (o) json_dumpf(o, stdout, JSON_COMPACT);
          putchar('\n');
          json_decref(o);
        } else
          printf("host object %s (%zu bytes; link with -lvortexd_runtime)\n", path, r.object_size);
      }
    }
  } else if (strcmp(cmd, "compile") == 0) {
    size_t len = 0;
    char *src = read_file(args[0], &len);
    if (!src) {
      fprintf(stderr, "vxc: cannot read %s: %s\n", args[0], strerror(errno));
      vxc_close(conn);
      return 2;
    }
    rc = vxc_compile(conn, src, len, args[0], &co, &r);
    free(src);
    /* --json describes the result on stdout and writes a file only with -o */
    if (rc == 0) status = finish(&r, json, dir ? dir : json ? NULL : ".", args[0]);
  } else if (strcmp(cmd, "run") == 0) {
    size_t len = 0;
    char *src = read_file(args[0], &len);
    if (!src) {
      fprintf(stderr, "vxc: cannot read %s: %s\n", args[0], strerror(errno));
      vxc_close(conn);
      return 2;
    }
    rc = vxc_lower_host(conn, src, len, args[0], 0, &r);
    free(src);
    vxc_close(conn);
    if (rc) {
      fprintf(stderr, "vxc: request failed: %s\n", strerror(-rc));
      return 2;
    }
    status = run_program(&r, socket, shlibs, nshlibs);
    vxp_response_clear(&r);
    return status;
  } else if (strcmp(cmd, "fetch") == 0) {
    rc = vxc_fetch(conn, args[0], kernel, &r);
    if (rc == 0) status = finish(&r, json, dir, args[0]);
  } else if (strcmp(cmd, "stats") == 0) {
    rc = vxc_stats(conn, &r);
    if (rc == 0 && r.status != VXP_STATUS_OK) {
      fprintf(stderr, "vxc: %s\n", r.message ? shown(r.message) : "stats failed");
      status = 2;
    } else if (rc == 0) {
      const vxp_response *info = json ? NULL : vxc_server_info(conn);
      print_stats(&r.stats, info ? info->server : NULL, json);
    }
  } else {
    rc = vxc_admin(conn, cm->op, prune_to, &r);
    if (rc == 0 && r.status != VXP_STATUS_OK) {
      fprintf(stderr, "vxc: %s: %s\n", cmd, r.message ? shown(r.message) : vxp_status_name(r.status));
      status = 2;
    } else if (rc == 0) {
      if (cm->op == VXP_OP_VERIFY)
        printf("%llu entries checked, %llu damaged (dropped)\n", (unsigned long long)r.checked,
               (unsigned long long)r.removed);
      else if (cm->op == VXP_OP_CLEAR || cm->op == VXP_OP_PRUNE)
        printf("%llu entries removed\n", (unsigned long long)r.removed);
      if (cm->op == VXP_OP_VERIFY && r.removed) status = 1;
    }
  }
  if (rc) {
    fprintf(stderr, "vxc: request failed: %s\n", strerror(-rc));
    status = 2;
  } else {
    vxp_response_clear(&r);
  }
  vxc_close(conn);
  return status;
}
