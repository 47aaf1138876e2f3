/*
 * vxt_device.h - run compiled kernels on the emulated Vortex device
 * (tests/device/, qemu-riscv32) and read results back.
 */
#ifndef VXT_DEVICE_H
#define VXT_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#include "vxp.h"

/* Device global memory base (tests/device/vxemu.ld). */
#define VXT_MEM_BASE 0x40000000u

/* Device memory image the host fills before a launch. */
typedef struct {
  uint8_t *p;  /* malloc() */
  uint32_t size, cap;
} vxt_image;

/* Copies n bytes (or zeroes when data is NULL) into the image at a 64-byte
 * aligned offset; returns that offset.  The device address is
 * VXT_MEM_BASE + offset. */
uint32_t vxt_image_put(vxt_image *img, const void *data, uint32_t n);
void vxt_image_free(vxt_image *img);

/* Packs a launch of k (libvxc's vxc_pack_args) into the image; values as
 * vxc_pack_args takes them.  Returns the argument buffer's offset. */
uint32_t vxt_image_args(vxt_image *img, const vxp_kernel *k, const void *const *values,
                        const uint32_t grid[3], const uint32_t block[3], uint32_t shared_bytes);

/* Links k's object with the device runtime, runs it under qemu-riscv32 on
 * the image, and copies out_size bytes at out_offset back into out (the
 * image is not updated).  *device_rc gets main's return value; stderr_out
 * (may be NULL) gets what the device printed.  Returns NULL or a static
 * description of what failed. */
const char *vxt_device_run(const vxp_kernel *k, const vxt_image *img, uint32_t args_offset,
                           uint32_t out_offset, uint32_t out_size, void *out, int32_t *device_rc,
                           char *stderr_out, size_t stderr_cap);

#endif
