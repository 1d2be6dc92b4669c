/*
 * The contract's constants for Lua (see ../ffi.h): the return codes of
 * errors.h and the MP_FFI_CONSTANTS, each with the value its own header
 * gives it, written out as one enum declaration that
 * lua/moonport/core/base.lua hands to ffi.cdef. So a value is written
 * once, in C, and Lua reads it as C.MP_AGAIN.
 */
#include "ffi.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>

#include "errors.h"
#include "h1resp.h"
#include "log.h"
#include "request.h"
#include "response.h"
#include "shared.h"
#include "socket.h"
#include "static.h"
#include "stream.h"

static const struct {
  const char *name;
  long value;
} constants[] = {
#define ERRNO(name, code, msg) {"MP_" #name, MP_##name},
    MP_ERRNO_MAP(ERRNO)
#undef ERRNO
#define CONSTANT(name) {#name, (long)(name)},
    MP_FFI_CONSTANTS(CONSTANT)
#undef CONSTANT
};

const char *mp_ffi_constants(void) {
  /* About 25 bytes an entry. */
  static char text[4096];
  if (text[0] != '\0') return text;
  size_t n = 0;
  for (size_t i = 0; i < sizeof constants / sizeof constants[0]; i++) {
    int w = snprintf(text + n, sizeof text - 3 - n, "%s %s = %ld",
                     i == 0 ? "enum {" : ",", constants[i].name,
                     constants[i].value);
    assert(w > 0 && (size_t)w < sizeof text - 3 - n &&
           "the constants outgrew their text");
    /* Cut short, the declaration lacks the last names, and Lua's first
     * use of one fails with "missing declaration". */
    if (w < 0 || (size_t)w >= sizeof text - 3 - n) break;
    n += (size_t)w;
  }
  memcpy(text + n, " };", 4);
  return text;
}
