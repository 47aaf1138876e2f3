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
 *
 * With a piece store (the daemon's cache, through the worker), the worker
 * first derives each piece's key from what the piece is compiled from
 * (vxl_piece_inputs) and looks them all up at once; only the pieces not
 * found are compiled (by the worker and its helpers, which wait for that
 * list), and those that compiled cleanly are kept.  A module with one
 * kernel edited then compiles that kernel's piece alone, plus the pieces
 * whose lines the edit moved.
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

/* One module being compiled: what the worker and its helpers share.  The
 * pieces to compile (todo, ntodo) are known once the worker has parsed the
 * source and looked its pieces up: helpers wait for `ready` first. */
typedef struct {
  const char *source;
  size_t len;
  const char *source_name;
  const vxl_options *opts;
  pthread_mutex_t lock;
  pthread_cond_t ready_cond;
  int ready;      /* todo and ntodo are set (under lock) */
  uint32_t *todo; /* the pieces to compile, in order */
  uint32_t ntodo;
  atomic_uint next; /* the next index into todo to take */
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
  unsigned last_helped, last_reused;
  const vxd_piece_store *store;
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

void vxd_crew_set_store(vxd_crew *w, const vxd_piece_store *store) { w->store = store; }

/* Waits until the worker has said which pieces are to be compiled. */
static void vxd__wait_ready(vxd__module *m) {
  pthread_mutex_lock(&m->lock);
  while (!m->ready)
    pthread_cond_wait(&m->ready_cond, &m->lock);
  pthread_mutex_unlock(&m->lock);
}

/* The worker: the pieces to compile are todo[0 .. ntodo - 1]. */
static void vxd__set_ready(vxd__module *m, uint32_t *todo, uint32_t ntodo) {
  pthread_mutex_lock(&m->lock);
  m->todo = todo, m->ntodo = ntodo, m->ready = 1;
  pthread_cond_broadcast(&m->ready_cond);
  pthread_mutex_unlock(&m->lock);
}

/* Takes pieces of m from its list and compiles them with c from s until
 * none is left, or (stop_when_short) until the cores are overcommitted.
 * Returns the number compiled. */
static unsigned vxd__take_pieces(vxd__module *m, vxl_compiler *c, const vxl_source *s, int stop_when_short) {
  unsigned done = 0;
  vxd__wait_ready(m);
  for (;;) {
    if (stop_when_short && vxd__spare(m->cores) < 0) break;
    unsigned k = atomic_fetch_add(&m->next, 1);
    if (k >= m->ntodo) break;
    uint32_t i = m->todo[k];
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
  /* its own parse: the same source gives the same pieces */
  if (h->c && vxl_source_parse(h->c, m->source, m->len, m->source_name, &s, &parsed) == 0 && s) {
    unsigned done = vxd__take_pieces(m, h->c, s, 1);
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

unsigned vxd_crew_last_reused(const vxd_crew *w) { return w->last_reused; }

unsigned vxd_crew_pieces_started(vxd_crew *w) { return atomic_load(&w->started); }

/* The keys of the n pieces of s (c's parse) in store: *keys (malloc()),
 * or NULL when a key cannot be had (then no piece is looked up or kept). */
static char (*vxd__piece_keys(const vxd_piece_store *store, vxl_compiler *c, const vxl_source *s, uint32_t n,
                              const vxl_options *opts, const char *source_name))[65] {
  char(*keys)[65] = calloc(n, sizeof *keys);
  for (uint32_t i = 0; keys && i < n; i++) {
    char *inputs = NULL;
    size_t len = 0;
    int rc = vxl_piece_inputs(c, s, i, &inputs, &len);
    if (rc == 0) rc = store->key(store->ud, opts, source_name, inputs, len, keys[i]);
    free(inputs);
    if (rc != 0) {
      free(keys);
      return NULL;
    }
  }
  return keys;
}

int vxd_crew_compile(vxd_crew *w, vxl_compiler *c, const char *source, size_t len, const char *source_name,
                     const vxl_options *opts, vxl_result *res) {
  if (w) w->last_helped = 0, w->last_reused = 0;
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
  pthread_mutex_init(&m.lock, NULL);
  pthread_cond_init(&m.ready_cond, NULL);
  /* a source this large most likely has several pieces: one helper
   * parses it alongside the worker instead of after; not with a store,
   * where the pieces left to compile are most often one or none */
  unsigned helpers = len >= VXD_EARLY_HELPER_BYTES && !(w && w->store) ? vxd__start_helpers(w, &m, 0, 1) : 0;
  vxl_source *s = NULL;
  int rc = vxl_source_parse(c, source, len, source_name, &s, res);
  uint32_t n = rc == 0 && res->ok ? vxl_piece_count(vxl_source_kernels(s)) : 0;
  if (n) vxl_result_clear(res);
  /* the pieces compiled before, found by what they are compiled from */
  const vxd_piece_store *store = w && n > 1 ? w->store : NULL;
  char(*keys)[65] = store ? vxd__piece_keys(store, c, s, n, opts, source_name) : NULL;
  uint8_t hit[VXL_MAX_PIECES] = {0};
  uint32_t todo[VXL_MAX_PIECES]; /* read by the helpers, joined before this returns */
  if (keys && store->lookup(store->ud, n, (const char(*)[65])keys, m.pieces, hit) != 0) {
    for (uint32_t i = 0; i < n; i++)
      if (hit[i]) vxl_result_clear(&m.pieces[i]), hit[i] = 0;
  }
  uint32_t ntodo = 0;
  for (uint32_t i = 0; i < n; i++)
    if (!hit[i]) todo[ntodo++] = i;
  vxd__set_ready(&m, todo, ntodo); /* refused: nothing for an early helper either */
  if (w) w->last_reused = n - ntodo;
  if (ntodo > 1) helpers += vxd__start_helpers(w, &m, helpers, ntodo - 1);
  vxd__take_pieces(&m, c, s, 0);
  for (unsigned i = 0; i < helpers; i++)
    pthread_join(w->helpers[i].thread, NULL);
  if (w) w->last_helped = atomic_load(&m.helped);
  if (n) {
    /* kept: the pieces compiled now that a compile of another module can
     * take as they are (a piece with a warning is compiled again, so that
     * every compile of the module says it) */
    for (uint32_t k = 0; keys && k < ntodo; k++) {
      const vxl_result *p = &m.pieces[todo[k]];
      if (p->ok && p->ndiags == 0 && p->object) store->keep(store->ud, keys[todo[k]], p);
    }
    /* the helpers have ended: this thread alone forks the link */
    rc = atomic_load(&m.oom) ? -ENOMEM : vxl_result_merge(m.pieces, n, vxd_merge_pieces, NULL, res);
    if (rc == 0 && res->ok && opts->emit_ir && vxl_source_lowered_ir(c, s, opts, &res->lowered_ir) == -ENOMEM)
      rc = -ENOMEM;
  }
  vxl_source_destroy(s);
  for (uint32_t i = 0; i < VXL_MAX_PIECES; i++)
    vxl_result_clear(&m.pieces[i]);
  free(m.pieces);
  free(keys);
  pthread_mutex_destroy(&m.lock);
  pthread_cond_destroy(&m.ready_cond);
  return rc;
}
