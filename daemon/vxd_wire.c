/* vxd_wire.c - the lowering's kernel as the protocol's record (see vxd_wire.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "vxd_wire.h"

/* a kernel the lowering accepts has a record every client accepts */
_Static_assert(VXL_MAX_KERNEL_ARGS <= VXP_MAX_ARGS && VXL_MAX_ARG_BUFFER <= VXP_MAX_BUFFER_SIZE,
               "the lowering's kernel bounds exceed the protocol's");

int vxd_kernel_wire_view(const vxl_kernel *k, vxp_kernel *w) {
  vxp_arg *args = calloc(k->nargs ? k->nargs : 1, sizeof *args);
  if (!args) return -ENOMEM;
  for (uint32_t i = 0; i < k->nargs; i++) {
    const vxl_arg *a = &k->args[i];
    args[i] = (vxp_arg){.index = a->index,
                        .type = a->type,
                        .kind = a->kind == VXL_ARG_POINTER ? VXP_ARG_POINTER : VXP_ARG_SCALAR,
                        .size = a->size,
                        .align = a->align,
                        .offset = a->offset,
                        .rank = a->rank,
                        .elem_size = a->elem_size};
  }
  _Static_assert(VXL_LAUNCH_RECORD_BYTES == VXP_DISPATCH_HEADER_SIZE &&
                     VXL_DISPATCH_MIN_KERNELS == VXP_DISPATCH_MIN_KERNELS &&
                     sizeof VXL_VAR_PREFIX == sizeof VXP_MODULE_VAR_PREFIX,
                 "one dispatcher convention for both sides");
  *w = (vxp_kernel){.name = k->name,
                    .entry = k->entry,
                    .kernel_id = k->kernel_id,
                    .nargs = k->nargs,
                    .args = args,
                    .args_size = k->args_size,
                    .launch_offset = k->launch_offset,
                    .buffer_size = k->buffer_size,
                    .grid_dims = k->grid_dims,
                    .shared_bytes = k->shared_bytes,
                    .subgroup_size = k->subgroup_size,
                    .vortex_abi = k->vortex_abi,
                    .xlen = k->xlen,
                    .dynamic_min = k->dynamic_min,
                    .scratch_bytes = k->scratch_bytes};
  memcpy(w->known_block, k->known_block, sizeof w->known_block);
  return 0;
}

int vxd_kernel_from_wire(const vxp_kernel *w, vxl_kernel *k) {
  *k = (vxl_kernel){.kernel_id = w->kernel_id,
                    .nargs = w->nargs,
                    .args_size = w->args_size,
                    .launch_offset = w->launch_offset,
                    .buffer_size = w->buffer_size,
                    .grid_dims = w->grid_dims,
                    .shared_bytes = w->shared_bytes,
                    .subgroup_size = w->subgroup_size,
                    .vortex_abi = w->vortex_abi,
                    .xlen = w->xlen,
                    .dynamic_min = w->dynamic_min,
                    .scratch_bytes = w->scratch_bytes};
  memcpy(k->known_block, w->known_block, sizeof k->known_block);
  k->name = strdup(w->name ? w->name : "");
  k->entry = strdup(w->entry ? w->entry : "");
  k->args = calloc(w->nargs ? w->nargs : 1, sizeof *k->args);
  int ok = k->name && k->entry && k->args;
  for (uint32_t i = 0; ok && i < w->nargs; i++) {
    const vxp_arg *a = &w->args[i];
    k->args[i] = (vxl_arg){.index = a->index,
                           .type = strdup(a->type ? a->type : ""),
                           .kind = a->kind == VXP_ARG_POINTER ? VXL_ARG_POINTER : VXL_ARG_SCALAR,
                           .size = a->size,
                           .align = a->align,
                           .offset = a->offset,
                           .rank = a->rank,
                           .elem_size = a->elem_size};
    ok = k->args[i].type != NULL;
  }
  if (!ok) {
    if (!k->args) k->nargs = 0;
    vxl_kernel_clear(k);
    return -ENOMEM;
  }
  return 0;
}
