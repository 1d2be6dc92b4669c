/*
 * res:send_file's door (see ../ffi.h): a file as the response, sent by
 * handlers/static.c, from lua/moonport/core/static.lua, which yields
 * after MP_AGAIN and reads the outcome once resumed.
 */
#include "ffi.h"

#include "errors.h"
#include "request.h"
#include "static.h"

int mp_res_send_file(uint64_t ctx, const char *root, const char *name,
                     size_t nlen, const char *cache_control, int flags) {
  mp_request *r = mp_request_from_ctx(ctx, MP_CTX_RES);
  if (r == NULL) return MP_BAD_CONTEXT;
  if (r->charge.lua_exceeded) return MP_NOMEM;
  return mp_static_send_file(r, root, name, nlen, cache_control, flags);
}

int mp_res_file_result(uint64_t ctx) {
  mp_request *r = mp_request_from_ctx(ctx, MP_CTX_RES);
  if (r == NULL) return MP_BAD_CONTEXT;
  return mp_static_result(r);
}
