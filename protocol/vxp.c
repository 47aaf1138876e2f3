/*
 * vxp.c - msgpack encoding of the vortexd protocol (grammar in vxp.h and
 * docs/PROTOCOL.md).  Pure functions: no I/O, no global state, any thread.
 *
 * Decoding is strict for requests (an unknown key or a wrong value type is
 * an error the daemon reports back) and tolerant of unknown keys in
 * responses, so a newer daemon may add fields without breaking older clients.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <msgpack.h>

#include "vxp.h"

int vxp_key_prefix_valid(const char *s, size_t min) {
  if (!s) return 0;
  size_t n = 0;
  for (; n <= 64 && ((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f')); n++) {
  }
  return s[n] == '\0' && n >= min && n <= 64;
}

const char *vxp_strerror(int err) {
  switch (err) {
  case VXP_OK: return "success";
  case VXP_ENOMEM: return "out of memory";
  case VXP_EFORMAT: return "malformed message (not a msgpack map of the expected shape)";
  case VXP_ETOOBIG: return "frame larger than the maximum frame size";
  case VXP_EEMPTY: return "empty frame";
  case VXP_EUNKNOWNKEY: return "unknown key in message";
  case VXP_ETYPE: return "value of the wrong type";
  case VXP_EMISSING: return "required key missing";
  case VXP_ELAYOUT: return "kernel record with an impossible argument layout";
  default: return err < 0 && err > -VXP_EPROJECT_BASE ? strerror(-err) : "unknown error";
  }
}

static const char *const vxp__ops[] = {NULL,     "hello",      "compile", "fetch",   "stats",
                                       "verify", "zero_stats", "clear",   "prune",   "stop",
                                       "host",   "list",       "remove",  "explain", "pieces"};
static const char *const vxp__cache_modes[] = {"use", "recache", "bypass"};

/* The names of vxp_entry_result, as a request spells them. */
static const char *const vxp__entry_results[] = {"void", "i32", "i64", "f32"};
static const char *const vxp__statuses[] = {"ok", "compile_error", "bad_request", "not_found", "internal"};

const char *vxp_op_name(vxp_op op) { return (op >= VXP_OP_HELLO && op <= VXP_OP_LAST) ? vxp__ops[op] : NULL; }

const char *vxp_status_name(vxp_status s) {
  return (s <= VXP_STATUS_INTERNAL) ? vxp__statuses[s] : "unknown";
}

int vxp_frame_length(const uint8_t h[VXP_FRAME_HEADER_SIZE], uint32_t max_frame, uint32_t *len) {
  uint32_t n = ((uint32_t)h[0] << 24) | ((uint32_t)h[1] << 16) | ((uint32_t)h[2] << 8) | h[3];
  if (n == 0) return VXP_EEMPTY;
  if (n > max_frame) return VXP_ETOOBIG;
  *len = n;
  return VXP_OK;
}

/* ---- freeing ---- */

void vxp_kernel_clear(vxp_kernel *k) {
  if (!k) return;
  free(k->name);
  for (uint32_t i = 0; i < k->nargs; i++)
    free(k->args[i].type);
  free(k->args);
  free(k->entry);
  memset(k, 0, sizeof *k);
}

static void vxp__pieces_clear(vxp_piece *v, uint32_t n) {
  for (uint32_t i = 0; v && i < n; i++)
    free(v[i].entry);
  free(v);
}

void vxp_request_clear(vxp_request *r) {
  if (!r) return;
  free(r->client);
  free(r->source);
  free(r->source_name);
  free(r->key);
  free(r->kernel);
  free(r->prefix);
  free(r->entry);
  vxp__pieces_clear(r->pieces, r->npieces);
  memset(r, 0, sizeof *r);
}

void vxp_response_clear(vxp_response *r) {
  if (!r) return;
  free(r->message);
  free(r->server);
  free(r->build);
  free(r->target);
  free(r->cache_dir);
  free(r->key);
  free(r->entry);
  free(r->object);
  free(r->image);
  for (uint32_t i = 0; i < r->nkernels; i++)
    vxp_kernel_clear(&r->kernels[i]);
  free(r->kernels);
  for (uint32_t i = 0; i < r->ndiags; i++)
    free(r->diags[i]);
  free(r->diags);
  free(r->host_ir);
  free(r->lowered_ir);
  free(r->stats.remote);
  free(r->stats.cache_error);
  for (uint32_t i = 0; i < r->nentries; i++) {
    vxp_entry_info *e = &r->entries[i];
    free(e->key);
    free(e->source_name);
    free(e->options);
    for (uint32_t k = 0; k < e->nnames; k++)
      free(e->kernel_names[k]);
    free(e->kernel_names);
  }
  free(r->entries);
  free(r->key_inputs);
  for (uint32_t i = 0; i < r->ncandidates; i++) {
    free(r->candidates[i].key);
    free(r->candidates[i].inputs);
  }
  free(r->candidates);
  free(r->line_hashes);
  vxp__pieces_clear(r->pieces, r->npieces);
  memset(r, 0, sizeof *r);
}

int vxp_kernel_copy(vxp_kernel *dst, const vxp_kernel *src) {
  memset(dst, 0, sizeof *dst);
  *dst = *src;
  dst->name = NULL;
  dst->args = NULL;
  dst->entry = NULL;
  dst->nargs = 0;
  dst->name = strdup(src->name ? src->name : "");
  dst->entry = strdup(src->entry ? src->entry : "");
  dst->args = calloc(src->nargs ? src->nargs : 1, sizeof *dst->args);
  if (!dst->name || !dst->entry || !dst->args) goto fail;
  for (uint32_t i = 0; i < src->nargs; i++) {
    dst->args[i] = src->args[i];
    dst->args[i].type = strdup(src->args[i].type ? src->args[i].type : "");
    dst->nargs = i + 1;
    if (!dst->args[i].type) goto fail;
  }
  return VXP_OK;
fail:
  vxp_kernel_clear(dst);
  return VXP_ENOMEM;
}

/* ---- encoding ---- */

static void vxp__str(msgpack_packer *pk, const char *s) {
  size_t n = strlen(s);
  msgpack_pack_str(pk, n);
  msgpack_pack_str_body(pk, s, n);
}

static void vxp__kv_str(msgpack_packer *pk, const char *k, const char *v) {
  vxp__str(pk, k);
  vxp__str(pk, v);
}

static void vxp__kv_u64(msgpack_packer *pk, const char *k, uint64_t v) {
  vxp__str(pk, k);
  msgpack_pack_uint64(pk, v);
}

static void vxp__kv_bool(msgpack_packer *pk, const char *k, bool v) {
  vxp__str(pk, k);
  v ? msgpack_pack_true(pk) : msgpack_pack_false(pk);
}

static void vxp__kv_bin(msgpack_packer *pk, const char *k, const uint8_t *p, size_t n) {
  vxp__str(pk, k);
  msgpack_pack_bin(pk, n);
  msgpack_pack_bin_body(pk, p, n);
}

/* "pieces": [[key, entry or nil], ...] (vxp_piece). */
static void vxp__kv_pieces(msgpack_packer *pk, const vxp_piece *v, uint32_t n) {
  vxp__str(pk, "pieces");
  msgpack_pack_array(pk, n);
  for (uint32_t i = 0; i < n; i++) {
    msgpack_pack_array(pk, 2);
    vxp__str(pk, v[i].key);
    if (v[i].entry) {
      msgpack_pack_bin(pk, v[i].entry_size);
      msgpack_pack_bin_body(pk, v[i].entry, v[i].entry_size);
    } else {
      msgpack_pack_nil(pk);
    }
  }
}

