/*
 * vxp_entry.h - the one encoding of a compiled cache entry: bytes <-> a
 * view of them, nothing else (docs/entry-format.md).
 *
 * A compile worker encodes an entry once; the local cache stores those
 * bytes as one value, the shared Redis level stores the same bytes, and
 * compile and fetch replies carry them unchanged to the client, which is
 * the only one to decode the kernel records inside.  The checksum and the
 * signature are computed and checked by cache/ (vxk_entry.h): this module
 * only places their bytes.
 *
 *   entry = msgpack array [tag, format, body, checksum, key_id, signature]
 *     tag       str  "vortexd-entry"
 *     format    uint VXP_ENTRY_FORMAT
 *     body      bin  a msgpack array [key, options, object, kernels]
 *                    or [key, options, object, kernels, image]:
 *                      key      str  the cache key, 64 lowercase hex digits
 *                      options  str  the keyed options ("opt_level=2;...")
 *                      object   bin  the module's relocatable object
 *                      kernels  array of [name str, record bin]
 *                               (record: vxp_kernel_meta_encode)
 *                      image    bin  the module's .vxbin, only when the
 *                               compile linked one (VXP_ENTRY_IMAGE_MIN ..
 *                               VXP_ENTRY_IMAGE_MAX bytes)
 *     checksum  bin  32 bytes: SHA-256 over a tag and the body's bytes
 *     key_id    bin 8 | nil   the signer's key id (unsigned: nil)
 *     signature bin 64 | nil  Ed25519 over a tag, the key and the checksum
 *
 * The body sits in a bin so that a checksum covers one run of bytes: a
 * reader checks it without decoding anything.  Every integer, length and
 * string is written in msgpack's shortest form, and vxp_entry_view
 * accepts only that form (one entry, one encoding: a decoder that also
 * took wider forms would let two byte strings mean one entry).
 *
 * Errors: VXP_OK or the protocol's negative codes (vxp.h).  Every function
 * is reentrant and may be called from any thread.
 */
#ifndef VXP_ENTRY_H
#define VXP_ENTRY_H

#include <stddef.h>
#include <stdint.h>

#include "vxp.h"

#define VXP_ENTRY_TAG "vortexd-entry"
/* The entry format; 1 was the shared level's value before every level
 * held the same bytes. */
#define VXP_ENTRY_FORMAT 2u
#define VXP_ENTRY_CHECKSUM_SIZE 32u  /* SHA-256 */
#define VXP_ENTRY_KEY_ID_SIZE 8u     /* a signer's key id */
#define VXP_ENTRY_SIGNATURE_SIZE 64u /* Ed25519 */
/* Longest options text an entry holds (bytes). */
#define VXP_ENTRY_OPTIONS_MAX 4096u
/* Sizes of a module image an entry may hold (bytes): the .vxbin header,
 * up to 256 MiB of device memory. */
#define VXP_ENTRY_IMAGE_MIN 16u
#define VXP_ENTRY_IMAGE_MAX ((256u << 20) + 16u)

/* A kernel in an entry: its name and its encoded record, pointing into
 * the bytes the view was made from. */
typedef struct {
  const char *name; /* not NUL-terminated: name_len bytes, no NUL among them */
  size_t name_len;
  const uint8_t *record; /* vxp_kernel_meta_encode's bytes */
  size_t record_size;
} vxp_entry_kernel;

/* An entry's parts, as vxp_entry_view finds them: every pointer but
 * kernels points into the viewed bytes, which must outlive the view. */
