/*
 * vxd_main.c - vortexd command line.
 *
 *   vortexd [--KEY VALUE ...] [--verbose]      (KEY: any configuration key,
 *                                               '_' written '-')
 *   vortexd --version | --help
 *
 * Settings come from the configuration file, then the environment, then
 * these flags (vxp_config.h).  Runs in the foreground (as systemd and
 * sccache-style auto-start expect; vxc detaches it when it starts one).
 */
#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cache/vxk_remote.h"
#include "lowering/vxl.h"
#include "protocol/vxp.h"
#include "protocol/vxp_config.h"
#include "vxd.h"

/* The long option of configuration key k: its name, '_' spelled '-'. */
static void vxd__flag_name(vxp_conf_key k, char name[64]) {
  snprintf(name, 64, "%s", vxp_config_name(k));
  for (char *p = name; *p; p++)
    if (*p == '_') *p = '-';
}

static void vxd__usage(FILE *f) {
  fputs("usage: vortexd [options]   (each also a configuration key and a variable)\n", f);
  for (int k = 0; k < VXP_CONF_COUNT; k++) {
    char name[64], flag[66];
    vxd__flag_name((vxp_conf_key)k, name);
    snprintf(flag, sizeof flag, "--%s", name);
    fprintf(f, "  %-27s %s ($%s)\n", flag, vxp_config_help((vxp_conf_key)k), vxp_config_env((vxp_conf_key)k));
  }
  fputs("  --verbose                   log at info level\n"
        "  --version                   print version and toolchain, exit\n"
        "Exit status: 0 stopped cleanly; 1 cannot serve (socket, directory, compiler); 2 another vortexd\n"
        "serves the socket; 64 usage; 70 stopped, but with an internal error (a leaked handle);\n"
        "78 configuration (a bad value, or a configuration or key file of the wrong owner or mode).\n",
        f);
}

static const char *const vxd__origins[] = {"default", "configuration file", "environment", "flag"};

/* Reports a bad value of key k (naming where it came from); returns 78.
 * remote_storage's value is not repeated: it may hold a password. */
static int vxd__bad(const vxp_config *pc, vxp_conf_key k, const char *want) {
  int secret = k == VXP_CONF_remote_storage;
  fprintf(stderr, "vortexd: %s%s%s%s (from the %s%s%s): %s\n", vxp_config_name(k), secret ? "" : " = '",
          secret ? "" : pc->value[k], secret ? "" : "'", vxd__origins[pc->origin[k]],
          pc->origin[k] == VXP_FROM_FILE ? " " : "", pc->origin[k] == VXP_FROM_FILE ? pc->file : "", want);
  return 78; /* EX_CONFIG */
}

/* A size or count of key k within [lo, hi] into *out; 0 or 64. */
static int vxd__num(const vxp_config *pc, vxp_conf_key k, int size, uint64_t lo, uint64_t hi, uint64_t *out) {
  uint64_t v = 0;
  int rc = size ? vxp_config_size(pc->value[k], &v) : vxp_config_uint(pc->value[k], &v);
  if (rc != 0 || v < lo || v > hi) {
    char want[96];
    snprintf(want, sizeof want, "expected %s from %llu to %llu", size ? "a size (K/M/G)" : "a number",
             (unsigned long long)lo, (unsigned long long)hi);
    return vxd__bad(pc, k, want);
  }
  *out = v;
  return 0;
}

/* The remote_* keys into cfg (the shared second cache level); 0 or 78
 * (EX_CONFIG; reported). */
