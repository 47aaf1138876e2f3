/*
 * vxr_vxbin.h - a kernel of a module object linked into a .vxbin, the
 * Vortex loader's image format as upstream's vxbin.py writes it and its
 * runtime's module.cpp reads it: u64 min_vma, u64 max_vma (little-endian),
 * then the image's bytes from min_vma (at most max_vma - min_vma; memory
 * past them is zero: BSS), then, when the image names its kernels, a
 * VXSYMTAB footer (kernel name -> entry PC; docs/VORTEX_ABI.md).  Its
 * start address is min_vma.  Compiled into libvortexd_runtime and vortexd.
 */
#ifndef VXR_VXBIN_H
#define VXR_VXBIN_H

#include <stddef.h>
#include <stdint.h>

/* Kernel entries an image's VXSYMTAB footer lists: symbols of this
 * prefix and the kernel's name (VXL_KENTRY_PREFIX on the lowering's side). */
#define VXR_KENTRY_PREFIX "__vx_kentry_"

/* A .vxbin's parts: the load range, the payload (the image's first bytes;
 * the rest of [min_vma, max_vma) is zero), and the footer's kernel table
 * (n entries; names point into the .vxbin, not NUL-terminated). */
typedef struct {
  uint64_t min_vma, max_vma;
  const uint8_t *payload;
  size_t payload_size;
  uint32_t nkernels;
  const uint8_t *table; /* nkernels x 16 bytes: u32 name offset, u16 length, u16 0, u64 pc */
  const uint8_t *names;
  size_t names_size;
} vxr_vxbin;

/* Parses a .vxbin of size bytes (from a cache, a daemon, a file: checked
 * in full before use) into *out, which points into it.  Returns 0, or
 * -EINVAL for one whose header, payload or footer is out of bounds. */
int vxr_vxbin_parse(const uint8_t *bytes, size_t size, vxr_vxbin *out);

/* The entry PC of kernel `name` in parsed image v (the footer's entry of
 * that name), or 0 when the footer has none. */
uint64_t vxr_vxbin_kernel(const vxr_vxbin *v, const char *name);

/* The value of symbol name in the ELF file elf (size bytes; checked), or
 * -1 when it has none or is no ELF file.  Any thread. */
int64_t vxr_elf_symbol(const uint8_t *elf, size_t size, const char *name);

/* Most objects one relocatable link takes (a descriptor each). */
#define VXR_LINK_MAX_INPUTS 512u

/* Most bytes of the linker's own diagnostics a failed link's message quotes
 * (the rest is read and dropped). */
#define VXR_LINK_DIAG_MAX 1536u

/* Links n relocatable objects (objects[i], sizes[i] bytes, at most 1 GiB
 * out), in that order, into one relocatable object: `ld.lld -r` (the
 * ld.lld at lld) reading them from pipes and writing the output to
 * another, so nothing goes through the file system and the output depends
 * only on the inputs and their order.  Returns 0 with *out (malloc()) /
 * *out_size, or a negative errno with a message in err (a failed link's
 * quotes ld.lld's own diagnostics, up to VXR_LINK_DIAG_MAX bytes; inputs
 * are named there /dev/fd/3, /dev/fd/4, ... in order).  Runs ld.lld as a
 * child process (posix_spawn); any thread.  vxr_rlink_start() then
 * vxr_rlink_finish(). */
int vxr_link_relocatable(const char *lld, uint32_t n, const uint8_t *const *objects, const size_t *sizes,
                         uint8_t **out, size_t *out_size, char *err, size_t errcap);

/* A relocatable link started before its inputs exist: ld.lld loads (its
 * libLLVM alone takes ~16 ms) while they are being compiled. */
typedef struct vxr_rlink vxr_rlink;

/* Starts `ld.lld -r` of n inputs yet to come.  Returns 0 and *out, or a
 * negative errno with a message in err.  Any thread; the link belongs to
 * the caller until finished or cancelled. */
int vxr_rlink_start(const char *lld, uint32_t n, vxr_rlink **out, char *err, size_t errcap);

/* Gives l its n inputs and waits for the output, as vxr_link_relocatable
 * does.  l is gone afterwards, whatever the result. */
int vxr_rlink_finish(vxr_rlink *l, const uint8_t *const *objects, const size_t *sizes, uint8_t **out,
                     size_t *out_size, char *err, size_t errcap);

/* Stops l's ld.lld (killed and reaped) and frees l.  NULL-safe. */
void vxr_rlink_cancel(vxr_rlink *l);

