/*
 * vxemu.c - an emulated Vortex device for the execution tests.
 *
 * Implements the Vortex kernel ABI the objects vortexd emits rely on
 * (kernel/include/vx_spawn.h, see ../shared/notes/vortex-abi.md):
 *   threadIdx, blockIdx, __local_group_id  thread-locals, one TLS block per
 *                                          emulated thread (tp switched);
 *   blockDim, gridDim, __warps_per_group   globals;
 *   vx_spawn_threads                       runs every block, one fiber per
 *                                          thread, x fastest;
 * and the calls the lowering's emulator option emits instead of custom
 * instructions and CSR reads:
 *   vx_emu_argument_buffer  (csr_read(mscratch))
 *   vx_emu_barrier          (vx_barrier: blocks the fiber until every thread
 *                            of its block has arrived or finished)
 *   vx_emu_local_mem_base   (csr_read(VX_CSR_LOCAL_MEM_BASE))
 *   vx_emu_split/join       (vx_split/vx_join: every emulated thread runs
 *                            alone, so they only check that each split is
 *                            joined, in order, on every path: exit 95/96)
 *   vx_emu_pred, vx_emu_active_threads (vx_pred, CSR 0xCC4)
 * plus vx_printf.  Runs as a static Linux-user program under qemu-riscv32.
 *
 * I/O (little-endian u32s): stdin  = image_size, image (copied to device
 * memory at VXEMU_MEM_BASE), args_offset, out_offset, out_size;
 * stdout = main's return value, then out_size bytes from out_offset.
 * vx_printf writes to stderr.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

typedef union {
  struct { uint32_t x, y, z; };
  uint32_t m[3];
} dim3_t;

__thread dim3_t threadIdx;
__thread dim3_t blockIdx;
__thread uint32_t __local_group_id;
dim3_t blockDim, gridDim;
uint32_t __warps_per_group;

extern char __tdata_start[], __tdata_end[], __tbss_size[];
extern char __vxmem_start[], __vxlocal_start[], __vxstack_start[];
extern int main(void);

#define MAX_THREADS 1024
#define STACK_SIZE 16384 /* per emulated thread; 16 MiB in .vxstack */
#define TLS_MAX 256
#define THREADS_PER_WARP 4 /* default Vortex configuration */

char vxemu_main_stack[65536] __attribute__((aligned(16)));

/* ---- syscalls (Linux RISC-V numbers) and freestanding helpers ---- */

static long vxemu_sys(long n, long a, long b, long c) {
  register long a0 __asm__("a0") = a;
  register long a1 __asm__("a1") = b;
  register long a2 __asm__("a2") = c;
  register long a7 __asm__("a7") = n;
  __asm__ volatile("ecall" : "+r"(a0) : "r"(a1), "r"(a2), "r"(a7) : "memory");
  return a0;
}

static void vxemu_exit(int code) {
  vxemu_sys(93, code, 0, 0);
  for (;;) {}
}

static void vxemu_read(void *p, uint32_t n) {
  char *b = p;
  while (n) {
    long r = vxemu_sys(63, 0, (long)b, n);
    if (r <= 0) vxemu_exit(90);
    b += r;
    n -= (uint32_t)r;
  }
}

static void vxemu_write(int fd, const void *p, uint32_t n) {
  const char *b = p;
  while (n) {
    long r = vxemu_sys(64, fd, (long)b, n);
    if (r <= 0) vxemu_exit(91);
    b += r;
    n -= (uint32_t)r;
  }
}

void *memcpy(void *d, const void *s, size_t n) {
  char *dd = d;
  const char *ss = s;
  while (n--) *dd++ = *ss++;
  return d;
}

void *memmove(void *d, const void *s, size_t n) {
  char *dd = d;
  const char *ss = s;
  if (dd < ss) while (n--) *dd++ = *ss++;
  else while (n--) dd[n] = ss[n];
  return d;
}

void *memset(void *d, int c, size_t n) {
  char *dd = d;
  while (n--) *dd++ = (char)c;
  return d;
}

/* ---- fibers ---- */

typedef struct {
  uint32_t ra, sp, s[12], tp;
  float fs[12];
} vxemu_ctx; /* layout known to vxemu_switch.S */

void vxemu_switch(vxemu_ctx *from, vxemu_ctx *to);
void vxemu_fiber_entry(void);

