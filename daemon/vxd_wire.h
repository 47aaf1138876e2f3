/*
 * vxd_wire.h - where the lowering's result becomes the protocol's record
 * (daemon/ only; the device tests use it to pack arguments as a client
 * would from the daemon's answer).
 */
#ifndef VXD_WIRE_H
#define VXD_WIRE_H

#include "lowering/vxl.h"
#include "protocol/vxp.h"

/* Fills *w with the protocol record of lowering kernel k.  w borrows every
 * string of k (name, entry, argument types) and owns only w->args
 * (malloc()).  To move k into w instead, free k->args and forget k.
 * Returns 0 or -ENOMEM (w untouched).  Any thread. */
int vxd_kernel_wire_view(const vxl_kernel *k, vxp_kernel *w);

/* Fills *k with a copy of protocol record w: what a piece read back from
 * the cache is to the lowering (k owns its strings; vxl_kernel_clear).
 * Returns 0 or -ENOMEM (k cleared).  Any thread. */
int vxd_kernel_from_wire(const vxp_kernel *w, vxl_kernel *k);

#endif /* VXD_WIRE_H */
