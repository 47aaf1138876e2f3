/*
 * vxp_config.h - vortexd's configuration, as the daemon and vxc both read
 * it: built-in defaults < the configuration file < environment variables <
 * command-line flags (ccache's order).  vxc reads it to start a daemon with
 * the same settings and for `vxc config`; the daemon to run.
 *
 * The file is $VORTEXD_CONFIG, else $XDG_CONFIG_HOME/vortexd/vortexd.conf,
 * else ~/.config/vortexd/vortexd.conf; one `key = value` per line, `#` or
 * `;` comments (read with inih, the INI parser Debian ships).  Every key,
 * its variable and its default are in VXP_CONFIG_KEYS below and in the
 * docs/configuration.md and vortexd.conf(5).
 *
 * THREAD NOTES: load once at start-up, on one thread.
 */
#ifndef VXP_CONFIG_H
#define VXP_CONFIG_H

#include <stddef.h>
#include <stdint.h>

/* X(name, environment variable, default ("" = derived at load), meaning) */
#define VXP_CONFIG_KEYS(X)                                                                                   \
  X(socket, "VORTEXD_SOCKET", "", "Unix socket path")                                                        \
  X(cache_dir, "VORTEXD_CACHE_DIR", "", "cache directory")                                                   \
  X(max_cache_size, "VORTEXD_MAX_CACHE_SIZE", "1G", "cache size limit (bytes, or with K/M/G)")               \
  X(workers, "VORTEXD_WORKERS", "", "compile worker processes (default: online CPUs)")                       \
  X(job_timeout, "VORTEXD_JOB_TIMEOUT", "60", "seconds a compile may take (0 = no limit)")                   \
  X(idle_timeout, "VORTEXD_IDLE_TIMEOUT", "600",                                                             \
    "seconds without requests before an auto-started daemon exits (0 = never)")                              \
  X(max_frame, "VORTEXD_MAX_FRAME", "64M", "largest request frame (bytes)")                                  \
  X(max_source, "VORTEXD_MAX_SOURCE", "16M", "largest MLIR source in a compile request (bytes)")             \
  X(max_connections, "VORTEXD_MAX_CONNECTIONS", "256", "clients connected at once")                          \
  X(frame_timeout, "VORTEXD_FRAME_TIMEOUT", "10", "seconds a started frame may take to arrive")              \
  X(connection_idle_timeout, "VORTEXD_CONNECTION_IDLE_TIMEOUT", "300",                                       \
    "seconds an idle connection is kept (0 = forever)")                                                      \
  X(max_unsent, "VORTEXD_MAX_UNSENT", "64M",                                                                 \
    "reply bytes a client may leave unread before the daemon stops reading its requests")                    \
  X(worker_memory, "VORTEXD_WORKER_MEMORY", "4G", "address space of a compile worker (bytes; 0 = no limit)") \
  X(piece_helpers, "VORTEXD_PIECE_HELPERS", "15",                                                            \
    "helper threads a compile of many kernels may run on idle workers' cores (0 = none)")                    \
  X(crash_memory, "VORTEXD_CRASH_MEMORY", "300",                                                             \
    "seconds an input that crashed a worker is answered at once instead of compiled")                        \
  X(lru_resolution, "VORTEXD_LRU_RESOLUTION", "60",                                                          \
    "seconds within which reading an entry again does not move its LRU time (0 = every read)")               \
  X(allow_group, "VORTEXD_ALLOW_GROUP", "", "group whose members may use the daemon too")                    \
  X(vortex_sdk, "VORTEXD_VORTEX_SDK", "",                                                                    \
    "Vortex kernel SDK directory (link.ld, device runtime): the module also as one cached .vxbin image")     \
  X(log_level, "VORTEXD_LOG_LEVEL", "notice", "error, warning, notice, info or debug")                       \
  X(target, "VORTEXD_TARGET", "vortex2-rv32",                                                                \
    "device a compile request that names none is for: vortex2-rv32, vortex2-rv64, vortex3-rv32 or "          \
    "vortex3-rv64")                                                                                          \
  X(remote_storage, "VORTEXD_REMOTE_STORAGE", "",                                                            \
    "shared second-level cache: redis://[USER:PASSWORD@]HOST[:PORT][/DB], redis+unix:///PATH[?db=N] or "     \
    "http[s]://HOST[:PORT][/PATH]")                                                                          \
  X(remote_read_only, "VORTEXD_REMOTE_READ_ONLY", "false",                                                   \
    "read the remote storage, never write to it (true or false)")                                            \
  X(remote_prefix, "VORTEXD_REMOTE_PREFIX", "vortexd",                                                       \
    "namespace of this farm's keys in the remote storage")                                                   \
  X(remote_ttl, "VORTEXD_REMOTE_TTL", "0",                                                                   \
    "seconds an entry written to the remote storage lives (0 = until the server evicts it)")                 \
  X(remote_connect_timeout, "VORTEXD_REMOTE_CONNECT_TIMEOUT", "100",                                         \
    "milliseconds a connection to the remote storage may take")                                              \
  X(remote_timeout, "VORTEXD_REMOTE_TIMEOUT", "250",                                                         \
    "milliseconds a remote read or write may take; then the daemon goes on without it for a while")          \
  X(remote_lease, "VORTEXD_REMOTE_LEASE", "5000",                                                            \
    "milliseconds a lease on a key being compiled lives unless renewed, so the farm compiles it once "       \
    "(0 = no leases)")                                                                                       \
  X(remote_credentials, "VORTEXD_REMOTE_CREDENTIALS", "",                                                    \
    "file (mode 0600) with the HTTP storage's credentials: `basic USER:PASSWORD` or `bearer TOKEN`")         \
  X(remote_ca_file, "VORTEXD_REMOTE_CA_FILE", "",                                                            \
    "CA certificates (PEM) an https storage's certificate is verified against (default: the system's)")      \
  X(remote_write_queue, "VORTEXD_REMOTE_WRITE_QUEUE", "64M",                                                 \
    "bytes of entries waiting to be written to the remote storage; entries past that are dropped")           \
  X(remote_signing_key, "VORTEXD_REMOTE_SIGNING_KEY", "",                                                    \
    "Ed25519 private key (PEM) that signs every entry written to the remote storage")                        \
  X(remote_trusted_keys, "VORTEXD_REMOTE_TRUSTED_KEYS", "",                                                  \
    "Ed25519 public keys (PEM): when set, only remote entries one of them signed are used")

