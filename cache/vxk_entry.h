/*
 * vxk_entry.h - what makes an encoded entry (protocol/vxp_entry.h) one the
 * cache can trust: its checksum, and a signature when one is configured.
 *
 * The checksum is SHA-256 (OpenSSL) over a domain tag and the entry's body
 * bytes, which hold the key, the options, the object and every kernel
 * record: a reader checks it without decoding anything.  The signature
 * (vxk_sign.h) covers the key and that checksum.  Both are computed once,
 * by the compile worker that encodes the entry; every level that reads an
 * entry from storage checks them (vxk_get, the shared level's lookups).
 *
 * THREAD NOTES: reentrant; any thread.
 *
 * Errors: the cache's convention (vxk.h).
 */
#ifndef VXK_ENTRY_H
#define VXK_ENTRY_H

#include <stddef.h>
#include <stdint.h>

#include "protocol/vxp_entry.h"
#include "vxk.h"
#include "vxk_sign.h"

/* Encodes an entry (vxp_entry_body_encode's arguments) with its checksum,
 * signed by signer when not NULL: *out from malloc(), *len bytes.
 * Returns 0, VXK_EINVAL (an argument vxp_entry_body_encode refuses),
 * VXK_ENOMEM, VXK_EIO (the signature failed). */
int vxk_entry_encode(const char *key, const char *options, const uint8_t *object, size_t object_size,
                     const uint8_t *image, size_t image_size, const vxp_entry_kernel *ks, uint32_t n,
                     const vxk_signer *signer, uint8_t **out, size_t *len);

/* Checks that [entry, entry+len) is an entry for key in the one encoding
 * (vxp_entry_view_of) whose checksum matches; with trust not NULL it must
 * moreover be signed by one of trust's keys.  When view is not NULL it is
 * filled (pointing into entry; vxp_entry_view_clear) on success.  Returns
 * 0, VXK_ECORRUPT (anything wrong with the bytes, or another key's entry:
 * never served), VXK_EREJECTED (whole, but unsigned or not signed by a
 * trusted key), VXK_ENOMEM. */
int vxk_entry_check(const char *key, const uint8_t *entry, size_t len, const vxk_trust *trust,
                    vxp_entry_view *view);

/* vxk_entry_check, and every kernel record one a client accepts
 * (vxp_entry_records_check): what an entry must pass to enter the cache
 * from elsewhere (the shared level, a migrated cache) and what verify
 * checks, so that no entry is kept that every client would refuse (a
 * record a forger sealed with a right checksum).  Returns as
 * vxk_entry_check; a refused record is VXK_ECORRUPT. */
int vxk_entry_check_records(const char *key, const uint8_t *entry, size_t len, const vxk_trust *trust);

#endif /* VXK_ENTRY_H */
