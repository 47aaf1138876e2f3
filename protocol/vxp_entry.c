/* vxp_entry.c - the compiled entry's one encoding (see vxp_entry.h). */
#include <stdlib.h>
#include <string.h>

#include <msgpack.h>

#include "vxp_entry.h"

/* The msgpack-c packers return 0 or -1 (the buffer could not grow): the
 * results are or'ed and checked once. */
static int vxp__pack_str(msgpack_packer *pk, const char *s, size_t n) {
  return msgpack_pack_str(pk, n) | msgpack_pack_str_body(pk, s, n);
}

static int vxp__pack_bin(msgpack_packer *pk, const void *p, size_t n) {
  return msgpack_pack_bin(pk, n) | msgpack_pack_bin_body(pk, p, n);
}

static int vxp__sbuffer_take(msgpack_sbuffer *sb, int bad, uint8_t **out, size_t *len) {
  if (bad || !sb->data) {
    msgpack_sbuffer_destroy(sb);
    return VXP_ENOMEM;
  }
  *len = sb->size;
  *out = (uint8_t *)msgpack_sbuffer_release(sb);
  return VXP_OK;
}

/* The body from its parts, lengths given (the viewer re-encodes from
 * what it found, which is not NUL-terminated). */
static int vxp__body_pack(const char *key, const char *options, size_t options_len, const uint8_t *object,
                          size_t object_size, const uint8_t *image, size_t image_size,
                          const vxp_entry_kernel *ks, uint32_t n, uint8_t **out, size_t *len) {
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  msgpack_packer pk;
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  int bad = msgpack_pack_array(&pk, image ? 5 : 4);
  bad |= vxp__pack_str(&pk, key, 64);
  bad |= vxp__pack_str(&pk, options, options_len);
  bad |= vxp__pack_bin(&pk, object, object_size);
  bad |= msgpack_pack_array(&pk, n);
  for (uint32_t i = 0; i < n; i++) {
    bad |= msgpack_pack_array(&pk, 2);
    bad |= vxp__pack_str(&pk, ks[i].name, ks[i].name_len);
    bad |= vxp__pack_bin(&pk, ks[i].record, ks[i].record_size);
  }
  if (image) bad |= vxp__pack_bin(&pk, image, image_size);
  return vxp__sbuffer_take(&sb, bad, out, len);
}

int vxp_entry_body_encode(const char *key, const char *options, const uint8_t *object, size_t object_size,
                          const uint8_t *image, size_t image_size, const vxp_entry_kernel *ks, uint32_t n,
                          uint8_t **body, size_t *body_size) {
  *body = NULL;
  *body_size = 0;
  size_t olen = options ? strlen(options) : 0;
  if (!vxp_key_prefix_valid(key, 64) || olen > VXP_ENTRY_OPTIONS_MAX || n > VXP_MAX_KERNELS ||
      object_size > UINT32_MAX ||
      (image && (image_size < VXP_ENTRY_IMAGE_MIN || image_size > VXP_ENTRY_IMAGE_MAX)))
    return VXP_EFORMAT;
  for (uint32_t i = 0; i < n; i++)
    if (ks[i].name_len > UINT32_MAX || ks[i].record_size > UINT32_MAX ||
        memchr(ks[i].name, '\0', ks[i].name_len))
      return VXP_EFORMAT;
  return vxp__body_pack(key, options ? options : "", olen, object, object_size, image, image_size, ks, n,
                        body, body_size);
}

int vxp_entry_seal(const uint8_t *body, size_t body_size, const uint8_t *checksum, const uint8_t *key_id,
                   const uint8_t *signature, uint8_t **out, size_t *len) {
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  msgpack_packer pk;
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  int bad = msgpack_pack_array(&pk, 6);
  bad |= vxp__pack_str(&pk, VXP_ENTRY_TAG, sizeof VXP_ENTRY_TAG - 1);
  bad |= msgpack_pack_unsigned_int(&pk, VXP_ENTRY_FORMAT);
  bad |= vxp__pack_bin(&pk, body, body_size);
  bad |= vxp__pack_bin(&pk, checksum, VXP_ENTRY_CHECKSUM_SIZE);
  if (key_id && signature) {
    bad |= vxp__pack_bin(&pk, key_id, VXP_ENTRY_KEY_ID_SIZE);
    bad |= vxp__pack_bin(&pk, signature, VXP_ENTRY_SIGNATURE_SIZE);
  } else {
    bad |= msgpack_pack_nil(&pk) | msgpack_pack_nil(&pk);
  }
  return vxp__sbuffer_take(&sb, bad, out, len);
}

void vxp_entry_view_clear(vxp_entry_view *v) {
  if (!v) return;
  free(v->kernels);
  memset(v, 0, sizeof *v);
}

static int vxp__is_bin(const msgpack_object *o, size_t size) {
  return o->type == MSGPACK_OBJECT_BIN && (size == 0 || o->via.bin.size == size);
}

/* Unpacks the one msgpack object that covers [p, p+len), after the bounds
 * check every decoder here makes first.  VXP_OK or VXP_EFORMAT/ENOMEM. */