static vxemu_ctx sched_ctx, fiber_ctx[MAX_THREADS];
static uint8_t fiber_state[MAX_THREADS]; /* 0 runnable, 1 at a barrier, 2 done */
static uint16_t split_depth[MAX_THREADS];  /* open vx_split of each thread */
static uint8_t tls_area[MAX_THREADS + 1][TLS_MAX] __attribute__((aligned(64)));
static uint32_t cur_fiber;
static void (*kernel_fn)(void *);
static const void *kernel_arg;
static void *argument_buffer;
static uint32_t tls_size;

static void *vxemu_tp(void) {
  void *tp;
  __asm__("mv %0, tp" : "=r"(tp));
  return tp;
}

/* Copies the TLS template into block b (tdata, then zeroed tbss). */
static void vxemu_tls_init(uint8_t *b) {
  uint32_t td = (uint32_t)(__tdata_end - __tdata_start);
  memcpy(b, __tdata_start, td);
  memset(b + td, 0, (uint32_t)(uintptr_t)__tbss_size);
}

void vxemu_fiber_main(uint32_t i) {
  kernel_fn((void *)kernel_arg);
  if (split_depth[i] != 0) vxemu_exit(96); /* a vx_split without its vx_join */
  fiber_state[i] = 2;
  vxemu_switch(&fiber_ctx[i], &sched_ctx);
}

void vx_emu_barrier(uint32_t id, uint32_t nwarps) {
  (void)id;
  (void)nwarps;
  fiber_state[cur_fiber] = 1;
  vxemu_switch(&fiber_ctx[cur_fiber], &sched_ctx);
}

int32_t vx_emu_split(int32_t pred) {
  (void)pred;
  return split_depth[cur_fiber]++;
}

void vx_emu_join(int32_t sp) {
  if (split_depth[cur_fiber] == 0 || --split_depth[cur_fiber] != (uint16_t)sp) vxemu_exit(95);
}

void vx_emu_pred(int32_t cond, int32_t mask) {
  (void)cond;
  (void)mask;
}

int32_t vx_emu_active_threads(void) { return (1 << THREADS_PER_WARP) - 1; }

void *vx_emu_argument_buffer(void) { return argument_buffer; }
void *vx_emu_local_mem_base(void) { return __vxlocal_start; }

/* Writes field value v of thread-local `var` (seen from the scheduler's own
 * TLS block) into fiber t's TLS block. */
#define VXEMU_SET_TLS(t, var, v)                                                   \
  (*(__typeof__(var) *)(tls_area[t] + ((uint8_t *)&(var) - (uint8_t *)vxemu_tp())) = (v))

int vx_spawn_threads(uint32_t dimension, const uint32_t *grid_dim, const uint32_t *block_dim,
                     void (*fn)(void *), const void *arg) {
  for (int i = 0; i < 3; i++) {
    gridDim.m[i] = (uint32_t)i < dimension ? grid_dim[i] : 1;
    blockDim.m[i] = (block_dim && (uint32_t)i < dimension) ? block_dim[i] : 1;
  }
  uint32_t nthreads = blockDim.x * blockDim.y * blockDim.z;
  if (nthreads == 0 || nthreads > MAX_THREADS) return -1;
  __warps_per_group = (nthreads + THREADS_PER_WARP - 1) / THREADS_PER_WARP;
  kernel_fn = fn;
  kernel_arg = arg;
  for (uint32_t bz = 0; bz < gridDim.z; bz++)
    for (uint32_t by = 0; by < gridDim.y; by++)
      for (uint32_t bx = 0; bx < gridDim.x; bx++) {
        for (uint32_t t = 0; t < nthreads; t++) {
          vxemu_tls_init(tls_area[t]);
          dim3_t tid = {{t % blockDim.x, (t / blockDim.x) % blockDim.y, t / (blockDim.x * blockDim.y)}};
          dim3_t bid = {{bx, by, bz}};
          VXEMU_SET_TLS(t, threadIdx, tid);
          VXEMU_SET_TLS(t, blockIdx, bid);
          VXEMU_SET_TLS(t, __local_group_id, 0u);
          memset(&fiber_ctx[t], 0, sizeof fiber_ctx[t]);
          fiber_ctx[t].ra = (uint32_t)(uintptr_t)vxemu_fiber_entry;
          fiber_ctx[t].sp = (uint32_t)(uintptr_t)(__vxstack_start + (t + 1) * STACK_SIZE);
          fiber_ctx[t].s[0] = t;
          fiber_ctx[t].tp = (uint32_t)(uintptr_t)tls_area[t];
          fiber_state[t] = 0;
          split_depth[t] = 0;
        }
        for (;;) {
          for (uint32_t t = 0; t < nthreads; t++)
            if (fiber_state[t] == 0) {
              cur_fiber = t;
              vxemu_switch(&sched_ctx, &fiber_ctx[t]);
            }
          /* every fiber has now finished or waits at the barrier */
          uint32_t alive = 0;
          for (uint32_t t = 0; t < nthreads; t++)
            if (fiber_state[t] == 1) fiber_state[t] = 0, alive++;
          if (alive == 0) break;
        }
      }
  return 0;
}

