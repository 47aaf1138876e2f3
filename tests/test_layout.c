/* test_layout.c - argument-buffer layout and the lowering itself. */
#define _GNU_SOURCE /* memmem */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/BitReader.h>
#include <llvm-c/BitWriter.h>
#include <llvm-c/Core.h>
#include <llvm-c/Object.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include "lowering/vxl.h"
#include "protocol/vxp.h"
#include "runtime/mgpu/vxr_vxbin.h"
#include "vxt.h"
#include "vxt_lowering.h"

#define POLYGEIST_STYLE VXT_KERNELS_DIR "/polygeist_style.mlir"
#ifdef VXT_CORPUS_DIR
#define CORPUS VXT_CORPUS_DIR "/vortex-hip/"
#endif

static vxl_kernel layout_for(const char *const *types, uint32_t n, uint32_t xlen) {
  vxl_kernel k = {0};
  cr_assert_eq(vxl_layout_from_types(types, n, xlen, &k), 0);
  cr_assert_eq(k.nargs, n);
  return k;
}

static vxl_kernel layout_of(const char *const *types, uint32_t n) { return layout_for(types, n, 32); }

/* ---- five validation cases of the layout on metadata_test's signature ---- */

static const char *const metadata_test_types[] = {"i32", "memref<?xi32>", "f32", "memref<?xi32>"};

Test(seed000, test1_argument_count) {
  vxl_kernel k = layout_of(metadata_test_types, 4);
  cr_assert_eq(k.nargs, 4);
  vxl_kernel_clear(&k);
}

Test(seed000, test2_argument_kinds) {
  vxl_kernel k = layout_of(metadata_test_types, 4);
  cr_assert_eq(k.args[0].kind, VXL_ARG_SCALAR);
  cr_assert_eq(k.args[1].kind, VXL_ARG_POINTER);
  cr_assert_eq(k.args[2].kind, VXL_ARG_SCALAR);
  cr_assert_eq(k.args[3].kind, VXL_ARG_POINTER);
  vxl_kernel_clear(&k);
}

Test(seed000, test3_argument_sizes) {
  vxl_kernel k = layout_of(metadata_test_types, 4);
  for (int i = 0; i < 4; i++)
    cr_assert_eq(k.args[i].size, 4, "arg %d", i);
  vxl_kernel_clear(&k);
}

Test(seed000, test4_offsets) {
  vxl_kernel k = layout_of(metadata_test_types, 4);
  cr_assert_eq(k.args[0].offset, 0);
  cr_assert_eq(k.args[1].offset, 4);
  cr_assert_eq(k.args[2].offset, 8);
  cr_assert_eq(k.args[3].offset, 12);
  vxl_kernel_clear(&k);
}

Test(seed000, test5_total_size) {
  vxl_kernel k = layout_of(metadata_test_types, 4);
  cr_assert_eq(k.args_size, 16);
  /* buffer shape: launch header right after, buffer padded to 8 */
  cr_assert_eq(k.launch_offset, 16);
  cr_assert_eq(k.buffer_size, 48); /* 16 + 28 -> 44 -> 48 */
  vxl_kernel_clear(&k);
}

/* ---- padding cases: RV32 data layout e-m:e-p:32:32-i64:64-n32-S128 ---- */

Test(layout, i8_then_i32_pads_to_4) {
  const char *t[] = {"i8", "i32"};
  vxl_kernel k = layout_of(t, 2);
  cr_assert_eq(k.args[0].offset, 0);
  cr_assert_eq(k.args[1].offset, 4);
  cr_assert_eq(k.args_size, 8);
  vxl_kernel_clear(&k);
}

Test(layout, i64_and_f64_are_8_aligned_on_rv32) {
  const char *t[] = {"i8", "i64", "i16", "f64", "memref<?xi64>", "index"};
  vxl_kernel k = layout_of(t, 6);
  uint32_t off[] = {0, 8, 16, 24, 32, 36}, size[] = {1, 8, 2, 8, 4, 4}, al[] = {1, 8, 2, 8, 4, 4};
  for (int i = 0; i < 6; i++) {
    cr_assert_eq(k.args[i].offset, off[i], "arg %d offset %u", i, k.args[i].offset);
    cr_assert_eq(k.args[i].size, size[i], "arg %d size", i);
    cr_assert_eq(k.args[i].align, al[i], "arg %d align", i);
  }
  cr_assert_eq(k.args_size, 40);
  cr_assert_eq(k.launch_offset, 40);
  cr_assert_eq(k.buffer_size, 72); /* struct alignment 8: 40 + 28 = 68 -> 72 */
  vxl_kernel_clear(&k);
}

Test(layout, trailing_i8_puts_the_header_on_a_4_byte_boundary) {
  const char *t[] = {"!llvm.ptr", "i1", "i8"};
  vxl_kernel k = layout_of(t, 3);
  cr_assert_eq(k.args[0].kind, VXL_ARG_POINTER);
  cr_assert_eq(k.args[1].offset, 4);
  cr_assert_eq(k.args[1].size, 1);
  cr_assert_eq(k.args[2].offset, 5);
  cr_assert_eq(k.args_size, 6);
  cr_assert_eq(k.launch_offset, 8);
  cr_assert_eq(k.buffer_size, 40); /* 8 + 28 = 36 -> 40 */
  vxl_kernel_clear(&k);
}

Test(layout, i16_after_i8_and_i64_after_i32) {
  const char *t[] = {"i8", "i16", "i32", "i64"};
  vxl_kernel k = layout_of(t, 4);
  cr_assert_eq(k.args[1].offset, 2);
  cr_assert_eq(k.args[2].offset, 4);
  cr_assert_eq(k.args[3].offset, 8);
  cr_assert_eq(k.args_size, 16);
  vxl_kernel_clear(&k);
}

Test(layout, no_arguments) {
  vxl_kernel k = layout_of(NULL, 0);
  cr_assert_eq(k.args_size, 0);
  cr_assert_eq(k.launch_offset, 0);
  cr_assert_eq(k.buffer_size, 32);
  vxl_kernel_clear(&k);
}

Test(layout, unplaceable_type_is_refused) {
  const char *t[] = {"tensor<4xf32>"};
  vxl_kernel k = {0};
  cr_assert_neq(vxl_layout_from_types(t, 1, 32, &k), 0);
  cr_assert_null(k.args);
  const char *ok[] = {"i32"};
  cr_assert_eq(vxl_layout_from_types(ok, 1, 48, &k), -EINVAL, "no such register width");
  cr_assert_null(k.args);
}

/* ---- RV64: data layout e-m:e-p:64:64-i64:64-i128:128-n32:64-S128 ---- */

/* Device pointers are 8 bytes and 8-aligned; index stays 32-bit (the
 * lowering's index width on both); the launch header is u32s either way. */
Test(layout, rv64_pointers_are_8_bytes_and_index_stays_4) {
  vxl_kernel k = layout_for(metadata_test_types, 4, 64);
  uint32_t off[] = {0, 8, 16, 24}, size[] = {4, 8, 4, 8};
  for (int i = 0; i < 4; i++) {
    cr_assert_eq(k.args[i].offset, off[i], "arg %d offset %u", i, k.args[i].offset);
    cr_assert_eq(k.args[i].size, size[i], "arg %d size", i);
    cr_assert_eq(k.args[i].align, size[i], "arg %d align", i);
  }
  cr_assert_eq(k.args_size, 32);
  cr_assert_eq(k.launch_offset, 32);
  cr_assert_eq(k.buffer_size, 64); /* 32 + 28 = 60 -> 64 */
  vxl_kernel_clear(&k);
  const char *t[] = {"!llvm.ptr", "i1", "index", "f64"};
  k = layout_for(t, 4, 64);
  uint32_t off2[] = {0, 8, 12, 16}, size2[] = {8, 1, 4, 8};
  for (int i = 0; i < 4; i++) {
    cr_assert_eq(k.args[i].offset, off2[i], "arg %d offset %u", i, k.args[i].offset);
    cr_assert_eq(k.args[i].size, size2[i], "arg %d size", i);
  }
  cr_assert_eq(k.args[0].kind, VXL_ARG_POINTER);
  cr_assert_eq(k.args_size, 24);
  vxl_kernel_clear(&k);
}

/* ---- the lowering ---- */

static vxl_compiler *cc;
static void make_compiler(void) { cr_assert_eq(vxl_compiler_create(&cc), 0); }
static void drop_compiler(void) { vxl_compiler_destroy(cc); }

static vxl_result compile_file(const char *path, bool emit_ir) {
  vxl_options o = {.opt_level = 2, .emit_ir = emit_ir};
  vxl_result r;
  cr_assert_eq(vxt_compile_file(cc, path, &o, &r), 0, "cannot read or compile %s", path);
  return r;
}

static vxl_result compile_text(const char *text) {
  vxl_options o = {.opt_level = 2};
  vxl_result r;
  cr_assert_eq(vxl_compile(cc, text, strlen(text), "t.mlir", &o, &r), 0);
  return r;
}

TestSuite(lowering, .init = make_compiler, .fini = drop_compiler);
#ifdef VXT_CORPUS_DIR
TestSuite(conformance, .init = make_compiler, .fini = drop_compiler);
#endif

Test(lowering, polygeist_style_kernel_layout_and_object) {
  /* cgeist's shape (vector<Kxi32> DLTI, polygeist ops, an alternative that
   * names a missing kernel) with the (i32, ptr, f32, ptr) signature */
  vxl_result r = compile_file(POLYGEIST_STYLE, true);
  cr_assert(r.ok, "%s", r.ndiags ? r.diags[0] : "");
  cr_assert_eq(r.nkernels, 1, "only the first polygeist.alternatives kernel is defined");
  vxl_kernel *k = &r.kernels[0];
  cr_assert_str_eq(k->name, "_Z12launch_scalePiS_if_kernel1");
  cr_assert_eq(k->nargs, 4);
  uint32_t off[] = {0, 4, 8, 12};
  vxl_arg_kind kind[] = {VXL_ARG_SCALAR, VXL_ARG_POINTER, VXL_ARG_SCALAR, VXL_ARG_POINTER};
  for (int i = 0; i < 4; i++) {
    cr_assert_eq(k->args[i].offset, off[i]);
    cr_assert_eq(k->args[i].size, 4);
    cr_assert_eq(k->args[i].kind, kind[i]);
  }
  cr_assert_str_eq(k->args[1].type, "memref<?xi32>");
  cr_assert_eq(k->args_size, 16);
  cr_assert_eq(k->grid_dims, 1, "the kernel reads blockIdx.x only");
  cr_assert_eq(k->known_block[0], 64);
  cr_assert_eq(k->known_block[1], 1);
  const char *why = vxt_elf_check(r.object, r.object_size, k->entry);
  cr_assert_null(why, "%s", why);
  /* the layout rides along in the lowered module */
  cr_assert_not_null(r.lowered_ir);
  cr_assert_not_null(strstr(r.lowered_ir, "vortex.kernel_args"));
  cr_assert_not_null(strstr(r.lowered_ir, "args_size = 16 : i32"));
  cr_assert_not_null(strstr(r.lowered_ir, "kind = \"pointer\", offset = 12 : i32"));
  vxl_result_clear(&r);
}

