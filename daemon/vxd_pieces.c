/*
 * vxd_pieces.c - one module's pieces compiled on the idle cores.
 *
 * The lowering compiles a module of more than VXL_PIECE_KERNELS kernels
 * in pieces linked into one object (vxl.h, "pieces"); the pieces depend
 * on the kernel count alone, so who compiles which piece changes nothing
 * in the result.  A worker compiling such a module borrows the cores of
 * idle workers for helper threads, each with its own compiler (an MLIR
 * context is one thread's) and its own parse of the source; the worker
 * and its helpers take the pieces one at a time from a shared counter,
 * and the worker links them in piece order, once its helpers have ended
 * (lld's driver runs in a fork of the worker, which must then have one
 * thread).
 *
 * Cores are lent through a page the daemon shares with its workers (made
 * before the first fork): `idle`, the number of idle workers, written by
 * the daemon's loop only, and one count per worker slot of the helpers
 * that worker runs, written by that worker only (and reset by the daemon
 * when the slot's worker is replaced, so a crashed worker's loans end with
 * it).  Spare cores are idle minus all loans.  A worker borrows one only
 * while spare > 0; a helper gives its core back before its next piece as
 * soon as spare < 0, which happens when a new job went to a worker whose
 * core was lent: a build that fills every core gets its cores back within
 * one piece.
 */
#define _GNU_SOURCE
#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "lowering/vxl_lld.h"
#include "vxd_pieces.h"

struct vxd_cores {
  atomic_int idle;
  unsigned nslots;
  atomic_int lent[]; /* per worker slot */
};

vxd_cores *vxd_cores_create(unsigned nslots) {
  size_t size = sizeof(vxd_cores) + nslots * sizeof(atomic_int);
  vxd_cores *k = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (k == MAP_FAILED) return NULL;
  atomic_init(&k->idle, 0);
  k->nslots = nslots;
  for (unsigned i = 0; i < nslots; i++)
    atomic_init(&k->lent[i], 0);
  return k;
}

void vxd_cores_destroy(vxd_cores *k) {
  if (k) munmap(k, sizeof(vxd_cores) + k->nslots * sizeof(atomic_int));
}

void vxd_cores_set_idle(vxd_cores *k, int idle) {
  if (k) atomic_store(&k->idle, idle);
}

void vxd_cores_reset(vxd_cores *k, unsigned slot) {
  if (k && slot < k->nslots) atomic_store(&k->lent[slot], 0);
}

/* Idle workers whose cores nobody borrowed (negative: more borrowed than
 * idle). */
static int vxd__spare(vxd_cores *k) {
  int lent = 0;
  for (unsigned i = 0; i < k->nslots; i++)
    lent += atomic_load(&k->lent[i]);
  return atomic_load(&k->idle) - lent;
}

/* Borrows one spare core for slot; 1 if it did.  Two workers borrowing
 * the last core at once may both give it back: a lost chance, never an
 * overcommitted core. */
static int vxd__borrow(vxd_cores *k, unsigned slot) {
  if (!k || slot >= k->nslots || vxd__spare(k) <= 0) return 0;
  atomic_fetch_add(&k->lent[slot], 1);
  if (vxd__spare(k) >= 0) return 1;
  atomic_fetch_sub(&k->lent[slot], 1);
  return 0;
}

static void vxd__give_back(vxd_cores *k, unsigned slot) {
  int was = atomic_fetch_sub(&k->lent[slot], 1);
  assert(was > 0); /* only what this worker borrowed (its slot is reset only when it is gone) */
  (void)was;
}

/* ---- the merge: pieces linked by lld, in a fork of this process ---- */

_Static_assert(VXL_MAX_PIECES <= VXL_LLD_MAX_INPUTS, "every piece of a module is one input of its link");

int vxd_merge_pieces(void *ud, uint32_t n, const uint8_t *const *objects, const size_t *sizes, uint8_t **out,
                     size_t *out_size, char *err, size_t errcap) {
  (void)ud;
  return vxl_lld_link_relocatable(n, objects, sizes, out, out_size, err, errcap);
}

int vxd_compiler_new(vxl_compiler **out) {
  int rc = vxl_compiler_create(out);
  if (rc == 0) vxl_compiler_set_merge(*out, vxd_merge_pieces, NULL);
  return rc;
}

/* ---- helpers ---- */

/* A source of this many bytes most likely has more than one piece. */
#define VXD_EARLY_HELPER_BYTES (64u << 10)

/* One module being compiled: what the worker and its helpers share. */
typedef struct {
  const char *source;
  size_t len;
  const char *source_name;
  const vxl_options *opts;
  atomic_uint next; /* the next piece to take */
  vxl_result *pieces;
  atomic_int oom;
  atomic_uint helped;   /* pieces the helpers compiled */
  atomic_uint *started; /* the crew's count of pieces helpers took (or NULL) */
  vxd_cores *cores;
  unsigned slot;
} vxd__module;

typedef struct vxd__helper {
  vxl_compiler *c; /* kept across modules; NULL until first needed */
  unsigned compiles;
  pthread_t thread;
  vxd__module *m;
} vxd__helper;

struct vxd_crew {
  vxd_cores *cores;
  unsigned slot;
  vxd__helper helpers[VXD_MAX_HELPERS];
  unsigned max; /* helpers at most */
  unsigned last_helped;
  atomic_uint started; /* pieces its helpers took, in all its compiles */
};

vxd_crew *vxd_crew_create(vxd_cores *cores, unsigned slot, unsigned max_helpers) {
  vxd_crew *w = calloc(1, sizeof *w);
  if (w) {
    w->cores = cores, w->slot = slot, w->max = max_helpers < VXD_MAX_HELPERS ? max_helpers : VXD_MAX_HELPERS;
    atomic_init(&w->started, 0);
  }
  return w;
}

