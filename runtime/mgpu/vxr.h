/*
 * vxr.h - inside libvortexd_runtime (runtime/mgpu/): what the MLIR GPU
 * runtime ABI (vxr_mgpu.c) needs from a device backend.
 *
 * Device memory model, shared by the backends: one host-side arena holds
 * every device allocation (mgpuMemAlloc), at device addresses
 * base + (offset in the arena), base being where the backend placed the
 * arena (VXR_DEVICE_BASE on the emulated device); host memory the program
 * registered (gpu.host_register) gets a mirror in the arena, copied in
 * before and out after each launch.  A launch runs the whole arena on the
 * device.
 *
 * THREAD NOTES: the ABI serialises every call on one mutex; backends are
 * called with it held.
 */
#ifndef VXR_H
#define VXR_H

#include <stddef.h>
#include <stdint.h>

#include "protocol/vxp.h"

/* Device address of the arena's first byte on the emulated device. */
#define VXR_DEVICE_BASE 0x40000000u

/* One launch: the linked image (the module's, started at its dispatcher,
 * or the kernel's own), the arena, where what mscratch points to is in it
 * (the launch record: the kernel's id, then its argument buffer; or the
 * argument buffer alone), and the kernel's record (warp size). */
typedef struct {
  const uint8_t *elf; /* the image link made */
  size_t elf_size;
  uint64_t image_id; /* names that image in this process, never another
                        (a launch of the same image has the same id) */
  uint8_t *arena;    /* read and written back by the backend */
  uint32_t arena_size;
  uint32_t args_addr;       /* device address of what mscratch points to */
  uint32_t args_bytes;      /* its size (bytes) */
  uint32_t device_base;     /* device address of the arena */
  const vxp_kernel *kernel; /* its target (vortex_abi, xlen) too */
  uint32_t threads_per_block;
  uint32_t grid[3], block[3]; /* the launch's dimensions */
  uint32_t local_bytes;       /* a block's local memory (vxc_local_bytes) */
} vxr_launch;

typedef struct vxr_backend {
  const char *name;
  int runs_vxbin; /* loads .vxbin images: takes the one vortexd cached */
  /* Opens the device and places an arena of arena_size bytes on it: its
   * device address in *base.  Returns 0 or a negative errno with a
   * message. */
  int (*open)(struct vxr_backend *b, uint32_t arena_size, uint32_t *base, char *err, size_t errcap);
  /* Links the module object with this device's runtime into a loadable
   * image for kernel k's target that starts at symbol entry (as the
   * target's startup code calls its entry): the module's dispatcher, so
   * the image runs every kernel, or k's own entry.  Returns 0 and *elf
   * (malloc()) or a negative errno with a message in err (-ENOTSUP: a
   * target this device cannot run). */
  int (*link)(struct vxr_backend *b, const uint8_t *obj, size_t obj_size, const vxp_kernel *k,
              const char *entry, uint8_t **elf, size_t *elf_size, char *err, size_t errcap);
  /* Runs one launch to completion.  Returns 0 or a negative errno with a
   * message (VXS_EDEVICE, -EIO: the kernel failed on the device). */
  int (*run)(struct vxr_backend *b, const vxr_launch *l, char *err, size_t errcap);
} vxr_backend;

/* The emulated device (runtime/simt): VORTEXD_DEVICE=emulated, the default. */
vxr_backend *vxr_emulated_backend(void);

/* A Vortex device through its runtime API (libvortex.so, loaded with
 * dlopen): VORTEXD_DEVICE=vortex. */
vxr_backend *vxr_vortex_backend(void);

#endif /* VXR_H */