Test(lowering, thread_model_and_barrier_follow_vx_spawn) {
  vxl_result r = compile_file(VXT_EXAMPLES_DIR "/two_kernels.mlir", true);
  cr_assert(r.ok, "%s", r.ndiags ? r.diags[0] : "");
  cr_assert_eq(r.nkernels, 2);
  const char *ir = r.lowered_ir;
  /* threadIdx/blockIdx are thread-locals, blockDim/gridDim plain globals */
  cr_assert_not_null(strstr(ir, "llvm.mlir.global external thread_local @threadIdx()"));
  cr_assert_not_null(strstr(ir, "llvm.mlir.global external thread_local @blockIdx()"));
  cr_assert_not_null(strstr(ir, "llvm.mlir.global external @blockDim()"));
  cr_assert_null(strstr(ir, "thread_local @blockDim"));
  /* __syncthreads = vx_barrier(__local_group_id, __warps_per_group) */
  cr_assert_not_null(strstr(ir, ".insn r 0x0B, 4, 0, x0, $0, $1"));
  cr_assert_not_null(strstr(ir, "@__local_group_id"));
  cr_assert_not_null(strstr(ir, "@__warps_per_group"));
  for (uint32_t i = 0; i < 2; i++) {
    /* one object, each kernel behind its own entry */
    const char *why = vxt_elf_check(r.object, r.object_size, r.kernels[i].entry);
    cr_assert_null(why, "%s: %s", r.kernels[i].name, why);
    cr_assert_str_neq(r.kernels[i].entry, r.kernels[1 - i].entry);
    /* the kernel functions themselves are inlined into their bodies */
    cr_assert_not(vxt_elf_has_symbol(r.object, r.object_size, r.kernels[i].name, 1));
  }
  cr_assert_not(vxt_elf_has_symbol(r.object, r.object_size, "main", 1), "main is the linker's choice");
  cr_assert(vxt_elf_has_symbol(r.object, r.object_size, "__warps_per_group", 0),
            "the barrier kernel reads __warps_per_group");
  cr_assert_eq(r.kernels[1].known_block[0], 16);
  cr_assert_eq(r.kernels[1].known_block[1], 16);
  vxl_result_clear(&r);
}

#ifdef VXT_CORPUS_DIR
Test(conformance, every_vortex_hip_file_compiles_unmodified) {
  const char *files[] = VXT_VORTEX_HIP_FILES;
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    char path[512];
    snprintf(path, sizeof path, CORPUS "%s.mlir", files[i]);
    vxl_result r = compile_file(path, false);
    cr_assert(r.ok, "%s: %s", files[i], r.ndiags ? r.diags[0] : "");
    cr_assert_eq(r.nkernels, 1, "%s", files[i]);
    cr_assert_null(vxt_elf_check(r.object, r.object_size, r.kernels[0].entry), "%s", files[i]);
    vxl_result_clear(&r);
  }
}
#endif

Test(lowering, invalid_mlir_reports_file_line_col) {
  vxl_result r = compile_text("module {\n  gpu.module @m {\n    gpu.func @k() kernel {\n"
                              "      %x = arith.addi %y, %y : i32\n      gpu.return\n    }\n  }\n}\n");
  cr_assert_not(r.ok);
  cr_assert_eq(r.nkernels, 0);
  cr_assert_geq(r.ndiags, 1);
  cr_assert_not_null(strstr(r.diags[0], "t.mlir:4:"), "%s", r.diags[0]);
  cr_assert_not_null(strstr(r.diags[0], "error"), "%s", r.diags[0]);
  vxl_result_clear(&r);
}

/* A dialect the compiler does not register (it registers only what its
 * pipelines lower) is refused where it is used: an op in the generic form
 * as unsupported, one in its custom form as MLIR's parser reports it;
 * both at the op's file:line:col. */
Test(lowering, ops_of_dialects_not_registered_are_refused_at_their_place) {
  vxl_result r =
      compile_text("module {\n  gpu.module @m {\n    gpu.func @k(%a: i32) kernel {\n"
                   "      %x = \"tosa.const_shape\"() : () -> i32\n      gpu.return\n    }\n  }\n}\n");
  cr_assert_not(r.ok);
  cr_assert_geq(r.ndiags, 1);
  cr_assert_not_null(strstr(r.diags[0], "t.mlir:4:12: error: unsupported: tosa.const_shape"), "%s",
                     r.diags[0]);
  vxl_result_clear(&r);
  r = compile_text("module {\n  gpu.module @m {\n    gpu.func @k(%a: i32) kernel {\n"
                   "      %x = emitc.add %a, %a : (i32, i32) -> i32\n      gpu.return\n    }\n  }\n}\n");
  cr_assert_not(r.ok);
  cr_assert_geq(r.ndiags, 1);
  cr_assert_not_null(
      strstr(r.diags[0], "t.mlir:4:12: error: Dialect `emitc' not found for custom op 'emitc.add'"), "%s",
      r.diags[0]);
  vxl_result_clear(&r);
}

/* A kernel storing `value` (written out as given) to o[0], with %name as
 * the SSA name of the constant. */
static char *literal_kernel(const char *name, const char *value) {
  char *t = NULL;
  cr_assert_geq(asprintf(&t,
                         "module {\n  gpu.module @m {\n    gpu.func @k(%%o: memref<?xi32>) kernel {\n"
                         "      %%z = arith.constant 0 : index\n"
                         "      %%%s = arith.constant %s : i32 // \"%s\" 1%s\n"
                         "      memref.store %%%s, %%o[%%z] : memref<?xi32>\n"
                         "      gpu.return\n    }\n  }\n}\n",
                         name, value, value, value, name),
                0);
  return t;
}

Test(lowering, overlong_numeric_literals_are_refused_before_parsing) {
  /* MLIR's parser needs seconds for a literal of thousands of digits */
  char *digits = malloc(20001);
  memset(digits, '7', 20000);
  digits[20000] = '\0';
  char *t = literal_kernel("c", digits);
  vxl_result r = compile_text(t);
  cr_assert_not(r.ok);
  cr_assert_str_eq(r.diags[0],
                   "t.mlir:5:27: error: unsupported: numeric literal of 20000 characters (at most 400)");
  vxl_result_clear(&r);
  free(t);
  /* the same digits as an SSA name, inside a string or a comment are fine */
  digits[0] = 'c';
  t = literal_kernel(digits, "5");
  r = compile_text(t);
  cr_assert(r.ok, "%s", r.ndiags ? r.diags[0] : "");
  vxl_result_clear(&r);
  free(t);
  /* up to the limit MLIR itself judges it */
  digits[0] = '7';
  digits[400] = '\0';
  t = literal_kernel("c", digits);
  r = compile_text(t);
  cr_assert_not(r.ok);
  cr_assert_not_null(strstr(r.diags[0], "out of range"), "%s", r.diags[0]);
  vxl_result_clear(&r);
  free(t);
  free(digits);
}

Test(lowering, symbol_names_with_nul_or_invalid_utf8_are_refused_at_their_location) {
  const char *names[] = {"a\\00b", "bad\\FFname", "\\C0\\AF"};
  const char *why[] = {"contains a NUL byte", "not valid UTF-8", "not valid UTF-8"};
  for (int i = 0; i < 3; i++) {
    char t[512];
    snprintf(t, sizeof t,
             "module {\n  gpu.module @m {\n    gpu.func @\"%s\"(%%o: memref<?xi32>) kernel {\n"
             "      gpu.return\n    }\n  }\n}\n",
             names[i]);
    vxl_result r = compile_text(t);
    cr_assert_not(r.ok, "%s", names[i]);
    cr_assert_geq(r.ndiags, 1);
    cr_assert_not_null(strstr(r.diags[0], "t.mlir:3:5: error: unsupported: gpu.func symbol name"), "%s",
                       r.diags[0]);
    cr_assert_not_null(strstr(r.diags[0], why[i]), "%s", r.diags[0]);
    vxl_result_clear(&r);
  }
  /* names in other scripts are fine */
  vxl_result r = compile_text("module {\n  gpu.module @m {\n    gpu.func @\"\xC3\xA9t\xC3\xA9\"(%o: "
                              "memref<?xi32>) kernel {\n      gpu.return\n    }\n  }\n}\n");
  cr_assert(r.ok, "%s", r.ndiags ? r.diags[0] : "");
  vxl_result_clear(&r);
}

Test(lowering, nesting_past_the_limit_is_refused_before_parsing) {
  /* 4 000 nested scf.if overflowed the parser's stack; 60 are fine */
  int depths[] = {4000, 60};
  for (int k = 0; k < 2; k++) {
    int n = depths[k];
    char *t = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&t, &len);
    fputs("module {\n  gpu.module @m {\n    gpu.func @k(%o: memref<?xi32>, %c: i1) kernel {\n", f);
    for (int i = 0; i < n; i++)
      fputs("scf.if %c {\n", f);
    fputs("%z = arith.constant 0 : index\n%v = arith.constant 1 : i32\nmemref.store %v, %o[%z] : "
          "memref<?xi32>\n",
          f);
    for (int i = 0; i < n; i++)
      fputs("}\n", f);
    fputs("      gpu.return\n    }\n  }\n}\n", f);
    fclose(f);
    vxl_result r = compile_text(t);
    if (n > 256) {
      cr_assert_not(r.ok);
      /* the 257th open bracket, counting the module's, the gpu.module's and the
       * function's (and the signature's parentheses are closed) */
      cr_assert_str_eq(r.diags[0], "t.mlir:257:11: error: unsupported: nesting deeper than 256 levels of "
                                   "regions, parentheses, brackets or type parameters");
    } else
      cr_assert(r.ok, "%s", r.ndiags ? r.diags[0] : "");
    vxl_result_clear(&r);
    free(t);
  }
}

