/*
 * vxp_remote_url.c - remote_storage URLs (vxp_config.h), parsed with
 * uriparser (RFC 3986).  Kept apart from vxp_config.c so that what reads
 * only the configuration (vxc, the launch-time runtime) does not link
 * uriparser: Debian ships it without a static archive, and vxc is linked
 * statically.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <sys/stat.h>
#include <unistd.h>

#include <uriparser/Uri.h>

#include "vxp_config.h"
#include "vxp_paths.h"

/* Copies a text range into out (cap bytes), percent-decoded when unescape.
 * Returns 0 or -EINVAL when it does not fit. */
static int vxp__range(const UriTextRangeA *r, int unescape, char *out, size_t cap) {
  size_t n = r->first ? (size_t)(r->afterLast - r->first) : 0;
  if (n >= cap) return -EINVAL;
  memcpy(out, r->first ? r->first : "", n);
  out[n] = '\0';
  if (unescape) uriUnescapeInPlaceA(out);
  return 0;
}

/* A decimal number in [0, max] from text; 0 or -EINVAL. */
static int vxp__small_uint(const char *s, unsigned max, unsigned *out) {
  uint64_t v;
  if (vxp_config_uint(s, &v) != 0 || v > max) return -EINVAL;
  *out = (unsigned)v;
  return 0;
}

/* An http(s) URL into out: host, port (80 or 443 by default), the base
 * URL rebuilt from its parts (scheme lower case, the path as written).
 * 0, or -EINVAL with err set. */
static int vxp__http_url(const UriUriA *u, int tls, vxp_remote_url *out, char *err, size_t errcap) {
  out->kind = VXP_REMOTE_HTTP;
  out->tls = tls;
  out->port = tls ? 443 : 80;
  char text[512];
  if (u->userInfo.first) {
    snprintf(err, errcap, "no user information in an http(s) URL: put credentials in remote_credentials");
    return -EINVAL;
  }
  if (u->query.first || u->fragment.first) {
    snprintf(err, errcap, "an http(s) storage URL takes no query or fragment");
    return -EINVAL;
  }
  if (vxp__range(&u->hostText, 0, out->host, sizeof out->host) != 0 || !out->host[0]) {
    snprintf(err, errcap, "no host (http[s]://HOST[:PORT][/PATH])");
    return -EINVAL;
  }
  if (u->portText.first && u->portText.first != u->portText.afterLast &&
      (vxp__range(&u->portText, 0, text, sizeof text) != 0 || vxp__small_uint(text, 65535, &out->port) != 0 ||
       out->port == 0)) {
    snprintf(err, errcap, "port must be a number from 1 to 65535");
    return -EINVAL;
  }
  /* the path as written (still percent-encoded), segments joined with '/' */
  char path[1024] = "";
  size_t pn = 0;
  for (const UriPathSegmentA *seg = u->pathHead; seg; seg = seg->next) {
    char part[512];
    if (vxp__range(&seg->text, 0, part, sizeof part) != 0 || pn + strlen(part) + 2 >= sizeof path) {
      snprintf(err, errcap, "path too long");
      return -EINVAL;
    }
    if (part[0]) pn += (size_t)snprintf(path + pn, sizeof path - pn, "/%s", part);
  }
  int v6 = strchr(out->host, ':') != NULL;
  snprintf(out->base, sizeof out->base, "%s://%s%s%s:%u%s", tls ? "https" : "http", v6 ? "[" : "", out->host,
           v6 ? "]" : "", out->port, path);
  return 0;
}

/* A redis URL's [USER]:PASSWORD@ into out (percent-decoded); 0 or -EINVAL
 * with a message in err. */