static int vxp__unpack_whole(const uint8_t *p, size_t len, msgpack_unpacked *u) {
  size_t off = 0;
  if (vxp_msgpack_precheck(p, len) != VXP_OK) return VXP_EFORMAT;
  msgpack_unpack_return ret = msgpack_unpack_next(u, (const char *)p, len, &off);
  if (ret == MSGPACK_UNPACK_NOMEM_ERROR) return VXP_ENOMEM;
  return ret == MSGPACK_UNPACK_SUCCESS && off == len ? VXP_OK : VXP_EFORMAT;
}

/* The outer array: tag, format, body, checksum, signer.  str and bin
 * objects point into the unpacked bytes (msgpack-c does not copy them). */
static int vxp__view_outer(const msgpack_object *o, vxp_entry_view *v) {
  if (o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size != 6) return VXP_EFORMAT;
  const msgpack_object *f = o->via.array.ptr;
  const size_t taglen = sizeof VXP_ENTRY_TAG - 1;
  if (f[0].type != MSGPACK_OBJECT_STR || f[0].via.str.size != taglen ||
      memcmp(f[0].via.str.ptr, VXP_ENTRY_TAG, taglen) != 0 || f[1].type != MSGPACK_OBJECT_POSITIVE_INTEGER ||
      f[1].via.u64 != VXP_ENTRY_FORMAT || !vxp__is_bin(&f[2], 0) ||
      !vxp__is_bin(&f[3], VXP_ENTRY_CHECKSUM_SIZE))
    return VXP_EFORMAT;
  int is_signed = f[4].type != MSGPACK_OBJECT_NIL;
  if (is_signed ? !vxp__is_bin(&f[4], VXP_ENTRY_KEY_ID_SIZE) || !vxp__is_bin(&f[5], VXP_ENTRY_SIGNATURE_SIZE)
                : f[5].type != MSGPACK_OBJECT_NIL)
    return VXP_EFORMAT;
  v->body = (const uint8_t *)f[2].via.bin.ptr;
  v->body_size = f[2].via.bin.size;
  v->checksum = (const uint8_t *)f[3].via.bin.ptr;
  v->key_id = is_signed ? (const uint8_t *)f[4].via.bin.ptr : NULL;
  v->signature = is_signed ? (const uint8_t *)f[5].via.bin.ptr : NULL;
  return VXP_OK;
}

/* The body: key, options, object, kernels, and the image if any. */
static int vxp__view_body(const msgpack_object *o, vxp_entry_view *v) {
  if (o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size < 4 || o->via.array.size > 5) return VXP_EFORMAT;
  const msgpack_object *f = o->via.array.ptr;
  if (o->via.array.size == 5) {
    if (!vxp__is_bin(&f[4], 0) || f[4].via.bin.size < VXP_ENTRY_IMAGE_MIN ||
        f[4].via.bin.size > VXP_ENTRY_IMAGE_MAX)
      return VXP_EFORMAT;
    v->image = (const uint8_t *)f[4].via.bin.ptr;
    v->image_size = f[4].via.bin.size;
  }
  if (f[0].type != MSGPACK_OBJECT_STR || f[0].via.str.size != 64 || f[1].type != MSGPACK_OBJECT_STR ||
      f[1].via.str.size > VXP_ENTRY_OPTIONS_MAX || memchr(f[1].via.str.ptr, '\0', f[1].via.str.size) ||
      !vxp__is_bin(&f[2], 0) || f[3].type != MSGPACK_OBJECT_ARRAY || f[3].via.array.size > VXP_MAX_KERNELS)
    return VXP_EFORMAT;
  memcpy(v->key, f[0].via.str.ptr, 64);
  v->key[64] = '\0';
  if (!vxp_key_prefix_valid(v->key, 64)) return VXP_EFORMAT;
  v->options = f[1].via.str.ptr;
  v->options_len = f[1].via.str.size;
  v->object = (const uint8_t *)f[2].via.bin.ptr;
  v->object_size = f[2].via.bin.size;
  uint32_t n = f[3].via.array.size;
  v->kernels = calloc(n ? n : 1, sizeof *v->kernels);
  if (!v->kernels) return VXP_ENOMEM;
  for (uint32_t i = 0; i < n; i++) {
    const msgpack_object *k = &f[3].via.array.ptr[i];
    if (k->type != MSGPACK_OBJECT_ARRAY || k->via.array.size != 2) return VXP_EFORMAT;
    const msgpack_object *name = &k->via.array.ptr[0], *rec = &k->via.array.ptr[1];
    if (name->type != MSGPACK_OBJECT_STR || memchr(name->via.str.ptr, '\0', name->via.str.size) ||
        !vxp__is_bin(rec, 0))
      return VXP_EFORMAT;
    v->kernels[i] = (vxp_entry_kernel){name->via.str.ptr, name->via.str.size,
                                       (const uint8_t *)rec->via.bin.ptr, rec->via.bin.size};
  }
  v->nkernels = n;
  return VXP_OK;
}

