/*
 * vxt_wait.c - vxt_wait_until (vxt.h): the one way a test waits for
 * something another process or thread does.  No dependencies, so that
 * every test links it.
 */
#include <stdint.h>
#include <time.h>

#include "vxt.h"

int vxt_wait_until(int (*cond)(void *arg), void *arg, unsigned timeout_ms) {
  struct timespec start, now;
  clock_gettime(CLOCK_MONOTONIC, &start);
  for (;;) {
    if (cond(arg)) return 1;
    clock_gettime(CLOCK_MONOTONIC, &now);
    uint64_t ms = (uint64_t)(now.tv_sec - start.tv_sec) * 1000u + (uint64_t)(now.tv_nsec / 1000000) -
                  (uint64_t)(start.tv_nsec / 1000000);
    if (ms >= timeout_ms) return 0;
    struct timespec d = {0, 10 * 1000 * 1000};
    nanosleep(&d, NULL);
  }
}
