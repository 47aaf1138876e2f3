/*
 * fuzz_entry.c - libFuzzer target: what is done with an encoded entry
 * read from outside the process.  The daemon checks one read from a shared
 * Redis (vxk_entry_check): one it accepts must be what the encoder writes
 * for its parts, byte for byte (the format has one encoding).  A client
 * unpacks one a daemon sent (vxp_entry_unpack, no checksum: the daemon
 * checked it): whatever the bytes, it returns an error or an object and
 * records every one of which passes vxp_kernel_check.  ASan reports any
 * read outside the bytes, and msgpack-c must never be asked for memory
 * they do not back.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cache/vxk_entry.h"

/* The key the seed entry (fuzz_seeds) was written under. */
static const char key[] = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

/* The daemon's check: accepted => canonical. */
static void vxt__check(const uint8_t *data, size_t size) {
  vxp_entry_view v;
  int rc = vxk_entry_check(key, data, size, NULL, &v);
  if (rc != VXK_OK) {
    if (rc != VXK_ECORRUPT && rc != VXK_ENOMEM) abort();
    return;
  }
  char options[VXP_ENTRY_OPTIONS_MAX + 1];
  memcpy(options, v.options, v.options_len);
  options[v.options_len] = '\0';
  uint8_t *body = NULL, *again = NULL;
  size_t blen = 0, len = 0;
  if (vxp_entry_body_encode(v.key, options, v.object, v.object_size, v.image, v.image_size, v.kernels,
                            v.nkernels, &body, &blen) != VXP_OK ||
      vxp_entry_seal(body, blen, v.checksum, v.key_id, v.signature, &again, &len) != VXP_OK)
    abort();
  if (len != size || memcmp(again, data, size) != 0) abort();
  free(body);
  free(again);
  vxp_entry_view_clear(&v);
}

/* The client's unpacking: an error, or records a packer can trust. */
static void vxt__unpack(const uint8_t *data, size_t size) {
  vxp_response r = {.status = VXP_STATUS_OK, .op = VXP_OP_FETCH};
  r.entry = malloc(size ? size : 1);
  if (!r.entry) abort();
  memcpy(r.entry, data, size);
  r.entry_size = size;
  int rc = vxp_entry_unpack(&r, NULL);
  if (rc == VXP_OK) {
    if (!r.object || !r.key) abort();
    for (uint32_t i = 0; i < r.nkernels; i++)
      if (vxp_kernel_check(&r.kernels[i]) != VXP_OK) abort();
  } else if (r.object || r.kernels || r.nkernels) {
    abort(); /* a failed unpack leaves nothing a caller could use */
  }
  vxp_response_clear(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  vxt__check(data, size);
  vxt__unpack(data, size);
  return 0;
}
