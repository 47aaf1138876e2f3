/* test_protocol.c - protocol/ round trips and malformed input. */
#define _GNU_SOURCE /* memmem */
#include <criterion/criterion.h>
#include <errno.h>
#include <msgpack.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "protocol/vxp.h"
#include "protocol/vxp_config.h"
#include "protocol/vxp_entry.h"
#include "vxt.h"

static vxp_kernel make_kernel(void) {
  vxp_kernel k = {0};
  k.name = strdup("vecadd");
  k.nargs = 2;
  k.args = calloc(2, sizeof *k.args);
  k.args[0] = (vxp_arg){0, strdup("memref<?xf32>"), VXP_ARG_POINTER, 4, 4, 0, 1, 4};
  k.args[1] = (vxp_arg){1, strdup("i64"), VXP_ARG_SCALAR, 8, 8, 8, 0, 0};
  k.args_size = 16;
  k.launch_offset = 16;
  k.buffer_size = 48;
  k.grid_dims = 2;
  k.known_block[0] = 32, k.known_block[1] = 1, k.known_block[2] = 1;
  k.shared_bytes = 1024;
  k.subgroup_size = 8;
  k.entry = strdup("__vxl_main_0");
  return k;
}

/* Splits a frame into header-checked payload. */
static const uint8_t *payload_of(const uint8_t *frame, size_t flen, uint32_t *len) {
  cr_assert_geq(flen, VXP_FRAME_HEADER_SIZE);
  cr_assert_eq(vxp_frame_length(frame, VXP_MAX_FRAME_DEFAULT, len), VXP_OK);
  cr_assert_eq((size_t)*len + VXP_FRAME_HEADER_SIZE, flen);
  return frame + VXP_FRAME_HEADER_SIZE;
}

/* Encodes in as a whole frame, checks its length prefix, decodes it into
 * *out (which the caller clears). */
static void request_round_trip(const vxp_request *in, vxp_request *out) {
  uint8_t *frame;
  size_t flen;
  uint32_t len;
  cr_assert_eq(vxp_request_encode(in, &frame, &flen), VXP_OK);
  const uint8_t *p = payload_of(frame, flen, &len);
  cr_assert_eq(vxp_request_decode(p, len, out), VXP_OK);
  free(frame);
}

static void response_round_trip(const vxp_response *in, vxp_response *out) {
  uint8_t *frame;
  size_t flen;
  uint32_t len;
  cr_assert_eq(vxp_response_encode(in, &frame, &flen), VXP_OK);
  const uint8_t *p = payload_of(frame, flen, &len);
  cr_assert_eq(vxp_response_decode(p, len, out), VXP_OK);
  free(frame);
}

Test(protocol, compile_request_round_trip) {
  vxp_request in = {.id = 42,
                    .op = VXP_OP_COMPILE,
                    .source = (uint8_t *)"module {}",
                    .source_len = 9,
                    .source_name = "k.mlir",
                    .opt_level = 3,
                    .emit_ir = true,
                    .warp_size = 8};
  vxp_request out;
  request_round_trip(&in, &out);
  cr_assert_eq(out.id, 42);
  cr_assert_eq(out.op, VXP_OP_COMPILE);
  cr_assert_eq(out.source_len, 9);
  cr_assert_eq(memcmp(out.source, "module {}", 9), 0);
  cr_assert_str_eq(out.source_name, "k.mlir");
  cr_assert_eq(out.opt_level, 3);
  cr_assert(out.emit_ir);
  cr_assert_eq(out.warp_size, 8);
  vxp_request_clear(&out);
}

/* A host request for `vxc run`'s bitcode carries its entry and result
 * type; the fields are refused where they mean nothing (one form of the
 * host side at a time, an entry only with bitcode, a name that is no
 * symbol, a result type the wrapper cannot print). */
Test(protocol, host_bitcode_requests_carry_their_entry) {
  vxp_request in = {.id = 7,
                    .op = VXP_OP_HOST,
                    .source = (uint8_t *)"module {}",
                    .source_len = 9,
                    .opt_level = 2,
                    .host_bitcode = true,
                    .entry = "answer.v2$",
                    .entry_result = VXP_RESULT_I64};
  vxp_request out;
  request_round_trip(&in, &out);
  cr_assert(out.host_bitcode);
  cr_assert_not(out.host_object);
  cr_assert_str_eq(out.entry, "answer.v2$");
  cr_assert_eq(out.entry_result, VXP_RESULT_I64);
  vxp_request_clear(&out);
  struct {
    bool object, bitcode;
    const char *entry;
    vxp_entry_result result;
    int rc;
  } cases[] = {
      {false, true, NULL, VXP_RESULT_F32, VXP_OK},       {true, true, NULL, VXP_RESULT_VOID, VXP_ETYPE},
      {true, false, "main", VXP_RESULT_VOID, VXP_ETYPE}, {false, false, NULL, VXP_RESULT_I32, VXP_ETYPE},
      {false, true, "a b", VXP_RESULT_VOID, VXP_ETYPE},  {false, true, "", VXP_RESULT_VOID, VXP_ETYPE}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    vxp_request r = in;
    r.host_object = cases[i].object, r.host_bitcode = cases[i].bitcode;
    r.entry = (char *)cases[i].entry, r.entry_result = cases[i].result;
    uint8_t *frame;
    size_t flen;
    uint32_t len;
    cr_assert_eq(vxp_request_encode(&r, &frame, &flen), VXP_OK);
    const uint8_t *p = payload_of(frame, flen, &len);
    cr_assert_eq(vxp_request_decode(p, len, &out), cases[i].rc, "case %zu", i);
    cr_assert_eq(out.id, 7, "case %zu: the id is kept", i);
    vxp_request_clear(&out);
    free(frame);
  }
  char long_name[VXP_MAX_ENTRY_NAME + 2];
  memset(long_name, 'a', sizeof long_name - 1);
  long_name[sizeof long_name - 1] = '\0';
  in.entry = long_name;
  uint8_t *frame;
  size_t flen;
  uint32_t len;
  cr_assert_eq(vxp_request_encode(&in, &frame, &flen), VXP_OK);
  const uint8_t *p = payload_of(frame, flen, &len);
  cr_assert_eq(vxp_request_decode(p, len, &out), VXP_ETYPE, "a name over VXP_MAX_ENTRY_NAME bytes");
  vxp_request_clear(&out);
  free(frame);
}

Test(protocol, fetch_and_hello_round_trip) {
  vxp_request f = {.id = 7, .op = VXP_OP_FETCH, .key = "ab", .kernel = "k1"};
  vxp_request out;
  request_round_trip(&f, &out);
  cr_assert_str_eq(out.key, "ab");
  cr_assert_str_eq(out.kernel, "k1");
  vxp_request_clear(&out);

  vxp_request h = {.id = 1, .op = VXP_OP_HELLO, .proto_version = VXP_PROTOCOL_VERSION, .client = "t"};
  request_round_trip(&h, &out);
  cr_assert_eq(out.op, VXP_OP_HELLO);
  cr_assert_eq(out.proto_version, VXP_PROTOCOL_VERSION);
  cr_assert_str_eq(out.client, "t");
  vxp_request_clear(&out);
}

static const char entry_key[] = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

/* An entry of k (and a second kernel, "other", with k's layout) over
 * object, with a checksum of 32 bytes of x: this module only places it. */
static uint8_t *make_entry(const vxp_kernel *k, const char *key, size_t *len) {
  uint8_t *rec = NULL, *body = NULL, *entry = NULL;
  size_t rlen = 0, blen = 0;
  cr_assert_eq(vxp_kernel_meta_encode(k, &rec, &rlen), VXP_OK);
  vxp_kernel other = *k;
  other.name = "other";
  uint8_t *rec2 = NULL;
  size_t rlen2 = 0;
  cr_assert_eq(vxp_kernel_meta_encode(&other, &rec2, &rlen2), VXP_OK);
  vxp_entry_kernel ks[2] = {{k->name, strlen(k->name), rec, rlen}, {"other", 5, rec2, rlen2}};
  cr_assert_eq(vxp_entry_body_encode(key, "opt_level=2",
                                     (const uint8_t *)"\x7f"
                                                      "ELF\x01",
                                     5, NULL, 0, ks, 2, &body, &blen),
               VXP_OK);
  uint8_t sum[VXP_ENTRY_CHECKSUM_SIZE];
  memset(sum, 'x', sizeof sum);
  cr_assert_eq(vxp_entry_seal(body, blen, sum, NULL, NULL, &entry, len), VXP_OK);
  free(rec), free(rec2), free(body);
  return entry;
}

/* A record carries its kernel id; one from before the dispatcher has none,
 * and an id past VXP_MAX_KERNELS is refused. */
