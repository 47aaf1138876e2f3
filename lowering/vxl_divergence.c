/*
 * vxl_divergence.c - warp divergence for Vortex (MLIR side).
 *
 * Vortex hardware does not reconverge by itself: a branch on which the
 * threads of a warp disagree aborts ("divergent branch!") unless it is
 * wrapped in vx_split/vx_join, and a loop whose exit test differs between
 * threads must predicate finished threads off with vx_pred (see
 * docs/VORTEX_ABI.md; the Vortex LLVM fork does this in a backend pass that
 * upstream LLVM lacks).
 *
 * Uniformity analysis, on a function after the GPU rewrite and after
 * scf.for became scf.while: divergent values start at the thread-id reads
 * (calls to __vxl_thread_id / __vxl_global_id), at the lane ids and the
 * values shuffles and rotations move (calls of VXL_LANE_HELPER* helpers)
 * and at the arguments of
 * non-kernel functions (their callers are unknown); they spread to every
 * result of an op with a divergent operand (loads through divergent
 * addresses included), to region results yielded from divergent values, to
 * loop-carried values, to everything a loop with a divergent exit test
 * produces, and to the block arguments a divergent branch forwards.  A
 * divergent cf branch also makes divergent every block argument of the
 * blocks it controls and of its reconvergence block (sync dependence: which
 * edge delivers the value depends on the thread).  Private memory
 * (memref.alloca) that a thread-dependent value is written into is
 * divergent as a whole: the same address holds another value in each
 * thread.  Grid and block sizes,
 * kernel arguments and constants stay uniform, and so do block ids on
 * Vortex 3.0, whose scheduler gives a block whole warps; on 2.x they
 * start divergent too, as upstream's vx_spawn_threads runs blocks of one
 * thread one per lane (a warp of W lanes holds W blocks).
 *
 * Rewrites before placement, only where the selector is divergent (split is
 * two-way): scf.index_switch becomes a chain of scf.if, cf.switch a chain of
 * cf.cond_br, and a region whose divergent branch reaches several exits
 * (scf.yield / func.return) gets one exit block.
 *
 * Placement.  A divergent scf.if gets %sp = __vxl_split(cond) before it and
 * __vxl_join(%sp) after it.  A divergent cf.cond_br in block B gets the split
 * right before it and the join in a new block on every edge into B's
 * immediate post-dominator P that comes from the blocks B controls (those
 * reachable from B without passing P), so paths that reach P some other way
 * run no join.  That needs B to be the only way into those blocks and no
 * way back to B.  Blocks of that set also entered from outside it (arms of
 * an if-else-if ladder merged into one block, a switch case another falls
 * into) are cloned for the outside edges first, so each copy belongs to one
 * branch.  A divergent exit of a cf loop with one entry and one exit gets
 * vx_pred like scf.while; other divergent loop exits, and paths that never
 * meet, are refused with an "unsupported:" diagnostic that says which.  A divergent scf.while reads the
 * active-thread mask before the loop and calls __vxl_pred(cond, mask) right before its scf.condition, so
 * finished threads are masked off and the mask comes back when the last one finishes.  Uniform branches stay
 * plain.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <mlir-c/BuiltinAttributes.h>
#include <mlir-c/BuiltinTypes.h>

#include "vxl_internal.h"

/* Operations one function may have copied to give divergent regions a
 * single entry (vxl__clone_side_entries); past it the branch is refused. */
#define VXL__CLONE_BUDGET 20000

/* ---- a set of MLIR objects (values, ops) by their opaque pointer ---- */

typedef struct {
  const void **slot;
  size_t cap, n;
  int oom;
} vxl__pset;

static size_t vxl__hash(const void *p) { return ((uintptr_t)p >> 4) * 0x9E3779B97F4A7C15ull; }

static int vxl__pset_has(const vxl__pset *s, const void *p) {
  if (!s->cap) return 0;
  for (size_t i = vxl__hash(p) & (s->cap - 1);; i = (i + 1) & (s->cap - 1)) {
    if (!s->slot[i]) return 0;
    if (s->slot[i] == p) return 1;
  }
}

/* Adds p; returns 1 when it was not there yet (0 when it was, or on OOM,
 * which sets s->oom). */
static int vxl__pset_add(vxl__pset *s, const void *p) {
  if (vxl__pset_has(s, p)) return 0;
  if ((s->n + 1) * 2 > s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 64;
    const void **slot = calloc(cap, sizeof *slot);
    if (!slot) {
      s->oom = 1;
      return 0;
    }
    for (size_t i = 0; i < s->cap; i++)
      if (s->slot[i])
        for (size_t j = vxl__hash(s->slot[i]) & (cap - 1);; j = (j + 1) & (cap - 1))
          if (!slot[j]) {
            slot[j] = s->slot[i];
            break;
          }
    free(s->slot);
    s->slot = slot;
    s->cap = cap;
  }
  for (size_t i = vxl__hash(p) & (s->cap - 1);; i = (i + 1) & (s->cap - 1))
    if (!s->slot[i]) {
      s->slot[i] = p;
      s->n++;
      return 1;
    }
}

static void vxl__pset_clear(vxl__pset *s) {
  free(s->slot);
  *s = (vxl__pset){0};
}

/* ---- the CFG of one region, with post-dominators ----
 *
 * Built once per region and analysis, and kept current while splits and
 * joins are placed (vxl__cfg_add_join), so placing k branches in a region
 * of n blocks costs O(n + k * n) array work and no O(n) MLIR walk per
 * branch.  Block lookup is a hash table; immediate post-dominators come
 * from Cooper, Harvey and Kennedy's "A Simple, Fast Dominance Algorithm"
 * on the reversed graph, rooted at a virtual exit. */

/* In succ and ipdom: the virtual exit.  Any index >= n means "exit" to the
 * code that walks the graph; this one stays valid while blocks are added. */
#define VXL__EXIT (SIZE_MAX - 1)

typedef struct {
  MlirBlock *blk; /* the region's blocks */
  size_t n;
  size_t *succ, *at;   /* successors of i: succ[at[i] .. at[i+1]) (VXL__EXIT
                          for "exits") */
  size_t *ipdom;       /* immediate post-dominator (VXL__EXIT: the virtual
                          exit), SIZE_MAX when the block cannot reach an exit */
  size_t *indeg;       /* edges into each block */
  unsigned char *mark; /* vxl__cfg_mark's set, all zero between uses */
  size_t *list, nlist; /* the blocks marked, in visiting order */
  const void **keys;   /* block -> index, open addressing, cap slots */
  size_t *vals, cap;
  size_t blk_cap, succ_cap; /* allocated entries of the per-block arrays, succ */
} vxl__cfg;

static void vxl__cfg_free(vxl__cfg *g) {
  free(g->blk);
  free(g->succ);
  free(g->at);
  free(g->ipdom);
  free(g->indeg);
  free(g->mark);
  free(g->list);
  free(g->keys);
  free(g->vals);
  *g = (vxl__cfg){0};
}

static size_t vxl__cfg_index(const vxl__cfg *g, MlirBlock b) {
  if (!g->cap) return g->n;
  for (size_t i = vxl__hash(b.ptr) & (g->cap - 1);; i = (i + 1) & (g->cap - 1)) {
    if (!g->keys[i]) return g->n;
    if (g->keys[i] == b.ptr) return g->vals[i];
  }
}

/* Maps block b to index i (b not yet mapped; the table has room). */
static void vxl__cfg_map(vxl__cfg *g, MlirBlock b, size_t i) {
  size_t h = vxl__hash(b.ptr) & (g->cap - 1);
  while (g->keys[h])
    h = (h + 1) & (g->cap - 1);
  g->keys[h] = b.ptr;
  g->vals[h] = i;
}

/* Makes the table at least twice as large as the blocks it maps; 0 or
 * -ENOMEM. */
static int vxl__cfg_rehash(vxl__cfg *g, size_t blocks) {
  if (blocks * 2 < g->cap) return 0;
  size_t cap = 64;
  while (cap <= blocks * 2)
    cap *= 2;
  const void **keys = calloc(cap, sizeof *keys);
  size_t *vals = malloc(cap * sizeof *vals);
  if (!keys || !vals) {
    free(keys);
    free(vals);
    return -ENOMEM;
  }
  free(g->keys);
  free(g->vals);
  g->keys = keys;
  g->vals = vals;
  g->cap = cap;
  for (size_t i = 0; i < g->n; i++)
    vxl__cfg_map(g, g->blk[i], i);
  return 0;
}

/* Immediate post-dominators of every block (see the section comment).
 * Returns 0 or -ENOMEM. */
