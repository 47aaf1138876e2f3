/*
 * vxl_internal.h - shared between the files of lowering/ only.
 *
 * MLIR side, GPU dialect -> LLVM dialect: vxl_mlir.c (the stages, in
 * order), vxl_util.c (shared helpers; calls nothing else here),
 * vxl_memory.c (argument views, workgroup and private memory), vxl_gpu.c
 * (gpu ops), vxl_subgroup.c (collectives), vxl_divergence.c (split/join).
 * LLVM side: vxl_codegen.c lays out argument buffers, writes each kernel's
 * Vortex entry and emits the object.  vxl.c drives both halves.  Calls go
 * from the driver down to the others and from all of them to vxl_util.c,
 * never back.
 */
#ifndef VXL_INTERNAL_H
#define VXL_INTERNAL_H

#include <string.h>

#include <llvm-c/Core.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <mlir-c/IR.h>
#include <mlir-c/Pass.h>
#include <mlir-c/Target/LLVMIR.h>

#include "vxl.h"
#include "vxl_emit.h"
#include "vxl_target.h"
#include "vxl_vector.h"

/* How the lowering builds IR.  A single operation (arith.constant,
 * func.call, llvm.mlir.global, a func.func declaration, the rewritten gpu
 * ops) is built through MLIR's C API, an MlirOperationState, as MLIR's own
 * C API tests do.  A whole helper function with a body - the device-ABI
 * prelude, a workgroup buffer's view, a gpu.printf wrapper, a subgroup
 * collective - is written as MLIR text and parsed into the context: the C
 * API offers no builder above the generic operation state (no block
 * arguments by name, no regions built from nested builders, no
 * verification until the whole function exists), so such a body built op
 * by op is several times longer than the MLIR it stands for, and cannot be
 * read against the MLIR it produces.  The view helpers are parsed once per
 * compiler and cloned after (vxl_compiler.view_ops).
 *
 * Growable NUL-terminated string, usable as an MlirStringCallback sink
 * (user data = the vxl__buf).  p is from malloc(); oom set on failure. */
typedef struct {
  char *p;
  size_t n, cap;
  int oom;
} vxl__buf;

void vxl__buf_append(MlirStringRef s, void *ud);

/* The printed form of a type / attribute (malloc(); NULL on OOM). */
char *vxl__type_str(MlirType t);
char *vxl__attr_str(MlirAttribute a);

/* Growable list of diagnostic lines (each from malloc()). */
typedef struct {
  char **v;
  uint32_t n, cap;
  const char *source_name; /* names locations the parser left unnamed */
  const char *debug_name;  /* the name the source was parsed under, which
                              the object's line tables carry (NULL: the
                              source name); diagnostics say source_name */
} vxl__diags;

/* Appends line (malloc(); d owns it from then on).  0, or -ENOMEM (line
 * freed). */