Test(protocol, kernel_records_carry_their_kernel_id) {
  vxp_kernel k = make_kernel(), out;
  k.kernel_id = 41;
  uint8_t *rec = NULL;
  size_t len = 0;
  cr_assert_eq(vxp_kernel_meta_encode(&k, &rec, &len), VXP_OK);
  cr_assert_eq(vxp_kernel_meta_decode(rec, len, &out), VXP_OK);
  cr_assert_eq(out.kernel_id, 41);
  vxp_kernel_clear(&out);
  free(rec);
  k.kernel_id = VXP_NO_KERNEL_ID; /* written as a record without the field */
  cr_assert_eq(vxp_kernel_meta_encode(&k, &rec, &len), VXP_OK);
  cr_assert_null(memmem(rec, len, "kernel_id", 9));
  cr_assert_eq(vxp_kernel_meta_decode(rec, len, &out), VXP_OK);
  cr_assert_eq(out.kernel_id, VXP_NO_KERNEL_ID);
  vxp_kernel_clear(&out);
  free(rec);
  k.kernel_id = VXP_MAX_KERNELS;
  cr_assert_eq(vxp_kernel_check(&k), VXP_ELAYOUT);
  cr_assert_eq(vxp_kernel_meta_encode(&k, &rec, &len), VXP_OK);
  cr_assert_eq(vxp_kernel_meta_decode(rec, len, &out), VXP_ELAYOUT);
  free(rec);
  vxp_kernel_clear(&k);
}

/* The module's image travels in the entry's body, after the kernels: a
 * client gets it back byte for byte; a body without one has four
 * elements; an image outside its bounds is neither written nor read. */
Test(protocol, an_entry_carries_the_module_image) {
  vxp_kernel k = make_kernel();
  uint8_t *rec = NULL, *body = NULL, *entry = NULL;
  size_t rlen = 0, blen = 0, elen = 0;
  cr_assert_eq(vxp_kernel_meta_encode(&k, &rec, &rlen), VXP_OK);
  vxp_entry_kernel ek = {k.name, strlen(k.name), rec, rlen};
  uint8_t image[40];
  for (unsigned i = 0; i < sizeof image; i++)
    image[i] = (uint8_t)(i * 7);
  cr_assert_eq(vxp_entry_body_encode(entry_key, "", (const uint8_t *)"O", 1, image, 15, &ek, 1, &body, &blen),
               VXP_EFORMAT, "below the .vxbin header");
  cr_assert_eq(vxp_entry_body_encode(entry_key, "", (const uint8_t *)"O", 1, image, sizeof image, &ek, 1,
                                     &body, &blen),
               VXP_OK);
  cr_assert_eq(body[0], 0x95, "five elements");
  uint8_t sum[VXP_ENTRY_CHECKSUM_SIZE];
  memset(sum, 's', sizeof sum);
  cr_assert_eq(vxp_entry_seal(body, blen, sum, NULL, NULL, &entry, &elen), VXP_OK);
  vxp_entry_view v;
  cr_assert_eq(vxp_entry_view_of(entry, elen, &v), VXP_OK);
  cr_assert(v.image_size == sizeof image && memcmp(v.image, image, sizeof image) == 0);
  vxp_entry_view_clear(&v);
  vxp_response r = {.op = VXP_OP_FETCH, .status = VXP_STATUS_OK, .entry = entry, .entry_size = elen};
  cr_assert_eq(vxp_entry_unpack(&r, NULL), VXP_OK);
  cr_assert(r.image_size == sizeof image && memcmp(r.image, image, sizeof image) == 0,
            "the image, unchanged");
  vxp_response_clear(&r); /* frees entry */
  free(body);
  /* without an image: four elements, and no image comes out */
  cr_assert_eq(vxp_entry_body_encode(entry_key, "", (const uint8_t *)"O", 1, NULL, 0, &ek, 1, &body, &blen),
               VXP_OK);
  cr_assert_eq(body[0], 0x94, "four elements");
  cr_assert_eq(vxp_entry_seal(body, blen, sum, NULL, NULL, &entry, &elen), VXP_OK);
  r = (vxp_response){.op = VXP_OP_FETCH, .status = VXP_STATUS_OK, .entry = entry, .entry_size = elen};
  cr_assert_eq(vxp_entry_unpack(&r, NULL), VXP_OK);
  cr_assert_null(r.image);
  vxp_response_clear(&r);
  free(body);
  /* a fifth element that is not an image of a possible size */
  uint8_t *bad = NULL;
  size_t badlen = 0;
  cr_assert_eq(
      vxp_entry_body_encode(entry_key, "", (const uint8_t *)"O", 1, image, 16, &ek, 1, &bad, &badlen),
      VXP_OK);
  /* shrink the image's bin from 16 bytes to 15: one byte off the end, and its length */
  cr_assert_eq(bad[badlen - 17], 16);
  bad[badlen - 17] = 15;
  cr_assert_eq(vxp_entry_seal(bad, badlen - 1, sum, NULL, NULL, &entry, &elen), VXP_OK);
  cr_assert_eq(vxp_entry_view_of(entry, elen, &v), VXP_EFORMAT, "an image below 16 bytes");
  free(entry);
  free(bad);
  free(rec);
  vxp_kernel_clear(&k);
}

Test(protocol, compile_response_round_trip_keeps_every_field) {
  vxp_kernel k = make_kernel();
  char *diags[] = {"a.mlir:1:2: error: x"};
  size_t elen = 0;
  uint8_t *entry = make_entry(&k, entry_key, &elen);
  vxp_response in = {.id = 9,
                     .op = VXP_OP_COMPILE,
                     .status = VXP_STATUS_OK,
                     .key = (char *)entry_key,
                     .cached = true,
                     .entry = entry,
                     .entry_size = elen,
                     .ndiags = 1,
                     .diags = diags,
                     .lowered_ir = "llvm"};
  vxp_response out;
  response_round_trip(&in, &out);
  cr_assert_eq(out.id, 9);
  cr_assert_eq(out.status, VXP_STATUS_OK);
  cr_assert(out.cached);
  cr_assert_str_eq(out.key, entry_key);
  cr_assert_str_eq(out.lowered_ir, "llvm");
  cr_assert_eq(out.ndiags, 1);
  cr_assert_str_eq(out.diags[0], "a.mlir:1:2: error: x");
  cr_assert(out.entry_size == elen && memcmp(out.entry, entry, elen) == 0, "the entry, byte for byte");
  cr_assert_eq(out.nkernels, 0, "not sent apart from the entry");
  cr_assert_eq(vxp_entry_unpack(&out, NULL), VXP_OK);
  cr_assert_eq(out.nkernels, 2);
  vxp_kernel *o = &out.kernels[0];
  cr_assert_str_eq(o->name, "vecadd");
  cr_assert_eq(o->nargs, 2);
  cr_assert_str_eq(o->args[1].type, "i64");
  cr_assert_eq(o->args[1].kind, VXP_ARG_SCALAR);
  cr_assert_eq(o->args[0].kind, VXP_ARG_POINTER);
  cr_assert_eq(o->args[1].offset, 8);
  cr_assert_eq(o->args[1].align, 8);
  cr_assert_eq(o->args_size, 16);
  cr_assert_eq(o->launch_offset, 16);
  cr_assert_eq(o->buffer_size, 48);
  cr_assert_eq(o->grid_dims, 2);
  cr_assert_eq(o->known_block[0], 32);
  cr_assert_eq(o->shared_bytes, 1024);
  cr_assert_eq(o->subgroup_size, 8);
  cr_assert_str_eq(o->entry, "__vxl_main_0");
  cr_assert_eq(out.object_size, 5);
  cr_assert_eq(memcmp(out.object,
                      "\x7f"
                      "ELF\x01",
                      5),
               0);
  vxp_response_clear(&out);
  free(entry);
  vxp_kernel_clear(&k);
}

/* What a client does with an entry: one kernel kept when asked for, and
 * an entry of another key, a record filed under another name, a wider
 * encoding or an impossible layout leave it nothing to use. */
