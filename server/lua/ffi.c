/*
 * FFI entry points for lua/moonport/core.lua (see ffi.h). Each looks
 * its request up by context first and fails with MP_BAD_CONTEXT when it is
 * gone, which core.lua turns into "request already finished".
 */
#include "ffi.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "conn.h"
#include "errors.h"
#include "log.h"
#include "request.h"
#include "response.h"
#include "shared.h"
#include "str.h"
#include "vm.h"

/* Scratch space the getters decode into; Lua copies out at once. */
static char *scratch;
static size_t scratch_cap;

/* Grows the scratch buffer to at least n bytes; returns it or NULL. */
static char *scratch_of(size_t n) {
  if (n <= scratch_cap) return scratch;
  char *p = mp_realloc(scratch, scratch_cap, n);
  if (p == NULL) return NULL;
  scratch = p;
  scratch_cap = n;
  return p;
}

#define LOOKUP(r, kind)                              \
  mp_request *r = mp_request_from_ctx(ctx, kind);    \
  if (r == NULL) return MP_BAD_CONTEXT

/* A handler past its memory limit may still hold a catching pcall: it
 * answers nothing, so the core's 500 is what the client gets. */
#define LOOKUP_RES(r)                                \
  LOOKUP(r, MP_CTX_RES);                             \
  if (r->charge.lua_exceeded) return MP_NOMEM

static const char *span_ptr(const mp_request *r, mp_span s) {
  return r->head + s.off;
}

int mp_req_method(uint64_t ctx, const char **out) {
  LOOKUP(r, MP_CTX_REQ);
  *out = llhttp_method_name((llhttp_method_t)r->msg.method);
  return (int)strlen(*out);
}

int mp_req_target(uint64_t ctx, int which, const char **out) {
  LOOKUP(r, MP_CTX_REQ);
  if (which == 0) {
    size_t len;
    *out = mp_request_path(r, &len);
    return (int)len;
  }
  mp_span s = which == 1 ? r->msg.query : r->msg.target;
  *out = span_ptr(r, s);
  return (int)s.len;
}

/* An absolute-form target's authority replaces the Host field's value
 * (RFC 9112 section 3.2.2). */
static bool is_host(const char *name, size_t nlen) {
  return nlen == 4 && mp_str_ieq(name, "host", 4);
}

int mp_req_header(uint64_t ctx, const char *name, size_t nlen,
                  const char **out) {
  LOOKUP(r, MP_CTX_REQ);
  if (r->msg.authority.len > 0 && is_host(name, nlen)) {
    *out = span_ptr(r, r->msg.authority);
    return (int)r->msg.authority.len;
  }
  int found = -1;
  size_t total = 0;
  unsigned count = 0;
  for (unsigned i = 0; i < r->msg.nfields; i++) {
    const mp_hfield *f = &r->msg.fields[i];
    if (f->name.len == nlen && mp_str_ieq(span_ptr(r, f->name), name, nlen)) {
      if (found < 0) found = (int)i;
      total += f->value.len + 2;
      count++;
    }
  }
  if (found < 0) return MP_NOT_FOUND;
  const mp_hfield *first = &r->msg.fields[found];
  if (count == 1) {
    *out = span_ptr(r, first->value);
    return (int)first->value.len;
  }
  char *dst = scratch_of(total);
  if (dst == NULL) return MP_NOMEM;
  size_t o = 0;
  for (unsigned i = (unsigned)found; i < r->msg.nfields; i++) {
    const mp_hfield *f = &r->msg.fields[i];
    if (f->name.len == nlen && mp_str_ieq(span_ptr(r, f->name), name, nlen)) {
      if (o > 0) {
        memcpy(dst + o, ", ", 2);
        o += 2;
      }
      memcpy(dst + o, span_ptr(r, f->value), f->value.len);
      o += f->value.len;
    }
  }
  *out = dst;
  return (int)o;
}

int mp_req_header_count(uint64_t ctx) {
  LOOKUP(r, MP_CTX_REQ);
  return (int)r->msg.nfields;
}

