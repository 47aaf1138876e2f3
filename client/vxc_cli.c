/*
 * vxc_cli.c - the vxc command line client.
 *
 *   vxc [--socket PATH] [--no-spawn] COMMAND [ARGS]    (commands[] below)
 *   vxc --version | --help | help COMMAND | COMMAND --help
 *
 * `compile` follows a compiler's conventions: FILE.o in the current
 * directory, -o FILE, -o DIR/, -o - for standard output, '-' for standard
 * input, silent on success.  Starts vortexd (beside vxc, else on PATH) when
 * none answers, unless --no-spawn.  Exit status: 0 success, 1 compile
 * error, an input that cannot be read, or not found, 2 daemon or I/O
 * failure, 64 usage, 78 configuration.
 */
#define _XOPEN_SOURCE 700 /* mkstemp, strdup, readlink */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "protocol/vxp_config.h"
#include "protocol/vxp_io.h"
#include "vxc.h"

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

/* The version of the JSON documents vxc prints ("schema"): raised when a
 * key changes meaning or goes; new keys may appear within a version. */
#define VXC_JSON_SCHEMA 1

/* Prints o (taken; NULL on OOM prints an empty line) as one compact line
 * on f, with its schema version. */
static void json_emit(json_t *o, FILE *f) {
  if (o) {
    json_object_set_new(o, "schema", json_integer(VXC_JSON_SCHEMA));
    json_dumpf(o, f, JSON_COMPACT);
  }
  fputc('\n', f);
  json_decref(o);
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
  char target[VXP_TARGET_NAME_MAX];
  vxp_target_name(k->vortex_abi, k->xlen, target);
  json_t *o =
      json_pack("{s:o,s:o,s:o,s:I,s:I,s:I,s:I,s:[I,I,I],s:I,s:I,s:s}", "name", json_text(k->name), "entry",
                json_text(k->entry), "args", args, "args_size", (json_int_t)k->args_size, "launch_offset",
                (json_int_t)k->launch_offset, "buffer_size", (json_int_t)k->buffer_size, "grid_dims",
                (json_int_t)k->grid_dims, "known_block", (json_int_t)k->known_block[0],
                (json_int_t)k->known_block[1], (json_int_t)k->known_block[2], "shared_bytes",
                (json_int_t)k->shared_bytes, "subgroup_size", (json_int_t)k->subgroup_size, "target", target);
  if (o && k->kernel_id != VXP_NO_KERNEL_ID) /* absent in records from before the dispatcher */
    json_object_set_new(o, "kernel_id", json_integer((json_int_t)k->kernel_id));
  return o;
}

/* One JSON object on one line: key, cached, status, the object written
 * (path and size; path null when none was written), kernels, diagnostics,
 * and the lowered IR (when it was asked for) as "lowered_ir". */
static void json_result(FILE *f, const vxp_response *r, const char *object_path, const char *image_path) {
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
  if (o && image_path) { /* the module's .vxbin, written beside the object */
    json_object_set_new(o, "image", json_text(image_path));
    json_object_set_new(o, "image_size", json_integer((json_int_t)r->image_size));
  }
  json_emit(o, f);
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

static void table_result(FILE *f, const vxp_response *r, const char *object_path, const char *image_path) {
  fprintf(f, "key %s (%s)\n", r->key ? shown(r->key) : "-", r->cached ? "cached" : "compiled");
  if (object_path) {
    const char *start = r->nkernels && r->kernels[0].vortex_abi == 3 ? "kernel_main" : "main";
    const char *at = vxp_image_entry(r->kernels, r->nkernels);
    const int three = r->nkernels && r->kernels[0].vortex_abi == 3;
    fprintf(f, "object %s (%zu bytes; link with --defsym=%s=%s%s)\n", object_path, r->object_size, start,
            at ? shown(at) : "<a kernel's entry>",
            vxp_launch_header_size(r->kernels, r->nkernels) ? ", the kernel id first in the launch record"
            : three && r->nkernels > 1 ? "; a launch names its kernel's entry, __vx_kentry_<name>"
                                       : "");
  }
  if (image_path)
    fprintf(f, "image %s (%zu bytes, linked by vortexd with its Vortex SDK)\n", image_path, r->image_size);
  for (uint32_t i = 0; i < r->nkernels; i++) {
    const vxp_kernel *k = &r->kernels[i];
    fprintf(f, "\nKernel: %s\n", shown(k->name));
    if (k->kernel_id != VXP_NO_KERNEL_ID)
      fprintf(f, "  entry: %s (kernel id %u)\n", shown(k->entry), k->kernel_id);
    else
      fprintf(f, "  entry: %s\n", shown(k->entry));
    fprintf(f, "  argument buffer: %u bytes (arguments %u, launch header at %u)\n", k->buffer_size,
            k->args_size, k->launch_offset);
    fprintf(f, "  grid dimensions used: %u", k->grid_dims);
    if (k->known_block[0])
      fprintf(f, ", known block size %ux%ux%u", k->known_block[0], k->known_block[1], k->known_block[2]);
    char target[VXP_TARGET_NAME_MAX];
    vxp_target_name(k->vortex_abi, k->xlen, target);
    fprintf(f, ", static shared memory %u bytes, %u threads per warp, target %s\n", k->shared_bytes,
            k->subgroup_size, target);
    fprintf(f, "  Arguments:\n");
    for (uint32_t j = 0; j < k->nargs; j++) {
      const vxp_arg *a = &k->args[j];
      fprintf(f, "    [%u] offset=%-4u size=%-2u align=%-2u %-7s (%s)\n", a->index, a->offset, a->size,
              a->align, a->kind == VXP_ARG_POINTER ? "pointer" : "scalar", shown(a->type));
    }
  }
}

/* The file name an output is written under in a directory: the last path
 * component of name without its extension, mapped so that it names a plain
 * file inside the output directory whatever the name holds: bytes in
 * [A-Za-z0-9_.-] stay, "::" becomes "__", a leading '.' and every other
 * byte become %HH (two upper-case hex digits), an empty stem becomes
 * "module"; then ext (".o", ".vxbin").  So no '/', no "..", no hidden
 * file.  Writes into out (cap bytes, at least 16; a long stem is cut at a
 * whole character of the mapping). */
static void output_file_name(const char *name, const char *ext, char *out, size_t cap) {
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
    if (o + pl + strlen(ext) + 1 > cap) break;
    memcpy(out + o, piece, pl);
    o += pl;
  }
  memcpy(out + o, ext, strlen(ext) + 1);
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

/* Where a compile or fetch puts the object, as a compiler's -o does. */
typedef enum {
  OUT_NONE,   /* nowhere (--json without -o, fetch without -o) */
  OUT_DIR,    /* DIR/<name>.o (output_file_name): -o DIR/ or an existing directory */
  OUT_FILE,   /* exactly that file: -o FILE */
  OUT_STDOUT, /* -o - */
} out_kind;

typedef struct {
  out_kind kind;
  const char *path; /* DIR or FILE */
} out_target;

/* The target -o ARG names: "-" standard output; an existing directory, or
 * a path ending in '/', the directory the object goes into under its
 * source's name (created when missing, one level, as before); anything else
 * the object file itself. */
static out_target out_target_of(const char *arg) {
  struct stat st;
  if (strcmp(arg, "-") == 0) return (out_target){OUT_STDOUT, arg};
  size_t n = strlen(arg);
  if ((n && arg[n - 1] == '/') || (stat(arg, &st) == 0 && S_ISDIR(st.st_mode)))
    return (out_target){OUT_DIR, arg};
  return (out_target){OUT_FILE, arg};
}

/* Writes the object bytes to stdout (binary, as `cc -o -` does). */
static int write_stdout(const uint8_t *p, size_t n) {
  if (fwrite(p, 1, n, stdout) != n || fflush(stdout) != 0) {
    fprintf(stderr, "vxc: cannot write the object to standard output: %s\n", strerror(errno));
    return -1;
  }
  return 0;
}

/* Writes n bytes of p to fd, then closes it.  Returns 0, or an errno
 * value (fd closed all the same). */
static int write_close(int fd, const void *p, size_t n) {
  int e = -vxp_write_full(fd, p, n, 0);
  if (close(fd) != 0 && !e) e = errno;
  return e;
}

/* Writes n bytes to the device or pipe at path, opened for writing as it
 * is (no creation, no truncation).  Returns 0 or -1 after a message. */
static int write_through(const char *path, const uint8_t *p, size_t n) {
  int fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
  int e = fd < 0 ? errno : write_close(fd, p, n);
  if (e) {
    fprintf(stderr, "vxc: cannot write %s: %s\n", path, strerror(e));
    return -1;
  }
  return 0;
}

/* Writes n bytes of data where t says (for OUT_DIR under name's stem and
 * ext) through a temporary file beside the final one, renamed over it, so
 * a reader never sees half a file (an identical file already there is left
 * in place, its times refreshed); the path written goes to path (cap
 * bytes).  A device or pipe at a file the user named (named) is written
 * into, as cc does; at any other path (one vxc derived: the image beside
 * the object) whatever is there, FIFO or symbolic link, is replaced by the
 * rename, never opened.  Returns 0 or -1 after a message. */
static int write_output(const uint8_t *data, size_t size, out_target t, int named, const char *name,
                        const char *ext, char *path, size_t cap) {
  if (t.kind == OUT_STDOUT) {
    snprintf(path, cap, "-");
    return write_stdout(data, size);
  }
  char dir[4096], tmp[4200];
  if (t.kind == OUT_DIR) {
    if (mkdir(t.path, 0777) != 0 && errno != EEXIST) {
      fprintf(stderr, "vxc: cannot create %s: %s\n", t.path, strerror(errno));
      return -1;
    }
    char file[256];
    output_file_name(name, ext, file, sizeof file);
    size_t n = strlen(t.path);
    if (snprintf(dir, sizeof dir, "%.*s", (int)(n > 1 && t.path[n - 1] == '/' ? n - 1 : n), t.path) >=
            (int)sizeof dir ||
        snprintf(path, cap, "%s/%s", dir, file) >= (int)cap) {
      fprintf(stderr, "vxc: output path too long\n");
      return -1;
    }
  } else if (snprintf(path, cap, "%s", t.path) >= (int)cap || vxp_path_dir(t.path, dir, sizeof dir) != 0) {
    fprintf(stderr, "vxc: output path too long\n");
    return -1;
  }
  /* a device or a pipe (-o /dev/null, a FIFO) is written into, as cc
   * writes into it: never replaced by a file renamed over it */
  struct stat target;
  if (named && t.kind == OUT_FILE && stat(path, &target) == 0 &&
      (S_ISCHR(target.st_mode) || S_ISFIFO(target.st_mode)))
    return write_through(path, data, size);
  if (snprintf(tmp, sizeof tmp, "%s/.vxc-XXXXXX", dir) >= (int)sizeof tmp) {
    fprintf(stderr, "vxc: output path too long\n");
    return -1;
  }
  mode_t mask = umask(0);
  umask(mask);
  if (refresh_if_same(path, data, size, 0666 & ~mask)) return 0;
  int fd = mkstemp(tmp);
  if (fd < 0) {
    fprintf(stderr, "vxc: cannot write %s: %s\n", path, strerror(errno));
    return -1;
  }
  int e = fchmod(fd, 0666 & ~mask) == 0 ? 0 : errno;
  if (e)
    close(fd);
  else
    e = write_close(fd, data, size);
  if (!e && rename(tmp, path) != 0) e = errno;
  if (e) {
    unlink(tmp);
    fprintf(stderr, "vxc: cannot write %s: %s\n", path, strerror(e));
    return -1;
  }
  return 0;
}

/* Writes r's object where t says (name: the source's, for OUT_DIR), as
 * write_output does. */
static int write_object(const vxp_response *r, out_target t, const char *name, char *path, size_t cap) {
  return write_output(r->object, r->object_size, t, 1, name, ".o", path, cap);
}

/* Writes the module's .vxbin image r carries (a daemon with a Vortex SDK)
 * beside the object written to object_path: in an output directory under
 * the source's stem, else as object_path with its extension (if any)
 * replaced by ".vxbin".  Nothing for an object sent to standard output, a
 * device or a pipe, or a reply without an image (path ""). Returns 0 or -1
 * after a message. */
static int write_image(const vxp_response *r, out_target t, const char *name, const char *object_path,
                       char *path, size_t cap) {
  path[0] = '\0';
  struct stat st;
  if (!r->image || t.kind == OUT_STDOUT || t.kind == OUT_NONE ||
      (t.kind == OUT_FILE && stat(object_path, &st) == 0 && !S_ISREG(st.st_mode)))
    return 0;
  if (t.kind == OUT_DIR) return write_output(r->image, r->image_size, t, 0, name, ".vxbin", path, cap);
  char file[4200];
  const char *slash = strrchr(object_path, '/'), *dot = strrchr(object_path, '.');
  size_t stem =
      dot && dot > (slash ? slash + 1 : object_path) ? (size_t)(dot - object_path) : strlen(object_path);
  if (strcmp(object_path + stem, ".vxbin") == 0) stem = strlen(object_path); /* never over the object */
  if (snprintf(file, sizeof file, "%.*s.vxbin", (int)stem, object_path) >= (int)sizeof file) {
    fprintf(stderr, "vxc: output path too long\n");
    return -1;
  }
  return write_output(r->image, r->image_size, (out_target){OUT_FILE, file}, 0, name, ".vxbin", path, cap);
}

/* Reads a whole source: path, or standard input for "-" (a pipe, a file).
 * A directory is refused by name.  Returns the bytes (malloc()) and *len,
 * or NULL after a message. */
static char *read_source(const char *path, size_t *len) {
  int fd = strcmp(path, "-") == 0 ? dup(0) : open(path, O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) {
    fprintf(stderr, "vxc: cannot read %s: %s\n", strcmp(path, "-") ? path : "standard input",
            strerror(errno));
    if (fd >= 0) close(fd);
    return NULL;
  }
  if (S_ISDIR(st.st_mode)) {
    fprintf(stderr, "vxc: %s is a directory, not an MLIR source\n", path);
    close(fd);
    return NULL;
  }
  char *buf = NULL;
  size_t cap = 0, n = 0;
  for (;;) {
    if (n == cap) {
      cap = cap ? cap * 2 : 65536;
      char *nb = realloc(buf, cap);
      if (!nb) {
        free(buf);
        close(fd);
        fprintf(stderr, "vxc: %s: out of memory\n", path);
        return NULL;
      }
      buf = nb;
    }
    ssize_t r = read(fd, buf + n, cap - n);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      fprintf(stderr, "vxc: cannot read %s: %s\n", strcmp(path, "-") ? path : "standard input",
              strerror(errno));
      free(buf);
      close(fd);
      return NULL;
    }
    if (r == 0) break;
    n += (size_t)r;
  }
  close(fd);
  *len = n;
  return buf;
}