Test(protocol, an_entry_is_unpacked_whole_or_not_at_all) {
  vxp_kernel k = make_kernel();
  size_t elen = 0;
  uint8_t *entry = make_entry(&k, entry_key, &elen);
  vxp_response r = {.key = strdup(entry_key), .entry = entry, .entry_size = elen};
  cr_assert_eq(vxp_entry_unpack(&r, "other"), VXP_OK);
  cr_assert_eq(r.nkernels, 1);
  cr_assert_str_eq(r.kernels[0].name, "other");
  cr_assert_eq(r.object_size, 5, "one kernel comes with the module's object");
  free(r.object), vxp_kernel_clear(&r.kernels[0]), free(r.kernels);
  r.object = NULL, r.kernels = NULL, r.nkernels = 0;
  cr_assert_eq(vxp_entry_unpack(&r, "nope"), VXP_EMISSING, "the entry is there, that kernel is not");
  cr_assert_null(r.object);
  free(r.key);
  r.key = strdup("ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff");
  cr_assert_eq(vxp_entry_unpack(&r, NULL), VXP_EFORMAT, "another key's entry");
  cr_assert_null(r.object);
  cr_assert_eq(r.nkernels, 0);
  vxp_response_clear(&r);

  /* a record whose layout a packer cannot trust */
  k.buffer_size = 8;
  vxp_response bad = {.entry = make_entry(&k, entry_key, &elen), .entry_size = elen};
  cr_assert_eq(vxp_entry_unpack(&bad, NULL), VXP_ELAYOUT);
  cr_assert_null(bad.kernels);
  vxp_response_clear(&bad);
  k.buffer_size = 48;

  /* every truncation: refused */
  entry = make_entry(&k, entry_key, &elen);
  for (size_t n = 0; n < elen; n++) {
    vxp_entry_view v;
    cr_assert_eq(vxp_entry_view_of(entry, n, &v), VXP_EFORMAT, "cut to %zu", n);
  }
  /* the format version as a uint8 rather than a fixint: refused */
  uint8_t *wide = malloc(elen + 1);
  size_t at = 2 + strlen(VXP_ENTRY_TAG);
  memcpy(wide, entry, at);
  wide[at] = 0xcc;
  memcpy(wide + at + 1, entry + at, elen - at);
  vxp_entry_view v;
  cr_assert_eq(vxp_entry_view_of(wide, elen + 1, &v), VXP_EFORMAT);
  cr_assert_eq(vxp_entry_view_of(entry, elen, &v), VXP_OK);
  cr_assert_eq(v.nkernels, 2);
  vxp_entry_view_clear(&v);
  free(wide);
  free(entry);
  vxp_kernel_clear(&k);
}

Test(protocol, stats_response_round_trip) {
  vxp_response in = {.id = 3,
                     .op = VXP_OP_STATS,
                     .status = VXP_STATUS_OK,
                     .stats = {.hits = 10,
                               .misses = 2,
                               .compile_errors = 1,
                               .entries = 2,
                               .bytes = 999,
                               .requests = 20,
                               .workers = 2,
                               .worker_restarts = 1,
                               .uptime_ms = 5,
                               .corrupt = 6,
                               .evictions = 7,
                               .max_bytes = 8,
                               .saved_ms = 9,
                               .refused = 11,
                               .timeouts = 12,
                               .remote = "redis://farm:6379/0, up",
                               .l2_hits = 13,
                               .l2_misses = 14,
                               .l2_errors = 15,
                               .l2_timeouts = 16,
                               .l2_corrupt = 17,
                               .l2_writes = 18,
                               .l2_dropped = 19,
                               .l2_bytes_down = 1ull << 40,
                               .l2_bytes_up = 21}};
  vxp_response out;
  response_round_trip(&in, &out);
  cr_assert_eq(out.stats.hits, 10);
  cr_assert_eq(out.stats.misses, 2);
  cr_assert_eq(out.stats.bytes, 999);
  cr_assert_eq(out.stats.worker_restarts, 1);
  cr_assert_eq(out.stats.corrupt, 6);
  cr_assert_eq(out.stats.evictions, 7);
  cr_assert_eq(out.stats.max_bytes, 8);
  cr_assert_eq(out.stats.saved_ms, 9);
  cr_assert_eq(out.stats.refused, 11);
  cr_assert_eq(out.stats.timeouts, 12);
  cr_assert_str_eq(out.stats.remote, "redis://farm:6379/0, up");
  uint64_t l2[] = {out.stats.l2_hits,     out.stats.l2_misses,     out.stats.l2_errors,
                   out.stats.l2_timeouts, out.stats.l2_corrupt,    out.stats.l2_writes,
                   out.stats.l2_dropped,  out.stats.l2_bytes_down, out.stats.l2_bytes_up};
  uint64_t want[] = {13, 14, 15, 16, 17, 18, 19, 1ull << 40, 21};
  for (int i = 0; i < 9; i++)
    cr_assert_eq(l2[i], want[i], "field %d", i);
  vxp_response_clear(&out);
  for (uint32_t i = 0; i < VXP_COMPILE_BUCKETS; i++)
    in.stats.compile_buckets[i] = 100 + i;
  in.stats.compile_sum_us = 1ull << 35;
  response_round_trip(&in, &out);
  for (uint32_t i = 0; i < VXP_COMPILE_BUCKETS; i++)
    cr_assert_eq(out.stats.compile_buckets[i], 100 + i, "bucket %u", i);
  cr_assert_eq(out.stats.compile_sum_us, 1ull << 35);
  vxp_response_clear(&out);
}

/* Every counter of the one list round-trips under its own name, and the
 * map carries exactly the listed counters, the buckets and the remote. */
Test(protocol, every_listed_stats_counter_round_trips) {
  vxp_response in = {.id = 3, .op = VXP_OP_STATS, .status = VXP_STATUS_OK}, out;
  uint64_t v = 1000;
#define SET(name, kind, what) in.stats.name = v++;
  VXP_STATS_COUNTERS(SET)
#undef SET
  response_round_trip(&in, &out);
  v = 1000;
#define CHECK(name, kind, what) cr_assert_eq(out.stats.name, v++, "%s", #name);
  VXP_STATS_COUNTERS(CHECK)
#undef CHECK
  vxp_response_clear(&out);
  uint8_t *frame;
  size_t len;
  cr_assert_eq(vxp_response_encode(&in, &frame, &len), VXP_OK);
  msgpack_unpacked u;
  msgpack_unpacked_init(&u);
  cr_assert_eq(
      msgpack_unpack_next(&u, (const char *)frame + VXP_FRAME_HEADER_SIZE, len - VXP_FRAME_HEADER_SIZE, NULL),
      MSGPACK_UNPACK_SUCCESS);
  const msgpack_object_map *m = &u.data.via.map;
  uint32_t counters = 0;
#define COUNT(name, kind, what) counters++;
  VXP_STATS_COUNTERS(COUNT)
#undef COUNT
  int found = 0;
  for (uint32_t i = 0; i < m->size; i++)
    if (m->ptr[i].key.via.str.size == 5 && memcmp(m->ptr[i].key.via.str.ptr, "stats", 5) == 0) {
      cr_assert_eq(m->ptr[i].val.via.map.size, counters + 1, "the counters and compile_buckets, no remote");
      found = 1;
    }
  cr_assert(found);
  msgpack_unpacked_destroy(&u);
  free(frame);
}

Test(protocol, list_requests_and_answers_round_trip_within_their_bounds) {
  vxp_request rq = {.id = 8, .op = VXP_OP_LIST, .prefix = "abc0", .limit = 2}, back;
  request_round_trip(&rq, &back);
  cr_assert_eq(back.op, VXP_OP_LIST);
  cr_assert_str_eq(back.prefix, "abc0");
  cr_assert_eq(back.limit, 2);
  vxp_request_clear(&back);
  /* a prefix that is not lowercase hex, too long, or a limit out of range */
  const vxp_request bad[] = {
      {.id = 9, .op = VXP_OP_LIST, .prefix = "ABC"},
      {.id = 9, .op = VXP_OP_LIST, .prefix = "ab*"},
      {.id = 9,
       .op = VXP_OP_LIST,
       .prefix = "00000000000000000000000000000000000000000000000000000000000000000"},
      {.id = 9, .op = VXP_OP_LIST, .limit = VXP_MAX_LIST_ENTRIES + 1},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    uint8_t *frame;
    size_t len;
    cr_assert_eq(vxp_request_encode(&bad[i], &frame, &len), VXP_OK);
    cr_assert_neq(vxp_request_decode(frame + VXP_FRAME_HEADER_SIZE, len - VXP_FRAME_HEADER_SIZE, &back),
                  VXP_OK, "case %zu", i);
    cr_assert_eq(back.id, 9, "refused with its id");
    free(frame);
  }
  char *names[VXP_MAX_LIST_NAMES + 1];
  for (uint32_t i = 0; i <= VXP_MAX_LIST_NAMES; i++)
    names[i] = "k";
  vxp_entry_info e = {.key = "0123",
                      .source_name = "saxpy.mlir",
                      .options = "opt_level=2",
                      .bytes = 4096,
                      .created_s = 1700000000,
                      .used_s = 1700000100,
                      .hits = 3,
                      .compile_us = 9000,
                      .nkernels = 40,
                      .kernel_names = names,
                      .nnames = 2};
  vxp_response in = {.id = 8,
                     .op = VXP_OP_LIST,
                     .status = VXP_STATUS_OK,
                     .checked = 7,
                     .entries = &e,
                     .nentries = 1},
               out;
  response_round_trip(&in, &out);
  cr_assert_eq(out.checked, 7);
  cr_assert_eq(out.nentries, 1);
  cr_assert_str_eq(out.entries[0].source_name, "saxpy.mlir");
  cr_assert_str_eq(out.entries[0].options, "opt_level=2");
  cr_assert_eq(out.entries[0].used_s, 1700000100);
  cr_assert_eq(out.entries[0].hits, 3);
  cr_assert_eq(out.entries[0].nkernels, 40);
  cr_assert_eq(out.entries[0].nnames, 2);
  vxp_response_clear(&out);
  /* more names than a reply may carry: refused */
  e.nnames = VXP_MAX_LIST_NAMES + 1;
  uint8_t *frame;
  size_t flen;
  cr_assert_eq(vxp_response_encode(&in, &frame, &flen), VXP_OK);
  cr_assert_neq(vxp_response_decode(frame + VXP_FRAME_HEADER_SIZE, flen - VXP_FRAME_HEADER_SIZE, &out),
                VXP_OK);
  free(frame);
}

