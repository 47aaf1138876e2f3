/*
 * vxk_http.c - the cache's second level on an HTTP(S) server (vxk_remote.h
 * for the rules; vxk_http.h for this file's calls), through libcurl.
 *
 * Layout: the value of cache key K is the resource <base>/<prefix>/v<format>/K
 * (GET to read, PUT to write), as ccache's http storage and bazel-remote's
 * "ac" store keep theirs: one flat directory per prefix and entry format,
 * which a WebDAV server (nginx's dav_methods PUT, Apache's mod_dav) or any
 * HTTP cache server serves as it is.  404 is a miss; any other status than
 * 200 (GET) or 2xx (PUT) is a failure of that exchange.
 *
 * One easy handle per vxk_remote, kept between exchanges so that its
 * connection (and TLS session) is reused.  Each exchange's deadline is the
 * remote_timeout left (CURLOPT_TIMEOUT_MS), the connection's
 * remote_connect_timeout; redirects are not followed, only http and https
 * are spoken, certificates are always verified.
 *
 * Built as a module of its own, vortexd-http.so (the only libcurl user):
 * libcurl and the ~35 libraries it loads cost a daemon ~4 ms at every
 * start, so vortexd loads them only when its remote storage is HTTP(S)
 * (vxk_remote_http_load).  The module exports VXK_HTTP_OPS_SYMBOL alone.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>

#include "vxk_http.h"

struct vxk_http {
  CURL *curl;
  char base[1600]; /* <base>/<prefix>/v<format> */
  unsigned connect_ms, op_ms;
  uint64_t max_value;
  char curl_err[CURL_ERROR_SIZE];
};

static int vxk_http_global_init(void) {
  return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? 0 : VXK_EIO;
}

static uint64_t vxk__http_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static int vxk_http_open(const vxk_http_config *cfg, vxk_http **out, char *err, size_t errcap) {
  *out = NULL;
  vxk_http *h = calloc(1, sizeof *h);
  if (!h || !(h->curl = curl_easy_init())) {
    free(h);
    snprintf(err, errcap, "out of memory");
    return VXK_ENOMEM;
  }
  snprintf(h->base, sizeof h->base, "%s/%s/v%u", cfg->base, cfg->prefix, cfg->format);
  h->connect_ms = cfg->connect_ms ? cfg->connect_ms : 1;
  h->op_ms = cfg->op_ms ? cfg->op_ms : 1;
  h->max_value = cfg->max_value;
  CURL *c = h->curl;
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L); /* threads: no SIGALRM for name lookups */
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
  curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
  if (cfg->ca_file && cfg->ca_file[0]) curl_easy_setopt(c, CURLOPT_CAINFO, cfg->ca_file);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)h->connect_ms);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, h->curl_err);
  curl_easy_setopt(c, CURLOPT_USERAGENT, "vortexd");
  /* curl copies both strings */
  if (cfg->userpwd && cfg->userpwd[0]) {
    curl_easy_setopt(c, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
    curl_easy_setopt(c, CURLOPT_USERPWD, cfg->userpwd);
  } else if (cfg->bearer && cfg->bearer[0]) {
    curl_easy_setopt(c, CURLOPT_HTTPAUTH, (long)CURLAUTH_BEARER);
    curl_easy_setopt(c, CURLOPT_XOAUTH2_BEARER, cfg->bearer);
  }
  *out = h;
  return VXK_OK;
}

static void vxk_http_close(vxk_http *h) {
  if (!h) return;
  if (h->curl) curl_easy_cleanup(h->curl);
  free(h);
}

/* A response body being read, bounded by limit bytes. */
typedef struct {
  uint8_t *p;
  size_t n, cap;
  uint64_t limit;
  int too_large;
} vxk__body;

static size_t vxk__body_write(char *data, size_t size, size_t nmemb, void *ud) {
  vxk__body *b = ud;
  size_t n = size * nmemb;
  if (b->n + n > b->limit) {
    b->too_large = 1;
    return 0; /* curl stops: CURLE_WRITE_ERROR */
  }
  if (b->n + n > b->cap) {
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->n + n)
      cap *= 2;
    uint8_t *p = realloc(b->p, cap);
    if (!p) return 0;
    b->p = p, b->cap = cap;
  }
  memcpy(b->p + b->n, data, n);
  b->n += n;
  return n;
}

/* What a curl failure is: VXK_ETIMEDOUT or VXK_EIO, message in err. */
static int vxk__curl_failed(vxk_http *h, CURLcode cc, const char *what, char *err, size_t errcap) {
  snprintf(err, errcap, "%s: %s", what, h->curl_err[0] ? h->curl_err : curl_easy_strerror(cc));
  return cc == CURLE_OPERATION_TIMEDOUT ? VXK_ETIMEDOUT : VXK_EIO;
}

/* Sets the time left before deadline as the exchange's limit; VXK_ETIMEDOUT
 * when none is. */
static int vxk__http_deadline(vxk_http *h, uint64_t deadline) {
  uint64_t now = vxk__http_now_ms();
  if (now >= deadline) return VXK_ETIMEDOUT;
  curl_easy_setopt(h->curl, CURLOPT_TIMEOUT_MS, (long)(deadline - now));
  return VXK_OK;
}