static int vxl__cfg_postdominators(vxl__cfg *g) {
  size_t n = g->n, nn = n + 1, edges = g->at[n];
#define VXL__NODE(y) ((y) >= n ? n : (y)) /* the exit is node n here */
  size_t *pat = calloc(nn + 1, sizeof *pat), *pred = malloc((edges + 1) * sizeof *pred);
  size_t *po = malloc(nn * sizeof *po), *order = malloc(nn * sizeof *order);
  size_t *stack = malloc(nn * sizeof *stack), *next = malloc(nn * sizeof *next);
  size_t *ip = malloc(nn * sizeof *ip);
  int rc = pat && pred && po && order && stack && next && ip ? 0 : -ENOMEM;
  if (rc == 0) {
    /* predecessors (the reversed graph's successors), counting sort */
    for (size_t e = 0; e < edges; e++)
      pat[VXL__NODE(g->succ[e]) + 1]++;
    for (size_t i = 0; i < nn; i++)
      pat[i + 1] += pat[i];
    for (size_t i = 0; i < nn; i++)
      next[i] = pat[i];
    for (size_t x = 0; x < n; x++)
      for (size_t e = g->at[x]; e < g->at[x + 1]; e++)
        pred[next[VXL__NODE(g->succ[e])]++] = x;
    /* post-order of a depth-first walk from the exit over predecessors */
    size_t top = 0, count = 0;
    for (size_t i = 0; i < nn; i++)
      po[i] = SIZE_MAX, next[i] = pat[i];
    po[n] = 0; /* on the stack */
    stack[top++] = n;
    while (top) {
      size_t x = stack[top - 1];
      if (next[x] < pat[x + 1]) {
        size_t y = pred[next[x]++];
        if (po[y] == SIZE_MAX) po[y] = 0, stack[top++] = y;
      } else {
        top--;
        order[count] = x;
        po[x] = count++;
      }
    }
    for (size_t i = 0; i < nn; i++)
      ip[i] = SIZE_MAX;
    ip[n] = n;
    for (int changed = 1; changed;) {
      changed = 0;
      for (size_t k = count - 1; k-- > 0;) { /* reverse post-order, exit first and skipped */
        size_t x = order[k], best = SIZE_MAX;
        for (size_t e = g->at[x]; e < g->at[x + 1]; e++) {
          size_t y = VXL__NODE(g->succ[e]);
          if (ip[y] == SIZE_MAX) continue;
          if (best == SIZE_MAX) {
            best = y;
            continue;
          }
          size_t a = y, c = best;
          while (a != c) {
            while (po[a] < po[c])
              a = ip[a];
            while (po[c] < po[a])
              c = ip[c];
          }
          best = a;
        }
        if (best != ip[x]) ip[x] = best, changed = 1;
      }
    }
    for (size_t x = 0; x < n; x++)
      g->ipdom[x] = ip[x] == n ? VXL__EXIT : ip[x];
  }
#undef VXL__NODE
  free(pat);
  free(pred);
  free(po);
  free(order);
  free(stack);
  free(next);
  free(ip);
  return rc;
}

/* Builds g for region r: blocks, successor lists, post-dominators.
 * Returns 0 or -ENOMEM. */
static int vxl__cfg_build(MlirRegion r, vxl__cfg *g) {
  *g = (vxl__cfg){0};
  size_t nsucc = 0;
  for (MlirBlock b = mlirRegionGetFirstBlock(r); !mlirBlockIsNull(b); b = mlirBlockGetNextInRegion(b)) {
    g->n++;
    MlirOperation t = mlirBlockGetTerminator(b);
    intptr_t k = mlirOperationIsNull(t) ? 0 : mlirOperationGetNumSuccessors(t);
    nsucc += k ? (size_t)k : 1;
  }
  g->blk_cap = g->n + 1;
  g->succ_cap = nsucc + 1;
  g->blk = malloc(g->blk_cap * sizeof *g->blk);
  g->succ = malloc(g->succ_cap * sizeof *g->succ);
  g->at = malloc((g->blk_cap + 1) * sizeof *g->at);
  g->ipdom = malloc((g->blk_cap + 1) * sizeof *g->ipdom);
  g->indeg = calloc(g->blk_cap + 1, sizeof *g->indeg);
  g->mark = calloc(g->blk_cap + 1, 1);
  g->list = malloc((g->blk_cap + 1) * sizeof *g->list);
  if (!g->blk || !g->succ || !g->at || !g->ipdom || !g->indeg || !g->mark || !g->list) {
    vxl__cfg_free(g);
    return -ENOMEM;
  }
  size_t i = 0;
  for (MlirBlock b = mlirRegionGetFirstBlock(r); !mlirBlockIsNull(b); b = mlirBlockGetNextInRegion(b))
    g->blk[i++] = b;
  if (vxl__cfg_rehash(g, g->n) != 0) {
    vxl__cfg_free(g);
    return -ENOMEM;
  }
  size_t e = 0;
  for (i = 0; i < g->n; i++) {
    g->at[i] = e;
    MlirOperation t = mlirBlockGetTerminator(g->blk[i]);
    intptr_t k = mlirOperationIsNull(t) ? 0 : mlirOperationGetNumSuccessors(t);
    if (k == 0) g->succ[e++] = VXL__EXIT;
    for (intptr_t j = 0; j < k; j++) {
      size_t y = vxl__cfg_index(g, mlirOperationGetSuccessor(t, j));
      g->succ[e++] = y < g->n ? y : VXL__EXIT;
      if (y < g->n) g->indeg[y]++;
    }
  }
  g->at[g->n] = e;
  if (vxl__cfg_postdominators(g) != 0) {
    vxl__cfg_free(g);
    return -ENOMEM;
  }
  return 0;
}

/* The immediate post-dominator of b (n for the virtual exit), or SIZE_MAX
 * when b cannot reach an exit. */
static size_t vxl__cfg_ipdom(const vxl__cfg *g, size_t b) {
  return g->ipdom[b] == VXL__EXIT ? g->n : g->ipdom[b];
}

/* Marks in g->mark and lists in g->list b and every block reachable from b
 * without passing p: the blocks b's branch controls.  Costs what it marks
 * (and their edges).  vxl__cfg_unmark clears the marks. */
static void vxl__cfg_mark(vxl__cfg *g, size_t b, size_t p) {
  g->nlist = 0;
  g->mark[b] = 1;
  g->list[g->nlist++] = b;
  for (size_t i = 0; i < g->nlist; i++) {
    size_t x = g->list[i];
    for (size_t s = g->at[x]; s < g->at[x + 1]; s++) {
      size_t y = g->succ[s];
      if (y == p || y >= g->n || g->mark[y]) continue;
      g->mark[y] = 1;
      g->list[g->nlist++] = y;
    }
  }
}

static void vxl__cfg_unmark(vxl__cfg *g) {
  for (size_t i = 0; i < g->nlist; i++)
    g->mark[g->list[i]] = 0;
  g->nlist = 0;
}

/* Records in g what placing a join did to the region: block jb was added
 * with the one successor p, and every edge from a block marked by
 * vxl__cfg_mark (the blocks b controls, b included) into p now goes to jb.
 * Those blocks reach p only through such edges, so jb post-dominates them
 * all: whichever had p as immediate post-dominator now has jb.  Costs what
 * is marked.  Returns 0 or -ENOMEM (g is then freed). */
static int vxl__cfg_add_join(vxl__cfg *g, MlirBlock jb, size_t p) {
  size_t n = g->n, j = n, edges = g->at[n];
  if (n + 2 > g->blk_cap || edges + 1 > g->succ_cap) {
    size_t bc = n + 2 > g->blk_cap ? 2 * g->blk_cap + 2 : g->blk_cap;
    size_t sc = edges + 1 > g->succ_cap ? 2 * g->succ_cap + 2 : g->succ_cap;
    MlirBlock *blk = realloc(g->blk, bc * sizeof *blk);
    if (blk) g->blk = blk;
    size_t *at = realloc(g->at, (bc + 1) * sizeof *at);
    if (at) g->at = at;
    size_t *ip = realloc(g->ipdom, (bc + 1) * sizeof *ip);
    if (ip) g->ipdom = ip;
    size_t *deg = realloc(g->indeg, (bc + 1) * sizeof *deg);
    if (deg) g->indeg = deg;
    unsigned char *mark = realloc(g->mark, bc + 1);
    if (mark) g->mark = mark, memset(mark + g->blk_cap + 1, 0, bc - g->blk_cap);
    size_t *list = realloc(g->list, (bc + 1) * sizeof *list);
    if (list) g->list = list;
    size_t *succ = realloc(g->succ, sc * sizeof *succ);
    if (succ) g->succ = succ;
    if (!blk || !at || !ip || !deg || !mark || !list || !succ) {
      vxl__cfg_free(g);
      return -ENOMEM;
    }
    g->blk_cap = bc;
    g->succ_cap = sc;
  }
  size_t moved = 0;
  for (size_t i = 0; i < g->nlist; i++) {
    size_t x = g->list[i];
    for (size_t e = g->at[x]; e < g->at[x + 1]; e++)
      if (g->succ[e] == p) g->succ[e] = j, moved++;
    if (g->ipdom[x] == p) g->ipdom[x] = j;
  }
  g->indeg[p] -= moved;
  g->indeg[j] = moved;
  g->indeg[p]++; /* from jb */
  g->blk[j] = jb;
  g->succ[edges] = p;
  g->at[j] = edges;
  g->at[j + 1] = edges + 1;
  g->ipdom[j] = p;
  if (vxl__cfg_rehash(g, n + 1) != 0) { /* maps blocks 0 .. n-1 when it grows */
    vxl__cfg_free(g);
    return -ENOMEM;
  }
  g->n = n + 1;
  vxl__cfg_map(g, jb, j);
  return 0;
}

