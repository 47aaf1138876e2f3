/*
 * vxs.h - a lockstep SIMT emulator of a Vortex device.
 *
 * Runs linked RV32IMAF or RV64IMAFD kernel images (an ELF executable built
 * against the device runtime in runtime/simt/device/) the way Vortex
 * hardware does: the
 * threads of a warp share one PC and a thread mask and step every
 * instruction together; the custom-0 instructions the objects use (tmc,
 * wspawn, split, join, bar, pred) and the Vortex CSRs get Vortex's
 * semantics (docs/VORTEX_ABI.md, "SIMT semantics").  The base ISA is
 * executed by libunicorn, one uc_engine per device with one saved CPU
 * context per hardware thread.  On RV64 the device's memory still lies
 * below 4 GiB (every address this interface takes is 32-bit); registers
 * are 64-bit.
 *
 * What it checks that hardware would abort on: an ordinary branch or jump
 * on which the active threads of a warp disagree (no split around it), a
 * join with nothing to join or out of order, an IPDOM stack overflow, a
 * barrier nobody can release, memory accesses outside mapped memory, and
 * instructions the configuration does not have.  Each is reported with the
 * PC, the function it lies in, the warp, core and thread masks.
 *
 * Code in the image's serial range (the symbols __vxs_serial_start and
 * __vxs_serial_end: libc, libm, libgcc and vx_printf, which the Vortex
 * SDK builds with its own divergence pass) is not checked for divergence:
 * when a warp calls into it, each active thread runs the call alone to its
 * return address, then the warp continues in lockstep.
 *
 * Threads: a vxs_device is used by one thread at a time; separate devices
 * are independent.  No global or static mutable state.
 */
#ifndef VXS_H
#define VXS_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "vxs_abi.h"

/* Which side of a divergent split runs first.  Vortex simulators differ
 * (older ones take the larger set, newer ones the smaller); correct code
 * computes the same result under each. */
typedef enum {
  VXS_SPLIT_SMALLER = 0, /* fewer threads first; ties: taken side */
  VXS_SPLIT_LARGER,      /* more threads first; ties: taken side */
  VXS_SPLIT_TAKEN,       /* threads whose predicate is 1 first */
  VXS_SPLIT_NOT_TAKEN,   /* threads whose predicate is 0 first */
} vxs_split_policy;

typedef struct {
  uint32_t threads_per_warp; /* 1..VXS_MAX_THREADS_PER_WARP; Vortex default 4 */
  uint32_t warps_per_core;   /* 1..VXS_MAX_WARPS_PER_CORE; Vortex default 4 */
  uint32_t cores;            /* 1..VXS_MAX_CORES; default 1 */
  uint32_t local_mem_bytes;  /* local (shared) memory per core, multiple of
                                4096; Vortex default 16384 */
  uint32_t barriers;         /* barrier ids per core; default warps_per_core */
  uint32_t ipdom_depth;      /* IPDOM stack entries per warp; default
                                2 * threads_per_warp (a warp of T threads
                                can nest at most T - 1 divergent splits) */
  vxs_split_policy split_policy;
  uint64_t max_steps; /* warp instructions before giving up; default
                         2^31 */
  uint32_t xlen;      /* register width: 32 (RV32IMAF, the default) or 64
                         (RV64IMAFD) */
} vxs_config;

/* Outcome of a run.  error is "" on success, else one line saying what the
 * hardware would have done wrong and where. */
typedef struct {
  int32_t exit_code;         /* main's return value (core 0) */
  uint64_t warp_steps;       /* warp instructions issued */
  uint64_t thread_steps;     /* thread instructions executed */
  uint32_t splits_divergent; /* splits that pushed the IPDOM stack */
  uint32_t max_ipdom_depth;  /* deepest IPDOM stack seen */
  char error[768];
} vxs_report;

typedef struct vxs_device vxs_device;

/* A device address: XLEN bits, below 4 GiB on an RV32 device and below
 * 2^48 on an RV64 one (Vortex's VX_CFG_MEM_ADDR_WIDTH: upstream's RV64
 * images start at 0x180000000, its stacks end at 0x1FFFF0000). */
typedef uint64_t vxs_addr;

/* The end of an XLEN-bit device's address space. */
#define VXS_ADDR_LIMIT(xlen) ((xlen) == 64 ? (1ull << 48) : (1ull << 32))

/* Fills *cfg with Vortex's default configuration (1 core, 4 warps of 4
 * threads, 16 KiB local memory, smaller-set-first splits). */
void vxs_config_default(vxs_config *cfg);

/* Creates a device for cfg (copied; zero fields take their defaults).
 * Returns 0 and *out (caller owns; vxs_device_destroy), -EINVAL for a
 * configuration outside the bounds above, -ENOMEM, or -EIO if libunicorn
 * cannot open a RISC-V 32 engine. */
int vxs_device_create(const vxs_config *cfg, vxs_device **out);
/* (cores x warps_per_core x threads_per_warp must not exceed VXS_MAX_HARTS.) */
void vxs_device_destroy(vxs_device *dev);

/* Maps size bytes of zeroed device memory at addr (both multiples of
 * 4096), e.g. global memory for the host's buffers.  Returns 0, -EINVAL
 * (misaligned, overlapping, past the device's address space or too many
 * regions), -ENOMEM. */
int vxs_mem_map(vxs_device *dev, vxs_addr addr, uint32_t size);

