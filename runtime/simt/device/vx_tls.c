/*
 * vx_tls.c - each thread's TLS block, for both kernel ABIs' startup code
 * (picolibc keeps errno there; Vortex 2.x's thread model its indices).
 */
#include <stdint.h>

/* Bounds of the TLS template's sections, from link.ld.  Only addresses
 * inside the image, reached PC-relative as -mcmodel=medany does: an
 * absolute symbol (a size) is out of a PC-relative reference's +-2 GiB
 * reach from code at 0x80000000 on RV64, where it would sign-extend. */
extern char __tdata_start[], __tdata_end[], __tbss_start[], __tbss_end[];

void __vxs_init_tls(void);

/* Copies the TLS template into this thread's block at tp. */
void __vxs_init_tls(void) {
  char *tp;
  __asm__ volatile("mv %0, tp" : "=r"(tp));
  uint32_t data = (uint32_t)(__tdata_end - __tdata_start), bss = (uint32_t)(__tbss_end - __tbss_start);
  for (uint32_t i = 0; i < data; i++)
    tp[i] = __tdata_start[i];
  for (uint32_t i = 0; i < bss; i++)
    tp[data + i] = 0;
}
