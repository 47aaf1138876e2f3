/*
 * vx_tls.c - each thread's TLS block, for both kernel ABIs' startup code
 * (picolibc keeps errno there; Vortex 2.x's thread model its indices).
 */
#include <stdint.h>

extern char __tdata_start[], __tdata_end[], __tbss_size[];

void __vxs_init_tls(void);

/* Copies the TLS template into this thread's block at tp. */
void __vxs_init_tls(void) {
  char *tp;
  __asm__ volatile("mv %0, tp" : "=r"(tp));
  uint32_t data = (uint32_t)(__tdata_end - __tdata_start), bss = (uint32_t)(uintptr_t)__tbss_size;
  for (uint32_t i = 0; i < data; i++)
    tp[i] = __tdata_start[i];
  for (uint32_t i = 0; i < bss; i++)
    tp[data + i] = 0;
}