/* Marks in in[] (n entries, zeroed by the caller) b and every block
 * reachable from b without passing p: the blocks b's branch controls. */
static int vxl__cfg_controlled(const vxl__cfg *g, size_t b, size_t p, unsigned char *in) {
  size_t *stack = malloc((g->n + 1) * sizeof *stack), top = 0;
  if (!stack) return -ENOMEM;
  in[b] = 1;
  stack[top++] = b;
  while (top) {
    size_t x = stack[--top];
    for (size_t s = g->at[x]; s < g->at[x + 1]; s++) {
      size_t y = g->succ[s];
      if (y == p || y >= g->n || in[y]) continue;
      in[y] = 1;
      stack[top++] = y;
    }
  }
  free(stack);
  return 0;
}

/* ---- uniformity analysis ---- */

typedef struct {
  MlirContext ctx;
  int varying_block_ids; /* block ids may differ between a warp's threads */
  vxl__pset vals;        /* divergent values */
  vxl__pset done;        /* divergent cf branches whose sync dependence is marked */
  vxl__ops ops;          /* the function's ops, pre-order */
  /* CFGs of the regions holding divergent cf branches, built on first use
   * and valid until the region's blocks change otherwise than through
   * vxl__cfg_add_join */
  MlirRegion *cfg_region;
  vxl__cfg *cfg;
  size_t ncfg, cfg_cap;
  int oom;
} vxl__div;

static void vxl__cfgs_clear(vxl__div *dv) {
  for (size_t i = 0; i < dv->ncfg; i++)
    vxl__cfg_free(&dv->cfg[i]);
  free(dv->cfg);
  free(dv->cfg_region);
  dv->cfg = NULL;
  dv->cfg_region = NULL;
  dv->ncfg = dv->cfg_cap = 0;
}

/* The CFG of region r, built when not cached; NULL on OOM.  A function has
 * few regions with cf branches, so the list is searched linearly. */
static vxl__cfg *vxl__cfg_of(vxl__div *dv, MlirRegion r) {
  for (size_t i = 0; i < dv->ncfg; i++)
    if (mlirRegionEqual(dv->cfg_region[i], r)) return dv->cfg[i].blk ? &dv->cfg[i] : NULL;
  if (dv->ncfg == dv->cfg_cap) {
    size_t cap = dv->cfg_cap ? 2 * dv->cfg_cap : 4;
    MlirRegion *rs = realloc(dv->cfg_region, cap * sizeof *rs);
    if (rs) dv->cfg_region = rs;
    vxl__cfg *gs = realloc(dv->cfg, cap * sizeof *gs);
    if (gs) dv->cfg = gs;
    if (!rs || !gs) return NULL;
    dv->cfg_cap = cap;
  }
  if (vxl__cfg_build(r, &dv->cfg[dv->ncfg]) != 0) return NULL;
  dv->cfg_region[dv->ncfg] = r;
  return &dv->cfg[dv->ncfg++];
}

/* Forgets the CFG of r (its blocks changed). */
static void vxl__cfg_drop(vxl__div *dv, MlirRegion r) {
  for (size_t i = 0; i < dv->ncfg; i++)
    if (mlirRegionEqual(dv->cfg_region[i], r)) {
      vxl__cfg_free(&dv->cfg[i]);
      dv->cfg[i] = dv->cfg[dv->ncfg - 1];
      dv->cfg_region[i] = dv->cfg_region[dv->ncfg - 1];
      dv->ncfg--;
      return;
    }
}

static int vxl__calls(MlirOperation op, const char *callee) {
  MlirStringRef s = vxl__callee(op);
  return s.length == strlen(callee) && memcmp(s.data, callee, s.length) == 0;
}

static int vxl__divergent(const vxl__div *dv, MlirValue v) { return vxl__pset_has(&dv->vals, v.ptr); }
static int vxl__mark(vxl__div *dv, MlirValue v) { return vxl__pset_add(&dv->vals, v.ptr); }

static MlirBlock vxl__region_block(MlirOperation op, intptr_t r) {
  return mlirRegionGetFirstBlock(mlirOperationGetRegion(op, r));
}

static int vxl__any_operand(const vxl__div *dv, MlirOperation op, intptr_t from, intptr_t to) {
  for (intptr_t i = from; i < to && i < mlirOperationGetNumOperands(op); i++)
    if (vxl__divergent(dv, mlirOperationGetOperand(op, i))) return 1;
  return 0;
}

static int vxl__mark_results(vxl__div *dv, MlirOperation op) {
  int ch = 0;
  for (intptr_t i = 0; i < mlirOperationGetNumResults(op); i++)
    ch |= vxl__mark(dv, mlirOperationGetResult(op, i));
  return ch;
}

static int vxl__mark_args(vxl__div *dv, MlirBlock b, intptr_t from) {
  int ch = 0;
  for (intptr_t i = from; !mlirBlockIsNull(b) && i < mlirBlockGetNumArguments(b); i++)
    ch |= vxl__mark(dv, mlirBlockGetArgument(b, i));
  return ch;
}

/* A cf branch with more than one successor and a divergent selector. */
static int vxl__divergent_cf_branch(const vxl__div *dv, MlirOperation op) {
  return mlirOperationGetNumSuccessors(op) > 1 && vxl__divergent(dv, mlirOperationGetOperand(op, 0));
}

/* Sync dependence of the divergent branch op: the arguments of the blocks
 * it controls and of its reconvergence block, or the results of the region's
 * owner when the paths only meet after the region. */
static int vxl__mark_sync(vxl__div *dv, MlirOperation op) {
  MlirBlock bb = mlirOperationGetBlock(op);
  vxl__cfg *g = vxl__cfg_of(dv, mlirBlockGetParentRegion(bb));
  if (!g) {
    dv->oom = 1;
    return 0;
  }
  size_t b = vxl__cfg_index(g, bb), p = vxl__cfg_ipdom(g, b);
  int ch = 0;
  vxl__cfg_mark(g, b, p);
  for (size_t i = 1; i < g->nlist; i++) /* list[0] is b */
    ch |= vxl__mark_args(dv, g->blk[g->list[i]], 0);
  vxl__cfg_unmark(g);
  if (p < g->n)
    ch |= vxl__mark_args(dv, g->blk[p], 0);
  else
    ch |= vxl__mark_results(dv, mlirBlockGetParentOperation(bb));
  return ch;
}

/* The memref.alloca a memref value views (through casts, subviews and
 * reshapes), or a null value. */
static MlirValue vxl__private_root(MlirValue v) {
  for (int depth = 0; depth < 64 && mlirValueIsAOpResult(v); depth++) {
    MlirOperation def = mlirOpResultGetOwner(v);
    if (vxl__op_is(def, "memref.alloca")) return v;
    static const char *const views[] = {
        "memref.cast",           "memref.subview", "memref.reinterpret_cast", "memref.expand_shape",
        "memref.collapse_shape", "memref.view",    "memref.transpose",        NULL};
    int view = 0;
    for (int i = 0; views[i]; i++)
      view |= vxl__op_is(def, views[i]);
    if (!view || mlirOperationGetNumOperands(def) == 0) break;
    v = mlirOperationGetOperand(def, 0);
  }
  return (MlirValue){NULL};
}

/* Private memory is per thread: one address holds a different value in
 * each thread.  An op that may write a memref.alloca (anything but a load
 * that takes it) with a thread-dependent operand makes the alloca itself
 * divergent, and so, through the generic rule, everything read from it. */