/* explain: the request carries a compile's source and options, the reply
 * the candidates within bounds;
 * joined and a worker's line hashes round-trip on a compile reply. */
Test(protocol, explain_and_joined_round_trip_within_bounds) {
  vxp_request rq = {.id = 3,
                    .op = VXP_OP_EXPLAIN,
                    .source = (uint8_t *)"gpu.module @m {}",
                    .source_len = 16,
                    .source_name = "m.mlir",
                    .opt_level = 1,
                    .warp_size = 8},
              back;
  uint8_t *frame;
  size_t len;
  cr_assert_eq(vxp_request_encode(&rq, &frame, &len), VXP_OK);
  cr_assert_eq(vxp_request_decode(frame + VXP_FRAME_HEADER_SIZE, len - VXP_FRAME_HEADER_SIZE, &back), VXP_OK);
  cr_assert_eq(back.op, VXP_OP_EXPLAIN);
  cr_assert_eq(back.source_len, 16);
  cr_assert_eq(back.warp_size, 8);
  cr_assert_str_eq(vxp_op_name(VXP_OP_EXPLAIN), "explain");
  vxp_request_clear(&back);
  free(frame);

  char key[65], other[65];
  memset(key, 'a', 64), key[64] = '\0';
  memset(other, 'b', 64), other[64] = '\0';
  vxp_explain_candidate c[VXP_MAX_EXPLAIN_CANDIDATES + 1];
  for (uint32_t i = 0; i <= VXP_MAX_EXPLAIN_CANDIDATES; i++)
    c[i] = (vxp_explain_candidate){
        .key = other, .used_s = 1700000000, .inputs = "llvm=22\n", .first_line = 4, .lines = 9};
  c[1].inputs = NULL, c[1].first_line = 0, c[1].lines = 0;
  vxp_response in = {.id = 3,
                     .op = VXP_OP_EXPLAIN,
                     .status = VXP_STATUS_OK,
                     .key = key,
                     .key_inputs = "llvm=22;warp_size=8\n",
                     .source_lines = 9,
                     .candidates = c,
                     .ncandidates = 2},
               out;
  response_round_trip(&in, &out);
  cr_assert_str_eq(out.key, key);
  cr_assert_not(out.cached);
  cr_assert_str_eq(out.key_inputs, "llvm=22;warp_size=8\n");
  cr_assert_eq(out.source_lines, 9);
  cr_assert_eq(out.ncandidates, 2);
  cr_assert_str_eq(out.candidates[0].inputs, "llvm=22\n");
  cr_assert_eq(out.candidates[0].first_line, 4);
  cr_assert_null(out.candidates[1].inputs);
  vxp_response_clear(&out);
  /* more candidates than a reply may carry, or one that is not a key: refused */
  for (int bad = 0; bad < 2; bad++) {
    in.ncandidates = bad ? 1 : VXP_MAX_EXPLAIN_CANDIDATES + 1;
    c[0].key = bad ? "abc" : other;
    cr_assert_eq(vxp_response_encode(&in, &frame, &len), VXP_OK);
    cr_assert_neq(vxp_response_decode(frame + VXP_FRAME_HEADER_SIZE, len - VXP_FRAME_HEADER_SIZE, &out),
                  VXP_OK, "case %d", bad);
    free(frame);
  }
  /* a compile reply: joined, and a worker's inputs and line hashes */
  uint8_t hashes[16] = {1, 2, 3};
  vxp_response cr = {.id = 4,
                     .op = VXP_OP_COMPILE,
                     .status = VXP_STATUS_OK,
                     .key = key,
                     .joined = true,
                     .key_inputs = "x=1\n",
                     .line_hashes = hashes,
                     .line_hashes_size = sizeof hashes};
  response_round_trip(&cr, &out);
  cr_assert(out.joined);
  cr_assert_eq(out.line_hashes_size, 16);
  cr_assert_eq(memcmp(out.line_hashes, hashes, 16), 0);
  cr_assert_str_eq(out.key_inputs, "x=1\n");
  vxp_response_clear(&out);
  cr.line_hashes_size = 15; /* not whole hashes */
  cr_assert_eq(vxp_response_encode(&cr, &frame, &len), VXP_OK);
  cr_assert_neq(vxp_response_decode(frame + VXP_FRAME_HEADER_SIZE, len - VXP_FRAME_HEADER_SIZE, &out),
                VXP_OK);
  free(frame);
}

Test(protocol, admin_requests_and_answers_round_trip) {
  vxp_request rq = {
      .id = 4, .op = VXP_OP_PRUNE, .proto_version = VXP_PROTOCOL_VERSION, .max_size = 1ull << 40};
  uint8_t *frame;
  size_t len;
  cr_assert_eq(vxp_request_encode(&rq, &frame, &len), VXP_OK);
  vxp_request back;
  cr_assert_eq(vxp_request_decode(frame + VXP_FRAME_HEADER_SIZE, len - VXP_FRAME_HEADER_SIZE, &back), VXP_OK);
  cr_assert_eq(back.op, VXP_OP_PRUNE);
  cr_assert_eq(back.max_size, 1ull << 40);
  vxp_request_clear(&back);
  free(frame);
  const char *names[] = {"verify", "zero_stats", "clear", "prune", "stop"};
  for (int op = VXP_OP_VERIFY; op <= VXP_OP_STOP; op++)
    cr_assert_str_eq(vxp_op_name((vxp_op)op), names[op - VXP_OP_VERIFY]);
  vxp_response in = {.id = 5, .op = VXP_OP_VERIFY, .status = VXP_STATUS_OK, .checked = 300, .removed = 24};
  vxp_response out;
  response_round_trip(&in, &out);
  cr_assert_eq(out.op, VXP_OP_VERIFY);
  cr_assert_eq(out.checked, 300);
  cr_assert_eq(out.removed, 24);
  vxp_response_clear(&out);
}

/* A worker's pieces request and the daemon's answer: keys in order,
 * entries where there are some; bounded, keys of 64 hex digits only. */
Test(protocol, pieces_round_trip_between_the_daemon_and_its_workers) {
  vxp_piece ps[3];
  memset(ps, 0, sizeof ps);
  for (int i = 0; i < 3; i++)
    memset(ps[i].key, "0af"[i], 64);
  uint8_t entry[] = {1, 2, 3, 4};
  vxp_response ask = {.id = 9, .op = VXP_OP_PIECES, .status = VXP_STATUS_OK, .pieces = ps, .npieces = 3};
  vxp_response got;
  response_round_trip(&ask, &got);
  cr_assert_eq(got.op, VXP_OP_PIECES);
  cr_assert_eq(got.npieces, 3);
  for (int i = 0; i < 3; i++) {
    cr_assert_str_eq(got.pieces[i].key, ps[i].key);
    cr_assert_null(got.pieces[i].entry);
  }
  vxp_response_clear(&got);
  /* a compile reply carries the pieces compiled, with their entries */
  ps[1].entry = entry, ps[1].entry_size = sizeof entry;
  vxp_response reply = {.id = 9, .op = VXP_OP_COMPILE, .status = VXP_STATUS_OK, .pieces = ps, .npieces = 3};
  response_round_trip(&reply, &got);
  cr_assert_eq(got.npieces, 3);
  cr_assert_null(got.pieces[0].entry);
  cr_assert_eq(got.pieces[1].entry_size, sizeof entry);
  cr_assert_eq(memcmp(got.pieces[1].entry, entry, sizeof entry), 0);
  vxp_response_clear(&got);
  vxp_request answer = {.id = 9, .op = VXP_OP_PIECES, .pieces = ps, .npieces = 3}, back;
  request_round_trip(&answer, &back);
  cr_assert_eq(back.op, VXP_OP_PIECES);
  cr_assert_eq(back.npieces, 3);
  cr_assert_str_eq(back.pieces[2].key, ps[2].key);
  cr_assert_eq(back.pieces[1].entry_size, sizeof entry);
  vxp_request_clear(&back);
  /* a key not of 64 lowercase hex digits is refused */
  ps[0].key[3] = 'G';
  uint8_t *frame;
  size_t len;
  cr_assert_eq(vxp_request_encode(&answer, &frame, &len), VXP_OK);
  cr_assert_eq(vxp_request_decode(frame + VXP_FRAME_HEADER_SIZE, len - VXP_FRAME_HEADER_SIZE, &back),
               VXP_ETYPE);
  free(frame);
  vxp_request f2;
  answer.npieces = VXP_MAX_PIECES + 1;
  answer.pieces = calloc(VXP_MAX_PIECES + 1, sizeof *answer.pieces);
  for (uint32_t i = 0; i <= VXP_MAX_PIECES; i++)
    memset(answer.pieces[i].key, 'a', 64);
  cr_assert_eq(vxp_request_encode(&answer, &frame, &len), VXP_OK);
  cr_assert_eq(vxp_request_decode(frame + VXP_FRAME_HEADER_SIZE, len - VXP_FRAME_HEADER_SIZE, &f2),
               VXP_EFORMAT, "more pieces than a module has");
  free(frame);
  free(answer.pieces);
}