static void vxp__pack_kernel(msgpack_packer *pk, const vxp_kernel *k) {
  msgpack_pack_map(pk, 14 + (k->kernel_id != VXP_NO_KERNEL_ID));
  vxp__kv_str(pk, "name", k->name ? k->name : "");
  vxp__kv_str(pk, "entry", k->entry ? k->entry : "");
  if (k->kernel_id != VXP_NO_KERNEL_ID) vxp__kv_u64(pk, "kernel_id", k->kernel_id);
  vxp__str(pk, "args");
  msgpack_pack_array(pk, k->nargs);
  for (uint32_t i = 0; i < k->nargs; i++) {
    const vxp_arg *a = &k->args[i];
    msgpack_pack_map(pk, a->rank || a->elem_size ? 8 : 6);
    vxp__kv_u64(pk, "index", a->index);
    vxp__kv_str(pk, "type", a->type ? a->type : "");
    vxp__kv_str(pk, "kind", a->kind == VXP_ARG_POINTER ? "pointer" : "scalar");
    vxp__kv_u64(pk, "size", a->size);
    vxp__kv_u64(pk, "align", a->align);
    vxp__kv_u64(pk, "offset", a->offset);
    if (a->rank || a->elem_size) { /* memrefs only */
      vxp__kv_u64(pk, "rank", a->rank);
      vxp__kv_u64(pk, "elem_size", a->elem_size);
    }
  }
  vxp__kv_u64(pk, "args_size", k->args_size);
  vxp__kv_u64(pk, "launch_offset", k->launch_offset);
  vxp__kv_u64(pk, "buffer_size", k->buffer_size);
  vxp__kv_u64(pk, "grid_dims", k->grid_dims);
  vxp__str(pk, "known_block");
  msgpack_pack_array(pk, 3);
  for (int i = 0; i < 3; i++)
    msgpack_pack_uint32(pk, k->known_block[i]);
  vxp__kv_u64(pk, "shared_bytes", k->shared_bytes);
  vxp__kv_u64(pk, "subgroup_size", k->subgroup_size);
  vxp__kv_u64(pk, "vortex_abi", k->vortex_abi);
  vxp__kv_u64(pk, "xlen", k->xlen);
  vxp__kv_u64(pk, "dynamic_min", k->dynamic_min);
  vxp__kv_u64(pk, "scratch_bytes", k->scratch_bytes);
}

/* Takes the packed bytes out of sbuf (ownership moves to the caller). */
static int vxp__take(msgpack_sbuffer *sb, uint8_t **out, size_t *len) {
  if (!sb->data) return VXP_ENOMEM;
  *len = sb->size;
  *out = (uint8_t *)msgpack_sbuffer_release(sb);
  return VXP_OK;
}

int vxp_kernel_meta_encode(const vxp_kernel *k, uint8_t **out, size_t *out_len) {
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  msgpack_packer pk;
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  vxp__pack_kernel(&pk, k);
  int rc = vxp__take(&sb, out, out_len);
  msgpack_sbuffer_destroy(&sb);
  return rc;
}

/* Starts a frame: 4 placeholder bytes for the length. */
static void vxp__frame_begin(msgpack_sbuffer *sb, msgpack_packer *pk) {
  msgpack_sbuffer_init(sb);
  msgpack_packer_init(pk, sb, msgpack_sbuffer_write);
  static const char zero[VXP_FRAME_HEADER_SIZE] = {0};
  msgpack_sbuffer_write(sb, zero, sizeof zero);
}

static int vxp__frame_end(msgpack_sbuffer *sb, uint8_t **frame, size_t *frame_len) {
  if (!sb->data || sb->size < VXP_FRAME_HEADER_SIZE) {
    msgpack_sbuffer_destroy(sb);
    return VXP_ENOMEM;
  }
  size_t n = sb->size - VXP_FRAME_HEADER_SIZE;
  if (n > VXP_MAX_FRAME_DEFAULT) {
    msgpack_sbuffer_destroy(sb);
    return VXP_ETOOBIG;
  }
  uint8_t *p = (uint8_t *)sb->data;
  p[0] = (uint8_t)(n >> 24);
  p[1] = (uint8_t)(n >> 16);
  p[2] = (uint8_t)(n >> 8);
  p[3] = (uint8_t)n;
  int rc = vxp__take(sb, frame, frame_len);
  msgpack_sbuffer_destroy(sb);
  return rc;
}

int vxp_request_encode(const vxp_request *r, uint8_t **frame, size_t *frame_len) {
  msgpack_sbuffer sb;
  msgpack_packer pk;
  vxp__frame_begin(&sb, &pk);
  const char *op = vxp_op_name(r->op);
  /* "proto" rides on every request that sets it (hello must) */
  uint32_t n = 2 + (r->op == VXP_OP_HELLO || r->proto_version != 0);
  switch (r->op) {
  case VXP_OP_HELLO: n += (r->client != NULL); break;
  case VXP_OP_COMPILE:
  case VXP_OP_HOST:
  case VXP_OP_EXPLAIN:
    n += 3 + (r->source_name != NULL) + (r->warp_size != 0) + r->shuffle_insns + r->host_object +
         r->host_bitcode + (r->entry != NULL) +
         (r->entry_result > VXP_RESULT_VOID && r->entry_result <= VXP_RESULT_F32) +
         (r->op == VXP_OP_COMPILE && r->key != NULL) + (r->vortex_abi != 0) + (r->xlen != 0) +
         (r->cache != VXP_CACHE_USE);
    break;
  case VXP_OP_FETCH: n += 1 + (r->kernel != NULL); break;
  case VXP_OP_REMOVE: n += 1; break;
  case VXP_OP_PRUNE: n += 1; break;
  case VXP_OP_LIST: n += (r->prefix != NULL) + (r->limit != 0); break;
  case VXP_OP_PIECES: n += 1; break;
  default: break;
  }
  msgpack_pack_map(&pk, n);
  vxp__kv_u64(&pk, "id", r->id);
  vxp__kv_str(&pk, "op", op ? op : "");
  if (r->op == VXP_OP_HELLO || r->proto_version != 0) vxp__kv_u64(&pk, "proto", r->proto_version);
  switch (r->op) {
  case VXP_OP_HELLO:
    if (r->client) vxp__kv_str(&pk, "client", r->client);
    break;
  case VXP_OP_COMPILE:
  case VXP_OP_HOST:
  case VXP_OP_EXPLAIN:
    vxp__kv_bin(&pk, "source", r->source, r->source_len);
    if (r->source_name) vxp__kv_str(&pk, "source_name", r->source_name);
    vxp__kv_u64(&pk, "opt_level", r->opt_level);
    vxp__kv_bool(&pk, "emit_ir", r->emit_ir);
    if (r->warp_size) vxp__kv_u64(&pk, "warp_size", r->warp_size);
    if (r->shuffle_insns) vxp__kv_bool(&pk, "shuffle_insns", true);
    if (r->vortex_abi) vxp__kv_u64(&pk, "vortex_abi", r->vortex_abi);
    if (r->xlen) vxp__kv_u64(&pk, "xlen", r->xlen);
    if (r->host_object) vxp__kv_bool(&pk, "host_object", true);
    if (r->host_bitcode) vxp__kv_bool(&pk, "host_bitcode", true);
    if (r->entry) vxp__kv_str(&pk, "entry", r->entry);
    if (r->entry_result > VXP_RESULT_VOID && r->entry_result <= VXP_RESULT_F32)
      vxp__kv_str(&pk, "entry_result", vxp__entry_results[r->entry_result]);
    if (r->op == VXP_OP_COMPILE && r->key) vxp__kv_str(&pk, "key", r->key);
    if (r->cache > VXP_CACHE_USE && r->cache <= VXP_CACHE_BYPASS)
      vxp__kv_str(&pk, "cache", vxp__cache_modes[r->cache]);
    break;
  case VXP_OP_REMOVE: vxp__kv_str(&pk, "key", r->key ? r->key : ""); break;
  case VXP_OP_FETCH:
    vxp__kv_str(&pk, "key", r->key ? r->key : "");
    if (r->kernel) vxp__kv_str(&pk, "kernel", r->kernel);
    break;
  case VXP_OP_PRUNE: vxp__kv_u64(&pk, "max_size", r->max_size); break;
  case VXP_OP_LIST:
    if (r->prefix) vxp__kv_str(&pk, "prefix", r->prefix);
    if (r->limit) vxp__kv_u64(&pk, "limit", r->limit);
    break;
  case VXP_OP_PIECES: vxp__kv_pieces(&pk, r->pieces, r->npieces); break;
  default: break;
  }
  return vxp__frame_end(&sb, frame, frame_len);
}

