/*
 * Middleware and hooks' door (see ../ffi.h): what lua/moonport/core/
 * middleware.lua asks of a request while it runs an app's middleware
 * chain, its hooks and its fallback: whether the path lies under a
 * middleware's prefix, whether routing missed, where the response stands,
 * and the core's own answer to a miss. Nothing here allocates (but the
 * response's header buffer, as res:header does), so a chain costs a
 * request no memory of its own.
 */
#include "ffi.h"

#include <string.h>

#include "errors.h"
#include "request.h"
#include "response.h"
#include "router.h"

int mp_req_under(uint64_t ctx, const char *prefix, size_t len) {
  mp_request *r = mp_request_from_ctx(ctx, MP_CTX_REQ);
  if (r == NULL) return MP_BAD_CONTEXT;
  size_t plen;
  const char *path = mp_request_path(r, &plen);
  if (plen < len || memcmp(path, prefix, len) != 0) return 0;
  return plen == len || path[len] == '/';
}

int mp_req_miss(uint64_t ctx) {
  mp_request *r = mp_request_from_ctx(ctx, MP_CTX_REQ);
  if (r == NULL) return MP_BAD_CONTEXT;
  return r->match.miss;
}

int mp_res_stage(uint64_t ctx, int *status) {
  mp_request *r = mp_request_from_ctx(ctx, MP_CTX_RES);
  if (r == NULL) return MP_BAD_CONTEXT;
  *status = r->status;
  return r->res == MP_RES_NEW ? 0 : r->res == MP_RES_STREAMING ? 1 : 2;
}

/* The core's answer, through the response the middleware built: the
 * headers it set (CORS, say) stay on the 404 or 405. */
int mp_res_miss(uint64_t ctx) {
  mp_request *r = mp_request_from_ctx(ctx, MP_CTX_RES);
  if (r == NULL) return MP_BAD_CONTEXT;
  if (r->match.miss == 0) return MP_DECLINED;
  if (r->res != MP_RES_NEW) return MP_STATE;
  int rc = mp_response_status(r, r->match.miss);
  if (rc == 0 && r->match.miss == 405) {
    char allow[512];
    size_t n = mp_router_allow_list(r->match.allow, allow, sizeof allow);
    rc = mp_response_header(r, "Allow", 5, allow, n);
  }
  if (rc != 0) return rc;
  static const char not_found[] = "{\"error\":\"not found\"}";
  static const char not_allowed[] = "{\"error\":\"method not allowed\"}";
  return r->match.miss == 405
             ? mp_response_send(r, not_allowed, sizeof not_allowed - 1,
                                "application/json")
             : mp_response_send(r, not_found, sizeof not_found - 1,
                                "application/json");
}
