/*
 * vxk_sign.h - signed entries for a shared cache: Ed25519 (RFC 8032)
 * through OpenSSL.
 *
 * Anyone who can write the shared Redis can plant a value under any key
 * with a checksum that matches (a checksum finds damage, not forgery).  A
 * farm that signs its entries gives its writers a private key and every
 * consumer only the public keys it trusts: a value then counts only when
 * one of those keys signed it, so a machine without a private key cannot
 * make an entry any consumer accepts.  What is signed is a domain tag, the
 * cache key and the entry's checksum (which covers the object, the options
 * and every kernel record: vxp_entry.h); a key is named in a value by its key id,
 * the first 8 bytes of SHA-256 over its raw 32-byte public key, so a farm
 * can trust an old and a new key while it rotates (docs/remote-cache.md).
 *
 * Key files are PEM, as `openssl genpkey -algorithm ed25519` and `openssl
 * pkey -pubout` write them.  Both are read only when nobody else can have
 * written them (vxp_trusted_file_open); a private key also only when
 * nobody else can read it (OpenSSH's rule for its identity files).
 *
 * THREAD NOTES: loading on one thread; once loaded, a signer and a trust
 * set may be used by any number of threads at once (each call uses its
 * own OpenSSL context).
 *
 * Errors: the cache's convention (vxk.h), plus VXK_EREJECTED.
 */
#ifndef VXK_SIGN_H
#define VXK_SIGN_H

#include <stddef.h>
#include <stdint.h>

#include "vxk.h"

#define VXK_SIGNATURE_SIZE 64 /* an Ed25519 signature (bytes) */
#define VXK_KEY_ID_SIZE 8     /* a key id (bytes) */
#define VXK_TRUST_MAX 64      /* public keys in one trust file */

/* A value not signed by a trusted key: unsigned, signed by a key the
 * consumer does not trust, or with a signature that does not verify. */
enum { VXK_EREJECTED = -EKEYREJECTED };

typedef struct vxk_signer vxk_signer;
typedef struct vxk_trust vxk_trust;

/* Loads the Ed25519 private key in PEM file path (a regular file owned by
 * the user or root, not writable by group or others, readable by nobody
 * else).  Returns 0 and *out (caller frees), VXK_EINVAL (not such a key, or
 * the file's owner or mode; the message says which and the fix), VXK_EIO,
 * VXK_ENOMEM, with a message in err (errcap bytes). */
int vxk_signer_load(const char *path, vxk_signer **out, char *err, size_t errcap);
void vxk_signer_free(vxk_signer *s);

/* The key id of s's public key (VXK_KEY_ID_SIZE bytes, owned by s). */
const uint8_t *vxk_signer_key_id(const vxk_signer *s);

/* Loads every Ed25519 public key in PEM file path (one or more, at most
 * VXK_TRUST_MAX; the file under vxk_signer_load's rules, except that others
 * may read it).  Returns 0 and *out (caller frees), VXK_EINVAL (no key, a
 * key of another type, too many, owner or mode), VXK_EIO, VXK_ENOMEM, with
 * a message in err (errcap bytes). */
int vxk_trust_load(const char *path, vxk_trust **out, char *err, size_t errcap);
void vxk_trust_free(vxk_trust *t);

/* How many keys t holds. */
unsigned vxk_trust_count(const vxk_trust *t);

/* Signs the entry stored under key (64 hex digits) with checksum sum
 * (vxk_entry_encode computes it).  Writes VXK_SIGNATURE_SIZE bytes to
 * sig.  Returns 0, VXK_EINVAL (key), VXK_ENOMEM or VXK_EIO. */
int vxk_sign_entry(const vxk_signer *s, const char *key, const uint8_t sum[VXK_CHECKSUM_SIZE],
                   uint8_t sig[VXK_SIGNATURE_SIZE]);

/* Checks that the key of t named key_id signed the entry (as
 * vxk_sign_entry).  Returns 0, VXK_EREJECTED (no such key in t, or a
 * signature that does not verify) or VXK_ENOMEM. */
int vxk_verify_entry(const vxk_trust *t, const uint8_t key_id[VXK_KEY_ID_SIZE], const char *key,
                     const uint8_t sum[VXK_CHECKSUM_SIZE], const uint8_t sig[VXK_SIGNATURE_SIZE]);

/* key_id as 16 lowercase hex digits and a NUL, for logs. */
void vxk_key_id_hex(const uint8_t key_id[VXK_KEY_ID_SIZE], char out[2 * VXK_KEY_ID_SIZE + 1]);

#endif /* VXK_SIGN_H */