static void vxp__pack_entry_info(msgpack_packer *pk, const vxp_entry_info *e) {
  msgpack_pack_map(pk, 10);
  vxp__kv_str(pk, "key", e->key ? e->key : "");
  vxp__kv_str(pk, "source_name", e->source_name ? e->source_name : "");
  vxp__kv_str(pk, "options", e->options ? e->options : "");
  vxp__kv_u64(pk, "bytes", e->bytes);
  vxp__kv_u64(pk, "created", e->created_s);
  vxp__kv_u64(pk, "used", e->used_s);
  vxp__kv_u64(pk, "hits", e->hits);
  vxp__kv_u64(pk, "compile_us", e->compile_us);
  vxp__kv_u64(pk, "nkernels", e->nkernels);
  vxp__str(pk, "kernel_names");
  msgpack_pack_array(pk, e->nnames);
  for (uint32_t i = 0; i < e->nnames; i++)
    vxp__str(pk, e->kernel_names[i] ? e->kernel_names[i] : "");
}

/* The fields of an explain reply (docs/PROTOCOL.md). */
static void vxp__pack_explain(msgpack_packer *pk, const vxp_response *r) {
  if (r->key) vxp__kv_str(pk, "key", r->key);
  vxp__kv_bool(pk, "cached", r->cached);
  if (r->key_inputs) vxp__kv_str(pk, "inputs", r->key_inputs);
  vxp__kv_u64(pk, "lines", r->source_lines);
  vxp__str(pk, "candidates");
  msgpack_pack_array(pk, r->ncandidates);
  for (uint32_t i = 0; i < r->ncandidates; i++) {
    const vxp_explain_candidate *e = &r->candidates[i];
    msgpack_pack_map(pk, 4 + (e->inputs != NULL));
    vxp__kv_str(pk, "key", e->key ? e->key : "");
    vxp__kv_u64(pk, "used", e->used_s);
    if (e->inputs) vxp__kv_str(pk, "inputs", e->inputs);
    vxp__kv_u64(pk, "first_line", e->first_line);
    vxp__kv_u64(pk, "lines", e->lines);
  }
}

int vxp_response_encode(const vxp_response *r, uint8_t **frame, size_t *frame_len) {
  msgpack_sbuffer sb;
  msgpack_packer pk;
  vxp__frame_begin(&sb, &pk);
  const char *op = vxp_op_name(r->op);
  /* op is absent when the request it answers had none we could read */
  uint32_t n = 2 + (op != NULL) + (r->message != NULL);
  bool results = r->op == VXP_OP_COMPILE || r->op == VXP_OP_FETCH;
  if (r->op == VXP_OP_HELLO) n += 3 + (r->build != NULL) + (r->target != NULL) + (r->cache_dir != NULL);
  if (results) n += 2 + (r->key != NULL) + (r->lowered_ir != NULL) + (r->entry != NULL) + r->joined;
  if (r->op == VXP_OP_STATS) n += 1;
  if (r->op == VXP_OP_LIST) n += 2;
  bool admin =
      r->op == VXP_OP_VERIFY || r->op == VXP_OP_CLEAR || r->op == VXP_OP_PRUNE || r->op == VXP_OP_REMOVE;
  if (admin) n += 2;
  if (r->op == VXP_OP_HOST) n += 1 + (r->host_ir != NULL) + (r->object != NULL);
  if (r->op == VXP_OP_COMPILE) n += (r->key_inputs != NULL) + (r->line_hashes != NULL);
  if (r->op == VXP_OP_EXPLAIN) n += 3 + (r->key != NULL) + (r->key_inputs != NULL);
  bool pieces = r->op == VXP_OP_PIECES || (r->op == VXP_OP_COMPILE && r->pieces);
  n += pieces;
  msgpack_pack_map(&pk, n);
  /* fixed-width, first: vxp_frame_set_id rewrites it in an encoded frame */
  vxp__str(&pk, "id");
  msgpack_pack_fix_uint64(&pk, r->id);
  if (op) vxp__kv_str(&pk, "op", op);
  vxp__kv_str(&pk, "status", vxp_status_name(r->status));
  if (r->message) vxp__kv_str(&pk, "message", r->message);
  if (r->op == VXP_OP_HELLO) {
    vxp__kv_u64(&pk, "proto", r->proto_version);
    vxp__kv_str(&pk, "server", r->server ? r->server : "");
    vxp__kv_u64(&pk, "max_frame", r->max_frame);
    if (r->build) vxp__kv_str(&pk, "build", r->build);
    if (r->target) vxp__kv_str(&pk, "target", r->target);
    if (r->cache_dir) vxp__kv_str(&pk, "cache_dir", r->cache_dir);
  }
  if (results) {
    if (r->key) vxp__kv_str(&pk, "key", r->key);
    vxp__kv_bool(&pk, "cached", r->cached);
    if (r->joined) vxp__kv_bool(&pk, "joined", true);
    if (r->entry) vxp__kv_bin(&pk, "entry", r->entry, r->entry_size);
    vxp__str(&pk, "diags");
    msgpack_pack_array(&pk, r->ndiags);
    for (uint32_t i = 0; i < r->ndiags; i++)
      vxp__str(&pk, r->diags[i] ? r->diags[i] : "");
    if (r->lowered_ir) vxp__kv_str(&pk, "ir", r->lowered_ir);
    if (r->op == VXP_OP_COMPILE && r->key_inputs) vxp__kv_str(&pk, "inputs", r->key_inputs);
    if (r->op == VXP_OP_COMPILE && r->line_hashes)
      vxp__kv_bin(&pk, "line_hashes", r->line_hashes, r->line_hashes_size);
  }
  if (r->op == VXP_OP_EXPLAIN) vxp__pack_explain(&pk, r);
  if (pieces) vxp__kv_pieces(&pk, r->pieces, r->npieces);
  if (r->op == VXP_OP_STATS) {
    const vxp_stats *s = &r->stats;
#define VXP__ONE(name, kind, what) +1
    vxp__str(&pk, "stats");
    msgpack_pack_map(&pk,
                     (0 VXP_STATS_COUNTERS(VXP__ONE)) + 1 + (s->remote ? 1 : 0) + (s->cache_error ? 1 : 0));
#undef VXP__ONE
#define VXP__ENCODE(name, kind, what) vxp__kv_u64(&pk, #name, s->name);
    VXP_STATS_COUNTERS(VXP__ENCODE)
#undef VXP__ENCODE
    if (s->remote) vxp__kv_str(&pk, "remote", s->remote);
    if (s->cache_error) vxp__kv_str(&pk, "cache_error", s->cache_error);
    vxp__str(&pk, "compile_buckets");
    msgpack_pack_array(&pk, VXP_COMPILE_BUCKETS);
    for (uint32_t i = 0; i < VXP_COMPILE_BUCKETS; i++)
      msgpack_pack_uint64(&pk, s->compile_buckets[i]);
  }
  if (r->op == VXP_OP_LIST) {
    vxp__kv_u64(&pk, "checked", r->checked);
    vxp__str(&pk, "entries");
    msgpack_pack_array(&pk, r->nentries);
    for (uint32_t i = 0; i < r->nentries; i++)
      vxp__pack_entry_info(&pk, &r->entries[i]);
  }
  if (admin) {
    vxp__kv_u64(&pk, "checked", r->checked);
    vxp__kv_u64(&pk, "removed", r->removed);
  }
  if (r->op == VXP_OP_HOST) {
    if (r->host_ir) vxp__kv_str(&pk, "host_ir", r->host_ir);
    if (r->object) vxp__kv_bin(&pk, "object", r->object, r->object_size);
    vxp__str(&pk, "diags");
    msgpack_pack_array(&pk, r->ndiags);
    for (uint32_t i = 0; i < r->ndiags; i++)
      vxp__str(&pk, r->diags[i] ? r->diags[i] : "");
  }
  return vxp__frame_end(&sb, frame, frame_len);
}

