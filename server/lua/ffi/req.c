/*
 * req's door (see ../ffi.h): what a handler reads of its request, from
 * lua/moonport/core/request.lua. Each function looks its request up by
 * handle first and fails with MP_BAD_CONTEXT once it is over, which Lua
 * turns into "request already finished". Method, target and headers come
 * back as slices of the request's head; values that must be decoded or
 * joined, in the scratch buffer.
 */
#include "ffi.h"

#include <string.h>

#include "conn.h"
#include "errors.h"
#include "request.h"
#include "scratch.h"
#include "str.h"

#define LOOKUP(r)                                       \
  mp_request *r = mp_request_from_ctx(ctx, MP_CTX_REQ); \
  if (r == NULL) return MP_BAD_CONTEXT

static const char *span_ptr(const mp_request *r, mp_span s) {
  return r->head + s.off;
}

int mp_req_method(uint64_t ctx, const char **out) {
  LOOKUP(r);
  *out = llhttp_method_name((llhttp_method_t)r->msg.method);
  return (int)strlen(*out);
}

int mp_req_target(uint64_t ctx, int which, const char **out) {
  LOOKUP(r);
  if (which == MP_TARGET_PATH) {
    size_t len;
    *out = mp_request_path(r, &len);
    return (int)len;
  }
  mp_span s = which == MP_TARGET_QUERY ? r->msg.query : r->msg.target;
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
  LOOKUP(r);
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
  char *dst = mp__ffi_scratch(total);
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
  LOOKUP(r);
  return (int)r->msg.nfields;
}

int mp_req_header_at(uint64_t ctx, int i, const char **name,
                     int32_t *nlen, const char **value) {
  LOOKUP(r);
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
  LOOKUP(r);
  char *dst = mp__ffi_scratch(r->msg.query.len + 1);
  if (dst == NULL) return MP_NOMEM;
  long n = mp_http1_query_get(span_ptr(r, r->msg.query), r->msg.query.len,
                              name, nlen, dst);
  if (n < 0) return MP_NOT_FOUND;
  *out = dst;
  return (int)n;
}

int mp_req_param_count(uint64_t ctx) {
  LOOKUP(r);
  return r->running ? (int)r->match.nparams : MP_BAD_CONTEXT;
}

int mp_req_param_at(uint64_t ctx, int i, const char **name,
                    const char **value) {
  LOOKUP(r);
  if (i < 0 || (unsigned)i >= r->match.nparams) return MP_INVALID;
  mp_span s = r->match.params[i];
  char *dst = mp__ffi_scratch(s.len + 1);
  if (dst == NULL) return MP_NOMEM;
  *name = r->match.route->param_names[i];
  *value = dst;
  return (int)mp_str_unescape(dst, span_ptr(r, r->msg.path) + s.off, s.len,
                                false);
}

int mp_req_read(uint64_t ctx, const char **out) {
  LOOKUP(r);
  if (!r->running) return MP_STATE;
  return mp_request_read(r, out);
}

int mp_req_running(uint64_t ctx) {
  LOOKUP(r);
  return r->running ? 0 : MP_BAD_CONTEXT;
}

int mp_req_abort_told(uint64_t ctx) {
  LOOKUP(r);
  return r->abort_told;
}

int mp_req_remote_addr(uint64_t ctx, const char **out) {
  LOOKUP(r);
  *out = mp_request_client(r);
  if (strcmp(*out, "-") == 0) return MP_NOT_FOUND;
  return (int)strlen(*out);
}

int mp_req_id(uint64_t ctx, const char **out) {
  LOOKUP(r);
  size_t n;
  *out = mp_request_id(r, &n);
  return (int)n;
}

int mp_req_trailers(uint64_t ctx, const char **out) {
  LOOKUP(r);
  *out = r->trailers.data ? r->trailers.data : "";
  return (int)r->trailers.len;
}