/* The source this invocation sent (send_source), kept so that a
 * diagnostic about it can quote its line: vxc sends one per process. */
static struct {
  char *text;
  size_t len;
  const char *name;
} sent;

/* After a diagnostic "NAME:LINE:COL: ..." about the source sent, its line
 * and a caret under the column, as mlir-opt prints them (tabs kept, so the
 * caret lines up; the line escaped and cut at 256 bytes). */
static void print_source_line(const char *diag) {
  size_t nl = sent.name ? strlen(sent.name) : 0;
  unsigned long line = 0, col = 0;
  char *end;
  if (!sent.text || !nl || strncmp(diag, sent.name, nl) != 0 || diag[nl] != ':') return;
  line = strtoul(diag + nl + 1, &end, 10);
  if (*end != ':' || line == 0) return;
  col = strtoul(end + 1, &end, 10);
  if (*end != ':' || col == 0) return;
  const char *p = sent.text, *e = sent.text + sent.len;
  for (unsigned long l = 1; l < line && p < e; l++) {
    const char *q = memchr(p, '\n', (size_t)(e - p));
    p = q ? q + 1 : e;
  }
  if (p >= e) return;
  const char *q = memchr(p, '\n', (size_t)(e - p));
  size_t n = (size_t)((q ? q : e) - p);
  if (n > 256 || col > n + 1) return;
  char text[260];
  memcpy(text, p, n);
  text[n] = '\0';
  if (strlen(text) != n) return; /* a NUL in the line: not quoted */
  put_shown(stderr, text);
  fputc('\n', stderr);
  for (unsigned long i = 0; i + 1 < col; i++)
    fputc(text[i] == '\t' ? '\t' : ' ', stderr);
  fputs("^\n", stderr);
}

/* The daemon's diagnostics, one per line on stderr (escaped), each about
 * the source sent followed by its line and a caret. */
static void print_diagnostics(const vxp_response *r) {
  for (uint32_t i = 0; i < r->ndiags; i++) {
    put_shown(stderr, r->diags[i]), fputc('\n', stderr);
    print_source_line(r->diags[i]);
  }
}

/* Writes a message of several lines (a linker's output the daemon
 * quotes) to f, each line after the first indented by four spaces, so
 * none can pass for a line of vxc's own; each line escaped as above, the
 * whole cut at 4 KiB with "...". */
static void put_lines(FILE *f, const char *s) {
  const char *p = s ? s : "";
  for (size_t left = 4096; *p;) {
    size_t n = strcspn(p, "\n");
    char *line = strndup(p, n < left ? n : left);
    put_shown(f, line ? line : "");
    free(line);
    if (n >= left) {
      fputs("...", f);
      break;
    }
    left -= n;
    p += n;
    if (*p == '\n' && *++p) fputs("\n    ", f);
  }
}

/* "vxc: STATUS: message" for a reply that did not succeed; nothing for a
 * compile error whose diagnostics were printed (they say it all, as a
 * compiler's do). */
static void print_status(const vxp_response *r) {
  if (r->status == VXP_STATUS_COMPILE_ERROR && r->ndiags) return;
  fprintf(stderr, "vxc: %s: ", vxp_status_name(r->status));
  put_lines(stderr, r->message);
  fputc('\n', stderr);
}

/* Prints diagnostics, writes the object where t says (named after name),
 * prints what was asked (the JSON document, the lowered IR, with verbose
 * the table), and maps the response status to an exit code.  Silent on
 * success otherwise, as a compiler is. */
static int finish(const vxp_response *r, int json, int verbose, out_target t, const char *name) {
  print_diagnostics(r);
  if (r->status != VXP_STATUS_OK && !(json && r->status == VXP_STATUS_COMPILE_ERROR)) {
    print_status(r);
    return r->status == VXP_STATUS_INTERNAL || r->status == VXP_STATUS_BAD_REQUEST ? 2 : 1;
  }
  char path[4096], image[4096] = "";
  const char *written = NULL;
  if (r->status == VXP_STATUS_OK && t.kind != OUT_NONE && r->object) {
    if (write_object(r, t, name, path, sizeof path) != 0 ||
        write_image(r, t, name, path, image, sizeof image) != 0)
      return 2;
    written = path;
  }
  if (json) {
    json_result(stdout, r, written, image[0] ? image : NULL);
  } else {
    if (r->lowered_ir) fputs(r->lowered_ir, stdout);
    if (verbose) table_result(t.kind == OUT_STDOUT ? stderr : stdout, r, written, image[0] ? image : NULL);
  }
  return r->status == VXP_STATUS_OK ? 0 : 1;
}

/* Explains why no daemon could be reached at socket (NULL: the default). */
static void report_connect_error(const char *socket, int rc) {
  char def[108] = "", dir[108], err[512];
  if (!socket) vxp_default_socket_path(def, sizeof def);
  const char *path = socket ? socket : def;
  if (rc == -ECHILD) {
    /* the log's last line says why (a bounded read of its tail) */
    char log[160], tail[1024] = "";
    snprintf(log, sizeof log, "%s.log", path);
    int fd = open(log, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
      off_t from = st.st_size > (off_t)sizeof tail - 1 ? st.st_size - (off_t)sizeof tail + 1 : 0;
      ssize_t n = pread(fd, tail, sizeof tail - 1, from);
      tail[n > 0 ? n : 0] = '\0';
    }
    if (fd >= 0) close(fd);
    size_t n = strlen(tail);
    while (n && tail[n - 1] == '\n')
      tail[--n] = '\0';
    const char *last = strrchr(tail, '\n');
    last = last ? last + 1 : tail;
    if (*last)
      fprintf(stderr, "vxc: vortexd did not start: %s (log: %s)\n", shown(last), log);
    else
      fprintf(stderr, "vxc: vortexd did not start; see %s\n", log);
  } else if (rc == -EACCES)
    fprintf(stderr, "vxc: the daemon at %s runs as another user; not trusting it with sources or objects\n",
            path);
  else if ((rc == -EPERM || rc == -ELOOP) && vxp_path_dir(path, dir, sizeof dir) == 0 &&
           vxp_runtime_dir_open(dir, 0, 0, err, sizeof err) < 0)
    fprintf(stderr, "vxc: %s\n", err);
  else
    fprintf(stderr, "vxc: cannot reach vortexd at %s: %s\n", path, vxp_strerror(rc));
}

/* libvortexd_runtime for `vxc run`: $VORTEXD_RUNTIME_LIB, else beside an
 * installed vxc (its library directory), else in the build tree (runtime/). */
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
  const char *tries[] = {"%s/" VXC_BIN_TO_LIB "/libvortexd_runtime.so", "%s/runtime/libvortexd_runtime.so"};
  for (int i = 0; i < 2; i++) {
    if (snprintf(buf, cap, tries[i], self) >= (int)cap) continue;
    if (access(buf, R_OK) == 0) return 0;
  }
  return -1;
}

/* A new file in $TMPDIR (as mktemp(1) puts it; /tmp without one) named
 * after stem, holding n bytes of data; its path into path (cap bytes).
 * Returns 0, or 2 after a message (nothing left behind). */
static int temp_file(const char *stem, const void *data, size_t n, char *path, size_t cap) {
  const char *tmpdir = getenv("TMPDIR");
  if (snprintf(path, cap, "%s/%s-XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp", stem) >= (int)cap) {
    fprintf(stderr, "vxc: $TMPDIR is too long\n");
    return 2;
  }
  int fd = mkstemp(path);
  if (fd < 0) {
    fprintf(stderr, "vxc: cannot create a temporary file: %s\n", strerror(errno));
    return 2;
  }
  int e = write_close(fd, data, n);
  if (e) {
    unlink(path);
    fprintf(stderr, "vxc: cannot write %s: %s\n", path, strerror(e));
    return 2;
  }
  return 0;
}