static int vxk_http_get(vxk_http *h, const char *const *keys, size_t n, vxk_remote_value *out, char *err,
                        size_t errcap) {
  memset(out, 0, n * sizeof *out);
  uint64_t deadline = vxk__http_now_ms() + h->op_ms, kept = 0;
  int rc = VXK_OK;
  for (size_t i = 0; i < n && rc == VXK_OK; i++) {
    char url[1800];
    snprintf(url, sizeof url, "%s/%s", h->base, keys[i]);
    vxk__body b = {.limit = h->max_value};
    rc = vxk__http_deadline(h, deadline);
    if (rc != VXK_OK) {
      snprintf(err, errcap, "GET: timed out");
      break;
    }
    h->curl_err[0] = '\0';
    curl_easy_setopt(h->curl, CURLOPT_URL, url);
    curl_easy_setopt(h->curl, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(h->curl, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)h->max_value);
    curl_easy_setopt(h->curl, CURLOPT_WRITEFUNCTION, vxk__body_write);
    curl_easy_setopt(h->curl, CURLOPT_WRITEDATA, &b);
    CURLcode cc = curl_easy_perform(h->curl);
    long status = 0;
    curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, &status);
    if ((cc == CURLE_WRITE_ERROR || cc == CURLE_FILESIZE_EXCEEDED) && (b.too_large || status == 200)) {
      out[i].rc = VXK_EIO; /* larger than any entry: that one is compiled */
    } else if (cc != CURLE_OK) {
      rc = vxk__curl_failed(h, cc, "GET", err, errcap);
    } else if (status == 404) {
      out[i].rc = VXK_ENOTFOUND;
    } else if (status != 200) {
      snprintf(err, errcap, "GET: HTTP status %ld", status);
      rc = VXK_EIO;
    } else if (kept + b.n > 2 * h->max_value) {
      out[i].rc = VXK_EIO;
    } else {
      kept += b.n;
      out[i].rc = VXK_OK;
      out[i].value = b.p ? b.p : malloc(1);
      out[i].size = b.n;
      b.p = NULL;
      if (!out[i].value) out[i].rc = VXK_ENOMEM;
    }
    free(b.p);
  }
  if (rc != VXK_OK)
    for (size_t i = 0; i < n; i++) {
      free(out[i].value);
      out[i] = (vxk_remote_value){.rc = rc};
    }
  return rc;
}

/* The request body of a PUT. */
typedef struct {
  const uint8_t *p;
  size_t n, off;
} vxk__upload;

static size_t vxk__upload_read(char *buf, size_t size, size_t nmemb, void *ud) {
  vxk__upload *u = ud;
  size_t n = size * nmemb;
  if (n > u->n - u->off) n = u->n - u->off;
  memcpy(buf, u->p + u->off, n);
  u->off += n;
  return n;
}

static size_t vxk__discard(char *data, size_t size, size_t nmemb, void *ud) {
  (void)data, (void)ud;
  return size * nmemb;
}

/* HEAD of url: *status, or a failure. */
static int vxk__http_head(vxk_http *h, const char *url, long *status, char *err, size_t errcap) {
  h->curl_err[0] = '\0';
  curl_easy_setopt(h->curl, CURLOPT_URL, url);
  curl_easy_setopt(h->curl, CURLOPT_WRITEFUNCTION, vxk__discard); /* no stale body buffer */
  curl_easy_setopt(h->curl, CURLOPT_NOBODY, 1L);
  CURLcode cc = curl_easy_perform(h->curl);
  curl_easy_setopt(h->curl, CURLOPT_NOBODY, 0L);
  if (cc != CURLE_OK) return vxk__curl_failed(h, cc, "HEAD", err, errcap);
  curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, status);
  return VXK_OK;
}

static int vxk_http_put(vxk_http *h, const char *key, const uint8_t *value, size_t size, int replace,
                        int *written, char *err, size_t errcap) {
  *written = 0;
  char url[1800];
  snprintf(url, sizeof url, "%s/%s", h->base, key);
  uint64_t deadline = vxk__http_now_ms() + h->op_ms;
  if (vxk__http_deadline(h, deadline) != VXK_OK) return VXK_ETIMEDOUT;
  if (!replace) {
    long status = 0;
    int rc = vxk__http_head(h, url, &status, err, errcap);
    if (rc != VXK_OK) return rc;
    if (status == 200) return VXK_OK; /* there already */
    if (vxk__http_deadline(h, deadline) != VXK_OK) {
      snprintf(err, errcap, "PUT: timed out");
      return VXK_ETIMEDOUT;
    }
  }
  vxk__upload u = {value, size, 0};
  h->curl_err[0] = '\0';
  curl_easy_setopt(h->curl, CURLOPT_URL, url);
  curl_easy_setopt(h->curl, CURLOPT_UPLOAD, 1L);
  curl_easy_setopt(h->curl, CURLOPT_INFILESIZE_LARGE, (curl_off_t)size);
  curl_easy_setopt(h->curl, CURLOPT_READFUNCTION, vxk__upload_read);
  curl_easy_setopt(h->curl, CURLOPT_READDATA, &u);
  curl_easy_setopt(h->curl, CURLOPT_WRITEFUNCTION, vxk__discard);
  CURLcode cc = curl_easy_perform(h->curl);
  curl_easy_setopt(h->curl, CURLOPT_UPLOAD, 0L);
  if (cc != CURLE_OK) return vxk__curl_failed(h, cc, "PUT", err, errcap);
  long status = 0;
  curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, &status);
  if (status < 200 || status > 299) {
    snprintf(err, errcap, "PUT: HTTP status %ld", status);
    return VXK_EIO;
  }
  *written = 1;
  return VXK_OK;
}

__attribute__((visibility("default"))) const vxk_http_ops vxk_http_ops_v1 = {
    .abi = VXK_HTTP_ABI,
    .global_init = vxk_http_global_init,
    .open = vxk_http_open,
    .close = vxk_http_close,
    .get = vxk_http_get,
    .put = vxk_http_put,
};
