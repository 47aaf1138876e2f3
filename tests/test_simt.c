/*
 * test_simt.c - the lockstep SIMT emulator (runtime/simt) on hand-written
 * device programs (tests/simt/programs.c): what it reports where hardware
 * would abort, and the SIMT semantics of split/join, pred, barriers, the
 * CSRs and vx_spawn_threads' thread layout.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "runtime/simt/vxs.h"
#include "vxt.h"

#define ARGS 0x40000000u

typedef struct {
  uint32_t which, grid, block, pad;
  int32_t out[4096];
} args_t;

static uint8_t *image;
static size_t image_size;
static void setup(void) {
  image = (uint8_t *)vxt_read_file(VXT_SIMT_PROGRAMS, &image_size);
  cr_assert_not_null(image, "cannot read %s", VXT_SIMT_PROGRAMS);
}
static void teardown(void) { free(image); }
TestSuite(simt, .init = setup, .fini = teardown, .timeout = 120);

/* Runs case `which` with grid x block threads on a device of `lanes`
 * threads per warp (warps: enough for two blocks), filling *out.  Returns
 * vxs_run's result; *rep gets the report. */
static int run_case_ipdom(uint32_t which, uint32_t grid, uint32_t block, uint32_t lanes,
                          vxs_split_policy policy, uint32_t ipdom_depth, args_t *out, vxs_report *rep) {
  vxs_config c;
  vxs_config_default(&c);
  c.threads_per_warp = lanes;
  uint32_t wpg = (block + lanes - 1) / lanes;
  c.warps_per_core = wpg * 2 < 4 ? 4 : wpg * 2;
  c.barriers = c.warps_per_core;
  c.split_policy = policy;
  c.max_steps = 2000000;
  c.ipdom_depth = ipdom_depth;
  vxs_device *d = NULL;
  cr_assert_eq(vxs_device_create(&c, &d), 0);
  const char *why = NULL;
  cr_assert_eq(vxs_load_elf(d, image, image_size, &why), 0, "%s", why);
  cr_assert_eq(vxs_mem_map(d, ARGS, (sizeof(args_t) + 4095) & ~4095u), 0);
  memset(out, 0, sizeof *out);
  out->which = which, out->grid = grid, out->block = block;
  cr_assert_eq(vxs_mem_write(d, ARGS, out, sizeof *out), 0);
  int rc = vxs_run(d, ARGS, rep);
  cr_assert_eq(vxs_mem_read(d, ARGS, out, sizeof *out), 0);
  vxs_device_destroy(d);
  return rc;
}

static int run_case(uint32_t which, uint32_t grid, uint32_t block, uint32_t lanes, vxs_split_policy policy,
                    args_t *out, vxs_report *rep) {
  return run_case_ipdom(which, grid, block, lanes, policy, 0, out, rep);
}

static const vxs_split_policy policies[] = {VXS_SPLIT_SMALLER, VXS_SPLIT_LARGER, VXS_SPLIT_TAKEN,
                                            VXS_SPLIT_NOT_TAKEN};

/* mscratch is one writable register per core: every thread of a core
 * first reads the argument buffer (the first warp to get there) or what
 * another warp of its core wrote, and after the barrier reads its own
 * core's value; two cores, warps of 4, blocks of 8. */
Test(simt, mscratch_is_a_writable_register_of_each_core) {
  vxs_config c;
  vxs_config_default(&c);
  c.cores = 2, c.warps_per_core = 4, c.max_steps = 2000000;
  vxs_device *d = NULL;
  cr_assert_eq(vxs_device_create(&c, &d), 0);
  const char *why = NULL;
  cr_assert_eq(vxs_load_elf(d, image, image_size, &why), 0, "%s", why);
  cr_assert_eq(vxs_mem_map(d, ARGS, (sizeof(args_t) + 4095) & ~4095u), 0);
  static args_t out;
  memset(&out, 0, sizeof out);
  out.which = 12, out.grid = 4, out.block = 8;
  cr_assert_eq(vxs_mem_write(d, ARGS, &out, sizeof out), 0);
  vxs_report rep;
  cr_assert_eq(vxs_run(d, ARGS, &rep), 0, "%s", rep.error);
  cr_assert_eq(vxs_mem_read(d, ARGS, &out, sizeof out), 0);
  vxs_device_destroy(d);
  unsigned saw_args[2] = {0, 0};
  for (uint32_t g = 0; g < 32; g++) {
    uint32_t before = (uint32_t)out.out[3 * g], after = (uint32_t)out.out[3 * g + 1];
    uint32_t core = (uint32_t)out.out[3 * g + 2];
    cr_assert_lt(core, 2u);
    cr_assert_eq(after, 0x5000u + core, "thread %u: %#x", g, after);
    cr_assert(before == ARGS || before == 0x5000u + core, "thread %u read %#x first", g, before);
    saw_args[core] += before == ARGS;
  }
  cr_assert(saw_args[0] && saw_args[1], "each core's first writer read the argument buffer");
}

