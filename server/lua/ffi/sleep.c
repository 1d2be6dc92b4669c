/*
 * moonport.sleep's door (see ../ffi.h): the running handler's request
 * waits on req/sleep.c's timer. lua/moonport/core/runner.lua yields right
 * after a 0 return.
 */
#include "ffi.h"

#include "errors.h"
#include "request.h"
#include "sleep.h"

int mp_sleep(double ms) {
  mp_request *r = mp_request_current();
  if (r == NULL) return MP_BAD_CONTEXT;
  return mp_request_sleep(r, ms);
}