/* Runs argv[0] (found on PATH) with argv and VORTEXD_SOCKET set to socket
 * when not NULL, and waits for it.  Returns its wait status, or -1 when it
 * could not be started. */
static int run_child(char *const argv[], const char *socket) {
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    if (socket) setenv("VORTEXD_SOCKET", socket, 1); /* vxc is single-threaded */
    execvp(argv[0], argv);
    fprintf(stderr, "vxc: cannot run %s: %s\n", argv[0], strerror(errno));
    _exit(127);
  }
  if (pid < 0) return -1;
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  return st;
}

/* `vxc run`: the host side the daemon lowered, as LLVM bitcode with its
 * entry wrapper (VXP_RUN_ENTRY), run by lli-22 ($VORTEXD_LLI) with
 * libvortexd_runtime, MLIR's runner utilities (printMemref*) and async
 * runtime, and shlibs loaded, the runtime pointed at the daemon vxc used.
 * Returns the exit status. */
static int run_program(const vxp_response *r, const char *socket, const char *const *shlibs, int nshlibs) {
  print_diagnostics(r);
  if (r->status != VXP_STATUS_OK || !r->object) {
    print_status(r);
    return r->status == VXP_STATUS_COMPILE_ERROR ? 1 : 2;
  }
  char rt[4200];
  if (runtime_library(rt, sizeof rt) != 0) {
    fprintf(stderr, "vxc: libvortexd_runtime.so not found (set VORTEXD_RUNTIME_LIB)\n");
    return 2;
  }
  char path[4200];
  if (temp_file("vxc-run", r->object, r->object_size, path, sizeof path) != 0) return 2;
  const char *lli = getenv("VORTEXD_LLI");
  if (!lli || !*lli) lli = "lli-22";
  static char libs[16 + 4][4300];
  char *argv[40];
  int a = 0;
  argv[a++] = (char *)lli;
  argv[a++] = (char *)"--entry-function=" VXP_RUN_ENTRY;
  /* the host code as mlir-runner -O0 generated it: quickly */
  argv[a++] = (char *)"-O0";
  int nlibs = 0;
  snprintf(libs[nlibs++], sizeof libs[0], "--dlopen=%s", rt);
  /* MLIR's runner libraries (printMemref*; mlirAsyncRuntime*, what a host
   * side using the async dialect calls), where they are installed
   * (libmlir-22-dev): a program that calls them without fails to link */
  static const char *const runner_libs[] = {"libmlir_runner_utils.so", "libmlir_c_runner_utils.so",
                                            "libmlir_async_runtime.so"};
  for (int i = 0; i < 3; i++) {
    char lib[4200];
    snprintf(lib, sizeof lib, "%s/%s", VXC_LLVM_LIBDIR, runner_libs[i]);
    if (access(lib, R_OK) == 0) snprintf(libs[nlibs++], sizeof libs[0], "--dlopen=%s", lib);
  }
  for (int i = 0; i < nshlibs; i++)
    snprintf(libs[nlibs++], sizeof libs[0], "--dlopen=%s", shlibs[i]);
  for (int i = 0; i < nlibs; i++)
    argv[a++] = libs[i];
  argv[a++] = path;
  argv[a] = NULL;
  int st = run_child(argv, socket); /* the runtime asks the daemon vxc used */
  unlink(path);
  if (st < 0) return 2;
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
    json_emit(o, stdout);
  }
  return 0;
}

/* The counters in the OpenMetrics text format (what Prometheus scrapes, and
 * node_exporter's textfile collector reads), from VXP_STATS_COUNTERS:
 * counters as vortexd_<name>_total, levels and settings as gauges, the
 * durations in seconds, the compile times as a histogram; ending in
 * "# EOF". */
/* One OpenMetrics counter or gauge: vortexd_<name>, with _total for a
 * counter's sample. */
static void print_metric(const char *name, const char *type, const char *help, uint64_t v) {
  printf("# TYPE vortexd_%s %s\n# HELP vortexd_%s %s\nvortexd_%s%s %llu\n", name, type, name, help, name,
         strcmp(type, "counter") ? "" : "_total", (unsigned long long)v);
}

static void print_openmetrics(const vxp_stats *s) {
#define VXC__METRIC(name, kind, what) VXC__METRIC_##kind(name, what)
#define VXC__METRIC_COUNTER(name, what) print_metric(#name, "counter", what, s->name);
#define VXC__METRIC_GAUGE(name, what) print_metric(#name, "gauge", what, s->name);
#define VXC__METRIC_TIME(name, what) /* in seconds, below */
  VXP_STATS_COUNTERS(VXC__METRIC)
#undef VXC__METRIC
#undef VXC__METRIC_COUNTER
#undef VXC__METRIC_GAUGE
#undef VXC__METRIC_TIME
  printf("# TYPE vortexd_time_saved_seconds counter\n# HELP vortexd_time_saved_seconds Compile time the hits "
         "saved.\nvortexd_time_saved_seconds_total %.3f\n",
         s->saved_ms / 1000.0);
  /* buckets cumulative, as OpenMetrics has them; le in seconds */
  static const uint32_t bounds[] = VXP_COMPILE_BUCKET_BOUNDS_US;
  printf("# TYPE vortexd_compile_seconds histogram\n# HELP vortexd_compile_seconds Time each compile took, "
         "since the daemon started.\n");
  uint64_t total = 0;
  for (uint32_t i = 0; i < VXP_COMPILE_BUCKETS; i++) {
    total += s->compile_buckets[i];
    if (i < sizeof bounds / sizeof *bounds)
      printf("vortexd_compile_seconds_bucket{le=\"%g\"} %llu\n", bounds[i] / 1e6, (unsigned long long)total);
    else
      printf("vortexd_compile_seconds_bucket{le=\"+Inf\"} %llu\n", (unsigned long long)total);
  }
  printf("vortexd_compile_seconds_count %llu\nvortexd_compile_seconds_sum %.6f\n", (unsigned long long)total,
         s->compile_sum_us / 1e6);
  printf("# TYPE vortexd_uptime_seconds gauge\n# HELP vortexd_uptime_seconds Since the daemon started.\n"
         "vortexd_uptime_seconds %.3f\n# EOF\n",
         s->uptime_ms / 1000.0);
}