void vxd_crew_destroy(vxd_crew *w) {
  if (!w) return;
  for (unsigned i = 0; i < VXD_MAX_HELPERS; i++)
    vxl_compiler_destroy(w->helpers[i].c);
  free(w);
}

/* Takes pieces of m (n in all) from its counter and compiles them with c
 * from s until none is left, or (stop_when_short) until the cores are
 * overcommitted.  Returns the number compiled. */
static unsigned vxd__take_pieces(vxd__module *m, vxl_compiler *c, const vxl_source *s, uint32_t n,
                                 int stop_when_short) {
  unsigned done = 0;
  for (;;) {
    if (stop_when_short && vxd__spare(m->cores) < 0) break;
    unsigned i = atomic_fetch_add(&m->next, 1);
    if (i >= n) break;
    if (stop_when_short && m->started) atomic_fetch_add(m->started, 1);
    if (vxl_compile_piece(c, s, i, m->opts, &m->pieces[i]) == -ENOMEM) atomic_store(&m->oom, 1);
    done++;
  }
  return done;
}

static void *vxd__helper_main(void *arg) {
  vxd__helper *h = arg;
  vxd__module *m = h->m;
  assert(m && m->cores);                           /* a helper runs on a borrowed core */
  if (h->c && h->compiles >= VXD_WORKER_RECYCLE) { /* as the worker's own compiler is */
    vxl_compiler_destroy(h->c);
    h->c = NULL;
    h->compiles = 0;
  }
  if (!h->c && vxl_compiler_create(&h->c) != 0) h->c = NULL;
  vxl_source *s = NULL;
  vxl_result parsed;
  memset(&parsed, 0, sizeof parsed);
  /* its own parse gives the piece count the worker's does */
  if (h->c && vxl_source_parse(h->c, m->source, m->len, m->source_name, &s, &parsed) == 0 && s) {
    unsigned done = vxd__take_pieces(m, h->c, s, vxl_piece_count(vxl_source_kernels(s)), 1);
    h->compiles += done;
    atomic_fetch_add(&m->helped, done);
  }
  vxl_source_destroy(s);
  vxl_result_clear(&parsed);
  vxd__give_back(m->cores, m->slot);
  return NULL;
}

/* Starts helpers first .. limit - 1 of w on m, each on a borrowed core,
 * until no core is spare.  Returns how many run. */
static unsigned vxd__start_helpers(vxd_crew *w, vxd__module *m, unsigned first, unsigned limit) {
  unsigned i = first;
  for (; w && i < limit && i < w->max; i++) {
    if (!vxd__borrow(m->cores, m->slot)) break;
    vxd__helper *h = &w->helpers[i];
    h->m = m;
    if (pthread_create(&h->thread, NULL, vxd__helper_main, h) != 0) {
      vxd__give_back(m->cores, m->slot);
      break;
    }
  }
  return i - first;
}

unsigned vxd_crew_last_helped(const vxd_crew *w) { return w->last_helped; }

unsigned vxd_crew_pieces_started(vxd_crew *w) { return atomic_load(&w->started); }

int vxd_crew_compile(vxd_crew *w, vxl_compiler *c, const char *source, size_t len, const char *source_name,
                     const vxl_options *opts, vxl_result *res) {
  if (w) w->last_helped = 0;
  if (vxl_options_check(opts, source_name, res) != 0) return 0;
  vxl_result_clear(res);
  vxd__module m = {.source = source,
                   .len = len,
                   .source_name = source_name,
                   .opts = opts,
                   .cores = w ? w->cores : NULL,
                   .started = w ? &w->started : NULL,
                   .slot = w ? w->slot : 0};
  atomic_init(&m.next, 0);
  atomic_init(&m.oom, 0);
  atomic_init(&m.helped, 0);
  m.pieces = calloc(VXL_MAX_PIECES, sizeof *m.pieces); /* helpers may start before the count is known */
  if (!m.pieces) return -ENOMEM;
  /* a source this large most likely has several pieces: one helper
   * parses it alongside the worker instead of after */
  unsigned helpers = len >= VXD_EARLY_HELPER_BYTES ? vxd__start_helpers(w, &m, 0, 1) : 0;
  vxl_source *s = NULL;
  int rc = vxl_source_parse(c, source, len, source_name, &s, res);
  uint32_t n = rc == 0 && res->ok ? vxl_piece_count(vxl_source_kernels(s)) : 0;
  if (n) {
    vxl_result_clear(res);
    helpers += vxd__start_helpers(w, &m, helpers, n - 1);
  } else {
    atomic_store(&m.next, VXL_MAX_PIECES); /* refused: nothing for an early helper either */
  }
  vxd__take_pieces(&m, c, s, n, 0);
  for (unsigned i = 0; i < helpers; i++)
    pthread_join(w->helpers[i].thread, NULL);
  if (w) w->last_helped = atomic_load(&m.helped);
  if (n) {
    /* the helpers have ended: this thread alone forks the link */
    rc = atomic_load(&m.oom) ? -ENOMEM : vxl_result_merge(m.pieces, n, vxd_merge_pieces, NULL, res);
    if (rc == 0 && res->ok && opts->emit_ir && vxl_source_lowered_ir(c, s, opts, &res->lowered_ir) == -ENOMEM)
      rc = -ENOMEM;
  }
  vxl_source_destroy(s);
  for (uint32_t i = 0; i < VXL_MAX_PIECES; i++)
    vxl_result_clear(&m.pieces[i]);
  free(m.pieces);
  return rc;
}