static int vxl__taint_private(vxl__div *dv, MlirOperation op) {
  intptr_t n = mlirOperationGetNumOperands(op);
  if (n < 2 || vxl__op_is(op, "memref.load") || vxl__op_is(op, "affine.load") ||
      !vxl__any_operand(dv, op, 0, n))
    return 0;
  int ch = 0;
  for (intptr_t i = 0; i < n; i++) {
    MlirValue v = mlirOperationGetOperand(op, i);
    if (!mlirTypeIsAMemRef(mlirValueGetType(v))) continue;
    MlirValue root = vxl__private_root(v);
    if (!mlirValueIsNull(root)) ch |= vxl__mark(dv, root);
  }
  return ch;
}

/* One propagation step for op; returns nonzero when the set grew.  There is
 * no scf.for here: scf-for-to-while ran on the whole module before. */
static int vxl__propagate(vxl__div *dv, MlirOperation op) {
  int ch = 0;
  intptr_t nops = mlirOperationGetNumOperands(op);
  MlirStringRef callee = vxl__callee(op);
  if (vxl__calls(op, "__vxl_thread_id") || vxl__calls(op, "__vxl_global_id") ||
      (dv->varying_block_ids && vxl__calls(op, "__vxl_block_id")) ||
      (callee.length > strlen(VXL_LANE_HELPER) &&
       memcmp(callee.data, VXL_LANE_HELPER, strlen(VXL_LANE_HELPER)) == 0))
    return vxl__mark_results(dv, op);
  if (vxl__op_is(op, "scf.if") || vxl__op_is(op, "scf.index_switch")) {
    if (vxl__any_operand(dv, op, 0, 1)) ch |= vxl__mark_results(dv, op);
    return ch;
  }
  if (vxl__op_is(op, "scf.execute_region")) return 0; /* results come from its yields */
  if (vxl__op_is(op, "scf.while")) {
    MlirBlock before = vxl__region_block(op, 0);
    for (intptr_t i = 0; i < nops; i++)
      if (vxl__divergent(dv, mlirOperationGetOperand(op, i)))
        ch |= vxl__mark(dv, mlirBlockGetArgument(before, i));
    return ch;
  }
  if (vxl__op_is(op, "scf.yield")) {
    MlirOperation parent = mlirOperationGetParentOperation(op);
    for (intptr_t i = 0; i < nops; i++) {
      if (!vxl__divergent(dv, mlirOperationGetOperand(op, i))) continue;
      if (vxl__op_is(parent, "scf.while")) /* after-region yield feeds the before-region */
        ch |= vxl__mark(dv, mlirBlockGetArgument(vxl__region_block(parent, 0), i));
      else if (i < mlirOperationGetNumResults(parent))
        ch |= vxl__mark(dv, mlirOperationGetResult(parent, i));
    }
    return ch;
  }
  if (vxl__op_is(op, "scf.condition")) {
    MlirOperation loop = mlirOperationGetParentOperation(op);
    MlirBlock after = vxl__region_block(loop, 1);
    if (vxl__any_operand(dv, op, 0, 1)) return vxl__mark_results(dv, loop) | vxl__mark_args(dv, after, 0);
    for (intptr_t i = 1; i < nops; i++)
      if (vxl__divergent(dv, mlirOperationGetOperand(op, i)))
        ch |= vxl__mark(dv, mlirOperationGetResult(loop, i - 1)) |
              vxl__mark(dv, mlirBlockGetArgument(after, i - 1));
    return ch;
  }
  if (mlirOperationGetNumSuccessors(op) > 0) { /* cf branches */
    if (vxl__any_operand(dv, op, 0, nops))     /* forwarded values: conservatively all arguments */
      for (intptr_t i = 0; i < mlirOperationGetNumSuccessors(op); i++)
        ch |= vxl__mark_args(dv, mlirOperationGetSuccessor(op, i), 0);
    if (vxl__divergent_cf_branch(dv, op) && vxl__pset_add(&dv->done, op.ptr)) ch |= vxl__mark_sync(dv, op);
    return ch;
  }
  ch |= vxl__taint_private(dv, op);
  if (vxl__any_operand(dv, op, 0, nops)) ch |= vxl__mark_results(dv, op);
  return ch;
}

/* (Re)computes the divergent values of fn into dv.  Returns 0 or -ENOMEM. */
static int vxl__analyze(vxl__div *dv, MlirOperation fn, int is_kernel) {
  vxl__pset_clear(&dv->vals);
  vxl__pset_clear(&dv->done);
  vxl__cfgs_clear(dv); /* the rewrites since the last analysis changed blocks */
  free(dv->ops.v);
  dv->ops = (vxl__ops){0};
  if (vxl__collect_ops(fn, &dv->ops) != 0) return -ENOMEM;
  if (!is_kernel) vxl__mark_args(dv, vxl__region_block(fn, 0), 0);
  for (int changed = 1; changed;) {
    changed = 0;
    for (size_t i = 0; i < dv->ops.n; i++)
      changed |= vxl__propagate(dv, dv->ops.v[i]);
  }
  return dv->oom || dv->vals.oom || dv->done.oom ? -ENOMEM : 0;
}

/* ---- rewrites of divergent multi-way branches ---- */

static void vxl__put(MlirBlock blk, MlirOperation before, MlirOperation op) {
  if (mlirOperationIsNull(before))
    mlirBlockAppendOwnedOperation(blk, op);
  else
    mlirBlockInsertOwnedOperationBefore(blk, before, op);
}

/* Creates "%e = arith.cmpi eq, x, (arith.constant value)" in blk before
 * `before` (at its end when before is null). */
static MlirValue vxl__eq_const(MlirContext ctx, MlirLocation loc, MlirBlock blk, MlirOperation before,
                               MlirValue x, MlirAttribute value) {
  MlirType t = mlirValueGetType(x);
  MlirOperationState st = mlirOperationStateGet(mlirStringRefCreateFromCString("arith.constant"), loc);
  MlirNamedAttribute a = vxl__named(ctx, "value", value);
  mlirOperationStateAddAttributes(&st, 1, &a);
  mlirOperationStateAddResults(&st, 1, &t);
  MlirOperation c = mlirOperationCreate(&st);
  vxl__put(blk, before, c);
  MlirValue ops[2] = {x, mlirOperationGetResult(c, 0)};
  MlirType i1 = mlirIntegerTypeGet(ctx, 1);
  st = mlirOperationStateGet(mlirStringRefCreateFromCString("arith.cmpi"), loc);
  a = vxl__named(ctx, "predicate", mlirIntegerAttrGet(mlirIntegerTypeGet(ctx, 64), 0)); /* eq */
  mlirOperationStateAddAttributes(&st, 1, &a);
  mlirOperationStateAddOperands(&st, 2, ops);
  mlirOperationStateAddResults(&st, 1, &i1);
  MlirOperation cmp = mlirOperationCreate(&st);
  vxl__put(blk, before, cmp);
  return mlirOperationGetResult(cmp, 0);
}

/* A divergent scf.index_switch -> scf.if (x == c0) {case 0} else { scf.if
 * (x == c1) {...} else {default} }; the comparisons go before the chain. */