static void print_stats(const vxp_stats *s, const char *server, const char *socket, int system_socket,
                        int json) {
  /* every request is a hit, a miss or joined another's compile; the ratio
   * counts those answered without a compile of their own */
  uint64_t asked = s->hits + s->misses + s->joined;
  double ratio = asked ? 100.0 * (double)(s->hits + s->joined) / (double)asked : 0.0;
  if (json) {
    /* every counter under its name (VXP_STATS_COUNTERS), those of the
     * remote level (l2_*) without the prefix in "remote", with one */
    json_t *o = json_object(), *l2 = s->remote ? json_pack("{s:s}", "storage", s->remote) : NULL;
#define VXC__JSON(name, kind, what)                                                                          \
  if (strncmp(#name, "l2_", 3) != 0)                                                                         \
    json_object_set_new(o, #name, json_integer((json_int_t)s->name));                                        \
  else if (l2)                                                                                               \
    json_object_set_new(l2, #name + 3, json_integer((json_int_t)s->name));
    if (o) {
      VXP_STATS_COUNTERS(VXC__JSON)
      json_object_del(o, "compile_sum_us"); /* in the OpenMetrics histogram only */
      json_object_set_new(o, "hit_ratio", json_real(ratio / 100.0));
    }
#undef VXC__JSON
    if (o && l2) {
      json_object_set_new(o, "l1_hits",
                          json_integer((json_int_t)(s->hits >= s->l2_hits ? s->hits - s->l2_hits : 0)));
      json_object_set_new(o, "remote", l2);
    } else if (l2) {
      json_decref(l2);
    }
    if (o) {
      json_object_set_new(o, "socket", json_text(socket));
      json_object_set_new(o, "system_service", json_boolean(system_socket));
      json_object_set_new(o, "cache_error", s->cache_error ? json_text(s->cache_error) : json_null());
    }
    json_emit(o, stdout);
    return;
  }
  printf("socket            %s (%s)\n", shown(socket),
         system_socket ? "the system service" : "this user's daemon");
  if (s->cache_error) /* everything is compiled, nothing kept: say why first */
    printf("cache             none: %s\n", shown(s->cache_error));
  printf("server            %s\n"
         "hits              %llu\nmisses            %llu\njoined            %llu\nhit ratio         %.1f %%\n"
         "compile errors    %llu\nentries           %llu\nbytes             %llu of %llu\n"
         "evictions         %llu\ncorrupt (dropped) %llu\ntime saved        %.1f s\n"
         "requests          %llu\nworkers           %llu\nworker restarts   %llu\n"
         "refused           %llu\ntimeouts          %llu\nuptime            %.1f s\n",
         server ? shown(server) : "?", (unsigned long long)s->hits, (unsigned long long)s->misses,
         (unsigned long long)s->joined, ratio, (unsigned long long)s->compile_errors,
         (unsigned long long)s->entries, (unsigned long long)s->bytes, (unsigned long long)s->max_bytes,
         (unsigned long long)s->evictions, (unsigned long long)s->corrupt, s->saved_ms / 1000.0,
         (unsigned long long)s->requests, (unsigned long long)s->workers,
         (unsigned long long)s->worker_restarts, (unsigned long long)s->refused,
         (unsigned long long)s->timeouts, s->uptime_ms / 1000.0);
  if (s->remote)
    printf(
        "remote storage    %s\n"
        "  L1 hits         %llu\n  L2 hits         %llu\n  L2 misses       %llu\n"
        "  L2 errors       %llu (corrupt values %llu, unsigned or untrusted %llu)\n  L2 timeouts     %llu\n"
        "  L2 writes       %llu (dropped %llu)\n  L2 bytes        %llu down, %llu up\n"
        "  L2 leases       %llu (waits %llu, expired %llu)\n",
        shown(s->remote), (unsigned long long)(s->hits >= s->l2_hits ? s->hits - s->l2_hits : 0),
        (unsigned long long)s->l2_hits, (unsigned long long)s->l2_misses, (unsigned long long)s->l2_errors,
        (unsigned long long)s->l2_corrupt, (unsigned long long)s->l2_rejected,
        (unsigned long long)s->l2_timeouts, (unsigned long long)s->l2_writes,
        (unsigned long long)s->l2_dropped, (unsigned long long)s->l2_bytes_down,
        (unsigned long long)s->l2_bytes_up, (unsigned long long)s->l2_leases,
        (unsigned long long)s->l2_lease_waits, (unsigned long long)s->l2_lease_expired);
  else
    printf("remote storage    none\n");
}

/* ---- commands ---- */

/* The options a command accepts (bits of command.opts). */
enum {
  OPT_JSON = 1 << 0,    /* --json */
  OPT_OUT = 1 << 1,     /* -o */
  OPT_COMPILE = 1 << 2, /* -O, --emit-ir, --warp-size, --shuffle-insns, --source-name, --target */
  OPT_HOST = 1 << 3,    /* --host */
  OPT_KERNEL = 1 << 4,  /* --kernel */
  OPT_MAXSIZE = 1 << 5, /* --max-size */
  OPT_SHLIB = 1 << 6,   /* --shared-libs */
  OPT_VERBOSE = 1 << 7, /* -v */
  OPT_FORMAT = 1 << 8,  /* --format */
  OPT_LIMIT = 1 << 9,   /* --limit */
  OPT_DISASM = 1 << 10, /* -d, --disassemble */
  OPT_ENTRY = 1 << 11,  /* -e, --entry-point-result */
};

/* What one invocation asked for, parsed. */
typedef struct {
  vxp_config pc;
  const char *socket;
  int system_socket; /* socket is the system service's (vxp_client_socket_path) */
  int spawn;
  int json, verbose, host, openmetrics, disassemble;
  uint32_t limit;                   /* ls: --limit */
  const char *entry, *entry_result; /* run: -e, --entry-point-result */
  const char *out;                  /* -o's argument, or NULL */
  const char *kernel, *max_size, *source_name;
  const char *target; /* --target, or NULL: the configuration's */
  uint64_t prune_to;  /* prune: --max-size, else max_cache_size (bytes), checked in main */
  const char *shlibs[16];
  int nshlibs;
  vxc_compile_options co;
  char **args; /* positional arguments */
  int nargs;
} invocation;

typedef struct command command;
struct command {
  const char *name;
  const char *synopsis; /* after "vxc NAME" */
  const char *help;     /* what it does, its options */
  int nargs;            /* positional arguments */
  unsigned opts;        /* OPT_* accepted */
  int spawn;            /* may start a daemon */
  vxp_op op;            /* admin op, or 0 */
  int (*run)(const command *cm, invocation *in, vxc_conn *conn);
};

static int cmd_compile(const command *cm, invocation *in, vxc_conn *conn);
static int cmd_fetch(const command *cm, invocation *in, vxc_conn *conn);
static int cmd_run(const command *cm, invocation *in, vxc_conn *conn);
static int cmd_stats(const command *cm, invocation *in, vxc_conn *conn);
static int cmd_log_stats(const command *cm, invocation *in, vxc_conn *conn);
static int cmd_explain(const command *cm, invocation *in, vxc_conn *conn);
static int cmd_admin(const command *cm, invocation *in, vxc_conn *conn);
static int cmd_ls(const command *cm, invocation *in, vxc_conn *conn);
static int cmd_inspect(const command *cm, invocation *in, vxc_conn *conn);
static int cmd_rm(const command *cm, invocation *in, vxc_conn *conn);

/* command.nargs for a command whose one argument may be left out */
#define NARGS_OPTIONAL (-1)

static const command commands[] = {
    {"compile",
     "FILE.mlir|- [-o FILE|DIR/|-] [-v] [--json] [-O 0-3] [--emit-ir] [--warp-size N] [--shuffle-insns]\n"
     "            [--target TARGET] [--source-name NAME] [--host] [--recache]",
     "Compiles every kernel of the module through vortexd into one object, as `cc -c` would: FILE.o in\n"
     "the current directory, or -o FILE, or -o DIR/ (an existing directory, or a path ending in '/')\n"
     "for DIR/FILE.o, or -o - for standard output. '-' reads the source from standard input\n"
     "(diagnostics and the object's debug info then name --source-name, default <stdin>). Silent on\n"
     "success: -v prints each kernel's entry symbol and argument table, --json one JSON document\n"
     "(and writes a file only with -o), --emit-ir the lowered MLIR. -O: LLVM's optimization level\n"
     "(default 2); --warp-size: threads per warp of the device (default 4); --shuffle-insns:\n"
     "gpu.shuffle with Vortex's shuffle instructions; --target: the device's Vortex kernel ABI and\n"
     "register width, vortex2-rv32 (default: the configuration's `target`), vortex2-rv64, vortex3-rv32 or\n"
     "vortex3-rv64. --host compiles the program's host side into FILE.host.o instead, to link with\n"
     "-lvortexd_runtime. --recache (or VORTEXD_RECACHE=1) compiles again and replaces the cached entry;\n"
     "VORTEXD_DISABLE=1 compiles without reading or writing the cache (ccache's CCACHE_RECACHE and\n"
     "CCACHE_DISABLE).",
     1, OPT_JSON | OPT_OUT | OPT_COMPILE | OPT_HOST | OPT_VERBOSE, 1, 0, cmd_compile},
    {"fetch", "KEY [--kernel NAME] [-o FILE|DIR/|-] [-v] [--json]",
     "Fetches a cached entry by its key, or a unique prefix of it of at least 4 hex digits (as git\n"
     "takes an abbreviated object name): with -o writes its object (DIR/KEY.o for a directory); -v\n"
     "prints its kernels' argument tables, --json one JSON document. Exit status 1 when the cache\n"
     "has no such entry, 2 when the prefix names several.",
     1, OPT_JSON | OPT_OUT | OPT_KERNEL | OPT_VERBOSE, 1, 0, cmd_fetch},
    {"ls", "[KEY-PREFIX] [--json] [--limit N]",
     "Lists the cache's entries, most recently used first: key prefix, source name, kernels, size,\n"
     "age (since last use) and hits; with a prefix, only the keys that start with it. At most\n"
     "--limit N entries (default 100, at most 1000); --json one JSON document.",
     NARGS_OPTIONAL, OPT_JSON | OPT_LIMIT, 1, 0, cmd_ls},
    {"inspect", "KEY-PREFIX [--json] [-d|--disassemble]",
     "Everything the cache knows of one entry: source name, the keyed options, compile time, when\n"
     "stored and last used, hits, and each kernel's entry symbol and argument table; -d adds the\n"
     "object's disassembly (llvm-objdump-22). Reads the entry as fetch does (a hit).",
     1, OPT_JSON | OPT_DISASM, 1, 0, cmd_inspect},
    {"explain",
     "FILE.mlir|- [-O 0-3] [--target TARGET] [--warp-size N] [--shuffle-insns] [--source-name NAME] [--json]",
     "Why a compile would miss: whether compiling FILE with these options would be answered from\n"
     "the daemon's local cache and, if not, how it differs from the latest entries of the same\n"
     "source name: the first line at which the source text differs (quoted from FILE), and each\n"
     "keyed input that differs (an option, the target, the toolchain: LLVM, the lowering's ABI,\n"
     "vortexd's version, the Vortex SDK). Compiles nothing, counts no hit. Exit status 0 for a\n"
     "hit, 1 for a miss.",
     1, OPT_JSON | OPT_COMPILE, 1, 0, cmd_explain},
    {"run",
     "FILE.mlir [-e FUNC] [--entry-point-result void|i32|i64|f32] [--shared-libs LIB]... [-O 0-3]\n"
     "            [--target TARGET] [--warp-size N] [--shuffle-insns] [--recache]",
     "Runs a whole GPU-dialect program (host main and kernels) like mlir-runner: its host side\n"
     "lowered by vortexd (the async dialect too, with MLIR's async runtime library), executed by\n"
     "lli-22 ($VORTEXD_LLI) with libvortexd_runtime, which gets each kernel from vortexd at its first\n"
     "launch and runs it on $VORTEXD_DEVICE. What mlir-opt-22 compiled with vortexd's dialect plugin\n"
     "runs as it is. -e and --entry-point-result are mlir-runner's: the function\n"
     "to start (default main) and what it returns (default void; a value is printed). -O, --target,\n"
     "--warp-size and --shuffle-insns: what the kernels are compiled for, as compile takes them\n"
     "(written into the program, so the runtime asks for exactly that). Temporary files go to\n"
     "$TMPDIR.",
     1, OPT_SHLIB | OPT_ENTRY | OPT_COMPILE, 1, 0, cmd_run},
    {"stats", "[--json | --format table|json|openmetrics]",
     "The daemon's and the cache's counters; --format openmetrics prints them in the OpenMetrics text\n"
     "format, for Prometheus or node_exporter's textfile collector.",
     0, OPT_JSON | OPT_FORMAT, 1, 0, cmd_stats},
    {"zero-stats", "", "Resets the counters (ccache -z).", 0, 0, 1, VXP_OP_ZERO_STATS, cmd_admin},
    {"log-stats", "[FILE] [--json]",
     "Per-build statistics (ccache's stats_log): what the compiles that logged to FILE (default\n"
     "$VORTEXD_STATS_LOG) got: hits, misses, joined (answered by a compile another request had\n"
     "started), compile errors and failures, and the hit ratio. Every compile of a process whose\n"
     "environment sets VORTEXD_STATS_LOG (vxc, the runtime, the CMake rules) appends a line to that\n"
     "file; start a build with a new file to count that build alone. Needs no daemon.",
     NARGS_OPTIONAL, OPT_JSON, 0, 0, cmd_log_stats},
    {"verify", "",
     "Checks the cache database and every entry's checksum, drops the damaged entries; exit status 1\n"
     "when some were.",
     0, 0, 1, VXP_OP_VERIFY, cmd_admin},
    {"rm", "KEY-PREFIX",
     "Deletes one cache entry, named by its key or a unique prefix of it (as fetch takes it), from\n"
     "the local cache; a shared level (Redis) evicts on its own. Exit status 1 when there is no such\n"
     "entry, 2 when the prefix names several.",
     1, 0, 1, 0, cmd_rm},
    {"clear", "", "Deletes every cache entry (ccache -C).", 0, 0, 1, VXP_OP_CLEAR, cmd_admin},
    {"prune", "[--max-size SIZE]",
     "Evicts least recently used entries down to SIZE (bytes, or with K/M/G/T; default: the\n"
     "configured max_cache_size).",
     0, OPT_MAXSIZE, 1, VXP_OP_PRUNE, cmd_admin},
    {"stop", "",
     "Stops the daemon and returns once it has exited (cache closed, lock released); never starts one.\n"
     "Exit status 1 when none runs.",
     0, 0, 0, VXP_OP_STOP, cmd_admin},
    {"config", "[--json]", "The effective configuration and where each value came from (ccache -p).", 0,
     OPT_JSON, 0, 0, NULL},
    {"help", "[COMMAND]", "This text, or one command's.", 0, 0, 0, 0, NULL},
};

static const command *command_named(const char *name) {
  for (size_t k = 0; k < sizeof commands / sizeof *commands; k++)
    if (strcmp(commands[k].name, name) == 0) return &commands[k];
  return NULL;
}

static void usage(FILE *f) {
  fputs("usage: vxc [--socket PATH] [--no-spawn] COMMAND [ARGS]\n"
        "       vxc --version | --help | help COMMAND | COMMAND --help\n\ncommands:\n",
        f);
  for (size_t k = 0; k < sizeof commands / sizeof *commands; k++)
    fprintf(f, "  %-10s %s\n", commands[k].name, commands[k].synopsis);
  fputs("\nStarts vortexd (beside vxc, else on PATH) when none answers, unless --no-spawn.\n"
        "Exit status: 0 success; 1 compile error, an input that cannot be read, not found, damaged entries;\n"
        "2 daemon or I/O failure; 64 usage; 78 configuration (sysexits.h's EX_USAGE and EX_CONFIG).\n",
        f);
}

static void command_help(FILE *f, const command *cm) {
  fprintf(f, "usage: vxc [--socket PATH] [--no-spawn] %s %s\n\n%s\n", cm->name, cm->synopsis, cm->help);
}

/* A usage error: what is wrong, and where the help is.  Returns 64. */
__attribute__((format(printf, 2, 3))) static int usage_error(const command *cm, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "vxc%s%s: ", cm ? " " : "", cm ? cm->name : "");
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, " (see `vxc %s%s--help`)\n", cm ? cm->name : "", cm ? " " : "");
  if (cm) fprintf(stderr, "usage: vxc %s %s\n", cm->name, cm->synopsis);
  return 64;
}

/* The option of opts named by letter or long name c, for messages. */
static const char *option_name(int c, const struct option *opts) {
  static char one[3];
  if (c < 256) {
    one[0] = '-', one[1] = (char)c, one[2] = '\0';
    return one;
  }
  for (; opts->name; opts++)
    if (opts->val == c) return opts->name;
  return "?";
}

/* Long options of every command (getopt_long values past the short ones). */
enum {
  O_JSON = 256,
  O_IR,
  O_WARP,
  O_KERNEL,
  O_SHFL,
  O_TARGET,
  O_MAXSIZE,
  O_SHLIB,
  O_HOST,
  O_SRC,
  O_HELP,
  O_FORMAT,
  O_LIMIT,
  O_RESULT,
  O_RECACHE
};

/* Applies option c (its value, NULL for a flag) to in, checking the
 * value.  0, or the usage error's status (said on stderr). */
static int apply_option(const command *cm, int c, const char *value, invocation *in) {
  switch (c) {
  case 'o': in->out = value; break;
  case 'v': in->verbose = 1; break;
  case 'O':
    if (value[0] < '0' || value[0] > '3' || value[1])
      return usage_error(cm, "-O takes 0, 1, 2 or 3, not '%s'", value);
    in->co.opt_level = (uint32_t)(value[0] - '0');
    break;
  case O_JSON: in->json = 1; break;
  case O_FORMAT:
    if (strcmp(value, "openmetrics") == 0)
      in->openmetrics = 1;
    else if (strcmp(value, "json") == 0)
      in->json = 1;
    else if (strcmp(value, "table") != 0)
      return usage_error(cm, "--format takes table, json or openmetrics, not '%s'", value);
    break;
  case O_IR: in->co.emit_ir = 1; break;
  case O_RECACHE: in->co.cache = VXP_CACHE_RECACHE; break;
  case O_HOST: in->host = 1; break;
  case O_WARP: {
    char *end = NULL;
    unsigned long w = strtoul(value, &end, 10);
    if (!*value || *end || w == 0 || w > 32 || (w & (w - 1)))
      return usage_error(cm, "--warp-size takes a power of two from 1 to 32, not '%s'", value);
    in->co.warp_size = (uint32_t)w;
    break;
  }
  case O_KERNEL: in->kernel = value; break;
  case O_SHFL: in->co.shuffle_insns = 1; break;
  case O_TARGET:
    if (vxp_target_parse(value, &in->co.vortex_abi, &in->co.xlen) != 0)
      return usage_error(
          cm, "--target takes vortex2-rv32, vortex2-rv64, vortex3-rv32 or vortex3-rv64, not '%s'", value);
    in->target = value;
    break;
  case O_MAXSIZE: in->max_size = value; break;
  case O_SRC: in->source_name = value; break;
  case 'd': in->disassemble = 1; break;
  case 'e':
    if (!*value || strlen(value) > 255 ||
        strspn(value, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                      "0123456789_.$") != strlen(value))
      return usage_error(cm, "-e takes a function name, not '%s'", shown(value));
    in->entry = value;
    break;
  case O_RESULT:
    if (strcmp(value, "void") && strcmp(value, "i32") && strcmp(value, "i64") && strcmp(value, "f32"))
      return usage_error(cm, "--entry-point-result takes void, i32, i64 or f32, not '%s'", shown(value));
    in->entry_result = value;
    break;
  case O_LIMIT: {
    char *end = NULL;
    unsigned long n = strtoul(value, &end, 10);
    if (!*value || *end || n == 0 || n > VXP_MAX_LIST_ENTRIES)
      return usage_error(cm, "--limit takes a count from 1 to %u, not '%s'", VXP_MAX_LIST_ENTRIES, value);
    in->limit = (uint32_t)n;
    break;
  }
  case O_SHLIB:
    if (in->nshlibs == 16) return usage_error(cm, "at most 16 --shared-libs");
    in->shlibs[in->nshlibs++] = value;
    break;
  }
  return 0;
}

/* The operands and option combinations of an invocation whose options
 * parse_command read: each command's count of operands, the options that
 * exclude each other.  0, or the usage error's status (said on stderr). */
static int check_arguments(const command *cm, invocation *in) {
  if (strcmp(cm->name, "help") == 0) {
    if (in->nargs > 1) return usage_error(cm, "takes at most one command name");
    return 0;
  }
  if (cm->nargs == NARGS_OPTIONAL) {
    if (in->nargs > 1)
      return usage_error(cm, "takes at most one key prefix, got %d ('%s', '%s'%s)", in->nargs, in->args[0],
                         in->args[1], in->nargs > 2 ? ", ..." : "");
  } else if (in->nargs != cm->nargs) {
    if (cm->nargs == 0 && cm->op == VXP_OP_PRUNE)
      return usage_error(cm,
                         "unexpected argument '%s'; the size goes with --max-size (vxc prune --max-size %s)",
                         in->args[0], in->args[0]);
    if (cm->nargs == 0) return usage_error(cm, "unexpected argument '%s'", in->args[0]);
    if (in->nargs == 0)
      return usage_error(cm, "missing %s",
                         cm->run == cmd_fetch || cm->run == cmd_inspect
                             ? "the cache key (or a unique prefix of it)"
                             : "the source file (FILE.mlir, or - for standard input)");
    return usage_error(cm, "takes one %s, got %d ('%s', '%s'%s)",
                       cm->run == cmd_fetch || cm->run == cmd_inspect ? "key" : "source", in->nargs,
                       in->args[0], in->args[1], in->nargs > 2 ? ", ..." : "");
  }
  if (in->out && strcmp(in->out, "-") == 0 && (in->json || in->co.emit_ir))
    return usage_error(cm, "-o - writes the object to standard output: not with %s",
                       in->json ? "--json" : "--emit-ir");
  if (in->host && (in->co.emit_ir || in->verbose || in->source_name))
    return usage_error(cm, "--host takes -o, --json and the options its kernels are compiled with (-O, "
                           "--target, --warp-size, --shuffle-insns), not --emit-ir, -v or --source-name");
  if (cm->run == cmd_run && (in->co.emit_ir || in->source_name))
    return usage_error(cm, "run takes the options its kernels are compiled with (-O, --target, --warp-size, "
                           "--shuffle-insns), not --emit-ir or --source-name");
  if (cm->run == cmd_explain && in->co.emit_ir)
    return usage_error(cm, "explain takes the options a compile is keyed by, not --emit-ir (never cached)");
  if (in->source_name && !*in->source_name) return usage_error(cm, "--source-name needs a name");
  if (in->disassemble && in->json) return usage_error(cm, "-d prints a listing: not with --json");
  return 0;
}

/* Parses a command's own options and arguments into in (argv[0] is the
 * command's name).  Returns 0, -1 for --help (printed), or 64 after a
 * message naming the problem. */
static int parse_command(const command *cm, int argc, char **argv, invocation *in) {
  static const struct option opts[] = {{"json", no_argument, NULL, O_JSON},
                                       {"emit-ir", no_argument, NULL, O_IR},
                                       {"host", no_argument, NULL, O_HOST},
                                       {"warp-size", required_argument, NULL, O_WARP},
                                       {"kernel", required_argument, NULL, O_KERNEL},
                                       {"shuffle-insns", no_argument, NULL, O_SHFL},
                                       {"target", required_argument, NULL, O_TARGET},
                                       {"max-size", required_argument, NULL, O_MAXSIZE},
                                       {"shared-libs", required_argument, NULL, O_SHLIB},
                                       {"source-name", required_argument, NULL, O_SRC},
                                       {"verbose", no_argument, NULL, 'v'},
                                       {"help", no_argument, NULL, O_HELP},
                                       {"format", required_argument, NULL, O_FORMAT},
                                       {"limit", required_argument, NULL, O_LIMIT},
                                       {"disassemble", no_argument, NULL, 'd'},
                                       {"entry-point-result", required_argument, NULL, O_RESULT},
                                       {"recache", no_argument, NULL, O_RECACHE},
                                       {NULL, 0, NULL, 0}};
  static const struct {
    int c;
    unsigned need;
  } needs[] = {
      {O_FORMAT, OPT_FORMAT}, {O_JSON, OPT_JSON},      {O_IR, OPT_COMPILE},     {O_HOST, OPT_HOST},
      {O_WARP, OPT_COMPILE},  {O_KERNEL, OPT_KERNEL},  {O_SHFL, OPT_COMPILE},   {O_MAXSIZE, OPT_MAXSIZE},
      {O_SHLIB, OPT_SHLIB},   {O_SRC, OPT_COMPILE},    {'o', OPT_OUT},          {'O', OPT_COMPILE},
      {'v', OPT_VERBOSE},     {O_LIMIT, OPT_LIMIT},    {'d', OPT_DISASM},       {'e', OPT_ENTRY},
      {O_RESULT, OPT_ENTRY},  {O_TARGET, OPT_COMPILE}, {O_RECACHE, OPT_COMPILE}};
  int c;
  opterr = 0; /* our messages, not getopt's */
  optind = 1;
  while ((c = getopt_long(argc, argv, ":o:O:vhde:", opts, NULL)) != -1) {
    if (c == 'h' || c == O_HELP) {
      command_help(stdout, cm);
      return -1;
    }
    if (c == '?')
      return optopt ? usage_error(cm, "unknown option '-%c'", optopt)
                    : usage_error(cm, "unknown option '%s'", argv[optind - 1]);
    if (c == ':') return usage_error(cm, "option '%s' needs a value", argv[optind - 1]);
    for (size_t k = 0; k < sizeof needs / sizeof *needs; k++)
      if (needs[k].c == c && !(cm->opts & needs[k].need))
        return usage_error(cm, "'%s%s' is not an option of this command", c < 256 ? "" : "--",
                           option_name(c, opts));
    int rc = apply_option(cm, c, optarg, in);
    if (rc) return rc;
  }
  in->args = argv + optind;
  in->nargs = argc - optind;
  return check_arguments(cm, in);
}

/* A request that got no answer (rc: libvxc's negative errno): said, and
 * the exit status of a daemon or I/O failure. */
static int request_failed(int rc) {
  fprintf(stderr, "vxc: request failed: %s\n", vxp_strerror(rc));
  return 2;
}

/* What send_source asks of the daemon. */
enum { SEND_COMPILE, SEND_HOST_OBJECT, SEND_RUN };

/* The --entry-point-result name as the protocol's value. */
static vxp_entry_result entry_result_of(const char *name) {
  return !name                  ? VXP_RESULT_VOID
         : !strcmp(name, "i32") ? VXP_RESULT_I32
         : !strcmp(name, "i64") ? VXP_RESULT_I64
         : !strcmp(name, "f32") ? VXP_RESULT_F32
                                : VXP_RESULT_VOID;
}

/* Reads the command's source (its path, or stdin for '-') and sends it:
 * a compile (SEND_COMPILE), a host lowering with the host object
 * (SEND_HOST_OBJECT), or one with the bitcode `vxc run` runs (SEND_RUN:
 * -e and --entry-point-result).  *name is what diagnostics and the object
 * call the source (--source-name, else the path, else <stdin>).  Returns
 * 0 with the reply in *r (caller clears it), or the exit status after a
 * message. */
static int send_source(const invocation *in, vxc_conn *conn, int what, vxp_response *r, const char **name) {
  *name = in->source_name ? in->source_name : strcmp(in->args[0], "-") ? in->args[0] : "<stdin>";
  size_t len = 0;
  char *src = read_source(in->args[0], &len);
  if (!src) return 1; /* an input that cannot be read: 1, as cc and mlir-opt */
  int rc = what == SEND_HOST_OBJECT ? vxc_lower_host_with(conn, src, len, *name, VXC_HOST_OBJECT, &in->co, r)
           : what == SEND_RUN       ? vxc_lower_host_run(conn, src, len, *name, &in->co, in->entry,
                                                         entry_result_of(in->entry_result), r)
                                    : vxc_compile(conn, src, len, *name, &in->co, r);
  free(sent.text);
  sent.text = src, sent.len = len, sent.name = *name; /* quoted by the diagnostics */
  return rc ? request_failed(rc) : 0;
}

/* The object's name in a directory for a source named name: "stdin" for
 * standard input without --source-name. */
static const char *object_stem(const invocation *in, const char *name) {
  return strcmp(in->args[0], "-") == 0 && !in->source_name ? "stdin" : name;
}

static int cmd_compile(const command *cm, invocation *in, vxc_conn *conn) {
  (void)cm;
  const char *name;
  vxp_response r;
  int status = send_source(in, conn, in->host ? SEND_HOST_OBJECT : SEND_COMPILE, &r, &name);
  if (status) return status;
  if (in->host) { /* the program's host side: FILE.host.o */
    print_diagnostics(&r);
    if (r.status != VXP_STATUS_OK || !r.object) {
      print_status(&r);
      status = r.status == VXP_STATUS_COMPILE_ERROR ? 1 : 2;
    } else {
      const char *stem = object_stem(in, name), *base = strrchr(stem, '/');
      base = base ? base + 1 : stem;
      const char *dot = strrchr(base, '.');
      char host_name[1024], path[4096];
      /* "prog.host.x": the object's name replaces the last extension
       * (output_file_name), so that prog.mlir gives prog.host.o */
      snprintf(host_name, sizeof host_name, "%.*s.host.x",
               (int)(dot && dot != base ? dot - base : (long)strlen(base)), base);
      status = write_object(&r, in->out ? out_target_of(in->out) : (out_target){OUT_DIR, "."}, host_name,
                            path, sizeof path) != 0
                   ? 2
                   : 0;
      if (status == 0 && in->json) {
        json_t *o = json_pack("{s:s,s:o,s:I}", "status", "ok", "host_object", json_text(path), "object_size",
                              (json_int_t)r.object_size);
        json_emit(o, stdout);
      }
    }
  } else {
    /* as cc -c: FILE.o here unless -o; --json alone describes and writes nothing */
    out_target t = in->out    ? out_target_of(in->out)
                   : in->json ? (out_target){OUT_NONE, NULL}
                              : (out_target){OUT_DIR, "."};
    status = finish(&r, in->json, in->verbose, t, object_stem(in, name));
  }
  vxp_response_clear(&r);
  return status;
}

/* One keyed input of an explain reply: a part of the key ("NAME=VALUE",
 * or the daemon's "vortexd VERSION"), the lowering's fingerprint split at
 * its ';'. */
typedef struct {
  const char *name, *value;
  int name_len, value_len;
} key_input;

/* Splits inputs (one part a line; modified) into at most cap items. */
static int key_inputs_split(char *inputs, key_input *v, int cap) {
  int n = 0;
  for (char *line = inputs, *next; line && *line; line = next) {
    next = strchr(line, '\n');
    if (next) *next++ = '\0';
    for (char *item = line, *after; item && *item && n < cap; item = after) {
      after = strchr(item, ';');
      if (after) *after++ = '\0';
      char *eq = strchr(item, '=');
      if (!eq && strncmp(item, "vortexd ", 8) == 0)
        v[n++] = (key_input){"vortexd version", item + 8, 15, (int)strlen(item + 8)};
      else if (eq)
        v[n++] = (key_input){item, eq + 1, (int)(eq - item), (int)strlen(eq + 1)};
      else
        v[n++] = (key_input){"input", item, 5, (int)strlen(item)};
    }
  }
  return n;
}

/* The value of the item named like want among v, or NULL. */
static const key_input *key_input_find(const key_input *v, int n, const key_input *want) {
  for (int i = 0; i < n; i++)
    if (v[i].name_len == want->name_len && memcmp(v[i].name, want->name, (size_t)want->name_len) == 0)
      return &v[i];
  return NULL;
}

/* Line number line (1-based) of text (len bytes) into *start / *n; 0 when
 * it has none. */
static int source_line(const char *text, size_t len, uint64_t line, const char **start, int *n) {
  const char *p = text, *end = text + len;
  for (uint64_t l = 1; l < line && p < end; l++) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    if (!nl) return 0;
    p = nl + 1;
  }
  if (p >= end && line > 1) return 0;
  const char *nl = memchr(p, '\n', (size_t)(end - p));
  *start = p;
  *n = (int)((nl ? nl : end) - p);
  return 1;
}

enum { KEY_INPUTS_MAX = 64 };

/* Prints (or adds to diffs, when not NULL) each keyed input that differs
 * between this compile's (mine) and an entry's (theirs): this compile's
 * inputs first, then those only the entry has. */
static void explain_inputs(const key_input *mine, int nmine, const key_input *theirs, int ntheirs,
                           json_t *diffs) {
  for (int pass = 0; pass < 2; pass++) {
    const key_input *a = pass ? theirs : mine;
    int na = pass ? ntheirs : nmine;
    for (int k = 0; k < na; k++) {
      const key_input *other = key_input_find(pass ? mine : theirs, pass ? nmine : ntheirs, &a[k]);
      if (pass && other) continue;
      const key_input *was = pass ? &a[k] : other, *now = pass ? NULL : &a[k];
      if (was && now && was->value_len == now->value_len &&
          memcmp(was->value, now->value, (size_t)now->value_len) == 0)
        continue;
      if (!diffs)
        printf("    %.*s: %.*s -> %.*s\n", a[k].name_len, a[k].name, was ? was->value_len : 6,
               was ? was->value : "(none)", now ? now->value_len : 6, now ? now->value : "(none)");
      else
        json_array_append_new(diffs,
                              json_pack("{s:s%,s:s%,s:s%}", "input", a[k].name, (size_t)a[k].name_len,
                                        "entry", was ? was->value : "", (size_t)(was ? was->value_len : 0),
                                        "this", now ? now->value : "", (size_t)(now ? now->value_len : 0)));
    }
  }
}

/* One entry an explanation compares the compile with, printed, or as a
 * JSON object (json): returned, NULL when printed.  src (len bytes): the
 * compile's source, quoted at the first line that differs; mine: its
 * inputs; source_lines: its lines. */
static json_t *explain_candidate(const vxp_explain_candidate *e, const char *src, size_t len,
                                 const key_input *mine, int nmine, uint64_t source_lines, int json) {
  char used[32] = "";
  time_t t = (time_t)e->used_s;
  struct tm tm;
  if (localtime_r(&t, &tm)) strftime(used, sizeof used, "%Y-%m-%d %H:%M", &tm);
  json_t *jc = json ? json_pack("{s:s,s:I}", "key", e->key, "used", (json_int_t)e->used_s) : NULL;
  json_t *diffs = json ? json_array() : NULL;
  if (!json) printf("  %.12s  used %s\n", e->key, used);
  if (!e->inputs) {
    if (!json) printf("    (its inputs were not recorded: an entry from the shared level, or older)\n");
    if (jc) json_object_set_new(jc, "recorded", json_false());
  } else {
    const char *ls = NULL;
    int ln = 0, have = e->first_line && source_line(src, len, e->first_line, &ls, &ln);
    if (!json && e->first_line) {
      printf("    source: differs from line %llu (entry %llu lines, this %llu)\n",
             (unsigned long long)e->first_line, (unsigned long long)e->lines,
             (unsigned long long)source_lines);
      if (have) printf("      %5llu | %.*s\n", (unsigned long long)e->first_line, ln > 200 ? 200 : ln, ls);
    } else if (!json)
      printf("    source: the same text\n");
    if (jc && e->first_line) {
      json_object_set_new(jc, "first_line", json_integer((json_int_t)e->first_line));
      json_object_set_new(jc, "lines", json_integer((json_int_t)e->lines));
      if (have) json_object_set_new(jc, "line", json_stringn(ls, (size_t)ln));
    }
    char *theirs_text = strdup(e->inputs);
    key_input theirs[KEY_INPUTS_MAX];
    int ntheirs = theirs_text ? key_inputs_split(theirs_text, theirs, KEY_INPUTS_MAX) : 0;
    explain_inputs(mine, nmine, theirs, ntheirs, diffs);
    free(theirs_text);
  }
  if (jc)
    json_object_set_new(jc, "differences", diffs ? diffs : json_array());
  else if (diffs)
    json_decref(diffs);
  return jc;
}

static int cmd_explain(const command *cm, invocation *in, vxc_conn *conn) {
  (void)cm;
  const char *name = in->source_name ? in->source_name : strcmp(in->args[0], "-") ? in->args[0] : "<stdin>";
  size_t len = 0;
  char *src = read_source(in->args[0], &len);
  if (!src) return 1;
  vxp_response r;
  int rc = vxc_explain(conn, src, len, name, &in->co, &r);
  if (rc) {
    free(src);
    return request_failed(rc);
  }
  if (r.status != VXP_STATUS_OK) {
    fprintf(stderr, "vxc: %s\n", r.message ? shown(r.message) : "explain failed");
    vxp_response_clear(&r);
    free(src);
    return 2;
  }
  char *mine_text = strdup(r.key_inputs);
  key_input mine[KEY_INPUTS_MAX];
  int nmine = mine_text ? key_inputs_split(mine_text, mine, KEY_INPUTS_MAX) : 0;
  json_t *doc = in->json ? json_pack("{s:s,s:b,s:s}", "source", name, "hit", r.cached, "key", r.key) : NULL;
  json_t *cands = in->json ? json_array() : NULL;
  if (!in->json) {
    printf(r.cached ? "%s: hit: entry %.12s\n" : "%s: miss: no entry has key %.12s\n", shown(name), r.key);
    if (!r.cached && r.ncandidates == 0)
      printf("no entry has this source name: a first compile of it (or of the same text under another "
             "name)\n");
    else if (!r.cached)
      printf("the closest entries of this source name, and what differs (entry -> this compile):\n");
  }
  for (uint32_t i = 0; i < r.ncandidates; i++) {
    json_t *jc = explain_candidate(&r.candidates[i], src, len, mine, nmine, r.source_lines, in->json);
    if (jc && cands)
      json_array_append_new(cands, jc);
    else if (jc)
      json_decref(jc);
  }
  if (doc) {
    json_object_set_new(doc, "candidates", cands ? cands : json_array());
    json_emit(doc, stdout);
  } else if (cands)
    json_decref(cands);
  int status = r.cached ? 0 : 1;
  free(mine_text);
  vxp_response_clear(&r);
  free(src);
  return status;
}

/* The one key prefix names (vxc_resolve_key), into key; with listing not
 * NULL, the list reply that names it too.  Returns 0, or the exit status
 * after a message: 1 no such entry, 2 several or a failure, 64 not a key
 * prefix. */
static int resolve_key(const command *cm, vxc_conn *conn, const char *prefix, char key[65],
                       vxp_response *listing) {
  uint64_t matched = 0;
  int rc = vxc_resolve_key(conn, prefix, key, &matched, listing);
  if (rc == 0) return 0;
  if (rc == -EINVAL)
    return usage_error(cm, "'%s' is not a cache key or a prefix of one (%d to 64 lowercase hex digits)",
                       shown(prefix), VXC_MIN_KEY_PREFIX);
  if (rc == -ENOENT) {
    fprintf(stderr, "vxc: not_found: no cache entry with a key starting %s\n", prefix);
    return 1;
  }
  if (rc == -ENOTUNIQ) {
    fprintf(stderr, "vxc: %s: key prefix names %llu entries; give more digits (vxc ls %s)\n", prefix,
            (unsigned long long)matched, prefix);
    return 2;
  }
  if (rc == -EIO) {
    fprintf(stderr, "vxc: the daemon could not list its cache\n");
    return 2;
  }
  return request_failed(rc);
}

static int cmd_fetch(const command *cm, invocation *in, vxc_conn *conn) {
  char key[65];
  int status = strlen(in->args[0]) == 64 ? (memcpy(key, in->args[0], 65), 0)
                                         : resolve_key(cm, conn, in->args[0], key, NULL);
  if (status) return status;
  vxp_response r;
  int rc = vxc_fetch(conn, key, in->kernel, &r);
  if (rc) return request_failed(rc);
  status =
      finish(&r, in->json, in->verbose, in->out ? out_target_of(in->out) : (out_target){OUT_NONE, NULL}, key);
  vxp_response_clear(&r);
  return status;
}

/* n bytes as "812 B", "4.2 KiB", "1.5 MiB", ... into buf. */
static const char *human_bytes(uint64_t n, char buf[32]) {
  static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = (double)n;
  int u = 0;
  while (v >= 1024.0 && u < 4)
    v /= 1024.0, u++;
  if (u == 0)
    snprintf(buf, 32, "%llu B", (unsigned long long)n);
  else
    snprintf(buf, 32, "%.1f %s", v, unit[u]);
  return buf;
}

/* How long ago Unix time t was: "12s", "5m", "3h", "2d" into buf. */
static const char *human_age(uint64_t t, char buf[32]) {
  time_t now = time(NULL);
  uint64_t s = (uint64_t)now > t ? (uint64_t)now - t : 0;
  if (s < 60)
    snprintf(buf, 32, "%llus", (unsigned long long)s);
  else if (s < 3600)
    snprintf(buf, 32, "%llum", (unsigned long long)(s / 60));
  else if (s < 86400)
    snprintf(buf, 32, "%lluh", (unsigned long long)(s / 3600));
  else
    snprintf(buf, 32, "%llud", (unsigned long long)(s / 86400));
  return buf;
}

/* The kernel names of e joined by ',' (with "+N" for those not listed),
 * escaped, into buf (cap bytes), cut at width characters with "...". */
static const char *kernel_list(const vxp_entry_info *e, char *buf, size_t cap, size_t width) {
  size_t o = 0;
  buf[0] = '\0';
  for (uint32_t i = 0; i < e->nnames && o < cap; i++)
    o += (size_t)snprintf(buf + o, cap - o, "%s%s", i ? "," : "", shown(e->kernel_names[i]));
  if (e->nkernels > e->nnames && o < cap) snprintf(buf + o, cap - o, " +%u", e->nkernels - e->nnames);
  if (strlen(buf) > width && width > 3) memcpy(buf + width - 3, "...", 4);
  return buf;
}

static json_t *json_entry_info(const vxp_entry_info *e) {
  json_t *names = json_array();
  for (uint32_t i = 0; i < e->nnames; i++)
    json_array_append_new(names, json_text(e->kernel_names[i]));
  return json_pack("{s:s,s:o,s:o,s:I,s:o,s:I,s:I,s:I,s:I,s:I}", "key", e->key, "source_name",
                   json_text(e->source_name), "options", json_text(e->options), "nkernels",
                   (json_int_t)e->nkernels, "kernels", names, "bytes", (json_int_t)e->bytes, "created",
                   (json_int_t)e->created_s, "used", (json_int_t)e->used_s, "hits", (json_int_t)e->hits,
                   "compile_us", (json_int_t)e->compile_us);
}

static int cmd_ls(const command *cm, invocation *in, vxc_conn *conn) {
  const char *prefix = in->nargs ? in->args[0] : NULL;
  vxp_response r;
  int rc = vxc_list(conn, prefix, in->limit, &r);
  if (rc == -EINVAL) return usage_error(cm, "'%s' is not a key prefix (lowercase hex digits)", shown(prefix));
  if (rc) return request_failed(rc);
  int status = 0;
  if (r.status != VXP_STATUS_OK) {
    print_status(&r);
    status = 2;
  } else if (in->json) {
    json_t *entries = json_array();
    for (uint32_t i = 0; i < r.nentries; i++)
      json_array_append_new(entries, json_entry_info(&r.entries[i]));
    json_emit(json_pack("{s:I,s:o}", "matched", (json_int_t)r.checked, "entries", entries), stdout);
  } else {
    printf("%-12s  %-24s %-32s %10s %5s %6s\n", "KEY", "SOURCE", "KERNELS", "SIZE", "AGE", "HITS");
    for (uint32_t i = 0; i < r.nentries; i++) {
      const vxp_entry_info *e = &r.entries[i];
      char names[512], size[32], age[32];
      printf("%.12s  %-24s %-32s %10s %5s %6llu\n", e->key, e->source_name[0] ? shown(e->source_name) : "-",
             kernel_list(e, names, sizeof names, 32), human_bytes(e->bytes, size), human_age(e->used_s, age),
             (unsigned long long)e->hits);
    }
    if (r.checked > r.nentries)
      printf("(%llu more; vxc ls --limit N, or a key prefix)\n",
             (unsigned long long)(r.checked - r.nentries));
  }
  vxp_response_clear(&r);
  return status;
}

/* Writes object to a file in $TMPDIR and prints llvm-objdump's disassembly
 * of it on stdout.  Returns 0 or 2 after a message. */
static int disassemble(const uint8_t *object, size_t size) {
  char path[4200];
  if (temp_file("vxc-inspect", object, size, path, sizeof path) != 0) return 2;
  const char *objdump = getenv("VORTEXD_OBJDUMP");
  if (!objdump || !*objdump) objdump = VXC_LLVM_BINDIR "/llvm-objdump";
  char *argv[] = {(char *)objdump, (char *)"-d", (char *)"-r", (char *)"--no-show-raw-insn", path, NULL};
  int st = run_child(argv, NULL);
  unlink(path);
  if (st < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    fprintf(stderr, "vxc: %s failed\n", objdump);
    return 2;
  }
  return 0;
}

static int cmd_inspect(const command *cm, invocation *in, vxc_conn *conn) {
  char key[65];
  vxp_response info, r;
  int status = resolve_key(cm, conn, in->args[0], key, &info); /* and its description */
  if (status) return status;
  int rc = vxc_fetch(conn, key, NULL, &r);
  if (rc) {
    vxp_response_clear(&info);
    return request_failed(rc);
  }
  const vxp_entry_info *e = &info.entries[0];
  if (r.status != VXP_STATUS_OK) {
    print_status(&r);
    status = r.status == VXP_STATUS_NOT_FOUND ? 1 : 2;
  } else if (in->json) {
    json_t *o = json_entry_info(e), *kernels = json_array();
    for (uint32_t i = 0; i < r.nkernels; i++)
      json_array_append_new(kernels, json_kernel(&r.kernels[i]));
    json_object_set_new(o, "kernels", kernels);
    json_object_set_new(o, "object_size", json_integer((json_int_t)r.object_size));
    json_emit(o, stdout);
  } else {
    char size[32], age[32], when[64];
    time_t t = (time_t)e->created_s;
    struct tm tm;
    strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S %z", localtime_r(&t, &tm));
    printf("key          %s\nsource       %s\noptions      %s\ncompile time %.1f ms\n"
           "stored       %s\nlast used    %s ago\nhits         %llu\nsize         %s "
           "(object %zu bytes)\n",
           e->key, e->source_name[0] ? shown(e->source_name) : "- (not recorded)",
           e->options[0] ? shown(e->options) : "- (not recorded)", e->compile_us / 1000.0, when,
           human_age(e->used_s, age), (unsigned long long)e->hits, human_bytes(e->bytes, size),
           r.object_size);
    table_result(stdout, &r, NULL, NULL);
    if (in->disassemble) {
      printf("\n");
      status = disassemble(r.object, r.object_size);
    }
  }
  vxp_response_clear(&r);
  vxp_response_clear(&info);
  return status;
}

static int cmd_run(const command *cm, invocation *in, vxc_conn *conn) {
  (void)cm;
  const char *name;
  vxp_response r;
  int status = send_source(in, conn, SEND_RUN, &r, &name);
  if (status) return status;
  /* the kernels are compiled by the runtime, which reads the environment */
  if (in->co.cache == VXP_CACHE_RECACHE) setenv("VORTEXD_RECACHE", "1", 1);
  status = run_program(&r, in->socket, in->shlibs, in->nshlibs);
  vxp_response_clear(&r);
  return status;
}

static int cmd_stats(const command *cm, invocation *in, vxc_conn *conn) {
  (void)cm;
  vxp_response r;
  int rc = vxc_stats(conn, &r), status = 0;
  if (rc) return request_failed(rc);
  if (r.status != VXP_STATUS_OK) {
    fprintf(stderr, "vxc: %s\n", r.message ? shown(r.message) : "stats failed");
    status = 2;
  } else {
    if (in->openmetrics) {
      print_openmetrics(&r.stats);
    } else {
      const vxp_response *info = in->json ? NULL : vxc_server_info(conn);
      print_stats(&r.stats, info ? info->server : NULL, in->socket, in->system_socket, in->json);
    }
  }
  vxp_response_clear(&r);
  return status;
}

/* Prints what a stats log counts (vxc_stats_log_read): in.args[0] or
 * $VORTEXD_STATS_LOG.  No daemon: conn is NULL. */
static int cmd_log_stats(const command *cm, invocation *in, vxc_conn *conn) {
  (void)conn;
  const char *path = in->nargs ? in->args[0] : getenv("VORTEXD_STATS_LOG");
  if (!path || !*path) return usage_error(cm, "no FILE, and VORTEXD_STATS_LOG is not set");
  vxc_log_stats ls;
  int rc = vxc_stats_log_read(path, &ls);
  if (rc) {
    fprintf(stderr, "vxc: cannot read stats log %s: %s\n", path,
            rc == -EINVAL ? "not a regular file" : strerror(-rc));
    return 1;
  }
  const uint64_t *n = ls.count;
  uint64_t asked = n[VXC_OUTCOME_HIT] + n[VXC_OUTCOME_MISS] + n[VXC_OUTCOME_JOINED];
  double ratio = asked ? (double)(n[VXC_OUTCOME_HIT] + n[VXC_OUTCOME_JOINED]) / (double)asked : 0.0;
  if (in->json) {
    json_t *o = json_object();
    for (int k = 0; o && k < VXC_OUTCOMES; k++)
      json_object_set_new(o, vxc_outcome_name((vxc_outcome)k), json_integer((json_int_t)n[k]));
    if (o) {
      json_object_set_new(o, "unreadable", json_integer((json_int_t)ls.unreadable));
      json_object_set_new(o, "hit_ratio", json_real(ratio));
    }
    json_emit(o, stdout);
    return 0;
  }
  printf("stats log     %s\n", path);
  printf("hits          %llu\n", (unsigned long long)n[VXC_OUTCOME_HIT]);
  printf("misses        %llu\n", (unsigned long long)n[VXC_OUTCOME_MISS]);
  printf("joined        %llu   (answered by a compile another request had started)\n",
         (unsigned long long)n[VXC_OUTCOME_JOINED]);
  printf("hit ratio     %.1f%%  (hits and joined, of all answered)\n", 100.0 * ratio);
  printf("errors        %llu   (compiles that failed with diagnostics)\n",
         (unsigned long long)n[VXC_OUTCOME_ERROR]);
  printf("failed        %llu   (no answer: daemon failure or unreachable)\n",
         (unsigned long long)n[VXC_OUTCOME_FAILED]);
  if (ls.unreadable) printf("unreadable    %llu lines\n", (unsigned long long)ls.unreadable);
  return 0;
}

static int cmd_rm(const command *cm, invocation *in, vxc_conn *conn) {
  char key[65];
  int status = resolve_key(cm, conn, in->args[0], key, NULL);
  if (status) return status;
  vxp_response r;
  int rc = vxc_remove(conn, key, &r);
  if (rc) return request_failed(rc);
  if (r.status != VXP_STATUS_OK) {
    fprintf(stderr, "vxc: rm: %s\n", r.message ? shown(r.message) : vxp_status_name(r.status));
    status = 2;
  } else if (!r.removed) { /* removed since it was named */
    fprintf(stderr, "vxc: not_found: no cache entry %s\n", key);
    status = 1;
  } else {
    printf("removed %s\n", key);
  }
  vxp_response_clear(&r);
  return status;
}

static int cmd_admin(const command *cm, invocation *in, vxc_conn *conn) {
  vxp_response r;
  int rc = vxc_admin(conn, cm->op, in->prune_to, &r), status = 0;
  if (rc) return request_failed(rc);
  if (r.status != VXP_STATUS_OK) {
    fprintf(stderr, "vxc: %s: %s\n", cm->name, r.message ? shown(r.message) : vxp_status_name(r.status));
    status = 2;
  } else if (cm->op == VXP_OP_VERIFY) {
    printf("%llu entries checked, %llu damaged (dropped)\n", (unsigned long long)r.checked,
           (unsigned long long)r.removed);
    status = r.removed ? 1 : 0;
  } else if (cm->op == VXP_OP_CLEAR || cm->op == VXP_OP_PRUNE) {
    printf("%llu entries removed\n", (unsigned long long)r.removed);
  }
  vxp_response_clear(&r);
  return status;
}

/* "DEV:INODE:SIZE:MTIME_NS" of path (what a daemon's hello reports of its
 * own program) into buf, or "" when it cannot be read. */
static void program_identity(const char *path, char *buf, size_t cap) {
  struct stat st;
  buf[0] = '\0';
  if (path[0] && stat(path, &st) == 0)
    snprintf(buf, cap, "%llu:%llu:%llu:%lld", (unsigned long long)st.st_dev, (unsigned long long)st.st_ino,
             (unsigned long long)st.st_size,
             (long long)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec);
}

/* Says once, on stderr, when the daemon answering is not the one this vxc
 * would start (another build of vortexd than the one beside it: started
 * before a rebuild or install) or serves another cache or default target
 * than this client's configuration says, and how to get the right one.
 * Settings are compared only for the daemon the configuration names (not
 * one chosen with --socket, which may have been started with other flags
 * on purpose) and never for the system service (its settings are the
 * system's). */
static void check_daemon(const invocation *in, vxc_conn *conn) {
  const vxp_response *info = vxc_server_info(conn);
  if (!info) return;
  char program[4096], mine[128], why[2048] = "";
  vxc_daemon_program(program, sizeof program);
  program_identity(program, mine, sizeof mine);
  size_t n = 0;
  const int own = !in->system_socket && in->pc.origin[VXP_CONF_socket] != VXP_FROM_FLAG;
  if (info->build && mine[0] && strcmp(info->build, mine) != 0)
    n += (size_t)snprintf(why + n, sizeof why - n, "it runs another build than %s", program);
  if (own && info->cache_dir && strcmp(info->cache_dir, in->pc.value[VXP_CONF_cache_dir]) != 0)
    n += (size_t)snprintf(why + n, sizeof why - n, "%sit serves cache %s, the configuration says %s",
                          n ? "; " : "", shown(info->cache_dir), in->pc.value[VXP_CONF_cache_dir]);
  if (own && info->target && strcmp(info->target, in->pc.value[VXP_CONF_target]) != 0 && n < sizeof why)
    n += (size_t)snprintf(why + n, sizeof why - n,
                          "%sits default target is %s, the configuration says %s (vxc sends its own)",
                          n ? "; " : "", shown(info->target), in->pc.value[VXP_CONF_target]);
  if (n)
    fprintf(stderr,
            "vxc: note: the vortexd at %s is not the one this configuration would start: %s; `vxc stop`, "
            "and the next command starts it anew\n",
            in->socket, why);
}

int main(int argc, char **argv) {
  static invocation in = {.spawn = 1, .co = {.opt_level = 2}};
  char err[4200];
  int cfg_rc = vxp_config_load(&in.pc, err, sizeof err);
  int i = 1;
  for (; i < argc && argv[i][0] == '-'; i++) {
    if (strcmp(argv[i], "--socket") == 0) {
      if (i + 1 >= argc) return usage_error(NULL, "--socket needs a path");
      if (cfg_rc == 0 && vxp_config_set(&in.pc, "socket", argv[i + 1], VXP_FROM_FLAG) != 0)
        return usage_error(NULL, "--socket: path too long");
      i++;
    } else if (strcmp(argv[i], "--no-spawn") == 0) {
      in.spawn = 0;
    } else if (strcmp(argv[i], "--version") == 0) {
      printf("vxc %s (protocol %u)\n", VORTEXD_VERSION, VXP_PROTOCOL_VERSION);
      return 0;
    } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      usage(stdout);
      return 0;
    } else {
      return usage_error(NULL, "unknown option '%s'", argv[i]);
    }
  }
  if (i >= argc) {
    usage(stderr);
    return 64;
  }
  const command *cm = command_named(argv[i]);
  if (!cm) return usage_error(NULL, "unknown command '%s'", argv[i]);
  /* usage errors are reported before any daemon is contacted (or started) */
  int prc = parse_command(cm, argc - i, argv + i, &in);
  if (prc) return prc < 0 ? 0 : prc;
  /* VORTEXD_DISABLE bypasses the cache whatever the flags say; else
   * VORTEXD_RECACHE, as --recache does */
  vxp_cache_mode env_cache = vxc_cache_mode_from_env();
  if (env_cache == VXP_CACHE_BYPASS || in.co.cache == VXP_CACHE_USE) in.co.cache = env_cache;
  if (strcmp(cm->name, "help") == 0) {
    const command *about = in.nargs ? command_named(in.args[0]) : NULL;
    if (in.nargs && !about) return usage_error(cm, "unknown command '%s'", in.args[0]);
    if (about)
      command_help(stdout, about);
    else
      usage(stdout);
    return 0;
  }
  if (cm->run == cmd_log_stats) return cmd_log_stats(cm, &in, NULL); /* a file: no daemon, no configuration */
  if (cfg_rc != 0) {
    fprintf(stderr, "vxc: %s\n", err);
    return 78; /* EX_CONFIG */
  }
  /* a bad value is this command's configuration error (78), said before
   * any daemon is asked; `vxc config` prints what it read, then says so */
  int check_rc = vxp_config_check(&in.pc, err, sizeof err);
  if (strcmp(cm->name, "config") == 0) {
    int rc = show_config(&in.pc, in.json);
    if (check_rc == 0) return rc;
    fprintf(stderr, "vxc: %s\n", err);
    return 78;
  }
  if (check_rc != 0) {
    fprintf(stderr, "vxc: %s\n", err);
    return 78;
  }
  /* every request carries the target this client is configured for (its
   * flag, else VORTEXD_TARGET or the file's `target`): the daemon's own
   * default never decides it */
  if (!in.target && vxp_target_parse(in.pc.value[VXP_CONF_target], &in.co.vortex_abi, &in.co.xlen) != 0)
    return usage_error(cm, "target '%s' is not vortex2-rv32, vortex2-rv64, vortex3-rv32 or vortex3-rv64",
                       in.pc.value[VXP_CONF_target]);
  if (cm->op == VXP_OP_PRUNE &&
      vxp_config_size(in.max_size ? in.max_size : in.pc.value[VXP_CONF_max_cache_size], &in.prune_to) != 0)
    return usage_error(cm, "bad size '%s' (bytes, or with K/M/G/T)",
                       in.max_size ? in.max_size : in.pc.value[VXP_CONF_max_cache_size]);

  in.socket = in.pc.value[VXP_CONF_socket];
  static char client_socket[108];
  if (in.pc.origin[VXP_CONF_socket] == VXP_FROM_DEFAULT &&
      vxp_client_socket_path(client_socket, sizeof client_socket, &in.system_socket) == 0)
    in.socket = client_socket;        /* the system service's when this user may use it */
  if (in.system_socket) in.spawn = 0; /* systemd starts that one */
  vxc_conn *conn = NULL;
  int rc = in.spawn && cm->spawn ? vxc_connect_or_spawn(in.socket, NULL, 15000, &conn)
                                 : vxc_connect(in.socket, &conn);
  if (rc) {
    if (cm->op == VXP_OP_STOP && (rc == -ENOENT || rc == -ECONNREFUSED)) {
      fprintf(stderr, "vxc: no vortexd is running at %s\n", in.socket);
      return 1;
    }
    report_connect_error(in.socket, rc);
    return 2;
  }
  int status = cm->run(cm, &in, conn);
  if (cm->op != VXP_OP_STOP) check_daemon(&in, conn); /* after its answer: one more round trip */
  vxc_close(conn);
  return status;
}
