/*
 * vxr_mgpu.c - libvortexd_runtime: the MLIR GPU runtime ABI (the mgpu*
 * functions MLIR's gpu-to-llvm lowering calls, as its CUDA and ROCm
 * runtime wrappers export them) for Vortex, with kernels from vortexd.
 *
 * mgpuModuleLoad receives what the host lowering put in the gpu.binary: a
 * gpu.module's MLIR text, preceded by comment lines: optionally
 * "// vortexd-key: <64 hex digits>" (the cache key vortexd gave it), then
 * one "// vortexd-host-args: KERNEL ARG..." per kernel, what the host
 * passes for each argument (the lowering's VXL_HOST_ARGS_TAG).  The
 * first load of a text asks the daemon (a compile on a miss, a hit after);
 * later loads of the same text in the process touch no socket.  When no
 * daemon answers, the entry is read from the cache directory directly
 * (read-only) by that key; with neither, the load fails with a message
 * and the program's launches of it fail.
 *
 * mgpuLaunchKernel first compares the kernel's record with the host's
 * argument line: the same arguments, each memref of the same rank, each
 * scalar no wider on the device than the host's value (a record from a
 * shared cache may be forged; nothing is read from the host beyond its own
 * values).  It then maps the host's parameters - each memref as its
 * expanded descriptor (allocated, aligned, offset, sizes, strides), each
 * scalar by address - to the kernel's argument buffer with the metadata
 * vortexd returned (libvxc's vxc_pack_args; a memref becomes the 32-bit
 * device address of aligned + offset x element size) and runs it on the
 * backend VORTEXD_DEVICE names ("emulated", the default).  Launches are
 * synchronous: streams and events exist for the ABI's sake.
 *
 * A module that cannot be obtained or a launch that fails ends the program
 * with status 1 after its message (what a host program without error
 * checks of its own would want: its results would be wrong), unless
 * VORTEXD_RUNTIME_ERRORS=return, when the call returns NULL or nothing.
 *
 * THREAD NOTES: every entry point takes one process-wide mutex.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "cache/vxk.h"
#include "cache/vxk_entry.h"
#include "client/vxc.h"
#include "protocol/vxp_config.h"
#include "protocol/vxp_entry.h"
#include "vortexd_runtime.h" /* what this file defines, as programs see it */
#include "vxr.h"

#define VXR_ARENA_DEFAULT (64u << 20)
#define VXR_ALIGN 64u

/* What the host passes for each argument of a kernel (its host argument
 * line): kind 'm' a ranked memref of rank value, 'p' a pointer, 's' a
 * scalar of value bytes, '?' another type. */
typedef struct {
  char kind;
  uint32_t value;
} vxr_host_arg;

typedef struct vxr_function vxr_function;

typedef struct vxr_module {
  uint8_t digest[32];      /* SHA-256 of the text loaded */
  vxr_function *functions; /* one per kernel: what mgpuModuleGetFunction returns */
  vxp_response r;          /* object, kernel records, image if any */
  const char *start;       /* where the module's one image starts
                              (vxp_image_entry; in r), NULL: an image per
                              kernel */
  uint8_t **elf;           /* linked images, built on first launch: one per
                              kernel, or the module's one (elf[0]) */
  size_t *elf_size;
  uint64_t *image_id;      /* each image's vxr_launch.image_id */
  vxr_host_arg *host_args; /* every host argument line's arguments (functions[].host point in) */
  /* loading, on a thread of its own (vxr__load): until state is set,
   * nothing above is touched but by that thread */
  int state;  /* 0 loading, 1 ready, -1 failed (under vxr.mu) */
  char *text; /* the loaded bytes, kept until loaded */
  size_t text_size;
  char *error;     /* what failed, said at the first use of the module */
  int said;        /* error said already */
  char where[320]; /* the gpu.module, as its header line names it ("" without one) */
  int refs;
  struct vxr_module *next;
} vxr_module;

struct vxr_function {
  vxr_module *m;
  uint32_t kernel;
  vxr_host_arg *host; /* its host argument line; NULL: the module has none for it */
  uint32_t nhost;
};

typedef struct vxr_region {
  uint8_t *host; /* registered host memory */
  uint64_t size;
  uint32_t mirror; /* its arena offset */
  int launch_only; /* mirrored for one launch (a memref never registered) */
  int read_only;   /* a host constant: copied to the device, never back */
  struct vxr_region *next;
} vxr_region;

typedef struct vxr_block {
  uint32_t off, size;
  struct vxr_block *next;
} vxr_block;

static struct {
  pthread_mutex_t mu;
  vxr_backend *backend;
  uint32_t base; /* device address of the arena */
  uint8_t *arena;
  uint32_t arena_cap, arena_top;
  vxr_block *free_blocks;
  vxr_region *regions;
  vxr_module *modules;
  uint64_t images; /* images linked or taken so far: the last image_id */
  int initialised;
  pthread_cond_t loaded;  /* a module finished loading (vxr_module.state) */
  pthread_mutex_t cfg_mu; /* the configuration is read on one thread at a time (inih) */
} vxr = {
    .mu = PTHREAD_MUTEX_INITIALIZER, .loaded = PTHREAD_COND_INITIALIZER, .cfg_mu = PTHREAD_MUTEX_INITIALIZER};

/* A module's loader thread says its failures into the module, to be said
 * at the module's first use: the buffer vxr__fail appends to on this
 * thread (NULL: stderr). */
static __thread char **vxr__said;

