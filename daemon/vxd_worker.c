/*
 * vxd_worker.c - one compile worker process.
 *
 * Forked by the daemon from a template compiler it built before serving
 * (vxd_pool.c), with its stdin/stdout on pipes: the worker starts with
 * its MLIR context, pass pipelines and target machine made, paying
 * neither an exec nor the start-up of LLVM and MLIR.  Reads compile
 * requests as protocol frames from stdin, compiles each, writes one
 * response frame per request to stdout.  A crash here loses only the
 * request in flight: the daemon answers it with an error and forks another
 * worker.
 *
 * The compiler is re-created every VXD_WORKER_RECYCLE compiles: an MLIR
 * context never frees the types and attributes it has uniqued, so a worker
 * that compiled thousands of distinct modules would otherwise only grow.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache/vxk_entry.h"
#include "lowering/vxl.h"
#include "protocol/vxp.h"
#include "protocol/vxp_io.h"
#include "runtime/mgpu/vxr_vxbin.h"
#include "vxd.h"
#include "vxd_wire.h"

/* Moves lowering kernel k into its wire record *w (k is left empty): the
 * one place the lowering's result becomes the protocol's.  Returns 0 or
 * -ENOMEM (k untouched). */
static int vxd__kernel_to_wire(vxl_kernel *k, vxp_kernel *w) {
  if (vxd_kernel_wire_view(k, w) != 0) return -ENOMEM;
  free(k->args); /* w's strings were k's: now w owns them */
  memset(k, 0, sizeof *k);
  return 0;
}

/* The options text a compile's entries record (vxd_cache_origin of the
 * request's options). */
static void vxd__entry_options(const vxd_config *cfg, const vxp_request *req, char options[VXD_OPTIONS_MAX]) {
  vxl_options o;
  vxd_options_from_request(cfg, req, &o);
  char source[VXL_DEBUG_FILE_MAX + 1];
  vxd_cache_origin(&o, req->source_name, source, options);
}

/* The one entry every level stores (vxk_entry_encode) of object, image
 * (NULL: none) and the n kernel records ks under key, with options, signed
 * when a signing key is configured: *entry (malloc()), *entry_size.
 * Returns 0, or -ENOMEM / -EINVAL. */
static int vxd__encode_entry(const vxd_config *cfg, const char *key, const char *options,
                             const uint8_t *object, size_t object_size, const uint8_t *image,
                             size_t image_size, const vxp_kernel *ks, uint32_t n, uint8_t **entry,
                             size_t *entry_size) {
  vxp_entry_kernel *recs = calloc(n ? n : 1, sizeof *recs);
  int rc = recs ? 0 : -ENOMEM;
  uint32_t done = 0;
  for (; rc == 0 && done < n; done++) {
    uint8_t *rec = NULL;
    size_t len = 0;
    if (vxp_kernel_meta_encode(&ks[done], &rec, &len) != VXP_OK) {
      rc = -ENOMEM;
      break;
    }
    recs[done] = (vxp_entry_kernel){ks[done].name, strlen(ks[done].name), rec, len};
  }
  if (rc == 0)
    rc = vxk_entry_encode(key, options, object, object_size, image, image_size, recs, done,
                          cfg ? cfg->remote_signer : NULL, entry, entry_size);
  for (uint32_t i = 0; recs && i < done; i++)
    free((uint8_t *)recs[i].record);
  free(recs);
  return rc;
}

/* ---- the pieces of a module: the daemon's cache, asked over the pipes ---- */

/* The compile in progress, as the crew's piece store sees it. */
typedef struct {
  const vxd_config *cfg;
  const vxp_request *req;
  char options[VXD_OPTIONS_MAX]; /* its entries' options text; "" until the first is kept */
  vxp_piece *kept;               /* the pieces compiled, for the reply; malloc() */
  uint32_t nkept;
} vxd__pieces;

static int vxd__piece_key(void *ud, const vxl_options *opts, const char *source_name, const char *inputs,
                          size_t len, char key[65]) {
  vxd__pieces *ps = ud;
  return vxd_piece_key(ps->cfg, opts, source_name, inputs, len, key) == 0 ? 0 : -EINVAL;
}

/* Reads one frame from stdin: *payload (malloc()), *len bytes.  0; 1 when
 * the input ended before it (the daemon is gone); -1 when what came is no
 * frame (out of step with the daemon: the caller exits, and the daemon
 * starts another worker). */