int mp_req_header_at(uint64_t ctx, int i, const char **name,
                     int32_t *nlen, const char **value) {
  LOOKUP(r, MP_CTX_REQ);
  if (i < 0 || (unsigned)i >= r->msg.nfields) return MP_INVALID;
  const mp_hfield *f = &r->msg.fields[i];
  *name = span_ptr(r, f->name);
  *nlen = (int32_t)f->name.len;
  mp_span v = f->value;
  if (r->msg.authority.len > 0 && is_host(*name, f->name.len)) v = r->msg.authority;
  *value = span_ptr(r, v);
  return (int)v.len;
}

int mp_req_query(uint64_t ctx, const char *name, size_t nlen,
                 const char **out) {
  LOOKUP(r, MP_CTX_REQ);
  char *dst = scratch_of(r->msg.query.len + 1);
  if (dst == NULL) return MP_NOMEM;
  long n = mp_http1_query_get(span_ptr(r, r->msg.query), r->msg.query.len,
                              name, nlen, dst);
  if (n < 0) return MP_NOT_FOUND;
  *out = dst;
  return (int)n;
}

int mp_req_param_count(uint64_t ctx) {
  LOOKUP(r, MP_CTX_REQ);
  return (int)r->match.nparams;
}

int mp_req_param_at(uint64_t ctx, int i, const char **name,
                    const char **value) {
  LOOKUP(r, MP_CTX_REQ);
  if (i < 0 || (unsigned)i >= r->match.nparams) return MP_INVALID;
  mp_span s = r->match.params[i];
  char *dst = scratch_of(s.len + 1);
  if (dst == NULL) return MP_NOMEM;
  *name = r->match.route->param_names[i];
  *value = dst;
  return (int)mp_str_unescape(dst, span_ptr(r, r->msg.path) + s.off, s.len,
                                false);
}

int mp_req_read(uint64_t ctx, const char **out) {
  LOOKUP(r, MP_CTX_REQ);
  if (!r->running) return MP_STATE;
  return mp_request_read(r, out);
}

int mp_req_remote_addr(uint64_t ctx, const char **out) {
  LOOKUP(r, MP_CTX_REQ);
  *out = r->conn != NULL ? mp_conn_peer_name(r->conn) : r->peer;
  if (strcmp(*out, "-") == 0) return MP_NOT_FOUND;
  return (int)strlen(*out);
}

int mp_req_trailers(uint64_t ctx, const char **out) {
  LOOKUP(r, MP_CTX_REQ);
  *out = r->trailers.data ? r->trailers.data : "";
  return (int)r->trailers.len;
}

int mp_res_status(uint64_t ctx, int status) {
  LOOKUP_RES(r);
  return mp_response_status(r, status);
}

int mp_res_header(uint64_t ctx, const char *name, size_t nlen,
                  const char *value, size_t vlen) {
  LOOKUP_RES(r);
  return mp_response_header(r, name, nlen, value, vlen);
}

int mp_res_send(uint64_t ctx, const char *body, size_t len,
                int json) {
  LOOKUP_RES(r);
  return mp_response_send(r, body, len,
                          json ? "application/json"
                               : "text/plain; charset=utf-8");
}

int mp_res_write(uint64_t ctx, const char *data, size_t len) {
  LOOKUP_RES(r);
  int rc = mp_response_write(r, data, len);
  if (rc == 0 && r->running && r->conn != NULL &&
      mp_conn_unsent(r->conn) > r->srv->cfg->write_high_water)
    return mp_response_wait_write(r);
  return rc;
}

int mp_res_finish(uint64_t ctx) {
  LOOKUP_RES(r);
  return mp_response_finish(r);
}

int mp_res_reason(uint64_t ctx, const char *text, size_t len) {
  LOOKUP_RES(r);
  return mp_response_reason(r, text, len);
}

int mp_res_fault(uint64_t ctx, int kind) {
  LOOKUP_RES(r);
  return mp_response_fault(r, kind);
}

int mp_req_abort_told(uint64_t ctx) {
  LOOKUP(r, MP_CTX_REQ);
  return r->abort_told;
}