static int vxp__redis_user(const UriUriA *u, vxp_remote_url *out, char *err, size_t errcap) {
  char text[512];
  if (vxp__range(&u->userInfo, 0, text, sizeof text) != 0) {
    snprintf(err, errcap, "user information too long");
    return -EINVAL;
  }
  char *colon = strchr(text, ':'); /* user:password, or a password alone after ':' */
  if (!colon) {
    snprintf(err, errcap, "user information without a password (write [USER]:PASSWORD@)");
    return -EINVAL;
  }
  *colon = '\0';
  if (strlen(text) >= sizeof out->user || strlen(colon + 1) >= sizeof out->password) {
    snprintf(err, errcap, "user name or password too long");
    return -EINVAL;
  }
  memcpy(out->user, text, strlen(text) + 1); /* lengths checked above */
  memcpy(out->password, colon + 1, strlen(colon + 1) + 1);
  uriUnescapeInPlaceA(out->user);
  uriUnescapeInPlaceA(out->password);
  return 0;
}

/* The rest of a redis:// or redis+unix:// URL u (is_unix) after its
 * scheme into out: user information, host and port or socket path, the
 * database number; 0 or -EINVAL with a message in err. */
static int vxp__redis_url(const UriUriA *u, int is_unix, vxp_remote_url *out, char *err, size_t errcap) {
  char text[512];
  out->is_unix = is_unix;
  if (u->userInfo.first && vxp__redis_user(u, out, err, errcap) != 0) return -EINVAL;
  /* the path, segments joined with '/' */
  char path[1024] = "";
  size_t pn = 0;
  for (const UriPathSegmentA *seg = u->pathHead; seg; seg = seg->next) {
    char part[512];
    if (vxp__range(&seg->text, 1, part, sizeof part) != 0 || pn + strlen(part) + 2 >= sizeof path) {
      snprintf(err, errcap, "path too long");
      return -EINVAL;
    }
    pn += (size_t)snprintf(path + pn, sizeof path - pn, "%s%s", seg == u->pathHead ? "" : "/", part);
  }
  if (out->is_unix) {
    if (u->hostText.first && u->hostText.afterLast != u->hostText.first) {
      snprintf(err, errcap, "redis+unix takes a path, not a host (redis+unix:///PATH)");
      return -EINVAL;
    }
    if (!path[0] || strlen(path) + 2 > sizeof out->path) {
      snprintf(err, errcap, "redis+unix needs an absolute socket path of under %zu bytes",
               sizeof out->path - 1);
      return -EINVAL;
    }
    out->path[0] = '/'; /* length checked above */
    memcpy(out->path + 1, path, strlen(path) + 1);
    if (u->query.first) {
      if (vxp__range(&u->query, 0, text, sizeof text) != 0 || strncmp(text, "db=", 3) != 0 ||
          vxp__small_uint(text + 3, 1u << 20, &out->db) != 0) {
        snprintf(err, errcap, "the query may only be db=NUMBER");
        return -EINVAL;
      }
    }
  } else {
    if (vxp__range(&u->hostText, 1, out->host, sizeof out->host) != 0 || !out->host[0]) {
      snprintf(err, errcap, "no host (redis://HOST[:PORT][/DB])");
      return -EINVAL;
    }
    if (u->portText.first && u->portText.first != u->portText.afterLast &&
        (vxp__range(&u->portText, 0, text, sizeof text) != 0 ||
         vxp__small_uint(text, 65535, &out->port) != 0 || out->port == 0)) {
      snprintf(err, errcap, "port must be a number from 1 to 65535");
      return -EINVAL;
    }
    if (path[0] && vxp__small_uint(path, 1u << 20, &out->db) != 0) {
      snprintf(err, errcap, "the path may only be a database number (redis://HOST:PORT/DB)");
      return -EINVAL;
    }
    if (u->query.first) {
      snprintf(err, errcap, "redis:// takes no query");
      return -EINVAL;
    }
  }
  if (u->fragment.first) {
    snprintf(err, errcap, "a fragment (#...) has no meaning here");
    return -EINVAL;
  }
  return 0;
}

