/*
 * consumer.c - a program built out of tree against an installed libvxc
 * (tests/install_consumer.sh builds it with pkg-config and with
 * find_package).  Checks the headers and the library agree on the version,
 * packs an argument buffer, and with a socket argument compiles a kernel
 * through that daemon.   consumer [SOCKET FILE.mlir]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vxc.h>

int main(int argc, char **argv) {
  if (strcmp(vxc_version(), VXC_VERSION_STRING) != 0) {
    fprintf(stderr, "headers %s, library %s\n", VXC_VERSION_STRING, vxc_version());
    return 1;
  }
  vxp_arg args[2] = {{.index = 0, .type = "memref<?xf32>", .kind = VXP_ARG_POINTER, .size = 4, .align = 4},
                     {.index = 1, .type = "i64", .size = 8, .align = 8, .offset = 8}};
  vxp_kernel k = {.name = "k",
                  .entry = "__vxl_main_0",
                  .nargs = 2,
                  .args = args,
                  .args_size = 16,
                  .launch_offset = 16,
                  .buffer_size = 48,
                  .grid_dims = 1};
  uint32_t ptr = 0x40000000u, grid[3] = {2, 1, 1}, block[3] = {32, 1, 1};
  uint64_t n = 1000;
  const void *vals[2] = {&ptr, &n};
  uint8_t buf[48];
  if (vxc_pack_args(&k, vals, grid, block, 0, buf, sizeof buf) != 0 || memcmp(buf + 8, &n, 8) != 0) {
    fprintf(stderr, "vxc_pack_args\n");
    return 1;
  }
  printf("libvxc %s (version number %d)\n", vxc_version(), VXC_VERSION_NUMBER);
  if (argc < 3) return 0;
  FILE *f = fopen(argv[2], "rb");
  if (!f) return 1;
  static char src[1 << 20];
  size_t len = fread(src, 1, sizeof src, f);
  fclose(f);
  vxc_conn *c = NULL;
  int rc = vxc_connect(argv[1], &c);
  if (rc) {
    fprintf(stderr, "connect: %s\n", vxp_strerror(rc));
    return 1;
  }
  vxp_response r;
  rc = vxc_compile(c, src, len, argv[2], NULL, &r);
  if (rc || r.status != VXP_STATUS_OK) return 1;
  printf("compiled %u kernel(s), first %s at %s, %zu object bytes\n", r.nkernels, r.kernels[0].name,
         r.kernels[0].entry, r.object_size);
  vxp_response_clear(&r);
  vxc_close(c);
  return 0;
}