Test(lowering, memref_arguments_carry_rank_and_element_size_for_the_host) {
  vxl_result r = compile_text("module {\n  gpu.module @m {\n    gpu.func @k(%a: memref<?x8xf32>, %n: index, "
                              "%b: memref<4x4x2xi16>, %c: memref<3xf64>, %p: !llvm.ptr) kernel {\n"
                              "      gpu.return\n    }\n  }\n}\n");
  cr_assert(r.ok, "%s", r.ndiags ? r.diags[0] : "");
  const vxl_arg *a = r.kernels[0].args;
  uint32_t rank[] = {2, 0, 3, 1, 0}, elem[] = {4, 0, 2, 8, 0};
  for (int i = 0; i < 5; i++) {
    cr_assert_eq(a[i].rank, rank[i], "argument %d", i);
    cr_assert_eq(a[i].elem_size, elem[i], "argument %d", i);
  }
  vxl_result_clear(&r);
}

Test(lowering, llvm_code_generation_errors_are_diagnostics_not_an_exit) {
  /* LLVM's default for a context error is to print it and exit(1): this
   * test process would end here */
  vxl_result r = compile_text("module {\n  gpu.module @m {\n    gpu.func @k(%o: memref<?xi32>) kernel {\n"
                              "      %c = arith.constant 1 : i32\n"
                              "      %0 = llvm.inline_asm \"addi $0, $1, 1\", \"=x,r\" %c : (i32) -> i32\n"
                              "      %z = arith.constant 0 : index\n"
                              "      memref.store %0, %o[%z] : memref<?xi32>\n"
                              "      gpu.return\n    }\n  }\n}\n");
  cr_assert_not(r.ok);
  cr_assert_null(r.object);
  cr_assert_str_eq(r.diags[0],
                   "t.mlir: error: code generation: couldn't allocate output register for constraint 'x'");
  vxl_result_clear(&r);
}

Test(lowering, memory_the_target_cannot_hold_is_refused_at_its_op) {
  const char *cases[][2] = {
      {"    gpu.func @k(%o: memref<?xf32>) private(%p: memref<1073741824xf32, #gpu.address_space<private>>) "
       "kernel {\n      gpu.return\n    }\n",
       "t.mlir:3:5: error: unsupported: private attribution of 4294967296 bytes (at most 16384"},
      {"    gpu.func @k(%o: memref<?xf32>) kernel {\n      %a = memref.alloca() : memref<5000xf32>\n"
       "      gpu.return\n    }\n",
       "t.mlir:4:12: error: unsupported: private memory (memref.alloca) of 20000 bytes (at most 16384"},
      {"    memref.global \"private\" constant @g : memref<268435456xf32> = dense<0.0>\n"
       "    gpu.func @k(%o: memref<?xf32>) kernel {\n      gpu.return\n    }\n",
       "t.mlir:3:5: error: unsupported: memref.global of 1073741824 bytes (at most 67108864"},
  };
  for (int i = 0; i < 3; i++) {
    char t[1024];
    snprintf(t, sizeof t, "module {\n  gpu.module @m {\n%s  }\n}\n", cases[i][0]);
    vxl_result r = compile_text(t);
    cr_assert_not(r.ok, "case %d", i);
    cr_assert_geq(r.ndiags, 1);
    cr_assert_not_null(strstr(r.diags[0], cases[i][1]), "case %d: %s", i, r.diags[0]);
    vxl_result_clear(&r);
  }
}

Test(lowering, many_sequential_divergent_cf_branches_each_get_split_and_join) {
  /* the placement keeps one CFG current across the branches of a region;
   * every branch must still get its own split and join */
  enum { N = 300 };
  char *t = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&t, &len);
  fputs("module {\n  gpu.module @m {\n    gpu.func @k(%o: memref<?xi32>) kernel {\n"
        "      %tid = gpu.thread_id x\n      %t = arith.index_cast %tid : index to i32\n"
        "      %z = arith.constant 0 : index\n      cf.br ^b0\n",
        f);
  for (int i = 0; i < N; i++)
    fprintf(
        f,
        "    ^b%d:\n      %%c%d = arith.constant %d : i32\n      %%p%d = arith.cmpi sgt, %%t, %%c%d : i32\n"
        "      cf.cond_br %%p%d, ^t%d, ^b%d\n    ^t%d:\n      memref.store %%c%d, %%o[%%z] : memref<?xi32>\n"
        "      cf.br ^b%d\n",
        i, i, i, i, i, i, i, i + 1, i, i, i + 1);
  fprintf(f, "    ^b%d:\n      gpu.return\n    }\n  }\n}\n", N);
  fclose(f);
  vxl_result r = compile_text(t);
  free(t);
  cr_assert(r.ok, "%s", r.ndiags ? r.diags[0] : "");
  const char *body = vxt_kernel_body(r.kernels[0].entry);
  cr_assert_eq(vxt_elf_count_insn(r.object, r.object_size, body, 0x0B, 2, 0), N, "splits");
  cr_assert_eq(vxt_elf_count_insn(r.object, r.object_size, body, 0x0B, 3, 0), N, "joins");
  vxl_result_clear(&r);
}

/* Fingerprint of o, asserting it fits. */
static void fingerprint(const vxl_options *o, char *buf, size_t cap) {
  int n = vxl_fingerprint(o, buf, cap);
  cr_assert_gt(n, 0);
  cr_assert_eq(strlen(buf), (size_t)n);
}