int vxl__diag_push(vxl__diags *d, char *line);
/* Appends a formatted line; silently drops it when memory runs out. */
void vxl__diag_add(vxl__diags *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends "file:line:col: error: WHAT" for loc (WHAT from fmt; refusals
 * start it with "unsupported: "). */
void vxl__diag_at(vxl__diags *d, MlirLocation loc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Memory limits the Vortex runtime imposes (docs/VORTEX_ABI.md): a
 * thread's private memory lives on its stack, in a 16 KiB hart slot; a
 * global or constant is carried in the object. */
#define VXL_MAX_PRIVATE_BYTES (16u * 1024u)
#define VXL_MAX_GLOBAL_BYTES (64ull * 1024u * 1024u)

/* Refuses, with a diagnostic at the op, memory the target cannot hold:
 * private attributions and memref.alloca over VXL_MAX_PRIVATE_BYTES,
 * workgroup attributions over 4 GiB, memref.globals and tensor values over
 * VXL_MAX_GLOBAL_BYTES (a 1 GiB dense splat would be materialised in the
 * object).  Returns 0 or -EINVAL. */
int vxl__check_sizes(MlirOperation root, vxl__diags *d);

/* What a host needs to find the element a memref descriptor designates:
 * the memref's rank (the descriptor has 3 + 2 x rank fields) and element
 * bytes (its offset counts elements; index is 32 bits on the device).
 * Both 0 for a type that is not a memref. */
void vxl__memref_host_info(MlirType t, uint32_t *rank, uint32_t *elem_size);

/* 1 when the n bytes at s are well-formed UTF-8 (RFC 3629: no overlong
 * forms, no surrogates, nothing above U+10FFFF), else 0. */
int vxl__utf8_valid(const char *s, size_t n);
/* Formats loc as "file:line:col" into buf (always NUL-terminated). */
void vxl__loc_format(const vxl__diags *d, MlirLocation loc, char *buf, size_t cap);

/* i32 constant global the MLIR side adds when the module has extern
 * __shared__ globals: the smallest dynamic area main may give a group
 * (bytes), so a one-element __shared__ variable written the same way still
 * has its own storage when the launch asks for no dynamic memory. */
/* Prefix of the subgroup helpers whose results differ from lane to lane
 * (gpu.lane_id, gpu.shuffle, gpu.rotate): the divergence analysis starts
 * divergent values at their calls, as at the thread ids'. */
#define VXL_LANE_HELPER "__vxl_lane"

#define VXL_DYNAMIC_MIN_SYMBOL "__vxl_dynamic_min"

/* i32 constant global the MLIR side adds when a kernel uses subgroup or
 * workgroup collectives: scratch bytes per thread of the block, which main
 * adds to each group's local memory after the dynamic area. */
#define VXL_SCRATCH_SYMBOL "__vxl_scratch_per_thread"
#define VXL_SCRATCH_BYTES_PER_THREAD 16u

/* State of the subgroup lowering for one compile (vxl_subgroup.c). */
typedef struct {
  MlirContext ctx;
  MlirModule mod; /* where helpers go */
  vxl__diags *d;
  uint32_t warp_size; /* threads per warp = subgroup size */
  int shuffle_insns;  /* gpu.shuffle with Vortex's shuffle instructions */
  unsigned helpers;   /* helpers created so far (unique names) */
  int uses_scratch;   /* a helper reads or writes the scratch area */
} vxl__subgroups;

/* Rewrites op if it is gpu.lane_id, gpu.subgroup_id, gpu.subgroup_size,
 * gpu.num_subgroups, gpu.shuffle, gpu.subgroup_reduce or gpu.all_reduce
 * (inside a converted function) into a call of a helper it adds to
 * sg->mod, and erases op.  Returns 1 when it did, 0 when op is none of
 * those, -EINVAL (diagnostic at op) or -ENOMEM. */
int vxl__lower_subgroup_op(vxl__subgroups *sg, MlirOperation op);

/* Operations collected by a walk (v from malloc(); oom set on failure). */
typedef struct {
  MlirOperation *v;
  size_t n, cap;
  int oom;
} vxl__ops;

/* Collects root and every op nested in it, pre-order, into *out (which the
 * caller frees).  Returns 0 or -ENOMEM. */
int vxl__collect_ops(MlirOperation root, vxl__ops *out);
/* True when op's name is exactly name. */
int vxl__op_is(MlirOperation op, const char *name);
/* The callee symbol of a func.call, or a zero-length ref for other ops.
 * The string is owned by the context and outlives the op. */
MlirStringRef vxl__callee(MlirOperation op);
/* Creates (does not insert) func.call @callee(args) : (...) -> (res). */
MlirOperation vxl__func_call(MlirContext ctx, MlirLocation loc, const char *callee, intptr_t nargs,
                             MlirValue *args, intptr_t nres, MlirType *res);

/* What the MLIR side learned about one kernel (all strings malloc()). */
typedef struct {
  char *name;
  uint32_t nargs;
  char **arg_types;   /* MLIR type text per argument */
  uint32_t *arg_rank; /* per argument: memref rank, else 0 */
  uint32_t *arg_elem; /* per argument: memref element bytes, else 0 */
  uint32_t grid_dims; /* 1..3 */
  uint32_t known_block[3];
  uint32_t shared_bytes;
  MlirLocation loc; /* the gpu.func's, for diagnostics about the kernel */
} vxl__kernel_info;

void vxl__kernel_info_clear(vxl__kernel_info *k);

#define VXL__VIEW_CACHE 64

/* One register width's code generation (vxl__machine). */
typedef struct {
  LLVMTargetMachineRef tm;     /* NULL until a compile asks for this width */
  struct vxl_emitter *emitter; /* tm's code-generation pipeline, built once (vxl_emit.h);
                                  NULL: the C API's, built per module */
} vxl__machine;

/* Per-compiler state the two halves share. */
struct vxl_compiler {
  MlirContext ctx;
  /* the device-ABI helpers (vxl_prelude.h) parsed for each kernel ABI
   * (index: vortex_abi - 2) and register width (index: xlen == 64), each
   * when a compile first asks for it */
  MlirModule prelude[2][2];
  MlirPassManager pm;            /* upstream lowering pipeline (base), parsed once */
  MlirPassManager pm_full;       /* ... with affine/math/ub/strided-memref passes */
  MlirPassManager pm_prep;       /* scf-for-to-while, before the divergence pass */
  MlirPassManager pm_outline;    /* gpu-kernel-outlining, for gpu.launch inputs */
  MlirPassManager pm_host;       /* a program's host side to the LLVM dialect (VXL_PIPELINE_HOST) */
  MlirPassManager pm_async;      /* gpu-async-region: synchronous gpu.alloc/memcpy/... made async */
  MlirPassManager pm_dce;        /* symbol-dce: what a piece's kernels do not use */
  MlirPassManager pm_vector;     /* convert-vector-to-scf: transfers of rank > 1 to loops */
  MlirPassManager pm_host_async; /* VXL_PIPELINE_HOST_ASYNC: a host side that uses the async
                                    dialect, lowered to MLIR's async runtime library */
  vxl__machine machine[2];       /* RV32 and RV64 (index: xlen == 64) */
  int reuse_codegen;             /* machines keep their code-generation pipeline */
  /* No LLVMTargetDataRef here: a DataLayout caches struct layouts by
   * StructType address, and every compile has its own LLVMContext, so a
   * long-lived one hands out stale layouts for types that reuse a freed
   * type's address.  Each compile creates its own (vxl__target_data). */
  vxl__diags *cur_diags; /* where the context's diagnostic handler writes */
  vxl_merge_fn merge;    /* links a module's pieces (vxl_compiler_set_merge) */
  void *merge_ud;
  /* View helpers parsed so far, by memref type text: later compiles clone
   * them (cheaper than printing and parsing MLIR text per argument).  The
   * ops are unowned, in ctx; at most VXL__VIEW_CACHE (further types are
   * parsed each time). */
  char *view_types[VXL__VIEW_CACHE];
  MlirOperation view_ops[VXL__VIEW_CACHE];
  unsigned nviews;
};

/* ---- vxl_util.c: shared MLIR-side helpers (no calls into other files) ---- */

static inline MlirStringRef vxl__str(const char *s) { return mlirStringRefCreateFromCString(s); }
static inline int vxl__streq(MlirStringRef a, const char *b) {
  size_t n = strlen(b);
  return a.length == n && memcmp(a.data, b, n) == 0;
}
static inline MlirStringRef vxl__op_name(MlirOperation op) {
  return mlirIdentifierStr(mlirOperationGetName(op));
}
static inline MlirNamedAttribute vxl__named(MlirContext ctx, const char *name, MlirAttribute a) {
  return mlirNamedAttributeGet(mlirIdentifierGet(ctx, vxl__str(name)), a);
}

/* Appends op to o (sets o->oom when memory runs out). */
void vxl__ops_push(vxl__ops *o, MlirOperation op);
/* Creates func.call @callee(args) before `before` (at the end of blk when
 * before is null) and returns it. */
MlirOperation vxl__call(MlirContext ctx, MlirLocation loc, MlirBlock blk, MlirOperation before,
                        const char *callee, intptr_t nargs, MlirValue *args, intptr_t nres, MlirType *res);
/* Creates "arith.constant V : i32" before `before` and returns its value. */
MlirValue vxl__const_i32(MlirContext ctx, MlirLocation loc, MlirBlock blk, MlirOperation before, int32_t v);
/* Appends "llvm.mlir.global internal constant @name(value : i32)" to body.
 * Returns 0 or -ENOMEM. */
int vxl__add_constant_i32(MlirContext ctx, MlirBlock body, const char *name, uint32_t value);

/* ---- one compile's rewrite state (vxl_memory.c, vxl_gpu.c, vxl_mlir.c) ---- */

/* State of one compile's rewrite. */
typedef struct {
  vxl_compiler *c;
  MlirModule mod;
  vxl__diags *d;
  unsigned views;   /* memref view helpers created so far */
  int needs_full;   /* ops only the full pipeline lowers were seen */
  int needs_vector; /* vector-dialect ops were seen (vxl_vector.h) */
  /* workgroup memory: module-level address-space-3 memref.globals first
   * (static ones at fixed offsets, 1-element uninitialized ones = Polygeist's
   * extern __shared__ at the dynamic base), then each kernel's attributions */
  uint64_t globals_bytes;
  uint64_t dynamic_min_bytes; /* largest element of an extern __shared__ global */
  vxl__subgroups sg;          /* subgroup and workgroup collectives */
  uint32_t xlen;              /* the target's register width: 32 or 64 */
  LLVMContextRef lctx;        /* the compile's (it translates the module too):
                                 element sizes from the data layout */
  LLVMTargetDataRef td;       /* the compile's, for lctx */
  MlirTypeToLLVMIRTranslator tr;
} vxl__rw;

/* ---- vxl_memory.c ---- */

/* Adds (once per memref type) a view helper rebuilding `memref` from a
 * device pointer; its name goes to name (cap bytes).  Returns 0, -EINVAL
 * (a dynamic inner extent: diagnostic at loc) or -ENOMEM. */
int vxl__make_view(vxl__rw *rw, MlirType memref, MlirLocation loc, char *name, size_t cap);
/* Lays out the module-level workgroup globals in local memory and rewrites
 * their uses.  Returns 0, -EINVAL (diagnostic) or -ENOMEM. */
int vxl__place_workgroup_globals(vxl__rw *rw);
/* Replaces the workgroup and private attributions of function fn (entry
 * block arguments past the nin inputs; the first nworkgroup of them are
 * workgroup buffers) with local-memory views and allocas, and removes those
 * arguments.  Workgroup buffers go after the module's workgroup globals;
 * the kernel's static workgroup bytes go to *shared_bytes.  Returns 0,
 * -EINVAL (diagnostic) or -ENOMEM. */
int vxl__lower_attributions(vxl__rw *rw, MlirOperation fn, MlirBlock entry, intptr_t nin, int64_t nworkgroup,
                            uint32_t *shared_bytes);
/* Drops the GPU address spaces from every value type under root. */
void vxl__strip_address_spaces(MlirOperation root);

/* ---- vxl_gpu.c ---- */

/* Refuses, with "unsupported: <op>" at its location, any op under root the
 * lowering does not handle; notes in rw when the full pipeline is needed.
 * Returns 0 or -EINVAL. */
int vxl__check_supported(vxl__rw *rw, MlirOperation root);
/* Rewrites the gpu ops (ids, dimensions, barriers, printf, subgroup ops)
 * of func.func ff, a device function a kernel calls (what cgeist emits
 * for a __device__ function).  Returns 0, -ENOMEM or -EINVAL with a
 * diagnostic. */
int vxl__convert_device_func(vxl__rw *rw, MlirOperation ff);

/* Turns gpu.func gf into a func.func with device-address arguments and its
 * gpu ops into Vortex helper calls; fills k for a kernel (NULL otherwise).
 * Returns 0, -EINVAL (diagnostic) or -ENOMEM. */
int vxl__convert_func(vxl__rw *rw, MlirOperation gf, vxl__kernel_info *k);

/* MLIR side: parses source and lowers every gpu.module to one LLVM-dialect
 * module.  On success returns 0 with *out_module (caller destroys) and the
 * kernels in *kinfo / *nkernels (caller frees).  On a source error returns
 * -EINVAL with diagnostics in d. */
/* The kernel driver's front end (vxl_mlir.c), shared with the host
 * lowering (vxl_host.c): the source as parseable text (Polygeist's DLTI
 * values fixed in place, overlong literals and split-file markers refused;
 * malloc(), NULL with *rc and a diagnostic), its parse under source_name
 * (a null op after diagnostics), and upstream's gpu-kernel-outlining with
 * clashing symbols qualified (0 or a negative errno). */
char *vxl__source_text(const char *source, size_t len, const char *source_name, vxl__diags *d, int *rc);
MlirOperation vxl__parse(MlirContext ctx, const char *text, size_t len, const char *source_name,
                         vxl__diags *d);
int vxl__outline(vxl_compiler *c, MlirOperation top, const char *source_name, vxl__diags *d);

/* vxl_lower_host's work (vxl_host.c): *host_ir (malloc()) and the count
 * of gpu.modules replaced.  Returns 0, -EINVAL (diagnostics) or -ENOMEM. */
int vxl__lower_host(vxl_compiler *c, const char *source, size_t len, const char *source_name,
                    const vxl_options *opts, vxl_module_key_fn key_of, void *key_ud, vxl__diags *d,
                    char **host_ir, uint32_t *nmodules);

/* Stages 1-3, what a kernel compile and a host lowering both start with:
 * source text checked, parsed, sizes checked, gpu.launch bodies outlined,
 * clashing symbols qualified.  Returns 0 with *top (the module op, caller
 * destroys), or -EINVAL (diagnostics in d) / -ENOMEM. */
int vxl__parse_checked(vxl_compiler *c, const char *source, size_t len, const char *source_name,
                       vxl__diags *d, MlirOperation *top);

/* vxl__parse_checked for a kernel compile: also counts the kernels in the
 * gpu.modules (*nkernels) and refuses a module without any.  Returns 0
 * with *top (caller destroys), or -EINVAL (diagnostics in d) / -ENOMEM. */
int vxl__parse_source(vxl_compiler *c, const char *source, size_t len, const char *source_name, vxl__diags *d,
                      MlirOperation *top, uint32_t *nkernels);

/* What stages 4-9 read of top for kernels first .. first + count - 1:
 * the attributes of top and of its gpu.modules, and the module stage 4
 * gathers (every op of
 * the gpu.modules but the other kernels), printed in MLIR's generic form
 * with every location, appended to *out.  Two pieces whose texts here are
 * equal compile (with equal options, file name and kernel numbering) to
 * the same bytes.  Returns 0 or -ENOMEM. */
int vxl__piece_inputs(vxl_compiler *c, MlirOperation top, uint32_t first, uint32_t count, vxl__buf *out);

/* Stages 4-9: kernels first .. first + count - 1 of top (and everything
 * else of its gpu.modules), copied into a new module lowered to the LLVM
 * dialect; top is not changed.  opts are resolved (vxl__resolved: the
 * driver resolves them once), prelude the device-ABI helpers for them
 * (vxl__prelude_of).  Returns 0 with *out_module (caller destroys), *kinfo
 * (malloc(), *nkernels entries, in source order), or -EINVAL (diagnostics
 * in d) / -ENOMEM. */
int vxl__lower_to_llvm_dialect(vxl_compiler *c, MlirOperation top, uint32_t first, uint32_t count,
                               const char *source_name, const vxl_options *opts, MlirModule prelude,
                               LLVMContextRef lctx, LLVMTargetDataRef td, vxl__diags *d,
                               MlirModule *out_module, vxl__kernel_info **kinfo, uint32_t *nkernels);

/* Uniformity analysis and vx_split/vx_join/vx_pred insertion on one
 * func.func (vxl_divergence.c); rewrites divergent scf.index_switch and
 * cf.switch into two-way branches first.  Kernel arguments are uniform; a
 * non-kernel function's are not; block ids are not either when
 * varying_block_ids (Vortex 2.x: upstream's vx_spawn_threads runs a block
 * of one thread on each lane of a warp).  Adds to *splits / *preds what it inserted.
 * Returns 0, -EINVAL when a divergent branch sits in unstructured control
 * flow it cannot wrap (an "unsupported:" diagnostic in d) or -ENOMEM. */
int vxl__insert_divergence(MlirContext ctx, MlirOperation fn, int is_kernel, int varying_block_ids,
                           vxl__diags *d, unsigned *splits, unsigned *preds);

/* The options gpu.module gm is compiled with: opts (resolved, vxl__resolved)
 * with the fields its #vortex.target gives - the first of its targets
 * whose abi and xlen agree with opts', else its first #vortex.target.
 * Fills *out; returns 1 when a #vortex.target decided, else 0. */
int vxl__module_target(MlirOperation gm, const vxl_options *opts, vxl_options *out);

/* A device compile with opts of gpu.module gm: 0 when gm lists no
 * #vortex.target or one that every field of opts agrees with; else
 * -EINVAL with a diagnostic at gm (a module compiled for another target
 * than its own would be a wrong object, silently). */
int vxl__check_module_targets(MlirOperation gm, const vxl_options *opts, vxl__diags *d);

/* The options a compile runs with: opts with each 0 that means "the
 * default" replaced by that default (warp_size, vortex_abi, xlen, and
 * opt_level capped at 3).  vxl_util.c: every file may call it. */
vxl_options vxl__resolved(const vxl_options *opts);

/* The code generation of register width xlen (32 or 64), created on first
 * use.  Returns 0 and *out (owned by c), or -EINVAL (the target machine
 * could not be made) / -ENOMEM. */
int vxl__machine_of(vxl_compiler *c, uint32_t xlen, vxl__machine **out);

/* A data layout of machine m for one LLVMContext's lifetime; caller
 * disposes it before the context (see the note in struct vxl_compiler). */
LLVMTargetDataRef vxl__target_data(const vxl__machine *m);

/* The device-ABI helpers for resolved options o (vxl__resolved), parsed on
 * first use; a null module when they do not parse (a fault of this
 * program, reported on stderr). */
MlirModule vxl__prelude_of(vxl_compiler *c, const vxl_options *o);

/* The source name the device-ABI helpers are parsed under: their
 * functions are told apart by it in LLVM IR, where their line-table debug
 * info is dropped so that a helper inlined into a kernel reports the
 * kernel's line of the op it implements (vxl__strip_prelude_debug). */
#define VXL_PRELUDE_SOURCE "<vortexd device ABI>"

/* LLVM side: computes the argument-buffer layout of a kernel whose LLVM
 * parameter types are params (from the translated function) into k. */
int vxl__layout(LLVMTargetDataRef td, LLVMContextRef lctx, LLVMTypeRef *params, uint32_t n,
                const vxl__kernel_info *ki, vxl_kernel *k);

/* LLVM side: adds each kernel's Vortex entry (a body that unpacks the
 * argument buffer, and kernels[i].entry, which spawns the grid) and, in
 * the piece holding kernel 0, the module's dispatcher over all total
 * kernels (VXL_DISPATCH_SYMBOL), runs the LLVM pipeline once over the
 * piece and emits one object into *obj (malloc(), *obj_size bytes).
 * kernels[i] is kernel first + i of the source.  Layouts must already be
 * filled by vxl__layout().  m stays owned by the caller.  Returns 0,
 * -ENOMEM, or -EINVAL with diags. */
int vxl__emit_object(const vxl__machine *mc, LLVMModuleRef m, vxl_kernel *kernels, uint32_t n, uint32_t first,
                     uint32_t total, const vxl_options *opts, uint8_t **obj, size_t *obj_size, vxl__diags *d);

/* The LLVM struct type of a kernel's whole argument buffer: its parameters
 * in order, then the launch header {[3 x i32], [3 x i32], i32}. */
LLVMTypeRef vxl__buffer_type(LLVMContextRef lctx, LLVMTypeRef *params, uint32_t n);

#endif /* VXL_INTERNAL_H */
