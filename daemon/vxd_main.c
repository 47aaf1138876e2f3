/*
 * vxd_main.c - vortexd command line.
 *
 *   vortexd [--socket PATH] [--cache-dir DIR] [--workers N]
 *           [--max-cache-size SIZE] [--max-frame BYTES]
 *           [--job-timeout SEC] [--idle-timeout SEC] [--allow-group G]
 *           [--verbose]
 *   vortexd --version | --help
 *
 * Runs in the foreground (as systemd and sccache-style auto-start expect;
 * vxc detaches it when it starts one).  VORTEXD_SOCKET and VORTEXD_CACHE_DIR
 * set the defaults of --socket and --cache-dir.
 */
#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vxd.h"
#include "vxl.h"
#include "vxp.h"
#include "vxp_paths.h"

static void vxd__usage(FILE *f) {
  fprintf(f,
          "usage: vortexd [options]\n"
          "  --socket PATH        Unix socket to serve (default: $VORTEXD_SOCKET,\n"
          "                       $XDG_RUNTIME_DIR/vortexd/vortexd.sock or /tmp/vortexd-$UID/)\n"
          "  --cache-dir DIR      cache directory (default: $VORTEXD_CACHE_DIR,\n"
          "                       $XDG_CACHE_HOME/vortexd or ~/.cache/vortexd)\n"
          "  --workers N          compile worker processes (default: online CPUs)\n"
          "  --max-cache-size S   cache size limit, bytes or with K/M/G (default 1G)\n"
          "  --max-frame BYTES    largest request accepted (default %u)\n"
          "  --job-timeout SEC    stop a compile after SEC seconds (default 60; 0 = never)\n"
          "  --idle-timeout SEC   exit after SEC seconds without requests (default 0 = never)\n"
          "  --allow-group G      also serve members of group G (name or gid); the\n"
          "                       socket becomes 0660 and its directory may be 0750\n"
          "  --verbose            log start-up details to stderr\n"
          "  --version            print version and toolchain, exit\n",
          VXP_MAX_FRAME_DEFAULT);
}

/* Parses "123", "64K", "512M", "2G" into bytes; -1 on error. */
static long long vxd__size(const char *s) {
  char *end = NULL;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno || end == s || v < 0) return -1;
  switch (*end) {
  case '\0': return v;
  case 'K':
  case 'k':
    v *= 1024;
    end++;
    break;
  case 'M':
  case 'm':
    v *= 1024 * 1024;
    end++;
    break;
  case 'G':
  case 'g':
    v *= 1024LL * 1024 * 1024;
    end++;
    break;
  default: return -1;
  }
  return *end ? -1 : v;
}

int main(int argc, char **argv) {
  vxd_config cfg;
  memset(&cfg, 0, sizeof cfg);
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  cfg.workers = ncpu > 0 ? (unsigned)ncpu : 1;
  cfg.max_frame = VXP_MAX_FRAME_DEFAULT;
  cfg.job_timeout_s = 60;
  cfg.allowed_gid = (gid_t)-1;

  enum { O_SOCKET = 256, O_CACHE, O_WORKERS, O_MAXCACHE, O_MAXFRAME, O_JOBTO, O_IDLETO, O_VERSION, O_GROUP };
  static const struct option opts[] = {
      {"socket", required_argument, NULL, O_SOCKET},
      {"cache-dir", required_argument, NULL, O_CACHE},
      {"workers", required_argument, NULL, O_WORKERS},
      {"max-cache-size", required_argument, NULL, O_MAXCACHE},
      {"max-frame", required_argument, NULL, O_MAXFRAME},
      {"job-timeout", required_argument, NULL, O_JOBTO},
      {"idle-timeout", required_argument, NULL, O_IDLETO},
      {"allow-group", required_argument, NULL, O_GROUP},
      {"verbose", no_argument, NULL, 'v'},
      {"version", no_argument, NULL, O_VERSION},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  const char *socket = NULL, *cache = NULL;
  int c;
  long long v;
  while ((c = getopt_long(argc, argv, "vh", opts, NULL)) != -1) {
    switch (c) {
    case O_SOCKET: socket = optarg; break;
    case O_CACHE: cache = optarg; break;
    case O_WORKERS:
      v = vxd__size(optarg);
      if (v < 1 || v > 64) {
        fprintf(stderr, "vortexd: --workers takes 1..64\n");
        return 64;
      }
      cfg.workers = (unsigned)v;
      break;
    case O_MAXCACHE:
      v = vxd__size(optarg);
      if (v < 1) {
        fprintf(stderr, "vortexd: bad --max-cache-size '%s'\n", optarg);
        return 64;
      }
      cfg.max_cache_bytes = (uint64_t)v;
      break;
    case O_MAXFRAME:
      v = vxd__size(optarg);
      if (v < 64 || v > VXP_MAX_FRAME_DEFAULT) {
        fprintf(stderr, "vortexd: --max-frame takes 64..%u\n", VXP_MAX_FRAME_DEFAULT);
        return 64;
      }
      cfg.max_frame = (uint32_t)v;
      break;
    case O_JOBTO:
      v = vxd__size(optarg);
      if (v < 0 || v > 86400) {
        fprintf(stderr, "vortexd: bad --job-timeout\n");
        return 64;
      }
      cfg.job_timeout_s = (unsigned)v;
      break;
    case O_IDLETO:
      v = vxd__size(optarg);
      if (v < 0 || v > 86400 * 365) {
        fprintf(stderr, "vortexd: bad --idle-timeout\n");
        return 64;
      }
      cfg.idle_timeout_s = (unsigned)v;
      break;
    case O_GROUP: {
      struct group gr, *grp = NULL;
      char buf[4096];
      char *end = NULL;
      unsigned long gid = strtoul(optarg, &end, 10);
      if (*optarg && !*end)
        cfg.allowed_gid = (gid_t)gid;
      else if (getgrnam_r(optarg, &gr, buf, sizeof buf, &grp) == 0 && grp)
        cfg.allowed_gid = grp->gr_gid;
      else {
        fprintf(stderr, "vortexd: --allow-group: no group '%s'\n", optarg);
        return 64;
      }
      break;
    }
    case 'v': cfg.verbose = 1; break;
    case O_VERSION:
      printf("%s\nlowering ABI %u, protocol %u\n%s\n", VXD_SERVER_NAME, VXL_LOWERING_ABI_VERSION,
             VXP_PROTOCOL_VERSION, vxl_toolchain_fingerprint());
      return 0;
    case 'h': vxd__usage(stdout); return 0;
    default: vxd__usage(stderr); return 64;
    }
  }
  if (optind < argc) {
    fprintf(stderr, "vortexd: unexpected argument '%s'\n", argv[optind]);
    return 64;
  }
  int rc = socket ? (strlen(socket) < sizeof cfg.socket_path ? 0 : -ENAMETOOLONG)
                  : vxp_default_socket_path(cfg.socket_path, sizeof cfg.socket_path);
  if (socket && rc == 0) snprintf(cfg.socket_path, sizeof cfg.socket_path, "%s", socket);
  if (rc != 0) {
    fprintf(stderr, "vortexd: socket path too long for a Unix socket (max %zu bytes)\n",
            sizeof cfg.socket_path - 1);
    return 64;
  }
  if (cache)
    snprintf(cfg.cache_dir, sizeof cfg.cache_dir, "%s", cache);
  else if (vxp_default_cache_dir(cfg.cache_dir, sizeof cfg.cache_dir) != 0) {
    fprintf(stderr, "vortexd: cache directory path too long\n");
    return 64;
  }
  return vxd_server_run(&cfg);
}