/* A warp started by wspawn keeps the registers it held: start code of
 * upstream's 2.x shape sets sp and tp in one wspawn and pushes onto that
 * stack in the next (tests/simt/wspawn_start.S).  Every hart of 4 warps
 * of 4 threads, on 2 cores, records its sp and tp; a second run on the
 * same device starts from zeroed registers again and does the same. */
Test(simt, a_warp_started_by_wspawn_keeps_its_registers) {
  size_t size;
  uint8_t *elf = (uint8_t *)vxt_read_file(VXT_WSPAWN_START, &size);
  cr_assert_not_null(elf);
  vxs_config c;
  vxs_config_default(&c);
  c.cores = 2;
  c.max_steps = 100000;
  vxs_device *d = NULL;
  cr_assert_eq(vxs_device_create(&c, &d), 0);
  const char *why = NULL;
  cr_assert_eq(vxs_load_elf(d, elf, size, &why), 0, "%s", why);
  cr_assert_eq(vxs_mem_map(d, ARGS, 4096), 0);
  for (int run = 0; run < 2; run++) {
    uint32_t regs[2 * 32];
    memset(regs, 0, sizeof regs);
    cr_assert_eq(vxs_mem_write(d, ARGS, regs, sizeof regs), 0);
    vxs_report rep;
    cr_assert_eq(vxs_run(d, ARGS, &rep), 0, "run %d: %s", run, rep.error);
    cr_assert_eq(vxs_mem_read(d, ARGS, regs, sizeof regs), 0);
    for (uint32_t h = 0; h < 32; h++) {
      uint32_t sp = VXS_STACK_TOP - (h << VXS_STACK_LOG2_SIZE);
      cr_assert_eq(regs[2 * h], sp, "run %d hart %u: sp %#x", run, h, regs[2 * h]);
      cr_assert_eq(regs[2 * h + 1], sp - VXS_STACK_SIZE, "run %d hart %u: tp %#x", run, h, regs[2 * h + 1]);
    }
  }
  vxs_device_destroy(d);
  free(elf);
}

Test(simt, a_divergent_branch_without_a_split_is_an_error_at_its_pc) {
  args_t a;
  vxs_report rep;
  cr_assert_eq(run_case(0, 1, 8, 4, VXS_SPLIT_SMALLER, &a, &rep), VXS_EDEVICE);
  cr_assert(strstr(rep.error, "divergent branch without a split: threads 0x5 go to"), "%s", rep.error);
  cr_assert(strstr(rep.error, "(divergent_branch+0x"), "the report names the function: %s", rep.error);
  /* and, as the programs have line tables, the source line of the branch */
  cr_assert(strstr(rep.error, "programs.c:23:3"), "the report names the source line: %s", rep.error);
  /* one thread per warp cannot diverge: the same program is fine */
  cr_assert_eq(run_case(0, 1, 8, 1, VXS_SPLIT_SMALLER, &a, &rep), 0, "%s", rep.error);
  for (int g = 0; g < 8; g++)
    cr_assert_eq(a.out[g], g & 1 ? 1 : 2);
}

Test(simt, split_and_join_run_both_sides_under_every_policy) {
  for (unsigned p = 0; p < 4; p++)
    for (uint32_t lanes = 1; lanes <= 32; lanes *= 2) {
      args_t a;
      vxs_report rep;
      cr_assert_eq(run_case(1, 3, 13, lanes, policies[p], &a, &rep), 0, "policy %u, %u lanes: %s", p, lanes,
                   rep.error);
      for (int g = 0; g < 39; g++)
        cr_assert_eq(a.out[g], g & 1 ? 1 : 2, "policy %u lanes %u out[%d] = %d", p, lanes, g, a.out[g]);
      if (lanes == 1)
        cr_assert_eq(rep.splits_divergent, 0);
      else
        cr_assert_gt(rep.splits_divergent, 0, "lanes %u", lanes);
      cr_assert_leq(rep.max_ipdom_depth, 1);
    }
}