void mp_lua_file_loaded(const char *path, size_t len) {
  const mp_vm_host *host = mp_vm_host_self;
  char copy[PATH_MAX];
  if (host == NULL || host->on_load_file == NULL || len == 0 ||
      len >= sizeof copy)
    return;
  memcpy(copy, path, len);
  copy[len] = '\0';
  host->on_load_file(host->ud, copy);
}

/* ---- Regular expressions ---- */

/* One match may take REGEX_STEPS plus REGEX_STEPS_PER_BYTE for every byte
 * of its subject steps of PCRE2's matcher (the JIT honours this limit
 * too), and as much backtracking depth, within REGEX_HEAP_LIMIT_KIB of
 * heap (the interpreter's limits). A pattern that backtracks
 * catastrophically costs about a tenth of a millisecond on a header, and
 * a pattern that is merely linear has room for a megabyte of body. */
#define REGEX_STEPS 100000u
#define REGEX_STEPS_PER_BYTE 8u
#define REGEX_HEAP_LIMIT_KIB 32768u

void *mp_regex_compile(const char *pattern, size_t len, int flags, char *err,
                       size_t errlen) {
  int code;
  PCRE2_SIZE at;
  /* Anchored at both ends, as Java's String.matches (WireMock's) is.
   * Invalid UTF-8 in a subject just fails to match. */
  uint32_t options = PCRE2_UTF | PCRE2_MATCH_INVALID_UTF | PCRE2_ANCHORED |
                     ((flags & MP_REGEX_CASELESS) ? PCRE2_CASELESS : 0);
  /* PCRE2 refuses partial matching with PCRE2_ENDANCHORED: the partial
   * form ends the pattern with \z instead, which a partial match may stop
   * short of. */
  char *wrapped = NULL;
  bool partial = (flags & MP_REGEX_PARTIAL) != 0;
  if (partial) {
    if (len > SIZE_MAX - 6 || (wrapped = malloc(len + 6)) == NULL) {
      snprintf(err, errlen, "out of memory");
      return NULL;
    }
    memcpy(wrapped, "(?:", 3);
    memcpy(wrapped + 3, pattern, len);
    memcpy(wrapped + 3 + len, ")\\z", 3);
    pattern = wrapped;
    len += 6;
  } else {
    options |= PCRE2_ENDANCHORED;
  }
  pcre2_code *re =
      pcre2_compile((PCRE2_SPTR)pattern, len, options, &code, &at, NULL);
  free(wrapped);
  if (re == NULL) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(code, msg, sizeof msg);
    snprintf(err, errlen, "%s at offset %zu", (const char *)msg, (size_t)at);
    return NULL;
  }
  /* The interpreter otherwise. */
  pcre2_jit_compile(re, partial ? PCRE2_JIT_PARTIAL_HARD : PCRE2_JIT_COMPLETE);
  return re;
}

/* Runs re over all of subject with the limits above. One match block and
 * context serve every match: only success is looked at. */
static int regex_run(void *re, const char *subject, size_t len,
                     uint32_t options) {
  static pcre2_match_data *md;
  static pcre2_match_context *mc;
  if (md == NULL && (md = pcre2_match_data_create(1, NULL)) == NULL)
    return PCRE2_ERROR_NOMEMORY;
  if (mc == NULL) {
    if ((mc = pcre2_match_context_create(NULL)) == NULL)
      return PCRE2_ERROR_NOMEMORY;
    pcre2_set_heap_limit(mc, REGEX_HEAP_LIMIT_KIB);
  }
  uint64_t steps = REGEX_STEPS + (uint64_t)REGEX_STEPS_PER_BYTE * len;
  uint32_t limit = steps > UINT32_MAX ? UINT32_MAX : (uint32_t)steps;
  pcre2_set_match_limit(mc, limit);
  pcre2_set_depth_limit(mc, limit);
  return pcre2_match(re, (PCRE2_SPTR)subject, len, 0, options, md, mc);
}

int mp_regex_match(void *re, const char *subject, size_t len) {
  int rc = regex_run(re, subject, len, 0);
  if (rc >= 0) return 1;
  if (rc == PCRE2_ERROR_NOMATCH) return 0;
  if (rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT ||
      rc == PCRE2_ERROR_HEAPLIMIT)
    return 2;
  return MP_INVALID;
}

