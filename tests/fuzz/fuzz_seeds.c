/*
 * fuzz_seeds.c - writes starting inputs for the fuzz targets into DIR:
 * request payloads (compile, fetch, stats) and response payloads (a
 * compile answer carrying a two-kernel entry), encoded by the protocol
 * itself so they follow it as it changes; and that entry alone, as
 * vxk_entry_encode writes it for every cache level.   fuzz_seeds DIR
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/vxk_entry.h"
#include "protocol/vxp.h"

static void put(const char *dir, const char *name, const uint8_t *frame, size_t len) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  if (!f ||
      fwrite(frame + VXP_FRAME_HEADER_SIZE, 1, len - VXP_FRAME_HEADER_SIZE, f) !=
          len - VXP_FRAME_HEADER_SIZE ||
      fclose(f) != 0) {
    perror(path);
    exit(1);
  }
}

int main(int argc, char **argv) {
  if (argc != 2) return 64;
  uint8_t *frame;
  size_t len;
  const char src[] = "gpu.module @m { gpu.func @k(%a: memref<?xf32>) kernel { gpu.return } }";
  vxp_request rq[] = {
      {.op = VXP_OP_COMPILE,
       .id = 7,
       .proto_version = VXP_PROTOCOL_VERSION,
       .source = (uint8_t *)src,
       .source_len = sizeof src - 1,
       .source_name = (char *)"k.mlir",
       .opt_level = 2,
       .warp_size = 4},
      {.op = VXP_OP_FETCH,
       .id = 8,
       .key = (char *)"00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff",
       .kernel = (char *)"k"},
      {.op = VXP_OP_STATS, .id = 9},
  };
  for (int i = 0; i < 3; i++) {
    char name[32];
    snprintf(name, sizeof name, "request-%d", i);
    if (vxp_request_encode(&rq[i], &frame, &len) != VXP_OK) return 1;
    put(argv[1], name, frame, len);
    free(frame);
  }
  vxp_arg args[] = {
      {.index = 0, .type = (char *)"memref<?xf32>", .kind = VXP_ARG_POINTER, .size = 4, .align = 4},
      {.index = 1, .type = (char *)"i64", .size = 8, .align = 8, .offset = 8},
      {.index = 2, .type = (char *)"i1", .size = 1, .align = 1, .offset = 16}};
  vxp_kernel ks[] = {{.name = (char *)"k",
                      .entry = (char *)"__vxl_main_0",
                      .nargs = 3,
                      .args = args,
                      .args_size = 17,
                      .launch_offset = 20,
                      .buffer_size = 48,
                      .grid_dims = 2,
                      .subgroup_size = 4},
                     {.name = (char *)"j",
                      .entry = (char *)"__vxl_main_1",
                      .nargs = 1,
                      .args = args,
                      .args_size = 4,
                      .launch_offset = 4,
                      .buffer_size = 32,
                      .grid_dims = 1}};
  uint8_t obj[16] = {0x7f, 'E', 'L', 'F'};
  /* the entry: its kernel records as the worker encodes them */
  static const char key[] = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
  vxp_entry_kernel kin[2];
  uint8_t *meta[2];
  for (int i = 0; i < 2; i++) {
    size_t ml;
    if (vxp_kernel_meta_encode(&ks[i], &meta[i], &ml) != VXP_OK) return 1;
    kin[i] = (vxp_entry_kernel){ks[i].name, strlen(ks[i].name), meta[i], ml};
  }
  uint8_t *entry;
  size_t elen;
  if (vxk_entry_encode(key, "opt_level=2;warp_size=4", obj, sizeof obj, NULL, 0, kin, 2, NULL, &entry,
                       &elen) != VXK_OK)
    return 1;
  vxp_response rs = {.id = 7,
                     .op = VXP_OP_COMPILE,
                     .status = VXP_STATUS_OK,
                     .key = (char *)key,
                     .entry = entry,
                     .entry_size = elen};
  if (vxp_response_encode(&rs, &frame, &len) != VXP_OK) return 1;
  put(argv[1], "response-0", frame, len);
  free(frame);
  char path[4096];
  snprintf(path, sizeof path, "%s/entry-0", argv[1]);
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(entry, 1, elen, f) != elen || fclose(f) != 0) return 1;
  free(entry);
  /* the same entry with the module's image (a daemon with a Vortex SDK) */
  uint8_t image[32] = {0x00, 0x00, 0x00, 0x80, 0, 0, 0, 0, 0x10, 0x00, 0x00, 0x80};
  if (vxk_entry_encode(key, "opt_level=2;warp_size=4", obj, sizeof obj, image, sizeof image, kin, 2, NULL,
                       &entry, &elen) != VXK_OK)
    return 1;
  snprintf(path, sizeof path, "%s/entry-1", argv[1]);
  f = fopen(path, "wb");
  if (!f || fwrite(entry, 1, elen, f) != elen || fclose(f) != 0) return 1;
  free(entry);
  free(meta[0]);
  free(meta[1]);
  return 0;
}