static void vxr__fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void vxr__fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (vxr__said) {
    char *line = NULL, *both = NULL;
    if (vasprintf(&line, fmt, ap) >= 0 &&
        asprintf(&both, "%s%svortexd runtime: %s", *vxr__said ? *vxr__said : "", *vxr__said ? "\n" : "",
                 line) >= 0) {
      free(*vxr__said);
      *vxr__said = both;
    }
    free(line);
  } else {
    fputs("vortexd runtime: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
  }
  va_end(ap);
}

/* After a failure reported with vxr__fail: exit unless errors return. */
static void vxr__maybe_exit(void) {
  const char *e = getenv("VORTEXD_RUNTIME_ERRORS");
  if (e && strcmp(e, "return") == 0) return;
  fflush(stdout);
  exit(1);
}

/* Opens the device on first use.  A device that cannot be had (an unknown
 * VORTEXD_DEVICE, no libvortex, no memory) ends the program with status 1
 * after its message, as every runtime failure does (vxr__maybe_exit):
 * returning NULL memory to host code that does not check it would end it
 * in a segmentation fault instead.  -1 only with VORTEXD_RUNTIME_ERRORS=return. */
static int vxr__init(void) {
  if (vxr.initialised) return vxr.arena ? 0 : -1;
  vxr.initialised = 1;
  const char *dev = getenv("VORTEXD_DEVICE");
  const char *mem = getenv("VORTEXD_DEVICE_MEMORY");
  uint64_t cap = VXR_ARENA_DEFAULT;
  char err[512] = "";
  if (!dev || !*dev || strcmp(dev, "emulated") == 0)
    vxr.backend = vxr_emulated_backend();
  else if (strcmp(dev, "vortex") == 0)
    vxr.backend = vxr_vortex_backend();
  if (!vxr.backend)
    vxr__fail("VORTEXD_DEVICE=%s: unknown device backend (emulated or vortex)", dev);
  else if (mem && (vxp_config_size(mem, &cap) != 0 || cap < (1u << 20) || cap > (1u << 30)))
    vxr__fail("VORTEXD_DEVICE_MEMORY=%s: expected a size from 1M to 1G", mem);
  else {
    vxr.arena_cap = (uint32_t)cap;
    if (vxr.backend->open(vxr.backend, vxr.arena_cap, &vxr.base, err, sizeof err) != 0)
      vxr__fail("device %s: %s", vxr.backend->name, err);
    else if (!(vxr.arena = calloc(1, vxr.arena_cap)))
      vxr__fail("cannot allocate %u bytes of device memory", vxr.arena_cap);
  }
  if (vxr.arena) return 0;
  vxr__maybe_exit();
  return -1;
}

/* ---- device memory: first fit over freed blocks, else the top ---- */

static int64_t vxr__alloc(uint64_t size) {
  uint32_t n = (uint32_t)((size + VXR_ALIGN - 1) / VXR_ALIGN * VXR_ALIGN);
  if (size > vxr.arena_cap || n == 0) n = n ? n : VXR_ALIGN;
  for (vxr_block **pp = &vxr.free_blocks; *pp; pp = &(*pp)->next)
    if ((*pp)->size >= n) {
      vxr_block *b = *pp;
      uint32_t off = b->off;
      b->off += n, b->size -= n;
      if (!b->size) *pp = b->next, free(b);
      memset(vxr.arena + off, 0, n);
      return off;
    }
  if ((uint64_t)vxr.arena_top + n > vxr.arena_cap) return -1;
  uint32_t off = vxr.arena_top;
  vxr.arena_top += n;
  return off;
}

static void vxr__free(uint32_t off, uint32_t size) {
  vxr_block *b = malloc(sizeof *b);
  if (!b) return; /* leaked device memory, not a fault */
  *b = (vxr_block){off, (size + VXR_ALIGN - 1) / VXR_ALIGN * VXR_ALIGN, vxr.free_blocks};
  vxr.free_blocks = b;
}

/* The device address of host pointer p (inside the arena or a registered
 * region), or 0 when the device cannot see it. */
static uint32_t vxr__device_address(const uint8_t *p) {
  if (p >= vxr.arena && p < vxr.arena + vxr.arena_cap) return vxr.base + (uint32_t)(p - vxr.arena);
  /* the region holding p; only then one p ends (an empty view at a
   * region's end): two regions may be adjacent in host memory, and the
   * first byte of one is not the end of the other */
  for (vxr_region *r = vxr.regions; r; r = r->next)
    if (p >= r->host && p < r->host + r->size) return vxr.base + r->mirror + (uint32_t)(p - r->host);
  for (vxr_region *r = vxr.regions; r; r = r->next)
    if (p == r->host + r->size) return vxr.base + r->mirror + (uint32_t)r->size;
  return 0;
}

/* ---- modules ---- */

static void vxr__digest(const void *data, size_t size, uint8_t out[32]) {
  unsigned int n = 32;
  EVP_Digest(data, size, out, &n, EVP_sha256(), NULL);
}

/* The entry for key read from the cache directly (no daemon), into r.
 * Returns 0 or a negative errno / VXK code (said through vxr__fail). */