Test(protocol, kernel_metadata_round_trip) {
  vxp_kernel k = make_kernel();
  uint8_t *buf;
  size_t n;
  cr_assert_eq(vxp_kernel_meta_encode(&k, &buf, &n), VXP_OK);
  vxp_kernel o;
  cr_assert_eq(vxp_kernel_meta_decode(buf, n, &o), VXP_OK);
  cr_assert_str_eq(o.name, "vecadd");
  cr_assert_eq(o.nargs, 2);
  cr_assert_eq(o.args[0].rank, 1, "a memref's rank and element size travel");
  cr_assert_eq(o.args[0].elem_size, 4);
  cr_assert_eq(o.args[1].rank, 0);
  cr_assert_str_eq(o.entry, "__vxl_main_0");
  cr_assert_eq(o.buffer_size, 48);
  vxp_kernel_clear(&o);
  /* a truncated metadata blob is refused, not half-read */
  cr_assert_neq(vxp_kernel_meta_decode(buf, n - 3, &o), VXP_OK);
  cr_assert_null(o.name);
  vxp_kernel_clear(&k);
  free(buf);
}

/* Encodes k, decodes it again; returns the decoder's answer. */
static int redecode(const vxp_kernel *k) {
  uint8_t *buf;
  size_t n;
  cr_assert_eq(vxp_kernel_meta_encode(k, &buf, &n), VXP_OK);
  vxp_kernel o;
  int rc = vxp_kernel_meta_decode(buf, n, &o);
  free(buf);
  vxp_kernel_clear(&o);
  return rc;
}

Test(protocol, kernel_records_with_impossible_layouts_are_refused) {
  vxp_kernel k = make_kernel();
  cr_assert_eq(redecode(&k), VXP_OK);
  cr_assert_eq(vxp_kernel_check(&k), VXP_OK);
  /* an offset that wraps a 32-bit sum: 0xfffffff0 + 0x20 */
  vxp_kernel bad = k;
  vxp_arg a0 = k.args[0];
  bad.args = &a0;
  bad.nargs = 1;
  a0.offset = 0xfffffff0u, a0.size = 0x20, a0.align = 16;
  cr_assert_eq(vxp_kernel_check(&bad), VXP_ELAYOUT);
  cr_assert_eq(redecode(&bad), VXP_ELAYOUT);
  a0 = k.args[0];
  a0.align = 3; /* not a power of two */
  cr_assert_eq(redecode(&bad), VXP_ELAYOUT);
  a0 = k.args[0];
  a0.offset = 2, a0.align = 4; /* misaligned */
  cr_assert_eq(redecode(&bad), VXP_ELAYOUT);
  a0 = k.args[0];
  bad.launch_offset = bad.buffer_size - 4; /* header past the buffer */
  cr_assert_eq(redecode(&bad), VXP_ELAYOUT);
  bad = k;
  bad.launch_offset = 0xfffffff8u, bad.buffer_size = 8; /* wraps with the header */
  cr_assert_eq(vxp_kernel_check(&bad), VXP_ELAYOUT);
  bad = k;
  bad.buffer_size = VXP_MAX_BUFFER_SIZE + 8;
  cr_assert_eq(redecode(&bad), VXP_ELAYOUT);
  bad = k;
  bad.grid_dims = 4;
  cr_assert_eq(redecode(&bad), VXP_ELAYOUT);
  bad = k;
  bad.subgroup_size = 6;
  cr_assert_eq(redecode(&bad), VXP_ELAYOUT);
  bad = k;
  bad.vortex_abi = 4;
  cr_assert_eq(redecode(&bad), VXP_ELAYOUT, "no such kernel ABI");
  bad = k;
  bad.xlen = 48;
  cr_assert_eq(redecode(&bad), VXP_ELAYOUT, "no such register width");
  cr_assert_str_eq(vxp_strerror(VXP_ELAYOUT), "kernel record with an impossible argument layout");
  vxp_kernel_clear(&k);
}

/* A record names its target, and a device pointer is as wide as the
 * target's registers: 4 bytes on RV32, 8 on RV64, nothing else. */
Test(protocol, a_record_names_its_target_and_pointers_are_xlen_wide) {
  vxp_kernel k = make_kernel(); /* memref at 0, i64 at 8 */
  k.vortex_abi = 3, k.xlen = 64;
  cr_assert_eq(vxp_kernel_check(&k), VXP_ELAYOUT, "a 4-byte pointer on RV64");
  k.args[0].size = 8, k.args[0].align = 8;
  cr_assert_eq(vxp_kernel_check(&k), VXP_OK);
  uint8_t *buf;
  size_t n;
  cr_assert_eq(vxp_kernel_meta_encode(&k, &buf, &n), VXP_OK);
  vxp_kernel o;
  cr_assert_eq(vxp_kernel_meta_decode(buf, n, &o), VXP_OK);
  cr_assert_eq(o.vortex_abi, 3);
  cr_assert_eq(o.xlen, 64);
  cr_assert_eq(o.args[0].size, 8);
  vxp_kernel_clear(&o);
  free(buf);
  k.xlen = 32;
  cr_assert_eq(vxp_kernel_check(&k), VXP_ELAYOUT, "an 8-byte pointer on RV32");
  k.xlen = 0; /* a record from before targets: RV32 */
  cr_assert_eq(vxp_kernel_check(&k), VXP_ELAYOUT);
  vxp_kernel_clear(&k);

  uint32_t abi = 0, xlen = 0;
  static const char *const names[] = {"vortex2-rv32", "vortex2-rv64", "vortex3-rv32", "vortex3-rv64"};
  for (unsigned i = 0; i < 4; i++) {
    cr_assert_eq(vxp_target_parse(names[i], &abi, &xlen), 0, "%s", names[i]);
    char back[VXP_TARGET_NAME_MAX];
    vxp_target_name(abi, xlen, back);
    cr_assert_str_eq(back, names[i]);
  }
  const char *bad[] = {"", "vortex3", "vortex1-rv32", "vortex2-rv128", "VORTEX2-RV32", "vortex2-rv32 ", NULL};
  for (unsigned i = 0; i < sizeof bad / sizeof *bad; i++)
    cr_assert_eq(vxp_target_parse(bad[i], &abi, &xlen), -EINVAL, "%s", bad[i] ? bad[i] : "NULL");
  char def[VXP_TARGET_NAME_MAX];
  vxp_target_name(0, 0, def);
  cr_assert_str_eq(def, VXP_DEFAULT_TARGET);

  /* a compile request carries its target, and only a real one */
  vxp_request in = {.id = 1,
                    .op = VXP_OP_COMPILE,
                    .source = (uint8_t *)"m",
                    .source_len = 1,
                    .opt_level = 2,
                    .vortex_abi = 3,
                    .xlen = 64};
  vxp_request out;
  request_round_trip(&in, &out);
  cr_assert_eq(out.vortex_abi, 3);
  cr_assert_eq(out.xlen, 64);
  vxp_request_clear(&out);
  in.xlen = 16;
  uint8_t *frame;
  size_t flen;
  cr_assert_eq(vxp_request_encode(&in, &frame, &flen), VXP_OK);
  uint32_t plen;
  const uint8_t *payload = payload_of(frame, flen, &plen);
  cr_assert_eq(vxp_request_decode(payload, plen, &out), VXP_ETYPE);
  cr_assert_eq(out.id, 1, "answered by id");
  free(frame);
}

