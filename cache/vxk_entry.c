/* vxk_entry.c - an encoded entry's checksum and signature (see vxk_entry.h). */
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "vxk_entry.h"

_Static_assert(VXK_CHECKSUM_SIZE == VXP_ENTRY_CHECKSUM_SIZE && VXK_KEY_ID_SIZE == VXP_ENTRY_KEY_ID_SIZE &&
                   VXK_SIGNATURE_SIZE == VXP_ENTRY_SIGNATURE_SIZE,
               "the cache's and the format's sizes of a checksum and a signature agree");

/* Domain tag of the checksum: no SHA-256 of anything else is one. */
static const char vxk__checksum_tag[] = "vortexd entry checksum v2";

/* SHA-256 over the tag (with its NUL) and the body.  0 or VXK_ENOMEM. */
static int vxk__body_checksum(const uint8_t *body, size_t size, uint8_t out[VXK_CHECKSUM_SIZE]) {
  EVP_MD_CTX *h = EVP_MD_CTX_new();
  unsigned n = 0;
  int ok = h && EVP_DigestInit_ex(h, EVP_sha256(), NULL) == 1 &&
           EVP_DigestUpdate(h, vxk__checksum_tag, sizeof vxk__checksum_tag) == 1 &&
           EVP_DigestUpdate(h, body, size) == 1 && EVP_DigestFinal_ex(h, out, &n) == 1 &&
           n == VXK_CHECKSUM_SIZE;
  EVP_MD_CTX_free(h);
  return ok ? VXK_OK : VXK_ENOMEM;
}

int vxk_entry_encode(const char *key, const char *options, const uint8_t *object, size_t object_size,
                     const uint8_t *image, size_t image_size, const vxp_entry_kernel *ks, uint32_t n,
                     const vxk_signer *signer, uint8_t **out, size_t *len) {
  *out = NULL;
  *len = 0;
  uint8_t *body = NULL;
  size_t body_size = 0;
  int rc =
      vxp_entry_body_encode(key, options, object, object_size, image, image_size, ks, n, &body, &body_size);
  if (rc != VXP_OK) return rc == VXP_ENOMEM ? VXK_ENOMEM : VXK_EINVAL;
  uint8_t sum[VXK_CHECKSUM_SIZE], sig[VXK_SIGNATURE_SIZE];
  rc = vxk__body_checksum(body, body_size, sum);
  if (rc == VXK_OK && signer) rc = vxk_sign_entry(signer, key, sum, sig);
  if (rc == VXK_OK)
    rc = vxp_entry_seal(body, body_size, sum, signer ? vxk_signer_key_id(signer) : NULL, sig, out, len) ==
                 VXP_OK
             ? VXK_OK
             : VXK_ENOMEM;
  free(body);
  return rc;
}

int vxk_entry_check_records(const char *key, const uint8_t *entry, size_t len, const vxk_trust *trust) {
  vxp_entry_view v;
  int rc = vxk_entry_check(key, entry, len, trust, &v);
  if (rc != VXK_OK) return rc;
  int r = vxp_entry_records_check(&v);
  vxp_entry_view_clear(&v);
  return r == VXP_OK ? VXK_OK : r == VXP_ENOMEM ? VXK_ENOMEM : VXK_ECORRUPT;
}

int vxk_entry_check(const char *key, const uint8_t *entry, size_t len, const vxk_trust *trust,
                    vxp_entry_view *view) {
  vxp_entry_view v;
  int rc = vxp_entry_view_of(entry, len, &v);
  if (rc != VXP_OK) return rc == VXP_ENOMEM ? VXK_ENOMEM : VXK_ECORRUPT;
  uint8_t sum[VXK_CHECKSUM_SIZE];
  rc = vxk__body_checksum(v.body, v.body_size, sum);
  if (rc == VXK_OK && (strcmp(v.key, key) != 0 || memcmp(sum, v.checksum, sizeof sum) != 0))
    rc = VXK_ECORRUPT;
  /* whole; with a trust set, also signed by one of its keys */
  if (rc == VXK_OK && trust)
    rc = v.key_id ? vxk_verify_entry(trust, v.key_id, key, sum, v.signature) : VXK_EREJECTED;
  if (rc == VXK_OK && view)
    *view = v;
  else
    vxp_entry_view_clear(&v);
  return rc;
}
