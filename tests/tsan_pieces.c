/*
 * tsan_pieces.c - the helper threads that compile a module's pieces
 * (daemon/vxd_pieces.c), driven in a process that never forks, for
 * ThreadSanitizer (tests/tsan.sh): Criterion cannot run under it, and in
 * the daemon the helpers start in a worker forked from a process with
 * threads, which it cannot follow.  Compiles a module of 320 kernels alone,
 * with helpers on three borrowed cores, and with its loan ended in the
 * middle (the core wanted back), and fails when the objects differ.
 *   tsan_pieces   (exit 0: same bytes every way; 1: a difference; 2: setup)
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/vxd_pieces.h"
#include "lowering/vxl.h"
#include "vxt.h"

#define KERNELS 320u

static const vxl_options o2 = {.opt_level = 2};

typedef struct {
  vxd_crew *crew;
  vxl_compiler *c;
  const char *src;
  size_t len;
  vxl_result res;
  int rc;
  atomic_int done;
} job;

static void *compile_job(void *arg) {
  job *j = arg;
  j->rc = vxd_crew_compile(j->crew, j->c, j->src, j->len, "many.mlir", &o2, &j->res);
  atomic_store(&j->done, 1);
  return NULL;
}

/* Whether a and b are the same object with the same kernels. */
static int same(const char *what, const vxl_result *a, const vxl_result *b) {
  if (!a->ok || !b->ok || a->nkernels != KERNELS || b->nkernels != KERNELS ||
      a->object_size != b->object_size || memcmp(a->object, b->object, a->object_size) != 0) {
    fprintf(stderr, "tsan_pieces: %s: not the serial compile's object (%zu vs %zu bytes)\n", what,
            a->object_size, b->object_size);
    return 0;
  }
  for (unsigned i = 0; i < KERNELS; i++)
    if (strcmp(a->kernels[i].name, b->kernels[i].name) != 0 ||
        a->kernels[i].buffer_size != b->kernels[i].buffer_size) {
      fprintf(stderr, "tsan_pieces: %s: kernel %u differs\n", what, i);
      return 0;
    }
  return 1;
}

int main(void) {
  vxl_compiler *c = NULL;
  vxd_cores *cores = vxd_cores_create(4);
  vxd_crew *crew = cores ? vxd_crew_create(cores, 0, VXD_MAX_HELPERS) : NULL;
  size_t len = 0;
  char *src = vxt_many_kernels(KERNELS, &len);
  if (vxd_compiler_new(&c) != 0 || !crew || !src) {
    fprintf(stderr, "tsan_pieces: setup failed\n");
    return 2;
  }
  int ok = 1;
  vxl_result alone, helped;
  vxd_cores_set_idle(cores, 0);
  ok &= vxl_compile(c, src, len, "many.mlir", &o2, &alone) == 0 && alone.ok;
  /* three idle workers' cores lent */
  vxd_cores_set_idle(cores, 3);
  ok &=
      vxd_crew_compile(crew, c, src, len, "many.mlir", &o2, &helped) == 0 && same("helped", &alone, &helped);
  unsigned helped_pieces = vxd_crew_last_helped(crew);
  /* the loan ended while the helpers work: they stop between pieces */
  job j = {.crew = crew, .c = c, .src = src, .len = len};
  atomic_init(&j.done, 0);
  pthread_t t;
  unsigned base = vxd_crew_pieces_started(crew);
  if (pthread_create(&t, NULL, compile_job, &j) != 0) return 2;
  while (!atomic_load(&j.done) && vxd_crew_pieces_started(crew) == base) {
    struct timespec d = {0, 1000 * 1000};
    nanosleep(&d, NULL); /* polling the event, not timing it */
  }
  vxd_cores_set_idle(cores, 0);
  pthread_join(t, NULL);
  ok &= j.rc == 0 && same("handed back", &alone, &j.res);
  printf("tsan_pieces: %u kernels, %u pieces by helpers, %u before a hand-back: %s\n", KERNELS, helped_pieces,
         vxd_crew_last_helped(crew), ok ? "same bytes" : "DIFFERENT");
  vxl_result_clear(&alone);
  vxl_result_clear(&helped);
  vxl_result_clear(&j.res);
  free(src);
  vxd_crew_destroy(crew);
  vxd_cores_destroy(cores);
  vxl_compiler_destroy(c);
  return ok ? 0 : 1;
}