Test(simt, a_join_without_its_split_is_an_error) {
  args_t a;
  vxs_report rep;
  cr_assert_eq(run_case(2, 1, 4, 4, VXS_SPLIT_SMALLER, &a, &rep), VXS_EDEVICE);
  cr_assert(strstr(rep.error, "join of split depth 5 with IPDOM depth 0"), "%s", rep.error);
}

Test(simt, pred_masks_threads_off_and_restores_the_mask_when_none_is_left) {
  for (uint32_t lanes = 1; lanes <= 32; lanes *= 2) {
    args_t a;
    vxs_report rep;
    cr_assert_eq(run_case(3, 2, 21, lanes, VXS_SPLIT_SMALLER, &a, &rep), 0, "%u lanes: %s", lanes, rep.error);
    for (int g = 0; g < 42; g++)
      cr_assert_eq(a.out[g], g * (g + 1) / 2, "lanes %u out[%d] = %d", lanes, g, a.out[g]);
  }
}

Test(simt, a_barrier_only_some_warps_reach_is_a_deadlock) {
  args_t a;
  vxs_report rep;
  cr_assert_eq(run_case(4, 1, 8, 4, VXS_SPLIT_SMALLER, &a, &rep), VXS_EDEVICE);
  cr_assert(strstr(rep.error, "deadlock: no running warp can release barrier"), "%s", rep.error);
}

Test(simt, csrs_and_the_thread_layout_of_vx_spawn_threads) {
  args_t a;
  vxs_report rep;
  /* 2 blocks of 6 threads on 4-thread warps: each block takes 2 warps, the
   * second with 2 threads; a core holds 2 blocks (4 warps) */
  cr_assert_eq(run_case(5, 2, 6, 4, VXS_SPLIT_SMALLER, &a, &rep), 0, "%s", rep.error);
  for (uint32_t g = 0; g < 12; g++) {
    const int32_t *o = &a.out[8 * g];
    uint32_t block = g / 6, t = g % 6, warp = block * 2 + t / 4, lane = t % 4;
    cr_assert_eq(o[0], (int32_t)lane, "thread %u lane", g);
    cr_assert_eq(o[1], (int32_t)warp, "thread %u warp", g);
    cr_assert_eq(o[2], 0);
    cr_assert_eq(o[3], t / 4 ? 0x3 : 0xF, "thread %u active mask 0x%x", g, o[3]);
    cr_assert_eq(o[4], 4);
    cr_assert_eq(o[5], 4);
    cr_assert_eq((uint32_t)o[6], VXS_LOCAL_MEM_BASE);
    cr_assert_eq(o[7], (int32_t)(warp * 4 + lane), "hart id");
  }
}

Test(simt, unjoined_splits_overflow_the_ipdom_stack) {
  args_t a;
  vxs_report rep;
  cr_assert_eq(run_case_ipdom(6, 1, 32, 32, VXS_SPLIT_SMALLER, 3, &a, &rep), VXS_EDEVICE);
  cr_assert(strstr(rep.error, "IPDOM stack overflow (3 entries)"), "%s", rep.error);
  cr_assert_eq(rep.max_ipdom_depth, 3);
}

Test(simt, a_kernel_that_never_ends_stops_at_the_step_limit) {
  args_t a;
  vxs_report rep;
  cr_assert_eq(run_case(7, 1, 4, 4, VXS_SPLIT_SMALLER, &a, &rep), VXS_EDEVICE);
  cr_assert(strstr(rep.error, "step limit reached (2000000 warp instructions)"), "%s", rep.error);
}

Test(simt, a_store_to_unmapped_memory_is_reported) {
  args_t a;
  vxs_report rep;
  cr_assert_eq(run_case(8, 1, 4, 4, VXS_SPLIT_SMALLER, &a, &rep), VXS_EDEVICE);
  cr_assert(strstr(rep.error, "thread 0: Invalid memory write (UC_ERR_WRITE_UNMAPPED) at pc"), "%s",
            rep.error);
  cr_assert(strstr(rep.error, "(bad_store+0x"), "%s", rep.error);
}

