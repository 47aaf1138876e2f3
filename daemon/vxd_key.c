/*
 * vxd_key.c - a compile request's lowering options, its cache key and the
 * origin its entry records: what the loop computes for every compile
 * request (vxd_requests.c) and a worker for its compile and for the device
 * modules of a host lowering, from one definition so the two cannot
 * disagree.  Any thread.
 */
#include <stdio.h>

#include "vxd.h"

void vxd_options_from_request(const vxd_config *cfg, const vxp_request *req, vxl_options *o) {
  *o = (vxl_options){.opt_level = req->opt_level,
                     .emit_ir = req->emit_ir,
                     .warp_size = req->warp_size,
                     .shuffle_insns = req->shuffle_insns,
                     .vortex_abi = req->vortex_abi ? req->vortex_abi
                                   : cfg           ? cfg->vortex_abi
                                                   : 0,
                     .xlen = req->xlen ? req->xlen
                             : cfg     ? cfg->xlen
                                       : 0};
}

int vxd_cache_key(const vxd_config *cfg, const vxl_options *o, const char *source_name, const uint8_t *source,
                  size_t len, char key[VXK_KEY_HEX + 1]) {
  char fp[2048], sdk[4200], debug_file[VXL_DEBUG_FILE_MAX + 1], file_part[VXL_DEBUG_FILE_MAX + 16];
  if (vxl_fingerprint(o, fp, sizeof fp) < 0) return VXK_EINVAL;
  vxl_debug_file_name(source_name, debug_file);
  snprintf(file_part, sizeof file_part, "debug-file=%s", debug_file);
  /* the images' inputs by content, not where they are (vxd_sdk.c) */
  snprintf(sdk, sizeof sdk, "vortex-sdk=%s", cfg && cfg->sdk ? vxd_sdk_digest(cfg->sdk) : "");
  const char *parts[] = {VXD_SERVER_NAME, fp, file_part, sdk};
  return vxk_key(source, len, parts, cfg && cfg->sdk ? 4 : 3, key);
}

void vxd_cache_origin(const vxl_options *o, const char *source_name, char source[VXL_DEBUG_FILE_MAX + 1],
                      char options[VXD_OPTIONS_MAX]) {
  vxl_debug_file_name(source_name, source);
  if (vxl_fingerprint(o, options, VXD_OPTIONS_MAX) < 0) options[0] = '\0';
}