static int vxr__from_cache(const char *key, vxp_response *r) {
  vxp_config cfg;
  char err[4200];
  pthread_mutex_lock(&vxr.cfg_mu);
  int rc = vxp_config_load(&cfg, err, sizeof err);
  pthread_mutex_unlock(&vxr.cfg_mu);
  if (rc != 0) {
    vxr__fail("%s", err);
    return rc;
  }
  vxk_cache *c = NULL;
  if ((rc = vxk_open_readonly(cfg.value[VXP_CONF_cache_dir], &c, err, sizeof err)) != VXK_OK) {
    vxr__fail("no vortexd answers and %s; start one (`vortexd &`, or any `vxc` command starts it), or set "
              "VORTEXD_RUNTIME_SPAWN=1 to let the program start it",
              err);
    return rc;
  }
  vxk_entry e;
  rc = vxk_get(c, key, &e);
  vxk_close(c);
  if (rc != VXK_OK) {
    vxr__fail("no vortexd answers and the cache in %s has %s entry %s; start one (`vortexd &`, or any `vxc` "
              "command starts it), or set VORTEXD_RUNTIME_SPAWN=1 to let the program start it",
              cfg.value[VXP_CONF_cache_dir], rc == VXK_ENOTFOUND ? "no" : "no readable", key);
    return rc;
  }
  memset(r, 0, sizeof *r);
  r->entry = e.data, r->entry_size = e.size; /* moved */
  rc = vxp_entry_unpack(r, NULL);
  r->status = VXP_STATUS_OK;
  if (rc != 0) vxr__fail("cache entry %s has unreadable kernel records", key);
  return rc;
}

/* The header lines of a module's text (the key's, then the host argument
 * lines; see the file comment, and the lowering's VXL_HOST_ARGS_TAG). */
#define VXR_KEY_TAG "// vortexd-key: "
#define VXR_OPTIONS_TAG "// vortexd-options: "
#define VXR_HOST_ARGS_TAG "// vortexd-host-args: "
#define VXR_MODULE_TAG "// vortexd-module: "
/* the last header line of a module compiled ahead of time (#vortex.target,
 * lowering/vxl_plugin.cpp): the compiled entry follows it, not a text */
#define VXR_ENTRY_TAG "// vortexd-entry"

/* The options of an options line's text [s, e) ("target=T warp_size=N
 * opt_level=N shuffle_insns=0|1", as vortexd's host lowering writes it)
 * into *o; 0, or -1 for anything else. */
static int vxr__options(const char *s, const char *e, vxc_compile_options *o) {
  char buf[160], target[32];
  unsigned warp, opt, shuffle;
  int used = 0;
  if (e - s >= (ptrdiff_t)sizeof buf) return -1;
  memcpy(buf, s, (size_t)(e - s));
  buf[e - s] = '\0';
  if (sscanf(buf, "target=%31s warp_size=%u opt_level=%u shuffle_insns=%u%n", target, &warp, &opt, &shuffle,
             &used) != 4 ||
      buf[used] != '\0' || warp > 64 || opt > 3 || shuffle > 1)
    return -1;
  *o = (vxc_compile_options){.opt_level = opt, .warp_size = warp, .shuffle_insns = (int)shuffle};
  return vxp_target_parse(target, &o->vortex_abi, &o->xlen) == 0 ? 0 : -1;
}

/* Where the module's own text begins in text (size bytes), after its
 * header lines; the key of its key line into key ("" without one); the
 * options of its options line into *o and *have_options 1 (0 without
 * one, -1 for one that is not one; 2: the rest is a compiled entry, after
 * a "// vortexd-entry" line). */
static size_t vxr__header(const char *text, size_t size, char key[65], vxc_compile_options *o,
                          int *have_options) {
  size_t at = 0;
  key[0] = '\0';
  *have_options = 0;
  for (;;) {
    const char *nl = memchr(text + at, '\n', size - at), *line = text + at;
    if (!nl) break;
    size_t len = (size_t)(nl - line), kt = sizeof VXR_KEY_TAG - 1, ht = sizeof VXR_HOST_ARGS_TAG - 1,
           ot = sizeof VXR_OPTIONS_TAG - 1, mt = sizeof VXR_MODULE_TAG - 1;
    if (at == 0 && len == kt + 64 && memcmp(line, VXR_KEY_TAG, kt) == 0) {
      memcpy(key, line + kt, 64);
      key[64] = '\0';
    } else if (len == sizeof VXR_ENTRY_TAG - 1 && memcmp(line, VXR_ENTRY_TAG, len) == 0) {
      at += len + 1;
      *have_options = 2; /* the entry itself from here on */
      break;
    } else if (len >= ot && memcmp(line, VXR_OPTIONS_TAG, ot) == 0) {
      *have_options = vxr__options(line + ot, nl, o) == 0 ? 1 : -1;
    } else if (!(len >= ht && memcmp(line, VXR_HOST_ARGS_TAG, ht) == 0) &&
               !(len >= mt && memcmp(line, VXR_MODULE_TAG, mt) == 0)) {
      break;
    }
    at += len + 1;
  }
  return at;
}

/* One host argument token ("m<rank>", "p", "s<bytes>", "?") of [s, e)
 * into *a; 0, or -1 for anything else. */
static int vxr__host_token(const char *s, const char *e, vxr_host_arg *a) {
  a->kind = *s, a->value = 0;
  if ((*s == 'p' || *s == '?') && e == s + 1) return 0;
  if ((*s != 'm' && *s != 's') || e == s + 1 || e - s > 3) return -1;
  for (const char *p = s + 1; p < e; p++) {
    if (*p < '0' || *p > '9') return -1;
    a->value = a->value * 10 + (uint32_t)(*p - '0');
  }
  return (*s == 's' && (a->value < 1 || a->value > 8)) || (*s == 'm' && a->value > 64) ? -1 : 0;
}

/* Reads the host argument lines of header [text, text + len) and hands
 * each kernel of m its line (matched by name as mgpuModuleGetFunction
 * matches).  0, or -1 for a line that is not one (said), -ENOMEM. */