Test(simt, a_write_to_a_read_only_csr_fails_the_run) {
  args_t a;
  vxs_report rep;
  cr_assert_eq(run_case(11, 1, 4, 4, VXS_SPLIT_SMALLER, &a, &rep), VXS_EDEVICE);
  cr_assert(strstr(rep.error, "write to read-only CSR 0xcc0 at pc"), "%s", rep.error);
  cr_assert(strstr(rep.error, "(csr_write+0x"), "%s", rep.error);
}

Test(simt, barriers_count_warps_and_order_local_memory) {
  for (uint32_t lanes = 1; lanes <= 32; lanes *= 2) {
    args_t a;
    vxs_report rep;
    cr_assert_eq(run_case(9, 5, 37, lanes, VXS_SPLIT_SMALLER, &a, &rep), 0, "%u lanes: %s", lanes, rep.error);
    for (int g = 0; g < 5 * 37; g++) {
      int b = g / 37, t = g % 37;
      cr_assert_eq(a.out[g], (b * 37 + 36 - t) * 3, "lanes %u out[%d] = %d", lanes, g, a.out[g]);
    }
  }
}

Test(simt, bad_images_and_configurations_are_refused) {
  vxs_config c;
  vxs_config_default(&c);
  c.threads_per_warp = 33;
  vxs_device *d = NULL;
  cr_assert_eq(vxs_device_create(&c, &d), -EINVAL);
  vxs_config_default(&c);
  c.warps_per_core = 1024, c.threads_per_warp = 32;
  cr_assert_eq(vxs_device_create(&c, &d), -EINVAL, "more harts than VXS_MAX_HARTS");
  cr_assert_eq(vxs_device_create(NULL, &d), 0);
  const char *why = NULL;
  cr_assert_eq(vxs_load_elf(d, "garbage", 7, &why), -EINVAL);
  cr_assert_str_eq(why, "not an ELF file");
  uint8_t *copy = malloc(image_size);
  memcpy(copy, image, image_size);
  copy[18] = 62; /* e_machine = x86-64 */
  cr_assert_eq(vxs_load_elf(d, copy, image_size, &why), -EINVAL);
  cr_assert_str_eq(why, "not an ELF32 RISC-V executable (an RV32 device)");
  free(copy);
  vxs_report rep;
  cr_assert_eq(vxs_run(d, 0, &rep), -EINVAL, "no image loaded");
  cr_assert_eq(vxs_mem_map(d, 0x1234, 4096), -EINVAL, "misaligned");
  cr_assert_eq(vxs_mem_map(d, VXS_LOCAL_MEM_BASE, 4096), -EINVAL, "overlaps local memory");
  cr_assert_eq(vxs_mem_map(d, 0xFFFFF000u, 8192), -EINVAL, "past an RV32 device's 4 GiB");
  cr_assert_eq(vxs_mem_map(d, 0x180000000ull, 4096), -EINVAL, "past an RV32 device's 4 GiB");
  vxs_device_destroy(d);
  /* an RV64 device takes ELF64 images only; no other register width; its
   * memory goes past 4 GiB (upstream's RV64 image and stacks) to 2^48 */
  vxs_config_default(&c);
  c.xlen = 64;
  cr_assert_eq(vxs_device_create(&c, &d), 0);
  cr_assert_eq(vxs_load_elf(d, image, image_size, &why), -EINVAL);
  cr_assert_str_eq(why, "not an ELF64 RISC-V executable (an RV64 device)");
  cr_assert_eq(vxs_mem_map(d, 0x1FFFEF000ull, 4096), 0);
  uint32_t word = 0x12345678u, back = 0;
  cr_assert_eq(vxs_mem_write(d, 0x1FFFEFFFCull, &word, 4), 0);
  cr_assert_eq(vxs_mem_read(d, 0x1FFFEFFFCull, &back, 4), 0);
  cr_assert_eq(back, word);
  cr_assert_eq(vxs_mem_read(d, 0xFFFEFFFCull, &back, 4), -EFAULT, "no alias 4 GiB below");
  cr_assert_eq(vxs_mem_map(d, (1ull << 48) - 4096, 8192), -EINVAL, "past 2^48");
  vxs_device_destroy(d);
  c.xlen = 48;
  cr_assert_eq(vxs_device_create(&c, &d), -EINVAL);
}