/* ---- decoding ---- */

static bool vxp__key(const msgpack_object *k, const char *name) {
  size_t n = strlen(name);
  return k->type == MSGPACK_OBJECT_STR && k->via.str.size == n && memcmp(k->via.str.ptr, name, n) == 0;
}

static int vxp__u64(const msgpack_object *v, uint64_t *out) {
  if (v->type != MSGPACK_OBJECT_POSITIVE_INTEGER) return VXP_ETYPE;
  *out = v->via.u64;
  return VXP_OK;
}

static int vxp__u32(const msgpack_object *v, uint32_t *out) {
  uint64_t x;
  int rc = vxp__u64(v, &x);
  if (rc) return rc;
  if (x > UINT32_MAX) return VXP_ETYPE;
  *out = (uint32_t)x;
  return VXP_OK;
}

static int vxp__bool(const msgpack_object *v, bool *out) {
  if (v->type != MSGPACK_OBJECT_BOOLEAN) return VXP_ETYPE;
  *out = v->via.boolean;
  return VXP_OK;
}

static int vxp__strdup(const msgpack_object *v, char **out) {
  if (v->type != MSGPACK_OBJECT_STR) return VXP_ETYPE;
  if (memchr(v->via.str.ptr, '\0', v->via.str.size)) return VXP_ETYPE;
  char *s = malloc(v->via.str.size + 1);
  if (!s) return VXP_ENOMEM;
  memcpy(s, v->via.str.ptr, v->via.str.size);
  s[v->via.str.size] = '\0';
  free(*out);
  *out = s;
  return VXP_OK;
}

static int vxp__bindup(const msgpack_object *v, uint8_t **out, size_t *len) {
  const char *p;
  size_t n;
  if (v->type == MSGPACK_OBJECT_BIN)
    p = v->via.bin.ptr, n = v->via.bin.size;
  else if (v->type == MSGPACK_OBJECT_STR)
    p = v->via.str.ptr, n = v->via.str.size;
  else
    return VXP_ETYPE;
  uint8_t *b = malloc(n ? n : 1);
  if (!b) return VXP_ENOMEM;
  memcpy(b, p, n);
  free(*out);
  *out = b;
  *len = n;
  return VXP_OK;
}

static int vxp__op(const msgpack_object *v, vxp_op *op) {
  for (int i = VXP_OP_HELLO; i <= VXP_OP_LAST; i++)
    if (vxp__key(v, vxp__ops[i])) {
      *op = (vxp_op)i;
      return VXP_OK;
    }
  return v->type == MSGPACK_OBJECT_STR ? VXP_EFORMAT : VXP_ETYPE;
}

static uint64_t vxp__be(const uint8_t *p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; i++)
    v = (v << 8) | p[i];
  return v;
}

/* Walks the msgpack encoding of [buf, buf+len) without building anything and
 * refuses it unless it is exactly one object whose every declared length and
 * element count fits in the bytes that are there.  msgpack-c sizes its zone
 * from the counts a payload declares, so without this a 5-byte frame that
 * claims a 2^32-element array would make it allocate 128 GiB.  Format:
 * github.com/msgpack/msgpack/blob/master/spec.md. */
int vxp_msgpack_precheck(const uint8_t *buf, size_t len) {
  size_t pos = 0;
  uint64_t pending = 1; /* objects still to read; each takes >= 1 byte */
  while (pending > 0) {
    if (pos >= len || pending > len - pos) return VXP_EFORMAT;
    uint8_t b = buf[pos++];
    pending--;
    uint64_t skip = 0, items = 0;
    int hdr = 0; /* length bytes after the type byte */
    if (b <= 0x7f || b >= 0xe0 || b == 0xc0 || b == 0xc2 || b == 0xc3) continue;
    if ((b & 0xf0) == 0x80)
      items = 2u * (b & 0x0f);
    else if ((b & 0xf0) == 0x90)
      items = b & 0x0f;
    else if ((b & 0xe0) == 0xa0)
      skip = b & 0x1f;
    else
      switch (b) {
      case 0xc4:
      case 0xd9: hdr = 1; break; /* bin8, str8 */
      case 0xc5:
      case 0xda: hdr = 2; break; /* bin16, str16 */
      case 0xc6:
      case 0xdb: hdr = 4; break; /* bin32, str32 */
      case 0xc7:
        hdr = 1;
        skip = 1;
        break; /* ext8: len, type */
      case 0xc8:
        hdr = 2;
        skip = 1;
        break;
      case 0xc9:
        hdr = 4;
        skip = 1;
        break;
      case 0xca: skip = 4; break; /* float32 */
      case 0xcb: skip = 8; break; /* float64 */
      case 0xcc:
      case 0xd0: skip = 1; break; /* (u)int8 */
      case 0xcd:
      case 0xd1: skip = 2; break;
      case 0xce:
      case 0xd2: skip = 4; break;
      case 0xcf:
      case 0xd3: skip = 8; break;
      case 0xd4: skip = 2; break; /* fixext 1..16 */
      case 0xd5: skip = 3; break;
      case 0xd6: skip = 5; break;
      case 0xd7: skip = 9; break;
      case 0xd8: skip = 17; break;
      case 0xdc:
      case 0xde: /* array16, map16 */
      case 0xdd:
      case 0xdf: { /* array32, map32 */
        int n = (b == 0xdc || b == 0xde) ? 2 : 4;
        if (len - pos < (size_t)n) return VXP_EFORMAT;
        items = vxp__be(buf + pos, n);
        if (b == 0xde || b == 0xdf) items *= 2;
        pos += (size_t)n;
        break;
      }
      default: return VXP_EFORMAT; /* 0xc1: never used */
      }
    if (hdr) {
      if (len - pos < (size_t)hdr) return VXP_EFORMAT;
      skip += vxp__be(buf + pos, hdr);
      pos += (size_t)hdr;
    }
    if (skip > len - pos) return VXP_EFORMAT;
    pos += (size_t)skip;
    pending += items;
  }
  return pos == len ? VXP_OK : VXP_EFORMAT;
}

/* Unpacks one msgpack map covering exactly [buf, buf+len). */
static int vxp__unpack(const uint8_t *buf, size_t len, msgpack_unpacked *u) {
  size_t off = 0;
  msgpack_unpacked_init(u);
  if (vxp_msgpack_precheck(buf, len) != VXP_OK) return VXP_EFORMAT;
  msgpack_unpack_return ret = msgpack_unpack_next(u, (const char *)buf, len, &off);
  if (ret != MSGPACK_UNPACK_SUCCESS) return ret == MSGPACK_UNPACK_NOMEM_ERROR ? VXP_ENOMEM : VXP_EFORMAT;
  if (off != len || u->data.type != MSGPACK_OBJECT_MAP) return VXP_EFORMAT;
  return VXP_OK;
}