typedef enum {
#define VXP__CONF_ENUM(name, env, def, help) VXP_CONF_##name,
  VXP_CONFIG_KEYS(VXP__CONF_ENUM)
#undef VXP__CONF_ENUM
      VXP_CONF_COUNT
} vxp_conf_key;

/* Where a value came from. */
typedef enum { VXP_FROM_DEFAULT, VXP_FROM_FILE, VXP_FROM_ENV, VXP_FROM_FLAG } vxp_conf_origin;

/* One value's longest text, and all values' text together (bytes, with
 * their NULs): a bound on what a configuration file or the environment can
 * make a process hold. */
#define VXP_CONF_VALUE_MAX 4095
#define VXP_CONF_LINE_MAX (VXP_CONF_VALUE_MAX + 100) /* a file's line, key and all */
#define VXP_CONF_TEXT_MAX 65536

/* Values point at built-in defaults or into text[], which is filled from
 * its start: a process touches only the pages its configuration uses (vxc
 * starts once per compile, and each page it touches costs a fault). */
typedef struct {
  const char *value[VXP_CONF_COUNT];
  vxp_conf_origin origin[VXP_CONF_COUNT];
  int file_found;  /* it exists and was read */
  char file[4096]; /* the configuration file looked at ("" when none) */
  size_t text_used;
  char text[VXP_CONF_TEXT_MAX];
} vxp_config;

/* Fills cfg: defaults (socket and cache directory from vxp_paths.h), then
 * the file, then the environment.  An unknown key, a line that is not
 * `key = value` or one over VXP_CONF_LINE_MAX bytes, or a value over
 * VXP_CONF_VALUE_MAX is an error naming file:line (or the variable).  The
 * file's comments are whole lines starting with '#' or ';'.  Returns 0,
 * or -EINVAL, -E2BIG (values over VXP_CONF_TEXT_MAX in all) or -EIO with
 * a message in err (errcap bytes); the file is read only when another user
 * cannot have written it (vxp_trusted_file_open: -EPERM for its owner or
 * mode, -EINVAL when it is not a regular file, such as a FIFO or a link to
 * a device, which is never opened for long).  cfg's values point into cfg itself
 * and at static defaults: copy them before cfg goes. */
int vxp_config_load(vxp_config *cfg, char *err, size_t errcap);

/* Sets key (by name) from a command-line flag.  Returns 0, -EINVAL (no
 * such key, or value over VXP_CONF_VALUE_MAX bytes) or -E2BIG (all values
 * together over VXP_CONF_TEXT_MAX bytes). */