static int vxr__bind_host_args(vxr_module *m, const char *text, size_t len) {
  const size_t ht = sizeof VXR_HOST_ARGS_TAG - 1;
  size_t tokens = 0;
  for (size_t i = 0; i < len; i++)
    tokens += text[i] == ' ';
  if (!(m->host_args = calloc(tokens ? tokens : 1, sizeof *m->host_args))) return -ENOMEM;
  size_t used = 0;
  for (const char *line = text; line < text + len;) {
    const char *end = memchr(line, '\n', (size_t)(text + len - line));
    if (!end) break;
    if ((size_t)(end - line) < ht || memcmp(line, VXR_HOST_ARGS_TAG, ht) != 0) {
      line = end + 1;
      continue;
    }
    const char *p = line + ht, *sp = memchr(p, ' ', (size_t)(end - p));
    const char *name_end = sp ? sp : end;
    char name[256];
    size_t n = 0;
    int bad = name_end == p;
    for (const char *q = p; !bad && q < name_end; q++) { /* %XX decoded */
      unsigned v;
      if (*q == '%' && name_end - q >= 3 && sscanf(q + 1, "%2x", &v) == 1)
        name[n] = (char)v, q += 2;
      else
        name[n] = *q;
      bad = ++n >= sizeof name - 1 || name[n - 1] == '\0';
    }
    name[n] = '\0';
    vxr_host_arg *args = m->host_args + used;
    uint32_t nargs = 0;
    for (const char *t = name_end; !bad && t < end;) {
      const char *te = memchr(t + 1, ' ', (size_t)(end - t - 1));
      if (!te) te = end;
      bad = *t != ' ' || nargs >= VXP_MAX_ARGS || vxr__host_token(t + 1, te, &args[nargs]) != 0;
      nargs++, t = te;
    }
    if (bad) {
      vxr__fail("the module's host argument line \"%.*s\" is not one (a damaged host object?)",
                (int)((end - line) < 200 ? end - line : 200), line);
      return -1;
    }
    used += nargs;
    for (uint32_t i = 0; i < m->r.nkernels; i++) {
      const char *kn = m->r.kernels[i].name, *q = strstr(kn, "::");
      if (strcmp(kn, name) == 0 || (q && strcmp(q + 2, name) == 0))
        m->functions[i].host = args, m->functions[i].nhost = nargs;
    }
    line = end + 1;
  }
  return 0;
}

/* Whether kernel k's record takes what the host passes (f's host argument
 * line): the same arguments, a memref of the same rank for each memref,
 * a pointer for each pointer, and for each scalar no more bytes than the
 * host's value holds.  0, or -1 with a message in err. */
static int vxr__args_match(const vxr_function *f, const vxp_kernel *k, char *err, size_t errcap) {
  if (!f->host) {
    snprintf(err, errcap,
             "the program's host object gives no host argument types for kernel %s (made before vortexd "
             "wrote them: compile its host side again)",
             k->name);
    return -1;
  }
  if (f->nhost != k->nargs) {
    snprintf(err, errcap, "kernel %s takes %u arguments, the program passes %u", k->name, k->nargs, f->nhost);
    return -1;
  }
  for (uint32_t i = 0; i < k->nargs; i++) {
    const vxp_arg *a = &k->args[i];
    const vxr_host_arg *h = &f->host[i];
    int ok = a->kind == VXP_ARG_POINTER
                 ? (a->elem_size ? h->kind == 'm' && h->value == a->rank : h->kind == 'p')
                 : h->kind == 's' && a->size <= h->value;
    if (!ok) {
      snprintf(err, errcap,
               "argument %u of kernel %s: the kernel's record (%s, %u bytes) does not match what the program "
               "passes (%s%u)",
               i, k->name, a->type, a->size,
               h->kind == 'm'   ? "memref of rank "
               : h->kind == 'p' ? "a pointer"
               : h->kind == 's' ? "bytes: "
                                : "?",
               h->kind == 'p' || h->kind == '?' ? 0 : h->value);
      return -1;
    }
  }
  return 0;
}

/* Compiles (or fetches) text through the daemon into r; falls back to the
 * cache by the key line.  Returns 0 or a negative errno / project code
 * (said through vxr__fail). */
