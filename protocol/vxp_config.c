/* vxp_config.c - configuration file, environment, defaults (vxp_config.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ini.h>

#include "vxp.h"
#include "vxp_config.h"
#include "vxp_paths.h"

static const char *const vxp__conf_names[] = {
#define X(name, env, def, help) #name,
    VXP_CONFIG_KEYS(X)
#undef X
};
static const char *const vxp__conf_envs[] = {
#define X(name, env, def, help) env,
    VXP_CONFIG_KEYS(X)
#undef X
};
static const char *const vxp__conf_defaults[] = {
#define X(name, env, def, help) def,
    VXP_CONFIG_KEYS(X)
#undef X
};
static const char *const vxp__conf_help[] = {
#define X(name, env, def, help) help,
    VXP_CONFIG_KEYS(X)
#undef X
};

const char *vxp_config_name(vxp_conf_key k) { return k < VXP_CONF_COUNT ? vxp__conf_names[k] : NULL; }
const char *vxp_config_env(vxp_conf_key k) { return k < VXP_CONF_COUNT ? vxp__conf_envs[k] : NULL; }
const char *vxp_config_help(vxp_conf_key k) { return k < VXP_CONF_COUNT ? vxp__conf_help[k] : NULL; }

/* The index of the key called name, or -1. */
static int vxp__conf_find(const char *name) {
  for (int k = 0; k < VXP_CONF_COUNT; k++)
    if (strcmp(name, vxp__conf_names[k]) == 0) return k;
  return -1;
}

/* Copies text (n bytes) into cfg's arena; NULL when it would not fit. */
static const char *vxp__conf_keep(vxp_config *cfg, const char *text, size_t n) {
  if (n + 1 > sizeof cfg->text - cfg->text_used) return NULL;
  char *kept = cfg->text + cfg->text_used;
  memcpy(kept, text, n);
  kept[n] = '\0';
  cfg->text_used += n + 1;
  return kept;
}

int vxp_config_set(vxp_config *cfg, const char *name, const char *value, vxp_conf_origin origin) {
  int k = vxp__conf_find(name);
  size_t n = strlen(value);
  if (k < 0 || n > VXP_CONF_VALUE_MAX) return -EINVAL;
  const char *kept = vxp__conf_keep(cfg, value, n);
  if (!kept) return -E2BIG;
  cfg->value[k] = kept;
  cfg->origin[k] = origin;
  return 0;
}

typedef struct {
  vxp_config *cfg;
  char bad[128]; /* the first key refused */
  int rc;        /* why: -EINVAL unknown key or long value, -E2BIG all text */
  FILE *f;
  int line;      /* lines read */
  int long_line; /* the first line over VXP_CONF_LINE_MAX bytes, or 0 */
} vxp__ini_state;

/* inih's line reader: fgets, except that a line over num - 1 bytes is read
 * to its end and handed over as a line inih refuses, at its own number. */
static char *vxp__ini_read(char *str, int num, void *stream) {
  vxp__ini_state *st = stream;
  if (!fgets(str, num, st->f)) return NULL;
  st->line++;
  size_t n = strlen(str);
  if (n + 1 == (size_t)num && str[n - 1] != '\n') {
    int c;
    while ((c = fgetc(st->f)) != EOF && c != '\n') {
    }
    if (!st->long_line) st->long_line = st->line;
    snprintf(str, (size_t)num, "%s", "?\n"); /* not `key = value` */
  }
  return str;
}

/* The message for a value vxp_config_set refused (rc) under a known key. */
static const char *vxp__set_error(int rc) {
  return rc == -E2BIG ? "configuration values too long in all" : "value too long";
}

/* inih handler: 1 to go on, 0 makes ini_parse report this line. */
static int vxp__ini_line(void *user, const char *section, const char *name, const char *value) {
  vxp__ini_state *st = user;
  int rc = section[0] ? -EINVAL : vxp_config_set(st->cfg, name, value, VXP_FROM_FILE);
  if (rc != 0) {
    if (!st->bad[0]) snprintf(st->bad, sizeof st->bad, "%s%s%s", section, section[0] ? "." : "", name);
    st->rc = rc;
    return 0;
  }
  return 1;
}