static void vxl__index_switch_to_ifs(MlirContext ctx, MlirOperation sw) {
  MlirLocation loc = mlirOperationGetLocation(sw);
  MlirAttribute cases = mlirOperationGetAttributeByName(sw, mlirStringRefCreateFromCString("cases"));
  intptr_t n = mlirDenseArrayGetNumElements(cases), nres = mlirOperationGetNumResults(sw);
  MlirValue x = mlirOperationGetOperand(sw, 0);
  MlirType idx = mlirValueGetType(x);
  MlirType *rt = malloc((size_t)nres * sizeof *rt + 1);
  MlirValue *conds = malloc((size_t)n * sizeof *conds + 1);
  if (!rt || !conds) {
    free(rt);
    free(conds);
    return;
  }
  for (intptr_t i = 0; i < nres; i++)
    rt[i] = mlirValueGetType(mlirOperationGetResult(sw, i));
  for (intptr_t k = 0; k < n; k++)
    conds[k] = vxl__eq_const(ctx, loc, mlirOperationGetBlock(sw), sw, x,
                             mlirIntegerAttrGet(idx, mlirDenseI64ArrayGetElement(cases, k)));
  /* innermost first: its else region is the default region (region 0) */
  MlirRegion else_r = mlirRegionCreate();
  mlirRegionTakeBody(else_r, mlirOperationGetRegion(sw, 0));
  MlirOperation chain = {NULL};
  for (intptr_t k = n; k-- > 0;) {
    MlirRegion regions[2] = {mlirRegionCreate(), else_r};
    mlirRegionTakeBody(regions[0], mlirOperationGetRegion(sw, 1 + k));
    MlirOperationState st = mlirOperationStateGet(mlirStringRefCreateFromCString("scf.if"), loc);
    mlirOperationStateAddOperands(&st, 1, &conds[k]);
    mlirOperationStateAddResults(&st, nres, rt);
    mlirOperationStateAddOwnedRegions(&st, 2, regions);
    chain = mlirOperationCreate(&st);
    if (k == 0) break;
    /* wrap this if as the else region of the next outer one */
    else_r = mlirRegionCreate();
    MlirBlock blk = mlirBlockCreate(0, NULL, NULL);
    mlirRegionAppendOwnedBlock(else_r, blk);
    mlirBlockAppendOwnedOperation(blk, chain);
    MlirValue *res = malloc((size_t)nres * sizeof *res + 1);
    for (intptr_t i = 0; res && i < nres; i++)
      res[i] = mlirOperationGetResult(chain, i);
    st = mlirOperationStateGet(mlirStringRefCreateFromCString("scf.yield"), loc);
    mlirOperationStateAddOperands(&st, res ? nres : 0, res);
    mlirBlockAppendOwnedOperation(blk, mlirOperationCreate(&st));
    free(res);
  }
  mlirBlockInsertOwnedOperationBefore(mlirOperationGetBlock(sw), sw, chain);
  for (intptr_t i = 0; i < nres; i++)
    mlirValueReplaceAllUsesOfWith(mlirOperationGetResult(sw, i), mlirOperationGetResult(chain, i));
  mlirOperationDestroy(sw);
  free(rt);
  free(conds);
}

/* Creates (does not insert) cf.cond_br cond, ^t(tv), ^f(fv). */
static MlirOperation vxl__cond_br(MlirContext ctx, MlirLocation loc, MlirValue cond, MlirBlock t, intptr_t nt,
                                  const MlirValue *tv, MlirBlock f, intptr_t nf, const MlirValue *fv) {
  MlirValue *ops = malloc((size_t)(1 + nt + nf) * sizeof *ops);
  if (!ops) return (MlirOperation){NULL};
  ops[0] = cond;
  memcpy(ops + 1, tv, (size_t)nt * sizeof *ops);
  memcpy(ops + 1 + nt, fv, (size_t)nf * sizeof *ops);
  int32_t segs[3] = {1, (int32_t)nt, (int32_t)nf};
  MlirBlock succ[2] = {t, f};
  MlirOperationState st = mlirOperationStateGet(mlirStringRefCreateFromCString("cf.cond_br"), loc);
  MlirNamedAttribute a = vxl__named(ctx, "operandSegmentSizes", mlirDenseI32ArrayGet(ctx, 3, segs));
  mlirOperationStateAddAttributes(&st, 1, &a);
  mlirOperationStateAddOperands(&st, 1 + nt + nf, ops);
  mlirOperationStateAddSuccessors(&st, 2, succ);
  MlirOperation op = mlirOperationCreate(&st);
  free(ops);
  return op;
}

/* A divergent cf.switch -> cf.cond_br (x == c0) ^case0, ^t1; ^t1: cf.cond_br
 * (x == c1) ^case1, ^t2; ... the last one falls to the default.  Operands:
 * flag, default operands, case operands (segments in case_operand_segments);
 * successors: default, then the cases. */
static int vxl__cf_switch_to_branches(MlirContext ctx, MlirOperation sw) {
  MlirLocation loc = mlirOperationGetLocation(sw);
  intptr_t ncases = mlirOperationGetNumSuccessors(sw) - 1;
  MlirAttribute seg =
      mlirOperationGetAttributeByName(sw, mlirStringRefCreateFromCString("operandSegmentSizes"));
  MlirAttribute cseg =
      mlirOperationGetAttributeByName(sw, mlirStringRefCreateFromCString("case_operand_segments"));
  MlirAttribute vals = mlirOperationGetAttributeByName(sw, mlirStringRefCreateFromCString("case_values"));
  if (mlirAttributeIsNull(seg) || mlirAttributeIsNull(cseg) || mlirAttributeIsNull(vals)) return -EINVAL;
  intptr_t nops = mlirOperationGetNumOperands(sw);
  MlirValue *ops = malloc((size_t)nops * sizeof *ops);
  if (!ops) return -ENOMEM;
  for (intptr_t i = 0; i < nops; i++)
    ops[i] = mlirOperationGetOperand(sw, i);
  MlirValue x = ops[0];
  intptr_t ndef = mlirDenseI32ArrayGetElement(seg, 1), at = 1 + ndef;
  MlirBlock cur = mlirOperationGetBlock(sw);
  MlirRegion r = mlirBlockGetParentRegion(cur);
  MlirOperation before = sw; /* in the switch's block: before it; in new blocks: at the end */
  for (intptr_t k = 0; k < ncases; k++) {
    intptr_t nk = mlirDenseI32ArrayGetElement(cseg, k);
    uint64_t pos = (uint64_t)k;
    MlirValue e = vxl__eq_const(ctx, loc, cur, before, x, mlirElementsAttrGetValue(vals, 1, &pos));
    MlirBlock next = mlirOperationGetSuccessor(sw, 0);
    intptr_t nf = ndef;
    const MlirValue *fv = ops + 1;
    if (k + 1 < ncases) {
      next = mlirBlockCreate(0, NULL, NULL);
      mlirRegionInsertOwnedBlockAfter(r, cur, next);
      nf = 0;
    }
    MlirOperation br =
        vxl__cond_br(ctx, loc, e, mlirOperationGetSuccessor(sw, 1 + k), nk, ops + at, next, nf, fv);
    if (mlirOperationIsNull(br)) {
      free(ops);
      return -ENOMEM;
    }
    vxl__put(cur, before, br);
    at += nk;
    cur = next;
    before = (MlirOperation){NULL};
  }
  mlirOperationDestroy(sw);
  free(ops);
  return 0;
}

/* Gives region r one exit block when its exits (blocks ending in a
 * terminator without successors) are several ops of one kind: each
 * `T(%v)` becomes `cf.br ^exit(%v)` and ^exit(%a) ends in `T(%a)`.  Exits
 * of different kinds are left alone. */
static int vxl__merge_exits(MlirRegion r) {
  MlirOperation first = {NULL};
  int count = 0;
  for (MlirBlock b = mlirRegionGetFirstBlock(r); !mlirBlockIsNull(b); b = mlirBlockGetNextInRegion(b)) {
    MlirOperation t = mlirBlockGetTerminator(b);
    if (mlirOperationIsNull(t) || mlirOperationGetNumSuccessors(t) > 0) continue;
    if (mlirOperationIsNull(first))
      first = t;
    else if (!mlirIdentifierEqual(mlirOperationGetName(t), mlirOperationGetName(first)))
      return 0;
    if (mlirOperationGetNumRegions(t) > 0 || mlirOperationGetNumResults(t) > 0) return 0;
    count++;
  }
  if (count < 2) return 0;
  MlirLocation loc = mlirOperationGetLocation(first);
  intptr_t n = mlirOperationGetNumOperands(first);
  MlirType *types = malloc((size_t)n * sizeof *types + 1);
  MlirLocation *locs = malloc((size_t)n * sizeof *locs + 1);
  MlirValue *args = malloc((size_t)n * sizeof *args + 1);
  if (!types || !locs || !args) {
    free(types);
    free(locs);
    free(args);
    return -ENOMEM;
  }
  for (intptr_t i = 0; i < n; i++) {
    types[i] = mlirValueGetType(mlirOperationGetOperand(first, i));
    locs[i] = loc;
  }
  MlirBlock exit = mlirBlockCreate(n, types, locs);
  for (intptr_t i = 0; i < n; i++)
    args[i] = mlirBlockGetArgument(exit, i);
  MlirOperationState st = mlirOperationStateGet(mlirIdentifierStr(mlirOperationGetName(first)), loc);
  mlirOperationStateAddOperands(&st, n, args);
  mlirBlockAppendOwnedOperation(exit, mlirOperationCreate(&st));
  for (MlirBlock b = mlirRegionGetFirstBlock(r); !mlirBlockIsNull(b); b = mlirBlockGetNextInRegion(b)) {
    MlirOperation t = mlirBlockGetTerminator(b);
    if (mlirOperationIsNull(t) || mlirOperationGetNumSuccessors(t) > 0) continue;
    for (intptr_t i = 0; i < n; i++)
      args[i] = mlirOperationGetOperand(t, i);
    st = mlirOperationStateGet(mlirStringRefCreateFromCString("cf.br"), mlirOperationGetLocation(t));
    mlirOperationStateAddOperands(&st, n, args);
    mlirOperationStateAddSuccessors(&st, 1, &exit);
    mlirBlockInsertOwnedOperationBefore(b, t, mlirOperationCreate(&st));
    mlirOperationDestroy(t);
  }
  mlirRegionAppendOwnedBlock(r, exit);
  free(types);
  free(locs);
  free(args);
  return 1;
}