static int vxr__obtain(const char *text, size_t size, vxp_response *r) {
  /* the header lines are not part of the module: vortexd keyed the text
   * after them, compiled with the options of its options line */
  char header_key[65];
  vxc_compile_options o;
  int have_options;
  size_t at = vxr__header(text, size, header_key, &o, &have_options);
  const char *body = text + at;
  size_t body_size = size - at;
  if (have_options < 0) {
    vxr__fail("the module's options line is not one (a damaged host object?)");
    return -EINVAL;
  }
  if (have_options == 2) { /* compiled ahead of time: the entry is here, whole or refused */
    memset(r, 0, sizeof *r);
    if (!header_key[0] ||
        vxk_entry_check_records(header_key, (const uint8_t *)body, body_size, NULL) != VXK_OK) {
      vxr__fail("the module's compiled entry is damaged or not its key's (a damaged program?)");
      return -EINVAL;
    }
    r->entry = malloc(body_size ? body_size : 1);
    if (!r->entry) return -ENOMEM;
    memcpy(r->entry, body, body_size);
    r->entry_size = body_size;
    r->status = VXP_STATUS_OK;
    int rc = vxp_entry_unpack(r, NULL);
    if (rc != 0) vxr__fail("the module's compiled entry has unreadable kernel records");
    return rc;
  }
  vxc_conn *c = NULL;
  const char *spawn = getenv("VORTEXD_RUNTIME_SPAWN");
  int rc = spawn && *spawn == '1' ? vxc_connect_or_spawn(NULL, NULL, 15000, &c) : vxc_connect(NULL, &c);
  if (rc == 0) {
    if (!have_options) o = (vxc_compile_options){.opt_level = 2};
    o.cache = vxc_cache_mode_from_env(); /* VORTEXD_RECACHE, VORTEXD_DISABLE */
    rc = vxc_compile(c, body, body_size, VXP_DEVICE_MODULE_NAME, &o, r);
    vxc_close(c);
    if (rc == 0 && r->status == VXP_STATUS_OK) return 0;
    if (rc == 0) {
      for (uint32_t i = 0; i < r->ndiags; i++)
        if (vxr__said) { /* the diagnostics first, then why */
          char *both = NULL;
          if (asprintf(&both, "%s%s%s", *vxr__said ? *vxr__said : "", *vxr__said ? "\n" : "", r->diags[i]) >=
              0)
            free(*vxr__said), *vxr__said = both;
        } else {
          fprintf(stderr, "%s\n", r->diags[i]);
        }
      vxr__fail("vortexd could not compile the module: %s",
                r->message ? r->message : vxp_status_name(r->status));
      vxp_response_clear(r);
      return -EINVAL;
    }
  }
  if (header_key[0] && vxk_key_valid(header_key)) return vxr__from_cache(header_key, r);
  vxr__fail("no vortexd answers (%s) and the module carries no cache key", vxp_strerror(rc));
  return rc ? rc : -ENOENT;
}

/* Loads module m (its text, m->text) on a thread of its own: the daemon
 * asked (or the cache read), the records bound to the host's argument
 * lines; failures kept in m->error.  Publishes the result under vxr.mu. */
static void *vxr__load(void *arg) {
  vxr_module *m = arg;
  char *said = NULL;
  vxr__said = &said;
  vxp_response r;
  memset(&r, 0, sizeof r);
  int rc = vxr__obtain(m->text, m->text_size, &r);
  uint32_t n = rc == 0 && r.nkernels ? r.nkernels : 1;
  if (rc == 0 && (!(m->elf = calloc(n, sizeof *m->elf)) || !(m->elf_size = calloc(n, sizeof *m->elf_size)) ||
                  !(m->image_id = calloc(n, sizeof *m->image_id)) ||
                  !(m->functions = calloc(n, sizeof *m->functions)))) {
    vxr__fail("out of memory loading the module");
    rc = -ENOMEM;
  }
  if (rc == 0) {
    m->r = r;
    m->start = vxp_image_entry(m->r.kernels, m->r.nkernels);
    for (uint32_t i = 0; i < m->r.nkernels; i++)
      m->functions[i] = (vxr_function){m, i, NULL, 0};
    char key[65];
    vxc_compile_options o;
    int have_options;
    rc = vxr__bind_host_args(m, m->text, vxr__header(m->text, m->text_size, key, &o, &have_options));
  } else {
    vxp_response_clear(&r);
  }
  vxr__said = NULL;
  pthread_mutex_lock(&vxr.mu);
  free(m->text);
  m->text = NULL;
  m->error = rc == 0 ? NULL : said ? said : strdup("vortexd runtime: the module could not be loaded");
  if (rc == 0) free(said);
  m->state = rc == 0 ? 1 : -1;
  pthread_cond_broadcast(&vxr.loaded);
  pthread_mutex_unlock(&vxr.mu);
  return NULL;
}

/* The gpu.module text names in its header ("// vortexd-module: @NAME at
 * FILE:LINE:COL"), into m->where. */
static void vxr__where(vxr_module *m, const char *text, size_t size) {
  static const char tag[] = VXR_MODULE_TAG;
  m->where[0] = '\0';
  for (size_t at = 0; at < size;) {
    const char *nl = memchr(text + at, '\n', size - at);
    if (!nl || text[at] != '/') break;
    size_t len = (size_t)(nl - (text + at));
    if (len > sizeof tag - 1 && memcmp(text + at, tag, sizeof tag - 1) == 0) {
      size_t n = len - (sizeof tag - 1) < sizeof m->where - 1 ? len - (sizeof tag - 1) : sizeof m->where - 1;
      memcpy(m->where, text + at + sizeof tag - 1, n);
      m->where[n] = '\0';
      for (char *p = m->where; *p; p++)
        if ((unsigned char)*p < 32) *p = '?';
      break;
    }
    at += len + 1;
  }
}

void *mgpuModuleLoad(void *data, size_t gpuBlobSize) {
  pthread_mutex_lock(&vxr.mu);
  vxr_module *m = NULL;
  if (vxr__init() == 0) {
    uint8_t d[32];
    vxr__digest(data, gpuBlobSize, d);
    for (m = vxr.modules; m && memcmp(m->digest, d, 32) != 0; m = m->next) {
    }
    if (m) {
      m->refs++;
    } else if ((m = calloc(1, sizeof *m)) && (m->text = malloc(gpuBlobSize ? gpuBlobSize : 1))) {
      /* loaded on a thread of its own: a program loads every module in its
       * constructors, before main; they compile (or are fetched) side by
       * side, and the first use of each waits for it */
      memcpy(m->digest, d, 32);
      memcpy(m->text, data, gpuBlobSize);
      m->text_size = gpuBlobSize;
      vxr__where(m, data, gpuBlobSize);
      m->refs = 1;
      pthread_attr_t attr;
      pthread_t t;
      int started = pthread_attr_init(&attr) == 0 &&
                    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED) == 0 &&
                    pthread_create(&t, &attr, vxr__load, m) == 0;
      pthread_attr_destroy(&attr);
      if (!started) {
        pthread_mutex_unlock(&vxr.mu);
        vxr__load(m); /* no thread to be had: here and now */
        pthread_mutex_lock(&vxr.mu);
      }
      m->next = vxr.modules;
      vxr.modules = m;
    } else {
      free(m);
      m = NULL;
      vxr__fail("out of memory loading a module");
    }
  }
  pthread_mutex_unlock(&vxr.mu);
  if (!m) vxr__maybe_exit();
  return m;
}