/* Whether URL url carries a password: its authority (after "://", up to
 * the path, query or fragment) has user information ("...@") holding a
 * ':' (redis://user:pw@host, redis://:pw@host).  What remote_storage's
 * parser (vxp_remote_url_parse) takes as the password. */
static bool vxp__url_has_password(const char *url) {
  const char *a = strstr(url, "://");
  if (!a) return false;
  a += 3;
  size_t n = strcspn(a, "/?#");
  const char *at = NULL;
  for (size_t i = 0; i < n; i++)
    if (a[i] == '@') at = a + i;
  return at && memchr(a, ':', (size_t)(at - a)) != NULL;
}

/* Reads cfg->file into cfg, when it is there and trusted (vxp_paths.h):
 * 0 (also when there is none), or a negative errno with err set. */
static int vxp__config_read_file(vxp_config *cfg, char *err, size_t errcap) {
  /* read only if nobody else can have written it (vxp_paths.h) */
  char why[4400];
  int fd = vxp_trusted_file_open(cfg->file, why, sizeof why);
  struct stat fst;
  mode_t file_mode = fd >= 0 && fstat(fd, &fst) == 0 ? fst.st_mode : 0;
  FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
  if (fd >= 0 && !f) close(fd);
  if (f) {
    cfg->file_found = 1;
    vxp__ini_state st = {.cfg = cfg, .f = f};
    /* inih reads lines of at most 200 bytes unless told otherwise.  Its
     * settings are process-wide variables (hence "load on one thread"),
     * set for this parse and put back after it: the launch-time runtime
     * loads the configuration inside a host program that may use inih too. */
    bool use_stack = ini_use_stack, inline_comments = ini_allow_inline_comments;
    bool allow_realloc = ini_allow_realloc;
    int max_line = ini_max_line, initial_alloc = ini_initial_alloc;
    ini_use_stack = false;
    ini_allow_inline_comments = false; /* "a ;b" is a value, not "a" and a comment */
    ini_allow_realloc = false;
    ini_max_line = ini_initial_alloc = VXP_CONF_LINE_MAX + 3; /* with "\r\n\0" */
    int line = ini_parse_stream(vxp__ini_read, &st, vxp__ini_line, &st);
    ini_use_stack = use_stack, ini_allow_inline_comments = inline_comments;
    ini_allow_realloc = allow_realloc;
    ini_max_line = max_line, ini_initial_alloc = initial_alloc;
    fclose(f);
    if (line != 0) {
      if (st.long_line == line)
        snprintf(err, errcap, "%s:%d: line longer than %d bytes", cfg->file, line, VXP_CONF_LINE_MAX);
      else if (line < 0)
        snprintf(err, errcap, "%s: out of memory", cfg->file);
      else if (st.bad[0] && vxp__conf_find(st.bad) >= 0)
        snprintf(err, errcap, "%s:%d: %s: %s", cfg->file, line, st.bad, vxp__set_error(st.rc));
      else if (st.bad[0])
        snprintf(err, errcap, "%s:%d: unknown key '%s' (the keys: vortexd.conf(5), or `vortexd --help`)",
                 cfg->file, line, st.bad);
      else
        snprintf(err, errcap, "%s:%d: not a `key = value` line", cfg->file, line);
      return -EINVAL;
    }
    /* a password in the file: readable by its owner alone, as ssh wants a
     * private key and libpq a .pgpass */
    if (cfg->origin[VXP_CONF_remote_storage] == VXP_FROM_FILE && (file_mode & (S_IRWXG | S_IRWXO)) &&
        vxp__url_has_password(cfg->value[VXP_CONF_remote_storage])) {
      snprintf(
          err, errcap,
          "%s holds the remote storage's password but is readable by others (mode %03o; needs 0600): fix "
          "with `chmod 600 %s`, or give the URL in VORTEXD_REMOTE_STORAGE",
          cfg->file, (unsigned)(file_mode & 07777), cfg->file);
      return -EPERM;
    }
  } else if (fd != -ENOENT) {
    snprintf(err, errcap, "%s", fd < 0 ? why : "cannot read the configuration file: out of memory");
    return fd == -EPERM || fd == -EINVAL ? fd : -EIO;
  }
  return 0;
}

/* The environment's values over cfg's, then the derived defaults (the
 * socket and cache paths both sides derive alike): 0 or a negative errno
 * with err set. */