Test(simt, votes_over_the_active_threads) {
  for (uint32_t lanes = 1; lanes <= 8; lanes *= 2) {
    args_t a;
    vxs_report rep;
    /* blocks of 6: the second warp of a block is partial when lanes is 4 */
    cr_assert_eq(run_case(10, 2, 6, lanes, VXS_SPLIT_SMALLER, &a, &rep), 0, "%s", rep.error);
    for (uint32_t g = 0; g < 12; g++) {
      uint32_t t = g % 6, first = t - t % lanes, n = 6 - first < lanes ? 6 - first : lanes;
      uint32_t full = n == 32 ? 0xFFFFFFFFu : (1u << n) - 1, odd = full & 0xAAAAAAAAu, low = full & 3u;
      const int32_t *o = &a.out[8 * g];
      cr_assert_eq(o[0], odd == full, "lanes %u g %u all", lanes, g);
      cr_assert_eq(o[1], odd != 0, "lanes %u g %u any", lanes, g);
      cr_assert_eq(o[2], odd == 0 || odd == full, "lanes %u g %u uni", lanes, g);
      cr_assert_eq((uint32_t)o[3], odd, "lanes %u g %u ballot", lanes, g);
      cr_assert_eq(o[4], 1);
      cr_assert_eq(o[5], 0);
      cr_assert_eq(o[6], 1);
      cr_assert_eq((uint32_t)o[7], low, "lanes %u g %u ballot of lane < 2", lanes, g);
    }
  }
}

/* ---- Vortex 3.0: the hardware scheduler (vxs_run_kmu) ---- */

/* Runs kmu_programs.c's case `which` for launch l on a device of `lanes`
 * threads per warp, `warps` warps per core and `cores` cores.  Returns
 * vxs_run_kmu's result; *out and *rep get what the run left. */
static int run_kmu(uint32_t which, const vxs_kmu_launch *l, uint32_t lanes, uint32_t warps, uint32_t cores,
                   args_t *out, vxs_report *rep) {
  size_t size = 0;
  uint8_t *elf = (uint8_t *)vxt_read_file(VXT_KMU_PROGRAMS, &size);
  cr_assert_not_null(elf, "cannot read %s", VXT_KMU_PROGRAMS);
  vxs_config c;
  vxs_config_default(&c);
  c.threads_per_warp = lanes, c.warps_per_core = warps, c.cores = cores, c.barriers = warps;
  c.max_steps = 2000000;
  vxs_device *d = NULL;
  cr_assert_eq(vxs_device_create(&c, &d), 0);
  const char *why = NULL;
  cr_assert_eq(vxs_load_elf(d, elf, size, &why), 0, "%s", why);
  cr_assert_eq(vxs_mem_map(d, ARGS, (sizeof(args_t) + 4095) & ~4095u), 0);
  memset(out, 0xff, sizeof *out);
  out->which = which;
  cr_assert_eq(vxs_mem_write(d, ARGS, out, sizeof *out), 0);
  int rc = vxs_run_kmu(d, ARGS, l, rep);
  cr_assert_eq(vxs_mem_read(d, ARGS, out, sizeof *out), 0);
  vxs_device_destroy(d);
  free(elf);
  return rc;
}

/* A launch that names its kernel's entry PC (what upstream's start code
 * reads from CSR 0xCE1, VX_CSR_CTA_ENTRY, fed by the scheduler's DCRs)
 * runs that kernel in every block, not kernel_main; its threads read the
 * same PC back.  Two blocks of 6 threads on warps of 4. */
