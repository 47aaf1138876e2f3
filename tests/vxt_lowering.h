/*
 * vxt_lowering.h - test helper for the suites that call lowering/ directly.
 */
#ifndef VXT_LOWERING_H
#define VXT_LOWERING_H

#include "lowering/vxl.h"

/* Reads path and compiles it with c and opts into *res (caller clears it).
 * Returns -1 when the file cannot be read (*res untouched), else what
 * vxl_compile returns. */
int vxt_compile_file(vxl_compiler *c, const char *path, const vxl_options *opts, vxl_result *res);

#endif