static int vxd__read_frame(uint8_t **payload, uint32_t *len) {
  uint8_t hdr[VXP_FRAME_HEADER_SIZE];
  *payload = NULL;
  if (vxp_read_full(0, hdr, sizeof hdr) != 0) return 1;
  if (vxp_frame_length(hdr, VXP_MAX_FRAME_DEFAULT, len) != VXP_OK) return -1;
  *payload = malloc(*len ? *len : 1);
  if (!*payload || vxp_read_full(0, *payload, *len) != 0) {
    free(*payload);
    *payload = NULL;
    return -1;
  }
  return 0;
}

/* A piece's entry as the lowering's result: its object and kernels.  0,
 * or -EINVAL / -ENOMEM (res cleared). */
static int vxd__piece_result(const char *key, uint8_t *entry, size_t size, vxl_result *res) {
  vxp_response r = {.key = (char *)key, .entry = entry, .entry_size = size};
  int rc = vxp_entry_unpack(&r, NULL) == VXP_OK && !r.image ? 0 : -EINVAL;
  memset(res, 0, sizeof *res);
  if (rc == 0) {
    res->kernels = calloc(r.nkernels ? r.nkernels : 1, sizeof *res->kernels);
    rc = res->kernels ? 0 : -ENOMEM;
  }
  for (uint32_t i = 0; rc == 0 && i < r.nkernels; i++, res->nkernels++)
    rc = vxd_kernel_from_wire(&r.kernels[i], &res->kernels[i]);
  if (rc == 0) {
    res->object = r.object, res->object_size = r.object_size; /* moved */
    r.object = NULL;
    res->ok = true;
  } else {
    vxl_result_clear(res);
  }
  r.key = NULL, r.entry = NULL; /* the caller's */
  vxp_response_clear(&r);
  return rc;
}

static int vxd__piece_lookup(void *ud, uint32_t n, const char (*keys)[65], vxl_result *got, uint8_t *hit) {
  vxd__pieces *ps = ud;
  if (ps->req->cache != VXP_CACHE_USE) return 0; /* recache, bypass: read nothing */
  vxp_response q = {.id = ps->req->id, .op = VXP_OP_PIECES, .status = VXP_STATUS_OK, .npieces = n};
  q.pieces = calloc(n, sizeof *q.pieces);
  if (!q.pieces) return -ENOMEM;
  for (uint32_t i = 0; i < n; i++)
    memcpy(q.pieces[i].key, keys[i], 65);
  uint8_t *frame = NULL;
  size_t flen = 0;
  int rc = vxp_response_encode(&q, &frame, &flen) == VXP_OK ? 0 : -ENOMEM;
  vxp_response_clear(&q);
  if (rc == 0 && vxp_write_full(1, frame, flen, 0) != 0) _exit(0); /* the daemon is gone */
  free(frame);
  if (rc) return rc;
  uint8_t *payload = NULL;
  uint32_t len = 0;
  if (vxd__read_frame(&payload, &len) != 0) _exit(3); /* gone, or out of step with the daemon */
  vxp_request ans;
  rc = vxp_request_decode(payload, len, &ans) == VXP_OK ? 0 : -EPROTO;
  free(payload);
  if (rc == 0 && (ans.op != VXP_OP_PIECES || ans.npieces != n)) rc = -EPROTO;
  for (uint32_t i = 0; rc == 0 && i < n; i++) {
    if (strcmp(ans.pieces[i].key, keys[i]) != 0) {
      rc = -EPROTO;
    } else if (ans.pieces[i].entry) {
      if (vxd__piece_result(keys[i], ans.pieces[i].entry, ans.pieces[i].entry_size, &got[i]) == 0) hit[i] = 1;
    }
  }
  vxp_request_clear(&ans);
  return rc;
}

/* A piece's result sealed as an entry under key (vxd__encode_entry, as a
 * module's is), to go with the reply. */
static void vxd__piece_keep(void *ud, const char *key, const vxl_result *res) {
  vxd__pieces *ps = ud;
  if (ps->req->cache == VXP_CACHE_BYPASS) return; /* write nothing */
  if (!ps->options[0]) vxd__entry_options(ps->cfg, ps->req, ps->options);
  vxp_kernel *ks = calloc(res->nkernels ? res->nkernels : 1, sizeof *ks);
  vxp_piece *more = realloc(ps->kept, (ps->nkept + 1) * sizeof *more);
  if (more) ps->kept = more;
  int rc = ks && more ? 0 : -ENOMEM;
  uint32_t n = 0;
  for (; rc == 0 && n < res->nkernels; n++) /* views: the strings are res's */
    if (vxd_kernel_wire_view(&res->kernels[n], &ks[n]) != 0) rc = -ENOMEM;
  vxp_piece p;
  memset(&p, 0, sizeof p);
  memcpy(p.key, key, 65);
  if (rc == 0 && vxd__encode_entry(ps->cfg, key, ps->options, res->object, res->object_size, NULL, 0, ks, n,
                                   &p.entry, &p.entry_size) == 0)
    ps->kept[ps->nkept++] = p;
  for (uint32_t i = 0; ks && i < n; i++)
    free(ks[i].args);
  free(ks);
}

