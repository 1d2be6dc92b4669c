/*
 * Response compression for Lua (see ../ffi.h): rules registered by
 * moonport.compress when the app loads, and a response put under one
 * (lua/moonport/core/compress.lua). The work is server/req/compress.c's.
 */
#include "ffi.h"

#include "compress.h"
#include "errors.h"
#include "request.h"

int mp_compress_rule_new(const char *types, double min_length, int level) {
  if (!(min_length >= 0 && min_length <= 1e15)) return MP_INVALID;
  return mp_compress_rule(types, (size_t)min_length, level);
}

int mp_res_compress(uint64_t ctx, int rule) {
  mp_request *r = mp_request_from_ctx(ctx, MP_CTX_RES);
  if (r == NULL) return MP_BAD_CONTEXT;
  if (rule < 0 || rule > MP_COMPRESS_MAX_RULES) return MP_INVALID;
  if (r->res != MP_RES_NEW) return MP_STATE;
  r->compress = (uint8_t)rule;
  return 0;
}
