/*
 * Percent-decoding for Lua (see ../ffi.h): the decoder req:query and the
 * router's parameters use (base/str.c's mp_str_unescape), handed to
 * lua/moonport/core/url.lua so that moonport.url.decode, req:form and
 * req:cookie decode exactly as the core does.
 *
 * The caller gives the output buffer (decoding never lengthens, so len
 * bytes always do); nothing is allocated or kept.
 */
#include "ffi.h"

#include <limits.h>
#include <stdbool.h>

#include "errors.h"
#include "str.h"

int mp_url_unescape(const char *src, size_t len, int plus_space, char *dst) {
  /* The length comes back as an int. */
  if (len > INT_MAX) return MP_INVALID;
  return (int)mp_str_unescape(dst, src, len, plus_space != 0);
}