/* Rewrites the divergent multi-way branches of dv's ops (see the file
 * comment).  Returns 1 when something changed, 0 when not, -ENOMEM. */
static int vxl__rewrite_multiway(vxl__div *dv) {
  int changed = 0;
  /* regions whose exits get merged; past 64 (never seen) a region keeps its
   * exits and a branch reaching several is refused by vxl__place_cf */
  MlirRegion regions[64];
  size_t nreg = 0;
  for (size_t i = 0; i < dv->ops.n; i++) {
    MlirOperation op = dv->ops.v[i];
    if (vxl__op_is(op, "scf.index_switch") && vxl__divergent(dv, mlirOperationGetOperand(op, 0)) &&
        mlirOperationGetNumRegions(op) > 1) {
      vxl__index_switch_to_ifs(dv->ctx, op);
      changed = 1;
      continue;
    }
    if (!vxl__divergent_cf_branch(dv, op)) continue;
    MlirRegion r = mlirBlockGetParentRegion(mlirOperationGetBlock(op));
    if (vxl__op_is(op, "cf.switch")) {
      int rc = vxl__cf_switch_to_branches(dv->ctx, op);
      if (rc < 0) return rc;
      changed = 1;
    }
    size_t k = 0;
    while (k < nreg && !mlirRegionEqual(regions[k], r))
      k++;
    if (k == nreg && nreg < sizeof regions / sizeof *regions) regions[nreg++] = r;
  }
  for (size_t k = 0; k < nreg; k++) {
    int rc = vxl__merge_exits(regions[k]);
    if (rc < 0) return rc;
    changed |= rc;
  }
  return changed;
}

/* ---- placement ---- */

/* A new, detached block with the argument types of b; its arguments get
 * location loc, or b's arguments' own when loc is null.  A null block on
 * OOM. */
static MlirBlock vxl__block_like(MlirBlock b, MlirLocation loc) {
  intptr_t n = mlirBlockGetNumArguments(b);
  MlirType *types = malloc((size_t)n * sizeof *types + 1);
  MlirLocation *locs = malloc((size_t)n * sizeof *locs + 1);
  MlirBlock nb = {NULL};
  if (types && locs) {
    for (intptr_t i = 0; i < n; i++) {
      MlirValue arg = mlirBlockGetArgument(b, i);
      types[i] = mlirValueGetType(arg);
      locs[i] = mlirLocationIsNull(loc) ? mlirValueGetLocation(arg) : loc;
    }
    nb = mlirBlockCreate(n, types, locs);
  }
  free(types);
  free(locs);
  return nb;
}

/* A block with P's argument types that runs `what` and branches on to P,
 * inserted before P in r (returned; null block on OOM). */
static MlirBlock vxl__block_before(MlirRegion r, MlirBlock pb, MlirLocation loc, MlirOperation what) {
  intptr_t n = mlirBlockGetNumArguments(pb);
  MlirBlock nb = vxl__block_like(pb, loc);
  MlirValue *args = malloc((size_t)n * sizeof *args + 1);
  if (mlirBlockIsNull(nb) || !args) {
    if (!mlirBlockIsNull(nb)) mlirBlockDestroy(nb);
    mlirOperationDestroy(what);
    free(args);
    return (MlirBlock){NULL};
  }
  for (intptr_t i = 0; i < n; i++)
    args[i] = mlirBlockGetArgument(nb, i);
  mlirBlockAppendOwnedOperation(nb, what);
  MlirOperationState st = mlirOperationStateGet(mlirStringRefCreateFromCString("cf.br"), loc);
  mlirOperationStateAddOperands(&st, n, args);
  mlirOperationStateAddSuccessors(&st, 1, &pb);
  mlirBlockAppendOwnedOperation(nb, mlirOperationCreate(&st));
  mlirRegionInsertOwnedBlockBefore(r, pb, nb);
  free(args);
  return nb;
}

/* Points every edge from a block x with from[x] set into block `to` at nb. */
static void vxl__redirect(const vxl__cfg *g, const unsigned char *from, MlirBlock to, MlirBlock nb) {
  for (size_t x = 0; x < g->n; x++) {
    if (!from[x]) continue;
    MlirOperation t = mlirBlockGetTerminator(g->blk[x]);
    for (intptr_t s = 0; s < mlirOperationGetNumSuccessors(t); s++)
      if (mlirBlockEqual(mlirOperationGetSuccessor(t, s), to)) mlirOperationSetSuccessor(t, s, nb);
  }
}

/* The block of region r that holds op (op itself or an ancestor), or a
 * null block when op is not inside r. */
static MlirBlock vxl__block_in(MlirRegion r, MlirOperation op) {
  while (!mlirOperationIsNull(op)) {
    MlirBlock blk = mlirOperationGetBlock(op);
    if (mlirBlockIsNull(blk)) break;
    if (mlirRegionEqual(mlirBlockGetParentRegion(blk), r)) return blk;
    op = mlirBlockGetParentOperation(blk);
  }
  return (MlirBlock){NULL};
}

/* Whether every use of v lies in a block of r marked in set (by index in g). */
static int vxl__uses_within(const vxl__cfg *g, MlirRegion r, MlirValue v, const unsigned char *set) {
  for (MlirOpOperand u = mlirValueGetFirstUse(v); !mlirOpOperandIsNull(u); u = mlirOpOperandGetNextUse(u)) {
    MlirBlock blk = vxl__block_in(r, mlirOpOperandGetOwner(u));
    if (mlirBlockIsNull(blk)) return 0;
    size_t i = vxl__cfg_index(g, blk);
    if (i >= g->n || !set[i]) return 0;
  }
  return 1;
}

/* Points the uses of `old` that lie inside the blocks `clones` (n of them,
 * in region r) at `now`. */
static void vxl__remap_uses(MlirRegion r, MlirValue old, MlirValue now, const MlirBlock *clones, size_t n) {
  MlirOpOperand u = mlirValueGetFirstUse(old);
  while (!mlirOpOperandIsNull(u)) {
    MlirOpOperand next = mlirOpOperandGetNextUse(u);
    MlirOperation owner = mlirOpOperandGetOwner(u);
    MlirBlock blk = vxl__block_in(r, owner);
    for (size_t i = 0; i < n; i++)
      if (mlirBlockEqual(blk, clones[i])) {
        mlirOperationSetOperand(owner, (intptr_t)mlirOpOperandGetOperandNumber(u), now);
        break;
      }
    u = next;
  }
}

/* Gives the blocks the divergent branch in block b controls (in[]) a single
 * entry.  Blocks of in[] other than b that are also entered from outside
 * (a merge block an if-else-if ladder's arms share after block merging, a
 * switch case another case falls into) are cloned, with every block of
 * in[] they reach, and the outside edges go to the clones: the original
 * copies then belong to b's branch, the clones to whatever branch controls
 * the outside edge.  Nothing is cloned when the side-entered blocks reach b
 * again (a loop: vxl__place_cf_loop's case), when a value they define is
 * used outside them (other than through block arguments), or when more than
 * *budget operations would be copied.  Returns 1 when it cloned (the
 * budget shrinks by what was copied), 0 when it did not, -ENOMEM. */