static int vxd__remote_settings(const vxp_config *pc, vxd_config *cfg) {
  uint64_t v;
  const char *remote = pc->value[VXP_CONF_remote_storage];
  char err[256];
  cfg->remote_on = remote[0] != '\0';
  if (cfg->remote_on && vxp_remote_url_parse(remote, &cfg->remote, err, sizeof err) != 0)
    return vxd__bad(pc, VXP_CONF_remote_storage, err); /* err names no password */
  if (vxp_config_bool(pc->value[VXP_CONF_remote_read_only], &cfg->remote_read_only) != 0)
    return vxd__bad(pc, VXP_CONF_remote_read_only, "true or false");
  const char *prefix = pc->value[VXP_CONF_remote_prefix];
  if (!vxk_remote_prefix_valid(prefix))
    return vxd__bad(pc, VXP_CONF_remote_prefix, "1 to 128 of [A-Za-z0-9_.:-]");
  memcpy(cfg->remote_prefix, prefix, strlen(prefix) + 1); /* valid: at most 128 bytes */
  if (vxd__num(pc, VXP_CONF_remote_ttl, 0, 0, 86400ull * 3650, &v)) return 78;
  cfg->remote_ttl_s = (unsigned)v;
  if (vxd__num(pc, VXP_CONF_remote_connect_timeout, 0, 1, 60000, &v)) return 78;
  cfg->remote_connect_ms = (unsigned)v;
  if (vxd__num(pc, VXP_CONF_remote_timeout, 0, 1, 60000, &v)) return 78;
  cfg->remote_timeout_ms = (unsigned)v;
  const char *creds = pc->value[VXP_CONF_remote_credentials], *ca = pc->value[VXP_CONF_remote_ca_file];
  char cerr[4400];
  if (creds[0] && vxp_remote_credentials_load(creds, &cfg->remote_credentials, cerr, sizeof cerr) != 0)
    return vxd__bad(pc, VXP_CONF_remote_credentials, cerr);
  if (strlen(ca) >= sizeof cfg->remote_ca_file) return vxd__bad(pc, VXP_CONF_remote_ca_file, "path too long");
  memcpy(cfg->remote_ca_file, ca, strlen(ca) + 1);
  if ((creds[0] || ca[0]) && cfg->remote_on && cfg->remote.kind != VXP_REMOTE_HTTP)
    return vxd__bad(pc, creds[0] ? VXP_CONF_remote_credentials : VXP_CONF_remote_ca_file,
                    "only an http:// or https:// remote_storage takes it (Redis: the URL's password)");
  if (vxd__num(pc, VXP_CONF_remote_lease, 0, 0, 600000, &v)) return 78;
  if (v && v < 100) return vxd__bad(pc, VXP_CONF_remote_lease, "0 (no leases) or from 100 to 600000");
  cfg->remote_lease_ms = (unsigned)v;
  if (vxd__num(pc, VXP_CONF_remote_write_queue, 1, 0, UINT64_MAX, &cfg->remote_write_queue)) return 78;
  const char *signing = pc->value[VXP_CONF_remote_signing_key],
             *trusted = pc->value[VXP_CONF_remote_trusted_keys];
  if (signing[0] && vxk_signer_load(signing, &cfg->remote_signer, err, sizeof err) != VXK_OK)
    return vxd__bad(pc, VXP_CONF_remote_signing_key, err);
  if (trusted[0] && vxk_trust_load(trusted, &cfg->remote_trust, err, sizeof err) != VXK_OK)
    return vxd__bad(pc, VXP_CONF_remote_trusted_keys, err);
  return 0;
}

