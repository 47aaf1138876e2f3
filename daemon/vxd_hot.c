/*
 * vxd_hot.c - the encoded replies of recent hits, in memory.
 *
 * A hit read from SQLite costs a query, a SHA-256 over the entry (which is
 * how bytes from the cache file are validated) and encoding the reply
 * around it.  The reply of a compile hit depends only on the key, so the daemon
 * keeps the encoded frame of recent ones and answers a repeat with a copy
 * whose id it rewrites (vxp_frame_set_id).  Bounded by bytes and by
 * VXD_HOT_SLOTS / 2 replies, least recently used first out; entries are
 * never stale, keys being content hashes.  Loop thread only.
 */
#include <stdlib.h>
#include <string.h>

#include "vxd.h"

typedef struct vxd__hot_entry {
  char key[VXK_KEY_HEX + 1];
  uint8_t *frame; /* malloc() */
  size_t len;
  uint64_t compile_us;
  struct vxd__hot_entry *prev, *next; /* LRU list, most recent first */
} vxd__hot_entry;

struct vxd_hot {
  vxd__hot_entry **slot; /* open addressing by key; NULL = free */
  size_t cap, n;
  size_t bytes, max_bytes;
  vxd__hot_entry *head, *tail;
};

vxd_hot *vxd_hot_create(size_t max_bytes) {
  vxd_hot *h = calloc(1, sizeof *h);
  if (!h) return NULL;
  h->cap = VXD_HOT_SLOTS;
  h->slot = calloc(h->cap, sizeof *h->slot);
  if (!h->slot) {
    free(h);
    return NULL;
  }
  h->max_bytes = max_bytes;
  return h;
}

void vxd_hot_clear(vxd_hot *h) {
  if (!h) return;
  for (vxd__hot_entry *e = h->head, *next; e; e = next) {
    next = e->next;
    free(e->frame);
    free(e);
  }
  memset(h->slot, 0, h->cap * sizeof *h->slot);
  h->head = h->tail = NULL;
  h->n = h->bytes = 0;
}

void vxd_hot_destroy(vxd_hot *h) {
  if (!h) return;
  vxd_hot_clear(h);
  free(h->slot);
  free(h);
}

/* Slot of key, or of the free slot where it would go. */
static size_t vxd__hot_find(const vxd_hot *h, const char *key) {
  size_t i = vxk_key_hash(key) & (h->cap - 1);
  while (h->slot[i] && memcmp(h->slot[i]->key, key, VXK_KEY_HEX) != 0)
    i = (i + 1) & (h->cap - 1);
  return i;
}

static void vxd__hot_unlink(vxd_hot *h, vxd__hot_entry *e) {
  if (e->prev)
    e->prev->next = e->next;
  else
    h->head = e->next;
  if (e->next)
    e->next->prev = e->prev;
  else
    h->tail = e->prev;
  e->prev = e->next = NULL;
}

static void vxd__hot_push_front(vxd_hot *h, vxd__hot_entry *e) {
  e->next = h->head;
  if (h->head) h->head->prev = e;
  h->head = e;
  if (!h->tail) h->tail = e;
}

/* Removes the entry in slot i, re-placing the entries after it in its run
 * (linear probing deletion). */
static void vxd__hot_remove_slot(vxd_hot *h, size_t i) {
  vxd__hot_entry *e = h->slot[i];
  h->slot[i] = NULL;
  h->n--;
  h->bytes -= e->len;
  vxd__hot_unlink(h, e);
  free(e->frame);
  free(e);
  for (size_t j = (i + 1) & (h->cap - 1); h->slot[j]; j = (j + 1) & (h->cap - 1)) {
    vxd__hot_entry *m = h->slot[j];
    h->slot[j] = NULL;
    h->slot[vxd__hot_find(h, m->key)] = m;
  }
}

const uint8_t *vxd_hot_get(vxd_hot *h, const char *key, size_t *len, uint64_t *compile_us) {
  size_t i = vxd__hot_find(h, key);
  vxd__hot_entry *e = h->slot[i];
  if (!e) return NULL;
  vxd__hot_unlink(h, e);
  vxd__hot_push_front(h, e);
  *len = e->len;
  *compile_us = e->compile_us;
  return e->frame;
}

void vxd_hot_put(vxd_hot *h, const char *key, const uint8_t *frame, size_t len, uint64_t compile_us) {
  if (len > h->max_bytes / 4) return; /* one large entry must not flush the rest */
  size_t i = vxd__hot_find(h, key);
  if (h->slot[i]) return; /* already there: the same bytes */
  vxd__hot_entry *e = calloc(1, sizeof *e);
  uint8_t *copy = malloc(len);
  if (!e || !copy) {
    free(e);
    free(copy);
    return;
  }
  memcpy(copy, frame, len);
  memcpy(e->key, key, VXK_KEY_HEX + 1);
  e->frame = copy;
  e->len = len;
  e->compile_us = compile_us;
  while (h->tail && (h->bytes + len > h->max_bytes || (h->n + 1) * 2 > h->cap))
    vxd__hot_remove_slot(h, vxd__hot_find(h, h->tail->key));
  h->slot[vxd__hot_find(h, key)] = e;
  h->n++;
  h->bytes += len;
  vxd__hot_push_front(h, e);
}