/* A packer copies an argument's size in bytes from the caller's variable
 * of the argument's type: a record claiming more than the type has would
 * make it read past that variable, so the size must be the type's. */
Test(protocol, an_argument_size_is_bounded_by_its_type) {
  static const struct {
    const char *type;
    uint32_t size, align;
    vxp_arg_kind kind;
    int ok;
  } cases[] = {
      {"i32", 4, 4, VXP_ARG_SCALAR, 1},
      {"i32", 65536, 4, VXP_ARG_SCALAR, 0},
      {"i32", 8, 4, VXP_ARG_SCALAR, 0},
      {"i1", 1, 1, VXP_ARG_SCALAR, 1},
      {"i24", 3, 4, VXP_ARG_SCALAR, 1},
      {"si64", 8, 8, VXP_ARG_SCALAR, 1},
      {"ui8", 1, 1, VXP_ARG_SCALAR, 1},
      {"index", 4, 4, VXP_ARG_SCALAR, 1},
      {"index", 8, 8, VXP_ARG_SCALAR, 0},
      {"f16", 2, 2, VXP_ARG_SCALAR, 1},
      {"f64", 8, 8, VXP_ARG_SCALAR, 1},
      {"f32", 16, 4, VXP_ARG_SCALAR, 0},
      {"memref<?xf32>", 4, 4, VXP_ARG_POINTER, 1},
      {"memref<?xf32>", 8, 8, VXP_ARG_POINTER, 0},
      {"!llvm.ptr", 4, 4, VXP_ARG_POINTER, 1},
      {"memref<?xf32>", 4, 4, VXP_ARG_SCALAR, 0},
      {"i32", 4, 4, VXP_ARG_POINTER, 0},
      {"vector<4xf32>", 16, 16, VXP_ARG_SCALAR, 0},
      {"i99999999", 12500000, 4, VXP_ARG_SCALAR, 0},
      /* consistent with their types, but wider than any host value a
       * launch copies from: refused */
      {"i8000000", 1000000, 8, VXP_ARG_SCALAR, 0},
      {"i512", 64, 8, VXP_ARG_SCALAR, 0},
      {"i128", 16, 16, VXP_ARG_SCALAR, 0},
      {"i65", 9, 8, VXP_ARG_SCALAR, 0},
      {"i64", 8, 8, VXP_ARG_SCALAR, 1},
      {"i", 1, 1, VXP_ARG_SCALAR, 0},
      {"i08", 1, 1, VXP_ARG_SCALAR, 0},
      {"", 4, 4, VXP_ARG_SCALAR, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    vxp_arg a = {
        .type = (char *)cases[i].type, .kind = cases[i].kind, .size = cases[i].size, .align = cases[i].align};
    vxp_kernel k = {.name = (char *)"k", .entry = (char *)"e", .nargs = 1, .args = &a, .grid_dims = 1};
    k.args_size = a.size;
    k.launch_offset = (a.size + 3u) & ~3u;
    k.buffer_size = (k.launch_offset + VXP_LAUNCH_HEADER_SIZE + 7u) & ~7u;
    cr_assert_eq(vxp_kernel_check(&k), cases[i].ok ? VXP_OK : VXP_ELAYOUT, "%s of %u bytes", cases[i].type,
                 cases[i].size);
    cr_assert_eq(redecode(&k), cases[i].ok ? VXP_OK : VXP_ELAYOUT, "%s decoded", cases[i].type);
  }
}

Test(protocol, a_field_of_another_op_is_refused) {
  /* a fetch carrying a compile's "source" (found by the request fuzzer: it
   * decoded, then lost the field when encoded again) */
  static const uint8_t fetch_with_source[] = {
      0x84, 0xa2, 0x69, 0x64, 0x08, 0xa2, 0x6f, 0x70, 0xa5, 0x66, 0x65, 0x74, 0x63, 0x68, 0xa3, 0x6b,
      0x65, 0x79, 0xd9, 0x40, 0x30, 0x30, 0x31, 0x31, 0x32, 0x32, 0x33, 0x33, 0x34, 0x34, 0x35, 0x35,
      0x36, 0x36, 0x37, 0x37, 0x38, 0x38, 0x39, 0x39, 0x61, 0x61, 0x62, 0x62, 0x63, 0x63, 0x64, 0x64,
      0x65, 0x65, 0x66, 0x66, 0x30, 0x30, 0x31, 0x31, 0x32, 0x32, 0x33, 0x33, 0x34, 0x34, 0x35, 0x35,
      0x36, 0x36, 0x37, 0x37, 0x38, 0x38, 0x39, 0x39, 0x61, 0x61, 0x62, 0x62, 0x63, 0x63, 0x64, 0x64,
      0x65, 0x65, 0x66, 0x66, 0xa6, 0x73, 0x6f, 0x75, 0x72, 0x63, 0x65, 0xa1, 0x6b};
  vxp_request r;
  cr_assert_eq(vxp_request_decode(fetch_with_source, sizeof fetch_with_source, &r), VXP_EUNKNOWNKEY);
  cr_assert_eq(r.id, 8, "the id is kept for the error reply");
  vxp_request_clear(&r);
}

Test(protocol, frame_length_limits) {
  uint8_t h[4] = {0, 0, 0, 0};
  uint32_t len = 77;
  cr_assert_eq(vxp_frame_length(h, 1024, &len), VXP_EEMPTY);
  cr_assert_eq(len, 77, "output untouched on error");
  uint8_t big[4] = {0x00, 0x00, 0x04, 0x01}; /* 1025 */
  cr_assert_eq(vxp_frame_length(big, 1024, &len), VXP_ETOOBIG);
  uint8_t ok[4] = {0x00, 0x00, 0x04, 0x00};
  cr_assert_eq(vxp_frame_length(ok, 1024, &len), VXP_OK);
  cr_assert_eq(len, 1024);
  uint8_t huge[4] = {0xff, 0xff, 0xff, 0xff};
  cr_assert_eq(vxp_frame_length(huge, VXP_MAX_FRAME_DEFAULT, &len), VXP_ETOOBIG);
}

/* Packs a map with the given raw msgpack writer into a payload. */
typedef void (*packfn)(msgpack_packer *);

static int decode_packed(packfn f, vxp_request *out) {
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  msgpack_packer pk;
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  f(&pk);
  int rc = vxp_request_decode((const uint8_t *)sb.data, sb.size, out);
  msgpack_sbuffer_destroy(&sb);
  return rc;
}

static void kstr(msgpack_packer *pk, const char *s) {
  msgpack_pack_str(pk, strlen(s));
  msgpack_pack_str_body(pk, s, strlen(s));
}

static void pack_unknown_key(msgpack_packer *pk) {
  msgpack_pack_map(pk, 3);
  kstr(pk, "id");
  msgpack_pack_uint64(pk, 5);
  kstr(pk, "op");
  kstr(pk, "stats");
  kstr(pk, "colour");
  kstr(pk, "blue");
}
static void pack_wrong_type(msgpack_packer *pk) {
  msgpack_pack_map(pk, 3);
  kstr(pk, "id");
  msgpack_pack_uint64(pk, 6);
  kstr(pk, "op");
  kstr(pk, "compile");
  kstr(pk, "source");
  msgpack_pack_uint64(pk, 12);
}
static void pack_missing_source(msgpack_packer *pk) {
  msgpack_pack_map(pk, 2);
  kstr(pk, "id");
  msgpack_pack_uint64(pk, 8);
  kstr(pk, "op");
  kstr(pk, "compile");
}
static void pack_unknown_op(msgpack_packer *pk) {
  msgpack_pack_map(pk, 2);
  kstr(pk, "id");
  msgpack_pack_uint64(pk, 9);
  kstr(pk, "op");
  kstr(pk, "format-disk");
}
static void pack_not_a_map(msgpack_packer *pk) {
  msgpack_pack_array(pk, 1);
  msgpack_pack_uint64(pk, 1);
}
static void pack_bad_opt(msgpack_packer *pk) {
  msgpack_pack_map(pk, 4);
  kstr(pk, "id");
  msgpack_pack_uint64(pk, 10);
  kstr(pk, "op");
  kstr(pk, "compile");
  kstr(pk, "source");
  msgpack_pack_bin(pk, 1);
  msgpack_pack_bin_body(pk, "x", 1);
  kstr(pk, "opt_level");
  msgpack_pack_uint64(pk, 9);
}

Test(protocol, malformed_requests_are_refused_with_their_id) {
  vxp_request r;
  cr_assert_eq(decode_packed(pack_unknown_key, &r), VXP_EUNKNOWNKEY);
  cr_assert_eq(r.id, 5, "the id survives so the error reply can name it");
  cr_assert_eq(decode_packed(pack_wrong_type, &r), VXP_ETYPE);
  cr_assert_eq(r.id, 6);
  cr_assert_eq(decode_packed(pack_missing_source, &r), VXP_EMISSING);
  cr_assert_eq(decode_packed(pack_unknown_op, &r), VXP_EFORMAT);
  cr_assert_eq(decode_packed(pack_not_a_map, &r), VXP_EFORMAT);
  cr_assert_eq(decode_packed(pack_bad_opt, &r), VXP_ETYPE);
  cr_assert_null(r.source, "nothing is left allocated on error");
}

Test(protocol, truncated_and_trailing_bytes_are_refused) {
  vxp_request in = {.id = 1, .op = VXP_OP_STATS};
  uint8_t *frame;
  size_t flen;
  cr_assert_eq(vxp_request_encode(&in, &frame, &flen), VXP_OK);
  const uint8_t *p = frame + VXP_FRAME_HEADER_SIZE;
  size_t n = flen - VXP_FRAME_HEADER_SIZE;
  vxp_request out;
  for (size_t cut = 0; cut < n; cut++)
    cr_assert_neq(vxp_request_decode(p, cut, &out), VXP_OK, "prefix of %zu bytes accepted", cut);
  uint8_t *longer = malloc(n + 1);
  memcpy(longer, p, n);
  longer[n] = 0xc0; /* a trailing nil */
  cr_assert_eq(vxp_request_decode(longer, n + 1, &out), VXP_EFORMAT);
  free(longer);
  free(frame);
}

Test(protocol, garbage_never_crashes_the_decoder) {
  /* deterministic pseudo-random payloads, including deep nesting */
  uint32_t x = 12345;
  uint8_t buf[256];
  for (int round = 0; round < 20000; round++) {
    size_t n = (size_t)(round % 255) + 1;
    for (size_t i = 0; i < n; i++) {
      x = x * 1103515245u + 12345u;
      buf[i] = (uint8_t)(x >> 16);
    }
    if (round % 3 == 0) buf[0] = 0x80 | (buf[0] & 0x0f); /* a fixmap start */
    vxp_request r;
    vxp_response s;
    if (vxp_request_decode(buf, n, &r) == VXP_OK) vxp_request_clear(&r);
    if (vxp_response_decode(buf, n, &s) == VXP_OK) vxp_response_clear(&s);
  }
  memset(buf, 0x91, sizeof buf); /* 256 nested one-element arrays */
  vxp_request r;
  cr_assert_neq(vxp_request_decode(buf, sizeof buf, &r), VXP_OK);
}

Test(protocol, declared_sizes_beyond_the_payload_are_refused_before_allocating) {
  /* {"id": [2^32-1 elements...]} in 12 bytes: msgpack-c alone would try to
   * allocate for four billion objects */
  const uint8_t arr32[] = {0x81, 0xa2, 'i', 'd', 0xdd, 0xff, 0xff, 0xff, 0xff, 0x01, 0x02, 0x03};
  vxp_request r;
  cr_assert_eq(vxp_request_decode(arr32, sizeof arr32, &r), VXP_EFORMAT);
  const uint8_t map32[] = {0xdf, 0x7f, 0xff, 0xff, 0xff, 0xc0};
  cr_assert_eq(vxp_request_decode(map32, sizeof map32, &r), VXP_EFORMAT);
  const uint8_t str32[] = {0x81, 0xa2, 'o', 'p', 0xdb, 0xff, 0xff, 0xff, 0xf0, 'x'};
  cr_assert_eq(vxp_request_decode(str32, sizeof str32, &r), VXP_EFORMAT);
  const uint8_t bin32[] = {0x81, 0xa6, 's', 'o', 'u', 'r', 'c', 'e', 0xc6, 0x10, 0, 0, 0, 'x'};
  cr_assert_eq(vxp_request_decode(bin32, sizeof bin32, &r), VXP_EFORMAT);
  vxp_response s;
  cr_assert_eq(vxp_response_decode(arr32, sizeof arr32, &s), VXP_EFORMAT);
}

Test(protocol, unknown_response_keys_are_tolerated) {
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  msgpack_packer pk;
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  msgpack_pack_map(&pk, 3);
  kstr(&pk, "id");
  msgpack_pack_uint64(&pk, 4);
  kstr(&pk, "status");
  kstr(&pk, "ok");
  kstr(&pk, "added_in_v2");
  msgpack_pack_true(&pk);
  vxp_response r;
  cr_assert_eq(vxp_response_decode((const uint8_t *)sb.data, sb.size, &r), VXP_OK);
  cr_assert_eq(r.id, 4);
  vxp_response_clear(&r);
  msgpack_sbuffer_destroy(&sb);
}

Test(protocol, one_encoded_response_serves_every_waiter) {
  /* the daemon encodes a compile's reply once and rewrites the id per client */
  vxp_response in = {.id = 5, .op = VXP_OP_COMPILE, .status = VXP_STATUS_OK, .key = "k", .cached = false};
  uint8_t *frame;
  size_t flen;
  cr_assert_eq(vxp_response_encode(&in, &frame, &flen), VXP_OK);
  cr_assert_eq(vxp_frame_set_id(frame, flen, 0x1122334455667788ull), VXP_OK);
  uint32_t len;
  const uint8_t *p = payload_of(frame, flen, &len);
  vxp_response out;
  cr_assert_eq(vxp_response_decode(p, len, &out), VXP_OK);
  cr_assert_eq(out.id, 0x1122334455667788ull);
  cr_assert_str_eq(out.key, "k");
  vxp_response_clear(&out);
  free(frame);
  /* a frame of another shape is refused, untouched */
  vxp_request req = {.id = 9, .op = VXP_OP_STATS};
  cr_assert_eq(vxp_request_encode(&req, &frame, &flen), VXP_OK);
  uint8_t *copy = malloc(flen);
  memcpy(copy, frame, flen);
  cr_assert_eq(vxp_frame_set_id(frame, flen, 1), VXP_EFORMAT);
  cr_assert_eq(memcmp(copy, frame, flen), 0);
  cr_assert_eq(vxp_frame_set_id(frame, 3, 1), VXP_EFORMAT);
  free(copy);
  free(frame);
}

Test(config, remote_storage_urls_parse_as_ccache_and_sccache_write_them) {
  vxp_remote_url u;
  char err[256];
  cr_assert_eq(vxp_remote_url_parse("redis://cache.farm:6380/3", &u, err, sizeof err), 0, "%s", err);
  cr_assert_str_eq(u.host, "cache.farm");
  cr_assert_eq(u.port, 6380);
  cr_assert_eq(u.db, 3);
  cr_assert_eq(u.is_unix, 0);
  cr_assert_str_eq(u.password, "");
  cr_assert_eq(vxp_remote_url_parse("redis://bob:s%40cr%3At@10.0.0.7", &u, err, sizeof err), 0, "%s", err);
  cr_assert_str_eq(u.user, "bob");
  cr_assert_str_eq(u.password, "s@cr:t", "percent-decoded");
  cr_assert_eq(u.port, 6379, "default port");
  cr_assert_eq(u.db, 0);
  cr_assert_eq(vxp_remote_url_parse("redis://:pw@[::1]:7000/1", &u, err, sizeof err), 0, "%s", err);
  cr_assert_str_eq(u.host, "::1");
  cr_assert_str_eq(u.user, "");
  cr_assert_str_eq(u.password, "pw");
  cr_assert_eq(u.port, 7000);
  char shown[512];
  vxp_remote_url_show(&u, shown, sizeof shown);
  cr_assert_str_eq(shown, "redis://:***@[::1]:7000/1");
  cr_assert_eq(vxp_remote_url_parse("redis+unix:///run/redis/redis.sock?db=2", &u, err, sizeof err), 0, "%s",
               err);
  cr_assert_eq(u.is_unix, 1);
  cr_assert_str_eq(u.path, "/run/redis/redis.sock");
  cr_assert_eq(u.db, 2);
  cr_assert_eq(vxp_remote_url_parse("redis+unix:/tmp/r.sock", &u, err, sizeof err), 0, "%s", err);
  cr_assert_str_eq(u.path, "/tmp/r.sock");
  /* a password on a Unix socket: the user information before an empty host */
  cr_assert_eq(
      vxp_remote_url_parse("redis+unix://farm:s%40cret@/run/redis/redis.sock?db=1", &u, err, sizeof err), 0,
      "%s", err);
  cr_assert_eq(u.is_unix, 1);
  cr_assert_str_eq(u.user, "farm");
  cr_assert_str_eq(u.password, "s@cret");
  cr_assert_str_eq(u.path, "/run/redis/redis.sock");
  cr_assert_eq(u.db, 1);
  vxp_remote_url_show(&u, shown, sizeof shown);
  cr_assert_str_eq(shown, "redis+unix://farm:***@/run/redis/redis.sock?db=1");
  /* refused, each with a message that does not echo the password */
  /* an HTTP(S) storage: the base URL rebuilt, default ports, no user information */
  cr_assert_eq(vxp_remote_url_parse("https://cache.example/a/b", &u, err, sizeof err), 0, "%s", err);
  cr_assert_eq(u.kind, VXP_REMOTE_HTTP);
  cr_assert_eq(u.tls, 1);
  cr_assert_str_eq(u.base, "https://cache.example:443/a/b");
  cr_assert_eq(vxp_remote_url_parse("http://[::1]:8080", &u, err, sizeof err), 0, "%s", err);
  cr_assert_str_eq(u.base, "http://[::1]:8080");
  vxp_remote_url_show(&u, shown, sizeof shown);
  cr_assert_str_eq(shown, "http://[::1]:8080");
  const char *bad_http[] = {"https://u:hunter2@host/x", "http://host/x?y=1", "http://host#f", "http://:80/x",
                            "ftp://host/x"};
  for (size_t i = 0; i < sizeof bad_http / sizeof *bad_http; i++) {
    err[0] = 0;
    cr_assert_eq(vxp_remote_url_parse(bad_http[i], &u, err, sizeof err), -EINVAL, "%s", bad_http[i]);
    cr_assert_neq(err[0], 0, "%s has a message", bad_http[i]);
    cr_assert_null(strstr(err, "hunter2"), "%s", err);
  }
  const char *bad[] = {"gopher://host",     "redis://",         "redis://host:0",   "redis://host:99999",
                       "redis://host/abc",  "redis://host?x=1", "redis+unix://",    "redis+unix://host/x",
                       "redis://user@host", "redis://host/1#f", "not a url at all", ""};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    err[0] = 0;
    cr_assert_eq(vxp_remote_url_parse(bad[i], &u, err, sizeof err), -EINVAL, "%s", bad[i]);
    cr_assert_neq(err[0], 0, "%s has a message", bad[i]);
  }
  cr_assert_eq(vxp_remote_url_parse("redis://u:hunter2@host:x", &u, err, sizeof err), -EINVAL);
  cr_assert_null(strstr(err, "hunter2"), "%s", err);
  /* vxc's mask, without a parser: never less than the parser would hide */
  const char *masked[][2] = {
      {"redis://u:hunter2@host", "redis://u:***@host"},
      {"redis://u:hunter2@host:x", "redis://u:***@host:x"},
      {"redis://:hunter2@[::1]:6380/2", "redis://:***@[::1]:6380/2"},
      {"redis://hunter2@host", "redis://***@host"},
      {"redis://u:hun@ter2@host", "redis://u:***@host"},
      {"redis+unix://u:hunter2@/run/r.sock?db=1", "redis+unix://u:***@/run/r.sock?db=1"},
      {"u:hunter2@host", "u:***@host"},
      {"hunter2@host", "***@host"},
      {"redis://host:6379/0", "redis://host:6379/0"},
      {"", ""},
  };
  for (size_t i = 0; i < sizeof masked / sizeof *masked; i++) {
    vxp_config_mask_url(masked[i][0], shown, sizeof shown);
    cr_assert_str_eq(shown, masked[i][1], "%s", masked[i][0]);
  }
  vxp_config_mask_url("redis://u:hunter2@host", shown, 12);
  cr_assert_str_eq(shown, "redis://u:*", "truncated, never past the mask");
  int b = -1;
  cr_assert_eq(vxp_config_bool("Yes", &b), 0);
  cr_assert_eq(b, 1);
  cr_assert_eq(vxp_config_bool("off", &b), 0);
  cr_assert_eq(b, 0);
  cr_assert_eq(vxp_config_bool("maybe", &b), -EINVAL);
}