/* Turns the configuration into the daemon's settings; 0 or 78 (EX_CONFIG; reported). */
static int vxd__settings(const vxp_config *pc, vxd_config *cfg) {
  if (strlen(pc->value[VXP_CONF_socket]) >= sizeof cfg->socket_path)
    return vxd__bad(pc, VXP_CONF_socket, "too long for a Unix socket address");
  memcpy(cfg->socket_path, pc->value[VXP_CONF_socket], strlen(pc->value[VXP_CONF_socket]) + 1);
  if (strlen(pc->value[VXP_CONF_cache_dir]) >= sizeof cfg->cache_dir)
    return vxd__bad(pc, VXP_CONF_cache_dir, "path too long");
  memcpy(cfg->cache_dir, pc->value[VXP_CONF_cache_dir], strlen(pc->value[VXP_CONF_cache_dir]) + 1);
  uint64_t v;
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  cfg->workers = ncpu > 0 ? (unsigned)ncpu : 1;
  if (pc->value[VXP_CONF_workers][0]) {
    if (vxd__num(pc, VXP_CONF_workers, 0, 1, 64, &v)) return 78;
    cfg->workers = (unsigned)v;
  }
  if (vxd__num(pc, VXP_CONF_max_cache_size, 1, 1, UINT64_MAX, &cfg->max_cache_bytes)) return 78;
  if (vxd__num(pc, VXP_CONF_max_frame, 1, 64, VXP_MAX_FRAME_DEFAULT, &v)) return 78;
  cfg->max_frame = (uint32_t)v;
  if (vxd__num(pc, VXP_CONF_max_source, 1, 1, VXP_MAX_FRAME_DEFAULT, &v)) return 78;
  cfg->max_source = (uint32_t)v;
  if (vxd__num(pc, VXP_CONF_job_timeout, 0, 0, 86400, &v)) return 78;
  cfg->job_timeout_s = (unsigned)v;
  if (vxd__num(pc, VXP_CONF_idle_timeout, 0, 0, 86400ull * 365, &v)) return 78;
  cfg->idle_timeout_s = (unsigned)v;
  if (vxd__num(pc, VXP_CONF_max_connections, 0, 1, 65536, &v)) return 78;
  cfg->max_connections = (unsigned)v;
  if (vxd__num(pc, VXP_CONF_frame_timeout, 0, 1, 86400, &v)) return 78;
  cfg->frame_timeout_s = (unsigned)v;
  if (vxd__num(pc, VXP_CONF_connection_idle_timeout, 0, 0, 86400ull * 365, &v)) return 78;
  cfg->conn_idle_timeout_s = (unsigned)v;
  if (vxd__num(pc, VXP_CONF_max_unsent, 1, 4096, UINT64_MAX, &cfg->max_unsent)) return 78;
  if (vxd__num(pc, VXP_CONF_worker_memory, 1, 0, UINT64_MAX, &cfg->worker_memory)) return 78;
  /* a worker maps ~350 MB of address space before it compiles anything
   * (LLVM and MLIR, its heap): a limit under that fails every compile */
  if (cfg->worker_memory && cfg->worker_memory < (512ull << 20))
    return vxd__bad(pc, VXP_CONF_worker_memory, "0 or at least 512M (the compiler itself needs it)");
  if (vxd__num(pc, VXP_CONF_piece_helpers, 0, 0, VXD_MAX_HELPERS, &v)) return 78;
  cfg->piece_helpers = (unsigned)v;
  if (vxd__num(pc, VXP_CONF_crash_memory, 0, 0, 86400, &v)) return 78;
  cfg->crash_memory_s = (unsigned)v;
  if (vxd__num(pc, VXP_CONF_lru_resolution, 0, 0, 86400, &v)) return 78;
  cfg->lru_resolution_us = v * 1000000u;
  cfg->allowed_gid = (gid_t)-1;
  const char *g = pc->value[VXP_CONF_allow_group];
  if (g[0]) {
    struct group gr, *grp = NULL;
    char buf[4096];
    if (vxp_config_uint(g, &v) == 0)
      cfg->allowed_gid = (gid_t)v;
    else if (getgrnam_r(g, &gr, buf, sizeof buf, &grp) == 0 && grp)
      cfg->allowed_gid = grp->gr_gid;
    else
      return vxd__bad(pc, VXP_CONF_allow_group, "no such group");
  }
  if (strlen(pc->value[VXP_CONF_vortex_sdk]) >= sizeof cfg->vortex_sdk)
    return vxd__bad(pc, VXP_CONF_vortex_sdk, "path too long");
  memcpy(cfg->vortex_sdk, pc->value[VXP_CONF_vortex_sdk], strlen(pc->value[VXP_CONF_vortex_sdk]) + 1);
  char sdk_err[4200];
  /* what an image is linked by and with, besides the SDK (vxd_worker.c) */
  static const char *const sdk_tools[] = {VXD_LD, VXD_LIBC, VXD_LIBGCC, VXD_LIBC64, VXD_LIBGCC64};
  if (cfg->vortex_sdk[0] &&
      vxd_sdk_open(cfg->vortex_sdk, sdk_tools, 5, &cfg->sdk, sdk_err, sizeof sdk_err) != 0)
    return vxd__bad(pc, VXP_CONF_vortex_sdk, sdk_err);
  static const char *const levels[] = {"error", "warning", "notice", "info", "debug"};
  if (vxp_target_parse(pc->value[VXP_CONF_target], &cfg->vortex_abi, &cfg->xlen) != 0)
    return vxd__bad(pc, VXP_CONF_target, "vortex2-rv32, vortex2-rv64, vortex3-rv32 or vortex3-rv64");
  cfg->log_level = -1;
  for (int i = 0; i < 5; i++)
    if (strcasecmp(pc->value[VXP_CONF_log_level], levels[i]) == 0) cfg->log_level = 3 + i;
  if (cfg->log_level < 0) return vxd__bad(pc, VXP_CONF_log_level, "error, warning, notice, info or debug");
  return vxd__remote_settings(pc, cfg);
}

/* Where a file vortexd runs or loads is: under an installed vortexd's
 * directory (installed, a path relative to it, so that an installed tree
 * can move), else beside it (name; the build tree), with access `mode`
 * (X_OK, R_OK).  Into path (cap bytes), or "" when neither has it. */
static void vxd__find_beside(const char *installed, const char *name, int mode, char *path, size_t cap) {
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  path[0] = '\0';
  if (n <= 0) return;
  self[n] = '\0';
  char *slash = strrchr(self, '/');
  if (!slash) return;
  *slash = '\0';
  if (snprintf(path, cap, "%s/%s", self, installed) < (int)cap && access(path, mode) == 0) return;
  if (snprintf(path, cap, "%s/%s", self, name) < (int)cap && access(path, mode) == 0) return;
  path[0] = '\0';
}

/* Ends vortexd once everything durable is closed (cache, socket, lock,
 * log).  What is left then is memory: the template compiler's MLIR context
 * and LLVM's and MLIR's ~3 000 static objects, whose destructors would take
 * about a millisecond to free what the process's end frees at once; so
 * stdio is flushed and the process ends without them, as lld does.  Builds
 * with the sanitizers run them all, so that LeakSanitizer checks every
 * allocation. */