static int vxp__config_read_env(vxp_config *cfg, char *err, size_t errcap) {
  for (int k = 0; k < VXP_CONF_COUNT; k++) {
    const char *v = getenv(vxp__conf_envs[k]);
    if (v && *v) {
      int rc = vxp_config_set(cfg, vxp__conf_names[k], v, VXP_FROM_ENV);
      if (rc != 0) {
        snprintf(err, errcap, "%s: %s", vxp__conf_envs[k], vxp__set_error(rc));
        return rc;
      }
    }
  }
  /* derived defaults: where client and daemon meet (vxp_paths.h) */
  static const struct {
    vxp_conf_key key;
    int (*derive)(char *, size_t);
    const char *too_long;
  } derived[] = {
      {VXP_CONF_socket, vxp_default_socket_path, "default socket path too long for a Unix socket"},
      {VXP_CONF_cache_dir, vxp_default_cache_dir, "default cache directory path too long"},
  };
  for (size_t i = 0; i < sizeof derived / sizeof *derived; i++) {
    char path[4096];
    if (cfg->value[derived[i].key][0]) continue;
    if (derived[i].derive(path, sizeof path) != 0) {
      snprintf(err, errcap, "%s", derived[i].too_long);
      return -EINVAL;
    }
    if (!(cfg->value[derived[i].key] = vxp__conf_keep(cfg, path, strlen(path)))) {
      snprintf(err, errcap, "configuration values over %d bytes in all", VXP_CONF_TEXT_MAX);
      return -E2BIG;
    }
  }
  return 0;
}

int vxp_config_load(vxp_config *cfg, char *err, size_t errcap) {
  /* not a memset of the whole: text[] stays untouched until used */
  for (int k = 0; k < VXP_CONF_COUNT; k++) {
    cfg->value[k] = vxp__conf_defaults[k];
    cfg->origin[k] = VXP_FROM_DEFAULT;
  }
  cfg->file_found = 0;
  cfg->file[0] = '\0';
  cfg->text_used = 0;
  /* the file's own place: $VORTEXD_CONFIG, else the XDG config home */
  const char *env = getenv("VORTEXD_CONFIG"), *home = getenv("HOME");
  int n;
  if (env && *env)
    n = snprintf(cfg->file, sizeof cfg->file, "%s", env);
  else if ((env = getenv("XDG_CONFIG_HOME")) && *env)
    n = snprintf(cfg->file, sizeof cfg->file, "%s/vortexd/vortexd.conf", env);
  else
    n = snprintf(cfg->file, sizeof cfg->file, "%s/.config/vortexd/vortexd.conf", home && *home ? home : "/");
  if (n < 0 || (size_t)n >= sizeof cfg->file) {
    snprintf(err, errcap, "configuration file path too long");
    return -EINVAL;
  }
  int rc = vxp__config_read_file(cfg, err, errcap);
  if (rc == 0) rc = vxp__config_read_env(cfg, err, errcap);
  return rc;
}

int vxp_config_uint(const char *s, uint64_t *out) {
  char *end = NULL;
  errno = 0;
  if (!s || *s < '0' || *s > '9') return -EINVAL;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || *end) return -EINVAL;
  *out = v;
  return 0;
}

int vxp_config_size(const char *s, uint64_t *out) {
  char *end = NULL;
  errno = 0;
  if (!s || *s < '0' || *s > '9') return -EINVAL;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno) return -EINVAL;
  unsigned shift = 0;
  switch (*end) {
  case '\0': break;
  case 'K':
  case 'k': shift = 10; break;
  case 'M':
  case 'm': shift = 20; break;
  case 'G':
  case 'g': shift = 30; break;
  case 'T':
  case 't': shift = 40; break;
  default: return -EINVAL;
  }
  if (shift && *++end) return -EINVAL;
  if (shift && v > (UINT64_MAX >> shift)) return -EINVAL;
  *out = (uint64_t)v << shift;
  return 0;
}

int vxp_config_bool(const char *s, int *out) {
  static const char *const yes[] = {"true", "yes", "on", "1"}, *const no[] = {"false", "no", "off", "0"};
  for (int i = 0; s && i < 4; i++) {
    if (strcasecmp(s, yes[i]) == 0) return *out = 1, 0;
    if (strcasecmp(s, no[i]) == 0) return *out = 0, 0;
  }
  return -EINVAL;
}