/* Whether the first n bytes of subject match, or could if more followed
 * (re compiled with MP_REGEX_PARTIAL). An empty subject is never a
 * partial match to PCRE2: the caller takes it as one. */
static int regex_viable(void *re, const char *subject, size_t n) {
  int rc = regex_run(re, subject, n, PCRE2_PARTIAL_HARD);
  if (rc >= 0 || rc == PCRE2_ERROR_PARTIAL) return 1;
  return rc == PCRE2_ERROR_NOMATCH ? 0 : MP_INVALID;
}

int mp_regex_prefix(void *re, const char *subject, size_t len) {
  if (len > INT_MAX) return MP_INVALID;
  /* Binary search: a prefix of a viable prefix is viable. */
  size_t lo = 0, hi = len;
  while (lo < hi) {
    size_t mid = lo + (hi - lo + 1) / 2;
    int rc = regex_viable(re, subject, mid);
    if (rc < 0) return rc;
    if (rc)
      lo = mid;
    else
      hi = mid - 1;
  }
  return (int)lo;
}

void mp_regex_free(void *re) { pcre2_code_free(re); }

int mp_dir_list(const char *path, const char **out, size_t *len) {
  DIR *d = opendir(path);
  if (d == NULL) return -errno;
  int count = 0;
  size_t used = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    size_t n = strlen(e->d_name);
    char *buf = scratch_of(used + n + 2);
    if (buf == NULL) {
      closedir(d);
      return MP_NOMEM;
    }
    bool dir = e->d_type == DT_DIR;
    if (e->d_type == DT_UNKNOWN || e->d_type == DT_LNK) {
      char full[PATH_MAX];
      struct stat st;
      snprintf(full, sizeof full, "%s/%s", path, e->d_name);
      dir = stat(full, &st) == 0 && S_ISDIR(st.st_mode);
    }
    buf[used] = dir ? 'd' : 'f';
    memcpy(buf + used + 1, e->d_name, n + 1);
    used += n + 2;
    count++;
  }
  closedir(d);
  *out = scratch;
  *len = used;
  return count;
}

/* Whether a relative name climbs above its directory by its ".." parts
 * alone ("a/../../b" does, "a/../b" does not). */
static bool climbs_out(const char *name, size_t nlen) {
  long depth = 0;
  size_t i = 0;
  while (i < nlen) {
    size_t j = i;
    while (j < nlen && name[j] != '/') j++;
    size_t n = j - i;
    if (n == 2 && name[i] == '.' && name[i + 1] == '.') {
      if (--depth < 0) return true;
    } else if (n > 0 && !(n == 1 && name[i] == '.')) {
      depth++;
    }
    i = j + 1;
  }
  return false;
}

int mp_file_confine(const char *root, const char *name, size_t nlen,
                    char *out, size_t cap, double *size) {
  char joined[PATH_MAX], real_root[PATH_MAX], real[PATH_MAX];
  size_t rlen = strlen(root);
  struct stat st;
  if (memchr(name, '\0', nlen) != NULL || rlen + 1 + nlen >= sizeof joined)
    return MP_INVALID;
  /* Refused before the file system is asked, so that whether a file
   * outside exists cannot be told from the answer. */
  if (climbs_out(name, nlen)) return MP_DECLINED;
  if (realpath(root, real_root) == NULL) return MP_NOT_FOUND;
  memcpy(joined, root, rlen);
  joined[rlen] = '/';
  memcpy(joined + rlen + 1, name, nlen);
  joined[rlen + 1 + nlen] = '\0';
  if (realpath(joined, real) == NULL) return MP_NOT_FOUND;
  /* Inside the root on a component boundary: "/srv/files" does not hold
   * "/srv/files-secret/x". A root of "/" holds everything. A symbolic link
   * inside the root that leads out is caught here. */
  rlen = strlen(real_root);
  if (strncmp(real, real_root, rlen) != 0 || (rlen > 1 && real[rlen] != '/'))
    return MP_DECLINED;
  if (stat(real, &st) != 0 || !S_ISREG(st.st_mode)) return MP_NOT_FOUND;
  size_t n = strlen(real);
  if (n >= cap) return MP_INVALID;
  memcpy(out, real, n + 1);
  *size = (double)st.st_size;
  return (int)n;
}