static int vxp__decode_kernel(const msgpack_object *o, vxp_kernel *k, bool strict) {
  if (o->type != MSGPACK_OBJECT_MAP) return VXP_ETYPE;
  int rc = VXP_OK;
  bool have_name = false, have_entry = false;
  k->kernel_id = VXP_NO_KERNEL_ID; /* a record from before the dispatcher */
  for (uint32_t i = 0; i < o->via.map.size && rc == VXP_OK; i++) {
    const msgpack_object *key = &o->via.map.ptr[i].key, *v = &o->via.map.ptr[i].val;
    if (vxp__key(key, "name"))
      rc = vxp__strdup(v, &k->name), have_name = true;
    else if (vxp__key(key, "args_size"))
      rc = vxp__u32(v, &k->args_size);
    else if (vxp__key(key, "launch_offset"))
      rc = vxp__u32(v, &k->launch_offset);
    else if (vxp__key(key, "buffer_size"))
      rc = vxp__u32(v, &k->buffer_size);
    else if (vxp__key(key, "grid_dims"))
      rc = vxp__u32(v, &k->grid_dims);
    else if (vxp__key(key, "shared_bytes"))
      rc = vxp__u32(v, &k->shared_bytes);
    else if (vxp__key(key, "subgroup_size"))
      rc = vxp__u32(v, &k->subgroup_size);
    else if (vxp__key(key, "vortex_abi"))
      rc = vxp__u32(v, &k->vortex_abi);
    else if (vxp__key(key, "xlen"))
      rc = vxp__u32(v, &k->xlen);
    else if (vxp__key(key, "dynamic_min"))
      rc = vxp__u32(v, &k->dynamic_min);
    else if (vxp__key(key, "scratch_bytes"))
      rc = vxp__u32(v, &k->scratch_bytes);
    else if (vxp__key(key, "kernel_id"))
      rc = vxp__u32(v, &k->kernel_id);
    else if (vxp__key(key, "entry"))
      rc = vxp__strdup(v, &k->entry), have_entry = true;
    else if (vxp__key(key, "image"))
      ; /* a kernel's own image, from before images were the module's */
    else if (vxp__key(key, "known_block")) {
      if (v->type != MSGPACK_OBJECT_ARRAY || v->via.array.size != 3) rc = VXP_ETYPE;
      for (int j = 0; j < 3 && rc == VXP_OK; j++)
        rc = vxp__u32(&v->via.array.ptr[j], &k->known_block[j]);
    } else if (vxp__key(key, "args")) {
      if (v->type != MSGPACK_OBJECT_ARRAY) {
        rc = VXP_ETYPE;
        break;
      }
      if (k->args) {
        rc = VXP_EFORMAT;
        break;
      }
      k->args = calloc(v->via.array.size ? v->via.array.size : 1, sizeof *k->args);
      if (!k->args) {
        rc = VXP_ENOMEM;
        break;
      }
      for (uint32_t j = 0; j < v->via.array.size && rc == VXP_OK; j++) {
        const msgpack_object *ao = &v->via.array.ptr[j];
        vxp_arg *a = &k->args[j];
        k->nargs = j + 1;
        if (ao->type != MSGPACK_OBJECT_MAP) {
          rc = VXP_ETYPE;
          break;
        }
        for (uint32_t m = 0; m < ao->via.map.size && rc == VXP_OK; m++) {
          const msgpack_object *ak = &ao->via.map.ptr[m].key, *av = &ao->via.map.ptr[m].val;
          if (vxp__key(ak, "index"))
            rc = vxp__u32(av, &a->index);
          else if (vxp__key(ak, "type"))
            rc = vxp__strdup(av, &a->type);
          else if (vxp__key(ak, "size"))
            rc = vxp__u32(av, &a->size);
          else if (vxp__key(ak, "rank"))
            rc = vxp__u32(av, &a->rank);
          else if (vxp__key(ak, "elem_size"))
            rc = vxp__u32(av, &a->elem_size);
          else if (vxp__key(ak, "align"))
            rc = vxp__u32(av, &a->align);
          else if (vxp__key(ak, "offset"))
            rc = vxp__u32(av, &a->offset);
          else if (vxp__key(ak, "kind")) {
            if (vxp__key(av, "pointer"))
              a->kind = VXP_ARG_POINTER;
            else if (vxp__key(av, "scalar"))
              a->kind = VXP_ARG_SCALAR;
            else
              rc = VXP_ETYPE;
          } else if (strict)
            rc = VXP_EUNKNOWNKEY;
        }
        if (rc == VXP_OK && !a->type) rc = VXP_EMISSING;
      }
    } else if (strict)
      rc = VXP_EUNKNOWNKEY;
  }
  if (rc == VXP_OK && (!have_name || !have_entry)) rc = VXP_EMISSING;
  if (rc == VXP_OK) rc = vxp_kernel_check(k);
  return rc;
}

static bool vxp__pow2(uint32_t v) { return v && !(v & (v - 1)); }

/* The bytes an argument of MLIR type text `type` occupies in the argument
 * buffer on the RV32 target, as the lowering's data layout gives them: the
 * store size of iN/siN/uiN (ceil(N/8)), index 4, f16 2, f32 4, f64 8, and
 * 4 for a device pointer (memref, !llvm.ptr).  0 for any other type (the
 * lowering refuses every other kernel-argument type).  A packer copies
 * exactly this many bytes from the caller's value, so a record must not
 * claim more than its type has: the type, not the claimed size, bounds
 * what is read from host memory. */
static uint32_t vxp__arg_type_size(const vxp_arg *a, uint32_t xlen) {
  const char *t = a->type;
  if (!t) return 0;
  if (strncmp(t, "memref<", 7) == 0 || strncmp(t, "!llvm.ptr", 9) == 0) return xlen / 8;
  if (strcmp(t, "index") == 0 || strcmp(t, "f32") == 0) return 4;
  if (strcmp(t, "f16") == 0) return 2;
  if (strcmp(t, "f64") == 0) return 8;
  if (t[0] == 's' || t[0] == 'u') t++;
  if (t[0] != 'i' || t[1] < '1' || t[1] > '9') return 0;
  uint64_t bits = 0;
  for (t++; *t >= '0' && *t <= '9' && bits <= 0xffffff; t++)
    bits = bits * 10 + (uint64_t)(*t - '0');
  if (*t || bits > 0xffffff) return 0; /* MLIR's own limit on integer widths */
  return (uint32_t)((bits + 7) / 8);
}

int vxp_target_parse(const char *name, uint32_t *vortex_abi, uint32_t *xlen) {
  static const char *const names[4] = {"vortex2-rv32", "vortex2-rv64", "vortex3-rv32", "vortex3-rv64"};
  for (unsigned i = 0; name && i < 4; i++)
    if (strcmp(name, names[i]) == 0) {
      *vortex_abi = i < 2 ? 2 : 3;
      *xlen = i % 2 ? 64 : 32;
      return 0;
    }
  return -EINVAL;
}

void vxp_target_name(uint32_t vortex_abi, uint32_t xlen, char out[VXP_TARGET_NAME_MAX]) {
  snprintf(out, VXP_TARGET_NAME_MAX, "vortex%u-rv%u", vortex_abi ? vortex_abi : 2, xlen ? xlen : 32);
}

const char *vxp_image_entry(const vxp_kernel *ks, uint32_t n) {
  if (n == 1 || (n && ks[0].vortex_abi == 3)) return ks[0].entry;
  if (n < VXP_DISPATCH_MIN_KERNELS) return NULL;
  for (uint32_t i = 0; i < n; i++)
    if (ks[i].kernel_id != i) return NULL;
  return VXP_DISPATCH_ENTRY;
}

uint32_t vxp_launch_header_size(const vxp_kernel *ks, uint32_t n) {
  const char *start = vxp_image_entry(ks, n);
  return start && strcmp(start, VXP_DISPATCH_ENTRY) == 0 ? VXP_DISPATCH_HEADER_SIZE : 0;
}

