/*
 * vxt.h - helpers shared by the test suites (not part of any module).
 */
#ifndef VXT_H
#define VXT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

/* Writes "$TMPDIR/<stem>XXXXXX" into buf (cap bytes), /tmp when TMPDIR is
 * unset, relative or longer than 40 bytes (socket paths under it must fit
 * a sockaddr_un): where a test makes its files, so that a run given a
 * directory of its own (tests/bootstrap.sh) finds everything it left. */
static inline char *vxt_tmp_template(char *buf, size_t cap, const char *stem) {
  const char *t = getenv("TMPDIR");
  if (!t || t[0] != '/' || strlen(t) > 40) t = "/tmp";
  snprintf(buf, cap, "%s/%sXXXXXX", t, stem);
  return buf;
}

/* The Polygeist kernels in ../shared/corpus/vortex-hip, without ".mlir":
 * an initializer for `const char *files[]`. */
#define VXT_VORTEX_HIP_FILES                                                                                 \
  {                                                                                                          \
    "basic_kernel", "conv3_kernel", "cta_kernel", "dogfood_kernel", "dotproduct_kernel", "metadata_test",    \
        "printf_kernel", "relu_kernel", "sgemm_kernel", "sort_kernel", "vecadd_kernel"                       \
  }

/* Checks that an in-memory object is what Vortex links: ELF32, little
 * endian, EM_RISCV, relocatable, single-float ABI (EF_RISCV_FLOAT_ABI_SINGLE),
 * defining the global function `entry` and referencing `vx_spawn_threads`.
 * Returns NULL when it is, else a static description of the first thing
 * that is wrong. */
const char *vxt_elf_check(const uint8_t *obj, size_t len, const char *entry);
/* As vxt_elf_check for an RV64 object (ELF64, EM_RISCV, relocatable, the
 * double-float ABI lp64d) that defines entry as a global function and,
 * when needs is not NULL, references that symbol.  NULL or what is wrong. */
const char *vxt_elf64_check(const uint8_t *obj, size_t len, const char *entry, const char *needs);

/* 1 if obj has a symbol `name` that is defined (want_defined=1) or
 * undefined (want_defined=0), else 0. */
int vxt_elf_has_symbol(const uint8_t *obj, size_t len, const char *name, int want_defined);

/* How many 32-bit R-type instructions with this opcode/funct3/funct7 the
 * executable sections of obj hold (the targets here have no compressed
 * instructions, so every 4-byte word is one instruction); only within the
 * function symbol `func` when not NULL (0 when obj has no such symbol). */
unsigned vxt_elf_count_insn(const uint8_t *obj, size_t len, const char *func, uint32_t opcode,
                            uint32_t funct3, uint32_t funct7);

/* The function a kernel's code is in within a module object: the body its
 * entry spawns, "__vxl_body_<i>" for entry "__vxl_main_<i>".  Static buffer
 * (one call at a time). */
const char *vxt_kernel_body(const char *entry);

/* Reads a whole file into a malloc()ed buffer; NULL on error. */
char *vxt_read_file(const char *path, size_t *len);

/* One gpu.module of n kernels @k0 .. @k<n-1> (vxt_many.c), each
 *   k<i>(a: memref<?xf32>, out: memref<?xf32>, n: i32):
 *     out[g] = a[g] * i + table[i % 4] + bias[0]  for g < n,
 * with table a private constant {1, 2, 3, 4}, bias a public module
 * variable of initial value 0.5, the product through a helper function
 * every kernel calls (@scaled), and a helper none calls (@unused).
 * malloc()ed text, *len bytes; NULL on OOM. */
char *vxt_many_kernels(unsigned n, size_t *len);

/* The value of the symbol named name that ELF32 obj defines (in an
 * executable, its address), or 0 when it defines none or obj is not
 * ELF32. */
uint32_t vxt_elf_symbol_value(const uint8_t *obj, size_t len, const char *name);

/* How many symbols named name obj's symbol table defines. */
unsigned vxt_elf_count_defined(const uint8_t *obj, size_t len, const char *name);

/* A vortexd started for one test in a fresh temporary directory. */
typedef struct {
  pid_t pid;
  char dir[128]; /* mkdtemp directory holding socket and cache */
  char sock[192];
  char cache[192];
} vxt_daemon;

/* Starts VXT_VORTEXD with --socket/--cache-dir in a new temp dir (or in
 * d->dir when already set, to restart on the same cache) and waits until it
 * answers.  extra may be NULL or one more argument.  Returns 0 or -1. */
int vxt_daemon_start(vxt_daemon *d, const char *extra);

/* Starts VXT_VORTEXD --socket sock --cache-dir cache --workers 1 and then
 * args (NULL-terminated; may be NULL), with env ("VAR=value" settings,
 * NULL-terminated; may be NULL) added to its environment and its stderr
 * written to log (emptied first unless append), and waits until it answers.
 * Returns its pid, or -1 when it exited or never answered (then killed). */
pid_t vxt_daemon_start_logged(const char *sock, const char *cache, const char *log, int append,
                              const char *const *env, const char *const *args);

/* Waits until the vortexd started as pid answers hello on sock (or exits;
 * at most 120 s).  Returns 0, or -1 when it exited or never answered. */
int vxt_daemon_wait(const char *sock, pid_t pid);

/* Stops every daemon serving a socket under dir and removes dir and all in
 * it (what the tests made; vxt_daemon_start's directories go this way when
 * the test's process exits). */
void vxt_remove_tree(const char *dir);

/* SIGTERM, then waits; returns the daemon's exit status (0 = clean). */
int vxt_daemon_stop(vxt_daemon *d);

/* Runs cmd with sh -c, its stdout into out (cap bytes, NUL-terminated,
 * cut when longer).  Returns its exit status, -1 when killed by a signal,
 * -2 when it could not be started. */
int vxt_run(const char *cmd, char *out, size_t cap);

/* (vxt_wait.c) Polls until cond(arg) returns nonzero, every 10 ms, for at most
 * timeout_ms: what a test waits with for something another process does
 * (never a sleep of a guessed length).  Returns 1 when cond held, 0 when
 * time ran out (the caller's assertion then says what did not happen).
 * The timeout bounds a broken run; a loaded machine only waits longer
 * within it. */
int vxt_wait_until(int (*cond)(void *arg), void *arg, unsigned timeout_ms);

#endif