/* Compiles one request into resp (ownership of the results moves into resp). */
static void vxd__compile(vxd_crew *crew, vxl_compiler *c, const vxd_config *cfg, const vxp_request *req,
                         vxp_response *resp) {
  vxl_options o;
  vxd_options_from_request(cfg, req, &o);
  vxl_result r;
  vxd__pieces ps = {.cfg = cfg, .req = req};
  vxd_piece_store store = {&ps, vxd__piece_key, vxd__piece_lookup, vxd__piece_keep};
  vxd_crew_set_store(crew, &store);
  int rc = vxd_crew_compile(crew, c, (const char *)req->source, req->source_len, req->source_name, &o, &r);
  vxd_crew_set_store(crew, NULL);
  resp->pieces = ps.kept; /* sent with the reply, when it fits in the frame */
  resp->npieces = ps.nkept;
  resp->op = VXP_OP_COMPILE;
  resp->id = req->id;
  if (rc == -ENOMEM) {
    resp->status = VXP_STATUS_INTERNAL;
    resp->message = strdup("compile worker ran out of memory");
    vxl_result_clear(&r);
    return;
  }
  resp->kernels = calloc(r.nkernels ? r.nkernels : 1, sizeof *resp->kernels);
  for (uint32_t i = 0; resp->kernels && i < r.nkernels; i++, resp->nkernels++)
    if (vxd__kernel_to_wire(&r.kernels[i], &resp->kernels[i]) != 0) break;
  if (!resp->kernels || resp->nkernels != r.nkernels) {
    resp->status = VXP_STATUS_INTERNAL;
    resp->message = strdup("compile worker ran out of memory");
    vxl_result_clear(&r);
    return;
  }
  resp->status = r.ok ? VXP_STATUS_OK : VXP_STATUS_COMPILE_ERROR;
  resp->object = r.object; /* moved, like the rest */
  resp->object_size = r.object_size;
  free(r.kernels);
  resp->diags = r.diags;
  resp->ndiags = r.ndiags;
  resp->lowered_ir = r.lowered_ir;
  if (!r.ok) resp->message = strdup("compilation failed");
}

/* The lowering's key callback: the key vortexd gives a device module's text
 * compiled with opts (the program's options, or its module's own
 * #vortex.target's), as libvortexd_runtime compiles it: it sends the
 * options the module's "// vortexd-options:" line holds. */
static int vxd__module_key(void *ud, const vxl_options *opts, const char *text, size_t len, char key[65]) {
  const vxd_config *cfg = ud;
  return vxd_cache_key(cfg, opts, VXP_DEVICE_MODULE_NAME, (const uint8_t *)text, len, key);
}

/* Lowers a program's host side into resp. */
static void vxd__host(vxl_compiler *c, const vxd_config *cfg, const vxp_request *req, vxp_response *resp) {
  vxl_host_result h;
  vxl_options o;
  vxd_options_from_request(cfg, req, &o); /* the request's, the daemon's target where it named none */
  o.emit_ir = 0;
  int rc =
      vxl_lower_host(c, (const char *)req->source, req->source_len,
                     req->source_name ? req->source_name : "<source>", &o, vxd__module_key, (void *)cfg, &h);
  resp->op = VXP_OP_HOST;
  resp->id = req->id;
  resp->status = rc ? VXP_STATUS_INTERNAL : h.ok ? VXP_STATUS_OK : VXP_STATUS_COMPILE_ERROR;
  resp->host_ir = h.host_ir; /* moved */
  resp->diags = h.diags;
  resp->ndiags = h.ndiags;
  if (!h.ok) resp->message = strdup(rc ? "compile worker ran out of memory" : "host lowering failed");
  if (h.ok && (req->host_object || req->host_bitcode)) {
    char err[VXR_LINK_DIAG_MAX + 256];
    vxl_run_entry run = {VXP_RUN_ENTRY, req->entry, (vxl_entry_result)req->entry_result};
    uint8_t *bc = NULL;
    size_t n = 0;
    int e = vxl_emit_host_bitcode(c, h.host_ir, strlen(h.host_ir), req->entry ? &run : NULL, &bc, &n, err,
                                  sizeof err);
    int program_error = e == -ENOENT; /* an entry the program lacks; the rest is ours */
    /* the host's target is not in vortexd: its code generator finishes it */
    const char *emit[] = {req->host_bitcode ? "--emit=bc" : "--emit=obj"};
    if (e == 0 && !cfg->hostcc[0]) {
      snprintf(err, sizeof err, "the host's code generator (vortexd-hostcc) is not installed beside vortexd");
      e = -ENOSYS;
    } else if (e == 0) {
      e = vxr_run_filter(cfg->hostcc, emit, 1, bc, n, &resp->object, &resp->object_size, err, sizeof err);
    }
    free(bc);
    if (e) {
      resp->status = program_error ? VXP_STATUS_COMPILE_ERROR : VXP_STATUS_INTERNAL;
      resp->message = strdup(err);
    }
  }
}