void mgpuModuleUnload(void *module) {
  (void)module; /* kept: a later load of the same text needs no daemon */
}

/* Waits until m is loaded; 0, or -1 after saying (once) why it failed,
 * with the module's place in the program.  Takes and leaves vxr.mu. */
static int vxr__ready(vxr_module *m) {
  pthread_mutex_lock(&vxr.mu);
  while (m->state == 0)
    pthread_cond_wait(&vxr.loaded, &vxr.mu);
  int ok = m->state > 0;
  if (!ok && !m->said) {
    m->said = 1;
    if (m->where[0]) fprintf(stderr, "vortexd runtime: module %s could not be loaded:\n", m->where);
    fprintf(stderr, "%s\n", m->error);
  }
  pthread_mutex_unlock(&vxr.mu);
  return ok ? 0 : -1;
}

void *mgpuModuleGetFunction(void *module, const char *name) {
  vxr_module *m = module;
  if (!m) return NULL; /* the load failed and said why */
  if (vxr__ready(m) != 0) {
    vxr__maybe_exit();
    return NULL;
  }
  for (uint32_t i = 0; i < m->r.nkernels; i++) {
    const char *kn = m->r.kernels[i].name, *q = strstr(kn, "::");
    if (strcmp(kn, name) == 0 || (q && strcmp(q + 2, name) == 0)) return &m->functions[i];
  }
  vxr__fail("the module%s%s has no kernel %s", m->where[0] ? " " : "", m->where, name);
  vxr__maybe_exit();
  return NULL;
}

/* ---- launches ---- */

/* Copies registered host memory into its mirrors (to_device) or back. */
static void vxr__sync_regions(int to_device) {
  for (vxr_region *r = vxr.regions; r; r = r->next) {
    if (to_device)
      memcpy(vxr.arena + r->mirror, r->host, r->size);
    else if (!r->read_only)
      memcpy(r->host, vxr.arena + r->mirror, r->size);
  }
}

/* The launch's argument values in values (one per argument of k: the
 * host's scalar in place, a pointer's device address in addrs), read
 * from the paramsCount launch parameters (a memref: its descriptor's
 * fields); host memory the program never registered is mirrored for this
 * launch.  Returns how many parameters it read (short when the program
 * passed too few), with a message in err for an address the device cannot
 * see.  Under vxr.mu. */
static size_t vxr__collect_args(const vxp_kernel *k, void **params, size_t paramsCount, const void **values,
                                uint64_t *addrs, char *err, size_t errcap) {
  size_t p = 0;
  for (uint32_t i = 0; !err[0] && i < k->nargs; i++) {
    const vxp_arg *a = &k->args[i];
    if (a->kind == VXP_ARG_POINTER) {
      size_t used = a->elem_size ? 3 + 2 * (size_t)a->rank : 1;
      if (p + used > paramsCount) break;
      const uint8_t *host = a->elem_size
                                ? *(uint8_t **)params[p + 1] + *(int64_t *)params[p + 2] * a->elem_size
                                : *(uint8_t **)params[p];
      addrs[i] = vxr__device_address(host);
      if (!addrs[i] && a->elem_size) {
        /* host memory the program never registered: mirrored for this
         * launch, over the span its sizes and strides reach (as the SPIR-V
         * and Vulkan runners treat host buffers) */
        uint64_t span = 1;
        for (uint32_t r = 0; r < a->rank; r++) {
          int64_t size = *(int64_t *)params[p + 3 + r], stride = *(int64_t *)params[p + 3 + a->rank + r];
          if (size <= 0) span = 0;
          if (span && stride > 0) span += (uint64_t)(size - 1) * (uint64_t)stride;
        }
        vxr_region *reg = span ? calloc(1, sizeof *reg) : NULL;
        int64_t off = reg ? vxr__alloc(span * a->elem_size) : -1;
        if (off >= 0) {
          *reg = (vxr_region){(uint8_t *)host, span * a->elem_size, (uint32_t)off, 1, 0, vxr.regions};
          vxr.regions = reg;
          addrs[i] = vxr.base + (uint32_t)off;
        } else
          free(reg);
      }
      if (!addrs[i])
        snprintf(err, errcap,
                 "argument %u of kernel %s points to memory the device cannot see (allocate it with "
                 "gpu.alloc or register it with gpu.host_register)",
                 i, k->name);
      values[i] = &addrs[i];
      p += used;
    } else {
      if (p + 1 > paramsCount) break;
      values[i] = params[p++]; /* host and RISC-V are little-endian: the low bytes */
    }
  }
  return p;
}

/* Frees the mirrors of host memory made for one launch only. Under vxr.mu. */
static void vxr__drop_launch_mirrors(void) {
  for (vxr_region **pp = &vxr.regions; *pp;) {
    vxr_region *r = *pp;
    if (r->launch_only) {
      *pp = r->next;
      vxr__free(r->mirror, (uint32_t)r->size);
      free(r);
    } else
      pp = &r->next;
  }
}