static _Noreturn void vxd__exit(int status) {
#ifdef VXD_FULL_TEARDOWN
  exit(status);
#else
  fflush(NULL);
  _exit(status);
#endif
}

/* Reads the command line: the value of each configuration key given as a
 * flag into given[k] (the last one given wins; NULL when not given),
 * --verbose into *verbose.  --version, --help and a usage error are
 * answered here, and the process ends, before any configuration file is
 * read: they answer whatever those files hold. */
static void vxd__command_line(int argc, char **argv, const char *given[VXP_CONF_COUNT], int *verbose) {
  enum { O_VERSION = 1000, O_VERBOSE, O_HELP };
  char names[VXP_CONF_COUNT][64];
  struct option opts[VXP_CONF_COUNT + 4];
  for (int k = 0; k < VXP_CONF_COUNT; k++) {
    vxd__flag_name((vxp_conf_key)k, names[k]);
    opts[k] = (struct option){names[k], required_argument, NULL, k};
  }
  opts[VXP_CONF_COUNT] = (struct option){"version", no_argument, NULL, O_VERSION};
  opts[VXP_CONF_COUNT + 1] = (struct option){"verbose", no_argument, NULL, O_VERBOSE};
  opts[VXP_CONF_COUNT + 2] = (struct option){"help", no_argument, NULL, O_HELP};
  opts[VXP_CONF_COUNT + 3] = (struct option){NULL, 0, NULL, 0};
  int c;
  while ((c = getopt_long(argc, argv, "vh", opts, NULL)) != -1) {
    if (c >= 0 && c < VXP_CONF_COUNT) {
      given[c] = optarg;
      continue;
    }
    switch (c) {
    case 'v':
    case O_VERBOSE: *verbose = 1; break;
    case O_VERSION:
      printf("%s\nlowering ABI %u, protocol %u\n%s\n", VXD_SERVER_NAME, VXL_LOWERING_ABI_VERSION,
             VXP_PROTOCOL_VERSION, vxl_toolchain_fingerprint());
      vxd__exit(0);
    case 'h':
    case O_HELP: vxd__usage(stdout); vxd__exit(0);
    default: vxd__usage(stderr); vxd__exit(64);
    }
  }
  if (optind < argc) {
    fprintf(stderr, "vortexd: unexpected argument '%s'\n", argv[optind]);
    vxd__exit(64);
  }
}

int main(int argc, char **argv) {
  const char *given[VXP_CONF_COUNT] = {0};
  int verbose = 0;
  vxd__command_line(argc, argv, given, &verbose);
  vxp_config pc;
  char err[4200];
  if (vxp_config_load(&pc, err, sizeof err) != 0) {
    fprintf(stderr, "vortexd: %s\n", err);
    vxd__exit(78); /* EX_CONFIG */
  }
  for (int k = 0; k < VXP_CONF_COUNT; k++) { /* flags over the configuration */
    int rc = given[k] ? vxp_config_set(&pc, vxp_config_name((vxp_conf_key)k), given[k], VXP_FROM_FLAG) : 0;
    if (rc != 0) {
      char name[64];
      vxd__flag_name((vxp_conf_key)k, name);
      fprintf(stderr, "vortexd: --%s: %s\n", name,
              rc == -E2BIG ? "configuration values too long in all" : "value too long");
      vxd__exit(78);
    }
  }
  vxd_config cfg;
  memset(&cfg, 0, sizeof cfg);
  int rc = 78; /* a setting refused */
  if (vxd__settings(&pc, &cfg) == 0) {
    if (argc > 0 && argv[0]) { /* argv's strings lie end to end */
      cfg.title = argv[0];
      cfg.title_cap = (size_t)(argv[argc - 1] + strlen(argv[argc - 1]) - argv[0]) + 1;
    }
    vxd__find_beside(VXD_BIN_TO_LIBEXEC "/vortexd/vortexd-hostcc", "vortexd-hostcc", X_OK, cfg.hostcc,
                     sizeof cfg.hostcc);
    vxd__find_beside(VXD_BIN_TO_LIB "/vortexd/vortexd-http.so", "vortexd-http.so", R_OK, cfg.http_module,
                     sizeof cfg.http_module);
    if (verbose) {
      cfg.verbose = 1;
      if (cfg.log_level < 6) cfg.log_level = 6;
    }
    rc = vxd_server_run(&cfg);
  }
  vxd_sdk_close(cfg.sdk);
  vxk_signer_free(cfg.remote_signer);
  vxk_trust_free(cfg.remote_trust);
  vxd__exit(rc);
}