/* The configuration file config_file wrote last, removed by the next call
 * and when the test's process exits. */
static char config_path[128];

static void config_file_remove(void) {
  if (config_path[0]) unlink(config_path);
  config_path[0] = '\0';
}

/* Writes text to a fresh configuration file and points VORTEXD_CONFIG at it. */
static void config_file(const char *text) {
  if (!config_path[0]) atexit(config_file_remove);
  config_file_remove();
  char *path = config_path;
  vxt_tmp_template(config_path, sizeof config_path, "vxt-conf-");
  int fd = mkstemp(path);
  cr_assert_geq(fd, 0);
  FILE *f = fdopen(fd, "w");
  cr_assert_not_null(f);
  fputs(text, f);
  fclose(f);
  setenv("VORTEXD_CONFIG", path, 1);
}

Test(config, values_are_bounded_one_by_one_and_in_all) {
  static vxp_config cfg;
  static char text[200000], err[4200];
  static char value[VXP_CONF_LINE_MAX + 2];
  unsetenv("VORTEXD_SOCKET");
  unsetenv("VORTEXD_CACHE_DIR");
  /* the longest value is kept whole, from the file (past inih's 200-byte default) */
  memset(value, 'a', sizeof value - 1);
  snprintf(text, sizeof text, "# long\nvortex_sdk = /%.*s\n", VXP_CONF_VALUE_MAX - 1, value);
  config_file(text);
  cr_assert_eq(vxp_config_load(&cfg, err, sizeof err), 0, "%s", err);
  cr_assert_eq(strlen(cfg.value[VXP_CONF_vortex_sdk]), VXP_CONF_VALUE_MAX);
  cr_assert_eq(cfg.origin[VXP_CONF_vortex_sdk], VXP_FROM_FILE);
  cr_assert_neq(cfg.value[VXP_CONF_socket][0], '\0', "derived defaults still filled in");
  /* a ';' inside a value is part of it; comments are whole lines */
  config_file("; a comment\n# another\nvortex_sdk = /opt/a ;b\n");
  cr_assert_eq(vxp_config_load(&cfg, err, sizeof err), 0, "%s", err);
  cr_assert_str_eq(cfg.value[VXP_CONF_vortex_sdk], "/opt/a ;b");
  /* one byte more is refused at its line, as too long (not as an unknown key) */
  snprintf(text, sizeof text, "workers = 1\nvortex_sdk = /%.*s\n", VXP_CONF_VALUE_MAX, value);
  config_file(text);
  cr_assert_eq(vxp_config_load(&cfg, err, sizeof err), -EINVAL);
  cr_assert_not_null(strstr(err, ":2: vortex_sdk: value too long"), "%s", err);
  /* a line past the line bound is named as such, at its number */
  snprintf(text, sizeof text, "workers = 1\n\n# %s\nworkers = 2\n", value);
  config_file(text);
  cr_assert_eq(vxp_config_load(&cfg, err, sizeof err), -EINVAL);
  cr_assert_not_null(strstr(err, ":3: line longer than"), "%s", err);
  /* from the environment, with the variable named */
  config_file("");
  snprintf(text, sizeof text, "%.*s", VXP_CONF_VALUE_MAX, value);
  setenv("VORTEXD_VORTEX_SDK", text, 1);
  cr_assert_eq(vxp_config_load(&cfg, err, sizeof err), 0, "%s", err);
  cr_assert_eq(cfg.origin[VXP_CONF_vortex_sdk], VXP_FROM_ENV);
  cr_assert_eq(vxp_config_set(&cfg, "vortex_sdk", "/flag", VXP_FROM_FLAG), 0);
  cr_assert_str_eq(cfg.value[VXP_CONF_vortex_sdk], "/flag");
  cr_assert_eq(cfg.origin[VXP_CONF_vortex_sdk], VXP_FROM_FLAG);
  snprintf(text, sizeof text, "%.*s", VXP_CONF_VALUE_MAX + 1, value);
  setenv("VORTEXD_VORTEX_SDK", text, 1);
  cr_assert_eq(vxp_config_load(&cfg, err, sizeof err), -EINVAL);
  cr_assert_not_null(strstr(err, "VORTEXD_VORTEX_SDK: value too long"), "%s", err);
  unsetenv("VORTEXD_VORTEX_SDK");
  /* all values together are bounded: 17 of 4000 bytes do not fit in 64 KiB */
  snprintf(text, sizeof text, "%.4000s", value);
  int set = 0;
  for (int k = 0; k < VXP_CONF_COUNT && set < 17; k++, set++)
    setenv(vxp_config_env((vxp_conf_key)k), text, 1);
  cr_assert_eq(set, 17);
  cr_assert_eq(vxp_config_load(&cfg, err, sizeof err), -E2BIG);
  cr_assert_not_null(strstr(err, "too long in all"), "%s", err);
}
