/*
 * vxd_key.c - a compile request's lowering options, its cache key and the
 * origin its entry records: what the loop computes for every compile
 * request (vxd_requests.c) and a worker for its compile and for the device
 * modules of a host lowering, from one definition so the two cannot
 * disagree.  Any thread.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* The parts vxk_key hashes besides the source, in order, into the caller's
 * buffers; returns how many, or -1 when the fingerprint does not fit. */
static int vxd__key_parts(const vxd_config *cfg, const vxl_options *o, const char *source_name,
                          char fp[VXD_OPTIONS_MAX], char file_part[VXL_DEBUG_FILE_MAX + 16], char sdk[4200],
                          const char *parts[4]) {
  char debug_file[VXL_DEBUG_FILE_MAX + 1];
  if (vxl_fingerprint(o, fp, VXD_OPTIONS_MAX) < 0) return -1;
  vxl_debug_file_name(source_name, debug_file);
  snprintf(file_part, VXL_DEBUG_FILE_MAX + 16, "debug-file=%s", debug_file);
  /* the images' inputs by content, not where they are (vxd_sdk.c) */
  snprintf(sdk, 4200, "vortex-sdk=%s", cfg && cfg->sdk ? vxd_sdk_digest(cfg->sdk) : "");
  parts[0] = VXD_SERVER_NAME, parts[1] = fp, parts[2] = file_part, parts[3] = sdk;
  return cfg && cfg->sdk ? 4 : 3;
}

/* vxk_key over bytes (len) with vxd__key_parts, and `extra` as one more
 * part when not NULL. */
static int vxd__key(const vxd_config *cfg, const vxl_options *o, const char *source_name,
                    const uint8_t *bytes, size_t len, const char *extra, char key[VXK_KEY_HEX + 1]) {
  char fp[VXD_OPTIONS_MAX], sdk[4200], file_part[VXL_DEBUG_FILE_MAX + 16];
  const char *parts[5];
  int n = vxd__key_parts(cfg, o, source_name, fp, file_part, sdk, parts);
  if (n < 0) return VXK_EINVAL;
  if (extra) parts[n++] = extra;
  return vxk_key(bytes, len, parts, (size_t)n, key);
}

int vxd_cache_key(const vxd_config *cfg, const vxl_options *o, const char *source_name, const uint8_t *source,
                  size_t len, char key[VXK_KEY_HEX + 1]) {
  return vxd__key(cfg, o, source_name, source, len, NULL, key);
}

int vxd_piece_key(const vxd_config *cfg, const vxl_options *o, const char *source_name, const char *inputs,
                  size_t len, char key[VXK_KEY_HEX + 1]) {
  /* never a module's key: a source whose bytes were a piece's inputs is
   * another thing compiled */
  return vxd__key(cfg, o, source_name, (const uint8_t *)inputs, len, "piece of a module", key);
}

char *vxd_key_inputs(const vxd_config *cfg, const vxl_options *o, const char *source_name) {
  char fp[VXD_OPTIONS_MAX], sdk[4200], file_part[VXL_DEBUG_FILE_MAX + 16];
  const char *parts[4];
  int n = vxd__key_parts(cfg, o, source_name, fp, file_part, sdk, parts);
  if (n < 0) return NULL;
  size_t len = 0;
  for (int i = 0; i < n; i++)
    len += strlen(parts[i]) + 1;
  char *text = malloc(len + 1), *at = text;
  for (int i = 0; text && i < n; i++) /* no part holds a newline: names are sanitized, the rest is ours */
    at += sprintf(at, "%s\n", parts[i]);
  return text;
}

void vxd_cache_origin(const vxl_options *o, const char *source_name, char source[VXL_DEBUG_FILE_MAX + 1],
                      char options[VXD_OPTIONS_MAX]) {
  vxl_debug_file_name(source_name, source);
  if (vxl_fingerprint(o, options, VXD_OPTIONS_MAX) < 0) options[0] = '\0';
}