_Static_assert(VXL_RESULT_VOID == (int)VXP_RESULT_VOID && VXL_RESULT_I32 == (int)VXP_RESULT_I32 &&
                   VXL_RESULT_I64 == (int)VXP_RESULT_I64 && VXL_RESULT_F32 == (int)VXP_RESULT_F32,
               "vxl_entry_result and vxp_entry_result agree value for value");

/* With a Vortex SDK configured: a successful compile's module also as one
 * .vxbin image, cached with it, that runs every kernel of the module: its
 * dispatcher (VXP_DISPATCH_ENTRY; a module of one kernel has none, its
 * entry starts the image) started as the kernel ABI's startup code calls
 * its entry (main or kernel_main: the SDK must be of the request's
 * target).  A link failure fails the compile (internal: the SDK, not the
 * source, is at fault). */
static void vxd__link_image(const vxd_config *cfg, vxp_response *resp) {
  const char *start = vxp_image_entry(resp->kernels, resp->nkernels);
  if (!cfg || !cfg->vortex_sdk[0] || resp->status != VXP_STATUS_OK || !start) return;
  const vxp_kernel *k = &resp->kernels[0]; /* every kernel has the module's target */
  char err[VXR_LINK_DIAG_MAX + 1024];
  if (vxr_link_vxbin(cfg->vortex_sdk, VXD_LD, k->xlen == 64 ? VXD_LIBC64 : VXD_LIBC,
                     k->xlen == 64 ? VXD_LIBGCC64 : VXD_LIBGCC, resp->object, resp->object_size, start,
                     k->vortex_abi, &resp->image, &resp->image_size, err, sizeof err) != 0) {
    resp->status = VXP_STATUS_INTERNAL;
    free(resp->message);
    resp->message = strdup(err);
  }
}

/* Encodes a successful compile's object and kernel records into the one
 * entry every level stores and the client decodes (vxk_entry_encode),
 * under the key the daemon sent, signed when a signing key is configured.
 * The object and records are not sent apart from it.  Returns 0, or
 * -ENOMEM / -EINVAL (no valid key: a daemon fault). */
static int vxd__seal_entry(const vxd_config *cfg, const vxp_request *req, vxp_response *resp) {
  if (!req->key || !vxk_key_valid(req->key)) return -EINVAL;
  char options[VXD_OPTIONS_MAX];
  vxd__entry_options(cfg, req, options);
  int rc =
      vxd__encode_entry(cfg, req->key, options, resp->object, resp->object_size, resp->image,
                        resp->image_size, resp->kernels, resp->nkernels, &resp->entry, &resp->entry_size);
  if (rc != 0) return rc;
  resp->key = strdup(req->key);
  free(resp->object); /* carried in the entry only */
  free(resp->image);
  resp->object = NULL;
  resp->object_size = 0;
  resp->image = NULL;
  resp->image_size = 0;
  for (uint32_t i = 0; i < resp->nkernels; i++)
    vxp_kernel_clear(&resp->kernels[i]);
  free(resp->kernels);
  resp->kernels = NULL;
  resp->nkernels = 0;
  return resp->key ? 0 : -ENOMEM;
}

/* The request being compiled, for the fatal-error handler: this process
 * compiles one request at a time on its only thread. */
static uint64_t vxd__current_id;

/* What the compile's key was derived from besides the source
 * (vxd_key_inputs) and the source's line hashes (vxk_line_hashes), into
 * resp for the daemon to keep beside the entry.  0 or -ENOMEM. */
static int vxd__record_inputs(const vxd_config *cfg, const vxp_request *req, vxp_response *resp) {
  vxl_options o;
  vxd_options_from_request(cfg, req, &o);
  resp->key_inputs = vxd_key_inputs(cfg, &o, req->source_name);
  if (!resp->key_inputs ||
      vxk_line_hashes(req->source, req->source_len, &resp->line_hashes, &resp->line_hashes_size) != VXK_OK)
    return -ENOMEM;
  return 0;
}