int vxp_remote_url_parse(const char *url, vxp_remote_url *out, char *err, size_t errcap) {
  memset(out, 0, sizeof *out);
  out->port = 6379;
  UriUriA u;
  const char *at = NULL;
  if (uriParseSingleUriA(&u, url, &at) != URI_SUCCESS) {
    snprintf(err, errcap,
             "not a URL (at column %ld); expected redis://HOST[:PORT][/DB] or redis+unix:///PATH",
             at ? (long)(at - url) + 1 : 1L);
    return -EINVAL;
  }
  int rc = -EINVAL;
  char scheme[16];
  if (vxp__range(&u.scheme, 0, scheme, sizeof scheme) != 0 ||
      (strcasecmp(scheme, "redis") != 0 && strcasecmp(scheme, "redis+unix") != 0 &&
       strcasecmp(scheme, "http") != 0 && strcasecmp(scheme, "https") != 0)) {
    snprintf(err, errcap,
             "unsupported scheme (redis://, redis+unix://, http:// or https://; Redis over TLS: use https "
             "storage or a local proxy)");
    goto out;
  }
  if (strcasecmp(scheme, "http") == 0 || strcasecmp(scheme, "https") == 0) {
    rc = vxp__http_url(&u, strcasecmp(scheme, "https") == 0, out, err, errcap);
    goto out;
  }
  rc = vxp__redis_url(&u, strcasecmp(scheme, "redis+unix") == 0, out, err, errcap);
out:
  uriFreeUriMembersA(&u);
  return rc;
}

void vxp_remote_url_show(const vxp_remote_url *u, char *out, size_t cap) {
  if (u->kind == VXP_REMOTE_HTTP) { /* never with credentials */
    snprintf(out, cap, "%s", u->base);
    return;
  }
  char auth[300] = "";
  if (u->password[0]) snprintf(auth, sizeof auth, "%s:***@", u->user);
  if (u->is_unix)
    snprintf(out, cap, "redis+unix://%s%s?db=%u", auth, u->path, u->db);
  else
    snprintf(out, cap, "redis://%s%s%s%s:%u/%u", auth, strchr(u->host, ':') ? "[" : "", u->host,
             strchr(u->host, ':') ? "]" : "", u->port, u->db);
}

int vxp_remote_credentials_load(const char *path, vxp_remote_credentials *out, char *err, size_t errcap) {
  memset(out, 0, sizeof *out);
  int fd = vxp_trusted_file_open(path, err, errcap);
  if (fd < 0) return fd;
  struct stat st;
  if (fstat(fd, &st) != 0 || (st.st_mode & 077)) {
    snprintf(err, errcap, "%s holds credentials but others may read it (mode %03o): fix with `chmod 600 %s`",
             path, (unsigned)(st.st_mode & 07777), path);
    close(fd);
    return -EPERM;
  }
  char text[2200];
  ssize_t n = read(fd, text, sizeof text - 1);
  close(fd);
  if (n < 0 || (size_t)n >= sizeof text - 1) {
    snprintf(err, errcap, "%s: %s", path, n < 0 ? "cannot read it" : "longer than one line of credentials");
    return n < 0 ? -EIO : -EINVAL;
  }
  text[n] = '\0';
  if (n && text[n - 1] == '\n') text[--n] = '\0';
  if (n && text[n - 1] == '\r') text[--n] = '\0';
  int rc = 0;
  if (strchr(text, '\n') || strchr(text, '\r')) {
    snprintf(err, errcap, "%s: more than one line", path);
    rc = -EINVAL;
  } else if (strncasecmp(text, "basic ", 6) == 0 && strchr(text + 6, ':') &&
             strlen(text + 6) < sizeof out->userpwd) {
    memcpy(out->userpwd, text + 6, strlen(text + 6) + 1); /* length checked */
  } else if (strncasecmp(text, "bearer ", 7) == 0 && text[7] && strlen(text + 7) < sizeof out->bearer) {
    memcpy(out->bearer, text + 7, strlen(text + 7) + 1); /* length checked */
  } else {
    snprintf(err, errcap, "%s: expected one line `basic USER:PASSWORD` or `bearer TOKEN`", path);
    rc = -EINVAL;
  }
  explicit_bzero(text, sizeof text);
  return rc;
}