typedef struct {
  char key[65];        /* the cache key the body names */
  const char *options; /* options_len bytes, not NUL-terminated */
  size_t options_len;
  const uint8_t *object; /* the module's object */
  size_t object_size;
  const uint8_t *image; /* the module's .vxbin; NULL: none */
  size_t image_size;
  uint32_t nkernels;
  vxp_entry_kernel *kernels; /* malloc(): vxp_entry_view_clear */
  const uint8_t *body;       /* what the checksum covers */
  size_t body_size;
  const uint8_t *checksum;  /* VXP_ENTRY_CHECKSUM_SIZE bytes */
  const uint8_t *key_id;    /* VXP_ENTRY_KEY_ID_SIZE bytes, NULL: unsigned */
  const uint8_t *signature; /* VXP_ENTRY_SIGNATURE_SIZE bytes, NULL: unsigned */
} vxp_entry_view;

/* Encodes an entry's body: key (64 lowercase hex digits), options (NUL-
 * terminated, at most VXP_ENTRY_OPTIONS_MAX bytes), the object (object_size
 * bytes), the module's image (image_size bytes, VXP_ENTRY_IMAGE_MIN ..
 * VXP_ENTRY_IMAGE_MAX; NULL: none) and n kernels (n <= VXP_MAX_KERNELS).
 * *body from malloc(), *body_size bytes.  Returns VXP_OK, VXP_ENOMEM, or
 * VXP_EFORMAT for an argument out of those bounds. */
int vxp_entry_body_encode(const char *key, const char *options, const uint8_t *object, size_t object_size,
                          const uint8_t *image, size_t image_size, const vxp_entry_kernel *ks, uint32_t n,
                          uint8_t **body, size_t *body_size);

/* Wraps a body with its checksum (VXP_ENTRY_CHECKSUM_SIZE bytes) and,
 * when key_id is not NULL, the signer's key id and signature, into the
 * entry: *out from malloc(), *len bytes.  Returns VXP_OK or VXP_ENOMEM. */
int vxp_entry_seal(const uint8_t *body, size_t body_size, const uint8_t *checksum, const uint8_t *key_id,
                   const uint8_t *signature, uint8_t **out, size_t *len);

/* Finds the parts of the entry in [entry, entry+len) without copying
 * them: checks the tag and format, every field's type and size, the key's
 * form, the bounds (VXP_MAX_KERNELS kernels, VXP_ENTRY_OPTIONS_MAX bytes
 * of options, names without NUL bytes) and that the bytes are in the one
 * encoding vxp_entry_body_encode and vxp_entry_seal write.  Checks neither
 * the checksum nor the signature (cache/ does: vxk_entry_check) nor the
 * kernel records (vxp_entry_unpack does).  Fills *v (vxp_entry_view_clear).
 * Returns VXP_OK, VXP_EFORMAT (anything wrong), VXP_ENOMEM. */
int vxp_entry_view_of(const uint8_t *entry, size_t len, vxp_entry_view *v);

/* Releases what vxp_entry_view_of allocated (not the viewed bytes).
 * NULL-safe. */
void vxp_entry_view_clear(vxp_entry_view *v);

/* Fills r->object, r->image and r->kernels from the entry r->entry carries (a
 * compile or fetch reply, or an entry the caller read from the cache and
 * put there): the entry's key must be r->key when that is set (else it is
 * set from the entry), every kernel record must decode and pass
 * vxp_kernel_check.  With kernel not NULL only the kernel of that name is
 * kept: none of that name is VXP_EMISSING.  r->entry stays.  Returns
 * VXP_OK, VXP_EFORMAT / VXP_ELAYOUT (an entry a client must not use; r's
 * object and kernels left empty), VXP_EMISSING, VXP_ENOMEM. */
int vxp_entry_unpack(vxp_response *r, const char *kernel);

/* Whether every kernel record of v is one a client accepts: the check
 * vxp_entry_unpack makes (the record decodes, is filed under its own
 * kernel's name, and passes vxp_kernel_check), without keeping anything.
 * What a cache level applies to an entry it takes from elsewhere, so that
 * it never keeps one every client would refuse.  Returns VXP_OK,
 * VXP_ENOMEM, or the first record's error. */
int vxp_entry_records_check(const vxp_entry_view *v);

#endif /* VXP_ENTRY_H */