static int vxl__clone_side_entries(const vxl__cfg *g, size_t b, const unsigned char *in, size_t *budget) {
  MlirRegion r = mlirBlockGetParentRegion(g->blk[b]);
  unsigned char *dup = calloc(g->n + 1, 1);
  size_t *stack = malloc((g->n + 1) * sizeof *stack), top = 0;
  if (!dup || !stack) {
    free(dup);
    free(stack);
    return -ENOMEM;
  }
  for (size_t x = 0; x < g->n; x++)
    for (size_t s = g->at[x]; s < g->at[x + 1]; s++) {
      size_t y = g->succ[s];
      if (y < g->n && in[y] && y != b && !in[x] && !dup[y]) dup[y] = 1, stack[top++] = y;
    }
  int rc = top > 0;
  while (top) { /* close over what the side-entered blocks reach inside in[] */
    size_t x = stack[--top];
    for (size_t s = g->at[x]; s < g->at[x + 1]; s++) {
      size_t y = g->succ[s];
      if (y < g->n && in[y] && !dup[y]) dup[y] = 1, stack[top++] = y;
    }
  }
  free(stack);
  size_t nblocks = 0, nops = 0;
  for (size_t x = 0; rc && x < g->n; x++) {
    if (!dup[x]) continue;
    if (x == b) rc = 0;
    nblocks++;
    MlirBlock blk = g->blk[x];
    for (intptr_t a = 0; rc && a < mlirBlockGetNumArguments(blk); a++)
      rc = vxl__uses_within(g, r, mlirBlockGetArgument(blk, a), dup);
    for (MlirOperation op = mlirBlockGetFirstOperation(blk); rc && !mlirOperationIsNull(op);
         op = mlirOperationGetNextInBlock(op)) {
      nops++;
      for (intptr_t i = 0; rc && i < mlirOperationGetNumResults(op); i++)
        rc = vxl__uses_within(g, r, mlirOperationGetResult(op, i), dup);
    }
  }
  if (rc && nops > *budget) rc = 0;
  if (!rc) {
    free(dup);
    return 0;
  }
  *budget -= nops;
  MlirBlock *orig = malloc(nblocks * sizeof *orig), *clone = malloc(nblocks * sizeof *clone);
  if (!orig || !clone) {
    free(dup);
    free(orig);
    free(clone);
    return -ENOMEM;
  }
  size_t k = 0;
  for (size_t x = 0; x < g->n; x++) {
    if (!dup[x]) continue;
    MlirBlock blk = g->blk[x];
    MlirBlock nb = vxl__block_like(blk, (MlirLocation){NULL});
    if (mlirBlockIsNull(nb)) {
      free(dup);
      free(orig);
      free(clone);
      return -ENOMEM;
    }
    for (MlirOperation op = mlirBlockGetFirstOperation(blk); !mlirOperationIsNull(op);
         op = mlirOperationGetNextInBlock(op))
      mlirBlockAppendOwnedOperation(nb, mlirOperationClone(op));
    mlirRegionInsertOwnedBlockAfter(r, blk, nb);
    orig[k] = blk;
    clone[k++] = nb;
  }
  /* uses inside the clones of values the originals define -> the clones' values */
  for (k = 0; k < nblocks; k++) {
    for (intptr_t a = 0; a < mlirBlockGetNumArguments(orig[k]); a++)
      vxl__remap_uses(r, mlirBlockGetArgument(orig[k], a), mlirBlockGetArgument(clone[k], a), clone, nblocks);
    MlirOperation oc = mlirBlockGetFirstOperation(clone[k]);
    for (MlirOperation op = mlirBlockGetFirstOperation(orig[k]); !mlirOperationIsNull(op);
         op = mlirOperationGetNextInBlock(op), oc = mlirOperationGetNextInBlock(oc))
      for (intptr_t i = 0; i < mlirOperationGetNumResults(op); i++)
        vxl__remap_uses(r, mlirOperationGetResult(op, i), mlirOperationGetResult(oc, i), clone, nblocks);
  }
  /* edges: clones reach clones; outside predecessors reach clones */
  for (k = 0; k < nblocks; k++) {
    MlirOperation t = mlirBlockGetTerminator(clone[k]);
    for (intptr_t s = 0; !mlirOperationIsNull(t) && s < mlirOperationGetNumSuccessors(t); s++)
      for (size_t j = 0; j < nblocks; j++)
        if (mlirBlockEqual(mlirOperationGetSuccessor(t, s), orig[j]))
          mlirOperationSetSuccessor(t, s, clone[j]);
  }
  for (size_t x = 0; x < g->n; x++) {
    if (in[x]) continue;
    MlirOperation t = mlirBlockGetTerminator(g->blk[x]);
    for (intptr_t s = 0; !mlirOperationIsNull(t) && s < mlirOperationGetNumSuccessors(t); s++)
      for (size_t j = 0; j < nblocks; j++)
        if (mlirBlockEqual(mlirOperationGetSuccessor(t, s), orig[j]))
          mlirOperationSetSuccessor(t, s, clone[j]);
  }
  free(dup);
  free(orig);
  free(clone);
  return 1;
}

/* The divergent cf.cond_br `br` in block b of g as the exit test of a cf
 * loop (the blocks that reach b and that b reaches), the way scf.while is
 * handled: a new preheader reads the active-thread mask, and
 * __vxl_pred(stay, mask) right before the branch masks off the threads
 * that leave.  Needs the loop's only exit edge to be br's and one header
 * every entry edge goes to, so the masked-off threads all wait at that exit
 * and the preheader dominates br.  Returns 1 when placed, 0 when the shape
 * does not fit, -ENOMEM. */
static int vxl__place_cf_loop(MlirContext ctx, MlirOperation br, const vxl__cfg *g, size_t b) {
  if (!vxl__op_is(br, "cf.cond_br")) return 0;
  unsigned char *fwd = calloc(g->n + 1, 1), *loop = calloc(g->n + 1, 1);
  if (!fwd || !loop) {
    free(fwd);
    free(loop);
    return -ENOMEM;
  }
  vxl__cfg_controlled(g, b, SIZE_MAX, fwd); /* b and what it reaches */
  unsigned char *again = calloc(g->n + 1, 1);
  if (!again) {
    free(fwd);
    free(loop);
    return -ENOMEM;
  }
  for (size_t x = 0; x < g->n; x++) /* ... that reaches b again */
    if (fwd[x] && x != b) {
      memset(again, 0, g->n + 1);
      vxl__cfg_controlled(g, x, SIZE_MAX, again);
      loop[x] = again[b];
    }
  free(again);
  for (size_t s = g->at[b]; s < g->at[b + 1]; s++)
    if (g->succ[s] == b || (g->succ[s] < g->n && loop[g->succ[s]])) loop[b] = 1;
  int ok = loop[b];
  size_t header = SIZE_MAX, exits = 0;
  for (size_t x = 0; ok && x < g->n; x++)
    for (size_t s = g->at[x]; s < g->at[x + 1]; s++) {
      size_t y = g->succ[s];
      int yin = y < g->n && loop[y];
      if (loop[x] && !yin) exits += x == b ? 1 : 2; /* only br may leave */
      if (!loop[x] && yin) {
        if (header != SIZE_MAX && header != y) ok = 0;
        header = y;
      }
    }
  ok = ok && exits == 1 && header != SIZE_MAX;
  if (ok) {
    MlirLocation loc = mlirOperationGetLocation(br);
    MlirType i32 = mlirIntegerTypeGet(ctx, 32);
    MlirOperation mask = vxl__func_call(ctx, loc, "__vxl_active_threads", 0, NULL, 1, &i32);
    MlirValue m = mlirOperationGetResult(mask, 0);
    MlirBlock hb = g->blk[header];
    MlirBlock pre = vxl__block_before(mlirBlockGetParentRegion(hb), hb, loc, mask);
    if (mlirBlockIsNull(pre)) {
      free(fwd);
      free(loop);
      return -ENOMEM;
    }
    for (size_t x = 0; x < g->n; x++)
      fwd[x] = !loop[x];
    vxl__redirect(g, fwd, hb, pre);
    /* stay = the condition that keeps a thread in the loop */
    MlirValue stay = mlirOperationGetOperand(br, 0);
    MlirBlock bb = mlirOperationGetBlock(br);
    if (!loop[vxl__cfg_index(g, mlirOperationGetSuccessor(br, 0))]) {
      MlirAttribute one = mlirIntegerAttrGet(mlirIntegerTypeGet(ctx, 1), 1);
      MlirOperationState st = mlirOperationStateGet(mlirStringRefCreateFromCString("arith.constant"), loc);
      MlirNamedAttribute a = vxl__named(ctx, "value", one);
      MlirType i1 = mlirIntegerTypeGet(ctx, 1);
      mlirOperationStateAddAttributes(&st, 1, &a);
      mlirOperationStateAddResults(&st, 1, &i1);
      MlirOperation c = mlirOperationCreate(&st);
      mlirBlockInsertOwnedOperationBefore(bb, br, c);
      MlirValue xo[2] = {stay, mlirOperationGetResult(c, 0)};
      st = mlirOperationStateGet(mlirStringRefCreateFromCString("arith.xori"), loc);
      mlirOperationStateAddOperands(&st, 2, xo);
      mlirOperationStateAddResults(&st, 1, &i1);
      MlirOperation x = mlirOperationCreate(&st);
      mlirBlockInsertOwnedOperationBefore(bb, br, x);
      stay = mlirOperationGetResult(x, 0);
    }
    MlirValue args[2] = {stay, m};
    mlirBlockInsertOwnedOperationBefore(bb, br, vxl__func_call(ctx, loc, "__vxl_pred", 2, args, 0, NULL));
  }
  free(fwd);
  free(loop);
  return ok;
}

