/* vxt_lowering.c - see vxt_lowering.h. */
#include <stdlib.h>

#include "vxt.h"
#include "vxt_lowering.h"

int vxt_compile_file(vxl_compiler *c, const char *path, const vxl_options *opts, vxl_result *res) {
  size_t len;
  char *src = vxt_read_file(path, &len);
  if (!src) return -1;
  int rc = vxl_compile(c, src, len, path, opts, res);
  free(src);
  return rc;
}