Test(lowering, every_keyed_option_changes_the_fingerprint_and_no_other) {
  /* walks the same list vxl_options is generated from: an option added to
   * it is checked here without touching this test */
  vxl_options base = {.opt_level = 2, .warp_size = 8};
  char a[2048], b[2048];
  fingerprint(&base, a, sizeof a);
#define CHECK_OPTION(type, name, keyed)                                                                      \
  {                                                                                                          \
    vxl_options o = base;                                                                                    \
    o.name = (type)(o.name ? 0 : 1);                                                                         \
    fingerprint(&o, b, sizeof b);                                                                            \
    if (keyed)                                                                                               \
      cr_assert_str_neq(a, b, "option " #name " changes the output but not the fingerprint");                \
    else                                                                                                     \
      cr_assert_str_eq(a, b, "option " #name " does not change the output, so not the key");                 \
  }
  VXL_OPTIONS(CHECK_OPTION)
#undef CHECK_OPTION
  /* and an option left out of the key really leaves the output alone: the
   * same object and layout with it flipped */
  vxl_result r0, r1;
  cr_assert_eq(vxt_compile_file(cc, VXT_KERNELS_DIR "/subgroups.mlir", &base, &r0), 0);
  cr_assert(r0.ok);
#define CHECK_UNKEYED(type, name, keyed)                                                                     \
  if (!keyed) {                                                                                              \
    vxl_options o = base;                                                                                    \
    o.name = (type)(o.name ? 0 : 1);                                                                         \
    cr_assert_eq(vxt_compile_file(cc, VXT_KERNELS_DIR "/subgroups.mlir", &o, &r1), 0);                       \
    cr_assert(r1.ok);                                                                                        \
    cr_assert_eq(r1.object_size, r0.object_size, #name " changed the object");                               \
    cr_assert_eq(memcmp(r1.object, r0.object, r0.object_size), 0, #name " changed the object");              \
    for (uint32_t i = 0; i < r0.nkernels; i++)                                                               \
      cr_assert_eq(r1.kernels[i].buffer_size, r0.kernels[i].buffer_size, #name " changed a layout");         \
    vxl_result_clear(&r1);                                                                                   \
  }
  VXL_OPTIONS(CHECK_UNKEYED)
#undef CHECK_UNKEYED
  vxl_result_clear(&r0);
  /* defaults are applied first: the same compile has one fingerprint */
  vxl_options d0 = {.opt_level = 2, .warp_size = 0},
              d4 = {.opt_level = 2, .warp_size = VXL_DEFAULT_WARP_SIZE};
  fingerprint(&d0, a, sizeof a);
  fingerprint(&d4, b, sizeof b);
  cr_assert_str_eq(a, b);
  cr_assert_not_null(strstr(a, "lowering-abi="), "%s", a);
  cr_assert_not_null(strstr(a, vxl_toolchain_fingerprint()), "%s", a);
  cr_assert_eq(vxl_fingerprint(&d0, a, 16), -ENOSPC);
}

Test(lowering, unsupported_op_is_named_with_its_location) {
  vxl_result r = compile_text("module {\n  gpu.module @m {\n    gpu.func @k(%a: f32) kernel {\n"
                              "      %s = gpu.shuffle xor %a, %c, %w : f32\n"
                              "      gpu.return\n    }\n  }\n}\n");
  cr_assert_not(r.ok);
  /* the module is invalid (undefined %c), so either diagnostic names a line */
  cr_assert_not_null(strstr(r.diags[0], "t.mlir:4:"), "%s", r.diags[0]);
  vxl_result_clear(&r);

  r = compile_text("module {\n  gpu.module @m {\n    gpu.func @k(%a: f32) kernel {\n"
                   "      %l = gpu.cluster_id x\n      gpu.return\n    }\n  }\n}\n");
  cr_assert_not(r.ok);
  cr_assert_str_eq(r.diags[0], "t.mlir:4:12: error: unsupported: gpu.cluster_id");
  vxl_result_clear(&r);
}

/* Fixed-size vectors in a kernel compile (scalarized); a scalable one has
 * no size to scalarize to and is refused at its op, not by a fatal error
 * of LLVM's code generation. */
Test(lowering, vectors_compile_and_scalable_vectors_are_refused_at_the_op) {
  vxl_result r = compile_text("module {\n  gpu.module @m {\n    gpu.func @k(%a: memref<?xf32>) kernel {\n"
                              "      %c0 = arith.constant 0 : index\n"
                              "      %v = vector.load %a[%c0] : memref<?xf32>, vector<8xf32>\n"
                              "      %s = vector.reduction <mul>, %v : vector<8xf32> into f32\n"
                              "      memref.store %s, %a[%c0] : memref<?xf32>\n"
                              "      gpu.return\n    }\n  }\n}\n");
  cr_assert(r.ok, "%s", r.ndiags ? r.diags[0] : "");
  vxl_result_clear(&r);
  r = compile_text("module {\n  gpu.module @m {\n    gpu.func @k(%a: memref<?xf32>) kernel {\n"
                   "      %c0 = arith.constant 0 : index\n"
                   "      %v = vector.load %a[%c0] : memref<?xf32>, vector<[4]xf32>\n"
                   "      gpu.return\n    }\n  }\n}\n");
  cr_assert_not(r.ok);
  cr_assert_str_eq(r.diags[0],
                   "t.mlir:5:12: error: unsupported: vector.load of scalable vector type "
                   "vector<[4]xf32> (Vortex has no vector unit; a fixed-size vector is scalarized)");
  vxl_result_clear(&r);
}

/* A constant gpu.shuffle width above the warp is refused at the op,
 * naming the option that sets the warp; at or below it, or at a wider
 * warp, it compiles. */
Test(lowering, a_constant_shuffle_width_above_the_warp_is_refused_at_the_op) {
  static const char text[] = "module {\n  gpu.module @m {\n    gpu.func @k(%a: i32) kernel {\n"
                             "      %c = arith.constant 1 : i32\n      %w = arith.constant 8 : i32\n"
                             "      %s, %ok = gpu.shuffle xor %a, %c, %w : i32\n"
                             "      gpu.return\n    }\n  }\n}\n";
  vxl_result r = compile_text(text); /* the default warp: 4 threads */
  cr_assert_not(r.ok);
  cr_assert_eq(r.ndiags, 1);
  cr_assert_str_eq(r.diags[0],
                   "t.mlir:6:17: error: gpu.shuffle width 8 is larger than the warp (4 threads): its "
                   "lanes past the warp do not exist (a device with more threads per warp: `vxc "
                   "compile --warp-size N`, a compile request's warp_size)");
  vxl_result_clear(&r);
  vxl_options o = {.opt_level = 2, .warp_size = 8};
  cr_assert_eq(vxl_compile(cc, text, sizeof text - 1, "t.mlir", &o, &r), 0);
  cr_assert(r.ok, "%s", r.ndiags ? r.diags[0] : "");
  vxl_result_clear(&r);

  /* gpu.rotate's width is always a constant: the same rule, at the op */
  static const char rot[] = "module {\n  gpu.module @m {\n    gpu.func @k(%a: i32) kernel {\n"
                            "      %s, %ok = gpu.rotate %a, 1, 8 : i32\n"
                            "      gpu.return\n    }\n  }\n}\n";
  r = compile_text(rot);
  cr_assert_not(r.ok);
  cr_assert_eq(r.ndiags, 1);
  cr_assert_not_null(strstr(r.diags[0],
                            "t.mlir:4:17: error: gpu.rotate width 8 (offset 1) is larger than the "
                            "warp (4 threads)"),
                     "%s", r.diags[0]);
  vxl_result_clear(&r);
  cr_assert_eq(vxl_compile(cc, rot, sizeof rot - 1, "t.mlir", &o, &r), 0);
  cr_assert(r.ok, "%s", r.ndiags ? r.diags[0] : "");
  vxl_result_clear(&r);
}

/* A gpu.func with n arguments of type ty: malloc()ed module text. */
static char *wide_kernel(unsigned n, const char *ty) {
  size_t cap = 256 + (size_t)n * (strlen(ty) + 16);
  char *t = malloc(cap);
  size_t len = (size_t)snprintf(t, cap, "module {\n  gpu.module @m {\n    gpu.func @k(");
  for (unsigned i = 0; i < n; i++)
    len += (size_t)snprintf(t + len, cap - len, "%s%%a%u: %s", i ? ", " : "", i, ty);
  snprintf(t + len, cap - len, ") kernel {\n      gpu.return\n    }\n  }\n}\n");
  return t;
}

/* A kernel whose record no client would accept is refused where it is
 * written, not by the daemon's check of the worker's reply. */
Test(lowering, a_kernel_past_the_interface_bounds_is_refused_at_its_location) {
  char *t = wide_kernel(5000, "i32");
  vxl_result r = compile_text(t);
  cr_assert_not(r.ok);
  cr_assert_str_eq(r.diags[0], "t.mlir:3:5: error: unsupported: kernel @k has 5000 arguments (at most 4096)");
  vxl_result_clear(&r);
  free(t);
  t = wide_kernel(VXL_MAX_KERNEL_ARGS, "i32");
  r = compile_text(t);
  cr_assert(r.ok, "exactly at the bound: %s", r.ndiags ? r.diags[0] : "");
  vxl_result_clear(&r);
  free(t);
  /* a scalar wider than 64 bits: no host value a launch copies holds it
   * (the host passes each scalar by address); refused at the argument */
  const char *wide[] = {"i65", "i128", "i1024", "i16384"};
  for (int i = 0; i < 4; i++) {
    t = wide_kernel(3, wide[i]);
    r = compile_text(t);
    cr_assert_not(r.ok, "%s", wide[i]);
    char want[200];
    snprintf(
        want, sizeof want,
        "t.mlir:3:17: error: unsupported: kernel @k argument 0 of type %s: a scalar argument has at most 64 "
        "bits",
        wide[i]);
    cr_assert_str_eq(r.diags[0], want);
    vxl_result_clear(&r);
    free(t);
  }
  const char *fine[] = {"i64", "i17", "i1"};
  for (int i = 0; i < 3; i++) {
    t = wide_kernel(3, fine[i]);
    r = compile_text(t);
    cr_assert(r.ok, "%s: %s", fine[i], r.ndiags ? r.diags[0] : "");
    vxl_result_clear(&r);
    free(t);
  }
}

Test(lowering, module_without_kernels_is_an_error) {
  vxl_result r = compile_text("module {\n  func.func @host() {\n    return\n  }\n}\n");
  cr_assert_not(r.ok);
  cr_assert_not_null(strstr(r.diags[0], "no kernels"), "%s", r.diags[0]);
  vxl_result_clear(&r);
}

Test(lowering, one_compiler_gives_identical_objects_across_compiles) {
  /* no state carries over from one compile to the next */
  vxl_result a = compile_file(POLYGEIST_STYLE, false);
  vxl_result bad = compile_text("not mlir at all");
  cr_assert_not(bad.ok);
  vxl_result b = compile_file(POLYGEIST_STYLE, false);
  cr_assert(a.ok && b.ok);
  cr_assert_eq(a.object_size, b.object_size);
  cr_assert_eq(memcmp(a.object, b.object, a.object_size), 0);
  vxl_compiler *other = NULL;
  cr_assert_eq(vxl_compiler_create(&other), 0);
  vxl_options o = {.opt_level = 2};
  vxl_result c;
  cr_assert_eq(vxt_compile_file(other, POLYGEIST_STYLE, &o, &c), 0);
  cr_assert_eq(c.object_size, a.object_size);
  cr_assert_eq(memcmp(a.object, c.object, a.object_size), 0, "a second compiler produces the same bytes");
  vxl_result_clear(&a);
  vxl_result_clear(&b);
  vxl_result_clear(&bad);
  vxl_result_clear(&c);
  vxl_compiler_destroy(other);
}

Test(lowering, workgroup_memory_is_vortex_local_memory) {
  vxl_result r = compile_file(VXT_KERNELS_DIR "/sgemm_tiled.mlir", true);
  cr_assert(r.ok, "%s", r.ndiags ? r.diags[0] : "");
  cr_assert_eq(r.kernels[0].shared_bytes, 512);
  /* __local_mem: csr_read(VX_CSR_LOCAL_MEM_BASE) + __local_group_id * size */
  cr_assert_not_null(strstr(r.lowered_ir, "csrr $0, 0xFC3"));
  cr_assert_not_null(strstr(r.lowered_ir, "@__vxl_group_bytes"));
  cr_assert_null(strstr(r.lowered_ir, "address_space"), "no workgroup address space survives");
  cr_assert_null(vxt_elf_check(r.object, r.object_size, r.kernels[0].entry));
  vxl_result_clear(&r);
  r = compile_file(VXT_KERNELS_DIR "/dynamic_shared.mlir", false);
  cr_assert(r.ok);
  cr_assert_eq(r.kernels[0].shared_bytes, 16, "the extern-shared global is dynamic, not static");
  vxl_result_clear(&r);
}

Test(lowering, layouts_stay_right_across_many_compiles_on_one_compiler) {
  /* Regression: one LLVM data layout kept across compiles cached struct
   * layouts by StructType address; a later compile's type at a reused
   * address got a stale layout (garbage launch_offset, intermittently). */
  const char *files[] = {VXT_KERNELS_DIR "/sgemm_naive.mlir", POLYGEIST_STYLE,
                         VXT_EXAMPLES_DIR "/mixed_args.mlir", VXT_KERNELS_DIR "/wide_types.mlir"};
  uint32_t want_launch[4], want_size[4];
  for (int round = 0; round < 25; round++)
    for (int f = 0; f < 4; f++) {
      vxl_result r = compile_file(files[f], false);
      cr_assert(r.ok);
      if (round == 0) {
        want_launch[f] = r.kernels[0].launch_offset;
        want_size[f] = r.kernels[0].buffer_size;
        cr_assert_leq(want_launch[f] + VXP_LAUNCH_HEADER_SIZE, want_size[f]);
      }
      cr_assert_eq(r.kernels[0].launch_offset, want_launch[f], "round %d %s", round, files[f]);
      cr_assert_eq(r.kernels[0].buffer_size, want_size[f], "round %d %s", round, files[f]);
      vxl_result_clear(&r);
    }
}

/* Asserts how many split, join and pred calls lowered IR holds. */
static void expect_divergence(const char *ir, int splits, int joins, int preds, const char *what) {
  const char *call[3] = {"llvm.call @__vxl_split(", "llvm.call @__vxl_join(", "llvm.call @__vxl_pred("};
  const int want[3] = {splits, joins, preds};
  for (int i = 0; i < 3; i++) {
    int n = 0;
    for (const char *p = ir; (p = strstr(p, call[i])); p++)
      n++;
    cr_assert_eq(n, want[i], "%s: %d x %s, want %d", what, n, call[i], want[i]);
  }
}

/* The text of the function `name` in lowered IR (up to the next llvm.func),
 * from malloc(). */
static char *function_text(const char *ir, const char *name) {
  char head[128];
  snprintf(head, sizeof head, "llvm.func @%s(", name);
  const char *p = strstr(ir, head);
  cr_assert_not_null(p, "no function %s", name);
  const char *e = strstr(p + 1, "llvm.func @");
  return strndup(p, e ? (size_t)(e - p) : strlen(p));
}

Test(lowering, divergence_split_join_and_pred_placement) {
  vxl_result r;
  /* control_flow: a while loop and two for loops whose trip counts depend on
   * the thread (3 preds); the bounds guard and an if (2 splits), an
   * index_switch with 2 cases (a chain of 2 ifs) and a cf.switch with 2
   * cases (a chain of 2 cond_br) */
  r = compile_file(VXT_KERNELS_DIR "/control_flow.mlir", true);
  cr_assert(r.ok);
  expect_divergence(r.lowered_ir, 6, 6, 3, "control_flow");
  cr_assert_not_null(strstr(r.lowered_ir, "csrr $0, 0xCC4"), "the mask vx_pred restores");
  cr_assert_not_null(strstr(r.lowered_ir, ".insn r 0x0B, 2, 0, $0, $1, x0"), "vx_split encoding");
  cr_assert_not_null(strstr(r.lowered_ir, ".insn r 0x0B, 3, 0, x0, $0, x0"), "vx_join encoding");
  vxl_result_clear(&r);
  /* uniform branches stay plain: a kernel that branches on an argument */
  vxl_options o = {.opt_level = 2, .emit_ir = true};
  const char *arg =
      "module {\n  gpu.module @m {\n    gpu.func @k(%a: i32, %o: memref<?xi32>) kernel {\n"
      "      %c0 = arith.constant 0 : i32\n      %z = arith.constant 0 : index\n"
      "      %p = arith.cmpi sgt, %a, %c0 : i32\n      scf.if %p {\n"
      "        memref.store %a, %o[%z] : memref<?xi32>\n      }\n      gpu.return\n    }\n  }\n}\n";
  cr_assert_eq(vxl_compile(cc, arg, strlen(arg), "u.mlir", &o, &r), 0);
  cr_assert(r.ok);
  cr_assert_null(strstr(r.lowered_ir, "llvm.call @__vxl_split("), "kernel arguments are uniform");
  vxl_result_clear(&r);
  const char *src =
      "module {\n  gpu.module @m {\n    gpu.func @k(%a: i32, %o: memref<?xi32>) kernel {\n"
      "      %c0 = arith.constant 0 : i32\n      %z = arith.constant 0 : index\n"
      "      %b = gpu.block_id x\n      %bi = arith.index_cast %b : index to i32\n"
      "      %p = arith.cmpi sgt, %bi, %a : i32\n      scf.if %p {\n"
      "        memref.store %a, %o[%z] : memref<?xi32>\n      }\n      gpu.return\n    }\n  }\n}\n";
  cr_assert_eq(vxl_compile(cc, src, strlen(src), "u.mlir", &o, &r), 0);
  cr_assert(r.ok);
  /* a branch on the block id: split on Vortex 2.x, where upstream's
   * vx_spawn_threads runs blocks of one thread one per lane; plain on 3.0,
   * whose scheduler gives a block whole warps */
  cr_assert_not_null(strstr(r.lowered_ir, "llvm.call @__vxl_split("), "block ids vary within a 2.x warp");
  vxl_result_clear(&r);
  o.vortex_abi = 3;
  cr_assert_eq(vxl_compile(cc, src, strlen(src), "u.mlir", &o, &r), 0);
  cr_assert(r.ok);
  cr_assert_null(strstr(r.lowered_ir, "llvm.call @__vxl_split("), "block ids are uniform in a 3.0 warp");
  vxl_result_clear(&r);
}

/* vx_split / vx_join / vx_pred instructions (custom-0, funct3 2/3/5) in the
 * object of `kernel` compiled for hardware from path. */
static void count_divergence_insns(const char *path, const char *kernel, unsigned n[3]) {
  vxl_result r = compile_file(path, false);
  cr_assert(r.ok);
  const vxl_kernel *k = NULL;
  for (uint32_t i = 0; i < r.nkernels; i++)
    if (strcmp(r.kernels[i].name, kernel) == 0) k = &r.kernels[i];
  cr_assert_not_null(k, "%s", kernel);
  const uint32_t funct3[3] = {2, 3, 5};
  for (int i = 0; i < 3; i++)
    n[i] = vxt_elf_count_insn(r.object, r.object_size, vxt_kernel_body(k->entry), 0x0B, funct3[i], 0);
  vxl_result_clear(&r);
}

#ifdef VXT_CORPUS_DIR
Test(conformance, divergence_placement_in_sort_and_dogfood) {
  /* sort: the bounds guard and two data-dependent ifs diverge; its loop
   * bound is a kernel argument, so the loop stays plain */
  vxl_result r = compile_file(CORPUS "sort_kernel.mlir", true);
  cr_assert(r.ok);
  expect_divergence(r.lowered_ir, 3, 3, 0, "sort");
  vxl_result_clear(&r);
  /* dogfood: the bounds guard and the divergent divide-by-zero test split;
   * the cf.switch on the operation code (a kernel argument) stays one
   * plain switch */
  r = compile_file(CORPUS "dogfood_kernel.mlir", true);
  cr_assert(r.ok);
  expect_divergence(r.lowered_ir, 2, 2, 0, "dogfood");
  cr_assert_not_null(strstr(r.lowered_ir, "llvm.switch %arg5"), "the uniform switch is not split up");
  vxl_result_clear(&r);
  unsigned n[3];
  count_divergence_insns(CORPUS "sort_kernel.mlir", "_Z11launch_sortPiS_jii_kernel94661403600672", n);
  cr_assert_eq(n[2], 0);
  cr_assert_geq(n[0], 1);
}
#endif

Test(lowering, divergence_survives_llvm_o2) {
  /* Threads vx_pred masks off resume where the last vx_pred restores the
   * mask, so LLVM must not copy a loop's vx_pred (loop rotation, unrolling):
   * the object has exactly one per divergent loop.  Every split keeps a join. */
  unsigned n[3];
  count_divergence_insns(VXT_KERNELS_DIR "/unstructured.mlir", "unstructured", n);
  cr_assert_eq(n[2], 1, "vx_pred in the object: %u", n[2]);
  cr_assert_geq(n[1], 1);
  count_divergence_insns(VXT_KERNELS_DIR "/control_flow.mlir", "control", n);
  cr_assert_eq(n[2], 3, "vx_pred in the object: %u", n[2]);
  cr_assert_geq(n[0], 1);
  cr_assert_geq(n[1], n[0], "splits %u joins %u", n[0], n[1]);
}

Test(lowering, divergence_in_unstructured_control_flow) {
  /* cf branches on thread ids (tests/kernels/unstructured.mlir): the early
   * return and the if-then get split/join, the cf loop exit gets vx_pred with
   * a mask read once before the loop, the branch on %n stays plain */
  vxl_result r = compile_file(VXT_KERNELS_DIR "/unstructured.mlir", true);
  cr_assert(r.ok, "%s", r.ndiags ? r.diags[0] : "");
  char *fn = function_text(r.lowered_ir, "unstructured");
  expect_divergence(fn, 2, 2, 1, "unstructured");
  /* the split comes right before its branch, on the same condition */
  const char *sp = strstr(fn, "llvm.call @__vxl_split(");
  char cond[32] = "", br[64];
  cr_assert_eq(sscanf(sp, "llvm.call @__vxl_split(%31[^)])", cond), 1);
  snprintf(br, sizeof br, "llvm.cond_br %s,", cond);
  const char *nl = strchr(sp, '\n');
  cr_assert_not_null(nl);
  cr_assert_eq(strncmp(nl + 1 + strspn(nl + 1, " "), br, strlen(br)), 0, "after the split: %.60s", nl + 1);
  /* one mask read, outside the loop: its block is not the pred's block */
  cr_assert_eq(strstr(strstr(fn, "@__vxl_active_threads()") + 1, "@__vxl_active_threads()"), NULL);
  const char *mask = strstr(fn, "llvm.call @__vxl_active_threads()");
  const char *pred = strstr(fn, "llvm.call @__vxl_pred(");
  cr_assert(mask && pred && mask < pred);
  const char *block = strstr(mask, "^bb");
  cr_assert(block && block < pred, "a block boundary between mask and pred");
  /* the uniform branch: the only cond_br on an icmp of %arg1 is not split */
  const char *big = strstr(fn, "llvm.icmp \"sgt\" %arg1");
  cr_assert_not_null(big);
  cr_assert_null(strstr(big, "llvm.call @__vxl_split("), "no split after the uniform test");
  free(fn);
  /* switch_exits: the bounds guard, then the cf.switch with two cases as
   * two nested split/join pairs (its three yields merged into one exit) */
  fn = function_text(r.lowered_ir, "switch_exits");
  expect_divergence(fn, 3, 3, 0, "switch_exits");
  free(fn);
  vxl_result_clear(&r);
  /* a thread-dependent break from a loop that also exits at its head: the
   * masked-off threads would wait at the wrong exit, so it is refused.  The
   * analysis counts the loop's values as divergent once threads may have
   * left early, so the first branch refused is the head's exit test. */
  r = compile_text(
      "module {\n  gpu.module @m {\n    gpu.func @k(%o: memref<?xi32>) kernel {\n"
      "      %c0 = arith.constant 0 : index\n      %c1 = arith.constant 1 : index\n"
      "      %c9 = arith.constant 9 : index\n      %t = gpu.thread_id x\n"
      "      cf.br ^h(%c0 : index)\n    ^h(%i: index):\n"
      "      %go = arith.cmpi ult, %i, %c9 : index\n      cf.cond_br %go, ^b, ^e\n"
      "    ^b:\n      %hit = arith.cmpi eq, %i, %t : index\n      %n = arith.addi %i, %c1 : index\n"
      "      cf.cond_br %hit, ^e, ^h(%n : index)\n    ^e:\n      gpu.return\n    }\n  }\n}\n");
  cr_assert_not(r.ok);
  cr_assert_eq(r.ndiags, 1);
  cr_assert_not_null(strstr(r.diags[0],
                            "t.mlir:11:7: error: unsupported: thread-dependent branch that leaves a "
                            "loop which has other exits or entries (a `break`"),
                     "%s", r.diags[0]);
  vxl_result_clear(&r);
}

/* text with every 'T' replaced by type (malloc()). */
static char *with_type(const char *text, const char *type) {
  char *out = malloc(strlen(text) * 4 + 1), *o = out;
  for (const char *p = text; *p; p++)
    if (*p == 'T')
      o = stpcpy(o, type);
    else
      *o++ = *p;
  *o = '\0';
  return out;
}

#ifdef VXT_CORPUS_DIR
Test(conformance, outlined_launches_in_two_modules_are_qualified) {
  /* upstream outlining of two gpu.launch ops: @main_kernel::@main_kernel and
   * @main_kernel_0::@main_kernel */
  vxl_result r = compile_file(VXT_CORPUS_DIR "/llvm-project/Integration-GPU-CUDA/two-modules.mlir", false);
  cr_assert(r.ok, "%s", r.ndiags ? r.diags[0] : "");
  cr_assert_eq(r.nkernels, 2);
  cr_assert_str_eq(r.kernels[0].name, "main_kernel::main_kernel");
  cr_assert_str_eq(r.kernels[1].name, "main_kernel_0::main_kernel");
  vxl_result_clear(&r);
}
#endif

Test(lowering, same_symbol_in_two_gpu_modules_is_qualified) {
  /* a name used once keeps its plain form next to qualified ones */
  vxl_result r = compile_file(VXT_KERNELS_DIR "/two_modules.mlir", false);
  cr_assert(r.ok, "%s", r.ndiags ? r.diags[0] : "");
  cr_assert_eq(r.nkernels, 3);
  cr_assert_str_eq(r.kernels[0].name, "add::apply");
  cr_assert_str_eq(r.kernels[1].name, "mul::apply");
  cr_assert_str_eq(r.kernels[2].name, "scale");
  vxl_result_clear(&r);
  /* the same external function declared in two gpu.modules: one declaration;
   * declared with two different types: refused where the second one is */
  const char *decl = "module {\n"
                     "  gpu.module @a {\n    func.func private @ext(i32) -> i32\n"
                     "    gpu.func @ka(%o: memref<?xi32>) kernel {\n      %c = arith.constant 1 : i32\n"
                     "      %z = arith.constant 0 : index\n      %r = func.call @ext(%c) : (i32) -> i32\n"
                     "      memref.store %r, %o[%z] : memref<?xi32>\n      gpu.return\n    }\n  }\n"
                     "  gpu.module @b {\n    func.func private @ext(T) -> i32\n"
                     "    gpu.func @kb(%o: memref<?xi32>, %c: T) kernel {\n"
                     "      %z = arith.constant 0 : index\n      %r = func.call @ext(%c) : (T) -> i32\n"
                     "      memref.store %r, %o[%z] : memref<?xi32>\n      gpu.return\n    }\n  }\n}\n";
  char *text = with_type(decl, "i32");
  r = compile_text(text);
  free(text);
  cr_assert(r.ok, "%s", r.ndiags ? r.diags[0] : "");
  cr_assert_eq(r.nkernels, 2);
  cr_assert_str_eq(r.kernels[0].name, "ka");
  cr_assert_str_eq(r.kernels[1].name, "kb");
  vxl_result_clear(&r);
  text = with_type(decl, "i64");
  r = compile_text(text);
  free(text);
  cr_assert_not(r.ok);
  cr_assert_str_eq(
      r.diags[0],
      "t.mlir:13:5: error: unsupported: symbol @ext means two different things in two gpu.modules");
  vxl_result_clear(&r);
}

#include <dirent.h>
#include <sys/stat.h>

/* r (a compile of path for RV32) compiled again for RV64 gives the same
 * kernels, each defined in an ELF64 lp64d object, its records naming the
 * target, its device pointers 8 bytes and its other arguments as on RV32;
 * or, when r was refused, is refused the same way. */
static void same_on_rv64(const char *path, const vxl_result *r) {
  vxl_options o = {.opt_level = 2, .xlen = 64};
  vxl_result w;
  cr_assert_eq(vxt_compile_file(cc, path, &o, &w), 0, "%s", path);
  cr_assert_eq(w.ok, r->ok, "%s: %s", path, w.ndiags ? w.diags[0] : "");
  if (!r->ok) {
    cr_assert_str_eq(w.diags[0], r->diags[0], "%s", path);
    vxl_result_clear(&w);
    return;
  }
  cr_assert_eq(w.nkernels, r->nkernels, "%s", path);
  for (uint32_t i = 0; i < w.nkernels; i++) {
    const vxl_kernel *k = &w.kernels[i], *k32 = &r->kernels[i];
    cr_assert_null(vxt_elf64_check(w.object, w.object_size, k->entry, "vx_spawn_threads"), "%s %s: %s", path,
                   k->name, vxt_elf64_check(w.object, w.object_size, k->entry, "vx_spawn_threads"));
    cr_assert(k->xlen == 64 && k->vortex_abi == 2 && k32->xlen == 32, "%s", path);
    cr_assert_eq(k->nargs, k32->nargs);
    for (uint32_t a = 0; a < k->nargs; a++)
      cr_assert_eq(k->args[a].size, k->args[a].kind == VXL_ARG_POINTER ? 8 : k32->args[a].size,
                   "%s %s arg %u", path, k->name, a);
    cr_assert_leq(k->launch_offset + VXP_LAUNCH_HEADER_SIZE, k->buffer_size);
  }
  vxl_result_clear(&w);
}

/* Every .mlir file in dir (recursively when deep): compiles to valid
 * objects with metadata for RV32 and RV64, or fails with
 * "path:line:col: error: unsupported: ..." for both. */
static void conform(const char *dir, int deep, int *compiled, int *refused) {
  DIR *dh = opendir(dir);
  cr_assert_not_null(dh, "%s", dir);
  struct dirent *e;
  while ((e = readdir(dh))) {
    if (e->d_name[0] == '.') continue;
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    size_t n = strlen(path);
    struct stat st; /* d_type may be DT_UNKNOWN (and corpus dirs may be links) */
    cr_assert_eq(stat(path, &st), 0, "%s", path);
    if (S_ISDIR(st.st_mode)) {
      if (deep) conform(path, deep, compiled, refused);
      continue;
    }
    if (n < 5 || strcmp(path + n - 5, ".mlir") != 0) continue;
    vxl_result r = compile_file(path, false);
    if (r.ok) {
      cr_assert_gt(r.nkernels, 0, "%s", path);
      for (uint32_t i = 0; i < r.nkernels; i++) {
        cr_assert_null(vxt_elf_check(r.object, r.object_size, r.kernels[i].entry), "%s", path);
        cr_assert_leq(r.kernels[i].launch_offset + VXP_LAUNCH_HEADER_SIZE, r.kernels[i].buffer_size);
      }
      (*compiled)++;
    } else {
      cr_assert_geq(r.ndiags, 1, "%s", path);
      unsigned line = 0, col = 0;
      char rest[64];
      cr_assert_eq(strncmp(r.diags[0], path, n), 0, "%s: %s", path, r.diags[0]);
      cr_assert_eq(sscanf(r.diags[0] + n, ":%u:%u: error: %63[^:]", &line, &col, rest), 3, "%s", r.diags[0]);
      cr_assert_gt(line, 0, "%s", r.diags[0]);
      cr_assert_str_eq(rest, "unsupported", "%s", r.diags[0]);
      (*refused)++;
    }
    same_on_rv64(path, &r);
    vxl_result_clear(&r);
  }
  closedir(dh);
}

/* The project's own kernels (the same as RV32 on RV64 too); files that are
 * not kernels on purpose (a source with no gpu.module, ...) are refused
 * the same way for both. */
Test(lowering, every_test_kernel_compiles_alike_for_rv32_and_rv64) {
  int compiled = 0, refused = 0;
  conform(VXT_KERNELS_DIR, 0, &compiled, &refused);
  cr_assert_geq(compiled, 10, "compiled %d, refused %d", compiled, refused);
}

#ifdef VXT_CORPUS_DIR
Test(conformance, every_corpus_file_compiles_or_is_refused_precisely) {
  int compiled = 0, refused = 0;
  conform(VXT_CORPUS_DIR, 1, &compiled, &refused);
  cr_assert_geq(compiled + refused, 24, "the whole corpus was seen: compiled %d, refused %d", compiled,
                refused);
  cr_assert_geq(compiled, 18, "compiled %d, refused %d", compiled, refused);
}
#endif

Test(lowering, objects_carry_line_tables_of_the_source) {
  /* the kernel's code maps to its .mlir lines (what the lockstep emulator
   * and a debugger report); the object names the source file */
  vxl_result r = compile_file(VXT_KERNELS_DIR "/private_memory.mlir", false);
  cr_assert(r.ok, "%s", r.ndiags ? r.diags[0] : "");
  cr_assert_not_null(memmem(r.object, r.object_size, ".debug_line", 11), "no line table");
  cr_assert_not_null(memmem(r.object, r.object_size, "private_memory.mlir", 19),
                     "the line table names the file");
  vxl_result_clear(&r);
}

/* The version of obj's line table (.debug_line's first unit), 0 without
 * one; *addr_pool: whether it has a DWARF 5 address pool (.debug_addr). */
static unsigned line_table_version(const uint8_t *obj, size_t size, int *addr_pool) {
  LLVMMemoryBufferRef mb = LLVMCreateMemoryBufferWithMemoryRange((const char *)obj, size, "o", 0);
  char *msg = NULL;
  LLVMBinaryRef bin = LLVMCreateBinary(mb, NULL, &msg);
  cr_assert_not_null(bin, "%s", msg);
  unsigned version = 0;
  *addr_pool = 0;
  LLVMSectionIteratorRef it = LLVMObjectFileCopySectionIterator(bin);
  for (; !LLVMObjectFileIsSectionIteratorAtEnd(bin, it); LLVMMoveToNextSection(it)) {
    const char *name = LLVMGetSectionName(it);
    if (name && strcmp(name, ".debug_addr") == 0) *addr_pool = 1;
    if (name && strcmp(name, ".debug_line") == 0 && LLVMGetSectionSize(it) >= 6) {
      const uint8_t *p = (const uint8_t *)LLVMGetSectionContents(it);
      version = p[4] | p[5] << 8u; /* after the 32-bit unit length */
    }
  }
  LLVMDisposeSectionIterator(it);
  LLVMDisposeBinary(bin);
  LLVMDisposeMemoryBuffer(mb);
  return version;
}

/* One process compiles for both register widths, in both orders, and every
 * object's debug information is that of its own width: DWARF 4 line
 * tables, no DWARF 5 address pool (LLVM 22 heads one with the address
 * size of the first object its process emitted), and the RV64 object's
 * bytes are the same whichever width came first. */
Test(lowering, debug_information_does_not_depend_on_what_was_compiled_before) {
  size_t len = 0;
  char *src = vxt_read_file(VXT_EXAMPLES_DIR "/saxpy.mlir", &len);
  cr_assert_not_null(src);
  vxl_options o32 = {.opt_level = 2, .vortex_abi = 2, .xlen = 32},
              o64 = {.opt_level = 2, .vortex_abi = 2, .xlen = 64};
  vxl_result a, b, c;
  cr_assert_eq(vxl_compile(cc, src, len, "saxpy.mlir", &o64, &a), 0);
  cr_assert_eq(vxl_compile(cc, src, len, "saxpy.mlir", &o32, &b), 0);
  cr_assert_eq(vxl_compile(cc, src, len, "saxpy.mlir", &o64, &c), 0);
  cr_assert(a.ok && b.ok && c.ok);
  const vxl_result *all[] = {&a, &b, &c};
  for (int i = 0; i < 3; i++) {
    int pool = -1;
    cr_assert_eq(line_table_version(all[i]->object, all[i]->object_size, &pool), 4, "object %d", i);
    cr_assert_eq(pool, 0, "object %d has an address pool", i);
  }
  cr_assert(a.object_size == c.object_size && memcmp(a.object, c.object, a.object_size) == 0,
            "RV64 before and after an RV32 compile");
  vxl_result_clear(&a), vxl_result_clear(&b), vxl_result_clear(&c);
  free(src);
}

Test(lowering, a_warp_size_that_is_not_a_power_of_two_is_refused) {
  vxl_options o = {.opt_level = 2, .warp_size = 6};
  vxl_result r;
  cr_assert_eq(vxl_compile(cc, "module {}", 9, "w.mlir", &o, &r), 0);
  cr_assert_not(r.ok);
  cr_assert_str_eq(r.diags[0], "w.mlir: error: warp size 6 is not a power of two from 1 to 32");
  vxl_result_clear(&r);
}

/* The key callback of the host lowering tests: a fixed key; the options
 * it was asked for into *ud when ud is not NULL. */
static int fixed_key(void *ud, const vxl_options *o, const char *text, size_t len, char key[65]) {
  (void)text, (void)len;
  if (ud) *(vxl_options *)ud = *o;
  memset(key, 'a', 64);
  key[64] = '\0';
  return 0;
}

/* A host main that launches one kernel of 4 threads (gpu.launch, to be
 * outlined) storing each thread's id. */
#define HOST_LAUNCH_SRC                                                                                      \
  "func.func @main() {\n  %c1 = arith.constant 1 : index\n  %c4 = arith.constant 4 : index\n"                \
  "  %m = memref.alloc() : memref<4xi32>\n"                                                                  \
  "  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)\n"                                \
  "             threads(%tx, %ty, %tz) in (%sx = %c4, %sy = %c1, %sz = %c1) {\n"                             \
  "    %t = arith.index_cast %tx : index to i32\n    memref.store %t, %m[%tx] : memref<4xi32>\n"             \
  "    gpu.terminator\n  }\n  return\n}\n"

Test(lowering, the_host_side_becomes_runtime_calls_and_gpu_binaries) {
  static const char src[] = HOST_LAUNCH_SRC;
  vxl_host_result h;
  vxl_options o = {.opt_level = 2};
  cr_assert_eq(vxl_lower_host(cc, src, strlen(src), "p.mlir", &o, fixed_key, NULL, &h), 0);
  cr_assert(h.ok, "%s", h.ndiags ? h.diags[0] : "");
  cr_assert_eq(h.nmodules, 1);
  cr_assert_not_null(strstr(h.host_ir, "gpu.binary @main_kernel"), "%s", h.host_ir);
  cr_assert_not_null(strstr(h.host_ir, "// vortexd-key: aaaa"), "the module text carries its key");
  /* its properties say what it is compiled for; the options are fixed in it */
  cr_assert_not_null(strstr(h.host_ir,
                            "#gpu.object<#vortex.target<abi = 2, xlen = 32, warp_size = 4, O = 2>, "
                            "properties = {key = \"aaaa"),
                     "%s", h.host_ir);
  cr_assert_not_null(strstr(h.host_ir, "target = \"vortex2-rv32\"}, bin = \""), "%s", h.host_ir);
  cr_assert_not_null(strstr(h.host_ir, "// vortexd-options: target=vortex2-rv32 warp_size=4 opt_level=2 "
                                       "shuffle_insns=0\0A"),
                     "%s", h.host_ir);
  cr_assert_not_null(strstr(h.host_ir, "gpu.launch_func"),
                     "lowered to the LLVM dialect, launch kept for "
                     "translation: %s",
                     h.host_ir);
  cr_assert_null(strstr(h.host_ir, "gpu.launch blocks"), "outlined");
  vxl_host_result_clear(&h);
}

/* src's host side lowered into *h (cleared by the caller) and its bitcode,
 * with run's wrapper, into *bc (free()) / *n. */
static void host_bitcode(const char *src, const vxl_run_entry *run, vxl_host_result *h, uint8_t **bc,
                         size_t *n) {
  vxl_options o = {.opt_level = 2};
  cr_assert_eq(vxl_lower_host(cc, src, strlen(src), "p.mlir", &o, fixed_key, NULL, h), 0);
  cr_assert(h->ok, "%s", h->ndiags ? h->diags[0] : "");
  char err[512] = "";
  cr_assert_eq(vxl_emit_host_bitcode(cc, h->host_ir, strlen(h->host_ir), run, bc, n, err, sizeof err), 0,
               "%s", err);
}

/* The host side as LLVM bitcode for a JIT: the #vortex.target objects
 * translate (the dialect is vortexd's own), and the entry wrapper calls
 * the entry asked for, of the type asked for, or the request is refused
 * with what is wrong. */
Test(lowering, the_host_side_as_bitcode_gets_an_entry_wrapper) {
  static const char src[] =
      HOST_LAUNCH_SRC "func.func @answer() -> i64 {\n  %c = arith.constant 42 : i64\n  return %c : i64\n}\n";
  vxl_host_result h;
  uint8_t *bc = NULL;
  size_t n = 0;
  char err[512] = "";
  vxl_run_entry run = {"__run_main", "answer", VXL_RESULT_I64};
  host_bitcode(src, &run, &h, &bc, &n);
  cr_assert(n > 4 && memcmp(bc, "BC\xc0\xde", 4) == 0, "LLVM bitcode");
  LLVMContextRef lctx = LLVMContextCreate();
  LLVMMemoryBufferRef mb = LLVMCreateMemoryBufferWithMemoryRangeCopy((const char *)bc, n, "host.bc");
  LLVMModuleRef m = NULL;
  cr_assert_eq(LLVMParseBitcodeInContext2(lctx, mb, &m), 0);
  LLVMDisposeMemoryBuffer(mb); /* the module does not keep it */
  LLVMValueRef wrap = LLVMGetNamedFunction(m, "__run_main");
  cr_assert(wrap && !LLVMIsDeclaration(wrap), "the wrapper is defined");
  LLVMValueRef ctors = LLVMGetNamedGlobal(m, "llvm.global_ctors");
  cr_assert_not_null(ctors, "the module's load is a global constructor");
  LLVMDisposeModule(m);
  LLVMContextDispose(lctx);
  free(bc);
  /* without a wrapper: no __run_main */
  cr_assert_eq(vxl_emit_host_bitcode(cc, h.host_ir, strlen(h.host_ir), NULL, &bc, &n, err, sizeof err), 0);
  cr_assert_null(memmem(bc, n, "__run_main", 10));
  free(bc);
  struct {
    const char *entry;
    vxl_entry_result result;
    const char *says;
  } bad[] = {
      {"nope", VXL_RESULT_VOID, "defines no function @nope to run"},
      {"answer", VXL_RESULT_I32, "@answer is i64 (); the function run must take no arguments and return i32"},
      {"main", VXL_RESULT_F32, "return f32"},
      {NULL, VXL_RESULT_I64, "@main is void (); the function run"}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    vxl_run_entry r = {"__run_main", bad[i].entry, bad[i].result};
    bc = (uint8_t *)"untouched";
    cr_assert_eq(vxl_emit_host_bitcode(cc, h.host_ir, strlen(h.host_ir), &r, &bc, &n, err, sizeof err),
                 -ENOENT, "%zu", i);
    cr_assert_null(bc);
    cr_assert_not_null(strstr(err, bad[i].says), "%s", err);
  }
  vxl_host_result_clear(&h);
}

/* The object (or bitcode) of in-process code generation: bc given the
 * default triple's data layout, LLVM's O0 pipeline, then a PIC object, as
 * vortexd did before the host's target left it. */
static void host_in_process(const uint8_t *bc, size_t n, int as_object, uint8_t **out, size_t *size) {
  LLVMInitializeNativeTarget();
  LLVMInitializeNativeAsmPrinter();
  LLVMContextRef lctx = LLVMContextCreate();
  LLVMMemoryBufferRef mb = LLVMCreateMemoryBufferWithMemoryRangeCopy((const char *)bc, n, "host.bc");
  LLVMModuleRef m = NULL;
  cr_assert_eq(LLVMParseBitcodeInContext2(lctx, mb, &m), 0);
  LLVMDisposeMemoryBuffer(mb);
  char *triple = LLVMGetDefaultTargetTriple(), *msg = NULL;
  LLVMTargetRef target;
  cr_assert_eq(LLVMGetTargetFromTriple(triple, &target, &msg), 0);
  LLVMSetTarget(m, triple);
  LLVMTargetMachineRef tm = LLVMCreateTargetMachine(target, triple, "generic", "", LLVMCodeGenLevelDefault,
                                                    LLVMRelocPIC, LLVMCodeModelDefault);
  LLVMDisposeMessage(triple);
  LLVMTargetDataRef td = LLVMCreateTargetDataLayout(tm);
  LLVMSetModuleDataLayout(m, td);
  LLVMDisposeTargetData(td);
  LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
  cr_assert_null(LLVMRunPasses(m, "default<O0>", tm, po));
  LLVMDisposePassBuilderOptions(po);
  if (as_object)
    cr_assert_eq(LLVMTargetMachineEmitToMemoryBuffer(tm, m, LLVMObjectFile, &msg, &mb), 0, "%s", msg);
  else
    mb = LLVMWriteBitcodeToMemoryBuffer(m);
  *size = LLVMGetBufferSize(mb);
  *out = malloc(*size);
  memcpy(*out, LLVMGetBufferStart(mb), *size);
  LLVMDisposeMemoryBuffer(mb);
  LLVMDisposeTargetMachine(tm);
  LLVMDisposeModule(m);
  LLVMContextDispose(lctx);
}

/* The host side's last steps run in vortexd-hostcc, a program linked with
 * the shared libLLVM (vortexd holds RISC-V's target alone): its object and
 * its bitcode are byte for byte what the same steps give in-process, and
 * input that is not bitcode is refused with a message. */
Test(lowering, the_host_code_generator_gives_what_in_process_code_generation_gives) {
  vxl_host_result h;
  uint8_t *bc = NULL;
  size_t n = 0;
  char err[2048] = "";
  vxl_run_entry run = {"__run_main", NULL, VXL_RESULT_VOID};
  host_bitcode(HOST_LAUNCH_SRC, &run, &h, &bc, &n);
  for (int as_object = 0; as_object < 2; as_object++) {
    const char *emit[] = {as_object ? "--emit=obj" : "--emit=bc"};
    uint8_t *got = NULL, *want = NULL;
    size_t got_n = 0, want_n = 0;
    cr_assert_eq(vxr_run_filter(VXT_HOSTCC, emit, 1, bc, n, &got, &got_n, err, sizeof err), 0, "%s", err);
    host_in_process(bc, n, as_object, &want, &want_n);
    cr_assert(got_n == want_n && memcmp(got, want, got_n) == 0, "%s: %zu bytes, in-process %zu", emit[0],
              got_n, want_n);
    cr_assert(as_object ? memcmp(got, "\177ELF", 4) == 0 : memcmp(got, "BC\xc0\xde", 4) == 0);
    free(got);
    free(want);
  }
  uint8_t *got = (uint8_t *)"untouched";
  size_t got_n = 0;
  const char *emit[] = {"--emit=obj"};
  cr_assert_eq(
      vxr_run_filter(VXT_HOSTCC, emit, 1, (const uint8_t *)"not bitcode", 11, &got, &got_n, err, sizeof err),
      -EIO);
  cr_assert_null(got);
  cr_assert_not_null(strstr(err, "vortexd-hostcc failed (exit status 1)"), "%s", err);
  cr_assert_not_null(
      strstr(err, "vortexd-hostcc: Invalid bitcode signature\nvortexd-hostcc: /dev/fd/3: not LLVM bitcode"),
      "%s", err);
  free(bc);
  vxl_host_result_clear(&h);
}

/* A gpu.module's own #vortex.target decides the options it is compiled
 * with (the fields it gives; the first target of the program's abi and
 * xlen, else its first), keyed and labelled so. */
Test(lowering, a_modules_own_vortex_target_decides_its_options) {
  static const char src[] =
      "module attributes {gpu.container_module} {\n"
      "  gpu.module @wide [#vortex.target<abi = 2, xlen = 32, warp_size = 16>,\n"
      "                    #vortex.target<abi = 3, xlen = 64, warp_size = 8, O = 1>] {\n"
      "    gpu.func @k() kernel { gpu.return }\n  }\n"
      "  func.func @main() {\n    %c1 = arith.constant 1 : index\n"
      "    gpu.launch_func @wide::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)\n"
      "    return\n  }\n}\n";
  vxl_options o = {.opt_level = 2, .vortex_abi = 3, .xlen = 64}, keyed = {0};
  vxl_host_result h;
  cr_assert_eq(vxl_lower_host(cc, src, strlen(src), "p.mlir", &o, fixed_key, &keyed, &h), 0);
  cr_assert(h.ok, "%s", h.ndiags ? h.diags[0] : "");
  cr_assert_not_null(
      strstr(h.host_ir, "#vortex.target<abi = 3, xlen = 64, warp_size = 8, O = 1>, properties = {key = "),
      "%s", h.host_ir);
  cr_assert_not_null(strstr(h.host_ir, "target=vortex3-rv64 warp_size=8 opt_level=1"), "%s", h.host_ir);
  cr_assert_eq(keyed.warp_size, 8);
  cr_assert_eq(keyed.opt_level, 1);
  cr_assert_eq(keyed.xlen, 64);
  vxl_host_result_clear(&h);

  /* no target of the program's: the module's first */
  o = (vxl_options){.opt_level = 2, .vortex_abi = 3, .xlen = 32};
  cr_assert_eq(vxl_lower_host(cc, src, strlen(src), "p.mlir", &o, fixed_key, &keyed, &h), 0);
  cr_assert(h.ok, "%s", h.ndiags ? h.diags[0] : "");
  cr_assert_not_null(strstr(h.host_ir, "target=vortex2-rv32 warp_size=16 opt_level=2"), "%s", h.host_ir);
  cr_assert_eq(keyed.warp_size, 16);
  cr_assert_eq(keyed.vortex_abi, 2);
  vxl_host_result_clear(&h);
}

/* A device compile of a module for another #vortex.target than its own is
 * refused at the module; one of its targets, or none of vortexd's
 * (another project's), compiles. */
Test(lowering, a_module_is_not_compiled_for_a_target_it_does_not_list) {
  static const char src[] = "module {\n  gpu.module @m [#vortex.target<xlen = 64, warp_size = 8>] {\n"
                            "    gpu.func @k() kernel { gpu.return }\n  }\n}\n";
  vxl_result r;
  vxl_options o = {.opt_level = 2}; /* vortex2-rv32, warp 4 */
  cr_assert_eq(vxl_compile(cc, src, sizeof src - 1, "t.mlir", &o, &r), 0);
  cr_assert_not(r.ok);
  cr_assert_not_null(strstr(r.diags[0],
                            "t.mlir:2:3: error: gpu.module @m lists no #vortex.target this compile "
                            "is for (vortex2-rv32, warp_size 4, O2)"),
                     "%s", r.diags[0]);
  vxl_result_clear(&r);
  o = (vxl_options){.opt_level = 2, .xlen = 64, .warp_size = 8};
  cr_assert_eq(vxl_compile(cc, src, sizeof src - 1, "t.mlir", &o, &r), 0);
  cr_assert(r.ok, "%s", r.ndiags ? r.diags[0] : "");
  vxl_result_clear(&r);
  static const char nv[] = "module {\n  gpu.module @m [#nvvm.target] {\n"
                           "    gpu.func @k() kernel { gpu.return }\n  }\n}\n";
  o = (vxl_options){.opt_level = 2};
  cr_assert_eq(vxl_compile(cc, nv, sizeof nv - 1, "t.mlir", &o, &r), 0);
  cr_assert(r.ok, "%s", r.ndiags ? r.diags[0] : "");
  vxl_result_clear(&r);
  /* a bad field is the parser's error, at its place */
  static const char bad[] = "module {\n  gpu.module @m [#vortex.target<xlen = 48>] {\n"
                            "    gpu.func @k() kernel { gpu.return }\n  }\n}\n";
  cr_assert_eq(vxl_compile(cc, bad, sizeof bad - 1, "t.mlir", &o, &r), 0);
  cr_assert_not(r.ok);
  cr_assert_not_null(strstr(r.diags[0], "t.mlir:2:"), "%s", r.diags[0]);
  cr_assert_not_null(strstr(r.diags[0], "xlen is 32 or 64"), "%s", r.diags[0]);
  vxl_result_clear(&r);
}

/* One code-generation pipeline kept by the compiler and run on module
 * after module emits exactly the bytes LLVM's C API emits with a pipeline
 * built for each module: every kernel file of the tests, compiled twice
 * over in turn (so the kept pipeline has run on many modules before), at
 * two optimization levels. */
Test(lowering, a_kept_codegen_pipeline_emits_the_c_apis_bytes) {
  static const char *const files[] = {"polygeist_style", "control_flow",      "sgemm_tiled", "subgroups",
                                      "printf",          "nested_divergence", "wide_types",  "math_libm",
                                      "two_modules",     "dynamic_shared"};
  enum { N = sizeof files / sizeof *files };
  vxl_compiler *plain = NULL;
  cr_assert_eq(vxl_compiler_create(&plain), 0);
  cr_assert_eq(vxl_compiler_reuse_codegen(plain, 0), 0);
  for (int round = 0; round < 2; round++)
    for (int i = 0; i < N; i++) {
      char path[512];
      snprintf(path, sizeof path, "%s/%s.mlir", VXT_KERNELS_DIR, files[i]);
      vxl_options o = {.opt_level = round ? 3 : 2};
      vxl_result kept, fresh;
      cr_assert_eq(vxt_compile_file(cc, path, &o, &kept), 0, "%s", path);
      cr_assert_eq(vxt_compile_file(plain, path, &o, &fresh), 0, "%s", path);
      cr_assert(kept.ok && fresh.ok, "%s: %s", path, kept.ndiags ? kept.diags[0] : "");
      cr_assert_eq(kept.object_size, fresh.object_size, "%s: %zu bytes against %zu", path, kept.object_size,
                   fresh.object_size);
      cr_assert_eq(memcmp(kept.object, fresh.object, kept.object_size), 0, "%s: the objects differ", path);
      vxl_result_clear(&kept);
      vxl_result_clear(&fresh);
    }
  vxl_compiler_destroy(plain);
}