int vxp_config_set(vxp_config *cfg, const char *name, const char *value, vxp_conf_origin origin);

/* The name, environment variable and meaning of key k. */
/* Checks the form of every value of cfg (sizes, numbers, booleans, the
 * log level, the target; not ranges, groups, files or the remote storage
 * URL, which the daemon judges): 0, or -EINVAL with the first bad one in
 * err (errcap bytes): "KEY = 'VALUE' (from the configuration file PATH):
 * expected ...".  What vxc checks before it uses or prints a
 * configuration. */
int vxp_config_check(const vxp_config *cfg, char *err, size_t errcap);

const char *vxp_config_name(vxp_conf_key k);
const char *vxp_config_env(vxp_conf_key k);
const char *vxp_config_help(vxp_conf_key k);

/* Parses a size: "123", "64K", "512M", "2G" (powers of 1024) into bytes.
 * Returns 0 and *out, or -EINVAL. */
int vxp_config_size(const char *s, uint64_t *out);

/* Parses a non-negative integer (seconds, counts).  0 or -EINVAL. */
int vxp_config_uint(const char *s, uint64_t *out);

/* Parses a boolean: true/false, yes/no, on/off, 1/0 (any case).  Returns
 * 0 and *out, or -EINVAL. */
int vxp_config_bool(const char *s, int *out);

/* The kinds of remote storage. */
typedef enum { VXP_REMOTE_REDIS = 0, VXP_REMOTE_HTTP = 1 } vxp_remote_kind;

/* Where a remote storage (Redis, or an HTTP(S) server) is, as
 * remote_storage names it. */
typedef struct {
  vxp_remote_kind kind;
  int tls;            /* https */
  char base[1400];    /* http(s): the URL entries go under, without a trailing '/' */
  int is_unix;        /* redis+unix: path set, host/port unused */
  char host[256];     /* name or address (IPv6 without brackets) */
  unsigned port;      /* default 6379 */
  char path[108];     /* Unix socket (sun_path size) */
  char user[256];     /* "" = none (AUTH with the password alone) */
  char password[256]; /* "" = no AUTH */
  unsigned db;        /* SELECT db; default 0 */
} vxp_remote_url;

/* Parses remote_storage (RFC 3986, with uriparser):
 *   redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]
 *   redis+unix://[[USER]:PASSWORD@]/PATH[?db=DB]   (also redis+unix:/PATH)
 *   http://HOST[:PORT][/PATH]   https://HOST[:PORT][/PATH]
 * user and password are percent-decoded.  The same URL syntax as ccache's
 * and sccache's Redis backends, less their attributes (here separate keys).
 * An HTTP URL carries no user information (credentials are read from
 * remote_credentials, a file only its owner can read), query or fragment.
 * Returns 0 and *out, or -EINVAL with a message in err (errcap bytes)
 * that never contains the password.  Any thread. */
int vxp_remote_url_parse(const char *url, vxp_remote_url *out, char *err, size_t errcap);

/* The credentials of an HTTP(S) storage, read from remote_credentials. */
typedef struct {
  char userpwd[512]; /* "USER:PASSWORD" (basic), or "" */
  char bearer[2048]; /* a bearer token, or "" */
} vxp_remote_credentials;

/* Reads the credentials file path: one line, `basic USER:PASSWORD` or
 * `bearer TOKEN` (a trailing newline allowed), from a file only its owner
 * (the effective uid or root) can read or write, as ssh wants a private
 * key (vxp_trusted_file_open's checks, plus no read access for group or
 * others).  Returns 0 and *out, or -EPERM / -EINVAL / -ENOENT / -EIO with
 * a message in err that never contains the secret.  Any thread. */
int vxp_remote_credentials_load(const char *path, vxp_remote_credentials *out, char *err, size_t errcap);

/* Writes u as a URL with the password replaced by "***" (for logs, stats
 * and `vxc config`) into out (cap bytes, truncated, NUL-terminated). */
void vxp_remote_url_show(const vxp_remote_url *u, char *out, size_t cap);

/* remote_storage's value fit to print (`vxc config`) without parsing it,
 * for programs that do not link uriparser: whatever lies between "://" (or
 * the start) and the last '@' is the user information; its part after the
 * first ':', or all of it when it has no ':', becomes "***".  Never shows
 * more than vxp_remote_url_show would; shows an invalid URL as written,
 * masked (the daemon refuses it at start).  Writes into out (cap bytes,
 * truncated, NUL-terminated).  Any thread. */
void vxp_config_mask_url(const char *url, char *out, size_t cap);

#endif /* VXP_CONFIG_H */
