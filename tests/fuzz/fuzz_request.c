/*
 * fuzz_request.c - libFuzzer target: the daemon's request decoder on any
 * payload.  A payload that decodes must encode again and decode to the
 * same request (no field lost or invented).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/vxp.h"

static int same_str(const char *a, const char *b) { return (!a && !b) || (a && b && strcmp(a, b) == 0); }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  vxp_request r;
  if (vxp_request_decode(data, size, &r) != VXP_OK) {
    vxp_request_clear(&r);
    return 0;
  }
  uint8_t *frame = NULL;
  size_t len = 0;
  if (vxp_request_encode(&r, &frame, &len) == VXP_OK) {
    vxp_request again;
    uint32_t plen = 0;
    if (vxp_frame_length(frame, VXP_MAX_FRAME_DEFAULT, &plen) != VXP_OK ||
        plen + VXP_FRAME_HEADER_SIZE != len)
      abort();
    if (vxp_request_decode(frame + VXP_FRAME_HEADER_SIZE, plen, &again) != VXP_OK) abort();
    if (again.id != r.id || again.op != r.op || again.source_len != r.source_len ||
        (r.source_len && memcmp(again.source, r.source, r.source_len)) || !same_str(again.key, r.key) ||
        !same_str(again.kernel, r.kernel) || again.opt_level != r.opt_level || again.warp_size != r.warp_size)
      abort();
    vxp_request_clear(&again);
    free(frame);
  }
  vxp_request_clear(&r);
  return 0;
}