/* LLVM or MLIR hit a fatal error in the middle of a compile: answer that
 * request with a clean internal error, then exit (the daemon forks another
 * worker).  Uses only what is safe after a failure inside LLVM: an encoder
 * and write(2). */
static void vxd__fatal(const char *reason) {
  char msg[512];
  snprintf(msg, sizeof msg, "the compiler hit a fatal error: %s", reason ? reason : "(no reason)");
  vxp_response r = {
      .id = vxd__current_id, .op = VXP_OP_COMPILE, .status = VXP_STATUS_INTERNAL, .message = msg};
  uint8_t *frame = NULL;
  size_t len = 0;
  if (vxp_response_encode(&r, &frame, &len) == VXP_OK) vxp_write_full(1, frame, len, 0);
  _exit(VXD_WORKER_EXIT_FATAL);
}

int vxd_worker_serve(vxl_compiler *c, const vxd_config *cfg, vxd_cores *cores, unsigned slot) {
  /* piece_helpers 0: a crew that never borrows, for its piece store */
  vxd_crew *crew = vxd_crew_create(cfg->piece_helpers ? cores : NULL, slot, cfg->piece_helpers);
  if (!crew) return 1;
  signal(SIGPIPE, SIG_IGN);
  signal(SIGXFSZ, SIG_IGN); /* a file-size limit fails the write (like a full disk), not the process */
  vxl_install_fatal_error_handler(vxd__fatal);
  signal(SIGINT, SIG_IGN); /* the daemon decides when workers stop */
  unsigned compiles = 0;
  for (;;) {
    uint8_t *payload = NULL;
    uint32_t len = 0;
    int frc = vxd__read_frame(&payload, &len);
    if (frc > 0) break; /* daemon gone: EOF */
    if (frc < 0) return 3;
    vxp_request req;
    vxp_response resp;
    memset(&resp, 0, sizeof resp);
    int drc = vxp_request_decode(payload, len, &req);
    free(payload);
    uint64_t id = req.id;
    if (drc != VXP_OK || (req.op != VXP_OP_COMPILE && req.op != VXP_OP_HOST)) {
      resp.id = id;
      resp.op = VXP_OP_COMPILE;
      resp.status = VXP_STATUS_INTERNAL;
      resp.message = strdup("worker received a malformed compile request");
    } else {
      if (++compiles % VXD_WORKER_RECYCLE == 0) {
        vxl_compiler_destroy(c);
        if (vxd_compiler_new(&c) != 0) return 1;
      }
      vxd__current_id = id;
      if (req.op == VXP_OP_HOST)
        vxd__host(c, cfg, &req, &resp);
      else {
        vxd__compile(crew, c, cfg, &req, &resp);
        vxd__link_image(cfg, &resp);
        int src = resp.status == VXP_STATUS_OK ? vxd__seal_entry(cfg, &req, &resp) : 0;
        if (src == 0 && resp.status == VXP_STATUS_OK) /* kept beside the entry: explains later misses */
          src = vxd__record_inputs(cfg, &req, &resp);
        if (src != 0) {
          resp.status = VXP_STATUS_INTERNAL;
          free(resp.message);
          resp.message = strdup(src == -ENOMEM ? "compile worker ran out of memory"
                                               : "compile request without a valid cache key");
        }
      }
    }
    vxp_request_clear(&req);
    uint8_t *frame = NULL;
    size_t flen = 0;
    int erc = vxp_response_encode(&resp, &frame, &flen);
    if (erc == VXP_ETOOBIG && resp.npieces) { /* the module first: its pieces are not kept */
      for (uint32_t i = 0; i < resp.npieces; i++)
        free(resp.pieces[i].entry);
      free(resp.pieces);
      resp.pieces = NULL, resp.npieces = 0;
      erc = vxp_response_encode(&resp, &frame, &flen);
    }
    vxp_response_clear(&resp);
    if (erc != VXP_OK) {
      /* objects too large for one frame, or no memory: say so instead */
      vxp_response small = {.id = id,
                            .op = VXP_OP_COMPILE,
                            .status = VXP_STATUS_INTERNAL,
                            .message = (char *)vxp_strerror(erc)};
      if (vxp_response_encode(&small, &frame, &flen) != VXP_OK) return 4;
    }
    int wrc = vxp_write_full(1, frame, flen, 0);
    free(frame);
    if (wrc != 0) break;
  }
  vxd_crew_destroy(crew);
  vxl_compiler_destroy(c);
  return 0;
}