/* Whether the bytes are what encoding the view gives: msgpack-c also
 * reads integers, strings and lengths written in wider forms than the
 * encoder's. */
static int vxp__view_canonical(const vxp_entry_view *v, const uint8_t *entry, size_t len) {
  uint8_t *again = NULL;
  size_t alen = 0;
  int rc = vxp__body_pack(v->key, v->options, v->options_len, v->object, v->object_size, v->image,
                          v->image_size, v->kernels, v->nkernels, &again, &alen);
  if (rc != VXP_OK) return rc;
  int same = alen == v->body_size && memcmp(again, v->body, alen) == 0;
  free(again);
  if (!same) return VXP_EFORMAT;
  rc = vxp_entry_seal(v->body, v->body_size, v->checksum, v->key_id, v->signature, &again, &alen);
  if (rc != VXP_OK) return rc;
  same = alen == len && memcmp(again, entry, len) == 0;
  free(again);
  return same ? VXP_OK : VXP_EFORMAT;
}

int vxp_entry_view_of(const uint8_t *entry, size_t len, vxp_entry_view *v) {
  memset(v, 0, sizeof *v);
  msgpack_unpacked outer, body;
  msgpack_unpacked_init(&outer);
  msgpack_unpacked_init(&body);
  int rc = vxp__unpack_whole(entry, len, &outer);
  if (rc == VXP_OK) rc = vxp__view_outer(&outer.data, v);
  if (rc == VXP_OK) rc = vxp__unpack_whole(v->body, v->body_size, &body);
  if (rc == VXP_OK) rc = vxp__view_body(&body.data, v);
  if (rc == VXP_OK) rc = vxp__view_canonical(v, entry, len);
  msgpack_unpacked_destroy(&body);
  msgpack_unpacked_destroy(&outer);
  if (rc != VXP_OK) vxp_entry_view_clear(v);
  return rc;
}

/* Decodes the records of v's kernels (only the one named kernel when not
 * NULL) into r->kernels. */
static int vxp__unpack_kernels(const vxp_entry_view *v, const char *kernel, vxp_response *r) {
  size_t want = kernel ? strlen(kernel) : 0;
  r->kernels = calloc(v->nkernels ? v->nkernels : 1, sizeof *r->kernels);
  if (!r->kernels) return VXP_ENOMEM;
  for (uint32_t i = 0; i < v->nkernels; i++) {
    const vxp_entry_kernel *k = &v->kernels[i];
    if (kernel && (k->name_len != want || memcmp(k->name, kernel, want) != 0)) continue;
    vxp_kernel *out = &r->kernels[r->nkernels];
    int rc = vxp_kernel_meta_decode(k->record, k->record_size, out);
    if (rc == VXP_OK && (strlen(out->name) != k->name_len || memcmp(out->name, k->name, k->name_len) != 0))
      rc = VXP_EFORMAT; /* a record filed under another kernel's name */
    if (rc == VXP_OK) rc = vxp_kernel_check(out);
    if (rc != VXP_OK) {
      vxp_kernel_clear(out);
      return rc;
    }
    r->nkernels++;
  }
  return kernel && r->nkernels == 0 ? VXP_EMISSING : VXP_OK;
}

int vxp_entry_records_check(const vxp_entry_view *v) {
  vxp_response r;
  memset(&r, 0, sizeof r);
  int rc = vxp__unpack_kernels(v, NULL, &r);
  for (uint32_t i = 0; i < r.nkernels; i++)
    vxp_kernel_clear(&r.kernels[i]);
  free(r.kernels);
  return rc;
}

int vxp_entry_unpack(vxp_response *r, const char *kernel) {
  vxp_entry_view v;
  int rc = r->entry ? vxp_entry_view_of(r->entry, r->entry_size, &v) : VXP_EMISSING;
  if (rc != VXP_OK) return rc;
  if (r->key && strcmp(r->key, v.key) != 0) rc = VXP_EFORMAT; /* another key's entry */
  if (rc == VXP_OK && !r->key && !(r->key = strdup(v.key))) rc = VXP_ENOMEM;
  if (rc == VXP_OK) {
    r->object = malloc(v.object_size ? v.object_size : 1);
    rc = r->object ? VXP_OK : VXP_ENOMEM;
  }
  if (rc == VXP_OK && v.image && !(r->image = malloc(v.image_size))) rc = VXP_ENOMEM;
  if (rc == VXP_OK) {
    memcpy(r->object, v.object, v.object_size);
    r->object_size = v.object_size;
    if (v.image) memcpy(r->image, v.image, v.image_size), r->image_size = v.image_size;
    rc = vxp__unpack_kernels(&v, kernel, r);
  }
  vxp_entry_view_clear(&v);
  if (rc != VXP_OK) {
    for (uint32_t i = 0; i < r->nkernels; i++)
      vxp_kernel_clear(&r->kernels[i]);
    free(r->kernels);
    free(r->object);
    free(r->image);
    r->kernels = NULL, r->nkernels = 0, r->object = NULL, r->object_size = 0;
    r->image = NULL, r->image_size = 0;
  }
  return rc;
}
