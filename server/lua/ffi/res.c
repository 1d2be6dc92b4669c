/*
 * res's door (see ../ffi.h): the response a handler builds, from
 * lua/moonport/core/response.lua, handed to req/response.c. Each function
 * looks its request up by handle first and fails with MP_BAD_CONTEXT once
 * it is over. A handler past its memory limit may still hold a catching
 * pcall: it answers nothing (MP_NOMEM), so the core's 500 is what the
 * client gets.
 */
#include "ffi.h"

#include "conn.h"
#include "errors.h"
#include "request.h"
#include "response.h"

#define LOOKUP(r)                                       \
  mp_request *r = mp_request_from_ctx(ctx, MP_CTX_RES); \
  if (r == NULL) return MP_BAD_CONTEXT;                 \
  if (r->charge.lua_exceeded) return MP_NOMEM

int mp_res_status(uint64_t ctx, int status) {
  LOOKUP(r);
  return mp_response_status(r, status);
}

int mp_res_reason(uint64_t ctx, const char *text, size_t len) {
  LOOKUP(r);
  return mp_response_reason(r, text, len);
}

int mp_res_header(uint64_t ctx, const char *name, size_t nlen,
                  const char *value, size_t vlen) {
  LOOKUP(r);
  return mp_response_header(r, name, nlen, value, vlen);
}

int mp_res_send(uint64_t ctx, const char *body, size_t len, int json) {
  LOOKUP(r);
  return mp_response_send(r, body, len,
                          json ? "application/json"
                               : "text/plain; charset=utf-8");
}

int mp_res_write(uint64_t ctx, const char *data, size_t len) {
  LOOKUP(r);
  int rc = mp_response_write(r, data, len);
  if (rc == 0 && r->running && r->conn != NULL &&
      mp_conn_unsent(r->conn) > r->srv->cfg->write_high_water)
    return mp_response_wait_write(r);
  return rc;
}

int mp_res_finish(uint64_t ctx) {
  LOOKUP(r);
  return mp_response_finish(r);
}

int mp_res_fault(uint64_t ctx, int kind) {
  LOOKUP(r);
  return mp_response_fault(r, kind);
}

int mp_res_headers(uint64_t ctx, const char **out) {
  LOOKUP(r);
  size_t len = 0;
  int rc = mp_response_headers(r, out, &len);
  if (rc != 0) return rc;
  if (*out == NULL) *out = "";
  return (int)len;
}

int mp_res_reset(uint64_t ctx) {
  LOOKUP(r);
  return mp_response_reset(r);
}