int vxp_kernel_check(const vxp_kernel *k) {
  if (k->nargs > VXP_MAX_ARGS || (k->nargs && !k->args)) return VXP_ELAYOUT;
  if ((k->vortex_abi && k->vortex_abi != 2 && k->vortex_abi != 3) ||
      (k->xlen && k->xlen != 32 && k->xlen != 64))
    return VXP_ELAYOUT;
  uint32_t xlen = k->xlen ? k->xlen : 32;
  for (uint32_t i = 0; i < k->nargs; i++) {
    const vxp_arg *a = &k->args[i];
    if (a->rank > 64 || a->elem_size > 64) return VXP_ELAYOUT;
    if (a->size != vxp__arg_type_size(a, xlen) ||
        (a->kind == VXP_ARG_POINTER) != (a->type[0] == 'm' || a->type[0] == '!'))
      return VXP_ELAYOUT;
    /* a scalar is at most 64 bits (what the lowering takes): a launch
     * copies that many bytes from the host's value, never more */
    if (a->kind != VXP_ARG_POINTER && a->size > VXP_MAX_SCALAR_SIZE) return VXP_ELAYOUT;
    if (!vxp__pow2(a->align) || a->align > VXP_MAX_ARG_ALIGN || a->offset % a->align || a->size == 0 ||
        (uint64_t)a->offset + a->size > k->args_size)
      return VXP_ELAYOUT;
  }
  if (k->args_size > k->launch_offset ||
      (uint64_t)k->launch_offset + VXP_LAUNCH_HEADER_SIZE > k->buffer_size ||
      k->buffer_size > VXP_MAX_BUFFER_SIZE)
    return VXP_ELAYOUT;
  if (k->grid_dims < 1 || k->grid_dims > 3) return VXP_ELAYOUT;
  if (k->dynamic_min > VXP_MAX_LOCAL_BYTES || k->scratch_bytes > 4096 ||
      (uint64_t)k->shared_bytes + k->dynamic_min > VXP_MAX_LOCAL_BYTES)
    return VXP_ELAYOUT;
  if (k->subgroup_size && (!vxp__pow2(k->subgroup_size) || k->subgroup_size > 64)) return VXP_ELAYOUT;
  if (k->kernel_id >= VXP_MAX_KERNELS && k->kernel_id != VXP_NO_KERNEL_ID) return VXP_ELAYOUT;
  return VXP_OK;
}

int vxp_kernel_meta_decode(const uint8_t *buf, size_t len, vxp_kernel *k) {
  memset(k, 0, sizeof *k);
  msgpack_unpacked u;
  int rc = vxp__unpack(buf, len, &u);
  if (rc == VXP_OK) rc = vxp__decode_kernel(&u.data, k, true);
  msgpack_unpacked_destroy(&u);
  if (rc) vxp_kernel_clear(k);
  return rc;
}

/* Which keys a request's map held that some op requires. */
typedef struct {
  bool id, op, proto, src, key, max;
} vxp__seen;

/* The index of string v among names[0..n), or -1 (not a string, or none
 * of them). */
static int vxp__name_index(const msgpack_object *v, const char *const *names, int n) {
  for (int i = 0; v->type == MSGPACK_OBJECT_STR && i < n; i++)
    if (v->via.str.size == strlen(names[i]) && memcmp(v->via.str.ptr, names[i], v->via.str.size) == 0)
      return i;
  return -1;
}

/* Whether s is an entry name a host request may carry: 1..VXP_MAX_ENTRY_NAME
 * bytes of [A-Za-z0-9_.$] (a symbol the host module may define). */
static bool vxp__entry_name_valid(const char *s) {
  size_t n = strlen(s);
  return n && n <= VXP_MAX_ENTRY_NAME &&
         strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.$") == n;
}

/* Whether decoded request r is whole: only fields of its op (groups: the
 * field groups its map held, as vxp_request_decode numbers them) and every
 * field its op requires.  VXP_OK, VXP_EUNKNOWNKEY, VXP_EMISSING, VXP_ETYPE. */
static int vxp__decode_array(const msgpack_object *v, uint32_t max, size_t elem, void **out, uint32_t *n,
                             int (*fn)(const msgpack_object *o, void *dst));

/* One [key, entry or nil] of "pieces" into the vxp_piece at dst. */
static int vxp__decode_piece(const msgpack_object *o, void *dst) {
  vxp_piece *p = dst;
  if (o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size != 2) return VXP_ETYPE;
  const msgpack_object *k = &o->via.array.ptr[0], *e = &o->via.array.ptr[1];
  if (k->type != MSGPACK_OBJECT_STR || k->via.str.size != 64) return VXP_ETYPE;
  memcpy(p->key, k->via.str.ptr, 64);
  p->key[64] = '\0';
  if (!vxp_key_prefix_valid(p->key, 64)) return VXP_ETYPE;
  if (e->type == MSGPACK_OBJECT_NIL) return VXP_OK;
  if (e->type != MSGPACK_OBJECT_BIN) return VXP_ETYPE;
  return vxp__bindup(e, &p->entry, &p->entry_size);
}

static int vxp__request_whole(const vxp_request *r, unsigned groups, const vxp__seen *seen) {
  unsigned allowed = r->op == VXP_OP_HELLO     ? 1u
                     : r->op == VXP_OP_COMPILE ? 2u | 64u
                     : r->op == VXP_OP_HOST    ? 2u | 8u
                     : r->op == VXP_OP_EXPLAIN ? 2u
                     : r->op == VXP_OP_FETCH   ? 4u | 64u
                     : r->op == VXP_OP_REMOVE  ? 64u
                     : r->op == VXP_OP_PRUNE   ? 16u
                     : r->op == VXP_OP_LIST    ? 32u
                     : r->op == VXP_OP_PIECES  ? 128u
                                               : 0u;
  if (groups & ~allowed) return VXP_EUNKNOWNKEY;
  if (!seen->id || !seen->op || (r->op == VXP_OP_HELLO && !seen->proto)) return VXP_EMISSING;
  if ((r->op == VXP_OP_COMPILE || r->op == VXP_OP_HOST || r->op == VXP_OP_EXPLAIN) && !seen->src)
    return VXP_EMISSING;
  if ((r->op == VXP_OP_FETCH || r->op == VXP_OP_REMOVE) && !seen->key) return VXP_EMISSING;
  if (r->op == VXP_OP_REMOVE && !vxp_key_prefix_valid(r->key, 64)) return VXP_ETYPE;
  if (r->op == VXP_OP_PRUNE && !seen->max) return VXP_EMISSING;
  if (r->host_object && r->host_bitcode) return VXP_ETYPE; /* one form of the host side */
  if ((r->entry || r->entry_result != VXP_RESULT_VOID) && !r->host_bitcode) return VXP_ETYPE;
  return VXP_OK;
}