/* ---- vx_printf: %d %i %u %x %c %s %f %%, with l/ll ignored ---- */

static void vxemu_put(char **o, char *end, char c) {
  if (*o < end) *(*o)++ = c;
}

static void vxemu_putu(char **o, char *end, unsigned long long v, unsigned base) {
  char tmp[24];
  int n = 0;
  do tmp[n++] = "0123456789abcdef"[v % base]; while ((v /= base) && n < 24);
  while (n) vxemu_put(o, end, tmp[--n]);
}

int vx_printf(const char *fmt, ...) {
  char buf[512], *o = buf, *end = buf + sizeof buf;
  va_list ap;
  va_start(ap, fmt);
  for (const char *p = fmt; *p; p++) {
    if (*p != '%') { vxemu_put(&o, end, *p); continue; }
    p++;
    while (*p == 'l') p++;
    switch (*p) {
    case 'd': case 'i': {
      int v = va_arg(ap, int);
      if (v < 0) vxemu_put(&o, end, '-'), vxemu_putu(&o, end, (unsigned)-(long long)v, 10);
      else vxemu_putu(&o, end, (unsigned)v, 10);
      break;
    }
    case 'u': vxemu_putu(&o, end, va_arg(ap, unsigned), 10); break;
    case 'x': vxemu_putu(&o, end, va_arg(ap, unsigned), 16); break;
    case 'c': vxemu_put(&o, end, (char)va_arg(ap, int)); break;
    case 's': for (const char *s = va_arg(ap, const char *); *s; s++) vxemu_put(&o, end, *s); break;
    case 'f': {
      double v = va_arg(ap, double);
      if (v < 0) vxemu_put(&o, end, '-'), v = -v;
      unsigned long long ip = (unsigned long long)v;
      vxemu_putu(&o, end, ip, 10);
      vxemu_put(&o, end, '.');
      unsigned long long fp = (unsigned long long)((v - (double)ip) * 1000000.0 + 0.5);
      char d[6];
      for (int i = 5; i >= 0; i--) d[i] = (char)('0' + fp % 10), fp /= 10;
      for (int i = 0; i < 6; i++) vxemu_put(&o, end, d[i]);
      break;
    }
    case '%': vxemu_put(&o, end, '%'); break;
    default: vxemu_put(&o, end, '%'); vxemu_put(&o, end, *p); break;
    }
    if (!*p) break;
  }
  va_end(ap);
  vxemu_write(2, buf, (uint32_t)(o - buf));
  return (int)(o - buf);
}

/* ---- process entry ---- */

void vxemu_main(void) {
  tls_size = (uint32_t)(__tdata_end - __tdata_start) + (uint32_t)(uintptr_t)__tbss_size;
  if (tls_size > TLS_MAX) vxemu_exit(92);
  vxemu_tls_init(tls_area[MAX_THREADS]);
  __asm__ volatile("mv tp, %0" ::"r"(tls_area[MAX_THREADS]));
  uint32_t size, args_off, out_off, out_size;
  vxemu_read(&size, 4);
  if (size > 0x4000000) vxemu_exit(93);
  vxemu_read(__vxmem_start, size);
  vxemu_read(&args_off, 4);
  vxemu_read(&out_off, 4);
  vxemu_read(&out_size, 4);
  if (args_off >= size || out_off > size || out_size > size - out_off) vxemu_exit(94);
  argument_buffer = __vxmem_start + args_off;
  int32_t rc = main();
  vxemu_write(1, &rc, 4);
  vxemu_write(1, __vxmem_start + out_off, out_size);
  vxemu_exit(0);
}
