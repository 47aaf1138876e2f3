/*
 * vx_print.c - vx_printf for the emulator's device runtime: formats into
 * __vxs_console, which the emulator reads after a run.  Linked into the
 * serial range (see link.ld), so each thread of a warp prints alone, in
 * lane order, as Vortex's own vx_printf serializes the threads.
 * Conversions: %d %i %u %x %c %s %f %%, with the length modifiers ll, j
 * (64 bits), l, z, t (a long: XLEN bits) and h, hh (promoted to int).
 */
#include <stdarg.h>
#include <stdint.h>

char __vxs_console[65536];
uint32_t __vxs_console_len;

static void put(char c) {
  if (__vxs_console_len < sizeof __vxs_console) __vxs_console[__vxs_console_len++] = c;
}

static void put_unsigned(unsigned long long v, unsigned base) {
  char tmp[24];
  int n = 0;
  do
    tmp[n++] = "0123456789abcdef"[v % base];
  while ((v /= base) && n < 24);
  while (n)
    put(tmp[--n]);
}

int vx_printf(const char *fmt, ...) {
  uint32_t start = __vxs_console_len;
  va_list ap;
  va_start(ap, fmt);
  for (const char *p = fmt; *p; p++) {
    if (*p != '%') {
      put(*p);
      continue;
    }
    p++;
    /* the argument's width, as C's length modifiers say: ll and j 64 bits,
     * l, z and t a long (XLEN), none (or h, hh: promoted) an int */
    int wide = 0;
    while (*p == 'l' || *p == 'z' || *p == 't' || *p == 'j' || *p == 'h')
      wide = *p == 'j' || (*p == 'l' && wide == 1) ? 2 : *p == 'h' ? wide : wide > 1 ? 2 : 1, p++;
    switch (*p) {
    case 'd':
    case 'i': {
      long long v = wide == 2 ? va_arg(ap, long long) : wide ? va_arg(ap, long) : va_arg(ap, int);
      if (v < 0)
        put('-'), put_unsigned(0ull - (unsigned long long)v, 10);
      else
        put_unsigned((unsigned long long)v, 10);
      break;
    }
    case 'u':
    case 'x': {
      unsigned long long v = wide == 2 ? va_arg(ap, unsigned long long)
                             : wide    ? va_arg(ap, unsigned long)
                                       : va_arg(ap, unsigned);
      put_unsigned(v, *p == 'x' ? 16 : 10);
      break;
    }
    case 'c': put((char)va_arg(ap, int)); break;
    case 's':
      for (const char *s = va_arg(ap, const char *); *s; s++)
        put(*s);
      break;
    case 'f': {
      double v = va_arg(ap, double);
      if (v < 0) put('-'), v = -v;
      unsigned long long ip = (unsigned long long)v;
      put_unsigned(ip, 10);
      put('.');
      unsigned long long fp = (unsigned long long)((v - (double)ip) * 1000000.0 + 0.5);
      char d[6];
      for (int i = 5; i >= 0; i--)
        d[i] = (char)('0' + fp % 10), fp /= 10;
      for (int i = 0; i < 6; i++)
        put(d[i]);
      break;
    }
    case '%': put('%'); break;
    case '\0': p--; break;
    default: put('%'), put(*p); break;
    }
  }
  va_end(ap);
  return (int)(__vxs_console_len - start);
}