int vxp_request_decode(const uint8_t *payload, size_t len, vxp_request *r) {
  memset(r, 0, sizeof *r);
  r->opt_level = 2;
  msgpack_unpacked u;
  int rc = vxp__unpack(payload, len, &u);
  vxp__seen seen = {0};
  /* which op's fields the map holds: 1 hello, 2 compile/host, 4 fetch,
   * 8 host only, 16 prune, 32 list, 64 key, 128 pieces; a field of another op is refused as unknown */
  unsigned groups = 0;
  const msgpack_object_map *m = &u.data.via.map;
  /* the id first, so that any later error can still be answered by id */
  for (uint32_t i = 0; rc == VXP_OK && i < m->size; i++)
    if (vxp__key(&m->ptr[i].key, "id") && vxp__u64(&m->ptr[i].val, &r->id) == VXP_OK) seen.id = true;
  for (uint32_t i = 0; rc == VXP_OK && i < m->size; i++) {
    const msgpack_object *k = &m->ptr[i].key, *v = &m->ptr[i].val;
    if (vxp__key(k, "id"))
      rc = vxp__u64(v, &r->id);
    else if (vxp__key(k, "op"))
      rc = vxp__op(v, &r->op), seen.op = true;
    else if (vxp__key(k, "proto"))
      rc = vxp__u32(v, &r->proto_version), seen.proto = true;
    else if (vxp__key(k, "client"))
      rc = vxp__strdup(v, &r->client), groups |= 1;
    else if (vxp__key(k, "source"))
      rc = vxp__bindup(v, &r->source, &r->source_len), seen.src = true, groups |= 2;
    else if (vxp__key(k, "source_name"))
      rc = vxp__strdup(v, &r->source_name), groups |= 2;
    else if (vxp__key(k, "opt_level")) {
      rc = vxp__u32(v, &r->opt_level), groups |= 2;
      if (rc == VXP_OK && r->opt_level > 3) rc = VXP_ETYPE;
    } else if (vxp__key(k, "emit_ir"))
      rc = vxp__bool(v, &r->emit_ir), groups |= 2;
    else if (vxp__key(k, "shuffle_insns"))
      rc = vxp__bool(v, &r->shuffle_insns), groups |= 2;
    else if (vxp__key(k, "host_object"))
      rc = vxp__bool(v, &r->host_object), groups |= 8;
    else if (vxp__key(k, "host_bitcode"))
      rc = vxp__bool(v, &r->host_bitcode), groups |= 8;
    else if (vxp__key(k, "entry")) {
      rc = vxp__strdup(v, &r->entry), groups |= 8;
      if (rc == VXP_OK && !vxp__entry_name_valid(r->entry)) rc = VXP_ETYPE;
    } else if (vxp__key(k, "entry_result")) {
      int e = vxp__name_index(v, vxp__entry_results, 4);
      rc = e < 0 ? VXP_ETYPE : VXP_OK, groups |= 8;
      if (e >= 0) r->entry_result = (vxp_entry_result)e;
    } else if (vxp__key(k, "cache")) {
      int mode = vxp__name_index(v, vxp__cache_modes, 3);
      rc = mode < 0 ? VXP_ETYPE : VXP_OK, groups |= 2;
      if (mode >= 0) r->cache = (vxp_cache_mode)mode;
    } else if (vxp__key(k, "warp_size")) {
      rc = vxp__u32(v, &r->warp_size), groups |= 2;
      if (rc == VXP_OK && (r->warp_size == 0 || r->warp_size > 32 || (r->warp_size & (r->warp_size - 1))))
        rc = VXP_ETYPE;
    } else if (vxp__key(k, "vortex_abi")) {
      rc = vxp__u32(v, &r->vortex_abi), groups |= 2;
      if (rc == VXP_OK && r->vortex_abi != 2 && r->vortex_abi != 3) rc = VXP_ETYPE;
    } else if (vxp__key(k, "xlen")) {
      rc = vxp__u32(v, &r->xlen), groups |= 2;
      if (rc == VXP_OK && r->xlen != 32 && r->xlen != 64) rc = VXP_ETYPE;
    } else if (vxp__key(k, "key"))
      rc = vxp__strdup(v, &r->key), seen.key = true, groups |= 64;
    else if (vxp__key(k, "kernel"))
      rc = vxp__strdup(v, &r->kernel), groups |= 4;
    else if (vxp__key(k, "max_size"))
      rc = vxp__u64(v, &r->max_size), seen.max = true, groups |= 16;
    else if (vxp__key(k, "prefix")) {
      rc = vxp__strdup(v, &r->prefix), groups |= 32;
      if (rc == VXP_OK && !vxp_key_prefix_valid(r->prefix, 0)) rc = VXP_ETYPE;
    } else if (vxp__key(k, "limit")) {
      rc = vxp__u32(v, &r->limit), groups |= 32;
      if (rc == VXP_OK && (r->limit == 0 || r->limit > VXP_MAX_LIST_ENTRIES)) rc = VXP_ETYPE;
    } else if (vxp__key(k, "pieces")) {
      rc = vxp__decode_array(v, VXP_MAX_PIECES, sizeof *r->pieces, (void **)&r->pieces, &r->npieces,
                             vxp__decode_piece),
      groups |= 128;
    } else
      rc = VXP_EUNKNOWNKEY;
  }
  if (rc == VXP_OK) rc = vxp__request_whole(r, groups, &seen);
  msgpack_unpacked_destroy(&u);
  if (rc) {
    uint64_t id = r->id;
    vxp_request_clear(r);
    if (seen.id) r->id = id;
  }
  return rc;
}