/* Why the divergent branch in block b of g cannot be placed, as the user
 * would say it: printed after "unsupported: thread-dependent branch". */
static const char *vxl__refusal(const vxl__cfg *g, size_t b, size_t p) {
  if (p == SIZE_MAX) return " whose paths never meet again (a path without an exit)";
  unsigned char *fwd = calloc(g->n + 1, 1);
  int loop = 0;
  if (fwd) {
    vxl__cfg_controlled(g, b, SIZE_MAX, fwd);
    for (size_t x = 0; x < g->n && !loop; x++)
      for (size_t s = g->at[x]; s < g->at[x + 1]; s++)
        if (fwd[x] && g->succ[s] == b) loop = 1;
    free(fwd);
  }
  if (loop)
    return " that leaves a loop which has other exits or entries (a `break`, `return` or `goto` out of a "
           "loop "
           "whose trip count differs between threads): vx_pred needs a loop with one entry and one exit; "
           "keep the thread-dependent test in the loop condition";
  return " into a region entered from elsewhere too, that could not be given a single entry";
}

/* Split before the divergent cf.cond_br `br`, join on the edges from the
 * blocks it controls into its immediate post-dominator; a loop exit test
 * gets vx_pred instead (vxl__place_cf_loop).  Blocks also entered from
 * outside what br controls are first cloned (vxl__clone_side_entries,
 * within *budget operations); the function must then be analysed again.
 * Counts what it placed in *splits / *preds.  Returns 0 when placed, 1 when
 * it cloned blocks instead, -EINVAL (unstructured: diagnostic in d) or
 * -ENOMEM. */
static int vxl__place_cf(vxl__div *dv, MlirOperation br, vxl__diags *d, unsigned *splits, unsigned *preds,
                         size_t *budget) {
  MlirContext ctx = dv->ctx;
  MlirBlock bb = mlirOperationGetBlock(br);
  MlirRegion r = mlirBlockGetParentRegion(bb);
  MlirLocation loc = mlirOperationGetLocation(br);
  vxl__cfg *g = vxl__cfg_of(dv, r);
  if (!g) return -ENOMEM;
  size_t b = vxl__cfg_index(g, bb), p = vxl__cfg_ipdom(g, b);
  int rc = 0;
  /* B must be the only way into what it controls, and no way back to B:
   * every edge into a controlled block but B comes from a controlled
   * block, none into B does (counted against the blocks' in-degrees) */
  int structured = p < g->n;
  if (structured) {
    vxl__cfg_mark(g, b, p);
    size_t inner = 0, into_b = 0, indeg = 0;
    for (size_t i = 0; i < g->nlist; i++) {
      size_t x = g->list[i];
      if (x != b) indeg += g->indeg[x];
      for (size_t s = g->at[x]; s < g->at[x + 1]; s++) {
        size_t y = g->succ[s];
        if (y < g->n && g->mark[y]) y == b ? into_b++ : inner++;
      }
    }
    structured = into_b == 0 && inner == indeg;
  }
  const unsigned char *in = g->mark; /* the controlled blocks, when p < n */
  if (!structured && p < g->n) {
    rc = vxl__clone_side_entries(g, b, in, budget);
    if (rc != 0) {
      vxl__cfg_drop(dv, r);
      return rc;
    }
  }
  if (rc == 0 && !structured) {
    vxl__cfg_unmark(g);
    rc = vxl__place_cf_loop(ctx, br, g, b);
    if (rc != 0) {
      vxl__cfg_drop(dv, r);
      if (rc < 0) return rc;
      (*preds)++;
      return 0;
    }
    vxl__diag_at(d, loc, "unsupported: thread-dependent branch%s", vxl__refusal(g, b, p));
    rc = -EINVAL;
  }
  if (rc == 0) {
    MlirType i32 = mlirIntegerTypeGet(ctx, 32);
    MlirValue cond = mlirOperationGetOperand(br, 0);
    MlirOperation split = vxl__func_call(ctx, loc, "__vxl_split", 1, &cond, 1, &i32);
    mlirBlockInsertOwnedOperationBefore(bb, br, split);
    MlirValue sp = mlirOperationGetResult(split, 0);
    /* ^join(args of P): __vxl_join(%sp); cf.br ^P(args) */
    MlirOperation join = vxl__func_call(ctx, loc, "__vxl_join", 1, &sp, 0, NULL);
    MlirBlock jb = vxl__block_before(r, g->blk[p], loc, join);
    if (mlirBlockIsNull(jb)) {
      rc = -ENOMEM;
    } else {
      MlirBlock pb = g->blk[p];
      for (size_t i = 0; i < g->nlist; i++) { /* edges from controlled blocks into P -> jb */
        MlirOperation t = mlirBlockGetTerminator(g->blk[g->list[i]]);
        for (intptr_t k = 0; k < mlirOperationGetNumSuccessors(t); k++)
          if (mlirBlockEqual(mlirOperationGetSuccessor(t, k), pb)) mlirOperationSetSuccessor(t, k, jb);
      }
      (*splits)++;
      if (vxl__cfg_add_join(g, jb, p) != 0) { /* g is freed: forget it */
        vxl__cfg_drop(dv, r);
        return -ENOMEM;
      }
    }
  }
  if (g->nlist) vxl__cfg_unmark(g);
  return rc;
}

int vxl__insert_divergence(MlirContext ctx, MlirOperation fn, int is_kernel, int varying_block_ids,
                           vxl__diags *d, unsigned *splits, unsigned *preds) {
  vxl__div dv = {.ctx = ctx, .varying_block_ids = varying_block_ids};
  vxl__pset placed = {0}; /* branches already given split/join or pred */
  size_t budget = VXL__CLONE_BUDGET;
  MlirType i32 = mlirIntegerTypeGet(ctx, 32);
  int rc;
again:
  rc = vxl__analyze(&dv, fn, is_kernel);
  if (rc == 0) rc = vxl__rewrite_multiway(&dv);
  if (rc > 0) rc = vxl__analyze(&dv, fn, is_kernel); /* the rewrites made new branches */
  for (size_t i = 0; rc == 0 && i < dv.ops.n; i++) {
    MlirOperation op = dv.ops.v[i];
    MlirLocation loc = mlirOperationGetLocation(op);
    if (vxl__pset_has(&placed, op.ptr)) continue;
    if (vxl__op_is(op, "scf.if") && vxl__divergent(&dv, mlirOperationGetOperand(op, 0))) {
      MlirBlock blk = mlirOperationGetBlock(op);
      MlirValue cond = mlirOperationGetOperand(op, 0);
      MlirOperation split = vxl__func_call(ctx, loc, "__vxl_split", 1, &cond, 1, &i32);
      mlirBlockInsertOwnedOperationBefore(blk, op, split);
      MlirValue sp = mlirOperationGetResult(split, 0);
      mlirBlockInsertOwnedOperationAfter(blk, op, vxl__func_call(ctx, loc, "__vxl_join", 1, &sp, 0, NULL));
      vxl__pset_add(&placed, op.ptr);
      (*splits)++;
    } else if (vxl__op_is(op, "scf.condition") && vxl__divergent(&dv, mlirOperationGetOperand(op, 0))) {
      MlirOperation loop = mlirOperationGetParentOperation(op);
      MlirOperation mask = vxl__func_call(ctx, loc, "__vxl_active_threads", 0, NULL, 1, &i32);
      mlirBlockInsertOwnedOperationBefore(mlirOperationGetBlock(loop), loop, mask);
      MlirValue args[2] = {mlirOperationGetOperand(op, 0), mlirOperationGetResult(mask, 0)};
      mlirBlockInsertOwnedOperationBefore(mlirOperationGetBlock(op), op,
                                          vxl__func_call(ctx, loc, "__vxl_pred", 2, args, 0, NULL));
      vxl__pset_add(&placed, op.ptr);
      (*preds)++;
    } else if (vxl__divergent_cf_branch(&dv, op)) {
      rc = vxl__place_cf(&dv, op, d, splits, preds, &budget);
      if (rc == 1) goto again; /* blocks were cloned: analyse the new ones */
      vxl__pset_add(&placed, op.ptr);
    }
  }
  if (placed.oom && rc == 0) rc = -ENOMEM;
  vxl__pset_clear(&placed);
  vxl__pset_clear(&dv.vals);
  vxl__pset_clear(&dv.done);
  vxl__cfgs_clear(&dv);
  free(dv.ops.v);
  return rc;
}