/* Runs the program at prog as `prog args... /dev/fd/3 -o -`, as
 * vxr_link_relocatable runs ld.lld: in (size bytes) on a pipe at its
 * descriptor 3, its standard output read back (*out, malloc(), at most
 * 1 GiB; *out_size bytes, never 0 on success), its diagnostics quoted in
 * err on failure (up to VXR_LINK_DIAG_MAX bytes).  Returns 0, or a
 * negative errno (-EIO: it failed or wrote nothing).  Any thread. */
int vxr_run_filter(const char *prog, const char *const *args, int nargs, const uint8_t *in, size_t size,
                   uint8_t **out, size_t *out_size, char *err, size_t errcap);

/* Links obj (obj_size bytes) into an executable by the GNU ld at ld
 * (riscv64-unknown-elf-ld): `-m EMULATION -T script --defsym=START=entry
 * obj --start-group inputs... libc libgcc --end-group` (at most 64 inputs;
 * EMULATION elf32lriscv or elf64lriscv, as obj is ELF32 or ELF64),
 * START what the startup code of the kernel's ABI calls: main on Vortex
 * 2.x (vortex_abi 2, or 0), kernel_main on 3.0 (3).  GNU ld, as upstream
 * Vortex's toolchain links, because ld.lld cannot place an RV64 image at
 * upstream's 0x180000000: it refuses the PC-relative references libc makes
 * to undefined weak symbols (value 0, over 2 GiB away), where GNU ld
 * rewrites them to load 0 (docs/VORTEX_ABI.md, "Linking").  The object and
 * the executable are memory files (memfd), never on the file system.
 * Returns 0 and *elf (malloc(), at most 1 GiB) / *elf_size, or a negative
 * errno with a message in err (quoting ld's diagnostics, up to
 * VXR_LINK_DIAG_MAX bytes; the object is named /dev/fd/3 there).  Runs ld
 * as a child process; any thread. */
int vxr_link_elf(const char *ld, const char *script, char *const *inputs, int ninputs, const char *libc,
                 const char *libgcc, const uint8_t *obj, size_t obj_size, const char *entry,
                 uint32_t vortex_abi, uint8_t **elf, size_t *elf_size, char *err, size_t errcap);

/* Most SDK inputs one image link takes (its link.ld, .o and .a files). */
#define VXR_SDK_MAX_INPUTS 65

/* The files of the Vortex kernel SDK in directory sdk that vxr_link_vxbin
 * links an image with: its link.ld, then its .o files, then its .a files,
 * each group in name order, then those of its rv64 subdirectory when it
 * has one; at most cap paths into paths (each malloc()).  Returns how
 * many.  Any thread. */
int vxr_sdk_inputs(const char *sdk, char **paths, int cap);

/* The executable vxr_link_vxbin makes its image of (the same arguments;
 * *elf malloc()): what upstream's vxbin.py would convert.  0, or a
 * negative errno with a message in err.  Any thread. */
int vxr_link_sdk_elf(const char *sdk, const char *ld, const char *libc, const char *libgcc,
                     const uint8_t *obj, size_t obj_size, const char *entry, uint32_t vortex_abi,
                     uint8_t **elf, size_t *elf_size, char *err, size_t errcap);

/* Links obj (obj_size bytes) with the Vortex kernel SDK in directory sdk
 * (its link.ld, then its *.o and *.a in name order; of upstream's
 * libvortex.a and libvortex2.a, when it holds both, only the one of
 * vortex_abi: 2.x and 3.0 respectively; of vortexd's own device runtime,
 * vx_start.o and vx_spawn.o for 2.x, vx_kmu.o for 3.0; for an RV64 obj,
 * the objects of sdk/rv64 when that directory exists) and libc / libgcc
 * (archives for libm and soft-float f64), by the GNU ld at ld, with
 * `entry` as the startup code of kernel ABI vortex_abi calls it
 * (vxr_link_elf), and converts the executable into a .vxbin in *image
 * (malloc()) / *image_size.  Returns 0, or a negative errno with a message
 * in err.  Runs ld as a child process; any thread. */
int vxr_link_vxbin(const char *sdk, const char *ld, const char *libc, const char *libgcc, const uint8_t *obj,
                   size_t obj_size, const char *entry, uint32_t vortex_abi, uint8_t **image,
                   size_t *image_size, char *err, size_t errcap);

#endif /* VXR_VXBIN_H */
