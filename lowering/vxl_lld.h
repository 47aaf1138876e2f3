/*
 * vxl_lld.h - relocatable links by lld's ELF driver, linked into the
 * program (vxl_lld.cpp): a module's pieces merged without starting an
 * ld.lld process, whose start-up (dynamic loading of libLLVM) cost more
 * than its link.
 */
#ifndef VXL_LLD_H
#define VXL_LLD_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Most objects one link takes (a descriptor each). */
#define VXL_LLD_MAX_INPUTS 512u
/* Most bytes of output read back. */
#define VXL_LLD_MAX_OUTPUT (1u << 30)
/* Most bytes of lld's diagnostics a failed link's message quotes. */
#define VXL_LLD_DIAG_MAX 1536u

/* Links n relocatable objects (objects[i], sizes[i] bytes), in that order,
 * into one relocatable object, as `ld.lld -r --no-warnings /dev/fd/3 ...
 * -o -` of the same lld (22) would: the same arguments, the same bytes.
 * Runs lld::elf::link in a child forked for the link (its inputs and
 * output memory files, nothing on the file system), so the caller must
 * have no other thread that could hold a lock the child needs (LLVM's, the
 * allocator's): a compile worker between modules, a single-threaded
 * program.  Returns 0 with *out (malloc(), at most VXL_LLD_MAX_OUTPUT) /
 * *out_size, or a negative errno with a message in err (errcap bytes; a
 * failed link's quotes lld's diagnostics, up to VXL_LLD_DIAG_MAX bytes).
 * A vxl_merge_fn without its ud (vxd_merge_pieces wraps it). */
int vxl_lld_link_relocatable(uint32_t n, const uint8_t *const *objects, const size_t *sizes, uint8_t **out,
                             size_t *out_size, char *err, size_t errcap);

#ifdef __cplusplus
}
#endif

#endif /* VXL_LLD_H */
