/* vxk_sign.c - Ed25519 signatures over shared-cache entries (see vxk_sign.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "protocol/vxp.h"
#include "protocol/vxp_paths.h"
#include "vxk_sign.h"

/* Domain tag of what is signed: no signature over anything else verifies
 * as an entry's. */
static const char vxk__sign_tag[] = "vortexd entry signature v2";

struct vxk_signer {
  EVP_PKEY *key;
  uint8_t id[VXK_KEY_ID_SIZE];
};

struct vxk_trust {
  unsigned n;
  EVP_PKEY *keys[VXK_TRUST_MAX];
  uint8_t ids[VXK_TRUST_MAX][VXK_KEY_ID_SIZE];
};

/* The key id of an Ed25519 key: SHA-256 over its raw public key, cut. */
static int vxk__key_id(EVP_PKEY *k, uint8_t id[VXK_KEY_ID_SIZE]) {
  uint8_t raw[32], md[32];
  size_t n = sizeof raw;
  unsigned mdlen = 0;
  if (EVP_PKEY_get_raw_public_key(k, raw, &n) != 1 || n != sizeof raw ||
      EVP_Digest(raw, n, md, &mdlen, EVP_sha256(), NULL) != 1)
    return VXK_EIO;
  memcpy(id, md, VXK_KEY_ID_SIZE);
  return VXK_OK;
}

/* Opens path as a key file: trusted (vxp_trusted_file_open), and when
 * private also closed to group and others.  A FILE or NULL with err set. */
static FILE *vxk__key_file(const char *path, int private_key, int *rc, char *err, size_t errcap) {
  int fd = vxp_trusted_file_open(path, err, errcap);
  if (fd < 0) {
    *rc = fd == -ENOENT || fd == -EACCES ? VXK_EIO : VXK_EINVAL;
    return NULL;
  }
  struct stat st;
  if (private_key && (fstat(fd, &st) != 0 || (st.st_mode & 077))) {
    snprintf(err, errcap,
             "%s: a private key others can read (mode %03o); refusing it (fix with `chmod 600 %s`, and make "
             "a new key if others may have read it)",
             path, (unsigned)(st.st_mode & 07777), path);
    close(fd);
    *rc = VXK_EINVAL;
    return NULL;
  }
  FILE *f = fdopen(fd, "r");
  if (!f) {
    close(fd);
    snprintf(err, errcap, "%s: out of memory", path);
    *rc = VXK_ENOMEM;
  }
  return f;
}

int vxk_signer_load(const char *path, vxk_signer **out, char *err, size_t errcap) {
  *out = NULL;
  int rc = VXK_OK;
  FILE *f = vxk__key_file(path, 1, &rc, err, errcap);
  if (!f) return rc;
  EVP_PKEY *k = PEM_read_PrivateKey(f, NULL, NULL, NULL);
  fclose(f);
  ERR_clear_error();
  vxk_signer *s = NULL;
  if (!k || EVP_PKEY_get_id(k) != EVP_PKEY_ED25519) {
    snprintf(err, errcap,
             "%s: not an Ed25519 private key in PEM (make one with `openssl genpkey -algorithm ed25519`)",
             path);
    rc = VXK_EINVAL;
  } else if (!(s = calloc(1, sizeof *s))) {
    snprintf(err, errcap, "%s: out of memory", path);
    rc = VXK_ENOMEM;
  } else if ((rc = vxk__key_id(k, s->id)) != VXK_OK) {
    snprintf(err, errcap, "%s: cannot derive the public key", path);
  }
  if (rc != VXK_OK) {
    EVP_PKEY_free(k);
    free(s);
    return rc;
  }
  s->key = k;
  *out = s;
  return VXK_OK;
}

void vxk_signer_free(vxk_signer *s) {
  if (!s) return;
  EVP_PKEY_free(s->key);
  free(s);
}

const uint8_t *vxk_signer_key_id(const vxk_signer *s) { return s->id; }

