/*
 * What runs now (see ../ffi.h): the request whose code the core runs, for
 * the APIs that reach the current request without being handed its req
 * (the ngx compatibility module's ngx.var, ngx.req, ngx.say), and the
 * phase, OpenResty's ngx.get_phase.
 */
#include "ffi.h"

#include "request.h"

double mp_req_current(void) {
  mp_request *r = mp_request_current();
  if (r == NULL) return 0;
  return (double)mp_request_ctx(r, MP_CTX_REQ);
}

int mp_phase(void) {
  return mp_request_current() != NULL ? MP_PHASE_CONTENT : MP_PHASE_INIT;
}
