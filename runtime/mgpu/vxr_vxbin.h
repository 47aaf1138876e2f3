/*
 * vxr_vxbin.h - a kernel of a module object linked into a .vxbin, the
 * Vortex loader's image format: u64 min_vma, u64 max_vma (little-endian,
 * over the PT_LOAD segments), then the bytes of [min_vma, max_vma); its
 * start address is min_vma.  Compiled into libvortexd_runtime and vortexd.
 */
#ifndef VXR_VXBIN_H
#define VXR_VXBIN_H

#include <stddef.h>
#include <stdint.h>

/* Links obj (obj_size bytes) into an executable by the ld.lld at lld:
 * `-T script --defsym=main=entry obj inputs... libc libgcc` (at most 64
 * inputs), in a private temporary directory.  Returns 0 and *elf
 * (malloc()) / *elf_size, or a negative errno with a message in err.  Runs
 * ld.lld as a child process; any thread. */
int vxr_link_elf(const char *lld, const char *script, char *const *inputs, int ninputs, const char *libc,
                 const char *libgcc, const uint8_t *obj, size_t obj_size, const char *entry, uint8_t **elf,
                 size_t *elf_size, char *err, size_t errcap);

/* Links obj (obj_size bytes) with the Vortex kernel SDK in directory sdk
 * (its link.ld, then its *.o and *.a in name order) and libc / libgcc
 * (archives for libm and soft-float f64), by the ld.lld at lld, with
 * `entry` as main, and converts the executable into a .vxbin in *image
 * (malloc()) / *image_size.  Returns 0, or a negative errno with a message
 * in err.  Runs ld.lld as a child process; any thread. */
int vxr_link_vxbin(const char *sdk, const char *lld, const char *libc, const char *libgcc, const uint8_t *obj,
                   size_t obj_size, const char *entry, uint8_t **image, size_t *image_size, char *err,
                   size_t errcap);

#endif /* VXR_VXBIN_H */
