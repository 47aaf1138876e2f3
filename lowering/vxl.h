/*
 * vxl.h - GPU-to-Vortex lowering and kernel argument-layout extraction.
 *
 * The only module that sees MLIR or LLVM types; none of them appear here.
 *
 * A vxl_compiler owns one MLIR context (all dialects, passes and LLVM
 * translations registered, threading off), the parsed upstream pass pipeline
 * and one RV32IMAF/ilp32f LLVM target machine.  Creating one costs a few
 * milliseconds; compiling with a warm one is the cheap part.  It holds no
 * global or static mutable state, so any number may exist, but one compiler
 * must only be used by one thread at a time (MLIR contexts are not
 * thread-safe with threading disabled).
 *
 * Inputs are GPU-dialect modules as Polygeist's cgeist writes them (see
 * docs/VORTEX_ABI.md): gpu.module / gpu.func kernels, host code
 * with gpu.launch_func and unregistered polygeist.* ops, DLTI entries with
 * vector<Kxi32> values.  Host code is not compiled; only gpu.modules are.
 */
#ifndef VXL_H
#define VXL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Version of the code the lowering emits (entry convention, argument-buffer
 * layout, thread model).  Part of every cache key: bump it whenever the same
 * source would produce a different object or layout.
 *   1: first release.
 *   2: split/join for divergent switches and cf branches, vx_pred kept to
 *      one per loop, kernels in several gpu.modules qualified.
 *   3: `= uninitialized` one-element workgroup globals are the dynamic
 *      area (they were static), whose size main keeps at least one
 *      element; selects, min/max, i64 comparisons and variable i64
 *      shifts are emitted without branches; group local memory is
 *      16-byte aligned and holds a scratch area for collectives; private
 *      memory holding thread-dependent values is divergent; objects
 *      carry line tables.
 *   4: one object per module; kernel i starts at __vxl_main_<i> (was: one
 *      object per kernel, each defining main).
 *   5: gpu.func names with a NUL byte or invalid UTF-8 are refused (they
 *      compiled before and could sit in a cache).
 *   6: private memory over a thread's 16 KiB stack slot, globals and
 *      tensor constants over 64 MiB and nesting deeper than 256 levels are
 *      refused (the first compiled into objects that overwrote other
 *      threads' stacks).
 *   7: memref arguments carry their rank and element size in the metadata.
 *   8: line tables name the source's file only (no directory, keyed);
 *      cf.assert prints and traps on the device (was: host puts/abort);
 *      kernels past VXL_MAX_KERNEL_ARGS / VXL_MAX_ARG_BUFFER refused.
 *   9: modules of more than VXL_PIECE_KERNELS kernels are compiled in
 *      pieces linked into one object; module variables the kernels can
 *      write are weak and hidden, named VXL_VAR_PREFIX "<name>".
 *  10: the target is an option (vortex_abi 2 | 3, xlen 32 | 64), named
 *      in every kernel record.
 *  11: the object of a module of two kernels or more holds a dispatcher
 *      (VXL_DISPATCH_SYMBOL) that starts any of its kernels by id, so one
 *      image runs them all; records carry the id.
 *  12: a gpu.shuffle width above the warp is refused when constant and
 *      checked on the device when not; on kernel ABI 3 each kernel's entry
 *      is also VXL_KENTRY_PREFIX "<kernel name>", the name upstream
 *      Vortex's toolchain gives a kernel's entry and its .vxbin lists; a
 *      gpu.printf index argument is as wide as its conversion (%lld: 64
 *      bits); on kernel ABI 2 branches on block ids are split (upstream's
 *      vx_spawn_threads runs one-thread blocks one per lane); on kernel
 *      ABI 3 there is no dispatcher: a launch names its kernel's entry.
 *  13: branches on gpu.lane_id and on values gpu.shuffle moves are
 *      divergent (split/join), as on thread ids; gpu.rotate and
 *      gpu.subgroup_broadcast are lowered; kernel scalars over 64 bits
 *      are refused.
 *  14: the device-ABI helpers carry no line-table entries of their own: an
 *      inlined helper maps to the line of the gpu op it implements.
 *  15: DWARF 4 line tables (DWARF 5's address pool header depended on
 *      the register width a worker had compiled for first).
 *  16: pieces of at most 16 kernels (were 32): a module with one kernel
 *      edited compiles a piece of 16 kernels again, not 32. */
#define VXL_LOWERING_ABI_VERSION 16u

/* On kernel ABI 3 (Vortex 3.0), every kernel's entry is also a global
 * function symbol of this prefix and the kernel's name (its record's
 * name: "module::kernel" when qualified): an alias of the entry, as
 * upstream Vortex's LLVM emits for a kernel, which its vxbin.py lists in
 * the image's VXSYMTAB footer and its runtime resolves by name. */
#define VXL_KENTRY_PREFIX "__vx_kentry_"

typedef struct vxl_compiler vxl_compiler;

/* Threads per warp of Vortex's default configuration. */
#define VXL_DEFAULT_WARP_SIZE 4u
/* The kernel ABI and register width compiled for when none is asked:
 * Vortex 2.x (its last release, v2.3) on RV32. */
#define VXL_DEFAULT_VORTEX_ABI 2u
#define VXL_DEFAULT_XLEN 32u

/* Every compile option, as X(type, name, keyed): `keyed` says whether the
 * option changes the objects or metadata, and so belongs in
 * vxl_fingerprint().  vxl_options is generated from this list and
 * vxl_fingerprint() walks it, so an option cannot be added without saying
 * whether it is part of the cache key (test_layout checks each keyed one
 * changes the fingerprint).
 *   opt_level      LLVM pipeline default<O0..O3>; values over 3 mean 3
 *   emit_ir        keep the lowered MLIR (LLVM dialect) as text; the
 *                  objects are the same either way
 *   warp_size      threads per warp of the target device: the subgroup size
 *                  of gpu.lane_id / shuffle / subgroup_reduce, a power of
 *                  two 1..32 (0 = VXL_DEFAULT_WARP_SIZE); the objects are
 *                  correct only on devices with this many threads per warp
 *                  (kernel subgroup_size)
 *   shuffle_insns  gpu.shuffle through Vortex's shuffle instructions
 *                  (custom-0, funct7 1: up/down/bfly/idx), for devices built
 *                  with them; otherwise through local memory
 *   vortex_abi     the kernel ABI of the device's Vortex (docs/VORTEX_ABI.md):
 *                  2, the 2.x releases (an entry `main` that spawns the grid
 *                  with vx_spawn_threads, indices in thread-locals), or 3,
 *                  Vortex 3.0's hardware scheduler (an entry `kernel_main`
 *                  run by every warp of a block, indices from CSRs);
 *                  0 = VXL_DEFAULT_VORTEX_ABI
 *   xlen           the device's register width: 32 (RV32IMAF, ilp32f) or 64
 *                  (RV64IMAFD, lp64d), as Vortex builds its kernels; the
 *                  argument layout follows that target's LLVM data layout
 *                  (device pointers are 8 bytes on 64); 0 = VXL_DEFAULT_XLEN */
/* clang-format off: one option per line */
#define VXL_OPTIONS(X)                                                                                       \
  X(uint32_t, opt_level, 1)                                                                                  \
  X(bool, emit_ir, 0)                                                                                        \
  X(uint32_t, warp_size, 1)                                                                                  \
  X(bool, shuffle_insns, 1)                                                                                  \
  X(uint32_t, vortex_abi, 1)                                                                                 \
  X(uint32_t, xlen, 1)
/* clang-format on */

typedef struct {
#define VXL__OPTION_FIELD(type, name, keyed) type name;
  VXL_OPTIONS(VXL__OPTION_FIELD)
#undef VXL__OPTION_FIELD
} vxl_options;

/* How an argument travels in the argument buffer. */
typedef enum { VXL_ARG_SCALAR = 0, VXL_ARG_POINTER = 1 } vxl_arg_kind;

/* One kernel argument as the host must pack it (sizes in bytes). */
typedef struct {
  uint32_t index;     /* position in the gpu.func signature */
  char *type;         /* MLIR type text, e.g. "memref<?xf32>"; malloc() */
  vxl_arg_kind kind;  /* pointer for memref and !llvm.ptr, else scalar */
  uint32_t size;      /* store size on the target (xlen) */
  uint32_t align;     /* ABI alignment on the target */
  uint32_t offset;    /* offset from the start of the argument buffer */
  uint32_t rank;      /* memref rank (its descriptor has 3 + 2 x rank
                         fields on the host); 0 for other arguments */
  uint32_t elem_size; /* memref element bytes (the descriptor's offset
                         counts elements); 0 for other arguments */
} vxl_arg;

/* One compiled kernel: where it starts in the module's object and the
 * argument buffer its entry reads (docs/PROTOCOL.md, "Argument buffer";
 * the daemon sends exactly these fields as the protocol's kernel record). */
typedef struct {
  char *name;         /* gpu.func symbol ("module::kernel" when qualified); malloc() */
  char *entry;        /* entry symbol in the object: VXL_ENTRY_PREFIX "<i>"; malloc() */
  uint32_t kernel_id; /* i: its id in the module's dispatcher */
  uint32_t nargs;
  vxl_arg *args;           /* nargs entries; malloc() */
  uint32_t args_size;      /* end of the last argument */
  uint32_t launch_offset;  /* offset of the launch header */
  uint32_t buffer_size;    /* whole argument buffer, a multiple of 8 */
  uint32_t grid_dims;      /* highest grid dimension the kernel reads, 1..3 */
  uint32_t known_block[3]; /* gpu.known_block_size, or {0,0,0} */
  uint32_t shared_bytes;   /* static workgroup (shared) memory per block */
  uint32_t subgroup_size;  /* threads per warp the kernel was compiled for */
  uint32_t vortex_abi;     /* the kernel ABI it was compiled for: 2 or 3 */
  uint32_t xlen;           /* the register width it was compiled for: 32 or 64 */
  uint32_t dynamic_min;    /* the least dynamic shared memory a launch gets (bytes;
                              a module with extern __shared__ arrays) */
  uint32_t scratch_bytes;  /* local memory its collectives use per thread of a
                              block, after the shared memory (bytes; 0: none) */
} vxl_kernel;

/* Releases the fields of k (not k itself).  NULL-safe. */
void vxl_kernel_clear(vxl_kernel *k);

/* Prefix of the kernels' entry symbols: kernel i of a result is started by
 * VXL_ENTRY_PREFIX "<i>" in the module's object. */
#define VXL_ENTRY_PREFIX "__vxl_main_"

/* One image for every kernel of a module.  On Vortex 3.0 every launch
 * names its kernel's entry PC (the scheduler's CSR 0xCE1, which the start
 * code calls with the argument buffer; upstream's runtime finds it by the
 * kernel's name, VXL_KENTRY_PREFIX): entries are `int entry(void
 * *buffer)` and there is no dispatcher.  On Vortex 2.x, whose start code
 * calls main (the scheme of Vortex's POCL driver, a kernel id before the
 * arguments): the object of a module of VXL_DISPATCH_MIN_KERNELS kernels
 * or more also defines VXL_DISPATCH_SYMBOL, which an image links as main.
 * It reads a launch record at mscratch: a little-endian u32 kernel id at
 * offset 0, bytes 4 .. VXL_LAUNCH_RECORD_BYTES - 1 reserved (zero), then
 * that kernel's argument buffer; it calls the kernel's entry, `int
 * entry(void *buffer)` in such a module, and returns what it returns, or
 * -1 for an id the module has not.  A 2.x module of one kernel has no
 * dispatcher (every function costs the code generator time, and one
 * kernel needs no choosing): its image starts at the kernel's entry, `int
 * entry(void)` reading mscratch, as main. */
#define VXL_DISPATCH_SYMBOL "__vxl_dispatch"
#define VXL_DISPATCH_MIN_KERNELS 2u
#define VXL_LAUNCH_RECORD_BYTES 16u

/* Bounds of one kernel's interface, past which a compile is refused at the
 * kernel's location: arguments per kernel, and the argument buffer
 * (bytes, launch header included).  The protocol's bounds on a kernel
 * record (vxp.h: VXP_MAX_ARGS, VXP_MAX_BUFFER_SIZE) are no smaller, so a
 * kernel that compiles always has a record a client accepts. */
#define VXL_MAX_KERNEL_ARGS 4096u
#define VXL_MAX_ARG_BUFFER (1u << 20)

typedef struct {
  bool ok;         /* true: kernels and object are valid */
  uint8_t *object; /* one ELF32 RISC-V relocatable object for the whole
                      module, every kernel behind its entry; malloc() */
  size_t object_size;
  uint32_t nkernels;
  vxl_kernel *kernels; /* malloc(); metadata and entry symbol of each */
  uint32_t ndiags;
  char **diags;     /* "file:line:col: error: message"; malloc() */
  char *lowered_ir; /* when opts.emit_ir; malloc(), may be NULL */
} vxl_result;

/* Creates a compiler (MLIR context, pipeline, target machine).  Returns 0 and
 * *out (caller owns; vxl_compiler_destroy) or a negative errno-style code
 * (-ENOMEM, -EINVAL if the RISC-V target is missing from LLVM). */
int vxl_compiler_create(vxl_compiler **out);
void vxl_compiler_destroy(vxl_compiler *c);

/* How c emits objects: reuse nonzero (the default) through one
 * code-generation pipeline built when c was and run on every module
 * (vxl_emit.h), 0 through LLVM's C API, which builds one per module.  The
 * bytes are the same (test_layout compares them); for tests and
 * benchmarks.  Returns 0, or -ENOMEM (c keeps the C API's way). */
int vxl_compiler_reuse_codegen(vxl_compiler *c, int reuse);

/* Longest file name an object's debug info gives its source (bytes). */
#define VXL_DEBUG_FILE_MAX 255

/* The file name the object compiled from a source called source_name
 * names in its debug info (DWARF line tables, what a debugger or the
 * emulator's fault reports show): the last path component only, each byte
 * below 0x20 and 0x7f replaced by '?', cut to VXL_DEBUG_FILE_MAX bytes;
 * "<source>" for NULL or a name with no last component.  No directory and
 * no compilation directory: the requester's paths never enter an object
 * (as -fdebug-prefix-map and ccache's base_dir keep them out).  The object
 * depends on this name, so a cache key must name it.  Writes a
 * NUL-terminated string to out.  Any thread. */
void vxl_debug_file_name(const char *source_name, char out[VXL_DEBUG_FILE_MAX + 1]);

/* ---- pieces ----
 *
 * A module's kernels are compiled in pieces of at most VXL_PIECE_KERNELS
 * consecutive kernels (in the order of the source), each piece a
 * relocatable object with its kernels' entries (kernel i is still
 * VXL_ENTRY_PREFIX "<i>"), linked in piece order into the module's one
 * object.  The pieces depend on the kernel count only, never on who
 * compiles them or how many compile at once, so a module compiled piece
 * by piece on one thread and one whose pieces were compiled on several
 * threads (each with its own compiler and its own parse of the source)
 * are the same bytes.  A piece's work is its own kernels plus the
 * functions and variables they use (upstream symbol-dce prunes the rest);
 * the parse is the only step repeated per compiler.  16 kernels a piece:
 * small enough that a module with one kernel edited compiles little again
 * when its other pieces are cached (vxl_piece_inputs), large enough that
 * a whole module costs ~6% more CPU than in pieces of 32 (256 kernels;
 * docs/benchmarks.md). */
#define VXL_PIECE_KERNELS 16u

/* Most pieces of one module: larger modules have larger pieces. */
#define VXL_MAX_PIECES 256u

/* Name prefix of a module variable the kernels can write, in the object. */
#define VXL_VAR_PREFIX "__vxl_var."

/* How many pieces a module of nkernels kernels is compiled in: 1 up to
 * VXL_PIECE_KERNELS kernels, else ceil(nkernels / VXL_PIECE_KERNELS), at
 * most VXL_MAX_PIECES.  Any thread. */
uint32_t vxl_piece_count(uint32_t nkernels);

/* The kernels of piece `piece` of a module of nkernels kernels: *first,
 * *count (as even as the piece count allows); count 0 past the last
 * piece.  Any thread. */
void vxl_piece_range(uint32_t nkernels, uint32_t piece, uint32_t *first, uint32_t *count);

/* Checks opts before any work (warp_size a power of two up to 32): fills
 * *res (caller clears), res->ok false with a diagnostic naming
 * source_name when a value is refused.  Returns 0 or -EINVAL.  Any
 * thread. */
int vxl_options_check(const vxl_options *opts, const char *source_name, vxl_result *res);

/* A parsed source, ready to be compiled piece by piece. */
typedef struct vxl_source vxl_source;

/* Parses (and checks, and outlines gpu.launch bodies of) one MLIR source
 * of len bytes with c, as vxl_compile() does first.  Fills *res (caller
 * clears): res->ok false and diagnostics when the source is refused, else
 * *out (caller destroys with vxl_source_destroy; it belongs to c and must
 * go before c does).  Returns 0 or -ENOMEM.  c's thread only. */
int vxl_source_parse(vxl_compiler *c, const char *source, size_t len, const char *source_name,
                     vxl_source **out, vxl_result *res);

/* Kernels in the gpu.modules of s: at least 1 (a source without kernels
 * is refused by vxl_source_parse). */
uint32_t vxl_source_kernels(const vxl_source *s);

void vxl_source_destroy(vxl_source *s);

/* Compiles piece `piece` of s (parsed by c) into *res: the piece's kernels,
 * its relocatable object and diagnostics.  Returns 0 or -ENOMEM, as
 * vxl_compile().  c's thread only. */
int vxl_compile_piece(vxl_compiler *c, const vxl_source *s, uint32_t piece, const vxl_options *opts,
                      vxl_result *res);

/* What piece `piece` of s (parsed by c) is compiled from, as text: the
 * kernel numbering, the attributes of the source's module and of its
 * gpu.modules, and every op of the gpu.modules but the other pieces'
 * kernels, in MLIR's generic form with
 * every location (file:line:col), in *out (malloc(), NUL-terminated, *len
 * bytes without the NUL).  vxl_compile_piece's result for the piece is a
 * function of this text, the options (vxl_fingerprint) and the file name
 * the object's line tables name (vxl_debug_file_name): a piece cache keys
 * pieces by the three.  An edit in another piece's kernel leaves the text
 * unchanged unless it moves this piece's lines.  Returns 0, -EINVAL (no
 * such piece, or s parsed by another compiler) or -ENOMEM.  c's thread
 * only. */
int vxl_piece_inputs(vxl_compiler *c, const vxl_source *s, uint32_t piece, char **out, size_t *len);

/* The whole module of s lowered to the LLVM dialect, as one module (the
 * pieces' objects come from the same lowering, a piece at a time), with
 * the kernels' layouts as its vortex.kernel_args attribute: *ir
 * (malloc()).  What vxl_compile() returns as lowered_ir for opts.emit_ir.
 * Returns 0, -EINVAL (the module does not compile) or -ENOMEM.  c's thread
 * only. */
int vxl_source_lowered_ir(vxl_compiler *c, const vxl_source *s, const vxl_options *opts, char **ir);

/* Links n relocatable objects (objects[i], sizes[i] bytes), in that order,
 * into one relocatable object: *out (malloc()), *out_size.  Returns 0, or
 * a negative errno with a message in err (errcap bytes).  Must give the
 * same bytes for the same inputs. */
typedef int (*vxl_merge_fn)(void *ud, uint32_t n, const uint8_t *const *objects, const size_t *sizes,
                            uint8_t **out, size_t *out_size, char *err, size_t errcap);

/* Makes the results of all n pieces of one module (in piece order; they
 * are cleared) the module's result *res: kernels concatenated, objects
 * linked by merge (not called for one piece), diagnostics concatenated
 * without repeats, no lowered_ir (vxl_source_lowered_ir).  res->ok only if every piece is.  Returns 0 or
 * -ENOMEM.  Any thread. */
int vxl_result_merge(vxl_result *pieces, uint32_t n, vxl_merge_fn merge, void *merge_ud, vxl_result *res);

/* The merge vxl_compile() links pieces with (NULL: a module of more than
 * one piece fails with a diagnostic). */
void vxl_compiler_set_merge(vxl_compiler *c, vxl_merge_fn merge, void *merge_ud);

/* Compiles one MLIR source of len bytes (need not be NUL-terminated).
 * source_name is the file name diagnostics use; the object's debug info
 * names vxl_debug_file_name(source_name).  Always fills *res (the
 * caller releases it with vxl_result_clear): on a source error res->ok is
 * false and res->diags says why, with file:line:col.  Parses, compiles
 * each piece in turn and merges them (vxl_compiler_set_merge).  Returns 0,
 * or -ENOMEM when memory ran out (res then may be partial but is safe to
 * clear). */
int vxl_compile(vxl_compiler *c, const char *source, size_t len, const char *source_name,
                const vxl_options *opts, vxl_result *res);

void vxl_result_clear(vxl_result *res);

/* The cache key a gpu.module's text will have when a runtime sends it back
 * to be compiled with options opts (resolved: no field means "the
 * default") - the daemon's recipe, which the lowering does not know:
 * writes 64 hex digits and a NUL to key.  Returns 0, or nonzero to leave
 * the text without a key. */
typedef int (*vxl_module_key_fn)(void *ud, const vxl_options *opts, const char *text, size_t len,
                                 char key[65]);

/* The header line that fixes the options a gpu.binary's module is compiled
 * with: VXL_OPTIONS_TAG "target=vortexA-rvX warp_size=N opt_level=N
 * shuffle_insns=0|1" and a newline; the runtime sends exactly these. */
#define VXL_OPTIONS_TAG "// vortexd-options: "

/* The lines a gpu.binary's object begins with, before the module's text
 * (which is what the key covers): "// vortexd-key: KEY" when key_of gives
 * one, then per kernel VXL_HOST_ARGS_TAG, its name (bytes outside
 * [A-Za-z0-9_.$-] as %XX) and per argument " m<rank>" (a ranked memref:
 * its descriptor's 3 + 2 x rank 8-byte fields), " p" (a pointer), " s<n>"
 * (a scalar of n bytes on the host; index is 8) or " ?" (any other type),
 * ending in a newline: what the host passes for each argument of a launch
 * (gpu-to-llvm passes every parameter by address), which the runtime
 * compares with the kernel's record before it packs anything, so that it
 * never reads more from a host value than the host's own type holds. */
#define VXL_HOST_ARGS_TAG "// vortexd-host-args: "

/* A program's host side, lowered. */
typedef struct {
  int ok;
  char *host_ir;     /* the host module in the LLVM dialect, ready for
                        translation (vxl_emit_host_bitcode:
                        its #vortex.target needs this dialect); malloc() */
  uint32_t nmodules; /* gpu.modules turned into gpu.binary ops */
  uint32_t ndiags;
  char **diags; /* "file:line:col: error: message"; malloc() */
} vxl_host_result;

/* Lowers the host side of a whole GPU-dialect program (host functions,
 * gpu.launch / gpu.launch_func, gpu.alloc, gpu.memcpy, ...) the upstream
 * way: gpu.launch bodies are outlined, each gpu.module becomes a
 * gpu.binary whose one object holds the module's MLIR text, compiled at
 * its first launch.  Each module is compiled with opts, but for the fields
 * its own #vortex.target gives (vxl__module_target: the first of its
 * targets with opts' abi and xlen, else its first), and its object says
 * so: #gpu.object<#vortex.target<abi = A, xlen = X, warp_size = N, O = N>,
 * properties = {key = "KEY", target = "vortexA-rvX"}, bin = "..."> (as
 * vortexd's dialect plugin labels its objects), the text preceded by a line "// vortexd-key: KEY" when
 * key_of gives one, the options line (VXL_OPTIONS_TAG), "// vortexd-module: @NAME at FILE:LINE:COL" (what a
 * failure to load it names) and the kernels' host argument lines (VXL_HOST_ARGS_TAG).  The default offloading
 * handler
 * (#gpu.select_object) loads objects with mgpuModuleLoad; then
 * VXL_PIPELINE_HOST turns the rest into the LLVM dialect and calls of the
 * MLIR GPU runtime ABI (libvortexd_runtime implements it).  Always fills
 * *res (clear with vxl_host_result_clear).  Returns 0 or -ENOMEM. */
int vxl_lower_host(vxl_compiler *c, const char *source, size_t len, const char *source_name,
                   const vxl_options *opts, vxl_module_key_fn key_of, void *key_ud, vxl_host_result *res);
void vxl_host_result_clear(vxl_host_result *res);

/* What a JIT's entry wrapper calls and prints (mlir-runner's -e and
 * --entry-point-result). */
typedef enum {
  VXL_RESULT_VOID = 0,
  VXL_RESULT_I32 = 1,
  VXL_RESULT_I64 = 2,
  VXL_RESULT_F32 = 3,
} vxl_entry_result;

typedef struct {
  const char *name;        /* the wrapper's name, a function i32 () */
  const char *entry;       /* the function it calls (no arguments); NULL: main */
  vxl_entry_result result; /* what entry returns, printed */
} vxl_run_entry;

/* Translates a lowered host module (vxl_host_result.host_ir, len bytes)
 * to LLVM IR and writes it as LLVM bitcode, its gpu.binary objects
 * (#vortex.target) embedded and loaded by its global constructors.  Target
 * independent: the module's llvm.target_triple if it gives one, no data
 * layout, the coroutines of async.execute not yet lowered; the host's code
 * generator (vortexd-hostcc, lowering/vxl_hostcc.c) finishes it into an
 * object that links into a C or C++ program with libvortexd_runtime, or
 * into bitcode a JIT runs (lli-22, as `vxc run` uses it).  With run (else
 * NULL) the module also gets run->name, a function i32 () that calls
 * run->entry, prints its result as mlir-runner's --entry-point-result does
 * (an integer in decimal, an f32 as printf's %e, or nan, INF, -INF) and
 * returns 0; an entry that is not defined, takes arguments or returns
 * another type is -ENOENT.  Returns 0 and *bc (malloc()) / *size, or
 * -ENOENT / -EINVAL / -ENOMEM with a message in err.  Called by the
 * thread that owns c. */
int vxl_emit_host_bitcode(vxl_compiler *c, const char *host_ir, size_t len, const vxl_run_entry *run,
                          uint8_t **bc, size_t *size, char *err, size_t errcap);

/* Routes LLVM's (and MLIR's) fatal errors - report_fatal_error, which
 * otherwise prints and aborts - to handler(reason) instead.  The handler
 * must not return (LLVM aborts if it does): a compile worker answers the
 * request in flight and exits.  Process-wide: LLVM keeps one handler per
 * process; call it once, at the start of a process that compiles. */
void vxl_install_fatal_error_handler(void (*handler)(const char *reason));

/* Describes the toolchain for cache keys: LLVM version, target triple, CPU,
 * features, ABI, data layout.  Static string; any thread. */
const char *vxl_toolchain_fingerprint(void);

/* Everything besides the source that decides what vxl_compile() returns
 * (objects and metadata) for opts: the lowering ABI version, the toolchain
 * fingerprint, and every keyed option of VXL_OPTIONS after defaults are
 * applied (warp_size 0 and 4 are the same compile).  Writes a NUL-terminated
 * string into buf (cap bytes).  Returns its length, or -ENOSPC when cap is
 * too small (2048 bytes always suffice).  Any thread. */
int vxl_fingerprint(const vxl_options *opts, char *buf, size_t cap);

/* Short human-readable form: "LLVM 22.1.8, riscv32-unknown-elf
 * generic-rv32 +m,+a,+f ilp32f".  Static string; any thread. */
const char *vxl_toolchain_summary(void);

/* ---- layout rule, exposed for the unit tests (docs/PROTOCOL.md) ---- */

/* Scalar/pointer argument types the layout understands, by MLIR type text
 * ("i8", "i16", "i32", "i64", "f32", "f64", "index", "memref<...>",
 * "!llvm.ptr").  Computes offsets, sizes and alignments of the arguments of a
 * kernel with these types from the LLVM data layout of RV32 or RV64 (xlen 32
 * or 64), then the launch header and total size.  Fills k->args (types
 * copied), k->nargs, k->args_size, k->launch_offset, k->buffer_size.
 * Returns 0, -EINVAL for a type it cannot place or another xlen (k
 * untouched), -ENOMEM. Any thread. */
int vxl_layout_from_types(const char *const *mlir_types, uint32_t n, uint32_t xlen, vxl_kernel *k);

#endif /* VXL_H */
