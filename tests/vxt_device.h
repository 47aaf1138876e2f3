/*
 * vxt_device.h - run compiled kernels on the lockstep SIMT emulator of a
 * Vortex device (runtime/simt/) and read results back.
 */
#ifndef VXT_DEVICE_H
#define VXT_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#include "lowering/vxl.h"
#include "protocol/vxp.h"
#include "runtime/simt/vxs.h"

/* Device global memory base the tests place their buffers at. */
#define VXT_MEM_BASE 0x40000000u

/* Device memory image the host fills before a launch. */
typedef struct {
  uint8_t *p; /* malloc() */
  uint32_t size, cap;
} vxt_image;

/* One device configuration a launch runs on.  warps_per_core 0: enough
 * warps for two blocks of the launch at once (at least 4). */
typedef struct {
  uint32_t threads_per_warp, warps_per_core, cores;
  vxs_split_policy split_policy;
  const char *name; /* for failure messages */
} vxt_simt;

/* The configurations every test_device launch runs on: warp widths 1, 4
 * (Vortex's default), 8 and 32, each split policy, one and two cores. */
extern const vxt_simt vxt_simt_matrix[];
extern const uint32_t vxt_simt_matrix_len;

/* Copies n bytes (or zeroes when data is NULL) into the image at a 64-byte
 * aligned offset; returns that offset.  The device address is
 * VXT_MEM_BASE + offset. */
uint32_t vxt_image_put(vxt_image *img, const void *data, uint32_t n);
void vxt_image_free(vxt_image *img);

/* Packs a launch of the lowering's kernel k into the image with libvxc's
 * vxc_pack_args (k as the daemon would send it); values as vxc_pack_args
 * takes them.  Returns the argument buffer's offset, UINT32_MAX on error. */
uint32_t vxt_image_args(vxt_image *img, const vxl_kernel *k, const void *const *values,
                        const uint32_t grid[3], const uint32_t block[3], uint32_t shared_bytes);

/* The same launch as the module's dispatcher takes it: a launch record
 * (k's kernel id, zeros up to VXL_LAUNCH_RECORD_BYTES, then the argument
 * buffer) in the image.  Returns the record's offset, UINT32_MAX on
 * error. */
uint32_t vxt_image_launch_record(vxt_image *img, const vxl_kernel *k, const void *const *values,
                                 const uint32_t grid[3], const uint32_t block[3], uint32_t shared_bytes);

/* Links the module object obj (obj_size bytes) with the emulator's device
 * runtime for kernel ABI abi (2 or 3) and register width xlen (32 or 64;
 * ld.lld-22, picolibc libc.a and libgcc for libm and soft-float) into *elf
 * (malloc()), the kernel's entry symbol as main (2) or kernel_main (3):
 * libvortexd_runtime's own link (vxr_link_elf), with the emulated backend's
 * inputs in its order.  Returns NULL or a static description of what
 * failed (ld.lld's own words for a failed link). */
const char *vxt_device_link(const uint8_t *obj, size_t obj_size, const char *entry, uint32_t abi,
                            uint32_t xlen, uint8_t **elf, size_t *elf_size);

/* The directory of upstream Vortex's kernel SDKs the execution tests also
 * link with ($VXT_UPSTREAM_SDK, the conformance_device_upstream run: one
 * per XLEN in rv32/ and rv64/), or NULL. */
const char *vxt_upstream_sdk(void);

/* Its SDK for xlen (32 or 64), or NULL; a static string per XLEN. */
const char *vxt_upstream_sdk_of(uint32_t xlen);

/* As vxt_device_link, with the kernel SDK in directory sdk (of the
 * object's XLEN): the link vortexd makes its images with
 * (vxr_link_sdk_elf). */
const char *vxt_device_link_sdk(const char *sdk, const uint8_t *obj, size_t obj_size, const char *entry,
                                uint32_t abi, uint8_t **elf, size_t *elf_size);

/* Runs a linked image on a fresh device with configuration cfg, the image
 * img mapped at VXT_MEM_BASE and mscratch = the argument buffer at
 * args_offset, on an RV32 or RV64 device (xlen), as Vortex 2.x runs it (kmu NULL: main spawns the grid) or
 * as 3.0's hardware scheduler runs launch *kmu; copies out_size bytes at
 * out_offset back into out (img is not updated).  *rep gets the emulator's report, printed (may be NULL)
 * what the device printed.  Returns NULL, or a description of what failed
 * (valid until the next call; the suites run tests one at a time). */
const char *vxt_device_run(const uint8_t *elf, size_t elf_size, uint32_t xlen, const vxt_image *img,
                           uint32_t args_offset, uint32_t launch_offset, const vxs_kmu_launch *kmu,
                           const vxt_simt *cfg, uint32_t out_offset, uint32_t out_size, void *out,
                           vxs_report *rep, char *printed, size_t printed_cap);

/* vxt_device_run for an image linked with upstream's kernel SDK when
 * upstream is set: upstream's stacks, TLS blocks and I/O area mapped, its
 * libraries as the serial range, a 3.0 launch naming kernel_main's PC
 * (CSR 0xCE1, what upstream's start code calls), and printed what its
 * vx_putchar left in the console rings. */
const char *vxt_device_run_on(int upstream, const uint8_t *elf, size_t elf_size, uint32_t xlen,
                              const vxt_image *img, uint32_t args_offset, uint32_t launch_offset,
                              const vxs_kmu_launch *kmu, const vxt_simt *cfg, uint32_t out_offset,
                              uint32_t out_size, void *out, vxs_report *rep, char *printed,
                              size_t printed_cap);

#endif
