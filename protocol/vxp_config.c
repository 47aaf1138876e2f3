/* vxp_config.c - configuration file, environment, defaults (vxp_config.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <ini.h>

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

int vxp_config_set(vxp_config *cfg, const char *name, const char *value, vxp_conf_origin origin) {
  for (int k = 0; k < VXP_CONF_COUNT; k++) {
    if (strcmp(name, vxp__conf_names[k]) != 0) continue;
    if (strlen(value) >= sizeof cfg->value[k]) return -EINVAL;
    snprintf(cfg->value[k], sizeof cfg->value[k], "%s", value);
    cfg->origin[k] = origin;
    return 0;
  }
  return -EINVAL;
}

typedef struct {
  vxp_config *cfg;
  char bad[128]; /* the first key refused */
} vxp__ini_state;

/* inih handler: 1 to go on, 0 makes ini_parse report this line. */
static int vxp__ini_line(void *user, const char *section, const char *name, const char *value) {
  vxp__ini_state *st = user;
  if (section[0] || vxp_config_set(st->cfg, name, value, VXP_FROM_FILE) != 0) {
    if (!st->bad[0]) snprintf(st->bad, sizeof st->bad, "%s%s%s", section, section[0] ? "." : "", name);
    return 0;
  }
  return 1;
}

int vxp_config_load(vxp_config *cfg, char *err, size_t errcap) {
  memset(cfg, 0, sizeof *cfg);
  for (int k = 0; k < VXP_CONF_COUNT; k++)
    snprintf(cfg->value[k], sizeof cfg->value[k], "%s", vxp__conf_defaults[k]);
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
  FILE *f = fopen(cfg->file, "r");
  if (f) {
    cfg->file_found = 1;
    vxp__ini_state st = {.cfg = cfg};
    int line = ini_parse_file(f, vxp__ini_line, &st);
    fclose(f);
    if (line != 0) {
      if (st.bad[0])
        snprintf(err, errcap, "%s:%d: unknown key '%s' (`vxc config` lists the keys)", cfg->file, line,
                 st.bad);
      else
        snprintf(err, errcap, "%s:%d: not a `key = value` line", cfg->file, line);
      return -EINVAL;
    }
  } else if (errno != ENOENT) {
    snprintf(err, errcap, "cannot read %s: %s", cfg->file, strerror(errno));
    return -EIO;
  }
  for (int k = 0; k < VXP_CONF_COUNT; k++) {
    const char *v = getenv(vxp__conf_envs[k]);
    if (v && *v) {
      if (vxp_config_set(cfg, vxp__conf_names[k], v, VXP_FROM_ENV) != 0) {
        snprintf(err, errcap, "%s: value too long", vxp__conf_envs[k]);
        return -EINVAL;
      }
    }
  }
  /* derived defaults: where client and daemon meet (vxp_paths.h) */
  if (!cfg->value[VXP_CONF_socket][0] &&
      vxp_default_socket_path(cfg->value[VXP_CONF_socket], sizeof cfg->value[VXP_CONF_socket]) != 0) {
    snprintf(err, errcap, "default socket path too long for a Unix socket");
    return -EINVAL;
  }
  if (!cfg->value[VXP_CONF_cache_dir][0] &&
      vxp_default_cache_dir(cfg->value[VXP_CONF_cache_dir], sizeof cfg->value[VXP_CONF_cache_dir]) != 0) {
    snprintf(err, errcap, "default cache directory path too long");
    return -EINVAL;
  }
  return 0;
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
