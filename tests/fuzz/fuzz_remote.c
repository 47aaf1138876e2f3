/*
 * fuzz_remote.c - libFuzzer target: what the daemon does with a value read
 * from a shared Redis it cannot trust (vxk_remote_decode).  A value that
 * decodes must be one the encoder writes byte for byte (the format has one
 * encoding), and nothing else may be accepted; ASan reports any read
 * outside the value and msgpack-c must never be asked for memory the value
 * does not back.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "vxk_remote.h"

/* The key the seed value (fuzz_seeds) was written under. */
static const char key[] = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  vxk_entry e;
  uint64_t us = 0;
  int rc = vxk_remote_decode(key, data, size, &e, &us);
  if (rc != VXK_OK) {
    if (rc != VXK_ECORRUPT && rc != VXK_ENOMEM) abort();
    return 0;
  }
  vxk_kernel_in *ks = calloc(e.nkernels ? e.nkernels : 1, sizeof *ks);
  if (!ks) abort();
  for (uint32_t i = 0; i < e.nkernels; i++)
    ks[i] = (vxk_kernel_in){e.kernels[i].name, e.kernels[i].metadata, e.kernels[i].metadata_size};
  uint8_t *again = NULL;
  size_t len = 0;
  if (vxk_remote_encode(key, e.object, e.object_size, ks, e.nkernels, us, &again, &len) != VXK_OK) abort();
  /* accepted => canonical: the encoder's bytes, or for a signed value
   * (fixarray 9) those with the key id and signature as two more bins */
  if (size == len) {
    if (memcmp(again, data, size) != 0) abort();
  } else if (size != len + 2 + VXK_KEY_ID_SIZE + 2 + VXK_SIGNATURE_SIZE || data[0] != 0x99 ||
             again[0] != 0x97 || memcmp(again + 1, data + 1, len - 1) != 0 || data[len] != 0xc4 ||
             data[len + 1] != VXK_KEY_ID_SIZE || data[len + 2 + VXK_KEY_ID_SIZE] != 0xc4 ||
             data[len + 3 + VXK_KEY_ID_SIZE] != VXK_SIGNATURE_SIZE) {
    abort();
  }
  free(again);
  free(ks);
  vxk_entry_clear(&e);
  return 0;
}