void mgpuLaunchKernel(void *function, intptr_t gridX, intptr_t gridY, intptr_t gridZ, intptr_t blockX,
                      intptr_t blockY, intptr_t blockZ, int32_t smem, void *stream, void **params,
                      void **extra, size_t paramsCount) {
  (void)stream, (void)extra;
  vxr_function *f = function;
  if (!f) return;
  pthread_mutex_lock(&vxr.mu);
  const vxp_kernel *k = &f->m->r.kernels[f->kernel];
  char err[4096] = "";
  vxr__args_match(f, k, err, sizeof err); /* nothing is read from the host unless it matches */
  const void **values = calloc(k->nargs ? k->nargs : 1, sizeof *values);
  /* device addresses, as wide as a register of the kernel's target can
   * hold (vxc_pack_args copies the record's size: 4 or 8 bytes) */
  uint64_t *addrs = calloc(k->nargs ? k->nargs : 1, sizeof *addrs);
  size_t p = values && addrs ? vxr__collect_args(k, params, paramsCount, values, addrs, err, sizeof err) : 0;
  if (!err[0] && p != paramsCount)
    snprintf(err, sizeof err, "kernel %s takes %zu launch parameters, the program passed %zu", k->name, p,
             paramsCount);
  uint32_t grid[3] = {(uint32_t)gridX, (uint32_t)gridY, (uint32_t)gridZ};
  uint32_t block[3] = {(uint32_t)blockX, (uint32_t)blockY, (uint32_t)blockZ};
  uint64_t lb = vxc_local_bytes(k, block, (uint32_t)smem);
  uint32_t local_bytes = lb > UINT32_MAX ? UINT32_MAX : (uint32_t)lb; /* over a core's: the device says so */
  vxr_module *m = f->m;
  /* what mscratch points to: the module's launch record (the kernel id,
   * then the argument buffer) when one image runs every kernel, else the
   * argument buffer alone */
  const uint32_t hdr = m->start ? vxp_launch_header_size(m->r.kernels, m->r.nkernels) : 0,
                 bytes = hdr + k->buffer_size;
  int64_t argbuf = err[0] ? -1 : vxr__alloc(bytes);
  if (!err[0] && argbuf < 0) snprintf(err, sizeof err, "device memory exhausted (VORTEXD_DEVICE_MEMORY)");
  if (!err[0] && hdr) { /* the rest of the header is zero (vxr__alloc) */
    uint8_t *rec = vxr.arena + argbuf;
    for (int b = 0; b < 4; b++)
      rec[b] = (uint8_t)(k->kernel_id >> (8 * b));
  }
  if (!err[0] &&
      vxc_pack_args(k, values, grid, block, (uint32_t)smem, vxr.arena + argbuf + hdr, k->buffer_size) != 0)
    snprintf(err, sizeof err, "cannot pack the arguments of kernel %s", k->name);
  /* a Vortex device takes the .vxbin vortexd linked and cached, when it
   * has an SDK (the module's: at its dispatcher, or at its one kernel's
   * entry); otherwise the backend links the object itself */
  const uint32_t slot = m->start ? 0 : f->kernel;
  if (!err[0] && !m->elf[slot] && m->start && m->r.image && vxr.backend->runs_vxbin) {
    m->elf[slot] = m->r.image, m->elf_size[slot] = m->r.image_size; /* moved */
    m->r.image = NULL, m->r.image_size = 0;
  }
  if (!err[0] && !m->elf[slot] &&
      vxr.backend->link(vxr.backend, m->r.object, m->r.object_size, k, m->start ? m->start : k->entry,
                        &m->elf[slot], &m->elf_size[slot], err, sizeof err) != 0 &&
      !err[0])
    snprintf(err, sizeof err, "link failed");
  if (!err[0] && !m->image_id[slot]) m->image_id[slot] = ++vxr.images;
  if (!err[0]) {
    vxr__sync_regions(1);
    uint32_t top = vxr.arena_top < 4096 ? 4096 : (vxr.arena_top + 4095u) & ~4095u;
    vxr_launch l = {.elf = m->elf[slot],
                    .elf_size = m->elf_size[slot],
                    .image_id = m->image_id[slot],
                    .arena = vxr.arena,
                    .arena_size = top,
                    .args_addr = vxr.base + (uint32_t)argbuf,
                    .args_bytes = bytes,
                    .device_base = vxr.base,
                    .kernel = k,
                    .threads_per_block = block[0] * block[1] * block[2],
                    .grid = {grid[0], grid[1], grid[2]},
                    .block = {block[0], block[1], block[2]},
                    .local_bytes = local_bytes};
    if (vxr.backend->run(vxr.backend, &l, err, sizeof err) == 0) vxr__sync_regions(0);
  }
  if (argbuf >= 0) vxr__free((uint32_t)argbuf, bytes);
  vxr__drop_launch_mirrors(); /* this launch's own */
  free(values);
  free(addrs);
  pthread_mutex_unlock(&vxr.mu);
  if (err[0]) {
    vxr__fail("launch of %s: %s", k->name, err);
    vxr__maybe_exit();
  }
}

/* ---- streams and events: launches are synchronous ---- */

