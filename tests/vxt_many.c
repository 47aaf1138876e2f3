/* vxt_many.c - a generated module of many kernels (see vxt.h). */
#define _GNU_SOURCE /* open_memstream */
#include <stdio.h>
#include <stdlib.h>

#include "vxt.h"

char *vxt_many_kernels(unsigned n, size_t *len) {
  char *text = NULL;
  FILE *f = open_memstream(&text, len);
  if (!f) return NULL;
  fputs("module attributes {gpu.container_module} {\n"
        "  gpu.module @many {\n"
        "    memref.global \"private\" constant @table : memref<4xf32> = dense<[1.0, 2.0, 3.0, 4.0]>\n"
        "    memref.global @bias : memref<1xf32> = dense<0.5>\n"
        "    func.func @scaled(%x: f32, %k: f32) -> f32 {\n"
        "      %y = arith.mulf %x, %k : f32\n"
        "      return %y : f32\n"
        "    }\n"
        "    func.func @unused(%x: f32) -> f32 {\n"
        "      %y = arith.addf %x, %x : f32\n"
        "      return %y : f32\n"
        "    }\n",
        f);
  for (unsigned i = 0; i < n; i++)
    fprintf(f,
            "    gpu.func @k%u(%%a: memref<?xf32>, %%out: memref<?xf32>, %%n: i32) kernel {\n"
            "      %%bid = gpu.block_id x\n"
            "      %%bdim = gpu.block_dim x\n"
            "      %%tid = gpu.thread_id x\n"
            "      %%0 = arith.muli %%bid, %%bdim : index\n"
            "      %%g = arith.addi %%0, %%tid : index\n"
            "      %%gi = arith.index_cast %%g : index to i32\n"
            "      %%inb = arith.cmpi slt, %%gi, %%n : i32\n"
            "      scf.if %%inb {\n"
            "        %%x = memref.load %%a[%%g] : memref<?xf32>\n"
            "        %%t = memref.get_global @table : memref<4xf32>\n"
            "        %%ti = arith.constant %u : index\n"
            "        %%tv = memref.load %%t[%%ti] : memref<4xf32>\n"
            "        %%b = memref.get_global @bias : memref<1xf32>\n"
            "        %%c0 = arith.constant 0 : index\n"
            "        %%bv = memref.load %%b[%%c0] : memref<1xf32>\n"
            "        %%k = arith.constant %u.0 : f32\n"
            "        %%y = func.call @scaled(%%x, %%k) : (f32, f32) -> f32\n"
            "        %%z = arith.addf %%y, %%tv : f32\n"
            "        %%w = arith.addf %%z, %%bv : f32\n"
            "        memref.store %%w, %%out[%%g] : memref<?xf32>\n"
            "      }\n"
            "      gpu.return\n"
            "    }\n",
            i, i % 4, i);
  fputs("  }\n}\n", f);
  if (fclose(f) != 0) {
    free(text);
    return NULL;
  }
  return text;
}