int mp_mock_settings(mp_mock_config *out) {
  const mp_config *cfg = mp_vm_host_self->cfg;
  out->dir = cfg->mock_dir;
  out->listen_host = cfg->host;
  out->admin_hosts = cfg->admin_hosts;
  out->cors = cfg->cors;
  out->admin_cors = cfg->admin_cors;
  out->journal_size = (int)cfg->journal_size;
  return 0;
}

double mp_clock_wall(void) {
  uv_timeval64_t tv;
  if (uv_gettimeofday(&tv) != 0) return 0;
  return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

void mp_lua_log(int level, const char *msg, size_t len) {
  if (level < MP_LOG_ERROR || level > MP_LOG_INFO) level = MP_LOG_INFO;
  if (len > 4096) len = 4096;
  mp_log((mp_log_level)level, "%.*s", (int)len, msg);
}

/* ---- moonport.shared and the mock's stores ---- */

/* Store `store` (MP_STORE_*) of this process's segment, or NULL. */
static mp_store *store_of(int store) {
  const mp_vm_host *host = mp_vm_host_self;
  if (host == NULL || host->shared == NULL || store < 0) return NULL;
  return mp_shared_store(host->shared, (unsigned)store);
}

#define STORE(st, store)                        \
  mp_store *st = store_of(store);               \
  if (st == NULL) return MP_INVALID

int mp_store_get(int store, const char *key, size_t klen, double *num,
                 const char **str, size_t *len) {
  mp_shared_value v;
  STORE(st, store);
  /* A string longer than the scratch buffer: grow it and look again (the
   * value may have changed in between; the second answer is the one). */
  int rc = mp_shared_get(st, key, klen, &v, scratch, scratch_cap);
  while (rc == MP_AGAIN) {
    if (scratch_of(v.len) == NULL) return MP_NOMEM;
    rc = mp_shared_get(st, key, klen, &v, scratch, scratch_cap);
  }
  if (rc != 0) return MP_SHARED_NIL;
  *num = v.number;
  *str = v.str;
  *len = v.len;
  return v.type;
}

int mp_store_set(int store, const char *key, size_t klen, int type,
                 double num, const char *str, size_t len, double ttl,
                 int add) {
  mp_shared_value v = {.type = type, .number = num, .str = str, .len = len};
  bool evicted = false;
  STORE(st, store);
  int rc = mp_shared_set(st, key, klen, &v, ttl, add ? MP_SHARED_ADD : 0,
                         &evicted);
  return rc != 0 ? rc : evicted;
}

int mp_store_incr(int store, const char *key, size_t klen, double by,
                  double init, double ttl, double *result) {
  bool evicted = false;
  STORE(st, store);
  int rc = mp_shared_incr(st, key, klen, by, init, ttl, result, &evicted);
  return rc != 0 ? rc : evicted;
}

int mp_store_delete(int store, const char *key, size_t klen) {
  STORE(st, store);
  return mp_shared_delete(st, key, klen);
}

int mp_store_ttl(int store, const char *key, size_t klen, double *ttl) {
  STORE(st, store);
  return mp_shared_ttl(st, key, klen, ttl);
}

int mp_store_keys(int store, unsigned max, const char **out, size_t *len) {
  unsigned count = 0;
  size_t used = 0;
  STORE(st, store);
  int rc = mp_shared_keys(st, max, scratch, scratch_cap, &used, &count);
  while (rc == MP_AGAIN) {
    if (scratch_of(used) == NULL) return MP_NOMEM;
    rc = mp_shared_keys(st, max, scratch, scratch_cap, &used, &count);
  }
  *out = scratch;
  *len = used;
  return rc != 0 ? rc : (int)count;
}

int mp_store_flush(int store) {
  STORE(st, store);
  mp_shared_flush(st);
  return 0;
}