static int vxr__token;
void *mgpuStreamCreate(void) { return &vxr__token; }
void mgpuStreamDestroy(void *stream) { (void)stream; }
void mgpuStreamSynchronize(void *stream) { (void)stream; }
void mgpuStreamWaitEvent(void *stream, void *event) { (void)stream, (void)event; }
void *mgpuEventCreate(void) { return &vxr__token; }
void mgpuEventDestroy(void *event) { (void)event; }
void mgpuEventSynchronize(void *event) { (void)event; }
void mgpuEventRecord(void *event, void *stream) { (void)event, (void)stream; }
void mgpuSetDefaultDevice(int32_t device) { (void)device; }

/* ---- memory ---- */

void *mgpuMemAlloc(uint64_t sizeBytes, void *stream, bool isHostShared) {
  (void)stream, (void)isHostShared; /* arena memory is host-visible anyway */
  pthread_mutex_lock(&vxr.mu);
  void *p = NULL;
  if (vxr__init() == 0) {
    int64_t off = vxr__alloc(sizeBytes + VXR_ALIGN);
    if (off >= 0) { /* the size in front, for mgpuMemFree */
      memcpy(vxr.arena + off, &sizeBytes, sizeof sizeBytes);
      p = vxr.arena + off + VXR_ALIGN;
    } else {
      vxr__fail("device memory exhausted allocating %llu bytes (VORTEXD_DEVICE_MEMORY)",
                (unsigned long long)sizeBytes);
      vxr__maybe_exit();
    }
  }
  pthread_mutex_unlock(&vxr.mu);
  return p;
}

void mgpuMemFree(void *ptr, void *stream) {
  (void)stream;
  if (!ptr) return;
  pthread_mutex_lock(&vxr.mu);
  uint8_t *b = (uint8_t *)ptr - VXR_ALIGN;
  uint64_t size;
  memcpy(&size, b, sizeof size);
  if (b >= vxr.arena && b < vxr.arena + vxr.arena_cap)
    vxr__free((uint32_t)(b - vxr.arena), (uint32_t)size + VXR_ALIGN);
  pthread_mutex_unlock(&vxr.mu);
}

void mgpuMemcpy(void *dst, void *src, size_t sizeBytes, void *stream) {
  (void)stream;
  if (sizeBytes && (!dst || !src)) { /* memory a failed allocation returned */
    vxr__fail("copy of %zu bytes %s a null pointer", sizeBytes, dst ? "from" : "to");
    vxr__maybe_exit();
    return;
  }
  memmove(dst, src, sizeBytes); /* device memory is host-addressable here */
}

void mgpuMemset32(void *dst, unsigned int value, size_t count, void *stream) {
  (void)stream;
  for (size_t i = 0; i < count; i++)
    memcpy((uint8_t *)dst + 4 * i, &value, 4);
}

void mgpuMemset16(void *dst, unsigned short value, size_t count, void *stream) {
  (void)stream;
  for (size_t i = 0; i < count; i++)
    memcpy((uint8_t *)dst + 2 * i, &value, 2);
}

void mgpuMemHostRegister(void *ptr, uint64_t sizeBytes) {
  pthread_mutex_lock(&vxr.mu);
  vxr_region *r = vxr__init() == 0 ? calloc(1, sizeof *r) : NULL;
  int64_t off = r ? vxr__alloc(sizeBytes) : -1;
  if (off < 0) {
    vxr__fail("cannot mirror %llu bytes of host memory in device memory", (unsigned long long)sizeBytes);
    free(r);
    vxr__maybe_exit();
  } else {
    *r = (vxr_region){ptr, sizeBytes, (uint32_t)off, 0, 0, vxr.regions};
    vxr.regions = r;
  }
  pthread_mutex_unlock(&vxr.mu);
}

void mgpuMemHostRegisterMemRef(int64_t rank, vortexd_memref *d, int64_t elementSizeBytes) {
  int64_t n = 1;
  for (int64_t i = 0; i < rank; i++)
    n *= d->sizes_strides[i];
  mgpuMemHostRegister((char *)d->aligned + d->offset * elementSizeBytes, (uint64_t)(n * elementSizeBytes));
}

void mgpuMemHostUnregister(void *ptr) {
  pthread_mutex_lock(&vxr.mu);
  for (vxr_region **pp = &vxr.regions; *pp; pp = &(*pp)->next)
    if ((*pp)->host == ptr) {
      vxr_region *r = *pp;
      *pp = r->next;
      vxr__free(r->mirror, (uint32_t)r->size);
      free(r);
      break;
    }
  pthread_mutex_unlock(&vxr.mu);
}

void mgpuMemHostUnregisterMemRef(int64_t rank, vortexd_memref *d, int64_t elementSizeBytes) {
  (void)rank;
  mgpuMemHostUnregister((char *)d->aligned + d->offset * elementSizeBytes);
}

/* Called by lowered host code before a launch that passes a pointer to a
 * host constant (a printf format, say): the device gets a read-only copy
 * of those size bytes, from then on.  Registering the same constant again
 * does nothing. */
void vortexdRegisterConstant(void *ptr, int64_t size);
void vortexdRegisterConstant(void *ptr, int64_t size) {
  pthread_mutex_lock(&vxr.mu);
  int known = 0;
  for (vxr_region *r = vxr.regions; r && !known; r = r->next)
    known = r->host == ptr;
  vxr_region *r = !known && size > 0 && vxr__init() == 0 ? calloc(1, sizeof *r) : NULL;
  int64_t off = r ? vxr__alloc((uint64_t)size) : -1;
  if (off >= 0) {
    *r = (vxr_region){ptr, (uint64_t)size, (uint32_t)off, 0, 1, vxr.regions};
    vxr.regions = r;
  } else
    free(r);
  pthread_mutex_unlock(&vxr.mu);
}