/* Copies between host memory and mapped device memory.  The range must lie
 * inside one mapped region.  Returns 0 or -EFAULT. */
int vxs_mem_write(vxs_device *dev, vxs_addr addr, const void *src, uint32_t size);
int vxs_mem_read(vxs_device *dev, vxs_addr addr, void *dst, uint32_t size);

/* Loads a linked ELF executable of size bytes (ELF32 for an RV32 device,
 * ELF64 for RV64): maps and fills its
 * PT_LOAD segments (memory beyond a segment's file size zeroed), keeps its
 * function symbols for reports and its serial range.  One image per
 * device.  Returns 0, -EINVAL for a file that is not a RISC-V executable
 * of the device's class (why in *why, a static string, when why is not NULL),
 * -ENOMEM. */
int vxs_load_elf(vxs_device *dev, const void *elf, size_t size, const char **why);

/* Sets the serial range to [lo, hi) (code addresses), in place of the
 * image's __vxs_serial_start / __vxs_serial_end: for images linked by
 * another link script (upstream Vortex's), whose libraries were not built
 * divergence-aware either.  Returns 0, or -EINVAL (no image, lo > hi). */
int vxs_set_serial(vxs_device *dev, vxs_addr lo, vxs_addr hi);

/* Keeps, from each run of the loaded ELF image to the next, its data
 * objects whose symbol names start with prefix (a module's variables,
 * which CUDA keeps for the module's lifetime): a run still starts from
 * the image's initial contents, but for those ranges, which hold what is
 * in device memory when it starts (what the last run left, or what
 * vxs_kept_write put there).  Once per device, after vxs_load_elf.
 * Returns how many ranges are kept, or -EINVAL (no ELF image, or called
 * before), -ENOMEM. */
int vxs_keep_symbols(vxs_device *dev, const char *prefix);

/* Bytes of the kept ranges together. */
uint32_t vxs_kept_size(const vxs_device *dev);

/* Copies the kept ranges, in address order, out of device memory into dst,
 * or into it from src (size: vxs_kept_size bytes): how a caller carries
 * them to another device of the same image.  Returns 0, -EINVAL (another
 * size), -EFAULT. */
int vxs_kept_read(vxs_device *dev, void *dst, uint32_t size);
int vxs_kept_write(vxs_device *dev, const void *src, uint32_t size);

/* Loads a flat image (a .vxbin's payload: the bytes from addr on, memory
 * past them zeroed up to the page) at addr, a multiple of 4096, which is
 * also where execution starts; no symbols (reports name addresses only).
 * One image per device.  Returns 0, -EINVAL, -ENOMEM. */
int vxs_load_image(vxs_device *dev, vxs_addr addr, const void *image, uint32_t size);

/* Resets every hart and runs the image from its entry point on warp 0,
 * thread 0 of each core, with CSR mscratch = argument_buffer, until every
 * warp has halted, an error or max_steps.  The console output of
 * vx_printf is appended to dev's console (vxs_console).  Returns 0 when the
 * run finished without error (rep->exit_code holds main's result),
 * VXS_EDEVICE when the device failed (rep->error says how), -EINVAL
 * without a loaded image. */
int vxs_run(vxs_device *dev, vxs_addr argument_buffer, vxs_report *rep);

/* A launch as Vortex 3.0's hardware scheduler (the KMU) runs it: the
 * grid and block sizes, the local memory each block gets (bytes) and the
 * kernel's entry PC, what the host writes to the KMU's DCRs
 * (VX_types.toml, dcr_kmu). */
typedef struct {
  uint32_t grid[3], block[3];
  uint32_t local_bytes;
  vxs_addr entry; /* the kernel's entry PC (CSR 0xCE1, VXS_CSR_CTA_ENTRY), or 0 */
} vxs_kmu_launch;

/* Resets every hart and runs the image's blocks as the hardware scheduler
 * does: a block of B threads takes ceil(B / threads_per_warp) warps of one
 * core, its last warp with the threads past B off; a core runs as many
 * blocks at once as its warps, its local memory (local_bytes each, rounded
 * up to 16) and its barriers allow.  Every warp of a block starts at the
 * image's entry with the block CSRs of vxs_abi.h set, CSR 0xCE1 holding
 * l->entry (vx_kmu.S calls that PC with the argument buffer, or
 * kernel_main when it is 0, as upstream's __vx_cta_entry calls the PC);
 * blocks are started in order, x fastest, whenever a core has room.  A
 * barrier of a block is its CTA_ID for CTA_SIZE warps.
 * Returns as vxs_run (rep->exit_code is 0: there is no main), or -EINVAL
 * without an image or for a launch no core can hold (a zero dimension, a
 * block over a core's warps or local memory; rep->error says which). */
int vxs_run_kmu(vxs_device *dev, vxs_addr argument_buffer, const vxs_kmu_launch *l, vxs_report *rep);

/* What vxs_run returns when the kernel failed on the device (a fault, a
 * divergence the hardware would abort on, a deadlock, the step limit):
 * the run's own failure, not the emulator's, described in rep->error. */
#define VXS_EDEVICE (-EIO)

/* What the device printed so far (NUL-terminated; owned by dev, valid
 * until the next vxs_run or vxs_device_destroy). */
const char *vxs_console(const vxs_device *dev);

#endif /* VXS_H */