void vxp_config_mask_url(const char *url, char *out, size_t cap) {
  if (!cap) return;
  const char *at = strrchr(url, '@');
  if (!at) {
    snprintf(out, cap, "%s", url);
    return;
  }
  const char *scheme_end = strstr(url, "://");
  const char *info = scheme_end && scheme_end < at ? scheme_end + 3 : url;
  const char *colon = memchr(info, ':', (size_t)(at - info));
  const char *keep_end = colon ? colon + 1 : info; /* the user name and its ':' stay */
  snprintf(out, cap, "%.*s***%s", (int)(keep_end - url), url, at);
}

/* What each key's value must look like, for vxp_config_check. */
typedef enum {
  VXP__ANY,
  VXP__SIZE,
  VXP__UINT,
  VXP__UINT_OR_EMPTY,
  VXP__BOOL,
  VXP__LEVEL,
  VXP__TARGET
} vxp__kind;

static vxp__kind vxp__kind_of(vxp_conf_key k) {
  switch (k) {
  case VXP_CONF_max_cache_size:
  case VXP_CONF_max_frame:
  case VXP_CONF_max_source:
  case VXP_CONF_max_unsent:
  case VXP_CONF_worker_memory:
  case VXP_CONF_remote_write_queue: return VXP__SIZE;
  case VXP_CONF_workers: return VXP__UINT_OR_EMPTY;
  case VXP_CONF_job_timeout:
  case VXP_CONF_idle_timeout:
  case VXP_CONF_max_connections:
  case VXP_CONF_frame_timeout:
  case VXP_CONF_connection_idle_timeout:
  case VXP_CONF_piece_helpers:
  case VXP_CONF_crash_memory:
  case VXP_CONF_lru_resolution:
  case VXP_CONF_remote_ttl:
  case VXP_CONF_remote_connect_timeout:
  case VXP_CONF_remote_timeout:
  case VXP_CONF_remote_lease: return VXP__UINT;
  case VXP_CONF_remote_read_only: return VXP__BOOL;
  case VXP_CONF_log_level: return VXP__LEVEL;
  case VXP_CONF_target: return VXP__TARGET;
  default: return VXP__ANY;
  }
}

int vxp_config_check(const vxp_config *cfg, char *err, size_t errcap) {
  static const char *const from[] = {"the default", "the configuration file", "the environment", "a flag"};
  for (int i = 0; i < VXP_CONF_COUNT; i++) {
    vxp_conf_key k = (vxp_conf_key)i;
    const char *v = cfg->value[k], *want = NULL;
    uint64_t n;
    int b;
    uint32_t abi, xlen;
    switch (vxp__kind_of(k)) {
    case VXP__SIZE:
      if (vxp_config_size(v, &n) != 0) want = "a size: bytes, or a number with K, M, G or T";
      break;
    case VXP__UINT_OR_EMPTY:
      if (v[0] && vxp_config_uint(v, &n) != 0) want = "a number (or nothing: the default)";
      break;
    case VXP__UINT:
      if (vxp_config_uint(v, &n) != 0) want = "a number";
      break;
    case VXP__BOOL:
      if (vxp_config_bool(v, &b) != 0) want = "true or false";
      break;
    case VXP__LEVEL:
      want = "error, warning, notice, info or debug";
      for (int l = 0; l < 5; l++)
        if (strcasecmp(v, ((const char *const[]){"error", "warning", "notice", "info", "debug"})[l]) == 0)
          want = NULL;
      break;
    case VXP__TARGET:
      if (vxp_target_parse(v, &abi, &xlen) != 0)
        want = "vortex2-rv32, vortex2-rv64, vortex3-rv32 or vortex3-rv64";
      break;
    case VXP__ANY: break;
    }
    if (!want) continue;
    snprintf(err, errcap, "%s = '%s' (from %s%s%s%s%s): expected %s", vxp_config_name(k), v,
             from[cfg->origin[k]], cfg->origin[k] == VXP_FROM_FILE ? " " : "",
             cfg->origin[k] == VXP_FROM_FILE ? cfg->file : "", cfg->origin[k] == VXP_FROM_ENV ? " $" : "",
             cfg->origin[k] == VXP_FROM_ENV ? vxp_config_env(k) : "", want);
    return -EINVAL;
  }
  return 0;
}
