/*
 * vxd_pieces.h - one module's pieces compiled on the idle cores of the
 * daemon's workers (vxd_pieces.c).  Used by the workers and the daemon's
 * pool; no libuv here.
 */
#ifndef VXD_PIECES_H
#define VXD_PIECES_H

#include <stddef.h>
#include <stdint.h>

#include "lowering/vxl.h"

/* A worker re-creates its compilers after this many compiles: an MLIR
 * context never frees the types and attributes it has uniqued. */
#define VXD_WORKER_RECYCLE 2000

/* The cores of idle workers, lent to workers compiling large modules: a
 * page shared by the daemon and its workers. */
typedef struct vxd_cores vxd_cores;

/* Makes the shared page for nslots worker slots (before forking any
 * worker).  NULL when mmap fails.  The daemon's loop thread. */
vxd_cores *vxd_cores_create(unsigned nslots);
void vxd_cores_destroy(vxd_cores *k);

/* The daemon's loop thread: how many workers are alive and idle now. */
void vxd_cores_set_idle(vxd_cores *k, int idle);

/* The daemon's loop thread: slot's worker was replaced; its loans end. */
void vxd_cores_reset(vxd_cores *k, unsigned slot);

/* Helper threads one worker runs at most (cores it borrows). */
#define VXD_MAX_HELPERS 15

/* One worker's helper threads and their compilers. */
typedef struct vxd_crew vxd_crew;

/* A crew of at most max_helpers (up to VXD_MAX_HELPERS) helper threads
 * for the worker in slot `slot`, borrowing from cores (NULL: never
 * borrows).  NULL on OOM.  The worker's main thread. */
vxd_crew *vxd_crew_create(vxd_cores *cores, unsigned slot, unsigned max_helpers);
void vxd_crew_destroy(vxd_crew *w);

/* Compiles one source as vxl_compile() does (same arguments, same bytes,
 * same return values), with c on this thread and as many helper threads
 * of w (NULL: none) as spare cores and pieces allow.  The worker's main
 * thread. */
int vxd_crew_compile(vxd_crew *w, vxl_compiler *c, const char *source, size_t len, const char *source_name,
                     const vxl_options *opts, vxl_result *res);

/* Where a crew finds the pieces of a module compiled before and keeps the
 * ones it compiles (the daemon's cache, through the worker): callbacks on
 * the thread that runs vxd_crew_compile.  A piece is known by its key,
 * derived from what it is compiled from (vxl_piece_inputs), so a module
 * with one kernel edited compiles only the piece that kernel is in (and
 * the pieces whose lines it moved). */
typedef struct {
  void *ud;
  /* Writes the cache key of a piece compiled with opts from inputs (len
   * bytes, vxl_piece_inputs) of a source named source_name to key.
   * Returns 0, or a negative errno (no piece of the module is looked up
   * or kept then). */
  int (*key)(void *ud, const vxl_options *opts, const char *source_name, const char *inputs, size_t len,
             char key[65]);
  /* Looks up the n keys: for each one found, fills got[i] (a piece that
   * compiled: its object and kernels) and sets hit[i] to 1; the rest are
   * left as they are.  Returns 0 or a negative errno (then nothing is
   * used and every piece compiled). */
  int (*lookup)(void *ud, uint32_t n, const char (*keys)[65], vxl_result *got, uint8_t *hit);
  /* Keeps the piece compiled under key: r is a piece that compiled with
   * no diagnostic (not changed; copied as needed). */
  void (*keep)(void *ud, const char *key, const vxl_result *r);
} vxd_piece_store;

/* Makes w look up and keep the pieces of the modules it compiles of more
 * than one piece in store (NULL: none; store must outlive w's compiles).
 * The worker's main thread. */
void vxd_crew_set_store(vxd_crew *w, const vxd_piece_store *store);

/* Pieces w's last vxd_crew_compile took from its store. */
unsigned vxd_crew_last_reused(const vxd_crew *w);

/* Pieces w's helper threads compiled in its last vxd_crew_compile. */
unsigned vxd_crew_last_helped(const vxd_crew *w);

/* Pieces w's helper threads have taken, in all of w's compiles so far:
 * each counted as it starts, so that the difference over a compile that
 * is still running is what its helpers took up to now.  Any thread (an
 * atomic read); what a test watches a loan with. */
unsigned vxd_crew_pieces_started(vxd_crew *w);

/* Links a module's pieces: vxl_merge_fn over lld's ELF driver in a fork
 * of this process (vxl_lld_link_relocatable: the bytes `ld.lld -r` gave).
 * A thread whose process runs no other thread that could hold LLVM's or
 * the allocator's locks: a worker once its helpers have ended. */
int vxd_merge_pieces(void *ud, uint32_t n, const uint8_t *const *objects, const size_t *sizes, uint8_t **out,
                     size_t *out_size, char *err, size_t errcap);

/* vxl_compiler_create, with vxd_merge_pieces as the compiler's merge. */
int vxd_compiler_new(vxl_compiler **out);

#endif /* VXD_PIECES_H */