int vxk_trust_load(const char *path, vxk_trust **out, char *err, size_t errcap) {
  *out = NULL;
  int rc = VXK_OK;
  FILE *f = vxk__key_file(path, 0, &rc, err, errcap);
  if (!f) return rc;
  vxk_trust *t = calloc(1, sizeof *t);
  if (!t) {
    fclose(f);
    snprintf(err, errcap, "%s: out of memory", path);
    return VXK_ENOMEM;
  }
  for (EVP_PKEY *k; rc == VXK_OK && (k = PEM_read_PUBKEY(f, NULL, NULL, NULL));) {
    if (EVP_PKEY_get_id(k) != EVP_PKEY_ED25519) {
      snprintf(err, errcap, "%s: key %u is not an Ed25519 public key", path, t->n + 1);
      rc = VXK_EINVAL;
    } else if (t->n == VXK_TRUST_MAX) {
      snprintf(err, errcap, "%s: more than %d keys", path, VXK_TRUST_MAX);
      rc = VXK_EINVAL;
    } else if (vxk__key_id(k, t->ids[t->n]) != VXK_OK) {
      snprintf(err, errcap, "%s: key %u: cannot read it", path, t->n + 1);
      rc = VXK_EINVAL;
    } else {
      t->keys[t->n++] = k;
      continue;
    }
    EVP_PKEY_free(k);
  }
  fclose(f);
  ERR_clear_error(); /* the end of the file reads as a PEM error */
  if (rc == VXK_OK && t->n == 0) {
    snprintf(err, errcap, "%s: no Ed25519 public key in PEM (write one with `openssl pkey -pubout`)", path);
    rc = VXK_EINVAL;
  }
  if (rc != VXK_OK) {
    vxk_trust_free(t);
    return rc;
  }
  *out = t;
  return VXK_OK;
}

void vxk_trust_free(vxk_trust *t) {
  if (!t) return;
  for (unsigned i = 0; i < t->n; i++)
    EVP_PKEY_free(t->keys[i]);
  free(t);
}

unsigned vxk_trust_count(const vxk_trust *t) { return t ? t->n : 0; }

/* The message signed for an entry: tag, key, checksum, at fixed lengths. */
#define VXK__MSG_SIZE (sizeof vxk__sign_tag + VXK_KEY_HEX + VXK_CHECKSUM_SIZE)
static void vxk__message(const char *key, const uint8_t sum[VXK_CHECKSUM_SIZE], uint8_t msg[VXK__MSG_SIZE]) {
  uint8_t *p = msg;
  memcpy(p, vxk__sign_tag, sizeof vxk__sign_tag); /* with its NUL */
  p += sizeof vxk__sign_tag;
  memcpy(p, key, VXK_KEY_HEX);
  p += VXK_KEY_HEX;
  memcpy(p, sum, VXK_CHECKSUM_SIZE);
}

int vxk_sign_entry(const vxk_signer *s, const char *key, const uint8_t sum[VXK_CHECKSUM_SIZE],
                   uint8_t sig[VXK_SIGNATURE_SIZE]) {
  if (!vxp_key_prefix_valid(key, VXK_KEY_HEX)) return VXK_EINVAL;
  uint8_t msg[VXK__MSG_SIZE];
  vxk__message(key, sum, msg);
  EVP_MD_CTX *ctx = EVP_MD_CTX_new();
  if (!ctx) return VXK_ENOMEM;
  size_t n = VXK_SIGNATURE_SIZE;
  int ok = EVP_DigestSignInit(ctx, NULL, NULL, NULL, s->key) == 1 &&
           EVP_DigestSign(ctx, sig, &n, msg, sizeof msg) == 1 && n == VXK_SIGNATURE_SIZE;
  EVP_MD_CTX_free(ctx);
  ERR_clear_error();
  return ok ? VXK_OK : VXK_EIO;
}

int vxk_verify_entry(const vxk_trust *t, const uint8_t key_id[VXK_KEY_ID_SIZE], const char *key,
                     const uint8_t sum[VXK_CHECKSUM_SIZE], const uint8_t sig[VXK_SIGNATURE_SIZE]) {
  if (!vxp_key_prefix_valid(key, VXK_KEY_HEX)) return VXK_EREJECTED;
  unsigned i = 0;
  while (i < t->n && memcmp(t->ids[i], key_id, VXK_KEY_ID_SIZE) != 0)
    i++;
  if (i == t->n) return VXK_EREJECTED;
  uint8_t msg[VXK__MSG_SIZE];
  vxk__message(key, sum, msg);
  EVP_MD_CTX *ctx = EVP_MD_CTX_new();
  if (!ctx) return VXK_ENOMEM;
  int ok = EVP_DigestVerifyInit(ctx, NULL, NULL, NULL, t->keys[i]) == 1 &&
           EVP_DigestVerify(ctx, sig, VXK_SIGNATURE_SIZE, msg, sizeof msg) == 1;
  EVP_MD_CTX_free(ctx);
  ERR_clear_error();
  return ok ? VXK_OK : VXK_EREJECTED;
}

void vxk_key_id_hex(const uint8_t key_id[VXK_KEY_ID_SIZE], char out[2 * VXK_KEY_ID_SIZE + 1]) {
  for (int i = 0; i < VXK_KEY_ID_SIZE; i++)
    snprintf(out + 2 * i, 3, "%02x", key_id[i]);
}
