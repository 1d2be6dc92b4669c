/*
 * What runs now (see ../ffi.h): the request whose code the core runs, for
 * the APIs that reach the current request without being handed its req
 * (the ngx compatibility module's ngx.var, ngx.req, ngx.say), and the
 * phase, OpenResty's ngx.get_phase. A light thread belongs to the request
 * at the root of its parent chain; a timer's run, and its threads, to no
 * request.
 */
#include "ffi.h"

#include "request.h"
#include "task.h"

double mp_req_current(void) {
  mp_request *r = mp_request_current();
  if (r == NULL) return 0;
  r = mp_task_root(r);
  if (r->task) return 0;
  return (double)mp_request_ctx(r, MP_CTX_REQ);
}

int mp_phase(void) {
  mp_request *r = mp_request_current();
  if (r == NULL) return MP_PHASE_INIT;
  return mp_task_root(r)->task ? MP_PHASE_TIMER : MP_PHASE_CONTENT;
}