static int vxp__decode_stats(const msgpack_object *o, vxp_stats *s) {
  if (o->type != MSGPACK_OBJECT_MAP) return VXP_ETYPE;
  int rc = VXP_OK;
  for (uint32_t i = 0; i < o->via.map.size && rc == VXP_OK; i++) {
    const msgpack_object *k = &o->via.map.ptr[i].key, *v = &o->via.map.ptr[i].val;
#define VXP__DECODE(name, kind, what)                                                                        \
  if (vxp__key(k, #name)) {                                                                                  \
    rc = vxp__u64(v, &s->name);                                                                              \
    continue;                                                                                                \
  }
    VXP_STATS_COUNTERS(VXP__DECODE)
#undef VXP__DECODE
    if (vxp__key(k, "remote"))
      rc = vxp__strdup(v, &s->remote);
    else if (vxp__key(k, "cache_error"))
      rc = vxp__strdup(v, &s->cache_error);
    else if (vxp__key(k, "compile_buckets")) {
      if (v->type != MSGPACK_OBJECT_ARRAY || v->via.array.size != VXP_COMPILE_BUCKETS) rc = VXP_ETYPE;
      for (uint32_t j = 0; rc == VXP_OK && j < VXP_COMPILE_BUCKETS; j++)
        rc = vxp__u64(&v->via.array.ptr[j], &s->compile_buckets[j]);
    }
    /* unknown keys: ignored (a newer daemon's counters) */
  }
  return rc;
}

/* Decodes one list entry into e (cleared by the caller on error). */
static int vxp__decode_entry_info(const msgpack_object *o, vxp_entry_info *e) {
  if (o->type != MSGPACK_OBJECT_MAP) return VXP_ETYPE;
  int rc = VXP_OK;
  for (uint32_t i = 0; i < o->via.map.size && rc == VXP_OK; i++) {
    const msgpack_object *k = &o->via.map.ptr[i].key, *v = &o->via.map.ptr[i].val;
    char **str = vxp__key(k, "key")           ? &e->key
                 : vxp__key(k, "source_name") ? &e->source_name
                 : vxp__key(k, "options")     ? &e->options
                                              : NULL;
    if (str) {
      if (*str) return VXP_EFORMAT; /* a key twice */
      rc = vxp__strdup(v, str);
    } else if (vxp__key(k, "bytes"))
      rc = vxp__u64(v, &e->bytes);
    else if (vxp__key(k, "created"))
      rc = vxp__u64(v, &e->created_s);
    else if (vxp__key(k, "used"))
      rc = vxp__u64(v, &e->used_s);
    else if (vxp__key(k, "hits"))
      rc = vxp__u64(v, &e->hits);
    else if (vxp__key(k, "compile_us"))
      rc = vxp__u64(v, &e->compile_us);
    else if (vxp__key(k, "nkernels"))
      rc = vxp__u32(v, &e->nkernels);
    else if (vxp__key(k, "kernel_names")) {
      if (v->type != MSGPACK_OBJECT_ARRAY) return VXP_ETYPE;
      if (v->via.array.size > VXP_MAX_LIST_NAMES || e->kernel_names) return VXP_EFORMAT;
      e->kernel_names = calloc(v->via.array.size ? v->via.array.size : 1, sizeof *e->kernel_names);
      if (!e->kernel_names) return VXP_ENOMEM;
      for (uint32_t j = 0; j < v->via.array.size && rc == VXP_OK; j++) {
        e->nnames = j + 1;
        rc = vxp__strdup(&v->via.array.ptr[j], &e->kernel_names[j]);
      }
    }
  }
  if (rc == VXP_OK && (!e->key || !e->source_name || !e->options)) rc = VXP_EMISSING;
  return rc;
}

static int vxp__decode_candidate(const msgpack_object *o, vxp_explain_candidate *e) {
  if (o->type != MSGPACK_OBJECT_MAP) return VXP_ETYPE;
  int rc = VXP_OK;
  for (uint32_t i = 0; i < o->via.map.size && rc == VXP_OK; i++) {
    const msgpack_object *k = &o->via.map.ptr[i].key, *v = &o->via.map.ptr[i].val;
    char **str = vxp__key(k, "key") ? &e->key : vxp__key(k, "inputs") ? &e->inputs : NULL;
    if (str) {
      if (*str) return VXP_EFORMAT; /* a key twice */
      rc = vxp__strdup(v, str);
    } else if (vxp__key(k, "used"))
      rc = vxp__u64(v, &e->used_s);
    else if (vxp__key(k, "first_line"))
      rc = vxp__u64(v, &e->first_line);
    else if (vxp__key(k, "lines"))
      rc = vxp__u64(v, &e->lines);
    else
      rc = VXP_EUNKNOWNKEY;
  }
  if (rc == VXP_OK && (!e->key || !vxp_key_prefix_valid(e->key, 64))) rc = VXP_EMISSING;
  if (rc == VXP_OK && (e->first_line > VXP_MAX_SOURCE_LINES + 1 || e->lines > VXP_MAX_SOURCE_LINES))
    rc = VXP_EFORMAT;
  return rc;
}

int vxp_frame_set_id(uint8_t *frame, size_t len, uint64_t id) {
  size_t at = VXP_FRAME_HEADER_SIZE;
  if (len < at + 1) return VXP_EFORMAT;
  uint8_t m = frame[at];
  at += (m & 0xf0) == 0x80 ? 1 : m == 0xde ? 3 : m == 0xdf ? 5 : 0;
  static const uint8_t key[4] = {0xa2, 'i', 'd', 0xcf}; /* "id": uint64 */
  if (at == VXP_FRAME_HEADER_SIZE || len < at + sizeof key + 8 || memcmp(frame + at, key, sizeof key) != 0)
    return VXP_EFORMAT;
  for (int i = 0; i < 8; i++)
    frame[at + sizeof key + (size_t)i] = (uint8_t)(id >> (56 - 8 * i));
  return VXP_OK;
}

/* Decodes array v, of at most max elements, into *out (calloc(), elem
 * bytes each; refused when already set: a key twice), each element by fn;
 * *n counts the elements decoded so far, so that a failure part way is
 * cleared with the rest. */
static int vxp__decode_array(const msgpack_object *v, uint32_t max, size_t elem, void **out, uint32_t *n,
                             int (*fn)(const msgpack_object *o, void *dst)) {
  if (v->type != MSGPACK_OBJECT_ARRAY) return VXP_ETYPE;
  if (v->via.array.size > max || *out) return VXP_EFORMAT;
  *out = calloc(v->via.array.size ? v->via.array.size : 1, elem);
  if (!*out) return VXP_ENOMEM;
  int rc = VXP_OK;
  for (uint32_t j = 0; j < v->via.array.size && rc == VXP_OK; j++) {
    *n = j + 1;
    rc = fn(&v->via.array.ptr[j], (char *)*out + j * elem);
  }
  return rc;
}

static int vxp__decode_candidate_any(const msgpack_object *o, void *dst) {
  return vxp__decode_candidate(o, dst);
}
static int vxp__decode_entry_info_any(const msgpack_object *o, void *dst) {
  return vxp__decode_entry_info(o, dst);
}
static int vxp__strdup_any(const msgpack_object *o, void *dst) { return vxp__strdup(o, dst); }

int vxp_response_decode(const uint8_t *payload, size_t len, vxp_response *r) {
  memset(r, 0, sizeof *r);
  msgpack_unpacked u;
  int rc = vxp__unpack(payload, len, &u);
  bool have_id = false, have_status = false;
  const msgpack_object_map *m = &u.data.via.map;
  for (uint32_t i = 0; rc == VXP_OK && i < m->size; i++) {
    const msgpack_object *k = &m->ptr[i].key, *v = &m->ptr[i].val;
    if (vxp__key(k, "id"))
      rc = vxp__u64(v, &r->id), have_id = true;
    else if (vxp__key(k, "op"))
      rc = vxp__op(v, &r->op);
    else if (vxp__key(k, "status")) {
      rc = VXP_ETYPE;
      for (int s = 0; s <= VXP_STATUS_INTERNAL; s++)
        if (vxp__key(v, vxp__statuses[s])) {
          r->status = (vxp_status)s;
          rc = VXP_OK;
        }
      have_status = true;
    } else if (vxp__key(k, "message"))
      rc = vxp__strdup(v, &r->message);
    else if (vxp__key(k, "proto"))
      rc = vxp__u32(v, &r->proto_version);
    else if (vxp__key(k, "server"))
      rc = vxp__strdup(v, &r->server);
    else if (vxp__key(k, "max_frame"))
      rc = vxp__u32(v, &r->max_frame);
    else if (vxp__key(k, "build"))
      rc = vxp__strdup(v, &r->build);
    else if (vxp__key(k, "target"))
      rc = vxp__strdup(v, &r->target);
    else if (vxp__key(k, "cache_dir"))
      rc = vxp__strdup(v, &r->cache_dir);
    else if (vxp__key(k, "key"))
      rc = vxp__strdup(v, &r->key);
    else if (vxp__key(k, "cached"))
      rc = vxp__bool(v, &r->cached);
    else if (vxp__key(k, "joined"))
      rc = vxp__bool(v, &r->joined);
    else if (vxp__key(k, "object"))
      rc = vxp__bindup(v, &r->object, &r->object_size);
    else if (vxp__key(k, "entry"))
      rc = vxp__bindup(v, &r->entry, &r->entry_size);
    else if (vxp__key(k, "ir"))
      rc = vxp__strdup(v, &r->lowered_ir);
    else if (vxp__key(k, "stats"))
      rc = vxp__decode_stats(v, &r->stats);
    else if (vxp__key(k, "checked"))
      rc = vxp__u64(v, &r->checked);
    else if (vxp__key(k, "host_ir"))
      rc = vxp__strdup(v, &r->host_ir);
    else if (vxp__key(k, "removed"))
      rc = vxp__u64(v, &r->removed);
    else if (vxp__key(k, "inputs"))
      rc = r->key_inputs ? VXP_EFORMAT : vxp__strdup(v, &r->key_inputs);
    else if (vxp__key(k, "line_hashes")) {
      rc = r->line_hashes ? VXP_EFORMAT : vxp__bindup(v, &r->line_hashes, &r->line_hashes_size);
      if (rc == VXP_OK && (r->line_hashes_size % VXP_LINE_HASH_BYTES ||
                           r->line_hashes_size > (size_t)VXP_MAX_SOURCE_LINES * VXP_LINE_HASH_BYTES))
        rc = VXP_EFORMAT;
    } else if (vxp__key(k, "lines")) {
      rc = vxp__u64(v, &r->source_lines);
      if (rc == VXP_OK && r->source_lines > VXP_MAX_SOURCE_LINES) rc = VXP_EFORMAT;
    } else if (vxp__key(k, "candidates"))
      rc = vxp__decode_array(v, VXP_MAX_EXPLAIN_CANDIDATES, sizeof *r->candidates, (void **)&r->candidates,
                             &r->ncandidates, vxp__decode_candidate_any);
    else if (vxp__key(k, "entries"))
      rc = vxp__decode_array(v, VXP_MAX_LIST_ENTRIES, sizeof *r->entries, (void **)&r->entries, &r->nentries,
                             vxp__decode_entry_info_any);
    else if (vxp__key(k, "diags"))
      rc =
          vxp__decode_array(v, UINT32_MAX, sizeof *r->diags, (void **)&r->diags, &r->ndiags, vxp__strdup_any);
    else if (vxp__key(k, "pieces"))
      rc = vxp__decode_array(v, VXP_MAX_PIECES, sizeof *r->pieces, (void **)&r->pieces, &r->npieces,
                             vxp__decode_piece);
    /* unknown keys: ignored in responses (see the file comment) */
  }
  if (rc == VXP_OK && (!have_id || !have_status)) rc = VXP_EMISSING;
  msgpack_unpacked_destroy(&u);
  if (rc) vxp_response_clear(r);
  return rc;
}