Test(simt, a_launch_runs_the_kernel_entry_it_names) {
  size_t size = 0;
  uint8_t *elf = (uint8_t *)vxt_read_file(VXT_KMU_PROGRAMS, &size);
  cr_assert_not_null(elf);
  uint32_t pc = vxt_elf_symbol_value(elf, size, "other_kernel");
  cr_assert_neq(pc, 0u);
  free(elf);
  vxs_kmu_launch l = {.grid = {2, 1, 1}, .block = {6, 1, 1}, .entry = pc};
  args_t out;
  vxs_report rep;
  cr_assert_eq(run_kmu(1, &l, 4, 4, 1, &out, &rep), 0, "%s", rep.error);
  for (uint32_t g = 0; g < 12; g++) {
    cr_assert_eq(out.out[2 * g], (int32_t)(7000 + g), "thread %u: %d", g, out.out[2 * g]);
    cr_assert_eq((uint32_t)out.out[2 * g + 1], pc, "thread %u read %#x", g, (uint32_t)out.out[2 * g + 1]);
  }
}

/* A block of B threads is ceil(B / lanes) warps whose last has the threads
 * past B off; each thread is told its index (x fastest), its block's, its
 * warp's rank and the block's warp count, on every warp width. */
Test(simt, the_scheduler_gives_each_thread_its_block_csrs) {
  static const uint32_t widths[] = {1, 4, 8, 32};
  for (unsigned wi = 0; wi < 4; wi++) {
    uint32_t T = widths[wi];
    vxs_kmu_launch l = {.grid = {3, 2, 1}, .block = {5, 2, 1}}; /* 6 blocks of 10 threads */
    uint32_t W = (10 + T - 1) / T;
    args_t a;
    vxs_report rep;
    cr_assert_eq(run_kmu(0, &l, T, 2 * W, 2, &a, &rep), 0, "%u lanes: %s", T, rep.error);
    for (uint32_t g = 0; g < 60; g++) {
      const int32_t *o = &a.out[6 * g];
      uint32_t b = g / 10, t = g % 10, rank = t / T, in_last = 10 - rank * T;
      cr_assert_eq(o[0], (int32_t)t, "%u lanes, thread %u", T, g);
      cr_assert_eq(o[1], (int32_t)b);
      cr_assert_eq(o[2], (int32_t)rank);
      cr_assert_eq(o[3], (int32_t)W);
      uint32_t mask = in_last >= T ? (T == 32 ? 0xFFFFFFFFu : (1u << T) - 1) : (1u << in_last) - 1;
      cr_assert_eq((uint32_t)o[4], mask, "%u lanes, thread %u: mask 0x%x", T, g, o[4]);
      cr_assert_eq(o[5], (int32_t)t, "thread = rank x lanes + lane");
    }
    cr_assert_eq(a.out[6 * 60], -1, "no thread past the grid");
  }
}

/* Blocks that run on one core at once each have their own local memory
 * and barrier: every thread reads what its neighbour in its own block
 * wrote before the barrier. */
Test(simt, blocks_run_together_with_their_own_local_memory_and_barrier) {
  vxs_kmu_launch l = {.grid = {7, 1, 1}, .block = {12, 1, 1}, .local_bytes = 48};
  args_t a;
  vxs_report rep;
  /* 4 lanes: 3 warps a block, 3 blocks per core at once (9 of 10 warps) */
  cr_assert_eq(run_kmu(1, &l, 4, 10, 1, &a, &rep), 0, "%s", rep.error);
  for (uint32_t g = 0; g < 84; g++) {
    uint32_t b = g / 12, t = g % 12;
    cr_assert_eq(a.out[g], (int32_t)(1000 * b + (t + 1) % 12), "thread %u", g);
  }
}

Test(simt, launches_no_core_can_hold_are_refused) {
  args_t a;
  vxs_report rep;
  vxs_kmu_launch big = {.grid = {1, 1, 1}, .block = {64, 1, 1}};
  cr_assert_eq(run_kmu(0, &big, 4, 8, 1, &a, &rep), -EINVAL);
  cr_assert_not_null(strstr(rep.error, "a block of 64 threads needs 16 warps, a core has 8"), "%s",
                     rep.error);
  vxs_kmu_launch zero = {.grid = {1, 0, 1}, .block = {4, 1, 1}};
  cr_assert_eq(run_kmu(0, &zero, 4, 8, 1, &a, &rep), -EINVAL);
  vxs_kmu_launch lmem = {.grid = {1, 1, 1}, .block = {4, 1, 1}, .local_bytes = 1u << 20};
  cr_assert_eq(run_kmu(0, &lmem, 4, 8, 1, &a, &rep), -EINVAL);
  cr_assert_not_null(strstr(rep.error, "local memory"), "%s", rep.error);
}
